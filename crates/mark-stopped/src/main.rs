//! `agent-box-mark-stopped NAME STATUS [GEN|-]`: the pane epilogue. It records how the agent process ended and
//! returns; it prints nothing, always exits 0, and reads no environment (40-mark-stopped).

mod record;

use mark_stopped::args;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// The registry path and the state directory fixed at build time; `None` for an unbaked build.
const BAKED: Option<(&str, &str)> =
    match (option_env!("AGENT_BOX_BAKED_SESSIONS_FILE"), option_env!("AGENT_BOX_BAKED_STATE_DIR")) {
        (Some(sessions), Some(state)) => Some((sessions, state)),
        _ => None,
    };

const UNBAKED_LINE: &str = "agent-box-mark-stopped: built without baked paths (AGENT_BOX_BAKE_SESSIONS_FILE, AGENT_BOX_BAKE_STATE_DIR); nothing was recorded\n";

const HELP: &str = "\
usage: agent-box-mark-stopped NAME STATUS [GEN|-|any [LIFE]]
       agent-box-mark-stopped --print-paths
       agent-box-mark-stopped --help
       agent-box-mark-stopped --version

The pane epilogue of agent-box sessions: the pane's shell runs it once after the agent process ended.
  STATUS 0     the session is parked: \"stopped\": true in sessions.json; a lease for GEN is resolved
               (deleted, with an \"exited\" line in the hook log)
  STATUS N>0   the crash is recorded: \"died\": N in sessions.json; a lease for GEN gets the outcome
               died:N (if it has none yet) and the hook log a \"died:N\" line
  GEN          the lease generation the pane was started for; '-' means it started without a lease and
               must not touch one; without GEN (or with 'any') any lease of NAME is acted on
  LIFE         the life of NAME the pane was started for: when the registry entry names another life (the
               name was removed and added again), the report is a late one and changes nothing of the
               entry; only the lease of GEN, if still there, is settled
Paths are fixed when the binary is built (--print-paths shows them); no environment variable is read.
It prints nothing and always exits 0, so a pane never shows its output.
";

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match argv.as_slice() {
        [only] if only == "--help" => print(HELP),
        [only] if only == "--print-paths" => print(&print_paths()),
        // Like clap's `--version` in the other three programs; alone only, so a session named `--version` (the
        // charset allows it) is still recorded when called as `NAME STATUS`.
        [only] if only == "--version" => print(concat!("agent-box-mark-stopped ", env!("CARGO_PKG_VERSION"), "\n")),
        _ => match BAKED {
            Some((sessions, state)) => {
                if let Some(report) = args::parse(&argv) {
                    record::record(Path::new(sessions), Path::new(state), &report);
                }
            }
            None => {
                let _ = std::io::stderr().write_all(UNBAKED_LINE.as_bytes());
            }
        },
    }
    ExitCode::SUCCESS
}

fn print(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// The five `--print-paths` lines of MS-3.5, or `unbaked`.
fn print_paths() -> String {
    match BAKED {
        Some((sessions, state)) => format!(
            "sessions-file {sessions}\nregistry-lock {sessions}.lock\nstate-dir {state}\nlease-dir {state}/lease\nhook-log {state}/hook-sessions.jsonl\n"
        ),
        None => "unbaked\n".to_owned(),
    }
}
