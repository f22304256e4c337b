/**
 * The models the plugin offers OpenCode: the agent's own list (`cursor-agent models`, or the
 * ACP agent's first session's), kept in a file for a while so that OpenCode's start does not
 * wait for the agent each time; the ones `opencode.json` names for this provider besides;
 * and each with the name and limits OpenCode shows.
 * @module
 */

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type ModelEntry, parseModels } from '../models.js';
import type { AcpAgent } from '../node/acp.js';
import { DEMO_MODELS } from '../node/demo.js';
import { ProcessGroup } from '../node/group.js';
import type { ModelLimit, OfferedModel, Settings } from './options.js';

/** How long a listing may take before it is given up (its process group is stopped). */
const LIST_TIMEOUT_MS = 15_000;

/** A model as OpenCode's configuration describes it. */
export interface OpenCodeModel {
  name: string;
  tool_call: boolean;
  reasoning: boolean;
  limit: Required<ModelLimit>;
}

/** A model id and the name to show. */
interface Listed {
  id: string;
  name: string;
}

/** What the cache file holds. */
interface CacheFile {
  /** What was listed: the protocol and the command. */
  key: string;
  /** When, in Unix milliseconds. */
  listedAt: number;
  models: Listed[];
}

/**
 * The models to offer: the options' own, else the agent's list (from the cache while it is
 * fresh, else listed now, else a stale cache, else `auto` alone, which lets a request reach
 * the agent and fail with the reason); then every model `wanted` names that the list lacks,
 * shown as unknown to the agent, so that a request for it gets the agent's own answer.
 */
export async function offeredModels(settings: Settings, acp: AcpAgent | undefined, wanted: readonly string[]): Promise<Record<string, OpenCodeModel>> {
  const listed = settings.models !== undefined ? given(settings.models) : await agentModels(settings, acp);
  const offered: Record<string, OpenCodeModel> = {};
  const agent = settings.protocol === 'acp' ? settings.acpCommand[0]! : settings.demo ? 'the demo' : settings.cursorBinary;
  const entry = (name: string, limit: ModelLimit | undefined): OpenCodeModel => ({
    name,
    // Over ACP without conversations the agent runs its own tools: OpenCode's are not
    // offered to it.
    tool_call: settings.protocol === 'stream-json' || settings.conversations,
    reasoning: true,
    limit: { ...settings.limit, ...limit },
  });
  for (const model of listed) offered[model.id] = entry(model.name, settings.models?.[model.id]?.limit);
  for (const id of wanted) {
    if (!(id in offered)) offered[id] = entry(`${id} (not listed by ${agent})`, undefined);
  }
  return offered;
}

/** The models the options name, in their order. */
function given(models: Record<string, OfferedModel>): Listed[] {
  return Object.entries(models).map(([id, model]) => ({ id, name: model.name ?? id }));
}

/** The agent's list: cached, listed now, or the fallback. */
async function agentModels(settings: Settings, acp: AcpAgent | undefined): Promise<Listed[]> {
  if (settings.demo) return parseModels(DEMO_MODELS).map(named);
  const key = JSON.stringify(settings.protocol === 'acp' ? ['acp', ...settings.acpCommand] : ['stream-json', settings.cursorBinary, settings.config.cliConfigDir ?? null]);
  const file = join(cacheDir(), `opencode-models-${createHash('sha256').update(key).digest('hex').slice(0, 16)}.json`);
  const cached = readCache(file, key);
  if (cached !== undefined && Date.now() - cached.listedAt < settings.modelsCacheSeconds * 1000) return cached.models;
  let models: Listed[] = [];
  try {
    models = acp !== undefined ? (await withDeadline(acp.listModels())).map((id) => ({ id, name: id })) : (await listCursorModels(settings)).map(named);
  } catch {
    // The request will say why (not installed, not logged in): its error reaches the user.
  }
  if (models.length > 0) {
    writeCache(file, { key, listedAt: Date.now(), models });
    return models;
  }
  return cached?.models ?? [{ id: 'auto', name: 'Auto' }];
}

const named = (entry: ModelEntry): Listed => ({ id: entry.id, name: entry.name });

/** `cursor-agent models`, its process group stopped past the deadline. */
function listCursorModels(settings: Settings): Promise<ModelEntry[]> {
  const env = { ...process.env };
  if (typeof settings.config.cliConfigDir === 'string') env['CURSOR_CONFIG_DIR'] = settings.config.cliConfigDir;
  return new Promise((resolve, reject) => {
    let group: ProcessGroup;
    try {
      group = new ProcessGroup(settings.cursorBinary, ['models'], env, undefined, 1_000);
    } catch (error) {
      reject(error);
      return;
    }
    const child = group.child;
    const out: Buffer[] = [];
    const timer = setTimeout(() => group.stop(), LIST_TIMEOUT_MS);
    child.stdin?.end();
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.resume();
    child.on('error', (error) => {
      if (child.pid !== undefined) return; // a failed kill
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      group.reaped();
      if (code === 0) resolve(parseModels(Buffer.concat(out)));
      else reject(new Error(`${settings.cursorBinary} models ended with ${code ?? 'a signal'}`));
    });
  });
}

function withDeadline<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the agent listed no models in time')), LIST_TIMEOUT_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** `$XDG_CACHE_HOME/agentwire`, else `~/.cache/agentwire`. */
function cacheDir(): string {
  const base = process.env['XDG_CACHE_HOME'];
  return join(base !== undefined && base !== '' ? base : join(homedir(), '.cache'), 'agentwire');
}

function readCache(file: string, key: string): CacheFile | undefined {
  try {
    const cache = JSON.parse(readFileSync(file, 'utf8')) as CacheFile;
    const valid = cache.key === key && typeof cache.listedAt === 'number' && Array.isArray(cache.models);
    return valid && cache.models.every((m) => typeof m?.id === 'string' && typeof m?.name === 'string') ? cache : undefined;
  } catch {
    return undefined;
  }
}

/** Written whole (a temporary file renamed over it): a reader never sees half a list. */
function writeCache(file: string, cache: CacheFile): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(temporary, JSON.stringify(cache));
    renameSync(temporary, file);
  } catch {
    // A cache that cannot be written only means listing again next time.
    rmSync(temporary, { force: true });
  }
}
