//! Lease operations that tell one life of a session name from another (issue 17): an operator's restart recorded
//! before it acts, the absence it causes consumed instead of read as a loss, and the lease of a life that is gone
//! marked so that no newer life of the same name takes it over.

use serde_json::Value;

use base::{SessionName, time};
use registry::RegistryLock;

use crate::dir::{Found, LeaseDir};
use crate::error::LeaseError;
use crate::hooklog::HookLog;
use crate::model::{Changed, Expect, Gen, Outcome};

impl LeaseDir {
    /// D12, the pane ended without an epilogue: an operator restart recorded on the lease is consumed
    /// (`Restarted`, the assignment goes on), anything else is marked `vanished` as [`LeaseDir::mark_outcome`] does.
    pub fn note_absence(&self, name: &SessionName, expect: &Expect) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| {
            if let Found::Present(mut lease) = self.find(name)
                && expect.met_by(&lease)
                && lease.restart_pending()
            {
                lease.raw_mut().shift_remove("restartPending");
                self.write(name, &lease)?;
                return Ok(Changed::Restarted);
            }
            self.mark_locked(name, &Outcome::Vanished, expect).map(|(changed, _)| changed)
        })
    }

    /// `restart` of a leased session, before it ends the pane: `restartedAt` and `restartPending` on an open
    /// lease; a lease an operator `stopped` is revived (outcome back to null: the assignment goes on, and what
    /// becomes of it is recorded again). Other outcomes (a crash, a loss) are facts and stay. A hook name gets a
    /// `restart` line in the hook log.
    pub fn record_restart(
        &self,
        name: &SessionName,
        expect: &Expect,
        log: Option<&HookLog>,
    ) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| {
            let mut lease = match self.find(name) {
                Found::Absent => return Ok(Changed::Absent),
                Found::Unreadable => return Ok(Changed::Unreadable),
                Found::Present(lease) if !expect.met_by(&lease) => return Ok(Changed::Stale),
                Found::Present(lease) => lease,
            };
            let before = lease.outcome_text().map(str::to_owned);
            let revived = lease.outcome() == Some(Outcome::Stopped);
            if lease.outcome_is_set() && !revived {
                return Ok(Changed::AlreadySet);
            }
            let map = lease.raw_mut();
            if revived {
                map.insert("outcome".into(), Value::Null);
                map.shift_remove("endedAt");
                crate::notified::forget_notification(map);
            }
            map.insert("restartedAt".into(), Value::from(time::format_iso(self.now())));
            map.insert("restartPending".into(), Value::Bool(true));
            self.write(name, &lease)?;
            if let Some(log) = log.filter(|_| name.is_hook()) {
                drop(log.append_restart(name, before.as_deref()));
            }
            Ok(Changed::RestartRecorded { revived })
        })
    }

    /// Takes back the pending mark of a restart whose kill did not happen, so a later real loss is not read as it.
    pub fn withdraw_restart(&self, name: &SessionName, expect: &Expect) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| match self.find(name) {
            Found::Present(mut lease) if expect.met_by(&lease) && lease.restart_pending() => {
                lease.raw_mut().shift_remove("restartPending");
                self.write(name, &lease)?;
                Ok(Changed::Written)
            }
            _ => Ok(Changed::Stale),
        })
    }

    /// L-15: a start of a pane bound to this lease ends the absence that a pending restart mark is about, so it takes
    /// the mark (`Ok(true)`); a mark left by a D12 that could not consume it would otherwise make a later real loss
    /// of the new pane read as the operator's restart. Called under the registry lock (`_held`), which every
    /// [`LeaseDir::record_restart`] holds: a mark that the lock-free read does not find cannot appear before that
    /// lock is released, so a start of a lease without a mark never waits for the lease lock.
    pub fn take_restart_mark(
        &self,
        name: &SessionName,
        expect: &Expect,
        _held: &RegistryLock,
    ) -> Result<bool, LeaseError> {
        let pending =
            |found: &Found| matches!(found, Found::Present(lease) if expect.met_by(lease) && lease.restart_pending());
        if !pending(&self.find(name)) {
            return Ok(false);
        }
        self.locked(|| match self.find(name) {
            Found::Present(mut lease) if expect.met_by(&lease) && lease.restart_pending() => {
                lease.raw_mut().shift_remove("restartPending");
                self.write(name, &lease)?;
                Ok(true)
            }
            _ => Ok(false),
        })
    }

    /// Puts back the mark [`LeaseDir::take_restart_mark`] took for a start that did not happen (L-9: what a start
    /// wrote is taken back when `new-session` fails): the absence goes on, and it is still the operator's restart.
    pub fn put_back_restart_mark(
        &self,
        name: &SessionName,
        expect: &Expect,
        _held: &RegistryLock,
    ) -> Result<(), LeaseError> {
        if self.nothing_there(name) {
            return Ok(());
        }
        self.locked(|| match self.find(name) {
            Found::Present(mut lease) if expect.met_by(&lease) && !lease.restart_pending() => {
                lease.raw_mut().insert("restartPending".into(), Value::Bool(true));
                self.write(name, &lease)
            }
            _ => Ok(()),
        })
    }

    /// Whether the lease of `name` is the one of gen `lease_gen` and its life was not delisted (`orphanedAt`): read
    /// under the lease lock, so the answer holds while the caller's registry lock is held (order registry → lease).
    /// The epilogue asks it of a report without LIFE against an entry naming none (docs/lives.md L-6): a pane
    /// started for gen G belongs to this entry only while G's lease is there for it, as L-1 would give it G.
    pub fn binds(&self, name: &SessionName, lease_gen: &Gen) -> Result<bool, LeaseError> {
        if self.nothing_there(name) {
            return Ok(false);
        }
        let expect = Expect::Gen(lease_gen.clone());
        self.locked(|| {
            Ok(matches!(self.find(name), Found::Present(lease) if expect.met_by(&lease) && !lease.orphaned()))
        })
    }

    /// The supervisor swept the side file of a delisted name whose pane was started for lease `gen`: that life is
    /// over, so `orphanedAt` keeps a newer life of the name (re-added by a writer that hands out no life) from
    /// taking the lease over; the sweep settles it after its grace.
    pub fn mark_orphaned(&self, name: &SessionName, lease_gen: &Gen) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        let expect = Expect::Gen(lease_gen.clone());
        self.locked(|| match self.find(name) {
            Found::Present(mut lease) if expect.met_by(&lease) && !lease.orphaned() => {
                lease.raw_mut().insert("orphanedAt".into(), Value::from(time::format_iso(self.now())));
                self.write(name, &lease)?;
                Ok(Changed::Written)
            }
            Found::Present(_) => Ok(Changed::Stale),
            Found::Absent => Ok(Changed::Absent),
            Found::Unreadable => Ok(Changed::Unreadable),
        })
    }
}
