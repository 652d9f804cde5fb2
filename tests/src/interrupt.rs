//! The one interrupt flag of the long-running commands (bench, demo, and xtask while it waits for bench): a
//! handler for SIGINT, SIGTERM and SIGHUP only records that one arrived, so that the loops can stop between steps
//! and every sandbox or world is torn down by its own code (no supervisor, agent or tmux server left running).
//! Not a blocked mask: children inherit blocked signals, and a tmux server started with SIGTERM and SIGHUP blocked
//! outlives its teardown. A handler, unlike a mask or an ignore, is reset by `exec`, so children get the defaults.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc::c_int;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

static RECEIVED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: c_int) {
    RECEIVED.store(true, Ordering::SeqCst);
}

/// Installs the handler; should that fail, the signals keep their default effect.
pub fn install() {
    // SA_RESTART: sleeps, waits and reads in progress carry on; the loops check the flag between steps.
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        #[allow(unsafe_code)]
        let _ = unsafe { sigaction(signal, &action) };
    }
}

/// True once one of the signals has arrived since [`install`].
pub fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag_and_does_not_end_the_process() {
        install();
        nix::sys::signal::raise(Signal::SIGHUP).unwrap();
        assert!(received(), "the handler records the signal");
    }
}
