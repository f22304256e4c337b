//! How to start a warm agent with its own tools off ([`NativeTools::Off`]), for the agents
//! whose native tools only their configuration turns off (nothing in `session/new` does).
//! The adapter spawns the agent; this says what to add to its command line, and never
//! touches a file of the user's.
//!
//! Measured with the agents given a client's tools as an MCP server, counting the tools
//! offered to their model:
//!
//! | agent | how | what its model is offered then |
//! |---|---|---|
//! | claude-agent-acp 0.23.1 | nothing at launch: per session, `_meta.claudeCode.options.tools: []` | the client's tools only |
//! | codex-acp 0.16.0 | `-c` overrides of its configuration (they win over `config.toml`): `web_search`, the `features` of its shell, `unified_exec`, patch, multi-agent, tool search and goals tools off, `tools.experimental_request_user_input` off | the client's tools, and the six it cannot turn off: three MCP-resource readers, `update_plan`, `apply_patch`, `view_image` (their permission requests are refused) |
//! | Gemini CLI 0.61.0 | a policy file of the adapter's own (`--policy`): every tool denied but MCP servers' tools, asked for as before; the user's own policies (`~/.gemini/policies`, which a `--policy` would replace) named after it; its administrator's policies still rule | the client's tools (and those of any MCP server the user configured for it) |
//! | cursor-agent `acp` | no way known | — |
//!
//! [`NativeTools::Off`]: super::NativeTools::Off

use std::path::Path;

/// What to add to a warm agent's launch so that its own tools are off. Empty for an agent
/// that turns them off per session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentLaunch {
    /// Arguments to append to the agent's command line.
    pub args: Vec<String>,
    /// A file to write and name on the command line after [`args`](Self::args).
    pub file: Option<LaunchFile>,
}

/// A file of the adapter's own the agent reads: the adapter writes
/// [`contents`](Self::contents) to a file named [`name`](Self::name) in a private
/// directory, appends [`flag`](Self::flag) and the file's path to the agent's arguments,
/// then [`after`](Self::after), and removes the file when the agent is stopped for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchFile {
    /// Its file name (the agent may read it by its extension).
    pub name: &'static str,
    /// What it holds.
    pub contents: String,
    /// The flag naming it to the agent.
    pub flag: &'static str,
    /// Arguments that follow it.
    pub after: Vec<String>,
}

/// Why an agent cannot be started with its own tools off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The command is no agent whose native tools agentwire knows how to turn off.
    #[error(
        "cannot turn off the own tools of `{0}`: agentwire knows how for claude-agent-acp, \
         codex-acp and `gemini --acp` (recognised by their command's file name); keep them \
         (native tools `keep`)"
    )]
    UnknownAgent(String),
}

/// The `-c` overrides that turn off codex-acp's own tools.
const CODEX_OVERRIDES: &[&str] = &[
    "web_search=\"disabled\"",
    "features.shell_tool=false",
    "features.unified_exec=false",
    "features.apply_patch_freeform=false",
    "features.multi_agent=false",
    "features.tool_search=false",
    "features.goals=false",
    "tools.experimental_request_user_input.enabled=false",
];

/// Gemini CLI's policy: every tool denied (so not offered to its model) but MCP servers'
/// tools, which are asked for as without it. The client's server cannot be named alone:
/// Gemini CLI 0.61.0 checks an MCP call under another name (`client_bash`) than it lists
/// the tool by (`mcp_client_bash`), so a rule for one server's tools denies its calls.
const GEMINI_POLICY: &str = "# Written by agentwire: the agent's own tools off.
[[rule]]
toolName = \"*\"
decision = \"deny\"
priority = 998

[[rule]]
toolName = \"*\"
mcpName = \"*\"
decision = \"ask_user\"
priority = 999
";

/// What to add to the launch of the ACP agent `program` `args` so that its own tools are
/// off. The agent is recognised by the file name of its program or of an argument (as in
/// `npx @zed-industries/codex-acp`); `env` reads the environment the agent will get.
///
/// # Errors
///
/// [`LaunchError::UnknownAgent`] for an agent this does not know (cursor-agent among
/// them: nothing known turns its tools off).
pub fn launch_without_native_tools(
    program: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AgentLaunch, LaunchError> {
    let names: Vec<&str> = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(file_name)
        .collect();
    let named = |wanted: &str| names.contains(&wanted);
    if named("claude-agent-acp") {
        return Ok(AgentLaunch::default());
    }
    if named("codex-acp") {
        return Ok(AgentLaunch {
            args: CODEX_OVERRIDES
                .iter()
                .flat_map(|o| ["-c".to_owned(), (*o).to_owned()])
                .collect(),
            file: None,
        });
    }
    let acp_flag = args
        .iter()
        .any(|a| a == "--acp" || a == "--experimental-acp");
    if named("gemini") && acp_flag {
        // A `--policy` replaces the user's policies directory: it is named again, unless
        // the command line already names policies of its own.
        let mut after = Vec::new();
        let own_policies = args
            .iter()
            .any(|a| a == "--policy" || a.starts_with("--policy="));
        let home = env("GEMINI_CLI_HOME").or_else(|| env("HOME"));
        if let (false, Some(home)) = (own_policies, home) {
            let dir = Path::new(&home).join(".gemini").join("policies");
            after = vec!["--policy".to_owned(), dir.display().to_string()];
        }
        return Ok(AgentLaunch {
            args: Vec::new(),
            file: Some(LaunchFile {
                name: "agentwire-native-tools-off.toml",
                contents: GEMINI_POLICY.to_owned(),
                flag: "--policy",
                after,
            }),
        });
    }
    Err(LaunchError::UnknownAgent(program.to_owned()))
}

/// The last component of a path, or the path itself.
fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn codex_gets_overrides_claude_nothing() {
        let codex = launch_without_native_tools("/opt/bin/codex-acp", &[], &no_env).unwrap();
        assert_eq!(codex.args.len(), 2 * CODEX_OVERRIDES.len());
        assert!(codex.args.chunks(2).all(|pair| pair[0] == "-c"));
        assert!(codex.args.contains(&"features.shell_tool=false".to_owned()));
        assert_eq!(codex.file, None);
        let via_npx =
            launch_without_native_tools("npx", &args(&["@zed-industries/codex-acp"]), &no_env);
        assert_eq!(via_npx.unwrap().args, codex.args);
        let claude = launch_without_native_tools("claude-agent-acp", &[], &no_env).unwrap();
        assert_eq!(claude, AgentLaunch::default());
    }

    #[test]
    fn gemini_gets_a_policy_and_keeps_the_users() {
        let home = |name: &str| (name == "HOME").then(|| "/home/u".to_owned());
        let launch = launch_without_native_tools("gemini", &args(&["--acp"]), &home).unwrap();
        assert!(launch.args.is_empty());
        let file = launch.file.unwrap();
        assert_eq!(
            (file.flag, file.name),
            ("--policy", "agentwire-native-tools-off.toml")
        );
        assert_eq!(
            file.after,
            [
                "--policy".to_owned(),
                Path::new("/home/u/.gemini/policies").display().to_string()
            ]
        );
        assert!(
            file.contents
                .contains("toolName = \"*\"\ndecision = \"deny\"")
        );
        assert!(
            file.contents
                .contains("mcpName = \"*\"\ndecision = \"ask_user\"")
        );
        // GEMINI_CLI_HOME moves its directory; policies on the command line are the user's
        // choice.
        let moved = |name: &str| (name == "GEMINI_CLI_HOME").then(|| "/srv/g".to_owned());
        let launch = launch_without_native_tools("gemini", &args(&["--acp"]), &moved).unwrap();
        assert!(launch.file.unwrap().after[1].starts_with("/srv/g"));
        let own = args(&["--acp", "--policy", "/etc/p.toml"]);
        let launch = launch_without_native_tools("gemini", &own, &home).unwrap();
        assert!(launch.file.unwrap().after.is_empty());
    }

    #[test]
    fn others_are_refused_by_name() {
        for (program, list) in [
            ("cursor-agent", &["acp"][..]),
            ("gemini", &[][..]),
            ("my-agent", &["--acp"][..]),
        ] {
            let error = launch_without_native_tools(program, &args(list), &no_env).unwrap_err();
            assert_eq!(error, LaunchError::UnknownAgent(program.to_owned()));
            assert!(error.to_string().contains("keep"), "{error}");
        }
    }
}
