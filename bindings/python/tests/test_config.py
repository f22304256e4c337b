"""Config from Python: keyword arguments for every field, the library's defaults, and bad
values refused with the library's errors."""

from __future__ import annotations

import pytest

import agentwire as aw

VALUES = {
    "cursor_binary": "/opt/cursor-agent",
    "workspace": "/srv/ws",
    "cli_config_dir": "/tmp/cfg",
    "allow_force": True,
    "tool_strategy": aw.ToolStrategy.NATIVE,
    "partial_output": False,
    "reasoning": aw.ReasoningField.OMITTED,
    "activity_notes": False,
    "head_deadline_ms": 1,
    "keep_alive_ms": 2,
    "idle_timeout_ms": 3,
    "max_duration_ms": 4,
    "batch_window_ms": 5,
    "stderr_tail_bytes": 6,
    "max_envelope_bytes": 7,
    "decoder_max_line_len": 8,
    "decoder_max_notes": 9,
    "request_max_body_bytes": 10,
    "request_max_messages": 11,
    "request_max_tools": 12,
    "request_reject_attachments": True,
    "loop_guard_max_failed_repeats": 13,
    "loop_guard_max_repeats": 14,
}


def test_every_field_is_a_keyword_argument():
    assert set(VALUES) == set(aw.Config.FIELDS)
    with aw.Config(**VALUES) as config:
        assert config.as_dict() == VALUES


def test_defaults_are_the_library_defaults():
    config = aw.Config()
    assert config.cursor_binary == "cursor-agent"
    assert config.workspace is None and config.cli_config_dir is None
    assert config.max_duration_ms is None
    assert config.tool_strategy is aw.ToolStrategy.READ_ONLY
    assert config.reasoning is aw.ReasoningField.REASONING_CONTENT
    assert config.idle_timeout_ms == 20 * 60 * 1000
    assert config.partial_output and config.activity_notes and not config.allow_force


def test_optional_fields_clear_with_none():
    config = aw.Config(workspace="/x", max_duration_ms=10)
    config.workspace = None
    config.max_duration_ms = None
    assert config.workspace is None and config.max_duration_ms is None


def test_bad_values_are_refused_and_leave_the_field():
    config = aw.Config()
    with pytest.raises(aw.InteriorNulError, match="NUL"):
        config.cursor_binary = "a\0b"
    with pytest.raises(aw.InvalidUtf8Error, match="UTF-8") as info:
        config.workspace = "\ud800"
    assert isinstance(info.value, ValueError)
    with pytest.raises(aw.InvalidEnumError):
        config.tool_strategy = 99  # type: ignore[assignment]
    with pytest.raises(TypeError):
        config.keep_alive_ms = None  # type: ignore[assignment]
    with pytest.raises(TypeError):
        aw.Config(no_such_field=1)
    with pytest.raises(OverflowError):
        config.keep_alive_ms = -1
    assert config.cursor_binary == "cursor-agent"
    assert config.workspace is None
    assert config.tool_strategy is aw.ToolStrategy.READ_ONLY


def test_enums_mirror_the_header():
    from agentwire._native import lib

    assert aw.ToolStrategy.ENVELOPE_ONLY == lib.AW_TOOL_STRATEGY_ENVELOPE_ONLY
    assert aw.ReasoningField.REASONING == lib.AW_REASONING_FIELD_REASONING
