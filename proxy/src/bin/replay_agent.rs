//! A stand-in for `cursor-agent`: reads the prompt from stdin, then replays a recorded
//! stream-json transcript to stdout with pacing and scripted failures. The proxies' tests,
//! benchmarks and end-to-end runs use it in place of the real CLI.
//!
//! ```text
//! replay_agent [--transcript FILE | --scenario DIR] [--delay-ms N] [--stderr FILE]
//!              [--exit CODE] [--hang] [--spawn-child] [--version] [cursor-agent flags…]
//! ```
//!
//! - `--transcript FILE` (or env `AGENTWIRE_REPLAY_TRANSCRIPT`): the NDJSON to replay.
//! - `--scenario DIR`: a multi-turn conversation, `DIR/turn-1.jsonl`, `turn-2.jsonl`, …;
//!   the turn played is 1 + the number of tool-result blocks in the prompt received (read
//!   with agentwire's own prompt reader), so each request of a tool round gets the next turn.
//! - `--delay-ms N`: pause between lines (default 5; 0 writes as fast as the pipe takes it).
//! - `--stderr FILE`: written to stderr after the transcript.
//! - `--exit CODE`: the exit code (default 0).
//! - `--hang`: after the transcript, stop writing and never exit.
//! - `--spawn-child`: first start a long-sleeping child (sharing stdout and the process
//!   group), so tests can see that the whole group is stopped.
//! - `--version`: print a version line and exit.
//! - `models` (the subcommand) or `--list-models`: print a model listing in the
//!   CLI's format and exit.
//! - Every other argument (the flags cursor-agent takes, and their values) is ignored.
//!
//! With env `AGENTWIRE_REPLAY_LOG=FILE`, each run appends one JSON line to FILE:
//! `{"pid":…,"child_pid":…|null,"argv":[…],"prompt":"…"}`, written after the whole prompt
//! was read and before the first line is replayed.
//!
//! With env `AGENTWIRE_REPLAY_TIMES=FILE`, each run appends
//! `{"pid":…,"started_unix_ns":…,"first_line_unix_ns":…}` once its first line is out: when
//! the process started and when it began writing its first line, on the system clock every
//! process shares (benches/proxy.sh measures the proxies' latency against them).

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentwire::cursor::prompt::read_blocks;

/// What `models` prints: the CLI's listing format, markers included.
const MODELS: &str = "Available models\n\nauto - Auto (default)\ncomposer-2.5 - Composer 2.5 (current)\ngpt-5 - GPT-5\nsonnet-4.5-thinking - Claude 4.5 Sonnet (Thinking)\n\nTip: use --model <id> to switch.\n";

/// The hidden mode of the child `--spawn-child` starts.
const SLEEPER: &str = "--replay-agent-sleeper";

#[derive(Debug)]
struct Args {
    transcript: Option<PathBuf>,
    scenario: Option<PathBuf>,
    delay: Duration,
    stderr: Option<PathBuf>,
    exit: u8,
    hang: bool,
    spawn_child: bool,
}

enum Parsed {
    Run(Args),
    Version,
    Models,
    Sleeper,
}

fn parse_args(argv: &[String]) -> Result<Parsed, String> {
    let mut args = Args {
        transcript: std::env::var_os("AGENTWIRE_REPLAY_TRANSCRIPT").map(PathBuf::from),
        scenario: None,
        delay: Duration::from_millis(5),
        stderr: None,
        exit: 0,
        hang: false,
        spawn_child: false,
    };
    // The `models` subcommand, wherever wrapper flags put it (not a `--model` value).
    let subcommand = argv
        .iter()
        .enumerate()
        .any(|(i, a)| a == "models" && (i == 0 || argv[i - 1] != "--model"));
    if subcommand {
        return Ok(Parsed::Models);
    }
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            SLEEPER => return Ok(Parsed::Sleeper),
            "--version" => return Ok(Parsed::Version),
            "--list-models" => return Ok(Parsed::Models),
            "--transcript" => args.transcript = Some(value("--transcript")?.into()),
            "--scenario" => args.scenario = Some(value("--scenario")?.into()),
            "--delay-ms" => {
                let ms = value("--delay-ms")?;
                let ms: u64 = ms.parse().map_err(|e| format!("--delay-ms {ms}: {e}"))?;
                args.delay = Duration::from_millis(ms);
            }
            "--stderr" => args.stderr = Some(value("--stderr")?.into()),
            "--exit" => {
                let code = value("--exit")?;
                args.exit = code.parse().map_err(|e| format!("--exit {code}: {e}"))?;
            }
            "--hang" => args.hang = true,
            "--spawn-child" => args.spawn_child = true,
            // cursor-agent's own flags and their values.
            _ => {}
        }
    }
    if args.transcript.is_none() && args.scenario.is_none() && !args.hang {
        return Err(
            "nothing to replay: give --transcript FILE (or AGENTWIRE_REPLAY_TRANSCRIPT), --scenario DIR or --hang"
                .into(),
        );
    }
    Ok(Parsed::Run(args))
}

/// The transcript for this prompt: the scenario's turn, else `--transcript`.
fn transcript_for(args: &Args, prompt: &str) -> Result<Option<PathBuf>, String> {
    let Some(dir) = &args.scenario else {
        return Ok(args.transcript.clone());
    };
    let turn = 1 + read_blocks(prompt).filter(|b| b.is_tool_result()).count();
    let path = dir.join(format!("turn-{turn}.jsonl"));
    if !path.is_file() {
        return Err(format!(
            "scenario {}: no turn-{turn}.jsonl for a prompt with {} tool results",
            dir.display(),
            turn - 1
        ));
    }
    Ok(Some(path))
}

fn append_log(path: &Path, argv: &[String], prompt: &str, child: Option<u32>) -> io::Result<()> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "pid": std::process::id(),
        "child_pid": child,
        "argv": argv,
        "prompt": prompt,
    }))
    .map_err(io::Error::other)?;
    line.push(b'\n');
    // One write of the whole line: concurrent runs append whole lines.
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&line)
}

fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `AGENTWIRE_REPLAY_TIMES`: where this run's start and first-line times go.
struct Times {
    file: PathBuf,
    started_unix_ns: u128,
}

impl Times {
    fn first_line(&self, at_unix_ns: u128) -> io::Result<()> {
        let line = format!(
            "{{\"pid\":{},\"started_unix_ns\":{},\"first_line_unix_ns\":{at_unix_ns}}}\n",
            std::process::id(),
            self.started_unix_ns
        );
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)?
            .write_all(line.as_bytes())
    }
}

fn replay(path: &Path, delay: Duration, times: Option<&Times>) -> io::Result<()> {
    let file = File::open(path)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if delay.is_zero() {
        let at = unix_ns();
        io::copy(&mut BufReader::with_capacity(64 * 1024, file), &mut out)?;
        out.flush()?;
        return times.map_or(Ok(()), |t| t.first_line(at));
    }
    let mut lines = BufReader::new(file);
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if !first {
            std::thread::sleep(delay);
        }
        let at = unix_ns();
        out.write_all(&line)?;
        out.flush()?;
        if first && let Some(times) = times {
            times.first_line(at)?;
        }
        first = false;
    }
}

fn run(args: &Args, argv: &[String], times: Option<&Times>) -> Result<(), String> {
    let mut prompt = Vec::new();
    io::stdin()
        .read_to_end(&mut prompt)
        .map_err(|e| format!("reading the prompt: {e}"))?;
    let prompt = String::from_utf8_lossy(&prompt);
    let child = if args.spawn_child {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .arg(SLEEPER)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("--spawn-child: {e}"))?;
        Some(child.id())
    } else {
        None
    };
    if let Some(log) = std::env::var_os("AGENTWIRE_REPLAY_LOG") {
        append_log(Path::new(&log), argv, &prompt, child)
            .map_err(|e| format!("AGENTWIRE_REPLAY_LOG: {e}"))?;
    }
    if let Some(path) = transcript_for(args, &prompt)? {
        match replay(&path, args.delay, times) {
            Ok(()) => {}
            // The reader hung up: nobody is listening any more.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    if let Some(path) = &args.stderr {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let _ = io::stderr().write_all(&bytes);
    }
    if args.hang {
        sleep_forever();
    }
    Ok(())
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn main() -> ExitCode {
    let times = std::env::var_os("AGENTWIRE_REPLAY_TIMES").map(|file| Times {
        file: file.into(),
        started_unix_ns: unix_ns(),
    });
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Version) => {
            println!("agentwire-replay-agent {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Models) => {
            print!("{MODELS}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Sleeper) => sleep_forever(),
        Err(message) => {
            eprintln!("replay_agent: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&args, &argv, times.as_ref()) {
        Ok(()) => ExitCode::from(args.exit),
        Err(message) => {
            eprintln!("replay_agent: {message}");
            ExitCode::FAILURE
        }
    }
}
