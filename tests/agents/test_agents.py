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
from conftest import REJECTION_ENDS_TURN, USAGE, note, scratch_processes
from model_server import LONG_COMMAND, SCRIPT_LONG_COMMAND, SCRIPT_READ, SCRIPT_RUN, SCRIPT_SLOW, TEXT_ANSWER

# The agents answer in a few seconds; a loaded 2-core machine gets a wide margin.
REQUEST_TIMEOUT_S = 120
CANCEL_TIMEOUT_S = 20
# How long an agent's command is given to stop after its turn is cancelled (noted, not
# asserted).
COMMAND_STOP_S = 3


def openai_client(proxy):
    return openai.OpenAI(api_key=proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S)


def anthropic_client(proxy):
    return anthropic.Anthropic(api_key=proxy.key, base_url=proxy.url, max_retries=0, timeout=REQUEST_TIMEOUT_S)


def nonce():
    return "nonce-" + secrets.token_hex(6)


def chat(proxy, prompt):
    completion = openai_client(proxy).chat.completions.create(model="default", messages=[{"role": "user", "content": prompt}])
    return completion.choices[0].message.content or ""


def assert_usage(usage, agent):
    """The usage the client got is the model server's, as far as the agent hands it on."""
    expected = USAGE[agent]
    if expected is None:
        assert usage is None or usage.completion_tokens == 0, usage
    else:
        assert usage is not None
        assert {key: getattr(usage, key) for key in expected} == expected


def test_chat_completion(proxy, facts):
    tag = nonce()
    completion = openai_client(proxy).chat.completions.create(model="default", messages=[{"role": "user", "content": f"Say {tag}."}])
    choice = completion.choices[0]
    assert f"{TEXT_ANSWER} for {tag}." in choice.message.content
    assert choice.finish_reason == "stop"
    note(facts, proxy, "chat usage", completion.usage and completion.usage.model_dump(exclude_none=True))
    assert_usage(completion.usage, proxy.agent)


def test_chat_completion_streamed(proxy, facts):
    tag = nonce()
    started = time.monotonic()
    stream = openai_client(proxy).chat.completions.create(
        model="default", messages=[{"role": "user", "content": f"Say {tag}."}], stream=True, stream_options={"include_usage": True}
    )
    text, finishes, usages, first = "", [], [], None
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content and first is None:
                first = time.monotonic() - started
            text += choice.delta.content or ""
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
        if chunk.usage:
            usages.append(chunk.usage)
    note(facts, proxy, "first content chunk, warm (s)", round(first, 3))
    assert f"{TEXT_ANSWER} for {tag}." in text
    assert finishes == ["stop"]
    assert len(usages) <= 1, "at most one usage chunk"
    assert_usage(usages[0] if usages else None, proxy.agent)


def test_anthropic_messages(proxy):
    tag = nonce()
    message = anthropic_client(proxy).messages.create(
        model="default", max_tokens=1024, messages=[{"role": "user", "content": f"Say {tag}."}]
    )
    text = "".join(block.text for block in message.content if block.type == "text")
    assert f"{TEXT_ANSWER} for {tag}." in text
    assert message.stop_reason == "end_turn"
    expected = USAGE[proxy.agent]
    assert message.usage.output_tokens == (expected["completion_tokens"] if expected else 0)


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
    scripts = [call.get("script") for call in proxy.model_calls()]
    assert SCRIPT_READ in scripts and "tool result" in scripts


def test_permission_is_refused_by_default(proxy, facts):
    """A shell command needs the client's permission: the proxy's default answers reject_once,
    so the command never runs. Codex then ends the turn (stop reason `cancelled`, which the
    proxy answers 502); the others tell their model the command was refused and answer."""
    prompt = f"Touch written.txt, then print notes.txt. {SCRIPT_RUN}"
    if proxy.agent in REJECTION_ENDS_TURN:
        with pytest.raises(openai.InternalServerError) as failed:
            chat(proxy, prompt)
        assert failed.value.status_code == 502 and "cancelled" in failed.value.message
        note(facts, proxy, "after reject_once", failed.value.message)
    else:
        answer = chat(proxy, prompt)
        assert answer.startswith("The tool said:") and proxy.notes.strip() not in answer
        note(facts, proxy, "after reject_once", answer)
    assert not (proxy.work / "written.txt").exists()


def test_permission_is_granted_with_allow_force(forced_proxy):
    answer = chat(forced_proxy, f"Touch written.txt, then print notes.txt. {SCRIPT_RUN}")
    assert (forced_proxy.work / "written.txt").exists()
    assert forced_proxy.notes.strip() in answer


def test_client_gone_cancels_the_session(proxy, facts):
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
    closed = time.monotonic()

    deadline = time.monotonic() + CANCEL_TIMEOUT_S
    while time.monotonic() < deadline:
        slow = [call for call in proxy.model_calls()[before:] if call.get("script") == SCRIPT_SLOW]
        if slow and "finished" in slow[0]:
            break
        time.sleep(0.02)
    assert slow and slow[0]["finished"] is False, f"the agent read its model's stream to the end: {slow}"
    note(facts, proxy, "model stream cut after client closed (s)", round(time.monotonic() - closed, 3))
    assert proxy.wait_idle(CANCEL_TIMEOUT_S), "the cancelled request is still in flight"

    tag = nonce()
    assert f"{TEXT_ANSWER} for {tag}." in chat(proxy, f"Say {tag}.")


def test_client_gone_while_a_command_runs(forced_proxy, facts):
    """A client that hangs up while the agent's shell command runs: the request ends, the
    agent serves the next one, and the fixture then checks that stopping the proxy stops the
    command too (no process whose environment names the scratch directory is left)."""
    proxy = forced_proxy
    stream = openai_client(proxy).chat.completions.create(
        model="default", messages=[{"role": "user", "content": f"Wait a while. {SCRIPT_LONG_COMMAND}"}], stream=True
    )
    # The stream shows nothing of the command itself, so wait for the process.
    deadline = time.monotonic() + CANCEL_TIMEOUT_S
    running = {}
    while not running and time.monotonic() < deadline:
        running = {pid: command for pid, command in scratch_processes(proxy.scratch).items() if command.strip() == LONG_COMMAND}
        if not running:
            time.sleep(0.05)
    assert running, f"`{LONG_COMMAND}` never started: {scratch_processes(proxy.scratch)}"
    stream.close()
    assert proxy.wait_idle(CANCEL_TIMEOUT_S), "the cancelled request is still in flight"
    # Whether the agent stops its command on cancel is its own affair (the proxy stops it
    # with the agent's process group at the latest); noted for the record.
    deadline = time.monotonic() + COMMAND_STOP_S
    while (left := running.keys() & scratch_processes(proxy.scratch).keys()) and time.monotonic() < deadline:
        time.sleep(0.05)
    note(facts, proxy, f"command still running {COMMAND_STOP_S} s after the cancel", bool(left))

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
