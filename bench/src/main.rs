//! `agent-box-bench`, run as `cargo xtask bench`: measures the quality bars of spec 90 (sections `epilogue` Q1 Q2, `tick` Q3 Q5, `add` Q4,
//! `vanish` Q11, `rmw` Q6, `crash` Q7, `faults` Q8, `upgrade` Q12, `intake` Q13 Q14, `claims` (issue 26: admission and renewal with a claims database), and `golden`, the time of one
//! whole golden render) on release binaries, every product inside a harness sandbox, and reports a table on stdout plus
//! `target/bench/report.json`. A section builds only the programs it runs. Every timed comparison samples both
//! sides in the same rounds and reports the median of the per-round ratios with their spread. Exit 0; with
//! `--enforce` 100 when a bar that applies here fails; 96 when the setup or a section cannot run.

mod add;
mod bake;
mod baseline;
mod claims;
mod crash;
mod epilogue;
mod facts;
mod fail;
mod faults;
mod golden;
mod intake;
mod interrupt;
mod procfs;
mod report;
mod report_json;
mod rmw;
mod run;
mod runner;
mod stats;
mod tick;
mod tools;
mod upgrade;
mod vanish;
mod world;

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::process::ExitCode;

use agent_box_tests::HeldLock;
use clap::{Parser, ValueEnum};
use rand::RngExt;

use self::facts::Facts;
use self::fail::{Context, Failure, Outcome, fail};
use self::report::{Metric, Verdict};
use self::tools::Tools;
use self::world::BenchRoot;
use crate::bake::bake_echoed;
use crate::report_json::{BenchReport, SectionFailure};
use crate::run as runner_cmd;

/// The exit codes of bench, the numbers xtask's commands use (XT-1.6).
mod exit {
    /// Everything ran (whatever the bars say, without `--enforce`).
    pub const SUCCESS: u8 = 0;
    /// The setup or a section could not run.
    pub const SETUP: u8 = 96;
    /// `--enforce` and a bar that applies here failed.
    pub const CHECK_FAILED: u8 = 100;
}

/// Measure the speed and memory bars Q1-Q14 of docs/ids.md in eleven sections and write <target>/bench/report.json.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask bench", bin_name = "cargo xtask bench")]
pub struct BenchArgs {
    /// Exit 100 when a bar that applies to this machine fails.
    #[arg(long)]
    enforce: bool,
    /// Also count instructions (callgrind `Ir`) of the epilogue and of one supervisor tick; needs valgrind.
    #[arg(long)]
    callgrind: bool,
    /// Also build git revision REV (in a worktree under target/bench/baseline/) and run its programs alternately
    /// with this build's in the sections epilogue, tick and rmw; ratios new/old above 1.10 are flagged.
    #[arg(long, value_name = "REV")]
    baseline: Option<String>,
    /// Seed of the crash section's random choices; printed on every run so a run can be replayed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Iterations of the crash section (spec: 1000); fewer only for a quick replay of a seed.
    #[arg(long, value_name = "N", default_value_t = 1000, hide = true)]
    crash_iterations: usize,
    /// Sections to run (all when none is given).
    #[arg(value_enum, value_name = "FILTER")]
    filter: Vec<Section>,
}

/// The sections of spec 90, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Section {
    Epilogue,
    Tick,
    Add,
    Vanish,
    Rmw,
    Crash,
    Faults,
    Upgrade,
    Intake,
    Claims,
    Golden,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Self::Epilogue => "epilogue",
            Self::Tick => "tick",
            Self::Add => "add",
            Self::Vanish => "vanish",
            Self::Rmw => "rmw",
            Self::Crash => "crash",
            Self::Faults => "faults",
            Self::Upgrade => "upgrade",
            Self::Intake => "intake",
            Self::Claims => "claims",
            Self::Golden => "golden",
        }
    }
}

const ALL: [Section; 11] = [
    Section::Epilogue,
    Section::Tick,
    Section::Add,
    Section::Vanish,
    Section::Rmw,
    Section::Crash,
    Section::Faults,
    Section::Upgrade,
    Section::Intake,
    Section::Claims,
    Section::Golden,
];

/// What every section may use: options, tools, paths and the baked epilogue.
#[derive(Debug)]
pub struct Bench {
    pub callgrind: bool,
    pub seed: u64,
    pub crash_iterations: usize,
    pub tools: Tools,
    /// `target/release`, where the binaries under test are.
    pub release: PathBuf,
    /// `target/bench`.
    pub dir: PathBuf,
    /// The fixed root the epilogue is baked for.
    pub root: BenchRoot,
    /// The epilogue baked (profile `epilogue`) for `root`, when a selected section needs it.
    pub baked: Option<PathBuf>,
    /// `--baseline REV`, built.
    pub baseline: Option<baseline::Baseline>,
    _lock: HeldLock,
}

impl Bench {
    fn baked(&self) -> Outcome<&Path> {
        self.baked.as_deref().context(|| "the baked epilogue is missing".into())
    }
}

fn main() -> ExitCode {
    let args = match BenchArgs::try_parse() {
        Ok(args) => args,
        Err(err) => {
            // A failed print (closed stdout) leaves nothing better to do.
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { USAGE } else { exit::SUCCESS });
        }
    };
    ExitCode::from(run_bench(&args))
}

/// A usage error; the number clap itself uses.
const USAGE: u8 = 2;

/// Runs bench and returns the exit code.
fn run_bench(args: &BenchArgs) -> u8 {
    let sections = selected(&args.filter);
    let measured = sections;
    if measured.is_empty() {
        println!("bench: nothing to measure");
        return exit::SUCCESS;
    }
    let started = Instant::now();
    interrupt::install();
    let (bench, facts) = match setup(args, &measured) {
        Ok(ready) => ready,
        Err(failure) => {
            eprintln!("bench: setup failed: {failure}");
            return if interrupt::interrupted() { INTERRUPTED } else { exit::SETUP };
        }
    };
    let reference = facts.reference_mismatches().is_empty();
    let mut metrics = Vec::new();
    let mut failures = Vec::new();
    for section in &measured {
        if interrupt::interrupted() {
            break;
        }
        println!("==> bench {}", section.name());
        let section_started = Instant::now();
        match run_section(*section, &bench, &mut metrics) {
            Ok(()) => println!("--> {} done ({:.1}s)", section.name(), section_started.elapsed().as_secs_f64()),
            Err(failure) => {
                println!("--> {} could not run: {failure}", section.name());
                failures.push((*section, failure));
            }
        }
    }
    finish(&bench, &facts, reference, &metrics, &failures, started.elapsed());
    if interrupt::interrupted() {
        return INTERRUPTED;
    }
    exit_code(&metrics, &failures, reference, args.enforce)
}

/// The exit code after Ctrl-C, as a shell reports a process ended by SIGINT (and as `demo` exits, XT-3.6).
const INTERRUPTED: u8 = 130;

/// The sections a FILTER list selects: all when empty; each once, in spec order.
fn selected(filter: &[Section]) -> Vec<Section> {
    if filter.is_empty() {
        return ALL.to_vec();
    }
    let mut chosen = filter.to_vec();
    chosen.sort();
    chosen.dedup();
    chosen
}

/// 96 when anything could not run; else 100 under `--enforce` when a bar that applies here failed; else 0.
fn exit_code(metrics: &[Metric], failures: &[(Section, Failure)], reference: bool, enforce: bool) -> u8 {
    if !failures.is_empty() {
        exit::SETUP
    } else if enforce && metrics.iter().any(|m| m.verdict(reference) == Verdict::Fail) {
        exit::CHECK_FAILED
    } else {
        exit::SUCCESS
    }
}

/// Runs one section; a panic inside the harness (a wait that timed out, a sandbox that could not be built)
/// becomes a failure of that section only, after the sandbox's own teardown has run during the unwind.
fn run_section(section: Section, bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let body = AssertUnwindSafe(|| match section {
        Section::Epilogue => epilogue::run(bench, metrics),
        Section::Tick => tick::run(bench, metrics),
        Section::Add => add::run(bench, metrics),
        Section::Vanish => vanish::run(bench, metrics),
        Section::Rmw => rmw::run(bench, metrics),
        Section::Crash => crash::run(bench, metrics),
        Section::Faults => faults::run(bench, metrics),
        Section::Upgrade => upgrade::run(bench, metrics),
        Section::Intake => intake::run(bench, metrics),
        Section::Claims => claims::run(bench, metrics),
        Section::Golden => golden::run(bench, metrics),
    });
    catch_unwind(body).unwrap_or_else(|payload| {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned());
        fail(format!("panicked: {text}"))
    })
}

/// Facts, tools, the release build, the sandbox location and the bake: everything before the first section.
fn setup(args: &BenchArgs, sections: &[Section]) -> Outcome<(Bench, Facts)> {
    let target = target_dir();
    let dir = target.join("bench");
    fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
    // Two bench runs at once would measure each other and share the fixed root.
    let lock = HeldLock::acquire(&dir.join(".lock"), Duration::ZERO)
        .context(|| format!("another bench run holds {}", dir.join(".lock").display()))?;
    let root = BenchRoot::at(&dir.join("root"));
    let facts = Facts::gather(&dir);
    print_facts(&facts);
    let tools = Tools::detect();
    println!("{}", tools.line());
    if let Some(hint) = tools::install_hint(&tools.missing_packages(args.callgrind)) {
        println!("{hint}");
    }
    if facts.tmux == "unknown" {
        return fail(
            "tmux is required by the bench sandboxes and is not installed; install it (Debian: sudo apt-get install tmux) and run again",
        );
    }
    let products = products_for(sections);
    build_release(&products)?;
    let release = target.join("release");
    check_binaries(&release, &products)?;
    agent_box_tests::bins::use_bin_dir(release.clone());
    place_sandboxes(&dir.join("sandboxes"))?;
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    let needs_bake = sections.iter().any(|s| matches!(s, Section::Epilogue | Section::Crash | Section::Intake));
    let baked = if needs_bake { Some(bake_for(&root)?) } else { None };
    let baseline = match &args.baseline {
        Some(rev) => {
            println!("bench: building the baseline {rev} in a worktree under {}", dir.join("baseline").display());
            let bake = sections.contains(&Section::Epilogue);
            Some(baseline::Baseline::prepare(rev, &dir, &root, bake, &products)?)
        }
        None => None,
    };
    let bench = Bench {
        callgrind: args.callgrind,
        seed,
        crash_iterations: args.crash_iterations,
        tools,
        release,
        dir,
        root,
        baked,
        baseline,
        _lock: lock,
    };
    Ok((bench, facts))
}

fn print_facts(facts: &Facts) {
    for line in facts.lines() {
        println!("{line}");
    }
    let mismatches = facts.reference_mismatches();
    if mismatches.is_empty() {
        println!("reference  yes: absolute timing bars are judged on this machine (Q-1.3)");
    } else {
        println!(
            "reference  no ({}): absolute timing bars are informative here, shown as (pass)/(over); compare the ratios",
            mismatches.join(", ")
        );
    }
}

/// Cargo's target directory of this run, as the harness found it (from where this executable was built).
fn target_dir() -> PathBuf {
    agent_box_tests::target_dir()
}

/// A release program a section runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Product {
    Bin(&'static str),
    Example(&'static str),
}

impl Product {
    /// Where the release build puts it, under `target/release`.
    fn path(self) -> String {
        match self {
            Self::Bin(name) => name.to_owned(),
            Self::Example(name) => format!("examples/{name}"),
        }
    }
}

const SUPERVISOR: Product = Product::Bin("agent-box-supervisor");
const SESSION: Product = Product::Bin("agent-box-session");
const SPAWN: Product = Product::Bin("agent-box-webhook-spawn");
/// The unbaked epilogue: every harness sandbox names it as `AGENT_BOX_MARK_STOPPED`, and the supervisor insists
/// that it exists.
const EPILOGUE: Product = Product::Bin("agent-box-mark-stopped");
const RMW: Product = Product::Example("rmw");

/// What a section runs from the release build; the epilogue section runs only its bakes (issue 12: it used to
/// wait minutes for every binary and example).
fn products_of(section: Section) -> &'static [Product] {
    match section {
        Section::Epilogue => &[],
        Section::Tick | Section::Vanish => &[SUPERVISOR, EPILOGUE],
        Section::Add => &[SUPERVISOR, SESSION, EPILOGUE],
        Section::Rmw => &[RMW, EPILOGUE],
        Section::Crash => &[SUPERVISOR, SESSION, SPAWN, EPILOGUE, RMW],
        Section::Faults | Section::Upgrade | Section::Golden => &[SUPERVISOR, SESSION, SPAWN, EPILOGUE],
        Section::Intake => &[SUPERVISOR, SPAWN, EPILOGUE],
        Section::Claims => &[SUPERVISOR, SPAWN, EPILOGUE],
    }
}

/// The union of what the selected sections run, each once.
pub fn products_for(sections: &[Section]) -> Vec<Product> {
    let mut products: Vec<Product> = sections.iter().flat_map(|s| products_of(*s).iter().copied()).collect();
    products.sort();
    products.dedup();
    products
}

/// `--bin NAME` and `--example NAME` for each product.
pub fn target_args(products: &[Product]) -> Vec<String> {
    products
        .iter()
        .flat_map(|p| match p {
            Product::Bin(name) => ["--bin".to_owned(), (*name).to_owned()],
            Product::Example(name) => ["--example".to_owned(), (*name).to_owned()],
        })
        .collect()
}

/// The release build of exactly `products`, in the normal target directory; nothing when none is needed.
fn build_release(products: &[Product]) -> Outcome<()> {
    if products.is_empty() {
        return Ok(());
    }
    let mut cmd = runner_cmd::command("cargo");
    cmd.args(["build", "--release", "--locked"]).args(target_args(products));
    let status = runner_cmd::status(&mut cmd).context(|| "cannot run cargo".into())?;
    if !status.success() {
        return fail(format!("the release build failed ({status}); the binaries under test did not build"));
    }
    Ok(())
}

fn check_binaries(release: &Path, products: &[Product]) -> Outcome<()> {
    for product in products {
        let path = release.join(product.path());
        if !path.is_file() {
            return fail(format!("{} is missing after the release build", path.display()));
        }
    }
    Ok(())
}

/// Makes every harness sandbox root live under `target/bench/sandboxes/` (local disk, as wants for the
/// state directory) instead of the system temp directory. Whatever is there is left from a killed run: the
/// bench lock is held, so nobody else uses it.
fn place_sandboxes(dir: &Path) -> Outcome<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    tempfile::env::override_temp_dir(dir)
        .map_err(|other| Failure(format!("the sandbox directory is already {}", other.display())))
}

/// The epilogue baked with profile `epilogue` for the bench root.
fn bake_for(root: &BenchRoot) -> Outcome<PathBuf> {
    println!("bench: baking the epilogue for {}", root.root.display());
    bake_echoed(root.paths.registry(), root.paths.state_dir(), agent_box_tests::bake::Profile::Epilogue)
        .map_err(|f| Failure(format!("bake failed: {f}")))
}

/// Prints the table and the summary line and writes `report.json`.
fn finish(
    bench: &Bench,
    facts: &Facts,
    reference: bool,
    metrics: &[Metric],
    failures: &[(Section, Failure)],
    elapsed: Duration,
) {
    println!();
    print!("{}", report::table(metrics, reference));
    let failed = metrics.iter().filter(|m| m.verdict(reference) == Verdict::Fail).count();
    let not_judged = metrics.iter().filter(|m| matches!(m.verdict(reference), Verdict::NotJudged { .. })).count();
    let path = bench.dir.join("report.json");
    let report = bench_report(bench, facts, reference, metrics, failures);
    match serde_json::to_vec_pretty(&report).map_err(std::io::Error::other).and_then(|b| fs::write(&path, b)) {
        Ok(()) => println!("bench: report written to {}", path.display()),
        Err(err) => eprintln!("bench: cannot write {}: {err}", path.display()),
    }
    println!(
        "bench: {} metrics, {failed} bars failed, {not_judged} not judged on this machine, {} sections could not run ({:.0}s)",
        metrics.len(),
        failures.len(),
        elapsed.as_secs_f64()
    );
}

fn bench_report(
    bench: &Bench,
    facts: &Facts,
    reference: bool,
    metrics: &[Metric],
    failures: &[(Section, Failure)],
) -> BenchReport {
    BenchReport {
        facts: facts.report(),
        reference_machine: reference,
        seed: bench.seed,
        crash_iterations: bench.crash_iterations,
        baseline: bench.baseline.as_ref().map(|b| format!("{} ({})", b.rev, b.sha)),
        failures: failures
            .iter()
            .map(|(s, f)| SectionFailure { section: s.name().to_owned(), message: f.0.clone() })
            .collect(),
        metrics: metrics.iter().map(|m| report::metric_report(m, reference)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::{Bar, Scope, Unit};

    #[test]
    fn filter_selects_in_spec_order_without_duplicates() {
        assert_eq!(selected(&[]), ALL.to_vec());
        assert_eq!(selected(&[Section::Crash, Section::Epilogue, Section::Crash]), [Section::Epilogue, Section::Crash]);
    }

    #[test]
    fn exit_codes() {
        let failing = vec![Metric::single("rmw", "lost", Unit::Count, 3.0).with_bar(Bar::exactly("Q6", 0.0))];
        let slow = vec![Metric::single("epilogue", "a", Unit::Millis, 9.0).with_bar(Bar::at_most(
            "Q1",
            2.0,
            Scope::ReferenceOnly,
        ))];
        assert_eq!(exit_code(&failing, &[], false, false), 0);
        assert_eq!(exit_code(&failing, &[], false, true), 100);
        // An absolute timing bar only counts on the reference machine.
        assert_eq!(exit_code(&slow, &[], false, true), 0);
        assert_eq!(exit_code(&slow, &[], true, true), 100);
        assert_eq!(exit_code(&[], &[(Section::Tick, Failure("x".into()))], true, true), 96);
    }
}
