//! agent-box-session as a library: the verbs of the operator CLI (50-session-cli) over the read-only views of
//! crate `view`. A verb collects what it has to say in an [`out::Out`] and fails with a [`SessionError`] that
//! knows its exit code and message; only `main` writes to stdout and stderr.

pub mod add;
pub mod attach;
pub mod capacity;
pub mod cli;
pub mod completions;
pub mod env;
pub mod error;
pub mod leases;
mod locked;
pub mod log;
pub mod ls;
pub mod messages;
pub mod out;
mod pane;
pub mod peers;
pub mod queue;
pub mod restart;
pub mod rm;
pub mod stop;

use cli::{EnvVerb, QueueVerb, Verb};
pub use error::SessionError;
use out::Out;
use view::Context;

/// The refusal of a hidden verb of §2.6 (M37), checked before the configuration.
pub fn out_of_scope(verb: &Verb) -> Option<SessionError> {
    let refusal = match verb {
        Verb::Whatsapp(_) => messages::not_in_build("whatsapp", "WhatsApp routing is not included"),
        Verb::Profile(_) => messages::not_in_build("profile", "profiles need the external profile tool"),
        _ => return None,
    };
    Some(SessionError::Usage(refusal))
}

/// Runs one verb; its results and warnings go to `out`.
pub fn run(ctx: &Context, verb: &Verb, out: &mut Out) -> Result<(), SessionError> {
    match verb {
        Verb::Ls(flag) => ls::ls(ctx, flag.json, out),
        Verb::Peers(flag) => peers::peers(ctx, flag.json, out),
        Verb::Capacity(flag) => capacity::capacity(ctx, flag.json, out),
        Verb::Leases(flag) => leases::leases(ctx, flag.json, out),
        Verb::Queue(args) => match &args.verb {
            None => queue::queue(ctx, args.json, out),
            Some(QueueVerb::Rm(arg)) => queue::rm(ctx, &arg.key, out),
        },
        Verb::Log(args) => log::log(ctx, args.count.as_deref(), args.json, out),
        // `main` execs tmux for a target; reaching here only checks it.
        Verb::Attach(arg) => attach::target(ctx, &arg.name).map(drop),
        Verb::Completions(args) => {
            completions::completions(args.shell, out);
            Ok(())
        }
        Verb::Add(args) => add::add(ctx, args, out),
        Verb::Rm(arg) => rm::rm(ctx, &arg.name, out),
        Verb::Stop(arg) => stop::stop(ctx, &arg.name, out),
        Verb::Restart(args) => restart::restart(ctx, args.name.as_deref(), out),
        Verb::Env(EnvVerb::Ls(flag)) => env::ls(ctx, flag.json, out),
        // `main` reads the value first when it is not on the command line.
        Verb::Env(EnvVerb::Set(args)) => {
            let value = args.value.as_ref().map(|v| v.as_encoded_bytes().to_vec()).unwrap_or_default();
            env::set(ctx, &args.key, &value, out)
        }
        Verb::Env(EnvVerb::Rm(arg)) => env::rm(ctx, &arg.key, out),
        Verb::Whatsapp(_) | Verb::Profile(_) => out_of_scope(verb).map_or(Ok(()), Err),
    }
}

/// A context over the harness's fake tmux for the unit tests of this crate.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use agent_box_tests::fake_tmux::{FakeTmux, fake_env};
    use view::Context;

    /// A context for HOME `home` (user `agent`) whose tmux is `tmux`; `extra` adds environment variables.
    pub fn context(home: &Path, tmux: FakeTmux, extra: &[(&str, &str)]) -> Context {
        Context::from_lookup(fake_env(home, extra)).unwrap().with_tmux(Box::new(tmux))
    }
}
