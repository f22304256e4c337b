/**
 * Loading the WebAssembly module. Node, Bun and Deno load it synchronously when the
 * package is imported (`index.ts`); browsers and VS Code for the Web call {@link init} or
 * {@link initSync} first (`web.ts`).
 * @module
 */

import initWasm, { initSync as initWasmSync } from '../wasm/agentwire_js.js';
import { AgentwireError } from './errors.js';

let loaded = false;

/** The module's bytes or a compiled module. */
export type WasmSource = BufferSource | WebAssembly.Module;

/**
 * Loads the module from its bytes (or a compiled `WebAssembly.Module`), synchronously.
 * Loading again does nothing. In a browser's main thread, compile large modules
 * asynchronously with {@link init} instead.
 */
export function initSync(source: WasmSource): void {
  if (loaded) return;
  initWasmSync({ module: source });
  loaded = true;
}

/** Where {@link init} can load the module from. */
export type WasmInput = RequestInfo | URL | Response | WasmSource;

/**
 * Loads the module: from `source` (a URL, a `Response`, the bytes or a compiled module), or
 * by default from `wasm/agentwire_js_bg.wasm` in the package, with `fetch`. Loading again
 * does nothing.
 */
export async function init(source?: WasmInput | Promise<WasmInput>): Promise<void> {
  if (loaded) return;
  await initWasm(source === undefined ? undefined : { module_or_path: source });
  loaded = true;
}

/** Whether the module is loaded. */
export function isLoaded(): boolean {
  return loaded;
}

/** Throws `notLoaded` unless the module is loaded. */
export function requireLoaded(): void {
  if (!loaded) {
    throw new AgentwireError(
      'notLoaded',
      "agentwire's WebAssembly module is not loaded: call init() (or initSync()) from 'agentwire/web' first",
    );
  }
}
