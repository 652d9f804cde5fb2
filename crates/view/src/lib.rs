//! The read-only views of the box that both front ends need, agent-box-session and agent-box-webhook-spawn
//! (50-session-cli §3–§7): the context resolved from the environment, the registry, leases and side files read
//! without a lock, what each session claims, the live peers and their text report, and the `ls` and `leases`
//! listings as models, and the intake queue's rows (issue 24). Nothing here locks, writes or prints; the front ends render and report.

pub mod claims;
pub mod context;
pub mod leases;
pub mod ls;
pub mod notification;
pub mod peers;
pub mod queue;
pub mod read;
pub mod text;

pub use context::{ConfigProblem, Context, KillResult, LivePanes};

/// A context over the harness's fake tmux for the unit tests of this crate.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use agent_box_tests::fake_tmux::{FakeTmux, fake_env};

    use crate::Context;

    /// A context for HOME `home` (user `agent`) whose tmux is `tmux`; `extra` adds environment variables.
    pub fn context(home: &Path, tmux: FakeTmux, extra: &[(&str, &str)]) -> Context {
        Context::from_lookup(fake_env(home, extra)).unwrap().with_tmux(Box::new(tmux))
    }
}
