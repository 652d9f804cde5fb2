//! The exit codes of every xtask command, in one place (XT-1.6; numbers borrowed from cargo-nextest).

/// Everything requested succeeded (also `--help` and `--version`).
pub const SUCCESS: u8 = 0;
/// Usage error; the same number clap itself uses.
pub const USAGE: u8 = 2;
/// Setup error: a required tool is missing and could not be installed.
pub const SETUP: u8 = 96;
/// A check failed (fmt, clippy, a test, golden, a `.nix` parse error).
pub const CHECK_FAILED: u8 = 100;
