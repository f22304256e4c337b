// Where the tests find the repository's transcripts, the real captures beside it, and the
// Rust programs they compare with.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { files as sharedFiles } from '../../../../tests/support/shared_fixtures.mjs';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
export const PACKAGE = join(ROOT, 'bindings/js');
export const FIXTURES = join(ROOT, 'tests/fixtures');
export const DEFAULT_REQUEST = '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}';
/** Each dialect's smallest streaming request. */
export const DIALECTS = {
  'chat-completions': DEFAULT_REQUEST,
  responses: '{"model":"auto","stream":true,"input":"hi"}',
  messages: '{"model":"auto","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}',
};

const jsonl = (dir) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith('.jsonl'))
        .sort()
        .map((name) => join(dir, name))
    : [];

/** The project's own transcripts. */
export const transcripts = () => jsonl(FIXTURES);
/**
 * The real cursor-agent transcripts (tests/support/shared_fixtures.mjs: none when they are
 * absent, an error when they are required or incomplete).
 */
export const realCaptures = () => sharedFiles('cursor-agent', '.jsonl');
/** The project's own ACP recordings. */
export const acpFixtures = () => jsonl(join(FIXTURES, 'acp'));
/** The real ACP recordings (the same finder: none when absent, an error when required or incomplete). */
export const acpRecordings = () => sharedFiles('acp', '.jsonl');
/** The example requests of a dialect (Chat Completions' at the top of requests/, the others in a folder each). */
export const requests = (dialect = 'chat-completions') => {
  const dir = dialect === 'chat-completions' ? join(FIXTURES, 'requests') : join(FIXTURES, 'requests', dialect);
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => join(dir, name));
};
/** The example request of a dialect that offers client tools (streaming). */
export const clientToolsRequest = (dialect = 'chat-completions') => requests(dialect).find((path) => path.endsWith('/client_tools.json'));
/** The stderr of failed runs. */
export const stderrs = () =>
  readdirSync(join(FIXTURES, 'stderr'))
    .filter((name) => name.endsWith('.txt'))
    .sort()
    .map((name) => join(FIXTURES, 'stderr', name));

/**
 * The executable of a Rust program, built now: `$AGENTWIRE_<NAME>` when set (run-tests.sh
 * builds them once), else the example of that name, else a binary of that name in any
 * workspace member (where the proxies' helpers may live).
 */
export function rustProgram(name) {
  const preset = process.env[`AGENTWIRE_${name.toUpperCase()}`];
  if (preset) return preset;
  for (const selector of [['--example', name], ['--workspace', '--bin', name]]) {
    let out;
    try {
      out = execFileSync('cargo', ['build', '--quiet', '--message-format=json', ...selector], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        maxBuffer: 64 << 20,
      });
    } catch {
      continue;
    }
    for (const line of out.split('\n')) {
      if (!line.startsWith('{')) continue;
      const message = JSON.parse(line);
      if (message.reason === 'compiler-artifact' && message.target?.name === name && message.executable) {
        return message.executable;
      }
    }
  }
  throw new Error(`cargo builds no program named ${name}`);
}
