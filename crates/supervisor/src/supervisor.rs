//! The reconcile loop's state and one tick (30-supervisor §4): snapshot, self-heal, reap, sweeps, per-entry
//! decisions and spawns, heartbeats, forgetting.

use std::collections::{BTreeMap, BTreeSet};

use base::SessionName;
use lease::{Expect, HookLog, LeaseDir, RefusalRecord};
use registry::{Document, Entry, HealLatches, self_heal};
use tmux::{Snapshot, TmuxApi, TmuxError, WakeHook};

use crate::backoff::{Absence, Backoff};
use crate::config::Config;
use crate::decide::{Action, Seen, decide, needs_launch_state};
use crate::log::{Latch, Log, NameLatches};
use crate::messages;
use crate::side::{SideFile, SideFileIo};

/// How long after a quarantine this process pauses lease sweeps (SUP-10.2).
pub const QUARANTINE_SWEEP_PAUSE_SECS: i64 = 3600;
/// Heartbeats per name are at least this far apart (SUP-10.4).
pub const HEARTBEAT_EVERY_SECS: i64 = 60;

/// What the supervisor remembers about one listed name between ticks.
#[derive(Debug, Default, Clone)]
pub(crate) struct Memory {
    /// The life this memory is about (issue 17): a new life of the name starts with an empty memory.
    pub life: Option<String>,
    pub backoff: Option<Backoff>,
    /// The lease was already marked vanished for the current absence (SUP-8.1).
    pub vanished_marked: bool,
    pub last_heartbeat: Option<i64>,
    /// L21 was logged for the crash the entry's `died` records (its post-mortem pane is up).
    pub crash_noted: bool,
    /// A backoff delay is running (L10 or a silent one); the start that ends it logs L23.
    pub backing_off: bool,
}

/// Once-per-streak latches (§13).
#[derive(Debug, Default)]
pub(crate) struct Latches {
    pub tmux_down: Latch,
    /// An external server is not running (UP-3.1).
    pub server_absent: Latch,
    pub lock_refused: Latch,
    pub lease_trouble: Latch,
    pub waiting: NameLatches,
    pub not_installed: NameLatches,
    pub spawn_failed: NameLatches,
    pub problem: NameLatches,
    pub write_failed: NameLatches,
    pub cwd_unusable: NameLatches,
    /// L17 and L13 are once per name per process.
    pub codex_remote: BTreeSet<String>,
    pub bad_keys: BTreeSet<String>,
    /// Issue 24: the intake queue cannot be listed; an admission cannot be decided; a record cannot be admitted.
    pub queue_unreadable: Latch,
    pub intake_waiting: Latch,
    pub intake_failed: NameLatches,
    /// Issue 20: the env store is missing, or cannot be read, at a spawn (once per streak each).
    pub env_store_missing: Latch,
    pub env_store_unreadable: Latch,
    /// Store keys that may not override a pane's own variables, each said once per process.
    pub env_store_overrides: BTreeSet<String>,
}

/// One tick's shared facts.
#[derive(Debug, Default)]
pub(crate) struct Tick {
    pub now: i64,
    /// The T1 listing; `None` when tmux could not be asked.
    pub snapshot: Option<BTreeSet<String>>,
    /// The first in-lock live probe of this tick plus our own spawns (RG-11.4).
    pub probed: Option<BTreeSet<String>>,
    /// A registry-lock refusal happened: every later locked section of this tick is skipped (SUP-7.2).
    pub lock_refused: bool,
    pub reaped: Vec<SessionName>,
    /// Issue 24: the sessions admissions in progress are making (name → the gen of their lease), from the intents
    /// in the intake queue (docs/intake.md IN-12); `None` when the queue could not be listed. The sweeps spare
    /// them: such a name is not listed yet, and its lease and filter are the admission's.
    pub admitting: Option<BTreeMap<String, String>>,
}

/// The reconcile loop.
pub struct Supervisor {
    pub(crate) config: Config,
    pub(crate) tmux: Box<dyn TmuxApi>,
    pub(crate) leases: LeaseDir,
    pub(crate) hook_log: HookLog,
    pub(crate) refusals: RefusalRecord,
    pub(crate) log: Log,
    pub(crate) clock: fn() -> i64,
    pub(crate) heal: HealLatches,
    pub(crate) latches: Latches,
    pub(crate) memory: BTreeMap<String, Memory>,
    /// Managed sessions in the previous successful snapshot (L4).
    pub(crate) previous_managed: usize,
    /// The tmux server's pid in the previous successful snapshot (L4 only when it changed).
    pub(crate) previous_server_pid: Option<u32>,
    pub(crate) quarantined_at: Option<i64>,
    /// When a spared orphan filter makes the filter sweep due again (SUP-10.3).
    pub(crate) filter_sweep_due: Option<i64>,
    /// Live panes whose start no side file records are still to be adopted (§2 step 6a; `adopt.rs`).
    pub(crate) adoption_due: bool,
    /// The session-closed wake to install on every server this loop meets (issue 12); `None` with `--once`, or when
    /// the wake file cannot be watched.
    pub(crate) wake: Option<WakeHook>,
    /// The server pid the wake was last installed on, or refused by: each server gets one install call.
    pub(crate) wake_installed_on: Option<u32>,
    /// Issue 21: the outcome notifier's running program and retry memory (`notify.rs`).
    pub(crate) notifier: crate::notify::Notifier,
    /// Issue 24: the intake queue, and when its tombstones were last pruned.
    pub(crate) queue: intake::Queue,
    /// The queue's last listing, kept while its directory is unchanged (Q14).
    pub(crate) queue_cache: intake::queue::ListingCache,
    pub(crate) intake_pruned_at: Option<i64>,
    /// Issue 26: the claims database and what the loop keeps of it; `None` on a box of its own.
    pub(crate) claims: Option<crate::boxes::ClaimState>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Supervisor {
    pub fn new(config: Config, tmux: Box<dyn TmuxApi>, log: Log) -> Self {
        let leases = LeaseDir::new(config.paths.lease_dir());
        let hook_log = HookLog::new(config.paths.hook_log());
        let refusals = RefusalRecord::new(config.paths.refusal_record());
        let queue = intake::Queue::new(config.paths.queue_dir());
        let claims = config.claims.clone().map(|claims| {
            crate::boxes::ClaimState::new(claims, config.paths.home().to_path_buf(), config.paths.state_dir())
        });
        Self {
            config,
            tmux,
            leases,
            hook_log,
            refusals,
            log,
            clock: base::time::now_epoch,
            heal: HealLatches::default(),
            latches: Latches::default(),
            memory: BTreeMap::new(),
            previous_managed: 0,
            previous_server_pid: None,
            quarantined_at: None,
            filter_sweep_due: None,
            adoption_due: true,
            wake: None,
            wake_installed_on: None,
            notifier: crate::notify::Notifier::default(),
            queue,
            queue_cache: intake::queue::ListingCache::default(),
            intake_pruned_at: None,
            claims,
        }
    }

    /// Installs `hook` on the current server at the next tick, and on every server that replaces it.
    pub fn enable_wake(&mut self, hook: WakeHook) {
        self.wake = Some(hook);
        self.wake_installed_on = None;
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self.leases = self.leases.with_clock(clock);
        self.hook_log = self.hook_log.with_clock(clock);
        self
    }

    pub fn log(&self) -> &Log {
        &self.log
    }

    pub fn log_line(&mut self, text: &str) {
        self.log.line(text);
    }

    pub fn log_warn(&mut self, text: &str) {
        self.log.warn(text);
    }

    /// L1: the first line of every start names the socket and the registry, so the journal shows which box it serves.
    pub fn log_started(&mut self) {
        let (socket, dir) = (self.config.tmux.socket.clone(), self.config.tmux.socket_dir.display().to_string());
        let registry = self.config.paths.registry().display().to_string();
        self.log.line(&messages::started(&socket, &dir, &registry));
    }

    /// Start-up steps 4–6 of §2: self-heal with the seed, `~/worktrees`, orphan filters, side-directory temps.
    pub fn start_up(&mut self) {
        let mut tick = Tick { now: (self.clock)(), ..Tick::default() };
        let doc = self.heal_registry(&mut tick);
        let _ = registry::ensure_private_dir(&self.config.paths.home().join("worktrees"));
        if let Some(doc) = doc {
            tick.admitting = self.admitting(self.queue.list().as_ref());
            self.sweep_orphan_filters(&doc, &tick);
        }
        self.remove_side_temps();
        // Issue 24: the queue's temps are its writers', who hold the registry lock (SUP-10.5).
        if !self.queue.temp_files().is_empty() && !tick.lock_refused {
            self.locked(&mut tick, |me, _, guard| me.queue.remove_temp_leftovers(guard));
        }
        self.write_notify_marker();
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// One pass of the loop: duties T1–T7, then (issue 21) the outcome notifier, outside every lock, even when the
    /// registry could not be read.
    pub fn tick(&mut self) {
        let now = self.reconcile_tick();
        self.notify_outcomes(now);
    }

    /// Duties T1–T7 in order; returns the tick's time.
    fn reconcile_tick(&mut self) -> i64 {
        let mut tick = Tick { now: (self.clock)(), ..Tick::default() };
        tick.snapshot = self.take_snapshot();
        let Some(mut doc) = self.heal_registry(&mut tick) else { return tick.now };
        self.give_lives(&mut tick, &mut doc);
        if tick.snapshot.is_some() {
            self.reap(&mut tick, &mut doc);
        }
        let queue = self.queue.list_cached(&mut self.queue_cache, std::time::SystemTime::now());
        tick.admitting = self.admitting(queue.as_deref());
        self.sweep(&mut tick, &doc);
        if tick.snapshot.is_some() {
            self.tend_claims(&mut tick);
        }
        if let Some(snapshot) = tick.snapshot.clone() {
            self.previous_managed = snapshot.iter().filter(|n| doc.contains(n)).count();
            self.intake(&mut tick, &mut doc, &snapshot);
            self.adopt_unrecorded(&mut tick, &doc, &snapshot);
            let running = self.reconcile(&mut tick, &doc, &snapshot);
            self.heartbeat(&tick, &running);
        }
        self.forget(&doc);
        tick.now
    }

    /// T1: one tmux process lists the sessions (SUP-4.1); "no server" is a wait, not trouble, when the server is
    /// external (UP-3.1): its unit starts it, and nothing that depends on the live set runs until it is back.
    fn take_snapshot(&mut self) -> Option<BTreeSet<String>> {
        match self.probe() {
            Ok(taken) => {
                // Both streaks end here; `|` (not `||`) clears both latches.
                if self.latches.tmux_down.clear() | self.latches.server_absent.clear() {
                    self.log.line(messages::TMUX_REACHABLE_AGAIN);
                }
                let snapshot: BTreeSet<String> = taken.sessions.into_iter().collect();
                self.note_server(taken.server_pid, snapshot.is_empty());
                self.install_wake(taken.server_pid);
                Some(snapshot)
            }
            Err(TmuxError::NoServer | TmuxError::SocketDirMissing(_)) if self.config.external_server => {
                if self.latches.server_absent.raise() {
                    self.log.warn(messages::TMUX_SERVER_ABSENT);
                }
                None
            }
            Err(err) => {
                // L2, once per streak: every tick retries, so repeating the line would only flood the journal.
                if self.latches.tmux_down.raise() {
                    self.log.error(&messages::tmux_unreachable(&err.reason()));
                }
                None
            }
        }
    }

    /// The tick's one tmux process: start-and-list (SUP-4.1), or only list a server that its own unit runs (UP-3.1),
    /// which a server started here would replace inside this process's cgroup, to die with its next restart.
    /// Both report the server's pid, so [`Self::install_wake`] hooks an external server on the first tick it
    /// answers, and again after its unit restarted it.
    fn probe(&self) -> Result<Snapshot, TmuxError> {
        if self.config.external_server { self.tmux.list_server() } else { self.tmux.ensure_server_and_list() }
    }

    /// SUP-4.4 (issue 11): L4 only when the server really changed (another pid), so sessions ended by
    /// `restart --all` on the same server are not read as a lost server; any other change of pid is one L22.
    fn note_server(&mut self, pid: Option<u32>, empty: bool) {
        let changed = matches!((self.previous_server_pid, pid), (Some(old), Some(new)) if old != new);
        if changed && empty && self.previous_managed >= 2 {
            let lost = self.previous_managed;
            self.log.warn(&messages::all_sessions_disappeared(lost));
        } else if changed {
            let (old, new) = (self.previous_server_pid.unwrap_or_default(), pid.unwrap_or_default());
            self.log.line(&messages::server_changed(old, new));
        }
        if pid.is_some() {
            self.previous_server_pid = pid;
        }
    }

    /// The session-closed wake (issue 12): one `set-hook` call on a server not seen before (the first tick, a
    /// restarted server, a server that appeared), none on any other tick, so an idle tick stays one tmux process.
    /// A refusal (a tmux without the hook) is logged once per server and not retried on it; the timer covers.
    fn install_wake(&mut self, server_pid: Option<u32>) {
        let (Some(hook), Some(pid)) = (&self.wake, server_pid) else { return };
        if self.wake_installed_on == Some(pid) {
            return;
        }
        match self.tmux.set_wake_hook(hook) {
            Ok(()) => self.wake_installed_on = Some(pid),
            Err(err @ TmuxError::Failed { .. }) => {
                self.wake_installed_on = Some(pid);
                self.log.warn(&messages::wake_hook_refused(&err.reason()));
            }
            // Could not ask (the server went away, a timeout): the next tick tries again.
            Err(_) => {}
        }
    }

    /// T2: self-heal; `None` means no registry-dependent step runs this tick (SUP-4.5).
    fn heal_registry(&mut self, tick: &mut Tick) -> Option<Document> {
        let outcome =
            self_heal(self.config.paths.registry(), self.config.seed.as_deref(), self.config.lock_wait, &mut self.heal);
        for message in &outcome.messages {
            self.log.warn(message);
        }
        if outcome.quarantined.is_some() {
            self.quarantined_at = Some(tick.now);
        }
        if let Some(err) = &outcome.lock_refused {
            self.note_lock_refused(tick, err);
        }
        outcome.document
    }

    /// L9 once per streak; later locked sections of this tick are skipped.
    /// Runs `section` under the registry lock with the bound of SUP-7.2; `None` after a refusal, which is noted once
    /// per streak and skips the remaining locked sections of the tick.
    pub(crate) fn locked<R>(
        &mut self,
        tick: &mut Tick,
        section: impl FnOnce(&mut Self, &mut Tick, &registry::RegistryLock) -> R,
    ) -> Option<R> {
        let registry = self.config.paths.registry().to_path_buf();
        let wait = self.config.lock_wait;
        match registry::with_lock(&registry, wait, registry::LockPolicy::SUPERVISOR, |guard| section(self, tick, guard))
        {
            Ok(result) => Some(result),
            Err(err) => {
                self.note_lock_refused(tick, &err);
                None
            }
        }
    }

    pub(crate) fn note_lock_refused(&mut self, tick: &mut Tick, err: &registry::RegistryError) {
        tick.lock_refused = true;
        if self.latches.lock_refused.raise() {
            let reason = match err {
                registry::RegistryError::LockRefused { reason, .. } => reason.to_string(),
                other => other.to_string(),
            };
            self.log.warn(&messages::lock_not_obtained(&reason));
        }
    }

    /// T5: per-entry decisions in registry key order; returns the running names (D8) for T6.
    fn reconcile(&mut self, tick: &mut Tick, doc: &Document, snapshot: &BTreeSet<String>) -> Vec<SessionName> {
        let mut running = Vec::new();
        for key in doc.names() {
            let name = SessionName::parse(key).ok();
            let entry = doc.entry(key);
            let pane_present = snapshot.contains(key);
            // The side file is read only for entries whose pane is missing; the spawn path reuses it.
            let side = match (&name, entry) {
                (Some(name), Some(entry)) if needs_launch_state(entry, pane_present) => {
                    SideFile::read(&self.config.paths.side_file(name)).of_life(entry.life())
                }
                _ => SideFile::default(),
            };
            self.forget_other_life(key, entry.and_then(|e| e.life()));
            let launched = side.launch_session_id.is_some() || entry.is_some_and(|e| e.has_run());
            let seen = Seen { key_valid: name.is_some(), entry, pane_present, launched };
            let (Some(name), Some(entry)) = (name, entry) else {
                self.note_unusable_key(key, seen.key_valid);
                continue;
            };
            match decide(&seen) {
                Action::Running => {
                    self.graduate(&name, tick.now);
                    running.push(name);
                }
                Action::PostMortem => self.note_crash(&name, entry),
                action @ (Action::FirstSpawn | Action::RespawnAfterCrash | Action::RespawnVanished) => {
                    self.start(tick, doc, &name, entry, &side, action);
                }
                _ => {}
            }
        }
        running
    }

    /// Issue 17: what this process remembers of a name (backoff, marks, heartbeat timer) is about one life.
    fn forget_other_life(&mut self, key: &str, life: Option<&str>) {
        if let Some(memory) = self.memory.get_mut(key)
            && memory.life.is_some()
            && memory.life.as_deref() != life
        {
            *memory = Memory::default();
        }
    }

    /// D1 (L13 once per key per process) and D3 (L14 once per streak).
    fn note_unusable_key(&mut self, key: &str, key_valid: bool) {
        if !key_valid {
            if self.latches.bad_keys.insert(key.to_owned()) {
                let quoted = serde_json::to_string(key).unwrap_or_default();
                self.log.warn(&messages::bad_registry_key(&quoted));
            }
        } else if self.latches.problem.raise(key) {
            self.log.warn(&messages::entry_not_an_object(key));
        }
    }

    /// D10–D12 (SUP-5.1): vanished mark, backoff gate, unlocked pre-check, preparation, locked section.
    fn start(
        &mut self,
        tick: &mut Tick,
        doc: &Document,
        name: &SessionName,
        entry: Entry<'_>,
        side: &SideFile,
        action: Action,
    ) {
        if action == Action::RespawnVanished {
            self.mark_vanished(name, side);
            if !self.backoff_allows(tick, name) {
                return;
            }
        }
        if !self.claim_allows_start(name, entry) {
            return;
        }
        self.begin_start(tick, doc, name, entry, side);
    }

    /// L21: a crash the epilogue recorded (`died` set, post-mortem pane up), once until the next spawn.
    fn note_crash(&mut self, name: &SessionName, entry: Entry<'_>) {
        let memory = self.memory.entry(name.to_string()).or_default();
        if std::mem::replace(&mut memory.crash_noted, true) {
            return;
        }
        let status = entry.died().map(|d| serde_json::to_string(d).unwrap_or_default()).unwrap_or_default();
        self.log.warn(&messages::exited_with_status(name, &status));
    }

    /// SUP-8.1: once per absence, before backoff and admission; L24 says what was observed and done.
    fn mark_vanished(&mut self, name: &SessionName, side: &SideFile) {
        let memory = self.memory.entry(name.to_string()).or_default();
        if std::mem::replace(&mut memory.vanished_marked, true) {
            return;
        }
        let lease = match self.leases.note_absence(name, &expect_of(side)) {
            Ok(lease::Changed::Restarted) => {
                self.log.line(&messages::restarted_by_operator(name));
                return;
            }
            Ok(lease::Changed::Written) => "its lease is marked vanished",
            Ok(lease::Changed::Absent) => "it holds no lease",
            Ok(_) => "its lease is left as it was",
            Err(err) => {
                self.warn_lease(&err);
                "its lease could not be marked"
            }
        };
        self.log.warn(&messages::vanished(name, lease));
    }

    /// SUP-9.1: the first tick that finds our pane absent counts the exit; later ticks wait for `not_before`.
    fn backoff_allows(&mut self, tick: &mut Tick, name: &SessionName) -> bool {
        let Some(memory) = self.memory.get_mut(name.as_str()) else { return true };
        let Some(record) = memory.backoff.as_mut() else { return true };
        if record.absence_counted {
            let may = record.may_start(tick.now);
            if may && std::mem::take(&mut memory.backing_off) {
                self.log.line(&messages::backoff_over(name));
            }
            return may;
        }
        if let Absence::Delayed { until, streak, announce } = record.count_absence(tick.now) {
            if announce {
                let at = base::time::format_iso(until);
                self.log.warn(&messages::keeps_exiting(name, streak, &at));
            }
            self.note_backoff(tick, name, until, streak);
            if let Some(memory) = self.memory.get_mut(name.as_str()) {
                memory.backing_off = true;
            }
        }
        self.memory.get(name.as_str()).and_then(|m| m.backoff.as_ref()).is_none_or(|r| r.may_start(tick.now))
    }

    /// SUP-9.3 for a running pane.
    fn graduate(&mut self, name: &SessionName, now: i64) {
        let graduated = self
            .memory
            .get_mut(name.as_str())
            .and_then(|m| m.backoff.as_mut())
            .is_some_and(|r| r.graduate_if_stable(now));
        if graduated {
            self.log.line(&messages::backoff_reset(name));
        }
        if let Some(memory) = self.memory.get_mut(name.as_str()) {
            memory.vanished_marked = false;
        }
    }

    /// T6: heartbeats for running leased sessions, at most once a minute per name (SUP-10.4).
    fn heartbeat(&mut self, tick: &Tick, running: &[SessionName]) {
        for name in running {
            let memory = self.memory.entry(name.to_string()).or_default();
            if memory.last_heartbeat.is_some_and(|at| tick.now - at < HEARTBEAT_EVERY_SECS) {
                continue;
            }
            memory.last_heartbeat = Some(tick.now);
            // Only "no such file" means no lease (issue 18): any other error is the lease operation's to report.
            if registry::atomic::is_absent(&self.leases.lease_path(name)) {
                continue;
            }
            let side = SideFile::read(&self.config.paths.side_file(name));
            if let Err(err) = self.leases.heartbeat(name, &expect_of(&side)) {
                self.warn_lease(&err);
            }
        }
    }

    /// T7: forget names that are not listed-and-unstopped.
    fn forget(&mut self, doc: &Document) {
        let keep = |name: &str| doc.entry(name).is_some_and(|e| !e.stopped());
        self.memory.retain(|name, _| keep(name));
        for latches in [
            &mut self.latches.waiting,
            &mut self.latches.not_installed,
            &mut self.latches.spawn_failed,
            &mut self.latches.write_failed,
            &mut self.latches.cwd_unusable,
        ] {
            latches.retain(keep);
        }
        self.latches.problem.retain(|name| doc.contains(name));
    }

    pub(crate) fn warn_lease(&mut self, err: &lease::LeaseError) {
        if self.latches.lease_trouble.raise() {
            self.log.warn(&messages::lease_update_skipped(err));
        }
    }
}

/// SUP-8.1: the side file's lease gen, or `Any` when it has none.
pub(crate) fn expect_of(side: &SideFile) -> Expect {
    side.lease_gen.as_deref().and_then(lease::Gen::parse).map_or(Expect::Any, Expect::Gen)
}
