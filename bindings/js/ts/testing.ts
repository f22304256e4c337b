/**
 * For the package's own tests, and not exported by the package: a handle made to panic
 * inside the module, which a module built with the `test-hooks` feature allows.
 * @module
 */

import { RawAcpConnection, RawBridge, RawDecoder, RawRegistry } from '../wasm/agentwire_js.js';
import type { AcpConnection } from './acp.js';
import type { Bridge } from './bridge.js';
import type { Decoder } from './decoder.js';
import type { Registry } from './registry.js';
import { internalCall } from './handle.js';

export { wasmMemory } from './module.js';

interface Panicking {
  testPanic?(): void;
}

/** Whether the loaded module was built with the `test-hooks` feature. */
export function hasTestHooks(): boolean {
  return (
    typeof (RawBridge.prototype as Panicking).testPanic === 'function' &&
    typeof (RawDecoder.prototype as Panicking).testPanic === 'function' &&
    typeof (RawAcpConnection.prototype as Panicking).testPanic === 'function' &&
    typeof (RawRegistry.prototype as Panicking).testPanic === 'function'
  );
}

/** Makes `handle` panic inside the module, through the same path as its own calls. */
export function forcePanic(handle: Bridge | Decoder | AcpConnection | Registry): void {
  internalCall<RawBridge | RawDecoder | RawAcpConnection | RawRegistry, void>(handle, (raw) => {
    const hook = (raw as Panicking).testPanic;
    if (hook === undefined) throw new Error('the module was built without the test-hooks feature');
    hook.call(raw);
  });
}
