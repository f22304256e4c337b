"""What a cursor-agent transcript says a client must end up with, read straight from its
lines (independently of agentwire): the one reading of it for every Python test (the real
clients' suites in tests/clients/python, the package's in bindings/python/tests), with the
rule of the Rust tests' `support::expected_result`: an error result (`is_error: true`, or a
subtype other than `success`) is a failure, whose text is never the answer."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Capture:
    """What a transcript says the client must end up with."""

    expected: "str | None"  # `result.result`, or None when the run failed (no result, or an error result)
    usage: "dict | None"  # the OpenAI usage the CLI's counts map to, or None when unreported
    thinking: bool  # the CLI streamed thinking, so the client must see reasoning
    lines: tuple  # the raw lines, to build truncated variants


@functools.lru_cache(maxsize=None)
def capture(path: Path) -> Capture:
    expected, usage, thinking = None, None, False
    lines = tuple(Path(path).read_text(encoding="utf-8").splitlines(keepends=True))
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
            if event.get("is_error") is True or event.get("subtype", "success") != "success":
                break  # an error result is a failure: its text is never the answer
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
                    "cache_write_tokens": counts.get("cacheWriteTokens", 0),
                    "cost": event.get("cost", counts.get("cost")),
                }
    return Capture(expected, usage, thinking, lines)


def expected_answer(path: Path) -> "str | None":
    """The answer a client must see for the transcript, or None when the run failed."""
    return capture(path).expected
