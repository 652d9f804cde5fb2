//! agent-box-mark-stopped as a library: its argument parser, which the binary uses and the fuzz target
//! `epilogue_args` checks. The binary (`main.rs`) keeps the baked paths and the recording.

pub mod args;
#[doc(hidden)]
pub mod fuzz;
