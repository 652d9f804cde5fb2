//! `attach NAME` (issue 11): put the operator's terminal on a live session of the box's own server, on the socket
//! every program resolves the same way (crate `tmux`), so no `TMUX_TMPDIR` or `-L` has to be typed. The checks
//! are here; `main` replaces the process with tmux, the only step that cannot return a value.

use base::SessionName;
use view::Context;

use crate::error::SessionError;
use crate::locked::checked_name;
use crate::messages;

/// What `main` hands to tmux: the exact session, and whether the caller is already a client of this server
/// (`$TMUX` names our socket file), in which case tmux switches that client instead of nesting a second one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: SessionName,
    pub switch: bool,
}

/// The charset check (M1), then "is it live" (M49, exit 2, when it is not; M34 when tmux cannot be asked).
pub fn target(ctx: &Context, raw: &str) -> Result<Target, SessionError> {
    let name = checked_name(raw)?;
    match ctx.tmux.has_session(&name) {
        Ok(true) => {}
        Ok(false) => return Err(SessionError::Usage(messages::not_live(raw))),
        Err(err) => return Err(SessionError::LiveUnknown(err.reason())),
    }
    let switch = ctx.tmux_env.as_deref().is_some_and(|tmux| {
        view::read::same_file(std::path::Path::new(view::peers::tmux_socket(tmux)), &ctx.tmux.socket_path())
    });
    Ok(Target { name, switch })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::context;
    use agent_box_tests::fake_tmux::FakeTmux;

    #[test]
    fn a_live_session_is_a_target_and_anything_else_says_what_to_do() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["main"]), &[]);
        let target = target(&ctx, "main").unwrap();
        assert_eq!((target.name.as_str(), target.switch), ("main", false));
        let err = super::target(&ctx, "nosuch").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("no live session 'nosuch' to attach to"), "{err}");
        assert_eq!(super::target(&ctx, "a b").unwrap_err().exit_code(), 2);
    }
}
