//! The reconcile loop against an in-memory fake tmux (30-supervisor §18 unit layer): the post-check kill, the
//! lock refusal that skips every later locked section, and the unlocked admission pre-check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::rc::Rc;

use registry::SessionName;
use supervisor::Supervisor;
use supervisor::config::Config;
use supervisor::log::Log;
use tmux::{Killed, NewSession, TmuxApi, TmuxError};

/// What the fake server holds and what it was asked.
#[derive(Default)]
struct FakeState {
    live: BTreeSet<String>,
    calls: Vec<String>,
    /// Runs inside `new_session`, while the supervisor holds the registry lock.
    during_new: Option<Box<dyn Fn()>>,
}

#[derive(Clone, Default)]
struct FakeTmux(Rc<RefCell<FakeState>>);

impl FakeTmux {
    fn calls(&self, verb: &str) -> usize {
        self.0.borrow().calls.iter().filter(|c| c.starts_with(verb)).count()
    }
}

impl TmuxApi for FakeTmux {
    fn ensure_server_and_list(&self) -> Result<Vec<String>, TmuxError> {
        let mut state = self.0.borrow_mut();
        state.calls.push("ensure".into());
        Ok(state.live.iter().cloned().collect())
    }
    fn list_sessions(&self) -> Result<Vec<String>, TmuxError> {
        let mut state = self.0.borrow_mut();
        state.calls.push("list".into());
        Ok(state.live.iter().cloned().collect())
    }
    fn has_session(&self, name: &SessionName) -> Result<bool, TmuxError> {
        Ok(self.0.borrow().live.contains(name.as_str()))
    }
    fn new_session(&self, request: &NewSession) -> Result<(), TmuxError> {
        if let Some(hook) = self.0.borrow().during_new.as_ref() {
            hook();
        }
        let mut state = self.0.borrow_mut();
        state.calls.push(format!("new {}", request.name));
        state.live.insert(request.name.to_string());
        Ok(())
    }
    fn kill_session(&self, name: &SessionName) -> Result<Killed, TmuxError> {
        let mut state = self.0.borrow_mut();
        state.calls.push(format!("kill {name}"));
        Ok(if state.live.remove(name.as_str()) { Killed::Yes } else { Killed::AlreadyGone })
    }
    fn display(&self, _: &SessionName, _: &str) -> Result<String, TmuxError> {
        Ok(String::new())
    }
    fn current_session(&self, _: Option<&str>) -> Result<String, TmuxError> {
        Err(TmuxError::NoSuchSession)
    }
    fn set_global_option(&self, _: &str, _: &str) -> Result<(), TmuxError> {
        Ok(())
    }
    fn show_global_option(&self, _: &str) -> Result<Option<String>, TmuxError> {
        Ok(None)
    }
    fn version(&self) -> Result<Option<(u32, u32)>, TmuxError> {
        Ok(Some((3, 3)))
    }
    fn kill_server(&self) -> Result<(), TmuxError> {
        Ok(())
    }
    fn socket_path(&self) -> PathBuf {
        PathBuf::from("/nonexistent")
    }
}

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
    world.fake.0.borrow_mut().during_new = Some(Box::new(move || {
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
    world.fake.0.borrow_mut().live.insert("a".into());
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
    world.fake.0.borrow_mut().live.insert("a".into());
    let before = fs::metadata(world.registry()).unwrap().modified().unwrap();
    let mut supervisor = world.supervisor();
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.0.borrow().calls, ["ensure", "ensure"]);
    assert_eq!(fs::metadata(world.registry()).unwrap().modified().unwrap(), before);
}
