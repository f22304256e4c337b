"""The official openai Python SDK against both proxies, over loopback sockets.

Each model name selects what the replay agent behind the proxy plays (tests/clients/agent.sh);
what the SDK must end up with is read from the same fixture, independently of agentwire.
"""

import json
import re

import openai
import pytest
from conftest import FIXTURES, ROOT
from transcripts import assert_usage, capture, drain

TEXT = capture(FIXTURES / "multibyte.jsonl")
TOOLS = capture(FIXTURES / "client_native_batch.jsonl")
CLIENT_TOOLS = json.loads((FIXTURES / "requests/client_tools.json").read_text())["tools"]
CUT_SHORT = capture(FIXTURES / "e2e/cut_short.jsonl")
MESSAGES = [{"role": "user", "content": "hi"}]


def client(proxy, key=None):
    return openai.OpenAI(api_key=key or proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=30)


def test_streaming_text(proxy):
    stream = client(proxy).chat.completions.create(model="e2e-text", messages=MESSAGES, stream=True)
    got = drain(stream, "e2e-text")
    assert got.text == TEXT.expected
    assert got.reasoning, "the agent thought, so reasoning_content reaches the client"
    assert got.finishes == ["stop"]
    assert got.roles == [(1, "assistant")], "role once, on the first chunk"
    assert got.usages == [], "no usage chunk unless stream_options.include_usage asks"


def test_usage_only_with_include_usage(proxy):
    stream = client(proxy).chat.completions.create(
        model="e2e-text", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    got = drain(stream, "e2e-text")
    assert got.text == TEXT.expected and got.finishes == ["stop"]
    assert len(got.usages) == 1
    assert_usage(got.usages[0], TEXT.usage)


def test_stream_helper(proxy):
    with client(proxy).chat.completions.stream(model="e2e-text", messages=MESSAGES) as stream:
        deltas = "".join(event.delta for event in stream if event.type == "content.delta")
        final = stream.get_final_completion()
    assert deltas == TEXT.expected
    choice = final.choices[0]
    # The accumulator concatenates every `role` it sees: a repeated role would show here.
    assert choice.message.role == "assistant"
    assert choice.message.content == TEXT.expected
    assert getattr(choice.message, "reasoning_content", None)
    assert choice.finish_reason == "stop"
    assert final.usage is None


def test_non_streaming(proxy):
    completion = client(proxy).chat.completions.create(model="e2e-text", messages=MESSAGES)
    assert completion.object == "chat.completion"
    assert completion.model == "e2e-text"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == TEXT.expected
    assert getattr(choice.message, "reasoning_content", None)
    assert choice.finish_reason == "stop"
    assert not choice.message.tool_calls
    assert_usage(completion.usage, TEXT.usage)


def test_parallel_tool_calls(proxy):
    """Two calls of one model call: accumulated by index they are 0 and 1, each with an id, a
    name and arguments that parse as JSON objects; the turn ends with finish_reason tool_calls."""
    stream = client(proxy).chat.completions.create(
        model="e2e-tools", messages=[{"role": "user", "content": "fix the test"}], tools=CLIENT_TOOLS, stream=True
    )
    calls, finishes, reasoning = {}, [], ""
    for chunk in stream:
        for choice in chunk.choices:
            reasoning += getattr(choice.delta, "reasoning_content", None) or ""
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
                if delta.id:
                    assert call["id"] is None, "the id comes once, in the call's first delta"
                    call["id"] = delta.id
                if delta.function and delta.function.name:
                    call["name"] = delta.function.name
                if delta.function and delta.function.arguments:
                    call["arguments"] += delta.function.arguments
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
    assert sorted(calls) == [0, 1]
    assert [calls[i]["name"] for i in (0, 1)] == ["bash", "read"]
    arguments = [json.loads(calls[i]["arguments"]) for i in (0, 1)]
    assert all(isinstance(a, dict) for a in arguments)
    assert arguments[0]["command"] == "ls -la"
    assert calls[0]["id"] != calls[1]["id"] and all(calls[i]["id"].startswith("call_") for i in (0, 1))
    assert finishes == ["tool_calls"]
    assert reasoning, "the thinking before the calls reaches the client"

    with client(proxy).chat.completions.stream(
        model="e2e-tools", messages=[{"role": "user", "content": "fix the test"}], tools=CLIENT_TOOLS
    ) as helper:
        final = helper.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in message.tool_calls] == ["bash", "read"]
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == arguments


def test_models_list(proxy):
    listed = [line.split(" - ")[0] for line in (FIXTURES / "e2e/models.txt").read_text().splitlines() if " - " in line]
    models = client(proxy).models.list()
    assert [m.id for m in models.data] == listed


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_wrong_api_key_is_authentication_error(proxy, stream):
    runs = len(proxy.agent_runs("e2e-text"))
    with pytest.raises(openai.AuthenticationError) as failure:
        client(proxy, key="sk-wrong").chat.completions.create(model="e2e-text", messages=MESSAGES, stream=stream)
    assert failure.value.status_code == 401
    assert failure.value.body["message"]
    assert len(proxy.agent_runs("e2e-text")) == runs, "no agent runs for an unauthenticated request"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(
    "model, error, status",
    [
        ("e2e-not-logged-in", openai.AuthenticationError, 401),
        ("gpt-9-ultra", openai.NotFoundError, 404),
        ("e2e-usage-limit", openai.RateLimitError, 429),
        ("e2e-crash", openai.InternalServerError, None),
    ],
    ids=["not-logged-in", "unknown-model", "usage-limit", "crash"],
)
def test_agent_failure_maps_to_sdk_error(proxy, model, error, status, stream):
    """A failure before any answer gets its true status, and the SDK raises the class it maps to."""
    with pytest.raises(error) as failure:
        response = client(proxy).chat.completions.create(model=model, messages=MESSAGES, stream=stream)
        if stream:
            for _ in response:
                pass
    if status is not None:
        assert failure.value.status_code == status
    else:
        assert failure.value.status_code >= 500
    assert failure.value.body["message"]
    assert failure.value.body["code"]


def test_crash_mid_stream_is_api_error(proxy):
    """The agent dies mid-answer: the text streamed so far arrives, then an in-band error frame
    the SDK raises as APIError; the stream never claims to have finished."""
    text = ""
    with pytest.raises(openai.APIError) as failure:
        stream = client(proxy).chat.completions.create(model="e2e-cut-short", messages=MESSAGES, stream=True)
        for chunk in stream:
            for choice in chunk.choices:
                assert choice.finish_reason is None
                text += choice.delta.content or ""
    assert type(failure.value) is openai.APIError
    assert failure.value.body["code"]
    streamed = "".join(
        e["message"]["content"][0]["text"] for e in map(json.loads, CUT_SHORT.lines) if e["type"] == "assistant"
    )
    assert text == streamed


def test_readme_snippet(proxy, capsys):
    """The README's openai-python snippet, pointed at this proxy (its URL and key) and at a
    replayed model, prints the answer as it streams."""
    blocks = re.findall(r"^```python\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)
    (code,) = [block for block in blocks if "from openai import OpenAI" in block]
    for written, here in [
        ('"http://127.0.0.1:32124/v1"', repr(proxy.url + "/v1")),
        ('"sk-local"', repr(proxy.key)),
        ('model="auto"', 'model="e2e-text"'),
    ]:
        assert code.count(written) == 1, f"the README's snippet no longer has {written}"
        code = code.replace(written, here)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == TEXT.expected
