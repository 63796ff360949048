//! Keeping the snapshot process from hurting the serving nodes beside it.
//!
//! CPU and memory: a snapshot streams the whole data set through memory several times
//! (restore, dump, verification restore). On a small machine that traffic slows a serving
//! node on the next core even when the snapshot runs at idle priority, since memory
//! bandwidth and the shared cache have no priorities. So the snapshot works at most a set
//! share of the time and sleeps in between ([`Duty`]), as PostgreSQL's vacuum cost delay
//! or RocksDB's compaction rate limiter do: snapshots take longer, serving does not slow.
//!
//! Disk: a chunk written whole and then fsynced leaves megabytes of dirty pages that the
//! kernel writes back in one burst; on ext4 (data=ordered) a log fsync that commits the
//! journal meanwhile waits behind that burst, and every acknowledged write waits for that
//! fsync. So, like RocksDB's `bytes_per_sync`: the chunk is written in pieces, each
//! piece's writeback is started at once (`sync_file_range`) and the one before it waited
//! for, so at most two pieces are ever dirty.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the snapshot work of this process is paced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    /// Bytes of a chunk written between two writeback hand-offs (0: the whole chunk at
    /// once).
    pub sync_bytes: usize,
    /// Most share of wall time spent working, in (0, 1]; 1 never sleeps.
    pub cpu_share: f64,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing { sync_bytes: 1 << 20, cpu_share: 1.0 }
    }
}

/// Work at most `share` of the time: after each step, sleep in proportion to how long the
/// step took (`worked × (1 − share) / share`).
pub struct Duty {
    share: f64,
    since: Instant,
}

impl Duty {
    pub fn new(share: f64) -> Duty {
        let share = if share.is_finite() && share > 0.0 { share.min(1.0) } else { 1.0 };
        Duty { share, since: Instant::now() }
    }

    /// How long to rest after working `worked`.
    pub fn rest_after(&self, worked: Duration) -> Duration {
        if self.share >= 1.0 {
            return Duration::ZERO;
        }
        worked.mul_f64((1.0 - self.share) / self.share)
    }

    /// Ends a step of work: rests as long as the share asks, then starts the next step.
    pub async fn step(&mut self) {
        let rest = self.rest_after(self.since.elapsed());
        if !rest.is_zero() {
            tokio::time::sleep(rest).await;
        }
        self.since = Instant::now();
    }
}

/// Writes `bytes` to `path` atomically (a staging file renamed over it, then the directory
/// synced): a reader sees the whole chunk or none.
pub fn write_file(path: &Path, bytes: &[u8], pacing: Pacing) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("chunk path has no directory"))?;
    std::fs::create_dir_all(dir)?;
    // object_store's local store skips names with a '#' suffix in listings: a staging file
    // left by a crash is never taken for a chunk.
    let staging = staging_name(path);
    let r = write_staged(&staging, bytes, pacing).and_then(|()| std::fs::rename(&staging, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&staging);
    }
    r?;
    std::fs::File::open(dir)?.sync_all()
}

fn staging_name(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!("#{}", std::process::id()));
    PathBuf::from(s)
}

fn write_staged(staging: &Path, bytes: &[u8], pacing: Pacing) -> std::io::Result<()> {
    let mut f = std::fs::File::create(staging)?;
    let piece = if pacing.sync_bytes == 0 { bytes.len().max(1) } else { pacing.sync_bytes };
    let mut off = 0usize;
    let mut prev: Option<(usize, usize)> = None;
    for part in bytes.chunks(piece) {
        f.write_all(part)?;
        start_writeback(&f, off, part.len());
        if let Some((o, n)) = prev {
            wait_writeback(&f, o, n)?;
        }
        prev = Some((off, part.len()));
        off += part.len();
    }
    f.sync_all()
}

#[cfg(target_os = "linux")]
fn start_writeback(f: &std::fs::File, off: usize, len: usize) {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain syscall on an open descriptor; a failure only loses the early start.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), off as i64, len as i64, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(target_os = "linux")]
fn wait_writeback(f: &std::fs::File, off: usize, len: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: as above.
    let r = unsafe { libc::sync_file_range(f.as_raw_fd(), off as i64, len as i64, flags) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_f: &std::fs::File, _off: usize, _len: usize) {}

#[cfg(not(target_os = "linux"))]
fn wait_writeback(f: &std::fs::File, _off: usize, _len: usize) -> std::io::Result<()> {
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_whole_chunk_in_pieces_and_leaves_no_staging_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/000001.chunk");
        let bytes: Vec<u8> = (0..(3 << 20) + 12345).map(|i| (i * 7 % 251) as u8).collect();
        write_file(&path, &bytes, Pacing { sync_bytes: 256 << 10, cpu_share: 1.0 }).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("000001.chunk")]);
        // Overwriting replaces the whole file.
        write_file(&path, b"short", Pacing { sync_bytes: 0, cpu_share: 1.0 }).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"short");
    }

    #[test]
    fn an_empty_chunk_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.chunk");
        write_file(&path, b"", Pacing::default()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    }

    #[test]
    fn a_share_rests_in_proportion_to_the_work() {
        // The arithmetic, not a timing test: a quarter share rests three times the work.
        assert_eq!(Duty::new(0.25).rest_after(Duration::from_millis(100)), Duration::from_millis(300));
        assert_eq!(Duty::new(0.5).rest_after(Duration::from_millis(40)), Duration::from_millis(40));
        assert_eq!(Duty::new(1.0).rest_after(Duration::from_secs(9)), Duration::ZERO);
        // Nonsense shares mean no limit rather than a process that never wakes.
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Duty::new(bad).rest_after(Duration::from_secs(1)), Duration::ZERO);
        }
        assert_eq!(Duty::new(7.0).rest_after(Duration::from_secs(1)), Duration::ZERO);
    }
}
