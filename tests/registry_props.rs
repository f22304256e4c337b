//! The conversation registry against a model of what every agent session has been given:
//! for any sequence of client requests — continuing, retrying, editing, branching,
//! compacting, switching models, racing each other, leaving mid-answer, idling past the
//! time to live — what the agent holds once a request is given to it is exactly the
//! request's conversation (a resumed session's own history plus the delta carries the same
//! content as the full conversation a fresh session would get).

use std::collections::HashMap;

use agentwire::api::{Continuation, Reasoning, Request};
use agentwire::conversation::{
    Conversation, HistoryToolCall, Message, Part, Role, ToolChoice, ToolSpec,
};
use agentwire::registry::{
    AnswerDigest, ConversationKeys, Decision, Lease, Owner, Park, Registry, RegistryConfig,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One entry of a conversation as an independent oracle compares it: assistant runs
/// merged, their text without whitespace, arguments as JSON values.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Other(Role, Vec<Part>, Option<String>, bool),
    Answer(String, Vec<(String, String, Value)>),
}

fn canonical(messages: &[Message]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for message in messages {
        if message.role == Role::Assistant {
            let text: String = message
                .text()
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let calls = message.tool_calls.iter().map(|c| {
                let value = serde_json::from_str(&c.arguments)
                    .unwrap_or(Value::String(c.arguments.clone()));
                (c.id.clone(), c.name.clone(), value)
            });
            if let Some(Entry::Answer(t, cs)) = entries.last_mut() {
                t.push_str(&text);
                cs.extend(calls);
            } else {
                entries.push(Entry::Answer(text, calls.collect()));
            }
        } else {
            entries.push(Entry::Other(
                message.role,
                message.content.clone(),
                message.tool_call_id.clone(),
                message.is_error,
            ));
        }
    }
    entries
}

#[derive(Debug, Clone)]
enum Op {
    /// Continue conversation `c`: results for its pending calls, or a new user message.
    Continue(usize),
    /// Retry conversation `c`'s last request (the client did not see the answer).
    Retry(usize),
    /// Edit the message at a position of conversation `c` and continue.
    Edit(usize, usize),
    /// Start a new conversation from a prefix of `c`.
    Branch(usize, usize),
    /// Replace `c`'s history by a summary.
    Compact(usize),
    /// Clear the oldest tool result of `c`.
    Prune(usize),
    /// Switch `c`'s model.
    SwitchModel(usize),
    /// Two requests of `c` at once: the second before the first is parked.
    Race(usize),
    /// `c`'s client leaves during the answer.
    Leave(usize),
    /// Time passes.
    Idle(u64),
    /// A new conversation.
    New,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..4usize).prop_map(Op::Continue),
        1 => (0..4usize).prop_map(Op::Retry),
        1 => (0..4usize, 0..12usize).prop_map(|(c, at)| Op::Edit(c, at)),
        1 => (0..4usize, 0..12usize).prop_map(|(c, at)| Op::Branch(c, at)),
        1 => (0..4usize).prop_map(Op::Compact),
        1 => (0..4usize).prop_map(Op::Prune),
        1 => (0..4usize).prop_map(Op::SwitchModel),
        1 => (0..4usize).prop_map(Op::Race),
        1 => (0..4usize).prop_map(Op::Leave),
        1 => (0..2_000u64).prop_map(Op::Idle),
        1 => Just(Op::New),
    ]
}

/// A client's conversation.
#[derive(Clone)]
struct Client {
    owner: Owner,
    key: Option<String>,
    model: String,
    messages: Vec<Message>,
    /// The request last sent (for retries).
    last: Option<Vec<Message>>,
}

struct World {
    registry: Registry,
    clients: Vec<Client>,
    /// What each agent session has been given, in order.
    agents: HashMap<String, Vec<Message>>,
    next_agent: u64,
    next_call: u64,
    now: u64,
    resumed: u64,
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec::function("bash", "", json!({"type": "object"}))]
}

fn request(client: &Client, messages: Vec<Message>) -> Request {
    Request {
        model: client.model.clone(),
        response_model: client.model.clone(),
        stream: false,
        conversation: Conversation {
            messages,
            tools: tools(),
            tool_choice: ToolChoice::Auto,
            ..Conversation::default()
        },
        reasoning: Reasoning::default(),
        include_usage: false,
        ignored: Vec::new(),
        continuation: Continuation {
            conversation_key: client.key.clone(),
            previous_response_id: None,
        },
    }
}

impl World {
    fn new(ttl_ms: u64) -> World {
        let config = RegistryConfig {
            ttl_ms,
            max_parked: 6,
            max_parked_per_owner: 4,
            ..RegistryConfig::default()
        };
        let mut world = World {
            registry: Registry::new(config),
            clients: Vec::new(),
            agents: HashMap::new(),
            next_agent: 0,
            next_call: 0,
            now: 0,
            resumed: 0,
        };
        world.new_client(Owner::LOCAL, None);
        world.new_client(Owner::from_key(b"k"), Some("thread-1".into()));
        world
    }

    fn new_client(&mut self, owner: Owner, key: Option<String>) {
        let n = self.clients.len();
        self.clients.push(Client {
            owner,
            key,
            model: "auto".into(),
            messages: vec![
                Message::new(Role::System, "sys"),
                Message::new(Role::User, format!("task {}", n % 3)),
            ],
            last: None,
        });
    }

    /// Sends `messages` as `c`'s request: decides, gives the agent what the decision
    /// says, checks it, and returns the lease and the agent session.
    fn give(&mut self, c: usize, messages: Vec<Message>) -> Option<(Lease, String)> {
        let client = self.clients[c].clone();
        let request = request(&client, messages.clone());
        self.clients[c].last = Some(messages.clone());
        let keys = ConversationKeys::default();
        match self
            .registry
            .decide(client.owner, &keys, &request, self.now)
        {
            Decision::Fresh { lease, .. } => {
                let agent = format!("agent-{}", self.next_agent);
                self.next_agent += 1;
                self.agents.insert(agent.clone(), messages.clone());
                lease.map(|lease| (lease, agent))
            }
            Decision::Resume { lease, resume } => {
                self.resumed += 1;
                let held = self
                    .agents
                    .get_mut(&resume.agent_session)
                    .expect("a parked agent session exists");
                held.extend_from_slice(&messages[resume.delta..]);
                assert_eq!(
                    canonical(held),
                    canonical(&messages),
                    "the agent holds the conversation"
                );
                let delta = &messages[resume.delta..];
                assert_eq!(
                    delta.iter().take_while(|m| m.role == Role::Tool).count(),
                    resume.pending.len()
                );
                Some((lease, resume.agent_session))
            }
            Decision::Refuse(reply) => panic!("nothing here names a previous response: {reply:?}"),
        }
    }

    /// The agent answers `c`'s request: the client gets the answer (retouched as clients
    /// do), the session is parked.
    fn answer(&mut self, c: usize, held: Option<(Lease, String)>, calls: usize, text: &str) {
        let calls: Vec<HistoryToolCall> = (0..calls)
            .map(|_| {
                self.next_call += 1;
                HistoryToolCall::new(
                    format!("call_{}", self.next_call),
                    "bash",
                    json!({"command": "ls", "n": self.next_call}).to_string(),
                )
            })
            .collect();
        let mut digest = AnswerDigest::default();
        digest.push_text(text);
        for call in &calls {
            digest.push_call(&call.id, &call.name, &call.arguments);
        }
        // The client echoes it with whitespace retouched and its calls in a second message.
        let echo_text = format!(" {} ", text.replace(' ', "  "));
        self.clients[c]
            .messages
            .push(Message::assistant(echo_text, Vec::new()));
        if !calls.is_empty() {
            self.clients[c]
                .messages
                .push(Message::assistant("", calls.clone()));
        }
        if let Some((lease, agent)) = held {
            self.agents
                .get_mut(&agent)
                .unwrap()
                .push(Message::assistant(text, calls.clone()));
            let pending: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
            self.registry
                .park(
                    lease,
                    Park {
                        answer: &digest,
                        agent_session: &agent,
                        pending: &pending,
                        response_id: None,
                    },
                    self.now,
                )
                .unwrap();
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(released) = self.registry.poll_released() {
            self.agents.remove(&released.agent_session);
        }
    }

    /// `c`'s next input: results for the last answer's calls, or a user message.
    fn next_input(&mut self, c: usize) {
        let client = &mut self.clients[c];
        let pending: Vec<String> = client
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role == Role::Assistant)
            .flat_map(|m| m.tool_calls.iter().map(|call| call.id.clone()))
            .collect();
        if pending.is_empty() {
            let n = client.messages.len();
            client
                .messages
                .push(Message::new(Role::User, format!("next {n}")));
        } else {
            for id in pending.iter().rev() {
                client
                    .messages
                    .push(Message::tool_result(id.clone(), format!("out of {id}")));
            }
        }
    }

    fn apply(&mut self, op: &Op, calls: usize) {
        let count = self.clients.len();
        let text = if calls % 2 == 0 {
            "Done here"
        } else {
            "Looking"
        };
        match *op {
            Op::Continue(c) => {
                let c = c % count;
                self.next_input(c);
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::Retry(c) => {
                let c = c % count;
                let Some(last) = self.clients[c].last.clone() else {
                    return;
                };
                // The answer the client did not see is gone from its history.
                self.clients[c].messages = last.clone();
                let held = self.give(c, last);
                self.answer(c, held, calls, "Retried");
            }
            Op::Edit(c, at) => {
                let c = c % count;
                let len = self.clients[c].messages.len();
                let at = at % len;
                if self.clients[c].messages[at].role == Role::User {
                    self.clients[c].messages[at] = Message::new(Role::User, "edited");
                }
                self.next_input(c);
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::Branch(c, at) => {
                let mut branch = self.clients[c % count].clone();
                let keep = 2 + at % branch.messages.len().saturating_sub(1).max(1);
                branch.messages.truncate(keep.min(branch.messages.len()));
                branch.last = None;
                self.clients.push(branch);
                let b = self.clients.len() - 1;
                self.next_input(b);
                let held = self.give(b, self.clients[b].messages.clone());
                self.answer(b, held, calls, text);
            }
            Op::Compact(c) => {
                let c = c % count;
                let client = &mut self.clients[c];
                client.messages.truncate(1);
                client
                    .messages
                    .push(Message::new(Role::User, "summary of it all"));
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::Prune(c) => {
                let c = c % count;
                if let Some(result) = self.clients[c]
                    .messages
                    .iter_mut()
                    .find(|m| m.role == Role::Tool)
                {
                    result.content = vec![Part::Text("[Old tool result content cleared]".into())];
                }
                self.next_input(c);
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::SwitchModel(c) => {
                let c = c % count;
                self.clients[c].model = if self.clients[c].model == "auto" {
                    "gpt-5".into()
                } else {
                    "auto".into()
                };
                self.next_input(c);
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::Race(c) => {
                let c = c % count;
                self.next_input(c);
                let messages = self.clients[c].messages.clone();
                let first = self.give(c, messages.clone());
                let second = self.give(c, messages);
                // The first answer reaches the client; the second's is lost to it.
                if let Some((lease, _)) = second {
                    self.registry.release(lease, self.now);
                }
                self.answer(c, first, calls, text);
            }
            Op::Leave(c) => {
                let c = c % count;
                self.next_input(c);
                if let Some((lease, _)) = self.give(c, self.clients[c].messages.clone()) {
                    self.registry.release(lease, self.now);
                }
                self.drain();
                // The client never saw an answer: it asks again with the same history.
                let held = self.give(c, self.clients[c].messages.clone());
                self.answer(c, held, calls, text);
            }
            Op::Idle(ms) => {
                self.now += ms;
                if self
                    .registry
                    .poll_timeout()
                    .is_some_and(|due| self.now >= due)
                {
                    self.registry.handle_timeout(self.now);
                }
                self.drain();
            }
            Op::New => self.new_client(Owner::LOCAL, None),
        }
        self.now += 1;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_agent_always_holds_exactly_the_clients_conversation(
        ops in proptest::collection::vec((op(), 0..3usize), 1..60),
        ttl in 500..5_000u64,
    ) {
        let mut world = World::new(ttl);
        for (op, calls) in &ops {
            world.apply(op, *calls);
        }
        // Bounded: never more parked than allowed, and every agent session the model
        // still holds is one the registry has not released.
        prop_assert!(world.registry.parked() <= 6);
        prop_assert_eq!(world.registry.busy(), 0);
    }
}

/// The property above is not vacuous: plain continuation resumes every time.
#[test]
fn a_plain_loop_resumes_every_round() {
    let mut world = World::new(60_000);
    for round in 0..20 {
        world.apply(&Op::Continue(0), round % 3);
    }
    assert_eq!(world.resumed, 19);
}
