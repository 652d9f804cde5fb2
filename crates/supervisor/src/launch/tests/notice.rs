//! Prompt rules 1–5 and the restart-notice matrix of §12.3.

use serde_json::{Value, json};

use super::*;
use crate::launch::restart_notice;

/// A launched claude entry resuming `BID`.
fn resumed_claude() -> Value {
    json!({"agent": "claude", "boxSessionId": BID, "hasRun": true, "skipPermissions": false, "remoteControl": false,
        "initialPrompt": "kickoff"})
}

/// The prompt claude received: what follows `--`, if anything.
fn claude_prompt(p: &Prepared) -> Option<String> {
    let argv = argv(p);
    let at = argv.iter().position(|w| w == "--")?;
    assert_eq!(at + 2, argv.len(), "the prompt is the last word");
    Some(argv[at + 1].clone())
}

#[test]
fn rule_1_not_resuming_takes_the_initial_prompt() {
    let fx = Fixture::new();
    let p = fx.prepare(resumed_claude()).unwrap();
    assert_eq!((p.resuming, claude_prompt(&p).as_deref()), (false, Some("kickoff")), "launched, no transcript");
    let p = fx.prepare(json!({"agent": "claude", "boxSessionId": BID, "initialPrompt": null})).unwrap();
    assert_eq!(claude_prompt(&p), None, "null is empty");
}

#[test]
fn rule_2_resuming_with_a_resume_prompt_takes_it() {
    let mut fx = Fixture::new();
    fx.set("AGENT_BOX_RESTART_NOTICE", "always");
    fx.transcript(BID, &[USER, DONE]);
    let mut entry = object(resumed_claude());
    entry.insert("resumePrompt".into(), "continue please".into());
    let p = fx.prepare(Value::Object(entry)).unwrap();
    assert_eq!((claude_prompt(&p).as_deref(), p.restart_notice), (Some("continue please"), false));
}

#[test]
fn rule_3_a_transcript_without_a_real_reply_gets_the_initial_prompt_and_no_notice() {
    let mut fx = Fixture::new();
    fx.set("AGENT_BOX_RESTART_NOTICE", "always");
    fx.transcript(BID, &[USER, SYNTH]);
    let p = fx.prepare(resumed_claude()).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("claude"), &["--resume", BID, "--", "kickoff"]));
    assert!(!p.restart_notice);
    let mut entry = object(resumed_claude());
    entry.insert("initialPrompt".into(), Value::Null);
    let p = fx.prepare(Value::Object(entry)).unwrap();
    assert_eq!(argv(&p), words(&fx.bin("claude"), &["--resume", BID]), "normally already null");
}

#[test]
fn rule_4_and_5_restart_notice_matrix() {
    let notice = restart_notice(BID, false);
    // lease / filter with a topic / open claude turn / none ⇒ notice, notice, notice, no prompt.
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    fx.lease("main", "{\"gen\":\"x\"}");
    assert_eq!(claude_prompt(&fx.prepare(resumed_claude()).unwrap()), Some(notice.clone()), "lease");

    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    fx.filter("main", r#"{"topics":["github:o/r#1"],"ttl":1}"#);
    assert_eq!(claude_prompt(&fx.prepare(resumed_claude()).unwrap()), Some(notice.clone()), "filter");

    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE, USER, TOOL]);
    let p = fx.prepare(resumed_claude()).unwrap();
    assert_eq!((claude_prompt(&p), p.restart_notice), (Some(notice.clone()), true), "open turn");

    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    let p = fx.prepare(resumed_claude()).unwrap();
    assert_eq!((claude_prompt(&p), p.restart_notice, p.prompt.as_str()), (None, false, ""), "none");
}

#[test]
fn weak_signals_do_not_ask_for_the_notice() {
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    fx.lease("main", "");
    fx.lease("other", "{}");
    for filter in [
        r#"{"enabled":false,"topics":["a"]}"#,
        r#"{"enabled":true,"topics":[]}"#,
        r#"{"topics":"a"}"#,
        r#"{"topics":["a"]"#,
        r#"["a"]"#,
    ] {
        fx.filter("main", filter);
        assert_eq!(claude_prompt(&fx.prepare(resumed_claude()).unwrap()), None, "{filter}");
    }
    fx.filter("main", r#"{"enabled":"false","topics":["a"]}"#);
    assert!(fx.prepare(resumed_claude()).unwrap().restart_notice, "only JSON false disables a filter");
}

#[test]
fn never_and_always_override_the_signals() {
    let mut fx = Fixture::new();
    fx.transcript(BID, &[USER, TOOL]);
    fx.lease("main", "{}");
    for word in ["never", "0", "false"] {
        fx.set("AGENT_BOX_RESTART_NOTICE", word);
        assert_eq!(claude_prompt(&fx.prepare(resumed_claude()).unwrap()), None, "{word}");
    }
    let mut fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    for word in ["always", "1", "true"] {
        fx.set("AGENT_BOX_RESTART_NOTICE", word);
        assert_eq!(claude_prompt(&fx.prepare(resumed_claude()).unwrap()), Some(restart_notice(BID, false)), "{word}");
    }
}

#[test]
fn codex_with_a_target_gets_the_notice_and_generic_never_does() {
    let fx = Fixture::new();
    fx.rollout(OTHER, &format!("{{\"text\":\"[agent-box session {BID}] go\"}}\n"), 5);
    fx.lease("main", "{}");
    let p =
        fx.prepare(json!({"agent": "codex", "boxSessionId": BID, "hasRun": true, "skipPermissions": false})).unwrap();
    let notice = restart_notice(BID, false);
    assert_eq!(argv(&p), words(&fx.bin("codex"), &["resume", "--", OTHER, &notice]));
    let p = fx.prepare(json!({"agent": "tool", "boxSessionId": BID, "hasRun": true})).unwrap();
    assert_eq!((argv(&p), p.restart_notice), (words(&fx.bin("tool"), &[]), false));
}

#[test]
fn the_notice_of_a_rotated_launch_names_the_new_id() {
    let mut fx = Fixture::new();
    fx.set("AGENT_BOX_RESTART_NOTICE", "always");
    fx.transcript(BID, &[USER, DONE]);
    fx.transcript(OTHER, &[USER, DONE]);
    fx.live_id(BID, OTHER);
    let p = fx.prepare(resumed_claude()).unwrap();
    assert_eq!(claude_prompt(&p), Some(restart_notice(OTHER, false)));
}
