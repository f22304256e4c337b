#!/usr/bin/env python3
"""A stand-in for cursor-agent: ignores its arguments, reads the prompt from stdin (and
checks it arrived), then writes the transcript named by AGENTWIRE_REPLAY to stdout in
small pieces and exits with AGENTWIRE_REPLAY_EXIT (default 0)."""

import os
import sys

prompt = sys.stdin.buffer.read()
if not prompt:
    sys.stderr.write("no prompt on stdin\n")
    sys.exit(2)
with open(os.environ["AGENTWIRE_REPLAY"], "rb") as transcript:
    while True:
        piece = transcript.read(97)
        if not piece:
            break
        sys.stdout.buffer.write(piece)
        sys.stdout.buffer.flush()
sys.exit(int(os.environ.get("AGENTWIRE_REPLAY_EXIT", "0")))
