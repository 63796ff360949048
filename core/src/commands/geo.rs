//! GEO commands (Redis 7.0's geo.c behaviour): locations are members of a sorted set
//! scored by their geohash (`types::geohash`). GEOADD is a ZADD of computed scores (and
//! is logged as that ZADD); GEOPOS, GEOHASH and GEODIST decode scores; GEORADIUS,
//! GEORADIUSBYMEMBER, their _RO variants, GEOSEARCH and GEOSEARCHSTORE scan the 3x3 cells
//! around a centre and keep what falls inside a circle or a box, replying or storing a
//! sorted set (scores: geohashes, or distances with STOREDIST).
//!
//! The stores are logged as themselves: given the same source set they compute the same
//! result (every order here is total, the math is the deterministic `libm`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::Cell;
use core::cmp::Ordering;

use crate::commands::zset::{limits, lookup_read, zset_of};
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::types::geohash::{self, Extent, OutOfRange, Point, Shape};
use crate::types::zset::{AddFlags, ZsetValue, parse_score};
use crate::util::{c_eq_ic, int_bytes};

const UNIT_ERR: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
const MEMBER_ERR: &str = "ERR could not decode requested zset member";

// ---------------------------------------------------------------- argument parsing

/// Meters per unit (M, KM, FT, MI, any case).
fn meters_per_unit(a: &[u8]) -> Option<f64> {
    [(&b"m"[..], 1.0), (b"km", 1000.0), (b"ft", 0.3048), (b"mi", 1609.34)].into_iter().find(|(name, _)| c_eq_ic(a, name)).map(|(_, m)| m)
}

fn unit_arg(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<f64> {
    let m = meters_per_unit(a);
    if m.is_none() {
        ctx.err(UNIT_ERR);
    }
    m
}

/// A float argument (Redis's getDoubleFromObject), replying `err` if it is not one.
fn float_arg(ctx: &mut Ctx<'_>, a: &[u8], err: &str) -> Option<f64> {
    let v = parse_score(a);
    if v.is_none() {
        ctx.err(err);
    }
    v
}

fn out_of_range_err(e: OutOfRange) -> String {
    // C's %f: six decimals, "inf" spelled out; Rust's fixed formatting prints the same
    // exact digits.
    format!("ERR invalid longitude,latitude pair {:.6},{:.6}", e.lon, e.lat)
}

/// `longitude latitude` at `args[0..2]`: both floats, then inside the storable limits.
fn point_args(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Option<Point> {
    let lon = float_arg(ctx, args[0], "ERR value is not a valid float")?;
    let lat = float_arg(ctx, args[1], "ERR value is not a valid float")?;
    match Point::new(lon, lat) {
        Ok(p) => Some(p),
        Err(e) => {
            ctx.err(&out_of_range_err(e));
            None
        }
    }
}

/// `radius unit` at `args[0..2]`: (radius in its unit, meters per unit).
fn radius_args(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Option<(f64, f64)> {
    let r = float_arg(ctx, args[0], "ERR need numeric radius")?;
    if r < 0.0 {
        ctx.err("ERR radius cannot be negative");
        return None;
    }
    Some((r, unit_arg(ctx, args[1])?))
}

/// `width height unit` at `args[0..3]`.
fn box_args(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Option<(f64, f64, f64)> {
    let w = float_arg(ctx, args[0], "ERR need numeric width")?;
    let h = float_arg(ctx, args[1], "ERR need numeric height")?;
    if w < 0.0 || h < 0.0 {
        ctx.err("ERR height or width cannot be negative");
        return None;
    }
    Some((w, h, unit_arg(ctx, args[2])?))
}

// ---------------------------------------------------------------- replies

/// A coordinate as Redis prints it (`ld2string` human form): 17 decimals of the exact
/// value, trailing zeros and a trailing dot removed, "-0" made "0".
fn coord_text(v: f64) -> Vec<u8> {
    if v.is_infinite() {
        return if v > 0.0 { b"inf".to_vec() } else { b"-inf".to_vec() };
    }
    let mut s = format!("{:.17}", v).into_bytes();
    if s.contains(&b'.') {
        while s.last() == Some(&b'0') {
            s.pop();
        }
        if s.last() == Some(&b'.') {
            s.pop();
        }
    }
    if s == b"-0" {
        s = b"0".to_vec();
    }
    s
}

/// A longitude/latitude pair: bulk strings in RESP2, doubles in RESP3.
fn reply_point(ctx: &mut Ctx<'_>, p: Point) {
    ctx.reply.array(2);
    ctx.reply.double_text(&coord_text(p.lon));
    ctx.reply.double_text(&coord_text(p.lat));
}

/// A distance: a bulk string with 4 decimals in both protocols.
fn reply_distance(ctx: &mut Ctx<'_>, d: f64) {
    ctx.reply.bulk(format!("{:.4}", d).as_bytes());
}

// ---------------------------------------------------------------- GEOADD

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: a ZADD of the members with
/// their geohash scores, which is also what it logs.
pub fn geoadd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut opts: Vec<&'static [u8]> = Vec::new();
    let (mut nx, mut xx) = (false, false);
    let mut idx = 2;
    while idx < argv.len() {
        let o = argv[idx];
        if c_eq_ic(o, b"nx") {
            nx = true;
            opts.push(b"NX");
        } else if c_eq_ic(o, b"xx") {
            xx = true;
            opts.push(b"XX");
        } else if c_eq_ic(o, b"ch") {
            opts.push(b"CH");
        } else {
            break;
        }
        idx += 1;
    }
    let triples = &argv[idx..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return ctx.syntax_error();
    }
    let mut scores = Vec::with_capacity(triples.len() / 3);
    for t in triples.chunks_exact(3) {
        let Some(p) = point_args(ctx, t) else { return };
        scores.push(int_bytes(geohash::score_of(p) as i64));
    }
    let mut zargv: Vec<&[u8]> = Vec::with_capacity(2 + opts.len() + scores.len() * 2);
    zargv.push(b"ZADD");
    zargv.push(argv[1]);
    zargv.extend(opts.iter().copied());
    for (t, s) in triples.chunks_exact(3).zip(&scores) {
        zargv.push(s);
        zargv.push(t[2]);
    }
    let before = ctx.dirty;
    crate::commands::zset::zadd(ctx, &zargv);
    if ctx.dirty > before {
        ctx.propagate(&zargv);
    }
}

// ---------------------------------------------------------------- GEOPOS / GEOHASH / GEODIST

/// The score of `member` in the sorted set at `key` (which exists).
fn score_in(ctx: &Ctx<'_>, key: &[u8], member: &[u8]) -> Option<f64> {
    zset_of(ctx.st, ctx.client.db, key).score(member)
}

/// GEOPOS key [member ...]
pub fn geopos(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(exists) = lookup_read(ctx, argv[1]) else { return };
    ctx.reply.array(argv.len() - 2);
    for m in &argv[2..] {
        match if exists { score_in(ctx, argv[1], m) } else { None } {
            Some(s) => reply_point(ctx, geohash::point_of_score(s)),
            None => ctx.reply.null_array(),
        }
    }
}

/// GEOHASH key [member ...]
pub fn geohash(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(exists) = lookup_read(ctx, argv[1]) else { return };
    ctx.reply.array(argv.len() - 2);
    for m in &argv[2..] {
        match if exists { score_in(ctx, argv[1], m) } else { None } {
            Some(s) => ctx.reply.bulk(&geohash::geohash_string(s)),
            None => ctx.reply.null(),
        }
    }
}

/// GEODIST key member1 member2 [M|KM|FT|MI]
pub fn geodist(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let per_unit = match argv.len() {
        4 => 1.0,
        5 => match unit_arg(ctx, argv[4]) {
            Some(m) => m,
            None => return,
        },
        _ => return ctx.syntax_error(),
    };
    match lookup_read(ctx, argv[1]) {
        Err(()) => return,
        Ok(false) => return ctx.reply.null(),
        Ok(true) => {}
    }
    let (Some(a), Some(b)) = (score_in(ctx, argv[1], argv[2]), score_in(ctx, argv[1], argv[3])) else {
        return ctx.reply.null();
    };
    let d = geohash::distance(geohash::point_of_score(a), geohash::point_of_score(b));
    reply_distance(ctx, d / per_unit);
}

// ---------------------------------------------------------------- searches

/// Which search command runs: where its fixed arguments end and which options it takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO] key longitude latitude radius unit
    Radius { store_ok: bool },
    /// GEORADIUSBYMEMBER[_RO] key member radius unit
    ByMember { store_ok: bool },
    /// GEOSEARCH key (FROMMEMBER|FROMLONLAT) (BYRADIUS|BYBOX)
    Search,
    /// GEOSEARCHSTORE destination source … [STOREDIST]
    SearchStore,
}

impl Form {
    fn source_index(self) -> usize {
        if self == Form::SearchStore { 2 } else { 1 }
    }
    fn options_index(self) -> usize {
        match self {
            Form::Radius { .. } => 6,
            Form::ByMember { .. } => 5,
            Form::Search => 2,
            Form::SearchStore => 3,
        }
    }
    fn is_search(self) -> bool {
        matches!(self, Form::Search | Form::SearchStore)
    }
    fn takes_store(self) -> bool {
        matches!(self, Form::Radius { store_ok: true } | Form::ByMember { store_ok: true })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Unsorted,
    Asc,
    Desc,
}

/// A search's parsed arguments.
struct Query<'a> {
    centre: Option<Point>,
    extent: Option<(Extent, f64)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    order: Order,
    /// 0: no limit.
    count: u64,
    any: bool,
    store: Option<&'a [u8]>,
    store_dist: bool,
}

/// One match.
struct Found {
    member: Vec<u8>,
    score: f64,
    point: Point,
    /// In meters until the reply converts it; the fast distance until `exact` (the sort
    /// replaces it where two are too close to call by it).
    dist: Cell<f64>,
    exact: Cell<bool>,
}

impl Found {
    /// The exact distance, computed once.
    fn exact_dist(&self, shape: &Shape) -> f64 {
        if !self.exact.get() {
            self.dist.set(shape.distance_to(self.point));
            self.exact.set(true);
        }
        self.dist.get()
    }
}

/// Parses a search's arguments in Redis's order (a missing centre member or a bad
/// number fails as soon as it is met). None after an error reply.
fn parse_query<'a>(ctx: &mut Ctx<'_>, argv: &[&'a [u8]], form: Form, exists: bool) -> Option<Query<'a>> {
    let src = argv[form.source_index()];
    let mut q = Query {
        centre: None,
        extent: None,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        order: Order::Unsorted,
        count: 0,
        any: false,
        store: None,
        store_dist: false,
    };
    match form {
        Form::Radius { .. } => {
            q.centre = Some(point_args(ctx, &argv[2..4])?);
            let (r, unit) = radius_args(ctx, &argv[4..6])?;
            q.extent = Some((Extent::Radius(r), unit));
        }
        // A missing key is not an error: the reply is empty whatever the member and radius.
        Form::ByMember { .. } if !exists => {}
        Form::ByMember { .. } => {
            q.centre = Some(member_point(ctx, src, argv[2])?);
            let (r, unit) = radius_args(ctx, &argv[3..5])?;
            q.extent = Some((Extent::Radius(r), unit));
        }
        Form::Search | Form::SearchStore => {}
    }
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) = (false, false, false, false);
    let base = form.options_index();
    let mut i = base;
    while i < argv.len() {
        let a = argv[i];
        // How many arguments follow this one.
        let after = argv.len() - i - 1;
        if c_eq_ic(a, b"withdist") {
            q.with_dist = true;
        } else if c_eq_ic(a, b"withhash") {
            q.with_hash = true;
        } else if c_eq_ic(a, b"withcoord") {
            q.with_coord = true;
        } else if c_eq_ic(a, b"any") {
            q.any = true;
        } else if c_eq_ic(a, b"asc") {
            q.order = Order::Asc;
        } else if c_eq_ic(a, b"desc") {
            q.order = Order::Desc;
        } else if c_eq_ic(a, b"count") && after >= 1 {
            let n = ctx.int_arg(argv[i + 1])?;
            if n <= 0 {
                ctx.err("ERR COUNT must be > 0");
                return None;
            }
            q.count = n as u64;
            i += 1;
        } else if form.takes_store() && (c_eq_ic(a, b"store") || c_eq_ic(a, b"storedist")) && after >= 1 {
            q.store = Some(argv[i + 1]);
            q.store_dist = c_eq_ic(a, b"storedist");
            i += 1;
        } else if form == Form::SearchStore && c_eq_ic(a, b"storedist") {
            q.store_dist = true;
        } else if form.is_search() && c_eq_ic(a, b"frommember") && after >= 1 && !from_lonlat {
            // Without a source set the member is not looked up: the reply is empty anyway.
            if exists {
                q.centre = Some(member_point(ctx, src, argv[i + 1])?);
            }
            from_member = true;
            i += 1;
        } else if form.is_search() && c_eq_ic(a, b"fromlonlat") && after >= 2 && !from_member {
            q.centre = Some(point_args(ctx, &argv[i + 1..i + 3])?);
            from_lonlat = true;
            i += 2;
        } else if form.is_search() && c_eq_ic(a, b"byradius") && after >= 2 && !by_box {
            let (r, unit) = radius_args(ctx, &argv[i + 1..i + 3])?;
            q.extent = Some((Extent::Radius(r), unit));
            by_radius = true;
            i += 2;
        } else if form.is_search() && c_eq_ic(a, b"bybox") && after >= 3 && !by_radius {
            let (width, height, unit) = box_args(ctx, &argv[i + 1..i + 4])?;
            q.extent = Some((Extent::Box { width, height }, unit));
            by_box = true;
            i += 3;
        } else {
            ctx.syntax_error();
            return None;
        }
        i += 1;
    }
    if form == Form::SearchStore {
        q.store = Some(argv[1]);
    }
    let from_given = from_member || from_lonlat;
    let by_given = by_radius || by_box;
    if q.store.is_some() && (q.with_dist || q.with_hash || q.with_coord) {
        let who = if form == Form::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        ctx.err(&format!("ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"));
        return None;
    }
    let name = String::from_utf8_lossy(argv[0]);
    if form.is_search() && !from_given {
        ctx.err(&format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"));
        return None;
    }
    if form.is_search() && !by_given {
        ctx.err(&format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"));
        return None;
    }
    if q.any && q.count == 0 {
        ctx.err("ERR the ANY argument requires COUNT argument");
        return None;
    }
    Some(q)
}

/// The location of `member` in the set at `key` (which exists), or None after replying
/// MEMBER_ERR.
fn member_point(ctx: &mut Ctx<'_>, key: &[u8], member: &[u8]) -> Option<Point> {
    match score_in(ctx, key, member) {
        Some(s) => Some(geohash::point_of_score(s)),
        None => {
            ctx.err(MEMBER_ERR);
            None
        }
    }
}

/// The members of the set at `key` inside `shape`, cell by cell in the order the cells
/// are scanned and by score within a cell; with `limit` > 0 the scan stops once that
/// many were found (ANY).
fn find_inside(ctx: &Ctx<'_>, key: &[u8], shape: &Shape, limit: u64) -> Vec<Found> {
    let v = zset_of(ctx.st, ctx.client.db, key).view();
    let mut found = Vec::new();
    let full = |found: &Vec<Found>| limit > 0 && found.len() as u64 >= limit;
    let consider = |found: &mut Vec<Found>, m: &[u8], score: f64| {
        let point = geohash::point_of_score(score);
        if let Some((dist, exact)) = shape.inside(point) {
            found.push(Found { member: m.to_vec(), score, point, dist: Cell::new(dist), exact: Cell::new(exact) });
        }
    };
    for (min, max) in geohash::search_ranges(shape) {
        if full(&found) {
            break;
        }
        let lo = v.partition_point(|s, _| s < min);
        let hi = v.partition_point(|s, _| s < max);
        if limit == 0 {
            v.walk(lo, hi, false, |m, s| consider(&mut found, m, s));
            continue;
        }
        // With a limit, element by element so the scan ends as soon as it is reached.
        for rank in lo..hi {
            let (m, s) = v.at(rank);
            consider(&mut found, m, s);
            if full(&found) {
                break;
            }
        }
    }
    found
}

fn search_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], form: Form) {
    let src = argv[form.source_index()];
    let Ok(exists) = lookup_read(ctx, src) else { return };
    let Some(q) = parse_query(ctx, argv, form, exists) else { return };
    let (Some(centre), Some((extent, to_meters)), true) = (q.centre, q.extent, exists) else {
        // No source set: nothing found (a store deletes its destination).
        return match q.store {
            Some(dst) => store(ctx, dst, Vec::new(), &q, form),
            None => ctx.reply.array(0),
        };
    };
    let shape = Shape { centre, extent, to_meters };
    // COUNT without ANY keeps the nearest ones, so it implies ASC.
    let order = if q.count > 0 && q.order == Order::Unsorted && !q.any { Order::Asc } else { q.order };
    let mut found = find_inside(ctx, src, &shape, if q.any { q.count } else { 0 });
    let keep = if q.count > 0 && (found.len() as u64) > q.count { q.count as usize } else { found.len() };
    if order != Order::Unsorted {
        // By exact distance, as Redis sorts: fast distances decide where they are far
        // enough apart, the exact ones (computed then) where not.
        let shape = &shape;
        let by_dist = move |a: &Found, b: &Found| {
            let (mut da, mut db) = (a.dist.get(), b.dist.get());
            let decided = (a.exact.get() && b.exact.get()) || geohash::surely_apart(da, db);
            if !decided {
                (da, db) = (a.exact_dist(shape), b.exact_dist(shape));
            }
            let o = da.partial_cmp(&db).unwrap_or(Ordering::Equal);
            if order == Order::Desc { o.reverse() } else { o }
        };
        // Members at equal distances come in the order Redis's sorts leave them: a full
        // sort is glibc's qsort, a merge sort (stable); a COUNT-limited one its own
        // partial quicksort.
        if keep == found.len() {
            found.sort_by(by_dist);
        } else {
            partial_quicksort(&mut found, keep, by_dist);
        }
    }
    found.truncate(keep);
    let shown = q.with_dist || (q.store.is_some() && q.store_dist);
    for f in &found {
        let d = if shown { f.exact_dist(&shape) } else { f.dist.get() };
        f.dist.set(d / to_meters);
    }
    match q.store {
        Some(dst) => store(ctx, dst, found, &q, form),
        None => reply_found(ctx, &found, &q),
    }
}

fn reply_found(ctx: &mut Ctx<'_>, found: &[Found], q: &Query<'_>) {
    let extras = q.with_dist as usize + q.with_hash as usize + q.with_coord as usize;
    ctx.reply.array(found.len());
    for f in found {
        if extras > 0 {
            ctx.reply.array(extras + 1);
        }
        ctx.reply.bulk(&f.member);
        if q.with_dist {
            reply_distance(ctx, f.dist.get());
        }
        if q.with_hash {
            // C's double → long long conversion (truncation) of the score.
            ctx.reply.int(f.score as i64);
        }
        if q.with_coord {
            reply_point(ctx, f.point);
        }
    }
}

/// Writes the matches to `dst` as a sorted set (setKey: any old value and TTL go) scored
/// by geohash or, with STOREDIST, by distance; an empty result deletes `dst`. Replies
/// with the number stored.
fn store(ctx: &mut Ctx<'_>, dst: &[u8], found: Vec<Found>, q: &Query<'_>, form: Form) {
    let db = ctx.db();
    let n = found.len();
    if n > 0 {
        let lim = limits(ctx.st);
        let mut z = ZsetValue::new_listpack();
        for f in &found {
            z.add(&f.member, if q.store_dist { f.dist.get() } else { f.score }, AddFlags::default(), lim);
        }
        ctx.st.set_value(db, dst, Value::Zset(z), false);
        ctx.dirty += n as u64;
        ctx.notify(notify::ZSET, if form.is_search() { "geosearchstore" } else { "georadiusstore" }, dst);
    } else {
        ctx.delete_destination(dst);
    }
    ctx.reply.int(n as i64);
}

/// GEORADIUS key longitude latitude radius unit [WITHCOORD] [WITHDIST] [WITHHASH]
/// [COUNT n [ANY]] [ASC|DESC] [STORE key|STOREDIST key]
pub fn georadius(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::Radius { store_ok: true })
}

pub fn georadius_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::Radius { store_ok: false })
}

/// GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS]
pub fn georadiusbymember(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::ByMember { store_ok: true })
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::ByMember { store_ok: false })
}

/// GEOSEARCH key FROMMEMBER member|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit
/// [ASC|DESC] [COUNT n [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
pub fn geosearch(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::Search)
}

/// GEOSEARCHSTORE destination source … [STOREDIST]
pub fn geosearchstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    search_generic(ctx, argv, Form::SearchStore)
}

/// Orders `v` so that its first `keep` elements are the smallest (by `cmp`) in order, the
/// rest in no useful order, with the exact steps of Redis's `pqsort`: Bentley and
/// McIlroy's quicksort ("Engineering a Sort Function", 1993: pivot from a median of three
/// or, past 40 elements, of three medians; elements equal to the pivot gathered at both
/// ends then swapped to the middle; insertion sort below 7 elements; as in NetBSD's
/// version, no switch to insertion sort when a partition swapped nothing), recursing only
/// into parts that hold some of the first `keep` ranks. The order it leaves equal
/// elements in is what COUNT replies show (checked against redis-server 7.0.15).
fn partial_quicksort<T>(v: &mut [T], keep: usize, cmp: impl Fn(&T, &T) -> Ordering + Copy) {
    if keep > 0 && !v.is_empty() {
        quicksort_part(v, 0, v.len(), (0, keep - 1), cmp);
    }
}

fn insertion_sort<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && cmp(&v[j - 1], &v[j]) == Ordering::Greater {
            v.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// The index of the median of three elements (ties resolved as the 1993 paper's `med3`).
fn median_of_three<T>(v: &[T], a: usize, b: usize, c: usize, cmp: impl Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

/// Swaps the `n` elements at `a` with the `n` at `b`.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Sorts `v[start..start + len]` as far as ranks `wanted` (inclusive, absolute) need.
/// The larger part is iterated and the smaller recursed into, so the stack stays
/// logarithmic; the parts are disjoint, so the order they are done in changes nothing.
fn quicksort_part<T>(v: &mut [T], mut start: usize, mut len: usize, wanted: (usize, usize), cmp: impl Fn(&T, &T) -> Ordering + Copy) {
    let overlaps = |s: usize, n: usize| wanted.1 >= s && wanted.0 < s + n;
    loop {
        let w = &mut v[start..start + len];
        let n = w.len();
        if n < 7 {
            return insertion_sort(w, cmp);
        }
        let mut pm = n / 2;
        if n > 7 {
            let (mut pl, mut pn) = (0, n - 1);
            if n > 40 {
                let d = n / 8;
                pl = median_of_three(w, pl, pl + d, pl + 2 * d, cmp);
                pm = median_of_three(w, pm - d, pm, pm + d, cmp);
                pn = median_of_three(w, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = median_of_three(w, pl, pm, pn, cmp);
        }
        w.swap(0, pm);
        // Invariant: [0] pivot, [1, pa) equal, [pa, pb) less, (pc, pd] greater, (pd, n) equal.
        let (mut pa, mut pb) = (1usize, 1usize);
        let (mut pc, mut pd) = (n as isize - 1, n as isize - 1);
        loop {
            while pb as isize <= pc {
                let o = cmp(&w[pb], &w[0]);
                if o == Ordering::Greater {
                    break;
                }
                if o == Ordering::Equal {
                    w.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb as isize <= pc {
                let o = cmp(&w[pc as usize], &w[0]);
                if o == Ordering::Less {
                    break;
                }
                if o == Ordering::Equal {
                    w.swap(pc as usize, pd as usize);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb as isize > pc {
                break;
            }
            w.swap(pb, pc as usize);
            pb += 1;
            pc -= 1;
        }
        let (pc, pd) = (pc as usize + 1, pd as usize + 1); // now one past: (pc, pd] = [pc, pd)
        let r = pa.min(pb - pa);
        swap_runs(w, 0, pb - r, r);
        let r = (pd - pc).min(n - pd);
        swap_runs(w, pb, n - r, r);
        // The less-than part is at the start, the greater-than part at the end.
        let (less, greater) = (pb - pa, pd - pc);
        let parts = [(start, less), (start + n - greater, greater)];
        let todo: Vec<(usize, usize)> = parts.into_iter().filter(|&(s, l)| l > 1 && overlaps(s, l)).collect();
        match todo.as_slice() {
            [] => return,
            [(s, l)] => (start, len) = (*s, *l),
            [small, big] => {
                let (small, big) = if small.1 <= big.1 { (small, big) } else { (big, small) };
                quicksort_part(v, small.0, small.1, wanted, cmp);
                (start, len) = *big;
            }
            _ => unreachable!("two parts at most"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_print_as_redis() {
        assert_eq!(coord_text(13.361389338970184), b"13.36138933897018433");
        assert_eq!(coord_text(180.0), b"180");
        assert_eq!(coord_text(85.05112878), b"85.0511287799999991");
        assert_eq!(coord_text(-1e-30), b"0");
        assert_eq!(coord_text(2.000_000_185_646_549), b"2.0000001856465488");
    }

    #[test]
    fn units() {
        assert_eq!(meters_per_unit(b"KM"), Some(1000.0));
        assert_eq!(meters_per_unit(b"mi"), Some(1609.34));
        assert_eq!(meters_per_unit(b"Ft"), Some(0.3048));
        assert_eq!(meters_per_unit(b"yd"), None);
    }

    #[test]
    fn out_of_range_text() {
        assert_eq!(out_of_range_err(OutOfRange { lon: 200.0, lat: 100.0 }), "ERR invalid longitude,latitude pair 200.000000,100.000000");
        assert_eq!(out_of_range_err(OutOfRange { lon: f64::INFINITY, lat: 0.0 }), "ERR invalid longitude,latitude pair inf,0.000000");
    }
}
