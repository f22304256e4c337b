//! What to add to an ACP agent's launch so that its own tools are off
//! (`acp::launch_without_native_tools`).
//!
//! The agent crosses as the JSON text `{"program", "args", "env"}` (`env`: the agent's
//! environment, names to values); the launch comes back as the JSON text
//! `{"args": [...], "file": null | {"name", "contents", "flag", "after": [...]}}`.

use std::collections::HashMap;

use agentwire::acp::{LaunchError, launch_without_native_tools};
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
    file: Option<JsFile<'a>>,
}

#[derive(Serialize)]
struct JsFile<'a> {
    name: &'a str,
    contents: &'a str,
    flag: &'a str,
    after: &'a [String],
}

/// A launch failure: bad input, with the core's message.
fn launch_error(error: LaunchError) -> RawError {
    RawError::new(Code::InvalidInput, error.to_string())
}

/// What to add to the launch of `agent` (the JSON of `{program, args, env}`) so that its
/// own tools are off, as JSON (`{args, file}`).
#[wasm_bindgen(js_name = launchWithoutNativeTools)]
pub fn launch_without_native_tools_json(agent: &str) -> Result<String, RawError> {
    let agent: Agent = from_json(agent, "agent")?;
    let env = |name: &str| agent.env.get(name).cloned();
    let launch =
        launch_without_native_tools(&agent.program, &agent.args, &env).map_err(launch_error)?;
    let js = JsLaunch {
        args: &launch.args,
        file: launch.file.as_ref().map(|file| JsFile {
            name: file.name,
            contents: &file.contents,
            flag: file.flag,
            after: &file.after,
        }),
    };
    Ok(serde_json::to_string(&js).expect("serialising strings cannot fail"))
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
        assert_eq!(codex["file"], Value::Null);
        assert!(
            codex["args"]
                .as_array()
                .unwrap()
                .contains(&json!("features.shell_tool=false"))
        );
        let agent = r#"{"program":"gemini","args":["--acp"],"env":{"HOME":"/home/u"}}"#;
        let gemini = parsed(&launch_without_native_tools_json(agent).unwrap());
        let file = launch_without_native_tools("gemini", &["--acp".to_owned()], &|name| {
            (name == "HOME").then(|| "/home/u".to_owned())
        })
        .unwrap()
        .file
        .unwrap();
        assert_eq!(
            gemini,
            json!({"args": [], "file": {
                "name": "agentwire-native-tools-off.toml",
                "contents": file.contents,
                "flag": "--policy",
                "after": ["--policy", "/home/u/.gemini/policies"],
            }})
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
