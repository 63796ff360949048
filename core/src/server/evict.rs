//! maxmemory: refusing (noeviction) or evicting keys by the configured policy, sampling
//! like Redis does. Evictions are effects (DEL), so replicas evict the same keys.

use alloc::vec::Vec;

use crate::keyspace::object::NO_EXPIRE;
use crate::server::config::EvictionPolicy;
use crate::server::ctx::{Ctx, emit};

/// wasm32 linear memory tops out at 4 GiB and never shrinks; refuse single allocations
/// that would take the engine near it even when maxmemory is set higher or to 0. It is
/// also maxmemory's default, and INFO memory shows it.
pub const ENGINE_MEMORY_LIMIT: u64 = 3 << 30;

pub fn memory_ok(ctx: &Ctx<'_>) -> bool {
    let max = ctx.st.config.maxmemory;
    max == 0 || (ctx.st.used_memory() as u64) <= max
}

/// Whether a value of `size` more bytes may be allocated (a u64: on the wasm32 engine a
/// size past 4 GiB must be refused, not cut to its low 32 bits).
pub fn can_allocate(ctx: &Ctx<'_>, size: u64) -> bool {
    let used = ctx.st.used_memory() as u64;
    let max = ctx.st.config.maxmemory;
    let limit = if max == 0 { ENGINE_MEMORY_LIMIT } else { max.min(ENGINE_MEMORY_LIMIT) };
    used.saturating_add(size) <= limit
}

/// Whether a transient allocation of `size` bytes (freed before the command ends, as LCS's
/// table) fits in the engine: maxmemory does not apply (Redis does not count such memory
/// against it), the engine's end does.
pub fn within_hard_limit(ctx: &Ctx<'_>, size: u64) -> bool {
    (ctx.st.used_memory() as u64).saturating_add(size) <= ENGINE_MEMORY_LIMIT
}

/// Evicts until under maxmemory. False if over the limit and nothing (more) can go.
pub fn make_room(ctx: &mut Ctx<'_>) -> bool {
    // Nothing is evicted during CLIENT PAUSE (Redis skips eviction as if not needed).
    if memory_ok(ctx) || ctx.st.writes_paused() {
        return true;
    }
    let policy = ctx.st.config.policy;
    if policy == EvictionPolicy::NoEviction {
        return false;
    }
    let samples = ctx.st.config.maxmemory_samples;
    for _ in 0..100_000 {
        if memory_ok(ctx) {
            return true;
        }
        let Some((db, key)) = pick_victim(ctx, policy, samples) else { return false };
        ctx.st.delete(db, &key);
        ctx.st.stats.evicted_keys += 1;
        emit(ctx.fx, db, &[b"DEL", &key]);
        ctx.st.notify(crate::server::notify::EVICTED, "evicted", &key, db);
    }
    memory_ok(ctx)
}

fn pick_victim(ctx: &mut Ctx<'_>, policy: EvictionPolicy, samples: usize) -> Option<(usize, Vec<u8>)> {
    use EvictionPolicy::*;
    let volatile = matches!(policy, VolatileLru | VolatileLfu | VolatileRandom | VolatileTtl);
    let mut best: Option<(usize, Vec<u8>, i64)> = None;
    for db in 0..ctx.st.dbs.len() {
        let d = &ctx.st.dbs[db];
        let pool_len = if volatile { d.expires.len() } else { d.len() };
        if pool_len == 0 {
            continue;
        }
        let n = if matches!(policy, AllKeysRandom | VolatileRandom) { 1 } else { samples };
        for _ in 0..n {
            let key = if volatile { d.expires.random(&mut ctx.st.rng).map(|(k, _)| k) } else { d.keys.random(&mut ctx.st.rng).map(|(k, _)| k) };
            let Some(key) = key else { break };
            let Some(e) = d.keys.get(key) else { continue };
            // Lower score = better victim.
            let score = match policy {
                VolatileTtl => {
                    if e.expire_at == NO_EXPIRE {
                        continue;
                    }
                    e.expire_at
                }
                AllKeysRandom | VolatileRandom => 0,
                // The least frequently used (Redis: idle = 255 - count, the most idle goes).
                AllKeysLfu | VolatileLfu => ctx.st.lfu_count(e.lru) as i64,
                _ => e.lru as i64,
            };
            if best.as_ref().is_none_or(|b| score < b.2) {
                best = Some((db, key.to_vec(), score));
            }
        }
    }
    best.map(|(db, k, _)| (db, k))
}
