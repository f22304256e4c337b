"""What a cursor-agent transcript says an OpenAI client must end up with, read straight from
its lines (independently of agentwire), and the checks on what an openai-python client
received."""

import pathlib
import sys
from dataclasses import dataclass


# What a transcript says the client must end up with: the one reading for every Python
# test (tests/support/expected_answers.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "support"))
from expected_answers import Capture, capture  # noqa: E402,F401


def assert_usage(usage, want):
    assert usage is not None
    assert usage.prompt_tokens == want["prompt_tokens"]
    assert usage.completion_tokens == want["completion_tokens"]
    assert usage.total_tokens == want["total_tokens"]
    assert usage.prompt_tokens_details.cached_tokens == want["cached_tokens"]
    # Fields the SDK's models do not declare are kept, readable as attributes.
    assert usage.prompt_tokens_details.cache_write_tokens == want["cache_write_tokens"]
    if want["cost"] is None:
        assert getattr(usage, "cost", None) is None, "a cost is never invented"
    else:
        assert usage.cost == want["cost"]


@dataclass
class Drained:
    """A raw chat.completion.chunk stream of one answer, reduced to what the tests compare."""

    text: str
    reasoning: str
    finishes: list  # every finish_reason, in order
    usages: list  # every usage object (each on its own choices: [] chunk)
    roles: list  # (number of the choice chunk, counted from 1, role) for each role delta


def drain(stream, model):
    """Reads a raw stream of an agent-mode answer, checking the invariants of every chunk."""
    drained, ids, choice_chunks = Drained("", "", [], [], []), set(), 0
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        assert chunk.model == model
        ids.add(chunk.id)
        if chunk.usage is not None:
            assert chunk.choices == [], "usage rides on its own choices: [] chunk"
            drained.usages.append(chunk.usage)
        for choice in chunk.choices:
            assert choice.index == 0
            assert not drained.finishes, "nothing follows the finish chunk but usage"
            choice_chunks += 1
            if choice.delta.role is not None:
                drained.roles.append((choice_chunks, choice.delta.role))
            drained.text += choice.delta.content or ""
            drained.reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            assert not choice.delta.tool_calls, "agent mode never emits tool_calls"
            if choice.finish_reason is not None:
                drained.finishes.append(choice.finish_reason)
    assert len(ids) == 1 and next(iter(ids)).startswith("chatcmpl-")
    return drained
