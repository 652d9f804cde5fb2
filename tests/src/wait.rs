//! Waiting for a condition with a deadline (80 I10): never sleep-and-hope, never assert a duration.

use std::time::{Duration, Instant};

/// The default deadline, 20 s, multiplied by `AGENT_BOX_TEST_SLOW` when set.
pub fn deadline() -> Duration {
    let factor = std::env::var("AGENT_BOX_TEST_SLOW").ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(1).max(1);
    Duration::from_secs(20) * factor
}

/// Polls `done` every 50 ms until it holds; panics with `what` and `dump()` when the deadline passes.
pub fn wait_until(what: &str, done: impl FnMut() -> bool) {
    wait_until_or(what, deadline(), done, String::new)
}

/// [`wait_until`] with an explicit deadline and a diagnostic dump on timeout. After SIGINT, SIGTERM or SIGHUP
/// with [`crate::interrupt`] installed (bench, demo) it stops waiting at once, so the caller's teardown runs.
pub fn wait_until_or(what: &str, limit: Duration, mut done: impl FnMut() -> bool, dump: impl FnOnce() -> String) {
    let start = Instant::now();
    while !done() {
        assert!(!crate::interrupt::received(), "interrupted while waiting for {what}");
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for {what}\n{}", dump());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
