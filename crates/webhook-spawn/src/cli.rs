//! The command line of `agent-box-webhook-spawn` (60-webhook-spawn), in the library so `cargo xtask man` renders
//! its manual page from the same definition as the parser.

use clap::Parser;

/// Turns one dispatched batch of webhook events (stdin, LOCAL_WEBHOOK_SPAWN_*) into one hook session.
#[derive(Debug, Parser)]
#[command(name = "agent-box-webhook-spawn", version)]
pub struct Cli {
    /// Render what a standing watch launches: --preamble TOPIC [NOTE] [WATCH_NAME]; writes nothing.
    #[arg(long, num_args = 1..=3, value_names = ["TOPIC", "NOTE", "WATCH_NAME"], allow_hyphen_values = true)]
    pub preamble: Option<Vec<String>>,
    #[arg(long, hide = true, num_args = 0.., allow_hyphen_values = true)]
    pub resolved_profile: Option<Vec<String>>,
}
