//! libFuzzer's entry to the `query_operators` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::query_operators(data));
