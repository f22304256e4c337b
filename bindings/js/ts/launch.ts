/**
 * What to add to an ACP agent's launch so that its own tools are off
 * (`AcpConfig.nativeTools: 'off'`): the Rust `acp::launch_without_native_tools`.
 * @module
 */

import { launchSettingsContents as rawContents, launchWithoutNativeTools as rawLaunch } from '../wasm/agentwire_js.js';
import { AgentwireError, describe, requireBytes } from './errors.js';
import { convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * What to add to an ACP agent's launch so that its own tools are off: {@link args} to
 * append to its command line and, for some agents, a {@link settings} file.
 */
export interface AgentLaunch {
  /** Arguments to append to the agent's command line, in order. */
  readonly args: readonly string[];
  /** A settings file to write and name to the agent in its environment; `null` for an agent that needs none. */
  readonly settings: SettingsFile | null;
}

/**
 * A settings file of the adapter's own, which the agent reads in place of another: write
 * {@link contents} to a file in a directory of the adapter's own, set the environment
 * variable {@link env} to its path for the agent, and remove it when the agent is gone.
 */
export interface SettingsFile {
  /** The environment variable that names the file to the agent. */
  readonly env: string;
  /**
   * The file the agent reads when the variable is not set, whose settings the new file
   * keeps: read it, if it exists, for {@link contents}; never write it.
   */
  readonly replaces: string;
  /**
   * The file's contents (JSON): the settings of the replaced file (`replaced`: its bytes or
   * text; `null` when it does not exist) with the added settings written over them. Throws
   * `invalidInput` when `replaced` is not a JSON object.
   */
  contents(replaced: Uint8Array | string | null): string;
}

const TEXT = new TextEncoder();

/**
 * What to add to the launch of the ACP agent `program` `args` so that its own tools are off.
 * The agent is recognised by the file name of its program or of an argument (as in
 * `npx @zed-industries/codex-acp`): claude-agent-acp (nothing to add: its tools are turned
 * off per session), codex-acp (`-c` overrides), `gemini --acp` (a settings file). `env` is
 * the environment the agent will get (default: this process's, `process.env`, where there
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
  let launch: { args: string[]; settings: { env: string; replaces: string } | null };
  try {
    launch = JSON.parse(rawLaunch(agent)) as typeof launch;
  } catch (error) {
    throw convert(error);
  }
  const settings = launch.settings;
  return Object.freeze({
    args: Object.freeze(launch.args),
    settings:
      settings === null
        ? null
        : Object.freeze({
            env: settings.env,
            replaces: settings.replaces,
            contents(replaced: Uint8Array | string | null): string {
              let bytes: Uint8Array | undefined;
              if (replaced !== null) {
                bytes = typeof replaced === 'string' ? TEXT.encode(replaced) : replaced;
                requireBytes(bytes, 'replaced');
              }
              try {
                return rawContents(agent, bytes);
              } catch (error) {
                throw convert(error);
              }
            },
          }),
  });
}

/** This process's environment where there is one (Node, Deno, Bun), else none. */
function processEnv(): Record<string, string | undefined> {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env ?? {};
}
