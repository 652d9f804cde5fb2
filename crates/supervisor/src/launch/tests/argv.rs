//! Table tests of the harness argv (§12.4) and the pane environment (§12.7), harness by harness.

use serde_json::json;

use super::*;
use crate::launch::{HarnessKind, SpawnKind, remote_control_name};

#[test]
fn claude_first_start_with_prompt() {
    let fx = Fixture::new();
    let p = fx.prepare(json!({"agent": "claude", "boxSessionId": BID, "initialPrompt": "tidy up"})).unwrap();
    let expected = words(
        &fx.bin("claude"),
        &["--dangerously-skip-permissions", "--remote-control", "agent-main@box", "--session-id", BID, "--", "tidy up"],
    );
    assert_eq!(argv(&p), expected);
    assert_eq!(
        (p.harness.kind, p.spawn, p.launched, p.resuming),
        (HarnessKind::Claude, SpawnKind::First, false, false)
    );
    assert_eq!(p.bid, BID);
    assert_eq!(p.env, [("AGENT_BOX_SESSION_ID".to_owned(), BID.to_owned())]);
}

#[test]
fn claude_resume_with_transcript_has_no_prompt() {
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    let entry = json!({"agent": "claude", "boxSessionId": BID, "hasRun": true, "initialPrompt": "stale",
        "skipPermissions": false, "remoteControl": false});
    let p = fx.prepare(entry).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("claude"), &["--resume", BID]));
    assert_eq!((p.spawn, p.resuming, p.restart_notice), (SpawnKind::Resume, true, false));
}

#[test]
fn claude_variadic_flag_last_in_extra_args_is_followed_by_the_separator() {
    let fx = Fixture::new();
    let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false,
        "initialPrompt": "-p looks like a flag", "extraArgs": ["--model", "opus[1m]", "--allowedTools", "Bash", "Edit"]});
    let expected = words(
        &fx.bin("claude"),
        &["--session-id", BID, "--model", "opus[1m]", "--allowedTools", "Bash", "Edit", "--", "-p looks like a flag"],
    );
    assert_eq!(argv(&fx.prepare(entry).unwrap()), expected);
}

#[test]
fn claude_settings_webhook_channel_and_env() {
    let mut fx = Fixture::new();
    fx.set("AGENT_BOX_CLAUDE_SETTINGS", "/etc/claude/settings.json").set("AGENT_BOX_WEBHOOK_REPO", "/srv/hooks");
    let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false,
        "profile": "work-1"});
    let p = fx.prepare(entry).unwrap();
    let expected = words(
        &fx.bin("claude"),
        &[
            "--settings",
            "/etc/claude/settings.json",
            "--channels",
            "plugin:local-webhook@local-channels",
            "--session-id",
            BID,
        ],
    );
    assert_eq!(argv(&p), expected);
    let state_dir = format!("{}/.local/state/local-webhook", fx.home_str());
    let env: Vec<(&str, &str)> = p.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        env,
        [
            ("AGENT_BOX_SESSION_ID", BID),
            ("LOCAL_WEBHOOK_SESSION", "agent-main"),
            ("LOCAL_WEBHOOK_STATE_DIR", state_dir.as_str()),
            ("LOCAL_WEBHOOK_PORT", "0"),
            ("AGENT_BOX_PROFILE", "work-1"),
        ]
    );
}

#[test]
fn webhook_off_means_no_channel_and_no_webhook_env() {
    let fx = Fixture::new();
    let p = fx.prepare(json!({"agent": "claude", "boxSessionId": BID, "profile": "bad/profile"})).unwrap();
    assert!(!argv(&p).iter().any(|w| w == "--channels"));
    assert_eq!(p.env, [("AGENT_BOX_SESSION_ID".to_owned(), BID.to_owned())], "an unusable profile is not passed");
}

#[test]
fn remote_control_name_explicit_or_derived_with_and_without_host() {
    let fx = Fixture::new();
    let mut config = fx.config();
    let explicit = object(json!({"agent": "claude", "remoteControlName": "my rc"}));
    let derived = object(json!({"agent": "claude", "remoteControlName": ""}));
    assert_eq!(remote_control_name(&config, &name("main"), Entry::of(&explicit)), "my rc");
    assert_eq!(remote_control_name(&config, &name("main"), Entry::of(&derived)), "agent-main@box");
    config.host_label = None;
    assert_eq!(remote_control_name(&config, &name("main"), Entry::of(&derived)), "agent-main");
    let p = fx.prepare_with(&config, json!({"agent": "claude", "boxSessionId": BID}), &SideFile::default()).unwrap();
    assert_eq!(argv(&p)[2..4], ["--remote-control", "agent-main"]);
    let p = fx.prepare(json!({"agent": "claude", "boxSessionId": BID, "remoteControlName": "phone"})).unwrap();
    assert_eq!(argv(&p)[2..4], ["--remote-control", "phone"]);
}

#[test]
fn codex_first_start_is_stamped() {
    let fx = Fixture::new();
    let entry = json!({"agent": "codex", "boxSessionId": BID, "remoteControl": false, "initialPrompt": "fix it",
        "extraArgs": ["--model", "o3"]});
    let p = fx.prepare(entry).unwrap();
    let stamped = format!("[agent-box session {BID}] fix it");
    let expected =
        words(&fx.bin("codex"), &["--dangerously-bypass-approvals-and-sandbox", "--model", "o3", "--", &stamped]);
    assert_eq!(argv(&p), expected);
    assert_eq!((p.spawn, p.codex_remote_control_ignored), (SpawnKind::First, false));
    let p = fx.prepare(json!({"agent": "codex", "boxSessionId": BID, "remoteControl": false})).unwrap();
    assert_eq!(
        argv(&p),
        words(&fx.bin("codex"), &["--dangerously-bypass-approvals-and-sandbox"]),
        "no prompt, no stamp"
    );
}

#[test]
fn codex_autonomy_flags() {
    let mut fx = Fixture::new();
    let entry = json!({"agent": "codex", "boxSessionId": BID, "skipPermissions": false, "extraArgs": ["-x"]});
    assert_eq!(argv(&fx.prepare(entry.clone()).unwrap()), words(&fx.bin("codex"), &["-x"]));
    fx.set("AGENT_BOX_CODEX_FULL_ACCESS", "1");
    let expected =
        words(&fx.bin("codex"), &["-c", "approval_policy=on-request", "-c", "sandbox_mode=workspace-write", "-x"]);
    assert_eq!(argv(&fx.prepare(entry).unwrap()), expected);
}

#[test]
fn codex_resume_uses_the_stamped_rollout() {
    let fx = Fixture::new();
    fx.rollout(OTHER, &format!("{{\"type\":\"session_meta\"}}\n{{\"text\":\"[agent-box session {BID}] go\"}}\n"), 10);
    fx.rollout("22222222-2222-4333-8444-555555555555", "{\"text\":\"[agent-box session other] go\"}\n", 1);
    let entry = json!({"agent": "codex", "boxSessionId": BID, "hasRun": true, "extraArgs": ["--model", "o3"]});
    let p = fx.prepare(entry.clone()).unwrap();
    let expected = words(
        &fx.bin("codex"),
        &["resume", "--dangerously-bypass-approvals-and-sandbox", "--model", "o3", "--", OTHER],
    );
    assert_eq!(argv(&p), expected);
    assert_eq!((p.spawn, p.resuming, p.codex_target.as_deref()), (SpawnKind::Resume, true, Some(OTHER)));
    assert!(p.codex_remote_control_ignored, "remoteControl absent reads as on");
    let mut with_prompt = object(entry);
    with_prompt.insert("resumePrompt".into(), "carry on".into());
    let p = fx.prepare(serde_json::Value::Object(with_prompt)).unwrap();
    assert_eq!(argv(&p)[5..], ["--", OTHER, "carry on"]);
}

#[test]
fn codex_without_a_match_starts_fresh() {
    let fx = Fixture::new();
    fx.rollout(OTHER, "{\"text\":\"no stamp here\"}\n", 1);
    let entry = json!({"agent": "codex", "boxSessionId": BID, "hasRun": true, "initialPrompt": null,
        "resumePrompt": "ignored when fresh", "remoteControl": false});
    let p = fx.prepare(entry).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("codex"), &["--dangerously-bypass-approvals-and-sandbox"]));
    assert_eq!((p.spawn, p.resuming, p.codex_target.as_deref()), (SpawnKind::Respawn, false, None));
    assert!(!argv(&p).iter().any(|w| w == "--last" || w == "resume"));
}

#[test]
fn shell_takes_extra_args_and_never_a_prompt() {
    let mut fx = Fixture::new();
    fx.set("AGENT_BOX_RESTART_NOTICE", "always");
    let entry = json!({"agent": "shell", "extraArgs": ["-l"], "initialPrompt": "no", "resumePrompt": "no"});
    let p = fx.prepare(entry).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("shell"), &["-l"]));
    assert_eq!((p.spawn, p.prompt.as_str()), (SpawnKind::First, ""));
    let p = fx.prepare(json!({"agent": "shell", "hasRun": true, "resumePrompt": "no"})).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("shell"), &[]));
    assert_eq!(p.spawn, SpawnKind::Resume);
}

#[test]
fn generic_with_and_without_prompt() {
    let fx = Fixture::new();
    let p = fx.prepare(json!({"agent": "tool", "extraArgs": ["--x", "y z"], "initialPrompt": "go"})).unwrap();
    assert_eq!((argv(&p), p.harness.kind), (words(&fx.bin("tool"), &["--x", "y z", "go"]), HarnessKind::Generic));
    let p = fx.prepare(json!({"agent": "tool", "extraArgs": ["--x"], "initialPrompt": ""})).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("tool"), &["--x"]));
    let entry = json!({"agent": "tool", "hasRun": true, "initialPrompt": "old"});
    assert_eq!(argv(&fx.prepare(entry).unwrap()), words(&fx.bin("tool"), &[]), "resuming without resumePrompt");
    let entry = json!({"agent": "tool", "hasRun": true, "resumePrompt": "again"});
    assert_eq!(argv(&fx.prepare(entry).unwrap()), words(&fx.bin("tool"), &["again"]));
}

// Issue 25 (docs/reference.md, "Extra arguments for claude"): extraArgs that end in an option of claude's that takes a
// value would take the `--` and the prompt after it, whoever wrote them (the settings daemon, a hand edit, an older
// `add`): the start is refused (L14) instead of crashing claude. With its value the prompt follows the separator.
#[test]
fn claude_extra_args_ending_in_a_value_option_are_refused_with_a_value_they_pass() {
    let fx = Fixture::new();
    for option in base::claude_args::VALUE_OPTIONS {
        let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false,
            "initialPrompt": "tidy up", "extraArgs": ["--model", "sonnet", option]});
        let problem = format!("extraArgs ends in '{option}', which takes a value: claude would take the prompt for it");
        assert_eq!(fx.prepare(entry), Err(crate::launch::PrepareError::Fatal(problem)), "{option}");
        let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false,
            "initialPrompt": "tidy up", "extraArgs": [option, "v"]});
        let expected = words(&fx.bin("claude"), &["--session-id", BID, option, "v", "--", "tidy up"]);
        assert_eq!(argv(&fx.prepare(entry).unwrap()), expected, "{option}");
    }
    let tool = fx.prepare(json!({"agent": "tool", "extraArgs": ["--add-dir"], "initialPrompt": "go"})).unwrap();
    assert_eq!(argv(&tool), words(&fx.bin("tool"), &["--add-dir", "go"]), "not claude: not its options");
}
