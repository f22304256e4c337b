// AgentRun, the driver under createAgentFetch and the examples: a real child process per
// request, its process group stopped and reaped on every path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRun } from 'agentwire/node';
import { DEFAULT_REQUEST, FIXTURES, PACKAGE, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = join(PACKAGE, 'test/support/agent.sh');
const REPLAY = rustProgram('replay_agent');

function run(agent, options = {}) {
  const scratch = scratchDir('agentwire-js-');
  const log = join(scratch, 'runs.jsonl');
  const env = { ...process.env, AGENTWIRE_REPLAY_AGENT: REPLAY, AGENTWIRE_TEST_AGENT: agent, AGENTWIRE_REPLAY_LOG: log };
  const { config, body, ...rest } = options;
  const r = new AgentRun(body ?? DEFAULT_REQUEST, { config: { cursorBinary: AGENT, ...config }, env, killGraceMs: 300, ...rest });
  return { run: r, runs: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)), scratch };
}

async function collect(r) {
  let head;
  const body = [];
  for await (const output of r) {
    if (output.type === 'head') head = output;
    else body.push(output.data);
  }
  return { head, text: Buffer.concat(body).toString() };
}

test('a run answers, exits by itself and is reaped', async () => {
  const { run: r } = run(`--transcript ${join(FIXTURES, 'multibyte.jsonl')} --delay-ms 0`);
  assert.ok(r.invocation !== undefined && r.pid > 0);
  const { head, text } = await collect(r);
  assert.deepEqual(head, { type: 'head', status: 200, contentType: 'text/event-stream' });
  assert.ok(text.endsWith('data: [DONE]\n\n'));
  assert.deepEqual(await r.exited, { code: 0 });
  assert.equal(zombies().length, 0);
});

test('what the agent leaves behind when it exits is killed', async () => {
  const { run: r, runs } = run(`--transcript ${join(FIXTURES, 'multibyte.jsonl')} --delay-ms 0 --spawn-child`);
  await collect(r);
  await r.exited;
  const [logged] = runs();
  assert.ok(logged.child_pid > 0);
  assert.ok(await waitUntil(() => aliveIn(logged.pid).length === 0, 2_000), 'the child in its group is gone');
});

test('the idle timeout answers 504 and stops the hanging agent’s group', async () => {
  const { run: r, runs } = run(`--transcript /dev/null --hang --spawn-child`, { config: { idleTimeoutMs: 200 } });
  const { head, text } = await collect(r);
  assert.equal(head.status, 504);
  assert.equal(head.retryable, true);
  assert.match(text, /no output/);
  assert.deepEqual(await r.exited, { signal: 'SIGTERM' });
  assert.ok(await waitUntil(() => aliveIn(runs()[0].pid).length === 0 && zombies().length === 0, 2_000));
});

test('an agent that ignores SIGTERM is killed after the grace period', async () => {
  // A shell that traps TERM, in its own group, as the agent.
  const { scratch } = run('--version');
  const stubborn = join(scratch, 'stubborn.sh');
  writeFileSync(stubborn, "#!/bin/sh\ntrap '' TERM\necho '{\"type\":\"system\",\"subtype\":\"init\"}'\nwhile :; do sleep 1; done\n", { mode: 0o755 });
  const r = new AgentRun(DEFAULT_REQUEST, { config: { cursorBinary: stubborn, idleTimeoutMs: 100 }, killGraceMs: 200 });
  const started = performance.now();
  const { head } = await collect(r);
  assert.equal(head.status, 504);
  assert.deepEqual(await r.exited, { signal: 'SIGKILL' });
  assert.ok(performance.now() - started < 5_000);
});

test('a missing agent binary is a misconfiguration: 500, not retryable, with the install hint', async () => {
  const r = new AgentRun(DEFAULT_REQUEST, { config: { cursorBinary: '/nonexistent/cursor-agent' } });
  const { head, text } = await collect(r);
  assert.equal(head.status, 500);
  assert.equal(head.retryable, false);
  assert.match(text, /cursor\.com\/install/);
  assert.match(text, /could not start \/nonexistent\/cursor-agent/);
  assert.equal(await r.exited, undefined);
});

test('a rejected request answers 400 and starts nothing', async () => {
  const r = new AgentRun('{"model":', { config: { cursorBinary: '/nonexistent' } });
  assert.equal(r.invocation, undefined);
  assert.equal(r.pid, undefined);
  const { head, text } = await collect(r);
  assert.equal(head.status, 400);
  assert.match(text, /"invalid_request_error"/);
  assert.equal(await r.exited, undefined);
});

test('leaving the loop early stops the agent', async () => {
  const { run: r, runs } = run(`--transcript ${join(FIXTURES, 'parallel_tools.jsonl')} --delay-ms 100 --spawn-child`);
  for await (const output of r) {
    if (output.type === 'body') break;
  }
  assert.deepEqual(await r.exited, { signal: 'SIGTERM' });
  assert.ok(await waitUntil(() => aliveIn(runs()[0].pid).length === 0, 1_000));
});

test('shutdown ends the response with a retryable error and stops the agent', async () => {
  const { run: r } = run(`--transcript ${join(FIXTURES, 'parallel_tools.jsonl')} --delay-ms 100`);
  const outputs = r[Symbol.asyncIterator]();
  const head = (await outputs.next()).value;
  assert.equal(head.status, 200);
  r.shutdown();
  let text = '';
  for (let step = await outputs.next(); !step.done; step = await outputs.next()) text += Buffer.from(step.value.data).toString();
  assert.match(text, /shutting down/);
  assert.ok(text.endsWith('data: [DONE]\n\n'));
  assert.deepEqual(await r.exited, { signal: 'SIGTERM' });
});

test('a consumer that does not read holds the agent back, and loses nothing', async () => {
  // A long answer: 3,000 text deltas of 300 bytes, far more than the pipe and the queue hold.
  const { scratch } = run('--version');
  const transcript = join(scratch, 'long.jsonl');
  const piece = 'x'.repeat(300);
  const lines = [];
  for (let i = 0; i < 3_000; i++) lines.push(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: piece } ] } }));
  lines.push(JSON.stringify({ type: 'result', subtype: 'success', result: piece.repeat(3_000) }));
  writeFileSync(transcript, `${lines.join('\n')}\n`);
  const { run: r } = run(`--transcript ${transcript} --delay-ms 0`, { highWaterMark: 16 << 10 });
  try {
    // Where the kernel holds a writer to a full pipe or socket (Node's stdio is a socket pair).
    const blocked = () => {
      try {
        return /pipe_write|sock_alloc_send|unix_stream/.test(readFileSync(`/proc/${r.pid}/wchan`, 'utf8'));
      } catch {
        return false;
      }
    };
    assert.ok(await waitUntil(blocked, 5_000), 'the agent blocks writing while nobody reads');
    const { text } = await collect(r);
    const content = [...text.matchAll(/"content":"(x+)"/g)].map((m) => m[1]).join('');
    assert.equal(content.length, 900_000);
    assert.deepEqual(await r.exited, { code: 0 });
  } finally {
    await r[Symbol.asyncDispose]();
  }
});

test('disposing a run stops its agent and waits for it', async () => {
  const { run: r, runs } = run(`--transcript /dev/null --hang`);
  assert.ok(await waitUntil(() => { try { return runs().length === 1; } catch { return false; } }, 5_000));
  await r[Symbol.asyncDispose]();
  assert.equal(aliveIn(runs()[0].pid).length, 0);
});
