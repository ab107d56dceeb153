//! libFuzzer's entry to the `message_policy` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::message_policy(data));
