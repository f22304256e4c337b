// The finder of the real captures (tests/support/shared_fixtures.mjs) in each case it
// decides, on temporary directories named by AGENTWIRE_SHARED_DIR: present, present with a
// file missing, absent (skipped), absent where CI requires it (a failure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIR_VAR, REQUIRE_VAR, files, skipReason } from '../../../tests/support/shared_fixtures.mjs';

function withTemp(body) {
  const dir = mkdtempSync(join(tmpdir(), 'agentwire-shared-'));
  try {
    body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('present: the files, whatever CI says', () =>
  withTemp((dir) => {
    const agent = join(dir, 'fixtures', 'cursor-agent');
    mkdirSync(agent, { recursive: true });
    writeFileSync(join(agent, 'b.jsonl'), '{}\n');
    writeFileSync(join(agent, 'a.jsonl'), '{}\n');
    for (const env of [{ [DIR_VAR]: dir }, { [DIR_VAR]: dir, CI: 'true' }]) {
      assert.deepEqual(files('cursor-agent', '.jsonl', env), [join(agent, 'a.jsonl'), join(agent, 'b.jsonl')]);
      assert.equal(skipReason(env), false);
    }
  }));

test('present with the files missing: an error', () =>
  withTemp((dir) => {
    mkdirSync(join(dir, 'fixtures', 'cursor-agent'), { recursive: true });
    const env = { [DIR_VAR]: dir };
    assert.throws(() => files('cursor-agent', '.jsonl', env), /no \*\.jsonl/);
    assert.throws(() => files('opencode', '.jsonl', env), /opencode: missing/);
  }));

test('absent: skipped', () =>
  withTemp((dir) => {
    for (const extra of [{}, { CI: 'false' }, { [REQUIRE_VAR]: '0' }]) {
      const env = { [DIR_VAR]: join(dir, 'nothing-here'), ...extra };
      assert.deepEqual(files('cursor-agent', '.jsonl', env), []);
      assert.match(skipReason(env), /absent/);
    }
  }));

test('absent under CI or the requirement: an error', () =>
  withTemp((dir) => {
    for (const extra of [{ CI: 'true' }, { CI: 'TRUE' }, { [REQUIRE_VAR]: '1' }]) {
      const env = { [DIR_VAR]: join(dir, 'nothing-here'), ...extra };
      assert.throws(() => files('cursor-agent', '.jsonl', env), new RegExp(REQUIRE_VAR));
      assert.throws(() => skipReason(env), /absent/);
    }
  }));
