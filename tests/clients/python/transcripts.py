"""What a cursor-agent transcript says an OpenAI client must end up with, read straight from
its lines (independently of agentwire), and the checks on the usage a client received."""

import functools
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Capture:
    """What a transcript says the client must end up with."""

    expected: "str | None"  # `result.result`, or None when the run has no result (a failure)
    usage: "dict | None"  # the OpenAI usage the CLI's counts map to, or None when unreported
    thinking: bool  # the CLI streamed thinking, so the client must see reasoning
    lines: tuple  # the raw lines, to build truncated variants


@functools.lru_cache(maxsize=None)
def capture(path):
    expected, usage, thinking = None, None, False
    lines = tuple(path.read_text(encoding="utf-8").splitlines(keepends=True))
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "thinking" and event.get("subtype") == "delta" and event.get("text"):
            thinking = True
        if event.get("type") == "result" and expected is None:
            expected = event.get("result") or ""
            counts = event.get("usage")
            if isinstance(counts, dict):
                prompt = counts.get("inputTokens", 0) + counts.get("cacheReadTokens", 0) + counts.get("cacheWriteTokens", 0)
                completion = counts.get("outputTokens", 0)
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "cached_tokens": counts.get("cacheReadTokens", 0),
                }
    return Capture(expected, usage, thinking, lines)


def assert_usage(usage, want):
    assert usage is not None
    assert usage.prompt_tokens == want["prompt_tokens"]
    assert usage.completion_tokens == want["completion_tokens"]
    assert usage.total_tokens == want["total_tokens"]
    assert usage.prompt_tokens_details.cached_tokens == want["cached_tokens"]
