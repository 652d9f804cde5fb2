//! The fault cases F1–F9 of 90-quality §8 as tests: the result checks of `agent_box_tests::faults` (the same
//! procedures `cargo xtask bench faults` times), never their times (80 I11). A case that needs root prints
//! `SKIP <id>: <reason>` elsewhere.
//!
//! Beside these, the acceptance scenarios that check parts of the same results: F1 session cli
//! `a_read_only_registry_directory_refuses_add_and_leaves_no_temp`, mark-stopped
//! `read_only_directories_change_nothing`, e2e `an_invalid_registry_that_cannot_be_moved_aside_is_left_alone`; F3 e2e
//! `a_killed_server_comes_back_with_every_session`; F4 session cli
//! `every_verb_good_and_bad_exits_with_its_documented_code`, e2e `sup_4_1_l2_…`; F5 e2e
//! `a_corrupt_registry_is_quarantined_and_its_leases_spared`, `an_unreadable_registry_is_left_alone` and the registry
//! heal tests; F6 session cli `a_held_lock_means_75_and_no_change`, e2e `a_held_lock_stops_spawns_with_one_l9`,
//! mark-stopped `a_hung_lock_holder_is_outlasted_silently`; F7 webhook-spawn `a_busy_hook_log_skips_the_line_only`,
//! lease `ls_11_8_busy_…`; F9 lease `ls_11_10_…`, `ls_11_13_…`.
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

// 90 F1
#[test]
fn a_read_only_config_directory_refuses_add_and_leaves_the_epilogue_silent() {
    holds(faults::f1());
}

// 90 F2
#[test]
fn a_full_disk_refuses_writers_cleanly_and_recovers_without_a_restart() {
    holds(faults::f2());
}

// 90 F3
#[test]
fn a_killed_tmux_server_comes_back_with_every_session_and_one_l4() {
    holds(faults::f3());
}

// 90 F4
#[test]
fn a_missing_tmux_fails_closed_and_the_supervisor_recovers() {
    holds(faults::f4());
}

// 90 F5
#[test]
fn registry_garbage_is_quarantined_reseeded_or_left_alone() {
    holds(faults::f5());
}

// 90 F6
#[test]
fn a_hung_registry_lock_holder_means_75_l9_and_a_silent_epilogue() {
    holds(faults::f6());
}

// 90 F7
#[test]
fn hung_lease_and_hook_log_lock_holders_skip_only_their_step() {
    holds(faults::f7());
}

// 90 F8
#[test]
fn an_unwatchable_registry_directory_logs_l12_once_and_arms_later() {
    holds(faults::f8());
}

// 90 F9
#[test]
fn future_claim_and_heartbeat_times_are_handled() {
    holds(faults::f9());
}
