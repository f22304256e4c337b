//! Property tests of the Bridge: for any interleaving of agent output, stderr, time, the
//! agent's exit and the client hanging up, the outputs keep the contract.

mod support;

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Input {
    /// The next `n` bytes of the transcript.
    Stdout(usize),
    Stderr(Vec<u8>),
    /// Advance the clock by this many ms, firing due deadlines.
    Wait(u64),
    ClientGone,
    Exit(i32),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        6 => (1usize..400).prop_map(Input::Stdout),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Input::Stderr),
        2 => prop_oneof![0u64..500, 0u64..40_000, Just(1_300_000u64)].prop_map(Input::Wait),
        1 => Just(Input::ClientGone),
        1 => (0i32..3).prop_map(Input::Exit),
    ]
}

fn requests() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/requests");
    vec![
        br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#.to_vec(),
        br#"{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#.to_vec(),
        br#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#.to_vec(),
        br#"{"model":"auto","messages":"nope"}"#.to_vec(),
        std::fs::read(dir.join("client_tools.json")).unwrap(),
        std::fs::read(dir.join("client_tools_nostream.json")).unwrap(),
    ]
}

/// Checks the contract on everything polled so far.
#[derive(Default)]
struct Contract {
    heads: usize,
    bodies: usize,
    stops: usize,
    ends: usize,
}

impl Contract {
    fn drain(&mut self, bridge: &mut Bridge) {
        while let Some(output) = bridge.poll_output() {
            assert_eq!(self.ends, 0, "nothing after End");
            match output {
                Output::Head(head) => {
                    assert_eq!(self.heads, 0, "one head");
                    assert!((200..600).contains(&head.status));
                    self.heads += 1;
                }
                Output::Body(bytes) => {
                    assert_eq!(self.heads, 1, "head before body");
                    assert!(!bytes.is_empty());
                    self.bodies += 1;
                }
                Output::StopAgent => {
                    assert_eq!(self.stops, 0, "one stop");
                    self.stops += 1;
                }
                Output::End => self.ends += 1,
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn exactly_one_end(
        request in 0usize..6,
        transcript in 0usize..1000,
        inputs in proptest::collection::vec(input(), 0..40),
    ) {
        let requests = requests();
        let mut fixtures = support::project_fixtures();
        fixtures.sort();
        let bytes = std::fs::read(&fixtures[transcript % fixtures.len()]).unwrap();
        let config = Config::default();
        let params = BridgeParams { now_ms: 1_000, created_unix: 1, id_seed: 7 };
        let mut bridge = Bridge::new(Dialect::ChatCompletions, &requests[request], &config, params);
        let mut contract = Contract::default();
        contract.drain(&mut bridge);
        let mut now = 1_000u64;
        let mut offset = 0usize;
        let mut exited = false;
        for input in inputs {
            match input {
                Input::Stdout(n) => {
                    if exited { continue; }
                    let end = (offset + n).min(bytes.len());
                    bridge.push_stdout(&bytes[offset..end], now).unwrap();
                    offset = end;
                }
                Input::Stderr(b) => {
                    if exited { continue; }
                    bridge.push_stderr(&b, now).unwrap();
                }
                Input::Wait(ms) => {
                    let until = now + ms;
                    while let Some(deadline) = bridge.poll_timeout() {
                        if deadline > until { break; }
                        now = now.max(deadline);
                        bridge.handle_timeout(now);
                        contract.drain(&mut bridge);
                    }
                    now = until;
                    bridge.handle_timeout(now);
                }
                Input::ClientGone => bridge.client_gone(now),
                Input::Exit(code) => {
                    if exited { continue; }
                    exited = true;
                    bridge.agent_exited(ExitStatus::Code(code), now).unwrap();
                }
            }
            contract.drain(&mut bridge);
        }
        // Finish the run: the rest of the output, the exit, and time until nothing is due.
        if !exited {
            bridge.push_stdout(&bytes[offset..], now).unwrap();
            contract.drain(&mut bridge);
            bridge.agent_exited(ExitStatus::Code(0), now).unwrap();
            contract.drain(&mut bridge);
        }
        let mut guard = 0;
        while let Some(deadline) = bridge.poll_timeout() {
            now = now.max(deadline);
            bridge.handle_timeout(now);
            contract.drain(&mut bridge);
            guard += 1;
            prop_assert!(guard < 1000, "deadlines must not loop");
        }
        prop_assert_eq!(contract.ends, 1);
        prop_assert!(bridge.poll_output().is_none());
        prop_assert!(bridge.is_ended());
    }
}
