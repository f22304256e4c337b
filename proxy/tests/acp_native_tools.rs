//! `--acp-native-tools off`: the warm agent started with its own tools off, as each agent
//! takes it — codex-acp through `-c` overrides, `gemini --acp` through a policy file of
//! the proxy's own, removed at exit — and a clear refusal to start for an agent agentwire
//! cannot reach.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::acp::{acp_events, two_prompts};
use support::processes::run_bounded;
use support::{Kind, Proxy, Scratch, both, example, plain_body};

both!(
    acp_native_tools_off_reaches_codex_as_configuration_overrides,
    acp_native_tools_off_gives_gemini_a_policy_file_removed_at_exit,
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

fn acp_native_tools_off_gives_gemini_a_policy_file_removed_at_exit(kind: Kind) {
    let scratch = Scratch::new("acp-native-gemini");
    let seen = scratch.path("seen.toml");
    // The stand-in keeps a copy of the policy file its command line names first.
    let before = format!(
        "for a; do case $prev in --policy) cp \"$a\" '{}'; break;; esac; prev=$a; done",
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
    let home = scratch.path("home");
    let env = [("HOME", home.to_str().unwrap())];
    let mut proxy = Proxy::launch(kind, &args, &scratch, &env, None);
    let reply = proxy.chat(&plain_body("Ask alpha"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let starts = acp_events(&scratch, "start");
    assert_eq!(starts.len(), 1);
    let argv: Vec<String> = serde_json::from_value(starts[0]["argv"].clone()).unwrap();
    let policies: Vec<&str> = argv
        .windows(2)
        .filter(|pair| pair[0] == "--policy")
        .map(|pair| pair[1].as_str())
        .collect();
    // Ours, then the user's own policies, which a `--policy` would otherwise replace.
    assert_eq!(policies.len(), 2, "{argv:?}");
    assert_eq!(
        PathBuf::from(policies[1]),
        home.join(".gemini").join("policies")
    );
    let file = PathBuf::from(policies[0]);
    let policy = std::fs::read_to_string(&seen).unwrap();
    assert!(
        policy.contains("toolName = \"*\"\ndecision = \"deny\""),
        "{policy}"
    );
    assert!(
        policy.contains("mcpName = \"*\"\ndecision = \"ask_user\""),
        "{policy}"
    );
    let dir = file.parent().unwrap().to_owned();
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("agentwire-acp-settings-"),
        "{dir:?}"
    );
    assert!(file.is_file());
    // Nobody else may read or change it.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
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
        let mut args = vec![
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--agent-bin".to_owned(),
        ];
        args.push(agent.display().to_string());
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        let output = run_bounded(kind.binary(), &args, Duration::from_secs(10));
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{stderr}");
        assert!(
            acp_events(&scratch, "start").is_empty(),
            "no agent was started"
        );
    }
}
