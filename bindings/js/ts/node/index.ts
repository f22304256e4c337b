/**
 * agentwire for Node and Bun adapters: the driver that spawns the agent and runs the loop
 * ({@link AgentRun}), one warm ACP agent serving many requests ({@link AcpAgent}), and a `fetch` that answers the OpenAI Chat Completions and Responses
 * APIs and the Anthropic Messages API in-process ({@link createAgentFetch}).
 * @module
 */

// Loads the WebAssembly module (Node, Bun and Deno read it synchronously).
import '../index.js';

export { AcpAgent, type AcpAgentOptions, AcpTurn, type AcpTurnOptions } from './acp.js';
export { Conversations, MAX_CLIENT_ID, callerOf } from './conversations.js';
export { type AgentFetchOptions, createAgentFetch } from './fetch.js';
export { AgentRun, type AgentRunOptions, type ProcessExit } from './run.js';
