//! Stream commands (Redis 7.0's t_stream.c): XADD, XRANGE/XREVRANGE, XLEN, XDEL, XTRIM,
//! XREAD, consumer groups (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM),
//! XSETID and XINFO.
//!
//! Effects, like Redis's propagation: XADD carries the concrete id (never `*`) and an
//! approximate trim becomes an exact one (`MAXLEN = <length>` / `MINID = <first id>`);
//! XREADGROUP, XCLAIM and XAUTOCLAIM become `XCLAIM … TIME <ms> RETRYCOUNT <n> FORCE
//! JUSTID LASTID <id>` per pending entry they create, move or drop, plus `XGROUP SETID …
//! ENTRIESREAD <n>` when the group's last delivered id moves, and `XGROUP CREATECONSUMER`
//! when they create a consumer. Times come from the host's clock (`now`), so replaying
//! the effects rebuilds the same groups. Unlike Redis, a history read (XREADGROUP with an
//! explicit id) also replicates the delivery counters it bumps.

use alloc::vec::Vec;

use crate::keyspace::object::Value;
use crate::protocol::reply::Reply;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::server::state::State;
use crate::types::stream::{AppendError, Entry, Group, INVALID_ENTRIES_READ, IdParse, Nack, Stream, StreamId, TrimArgs, TrimStrategy, lp::Ele};
use crate::util::{int_bytes, parse_i64};

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The argument as C code sees it: up to the first NUL.
fn cs(a: &[u8]) -> &[u8] {
    match a.iter().position(|&b| b == 0) {
        Some(p) => &a[..p],
        None => a,
    }
}

/// Case-insensitive keyword match (strcasecmp on the C string).
fn kw(a: &[u8], k: &[u8]) -> bool {
    crate::util::c_eq_ic(a, k)
}

const STRICT: IdParse = IdParse { strict: true, missing_seq: 0, allow_auto_seq: false };
const LOOSE: IdParse = IdParse { strict: false, missing_seq: 0, allow_auto_seq: false };

fn parse_strict(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    match crate::types::stream::parse_id(a, &STRICT) {
        Some((id, _)) => Some(id),
        None => {
            ctx.err(INVALID_ID);
            None
        }
    }
}

/// Redis's streamParseIntervalIDOrReply: `(id` is exclusive (and strict).
fn parse_interval(ctx: &mut Ctx<'_>, a: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    let exclusive = a.len() > 1 && a[0] == b'(';
    let parsed = if exclusive {
        crate::types::stream::parse_id(&a[1..], &IdParse { strict: true, missing_seq, allow_auto_seq: false })
    } else {
        crate::types::stream::parse_id(a, &IdParse { strict: false, missing_seq, allow_auto_seq: false })
    };
    match parsed {
        Some((id, _)) => Some((id, exclusive)),
        None => {
            ctx.err(INVALID_ID);
            None
        }
    }
}

fn parse_start(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    let (id, ex) = parse_interval(ctx, a, 0)?;
    if !ex {
        return Some(id);
    }
    match id.incr() {
        Some(id) => Some(id),
        None => {
            ctx.err("ERR invalid start ID for the interval");
            None
        }
    }
}

fn parse_end(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<StreamId> {
    let (id, ex) = parse_interval(ctx, a, u64::MAX)?;
    if !ex {
        return Some(id);
    }
    match id.decr() {
        Some(id) => Some(id),
        None => {
            ctx.err("ERR invalid end ID for the interval");
            None
        }
    }
}

/// Builds an error message around argument bytes (keys and names may be any bytes).
fn err_fmt(ctx: &mut Ctx<'_>, parts: &[&[u8]]) {
    let mut m = Vec::new();
    for p in parts {
        m.extend_from_slice(p);
    }
    ctx.reply.error(&m);
}

/// Checks `key`: Ok(true) if it holds a stream, Ok(false) if missing, Err after the
/// WRONGTYPE reply. `write` looks it up as a write (no hit/miss accounting).
fn lookup(ctx: &mut Ctx<'_>, key: &[u8], write: bool) -> Result<bool, ()> {
    ctx.lookup_kind(key, crate::keyspace::object::Kind::Stream, write)
}

/// The stream at `key` (checked by `lookup`).
fn get<'s>(st: &'s State, db: usize, key: &[u8]) -> &'s Stream {
    match st.dbs[db].keys.get(key).map(|e| &e.val) {
        Some(Value::Stream(s)) => s,
        _ => unreachable!("stream looked up before"),
    }
}

fn get_mut<'s>(st: &'s mut State, db: usize, key: &[u8]) -> &'s mut Stream {
    match st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
        Some(Value::Stream(s)) => s,
        _ => unreachable!("stream looked up before"),
    }
}

fn reply_id(r: &mut Reply, id: StreamId) {
    r.bulk(&id.to_bytes());
}

fn reply_ele(r: &mut Reply, e: Ele<'_>) {
    match e {
        Ele::Str(s) => r.bulk(s),
        Ele::Int(i) => r.bulk_int(i),
    }
}

/// `[id, [field, value, …]]`.
fn reply_entry(r: &mut Reply, e: &Entry<'_>) {
    r.array(2);
    reply_id(r, e.id);
    r.array(e.numfields() * 2);
    e.for_each(|f, v| {
        reply_ele(r, f);
        reply_ele(r, v);
    });
}

/// Replies with the entries in [start, end] (at most `count`, 0 = all); returns how many.
fn reply_range(r: &mut Reply, s: &Stream, start: StreamId, end: StreamId, count: usize, rev: bool) -> usize {
    let mut body = Reply::with(Vec::new(), r.resp3);
    let mut n = 0;
    s.scan(start, end, rev, false, |e| {
        reply_entry(&mut body, e);
        n += 1;
        count == 0 || n < count
    });
    r.array(n);
    r.buf.extend_from_slice(&body.buf);
    n
}

// ---------- XADD / XTRIM ----------

struct AddTrim {
    trim: TrimArgs,
    /// Index of the MAXLEN/MINID value argument.
    trim_arg: usize,
    /// XADD: the id argument's index (argc when missing).
    id_pos: usize,
    id: Option<(StreamId, bool)>,
    no_mkstream: bool,
}

/// Redis's streamParseAddOrTrimArgsOrReply.
fn parse_add_trim(ctx: &mut Ctx<'_>, argv: &[&[u8]], xadd: bool) -> Option<AddTrim> {
    let argc = argv.len();
    let mut p = AddTrim { trim: TrimArgs { strategy: TrimStrategy::None, approx: false, limit: 0 }, trim_arg: 0, id_pos: argc, id: None, no_mkstream: false };
    let mut limit_given = false;
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = argv[i];
        if xadd && cs(opt) == b"*" {
            break;
        } else if (kw(opt, b"maxlen") || kw(opt, b"minid")) && more > 0 {
            if p.trim.strategy != TrimStrategy::None {
                ctx.err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
                return None;
            }
            p.trim.approx = false;
            let next = cs(argv[i + 1]);
            if more >= 2 && next == b"~" {
                p.trim.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if kw(opt, b"maxlen") {
                let maxlen = ctx.int_arg(argv[i + 1])?;
                if maxlen < 0 {
                    ctx.err("ERR The MAXLEN argument must be >= 0.");
                    return None;
                }
                p.trim.strategy = TrimStrategy::MaxLen(maxlen as u64);
            } else {
                p.trim.strategy = TrimStrategy::MinId(parse_strict(ctx, argv[i + 1])?);
            }
            i += 1;
            p.trim_arg = i;
        } else if kw(opt, b"limit") && more > 0 {
            let limit = ctx.int_arg(argv[i + 1])?;
            if limit < 0 {
                ctx.err("ERR The LIMIT argument must be >= 0.");
                return None;
            }
            p.trim.limit = limit;
            limit_given = true;
            i += 1;
        } else if xadd && kw(opt, b"nomkstream") {
            p.no_mkstream = true;
        } else if xadd {
            let how = IdParse { strict: true, missing_seq: 0, allow_auto_seq: true };
            match crate::types::stream::parse_id(opt, &how) {
                Some(x) => p.id = Some(x),
                None => {
                    ctx.err(INVALID_ID);
                    return None;
                }
            }
            break;
        } else {
            ctx.syntax_error();
            return None;
        }
        i += 1;
    }
    p.id_pos = i;
    if p.trim.limit != 0 && p.trim.strategy == TrimStrategy::None {
        ctx.err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return None;
    }
    if !xadd && p.trim.strategy == TrimStrategy::None {
        ctx.err("ERR syntax error, XTRIM must be called with a trimming strategy");
        return None;
    }
    if ctx.st.applying {
        // A primary's effects are always exact.
        p.trim.limit = 0;
    } else if limit_given {
        if !p.trim.approx {
            ctx.err("ERR syntax error, LIMIT cannot be used without the special ~ option");
            return None;
        }
    } else if p.trim.approx {
        let l = ctx.st.config.stream_node_max_entries.saturating_mul(100);
        p.trim.limit = if l <= 0 { 10000 } else { l.min(1_000_000) };
    } else {
        p.trim.limit = 0;
    }
    Some(p)
}

/// The MAXLEN/MINID pair an effect carries: exact, with the value after trimming when the
/// command trimmed approximately.
fn trim_effect_args(p: &AddTrim, argv: &[&[u8]], s: &Stream) -> (&'static [u8], Vec<u8>) {
    match p.trim.strategy {
        TrimStrategy::MaxLen(_) => (b"MAXLEN", if p.trim.approx { int_bytes(s.length as i64) } else { argv[p.trim_arg].to_vec() }),
        _ => (
            b"MINID",
            if p.trim.approx {
                // The first entry, tombstones included (Redis's streamGetEdgeID(s,1,0)):
                // an exact trim to it removes exactly the nodes this one removed.
                s.edge_id(true, true).unwrap_or(StreamId::MAX).to_bytes()
            } else {
                argv[p.trim_arg].to_vec()
            },
        ),
    }
}

pub fn xadd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(p) = parse_add_trim(ctx, argv, true) else { return };
    let field_pos = p.id_pos + 1;
    if argv.len() < field_pos + 2 || (argv.len() - field_pos) % 2 == 1 {
        return ctx.err("ERR wrong number of arguments for 'xadd' command");
    }
    if let Some((id, true)) = p.id
        && id.is_zero()
    {
        return ctx.err("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = argv[1];
    let db = ctx.db();
    match lookup(ctx, key, true) {
        Err(()) => return,
        Ok(true) => {}
        Ok(false) if p.no_mkstream => return ctx.reply.null(),
        Ok(false) => {
            let lru = ctx.lru();
            ctx.st.dbs[db].add(key, Value::Stream(alloc::boxed::Box::default()), lru);
        }
    }
    let now = ctx.st.now_ms.max(0) as u64;
    let (max_bytes, max_entries) = (ctx.st.config.stream_node_max_bytes, ctx.st.config.stream_node_max_entries);
    let s = get_mut(ctx.st, db, key);
    if s.last_id == StreamId::MAX {
        return ctx.err("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let id = match p.id {
        Some((id, true)) => Some(id),
        Some((id, false)) => {
            if s.last_id.ms == id.ms {
                if s.last_id.seq == u64::MAX { None } else { Some(StreamId::new(id.ms, s.last_id.seq + 1)) }
            } else {
                Some(id)
            }
        }
        // streamNextID: the clock, never going back.
        None => Some(if now > s.last_id.ms { StreamId::new(now, 0) } else { s.last_id.incr().unwrap_or(StreamId::MIN) }),
    };
    let fields = &argv[field_pos..];
    let res = match id {
        Some(id) => s.append(id, fields, max_bytes, max_entries),
        None => Err(AppendError::NotGreater),
    };
    match res {
        Err(AppendError::NotGreater) => return ctx.err("ERR The ID specified in XADD is equal or smaller than the target stream top item"),
        Err(AppendError::TooLarge) => return ctx.err("ERR Elements are too large to be stored"),
        Ok(()) => {}
    }
    let id = s.last_id;
    let id_b = id.to_bytes();
    ctx.reply.bulk(&id_b);
    ctx.dirty += 1;
    let mut fx: Vec<&[u8]> = Vec::with_capacity(argv.len() + 4);
    fx.push(b"XADD");
    fx.push(key);
    let trim_fx;
    let mut trimmed = 0;
    if p.trim.strategy != TrimStrategy::None {
        trimmed = s.trim(&p.trim);
        trim_fx = trim_effect_args(&p, argv, s);
        fx.push(trim_fx.0);
        fx.push(b"=");
        fx.push(&trim_fx.1);
    }
    fx.push(&id_b);
    fx.extend_from_slice(fields);
    ctx.propagate(&fx);
    ctx.st.signal_modified_key(db, key);
    ctx.st.blocking.stream_appended(db as u8, key);
    ctx.notify(notify::STREAM, "xadd", key);
    if trimmed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
}

pub fn xtrim(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(p) = parse_add_trim(ctx, argv, false) else { return };
    let key = argv[1];
    match lookup(ctx, key, true) {
        Err(()) => return,
        Ok(false) => return ctx.reply.int(0),
        Ok(true) => {}
    }
    let db = ctx.db();
    let s = get_mut(ctx.st, db, key);
    let deleted = s.trim(&p.trim);
    if deleted > 0 {
        let (name, value) = trim_effect_args(&p, argv, s);
        ctx.propagate(&[b"XTRIM", key, name, b"=", &value]);
        ctx.st.signal_modified_key(db, key);
        ctx.notify(notify::STREAM, "xtrim", key);
        ctx.dirty += deleted;
    }
    ctx.reply.int(deleted as i64);
}

// ---------- XRANGE / XREVRANGE / XLEN / XDEL ----------

fn xrange_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], rev: bool) {
    let (start_arg, end_arg) = if rev { (argv[3], argv[2]) } else { (argv[2], argv[3]) };
    let Some(start) = parse_start(ctx, start_arg) else { return };
    let Some(end) = parse_end(ctx, end_arg) else { return };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < argv.len() {
        if kw(argv[j], b"COUNT") && j + 1 < argv.len() {
            let Some(c) = ctx.int_arg(argv[j + 1]) else { return };
            count = c.max(0);
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    match lookup(ctx, argv[1], false) {
        Err(()) => return,
        Ok(false) => return ctx.reply.array(0),
        Ok(true) => {}
    }
    if count == 0 {
        return ctx.reply.null_array();
    }
    let db = ctx.db();
    let s = get(ctx.st, db, argv[1]);
    reply_range(ctx.reply, s, start, end, crate::util::usize_sat(count), rev);
}

pub fn xrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    xrange_generic(ctx, argv, false)
}

pub fn xrevrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    xrange_generic(ctx, argv, true)
}

pub fn xlen(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match lookup(ctx, argv[1], false) {
        Err(()) => {}
        Ok(false) => ctx.reply.int(0),
        Ok(true) => {
            let db = ctx.db();
            let n = get(ctx.st, db, argv[1]).length;
            ctx.reply.int(n as i64);
        }
    }
}

pub fn xdel(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match lookup(ctx, argv[1], true) {
        Err(()) => return,
        Ok(false) => return ctx.reply.int(0),
        Ok(true) => {}
    }
    let mut ids = Vec::with_capacity(argv.len() - 2);
    for a in &argv[2..] {
        let Some(id) = parse_strict(ctx, a) else { return };
        ids.push(id);
    }
    let db = ctx.db();
    let deleted = get_mut(ctx.st, db, argv[1]).delete_ids(&ids);
    if deleted > 0 {
        ctx.st.signal_modified_key(db, argv[1]);
        ctx.notify(notify::STREAM, "xdel", argv[1]);
        ctx.dirty += deleted;
    }
    ctx.reply.int(deleted as i64);
}

// ---------- XREAD / XREADGROUP ----------

/// Effects of a consumer group change, in Redis's propagation forms.
fn fx_xclaim(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], consumer: &[u8], id: StreamId, nack: (i64, u64), last_id: StreamId) {
    let (id_b, t, c, l) = (id.to_bytes(), int_bytes(nack.0), int_bytes(nack.1 as i64), last_id.to_bytes());
    ctx.propagate(&[b"XCLAIM", key, group, consumer, b"0", &id_b, b"TIME", &t, b"RETRYCOUNT", &c, b"FORCE", b"JUSTID", b"LASTID", &l]);
}

fn fx_setid(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], g: (StreamId, i64)) {
    let (id_b, n) = (g.0.to_bytes(), int_bytes(g.1));
    ctx.propagate(&[b"XGROUP", b"SETID", key, group, &id_b, b"ENTRIESREAD", &n]);
}

fn group_of<'s>(s: &'s mut Stream, name: &[u8]) -> &'s mut Group {
    s.groups.get_mut(name).expect("group looked up before")
}

/// Looks the consumer up, creating it (and its effect) if needed; refreshes its seen time.
fn touch_consumer(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], consumer: &[u8]) -> alloc::rc::Rc<[u8]> {
    let db = ctx.db();
    let now = ctx.st.now_ms;
    let g = group_of(get_mut(ctx.st, db, key), group);
    let created = g.create_consumer(consumer, now);
    if let Some(c) = g.consumers.get_mut(consumer) {
        c.seen_time = now;
    }
    let name = g.consumer_name(consumer).expect("consumer just ensured");
    if created {
        ctx.dirty += 1;
        ctx.propagate(&[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    name
}

/// Serves `consumer`'s own pending entries from `start` (streamReplyWithRangeFromConsumerPEL).
fn serve_history(ctx: &mut Ctx<'_>, body: &mut Reply, key: &[u8], group: &[u8], consumer: &[u8], start: StreamId, count: usize) {
    let db = ctx.db();
    let now = ctx.st.now_ms;
    let s = get_mut(ctx.st, db, key);
    let ids: Vec<StreamId> = {
        let g = group_of(s, group);
        let c = &g.consumers[consumer];
        c.pel.range(start..).take(if count == 0 { usize::MAX } else { count }).copied().collect()
    };
    body.array(ids.len());
    let mut bumped = Vec::new();
    for id in ids {
        let mut found = false;
        s.scan(id, id, false, false, |e| {
            reply_entry(body, e);
            found = true;
            false
        });
        if !found {
            // Acknowledge-pending entry whose message was deleted: id with a null body.
            body.array(2);
            reply_id(body, id);
            body.null_array();
            continue;
        }
        let g = group_of(s, group);
        if let Some(n) = g.pel.get_mut(&id) {
            n.delivery_time = now;
            n.delivery_count += 1;
            bumped.push((id, (n.delivery_time, n.delivery_count), g.last_id));
        }
    }
    for (id, nack, last) in bumped {
        ctx.dirty += 1;
        fx_xclaim(ctx, key, group, consumer, id, nack, last);
    }
}

/// What XREADGROUP serves a group from one stream: the entries after `start`, at most
/// `count` of them (0: all), with NOACK or not.
struct NewEntries {
    start: StreamId,
    count: usize,
    noack: bool,
}

/// Serves new entries after `start` to a group (streamReplyWithRange with a group).
fn serve_group_new(ctx: &mut Ctx<'_>, body: &mut Reply, key: &[u8], group: &[u8], consumer: &alloc::rc::Rc<[u8]>, read: NewEntries) {
    let NewEntries { start, count, noack } = read;
    let db = ctx.db();
    let now = ctx.st.now_ms;
    let s = get_mut(ctx.st, db, key);
    let mut ids = Vec::new();
    let mut entries = Reply::with(Vec::new(), body.resp3);
    s.scan(start, StreamId::MAX, false, false, |e| {
        reply_entry(&mut entries, e);
        ids.push(e.id);
        count == 0 || ids.len() < count
    });
    body.array(ids.len());
    body.buf.extend_from_slice(&entries.buf);
    let mut moved_last = false;
    let mut claims = Vec::new();
    for id in &ids {
        let before = group_of(s, group).last_id;
        if *id > before {
            s.advance_group(group, *id);
            moved_last = true;
        }
        if noack {
            continue;
        }
        let g = group_of(s, group);
        if let Some(old) = g.pel.get(id).map(|n| n.consumer.clone())
            && let Some(c) = g.consumers.get_mut(&*old)
        {
            c.pel.remove(id);
        }
        g.pel.insert(*id, Nack { delivery_time: now, delivery_count: 1, consumer: consumer.clone() });
        if let Some(c) = g.consumers.get_mut(&**consumer) {
            c.pel.insert(*id);
        }
        claims.push((*id, g.last_id));
    }
    let g = group_of(s, group);
    let last = (g.last_id, g.entries_read);
    for (id, last_id) in claims {
        fx_xclaim(ctx, key, group, consumer, id, (now, 1), last_id);
    }
    if moved_last {
        fx_setid(ctx, key, group, last);
    }
    if moved_last || !ids.is_empty() && !noack {
        ctx.dirty += 1;
    }
}

fn xread_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], xreadgroup: bool) {
    let argc = argv.len();
    let mut block: Option<i64> = None;
    let mut count: i64 = 0;
    let mut streams_arg = 0;
    let mut streams_count = 0;
    let mut noack = false;
    let mut group: Option<(&[u8], &[u8])> = None;
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let o = argv[i];
        if kw(o, b"BLOCK") && more > 0 {
            i += 1;
            let Some(ms) = parse_i64(argv[i]) else { return ctx.err("ERR timeout is not an integer or out of range") };
            if ms < 0 {
                return ctx.err("ERR timeout is negative");
            }
            block = Some(ms);
        } else if kw(o, b"COUNT") && more > 0 {
            i += 1;
            let Some(c) = ctx.int_arg(argv[i]) else { return };
            count = c.max(0);
        } else if kw(o, b"STREAMS") && more > 0 {
            streams_arg = i + 1;
            streams_count = argc - streams_arg;
            if streams_count % 2 != 0 {
                return ctx.err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
            }
            streams_count /= 2;
            break;
        } else if kw(o, b"GROUP") && more >= 2 {
            if !xreadgroup {
                return ctx.err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
            }
            group = Some((argv[i + 1], argv[i + 2]));
            i += 2;
        } else if kw(o, b"NOACK") {
            if !xreadgroup {
                return ctx.err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            }
            noack = true;
        } else {
            return ctx.syntax_error();
        }
        i += 1;
    }
    if streams_arg == 0 {
        return ctx.syntax_error();
    }
    if xreadgroup && group.is_none() {
        return ctx.err("ERR Missing GROUP option for XREADGROUP");
    }
    if xreadgroup {
        // Its effects are the group changes it makes, never the command itself.
        ctx.propagate_nothing();
    }
    let db = ctx.db();
    let keys = &argv[streams_arg..streams_arg + streams_count];
    // Re-run for a blocked client (see `blocked`): serve from the key that became ready
    // only, as Redis 7.0's serveClientsBlockedOnStreamKey does; anything but a stream
    // there keeps the client waiting, a destroyed group ends the wait with an error.
    let serving = ctx.ready_key();
    if let Some(ready) = serving {
        let is_stream = matches!(ctx.st.dbs[db].keys.get(ready).map(|e| &e.val), Some(Value::Stream(_)));
        if !is_stream {
            if group.is_some() {
                return ctx.err("UNBLOCKED the stream key no longer exists");
            }
            return ctx.block(keys, 0);
        }
        if let Some((gname, _)) = group
            && !get(ctx.st, db, ready).groups.contains_key(gname)
        {
            return ctx.err("NOGROUP the consumer group this client was blocked on no longer exists");
        }
    }
    let mut ids = Vec::with_capacity(streams_count);
    for (k, key) in keys.iter().enumerate() {
        let idarg = cs(argv[streams_arg + streams_count + k]);
        if serving.is_some_and(|r| r != *key) {
            ids.push(StreamId::MIN);
            continue;
        }
        let Ok(exists) = lookup(ctx, key, false) else { return };
        if let Some((gname, _)) = group
            && (!exists || !get(ctx.st, db, key).groups.contains_key(gname))
        {
            return err_fmt(ctx, &[b"NOGROUP No such key '", cs(key), b"' or consumer group '", cs(gname), b"' in XREADGROUP with GROUP option"]);
        }
        if idarg == b"$" {
            if xreadgroup {
                return ctx.err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
            }
            ids.push(if exists { get(ctx.st, db, key).last_id } else { StreamId::MIN });
        } else if idarg == b">" {
            if !xreadgroup {
                return ctx.err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
            }
            ids.push(StreamId::MAX);
        } else {
            let Some(id) = parse_strict(ctx, argv[streams_arg + streams_count + k]) else { return };
            ids.push(id);
        }
    }
    let count = crate::util::usize_sat(count);
    let mut body = Reply::with(Vec::new(), ctx.reply.resp3);
    let mut served = 0;
    for (k, key) in keys.iter().enumerate() {
        if serving.is_some_and(|r| r != *key) {
            continue;
        }
        match lookup(ctx, key, false) {
            Ok(true) => {}
            _ => continue,
        }
        let appended = serving.is_some() && ctx.st.blocking.was_appended(db as u8, key);
        let s = get(ctx.st, db, key);
        let mut gt = ids[k];
        let (mut sync, mut history) = (false, false);
        if appended {
            // Served after an XADD: Redis 7.0 compares the stream's last id, so an entry
            // that XADD's MAXLEN trimmed away at once still ends the wait, with an empty
            // list.
            if let Some((gname, _)) = group {
                gt = s.groups[gname].last_id;
            }
            sync = s.last_id > gt;
        } else if let Some((gname, _)) = group {
            if gt != StreamId::MAX {
                sync = true;
                history = true;
            } else if s.length > 0 {
                let last = s.groups[gname].last_id;
                if s.last_valid_id().is_some_and(|m| m > last) {
                    sync = true;
                    gt = last;
                }
            }
        } else if s.length > 0 && s.last_valid_id().is_some_and(|m| m > gt) {
            sync = true;
        }
        if !sync {
            continue;
        }
        served += 1;
        // Redis's streamIncrID wraps the maximum to 0-0.
        let start = gt.incr().unwrap_or(StreamId::MIN);
        if !body.resp3 {
            body.array(2);
        }
        body.bulk(key);
        match group {
            Some((gname, cname)) => {
                let consumer = touch_consumer(ctx, key, gname, cname);
                if history {
                    serve_history(ctx, &mut body, key, gname, cname, start, count);
                } else {
                    serve_group_new(ctx, &mut body, key, gname, &consumer, NewEntries { start, count, noack });
                }
            }
            None => {
                let s = get(ctx.st, db, key);
                reply_range(&mut body, s, start, StreamId::MAX, count, false);
            }
        }
    }
    if served > 0 {
        // RESP2: [[key, entries], …]; RESP3: {key: entries, …}.
        if ctx.reply.resp3 {
            ctx.reply.map(served);
        } else {
            ctx.reply.array(served);
        }
        ctx.reply.buf.extend_from_slice(&body.buf);
        return;
    }
    // Nothing to serve: answer as a timeout does, or block.
    let Some(ms) = block else { return ctx.reply.null_array() };
    if serving.is_some() {
        // Keeps its place in line (and its deadline).
        return ctx.block(keys, 0);
    }
    if !ctx.may_block() {
        return ctx.reply.null_array();
    }
    let Some(deadline) = crate::server::blocked::deadline_from_ms(ctx, ms) else { return };
    // `$` means "after the last entry when I blocked": the re-run command carries that
    // id, so entries added later are served and none before them.
    let resolved: Vec<Vec<u8>> = argv
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let k = i.wrapping_sub(streams_arg + streams_count);
            if i >= streams_arg + streams_count && *a == b"$" { ids[k].to_bytes() } else { a.to_vec() }
        })
        .collect();
    let rewritten: Vec<&[u8]> = resolved.iter().map(|a| a.as_slice()).collect();
    ctx.block_as(keys, deadline, &rewritten);
}

pub fn xread(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    xread_generic(ctx, argv, false)
}

pub fn xreadgroup(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    xread_generic(ctx, argv, true)
}

// ---------- XGROUP ----------

fn subcommand_syntax_error(ctx: &mut Ctx<'_>, argv: &[&[u8]], container: &[u8]) {
    let sub = cs(argv[1]);
    let sub = &sub[..sub.len().min(128)];
    err_fmt(ctx, &[b"ERR unknown subcommand or wrong number of arguments for '", sub, b"'. Try ", container, b" HELP."]);
}

/// The shared prelude of xgroupCommand: options, key and group checks. Returns
/// (mkstream, entries_read, group exists) or None after an error reply.
fn xgroup_prelude(ctx: &mut Ctx<'_>, argv: &[&[u8]]) -> Option<(bool, i64)> {
    let create = kw(argv[1], b"CREATE");
    let setid = kw(argv[1], b"SETID");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < argv.len() {
        if create && kw(argv[i], b"MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && kw(argv[i], b"ENTRIESREAD") && i + 1 < argv.len() {
            entries_read = ctx.int_arg(argv[i + 1])?;
            if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                ctx.err("ERR value for ENTRIESREAD must be positive or -1");
                return None;
            }
            i += 2;
        } else {
            subcommand_syntax_error(ctx, argv, b"XGROUP");
            return None;
        }
    }
    let exists = lookup(ctx, argv[2], true).ok()?;
    if !mkstream {
        if !exists {
            ctx.err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
            return None;
        }
        let db = ctx.db();
        let has_group = get(ctx.st, db, argv[2]).groups.contains_key(argv[3]);
        if !has_group && (setid || kw(argv[1], b"CREATECONSUMER") || kw(argv[1], b"DELCONSUMER")) {
            err_fmt(ctx, &[b"NOGROUP No such consumer group '", cs(argv[3]), b"' for key name '", cs(argv[2]), b"'"]);
            return None;
        }
    }
    Some((mkstream, entries_read))
}

pub fn xgroup_create(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((_, entries_read)) = xgroup_prelude(ctx, argv) else { return };
    if argv.len() > 8 {
        return subcommand_syntax_error(ctx, argv, b"XGROUP");
    }
    let db = ctx.db();
    let exists = ctx.st.dbs[db].keys.contains_key(argv[2]);
    let id = if cs(argv[4]) == b"$" {
        if exists { get(ctx.st, db, argv[2]).last_id } else { StreamId::MIN }
    } else {
        let Some(id) = parse_strict(ctx, argv[4]) else { return };
        id
    };
    if !exists {
        let lru = ctx.lru();
        ctx.st.dbs[db].add(argv[2], Value::Stream(alloc::boxed::Box::default()), lru);
        ctx.st.signal_modified_key(db, argv[2]);
        ctx.dirty += 1;
    }
    let s = get_mut(ctx.st, db, argv[2]);
    if s.groups.contains_key(argv[3]) {
        return ctx.reply.error(b"BUSYGROUP Consumer Group name already exists");
    }
    s.groups.insert(argv[3].into(), Group::new(id, entries_read));
    ctx.dirty += 1;
    ctx.notify(notify::STREAM, "xgroup-create", argv[2]);
    ctx.reply.ok();
}

pub fn xgroup_setid(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((_, entries_read)) = xgroup_prelude(ctx, argv) else { return };
    if argv.len() != 5 && argv.len() != 7 {
        return subcommand_syntax_error(ctx, argv, b"XGROUP");
    }
    let db = ctx.db();
    let id = if cs(argv[4]) == b"$" {
        get(ctx.st, db, argv[2]).last_id
    } else {
        match crate::types::stream::parse_id(argv[4], &LOOSE) {
            Some((id, _)) => id,
            None => return ctx.err(INVALID_ID),
        }
    };
    let g = group_of(get_mut(ctx.st, db, argv[2]), argv[3]);
    g.last_id = id;
    g.entries_read = entries_read;
    ctx.dirty += 1;
    ctx.notify(notify::STREAM, "xgroup-setid", argv[2]);
    ctx.reply.ok();
}

pub fn xgroup_destroy(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if xgroup_prelude(ctx, argv).is_none() {
        return;
    }
    let db = ctx.db();
    let removed = get_mut(ctx.st, db, argv[2]).groups.remove(argv[3]).is_some();
    if removed {
        ctx.dirty += 1;
        ctx.notify(notify::STREAM, "xgroup-destroy", argv[2]);
    }
    ctx.reply.int(removed as i64);
}

pub fn xgroup_createconsumer(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if xgroup_prelude(ctx, argv).is_none() {
        return;
    }
    let db = ctx.db();
    let now = ctx.st.now_ms;
    let created = group_of(get_mut(ctx.st, db, argv[2]), argv[3]).create_consumer(argv[4], now);
    if created {
        ctx.dirty += 1;
        ctx.notify(notify::STREAM, "xgroup-createconsumer", argv[2]);
    }
    ctx.reply.int(created as i64);
}

pub fn xgroup_delconsumer(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if xgroup_prelude(ctx, argv).is_none() {
        return;
    }
    let db = ctx.db();
    let pending = group_of(get_mut(ctx.st, db, argv[2]), argv[3]).delete_consumer(argv[4]);
    if pending.is_some() {
        ctx.dirty += 1;
        ctx.notify(notify::STREAM, "xgroup-delconsumer", argv[2]);
    }
    ctx.reply.int(pending.unwrap_or(0) as i64);
}

pub fn xgroup_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ]);
}

// ---------- XSETID / XACK / XPENDING ----------

pub fn xsetid(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(id) = parse_strict(ctx, argv[2]) else { return };
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if kw(argv[i], b"ENTRIESADDED") && more > 0 {
            let Some(n) = ctx.int_arg(argv[i + 1]) else { return };
            if n < 0 {
                return ctx.err("ERR entries_added must be positive");
            }
            entries_added = n;
            i += 2;
        } else if kw(argv[i], b"MAXDELETEDID") && more > 0 {
            let Some(m) = parse_strict(ctx, argv[i + 1]) else { return };
            if id < m {
                return ctx.err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
            }
            max_xdel = m;
            i += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    match lookup(ctx, argv[1], true) {
        Err(()) => return,
        Ok(false) => return ctx.err("ERR no such key"),
        Ok(true) => {}
    }
    let db = ctx.db();
    let s = get_mut(ctx.st, db, argv[1]);
    // Redis 7.0 does not compare with the stream's own max deleted id (later versions do).
    if s.length > 0 {
        if s.last_valid_id().is_some_and(|m| id < m) {
            return ctx.err("ERR The ID specified in XSETID is smaller than the target stream top item");
        }
        if entries_added != -1 && s.length > entries_added as u64 {
            return ctx.err("ERR The entries_added specified in XSETID is smaller than the target stream length");
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_xdel.is_zero() {
        s.max_deleted = max_xdel;
    }
    ctx.dirty += 1;
    ctx.notify(notify::STREAM, "xsetid", argv[1]);
    ctx.reply.ok();
}

pub fn xack(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(exists) = lookup(ctx, argv[1], false) else { return };
    let db = ctx.db();
    if !exists || !get(ctx.st, db, argv[1]).groups.contains_key(argv[2]) {
        return ctx.reply.int(0);
    }
    let mut ids = Vec::with_capacity(argv.len() - 3);
    for a in &argv[3..] {
        let Some(id) = parse_strict(ctx, a) else { return };
        ids.push(id);
    }
    let g = group_of(get_mut(ctx.st, db, argv[1]), argv[2]);
    let acked = ids.iter().filter(|id| g.remove_nack(id).is_some()).count();
    ctx.dirty += acked as u64;
    ctx.reply.int(acked as i64);
}

pub fn xpending(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let argc = argv.len();
    let justinfo = argc == 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return ctx.syntax_error();
    }
    let (mut start, mut end, mut count, mut minidle) = (StreamId::MIN, StreamId::MAX, 0i64, 0i64);
    let mut consumer: Option<&[u8]> = None;
    if argc >= 6 {
        let mut si = 3;
        if kw(argv[3], b"IDLE") {
            let Some(m) = ctx.int_arg(argv[4]) else { return };
            minidle = m;
            if argc < 8 {
                return ctx.syntax_error();
            }
            si += 2;
        }
        let Some(c) = ctx.int_arg(argv[si + 2]) else { return };
        count = c.max(0);
        let Some(s) = parse_start(ctx, argv[si]) else { return };
        let Some(e) = parse_end(ctx, argv[si + 1]) else { return };
        start = s;
        end = e;
        if si + 3 < argc {
            consumer = Some(argv[si + 3]);
        }
    }
    let Ok(exists) = lookup(ctx, argv[1], false) else { return };
    let db = ctx.db();
    if !exists || !get(ctx.st, db, argv[1]).groups.contains_key(argv[2]) {
        return err_fmt(ctx, &[b"NOGROUP No such key '", cs(argv[1]), b"' or consumer group '", cs(argv[2]), b"'"]);
    }
    let now = ctx.st.now_ms;
    let g = &get(ctx.st, db, argv[1]).groups[argv[2]];
    let r = &mut *ctx.reply;
    if justinfo {
        r.array(4);
        r.int(g.pel.len() as i64);
        match (g.pel.keys().next(), g.pel.keys().next_back()) {
            (Some(first), Some(last)) => {
                reply_id(r, *first);
                reply_id(r, *last);
                let with: Vec<_> = g.consumers.iter().filter(|(_, c)| !c.pel.is_empty()).collect();
                r.array(with.len());
                for (name, c) in with {
                    r.array(2);
                    r.bulk(name);
                    r.bulk_int(c.pel.len() as i64);
                }
            }
            _ => {
                r.null();
                r.null();
                r.null_array();
            }
        }
        return;
    }
    let ids: Vec<StreamId> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(_) if start > end => Vec::new(),
            Some(c) => c.pel.range(start..=end).copied().collect(),
            None => return r.array(0),
        },
        None if start > end => Vec::new(),
        None => g.pel.range(start..=end).map(|(k, _)| *k).collect(),
    };
    let mut body = Reply::with(Vec::new(), r.resp3);
    let mut n = 0;
    for id in ids {
        if count == 0 {
            break;
        }
        let nack = &g.pel[&id];
        if minidle != 0 && now.wrapping_sub(nack.delivery_time) < minidle {
            continue;
        }
        n += 1;
        count -= 1;
        body.array(4);
        reply_id(&mut body, id);
        body.bulk(&nack.consumer);
        body.int((now.wrapping_sub(nack.delivery_time)).max(0));
        body.int(nack.delivery_count as i64);
    }
    r.array(n);
    r.buf.extend_from_slice(&body.buf);
}

// ---------- XCLAIM / XAUTOCLAIM ----------

/// How a claim updates the nack: its delivery time, and its delivery count set to
/// `retrycount` when that is not negative, else incremented unless JUSTID.
struct ClaimNack {
    time: i64,
    retrycount: i64,
    justid: bool,
}

/// Gives a pending entry to `consumer` (creating the consumer on first use, as Redis 7.0
/// does lazily) and returns the nack's (time, count) for its effect.
fn claim_one(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    cname: &[u8],
    consumer: &mut Option<alloc::rc::Rc<[u8]>>,
    id: StreamId,
    how: ClaimNack,
) -> (i64, u64) {
    let ClaimNack { time, retrycount, justid } = how;
    if consumer.is_none() {
        let db = ctx.db();
        let now = ctx.st.now_ms;
        let g = group_of(get_mut(ctx.st, db, key), group);
        let created = g.create_consumer(cname, now);
        if let Some(c) = g.consumers.get_mut(cname) {
            c.seen_time = now;
        }
        *consumer = g.consumer_name(cname);
        if created {
            ctx.dirty += 1;
            ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
        }
    }
    let me = consumer.clone().expect("consumer ensured above");
    let db = ctx.db();
    let g = group_of(get_mut(ctx.st, db, key), group);
    let nack = g.pel.get_mut(&id).expect("nack exists");
    let old = core::mem::replace(&mut nack.consumer, me.clone());
    nack.delivery_time = time;
    if retrycount >= 0 {
        nack.delivery_count = retrycount as u64;
    } else if !justid {
        nack.delivery_count += 1;
    }
    let out = (nack.delivery_time, nack.delivery_count);
    if *old != *me
        && let Some(c) = g.consumers.get_mut(&*old)
    {
        c.pel.remove(&id);
    }
    if let Some(c) = g.consumers.get_mut(&*me) {
        c.pel.insert(id);
    }
    out
}

/// Drops the nack of an entry that no longer exists, with its effect.
fn drop_missing(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], id: StreamId) {
    let db = ctx.db();
    let g = group_of(get_mut(ctx.st, db, key), group);
    let last = g.last_id;
    if let Some(n) = g.remove_nack(&id) {
        ctx.dirty += 1;
        fx_xclaim(ctx, key, group, &n.consumer, id, (n.delivery_time, n.delivery_count), last);
    }
}

fn reply_claimed(ctx: &mut Ctx<'_>, body: &mut Reply, key: &[u8], id: StreamId, justid: bool) {
    if justid {
        return reply_id(body, id);
    }
    let db = ctx.db();
    get(ctx.st, db, key).scan(id, id, false, false, |e| {
        reply_entry(body, e);
        false
    });
}

pub fn xclaim(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (key, gname, cname) = (argv[1], argv[2], argv[3]);
    let Ok(exists) = lookup(ctx, key, false) else { return };
    let db = ctx.db();
    if !exists || !get(ctx.st, db, key).groups.contains_key(gname) {
        return err_fmt(ctx, &[b"NOGROUP No such key '", cs(key), b"' or consumer group '", cs(gname), b"'"]);
    }
    let Some(minidle) = parse_i64(argv[4]) else { return ctx.err("ERR Invalid min-idle-time argument for XCLAIM") };
    let minidle = minidle.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match crate::types::stream::parse_id(argv[j], &STRICT) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let now = ctx.st.now_ms;
    let (mut force, mut justid) = (false, false);
    let mut retrycount: i64 = -1;
    let mut deliverytime: i64 = -1;
    let mut last_id = StreamId::MIN;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = argv[j];
        if kw(opt, b"FORCE") {
            force = true;
        } else if kw(opt, b"JUSTID") {
            justid = true;
        } else if kw(opt, b"IDLE") && more > 0 {
            j += 1;
            let Some(v) = parse_i64(argv[j]) else { return ctx.err("ERR Invalid IDLE option argument for XCLAIM") };
            deliverytime = now.wrapping_sub(v);
        } else if kw(opt, b"TIME") && more > 0 {
            j += 1;
            let Some(v) = parse_i64(argv[j]) else { return ctx.err("ERR Invalid TIME option argument for XCLAIM") };
            deliverytime = v;
        } else if kw(opt, b"RETRYCOUNT") && more > 0 {
            j += 1;
            let Some(v) = parse_i64(argv[j]) else { return ctx.err("ERR Invalid RETRYCOUNT option argument for XCLAIM") };
            retrycount = v;
        } else if kw(opt, b"LASTID") && more > 0 {
            j += 1;
            let Some(id) = parse_strict(ctx, argv[j]) else { return };
            last_id = id;
        } else {
            return err_fmt(ctx, &[b"ERR Unrecognized XCLAIM option '", cs(opt), b"'"]);
        }
        j += 1;
    }
    ctx.propagate_nothing();
    let mut propagate_last_id = false;
    {
        let g = group_of(get_mut(ctx.st, db, key), gname);
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last_id = true;
        }
    }
    // A primary's replicated TIME is kept as is; a client's is clamped to now.
    if deliverytime == -1 || (!ctx.st.applying && (deliverytime < 0 || deliverytime > now)) {
        deliverytime = now;
    }
    let mut consumer = None;
    let mut body = Reply::with(Vec::new(), ctx.reply.resp3);
    let mut n = 0;
    for id in ids {
        let s = get_mut(ctx.st, db, key);
        let exists_entry = s.contains(id);
        let g = group_of(s, gname);
        if !exists_entry {
            if g.pel.contains_key(&id) {
                drop_missing(ctx, key, gname, id);
                propagate_last_id = false;
            }
            continue;
        }
        let fresh = if force && !g.pel.contains_key(&id) {
            // FORCE: a pending entry with no owner yet; the claim below gives it one.
            g.pel.insert(id, Nack { delivery_time: now, delivery_count: 1, consumer: alloc::rc::Rc::from(&b""[..]) });
            true
        } else {
            false
        };
        let Some(nack) = g.pel.get(&id) else { continue };
        if !fresh && minidle != 0 && now.wrapping_sub(nack.delivery_time) < minidle {
            continue;
        }
        let nack = claim_one(ctx, key, gname, cname, &mut consumer, id, ClaimNack { time: deliverytime, retrycount, justid });
        reply_claimed(ctx, &mut body, key, id, justid);
        n += 1;
        let last = group_of(get_mut(ctx.st, db, key), gname).last_id;
        let me = consumer.clone().expect("claimed");
        fx_xclaim(ctx, key, gname, &me, id, nack, last);
        propagate_last_id = false;
        ctx.dirty += 1;
    }
    if propagate_last_id {
        let g = group_of(get_mut(ctx.st, db, key), gname);
        let last = (g.last_id, g.entries_read);
        fx_setid(ctx, key, gname, last);
        ctx.dirty += 1;
    }
    ctx.reply.array(n);
    ctx.reply.buf.extend_from_slice(&body.buf);
}

pub fn xautoclaim(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (key, gname, cname) = (argv[1], argv[2], argv[3]);
    let db = ctx.db();
    let Some(minidle) = parse_i64(argv[4]) else { return ctx.err("ERR Invalid min-idle-time argument for XAUTOCLAIM") };
    let minidle = minidle.max(0);
    let Some(start) = parse_start(ctx, argv[5]) else { return };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if kw(argv[j], b"COUNT") && more > 0 {
            match parse_i64(argv[j + 1]) {
                Some(c) if (1..=i64::MAX / 16).contains(&c) => count = c,
                _ => return ctx.err("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if kw(argv[j], b"JUSTID") {
            justid = true;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let Ok(exists) = lookup(ctx, key, false) else { return };
    if !exists || !get(ctx.st, db, key).groups.contains_key(gname) {
        return err_fmt(ctx, &[b"NOGROUP No such key '", cs(key), b"' or consumer group '", cs(gname), b"'"]);
    }
    // Redis allocates COUNT ids up front and fails when it cannot; the engine's memory
    // ends at 4 GiB.
    if count > (1 << 28) {
        return ctx.err("ERR Insufficient memory, failed allocating transient memory, COUNT too high.");
    }
    ctx.propagate_nothing();
    let now = ctx.st.now_ms;
    let mut attempts = count * 10;
    let mut consumer = None;
    let mut body = Reply::with(Vec::new(), ctx.reply.resp3);
    let mut claimed = 0;
    let mut deleted = Vec::new();
    let mut from = Some(start);
    loop {
        if attempts == 0 || count == 0 {
            break;
        }
        attempts -= 1;
        let Some(f) = from else { break };
        let s = get_mut(ctx.st, db, key);
        let Some((&id, nack)) = group_of(s, gname).pel.range(f..).next() else {
            from = None;
            break;
        };
        let dt = nack.delivery_time;
        from = id.incr();
        if !get(ctx.st, db, key).contains(id) {
            drop_missing(ctx, key, gname, id);
            deleted.push(id);
            count -= 1;
            continue;
        }
        if minidle != 0 && now.wrapping_sub(dt) < minidle {
            continue;
        }
        let nack = claim_one(ctx, key, gname, cname, &mut consumer, id, ClaimNack { time: now, retrycount: -1, justid });
        reply_claimed(ctx, &mut body, key, id, justid);
        claimed += 1;
        count -= 1;
        let last = group_of(get_mut(ctx.st, db, key), gname).last_id;
        let me = consumer.clone().expect("claimed");
        fx_xclaim(ctx, key, gname, &me, id, nack, last);
        ctx.dirty += 1;
    }
    let g = group_of(get_mut(ctx.st, db, key), gname);
    let cursor = from.and_then(|f| g.pel.range(f..).next().map(|(k, _)| *k)).unwrap_or(StreamId::MIN);
    let r = &mut *ctx.reply;
    r.array(3);
    reply_id(r, cursor);
    r.array(claimed);
    r.buf.extend_from_slice(&body.buf);
    r.array(deleted.len());
    for id in deleted {
        reply_id(r, id);
    }
}

// ---------- XINFO ----------

fn reply_lag(r: &mut Reply, s: &Stream, g: &Group) {
    match s.lag(g) {
        Some(l) => r.int(l),
        None => r.null(),
    }
}

fn reply_entries_read(r: &mut Reply, g: &Group) {
    if g.entries_read != INVALID_ENTRIES_READ {
        r.int(g.entries_read);
    } else {
        r.null();
    }
}

/// XINFO's key lookup: "no such key" when missing.
fn xinfo_stream_key(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    match lookup(ctx, key, false) {
        Err(()) => false,
        Ok(false) => {
            ctx.err("ERR no such key");
            false
        }
        Ok(true) => true,
    }
}

pub fn xinfo_consumers(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !xinfo_stream_key(ctx, argv[2]) {
        return;
    }
    let db = ctx.db();
    let now = ctx.st.now_ms;
    let Some(g) = get(ctx.st, db, argv[2]).groups.get(argv[3]) else {
        return err_fmt(ctx, &[b"NOGROUP No such consumer group '", cs(argv[3]), b"' for key name '", cs(argv[2]), b"'"]);
    };
    let r = &mut *ctx.reply;
    r.array(g.consumers.len());
    for (name, c) in &g.consumers {
        r.map(3);
        r.bulk(b"name");
        r.bulk(name);
        r.bulk(b"pending");
        r.int(c.pel.len() as i64);
        r.bulk(b"idle");
        r.int(now.wrapping_sub(c.seen_time).max(0));
    }
}

pub fn xinfo_groups(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !xinfo_stream_key(ctx, argv[2]) {
        return;
    }
    let db = ctx.db();
    let s = get(ctx.st, db, argv[2]);
    let r = &mut *ctx.reply;
    r.array(s.groups.len());
    for (name, g) in &s.groups {
        r.map(6);
        r.bulk(b"name");
        r.bulk(name);
        r.bulk(b"consumers");
        r.int(g.consumers.len() as i64);
        r.bulk(b"pending");
        r.int(g.pel.len() as i64);
        r.bulk(b"last-delivered-id");
        reply_id(r, g.last_id);
        r.bulk(b"entries-read");
        reply_entries_read(r, g);
        r.bulk(b"lag");
        reply_lag(r, s, g);
    }
}

pub fn xinfo_stream(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !xinfo_stream_key(ctx, argv[2]) {
        return;
    }
    let opts = &argv[3..];
    let mut full = true;
    let mut count: i64 = 10;
    if opts.is_empty() {
        full = false;
    } else {
        if (opts.len() != 1 && opts.len() != 3) || !kw(opts[0], b"full") || (opts.len() == 3 && !kw(opts[1], b"count")) {
            return subcommand_syntax_error(ctx, argv, b"XINFO");
        }
        if opts.len() == 3 {
            let Some(c) = ctx.int_arg(opts[2]) else { return };
            count = if c < 0 { 10 } else { c };
        }
    }
    let db = ctx.db();
    let s = get(ctx.st, db, argv[2]);
    let r = &mut *ctx.reply;
    r.map(if full { 9 } else { 10 });
    r.bulk(b"length");
    r.int(s.length as i64);
    r.bulk(b"radix-tree-keys");
    r.int(s.node_count() as i64);
    r.bulk(b"radix-tree-nodes");
    r.int(s.rax_nodes() as i64);
    r.bulk(b"last-generated-id");
    reply_id(r, s.last_id);
    r.bulk(b"max-deleted-entry-id");
    reply_id(r, s.max_deleted);
    r.bulk(b"entries-added");
    r.int(s.entries_added as i64);
    r.bulk(b"recorded-first-entry-id");
    reply_id(r, s.first_id);
    if !full {
        r.bulk(b"groups");
        r.int(s.groups.len() as i64);
        for (name, rev) in [(&b"first-entry"[..], false), (&b"last-entry"[..], true)] {
            r.bulk(name);
            let mut emitted = false;
            s.scan(StreamId::MIN, StreamId::MAX, rev, false, |e| {
                reply_entry(r, e);
                emitted = true;
                false
            });
            if !emitted {
                r.null();
            }
        }
        return;
    }
    let limit = crate::util::usize_sat(count);
    r.bulk(b"entries");
    reply_range(r, s, StreamId::MIN, StreamId::MAX, limit, false);
    r.bulk(b"groups");
    r.array(s.groups.len());
    let take = |n: usize| if limit == 0 { n } else { n.min(limit) };
    for (name, g) in &s.groups {
        r.map(7);
        r.bulk(b"name");
        r.bulk(name);
        r.bulk(b"last-delivered-id");
        reply_id(r, g.last_id);
        r.bulk(b"entries-read");
        reply_entries_read(r, g);
        r.bulk(b"lag");
        reply_lag(r, s, g);
        r.bulk(b"pel-count");
        r.int(g.pel.len() as i64);
        r.bulk(b"pending");
        r.array(take(g.pel.len()));
        for (id, n) in g.pel.iter().take(take(g.pel.len())) {
            r.array(4);
            reply_id(r, *id);
            r.bulk(&n.consumer);
            r.int(n.delivery_time);
            r.int(n.delivery_count as i64);
        }
        r.bulk(b"consumers");
        r.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            r.map(4);
            r.bulk(b"name");
            r.bulk(cname);
            r.bulk(b"seen-time");
            r.int(c.seen_time);
            r.bulk(b"pel-count");
            r.int(c.pel.len() as i64);
            r.bulk(b"pending");
            r.array(take(c.pel.len()));
            for id in c.pel.iter().take(take(c.pel.len())) {
                let n = &g.pel[id];
                r.array(3);
                reply_id(r, *id);
                r.int(n.delivery_time);
                r.int(n.delivery_count as i64);
            }
        }
    }
}

pub fn xinfo_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ]);
}
