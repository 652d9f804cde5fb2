//! Hostile and oversized input to agent-box-webhook-spawn (80 H02, H10; 60 §9): hostile event keys stay inside
//! the sandbox, and huge META, CONFIG, stdin and registries give the bounded results of 60 §9.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Seek;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::{OutputAssertExt, predicate, stderr, webhook_spawn};
use serde_json::{Value, json};

fn world() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
    sb
}

/// Every path below `root` (not following links), sorted.
fn tree(root: &Path) -> Vec<PathBuf> {
    agent_box_tests::tree::below(root)
}

fn only_hook(sb: &Sandbox) -> String {
    let doc = sb.read_registry();
    let names: Vec<&str> = doc.names().filter(|n| n.starts_with("hook-")).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].to_owned()
}

/// `hook-<middle>-<4 hex>`.
fn has_shape(name: &str, middle: &str) -> bool {
    name.strip_prefix("hook-")
        .and_then(|rest| rest.strip_prefix(middle))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|hex| hex.len() == 4 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

// H02
#[test]
fn hostile_keys_give_sanitised_names_and_stay_inside_the_sandbox() {
    let marker_key = "$(touch M)".to_owned();
    let long_key = format!("acme/{}", "k".repeat(10 * 1024));
    let invalid: &[u8] = b"acme/\xff\xfe/x";
    let cases: Vec<(OsString, Option<&str>)> = vec![
        ("../../x".into(), Some("------x")),
        (marker_key.clone().into(), Some("--touch-M-")),
        (long_key.clone().into(), None),
        (OsStr::from_bytes(invalid).to_owned(), Some("acme----x")),
    ];
    for (key, middle) in cases {
        let sb = world();
        let before = tree(sb.root());
        let vars: Vec<(&str, &OsStr)> = vec![
            ("LOCAL_WEBHOOK_SPAWN_KEY", key.as_os_str()),
            ("LOCAL_WEBHOOK_SPAWN_TOPIC", OsStr::new("github:acme/*")),
            ("LOCAL_WEBHOOK_SPAWN_META", OsStr::new(r#"{"number":"7"}"#)),
        ];
        let out = webhook_spawn(&sb, &vars, b"[github] issue #7 opened\n").code(0);
        let name = only_hook(&sb);
        assert!(base::SessionName::parse_new(&name).is_ok(), "{name}");
        let entry = sb.entry(&name).unwrap();
        match middle {
            Some(middle) => {
                assert!(has_shape(&name, middle), "{key:?} → {name}");
                let lease = sb.lease(&name).expect("a claimable key gets a lease");
                let raw = String::from_utf8_lossy(key.as_bytes()).into_owned();
                assert_eq!(lease["topic"], json!(format!("github:{raw}")), "{key:?}");
                assert_eq!(entry["hook"]["repository"], json!(raw), "the raw key only inside JSON values");
            }
            None => {
                // Over 1024 bytes: no claim, lease or log line (W15); over 140 sanitised: `hook-<8 hex>` (W1, W2).
                assert!(stderr(&out).contains("the event key or source cannot be claimed"), "{}", stderr(&out));
                out.stderr(predicate::str::contains(format!("this session is called '{name}' instead")));
                let hex = name.strip_prefix("hook-").unwrap();
                assert!(hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
                assert!(sb.lease(&name).is_none() && entry.get("hook").is_none() && sb.hook_log().is_empty());
            }
        }
        let created: Vec<PathBuf> = tree(sb.root()).into_iter().filter(|p| !before.contains(p)).collect();
        assert!(!created.is_empty());
        for path in &created {
            assert!(path.starts_with(sb.home()), "{key:?}: {} was created outside HOME", path.display());
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(file != "M" && file != "x", "{key:?}: a marker or a traversal target: {}", path.display());
        }
        assert!(!sb.home().join("M").exists() && !sb.root().join("x").exists());
    }
}

// H10
#[test]
fn huge_meta_config_stdin_and_registry_give_a_bounded_spawn() {
    let sb = world();
    let mut sessions = serde_json::Map::new();
    for i in 0..10_000 {
        sessions.insert(format!("e{i:05}"), json!({"agent": "tool", "stopped": true}));
    }
    sb.write_registry(&serde_json::to_string(&json!({"version": 1, "sessions": sessions})).unwrap());
    let meta = format!("{{\"number\":\"7\",\"pad\":\"{}\"}}", "m".repeat(100 * 1024));
    let config = format!("{{\"profile\":\"p\",\"pad\":\"{}\"}}", "c".repeat(100 * 1024));
    // 20 MiB of 64-byte lines, so the 16 MiB the spawner keeps (60 §3.5) end exactly at a line end.
    let line = |i: usize| format!("{:x<63}\n", format!("[github] event {i:08} on acme/widgets: "));
    let stdin: Vec<u8> = (0..20 * 1024 * 1024 / 64).flat_map(|i| line(i).into_bytes()).collect();
    let newest = line(16 * 1024 * 1024 / 64 - 1);
    let vars: Vec<(&str, &OsStr)> = vec![
        ("LOCAL_WEBHOOK_SPAWN_KEY", OsStr::new("acme/widgets")),
        ("LOCAL_WEBHOOK_SPAWN_META", OsStr::new(&meta)),
        ("LOCAL_WEBHOOK_SPAWN_CONFIG", OsStr::new(&config)),
    ];
    // Stdin is a file here, so what the spawner consumed shows as the shared file offset afterwards.
    let batch = sb.root().join("batch");
    fs::write(&batch, &stdin).unwrap();
    let mut input = fs::File::open(&batch).unwrap();
    let mut cmd = sb.cmd("agent-box-webhook-spawn");
    cmd.envs(vars).stdin(input.try_clone().unwrap());
    let out = cmd.assert().code(0);
    let consumed = input.stream_position().unwrap();
    assert_eq!(consumed, stdin.len() as u64, "a pipe writer never sees EPIPE: stdin past 16 MiB is read and discarded");
    let text = stderr(&out);
    assert!(text.contains("LOCAL_WEBHOOK_SPAWN_META is not a JSON object; this session claims nothing"), "{text}");
    assert!(text.contains("LOCAL_WEBHOOK_SPAWN_CONFIG is not a JSON object; ignoring it"), "{text}");
    let name = only_hook(&sb);
    let prompt = sb.entry(&name).unwrap()["initialPrompt"].as_str().unwrap().to_owned();
    let quoted = prompt.len() + 3 * prompt.matches('\'').count();
    assert!(quoted <= 96 * 1024, "prompt of {quoted} quoted bytes");
    assert!(prompt.contains("earlier line(s) of this batch were left out to keep the prompt small"));
    assert!(prompt.ends_with(newest.trim_end()), "the newest kept line comes last: {}", &prompt[prompt.len() - 200..]);
    let filter: Value = serde_json::from_slice(
        &fs::read(sb.home().join(format!(".local/state/local-webhook/filter.agent-{name}.json"))).unwrap(),
    )
    .unwrap();
    assert!(filter["topics"][0].get("include").is_none(), "an unusable META claims nothing");
    assert_eq!(sb.read_registry().names().count(), 10_001);
    assert_eq!(sb.lease(&name).unwrap()["object"], Value::Null);
}
