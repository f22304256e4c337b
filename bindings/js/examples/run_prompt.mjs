#!/usr/bin/env node
// A minimal plugin: runs one prompt through cursor-agent and prints the answer as it streams.
//
//   node run_prompt.mjs [--agent PROGRAM] [--model MODEL] PROMPT
//
// It builds an OpenAI Chat Completions request, lets agentwire turn it into the agent's
// command line, runs the agent in its own process group, feeds its output to the bridge
// and prints the text of the SSE frames the bridge produces. --agent replaces cursor-agent
// (any stand-in that speaks its stream-json output). The Python package's
// examples/run_prompt.py is the same program; agentwire/node's AgentRun does all of this
// for you.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { Bridge } from 'agentwire';

const { values, positionals } = parseArgs({
  options: { agent: { type: 'string' }, model: { type: 'string', default: 'auto' } },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  console.error('usage: run_prompt.mjs [--agent PROGRAM] [--model MODEL] PROMPT');
  process.exit(2);
}

const now = () => performance.now();
const body = JSON.stringify({ model: values.model, stream: true, messages: [{ role: 'user', content: positionals[0] }] });
const bridge = new Bridge(body, { config: values.agent ? { cursorBinary: values.agent } : {}, nowMs: now() });

let status = 0;
let pending = '';
/** @type {import('node:child_process').ChildProcess | undefined} */
let agent;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
const decoder = new TextDecoder();

/**
 * Prints the content deltas of complete SSE frames; keeps a partial frame.
 * @param {Uint8Array} bytes
 */
function printText(bytes) {
  pending += decoder.decode(bytes, { stream: true });
  let end;
  while ((end = pending.indexOf('\n\n')) >= 0) {
    const frame = pending.slice(0, end);
    pending = pending.slice(end + 2);
    if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue;
    const chunk = JSON.parse(frame.slice('data: '.length));
    if (chunk.error) console.error(`\nerror: ${chunk.error.message}`);
    for (const choice of chunk.choices ?? []) {
      if (choice.delta?.content) process.stdout.write(choice.delta.content);
    }
  }
}

/** Handles the bridge's outputs, then sets the one timer to its next deadline. */
function drain() {
  for (const output of bridge.drain()) {
    if (output.type === 'head') {
      status = output.status;
    } else if (output.type === 'body') {
      if (status === 200) printText(output.data);
      else console.error(`error ${status}: ${JSON.parse(decoder.decode(output.data)).error?.message}`);
    } else if (output.type === 'stopAgent' && agent?.pid !== undefined) {
      process.kill(-agent.pid, 'SIGKILL'); // the whole process group
    }
  }
  clearTimeout(timer);
  const deadline = bridge.pollTimeout();
  if (deadline !== undefined) {
    timer = setTimeout(() => {
      bridge.handleTimeout(now());
      drain();
    }, Math.max(0, deadline - now()));
  }
}

drain();
const invocation = bridge.invocation;
if (invocation === undefined) process.exit(1); // rejected: the 400 was printed

const child = spawn(invocation.program, invocation.args, {
  detached: true, // its own process group, killed as a whole
  stdio: ['pipe', 'pipe', 'pipe'],
  env: { ...process.env, ...invocation.env },
});
agent = child;
child.on('error', (error) => {
  console.error(`could not start ${invocation.program}: ${error.message}`);
  process.exit(1);
});
child.stdin.on('error', () => {}); // the agent may exit before reading it all
child.stdin.end(invocation.stdin);
child.stdout.on('data', (chunk) => {
  bridge.pushStdout(chunk, now());
  drain();
});
child.stderr.on('data', (chunk) => {
  bridge.pushStderr(chunk, now());
  drain();
});
child.on('close', (code, signal) => {
  // Both pipes are at their end and the agent is reaped.
  bridge.agentExited(signal !== null ? { signal: constants.signals[signal] } : { code: code ?? 0 }, now());
  drain();
  clearTimeout(timer);
  bridge.free();
  process.stdout.write('\n');
  process.exitCode = status === 200 ? 0 : 1;
});
