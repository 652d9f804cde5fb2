//! Issue 21 (docs/notification.md): the outcome notifier against an in-memory fake tmux and real notifier
//! programs (small sh scripts): the document, the environment, delivery once, backoff that survives a restart,
//! no lock held, a program that never reads or floods its output, the bound, and outcomes of removed leases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use agent_box_tests::fake_tmux::FakeTmux;
use agent_box_tests::wait::wait_until;
use base::SessionName;
use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState, Notification, Outcome};
use serde_json::Value;
use supervisor::Supervisor;
use supervisor::config::Config;
use supervisor::log::Log;

/// The registry lock is one per process; worlds run one at a time (as in reconcile.rs).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct World {
    dir: tempfile::TempDir,
    _turn: MutexGuard<'static, ()>,
}

const NAME: &str = "hook-acme-api-0b1e";

impl World {
    fn new() -> Self {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(home.join(".config/agent-box")).unwrap();
        fs::write(home.join(".config/agent-box/sessions.json"), r#"{"version": 1, "sessions": {}}"#).unwrap();
        fs::create_dir_all(dir.path().join("out")).unwrap();
        Self { dir, _turn: turn }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    fn state(&self) -> PathBuf {
        self.home().join(".local/state/agent-box")
    }
    fn leases(&self) -> LeaseDir {
        LeaseDir::new(self.state().join("lease"))
    }
    fn hook_log(&self) -> HookLog {
        HookLog::new(self.state().join("hook-sessions.jsonl"))
    }
    /// Writes the notifier: `body` is sh, run with `OUT` set to the output directory.
    fn notifier(&self, body: &str) -> PathBuf {
        let path = self.dir.path().join("notify.sh");
        fs::write(&path, format!("#!/bin/sh\nOUT='{}'\n{body}\n", self.out().display())).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
    fn supervisor(&self, timeout: Option<&str>) -> Supervisor {
        let root = self.dir.path().to_path_buf();
        let home = self.home();
        let timeout = timeout.map(str::to_owned);
        let env = move |key: &str| -> Option<OsString> {
            let value = match key {
                "HOME" => home.display().to_string(),
                "USER" => "agent".into(),
                "AGENT_BOX_SESSIONS_SEED" => root.join("seed.json").display().to_string(),
                "AGENT_BOX_AGENT_BINS" => "tool=/bin/true".into(),
                "AGENT_BOX_MARK_STOPPED" => "/bin/true".into(),
                "AGENT_BOX_TMUX_TMPDIR" => root.display().to_string(),
                "AGENT_BOX_HOST_LABEL" => "box-1".into(),
                "AGENT_BOX_ON_OUTCOME" => root.join("notify.sh").display().to_string(),
                "AGENT_BOX_ON_OUTCOME_TIMEOUT" => timeout.clone()?,
                _ => return None,
            };
            Some(value.into())
        };
        let config = Config::from_lookup(env).unwrap();
        let mut supervisor = Supervisor::new(config, Box::new(FakeTmux::default()), Log::capturing());
        supervisor.start_up();
        supervisor
    }
    /// A lease of [`NAME`] with `outcome` recorded; the registry lists the name, stopped, with the lease's life (so
    /// that no sweep or spawn touches it).
    fn ended_lease(&self, topic: &str, outcome: &Outcome) -> String {
        let name = SessionName::parse(NAME).unwrap();
        let lease_gen = self.leases().create(&name, topic, Some("612"), None).unwrap();
        self.leases().mark_outcome(&name, outcome, &Expect::Any).unwrap();
        let registry = serde_json::json!({"version": 1, "sessions": {NAME: {"agent": "tool", "stopped": true,
            "life": lease_gen.to_string()}}});
        fs::write(self.home().join(".config/agent-box/sessions.json"), registry.to_string()).unwrap();
        lease_gen.to_string()
    }
    fn lease(&self) -> Option<lease::Lease> {
        match self.leases().read(&SessionName::parse(NAME).unwrap()) {
            LeaseState::Present(lease) => Some(lease),
            _ => None,
        }
    }
    fn notification(&self) -> Notification {
        self.lease().map_or(Notification::Nothing, |l| l.notification())
    }
    fn runs(&self) -> usize {
        fs::read_to_string(self.out().join("runs")).map_or(0, |t| t.lines().count())
    }
}

fn lines_with(supervisor: &Supervisor, needle: &str) -> usize {
    supervisor.log().lines().iter().filter(|l| l.contains(needle)).count()
}

fn tick_until(supervisor: &mut Supervisor, what: &str, mut done: impl FnMut() -> bool) {
    wait_until(what, || {
        supervisor.tick();
        done()
    });
}

fn delivered(world: &World) -> bool {
    matches!(world.notification(), Notification::Delivered { .. })
}

#[test]
fn n_1_one_json_document_on_stdin_never_argv_and_the_env_store_reaches_it() {
    let world = World::new();
    world.notifier(r#"echo "$#" > "$OUT/argc"; cat > "$OUT/doc.json"; printf %s "$GH_TOKEN" > "$OUT/token"; env > "$OUT/env"; echo run >> "$OUT/runs""#);
    let store = world.home().join(".config/agent-box/env");
    fs::write(&store, "GH_TOKEN=ghp_s3cret\nAGENT_BOX_ON_OUTCOME=/evil\n").unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o600)).unwrap();
    let hostile = r#"github:acme/api"; touch /tmp/pwned-n1; echo "$(id)`id`'"#;
    let lease_gen = world.ended_lease(hostile, &Outcome::Died(3));
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    let doc: Value = serde_json::from_str(&fs::read_to_string(world.out().join("doc.json")).unwrap()).unwrap();
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["name"], NAME);
    assert_eq!(doc["host"], "box-1");
    assert_eq!(doc["topic"], hostile, "hostile text reaches it as JSON, byte for byte");
    assert_eq!(doc["object"], "612");
    assert_eq!(doc["gen"], lease_gen.as_str());
    assert_eq!(doc["outcome"], "died:3");
    assert_eq!(doc["attempt"], 1);
    for key in ["claimedAt", "endedAt", "lastSeenAt", "restartedAt", "spawn"] {
        assert!(doc.get(key).is_some(), "{key} in {doc}");
    }
    assert_eq!(fs::read_to_string(world.out().join("argc")).unwrap().trim(), "0", "nothing on its argv");
    assert_eq!(fs::read_to_string(world.out().join("token")).unwrap(), "ghp_s3cret");
    let env = fs::read_to_string(world.out().join("env")).unwrap();
    assert!(!env.contains("/evil"), "the store never overrides AGENT_BOX_*: {env}");
    assert!(!env.contains("AGENT_BOX_REGISTRY_LOCK_FD"), "{env}");
    assert!(!Path::new("/tmp/pwned-n1").exists());
    assert_eq!(lines_with(&supervisor, &format!("reported the outcome of '{NAME}' (died:3)")), 1);
}

#[test]
fn n_4_exit_0_is_recorded_once_and_the_program_never_runs_again_for_it() {
    let world = World::new();
    world.notifier(r#"cat >/dev/null; echo run >> "$OUT/runs""#);
    world.ended_lease("github:acme/api", &Outcome::Vanished);
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    for _ in 0..5 {
        supervisor.tick();
    }
    let mut restarted = world.supervisor(None);
    restarted.tick();
    assert_eq!(world.runs(), 1, "exactly once, across a restart");
    assert_eq!(lines_with(&supervisor, "reported the outcome"), 1);
}

static CLOCK: AtomicI64 = AtomicI64::new(0);
fn clock() -> i64 {
    CLOCK.load(Ordering::SeqCst)
}

#[test]
fn n_5_failures_back_off_from_10_s_doubling_kept_in_the_lease_across_a_restart_one_line_per_streak() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; [ -f "$OUT/ok" ] || { echo "gh: HTTP 502" >&2; exit 4; }"#);
    world.ended_lease("github:acme/api", &Outcome::Stopped);
    let t0 = base::time::now_epoch();
    CLOCK.store(t0, Ordering::SeqCst);
    let mut supervisor = world.supervisor(None).with_clock(clock);
    tick_until(&mut supervisor, "the first failure", || {
        world.notification() == Notification::Pending { attempts: 1, next_at: Some(t0 + 10) }
    });
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.runs(), 1, "not before nextAt");
    CLOCK.store(t0 + 10, Ordering::SeqCst);
    tick_until(&mut supervisor, "the second failure", || {
        world.notification() == Notification::Pending { attempts: 2, next_at: Some(t0 + 30) }
    });
    let failed = lines_with(&supervisor, &format!("could not report the outcome of '{NAME}' (stopped)"));
    assert_eq!(failed, 1, "one line per streak: {:?}", supervisor.log().lines());
    assert_eq!(lines_with(&supervisor, "exited with status 4; its last output: \"gh: HTTP 502\""), 1);
    let mut restarted = world.supervisor(None).with_clock(clock);
    restarted.tick();
    assert_eq!(world.runs(), 2, "a restarted supervisor keeps the backoff the lease records");
    fs::write(world.out().join("ok"), "").unwrap();
    CLOCK.store(t0 + 30, Ordering::SeqCst);
    tick_until(&mut restarted, "the delivery", || delivered(&world));
    assert_eq!(lines_with(&restarted, "(stopped) to ") + lines_with(&restarted, "after 2 failed attempts"), 2);
    assert!(!world.lease().unwrap().raw().contains_key("notify"));
}

#[test]
fn n_3_the_program_runs_while_no_lock_is_held_and_takes_them_itself() {
    let world = World::new();
    let registry_lock = world.home().join(".config/agent-box/sessions.json.lock");
    let lease_lock = world.state().join("lease/.lock");
    world.notifier(&format!(
        "flock -n -x '{}' true && flock -n -x '{}' true && echo run >> \"$OUT/runs\"",
        registry_lock.display(),
        lease_lock.display()
    ));
    world.ended_lease("github:acme/api", &Outcome::Vanished);
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "a delivery whose program took both locks", || delivered(&world));
    assert_eq!(world.runs(), 1, "{:?}", supervisor.log().lines());
}

#[test]
fn n_3_a_program_that_never_reads_and_floods_its_output_blocks_nothing() {
    let world = World::new();
    world.notifier(r#"head -c 8000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo run >> "$OUT/runs""#);
    world.ended_lease("github:acme/api", &Outcome::Died(1));
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    assert_eq!(world.runs(), 1);
}

#[test]
fn n_3_a_hanging_program_is_polled_not_waited_for_and_killed_at_its_bound() {
    let world = World::new();
    world.notifier(r#"echo $$ > "$OUT/pid"; sleep 300 & wait"#);
    world.ended_lease("github:acme/api", &Outcome::Died(1));
    let mut supervisor = world.supervisor(Some("1"));
    tick_until(&mut supervisor, "the program to start", || world.out().join("pid").exists());
    // Each of these ticks returns while the program still runs: the loop is never blocked by it.
    supervisor.tick();
    let pid: i32 = fs::read_to_string(world.out().join("pid")).unwrap().trim().parse().unwrap();
    tick_until(&mut supervisor, "the bound", || {
        matches!(world.notification(), Notification::Pending { attempts: 1, .. })
    });
    assert_eq!(lines_with(&supervisor, "did not finish within 1s and was killed"), 1);
    let gone = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err();
    wait_until("the program's process group to be gone", gone);
}

#[test]
fn n_7_an_outcome_removed_first_is_not_delivered_and_its_end_record_says_so() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs""#);
    world.ended_lease("github:acme/api", &Outcome::Died(2));
    let name = SessionName::parse(NAME).unwrap();
    world.leases().finish(&name, &EndHow::Rm, &Expect::Any, Some(&world.hook_log())).unwrap();
    let mut supervisor = world.supervisor(None);
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.runs(), 0);
    let log = fs::read_to_string(world.state().join("hook-sessions.jsonl")).unwrap();
    assert!(log.contains(r#""how":"rm","lifeSeconds":"#) && log.contains(r#""notified":false"#), "{log}");
}

#[test]
fn n_4_a_delivery_for_a_life_that_was_replaced_meanwhile_is_not_recorded_on_the_new_one() {
    let world = World::new();
    world.notifier(r#"cat > "$OUT/doc-$$"; echo run >> "$OUT/runs"; while [ ! -f "$OUT/go" ]; do sleep 0.05; done"#);
    let old = world.ended_lease("github:acme/api", &Outcome::Died(1));
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the first run", || world.runs() == 1);
    let name = SessionName::parse(NAME).unwrap();
    world.leases().finish(&name, &EndHow::Rm, &Expect::Any, None).unwrap();
    let new = world.ended_lease("github:acme/api", &Outcome::Vanished);
    assert_ne!(old, new);
    fs::write(world.out().join("go"), "").unwrap();
    tick_until(&mut supervisor, "the new life's own delivery", || delivered(&world));
    assert_eq!(world.runs(), 2, "the new life's outcome had its own run");
    assert_eq!(lines_with(&supervisor, "its lease changed meanwhile, nothing recorded"), 1);
    let docs: Vec<Value> = fs::read_dir(world.out())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("doc-"))
        .map(|e| serde_json::from_str(&fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    let gens: std::collections::BTreeSet<&str> = docs.iter().filter_map(|d| d["gen"].as_str()).collect();
    assert_eq!(gens, [old.as_str(), new.as_str()].into_iter().collect());
}

#[test]
fn n_8_the_marker_tells_readers_whether_outcomes_are_reported() {
    let world = World::new();
    world.notifier("exit 0");
    let _supervisor = world.supervisor(None);
    let marker = lease::on_outcome_marker(&world.state());
    let text = fs::read_to_string(&marker).unwrap();
    assert!(text.contains("notify.sh") && text.contains("\"timeoutSecs\": 60"), "{text}");
    assert_eq!(fs::metadata(&marker).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn n_2_the_document_carries_the_hook_log_s_spawn_record_of_the_lease() {
    let world = World::new();
    world.notifier(r#"cat > "$OUT/doc.json""#);
    let name = SessionName::parse(NAME).unwrap();
    fs::create_dir_all(world.state()).unwrap();
    let spawn = lease::SpawnRecord {
        name: &name,
        topic: "github:acme/api",
        event: "issues",
        object: Some("612"),
        count: Some(2),
        intake: None,
        claim: None,
    };
    let lease_gen = world.leases().create_with_spawn(&spawn, lease::Gen::random(), &world.hook_log()).unwrap();
    world.leases().mark_outcome(&name, &Outcome::Vanished, &Expect::Any).unwrap();
    let registry = serde_json::json!({"version": 1, "sessions": {NAME: {"agent": "tool", "stopped": true,
        "life": lease_gen.to_string()}}});
    fs::write(world.home().join(".config/agent-box/sessions.json"), registry.to_string()).unwrap();
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    let doc: Value = serde_json::from_str(&fs::read_to_string(world.out().join("doc.json")).unwrap()).unwrap();
    assert_eq!(doc["spawn"]["what"], "spawn", "{doc}");
    assert_eq!((doc["spawn"]["event"].clone(), doc["spawn"]["count"].clone()), (Value::from("issues"), Value::from(2)));
}

#[test]
fn n_11_a_parked_one_shot_session_is_reaped_only_after_its_outcome_is_delivered() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; [ -f "$OUT/ok" ] || exit 3"#);
    let life = world.ended_lease("github:acme/api", &Outcome::Stopped);
    let registry = serde_json::json!({"version": 1, "sessions": {NAME: {"agent": "tool", "stopped": true,
        "ephemeral": true, "life": life}}});
    let sessions = world.home().join(".config/agent-box/sessions.json");
    fs::write(&sessions, registry.to_string()).unwrap();
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the first failure", || world.runs() == 1);
    for _ in 0..3 {
        supervisor.tick();
    }
    assert!(fs::read_to_string(&sessions).unwrap().contains(NAME), "not reaped while pending");
    assert!(matches!(world.notification(), Notification::Pending { attempts: 1, .. }), "{:?}", world.notification());
    assert_eq!(lines_with(&supervisor, "reaped '"), 0, "{:?}", supervisor.log().lines());
    fs::write(world.out().join("ok"), "").unwrap();
    let mut later = world.supervisor(None).with_clock(|| base::time::now_epoch() + 60);
    tick_until(&mut later, "the delivery, then the reap", || !fs::read_to_string(&sessions).unwrap().contains(NAME));
    assert_eq!(world.runs(), 2);
    assert!(world.lease().is_none(), "the reap deletes the lease after the delivery");
    let log = fs::read_to_string(world.state().join("hook-sessions.jsonl")).unwrap();
    assert!(log.contains(r#""how":"reaped""#) && log.contains(r#""notified":true"#), "{log}");
}

/// Descriptors of this process open on `path` (the test's held lock is one; a second is the supervisor's).
fn descriptors_on(path: &Path) -> usize {
    let target = fs::canonicalize(path).unwrap();
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|e| fs::read_link(e.path()).ok() == Some(target.clone()))
        .count()
}

// N-11 (issue 25): the reap decides under the locks its decision depends on. `stop` sets `stopped` and records the
// lease outcome in one registry-lock section; a tick that read the entry already stopped and the lease still open
// before that section ended must not reap the entry (and delete the outcome undelivered) once it gets the lock.
#[test]
fn n_11_the_reap_reads_the_outcome_under_the_registry_and_lease_locks() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; exit 3"#);
    let name = SessionName::parse(NAME).unwrap();
    let life = world.leases().create(&name, "github:acme/api", Some("612"), None).unwrap().to_string();
    let registry = serde_json::json!({"version": 1, "sessions": {NAME: {"agent": "tool", "stopped": true,
        "ephemeral": true, "life": life}}});
    let sessions = world.home().join(".config/agent-box/sessions.json");
    fs::write(&sessions, registry.to_string()).unwrap();
    let mut supervisor = world.supervisor(None);
    let lock = world.home().join(".config/agent-box/sessions.json.lock");
    // The test is `stop` inside its section: the flag is written, the outcome comes once the tick waits for the lock.
    let section = agent_box_tests::HeldLock::now(&lock);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            wait_until("the tick to wait for the registry lock", || descriptors_on(&lock) >= 2);
            world.leases().mark_outcome(&name, &Outcome::Stopped, &Expect::Any).unwrap();
            drop(section);
        });
        supervisor.tick();
    });
    assert!(fs::read_to_string(&sessions).unwrap().contains(NAME), "reaped with its outcome undelivered");
    assert_eq!(world.lease().and_then(|l| l.outcome()), Some(Outcome::Stopped), "the outcome was deleted");
    assert_eq!(lines_with(&supervisor, "reaped '"), 0, "{:?}", supervisor.log().lines());
}

// N-3 (issue 25): a child the program left running when it exited 0 (a backgrounded `gh`, a `sleep`) does not
// outlive the delivery: what remains of the program's process group is killed once the program has exited.
#[test]
fn n_3_what_the_program_left_running_after_its_exit_0_is_killed_with_its_group() {
    /// Kills the background child at the end, also when the test fails.
    struct Reaper(nix::unistd::Pid);
    impl Drop for Reaper {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(self.0, nix::sys::signal::Signal::SIGKILL);
        }
    }
    let world = World::new();
    world.notifier(r#"sleep 300 & echo $! > "$OUT/child"; echo run >> "$OUT/runs"; exit 0"#);
    world.ended_lease("github:acme/api", &Outcome::Died(1));
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    let pid: i32 = fs::read_to_string(world.out().join("child")).unwrap().trim().parse().unwrap();
    let child = Reaper(nix::unistd::Pid::from_raw(pid));
    wait_until("the program's background child to be gone", || nix::sys::signal::kill(child.0, None).is_err());
    assert_eq!(world.runs(), 1);
}

/// Issue 24: a batch queued two days ago (past the default maximum age of one day), as webhook-spawn records one.
fn queue_old_record(world: &World, key: &str) -> intake::RecordId {
    use agent_box_types::intake::{Batch, RECORD_NOTE, Record};
    let accepted = base::time::now_epoch() - 2 * 86_400;
    let at = base::time::format_iso(accepted);
    let record = Record {
        note_text: RECORD_NOTE.to_owned(),
        version: 1,
        key: key.to_owned(),
        assignment: "github:acme/api#612".to_owned(),
        source: "github".to_owned(),
        routing_key: "acme/api".to_owned(),
        name_stem: "acme-api".to_owned(),
        topic: "github:acme/*".to_owned(),
        note: String::new(),
        object: Some("612".to_owned()),
        harness: "tool".to_owned(),
        args: Vec::new(),
        seed: true,
        filter_dir: world.home().join(".local/state/local-webhook").display().to_string(),
        user: "agent".to_owned(),
        accepted_at: at.clone(),
        batches: vec![Batch {
            keys: vec![key.to_owned()],
            at,
            event: "issues".to_owned(),
            count: Some(1),
            meta: None,
            text: "[github] issue #612 opened".to_owned(),
        }],
        outcome: None,
        ended_at: None,
        notified_at: None,
        notify: None,
        elsewhere: None,
    };
    let id = intake::RecordId::new(u64::try_from(accepted).unwrap() * 1_000_000_000, &record.assignment);
    intake::Queue::new(world.state().join("queue")).create(&id, &record).unwrap();
    id
}

fn ended_row(world: &World, id: &intake::RecordId) -> Value {
    serde_json::from_slice(&fs::read(world.state().join("queue/ended").join(format!("{}.json", id.stem()))).unwrap())
        .unwrap()
}

// IN-10
#[test]
fn an_expired_intake_batch_is_reported_once_with_its_intake_document() {
    let world = World::new();
    world.notifier(r#"cat > "$OUT/doc.json"; echo run >> "$OUT/runs""#);
    let id = queue_old_record(&world, "72d3162e-old");
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the report of the expired batch", || {
        world.state().join("queue/ended").join(format!("{}.json", id.stem())).exists()
            && ended_row(&world, &id)["notifiedAt"].is_string()
    });
    let doc: Value = serde_json::from_str(&fs::read_to_string(world.out().join("doc.json")).unwrap()).unwrap();
    assert_eq!((&doc["outcome"], &doc["name"], &doc["gen"]), (&Value::from("expired"), &Value::Null, &Value::Null));
    assert_eq!(
        (&doc["topic"], &doc["object"], &doc["attempt"]),
        (&Value::from("github:acme/api"), &Value::from("612"), &Value::from(1))
    );
    assert_eq!(doc["intake"]["key"], "72d3162e-old");
    let end = world.hook_log().tail(10).unwrap().into_iter().find_map(|l| match l {
        lease::LogLine::Parsed(v) if v["what"] == "intake" => Some(v),
        _ => None,
    });
    assert_eq!(end.unwrap()["how"], "expired", "the end record came first");
    for _ in 0..3 {
        supervisor.tick();
    }
    supervisor.settle_notifier(std::time::Duration::from_secs(5));
    assert_eq!(world.runs(), 1, "reported once");
    assert_eq!(lines_with(&supervisor, "reported the expired batch '72d3162e-old'"), 1);
}

// IN-10
#[test]
fn a_failed_report_of_an_expired_batch_backs_off_in_its_row() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; echo no network >&2; exit 1"#);
    let id = queue_old_record(&world, "72d3162e-fails");
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the failed attempt recorded in the row", || {
        world.state().join("queue/ended").join(format!("{}.json", id.stem())).exists()
            && ended_row(&world, &id)["notify"]["attempts"] == 1
    });
    assert!(ended_row(&world, &id)["notify"]["nextAt"].is_string());
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.runs(), 1, "not run again before its nextAt");
    assert_eq!(lines_with(&supervisor, "could not report the expired batch '72d3162e-fails'"), 1);
    assert!(supervisor.log().lines().iter().any(|l| l.contains("\"no network\"")), "{:?}", supervisor.log().lines());
}

/// N-5: the backoff belongs to the outcome that failed; a new outcome of the same name (the lease revived by a
/// restart, then ended again) is reported at once, not after the old outcome's wait.
#[test]
fn n_5_a_new_outcome_of_the_name_is_tried_without_the_old_outcome_s_backoff() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; [ -f "$OUT/ok" ] || exit 4"#);
    world.ended_lease("github:acme/api", &Outcome::Stopped);
    let t0 = base::time::now_epoch();
    CLOCK.store(t0, Ordering::SeqCst);
    let mut supervisor = world.supervisor(None).with_clock(clock);
    tick_until(&mut supervisor, "the first failure", || {
        world.notification() == Notification::Pending { attempts: 1, next_at: Some(t0 + 10) }
    });
    let name = SessionName::parse(NAME).unwrap();
    world.leases().record_restart(&name, &Expect::Any, None).unwrap();
    world.leases().mark_outcome(&name, &Outcome::Died(1), &Expect::Any).unwrap();
    fs::write(world.out().join("ok"), "").unwrap();
    tick_until(&mut supervisor, "the delivery of died:1 at t0", || delivered(&world));
    assert_eq!(world.lease().unwrap().outcome(), Some(Outcome::Died(1)));
}

/// N-5: a failure the lease could not record (its lock busy) still backs off: the supervisor remembers the
/// attempt and its next time, and the second attempt counts the first.
#[test]
fn n_5_a_failure_the_lease_could_not_record_still_backs_off() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; exit 4"#);
    world.ended_lease("github:acme/api", &Outcome::Stopped);
    let t0 = base::time::now_epoch();
    CLOCK.store(t0, Ordering::SeqCst);
    let mut supervisor = world.supervisor(None).with_clock(clock);
    let held =
        agent_box_tests::HeldLock::acquire(&world.state().join("lease/.lock"), std::time::Duration::ZERO).unwrap();
    wait_until("the first failure", || {
        supervisor.tick();
        lines_with(&supervisor, "could not report the outcome") == 1
    });
    drop(held);
    assert_eq!(world.notification(), Notification::Pending { attempts: 0, next_at: None }, "not recorded");
    for _ in 0..3 {
        supervisor.tick();
    }
    CLOCK.store(t0 + 10, Ordering::SeqCst);
    tick_until(&mut supervisor, "the second failure, recorded", || {
        world.notification() == Notification::Pending { attempts: 2, next_at: Some(t0 + 30) }
    });
    assert_eq!(world.runs(), 2, "no attempt before the remembered next time");
}

/// N-5, one line per streak: a streak ends when its outcome is no longer pending (here revived by a restart), so
/// the failures of the name's next outcome are said again.
#[test]
fn n_5_the_next_outcome_of_a_name_starts_a_new_streak() {
    let world = World::new();
    world.notifier(r#"echo run >> "$OUT/runs"; exit 4"#);
    world.ended_lease("github:acme/api", &Outcome::Stopped);
    let mut supervisor = world.supervisor(None);
    wait_until("the first failure", || {
        supervisor.tick();
        lines_with(&supervisor, "could not report the outcome") == 1
    });
    let name = SessionName::parse(NAME).unwrap();
    world.leases().record_restart(&name, &Expect::Any, None).unwrap();
    supervisor.tick();
    world.leases().mark_outcome(&name, &Outcome::Died(1), &Expect::Any).unwrap();
    wait_until("the failure of died:1, said", || {
        supervisor.tick();
        lines_with(&supervisor, &format!("could not report the outcome of '{NAME}' (died:1)")) == 1
    });
}

/// N-2: the spawn record is this name's own `spawn` line written no later than the lease's claim: not a newer line
/// of another name, not another kind of line of this name, not the spawn of a later life.
#[test]
fn n_2_the_spawn_record_is_the_name_s_own_spawn_line_up_to_the_claim() {
    fn at_claim() -> i64 {
        1_764_424_991
    }
    let world = World::new();
    world.notifier(r#"cat > "$OUT/doc.json""#);
    let name = SessionName::parse(NAME).unwrap();
    let leases = world.leases().with_clock(at_claim);
    let lease_gen = leases.create(&name, "github:acme/api", None, None).unwrap();
    leases.mark_outcome(&name, &Outcome::Vanished, &Expect::Any).unwrap();
    let registry = serde_json::json!({"version": 1, "sessions": {NAME: {"agent": "tool", "stopped": true,
        "life": lease_gen.to_string()}}});
    fs::write(world.home().join(".config/agent-box/sessions.json"), registry.to_string()).unwrap();
    let (claim, later) = ("2025-11-29T14:03:11Z", "2025-11-29T14:04:11Z");
    let lines = [
        serde_json::json!({"at": claim, "what": "spawn", "name": NAME, "event": "issues"}),
        serde_json::json!({"at": claim, "what": "spawn", "name": "hook-other-0000", "event": "push"}),
        serde_json::json!({"at": claim, "what": "end", "name": NAME, "how": "rm"}),
        serde_json::json!({"at": later, "what": "spawn", "name": NAME, "event": "later-life"}),
    ];
    let log: String = lines.iter().map(|line| format!("{line}\n")).collect();
    fs::write(world.state().join("hook-sessions.jsonl"), log).unwrap();
    let mut supervisor = world.supervisor(None);
    tick_until(&mut supervisor, "the delivery", || delivered(&world));
    let doc: Value = serde_json::from_str(&fs::read_to_string(world.out().join("doc.json")).unwrap()).unwrap();
    assert_eq!(
        (&doc["spawn"]["what"], &doc["spawn"]["event"]),
        (&Value::from("spawn"), &Value::from("issues")),
        "{doc}"
    );
}

/// N-4: a delivery whose record could not be written at once (the lease lock busy) is recorded at a later tick
/// and said once, naming the program; it is never run again.
#[test]
fn n_4_a_delivery_recorded_late_is_said_once_and_names_the_program() {
    let world = World::new();
    let program = world.notifier(r#"cat >/dev/null; echo run >> "$OUT/runs""#);
    world.ended_lease("github:acme/api", &Outcome::Died(3));
    let mut supervisor = world.supervisor(None);
    let held =
        agent_box_tests::HeldLock::acquire(&world.state().join("lease/.lock"), std::time::Duration::ZERO).unwrap();
    wait_until("the delivery, unrecorded", || {
        supervisor.tick();
        lines_with(&supervisor, "reported the outcome") == 1
    });
    assert!(!delivered(&world));
    drop(held);
    tick_until(&mut supervisor, "the record of the delivery", || delivered(&world));
    supervisor.tick();
    let said = format!("reported the outcome of '{NAME}' (died:3) to {}", program.display());
    assert_eq!((lines_with(&supervisor, "reported the outcome"), lines_with(&supervisor, &said)), (1, 1));
    assert_eq!(world.runs(), 1);
}

/// N-3 at stop and `--once`: a notifier still running gets its grace to end, and what it did is recorded.
#[test]
fn n_3_settling_waits_for_a_running_notifier_within_its_grace_and_records_it() {
    let world = World::new();
    world.notifier(r#"cat >/dev/null; sleep 1; echo run >> "$OUT/runs""#);
    world.ended_lease("github:acme/api", &Outcome::Vanished);
    let mut supervisor = world.supervisor(None);
    supervisor.tick();
    supervisor.settle_notifier(agent_box_tests::wait::deadline());
    assert!(delivered(&world), "{:?}", world.notification());
    assert_eq!(world.runs(), 1);
}

/// N-3 at stop and `--once`: a notifier that outlasts the grace is killed (nothing of it is left running) and
/// its outcome stays pending for the next supervisor, no failure recorded.
#[test]
fn n_3_settling_kills_a_notifier_that_outlasts_its_grace_and_leaves_the_outcome_pending() {
    let world = World::new();
    world.notifier(r#"echo $$ > "$OUT/pid"; exec sleep 600"#);
    world.ended_lease("github:acme/api", &Outcome::Vanished);
    let mut supervisor = world.supervisor(None);
    supervisor.tick();
    wait_until("the notifier to run", || fs::read_to_string(world.out().join("pid")).is_ok_and(|p| p.ends_with('\n')));
    let pid = fs::read_to_string(world.out().join("pid")).unwrap().trim().to_owned();
    supervisor.settle_notifier(std::time::Duration::from_millis(200));
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the notifier {pid} was killed and reaped");
    assert_eq!(world.notification(), Notification::Pending { attempts: 0, next_at: None });
}
