//! agent-box-session as a library: the verbs of the operator CLI (50-session-cli). The `peers` report is also
//! called in-process by agent-box-webhook-spawn.

pub mod add;
pub mod capacity;
pub mod claims;
pub mod cli;
pub mod context;
pub mod leases;
mod locked;
pub mod log;
pub mod ls;
pub mod messages;
pub mod out;
pub mod peers;
pub mod restart;
pub mod rm;
pub mod stop;
pub mod text;
pub mod view;

use cli::Verb;
use context::Context;
use out::Out;

/// Runs one verb; results go to `out`, messages to stderr; returns the exit code.
pub fn run(ctx: &Context, verb: &Verb, out: &mut Out) -> u8 {
    match verb {
        Verb::Ls(flag) => ls::ls(ctx, flag.json, out),
        Verb::Peers(flag) => peers::peers(ctx, flag.json, out),
        Verb::Capacity(flag) => capacity::capacity(ctx, flag.json, out),
        Verb::Leases(flag) => leases::leases(ctx, flag.json, out),
        Verb::Log(args) => log::log(ctx, args.count.as_deref(), out),
        Verb::Add(args) => add::add(ctx, args, out),
        Verb::Rm(arg) => rm::rm(ctx, &arg.name, out),
        Verb::Stop(arg) => stop::stop(ctx, &arg.name, out),
        Verb::Restart(args) => restart::restart(ctx, args.name.as_deref(), out),
        Verb::Env(_) | Verb::Whatsapp(_) | Verb::Profile(_) => registry::exit::USAGE,
    }
}
