// The replies that need no agent: countTokens and a server's own refusals give the Rust
// `reply` example's status, retryability and bytes, in every dialect; bad arguments throw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentwireError, countTokens, errorReply } from 'agentwire';
import { COUNT_TOKENS_BODIES, ERROR_KINDS, REFUSAL_MESSAGE } from './support/cases.mjs';
import { DIALECTS } from './support/paths.mjs';
import { rustReply } from './support/rust.mjs';

const headers = (retryable) => ({ 'content-type': 'application/json', 'x-should-retry': String(retryable) });

test('countTokens gives the Rust reply: a 400 naming the field, or a 404 saying it cannot count', () => {
  for (const [i, body] of COUNT_TOKENS_BODIES().entries()) {
    const expected = rustReply(['count-tokens'], body);
    const reply = countTokens(body);
    assert.equal(reply.status, expected.status, `body ${i}`);
    assert.equal(reply.retryable, expected.retryable, `body ${i}`);
    assert.ok(Buffer.from(reply.body).equals(expected.body), `body ${i}`);
    assert.deepEqual(reply.headers, headers(false));
    assert.ok([400, 404].includes(reply.status) && !reply.retryable);
    const error = JSON.parse(Buffer.from(reply.body).toString());
    assert.equal(error.type, 'error');
    assert.equal(error.error.type, reply.status === 400 ? 'invalid_request_error' : 'not_found_error');
    assert.ok(Object.isFrozen(reply));
  }
  // A string is its UTF-8 bytes.
  assert.deepEqual(countTokens(DIALECTS.messages), countTokens(Buffer.from(DIALECTS.messages)));
});

test('countTokens keeps the configured request limits', () => {
  assert.equal(countTokens(DIALECTS.messages).status, 404);
  const small = countTokens(DIALECTS.messages, { config: { requestLimits: { maxBodyBytes: 8 } } });
  assert.equal(small.status, 413);
  assert.match(Buffer.from(small.body).toString(), /"type":"request_too_large"/);
});

test('every refusal in every dialect gives the Rust reply', () => {
  for (const dialect of Object.keys(DIALECTS)) {
    for (const [rustName, kind, status] of ERROR_KINDS) {
      const expected = rustReply(['error', dialect, rustName, REFUSAL_MESSAGE]);
      const reply = errorReply(dialect, kind, REFUSAL_MESSAGE);
      const label = `${dialect} ${kind}`;
      assert.equal(reply.status, status, label);
      assert.equal(expected.status, status, label);
      assert.equal(reply.retryable, expected.retryable, label);
      assert.equal(reply.retryable, [429, 502, 503, 504].includes(status) && kind !== 'usageLimit', label);
      assert.deepEqual(reply.headers, headers(reply.retryable), label);
      assert.ok(Buffer.from(reply.body).equals(expected.body), label);
      const error = JSON.parse(Buffer.from(reply.body).toString());
      assert.equal(error.error.message, REFUSAL_MESSAGE, label);
      assert.equal(error.type === 'error', dialect === 'messages', label);
    }
  }
});

test('bad refusal arguments throw, naming the choices', () => {
  const misuse = (pattern) => (e) => e instanceof AgentwireError && e.code === 'invalidArgument' && pattern.test(e.message);
  assert.throws(() => errorReply('anthropic', 'notFound', 'x'), misuse(/'chat-completions', 'responses', 'messages'/));
  assert.throws(() => errorReply(undefined, 'notFound', 'x'), misuse(/dialect/));
  assert.throws(() => errorReply('messages', 'not-found', 'x'), misuse(/invalidRequest, authentication, .*timeout/));
  assert.throws(() => errorReply('messages', 404, 'x'), misuse(/kind must be/));
  assert.throws(() => errorReply('messages', 'notFound', Buffer.from('x')), misuse(/message must be a string/));
  assert.throws(() => errorReply('messages', 'notFound', 'a \ud800 b'), { code: 'invalidInput', kind: 'badInput' });
  assert.throws(() => countTokens(42), misuse(/body must be a Uint8Array/));
  assert.throws(() => countTokens('{}', { config: { requestLimits: { maxBodyBytes: -1 } } }), misuse(/config/));
});
