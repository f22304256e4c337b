//! The cursor-agent command line for one request.

/// How much the agent may do on its own.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentMode {
    /// Read-only (`--mode ask`): without it cursor-agent runs `edit` natively even without
    /// `--force`, changing files behind the client's back.
    ReadOnly,
    /// The agent's native tools are available; `force` passes `--force`, which lets shell
    /// and web tools run without approval (headless runs cannot approve, so without it they
    /// are rejected).
    Native {
        /// Pass `--force`.
        force: bool,
    },
}

/// What to run: the program, its arguments, what to write to its stdin, and the
/// environment to add. The adapter spawns it (in its own process group, so that
/// `Output::StopAgent` of the bridge can end the agent and everything it
/// started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The cursor-agent binary (a path or a name looked up in `PATH`).
    pub program: String,
    /// Arguments. No user-controlled text appears here: the prompt goes to stdin, and the
    /// model name is validated so it cannot be read as a flag.
    pub args: Vec<String>,
    /// The prompt. Write it all, then close stdin.
    pub stdin: Vec<u8>,
    /// Environment variables to set for the child (on top of the adapter's environment).
    pub env: Vec<(String, String)>,
}

/// The parts of an invocation.
#[derive(Debug, Clone, Copy)]
pub struct InvocationSpec<'a> {
    /// The binary.
    pub program: &'a str,
    /// The model slug, already validated.
    pub model: &'a str,
    /// `--workspace`, when configured.
    pub workspace: Option<&'a str>,
    /// An isolated CLI configuration directory (`CURSOR_CONFIG_DIR`): every `--model` run
    /// rewrites the CLI's `cli-config.json`, so concurrent runs sharing one directory race.
    pub config_dir: Option<&'a str>,
    /// What the agent may do.
    pub mode: AgentMode,
    /// Pass `--stream-partial-output` (token-level text instead of whole segments).
    pub partial_output: bool,
    /// `--resume`: the chat to continue, as the agent reported it (its `session_id`); the
    /// prompt then holds only what follows. See [`is_chat_id`].
    pub resume: Option<&'a str>,
}

/// Whether `id` can be passed to `--resume`: cursor-agent's chat ids are UUIDs; anything
/// that is not letters, digits, `-` and `_` (at most 128) is never put on the command line,
/// where it could read as a flag.
#[must_use]
pub fn is_chat_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Invocation {
    /// Builds the command line: `--print --output-format stream-json
    /// [--stream-partial-output] --model M --trust [--workspace W] [--resume C] [--mode ask
    /// | --force]`, with `prompt` for stdin. A `resume` id that [`is_chat_id`] refuses is
    /// left out.
    pub fn new(spec: &InvocationSpec<'_>, prompt: String) -> Self {
        let mut args: Vec<String> = ["--print", "--output-format", "stream-json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if spec.partial_output {
            args.push("--stream-partial-output".into());
        }
        args.push("--model".into());
        args.push(spec.model.into());
        // Headless runs stop at the workspace trust gate without it.
        args.push("--trust".into());
        if let Some(workspace) = spec.workspace {
            args.push("--workspace".into());
            args.push(workspace.into());
        }
        if let Some(chat) = spec.resume.filter(|id| is_chat_id(id)) {
            args.push("--resume".into());
            args.push(chat.into());
        }
        match spec.mode {
            AgentMode::ReadOnly => {
                args.push("--mode".into());
                args.push("ask".into());
            }
            AgentMode::Native { force: true } => args.push("--force".into()),
            AgentMode::Native { force: false } => {}
        }
        let env = spec
            .config_dir
            .map(|dir| vec![("CURSOR_CONFIG_DIR".to_owned(), dir.to_owned())])
            .unwrap_or_default();
        Invocation {
            program: spec.program.to_owned(),
            args,
            stdin: prompt.into_bytes(),
            env,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mode: AgentMode) -> InvocationSpec<'static> {
        InvocationSpec {
            program: "cursor-agent",
            model: "gpt-5",
            workspace: Some("/srv/ws"),
            config_dir: None,
            mode,
            partial_output: true,
            resume: None,
        }
    }

    #[test]
    fn read_only_never_forces() {
        let inv = Invocation::new(&spec(AgentMode::ReadOnly), "hi".into());
        assert_eq!(
            inv.args,
            [
                "--print",
                "--output-format",
                "stream-json",
                "--stream-partial-output",
                "--model",
                "gpt-5",
                "--trust",
                "--workspace",
                "/srv/ws",
                "--mode",
                "ask"
            ]
        );
        assert_eq!(inv.stdin, b"hi");
        assert!(inv.env.is_empty());
    }

    #[test]
    fn native_force_and_config_dir() {
        let mut s = spec(AgentMode::Native { force: true });
        s.config_dir = Some("/tmp/cfg");
        s.workspace = None;
        s.partial_output = false;
        let inv = Invocation::new(&s, "p".into());
        assert_eq!(
            inv.args,
            [
                "--print",
                "--output-format",
                "stream-json",
                "--model",
                "gpt-5",
                "--trust",
                "--force"
            ]
        );
        assert_eq!(
            inv.env,
            [("CURSOR_CONFIG_DIR".to_owned(), "/tmp/cfg".to_owned())]
        );
        let inv = Invocation::new(&spec(AgentMode::Native { force: false }), "p".into());
        assert!(!inv.args.iter().any(|a| a == "--force" || a == "--mode"));
    }

    #[test]
    fn resume_passes_only_a_chat_id() {
        let mut s = spec(AgentMode::ReadOnly);
        s.resume = Some("9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab");
        let inv = Invocation::new(&s, "p".into());
        let at = inv.args.iter().position(|a| a == "--resume").unwrap();
        assert_eq!(inv.args[at + 1], "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab");
        for bad in ["--force", "a b", "", "x\ny", &"a".repeat(129)] {
            s.resume = Some(bad);
            let inv = Invocation::new(&s, "p".into());
            assert!(!inv.args.iter().any(|a| a == "--resume"), "{bad:?}");
        }
    }
}
