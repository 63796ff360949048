//! Glob-style pattern matching (Redis's `stringmatchlen`): KEYS, SCAN MATCH, PSUBSCRIBE,
//! ACL key and channel patterns, CONFIG GET, COMMAND LIST FILTERBY PATTERN.

/// Glob-style matching with Redis's `stringmatchlen` semantics (`*`, `?`, `[...]`, `\`),
/// including its quirks: ranges compare bytes as C's signed `char`, an unterminated class
/// ends at the pattern's end, and a `\` inside a class compares case-sensitively.
///
/// Bounded as Redis's is since CVE-2022-36021 and CVE-2024-31228. Redis's recursion gives
/// up on every earlier `*` once the rest after the latest one matches nowhere (a longer
/// match for an earlier star would only start that rest later), so only the latest star is
/// ever retried: this is that control flow without the recursion, O(pattern × string).
/// And like Redis, whose recursion stops 1000 stars deep, a match that reaches a 1001st
/// star (not the pattern's last element) fails.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // One copy per case mode: the hot loop then has no case test per byte.
    if nocase { glob::<true>(pattern, string) } else { glob::<false>(pattern, string) }
}

fn glob<const NOCASE: bool>(pattern: &[u8], string: &[u8]) -> bool {
    let nocase = NOCASE;
    let (mut p, mut s) = (0usize, 0usize);
    // The latest star: where the pattern goes on after it, the string position that rest
    // is being tried at, and how many stars deep it is.
    let mut star: Option<(usize, usize, u32)> = None;
    loop {
        let step = if p < pattern.len() && s < string.len() {
            let c = pattern[p];
            if !matches!(c, b'*' | b'?' | b'[' | b'\\') {
                // The common case first: a plain byte.
                if lower(c, nocase) == lower(string[s], nocase) {
                    p += 1;
                    s += 1;
                    continue;
                }
                None
            } else {
                match c {
                    b'*' => {
                        while p + 1 < pattern.len() && pattern[p + 1] == b'*' {
                            p += 1;
                        }
                        if p + 1 == pattern.len() {
                            return true;
                        }
                        let depth = star.map_or(1, |(_, _, d)| d + 1);
                        if depth > 1000 {
                            return false;
                        }
                        let Some(at) = next_start(pattern, p + 1, string, s, nocase) else {
                            return false;
                        };
                        star = Some((p + 1, at, depth));
                        (p, s) = (p + 1, at);
                        continue;
                    }
                    b'?' => Some(p + 1),
                    b'[' => {
                        let (matched, close) = class_match(pattern, p + 1, string[s], nocase);
                        matched.then_some(close + 1)
                    }
                    b'\\' if p + 1 < pattern.len() => (lower(pattern[p + 1], nocase) == lower(string[s], nocase)).then_some(p + 2),
                    // A lone `\` at the end is a plain byte.
                    _ => (lower(c, nocase) == lower(string[s], nocase)).then_some(p + 1),
                }
            }
        } else {
            // The string or the pattern ran out. Trailing stars match nothing, once a byte
            // was consumed (Redis skips them only after a step: `*` does not match "").
            if s == string.len() {
                while s > 0 && p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
            }
            None
        };
        match step {
            Some(next) => {
                p = next;
                s += 1;
            }
            None => {
                // Retry the rest after the latest star one byte later; with no byte left
                // (or no star), nothing can match.
                let Some((after, from, depth)) = star else {
                    return false;
                };
                let Some(at) = next_start(pattern, after, string, from + 1, nocase) else {
                    return false;
                };
                star = Some((after, at, depth));
                (p, s) = (after, at);
            }
        }
    }
}

/// The first position at or after `from` where the pattern's rest (at `after`, just past a
/// star) can start: where its first byte is, when that is a plain byte; None when no byte
/// of the string is left to try, as in Redis's star loop.
fn next_start(pattern: &[u8], after: usize, string: &[u8], from: usize, nocase: bool) -> Option<usize> {
    let literal = match pattern[after] {
        b'*' | b'?' | b'[' => None,
        b'\\' if after + 1 < pattern.len() => Some(pattern[after + 1]),
        c => Some(c),
    };
    let rest = string.get(from..).filter(|r| !r.is_empty())?;
    match literal {
        None => Some(from),
        Some(c) if !nocase => rest.iter().position(|&b| b == c).map(|i| from + i),
        Some(c) => rest.iter().position(|&b| b.eq_ignore_ascii_case(&c)).map(|i| from + i),
    }
}

/// One `[...]` class starting at `p` (just after the `[`) against byte `c`: whether it
/// matches, and the index of its closing `]` (of the pattern's last byte when the class is
/// unterminated).
fn class_match(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> (bool, usize) {
    let not = p < pattern.len() && pattern[p] == b'^';
    if not {
        p += 1;
    }
    let mut matched = false;
    loop {
        if p >= pattern.len() {
            // Unterminated: Redis steps back onto the last byte and ends the class there.
            p = pattern.len() - 1;
            break;
        }
        if pattern[p] == b'\\' && p + 1 < pattern.len() {
            p += 1;
            matched |= pattern[p] == c;
        } else if pattern[p] == b']' {
            break;
        } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' {
            // C's `char` is signed on the platforms Redis runs on: bytes past 0x7f are
            // negative in the comparison.
            let signed = |b: u8| lower(b, nocase) as i8 as i32;
            let (mut lo, mut hi) = (pattern[p] as i8 as i32, pattern[p + 2] as i8 as i32);
            if lo > hi {
                core::mem::swap(&mut lo, &mut hi);
            }
            if nocase {
                (lo, hi) = (signed(lo as u8), signed(hi as u8));
            }
            let x = signed(c);
            p += 2;
            matched |= x >= lo && x <= hi;
        } else {
            matched |= lower(pattern[p], nocase) == lower(c, nocase);
        }
        p += 1;
    }
    (matched != not, p)
}

fn lower(c: u8, nocase: bool) -> u8 {
    if nocase { c.to_ascii_lowercase() } else { c }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a\\*b", b"axb", false));
        assert!(glob_match(b"user:*", b"user:", false));
        assert!(glob_match(b"*a*", b"bab", false));
        assert!(!glob_match(b"", b"a", false));
        assert!(glob_match(b"", b"", false));
        assert!(glob_match(b"A*", b"abc", true));
    }

    /// Redis 7.0.15's `stringmatchlen_impl`, recursion and all (with `skipLongerMatches`
    /// and the nesting limit): the reference the iterative matcher is checked against.
    fn redis_glob(p: &[u8], s: &[u8], nocase: bool) -> bool {
        fn inner(mut p: &[u8], mut s: &[u8], nocase: bool, skip: &mut bool, nesting: u32) -> bool {
            if nesting > 1000 {
                return false;
            }
            let low = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
            while !p.is_empty() && !s.is_empty() {
                match p[0] {
                    b'*' => {
                        while p.len() > 1 && p[1] == b'*' {
                            p = &p[1..];
                        }
                        if p.len() == 1 {
                            return true;
                        }
                        while !s.is_empty() {
                            if inner(&p[1..], s, nocase, skip, nesting + 1) {
                                return true;
                            }
                            if *skip {
                                return false;
                            }
                            s = &s[1..];
                        }
                        *skip = true;
                        return false;
                    }
                    b'?' => s = &s[1..],
                    b'[' => {
                        p = &p[1..];
                        let not = !p.is_empty() && p[0] == b'^';
                        if not {
                            p = &p[1..];
                        }
                        let mut matched = false;
                        let mut unterminated = false;
                        loop {
                            if p.is_empty() {
                                unterminated = true;
                                break;
                            }
                            if p[0] == b'\\' && p.len() >= 2 {
                                p = &p[1..];
                                matched |= p[0] == s[0];
                            } else if p[0] == b']' {
                                break;
                            } else if p.len() >= 3 && p[1] == b'-' {
                                let (mut a, mut b) = (p[0] as i8 as i32, p[2] as i8 as i32);
                                if a > b {
                                    core::mem::swap(&mut a, &mut b);
                                }
                                let sl = |x: i32| low(x as u8) as i8 as i32;
                                let (a, b, c) = (sl(a), sl(b), sl(s[0] as i8 as i32));
                                p = &p[2..];
                                matched |= c >= a && c <= b;
                            } else if low(p[0]) == low(s[0]) {
                                matched = true;
                            }
                            p = &p[1..];
                        }
                        if matched == not {
                            return false;
                        }
                        s = &s[1..];
                        if unterminated {
                            return s.is_empty();
                        }
                    }
                    b'\\' if p.len() >= 2 => {
                        p = &p[1..];
                        if low(p[0]) != low(s[0]) {
                            return false;
                        }
                        s = &s[1..];
                    }
                    c => {
                        if low(c) != low(s[0]) {
                            return false;
                        }
                        s = &s[1..];
                    }
                }
                p = &p[1..];
                if s.is_empty() {
                    while !p.is_empty() && p[0] == b'*' {
                        p = &p[1..];
                    }
                    break;
                }
            }
            p.is_empty() && s.is_empty()
        }
        inner(p, s, nocase, &mut false, 0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        /// The iterative matcher answers exactly as Redis's recursive one, quirks included.
        #[test]
        fn glob_agrees_with_redis(p in proptest::collection::vec(proptest::sample::select(&b"ab*?[]^-\\Az\x80\xff"[..]), 0..12),
                                  s in proptest::collection::vec(proptest::sample::select(&b"abAz*?[]-\\\x80\xe9\xff"[..]), 0..10),
                                  nocase: bool) {
            proptest::prop_assert_eq!(glob_match(&p, &s, nocase), redis_glob(&p, &s, nocase), "pattern {:?} string {:?}", alloc::string::String::from_utf8_lossy(&p), alloc::string::String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn deep_stars_agree_with_redis() {
        for stars in [999, 1000, 1001, 1002, 1500] {
            for tail in [&b""[..], b"b", b"a", b"*"] {
                let mut p: Vec<u8> = core::iter::repeat_n(*b"*a", stars).flatten().collect();
                p.extend_from_slice(tail);
                for len in [stars - 1, stars, stars + 1, stars + 5] {
                    let s = alloc::vec![b'a'; len];
                    assert_eq!(glob_match(&p, &s, false), redis_glob(&p, &s, false), "{stars} stars, tail {tail:?}, {len} bytes");
                }
            }
        }
    }

    /// CVE-2022-36021: without the early exit these take 2^20 and more steps (the test
    /// would not finish); with it, a few thousand.
    #[test]
    fn pathological_globs_end() {
        let s = [b'a'; 40];
        assert!(!glob_match(b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", &s, false));
        assert!(glob_match(b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*", &s, false));
        let long = [b'a'; 100_000];
        let mut pat = Vec::new();
        for _ in 0..500 {
            pat.extend_from_slice(b"*a");
        }
        pat.push(b'b');
        assert!(!glob_match(&pat, &long, false));
        // Past 1000 nested stars the match gives up (CVE-2024-31228: bounded stack).
        let deep: Vec<u8> = core::iter::repeat_n(*b"*a", 1200).flatten().collect();
        assert!(!glob_match(&deep, &[b'a'; 1300], false));
        // The early exit keeps matches that need a later start of the rest.
        assert!(glob_match(b"*ab*ab", b"aabxab", false));
        assert!(glob_match(b"*a?c*", b"xxabcabd", false));
        assert!(!glob_match(b"*a?c*e", b"xxabcabd", false));
    }
}
