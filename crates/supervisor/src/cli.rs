//! The command line of `agent-box-supervisor` (30-supervisor §1), in the library so `cargo xtask man` can render
//! its manual page from the same definition. The long help lists every environment variable the supervisor
//! reads, with its default and meaning (issue 11); it never interpolates the environment, so the golden snapshot
//! stays byte-stable.

use clap::Parser;

const LONG_HELP: &str = "\
Configuration comes from the environment (a systemd unit's Environment=/EnvironmentFile=, or the shell). A
missing or relative required value stops the start with one line naming every problem (exit 2).

Installed mode: when the directory of this program also holds an agent-box-mark-stopped baked for this user's
registry and state directory (what `cargo xtask install` puts there), the three required variables below have
defaults: that epilogue, no seed (a missing registry becomes an empty one), and harnesses looked up on PATH.

Required (outside installed mode):
  AGENT_BOX_SESSIONS_SEED      seed registry installed when sessions.json is missing or empty
                               (installed mode: none, the empty registry)
  AGENT_BOX_AGENT_BINS         space-separated name=/abs/path pairs: the program of each harness
                               (installed mode: none; every harness is looked up on PATH)
  AGENT_BOX_MARK_STOPPED       absolute path of this user's baked epilogue, appended to every pane
                               (installed mode: the agent-box-mark-stopped next to this program)
  HOME                         base of every per-user path

Optional:
  USER                         user name in paths and filter names (default: the passwd name of the uid)
  AGENT_BOX_SESSIONS_FILE      the registry (default ~/.config/agent-box/sessions.json)
  AGENT_BOX_SESSION_LIMIT_FILE session limit, 'auto' or a number (default /etc/agent-box/session-limit;
                               missing means auto: one session per started GiB of RAM)
  AGENT_BOX_MEMINFO_FILE       memory source for auto (default /proc/meminfo)
  REGISTRY_LOCK_WAIT           seconds to wait for the registry lock (default 10, capped at 1 here)
  AGENT_BOX_TMUX_BIN           the tmux program (default: tmux on PATH)
  AGENT_BOX_TMUX_TMPDIR        socket directory (default: /run/agent-box-USER when it exists, else
                               /run/user/UID/agent-box when it exists; tests and the demo only)
  AGENT_BOX_TMUX_SOCKET        socket name (default agent-box; tests and the demo only)
  AGENT_BOX_TMUX_CONF          tmux config file passed as -f (default none)
  AGENT_BOX_TMUX_SERVER        'external': the server belongs to its own unit (agent-box-tmux); list it, never
                               start one, wait while it is down (default unset: start it when needed)
  AGENT_BOX_ENV_EXEC           program prefixed to every pane command (default none)
  AGENT_BOX_HOST_LABEL         suffix of derived remote-control names (default: the kernel host name)
  AGENT_BOX_CLAUDE_SETTINGS    passed to claude as --settings (default none)
  AGENT_BOX_WEBHOOK_REPO       non-empty: panes get the webhook channel and variables (default off)
  LOCAL_WEBHOOK_STATE_DIR      webhook filter directory (default ~/.local/state/local-webhook)
  AGENT_BOX_RESTART_NOTICE     auto, always or never: nudge a resumed session (default auto)
  AGENT_BOX_CODEX_FULL_ACCESS  non-empty: codex runs with workspace-write instead of prompts (default off)
  CODEX_HOME                   codex's state, for resuming (default ~/.codex)
  SHELL                        post-mortem shell when no 'shell' harness is configured (default /bin/sh)
  AGENT_BOX_ON_OUTCOME         absolute path of a program run once per recorded lease outcome, the outcome as
                               JSON on stdin, until it exits 0 (default none; see docs/notification.md)
  AGENT_BOX_ON_OUTCOME_TIMEOUT seconds one run of it may take before it is killed (default 60)
  AGENT_BOX_QUEUE_MAX          event batches the intake queue holds at once (default 500; the oldest expires
                               when a new one would make more; see docs/intake.md)
  AGENT_BOX_QUEUE_MAX_AGE      seconds a queued batch may wait for a slot before it expires (default 86400)
  AGENT_BOX_TICK_SECS          seconds between timer ticks (default 2; tests and benchmarks only)

Every new pane gets PATH and every AGENT_BOX_* variable of this environment but AGENT_BOX_SESSION_ID,
AGENT_BOX_PROFILE, AGENT_BOX_REGISTRY_LOCK_FD and AGENT_BOX_TMUX_SERVER (new-session -e), so a pane started after
an upgrade sees the new values although the tmux server is older.

One supervisor serves one registry: a second one refuses to start and names the running one. Besides its 2 s
timer it ticks at once when sessions.json changes and when a tmux session closes (a session-closed hook that it
installs on the server touches ~/.local/state/agent-box/tmux-wake). It logs one line per event on stderr (the
journal adds the time). Stopping it (SIGTERM, SIGINT, SIGHUP) leaves every session running. Exit codes: 0 after a
signal or --once, 1 tmux older than 3.2 or a fatal run-time error, 2 a configuration problem or another supervisor
already running.";

/// Reconciles sessions.json into tmux: starts what is listed and not running, records how panes ended,
/// reaps parked one-shot sessions, and sweeps what no listed session owns.
#[derive(Debug, Parser)]
#[command(name = "agent-box-supervisor", version, after_long_help = LONG_HELP)]
pub struct Cli {
    /// Run the start-up duties and exactly one tick, then exit.
    #[arg(long, conflicts_with = "print_command")]
    pub once: bool,
    /// Print what would be spawned for NAME (no lock, no tmux, no write), then exit.
    #[arg(long, value_name = "NAME")]
    pub print_command: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_long_help_names_every_variable_the_configuration_reads() {
        let source = include_str!("config.rs");
        let mut names: Vec<&str> = source
            .match_indices('"')
            .filter_map(|(at, _)| source[at + 1..].split('"').next())
            .filter(|word| word.starts_with("AGENT_BOX_") && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
            .collect();
        names.sort_unstable();
        names.dedup();
        assert!(!names.is_empty());
        for name in names {
            assert!(LONG_HELP.contains(name), "{name} is read but not in --help");
        }
    }
}
