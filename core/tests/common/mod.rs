//! A native test harness: drives the engine exactly as the host does (batch records in,
//! output records out) with a controllable clock.
#![allow(dead_code)]

use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

pub struct H {
    pub e: Engine,
    pub now_ms: i64,
    pub client: u64,
    pub seed: u64,
    /// Effects emitted so far, in order (what the host would log).
    pub effects: Vec<u8>,
}

impl H {
    pub fn new() -> H {
        H { e: Engine::new(42), now_ms: 1_700_000_000_000, client: 1, seed: 7, effects: Vec::new() }
    }

    /// Runs one command as the current client; returns the raw RESP reply.
    pub fn raw<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let mut b = BatchWriter::new();
        b.begin(batch::REC_COMMAND, self.client);
        encode_command(&mut b.buf, args);
        b.end();
        self.seed = self.seed.wrapping_add(1);
        let mut out = self.e.execute(&b.buf, self.now_ms * 1000, self.seed);
        // A script that yields goes on as the host would resume it (tests/busy_script.rs
        // drives the slices itself).
        let mut slices = 0;
        while batch::suspended(&out).is_some() {
            slices += 1;
            assert!(slices < 10_000, "the script ran 10 000 slices without ending");
            out = self.e.resume(self.now_ms * 1000);
        }
        let rec = OutputReader::new(&out).next().expect("one output record");
        self.effects.extend_from_slice(rec.effects);
        rec.reply.to_vec()
    }

    /// Runs a command given as one string split on spaces; returns the reply as text.
    pub fn c(&mut self, line: &str) -> String {
        let args: Vec<&str> = line.split(' ').collect();
        String::from_utf8_lossy(&self.raw(&args)).into_owned()
    }

    /// Runs a tick (active expiry).
    pub fn tick(&mut self) {
        let mut b = BatchWriter::new();
        b.record(batch::REC_TICK, 0, b"");
        let out = self.e.execute(&b.buf, self.now_ms * 1000, self.seed);
        for rec in OutputReader::new(&out) {
            self.effects.extend_from_slice(rec.effects);
        }
    }

    pub fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
    }

    /// The effects emitted so far as readable commands: "db:CMD arg arg".
    pub fn effect_lines(&self) -> Vec<String> {
        memoria_core::protocol::batch::EffectReader::new(&self.effects)
            .map(|fx| {
                let mut args = Vec::new();
                memoria_core::protocol::resp::read_command(fx.command, &mut args).unwrap();
                let parts: Vec<String> = args.iter().map(|&(a, b)| String::from_utf8_lossy(&fx.command[a..b]).into_owned()).collect();
                format!("{}:{}", fx.db, parts.join(" "))
            })
            .collect()
    }
}

/// Shorthand for RESP forms in assertions.
pub fn bulk(s: &str) -> String {
    format!("${}\r\n{}\r\n", s.len(), s)
}
pub fn int(n: i64) -> String {
    format!(":{}\r\n", n)
}
pub const OK: &str = "+OK\r\n";
pub const NIL: &str = "$-1\r\n";
pub fn err(s: &str) -> String {
    format!("-{}\r\n", s)
}
