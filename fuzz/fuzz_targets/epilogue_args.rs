//! Fuzz target `epilogue_args` (90-quality §9): the property check `mark_stopped::fuzz::check_epilogue_args`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mark_stopped::fuzz::check_epilogue_args(data));
