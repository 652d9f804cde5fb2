//! `--baseline REV` (spec 90 ): REV checked out in a git worktree under `target/bench/baseline/src`, its
//! release binaries built there into their own target directory (`target/bench/baseline/target`, kept between
//! runs as a build cache) and its epilogue baked by its own `cargo xtask bake-epilogue` for the bench root, so
//! that sections can run the old and the new programs alternately in one run. The worktree is removed when the
//! value is dropped, whatever happened.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::fail::{Context, Outcome, fail};
use super::world::BenchRoot;
use super::{Product, target_args};
use crate::run;

/// A ratio new/old above this on a timed median is flagged in the report.
pub const FLAG_ABOVE: f64 = 1.10;

/// The baseline revision, built.
#[derive(Debug)]
pub struct Baseline {
    /// REV as given.
    pub rev: String,
    /// The commit REV names.
    pub sha: String,
    worktree: PathBuf,
    /// `target/release` of the baseline build: the programs the selected sections run.
    pub release: PathBuf,
    /// Its epilogue baked (profile `epilogue`) for the bench root, when a selected section needs one.
    pub baked: Option<PathBuf>,
}

impl Baseline {
    /// Checks REV out and builds `products` of it (and, with `bake`, bakes its epilogue for `root`).
    pub fn prepare(rev: &str, bench_dir: &Path, root: &BenchRoot, bake: bool, products: &[Product]) -> Outcome<Self> {
        let dir = bench_dir.join("baseline");
        let sha = commit_of(rev)?;
        let worktree = dir.join("src");
        remove_worktree(&worktree);
        let mut add = run::command("git");
        // --force: a worktree of a killed run whose directory went away (cargo clean) is still registered.
        add.args(["worktree", "add", "--force", "--detach"]).arg(&worktree).arg(&sha);
        succeed(&mut add, "git worktree add")?;
        // From here on, dropping the value removes the worktree, also when the build below fails.
        let mut baseline =
            Self { rev: rev.to_owned(), sha, worktree, release: dir.join("target/release"), baked: None };
        let target = dir.join("target");
        if !products.is_empty() {
            let mut build = baseline.cargo(&target);
            build.args(["build", "--release", "--locked"]).args(target_args(products));
            succeed(&mut build, "the baseline's release build")?;
        }
        if bake {
            let out = dir.join("agent-box-mark-stopped");
            let mut bake = baseline.cargo(&target);
            bake.args(["xtask", "bake-epilogue", "--profile", "epilogue", "--sessions-file"])
                .arg(root.paths.registry())
                .arg("--state-dir")
                .arg(root.paths.state_dir())
                .arg("--out")
                .arg(&out);
            succeed(&mut bake, "the baseline's bake-epilogue")?;
            baseline.baked = Some(out);
        }
        Ok(baseline)
    }

    /// How reports name it: `baseline <12 hex digits>`.
    pub fn label(&self) -> String {
        format!("baseline {}", self.sha.get(..12).unwrap_or(&self.sha))
    }

    /// The baseline's baked epilogue.
    pub fn baked(&self) -> Outcome<&Path> {
        self.baked.as_deref().context(|| "the baseline's baked epilogue is missing".into())
    }

    /// `cargo` in the worktree, building into `target`.
    fn cargo(&self, target: &Path) -> Command {
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&self.worktree).env("CARGO_TARGET_DIR", target);
        cmd
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        remove_worktree(&self.worktree);
    }
}

/// The full commit id of `rev`.
fn commit_of(rev: &str) -> Outcome<String> {
    let mut cmd = run::command("git");
    cmd.args(["rev-parse", "--verify", "--quiet"]).arg(format!("{rev}^{{commit}}"));
    let out = cmd.output().context(|| "running git rev-parse".into())?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || sha.is_empty() {
        return fail(format!("--baseline {rev} names no commit of this repository"));
    }
    Ok(sha)
}

/// Removes a worktree of ours (left by a killed run, or ours at the end); nothing when there is none. Only this
/// path is touched: other worktrees of the repository are not ours.
fn remove_worktree(worktree: &Path) {
    if worktree.exists() {
        let mut remove = run::command("git");
        remove.args(["worktree", "remove", "--force"]).arg(worktree);
        let _ = run::status(&mut remove);
    }
}

/// Runs `cmd` (echoed) and insists on success.
fn succeed(cmd: &mut Command, what: &str) -> Outcome<()> {
    let status = run::status(cmd).context(|| format!("starting {what}"))?;
    if !status.success() {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let dir = cmd.get_current_dir().map_or_else(|| OsStr::new(".").into(), |d| d.as_os_str().to_owned());
        return fail(format!("{what} failed ({status}): {program} in {}", dir.to_string_lossy()));
    }
    Ok(())
}
