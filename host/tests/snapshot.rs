//! Snapshots (issue #6): made off the serving path with the log's chain and marks
//! recomputed, verified by a restore before publication, restored by nodes with a
//! fallback to the previous snapshot, and the log truncated only behind published ones.

use std::time::Duration;

use memoria_host::durable;
use memoria_host::snapshot::schedule::{self, Policy, Runner};
use memoria_host::snapshot::{Made, MakeOptions, SnapshotError, SnapshotStore, Warm, format, make, make_warm, restore};
use memoria_host::wasm::{EngineFactory, ShardEngine};
use memoria_log::{LogApi, LogCore, LogHandle, NewEntry, Store};

const LOG: &str = "shard-0";
/// Small chunks, so a few thousand keys make several.
const SNAPSHOT_OPTS: MakeOptions = MakeOptions { chunk_bytes: 16 << 10, target: None };

fn published(made: Result<Made, SnapshotError>) -> memoria_host::snapshot::Manifest {
    match made.expect("snapshot") {
        Made::Published(m) => *m,
        other => panic!("nothing published: {other:?}"),
    }
}

struct Env {
    dir: tempfile::TempDir,
    api: LogHandle,
    core: LogCore,
    store: SnapshotStore,
    factory: EngineFactory,
    prev_id: u64,
    /// Every effect written, applied in order: the data set the log describes.
    reference: ShardEngine,
}

fn set(key: &[u8], val: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
    for a in [key, val] {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Env {
    async fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let core = LogCore::open_sqlite(dir.path().join("log.sqlite")).await.unwrap();
        let api = LogHandle::Embedded(core.clone());
        api.create(LOG).await.unwrap();
        let store = SnapshotStore::open(dir.path().join("snapshots").to_str().unwrap()).unwrap();
        let factory = EngineFactory::new().unwrap();
        let reference = factory.instantiate(1).unwrap();
        Env { dir, api, core, store, factory, prev_id: 0, reference }
    }

    /// A restarted log service on the same file: it reads every entry from the database
    /// (the one that wrote them serves its newest entries from memory).
    async fn reopen(&mut self) {
        self.core = LogCore::open_sqlite(self.dir.path().join("log.sqlite")).await.unwrap();
        self.api = LogHandle::Embedded(self.core.clone());
    }

    /// Appends `entries` data entries of `per` SETs each; keys cycle through `space`.
    async fn write(&mut self, entries: u64, per: u64, space: u64, round: u64) {
        let mut batch = Vec::new();
        for e in 0..entries {
            let mut fx = Vec::new();
            for i in 0..per {
                let n = (e * per + i) % space;
                fx.extend(set(format!("key:{n:012}").as_bytes(), format!("v{round}-{e}-{i}").as_bytes()));
            }
            self.reference.apply(&fx, 0).unwrap();
            batch.push(NewEntry::data(fx));
            if batch.len() == 500 {
                self.flush(&mut batch).await;
            }
        }
        self.flush(&mut batch).await;
    }

    async fn flush(&mut self, batch: &mut Vec<NewEntry>) {
        if batch.is_empty() {
            return;
        }
        self.prev_id = self.api.append(LOG, self.prev_id, 1, std::mem::take(batch)).await.unwrap().last_id;
    }

    async fn snapshot(&self) -> Result<Made, SnapshotError> {
        make(&self.factory, &self.api, LOG, &self.store, &SNAPSHOT_OPTS).await
    }

    async fn published(&self) -> memoria_host::snapshot::Manifest {
        published(self.snapshot().await)
    }

    /// As a scheduler takes them: starting from, and leaving, the engine kept in `warm`.
    async fn snapshot_warm(&self, warm: &mut Option<Warm>) -> Result<Made, SnapshotError> {
        make_warm(&self.factory, &self.api, LOG, &self.store, &SNAPSHOT_OPTS, warm).await
    }

    async fn published_warm(&self, warm: &mut Option<Warm>) -> memoria_host::snapshot::Manifest {
        published(self.snapshot_warm(warm).await)
    }

    /// A node's start: newest usable snapshot + the log after it; returns (digest, snapshot id).
    async fn node_start(&self) -> (Vec<u8>, u64) {
        let mut e = self.factory.instantiate(2).unwrap();
        let r = durable::replay_from_snapshot(&self.api, LOG, Some(&self.store), &mut e).await.expect("node start");
        assert_eq!(r.last_id, self.prev_id);
        let from = restore::newest_into(&self.store, &self.api, LOG, &mut self.factory.instantiate(3).unwrap()).await.unwrap().map_or(0, |m| m.last_id);
        (e.digest().unwrap(), from)
    }

    fn want(&mut self) -> Vec<u8> {
        self.reference.digest().unwrap()
    }

    fn chunk_file(&self, name: &str, index: u32) -> std::path::PathBuf {
        self.dir.path().join("snapshots").join(LOG).join("data").join(name).join(format!("{index:06}.chunk"))
    }

    /// Flips a byte in the middle of chunk `index` of snapshot `name`; returns the chunk as
    /// it was.
    fn damage_chunk(&self, name: &str, index: u32) -> Vec<u8> {
        let path = self.chunk_file(name, index);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        good
    }

    async fn sql(&self, q: &str) -> u64 {
        match self.core.store() {
            Store::Sqlite(s) => s.execute_raw(q).await.expect(q),
            Store::Pg(_) => unreachable!(),
        }
    }

    async fn names(&self) -> Vec<String> {
        self.store.manifests(LOG).await.unwrap().into_iter().map(|l| l.name).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_plus_log_restores_the_same_data_set() {
    let mut env = Env::new().await;
    // Crosses two checksum marks (every 1024 entries).
    env.write(2500, 4, 3000, 0).await;
    let a = env.published().await;
    assert_eq!(a.last_id, env.prev_id);
    assert_eq!(a.keys, 3000);
    assert!(a.chunks.len() > 3, "small chunk size gives several chunks");
    assert_eq!(a.base, None);
    assert_eq!(env.core.list().await.unwrap()[0].snapshot_id, a.last_id, "recorded in the log");
    let want = env.want();
    assert_eq!(env.node_start().await, (want.clone(), a.last_id));
    assert!(matches!(env.snapshot().await.unwrap(), Made::UpToDate { .. }));

    // More writes: the next snapshot builds on the first; nodes start from it.
    env.write(700, 3, 5000, 1).await;
    let b = env.published().await;
    assert_eq!(b.base.as_deref(), Some(a.name.as_str()));
    assert_eq!(b.replayed_entries, env.prev_id - a.last_id);
    env.write(50, 2, 5000, 2).await;
    let want = env.want();
    assert_eq!(env.node_start().await, (want, b.last_id));
}

/// A scheduler keeps the engine it verified and builds the next snapshot on it without
/// reading the store, but only while that is still the newest snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kept_engine_is_the_next_base_while_it_is_the_newest_snapshot() {
    let mut env = Env::new().await;
    let mut warm = None;
    env.write(400, 4, 2000, 0).await;
    let a = env.published_warm(&mut warm).await;
    assert_eq!(warm.as_ref().map(Warm::name), Some(a.name.as_str()));

    // Every chunk of A damaged in the store: a restore of A would fail, so B being built
    // on A shows the kept engine was used; its digest shows it held A's data.
    for i in 0..a.chunks.len() as u32 {
        env.damage_chunk(&a.name, i);
    }
    assert!(restore::load_into(&env.store, &a, &mut env.factory.instantiate(5).unwrap()).await.is_err());
    env.write(300, 3, 3000, 1).await;
    let b = env.published_warm(&mut warm).await;
    assert_eq!(b.base.as_deref(), Some(a.name.as_str()));
    assert_eq!(b.replayed_entries, env.prev_id - a.last_id);
    let want = env.want();
    assert_eq!(b.digest, format::hex(&want));
    assert_eq!(env.node_start().await, (want, b.last_id));
    assert!(matches!(env.snapshot_warm(&mut warm).await.unwrap(), Made::UpToDate { .. }));
    assert_eq!(warm.as_ref().map(Warm::name), Some(b.name.as_str()), "kept through a round with nothing to do");

    // Another process publishes C: the kept engine (B) is stale, and D restores C instead.
    env.write(100, 2, 3000, 2).await;
    let c = env.published().await;
    assert_eq!(c.base.as_deref(), Some(b.name.as_str()));
    env.write(100, 2, 3000, 3).await;
    let d = env.published_warm(&mut warm).await;
    assert_eq!(d.base.as_deref(), Some(c.name.as_str()));
    assert_eq!(d.replayed_entries, env.prev_id - c.last_id);
    let want = env.want();
    assert_eq!(d.digest, format::hex(&want));
    assert_eq!(warm.as_ref().map(Warm::name), Some(d.name.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_chunks_are_rejected_and_restore_falls_back() {
    let mut env = Env::new().await;
    env.write(300, 5, 1000, 0).await;
    let a = env.published().await;
    env.write(300, 5, 1500, 1).await;
    let b = env.published().await;
    env.write(10, 1, 1500, 2).await;
    let want = env.want();

    // A flipped byte in the middle of a chunk of the newest snapshot.
    let path = env.chunk_file(&b.name, 1);
    let good = env.damage_chunk(&b.name, 1);
    let mut e = env.factory.instantiate(5).unwrap();
    let err = restore::load_into(&env.store, &b, &mut e).await.unwrap_err();
    assert!(matches!(err, SnapshotError::Format(format::FormatError::Checksum { index: 1, .. })), "{err}");
    assert!(err.to_string().contains("chunk 1: checksum mismatch"), "clear error: {err}");
    assert_eq!(env.node_start().await, (want.clone(), a.last_id), "falls back to the previous snapshot");

    // A truncated chunk.
    std::fs::write(&path, &good[..good.len() - 7]).unwrap();
    let err = restore::load_into(&env.store, &b, &mut env.factory.instantiate(5).unwrap()).await.unwrap_err();
    assert!(matches!(err, SnapshotError::Format(format::FormatError::Truncated { index: 1, .. })), "{err}");
    assert_eq!(env.node_start().await, (want.clone(), a.last_id));

    // A chunk of another position (a valid chunk, misplaced).
    std::fs::copy(env.chunk_file(&b.name, 0), &path).unwrap();
    let err = restore::load_into(&env.store, &b, &mut env.factory.instantiate(5).unwrap()).await.unwrap_err();
    assert!(matches!(err, SnapshotError::Format(format::FormatError::WrongIndex { index: 1, found: 0 })), "{err}");

    // A missing chunk.
    std::fs::remove_file(&path).unwrap();
    assert!(restore::load_into(&env.store, &b, &mut env.factory.instantiate(5).unwrap()).await.is_err());
    assert_eq!(env.node_start().await, (want.clone(), a.last_id));

    // The next snapshot is built on the good one, and is current again.
    let c = env.published().await;
    assert_eq!(c.base.as_deref(), Some(a.name.as_str()));
    assert_eq!(env.node_start().await, (want, c.last_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_past_the_log_or_damaged_are_rejected() {
    let mut env = Env::new().await;
    env.write(200, 5, 800, 0).await;
    let a = env.published().await;
    env.write(20, 5, 800, 1).await;
    let want = env.want();

    // A manifest that claims more of the log than there is.
    let mut past = a.clone();
    past.last_id = env.prev_id + 1000;
    past.name = memoria_host::snapshot::manifest::snapshot_name(past.last_id, past.created_unix_ms);
    env.store.put_manifest(&mut past).await.unwrap();
    let err = restore::check_against_log(&env.api, &past).await.unwrap_err();
    assert!(matches!(err, SnapshotError::PastTail { .. }), "{err}");
    assert!(err.to_string().contains("past the log's tail"), "{err}");
    assert_eq!(env.node_start().await, (want.clone(), a.last_id));

    // A manifest whose log checksum is not this log's.
    let mut other = a.clone();
    other.last_id = a.last_id + 5;
    other.name = memoria_host::snapshot::manifest::snapshot_name(other.last_id, other.created_unix_ms);
    env.store.put_manifest(&mut other).await.unwrap();
    assert!(matches!(restore::check_against_log(&env.api, &other).await, Err(SnapshotError::NotThisLog { .. })));

    // An edited manifest (its own checksum catches it).
    let mut edited = a.clone();
    edited.last_id = a.last_id + 7;
    edited.name = memoria_host::snapshot::manifest::snapshot_name(edited.last_id, edited.created_unix_ms);
    let mut bytes = edited.clone().seal();
    let text = String::from_utf8(bytes.clone()).unwrap().replace(&format!("\"keys\": {}", a.keys), "\"keys\": 1");
    bytes = text.into_bytes();
    env.store.put_raw(&env.store.manifest_path(LOG, &edited.name), bytes).await.unwrap();
    let listed = env.store.manifests(LOG).await.unwrap();
    let damaged = listed.iter().find(|l| l.name == edited.name).unwrap();
    assert!(damaged.manifest.as_ref().is_err_and(|e| e.to_string().contains("checksum")));
    assert_eq!(env.node_start().await, (want, a.last_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_whose_chain_does_not_match_its_marks_is_refused() {
    let mut env = Env::new().await;
    env.write(500, 2, 400, 0).await;
    let a = env.published().await;
    env.write(1500, 2, 400, 1).await; // a mark lands at 1025 (a multiple of 1024 crossed)
    let marks: Vec<u64> = env
        .api
        .read(LOG, a.last_id, 10_000, Duration::ZERO)
        .await
        .unwrap()
        .entries
        .iter()
        .filter(|e| e.kind == memoria_log::Kind::ChecksumMark)
        .map(|e| e.id)
        .collect();
    assert!(!marks.is_empty());
    let mark = marks[0];

    // Rewrite the mark's payload and re-link everything after it, so every link is
    // consistent (the log service serves it) but the mark disagrees with the chain.
    let entries = env.api.read(LOG, mark - 1, 10_000, Duration::ZERO).await.unwrap().entries;
    let mut prev = env.api.read(LOG, mark - 2, 1, Duration::ZERO).await.unwrap().entries[0].checksum;
    for mut e in entries {
        if e.id == mark {
            e.payload = memoria_log::MarkPayload { id: mark - 1, checksum: memoria_log::Checksum([7; 32]) }.encode();
        }
        let sum = memoria_log::chain::expected(&prev, &e);
        let payload: String = e.payload.iter().map(|b| format!("{b:02x}")).collect();
        env.sql(&format!("UPDATE entries SET payload = X'{payload}', checksum = X'{}' WHERE log = '{LOG}' AND id = {}", sum.to_hex(), e.id)).await;
        prev = sum;
    }
    env.reopen().await;
    env.api.read(LOG, 0, 10_000, Duration::ZERO).await.expect("every link is consistent: the service serves it");
    let before = env.names().await;
    let err = env.snapshot().await.unwrap_err();
    assert!(matches!(err, SnapshotError::Mark { id, .. } if id == mark), "{err}");
    assert!(err.to_string().contains("checksum mark"), "{err}");
    assert_eq!(env.names().await, before, "nothing published");
    assert_eq!(env.store.data_names(LOG).await.unwrap(), vec![a.name.clone()], "nothing left behind");

    // A row altered without re-linking: the log service refuses to serve it.
    env.sql(&format!("UPDATE entries SET payload = X'00' WHERE log = '{LOG}' AND id = {}", mark + 10)).await;
    let err = env.snapshot().await.unwrap_err();
    assert!(matches!(err, SnapshotError::Log(memoria_log::LogError::Corrupt { .. })), "{err}");
    assert_eq!(env.names().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_never_removes_what_no_published_snapshot_covers() {
    let mut env = Env::new().await;
    let policy = Policy { min_log_bytes: 20_000, min_entries: 100, min_interval_ms: 0, margin_entries: 50, keep: 2, ..Policy::default() };
    let runner = Runner::in_process(env.factory.clone(), MakeOptions { chunk_bytes: 8 << 10, target: None });
    let mut state = schedule::Observed::default();
    // The log service refuses to truncate past the published snapshot by itself.
    env.write(100, 2, 300, 0).await;
    assert!(env.api.truncate(LOG, 50).await.is_err());

    let mut max_len = 0;
    let mut snapshots = 0;
    for round in 1..=12u64 {
        env.write(300, 3, 2000, round).await;
        if schedule::tick(&policy, &runner, &env.api, LOG, &env.store, &mut state).await.unwrap() == Some(true) {
            snapshots += 1;
        }
        let info = env.api.list().await.unwrap().into_iter().find(|i| i.name == LOG).unwrap();
        let published: Vec<u64> = env.store.manifests(LOG).await.unwrap().into_iter().filter_map(|l| l.manifest.ok()).map(|m| m.last_id).collect();
        // Every deleted entry (below first_id) is covered by a published snapshot, and
        // by the oldest kept one (the fallback), and the log still holds what follows it.
        if info.first_id > 1 {
            let oldest = *published.last().unwrap();
            assert!(info.first_id - 1 <= oldest, "round {round}: entries up to {} deleted, oldest kept snapshot covers {oldest}", info.first_id - 1);
            assert!(info.first_id - 1 <= info.snapshot_id);
        }
        assert!(published.len() <= 2);
        max_len = max_len.max(info.tail_id + 1 - info.first_id.max(1));
        let want = env.want();
        assert_eq!(env.node_start().await.0, want, "round {round}: snapshot + log give the data set");
    }
    assert!(snapshots >= 4, "{snapshots} snapshots");
    let info = env.api.list().await.unwrap().into_iter().find(|i| i.name == LOG).unwrap();
    assert!(info.first_id > 1000, "the log was truncated (first id {})", info.first_id);
    // Bounded: a few snapshot intervals, not the 3,700 entries written.
    assert!(max_len < 2000, "log grew to {max_len} entries");
}

type Node = (u16, tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>, memoria_host::server::Freezer);

/// A node on its own thread and runtime: (port, stop, thread, freezer).
fn start_node(api: LogHandle, store: Option<SnapshotStore>, replica_of: Option<String>) -> Node {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let t = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let opts = memoria_host::server::ServerOptions {
                bind: "127.0.0.1".into(),
                port: 0,
                data_dir: "/nonexistent".into(),
                limits: Default::default(),
                log: Some(api),
                node: "n".into(),
                replica_of,
                lease_ms: None,
                cluster: false,
                snapshots: store,
                auth: Default::default(),
            };
            let srv = memoria_host::server::start(opts).await.expect("node starts from snapshot + log");
            tx.send((srv.addr.port(), srv.freezer())).unwrap();
            let _ = stop_rx.await;
            srv.shutdown().await;
        });
    });
    let (port, freezer) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    (port, stop_tx, t, freezer)
}

/// Polls `f` on a fresh connection to `port` (a reloading replica closes its clients)
/// until it gives Some; a hang guard only.
fn poll_node<T>(port: u16, what: &str, mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<Option<T>>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last;
    loop {
        match redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().and_then(|mut c| f(&mut c)) {
            Ok(Some(v)) => return v,
            Ok(None) => last = "not yet".into(),
            Err(e) => last = e.to_string(),
        }
        assert!(std::time::Instant::now() < deadline, "{what} never happened (last: {last})");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running replica that falls behind the log's truncation (frozen while the log moves
/// on, a snapshot is published and the log truncated behind it) reloads from the snapshot
/// and tails on, instead of retrying a read that can never succeed. One without a
/// snapshot store keeps serving what it has and says why it stopped applying.
#[test]
fn a_replica_behind_the_truncation_reloads_from_the_snapshot() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut env = rt.block_on(async {
        let mut env = Env::new().await;
        env.write(400, 5, 1000, 0).await;
        env
    });
    let (port, stop, t, freezer) = start_node(env.api.clone(), Some(env.store.clone()), Some("127.0.0.1:1".into()));
    let (bare, bare_stop, bare_t, bare_freezer) = start_node(env.api.clone(), None, Some("127.0.0.1:1".into()));
    for p in [port, bare] {
        poll_node(p, "the replica catching up", |c| Ok((redis::cmd("DBSIZE").query::<u64>(c)? == 1000).then_some(())));
    }
    let thaw = freezer.freeze();
    let bare_thaw = bare_freezer.freeze();
    rt.block_on(async {
        env.write(3000, 5, 1000, 1).await;
        let a = env.published().await;
        env.write(100, 5, 1500, 2).await;
        env.api.truncate(LOG, a.last_id - 10).await.unwrap();
    });
    let _ = thaw.send(());
    let _ = bare_thaw.send(());
    // Without a store: still serving the round-0 data, and saying why it stopped.
    poll_node(bare, "the store-less replica reporting it stopped", |c| {
        Ok(redis::cmd("INFO")
            .arg("replication")
            .query::<String>(c)?
            .contains("memoria_apply_stopped:the log was truncated past this replica and no usable snapshot covers the gap")
            .then_some(()))
    });
    let v: String = poll_node(bare, "GET on the stopped replica", |c| redis::cmd("GET").arg("key:000000000499").query(c).map(Some));
    assert!(v.starts_with("v0-") || v.starts_with("v1-"), "{v}");
    let _ = bare_stop.send(());
    bare_t.join().unwrap();
    // The last writes of rounds 2 and 1 (keys 0-499 and 500-999).
    for (key, value) in [("key:000000000499", "v2-99-4"), ("key:000000000999", "v1-2999-4")] {
        poll_node(port, &format!("{key} = {value} on the replica"), |c| {
            Ok((redis::cmd("GET").arg(key).query::<Option<String>>(c)?.as_deref() == Some(value)).then_some(()))
        });
    }
    let n: u64 = poll_node(port, "DBSIZE", |c| redis::cmd("DBSIZE").query(c).map(Some));
    assert_eq!(n, 1000);
    // It tails on: a later write arrives too.
    rt.block_on(async {
        env.write(1, 1, 1, 3).await;
    });
    poll_node(port, "a write after the reload", |c| {
        Ok((redis::cmd("GET").arg("key:000000000000").query::<Option<String>>(c)?.as_deref() == Some("v3-0-0")).then_some(()))
    });
    let offset = format!("slave_repl_offset:{}", env.prev_id);
    poll_node(port, &format!("INFO replication saying {offset}"), |c| {
        Ok(redis::cmd("INFO").arg("replication").query::<String>(c)?.lines().any(|l| l.trim() == offset).then_some(()))
    });
    let _ = stop.send(());
    t.join().unwrap();
}

/// A node (primary) and a new replica start from the snapshot + log after truncation.
#[test]
fn nodes_and_new_replicas_start_from_the_snapshot() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (dir, api, store, keys) = rt.block_on(async {
        let mut env = Env::new().await;
        env.write(400, 5, 1000, 0).await;
        let a = env.published().await;
        env.write(100, 5, 1500, 1).await;
        env.api.truncate(LOG, a.last_id - 10).await.unwrap();
        let keys = env.reference.key_count().unwrap();
        (env.dir, env.api, env.store, keys)
    });
    let _keep = dir;
    let start = |replica_of: Option<String>| start_node(api.clone(), Some(store.clone()), replica_of);
    let (port, stop, t, _) = start(None);
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, keys);
    let v: String = redis::cmd("GET").arg("key:000000000499").query(&mut c).unwrap();
    assert!(v.starts_with("v1-"), "{v}");
    let (rport, rstop, rt_, _) = start(Some(format!("127.0.0.1:{port}")));
    let mut r = redis::Client::open(format!("redis://127.0.0.1:{rport}/")).unwrap().get_connection().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let n: u64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
        if n == keys {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "replica has {n} of {keys} keys");
        std::thread::sleep(Duration::from_millis(50));
    }
    let rv: String = redis::cmd("GET").arg("key:000000000499").query(&mut r).unwrap();
    assert_eq!(rv, v);
    for (s, t) in [(rstop, rt_), (stop, t)] {
        let _ = s.send(());
        t.join().unwrap();
    }
}
