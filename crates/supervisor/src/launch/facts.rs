//! Launch facts (§12.2, SUP-11.2): the launch id, whether the session ran before, where it starts, and what
//! it resumes.

use std::path::{Path, PathBuf};

use base::new_uuid_v4;
use registry::Entry;

use super::{HarnessKind, claude, codex};
use crate::config::Config;
use crate::side::SideFile;

/// What §12.2 found out about one start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub bid: String,
    pub launched: bool,
    pub resuming: bool,
    pub rotated: bool,
    pub cwd: PathBuf,
    pub cwd_fallback: Option<String>,
    /// claude: the transcript of `bid`, when there is one.
    pub transcript: Option<PathBuf>,
    /// codex: the session id to resume.
    pub codex_target: Option<String>,
}

/// Gathers the facts for a harness of `kind`.
pub fn gather(config: &Config, entry: Entry<'_>, side: &SideFile, kind: HarnessKind) -> Facts {
    let launched = side.launch_session_id.is_some() || entry.has_run();
    let bid = launch_id(entry, side);
    let (cwd, cwd_fallback) = working_directory(config.paths.home(), entry);
    let mut facts = Facts {
        bid,
        launched,
        resuming: false,
        rotated: false,
        cwd,
        cwd_fallback,
        transcript: None,
        codex_target: None,
    };
    match kind {
        HarnessKind::Claude => claude_facts(config, &mut facts),
        HarnessKind::Codex => {
            facts.codex_target = if launched { codex::find_target(&config.codex_home, &facts.bid) } else { None };
            facts.resuming = facts.codex_target.is_some();
        }
        HarnessKind::Shell | HarnessKind::Generic => facts.resuming = launched,
    }
    facts
}

/// SUP-11.2: side file, else a UUID-shaped `boxSessionId`, else fresh.
fn launch_id(entry: Entry<'_>, side: &SideFile) -> String {
    side.launch_session_id.clone().or_else(|| entry.box_session_id().map(str::to_owned)).unwrap_or_else(new_uuid_v4)
}

/// The cwd, and the raw `workingDirectory` when it had to be replaced by `$HOME`.
fn working_directory(home: &Path, entry: Entry<'_>) -> (PathBuf, Option<String>) {
    match entry.working_directory() {
        None => (home.to_path_buf(), None),
        Some(dir) if Path::new(dir).is_absolute() && Path::new(dir).is_dir() => (PathBuf::from(dir), None),
        Some(dir) => (home.to_path_buf(), Some(dir.to_owned())),
    }
}

/// Items 2 and 3: a rotation to a newer live id wins; otherwise claude resumes whatever transcript `bid` has.
fn claude_facts(config: &Config, facts: &mut Facts) {
    let home = config.paths.home();
    if facts.launched
        && let Some(newer) = claude::live_id(&config.paths, &facts.bid)
        && let Some(transcript) = claude::transcript(home, &newer)
    {
        facts.bid = newer;
        facts.rotated = true;
        facts.transcript = Some(transcript);
    } else {
        facts.transcript = claude::transcript(home, &facts.bid);
    }
    facts.resuming = facts.transcript.is_some();
}
