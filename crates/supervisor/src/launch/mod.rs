//! Harness launch (30-supervisor §12): resolve the harness, gather launch facts, choose the prompt, build the
//! harness argv and pane environment, and render the pane script. Everything here runs without the registry
//! lock; rendering is pure.
//!
//! Choices where the specification is silent:
//! - NUL checks cover `agent`, `extraArgs`, both prompts, `workingDirectory`, `remoteControlName` and `profile`
//!   whether or not this particular start uses them, so a broken entry fails the same way every time.
//! - A `workingDirectory` that is not a string reads as absent (SUP-12.0): `$HOME`, without `L16`.
//! - Fatal shapes are reported before the harness is resolved, so a broken entry is never "not installed".
//! - A transcript that cannot be read, or is longer than 1 MiB with no real reply in its first MiB, counts as
//!   holding a real reply (rule 3 does not apply); an unreadable one counts as an open turn (auto notice).
//! - codex: the first stamped rollout decides; when its name does not end in a UUID the start is fresh.

mod argv;
mod claude;
mod codex;
mod facts;
mod fields;
mod files;
mod prompt;
mod resolve;
pub(crate) mod script;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use base::SessionName;
use registry::Entry;

use crate::config::Config;
use crate::side::SideFile;

pub use argv::remote_control_name;
pub use base::quote::{is_bare_byte, quote};
pub use prompt::restart_notice;
pub use resolve::{kind_of, post_mortem_shell};
pub use script::command_line;

/// Which arm of §12.4 builds the argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarnessKind {
    Claude,
    Codex,
    Shell,
    Generic,
}

/// A resolved harness (§12.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Harness {
    pub agent: String,
    pub kind: HarnessKind,
    pub bin: PathBuf,
}

/// What `--print-command` calls the start: `first` (not launched), `resume`, or `respawn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnKind {
    First,
    Respawn,
    Resume,
}

/// Everything needed to start one session, gathered without the lock (SUP-6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub name: SessionName,
    pub harness: Harness,
    /// The launch id: side-file id, else a UUID-shaped `boxSessionId`, else fresh; a claude rotation replaces it.
    pub bid: String,
    /// SUP-11.2: the side file has a valid id, or the registry's `hasRun` is true.
    pub launched: bool,
    pub resuming: bool,
    /// claude adopted a newer live id (§12.2 item 3): the mirrors are rewritten.
    pub rotated: bool,
    pub spawn: SpawnKind,
    /// The pane's working directory.
    pub cwd: PathBuf,
    /// The raw `workingDirectory` when it was unusable and `$HOME` is used instead (L16).
    pub cwd_fallback: Option<String>,
    /// The harness argv of §12.4, program first.
    pub argv: Vec<OsString>,
    /// The `new-session -e` pairs of §12.7, in order.
    pub env: Vec<(String, String)>,
    /// codex with `remoteControl` on: the TUI starts instead (L17).
    pub codex_remote_control_ignored: bool,
    /// The prompt passed to the harness (§12.3); empty means none.
    pub prompt: String,
    /// The prompt is the restart notice.
    pub restart_notice: bool,
    /// codex, resuming: the rollout's session id passed after `--`.
    pub codex_target: Option<String>,
    /// `PM`, the post-mortem shell of the crash branch (§12.1), resolved here so rendering stays pure.
    pub post_mortem: PathBuf,
    /// The entry's life token (issue 17), the epilogue's LIFE argument; `None` only for an entry without one
    /// (`--print-command` of an entry the supervisor has not seen yet).
    pub life: Option<String>,
    /// The entry as it was prepared from: the locked pre-check starts nothing when the entry changed meanwhile.
    pub entry: serde_json::Map<String, serde_json::Value>,
}

/// Why an entry cannot be prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepareError {
    /// A fatal shape (SUP-12.0, D3): the text is `<problem>` of L14.
    Fatal(String),
    /// No executable for the harness (§12.1, L6): the agent name.
    NotInstalled(String),
}

/// The epilogue's third argument (SUP-8.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenArg {
    /// The lease's UUID-shaped gen.
    Gen(String),
    /// No lease: `-`.
    NoLease,
    /// A lease without a valid gen (old writer): no third argument, or `any` when a LIFE argument follows.
    Omitted,
}

/// SUP-8.2 / LS-6.2 with lives (issue 17): the epilogue's GEN argument and the `leaseGen` to record. A lease binds
/// the pane only when its gen is the entry's life (or the entry names none, as an old writer's): the lease of an
/// older life of the name (not yet swept) is not this pane's, which then starts as unleased (`-`).
pub fn gen_argument(lease: &lease::LeaseState, life: Option<&str>) -> (GenArg, Option<String>) {
    match lease {
        lease::LeaseState::Absent => (GenArg::NoLease, None),
        lease::LeaseState::Present(lease) => match lease.valid_gen() {
            Some(g) if life.is_none_or(|life| life == g.as_str()) => (GenArg::Gen(g.to_string()), Some(g.to_string())),
            Some(_) => (GenArg::NoLease, None),
            None => (GenArg::Omitted, None),
        },
        lease::LeaseState::Unreadable => (GenArg::Omitted, None),
    }
}

/// Gathers the launch facts and builds argv and environment for `name` (§12.1–§12.4, §12.7).
pub fn prepare(
    config: &Config,
    name: &SessionName,
    entry: Entry<'_>,
    side: &SideFile,
) -> Result<Prepared, PrepareError> {
    let fields = fields::read(entry)?;
    let harness = resolve::resolve(config, fields.agent)?;
    let facts = facts::gather(config, entry, side, harness.kind);
    let choice = prompt::choose(config, name, harness.kind, &facts, &fields);
    let inputs = argv::Inputs {
        name,
        entry,
        harness: &harness,
        facts: &facts,
        extra_args: &fields.extra_args,
        prompt: &choice.text,
    };
    let argv = argv::build(config, &inputs);
    let env = argv::pane_env(config, name, entry, &facts.bid);
    let spawn = spawn_kind(facts.launched, facts.resuming);
    Ok(Prepared {
        name: name.clone(),
        codex_remote_control_ignored: harness.kind == HarnessKind::Codex && entry.remote_control(),
        harness,
        bid: facts.bid,
        launched: facts.launched,
        resuming: facts.resuming,
        rotated: facts.rotated,
        spawn,
        cwd: facts.cwd,
        cwd_fallback: facts.cwd_fallback,
        argv,
        env,
        prompt: choice.text,
        restart_notice: choice.notice,
        codex_target: facts.codex_target,
        post_mortem: resolve::post_mortem_shell(config),
        life: entry.life().map(str::to_owned),
        entry: entry.raw().clone(),
    })
}

/// `first` for a session that never ran, even when claude finds a transcript to resume (SUP-15.2).
fn spawn_kind(launched: bool, resuming: bool) -> SpawnKind {
    match (launched, resuming) {
        (false, _) => SpawnKind::First,
        (true, true) => SpawnKind::Resume,
        (true, false) => SpawnKind::Respawn,
    }
}

impl SpawnKind {
    /// The word `--print-command` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Respawn => "respawn",
            Self::Resume => "resume",
        }
    }
}

/// The pane script SCRIPT of §12.5, without its trailing newline.
pub fn render_script(config: &Config, prepared: &Prepared, lease_gen: &GenArg) -> Vec<u8> {
    script::render(config, prepared, lease_gen)
}

/// The tmux command for a launch file: `/bin/sh <path>`, two argv words tmux executes directly.
pub fn tmux_command(launch_file: &Path) -> Vec<OsString> {
    vec![OsString::from("/bin/sh"), launch_file.as_os_str().to_owned()]
}
