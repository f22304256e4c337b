/**
 * `Config`: everything a {@link Bridge} (and a {@link Decoder}) can be told, one field per
 * field of the Rust `Config`.
 * @module
 */

import { defaultConfig as rawDefaultConfig } from '../wasm/agentwire_js.js';
import { AgentwireError, describe } from './errors.js';
import { requireLoaded } from './module.js';

/**
 * How client tools run in client mode (a request with tools): `readOnly` (default) runs the
 * agent read-only and hands its non-mutating calls that map to a client tool to the client;
 * `native` lets the agent use its own tools (its edits bypass the client); `envelopeOnly`
 * teaches every client tool as a text envelope and intercepts nothing.
 */
export type ToolStrategy = 'readOnly' | 'native' | 'envelopeOnly';

/** Where reasoning goes: `reasoning_content` (default), `reasoning`, or nowhere. */
export type ReasoningField = 'reasoningContent' | 'reasoning' | 'omitted';

/**
 * Settings of a {@link Bridge} or {@link Decoder} (a decoder reads only `decoder`). A plain
 * object: every field is optional, and a field left out keeps the library's default (see
 * {@link defaultConfig}). Durations are milliseconds, sizes bytes; `null` means "none"
 * where the field allows it. A value of the wrong type, an unknown field, or a negative or
 * fractional count throws `invalidArgument`.
 */
export interface Config {
  /** The cursor-agent program: a path, or a name looked up in `PATH` (default `cursor-agent`). */
  cursorBinary?: string;
  /** `--workspace` for every run (default none: the adapter's working directory). */
  workspace?: string | null;
  /**
   * An isolated CLI configuration directory, passed as `CURSOR_CONFIG_DIR` (default none).
   * Every `--model` run rewrites the CLI's `cli-config.json`; isolating it keeps concurrent
   * runs from racing on the user's file.
   */
  cliConfigDir?: string | null;
  /** Whether agent mode (a request without tools) may pass `--force` (default `false`). */
  allowForce?: boolean;
  /** How client tools run (default `readOnly`). */
  toolStrategy?: ToolStrategy;
  /** Pass `--stream-partial-output` for token-level text (default `true`). */
  partialOutput?: boolean;
  /** Where reasoning goes in the response (default `reasoningContent`). */
  reasoning?: ReasoningField;
  /** Show the agent's own tool use as notes in the reasoning channel (default `true`). */
  activityNotes?: boolean;
  /**
   * Streaming: how long to wait for the first answer event before sending the 200 head
   * anyway and starting keep-alives (default 30 s). Until then a failure gets its true status.
   */
  headDeadlineMs?: number;
  /** Interval of SSE keep-alive comments during silence, once the head is sent (default 15 s). */
  keepAliveMs?: number;
  /** Stop the agent and fail (504) after this long without output from it (default 20 min). */
  idleTimeoutMs?: number;
  /** Stop the agent and fail (504) after this long in total (default none). */
  maxDurationMs?: number | null;
  /** How long a batch of client tool calls stays open for more calls (default 250 ms). */
  batchWindowMs?: number;
  /** Bytes of the agent's stderr kept for failure messages (default 16 KiB). */
  stderrTailBytes?: number;
  /** Largest text envelope a client tool call may be written in (default 4 MiB). */
  maxEnvelopeBytes?: number;
  /** The stdout decoder's limits. */
  decoder?: DecoderLimits;
  /** Request body limits. */
  requestLimits?: RequestLimits;
  /** Repeated-call limits (`0` turns a limit off). */
  loopGuard?: LoopGuardLimits;
}

/** `Config.decoder`. */
export interface DecoderLimits {
  /** Longest stdout line accepted (default 64 MiB); a longer one is dropped and counted. */
  maxLineLen?: number;
  /** Bytes of non-JSON stdout lines kept for failure classification (default 8 KiB). */
  maxNotes?: number;
}

/** `Config.requestLimits`. */
export interface RequestLimits {
  /** Largest request body accepted (default 32 MiB; larger ones get 413). */
  maxBodyBytes?: number;
  /** Most messages accepted (default 10,000). */
  maxMessages?: number;
  /** Most tools accepted (default 512). */
  maxTools?: number;
  /**
   * Refuse (400) a request holding an image, audio clip or file instead of replacing each
   * with a short text placeholder naming its media type and size (default false).
   */
  rejectAttachments?: boolean;
}

/** `Config.loopGuard`. */
export interface LoopGuardLimits {
  /** Refuse a call whose last this-many identical calls in a row all failed (default 2). */
  maxFailedRepeats?: number;
  /** Refuse a call already made this many times in a row (default 7). */
  maxRepeats?: number;
}

/** Every field of a {@link Config}, present: what {@link defaultConfig} returns. */
export type ResolvedConfig = {
  [K in keyof Config]-?: NonNullable<Config[K]> extends object
    ? Required<NonNullable<Config[K]>>
    : Exclude<Config[K], undefined>;
};

/** The library's defaults, every field present (`null` where the default is none). */
export function defaultConfig(): ResolvedConfig {
  requireLoaded();
  return JSON.parse(rawDefaultConfig()) as ResolvedConfig;
}

/**
 * The JSON text of `config` (a {@link Config}, or another settings object named `what` in
 * errors) for the module (`undefined` for the defaults). Values JSON cannot carry
 * faithfully (a non-finite number, a bigint, a function) are refused here, so that none is
 * silently dropped or turned into `null`.
 */
export function configJson(config: object | undefined, what = 'config'): string | undefined {
  if (config === undefined) return undefined;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new AgentwireError('invalidArgument', `${what} must be an object, not ${describe(config)}`);
  }
  return JSON.stringify(config, (key, value: unknown) => {
    const field = key === '' ? what : key;
    switch (typeof value) {
      case 'number':
        if (!Number.isFinite(value)) {
          throw new AgentwireError('invalidArgument', `invalid ${what}: ${field} must be a finite number, not ${value}`);
        }
        return value;
      case 'bigint':
      case 'function':
      case 'symbol':
        throw new AgentwireError('invalidArgument', `invalid ${what}: ${field} cannot be a ${typeof value}`);
      default:
        return value;
    }
  });
}
