//! Shared code of the fuzz targets: the structured command batches of the engine target
//! (decoded with `arbitrary`, and encoded back for the seed corpus), the checks each
//! target makes, and a counting allocator so the engine's maxmemory logic sees real
//! numbers (as the component's allocator gives it in production).

pub mod engine;
pub mod framing;
pub mod log;
pub mod reply;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes currently allocated through the Rust allocator (the engine's heap, plus the
/// harness's own small buffers).
static IN_USE: AtomicUsize = AtomicUsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            IN_USE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        IN_USE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            IN_USE.fetch_sub(l.size(), Ordering::Relaxed);
            IN_USE.fetch_add(new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

pub fn memory_in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}
