/**
 * agentwire for Node and Bun adapters: the driver that spawns the agent and runs the loop
 * ({@link AgentRun}), and a `fetch` that answers the OpenAI API in-process
 * ({@link createAgentFetch}).
 * @module
 */

// Loads the WebAssembly module (Node, Bun and Deno read it synchronously).
import '../index.js';

export { type AgentFetchOptions, createAgentFetch } from './fetch.js';
export { AgentRun, type AgentRunOptions, type ProcessExit } from './run.js';
