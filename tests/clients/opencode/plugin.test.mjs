// OpenCode itself with agentwire's plugin, set up as the README says and nothing more: the
// JavaScript package packed (`npm pack`, which builds it), and the README's opencode.json
// lines naming the tarball, in a throwaway HOME. OpenCode installs the plugin from the
// tarball at its first start (npm's installer, offline: the package has no dependencies)
// and loads it; the replay agent (tests/clients/agent.sh) stands in for cursor-agent. Each
// run is OpenCode's `run` command, killed outright if it overruns (it ignores SIGTERM):
//
// - the first run (the install included): a read tool round, OpenCode running its own read
//   tool on the call the agent made, with the title request going to `smallModel`;
// - a plain answer;
// - a model opencode.json names that the agent does not list: offered as such, refused once
//   with the models the agent has;
// - not logged in, and a used-up usage limit: each shown once, saying what to do;
// - cursor-agent missing: shown once with the install hint, within 5 s of the request.
//
// "Once" is read from OpenCode's own log: one `stream` line per request it makes, a retry
// being a second. Each run's time is printed (the first includes the install).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const VERSION = readFileSync(join(ROOT, 'tests/clients/opencode/version'), 'utf8').trim();
const OPENCODE = join(ROOT, 'tests/clients/opencode', VERSION, 'bin/opencode');
const AGENT = join(ROOT, 'tests/clients/agent.sh');
const FIXTURES = join(ROOT, 'tests/fixtures');
const SCENARIO = join(FIXTURES, 'e2e/read_file');
const PROMPT = 'When does the deploy window open? The answer is in notes.txt.';
/** Past this, a run is killed: it hangs or retries. */
const RUN_TIMEOUT_MS = 120_000;
/** OpenCode's start with no catalogue download, update check, sharing, LSP download or foreign prompts. */
const ISOLATION = {
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
  // OpenCode's npm installs (the plugin's tarball, its own @opencode-ai/plugin for each
  // configuration folder) use nothing but what is on disk, and fail at once otherwise.
  npm_config_offline: 'true',
};

const scratch = mkdtempSync(join(tmpdir(), 'agentwire-opencode-'));
const home = join(scratch, 'home');
const project = join(scratch, 'project');
const logs = join(scratch, 'agent-logs');
const tmp = join(scratch, 'tmp');
const times = [];
let tarball;
let documented;

/** The README's opencode.json for the plugin (the JavaScript package's README says the same). */
function readmeConfig(path) {
  const blocks = [...readFileSync(path, 'utf8').matchAll(/^```json\n(.*?)^```$/gms)].map((m) => m[1]);
  const found = blocks.filter((block) => block.includes('"agentwire@file:'));
  assert.equal(found.length, 1, `${path}: one opencode.json block for the plugin`);
  return found[0];
}

before(() => {
  assert.ok(existsSync(OPENCODE), `${OPENCODE} is missing: run tests/clients/install.sh`);
  assert.ok(process.env.AGENTWIRE_REPLAY_AGENT, 'AGENTWIRE_REPLAY_AGENT names the replay agent (tests/clients/run.sh builds it)');
  const block = readmeConfig(join(ROOT, 'README.md'));
  assert.equal(readmeConfig(join(ROOT, 'bindings/js/README.md')), block, 'both READMEs give the same lines');
  documented = JSON.parse(block);
  // As the README says: `npm pack` in bindings/js, which builds the package first.
  const packs = join(scratch, 'packs');
  mkdirSync(packs);
  try {
    execFileSync('npm', ['pack', '--loglevel=error', '--pack-destination', packs], { cwd: join(ROOT, 'bindings/js'), stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    assert.fail(`npm pack failed:\n${error.stdout}\n${error.stderr}`);
  }
  [tarball] = readdirSync(packs).map((name) => join(packs, name));
  assert.match(tarball, /agentwire-\d+\.\d+\.\d+\.tgz$/);
  for (const dir of [project, logs, tmp, join(home, '.config/opencode')]) mkdirSync(dir, { recursive: true });
  copyFileSync(join(SCENARIO, 'notes.txt'), join(project, 'notes.txt'));
});

after(() => {
  console.log(`# OpenCode ${VERSION} with the plugin, each run's time: ${times.map(({ what, ms }) => `${what} ${(ms / 1000).toFixed(1)} s`).join('; ')}`);
  rmSync(scratch, { recursive: true, force: true });
});

/**
 * Writes the README's configuration with the packed tarball's path and the stand-in agent
 * (and, for one run, another model or binary): the documented lines, those values changed.
 */
function configure({ cursorBinary = AGENT, model } = {}) {
  const [[spec, options]] = documented.plugin;
  assert.match(spec, /^agentwire@file:\/.*\/agentwire-\d+\.\d+\.\d+\.tgz$/);
  assert.deepEqual(Object.keys(options).sort(), ['cursorBinary', 'smallModel']);
  const config = {
    ...documented,
    plugin: [[`agentwire@file:${tarball}`, { ...options, cursorBinary, smallModel: 'e2e-text' }]],
    ...(model === undefined ? {} : { model }),
  };
  writeFileSync(join(home, '.config/opencode/opencode.json'), JSON.stringify(config, null, 2));
}

/** `opencode run` in the project, its events (stdout) and its log (stderr). */
async function opencode(what, args) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OPENCODE_') && !key.startsWith('npm_config_')));
  Object.assign(env, ISOLATION, {
    // OpenCode takes its directory from PWD, which a child's cwd does not change.
    PWD: project,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local/share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local/state'),
    // OpenCode (a Bun executable) unpacks native libraries and its own files into TMPDIR:
    // the scratch directory, removed with it.
    TMPDIR: tmp,
    AGENTWIRE_E2E_LOGS: logs,
  });
  const started = performance.now();
  const child = spawn(OPENCODE, ['run', '--print-logs', '--format', 'json', ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const out = [];
  const err = [];
  child.stdout.on('data', (chunk) => out.push(chunk));
  child.stderr.on('data', (chunk) => err.push(chunk));
  const killer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), RUN_TIMEOUT_MS);
  const code = await new Promise((settle) => child.on('close', (exit) => settle(exit)));
  clearTimeout(killer);
  try {
    process.kill(-child.pid, 'SIGKILL'); // whatever it left in its group
  } catch {
    // none
  }
  const ms = performance.now() - started;
  times.push({ what, ms });
  const stdout = Buffer.concat(out).toString();
  const stderr = Buffer.concat(err).toString();
  const events = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
  // One `stream` line per request OpenCode makes: `modelID`, `small`, `agent`, and when.
  const requests = stderr
    .split('\n')
    .filter((line) => / message=stream providerID=/.test(line))
    .map((line) => ({ model: / modelID=(\S+)/.exec(line)[1], agent: / agent=(\S+)/.exec(line)[1], at: Date.parse(/^timestamp=(\S+)/.exec(line)[1]) }));
  return { code, events, requests, stderr, ms, report: `opencode exited with ${code}:\n${stdout}\n${stderr.slice(-4000)}` };
}

/** The agent's runs for `model`, as tests/clients/agent.sh logged them. */
function agentRuns(model) {
  const log = join(logs, `${model}.log`);
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
}

const resultOf = (transcript) =>
  readFileSync(transcript, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"type":"result"'))
    .map((line) => JSON.parse(line).result)[0];
const printed = (events) => events.filter((e) => e.type === 'text').map((e) => e.part.text).join('');
const errors = (events) => events.filter((e) => e.type === 'error').map((e) => e.error);

/** The run failed with one error, whose words match `pattern`, after exactly one request. */
function assertShownOnce(run, pattern) {
  assert.equal(run.code, 1, run.report);
  const shown = errors(run.events);
  assert.equal(shown.length, 1, run.report);
  assert.equal(shown[0].name, 'APIError', run.report);
  assert.equal(shown[0].data.isRetryable, false, run.report);
  assert.match(shown[0].data.message, pattern);
  assert.equal(run.requests.length, 1, `one request, no retry:\n${run.report}`);
}

test('the first run installs the plugin from the tarball: a read tool round, the title from smallModel', { timeout: RUN_TIMEOUT_MS + 10_000 }, async () => {
  configure();
  const run = await opencode('first (install, title, read tool round)', ['-m', 'cursor/e2e-read', PROMPT]);
  assert.equal(run.code, 0, run.report);
  // OpenCode ran its own read tool on the call the agent made.
  const tools = run.events.filter((e) => e.type === 'tool_use').map((e) => e.part);
  assert.deepEqual(tools.map((t) => [t.tool, t.state.status]), [['read', 'completed']], run.report);
  assert.equal(tools[0].state.input.filePath.split('/').pop(), 'notes.txt');
  assert.deepEqual(run.events.filter((e) => e.type === 'step_finish').map((e) => e.part.reason), ['tool-calls', 'stop']);
  assert.ok(printed(run.events).includes(resultOf(join(SCENARIO, 'turn-2.jsonl'))), run.report);
  // The second prompt holds the file's content (every line) as the read's result; the first
  // holds no result (a resumed chat labels it with the call's name and arguments).
  const reads = agentRuns('e2e-read');
  assert.equal(reads.length, 2);
  assert.ok(!reads[0].prompt.includes('tool result for'));
  const result = reads[1].prompt.slice(reads[1].prompt.indexOf('tool result for'));
  assert.match(result, /^tool result for \S+ \(read[ )]/);
  for (const line of readFileSync(join(project, 'notes.txt'), 'utf8').trim().split('\n')) assert.ok(result.includes(line), result);
  // The title request went to smallModel, with no tools.
  assert.deepEqual(
    run.requests.map((r) => [r.agent, r.model]),
    [['title', 'e2e-text'], ['build', 'e2e-read'], ['build', 'e2e-read']],
  );
  const titles = agentRuns('e2e-text');
  assert.equal(titles.length, 1);
  assert.match(titles[0].prompt, /title generator/);
  // OpenCode installed the tarball where it keeps plugins.
  assert.ok(readdirSync(join(home, '.cache/opencode/packages'), { recursive: true }).some((path) => String(path).endsWith('node_modules/agentwire/package.json')));
});

test('a plain answer', { timeout: RUN_TIMEOUT_MS + 10_000 }, async () => {
  configure();
  const before = agentRuns('e2e-text').length;
  const run = await opencode('plain answer', ['--title', 'plain', '-m', 'cursor/e2e-text', 'Say hello.']);
  assert.equal(run.code, 0, run.report);
  assert.equal(printed(run.events), resultOf(join(FIXTURES, 'multibyte.jsonl')));
  assert.deepEqual(run.events.filter((e) => e.type === 'step_finish').map((e) => e.part.reason), ['stop']);
  assert.equal(agentRuns('e2e-text').length, before + 1);
});

test('a model the agent does not list is offered as such, and refused once with the models it has', { timeout: RUN_TIMEOUT_MS + 10_000 }, async () => {
  configure({ model: 'cursor/gpt-9-ultra' });
  const run = await opencode('unknown model', ['--title', 'unknown', 'Say hello.']);
  assertShownOnce(run, /not available to cursor-agent\. Available models: auto, composer-2\.5, gpt-5/);
  assert.equal(run.requests[0].model, 'gpt-9-ultra');
  assert.equal(agentRuns('gpt-9-ultra').length, 1, 'the agent ran once');
});

test('not logged in, and a used-up usage limit: each shown once, saying what to do', { timeout: 2 * RUN_TIMEOUT_MS + 10_000 }, async () => {
  configure();
  for (const [model, pattern] of [
    ['e2e-not-logged-in', /cursor-agent is not logged in\. Run `cursor-agent login`/],
    ['e2e-usage-limit', /usage limit is reached; retrying before it resets will not help/],
  ]) {
    const run = await opencode(model, ['--title', model, '-m', `cursor/${model}`, 'Say hello.']);
    assertShownOnce(run, pattern);
    assert.equal(agentRuns(model).length, 1, `${model}: the agent ran once`);
  }
});

test('cursor-agent missing: shown once with the install hint, within 5 s of the request', { timeout: RUN_TIMEOUT_MS + 10_000 }, async () => {
  configure({ cursorBinary: '/nonexistent/cursor-agent' });
  const run = await opencode('agent missing', ['--title', 'missing', '-m', 'cursor/auto', 'Say hello.']);
  assertShownOnce(run, /Install the Cursor CLI \(`curl https:\/\/cursor\.com\/install -fsS \| bash`\)[\s\S]*`cursorBinary`/);
  const failedAt = run.events.find((e) => e.type === 'error').timestamp;
  const took = failedAt - run.requests[0].at;
  assert.ok(took < 5_000, `the error came ${took} ms after the request`);
  console.log(`# agent missing: the error ${took} ms after the request; the whole run ${(run.ms / 1000).toFixed(1)} s`);
});
