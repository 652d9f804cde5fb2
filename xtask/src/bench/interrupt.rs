//! Ctrl-C, SIGTERM and SIGHUP during a bench run: a handler only records that one arrived, so that a wait in
//! progress fails its section, every sandbox is torn down by its `Drop` (no supervisor, agent or tmux server left
//! running) and bench exits 130. Not a blocked mask: children inherit blocked signals, and a tmux server started
//! with SIGTERM and SIGHUP blocked outlives its teardown. A handler, unlike a mask, is reset by `exec`.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc::c_int;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

use super::fail::{Outcome, fail};

static RECEIVED: AtomicBool = AtomicBool::new(false);
static REPORTED: AtomicBool = AtomicBool::new(false);

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

/// True once one of the signals has arrived; says so once.
pub fn interrupted() -> bool {
    let received = RECEIVED.load(Ordering::SeqCst);
    if received && !REPORTED.swap(true, Ordering::SeqCst) {
        println!("bench: interrupted; stopping and cleaning up");
    }
    received
}

/// Fails the current step when bench was interrupted.
pub fn check() -> Outcome<()> {
    if interrupted() { fail("interrupted") } else { Ok(()) }
}
