"""The official anthropic Python SDK against both proxies (`POST /v1/messages`), over loopback.

Each model name selects what the replay agent behind the proxy plays (tests/clients/agent.sh);
what the SDK must end up with is read from the same fixture, independently of agentwire.
Claude's own model names reach the agent as `e2e-read` (the proxies run with
`--model-alias 'claude-*=e2e-read'`).
"""

import json
import urllib.request

import anthropic
import pytest
from conftest import AGENT_FAILURES, CLAUDE_ALIAS, FIXTURES, assert_tool_round
from test_anthropic_sdk import TOOL_ID, TOOLS, assert_usage
from transcripts import capture

TEXT = capture(FIXTURES / "multibyte.jsonl")
CUT_SHORT = capture(FIXTURES / "e2e/cut_short.jsonl")
READ_FILE = FIXTURES / "e2e/read_file"
MESSAGES = [{"role": "user", "content": "hi"}]
THINKING = {"type": "enabled", "budget_tokens": 1024}
READ = {
    "name": "Read",
    "description": "Reads a file from the local filesystem.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        "required": ["file_path"],
        "additionalProperties": False,
    },
}


def client(proxy, **auth):
    auth = auth or {"api_key": proxy.key}
    return anthropic.Anthropic(base_url=proxy.url, max_retries=0, timeout=30, **auth)


def all_runs(proxy):
    """Every agent run the proxy made so far, whatever its model."""
    return sum(len(path.read_text().splitlines()) for path in proxy.agent_logs.glob("*.log"))


def test_streaming_text_with_thinking(proxy):
    with client(proxy).messages.stream(model="e2e-text", max_tokens=1024, messages=MESSAGES, thinking=THINKING) as stream:
        text = "".join(event.text for event in stream if event.type == "text")
        final = stream.get_final_message()
        request_id = stream.response.headers.get("request-id")
    assert text == TEXT.expected
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.content[0].thinking and final.content[0].signature == ""
    assert final.stop_reason == "end_turn" and final.model == "e2e-text"
    assert_usage(final.usage, TEXT.usage)
    assert request_id and request_id.startswith("req_")


def test_non_streaming(proxy):
    raw = client(proxy).messages.with_raw_response.create(model="e2e-text", max_tokens=1024, messages=MESSAGES)
    message = raw.parse()
    assert raw.headers.get("request-id", "").startswith("req_")
    assert message.type == "message" and message.role == "assistant"
    assert [block.type for block in message.content] == ["text"], "thinking only when asked for"
    assert message.content[0].text == TEXT.expected
    assert message.stop_reason == "end_turn"
    assert_usage(message.usage, TEXT.usage)


def test_tool_round_under_claudes_model_name(proxy):
    """Turn 1 streams a `tool_use` of the client's Read; the client answers it with a
    `tool_result` (through the beta route Claude Code uses, `?beta=true`) and turn 2 answers
    from the file. The model name is Claude's; the agent ran the aliased model, twice."""
    runs_before = len(proxy.agent_runs(CLAUDE_ALIAS))
    sdk = client(proxy)
    prompt = [{"role": "user", "content": "When does the deploy window open? The answer is in notes.txt."}]
    with sdk.messages.stream(model="claude-opus-5-5", max_tokens=1024, messages=prompt, tools=[READ]) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    (call,) = [block for block in first.content if block.type == "tool_use"]
    assert (call.name, call.input) == ("Read", {"file_path": "notes.txt"})
    assert TOOL_ID.match(call.id)

    content = (READ_FILE / "notes.txt").read_text()
    history = prompt + [
        {"role": "assistant", "content": [block.to_dict() for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": content}]},
    ]
    second = sdk.beta.messages.create(model="claude-opus-5-5", max_tokens=1024, messages=history, tools=[READ])
    answer = capture(READ_FILE / "turn-2.jsonl").expected
    assert second.stop_reason == "end_turn"
    assert "".join(block.text for block in second.content if block.type == "text") == answer

    runs = proxy.agent_runs(CLAUDE_ALIAS)[runs_before:]
    assert_tool_round(runs, "Read", content, proxy.key)
    assert all(run["argv"][run["argv"].index("--model") + 1] == CLAUDE_ALIAS for run in runs)


def test_parallel_tool_calls(proxy):
    prompt = [{"role": "user", "content": "fix the test"}]
    message = client(proxy).messages.create(model="e2e-tools", max_tokens=1024, messages=prompt, tools=TOOLS)
    calls = [block for block in message.content if block.type == "tool_use"]
    assert message.stop_reason == "tool_use"
    assert [call.name for call in calls] == ["bash", "read"]
    assert calls[0].input == {"command": "ls -la"}
    assert all(TOOL_ID.match(call.id) for call in calls) and calls[0].id != calls[1].id


@pytest.mark.parametrize("auth", ["api_key", "auth_token"], ids=["x-api-key", "bearer"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_wrong_key_is_authentication_error(proxy, auth, stream):
    runs = all_runs(proxy)
    with pytest.raises(anthropic.AuthenticationError) as failure:
        client(proxy, **{auth: "sk-wrong"}).messages.create(model="e2e-text", max_tokens=1024, messages=MESSAGES, stream=stream)
    assert failure.value.status_code == 401
    assert failure.value.body["error"]["type"] == "authentication_error"
    assert all_runs(proxy) == runs, "no agent runs for an unauthenticated request"


def test_bearer_key_is_accepted(proxy):
    message = client(proxy, auth_token=proxy.key).messages.create(model="e2e-text", max_tokens=1024, messages=MESSAGES)
    assert message.content[0].text == TEXT.expected


@pytest.mark.parametrize(
    "request_options, field",
    [({"model": "--force"}, "model"), ({"messages": []}, "messages"), ({"max_tokens": "many"}, "max_tokens")],
    ids=["model", "messages", "max_tokens"],
)
def test_invalid_request_is_bad_request_naming_the_field(proxy, request_options, field):
    runs = all_runs(proxy)
    with pytest.raises(anthropic.BadRequestError) as failure:
        client(proxy).messages.create(**{"model": "e2e-text", "max_tokens": 1024, "messages": MESSAGES, **request_options})
    assert failure.value.body["type"] == "error"
    assert failure.value.body["error"]["type"] == "invalid_request_error"
    assert field in failure.value.body["error"]["message"]
    assert all_runs(proxy) == runs


def test_count_tokens_is_not_found_and_runs_nothing(proxy):
    runs = all_runs(proxy)
    with pytest.raises(anthropic.NotFoundError) as failure:
        client(proxy).messages.count_tokens(model="e2e-text", messages=MESSAGES)
    assert failure.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as failure:
        client(proxy).messages.count_tokens(model="e2e-text", messages="hi")
    assert "messages" in failure.value.body["error"]["message"]
    assert all_runs(proxy) == runs, "count_tokens never starts an agent"


# The exception class anthropic-python raises for each status of AGENT_FAILURES.
FAILURE_ERRORS = {
    401: anthropic.AuthenticationError,
    404: anthropic.NotFoundError,
    429: anthropic.RateLimitError,
    None: anthropic.InternalServerError,
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("model, status", AGENT_FAILURES.values(), ids=AGENT_FAILURES.keys())
def test_agent_failure_maps_to_sdk_error(proxy, model, status, stream):
    """A failure before any answer gets its true status and the Anthropic error body, and
    the SDK raises the class it maps to."""
    with pytest.raises(FAILURE_ERRORS[status]) as failure:
        if stream:
            with client(proxy).messages.stream(model=model, max_tokens=1024, messages=MESSAGES) as events:
                events.get_final_message()
        else:
            client(proxy).messages.create(model=model, max_tokens=1024, messages=MESSAGES)
    assert failure.value.status_code == status if status else failure.value.status_code >= 500
    assert failure.value.body["type"] == "error"
    assert failure.value.body["error"]["type"].endswith("_error")
    assert failure.value.body["error"]["message"]


def test_a_used_up_usage_limit_is_not_retried(proxy):
    """A used-up usage limit is a 429 with `x-should-retry: false`: the SDK, retrying as it
    does by default, raises at once and the agent ran once (retrying runs it into the same
    wall; Claude Code's retries did so eight times)."""
    runs = all_runs(proxy)
    retrying = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.key, max_retries=2, timeout=30)
    with pytest.raises(anthropic.RateLimitError) as failure:
        retrying.messages.create(model="e2e-usage-limit", max_tokens=1024, messages=MESSAGES)
    assert failure.value.response.headers["x-should-retry"] == "false"
    assert all_runs(proxy) == runs + 1


def test_crash_mid_stream_is_an_error_event(proxy):
    """The agent dies mid-answer: the text streamed so far arrives, then `event: error`, which
    the SDK raises as an APIStatusError; the stream never reaches `message_stop`."""
    text = ""
    with pytest.raises(anthropic.APIStatusError) as failure:
        with client(proxy).messages.stream(model="e2e-cut-short", max_tokens=1024, messages=MESSAGES) as stream:
            for event in stream:
                assert event.type not in ("message_delta", "message_stop")
                if event.type == "text":
                    text += event.text
    assert type(failure.value) is anthropic.APIStatusError
    assert failure.value.body["type"] == "error" and failure.value.body["error"]["message"]
    streamed = "".join(
        e["message"]["content"][0]["text"] for e in map(json.loads, CUT_SHORT.lines) if e["type"] == "assistant"
    )
    assert text == streamed


def test_hello_probe(proxy):
    """Claude Code's startup probe: `HEAD /api/hello` is 200 with no body."""
    request = urllib.request.Request(proxy.url + "/api/hello", method="HEAD", headers={"x-api-key": proxy.key})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.read() == b""
