//! The WIT exports of the engine component. Only built for wasm32 with `component`.
//! std is linked solely for its allocator (dlmalloc) and panic handler (a trap): the
//! engine itself uses core + alloc, and the component imports one function: the clock
//! commands are timed with.

use core::cell::RefCell;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};
use std::vec::Vec;

use crate::Engine;

wit_bindgen::generate!({ path: "wit", world: "engine" });

/// Counts live heap bytes so `maxmemory` measures what the engine really holds.
struct CountingAlloc;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
            ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn used() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

std::thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut Engine) -> R) -> R {
    ENGINE.with(|e| {
        let mut e = e.borrow_mut();
        let eng = e.get_or_insert_with(|| new_engine(0));
        f(eng)
    })
}

fn new_engine(seed: u64) -> Engine {
    let mut x = Engine::new(seed);
    x.set_memory_probe(used);
    x.set_clock(monotonic_us);
    x
}

struct Component;

impl Guest for Component {
    fn init(seed: u64) {
        ENGINE.with(|e| *e.borrow_mut() = Some(new_engine(seed)));
    }

    fn execute(batch: Vec<u8>, now_us: i64, seed: u64) -> Vec<u8> {
        with(|e| e.execute(&batch, now_us, seed))
    }

    fn resume(now_us: i64) -> Vec<u8> {
        with(|e| e.resume(now_us))
    }

    fn apply(effects: Vec<u8>, now_us: i64) -> Result<u32, std::string::String> {
        with(|e| e.apply(&effects, now_us).map(|n| n as u32).map_err(|err| std::format!("{err}")))
    }

    fn dump(db: u32, cursor: u64, max_bytes: u32) -> DumpChunk {
        with(|e| {
            let c = e.dump(db, cursor, max_bytes as usize);
            DumpChunk { data: c.data, next_db: c.next_db, next_cursor: c.next_cursor, done: c.done }
        })
    }

    fn load(chunk: Vec<u8>) -> Result<u32, std::string::String> {
        with(|e| e.load(&chunk))
    }

    fn digest() -> Vec<u8> {
        with(|e| e.digest().to_vec())
    }

    fn used_memory() -> u64 {
        used() as u64
    }

    fn key_count() -> u64 {
        with(|e| e.total_keys() as u64)
    }

    fn metrics(labels: std::string::String) -> std::string::String {
        with(|e| e.metrics(&labels))
    }
}

export!(Component);
