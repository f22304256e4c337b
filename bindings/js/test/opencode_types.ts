// `tsc --strict` over this file (tsconfig.examples.json) checks the package's OpenCode plugin
// against OpenCode's own plugin API, `@opencode-ai/plugin` of the pinned version: the module
// is a `PluginModule`, its `server` a `Plugin`, and its options type reads what
// `opencode.json` may hold.
import type { Plugin, PluginModule } from '@opencode-ai/plugin';
import agentwire, { AgentwirePlugin, type OpenCodeOptions } from 'agentwire/opencode';
import server from 'agentwire/server';

export const module: PluginModule = agentwire;
export const loaded: PluginModule = server;
export const plugin: Plugin = AgentwirePlugin;
export const options: OpenCodeOptions = {
  cursorBinary: 'cursor-agent',
  protocol: 'acp',
  acpCommand: ['gemini', '--acp'],
  models: { 'gpt-5': { name: 'GPT-5', limit: { context: 400_000 } } },
  limit: { output: 32_000 },
  smallModel: 'auto',
  modelsCacheSeconds: 0,
  config: { idleTimeoutMs: 60_000 },
};
