//! A client in a tool loop, as the conversation tests play one against either kind of
//! agent: the loop's task, what each round answers, what the client's `bash` tool prints,
//! and an Anthropic Messages client that sends its whole conversation each round.

use serde_json::{Value, json};

use super::Proxy;
use super::messages::check_stream;

/// The task the loops begin with.
pub const TASK: &str = "Find the failing test and fix it.";

/// What a round answered: the command of the client's `bash` call, or the final text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Tool(String),
    Text(String),
}

/// The command round `round` of the loop asks the client to run.
pub fn command(round: u32) -> Answer {
    Answer::Tool(format!("echo round-{round}"))
}

/// What the client's `bash` prints for `command`.
pub fn output_of(command: &str) -> String {
    format!("{} (exit 0)", command.trim_start_matches("echo "))
}

/// A Messages client in a tool loop (as Claude Code sends it): its system text and the
/// properties of its one tool, `Bash`.
pub struct MessagesClient {
    pub system: String,
    pub bash_properties: Value,
}

impl MessagesClient {
    /// The request of the conversation `messages`.
    pub fn body(&self, messages: &[Value], stream: bool) -> Value {
        json!({
            "model": "auto",
            "max_tokens": 1024,
            "stream": stream,
            "system": self.system,
            "messages": messages,
            "tools": [{"name": "Bash", "description": "Run a shell command.",
                "input_schema": {"type": "object", "properties": self.bash_properties, "required": ["command"]}}],
        })
    }

    /// Plays the loop through `proxy` with `headers` on every request, streamed: each
    /// round's assistant message echoed and its one `Bash` call answered, until the agent
    /// ends its turn after `rounds` tool rounds. The conversation and each round's answer.
    pub fn run(
        &self,
        proxy: &Proxy,
        headers: &[(&str, &str)],
        rounds: u32,
    ) -> (Vec<Value>, Vec<Answer>) {
        let mut messages = vec![json!({"role": "user", "content": TASK})];
        let mut answers = Vec::new();
        for _ in 0..=rounds {
            let reply = proxy.post_json("/v1/messages", headers, &self.body(&messages, true));
            assert_eq!(reply.status, 200, "{}", reply.text());
            let stream = check_stream(&reply.body, "auto");
            messages.push(json!({"role": "assistant", "content": stream.content}));
            match stream.stop_reason.as_deref() {
                Some("tool_use") => {
                    let uses = stream.tool_uses();
                    assert_eq!(uses.len(), 1);
                    let (id, name, input) = &uses[0];
                    assert_eq!(name, "Bash");
                    let command = input["command"].as_str().unwrap().to_owned();
                    messages.push(json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": output_of(&command)},
                    ]}));
                    answers.push(Answer::Tool(command));
                }
                Some("end_turn") => answers.push(Answer::Text(stream.text())),
                other => panic!("stop_reason {other:?}"),
            }
        }
        (messages, answers)
    }
}
