//! The typed adapter over the tmux CLI: the only code in the workspace that runs tmux.
//!
//! Every call goes to the box's private socket (`-L`, with `TMUX_TMPDIR` set to the socket directory),
//! as argv without a shell, with a scrubbed environment, `#` escaped wherever tmux expands formats, exact
//! session targets, and a hard deadline (30-supervisor §17, 00-overview OV-5.3).

mod api;
mod client;
mod commands;
mod config;
mod env;
mod error;
mod escape;
mod hook;
mod identity;
mod run;
mod version;

pub use api::{Killed, NewSession, Snapshot, TmuxApi};
pub use client::Tmux;
pub use config::{
    DEFAULT_SOCKET, DEFAULT_TIMEOUT, TmuxConfig, find_on_path, is_valid_socket_name, socket_dir_candidates,
};
pub use env::{CallerPane, ParentEnv, REMOVED_VARS, child_env};
pub use error::TmuxError;
pub use escape::escape_format;
pub use hook::{MAX_HOOK_VALUE, WAKE_HOOK_NAME, WakeHook, WakeHookError};
pub use identity::SessionId;
pub use version::parse_version;
