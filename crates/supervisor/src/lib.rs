//! agent-box-supervisor as a library: configuration, side files, harness launch and the reconcile loop.
//! The binary in `main.rs` is a thin front over it.

pub mod backoff;
pub mod config;
pub mod decide;
pub mod launch;
pub mod log;
pub mod print;
pub mod run;
pub mod side;
mod spawn;
pub mod supervisor;
mod sweep;
mod wake;

pub use supervisor::Supervisor;
