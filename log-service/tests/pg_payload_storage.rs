//! How PostgreSQL stores an entry's payload (migrations/postgres/0002_payload_lz4.sql):
//! lz4-compressed, kept in the heap up to a whole page instead of TOAST chunks from ~2 KB,
//! and every payload, compressible or not, small or large, read back byte for byte by a
//! service that did not write it.

mod common;

use std::time::Duration;

use memoria_log::{AppendRequest, LogCore, NewEntry};

/// Bytes no compressor shrinks (xorshift64*, fixed seed).
fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// What effects of many SETs look like to a compressor: a repeated command shape.
fn repetitive_bytes(n: usize) -> Vec<u8> {
    b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000012345\r\n$100\r\nxxxxxxxxxx".iter().copied().cycle().take(n).collect()
}

async fn append(core: &LogCore, prev_id: u64, payload: &[u8]) -> u64 {
    let entries = vec![NewEntry::data(payload.to_vec())];
    core.append("s", AppendRequest { prev_id, epoch: 1, prev_checksum: None, entries }).await.expect("append").last_id
}

/// Bytes in the entries table's TOAST relation (its file grows with the first chunk).
fn toast_bytes(pg: &common::PgInstance) -> u64 {
    pg.psql("SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'entries'").parse().expect("a size")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_are_compressed_kept_in_the_heap_up_to_a_page_and_read_back_exactly() {
    let pg = common::PgInstance::start();
    let core = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    core.create("s").await.expect("create");

    assert_eq!(pg.psql("SELECT attstorage::text || attcompression::text FROM pg_attribute WHERE attrelid = 'entries'::regclass AND attname = 'payload'"), "xl");
    assert_eq!(pg.psql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'entries'"), "toast_tuple_target=8160");

    // Rows that fit in a page once compressed (or as they are) stay out of TOAST: under the
    // first schema each of the last three went out of line from ~2 KB.
    let in_heap = [b"small".to_vec(), repetitive_bytes(5_000), random_bytes(7_000, 1), repetitive_bytes(60_000)];
    let mut prev = 0;
    for p in &in_heap {
        prev = append(&core, prev, p).await;
    }
    assert_eq!(toast_bytes(&pg), 0, "a payload that fits in a page went to TOAST");
    let stored: Vec<i64> =
        pg.psql("SELECT pg_column_size(payload) FROM entries WHERE log = 's' AND kind = 1 ORDER BY id").lines().map(|l| l.parse().expect("a size")).collect();
    assert!(stored[3] < 8_000, "60 KB of repeated effects stored as {} bytes: not compressed", stored[3]);
    assert!(stored[2] >= 7_000, "random bytes cannot shrink ({} stored)", stored[2]);

    // Larger than a page even compressed: out of line, as before.
    let large = [random_bytes(200_000, 2), repetitive_bytes(3 << 20)];
    for p in &large {
        prev = append(&core, prev, p).await;
    }
    assert!(toast_bytes(&pg) > 0, "a 200 KB random payload must go to TOAST");

    // A service that did not write them reads every payload from the database.
    let fresh = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    let read = common::read_all(&fresh, "s").await;
    let data: Vec<&[u8]> = read.iter().filter(|e| e.kind == memoria_log::Kind::Data).map(|e| &e.payload[..]).collect();
    let want: Vec<&[u8]> = in_heap.iter().chain(large.iter()).map(|p| &p[..]).collect();
    assert_eq!(data.len(), want.len());
    for (i, (got, want)) in data.iter().zip(&want).enumerate() {
        assert!(got == want, "payload {i} ({} bytes) read back as {} different bytes", want.len(), got.len());
    }
    assert_eq!(fresh.verify("s").await.expect("the chain verifies").tail_id, prev);
    assert!(fresh.read("s", prev, 1, Duration::ZERO).await.expect("read at the end").entries.is_empty());
}

/// A log written under the first schema (uncompressed TOAST chunks from ~2 KB) is read back
/// after the migration runs on it, and appends go on from where it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_keeps_what_the_first_schema_stored() {
    let pg = common::PgInstance::start();
    let core = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    // Back to the catalog as migration 0001 left it, with 0002 not yet applied.
    pg.psql(
        "ALTER TABLE entries ALTER COLUMN payload SET STORAGE EXTERNAL, ALTER COLUMN payload SET COMPRESSION default; \
         ALTER TABLE entries RESET (toast_tuple_target); DELETE FROM _sqlx_migrations WHERE version = 2",
    );
    core.create("s").await.expect("create");
    let old = [repetitive_bytes(5_000), random_bytes(7_000, 3), repetitive_bytes(60_000)];
    let mut prev = 0;
    for p in &old {
        prev = append(&core, prev, p).await;
    }
    assert!(toast_bytes(&pg) > 0, "the first schema stores these out of line");
    drop(core);

    // The next service to start applies 0002 to the existing table.
    let upgraded = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect and migrate");
    assert_eq!(pg.psql("SELECT count(*) FROM _sqlx_migrations WHERE version = 2 AND success"), "1");
    assert_eq!(pg.psql("SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'entries'::regclass AND attname = 'payload'"), "l");
    let new = repetitive_bytes(60_000);
    let last = upgraded.append("s", AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries: vec![NewEntry::data(new.clone())] }).await;
    let last = last.expect("an append after the migration continues the chain").last_id;

    let fresh = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    let read = common::read_all(&fresh, "s").await;
    let data: Vec<&[u8]> = read.iter().filter(|e| e.kind == memoria_log::Kind::Data).map(|e| &e.payload[..]).collect();
    let want: Vec<&[u8]> = old.iter().map(|p| &p[..]).chain([&new[..]]).collect();
    assert!(data == want, "payloads written before the migration, or after it, read back differently");
    assert_eq!(fresh.verify("s").await.expect("the chain verifies").tail_id, last);
}
