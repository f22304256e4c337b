"""The official openai Python SDK's Responses client against both proxies (`POST
/v1/responses`), over loopback.

Each model name selects what the replay agent behind the proxy plays (tests/clients/agent.sh);
what the SDK must end up with is read from the same fixture, independently of agentwire.
"""

import json

import openai
import pytest
from conftest import AGENT_FAILURES, FIXTURES, assert_tool_round
from test_openai_responses import EXEC_COMMAND, REASONING, assert_usage
from test_proxies_openai import FAILURE_ERRORS, client
from transcripts import capture

TEXT = capture(FIXTURES / "multibyte.jsonl")
CUT_SHORT = capture(FIXTURES / "e2e/cut_short.jsonl")
READ_FILE = FIXTURES / "e2e/read_file"
READ = {
    "type": "function",
    "name": "read",
    "description": "Reads a file.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
}


def test_streaming_text_with_reasoning(proxy):
    with client(proxy).responses.stream(model="e2e-text", input="hi", reasoning=REASONING) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert final.status == "completed" and final.model == "e2e-text"
    assert final.output_text == TEXT.expected
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].summary and final.output[0].summary[0].text
    assert_usage(final.usage, TEXT.usage)


def test_non_streaming(proxy):
    body = client(proxy).responses.create(model="e2e-text", input="hi")
    assert body.object == "response" and body.status == "completed"
    assert [item.type for item in body.output] == ["message"], "reasoning only when asked for"
    assert body.output_text == TEXT.expected
    assert_usage(body.usage, TEXT.usage)


def test_tool_round(proxy):
    """Turn 1 streams a `function_call` of the client's read; the client answers it with a
    `function_call_output` in a stateless follow-up (the whole input again, as Codex sends it)
    and turn 2 answers from the file."""
    runs_before = len(proxy.agent_runs("e2e-read"))
    sdk = client(proxy)
    question = {"role": "user", "content": "When does the deploy window open? The answer is in notes.txt."}
    with sdk.responses.stream(model="e2e-read", input=[question], tools=[READ, EXEC_COMMAND], store=False) as stream:
        first = stream.get_final_response()
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("read", {"filePath": "notes.txt"})

    content = (READ_FILE / "notes.txt").read_text()
    history = [question, *(item.to_dict() for item in first.output)]
    history.append({"type": "function_call_output", "call_id": call.call_id, "output": content})
    second = sdk.responses.create(model="e2e-read", input=history, tools=[READ, EXEC_COMMAND], store=False)
    assert second.status == "completed"
    assert second.output_text == capture(READ_FILE / "turn-2.jsonl").expected

    runs = proxy.agent_runs("e2e-read")[runs_before:]
    assert_tool_round(runs, "read", content, proxy.key)


def test_parallel_tool_calls(proxy):
    read = dict(READ, parameters={"type": "object", "properties": {"filePath": {"type": "string"}}})
    body = client(proxy).responses.create(model="e2e-tools", input="fix the test", tools=[EXEC_COMMAND, read])
    calls = [item for item in body.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["exec_command", "read"]
    assert json.loads(calls[0].arguments) == {"cmd": "ls -la"}
    assert calls[0].call_id != calls[1].call_id


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_wrong_api_key_is_authentication_error(proxy, stream):
    runs = len(proxy.agent_runs("e2e-text"))
    with pytest.raises(openai.AuthenticationError) as failure:
        client(proxy, key="sk-wrong").responses.create(model="e2e-text", input="hi", stream=stream)
    assert failure.value.status_code == 401 and failure.value.body["message"]
    assert len(proxy.agent_runs("e2e-text")) == runs


@pytest.mark.parametrize(
    "request_options, param",
    [({"previous_response_id": "resp_1"}, "previous_response_id"), ({"model": "--force"}, "model")],
    ids=["previous_response_id", "model"],
)
def test_invalid_request_is_bad_request_naming_the_param(proxy, request_options, param):
    with pytest.raises(openai.BadRequestError) as failure:
        client(proxy).responses.create(**{"model": "e2e-text", "input": "hi", **request_options})
    assert failure.value.body["param"] == param


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("model, status", AGENT_FAILURES.values(), ids=AGENT_FAILURES.keys())
def test_agent_failure_maps_to_sdk_error(proxy, model, status, stream):
    with pytest.raises(FAILURE_ERRORS[status]) as failure:
        if stream:
            with client(proxy).responses.stream(model=model, input="hi") as events:
                events.get_final_response()
        else:
            client(proxy).responses.create(model=model, input="hi")
    assert failure.value.status_code == status if status else failure.value.status_code >= 500
    assert failure.value.body["message"] and failure.value.body["code"]


def test_crash_mid_stream_is_response_failed(proxy):
    """The agent dies mid-answer: the text streamed so far arrives, then the stream fails
    (`response.failed`, what Codex reads) and the SDK raises; it never completes."""
    text, types = "", []
    with pytest.raises(openai.APIError) as failure:
        with client(proxy).responses.stream(model="e2e-cut-short", input="hi") as stream:
            for event in stream:
                types.append(event.type)
                if event.type == "response.output_text.delta":
                    text += event.delta
    assert "response.completed" not in types
    assert failure.value.message
    streamed = "".join(
        e["message"]["content"][0]["text"] for e in map(json.loads, CUT_SHORT.lines) if e["type"] == "assistant"
    )
    assert text == streamed
