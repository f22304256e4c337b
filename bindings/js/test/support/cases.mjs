// Inputs several test files share, written once to files the Rust examples can read.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIALECTS, clientToolsRequest } from './paths.mjs';
import { scratchDir } from './scratch.mjs';

// run-tests.sh names one directory for the whole run (its expected answers name these
// files) and removes it; a test file run alone gets one of its own.
const DIR = process.env.AGENTWIRE_JS_CASES ?? scratchDir('agentwire-js-cases-');

function file(name, content) {
  mkdirSync(DIR, { recursive: true });
  const path = join(DIR, name);
  writeFileSync(path, content);
  return path;
}

/** A dialect's smallest request (the `translate` example's default for Chat Completions), as a file. */
export const defaultRequestFile = (dialect = 'chat-completions') => file(`default-${dialect}.json`, DIALECTS[dialect]);

/** Request bodies the bridge must answer with a 400, as they are and as files. */
export const HOSTILE = [
  Buffer.from('{"model":'),
  Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
  Buffer.from('[]'),
  Buffer.from(''),
  Buffer.alloc(64),
  Buffer.from('{"model":"--force","messages":[{"role":"user","content":"hi"}]}'),
  Buffer.from('{"model":"auto","messages":[{"role":"user","content":"hi"}],"tools":"no"}'),
  Buffer.from(`{"model":"auto","messages":${'['.repeat(10_000)}${']'.repeat(10_000)}}`),
  Buffer.from('{"model":"auto","messages":[{"role":"user","content":"\\ud800"}],"n":2}'),
];

export const HOSTILE_CASES = () => HOSTILE.map((body, i) => ({ body, file: file(`hostile-${i}.json`, body) }));

/** Every error class, by its name in the `reply` example and in the package, with its status. */
export const ERROR_KINDS = [
  ['invalid-request', 'invalidRequest', 400],
  ['authentication', 'authentication', 401],
  ['permission-denied', 'permissionDenied', 403],
  ['not-found', 'notFound', 404],
  ['method-not-allowed', 'methodNotAllowed', 405],
  ['request-too-large', 'requestTooLarge', 413],
  ['unsupported-media-type', 'unsupportedMediaType', 415],
  ['rate-limited', 'rateLimited', 429],
  ['internal', 'internal', 500],
  ['agent-failed', 'agentFailed', 502],
  ['unavailable', 'unavailable', 503],
  ['timeout', 'timeout', 504],
  ['usage-limit', 'usageLimit', 429],
];

/** The message of every refusal compared: quotes, a backslash, a newline and non-ASCII text to escape. */
export const REFUSAL_MESSAGE = 'no "key" \\ here\nsend one — héllo 😀';

/** count_tokens bodies: valid ones of every shape, and ones it must refuse. */
export const COUNT_TOKENS_BODIES = () => [
  Buffer.from(DIALECTS.messages),
  readFileSync(clientToolsRequest('messages')),
  readFileSync(clientToolsRequest('chat-completions')),
  Buffer.from('{"model":"claude-sonnet-4-5","messages":[{"role":"robot","content":"x"}]}'),
  Buffer.from('{"model":'),
  Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
  Buffer.from(''),
];
