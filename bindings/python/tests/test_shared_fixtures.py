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


def shell_finder(env):
    """(status, stdout, stderr) of tests/support/shared_fixtures.sh (the C tests' finder) asked
    for the cursor-agent transcripts, in `env` alone."""
    import subprocess

    script = shared_fixtures.ROOT / "tests" / "support" / "shared_fixtures.sh"
    done = subprocess.run(
        ["bash", "-c", f". '{script}' && shared_fixtures_files cursor-agent .jsonl"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_the_shell_finder_keeps_the_same_rules(tmp_path):
    agent = tmp_path / "fixtures" / "cursor-agent"
    agent.mkdir(parents=True)
    # Present without the files: a failure.
    assert shell_finder({DIR: str(tmp_path)})[0] == 2
    (agent / "b.jsonl").write_text("{}\n")
    (agent / "a.jsonl").write_text("{}\n")
    assert shell_finder({DIR: str(tmp_path), "CI": "true"}) == (0, f"{agent / 'a.jsonl'}\n{agent / 'b.jsonl'}\n", "")
    missing = str(tmp_path / "nothing-here")
    status, out, err = shell_finder({DIR: missing})
    assert (status, out) == (1, "") and "SKIPPED" in err
    for extra in ({"CI": "true"}, {shared_fixtures.REQUIRE_VAR: "1"}):
        status, out, err = shell_finder({DIR: missing, **extra})
        assert (status, out) == (2, "") and shared_fixtures.REQUIRE_VAR in err
