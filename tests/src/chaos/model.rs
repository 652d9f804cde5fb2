//! The expected state of every lease incarnation, derived from the spec as the driver acts (20-lease §5/§6,
//! 30-supervisor §8/§10, 50 §9/§10, and the life rules of docs/lives.md): what its lease file says, which end and
//! `restart` lines the hook log holds for it, whether its entry is listed, how often its agent has at least
//! started, and how many of those starts carried the kickoff prompt.

/// How one incarnation should look right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// `None`: no lease of this gen; `Some(outcome)`: the lease, with that outcome (`None` = open).
    pub lease: Option<Option<String>>,
    /// The end lines of this life, in order: `(how, outcome)`.
    pub ends: Vec<(String, Option<String>)>,
    /// The `restart` lines of this life, in order: the outcome each one logged (L-11).
    pub restarts: Vec<Option<String>>,
    /// The entry is listed (checked only for the newest incarnation of a name).
    pub listed: bool,
}

/// One life of a dispatched session: a name with one lease gen.
#[derive(Debug, Clone)]
pub struct Incarnation {
    pub name: String,
    /// The fake agent's own name (`--as`), which counts its starts and reads its control file.
    pub agent: String,
    pub lease_gen: String,
    pub expected: Expected,
    /// The agent has started at least this often.
    pub min_starts: usize,
    /// Starts that carried a prompt: exactly one per assignment, the first (L-10: never sent twice).
    pub kickoffs: usize,
    /// The pane is a post-mortem shell (the agent crashed and the pane was kept).
    pub post_mortem: bool,
    /// A later incarnation took over the name.
    pub superseded: bool,
}

impl Incarnation {
    /// A session webhook-spawn just accepted: an open lease, listed, to be started once.
    pub fn dispatched(name: &str, agent: &str, lease_gen: &str) -> Self {
        Self {
            name: name.to_owned(),
            agent: agent.to_owned(),
            lease_gen: lease_gen.to_owned(),
            expected: Expected { lease: Some(None), ends: Vec::new(), restarts: Vec::new(), listed: true },
            min_starts: 1,
            kickoffs: 1,
            post_mortem: false,
            superseded: false,
        }
    }

    fn outcome(&self) -> Option<String> {
        self.expected.lease.clone().flatten()
    }

    /// The lease gets `outcome` unless it already has one (LS-5.3: the first outcome wins).
    fn mark(&mut self, outcome: &str) {
        if let Some(current @ None) = &mut self.expected.lease {
            *current = Some(outcome.to_owned());
        }
    }

    /// The agent exited 0: `exited` is logged before the lease is deleted (LS-5.5); the parked entry is reaped with
    /// no second line (SUP-10.1: no lease is left).
    pub fn exit_clean(&mut self) {
        self.expected.ends.push(("exited".into(), self.outcome()));
        self.expected.lease = None;
        self.expected.listed = false;
    }

    /// The agent exited `status`: `died:N` unless an outcome was there, then the line with the outcome after the
    /// mark (LS-5.4); the entry stays with its post-mortem pane.
    pub fn crash(&mut self, status: u32) {
        self.mark(&format!("died:{status}"));
        self.expected.ends.push((format!("died:{status}"), self.outcome()));
        self.post_mortem = true;
    }

    /// The pane of a running agent vanished: `vanished` (SUP-8.1), and the supervisor starts it again.
    pub fn pane_vanished(&mut self) {
        self.mark("vanished");
        self.min_starts += 1;
    }

    /// The tmux server went away: a running pane vanished; a post-mortem pane is a crash already recorded, so the
    /// entry is respawned without a mark (D11).
    pub fn server_killed(&mut self) {
        if self.post_mortem {
            self.post_mortem = false;
            self.min_starts += 1;
        } else {
            self.pane_vanished();
        }
    }

    /// `rm`: the `rm` line before the lease is deleted (LS-5.5), the entry delisted.
    pub fn rm(&mut self) {
        self.expected.ends.push(("rm".into(), self.outcome()));
        self.expected.lease = None;
        self.expected.listed = false;
    }

    /// `stop` of the ephemeral entry: `stopped` on an open lease (LS-6.3), then the reap logs `reaped` with that
    /// outcome and deletes the lease (SUP-10.1).
    pub fn stop(&mut self) {
        self.mark("stopped");
        self.expected.ends.push(("reaped".into(), self.outcome()));
        self.expected.lease = None;
        self.expected.listed = false;
    }

    /// `restart` of a listed entry that is not crashed, whose pane it killed or whose `stopped` it took back
    /// (L-11/L-12, L-16): a `stopped` outcome is taken back (the assignment goes on), any other stays; the pane is
    /// started again without a mark (L-13, L-15). The `restart` line (with the outcome before) is written when the
    /// lease was open or `stopped`: the lease crate marks only those (`LeaseDir::record_restart` answers
    /// `AlreadySet` for a `vanished` or `died:N` lease, and writes no line then). A restart that found no pane of an
    /// entry it did not unstop records nothing (L-16); the driver counts that output as wrong and never models it.
    pub fn restart(&mut self) {
        if matches!(self.outcome().as_deref(), None | Some("stopped")) {
            self.expected.restarts.push(self.outcome());
        }
        if let Some(outcome @ Some(_)) = &mut self.expected.lease
            && outcome.as_deref() == Some("stopped")
        {
            *outcome = None;
        }
        self.min_starts += 1;
    }

    /// The supervisor was killed after the intent of the first start and before its `new-session` (L-9, L-10):
    /// the next one marks the lease `vanished` and starts the agent without the prompt the intent took.
    pub fn intent_without_pane(&mut self) {
        self.mark("vanished");
        self.kickoffs = 0;
    }

    /// The supervisor was killed after it consumed a restart's mark (L-13) and before the new pane's `new-session`:
    /// the next one finds the pane gone and no mark, and marks the lease `vanished` (the start resumes as before).
    pub fn restart_cut_short(&mut self) {
        self.mark("vanished");
    }

    /// `stop` whose restart came first, before the supervisor reaped the parked entry: only the mark.
    pub fn stop_before_restart(&mut self) {
        self.mark("stopped");
    }

    /// True while its pane is up in the model (a running agent or a post-mortem shell).
    pub fn pane_expected(&self) -> bool {
        self.expected.listed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_outcome_wins_and_lines_carry_it() {
        let mut inc = Incarnation::dispatched("hook-a-0000", "a", "g");
        inc.server_killed();
        inc.crash(3);
        inc.rm();
        assert_eq!(inc.expected.lease, None);
        assert_eq!(
            inc.expected.ends,
            [("died:3".to_owned(), Some("vanished".to_owned())), ("rm".to_owned(), Some("vanished".to_owned()))]
        );
        let mut stopped = Incarnation::dispatched("hook-b-0000", "b", "g");
        stopped.stop();
        assert_eq!(stopped.expected.ends, [("reaped".to_owned(), Some("stopped".to_owned()))]);
        let mut crashed = Incarnation::dispatched("hook-c-0000", "c", "g");
        crashed.crash(2);
        crashed.server_killed();
        assert_eq!((crashed.expected.lease.clone(), crashed.min_starts), (Some(Some("died:2".to_owned())), 2));
    }

    #[test]
    fn a_restart_revives_only_a_stopped_assignment() {
        let mut revived = Incarnation::dispatched("hook-d-0000", "d", "g");
        revived.stop_before_restart();
        revived.restart();
        revived.crash(5);
        assert_eq!(revived.expected.restarts, [Some("stopped".to_owned())]);
        assert_eq!(revived.expected.lease, Some(Some("died:5".to_owned())));
        assert_eq!(revived.expected.ends, [("died:5".to_owned(), Some("died:5".to_owned()))]);
        let mut lost = Incarnation::dispatched("hook-e-0000", "e", "g");
        lost.server_killed();
        lost.restart();
        lost.exit_clean();
        assert!(lost.expected.restarts.is_empty(), "no restart line on a lease that holds an outcome");
        assert_eq!(lost.expected.ends, [("exited".to_owned(), Some("vanished".to_owned()))]);
        assert_eq!(lost.min_starts, 3);
    }
}
