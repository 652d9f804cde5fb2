//! The env store end to end (issue 20 item 3): values written by `agent-box-session env set` reach fake agents
//! started by the real supervisor byte for byte and are never evaluated; while the panes start, a scan of every
//! `/proc/*/cmdline` finds no value; none is in the tmux server's global environment or in any file but the
//! store; a changed key reaches the next respawn without any tmux restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use agent_box_tests::fixtures::{registry_with, tool, with_stdin};
use agent_box_tests::{Sandbox, wait_until};
use serde_json::json;
use tmux::TmuxApi;

/// What a background scan of `/proc/*/cmdline` saw: full passes, command lines read, and lines holding a value.
struct Scan {
    stop: Arc<AtomicBool>,
    passes: Arc<AtomicUsize>,
    lines: Arc<AtomicUsize>,
    hits: Arc<std::sync::Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Scan {
    fn start(needles: Vec<Vec<u8>>) -> Self {
        let (stop, passes, lines): (Arc<AtomicBool>, Arc<AtomicUsize>, Arc<AtomicUsize>) = Default::default();
        let hits = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (s, p, l, h) = (Arc::clone(&stop), Arc::clone(&passes), Arc::clone(&lines), Arc::clone(&hits));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for entry in fs::read_dir("/proc").unwrap().flatten() {
                    let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else { continue };
                    l.fetch_add(1, Ordering::Relaxed);
                    if needles.iter().any(|n| cmdline.windows(n.len()).any(|w| w == n.as_slice())) {
                        h.lock().unwrap().push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
                    }
                }
                p.fetch_add(1, Ordering::Relaxed);
            }
        });
        Self { stop, passes, lines, hits, thread: Some(thread) }
    }

    /// Stops the scan: (passes, command lines read, hits).
    fn finish(mut self) -> (usize, usize, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        let hits = self.hits.lock().unwrap().clone();
        (self.passes.load(Ordering::Relaxed), self.lines.load(Ordering::Relaxed), hits)
    }
}

fn store(sb: &Sandbox) -> PathBuf {
    sb.home().join(".config/agent-box/env")
}

fn env_set(sb: &Sandbox, key: &str, value: &[u8]) {
    let mut cmd = sb.cmd("agent-box-session");
    cmd.args(["env", "set", key]);
    with_stdin(cmd, value.to_vec()).code(0);
}

/// The raw environment of start `k` of fake agent `name`, byte for byte.
fn agent_env(sb: &Sandbox, name: &str, k: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let bytes = fs::read(sb.root().join(format!("agents/{name}.{k}.env"))).unwrap();
    let pair = |kv: &[u8]| kv.iter().position(|&b| b == b'=').map(|eq| (kv[..eq].to_vec(), kv[eq + 1..].to_vec()));
    bytes.split(|&b| b == 0).filter_map(pair).collect()
}

/// Every file below `dir` but `skip` (and what is under a skipped directory), whose bytes hold one of `needles`.
fn files_holding(dir: &Path, skip: &[PathBuf], needles: &[Vec<u8>]) -> Vec<PathBuf> {
    let holds = |bytes: &[u8]| needles.iter().any(|n| bytes.windows(n.len()).any(|w| w == n.as_slice()));
    agent_box_tests::tree::below(dir)
        .into_iter()
        .filter(|path| !skip.iter().any(|s| path.starts_with(s)))
        .filter(|path| fs::symlink_metadata(path).is_ok_and(|m| m.is_file()))
        .filter(|path| holds(&fs::read(path).unwrap_or_default()))
        .collect()
}

fn tmux_global_env(sb: &Sandbox) -> Vec<u8> {
    let bin = sb.env_var("AGENT_BOX_TMUX_BIN").map_or_else(|| "tmux".into(), PathBuf::from);
    let out = Command::new(bin)
        .args(["-L", sb.socket(), "-f", "/dev/null", "show-environment", "-g"])
        .env("TMUX_TMPDIR", sb.tmux_dir())
        .output()
        .unwrap();
    out.stdout
}

#[test]
fn store_values_reach_every_pane_byte_for_byte_and_never_an_argv_the_server_or_a_file() {
    let sb = Sandbox::new();
    let pwned = sb.root().join("pwned");
    let hostile = format!("zq1secret a b=c \"d\" 'e' $(touch {p}) `touch {p}` \\", p = pwned.display()).into_bytes();
    let values: Vec<(&str, Vec<u8>)> = vec![
        ("HOSTILE", hostile),
        ("PADDED", b"  zq2secret padded  ".to_vec()),
        ("QUOTED", b"\"zq3secret in quotes\"".to_vec()),
        ("TRAILING", b"zq4secret\\".to_vec()),
    ];
    for (key, value) in &values {
        env_set(&sb, key, value);
    }
    // A hand edit the pane's own variable must win over.
    let mut text = fs::read(store(&sb)).unwrap();
    text.extend_from_slice(b"AGENT_BOX_SESSION_ID=zq5secret-evil\n");
    fs::write(store(&sb), text).unwrap();
    // Markers long enough never to occur by chance in another process's argv (a linker's list of hashed object
    // files holds every three-letter string sooner or later).
    let needles: Vec<Vec<u8>> =
        [&b"zq1secret"[..], b"zq2secret", b"zq3secret", b"zq4secret", b"zq5secret", b"zq6secret"]
            .map(<[u8]>::to_vec)
            .to_vec();
    let names = ["e1", "e2", "e3"];
    let mut scanned = needles.clone();
    scanned.push(b"zq0secretcontrol".to_vec());
    let scan = Scan::start(scanned);
    // The control: a process whose argv holds a needle must be seen, or the scan proves nothing.
    let mut control = Command::new("/bin/sh").args(["-c", "sleep 0.3", "zq0secretcontrol"]).spawn().unwrap();
    let entries: Vec<(&str, serde_json::Value)> = names.iter().map(|n| (*n, tool(json!({})))).collect();
    sb.write_registry(&registry_with(&entries));
    let pid = sb.start_supervisor();
    for name in names {
        wait_until(&format!("{name} to start"), || sb.agent(name).starts() == 1);
    }
    let server = sb.tmux().list_server().unwrap().server_pid;
    env_set(&sb, "HOSTILE", b"zq6secret changed $(touch x)");
    sb.kill_pane("e1");
    wait_until("e1 to start again", || sb.agent("e1").starts() == 2);
    control.wait().unwrap();
    let (passes, lines, hits) = scan.finish();
    let (seen, hits): (Vec<String>, Vec<String>) = hits.into_iter().partition(|h| h.contains("zq0secretcontrol"));
    eprintln!(
        "/proc scan during 4 spawns: {passes} passes, {lines} command lines read, {} hits (control seen {} times)",
        hits.len(),
        seen.len()
    );
    assert!(!seen.is_empty(), "the scan never saw its control process");
    assert!(hits.is_empty(), "a value in an argv: {hits:#?}");
    assert!(passes > 10, "the scan ran during the spawns ({passes} passes)");
    for name in names {
        let env = agent_env(&sb, name, 1);
        for (key, value) in &values {
            assert_eq!(env.get(key.as_bytes()), Some(value), "{name} {key}");
        }
        assert_ne!(env[&b"AGENT_BOX_SESSION_ID"[..]], b"zq5secret-evil", "the pane's own variable wins");
    }
    assert!(!pwned.exists(), "a value was evaluated");
    assert_eq!(agent_env(&sb, "e1", 2)[&b"HOSTILE"[..]], b"zq6secret changed $(touch x)", "the next respawn reads it");
    assert_eq!(sb.tmux().list_server().unwrap().server_pid, server, "no tmux restart");
    let global = tmux_global_env(&sb);
    assert!(!global.is_empty() && !needles.iter().any(|n| global.windows(n.len()).any(|w| w == n.as_slice())));
    let skip = [store(&sb), sb.root().join("agents")];
    assert_eq!(files_holding(sb.root(), &skip, &needles), Vec::<PathBuf>::new(), "a value in another file");
    assert_eq!(sb.log_count("sets AGENT_BOX_SESSION_ID, which agent-box sets itself"), 1, "{}", sb.supervisor_log());
    assert_eq!(sb.log_count("no env store"), 0);
    let _ = pid;
}

#[test]
fn a_missing_store_is_said_once_per_streak_and_the_panes_start_without_it() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("m1", tool(json!({}))), ("m2", tool(json!({})))]));
    let first = agent_box_tests::fixtures::stderr(&sb.once());
    wait_until("both to start", || sb.agent("m1").starts() == 1 && sb.agent("m2").starts() == 1);
    assert_eq!(first.matches("no env store at").count(), 1, "{first}");
    fs::create_dir_all(store(&sb)).unwrap();
    sb.kill_pane("m1");
    let second = agent_box_tests::fixtures::stderr(&sb.once());
    assert_eq!(second.matches("the env store is not loaded").count(), 1, "{second}");
    wait_until("m1 to start again", || sb.agent("m1").starts() == 2);
}
