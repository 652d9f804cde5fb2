//! Fuzz target `hooklog_line` (90-quality §9): the property check `lease::fuzz::check_hooklog_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lease::fuzz::check_hooklog_line(data));
