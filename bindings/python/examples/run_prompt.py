#!/usr/bin/env python3
"""A minimal plugin: runs one prompt through cursor-agent and prints the answer as it
streams.

    run_prompt.py [--agent PROGRAM] [--model MODEL] PROMPT

It builds an OpenAI Chat Completions request, lets agentwire turn it into the agent's
command line, runs the agent in its own process group, feeds its output to the bridge and
prints the text of the SSE frames the bridge produces. ``--agent`` replaces
``cursor-agent`` (any stand-in that speaks its stream-json output).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time

import agentwire as aw


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def print_text(body: bytes, pending: bytearray) -> None:
    """Prints the content deltas of complete SSE frames; keeps a partial frame."""
    pending.extend(body)
    while b"\n\n" in pending:
        frame, _, rest = bytes(pending).partition(b"\n\n")
        pending[:] = rest
        if not frame.startswith(b"data: ") or frame == b"data: [DONE]":
            continue
        chunk = json.loads(frame[len(b"data: ") :])
        if "error" in chunk:
            print(f"\nerror: {chunk['error'].get('message')}", file=sys.stderr)
        for choice in chunk.get("choices", []):
            content = choice.get("delta", {}).get("content")
            if content:
                sys.stdout.write(content)
                sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", help="the agent program (default cursor-agent)")
    parser.add_argument("--model", default="auto")
    parser.add_argument("prompt")
    args = parser.parse_args()

    body = json.dumps(
        {
            "model": args.model,
            "stream": True,
            "messages": [{"role": "user", "content": args.prompt}],
        }
    ).encode()
    config = aw.Config(**({"cursor_binary": args.agent} if args.agent else {}))
    with aw.Bridge(body, config, now_ms=now_ms()) as bridge:
        pending = bytearray()
        status = 0
        agent = None

        def drain() -> bool:
            """Handles the bridge's outputs; returns True at the end."""
            nonlocal status
            for output in bridge.outputs():
                if isinstance(output, aw.Head):
                    status = output.status
                elif isinstance(output, aw.Body):
                    if status == 200:
                        print_text(output, pending)
                    else:
                        error = json.loads(output).get("error", {})
                        print(f"error {status}: {error.get('message')}", file=sys.stderr)
                elif isinstance(output, aw.StopAgent) and agent is not None:
                    os.killpg(agent.pid, signal.SIGKILL)
                elif isinstance(output, aw.End):
                    return True
            return False

        ended = drain()
        invocation = bridge.invocation
        if invocation is None:
            return 1
        try:
            agent = subprocess.Popen(
                invocation.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, **invocation.env},
                start_new_session=True,  # its own process group, killed as a whole
            )
        except FileNotFoundError:
            print(
                f"error: the agent program `{invocation.program}` was not found. Install the "
                "Cursor CLI (`curl https://cursor.com/install -fsS | bash`, then "
                "`cursor-agent login`), or pass --agent PROGRAM.",
                file=sys.stderr,
            )
            return 127
        except OSError as error:
            print(f"error: cannot start `{invocation.program}`: {error}", file=sys.stderr)
            return 126

        def write_prompt() -> None:
            assert agent is not None and agent.stdin is not None
            try:
                agent.stdin.write(invocation.stdin)
                agent.stdin.close()
            except BrokenPipeError:
                pass

        threading.Thread(target=write_prompt, daemon=True).start()
        selector = selectors.DefaultSelector()
        assert agent.stdout is not None and agent.stderr is not None
        selector.register(agent.stdout, selectors.EVENT_READ, bridge.push_stdout)
        selector.register(agent.stderr, selectors.EVENT_READ, bridge.push_stderr)
        while selector.get_map():
            deadline = bridge.poll_timeout()
            timeout = None if deadline is None else max(0, deadline - now_ms()) / 1000
            for key, _ in selector.select(timeout):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data(chunk, now_ms())
                else:
                    selector.unregister(key.fileobj)
            if deadline is not None and now_ms() >= deadline:
                bridge.handle_timeout(now_ms())
            ended = drain() or ended
        code = agent.wait()
        if code < 0:
            bridge.agent_exited(signal=-code, now_ms=now_ms())
        else:
            bridge.agent_exited(code=code, now_ms=now_ms())
        drain()
        print()
        return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
