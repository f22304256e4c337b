// What a cursor-agent transcript says a client must end up with, read straight from its
// lines (independently of agentwire): the one reading of it for every JavaScript test (the
// AI SDK judges in tests/clients/node, the package's suite in bindings/js/test), with the
// rule of the Rust tests' `support::expected_result`: an error result (`is_error: true`, or a
// subtype other than `success`) is a failure, whose text is never the answer.
import { readFileSync } from 'node:fs';

/** The transcript's lines, each with its newline. */
export const lines = (path) => readFileSync(path, 'utf8').split(/(?<=\n)/);

/** A line as a JSON object, or null. */
export function parse(line) {
  try {
    const v = JSON.parse(line);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * What the transcript says: `expected`, the answer (`result.result`) or null when the run
 * failed; `thinking`, whether the CLI streamed thinking; `usage`, the counts of a
 * successful result ({ input, output, cacheRead, cost }) or null.
 */
export function capture(path) {
  const events = lines(path).map(parse).filter(Boolean);
  const found = events.find((e) => e.type === 'result');
  const failed = found && (found.is_error === true || (found.subtype ?? 'success') !== 'success');
  const result = failed ? null : found;
  const counts = result && result.usage && typeof result.usage === 'object' ? result.usage : null;
  const prompt = counts ? (counts.inputTokens ?? 0) + (counts.cacheReadTokens ?? 0) + (counts.cacheWriteTokens ?? 0) : 0;
  return {
    expected: result ? (result.result ?? '') : null,
    thinking: events.some((e) => e.type === 'thinking' && e.subtype === 'delta' && e.text),
    usage: counts && { input: prompt, output: counts.outputTokens ?? 0, cacheRead: counts.cacheReadTokens ?? 0, cost: found.cost ?? counts.cost },
  };
}

/** The answer a client must see for the transcript, or null when the run failed. */
export const expectedAnswer = (path) => capture(path).expected;
