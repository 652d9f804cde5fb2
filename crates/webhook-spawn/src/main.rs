//! `agent-box-webhook-spawn`: run by the webhook receiver once per batch; 0 = accepted, 75 = defer and retry,
//! 1 or 2 = drop (60-webhook-spawn §8).

use std::process::ExitCode;

use clap::Parser;
use registry::exit;
use webhook_spawn::messages::say;

/// Turns one dispatched batch of webhook events (stdin, LOCAL_WEBHOOK_SPAWN_*) into one hook session.
#[derive(Debug, Parser)]
#[command(name = "agent-box-webhook-spawn", version)]
struct Cli {
    /// Render what a standing watch launches: --preamble TOPIC [NOTE] [WATCH_NAME]; writes nothing.
    #[arg(long, num_args = 1..=3, value_names = ["TOPIC", "NOTE", "WATCH_NAME"], allow_hyphen_values = true)]
    preamble: Option<Vec<String>>,
    #[arg(long, hide = true, num_args = 0.., allow_hyphen_values = true)]
    resolved_profile: Option<Vec<String>>,
}

fn main() -> ExitCode {
    registry::lock::protect_inherited_lock_fd();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    let env = |key: &str| std::env::var_os(key);
    if cli.resolved_profile.is_some() {
        say("'--resolved-profile' is not part of this build (profiles need the external profile tool)");
        return ExitCode::from(exit::USAGE);
    }
    if let Some(words) = cli.preamble {
        let get = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        return match webhook_spawn::preamble::preamble(&env, get(0), get(1), get(2)) {
            Ok(text) => {
                // A reader that went away does not change the answer (the text is only informative).
                let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
                ExitCode::SUCCESS
            }
            Err(line) => {
                say(&line);
                ExitCode::from(exit::USAGE)
            }
        };
    }
    ExitCode::from(webhook_spawn::spawn::spawn(&env, &mut std::io::stdin().lock()))
}
