//! What a command handler sees: the shard state, its client, its reply and the effects
//! buffer. Key access goes through `State` so lazy expiry, WATCH invalidation and the
//! effects of expiry are handled in one place.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::protocol::reply::Reply;
use crate::server::client::Client;
use crate::server::state::State;

/// Appends one effect: `db` then the command as RESP.
pub fn emit(fx: &mut Vec<u8>, db: usize, args: &[&[u8]]) {
    fx.push(db as u8);
    crate::protocol::resp::encode_command(fx, args);
}

pub struct Ctx<'a> {
    pub st: &'a mut State,
    pub client: &'a mut Client,
    /// Every other connected client (the current one is `client`).
    pub clients: &'a [Option<Client>],
    pub reply: &'a mut Reply,
    pub fx: &'a mut Vec<u8>,
    /// Close the connection after the reply (QUIT).
    pub close: bool,
    /// The reply is subscription confirmations, which Redis sends whatever CLIENT REPLY
    /// says (its CLIENT_PUSHING), as it sends pub/sub messages.
    pub pushing: bool,
    /// Number of changes the current command made (Redis's `server.dirty`).
    pub dirty: u64,
    /// The handler emitted its own effects instead of its argv.
    pub custom_fx: bool,
    /// Nesting: set while EXEC runs queued commands (and while a script calls one).
    pub in_exec: bool,
    /// Set while a script's `redis.call` runs a command.
    pub in_script: bool,
    /// Set when the command is re-run for a blocked client: the key that became ready.
    pub ready_key: Option<&'a [u8]>,
    /// The command could not be served and asks to block (see `blocked`).
    pub block: Option<crate::server::blocked::BlockRequest>,
    /// CLIENT UNBLOCK requests: (client id, answer with an error instead of a timeout).
    pub unblock: Vec<(u64, bool)>,
    /// CLIENT KILL: the other clients to disconnect.
    pub kill: Vec<u64>,
    /// CLIENT UNPAUSE: the clients the pause postponed, to run again after this reply.
    pub unpaused: Vec<u64>,
    /// What the host must do for this command (WAIT, FAILOVER), told in a typed record.
    pub host: Option<crate::protocol::batch::HostRequest>,
    /// A script run by this command may go on past this engine call (set for a client's
    /// command, not for EXEC's or a script's own calls).
    pub may_suspend: bool,
    /// The command's script yielded: it has no reply yet and goes on in the next call.
    pub suspended: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(st: &'a mut State, client: &'a mut Client, clients: &'a [Option<Client>], reply: &'a mut Reply, fx: &'a mut Vec<u8>) -> Self {
        Ctx {
            st,
            client,
            clients,
            reply,
            fx,
            close: false,
            pushing: false,
            dirty: 0,
            custom_fx: false,
            in_exec: false,
            in_script: false,
            ready_key: None,
            block: None,
            unblock: Vec::new(),
            kill: Vec::new(),
            unpaused: Vec::new(),
            host: None,
            may_suspend: false,
            suspended: false,
        }
    }

    /// The other clients still connected (CLIENT KILL's are gone though their slots wait
    /// for their disconnect).
    pub fn others(&self) -> impl Iterator<Item = &Client> {
        self.clients.iter().flatten().filter(|c| !c.killed)
    }

    /// False where Redis sets CLIENT_DENY_BLOCKING (inside MULTI/EXEC) or nothing can
    /// wait (applying a primary's effects): a blocking command then answers as on timeout.
    pub fn may_block(&self) -> bool {
        !self.in_exec && self.client.multi.is_none() && !self.st.applying
    }

    /// When re-run for a blocked client, the key that became ready (serve from it only,
    /// like Redis's serveClientsBlockedOn*Key).
    pub fn ready_key(&self) -> Option<&'a [u8]> {
        self.ready_key
    }

    /// Blocks the client on `keys` until `deadline` (unix ms, 0 = never); the command is
    /// re-run when one of them is written. Re-run for a waiter, it keeps its place in line.
    pub fn block(&mut self, keys: &[&[u8]], deadline: i64) {
        self.block = Some(crate::server::blocked::BlockRequest {
            keys: keys.iter().map(|k| Box::from(*k)).collect(),
            deadline,
            rewritten: None,
            asking: false,
            postponed: false,
        });
    }

    /// Like `block`, re-running `argv` instead of the command itself.
    pub fn block_as(&mut self, keys: &[&[u8]], deadline: i64, argv: &[&[u8]]) {
        let mut cmd = Vec::new();
        crate::protocol::resp::encode_command(&mut cmd, argv);
        self.block = Some(crate::server::blocked::BlockRequest {
            keys: keys.iter().map(|k| Box::from(*k)).collect(),
            deadline,
            rewritten: Some(cmd),
            asking: false,
            postponed: false,
        });
    }

    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Replaces the default effect (argv verbatim) with `args`; may be called repeatedly.
    pub fn propagate(&mut self, args: &[&[u8]]) {
        self.propagate_in(self.client.db, args);
    }

    /// `propagate` for database `db` (a command finishing work begun in another, MIGRATE).
    pub fn propagate_in(&mut self, db: usize, args: &[&[u8]]) {
        self.custom_fx = true;
        if !self.st.applying {
            emit(self.fx, db, args);
        }
    }

    /// The command had nothing to replicate even though it may have counted as dirty.
    pub fn propagate_nothing(&mut self) {
        self.custom_fx = true;
    }

    pub fn err(&mut self, msg: &str) {
        self.reply.error(msg.as_bytes());
    }
    pub fn wrongtype(&mut self) {
        self.reply.error(b"WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    pub fn syntax_error(&mut self) {
        self.reply.error(b"ERR syntax error");
    }
    pub fn not_integer(&mut self) {
        self.reply.error(b"ERR value is not an integer or out of range");
    }
    pub fn not_float(&mut self) {
        self.reply.error(b"ERR value is not a valid float");
    }

    /// Parses an integer argument or replies with Redis's error.
    pub fn int_arg(&mut self, a: &[u8]) -> Option<i64> {
        let v = crate::util::parse_i64(a);
        if v.is_none() {
            self.not_integer();
        }
        v
    }

    /// Checks `key` for a command on values of `kind`: Ok(true) if it holds one, Ok(false)
    /// if missing, Err after the WRONGTYPE reply. `write` looks it up as a write (no
    /// hit/miss accounting).
    pub(crate) fn lookup_kind(&mut self, key: &[u8], kind: crate::keyspace::object::Kind, write: bool) -> Result<bool, ()> {
        let db = self.db();
        let e = if write { self.st.write(db, key, self.fx).map(|e| &*e) } else { self.st.read(db, key, self.fx) };
        match e {
            None => Ok(false),
            Some(e) if e.val.kind() == kind => Ok(true),
            Some(_) => {
                self.wrongtype();
                Err(())
            }
        }
    }

    /// The access field of a key created now (see `State::new_access`).
    pub fn lru(&self) -> u32 {
        self.st.new_access()
    }

    /// A *STORE whose result is empty: Redis deletes the destination (one change, a `del`
    /// event) instead of storing an empty value.
    pub fn delete_destination(&mut self, dst: &[u8]) {
        let db = self.db();
        self.st.expire_if_needed(db, dst, self.fx);
        if self.st.delete(db, dst).is_some() {
            self.dirty += 1;
            self.notify(crate::server::notify::GENERIC, "del", dst);
        }
    }
}
