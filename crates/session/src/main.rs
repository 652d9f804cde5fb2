//! `agent-box-session`: the operator CLI (50-session-cli). Parses, checks the configuration, runs one verb, and
//! is the only place that prints: the verb's warnings and error on stderr, its results on stdout, and one of the
//! four exit codes 0, 1, 2 and 75.

use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use base::exit;
use clap::Parser;
use session::SessionError;
use session::cli::{Cli, EnvSetArgs, EnvVerb, Verb};
use session::out::{Line, Out};
use view::Context;

/// The prefix of every stderr line that is not kept bare (§14).
const PREFIX: &str = "agent-box-session: ";

fn main() -> ExitCode {
    registry::lock::protect_inherited_lock_fd();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { exit::USAGE } else { exit::OK });
        }
    };
    if let Some(refused) = session::out_of_scope(&cli.verb) {
        return finish(Out::new(), Err(refused));
    }
    if let Verb::Completions(args) = &cli.verb {
        // Needs no configuration: a completion script is written before the box is set up.
        let mut out = Out::new();
        session::completions::completions(args.shell, &mut out);
        return finish(out, Ok(()));
    }
    let ctx = match Context::from_env() {
        Ok(ctx) => ctx,
        Err(problem) => return finish(Out::new(), Err(SessionError::Usage(problem.0))),
    };
    if let Verb::Attach(arg) = &cli.verb {
        return attach(&ctx, &arg.name);
    }
    if let Verb::Env(EnvVerb::Set(args)) = &cli.verb {
        return env_set(&ctx, args);
    }
    let mut out = Out::new();
    let result = session::run(&ctx, &cli.verb, &mut out);
    finish(out, result)
}

/// `attach NAME`: checks, then the process becomes tmux; it returns only when tmux could not be started (M50).
fn attach(ctx: &Context, raw: &str) -> ExitCode {
    let target = match session::attach::target(ctx, raw) {
        Ok(target) => target,
        Err(err) => return finish(Out::new(), Err(err)),
    };
    let err = tmux::Tmux::new(ctx.tmux_config.clone()).attach(&target.name, target.switch);
    finish(Out::new(), Err(SessionError::Failed(session::messages::cannot_attach(raw, &err.reason()))))
}

/// `env set KEY [VALUE]`: the key is checked before the value is asked for; a value on the command line works
/// but is warned about (it is in the shell history and was in `ps`).
fn env_set(ctx: &Context, args: &EnvSetArgs) -> ExitCode {
    let mut out = Out::new();
    if let Err(err) = session::env::settable_key(&args.key) {
        return finish(out, Err(err));
    }
    let value = match &args.value {
        Some(value) => {
            out.warn(session::env::VALUE_IN_ARGV);
            value.as_encoded_bytes().to_vec()
        }
        None => match read_value(&args.key) {
            Ok(value) => value,
            Err(err) => return finish(out, Err(err)),
        },
    };
    let result = session::env::set(ctx, &args.key, &value, &mut out);
    finish(out, result)
}

/// The value from the terminal without echo, else all of standard input less one final newline; an empty one is
/// refused (a forgotten pipe must not blank a key).
fn read_value(key: &str) -> Result<Vec<u8>, SessionError> {
    let stdin = io::stdin();
    let value = if stdin.is_terminal() {
        let prompt = || eprint!("{PREFIX}value for {key} (not echoed, Enter ends it): ");
        registry::envstore::read_line_without_echo(stdin.as_fd(), prompt).map_err(|e| {
            SessionError::Failed(format!("cannot read the value from the terminal ({e}); nothing written"))
        })?
    } else {
        let mut bytes = Vec::new();
        stdin
            .lock()
            .take(registry::envstore::MAX_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| SessionError::Failed(format!("cannot read standard input ({e}); nothing written")))?;
        if bytes.ends_with(b"\n") {
            bytes.pop();
        }
        bytes
    };
    if value.is_empty() {
        return Err(SessionError::Usage(format!(
            "no value for {key} on standard input; nothing written (an empty value: agent-box-session env set {key} '')"
        )));
    }
    Ok(value)
}

/// Prints the warnings, then the error, then the results (§3.9: a closed stdout ends quietly with the exit code
/// the verb chose; any other write error means exit 1).
fn finish(out: Out, result: Result<(), SessionError>) -> ExitCode {
    for line in out.notes() {
        print_line(line);
    }
    let code = match &result {
        Ok(()) => exit::OK,
        Err(err) => {
            err.lines().iter().for_each(print_line);
            err.exit_code()
        }
    };
    let mut stdout = io::stdout().lock();
    match stdout.write_all(out.stdout()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(code),
        Err(_) => ExitCode::from(exit::FAILURE),
    }
}

fn print_line(line: &Line) {
    match line {
        Line::Prefixed(text) => eprintln!("{PREFIX}{text}"),
        Line::Bare(text) => eprintln!("{text}"),
    }
}
