"""The official openai Python SDK judges agentwire's output.

Each test builds an SDK client whose transport hands the SDK's real request body to the
`translate` example (which runs it through agentwire's Bridge together with a recorded
cursor-agent transcript) and answers with the status and body it produced.
"""

import json
import os
import pathlib
import subprocess
import tempfile

import httpx2
import openai
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TRANSLATE = os.environ.get("AGENTWIRE_TRANSLATE", str(ROOT / "target/debug/examples/translate"))
PROJECT = sorted((ROOT / "tests/fixtures").glob("*.jsonl"))
SHARED_DIR = ROOT.parent / "shared/fixtures/cursor-agent"
SHARED = sorted(SHARED_DIR.glob("*.jsonl")) if SHARED_DIR.is_dir() else []
TRANSCRIPTS = PROJECT + SHARED
CLIENT_TOOLS = json.loads((ROOT / "tests/fixtures/requests/client_tools.json").read_text())["tools"]


def result_of(path):
    """The `result.result` of a transcript, or None when it has no result (a failure)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return event.get("result") or ""
    return None


def has_usage(path):
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result" and isinstance(event.get("usage"), dict):
            return True
    return False


def client_for(transcript, exit_code=0):
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path.endswith("/chat/completions")
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as body:
            body.write(request.content)
        try:
            run = subprocess.run(
                [TRANSLATE, "--request", body.name, "--exit", str(exit_code), str(transcript)],
                capture_output=True,
                check=True,
            )
        finally:
            os.unlink(body.name)
        status = int(run.stderr.decode().splitlines()[0].removeprefix("status: "))
        stream = json.loads(request.content).get("stream")
        kind = "text/event-stream" if stream and status == 200 else "application/json"
        return httpx2.Response(status, content=run.stdout, headers={"content-type": kind})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:1/v1", http_client=http, max_retries=0)


MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.name)
def test_raw_stream(transcript):
    expected = result_of(transcript)
    client = client_for(transcript)
    if expected is None:
        with pytest.raises(openai.APIError):
            for _ in client.chat.completions.create(model="auto", messages=MESSAGES, stream=True):
                pass
        return
    text, finishes, usage = "", [], []
    for chunk in client.chat.completions.create(
        model="auto", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    ):
        assert chunk.object == "chat.completion.chunk"
        if chunk.usage is not None:
            usage.append(chunk.usage)
        for choice in chunk.choices:
            text += choice.delta.content or ""
            if choice.finish_reason is not None:
                finishes.append(choice.finish_reason)
    assert text == expected
    assert finishes == ["stop"]
    assert len(usage) == (1 if has_usage(transcript) else 0)


@pytest.mark.parametrize("transcript", [p for p in TRANSCRIPTS if result_of(p) is not None], ids=lambda p: p.name)
def test_stream_helper_final_completion(transcript):
    expected = result_of(transcript)
    client = client_for(transcript)
    with client.chat.completions.stream(
        model="auto", messages=MESSAGES, stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.message.role == "assistant"
    assert (choice.message.content or "") == expected
    assert choice.finish_reason == "stop"
    if has_usage(transcript):
        assert final.usage is not None
        assert final.usage.total_tokens == final.usage.prompt_tokens + final.usage.completion_tokens
    else:
        assert final.usage is None


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.name)
def test_non_streaming(transcript):
    expected = result_of(transcript)
    client = client_for(transcript)
    if expected is None:
        with pytest.raises(openai.APIStatusError) as failure:
            client.chat.completions.create(model="auto", messages=MESSAGES)
        assert failure.value.status_code >= 500
        assert failure.value.body["message"]
        return
    completion = client.chat.completions.create(model="auto", messages=MESSAGES)
    assert completion.choices[0].message.content == expected
    assert (completion.usage is not None) == has_usage(transcript)


def test_client_tool_calls_stream_and_body():
    transcript = ROOT / "tests/fixtures/client_native_batch.jsonl"
    client = client_for(transcript)
    with client.chat.completions.stream(
        model="auto",
        messages=[{"role": "user", "content": "Look at the project and fix the failing test."}],
        tools=CLIENT_TOOLS,
    ) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["bash", "read"]
    assert json.loads(calls[0].function.arguments)["command"] == "ls -la"
    assert all(c.id.startswith("call_") and "\n" not in c.id for c in calls)
    body = client.chat.completions.create(
        model="auto", messages=[{"role": "user", "content": "go"}], tools=CLIENT_TOOLS
    )
    assert body.choices[0].finish_reason == "tool_calls"
    assert len(body.choices[0].message.tool_calls) == 2


def test_envelope_tool_call():
    client = client_for(ROOT / "tests/fixtures/client_envelope.jsonl")
    with client.chat.completions.stream(
        model="auto", messages=[{"role": "user", "content": "Fix the add function."}], tools=CLIENT_TOOLS
    ) as stream:
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert call.function.name == "write"
    assert "a + b" in json.loads(call.function.arguments)["content"]
    assert "<tool_call>" not in (final.choices[0].message.content or "")


def test_invalid_request_is_a_400():
    client = client_for(PROJECT[0])
    with pytest.raises(openai.BadRequestError) as failure:
        client.chat.completions.create(model="--force", messages=MESSAGES)
    assert failure.value.body["param"] == "model"
