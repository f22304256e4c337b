//! `--demo`: the proxy answers from a transcript embedded in its own binary.
//!
//! The proxy runs *itself* as the agent (with [`AGENT_ENV`] set), so a demo request takes
//! exactly the path a real one does — spawn in a process group, prompt on stdin, stdout
//! through the bridge, exit and reap — with no Cursor account and nothing else to build.

use std::io::{Read, Write};
use std::time::Duration;

/// Set in the environment of the proxy's own binary when it runs as the demo agent.
pub const AGENT_ENV: &str = "AGENTWIRE_DEMO_AGENT";

/// The recorded answer: thinking, then text streamed in fragments and recapped, then the
/// result with usage, as cursor-agent writes it.
pub const TRANSCRIPT: &str = include_str!("demo_transcript.jsonl");

/// The model listing served by `/v1/models` in demo mode, in the CLI's format.
pub const MODELS: &str =
    "Available models\n\nauto - Auto (default)\ndemo - agentwire demo transcript (current)\n";

/// Pause between transcript lines, so the stream is visibly a stream.
const PACE: Duration = Duration::from_millis(20);

/// If this process was started as the demo agent, plays that role and returns its exit
/// code; otherwise `None`. Call first thing in `main`.
pub fn run_as_agent() -> Option<std::process::ExitCode> {
    std::env::var_os(AGENT_ENV)?;
    // The prompt: read it all, as cursor-agent does, before answering.
    let mut prompt = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut prompt);
    let mut out = std::io::stdout().lock();
    for line in TRANSCRIPT.split_inclusive('\n') {
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
        std::thread::sleep(PACE);
    }
    Some(std::process::ExitCode::SUCCESS)
}
