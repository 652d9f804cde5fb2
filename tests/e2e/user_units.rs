//! The installed user units under a real systemd user manager (issue 18; 75-upgrades UP-2.4), when the test is
//! root (a `SKIP` line otherwise): a test account gets a manager of its own (`agent_box_tests::user_manager`),
//! agent-box is installed for it as README's "Install without Nix" says, both units are enabled and started, five
//! sessions are added and two dispatched; then a restart of the supervisor's unit, a `kill -9` of its main process
//! and a re-install (upgrade) each end no session, change no agent pid and write no lease outcome (UP02 under the
//! real manager); a restart of the tmux unit ends every session, the leased ones read `vanished`, and all come back
//! once (UP04); stopping both units leaves no process of the user, and the uninstall leaves no unit. About 25 s;
//! `--nocapture` shows the timings the issue asks for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_box_install::{TMUX_UNIT_NAME, UNIT_NAME};
use agent_box_tests::fixtures::{OutputAssertExt, with_stdin};
use agent_box_tests::sandbox::start_time;
use agent_box_tests::user_manager::installed::Installed;
use agent_box_tests::user_manager::{Skip, UserManager, cgroup};
use agent_box_tests::wait::wait_until_or;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

const SESSIONS: [&str; 5] = ["main", "s2", "s3", "s4", "s5"];

/// The sessions as they ran before a supervisor restart: each name's agent pid and its start time, and which names
/// hold a lease (the dispatched ones).
#[derive(Debug)]
struct Running {
    agents: BTreeMap<String, (u32, u64)>,
    leased: Vec<String>,
}

// UP02, UP04
#[test]
fn the_installed_user_units_hold_under_a_real_systemd_user_manager() {
    let manager = match UserManager::start() {
        Ok(manager) => manager,
        Err(Skip(why)) => {
            println!("SKIP user_units: {why}");
            return;
        }
    };
    let installed = Installed::prepare(&manager);
    let world = World { manager, installed };
    world.install_and_enable();
    let running = world.seven_sessions();
    let restart = world.keeps_every_session(&running, "systemctl --user restart agent-box.service", |_| {
        world.manager.systemctl_ok(&["restart", UNIT_NAME]);
    });
    let killed = world.keeps_every_session(&running, "kill -9 of its MainPID", |old| {
        kill(Pid::from_raw(i32::try_from(old).unwrap()), Signal::SIGKILL).unwrap();
    });
    let upgrade = world.keeps_every_session(&running, "a re-install (upgrade)", |_| world.upgrade());
    let back = world.tmux_unit_restart_respawns_once(&running);
    world.stop_both_leaves_no_process();
    world.uninstall();
    println!(
        "user_units timings: restart → first tick {}; kill -9 → first tick {}; \
         re-install + restart → first tick {}; tmux unit restart → all {} sessions back {}",
        secs(restart),
        secs(killed),
        secs(upgrade),
        running.agents.len(),
        secs(back)
    );
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The manager and what is installed under it.
struct World {
    manager: UserManager,
    installed: Installed,
}

impl World {
    /// What a failing wait shows: both units' status, the sessions, the user's processes and the logs.
    fn dump(&self) -> String {
        let properties = "ActiveState,SubState,Result,MainPID,NRestarts,ExecMainStatus";
        let status = self.manager.systemctl(&["show", "-p", properties, UNIT_NAME, TMUX_UNIT_NAME]);
        let ls = self.installed.command(&self.manager, "agent-box-session", &[]).arg("ls").output().unwrap();
        format!(
            "systemctl --user show {UNIT_NAME} {TMUX_UNIT_NAME}:\n{}\nagent-box-session ls:\n{}{}\n\
             processes of the user:\n{}\nsupervisor log:\n{}\nmanager log:\n{}",
            String::from_utf8_lossy(&status.stdout),
            String::from_utf8_lossy(&ls.stdout),
            String::from_utf8_lossy(&ls.stderr),
            self.manager.user_processes().join("\n"),
            self.installed.supervisor_log(),
            self.manager.manager_log()
        )
    }

    fn wait(&self, what: &str, done: impl FnMut() -> bool) {
        wait_until_or(what, agent_box_tests::deadline(), done, || self.dump());
    }

    /// README: `cargo xtask install`, `systemctl --user daemon-reload`, `systemctl --user enable --now` of both
    /// (with the test's log drop-in written before the reload). Waits for the supervisor's first tick.
    fn install_and_enable(&self) {
        let written = self.installed.install(&self.manager);
        let layout = &self.installed.layout;
        assert!(written.contains(&layout.unit_file) && written.contains(&layout.tmux_unit_file), "{written:?}");
        self.installed.write_log_drop_in(&self.manager);
        self.manager.systemctl_ok(&["daemon-reload"]);
        self.manager.systemctl_ok(&["enable", "--now", TMUX_UNIT_NAME, UNIT_NAME]);
        for unit in [TMUX_UNIT_NAME, UNIT_NAME] {
            assert_eq!(self.manager.property(unit, "UnitFileState"), "enabled", "{unit}\n{}", self.dump());
            assert_eq!(self.manager.property(unit, "ActiveState"), "active", "{unit}\n{}", self.dump());
        }
        let supervisor = self.manager.main_pid(UNIT_NAME);
        self.wait("the supervisor's first tick", || !self.installed.ticks_of(supervisor).is_empty());
        let log = self.installed.supervisor_log();
        assert_eq!(log.matches("started (tmux socket").count(), 1, "{log}");
    }

    /// Five sessions added with the installed wrapper, two dispatched through the installed webhook-spawn; all seven
    /// run in the tmux unit's cgroup, the dispatched ones with a lease.
    fn seven_sessions(&self) -> Running {
        for name in SESSIONS {
            self.installed.command(&self.manager, "agent-box-session", &[]).args(["add", name]).assert().success();
        }
        // The webhook receiver's state directory, where the spawner writes each dispatched session's claim filter.
        let webhook_state = self.manager.home().join(".local/state/local-webhook");
        self.manager.account().files_as(|| fs::create_dir_all(&webhook_state)).unwrap();
        for number in ["7", "8"] {
            let key = format!("acme/widgets#{number}");
            let meta = format!(r#"{{"number":"{number}"}}"#);
            let env = [
                ("LOCAL_WEBHOOK_SPAWN_KEY", key.as_str()),
                ("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*"),
                ("LOCAL_WEBHOOK_SPAWN_META", meta.as_str()),
            ];
            let cmd = self.installed.command(&self.manager, "agent-box-webhook-spawn", &env);
            with_stdin(cmd, format!("[github] issue #{number} opened on acme/widgets\n")).code(0);
        }
        let mut names = self.installed.registry_names();
        names.sort();
        let leased: Vec<String> = names.iter().filter(|n| n.starts_with("hook-")).cloned().collect();
        assert_eq!((names.len(), leased.len()), (7, 2), "{names:?}");
        self.wait("all seven agents started once", || names.iter().all(|n| self.installed.agent(n).starts() == 1));
        let tmux_cgroup = self.manager.property(TMUX_UNIT_NAME, "ControlGroup");
        let mut agents = BTreeMap::new();
        for name in &names {
            let pid = self.installed.agent(name).pid(1);
            assert_eq!(
                cgroup::unified_cgroup_of(pid).as_deref(),
                Some(tmux_cgroup.as_str()),
                "{name}\n{}",
                self.dump()
            );
            agents.insert(name.clone(), (pid, start_time(pid).unwrap()));
        }
        for name in &leased {
            let lease = self.installed.lease(name).unwrap_or_else(|| panic!("no lease for {name}"));
            assert!(lease.get("outcome").is_none_or(Value::is_null), "{name}: {lease}");
        }
        let ls = self.installed.ls(&self.manager);
        assert_eq!(ls["supervisor"], json!("running"), "{ls}");
        assert_eq!(self.installed.live(&self.manager), names, "ls shows exactly the registry live: {ls}");
        Running { agents, leased }
    }
}

impl World {
    /// Runs `act` (given the supervisor's main pid) and checks that a new supervisor took over while every session
    /// kept running: the same agent processes, no start, no lease outcome, no hook-log line, no vanished pane, over
    /// three ticks of the new supervisor. Returns the time from `act` to the new supervisor's first tick.
    fn keeps_every_session(&self, running: &Running, what: &str, act: impl FnOnce(u32)) -> Duration {
        let old = self.manager.main_pid(UNIT_NAME);
        let (log_before, hook_log_before) = (self.installed.supervisor_log().len(), self.installed.hook_log());
        let t0 = SystemTime::now();
        act(old);
        let mut new = 0;
        self.wait(&format!("a new supervisor's first tick after {what}"), || {
            new = self.manager.main_pid(UNIT_NAME);
            new != 0 && new != old && !self.installed.ticks_of(new).is_empty()
        });
        let first_tick = self.installed.ticks_of(new)[0];
        self.wait(&format!("three ticks of the new supervisor after {what}"), || {
            self.installed.ticks_of(new).len() >= 3
        });
        for (name, &(pid, started)) in &running.agents {
            assert_eq!(self.installed.agent(name).starts(), 1, "{what}: {name} was started again\n{}", self.dump());
            assert_eq!(
                start_time(pid),
                Some(started),
                "{what}: {name}'s agent (pid {pid}) still runs\n{}",
                self.dump()
            );
        }
        let live = self.installed.live(&self.manager);
        assert_eq!(live, running.agents.keys().cloned().collect::<Vec<_>>(), "{what}: every session is live");
        for name in &running.leased {
            let lease = self.installed.lease(name).unwrap();
            assert!(lease.get("outcome").is_none_or(Value::is_null), "{what}: no outcome for {name}: {lease}");
        }
        assert_eq!(self.installed.hook_log(), hook_log_before, "{what}: no hook-log line");
        let log = self.installed.supervisor_log()[log_before..].to_owned();
        assert!(!log.contains("vanished") && !log.contains("started '"), "{what}: the new supervisor's log:\n{log}");
        let from = t0.duration_since(UNIX_EPOCH).unwrap().as_nanos();
        Duration::from_nanos(u64::try_from(first_tick.saturating_sub(from)).unwrap())
    }

    /// README's upgrade: `cargo xtask install` again (each program replaced in place by a rename), `daemon-reload`,
    /// `restart agent-box.service`.
    fn upgrade(&self) {
        let supervisor = self.installed.layout.bin.join("agent-box-supervisor");
        let inode = fs::metadata(&supervisor).unwrap().ino();
        self.installed.install(&self.manager);
        assert_ne!(fs::metadata(&supervisor).unwrap().ino(), inode, "the re-install replaced the supervisor");
        self.manager.systemctl_ok(&["daemon-reload"]);
        self.manager.systemctl_ok(&["restart", UNIT_NAME]);
    }

    /// `restart agent-box-tmux.service` ends every session; the supervisor (not restarted) marks the leased ones
    /// `vanished` and starts all of them again, once, in the new server. Returns the time from the restart until the
    /// last of them had started.
    fn tmux_unit_restart_respawns_once(&self, running: &Running) -> Duration {
        let supervisor = self.manager.main_pid(UNIT_NAME);
        let server = self.manager.main_pid(TMUX_UNIT_NAME);
        let t0 = SystemTime::now();
        self.manager.systemctl_ok(&["restart", TMUX_UNIT_NAME]);
        let names: Vec<&String> = running.agents.keys().collect();
        self.wait("every session started again", || names.iter().all(|n| self.installed.agent(n).starts() == 2));
        let back = names.iter().filter_map(|n| self.installed.agent(n).started_at(2)).max().unwrap();
        let ticks = self.installed.ticks_of(supervisor).len();
        self.wait("two more ticks", || self.installed.ticks_of(supervisor).len() >= ticks + 2);
        assert_eq!(self.manager.main_pid(UNIT_NAME), supervisor, "the supervisor's unit was not restarted");
        assert_ne!(self.manager.main_pid(TMUX_UNIT_NAME), server, "a new server");
        let tmux_cgroup = self.manager.property(TMUX_UNIT_NAME, "ControlGroup");
        for name in &names {
            let (pid, started) = running.agents[*name];
            assert_ne!(start_time(pid), Some(started), "{name}'s first agent (pid {pid}) ended with the server");
            let agent = self.installed.agent(name);
            assert_eq!(agent.starts(), 2, "{name} came back once\n{}", self.dump());
            assert_eq!(cgroup::unified_cgroup_of(agent.pid(2)).as_deref(), Some(tmux_cgroup.as_str()), "{name}");
        }
        let all: Vec<String> = running.agents.keys().cloned().collect();
        assert_eq!(self.installed.live(&self.manager), all, "every session is live again\n{}", self.dump());
        let log = self.installed.supervisor_log();
        for name in &running.leased {
            assert_eq!(self.installed.lease(name).unwrap()["outcome"], json!("vanished"), "{name}\n{log}");
            assert_eq!(log.matches(&format!("'{name}' vanished")).count(), 1, "{name}\n{log}");
        }
        back.duration_since(t0).unwrap_or_default()
    }

    /// README's "Stopping everything": afterwards no process of the user is left but its manager.
    fn stop_both_leaves_no_process(&self) {
        self.manager.systemctl_ok(&["stop", UNIT_NAME, TMUX_UNIT_NAME]);
        for unit in [UNIT_NAME, TMUX_UNIT_NAME] {
            assert_eq!(self.manager.property(unit, "ActiveState"), "inactive", "{unit}\n{}", self.dump());
        }
        let left = self.manager.user_processes();
        assert!(left.is_empty(), "processes of the user after the stop:\n{}", left.join("\n"));
    }

    /// `cargo xtask uninstall`: `disable --now` of both units, then the files the manifest lists; the manager then
    /// knows no agent-box unit, and the registry stays.
    fn uninstall(&self) {
        self.manager.systemctl_ok(&["disable", "--now", UNIT_NAME, TMUX_UNIT_NAME]);
        let removed = self.installed.uninstall(&self.manager);
        let layout = &self.installed.layout;
        assert!(removed.contains(&layout.unit_file) && removed.contains(&layout.tmux_unit_file), "{removed:?}");
        self.manager.systemctl_ok(&["daemon-reload"]);
        // Exit 1 when nothing matches, which is the point.
        let files = self.manager.systemctl(&["list-unit-files", "--no-pager", "agent-box*"]);
        let listed = String::from_utf8_lossy(&files.stdout).into_owned();
        assert!(listed.contains("0 unit files listed."), "after the uninstall the manager still lists:\n{listed}");
        assert!(self.installed.registry().is_file(), "the registry stays");
        assert!(self.manager.user_processes().is_empty(), "{:?}", self.manager.user_processes());
    }
}
