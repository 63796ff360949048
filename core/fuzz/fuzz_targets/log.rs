#![no_main]
// Log wire bodies, entry payloads, effects and snapshot records; see src/log.rs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| memoria_fuzz::log::run(data));
