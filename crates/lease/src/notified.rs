//! Whether a lease's outcome was reported to the operator's notifier (issue 21, docs/notification.md).
//!
//! Two keys of the lease file carry it, both written only under the lease lock and only while the lease still
//! carries the outcome they are about (same gen, outcome text and `endedAt`):
//! - `notifiedAt`: the notifier exited 0 for this outcome (N-4);
//! - `notify`: `{"attempts": N, "nextAt": "<ISO>"}` after failed attempts, so the backoff survives a restart (N-5).
//!
//! A restart that revives a `stopped` lease removes both (the outcome they were about is gone).

use std::path::{Path, PathBuf};

use base::{SessionName, time};
use serde_json::{Map, Value};

use crate::dir::{Found, LeaseDir};
use crate::error::LeaseError;
use crate::model::{Changed, Lease, LeaseState};

/// First retry this long after a failed attempt…
pub const RETRY_FIRST_SECS: i64 = 10;
/// …doubling each time, never further apart than this (N-5).
pub const RETRY_MAX_SECS: i64 = 600;

/// The file the supervisor keeps in the state directory while `AGENT_BOX_ON_OUTCOME` is set (N-8): how `leases`
/// and `ls` tell "pending" from "not configured" without reading the unit.
pub fn on_outcome_marker(state_dir: &Path) -> PathBuf {
    state_dir.join("on-outcome.json")
}

/// Which recorded outcome a delivery is about: a revived and again ended lease has another `endedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeKey {
    pub lease_gen: Option<String>,
    pub outcome: String,
    pub ended_at: Option<String>,
}

impl OutcomeKey {
    /// The key of the outcome `lease` carries now; `None` when it has none (open, or a non-string value).
    pub fn of(lease: &Lease) -> Option<Self> {
        let outcome = lease.outcome_text().filter(|o| !o.is_empty())?;
        Some(Self {
            lease_gen: lease.gen_value().map(str::to_owned),
            outcome: outcome.to_owned(),
            ended_at: lease.ended_at().map(str::to_owned),
        })
    }
}

/// The notification state of a lease, read from its own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// No outcome: nothing to report.
    Nothing,
    Delivered {
        at: String,
    },
    /// Not yet delivered; `attempts` failed so far, the next one not before `next_at` (none yet: at once).
    Pending {
        attempts: u64,
        next_at: Option<i64>,
    },
}

impl Lease {
    pub fn notified_at(&self) -> Option<&str> {
        self.raw().get("notifiedAt").and_then(Value::as_str)
    }

    pub fn notification(&self) -> Notification {
        if OutcomeKey::of(self).is_none() {
            return Notification::Nothing;
        }
        if let Some(at) = self.notified_at() {
            return Notification::Delivered { at: at.to_owned() };
        }
        let state = self.raw().get("notify").and_then(Value::as_object);
        let attempts = state.and_then(|s| s.get("attempts")).and_then(Value::as_u64).unwrap_or(0);
        let next_at = state.and_then(|s| s.get("nextAt")).and_then(Value::as_str).and_then(time::parse_iso);
        Notification::Pending { attempts, next_at }
    }
}

/// Seconds to wait after the `attempts`-th failure in a row: 10, 20, 40, … capped at 600.
pub fn retry_delay(attempts: u64) -> i64 {
    let doublings = u32::try_from(attempts.saturating_sub(1)).unwrap_or(u32::MAX).min(16);
    (RETRY_FIRST_SECS << doublings).min(RETRY_MAX_SECS)
}

/// An outcome still to be reported, as read lock-free.
#[derive(Debug, Clone)]
pub struct PendingOutcome {
    pub name: SessionName,
    pub lease: Lease,
    pub key: OutcomeKey,
    pub attempts: u64,
    pub next_at: Option<i64>,
}

impl LeaseDir {
    /// Every lease whose outcome is not yet delivered, read without a lock (N-6), oldest `endedAt` first.
    pub fn pending_outcomes(&self) -> Vec<PendingOutcome> {
        let mut pending: Vec<PendingOutcome> =
            self.list().into_iter().filter_map(|(name, state)| pending_of(name, state)).collect();
        sort_pending(&mut pending);
        pending
    }

    /// The undelivered outcome of `name`'s lease, read without a lock.
    pub fn pending_outcome(&self, name: &SessionName) -> Option<PendingOutcome> {
        pending_of(name.clone(), self.read(name))
    }

    /// The undelivered outcome of `name`'s lease, read under the lease lock, so that a caller holding the registry
    /// lock decides on what no registry-lock holder can be changing (the reap, N-11).
    pub fn pending_outcome_locked(&self, name: &SessionName) -> Result<Option<PendingOutcome>, LeaseError> {
        if self.nothing_there(name) {
            return Ok(None);
        }
        self.locked(|| Ok(pending_of(name.clone(), self.read(name))))
    }

    /// The notifier exited 0 for `key` (N-4): `notifiedAt`, under the lock, only while the lease carries `key`.
    /// `Stale` when it carries another outcome or life; `AlreadySet` when another supervisor recorded it first.
    pub fn record_delivered(&self, name: &SessionName, key: &OutcomeKey) -> Result<Changed, LeaseError> {
        self.update_for(name, key, |lease, now| {
            if lease.notified_at().is_some() {
                return false;
            }
            let map = lease.raw_mut();
            map.shift_remove("notify");
            map.insert("notifiedAt".into(), Value::from(time::format_iso(now)));
            true
        })
    }

    /// A failed attempt for `key` (N-5): `notify.attempts` and `notify.nextAt`, under the lock, only while the
    /// lease carries `key` and it is not delivered.
    pub fn record_failed_attempt(
        &self,
        name: &SessionName,
        key: &OutcomeKey,
        attempts: u64,
        next_at: i64,
    ) -> Result<Changed, LeaseError> {
        self.update_for(name, key, |lease, _| {
            if lease.notified_at().is_some() {
                return false;
            }
            let mut state = Map::new();
            state.insert("attempts".into(), Value::from(attempts));
            state.insert("nextAt".into(), Value::from(time::format_iso(next_at)));
            lease.raw_mut().insert("notify".into(), Value::Object(state));
            true
        })
    }

    fn update_for(
        &self,
        name: &SessionName,
        key: &OutcomeKey,
        change: impl FnOnce(&mut Lease, i64) -> bool,
    ) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| {
            let mut lease = match self.find(name) {
                Found::Absent => return Ok(Changed::Absent),
                Found::Unreadable => return Ok(Changed::Unreadable),
                Found::Present(lease) => lease,
            };
            if OutcomeKey::of(&lease).as_ref() != Some(key) {
                return Ok(Changed::Stale);
            }
            if !change(&mut lease, self.now()) {
                return Ok(Changed::AlreadySet);
            }
            self.write(name, &lease)?;
            Ok(Changed::Written)
        })
    }
}

fn pending_of(name: SessionName, state: LeaseState) -> Option<PendingOutcome> {
    let LeaseState::Present(lease) = state else { return None };
    let key = OutcomeKey::of(&lease)?;
    let Notification::Pending { attempts, next_at } = lease.notification() else { return None };
    Some(PendingOutcome { name, lease, key, attempts, next_at })
}

/// Oldest `endedAt` first, then by name: the order due outcomes are tried in.
pub fn sort_pending(pending: &mut [PendingOutcome]) {
    pending.sort_by(|a, b| a.key.ended_at.cmp(&b.key.ended_at).then_with(|| a.name.cmp(&b.name)));
}

/// Removes the notification keys when the outcome they are about is taken back (a revived `stopped`).
pub(crate) fn forget_notification(map: &mut Map<String, Value>) {
    map.shift_remove("notifiedAt");
    map.shift_remove("notify");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Expect, Outcome};

    fn dir() -> (tempfile::TempDir, LeaseDir, SessionName) {
        let tmp = tempfile::tempdir().unwrap();
        let leases = LeaseDir::new(tmp.path().join("lease"));
        (tmp, leases, SessionName::parse("hook-a-1").unwrap())
    }

    fn lease_of(leases: &LeaseDir, name: &SessionName) -> Lease {
        match leases.read(name) {
            LeaseState::Present(lease) => lease,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn backoff_doubles_from_ten_seconds_up_to_ten_minutes() {
        let delays: Vec<i64> = (1..=8).map(retry_delay).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 320, 600, 600]);
        assert_eq!(retry_delay(u64::MAX), 600);
    }

    #[test]
    fn an_open_lease_has_nothing_to_report_and_an_outcome_is_pending_until_delivered() {
        let (_tmp, leases, name) = dir();
        leases.create(&name, "github:acme/api", Some("7"), None).unwrap();
        assert_eq!(lease_of(&leases, &name).notification(), Notification::Nothing);
        assert!(leases.pending_outcomes().is_empty());
        leases.mark_outcome(&name, &Outcome::Died(3), &Expect::Any).unwrap();
        let pending = leases.pending_outcomes();
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].attempts, pending[0].next_at), (0, None));
        let key = pending[0].key.clone();
        assert_eq!(key.outcome, "died:3");
        assert_eq!(leases.record_failed_attempt(&name, &key, 1, 1_000).unwrap(), Changed::Written);
        assert_eq!(
            lease_of(&leases, &name).notification(),
            Notification::Pending { attempts: 1, next_at: Some(1_000) }
        );
        assert_eq!(leases.record_delivered(&name, &key).unwrap(), Changed::Written);
        let lease = lease_of(&leases, &name);
        assert!(matches!(lease.notification(), Notification::Delivered { .. }));
        assert!(!lease.raw().contains_key("notify"), "the backoff state goes with the delivery");
        assert_eq!(leases.record_delivered(&name, &key).unwrap(), Changed::AlreadySet, "once");
        assert!(leases.pending_outcomes().is_empty());
    }

    #[test]
    fn a_delivery_is_recorded_only_on_the_outcome_it_was_about() {
        let (_tmp, leases, name) = dir();
        leases.create(&name, "github:acme/api", None, None).unwrap();
        leases.mark_outcome(&name, &Outcome::Stopped, &Expect::Any).unwrap();
        let key = leases.pending_outcomes()[0].key.clone();
        let mut other_life = key.clone();
        other_life.lease_gen = Some(crate::Gen::random().to_string());
        assert_eq!(leases.record_delivered(&name, &other_life).unwrap(), Changed::Stale);
        let mut other_end = key.clone();
        other_end.ended_at = Some("2000-01-01T00:00:00Z".into());
        assert_eq!(leases.record_failed_attempt(&name, &other_end, 1, 5).unwrap(), Changed::Stale);
        leases.clear(&name, &Expect::Any).unwrap();
        assert_eq!(leases.record_delivered(&name, &key).unwrap(), Changed::Absent, "a removed lease is not recorded");
    }

    #[test]
    fn a_revived_stop_forgets_the_delivery_of_the_outcome_it_took_back() {
        let (_tmp, leases, name) = dir();
        let lease_gen = leases.create(&name, "github:acme/api", None, None).unwrap();
        leases.mark_outcome(&name, &Outcome::Stopped, &Expect::Any).unwrap();
        let key = leases.pending_outcomes()[0].key.clone();
        leases.record_delivered(&name, &key).unwrap();
        leases.record_restart(&name, &Expect::Gen(lease_gen), None).unwrap();
        let lease = lease_of(&leases, &name);
        assert_eq!(lease.notification(), Notification::Nothing);
        assert!(lease.notified_at().is_none());
    }

    /// N-8: `leases` and `ls` look for the marker at this one path.
    #[test]
    fn the_marker_is_on_outcome_json_in_the_state_directory() {
        let marker = on_outcome_marker(std::path::Path::new("/h/.local/state/agent-box"));
        assert_eq!(marker, std::path::Path::new("/h/.local/state/agent-box/on-outcome.json"));
    }

    /// N-6: due outcomes are tried oldest `endedAt` first, then by name; one lease's own pending outcome is the
    /// one the whole listing gives for it.
    #[test]
    fn pending_outcomes_come_oldest_first_and_one_lease_reads_the_same() {
        let (_tmp, leases, _) = dir();
        let ended = |name: &str, clock: fn() -> i64| {
            let name = SessionName::parse(name).unwrap();
            leases.create(&name, "t", None, None).unwrap();
            leases.clone().with_clock(clock).mark_outcome(&name, &Outcome::Vanished, &Expect::Any).unwrap();
            name
        };
        let late = ended("hook-a", || 1_764_425_300);
        let early = ended("hook-b", || 1_764_425_200);
        let early_too = ended("hook-c", || 1_764_425_200);
        let order: Vec<SessionName> = leases.pending_outcomes().into_iter().map(|p| p.name).collect();
        assert_eq!(order, [early.clone(), early_too, late.clone()]);
        let one = leases.pending_outcome(&late).unwrap();
        assert_eq!((one.name, one.key), (late, leases.pending_outcomes()[2].key.clone()));
        leases.create(&SessionName::parse("hook-open").unwrap(), "t", None, None).unwrap();
        assert!(leases.pending_outcome(&SessionName::parse("hook-open").unwrap()).is_none());
        assert!(leases.pending_outcome(&early).is_some());
    }
}
