//! The fault cases F1–F9 of 90-quality §8 as tests: the result checks of `agent_box_tests::faults` (the same
//! procedures `cargo xtask bench faults` times), never their times (80 I11). A case that needs root prints
//! `SKIP <id>: <reason>` elsewhere.
//!
//! Beside these, the acceptance scenarios that check parts of the same results: F1 session cli `rg11_…`,
//! mark-stopped `ms12_…`, e2e `sv19_…`; F3 e2e `sv15_i24_…`; F4 session cli `cl11_…`, e2e `sup_4_1_l2_…`; F5
//! e2e `sv17_i18_…`, `sv18_i20_…` and the registry heal tests; F6 session cli `rg03_cl07_…`, e2e `sv21_i14_…`,
//! mark-stopped `ms09_…`; F7 webhook-spawn `ls12_…`, lease `ls_11_8_busy_…`; F9 lease `ls_11_10_…`,
//! `ls_11_13_…`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_box_tests::faults::{self, Case};

fn holds(case: Case) {
    if let Some(why) = &case.skipped {
        eprintln!("SKIP {}: {why}", case.id);
        return;
    }
    let failures = case.failures();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn f1_a_read_only_config_directory_refuses_add_and_leaves_the_epilogue_silent() {
    holds(faults::f1());
}

#[test]
fn f2_a_full_disk_refuses_writers_cleanly_and_recovers_without_a_restart() {
    holds(faults::f2());
}

#[test]
fn f3_a_killed_tmux_server_comes_back_with_every_session_and_one_l4() {
    holds(faults::f3());
}

#[test]
fn f4_a_missing_tmux_fails_closed_and_the_supervisor_recovers() {
    holds(faults::f4());
}

#[test]
fn f5_registry_garbage_is_quarantined_reseeded_or_left_alone() {
    holds(faults::f5());
}

#[test]
fn f6_a_hung_registry_lock_holder_means_75_l9_and_a_silent_epilogue() {
    holds(faults::f6());
}

#[test]
fn f7_hung_lease_and_hook_log_lock_holders_skip_only_their_step() {
    holds(faults::f7());
}

#[test]
fn f8_an_unwatchable_registry_directory_logs_l12_once_and_arms_later() {
    holds(faults::f8());
}

#[test]
fn f9_future_claim_and_heartbeat_times_are_handled() {
    holds(faults::f9());
}
