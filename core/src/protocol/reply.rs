//! RESP2/RESP3 reply encoding. One writer, two dialects: each call emits the form the
//! connection negotiated with HELLO.

use crate::util::push_int;
use alloc::vec::Vec;

pub struct Reply {
    pub buf: Vec<u8>,
    pub resp3: bool,
    /// The codes of the errors written since the last `take_errors`, for INFO errorstats
    /// and the commands' failed/rejected counts (Redis's afterErrorReply).
    errors: Vec<ErrorCode>,
    recounted: bool,
}

/// An error reply's code: its first word when that ends within Redis's 32-byte search
/// (`WRONGTYPE`, `NOPERM`…), else `ERR`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ErrorCode {
    len: u8,
    text: [u8; 31],
}

impl ErrorCode {
    /// The code of error message `msg` (without the leading `-`).
    pub fn of(msg: &[u8]) -> ErrorCode {
        // Redis searches "-CODE …" for a space within its first 32 bytes (of the error's
        // line: `msg` may run on into the rest of a script's reply).
        let line = msg.iter().position(|&c| c == b'\r' || c == b'\n').map_or(msg, |n| &msg[..n]);
        let head = &line[..line.len().min(31)];
        let code: &[u8] = match head.iter().position(|&c| c == b' ') {
            Some(n) => &head[..n],
            None => b"ERR",
        };
        let mut text = [0; 31];
        text[..code.len()].copy_from_slice(code);
        ErrorCode { len: code.len() as u8, text }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.text[..self.len as usize]
    }
}

impl Reply {
    pub fn new() -> Self {
        Reply::with(Vec::with_capacity(256), false)
    }

    /// A writer appending to `buf` in the given dialect.
    pub fn with(buf: Vec<u8>, resp3: bool) -> Self {
        Reply { buf, resp3, errors: Vec::new(), recounted: false }
    }

    /// Empties the buffer for the next command's reply (errors not yet taken are dropped).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.errors.clear();
        self.recounted = false;
    }

    /// The codes of the errors written since the last call.
    pub fn take_errors(&mut self) -> impl Iterator<Item = ErrorCode> + '_ {
        self.errors.drain(..)
    }

    /// Whether an error was written since the last `take_errors`.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// An error written by other means (a script's reply, through `raw`).
    pub fn note_error(&mut self, code: ErrorCode) {
        self.errors.push(code);
    }

    /// An error already counted went out again (a script replied with the error of a
    /// command it called): the command failed, but the error counts once.
    pub fn note_recounted_error(&mut self) {
        self.recounted = true;
    }

    /// Whether `note_recounted_error` was called since the last call.
    pub fn take_recounted(&mut self) -> bool {
        core::mem::take(&mut self.recounted)
    }

    #[inline]
    fn line(&mut self, prefix: u8, n: i64) {
        self.buf.push(prefix);
        push_int(&mut self.buf, n);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Bytes that are already RESP (a script's reply).
    pub fn raw(&mut self, resp: &[u8]) {
        self.buf.extend_from_slice(resp);
    }

    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }
    pub fn simple(&mut self, s: &[u8]) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
    }
    /// `msg` carries its own code (`ERR …`, `WRONGTYPE …`); CR/LF are replaced so a
    /// reflected argument can never break the framing.
    pub fn error(&mut self, msg: &[u8]) {
        self.errors.push(ErrorCode::of(msg));
        self.buf.push(b'-');
        for &c in msg {
            self.buf.push(if c == b'\r' || c == b'\n' { b' ' } else { c });
        }
        self.buf.extend_from_slice(b"\r\n");
    }
    pub fn int(&mut self, v: i64) {
        self.line(b':', v);
    }
    pub fn bulk(&mut self, s: &[u8]) {
        self.line(b'$', s.len() as i64);
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
    }
    pub fn bulk_int(&mut self, v: i64) {
        let mut tmp = Vec::with_capacity(20);
        push_int(&mut tmp, v);
        self.bulk(&tmp);
    }
    pub fn null(&mut self) {
        if self.resp3 { self.buf.extend_from_slice(b"_\r\n") } else { self.buf.extend_from_slice(b"$-1\r\n") }
    }
    pub fn null_array(&mut self) {
        if self.resp3 { self.buf.extend_from_slice(b"_\r\n") } else { self.buf.extend_from_slice(b"*-1\r\n") }
    }
    pub fn array(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }
    pub fn map(&mut self, n: usize) {
        if self.resp3 { self.line(b'%', n as i64) } else { self.line(b'*', 2 * n as i64) }
    }
    pub fn set(&mut self, n: usize) {
        if self.resp3 { self.line(b'~', n as i64) } else { self.line(b'*', n as i64) }
    }
    pub fn push(&mut self, n: usize) {
        if self.resp3 { self.line(b'>', n as i64) } else { self.line(b'*', n as i64) }
    }
    pub fn double(&mut self, v: f64) {
        let s = crate::util::format_double(v);
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(&s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(&s);
        }
    }
    /// A double already formatted by the caller (Redis prints some doubles its own way,
    /// as GEOPOS's coordinates): a RESP3 double, a bulk string in RESP2.
    pub fn double_text(&mut self, text: &[u8]) {
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }
    pub fn boolean(&mut self, b: bool) {
        if self.resp3 { self.buf.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }) } else { self.int(b as i64) }
    }
    /// RESP3 verbatim string (`=len\r\ntxt:...`), a plain bulk string in RESP2.
    pub fn verbatim(&mut self, s: &[u8]) {
        if self.resp3 {
            self.line(b'=', s.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s);
        }
    }
    /// A HELP reply: an array of status lines, as Redis's `addReplyHelp` sends.
    pub fn help<I: IntoIterator<Item = B>, B: AsRef<[u8]>>(&mut self, items: I) {
        let items: Vec<B> = items.into_iter().collect();
        self.array(items.len());
        for i in &items {
            self.simple(i.as_ref());
        }
    }
    pub fn bulks<I: IntoIterator<Item = B>, B: AsRef<[u8]>>(&mut self, items: I) {
        let items: Vec<B> = items.into_iter().collect();
        self.array(items.len());
        for i in &items {
            self.bulk(i.as_ref());
        }
    }
}

impl Default for Reply {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn error_codes_as_redis_finds_them() {
        assert_eq!(ErrorCode::of(b"WRONGTYPE Operation against a key").as_bytes(), b"WRONGTYPE");
        assert_eq!(ErrorCode::of(b"OOPS").as_bytes(), b"ERR");
        assert_eq!(ErrorCode::of(b"AVERYVERYVERYVERYLONGERRORCODE12345 x").as_bytes(), b"ERR");
        // Only the error's own line is searched.
        assert_eq!(ErrorCode::of(b"OOPS\r\n+hello world\r\n").as_bytes(), b"ERR");
    }
}
