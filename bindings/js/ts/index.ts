/**
 * agentwire for Node, Bun and Deno (and Electron, so VS Code's desktop extension host): the
 * OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs on top of
 * cursor-agent (stream-json) and any ACP agent, as a sans-IO library. The WebAssembly module is loaded, synchronously,
 * when this module is imported.
 *
 * ```ts
 * import { Bridge } from 'agentwire';
 * const bridge = new Bridge(body, { dialect: 'messages', nowMs: performance.now() });
 * // spawn bridge.invocation (or let agentwire/node do it), then after every input:
 * for (const output of bridge.drain()) { … }
 * ```
 *
 * Browsers and VS Code for the Web import `agentwire/web` and call `init()` first.
 * @module
 */

import { readFileSync } from 'node:fs';
import { initSync } from './module.js';

initSync(readFileSync(new URL('../wasm/agentwire_js_bg.wasm', import.meta.url)));

export * from './api.js';
export { init, initSync } from './module.js';
export type { WasmInput, WasmSource } from './module.js';
