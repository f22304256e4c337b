// Temporary directories for the tests, removed when the process exits, whether the tests
// passed or failed: on Node's and Bun's `exit` (Node runs each test file in a process of its
// own, Bun all of them in one), on Deno's `unload` (Deno emits no `exit`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = [];
const removeAll = () => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
};
process.on('exit', removeAll);
globalThis.addEventListener?.('unload', removeAll);

/** A fresh directory under the system's temporary directory, named `${prefix}XXXXXX`. */
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
