/**
 * The one error class of the package.
 * @module
 */

/**
 * Why a call failed.
 *
 * Misuse (a bug in the caller): `invalidArgument` (a value of the wrong type or out of
 * range, an unknown config field), `afterExit` (agent output pushed after
 * {@link Bridge.agentExited}), `exitedTwice`, `afterEof` (stdout pushed to a decoder after
 * {@link Decoder.pushEof}), `closed` (the object was freed), `notLoaded` (the WebAssembly
 * module was not loaded: call `init()` first, in a browser).
 *
 * Bad input: `invalidInput` (a value whose content cannot be used: a NUL character in a
 * path, a string with a lone surrogate).
 *
 * A bug in agentwire: `panic` (the call panicked; the object is now unusable) and
 * `poisoned` (an earlier call on this object panicked). Other objects are unaffected.
 */
export type ErrorCode =
  | 'invalidArgument'
  | 'afterExit'
  | 'exitedTwice'
  | 'afterEof'
  | 'closed'
  | 'notLoaded'
  | 'invalidInput'
  | 'panic'
  | 'poisoned';

/** The group of an {@link ErrorCode}. */
export type ErrorKind = 'misuse' | 'badInput' | 'panic' | 'poisoned';

const KINDS: Record<ErrorCode, ErrorKind> = {
  invalidArgument: 'misuse',
  afterExit: 'misuse',
  exitedTwice: 'misuse',
  afterEof: 'misuse',
  closed: 'misuse',
  notLoaded: 'misuse',
  invalidInput: 'badInput',
  panic: 'panic',
  poisoned: 'poisoned',
};

/**
 * A call into agentwire failed. `code` says why, `kind` which group that is; the message is
 * the library's own.
 */
export class AgentwireError extends Error {
  /** Why the call failed. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'AgentwireError';
    this.code = code;
  }

  /** `misuse`, `badInput`, `panic` or `poisoned`. */
  get kind(): ErrorKind {
    return KINDS[this.code];
  }
}

/** Whether `code` is one the WebAssembly module throws (its `RawError.code`). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(KINDS, code);
}

/** Throws `invalidArgument` unless `value` is a `Uint8Array` (a Node `Buffer` is one). */
export function requireBytes(value: unknown, name: string): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new AgentwireError('invalidArgument', `${name} must be a Uint8Array, not ${describe(value)}`);
  }
}

/** A short description of a value's type, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}

/** Throws `invalidArgument` unless `value` is a number (the module checks its range). */
export function requireNumber(value: unknown, name: string): asserts value is number {
  if (typeof value !== 'number') {
    throw new AgentwireError('invalidArgument', `${name} must be a number, not ${describe(value)}`);
  }
}
