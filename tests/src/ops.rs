//! What scenarios do to a sandbox: run the supervisor (loop or `--once`), edit the registry the way the CLI and
//! the settings daemon do (under the lock), and read what happened.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use base::SessionName;
use registry::{Document, RegistryLock};
use serde_json::Value;
use tmux::TmuxApi;

use crate::fixtures::{Assert, OutputAssertExt, stderr};
use crate::held::HeldLock;
use crate::sandbox::Sandbox;
use crate::wait::wait_until;

impl Sandbox {
    /// Starts `agent-box-supervisor` (the loop), stderr to `<root>/supervisor.log`; returns its pid.
    pub fn start_supervisor(&self) -> u32 {
        let log = fs::File::create(self.supervisor_log_path()).unwrap();
        let mut cmd = self.cmd("agent-box-supervisor");
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        self.spawn_tracked(cmd)
    }

    pub fn supervisor_log_path(&self) -> PathBuf {
        self.root().join("supervisor.log")
    }

    /// The loop's stderr so far.
    pub fn supervisor_log(&self) -> String {
        fs::read_to_string(self.supervisor_log_path()).unwrap_or_default()
    }

    /// Lines of the supervisor log containing `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.supervisor_log().lines().filter(|l| l.contains(needle)).count()
    }

    /// `agent-box-supervisor --once`, which must exit 0.
    pub fn once(&self) -> Assert {
        self.cmd("agent-box-supervisor").arg("--once").stdin(Stdio::null()).assert().code(0)
    }

    /// Runs `--once` `n` times and returns the concatenated stderr.
    pub fn ticks(&self, n: usize) -> String {
        (0..n).map(|_| stderr(&self.once())).collect()
    }

    /// Waits until the loop `pid` has run `n` more ticks (80 I10: counted through the tmux wrapper).
    pub fn wait_ticks(&self, pid: u32, n: usize) {
        let target = self.ticks_of(pid) + n;
        wait_until(&format!("{n} more ticks of {pid}"), || self.ticks_of(pid) >= target);
    }

    /// Runs `section` under the registry lock taken from this test process (the supervisor's policy: an inherited
    /// descriptor is ignored).
    pub fn with_registry_locked<R>(&self, section: impl FnOnce(&RegistryLock) -> R) -> R {
        registry::with_lock(&self.registry(), Duration::from_secs(10), registry::LockPolicy::SUPERVISOR, section)
            .unwrap_or_else(|err| panic!("cannot lock the sandbox registry: {err}"))
    }

    /// The registry's lock file (`sessions.json.lock`).
    pub fn registry_lock_file(&self) -> PathBuf {
        self.paths().lock_file()
    }

    /// Holds the registry lock from this test process (another description, as another writer would) until the
    /// value is dropped.
    pub fn hold_registry_lock(&self) -> HeldLock {
        HeldLock::acquire(&self.registry_lock_file(), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("cannot hold the sandbox registry lock: {e}"))
    }

    /// A locked read-modify-write of the registry, as every writer does.
    pub fn edit_registry(&self, f: impl FnOnce(&mut Document)) {
        self.with_registry_locked(|guard| {
            registry::edit(guard, |doc| {
                f(doc);
                Ok(((), true))
            })
        })
        .unwrap();
    }

    /// Adds an entry (raw JSON object) under the lock.
    pub fn add_entry(&self, name: &str, entry: Value) {
        let name = SessionName::parse(name).unwrap();
        self.edit_registry(|doc| doc.insert_new(&name, entry.as_object().cloned().unwrap()).unwrap());
    }

    /// `rm`'s order (50-session-cli §9): delist under the lock, kill, then delete the per-name files and settle
    /// the lease with an end record.
    pub fn rm(&self, name: &str) {
        let name = SessionName::parse(name).unwrap();
        self.edit_registry(|doc| {
            doc.remove(&name);
        });
        let _ = self.tmux().kill_session(&name);
        let paths = self.paths();
        for file in
            [paths.filter_file(&name), paths.codex_wake(&name), paths.side_file(&name), paths.launch_file(&name)]
        {
            let _ = fs::remove_file(file);
        }
        let leases = lease::LeaseDir::new(paths.lease_dir());
        let log = lease::HookLog::new(paths.hook_log());
        let _ = leases.finish(&name, &lease::EndHow::Rm, &lease::Expect::Any, Some(&log));
    }

    /// The real `agent-box-session stop NAME` (flag and lease outcome under the lock, then kill), which must
    /// exit 0.
    pub fn stop(&self, name: &str) {
        self.cmd("agent-box-session").args(["stop", name]).stdin(Stdio::null()).assert().code(0);
    }

    /// `restart NAME`'s order: clear `stopped` under the lock (never `died`), then kill.
    pub fn restart(&self, name: &str) {
        let name = SessionName::parse(name).unwrap();
        self.edit_registry(|doc| {
            if let Some(mut e) = doc.entry_mut(&name) {
                e.remove_key("stopped");
            }
        });
        let _ = self.tmux().kill_session(&name);
    }

    /// Kills a pane from outside (no epilogue runs).
    pub fn kill_pane(&self, name: &str) {
        self.tmux().kill_session(&SessionName::parse(name).unwrap()).unwrap();
    }

    pub fn is_live(&self, name: &str) -> bool {
        self.live().iter().any(|n| n == name)
    }

    pub fn wait_live(&self, name: &str) {
        wait_until(&format!("{name} to be live"), || self.is_live(name));
    }

    pub fn wait_gone(&self, name: &str) {
        wait_until(&format!("{name} to be gone"), || !self.is_live(name));
    }

    /// The raw value of `sessions.<name>` (None when absent).
    pub fn entry(&self, name: &str) -> Option<Value> {
        let bytes = fs::read(self.registry()).ok()?;
        let doc: Value = serde_json::from_slice(&bytes).ok()?;
        doc["sessions"].get(name).cloned()
    }

    pub fn side_file(&self, name: &str) -> PathBuf {
        self.paths().side_dir().join(format!("{name}.json"))
    }

    pub fn launch_file(&self, name: &str) -> PathBuf {
        self.paths().side_dir().join(format!("{name}.launch"))
    }

    pub fn lease_path(&self, name: &str) -> PathBuf {
        self.paths().lease_dir().join(format!("{name}.json"))
    }

    /// The lease document, if present and JSON.
    pub fn lease(&self, name: &str) -> Option<Value> {
        serde_json::from_slice(&fs::read(self.lease_path(name)).ok()?).ok()
    }

    /// Creates a lease for `name` like webhook-spawn does; returns its gen. When the entry already names a life
    /// whose lease was not handed to a pane yet (the side file records no lease of that gen), the lease's gen is
    /// that life, as webhook-spawn makes it; otherwise a fresh gen (a newer assignment), which the supervisor gives
    /// an entry without a life as its life when it first sees it.
    pub fn create_lease(&self, name: &str) -> String {
        let leases = lease::LeaseDir::new(self.paths().lease_dir());
        let side: Option<Value> = fs::read(self.side_file(name)).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let handed_out = |life: &str| side.as_ref().is_some_and(|s| s["leaseGen"].as_str() == Some(life));
        let life =
            self.entry(name).and_then(|e| e["life"].as_str().filter(|l| !handed_out(l)).and_then(lease::Gen::parse));
        let new_gen = life.unwrap_or_else(lease::Gen::random);
        let name = SessionName::parse(name).unwrap();
        leases.create_with_gen(&name, "github:acme/widgets", Some("7"), new_gen, None).unwrap().to_string()
    }

    /// The names of the lease files present, sorted.
    pub fn lease_names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.paths().lease_dir())
            .map(|entries| {
                entries.filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".json").map(str::to_owned)).collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The intake queue's records, oldest first (issue 24, docs/intake.md IN-1).
    pub fn queue_records(&self) -> Vec<Value> {
        let read_dir = |dir: PathBuf| -> Vec<PathBuf> {
            let mut paths: Vec<PathBuf> = fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| Some(e.ok()?.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "json"))
                        .collect()
                })
                .unwrap_or_default();
            paths.sort();
            paths
        };
        read_dir(self.paths().queue_dir())
            .iter()
            .filter_map(|p| serde_json::from_slice(&fs::read(p).ok()?).ok())
            .collect()
    }

    /// The ended (expired) records kept under `queue/ended/`, oldest first.
    pub fn ended_records(&self) -> Vec<Value> {
        let dir = self.paths().queue_dir().join("ended");
        let mut paths: Vec<PathBuf> =
            fs::read_dir(dir).map(|e| e.filter_map(|e| Some(e.ok()?.path())).collect()).unwrap_or_default();
        paths.sort();
        paths.iter().filter_map(|p| serde_json::from_slice(&fs::read(p).ok()?).ok()).collect()
    }

    /// Removes the queue's records (test set-up between cases).
    pub fn clear_queue(&self) {
        let _ = fs::remove_dir_all(self.paths().queue_dir());
    }

    /// The hook log's parsed lines.
    pub fn hook_log(&self) -> Vec<Value> {
        fs::read_to_string(self.paths().hook_log())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Writes the seed file the supervisor installs into a missing registry.
    pub fn write_seed(&self, text: &str) {
        fs::write(self.root().join("seed.json"), text).unwrap();
    }

    /// Runs a shell command line (test setup only; never product input).
    pub fn sh(&self, script: &str) -> Output {
        Command::new("/bin/sh").arg("-c").arg(script).env_clear().env("PATH", "/usr/bin:/bin").output().unwrap()
    }
}
