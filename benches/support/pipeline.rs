//! What the benches share: the size of one read, the baselines every figure is reported
//! next to, and the per-request path's whole Bridge.

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};

/// The size of one read, as the example adapters use.
pub const READ: usize = 4096;

/// A streaming Chat Completions request.
pub const STREAM: &[u8] =
    br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

/// Newlines found in `input`, read `READ` bytes at a time.
pub fn memchr_scan(input: &[u8]) -> usize {
    input
        .chunks(READ)
        .map(|chunk| memchr::memchr_iter(b'\n', chunk).count())
        .sum()
}

/// Lines `serde_json` accepts, reading `READ` bytes at a time: the partial last line of a
/// read is carried, and only new bytes are searched for newlines.
pub fn serde_json_validate(input: &[u8]) -> usize {
    let mut carry: Vec<u8> = Vec::new();
    let mut valid = 0;
    let mut check = |line: &[u8]| {
        if !line.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
            valid += 1;
        }
    };
    for chunk in input.chunks(READ) {
        let mut rest = chunk;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            if carry.is_empty() {
                check(&rest[..at]);
            } else {
                carry.extend_from_slice(&rest[..at]);
                check(&carry);
                carry.clear();
            }
            rest = &rest[at + 1..];
        }
        carry.extend_from_slice(rest);
    }
    check(&carry);
    valid
}

/// The whole Bridge for `request` over `input`, fed `chunk` bytes at a time, outputs
/// drained after each push, then a clean exit. Returns the body bytes produced.
pub fn run_bridge(request: &[u8], input: &[u8], chunk: usize) -> usize {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    };
    let mut bridge = Bridge::new(
        Dialect::ChatCompletions,
        request,
        &Config::default(),
        params,
    );
    let mut body = 0;
    let mut drain = |bridge: &mut Bridge| {
        while let Some(output) = bridge.poll_output() {
            if let Output::Body(bytes) = output {
                body += bytes.len();
            }
        }
    };
    for piece in input.chunks(chunk) {
        bridge.push_stdout(piece, 0).unwrap();
        drain(&mut bridge);
    }
    bridge
        .agent_exited(agentwire::cursor::ExitStatus::Code(0), 0)
        .unwrap();
    drain(&mut bridge);
    body
}
