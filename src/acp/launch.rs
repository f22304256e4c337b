//! How to start a warm agent with its own tools off ([`NativeTools::Off`]), for the agents
//! whose native tools only their configuration turns off (nothing in `session/new` does).
//! The adapter spawns the agent; this says what to add to its command line and
//! environment, and never touches a file of the user's.
//!
//! Measured with the agents given a client's tools as an MCP server, counting the tools
//! offered to their model:
//!
//! | agent | how | what its model is offered then |
//! |---|---|---|
//! | claude-agent-acp 0.23.1 | nothing at launch: per session, `_meta.claudeCode.options.tools: []` | the client's tools only |
//! | codex-acp 0.16.0 | `-c` overrides of its configuration (they win over `config.toml`): `web_search`, the `features` of its shell, `unified_exec`, patch, multi-agent, tool search and goals tools off, `tools.experimental_request_user_input` off | the client's tools, and the six it cannot turn off: three MCP-resource readers, `update_plan`, `apply_patch`, `view_image` (their permission requests are refused) |
//! | Gemini CLI 0.61.0 | `tools.core: []` in a system-defaults settings file of the adapter's own (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`), merged over the defaults file it stands for; the user's own settings still win | the client's tools only |
//! | cursor-agent `acp` | no way known | — |
//!
//! [`NativeTools::Off`]: super::NativeTools::Off

use std::path::Path;

use serde_json::{Map, Value, json};

/// What to add to a warm agent's launch so that its own tools are off. Empty for an agent
/// that turns them off per session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentLaunch {
    /// Arguments to append to the agent's command line.
    pub args: Vec<String>,
    /// A settings file to write and name to the agent in its environment.
    pub settings: Option<SettingsFile>,
}

/// A settings file of the adapter's own, which the agent reads in place of another: the
/// adapter writes [`contents`](Self::contents) to a file of its own, sets the environment
/// variable [`env`](Self::env) to its path for the agent, and removes the file when done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    /// The environment variable that names the file to the agent.
    pub env: &'static str,
    /// The file the agent reads when the variable is not set, whose settings the new file
    /// keeps: read it (when it exists) and give its bytes to
    /// [`contents`](Self::contents).
    pub replaces: String,
    /// The settings the file adds.
    added: Value,
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
    /// The settings file to keep is not a JSON object.
    #[error(
        "{path}: not a JSON object of settings ({reason}); fix or remove it, or keep the agent's own tools (native tools `keep`)"
    )]
    BadSettings {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
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

/// Gemini CLI's system-defaults settings file: named by this variable, or beside its
/// system settings file (itself named by [`GEMINI_SYSTEM_SETTINGS`], or at a fixed path).
const GEMINI_SYSTEM_DEFAULTS: &str = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH";
const GEMINI_SYSTEM_SETTINGS: &str = "GEMINI_CLI_SYSTEM_SETTINGS_PATH";

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
            settings: None,
        });
    }
    let acp_flag = args
        .iter()
        .any(|a| a == "--acp" || a == "--experimental-acp");
    if named("gemini") && acp_flag {
        let replaces = env(GEMINI_SYSTEM_DEFAULTS).unwrap_or_else(|| {
            let settings =
                env(GEMINI_SYSTEM_SETTINGS).unwrap_or_else(|| gemini_system_settings().to_owned());
            let dir = Path::new(&settings).parent().unwrap_or(Path::new("/"));
            dir.join("system-defaults.json").display().to_string()
        });
        return Ok(AgentLaunch {
            args: Vec::new(),
            settings: Some(SettingsFile {
                env: GEMINI_SYSTEM_DEFAULTS,
                replaces,
                added: json!({"tools": {"core": []}}),
            }),
        });
    }
    Err(LaunchError::UnknownAgent(program.to_owned()))
}

/// Gemini CLI's system settings file on this platform, when not named by the environment.
fn gemini_system_settings() -> &'static str {
    if cfg!(target_os = "macos") {
        "/Library/Application Support/GeminiCli/settings.json"
    } else if cfg!(windows) {
        "C:\\ProgramData\\gemini-cli\\settings.json"
    } else {
        "/etc/gemini-cli/settings.json"
    }
}

/// The last component of a path, or the path itself.
fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl SettingsFile {
    /// The file's contents: the settings of the file it [replaces](Self::replaces)
    /// (`replaced`: its bytes, `None` when there is none), with the added settings written
    /// over them.
    ///
    /// # Errors
    ///
    /// [`LaunchError::BadSettings`] when `replaced` is not a JSON object.
    pub fn contents(&self, replaced: Option<&[u8]>) -> Result<String, LaunchError> {
        let mut settings = match replaced {
            None => Value::Object(Map::new()),
            Some(bytes) => {
                let bad = |reason: String| LaunchError::BadSettings {
                    path: self.replaces.clone(),
                    reason,
                };
                let value: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
                if !value.is_object() {
                    return Err(bad("its top level is not an object".into()));
                }
                value
            }
        };
        merge(&mut settings, &self.added);
        Ok(settings.to_string())
    }
}

/// Writes `added` over `into`: objects merged key by key, anything else replaced.
fn merge(into: &mut Value, added: &Value) {
    match (into, added) {
        (Value::Object(into), Value::Object(added)) => {
            for (key, value) in added {
                match into.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge(existing, value);
                    }
                    _ => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (into, added) => *into = added.clone(),
    }
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
        assert_eq!(codex.settings, None);
        let via_npx =
            launch_without_native_tools("npx", &args(&["@zed-industries/codex-acp"]), &no_env);
        assert_eq!(via_npx.unwrap().args, codex.args);
        let claude = launch_without_native_tools("claude-agent-acp", &[], &no_env).unwrap();
        assert_eq!(claude, AgentLaunch::default());
    }

    #[test]
    fn gemini_gets_a_defaults_file_over_the_one_it_stands_for() {
        let launch = launch_without_native_tools("gemini", &args(&["--acp"]), &no_env).unwrap();
        assert!(launch.args.is_empty());
        let file = launch.settings.unwrap();
        assert_eq!(file.env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH");
        if cfg!(target_os = "linux") {
            assert_eq!(file.replaces, "/etc/gemini-cli/system-defaults.json");
        }
        assert_eq!(file.contents(None).unwrap(), r#"{"tools":{"core":[]}}"#);
        let kept = file
            .contents(Some(
                br#"{"tools":{"exclude":["x"],"core":["ls"]},"ui":{"theme":"d"}}"#,
            ))
            .unwrap();
        let kept: Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(
            kept,
            json!({"tools":{"exclude":["x"],"core":[]},"ui":{"theme":"d"}})
        );
        for bad in [&b"[1]"[..], b"{", b"null"] {
            assert!(matches!(
                file.contents(Some(bad)),
                Err(LaunchError::BadSettings { .. })
            ));
        }
        // Where the environment names the files.
        let env = |name: &str| {
            (name == "GEMINI_CLI_SYSTEM_SETTINGS_PATH").then(|| "/srv/g/settings.json".to_owned())
        };
        let launch = launch_without_native_tools("gemini", &args(&["--acp"]), &env).unwrap();
        assert_eq!(
            launch.settings.unwrap().replaces,
            Path::new("/srv/g")
                .join("system-defaults.json")
                .display()
                .to_string()
        );
        let env = |name: &str| {
            (name == "GEMINI_CLI_SYSTEM_DEFAULTS_PATH").then(|| "/srv/defaults.json".to_owned())
        };
        let launch = launch_without_native_tools("gemini", &args(&["--acp"]), &env).unwrap();
        assert_eq!(launch.settings.unwrap().replaces, "/srv/defaults.json");
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
