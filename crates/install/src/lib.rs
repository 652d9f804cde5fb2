//! Deployment without Nix (issue 11): what `cargo xtask install` writes for one user, as a library shared by the
//! xtask command (which builds and bakes first), the golden renderer (which pins every text file) and the
//! end-to-end test (which installs the debug build into a temporary HOME): one implementation of each file. The
//! epilogue bake ([`bake`]) and the run-time lookup of the checkout and cargo's target directory ([`workspace`])
//! live here too, so that xtask deploys without linking the test harness.
//!
//! Layout under the prefix (default `~/.local`):
//! - `bin/agent-box-supervisor`, `bin/agent-box-mark-stopped` (the epilogue baked for this user, at a stable path
//!   that every re-install replaces in place by rename, so panes started earlier keep working), and the wrappers
//!   `bin/agent-box-session` and `bin/agent-box-webhook-spawn` (they export the user's variables, as the NixOS
//!   module's wrappers do, then run the programs in `lib/agent-box/`);
//! - `lib/agent-box/agent-box-session`, `lib/agent-box/agent-box-webhook-spawn` and `lib/agent-box/installed-files`
//!   (the manifest `uninstall` reads);
//! - `share/man/man1/<program>.1`.
//!
//! Outside the prefix: the environment file `~/.config/agent-box/agent-box.env` and, unless `--no-unit`, the two
//! systemd user units of 75-upgrades UP-2.4 in `~/.config/systemd/user/`: `agent-box-tmux.service`, which owns the
//! tmux server and so every session, and `agent-box.service`, which runs only the supervisor
//! (`AGENT_BOX_TMUX_SERVER=external`), so that restarting it (an upgrade) ends no session. Nothing else: never the
//! registry, leases, logs or `agent-box.local.env`, the operator's own additions, which both units read after the
//! environment file.
//!
//! The environment is computed in one place ([`environment`]); each unit is a template of its own, both reading the
//! same environment file. Files are written 0600,
//! programs 0700, missing directories are created 0700 (existing ones are left as they are), each file by a
//! temp file and a rename in its own directory.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base::quote::{is_bare_byte, quote_arg};

pub mod bake;
pub mod workspace;

/// Who and where an install is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub user: String,
    pub home: PathBuf,
    pub prefix: PathBuf,
    /// The tmux program (absolute), for the wrappers, the tmux unit's `ExecStart` and `AGENT_BOX_TMUX_BIN`.
    pub tmux: PathBuf,
    /// `PATH` of the unit and so of every pane: `<prefix>/bin`, then the installing shell's usable entries.
    pub path: String,
    /// `AGENT_BOX_AGENTS`: the harnesses `agent-box-session add` accepts.
    pub agents: Vec<String>,
    pub default_agent: String,
    /// Write the systemd user units.
    pub unit: bool,
    /// Issue 24: the intake queue's bounds (`AGENT_BOX_QUEUE_MAX`, `AGENT_BOX_QUEUE_MAX_AGE`), when given; the
    /// programs' defaults otherwise. Both the unit and the wrappers carry them, as webhook-spawn enforces the count.
    pub queue: QueueBounds,
}

/// `--queue-max N` and `--queue-max-age SECS` of `cargo xtask install`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueBounds {
    pub max_records: Option<u64>,
    pub max_age_secs: Option<u64>,
}

/// Where each installed file lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub bin: PathBuf,
    pub lib: PathBuf,
    pub man: PathBuf,
    pub env_file: PathBuf,
    pub local_env_file: PathBuf,
    /// The supervisor's unit.
    pub unit_file: PathBuf,
    /// The tmux server's unit.
    pub tmux_unit_file: PathBuf,
    pub manifest: PathBuf,
}

/// The name of the supervisor's user unit.
pub const UNIT_NAME: &str = "agent-box.service";
/// The name of the tmux server's user unit (75-upgrades UP-2.4).
pub const TMUX_UNIT_NAME: &str = "agent-box-tmux.service";

impl Layout {
    pub fn new(prefix: &Path, home: &Path) -> Self {
        let config = home.join(".config/agent-box");
        Self {
            bin: prefix.join("bin"),
            lib: prefix.join("lib/agent-box"),
            man: prefix.join("share/man/man1"),
            env_file: config.join("agent-box.env"),
            local_env_file: config.join("agent-box.local.env"),
            unit_file: home.join(".config/systemd/user").join(UNIT_NAME),
            tmux_unit_file: home.join(".config/systemd/user").join(TMUX_UNIT_NAME),
            manifest: prefix.join("lib/agent-box/installed-files"),
        }
    }

    /// The stable path of the baked epilogue (`AGENT_BOX_MARK_STOPPED`).
    pub fn epilogue(&self) -> PathBuf {
        self.bin.join("agent-box-mark-stopped")
    }
}

/// Why an install or uninstall stopped.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A path or value that cannot be written into a unit, a wrapper or an environment file as it is.
    #[error("{0}")]
    Unsafe(String),
    #[error("{path}: {err}", path = .0.display(), err = .1)]
    Io(PathBuf, io::Error),
}

/// The characters a path may hold to be written bare into a shell script, an environment file and a unit alike:
/// the shell quoter's bare set without `%`, which systemd reads as a specifier.
pub fn is_plain_path(text: &str) -> bool {
    text.starts_with('/') && text.bytes().all(|b| is_bare_byte(b) && b != b'%')
}

/// Issue 21, `cargo xtask install --on-outcome PATH`: appends `AGENT_BOX_ON_OUTCOME=PATH` to the environment file
/// an install just wrote (the unit and a supervisor started by hand both read it; a re-install without the option
/// drops it). The path must be plain (no quoting in any file kind), absolute and an executable file.
pub fn add_on_outcome(env_file: &Path, program: &Path) -> Result<(), InstallError> {
    let text = program.to_string_lossy();
    let executable = fs::metadata(program).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if !is_plain_path(&text) || !executable {
        return Err(InstallError::Unsafe(format!(
            "--on-outcome {text}: not an absolute path to an executable file of the characters [A-Za-z0-9/._+,:@=-]"
        )));
    }
    let mut file =
        fs::OpenOptions::new().append(true).open(env_file).map_err(|e| InstallError::Io(env_file.into(), e))?;
    io::Write::write_all(&mut file, format!("AGENT_BOX_ON_OUTCOME={text}\n").as_bytes())
        .map_err(|e| InstallError::Io(env_file.into(), e))
}

impl Inputs {
    /// Refuses any path or word that would need quoting in one of the three file kinds.
    pub fn check(&self) -> Result<(), InstallError> {
        let paths = [("HOME", &self.home), ("--prefix", &self.prefix), ("tmux", &self.tmux)];
        for (what, path) in paths {
            let text = path.to_string_lossy();
            if !is_plain_path(&text) {
                return Err(InstallError::Unsafe(format!(
                    "{what} '{text}' must be an absolute path of letters, digits and _@+:,./- only (it is written into a unit, an environment file and shell scripts)"
                )));
            }
        }
        let words = self.agents.iter().chain([&self.default_agent, &self.user]);
        for word in words {
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
                return Err(InstallError::Unsafe(format!("'{word}' is not a plain harness or user name")));
            }
        }
        Ok(())
    }
}

/// The user's environment, computed once: `shared` is what the wrappers export (as the NixOS module's do), `unit`
/// what the environment file holds for the unit and a supervisor started by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub shared: Vec<(String, String)>,
    pub unit: Vec<(String, String)>,
}

/// The one place that decides every variable an install sets. `AGENT_BOX_SESSIONS_SEED` and
/// `AGENT_BOX_AGENT_BINS` are left unset on purpose: the installed supervisor defaults them (no seed, harnesses
/// from `PATH`), so a harness installed later needs no re-install.
pub fn environment(inputs: &Inputs) -> Environment {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let shared = vec![
        ("AGENT_BOX_AGENTS".to_owned(), inputs.agents.join(" ")),
        ("AGENT_BOX_DEFAULT_AGENT".to_owned(), inputs.default_agent.clone()),
        ("AGENT_BOX_TMUX_BIN".to_owned(), inputs.tmux.display().to_string()),
    ];
    let bounds =
        [("AGENT_BOX_QUEUE_MAX", inputs.queue.max_records), ("AGENT_BOX_QUEUE_MAX_AGE", inputs.queue.max_age_secs)];
    let shared: Vec<(String, String)> = shared
        .into_iter()
        .chain(bounds.into_iter().filter_map(|(key, value)| Some((key.to_owned(), value?.to_string()))))
        .collect();
    let mut unit = vec![
        ("HOME".to_owned(), inputs.home.display().to_string()),
        ("PATH".to_owned(), inputs.path.clone()),
        ("AGENT_BOX_MARK_STOPPED".to_owned(), layout.epilogue().display().to_string()),
    ];
    unit.extend(shared.iter().cloned());
    Environment { shared, unit }
}

/// `PATH` for the unit: `<prefix>/bin` first, then each entry of `inherited` that is an absolute plain path, once.
pub fn unit_path(prefix: &Path, inherited: &str) -> String {
    let mut entries: Vec<String> = vec![prefix.join("bin").display().to_string()];
    for entry in inherited.split(':') {
        if is_plain_path(entry) && !entries.iter().any(|e| e == entry) {
            entries.push(entry.to_owned());
        }
    }
    entries.join(":")
}

const UNIT_TEMPLATE: &str = include_str!("../templates/agent-box.service");
const TMUX_UNIT_TEMPLATE: &str = include_str!("../templates/agent-box-tmux.service");
const WRAPPER_TEMPLATE: &str = include_str!("../templates/wrapper.sh");
const ENV_TEMPLATE: &str = include_str!("../templates/agent-box.env");

/// The supervisor's user unit (the equivalent of the NixOS unit where a user unit can be).
pub fn unit_text(inputs: &Inputs) -> String {
    fill_unit(UNIT_TEMPLATE, inputs)
}

/// The tmux server's user unit (the equivalent of the NixOS unit `agent-box-tmux-<name>.service`).
pub fn tmux_unit_text(inputs: &Inputs) -> String {
    fill_unit(TMUX_UNIT_TEMPLATE, inputs)
}

fn fill_unit(template: &str, inputs: &Inputs) -> String {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    template
        .replace("@USER@", &inputs.user)
        .replace("@SUPERVISOR@", &layout.bin.join("agent-box-supervisor").display().to_string())
        .replace("@TMUX@", &inputs.tmux.display().to_string())
        .replace("@ENV_FILE@", &layout.env_file.display().to_string())
        .replace("@LOCAL_ENV_FILE@", &layout.local_env_file.display().to_string())
}

/// A wrapper that exports the shared environment (plus `extra`) and runs `program` from `lib/agent-box/`.
pub fn wrapper_text(inputs: &Inputs, program: &str, extra: &[(&str, &str)]) -> String {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let env = environment(inputs);
    let mut exports = String::new();
    let pairs = env.shared.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain(extra.iter().copied());
    for (key, value) in pairs {
        exports.push_str(&format!("export {key}={}\n", quote_arg(value)));
    }
    WRAPPER_TEMPLATE
        .replace("@PROGRAM@", program)
        .replace("@USER@", &inputs.user)
        .replace("@EXPORTS@\n", &exports)
        .replace("@TARGET@", &quote_arg(&layout.lib.join(program).display().to_string()))
}

/// The environment file (systemd `EnvironmentFile=` syntax, which `set -a; . FILE` also reads).
pub fn env_file_text(inputs: &Inputs) -> String {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let mut lines = String::new();
    for (key, value) in environment(inputs).unit {
        lines.push_str(&format!("{key}={}\n", quote_arg(&value)));
    }
    ENV_TEMPLATE
        .replace("@USER@", &inputs.user)
        .replace("@ENV_FILE@", &layout.env_file.display().to_string())
        .replace("@LOCAL_ENV_FILE@", &layout.local_env_file.display().to_string())
        .replace("@LINES@\n", &lines)
}

/// The content of one installed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A program copied from the build.
    Copy(PathBuf),
    Bytes(Vec<u8>),
}

/// One file to install, with its mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub path: PathBuf,
    pub mode: u32,
    pub content: Content,
}

/// What the build provides: the programs and the rendered manual pages (`name.1`, roff bytes).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub supervisor: PathBuf,
    pub session: PathBuf,
    pub webhook_spawn: PathBuf,
    /// Baked for this user's registry and state directory.
    pub epilogue: PathBuf,
    pub man_pages: Vec<(String, Vec<u8>)>,
}

/// Every file an install writes, in the order it writes them (programs before what names them).
pub fn plan(inputs: &Inputs, sources: &Sources) -> Vec<Planned> {
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let program =
        |path: PathBuf, from: &Path| Planned { path, mode: 0o700, content: Content::Copy(from.to_path_buf()) };
    let text =
        |path: PathBuf, mode: u32, text: String| Planned { path, mode, content: Content::Bytes(text.into_bytes()) };
    let mut files = vec![
        program(layout.epilogue(), &sources.epilogue),
        program(layout.bin.join("agent-box-supervisor"), &sources.supervisor),
        program(layout.lib.join("agent-box-session"), &sources.session),
        program(layout.lib.join("agent-box-webhook-spawn"), &sources.webhook_spawn),
        text(layout.bin.join("agent-box-session"), 0o700, wrapper_text(inputs, "agent-box-session", &[])),
        text(
            layout.bin.join("agent-box-webhook-spawn"),
            0o700,
            wrapper_text(inputs, "agent-box-webhook-spawn", &[("AGENT_BOX_HOOK_SESSION_ARGS", "[]")]),
        ),
        text(layout.env_file.clone(), 0o600, env_file_text(inputs)),
    ];
    for (name, bytes) in &sources.man_pages {
        files.push(Planned { path: layout.man.join(name), mode: 0o600, content: Content::Bytes(bytes.clone()) });
    }
    if inputs.unit {
        files.push(text(layout.tmux_unit_file.clone(), 0o600, tmux_unit_text(inputs)));
        files.push(text(layout.unit_file.clone(), 0o600, unit_text(inputs)));
    }
    files
}

/// Writes every planned file (replacing an earlier install in place), removes files an earlier install wrote that
/// this one does not, and records both in the manifest. Returns the paths written.
pub fn install(inputs: &Inputs, sources: &Sources) -> Result<Vec<PathBuf>, InstallError> {
    inputs.check()?;
    let layout = Layout::new(&inputs.prefix, &inputs.home);
    let previous = Manifest::read(&layout.manifest).map_err(|e| InstallError::Io(layout.manifest.clone(), e))?;
    let mut manifest = Manifest { dirs: previous.dirs.clone(), files: Vec::new() };
    let planned = plan(inputs, sources);
    for file in &planned {
        let dir = file.path.parent().unwrap_or(Path::new("/"));
        create_dirs(dir, &mut manifest.dirs).map_err(|e| InstallError::Io(dir.to_path_buf(), e))?;
        write_file(file).map_err(|e| InstallError::Io(file.path.clone(), e))?;
        manifest.files.push(file.path.clone());
    }
    for stale in previous.files.iter().filter(|f| !manifest.files.contains(f)) {
        let _ = fs::remove_file(stale);
    }
    let text = manifest.text();
    let record = Planned { path: layout.manifest.clone(), mode: 0o600, content: Content::Bytes(text.into_bytes()) };
    write_file(&record).map_err(|e| InstallError::Io(layout.manifest.clone(), e))?;
    Ok(planned.into_iter().map(|p| p.path).collect())
}

/// Removes exactly what the manifest under `prefix` lists (files, then the directories the installs created, when
/// empty), then the manifest. Never anything else: the registry, leases, logs and local environment stay.
pub fn uninstall(prefix: &Path) -> Result<Vec<PathBuf>, InstallError> {
    let path = prefix.join("lib/agent-box/installed-files");
    let text = fs::read_to_string(&path).map_err(|e| InstallError::Io(path.clone(), e))?;
    let manifest = Manifest::parse(&text);
    let mut removed = Vec::new();
    for file in &manifest.files {
        match fs::remove_file(file) {
            Ok(()) => removed.push(file.clone()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(InstallError::Io(file.clone(), err)),
        }
    }
    fs::remove_file(&path).map_err(|e| InstallError::Io(path.clone(), e))?;
    removed.push(path);
    let mut dirs = manifest.dirs;
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for dir in dirs {
        // Only when empty: something the operator put there since keeps its directory.
        if fs::remove_dir(&dir).is_ok() {
            removed.push(dir);
        }
    }
    Ok(removed)
}

/// `installed-files`: one `file <path>` or `dir <path>` per line (paths are plain, see [`is_plain_path`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Manifest {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

impl Manifest {
    /// The manifest of an earlier install; none is a first install, an unreadable one an error (never a first
    /// install, which would leave the earlier install's files behind unlisted).
    fn read(path: &Path) -> io::Result<Self> {
        match fs::read_to_string(path) {
            Ok(text) => Ok(Self::parse(&text)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Self::default()),
            Err(err) => Err(err),
        }
    }

    fn parse(text: &str) -> Self {
        let mut manifest = Self::default();
        for line in text.lines() {
            if let Some(dir) = line.strip_prefix("dir ") {
                manifest.dirs.push(PathBuf::from(dir));
            } else if let Some(file) = line.strip_prefix("file ") {
                manifest.files.push(PathBuf::from(file));
            }
        }
        manifest
    }

    fn text(&self) -> String {
        let mut text = String::from("# written by cargo xtask install; cargo xtask uninstall removes what it lists\n");
        for dir in &self.dirs {
            text.push_str(&format!("dir {}\n", dir.display()));
        }
        for file in &self.files {
            text.push_str(&format!("file {}\n", file.display()));
        }
        text
    }
}

/// Creates `dir` and its missing parents 0700, noting each one created.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, created)?;
    }
    registry::ensure_private_dir(dir)?;
    if !created.iter().any(|d| d == dir) {
        created.push(dir.to_path_buf());
    }
    Ok(())
}

/// A temp file beside the target, its mode set, synced, then renamed over the target: a running program or a pane
/// that calls the epilogue sees the old file or the new one, never a torn one.
fn write_file(file: &Planned) -> io::Result<()> {
    let dir = file.path.parent().unwrap_or(Path::new("/"));
    let name = file.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let bytes = match &file.content {
        Content::Copy(from) => fs::read(from)?,
        Content::Bytes(bytes) => bytes.clone(),
    };
    let written = (|| {
        fs::write(&temp, &bytes)?;
        fs::set_permissions(&temp, fs::Permissions::from_mode(file.mode))?;
        fs::File::open(&temp)?.sync_all()?;
        fs::rename(&temp, &file.path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Reads an environment file as systemd does for the values an install writes (`KEY=value`, `KEY='value'`).
pub fn read_env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(v);
            (k.trim().to_owned(), v.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            user: "agent".into(),
            home: "/home/agent".into(),
            prefix: "/home/agent/.local".into(),
            tmux: "/usr/bin/tmux".into(),
            path: unit_path(Path::new("/home/agent/.local"), "/usr/bin:relative:/bin:/usr/bin:/opt/x y"),
            agents: vec!["claude".into(), "codex".into(), "shell".into()],
            default_agent: "claude".into(),
            unit: true,
            queue: QueueBounds::default(),
        }
    }

    #[test]
    fn the_unit_path_starts_with_the_prefix_and_keeps_plain_absolute_entries_once() {
        assert_eq!(inputs().path, "/home/agent/.local/bin:/usr/bin:/bin");
    }

    /// N-1 at install time: `--on-outcome` appends one line naming an executable by a plain absolute path, and
    /// refuses anything else without touching the environment file.
    #[test]
    fn on_outcome_appends_a_plain_executable_and_refuses_the_rest_unchanged() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let env_file = dir.join("agent-box.env");
        fs::write(&env_file, "AGENT_BOX_TMUX_BIN=/usr/bin/tmux\n").unwrap();
        let program = dir.join("notify");
        fs::write(&program, "#!/bin/sh\n").unwrap();
        let not_executable = dir.join("plain");
        fs::write(&not_executable, "").unwrap();
        fs::set_permissions(&program, fs::Permissions::from_mode(0o700)).unwrap();
        for bad in [Path::new("notify"), not_executable.as_path(), dir.join("missing").as_path(), Path::new("/tmp/a b")]
        {
            assert!(matches!(add_on_outcome(&env_file, bad), Err(InstallError::Unsafe(_))), "{}", bad.display());
        }
        assert_eq!(fs::read_to_string(&env_file).unwrap(), "AGENT_BOX_TMUX_BIN=/usr/bin/tmux\n");
        add_on_outcome(&env_file, &program).unwrap();
        let want = format!("AGENT_BOX_TMUX_BIN=/usr/bin/tmux\nAGENT_BOX_ON_OUTCOME={}\n", program.display());
        assert_eq!(fs::read_to_string(&env_file).unwrap(), want);
    }

    /// Issue 24: `--queue-max` and `--queue-max-age` reach the unit's environment file and the wrappers (webhook-spawn
    /// enforces the count at accept); without them neither carries a bound, and the programs use their defaults.
    #[test]
    fn queue_bounds_reach_the_unit_and_the_wrappers_only_when_given() {
        let plain = inputs();
        assert!(!env_file_text(&plain).contains("AGENT_BOX_QUEUE"));
        let bounded = Inputs { queue: QueueBounds { max_records: Some(50), max_age_secs: Some(3600) }, ..inputs() };
        let env = env_file_text(&bounded);
        assert!(env.contains("AGENT_BOX_QUEUE_MAX=50\n") && env.contains("AGENT_BOX_QUEUE_MAX_AGE=3600\n"), "{env}");
        let shared = environment(&bounded).shared;
        assert!(shared.contains(&("AGENT_BOX_QUEUE_MAX".to_owned(), "50".to_owned())), "{shared:?}");
    }

    #[test]
    fn unsafe_paths_are_refused() {
        let mut bad = inputs();
        bad.home = "/home/a b".into();
        assert!(matches!(bad.check(), Err(InstallError::Unsafe(_))));
        bad.home = "/home/100%".into();
        assert!(bad.check().is_err());
        assert!(inputs().check().is_ok());
    }

    #[test]
    fn the_environment_file_reads_back_as_the_environment() {
        let text = env_file_text(&inputs());
        let read = read_env_file(&text);
        assert_eq!(read, environment(&inputs()).unit);
        assert!(!text.contains("AGENT_BOX_SESSIONS_SEED=") && !text.contains("AGENT_BOX_AGENT_BINS="));
    }

    /// W-5: a manifest that exists and cannot be read stops the install before it writes anything; taken for none,
    /// it would leave the earlier install's files behind, unlisted.
    #[test]
    fn an_unreadable_manifest_is_an_error_not_a_first_install() {
        let dir = tempfile::tempdir().unwrap();
        let mut unreadable = inputs();
        unreadable.home = dir.path().join("home");
        unreadable.prefix = dir.path().join("prefix");
        let layout = Layout::new(&unreadable.prefix, &unreadable.home);
        fs::create_dir_all(&layout.manifest).unwrap();
        let err = install(&unreadable, &Sources::default()).unwrap_err();
        assert!(matches!(&err, InstallError::Io(path, _) if *path == layout.manifest), "{err}");
        assert!(!layout.bin.exists(), "nothing was written");
    }

    #[test]
    fn templates_leave_no_placeholder() {
        let texts = [
            unit_text(&inputs()),
            tmux_unit_text(&inputs()),
            env_file_text(&inputs()),
            wrapper_text(&inputs(), "agent-box-session", &[]),
        ];
        for text in texts {
            let placeholder = text.as_bytes().windows(2).any(|w| w[0] == b'@' && w[1].is_ascii_uppercase());
            assert!(!placeholder, "{text}");
        }
    }
}

/// What `systemd-analyze --user verify` said of the installed units.
#[derive(Debug)]
pub enum Verified {
    /// Nothing to say about them.
    Clean,
    /// Its complaints, as printed.
    Complaints(String),
    /// The tool is not there or could not run.
    NotRun(String),
}

/// `systemd-analyze --user verify` of `units` as a clean box runs it (issue 18 item 4): the units name their
/// manual page (`Documentation=man:agent-box-supervisor(1)`), which the install puts under `<prefix>/share/man`,
/// outside man's default search path, so the verifier is given that directory through `MANPATH` (the trailing `:`
/// keeps the system's pages too). `runtime` is the user manager's runtime directory the verifier may use; with
/// `None` the caller's `XDG_RUNTIME_DIR` stands.
pub fn verify_units(tool: &Path, units: &[&Path], prefix: &Path, runtime: Option<&Path>) -> Verified {
    let mut cmd = std::process::Command::new(tool);
    cmd.args(["--user", "verify"]).args(units);
    let mut manpath = prefix.join("share/man").into_os_string();
    manpath.push(":");
    cmd.env("MANPATH", manpath);
    if let Some(runtime) = runtime {
        cmd.env("XDG_RUNTIME_DIR", runtime);
    }
    match cmd.output() {
        Ok(out) => {
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            if out.status.success() && said.trim().is_empty() {
                Verified::Clean
            } else {
                Verified::Complaints(said.trim_end().to_owned())
            }
        }
        Err(err) => Verified::NotRun(err.to_string()),
    }
}
