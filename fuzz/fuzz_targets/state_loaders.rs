//! libFuzzer's entry to the `state_loaders` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::state_loaders(data));
