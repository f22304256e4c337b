/**
 * agentwire for browsers and VS Code for the Web: the same API as `agentwire`, with the
 * WebAssembly module loaded by the caller first, by `await init()` (fetched from the
 * package) or `initSync(bytes)` (for instance bytes an extension read from its own folder).
 * Until then, creating a `Bridge` or `Decoder` throws `notLoaded`.
 * @module
 */

export * from './api.js';
export { init, initSync } from './module.js';
export type { WasmInput, WasmSource } from './module.js';
