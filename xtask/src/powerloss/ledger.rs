//! What the writers of one round were told was done (their acknowledgements), recorded as it happens, so that the
//! check after the power loss knows exactly which updates must be on disk.

use std::collections::BTreeMap;

/// The kinds of acknowledged update, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A `committed <n>` line of the rmw example.
    Rmw,
    /// Exit 0 of `agent-box-session add`.
    Add,
    /// Exit 0 of `agent-box-session rm`.
    Rm,
    /// Exit 0 of `agent-box-webhook-spawn`: its entry must stay.
    Spawn,
    /// The epilogue's registry field (`stopped` / `died`), read back after it exited.
    Epilogue,
    /// The epilogue's lease change (deleted, or its outcome set), read back after it exited.
    EpilogueLease,
    /// Exit 0 of `agent-box-webhook-spawn` on the queue box (issue 24): its delivery id must stay queued,
    /// admitted or ended, once.
    Queue,
}

pub const KINDS: [Kind; 7] =
    [Kind::Rmw, Kind::Add, Kind::Rm, Kind::Spawn, Kind::Epilogue, Kind::EpilogueLease, Kind::Queue];

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Rmw => "rmw",
            Kind::Add => "add",
            Kind::Rm => "rm",
            Kind::Spawn => "webhook-spawn",
            Kind::Epilogue => "epilogue",
            Kind::EpilogueLease => "epilogue lease",
            Kind::Queue => "queue box",
        }
    }
}

/// What the epilogue was asked to record for a dispatched session, and what was read back after it exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpilogueAck {
    pub status: u32,
    /// The registry held the field after the epilogue exited.
    pub registry: bool,
    /// The lease was gone (status 0) or had its outcome (otherwise) after the epilogue exited.
    pub lease: bool,
}

/// One session webhook-spawn accepted (exit 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub name: String,
    pub epilogue: Option<EpilogueAck>,
}

/// What an exit 0 of webhook-spawn said it did with the batch (its stdout line, docs/intake.md IN-6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// `session 'NAME' (…) added …`: admitted at once.
    Admitted(String),
    /// W20: queued.
    Queued,
    /// W21: appended to the queued record of its assignment.
    Coalesced,
    /// W22: its delivery id was accepted before.
    Duplicate,
    /// W23: a live session already claims the work.
    Claimed,
}

impl Accepted {
    /// The stdout line of an exit 0; `None` for a line of none of these shapes.
    pub fn parse(stdout: &str) -> Option<Self> {
        let line = stdout.lines().next()?;
        let quoted = || line.split('\'').nth(1).map(str::to_owned);
        if line.starts_with("session '") && line.contains("already claims this work") {
            Some(Self::Claimed)
        } else if line.starts_with("session '") {
            quoted().map(Self::Admitted)
        } else if line.starts_with("batch queued") {
            Some(Self::Queued)
        } else if line.starts_with("batch added to the queued assignment") {
            Some(Self::Coalesced)
        } else if line.starts_with("delivery '") && line.contains("was already accepted") {
            Some(Self::Duplicate)
        } else {
            None
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Self::Admitted(_) => "admitted at once",
            Self::Queued => "queued",
            Self::Coalesced => "coalesced",
            Self::Duplicate => "duplicate",
            Self::Claimed => "claimed",
        }
    }
}

/// One exit 0 of webhook-spawn that did not (or not only) add an entry: the delivery id it was given and what it
/// said it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueAck {
    pub key: String,
    pub accepted: Accepted,
}

/// The acknowledgements of one round.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Committed lines per rmw loop (each also bumped its own key, `pl-own-<i>`).
    pub rmw: Vec<u64>,
    /// The highest `committed <n>` of the shared key.
    pub shared_max: u64,
    /// `add`/`rm` names: `Some(present)` after an acknowledged op, `None` while one is in flight or failed
    /// (then either state is right).
    pub sessions: BTreeMap<String, Option<bool>>,
    pub session_acks: BTreeMap<Kind, u64>,
    pub dispatched: Vec<Dispatch>,
    /// Exits 0 of webhook-spawn on the main box that queued the batch (its admission failed: the lease or the
    /// registry write, as LazyFS died between them); the record must be there.
    pub spawn_queued: Vec<QueueAck>,
    /// Exits 0 of webhook-spawn on the queue box, in order.
    pub queue: Vec<QueueAck>,
    /// How often the queue box's supervisor was SIGKILLed (and started again).
    pub supervisor_kills: u64,
    /// The negative control: renames done, and the value of the last one.
    pub control_writes: u64,
    pub control_last: u64,
}

impl Ledger {
    pub fn new(loops: usize) -> Self {
        Self { rmw: vec![0; loops], ..Self::default() }
    }

    /// Every acknowledged update of the round, by kind.
    pub fn acknowledged(&self) -> BTreeMap<Kind, u64> {
        let mut acks = self.session_acks.clone();
        acks.insert(Kind::Rmw, self.rmw.iter().sum());
        acks.insert(Kind::Spawn, (self.dispatched.len() + self.spawn_queued.len()) as u64);
        acks.insert(Kind::Queue, self.queue.len() as u64);
        let epilogues = || self.dispatched.iter().filter_map(|d| d.epilogue);
        acks.insert(Kind::Epilogue, epilogues().filter(|e| e.registry).count() as u64);
        acks.insert(Kind::EpilogueLease, epilogues().filter(|e| e.lease).count() as u64);
        acks
    }

    pub fn rmw_committed(&mut self, loop_index: usize, n: u64) {
        if let Some(count) = self.rmw.get_mut(loop_index) {
            *count += 1;
        }
        self.shared_max = self.shared_max.max(n);
    }

    /// An add or rm of `name` is about to run: until it is acknowledged, either state is right.
    pub fn session_in_flight(&mut self, name: &str) {
        self.sessions.insert(name.to_owned(), None);
    }

    pub fn session_acked(&mut self, name: &str, kind: Kind) {
        self.sessions.insert(name.to_owned(), Some(kind == Kind::Add));
        *self.session_acks.entry(kind).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_lines_say_what_became_of_the_batch() {
        let parse = |line: &str| Accepted::parse(&format!("{line}\n"));
        assert_eq!(
            parse("session 'hook-pl-q-1a2b' (tool) added with a kickoff prompt — the supervisor starts it within ~2s"),
            Some(Accepted::Admitted("hook-pl-q-1a2b".into()))
        );
        // The name in a queued line's reason is not an admission (the bug this parse fixed: such a line was read
        // as the session it names).
        assert_eq!(
            parse("batch queued at position 1 of 1 (could not create the lease for 'hook-pl-8-604b' (x)); …"),
            Some(Accepted::Queued)
        );
        assert_eq!(
            parse("batch added to the queued assignment 'k' (position 1, 2 batches); …"),
            Some(Accepted::Coalesced)
        );
        assert_eq!(
            parse("delivery 'pl-q-3' was already accepted (admitted as 'hook-x'); nothing changed"),
            Some(Accepted::Duplicate)
        );
        assert_eq!(
            parse("session 'hook-x' already claims this work; no session was started (the batch ended claimed)"),
            Some(Accepted::Claimed)
        );
        assert_eq!(parse("something else"), None);
        assert_eq!(Accepted::parse(""), None);
    }

    #[test]
    fn acknowledgements_are_counted_by_kind() {
        let mut ledger = Ledger::new(2);
        ledger.rmw_committed(0, 1);
        ledger.rmw_committed(1, 2);
        ledger.session_in_flight("a");
        assert_eq!(ledger.sessions["a"], None);
        ledger.session_acked("a", Kind::Add);
        ledger.session_acked("a", Kind::Rm);
        ledger.dispatched.push(Dispatch { name: "hook-x".into(), epilogue: None });
        let ack = EpilogueAck { status: 0, registry: true, lease: false };
        ledger.dispatched.push(Dispatch { name: "hook-y".into(), epilogue: Some(ack) });
        let acks = ledger.acknowledged();
        assert_eq!(ledger.shared_max, 2);
        assert_eq!(ledger.sessions["a"], Some(false));
        assert_eq!(
            KINDS.map(|k| acks.get(&k).copied().unwrap_or(0)),
            [2, 1, 1, 2, 1, 0, 0],
            "rmw, add, rm, spawn, epilogue, epilogue lease, queue box"
        );
    }
}
