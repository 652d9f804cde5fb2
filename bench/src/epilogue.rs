//! bench section `epilogue` (spec 90 §3, bars Q1 and Q2): wall time of the baked `agent-box-mark-stopped` for a
//! clean exit (a) with 20 and with 200 registry entries, on the local disk and, as (c), on tmpfs, and for a leased
//! hook crash (b); each sampled in rounds with `/bin/true` (the fixture restored before every run, outside the timed
//! region) and reported with the median and the spread of the per-round ratios. Also the size of the static and the
//! dev build, and with `--callgrind` the instruction counts of (a) at both sizes and of (b).
//!
//! Bars: Q1 (2 ms for (a), 20 entries, local disk; reference machine only) and, from issue 12, the per-round ratio to
//! `/bin/true` on tmpfs: at most 1.5 with 20 entries and at most 2 with 200, judged on every machine.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use agent_box_tests::Sandbox;
use agent_box_tests::bake::Profile;
use base::SessionName;
use lease::{HookLog, LeaseDir, SpawnRecord};
use registry::Document;
use serde_json::Value;

use super::baseline::Baseline;
use super::fail::{Context, Failure, Outcome, fail};
use super::report::{Bar, Metric, Scope, Unit};
use super::runner::{Paired, rounds, time_once};
use super::world::{
    BenchRoot, Kind, command_in, echo_product, numbered, output, print_sandbox_env, registry_bytes, sandbox_env,
};
use super::{Bench, facts};
use crate::bake::{self, bake_echoed};

const SECTION: &str = "epilogue";
const WARMUP: usize = 20;
const RUNS: usize = 500;
/// The registry sizes of case (a): the spec's fixture, and ten times it (a 97 KB file), where an edit whose cost
/// grows with the registry shows.
const SIZES: [usize; 2] = [20, 200];
/// Issue 12: the per-round ratio to `/bin/true` on tmpfs, by size.
const Q1_RATIO: [f64; 2] = [1.5, 2.0];
/// The non-hook entry of case (a).
const MAIN: &str = "main";
/// The leased hook entry of case (b).
const HOOK: &str = "hook-bench-a1b2";
/// The crash status of case (b).
const CRASH_STATUS: &str = "3";
/// Q1: 2 ms. Q2: 1.5 MiB.
const Q1_MS: f64 = 2.0;
const Q2_BYTES: f64 = 1_572_864.0;

/// The files an epilogue run changes, as they were before it, so every sample starts from the same state.
#[derive(Debug)]
struct Fixture {
    root: BenchRoot,
    registry: Vec<u8>,
    lease_path: PathBuf,
    lease: Vec<u8>,
    hook_log: Vec<u8>,
    gen_: String,
}

impl Fixture {
    /// a registry of `entries` (`main`, the hook entry and the rest), a lease for the hook entry and a hook
    /// log holding its spawn line, as webhook-spawn leaves them.
    fn create(root: &BenchRoot, entries: usize) -> Outcome<Self> {
        root.reset()?;
        let mut names = vec![(MAIN.to_owned(), Kind::Plain), (HOOK.to_owned(), Kind::Hook)];
        names.extend(numbered("session", entries.saturating_sub(2), Kind::Plain));
        let registry = registry_bytes(&names)?;
        fs::write(root.paths.registry(), &registry)
            .context(|| format!("writing {}", root.paths.registry().display()))?;
        let hook = SessionName::parse(HOOK).context(|| "hook name".into())?;
        let log = HookLog::new(root.paths.hook_log());
        let leases = LeaseDir::new(root.paths.lease_dir());
        // As webhook-spawn makes it (issue 17): the lease's gen is the hook entry's life.
        let doc = registry::Document::parse(&registry).ok().context(|| "parsing the fixture registry".into())?;
        let life =
            doc.entry(HOOK).and_then(|e| e.life()).and_then(lease::Gen::parse).unwrap_or_else(lease::Gen::random);
        let gen_ = leases
            .create_with_gen(&hook, "github:acme/widgets", Some("7"), life, Some(&log))
            .context(|| "creating the lease".into())?;
        let spawn = SpawnRecord {
            name: &hook,
            topic: "github:acme/widgets",
            event: "issues",
            object: Some("7"),
            count: None,
            intake: None,
            claim: None,
        };
        drop(log.append_spawn(&spawn));
        let lease_path = leases.lease_path(&hook);
        let read = |p: &Path| fs::read(p).context(|| format!("reading {}", p.display()));
        Ok(Self {
            lease: read(&lease_path)?,
            hook_log: read(&root.paths.hook_log())?,
            lease_path,
            registry,
            gen_: gen_.to_string(),
            root: root.clone(),
        })
    }

    /// Puts the registry, the lease and the hook log back (outside the timed region, Q-3.2).
    fn restore(&self) -> Outcome<()> {
        for (path, bytes) in [
            (self.root.paths.registry(), &self.registry),
            (&self.lease_path, &self.lease),
            (&self.root.paths.hook_log(), &self.hook_log),
        ] {
            fs::write(path, bytes).context(|| format!("restoring {}", path.display()))?;
        }
        Ok(())
    }

    fn entry(&self, name: &str) -> Outcome<serde_json::Map<String, Value>> {
        let bytes = fs::read(self.root.paths.registry()).context(|| "reading the registry".into())?;
        let doc = Document::parse(&bytes).map_err(|e| Failure(format!("the registry is not valid: {e}")))?;
        doc.entry(name).map(|e| e.raw().clone()).context(|| format!("entry {name} is gone"))
    }
}

/// One measured case: argv of the epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// (a) clean exit of a non-hook session.
    Clean,
    /// (b) crash of a leased hook session with a matching gen.
    HookCrash,
}

impl Case {
    fn args(self, fixture: &Fixture) -> Vec<String> {
        match self {
            Self::Clean => vec![MAIN.into(), "0".into()],
            // The pane's words as the supervisor renders them: GEN, then LIFE (the same for a hook session).
            Self::HookCrash => vec![HOOK.into(), CRASH_STATUS.into(), fixture.gen_.clone(), fixture.gen_.clone()],
        }
    }

    /// Checks that one run did the case's work; otherwise the samples would time an epilogue that wrote nothing.
    fn verify(self, fixture: &Fixture) -> Outcome<()> {
        match self {
            Self::Clean => {
                let entry = fixture.entry(MAIN)?;
                if entry.get("stopped") != Some(&Value::Bool(true)) {
                    return fail("agent-box-mark-stopped main 0 did not set stopped: true");
                }
            }
            Self::HookCrash => {
                let entry = fixture.entry(HOOK)?;
                if entry.get("died").and_then(Value::as_u64) != Some(3) {
                    return fail(format!("agent-box-mark-stopped {HOOK} 3 GEN did not set died: 3"));
                }
                let lease = fs::read_to_string(&fixture.lease_path).unwrap_or_default();
                let log = fs::read(fixture.root.paths.hook_log()).unwrap_or_default();
                if !lease.contains("\"died:3\"") || log.len() <= fixture.hook_log.len() {
                    return fail("the hook crash did not mark the lease died:3 and append its end record");
                }
            }
        }
        Ok(())
    }
}

/// The epilogue section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let baked = bench.baked()?.to_path_buf();
    // XT-1.5: products run in a sandbox (cleared environment, temporary HOME, private tmux), even this one,
    // which reads no environment at all. The section builds nothing but the bakes, so the sandbox names the bake.
    let sandbox = Sandbox::with_epilogue(baked.clone());
    let env = sandbox_env(&sandbox);
    print_sandbox_env(SECTION, &env);
    let home = sandbox.home().to_path_buf();
    sizes(bench, &baked, metrics)?;

    let fs_type = facts::fs_type(&bench.root.root);
    for (index, entries) in SIZES.into_iter().enumerate() {
        let fixture = Fixture::create(&bench.root, entries)?;
        let paired = measure(&fixture, &baked, Case::Clean, &env, &home)?;
        let bar = (index == 0).then(|| Bar::at_most("Q1", Q1_MS, Scope::ReferenceOnly));
        push_case(metrics, &format!("(a) mark-stopped main 0, {entries} entries, {fs_type}"), &paired, bar);
    }
    let fixture = Fixture::create(&bench.root, SIZES[0])?;
    let crash = measure(&fixture, &baked, Case::HookCrash, &env, &home)?;
    let name = format!("(b) leased hook crash, gen matches, {} entries, {fs_type}", SIZES[0]);
    push_case(metrics, &name, &crash, None);
    on_tmpfs(&env, &home, metrics)?;
    let fixture = Fixture::create(&bench.root, SIZES[0])?;
    if let Some(baseline) = &bench.baseline {
        against_baseline(&fixture, &baked, baseline, &env, &home, metrics)?;
    }
    if let Some(time) = &bench.tools.gnu_time {
        peak_rss(&fixture, time, &baked, &env, &home, metrics)?;
    }
    if bench.callgrind {
        callgrind(bench, &baked, &env, &home, metrics)?;
    }
    bench.root.reset()
}

/// Rounds of `case` and of `/bin/true` after one verified untimed run; the fixture is restored before every run.
fn measure(fixture: &Fixture, baked: &Path, case: Case, env: &[(OsString, OsString)], home: &Path) -> Outcome<Paired> {
    let mut cmd = command_in(env, home, baked);
    cmd.args(case.args(fixture));
    println!(
        "{SECTION}: {WARMUP} warm-up + {RUNS} rounds of this and /bin/true (order alternating), the fixture restored before every run:"
    );
    println!("{}", echo_product(&cmd));
    fixture.restore()?;
    time_once(&mut cmd)?;
    case.verify(fixture)?;
    let mut baseline = command_in(env, home, Path::new("/bin/true"));
    rounds(&mut cmd, &mut baseline, WARMUP, RUNS, || fixture.restore())
}

/// cases (a) and (b) of this build and of the baseline in the same rounds (the registry restored before each run),
/// and the two baked sizes (Q2).
fn against_baseline(
    fixture: &Fixture,
    baked: &Path,
    baseline: &Baseline,
    env: &[(OsString, OsString)],
    home: &Path,
    metrics: &mut Vec<Metric>,
) -> Outcome<()> {
    let old = baseline.baked()?;
    let label = baseline.label();
    let size = |p: &Path| fs::metadata(p).map(|m| m.len() as f64).context(|| format!("size of {}", p.display()));
    let (new_size, old_size) = (size(baked)?, size(old)?);
    metrics.push(
        Metric::single(SECTION, "size, profile epilogue, this build", Unit::Bytes, new_size).against_baseline(
            new_size / old_size,
            &label,
            false,
        ),
    );
    metrics.push(Metric::single(SECTION, format!("    size, profile epilogue, {label}"), Unit::Bytes, old_size));
    // (b) too (issue 18): the hook log's fsync is paid by a leased hook session's end, not by (a).
    for (case, what) in [(Case::Clean, "(a) mark-stopped main 0"), (Case::HookCrash, "(b) leased hook crash")] {
        let command = |binary: &Path| {
            let mut cmd = command_in(env, home, binary);
            cmd.args(case.args(fixture));
            cmd
        };
        let (mut new, mut before) = (command(baked), command(old));
        println!(
            "{SECTION}: {what} of this build and of the {label}, {WARMUP} warm-up + {RUNS} rounds (order alternating):"
        );
        println!("{}", echo_product(&before));
        fixture.restore()?;
        time_once(&mut before)?;
        case.verify(fixture)?;
        let paired = rounds(&mut new, &mut before, WARMUP, RUNS, || fixture.restore())?;
        metrics.push(
            Metric::sampled(SECTION, format!("{what}, this build"), Unit::Millis, paired.measured.clone())
                .against_baseline_rounds(paired.ratio(), &label),
        );
        metrics.push(Metric::sampled(
            SECTION,
            format!("    {what}, {label}, same rounds"),
            Unit::Millis,
            paired.baseline,
        ));
    }
    Ok(())
}

/// The case's samples with the median and spread of its per-round ratios to `/bin/true` (and `bar` on the samples),
/// then the `/bin/true` samples of the same rounds; `name` starts with the case's label, `(a)`, `(b)` or `(c)`.
fn push_case(metrics: &mut Vec<Metric>, name: &str, paired: &Paired, bar: Option<Bar>) {
    let label = name.split_whitespace().next().unwrap_or(name);
    let mut metric = Metric::sampled(SECTION, name, Unit::Millis, paired.measured.clone())
        .with_round_ratio(paired.ratio(), "/bin/true");
    if let Some(bar) = bar {
        metric = metric.with_bar(bar);
    }
    metrics.push(metric);
    metrics.push(Metric::sampled(
        SECTION,
        format!("    /bin/true, same rounds as {label}"),
        Unit::Millis,
        paired.baseline.clone(),
    ));
}

/// Q2: the baked static binary against 1.5 MiB, and the dev-profile dynamic build for comparison.
fn sizes(bench: &Bench, baked: &Path, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let size = |p: &Path| fs::metadata(p).map(|m| m.len() as f64).context(|| format!("size of {}", p.display()));
    let linkage = bake::linkage(baked).context(|| format!("reading {}", baked.display()))?;
    let static_size = size(baked)?;
    metrics.push(
        Metric::single(SECTION, format!("size, profile epilogue ({linkage}, stripped)"), Unit::Bytes, static_size)
            .with_bar(Bar::at_most("Q2", Q2_BYTES, Scope::Everywhere)),
    );
    let dev = bake_echoed(bench.root.paths.registry(), bench.root.paths.state_dir(), Profile::Dev)
        .map_err(|f| Failure(format!("dev bake failed: {f}")))?;
    let dev_linkage = bake::linkage(&dev).context(|| format!("reading {}", dev.display()))?;
    let dev_size = size(&dev)?;
    metrics.push(
        Metric::single(SECTION, format!("size, profile dev ({dev_linkage}, debug info)"), Unit::Bytes, dev_size)
            .with_ratio(static_size / dev_size, "epilogue/dev"),
    );
    Ok(())
}

/// Case (c): case (a) with the root on tmpfs, which takes the two fsyncs out of the figure, at both sizes;
/// the per-round ratios to `/bin/true` carry the bars of issue 12. Its own bake, for a fixed path under `/dev/shm`
/// so that the bake cache serves later runs.
fn on_tmpfs(env: &[(OsString, OsString)], home: &Path, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let shm = Path::new("/dev/shm");
    if facts::fs_type(shm) != "tmpfs" {
        println!("{SECTION}: (c) skipped: /dev/shm is not a tmpfs here");
        return Ok(());
    }
    let root = BenchRoot::at(&shm.join(format!("agent-box-bench-{}", nix::unistd::getuid())));
    let baked = bake_echoed(root.paths.registry(), root.paths.state_dir(), Profile::Epilogue)
        .map_err(|f| Failure(format!("bake for /dev/shm failed: {f}")))?;
    let result = SIZES.into_iter().zip(Q1_RATIO).try_for_each(|(entries, limit)| {
        let paired = Fixture::create(&root, entries).and_then(|f| measure(&f, &baked, Case::Clean, env, home))?;
        push_case(metrics, &format!("(c) = (a) on tmpfs, {entries} entries"), &paired, None);
        let name = format!("    (c) {entries} entries, per-round ratio to /bin/true");
        metrics.push(Metric::sampled(SECTION, name, Unit::Factor, paired.ratios()).with_bar(Bar::at_most(
            "Q1",
            limit,
            Scope::Everywhere,
        )));
        Ok(())
    });
    // The tmpfs root is memory: never leave it behind, whatever happened.
    let _ = fs::remove_dir_all(&root.root);
    result
}

/// Peak RSS of case (a) through GNU time, for reference.
fn peak_rss(
    fixture: &Fixture,
    time: &Path,
    baked: &Path,
    env: &[(OsString, OsString)],
    home: &Path,
    metrics: &mut Vec<Metric>,
) -> Outcome<()> {
    fixture.restore()?;
    let mut cmd = command_in(env, home, time);
    cmd.args(["-f", "%M"]).arg(baked).args(Case::Clean.args(fixture));
    let out = output(cmd.stderr(std::process::Stdio::piped())).context(|| "running GNU time".into())?;
    let text = String::from_utf8_lossy(&out.stderr);
    let kib: f64 =
        text.lines().last().and_then(|l| l.trim().parse().ok()).context(|| format!("GNU time printed {text:?}"))?;
    metrics.push(Metric::single(SECTION, "(a) peak RSS (GNU time)", Unit::KiB, kib));
    Ok(())
}

/// `Ir` of case (a) at both sizes and of case (b) under callgrind, when valgrind is installed; with
/// `--baseline`, also of the baseline's bake on the same fixtures, and the ratio this build / baseline.
fn callgrind(
    bench: &Bench,
    baked: &Path,
    env: &[(OsString, OsString)],
    home: &Path,
    metrics: &mut Vec<Metric>,
) -> Outcome<()> {
    let Some(valgrind) = &bench.tools.valgrind else {
        println!("{SECTION}: --callgrind needs valgrind (Debian: sudo apt-get install valgrind); skipped");
        return Ok(());
    };
    let old = bench.baseline.as_ref().and_then(|b| b.baked.as_deref().map(|path| (b.label(), path)));
    let runs = [(Case::Clean, SIZES[0], "a"), (Case::Clean, SIZES[1], "a"), (Case::HookCrash, SIZES[0], "b")];
    for (case, entries, label) in runs {
        let count = |binary: &Path, who: &str| -> Outcome<f64> {
            let fixture = Fixture::create(&bench.root, entries)?;
            let out_file = bench.dir.join(format!("callgrind.epilogue-{label}-{entries}-{who}.out"));
            let mut cmd = command_in(env, home, valgrind);
            cmd.arg("--tool=callgrind").arg(format!("--callgrind-out-file={}", out_file.display())).arg(binary);
            cmd.args(case.args(&fixture));
            let ir = callgrind_ir(&mut cmd, &out_file)?;
            case.verify(&fixture)?;
            Ok(ir)
        };
        let ir = count(baked, "new")?;
        let name = format!("({label}) {entries} entries, instructions (callgrind)");
        match &old {
            Some((old_label, old_baked)) => {
                let before = count(old_baked, "old")?;
                metrics.push(Metric::single(SECTION, name, Unit::Instr, ir).against_baseline(
                    ir / before,
                    old_label,
                    false,
                ));
                let old_name = format!("    ({label}) {entries} entries, instructions, {old_label}");
                metrics.push(Metric::single(SECTION, old_name, Unit::Instr, before));
            }
            None => metrics.push(Metric::single(SECTION, name, Unit::Instr, ir)),
        }
    }
    Ok(())
}

/// Runs a callgrind command (echoed) and reads the total `Ir` from its output file.
pub fn callgrind_ir(cmd: &mut Command, out_file: &Path) -> Outcome<f64> {
    let out = output(cmd).context(|| "running valgrind".into())?;
    if !out.status.success() {
        return fail(format!("valgrind exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = fs::read_to_string(out_file).context(|| format!("reading {}", out_file.display()))?;
    let _ = fs::remove_file(out_file);
    parse_ir(&text).context(|| format!("no summary line in {}", out_file.display()))
}

/// The `summary:` (or `totals:`) line of a callgrind output file.
fn parse_ir(text: &str) -> Option<f64> {
    let line = text.lines().find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrind_summary() {
        assert_eq!(parse_ir("events: Ir\nfn=main\n5 10\nsummary: 123456\n"), Some(123456.0));
        assert_eq!(parse_ir("totals: 77\n"), Some(77.0));
        assert_eq!(parse_ir("events: Ir\n"), None);
    }

    #[test]
    fn fixture_restores_every_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = BenchRoot::at(dir.path());
        let fixture = Fixture::create(&root, 200).unwrap();
        let doc = Document::parse(&fs::read(root.paths.registry()).unwrap()).unwrap();
        assert_eq!(doc.names().count(), 200);
        assert!(base::is_uuid(&fixture.gen_));
        fs::write(root.paths.registry(), b"changed").unwrap();
        fs::write(root.paths.hook_log(), b"changed").unwrap();
        fixture.restore().unwrap();
        assert_eq!(fs::read(root.paths.registry()).unwrap(), fixture.registry);
        assert_eq!(fs::read(root.paths.hook_log()).unwrap(), fixture.hook_log);
        assert!(Case::Clean.verify(&fixture).is_err(), "an untouched fixture must not pass as recorded");
    }
}
