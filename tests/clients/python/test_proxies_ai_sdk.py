"""The Vercel AI SDK against both proxies: runs tests/clients/node/proxy.e2e.mjs under
`node --test` with the running proxy's address and key."""

import os
import subprocess

from conftest import ROOT

JUDGE = ROOT / "tests/clients/node/proxy.e2e.mjs"
TIMEOUT_S = 120


def test_ai_sdk_stream_text(proxy):
    env = dict(os.environ, AGENTWIRE_E2E_BASE_URL=proxy.url, AGENTWIRE_E2E_API_KEY=proxy.key)
    run = subprocess.run(
        ["node", "--test", "--test-reporter=spec", str(JUDGE)],
        cwd=JUDGE.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    print(run.stdout)
    assert run.returncode == 0, f"the AI SDK rejected the {proxy.kind} proxy's output:\n{run.stdout}\n{run.stderr}"
