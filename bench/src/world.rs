//! The worlds bench measures in: the fixed bench root the epilogue is baked for, registry fixtures written the way
//! the registry crate writes them, product commands with a sandbox's environment, and deadline waits that fail a
//! section instead of panicking.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use agent_box_tests::Sandbox;
use agent_box_tests::fleet::Fleet;
use base::SessionName;
use registry::{Document, NewEntry, Paths};

use super::fail::{Context, Failure, Outcome, fail};
use crate::run;

/// A root laid out like a box user's home (`<root>/home/agent/...`, by `registry::Paths`, the layout the products
/// use), at a fixed path: the bake cache is keyed by the baked paths (XT-5.4), so every run after the first reuses
/// the epilogue baked for it instead of building one.
#[derive(Debug, Clone)]
pub struct BenchRoot {
    pub root: PathBuf,
    pub paths: Paths,
}

impl BenchRoot {
    pub fn at(root: &Path) -> Self {
        Self { root: root.to_path_buf(), paths: Paths::for_root(&root.join("home/agent"), "agent") }
    }

    /// Empties the root and creates HOME, the registry directory and the state directory (0700, as the products
    /// create them).
    pub fn reset(&self) -> Outcome<()> {
        if self.root.exists() {
            fs::remove_dir_all(&self.root).context(|| format!("removing {}", self.root.display()))?;
        }
        for dir in [self.paths.home(), &parent(self.paths.registry()), self.paths.state_dir()] {
            registry::ensure_private_dir(dir).context(|| format!("creating {}", dir.display()))?;
        }
        Ok(())
    }
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The environment a sandbox gives its products (80 I3).
pub fn sandbox_env(sandbox: &Sandbox) -> Vec<(OsString, OsString)> {
    sandbox.env_pairs().map(|(k, v)| (OsString::from(k), v.clone())).collect()
}

/// `program` with exactly the sandbox environment, run in the sandbox HOME, output discarded: for programs the
/// harness's `cmd` cannot name (a baked epilogue, an example, `/bin/true` as the baseline).
pub fn command_in(env: &[(OsString, OsString)], home: &Path, program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// The echo line of a command run with a sandbox's environment: `$ <program> <args>`, shell-quoted. The
/// environment (cleared, then the sandbox's) is the same for every product of a section, so
/// [`print_sandbox_env`] shows it once instead of on every line.
pub fn echo_product(cmd: &Command) -> String {
    let words = std::iter::once(cmd.get_program()).chain(cmd.get_args());
    let quoted: Vec<String> = words.map(|w| run::shell_quote(&w.to_string_lossy())).collect();
    format!("$ {}", quoted.join(" "))
}

/// Prints the sandbox environment the section's `$` lines run with (`env -i` plus these variables).
pub fn print_sandbox_env(section: &str, env: &[(OsString, OsString)]) {
    let pairs: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), run::shell_quote(&v.to_string_lossy())))
        .collect();
    println!("{section}: product commands below run as: env -i {} <command>", pairs.join(" "));
}

/// Echoes a product command (see [`echo_product`]) and runs it, capturing its output.
pub fn output(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    println!("{}", echo_product(cmd));
    cmd.output()
}

/// What kind of entry a fixture holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An entry `add` would write.
    Plain,
    /// An ephemeral `hook-*` entry as webhook-spawn writes it.
    Hook,
}

/// An entry for fake agent `name` (tool harness, `--as NAME` so it names itself without asking tmux).
pub fn entry(name: &str, kind: Kind) -> serde_json::Map<String, serde_json::Value> {
    let args = ["--as".to_owned(), name.to_owned()];
    let id = base::new_uuid_v4();
    let hook = kind == Kind::Hook;
    let life = base::new_uuid_v4();
    let origin = if hook { "webhook" } else { "user" };
    let entry = NewEntry {
        extra_args: &args,
        ephemeral: hook,
        ..NewEntry::new("tool", &id, origin, base::time::now_epoch(), &life)
    };
    registry::new_entry(&entry.with_hook(hook.then_some(("github", "acme/widgets"))))
}

/// The registry bytes, pretty-printed by the registry crate, holding `names` in order.
pub fn registry_bytes(names: &[(String, Kind)]) -> Outcome<Vec<u8>> {
    let mut doc = Document::empty();
    for (name, kind) in names {
        let key = SessionName::parse(name).context(|| format!("fixture name {name}"))?;
        doc.insert_new(&key, entry(name, *kind)).context(|| format!("fixture entry {name}"))?;
    }
    Ok(doc.to_bytes())
}

/// Names `<prefix>-000`, `<prefix>-001`, … of one kind.
pub fn numbered(prefix: &str, count: usize, kind: Kind) -> Vec<(String, Kind)> {
    (0..count).map(|i| (format!("{prefix}-{i:03}"), kind)).collect()
}

/// A supervisor loop running in a sandbox over `entries` fake agents, all live: the harness's
/// [`Fleet`], with the bench's echo lines.
#[derive(Debug)]
pub struct LoopWorld {
    pub fleet: Fleet,
}

impl LoopWorld {
    /// Limit `limit`; `entries` fake agents in run mode, `hooks` of them `hook-*` with open leases; the counting
    /// tmux wrapper; the loop started and waited for until every agent runs and a whole tick passed without a
    /// `new-session`.
    pub fn start(section: &str, entries: usize, hooks: usize, limit: &str) -> Outcome<Self> {
        let mut sandbox = Sandbox::new();
        Fleet::prepare(&mut sandbox, limit);
        let mut names = numbered("idle", entries - hooks, Kind::Plain);
        names.extend(numbered("hook-idle", hooks, Kind::Hook));
        let text = String::from_utf8(registry_bytes(&names)?).context(|| "fixture is not UTF-8".into())?;
        print_sandbox_env(section, &sandbox_env(&sandbox));
        println!("{section}: the loop over {entries} entries ({hooks} leased hook entries), stderr to supervisor.log:");
        println!("{}", echo_product(&sandbox.cmd("agent-box-supervisor")));
        let hooks: Vec<String> = names.iter().filter(|(_, kind)| *kind == Kind::Hook).map(|(n, _)| n.clone()).collect();
        let names = names.into_iter().map(|(n, _)| n).collect();
        Ok(Self { fleet: Fleet::start(sandbox, &text, names, &hooks) })
    }

    /// Ends the running loop (SIGTERM: the sessions stay, 75-upgrades) and starts the one of `bin_dir` over the
    /// same live panes; returns once it has run a whole tick without a `new-session` (it adopted every pane).
    pub fn switch_to(&mut self, bin_dir: &Path) -> Outcome<()> {
        self.fleet.stop_supervisor();
        self.fleet.sandbox.set_bin_dir(bin_dir.to_path_buf());
        println!("{}", echo_product(&self.fleet.sandbox.cmd("agent-box-supervisor")));
        self.fleet.restart_supervisor();
        self.fleet.wait_quiet_tick();
        Ok(())
    }

    /// Adds the supervisor's last log lines to a failure: that is usually where its cause is.
    pub fn explain(&self, err: Failure) -> Failure {
        Failure(format!("{err}; {}", self.fleet.log_tail()))
    }

    /// Ticks the loop has run (80 I10: its wrapper lines of a tick's first call).
    pub fn ticks(&self) -> usize {
        self.fleet.ticks()
    }

    /// Waits until the loop has run `target` ticks (a timeout or an interrupt fails the section).
    pub fn wait_ticks(&self, target: usize) -> Outcome<()> {
        self.fleet.wait_ticks(target);
        Ok(())
    }
}

/// Polls `done` every `every` until it holds or `limit` passes; a timeout fails the section naming `what`.
pub fn wait_for(what: &str, limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> Outcome<()> {
    let start = Instant::now();
    while !done() {
        super::interrupt::check()?;
        if start.elapsed() > limit {
            return fail(format!("timed out after {}s waiting for {what}", limit.as_secs()));
        }
        std::thread::sleep(every);
    }
    Ok(())
}

/// Inode and modification time: a replaced or rewritten file shows in one of them.
pub fn identity(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = fs::metadata(path).ok()?;
    Some((meta.ino(), meta.modified().ok()?))
}

/// Modification times of the regular files in `dir` whose names satisfy `keep`, sorted by name.
pub fn mtimes(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<(String, Option<(u64, SystemTime)>)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(String, Option<(u64, SystemTime)>)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok().map(|n| (n, e.path())))
        .filter(|(n, _)| keep(n))
        .map(|(n, p)| (n, identity(&p)))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_is_valid_and_ordered() {
        let mut names = vec![("main".to_owned(), Kind::Plain)];
        names.extend(numbered("s", 2, Kind::Plain));
        names.push(("hook-bench-a1b2".to_owned(), Kind::Hook));
        let doc = Document::parse(&registry_bytes(&names).unwrap()).unwrap();
        assert_eq!(doc.names().collect::<Vec<_>>(), ["main", "s-000", "s-001", "hook-bench-a1b2"]);
        let hook = doc.entry("hook-bench-a1b2").unwrap();
        assert!(hook.ephemeral());
        assert_eq!(hook.extra_args().unwrap(), ["--as", "hook-bench-a1b2"]);
        assert!(!doc.entry("main").unwrap().ephemeral());
    }

    #[test]
    fn bench_root_layout_matches_the_default_paths() {
        let r = BenchRoot::at(Path::new("/x/root"));
        assert_eq!(r.paths.registry(), Path::new("/x/root/home/agent/.config/agent-box/sessions.json"));
        assert_eq!(r.paths.state_dir(), Path::new("/x/root/home/agent/.local/state/agent-box"));
        assert_eq!(r.paths.hook_log(), Path::new("/x/root/home/agent/.local/state/agent-box/hook-sessions.jsonl"));
    }

    #[test]
    fn wait_for_times_out_with_the_description() {
        let err = wait_for("nothing", Duration::ZERO, Duration::from_millis(1), || false).unwrap_err();
        assert_eq!(err.0, "timed out after 0s waiting for nothing");
    }
}
