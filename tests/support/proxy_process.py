"""One example proxy (`tokio_proxy`, `blocking_proxy`) as a child process, for the Python
end-to-end tests (tests/clients/python, tests/agents): started on a free loopback port,
its output kept (in memory and in a file) and its address read from it, stopped with
SIGTERM."""

import os
import re
import signal
import subprocess
import threading

import pytest

STARTUP_TIMEOUT_S = 30
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)/v1")


def built(name, runner):
    """The path of a built binary or example `name`, which `runner` (the script that builds
    them) exports as $AGENTWIRE_<NAME>."""
    variable = f"AGENTWIRE_{name.upper()}"
    path = os.environ.get(variable)
    if not path:
        pytest.fail(f"{variable} is not set: run these tests through {runner}")
    return path


class ProxyProcess:
    """`command` (a proxy listening on 127.0.0.1:0) running; `url` is where it listens."""

    def __init__(self, name, command, env, log_path, cwd=None):
        self.name = name
        self.output = []
        self.url = None
        self.listening = threading.Event()
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        threading.Thread(target=self._read_output, args=(log_path,), daemon=True).start()
        if not self.listening.wait(STARTUP_TIMEOUT_S):
            self.process.kill()
            pytest.fail(f"{name} did not report where it listens:\n{self.log()}")

    def _read_output(self, log_path):
        with open(log_path, "wb") as log:
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                self.output.append(line.decode(errors="replace"))
                bound = LISTENING.search(self.output[-1])
                if bound and self.url is None:
                    self.url = bound.group(1)
                    self.listening.set()

    def log(self):
        return "".join(self.output)

    def terminate(self, timeout_s):
        """SIGTERM; the exit code, or a test failure when it is not gone within `timeout_s`."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"{self.name} ignored SIGTERM for {timeout_s} s:\n{self.log()}")
