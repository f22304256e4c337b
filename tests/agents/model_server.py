"""A scripted model server on loopback for the real ACP agents: the model API each agent
calls (Anthropic Messages for claude-agent-acp, OpenAI Responses for codex-acp, Gemini's
generateContent for Gemini CLI), answering what the test's prompt asks for.

The script is chosen from the request itself, so one server serves every test of a proxy
and tests need not tell it anything: the conversation the agent sends holds the client's
prompt, and the prompt holds one of the markers below. A request whose last item is a tool
result is the second half of a tool round and is answered with the text the tool returned.

    SCRIPT_READ   the model asks the agent's own file-reading tool for notes.txt
    SCRIPT_RUN    the model asks the agent's shell tool for RUN_COMMAND
    SCRIPT_SLOW   a long answer, one word every SLOW_WORD_S (a client to hang up on it)
    SCRIPT_LONG_COMMAND  the model asks the agent's shell tool for LONG_COMMAND
    client_rounds(N)  N rounds of the client's own shell tool, which the agent offers its
                  model as an MCP tool of the server agentwire gives it (see below)
    (none)        the text answer, TEXT_ANSWER, naming the prompt's `nonce-…` if it has one

Client tool rounds. A request from a client with tools reaches the agent with those tools
as an MCP server named `client`, and each agent shows them to its model in its own way:
claude-agent-acp as `mcp__client__<tool>` (Anthropic `input_schema`), codex-acp as the
Responses tools of a `namespace` item named `mcp__client` (its calls carry `namespace` and
`name`), Gemini CLI as `mcp_client_<tool>`. The script finds the client's shell tool there
(Claude Code's `Bash`, Codex's `exec_command` or `shell`, OpenCode's `bash`, a script's own
`bash`), fills in the arguments its schema names, and runs round_command(k) in round k; once
N results came back it answers CLIENT_ANSWER followed by every result, in order. A result
is the agent's native tool result for a call of a client tool (as the model sees it:
Claude's `tool_result`, Codex's `function_call_output`, Gemini's `functionResponse`) or a
user message giving the result of an earlier call (agentwire's LATE_RESULT: a call
answered with DEFERRED_NOTE before the agent's own limit has its result prompted when the
client sends it); to DEFERRED_NOTE the model answers WAIT_ANSWER and ends its turn, as the
note asks.

Every request is logged (`requests`), with the script it got and, for a stream, whether the
agent hung up before its end: the tests read the log to see that nothing else arrived. A
client-tool request also logs the inner session it belongs to (Claude Code's `session_id`
in `metadata.user_id`, Codex's `prompt_cache_key`; Gemini sends none), the client tools its
model was offered, the tool it called, every result it was given (`results`: text, whether
it was an error, whether it came as a prompt) and when it arrived (`at`, monotonic); every
request logs every tool it offers (`offered`).
"""

import http.server
import json
import re
import secrets
import threading
import time

SCRIPT_READ = "[script: read notes.txt]"
SCRIPT_RUN = "[script: run the command]"
SCRIPT_SLOW = "[script: a slow answer]"
SCRIPT_LONG_COMMAND = "[script: run a long command]"
CLIENT_ROUNDS = re.compile(r"\[script: client tool rounds (\d+)\]")
# What the model answers once every round is done, then quotes each result.
CLIENT_ANSWER = "The client's tool said"
# What agentwire tells the agent's model when it answers a call before the agent's own
# limit, and how it gives the client's result afterwards (src/acp/conversations.rs).
DEFERRED_NOTE = "is still running on the user's side"
LATE_RESULT = "The result of your earlier tool call"
WAIT_ANSWER = "I will wait for the tool's result."
# The client's shell tool, by its name without the MCP prefix, in order of preference.
SHELL_TOOLS = ("bash", "exec_command", "shell", "shell_command")
# The MCP server agentwire gives the agent, as each agent's model sees its tools.
MCP_PREFIX = {"messages": "mcp__client__", "responses": "mcp__client", "gemini": "mcp_client_"}
RUN_COMMAND = "touch written.txt && cat notes.txt"
# Outlives any test: whoever started it must stop it.
LONG_COMMAND = "sleep 600"
TEXT_ANSWER = "The scripted answer"
SLOW_WORDS = 150
SLOW_WORD_S = 0.2
# The usage every answer reports, per API: what the proxies pass on is compared with it.
ANTHROPIC_USAGE = {"input_tokens": 120, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 3000, "output_tokens": 42}
RESPONSES_USAGE = {
    "input_tokens": 3130,
    "input_tokens_details": {"cached_tokens": 3000},
    "output_tokens": 42,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 3172,
}
GEMINI_USAGE = {"promptTokenCount": 120, "candidatesTokenCount": 10, "totalTokenCount": 130}
NONCE = re.compile(r"nonce-[0-9a-f]+")


def text_answer(conversation):
    nonce = NONCE.search(conversation)
    return f"{TEXT_ANSWER} for {nonce.group(0)}." if nonce else f"{TEXT_ANSWER}."


def tool_answer(output):
    return f"The tool said: {output.strip()}"


def client_rounds(rounds):
    """The marker asking for `rounds` rounds of the client's shell tool."""
    return f"[script: client tool rounds {rounds}]"


def round_command(k):
    """The command of round `k` (from 1): `cat notes.txt`, then commands whose output is
    not their own text (`round-2` comes only from running `echo round-$((1+1))`)."""
    return "cat notes.txt" if k == 1 else f"echo round-$((1+{k - 1}))"


def round_output(k, notes):
    """What round `k`'s command prints in a directory whose notes.txt holds `notes`."""
    return notes.strip() if k == 1 else f"round-{k}"


def shell_arguments(schema, command, k):
    """The arguments of a shell tool with JSON schema `schema` running `command`: the
    command under the property the tool names it by (`cmd`, or `command` as a string or an
    argv), a description when the tool has one."""
    properties = (schema or {}).get("properties") or {}
    if "cmd" in properties:
        arguments = {"cmd": command}
    elif (properties.get("command") or {}).get("type") == "array":
        arguments = {"command": ["bash", "-lc", command]}
    else:
        arguments = {"command": command}
    if "description" in properties:
        arguments["description"] = f"Round {k} of the scripted task"
    return arguments


def unwrap_result(text):
    """A tool result's text without what the agent wrapped around it: codex-acp's
    `Wall time: …\nOutput:\n<MCP content as JSON>`, Gemini CLI's `<untrusted_context>`."""
    head, marker, rest = text.partition("Output:\n")
    if marker and head.startswith("Wall time:"):
        try:
            content = json.loads(rest)
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        except ValueError:
            return rest
    return text.replace("<untrusted_context>", "").replace("</untrusted_context>", "").strip("\n")


def flat_text(value):
    """The text of a message content: a string, or a list of parts with `text`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(flat_text(part) for part in value)
    if isinstance(value, dict):
        return value.get("text") if isinstance(value.get("text"), str) else ""
    return ""


def client_plan(rounds, tools, results, waiting):
    """What a client-tool script answers: ("client round K", (tool, arguments)),
    ("client answer", text), ("client wait", text) or ("client tool missing", text).
    `tools`: the client's tools as (bare name, schema, call), `results`: what came back so
    far, `waiting`: the conversation ends with DEFERRED_NOTE."""
    real = [result for result in results if DEFERRED_NOTE not in result["text"]]
    if waiting:
        return "client wait", WAIT_ANSWER
    if len(real) >= rounds:
        quoted = " | ".join(" ".join(result["text"].split()) for result in real)
        return "client answer", f"{CLIENT_ANSWER}: {quoted}"
    shell = next((tool for name in SHELL_TOOLS for tool in tools if tool[0].lower() == name), None)
    if shell is None:
        return "client tool missing", f"No client shell tool among {[tool[0] for tool in tools]}."
    k = len(real) + 1
    return f"client round {k}", (shell[2], shell_arguments(shell[1], round_command(k), k))


def shown(call):
    """A client tool's name as its model is offered it: `mcp__client__bash`, or for a
    Responses namespace `mcp__client/bash`."""
    return call if isinstance(call, str) else "/".join(filter(None, (call.get("namespace"), call["name"])))


def offered(body):
    """Every tool a model request offers, by name: a Responses namespace's as
    `namespace/name`, a tool with no name (a hosted one) by its type, a Gemini tool that is
    no function declaration by its key (`googleSearch`)."""
    names = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names += [f"{tool.get('name')}/{child.get('name')}" for child in tool.get("tools") or []]
        elif "functionDeclarations" in tool or not ("name" in tool or "type" in tool):
            names += [declared.get("name") for declared in tool.get("functionDeclarations") or []]
            names += [key for key in tool if key != "functionDeclarations"]
        else:
            names.append(tool.get("name") or tool.get("type"))
    return sorted(str(name) for name in names)


def late_result(role, text):
    """A result the agent was prompted with (LATE_RESULT), from a user message's text."""
    if role == "user" and LATE_RESULT in text:
        return {"text": text[text.index(LATE_RESULT) :], "error": "(it failed)" in text, "prompt": True}
    return None


def messages_view(body):
    """(client tools, results, waiting) of an Anthropic Messages request."""
    prefix = MCP_PREFIX["messages"]
    tools = [
        (tool["name"][len(prefix) :], tool.get("input_schema"), tool["name"])
        for tool in body.get("tools") or []
        if (tool.get("name") or "").startswith(prefix)
    ]
    calls, results, last_is_result = set(), [], False
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            last_is_result = False
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and (block.get("name") or "").startswith(prefix):
                calls.add(block.get("id"))
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                text = unwrap_result(flat_text(block.get("content")))
                results.append({"text": text, "error": bool(block.get("is_error")), "prompt": False})
                last_is_result = True
            elif block.get("type") == "text" and (late := late_result(message.get("role"), block.get("text") or "")):
                results.append(late)
    return tools, results, last_is_result and DEFERRED_NOTE in results[-1]["text"]


def responses_view(body):
    """(client tools, results, waiting) of an OpenAI Responses request."""
    namespace = MCP_PREFIX["responses"]
    tools = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace" and tool.get("name") == namespace:
            tools += [(child["name"], child.get("parameters"), {"namespace": namespace, "name": child["name"]}) for child in tool.get("tools") or []]
        elif (tool.get("name") or "").startswith(namespace + "__"):
            tools.append((tool["name"][len(namespace) + 2 :], tool.get("parameters"), {"name": tool["name"]}))
    calls, results, last_is_result = set(), [], False
    for item in body.get("input") or []:
        last_is_result = False
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call" and (item.get("namespace") == namespace or (item.get("name") or "").startswith(namespace + "__")):
            calls.add(item.get("call_id"))
        elif kind in ("function_call_output", "custom_tool_call_output") and item.get("call_id") in calls:
            output = item.get("output")
            text = output if isinstance(output, str) else flat_text(output)
            # codex-acp's words for a call that failed (its limit, an MCP error).
            results.append({"text": unwrap_result(text), "error": text.startswith("tool call error"), "prompt": False})
            last_is_result = True
        elif kind in ("message", None) and (late := late_result(item.get("role"), flat_text(item.get("content")))):
            results.append(late)
    return tools, results, last_is_result and DEFERRED_NOTE in results[-1]["text"]


def gemini_view(body):
    """(client tools, results, waiting) of a Gemini generateContent request."""
    prefix = MCP_PREFIX["gemini"]
    tools = [
        (declared["name"][len(prefix) :], declared.get("parametersJsonSchema") or declared.get("parameters"), declared["name"])
        for tool in body.get("tools") or []
        for declared in tool.get("functionDeclarations") or []
        if (declared.get("name") or "").startswith(prefix)
    ]
    results, last_is_result = [], False
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            last_is_result = False
            response = part.get("functionResponse")
            if response and (response.get("name") or "").startswith(prefix):
                answer = response.get("response") or {}
                if "error" in answer:
                    results.append({"text": json.dumps(answer["error"]), "error": True, "prompt": False})
                else:
                    results.append({"text": unwrap_result(flat_text(answer.get("output"))), "error": False, "prompt": False})
                last_is_result = True
            elif (late := late_result(content.get("role"), part.get("text") or "")):
                results.append(late)
    return tools, results, last_is_result and DEFERRED_NOTE in results[-1]["text"]


def script_of(conversation):
    for script in (SCRIPT_READ, SCRIPT_RUN, SCRIPT_SLOW, SCRIPT_LONG_COMMAND):
        if script in conversation:
            return script
    return None


def command_of(script):
    return LONG_COMMAND if script == SCRIPT_LONG_COMMAND else RUN_COMMAND


def words(text):
    """`text` in word-sized pieces that join back to it."""
    return re.findall(r"\S+\s*", text)


class Server:
    """The server, listening on 127.0.0.1 (a free port) in a thread of its own."""

    def __init__(self, workspace):
        self.workspace = str(workspace)
        self.requests = []
        self.lock = threading.Lock()
        server = self

        class Handler(ScriptedHandler):
            owner = server

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def log(self, entry):
        with self.lock:
            self.requests.append(entry)

    def snapshot(self):
        with self.lock:
            return [dict(entry) for entry in self.requests]

    def close(self):
        self.http.shutdown()
        self.http.server_close()


class ScriptedHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner = None

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        # Claude Code checks that the base URL answers before its first call.
        self.owner.log({"method": "HEAD", "path": self.path})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_CONNECT(self):
        # What a call to anywhere else looks like: the agents' HTTPS_PROXY is this server.
        self.owner.log({"method": "CONNECT", "path": self.path})
        self.reply(403, {"error": {"message": "no network in tests"}})

    def do_GET(self):
        self.owner.log({"method": "GET", "path": self.path})
        self.reply(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        self.entry = {"method": "POST", "path": path, "model": body.get("model"), "script": None, "offered": offered(body)}
        self.owner.log(self.entry)
        if path == "/v1/messages":
            self.answer_messages(body)
        elif path == "/v1/messages/count_tokens":
            self.reply(200, {"input_tokens": 100})
        elif path == "/v1/responses":
            self.answer_responses(body)
        elif re.fullmatch(r"/v1beta/models/[^/:]+:(stream)?[gG]enerateContent", path):
            self.answer_gemini(path, body)
        elif re.fullmatch(r"/v1beta/models/[^/:]+:countTokens", path):
            self.reply(200, {"totalTokens": 100})
        else:
            self.reply(404, {"error": {"message": f"no route {self.path}"}})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, events, slow=False):
        """Writes SSE `events` ((name or None, data) pairs), noting whether the agent hung up
        first; with `slow`, SLOW_WORD_S between events."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for name, data in events:
                frame = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                self.wfile.write(frame.encode())
                self.wfile.flush()
                if slow:
                    time.sleep(SLOW_WORD_S)
            self.entry["finished"] = True
        except (BrokenPipeError, ConnectionResetError):
            self.entry["finished"] = False

    def plan(self, conversation, tool_output):
        """(script, text): what to answer; text is None for a tool call."""
        if tool_output is not None:
            return "tool result", tool_answer(tool_output)
        script = script_of(conversation)
        if script == SCRIPT_SLOW:
            return script, "This is a long answer. " * (SLOW_WORDS // 5)
        if script in (SCRIPT_READ, SCRIPT_RUN, SCRIPT_LONG_COMMAND):
            return script, None
        return "text", text_answer(conversation)

    def client_script(self, rounds, conversation, view, session):
        """(script, text or (call, arguments)) for the client-tool script `rounds` (the
        marker's match in `conversation`), logged with what the request held."""
        tools, results, waiting = view
        script, answer = client_plan(int(rounds.group(1)), tools, results, waiting)
        nonce = NONCE.search(conversation)
        self.entry.update(
            nonce=nonce and nonce.group(0),
            session=session,
            client_tools=sorted(shown(tool[2]) for tool in tools),
            results=results,
            at=time.monotonic(),
        )
        if not isinstance(answer, str):
            self.entry["called"] = shown(answer[0])
        return script, answer

    # Anthropic Messages (claude-agent-acp's Claude Code).
    def answer_messages(self, body):
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        results = [block for block in last.get("content") or [] if isinstance(block, dict) and block.get("type") == "tool_result"]
        output = None
        if results:
            content = results[-1].get("content")
            output = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content or [])
        tool = None
        conversation = json.dumps(messages)
        rounds = CLIENT_ROUNDS.search(conversation)
        if (body.get("output_config") or {}).get("format"):
            # A side request for structured output (the session's title).
            script, text = "title", json.dumps({"title": "Scripted"})
        elif rounds:
            try:
                session = json.loads((body.get("metadata") or {}).get("user_id") or "{}").get("session_id")
            except ValueError:
                session = None
            script, text = self.client_script(rounds, conversation, messages_view(body), session)
            if not isinstance(text, str):
                tool, text = text, None
        else:
            script, text = self.plan(conversation, output)
            if text is None:
                names = [declared.get("name") for declared in body.get("tools") or []]
                if script == SCRIPT_READ:
                    name = next((n for n in names if n in ("Read", "mcp__acp__Read")), "Read")
                    tool = (name, {"file_path": f"{self.owner.workspace}/notes.txt"})
                else:
                    name = next((n for n in names if n in ("Bash", "mcp__acp__Bash")), "Bash")
                    tool = (name, {"command": command_of(script), "description": "Run the scripted command"})
        self.entry["script"] = script
        model = body.get("model", "")
        start = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        events = [("message_start", {"type": "message_start", "message": start})]
        if text is not None:
            events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}) for word in words(text)]
            stop = "end_turn"
        else:
            name, arguments = tool
            call = f"toolu_scripted_{secrets.token_hex(6)}" if script.startswith("client") else "toolu_scripted"
            events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": call, "name": name, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json.dumps(arguments)}}))
            stop = "tool_use"
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": ANTHROPIC_USAGE}))
        events.append(("message_stop", {"type": "message_stop"}))
        self.stream(events, slow=script == SCRIPT_SLOW)

    # OpenAI Responses (codex-acp).
    def answer_responses(self, body):
        items = body.get("input") or []
        last = items[-1] if items and isinstance(items[-1], dict) else {}
        output = None
        if last.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = last.get("output")
            output = output if isinstance(output, str) else json.dumps(output)
        conversation = json.dumps(items)
        rounds = CLIENT_ROUNDS.search(conversation)
        call = None
        if rounds:
            session = body.get("prompt_cache_key") or self.headers.get("session-id")
            script, text = self.client_script(rounds, conversation, responses_view(body), session)
            if not isinstance(text, str):
                call, text = text, None
        else:
            script, text = self.plan(conversation, output)
        self.entry["script"] = script
        sequence = iter(range(1 << 30))

        def event(data):
            data["sequence_number"] = next(sequence)
            return data["type"], data

        response = {"id": "resp_scripted", "object": "response", "created_at": int(time.time()), "status": "in_progress", "model": body.get("model", ""), "output": []}
        events = [event({"type": "response.created", "response": response}), event({"type": "response.in_progress", "response": response})]
        if call is not None:
            named, arguments = call
            item = {"type": "function_call", "id": "fc_scripted", "call_id": f"call_scripted_{secrets.token_hex(6)}", **named, "arguments": json.dumps(arguments), "status": "completed"}
            events.append(event({"type": "response.output_item.added", "output_index": 0, "item": dict(item, arguments="", status="in_progress")}))
            events.append(event({"type": "response.output_item.done", "output_index": 0, "item": item}))
        elif text is None:
            arguments = json.dumps({"cmd": "cat notes.txt" if script == SCRIPT_READ else command_of(script)})
            item = {"type": "function_call", "id": "fc_scripted", "call_id": "call_scripted", "name": "exec_command", "arguments": arguments, "status": "completed"}
            events.append(event({"type": "response.output_item.added", "output_index": 0, "item": dict(item, arguments="", status="in_progress")}))
            events.append(event({"type": "response.output_item.done", "output_index": 0, "item": item}))
        else:
            part = {"type": "output_text", "text": "", "annotations": []}
            item = {"type": "message", "id": "msg_scripted", "role": "assistant", "status": "in_progress", "content": []}
            place = {"output_index": 0, "item_id": "msg_scripted", "content_index": 0}
            events.append(event({"type": "response.output_item.added", "output_index": 0, "item": item}))
            events.append(event({"type": "response.content_part.added", **place, "part": part}))
            events += [event({"type": "response.output_text.delta", **place, "delta": word}) for word in words(text)]
            events.append(event({"type": "response.output_text.done", **place, "text": text}))
            part = dict(part, text=text)
            events.append(event({"type": "response.content_part.done", **place, "part": part}))
            item = dict(item, status="completed", content=[part])
            events.append(event({"type": "response.output_item.done", "output_index": 0, "item": item}))
        done = dict(response, status="completed", output=[item], usage=RESPONSES_USAGE)
        events.append(event({"type": "response.completed", "response": done}))
        self.stream(events, slow=script == SCRIPT_SLOW)

    # Gemini generateContent (Gemini CLI).
    def answer_gemini(self, path, body):
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        responses = [part["functionResponse"] for part in last.get("parts") or [] if "functionResponse" in part]
        streamed = ":stream" in path
        if not streamed:
            # The model router's classifier (and any other side question) asks for JSON.
            self.entry["script"] = "router"
            choice = {"reasoning": "a scripted choice", "model_choice": "flash", "complexity_reasoning": "simple", "complexity_score": 1, "next_speaker": "user"}
            candidate = {"content": {"role": "model", "parts": [{"text": json.dumps(choice)}]}, "finishReason": "STOP", "index": 0}
            return self.reply(200, {"candidates": [candidate], "usageMetadata": GEMINI_USAGE})
        output = json.dumps(responses[-1].get("response")) if responses else None
        conversation = json.dumps(contents)
        rounds = CLIENT_ROUNDS.search(conversation)
        call = None
        if rounds:
            script, text = self.client_script(rounds, conversation, gemini_view(body), None)
            if not isinstance(text, str):
                call, text = {"name": text[0], "args": text[1]}, None
        else:
            script, text = self.plan(conversation, output)
        self.entry["script"] = script
        if call is not None:
            parts = [[{"functionCall": call}]]
        elif text is None:
            if script == SCRIPT_READ:
                call = {"name": "read_file", "args": {"absolute_path": f"{self.owner.workspace}/notes.txt", "file_path": f"{self.owner.workspace}/notes.txt"}}
            else:
                call = {"name": "run_shell_command", "args": {"command": command_of(script), "description": "Run the scripted command"}}
            parts = [[{"functionCall": call}]]
        else:
            parts = [[{"text": word}] for word in words(text)]
        chunks = [{"candidates": [{"content": {"role": "model", "parts": part}, "index": 0}], "modelVersion": "scripted"} for part in parts]
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = GEMINI_USAGE
        self.stream([(None, chunk) for chunk in chunks], slow=script == SCRIPT_SLOW)
