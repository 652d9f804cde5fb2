//! One crash round: a fresh HOME, LazyFS mounted over it, the writers running, one seeded power loss, a remount,
//! the checks. LazyFS is always killed with SIGKILL before the unmount, so nothing it still caches can reach the
//! backing directory afterwards (a clean unmount might write some of it back and hide a loss).

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::check::{Findings, check};
use super::faults::Fault;
use super::mount::Mount;
use super::world::World;
use super::writers::Writers;

/// How long an armed crash may take to fire before the round falls back to a clear-cache.
const FIRE_WAIT: Duration = Duration::from_secs(4);
/// How long LazyFS may take to confirm a clear-cache in its log.
const CLEAR_WAIT: Duration = Duration::from_secs(10);
/// The line LazyFS logs when a clear-cache is done.
const CLEARED: &str = "cache is cleared";

/// What happened in one round.
#[derive(Debug)]
pub struct Round {
    pub fault: Fault,
    /// For a crash: whether LazyFS died at the armed syscall (else the round cleared the cache instead).
    pub fired: bool,
    /// LazyFS stopped answering and was killed to free the writers (see [`Writers::halt`]).
    pub hung: bool,
    pub findings: Findings,
}

/// Halts the writers when the round leaves its scope by any path, so the scope's join cannot wait forever.
struct HaltOnDrop<'a, 'w>(&'a Writers<'w>, Option<u32>);

impl Drop for HaltOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.halt(self.1);
    }
}

/// Runs one round ending in `fault`, with its own seed.
pub fn run(world: &World, fault: Fault, seed: u64) -> Result<Round, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let delay = Duration::from_millis(rng.random_range(500..4000));
    world.reset().map_err(|e| format!("cannot reset the sandbox HOME: {e}"))?;
    let mut mount = Mount::start(&world.layout).map_err(|e| format!("cannot mount LazyFS: {e}"))?;
    let writers = Writers::new(world, seed);
    let (fired, hung) = thread::scope(|scope| {
        let guard = HaltOnDrop(&writers, mount.pid());
        writers.start(scope);
        thread::sleep(delay);
        let fired = match fault {
            Fault::ClearCache => false,
            Fault::Crash(point) => mount.command(&point.command()).is_ok() && mount.wait_exit(FIRE_WAIT),
        };
        let hung = writers.halt(mount.pid()) | world.queue.kill_strays(mount.pid());
        // A second halt finds nothing left to stop.
        drop(guard);
        // An armed crash that fired only after FIRE_WAIT (a writer reached its syscall while being halted) is a
        // power loss too; a clear-cache would find no LazyFS to send it to.
        let fired = fired || (matches!(fault, Fault::Crash(_)) && !hung && !mount.alive());
        // A LazyFS that died (fired or killed as hung) has already lost all it cached.
        if !fired && !hung {
            clear_cache(&mut mount, world)?;
        }
        Ok::<_, String>((fired, hung))
    })?;
    mount.power_off();
    let ledger = writers.into_ledger();
    let mut again = Mount::start(&world.layout).map_err(|e| format!("cannot remount LazyFS: {e}"))?;
    let findings = check(world, &ledger, again.pid());
    again.power_off();
    Ok(Round { fault, fired, hung, findings })
}

/// `lazyfs::clear-cache`, then waits for LazyFS to log that it is done.
fn clear_cache(mount: &mut Mount, world: &World) -> Result<(), String> {
    mount.command("lazyfs::clear-cache").map_err(|e| format!("cannot send clear-cache to LazyFS: {e}"))?;
    let deadline = Instant::now() + CLEAR_WAIT;
    while !fs::read_to_string(&world.layout.log).is_ok_and(|log| log.contains(CLEARED)) {
        if Instant::now() > deadline || !mount.alive() {
            return Err(format!("LazyFS did not confirm the clear-cache (see {})", world.layout.log.display()));
        }
        thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
