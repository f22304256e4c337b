"""The finder of the real captures (tests/support/shared_fixtures.py) in each case it decides,
on temporary directories named by AGENTWIRE_SHARED_DIR: present, present with a file
missing, absent (skipped), absent where CI requires it (a failure)."""

from __future__ import annotations

import pytest

from conftest import shared_fixtures

DIR = shared_fixtures.DIR_VAR


def test_present(tmp_path):
    agent = tmp_path / "fixtures" / "cursor-agent"
    agent.mkdir(parents=True)
    (agent / "b.jsonl").write_text("{}\n")
    (agent / "a.jsonl").write_text("{}\n")
    for env in ({DIR: str(tmp_path)}, {DIR: str(tmp_path), "CI": "true"}):
        assert shared_fixtures.files("cursor-agent", "*.jsonl", env) == [agent / "a.jsonl", agent / "b.jsonl"]
        assert shared_fixtures.path("cursor-agent/a.jsonl", env) == agent / "a.jsonl"
        assert shared_fixtures.skip_if_absent(env) == tmp_path / "fixtures"


def test_present_but_file_missing_fails(tmp_path):
    (tmp_path / "fixtures" / "cursor-agent").mkdir(parents=True)
    env = {DIR: str(tmp_path)}
    with pytest.raises(shared_fixtures.SharedFixturesError, match="renamed.jsonl"):
        shared_fixtures.path("cursor-agent/renamed.jsonl", env)
    with pytest.raises(shared_fixtures.SharedFixturesError, match="no \\*.jsonl"):
        shared_fixtures.files("cursor-agent", "*.jsonl", env)
    with pytest.raises(shared_fixtures.SharedFixturesError, match="opencode"):
        shared_fixtures.files("opencode", "*.jsonl", env)


def test_absent_is_a_skip(tmp_path):
    for extra in ({}, {"CI": "false"}, {shared_fixtures.REQUIRE_VAR: "0"}):
        env = {DIR: str(tmp_path / "nothing-here"), **extra}
        assert shared_fixtures.files("cursor-agent", "*.jsonl", env) == []
        assert shared_fixtures.path("cursor-agent/a.jsonl", env) is None
        with pytest.raises(pytest.skip.Exception, match="absent"):
            shared_fixtures.skip_if_absent(env)


def test_absent_under_ci_or_the_requirement_fails(tmp_path):
    for extra in ({"CI": "true"}, {"CI": "TRUE"}, {shared_fixtures.REQUIRE_VAR: "1"}):
        env = {DIR: str(tmp_path / "nothing-here"), **extra}
        with pytest.raises(shared_fixtures.SharedFixturesError, match=shared_fixtures.REQUIRE_VAR):
            shared_fixtures.files("cursor-agent", "*.jsonl", env)
        with pytest.raises(pytest.fail.Exception, match="absent"):
            shared_fixtures.skip_if_absent(env)
