"""The package's enums are the C ABI's: each lists exactly the values of its C enum, under
the names of the header's enumerators, and those spell the library's own names (which the
library's tests compare with the Rust enums)."""

from __future__ import annotations

import enum
from typing import Any, Callable, Dict, Optional, Type

import pytest

import agentwire as aw
from agentwire._lib import choice
from agentwire._native import ffi, lib

#: Every enum of the package, its C enum, and the C function naming its values (when the
#: ABI has one).
ENUMS = [
    (aw.ErrorKind, "aw_error_kind", lib.aw_error_kind_name),
    (aw.FailureKind, "aw_failure_kind", lib.aw_failure_kind_name),
    (aw.FinishReason, "aw_finish_reason", lib.aw_finish_reason_name),
    (aw.ToolOutcome, "aw_tool_outcome", lib.aw_tool_outcome_name),
    (aw.ProgressKind, "aw_progress_kind", lib.aw_progress_kind_name),
    (aw.ActivityPhase, "aw_activity_phase", None),
    (aw.Dialect, "aw_dialect", lib.aw_dialect_name),
    (aw.PermissionChoice, "aw_permission_choice", None),
    (aw.NativeTools, "aw_native_tools", lib.aw_native_tools_name),
    (aw.ToolStrategy, "aw_tool_strategy", None),
    (aw.ReasoningField, "aw_reasoning_field", None),
    (aw.FreshReason, "aw_fresh_reason", lib.aw_fresh_reason_name),
    (aw.McpCancelReason, "aw_mcp_cancel_reason", None),
]

#: C-only values with no member: an outcome of a call that has not ended, the cancel
#: reason of an event that is no cancellation.
NOT_MEMBERS = {"AW_TOOL_OUTCOME_NONE", "AW_MCP_CANCEL_REASON_NONE"}


def c_enum(name: str) -> Dict[str, int]:
    """The enumerators of ``enum <name>`` in the header, after their prefix."""
    prefix = name.upper() + "_"
    elements: Dict[int, str] = ffi.typeof(f"enum {name}").elements
    return {
        enumerator[len(prefix) :]: value
        for value, enumerator in elements.items()
        if enumerator not in NOT_MEMBERS
    }


def test_every_enum_of_the_package_is_listed_here():
    listed = {py for py, _, _ in ENUMS}
    public = {
        value
        for value in vars(aw).values()
        if isinstance(value, type) and issubclass(value, enum.IntEnum)
    }
    assert public == listed


@pytest.mark.parametrize("py, name, name_of", ENUMS, ids=[name for _, name, _ in ENUMS])
def test_members_are_the_c_enums_values(
    py: Type[enum.IntEnum], name: str, name_of: Optional[Callable[[int], Any]]
):
    assert {member.name: int(member) for member in py} == c_enum(name)
    if name_of is not None:
        for member in py:
            spelled = ffi.string(name_of(member)).decode()
            assert spelled.upper().replace("-", "_") == member.name
            # `choice` takes the library's own name.
            assert choice(py, name, spelled) is member
        assert name_of(max(py) + 1) == ffi.NULL
