//! The engine component under Wasmtime: one `Store` + instance per shard. A trap poisons
//! the instance ("cannot enter component instance"), so the owner rebuilds it.

use thiserror::Error;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

mod bindings {
    wasmtime::component::bindgen!({ path: "../core/wit", world: "engine" });
}

/// The engine component built by build.rs (zero imports).
pub const ENGINE_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/engine.component.wasm"));

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("engine trapped: {0}")]
    Trap(String),
    #[error("engine refused: {0}")]
    Refused(String),
    #[error("compiling the engine component: {0}")]
    Compile(String),
}

/// A snapshot that failed in the engine (restore, dump, digest) says so in its error.
impl From<EngineError> for memoria_admin::snapshot::SnapshotError {
    fn from(e: EngineError) -> Self {
        memoria_admin::snapshot::SnapshotError::Engine(e.to_string())
    }
}

fn trap(e: wasmtime::Error) -> EngineError {
    EngineError::Trap(format!("{e:#}"))
}

/// Compiled once per process; instances are cheap (~30 µs).
#[derive(Clone)]
pub struct EngineFactory {
    engine: Engine,
    component: Component,
    linker: std::sync::Arc<Linker<()>>,
}

impl EngineFactory {
    pub fn new() -> Result<Self, EngineError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        // MEMORIA_PERFMAP=1 writes /tmp/perf-<pid>.map so `perf report` names engine frames.
        if std::env::var_os("MEMORIA_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(|e| EngineError::Compile(format!("{e:#}")))?;
        let component = Component::new(&engine, ENGINE_COMPONENT).map_err(|e| EngineError::Compile(format!("{e:#}")))?;
        let linker = Linker::new(&engine);
        Ok(EngineFactory { engine, component, linker: std::sync::Arc::new(linker) })
    }

    /// A fresh, empty engine instance seeded with `seed`.
    pub fn instantiate(&self, seed: u64) -> Result<ShardEngine, EngineError> {
        let mut store = Store::new(&self.engine, ());
        // The engine is our own component, and one batch's output (its replies) may be far
        // larger than wasmtime's default cap on data a guest returns (128 MiB): past it the
        // call traps and the shard drops every client (a client pipelining GETs of big
        // values did that). Linear memory (≤ 4 GiB) bounds it instead.
        store.set_hostcall_fuel(usize::MAX);
        let inst = bindings::Engine::instantiate(&mut store, &self.component, &self.linker).map_err(trap)?;
        inst.call_init(&mut store, seed).map_err(trap)?;
        Ok(ShardEngine { store, inst, factory: self.clone() })
    }

    /// Imports of the component, for the zero-imports check.
    pub fn import_count(&self) -> usize {
        self.component.component_type().imports(&self.engine).count()
    }
}

pub struct ShardEngine {
    store: Store<()>,
    inst: bindings::Engine,
    /// To start over with an empty instance (a snapshot that failed halfway through).
    factory: EngineFactory,
}

pub struct DumpChunk {
    pub data: Vec<u8>,
    pub next_db: u32,
    pub next_cursor: u64,
    pub done: bool,
}

impl ShardEngine {
    /// Replaces this instance with a fresh, empty one.
    pub fn reset(&mut self, seed: u64) -> Result<(), EngineError> {
        *self = self.factory.instantiate(seed)?;
        Ok(())
    }

    pub fn execute(&mut self, batch: &[u8], now_us: i64, seed: u64) -> Result<Vec<u8>, EngineError> {
        self.inst.call_execute(&mut self.store, batch, now_us, seed).map_err(trap)
    }

    pub fn apply(&mut self, effects: &[u8], now_us: i64) -> Result<u32, EngineError> {
        self.inst.call_apply(&mut self.store, effects, now_us).map_err(trap)?.map_err(EngineError::Refused)
    }

    pub fn dump(&mut self, db: u32, cursor: u64, max_bytes: u32) -> Result<DumpChunk, EngineError> {
        let c = self.inst.call_dump(&mut self.store, db, cursor, max_bytes).map_err(trap)?;
        Ok(DumpChunk { data: c.data, next_db: c.next_db, next_cursor: c.next_cursor, done: c.done })
    }

    pub fn load(&mut self, chunk: &[u8]) -> Result<u32, EngineError> {
        self.inst.call_load(&mut self.store, chunk).map_err(trap)?.map_err(EngineError::Refused)
    }

    pub fn digest(&mut self) -> Result<Vec<u8>, EngineError> {
        self.inst.call_digest(&mut self.store).map_err(trap)
    }

    pub fn used_memory(&mut self) -> Result<u64, EngineError> {
        self.inst.call_used_memory(&mut self.store).map_err(trap)
    }

    pub fn key_count(&mut self) -> Result<u64, EngineError> {
        self.inst.call_key_count(&mut self.store).map_err(trap)
    }
}
