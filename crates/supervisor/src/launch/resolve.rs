//! Harness binary resolution and the post-mortem shell (§12.1).

use std::path::{Path, PathBuf};

use base::name::is_name_byte;

use super::{Harness, HarnessKind, PrepareError};
use crate::config::{Config, is_executable_file};

/// The last resort for the post-mortem shell: always present on a POSIX system.
const FALLBACK_SHELL: &str = "/bin/sh";

/// Which arm of §12.4 an agent name selects.
pub fn kind_of(agent: &str) -> HarnessKind {
    match agent {
        "claude" => HarnessKind::Claude,
        "codex" => HarnessKind::Codex,
        "shell" => HarnessKind::Shell,
        _ => HarnessKind::Generic,
    }
}

/// The configured pair if usable, else the user's Nix profile, else (installed mode only) `PATH`, else "not
/// installed". The `shell` harness falls back to the post-mortem shell's choice (`$SHELL`, else `/bin/sh`) in
/// installed mode, since no program is called `shell`.
pub fn resolve(config: &Config, agent: &str) -> Result<Harness, PrepareError> {
    let bin = configured(config, agent)
        .or_else(|| nix_profile(config.paths.home(), agent))
        .or_else(|| on_path(config, agent))
        .ok_or_else(|| PrepareError::NotInstalled(agent.to_owned()))?;
    Ok(Harness { agent: agent.to_owned(), kind: kind_of(agent), bin })
}

fn configured(config: &Config, agent: &str) -> Option<PathBuf> {
    config.agent_bin(agent).filter(|p| p.is_absolute() && is_executable_file(p)).map(Path::to_path_buf)
}

fn nix_profile(home: &Path, agent: &str) -> Option<PathBuf> {
    // The charset check keeps `..` and `/` out of the joined path.
    if agent.is_empty() || !agent.bytes().all(is_name_byte) {
        return None;
    }
    Some(home.join(".nix-profile/bin").join(agent)).filter(|p| is_executable_file(p))
}

/// Installed mode: `agent` on the supervisor's `PATH` (absolute entries only); `shell` is the login shell.
fn on_path(config: &Config, agent: &str) -> Option<PathBuf> {
    let path = config.harness_path.as_deref()?;
    if agent == "shell" {
        return Some(post_mortem_shell(config));
    }
    if agent.is_empty() || !agent.bytes().all(is_name_byte) {
        return None;
    }
    tmux::find_on_path(agent, Some(path))
}

/// `PM`: the `shell` pair if executable, else `$SHELL` if absolute and executable, else `/bin/sh`.
pub fn post_mortem_shell(config: &Config) -> PathBuf {
    configured(config, "shell")
        .or_else(|| config.login_shell.clone().filter(|p| p.is_absolute() && is_executable_file(p)))
        .unwrap_or_else(|| PathBuf::from(FALLBACK_SHELL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_agent_name() {
        assert_eq!(kind_of("claude"), HarnessKind::Claude);
        assert_eq!(kind_of("codex"), HarnessKind::Codex);
        assert_eq!(kind_of("shell"), HarnessKind::Shell);
        assert_eq!(kind_of("aider"), HarnessKind::Generic);
        assert_eq!(kind_of("Claude"), HarnessKind::Generic);
    }
}
