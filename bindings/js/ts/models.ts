/**
 * The model catalogue: what `cursor-agent models` (or `--list-models`) prints, read into
 * {@link ModelEntry} objects ({@link parseModels}).
 * @module
 */

import { parseModels as rawParseModels } from '../wasm/agentwire_js.js';
import { requireBytes } from './errors.js';
import { requireLoaded } from './module.js';

/** One model the CLI offers. */
export interface ModelEntry {
  /** The slug passed to `--model` (`composer-2.5`). */
  readonly id: string;
  /** The display name, without the `(current)`/`(default)` markers (`Composer 2.5`). */
  readonly name: string;
  /** Marked `(default)`: what the CLI runs without `--model`. */
  readonly isDefault: boolean;
  /** Marked `(current)`: the model persisted in the CLI's configuration. */
  readonly isCurrent: boolean;
}

const TEXT = new TextEncoder();

/**
 * The entries of a model listing (what `cursor-agent models` wrote to stdout), in listing
 * order. The listing is meant for a terminal and read defensively: ANSI escapes, a spinner
 * overwritten by the list, the header and the tip are skipped; an id listed twice is given
 * once with the markers of both lines. Never throws on its content: a listing with no entry
 * gives `[]`.
 *
 * ```ts
 * parseModels('Available models\n\nauto - Auto (current, default)\ngpt-5 - GPT-5\n');
 * // [{ id: 'auto', name: 'Auto', isDefault: true, isCurrent: true }, { id: 'gpt-5', name: 'GPT-5', … }]
 * ```
 */
export function parseModels(listing: Uint8Array | string): ModelEntry[] {
  requireLoaded();
  const bytes = typeof listing === 'string' ? TEXT.encode(listing) : listing;
  requireBytes(bytes, 'listing');
  return (JSON.parse(rawParseModels(bytes)) as ModelEntry[]).map((entry) => Object.freeze(entry));
}
