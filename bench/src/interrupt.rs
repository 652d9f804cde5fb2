//! Ctrl-C, SIGTERM and SIGHUP during a bench run, through the harness's one flag
//! (`agent_box_tests::interrupt`): a wait in progress fails its section, every sandbox is torn down by its `Drop`
//! and bench exits 130.

use std::sync::atomic::{AtomicBool, Ordering};

use super::fail::{Outcome, fail};

static REPORTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler; should that fail, the signals keep their default effect.
pub fn install() {
    agent_box_tests::interrupt::install();
}

/// True once one of the signals has arrived; says so once.
pub fn interrupted() -> bool {
    let received = agent_box_tests::interrupt::received();
    if received && !REPORTED.swap(true, Ordering::SeqCst) {
        println!("bench: interrupted; stopping and cleaning up");
    }
    received
}

/// Fails the current step when bench was interrupted.
pub fn check() -> Outcome<()> {
    if interrupted() { fail("interrupted") } else { Ok(()) }
}
