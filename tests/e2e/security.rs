//! The security checks of 90-quality §10 (Q10). Most are acceptance scenarios tested where their program is; this
//! module holds the two that were missing, and this table says where every check lives:
//!
//! | Check | Tests |
//! |---|---|
//! | S1 hostile environment for mark-stopped | mark-stopped cli `hostile_environment_changes_only_baked_files` |
//! | S2 path traversal | mark-stopped cli `hostile_names_are_refused_before_any_path`, session cli `add_names_and_validation`, webhook-spawn cli `hostile_keys_give_sanitised_names_and_stay_inside_the_sandbox`, e2e H07 |
//! | S3 modes | [`modes_after_a_writer_race_under_umask_000`], [`modes_after_a_writer_race_under_umask_022`], e2e `under_umask_000_every_writer_creates_0600_files_and_0700_directories`, session cli `directories_0700_files_0600_and_existing_modes_kept`, webhook-spawn cli `an_accepted_batch_adds_the_entry_filter_lease_and_line` |
//! | S4 untrusted text | e2e `hostile_text_reaches_the_agent_verbatim_and_runs_nothing`, `a_hostile_working_directory_runs_nothing`, `a_95_kib_prompt_reaches_the_agent_byte_for_byte`, registry `quote` property tests (30 SUP-12.6a), tmux adapter `hostile_working_directory_…` (TMX-2) |
//! | S5 no lock in children | e2e `the_lock_is_free_right_after_a_spawn_that_started_the_server` |
//! | S6 pane environment | e2e `pane_environment_with_and_without_webhook` |
//! | S7 terminal safety | session cli `control_characters_show_as_question_marks_and_json_stays_raw` |
//! | S8 resource bounds | [`webhook_spawn_of_20_mib_stdin_and_100_kib_meta_peaks_under_64_mib`], webhook-spawn cli H10, e2e H10 |
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_box_tests::fixtures::{ok, walk_all, webhook_spawn};
use agent_box_tests::{Sandbox, wait_until};
use serde_json::json;

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// Directories an administrator made before the programs ran, with modes that are not ours.
fn preexisting_dirs(sb: &Sandbox) -> BTreeMap<PathBuf, u32> {
    let dirs = [
        (sb.home().join(".config"), 0o750),
        (sb.home().join(".local"), 0o755),
        (sb.home().join(".local/state"), 0o751),
        (sb.home().join(".local/state/local-webhook"), 0o755),
    ];
    for (dir, mode) in &dirs {
        fs::create_dir_all(dir).unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(*mode)).unwrap();
    }
    dirs.into_iter().collect()
}

/// A dispatched batch whose fake agent crashes (so the epilogue writes the registry, the lease and the log).
fn dispatch(sb: &Sandbox, number: u32) {
    let vars = [
        ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets".to_owned()),
        ("LOCAL_WEBHOOK_SPAWN_COUNT", "1".to_owned()),
        ("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"number":"{number}"}}"#)),
        ("AGENT_BOX_HOOK_SESSION_ARGS", r#"["--as","hooked"]"#.to_owned()),
    ];
    webhook_spawn(sb, &vars, format!("[github] issue #{number} opened\n").as_bytes()).code(0);
}

/// The writer race of X02 in small (first spawns with prompts, stop/restart loops, add/rm loops), plus
/// dispatched sessions that crash, a refusal record, and a quarantine of an invalid registry of mode 0640, all
/// under `mask`; then every path below HOME is checked (90 S3, 00 OV-5.1).
fn modes_after_a_writer_race(mask: u32) {
    let mut sb = Sandbox::in_slot();
    sb.set_umask(mask);
    sb.use_counting_tmux();
    sb.set_limit("64");
    let preexisting = preexisting_dirs(&sb);
    sb.write_seed(r#"{"version":1,"sessions":{"parked":{"agent":"tool","extraArgs":["--as","parked"]}}}"#);
    sb.agent("hooked").control("exit 1");
    let pid = sb.start_supervisor();
    sb.wait_live("parked");
    let sb = &sb;
    std::thread::scope(|w| {
        for i in 0..4 {
            w.spawn(move || {
                let name = format!("f{i}");
                ok(sb, &["add", &name, "--harness", "tool", "--prompt", "kickoff", "--", "--as", &name]);
            });
        }
        w.spawn(|| {
            for _ in 0..4 {
                ok(sb, &["stop", "parked"]);
                ok(sb, &["restart", "parked"]);
            }
        });
        w.spawn(|| {
            for n in 0..4 {
                let tmp = format!("tmp{n}");
                ok(sb, &["add", &tmp, "--harness", "tool", "--", "--as", &tmp]);
                ok(sb, &["rm", &tmp]);
            }
        });
        w.spawn(|| (1..=2).for_each(|n| dispatch(sb, n)));
    });
    wait_until("both dispatched sessions crashed", || {
        let doc = sb.read_registry();
        doc.names().filter(|n| n.starts_with("hook-")).filter(|n| sb.entry(n).unwrap()["died"] == json!(1)).count() == 2
    });
    sb.set_limit("1");
    // A full box queues the batch (issue 24); a held registry lock is a refusal, which writes the refusal record.
    webhook_spawn(sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets")], b"[github] issue #3 opened\n").code(0);
    {
        let _held = agent_box_tests::HeldLock::acquire(&sb.registry().with_extension("json.lock"), Duration::ZERO);
        let vars = [("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets"), ("REGISTRY_LOCK_WAIT", "0.2")];
        webhook_spawn(sb, &vars, b"[github] issue #4 opened\n").code(75);
    }
    let staged = sb.registry().with_extension("staged");
    fs::write(&staged, b"not json").unwrap();
    fs::set_permissions(&staged, fs::Permissions::from_mode(0o640)).unwrap();
    fs::rename(&staged, sb.registry()).unwrap();
    let config_dir = sb.registry().parent().unwrap().to_path_buf();
    let quarantined = || {
        fs::read_dir(&config_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains(".corrupt-"))
    };
    wait_until("the quarantine", || quarantined().is_some());
    sb.wait_ticks(pid, 2);
    let quarantine = quarantined().unwrap();
    for must in [
        sb.registry(),
        sb.registry().with_extension("json.lock"),
        sb.state_dir().join("lease/.lock"),
        sb.state_dir().join("hook-sessions.jsonl"),
        sb.state_dir().join("hook-sessions.jsonl.lock"),
        sb.state_dir().join("webhook-spawn-refused.json"),
        sb.state_dir().join("webhook-spawn-refused.json.lock"),
        sb.side_file("parked"),
        sb.launch_file("parked"),
    ] {
        assert!(must.exists(), "umask {mask:03o}: {} was not written", must.display());
    }
    let mut checked = 0;
    for path in walk_all(sb.home()) {
        let meta = fs::symlink_metadata(&path).unwrap();
        let want = if let Some(kept) = preexisting.get(&path) {
            *kept
        } else if meta.is_dir() {
            0o700
        } else if path == quarantine {
            0o640
        } else {
            assert!(meta.is_file(), "umask {mask:03o}: {} is neither file nor directory", path.display());
            0o600
        };
        assert_eq!(mode(&path), want, "umask {mask:03o}: {}", path.display());
        checked += 1;
    }
    assert!(checked > 20, "umask {mask:03o}: only {checked} paths");
}

// S3
#[test]
fn modes_after_a_writer_race_under_umask_000() {
    modes_after_a_writer_race(0o000);
}

// S3
#[test]
fn modes_after_a_writer_race_under_umask_022() {
    modes_after_a_writer_race(0o022);
}

/// The bound of S8.
const PEAK_RSS_LIMIT_KIB: u64 = 64 * 1024;

/// Peak RSS in KiB of `cmd` fed `stdin`: GNU time's `%M` when `/usr/bin/time` is there, else the highest
/// `VmHWM` of `/proc/<pid>/status` seen while it runs (the high-water mark only grows, so the last reading before
/// the exit is the peak, to within one poll).
fn peak_rss_kib(cmd: &Command, stdin: &Path, scratch: &Path) -> u64 {
    let env: Vec<_> = cmd.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
    let gnu_time = Path::new("/usr/bin/time");
    let report = scratch.join("peak-rss");
    let mut run = if gnu_time.exists() {
        let mut run = Command::new(gnu_time);
        run.args(["-f", "%M", "-o"]).arg(&report).arg(cmd.get_program());
        run
    } else {
        Command::new(cmd.get_program())
    };
    run.args(cmd.get_args()).env_clear().envs(env).stdin(fs::File::open(stdin).unwrap());
    run.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = run.spawn().unwrap();
    let mut highest = 0;
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(120), "the spawn did not finish (liveness check)");
        let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().strip_suffix("kB"));
        highest = highest.max(hwm.and_then(|v| v.trim().parse().ok()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(1));
    }
    if gnu_time.exists() {
        eprintln!("s8: peak RSS measured by GNU time");
        return fs::read_to_string(&report).unwrap().trim().parse().unwrap();
    }
    eprintln!("s8: /usr/bin/time is missing (apt-get install time); peak RSS from /proc VmHWM polling");
    highest
}

/// 90 S8: webhook-spawn fed 20 MiB of stdin with a 100 KiB META stays under 64 MiB of peak RSS (its prompt bound
/// is checked by webhook-spawn's H10).
// S8
#[test]
fn webhook_spawn_of_20_mib_stdin_and_100_kib_meta_peaks_under_64_mib() {
    let sb = Sandbox::new();
    let batch = sb.root().join("batch");
    let line = |i: usize| format!("{:x<63}\n", format!("[github] event {i:08} on acme/widgets: "));
    fs::write(&batch, (0..20 * 1024 * 1024 / 64).flat_map(|i| line(i).into_bytes()).collect::<Vec<u8>>()).unwrap();
    let meta = format!("{{\"number\":\"7\",\"pad\":\"{}\"}}", "m".repeat(100 * 1024));
    let mut cmd = sb.cmd("agent-box-webhook-spawn");
    cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets").env("LOCAL_WEBHOOK_SPAWN_META", &meta);
    let peak = peak_rss_kib(&cmd, &batch, sb.root());
    eprintln!("s8: peak RSS {peak} KiB (bound {PEAK_RSS_LIMIT_KIB} KiB)");
    assert!(peak > 0 && peak <= PEAK_RSS_LIMIT_KIB, "peak RSS {peak} KiB");
    assert_eq!(sb.read_registry().names().filter(|n| n.starts_with("hook-")).count(), 1, "the batch was accepted");
}
