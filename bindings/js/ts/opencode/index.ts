/**
 * agentwire as an OpenCode plugin: a provider (`cursor` by default) whose requests are
 * answered in OpenCode's own process by agentwire, with cursor-agent (one process per
 * request) or a warm ACP agent behind it; no proxy, no port. Installed by one line of
 * `opencode.json`:
 *
 * ```json
 * { "plugin": [["agentwire", { "cursorBinary": "cursor-agent" }]], "model": "cursor/auto" }
 * ```
 *
 * Conversations are on: each request continues the agent session that answered the one
 * before with only what is new, and over ACP OpenCode's tools are given to the agent as an
 * MCP server on a loopback port.
 *
 * The models are the agent's own (`cursor-agent models`), kept in a file for an hour;
 * OpenCode's title and summary requests can go to a cheaper one (`smallModel`). A failure
 * no retry can help (the agent not installed, not logged in, an unknown model, a used-up
 * usage limit) is answered so that OpenCode shows it once, in words saying what to do,
 * instead of retrying it. {@link OpenCodeOptions} lists the options.
 * @module
 */

import { errorReply } from '../reply.js';
import { AcpAgent } from '../node/acp.js';
import { createAgentFetch } from '../node/index.js';
import { offeredModels } from './models.js';
import { readOptions } from './options.js';

export type { ModelLimit, OfferedModel, OpenCodeOptions } from './options.js';
export type { OpenCodeModel } from './models.js';

/** What OpenCode hands a plugin; this one reads the directory OpenCode was opened in. */
export interface PluginInput {
  readonly directory: string;
}

/** A provider in OpenCode's configuration, the part this plugin writes. */
export interface ProviderConfig {
  npm?: string;
  name?: string;
  options?: { [key: string]: unknown };
  models?: { [id: string]: object };
}

/** OpenCode's configuration, the part this plugin reads and writes. */
export interface OpenCodeConfig {
  model?: string;
  small_model?: string;
  provider?: { [id: string]: ProviderConfig };
  agent?: { [name: string]: { model?: string } | undefined };
}

/** The hooks the plugin gives OpenCode. */
export interface AgentwireHooks {
  /** Adds the provider, its models and its `fetch` to OpenCode's configuration. */
  config(config: OpenCodeConfig): Promise<void>;
  /** Names the provider's small model (title and summary requests): the `smallModel` option. */
  'experimental.provider.small_model'(input: { provider: { id: string; models: { [id: string]: unknown } } }, output: { model?: unknown }): Promise<void>;
  /** Stops a warm ACP agent. */
  dispose(): Promise<void>;
}

/** Never contacted: the provider's `fetch` answers every request itself. */
const BASE_URL = 'http://agentwire.invalid/v1';

/**
 * The plugin (OpenCode's `Plugin`): `options` are the second element of its entry in
 * `opencode.json`'s `plugin` list ({@link OpenCodeOptions}). A mistake in them does not
 * stop OpenCode: the provider is added all the same, and each request is answered with a
 * 400 naming it.
 */
export async function AgentwirePlugin(input: PluginInput, options?: { [key: string]: unknown }): Promise<AgentwireHooks> {
  const settings = readOptions(options, input.directory);
  const problems = [...settings.problems];
  let acp: AcpAgent | undefined;
  if (settings.protocol === 'acp' && !settings.demo && problems.length === 0) {
    try {
      acp = new AcpAgent({
        command: settings.acpCommand[0]!,
        args: settings.acpCommand.slice(1),
        config: { ...settings.acpConfig, cwd: settings.acpConfig.cwd ?? settings.workspace },
        conversations: settings.conversations,
        ...(settings.nativeTools === undefined ? {} : { nativeTools: settings.nativeTools }),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // The driver names `nativeTools` in what it refuses of that option.
      problems.push(`option \`${settings.nativeTools !== undefined && message.includes('nativeTools') ? 'nativeTools' : 'acpConfig'}\`: ${message}`);
    }
  }
  const fetch =
    problems.length > 0
      ? refusing(problems)
      : withoutClientTools(
          createAgentFetch({
            config: { ...settings.config, cursorBinary: settings.cursorBinary, workspace: settings.workspace },
            demo: settings.demo,
            retryAdvice: 'status',
            conversations: settings.conversations,
            ...(acp === undefined ? {} : { acpAgent: acp }),
          }),
          acp !== undefined && !settings.conversations,
        );
  return {
    async config(config) {
      const models = await offeredModels(settings, acp, modelsNamed(config, settings.provider, settings.smallModel));
      config.provider ??= {};
      const own = config.provider[settings.provider] ?? {};
      config.provider[settings.provider] = {
        ...own,
        npm: '@ai-sdk/openai-compatible',
        name: own.name ?? settings.name,
        options: { ...own.options, baseURL: BASE_URL, fetch },
        models: { ...models, ...own.models },
      };
    },
    async 'experimental.provider.small_model'({ provider }, output) {
      if (settings.smallModel === undefined || provider.id !== settings.provider) return;
      const model = provider.models[settings.smallModel];
      if (model !== undefined) output.model = model;
    },
    async dispose() {
      await acp?.close();
    },
  };
}

/** The module OpenCode loads (its `PluginModule`): the plugin, under the package's name. */
const plugin = { id: 'agentwire', server: AgentwirePlugin };
export default plugin;

/** The model ids `opencode.json` names for `provider` (its `model`, `small_model`, agents' models), and the small model. */
function modelsNamed(config: OpenCodeConfig, provider: string, smallModel: string | undefined): string[] {
  const named = [config.model, config.small_model, ...Object.values(config.agent ?? {}).map((agent) => agent?.model)];
  const ids = named.flatMap((model) => (typeof model === 'string' && model.startsWith(`${provider}/`) ? [model.slice(provider.length + 1)] : []));
  if (smallModel !== undefined) ids.push(smallModel);
  return [...new Set(ids)];
}

/**
 * A warm ACP agent without conversations runs its own tools and is refused the client's:
 * OpenCode's tool list (sent with every request) is dropped from the body. With them,
 * the tools reach the agent as an MCP server.
 */
function withoutClientTools(fetch: typeof globalThis.fetch, acp: boolean): typeof globalThis.fetch {
  if (!acp) return fetch;
  return async (input, init) => {
    const request = new Request(input instanceof Request || input instanceof URL ? input : new URL(input, BASE_URL), init);
    if (request.method !== 'POST') return fetch(request);
    let body = await request.text();
    try {
      const json: unknown = JSON.parse(body);
      if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
        const { tools: _tools, tool_choice: _choice, parallel_tool_calls: _parallel, ...rest } = json as Record<string, unknown>;
        body = JSON.stringify(rest);
      }
    } catch {
      // Not JSON: the fetch answers it with the route's 400.
    }
    return fetch(request.url, { method: 'POST', headers: request.headers, body, signal: request.signal });
  };
}

/** A fetch that answers every request with a 400 naming the options' mistakes. */
function refusing(problems: readonly string[]): typeof globalThis.fetch {
  const message = `agentwire's OpenCode plugin cannot run with these options: ${problems.join('; ')}. Fix them in opencode.json ("plugin": [["agentwire", { … }]]).`;
  return async () => {
    const reply = errorReply('chat-completions', 'invalidRequest', message);
    return new Response(reply.body.slice(), { status: reply.status, headers: reply.headers });
  };
}
