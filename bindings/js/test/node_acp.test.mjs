// AcpAgent, the driver of one warm ACP agent: the stand-in agent (`acp_agent`) as a real
// child process serving many turns, its process group stopped and reaped on every path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentwireError } from 'agentwire';
import { AcpAgent } from 'agentwire/node';
import { DIALECTS, FIXTURES, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = rustProgram('acp_agent');
const recording = (name) => join(FIXTURES, 'acp', name);

function start(file, { delayMs = 0, config, ...options } = {}) {
  const log = join(scratchDir('agentwire-acp-'), 'runs.jsonl');
  const agent = new AcpAgent({
    command: AGENT,
    args: ['--recording', recording(file), '--delay-ms', String(delayMs)],
    env: { ...process.env, AGENTWIRE_REPLAY_LOG: log },
    config: { cwd: '/home/user/project', ...config },
    killGraceMs: 300,
    ...options,
  });
  const events = () => {
    try {
      return readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    } catch {
      return [];
    }
  };
  return { agent, events };
}

/** A request of `dialect` for the agent's default model. */
const body = (dialect) => DIALECTS[dialect].replace('"auto"', '"default"');

async function collect(turn, onBody = () => {}) {
  let head;
  const chunks = [];
  for await (const output of turn) {
    if (output.type === 'head') head = output;
    else {
      chunks.push(output.data);
      onBody();
    }
  }
  return { head, text: Buffer.concat(chunks).toString() };
}

const gone = (group) => waitUntil(() => aliveIn(group).length === 0 && zombies().length === 0, 5_000);

test('one warm agent serves two turns at once in two dialects; close() stops and reaps it', { timeout: 30_000 }, async () => {
  const { agent, events } = start('synthetic__interleaved-sessions.jsonl');
  const answers = await Promise.all([
    collect(agent.turn(body('chat-completions'))),
    collect(agent.turn(body('messages'), { dialect: 'messages' })),
  ]);
  assert.deepEqual(answers.map((a) => a.head.status), [200, 200]);
  assert.match(answers[0].text, /data: \[DONE\]\n\n$/);
  assert.match(answers[1].text, /event: message_stop\n/);
  const said = answers.map(({ text }) => (/Alpha/.test(text) ? 'Alpha' : /Beta/.test(text) ? 'Beta' : text)).sort();
  assert.deepEqual(said, ['Alpha', 'Beta']);
  assert.deepEqual(agent.models, ['default']);
  const pid = agent.pid;
  assert.ok(pid > 0);
  assert.equal(events().filter((e) => e.event === 'start').length, 1, 'one process served both');
  await agent.close();
  assert.equal(agent.pid, undefined);
  assert.ok(await gone(pid), 'the agent’s group is gone and reaped');
  assert.throws(() => agent.turn(body('chat-completions')), /closed/);
});

test('a client going away cancels its session; the agent serves on', { timeout: 30_000 }, async () => {
  const { agent, events } = start('synthetic__interleaved-sessions.jsonl', { delayMs: 100 });
  const abort = new AbortController();
  const first = await collect(agent.turn(body('chat-completions'), { signal: abort.signal }), () => abort.abort());
  assert.equal(first.head.status, 200);
  assert.ok(await waitUntil(() => events().some((e) => e.event === 'cancel'), 5_000), 'session/cancel reached the agent');
  const pid = agent.pid;
  const second = await collect(agent.turn(body('responses'), { dialect: 'responses' }));
  assert.equal(second.head.status, 200);
  assert.match(second.text, /response\.completed/);
  assert.equal(agent.pid, pid, 'the same process');
  assert.equal(events().filter((e) => e.event === 'start').length, 1);
  await agent.close();
  assert.ok(await gone(pid));
});

test('an agent exiting mid-turn fails the turn with its stderr; the next turn gets a new process', { timeout: 30_000 }, async () => {
  const { agent, events } = start('synthetic__exit-mid-turn.jsonl');
  const failed = await collect(agent.turn(body('chat-completions')));
  assert.match(failed.text, /out of memory/);
  const first = events().find((e) => e.event === 'start').pid;
  assert.ok(await gone(first), 'the exited agent’s group is gone and reaped');
  const again = agent.turn(body('messages'), { dialect: 'messages' });
  assert.notEqual(agent.pid, first);
  await collect(again);
  assert.equal(events().filter((e) => e.event === 'start').length, 2, 'a new process');
  const second = agent.pid;
  await agent.close();
  if (second !== undefined) assert.ok(await gone(second));
});

test('an agent that never answers initialize is stopped at the deadline and reaped', { timeout: 30_000 }, async () => {
  const agent = new AcpAgent({ command: 'sleep', args: ['30'], config: { initializeTimeoutMs: 200 }, killGraceMs: 300 });
  const turn = agent.turn(body('chat-completions'));
  // The agent starts once the MCP endpoint listens.
  assert.ok(await waitUntil(() => agent.pid !== undefined, 5_000));
  const pid = agent.pid;
  const { head, text } = await collect(turn);
  assert.ok(head.status >= 500, `${head.status}`);
  assert.equal(head.retryable, true);
  assert.match(text, /initialize/);
  assert.ok(await gone(pid), 'the group is gone and reaped');
  await agent.close();
});

test('a program that cannot start answers the turn with a failure', { timeout: 30_000 }, async () => {
  const agent = new AcpAgent({ command: join(FIXTURES, 'no-such-agent') });
  const { head, text } = await collect(agent.turn(body('messages'), { dialect: 'messages' }));
  assert.ok(head.status >= 500, `${head.status}`);
  assert.match(text, /could not start/);
  await agent.close();
});

test('close() ends an open turn as a retryable failure and stops the agent', { timeout: 30_000 }, async () => {
  const { agent } = start('synthetic__interleaved-sessions.jsonl', { delayMs: 2_000 });
  const turn = agent.turn(body('chat-completions'));
  const reading = collect(turn);
  assert.ok(await waitUntil(() => agent.models !== undefined, 5_000), 'a session exists');
  const pid = agent.pid;
  await agent.close();
  const { head, text } = await reading;
  // Nothing was answered yet: the head is the failure's own.
  assert.equal(head.status, 503);
  assert.equal(head.retryable, true);
  assert.match(text, /error/);
  assert.ok(await gone(pid));
});

test('a bad command or config throws at once', () => {
  assert.throws(() => new AcpAgent({}), (e) => e instanceof AgentwireError && e.code === 'invalidArgument' && /command a string/.test(e.message));
  assert.throws(() => new AcpAgent({ command: AGENT, config: { poolSize: -1 } }), { code: 'invalidArgument', message: /poolSize/ });
  assert.throws(() => new AcpAgent({ command: AGENT, config: { mcpEndpoint: 'http://127.0.0.1:1/mcp/' } }), { code: 'invalidArgument', message: /mcpEndpoint/ });
  const refused = new AcpAgent({ command: 'no\0such', conversations: false });
  assert.throws(() => refused.turn(body('chat-completions')), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.equal(refused.pid, undefined, 'nothing started');
});

test('with conversations, a command spawn refuses fails the turn once the MCP endpoint listens', async () => {
  const refused = new AcpAgent({ command: 'no\0such' });
  await assert.rejects(collect(refused.turn(body('chat-completions'))), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.equal(refused.pid, undefined, 'nothing started');
  await refused.close();
});
