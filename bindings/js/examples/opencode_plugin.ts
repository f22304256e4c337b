// An OpenCode plugin that adds cursor-agent as a provider answered in-process by agentwire:
// no proxy server, no port. OpenCode runs plugins in its own (Bun) process, so the
// provider's `fetch` here spawns cursor-agent directly, one process group per request.
//
// Install agentwire where OpenCode resolves the plugin's imports (for a project plugin,
// `.opencode/package.json`), put this file in `.opencode/plugin/`, and pick the model:
// `opencode run -m cursor/auto "…"`.
import type { Plugin } from '@opencode-ai/plugin';
import { createAgentFetch } from 'agentwire/node';

export const CursorAgentProvider: Plugin = async ({ directory }) => {
  // Every run works in the project OpenCode was opened in.
  const fetch = createAgentFetch({ config: { workspace: directory } });
  return {
    async config(config) {
      config.provider ??= {};
      config.provider['cursor'] = {
        npm: '@ai-sdk/openai-compatible',
        name: 'Cursor (agentwire)',
        // The base URL is never contacted: the fetch answers every request itself.
        options: { baseURL: 'http://agentwire.invalid/v1', fetch },
        models: {
          auto: { name: 'Auto', tool_call: true, reasoning: true, limit: { context: 200_000, output: 32_000 } },
        },
      };
    },
  };
};
