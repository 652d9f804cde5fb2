//! The writers the crash section kills (spec 90 Q-7.1) and the untimed preparation that gives each one real work:
//! `rmw`, `agent-box-session add|stop|restart` on a small pool of names, the baked `agent-box-mark-stopped`, and
//! `agent-box-webhook-spawn` with a fixture batch, once admitted and once refused (so the refusal record and its
//! lock are exercised too).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_box_tests::Sandbox;
use base::SessionName;
use lease::{EndHow, Expect, HookLog, LeaseDir};
use rand::RngExt;
use rand::rngs::StdRng;
use registry::Document;
use serde_json::Value;

use super::super::fail::{Context, Outcome};
use super::super::world::{BenchRoot, Kind, command_in, entry, registry_bytes, sandbox_env};

/// Names the epilogue writer works on: plain entries and leased hook entries.
const PLAIN: [&str; 2] = ["main", "crash-plain"];
const HOOKS: [&str; 2] = ["hook-crash-0001", "hook-crash-0002"];
/// The small pool `agent-box-session add|stop|restart` work on.
const SESSION_POOL: [&str; 3] = ["crash-a", "crash-b", "crash-c"];
/// The key `rmw` increments.
pub const COUNTER: &str = "crash-counter";
/// Updates per `rmw` run: short enough to be killed at every stage, long enough to hold several commits.
const RMW_COUNT: &str = "4";
/// The fixture batch's routing key and META; webhook-spawn names its sessions `hook-acme-widgets-<4 hex>`.
const SPAWN_KEY: &str = "acme/widgets";
const SPAWN_META: &str = r#"{"number":"7"}"#;
const SPAWNED_PREFIX: &str = "hook-acme-widgets-";
/// One event line, as the receiver passes a batch on stdin.
const BATCH: &str = "[acme/widgets] issue #7 opened by alice: the crash bench's fixture event\n";
/// The registry holds at most a dozen pending entries: 64 admits every add and spawn, so only the refused
/// variant (limit 1) takes the refusal path.
const LIMIT: &str = "64";
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// One kind of writer of Q-7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Rmw,
    Add,
    Stop,
    Restart,
    Epilogue,
    Spawn,
    SpawnRefused,
}

/// Every writer, in report order; the kill loop picks among them uniformly.
pub const WRITERS: [Writer; 7] =
    [Writer::Rmw, Writer::Add, Writer::Stop, Writer::Restart, Writer::Epilogue, Writer::Spawn, Writer::SpawnRefused];

impl Writer {
    pub fn label(self) -> &'static str {
        match self {
            Self::Rmw => "rmw x 4",
            Self::Add => "session add",
            Self::Stop => "session stop",
            Self::Restart => "session restart",
            Self::Epilogue => "mark-stopped",
            Self::Spawn => "webhook-spawn",
            Self::SpawnRefused => "webhook-spawn refused (limit 1)",
        }
    }

    pub fn index(self) -> usize {
        WRITERS.iter().position(|w| *w == self).unwrap_or(0)
    }

    /// The exit code of a run that was not killed: 75 is the refusal the refused variant is set up for.
    pub fn expected_exit(self) -> i32 {
        if self == Self::SpawnRefused { 75 } else { 0 }
    }
}

/// What a run that finished must have left in the registry: a committed change is never lost (Q7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing checked here (rmw has its counter check; mark-stopped's result depends on lease and status).
    Unchecked,
    Listed(String),
    Stopped(String),
    NotStopped(String),
    /// A `hook-acme-widgets-*` entry exists (the preparation removed every earlier one).
    Spawned,
    /// No `hook-acme-widgets-*` entry: a refusal writes nothing to the registry (60 §8.5).
    NotSpawned,
}

impl Effect {
    pub fn holds(&self, doc: &Document) -> bool {
        let stopped = |name: &str| doc.entry(name).and_then(|e| e.get("stopped")) == Some(&Value::Bool(true));
        let spawned = || doc.names().any(|n| n.starts_with(SPAWNED_PREFIX));
        match self {
            Self::Unchecked => true,
            Self::Listed(name) => doc.entry(name).is_some(),
            Self::Stopped(name) => stopped(name),
            Self::NotStopped(name) => doc.entry(name).is_some() && !stopped(name),
            Self::Spawned => spawned(),
            Self::NotSpawned => !spawned(),
        }
    }
}

/// A writer ready to start.
#[derive(Debug)]
pub struct Planned {
    pub cmd: Command,
    pub effect: Effect,
}

/// The world the writers run against: the fixed bench root (the epilogue is baked for it) used as HOME of a
/// harness sandbox, so every product sees the same registry and state directory.
#[derive(Debug)]
pub struct World {
    pub sandbox: Sandbox,
    pub root: BenchRoot,
    pub env: Vec<(OsString, OsString)>,
    baked: PathBuf,
    rmw: PathBuf,
    batch: PathBuf,
    refuse_limit: PathBuf,
    /// Where the running writer's stderr goes, read back when it exits unexpectedly.
    pub stderr: PathBuf,
}

impl World {
    pub fn new(root: BenchRoot, baked: PathBuf, release: &Path) -> Outcome<Self> {
        root.reset()?;
        let mut names: Vec<(String, Kind)> = PLAIN.iter().map(|n| ((*n).to_owned(), Kind::Plain)).collect();
        names.extend(HOOKS.iter().map(|n| ((*n).to_owned(), Kind::Hook)));
        fs::write(root.paths.registry(), registry_bytes(&names)?).context(|| "writing the registry".into())?;
        // webhook-spawn writes its claim filter here and never creates the directory (60 §6.1).
        let webhook_dir = root.paths.webhook_state_dir();
        registry::ensure_private_dir(webhook_dir).context(|| format!("creating {}", webhook_dir.display()))?;
        let mut sandbox = Sandbox::new();
        sandbox.set_env("HOME", root.paths.home());
        sandbox.set_limit(LIMIT);
        let files = sandbox.root().to_path_buf();
        let (batch, refuse_limit) = (files.join("batch.txt"), files.join("session-limit-1"));
        fs::write(&batch, BATCH).context(|| "writing the fixture batch".into())?;
        fs::write(&refuse_limit, "1\n").context(|| "writing the refusing limit file".into())?;
        Ok(Self {
            env: sandbox_env(&sandbox),
            stderr: files.join("writer.stderr"),
            sandbox,
            root,
            baked,
            rmw: release.join("examples/rmw"),
            batch,
            refuse_limit,
        })
    }

    /// The writer's command, after the untimed preparation that makes its run change something.
    pub fn prepare(&self, writer: Writer, rng: &mut StdRng) -> Outcome<Planned> {
        let pick = |rng: &mut StdRng| SESSION_POOL[rng.random_range(0..SESSION_POOL.len())].to_owned();
        let (mut cmd, effect) = match writer {
            Writer::Rmw => (self.rmw_command(), Effect::Unchecked),
            Writer::Add => {
                let name = pick(rng);
                self.set_listed(&name, None)?;
                (self.session(&["add", &name, "--harness", "tool", "--", "--as", &name]), Effect::Listed(name))
            }
            Writer::Stop => {
                let name = pick(rng);
                self.set_listed(&name, Some(false))?;
                (self.session(&["stop", &name]), Effect::Stopped(name))
            }
            Writer::Restart => {
                let name = pick(rng);
                self.set_listed(&name, Some(true))?;
                (self.session(&["restart", &name]), Effect::NotStopped(name))
            }
            Writer::Epilogue => (self.epilogue_command(rng)?, Effect::Unchecked),
            Writer::Spawn => (self.spawn_command(None)?, Effect::Spawned),
            Writer::SpawnRefused => (self.spawn_command(Some(&self.refuse_limit))?, Effect::NotSpawned),
        };
        let stderr = fs::File::create(&self.stderr).context(|| format!("creating {}", self.stderr.display()))?;
        cmd.stderr(stderr);
        Ok(Planned { cmd, effect })
    }

    fn rmw_command(&self) -> Command {
        let mut cmd = command_in(&self.env, self.sandbox.home(), &self.rmw);
        cmd.arg(self.root.paths.registry()).args([COUNTER, RMW_COUNT]).stdout(Stdio::piped());
        cmd
    }

    /// `agent-box-session ARGS` from the release directory, with the sandbox environment.
    fn session(&self, args: &[&str]) -> Command {
        let mut cmd = self.sandbox.cmd("agent-box-session");
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null());
        cmd
    }

    /// `agent-box-webhook-spawn` fed the fixture batch, after the sessions earlier spawns made are removed (so
    /// the registry stays small and [`Effect::Spawned`] can only be this run's entry). `limit`: a limit file
    /// that refuses the spawn.
    fn spawn_command(&self, limit: Option<&Path>) -> Outcome<Command> {
        self.remove_spawned()?;
        let batch = fs::File::open(&self.batch).context(|| format!("opening {}", self.batch.display()))?;
        let mut cmd = self.sandbox.cmd("agent-box-webhook-spawn");
        cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", SPAWN_KEY).env("LOCAL_WEBHOOK_SPAWN_META", SPAWN_META);
        if let Some(limit) = limit {
            cmd.env("AGENT_BOX_SESSION_LIMIT_FILE", limit);
        }
        cmd.stdin(batch).stdout(Stdio::null());
        Ok(cmd)
    }

    /// `mark-stopped NAME STATUS [GEN]` on a pool name made ready for it: the entry neither stopped nor died (so
    /// the registry write happens), and for a hook name a fresh lease whose gen the pane would carry.
    fn epilogue_command(&self, rng: &mut StdRng) -> Outcome<Command> {
        let hook = rng.random_bool(0.5);
        let pool: &[&str] = if hook { &HOOKS } else { &PLAIN };
        let name = pool[rng.random_range(0..pool.len())];
        let status: u32 = if rng.random_bool(0.5) { 0 } else { rng.random_range(1..=255) };
        self.revive(name)?;
        let mut cmd = command_in(&self.env, self.sandbox.home(), &self.baked);
        cmd.args([name.to_owned(), status.to_string()]);
        if hook {
            let key = SessionName::parse(name).context(|| format!("pool name {name}"))?;
            let gen_ = self
                .leases()
                .create(&key, "github:acme/widgets", Some("7"), Some(&self.hook_log()))
                .context(|| format!("creating the lease of {name}"))?;
            cmd.arg(gen_.to_string());
        }
        Ok(cmd)
    }

    fn leases(&self) -> LeaseDir {
        LeaseDir::new(self.root.paths.lease_dir())
    }

    fn hook_log(&self) -> HookLog {
        HookLog::new(self.root.paths.hook_log())
    }

    /// Clears `stopped` and `died` of `name` under the lock, as `restart` and a later spawn do.
    fn revive(&self, name: &str) -> Outcome<()> {
        let key = SessionName::parse(name).context(|| format!("pool name {name}"))?;
        self.edit(|doc| Ok(doc.entry_mut(&key).is_some_and(|mut e| e.remove_key("stopped") | e.remove_key("died"))))
    }

    /// `stopped`: None makes `name` unlisted (for `add`); Some(flag) makes it listed with `stopped` = flag (for
    /// `stop` a running entry, for `restart` a stopped one), so each run has a change to commit.
    fn set_listed(&self, name: &str, stopped: Option<bool>) -> Outcome<()> {
        let key = SessionName::parse(name).context(|| format!("pool name {name}"))?;
        self.edit(|doc| {
            let Some(stopped) = stopped else { return Ok(doc.remove(&key)) };
            let mut changed = false;
            if doc.entry(name).is_none() {
                doc.insert_new(&key, entry(name, Kind::Plain))?;
                changed = true;
            }
            let Some(mut e) = doc.entry_mut(&key) else { return Ok(changed) };
            Ok(changed | if stopped { e.set("stopped", Value::Bool(true)) } else { e.remove_key("stopped") })
        })
    }

    /// Removes what earlier spawns left, as `agent-box-session rm` would: their entries, then their leases
    /// (with the hook-log end record) and claim filters, also those of a spawn killed before its insert.
    fn remove_spawned(&self) -> Outcome<()> {
        self.edit(|doc| {
            let names: Vec<SessionName> = doc
                .names()
                .filter(|n| n.starts_with(SPAWNED_PREFIX))
                .filter_map(|n| SessionName::parse(n).ok())
                .collect();
            Ok(names.iter().fold(false, |changed, n| doc.remove(n) | changed))
        })?;
        let log = self.hook_log();
        for suffix in files_named(&self.root.paths.lease_dir(), SPAWNED_PREFIX, ".json") {
            if let Ok(key) = SessionName::parse(&format!("{SPAWNED_PREFIX}{suffix}")) {
                drop(self.leases().finish(&key, &EndHow::Rm, &Expect::Any, Some(&log)));
            }
        }
        let filter_prefix = format!("filter.{}-{SPAWNED_PREFIX}", self.user());
        for suffix in files_named(self.root.paths.webhook_state_dir(), &filter_prefix, ".json") {
            let path = self.root.paths.webhook_state_dir().join(format!("{filter_prefix}{suffix}.json"));
            fs::remove_file(&path).context(|| format!("removing {}", path.display()))?;
        }
        Ok(())
    }

    /// `<user>` of the filter file names: the sandbox's `USER`.
    fn user(&self) -> String {
        self.env
            .iter()
            .find(|(k, _)| k == "USER")
            .map_or_else(|| "agent".to_owned(), |(_, v)| v.to_string_lossy().into())
    }

    /// A locked read-modify-write from this process; `f` says whether it changed anything.
    pub fn edit(&self, f: impl FnOnce(&mut Document) -> Result<bool, registry::RegistryError>) -> Outcome<()> {
        registry::with_lock(self.root.paths.registry(), LOCK_WAIT, registry::LockPolicy::SUPERVISOR, |guard| {
            registry::edit(guard, |doc| f(doc).map(|changed| ((), changed)))
        })
        .context(|| "locking the registry".into())?
        .context(|| "editing the registry".into())
    }
}

/// The middle parts X of the files `<prefix>X<suffix>` in `dir` (temps, which end otherwise, are not among them).
fn files_named(dir: &Path, prefix: &str, suffix: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_prefix(prefix)?.strip_suffix(suffix).map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn effects_read_the_registry() {
        let d = doc(r#"{"sessions":{"a":{"stopped":true},"b":{},"hook-acme-widgets-1a2b":{}}}"#);
        assert!(Effect::Listed("a".into()).holds(&d));
        assert!(!Effect::Listed("c".into()).holds(&d));
        assert!(Effect::Stopped("a".into()).holds(&d) && !Effect::Stopped("b".into()).holds(&d));
        assert!(Effect::NotStopped("b".into()).holds(&d) && !Effect::NotStopped("c".into()).holds(&d));
        assert!(Effect::Spawned.holds(&d) && !Effect::NotSpawned.holds(&d));
        assert!(Effect::NotSpawned.holds(&doc(r#"{"sessions":{}}"#)));
    }

    #[test]
    fn writers_know_their_place_and_exit_code() {
        for (i, w) in WRITERS.iter().enumerate() {
            assert_eq!(w.index(), i);
        }
        assert_eq!(Writer::SpawnRefused.expected_exit(), 75);
        assert_eq!(Writer::Add.expected_exit(), 0);
        assert_eq!(Writer::Rmw.label(), format!("rmw x {RMW_COUNT}"));
    }

    #[test]
    fn files_named_skips_temps_and_strangers() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["hook-acme-widgets-1a2b.json", "hook-acme-widgets-1a2b.json.tmp-abcd1234", "hook-x.json"] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(files_named(dir.path(), SPAWNED_PREFIX, ".json"), ["1a2b"]);
    }
}
