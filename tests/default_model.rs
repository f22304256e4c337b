//! A request without `model` runs the agent's default model, `auto`, on every route, and
//! its answer names `auto` as the model (as the READMEs say).

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;

/// The whole response body of `request` over the project's multibyte transcript.
fn answer(dialect: Dialect, request: &str) -> (Vec<String>, String) {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    };
    let mut bridge = Bridge::new(dialect, request.as_bytes(), &Config::default(), params);
    let args = bridge
        .invocation()
        .unwrap_or_else(|| panic!("{dialect:?}: no invocation for {request}"))
        .args
        .clone();
    let mut body = Vec::new();
    bridge
        .push_stdout(include_bytes!("fixtures/multibyte.jsonl"), 1)
        .unwrap();
    drain(&mut bridge, &mut body);
    bridge.agent_exited(ExitStatus::Code(0), 2).unwrap();
    drain(&mut bridge, &mut body);
    assert!(bridge.is_ended(), "{dialect:?}");
    (args, String::from_utf8(body).unwrap())
}

fn drain(bridge: &mut Bridge, body: &mut Vec<u8>) {
    while let Some(output) = bridge.poll_output() {
        match output {
            Output::Head(head) => assert_eq!(head.status, 200),
            Output::Body(bytes) => body.extend_from_slice(bytes),
            Output::StopAgent | Output::End => {}
            Output::Respawn => unreachable!("a bridge made by Bridge::new never respawns"),
        }
    }
}

#[test]
fn a_request_without_a_model_runs_auto_on_every_route() {
    for (dialect, request) in [
        (
            Dialect::ChatCompletions,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        ),
        (Dialect::Responses, r#"{"input":"hi"}"#),
        (
            Dialect::Messages,
            r#"{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#,
        ),
    ] {
        let (args, body) = answer(dialect, request);
        let model = args
            .iter()
            .position(|a| a == "--model")
            .map(|i| &args[i + 1]);
        assert_eq!(
            model.map(String::as_str),
            Some("auto"),
            "{dialect:?}: {args:?}"
        );
        assert!(body.contains(r#""model":"auto""#), "{dialect:?}: {body}");
        // The same request with an empty name is the same request.
        let empty = request.replacen('{', r#"{"model":"","#, 1);
        assert_eq!(answer(dialect, &empty), (args, body), "{dialect:?}");
    }
}
