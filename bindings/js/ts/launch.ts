/**
 * What to add to an ACP agent's launch so that its own tools are off
 * (`AcpConfig.nativeTools: 'off'`): the Rust `acp::launch_without_native_tools`.
 * @module
 */

import { launchWithoutNativeTools as rawLaunch } from '../wasm/agentwire_js.js';
import { AgentwireError, describe } from './errors.js';
import { convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * What to add to an ACP agent's launch so that its own tools are off: {@link args} to
 * append to its command line and, for some agents, a {@link file} to name after them.
 */
export interface AgentLaunch {
  /** Arguments to append to the agent's command line, in order. */
  readonly args: readonly string[];
  /** A file to write and name on the command line after {@link args}; `null` for an agent that needs none. */
  readonly file: LaunchFile | null;
}

/**
 * A file of the adapter's own the agent reads: write {@link contents} to a file named
 * {@link name} in a private directory of the adapter's own, append {@link flag} and the
 * file's path to the agent's arguments, then {@link after}, and remove the file when the
 * agent is stopped for good.
 */
export interface LaunchFile {
  /** The file's name (the agent may read it by its extension). */
  readonly name: string;
  /** What the file holds. */
  readonly contents: string;
  /** The flag that names the file to the agent. */
  readonly flag: string;
  /** Arguments to append after the file's path, in order. */
  readonly after: readonly string[];
}

/**
 * What to add to the launch of the ACP agent `program` `args` so that its own tools are off.
 * The agent is recognised by the file name of its program or of an argument (as in
 * `npx @zed-industries/codex-acp`): claude-agent-acp (nothing to add: its tools are turned
 * off per session), codex-acp (`-c` overrides), `gemini --acp` (a `--policy` file, then the
 * user's own policies directory). `env` is the environment the agent will get (read for
 * `GEMINI_CLI_HOME` or else `HOME`) (default: this process's, `process.env`, where there
 * is one). Throws `invalidInput` for an agent agentwire knows no way to turn the tools of
 * (cursor-agent among them: keep them, `nativeTools: 'keep'`), `invalidArgument` for
 * arguments of the wrong type.
 */
export function launchWithoutNativeTools(
  program: string,
  args: readonly string[] = [],
  env: Readonly<Record<string, string | undefined>> = processEnv(),
): AgentLaunch {
  requireLoaded();
  if (typeof program !== 'string') throw new AgentwireError('invalidArgument', `program must be a string, not ${describe(program)}`);
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
    throw new AgentwireError('invalidArgument', `args must be an array of strings, not ${describe(args)}`);
  }
  if (env === null || typeof env !== 'object') throw new AgentwireError('invalidArgument', `env must be an object, not ${describe(env)}`);
  const set: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new AgentwireError('invalidArgument', `env.${name} must be a string, not ${describe(value)}`);
    set[name] = value;
  }
  const agent = JSON.stringify({ program, args, env: set });
  let launch: { args: string[]; file: { name: string; contents: string; flag: string; after: string[] } | null };
  try {
    launch = JSON.parse(rawLaunch(agent)) as typeof launch;
  } catch (error) {
    throw convert(error);
  }
  const file = launch.file;
  return Object.freeze({
    args: Object.freeze(launch.args),
    file: file === null ? null : Object.freeze({ ...file, after: Object.freeze(file.after) }),
  });
}

/** This process's environment where there is one (Node, Deno, Bun), else none. */
function processEnv(): Record<string, string | undefined> {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env ?? {};
}
