//! The concurrent writers of a round, each a thread that runs real product processes on the mount and writes what
//! they acknowledged into the ledger: 4 locked read-modify-write loops (the registry crate's `rmw` example),
//! `agent-box-session add`/`rm`, `agent-box-webhook-spawn` followed by the baked epilogue, the queue box's
//! deliveries and its supervisor (`queue.rs`), and the negative control (a rename without fsync, done here
//! in-process).

mod queue;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use base::SessionName;
use lease::{LeaseDir, LeaseState};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::ledger::{Accepted, Dispatch, EpilogueAck, Kind, Ledger, QueueAck};
use super::world::World;

/// The locked read-modify-write loops; each bumps the shared key and its own.
pub const RMW_LOOPS: usize = 4;
pub const SHARED_KEY: &str = "pl-shared";
/// How long SIGKILLed writers may take to die before LazyFS is taken to hang.
const STUCK_AFTER: Duration = Duration::from_secs(3);
/// More commits than any round reaches: the loop ends by being killed.
const RMW_COUNT: &str = "1000000";

/// What the writer threads share with the round.
#[derive(Debug)]
pub struct Writers<'w> {
    world: &'w World,
    ledger: Mutex<Ledger>,
    pids: Mutex<Vec<u32>>,
    stop: AtomicBool,
    /// Writer threads not yet finished; [`Writers::halt`] kills until it is 0.
    running: AtomicUsize,
    seed: u64,
}

/// Counts a writer thread as finished when it returns or panics.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A writer thread that panicked leaves its last entry complete (every update is one statement), so its data
    // is still good.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'w> Writers<'w> {
    pub fn new(world: &'w World, seed: u64) -> Self {
        Self {
            world,
            ledger: Mutex::new(Ledger::new(RMW_LOOPS)),
            pids: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            seed,
        }
    }

    /// Starts every writer thread in `scope`; they run until [`Writers::halt`], which the caller must reach on
    /// every path (the scope waits for the threads).
    pub fn start<'s>(&'s self, scope: &'s thread::Scope<'s, '_>) {
        let spawn = |body: Box<dyn FnOnce() + Send + 's>| {
            self.running.fetch_add(1, Ordering::SeqCst);
            scope.spawn(move || {
                let _running = Running(&self.running);
                body();
            });
        };
        for i in 0..RMW_LOOPS {
            spawn(Box::new(move || self.rmw_loop(i)));
        }
        spawn(Box::new(|| self.session_loop()));
        spawn(Box::new(|| self.spawn_loop()));
        spawn(Box::new(|| self.queue_loop()));
        spawn(Box::new(|| self.supervisor_loop()));
        spawn(Box::new(|| self.control_loop()));
    }

    /// Stops the writers the way a power loss does: every product process gets SIGKILL, again and again, until no
    /// writer thread is left that could start another one. A process blocked in a FUSE request that LazyFS never
    /// answers cannot die (LazyFS a47a5ba deadlocks now and then under these writers); after [`STUCK_AFTER`]
    /// `lazyfs` (its pid) is killed too, which aborts the requests: a power loss all the same. True when it was.
    pub fn halt(&self, lazyfs: Option<u32>) -> bool {
        self.stop.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let mut hung = false;
        while self.running.load(Ordering::SeqCst) > 0 {
            for pid in locked(&self.pids).iter() {
                let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
            }
            if let Some(pid) = lazyfs.filter(|_| !hung && started.elapsed() > STUCK_AFTER) {
                hung = true;
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
            thread::sleep(Duration::from_millis(5));
        }
        hung
    }

    pub fn into_ledger(self) -> Ledger {
        self.ledger.into_inner().unwrap_or_else(PoisonError::into_inner)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Spawns a product process and remembers its pid for [`Writers::halt`].
    fn spawn(&self, cmd: &mut Command) -> Option<Child> {
        let child = cmd.spawn().ok()?;
        locked(&self.pids).push(child.id());
        Some(child)
    }

    fn forget(&self, child: &Child) {
        locked(&self.pids).retain(|pid| *pid != child.id());
    }

    /// Runs to completion; the exit code (None when killed or not started) and stdout.
    fn run(&self, mut cmd: Command, stdin: Option<&str>) -> (Option<i32>, String) {
        if self.stopped() {
            return (None, String::new());
        }
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped());
        let Some(mut child) = self.spawn(&mut cmd) else { return (None, String::new()) };
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        let mut out = String::new();
        if let Some(mut pipe) = child.stdout.take() {
            let _ = pipe.read_to_string(&mut out);
        }
        let code = child.wait().ok().and_then(|status| status.code());
        self.forget(&child);
        (code, out)
    }

    /// One rmw process for the whole round; every `committed <n>` line is an acknowledgement.
    fn rmw_loop(&self, index: usize) {
        let own = format!("pl-own-{index}");
        let mut cmd = self.world.product("examples/rmw");
        cmd.arg(self.world.paths.registry()).args([SHARED_KEY, RMW_COUNT, own.as_str()]).stdout(Stdio::piped());
        let Some(mut child) = self.spawn(&mut cmd) else { return };
        if let Some(pipe) = child.stdout.take() {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("committed ").and_then(|n| n.parse().ok()) {
                    locked(&self.ledger).rmw_committed(index, n);
                }
            }
        }
        let _ = child.wait();
        self.forget(&child);
    }

    /// `add pl-s-<k>`, then (half the time) `rm pl-s-<k>`, until stopped.
    fn session_loop(&self) {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x5e55);
        for k in 0.. {
            if self.stopped() {
                return;
            }
            let name = format!("pl-s-{k}");
            if !self.session_op(&name, Kind::Add) {
                continue;
            }
            if rng.random_bool(0.5) {
                self.session_op(&name, Kind::Rm);
            }
        }
    }

    /// One `agent-box-session add|rm NAME`; true when it was acknowledged (exit 0).
    fn session_op(&self, name: &str, kind: Kind) -> bool {
        locked(&self.ledger).session_in_flight(name);
        let mut cmd = self.world.product("agent-box-session");
        match kind {
            Kind::Add => cmd.args(["add", name, "--harness", "tool"]),
            _ => cmd.args(["rm", name]),
        };
        let acked = self.run(cmd, None).0 == Some(0);
        if acked {
            locked(&self.ledger).session_acked(name, kind);
        }
        acked
    }

    /// A dispatch per iteration; most dispatched sessions then end through the epilogue, as their pane would.
    fn spawn_loop(&self) {
        let mut rng = StdRng::seed_from_u64(self.seed ^ 0x0b0e);
        for j in 0.. {
            if self.stopped() {
                return;
            }
            let name = match self.dispatch(j) {
                Some(Accepted::Admitted(name)) => name,
                // The main box never runs out of slots: its batch queues only when the admission failed (LazyFS
                // died between the record and the lease); the record must be there (IN-6).
                Some(accepted) => {
                    locked(&self.ledger).spawn_queued.push(QueueAck { key: format!("pl-{j}"), accepted });
                    continue;
                }
                None => continue,
            };
            locked(&self.ledger).dispatched.push(Dispatch { name: name.clone(), epilogue: None });
            if rng.random_bool(0.6) {
                let status = if rng.random_bool(0.5) { 0 } else { 3 };
                if let Some(ack) = self.epilogue(&name, status) {
                    let mut ledger = locked(&self.ledger);
                    if let Some(d) = ledger.dispatched.iter_mut().find(|d| d.name == name) {
                        d.epilogue = Some(ack);
                    }
                }
            }
        }
    }

    /// `agent-box-webhook-spawn` for key `pl/<j>`, delivery id `pl-<j>`; what its stdout said when it exited 0.
    fn dispatch(&self, j: u64) -> Option<Accepted> {
        let mut cmd = self.world.product("agent-box-webhook-spawn");
        cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", format!("pl/{j}"))
            .env("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:pl/*")
            .env("LOCAL_WEBHOOK_SPAWN_EVENT", "issues")
            .env("LOCAL_WEBHOOK_SPAWN_COUNT", "1")
            .env("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"number":"{j}","delivery":"pl-{j}"}}"#));
        let (code, out) = self.run(cmd, Some(&format!("[github] issue #{j} opened\n")));
        if code != Some(0) {
            return None;
        }
        Accepted::parse(&out)
    }

    /// The baked epilogue `NAME STATUS GEN GEN` (webhook-spawn makes the lease's gen the entry's life), then what
    /// it wrote, read back. None when the lease could not be read (no gen to pass) or the process did not finish.
    fn epilogue(&self, name: &str, status: u32) -> Option<EpilogueAck> {
        let key = SessionName::parse(name).ok()?;
        let leases = LeaseDir::new(self.world.paths.lease_dir());
        let LeaseState::Present(lease) = leases.read(&key) else { return None };
        let life = lease.gen_value()?.to_owned();
        let mut cmd = self.world.command(&self.world.epilogue);
        cmd.args([name, &status.to_string(), &life, &life]);
        self.run(cmd, None).0?;
        let registry = registry::read(self.world.paths.registry())
            .document_or_empty()
            .is_some_and(|doc| doc.entry(name).is_some_and(|e| epilogue_field_holds(&e, status)));
        let lease = match leases.read(&key) {
            LeaseState::Absent => status == 0,
            LeaseState::Present(lease) => status != 0 && lease.outcome_is_set(),
            LeaseState::Unreadable => false,
        };
        Some(EpilogueAck { status, registry, lease })
    }

    /// The negative control: `value.tmp` written and renamed onto `value` with no fsync at all, acknowledged at
    /// once. After a power loss it must have lost data, or the test cannot see a missing fsync.
    fn control_loop(&self) {
        let target = self.world.control_file();
        let temp = target.with_extension("tmp");
        for n in 1.. {
            if self.stopped() || fs::write(&temp, n.to_string()).and_then(|()| fs::rename(&temp, &target)).is_err() {
                return;
            }
            let mut ledger = locked(&self.ledger);
            ledger.control_writes += 1;
            ledger.control_last = n;
            drop(ledger);
            thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Whether an entry holds what the epilogue records for `status`: `stopped: true` for 0, else `died: status`.
pub fn epilogue_field_holds(entry: &registry::Entry<'_>, status: u32) -> bool {
    if status == 0 { entry.stopped() } else { entry.died().and_then(serde_json::Value::as_u64) == Some(status.into()) }
}
