//! The reconcile loop against an in-memory fake tmux (30-supervisor §18 unit layer): the post-check kill, the
//! lock refusal that skips every later locked section, and the unlocked admission pre-check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use agent_box_tests::fake_tmux::FakeTmux;
use supervisor::Supervisor;
use supervisor::config::Config;
use supervisor::log::Log;

struct World {
    dir: tempfile::TempDir,
    fake: FakeTmux,
}

impl World {
    fn new(registry: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        fs::create_dir_all(home.join(".config/agent-box")).unwrap();
        fs::write(home.join(".config/agent-box/sessions.json"), registry).unwrap();
        fs::write(dir.path().join("limit"), "8").unwrap();
        Self { dir, fake: FakeTmux::default() }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn registry(&self) -> PathBuf {
        self.home().join(".config/agent-box/sessions.json")
    }
    fn set_limit(&self, limit: &str) {
        fs::write(self.dir.path().join("limit"), limit).unwrap();
    }
    fn supervisor(&self) -> Supervisor {
        let root = self.dir.path().to_path_buf();
        let home = self.home();
        let env = move |key: &str| -> Option<OsString> {
            let value = match key {
                "HOME" => home.display().to_string(),
                "USER" => "agent".into(),
                "AGENT_BOX_SESSIONS_SEED" => root.join("seed.json").display().to_string(),
                "AGENT_BOX_AGENT_BINS" => "tool=/bin/true shell=/bin/sh".into(),
                "AGENT_BOX_MARK_STOPPED" => "/bin/true".into(),
                "AGENT_BOX_TMUX_TMPDIR" => root.display().to_string(),
                "AGENT_BOX_SESSION_LIMIT_FILE" => root.join("limit").display().to_string(),
                _ => return None,
            };
            Some(value.into())
        };
        let config = Config::from_lookup(env).unwrap();
        Supervisor::new(config, Box::new(self.fake.clone()), Log::capturing())
    }
    fn lines_with(supervisor: &Supervisor, needle: &str) -> usize {
        supervisor.log().lines().iter().filter(|l| l.contains(needle)).count()
    }
}

/// Holds the registry lock from another process (util-linux flock) until dropped.
struct OtherHolder(Child);

impl OtherHolder {
    fn hold(registry: &Path) -> Self {
        let lock = registry.with_extension("json.lock");
        let child = Command::new("flock").arg(&lock).args(["sleep", "60"]).spawn().unwrap();
        let start = std::time::Instant::now();
        while registry::with_file_lock(&lock, std::time::Duration::ZERO, false, |_| ()).is_ok() {
            assert!(start.elapsed().as_secs() < 20, "the holder never took the lock");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Self(child)
    }
}

impl Drop for OtherHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sup_7_1_post_check_kills_our_own_spawn_when_the_key_went_away() {
    let world = World::new(r#"{"version":1,"sessions":{"z":{"agent":"tool"}}}"#);
    let registry = world.registry();
    world.fake.state().during_new = Some(Box::new(move || {
        // An old writer that bypasses the lock renames a copy without `z` into place.
        let staged = registry.with_extension("staged");
        fs::write(&staged, r#"{"version":1,"sessions":{}}"#).unwrap();
        fs::rename(&staged, &registry).unwrap();
    }));
    let mut supervisor = world.supervisor();
    supervisor.tick();
    assert_eq!(world.fake.calls("new z"), 1);
    assert_eq!(world.fake.calls("kill z"), 1, "the post-check kills the new pane");
    assert_eq!(
        World::lines_with(&supervisor, "'z' was removed or stopped while it was starting; killed the new pane"),
        1
    );
    assert!(!world.home().join(".local/state/agent-box/session/z.json").exists(), "nothing recorded");
}

#[test]
fn sup_7_2_a_lock_refusal_skips_every_later_locked_section() {
    let world = World::new(
        r#"{"version":1,"sessions":{"a":{"agent":"tool"},"b":{"agent":"tool"},"r":{"agent":"tool","stopped":true,"ephemeral":true}}}"#,
    );
    let _holder = OtherHolder::hold(&world.registry());
    let mut supervisor = world.supervisor();
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.fake.calls("new"), 0);
    assert_eq!(World::lines_with(&supervisor, "registry lock not obtained"), 1, "{:?}", supervisor.log().lines());
    assert!(fs::read_to_string(world.registry()).unwrap().contains("\"r\""), "no reap without the lock");
}

#[test]
fn sup_6_2_a_refused_pre_check_logs_one_l5_and_skips_preparation() {
    let world = World::new(r#"{"version":1,"sessions":{"a":{"agent":"tool"},"b":{"agent":"nope"}}}"#);
    world.set_limit("1");
    world.fake.state().live.push("a".into());
    let mut supervisor = world.supervisor();
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(World::lines_with(&supervisor, "b waiting: Session limit reached (2 of 1 slots running or queued)"), 1);
    assert_eq!(World::lines_with(&supervisor, "is not installed"), 0, "preparation skipped while waiting");
    assert_eq!(world.fake.calls("new"), 0);
}

#[test]
fn sup_4_1_an_idle_tick_asks_tmux_once_and_writes_nothing() {
    let world = World::new(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    world.fake.state().live.push("a".into());
    let before = fs::metadata(world.registry()).unwrap().modified().unwrap();
    let mut supervisor = world.supervisor();
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.state().calls, ["ensure", "ensure"]);
    assert_eq!(fs::metadata(world.registry()).unwrap().modified().unwrap(), before);
}

/// Issue 12: the session-closed wake costs one `set-hook` call per server, never one per tick: installed on the first
/// tick, not again while the server's pid stays, again on a new server; a refusal is logged once per server.
#[test]
fn the_wake_is_installed_once_per_server() {
    let world = World::new(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    world.fake.state().live.push("a".into());
    let mut supervisor = world.supervisor();
    let hook = tmux::WakeHook::for_file(&world.home().join(".local/state/agent-box/tmux-wake")).unwrap();
    supervisor.enable_wake(hook);
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.fake.state().calls, ["ensure", "hook", "ensure", "ensure"]);
    world.fake.state().server_pid = Some(5000);
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.calls("hook"), 2, "a new server gets the hook once");
    let refused = tmux::TmuxError::Failed { status: Some(1), stderr: "invalid option: session-closed[4242]".into() };
    world.fake.state().hook_refusal = Some(refused);
    world.fake.state().server_pid = Some(5001);
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.fake.calls("hook"), 3, "a refusal is not retried on the same server");
    assert_eq!(World::lines_with(&supervisor, "tmux did not accept the session-closed hook (invalid option"), 1);
}
