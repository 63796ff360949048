//! Restart from a snapshot (issue #6, acceptance 2): 1M keys (16-byte keys, 100-byte
//! values) written through the log, a snapshot, then 100k logged writes; a fresh engine
//! restored from the snapshot + the log after it must reach the digest of a full replay.
//! Reports the times of making the snapshot, restarting from it, and replaying the whole
//! log instead (target: restart ≤ 5 s on the dev VM).
//!
//!   cargo bench -p memoria-benches --bench snapshot [-- --keys 1000000 --writes 100000]

use std::time::Instant;

use memoria_host::durable;
use memoria_host::snapshot::{Made, MakeOptions, SnapshotStore, make};
use memoria_host::wasm::EngineFactory;
use memoria_log::{LogApi, LogCore, LogHandle, NewEntry};

const LOG: &str = "shard-0";

fn set(out: &mut Vec<u8>, key: &[u8], val: &[u8]) {
    out.push(0);
    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
    for a in [key, val] {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let keys = arg("--keys", 1_000_000);
    let writes = arg("--writes", 100_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let dir = tempfile::tempdir()?;
        let core = LogCore::open_sqlite(dir.path().join("log.sqlite")).await?;
        let api = LogHandle::Embedded(core);
        api.create(LOG).await?;
        let store = SnapshotStore::open(dir.path().join("snapshots").to_str().unwrap_or("snapshots"))?;
        let factory = EngineFactory::new()?;
        let val = |i: u64, round: u64| {
            let mut v = format!("{round}:{i}:").into_bytes();
            v.resize(100, b'x');
            v
        };
        let key = |i: u64| format!("key:{i:012}").into_bytes(); // 16 bytes

        // 1M keys as 10k data entries of 100 SETs, appended 100 entries at a time.
        let t = Instant::now();
        let mut prev = 0u64;
        let mut batch = Vec::new();
        for e in 0..keys.div_ceil(100) {
            let mut fx = Vec::with_capacity(100 * 140);
            for i in e * 100..((e + 1) * 100).min(keys) {
                set(&mut fx, &key(i), &val(i, 0));
            }
            batch.push(NewEntry::data(fx));
            if batch.len() == 100 {
                prev = api.append(LOG, prev, 1, std::mem::take(&mut batch)).await?.last_id;
            }
        }
        if !batch.is_empty() {
            prev = api.append(LOG, prev, 1, std::mem::take(&mut batch)).await?.last_id;
        }
        println!("loaded {keys} keys into the log ({prev} entries) in {:.2} s", t.elapsed().as_secs_f64());

        let t = Instant::now();
        let m = match make(&factory, &api, LOG, &store, &MakeOptions::default()).await? {
            Made::Published(m) => m,
            Made::UpToDate { .. } => anyhow::bail!("nothing to snapshot"),
        };
        let make_s = t.elapsed().as_secs_f64();
        println!("snapshot {}: {} keys, {} MB in {} chunks, made and verified in {make_s:.2} s", m.name, m.keys, m.data_bytes >> 20, m.chunks.len());

        // 100k writes after the snapshot, one SET per entry (overwrites spread over the keys).
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for chunk in 0..writes.div_ceil(1000) {
            let mut entries = Vec::with_capacity(1000);
            for j in chunk * 1000..((chunk + 1) * 1000).min(writes) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let mut fx = Vec::with_capacity(140);
                set(&mut fx, &key(rng % (keys + keys / 10)), &val(j, 1));
                entries.push(NewEntry::data(fx));
            }
            prev = api.append(LOG, prev, 1, entries).await?.last_id;
        }
        println!("{writes} logged writes after the snapshot (log tail {prev})");

        // Restart: a fresh engine from the snapshot + the log after it.
        let t = Instant::now();
        let mut eng = factory.instantiate(7)?;
        let r = durable::replay_from_snapshot(&api, LOG, Some(&store), &mut eng).await?;
        let restart_s = t.elapsed().as_secs_f64();
        let digest = eng.digest()?;
        let restored_keys = eng.key_count()?;
        drop(eng);

        // The reference: the whole log replayed into a fresh engine.
        let t = Instant::now();
        let mut full = factory.instantiate(8)?;
        let rf = memoria_host::replay::replay(&api, LOG, 0, &mut full).await?;
        let full_s = t.elapsed().as_secs_f64();
        let want = full.digest()?;
        anyhow::ensure!(r.last_id == rf.last_id && r.last_id == prev, "restart stopped at {} (full replay {}, tail {prev})", r.last_id, rf.last_id);
        anyhow::ensure!(digest == want, "digest after restart differs from the full replay");
        println!();
        println!("| phase | seconds |");
        println!("| --- | --- |");
        println!("| snapshot of {keys} keys (replay {} entries, dump, verify restore, publish) | {make_s:.2} |", m.replayed_entries);
        println!("| **restart: snapshot + {} log entries ({restored_keys} keys, digest identical)** | **{restart_s:.2}** (target ≤ 5) |", r.data_entries);
        println!("| full replay of the log ({} entries), for comparison | {full_s:.2} |", rf.data_entries);
        Ok(())
    })
}
