//! `agent-box-session`: the operator CLI (50-session-cli). Parses, checks the configuration, runs one verb,
//! and maps everything to the four exit codes 0, 1, 2 and 75.

use std::process::ExitCode;

use clap::Parser;
use registry::exit;
use session::cli::{Cli, Verb};
use session::context::Context;
use session::messages;
use session::out::{Flushed, Out, say};

fn main() -> ExitCode {
    registry::lock::protect_inherited_lock_fd();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    if let Some(refusal) = out_of_scope(&cli.verb) {
        say(&refusal);
        return ExitCode::from(exit::USAGE);
    }
    let ctx = match Context::from_env() {
        Ok(ctx) => ctx,
        Err(problem) => {
            say(&problem.0);
            return ExitCode::from(exit::USAGE);
        }
    };
    let mut out = Out::new();
    let code = session::run(&ctx, &cli.verb, &mut out);
    match out.flush() {
        Flushed::Ok | Flushed::Closed => ExitCode::from(code),
        Flushed::Failed => ExitCode::from(exit::FAILURE),
    }
}

/// The hidden verbs of §2.6.
fn out_of_scope(verb: &Verb) -> Option<String> {
    match verb {
        Verb::Env(_) => Some(messages::not_in_build("env", "the env store is not included")),
        Verb::Whatsapp(_) => Some(messages::not_in_build("whatsapp", "WhatsApp routing is not included")),
        Verb::Profile(_) => Some(messages::not_in_build("profile", "profiles need the external profile tool")),
        _ => None,
    }
}
