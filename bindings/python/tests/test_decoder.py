"""The Decoder from Python: the same events as the Rust decoder, as typed dataclasses."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentwire as aw
from conftest import FIXTURES, real_captures, transcripts
from drive import decode


@pytest.mark.parametrize("transcript", transcripts(), ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_events_are_the_rust_events(rust, transcript: Path, chunk: int):
    _, text = decode(transcript.read_bytes(), chunk)
    assert text == rust.events(transcript, chunk)


@pytest.mark.skipif(not real_captures(), reason="../shared/fixtures absent")
@pytest.mark.parametrize("transcript", real_captures(), ids=lambda p: p.name)
def test_real_captures_give_the_rust_events(rust, transcript: Path):
    _, text = decode(transcript.read_bytes())
    assert text == rust.events(transcript)


def test_typed_events():
    events, _ = decode((FIXTURES / "parallel_tools.jsonl").read_bytes())
    kinds = {type(e) for e in events}
    assert {aw.TextDelta, aw.AgentActivity, aw.Usage, aw.Finish} <= kinds
    started = next(e for e in events if isinstance(e, aw.AgentActivity))
    assert started.phase == aw.ActivityPhase.STARTED and started.outcome is None
    assert started.tool == "shell" and started.arguments is not None
    rejected = [e for e in events if isinstance(e, aw.AgentActivity) and not e.started_seen]
    assert rejected and rejected[0].outcome == aw.ToolOutcome.REJECTED
    usage = next(e for e in events if isinstance(e, aw.Usage))
    assert usage.prompt_tokens == usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    assert usage.total_tokens == usage.prompt_tokens + usage.output_tokens
    assert events[-1] == aw.Finish(aw.FinishReason.STOP)


def test_usage_counts_cache_writes_into_the_prompt():
    line = (
        b'{"type":"result","subtype":"success","result":"","usage":{"inputTokens":3,'
        b'"outputTokens":4,"cacheReadTokens":5,"cacheWriteTokens":6}}\n'
    )
    with aw.Decoder() as decoder:
        decoder.push_stdout(line)
        usage = next(e for e in decoder.events() if isinstance(e, aw.Usage))
    assert (usage.cache_write_tokens, usage.prompt_tokens, usage.total_tokens) == (6, 14, 18)
    assert usage.reasoning_tokens is None


def test_failure_stats_and_misuse():
    config = aw.Config(decoder_max_line_len=64)
    with aw.Decoder(config) as decoder:
        decoder.push_stdout(b"not json\n" + b"{" + b"x" * 100 + b"}\n")
        decoder.push_eof()
        events = list(decoder.events())
        assert isinstance(events[-1], aw.Failed) and events[-1].message
        stats = decoder.stats
        assert stats.non_json == 1 and stats.bad_lines == 1 and stats.results == 0
        assert decoder.is_finished and decoder.session_id is None and decoder.model is None
        decoder.push_eof()
        with pytest.raises(aw.AfterEofError, match="after its end"):
            decoder.push_stdout(b"{}\n")
    with pytest.raises(aw.ClosedError):
        decoder.poll_event()


def test_bytes_like_inputs():
    transcript = (FIXTURES / "multibyte.jsonl").read_bytes()
    expected, _ = decode(transcript)
    for data in (bytearray(transcript), memoryview(transcript)):
        with aw.Decoder() as decoder:
            decoder.push_stdout(data)
            decoder.push_eof()
            assert list(decoder.events()) == expected
    with aw.Decoder() as decoder:
        with pytest.raises(TypeError, match="bytes-like"):
            decoder.push_stdout("{}")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config must be a Config"):
        aw.Decoder(64)  # type: ignore[arg-type]
