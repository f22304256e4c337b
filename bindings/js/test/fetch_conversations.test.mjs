// Conversations through createAgentFetch on the stream-json path, with the replay agent
// playing a cursor-agent that keeps its chats (`--chat-dir`) and answers a tool loop: a
// request whose history extends the fetch's last answer resumes that chat (`--resume`)
// with a prompt holding only what is new; with conversations off every prompt is the
// whole history; a chat the agent lost is answered by a fresh run the client never sees;
// Claude Code's session header keeps conversations apart. Every agent is stopped and
// reaped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Conversations, createAgentFetch } from 'agentwire/node';
import { PACKAGE, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = join(PACKAGE, 'test/support/agent.sh');
const REPLAY = rustProgram('replay_agent');
const URL = 'http://agentwire.invalid/v1/chat/completions';
/** A resumed round's prompt (the agent's last answer and the tool's result) is never larger. */
const DELTA_BOUND = 1024;
const SYSTEM = 'You are a careful coding agent working in a large repository. '.repeat(40);
const TASK = 'Find the failing test and fix it.';
const TOOLS = [
  {
    type: 'function',
    function: { name: 'bash', description: 'Run a shell command.', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  },
];

/** A fetch whose agent plays a tool loop of `rounds` rounds, its chats in a scratch folder. */
function loop(rounds, { extra = '', conversations } = {}) {
  const dir = scratchDir('agentwire-conv-');
  const chats = join(dir, 'chats');
  mkdirSync(chats);
  const log = join(dir, 'runs.jsonl');
  const env = {
    ...process.env,
    AGENTWIRE_REPLAY_AGENT: REPLAY,
    AGENTWIRE_TEST_AGENT: `--chat-dir ${chats} --tool-rounds ${rounds} --delay-ms 0 ${extra}`,
    AGENTWIRE_REPLAY_LOG: log,
  };
  const options = { config: { cursorBinary: AGENT }, env, killGraceMs: 500 };
  if (conversations !== undefined) options.conversations = conversations;
  const fetch = createAgentFetch(options);
  const runs = () =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line))
      : [];
  return { fetch, runs, chats };
}

/** The chat a run resumed, if it did. */
const resumed = (run) => {
  const at = run.argv.indexOf('--resume');
  return at < 0 ? undefined : run.argv[at + 1];
};

/** A Chat Completions client in a tool loop: it sends its whole conversation each round and echoes what it is answered. */
class Client {
  messages = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: TASK },
  ];

  constructor(fetch, headers = {}) {
    this.fetch = fetch;
    this.headers = headers;
  }

  /** One request: the command the agent asks the client to run, or its final text. */
  async round() {
    const response = await this.fetch(URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.headers },
      body: JSON.stringify({ model: 'auto', messages: this.messages, tools: TOOLS }),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const choice = JSON.parse(text).choices[0];
    this.messages.push(choice.message);
    if (choice.finish_reason === 'stop') return { text: choice.message.content };
    assert.equal(choice.finish_reason, 'tool_calls', text);
    const [call] = choice.message.tool_calls;
    const { command } = JSON.parse(call.function.arguments);
    this.messages.push({ role: 'tool', tool_call_id: call.id, content: `${command.replace('echo ', '')} (exit 0)` });
    return { command };
  }
}

/** Every run's process group is gone, and none is left a zombie of ours. */
async function assertAgentsGone(runs) {
  const gone = await waitUntil(() => runs.every((run) => aliveIn(run.pid).length === 0) && zombies().length === 0, 5_000);
  assert.ok(gone, `left: ${JSON.stringify(runs.map((run) => aliveIn(run.pid)))}, zombies: ${JSON.stringify(zombies())}`);
}

test('a tool loop resumes one chat, each round given a prompt the size of its delta', { timeout: 60_000 }, async () => {
  const ROUNDS = 4;
  const conversations = new Conversations();
  const { fetch, runs } = loop(ROUNDS, { conversations });
  const client = new Client(fetch);
  for (let round = 0; round < ROUNDS; round++) assert.deepEqual(await client.round(), { command: `echo round-${round}` });
  assert.deepEqual(await client.round(), { text: `Done after ${ROUNDS} tool rounds.` });
  const all = runs();
  assert.equal(all.length, ROUNDS + 1, 'one run per request');
  const chat = all[0].chat_id;
  assert.ok(chat);
  assert.equal(resumed(all[0]), undefined);
  assert.ok(all[0].prompt.includes(TASK) && all[0].prompt.includes(SYSTEM.trim()));
  for (const [i, run] of all.entries()) {
    if (i === 0) continue;
    assert.equal(resumed(run), chat, `request ${i + 1} resumes the chat`);
    assert.equal(run.chat_id, chat);
    assert.ok(!run.prompt.includes(TASK), `request ${i + 1}: only what is new`);
    assert.ok(run.prompt.includes(`round-${i - 1} (exit 0)`), run.prompt);
    assert.ok(run.stdin_bytes <= DELTA_BOUND, `request ${i + 1}: ${run.stdin_bytes} bytes`);
  }
  assert.ok(all[0].stdin_bytes > 2 * DELTA_BOUND, `the first prompt holds the history: ${all[0].stdin_bytes} bytes`);
  const stats = conversations.stats;
  assert.equal(stats.resumed, ROUNDS);
  assert.equal(stats.fresh.noSession, 1);
  assert.deepEqual([conversations.registry.parked, conversations.registry.busy], [1, 0]);
  await assertAgentsGone(all);
  conversations.close();
  assert.equal(conversations.registry.closed, true);
});

test('conversations off: every request runs fresh with the whole, growing history', { timeout: 60_000 }, async () => {
  const ROUNDS = 3;
  const { fetch, runs } = loop(ROUNDS, { conversations: false });
  const client = new Client(fetch);
  for (let round = 0; round < ROUNDS; round++) assert.deepEqual(await client.round(), { command: `echo round-${round}` });
  assert.deepEqual(await client.round(), { text: `Done after ${ROUNDS} tool rounds.` });
  const all = runs();
  assert.equal(new Set(all.map((run) => run.chat_id)).size, all.length, 'a new chat every time');
  for (const run of all) {
    assert.equal(resumed(run), undefined);
    assert.ok(run.prompt.includes(TASK));
  }
  for (let i = 1; i < all.length; i++) assert.ok(all[i].stdin_bytes > all[i - 1].stdin_bytes, 'each round adds its history');
  await assertAgentsGone(all);
});

for (const mode of ['new-id', 'fail']) {
  test(`a chat the agent lost (--lost-chat ${mode}) is answered by a fresh run the client never sees`, { timeout: 60_000 }, async () => {
    const { fetch, runs, chats } = loop(2, { extra: `--lost-chat ${mode}` });
    const client = new Client(fetch);
    assert.deepEqual(await client.round(), { command: 'echo round-0' });
    const chat = runs()[0].chat_id;
    // The agent forgets the chat.
    rmSync(join(chats, chat));
    assert.deepEqual(await client.round(), { command: 'echo round-1' }, 'an ordinary answer');
    const all = runs();
    assert.equal(all.length, 3, 'the resume, then one fresh run');
    assert.equal(resumed(all[1]), chat);
    assert.equal(resumed(all[2]), undefined);
    assert.ok(all[2].prompt.includes(TASK), 'the whole history');
    assert.notEqual(all[2].pid, all[1].pid, 'a process of its own');
    const fresh = all[2].chat_id;
    assert.ok(fresh && fresh !== chat);
    // The conversation goes on in the fresh run's chat.
    assert.deepEqual(await client.round(), { text: 'Done after 2 tool rounds.' });
    assert.equal(resumed(runs()[3]), fresh);
    await assertAgentsGone(runs());
  });
}

test('Claude Code’s session header keeps two conversations with the same history apart', { timeout: 60_000 }, async () => {
  const { fetch, runs } = loop(2);
  const first = new Client(fetch, { 'x-claude-code-session-id': 'session-a' });
  assert.deepEqual(await first.round(), { command: 'echo round-0' });
  // Another session sends the same history so far: it cannot resume session-a's chat.
  const second = new Client(fetch, { 'x-claude-code-session-id': 'session-b' });
  second.messages = structuredClone(first.messages);
  assert.deepEqual(await second.round(), { command: 'echo round-1' });
  assert.equal(resumed(runs()[1]), undefined, 'fresh');
  assert.deepEqual(await first.round(), { command: 'echo round-1' });
  assert.equal(resumed(runs()[2]), runs()[0].chat_id, 'session-a resumes its own chat');
  await assertAgentsGone(runs());
});
