#![no_main]
// Structured command batches through the engine, with the effects and snapshot
// invariants; see src/engine.rs.
libfuzzer_sys::fuzz_target!(|steps: memoria_fuzz::engine::Steps| memoria_fuzz::engine::run(&steps));
