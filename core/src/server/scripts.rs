//! The scripts a shard knows: the EVAL cache (each body by its SHA1, compiled in the VM as
//! `f_<sha>`), kept per node as Redis keeps it, the Lua VM itself, made on first use, and
//! the script or function whose run outlasts an engine call.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::lua::Vm;

/// The most memory one shard's Lua VM may hold; past it allocations fail inside the
/// script ("not enough memory"), which ends the script, not the shard.
pub const LUA_MEMORY_CAP: usize = 256 << 20;

pub type Sha = [u8; 40];

/// What other clients get while a script runs past `busy-reply-threshold`.
pub const BUSY_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// Which VM a run borrowed: EVAL's, or the function libraries'.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VmHome {
    Scripts,
    Functions,
}

/// Which slot the keys a script reaches must hash to, in cluster mode (Redis's check of
/// keys a script did not declare).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SlotRule {
    /// Any (not in cluster mode, or the script allows cross-slot keys).
    Any,
    /// The slot of the first key it reaches (it declared none).
    Unset,
    Slot(u16),
}

/// A script or function that yielded at the end of an engine call and goes on in the
/// next (`commands::scripting::resume`). Meanwhile other clients are answered -BUSY.
pub struct Running {
    pub vm: Vm,
    pub home: VmHome,
    pub read_only: bool,
    /// The client's database when it started (its SELECTs last until it ends).
    pub db: usize,
    /// What the commands it called so far changed and asked (`Ctx::dirty`, `Ctx::unblock`).
    pub dirty: u64,
    pub unblock: Vec<(u64, bool)>,
    /// It called a write command: it can no longer be killed.
    pub wrote: bool,
    /// The slot its keys must share in cluster mode.
    pub slot: SlotRule,
    /// SCRIPT KILL or FUNCTION KILL asked it to stop.
    pub kill: bool,
    /// When it started (unix ms) and its command (FUNCTION STATS).
    pub started_ms: i64,
    pub argv: Vec<Vec<u8>>,
}

pub struct Scripts {
    vm: Option<Vm>,
    /// The run that outlasted its engine call, if any.
    pub running: Option<Running>,
    bodies: BTreeMap<Sha, Box<[u8]>>,
    /// math.random's generator, shared by EVAL and FCALL and kept across SCRIPT FLUSH
    /// (Redis's is process-wide).
    pub rand48: u64,
    /// The buffer runs reply into, reused from run to run.
    pub reply: Vec<u8>,
    /// When the run that yielded started, on the command clock (its duration is counted
    /// when it ends).
    pub started_us: u64,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts { vm: None, running: None, bodies: BTreeMap::new(), rand48: crate::lua::RAND48_INITIAL, reply: Vec::new(), started_us: 0 }
    }
}

/// The registry name of a script's function.
pub fn function_name(sha: &Sha) -> [u8; 42] {
    let mut n = [0u8; 42];
    n[..2].copy_from_slice(b"f_");
    n[2..].copy_from_slice(sha);
    n
}

impl Scripts {
    /// The -BUSY error for the run in progress, if one is.
    pub fn busy_error(&self) -> Option<&'static str> {
        self.running.as_ref().map(|r| if r.home == VmHome::Scripts { BUSY_EVAL } else { BUSY_FUNCTION })
    }

    pub fn exists(&self, sha: &Sha) -> bool {
        self.bodies.contains_key(sha)
    }

    /// SCRIPT FLUSH: a new VM, no scripts (as Redis, which also drops its Lua state).
    pub fn flush(&mut self) {
        self.vm = None;
        self.bodies.clear();
    }

    pub fn body(&self, sha: &Sha) -> Option<&[u8]> {
        self.bodies.get(sha).map(|b| &b[..])
    }

    pub fn count(&self) -> usize {
        self.bodies.len()
    }

    /// Bytes of the cached bodies and of the VM (INFO memory).
    pub fn memory(&self) -> (usize, usize) {
        (self.bodies.values().map(|b| b.len() + 64).sum(), self.vm.as_ref().map_or(0, |v| v.used()))
    }

    /// Compiles and caches `body` under `sha` unless it is cached. Err: Lua's message.
    pub fn add(&mut self, sha: &Sha, body: &[u8]) -> Result<(), Vec<u8>> {
        if self.bodies.contains_key(sha) {
            return Ok(());
        }
        let vm = self.vm_mut().ok_or_else(|| b"not enough memory".to_vec())?;
        vm.compile(&function_name(sha), &shebang_as_comment(body))?;
        self.bodies.insert(*sha, body.into());
        Ok(())
    }

    fn vm_mut(&mut self) -> Option<&mut Vm> {
        if self.vm.is_none() {
            self.vm = Vm::new(LUA_MEMORY_CAP);
        }
        self.vm.as_mut()
    }

    /// Lends the VM out for a run (the run also borrows the rest of the state).
    pub fn take_vm(&mut self) -> Option<Vm> {
        self.vm_mut();
        self.vm.take()
    }

    /// Takes the VM back after a run (nothing a script may call replaces it).
    pub fn put_vm(&mut self, vm: Vm) {
        self.vm = Some(vm);
    }
}

/// Lua does not skip a `#!` first line: it becomes a comment, keeping line numbers.
pub fn shebang_as_comment(body: &[u8]) -> alloc::borrow::Cow<'_, [u8]> {
    if body.starts_with(b"#!") {
        let mut v = body.to_vec();
        v[..2].copy_from_slice(b"--");
        alloc::borrow::Cow::Owned(v)
    } else {
        alloc::borrow::Cow::Borrowed(body)
    }
}
