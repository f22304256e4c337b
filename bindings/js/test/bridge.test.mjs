// The Bridge from JavaScript: the same status and bytes as the Rust bridge on the same input,
// in every chunking; typed outputs; the configuration reaching the core; misuse throwing the
// right code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basename, join } from 'node:path';
import { AgentwireError, Bridge, defaultConfig } from 'agentwire';
import { HOSTILE_CASES, defaultRequestFile } from './support/cases.mjs';
import { read, respond } from './support/drive.mjs';
import { DEFAULT_REQUEST, FIXTURES, realCaptures, requests, stderrs, transcripts } from './support/paths.mjs';
import { rustTranslate } from './support/rust.mjs';

const CHUNKS = [1, 7, 4096];
const TEXT = new TextEncoder();
const bytes = (text) => TEXT.encode(text);
const bodyText = (outputs) => Buffer.concat(outputs.filter((o) => o.type === 'body').map((o) => o.data)).toString();

test('every project transcript, for every example request, gives the Rust status and bytes in every chunking', () => {
  for (const transcript of transcripts()) {
    for (const request of [defaultRequestFile(), ...requests()]) {
      const expected = rustTranslate(request, transcript);
      for (const chunk of CHUNKS) {
        const got = respond(read(request), read(transcript), chunk);
        assert.equal(got.status, expected.status, `${basename(transcript)} ${basename(request)} ${chunk}`);
        assert.ok(got.body.equals(expected.body), `${basename(transcript)} ${basename(request)} in ${chunk}-byte pushes`);
      }
    }
  }
});

test('every real capture gives the Rust status and bytes, streaming and with client tools', { skip: realCaptures().length === 0 && '../shared/fixtures absent' }, () => {
  for (const transcript of realCaptures()) {
    for (const request of [defaultRequestFile(), join(FIXTURES, 'requests/client_tools.json')]) {
      const expected = rustTranslate(request, transcript);
      for (const chunk of [7, 4096]) {
        const got = respond(read(request), read(transcript), chunk);
        assert.equal(got.status, expected.status, basename(transcript));
        assert.ok(got.body.equals(expected.body), `${basename(transcript)} ${basename(request)} in ${chunk}-byte pushes`);
      }
    }
  }
});

test('failed runs give the Rust status and error body', () => {
  const transcript = join(FIXTURES, 'failure_no_result.jsonl');
  for (const stderr of stderrs()) {
    const expected = rustTranslate(defaultRequestFile(), transcript, stderr, 1);
    const got = respond(bytes(DEFAULT_REQUEST), read(transcript), 4096, read(stderr), 1);
    assert.ok(got.status >= 400, basename(stderr));
    assert.equal(got.status, expected.status, basename(stderr));
    assert.ok(got.body.equals(expected.body), basename(stderr));
  }
});

test('hostile bodies get the Rust 400 and spawn nothing', () => {
  for (const { body, file } of HOSTILE_CASES()) {
    const expected = rustTranslate(file, join(FIXTURES, 'partial_recaps.jsonl'));
    assert.equal(expected.status, 400);
    const bridge = new Bridge(body, { nowMs: 0, created: 1_700_000_000, idSeed: 0n });
    assert.equal(bridge.invocation, undefined);
    const outputs = bridge.drain();
    assert.deepEqual(outputs[0], { type: 'head', status: 400, contentType: 'application/json', retryable: false });
    assert.equal(outputs[1].type, 'body');
    assert.deepEqual(outputs.slice(2), [{ type: 'end' }]);
    assert.ok(Buffer.from(outputs[1].data).equals(expected.body), file);
    assert.ok(bridge.isEnded);
    assert.equal(bridge.pollTimeout(), undefined);
    bridge.free();
  }
});

test('a string body is its UTF-8 bytes', () => {
  const fromString = respond(DEFAULT_REQUEST.replace('hi', 'héllo 😀'), read(join(FIXTURES, 'multibyte.jsonl')));
  const fromBytes = respond(bytes(DEFAULT_REQUEST.replace('hi', 'héllo 😀')), read(join(FIXTURES, 'multibyte.jsonl')));
  assert.equal(fromString.status, 200);
  assert.ok(fromString.body.equals(fromBytes.body));
});

test('the invocation reflects the config, and the loop runs to one end', () => {
  const config = { cursorBinary: '/opt/agent', cliConfigDir: '/tmp/cfg', workspace: '/srv', headDeadlineMs: 5_000 };
  const bridge = new Bridge(DEFAULT_REQUEST, { config, nowMs: 100, created: 1, idSeed: 7n });
  const inv = bridge.invocation;
  assert.equal(inv.program, '/opt/agent');
  assert.deepEqual(inv.argv, ['/opt/agent', ...inv.args]);
  assert.equal(inv.args[inv.args.indexOf('--workspace') + 1], '/srv');
  assert.deepEqual(inv.env, { CURSOR_CONFIG_DIR: '/tmp/cfg' });
  assert.ok(Buffer.from(inv.stdin).toString().includes('hi'));
  assert.ok(Object.isFrozen(inv) && Object.isFrozen(inv.args));
  assert.ok(bridge.isStream && !bridge.isEnded);
  assert.equal(bridge.sessionId, undefined);
  assert.equal(bridge.pollTimeout(), 5_100);
  assert.deepEqual(bridge.drain(), []);
  bridge.pushStdout(
    bytes(
      '{"type":"system","subtype":"init","session_id":"s-9"}\n' +
        '{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"}]}}\n' +
        '{"type":"result","subtype":"success","result":"Hi"}\n',
    ),
    150.7,
  );
  const outputs = bridge.drain();
  assert.deepEqual(outputs[0], { type: 'head', status: 200, contentType: 'text/event-stream' });
  assert.ok(bodyText(outputs).endsWith('data: [DONE]\n\n'));
  assert.deepEqual(outputs.at(-1), { type: 'end' });
  assert.ok(bridge.isEnded);
  assert.equal(bridge.sessionId, 's-9');
  assert.equal(bridge.pollTimeout(), undefined);
  bridge.agentExited({ code: 0 }, 160);
  assert.deepEqual(bridge.drain(), []);
  bridge.free();
});

test('pollOutput and outputs() hand out what drain() does', () => {
  const make = () => {
    const bridge = new Bridge(DEFAULT_REQUEST, { nowMs: 0, created: 1, idSeed: 1n });
    bridge.pushStdout(read(join(FIXTURES, 'multibyte.jsonl')), 1);
    bridge.agentExited({ signal: 9 }, 2);
    return bridge;
  };
  const a = make();
  const b = make();
  const c = make();
  const drained = a.drain();
  const polled = [];
  for (let o = b.pollOutput(); o !== undefined; o = b.pollOutput()) polled.push(o);
  assert.deepEqual(polled, drained);
  assert.deepEqual([...c.outputs()], drained);
  for (const bridge of [a, b, c]) bridge.free();
});

test('the client going away stops the agent and ends with nothing more', () => {
  const bridge = new Bridge(DEFAULT_REQUEST);
  bridge.clientGone(5);
  assert.deepEqual(bridge.drain(), [{ type: 'stopAgent' }, { type: 'end' }]);
  bridge.free();
});

test('shutdown ends with a retryable 503', () => {
  const bridge = new Bridge(DEFAULT_REQUEST);
  bridge.shutdown(5);
  const outputs = bridge.drain();
  assert.deepEqual(outputs[0], { type: 'head', status: 503, contentType: 'application/json', retryable: true });
  assert.match(bodyText(outputs), /shutting down/);
  assert.deepEqual(outputs.slice(2), [{ type: 'stopAgent' }, { type: 'end' }]);
  bridge.shutdown(6);
  assert.deepEqual(bridge.drain(), []);
  bridge.free();
});

test('the idle timeout fails with 504 and stops the agent', () => {
  const bridge = new Bridge(DEFAULT_REQUEST, { config: { idleTimeoutMs: 1000, headDeadlineMs: 60_000 } });
  assert.equal(bridge.pollTimeout(), 1000);
  bridge.handleTimeout(999.9);
  assert.deepEqual(bridge.drain(), []);
  bridge.handleTimeout(1000);
  const outputs = bridge.drain();
  assert.deepEqual(outputs[0], { type: 'head', status: 504, contentType: 'application/json', retryable: true });
  assert.ok(outputs.some((o) => o.type === 'stopAgent'));
  assert.deepEqual(outputs.at(-1), { type: 'end' });
  bridge.free();
});

test('every config field reaches the core', () => {
  // Fields that show in what the bridge does, each away from its default.
  const request = JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const run = (config, lines, now = 0) => {
    const bridge = new Bridge(request, { config, nowMs: 0, created: 1, idSeed: 1n });
    bridge.pushStdout(bytes(lines.map((l) => `${JSON.stringify(l)}\n`).join('')), now);
    const outputs = bridge.drain();
    const inv = bridge.invocation;
    bridge.free();
    return { outputs, inv, text: bodyText(outputs) };
  };
  const thinking = [{ type: 'thinking', subtype: 'delta', text: 'hmm' }];
  assert.match(run({}, thinking).text, /"reasoning_content":"hmm"/);
  assert.match(run({ reasoning: 'reasoning' }, thinking).text, /"reasoning":"hmm"/);
  assert.doesNotMatch(run({ reasoning: 'omitted' }, thinking).text, /hmm/);
  assert.ok(run({}, []).inv.args.includes('--stream-partial-output'));
  assert.ok(!run({ partialOutput: false }, []).inv.args.includes('--stream-partial-output'));
  assert.ok(!run({}, []).inv.args.includes('--force'));
  assert.ok(run({ allowForce: true }, []).inv.args.includes('--force'));
  assert.equal(new Bridge(request, { config: { requestLimits: { maxBodyBytes: 10 } } }).drain()[0].status, 413);
  const twoMessages = JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] });
  assert.equal(new Bridge(twoMessages, { config: { requestLimits: { maxMessages: 1 } } }).drain()[0].status, 400);
  const keepAlive = new Bridge(request, { config: { headDeadlineMs: 10, keepAliveMs: 20, idleTimeoutMs: 1000, maxDurationMs: 500 } });
  assert.equal(keepAlive.pollTimeout(), 10);
  keepAlive.handleTimeout(10);
  assert.equal(keepAlive.drain()[0].status, 200);
  assert.equal(keepAlive.pollTimeout(), 30);
  keepAlive.handleTimeout(30);
  assert.match(bodyText(keepAlive.drain()), /^: keep-alive/);
  keepAlive.handleTimeout(500);
  assert.match(bodyText(keepAlive.drain()), /did not finish within 0 s/);
  const stderrTail = new Bridge(request, { config: { stderrTailBytes: 4 } });
  stderrTail.pushStderr(bytes('Error: not logged in\nabcd'), 1);
  stderrTail.agentExited({ code: 1 }, 2);
  assert.doesNotMatch(bodyText(stderrTail.drain()), /not logged in/i);
  const defaults = defaultConfig();
  assert.deepEqual(Object.keys(defaults).sort(), [
    'activityNotes', 'allowForce', 'batchWindowMs', 'cliConfigDir', 'cursorBinary', 'decoder', 'headDeadlineMs',
    'idleTimeoutMs', 'keepAliveMs', 'loopGuard', 'maxDurationMs', 'maxEnvelopeBytes', 'partialOutput', 'reasoning',
    'requestLimits', 'stderrTailBytes', 'toolStrategy', 'workspace',
  ]);
  assert.deepEqual(defaults.decoder, { maxLineLen: 64 * 1024 * 1024, maxNotes: 8 * 1024 });
  assert.deepEqual(defaults.loopGuard, { maxFailedRepeats: 2, maxRepeats: 7 });
  assert.equal(defaults.workspace, null);
  assert.equal(defaults.toolStrategy, 'readOnly');
  // The defaults, given back as a config, are accepted whole.
  new Bridge(request, { config: defaults }).free();
});

test('misuse throws AgentwireError with the right code', () => {
  const bridge = new Bridge(DEFAULT_REQUEST);
  bridge.agentExited({ signal: 9 }, 1);
  assert.throws(() => bridge.pushStdout(bytes('{}\n'), 2), { name: 'AgentwireError', code: 'afterExit', kind: 'misuse', message: /after the agent exited/ });
  assert.throws(() => bridge.pushStderr(bytes('x'), 2), { code: 'afterExit' });
  assert.throws(() => bridge.agentExited({ code: 0 }, 3), { code: 'exitedTwice' });
  assert.throws(() => bridge.agentExited({}, 3), { code: 'invalidArgument' });
  assert.throws(() => bridge.agentExited({ code: 0, signal: 9 }, 3), { code: 'invalidArgument' });
  assert.throws(() => bridge.handleTimeout(-1), { code: 'invalidArgument', message: /nowMs/ });
  assert.throws(() => bridge.handleTimeout(NaN), { code: 'invalidArgument' });
  assert.throws(() => bridge.handleTimeout('5'), { code: 'invalidArgument' });
  bridge.free();
  bridge.free();
  assert.ok(bridge.closed);
  assert.throws(() => bridge.pushStdout(bytes('x'), 4), { code: 'closed' });
  assert.throws(() => bridge.drain(), { code: 'closed' });
  assert.throws(() => bridge.isEnded, { code: 'closed' });
  for (const options of [
    { idSeed: 1 },
    { idSeed: -1n },
    { idSeed: 1n << 64n },
    { nowMs: Infinity },
    { created: -5 },
    { config: { idleTimeoutMs: 1.5 } },
    { config: { idleTimeoutMs: null } },
    { config: { idleTimeoutMs: 10n } },
    { config: { idleTimeout: 10 } },
    { config: { toolStrategy: 'read-only' } },
    { config: [] },
  ]) {
    assert.throws(() => new Bridge(DEFAULT_REQUEST, options), (e) => e instanceof AgentwireError && e.code === 'invalidArgument', JSON.stringify(options, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));
  }
  assert.throws(() => new Bridge(42), { code: 'invalidArgument' });
  // Bad input: text that cannot reach a command line.
  assert.throws(() => new Bridge(DEFAULT_REQUEST, { config: { workspace: 'a\0b' } }), { code: 'invalidInput', kind: 'badInput' });
  assert.throws(() => new Bridge(DEFAULT_REQUEST, { config: { cursorBinary: '\ud800' } }), { code: 'invalidInput' });
  // null clears an optional field.
  const cleared = new Bridge(DEFAULT_REQUEST, { config: { workspace: null, maxDurationMs: null } });
  assert.ok(!cleared.invocation.args.includes('--workspace'));
  cleared.free();
});

test('Symbol.dispose frees', () => {
  const bridge = new Bridge(DEFAULT_REQUEST);
  bridge[Symbol.dispose]();
  assert.ok(bridge.closed);
});
