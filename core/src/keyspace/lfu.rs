//! Access frequency under an LFU `maxmemory-policy`, as Redis's evict.c keeps it: a key's
//! 24-bit access field holds the minute of its last decrement (16 bits) and a logarithmic
//! counter (8 bits). Under the other policies the same field holds the access clock in
//! seconds (LRU); switching policies reinterprets it, as in Redis.

/// The counter of a new key (so it is not evicted before it had a chance to be read).
pub const INIT_VAL: u32 = 5;

/// Redis's LFUGetTimeInMinutes: unix minutes, 16 bits.
pub fn minutes(now_ms: i64) -> u32 {
    ((now_ms.max(0) / 60_000) as u64 & 0xffff) as u32
}

/// The field of a key created now.
pub fn init(now_ms: i64) -> u32 {
    minutes(now_ms) << 8 | INIT_VAL
}

/// The field with `counter` as of now (RESTORE … FREQ).
pub fn with_counter(now_ms: i64, counter: u32) -> u32 {
    minutes(now_ms) << 8 | counter.min(255)
}

/// Minutes since `ldt`, the 16-bit clock wrapping as Redis's LFUTimeElapsed has it.
fn elapsed(ldt: u32, now: u32) -> u32 {
    if now >= ldt { now - ldt } else { 65535 - ldt + now }
}

/// Redis's LFUDecrAndReturn: the counter less one per `decay_minutes` since its last
/// decrement (0: no decay). What OBJECT FREQ shows and eviction compares.
pub fn decayed(field: u32, now_ms: i64, decay_minutes: u32) -> u32 {
    let (ldt, counter) = ((field >> 8) & 0xffff, field & 255);
    // Decay time 0: no decay.
    let periods = elapsed(ldt, minutes(now_ms)).checked_div(decay_minutes).unwrap_or(0);
    counter.saturating_sub(periods)
}

/// Redis's LFULogIncr: one more access makes the counter grow with probability
/// 1 / ((counter - INIT_VAL) * log_factor + 1); `r` is uniform in [0, 1).
pub fn log_incr(counter: u32, log_factor: u32, r: f64) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(INIT_VAL) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p { counter + 1 } else { counter }
}

/// Redis's updateLFU: the field after one access now.
pub fn touched(field: u32, now_ms: i64, decay_minutes: u32, log_factor: u32, r: f64) -> u32 {
    let c = log_incr(decayed(field, now_ms, decay_minutes), log_factor, r);
    minutes(now_ms) << 8 | c
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn a_new_key_starts_at_five_and_each_access_counts_with_log_factor_zero() {
        let mut f = init(10 * MIN);
        assert_eq!(decayed(f, 10 * MIN, 1), 5);
        for n in 1..=300u32 {
            f = touched(f, 10 * MIN, 1, 0, 0.999);
            assert_eq!(decayed(f, 10 * MIN, 1), (5 + n).min(255));
        }
    }

    #[test]
    fn the_counter_grows_logarithmically() {
        // With factor 10, past the initial value an access counts with p = 1/(base*10+1).
        assert_eq!(log_incr(5, 10, 0.99), 6);
        assert_eq!(log_incr(6, 10, 0.05), 7);
        assert_eq!(log_incr(6, 10, 0.1), 6);
        assert_eq!(log_incr(255, 0, 0.0), 255);
    }

    #[test]
    fn it_decays_one_per_period_and_the_minute_clock_wraps() {
        let f = with_counter(100 * MIN, 20);
        assert_eq!(decayed(f, 100 * MIN, 1), 20);
        assert_eq!(decayed(f, 107 * MIN, 1), 13);
        assert_eq!(decayed(f, 107 * MIN, 2), 17);
        assert_eq!(decayed(f, 200 * MIN, 1), 0);
        assert_eq!(decayed(f, 200 * MIN, 0), 20, "decay time 0: no decay");
        // Written at minute 65530, read 10 minutes later (the clock wrapped to 4).
        let f = with_counter(65530 * MIN, 30);
        assert_eq!(decayed(f, (65536 + 4) * MIN, 1), 30 - 9);
    }
}
