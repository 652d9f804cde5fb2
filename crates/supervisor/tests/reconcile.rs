//! The reconcile loop against an in-memory fake tmux (30-supervisor §18 unit layer): the post-check kill, the
//! lock refusal that skips every later locked section, and the unlocked admission pre-check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use agent_box_tests::fake_tmux::FakeTmux;
use serde_json::json;
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
        self.supervisor_with(None)
    }
    /// With `AGENT_BOX_TMUX_SERVER` set to `server` (75-upgrades UP-3.1).
    fn supervisor_with(&self, server: Option<&'static str>) -> Supervisor {
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
                "AGENT_BOX_TMUX_SERVER" => server?.to_owned(),
                _ => return None,
            };
            Some(value.into())
        };
        let config = Config::from_lookup(env).unwrap();
        Supervisor::new(config, Box::new(self.fake.clone()), Log::capturing())
    }
    fn side_dir(&self) -> PathBuf {
        self.home().join(".local/state/agent-box/session")
    }
    fn side_file(&self, name: &str, text: &str) {
        fs::create_dir_all(self.side_dir()).unwrap();
        fs::write(self.side_dir().join(format!("{name}.json")), format!("{text}\n")).unwrap();
    }
    fn read_side_file(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.side_dir().join(format!("{name}.json"))).ok()
    }
    /// A live pane `name` whose session environment holds `AGENT_BOX_SESSION_ID=launch` when given.
    fn live_pane(&self, name: &str, launch: Option<&str>) {
        let mut state = self.fake.state();
        state.live.push(name.into());
        let env = launch.map(|id| vec![("AGENT_BOX_SESSION_ID".to_owned(), id.to_owned())]).unwrap_or_default();
        state.env.insert(name.into(), env);
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
        agent_box_tests::wait_until("the holder to take the lock", || {
            registry::with_file_lock(&lock, std::time::Duration::ZERO, false, |_| ()).is_err()
        });
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
    let world = World::new(&format!(r#"{{"version":1,"sessions":{{"a":{{"agent":"tool","life":"{LIFE_A}"}}}}}}"#));
    world.fake.state().live.push("a".into());
    world.side_file("a", &format!(r#"{{"life":"{LIFE_A}","launchSessionId":"{LAUNCH_A}"}}"#));
    let before = fs::metadata(world.registry()).unwrap().modified().unwrap();
    let mut supervisor = world.supervisor();
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.state().calls, ["ensure", "ensure"]);
    assert_eq!(fs::metadata(world.registry()).unwrap().modified().unwrap(), before);
}

const LAUNCH_A: &str = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
const LIFE_A: &str = "3e9b6f3b-9d84-4eb1-8d6b-5caf4f7b8d23";
const LAUNCH_C: &str = "1c7f4d1f-7b62-4c9f-8b4f-3a8e2d5f6b01";
const BOX_ID_D: &str = "2d8a5e2a-8c73-4da0-9c5a-4b9f3e6a7c12";

/// 30 §2 step 6a (new): the first tick records live panes of listed, unstopped entries whose side file has no
/// launch id, with the launch id of the pane's environment (else a UUID `boxSessionId`) and the lease gen, and
/// writes the mirrors of a first spawn; stopped entries, recorded panes and panes with no knowable id are left
/// alone, and later ticks never ask again.
#[test]
fn sup_2_6a_unrecorded_live_panes_are_adopted_once_at_start_up() {
    let world = World::new(&format!(
        r#"{{"version":1,"sessions":{{"a":{{"agent":"tool","initialPrompt":"go"}},"b":{{"agent":"tool","stopped":true}},"c":{{"agent":"tool"}},"d":{{"agent":"tool","hasRun":true,"boxSessionId":"{BOX_ID_D}"}},"e":{{"agent":"tool"}}}}}}"#
    ));
    world.live_pane("a", Some(LAUNCH_A));
    world.live_pane("b", Some(LAUNCH_A));
    world.live_pane("c", Some(LAUNCH_A));
    world.live_pane("d", None);
    world.live_pane("e", Some("not-a-uuid"));
    world.side_file("c", &format!(r#"{{"launchSessionId":"{LAUNCH_C}"}}"#));
    let leases = lease::LeaseDir::new(world.home().join(".local/state/agent-box/lease"));
    let lease_gen = leases.create(&base::SessionName::parse("a").unwrap(), "github:x/y", None, None).unwrap();
    let mut supervisor = world.supervisor();
    supervisor.tick();
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(world.registry()).unwrap()).unwrap();
    let life = |name: &str| doc["sessions"][name]["life"].as_str().unwrap().to_owned();
    assert_eq!(life("a"), lease_gen.to_string(), "issue 17: an entry without a life takes its lease's gen");
    let side_a = format!(r#"{{"life":"{lease_gen}","launchSessionId":"{LAUNCH_A}","leaseGen":"{lease_gen}"}}"#);
    assert_eq!(world.read_side_file("a"), Some(format!("{side_a}\n")));
    assert_eq!(world.read_side_file("b"), None, "a stopped entry is not adopted");
    let side_c = format!(r#"{{"life":"{}","launchSessionId":"{LAUNCH_C}"}}"#, life("c"));
    assert_eq!(world.read_side_file("c"), Some(side_c + "\n"), "an older side file joins the entry's life");
    let side_d = format!(r#"{{"life":"{}","launchSessionId":"{BOX_ID_D}"}}"#, life("d"));
    assert_eq!(world.read_side_file("d"), Some(side_d + "\n"));
    assert_eq!(world.read_side_file("e"), None, "no knowable launch id");
    let a = &doc["sessions"]["a"];
    assert_eq!((&a["hasRun"], &a["boxSessionId"], &a["initialPrompt"]), (&json!(true), &json!(LAUNCH_A), &json!(null)));
    assert_eq!(World::lines_with(&supervisor, "was already running but its start was never recorded"), 2);
    let asked = world.fake.calls("env");
    supervisor.tick();
    assert_eq!(world.fake.calls("env"), asked, "only the first tick looks");
    assert_eq!(world.fake.calls("new"), 0);
}

/// Issue 12: the session-closed wake costs one `set-hook` call per server, never one per tick: installed on the first
/// tick, not again while the server's pid stays, again on a new server; a refusal is logged once per server.
#[test]
fn the_wake_is_installed_once_per_server() {
    let world = World::new(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    world.fake.state().live.push("a".into());
    // A recorded launch, so the first tick's adoption (§2 step 6a) has nothing to ask.
    world.side_file("a", &format!(r#"{{"launchSessionId":"{LAUNCH_A}"}}"#));
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

#[test]
fn up_3_1_an_external_server_that_is_down_is_waited_for_with_one_line_and_nothing_done() {
    let world = World::new(
        r#"{"version":1,"sessions":{"a":{"agent":"tool"},"r":{"agent":"tool","stopped":true,"ephemeral":true}}}"#,
    );
    world.fake.state().unreachable = Some(tmux::TmuxError::NoServer);
    let mut supervisor = world.supervisor_with(Some("external"));
    for _ in 0..3 {
        supervisor.tick();
    }
    assert_eq!(world.fake.state().calls, ["probe", "probe", "probe"], "listed only, never ensured");
    let waiting = "tmux server is not running; its unit starts it \u{2014} waiting";
    assert_eq!(supervisor.log().lines(), [waiting], "one line per streak, no L2");
    assert!(fs::read_to_string(world.registry()).unwrap().contains("\"r\""), "no reap while the server is down");

    world.fake.state().unreachable = None;
    supervisor.tick();
    assert_eq!(world.fake.calls("new a"), 1, "{:?}", supervisor.log().lines());
    assert_eq!(World::lines_with(&supervisor, "tmux is reachable again"), 1);
    world.fake.state().unreachable = Some(tmux::TmuxError::SocketDirMissing(world.home()));
    supervisor.tick();
    supervisor.tick();
    assert_eq!(World::lines_with(&supervisor, waiting), 2, "a new streak, one more line");
}

#[test]
fn up_3_1_other_trouble_with_an_external_server_is_still_l2() {
    let world = World::new(r#"{"version":1,"sessions":{}}"#);
    world.fake.state().unreachable = Some(tmux::TmuxError::Timeout);
    let mut supervisor = world.supervisor_with(Some("external"));
    supervisor.tick();
    assert_eq!(World::lines_with(&supervisor, "cannot reach tmux (tmux timed out)"), 1);
}

#[test]
fn up_3_2_every_new_session_carries_the_unit_variables_after_the_pane_s_own() {
    let world = World::new(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    let mut supervisor = world.supervisor();
    let mut config = supervisor.config().clone();
    config.unit_env = vec![
        ("AGENT_BOX_MARK_STOPPED".to_owned(), "/etc/agent-box/users/agent/mark-stopped".to_owned()),
        ("AGENT_BOX_SESSION_ID".to_owned(), "not-this-one".to_owned()),
        ("PATH".to_owned(), "/new/bin:/usr/bin".to_owned()),
    ];
    supervisor = Supervisor::new(config, Box::new(world.fake.clone()), Log::capturing());
    supervisor.tick();
    assert_eq!(world.fake.calls("new a"), 1, "{:?}", supervisor.log().lines());
    let started = world.fake.state().started.clone();
    let env: Vec<(&str, &str)> = started[0].env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(env.len(), 3, "{env:?}");
    assert_eq!(env[0].0, "AGENT_BOX_SESSION_ID");
    assert_ne!(env[0].1, "not-this-one", "the pane's own id wins over an inherited one");
    assert_eq!(
        env[1..],
        [("AGENT_BOX_MARK_STOPPED", "/etc/agent-box/users/agent/mark-stopped"), ("PATH", "/new/bin:/usr/bin")]
    );
}

#[test]
fn the_unit_env_is_path_and_agent_box_variables_but_identity_lock_and_mode() {
    use std::os::unix::ffi::OsStringExt;
    let pair = |k: &str, v: &str| (OsString::from(k), OsString::from(v));
    let vars = vec![
        pair("HOME", "/home/agent"),
        pair("PATH", "/opt/bin:/usr/bin"),
        pair("AGENT_BOX_MARK_STOPPED", "/etc/agent-box/users/agent/mark-stopped"),
        pair("AGENT_BOX_AGENTS", "claude shell"),
        pair("AGENT_BOX_CLAUDE_SETTINGS", "#{pane_pid} $(id)"),
        pair("AGENT_BOX_WEBHOOK_REPO", ""),
        pair("AGENT_BOX_REGISTRY_LOCK_FD", "7"),
        pair("AGENT_BOX_SESSION_ID", "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90"),
        pair("AGENT_BOX_PROFILE", "work"),
        pair("AGENT_BOX_TMUX_SERVER", "external"),
        pair("TMUX", "/tmp/tmux-0/default,1,0"),
        pair("LOCAL_WEBHOOK_STATE_DIR", "/x"),
        pair("AGENT_BOX_HOST_LABEL", "box"),
        (OsString::from("AGENT_BOX_ENV_EXEC"), OsString::from_vec(vec![b'/', 0xff])),
    ];
    let carried = supervisor::config::unit_env(vars);
    let names: Vec<&str> = carried.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "AGENT_BOX_AGENTS",
            "AGENT_BOX_CLAUDE_SETTINGS",
            "AGENT_BOX_HOST_LABEL",
            "AGENT_BOX_MARK_STOPPED",
            "AGENT_BOX_WEBHOOK_REPO",
            "PATH"
        ],
        "sorted; the lock, a pane's identity, the mode, other names and non-UTF-8 values are left out"
    );
    assert_eq!(carried[1].1, "#{pane_pid} $(id)", "values verbatim: tmux passes -e values literally (TMX-2)");
}

/// UP-3.1 with issue 12's wake: an external server gets the session-closed hook on the first tick it answers (not
/// while it is down), once, and again when its unit restarted it (a new pid).
#[test]
fn up_3_1_the_wake_is_installed_when_an_external_server_appears() {
    let world = World::new(r#"{"version":1,"sessions":{}}"#);
    world.fake.state().unreachable = Some(tmux::TmuxError::NoServer);
    let mut supervisor = world.supervisor_with(Some("external"));
    let hook = tmux::WakeHook::for_file(&world.home().join(".local/state/agent-box/tmux-wake")).unwrap();
    supervisor.enable_wake(hook);
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.calls("hook"), 0, "no server, nothing to hook");
    world.fake.state().unreachable = None;
    supervisor.tick();
    supervisor.tick();
    assert_eq!(world.fake.calls("hook"), 1, "the server that appeared is hooked once");
    world.fake.state().server_pid = Some(5000);
    supervisor.tick();
    assert_eq!(world.fake.calls("hook"), 2, "a server its unit restarted is hooked again");
    assert_eq!(world.fake.calls("ensure"), 0, "an external server is never started");
}

const LIFE_Z: &str = "4f0c7a4c-0e95-4fc2-9e7c-6db05a8c9e34";

/// Issue 17 L-9: the side file and the registry record a start before `new-session` runs (a supervisor killed
/// right after it leaves a recorded launch), and `died` is gone before the new pane exists.
#[test]
fn a_start_is_recorded_before_new_session_runs() {
    let world = World::new(&format!(
        r#"{{"version":1,"sessions":{{"z":{{"agent":"tool","initialPrompt":"go","life":"{LIFE_Z}","died":3}}}}}}"#
    ));
    let (home, registry) = (world.home(), world.registry());
    let seen = std::rc::Rc::new(std::cell::RefCell::new(None));
    let during = seen.clone();
    world.fake.state().during_new = Some(Box::new(move || {
        let side = fs::read_to_string(home.join(".local/state/agent-box/session/z.json")).ok();
        let doc: serde_json::Value = serde_json::from_slice(&fs::read(&registry).unwrap()).unwrap();
        *during.borrow_mut() = Some((side, doc["sessions"]["z"].clone()));
    }));
    world.supervisor().tick();
    let (side, entry) = seen.borrow_mut().take().expect("new-session ran");
    let side: serde_json::Value = serde_json::from_str(&side.expect("a side file before new-session")).unwrap();
    assert_eq!(side["life"], json!(LIFE_Z));
    assert_eq!(side["launchSessionId"], entry["boxSessionId"]);
    assert_eq!((&entry["hasRun"], &entry["initialPrompt"]), (&json!(true), &json!(null)));
    assert!(entry.get("died").is_none(), "died belongs to the pane that died: {entry}");
}

/// Issue 17 L-9: a failed `new-session` puts the intent back: registry byte-identical, no side file.
#[test]
fn a_failed_new_session_takes_the_intent_back() {
    let world = World::new(&format!(
        r#"{{"version":1,"sessions":{{"z":{{"agent":"tool","initialPrompt":"go","life":"{LIFE_Z}","died":3}}}}}}"#
    ));
    let before = fs::read(world.registry()).unwrap();
    world.fake.state().new_refusal = Some(tmux::TmuxError::Failed { status: Some(1), stderr: "no space".into() });
    let mut supervisor = world.supervisor();
    supervisor.tick();
    assert_eq!(world.fake.calls("new z"), 1);
    let compact = |bytes: &[u8]| serde_json::to_string(&serde_json::from_slice::<serde_json::Value>(bytes).unwrap());
    let after = fs::read(world.registry()).unwrap();
    assert_eq!(compact(&after).unwrap(), compact(&before).unwrap(), "the four keys as they were, in their order");
    assert_eq!(world.read_side_file("z"), None, "no launch recorded for a pane that never started");
}

/// Issue 17 L-1, L-2: an entry without a life whose side file names one is a new life (a co-writer replaced the
/// entry): a fresh life, and the side file says nothing, so it is a first start with its own id and prompt.
#[test]
fn an_entry_without_a_life_beside_another_lifes_side_file_is_a_new_life() {
    let fresh_id = "5a1d8b5d-1fa6-4ad3-8f8d-7ec16b9d0f45";
    let world = World::new(&format!(
        r#"{{"version":1,"sessions":{{"z":{{"agent":"tool","initialPrompt":"new work","hasRun":false,"boxSessionId":"{fresh_id}"}}}}}}"#
    ));
    world.side_file("z", &format!(r#"{{"life":"{LIFE_Z}","launchSessionId":"{LAUNCH_A}"}}"#));
    world.supervisor().tick();
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(world.registry()).unwrap()).unwrap();
    let life = doc["sessions"]["z"]["life"].as_str().unwrap().to_owned();
    assert!(base::is_uuid(&life) && life != LIFE_Z, "{life}");
    let started = world.fake.state().started.clone();
    let request = started.first().expect("started");
    let id = request.env.iter().find(|(k, _)| k == "AGENT_BOX_SESSION_ID").map(|(_, v)| v.clone());
    assert_eq!(id.as_deref(), Some(fresh_id), "the new life's own id, not the old launch");
    let side = world.read_side_file("z").unwrap();
    assert!(side.contains(&life) && side.contains(fresh_id), "{side}");
}

/// Issue 17 L-1, L-5: a lease marked orphaned (its life was delisted) is not given to an entry without a life.
#[test]
fn an_orphaned_lease_is_never_taken_over_by_a_new_entry() {
    let world = World::new(r#"{"version":1,"sessions":{"hook-z":{"agent":"tool"}}}"#);
    let leases = lease::LeaseDir::new(world.home().join(".local/state/agent-box/lease"));
    let name = base::SessionName::parse("hook-z").unwrap();
    let old = leases.create(&name, "github:x/y", None, None).unwrap();
    leases.mark_orphaned(&name, &old).unwrap();
    world.supervisor().tick();
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(world.registry()).unwrap()).unwrap();
    assert_ne!(doc["sessions"]["hook-z"]["life"], json!(old.to_string()));
    let side = world.read_side_file("hook-z").unwrap();
    assert!(!side.contains("leaseGen"), "the old lease is not this pane's: {side}");
}

/// A hook entry of life `LIFE_Z`, never started, whose lease (gen `LIFE_Z`) carries an operator's restart mark
/// (a `restart` of the entry while it was stopped, before its first start): what the start must take.
fn marked_world() -> (World, lease::LeaseDir, base::SessionName) {
    let world = World::new(&format!(r#"{{"version":1,"sessions":{{"hook-z":{{"agent":"tool","life":"{LIFE_Z}"}}}}}}"#));
    let leases = lease::LeaseDir::new(world.home().join(".local/state/agent-box/lease"));
    let name = base::SessionName::parse("hook-z").unwrap();
    let expect = lease::Expect::Gen(lease::Gen::parse(LIFE_Z).unwrap());
    leases.create_with_gen(&name, "github:x/y", None, lease::Gen::parse(LIFE_Z).unwrap(), None).unwrap();
    leases.record_restart(&name, &expect, None).unwrap();
    (world, leases, name)
}

fn restart_pending(leases: &lease::LeaseDir, name: &base::SessionName) -> bool {
    matches!(leases.read(name), lease::LeaseState::Present(lease) if lease.restart_pending())
}

/// Issue 25 L-15: a start takes the restart mark of the lease its pane is bound to, so no mark outlives the start
/// it was for (here a first start, which no D12 precedes), and says that the absence was the operator's restart.
#[test]
fn a_start_takes_the_restart_mark_of_its_lease() {
    let (world, leases, name) = marked_world();
    let mut supervisor = world.supervisor();
    supervisor.tick();
    assert_eq!(world.fake.calls("new hook-z"), 1);
    assert!(!restart_pending(&leases, &name), "the mark outlived the start it was for");
    assert_eq!(World::lines_with(&supervisor, "'hook-z' was restarted by the operator"), 1, "{:?}", supervisor.log());
    world.fake.state().live.clear();
    supervisor.tick();
    assert_eq!(leases.outcome(&name), Some(lease::Outcome::Vanished), "the loss of the new pane is a loss");
}

/// Issue 25 L-15: the mark is part of the intent: a start that cannot take it (lease lock busy) does not happen,
/// with the side file and the registry as they were; a start whose `new-session` fails puts it back.
#[test]
fn a_start_that_cannot_take_its_restart_mark_does_not_happen_and_a_failed_one_puts_it_back() {
    let (world, leases, name) = marked_world();
    let before = fs::read(world.registry()).unwrap();
    let held = agent_box_tests::HeldLock::now(&world.home().join(".local/state/agent-box/lease/.lock"));
    let mut supervisor = world.supervisor();
    supervisor.tick();
    drop(held);
    assert_eq!(world.fake.calls("new hook-z"), 0, "a pane started while its restart mark stayed");
    assert!(restart_pending(&leases, &name));
    let lines = supervisor.log().lines();
    assert!(lines.iter().any(|l| l.contains("session 'hook-z': cannot write") && l.contains("busy")), "{lines:?}");
    let doc = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).unwrap()["sessions"]["hook-z"].clone();
    let mut after = doc(&fs::read(world.registry()).unwrap());
    after.as_object_mut().unwrap().remove("life");
    let mut expected = doc(&before);
    expected.as_object_mut().unwrap().remove("life");
    assert_eq!(after, expected, "the intent was taken back");
    assert_eq!(world.read_side_file("hook-z"), None);

    world.fake.state().new_refusal = Some(tmux::TmuxError::Failed { status: Some(1), stderr: "no space".into() });
    supervisor.tick();
    assert_eq!(world.fake.calls("new hook-z"), 1);
    assert!(restart_pending(&leases, &name), "a start that did not happen took the mark for good");
}
