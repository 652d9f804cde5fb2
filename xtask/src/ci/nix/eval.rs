//! The evaluation checks of spec 70 NX-10: the cases of `nix/tests/cases.nix`, each one run as
//! `nix-instantiate --eval --strict --json nix/tests/eval.nix --argstr case <name> …` against the real nixpkgs
//! library, and judged here.
//!
//! * The lib (NX-10.1, [`find_lib`]): `$AGENT_BOX_NIXPKGS_LIB`; else `<nixpkgs/lib>` when `NIX_PATH` resolves
//!   it; else `../shared/nixpkgs-lib/lib` beside the checkout; else, in a clone without `../shared`, none, and the
//!   step only parses (a `SKIP` line); a `../shared` without the lib is an error (the check fails).
//! * The cases ([`CASES`]): pinned ones, whose JSON must equal `golden/nix/<case>.json` (compared with
//!   `agent_box_tests::golden::tree`, the report of GD-6); check lists that must all hold; configurations the
//!   module must refuse with its own assertion text; and the README's "Install on NixOS" example, extracted
//!   verbatim, which must render exactly like case `a-one-user-defaults`.
//! * [`bless`] is `cargo xtask nix --bless` (also run by `cargo xtask golden --bless`): two renders that must
//!   agree, then golden/nix/ made equal to them; without a lib golden/nix/ is left as it is.

use std::env;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use agent_box_tests::golden::tree;
use serde_json::Value;

use super::super::{Failed, StepResult};
use crate::{exit, run};

/// The line of CI-2.4 when no lib is found (a clone without `../shared`, no variable); the step then passes on the
/// parse alone. In the `SKIP: <what> (<what enables it>)` form of the other checks that cannot run everywhere.
pub const NO_LIB_LINE: &str = "SKIP: nix evaluation, the .nix files are only parsed (set AGENT_BOX_NIXPKGS_LIB or NIX_PATH, or put nixpkgs' lib at ../shared/nixpkgs-lib/lib)";

/// The README heading whose first ```nix block is the evaluated example.
pub const README_HEADING: &str = "## Install on NixOS";

/// The case the README example must render exactly like.
const README_TWIN: &str = "a-one-user-defaults";

/// Where the pinned cases live, relative to a snapshot root such as `golden/`.
const PINNED_DIR: &str = "nix/";

/// The part of `golden/` this module owns.
fn in_scope(rel: &str) -> bool {
    rel.starts_with(PINNED_DIR)
}

/// The nixpkgs library the cases evaluate with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NixLib {
    /// Absolute directory holding the lib's `default.nix`.
    pub dir: PathBuf,
    /// Where it was found, for the summary line: the variable, NIX_PATH, or the relative fallback path.
    pub source: String,
}

/// The relative fallback of NX-10.1, from the repository root.
const SHARED_LIB: &str = "../shared/nixpkgs-lib/lib";

/// Looks the lib up as NX-10.1 says. A set `AGENT_BOX_NIXPKGS_LIB` that names no lib is an error rather than
/// a reason to fall through, so that a typo cannot silently test against another lib.
pub fn find_lib(root: &Path) -> Result<Option<NixLib>, String> {
    if let Some(value) = env::var_os("AGENT_BOX_NIXPKGS_LIB").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(&value);
        return lib_dir(&dir)
            .map(|dir| Some(NixLib { dir, source: "AGENT_BOX_NIXPKGS_LIB".into() }))
            .ok_or_else(|| format!("AGENT_BOX_NIXPKGS_LIB={} is not a nixpkgs lib directory", dir.display()));
    }
    if env::var_os("NIX_PATH").is_some_and(|v| !v.is_empty())
        && let Some(dir) = nix_path_lib(root)
    {
        return Ok(Some(NixLib { dir, source: "<nixpkgs/lib> from NIX_PATH".into() }));
    }
    shared_lib(root)
}

/// The fallback of NX-10.1, `../shared/nixpkgs-lib/lib`: none in a clone without `../shared` (the evaluation is then
/// skipped), but an error when `../shared` is there without the lib, so that a broken `../shared` fails the check
/// instead of passing for a clone that cannot run it (issue 25).
fn shared_lib(root: &Path) -> Result<Option<NixLib>, String> {
    match lib_dir(&root.join(SHARED_LIB)) {
        Some(dir) => Ok(Some(NixLib { dir, source: SHARED_LIB.into() })),
        None if run::shared_present(root) => {
            Err(format!("{} is there but {SHARED_LIB} is not a nixpkgs lib directory", run::SHARED))
        }
        None => Ok(None),
    }
}

/// The canonical form of `dir` when it holds a `default.nix` (a lib directory), else `None`.
fn lib_dir(dir: &Path) -> Option<PathBuf> {
    let dir = fs::canonicalize(dir).ok()?;
    dir.join("default.nix").is_file().then_some(dir)
}

/// `nix-instantiate --find-file nixpkgs/lib`: what `<nixpkgs/lib>` resolves to, if anything.
fn nix_path_lib(root: &Path) -> Option<PathBuf> {
    let mut cmd = run::command("nix-instantiate");
    cmd.current_dir(root).args(["--find-file", "nixpkgs/lib"]);
    let out = run::output(&mut cmd).ok().filter(|out| out.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    lib_dir(Path::new(text.trim()))
}

/// What a case must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Evaluate; the JSON is pinned in `golden/nix/<case>.json`.
    Pinned,
    /// Evaluate to `{"passed": [...]}` (the case's checks; a failed check is an evaluation error naming it).
    Checks,
    /// Fail evaluation with NixOS' "Failed assertions:" and each of these texts of the module.
    Refused(&'static [&'static str]),
    /// The README example: evaluate, and render exactly like [`README_TWIN`].
    Readme,
}

/// One evaluation case of `nix/tests/cases.nix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub name: &'static str,
    pub expect: Expect,
}

/// Every case of NX-10.3, in the order they run (the README twin before the README).
pub const CASES: [Case; 10] = [
    Case { name: "a-one-user-defaults", expect: Expect::Pinned },
    Case { name: "b-two-users-webhook", expect: Expect::Pinned },
    Case {
        name: "c-bad-session-name",
        expect: Expect::Refused(&[
            "services.agent-box.users.agent.sessions: the session name \"has space\" is not allowed",
            "the session name \"settings\" is not allowed: it is reserved",
            "is not allowed: it is 151 bytes long; at most 150 are allowed",
        ]),
    },
    Case {
        name: "c-missing-user",
        expect: Expect::Refused(&["services.agent-box.users.ghost: the user ghost must exist with a home directory"]),
    },
    Case {
        name: "c-agent-name-space",
        expect: Expect::Refused(&[
            "services.agent-box.users.agent: the harness name \"my agent\" must match [A-Za-z0-9_-]+",
        ]),
    },
    Case {
        name: "c-tmux-server-variable",
        expect: Expect::Refused(&[
            "services.agent-box.users.agent.environment.AGENT_BOX_TMUX_SERVER: the module sets it to \"external\" on the supervisor's unit",
        ]),
    },
    Case { name: "d-package", expect: Expect::Checks },
    Case { name: "e-epilogue", expect: Expect::Checks },
    Case { name: "f-flake", expect: Expect::Checks },
    Case { name: "readme-example", expect: Expect::Readme },
];

/// The pinned cases only.
fn pinned_cases() -> impl Iterator<Item = &'static Case> {
    CASES.iter().filter(|case| case.expect == Expect::Pinned)
}

/// The file a pinned case renders to, relative to a snapshot root.
pub fn pinned_file(case: &str) -> String {
    format!("{PINNED_DIR}{case}.json")
}

/// The outcome of one `nix-instantiate` run.
#[derive(Debug)]
pub struct Evaluation {
    /// Exit status 0.
    pub success: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub secs: f64,
}

/// Runs one case in the repository (or copy) at `root`. `readme` is the extracted example, for the README case.
pub fn evaluate(root: &Path, lib: &NixLib, case: &str, readme: Option<&Path>) -> io::Result<Evaluation> {
    let mut cmd = eval_command(root, lib, case, readme);
    let started = Instant::now();
    let out = run::output(&mut cmd)?;
    Ok(Evaluation {
        success: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: started.elapsed().as_secs_f64(),
    })
}

/// `nix-instantiate --eval --strict --json --readonly-mode nix/tests/eval.nix …`, in `root`.
/// `--readonly-mode` because evaluating must never write to a store: a stand-in that let a real source path
/// through would show as a changed hash, not as a copy of the checkout.
fn eval_command(root: &Path, lib: &NixLib, case: &str, readme: Option<&Path>) -> Command {
    let mut cmd = run::command("nix-instantiate");
    cmd.current_dir(root)
        .args(["--eval", "--strict", "--json", "--readonly-mode", "nix/tests/eval.nix"])
        .args(["--argstr", "libPath"])
        .arg(&lib.dir)
        .args(["--argstr", "case", case]);
    if let Some(file) = readme {
        cmd.args(["--argstr", "readmeFlake"]).arg(file);
    }
    cmd
}

/// The verdict on one case.
#[derive(Debug)]
pub struct Verdict {
    pub case: &'static str,
    /// `None` when the case passed; else the failure, naming the case and carrying nix's message.
    pub failure: Option<String>,
    /// One-line summary for a passed case ("pinned", "13 checks", "refused as expected").
    pub summary: String,
    /// The pretty JSON of a pinned case, as written to golden/nix/ (with a trailing newline).
    pub pinned: Option<String>,
    /// The parsed output, for the README comparison.
    pub value: Option<Value>,
    pub secs: f64,
}

impl Verdict {
    fn failed(case: &'static str, secs: f64, failure: String) -> Self {
        Verdict { case, failure: Some(failure), summary: String::new(), pinned: None, value: None, secs }
    }
}

/// Judges an evaluation against what the case expects.
pub fn judge(case: &Case, eval: &Evaluation) -> Verdict {
    let name = case.name;
    let nix_says = || format!("nix says:\n{}", eval.stderr.trim_end());
    if let Expect::Refused(texts) = case.expect {
        if eval.success {
            return Verdict::failed(
                name,
                eval.secs,
                format!("nix: case {name}: evaluated, but the module must refuse it"),
            );
        }
        let missing: Vec<&str> = std::iter::once("Failed assertions:")
            .chain(texts.iter().copied())
            .filter(|t| !eval.stderr.contains(t))
            .collect();
        if !missing.is_empty() {
            let failure = format!(
                "nix: case {name}: refused, but not with the module's assertion text; missing {missing:?}\n{}",
                nix_says()
            );
            return Verdict::failed(name, eval.secs, failure);
        }
        let summary = format!("refused with the module's assertion ({} message(s))", texts.len());
        return Verdict { case: name, failure: None, summary, pinned: None, value: None, secs: eval.secs };
    }
    if !eval.success {
        return Verdict::failed(name, eval.secs, format!("nix: case {name} failed; {}", nix_says()));
    }
    let value: Value = match serde_json::from_slice(&eval.stdout) {
        Ok(value) => value,
        Err(err) => return Verdict::failed(name, eval.secs, format!("nix: case {name}: output is not JSON: {err}")),
    };
    let (summary, pinned) = match case.expect {
        Expect::Pinned => match serde_json::to_string_pretty(&value) {
            Ok(text) => (format!("pinned as golden/{}", pinned_file(name)), Some(text + "\n")),
            Err(err) => return Verdict::failed(name, eval.secs, format!("nix: case {name}: cannot print: {err}")),
        },
        Expect::Checks => match value.get("passed").and_then(Value::as_array) {
            Some(passed) if !passed.is_empty() => (format!("{} checks hold", passed.len()), None),
            _ => return Verdict::failed(name, eval.secs, format!("nix: case {name}: no list of passed checks")),
        },
        _ => ("rendered".to_string(), None),
    };
    Verdict { case: name, failure: None, summary, pinned, value: Some(value), secs: eval.secs }
}

/// The first ```nix block under [`README_HEADING`] (before the next `## ` heading), verbatim.
pub fn readme_example(readme: &str) -> Result<String, String> {
    let mut lines = readme.lines();
    if !lines.by_ref().any(|line| line.trim_end() == README_HEADING) {
        return Err(format!("README.md has no heading '{README_HEADING}'"));
    }
    loop {
        match lines.next() {
            None => return Err(format!("README.md: no ```nix block under '{README_HEADING}'")),
            Some(line) if line.starts_with("## ") => {
                return Err(format!("README.md: no ```nix block under '{README_HEADING}' before '{line}'"));
            }
            Some(line) if line.trim_end() == "```nix" => break,
            Some(_) => {}
        }
    }
    let mut block = String::new();
    for line in lines {
        if line.trim_end() == "```" {
            return Ok(block);
        }
        block.push_str(line);
        block.push('\n');
    }
    Err(format!("README.md: the ```nix block under '{README_HEADING}' is not closed"))
}

/// What stands in for the `./configuration.nix` the README example imports (the reader's own machine).
const MACHINE_STAND_IN: &str =
    "# Stand-in for the machine's own configuration (hardware, boot loader, file systems).\n{ }\n";

/// Writes the README example as `flake.nix` (and the machine stand-in beside it) into a fresh directory
/// under `<target>/nix-eval/`, removed when the returned guard is dropped.
fn write_readme_flake(root: &Path) -> Result<(tempfile::TempDir, PathBuf), String> {
    let readme = fs::read_to_string(root.join("README.md")).map_err(|err| format!("cannot read README.md: {err}"))?;
    let example = readme_example(&readme)?;
    let parent = run::target_dir().join("nix-eval");
    let written = fs::create_dir_all(&parent)
        .and_then(|()| tempfile::Builder::new().prefix("readme-").tempdir_in(&parent))
        .and_then(|dir| {
            let flake = dir.path().join("flake.nix");
            fs::write(&flake, example)?;
            fs::write(dir.path().join("configuration.nix"), MACHINE_STAND_IN)?;
            Ok((dir, flake))
        });
    written.map_err(|err| format!("cannot write the README example under {}: {err}", parent.display()))
}

/// Runs every case in `root` and writes a line per case to `out`; returns the verdicts in [`CASES`] order.
/// A nix-instantiate that cannot be started is an `Err` (setup, not the code, is at fault).
pub fn run_cases(root: &Path, lib: &NixLib, cases: &[Case], out: &mut dyn Write) -> io::Result<Vec<Verdict>> {
    let readme =
        if cases.iter().any(|case| case.expect == Expect::Readme) { Some(write_readme_flake(root)) } else { None };
    let mut verdicts: Vec<Verdict> = Vec::new();
    for case in cases {
        let file = match (&readme, case.expect) {
            (Some(Ok((_, file))), Expect::Readme) => Some(file.as_path()),
            (Some(Err(msg)), Expect::Readme) => {
                let verdict = Verdict::failed(case.name, 0.0, format!("nix: case {}: {msg}", case.name));
                report(out, &verdict)?;
                verdicts.push(verdict);
                continue;
            }
            _ => None,
        };
        let mut verdict = judge(case, &evaluate(root, lib, case.name, file)?);
        if case.expect == Expect::Readme && verdict.failure.is_none() {
            verdict.failure = compare_with_twin(&verdict, &verdicts);
            verdict.summary = format!("renders exactly like {README_TWIN}");
        }
        report(out, &verdict)?;
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

/// The README example must render exactly like [`README_TWIN`]: the pinned file then shows what it creates.
fn compare_with_twin(readme: &Verdict, earlier: &[Verdict]) -> Option<String> {
    let name = readme.case;
    let Some(twin) = earlier.iter().find(|v| v.case == README_TWIN) else {
        return Some(format!("nix: case {name}: case {README_TWIN} was not run, so nothing to compare with"));
    };
    match (&twin.value, &readme.value) {
        (Some(expected), Some(actual)) if expected == actual => None,
        (Some(expected), Some(actual)) => Some(format!(
            "nix: case {name}: the README example renders differently from case {README_TWIN} at {}; it must stay the \
             one-user default configuration that golden/{} pins",
            first_difference(expected, actual, String::new()),
            pinned_file(README_TWIN)
        )),
        _ => Some(format!("nix: case {name}: not compared, because case {README_TWIN} failed")),
    }
}

/// The JSON path of the first place where two values differ.
fn first_difference(a: &Value, b: &Value, at: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                match y.get(key) {
                    Some(other) if other != value => return first_difference(value, other, format!("{at}.{key}")),
                    None => return format!("{at}.{key} (only in {README_TWIN})"),
                    Some(_) => {}
                }
            }
            match y.keys().find(|key| !x.contains_key(*key)) {
                Some(key) => format!("{at}.{key} (only in the README example)"),
                None => at,
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => match x.iter().zip(y).position(|(p, q)| p != q) {
            Some(index) => first_difference(&x[index], &y[index], format!("{at}[{index}]")),
            None => at,
        },
        _ => {
            if at.is_empty() {
                "the top".to_string()
            } else {
                at
            }
        }
    }
}

fn report(out: &mut dyn Write, verdict: &Verdict) -> io::Result<()> {
    match &verdict.failure {
        None => writeln!(out, "nix: {}: ok, {} ({:.2}s)", verdict.case, verdict.summary, verdict.secs),
        Some(failure) => writeln!(out, "nix: {}: FAILED ({:.2}s)\n{failure}", verdict.case, verdict.secs),
    }
}

/// The evaluation part of the step, in the repository (or copy) at `root`: every case, the README twin, and
/// the pinned cases against `<root>/golden/nix/` (rendered into `<target>/golden/nix-rendered/`).
pub fn check(root: &Path, lib: &NixLib, out: &mut dyn Write) -> StepResult {
    checked(root, lib, out).unwrap_or_else(|err| {
        // nix-instantiate could not be started (a setup problem), or the report could not be written.
        if err.kind() == io::ErrorKind::NotFound {
            eprintln!("{}", super::missing_nix_line(&err));
            Err(Failed(exit::SETUP.into()))
        } else {
            eprintln!("nix: {err}");
            Err(Failed(exit::CHECK_FAILED.into()))
        }
    })
}

fn checked(root: &Path, lib: &NixLib, out: &mut dyn Write) -> io::Result<StepResult> {
    let verdicts = run_cases(root, lib, &CASES, out)?;
    let mut failed: Vec<&str> = verdicts.iter().filter(|v| v.failure.is_some()).map(|v| v.case).collect();
    if pinned_cases().all(|case| verdicts.iter().any(|v| v.case == case.name && v.pinned.is_some())) {
        let rendered = run::target_dir().join("golden/nix-rendered");
        match compare_pinned(root, &rendered, &verdicts, out) {
            Ok(true) => writeln!(out, "nix: golden/{PINNED_DIR} is current ({} files)", pinned_cases().count())?,
            Ok(false) => failed.push("golden/nix"),
            Err(err) => {
                writeln!(out, "nix: cannot compare with golden/{PINNED_DIR}: {err}")?;
                failed.push("golden/nix");
            }
        }
    } else {
        writeln!(out, "nix: golden/{PINNED_DIR} not compared: a pinned case failed")?;
    }
    let summary = format!("nix: evaluated {} cases with lib {} ({})", CASES.len(), lib.dir.display(), lib.source);
    if failed.is_empty() {
        writeln!(out, "{summary}")?;
        Ok(Ok(()))
    } else {
        writeln!(out, "{summary}; failed: {}", failed.join(", "))?;
        Ok(Err(Failed(exit::CHECK_FAILED.into())))
    }
}

/// Writes the pinned verdicts under `rendered/nix/` (fresh) and compares them with `<root>/golden/`; prints
/// the drift report of GD-6 and returns whether everything matched.
fn compare_pinned(root: &Path, rendered: &Path, verdicts: &[Verdict], out: &mut dyn Write) -> io::Result<bool> {
    tree::write_tree(rendered, &pinned_tree(verdicts))?;
    let leaks = tree::leaks(&tree::read_tree(rendered)?, &leak_needles(root));
    for leak in &leaks {
        writeln!(out, "{leak}")?;
    }
    let drift = tree::compare(&root.join("golden"), rendered, &in_scope)?;
    if drift.is_clean() {
        return Ok(leaks.is_empty());
    }
    out.write_all(drift.report.as_bytes())?;
    out.write_all(drift.summary().as_bytes())?;
    writeln!(out, "nix: (or only this part: cargo xtask nix --bless)")?;
    Ok(false)
}

/// The pinned files of these verdicts, keyed like golden/ (`nix/<case>.json`).
fn pinned_tree(verdicts: &[Verdict]) -> tree::Tree {
    verdicts
        .iter()
        .filter_map(|v| v.pinned.as_ref().map(|text| (pinned_file(v.case), text.clone().into_bytes())))
        .collect()
}

/// What must never appear in a pinned file (GD-6.4): this checkout's path, temporary files, the real HOME.
fn leak_needles(root: &Path) -> Vec<String> {
    let mut needles = vec![root.display().to_string(), "/tmp/".to_string()];
    if let Ok(canonical) = fs::canonicalize(root) {
        needles.push(canonical.display().to_string());
    }
    // A HOME of "/" (or unset) would match every path, which says nothing about a leak.
    if let Some(home) = env::var("HOME").ok().filter(|home| home.trim_end_matches('/').len() > 1) {
        needles.push(home);
    }
    needles
}

/// Evaluates the pinned cases of the repository (or copy) at `root` and writes them under `out_dir`;
/// returns the files written. The per-case lines are not printed: a failure comes back as the `Err`.
fn render_with(root: &Path, lib: &NixLib, out_dir: &Path) -> Result<Vec<String>, String> {
    let cases: Vec<Case> = pinned_cases().copied().collect();
    let verdicts = run_cases(root, lib, &cases, &mut io::sink()).map_err(|err| super::missing_nix_line(&err))?;
    if let Some(failure) = verdicts.iter().find_map(|v| v.failure.clone()) {
        return Err(failure);
    }
    let files = pinned_tree(&verdicts);
    let leaks = tree::leaks(&files, &leak_needles(root));
    if !leaks.is_empty() {
        return Err(leaks.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
    }
    for (rel, bytes) in &files {
        let path = out_dir.join(rel);
        let written = path.parent().map_or(Ok(()), fs::create_dir_all).and_then(|()| fs::write(&path, bytes));
        written.map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    Ok(files.into_keys().collect())
}

/// `cargo xtask nix --bless` in the repository (or copy) at `root`: renders the pinned cases twice, refuses
/// (100) when the two differ, else makes golden/nix/ equal to the render and prints one `A|M|D <path>` line
/// per change.
pub fn bless(root: &Path, lib: &NixLib, out: &mut dyn Write) -> StepResult {
    let scratch = run::target_dir().join("golden/nix-bless");
    let renders = [scratch.join("first"), scratch.join("second")];
    for dir in &renders {
        // A leftover of an earlier bless would count as rendered.
        let rendered = remove_if_present(dir)
            .map_err(|err| format!("nix: cannot clear {}: {err}", dir.display()))
            .and_then(|()| render_with(root, lib, dir));
        if let Err(msg) = rendered {
            eprintln!("{msg}\nnix: nothing blessed");
            return Err(Failed(exit::CHECK_FAILED.into()));
        }
    }
    let trees = renders.iter().map(|dir| tree::read_tree(dir)).collect::<io::Result<Vec<_>>>();
    let result = trees.and_then(|trees| {
        let unstable = tree::unstable(&trees[0], &trees[1]);
        if !unstable.is_empty() {
            return Ok(Err(unstable));
        }
        tree::bless(&root.join("golden"), &renders[0], &in_scope).map(Ok)
    });
    match result {
        Ok(Ok(changes)) => {
            for change in &changes {
                let _ = writeln!(out, "{change}");
            }
            // A second bless in a row prints no change line at all (GD-7).
            if !changes.is_empty() {
                let _ = writeln!(out, "nix: golden/{PINNED_DIR} blessed ({} change(s))", changes.len());
            }
            Ok(())
        }
        Ok(Err(unstable)) => {
            eprintln!("nix: refusing to bless: two renders differ in {}", unstable.join(", "));
            Err(Failed(exit::CHECK_FAILED.into()))
        }
        Err(err) => {
            eprintln!("nix: cannot bless golden/{PINNED_DIR}: {err}");
            Err(Failed(exit::CHECK_FAILED.into()))
        }
    }
}

/// Removes `dir` and everything in it; a directory that is not there is fine.
fn remove_if_present(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lib the tests evaluate with, looked up like the step does. `None` (and a `SKIP` line) when
    /// nix-instantiate is absent, or in a clone without `../shared` when no variable names a lib; with `../shared`
    /// there (the repository's CI) a missing lib is a failure, not a skip (`find_lib`).
    fn lib_or_skip(test: &str) -> Option<NixLib> {
        if Command::new("nix-instantiate").arg("--version").output().is_err() {
            println!("SKIP: {test}, nix-instantiate is not installed (Debian: apt-get install nix-bin)");
            return None;
        }
        match find_lib(&run::workspace_root()) {
            Ok(Some(lib)) => Some(lib),
            Ok(None) => {
                println!(
                    "SKIP: {test}, no nixpkgs lib (set AGENT_BOX_NIXPKGS_LIB or NIX_PATH, or put one at {SHARED_LIB})"
                );
                None
            }
            Err(msg) => panic!("{test}: {msg}"),
        }
    }

    // Issue 25: a clone of the repository alone skips the evaluation; a `../shared` without the lib fails it.
    #[test]
    fn the_shared_lib_is_none_without_shared_an_error_in_a_broken_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("checkout");
        fs::create_dir_all(&root).unwrap();
        assert_eq!(shared_lib(&root), Ok(None), "no ../shared: nothing to evaluate with");
        fs::create_dir_all(dir.path().join("shared")).unwrap();
        let err = shared_lib(&root).unwrap_err();
        assert_eq!(err, "../shared is there but ../shared/nixpkgs-lib/lib is not a nixpkgs lib directory");
        let lib = dir.path().join("shared/nixpkgs-lib/lib");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("default.nix"), "{ }\n").unwrap();
        let found = shared_lib(&root).unwrap().unwrap();
        assert_eq!((found.dir, found.source.as_str()), (fs::canonicalize(&lib).unwrap(), SHARED_LIB));
    }

    fn case(name: &str) -> Case {
        *CASES.iter().find(|case| case.name == name).unwrap()
    }

    /// A copy of what the cases read: nix/, flake.nix, the manifests, README.md and golden/nix/.
    fn copy_of_repository() -> tempfile::TempDir {
        let root = run::workspace_root();
        let copy = tempfile::tempdir().unwrap();
        for file in ["flake.nix", "Cargo.toml", "Cargo.lock", "README.md"] {
            fs::copy(root.join(file), copy.path().join(file)).unwrap();
        }
        for dir in ["nix", "golden/nix"] {
            let from = root.join(dir);
            for (rel, bytes) in tree::read_tree(&from).unwrap() {
                let to = copy.path().join(dir).join(rel);
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::write(to, bytes).unwrap();
            }
        }
        copy
    }

    #[test]
    fn a_broken_module_fails_the_step_with_nix_message_and_the_case_name() {
        let Some(lib) = lib_or_skip("a_broken_module_fails_the_step") else { return };
        let copy = copy_of_repository();
        let module = copy.path().join("nix/module.nix");
        let text = fs::read_to_string(&module).unwrap();
        assert!(text.contains("Type = \"exec\";"));
        fs::write(&module, text.replace("Type = \"exec\";", "Type = exec;")).unwrap();

        let mut out = Vec::new();
        let result = check(copy.path(), &lib, &mut out);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(result, Err(Failed(100)), "{out}");
        assert!(out.contains("nix: a-one-user-defaults: FAILED"), "{out}");
        assert!(out.contains("nix: case a-one-user-defaults failed; nix says:"), "{out}");
        assert!(out.contains("undefined variable 'exec'"), "nix's own message is missing:\n{out}");
        assert!(out.contains("failed: a-one-user-defaults"), "{out}");
    }

    #[test]
    fn the_unbroken_copy_passes_every_case() {
        let Some(lib) = lib_or_skip("the_unbroken_copy_passes_every_case") else { return };
        let copy = copy_of_repository();
        let mut out = Vec::new();
        let result = check(copy.path(), &lib, &mut out);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(result, Ok(()), "{out}");
        assert!(out.contains(&format!("nix: evaluated 10 cases with lib {}", lib.dir.display())), "{out}");
    }

    #[test]
    fn c_cases_fail_with_the_module_assertion_not_a_type_error() {
        let Some(lib) = lib_or_skip("c_cases_fail_with_the_module_assertion") else { return };
        let root = run::workspace_root();
        for case in CASES.iter().filter(|case| matches!(case.expect, Expect::Refused(_))) {
            let eval = evaluate(&root, &lib, case.name, None).unwrap();
            assert!(!eval.success, "{} evaluated", case.name);
            assert!(eval.stderr.contains("Failed assertions:"), "{}: {}", case.name, eval.stderr);
            assert!(!eval.stderr.contains("is not of type"), "{}: a type error: {}", case.name, eval.stderr);
            let verdict = judge(case, &eval);
            assert!(verdict.failure.is_none(), "{:?}", verdict.failure);
        }
    }

    #[test]
    fn a_refused_case_without_the_expected_text_fails() {
        let eval = Evaluation {
            success: false,
            stdout: Vec::new(),
            stderr: "error: value is a string while a set was expected".into(),
            secs: 0.1,
        };
        let failure = judge(&case("c-missing-user"), &eval).failure.unwrap();
        assert!(failure.contains("c-missing-user") && failure.contains("a set was expected"), "{failure}");
        let passed = Evaluation { success: true, stdout: b"{}".to_vec(), stderr: String::new(), secs: 0.1 };
        assert!(judge(&case("c-missing-user"), &passed).failure.unwrap().contains("must refuse"));
    }

    #[test]
    fn the_readme_example_is_evaluated_verbatim_and_renders_case_a() {
        let Some(lib) = lib_or_skip("the_readme_example_is_evaluated_verbatim") else { return };
        let root = run::workspace_root();
        let readme = fs::read_to_string(root.join("README.md")).unwrap();
        let example = readme_example(&readme).unwrap();
        assert!(example.contains("agent-box.nixosModules.default"), "{example}");
        let (_guard, flake) = write_readme_flake(&root).unwrap();
        assert_eq!(fs::read_to_string(&flake).unwrap(), example);

        let mut out = Vec::new();
        let cases = [case(README_TWIN), case("readme-example")];
        let verdicts = run_cases(&root, &lib, &cases, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(verdicts.iter().all(|v| v.failure.is_none()), "{out}");
        assert_eq!(verdicts[0].value, verdicts[1].value);
    }

    #[test]
    fn a_readme_example_that_differs_from_case_a_is_reported_with_the_path() {
        let twin: Value = serde_json::json!({"users": {"agent": {"agents": "shell claude", "unit": {}}}});
        let other: Value = serde_json::json!({"users": {"agent": {"agents": "claude shell", "unit": {}}}});
        let make = |case, value| Verdict {
            case,
            failure: None,
            summary: String::new(),
            pinned: None,
            value: Some(value),
            secs: 0.0,
        };
        let failure = compare_with_twin(&make("readme-example", other), &[make(README_TWIN, twin.clone())]).unwrap();
        assert!(failure.contains(".users.agent.agents"), "{failure}");
        assert!(compare_with_twin(&make("readme-example", twin.clone()), &[make(README_TWIN, twin)]).is_none());
    }

    #[test]
    fn readme_extraction_takes_the_first_nix_block_under_the_heading() {
        let text = "# x\n```nix\nnot this\n```\n## Install on NixOS\n\ntext\n```sh\nno\n```\n```nix\n{ a = 1; }\n  b\n```\n```nix\nsecond\n```\n";
        assert_eq!(readme_example(text).unwrap(), "{ a = 1; }\n  b\n");
        assert!(readme_example("## Install on NixOS\n## Next\n```nix\nx\n```\n").unwrap_err().contains("before"));
        assert!(readme_example("# nothing\n").unwrap_err().contains("no heading"));
        assert!(readme_example("## Install on NixOS\n```nix\nx\n").unwrap_err().contains("not closed"));
    }

    #[test]
    fn case_table_matches_nx_10_3() {
        assert_eq!(CASES.iter().filter(|c| c.expect == Expect::Pinned).count(), 2);
        // NX-10.3 (c) names three; the fourth is 75-upgrades' AGENT_BOX_TMUX_SERVER refused in `environment`.
        assert_eq!(CASES.iter().filter(|c| matches!(c.expect, Expect::Refused(_))).count(), 4);
        let twin = CASES.iter().position(|c| c.name == README_TWIN).unwrap();
        let readme = CASES.iter().position(|c| c.expect == Expect::Readme).unwrap();
        assert!(twin < readme, "the README is compared with an earlier case");
        assert_eq!(pinned_file("a-one-user-defaults"), "nix/a-one-user-defaults.json");
        assert!(in_scope("nix/a.json") && !in_scope("help/x.txt"));
    }

    #[test]
    fn bless_repairs_golden_nix_and_then_changes_nothing() {
        let Some(lib) = lib_or_skip("bless_repairs_golden_nix") else { return };
        let copy = copy_of_repository();
        let pinned = copy.path().join("golden").join(pinned_file(README_TWIN));
        let original = fs::read(&pinned).unwrap();
        fs::write(&pinned, b"{}\n").unwrap();
        fs::write(copy.path().join("golden/nix/stale.json"), b"{}\n").unwrap();

        let mut out = Vec::new();
        assert_eq!(bless(copy.path(), &lib, &mut out), Ok(()));
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("M golden/nix/a-one-user-defaults.json\nD golden/nix/stale.json\n"), "{out}");
        assert_eq!(fs::read(&pinned).unwrap(), original);

        let mut again = Vec::new();
        assert_eq!(bless(copy.path(), &lib, &mut again), Ok(()));
        assert_eq!(String::from_utf8(again).unwrap(), "");
    }

    /// The value of `key=` in the `[Unit]` section of an installed unit template.
    fn unit_section_value(template: &str, key: &str) -> Option<String> {
        let unit =
            template.split("\n[").find(|section| section.starts_with("[Unit]") || section.starts_with("Unit]"))?;
        unit.lines().find_map(|line| line.strip_prefix(&format!("{key}=")).map(str::to_owned))
    }

    // A-8 (issue 25): one start-limit rule for both deployments. The units `cargo xtask install` writes set
    // StartLimitIntervalSec in [Unit]; the NixOS module's two units must set the same (`startLimitIntervalSec`,
    // which NixOS writes into [Unit]), or a NixOS box gives up on a crash loop that an installed box rides out.
    #[test]
    fn the_module_s_units_keep_the_installed_units_start_limit() {
        let Some(lib) = lib_or_skip("the_module_s_units_keep_the_installed_units_start_limit") else { return };
        let root = run::workspace_root();
        let verdict = judge(&case(README_TWIN), &evaluate(&root, &lib, README_TWIN, None).unwrap());
        let value = verdict.value.unwrap_or_else(|| panic!("{:?}", verdict.failure));
        for (template, unit) in [("agent-box.service", "unit"), ("agent-box-tmux.service", "tmuxUnit")] {
            let text = fs::read_to_string(root.join("crates/install/templates").join(template)).unwrap();
            let installed = unit_section_value(&text, "StartLimitIntervalSec")
                .unwrap_or_else(|| panic!("{template} sets no StartLimitIntervalSec in [Unit]"));
            let module = &value["users"]["agent"][unit];
            assert_eq!(
                module["startLimitIntervalSec"].to_string(),
                installed,
                "the module's {unit} and the installed {template} disagree on the start limit: {module}"
            );
            assert!(module["serviceConfig"].get("StartLimitIntervalSec").is_none(), "it belongs in [Unit]");
        }
    }

    #[test]
    fn render_writes_golden_layout() {
        let Some(lib) = lib_or_skip("render_writes_golden_layout") else {
            return;
        };
        let out = tempfile::tempdir().unwrap();
        let written = render_with(&run::workspace_root(), &lib, out.path()).unwrap();
        let expected: Vec<String> = pinned_cases().map(|c| pinned_file(c.name)).collect();
        assert_eq!(written, expected);
        for rel in expected {
            let text = fs::read_to_string(out.path().join(&rel)).unwrap();
            assert!(text.ends_with("}\n") && text.contains("\"serviceConfig\""), "{rel}");
        }
    }
}
