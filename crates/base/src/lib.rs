//! The leaf crate: session names, shell quoting, UTC time, random ids, SHA-256, the shared exit codes and the check
//! of the extra arguments the claude harness gets before its prompt (`claude_args`). It depends on nothing of ours,
//! reads no file and spawns no process, so tmux and the front ends can use these without taking the store along.

pub mod claude_args;
pub mod digest;
pub mod exit;
pub mod id;
pub mod name;
pub mod quote;
pub mod time;

pub use id::{is_uuid, new_uuid_v4};
pub use name::{NameError, SessionName};
