//! The shard task: owns one engine instance, drains everything queued by all clients
//! and makes ONE engine call per batch, then routes the replies back.
//!
//! It runs on the same single-threaded runtime as its connections (like Redis's event
//! loop): handing commands over is a queue push, not a cross-thread wake-up, and the
//! other core stays free for the clients and, later, the log.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memoria_core::batch::{self, BatchWriter, OutputReader};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::wasm::{EngineFactory, ShardEngine};

/// Replies for one connection, in order.
pub struct ReplyMsg {
    pub data: Vec<u8>,
    /// Close the connection after writing `data` (QUIT, engine crash).
    pub close: bool,
    /// How many commands these replies answer (flow control on the connection).
    pub answered: usize,
}

pub enum ShardMsg {
    Connect { id: u64, addr: String, laddr: String, tx: UnboundedSender<ReplyMsg> },
    /// Batch records (kind REC_COMMAND) already framed and validated by the connection.
    Commands { id: u64, records: Vec<u8> },
    Disconnect { id: u64 },
    Shutdown,
}

#[derive(Clone)]
pub struct ShardHandle {
    tx: UnboundedSender<ShardMsg>,
}

impl ShardHandle {
    pub fn send(&self, m: ShardMsg) -> bool {
        self.tx.send(m).is_ok()
    }
}

/// Facts the engine reports in INFO server.
pub struct ServerFacts {
    pub text: String,
}

const TICK: Duration = Duration::from_millis(100);
/// Stop draining the queue once a batch is this large, so one call stays short.
const MAX_BATCH_BYTES: usize = 8 << 20;

fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Starts the shard as a task on the current runtime.
pub fn spawn(shard_id: usize, factory: EngineFactory, facts: ServerFacts) -> anyhow::Result<(ShardHandle, tokio::task::JoinHandle<()>)> {
    let (tx, rx) = unbounded_channel();
    let engine = factory.instantiate(seed())?;
    let join = tokio::spawn(async move {
        let mut s = Shard { id: shard_id, factory, engine, clients: HashMap::new(), batch: BatchWriter::new(), facts, seq: 0 };
        s.send_facts();
        s.run(rx).await;
    });
    Ok((ShardHandle { tx }, join))
}

fn seed() -> u64 {
    // The engine has no RNG: per-batch seeds come from here.
    let t = now_us() as u64;
    let addr = &t as *const u64 as u64;
    t.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ addr.rotate_left(17)
}

struct Shard {
    id: usize,
    factory: EngineFactory,
    engine: ShardEngine,
    clients: HashMap<u64, UnboundedSender<ReplyMsg>>,
    batch: BatchWriter,
    facts: ServerFacts,
    seq: u64,
}

impl Shard {
    fn send_facts(&mut self) {
        let mut b = BatchWriter::new();
        b.record(batch::REC_SERVER_INFO, 0, self.facts.text.as_bytes());
        let _ = self.engine.execute(&b.buf, now_us(), 0);
    }

    fn take(&mut self, m: ShardMsg) -> bool {
        match m {
            ShardMsg::Connect { id, addr, laddr, tx } => {
                self.clients.insert(id, tx);
                self.batch.record(batch::REC_CONNECT, id, format!("{addr}\n{laddr}").as_bytes());
            }
            ShardMsg::Commands { id: _, records } => {
                self.batch.buf.extend_from_slice(&records);
                self.batch.records += 1;
            }
            ShardMsg::Disconnect { id } => {
                self.clients.remove(&id);
                self.batch.record(batch::REC_DISCONNECT, id, b"");
            }
            ShardMsg::Shutdown => return false,
        }
        true
    }

    async fn run(&mut self, mut rx: UnboundedReceiver<ShardMsg>) {
        let mut last_tick = Instant::now();
        loop {
            let first = tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => Some(m),
                    None => return,
                },
                _ = tokio::time::sleep_until((last_tick + TICK).into()) => None,
            };
            self.batch.clear();
            if let Some(m) = first {
                if !self.take(m) {
                    return;
                }
                while self.batch.buf.len() < MAX_BATCH_BYTES {
                    match rx.try_recv() {
                        Ok(m) => {
                            if !self.take(m) {
                                return;
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.batch.record(batch::REC_TICK, 0, b"");
            }
            if self.batch.is_empty() {
                continue;
            }
            self.seq = self.seq.wrapping_add(1);
            let batch_seed = seed() ^ self.seq;
            match self.engine.execute(&self.batch.buf, now_us(), batch_seed) {
                Ok(out) => self.route(&out),
                Err(e) => self.crashed(e),
            }
        }
    }

    /// Sends each client its replies, concatenated in order.
    fn route(&mut self, out: &[u8]) {
        let mut pending: Vec<(u64, ReplyMsg)> = Vec::new();
        for rec in OutputReader::new(out) {
            if rec.kind != batch::REC_COMMAND {
                continue;
            }
            let close = rec.flags & batch::OUT_CLOSE != 0;
            match pending.last_mut() {
                Some((id, m)) if *id == rec.client => {
                    m.data.extend_from_slice(rec.reply);
                    m.close |= close;
                    m.answered += 1;
                }
                _ => pending.push((rec.client, ReplyMsg { data: rec.reply.to_vec(), close, answered: 1 })),
            }
        }
        for (id, m) in pending {
            if let Some(tx) = self.clients.get(&id) {
                let _ = tx.send(m);
            }
        }
    }

    /// A trap destroyed the instance. Its in-memory state is gone: fail the batch, drop
    /// every client of this shard (their MULTI/SELECT state went with it) and start over.
    fn crashed(&mut self, e: crate::wasm::EngineError) {
        tracing::error!(shard = self.id, error = %e, "engine trapped; rebuilding the shard's engine");
        let msg = b"-ERR shard engine crashed while running this batch; reconnect\r\n".to_vec();
        for (_, tx) in self.clients.drain() {
            let _ = tx.send(ReplyMsg { data: msg.clone(), close: true, answered: usize::MAX });
        }
        match self.factory.instantiate(seed()) {
            Ok(eng) => {
                self.engine = eng;
                self.send_facts();
            }
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "could not rebuild the engine");
            }
        }
    }
}
