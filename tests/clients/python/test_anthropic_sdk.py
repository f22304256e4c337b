"""The official anthropic Python SDK judges agentwire's Messages dialect offline.

As for the OpenAI dialects (test_openai_sdk.py): the SDK's real request body goes to the
`translate` example with `--api messages`, which runs it through agentwire's Bridge with a
recorded cursor-agent transcript; the SDK's own SSE decoder (which dispatches on `event:`
lines and raises at `event: error`), event models and stream accumulator (`messages.stream`,
which requires `message_start` first, appends a block per `content_block_start` and indexes
every delta by its block) parse the bytes.
"""

import json
import re

import anthropic
import pytest
from test_openai_sdk import PROJECT, TRANSCRIPTS, translate_transport, truncated
from transcripts import capture

MESSAGES = [{"role": "user", "content": "hi"}]
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [
    {
        "name": "bash",
        "description": "Runs a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    {
        "name": "read",
        "description": "Reads a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
]
# The ids the API allows, and so the ids Claude Code accepts back.
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
# The exception class anthropic-python raises for each status agentwire sends before a head.
STATUS_ERRORS = {
    400: anthropic.BadRequestError,
    401: anthropic.AuthenticationError,
    404: anthropic.NotFoundError,
    429: anthropic.RateLimitError,
    500: anthropic.InternalServerError,
    503: anthropic.ServiceUnavailableError,
    529: anthropic.OverloadedError,
}

ids = lambda p: p.name  # noqa: E731
SUCCEEDED = [p for p in TRANSCRIPTS if capture(p).expected is not None]
FAILED = [p for p in TRANSCRIPTS if capture(p).expected is None]


def messages_client(transcript, exit_code=0, replies=None):
    """An SDK client whose every request is answered by `translate --api messages`."""
    http = translate_transport(transcript, exit_code, replies, api="messages")
    return anthropic.Anthropic(api_key="sk-test", base_url="http://127.0.0.1:1", http_client=http, max_retries=0)


def assert_usage(usage, counts):
    """The Messages usage of the CLI's counts: `input_tokens` is the uncached input, cache
    reads and writes are counted apart (cursor-agent counts the same way)."""
    if counts is None:
        assert (usage.input_tokens, usage.output_tokens) == (0, 0)
        return
    cached, written = counts["cached_tokens"], counts["cache_write_tokens"]
    assert usage.input_tokens == counts["prompt_tokens"] - cached - written
    assert usage.cache_read_input_tokens == cached
    assert usage.cache_creation_input_tokens == written
    assert usage.output_tokens == counts["completion_tokens"]


def assert_mapped_failure(failure, replies):
    """A run that failed before answering: the SDK raises the class its status maps to, with
    the Anthropic error body."""
    status, body = replies[-1]
    assert status >= 400
    assert failure.status_code == status
    assert type(failure) is STATUS_ERRORS[status]
    sent = json.loads(body)
    assert sent["type"] == "error" and sent["error"]["type"].endswith("_error")
    assert failure.body == sent
    assert failure.body["error"]["message"]


def test_the_fixtures_are_there():
    assert SUCCEEDED and FAILED
    print(f"anthropic-python {anthropic.__version__}: {len(TRANSCRIPTS)} transcripts")


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_stream_helper_final_message(transcript, thinking):
    want = capture(transcript)
    options = {"thinking": THINKING} if thinking else {}
    text, thought, types = "", "", []
    with messages_client(transcript).messages.stream(model="auto", max_tokens=1024, messages=MESSAGES, **options) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "text":
                text += event.text
            elif event.type == "thinking":
                thought += event.thinking
        final = stream.get_final_message()
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert types.count("message_start") == 1 and types.count("message_delta") == 1
    assert types.count("content_block_start") == types.count("content_block_stop") == len(final.content)
    assert final.id.startswith("msg_") and final.role == "assistant" and final.model == "auto"
    assert final.stop_reason == "end_turn"
    assert text == "".join(block.text for block in final.content if block.type == "text") == want.expected
    thinking_blocks = [block for block in final.content if block.type == "thinking"]
    # Thinking shows only when asked for (the agent's own tool activity rides along with it).
    assert "".join(block.thinking for block in thinking_blocks) == thought
    assert all(block.signature == "" for block in thinking_blocks), "a signature is never invented"
    if not thinking:
        assert thinking_blocks == []
    elif want.thinking:
        assert thought
    assert_usage(final.usage, want.usage)


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_non_streaming_is_the_streams_final_message(transcript):
    client = messages_client(transcript)
    body = client.messages.create(model="auto", max_tokens=1024, messages=MESSAGES, thinking=THINKING)
    with client.messages.stream(model="auto", max_tokens=1024, messages=MESSAGES, thinking=THINKING) as stream:
        final = stream.get_final_message()
    assert body.type == "message"
    # The accumulator sets `stop_details` (null) where the body leaves it out.
    assert body.to_dict(exclude_none=True) == final.to_dict(exclude_none=True)


def test_thinking_omitted_when_asked():
    transcript = PROJECT[0].parent / "multibyte.jsonl"
    assert capture(transcript).thinking
    omitted = {"type": "adaptive", "display": "omitted"}
    body = messages_client(transcript).messages.create(model="auto", max_tokens=1024, messages=MESSAGES, thinking=omitted)
    assert [block.type for block in body.content] == ["text"]


@pytest.mark.parametrize("transcript", FAILED, ids=ids)
def test_failure_before_the_head(transcript):
    replies = []
    client = messages_client(transcript, exit_code=1, replies=replies)
    with pytest.raises(anthropic.APIStatusError) as failure:
        with client.messages.stream(model="auto", max_tokens=1024, messages=MESSAGES) as stream:
            stream.get_final_message()
    assert_mapped_failure(failure.value, replies)
    with pytest.raises(anthropic.APIStatusError) as failure:
        client.messages.create(model="auto", max_tokens=1024, messages=MESSAGES)
    assert_mapped_failure(failure.value, replies)


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_crash_mid_stream_raises(transcript):
    """The agent dies before its result: the text streamed is a prefix of the answer, then the
    SDK raises: an APIStatusError at the in-stream `event: error`, or the mapped status when
    nothing was sent yet. The stream never reaches `message_stop`."""
    want = capture(transcript)
    replies = []
    client = messages_client(truncated(transcript), exit_code=1, replies=replies)
    text = ""
    with pytest.raises(anthropic.APIStatusError) as failure:
        with client.messages.stream(model="auto", max_tokens=1024, messages=MESSAGES) as stream:
            for event in stream:
                assert event.type not in ("message_delta", "message_stop")
                if event.type == "text":
                    text += event.text
    assert want.expected.startswith(text)
    status, body = replies[-1]
    if status == 200:
        assert type(failure.value) is anthropic.APIStatusError
        last = body.decode().rstrip("\n").split("\n")
        assert last[-2] == "event: error"
        assert failure.value.body == json.loads(last[-1].removeprefix("data: "))
        assert failure.value.body["error"]["message"]
    else:
        assert_mapped_failure(failure.value, replies)


def test_client_tool_calls():
    client = messages_client(PROJECT[0].parent / "client_native_batch.jsonl")
    prompt = [{"role": "user", "content": "Look at the project and fix the failing test."}]
    with client.messages.stream(model="auto", max_tokens=1024, messages=prompt, tools=TOOLS) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    calls = [block for block in final.content if block.type == "tool_use"]
    assert [call.name for call in calls] == ["bash", "read"]
    assert calls[0].input == {"command": "ls -la"}
    assert set(calls[1].input) == {"file_path"}
    assert all(TOOL_ID.match(call.id) for call in calls) and calls[0].id != calls[1].id
    body = client.messages.create(model="auto", max_tokens=1024, messages=prompt, tools=TOOLS)
    assert body.stop_reason == "tool_use"
    assert [block.input for block in body.content if block.type == "tool_use"] == [call.input for call in calls]


@pytest.mark.parametrize(
    "request_options, named",
    [({"model": "--force"}, "model"), ({"messages": []}, "messages")],
    ids=["model", "messages"],
)
def test_invalid_requests_are_400s_naming_the_field(request_options, named):
    replies = []
    client = messages_client(PROJECT[0], replies=replies)
    with pytest.raises(anthropic.BadRequestError) as failure:
        client.messages.create(**{"model": "auto", "max_tokens": 1024, "messages": MESSAGES, **request_options})
    assert_mapped_failure(failure.value, replies)
    assert failure.value.body["error"]["type"] == "invalid_request_error"
    assert named in failure.value.body["error"]["message"]
