//! Fuzz target `hook_name` (90-quality §9): the property check `webhook_spawn::fuzz::check_hook_name`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| webhook_spawn::fuzz::check_hook_name(data));
