// The OpenCode plugin (`agentwire/opencode`), its hooks driven as OpenCode drives them, with
// the stand-in cursor-agent and the stand-in ACP agent: the provider it adds (the agent's
// models, with names and limits, kept in a cache file; models opencode.json names beside
// them), the small model for titles, requests answered through the AI SDK's
// openai-compatible provider (what OpenCode runs), each permanent failure tried once with
// words that say what to do, mistakes in the options named, a warm ACP agent given no
// client tools and stopped by `dispose`, the demo, and a copy never built saying so.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, jsonSchema, stepCountIs, tool } from 'ai';
import plugin from 'agentwire/opencode';
import { FIXTURES, PACKAGE, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'agentwire-js-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
// The model lists are cached under $XDG_CACHE_HOME/agentwire.
process.env.XDG_CACHE_HOME = join(scratch, 'cache');
process.env.AGENTWIRE_REPLAY_AGENT = rustProgram('replay_agent');

/** A cursor-agent that logs each `models` listing to `log`, then plays the end-to-end agent. */
function countingAgent(name) {
  const path = join(scratch, name);
  const log = `${path}.log`;
  writeFileSync(path, `#!/bin/sh\n[ "$1" = models ] && echo listed >> '${log}'\nexec '${join(PACKAGE, 'test/support/agent.sh')}' "$@"\n`, { mode: 0o755 });
  const listings = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0);
  return { path, listings };
}

/** The plugin as OpenCode loads it: `server(input, options)`, then the `config` hook on `config`. */
async function load(options, config = {}) {
  const hooks = await plugin.server({ directory: scratch }, options);
  await hooks.config(config);
  return { hooks, config, provider: config.provider[options?.provider ?? 'cursor'] };
}

/** The AI SDK provider OpenCode would build from the plugin's provider entry. */
function sdk(provider, count = { attempts: 0 }) {
  const fetch = async (input, init) => {
    count.attempts += 1;
    return provider.options.fetch(input, init);
  };
  return createOpenAICompatible({ name: 'cursor', baseURL: provider.options.baseURL, fetch });
}

/** Asserts that `promise` fails once with an API error whose message matches `pattern`. */
async function assertFailsOnce(promise, count, pattern) {
  await assert.rejects(promise, (error) => {
    const cause = APICallError.isInstance(error) ? error : error.lastError;
    assert.ok(APICallError.isInstance(cause), String(error));
    assert.equal(cause.isRetryable, false);
    assert.ok(cause.statusCode < 500 && cause.statusCode !== 429, `${cause.statusCode}`);
    assert.match(cause.message, pattern);
    return true;
  });
  assert.equal(count.attempts, 1, 'one attempt');
}

test('the provider offers the agent’s models with names and limits, and answers', async () => {
  const agent = countingAgent('listing-agent');
  const { provider } = await load({ cursorBinary: agent.path, limit: { output: 8000 } }, { model: 'cursor/e2e-text' });
  assert.equal(provider.npm, '@ai-sdk/openai-compatible');
  assert.equal(provider.name, 'Cursor (agentwire)');
  assert.equal(typeof provider.options.fetch, 'function');
  const ids = Object.keys(provider.models);
  assert.deepEqual(ids.slice(0, 3), ['auto', 'e2e-text', 'e2e-tools']);
  assert.deepEqual(provider.models['e2e-read'], {
    name: 'Replay: read a file, then answer from it',
    tool_call: true,
    reasoning: true,
    limit: { context: 200_000, output: 8000 },
  });
  assert.equal(agent.listings(), 1);
  const { text } = await generateText({ model: sdk(provider)('e2e-text'), prompt: 'hi' });
  assert.match(text, /Café/);
});

test('the list is cached: a second start lists nothing; modelsCacheSeconds 0 lists again', async () => {
  const agent = countingAgent('cached-agent');
  await load({ cursorBinary: agent.path });
  const { provider } = await load({ cursorBinary: agent.path });
  assert.equal(agent.listings(), 1, 'the second start used the cache');
  assert.ok('e2e-read' in provider.models);
  assert.ok(readdirSync(join(scratch, 'cache/agentwire')).some((name) => name.startsWith('opencode-models-')));
  await load({ cursorBinary: agent.path, modelsCacheSeconds: 0 });
  assert.equal(agent.listings(), 2);
});

test('a model opencode.json names that the agent does not list is offered as such, and refused once with the agent’s list', async () => {
  const agent = countingAgent('naming-agent');
  const { provider } = await load({ cursorBinary: agent.path }, { model: 'cursor/gpt-9-ultra', agent: { plan: { model: 'cursor/e2e-read' } } });
  assert.equal(provider.models['gpt-9-ultra'].name, `gpt-9-ultra (not listed by ${agent.path})`);
  const count = { attempts: 0 };
  await assertFailsOnce(generateText({ model: sdk(provider, count)('gpt-9-ultra'), prompt: 'hi' }), count, /not available to cursor-agent\. Available models: auto, composer-2\.5/);
});

test('a missing agent: the provider is there all the same, and a request fails once with the install hint', async () => {
  const { provider } = await load({ cursorBinary: '/nonexistent/cursor-agent' }, { model: 'cursor/gpt-5' });
  assert.deepEqual(Object.keys(provider.models), ['auto', 'gpt-5']);
  const count = { attempts: 0 };
  const started = performance.now();
  await assertFailsOnce(generateText({ model: sdk(provider, count)('gpt-5'), prompt: 'hi' }), count, /curl https:\/\/cursor\.com\/install -fsS \| bash[\s\S]*cursorBinary/);
  assert.ok(performance.now() - started < 5_000);
});

test('not logged in and a used-up usage limit each fail once, saying what to do', async () => {
  const { provider } = await load({ cursorBinary: join(PACKAGE, 'test/support/agent.sh'), modelsCacheSeconds: 0 });
  for (const [model, pattern] of [
    ['e2e-not-logged-in', /cursor-agent login/],
    ['e2e-usage-limit', /usage limit is reached/],
  ]) {
    const count = { attempts: 0 };
    await assertFailsOnce(generateText({ model: sdk(provider, count)(model), prompt: 'hi' }), count, pattern);
  }
});

test('smallModel names the model of OpenCode’s title and summary requests', async () => {
  const { hooks, provider } = await load({ cursorBinary: join(PACKAGE, 'test/support/agent.sh'), smallModel: 'e2e-text' });
  const output = {};
  await hooks['experimental.provider.small_model']({ provider: { id: 'cursor', models: provider.models } }, output);
  assert.equal(output.model, provider.models['e2e-text']);
  const other = {};
  await hooks['experimental.provider.small_model']({ provider: { id: 'openai', models: provider.models } }, other);
  assert.equal(other.model, undefined, 'another provider’s small model is not ours to choose');
});

test('the models option offers exactly those, with their names and limits, and lists nothing', async () => {
  const agent = countingAgent('configured-agent');
  const { provider } = await load({
    provider: 'agentwire',
    cursorBinary: agent.path,
    models: { 'e2e-text': { name: 'Text', limit: { context: 1000 } }, 'e2e-read': {} },
  });
  assert.deepEqual(Object.keys(provider.models), ['e2e-text', 'e2e-read']);
  assert.deepEqual(provider.models['e2e-text'].limit, { context: 1000, output: 32_000 });
  assert.equal(provider.models['e2e-read'].name, 'e2e-read');
  assert.equal(agent.listings(), 0);
});

test('mistakes in the options are named in the answer to every request, which is tried once', async () => {
  const { provider } = await load({ protocol: 'websocket', cursorBinnary: 'x', limit: { context: -1 } });
  assert.ok('auto' in provider.models, 'the provider is added all the same');
  const count = { attempts: 0 };
  await assertFailsOnce(generateText({ model: sdk(provider, count)('auto'), prompt: 'hi' }), count, /unknown option `cursorBinnary`[\s\S]*`protocol` must be "stream-json" or "acp", not "websocket"[\s\S]*`limit.context` must be a positive whole number of tokens, not -1/);
});

test('protocol acp without conversations: the ACP agent’s models, no client tools sent to it, and dispose stops it', { timeout: 30_000 }, async () => {
  const recording = join(FIXTURES, 'acp/synthetic__interleaved-sessions.jsonl');
  const command = [rustProgram('acp_agent'), '--recording', recording, '--models', 'default,fast'];
  const log = join(scratch, 'acp.jsonl');
  // The agent is started with OpenCode's environment: this one logs where it runs.
  process.env.AGENTWIRE_REPLAY_LOG = log;
  let loaded;
  try {
    loaded = await load({ protocol: 'acp', acpCommand: command, modelsCacheSeconds: 0, conversations: false });
  } finally {
    delete process.env.AGENTWIRE_REPLAY_LOG;
  }
  const { hooks, provider } = loaded;
  assert.deepEqual(Object.keys(provider.models), ['default', 'fast']);
  assert.equal(provider.models.default.tool_call, false, 'the agent runs its own tools');
  // OpenCode sends its tools with every request; the agent would refuse them.
  const tools = { read: tool({ description: 'Read a file', inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } } }) }) };
  const { text } = await generateText({ model: sdk(provider)('default'), prompt: 'What does notes.txt say?', tools });
  assert.match(text, /Alpha|Beta/);
  const starts = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)).filter((event) => event.event === 'start');
  assert.equal(starts.length, 1, 'one warm agent listed the models and answered');
  await hooks.dispose();
  assert.ok(await waitUntil(() => aliveIn(starts[0].pid).length === 0 && zombies().length === 0, 5_000), 'stopped and reaped');
});

test('protocol acp with conversations: OpenCode’s tools reach the agent over MCP, and the tool loop stays on one session', { timeout: 60_000 }, async () => {
  const command = ['node', join(PACKAGE, 'test/support/acp_mcp_agent.mjs'), '--tool-rounds', '2'];
  const log = join(scratch, 'acp-mcp.jsonl');
  process.env.ACP_MCP_AGENT_LOG = log;
  let loaded;
  try {
    loaded = await load({ protocol: 'acp', acpCommand: command, modelsCacheSeconds: 0 });
  } finally {
    delete process.env.ACP_MCP_AGENT_LOG;
  }
  const { hooks, provider } = loaded;
  try {
    assert.ok(Object.values(provider.models).every((model) => model.tool_call), 'tools are offered');
    const ran = [];
    const bash = tool({
      description: 'Run a shell command.',
      inputSchema: jsonSchema({ type: 'object', properties: { command: { type: 'string' } }, required: ['command'] }),
      execute: async ({ command: line }) => {
        ran.push(line);
        return `${line.replace('echo ', '')} (exit 0)`;
      },
    });
    const { text } = await generateText({ model: sdk(provider)('auto'), prompt: 'Run the loop.', tools: { bash }, stopWhen: stepCountIs(5) });
    assert.equal(text, 'Done after 2 tool rounds.');
    assert.deepEqual(ran, ['echo round-0', 'echo round-1'], 'OpenCode ran the tools the agent called');
    const events = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    assert.equal(events.filter((e) => e.event === 'session' && e.url !== undefined).length, 1, 'one session with the tools for the whole loop');
    assert.equal(events.filter((e) => e.event === 'prompt').length, 1, 'the results went back as MCP answers');
    const results = events.filter((e) => e.event === 'result').map((e) => e.text);
    assert.equal(results.length, 2);
    assert.match(results[0], /round-0 \(exit 0\)/);
  } finally {
    await hooks.dispose();
  }
});

test('protocol acp with nativeTools off: the agent is started without its own tools; an agent with no known way is refused', { timeout: 30_000 }, async () => {
  // The scripted agent under codex-acp's name, which logs the arguments it was started with.
  const program = join(scratch, 'codex-acp');
  symlinkSync(join(PACKAGE, 'test/support/acp_mcp_agent.mjs'), program);
  const log = join(scratch, 'acp-native-tools.jsonl');
  process.env.ACP_MCP_AGENT_LOG = log;
  let loaded;
  try {
    loaded = await load({ protocol: 'acp', acpCommand: ['node', program], nativeTools: 'off', modelsCacheSeconds: 0 });
  } finally {
    delete process.env.ACP_MCP_AGENT_LOG;
  }
  try {
    const start = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)).find((event) => event.event === 'start');
    assert.ok(start.args.includes('features.shell_tool=false'), JSON.stringify(start.args));
  } finally {
    await loaded.hooks.dispose();
  }

  const refused = await load({ protocol: 'acp', acpCommand: ['cursor-agent', 'acp'], nativeTools: 'off' });
  const count = { attempts: 0 };
  await assertFailsOnce(generateText({ model: sdk(refused.provider, count)('auto'), prompt: 'hi' }), count, /option `nativeTools`: nativeTools 'off': cannot turn off the own tools of `cursor-agent`/);
  const misplaced = await load({ nativeTools: 'none' });
  const tried = { attempts: 0 };
  await assertFailsOnce(generateText({ model: sdk(misplaced.provider, tried)('auto'), prompt: 'hi' }), tried, /`nativeTools` must be "keep" or "off", not "none"/);
});

test('protocol acp with the agent missing: the request fails once with the install hint', { timeout: 30_000 }, async () => {
  const { hooks, provider } = await load({ protocol: 'acp', acpCommand: ['/nonexistent/acp-agent', '--acp'], modelsCacheSeconds: 0 }, { model: 'cursor/default' });
  try {
    assert.deepEqual(Object.keys(provider.models), ['auto', 'default']);
    const count = { attempts: 0 };
    await assertFailsOnce(generateText({ model: sdk(provider, count)('default'), prompt: 'hi' }), count, /ACP agent could not be started[\s\S]*curl https:\/\/cursor\.com\/install -fsS \| bash/);
  } finally {
    await hooks.dispose();
  }
});

test('demo: the demo’s models and its answer, with no agent installed', async () => {
  const { provider } = await load({ demo: true, cursorBinary: '/nonexistent/cursor-agent' });
  assert.deepEqual(Object.keys(provider.models), ['auto', 'demo']);
  const { text } = await generateText({ model: sdk(provider)('demo'), prompt: 'Hello!' });
  assert.match(text, /^Hello! This answer comes from agentwire's demo/);
});

test('the module is what OpenCode loads: a default { id, server }, under agentwire/server too', async () => {
  const server = await import('agentwire/server');
  assert.equal(server.default, plugin);
  assert.equal(plugin.id, 'agentwire');
  assert.equal(typeof plugin.server, 'function');
});

test('a copy that was never built says so when OpenCode loads it, and how to build it', async () => {
  const folder = join(scratch, 'unbuilt');
  mkdirSync(folder);
  copyFileSync(join(PACKAGE, 'opencode.js'), join(folder, 'opencode.js'));
  writeFileSync(join(folder, 'package.json'), '{"type":"module"}');
  await assert.rejects(import(pathToFileURL(join(folder, 'opencode.js')).href), /agentwire is not built in .*unbuilt.*`npm run build`[\s\S]*npm pack/);
});
