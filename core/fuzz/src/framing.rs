//! Target `resp`: the request framer (`memoria_core::protocol::resp::frame`) on arbitrary bytes, as
//! the host's connection loop drives it (`host/src/conn.rs`, `frame_all`: frame every
//! complete command at the front of the read buffer, keep the rest for the next read).
//!
//! Input: byte 0 picks the limits and how the stream is cut into reads; the rest is what
//! the client sends. Checks:
//! - framing never panics and never reports more bytes than it was given; `Incomplete`
//!   always asks for more than it has (or the host would spin);
//! - argument ranges lie inside the consumed bytes, and the engine's re-read of every
//!   record the host builds (`read_command`) gives back exactly the framed arguments;
//! - the commands and the final outcome do not depend on how the bytes were split into
//!   reads (TCP may deliver any split).

use memoria_core::protocol::batch::{self, BatchReader, BatchWriter};
use memoria_core::protocol::resp::{self, Frame, Limits};

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Waiting for more bytes, `usize` of them buffered.
    Waiting(usize),
    Quit,
    Error(String),
}

/// The host's `frame_all`, repeated over reads: returns the commands framed (each as its
/// argument list) and how the stream ended.
fn drive(stream: &[u8], cuts: &[usize], limits: &Limits) -> (Vec<Vec<Vec<u8>>>, End) {
    let mut buf: Vec<u8> = Vec::new();
    let mut cmds = Vec::new();
    let mut args = Vec::new();
    let mut inline = Vec::new();
    let mut out = BatchWriter::new();
    let mut fed = 0;
    let mut reads = cuts.iter().copied().chain(std::iter::once(stream.len()));
    loop {
        let Some(to) = reads.next() else {
            return (cmds, End::Waiting(buf.len()));
        };
        let to = to.clamp(fed, stream.len());
        buf.extend_from_slice(&stream[fed..to]);
        fed = to;
        let mut consumed = 0;
        out.clear();
        let end = loop {
            args.clear();
            inline.clear();
            let rest = &buf[consumed..];
            let f = resp::frame(rest, limits, &mut args, &mut inline);
            match f {
                Frame::Incomplete { need } => {
                    assert!(need > rest.len(), "Incomplete asks for {need} bytes with {} buffered: {rest:?}", rest.len());
                    break None;
                }
                Frame::Multibulk { consumed: n } => {
                    assert!(n > 0 && n <= rest.len(), "consumed {n} of {}", rest.len());
                    for &(a, b) in &args {
                        assert!(a <= b && b <= n, "argument range {a}..{b} outside {n} consumed bytes");
                    }
                    assert!(!args.is_empty(), "a multibulk command without arguments");
                    out.record(batch::REC_COMMAND, 1, &rest[..n]);
                    consumed += n;
                    if args.first().is_some_and(|&(a, b)| rest[a..b].eq_ignore_ascii_case(b"quit")) {
                        break Some(End::Quit);
                    }
                }
                Frame::Inline { consumed: n } => {
                    assert!(n > 0 && n <= rest.len(), "consumed {n} of {}", rest.len());
                    assert!(!inline.is_empty(), "an inline command without arguments");
                    out.begin(batch::REC_COMMAND, 1);
                    resp::encode_command(&mut out.buf, &inline);
                    out.end();
                    consumed += n;
                    if inline[0].eq_ignore_ascii_case(b"quit") {
                        break Some(End::Quit);
                    }
                }
                Frame::Skip { consumed: n } => {
                    assert!(n > 0 && n <= rest.len(), "skip of {n} of {}", rest.len());
                    consumed += n;
                }
                Frame::Error(e) => break Some(End::Error(e.message())),
            }
        };
        // What the engine reads back from the records the host built.
        let mut ra = Vec::new();
        for rec in BatchReader::new(&out.buf) {
            ra.clear();
            let n = resp::read_command(rec.payload, &mut ra).expect("the engine cannot re-read a framed command");
            assert_eq!(n, rec.payload.len(), "re-read consumed part of a record");
            cmds.push(ra.iter().map(|&(a, b)| rec.payload[a..b].to_vec()).collect());
        }
        buf.drain(..consumed);
        if let Some(end) = end {
            return (cmds, end);
        }
    }
}

pub fn run(data: &[u8]) {
    let Some((&cfg, stream)) = data.split_first() else { return };
    // Small limits reach the limit checks with small inputs.
    // The top bit frames as for an unauthenticated client (10 arguments, 16 KiB each).
    let unauthenticated = cfg & 0x80 != 0;
    let limits = match cfg & 3 {
        0 => Limits { unauthenticated, ..Limits::default() },
        1 => Limits { max_bulk_len: 16, max_multibulk_len: 8, max_inline_len: 32, unauthenticated },
        2 => Limits { max_bulk_len: 1, max_multibulk_len: 2, max_inline_len: 4, unauthenticated },
        _ => Limits { max_bulk_len: 64, max_multibulk_len: 1024, max_inline_len: 8, unauthenticated },
    };
    // Reads of a fixed size, or one byte at a time, or cut at every '\r' / '\n'.
    let cuts: Vec<usize> = match (cfg >> 2) & 0x1f {
        0 => vec![],
        1 => (1..stream.len()).collect(),
        2 => stream.iter().enumerate().filter(|(_, c)| matches!(c, b'\r' | b'\n')).flat_map(|(i, _)| [i, i + 1]).collect(),
        n => (1..stream.len()).step_by(n as usize).collect(),
    };
    let whole = drive(stream, &[], &limits);
    let split = drive(stream, &cuts, &limits);
    assert_eq!(whole, split, "framing depends on how the bytes were split into reads (cuts {cuts:?})");
}
