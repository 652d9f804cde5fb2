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
}

pub const KINDS: [Kind; 6] = [Kind::Rmw, Kind::Add, Kind::Rm, Kind::Spawn, Kind::Epilogue, Kind::EpilogueLease];

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Rmw => "rmw",
            Kind::Add => "add",
            Kind::Rm => "rm",
            Kind::Spawn => "webhook-spawn",
            Kind::Epilogue => "epilogue",
            Kind::EpilogueLease => "epilogue lease",
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
        acks.insert(Kind::Spawn, self.dispatched.len() as u64);
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
            [2, 1, 1, 2, 1, 0],
            "rmw, add, rm, spawn, epilogue, epilogue lease"
        );
    }
}
