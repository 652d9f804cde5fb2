//! The chaos run (issue 13): up to hundreds of sessions dispatched through `agent-box-webhook-spawn` into a private
//! world running the real supervisor, each meeting a seeded fate (clean exit, crash, pane killed, `rm`, `stop`, crash
//! then `rm`, its name reused after `rm` with the old pane's epilogues arriving late, `restart` of the running session,
//! `stop` then `restart` then a crash, the supervisor SIGKILLed right after the session's `new-session` and the pane
//! killed before a supervisor runs again), while the supervisor is SIGKILLed and restarted (also right after a
//! `new-session`), the tmux server is killed once and a burst of concurrent dispatches hits the capacity limit. Every
//! dispatch goes through the intake queue (issue 24, `queue.rs`): the limit leaves only a few slots for the sessions
//! still being worked on, so most of them are queued, and a queued one becomes an incarnation when the supervisor
//! admits it. A model derived from the spec and the life rules (docs/lives.md) says what every lease must read, which
//! end and `restart` lines the hook log must hold and that no assignment gets its kickoff prompt twice; observers
//! sample the registry and every lease file all along and keep every hook-log line across its trims. `cargo test` runs
//! a small fixed seed; `cargo xtask chaos` any size.

mod model;
mod notify;
mod plan;
mod queue;
mod report;
mod seen;
pub(crate) mod watch;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use self::model::{Expected, Incarnation};
pub use self::plan::{Fate, Global, Plan, Planned};
pub use self::report::Report;
use self::seen::Seen;
use self::watch::Watch;
use self::world::{Late, World};
use crate::target_dir;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub sessions: usize,
    pub seed: u64,
    /// The span over which dispatches and actions are spread (settling may take longer).
    pub duration: Duration,
    /// Issue 21: run the supervisor with a notifier that fails and hangs at random, and check its deliveries.
    pub notifier: bool,
}

/// How long an action may take to settle before it counts as wrong (a liveness bound, never a timing check).
const SETTLE_LIMIT: Duration = Duration::from_secs(120);
/// How long a restarted supervisor stays down after a kill.
const SUPERVISOR_PAUSE: Duration = Duration::from_millis(700);
/// How long a kill armed at one session's spawn may wait to fire, and then for the agent's first start.
const SPAWN_KILL_WAIT: Duration = Duration::from_secs(10);

/// One thing the driver does, due at an offset from the start.
#[derive(Debug, Clone)]
enum Step {
    Dispatch(usize),
    /// The fate action of planned session `.0`, phase `.1` (crash then rm, restart then exit and stop-restart-crash
    /// have two; reuse has three: rm, the new life, the late epilogues once it runs).
    Act(usize, u8),
    Global(Global),
}

/// A supervisor kill armed at the `new-session` of planned session `planned`, whose pane is to be killed while no
/// supervisor runs (issue 17 row 6).
#[derive(Debug)]
struct SpawnKill {
    planned: usize,
    prefix: String,
    armed: Instant,
    fired: Option<Instant>,
}

/// An action whose expected state has not been observed yet.
#[derive(Debug)]
struct Pending {
    inc: usize,
    since: Instant,
    what: String,
}

/// Runs one chaos world to the end and reports.
pub fn run(options: &Options) -> Report {
    let plan = Plan::new(options.seed, options.sessions, options.duration);
    let mut driver = Driver::new(options, plan);
    driver.drive();
    driver.finish()
}

#[derive(Debug)]
struct Driver {
    options: Options,
    plan: Plan,
    world: World,
    watch: Watch,
    steps: Vec<(Duration, Step)>,
    incs: Vec<Incarnation>,
    /// The incarnation of each planned session (by plan position).
    of_planned: BTreeMap<usize, usize>,
    pending: Vec<Pending>,
    report: Report,
    started: Instant,
    /// Since when a step that needs a quiet box has been waiting for it.
    waiting_quiet: Option<Instant>,
    /// The kill armed at a spawn that has not led to its pane kill yet (one at a time).
    spawn_kill: Option<SpawnKill>,
    /// Planned sessions whose pane was killed after the supervisor was killed at their spawn.
    spawn_killed: BTreeSet<usize>,
    /// The old pane's epilogue arguments of each reused name (by plan position), read before its `rm`.
    late: BTreeMap<usize, Late>,
    /// Which argv records carry a prompt (records never change once written, so each is read once).
    kickoff_cache: BTreeMap<String, bool>,
    /// `stop` → `restart` pairs done so far; every other one runs while no supervisor does.
    stop_restarts: usize,
    /// When the last wait for a quiet box ended: a step held up behind it is given its own time to get ready.
    unblocked: Duration,
    notifier: Option<self::notify::ChaosNotifier>,
    /// Issue 24: dispatches acknowledged as queued and not admitted yet (`queue.rs`), when each planned session
    /// was admitted from the queue, the limit last written, whether a step holds the limit itself, and when the
    /// limit was last recomputed.
    waiting: Vec<self::queue::Waiting>,
    admitted_at: BTreeMap<usize, Duration>,
    limit: Option<usize>,
    limit_frozen: bool,
    limit_read: Option<Instant>,
}

impl Driver {
    fn new(options: &Options, plan: Plan) -> Self {
        let notifier = options.notifier.then(|| self::notify::ChaosNotifier::install(options.seed));
        let world = World::new(self::queue::WORKING_SLOTS, &notifier.as_ref().map(|n| n.env()).unwrap_or_default());
        let paths = world.sb.paths();
        let watch = Watch::start(world.sb.registry(), paths.lease_dir(), paths.hook_log());
        let mut steps: Vec<(Duration, Step)> = plan
            .sessions
            .iter()
            .enumerate()
            .flat_map(|(at, p)| [(p.dispatch_at, Step::Dispatch(at)), (p.act_at, Step::Act(at, 0))])
            .chain(plan.globals.iter().map(|(t, g)| (*t, Step::Global(*g))))
            .collect();
        steps.sort_by_key(|(t, _)| *t);
        let report = Report::new(options);
        Self {
            options: options.clone(),
            plan,
            world,
            watch,
            steps,
            incs: Vec::new(),
            of_planned: BTreeMap::new(),
            pending: Vec::new(),
            report,
            started: Instant::now(),
            waiting_quiet: None,
            spawn_kill: None,
            spawn_killed: BTreeSet::new(),
            late: BTreeMap::new(),
            kickoff_cache: BTreeMap::new(),
            stop_restarts: 0,
            unblocked: Duration::ZERO,
            notifier,
            waiting: Vec::new(),
            admitted_at: BTreeMap::new(),
            limit: None,
            limit_frozen: false,
            limit_read: None,
        }
    }

    fn truth(&mut self, line: String) {
        let at = self.started.elapsed().as_secs_f64();
        self.report.truth.push(format!("{at:9.3} {line}"));
    }

    /// Runs every step when due and ready, then waits for everything to settle.
    fn drive(&mut self) {
        while !self.steps.is_empty() {
            self.tend_supervisor();
            self.discover();
            self.manage_limit();
            self.poll_pending();
            if let Some(index) = self.next_ready() {
                let (_, step) = self.steps.remove(index);
                self.perform(step);
                continue;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle_everything();
        self.settle_notifications();
    }

    /// Notifier mode: every outcome still in a lease gets its delivery (retries back off) before the final check.
    fn settle_notifications(&mut self) {
        let Some(notifier) = self.notifier.take() else { return };
        let leases = lease::LeaseDir::new(self.world.sb.paths().lease_dir());
        if !notifier.settle(&leases, || self.world.keep_supervisor(SUPERVISOR_PAUSE)) {
            self.report.wrong.push("outcomes were still undelivered at the end of the notifier's wait".into());
        }
        self.notifier = Some(notifier);
    }

    /// The first due step that may run now. A step that needs a quiet box holds every later dispatch and global
    /// step until it is; fate actions go on meanwhile, since only they free the slots that drain the queue. A
    /// queued session's actions wait for its admission, and their settle limit counts from it.
    fn next_ready(&mut self) -> Option<usize> {
        let now = self.started.elapsed();
        let mut holding = false;
        for index in 0..self.steps.len() {
            let (due, step) = self.steps[index].clone();
            if due > now {
                return None;
            }
            match step {
                Step::Global(Global::KillServer | Global::Burst { .. }) if !holding => {
                    if let Some(ready) = self.when_quiet(index) {
                        return Some(ready);
                    }
                    holding = true;
                }
                Step::Act(at, _) if !self.ready_to_act(at) => {
                    // Not dispatched yet (held behind a quiet step) or still queued: nothing to time out yet.
                    let running = self.dispatch_failed(at) && !self.is_waiting(at);
                    let since = due.max(self.unblocked).max(self.admitted_at(at));
                    if running && now.saturating_sub(since) >= SETTLE_LIMIT {
                        return Some(index);
                    }
                }
                Step::Act(..) => return Some(index),
                _ if holding => {}
                _ => return Some(index),
            }
        }
        None
    }

    /// `index` once the box is quiet; after [`queue::ADMIT_LIMIT`] of waiting (the queue drains first) it runs
    /// anyway, and the wait is wrong.
    fn when_quiet(&mut self, index: usize) -> Option<usize> {
        let since = *self.waiting_quiet.get_or_insert_with(Instant::now);
        if self.quiet() {
            self.waiting_quiet = None;
            self.unblocked = self.started.elapsed();
            return Some(index);
        }
        if since.elapsed() < self::queue::ADMIT_LIMIT {
            return None;
        }
        self.waiting_quiet = None;
        self.unblocked = self.started.elapsed();
        let unrecorded: Vec<&str> = self
            .incs
            .iter()
            .filter(|i| !i.superseded && i.pane_expected() && !self.world.recorded(&i.name))
            .map(|i| i.name.as_str())
            .collect();
        let (pending, up, queued) = (self.pending.len(), self.world.supervisor_up(), self.waiting.len());
        self.report.wrong.push(format!(
            "the box never became quiet: {pending} actions pending, {queued} dispatches queued, supervisor up {up}, panes without a recorded launch {unrecorded:?}"
        ));
        Some(index)
    }

    /// The session's last action has settled and no kill at its spawn is under way; a pane to be killed or
    /// restarted must also have its launch recorded (so the model's pane is the one the supervisor knows).
    fn ready_to_act(&self, planned: usize) -> bool {
        let Some(&inc) = self.of_planned.get(&planned) else {
            return !self.is_waiting(planned) && self.dispatch_failed(planned);
        };
        let settled = self.pending.iter().all(|p| p.inc != inc);
        let killing = self.spawn_kill.as_ref().is_some_and(|k| k.planned == planned);
        let needs_record =
            matches!(self.plan.sessions[planned].fate, Fate::PaneKilled | Fate::KilledAtSpawn | Fate::RestartThenExit);
        settled && !killing && (!needs_record || self.world.recorded(&self.incs[inc].name))
    }

    fn dispatch_failed(&self, planned: usize) -> bool {
        !self.steps.iter().any(|(_, s)| matches!(s, Step::Dispatch(p) if *p == planned))
    }

    /// Nothing pending, nothing queued (so nothing is admitted meanwhile), a supervisor running, and every pane the
    /// model expects recorded in its side file (so a server kill is a vanished pane for each of them, exactly).
    fn quiet(&self) -> bool {
        self.pending.is_empty()
            && self.queue_drained()
            && self.world.supervisor_up()
            && self.incs.iter().filter(|i| !i.superseded && i.pane_expected()).all(|i| self.world.recorded(&i.name))
    }

    fn perform(&mut self, step: Step) {
        match step {
            Step::Dispatch(at) => self.dispatch(at),
            Step::Act(at, phase) => self.act(at, phase),
            Step::Global(Global::KillSupervisor) => {
                if self.world.supervisor_up() {
                    self.kill_supervisor("supervisor SIGKILL".into());
                }
            }
            Step::Global(Global::KillServer) => self.kill_server(),
            Step::Global(Global::Burst { accept, burst }) => self.burst(accept, burst),
        }
    }

    fn dispatch(&mut self, at: usize) {
        let planned = self.plan.sessions[at].clone();
        let label = format!("s{}", planned.index);
        self.arm_at_dispatch(at, &planned, &label);
        let code = self.world.dispatch(&label, &label, planned.index + 1);
        if code != 0
            && let Some(kill) = self.spawn_kill.take_if(|k| k.planned == at)
        {
            self.world.disarm(&kill.prefix);
        }
        match (code, self.world.minted(&label)) {
            (0, Some(name)) => {
                let lease_gen = self.world.lease_gen(&name).unwrap_or_default();
                self.truth(format!("dispatch {label} -> {name} gen {lease_gen} fate {}", planned.fate.label()));
                self.report.count_fate(planned.fate.label());
                let inc = self.add(Incarnation::dispatched(&name, &label, &lease_gen), "dispatch");
                self.of_planned.insert(at, inc);
            }
            (0, None) => self.queued(&label, &label, Some(at), planned.fate.label()),
            (code, _) => self.report.wrong.push(format!("the dispatch of {label} exited {code}")),
        }
    }

    /// Arms the supervisor kill of a session that is a victim of one, or whose fate is the kill at its own spawn.
    fn arm_at_dispatch(&mut self, at: usize, planned: &Planned, label: &str) {
        if !self.world.supervisor_up() {
            return;
        }
        if planned.fate == Fate::KilledAtSpawn && self.spawn_kill.is_none() {
            let prefix = format!("hook-chaos-{label}-");
            if self.world.arm_kill_at_spawn(&prefix) {
                self.truth(format!("armed: SIGKILL the supervisor right after the new-session of {prefix}*"));
                self.spawn_kill = Some(SpawnKill { planned: at, prefix, armed: Instant::now(), fired: None });
            }
        } else if planned.kill_supervisor_at_spawn && self.world.arm_kill_at_spawn("") {
            self.truth("armed: SIGKILL the supervisor right after its next new-session".into());
        }
    }

    /// SIGKILLs the running supervisor at a random point of its work. Two points have a documented consequence the
    /// model must follow: after a first start's intent and before its `new-session` (L-9), no pane ever ran, and
    /// the next supervisor reads the intent as a pane that vanished (L-10): the lease is marked and the start
    /// resumes without the kickoff prompt, which the intent had already taken off the entry. And after it consumed
    /// a `restart`'s mark (L-13) and before the new pane's `new-session`, nothing says the pane was restarted any
    /// more: the next supervisor reads the gone pane as vanished, the same reading.
    fn kill_supervisor(&mut self, line: String) {
        let Some(pid) = self.world.supervisor_pid() else { return };
        self.world.kill_supervisor();
        self.truth(line);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.world.supervisor_up() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        // What the killed supervisor admitted from the queue is listed by now: those sessions are in the scan too.
        self.discover();
        let unstarted: Vec<usize> = (0..self.incs.len())
            .filter(|i| {
                let inc = &self.incs[*i];
                !inc.superseded && inc.pane_expected() && self.world.sb.agent(&inc.agent).starts() == 0
            })
            .filter(|i| self.world.recorded(&self.incs[*i].name))
            .collect();
        let restarting: Vec<usize> = (0..self.incs.len()).filter(|i| self.respawn_due_after_restart(*i)).collect();
        if unstarted.is_empty() && restarting.is_empty() {
            return;
        }
        // A `new-session` the supervisor had just forked goes on without it: give its wrapper time to log it.
        std::thread::sleep(Duration::from_millis(300));
        for index in unstarted {
            let name = self.incs[index].name.clone();
            if self.world.intent_without_pane(&name, pid) {
                self.incs[index].intent_without_pane();
                self.report.count_event("kickoff lost: supervisor killed between the intent and new-session");
                self.truth(format!("{name}: the killed supervisor recorded its start and never ran new-session"));
            }
        }
        for index in restarting {
            let name = self.incs[index].name.clone();
            if !self.world.sb.is_live(&name) && self.world.restart_mark_consumed(&name) {
                self.incs[index].restart_cut_short();
                self.report.count_event("restart lost: supervisor killed after it took the mark, before new-session");
                self.truth(format!("{name}: the killed supervisor took the restart mark and never ran new-session"));
            }
        }
    }

    /// Incarnation `inc` was restarted (L-11) with an open lease and its new pane has not started yet.
    fn respawn_due_after_restart(&self, inc: usize) -> bool {
        let i = &self.incs[inc];
        !i.superseded
            && i.pane_expected()
            && !i.expected.restarts.is_empty()
            && i.expected.lease == Some(None)
            && self.world.sb.agent(&i.agent).starts() < i.min_starts
    }

    /// Restarts a supervisor that died, except while a kill armed at a spawn waits for its pane kill.
    fn tend_supervisor(&mut self) {
        if !self.watch_spawn_kill() {
            self.world.keep_supervisor(SUPERVISOR_PAUSE);
        }
    }

    /// Drives the kill armed at a spawn; true while the supervisor must stay down. Once the wrapper fired (the
    /// supervisor died right after this session's `new-session`) and the agent has started, the pane is killed:
    /// the next supervisor must find the loss from the spawn intent alone (L-9, L-10). An arm that never fired (within
    /// [`SPAWN_KILL_WAIT`] of the session's admission; a queued session's spawn waits for that) leaves the fate to a
    /// plain pane kill later.
    fn watch_spawn_kill(&mut self) -> bool {
        let queued = self.spawn_kill.as_ref().is_some_and(|k| self.is_waiting(k.planned));
        let Some(kill) = self.spawn_kill.as_mut() else { return false };
        if !self.world.fired_for(&kill.prefix) {
            // A queued session's new-session comes with its admission, however long it waits for it.
            if !self.world.armed_for(&kill.prefix) || (!queued && kill.armed.elapsed() > SPAWN_KILL_WAIT) {
                self.world.disarm(&kill.prefix);
                let line = format!("the kill armed at the spawn of {}* did not fire", kill.prefix);
                self.spawn_kill = None;
                self.truth(line);
            }
            return false;
        }
        let fired = *kill.fired.get_or_insert_with(Instant::now);
        let planned = kill.planned;
        let Some(&inc) = self.of_planned.get(&planned) else { return true };
        let started = self.world.sb.agent(&self.incs[inc].agent).starts() >= 1;
        if self.world.supervisor_up() || (!started && fired.elapsed() < SPAWN_KILL_WAIT) {
            return true;
        }
        self.spawn_kill = None;
        let name = self.incs[inc].name.clone();
        self.world.kill_pane(&name);
        self.incs[inc].pane_vanished();
        self.spawn_killed.insert(planned);
        self.report.count_event("supervisor killed at spawn, then the pane");
        self.truth(format!("pane kill {name} while no supervisor runs (killed right after its new-session)"));
        self.pend(inc, "pane kill after a kill at spawn");
        false
    }

    fn add(&mut self, inc: Incarnation, what: &str) -> usize {
        self.incs.push(inc);
        let index = self.incs.len() - 1;
        self.pend(index, what);
        index
    }

    fn pend(&mut self, inc: usize, what: &str) {
        self.pending.push(Pending { inc, since: Instant::now(), what: what.to_owned() });
    }

    fn act(&mut self, at: usize, phase: u8) {
        let Some(&index) = self.of_planned.get(&at) else { return };
        if !self.ready_to_act(at) {
            let name = self.incs[index].name.clone();
            self.report
                .wrong
                .push(format!("{name} was never ready for its fate (unsettled, or its launch never recorded)"));
            return;
        }
        let fate = self.plan.sessions[at].fate;
        let (name, agent) = (self.incs[index].name.clone(), self.incs[index].agent.clone());
        let what = match (fate, phase) {
            (Fate::ExitClean, _) | (Fate::RestartThenExit, 1) => {
                self.world.exit_agent(&agent, 0);
                self.incs[index].exit_clean();
                "exit 0"
            }
            (Fate::Crash(n), _) | (Fate::CrashThenRm(n), 0) | (Fate::StopRestartCrash(n), 1) => {
                self.world.exit_agent(&agent, n);
                self.incs[index].crash(n);
                if matches!(fate, Fate::CrashThenRm(_)) {
                    self.then(at, 1);
                }
                "crash"
            }
            (Fate::KilledAtSpawn, _) if self.spawn_killed.contains(&at) => return,
            (Fate::PaneKilled | Fate::KilledAtSpawn, _) => {
                self.world.kill_pane(&name);
                self.incs[index].pane_vanished();
                "pane kill"
            }
            (Fate::Rm, _) | (Fate::CrashThenRm(_), 1) | (Fate::ReusedAfterRm, 0) => {
                if fate == Fate::ReusedAfterRm {
                    self.keep_late_tokens(at, index);
                }
                let code = self.world.session(&["rm", &name]);
                self.expect_zero("rm", &name, code);
                self.incs[index].rm();
                if fate == Fate::ReusedAfterRm {
                    self.then(at, 1);
                }
                "rm"
            }
            (Fate::Stop, _) => {
                let code = self.world.session(&["stop", &name]);
                self.expect_zero("stop", &name, code);
                self.incs[index].stop();
                "stop"
            }
            (Fate::RestartThenExit, _) => return self.restart_running(at, index),
            (Fate::StopRestartCrash(_), _) => return self.stop_then_restart(at, index),
            (Fate::ReusedAfterRm, 1) => return self.reuse(at, index),
            (Fate::ReusedAfterRm, _) => return self.late_after_new_life(at, index),
            (Fate::RunOn | Fate::CrashThenRm(_), _) => return,
        };
        self.truth(format!("{what} {name} (agent {agent})"));
        self.pend(index, what);
    }

    /// `restart` of the running leased session (L-11, L-13): its lease stays as it was, a `restart` line, a new
    /// start; then the agent exits 0.
    fn restart_running(&mut self, at: usize, index: usize) {
        let (name, agent) = (self.incs[index].name.clone(), self.incs[index].agent.clone());
        let (code, out) = self.world.session_out(&["restart", &name]);
        self.expect_zero("restart", &name, code);
        if !out.contains("killed") {
            self.report.wrong.push(format!("restart {name} of a running session printed {:?}", out.trim()));
        }
        self.incs[index].restart();
        self.report.count_event("restart of a running session");
        self.truth(format!("restart {name} (agent {agent}): {}", out.trim()));
        self.pend(index, "restart");
        self.then(at, 1);
    }

    /// `stop`, then `restart` at once. The supervisor reaps a parked one-shot entry at its next tick, so which came
    /// first decides the expectation: `restart` says "no longer stopped" only for an entry still listed (then the
    /// assignment is revived, L-12, and its crash follows), and refuses a name the reap removed. Every other pair
    /// runs right after a supervisor SIGKILL, so the revival is met however fast the supervisor reaps.
    fn stop_then_restart(&mut self, at: usize, index: usize) {
        let (name, agent) = (self.incs[index].name.clone(), self.incs[index].agent.clone());
        self.stop_restarts += 1;
        if self.stop_restarts % 2 == 1 && self.world.supervisor_up() {
            self.kill_supervisor(format!("supervisor SIGKILL before the stop and restart of {name}"));
        }
        let code = self.world.session(&["stop", &name]);
        self.expect_zero("stop", &name, code);
        let (code, out) = self.world.session_out(&["restart", &name]);
        let what = if code == 0 && out.contains("no longer stopped") {
            self.incs[index].stop_before_restart();
            self.incs[index].restart();
            self.then(at, 1);
            "stop, restart (revived)"
        } else {
            if code == 0 {
                self.report.wrong.push(format!("restart {name} after its stop printed {:?}", out.trim()));
            }
            self.incs[index].stop();
            "stop, restart (reaped first)"
        };
        self.report.count_event(what);
        self.truth(format!("{what} {name} (agent {agent}): restart exited {code}: {}", out.trim()));
        self.pend(index, what);
    }

    /// Before the `rm` of a name to be reused: its pane's epilogue arguments, from its launch file.
    fn keep_late_tokens(&mut self, at: usize, index: usize) {
        let inc = &self.incs[index];
        let late = self.world.late_tokens(&inc.name).unwrap_or_else(|| {
            self.report.wrong.push(format!("the launch file of {} has no epilogue `NAME 0 GEN LIFE`", inc.name));
            Late { lease_gen: inc.lease_gen.clone(), life: inc.lease_gen.clone() }
        });
        self.late.insert(at, late);
    }

    /// The old pane's epilogues once more, now that the name's new life runs: they must change nothing of it.
    fn late_after_new_life(&mut self, at: usize, index: usize) {
        let Some(late) = self.late.get(&at).cloned() else { return };
        let name = self.incs[index].name.clone();
        match self.world.replay_late(&name, &late, "after the new life started") {
            Ok(()) => {
                self.report.count_event("late epilogues after the new life");
                self.truth(format!(
                    "late epilogues of gen {} replayed after {name}'s new life started",
                    late.lease_gen
                ));
                self.pend(index, "late epilogues");
            }
            Err(why) => self.report.wrong.push(why),
        }
    }

    /// Queues phase `phase` of a fate half a second from now (it also waits for the previous phase to settle).
    fn then(&mut self, at: usize, phase: u8) {
        let due = self.started.elapsed() + Duration::from_millis(500);
        self.steps.push((due, Step::Act(at, phase)));
        self.steps.sort_by_key(|(t, _)| *t);
    }

    fn expect_zero(&mut self, verb: &str, name: &str, code: i32) {
        if code != 0 {
            self.report.wrong.push(format!("agent-box-session {verb} {name} exited {code}"));
        }
    }

    /// The second life of a name, with the old pane's late epilogues before its entry exists (see
    /// [`World::reuse`]); once its pane runs, they arrive once more (phase 2).
    fn reuse(&mut self, at: usize, old: usize) {
        let (name, agent) = (self.incs[old].name.clone(), format!("{}r", self.incs[old].agent));
        let Some(late) = self.late.get(&at).cloned() else { return };
        match self.world.reuse(&name, &agent, &late) {
            Ok(new_gen) => {
                self.truth(format!("reuse {name} gen {new_gen}; late epilogues of gen {} replayed", late.lease_gen));
                self.incs[old].superseded = true;
                let inc = self.add(Incarnation::dispatched(&name, &agent, &new_gen), "reuse");
                self.of_planned.insert(at, inc);
                self.then(at, 2);
            }
            Err(why) => self.report.wrong.push(why),
        }
    }

    fn kill_server(&mut self) {
        self.world.kill_server();
        self.report.server_kills += 1;
        let live: Vec<usize> =
            (0..self.incs.len()).filter(|i| !self.incs[*i].superseded && self.incs[*i].pane_expected()).collect();
        self.truth(format!("tmux server killed with {} panes up", live.len()));
        for index in live {
            self.incs[index].server_killed();
            self.pend(index, "server kill");
        }
    }

    /// At the limit: `accept` free slots and `burst` concurrent dispatches, on a drained queue (the box was quiet).
    /// Issue 24: every one is acknowledged (exit 0); exactly `accept` start at once, the others wait in the intake
    /// queue and, once the limit is managed again, the supervisor admits each of them exactly once.
    fn burst(&mut self, accept: usize, burst: usize) {
        let Some(used) = self.world.used() else {
            self.report.wrong.push("capacity could not be read before the burst".into());
            return;
        };
        self.limit_frozen = true;
        self.world.sb.set_limit(&(used + accept).to_string());
        let labels: Vec<String> = (0..burst).map(|j| format!("burst{j}")).collect();
        let world = &self.world;
        let codes: Vec<i32> = std::thread::scope(|s| {
            let runs: Vec<_> = labels
                .iter()
                .enumerate()
                .map(|(j, label)| s.spawn(move || world.dispatch(label, &format!("b{j}"), 9000 + j)))
                .collect();
            runs.into_iter().map(|r| r.join().unwrap_or(-1)).collect()
        });
        let at_once: Vec<Option<String>> = labels.iter().map(|label| self.world.minted(label)).collect();
        (self.limit_frozen, self.limit) = (false, None);
        self.truth(format!("burst of {burst} at limit {} (used {used}): exits {codes:?}", used + accept));
        let started = at_once.iter().filter(|s| s.is_some()).count();
        if started != accept || codes.iter().any(|c| *c != 0) {
            self.report.wrong.push(format!(
                "burst at the limit: exits {codes:?}, {started} started at once, expected all 0 and {accept} started"
            ));
        }
        for (j, (label, name)) in labels.iter().zip(at_once).enumerate() {
            let agent = format!("b{j}");
            match name {
                Some(name) => {
                    let lease_gen = self.world.lease_gen(&name).unwrap_or_default();
                    self.report.count_fate("burst, run on");
                    self.add(Incarnation::dispatched(&name, &agent, &lease_gen), "dispatch");
                }
                None => self.queued(label, &agent, None, "burst, run on"),
            }
        }
    }

    /// Records the settle time of every pending action whose expected state is now observed.
    fn poll_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let seen = Seen::now(&self.world, &self.watch, &mut self.kickoff_cache);
        let mut still = Vec::new();
        for pending in std::mem::take(&mut self.pending) {
            let inc = &self.incs[pending.inc];
            if seen.matches(inc, &self.incs) {
                self.report.settle_ms.push(pending.since.elapsed().as_secs_f64() * 1000.0);
            } else if pending.since.elapsed() > SETTLE_LIMIT {
                let detail = seen.describe(inc, &self.incs);
                self.report.wrong.push(format!("{} of {} did not settle: {detail}", pending.what, inc.name));
            } else {
                still.push(pending);
            }
        }
        self.pending = still;
    }

    fn settle_everything(&mut self) {
        while !self.pending.is_empty() || !self.waiting.is_empty() {
            self.tend_supervisor();
            self.discover();
            self.manage_limit();
            self.poll_pending();
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The final check of every incarnation, the observers' figures, and the truth log on disk.
    fn finish(mut self) -> Report {
        let seen = Seen::now(&self.world, &self.watch, &mut self.kickoff_cache);
        for inc in &self.incs {
            if seen.matches(inc, &self.incs) {
                self.report.settled_correctly += 1;
            } else {
                let detail = seen.describe(inc, &self.incs);
                self.report.wrong.push(format!("{} (agent {}): {detail}", inc.name, inc.agent));
            }
        }
        self.watch.stop();
        if let (Some(notifier), Ok(log)) = (&self.notifier, self.watch.log.lock()) {
            let leases = lease::LeaseDir::new(self.world.sb.paths().lease_dir());
            let (figures, wrong) = notifier.figures(&leases, &self.incs, &log.lines);
            self.report.wrong.extend(wrong);
            self.report.notify = Some(figures);
        }
        self.report.dispatched = self.incs.len();
        self.report.samples = self.watch.samples.lock().map(|s| s.clone()).unwrap_or_default();
        if let Ok(log) = self.watch.log.lock() {
            self.report.log_lines = log.lines.len();
            self.report.log_trims = log.trims;
            self.report.log_gaps = log.gaps;
        }
        self.report.supervisor_kills = self.world.supervisor_kills;
        self.report.kills_at_spawn = self.world.kills_at_spawn;
        self.report.elapsed = self.started.elapsed();
        self.report.truth_log = write_truth(&self.options, &self.report.truth);
        self.report
    }
}

/// `target/chaos/truth-<seed>-<sessions>.log`: every action with its time, for replaying a failure by hand.
fn write_truth(options: &Options, truth: &[String]) -> PathBuf {
    let dir = target_dir().join("chaos");
    let path = dir.join(format!("truth-{}-{}.log", options.seed, options.sessions));
    let _ = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, truth.join("\n") + "\n"));
    path
}
