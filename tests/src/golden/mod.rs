//! The golden snapshots (70 §6): the renderer of every pinned artefact, its normalisation, and the
//! comparison with `golden/`, shared by `cargo xtask golden`, the e2e test and the bench (XT-1.3).
//!
//! The check renders into a fresh directory, compares it with `golden/` (every file except `README.md`
//! and `nix/`, which the nix step owns), and fails on any byte of difference, a missing or unexpected file,
//! or a leaked environment path. Bless renders twice, refuses when the two renders differ, and otherwise makes
//! `golden/` equal to the render.

pub mod artefacts;
pub mod capture;
pub mod normalize;
pub mod sections;
pub mod tree;
pub mod world;

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use artefacts::Artefacts;
use tree::{Drift, Leak, Tree};

use crate::workspace_root;

/// `golden/` in the workspace.
pub fn golden_dir() -> PathBuf {
    workspace_root().join("golden")
}

/// The part of `golden/` this renderer owns: everything but the nix step's `nix/` (GD-6.2, NX-10.3).
pub fn owned(rel: &str) -> bool {
    !rel.starts_with("nix/")
}

/// One render: the normalised tree and what the leak check looks for.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub tree: Tree,
    /// Paths that must not appear in any rendered file: sandbox roots, `/tmp/`, the real HOME, the checkout.
    pub needles: Vec<String>,
    pub secs: f64,
}

impl Rendered {
    pub fn leaks(&self) -> Vec<Leak> {
        tree::leaks(&self.tree, &self.needles)
    }
}

/// Renders every artefact of GD-2 (except `nix/`).
pub fn render() -> Rendered {
    let started = Instant::now();
    let start = base::time::now_epoch();
    let mut out = Artefacts::default();
    sections::help::render(&mut out);
    sections::session::render(&mut out);
    sections::supervisor::render(&mut out);
    sections::webhook::render(&mut out);
    sections::documents::render(&mut out);
    sections::install::render(&mut out);
    let mut needles = out.sandbox_paths();
    needles.push("/tmp/".to_owned());
    if let Some(home) = std::env::var_os("HOME").map(|h| h.to_string_lossy().into_owned())
        && home.len() > 1
    {
        needles.push(home);
    }
    needles.push(workspace_root().to_string_lossy().into_owned());
    let tree = out.finish(start);
    Rendered { tree, needles, secs: started.elapsed().as_secs_f64() }
}

/// The outcome of a check: the report to print (empty when clean) and whether it passed.
#[derive(Debug)]
pub struct CheckReport {
    pub drift: Drift,
    pub leaks: Vec<Leak>,
    pub text: String,
    pub files: usize,
    pub secs: f64,
}

impl CheckReport {
    pub fn passed(&self) -> bool {
        self.drift.is_clean() && self.leaks.is_empty()
    }
}

/// GD-6: renders into `rendered_dir` (replacing it) and compares with `golden_dir`.
pub fn check(golden_dir: &Path, rendered_dir: &Path) -> io::Result<CheckReport> {
    check_rendered(golden_dir, rendered_dir, render())
}

/// GD-6 for a render already made (tests patch a render to prove the check fails).
pub fn check_rendered(golden_dir: &Path, rendered_dir: &Path, rendered: Rendered) -> io::Result<CheckReport> {
    tree::write_tree(rendered_dir, &rendered.tree)?;
    let drift = tree::compare(golden_dir, rendered_dir, &owned)?;
    let leaks = rendered.leaks();
    let mut text = drift.report.clone();
    for leak in &leaks {
        let _ = writeln!(text, "{leak}");
    }
    if !drift.is_clean() {
        text.push_str(&drift.summary());
    }
    Ok(CheckReport { drift, leaks, text, files: rendered.tree.len(), secs: rendered.secs })
}

/// Why bless wrote nothing.
#[derive(Debug)]
pub enum BlessRefusal {
    /// Two renders differ in these files: an artefact is not deterministic (GD-7).
    Unstable(Vec<String>),
    /// The render leaks environment paths.
    Leaks(Vec<Leak>),
    Io(io::Error),
}

impl std::fmt::Display for BlessRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unstable(files) => {
                writeln!(f, "golden: refusing to bless: {} file(s) differ between two renders:", files.len())?;
                for file in files {
                    writeln!(f, "  {file}")?;
                }
                write!(f, "golden: make these artefacts deterministic (or normalise them), never bless them")
            }
            Self::Leaks(leaks) => {
                writeln!(f, "golden: refusing to bless: the render leaks environment paths:")?;
                for leak in leaks {
                    writeln!(f, "{leak}")?;
                }
                write!(f, "golden: normalise these paths in the renderer first")
            }
            Self::Io(err) => write!(f, "golden: cannot bless: {err}"),
        }
    }
}

/// GD-7: renders twice; refuses an unstable or leaking render; else makes `golden_dir` equal to it and returns
/// the `A|M|D <path>` lines.
pub fn bless(golden_dir: &Path, scratch: &Path) -> Result<Vec<String>, BlessRefusal> {
    let first = render();
    let second = render();
    bless_rendered(golden_dir, scratch, first, &second)
}

/// GD-7 for two renders already made.
pub fn bless_rendered(
    golden_dir: &Path,
    scratch: &Path,
    first: Rendered,
    second: &Rendered,
) -> Result<Vec<String>, BlessRefusal> {
    let unstable = tree::unstable(&first.tree, &second.tree);
    if !unstable.is_empty() {
        return Err(BlessRefusal::Unstable(unstable));
    }
    let leaks = first.leaks();
    if !leaks.is_empty() {
        return Err(BlessRefusal::Leaks(leaks));
    }
    tree::write_tree(scratch, &first.tree).map_err(BlessRefusal::Io)?;
    tree::bless(golden_dir, scratch, &owned).map_err(BlessRefusal::Io)
}
