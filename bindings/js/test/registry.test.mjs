// The Registry from JavaScript, through Bridge.inConversation and endConversationTurn with
// the agent's output pushed by hand: a slice of the core's decision table (resume or fresh,
// and why), the resumed run's command line and prompt, a resume the agent fails replaced
// by a fresh run (the respawn output), expiry, the counters, and misuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentwireError, Bridge, Registry } from 'agentwire';
import { forcePanic, hasTestHooks } from '../dist/testing.js';

const TEXT = new TextEncoder();
const SYSTEM = 'You are a careful coding agent. '.repeat(20);
const CHAT = 'chat-one';
const TOOLS = [
  {
    type: 'function',
    function: { name: 'bash', description: 'Run a command.', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  },
];

const request = (messages, extra = {}) => JSON.stringify({ model: 'auto', messages, ...extra });

/** Stream-json lines of a chat `chat` answering `text`. */
function transcript(chat, text) {
  const lines = [
    { type: 'system', subtype: 'init', session_id: chat, model: 'Auto' },
    { type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text }] }, session_id: chat },
    { type: 'result', subtype: 'success', is_error: false, result: text, session_id: chat },
  ];
  return TEXT.encode(lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
}

/** Runs `bridge` as an agent answering `text` under `chat` would, ends its turn, and returns the response. */
function answer(bridge, registry, chat, text, now = 1) {
  const outputs = [];
  bridge.pushStdout(transcript(chat, text), now);
  outputs.push(...bridge.drain());
  bridge.agentExited({ code: 0 }, now);
  outputs.push(...bridge.drain());
  bridge.endConversationTurn(registry, now);
  const head = outputs.find((o) => o.type === 'head');
  const body = Buffer.concat(outputs.filter((o) => o.type === 'body').map((o) => o.data)).toString();
  return { head, json: JSON.parse(body), outputs };
}

/** What a request did to the counters: 'resumed', or the fresh reason. */
function decided(registry, make) {
  const before = registry.stats;
  const bridge = make();
  const after = registry.stats;
  if (after.resumed > before.resumed) return { bridge, how: 'resumed' };
  const reason = Object.keys(after.fresh).find((r) => after.fresh[r] > before.fresh[r]);
  return { bridge, how: reason };
}

/** A conversation answered once, parked: its messages so far and the registry. */
function parked(config) {
  const registry = new Registry(config);
  const messages = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'What is in this folder?' },
  ];
  const bridge = Bridge.inConversation(request(messages), registry);
  assert.ok(!bridge.invocation.args.includes('--resume'));
  answer(bridge, registry, CHAT, 'A README and a src folder.');
  messages.push({ role: 'assistant', content: 'A README and a src folder.' });
  assert.equal(registry.parked, 1);
  return { registry, messages };
}

const follow = (messages) => [...messages, { role: 'user', content: 'And what does the README say?' }];

test('a follow-up resumes the chat with --resume and a prompt holding only what is new', () => {
  const { registry, messages } = parked();
  const { bridge, how } = decided(registry, () => Bridge.inConversation(request(follow(messages)), registry));
  assert.equal(how, 'resumed');
  const args = bridge.invocation.args;
  assert.equal(args[args.indexOf('--resume') + 1], CHAT);
  const prompt = Buffer.from(bridge.invocation.stdin).toString();
  assert.match(prompt, /what does the README say/);
  assert.ok(!prompt.includes(SYSTEM.trim()), 'not the whole history');
  assert.equal(registry.busy, 1, 'the resumed chat is held');
  const { json } = answer(bridge, registry, CHAT, 'It says hello.');
  assert.equal(json.choices[0].message.content, 'It says hello.');
  assert.deepEqual([registry.parked, registry.busy], [1, 0]);
  assert.equal(registry.stats.resumed, 1);
  registry.free();
});

test('decision table: what is fresh, and why', () => {
  const rows = [
    ['a retry or regeneration of the answered request', (m) => m.slice(0, -1), {}, 'noSession'],
    ['the same conversation again', (m) => m, {}, 'nothingNew'],
    ['an edited earlier message', (m) => follow([m[0], { role: 'user', content: 'What is in here?' }, m[2]]), {}, 'noSession'],
    ['a compacted history', (m) => follow([m[0], m[2]]), {}, 'noSession'],
    ['another system text', (m) => follow([{ role: 'system', content: 'Be brief.' }, ...m.slice(1)]), {}, 'noSession'],
    ['another model', (m) => follow(m), { model: 'gpt-5' }, 'noSession'],
    ['another tool set', (m) => follow(m), { tools: TOOLS }, 'noSession'],
    ['an assistant message the agent did not write', (m) => [...follow(m), { role: 'assistant', content: 'It says hello.' }, { role: 'user', content: 'Thanks.' }], {}, 'foreignAnswer'],
    ['a side request (a title)', () => [{ role: 'user', content: 'Title this conversation.' }], {}, 'noSession'],
  ];
  for (const [name, edit, extra, reason] of rows) {
    const { registry, messages } = parked();
    const { bridge, how } = decided(registry, () => Bridge.inConversation(request(edit(messages), extra), registry));
    assert.equal(how, reason, name);
    assert.ok(bridge.invocation === undefined || !bridge.invocation.args.includes('--resume'), `${name}: fresh`);
    bridge.free();
    assert.equal(registry.parked, 1, `${name}: the parked chat is left as it was`);
    registry.free();
  }
});

test('a session serves one request at a time; another owner or conversation key never resumes it', () => {
  const { registry, messages } = parked();
  const first = decided(registry, () => Bridge.inConversation(request(follow(messages)), registry));
  assert.equal(first.how, 'resumed');
  const second = decided(registry, () => Bridge.inConversation(request(follow(messages)), registry));
  assert.equal(second.how, 'busy');
  first.bridge.clientGone(2);
  first.bridge.endConversationTurn(registry, 2);
  assert.equal(registry.parked, 0, 'a request whose client left releases its chat');
  second.bridge.free();
  registry.free();

  for (const caller of [{ ownerKey: 'someone else' }, { ownerKey: new Uint8Array([1, 2]) }, { keys: { clientSession: 'another session' } }, { keys: { caller: 'k' } }]) {
    const { registry: other, messages: history } = parked();
    const { how } = decided(other, () => Bridge.inConversation(request(follow(history)), other, { caller }));
    assert.equal(how, 'noSession', JSON.stringify(caller));
    other.free();
  }
});

test('Claude Code’s session and agent ids keep subagents apart', () => {
  const registry = new Registry();
  const lead = { keys: { clientSession: 's-1' } };
  const sub = { keys: { clientSession: 's-1', clientAgent: 'agent-7' } };
  const messages = [{ role: 'user', content: 'Explore.' }];
  answer(Bridge.inConversation(request(messages), registry, { caller: lead }), registry, CHAT, 'Done.');
  const next = follow([...messages, { role: 'assistant', content: 'Done.' }]);
  assert.equal(decided(registry, () => Bridge.inConversation(request(next), registry, { caller: sub })).how, 'noSession');
  const { bridge, how } = decided(registry, () => Bridge.inConversation(request(next), registry, { caller: lead }));
  assert.equal(how, 'resumed');
  bridge.free();
  registry.free();
});

test('conversations off: every request is fresh and nothing is parked', () => {
  const registry = new Registry({ enabled: false });
  assert.equal(registry.config.enabled, false);
  const messages = [{ role: 'user', content: 'hi' }];
  const { how, bridge } = decided(registry, () => Bridge.inConversation(request(messages), registry));
  assert.equal(how, 'disabled');
  answer(bridge, registry, CHAT, 'Hello.');
  assert.equal(registry.parked, 0);
  registry.free();
});

test('a parked chat expires at its deadline and is released', () => {
  const { registry } = parked({ ttlMs: 1_000 });
  const deadline = registry.pollTimeout();
  assert.equal(deadline, 1 + 1_000);
  registry.handleTimeout(deadline - 1);
  assert.equal(registry.pollReleased(), undefined, 'not yet');
  registry.handleTimeout(deadline);
  assert.deepEqual(registry.pollReleased(), { agentSession: CHAT, reason: 'expired' });
  assert.equal(registry.pollReleased(), undefined);
  assert.equal(registry.pollTimeout(), undefined);
  assert.equal(registry.stats.expired, 1);
  registry.free();
});

test('a resume the agent fails is replaced by a fresh run with the whole conversation: the respawn output', () => {
  const { registry, messages } = parked();
  const bridge = Bridge.inConversation(request(follow(messages)), registry);
  const resumed = bridge.invocation;
  assert.ok(resumed.args.includes('--resume'));
  bridge.pushStderr(TEXT.encode('Error: chat not found\n'), 2);
  bridge.agentExited({ code: 1 }, 2);
  assert.deepEqual(bridge.drain(), [{ type: 'respawn' }], 'nothing reached the client');
  const fresh = bridge.invocation;
  assert.notEqual(fresh, resumed);
  assert.ok(!fresh.args.includes('--resume'));
  assert.match(Buffer.from(fresh.stdin).toString(), /What is in this folder\?[\s\S]*what does the README say/);
  const { json } = answer(bridge, registry, 'chat-two', 'It says hello.', 3);
  assert.equal(json.choices[0].message.content, 'It says hello.');
  assert.equal(registry.parked, 1, 'the fresh chat is parked in place of the lost one');
  registry.free();
});

test('clear() releases every parked chat; misuse throws invalidArgument', () => {
  const { registry } = parked();
  registry.clear(5);
  assert.deepEqual(registry.pollReleased(), { agentSession: CHAT, reason: 'cleared' });
  assert.equal(registry.parked, 0);
  const stats = registry.stats;
  assert.deepEqual(Object.keys(stats.fresh), ['disabled', 'noSession', 'busy', 'nothingNew', 'unansweredCalls', 'unknownResult', 'foreignAnswer']);
  assert.deepEqual(registry.config, { enabled: true, ttlMs: 1_800_000, maxParked: 256, maxParkedPerOwner: 32 });
  for (const [config, says] of [
    [{ ttl: 1 }, /ttl/],
    [{ ttlMs: -1 }, /-1/],
    [{ maxParked: null }, /null/],
    [[], /must be an object/],
  ]) {
    assert.throws(() => new Registry(config), (e) => e instanceof AgentwireError && e.code === 'invalidArgument' && says.test(e.message), JSON.stringify(config));
  }
  assert.throws(() => Bridge.inConversation('{}', registry, { caller: { ownerKey: 7 } }), { code: 'invalidArgument', message: /ownerKey/ });
  assert.throws(() => Bridge.inConversation('{}', registry, { caller: { keys: { clientSession: 1 } } }), { code: 'invalidArgument', message: /clientSession/ });
  const rejected = Bridge.inConversation('{}', registry);
  assert.equal(rejected.invocation, undefined, 'an invalid request spawns nothing');
  assert.equal(rejected.drain()[0].status, 400);
  rejected.endConversationTurn(registry, 6);
  registry.free();
  assert.throws(() => registry.parked, { code: 'closed' });
  assert.throws(() => Bridge.inConversation(request([{ role: 'user', content: 'hi' }]), registry), { code: 'closed' });
});

test('a panic inside the registry poisons it, through a bridge’s call too', { skip: !hasTestHooks() && 'built without the test hooks' }, () => {
  const registry = new Registry();
  assert.throws(() => forcePanic(registry), { code: 'panic' });
  assert.throws(() => registry.stats, { code: 'poisoned' });
  assert.throws(() => Bridge.inConversation(request([{ role: 'user', content: 'hi' }]), registry), { code: 'poisoned' });
  const other = new Registry();
  assert.equal(other.parked, 0, 'another registry works on');
  other.free();
});
