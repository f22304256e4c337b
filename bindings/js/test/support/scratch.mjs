// Temporary directories for the tests, removed when the process exits, whether the tests
// passed or failed (Node runs each test file in a process of its own, Bun all of them in
// one; Deno emits the same exit event).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = [];
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the system's temporary directory, named `${prefix}XXXXXX`. */
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
