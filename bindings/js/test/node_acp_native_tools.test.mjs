// The agent's own tools off (`nativeTools: 'off'`): what launchWithoutNativeTools says to
// add to an agent's launch, and AcpAgent applying it. The scripted agent
// (test/support/acp_mcp_agent.mjs) runs under the names of the agents that need something
// at launch (a link named `gemini`, one named `codex-acp`) and logs the arguments and the
// policy files it was started with; the file's private directory is gone after close().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, symlinkSync } from 'node:fs';
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

test('launchWithoutNativeTools: codex-acp overrides, a Gemini CLI policy file, unknown agents refused', () => {
  const codex = launchWithoutNativeTools('npx', ['-y', '@zed-industries/codex-acp'], {});
  assert.equal(codex.file, null);
  assert.ok(codex.args.length > 0 && codex.args.every((arg, i) => (i % 2 === 0 ? arg === '-c' : arg.includes('='))));
  assert.ok(codex.args.includes('features.shell_tool=false'));
  assert.deepEqual(launchWithoutNativeTools('claude-agent-acp', [], {}), { args: [], file: null });

  const gemini = launchWithoutNativeTools('gemini', ['--acp'], { HOME: '/home/u', OTHER: undefined });
  assert.deepEqual(gemini.args, []);
  assert.equal(gemini.file.name, 'agentwire-native-tools-off.toml');
  assert.equal(gemini.file.flag, '--policy');
  assert.match(gemini.file.contents, /toolName = "\*"\ndecision = "deny"/);
  assert.match(gemini.file.contents, /mcpName = "\*"\ndecision = "ask_user"/);
  assert.deepEqual(gemini.file.after, ['--policy', '/home/u/.gemini/policies']);
  const moved = launchWithoutNativeTools('gemini', ['--experimental-acp'], { HOME: '/home/u', GEMINI_CLI_HOME: '/srv/g' });
  assert.deepEqual(moved.file.after, ['--policy', '/srv/g/.gemini/policies']);
  assert.deepEqual(launchWithoutNativeTools('gemini', ['--acp', '--policy', '/etc/p.toml'], { HOME: '/h' }).file.after, []);
  assert.deepEqual(launchWithoutNativeTools('gemini', ['--acp'], {}).file.after, []);

  for (const [program, args] of [['cursor-agent', ['acp']], ['gemini', []], ['my-agent', ['--acp']]]) {
    assert.throws(() => launchWithoutNativeTools(program, args, {}), (e) => e instanceof AgentwireError && e.code === 'invalidInput' && e.message.includes(program));
  }
  assert.throws(() => launchWithoutNativeTools(1), { code: 'invalidArgument', message: /program/ });
  assert.throws(() => launchWithoutNativeTools('codex-acp', '--acp'), { code: 'invalidArgument', message: /args/ });
  assert.throws(() => launchWithoutNativeTools('codex-acp', [], { A: 1 }), { code: 'invalidArgument', message: /env\.A/ });
});

test("AcpAgent with nativeTools 'off' starts Gemini CLI with its policy file, then the user's policies, and removes the file on close", { timeout: 30_000 }, async () => {
  const { dir, program, log } = agentNamed('gemini');
  const home = join(dir, 'home');
  const agent = new AcpAgent({
    command: 'node',
    args: [program, '--acp'],
    env: { ...process.env, ACP_MCP_AGENT_LOG: log, HOME: home, GEMINI_CLI_HOME: undefined },
    nativeTools: 'off',
    conversations: false,
    killGraceMs: 500,
  });
  const { status, text } = await answer(agent);
  assert.equal(status, 200);
  assert.match(text, /Hello\./);
  const start = events(log).find((e) => e.event === 'start');
  const written = start.args[2];
  assert.deepEqual(start.args, ['--acp', '--policy', written, '--policy', join(home, '.gemini', 'policies')]);
  assert.ok(written.startsWith(join(tmpdir(), 'agentwire-acp-')), written);
  assert.equal(written.endsWith('.toml'), true, written);
  const policy = start.policies[0];
  assert.equal(policy.path, written);
  assert.match(policy.contents, /toolName = "\*"\ndecision = "deny"/);
  assert.match(policy.contents, /mcpName = "\*"\ndecision = "ask_user"/);
  assert.equal(statSync(written).mode & 0o777, 0o600);
  // The connection turns them off per session too (for the agents that take that).
  const session = events(log).find((e) => e.event === 'session');
  assert.deepEqual(session.meta?.claudeCode?.options?.tools, []);
  await agent.close();
  assert.equal(existsSync(dirname(written)), false, "the file's directory is removed by close()");
});

test("AcpAgent with nativeTools 'off' appends codex-acp's overrides and writes no file", { timeout: 30_000 }, async () => {
  const { program, log } = agentNamed('codex-acp');
  const agent = new AcpAgent({
    command: 'node',
    args: [program, '--flag'],
    env: { ...process.env, ACP_MCP_AGENT_LOG: log },
    config: { nativeTools: 'off' },
    conversations: false,
    killGraceMs: 500,
  });
  assert.equal((await answer(agent)).status, 200);
  const start = events(log).find((e) => e.event === 'start');
  const expected = launchWithoutNativeTools('codex-acp', [], {}).args;
  assert.deepEqual(start.args, ['--flag', ...expected]);
  assert.deepEqual(start.policies, []);
  await agent.close();
});

test("AcpAgent refuses nativeTools 'off' for an agent it cannot apply it to", async () => {
  assert.throws(
    () => new AcpAgent({ command: 'cursor-agent', args: ['acp'], nativeTools: 'off' }),
    (e) => e instanceof AgentwireError && e.code === 'invalidInput' && /nativeTools 'off'/.test(e.message) && /cursor-agent/.test(e.message),
  );
  assert.throws(() => new AcpAgent({ command: 'cursor-agent', args: ['acp'], config: { nativeTools: 'off' } }), { code: 'invalidInput', message: /cursor-agent/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', nativeTools: 'none' }), { code: 'invalidArgument', message: /nativeTools/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', config: { nativeTools: 'none' } }), { code: 'invalidArgument', message: /nativeTools/ });
  assert.throws(() => new AcpAgent({ command: 'codex-acp', nativeTools: 'off', config: { nativeTools: 'keep' } }), { code: 'invalidArgument', message: /disagree/ });
  // Keeping them needs nothing of the agent: cursor-agent is fine.
  await new AcpAgent({ command: 'cursor-agent', args: ['acp'], nativeTools: 'keep' }).close();
});
