//! `agent-box-supervisor`: keeps every session declared in sessions.json alive in tmux (30-supervisor).

use std::io::Write;
use std::process::ExitCode;

use base::exit;
use clap::Parser;
use supervisor::cli::Cli;
use supervisor::config::Config;
use supervisor::messages;
use supervisor::print::{PrintError, print_command};
use supervisor::run::{Stop, once, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let inherited = std::env::var_os(registry::lock::INHERITED_LOCK_ENV).is_some();
    if inherited {
        // SAFETY: nothing else runs yet: no thread has been started, so no one reads the environment concurrently.
        #[allow(unsafe_code)]
        unsafe {
            std::env::remove_var(registry::lock::INHERITED_LOCK_ENV);
        }
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => return fail(exit::USAGE, &err.to_string()),
    };
    if let Some(name) = cli.print_command {
        return dry_run(&config, &name);
    }
    if inherited {
        say(messages::INHERITED_LOCK_IGNORED);
    }
    if let Some(value) = &config.ignored_lock_wait {
        say(&messages::lock_wait_ignored(value));
    }
    if let Some(value) = &config.ignored_tick_secs {
        say(&messages::tick_secs_ignored(value));
    }
    match if cli.once { once(config) } else { run(config) } {
        Stop::Done => ExitCode::SUCCESS,
        Stop::AlreadyRunning(text) | Stop::ClaimsSchema(text) => fail(exit::USAGE, &text),
        Stop::TmuxTooOld(text) | Stop::Fatal(text) => fail(exit::FAILURE, &text),
    }
}

fn dry_run(config: &Config, name: &str) -> ExitCode {
    match print_command(config, name) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(&text);
            ExitCode::SUCCESS
        }
        Err(PrintError::Usage(text)) => fail(exit::USAGE, &text),
        Err(PrintError::Render(text)) => fail(exit::FAILURE, &text),
    }
}

/// A warning of start-up (issue 18: prefixed with its priority when stderr is the journal).
fn say(text: &str) {
    supervisor::log::Log::stderr().warn(text);
}

fn fail(code: u8, text: &str) -> ExitCode {
    supervisor::log::Log::stderr().error(text);
    ExitCode::from(code)
}
