//! RESP request framing (client → server), shared by the host (which frames and
//! validates what arrives on a socket) and the engine (which re-reads validated commands).
//!
//! Limits are checked before anything is allocated for a length the client announced.

use alloc::vec::Vec;

/// Request limits, named after the redis.conf settings they mirror.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `proto-max-bulk-len`
    pub max_bulk_len: usize,
    /// Redis hard-codes 1024*1024 arguments per command.
    pub max_multibulk_len: usize,
    /// `PROTO_INLINE_MAX_SIZE`: an inline request or a length line longer than this is refused.
    pub max_inline_len: usize,
    /// The client has not authenticated while the server needs it (Redis's authRequired):
    /// at most 10 arguments of at most 16 KiB each (CVE-2021-32675).
    pub unauthenticated: bool,
}

/// The most arguments and the longest argument an unauthenticated client may send.
pub const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
pub const UNAUTHENTICATED_MAX_BULK: usize = 16 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits { max_bulk_len: 512 * 1024 * 1024, max_multibulk_len: 1024 * 1024, max_inline_len: 64 * 1024, unauthenticated: false }
    }
}

/// A protocol violation. Redis replies `-ERR Protocol error: <msg>` and closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    TooBigInline,
    TooBigMbulkCount,
    TooBigBulkCount,
    InvalidMultibulkLength,
    InvalidBulkLength,
    UnauthenticatedMultibulkLength,
    UnauthenticatedBulkLength,
    ExpectedDollar(u8),
    UnbalancedQuotes,
}

impl ProtocolError {
    pub fn message(&self) -> alloc::string::String {
        use alloc::format;
        match self {
            ProtocolError::TooBigInline => "Protocol error: too big inline request".into(),
            ProtocolError::TooBigMbulkCount => "Protocol error: too big mbulk count string".into(),
            ProtocolError::TooBigBulkCount => "Protocol error: too big bulk count string".into(),
            ProtocolError::InvalidMultibulkLength => "Protocol error: invalid multibulk length".into(),
            ProtocolError::InvalidBulkLength => "Protocol error: invalid bulk length".into(),
            ProtocolError::UnauthenticatedMultibulkLength => "Protocol error: unauthenticated multibulk length".into(),
            ProtocolError::UnauthenticatedBulkLength => "Protocol error: unauthenticated bulk length".into(),
            ProtocolError::ExpectedDollar(c) => format!("Protocol error: expected '$', got '{}'", *c as char),
            ProtocolError::UnbalancedQuotes => "Protocol error: unbalanced quotes in request".into(),
        }
    }
}

/// What one framing step found at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// Not enough bytes yet. `need` is a lower bound on the total buffer length that can
    /// make progress, so a caller can avoid re-scanning a large half-received bulk.
    Incomplete {
        need: usize,
    },
    /// A multibulk command of `consumed` bytes; argument byte ranges were pushed to `args`.
    Multibulk {
        consumed: usize,
    },
    /// An inline command; its arguments (already unquoted) were pushed to `inline`.
    Inline {
        consumed: usize,
    },
    /// Bytes that form no command (empty inline line, `*0`, `*-1`): skip them.
    Skip {
        consumed: usize,
    },
    Error(ProtocolError),
}

/// Finds a CRLF-terminated line starting at `from`; returns the index of '\r'.
#[inline]
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < buf.len() {
        match buf[i + 1..].iter().position(|&b| b == b'\n') {
            None => return None,
            Some(p) => {
                let nl = i + 1 + p;
                if buf[nl - 1] == b'\r' {
                    return Some(nl - 1);
                }
                i = nl;
            }
        }
    }
    None
}

/// For a buffer with no complete line yet: the least index its line's '\r' can have. A
/// trailing '\r' may be the line's end with the '\n' still in flight, so the limit must not
/// refuse a line that fits once the '\n' arrives (the result must not depend on how TCP
/// split the bytes; found by the `resp` fuzz target).
fn line_lower_bound(buf: &[u8]) -> usize {
    if buf.last() == Some(&b'\r') { buf.len() - 1 } else { buf.len() }
}

/// Parses a strict decimal length (what Redis's string2ll accepts).
fn parse_len(s: &[u8]) -> Option<i64> {
    crate::util::parse_i64(s)
}

/// Frames one request at the start of `buf`.
pub fn frame(buf: &[u8], limits: &Limits, args: &mut Vec<(usize, usize)>, inline: &mut Vec<Vec<u8>>) -> Frame {
    if buf.is_empty() {
        return Frame::Incomplete { need: 1 };
    }
    if buf[0] != b'*' {
        return frame_inline(buf, limits, inline);
    }
    let Some(cr) = find_crlf(buf, 1) else {
        if line_lower_bound(buf) > limits.max_inline_len {
            return Frame::Error(ProtocolError::TooBigMbulkCount);
        }
        return Frame::Incomplete { need: buf.len() + 1 };
    };
    if cr > limits.max_inline_len {
        return Frame::Error(ProtocolError::TooBigMbulkCount);
    }
    let count = match parse_len(&buf[1..cr]) {
        Some(n) if n <= limits.max_multibulk_len as i64 => n,
        _ => return Frame::Error(ProtocolError::InvalidMultibulkLength),
    };
    if limits.unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
        return Frame::Error(ProtocolError::UnauthenticatedMultibulkLength);
    }
    let mut pos = cr + 2;
    if count <= 0 {
        return Frame::Skip { consumed: pos };
    }
    let start_len = args.len();
    for _ in 0..count {
        if pos >= buf.len() {
            args.truncate(start_len);
            return Frame::Incomplete { need: pos + 1 };
        }
        if buf[pos] != b'$' {
            args.truncate(start_len);
            return Frame::Error(ProtocolError::ExpectedDollar(buf[pos]));
        }
        let Some(cr) = find_crlf(buf, pos + 1) else {
            args.truncate(start_len);
            if line_lower_bound(buf) - pos > limits.max_inline_len {
                return Frame::Error(ProtocolError::TooBigBulkCount);
            }
            return Frame::Incomplete { need: buf.len() + 1 };
        };
        if cr - pos > limits.max_inline_len {
            args.truncate(start_len);
            return Frame::Error(ProtocolError::TooBigBulkCount);
        }
        let len = match parse_len(&buf[pos + 1..cr]) {
            Some(n) if n >= 0 && n as u64 <= limits.max_bulk_len as u64 => n as usize,
            _ => {
                args.truncate(start_len);
                return Frame::Error(ProtocolError::InvalidBulkLength);
            }
        };
        if limits.unauthenticated && len > UNAUTHENTICATED_MAX_BULK {
            args.truncate(start_len);
            return Frame::Error(ProtocolError::UnauthenticatedBulkLength);
        }
        let data = cr + 2;
        let end = data + len;
        if end + 2 > buf.len() {
            args.truncate(start_len);
            return Frame::Incomplete { need: end + 2 };
        }
        args.push((data, end));
        pos = end + 2;
    }
    Frame::Multibulk { consumed: pos }
}

fn frame_inline(buf: &[u8], limits: &Limits, inline: &mut Vec<Vec<u8>>) -> Frame {
    // Redis finds the end of an inline request with strchr, which stops at a NUL: a line
    // with a NUL before its newline never completes (until the inline limit refuses it).
    let nl = buf.iter().position(|&b| b == b'\n' || b == 0).filter(|&i| buf[i] == b'\n');
    let Some(nl) = nl else {
        if buf.len() > limits.max_inline_len {
            return Frame::Error(ProtocolError::TooBigInline);
        }
        return Frame::Incomplete { need: buf.len() + 1 };
    };
    if nl > limits.max_inline_len {
        return Frame::Error(ProtocolError::TooBigInline);
    }
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    match split_args(line) {
        None => Frame::Error(ProtocolError::UnbalancedQuotes),
        Some(v) if v.is_empty() => Frame::Skip { consumed: nl + 1 },
        Some(v) => {
            inline.extend(v);
            Frame::Inline { consumed: nl + 1 }
        }
    }
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// Splits an inline command line like Redis's `sdssplitargs`: spaces separate arguments,
/// "double quotes" take C escapes (\n, \xHH…), 'single quotes' take only \'.
/// Returns None on unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis reads the line as a C string: it ends at the first NUL.
    let line = match line.iter().position(|&b| b == 0) {
        Some(n) => &line[..n],
        None => line,
    };
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut inq = false;
        let mut insq = false;
        loop {
            if inq {
                if i >= n {
                    return None;
                }
                if line[i] == b'\\' && i + 3 < n && line[i + 1] == b'x' && is_hex(line[i + 2]) && is_hex(line[i + 3]) {
                    cur.push(hex_val(line[i + 2]) * 16 + hex_val(line[i + 3]));
                    i += 3;
                } else if line[i] == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                } else if line[i] == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    inq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(line[i]);
                }
            } else if insq {
                if i >= n {
                    return None;
                }
                if line[i] == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if line[i] == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    insq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(line[i]);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        let _ = (inq, insq);
        out.push(cur);
    }
}

/// Appends `args` as a RESP multibulk command.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.push(b'*');
    crate::util::push_int(out, args.len() as i64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        crate::util::push_int(out, a.len() as i64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Reads back a multibulk produced by `encode_command` or validated by `frame`.
/// Returns the argument ranges and bytes consumed; None if malformed.
pub fn read_command(buf: &[u8], args: &mut Vec<(usize, usize)>) -> Option<usize> {
    let limits = Limits { max_bulk_len: usize::MAX >> 1, max_multibulk_len: usize::MAX >> 1, max_inline_len: usize::MAX >> 1, unauthenticated: false };
    let mut inline = Vec::new();
    match frame(buf, &limits, args, &mut inline) {
        Frame::Multibulk { consumed } => Some(consumed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn f(buf: &[u8]) -> (Frame, Vec<Vec<u8>>) {
        let mut args = Vec::new();
        let mut inline = Vec::new();
        let r = frame(buf, &Limits::default(), &mut args, &mut inline);
        let mut v: Vec<Vec<u8>> = args.iter().map(|&(a, b)| buf[a..b].to_vec()).collect();
        v.extend(inline);
        (r, v)
    }

    #[test]
    fn multibulk() {
        let (r, a) = f(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nrest");
        assert_eq!(r, Frame::Multibulk { consumed: 20 });
        assert_eq!(a, vec![b"GET".to_vec(), b"k".to_vec()]);
    }

    #[test]
    fn incomplete_everywhere() {
        let full = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        for i in 0..full.len() {
            assert!(matches!(f(&full[..i]).0, Frame::Incomplete { .. }), "prefix {i}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(f(b"*x\r\n").0, Frame::Error(ProtocolError::InvalidMultibulkLength));
        assert_eq!(f(b"*2000000\r\n").0, Frame::Error(ProtocolError::InvalidMultibulkLength));
        assert_eq!(f(b"*1\r\n+a\r\n").0, Frame::Error(ProtocolError::ExpectedDollar(b'+')));
        assert_eq!(f(b"*1\r\n$-1\r\n").0, Frame::Error(ProtocolError::InvalidBulkLength));
        assert_eq!(f(b"*1\r\n$999999999999\r\n").0, Frame::Error(ProtocolError::InvalidBulkLength));
        assert_eq!(f(b"\"abc\r\n").0, Frame::Error(ProtocolError::UnbalancedQuotes));
        let big = vec![b'a'; 70 * 1024];
        assert_eq!(f(&big).0, Frame::Error(ProtocolError::TooBigInline));
    }

    #[test]
    fn inline() {
        let (r, a) = f(b"set k \"a b\\x41\" 'c\\'d'\r\n");
        assert_eq!(r, Frame::Inline { consumed: 24 });
        assert_eq!(a, vec![b"set".to_vec(), b"k".to_vec(), b"a bA".to_vec(), b"c'd".to_vec()]);
        assert_eq!(f(b"\r\n").0, Frame::Skip { consumed: 2 });
        // A NUL before the newline: the request never completes, as in Redis (strchr).
        assert!(matches!(f(b"\x00\r\n").0, Frame::Incomplete { .. }));
        assert!(matches!(f(b"ping\x00junk\r\n").0, Frame::Incomplete { .. }));
        let mut long = b"ping\x00".to_vec();
        long.resize(70 * 1024, b'a');
        assert_eq!(f(&long).0, Frame::Error(ProtocolError::TooBigInline));
        // split_args itself reads a C string (it used to loop forever on a NUL).
        assert_eq!(split_args(b"a\x00b"), Some(vec![b"a".to_vec()]));
        assert_eq!(f(b"*0\r\n").0, Frame::Skip { consumed: 4 });
    }

    /// Fuzz regression (`resp` target): a length line exactly at the inline limit whose
    /// '\n' had not arrived yet was refused, although the whole line is accepted.
    #[test]
    fn length_line_at_the_limit_split_before_its_newline() {
        let lim = Limits { max_bulk_len: 1 << 20, max_multibulk_len: 1 << 20, max_inline_len: 4, unauthenticated: false };
        let fl = |buf: &[u8]| frame(buf, &lim, &mut Vec::new(), &mut Vec::new());
        // The crashing input: "*\x04*2" then "\r", then "\n".
        assert!(matches!(fl(b"*\x04*2\r"), Frame::Incomplete { .. }));
        assert_eq!(fl(b"*\x04*2\r\n"), Frame::Error(ProtocolError::InvalidMultibulkLength));
        assert!(matches!(fl(b"*123\r"), Frame::Incomplete { .. }));
        assert_eq!(fl(b"*1234\r"), Frame::Error(ProtocolError::TooBigMbulkCount));
        assert_eq!(fl(b"*1234\r\n"), Frame::Error(ProtocolError::TooBigMbulkCount));
        // The same for a bulk length line.
        assert!(matches!(fl(b"*1\r\n$123\r"), Frame::Incomplete { .. }));
        assert!(matches!(fl(b"*1\r\n$123\r\n"), Frame::Incomplete { .. }));
        assert_eq!(fl(b"*1\r\n$1234\r"), Frame::Error(ProtocolError::TooBigBulkCount));
    }

    /// CVE-2021-32675: before AUTH, at most 10 arguments of at most 16 KiB, refused as soon
    /// as the length line arrives (nothing of the data is waited for).
    #[test]
    fn unauthenticated_limits() {
        let lim = Limits { unauthenticated: true, ..Limits::default() };
        let fl = |buf: &[u8]| frame(buf, &lim, &mut Vec::new(), &mut Vec::new());
        assert_eq!(fl(b"*11\r\n"), Frame::Error(ProtocolError::UnauthenticatedMultibulkLength));
        assert_eq!(fl(b"*1048576\r\n"), Frame::Error(ProtocolError::UnauthenticatedMultibulkLength));
        // Past the general limit the general error comes first, as in Redis.
        assert_eq!(fl(b"*1048577\r\n"), Frame::Error(ProtocolError::InvalidMultibulkLength));
        assert!(matches!(fl(b"*10\r\n"), Frame::Incomplete { .. }));
        assert_eq!(fl(b"*1\r\n$16385\r\n"), Frame::Error(ProtocolError::UnauthenticatedBulkLength));
        assert!(matches!(fl(b"*1\r\n$16384\r\n"), Frame::Incomplete { .. }));
        assert_eq!(fl(b"*1\r\n$-1\r\n"), Frame::Error(ProtocolError::InvalidBulkLength));
        assert_eq!(ProtocolError::UnauthenticatedBulkLength.message(), "Protocol error: unauthenticated bulk length");
        let open = Limits::default();
        assert!(matches!(frame(b"*11\r\n", &open, &mut Vec::new(), &mut Vec::new()), Frame::Incomplete { .. }));
    }
}
