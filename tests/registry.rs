//! The conversation registry's decisions: one row per way a client's next request relates
//! to what an agent session already holds, and a property over random request sequences.

use agentwire::api::{Continuation, Reasoning, Request};
use agentwire::conversation::{Conversation, HistoryToolCall, Message, Role, ToolChoice, ToolSpec};
use agentwire::registry::{
    AnswerDigest, ConversationKeys, Decision, FreshReason, Owner, Park, Registry, RegistryConfig,
    ReleaseReason,
};
use serde_json::json;

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "auto".into(),
        response_model: "auto".into(),
        stream: true,
        conversation: Conversation {
            messages,
            tools: vec![
                ToolSpec::function(
                    "bash",
                    "Run a command",
                    json!({"type":"object","properties":{"command":{"type":"string"}}}),
                ),
                ToolSpec::function(
                    "read",
                    "Read a file",
                    json!({"type":"object","properties":{"path":{"type":"string"}}}),
                ),
            ],
            tool_choice: ToolChoice::Auto,
            ..Conversation::default()
        },
        reasoning: Reasoning::default(),
        include_usage: false,
        ignored: Vec::new(),
        continuation: Continuation::default(),
    }
}

fn user(text: &str) -> Message {
    Message::new(Role::User, text)
}

fn system(text: &str) -> Message {
    Message::new(Role::System, text)
}

fn call(id: &str, command: &str) -> HistoryToolCall {
    HistoryToolCall::new(id, "bash", json!({ "command": command }).to_string())
}

/// What the agent answered: text and calls, and the same as the client echoes it.
struct Answer {
    text: &'static str,
    calls: Vec<HistoryToolCall>,
}

impl Answer {
    fn digest(&self) -> AnswerDigest {
        let mut digest = AnswerDigest::default();
        // Split as a stream would be.
        for chunk in self.text.as_bytes().chunks(3) {
            digest.push_text(std::str::from_utf8(chunk).unwrap());
        }
        for call in &self.calls {
            digest.push_call(&call.id, &call.name, &call.arguments);
        }
        digest
    }

    fn echo(&self) -> Message {
        Message::assistant(self.text, self.calls.clone())
    }

    fn pending(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.id.clone()).collect()
    }
}

const NO_KEYS: ConversationKeys<'static> = ConversationKeys {
    caller: None,
    client_session: None,
    client_agent: None,
};

/// Decides `request` and parks its answer on agent session `agent`; returns the decision's
/// kind.
fn serve(
    registry: &mut Registry,
    owner: Owner,
    keys: &ConversationKeys<'_>,
    request: &Request,
    answer: &Answer,
    agent: &str,
    now: u64,
) -> Served {
    match registry.decide(owner, keys, request, now) {
        Decision::Fresh { lease, reason } => {
            if let Some(lease) = lease {
                park(registry, lease, answer, agent, now);
            }
            Served::Fresh(reason)
        }
        Decision::Resume { lease, resume } => {
            let agent = resume.agent_session.clone();
            park(registry, lease, answer, &agent, now);
            Served::Resume {
                agent,
                delta: resume.delta,
            }
        }
        Decision::Refuse(reply) => Served::Refused(reply.code),
    }
}

fn park(
    registry: &mut Registry,
    lease: agentwire::registry::Lease,
    answer: &Answer,
    agent: &str,
    now: u64,
) {
    let digest = answer.digest();
    let pending = answer.pending();
    registry
        .park(
            lease,
            Park {
                answer: &digest,
                agent_session: agent,
                pending: &pending,
                response_id: None,
            },
            now,
        )
        .unwrap();
}

#[derive(Debug, PartialEq)]
enum Served {
    Fresh(FreshReason),
    Resume { agent: String, delta: usize },
    Refused(&'static str),
}

fn resumed(agent: &str, delta: usize) -> Served {
    Served::Resume {
        agent: agent.into(),
        delta,
    }
}

/// A conversation of two rounds on agent session "s1": a tool round, then its results.
struct Loop {
    registry: Registry,
    first: Answer,
    second: Answer,
}

impl Loop {
    fn new() -> Loop {
        let mut registry = Registry::new(RegistryConfig::default());
        let first = Answer {
            text: "Let me look.",
            calls: vec![call("call_1", "ls"), call("call_2", "pwd")],
        };
        let second = Answer {
            text: "Two files.",
            calls: Vec::new(),
        };
        let r1 = request(vec![system("You are helpful."), user("What is here?")]);
        assert_eq!(
            serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r1, &first, "s1", 0),
            Served::Fresh(FreshReason::NoSession)
        );
        Loop {
            registry,
            first,
            second,
        }
    }

    /// Serves the results' request on the session.
    fn second_round(&mut self) {
        let r2 = request(self.results());
        assert_eq!(
            serve(
                &mut self.registry,
                Owner::LOCAL,
                &NO_KEYS,
                &r2,
                &self.second,
                "x",
                1
            ),
            resumed("s1", 3)
        );
    }

    /// The request after the second answer: a new user message.
    fn follow_up(&self) -> Vec<Message> {
        let mut messages = self.results();
        messages.push(self.second.echo());
        messages.push(user("And in /tmp?"));
        messages
    }

    /// The request that carries the first round's results.
    fn results(&self) -> Vec<Message> {
        vec![
            system("You are helpful."),
            user("What is here?"),
            self.first.echo(),
            Message::tool_result("call_1", "a.txt b.txt"),
            Message::tool_result("call_2", "/home"),
        ]
    }
}

#[test]
fn tool_results_resume_the_session_with_only_the_results() {
    let mut l = Loop::new();
    let r2 = request(l.results());
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r2,
            &l.second,
            "other",
            1
        ),
        resumed("s1", 3)
    );
    // And the follow-up turn resumes it again, with only the new user message.
    let mut messages = l.results();
    messages.push(l.second.echo());
    messages.push(user("Thanks. Now read a.txt"));
    let r3 = request(messages);
    let third = Answer {
        text: "",
        calls: vec![call("call_3", "cat a.txt")],
    };
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r3,
            &third,
            "other",
            2
        ),
        resumed("s1", 6)
    );
    assert_eq!(l.registry.stats().resumed, 2);
    assert_eq!(l.registry.parked(), 1);
}

#[test]
fn results_in_another_order_and_a_retouched_answer_still_resume() {
    let mut l = Loop::new();
    let mut messages = l.results();
    messages.swap(3, 4);
    // Clients retouch whitespace and split answers their own way.
    messages[2] = Message::assistant("  Let me\nlook. ", vec![l.first.calls[0].clone()]);
    messages.insert(3, Message::assistant("", vec![l.first.calls[1].clone()]));
    let r2 = request(messages);
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r2,
            &l.second,
            "x",
            1
        ),
        resumed("s1", 4)
    );
}

#[test]
fn arguments_echoed_with_keys_reordered_still_resume() {
    let mut registry = Registry::new(RegistryConfig::default());
    let first = Answer {
        text: "",
        calls: vec![HistoryToolCall::new(
            "c1",
            "read",
            r#"{"path":"a","limit":3}"#,
        )],
    };
    let r1 = request(vec![user("read a")]);
    serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r1, &first, "s1", 0);
    let echoed = Message::assistant(
        "",
        vec![HistoryToolCall::new(
            "c1",
            "read",
            r#"{ "limit": 3, "path": "a" }"#,
        )],
    );
    let r2 = request(vec![
        user("read a"),
        echoed,
        Message::tool_result("c1", "x"),
    ]);
    let done = Answer {
        text: "x",
        calls: Vec::new(),
    };
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r2, &done, "s2", 1),
        resumed("s1", 2)
    );
}

/// Every way a later request's history can differ from what the session holds, and its
/// decision. The session has served two rounds: a tool round, then an answer.
#[test]
fn the_decision_table_of_history_edits() {
    type Edit = fn(&mut Vec<Message>, &mut Request);
    let rows: &[(&str, Edit, FreshReason)] = &[
        // Claude Code's /compact, OpenCode's and Codex's compaction: the history is
        // replaced by a summary.
        (
            "compaction",
            |m, _| {
                m.drain(1..6);
                m.insert(
                    1,
                    user("Summary: the user asked what is here; there are two files."),
                );
            },
            FreshReason::NoSession,
        ),
        // OpenCode's prune and Claude Code's microcompact clear old tool results.
        (
            "pruned tool result",
            |m, _| {
                m[3] = Message::tool_result("call_1", "[Old tool result content cleared]");
            },
            FreshReason::NoSession,
        ),
        (
            "edited turn",
            |m, _| m[1] = user("What is in /tmp?"),
            FreshReason::NoSession,
        ),
        // Regenerate, or a retry of the request the session answered last: the
        // conversation up to that answer.
        (
            "regenerate or retry",
            |m, _| m.truncate(5),
            FreshReason::NoSession,
        ),
        (
            "retry of an earlier request",
            |m, _| m.truncate(2),
            FreshReason::NoSession,
        ),
        (
            "branch",
            |m, _| {
                m.truncate(2);
                m.push(user("Actually, list /etc"));
            },
            FreshReason::NoSession,
        ),
        (
            "another model",
            |_, r| r.model = "gpt-5".into(),
            FreshReason::NoSession,
        ),
        (
            "another tool set",
            |_, r| drop(r.conversation.tools.pop()),
            FreshReason::NoSession,
        ),
        (
            "tools turned off",
            |_, r| r.conversation.tool_choice = ToolChoice::None,
            FreshReason::NoSession,
        ),
        (
            "another system text",
            |m, _| m[0] = system("You are terse."),
            FreshReason::NoSession,
        ),
        // A side request: a title generator's own system text and the first message.
        (
            "side request (title)",
            |m, _| {
                m.truncate(2);
                m[0] = system("You are a title generator. Reply with a title only.");
            },
            FreshReason::NoSession,
        ),
        (
            "the answer changed by the client",
            |m, _| m[5] = Message::assistant("Three files.", Vec::new()),
            FreshReason::NoSession,
        ),
        ("nothing new", |m, _| m.truncate(6), FreshReason::NothingNew),
        (
            "an assistant message the agent did not write",
            |m, _| m.push(Message::assistant("I also think…", Vec::new())),
            FreshReason::ForeignAnswer,
        ),
        (
            "a tool result with no call",
            |m, _| m.push(Message::tool_result("call_9", "?")),
            FreshReason::UnknownResult,
        ),
    ];
    for (name, edit, reason) in rows {
        let mut l = Loop::new();
        l.second_round();
        let mut messages = l.follow_up();
        let mut r3 = request(Vec::new());
        edit(&mut messages, &mut r3);
        r3.conversation.messages = messages;
        let other = Answer {
            text: "Another answer.",
            calls: Vec::new(),
        };
        let served = serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r3,
            &other,
            "s2",
            2,
        );
        assert_eq!(served, Served::Fresh(*reason), "{name}");
        // The parked session is untouched: the unedited request still resumes it.
        let r3 = request(l.follow_up());
        assert_eq!(
            serve(
                &mut l.registry,
                Owner::LOCAL,
                &NO_KEYS,
                &r3,
                &l.second,
                "s3",
                3
            ),
            resumed("s1", 6),
            "{name}: session disturbed"
        );
    }
}

/// The request after a tool round must answer the round's calls exactly.
#[test]
fn the_decision_table_of_tool_results() {
    type Edit = fn(&mut Vec<Message>);
    let rows: &[(&str, Edit, FreshReason)] = &[
        (
            "one result missing",
            |m| drop(m.remove(4)),
            FreshReason::UnansweredCalls,
        ),
        (
            "a result for a call never made",
            |m| m.push(Message::tool_result("call_9", "?")),
            FreshReason::UnknownResult,
        ),
        (
            "a call answered twice",
            |m| m[4] = Message::tool_result("call_1", "again"),
            FreshReason::UnknownResult,
        ),
        (
            "an assistant message the agent did not write",
            |m| m.push(Message::assistant("I also think…", Vec::new())),
            FreshReason::ForeignAnswer,
        ),
    ];
    for (name, edit, reason) in rows {
        let mut l = Loop::new();
        let mut messages = l.results();
        edit(&mut messages);
        let served = serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &request(messages),
            &l.second,
            "s2",
            1,
        );
        assert_eq!(served, Served::Fresh(*reason), "{name}");
        let r2 = request(l.results());
        assert_eq!(
            serve(
                &mut l.registry,
                Owner::LOCAL,
                &NO_KEYS,
                &r2,
                &l.second,
                "s3",
                2
            ),
            resumed("s1", 3),
            "{name}: session disturbed"
        );
    }
}

#[test]
fn a_session_serves_one_request_at_a_time() {
    let mut l = Loop::new();
    let r2 = request(l.results());
    let Decision::Resume { lease, .. } = l.registry.decide(Owner::LOCAL, &NO_KEYS, &r2, 1) else {
        panic!("the first resumes");
    };
    match l.registry.decide(Owner::LOCAL, &NO_KEYS, &r2, 1) {
        Decision::Fresh {
            reason,
            lease: Some(other),
        } => {
            assert_eq!(reason, FreshReason::Busy);
            l.registry.release(other, 1);
        }
        other => panic!("{other:?}"),
    }
    park(&mut l.registry, lease, &l.second, "s1", 2);
}

#[test]
fn owners_and_keys_keep_sessions_apart() {
    let mut l = Loop::new();
    let r2 = request(l.results());
    let alice = Owner::from_key(b"alice");
    // Another owner never resumes it, even with the same content.
    assert_eq!(
        serve(&mut l.registry, alice, &NO_KEYS, &r2, &l.second, "a1", 1),
        Served::Fresh(FreshReason::NoSession)
    );
    // A request with a conversation key does not resume a session parked without one.
    let keyed = ConversationKeys {
        client_session: Some("cc-1"),
        ..NO_KEYS
    };
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &keyed,
            &r2,
            &l.second,
            "k1",
            1
        ),
        Served::Fresh(FreshReason::NoSession)
    );
    // The original still resumes.
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r2,
            &l.second,
            "z",
            2
        ),
        resumed("s1", 3)
    );
}

#[test]
fn two_conversations_with_the_same_start_are_told_apart_by_their_keys() {
    let mut registry = Registry::new(RegistryConfig::default());
    let hi = request(vec![user("hi")]);
    let answer = Answer {
        text: "Hello!",
        calls: Vec::new(),
    };
    let one = ConversationKeys {
        client_session: Some("one"),
        ..NO_KEYS
    };
    let two = ConversationKeys {
        client_session: Some("two"),
        ..NO_KEYS
    };
    serve(&mut registry, Owner::LOCAL, &one, &hi, &answer, "s-one", 0);
    serve(&mut registry, Owner::LOCAL, &two, &hi, &answer, "s-two", 0);
    let next = request(vec![user("hi"), answer.echo(), user("bye")]);
    let bye = Answer {
        text: "Bye",
        calls: Vec::new(),
    };
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &two, &next, &bye, "x", 1),
        resumed("s-two", 2)
    );
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &one, &next, &bye, "x", 1),
        resumed("s-one", 2)
    );
}

#[test]
fn subagents_of_one_client_session_have_their_own_sessions() {
    let mut registry = Registry::new(RegistryConfig::default());
    let main = ConversationKeys {
        client_session: Some("cc"),
        ..NO_KEYS
    };
    let sub = ConversationKeys {
        client_agent: Some("agent-1"),
        ..main
    };
    let answer = Answer {
        text: "ok",
        calls: Vec::new(),
    };
    serve(
        &mut registry,
        Owner::LOCAL,
        &main,
        &request(vec![user("main task")]),
        &answer,
        "main",
        0,
    );
    serve(
        &mut registry,
        Owner::LOCAL,
        &sub,
        &request(vec![user("sub task")]),
        &answer,
        "sub",
        0,
    );
    let next_sub = request(vec![user("sub task"), answer.echo(), user("go on")]);
    assert_eq!(
        serve(
            &mut registry,
            Owner::LOCAL,
            &main,
            &next_sub,
            &answer,
            "x",
            1
        ),
        Served::Fresh(FreshReason::NoSession)
    );
    let next_sub = request(vec![user("sub task"), answer.echo(), user("go on again")]);
    assert_eq!(
        serve(
            &mut registry,
            Owner::LOCAL,
            &sub,
            &next_sub,
            &answer,
            "x",
            1
        ),
        resumed("sub", 2)
    );
}

#[test]
fn a_conversation_key_in_the_body_counts_like_a_header() {
    let mut registry = Registry::new(RegistryConfig::default());
    let mut r1 = request(vec![user("hi")]);
    r1.continuation.conversation_key = Some("codex-thread".into());
    let answer = Answer {
        text: "Hello",
        calls: Vec::new(),
    };
    serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r1, &answer, "s1", 0);
    let mut r2 = request(vec![user("hi"), answer.echo(), user("more")]);
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r2, &answer, "x", 1),
        Served::Fresh(FreshReason::NoSession)
    );
    r2.continuation.conversation_key = Some("codex-thread".into());
    r2.conversation.messages[2] = user("more, again");
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &NO_KEYS, &r2, &answer, "x", 2),
        resumed("s1", 2)
    );
}

#[test]
fn previous_response_id_continues_the_latest_response_or_is_refused() {
    let mut registry = Registry::new(RegistryConfig::default());
    let r1 = request(vec![system("Be brief."), user("hi")]);
    let Decision::Fresh {
        lease: Some(lease), ..
    } = registry.decide(Owner::LOCAL, &NO_KEYS, &r1, 0)
    else {
        panic!("fresh")
    };
    let answer = Answer {
        text: "Hello",
        calls: vec![call("c1", "ls")],
    };
    let digest = answer.digest();
    registry
        .park(
            lease,
            Park {
                answer: &digest,
                agent_session: "s1",
                pending: &answer.pending(),
                response_id: Some("resp_1"),
            },
            0,
        )
        .unwrap();
    // Only the results follow the named response.
    let mut r2 = request(vec![
        system("Be brief."),
        Message::tool_result("c1", "a.txt"),
    ]);
    r2.continuation.previous_response_id = Some("resp_1".into());
    let Decision::Resume { lease, resume } = registry.decide(Owner::LOCAL, &NO_KEYS, &r2, 1) else {
        panic!("resume")
    };
    assert_eq!(
        (
            resume.agent_session.as_str(),
            resume.delta,
            resume.pending.len()
        ),
        ("s1", 1, 1)
    );
    let done = Answer {
        text: "a.txt",
        calls: Vec::new(),
    };
    let digest = done.digest();
    registry
        .park(
            lease,
            Park {
                answer: &digest,
                agent_session: "s1",
                pending: &[],
                response_id: Some("resp_2"),
            },
            1,
        )
        .unwrap();
    // resp_1 was continued: only the latest response continues.
    let mut again = r2.clone();
    again.continuation.previous_response_id = Some("resp_1".into());
    assert!(
        matches!(registry.decide(Owner::LOCAL, &NO_KEYS, &again, 2), Decision::Refuse(r) if r.code == "previous_response_not_found")
    );
    let mut unknown = request(vec![user("x")]);
    unknown.continuation.previous_response_id = Some("resp_404".into());
    match registry.decide(Owner::LOCAL, &NO_KEYS, &unknown, 2) {
        Decision::Refuse(reply) => {
            assert_eq!(
                (reply.code, reply.param.as_deref(), reply.status()),
                (
                    "previous_response_not_found",
                    Some("previous_response_id"),
                    400
                )
            );
        }
        other => panic!("{other:?}"),
    }
    // The whole conversation of that response, sent again, still resumes by content.
    let full = request(vec![
        system("Be brief."),
        user("hi"),
        answer.echo(),
        Message::tool_result("c1", "a.txt"),
        done.echo(),
        user("thanks"),
    ]);
    assert_eq!(
        serve(&mut registry, Owner::LOCAL, &NO_KEYS, &full, &done, "x", 3),
        resumed("s1", 5)
    );
}

#[test]
fn parked_sessions_expire_and_the_least_recently_used_are_evicted() {
    let config = RegistryConfig {
        ttl_ms: 1_000,
        max_parked: 3,
        max_parked_per_owner: 2,
        ..RegistryConfig::default()
    };
    let mut registry = Registry::new(config);
    let answer = Answer {
        text: "ok",
        calls: Vec::new(),
    };
    let alice = Owner::from_key(b"alice");
    for (at, text) in ["a", "b", "c"].iter().enumerate() {
        serve(
            &mut registry,
            alice,
            &NO_KEYS,
            &request(vec![user(text)]),
            &answer,
            &format!("alice-{text}"),
            at as u64,
        );
    }
    // Alice may park two: her oldest went.
    let released = registry.poll_released().unwrap();
    assert_eq!(
        (released.agent_session.as_str(), released.reason),
        ("alice-a", ReleaseReason::Evicted)
    );
    assert_eq!(registry.parked(), 2);
    serve(
        &mut registry,
        Owner::LOCAL,
        &NO_KEYS,
        &request(vec![user("x")]),
        &answer,
        "local-x",
        10,
    );
    serve(
        &mut registry,
        Owner::LOCAL,
        &NO_KEYS,
        &request(vec![user("y")]),
        &answer,
        "local-y",
        11,
    );
    // Three in all: the oldest of anyone's went.
    assert_eq!(registry.poll_released().unwrap().agent_session, "alice-b");
    assert!(registry.poll_released().is_none());
    assert_eq!(registry.poll_timeout(), Some(1_002));
    registry.handle_timeout(1_001);
    assert!(registry.poll_released().is_none(), "not due yet");
    registry.handle_timeout(1_011);
    let expired: Vec<_> = std::iter::from_fn(|| registry.poll_released()).collect();
    assert_eq!(
        expired
            .iter()
            .map(|r| r.agent_session.as_str())
            .collect::<Vec<_>>(),
        ["alice-c", "local-x", "local-y"]
    );
    assert!(expired.iter().all(|r| r.reason == ReleaseReason::Expired));
    assert_eq!((registry.parked(), registry.poll_timeout()), (0, None));
    assert_eq!(registry.stats().expired, 3);
    assert_eq!(registry.stats().evicted, 2);
}

#[test]
fn a_released_lease_forgets_the_session_and_ends_its_agent_session() {
    let mut l = Loop::new();
    let r2 = request(l.results());
    let Decision::Resume { lease, .. } = l.registry.decide(Owner::LOCAL, &NO_KEYS, &r2, 1) else {
        panic!("resume")
    };
    l.registry.release(lease, 2);
    let released = l.registry.poll_released().unwrap();
    assert_eq!(
        (released.agent_session.as_str(), released.reason),
        ("s1", ReleaseReason::Failed)
    );
    assert_eq!(
        serve(
            &mut l.registry,
            Owner::LOCAL,
            &NO_KEYS,
            &r2,
            &l.second,
            "s2",
            3
        ),
        Served::Fresh(FreshReason::NoSession)
    );
}

#[test]
fn turned_off_nothing_is_parked() {
    let mut registry = Registry::new(RegistryConfig {
        enabled: false,
        ..RegistryConfig::default()
    });
    let r1 = request(vec![user("hi")]);
    assert!(matches!(
        registry.decide(Owner::LOCAL, &NO_KEYS, &r1, 0),
        Decision::Fresh {
            lease: None,
            reason: FreshReason::Disabled
        }
    ));
    assert_eq!(registry.parked(), 0);
}

#[test]
fn clear_releases_every_parked_session_and_fails_held_leases() {
    let mut l = Loop::new();
    serve(
        &mut l.registry,
        Owner::LOCAL,
        &NO_KEYS,
        &request(vec![user("other")]),
        &l.second,
        "s2",
        1,
    );
    let Decision::Fresh {
        lease: Some(held), ..
    } = l
        .registry
        .decide(Owner::LOCAL, &NO_KEYS, &request(vec![user("third")]), 1)
    else {
        panic!("fresh")
    };
    l.registry.clear(2);
    let released: Vec<_> = std::iter::from_fn(|| l.registry.poll_released())
        .map(|r| r.agent_session)
        .collect();
    assert_eq!(released, ["s1", "s2"]);
    let digest = l.second.digest();
    assert!(
        l.registry
            .park(
                held,
                Park {
                    answer: &digest,
                    agent_session: "s3",
                    pending: &[],
                    response_id: None
                },
                3
            )
            .is_err()
    );
    assert_eq!((l.registry.parked(), l.registry.busy()), (0, 0));
}
