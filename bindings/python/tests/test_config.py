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


@pytest.mark.parametrize(
    "given, expected",
    [
        ("native", aw.ToolStrategy.NATIVE),
        ("read-only", aw.ToolStrategy.READ_ONLY),
        ("ENVELOPE_ONLY", aw.ToolStrategy.ENVELOPE_ONLY),
        (aw.ToolStrategy.NATIVE, aw.ToolStrategy.NATIVE),
        (2, aw.ToolStrategy.ENVELOPE_ONLY),
    ],
)
def test_enum_fields_take_their_names(given: object, expected: aw.ToolStrategy):
    config = aw.Config(tool_strategy=given, reasoning="reasoning-content")  # type: ignore[arg-type]
    assert config.tool_strategy is expected
    assert config.reasoning is aw.ReasoningField.REASONING_CONTENT
    config.reasoning = "omitted"
    assert config.reasoning is aw.ReasoningField.OMITTED


def test_a_wrong_enum_value_names_the_valid_ones():
    config = aw.Config()
    for wrong in ("nativ", 7, ""):
        with pytest.raises(
            aw.InvalidEnumError, match="'read_only', 'native', 'envelope_only'"
        ) as info:
            config.tool_strategy = wrong  # type: ignore[assignment]
        assert isinstance(info.value, ValueError)
    with pytest.raises(aw.InvalidEnumError, match="'reasoning_content', 'reasoning', 'omitted'"):
        aw.Config(reasoning="thinking")
    with pytest.raises(TypeError, match="ToolStrategy"):
        config.tool_strategy = 1.0  # type: ignore[assignment]
    assert config.tool_strategy is aw.ToolStrategy.READ_ONLY


def test_fields_are_typed_at_run_time_too():
    config = aw.Config()
    with pytest.raises(TypeError, match="keep_alive_ms must be an int"):
        config.keep_alive_ms = "5"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="keep_alive_ms must be an int"):
        config.keep_alive_ms = 1.5  # type: ignore[assignment]
    with pytest.raises(TypeError, match="allow_force must be a bool"):
        aw.Config(allow_force=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="workspace must be a str"):
        config.workspace = b"/srv"  # type: ignore[assignment]
    # A misspelt field is an error, not a new attribute that changes nothing.
    with pytest.raises(AttributeError, match="no field 'keep_alive'.*keep_alive_ms"):
        config.keep_alive = 5  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="keep_alive"):
        aw.Config(keep_alive=5)  # type: ignore[call-arg]
    assert config.as_dict() == aw.Config().as_dict()
