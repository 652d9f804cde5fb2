//! `cargo xtask powerloss [--crashes N] [--seed S]`: the programs' writes tried against real power losses
//! (issue 18). LazyFS, a FUSE file system that drops every write not made durable, is mounted over a sandbox HOME;
//! the concurrent writers run; each round ends with one seeded power loss; a remount is checked against what the
//! writers acknowledged. Exit 0 only with 0 lost, 0 corrupt, item 2's invariant held and a negative control that
//! lost data; 100 otherwise; 96 when it cannot run here (not root, no `/dev/fuse`, a package or build missing).

mod build;
mod check;
mod faults;
mod ledger;
mod mount;
mod qbox;
mod report;
mod round;
mod world;
mod writers;

use std::path::Path;
use std::time::Instant;

use clap::Args;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use self::report::Totals;
use self::world::World;
use crate::{exit, run};

/// Arguments of `cargo xtask powerloss`.
#[derive(Debug, Args)]
pub struct PowerlossArgs {
    /// Power losses to inject (one per round, each on a fresh sandbox HOME).
    #[arg(long, default_value_t = 100)]
    pub crashes: usize,
    /// Seed of every choice (fault, its timing, the writers' choices); printed, so a run can be replayed.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Whether this machine can run it: root (FUSE with `allow_other`, mounts), `/dev/fuse` and the LazyFS sources
/// in `../shared` beside the checkout. The reason otherwise (ci prints it as its `SKIP` line).
pub fn unavailable() -> Option<String> {
    if !crate::ci::setup::running_as_root() {
        return Some("needs root (it mounts LazyFS)".to_owned());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("needs /dev/fuse".to_owned());
    }
    sources_unavailable(&run::workspace_root())
}

/// A clone of the repository alone has no `../shared` and so no LazyFS sources: it cannot run here. A `../shared`
/// that is there but lacks them is not a reason to skip: the run then fails (exit 96), and ci with it.
fn sources_unavailable(root: &Path) -> Option<String> {
    (!run::shared_present(root)).then(|| format!("needs the LazyFS sources ({} beside the checkout)", build::VENDOR))
}

/// Runs the command and returns its exit code.
pub fn run(args: &PowerlossArgs) -> u8 {
    if let Some(why) = unavailable() {
        eprintln!("powerloss: {why}");
        return exit::SETUP;
    }
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    let world = match prepare() {
        Ok(world) => world,
        Err(why) => {
            eprintln!("powerloss: {why}");
            return exit::SETUP;
        }
    };
    println!(
        "powerloss: seed {seed}, {} crashes (replay: cargo xtask powerloss --crashes {} --seed {seed})",
        args.crashes, args.crashes
    );
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = faults::Fault::schedule(args.crashes, &mut rng);
    let mut totals = Totals::default();
    for (index, fault) in (1..).zip(schedule) {
        match round::run(&world, fault, rng.random()) {
            Ok(round) => {
                println!("{}", report::round_line(index, args.crashes, &round));
                totals.add(index, &round);
            }
            Err(why) => {
                eprintln!("powerloss: round {index}: {why}");
                return exit::SETUP;
            }
        }
    }
    print!("{}", totals.summary(seed, started.elapsed().as_secs_f64()));
    if totals.passed() { exit::SUCCESS } else { exit::CHECK_FAILED }
}

/// Packages, LazyFS, the products and the rmw example, the baked epilogue.
fn prepare() -> Result<World, String> {
    let missing = build::missing_packages();
    if !missing.is_empty() {
        crate::ci::setup::apt_install(&missing);
        let still = build::missing_packages();
        if !still.is_empty() {
            return Err(format!("missing Debian packages: {} (apt-get install them and run again)", still.join(" ")));
        }
    }
    let lazyfs = build::lazyfs().map_err(|e| e.0)?;
    cargo(&["build", "--locked", "--workspace", "--bins"])?;
    cargo(&["build", "--locked", "-p", "agent-box-registry", "--example", "rmw"])?;
    World::prepare(lazyfs)
}

fn cargo(args: &[&str]) -> Result<(), String> {
    let mut cmd = run::command("cargo");
    cmd.args(args);
    match run::status(&mut cmd) {
        Ok(status) if status.success() => Ok(()),
        _ => Err(format!("{} failed", run::echo_line(&cmd))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_without_shared_cannot_run_it_a_broken_shared_can() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("checkout");
        std::fs::create_dir_all(&root).unwrap();
        assert_eq!(
            sources_unavailable(&root).as_deref(),
            Some("needs the LazyFS sources (../shared/vendor/lazyfs beside the checkout)")
        );
        std::fs::create_dir_all(dir.path().join("shared")).unwrap();
        assert_eq!(sources_unavailable(&root), None, "../shared without LazyFS: the run fails, ci with it");
    }
}
