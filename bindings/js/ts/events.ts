/**
 * The events a {@link Decoder} produces: what the agent did, as a discriminated union on
 * `type`. Text fields are copies; fields the agent did not report are left out.
 * @module
 */

/** Answer text, in order. Recaps are already removed: concatenated, the deltas are the answer exactly once. */
export interface TextDelta {
  type: 'textDelta';
  text: string;
}

/** Model reasoning ("thinking") text. */
export interface ReasoningDelta {
  type: 'reasoningDelta';
  text: string;
}

/** A call of one of the **client's** tools, for the client to execute (client mode only). */
export interface ToolCall {
  type: 'toolCall';
  /** Position in this turn's calls, from 0. */
  index: number;
  /** OpenAI-safe call id (`call_…`). */
  id: string;
  /** The client's tool name. */
  name: string;
  /** Arguments as JSON object text. */
  arguments: string;
}

/** How a tool the agent ran itself ended. */
export type ToolOutcome = 'success' | 'rejected' | 'error' | 'permissionDenied' | 'unknown';

interface ActivityFields {
  type: 'agentActivity';
  /** The agent's own id for the call (may contain newlines; never an OpenAI id). */
  callId: string;
  /** The tool's kind as the agent names it (`shell`, `read`, `edit`, `webFetch`, …). */
  tool: string;
  /** A short, single-line description (`cat sample.txt`, `src/main.rs`). */
  summary: string;
  /** The call's arguments as JSON object text, when known. */
  arguments?: string;
  /** The agent's id of the model call that issued it; calls issued together share it. */
  modelCallId?: string;
}

/**
 * A tool the agent ran (or tried to run) itself. Informational only: never hand it to the
 * client as something to execute.
 */
export type AgentActivity =
  | (ActivityFields & { phase: 'started' })
  | (ActivityFields & {
      phase: 'completed';
      outcome: ToolOutcome;
      /** Whether a matching start was seen (a rejected call may only complete). */
      startedSeen: boolean;
    });

/** The agent is alive but not answering yet: reconnecting, reconnected, retrying. */
export type Progress =
  | { type: 'progress'; kind: 'reconnecting' | 'retrying'; /** From 1. */ attempt: number }
  | { type: 'progress'; kind: 'reconnected' };

/** Token usage (and cost) as the agent reported it; never estimated. */
export interface Usage {
  type: 'usage';
  /** Fresh (uncached) input tokens. */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens read from the prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the prompt cache. */
  cacheWriteTokens: number;
  /** Only when the agent reports them (cursor-agent does not). */
  reasoningTokens?: number;
  /** The run's cost as the agent reported it (usually US dollars); never estimated. */
  cost?: number;
  /** Fresh, cache-read and cache-written input. */
  promptTokens: number;
  /** Prompt plus output. */
  totalTokens: number;
}

/** Why an answer ended. */
export type FinishReason = 'stop' | 'length' | 'toolCalls' | 'contentFilter';

/** The answer is complete. */
export interface Finish {
  type: 'finish';
  reason: FinishReason;
}

/** Classes of failure, from the client's point of view. */
export type FailureKind =
  | 'invalidRequest'
  | 'notAuthenticated'
  | 'modelUnavailable'
  | 'rateLimited'
  | 'misconfigured'
  | 'unavailable'
  | 'timeout'
  | 'agentError'
  | 'agentCrashed'
  | 'badOutput';

/** The answer failed; no finish follows. */
export interface Failed {
  type: 'failed';
  kind: FailureKind;
  /** A message for the user; says what to do when something can be done. */
  message: string;
}

/** One thing that happened in the agent's answer. Narrow on `type`. */
export type AgentEvent = TextDelta | ReasoningDelta | ToolCall | AgentActivity | Progress | Usage | Finish | Failed;

/** Counters over everything a decoder decoded so far. */
export interface DecoderStats {
  /** Non-blank lines read. */
  lines: number;
  /** JSON lines of a type or subtype not known here (ignored). */
  unknown: number;
  /** Lines that are not JSON objects (kept for failure classification). */
  nonJson: number;
  /** Lines dropped for breaking the line limit or not being UTF-8. */
  badLines: number;
  /** Recaps (re-sent segments) removed. */
  recaps: number;
  /** Times the final `result` revealed text that had not been streamed (then emitted). */
  reconciled: number;
  /** Times the streamed text did not match the final `result` text. */
  divergences: number;
  /** `result` events seen. */
  results: number;
}
