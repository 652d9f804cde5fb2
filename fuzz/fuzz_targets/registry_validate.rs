//! Fuzz target `registry_validate` (90-quality §9): the property check `registry::fuzz::check_registry_validate`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| registry::fuzz::check_registry_validate(data));
