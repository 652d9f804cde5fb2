//! The pane of a name as a verb's registry-lock section found it (issue 25, docs/lives.md L-16): the only pane the
//! verb may end after the section. The supervisor starts panes only under that lock, so a pane found there is the
//! one the verb decided about, and any pane of the name started after the section is another session.

use base::SessionName;
use view::{Context, KillResult, LivePanes};

/// What the section saw of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pane {
    /// This session, on this server; one started after the section is another.
    Live(tmux::SessionId),
    /// No pane: nothing to kill.
    None,
    /// tmux could not be asked: nothing is killed, and the verb says why.
    Unknown(String),
}

impl Pane {
    /// The pane of `name` in a listing taken in the section (`Err`: the "unavailable" reason).
    pub(crate) fn of(panes: &Result<LivePanes, String>, name: &SessionName) -> Self {
        match panes {
            Ok(panes) => panes.get(name.as_str()).map_or(Self::None, Self::Live),
            Err(reason) => Self::Unknown(reason.clone()),
        }
    }

    /// After the section: the kill of the pane found in it, by its identity.
    pub(crate) fn end(&self, ctx: &Context) -> KillResult {
        match self {
            Self::Live(id) => ctx.kill_pane(id),
            Self::None => KillResult::AlreadyGone,
            Self::Unknown(reason) => KillResult::Failed(reason.clone()),
        }
    }
}
