// Drives the package the way the Rust examples drive the core, for comparison.
import { readFileSync } from 'node:fs';
import { Bridge, Decoder } from 'agentwire';

/** `{ status, body }` of a whole request, like the `translate` example. */
export function respond(body, transcript, chunk = 4096, stderr = undefined, exitCode = 0) {
  let status = 0;
  const out = [];
  const bridge = new Bridge(body, { nowMs: 0, created: 1_700_000_000, idSeed: 0n });
  try {
    const drain = () => {
      for (const output of bridge.drain()) {
        if (output.type === 'head') status = output.status;
        else if (output.type === 'body') out.push(output.data);
        else if (output.type === 'end') return true;
      }
      return false;
    };
    let ended = drain();
    if (bridge.invocation !== undefined) {
      for (let at = 0; at < transcript.length && !ended; at += chunk) {
        bridge.pushStdout(transcript.subarray(at, at + chunk), 0);
        ended = drain();
      }
      if (stderr !== undefined) bridge.pushStderr(stderr, 0);
      bridge.agentExited({ code: exitCode }, 0);
      drain();
    }
  } finally {
    bridge.free();
  }
  return { status, body: Buffer.concat(out) };
}

const quote = (text) => {
  let out = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte < 0x20 || byte === 0x7f || byte === 0x22 || byte === 0x5c ? `\\x${byte.toString(16).padStart(2, '0')}` : String.fromCharCode(byte);
  }
  return Buffer.from(`${out}"`, 'latin1').toString('utf8');
};
const optional = (label, text) => ` ${label}:${text === undefined ? '-' : quote(text)}`;
const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A cost as the hex of its IEEE 754 bits, as the `events` example writes it. */
function costBits(cost) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, cost);
  return view.getBigUint64(0).toString(16).padStart(16, '0');
}

/** One event in the `events` example's text form. */
export function eventLine(event) {
  switch (event.type) {
    case 'textDelta':
      return `text ${quote(event.text)}`;
    case 'reasoningDelta':
      return `reasoning ${quote(event.text)}`;
    case 'toolCall':
      return `tool_call ${event.index} ${quote(event.id)} ${quote(event.name)} ${quote(event.arguments)}`;
    case 'agentActivity': {
      const phase = event.phase === 'started' ? 'started' : `completed:${snake(event.outcome)}:${event.startedSeen ? 1 : 0}`;
      return `activity ${quote(event.callId)} ${quote(event.tool)} ${phase} ${quote(event.summary)}${optional('args', event.arguments)}${optional('model_call', event.modelCallId)}`;
    }
    case 'progress':
      return `progress ${event.kind} ${event.kind === 'reconnected' ? 0 : event.attempt}`;
    case 'usage': {
      const reasoning = event.reasoningTokens ?? '-';
      const cost = event.cost === undefined ? '-' : costBits(event.cost);
      return `usage ${event.inputTokens} ${event.outputTokens} ${event.cacheReadTokens} ${event.cacheWriteTokens} reasoning:${reasoning} cost:${cost} ${event.promptTokens} ${event.totalTokens}`;
    }
    case 'finish':
      return `finish ${snake(event.reason)}`;
    case 'failed':
      return `failed ${snake(event.kind)} ${quote(event.message)}`;
    default:
      throw new Error(`unknown event ${JSON.stringify(event)}`);
  }
}

/** The events of a transcript pushed `chunk` bytes at a time, and their text form. */
export function decode(transcript, chunk = 4096) {
  const events = [];
  const decoder = new Decoder();
  try {
    for (let at = 0; at < transcript.length; at += chunk) {
      decoder.pushStdout(transcript.subarray(at, at + chunk));
      events.push(...decoder.drain());
    }
    decoder.pushEof();
    events.push(...decoder.drain());
    if (!decoder.isFinished) throw new Error('the decoder is not finished after its end');
  } finally {
    decoder.free();
  }
  return { events, text: events.map((e) => `${eventLine(e)}\n`).join('') };
}

export const read = (path) => new Uint8Array(readFileSync(path));
