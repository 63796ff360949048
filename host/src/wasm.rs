//! The engine component under Wasmtime: one `Store` + instance per shard. A trap poisons
//! the instance ("cannot enter component instance"), so the owner rebuilds it.
//!
//! The watchdog: Wasmtime's epoch interruption. A thread advances the engine's epoch every
//! [`EPOCH_TICK`]; before each `execute` the store's deadline is set to the shard's
//! `engine-call-timeout`, so a call running past it traps ([`EngineError::Interrupted`])
//! wherever it is, and the shard fails the batch and rebuilds the engine from the log.
//! Other calls (replay, snapshots) have no deadline: their cost is the data's.

use thiserror::Error;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

mod bindings {
    wasmtime::component::bindgen!({ path: "../core/wit", world: "engine" });
}

/// The engine component built by build.rs (its one import: the command clock).
pub const ENGINE_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/engine.component.wasm"));

/// How often the epoch advances: the watchdog's resolution.
pub const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(10);

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("engine trapped: {0}")]
    Trap(String),
    #[error("engine call interrupted after {0} ms (engine-call-timeout)")]
    Interrupted(u64),
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
    /// Without the watchdog (`engine-call-timeout` off, the default).
    pub fn new() -> Result<Self, EngineError> {
        Self::with_watchdog(false)
    }

    /// `watchdog: false` compiles the engine without epoch checks: `engine-call-timeout`
    /// then has no effect (benches/watchdog.rs measures what the checks cost).
    pub fn with_watchdog(watchdog: bool) -> Result<Self, EngineError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        // The engine's Lua raises its errors as wasm exceptions (setjmp/longjmp lowered
        // by clang): core/build.rs.
        config.wasm_exceptions(true);
        // MEMORIA_PERFMAP=1 writes /tmp/perf-<pid>.map so `perf report` names engine frames.
        if std::env::var_os("MEMORIA_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        config.epoch_interruption(watchdog);
        let engine = Engine::new(&config).map_err(|e| EngineError::Compile(format!("{e:#}")))?;
        if watchdog {
            start_epoch_ticker(&engine).map_err(|e| EngineError::Compile(format!("starting the watchdog's clock: {e}")))?;
        }
        let component = Component::new(&engine, ENGINE_COMPONENT).map_err(|e| EngineError::Compile(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        linker.root().func_wrap("monotonic-us", |_, (): ()| Ok((monotonic_us(),))).map_err(|e| EngineError::Compile(format!("{e:#}")))?;
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
        store.set_epoch_deadline(NO_DEADLINE);
        let inst = bindings::Engine::instantiate(&mut store, &self.component, &self.linker).map_err(trap)?;
        inst.call_init(&mut store, seed).map_err(trap)?;
        Ok(ShardEngine { store, inst, factory: self.clone(), call_limit_ms: 0 })
    }

    /// The names of the component's imports (only the command clock: tests check it).
    pub fn import_names(&self) -> Vec<String> {
        self.component.component_type().imports(&self.engine).map(|(name, _)| name.to_string()).collect()
    }
}

/// The engine's command clock: µs since this process first read it (monotonic; only
/// differences are used).
fn monotonic_us() -> u64 {
    static START: std::sync::OnceLock<quanta::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(quanta::Instant::now);
    quanta::Instant::now().saturating_duration_since(start).as_micros() as u64
}

/// Ticks far enough away never to come (about 5.8 million years of 10 ms ticks).
const NO_DEADLINE: u64 = u64::MAX / 2;

/// Advances `engine`'s epoch every [`EPOCH_TICK`] for as long as the engine exists.
fn start_epoch_ticker(engine: &Engine) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new().name("engine-epoch".into()).spawn(move || {
        while let Some(e) = weak.upgrade() {
            e.increment_epoch();
            drop(e);
            std::thread::sleep(EPOCH_TICK);
        }
    })?;
    Ok(())
}

pub struct ShardEngine {
    store: Store<()>,
    inst: bindings::Engine,
    /// To start over with an empty instance (a snapshot that failed halfway through).
    factory: EngineFactory,
    /// `engine-call-timeout` for `execute`, in ms (0: none).
    call_limit_ms: u64,
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

    /// The watchdog's limit on each `execute` from now on (0: none).
    pub fn set_call_limit(&mut self, ms: u64) {
        self.call_limit_ms = ms;
    }

    pub fn execute(&mut self, batch: &[u8], now_us: i64, seed: u64) -> Result<Vec<u8>, EngineError> {
        self.with_call_limit(|inst, store| inst.call_execute(store, batch, now_us, seed))
    }

    /// Goes on with a script that yielded (see the engine's `resume`).
    pub fn resume(&mut self, now_us: i64) -> Result<Vec<u8>, EngineError> {
        self.with_call_limit(|inst, store| inst.call_resume(store, now_us))
    }

    /// Runs `call` under the watchdog's deadline (`set_call_limit`).
    fn with_call_limit(&mut self, call: impl FnOnce(&bindings::Engine, &mut Store<()>) -> wasmtime::Result<Vec<u8>>) -> Result<Vec<u8>, EngineError> {
        let ticks = match self.call_limit_ms {
            0 => NO_DEADLINE,
            // One tick more: the current one may be about to end.
            ms => ms.div_ceil(EPOCH_TICK.as_millis() as u64) + 1,
        };
        self.store.set_epoch_deadline(ticks);
        let r = call(&self.inst, &mut self.store);
        self.store.set_epoch_deadline(NO_DEADLINE);
        r.map_err(|e| match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => EngineError::Interrupted(self.call_limit_ms),
            _ => trap(e),
        })
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

    /// The engine's Prometheus families, each sample labelled with `labels`.
    pub fn metrics(&mut self, labels: &str) -> Result<String, EngineError> {
        self.inst.call_metrics(&mut self.store, labels).map_err(trap)
    }
}
