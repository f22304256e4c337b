"""openai-python and anthropic-python against both proxies, each serving a real ACP agent
(claude-agent-acp, codex-acp, Gemini CLI) whose model is the scripted server.

What the clients must get is the server's script (model_server.py), so every assertion is
about what crossed the whole chain: client → proxy → agent → model server and back.
"""

import secrets
import time

import anthropic
import openai
import pytest
from model_server import SCRIPT_READ, SCRIPT_RUN, SCRIPT_SLOW, TEXT_ANSWER

# The agents answer in a few seconds; a loaded 2-core machine gets a wide margin.
REQUEST_TIMEOUT_S = 120
CANCEL_TIMEOUT_S = 20


def openai_client(proxy):
    return openai.OpenAI(api_key=proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S)


def anthropic_client(proxy):
    return anthropic.Anthropic(api_key=proxy.key, base_url=proxy.url, max_retries=0, timeout=REQUEST_TIMEOUT_S)


def nonce():
    return "nonce-" + secrets.token_hex(6)


def chat(proxy, prompt):
    completion = openai_client(proxy).chat.completions.create(model="default", messages=[{"role": "user", "content": prompt}])
    return completion.choices[0].message.content or ""


def test_chat_completion(proxy):
    tag = nonce()
    completion = openai_client(proxy).chat.completions.create(model="default", messages=[{"role": "user", "content": f"Say {tag}."}])
    choice = completion.choices[0]
    assert f"{TEXT_ANSWER} for {tag}." in choice.message.content
    assert choice.finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens > 0


def test_chat_completion_streamed(proxy):
    tag = nonce()
    stream = openai_client(proxy).chat.completions.create(
        model="default", messages=[{"role": "user", "content": f"Say {tag}."}], stream=True, stream_options={"include_usage": True}
    )
    text, finishes, usages = "", [], []
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
        if chunk.usage:
            usages.append(chunk.usage)
    assert f"{TEXT_ANSWER} for {tag}." in text
    assert finishes == ["stop"]
    assert len(usages) == 1


def test_anthropic_messages(proxy):
    tag = nonce()
    message = anthropic_client(proxy).messages.create(
        model="default", max_tokens=1024, messages=[{"role": "user", "content": f"Say {tag}."}]
    )
    text = "".join(block.text for block in message.content if block.type == "text")
    assert f"{TEXT_ANSWER} for {tag}." in text
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens > 0


def test_anthropic_messages_streamed(proxy):
    tag = nonce()
    with anthropic_client(proxy).messages.stream(
        model="default", max_tokens=1024, messages=[{"role": "user", "content": f"Say {tag}."}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert f"{TEXT_ANSWER} for {tag}." in text
    assert final.stop_reason == "end_turn"


def test_responses(proxy):
    tag = nonce()
    response = openai_client(proxy).responses.create(model="default", input=f"Say {tag}.")
    assert response.status == "completed"
    assert f"{TEXT_ANSWER} for {tag}." in response.output_text


def test_agent_reads_a_file_with_its_own_tool(proxy):
    """The model asks the agent's own read tool (Read, exec_command `cat`, read_file) for
    notes.txt; the agent runs it without asking and the answer quotes the file."""
    answer = chat(proxy, f"What does notes.txt say? {SCRIPT_READ}")
    assert proxy.notes.strip() in answer
    scripts = [call["script"] for call in proxy.model_calls()]
    assert SCRIPT_READ in scripts and "tool result" in scripts


def test_permission_is_refused_by_default(proxy):
    """A shell command needs the client's permission: the proxy's default answers reject_once,
    so the command never runs."""
    chat(proxy, f"Touch written.txt, then print notes.txt. {SCRIPT_RUN}")
    assert not (proxy.work / "written.txt").exists()


def test_permission_is_granted_with_allow_force(forced_proxy):
    answer = chat(forced_proxy, f"Touch written.txt, then print notes.txt. {SCRIPT_RUN}")
    assert (forced_proxy.work / "written.txt").exists()
    assert forced_proxy.notes.strip() in answer


def test_client_gone_cancels_the_session(proxy):
    """A client that hangs up mid-answer: the proxy cancels the session (the agent stops
    reading its model's stream), the request ends, and the next one on the same warm agent
    is answered. The fixture then checks that stopping the proxy leaves no process behind."""
    before = len(proxy.model_calls())
    stream = openai_client(proxy).chat.completions.create(
        model="default", messages=[{"role": "user", "content": f"Write a long essay about kettles. {SCRIPT_SLOW}"}], stream=True
    )
    for chunk in stream:
        if any(choice.delta.content for choice in chunk.choices):
            break
    stream.close()

    deadline = time.monotonic() + CANCEL_TIMEOUT_S
    while time.monotonic() < deadline:
        slow = [call for call in proxy.model_calls()[before:] if call["script"] == SCRIPT_SLOW]
        if slow and "finished" in slow[0]:
            break
        time.sleep(0.02)
    assert slow and slow[0]["finished"] is False, f"the agent read its model's stream to the end: {slow}"
    assert proxy.wait_idle(CANCEL_TIMEOUT_S), "the cancelled request is still in flight"

    tag = nonce()
    assert f"{TEXT_ANSWER} for {tag}." in chat(proxy, f"Say {tag}.")


def test_models(proxy):
    status, body = proxy.get("/v1/models")
    if status == 503:
        pytest.skip(f"/v1/models is not served over ACP by this proxy yet (503: {body['error']['message']})")
    assert status == 200, body
    ids = [model["id"] for model in body["data"]]
    assert ids, body
    assert len(set(ids)) == len(ids)
