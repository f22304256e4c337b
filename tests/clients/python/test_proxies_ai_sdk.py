"""The Vercel AI SDK against both proxies: runs each judge under `node --test` with the
running proxy's address and key: tests/clients/node/proxy.e2e.mjs (the openai-compatible
provider OpenCode bundles, Chat Completions) and tests/clients/ai-sdk/proxy.e2e.mjs (the
Anthropic provider on Messages and the OpenAI provider on Responses)."""

import os
import subprocess

import pytest
from conftest import ROOT

JUDGES = {
    "chat-completions": ROOT / "tests/clients/node/proxy.e2e.mjs",
    "messages-and-responses": ROOT / "tests/clients/ai-sdk/proxy.e2e.mjs",
}
TIMEOUT_S = 120


@pytest.mark.parametrize("judge", JUDGES.values(), ids=JUDGES.keys())
def test_ai_sdk_stream_text(proxy, judge):
    env = dict(os.environ, AGENTWIRE_E2E_BASE_URL=proxy.url, AGENTWIRE_E2E_API_KEY=proxy.key)
    run = subprocess.run(
        ["node", "--test", "--test-reporter=spec", str(judge)],
        cwd=judge.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    print(run.stdout)
    assert run.returncode == 0, f"the AI SDK rejected the {proxy.kind} proxy's output:\n{run.stdout}\n{run.stderr}"
