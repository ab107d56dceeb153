//! libFuzzer's entry to the `schema_flags` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::schema_flags(data));
