//! The power losses a round can end with, and the seeded choice among them: `clear-cache` after the writers were
//! killed, or LazyFS killing itself (`lazyfs::crash`) at one of the syscalls where a missing or misplaced fsync
//! would show. LazyFS matches the regexes against the backing path of the file.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// One way to lose power.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Writers SIGKILLed, then every write not made durable dropped.
    ClearCache,
    /// LazyFS dies at the first matching syscall, whatever the writers are doing.
    Crash(CrashPoint),
}

/// The syscalls a crash is armed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    BeforeRegistryTempFsync,
    AfterRegistryTempFsync,
    AfterRenameOntoRegistry,
    BeforeLeaseFsync,
    BeforeHookLogWrite,
    AfterHookLogWrite,
    AfterQueueRename,
}

pub const CRASH_POINTS: [CrashPoint; 7] = [
    CrashPoint::BeforeRegistryTempFsync,
    CrashPoint::AfterRegistryTempFsync,
    CrashPoint::AfterRenameOntoRegistry,
    CrashPoint::BeforeLeaseFsync,
    CrashPoint::BeforeHookLogWrite,
    CrashPoint::AfterHookLogWrite,
    CrashPoint::AfterQueueRename,
];

/// The registry's temp files are `sessions.json.tmp-XXXXXXXX` (and never the hook log's `…jsonl.tmp-…`).
const REGISTRY_TEMP: &str = r"/sessions\.json\.tmp-";
const LEASE_TEMP: &str = r"/lease/[^/]*\.json\.tmp-";
const HOOK_LOG: &str = r"/hook-sessions\.jsonl$";
/// Any temp renamed into the intake queue (issue 24): an admission intent, a tombstone, a record a batch was
/// appended to, an expired record's copy. Between the intent and the record's removal is the crash table of
/// docs/intake.md IN-12.
const QUEUE_TEMP: &str = r"/agent-box/queue/.*\.tmp-";
const QUEUE: &str = r"/agent-box/queue/";

impl CrashPoint {
    pub fn label(self) -> &'static str {
        match self {
            Self::BeforeRegistryTempFsync => "before the fsync of a registry temp",
            Self::AfterRegistryTempFsync => "after the fsync of a registry temp",
            Self::AfterRenameOntoRegistry => "after the rename onto sessions.json",
            Self::BeforeLeaseFsync => "before a lease fsync",
            Self::BeforeHookLogWrite => "before a hook-log write",
            Self::AfterHookLogWrite => "after a hook-log write",
            Self::AfterQueueRename => "after a rename in the intake queue",
        }
    }

    /// The FIFO command that arms it.
    pub fn command(self) -> String {
        let (timing, op, filter) = match self {
            Self::BeforeRegistryTempFsync => ("before", "fsync", format!("from_rgx={REGISTRY_TEMP}")),
            Self::AfterRegistryTempFsync => ("after", "fsync", format!("from_rgx={REGISTRY_TEMP}")),
            // A rename needs the target filter (vendor README), and the source one too: with `from_rgx` left out,
            // LazyFS (a47a5ba) matches its placeholder `none` against the source path, so the crash never fires.
            Self::AfterRenameOntoRegistry => {
                ("after", "rename", format!(r"from_rgx={REGISTRY_TEMP}::to_rgx=/sessions\.json$"))
            }
            Self::BeforeLeaseFsync => ("before", "fsync", format!("from_rgx={LEASE_TEMP}")),
            Self::BeforeHookLogWrite => ("before", "write", format!("from_rgx={HOOK_LOG}")),
            Self::AfterHookLogWrite => ("after", "write", format!("from_rgx={HOOK_LOG}")),
            Self::AfterQueueRename => ("after", "rename", format!("from_rgx={QUEUE_TEMP}::to_rgx={QUEUE}")),
        };
        format!("lazyfs::crash::timing={timing}::op={op}::{filter}")
    }
}

impl Fault {
    /// The faults of `rounds` rounds: cycles of three clear-caches and each crash point once, every cycle in a
    /// seeded order. why: a uniform draw can leave a point out of a short run (ci's 20 rounds); cycles of ten hit
    /// every point twice there, and close to a third of the rounds clear the cache.
    pub fn schedule(rounds: usize, rng: &mut StdRng) -> Vec<Self> {
        let mut cycle = vec![Self::ClearCache; 3];
        cycle.extend(CRASH_POINTS.map(Self::Crash));
        let mut out = Vec::with_capacity(rounds + cycle.len());
        while out.len() < rounds {
            cycle.shuffle(rng);
            out.extend_from_slice(&cycle);
        }
        out.truncate(rounds);
        out
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::ClearCache => "clear-cache after killing the writers",
            Self::Crash(point) => point.label(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_follow_the_fifo_syntax() {
        assert_eq!(
            CrashPoint::AfterRenameOntoRegistry.command(),
            r"lazyfs::crash::timing=after::op=rename::from_rgx=/sessions\.json\.tmp-::to_rgx=/sessions\.json$"
        );
        assert_eq!(
            CrashPoint::BeforeRegistryTempFsync.command(),
            r"lazyfs::crash::timing=before::op=fsync::from_rgx=/sessions\.json\.tmp-"
        );
        for point in CRASH_POINTS {
            assert!(!point.command()["lazyfs::crash::".len()..].contains(":::"), "{point:?}");
        }
    }

    #[test]
    fn twenty_rounds_hit_every_crash_point_at_least_twice() {
        use rand::SeedableRng;
        let faults = Fault::schedule(20, &mut StdRng::seed_from_u64(1));
        assert_eq!(faults.len(), 20);
        for point in CRASH_POINTS {
            assert!(faults.iter().filter(|f| **f == Fault::Crash(point)).count() >= 2, "{point:?}");
        }
        assert!(faults.iter().filter(|f| **f == Fault::ClearCache).count() >= 6);
    }

    #[test]
    fn the_registry_temp_regex_cannot_match_the_hook_log_temp() {
        // `hook-sessions.jsonl.tmp-…` has an `l` after `json`; a lazy regex would crash at the wrong file.
        assert!(!"/x/hook-sessions.jsonl.tmp-abcdefgh".contains("/sessions.json.tmp-"));
    }
}
