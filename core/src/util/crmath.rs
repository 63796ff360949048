//! Correctly rounded `sin`, `cos` and `asin`. GEO distances are printed to 17 digits
//! (STOREDIST scores) and compared with radii, so they must come out of the same math
//! as redis-server's: glibc's, which rounds these functions correctly in all but
//! vanishingly rare cases, where `libm` (musl's algorithms) is off by one unit in the
//! last place a few percent of the time. Each result is computed in double-double
//! arithmetic (about 106 bits) and rounded once.
//!
//! The double-double building blocks are the classic error-free transformations
//! (Knuth's two-sum, Dekker's split product); the series are plain Taylor series.

/// An unevaluated sum `hi + lo` with `|lo| <= ulp(hi) / 2`.
#[derive(Clone, Copy, Debug)]
struct Dd {
    hi: f64,
    lo: f64,
}

/// π/2 as three doubles (about 160 bits).
const PIO2: [f64; 3] = [core::f64::consts::FRAC_PI_2, 6.123233995736766e-17, -1.4973849048591698e-33];

/// Arguments past this are reduced by `libm` (the GEO commands only meet them with
/// absurd radii, where the bounding box they feed is meaningless anyway).
const MAX_REDUCED: f64 = 1048576.0;

/// Taylor terms: r^31/31! < 1e-35 for |r| <= π/4 + a little.
const TERMS: u32 = 15;

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd { hi: s, lo: (a - (s - bb)) + (b - bb) }
}

/// `two_sum` when |a| >= |b| is known.
fn quick_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd { hi: s, lo: b - (s - a) }
}

/// Splits a double into two halves of 26 bits whose product terms are exact.
fn split(a: f64) -> (f64, f64) {
    let t = 134217729.0 * a;
    let hi = t - (t - a);
    (hi, a - hi)
}

fn two_prod(a: f64, b: f64) -> Dd {
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    Dd { hi: p, lo: ((ah * bh - p) + ah * bl + al * bh) + al * bl }
}

impl Dd {
    fn of(v: f64) -> Dd {
        Dd { hi: v, lo: 0.0 }
    }

    fn add(self, o: Dd) -> Dd {
        let s = two_sum(self.hi, o.hi);
        let t = two_sum(self.lo, o.lo);
        let s = quick_two_sum(s.hi, s.lo + t.hi);
        quick_two_sum(s.hi, s.lo + t.lo)
    }

    fn neg(self) -> Dd {
        Dd { hi: -self.hi, lo: -self.lo }
    }

    fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }

    fn mul(self, o: Dd) -> Dd {
        let p = two_prod(self.hi, o.hi);
        quick_two_sum(p.hi, p.lo + (self.hi * o.lo + self.lo * o.hi))
    }

    /// Division by a small exact double (a factorial step).
    fn div_f(self, d: f64) -> Dd {
        let q1 = self.hi / d;
        let p = two_prod(q1, d);
        let rem = ((self.hi - p.hi) - p.lo) + self.lo;
        quick_two_sum(q1, rem / d)
    }
}

/// sin(r) for |r| <= ~π/4: r(1 - r²/(2·3)(1 - r²/(4·5)(…))).
fn sin_series(r: Dd) -> Dd {
    let r2 = r.mul(r);
    let mut t = Dd::of(1.0);
    for k in (1..=TERMS).rev() {
        let n = (2 * k) as f64;
        t = Dd::of(1.0).sub(r2.mul(t).div_f(n * (n + 1.0)));
    }
    r.mul(t)
}

/// cos(r) for |r| <= ~π/4: 1 - r²/(1·2)(1 - r²/(3·4)(…)).
fn cos_series(r: Dd) -> Dd {
    let r2 = r.mul(r);
    let mut t = Dd::of(1.0);
    for k in (1..=TERMS).rev() {
        let n = (2 * k) as f64;
        t = Dd::of(1.0).sub(r2.mul(t).div_f((n - 1.0) * n));
    }
    t
}

/// x = q·π/2 + r with |r| <= ~π/4: (q mod 4, r).
fn reduce(x: f64) -> (u8, Dd) {
    let q = libm::round(x / PIO2[0]);
    let r = Dd::of(x).sub(two_prod(q, PIO2[0])).sub(two_prod(q, PIO2[1])).sub(Dd::of(q * PIO2[2]));
    ((q as i64).rem_euclid(4) as u8, r)
}

/// sin(x), correctly rounded.
pub fn sin(x: f64) -> f64 {
    if x.is_nan() || libm::fabs(x) > MAX_REDUCED {
        return libm::sin(x);
    }
    let (q, r) = reduce(x);
    match q {
        0 => sin_series(r).hi,
        1 => cos_series(r).hi,
        2 => -sin_series(r).hi,
        _ => -cos_series(r).hi,
    }
}

/// cos(x), correctly rounded.
pub fn cos(x: f64) -> f64 {
    if x.is_nan() || libm::fabs(x) > MAX_REDUCED {
        return libm::cos(x);
    }
    let (q, r) = reduce(x);
    match q {
        0 => cos_series(r).hi,
        1 => -sin_series(r).hi,
        2 => -cos_series(r).hi,
        _ => sin_series(r).hi,
    }
}

/// sin(y) and cos(y) in double-double, for |y| <= π/2.
fn sin_cos_dd(y: f64) -> (Dd, Dd) {
    let (q, r) = reduce(y);
    let (s, c) = (sin_series(r), cos_series(r));
    match q {
        0 => (s, c),
        1 => (c, s.neg()),
        2 => (s.neg(), c.neg()),
        _ => (c.neg(), s),
    }
}

/// asin(x), correctly rounded: one Newton step on sin(y) = x in double-double from
/// `libm`'s result, which is within an ulp.
pub fn asin(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return libm::asin(x);
    }
    if libm::fabs(x) == 1.0 {
        return x * PIO2[0];
    }
    let y0 = libm::asin(x);
    let (s, c) = sin_cos_dd(y0);
    let delta = s.sub(Dd::of(x)).hi / c.hi;
    two_sum(y0, -delta).hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_points() {
        assert_eq!(sin(0.0), 0.0);
        assert_eq!(cos(0.0), 1.0);
        assert_eq!(asin(0.0), 0.0);
        assert_eq!(asin(1.0), core::f64::consts::FRAC_PI_2);
        assert_eq!(asin(-1.0), -core::f64::consts::FRAC_PI_2);
        assert_eq!(sin(core::f64::consts::FRAC_PI_2), 1.0);
        assert_eq!(cos(core::f64::consts::PI), -1.0);
        assert!(asin(1.5).is_nan());
        assert!(sin(f64::NAN).is_nan());
        assert!(cos(f64::INFINITY).is_nan());
    }

    // Results of glibc 2.36 (Python's math module on Debian 12) for arguments whose exact
    // value lies close to halfway between two doubles: the hard cases to round.
    #[test]
    fn agrees_with_glibc() {
        type Case = (fn(f64) -> f64, u64, u64);
        let cases: [Case; 6] = [
            (sin, 0xbeb301ee9a6801e3, 0xbeb301ee9a67fd6a),
            (sin, 0xbe92756a1446785c, 0xbe92756a1446781a),
            (cos, 0x3ff470aa91239b38, 0x3fd280aabf6cff24),
            (cos, 0x3ff0fd3ecbd5220a, 0x3fdf2f8c26cbecdc),
            (asin, 0x3f7b1fdab90dd806, 0x3f7b1fe7b72f29af),
            (asin, 0x3faff180e9e464c3, 0x3faff6d1655c9717),
        ];
        for (f, x, want) in cases {
            assert_eq!(f(f64::from_bits(x)).to_bits(), want, "{x:#x}");
        }
        // Within an ulp of libm everywhere.
        for i in 0..2000 {
            let x = (i as f64 - 1000.0) / 300.0;
            for (a, b) in [(sin(x), libm::sin(x)), (cos(x), libm::cos(x))] {
                assert!((a.to_bits() as i64 - b.to_bits() as i64).abs() <= 1, "{x}");
            }
            let y = (i as f64) / 2000.0;
            assert!((asin(y).to_bits() as i64 - libm::asin(y).to_bits() as i64).abs() <= 1, "{y}");
        }
    }
}
