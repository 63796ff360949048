//! Hash-field expiry (Redis 7.4 / 8.0 API): exact replies and error texts, lazy and active
//! expiry, events, and the effects each command logs (absolute times, HDEL for removals).

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

fn ints(v: &[i64]) -> String {
    let mut s = arr(v.len());
    for n in v {
        s.push_str(&int(*n));
    }
    s
}

#[test]
fn hexpire_answers_per_field() {
    let mut h = H::new();
    let now = h.now_ms;
    ck(&mut h, "HEXPIRE nokey 10 FIELDS 2 a b", ints(&[-2, -2]));
    ck(&mut h, "HSET h a 1 b 2 c 3", int(3));
    ck(&mut h, "HEXPIRE h 100 FIELDS 2 a zz", ints(&[1, -2]));
    ck(&mut h, "HTTL h FIELDS 3 a b zz", ints(&[100, -1, -2]));
    ck(&mut h, "HPTTL h FIELDS 1 a", ints(&[100_000]));
    ck(&mut h, "HEXPIRETIME h FIELDS 1 a", ints(&[(now + 100_000 + 999) / 1000]));
    ck(&mut h, "HPEXPIRETIME h FIELDS 2 a b", ints(&[now + 100_000, -1]));
    // Conditions: NX only without a TTL, XX only with one, GT/LT against it (none is
    // infinite: GT never, LT always).
    ck(&mut h, "HEXPIRE h 50 NX FIELDS 2 a b", ints(&[0, 1]));
    ck(&mut h, "HEXPIRE h 500 XX FIELDS 2 a c", ints(&[1, 0]));
    ck(&mut h, "HEXPIRE h 400 GT FIELDS 2 a c", ints(&[0, 0]));
    ck(&mut h, "HEXPIRE h 600 GT FIELDS 1 a", ints(&[1]));
    ck(&mut h, "HEXPIRE h 700 LT FIELDS 2 a c", ints(&[0, 1]));
    ck(&mut h, "HTTL h FIELDS 3 a b c", ints(&[600, 50, 700]));
    // A time already passed removes the field (answer 2); the last field takes the key.
    ck(&mut h, "HPEXPIREAT h 1 FIELDS 1 b", ints(&[2]));
    ck(&mut h, "HEXPIRE h 0 FIELDS 2 a c", ints(&[2, 2]));
    ck(&mut h, "EXISTS h", int(0));
    ck(&mut h, "HPERSIST h FIELDS 1 a", ints(&[-2]));
}

#[test]
fn argument_errors_as_redis_words_them() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1", int(1));
    ck(&mut h, "SET s x", OK);
    ck(&mut h, "HEXPIRE s 10 FIELDS 1 a", err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    ck(&mut h, "HTTL s FIELDS 1 a", err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    ck(&mut h, "HEXPIRE h 10 FIELD 1 a", err("ERR Mandatory argument FIELDS is missing or not at the right position"));
    ck(&mut h, "HEXPIRE h 10 FIELDS 0 a", err("ERR Parameter `numFields` should be greater than 0"));
    ck(&mut h, "HEXPIRE h 10 FIELDS x a", err("ERR Parameter `numFields` should be greater than 0"));
    ck(&mut h, "HEXPIRE h 10 FIELDS 2 a", err("ERR The `numfields` parameter must match the number of arguments"));
    ck(&mut h, "HEXPIRE h -1 FIELDS 1 a", err("ERR invalid expire time, must be >= 0"));
    ck(&mut h, "HEXPIRE h abc FIELDS 1 a", err("ERR value is not an integer or out of range"));
    ck(&mut h, "HEXPIRE h 70368744177664 FIELDS 1 a", err("ERR invalid expire time in 'hexpire' command"));
    ck(&mut h, "HPEXPIREAT h 70368744177664 FIELDS 1 a", err("ERR invalid expire time in 'hpexpireat' command"));
    ck(&mut h, "HPEXPIREAT h 70368744177663 FIELDS 1 a", ints(&[1]));
    ck(&mut h, "HTTL h FIELDS 0 a", err("ERR Number of fields must be a positive integer"));
    ck(&mut h, "HPERSIST h FIELDS 2 a", err("ERR The `numfields` parameter must match the number of arguments"));
    ck(&mut h, "HGETDEL h FIELD 1 a", err("ERR Mandatory argument FIELDS is missing or not at the right position"));
    ck(&mut h, "HSETEX h EX 10 PX 10 FIELDS 1 a 1", err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"));
    ck(&mut h, "HSETEX h FNX FXX FIELDS 1 a 1", err("ERR Only one of FXX or FNX arguments can be specified"));
    ck(&mut h, "HSETEX h FIELDS 2 a 1", err("ERR wrong number of arguments for 'hsetex' command"));
    ck(&mut h, "HSETEX h FIELDS 0 a 1", err("ERR invalid number of fields"));
    ck(&mut h, "HSETEX h BOGUS FIELDS 1 a 1", err("ERR unknown argument: BOGUS"));
    ck(&mut h, "HGETEX h EX -5 FIELDS 1 a", err("ERR invalid expire time, must be >= 0"));
    ck(&mut h, "HEXPIRE h", err("ERR wrong number of arguments for 'hexpire' command"));
}

#[test]
fn expired_fields_vanish_lazily_and_actively() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET notify-keyspace-events Khg", OK);
    ck(&mut h, "HSET h a 1 b 2 c 3", int(3));
    ck(&mut h, "HPEXPIRE h 100 FIELDS 1 a", ints(&[1]));
    ck(&mut h, "HPEXPIRE h 200 FIELDS 1 b", ints(&[1]));
    ck(&mut h, "OBJECT ENCODING h", bulk("listpackex"));
    h.advance(100);
    // Lazily: the next command that looks at the hash sees it without `a`, and the
    // removal is logged as an HDEL.
    let mark = fx_len(&h);
    ck(&mut h, "HLEN h", int(2));
    assert_eq!(fx_since(&h, mark), ["0:HDEL h a"]);
    ck(&mut h, "HGETALL h", bulks(&["b", "2", "c", "3"]));
    // Actively: a tick removes `b` without any command touching the hash.
    h.advance(100);
    let mark = fx_len(&h);
    h.tick();
    assert_eq!(fx_since(&h, mark), ["0:HDEL h b"]);
    assert_eq!(
        h.e.st.dbs[0].keys.get(b"h".as_slice()).map(|e| match &e.val {
            memoria_core::keyspace::object::Value::Hash(x) => x.len(),
            _ => 0,
        }),
        Some(1)
    );
    // The hash without field TTLs left is a plain listpack again, and its last field
    // expiring takes the key.
    ck(&mut h, "OBJECT ENCODING h", bulk("listpack"));
    ck(&mut h, "HPEXPIRE h 10 FIELDS 1 c", ints(&[1]));
    h.advance(10);
    ck(&mut h, "HGET h c", NIL);
    ck(&mut h, "EXISTS h", int(0));
    assert!(h.c("INFO stats").contains("\r\nexpired_subkeys:3\r\n"));
}

#[test]
fn writes_keep_or_drop_ttls_as_redis_does() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1 b 2 n 5 f 1.5", int(4));
    ck(&mut h, "HEXPIRE h 100 FIELDS 4 a b n f", ints(&[1, 1, 1, 1]));
    // HSET replaces the field and its TTL; HINCRBY and HINCRBYFLOAT keep the TTL.
    ck(&mut h, "HSET h a 9", int(0));
    ck(&mut h, "HINCRBY h n 1", int(6));
    let mark = fx_len(&h);
    ck(&mut h, "HINCRBYFLOAT h f 1", bulk("2.5"));
    assert_eq!(fx_since(&h, mark), ["0:HSETEX h KEEPTTL FIELDS 1 f 2.5"]);
    ck(&mut h, "HTTL h FIELDS 4 a b n f", ints(&[-1, 100, 100, 100]));
    // HDEL forgets the TTL: a field set again has none.
    ck(&mut h, "HDEL h b", int(1));
    ck(&mut h, "HSETNX h b 3", int(1));
    ck(&mut h, "HTTL h FIELDS 1 b", ints(&[-1]));
    // COPY and RENAME keep field TTLs, and the new name expires actively too.
    ck(&mut h, "COPY h h2", int(1));
    ck(&mut h, "RENAME h h3", OK);
    ck(&mut h, "HTTL h3 FIELDS 1 n", ints(&[100]));
    ck(&mut h, "HTTL h2 FIELDS 1 n", ints(&[100]));
    h.advance(100_000);
    h.tick();
    assert_eq!(
        h.e.st.dbs[0].keys.get(b"h3".as_slice()).map(|e| match &e.val {
            memoria_core::keyspace::object::Value::Hash(x) => x.len(),
            _ => 0,
        }),
        Some(2)
    );
}

#[test]
fn effects_carry_absolute_times() {
    let mut h = H::new();
    let now = h.now_ms;
    ck(&mut h, "HSET h a 1 b 2 c 3", int(3));
    let mark = fx_len(&h);
    ck(&mut h, "HEXPIRE h 10 FIELDS 3 a zz b", ints(&[1, -2, 1]));
    ck(&mut h, "HEXPIRE h 10 NX FIELDS 1 a", ints(&[0]));
    ck(&mut h, "HPERSIST h FIELDS 2 b c", ints(&[1, -1]));
    ck(&mut h, "HGETEX h PX 50 FIELDS 2 c zz", format!("*2\r\n{}{NIL}", bulk("3")));
    ck(&mut h, "HGETEX h PERSIST FIELDS 1 c", format!("*1\r\n{}", bulk("3")));
    ck(&mut h, "HSETEX h FNX EX 5 FIELDS 1 d 4", int(1));
    ck(&mut h, "HSETEX h FNX EX 5 FIELDS 1 d 4", int(0));
    ck(&mut h, "HSETEX h FXX KEEPTTL FIELDS 1 d 5", int(1));
    ck(&mut h, "HGETDEL h FIELDS 2 b zz", format!("*2\r\n{}{NIL}", bulk("2")));
    ck(&mut h, "HGETEX h EX 0 FIELDS 1 c", format!("*1\r\n{}", bulk("3")));
    assert_eq!(
        fx_since(&h, mark),
        [
            format!("0:HPEXPIREAT h {} FIELDS 2 a b", now + 10_000),
            "0:HPERSIST h FIELDS 2 b c".to_string(),
            format!("0:HPEXPIREAT h {} FIELDS 1 c", now + 50),
            "0:HPERSIST h FIELDS 1 c".to_string(),
            format!("0:HSETEX h PXAT {} FIELDS 1 d 4", now + 5_000),
            "0:HSETEX h FXX KEEPTTL FIELDS 1 d 5".to_string(),
            "0:HDEL h b".to_string(),
            "0:HDEL h c".to_string(),
        ]
    );
    ck(&mut h, "HTTL h FIELDS 2 a d", ints(&[10, 5]));
    ck(&mut h, "HGETALL h", bulks(&["a", "1", "d", "5"]));
}

#[test]
fn a_replica_hides_expired_fields_until_the_primary_removes_them() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1 b 2", int(2));
    ck(&mut h, "HPEXPIRE h 100 FIELDS 1 a", ints(&[1]));
    // The same state on a replica: it applies the effects and serves reads.
    let mut r = H::new();
    r.e.apply(&h.effects, h.now_ms * 1000).unwrap();
    r.e.st.replica_mode = true;
    r.advance(100);
    ck(&mut r, "HGET h a", NIL);
    ck(&mut r, "HLEN h", int(1));
    ck(&mut r, "HGETALL h", bulks(&["b", "2"]));
    ck(&mut r, "HTTL h FIELDS 1 a", ints(&[-2]));
    ck(&mut r, "HRANDFIELD h 5", bulks(&["b"]));
    // Nothing was removed or logged: the primary's HDEL will do it.
    assert!(r.effects.is_empty());
    assert_eq!(
        r.e.st.dbs[0].keys.get(b"h".as_slice()).map(|e| match &e.val {
            memoria_core::keyspace::object::Value::Hash(x) => x.len(),
            _ => 0,
        }),
        Some(2)
    );
}

#[test]
fn snapshots_keep_field_ttls() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1 b 2", int(2));
    ck(&mut h, "HPEXPIRE h 5000 FIELDS 1 a", ints(&[1]));
    let mut restored = memoria_core::Engine::new(3);
    let c = h.e.dump(0, 0, 1 << 20);
    assert!(c.done);
    restored.load(&c.data).unwrap();
    assert_eq!(restored.digest(), h.e.digest());
    let mut r = H { e: restored, ..H::new() };
    ck(&mut r, "HPTTL h FIELDS 2 a b", ints(&[5000, -1]));
    // DUMP cannot carry them in Redis 7.0's format, so it says so rather than drop them.
    ck(&mut r, "DUMP h", err("ERR DUMP of a hash whose fields have TTLs is not supported (Redis 7.0's format has no field expiries)"));
}

#[test]
fn a_logged_sort_store_replays_to_the_same_value_after_the_fields_expired() {
    // SORT … STORE is logged as it ran; replayed after the field's TTL has passed (a
    // restart, a lagging replica), it must still see the field the primary saw.
    let mut h = H::new();
    ck(&mut h, "HSET w_1 f 5", int(1));
    ck(&mut h, "HPEXPIRE w_1 60000 FIELDS 1 f", ints(&[1]));
    ck(&mut h, "RPUSH l 1", int(1));
    ck(&mut h, "SORT l BY w_*->f GET w_*->f STORE dst", int(1));
    let mut replica = memoria_core::Engine::new(9);
    replica.apply(&h.effects, (h.now_ms + 120_000) * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
}

#[test]
fn reading_fields_needs_read_permission() {
    // HGETEX and HGETDEL return values: a write-only key pattern does not allow them.
    let mut h = H::new();
    ck(&mut h, "HSET secret f v", int(1));
    ck(&mut h, "ACL SETUSER w on nopass %W~secret* +@all", OK);
    ck(&mut h, "AUTH w x", OK);
    for c in ["HGETEX secret FIELDS 1 f", "HGETDEL secret FIELDS 1 f"] {
        let r = h.c(c);
        assert!(r.starts_with("-NOPERM"), "{c}: {r}");
    }
    ck(&mut h, "HSETEX secret FIELDS 1 f w", int(1));
}
