//! Small assertion helpers shared by the cmd_*.rs command-family tests.
#![allow(dead_code)]

use crate::common::H;

/// Runs `cmd` (split on spaces) and asserts its exact RESP reply.
#[track_caller]
pub fn ck(h: &mut H, cmd: &str, want: impl AsRef<str>) {
    let got = h.c(cmd);
    assert_eq!(got, want.as_ref(), "reply to {cmd:?}");
}

/// Runs a command given as separate arguments and asserts its exact RESP reply.
#[track_caller]
pub fn ckr(h: &mut H, args: &[&[u8]], want: impl AsRef<[u8]>) {
    let got = h.raw(args);
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want.as_ref()),
        "reply to {:?}",
        args.iter().map(|a| String::from_utf8_lossy(a)).collect::<Vec<_>>()
    );
}

/// RESP2 array of bulk strings.
pub fn bulks(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s.push_str(&format!("${}\r\n{}\r\n", i.len(), i));
    }
    s
}

/// Array header.
pub fn arr(n: usize) -> String {
    format!("*{}\r\n", n)
}

/// Splits a reply that is a flat array of bulk strings into its items (panics otherwise).
pub fn parse_bulks(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let head = lines.next().unwrap();
    assert!(head.starts_with('*') || head.starts_with('~') || head.starts_with('%'), "not an aggregate: {reply:?}");
    let mut n: usize = head[1..].parse().unwrap();
    if head.starts_with('%') {
        n *= 2;
    }
    let mut out = Vec::new();
    for _ in 0..n {
        let len = lines.next().unwrap();
        assert!(len.starts_with('$'), "not a bulk: {len:?} in {reply:?}");
        out.push(lines.next().unwrap().to_string());
    }
    out
}

/// The text inside a bulk or verbatim string reply.
pub fn bulk_text(reply: &str) -> String {
    let (head, rest) = reply.split_once("\r\n").expect("reply line");
    assert!(head.starts_with('$') || head.starts_with('='), "not a bulk: {reply:?}");
    let n: usize = head[1..].parse().unwrap();
    let body = &rest[..n];
    if head.starts_with('=') {
        assert_eq!(&body[..4], "txt:");
        body[4..].to_string()
    } else {
        body.to_string()
    }
}

/// Integer reply's value.
pub fn int_of(reply: &str) -> i64 {
    assert!(reply.starts_with(':'), "not an integer: {reply:?}");
    reply[1..].trim_end().parse().unwrap()
}

/// The effects emitted since `mark` (an index into `h.effect_lines()`).
pub fn fx_since(h: &H, mark: usize) -> Vec<String> {
    h.effect_lines()[mark..].to_vec()
}

pub fn fx_len(h: &H) -> usize {
    h.effect_lines().len()
}
