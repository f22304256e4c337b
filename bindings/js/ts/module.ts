/**
 * Loading the WebAssembly module. Node, Bun and Deno load it synchronously when the
 * package is imported (`index.ts`); browsers and VS Code for the Web call {@link init} or
 * {@link initSync} first (`web.ts`).
 * @module
 */

import initWasm, { type InitOutput, initSync as initWasmSync } from '../wasm/agentwire_js.js';
import { AgentwireError } from './errors.js';

let loaded: InitOutput | undefined;
/** The stack pointer between calls (see {@link recoverFromTrap}). */
let stackTop: number | undefined;

/** The module's own exports beyond wasm-bindgen's: `build.rs` exports its stack pointer. */
interface StackPointer {
  __stack_pointer?: WebAssembly.Global;
}

function loadedWith(exports: InitOutput): InitOutput {
  stackTop = (exports as InitOutput & StackPointer).__stack_pointer?.value as number | undefined;
  return exports;
}

/**
 * After a trap (a panic): gives back the stack the trapped call was using. A trap leaves
 * the module's stack pointer where the call was; no call of the module is ever active when
 * JavaScript catches one (the module calls back into no JavaScript that calls it again), so
 * the pointer belongs where it rests between calls.
 */
export function recoverFromTrap(): void {
  const pointer = (loaded as (InitOutput & StackPointer) | undefined)?.__stack_pointer;
  if (pointer !== undefined && stackTop !== undefined) pointer.value = stackTop;
}

/** The module's bytes or a compiled module. */
export type WasmSource = BufferSource | WebAssembly.Module;

/**
 * Loads the module from its bytes (or a compiled `WebAssembly.Module`), synchronously.
 * Loading again does nothing. In a browser's main thread, compile large modules
 * asynchronously with {@link init} instead.
 */
export function initSync(source: WasmSource): void {
  if (loaded) return;
  loaded = loadedWith(initWasmSync({ module: source }));
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
  loaded = loadedWith(await initWasm(source === undefined ? undefined : { module_or_path: source }));
}

/** Whether the module is loaded. */
export function isLoaded(): boolean {
  return loaded !== undefined;
}

/** The module's linear memory, once loaded. Not part of the package's API (its tests watch it). */
export function wasmMemory(): WebAssembly.Memory | undefined {
  return loaded?.memory;
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
