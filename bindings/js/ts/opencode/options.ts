/**
 * The plugin's options, as written in `opencode.json` (`"plugin": [["agentwire", { … }]]`),
 * and their check: every mistake is named, and answered to each request rather than thrown
 * where OpenCode would only log it.
 * @module
 */

import type { AcpConfig, NativeTools } from '../acp.js';
import type { Config } from '../config.js';

/** A model's token limits, as OpenCode shows them and sizes requests by. */
export interface ModelLimit {
  /** The context window, in tokens (default 200,000). */
  context?: number;
  /** The most output tokens a request asks for (`max_tokens`; default 32,000). */
  output?: number;
}

/** One offered model: its display name and limits (each defaulted when left out). */
export interface OfferedModel {
  /** The name OpenCode shows (default the agent's name for it, else the id). */
  name?: string;
  /** Its limits (default the plugin's {@link OpenCodeOptions.limit}). */
  limit?: ModelLimit;
}

/** What the plugin takes in `opencode.json`; every field is optional. */
export interface OpenCodeOptions {
  /** The provider's id, the part before the slash in `cursor/auto` (default `cursor`). */
  provider?: string;
  /** The provider's display name (default `Cursor (agentwire)`). */
  name?: string;
  /** The cursor-agent binary: a path, or a name looked up in `PATH` (default `cursor-agent`). */
  cursorBinary?: string;
  /**
   * How the agent is run: `stream-json` (the default) starts one cursor-agent process per
   * request, and OpenCode runs the tools the agent asks for; `acp` keeps one Agent Client
   * Protocol agent warm for every request (`<cursorBinary> acp`, or {@link acpCommand}),
   * to which OpenCode's tools are given as an MCP server on a loopback port the plugin
   * opens (with {@link conversations}; without, the agent runs its own tools and
   * OpenCode's are not offered to it).
   */
  protocol?: 'stream-json' | 'acp';
  /**
   * Conversations (default `true`): each request of an OpenCode session continues the
   * agent session (the cursor-agent chat, over `stream-json`; the ACP session, over `acp`)
   * that answered the one before, which is given only what is new (the tools' results,
   * your next message) instead of the whole history; over `acp`, OpenCode's tools reach
   * the agent as MCP tools. `false`: every request starts over with the whole history.
   */
  conversations?: boolean;
  /** `acp`: another ACP agent's command line, program first (`["gemini", "--acp"]`). */
  acpCommand?: string[];
  /** `acp`: the connection's settings (`permission`, `maxConcurrentPrompts`, timeouts, …). */
  acpConfig?: AcpConfig;
  /**
   * `acp`: the agent's own tools (its shell, file edits, web search, …), `keep` (the
   * default) or `off`, so that only OpenCode's tools are offered to its model: per session
   * for claude-agent-acp, at launch for codex-acp and Gemini CLI (`-c` overrides; a
   * policy file of the plugin's own, removed when OpenCode closes the plugin). An agent with no known way (cursor-agent) is refused with
   * a 400 naming this option.
   */
  nativeTools?: NativeTools;
  /** The directory the agent works in (default the one OpenCode was opened in). */
  workspace?: string;
  /**
   * The models to offer: ids, or ids with their names and limits. Default: the agent's own
   * list (`cursor-agent models`, or the ACP agent's), kept for {@link modelsCacheSeconds}.
   */
  models?: string[] | Record<string, OfferedModel>;
  /** The limits of every model not given its own (default `{ context: 200000, output: 32000 }`). */
  limit?: ModelLimit;
  /**
   * The model OpenCode's title and summary requests go to (its small model for this
   * provider), say a cheap one; default OpenCode's choice, which for this provider is the
   * session's own model. A `small_model` in `opencode.json` takes precedence.
   */
  smallModel?: string;
  /** How long the agent's model list is kept, in seconds (default 3,600; `0` lists at every start). */
  modelsCacheSeconds?: number;
  /** Answer from the bundled demo transcript: no agent, no account (the proxies' `--demo`). */
  demo?: boolean;
  /** The rest of agentwire's settings for every request (timeouts, tool strategy, …). */
  config?: Config;
}

/** The options with their defaults, and what is wrong with them. */
export interface Settings {
  readonly provider: string;
  readonly name: string;
  readonly cursorBinary: string;
  readonly protocol: 'stream-json' | 'acp';
  readonly acpCommand: readonly string[];
  readonly acpConfig: AcpConfig;
  readonly nativeTools: NativeTools | undefined;
  readonly workspace: string;
  readonly models: Record<string, OfferedModel> | undefined;
  readonly limit: Required<ModelLimit>;
  readonly smallModel: string | undefined;
  readonly modelsCacheSeconds: number;
  readonly demo: boolean;
  readonly conversations: boolean;
  readonly config: Config;
  /** Each mistake, as a sentence naming the option. */
  readonly problems: readonly string[];
}

const KNOWN = [
  'provider',
  'name',
  'cursorBinary',
  'protocol',
  'acpCommand',
  'acpConfig',
  'nativeTools',
  'workspace',
  'models',
  'limit',
  'smallModel',
  'modelsCacheSeconds',
  'demo',
  'conversations',
  'config',
] as const;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/** Reads the plugin's options (`undefined` when `opencode.json` gives none); `directory` is OpenCode's. */
export function readOptions(raw: unknown, directory: string): Settings {
  const problems: string[] = [];
  const options: Record<string, unknown> = isObject(raw) ? raw : {};
  if (raw !== undefined && !isObject(raw)) problems.push(`the plugin's options must be an object, not ${JSON.stringify(raw)}`);
  for (const key of Object.keys(options)) {
    if (!(KNOWN as readonly string[]).includes(key)) problems.push(`unknown option \`${key}\` (the options: ${KNOWN.join(', ')})`);
  }
  const text = (key: string, fallback: string): string => {
    const value = options[key];
    if (value === undefined) return fallback;
    if (typeof value === 'string' && value.length > 0) return value;
    problems.push(`option \`${key}\` must be a non-empty string, not ${JSON.stringify(value)}`);
    return fallback;
  };
  const provider = text('provider', 'cursor');
  if (provider.includes('/')) problems.push(`option \`provider\` must not hold a slash: ${JSON.stringify(provider)}`);
  const cursorBinary = text('cursorBinary', 'cursor-agent');
  let protocol: Settings['protocol'] = 'stream-json';
  if (options['protocol'] === 'acp' || options['protocol'] === 'stream-json') protocol = options['protocol'];
  else if (options['protocol'] !== undefined) problems.push(`option \`protocol\` must be "stream-json" or "acp", not ${JSON.stringify(options['protocol'])}`);
  let acpCommand: readonly string[] = [cursorBinary, 'acp'];
  const command = options['acpCommand'];
  if (Array.isArray(command) && command.length > 0 && command.every((part) => typeof part === 'string') && command[0] !== '') acpCommand = command;
  else if (command !== undefined) problems.push(`option \`acpCommand\` must be the command line as a list of strings, program first, not ${JSON.stringify(command)}`);
  const acpConfig = options['acpConfig'];
  if (acpConfig !== undefined && !isObject(acpConfig)) problems.push(`option \`acpConfig\` must be an object, not ${JSON.stringify(acpConfig)}`);
  const nativeTools = options['nativeTools'];
  if (nativeTools !== undefined && nativeTools !== 'keep' && nativeTools !== 'off') {
    problems.push(`option \`nativeTools\` must be "keep" or "off", not ${JSON.stringify(nativeTools)}`);
  } else if (nativeTools !== undefined && protocol !== 'acp') {
    problems.push('option `nativeTools` applies to `protocol: "acp"` only');
  }
  const config = options['config'];
  if (config !== undefined && !isObject(config)) problems.push(`option \`config\` must be an object, not ${JSON.stringify(config)}`);
  const limit = { context: 200_000, output: 32_000, ...readLimit(options['limit'], 'limit', problems) };
  const cacheSeconds = options['modelsCacheSeconds'];
  const cacheValid = cacheSeconds === 0 || isCount(cacheSeconds);
  if (cacheSeconds !== undefined && !cacheValid) {
    problems.push(`option \`modelsCacheSeconds\` must be a whole number of seconds, not ${JSON.stringify(cacheSeconds)}`);
  }
  const demo = options['demo'];
  if (demo !== undefined && typeof demo !== 'boolean') problems.push(`option \`demo\` must be true or false, not ${JSON.stringify(demo)}`);
  const conversations = options['conversations'];
  if (conversations !== undefined && typeof conversations !== 'boolean') problems.push(`option \`conversations\` must be true or false, not ${JSON.stringify(conversations)}`);
  const smallModel = options['smallModel'] === undefined ? undefined : text('smallModel', '');
  return {
    provider,
    name: text('name', protocol === 'acp' && command !== undefined ? `${acpCommand[0]} (agentwire)` : 'Cursor (agentwire)'),
    cursorBinary,
    protocol,
    acpCommand,
    acpConfig: isObject(acpConfig) ? (acpConfig as AcpConfig) : {},
    nativeTools: nativeTools === 'keep' || nativeTools === 'off' ? nativeTools : undefined,
    workspace: text('workspace', directory),
    models: readModels(options['models'], problems),
    limit,
    smallModel: smallModel === '' ? undefined : smallModel,
    modelsCacheSeconds: cacheValid ? cacheSeconds : 3_600,
    demo: demo === true,
    conversations: conversations !== false,
    config: isObject(config) ? (config as Config) : {},
    problems,
  };
}

function readLimit(value: unknown, key: string, problems: string[]): ModelLimit {
  if (value === undefined) return {};
  const limit: ModelLimit = {};
  if (!isObject(value)) {
    problems.push(`option \`${key}\` must be { "context": tokens, "output": tokens }, not ${JSON.stringify(value)}`);
    return limit;
  }
  for (const [field, tokens] of Object.entries(value)) {
    if (field !== 'context' && field !== 'output') problems.push(`option \`${key}.${field}\` is not a limit ("context" and "output" are)`);
    else if (isCount(tokens)) limit[field] = tokens;
    else problems.push(`option \`${key}.${field}\` must be a positive whole number of tokens, not ${JSON.stringify(tokens)}`);
  }
  return limit;
}

function readModels(value: unknown, problems: string[]): Record<string, OfferedModel> | undefined {
  if (value === undefined) return undefined;
  const models: Record<string, OfferedModel> = {};
  if (Array.isArray(value) && value.every((id) => typeof id === 'string' && id.length > 0)) {
    for (const id of value as string[]) models[id] = {};
    return models;
  }
  if (!isObject(value)) {
    problems.push(`option \`models\` must be a list of model ids or an object of them, not ${JSON.stringify(value)}`);
    return undefined;
  }
  for (const [id, model] of Object.entries(value)) {
    if (!isObject(model)) {
      problems.push(`option \`models.${id}\` must be an object ({ "name", "limit" }), not ${JSON.stringify(model)}`);
      continue;
    }
    const offered: OfferedModel = {};
    if (typeof model['name'] === 'string') offered.name = model['name'];
    else if (model['name'] !== undefined) problems.push(`option \`models.${id}.name\` must be a string`);
    if (model['limit'] !== undefined) offered.limit = readLimit(model['limit'], `models.${id}.limit`, problems);
    models[id] = offered;
  }
  return models;
}
