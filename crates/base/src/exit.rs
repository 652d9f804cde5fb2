//! Exit codes shared by every program (00-overview §7), named once.

/// Success.
pub const OK: u8 = 0;
/// Runtime failure; the message says what was and was not done.
pub const FAILURE: u8 = 1;
/// Usage, validation or configuration error; nothing was written.
pub const USAGE: u8 = 2;
/// Refused, safe to retry (EX_TEMPFAIL); nothing was written.
pub const TEMPFAIL: u8 = 75;
