//! What to add to an ACP agent's launch so that its own tools are off
//! (`acp::launch_without_native_tools`).
//!
//! The agent crosses as the JSON text `{"program", "args", "env"}` (`env`: the agent's
//! environment, names to values); the launch comes back as the JSON text
//! `{"args": [...], "settings": null | {"env", "replaces"}}`. A settings file's contents
//! are asked for with the same agent and the replaced file's bytes.

use std::collections::HashMap;

use agentwire::acp::{AgentLaunch, LaunchError, launch_without_native_tools};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::wasm_bindgen;

use crate::config::from_json;
use crate::error::{Code, RawError};

/// The agent whose launch is asked for.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Agent {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: HashMap<String, String>,
}

#[derive(Serialize)]
struct JsLaunch<'a> {
    args: &'a [String],
    settings: Option<JsSettings<'a>>,
}

#[derive(Serialize)]
struct JsSettings<'a> {
    env: &'a str,
    replaces: &'a str,
}

/// The launch of the agent in `agent` (JSON).
fn launch(agent: &str) -> Result<AgentLaunch, RawError> {
    let agent: Agent = from_json(agent, "agent")?;
    let env = |name: &str| agent.env.get(name).cloned();
    launch_without_native_tools(&agent.program, &agent.args, &env).map_err(launch_error)
}

/// A launch failure: bad input, with the core's message.
fn launch_error(error: LaunchError) -> RawError {
    RawError::new(Code::InvalidInput, error.to_string())
}

/// What to add to the launch of `agent` (the JSON of `{program, args, env}`) so that its
/// own tools are off, as JSON (`{args, settings}`).
#[wasm_bindgen(js_name = launchWithoutNativeTools)]
pub fn launch_without_native_tools_json(agent: &str) -> Result<String, RawError> {
    let launch = launch(agent)?;
    let js = JsLaunch {
        args: &launch.args,
        settings: launch.settings.as_ref().map(|file| JsSettings {
            env: file.env,
            replaces: &file.replaces,
        }),
    };
    Ok(serde_json::to_string(&js).expect("serialising strings cannot fail"))
}

/// The contents of the settings file of `agent`'s launch, given the bytes of the file it
/// replaces (`None`: it does not exist).
#[wasm_bindgen(js_name = launchSettingsContents)]
pub fn launch_settings_contents(
    agent: &str,
    replaced: Option<Vec<u8>>,
) -> Result<String, RawError> {
    let launch = launch(agent)?;
    let file = launch.settings.ok_or_else(|| {
        RawError::new(
            Code::InvalidArgument,
            "this agent's launch has no settings file",
        )
    })?;
    file.contents(replaced.as_deref()).map_err(launch_error)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_launch_crosses_as_json() {
        let codex = parsed(
            &launch_without_native_tools_json(r#"{"program":"npx","args":["codex-acp"]}"#).unwrap(),
        );
        assert_eq!(codex["settings"], Value::Null);
        assert!(
            codex["args"]
                .as_array()
                .unwrap()
                .contains(&json!("features.shell_tool=false"))
        );
        let agent = r#"{"program":"gemini","args":["--acp"],
            "env":{"GEMINI_CLI_SYSTEM_DEFAULTS_PATH":"/srv/d.json"}}"#;
        let gemini = parsed(&launch_without_native_tools_json(agent).unwrap());
        assert_eq!(
            gemini,
            json!({"args": [], "settings": {"env": "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "replaces": "/srv/d.json"}})
        );
        assert_eq!(
            launch_settings_contents(agent, None).unwrap(),
            r#"{"tools":{"core":[]}}"#
        );
        let merged = launch_settings_contents(agent, Some(br#"{"a":1}"#.to_vec())).unwrap();
        assert_eq!(parsed(&merged), json!({"a": 1, "tools": {"core": []}}));
        let error = launch_settings_contents(agent, Some(b"[]".to_vec())).unwrap_err();
        assert_eq!(error.code_value(), Code::InvalidInput);
        assert!(
            error.message().contains("/srv/d.json"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn unknown_agents_and_bad_json_are_refused() {
        let error =
            launch_without_native_tools_json(r#"{"program":"cursor-agent","args":["acp"]}"#)
                .unwrap_err();
        assert_eq!(error.code_value(), Code::InvalidInput);
        assert!(
            error.message().contains("cursor-agent"),
            "{}",
            error.message()
        );
        let error = launch_settings_contents(r#"{"program":"codex-acp"}"#, None).unwrap_err();
        assert_eq!(error.code_value(), Code::InvalidArgument);
        for bad in [
            r#"{"args":[]}"#,
            r#"{"program":"x","argv":[]}"#,
            r#"{"program":1}"#,
        ] {
            let error = launch_without_native_tools_json(bad).unwrap_err();
            assert_eq!(error.code_value(), Code::InvalidArgument, "{bad}");
        }
    }
}
