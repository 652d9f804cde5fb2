//! Fuzz target `shell_quote` (90-quality §9): the property check `registry::fuzz::check_shell_quote`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| registry::fuzz::check_shell_quote(data));
