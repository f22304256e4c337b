"""The official openai Python SDK judges agentwire's output.

Each test builds an SDK client whose transport hands the SDK's real request body to the
`translate` example (which runs it through agentwire's Bridge together with a recorded
cursor-agent transcript) and answers with the status and body it produced. The SDK's own
SSE decoder, chunk models and stream accumulator then parse those bytes.
"""

import atexit
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import sys

import httpx2
import openai
import pytest
from transcripts import assert_usage, capture, drain

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests/support"))
import shared_fixtures  # noqa: E402  (the one finder of the real captures)

TRANSLATE = os.environ.get("AGENTWIRE_TRANSLATE", str(ROOT / "target/debug/examples/translate"))
PROJECT = sorted((ROOT / "tests/fixtures").glob("*.jsonl"))
SHARED = shared_fixtures.files("cursor-agent", "*.jsonl")
TRANSCRIPTS = PROJECT + SHARED
CLIENT_TOOLS = json.loads((ROOT / "tests/fixtures/requests/client_tools.json").read_text())["tools"]
MESSAGES = [{"role": "user", "content": "hi"}]
# Request bodies and cut transcripts, removed when pytest exits, whatever the tests gave.
SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="agentwire-openai-python-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def truncated(path):
    """The transcript cut just before its `result` line: the agent died mid-answer."""
    kept = []
    for line in capture(path).lines:
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict) and event.get("type") == "result":
            break
        kept.append(line)
    out = SCRATCH / f"truncated-{path.name}"
    out.write_text("".join(kept), encoding="utf-8")
    return out


# The route of each dialect `translate --api` speaks.
ROUTES = {"chat-completions": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def translate_transport(transcript, exit_code=0, replies=None, api="chat-completions", edit=None):
    """An httpx client (the SDKs' own transport) whose every request is answered by
    `translate` over `transcript`, in the dialect `api` (its route is the only one it
    serves); `edit`, when given, rewrites each body before the SDK reads it, and `replies`
    collects each (status, body) as sent."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.method == "POST" and request.url.path == ROUTES[api]
        with tempfile.NamedTemporaryFile(suffix=".json", dir=SCRATCH, delete=False) as body:
            body.write(request.content)
        try:
            run = subprocess.run(
                [TRANSLATE, "--api", api, "--request", body.name, "--exit", str(exit_code), str(transcript)],
                capture_output=True,
                check=True,
            )
        finally:
            os.unlink(body.name)
        first = run.stderr.decode().splitlines()[0]
        assert first.startswith("status: "), first
        status = int(first.removeprefix("status: "))
        stream = json.loads(request.content).get("stream")
        kind = "text/event-stream" if stream and status == 200 else "application/json"
        if replies is not None:
            replies.append((status, run.stdout))
        body = edit(run.stdout) if edit else run.stdout
        return httpx2.Response(status, content=body, headers={"content-type": kind})

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def client_for(transcript, exit_code=0, replies=None, api="chat-completions", edit=None):
    """An openai-python client answered by `translate` (see `translate_transport`)."""
    http = translate_transport(transcript, exit_code, replies, api, edit)
    return openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:1/v1", http_client=http, max_retries=0)


# The exception class openai-python raises for each status agentwire sends before a head.
STATUS_ERRORS = {
    401: openai.AuthenticationError,
    404: openai.NotFoundError,
    429: openai.RateLimitError,
}


def assert_mapped_failure(failure, replies):
    """A run that failed before answering: the SDK raises the class its status maps to."""
    status, body = replies[-1]
    assert status >= 400
    assert failure.status_code == status
    assert isinstance(failure, STATUS_ERRORS.get(status, openai.InternalServerError))
    assert failure.body["message"] == json.loads(body)["error"]["message"]
    assert failure.body["code"]


ids = lambda p: p.name  # noqa: E731
SUCCEEDED = [p for p in TRANSCRIPTS if capture(p).expected is not None]
FAILED = [p for p in TRANSCRIPTS if capture(p).expected is None]


def test_the_real_captures_are_there():
    shared_fixtures.skip_if_absent()
    assert SHARED


def test_the_fixtures_are_there():
    assert PROJECT, "tests/fixtures holds the project's own transcripts"
    assert FAILED, "at least one transcript is a failure without a result"
    print(f"openai-python {openai.__version__}: {len(PROJECT)} project and {len(SHARED)} real transcripts")


@pytest.mark.parametrize("include_usage", [True, False], ids=["usage", "no-usage"])
@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_raw_stream(transcript, include_usage):
    want = capture(transcript)
    client = client_for(transcript)
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    got = drain(client.chat.completions.create(model="auto", messages=MESSAGES, stream=True, **options), "auto")
    assert got.roles == [(1, "assistant")], "role once, on the first chunk"
    assert got.text == want.expected
    assert got.finishes == ["stop"]
    if want.thinking:
        assert got.reasoning, "the capture thinks, so reasoning_content reaches the client"
    if include_usage and want.usage:
        assert len(got.usages) == 1
        assert_usage(got.usages[0], want.usage)
    else:
        assert got.usages == []


@pytest.mark.parametrize("include_usage", [True, False], ids=["usage", "no-usage"])
@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_stream_helper_final_completion(transcript, include_usage):
    want = capture(transcript)
    client = client_for(transcript)
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    with client.chat.completions.stream(model="auto", messages=MESSAGES, **options) as stream:
        final = stream.get_final_completion()
    assert len(final.choices) == 1
    choice = final.choices[0]
    # The accumulator concatenates every `role` it sees: a repeated role shows up here.
    assert choice.message.role == "assistant"
    assert (choice.message.content or "") == want.expected
    assert choice.finish_reason == "stop"
    assert not choice.message.tool_calls
    if want.thinking:
        assert getattr(choice.message, "reasoning_content", None)
    if include_usage and want.usage:
        assert_usage(final.usage, want.usage)
    else:
        assert final.usage is None


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_non_streaming(transcript):
    want = capture(transcript)
    client = client_for(transcript)
    completion = client.chat.completions.create(model="auto", messages=MESSAGES)
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == want.expected
    assert choice.finish_reason == "stop"
    assert not choice.message.tool_calls
    if want.thinking:
        assert getattr(choice.message, "reasoning_content", None)
    if want.usage:
        assert_usage(completion.usage, want.usage)
    else:
        assert completion.usage is None


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_stream_and_body_agree(transcript):
    """The SSE stream and the JSON body are built from the same events: same text, same reasoning."""
    client = client_for(transcript)
    reasoning = ""
    for chunk in client.chat.completions.create(model="auto", messages=MESSAGES, stream=True):
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
    body = client.chat.completions.create(model="auto", messages=MESSAGES)
    assert (getattr(body.choices[0].message, "reasoning_content", None) or "") == reasoning


@pytest.mark.parametrize("transcript", FAILED, ids=ids)
def test_failure_streaming(transcript):
    replies = []
    client = client_for(transcript, exit_code=1, replies=replies)
    with pytest.raises(openai.APIStatusError) as failure:
        for _ in client.chat.completions.create(model="auto", messages=MESSAGES, stream=True):
            pass
    assert_mapped_failure(failure.value, replies)


@pytest.mark.parametrize("transcript", FAILED, ids=ids)
def test_failure_non_streaming(transcript):
    replies = []
    client = client_for(transcript, exit_code=1, replies=replies)
    with pytest.raises(openai.APIStatusError) as failure:
        client.chat.completions.create(model="auto", messages=MESSAGES)
    assert_mapped_failure(failure.value, replies)


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_crash_mid_stream(transcript):
    """The agent dies before its result: whatever was streamed is a prefix of the answer, then
    the SDK raises (an in-stream error frame, or the mapped status when nothing was sent yet)."""
    want = capture(transcript)
    replies = []
    client = client_for(truncated(transcript), exit_code=1, replies=replies)
    text = ""
    with pytest.raises(openai.APIError) as failure:
        for chunk in client.chat.completions.create(model="auto", messages=MESSAGES, stream=True):
            for choice in chunk.choices:
                assert choice.finish_reason is None, "a crashed run never claims to have finished"
                text += choice.delta.content or ""
    assert want.expected.startswith(text)
    status, _ = replies[-1]
    if status == 200:
        assert type(failure.value) is openai.APIError
        assert failure.value.body["code"]
    else:
        assert_mapped_failure(failure.value, replies)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="auto", messages=MESSAGES)


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
