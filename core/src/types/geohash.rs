//! Geohash arithmetic for the GEO commands, with Redis 7.0's exact numbers: a location is
//! stored as a sorted-set member whose score is a 52-bit interleaved geohash (26 bits of
//! longitude over -180..180, 26 of latitude over the Web Mercator limits ±85.05112878),
//! longitude bits in the odd positions. A search covers the cell holding its centre and
//! the 8 cells around it, at the precision ("step") where a cell is about as wide as the
//! search, and keeps the points whose Haversine distance passes the shape's test.
//!
//! Written from the documented algorithm; every float operation is done in the order
//! Redis does it, because replies print distances to 4 decimals and coordinates to 17,
//! and a point exactly on a search's edge must fall on the same side. The
//! trigonometry is correctly rounded (`util::crmath`), as glibc's nearly always is.

use crate::util::crmath;

/// The longitude limits.
pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
/// The latitude limits of the stored geohash (Web Mercator's: its square ends there).
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate of a stored geohash.
pub const STEP_MAX: u8 = 26;
/// The Earth's radius Redis computes distances with, in meters.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the Earth's circumference at the equator in Web Mercator meters: the width a
/// step-1 cell stands for when estimating the step of a search.
const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees → radians factor (C's `M_PI / 180.0`).
const DEG_TO_RAD: f64 = core::f64::consts::PI / 180.0;

/// A closed interval of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The longitude span of every geohash.
pub const LON_RANGE: Range = Range { min: LON_MIN, max: LON_MAX };
/// The latitude span of stored geohashes (scores).
pub const LAT_RANGE: Range = Range { min: LAT_MIN, max: LAT_MAX };
/// The latitude span of standard geohash strings (GEOHASH's reply).
pub const LAT_RANGE_STANDARD: Range = Range { min: -90.0, max: 90.0 };

/// A longitude/latitude pair known to be inside the storable limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub lon: f64,
    pub lat: f64,
}

/// A coordinate pair outside ±180 / ±85.05112878 (GEOADD's and a search centre's error).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutOfRange {
    pub lon: f64,
    pub lat: f64,
}

impl Point {
    /// The pair, if it can be stored (the limits themselves included).
    pub fn new(lon: f64, lat: f64) -> Result<Point, OutOfRange> {
        // Written as "not inside" so that a NaN is refused too.
        let inside = (LON_MIN..=LON_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat);
        if inside { Ok(Point { lon, lat }) } else { Err(OutOfRange { lon, lat }) }
    }
}

/// A geohash cell: `step` bits per coordinate, interleaved in `bits` (latitude in the even
/// positions). A coordinate on the upper limit encodes one past the last cell (bit `step`
/// of its lane set), as in Redis; such cells hold exactly the points stored on that limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

/// The rectangle a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub lon: Range,
    pub lat: Range,
}

/// Spreads the 32 bits of `lane` to the even bit positions of the result.
fn spread(lane: u32) -> u64 {
    let mut x = lane as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    x = (x | (x << 1)) & 0x5555_5555_5555_5555;
    x
}

/// Gathers the even bit positions of `bits` into a 32-bit lane (inverse of `spread`).
fn squeeze(bits: u64) -> u32 {
    let mut x = bits & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

fn interleave(lat_lane: u32, lon_lane: u32) -> u64 {
    spread(lat_lane) | (spread(lon_lane) << 1)
}

/// Where `v` falls in `r` as a lane of `step` bits (truncated, as C's double → uint32).
fn lane_of(v: f64, r: Range, step: u8) -> u32 {
    let offset = (v - r.min) / (r.max - r.min);
    (offset * (1u64 << step) as f64) as u32
}

/// The cell of `step` bits per coordinate holding `p`, with latitude measured over
/// `lat_range` (longitude always over ±180).
pub fn encode(p: Point, lat_range: Range, step: u8) -> Cell {
    Cell { bits: interleave(lane_of(p.lat, lat_range, step), lane_of(p.lon, LON_RANGE, step)), step }
}

/// The rectangle of `cell` (latitude over `lat_range`). Lanes past the last cell (scores
/// that were never geohashes) give rectangles outside the limits; `centre` clamps them.
pub fn decode(cell: Cell, lat_range: Range) -> Area {
    let cells = (1u64 << cell.step) as f64;
    let side = |lane: u32, r: Range| {
        let scale = r.max - r.min;
        // `lane + 1` wraps in 32 bits, as Redis's unsigned arithmetic does.
        Range { min: r.min + (lane as f64 * 1.0 / cells) * scale, max: r.min + (lane.wrapping_add(1) as f64 * 1.0 / cells) * scale }
    };
    Area { lat: side(squeeze(cell.bits), lat_range), lon: side(squeeze(cell.bits >> 1), LON_RANGE) }
}

/// The middle of an area, clamped to the storable limits.
pub fn centre(a: &Area) -> Point {
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Point { lon, lat }
}

/// The score a point is stored with.
pub fn score_of(p: Point) -> u64 {
    encode(p, LAT_RANGE, STEP_MAX).bits
}

/// The geohash bits of a score. Redis converts with C's `(uint64_t)` cast, which for
/// scores that were never geohashes (negative, fractional, huge) does what x86-64 does:
/// truncation toward zero, negatives wrapping to two's complement, values past the
/// signed range going through "integer indefinite" (2^63), 2^64 and beyond ending at 0.
pub fn cell_of_score(score: f64) -> Cell {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or 0x8000000000000000 when the result does not fit (NaN too).
    let cvt = |v: f64| -> u64 { if (-TWO_63..TWO_63).contains(&v) { v as i64 as u64 } else { 1 << 63 } };
    let bits = if score >= TWO_63 { cvt(score - TWO_63) ^ (1 << 63) } else { cvt(score) };
    Cell { bits, step: STEP_MAX }
}

/// The location a score stands for: the centre of its cell.
pub fn point_of_score(score: f64) -> Point {
    centre(&decode(cell_of_score(score), LAT_RANGE))
}

/// The standard 11-character geohash string of a stored score: its location re-encoded
/// over latitudes ±90. 52 bits make 10 characters and 2 bits; the 11th is always '0'.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let bits = encode(point_of_score(score), LAT_RANGE_STANDARD, STEP_MAX).bits;
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn deg_to_rad(d: f64) -> f64 {
    d * DEG_TO_RAD
}

fn rad_to_deg(r: f64) -> f64 {
    r / DEG_TO_RAD
}

/// Meters between two latitudes on one meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * libm::fabs(deg_to_rad(lat2) - deg_to_rad(lat1))
}

/// The Haversine distance in meters (on one meridian, the plain latitude difference).
pub fn distance(a: Point, b: Point) -> f64 {
    haversine(a, b, crmath::sin, crmath::cos, crmath::asin)
}

/// `distance` in `libm`'s math: within a few units in the last place of it (rounding
/// aside, the two are the same formula), and several times faster.
fn fast_distance(a: Point, b: Point) -> f64 {
    haversine(a, b, libm::sin, libm::cos, libm::asin)
}

/// The Haversine formula as Redis's geohashGetDistance writes it, in the given math.
fn haversine(a: Point, b: Point, sin: impl Fn(f64) -> f64, cos: impl Fn(f64) -> f64, asin: impl Fn(f64) -> f64) -> f64 {
    let v = sin((deg_to_rad(b.lon) - deg_to_rad(a.lon)) / 2.0);
    if v == 0.0 {
        return lat_distance(a.lat, b.lat);
    }
    let (lat1, lat2) = (deg_to_rad(a.lat), deg_to_rad(b.lat));
    let u = sin((lat2 - lat1) / 2.0);
    let h = u * u + cos(lat1) * cos(lat2) * v * v;
    2.0 * EARTH_RADIUS_M * asin(crate::util::sqrt(h))
}

/// Whether `fast_distance` shows `p` beyond `limit` meters from `c` by a margin far
/// past its error (relative 1e-6 and a millimetre; the test below finds it under 1% of
/// that, the most near antipodes, where asin magnifies it). Most candidates of a search lie well
/// outside its shape: they are told by the fast math, and only the rest pay for the
/// correctly rounded one, whose decision and digits are Redis's.
fn surely_beyond(c: Point, p: Point, limit: f64) -> bool {
    fast_distance(c, p) > limit + margin(limit)
}

/// How far `fast_distance` may be from `distance` around `d` meters, generously.
fn margin(d: f64) -> f64 {
    d * 1e-6 + 1e-3
}

/// Whether two fast distances are far enough apart that the exact ones compare the same.
pub fn surely_apart(a: f64, b: f64) -> bool {
    libm::fabs(a - b) > margin(a) + margin(b)
}

/// What a search looks for, in the unit it was given (`to_meters` converts): the exact
/// products Redis computes depend on keeping them apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub centre: Point,
    pub extent: Extent,
    pub to_meters: f64,
}

impl Shape {
    /// The distance from the centre to `p` if `p` is inside the shape (within the radius,
    /// or within half the box's height along the meridian and half its width along the
    /// parallel of `p`), with whether it is the exact distance (true) or only the fast
    /// one: the decision is exact either way; a search asks for the exact distance where
    /// it matters (`distance_to`: an order too close to call, a printed distance).
    pub fn inside(&self, p: Point) -> Option<(f64, bool)> {
        match self.extent {
            Extent::Radius(r) => {
                let limit = r * self.to_meters;
                let fast = fast_distance(self.centre, p);
                if fast > limit + margin(limit) {
                    return None;
                }
                if fast < limit - margin(limit) {
                    return Some((fast, false));
                }
                let d = distance(self.centre, p);
                (d <= limit).then_some((d, true))
            }
            Extent::Box { width, height } => {
                let (w, h) = (width * self.to_meters, height * self.to_meters);
                if lat_distance(p.lat, self.centre.lat) > h / 2.0 {
                    return None;
                }
                let across = Point { lon: self.centre.lon, lat: p.lat };
                if surely_beyond(p, across, w / 2.0) || distance(p, across) > w / 2.0 {
                    return None;
                }
                Some((fast_distance(self.centre, p), false))
            }
        }
    }

    /// The exact distance from the centre to `p`.
    pub fn distance_to(&self, p: Point) -> f64 {
        distance(self.centre, p)
    }

    /// The radius (for a box, the half diagonal) in meters.
    fn reach_m(&self) -> f64 {
        let r = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => crate::util::sqrt((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)),
        };
        r * self.to_meters
    }

    /// The shape's bounding box as (min lon, min lat, max lon, max lat): the widest
    /// longitude span is taken at the latitude nearer the pole.
    fn bounds(&self) -> (f64, f64, f64, f64) {
        let (half_w, half_h) = match self.extent {
            Extent::Radius(r) => (self.to_meters * r, self.to_meters * r),
            Extent::Box { width, height } => (self.to_meters * (width / 2.0), self.to_meters * (height / 2.0)),
        };
        let Point { lon, lat } = self.centre;
        let lat_delta = rad_to_deg(half_h / EARTH_RADIUS_M);
        let lon_delta_top = rad_to_deg(half_w / EARTH_RADIUS_M / crmath::cos(deg_to_rad(lat + lat_delta)));
        let lon_delta_bottom = rad_to_deg(half_w / EARTH_RADIUS_M / crmath::cos(deg_to_rad(lat - lat_delta)));
        let lon_delta = if lat < 0.0 { lon_delta_bottom } else { lon_delta_top };
        (lon - lon_delta, lat - lat_delta, lon + lon_delta, lat + lat_delta)
    }
}

/// The step whose cells are about as wide as a search reaching `meters` from a centre at
/// latitude `lat` (cells narrow toward the poles, so a step less there).
fn estimate_step(meters: f64, lat: f64) -> u8 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    let mut m = meters;
    while m < MERCATOR_MAX {
        m *= 2.0;
        step += 1;
    }
    // Two steps coarser than the estimate, so the 3x3 cells cover the search.
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u8
}

/// Moves a cell `d` (±1) cells east/west, wrapping around the lane. The latitude lane
/// is kept as it was, upper-limit bit included.
fn move_lon(c: Cell, d: i8) -> Cell {
    let mask = (1u32 << c.step) - 1;
    let lane = squeeze(c.bits >> 1).wrapping_add_signed(d as i32) & mask;
    Cell { bits: (spread(lane) << 1) | (c.bits & 0x5555_5555_5555_5555), step: c.step }
}

/// Moves a cell `d` (±1) cells north/south, wrapping around the lane.
fn move_lat(c: Cell, d: i8) -> Cell {
    let mask = (1u32 << c.step) - 1;
    let lane = squeeze(c.bits).wrapping_add_signed(d as i32) & mask;
    Cell { bits: spread(lane) | (c.bits & 0xAAAA_AAAA_AAAA_AAAA), step: c.step }
}

/// The 3x3 cells of a search, in the order they are scanned: centre, north, south, east,
/// west, north-east, north-west, south-east, south-west. None: a neighbour the search
/// cannot reach (beyond the bounding box), skipped.
fn search_cells(shape: &Shape) -> [Option<Cell>; 9] {
    let (min_lon, min_lat, max_lon, max_lat) = shape.bounds();
    let mut step = estimate_step(shape.reach_m(), shape.centre.lat);
    let mut centre_cell = encode(shape.centre, LAT_RANGE, step);
    let reaches_past = |c: Cell| {
        let (n, s) = (decode(move_lat(c, 1), LAT_RANGE), decode(move_lat(c, -1), LAT_RANGE));
        let (e, w) = (decode(move_lon(c, 1), LAT_RANGE), decode(move_lon(c, -1), LAT_RANGE));
        n.lat.max < max_lat || s.lat.min > min_lat || e.lon.max < max_lon || w.lon.min > min_lon
    };
    // Near the edge of a cell the neighbours may not reach the whole bounding box: one
    // step coarser they do.
    if step > 1 && reaches_past(centre_cell) {
        step -= 1;
        centre_cell = encode(shape.centre, LAT_RANGE, step);
    }
    let c = centre_cell;
    let (n, s, e, w) = (move_lat(c, 1), move_lat(c, -1), move_lon(c, 1), move_lon(c, -1));
    let mut cells = [Some(c), Some(n), Some(s), Some(e), Some(w), Some(move_lat(e, 1)), Some(move_lat(w, 1)), Some(move_lat(e, -1)), Some(move_lat(w, -1))];
    const NORTH: [usize; 3] = [1, 5, 6];
    const SOUTH: [usize; 3] = [2, 7, 8];
    const EAST: [usize; 3] = [3, 5, 7];
    const WEST: [usize; 3] = [4, 6, 8];
    if step >= 2 {
        let area = decode(c, LAT_RANGE);
        let mut drop = |side: [usize; 3]| side.iter().for_each(|&i| cells[i] = None);
        if area.lat.min < min_lat {
            drop(SOUTH);
        }
        if area.lat.max > max_lat {
            drop(NORTH);
        }
        if area.lon.min < min_lon {
            drop(WEST);
        }
        if area.lon.max > max_lon {
            drop(EAST);
        }
    }
    cells
}

/// The score ranges `[min, max)` to scan for a search, in order. At coarse steps
/// neighbours can coincide (the lanes wrap around): a cell equal to the one scanned just
/// before it is skipped, which is the only de-duplication Redis does (the first
/// neighbour is never compared with the centre).
pub fn search_ranges(shape: &Shape) -> alloc::vec::Vec<(f64, f64)> {
    let mut out = alloc::vec::Vec::with_capacity(9);
    let mut last: Option<(usize, Cell)> = None;
    for (i, cell) in search_cells(shape).iter().enumerate() {
        let Some(cell) = *cell else { continue };
        if let Some((li, lc)) = last
            && li > 0
            && lc == cell
        {
            continue;
        }
        out.push(score_range(cell));
        last = Some((i, cell));
    }
    out
}

/// The scores of the points inside a cell: its bits followed by zeros up to 52 bits,
/// up to (excluded) the next cell's.
fn score_range(c: Cell) -> (f64, f64) {
    let shift = 52 - 2 * c.step as u32;
    (c.bits.wrapping_shl(shift) as f64, c.bits.wrapping_add(1).wrapping_shl(shift) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(lon: f64, lat: f64) -> Point {
        Point::new(lon, lat).expect("in range")
    }

    /// The fast math's error is far below `surely_beyond`'s margin everywhere on the
    /// map (near points, far points, antipodes, poles), so it never turns away a point
    /// the correctly rounded distance keeps.
    #[test]
    fn fast_distance_is_within_the_margin_of_the_exact_one() {
        let mut rng = crate::util::Rng::new(11);
        let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut worst: f64 = 0.0;
        for i in 0..200_000 {
            let a = p(unit() * 360.0 - 180.0, unit() * 170.0 - 85.0);
            let b = match i % 4 {
                // Near the first point, at every scale.
                0 => p((a.lon + (unit() - 0.5) * 1e-3).clamp(-180.0, 180.0), (a.lat + (unit() - 0.5) * 1e-3).clamp(-85.0, 85.0)),
                // Nearly antipodal.
                1 => p(if a.lon > 0.0 { a.lon - 180.0 } else { a.lon + 180.0 } + (unit() - 0.5) * 1e-6, (-a.lat + (unit() - 0.5) * 1e-6).clamp(-85.0, 85.0)),
                _ => p(unit() * 360.0 - 180.0, unit() * 170.0 - 85.0),
            };
            let (fast, exact) = (fast_distance(a, b), distance(a, b));
            let err = libm::fabs(fast - exact) / (exact * 1e-6 + 1e-3);
            worst = worst.max(err);
            assert!(!surely_beyond(a, b, exact), "{a:?} {b:?}: fast {fast} exact {exact}");
        }
        assert!(worst < 0.05, "the fast distance strays {worst} of the margin");
    }

    #[test]
    fn limits() {
        assert!(Point::new(180.0, 85.05112878).is_ok());
        assert!(Point::new(-180.0, -85.05112878).is_ok());
        assert_eq!(Point::new(180.0000001, 0.0), Err(OutOfRange { lon: 180.0000001, lat: 0.0 }));
        assert!(Point::new(0.0, 85.05112879).is_err());
        assert!(Point::new(f64::NAN, 0.0).is_err());
        assert!(Point::new(f64::INFINITY, 0.0).is_err());
    }

    #[test]
    fn interleaving_round_trips() {
        for v in [0u32, 1, 0x3ff_ffff, 0xdead_beef, u32::MAX] {
            assert_eq!(squeeze(spread(v)), v);
            assert_eq!(squeeze(spread(v) << 1 >> 1), v);
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    // Scores and positions recorded from redis-server 7.0.15 (GEOADD, ZSCORE, GEOPOS).
    #[test]
    fn scores_as_redis() {
        assert_eq!(score_of(p(13.361389, 38.115556)), 3479099956230698);
        assert_eq!(score_of(p(15.087269, 37.502669)), 3479447370796909);
        // The upper limits encode one past the last cell.
        assert_eq!(score_of(p(180.0, 0.0)), 10133099161583616);
        assert_eq!(score_of(p(0.0, 85.05112878)), 6755399441055744);
        assert_eq!(score_of(p(-180.0, 0.0)), 1125899906842624);
        assert_eq!(score_of(p(0.0, -85.05112878)), 2251799813685248);
        let palermo = point_of_score(3479099956230698.0);
        assert_eq!(palermo, Point { lon: 13.361389338970184, lat: 38.1155563954963 });
        assert_eq!(point_of_score(10133099161583616.0).lon, 180.0);
        assert_eq!(point_of_score(6755399441055744.0).lat, LAT_MAX);
    }

    #[test]
    fn foreign_scores_convert_as_x86_64() {
        assert_eq!(cell_of_score(-1.0).bits, u64::MAX);
        assert_eq!(cell_of_score(-2.5).bits, u64::MAX - 1);
        assert_eq!(cell_of_score(1.5).bits, 1);
        assert_eq!(cell_of_score(1e30).bits, 0);
        assert_eq!(cell_of_score(f64::INFINITY).bits, 0);
        assert_eq!(cell_of_score(f64::NEG_INFINITY).bits, 1 << 63);
        assert_eq!(cell_of_score(-1e30).bits, 1 << 63);
        assert_eq!(cell_of_score(1e19).bits, 10_000_000_000_000_000_000);
        // Whatever the bits, the decoded point stays inside the limits.
        for s in [-1.0, 1e19, f64::NEG_INFINITY] {
            let q = point_of_score(s);
            assert!(Point::new(q.lon, q.lat).is_ok());
        }
    }

    #[test]
    fn geohash_strings_as_redis() {
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0), b"sqdtr74hyu0");
        assert_eq!(&geohash_string(10133099161583616.0), b"80000000000");
        assert_eq!(&geohash_string(1.5), b"00bh0hbj210");
    }

    #[test]
    fn distances_as_redis() {
        let (a, b) = (point_of_score(3479099956230698.0), point_of_score(3479447370796909.0));
        assert_eq!(alloc::format!("{:.4}", distance(a, b)), "166274.1516");
        assert_eq!(distance(a, a), 0.0);
        // Same meridian: the latitude difference alone.
        let d = distance(p(10.0, 0.0), p(10.0, 1.0));
        assert_eq!(d, EARTH_RADIUS_M * deg_to_rad(1.0));
    }

    #[test]
    fn steps() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(f64::INFINITY, 0.0), 1);
        // 1 m doubles 25 times to pass 20037726.37 m: step 26, less the 2 of margin.
        assert_eq!(estimate_step(1.0, 0.0), 24);
        assert_eq!(estimate_step(1.0, 70.0), 23);
        assert_eq!(estimate_step(1.0, -81.0), 22);
        assert_eq!(estimate_step(1e12, 0.0), 1);
    }

    #[test]
    fn neighbours_wrap() {
        let c = Cell { bits: 0, step: 2 };
        assert_eq!(move_lon(c, -1), Cell { bits: interleave(0, 3), step: 2 });
        assert_eq!(move_lat(c, -1), Cell { bits: interleave(3, 0), step: 2 });
        assert_eq!(move_lon(move_lon(c, -1), 1), c);
        // The upper-limit bit of the other lane stays, its own wraps away.
        let edge = encode(p(180.0, 0.0), LAT_RANGE, 3);
        assert_eq!(squeeze(edge.bits >> 1), 8);
        assert_eq!(squeeze(move_lon(edge, 1).bits >> 1), 1);
        assert_eq!(squeeze(move_lat(edge, 1).bits >> 1), 8);
    }

    #[test]
    fn ranges_cover_the_centre() {
        let shape = Shape { centre: p(15.0, 37.0), extent: Extent::Radius(200.0), to_meters: 1000.0 };
        let ranges = search_ranges(&shape);
        assert!(!ranges.is_empty() && ranges.len() <= 9);
        let s = score_of(p(15.0, 37.0)) as f64;
        assert!(ranges.iter().any(|&(lo, hi)| lo <= s && s < hi));
        // A huge search at step 1: four distinct cells.
        let all = Shape { centre: p(0.0, 0.0), extent: Extent::Radius(f64::INFINITY), to_meters: 1.0 };
        assert_eq!(search_ranges(&all).len(), 4);
    }
}
