// The examples run: run_prompt.mjs prints an answer; http_server.mjs serves every dialect
// over loopback, refuses what a browser attack would send (in the route's dialect), and stops
// the agent of a client that hangs up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DIALECTS, FIXTURES, PACKAGE, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';
import { expectedAnswer } from '../../../tests/support/expected_answers.mjs';

const AGENT = join(PACKAGE, 'test/support/agent.sh');
const REPLAY = rustProgram('replay_agent');
const EXAMPLES = join(PACKAGE, 'examples');
const answerOf = (name) => expectedAnswer(join(FIXTURES, name));

const agentEnv = (agent, extra = {}) => ({ ...process.env, AGENTWIRE_REPLAY_AGENT: REPLAY, AGENTWIRE_TEST_AGENT: agent, ...extra });

test('run_prompt.mjs prints the answer', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(EXAMPLES, 'run_prompt.mjs'), '--agent', AGENT, 'hello'],
    { env: agentEnv(`--transcript ${join(FIXTURES, 'multibyte.jsonl')}`) },
  );
  assert.equal(stdout, `${answerOf('multibyte.jsonl')}\n`);
});

test('run_prompt.mjs reports a failure and exits 1', async () => {
  const error = await promisify(execFile)(
    process.execPath,
    [join(EXAMPLES, 'run_prompt.mjs'), '--agent', AGENT, 'hello'],
    { env: agentEnv(`--transcript /dev/null --stderr ${join(FIXTURES, 'stderr/not_logged_in.txt')} --exit 1`) },
  ).then(() => undefined, (e) => e);
  assert.equal(error?.code, 1);
  assert.match(error.stderr, /error 401/);
});

/** Starts the server on a free loopback port; resolves with its base URL and the process. */
async function startServer(agent, log) {
  const server = spawn(process.execPath, [join(EXAMPLES, 'http_server.mjs'), '--listen', '127.0.0.1:0', '--agent', AGENT, '--api-key', 'sk-test'], {
    env: agentEnv(agent, { AGENTWIRE_REPLAY_LOG: log }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    server.on('exit', (code) => reject(new Error(`the server exited (${code})`)));
  });
  return { server, url };
}

/** A raw request, so that headers fetch would not let through (Host) can be sent. */
function send(url, path, method, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${url.replace(/\/v1$/, '')}${path}`, { method, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const post = (url, headers, body, path = '/v1/chat/completions') => send(url, path, 'POST', headers, body);

test('http_server.mjs serves the API over loopback and refuses what a browser attack would send', async () => {
  const log = join(scratchDir('agentwire-js-'), 'runs.jsonl');
  const { server, url } = await startServer(`--transcript ${join(FIXTURES, 'multibyte.jsonl')}`, log);
  try {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const body = JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const json = { 'content-type': 'application/json', authorization: 'Bearer sk-test' };
    const ok = await post(url, json, body);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['content-type'], 'text/event-stream');
    assert.ok(ok.body.endsWith('data: [DONE]\n\n'));
    assert.equal((await post(url, { ...json, authorization: 'Bearer nope' }, body)).status, 401);
    assert.equal((await post(url, { ...json, host: 'attacker.example:80' }, body)).status, 400);
    assert.equal((await post(url, { ...json, origin: 'https://attacker.example' }, body)).status, 403);
    assert.equal((await post(url, { ...json, 'content-type': 'text/plain' }, body)).status, 415);
    const invalid = await post(url, json, '{"model":');
    assert.equal(invalid.status, 400);
    assert.equal(invalid.headers['x-should-retry'], 'false');
    assert.equal(existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0, 1, 'only the good request ran an agent');
  } finally {
    server.kill('SIGTERM');
  }
});

test('http_server.mjs serves every dialect on its route, with x-api-key too, and refuses in the route’s dialect', async () => {
  const log = join(scratchDir('agentwire-js-'), 'runs.jsonl');
  const { server, url } = await startServer(`--transcript ${join(FIXTURES, 'multibyte.jsonl')}`, log);
  try {
    const bearer = { 'content-type': 'application/json', authorization: 'Bearer sk-test' };
    const anthropic = { 'content-type': 'application/json', 'x-api-key': 'sk-test', 'anthropic-version': '2023-06-01' };
    const responses = await post(url, bearer, DIALECTS.responses, '/v1/responses');
    assert.equal(responses.status, 200);
    assert.match(responses.body, /^event: response\.created\n/);
    assert.match(responses.body, /event: response\.completed\n/);
    const messages = await post(url, anthropic, DIALECTS.messages, '/v1/messages?beta=true');
    assert.equal(messages.status, 200);
    assert.match(messages.body, /^event: message_start\n/);
    assert.match(messages.body, /event: message_stop\n/);
    const runs = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0);
    assert.equal(runs(), 2);
    const counted = await post(url, anthropic, DIALECTS.messages, '/v1/messages/count_tokens?beta=true');
    assert.equal(counted.status, 404);
    assert.equal(JSON.parse(counted.body).error.type, 'not_found_error');
    const hello = await send(url, '/api/hello', 'HEAD', { 'x-api-key': 'sk-test' });
    assert.deepEqual([hello.status, hello.body], [200, '']);
    assert.equal(runs(), 2, 'count_tokens and /api/hello run no agent');
    // Refusals: Anthropic's shape on its routes, OpenAI's on theirs.
    const wrongKey = await post(url, { ...anthropic, 'x-api-key': 'nope' }, DIALECTS.messages, '/v1/messages');
    assert.equal(wrongKey.status, 401);
    assert.deepEqual(JSON.parse(wrongKey.body).error.type, 'authentication_error');
    const wrongMethod = await send(url, '/v1/messages', 'GET', anthropic);
    assert.deepEqual([wrongMethod.status, wrongMethod.headers.allow, JSON.parse(wrongMethod.body).type], [405, 'POST', 'error']);
    const notJson = await post(url, { ...anthropic, 'content-type': 'text/plain' }, DIALECTS.messages, '/v1/messages');
    assert.deepEqual([notJson.status, JSON.parse(notJson.body).type], [415, 'error']);
    const missing = await send(url, '/v1/models', 'GET', anthropic);
    assert.deepEqual([missing.status, JSON.parse(missing.body).error.type], [404, 'not_found_error']);
    const openaiMissing = await send(url, '/v1/models', 'GET', bearer);
    assert.deepEqual([openaiMissing.status, JSON.parse(openaiMissing.body).error.code], [404, 'not_found']);
    const responsesKey = await post(url, { ...bearer, authorization: 'Bearer nope' }, DIALECTS.responses, '/v1/responses');
    assert.deepEqual([responsesKey.status, JSON.parse(responsesKey.body).error.code], [401, 'invalid_api_key']);
    assert.equal(runs(), 2);
  } finally {
    server.kill('SIGTERM');
  }
});

test('http_server.mjs stops the agent of a client that hangs up', async () => {
  const log = join(scratchDir('agentwire-js-'), 'runs.jsonl');
  const { server, url } = await startServer(`--transcript ${join(FIXTURES, 'parallel_tools.jsonl')} --delay-ms 200 --spawn-child`, log);
  try {
    const controller = new AbortController();
    const response = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    const runs = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
    assert.ok(await waitUntil(() => runs()[0]?.child_pid != null, 5_000));
    controller.abort();
    const [run] = runs();
    assert.ok(await waitUntil(() => aliveIn(run.pid).length === 0, 2_000), 'the agent’s group is gone');
  } finally {
    server.kill('SIGTERM');
  }
});
