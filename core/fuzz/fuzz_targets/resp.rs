#![no_main]
// The RESP request framer as the host's connection loop drives it; see src/framing.rs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| memoria_fuzz::framing::run(data));
