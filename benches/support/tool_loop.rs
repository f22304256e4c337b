//! A Claude-Code-like tool loop, for the conversation benchmarks: the workload (the first
//! request, what the agent does each round, the client's tool results) and a driver for
//! each transport, in memory — cursor-agent's stream-json path (`Bridge::in_conversation`,
//! the agent's output scripted) and a warm ACP agent (`acp::Connection` with the client's
//! tools as an MCP server, the agent scripted, its MCP client included).
//!
//! The workload is Claude Code 2.1.330's first request of a session as recorded
//! (`../shared/fixtures/clients`: its system blocks, its `role: "system"` turn, its 12
//! tools with their schemas, its session header), sent without streaming; without the
//! captures (or with `AGENTWIRE_WORKLOAD=project`) a generated request of the same shape:
//! a 20 KB system prompt and 15 tools. Each round the agent says a line and calls `Read`
//! or `Bash`, whose result the client sends back (300 bytes to 5 KB); every tenth round
//! it answers in text instead, and the client follows up with a new message.

use std::path::Path;

use agentwire::acp::{AcpConfig, Connection, McpExchange, TurnId};
use agentwire::bridge::{Bridge, BridgeParams, Caller, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use agentwire::live_chat::{LiveChat, LiveConfig};
use agentwire::mcp::{ExchangeId, ExchangeOutput, HttpRequest};
use agentwire::registry::{ConversationKeys, Decision, Registry, RegistryConfig};
use serde_json::{Value, json};

use crate::stopwatch::{Lap, Stopwatch};

/// The dialect Claude Code speaks.
pub const DIALECT: Dialect = Dialect::Messages;

/// Where the ACP driver says the MCP endpoint is.
const ENDPOINT: &str = "http://127.0.0.1:9/mcp/";

/// The first request of the loop and what identifies its conversation.
pub struct Workload {
    /// The request body, not streamed.
    pub first: Value,
    /// Claude Code's `X-Claude-Code-Session-Id`.
    pub session: String,
    /// The model the request names.
    pub model: String,
    /// Where it comes from, for the report.
    pub source: &'static str,
}

impl Workload {
    /// The recorded Claude Code request when the captures are there, else the generated
    /// one.
    pub fn load() -> Workload {
        let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/clients/claude-code-2.1.330-requests.jsonl");
        let forced = std::env::var("AGENTWIRE_WORKLOAD").is_ok_and(|w| w == "project");
        if !forced {
            if let Ok(text) = std::fs::read_to_string(capture) {
                let first = text
                    .lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .find(|r| r["method"] == "POST" && r["body"]["tools"].is_array());
                if let Some(record) = first {
                    let mut body = record["body"].clone();
                    body["stream"] = json!(false);
                    return Workload {
                        model: body["model"].as_str().unwrap_or("auto").to_owned(),
                        session: record["headers"]["X-Claude-Code-Session-Id"]
                            .as_str()
                            .unwrap_or("session")
                            .to_owned(),
                        first: body,
                        source: "Claude Code 2.1.330's first request, as recorded",
                    };
                }
            }
        }
        generated()
    }

    /// The first request's messages.
    pub fn messages(&self) -> Vec<Value> {
        self.first["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The request body holding `messages`.
    pub fn body(&self, messages: &[Value]) -> Vec<u8> {
        let mut body = self.first.clone();
        body["messages"] = Value::Array(messages.to_vec());
        serde_json::to_vec(&body).expect("a body serialises")
    }

    /// The request's caller: its session header, the local owner.
    pub fn caller(&self) -> Caller<'_> {
        Caller {
            keys: ConversationKeys {
                client_session: Some(&self.session),
                ..ConversationKeys::default()
            },
            ..Caller::default()
        }
    }

    /// The first request of another conversation `n` (its own first message), for
    /// filling a registry with many.
    pub fn other_first(&self, n: usize) -> Vec<Value> {
        let mut messages = self.messages();
        messages.push(json!({"role": "user", "content": format!("Task {n}: fix issue #{n}.")}));
        messages
    }
}

/// A request of Claude Code's shape without the captures: a 20 KB system prompt, 15 tools.
fn generated() -> Workload {
    let guidance = [
        "Read a file before changing it, and change only what the task needs.",
        "Prefer the dedicated tools over shell commands for reading and searching files.",
        "Run the project's tests after a change and report what they say, failures included.",
        "Keep answers short: the user reads them in a terminal.",
        "Never commit, push or delete anything unless the user asks for it explicitly.",
        "When a command fails, read its output before trying something else.",
        "Quote file paths with their line numbers so that the user can open them.",
        "Ask before doing anything that cannot be undone.",
    ];
    let mut system = String::new();
    let mut section = 0;
    while system.len() < 20_000 {
        section += 1;
        system.push_str(&format!("\n# Section {section}\n"));
        for line in guidance {
            system.push_str(&format!("- {line} (rule {section}.{})\n", line.len()));
        }
    }
    let property =
        |kind: &str, description: &str| json!({"type": kind, "description": description});
    let tool = |name: &str, purpose: &str, properties: Value, required: Value| {
        json!({
            "name": name,
            "description": format!("{purpose}\n\nUsage:\n- {}\n- {}", guidance[0], guidance[1]),
            "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
        })
    };
    let tools = json!([
        tool(
            "Bash",
            "Runs a shell command in the working directory.",
            json!({"command": property("string", "The command to run."), "timeout": property("number", "Milliseconds before the command is stopped (at most 600000)."), "description": property("string", "What the command does, in 5 to 10 words."), "run_in_background": property("boolean", "Run it in the background.")}),
            json!(["command"])
        ),
        tool(
            "Read",
            "Reads a file, with line numbers.",
            json!({"file_path": property("string", "The absolute path of the file."), "offset": property("integer", "The first line to read."), "limit": property("integer", "How many lines to read.")}),
            json!(["file_path"])
        ),
        tool(
            "Edit",
            "Replaces a string in a file.",
            json!({"file_path": property("string", "The absolute path of the file."), "old_string": property("string", "The text to replace."), "new_string": property("string", "The text to put instead."), "replace_all": property("boolean", "Replace every occurrence.")}),
            json!(["file_path", "old_string", "new_string"])
        ),
        tool(
            "Write",
            "Writes a whole file.",
            json!({"file_path": property("string", "The absolute path of the file."), "content": property("string", "The file's content.")}),
            json!(["file_path", "content"])
        ),
        tool(
            "Glob",
            "Finds files by a glob pattern.",
            json!({"pattern": property("string", "The pattern, such as src/**/*.rs."), "path": property("string", "The directory to search in.")}),
            json!(["pattern"])
        ),
        tool(
            "Grep",
            "Searches file contents with a regular expression.",
            json!({"pattern": property("string", "The regular expression."), "path": property("string", "The file or directory."), "glob": property("string", "Only files matching this glob."), "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]}, "-i": property("boolean", "Ignore case."), "-n": property("boolean", "Show line numbers."), "head_limit": property("number", "At most this many lines.")}),
            json!(["pattern"])
        ),
        tool(
            "LS",
            "Lists a directory.",
            json!({"path": property("string", "The absolute path."), "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns to leave out."}}),
            json!(["path"])
        ),
        tool(
            "WebFetch",
            "Fetches a URL and answers a question about it.",
            json!({"url": {"type": "string", "format": "uri"}, "prompt": property("string", "What to find in the page.")}),
            json!(["url", "prompt"])
        ),
        tool(
            "WebSearch",
            "Searches the web.",
            json!({"query": property("string", "The query."), "allowed_domains": {"type": "array", "items": {"type": "string"}}, "blocked_domains": {"type": "array", "items": {"type": "string"}}}),
            json!(["query"])
        ),
        tool(
            "TodoWrite",
            "Updates the task list.",
            json!({"todos": {"type": "array", "items": {"type": "object", "properties": {"content": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}, "activeForm": {"type": "string"}}, "required": ["content", "status", "activeForm"]}}}),
            json!(["todos"])
        ),
        tool(
            "Task",
            "Starts a subagent for a self-contained task.",
            json!({"description": property("string", "The task in 3 to 5 words."), "prompt": property("string", "The task."), "subagent_type": property("string", "Which kind of agent.")}),
            json!(["description", "prompt", "subagent_type"])
        ),
        tool(
            "NotebookEdit",
            "Edits a cell of a Jupyter notebook.",
            json!({"notebook_path": property("string", "The notebook."), "cell_id": property("string", "The cell."), "new_source": property("string", "The cell's new source."), "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}}),
            json!(["notebook_path", "new_source"])
        ),
        tool(
            "MultiEdit",
            "Makes several replacements in one file.",
            json!({"file_path": property("string", "The file."), "edits": {"type": "array", "items": {"type": "object", "properties": {"old_string": {"type": "string"}, "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}}, "required": ["old_string", "new_string"]}}}),
            json!(["file_path", "edits"])
        ),
        tool(
            "ExitPlanMode",
            "Presents a plan and leaves planning mode.",
            json!({"plan": property("string", "The plan, in Markdown.")}),
            json!(["plan"])
        ),
        tool(
            "AskUserQuestion",
            "Asks the user a question with choices.",
            json!({"question": property("string", "The question."), "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4}}),
            json!(["question", "options"])
        ),
    ]);
    Workload {
        first: json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "stream": false,
            "system": [{"type": "text", "text": system}],
            "tools": tools,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "The parser test fails. Find out why and fix it."}]}],
        }),
        session: "0b6a4c1e-5d2f-4e8a-9c3b-7f1e2d3c4b5a".into(),
        model: "claude-sonnet-4-5".into(),
        source: "a generated request of Claude Code's shape",
    }
}

/// What the agent does in one round.
pub enum Step {
    /// Says `text`, then calls a client tool; the client's next request brings `result`.
    Call {
        text: String,
        tool: Tool,
        argument: String,
        result: String,
    },
    /// Answers `text` and ends its turn; the client's next request adds `follow_up`.
    Answer { text: String, follow_up: String },
}

/// The client tool a round calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Read,
    Bash,
}

impl Tool {
    /// The client's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Read => "Read",
            Tool::Bash => "Bash",
        }
    }

    /// Its arguments as the client's schema has them.
    pub fn arguments(self, argument: &str) -> Value {
        match self {
            Tool::Read => json!({"file_path": argument}),
            Tool::Bash => json!({"command": argument}),
        }
    }

    /// The cursor-agent `tool_call` of the same call (intercepted as the client's tool).
    fn cursor_call(self, argument: &str) -> Value {
        match self {
            Tool::Read => json!({"readToolCall": {"args": {"path": argument}}}),
            Tool::Bash => json!({"shellToolCall": {"args": {"command": argument}}}),
        }
    }
}

/// The result sizes of the nine tool rounds of every ten, in bytes.
const RESULT_SIZES: [usize; 9] = [640, 2_300, 420, 3_800, 1_100, 300, 2_900, 5_200, 900];

/// What the agent does in round `round` (0-based).
pub fn step(round: usize) -> Step {
    let place = round % 10;
    if place == 9 {
        return Step::Answer {
            text: format!(
                "Fixed: the parser now keeps escaped quotes inside strings (src/parser.rs:{}). All 214 tests pass.",
                100 + round
            ),
            follow_up: format!(
                "Thanks. Now add a regression test for an empty quoted string, and run the whole suite again (pass {}).",
                round / 10 + 1
            ),
        };
    }
    let size = RESULT_SIZES[place];
    if round % 2 == 0 {
        let file = format!("/home/user/project/src/parser/part_{round}.rs");
        Step::Call {
            text: format!("Let me read {file}."),
            tool: Tool::Read,
            result: file_listing(round, size),
            argument: file,
        }
    } else {
        Step::Call {
            text: "Running the parser's tests.".into(),
            tool: Tool::Bash,
            argument: format!(
                "cargo test -p parser -- --test-threads=1 2>&1 | tail -n {}",
                20 + round
            ),
            result: test_output(round, size),
        }
    }
}

/// A file as Claude Code's `Read` shows it: numbered lines, about `size` bytes.
fn file_listing(round: usize, size: usize) -> String {
    const CODE: [&str; 6] = [
        "pub fn parse_string(input: &str) -> Result<String, ParseError> {",
        "    let mut out = String::with_capacity(input.len());",
        "    while let Some(c) = chars.next() {",
        "        if c == '\\\\' { out.push(unescape(chars.next())?); continue; }",
        "        if c == '\"' { return Ok(out); }",
        "    Err(ParseError::Unterminated { at: input.len() })",
    ];
    let mut out = String::new();
    let mut line = 1 + round * 7;
    while out.len() < size {
        out.push_str(&format!("{line:>6}\t{}\n", CODE[line % CODE.len()]));
        line += 1;
    }
    out
}

/// `cargo test` output, about `size` bytes.
fn test_output(round: usize, size: usize) -> String {
    let mut out = String::from(
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.31s\n     Running unittests src/lib.rs (target/debug/deps/parser-3f2a)\n",
    );
    let mut n = 0;
    while out.len() < size {
        let verdict = if (n + round) % 17 == 3 {
            "FAILED"
        } else {
            "ok"
        };
        out.push_str(&format!(
            "test parser::tests::case_{round}_{n} ... {verdict}\n"
        ));
        n += 1;
    }
    out
}

/// The client's side of the loop: its conversation, grown by each response and the next
/// round's new content.
pub struct Client {
    pub messages: Vec<Value>,
}

impl Client {
    pub fn new(workload: &Workload) -> Client {
        Client {
            messages: workload.messages(),
        }
    }

    /// Takes round `round`'s response (a Messages body) as Claude Code echoes it, then
    /// adds what the next request brings. Returns the bytes of that new content.
    pub fn answered(&mut self, round: usize, response: &[u8]) -> usize {
        let response: Value = serde_json::from_slice(response).unwrap_or_else(|_| {
            panic!(
                "round {round}: a JSON response: {}",
                String::from_utf8_lossy(response)
            )
        });
        let content = response["content"].clone();
        let call = content
            .as_array()
            .and_then(|blocks| blocks.iter().find(|b| b["type"] == "tool_use"))
            .map(|b| b["id"].as_str().unwrap_or_default().to_owned());
        self.messages
            .push(json!({"role": "assistant", "content": content}));
        match step(round) {
            Step::Call { result, .. } => {
                let id =
                    call.unwrap_or_else(|| panic!("round {round} ends with a call: {response}"));
                self.messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}));
                result.len()
            }
            Step::Answer { follow_up, .. } => {
                assert!(call.is_none(), "round {round} ends in text: {response}");
                self.messages.push(
                    json!({"role": "user", "content": [{"type": "text", "text": follow_up}]}),
                );
                follow_up.len()
            }
        }
    }
}

/// What one round gave the agent, and how long the core took for its request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    /// Prompt bytes: the invocation's stdin (stream-json), or everything written to the
    /// agent's stdin (ACP: `session/new`, `session/prompt`, notifications).
    pub prompt: usize,
    /// Bytes of MCP answers the agent read (ACP).
    pub mcp: usize,
    /// Whether the request resumed a session.
    pub resumed: bool,
    /// The core's time for the request: `Bridge::in_conversation`, or
    /// `Connection::start_conversation_turn` with the outputs it made drained.
    pub core: Lap,
    /// The core's time for the whole round: every call into the bridge or connection
    /// (the agent's output pushed, MCP requests, timeouts, outputs drained).
    pub core_all: Lap,
}

impl Given {
    pub fn total(&self) -> usize {
        self.prompt + self.mcp
    }
}

fn params(seed: u64, now: u64) -> BridgeParams {
    BridgeParams {
        now_ms: now,
        created_unix: 1_800_000_000,
        id_seed: seed,
    }
}

/// A cursor-agent chat id for conversation `n`.
pub fn chat_id(n: usize) -> String {
    format!("9f1c2d3e-aaaa-4bbb-8ccc-{n:012x}")
}

/// cursor-agent's stream-json path: one registry, a bridge per request, the agent's
/// output scripted.
pub struct StreamJson {
    pub registry: Registry,
    pub config: Config,
    pub now: u64,
    /// The last round's prompt, when kept.
    pub last_prompt: Option<Vec<u8>>,
}

impl StreamJson {
    pub fn new(conversations: RegistryConfig) -> StreamJson {
        StreamJson {
            registry: Registry::new(conversations),
            config: Config::default(),
            now: 0,
            last_prompt: None,
        }
    }

    /// Serves round `round` of conversation `n`: the bridge for `body`, the agent's
    /// scripted run, the turn's end. Returns what the agent was given and the response.
    pub fn round(
        &mut self,
        n: usize,
        round: usize,
        body: &[u8],
        caller: Caller<'_>,
    ) -> (Given, Vec<u8>) {
        self.now += 1_000;
        let seed = (n as u64) << 20 | round as u64;
        let started = Stopwatch::start();
        let mut bridge = Bridge::in_conversation(
            DIALECT,
            body,
            &self.config,
            params(seed, self.now),
            &mut self.registry,
            caller,
        );
        let core = started.lap();
        let invocation = bridge.invocation().expect("a valid request");
        let mut given = Given {
            prompt: invocation.stdin.len(),
            mcp: 0,
            resumed: invocation.args.iter().any(|a| a == "--resume"),
            core,
            core_all: core,
        };
        if let Some(kept) = &mut self.last_prompt {
            kept.clone_from(&invocation.stdin);
        }
        let chat = chat_id(n);
        let mut lines =
            vec![json!({"type":"system","subtype":"init","session_id":chat,"model":"Auto"})];
        let text = |text: &str| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":chat});
        match step(round) {
            Step::Call {
                text: said,
                tool,
                argument,
                ..
            } => {
                lines.push(text(&said));
                lines.push(json!({"type":"tool_call","subtype":"started","call_id":format!("toolu_{round}"),"tool_call":tool.cursor_call(&argument),"model_call_id":format!("m-{round}"),"session_id":chat}));
                lines.push(text("never reached"));
            }
            Step::Answer { text: said, .. } => {
                lines.push(text(&said));
                lines.push(json!({"type":"result","subtype":"success","is_error":false,"result":said,"session_id":chat,"usage":{"inputTokens":1000,"outputTokens":40}}));
            }
        }
        let lines: Vec<Vec<u8>> = lines
            .iter()
            .map(|line| {
                let mut bytes = serde_json::to_vec(line).unwrap();
                bytes.push(b'\n');
                bytes
            })
            .collect();
        let mut response = Vec::new();
        let mut stopped = false;
        let mut drain = |bridge: &mut Bridge, stopped: &mut bool| {
            while let Some(output) = bridge.poll_output() {
                match output {
                    Output::Body(bytes) => response.extend_from_slice(bytes),
                    Output::StopAgent => *stopped = true,
                    Output::Respawn => panic!("round {round}: the agent's chat was replaced"),
                    Output::Head(_) | Output::End => {}
                }
            }
        };
        let started = Stopwatch::start();
        for line in &lines {
            if stopped || bridge.is_ended() {
                break;
            }
            bridge.push_stdout(line, self.now).unwrap();
            drain(&mut bridge, &mut stopped);
        }
        let status = if stopped {
            ExitStatus::Signal(15)
        } else {
            ExitStatus::Code(0)
        };
        bridge.agent_exited(status, self.now).unwrap();
        drain(&mut bridge, &mut stopped);
        assert!(bridge.is_ended(), "round {round} ends");
        bridge.end_conversation_turn(&mut self.registry, self.now);
        while self.registry.poll_released().is_some() {}
        given.core_all += started.lap();
        (given, response)
    }
}

/// The ACP agent's MCP client of one session.
struct McpClient {
    token: String,
    auth: String,
    session: String,
    next_id: u64,
}

/// One session of the scripted ACP agent.
pub struct AgentSession {
    id: String,
    mcp: Option<McpClient>,
    /// The id of the prompt it is answering.
    prompt: Option<Value>,
    /// The exchange of the call it waits inside.
    waiting: Option<McpExchange>,
    /// Its turn goes on: it acts on the current round's step.
    act: bool,
}

/// A warm ACP agent and its connection: the agent in memory, answering what the
/// connection writes and calling the client's tools through each session's MCP server.
pub struct Acp {
    pub connection: Connection,
    pub now: u64,
    model: String,
    sessions: Vec<AgentSession>,
    /// Bytes written to the agent since the round began, and of MCP answers it read.
    prompt_bytes: usize,
    mcp_bytes: usize,
    /// Lines written to the agent and not yet read by it.
    inbox: Vec<u8>,
    /// Exchanges that ended since the agent last looked.
    ended: Vec<McpExchange>,
    /// The core's time in this round so far.
    core_all: Lap,
    /// The last round's MCP answers and stdin bytes, when kept.
    pub last_given: Option<Vec<u8>>,
}

/// The 32 bytes of entropy for round `round` of conversation `n`.
fn entropy(n: usize, round: usize) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut x = ((n as u64) << 32 | round as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    for chunk in out.chunks_mut(8) {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

impl Acp {
    /// A connection past its handshake, serving client tools over MCP.
    pub fn new(conversations: RegistryConfig, model: &str) -> Acp {
        let config = AcpConfig {
            mcp_endpoint: Some(ENDPOINT.into()),
            pool_size: 0,
            conversations,
            ..AcpConfig::default()
        };
        let mut acp = Acp {
            connection: Connection::new(config, 0),
            now: 0,
            model: model.to_owned(),
            sessions: Vec::new(),
            prompt_bytes: 0,
            mcp_bytes: 0,
            inbox: Vec::new(),
            ended: Vec::new(),
            core_all: Lap::default(),
            last_given: None,
        };
        acp.collect();
        acp.agent_reads();
        assert!(acp.connection.is_ready(), "the handshake completes");
        acp
    }

    /// Sessions the agent has open.
    pub fn agent_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Takes the agent's record of its sessions (to tell its heap from the
    /// connection's): no later round may use them.
    pub fn forget_agent_sessions(&mut self) -> Vec<AgentSession> {
        std::mem::take(&mut self.sessions)
    }

    /// Serves round `round` of conversation `n`: the turn for `body`, then the agent's
    /// part (a session made and connected to its MCP server, the prompt, the step) until
    /// the response ends. Returns what the agent was given and the response.
    pub fn round(
        &mut self,
        n: usize,
        round: usize,
        body: &[u8],
        caller: Caller<'_>,
    ) -> (Given, Vec<u8>) {
        self.now += 1_000;
        self.prompt_bytes = 0;
        self.mcp_bytes = 0;
        self.core_all = Lap::default();
        if let Some(kept) = &mut self.last_given {
            kept.clear();
        }
        let seed = (n as u64) << 20 | round as u64;
        let resumed_before = self.connection.conversation_stats().resumed;
        let started = Stopwatch::start();
        let turn = self.connection.start_conversation_turn(
            DIALECT,
            body,
            &Config::default(),
            params(seed, self.now),
            caller,
            entropy(n, round),
        );
        let core = started.lap() + self.collect();
        self.core_all = Lap::default();
        let resumed = self.connection.conversation_stats().resumed > resumed_before;
        let mut response = Vec::new();
        let mut ended = false;
        let mut acted = false;
        for _ in 0..64 {
            self.agent_reads();
            for index in 0..self.sessions.len() {
                if self.sessions[index].act {
                    self.sessions[index].act = false;
                    assert!(!acted, "round {round}: the agent acts once");
                    acted = true;
                    self.act(index, round);
                }
            }
            ended |= self.drain_turn(turn, &mut response);
            if ended {
                break;
            }
            // The batch window of the calls, then the response ends.
            self.now += 300;
            let started = Stopwatch::start();
            if self
                .connection
                .poll_timeout()
                .is_some_and(|due| self.now >= due)
            {
                self.connection.handle_timeout(self.now);
            }
            self.core_all += started.lap();
            self.collect();
        }
        assert!(ended, "round {round}: the response ends");
        // What the turn's end wrote (a cancelled session, a closed one) is the round's too.
        self.collect();
        self.agent_reads();
        let given = Given {
            prompt: self.prompt_bytes,
            mcp: self.mcp_bytes,
            resumed,
            core,
            core_all: core + self.core_all,
        };
        (given, response)
    }

    fn drain_turn(&mut self, turn: TurnId, response: &mut Vec<u8>) -> bool {
        let started = Stopwatch::start();
        let mut ended = false;
        while let Some(output) = self.connection.poll_output(turn) {
            match output {
                Output::Body(bytes) => response.extend_from_slice(bytes),
                Output::End => ended = true,
                Output::Head(_) => {}
                Output::StopAgent | Output::Respawn => panic!("never over ACP"),
            }
        }
        self.core_all += started.lap();
        ended
    }

    /// Takes what the connection wrote to the agent and what its MCP exchanges answered
    /// (as an adapter does after every input): counted, and kept for the agent to read.
    /// Returns the time it took.
    fn collect(&mut self) -> Lap {
        let started = Stopwatch::start();
        while let Some(bytes) = self.connection.poll_transmit() {
            self.prompt_bytes += bytes.len();
            self.inbox.extend_from_slice(bytes);
            if let Some(kept) = &mut self.last_given {
                kept.extend_from_slice(bytes);
            }
        }
        while let Some(exchange) = self.connection.poll_mcp_ready() {
            while let Some(output) = self.connection.poll_mcp_output(exchange) {
                match output {
                    ExchangeOutput::Body(bytes) => {
                        self.mcp_bytes += bytes.len();
                        if let Some(kept) = &mut self.last_given {
                            kept.extend_from_slice(bytes);
                        }
                    }
                    ExchangeOutput::End => self.ended.push(exchange),
                    ExchangeOutput::Head(_) => {}
                }
            }
        }
        let took = started.lap();
        self.core_all += took;
        took
    }

    /// The agent reads what it was written, and learns which of its calls were answered.
    fn agent_reads(&mut self) {
        for exchange in std::mem::take(&mut self.ended) {
            if let Some(session) = self
                .sessions
                .iter_mut()
                .find(|s| s.waiting == Some(exchange))
            {
                session.waiting = None;
                session.act = true;
            }
        }
        while !self.inbox.is_empty() {
            let inbox = std::mem::take(&mut self.inbox);
            for line in inbox.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let message: Value = serde_json::from_slice(line).expect("JSON-RPC");
                self.agent_reads_message(&message);
            }
        }
    }

    fn agent_reads_message(&mut self, message: &Value) {
        let id = &message["id"];
        let session_id = message["params"]["sessionId"].as_str().unwrap_or_default();
        match message["method"].as_str() {
            Some("initialize") => self.agent_writes(&json!({"jsonrpc":"2.0","id":id,"result":{
                "protocolVersion":1,
                "agentCapabilities":{"mcpCapabilities":{"http":true,"sse":true}},
                "agentInfo":{"name":"@zed-industries/claude-agent-acp","version":"0.23.1"}}})),
            Some("session/new") => {
                let session = format!("s-{}", self.sessions.len() + 1);
                let server = &message["params"]["mcpServers"][0];
                let mcp = server["url"].as_str().map(|url| McpClient {
                    token: url.strip_prefix(ENDPOINT).expect("our endpoint").to_owned(),
                    auth: server["headers"][0]["value"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    session: String::new(),
                    next_id: 0,
                });
                self.sessions.push(AgentSession {
                    id: session.clone(),
                    mcp,
                    prompt: None,
                    waiting: None,
                    act: false,
                });
                // As the real agents do, it connects to the session's MCP server before
                // it answers.
                let index = self.sessions.len() - 1;
                if self.sessions[index].mcp.is_some() {
                    self.mcp_connect(index);
                }
                let model = self.model.clone();
                self.agent_writes(&json!({"jsonrpc":"2.0","id":id,"result":{"sessionId":session,
                    "models":{"currentModelId":model,"availableModels":[{"modelId":model,"name":model}]}}}));
            }
            Some("session/prompt") => {
                let session = self.session_mut(session_id);
                session.prompt = Some(id.clone());
                session.act = true;
            }
            Some("session/cancel") => {
                let prompt = self.session_mut(session_id).prompt.take();
                if let Some(prompt) = prompt {
                    self.agent_writes(
                        &json!({"jsonrpc":"2.0","id":prompt,"result":{"stopReason":"cancelled"}}),
                    );
                }
            }
            Some(_) if !id.is_null() => {
                self.agent_writes(&json!({"jsonrpc":"2.0","id":id,"result":{}}))
            }
            _ => {}
        }
    }

    fn session_mut(&mut self, id: &str) -> &mut AgentSession {
        self.sessions
            .iter_mut()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no session {id}"))
    }

    fn agent_writes(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        let started = Stopwatch::start();
        self.connection.push_stdout(&line, self.now).unwrap();
        self.core_all += started.lap();
        self.collect();
    }

    /// The agent's MCP client connects: `initialize`, `notifications/initialized`,
    /// `tools/list`.
    fn mcp_connect(&mut self, index: usize) {
        let (_, head) = self.mcp_post(index, &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}));
        let mcp = self.sessions[index].mcp.as_mut().unwrap();
        mcp.session = head.expect("an MCP session id");
        mcp.next_id = 1;
        self.mcp_post(
            index,
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        self.mcp_post(
            index,
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        );
    }

    /// A POST to the session's MCP server; returns the exchange and the session id its
    /// head gave, if any. What it answers at once is counted.
    fn mcp_post(&mut self, index: usize, body: &Value) -> (McpExchange, Option<String>) {
        let mcp = self.sessions[index].mcp.as_ref().expect("an MCP server");
        let body = serde_json::to_vec(body).unwrap();
        let session = (!mcp.session.is_empty()).then_some(mcp.session.as_str());
        let request = HttpRequest {
            method: "POST",
            accept: Some("application/json, text/event-stream"),
            content_type: Some("application/json"),
            session_id: session,
            protocol_version: session.map(|_| "2025-11-25"),
            body: &body,
        };
        let started = Stopwatch::start();
        let exchange = self
            .connection
            .handle_mcp(&mcp.token, Some(mcp.auth.as_bytes()), &request, self.now)
            .expect("the session's server admits its agent");
        let mut head_session = None;
        while let Some(output) = self.connection.poll_mcp_output(exchange) {
            match output {
                ExchangeOutput::Head(head) => {
                    assert!(head.status < 300, "MCP answered {}", head.status);
                    head_session = head.session_id.map(str::to_owned);
                }
                ExchangeOutput::Body(bytes) => self.mcp_bytes += bytes.len(),
                ExchangeOutput::End => self.ended.push(exchange),
            }
        }
        self.core_all += started.lap();
        self.collect();
        (exchange, head_session)
    }

    /// The agent's turn goes on with round `round`'s step: a line of text, then a call of
    /// the client's tool (it then waits inside it) or the end of its turn.
    fn act(&mut self, index: usize, round: usize) {
        let session = self.sessions[index].id.clone();
        let chunk = |text: &str| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}});
        match step(round) {
            Step::Call {
                text,
                tool,
                argument,
                ..
            } => {
                self.agent_writes(&chunk(&text));
                let mcp = self.sessions[index].mcp.as_mut().expect("client tools");
                mcp.next_id += 1;
                let id = mcp.next_id;
                let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool.name(),"arguments":tool.arguments(&argument)}});
                let (exchange, _) = self.mcp_post(index, &call);
                self.sessions[index].waiting = Some(exchange);
            }
            Step::Answer { text, .. } => {
                self.agent_writes(&chunk(&text));
                let prompt = self.sessions[index]
                    .prompt
                    .take()
                    .expect("a prompt to answer");
                self.agent_writes(
                    &json!({"jsonrpc":"2.0","id":prompt,"result":{"stopReason":"end_turn"}}),
                );
            }
        }
    }
}

/// cursor-agent with the client's tools as MCP tools (`live_chat`): one registry, a live
/// chat kept across the tool rounds of one process, the agent scripted as an MCP client
/// (its stdout, its requests to the chat's server).
pub struct Live {
    pub registry: Registry,
    pub config: Config,
    pub now: u64,
    /// The chat whose agent waits inside a call, its MCP session and held exchange.
    parked: Option<(LiveChat, String, ExchangeId)>,
    mcp_bytes: usize,
}

impl Live {
    pub fn new(conversations: RegistryConfig) -> Live {
        Live {
            registry: Registry::new(conversations),
            config: Config::default(),
            now: 0,
            parked: None,
            mcp_bytes: 0,
        }
    }

    /// Serves round `round` of conversation `n` (see [`StreamJson::round`]): a parked
    /// chat's process goes on when the request answers its call, else a run starts.
    pub fn round(
        &mut self,
        n: usize,
        round: usize,
        body: &[u8],
        caller: Caller<'_>,
    ) -> (Given, Vec<u8>) {
        self.now += 1_000;
        self.mcp_bytes = 0;
        let seed = (n as u64) << 20 | round as u64;
        let started = Stopwatch::start();
        let prepared = DIALECT
            .prepare(body, &self.config, &params(seed, self.now))
            .expect("a valid request");
        let decision =
            self.registry
                .decide(caller.owner, &caller.keys, &prepared.request, self.now);
        let resumed = matches!(decision, Decision::Resume { .. });
        let live = LiveConfig::default();
        let chat_id = chat_id(n);
        let (mut chat, mut session, prompt, core) = match self.parked.take() {
            Some((mut chat, session, held)) if resumed => {
                chat.attach(
                    DIALECT,
                    prepared,
                    decision,
                    &self.config,
                    params(seed, self.now),
                )
                .expect("the parked process takes the results");
                let core = started.lap();
                // The result the agent reads inside its call.
                self.read_exchange(&mut chat, held);
                (chat, session, 0, core)
            }
            _ => {
                let mut chat = LiveChat::start(
                    DIALECT,
                    prepared,
                    decision,
                    &self.config,
                    &live,
                    params(seed, self.now),
                    entropy(n, round),
                );
                let core = started.lap();
                let prompt = chat.invocation().expect("a valid request").stdin.len();
                let init =
                    json!({"type":"system","subtype":"init","session_id":chat_id,"model":"Auto"});
                push_line(&mut chat, &init, self.now);
                let session = self.mcp_connect(&mut chat);
                (chat, session, prompt, core)
            }
        };
        let text = |text: &str| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":chat_id});
        match step(round) {
            Step::Call {
                text: said,
                tool,
                argument,
                ..
            } => {
                push_line(&mut chat, &text(&said), self.now);
                let call = json!({"jsonrpc":"2.0","id":round + 2,"method":"tools/call","params":{"name":tool.name(),"arguments":tool.arguments(&argument)}});
                let held = self.mcp_post(&mut chat, &session, &call);
                // The batch window closes: the response ends, the agent waits.
                self.now += 300;
                chat.handle_timeout(self.now);
                let response = drain(&mut chat);
                assert!(
                    chat.is_suspended(),
                    "round {round}: the agent waits in its call"
                );
                chat.end_conversation_turn(&mut self.registry, self.now);
                self.parked = Some((chat, std::mem::take(&mut session), held));
                let given = self.given(prompt, resumed, core);
                (given, response)
            }
            Step::Answer { text: said, .. } => {
                push_line(&mut chat, &text(&said), self.now);
                let result = json!({"type":"result","subtype":"success","is_error":false,"result":said,"session_id":chat_id,"usage":{"inputTokens":1000,"outputTokens":40}});
                push_line(&mut chat, &result, self.now);
                chat.agent_exited(ExitStatus::Code(0), self.now).unwrap();
                let response = drain(&mut chat);
                assert!(chat.is_ended(), "round {round} ends");
                chat.end_conversation_turn(&mut self.registry, self.now);
                while self.registry.poll_released().is_some() {}
                let given = self.given(prompt, resumed, core);
                (given, response)
            }
        }
    }

    fn given(&self, prompt: usize, resumed: bool, core: Lap) -> Given {
        Given {
            prompt,
            mcp: self.mcp_bytes,
            resumed,
            core,
            core_all: core,
        }
    }

    /// The agent's MCP session: initialize, initialized, tools/list; its id.
    fn mcp_connect(&mut self, chat: &mut LiveChat) -> String {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cursor-agent","version":"2026"}}});
        let session = self.mcp_request(chat, None, &init).1.expect("a session");
        let notice = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        self.mcp_request(chat, Some(&session), &notice);
        let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
        self.mcp_request(chat, Some(&session), &list);
        session
    }

    fn mcp_post(&mut self, chat: &mut LiveChat, session: &str, body: &Value) -> ExchangeId {
        self.mcp_request(chat, Some(session), body).0
    }

    /// One request to the chat's server: its exchange and the session its head gave. What
    /// it answers at once is counted.
    fn mcp_request(
        &mut self,
        chat: &mut LiveChat,
        session: Option<&str>,
        body: &Value,
    ) -> (ExchangeId, Option<String>) {
        let body = serde_json::to_vec(body).unwrap();
        let request = HttpRequest {
            method: "POST",
            accept: Some("application/json, text/event-stream"),
            content_type: Some("application/json"),
            session_id: session,
            protocol_version: None,
            body: &body,
        };
        let bearer = format!("Bearer {}", chat.bearer());
        let exchange = chat
            .handle_mcp(Some(bearer.as_bytes()), &request, self.now)
            .expect("the chat's agent is admitted");
        let mut head_session = None;
        while let Some(output) = chat.poll_mcp_output(exchange) {
            match output {
                ExchangeOutput::Head(head) => head_session = head.session_id.map(str::to_owned),
                ExchangeOutput::Body(bytes) => self.mcp_bytes += bytes.len(),
                ExchangeOutput::End => {}
            }
        }
        (exchange, head_session)
    }

    /// Counts what the held exchange gives now (the call's result).
    fn read_exchange(&mut self, chat: &mut LiveChat, exchange: ExchangeId) {
        while let Some(output) = chat.poll_mcp_output(exchange) {
            if let ExchangeOutput::Body(bytes) = output {
                self.mcp_bytes += bytes.len();
            }
        }
    }
}

fn push_line(chat: &mut LiveChat, line: &Value, now: u64) {
    let mut bytes = serde_json::to_vec(line).unwrap();
    bytes.push(b'\n');
    chat.push_stdout(&bytes, now).unwrap();
}

fn drain(chat: &mut LiveChat) -> Vec<u8> {
    let mut response = Vec::new();
    while let Some(output) = chat.poll_output() {
        match output {
            Output::Body(bytes) => response.extend_from_slice(bytes),
            Output::Respawn => panic!("the chat was replaced"),
            Output::Head(_) | Output::End | Output::StopAgent => {}
        }
    }
    response
}

/// Either transport.
pub enum Transport {
    StreamJson(Box<StreamJson>),
    Acp(Box<Acp>),
}

impl Transport {
    /// ACP when `acp`, else stream-json, with `conversations`.
    pub fn new(acp: bool, conversations: RegistryConfig, model: &str) -> Transport {
        if acp {
            Transport::Acp(Box::new(Acp::new(conversations, model)))
        } else {
            Transport::StreamJson(Box::new(StreamJson::new(conversations)))
        }
    }

    /// The transport's `round`.
    pub fn round(
        &mut self,
        n: usize,
        round: usize,
        body: &[u8],
        caller: Caller<'_>,
    ) -> (Given, Vec<u8>) {
        match self {
            Transport::StreamJson(json) => json.round(n, round, body, caller),
            Transport::Acp(acp) => acp.round(n, round, body, caller),
        }
    }
}

/// Runs `rounds` rounds of conversation 0 through `serve` (a transport's `round`),
/// growing the client's conversation from each response. Returns, per round, the body
/// sent, what the agent was given and the bytes of new content the request brought (0
/// for the first).
pub fn run_loop(
    workload: &Workload,
    rounds: usize,
    mut serve: impl FnMut(usize, &[u8]) -> (Given, Vec<u8>),
) -> Vec<(Vec<u8>, Given, usize)> {
    let mut client = Client::new(workload);
    let mut new_content = 0;
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let body = workload.body(&client.messages);
        let (given, response) = serve(round, &body);
        out.push((body, given, new_content));
        new_content = client.answered(round, &response);
    }
    out
}
