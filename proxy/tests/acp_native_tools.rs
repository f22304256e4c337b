//! `--acp-native-tools off`: the warm agent started with its own tools off, as each agent
//! takes it — codex-acp through `-c` overrides, `gemini --acp` through a system-defaults
//! settings file of the proxy's own, merged over the one it stands for and removed at
//! exit — and a clear refusal to start for an agent agentwire cannot reach.

mod support;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::acp::{acp_events, two_prompts};
use support::{Kind, Proxy, Scratch, both, example, plain_body, wait_until};

both!(
    acp_native_tools_off_reaches_codex_as_configuration_overrides,
    acp_native_tools_off_gives_gemini_a_settings_file_removed_at_exit,
    acp_native_tools_off_is_refused_for_an_agent_it_cannot_reach,
);

/// The stand-in agent behind a script named `name` (the name the proxy recognises it by),
/// which first runs `before`.
fn agent_named(scratch: &Scratch, name: &str, before: &str) -> PathBuf {
    let script = format!(
        "#!/bin/sh\n{before}\nexec '{}' --recording '{}' \"$@\"\n",
        example("acp_agent").display(),
        two_prompts(),
    );
    scratch.script(name, &script)
}

fn acp_native_tools_off_reaches_codex_as_configuration_overrides(kind: Kind) {
    for (setting, overridden) in [("off", true), ("keep", false)] {
        let scratch = Scratch::new("acp-native-codex");
        let agent = agent_named(&scratch, "codex-acp", "");
        let flags = ["--agent-protocol", "acp", "--acp-native-tools", setting];
        let mut proxy = Proxy::start(kind, &agent, &scratch, &flags);
        let reply = proxy.chat(&plain_body("Ask alpha"));
        assert_eq!(reply.status, 200, "{}", reply.text());
        let starts = acp_events(&scratch, "start");
        assert_eq!(starts.len(), 1);
        let argv: Vec<&str> = starts[0]["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let overrides: Vec<&str> = argv
            .windows(2)
            .filter(|pair| pair[0] == "-c")
            .map(|pair| pair[1])
            .collect();
        if overridden {
            for wanted in [
                "features.shell_tool=false",
                "features.unified_exec=false",
                "web_search=\"disabled\"",
            ] {
                assert!(overrides.contains(&wanted), "{wanted} in {argv:?}");
            }
        } else {
            assert!(overrides.is_empty(), "{argv:?}");
        }
        assert!(proxy.stop().success());
    }
}

fn acp_native_tools_off_gives_gemini_a_settings_file_removed_at_exit(kind: Kind) {
    let scratch = Scratch::new("acp-native-gemini");
    // The system defaults the user has: kept, with the tools turned off over them.
    let defaults = scratch.path("system-defaults.json");
    std::fs::write(&defaults, r#"{"ui":{"theme":"x"},"tools":{"core":["ls"]}}"#).unwrap();
    let seen_path = scratch.path("seen.path");
    let seen = scratch.path("seen.json");
    let before = format!(
        "printf '%s' \"$GEMINI_CLI_SYSTEM_DEFAULTS_PATH\" > '{}'\ncat \"$GEMINI_CLI_SYSTEM_DEFAULTS_PATH\" > '{}'",
        seen_path.display(),
        seen.display()
    );
    let agent = agent_named(&scratch, "gemini", &before);
    let mut args = vec!["--agent-bin".to_owned(), agent.display().to_string()];
    args.extend(
        [
            "--agent-protocol",
            "acp",
            "--agent-arg=--acp",
            "--acp-native-tools",
            "off",
        ]
        .map(str::to_owned),
    );
    let env = [(
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
        defaults.to_str().unwrap(),
    )];
    let mut proxy = Proxy::launch(kind, &args, &scratch, &env, None);
    let reply = proxy.chat(&plain_body("Ask alpha"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let given: Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    assert_eq!(given, json!({"ui": {"theme": "x"}, "tools": {"core": []}}));
    let file = PathBuf::from(std::fs::read_to_string(&seen_path).unwrap());
    assert_ne!(file, defaults, "a file of the proxy's own");
    assert!(file.is_file());
    let dir = file.parent().unwrap().to_owned();
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("agentwire-acp-settings-"),
        "{dir:?}"
    );
    // Nobody else may read or change it.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    assert_eq!(
        std::fs::read_to_string(&defaults).unwrap(),
        r#"{"ui":{"theme":"x"},"tools":{"core":["ls"]}}"#,
        "the user's file untouched"
    );
    assert!(proxy.stop().success());
    assert!(!dir.exists(), "{dir:?} removed at exit");
}

fn acp_native_tools_off_is_refused_for_an_agent_it_cannot_reach(kind: Kind) {
    let scratch = Scratch::new("acp-native-refused");
    let agent = agent_named(&scratch, "acp.sh", "");
    let cases: [(&[&str], &str); 2] = [
        (
            &["--agent-protocol", "acp", "--acp-native-tools", "off"],
            "--acp-native-tools off: cannot turn off the own tools of",
        ),
        (
            &["--acp-native-tools", "off"],
            "--acp-native-tools is only for --agent-protocol acp",
        ),
    ];
    for (flags, said) in cases {
        let mut child = Command::new(kind.binary())
            .args(["--listen", "127.0.0.1:0", "--agent-bin"])
            .arg(&agent)
            .args(flags)
            .env_remove("AGENTWIRE_API_KEY")
            .env("AGENTWIRE_REPLAY_LOG", scratch.log())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut status = None;
        assert!(
            wait_until(Duration::from_secs(10), || {
                status = child.try_wait().unwrap();
                status.is_some()
            }),
            "the proxy refuses at once"
        );
        assert!(!status.unwrap().success());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(stderr.contains(said), "{stderr}");
        assert!(
            acp_events(&scratch, "start").is_empty(),
            "no agent was started"
        );
    }
}
