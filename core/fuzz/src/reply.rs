//! A strict checker for what the engine writes to clients: a concatenation of complete
//! RESP2/RESP3 values (a reply may be preceded by pub/sub messages), nothing left over.

/// Checks that `b` is zero or more complete RESP values. Err names the first problem.
pub fn check(b: &[u8]) -> Result<(), String> {
    let mut pos = 0;
    while pos < b.len() {
        pos = value(b, pos, 0)?;
    }
    Ok(())
}

fn line(b: &[u8], pos: usize) -> Result<(&[u8], usize), String> {
    let rest = &b[pos..];
    let Some(nl) = rest.iter().position(|&c| c == b'\n') else {
        return Err(format!("unterminated line at {pos}"));
    };
    if nl == 0 || rest[nl - 1] != b'\r' {
        return Err(format!("bare LF at {}", pos + nl));
    }
    let l = &rest[..nl - 1];
    if l.contains(&b'\r') {
        return Err(format!("CR inside a line at {pos}"));
    }
    Ok((l, pos + nl + 1))
}

fn int(l: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(l).ok().and_then(|s| s.parse::<i64>().ok()).ok_or_else(|| format!("bad integer {:?}", String::from_utf8_lossy(l)))
}

fn value(b: &[u8], pos: usize, depth: usize) -> Result<usize, String> {
    if depth > 64 {
        return Err("nesting deeper than 64".into());
    }
    let t = b[pos];
    let (l, next) = line(b, pos + 1)?;
    match t {
        b'+' => Ok(next),
        b'-' => {
            // Error replies start with an upper-case code (ERR, WRONGTYPE, …).
            if !l.first().is_some_and(|c| c.is_ascii_uppercase()) {
                return Err(format!("error reply without a code: {:?}", String::from_utf8_lossy(l)));
            }
            Ok(next)
        }
        b':' => int(l).map(|_| next),
        b'(' => {
            let s = l.strip_prefix(b"-").unwrap_or(l);
            if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
                return Err("bad big number".into());
            }
            Ok(next)
        }
        b'_' if l.is_empty() => Ok(next),
        b'#' if l == b"t" || l == b"f" => Ok(next),
        b',' => {
            let s = std::str::from_utf8(l).map_err(|_| "non-UTF-8 double")?;
            if matches!(s, "inf" | "-inf" | "nan") || s.parse::<f64>().is_ok() {
                Ok(next)
            } else {
                Err(format!("bad double {s:?}"))
            }
        }
        b'$' | b'=' | b'!' => {
            let n = int(l)?;
            if n == -1 && t == b'$' {
                return Ok(next);
            }
            if n < 0 {
                return Err(format!("negative length {n}"));
            }
            let end = next.checked_add(n as usize).ok_or("length overflow")?;
            if end + 2 > b.len() || &b[end..end + 2] != b"\r\n" {
                return Err(format!("bulk of {n} bytes at {pos} not followed by CRLF"));
            }
            if t == b'=' && (n < 4 || b[next + 3] != b':') {
                return Err("verbatim string without its 3-letter format".into());
            }
            Ok(end + 2)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = int(l)?;
            if n == -1 && t == b'*' {
                return Ok(next);
            }
            if n < 0 {
                return Err(format!("negative count {n}"));
            }
            let items = if matches!(t, b'%' | b'|') { 2 * n } else { n };
            let mut p = next;
            for _ in 0..items {
                if p >= b.len() {
                    return Err(format!("aggregate at {pos} announces {items} items, has fewer"));
                }
                p = value(b, p, depth + 1)?;
            }
            if t == b'|' {
                // An attribute is followed by the value it describes.
                if p >= b.len() {
                    return Err("attribute without a value".into());
                }
                p = value(b, p, depth + 1)?;
            }
            Ok(p)
        }
        _ => Err(format!("unknown type byte {:?} at {pos}", t as char)),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn accepts_and_rejects() {
        assert!(check(b"+OK\r\n:1\r\n$3\r\nabc\r\n*2\r\n$-1\r\n*-1\r\n%1\r\n+a\r\n_\r\n,1.5\r\n#t\r\n").is_ok());
        assert!(check(b"*2\r\n:1\r\n").is_err());
        assert!(check(b"$3\r\nab\r\n").is_err());
        assert!(check(b"-err lower\r\n").is_err());
        assert!(check(b"+a\nb\r\n").is_err());
    }
}
