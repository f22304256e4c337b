// Inputs several test files share, written once to files the Rust examples can read.
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REQUEST } from './paths.mjs';

const DIR = join(tmpdir(), `agentwire-js-cases-${process.env.AGENTWIRE_JS_RUN ?? process.pid}`);

function file(name, content) {
  mkdirSync(DIR, { recursive: true });
  const path = join(DIR, name);
  writeFileSync(path, content);
  return path;
}

/** The default request of the `translate` example, as a file. */
export const defaultRequestFile = () => file('default.json', DEFAULT_REQUEST);

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
