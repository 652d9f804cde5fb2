//! The command line (50-session-cli §2): clap derive, with all validation beyond the grammar left to the verbs
//! so the messages stay ours.

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand};

const LONG_HELP: &str = "\
Sessions are the tmux sessions of this box's agents; sessions.json lists them and the supervisor keeps every
listed, unstopped session running.

Capacity: the box has a session limit, by default one session per started GiB of RAM unless an administrator
configured a number. Every start shares it (add, restart, the supervisor, dispatched webhook sessions), except
that a session whose harness is `shell` is always admitted, so you can open a shell on a full box to fix it.

Exit codes: 0 done; 1 failed at run time (the message says what was and was not done); 2 bad arguments, name
or configuration (nothing was written); 75 refused but safe to retry (the registry lock was busy, the box is
full, or capacity could not be checked; nothing was written).

Names use only letters, digits, '-' and '_', at most 150 characters, and not settings, downloads, webhook,
sessions, token, ws or auth. rm, stop and restart accept any name made of those characters.

add: the harness is the CLI program the session runs; it must be one of AGENT_BOX_AGENTS and defaults to
AGENT_BOX_DEFAULT_AGENT. --agent is a deprecated spelling of --harness. --cwd must be a directory inside your
home; it is stored resolved (absolute, symlinks followed). --prompt is sent once, at the first start;
--resume-prompt at every resumed start. --remote-control defaults to true, except for codex. --ephemeral makes
a one-shot session: once it exits cleanly or is stopped, the supervisor removes it from the list.

peers shows the other live sessions and what each claims to be working on, so a session can yield work that
another one already owns.

UNRESOLVED ASSIGNMENT marks a dispatched session whose work this box accepted but cannot say finished (its
agent crashed, or its pane vanished). It stays until the work is checked and the session removed with rm.

env keeps the variables every session gets when it starts (API keys, tokens) in ~/.config/agent-box/env
(0600), the same file the settings web page writes. env set KEY reads the value from standard input, or asks
for it without echo on a terminal; values are never printed. A change applies at the next start of each
session: agent-box-session restart NAME|--all.

queue lists the batches of webhook events that wait in the intake queue for a session slot (a full box accepts
them there instead of refusing them), oldest first, and the expired ones that never got a session; queue rm KEY
ends one (no session starts for it) or removes an expired one once a person handled it.

stop keeps the session listed but parked (restart revives it); rm removes it from the list, kills its pane and
deletes its state.

Attach to a session with: agent-box-session attach NAME (detach again with Ctrl-b d). It finds the box's tmux
socket by itself: /run/agent-box-USER on NixOS, /run/user/UID/agent-box under the systemd user unit of
`cargo xtask install`. ls says when no supervisor is running; nothing starts until one is.

Shell completion: agent-box-session completions bash|zsh|fish prints the script for that shell.";

/// The operator CLI of agent-box.
#[derive(Debug, Parser)]
#[command(name = "agent-box-session", version, about = "Look at and steer the agent sessions of this box", after_long_help = LONG_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// List the registered sessions and their state, then unmanaged live ones.
    Ls(JsonFlag),
    /// Show the other live sessions and what each one claims.
    Peers(JsonFlag),
    /// Show how many session slots are used and the limit.
    Capacity(JsonFlag),
    /// List assignment leases, unresolved first.
    Leases(JsonFlag),
    /// List the event batches waiting for a session slot (the intake queue), or end one with `queue rm KEY`.
    Queue(QueueArgs),
    /// Show the newest records of the hook-session log.
    Log(LogArgs),
    /// Attach the terminal to a live session (inside tmux: switch to it).
    Attach(NameArg),
    /// Print the shell completion script for bash, zsh or fish.
    Completions(CompletionsArgs),
    /// Register a new session; the supervisor starts it.
    Add(Box<AddArgs>),
    /// Remove a session from the list, kill its pane and delete its state.
    Rm(NameArg),
    /// Park a session: it stays listed and is not restarted.
    Stop(NameArg),
    /// Kill a session (or all) so the supervisor starts it again; clears `stopped`.
    Restart(RestartArgs),
    /// Manage the variables every session gets at its next start (the env store).
    #[command(subcommand)]
    Env(EnvVerb),
    #[command(hide = true)]
    Whatsapp(Rest),
    #[command(hide = true)]
    Profile(Rest),
}

/// The verbs of the env store (`~/.config/agent-box/env`).
#[derive(Debug, Subcommand)]
pub enum EnvVerb {
    /// List the variable names, sorted (never a value).
    Ls(JsonFlag),
    /// Set a variable; the value is read from standard input, or asked for without echo on a terminal.
    Set(EnvSetArgs),
    /// Remove a variable.
    Rm(EnvKeyArg),
}

#[derive(Debug, Args)]
pub struct EnvSetArgs {
    /// The variable name.
    pub key: String,
    /// The value (for scripts only: it ends up in the shell history and in `ps`).
    #[arg(allow_hyphen_values = true)]
    pub value: Option<OsString>,
}

#[derive(Debug, Args)]
pub struct EnvKeyArg {
    /// The variable name.
    pub key: String,
}

/// `queue [--json]` or `queue rm KEY`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub verb: Option<QueueVerb>,
    /// Print a versioned JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum QueueVerb {
    /// End a queued batch (no session starts for it) or remove an expired one, with an end record.
    Rm(QueueKeyArg),
}

#[derive(Debug, Args)]
pub struct QueueKeyArg {
    /// The batch's key (a delivery id, or its `sha256:` key), or a unique prefix of at least six characters.
    pub key: String,
}

#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print a versioned JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// How many records to show (default 20).
    #[arg(short = 'n', value_name = "N")]
    pub count: Option<String>,
    /// Print a versioned JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells `completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct NameArg {
    pub name: String,
}

#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The session to restart.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Restart every listed session.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct Rest {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The session name (minted from the harness or --cwd when omitted).
    pub name: Option<String>,
    /// The CLI program the session runs (one of AGENT_BOX_AGENTS).
    #[arg(long, value_name = "H", conflicts_with = "agent")]
    pub harness: Option<String>,
    /// Deprecated spelling of --harness.
    #[arg(long, value_name = "H")]
    pub agent: Option<String>,
    /// Working directory inside $HOME.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<OsString>,
    /// Kickoff prompt, sent once at the first start.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// Prompt sent whenever the session is resumed.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub resume_prompt: Option<String>,
    /// One-shot: removed from the list once it exits cleanly or is stopped.
    #[arg(long)]
    pub ephemeral: bool,
    /// true or false (default true, false for codex).
    #[arg(long, value_name = "BOOL")]
    pub remote_control: Option<String>,
    /// Who asked for the session: user, agent or webhook.
    #[arg(long, value_name = "ORIGIN", default_value = "user")]
    pub origin: String,
    /// Webhook source and repository recorded with the session.
    #[arg(long, num_args = 2, value_names = ["SOURCE", "REPOSITORY"], allow_hyphen_values = true)]
    pub hook: Option<Vec<String>>,
    #[arg(long, hide = true)]
    pub profile: Option<String>,
    #[arg(long, hide = true)]
    pub whatsapp: Option<String>,
    /// Arguments passed to the harness after its own flags.
    #[arg(last = true, value_name = "EXTRA_ARGS")]
    pub extra_args: Vec<String>,
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
    fn prompts_may_start_with_a_dash_and_extra_args_follow_the_separator() {
        let cli =
            Cli::try_parse_from(["agent-box-session", "add", "x", "--prompt", "-n", "--", "--model", "y"]).unwrap();
        let Verb::Add(add) = cli.verb else { panic!() };
        let add = *add;
        assert_eq!(add.prompt.as_deref(), Some("-n"));
        assert_eq!(add.extra_args, ["--model", "y"]);
    }

    #[test]
    fn restart_takes_exactly_one_of_name_and_all() {
        assert!(Cli::try_parse_from(["agent-box-session", "restart"]).is_err());
        assert!(Cli::try_parse_from(["agent-box-session", "restart", "a", "--all"]).is_err());
        assert!(Cli::try_parse_from(["agent-box-session", "restart", "--all"]).is_ok());
    }

    #[test]
    fn agent_and_harness_conflict() {
        assert!(Cli::try_parse_from(["agent-box-session", "add", "--agent", "a", "--harness", "b"]).is_err());
    }
}
