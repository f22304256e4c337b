// The agent's own tools off (`nativeTools: 'off'`): what launchWithoutNativeTools says to
// add to an agent's launch, and AcpAgent applying it. The scripted agent
// (test/support/acp_mcp_agent.mjs) runs under the names of the agents that need something
// at launch (a link named `gemini`, one named `codex-acp`) and logs the arguments and the
// settings file it was started with; the file's private directory is gone after close().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AgentwireError, launchWithoutNativeTools } from 'agentwire';
import { AcpAgent } from 'agentwire/node';
import { DEFAULT_REQUEST, PACKAGE } from './support/paths.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = join(PACKAGE, 'test/support/acp_mcp_agent.mjs');

/** The scripted agent under `name` (a link in a scratch directory), and its log. */
function agentNamed(name) {
  const dir = scratchDir('agentwire-native-tools-');
  const program = join(dir, name);
  symlinkSync(AGENT, program);
  return { dir, program, log: join(dir, 'agent.jsonl') };
}

/** `env` without the variables that name Gemini CLI's settings files. */
function withoutGeminiSettings(env) {
  delete env.GEMINI_CLI_SYSTEM_DEFAULTS_PATH;
  delete env.GEMINI_CLI_SYSTEM_SETTINGS_PATH;
  return env;
}

const events = (log) =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

async function answer(agent) {
  let head;
  const chunks = [];
  for await (const output of agent.turn(DEFAULT_REQUEST)) {
    if (output.type === 'head') head = output;
    else chunks.push(output.data);
  }
  return { status: head.status, text: Buffer.concat(chunks).toString() };
}

test('launchWithoutNativeTools: codex-acp overrides, a Gemini CLI settings file, unknown agents refused', () => {
  const codex = launchWithoutNativeTools('npx', ['-y', '@zed-industries/codex-acp'], {});
  assert.equal(codex.settings, null);
  assert.ok(codex.args.length > 0 && codex.args.every((arg, i) => (i % 2 === 0 ? arg === '-c' : arg.includes('='))));
  assert.ok(codex.args.includes('features.shell_tool=false'));
  assert.deepEqual(launchWithoutNativeTools('claude-agent-acp', [], {}), { args: [], settings: null });

  const gemini = launchWithoutNativeTools('gemini', ['--acp'], { GEMINI_CLI_SYSTEM_SETTINGS_PATH: '/srv/g/settings.json' });
  assert.deepEqual(gemini.args, []);
  assert.equal(gemini.settings.env, 'GEMINI_CLI_SYSTEM_DEFAULTS_PATH');
  assert.equal(gemini.settings.replaces, '/srv/g/system-defaults.json');
  assert.deepEqual(JSON.parse(gemini.settings.contents(null)), { tools: { core: [] } });
  assert.deepEqual(JSON.parse(gemini.settings.contents('{"ui":{"theme":"dark"},"tools":{"core":["ls"],"exclude":["x"]}}')), {
    ui: { theme: 'dark' },
    tools: { core: [], exclude: ['x'] },
  });
  assert.deepEqual(JSON.parse(gemini.settings.contents(new TextEncoder().encode('{}'))), { tools: { core: [] } });
  assert.throws(() => gemini.settings.contents('[1]'), (e) => e instanceof AgentwireError && e.code === 'invalidInput' && /system-defaults\.json/.test(e.message));
  const named = launchWithoutNativeTools('gemini', ['--experimental-acp'], { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: '/d.json', OTHER: undefined });
  assert.equal(named.settings.replaces, '/d.json');

  for (const [program, args] of [['cursor-agent', ['acp']], ['gemini', []], ['my-agent', ['--acp']]]) {
    assert.throws(() => launchWithoutNativeTools(program, args, {}), (e) => e instanceof AgentwireError && e.code === 'invalidInput' && e.message.includes(program));
  }
  assert.throws(() => launchWithoutNativeTools(1), { code: 'invalidArgument', message: /program/ });
  assert.throws(() => launchWithoutNativeTools('codex-acp', '--acp'), { code: 'invalidArgument', message: /args/ });
  assert.throws(() => launchWithoutNativeTools('codex-acp', [], { A: 1 }), { code: 'invalidArgument', message: /env\.A/ });
});

test("AcpAgent with nativeTools 'off' starts Gemini CLI with its settings file, merged over the one it replaces, and removes it on close", { timeout: 30_000 }, async () => {
  const { dir, program, log } = agentNamed('gemini');
  const replaced = join(dir, 'system-defaults.json');
  const userSettings = '{"ui":{"theme":"dark"},"tools":{"core":["ls"]}}';
  writeFileSync(replaced, userSettings);
  const agent = new AcpAgent({
    command: 'node',
    args: [program, '--acp'],
    env: { ...process.env, ACP_MCP_AGENT_LOG: log, GEMINI_CLI_SYSTEM_DEFAULTS_PATH: replaced },
    nativeTools: 'off',
    conversations: false,
    killGraceMs: 500,
  });
  const { status, text } = await answer(agent);
  assert.equal(status, 200);
  assert.match(text, /Hello\./);
  const start = events(log).find((e) => e.event === 'start');
  assert.deepEqual(start.args, ['--acp']);
  const written = start.settings.path;
  assert.notEqual(written, replaced);
  assert.ok(written.startsWith(join(tmpdir(), 'agentwire-acp-')), written);
  assert.deepEqual(JSON.parse(start.settings.contents), { ui: { theme: 'dark' }, tools: { core: [] } });
  assert.equal(readFileSync(replaced, 'utf8'), userSettings, 'the replaced file is never written');
  // The connection turns them off per session too (for the agents that take that).
  const session = events(log).find((e) => e.event === 'session');
  assert.deepEqual(session.meta?.claudeCode?.options?.tools, []);
  assert.ok(existsSync(written));
  await agent.close();
  assert.equal(existsSync(dirname(written)), false, 'the settings directory is removed by close()');
});

test("AcpAgent with nativeTools 'off' appends codex-acp's overrides and writes no file", { timeout: 30_000 }, async () => {
  const { program, log } = agentNamed('codex-acp');
  const agent = new AcpAgent({
    command: 'node',
    args: [program, '--flag'],
    env: withoutGeminiSettings({ ...process.env, ACP_MCP_AGENT_LOG: log }),
    config: { nativeTools: 'off' },
    conversations: false,
    killGraceMs: 500,
  });
  assert.equal((await answer(agent)).status, 200);
  const start = events(log).find((e) => e.event === 'start');
  const expected = launchWithoutNativeTools('codex-acp', [], {}).args;
  assert.deepEqual(start.args, ['--flag', ...expected]);
  assert.equal(start.settings, undefined);
  await agent.close();
});

test("AcpAgent refuses nativeTools 'off' for an agent it cannot apply it to, and settings it cannot keep", async () => {
  assert.throws(
    () => new AcpAgent({ command: 'cursor-agent', args: ['acp'], nativeTools: 'off' }),
    (e) => e instanceof AgentwireError && e.code === 'invalidInput' && /nativeTools 'off'/.test(e.message) && /cursor-agent/.test(e.message),
  );
  assert.throws(() => new AcpAgent({ command: 'cursor-agent', args: ['acp'], config: { nativeTools: 'off' } }), { code: 'invalidInput', message: /cursor-agent/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', nativeTools: 'none' }), { code: 'invalidArgument', message: /nativeTools/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', config: { nativeTools: 'none' } }), { code: 'invalidArgument', message: /nativeTools/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', nativeTools: 'off', config: { nativeTools: 'keep' } }), { code: 'invalidArgument', message: /disagree/ });
  const dir = scratchDir('agentwire-native-tools-');
  const replaced = join(dir, 'defaults.json');
  writeFileSync(replaced, '[1]');
  assert.throws(
    () => new AcpAgent({ command: 'gemini', args: ['--acp'], env: { GEMINI_CLI_SYSTEM_DEFAULTS_PATH: replaced }, nativeTools: 'off' }),
    (e) => e.code === 'invalidInput' && e.message.includes(replaced),
  );
  // Keeping them needs nothing of the agent: cursor-agent is fine.
  await new AcpAgent({ command: 'cursor-agent', args: ['acp'], nativeTools: 'keep' }).close();
});
