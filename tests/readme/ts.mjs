// The READMEs' TypeScript blocks, compiled with `tsc --strict` against the package's
// declarations and run under Node, each as written between a prelude that gives it the
// names it takes for granted (a request `body`, a response `res`, …) and an epilogue that
// checks what it did. `cursor-agent`, `gemini` and `claude-agent-acp` are stand-ins on
// PATH: the replay agent playing a transcript, the ACP stand-in playing a recording, the
// scripted ACP agent that calls the client's tools over MCP. Every block needs a setup
// below and every setup a block: a new snippet gets one, a changed one keeps its match.
//
//   node tests/readme/ts.mjs      (bindings/js/run-tests.sh runs it, the package built)
//
// The blocks come from tests/readme/snippets.py (`json ts`), which also makes sure that
// every block of every Markdown file runs somewhere.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capture } from '../support/expected_answers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const JS = join(ROOT, 'bindings/js');
const TRANSCRIPT = join(ROOT, 'tests/fixtures/multibyte.jsonl');
const RECORDING = join(ROOT, 'tests/fixtures/acp/synthetic__interleaved-sessions.jsonl');
const ANSWER = capture(TRANSCRIPT).expected;
const DEADLINE_MS = 60_000;

const CHAT = '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}';
const MESSAGES = '{"model":"auto","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}';

// Preludes' parts. Names of the prelude's own start with `readme` to stay out of the
// snippets' way.
const ASSERT = "import readmeAssert from 'node:assert/strict';";
/** A response the snippet writes to, as node:http's ServerResponse takes it. */
const RES = `
const readmeSent: { status?: number; headers?: Record<string, string>; chunks: Uint8Array[]; ended: boolean } = { chunks: [], ended: false };
const res = {
  writeHead(status: number, headers: Record<string, string>) { readmeSent.status = status; readmeSent.headers = headers; },
  write(data: Uint8Array) { readmeSent.chunks.push(data); },
  end() { readmeSent.ended = true; },
};
const readmeText = () => Buffer.concat(readmeSent.chunks).toString();`;
const ANSWERED = `readmeAssert.equal(readmeSent.status, 200);
readmeAssert.ok(readmeSent.ended);`;

/** Setups: `match` is text only that block holds; `prelude` and `epilogue` are TypeScript. */
const SETUPS = [
  {
    name: 'the AI SDK with createAgentFetch (README.md)',
    match: "prompt: 'Hello!'",
    prelude: ASSERT,
    epilogue: `readmeAssert.equal(await result.text, ${JSON.stringify(ANSWER)});`,
  },
  {
    name: 'createAgentFetch streaming to stdout (bindings/js/README.md)',
    match: 'What does this project do?',
    prelude: '',
    epilogue: '',
    stdout: ANSWER,
  },
  {
    name: 'the Anthropic and OpenAI providers on one fetch (bindings/js/README.md)',
    match: 'createAnthropic',
    // The Anthropic and OpenAI providers of the test project are those of AI SDK 7.
    prelude: `${ASSERT}
import { createAgentFetch } from 'agentwire/node';
import { streamText } from 'ai7';`,
    epilogue: `
readmeAssert.equal(await streamText({ model: claude('auto'), prompt: 'Hello' }).text, ${JSON.stringify(ANSWER)});
readmeAssert.equal(await streamText({ model: openai('auto'), prompt: 'Hello' }).text, ${JSON.stringify(ANSWER)});`,
  },
  {
    name: 'AgentRun for a server of your own (bindings/js/README.md)',
    match: "new AgentRun(body, { dialect: 'messages'",
    prelude: `${ASSERT}
import { AgentRun } from 'agentwire/node';
const body = ${JSON.stringify(MESSAGES)};
const config = {};
const signal = new AbortController().signal;
${RES}`,
    epilogue: `${ANSWERED}
readmeAssert.match(readmeText(), /event: message_stop\\n/);`,
  },
  {
    name: 'the Bridge loop (bindings/js/README.md)',
    match: "new Bridge(body, { dialect: 'messages'",
    prelude: `${ASSERT}
import { readFileSync } from 'node:fs';
import type { BridgeOutput } from 'agentwire';
const body = ${JSON.stringify(MESSAGES)};
const workspace = process.cwd();
const chunk = new Uint8Array(readFileSync(${JSON.stringify(TRANSCRIPT)}));
const readmeOutputs: BridgeOutput[] = [];
const send = (output: BridgeOutput) => readmeOutputs.push(output);`,
    epilogue: `
readmeAssert.deepEqual(inv?.argv[0], 'cursor-agent');
readmeAssert.deepEqual(readmeOutputs[0], { type: 'head', status: 200, contentType: 'text/event-stream' });
readmeAssert.deepEqual(readmeOutputs.at(-1), { type: 'end' });
readmeAssert.equal(deadline, undefined);`,
  },
  {
    name: 'replies without an agent (bindings/js/README.md)',
    match: 'countTokens(body',
    prelude: `${ASSERT}
const body = ${JSON.stringify(MESSAGES)};
const config = {};`,
    epilogue: `
readmeAssert.equal(counted.status, 404);
readmeAssert.equal(refusal.status, 401);`,
  },
  {
    name: 'the AcpConnection loop (bindings/js/README.md)',
    match: 'new AcpConnection(',
    prelude: `${ASSERT}
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { BridgeOutput } from 'agentwire';
const body = ${JSON.stringify(MESSAGES)};
const readmeDecisions: string[] = [];
const restart = (reason: string) => readmeDecisions.push(reason);
const send = (turn: number, output: BridgeOutput) => { throw new Error(\`turn \${turn} has output \${output.type} before the agent answered\`); };`,
    epilogue: `
readmeAssert.equal(typeof turn, 'number');
readmeAssert.deepEqual(readmeDecisions, []);
readmeAssert.equal(typeof deadline, 'number');
// The initialize request went to the agent; its stdin closed, the stand-in exits.
agent.stdin.end();
readmeAssert.deepEqual(await once(agent, 'exit'), [0, null]);`,
  },
  {
    name: 'AgentRun with conversations (bindings/js/README.md)',
    match: 'new Conversations(',
    prelude: `${ASSERT}
import type { Body, Head } from 'agentwire';
const body = ${JSON.stringify(CHAT)};
const config = {};
const headers = new Headers({ 'x-claude-code-session-id': 'readme-session' });
const apiKey = 'readme-key';
const readmeOutputs: (Head | Body)[] = [];
const send = (output: Head | Body) => readmeOutputs.push(output);`,
    epilogue: `
readmeAssert.deepEqual(readmeOutputs[0], { type: 'head', status: 200, contentType: 'text/event-stream' });
readmeAssert.equal(conversations.stats.fresh.noSession, 1);
readmeAssert.equal(conversations.registry.parked, 1, 'the chat the answer ran in is parked');
conversations.close();`,
  },
  {
    name: 'the Registry with Bridge.inConversation (bindings/js/README.md)',
    match: 'Bridge.inConversation(',
    prelude: `${ASSERT}
const body = ${JSON.stringify(MESSAGES)};
const apiKey = 'readme-key';
const clientSession = 'readme-session';
const readmeForgotten: string[] = [];
const forget = (chat: string) => readmeForgotten.push(chat);`,
    epilogue: `
readmeAssert.ok(resuming.invocation !== undefined && !resuming.invocation.args.includes('--resume'), 'a new conversation runs fresh');
readmeAssert.equal(registry.stats.fresh.noSession, 1);
readmeAssert.deepEqual([registry.parked, registry.busy], [0, 0], 'a response that did not end parks nothing');
readmeAssert.equal(expiry, undefined);`,
  },
  {
    name: 'AcpAgent serving requests with tools (bindings/js/README.md)',
    match: "command: 'claude-agent-acp'",
    prelude: `${ASSERT}
import { AcpAgent, createAgentFetch } from 'agentwire/node';`,
    epilogue: `
const readmeTools = [{ type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];
const readmeMessages: unknown[] = [{ role: 'user', content: 'Run it.' }];
const readmeRound = async () => {
  const response = await tools('http://agentwire.invalid/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'auto', messages: readmeMessages, tools: readmeTools }) });
  readmeAssert.equal(response.status, 200);
  return ((await response.json()) as { choices: { message: { content: string; tool_calls?: { id: string }[] }; finish_reason: string }[] }).choices[0]!;
};
const readmeCall = await readmeRound();
readmeAssert.equal(readmeCall.finish_reason, 'tool_calls');
readmeMessages.push(readmeCall.message, { role: 'tool', tool_call_id: readmeCall.message.tool_calls![0]!.id, content: 'round-0' });
readmeAssert.deepEqual((await readmeRound()).message.content, 'Done after 1 tool rounds.');
readmeAssert.equal(claude.conversationStats?.resumed, 1);
await claude.close();`,
  },
  {
    name: 'McpServer (bindings/js/README.md)',
    match: 'new McpServer(',
    prelude: `${ASSERT}
import type { McpHttpRequest, McpOutput } from 'agentwire';
const body = ${JSON.stringify(JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }] }))};
const request: McpHttpRequest = {
  method: 'POST',
  accept: 'application/json, text/event-stream',
  contentType: 'application/json',
  body: new TextEncoder().encode(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'readme', version: '1' } } })),
};
const readmeOutputs: McpOutput[] = [];
const send = (output: McpOutput) => readmeOutputs.push(output);
const runTool = async (name: string, args: string) => \`\${name} \${args}\`;`,
    epilogue: `
readmeAssert.equal(readmeOutputs[0]?.type === 'head' && readmeOutputs[0].status, 200);
readmeAssert.deepEqual(readmeOutputs.at(-1), { type: 'end' });
readmeAssert.ok(server.isInitialized);
server.free();`,
  },
  {
    name: 'AcpAgent (bindings/js/README.md)',
    match: "command: 'gemini'",
    prelude: `${ASSERT}
const body = ${JSON.stringify(MESSAGES)};
const signal = new AbortController().signal;
${RES}`,
    epilogue: `${ANSWERED}
readmeAssert.match(readmeText(), /event: message_stop\\n/);`,
  },
];

const blocks = JSON.parse(execFileSync('python3', [join(ROOT, 'tests/readme/snippets.py'), 'json', 'ts'], { encoding: 'utf8' }));
const failures = [];
const cases = [];
for (const block of blocks) {
  const setups = SETUPS.filter((setup) => block.code.includes(setup.match));
  if (setups.length !== 1) failures.push(`${block.file}:${block.line}: ${setups.length} setups match this block (SETUPS in tests/readme/ts.mjs)`);
  else cases.push({ block, setup: setups[0] });
}
for (const setup of SETUPS) {
  const matched = cases.filter((c) => c.setup === setup).length;
  if (matched !== 1) failures.push(`the setup '${setup.name}' matches ${matched} blocks, not one`);
}

const scratch = mkdtempSync(join(tmpdir(), 'agentwire-readme-'));
try {
  if (failures.length === 0) await run(scratch);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
for (const failure of failures) console.error(`tests/readme/ts.mjs: ${failure}`);
if (failures.length > 0) process.exit(1);
console.log(`    ${cases.length} blocks compiled with tsc --strict and run: ${cases.map((c) => `${c.block.file}:${c.block.line}`).join(', ')}`);

async function run(dir) {
  // The snippets import what the package's test project has installed (the AI SDK, the
  // package itself, OpenCode's plugin types).
  symlinkSync(join(JS, 'test/node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const standIn = (name, program, args) => {
    writeFileSync(join(bin, name), `#!/bin/sh\nexec '${program}' ${args.map((a) => `'${a}'`).join(' ')} "$@"\n`);
    chmodSync(join(bin, name), 0o755);
  };
  standIn('cursor-agent', program('replay_agent'), ['--transcript', TRANSCRIPT, '--delay-ms', '0']);
  standIn('gemini', program('acp_agent'), ['--recording', RECORDING]);
  // An ACP agent that calls the client's tools over MCP (one tool round per session).
  standIn('claude-agent-acp', process.execPath, [join(JS, 'test/support/acp_mcp_agent.mjs'), '--tool-rounds', '1']);

  const offsets = [];
  cases.forEach(({ block, setup }, i) => {
    const before = `${setup.prelude}\n`;
    offsets.push({ file: `snippet-${i}.ts`, from: before.split('\n').length, lines: block.code.split('\n').length - 1, block });
    writeFileSync(join(dir, `snippet-${i}.ts`), `${before}${block.code}${setup.epilogue}\nexport {};\n`);
  });
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['es2022', 'esnext.disposable', 'dom'],
        types: ['node'],
        typeRoots: [join(JS, 'node_modules/@types'), join(JS, 'test/node_modules/@types')],
        strict: true,
        skipLibCheck: true,
        outDir: 'out',
        paths: { '@opencode-ai/plugin': [join(JS, 'test/node_modules/@opencode-ai/plugin/dist/index.d.ts')] },
      },
      include: ['snippet-*.ts'],
    }),
  );
  try {
    execFileSync(process.execPath, [join(JS, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir, encoding: 'utf8' });
  } catch (error) {
    // tsc's positions, mapped to the README lines they come from.
    const mapped = String(error.stdout).replace(/^snippet-\d+\.ts\((\d+),(\d+)\)/gm, (whole, line, column) => {
      const place = offsets.find((o) => whole.startsWith(`${o.file}(`));
      const inBlock = Number(line) - place.from + 1;
      return inBlock >= 1 && inBlock <= place.lines
        ? `${place.block.file}:${place.block.line + inBlock} (column ${column})`
        : `${whole} (the setup's ${inBlock < 1 ? 'prelude' : 'epilogue'})`;
    });
    failures.push(`tsc:\n${mapped}`);
    return;
  }
  for (const [i, { block, setup }] of cases.entries()) {
    const problem = await runOne(join(dir, `out/snippet-${i}.js`), dir, bin, setup);
    if (problem) failures.push(`${block.file}:${block.line} (${setup.name}): ${problem}`);
  }
}

/** Runs one compiled snippet in its own process group; a problem, or undefined. */
function runOne(file, cwd, bin, setup) {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [file], {
      cwd,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data) => (stdout += data));
    child.stderr.on('data', (data) => (stderr += data));
    const timer = setTimeout(() => stopGroup(child.pid), DEADLINE_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Whatever the snippet left running in its group goes with it.
      stopGroup(child.pid);
      if (code !== 0) resolveRun(`exit ${code ?? signal}${signal === 'SIGKILL' ? ` (over ${DEADLINE_MS} ms)` : ''}: ${stderr.trim()}`);
      else if (setup.stdout !== undefined && stdout !== setup.stdout) resolveRun(`printed ${JSON.stringify(stdout)}, not ${JSON.stringify(setup.stdout)}`);
      else resolveRun(undefined);
    });
  });
}

function stopGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}

/** The Rust program `name`, as run-tests.sh built it, else built now. */
function program(name) {
  const preset = process.env[`AGENTWIRE_${name.toUpperCase()}`];
  if (preset) return preset;
  const out = execFileSync('cargo', ['build', '--quiet', '--message-format=json', '-p', 'agentwire-proxy', '--bin', name], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    const message = JSON.parse(line);
    if (message.reason === 'compiler-artifact' && message.target?.name === name && message.executable) return message.executable;
  }
  throw new Error(`cargo builds no program named ${name}`);
}
