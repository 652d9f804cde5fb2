//! Launch facts (§12.2), resolution (§12.1) and the fatal shapes (SUP-12.0), through `prepare`.

use serde_json::json;

use super::*;
use crate::launch::{HarnessKind, SpawnKind};
use base::is_uuid;

fn side(id: &str) -> SideFile {
    SideFile { launch_session_id: Some(id.to_owned()), ..SideFile::default() }
}

#[test]
fn rotation_adopts_a_newer_live_id_with_a_transcript() {
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    fx.live_id(BID, OTHER);
    let entry = json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false, "remoteControl": false});
    let p = fx.prepare_with(&fx.config(), entry.clone(), &side(BID)).unwrap();
    assert_eq!((p.bid.as_str(), p.rotated, p.resuming), (BID, false, true), "no transcript for the newer id");
    fx.transcript(OTHER, &[USER, DONE]);
    let p = fx.prepare_with(&fx.config(), entry.clone(), &side(BID)).unwrap();
    assert_eq!((p.bid.as_str(), p.rotated, p.resuming, p.spawn), (OTHER, true, true, SpawnKind::Resume));
    assert_eq!(argv(&p), words(&fx.bin("claude"), &["--resume", OTHER]));
    assert_eq!(p.env[0], ("AGENT_BOX_SESSION_ID".to_owned(), OTHER.to_owned()));
    let p = fx.prepare(entry).unwrap();
    assert_eq!((p.bid.as_str(), p.rotated, p.spawn), (BID, false, SpawnKind::First), "never launched: no rotation");
}

#[test]
fn rotation_needs_another_valid_id() {
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    fx.live_id(BID, BID);
    let entry = json!({"agent": "claude", "hasRun": true, "boxSessionId": BID});
    assert!(!fx.prepare(entry.clone()).unwrap().rotated);
    fx.live_id(BID, "../../etc/passwd");
    assert!(!fx.prepare(entry).unwrap().rotated);
}

#[test]
fn side_file_id_takes_precedence_over_box_session_id() {
    let fx = Fixture::new();
    let entry = json!({"agent": "tool", "boxSessionId": BID});
    let p = fx.prepare_with(&fx.config(), entry.clone(), &side(OTHER)).unwrap();
    assert_eq!((p.bid.as_str(), p.launched, p.spawn), (OTHER, true, SpawnKind::Resume));
    let p = fx.prepare(entry).unwrap();
    assert_eq!((p.bid.as_str(), p.launched, p.spawn), (BID, false, SpawnKind::First));
}

#[test]
fn a_fresh_id_is_minted_when_no_valid_one_exists() {
    let fx = Fixture::new();
    let entry = json!({"agent": "claude", "boxSessionId": "NOT-A-UUID", "hasRun": true});
    let first = fx.prepare(entry.clone()).unwrap();
    let second = fx.prepare(entry).unwrap();
    assert!(is_uuid(&first.bid) && is_uuid(&second.bid) && first.bid != second.bid);
    assert_eq!((first.launched, first.resuming, first.spawn), (true, false, SpawnKind::Respawn));
    assert_eq!(argv(&first)[4..6], ["--session-id".to_owned(), first.bid.clone()]);
}

#[test]
fn a_claude_transcript_makes_even_a_first_start_resume() {
    let fx = Fixture::new();
    fx.transcript(BID, &[USER, DONE]);
    let p = fx
        .prepare(json!({"agent": "claude", "boxSessionId": BID, "skipPermissions": false,
        "remoteControl": false}))
        .unwrap();
    assert_eq!((p.spawn, p.resuming), (SpawnKind::First, true));
    assert_eq!(argv(&p), words(&fx.bin("claude"), &["--resume", BID]));
}

#[test]
fn working_directory_and_its_fallback() {
    let fx = Fixture::new();
    let work = fx.dir.path().join("work dir");
    fs::create_dir_all(&work).unwrap();
    let file = fx.dir.path().join("plain-file");
    fs::write(&file, b"").unwrap();
    let cwd = |dir: serde_json::Value| {
        let p = fx.prepare(json!({"agent": "tool", "workingDirectory": dir})).unwrap();
        (p.cwd, p.cwd_fallback)
    };
    assert_eq!(cwd(json!(work.to_str().unwrap())), (work.clone(), None));
    for silent in [json!(null), json!(""), json!(7)] {
        assert_eq!(cwd(silent.clone()), (fx.home.clone(), None), "{silent}");
    }
    let missing = fx.dir.path().join("missing").display().to_string();
    let file = file.display().to_string();
    for bad in [missing.as_str(), "relative/dir", file.as_str()] {
        assert_eq!(cwd(json!(bad)), (fx.home.clone(), Some(bad.to_owned())), "{bad}");
    }
    let p = fx.prepare(json!({"agent": "tool"})).unwrap();
    assert_eq!((p.cwd, p.cwd_fallback), (fx.home.clone(), None));
}

#[test]
fn fatal_shapes_come_before_resolution() {
    let fx = Fixture::new();
    let fatal = |entry| match fx.prepare(entry) {
        Err(PrepareError::Fatal(problem)) => problem,
        other => panic!("{other:?}"),
    };
    assert_eq!(fatal(json!({"agent": 1})), "agent is missing or not a string");
    assert_eq!(fatal(json!({"agent": "nope", "extraArgs": "x"})), "extraArgs is not an array of strings");
    assert_eq!(fatal(json!({"agent": "claude", "initialPrompt": "a\u{0}"})), "initialPrompt contains a NUL byte");
    assert_eq!(fatal(json!({"agent": "claude", "extraArgs": ["\u{0}"]})), "extraArgs contains a NUL byte");
    assert_eq!(
        fatal(json!({"agent": "tool", "workingDirectory": "/tmp\u{0}"})),
        "workingDirectory contains a NUL byte"
    );
    assert_eq!(
        fatal(json!({"agent": "claude", "remoteControlName": "\u{0}"})),
        "remoteControlName contains a NUL byte"
    );
    assert_eq!(fatal(json!({"agent": "cl\u{0}aude"})), "agent contains a NUL byte");
}

#[test]
fn not_installed_and_the_nix_profile_fallback() {
    let mut fx = Fixture::new();
    assert_eq!(fx.prepare(json!({"agent": "aider"})), Err(PrepareError::NotInstalled("aider".into())));
    let nix_bin = fx.home.join(".nix-profile/bin/aider");
    executable(&nix_bin, "#!/bin/sh\n");
    let p = fx.prepare(json!({"agent": "aider"})).unwrap();
    assert_eq!(
        (p.harness.bin.clone(), p.harness.kind, p.harness.agent.as_str()),
        (nix_bin, HarnessKind::Generic, "aider")
    );
    executable(&fx.home.join(".nix-profile/bin/a.b"), "#!/bin/sh\n");
    assert_eq!(fx.prepare(json!({"agent": "a.b"})), Err(PrepareError::NotInstalled("a.b".into())), "name charset");
    fs::write(fx.home.join(".nix-profile/bin/plain"), "").unwrap();
    assert_eq!(fx.prepare(json!({"agent": "plain"})), Err(PrepareError::NotInstalled("plain".into())));
    // A configured pair that is not executable falls through to the profile.
    let nix_claude = fx.home.join(".nix-profile/bin/claude");
    executable(&nix_claude, "#!/bin/sh\n");
    fx.set("AGENT_BOX_AGENT_BINS", format!("claude={}/missing claude2=relative", fx.dir.path().display()));
    assert_eq!(fx.prepare(json!({"agent": "claude", "boxSessionId": BID})).unwrap().harness.bin, nix_claude);
    assert_eq!(fx.prepare(json!({"agent": "codex"})), Err(PrepareError::NotInstalled("codex".into())));
}

#[test]
fn post_mortem_shell_choice() {
    let mut fx = Fixture::new();
    let login = fx.dir.path().join("login-shell");
    executable(&login, "#!/bin/sh\n");
    fx.set("SHELL", login.clone());
    let pm = |fx: &Fixture| fx.prepare(json!({"agent": "tool"})).unwrap().post_mortem;
    assert_eq!(pm(&fx), fx.bins.join("shell"), "the shell pair first");
    fx.set("AGENT_BOX_AGENT_BINS", format!("tool={}", fx.bin("tool")));
    assert_eq!(pm(&fx), login, "then $SHELL");
    fx.set("SHELL", fx.dir.path().join("no-such-shell"));
    assert_eq!(pm(&fx), PathBuf::from("/bin/sh"), "else /bin/sh");
    fx.unset("SHELL");
    assert_eq!(pm(&fx), PathBuf::from("/bin/sh"));
}

#[test]
fn spawn_kind_words() {
    assert_eq!(
        [SpawnKind::First, SpawnKind::Respawn, SpawnKind::Resume].map(SpawnKind::as_str),
        ["first", "respawn", "resume"]
    );
}
