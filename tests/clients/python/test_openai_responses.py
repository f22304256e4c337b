"""The official openai Python SDK judges agentwire's Responses dialect offline.

As for Chat Completions (test_openai_sdk.py): the SDK's real request body goes to the
`translate` example with `--api responses`, which runs it through agentwire's Bridge with a
recorded cursor-agent transcript; the SDK's own SSE decoder, event models and stream
accumulator (`responses.stream`, which requires `response.created` first, every item
finished before `response.completed`, and takes the final response from it) parse the bytes.
"""

import json

import openai
import pytest
from test_openai_sdk import ROOT, SCRATCH, STATUS_ERRORS, TRANSCRIPTS, assert_mapped_failure, client_for, truncated
from transcripts import capture

REASONING = {"summary": "auto"}
EXEC_COMMAND = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files with a patch.", "format": {"type": "text"}}


def responses_client(transcript, exit_code=0, replies=None):
    """An SDK client whose every request is answered by `translate --api responses`."""
    return client_for(transcript, exit_code, replies, api="responses")


def assert_usage(usage, counts):
    """The Responses usage of the CLI's counts: input includes cache reads and writes."""
    prompt = counts.get("prompt_tokens")
    assert usage.input_tokens == prompt
    assert usage.input_tokens_details.cached_tokens == counts["cached_tokens"]
    assert usage.input_tokens_details.cache_write_tokens == counts["cache_write_tokens"]
    assert usage.output_tokens == counts["completion_tokens"]
    assert usage.output_tokens_details.reasoning_tokens == 0
    assert usage.total_tokens == counts["total_tokens"]


ids = lambda p: p.name  # noqa: E731
SUCCEEDED = [p for p in TRANSCRIPTS if capture(p).expected is not None]
FAILED = [p for p in TRANSCRIPTS if capture(p).expected is None]


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_stream_helper_final_response(transcript):
    want = capture(transcript)
    client = responses_client(transcript)
    text, reasoning, types = "", "", []
    with client.responses.stream(model="auto", input="hi", reasoning=REASONING) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.reasoning_summary_text.delta":
                reasoning += event.delta
        final = stream.get_final_response()
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert final.status == "completed"
    assert final.id.startswith("resp_")
    assert final.output_text == text == want.expected
    assert all(item.status == "completed" for item in final.output if item.type == "message")
    if want.thinking:
        assert reasoning, "the capture thinks, so reasoning summaries reach the client"
        summaries = "".join(part.text for item in final.output if item.type == "reasoning" for part in item.summary)
        assert summaries == reasoning
    if want.usage:
        assert_usage(final.usage, want.usage)
    else:
        assert final.usage is None


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_non_streaming_is_the_streams_final_response(transcript):
    want = capture(transcript)
    client = responses_client(transcript)
    body = client.responses.create(model="auto", input="hi", reasoning=REASONING)
    *_, last = client.responses.create(model="auto", input="hi", reasoning=REASONING, stream=True)
    assert body.object == "response" and body.status == "completed"
    assert body.output_text == want.expected
    assert last.type == "response.completed"
    assert body.to_dict() == last.response.to_dict()


def test_keep_alive_comments_are_skipped():
    """The stream's keep-alive frame, an SSE comment, before and between every event."""
    transcript = ROOT / "tests/fixtures/no_usage.jsonl"
    comment = b": keep-alive\n\n"
    client = client_for(transcript, api="responses", edit=lambda body: comment + body.replace(b"\n\n", b"\n\n" + comment))
    with client.responses.stream(model="auto", input="hi", reasoning=REASONING) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert final.output_text == "Hi there!"


def test_reasoning_only_when_asked():
    transcript = ROOT / "tests/fixtures/no_usage.jsonl"
    body = responses_client(transcript).responses.create(model="auto", input="hi")
    assert [item.type for item in body.output] == ["message"]
    body = responses_client(transcript).responses.create(model="auto", input="hi", reasoning=REASONING)
    assert [item.type for item in body.output] == ["reasoning", "message"]


@pytest.mark.parametrize("transcript", FAILED, ids=ids)
def test_failure_before_the_head(transcript):
    replies = []
    client = responses_client(transcript, exit_code=1, replies=replies)
    with pytest.raises(openai.APIStatusError) as failure:
        with client.responses.stream(model="auto", input="hi") as stream:
            stream.get_final_response()
    assert_mapped_failure(failure.value, replies)
    with pytest.raises(openai.APIStatusError) as failure:
        client.responses.create(model="auto", input="hi")
    assert isinstance(failure.value, STATUS_ERRORS.get(failure.value.status_code, openai.InternalServerError))


@pytest.mark.parametrize("transcript", SUCCEEDED, ids=ids)
def test_crash_mid_stream_raises(transcript):
    """The agent dies before its result: the text streamed is a prefix of the answer, then the
    SDK raises: an APIError at the in-stream `error` event, or the mapped status when nothing
    was sent yet."""
    want = capture(transcript)
    replies = []
    client = responses_client(truncated(transcript), exit_code=1, replies=replies)
    text = ""
    with pytest.raises(openai.APIError) as failure:
        with client.responses.stream(model="auto", input="hi", reasoning=REASONING) as stream:
            for event in stream:
                assert event.type != "response.completed"
                if event.type == "response.output_text.delta":
                    text += event.delta
    assert want.expected.startswith(text)
    status, body = replies[-1]
    if status == 200:
        assert type(failure.value) is openai.APIError
        assert failure.value.body["code"]
        # What Codex reads: `response.failed` with the same error, last.
        last = json.loads(body.decode().rstrip("\n").split("\n")[-1].removeprefix("data: "))
        assert last["type"] == "response.failed"
        assert last["response"]["error"]["message"] == failure.value.message
    else:
        assert_mapped_failure(failure.value, replies)


def test_client_tool_calls():
    client = responses_client(ROOT / "tests/fixtures/client_native_batch.jsonl")
    tools = [
        EXEC_COMMAND,
        {"type": "function", "name": "read", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]}},
    ]
    with client.responses.stream(model="auto", input="Fix the failing test.", tools=tools) as stream:
        final = stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["exec_command", "read"]
    assert json.loads(calls[0].arguments) == {"cmd": "ls -la"}
    assert all(call.call_id.startswith("call_") and call.id.startswith("fc_") for call in calls)
    body = client.responses.create(model="auto", input="go", tools=tools)
    assert [item.name for item in body.output if item.type == "function_call"] == ["exec_command", "read"]


def test_freeform_tool_call():
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
    envelope = "<tool_call>\n" + json.dumps({"name": "apply_patch", "input": patch}) + "\n</tool_call>"
    transcript = SCRATCH / "apply_patch.jsonl"
    transcript.write_text(
        json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": envelope}]}})
        + "\n"
        + json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": envelope})
        + "\n"
    )
    client = responses_client(transcript)
    with client.responses.stream(model="auto", input="Add hello.txt", tools=[EXEC_COMMAND, APPLY_PATCH]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.custom_tool_call_input.done" in kinds
    [call] = final.output
    assert (call.type, call.name, call.input) == ("custom_tool_call", "apply_patch", patch)
    assert call.call_id.startswith("call_") and call.id.startswith("ctc_")


def test_invalid_requests_are_400s_naming_the_param():
    client = responses_client(TRANSCRIPTS[0])
    with pytest.raises(openai.BadRequestError) as failure:
        client.responses.create(model="auto", input="hi", previous_response_id="resp_1")
    assert failure.value.body["param"] == "previous_response_id"
    with pytest.raises(openai.BadRequestError) as failure:
        client.responses.create(model="--force", input="hi")
    assert failure.value.body["param"] == "model"
