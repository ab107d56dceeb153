//! libFuzzer's entry to the `http_front` target (see crates/satori-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| satori_fuzz::http_front(data));
