/**
 * The decoder over streams: an async generator for `for await`, and a Web Streams
 * `TransformStream`.
 * @module
 */

import type { Config } from './config.js';
import { Decoder } from './decoder.js';
import type { AgentEvent, DecoderStats } from './events.js';

/**
 * The events of a whole stdout, as they come:
 * `for await (const event of decodeStdout(child.stdout)) …` (a Node stream, `Bun.spawn`'s
 * `stdout`, a `fetch` body: any async iterable of bytes). Returns the decoder's stats at
 * the end. The decoder is freed however the loop ends.
 */
export async function* decodeStdout(
  stdout: AsyncIterable<Uint8Array>,
  config?: Config,
): AsyncGenerator<AgentEvent, DecoderStats, undefined> {
  const decoder = new Decoder(config);
  try {
    for await (const chunk of stdout) {
      decoder.pushStdout(chunk);
      yield* decoder.drain();
    }
    decoder.pushEof();
    yield* decoder.drain();
    return decoder.stats;
  } finally {
    decoder.free();
  }
}

/**
 * Stdout bytes in, events out:
 * `Readable.toWeb(child.stdout).pipeThrough(new DecoderStream())`. Its decoder is freed
 * when the stream ends or fails.
 */
export class DecoderStream extends TransformStream<Uint8Array, AgentEvent> {
  constructor(config?: Config) {
    const decoder = new Decoder(config);
    super({
      transform(chunk, controller) {
        try {
          decoder.pushStdout(chunk);
          for (const event of decoder.drain()) controller.enqueue(event);
        } catch (error) {
          decoder.free();
          throw error;
        }
      },
      flush(controller) {
        try {
          decoder.pushEof();
          for (const event of decoder.drain()) controller.enqueue(event);
        } finally {
          decoder.free();
        }
      },
    });
  }
}
