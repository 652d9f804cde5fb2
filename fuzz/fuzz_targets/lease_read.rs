//! Fuzz target `lease_read` (90-quality §9): the property check `lease::fuzz::check_lease_read`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lease::fuzz::check_lease_read(data));
