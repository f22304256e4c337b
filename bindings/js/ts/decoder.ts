/**
 * `Decoder`: cursor-agent stdout to typed events, for plugins that render the answer
 * themselves and need no HTTP.
 * @module
 */

import { RawDecoder } from '../wasm/agentwire_js.js';
import { type Config, configJson } from './config.js';
import { requireBytes } from './errors.js';
import type { AgentEvent, DecoderStats } from './events.js';
import { Handle, convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * Decodes cursor-agent `--output-format stream-json` stdout into {@link AgentEvent}s.
 *
 * - getters: {@link stats}, {@link sessionId}, {@link model}, {@link isFinished};
 * - inputs: {@link pushStdout} (bytes in any chunking), {@link pushEof} (stdout closed);
 * - outputs: {@link drain} (every pending event, one crossing into the module: the fast
 *   way), {@link pollEvent}, {@link events}.
 *
 * **After every input, drain the events.** Only `config.decoder` is read. Free it with
 * {@link free} (or `using`) when done; {@link decodeStdout} and {@link DecoderStream} do.
 */
export class Decoder extends Handle<RawDecoder> {
  constructor(config?: Config) {
    requireLoaded();
    const json = configJson(config);
    let raw: RawDecoder;
    try {
      raw = new RawDecoder(json);
    } catch (error) {
      throw convert(error);
    }
    super(raw, 'decoder');
  }

  // Getters.

  /** Counters over everything decoded so far. */
  get stats(): DecoderStats {
    const s = this.call((raw) => raw.stats());
    return {
      lines: s[0]!,
      unknown: s[1]!,
      nonJson: s[2]!,
      badLines: s[3]!,
      recaps: s[4]!,
      reconciled: s[5]!,
      divergences: s[6]!,
      results: s[7]!,
    };
  }

  /** The agent's session (chat) id, once an event carried one. */
  get sessionId(): string | undefined {
    return this.call((raw) => raw.sessionId());
  }

  /** The model's display name from `system/init` (`"Composer 2.5 Fast"`, not a slug). */
  get model(): string | undefined {
    return this.call((raw) => raw.model());
  }

  /** Whether {@link pushEof} was called and every event was handed out. */
  get isFinished(): boolean {
    return this.call((raw) => raw.isFinished());
  }

  // Inputs.

  /** Stdout bytes, in any chunking (a Node `Buffer` is fine). */
  pushStdout(data: Uint8Array): void {
    const raw = this.raw();
    requireBytes(data, 'data');
    try {
      raw.pushStdout(data);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /** Stdout ended. Calling it again does nothing. */
  pushEof(): void {
    this.call((raw) => raw.pushEof());
  }

  // Outputs.

  /** Every pending event (an empty array when none). */
  drain(): AgentEvent[] {
    const json = this.call((raw) => raw.drain());
    return json.length === 0 ? [] : (JSON.parse(json) as AgentEvent[]);
  }

  /** The next event, or `undefined` until the next input. */
  pollEvent(): AgentEvent | undefined {
    const json = this.call((raw) => raw.pollEvent());
    return json === undefined ? undefined : (JSON.parse(json) as AgentEvent);
  }

  /** Drains the events: iterate it to the end after every input. */
  *events(): IterableIterator<AgentEvent> {
    yield* this.drain();
  }
}
