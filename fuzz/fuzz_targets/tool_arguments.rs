//! libFuzzer's entry to the `tool_arguments` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::tool_arguments(data));
