//! Fuzz target `meta_claim` (90-quality §9): the property check `webhook_spawn::fuzz::check_meta_claim`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| webhook_spawn::fuzz::check_meta_claim(data));
