/**
 * What every object backed by the WebAssembly module shares: freeing, and turning what the
 * module throws into {@link AgentwireError}s.
 * @module
 */

import { RawError, takePanicMessage } from '../wasm/agentwire_js.js';
import { AgentwireError, isErrorCode } from './errors.js';
import { recoverFromTrap } from './module.js';

/**
 * The errors made of traps. A call on one object may borrow another (a bridge's call takes
 * its registry): when the inner object's call traps, both stay borrowed, and the outer
 * object, seeing this error come through, is poisoned too.
 */
const traps = new WeakSet<AgentwireError>();

/** {@link Handle.call} from outside the class hierarchy, for the package's tests (`testing.ts`). */
let callOn: <R extends RawObject, T>(handle: Handle<R>, call: (raw: R) => T) => T;

/** Runs `call` on `handle`'s live object as its own methods do (a panic poisons it). Not part of the package's API. */
export function internalCall<R extends RawObject, T>(handle: Handle<R>, call: (raw: R) => T): T {
  return callOn(handle, call);
}

/** A wasm-bindgen object: `free()` releases it; `__destroy_into_raw()` gives it up unreleased. */
interface RawObject {
  free(): void;
}

interface Relinquishable {
  __destroy_into_raw(): number;
}

/**
 * Owns one object of the module. `free()` (or `[Symbol.dispose]`, for `using`) releases it;
 * one that is never freed is released when it is garbage-collected.
 *
 * A panic inside a call traps: the call throws a `WebAssembly.RuntimeError` and the object
 * is left mid-change (wasm-bindgen also keeps it marked as borrowed). It is then
 * **poisoned**: given up without being freed (freeing it could trip over its half-made
 * state), and every later call on it throws `poisoned`. Other objects own disjoint state
 * and keep working.
 */
export abstract class Handle<R extends RawObject> implements Disposable {
  static {
    callOn = (handle, call) => handle.call(call);
  }

  #raw: R | undefined;
  #poisoned = false;
  readonly #what: string;

  protected constructor(raw: R, what: string) {
    this.#raw = raw;
    this.#what = what;
  }

  /** Whether it was freed (or poisoned). */
  get closed(): boolean {
    return this.#raw === undefined;
  }

  /** Releases it. Freeing again does nothing. */
  free(): void {
    const raw = this.#raw;
    this.#raw = undefined;
    raw?.free();
  }

  /** {@link free}, for `using`. */
  [Symbol.dispose](): void {
    this.free();
  }

  /** The live object, or throws `closed` / `poisoned`. */
  protected raw(): R {
    const raw = this.#raw;
    if (raw !== undefined) return raw;
    throw this.#poisoned
      ? new AgentwireError('poisoned', `an earlier call on this ${this.#what} panicked; it can only be dropped`)
      : new AgentwireError('closed', `this ${this.#what} was freed`);
  }

  /** Runs `call` on the live object, turning what it throws into what {@link failure} says. */
  protected call<T>(call: (raw: R) => T): T {
    const raw = this.raw();
    try {
      return call(raw);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * What to throw for `error`, caught from a call on this object: a `RawError` becomes an
   * {@link AgentwireError} with its code; a trap poisons the object and becomes `panic`;
   * anything else passes through.
   */
  protected failure(error: unknown): unknown {
    const trapped = error instanceof AgentwireError && traps.has(error);
    if (error instanceof WebAssembly.RuntimeError || trapped) {
      const raw = this.#raw as (R & Partial<Relinquishable>) | undefined;
      this.#raw = undefined;
      this.#poisoned = true;
      // Unregistered from the finalizer too: it must never be freed.
      raw?.__destroy_into_raw?.();
      return trapped ? error : panicked(error as WebAssembly.RuntimeError, `; this ${this.#what} is now unusable`);
    }
    return convert(error);
  }
}

/**
 * What to throw for `error`, caught from a call that has no object (yet): a `RawError` as
 * an {@link AgentwireError} with its code, a trap as `panic`, anything else as it is.
 */
export function convert(error: unknown): unknown {
  if (error instanceof WebAssembly.RuntimeError) return panicked(error, '');
  if (!(error instanceof RawError)) return error;
  const code = error.code;
  const message = error.message;
  error.free();
  return new AgentwireError(isErrorCode(code) ? code : 'invalidArgument', message);
}

function panicked(trap: WebAssembly.RuntimeError, consequence: string): AgentwireError {
  recoverFromTrap();
  const message = takePanicMessage() || trap.message;
  const error = new AgentwireError('panic', `agentwire panicked (a bug in agentwire): ${message}${consequence}`);
  traps.add(error);
  return error;
}
