//! What INFO reports of the node's process, as lines filed under their section
//! (`stats.…`, `clients.…`, `memory.…`, `cpu.…`; the engine puts them there): what the
//! connection tasks count (Redis's stat_net_input_bytes, reads and writes processed,
//! instantaneous kbps, the clients' buffer peaks and memory), the resident memory and the
//! CPU times. Gathered at most once a second (they cost system calls) and sent with the
//! shard's role record.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

#[derive(Default)]
pub struct NodeStats {
    input_bytes: AtomicU64,
    output_bytes: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    /// The biggest query and output buffers a client had since the last gathering.
    peak_input: AtomicU64,
    peak_output: AtomicU64,
    /// Bytes the connections' query and output buffers hold (INFO's mem_clients_normal).
    client_buffers: AtomicU64,
    /// The last gathering: its totals, buffer peaks and lines.
    last: Mutex<Option<Gathered>>,
}

/// How often the lines are gathered again.
const EVERY_MS: u128 = 1000;
/// Gatherings a buffer peak is remembered for.
const PEAK_SLOTS: usize = 8;

struct Gathered {
    at: Instant,
    input: u64,
    output: u64,
    /// The buffer peaks of the last gatherings (Redis's CLIENTS_PEAK_MEM_USAGE_SLOTS:
    /// "recent" is about the last 8 seconds), newest last.
    peaks: Vec<(u64, u64)>,
    /// The lines gathered then.
    text: String,
}

impl NodeStats {
    /// A read from a client socket that returned `n` bytes, leaving `buffered` bytes in
    /// the client's query buffer.
    pub fn read(&self, n: usize, buffered: usize) {
        self.input_bytes.fetch_add(n as u64, Relaxed);
        self.reads.fetch_add(1, Relaxed);
        self.peak_input.fetch_max(buffered as u64, Relaxed);
    }

    /// A client's output buffer holds `pending` bytes.
    pub fn output_buffer(&self, pending: usize) {
        self.peak_output.fetch_max(pending as u64, Relaxed);
    }

    /// A write to a client socket that took `n` bytes.
    pub fn wrote(&self, n: usize) {
        self.output_bytes.fetch_add(n as u64, Relaxed);
        self.writes.fetch_add(1, Relaxed);
    }

    /// Appends the node's lines, gathered again when the last ones are a second old.
    pub fn lines(&self, rejected_connections: u64, t: &mut String) {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = last.as_ref()
            && now.duration_since(r.at).as_millis() < EVERY_MS
        {
            t.push_str(&r.text);
            return;
        }
        let (input, output) = (self.input_bytes.load(Relaxed), self.output_bytes.load(Relaxed));
        // The rates: bytes since the last gathering, per second.
        let (input_kbps, output_kbps) = match last.as_ref() {
            Some(r) => {
                let secs = now.duration_since(r.at).as_secs_f64();
                ((input - r.input) as f64 / secs / 1024.0, (output - r.output) as f64 / secs / 1024.0)
            }
            None => (0.0, 0.0),
        };
        let mut peaks = last.as_mut().map(|r| core::mem::take(&mut r.peaks)).unwrap_or_default();
        peaks.push((self.peak_input.swap(0, Relaxed), self.peak_output.swap(0, Relaxed)));
        if peaks.len() > PEAK_SLOTS {
            peaks.remove(0);
        }
        let (max_in, max_out) = peaks.iter().fold((0, 0), |(a, b), &(i, o)| (a.max(i), b.max(o)));
        let mut text = format!(
            "clients.client_recent_max_input_buffer:{max_in}\nclients.client_recent_max_output_buffer:{max_out}\nmemory.mem_clients_normal:{}\n",
            self.client_buffers.load(Relaxed)
        );
        text.push_str(&format!(
            "stats.total_net_input_bytes:{input}\nstats.total_net_output_bytes:{output}\nstats.instantaneous_input_kbps:{input_kbps:.2}\nstats.instantaneous_output_kbps:{output_kbps:.2}\nstats.rejected_connections:{rejected_connections}\nstats.total_reads_processed:{}\nstats.total_writes_processed:{}\n",
            self.reads.load(Relaxed),
            self.writes.load(Relaxed)
        ));
        if let Some(rss) = resident_bytes() {
            text.push_str(&format!("memory.used_memory_rss:{rss}\n"));
        }
        cpu_lines(&mut text);
        t.push_str(&text);
        *last = Some(Gathered { at: now, input, output, peaks, text });
    }
}

impl NodeStats {
    /// The connections' counters as Prometheus families (what INFO stats shows of them).
    pub fn prometheus(&self, labels: &str, out: &mut String) {
        use memoria_core::server::prometheus::family;
        let counters = [
            ("memoria_net_input_bytes_total", "Bytes read from clients (total_net_input_bytes).", &self.input_bytes),
            ("memoria_net_output_bytes_total", "Bytes written to clients (total_net_output_bytes).", &self.output_bytes),
            ("memoria_reads_processed_total", "Reads from client sockets (total_reads_processed).", &self.reads),
            ("memoria_writes_processed_total", "Writes to client sockets (total_writes_processed).", &self.writes),
        ];
        for (name, help, v) in counters {
            family(out, labels, name, "counter", help).sample("", &[], v.load(Relaxed));
        }
        family(out, labels, "memoria_client_buffers_bytes", "gauge", "Bytes the clients' query and output buffers hold (mem_clients_normal).").sample(
            "",
            &[],
            self.client_buffers.load(Relaxed),
        );
    }
}

/// The process's resident memory and CPU time, as Prometheus families.
pub fn process_prometheus(out: &mut String) {
    use memoria_core::server::prometheus::family;
    if let Some(rss) = resident_bytes() {
        family(out, "", "memoria_process_resident_memory_bytes", "gauge", "The node process's resident set (used_memory_rss).").sample("", &[], rss);
    }
    if let Some(u) = rusage(libc::RUSAGE_SELF) {
        let secs = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
        let mut f = family(out, "", "memoria_process_cpu_seconds_total", "counter", "CPU time of the node process (used_cpu_user, used_cpu_sys).");
        f.sample("", &[("mode", "user")], secs(u.ru_utime));
        f.sample("", &[("mode", "system")], secs(u.ru_stime));
    }
}

/// INFO's CPU section: the process's and its children's (snapshot processes) CPU time,
/// and the calling (shard) thread's as Redis's main thread (the engine runs on it).
fn cpu_lines(t: &mut String) {
    for (who, suffix) in [(libc::RUSAGE_SELF, ""), (libc::RUSAGE_CHILDREN, "_children"), (libc::RUSAGE_THREAD, "_main_thread")] {
        let Some(u) = rusage(who) else { continue };
        let tv = |v: libc::timeval| format!("{}.{:06}", v.tv_sec, v.tv_usec);
        t.push_str(&format!("cpu.used_cpu_sys{suffix}:{}\ncpu.used_cpu_user{suffix}:{}\n", tv(u.ru_stime), tv(u.ru_utime)));
    }
}

/// getrusage(`who`).
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(who, &mut u) } == 0).then_some(u)
}

/// One connection's share of `client_buffers`: it reports its buffers' capacity as it
/// changes, and takes it back when the connection ends.
pub struct BufferGauge<'a> {
    stats: &'a NodeStats,
    held: u64,
}

impl<'a> BufferGauge<'a> {
    pub fn new(stats: &'a NodeStats) -> Self {
        BufferGauge { stats, held: 0 }
    }

    /// The connection's buffers now hold `bytes`.
    pub fn set(&mut self, bytes: usize) {
        let bytes = bytes as u64;
        if bytes > self.held {
            self.stats.client_buffers.fetch_add(bytes - self.held, Relaxed);
        } else if bytes < self.held {
            self.stats.client_buffers.fetch_sub(self.held - bytes, Relaxed);
        }
        self.held = bytes;
    }
}

impl Drop for BufferGauge<'_> {
    fn drop(&mut self) {
        self.set(0);
    }
}

/// The process's resident set (Linux's /proc/self/statm, in pages).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system parameter.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| pages * page as u64)
}
