//! `agent-box-webhook-spawn`: run by the webhook receiver once per batch; 0 = accepted, 75 = defer and retry,
//! 1 or 2 = drop (60-webhook-spawn §8). The only place that prints: the warnings and the error on stderr, the
//! result on stdout.

use std::io::Write;
use std::process::ExitCode;

use base::exit;
use clap::Parser;
use webhook_spawn::cli::Cli;
use webhook_spawn::error::SpawnError;
use webhook_spawn::messages::{PREFIX, RESOLVED_PROFILE};
use webhook_spawn::out::Out;

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
        return fail(&SpawnError::Usage(RESOLVED_PROFILE.to_owned()));
    }
    if let Some(words) = cli.preamble {
        let get = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        return match webhook_spawn::preamble::preamble(&env, get(0), get(1), get(2)) {
            Ok(text) => {
                // A reader that went away does not change the answer (the text is only informative).
                let _ = std::io::stdout().write_all(text.as_bytes());
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err),
        };
    }
    let mut out = Out::new();
    let result = webhook_spawn::spawn::spawn(&env, &mut std::io::stdin().lock(), &mut out);
    out.notes().iter().for_each(|line| say(line));
    match result {
        Ok(()) => {
            if let Some(line) = out.added_line() {
                // The entry is written: a closed stdout must not turn an accepted batch into a dropped one.
                let _ = std::io::stdout().write_all(format!("{line}\n").as_bytes());
            }
            ExitCode::SUCCESS
        }
        Err(err) => fail(&err),
    }
}

fn say(text: &str) {
    eprintln!("{PREFIX}{text}");
}

fn fail(err: &SpawnError) -> ExitCode {
    err.lines().iter().for_each(|line| say(line));
    ExitCode::from(err.exit_code())
}
