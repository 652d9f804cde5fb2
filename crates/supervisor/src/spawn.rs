//! Starting a session (SUP-6, SUP-7): admission pre-check and preparation without the lock, then one
//! registry-lock section holding pre-check, admission, launch file, `new-session`, post-check and record.

use std::collections::BTreeSet;

use base::SessionName;
use registry::capacity::{Mode, admit, read_limit};
use registry::store::read_for_write;
use registry::{CapacityError, Document, Entry, RegistryLock};
use serde_json::{Map, Value};
use tmux::{NewSession, TmuxError};

use crate::backoff::Backoff;
use crate::launch::{
    GenArg, HarnessKind, PrepareError, Prepared, SpawnKind, gen_argument, prepare, render_script, tmux_command,
};
use crate::messages;
use crate::side::{SideFile, SideFileIo};
use crate::supervisor::{Supervisor, Tick};

impl Supervisor {
    /// SUP-6.2 pre-check and SUP-6 preparation, then the locked section.
    pub(crate) fn begin_start(
        &mut self,
        tick: &mut Tick,
        doc: &Document,
        name: &SessionName,
        entry: Entry<'_>,
        side: &SideFile,
    ) {
        let shell = entry.agent() == Some("shell");
        if !shell && tick.snapshot.as_ref().is_some_and(|live| !self.admits(doc.sessions(), live, name)) {
            return;
        }
        let Some(prepared) = self.prepare_logged(name, entry, side) else { return };
        if tick.lock_refused {
            return;
        }
        self.note_env_store(&prepared);
        self.locked(tick, |me, tick, guard| me.locked_start(tick, guard, &prepared, side));
    }

    /// Spawn-mode admission; a refusal or an unevaluable policy logs L5 once per waiting streak.
    fn admits(&mut self, sessions: &Map<String, Value>, live: &BTreeSet<String>, name: &SessionName) -> bool {
        let decision = read_limit(self.config.paths.limit_file(), self.config.paths.meminfo_file())
            .and_then(|limit| admit(sessions, live, limit, &[name.as_str()], Mode::Spawn));
        self.note_admission(name, decision.err())
    }

    fn note_admission(&mut self, name: &SessionName, refusal: Option<CapacityError>) -> bool {
        match refusal {
            None => true,
            Some(err) => {
                if self.latches.waiting.raise(name.as_str()) {
                    self.log.line(&messages::waiting(name, err));
                }
                false
            }
        }
    }

    /// Preparation with its once-per-streak lines (L6, L14, L16, L17).
    fn prepare_logged(&mut self, name: &SessionName, entry: Entry<'_>, side: &SideFile) -> Option<Prepared> {
        match prepare(&self.config, name, entry, side) {
            Ok(prepared) => {
                self.latches.not_installed.clear(name.as_str());
                self.latches.problem.clear(name.as_str());
                self.note_cwd(name, prepared.cwd_fallback.as_deref());
                if prepared.codex_remote_control_ignored && self.latches.codex_remote.insert(name.to_string()) {
                    self.log.warn(&messages::codex_remote_control_ignored(name));
                }
                Some(prepared)
            }
            Err(PrepareError::NotInstalled(agent)) => {
                if self.latches.not_installed.raise(name.as_str()) {
                    self.log.warn(&messages::agent_not_installed(name, &agent));
                    self.note_harness_missing(name, &agent, side);
                }
                None
            }
            Err(PrepareError::Fatal(problem)) => {
                if self.latches.problem.raise(name.as_str()) {
                    self.log.warn(&messages::entry_problem(name, &problem));
                }
                None
            }
        }
    }

    /// Issue 20: what the pane's loader will find in the env store, said in the log (the pane itself reads the
    /// store when it starts; only key names are looked at here, no value is kept). A missing or unreadable store
    /// is one line per streak; a key the pane's own variables always win over is one line per key per process.
    fn note_env_store(&mut self, prepared: &Prepared) {
        let path = registry::envstore::store_path(self.config.paths.home());
        match registry::envstore::read(&path) {
            Ok(Some(store)) => {
                self.latches.env_store_missing.clear();
                self.latches.env_store_unreadable.clear();
                let own = |key: &str| prepared.env.iter().any(|(k, _)| k == key);
                for key in store.keys().into_iter().filter(|k| registry::envstore::is_reserved(k) || own(k)) {
                    if self.latches.env_store_overrides.insert(key.clone()) {
                        self.log.warn(&messages::env_store_override(&path, &key));
                    }
                }
            }
            Ok(None) => {
                self.latches.env_store_unreadable.clear();
                if self.latches.env_store_missing.raise() {
                    self.log.line(&messages::env_store_missing(&path));
                }
            }
            Err(err) => {
                self.latches.env_store_missing.clear();
                if self.latches.env_store_unreadable.raise() {
                    self.log.warn(&messages::env_store_unreadable(&err));
                }
            }
        }
    }

    fn note_cwd(&mut self, name: &SessionName, fallback: Option<&str>) {
        match fallback {
            Some(dir) if self.latches.cwd_unusable.raise(name.as_str()) => {
                let home = self.config.paths.home().display().to_string();
                self.log.warn(&messages::cwd_unusable(name, dir, &home));
            }
            Some(_) => {}
            None => self.latches.cwd_unusable.clear(name.as_str()),
        }
    }

    /// SUP-7.1 steps 2–9 under `guard`, with the intent of issue 17: the side file and the registry record the
    /// spawn before `new-session` runs, and are put back when it fails. The intent also takes the restart mark of
    /// the pane's lease (L-15, issue 25), under the lease lock inside this section: registry → lease.
    fn locked_start(&mut self, tick: &mut Tick, guard: &RegistryLock, prepared: &Prepared, side: &SideFile) {
        let name = &prepared.name;
        let Ok(mut fresh) = read_for_write(guard.registry()) else { return };
        let Some(entry) = fresh.entry(name.as_str()).filter(|e| !e.stopped()) else { return };
        if !same_start(entry.raw(), &prepared.entry) {
            // Issue 17 row 10: the entry changed (another life, a new prompt) while this start was prepared from
            // the tick document; its write woke the loop, and the next tick prepares again from what is there now.
            self.log.line(&messages::changed_while_preparing(name));
            return;
        }
        let shell = prepared.harness.kind == HarnessKind::Shell;
        if !shell && !self.admits_in_lock(tick, &fresh, name) {
            return;
        }
        self.latches.waiting.clear(name.as_str());
        let (gen_arg, lease_gen) = gen_argument(&self.leases.read(name), prepared.life.as_deref());
        if !self.write_launch_file(prepared, &gen_arg) {
            return;
        }
        let recorded = SideFile {
            life: prepared.life.clone(),
            launch_session_id: Some(prepared.bid.clone()),
            lease_gen: lease_gen.clone(),
            ..SideFile::default()
        };
        let Some(undo) = self.record_intent(guard, &mut fresh, prepared, side, &recorded) else { return };
        let request = NewSession {
            name: name.clone(),
            cwd: prepared.cwd.clone(),
            env: self.pane_env(prepared),
            argv: tmux_command(&self.config.paths.launch_file(name)),
        };
        let pane_pid = match self.tmux.new_session(&request) {
            Ok(pid) => pid,
            Err(err) => {
                self.undo_intent(guard, name, undo);
                self.note_spawn_failure(name, &err);
                return;
            }
        };
        self.latches.spawn_failed.clear(name.as_str());
        if let Some(probed) = tick.probed.as_mut() {
            probed.insert(name.to_string());
        }
        let took_restart_mark = undo.took_restart_mark();
        match self.after_spawn(tick, guard, prepared) {
            true => {
                // L-15: the absence this start ends was the operator's restart, which D12 could not tell (L-13).
                if took_restart_mark {
                    self.log.line(&messages::restarted_by_operator(name));
                }
                self.log_spawn(prepared, pane_pid, lease_gen.as_deref());
            }
            // The post-check killed the new pane: the start did not happen, so its intent is taken back.
            false => self.undo_intent(guard, name, undo),
        }
    }

    /// SUP-7.1 step 4's write of the launch file; false (after L15) when it failed.
    fn write_launch_file(&mut self, prepared: &Prepared, gen_arg: &GenArg) -> bool {
        let name = &prepared.name;
        let launch_file = self.config.paths.launch_file(name);
        let mut script = render_script(&self.config, prepared, gen_arg);
        script.push(b'\n');
        let written = registry::ensure_private_dir(&self.config.paths.side_dir())
            .and_then(|()| registry::write_atomic(&launch_file, &script).map(drop));
        match written {
            Ok(()) => true,
            Err(err) => {
                if self.latches.write_failed.raise(name.as_str()) {
                    self.log.error(&messages::cannot_write(name, launch_file.display(), err));
                }
                false
            }
        }
    }

    /// §12.7's variables of this pane, then the unit's (UP-3.2): a tmux server keeps the environment it started
    /// with and may be older than this supervisor, so what the unit sets now reaches the pane only this way.
    fn pane_env(&self, prepared: &Prepared) -> Vec<(String, String)> {
        let own = |key: &String| prepared.env.iter().any(|(k, _)| k == key);
        let unit = self.config.unit_env.iter().filter(|(key, _)| !own(key)).cloned();
        prepared.env.iter().cloned().chain(unit).collect()
    }

    /// SUP-7.1 step 3 against a live set probed after the lock was taken (reused for the rest of the tick).
    fn admits_in_lock(&mut self, tick: &mut Tick, fresh: &Document, name: &SessionName) -> bool {
        if tick.probed.is_none() {
            match self.tmux.list_sessions() {
                Ok(names) => tick.probed = Some(names.into_iter().collect()),
                Err(err) => {
                    return self.note_admission(name, Some(CapacityError::Probe(err.reason())));
                }
            }
        }
        let live = tick.probed.clone().unwrap_or_default();
        self.admits(fresh.sessions(), &live, name)
    }

    fn note_spawn_failure(&mut self, name: &SessionName, err: &TmuxError) {
        if *err == TmuxError::DuplicateSession {
            return;
        }
        if self.latches.spawn_failed.raise(name.as_str()) {
            self.log.error(&messages::new_session_failed(name, &err.reason()));
        }
    }

    /// L20: one line per pane started, with what a reader of the journal needs to match it to `ps` and the lease.
    fn log_spawn(&mut self, prepared: &Prepared, pane_pid: Option<u32>, lease_gen: Option<&str>) {
        let kind = match prepared.spawn {
            SpawnKind::First => "first start",
            SpawnKind::Respawn => "respawn",
            SpawnKind::Resume => "resume",
        };
        let pid = pane_pid.map_or_else(|| "?".to_owned(), |p| p.to_string());
        let lease = lease_gen.map_or_else(|| "no lease".to_owned(), |g| format!("lease gen {g}"));
        let (name, agent) = (&prepared.name, &prepared.harness.agent);
        self.log.line(&messages::started_pane(name, kind, agent, &pid, &lease));
    }

    /// Steps 6 and 9: post-check and memory; false when the post-check killed the new pane. The side file, the
    /// mirrors and the removal of `died` (steps 7 and 8) were written as the intent, before `new-session`.
    fn after_spawn(&mut self, tick: &Tick, guard: &RegistryLock, prepared: &Prepared) -> bool {
        let name = &prepared.name;
        let Ok(fresh) = read_for_write(guard.registry()) else { return true };
        if fresh.entry(name.as_str()).is_none_or(|e| e.stopped()) {
            let _ = self.tmux.kill_session(name);
            self.log.warn(&messages::removed_while_starting(name));
            return false;
        }
        let memory = self.memory.entry(name.to_string()).or_default();
        // A first start is a new life (the name was added anew): no streak carries over (SUP-9.2).
        let previous = memory.backoff.as_ref().filter(|_| prepared.launched);
        memory.backoff = Some(Backoff::started(&prepared.bid, tick.now, previous));
        memory.life = prepared.life.clone();
        memory.vanished_marked = false;
        memory.crash_noted = false;
        true
    }

    pub(crate) fn record_side_file(&mut self, name: &SessionName, side: &SideFile) {
        let path = self.config.paths.side_file(name);
        match side.write(&path) {
            Ok(()) => self.latches.write_failed.clear(name.as_str()),
            Err(err) => {
                if self.latches.write_failed.raise(name.as_str()) {
                    self.log.error(&messages::cannot_write(name, path.display(), err));
                }
            }
        }
    }

    /// Issue 11: record in the side file (created if needed) that the harness is missing, so `ls` can say why the
    /// session does not start; under the registry lock, and only while the key is listed, like SUP-9.4.
    fn note_harness_missing(&mut self, name: &SessionName, agent: &str, side: &SideFile) {
        if side.harness_missing.as_deref() == Some(agent) {
            return;
        }
        let mut tick = Tick::default();
        let path = self.config.paths.side_file(name);
        self.locked(&mut tick, |me, _, guard| {
            if read_for_write(guard.registry()).is_ok_and(|doc| doc.contains(name.as_str())) {
                let mut noted = SideFile::read(&path);
                noted.harness_missing = Some(agent.to_owned());
                me.record_side_file(name, &noted);
            }
        });
    }

    /// SUP-9.4: note a started delay in the existing side file, under the lock, if the key is still listed.
    pub(crate) fn note_backoff(&mut self, tick: &mut Tick, name: &SessionName, until: i64, streak: u32) {
        let path = self.config.paths.side_file(name);
        if tick.lock_refused || registry::atomic::is_absent(&path) {
            return;
        }
        self.locked(tick, |me, _, guard| {
            let listed = read_for_write(guard.registry()).is_ok_and(|doc| doc.contains(name.as_str()));
            if listed {
                let mut side = SideFile::read(&path);
                side.backoff_until = Some(base::time::format_iso(until));
                side.quick_exits = Some(u64::from(streak));
                me.record_side_file(name, &side);
            }
        });
    }
}

/// The keys of an entry that do not shape a start: `stopped` is checked on its own under the lock, and `died` is
/// removed by the start's intent whatever it holds. A writer toggling them (stop/restart) must not keep a start
/// from ever passing the pre-check.
const NOT_LAUNCH_INPUT: [&str; 2] = ["stopped", "died"];

/// Issue 17 row 10: the entry under the lock is the one the start was prepared from, but for the keys above.
fn same_start(fresh: &Map<String, Value>, prepared: &Map<String, Value>) -> bool {
    let shaping =
        |map: &Map<String, Value>| map.iter().filter(|(key, _)| !NOT_LAUNCH_INPUT.contains(&key.as_str())).count();
    shaping(fresh) == shaping(prepared)
        && fresh
            .iter()
            .filter(|(key, _)| !NOT_LAUNCH_INPUT.contains(&key.as_str()))
            .all(|(key, value)| prepared.get(key) == Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_start_survives_stop_and_died_toggles_but_not_another_life_or_prompt() {
        let prepared = map(json!({"agent": "tool", "life": "a", "initialPrompt": "p"}));
        assert!(same_start(&map(json!({"agent": "tool", "life": "a", "initialPrompt": "p", "died": 1})), &prepared));
        assert!(same_start(
            &map(json!({"agent": "tool", "stopped": false, "life": "a", "initialPrompt": "p"})),
            &prepared
        ));
        assert!(!same_start(&map(json!({"agent": "tool", "life": "b", "initialPrompt": "p"})), &prepared));
        assert!(!same_start(&map(json!({"agent": "tool", "life": "a", "initialPrompt": "q"})), &prepared));
        assert!(!same_start(&map(json!({"agent": "tool", "life": "a"})), &prepared));
    }
}
