// AcpConnection from JavaScript: every ACP recording replayed in every dialect gives, after
// every input, the Rust connection's bytes for the agent, turn outputs, decisions and next
// deadline (the `acp` example's `acp replay`), whole, a byte at a time and split in two; misuse
// throwing the right code; and the stand-in agent (`acp_agent`) driven as a real child
// process, in its own process group, end to end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { basename, join } from 'node:path';
import { AcpConnection, AgentwireError } from 'agentwire';
import { forcePanic, hasTestHooks } from '../dist/testing.js';
import { skipReason } from '../../../tests/support/shared_fixtures.mjs';
import { DIALECTS, FIXTURES, acpFixtures, acpRecordings, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { rustAcpReplay } from './support/rust.mjs';

const TEXT = new TextEncoder();
const UTF8 = new TextDecoder();
/** The connection `acp replay` makes. */
const REPLAY_CONFIG = { cwd: '/home/user/project', poolSize: 0 };
const SPLITS = ['whole', 'bytes', 'halves'];

/** `data` cut as `split` says. */
function pieces(data, split) {
  if (split === 'bytes') return Array.from(data, (_, i) => data.subarray(i, i + 1));
  if (split === 'halves' && data.length > 1) return [data.subarray(0, data.length >> 1), data.subarray(data.length >> 1)];
  return [data];
}

/**
 * The outputs of one step, grouped by turn in the order turns were started, a turn's
 * consecutive bodies joined: the same whatever the chunking of the input.
 */
function byTurn(outputs) {
  const turns = new Map();
  for (const output of outputs) {
    const list = turns.get(output.turn) ?? [];
    const last = list.at(-1);
    if (output.type === 'body' && last?.type === 'body') last.data += output.data;
    else list.push({ ...output });
    turns.set(output.turn, list);
  }
  return [...turns.entries()].sort(([a], [b]) => a - b);
}

/** Everything the connection has after an input, the turns found through `pollReady`. */
function drainAll(connection, into) {
  for (let bytes; (bytes = connection.pollTransmit()) !== undefined; ) into.transmit += UTF8.decode(bytes);
  for (let decision; (decision = connection.pollDecision()) !== undefined; ) {
    assert.equal(decision.type, 'restart');
    into.decisions.push(decision.reason);
  }
  for (let turn; (turn = connection.pollReady()) !== undefined; ) {
    for (const output of connection.drain(turn)) {
      switch (output.type) {
        case 'head':
          into.outputs.push({ turn, type: 'head', status: output.status, contentType: output.contentType, retryable: output.retryable ?? null });
          break;
        case 'body':
          into.outputs.push({ turn, type: 'body', data: UTF8.decode(output.data) });
          break;
        case 'end':
          into.outputs.push({ turn, type: 'end' });
          break;
        default:
          assert.fail(`a turn gave ${output.type}`);
      }
    }
  }
}

/** Replays the Rust replay's inputs, each stdout push cut as `split` says, checking every step. */
function replay(recording, dialect, split) {
  const { steps } = rustAcpReplay(dialect, recording);
  const name = `${basename(recording)} ${dialect} ${split}`;
  let connection;
  let started = 0;
  for (const [index, { input, ...expected }] of steps.entries()) {
    const got = { transmit: '', outputs: [], decisions: [] };
    const now = input.nowMs;
    switch (input.op) {
      case 'new':
        connection = new AcpConnection({ config: REPLAY_CONFIG, nowMs: 0 });
        break;
      case 'start': {
        const options = { dialect: input.dialect, nowMs: now, created: input.created, idSeed: BigInt(input.idSeed) };
        assert.equal(connection.startTurn(input.body, options), started++, `${name}: turns are numbered from 0`);
        break;
      }
      case 'stdout':
      case 'stderr':
        for (const piece of pieces(TEXT.encode(input.data), split)) {
          if (input.op === 'stdout') connection.pushStdout(piece, now);
          else connection.pushStderr(piece, now);
          drainAll(connection, got);
        }
        break;
      case 'exit':
        connection.agentExited({ code: input.code }, now);
        break;
      case 'timeout':
        connection.handleTimeout(now);
        break;
      case 'gone':
        connection.clientGone(input.turn, now);
        break;
      default:
        assert.fail(`${name}: unknown input ${input.op}`);
    }
    drainAll(connection, got);
    const where = `${name}, step ${index} (${input.op})`;
    assert.equal(got.transmit, expected.transmit, `${where}: the bytes for the agent`);
    assert.deepEqual(byTurn(got.outputs), byTurn(expected.outputs), `${where}: the turns' outputs`);
    assert.deepEqual(got.decisions, expected.decisions, `${where}: the decisions`);
    assert.equal(connection.pollTimeout() ?? null, expected.timeout, `${where}: the next deadline`);
  }
  assert.ok(connection.isDead, `${name}: the agent exited at the end`);
  assert.equal(connection.activeTurns, 0, `${name}: every turn ended`);
  connection.free();
  return steps;
}

for (const dialect of Object.keys(DIALECTS)) {
  test(`${dialect}: every project ACP fixture gives the Rust connection's bytes and outputs after every input, in every chunking`, () => {
    const recordings = acpFixtures();
    assert.ok(recordings.length > 0);
    for (const recording of recordings) for (const split of SPLITS) replay(recording, dialect, split);
  });

  test(`${dialect}: every real ACP recording gives the Rust connection's bytes and outputs after every input, in every chunking`, { skip: skipReason() }, () => {
    for (const recording of acpRecordings()) {
      const steps = replay(recording, dialect, 'whole');
      const heads = steps.flatMap((s) => s.outputs).filter((o) => o.type === 'head');
      assert.ok(heads.length > 0, `${basename(recording)}: a turn was answered`);
      for (const split of ['bytes', 'halves']) replay(recording, dialect, split);
    }
  });
}

test('the getters: readiness, the agent’s models, turns and malformed lines', () => {
  const connection = new AcpConnection({ config: REPLAY_CONFIG });
  assert.equal(connection.isReady, false);
  assert.equal(connection.isDead, false);
  assert.equal(connection.models, undefined);
  assert.equal(connection.currentModel, undefined);
  const initialize = JSON.parse(UTF8.decode(connection.pollTransmit()));
  assert.equal(initialize.method, 'initialize');
  connection.pushStdout(TEXT.encode(`{"jsonrpc":"2.0","id":${initialize.id},"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}\n`), 5);
  assert.equal(connection.isReady, true);
  const turn = connection.startTurn(DIALECTS.messages.replace('"auto"', '"c"'), { dialect: 'messages', nowMs: 6 });
  assert.equal(connection.activeTurns, 1);
  const created = JSON.parse(UTF8.decode(connection.pollTransmit()));
  assert.equal(created.method, 'session/new');
  assert.equal(created.params.cwd, '/home/user/project');
  connection.pushStdout(TEXT.encode('not json\n'), 7);
  assert.equal(connection.malformedLines, 1);
  const models = { currentModelId: 'b', availableModels: [{ modelId: 'a', name: 'A' }, { modelId: 'b', name: 'B' }] };
  connection.pushStdout(TEXT.encode(`${JSON.stringify({ jsonrpc: '2.0', id: created.id, result: { sessionId: 's', models } })}\n`), 8);
  assert.deepEqual(connection.models, ['a', 'b']);
  assert.ok(Object.isFrozen(connection.models));
  assert.equal(connection.currentModel, 'b');
  // A model the agent does not list is refused with a 404 before anything is sent for it.
  assert.equal(connection.pollReady(), turn);
  const outputs = connection.drain(turn);
  assert.equal(outputs[0].status, 404);
  assert.deepEqual(outputs.at(-1), { type: 'end' });
  assert.equal(connection.pollOutput(turn), undefined, 'nothing after the end');
  assert.equal(connection.activeTurns, 0);
  assert.equal(connection.pollTransmit(), undefined, 'no prompt was sent');
  connection.shutdown(9);
  connection.free();
});

test('pollReady names each turn with output once per input, in the order turns were started', () => {
  const connection = new AcpConnection();
  const first = connection.startTurn('{', { nowMs: 1 });
  const second = connection.startTurn('{', { nowMs: 1 });
  assert.equal(second, first + 1);
  assert.equal(connection.pollReady(), first);
  assert.equal(connection.pollReady(), second);
  assert.equal(connection.pollReady(), undefined, 'each once, though neither was drained');
  connection.handleTimeout(1); // an input, though nothing is due
  assert.equal(connection.pollReady(), first, 'named again after the next input');
  assert.equal(connection.drain(first).at(-1).type, 'end');
  assert.equal(connection.pollReady(), second);
  assert.equal(connection.drain(second).at(-1).type, 'end');
  connection.handleTimeout(2);
  assert.equal(connection.pollReady(), undefined, 'ended turns are not named');
  connection.free();
});

test('a request the connection cannot serve is answered in its turn, never thrown', () => {
  const connection = new AcpConnection();
  const tools = { ...JSON.parse(DIALECTS['chat-completions']), tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] };
  for (const [body, status, says] of [
    ['{', 400, ''],
    [JSON.stringify(tools), 400, 'tools'],
  ]) {
    const turn = connection.startTurn(body, { nowMs: 1 });
    const head = connection.pollOutput(turn);
    assert.equal(head.type, 'head');
    assert.equal(head.status, status);
    const rest = connection.drain(turn);
    assert.match(UTF8.decode(rest[0].data), new RegExp(says));
    assert.deepEqual(rest.at(-1), { type: 'end' });
  }
  connection.free();
});

test('misuse throws invalidArgument naming what is wrong, and leaves the connection usable', () => {
  const bad = (make, pattern, code = 'invalidArgument') =>
    assert.throws(make, (e) => e instanceof AgentwireError && e.code === code && e.kind === 'misuse' && pattern.test(e.message), String(pattern));
  bad(() => new AcpConnection(null), /options must be an object, not null/);
  bad(() => new AcpConnection({ nowMs: '0' }), /nowMs must be a number, not string/);
  bad(() => new AcpConnection({ nowMs: -1 }), /nowMs must be a finite, non-negative number/);
  bad(() => new AcpConnection({ config: [] }), /ACP config must be an object, not Array/);
  bad(() => new AcpConnection({ config: { poolSize: -1 } }), /invalid ACP config: poolSize must be a whole number, 0 or more, not -1/);
  bad(() => new AcpConnection({ config: { queueTimeoutMs: 1.5 } }), /queueTimeoutMs must be a whole number, 0 or more, not 1\.5/);
  bad(() => new AcpConnection({ config: { cancelTimeoutMs: Infinity } }), /cancelTimeoutMs must be a finite number/);
  bad(() => new AcpConnection({ config: { maxConcurrentPrompts: 0 } }), /maxConcurrentPrompts must be at least 1/);
  bad(() => new AcpConnection({ config: { cwd: 1 } }), /cwd must be a string, not 1/);
  bad(() => new AcpConnection({ config: { cwd: null } }), /cwd must be a string, not null/);
  bad(() => new AcpConnection({ config: { permission: 'allowAlways' } }), /permission must be 'allowOnce' or 'rejectOnce', not 'allowAlways'/);
  bad(() => new AcpConnection({ config: { nativeTools: 'none' } }), /nativeTools must be 'keep' or 'off', not 'none'/);
  bad(() => new AcpConnection({ config: { extensions: { answer: 1, extra: 2 } } }), /extensions must be 'methodNotFound' or \{ answer \}/);
  bad(() => new AcpConnection({ config: { defaultModelNames: ['a', 1] } }), /defaultModelNames must be an array of strings/);
  bad(() => new AcpConnection({ config: { poolSise: 1 } }), /unknown field `poolSise`/);
  // Every field of the right type is taken.
  new AcpConnection({ config: { nativeTools: 'off' } }).free();
  new AcpConnection({ config: { permission: 'rejectOnce', extensions: { answer: { outcome: { outcome: 'cancelled' } } }, defaultModelNames: [] } }).free();

  const connection = new AcpConnection();
  bad(() => connection.startTurn(DIALECTS.messages, { dialect: 'anthropic' }), /dialect must be one of 'chat-completions', 'responses', 'messages'/);
  bad(() => connection.startTurn(42), /body must be a Uint8Array, not number/);
  bad(() => connection.startTurn(DIALECTS.messages, { config: { idleTimeout: 1 } }), /unknown field `idleTimeout`/);
  bad(() => connection.startTurn(DIALECTS.messages, { idSeed: 1 }), /idSeed must be a bigint/);
  bad(() => connection.pushStdout('text', 0), /data must be a Uint8Array, not string/);
  bad(() => connection.pushStderr(new Uint8Array(1), NaN), /nowMs must be a finite, non-negative number/);
  bad(() => connection.agentExited({ code: 0, signal: 9 }, 0), /exactly one/);
  for (const turn of [-1, 0.5, '0', undefined, 2 ** 53]) {
    bad(() => connection.pollOutput(turn), /turn must be a turn number from startTurn/);
    bad(() => connection.clientGone(turn, 0), /turn must be a turn number from startTurn/);
  }
  assert.equal(connection.pollOutput(7), undefined, 'an unknown turn has nothing');
  assert.deepEqual(connection.drain(7), []);
  connection.clientGone(7, 0); // does nothing
  assert.equal(connection.activeTurns, 0);
  assert.equal(JSON.parse(UTF8.decode(connection.pollTransmit())).method, 'initialize', 'the connection carries on');
  connection.agentExited({ signal: 9 }, 1);
  bad(() => connection.pushStdout(new Uint8Array(1), 2), /after the agent exited/, 'afterExit');
  bad(() => connection.pushStderr(new Uint8Array(1), 2), /after the agent exited/, 'afterExit');
  bad(() => connection.agentExited({ code: 0 }, 2), /exited twice/, 'exitedTwice');
  assert.match(connection.pollDecision().reason, /signal 9/);
  assert.equal(connection.pollDecision(), undefined);
  // A turn started on a dead connection fails at once, with a status the client may retry.
  const late = connection.startTurn(DIALECTS['chat-completions'], { nowMs: 3 });
  assert.deepEqual(connection.pollOutput(late), { type: 'head', status: 503, contentType: 'application/json', retryable: true });
  connection.free();
  bad(() => connection.isReady, /was freed/, 'closed');
  bad(() => connection.pollTransmit(), /was freed/, 'closed');
});

const hooks = !hasTestHooks() && process.env.AGENTWIRE_REQUIRE_TEST_HOOKS !== '1' && 'the module was built without the test-hooks feature';
test('a panic poisons its connection only', { skip: hooks }, () => {
  const victim = new AcpConnection();
  const bystander = new AcpConnection();
  assert.throws(() => forcePanic(victim), (e) => e instanceof AgentwireError && e.code === 'panic' && /RawAcpConnection::test_panic/.test(e.message));
  assert.throws(() => victim.pollTransmit(), { code: 'poisoned' });
  assert.throws(() => victim.startTurn(DIALECTS.messages, { dialect: 'messages' }), { code: 'poisoned' });
  assert.equal(JSON.parse(UTF8.decode(bystander.pollTransmit())).method, 'initialize');
  bystander.free();
});

test('the stand-in agent as a child process: two turns in two dialects served at once, the agent reaped', { timeout: 30_000 }, async () => {
  const recording = join(FIXTURES, 'acp/synthetic__interleaved-sessions.jsonl');
  const child = spawn(rustProgram('acp_agent'), ['--recording', recording, '--delay-ms', '0'], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const group = child.pid;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // The streams are read to their end before the exit is reported.
  const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve(code === null ? { signal: constants.signals[signal] } : { code })));
  const connection = new AcpConnection({ config: { cwd: '/home/user/project', poolSize: 2 }, nowMs: performance.now() });
  const bodies = new Map();
  const ended = new Set();
  let timer;
  let settle;
  const done = new Promise((resolve, reject) => (settle = { resolve, reject }));
  const step = () => {
    clearTimeout(timer);
    try {
      for (let bytes; (bytes = connection.pollTransmit()) !== undefined; ) child.stdin.write(bytes);
      const decision = connection.pollDecision();
      if (decision !== undefined) throw new Error(`restart: ${decision.reason}`);
      for (let turn; (turn = connection.pollReady()) !== undefined; ) {
        for (const output of connection.drain(turn)) {
          const response = bodies.get(turn);
          if (output.type === 'head') response.head = output;
          else if (output.type === 'body') response.chunks.push(output.data);
          else if (output.type === 'end') ended.add(turn);
        }
      }
      if (ended.size === bodies.size && bodies.size > 0) settle.resolve();
      const due = connection.pollTimeout();
      if (due !== undefined) {
        timer = setTimeout(() => {
          connection.handleTimeout(performance.now());
          step();
        }, Math.max(0, due - performance.now()));
      }
    } catch (error) {
      settle.reject(error);
    }
  };
  child.stdout.on('data', (chunk) => {
    connection.pushStdout(chunk, performance.now());
    step();
  });
  child.stderr.on('data', (chunk) => {
    connection.pushStderr(chunk, performance.now());
    step();
  });
  child.once('error', (error) => settle.reject(error));
  try {
    const ask = (dialect) => {
      const body = JSON.parse(DIALECTS[dialect]);
      body.model = 'default';
      const turn = connection.startTurn(JSON.stringify(body), { dialect, nowMs: performance.now() });
      bodies.set(turn, { dialect, chunks: [] });
    };
    ask('chat-completions');
    ask('messages');
    step();
    await done;
    const answers = [...bodies.values()].map(({ dialect, head, chunks }) => ({ dialect, status: head.status, text: Buffer.concat(chunks).toString() }));
    for (const { dialect, status, text } of answers) {
      assert.equal(status, 200, dialect);
      assert.match(text, dialect === 'messages' ? /event: message_stop\n/ : /data: \[DONE\]\n\n$/, dialect);
    }
    // Each session got one of the recording's two answers, interleaved on the one pipe.
    const said = answers.map(({ text }) => (/Alpha/.test(text) ? 'Alpha one.' : /Beta/.test(text) ? 'Beta two.' : text));
    assert.deepEqual(said.sort(), ['Alpha one.', 'Beta two.']);
    assert.equal(connection.activeTurns, 0);
    assert.equal(connection.isReady, true);
    // End of stdin ends the agent; its exit is the connection's last input.
    child.stdin.end();
    const exit = await closed;
    connection.agentExited(exit, performance.now());
    assert.deepEqual(exit, { code: 0 });
    assert.equal(connection.pollDecision()?.type, 'restart', 'an exited agent is restarted');
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
    connection.free();
  }
  assert.ok(await waitUntil(() => aliveIn(group).length === 0 && zombies().length === 0, 5_000), 'the agent’s group is gone and reaped');
});
