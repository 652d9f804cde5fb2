//! The chaos run (issue 13): up to hundreds of sessions dispatched through `agent-box-webhook-spawn` into a private
//! world running the real supervisor, each meeting a seeded fate (clean exit, crash, pane killed, `rm`, `stop`,
//! crash then `rm`, its name reused after `rm` with the old pane's epilogues arriving late), while the supervisor
//! is SIGKILLed and restarted (also right after a `new-session`), the tmux server is killed once and a burst of
//! concurrent dispatches hits the capacity limit. A model derived from the spec says what every lease must read
//! and which end lines the hook log must hold; observers sample the registry and every lease file all along and
//! keep every hook-log line across its trims. `cargo test` runs a small fixed seed; `cargo xtask chaos` any size.

mod model;
mod plan;
mod report;
mod watch;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lease::{LeaseDir, LeaseState};
use serde_json::Value;

pub use self::model::{Expected, Incarnation};
pub use self::plan::{Fate, Global, Plan, Planned};
pub use self::report::Report;
use self::watch::Watch;
use self::world::World;
use crate::workspace_root;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub sessions: usize,
    pub seed: u64,
    /// The span over which dispatches and actions are spread (settling may take longer).
    pub duration: Duration,
}

/// How long an action may take to settle before it counts as wrong (a liveness bound, never a timing check).
const SETTLE_LIMIT: Duration = Duration::from_secs(120);
/// How long a restarted supervisor stays down after a kill.
const SUPERVISOR_PAUSE: Duration = Duration::from_millis(700);

/// One thing the driver does, due at an offset from the start.
#[derive(Debug, Clone)]
enum Step {
    Dispatch(usize),
    /// The fate action of planned session `.0`, phase `.1` (crash then rm and reuse have two).
    Act(usize, u8),
    Global(Global),
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
}

impl Driver {
    fn new(options: &Options, plan: Plan) -> Self {
        let world = World::new(options.sessions + 64);
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
        }
    }

    fn truth(&mut self, line: String) {
        let at = self.started.elapsed().as_secs_f64();
        self.report.truth.push(format!("{at:9.3} {line}"));
    }

    /// Runs every step when due and ready, then waits for everything to settle.
    fn drive(&mut self) {
        while !self.steps.is_empty() {
            self.world.keep_supervisor(SUPERVISOR_PAUSE);
            self.poll_pending();
            if let Some(index) = self.next_ready() {
                let (_, step) = self.steps.remove(index);
                self.perform(step);
                continue;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle_everything();
    }

    /// The first due step that may run now. A step that needs a quiet box blocks every later one until it is.
    fn next_ready(&mut self) -> Option<usize> {
        let now = self.started.elapsed();
        for (index, (due, step)) in self.steps.iter().enumerate() {
            if *due > now {
                return None;
            }
            match step {
                Step::Global(Global::KillServer | Global::Burst { .. }) => return self.when_quiet(index),
                Step::Act(at, _) if !self.ready_to_act(*at) && now - *due < SETTLE_LIMIT => {}
                _ => return Some(index),
            }
        }
        None
    }

    /// `index` once the box is quiet; after [`SETTLE_LIMIT`] of waiting it runs anyway, and the wait is wrong.
    fn when_quiet(&mut self, index: usize) -> Option<usize> {
        let since = *self.waiting_quiet.get_or_insert_with(Instant::now);
        if self.quiet() {
            self.waiting_quiet = None;
            return Some(index);
        }
        if since.elapsed() < SETTLE_LIMIT {
            return None;
        }
        self.waiting_quiet = None;
        let unrecorded: Vec<&str> = self
            .incs
            .iter()
            .filter(|i| !i.superseded && i.pane_expected() && !self.world.recorded(&i.name))
            .map(|i| i.name.as_str())
            .collect();
        let (pending, up) = (self.pending.len(), self.world.supervisor_up());
        self.report.wrong.push(format!(
            "the box never became quiet: {pending} actions pending, supervisor up {up}, panes without a recorded launch {unrecorded:?}"
        ));
        Some(index)
    }

    /// The session's last action has settled; a pane to be killed must also have its launch recorded (a pane
    /// killed before any supervisor recorded it is started again as a first spawn, which no lease can tell).
    fn ready_to_act(&self, planned: usize) -> bool {
        let Some(&inc) = self.of_planned.get(&planned) else { return self.dispatch_failed(planned) };
        let settled = self.pending.iter().all(|p| p.inc != inc);
        let recorded =
            self.plan.sessions[planned].fate != Fate::PaneKilled || self.world.recorded(&self.incs[inc].name);
        settled && recorded
    }

    fn dispatch_failed(&self, planned: usize) -> bool {
        !self.steps.iter().any(|(_, s)| matches!(s, Step::Dispatch(p) if *p == planned))
    }

    /// Nothing pending, a supervisor running, and every pane the model expects recorded in its side file (so a
    /// server kill is a vanished pane for each of them, exactly).
    fn quiet(&self) -> bool {
        self.pending.is_empty()
            && self.world.supervisor_up()
            && self.incs.iter().filter(|i| !i.superseded && i.pane_expected()).all(|i| self.world.recorded(&i.name))
    }

    fn perform(&mut self, step: Step) {
        match step {
            Step::Dispatch(at) => self.dispatch(at),
            Step::Act(at, phase) => self.act(at, phase),
            Step::Global(Global::KillSupervisor) => {
                if self.world.supervisor_up() {
                    self.world.kill_supervisor();
                    self.truth("supervisor SIGKILL".into());
                }
            }
            Step::Global(Global::KillServer) => self.kill_server(),
            Step::Global(Global::Burst { accept, burst }) => self.burst(accept, burst),
        }
    }

    fn dispatch(&mut self, at: usize) {
        let planned = self.plan.sessions[at].clone();
        if planned.kill_supervisor_at_spawn && self.world.supervisor_up() {
            self.world.arm_kill_at_spawn();
            self.truth("armed: SIGKILL the supervisor right after its next new-session".into());
        }
        let label = format!("s{}", planned.index);
        let code = self.world.dispatch(&label, &label, planned.index + 1);
        match (code, self.world.minted(&label)) {
            (0, Some(name)) => {
                let lease_gen = self.world.lease_gen(&name).unwrap_or_default();
                self.truth(format!("dispatch {label} -> {name} gen {lease_gen} fate {}", planned.fate.label()));
                self.report.count_fate(planned.fate.label());
                let inc = self.add(Incarnation::dispatched(&name, &label, &lease_gen), "dispatch");
                self.of_planned.insert(at, inc);
            }
            (code, _) => self.report.wrong.push(format!("the dispatch of {label} exited {code}")),
        }
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
            (Fate::ExitClean, _) => {
                self.world.exit_agent(&agent, 0);
                self.incs[index].exit_clean();
                "exit 0"
            }
            (Fate::Crash(n), _) | (Fate::CrashThenRm(n), 0) => {
                self.world.exit_agent(&agent, n);
                self.incs[index].crash(n);
                if matches!(fate, Fate::CrashThenRm(_)) {
                    self.then(at, 1);
                }
                "crash"
            }
            (Fate::PaneKilled, _) => {
                self.world.kill_pane(&name);
                self.incs[index].pane_vanished();
                "pane kill"
            }
            (Fate::Rm, _) | (Fate::CrashThenRm(_), 1) | (Fate::ReusedAfterRm, 0) => {
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
            (Fate::ReusedAfterRm, _) => return self.reuse(at, index),
            (Fate::RunOn | Fate::CrashThenRm(_), _) => return,
        };
        self.truth(format!("{what} {name} (agent {agent})"));
        self.pend(index, what);
    }

    /// Queues phase `phase` of a two-step fate half a second from now (it also waits for the first phase to settle).
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

    /// The second life of a name, with the old pane's late epilogues (see [`World::reuse`]).
    fn reuse(&mut self, at: usize, old: usize) {
        let (name, agent, old_gen) =
            (self.incs[old].name.clone(), format!("{}r", self.incs[old].agent), self.incs[old].lease_gen.clone());
        match self.world.reuse(&name, &agent, &old_gen) {
            Ok(new_gen) => {
                self.truth(format!("reuse {name} gen {new_gen}; late epilogues of gen {old_gen} replayed"));
                self.incs[old].superseded = true;
                let inc = self.add(Incarnation::dispatched(&name, &agent, &new_gen), "reuse");
                self.of_planned.insert(at, inc);
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

    /// At the limit: `accept` free slots and `burst` concurrent dispatches; exactly `accept` are taken, and every
    /// refused one leaves nothing behind.
    fn burst(&mut self, accept: usize, burst: usize) {
        let Some(used) = self.world.used() else {
            self.report.wrong.push("capacity could not be read before the burst".into());
            return;
        };
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
        self.world.sb.set_limit(&(self.options.sessions + 64).to_string());
        self.truth(format!("burst of {burst} at limit {} (used {used}): exits {codes:?}", used + accept));
        let accepted = codes.iter().filter(|c| **c == 0).count();
        if accepted != accept || codes.iter().any(|c| *c != 0 && *c != 75) {
            self.report.wrong.push(format!("burst at the limit: exits {codes:?}, expected {accept} accepted"));
        }
        for (j, (label, code)) in labels.iter().zip(&codes).enumerate() {
            self.burst_result(label, &format!("b{j}"), *code);
        }
    }

    fn burst_result(&mut self, label: &str, agent: &str, code: i32) {
        if code == 0 {
            let Some(name) = self.world.minted(label) else { return };
            let lease_gen = self.world.lease_gen(&name).unwrap_or_default();
            self.report.count_fate("burst, run on");
            self.add(Incarnation::dispatched(&name, agent, &lease_gen), "dispatch");
            return;
        }
        self.report.refused += 1;
        match self.leftovers_of(label) {
            None => self.report.refused_clean += 1,
            Some(what) => self.report.wrong.push(format!("refused batch {label} left {what}")),
        }
    }

    /// What a refused batch left: an entry, a lease, a filter or a hook-log line.
    fn leftovers_of(&self, label: &str) -> Option<String> {
        let prefix = format!("hook-chaos-{label}-");
        if let Some(name) = self.world.minted(label) {
            return Some(format!("an entry {name}"));
        }
        let paths = self.world.sb.paths();
        let starts = |dir: PathBuf, prefix: &str| {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
        };
        if starts(paths.lease_dir(), &prefix) {
            return Some("a lease".into());
        }
        if starts(self.world.sb.home().join(".local/state/local-webhook"), &format!("filter.agent-{prefix}")) {
            return Some("a filter".into());
        }
        let logged = self.watch.lines().iter().any(|l| l.contains(&format!("\"name\":\"{prefix}")));
        logged.then(|| "a hook-log line".into())
    }

    /// Records the settle time of every pending action whose expected state is now observed.
    fn poll_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let seen = Seen::now(&self.world, &self.watch);
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
        while !self.pending.is_empty() {
            self.world.keep_supervisor(SUPERVISOR_PAUSE);
            self.poll_pending();
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The final check of every incarnation, the observers' figures, and the truth log on disk.
    fn finish(mut self) -> Report {
        let seen = Seen::now(&self.world, &self.watch);
        for inc in &self.incs {
            if seen.matches(inc, &self.incs) {
                self.report.settled_correctly += 1;
            } else {
                let detail = seen.describe(inc, &self.incs);
                self.report.wrong.push(format!("{} (agent {}): {detail}", inc.name, inc.agent));
            }
        }
        self.watch.stop();
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

/// One observation of the box: the live set, every lease, the registry keys and the hook log.
#[derive(Debug)]
struct Seen {
    live: BTreeSet<String>,
    listed: BTreeSet<String>,
    leases: BTreeMap<String, LeaseState>,
    /// Per name, its hook-log lines as `(what, how, outcome)`, in order.
    lines: BTreeMap<String, Vec<(String, String, Option<String>)>>,
    starts: BTreeMap<String, usize>,
}

impl Seen {
    fn now(world: &World, watch: &Watch) -> Self {
        let sb = &world.sb;
        let live: BTreeSet<String> = sb.live().into_iter().collect();
        let listed = registry::read(&sb.registry())
            .document_or_empty()
            .map(|d| d.names().map(str::to_owned).collect())
            .unwrap_or_default();
        let leases =
            LeaseDir::new(sb.paths().lease_dir()).list().into_iter().map(|(n, s)| (n.to_string(), s)).collect();
        let mut lines: BTreeMap<String, Vec<(String, String, Option<String>)>> = BTreeMap::new();
        for line in watch.lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            let text = |k: &str| v[k].as_str().map(str::to_owned);
            if let Some(name) = text("name") {
                let record = (text("what").unwrap_or_default(), text("how").unwrap_or_default(), text("outcome"));
                lines.entry(name).or_default().push(record);
            }
        }
        Self { live, listed, leases, lines, starts: agent_starts(&sb.root().join("agents")) }
    }

    /// This incarnation's lease: `None` when there is none of its gen, else its outcome.
    fn lease_of(&self, inc: &Incarnation) -> Option<Option<String>> {
        match self.leases.get(&inc.name)? {
            LeaseState::Present(l) if l.gen_value() == Some(inc.lease_gen.as_str()) => {
                Some(l.outcome_text().map(str::to_owned))
            }
            LeaseState::Unreadable => Some(Some("<unreadable>".into())),
            _ => None,
        }
    }

    /// The end lines of this incarnation: those after its spawn line, up to the next life's spawn line.
    fn ends_of(&self, inc: &Incarnation, all: &[Incarnation]) -> Vec<(String, Option<String>)> {
        let life = all.iter().filter(|i| i.name == inc.name).position(|i| std::ptr::eq(i, inc)).unwrap_or(0);
        let lines = self.lines.get(&inc.name).map(Vec::as_slice).unwrap_or_default();
        let mut spawns = 0;
        let mut ends = Vec::new();
        for (what, how, outcome) in lines {
            if what == "spawn" {
                spawns += 1;
            } else if what == "end" && spawns == life + 1 {
                ends.push((how.clone(), outcome.clone()));
            }
        }
        ends
    }

    fn observed(&self, inc: &Incarnation, all: &[Incarnation]) -> Expected {
        Expected { lease: self.lease_of(inc), ends: self.ends_of(inc, all), listed: self.listed.contains(&inc.name) }
    }

    fn matches(&self, inc: &Incarnation, all: &[Incarnation]) -> bool {
        let observed = self.observed(inc, all);
        let started = self.starts.get(&inc.agent).copied().unwrap_or(0) >= inc.min_starts;
        if inc.superseded {
            return observed.lease == inc.expected.lease && observed.ends == inc.expected.ends;
        }
        observed == inc.expected && started && self.live.contains(&inc.name) == inc.pane_expected()
    }

    fn describe(&self, inc: &Incarnation, all: &[Incarnation]) -> String {
        format!(
            "expected {:?}, {} starts, pane {}; observed {:?}, {} starts, pane {}",
            inc.expected,
            inc.min_starts,
            inc.pane_expected(),
            self.observed(inc, all),
            self.starts.get(&inc.agent).copied().unwrap_or(0),
            self.live.contains(&inc.name)
        )
    }
}

/// How often each fake agent started: the `<agent>.<k>.argv` records (80 I8).
fn agent_starts(dir: &std::path::Path) -> BTreeMap<String, usize> {
    let mut starts = BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = file.strip_suffix(".argv")
            && let Some((agent, _)) = stem.rsplit_once('.')
        {
            *starts.entry(agent.to_owned()).or_insert(0) += 1;
        }
    }
    starts
}

/// `target/chaos/truth-<seed>-<sessions>.log`: every action with its time, for replaying a failure by hand.
fn write_truth(options: &Options, truth: &[String]) -> PathBuf {
    let dir = workspace_root().join("target/chaos");
    let path = dir.join(format!("truth-{}-{}.log", options.seed, options.sessions));
    let _ = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, truth.join("\n") + "\n"));
    path
}
