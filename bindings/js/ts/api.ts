/**
 * Everything the package exports, whichever way its module is loaded.
 * @module
 */

import { version as rawVersion } from '../wasm/agentwire_js.js';
import { requireLoaded } from './module.js';

export { AcpConnection } from './acp.js';
export type { AcpConfig, AcpConnectionOptions, AcpDecision, AcpJson, AcpPermission, AcpRestart, McpAdmission, NativeTools, TurnOptions } from './acp.js';
export { Bridge, DIALECTS } from './bridge.js';
export type { Body, BridgeOptions, BridgeOutput, ConversationOptions, Dialect, End, Head, Invocation, Respawn, StopAgent } from './bridge.js';
export { defaultConfig } from './config.js';
export type { AgentExit } from './inputs.js';
export type { Config, DecoderLimits, LoopGuardLimits, ReasoningField, RequestLimits, ResolvedConfig, ToolStrategy } from './config.js';
export { Decoder } from './decoder.js';
export { AgentwireError } from './errors.js';
export type { ErrorCode, ErrorKind } from './errors.js';
export { launchWithoutNativeTools } from './launch.js';
export type { AgentLaunch, LaunchFile } from './launch.js';
export type {
  AgentActivity,
  AgentEvent,
  DecoderStats,
  Failed,
  FailureKind,
  Finish,
  FinishReason,
  Progress,
  ReasoningDelta,
  TextDelta,
  ToolCall,
  ToolOutcome,
  Usage,
} from './events.js';
export { McpServer } from './mcp.js';
export type {
  McpBody,
  McpCall,
  McpCallLimit,
  McpCancelReason,
  McpCancelled,
  McpClosed,
  McpConfig,
  McpEnd,
  McpEvent,
  McpHead,
  McpHttpRequest,
  McpOutput,
  McpServerOptions,
  McpTool,
} from './mcp.js';
export { isLoaded } from './module.js';
export { parseModels } from './models.js';
export type { ModelEntry } from './models.js';
export { Registry } from './registry.js';
export type { Caller, ConversationKeys, FreshReason, RegistryConfig, RegistryStats, ReleaseReason, Released } from './registry.js';
export { countTokens, errorReply } from './reply.js';
export type { ErrorReplyKind, Reply } from './reply.js';
export { DecoderStream, decodeStdout } from './streams.js';

/** The library's version (the core's, which the package shares). */
export function version(): string {
  requireLoaded();
  return rawVersion();
}
