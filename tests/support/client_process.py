"""A real client CLI (Claude Code, Codex, OpenCode) run to its end, for the Python
end-to-end tests (tests/clients/python, tests/agents)."""

import os
import signal
import subprocess


def run_client(command, cwd, env, timeout_s):
    """Runs a client CLI in a process group of its own, with no stdin, killed outright (with
    everything it started) after `timeout_s`; returns (exit code, stdout, stderr)."""
    command = ["timeout", "-s", "KILL", str(timeout_s), *map(str, command)]
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        # `timeout` kills the client; this only guards against a child keeping the pipes open.
        stdout, stderr = process.communicate(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    finally:
        # Whatever the client started goes with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return process.returncode, stdout.decode(), stderr.decode()
