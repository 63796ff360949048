//! The Lua VM scripts run in (EVAL, FUNCTION): Lua 5.1 set up as Redis 7.0 sets up its
//! own, built from C (`core/lua`, see `build.rs`) into the engine itself, natively and in
//! the component. Rust sees a VM that compiles and runs named functions; what a script
//! asks of the server (`redis.call`, ACL checks, logging) comes back through `Host`, and
//! every value crosses as RESP bytes, so Lua errors never unwind through Rust frames.

#[cfg(any(target_arch = "wasm32", test))]
mod cnum;
mod ffi;
#[cfg(target_arch = "wasm32")]
mod libc;

use alloc::vec::Vec;
use core::ffi::{c_char, c_int, c_void};
use core::ptr::NonNull;

/// What a running script may ask of the server.
pub trait Host {
    /// `redis.call`/`redis.pcall`: runs `argv` and writes its reply (RESP3 when `resp3`)
    /// into `out`, refusals included, as error replies.
    fn call(&mut self, argv: &[&[u8]], resp3: bool, out: &mut Vec<u8>);
    /// `redis.acl_check_cmd`: None when there is no such command.
    fn acl_check(&mut self, argv: &[&[u8]]) -> Option<bool>;
    /// `redis.log` at Redis's level numbers (0 debug … 3 warning).
    fn log(&mut self, level: i32, msg: &[u8]);
    /// `redis.register_function` while a library loads: name, flag bits
    /// (`FLAG_*`), description.
    fn registered(&mut self, _name: &[u8], _flags: u32, _description: Option<&[u8]>) {}
    /// An error reply starts at byte `at` of the script's reply; `counted`: it came from
    /// a command the script called, whose error was counted then.
    fn error_reply(&mut self, _at: usize, _counted: bool) {}
}

/// rand48's state before any seeding (Redis's rand.c).
pub const RAND48_INITIAL: u64 = 0x1234_ABCD_330E;

/// Script flags: a shebang's `flags=`, `redis.register_function`'s `flags`.
pub const FLAG_NO_WRITES: u32 = 1;
pub const FLAG_ALLOW_OOM: u32 = 2;
pub const FLAG_ALLOW_STALE: u32 = 4;
pub const FLAG_NO_CLUSTER: u32 = 8;
pub const FLAG_ALLOW_CROSS_SLOT: u32 = 16;
/// Flag names in Redis's order (FUNCTION LIST).
pub const FLAG_NAMES: &[(u32, &str)] = &[
    (FLAG_NO_WRITES, "no-writes"),
    (FLAG_ALLOW_OOM, "allow-oom"),
    (FLAG_ALLOW_STALE, "allow-stale"),
    (FLAG_NO_CLUSTER, "no-cluster"),
    (FLAG_ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
];

/// Why a library did not load.
pub enum LoadError {
    /// Lua's syntax error.
    Compile(Vec<u8>),
    /// The code failed while it ran (the message of its error).
    Run(Vec<u8>),
}

/// One Lua VM (a shard has one). Owned by one thread at a time.
pub struct Vm {
    raw: NonNull<ffi::MemoriaVm>,
    /// Reused by every `call`, so a run allocates none of them: the NUL-terminated names
    /// C reads, the arguments' pointers and lengths, and the buffer of redis.call replies.
    names: Vec<u8>,
    ptrs: Vec<*const c_char>,
    lens: Vec<usize>,
    out: Vec<u8>,
}

// The VM is plain memory reached only through `&mut Vm`.
unsafe impl Send for Vm {}

/// `buf`, kept for the next run unless it grew large (a big reply's memory is returned).
pub(crate) fn reusable(buf: Vec<u8>) -> Vec<u8> {
    if buf.capacity() <= 64 << 10 { buf } else { Vec::new() }
}

/// Appends `name` and a NUL to `buf`; returns where it starts.
fn push_c(buf: &mut Vec<u8>, name: &[u8]) -> usize {
    let at = buf.len();
    buf.extend_from_slice(name);
    buf.push(0);
    at
}

/// A function name as C wants it: `name` plus a NUL.
fn c_name(name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(name.len() + 1);
    v.extend_from_slice(name);
    v.push(0);
    v
}

impl Vm {
    /// A fresh VM whose allocations stop at `mem_cap` bytes; None when even that fails.
    pub fn new(mem_cap: usize) -> Option<Vm> {
        NonNull::new(unsafe { ffi::memoria_lua_open(mem_cap) }).map(Vm::of)
    }

    /// A VM for function libraries (`_G` empty; see `core/lua/functions.c`).
    pub fn new_functions(mem_cap: usize) -> Option<Vm> {
        NonNull::new(unsafe { ffi::memoria_lua_open_functions(mem_cap) }).map(Vm::of)
    }

    fn of(raw: NonNull<ffi::MemoriaVm>) -> Vm {
        Vm { raw, names: Vec::new(), ptrs: Vec::new(), lens: Vec::new(), out: Vec::new() }
    }

    /// Runs a library's code so it registers its functions (told to `host`); on success
    /// they are staged until `commit_library`.
    pub fn load_library<H: Host>(&mut self, code: &[u8], budget: u64, host: &mut H) -> Result<(), LoadError> {
        let mut reply = Vec::new();
        let mut tramp = Trampoline { host, reply: &mut reply, out: Vec::new() };
        let h = tramp.c_host();
        let mut err: *const c_char = core::ptr::null();
        let mut len = 0usize;
        let r = unsafe { ffi::memoria_lua_load_library(self.raw.as_ptr(), code.as_ptr().cast(), code.len(), budget, &h, &mut err, &mut len) };
        let msg = || unsafe { core::slice::from_raw_parts(err.cast::<u8>(), len) }.to_vec();
        match r {
            0 => Ok(()),
            1 => Err(LoadError::Compile(msg())),
            _ => Err(LoadError::Run(msg())),
        }
    }

    /// The staged library becomes `lib`, replacing one of that name.
    pub fn commit_library(&mut self, lib: &[u8]) {
        let lib = c_name(lib);
        unsafe { ffi::memoria_lua_commit_library(self.raw.as_ptr(), lib.as_ptr().cast()) }
    }

    pub fn delete_library(&mut self, lib: &[u8]) {
        let lib = c_name(lib);
        unsafe { ffi::memoria_lua_delete_library(self.raw.as_ptr(), lib.as_ptr().cast()) }
    }

    /// math.random's generator state (rand48), carried between VMs by the caller.
    pub fn rand_state(&self) -> u64 {
        unsafe { ffi::memoria_lua_rand_state(self.raw.as_ptr()) }
    }

    pub fn set_rand_state(&mut self, state: u64) {
        unsafe { ffi::memoria_lua_set_rand_state(self.raw.as_ptr(), state) }
    }

    /// Bytes the VM has allocated.
    pub fn used(&self) -> usize {
        unsafe { ffi::memoria_lua_used(self.raw.as_ptr()) }
    }

    /// Compiles `body` as the function `name`; Err holds Lua's message.
    pub fn compile(&mut self, name: &[u8], body: &[u8]) -> Result<(), Vec<u8>> {
        let name = c_name(name);
        let mut err: *const c_char = core::ptr::null();
        let mut len = 0usize;
        let r = unsafe { ffi::memoria_lua_compile(self.raw.as_ptr(), name.as_ptr().cast(), body.as_ptr().cast(), body.len(), &mut err, &mut len) };
        if r == 0 { Ok(()) } else { Err(unsafe { core::slice::from_raw_parts(err.cast::<u8>(), len) }.to_vec()) }
    }

    /// Runs `target` with KEYS and ARGV and appends its reply (or its error, naming it as
    /// Redis does) to `reply`, encoded for a RESP3 client when `client_resp3`. `budget`
    /// bounds its work in VM instructions and pattern-matching steps between yields.
    /// `slice` non-zero: the run yields after about that many instructions where it can
    /// ([`Run::Yielded`], nothing replied yet; it goes on with `resume`).
    #[allow(clippy::too_many_arguments)]
    pub fn call<H: Host>(
        &mut self,
        target: Target<'_>,
        keys: &[&[u8]],
        args: &[&[u8]],
        client_resp3: bool,
        budget: u64,
        slice: u64,
        host: &mut H,
        reply: &mut Vec<u8>,
    ) -> Run {
        // An EVAL script is shown by its SHA1, a function by its name.
        let (lib, name, shown) = match target {
            Target::Script { name, sha } => (None, name, sha),
            Target::Function { lib, name } => (Some(lib), name, name),
        };
        self.names.clear();
        let name_at = push_c(&mut self.names, name);
        let shown_at = push_c(&mut self.names, shown);
        let lib_at = lib.map(|l| push_c(&mut self.names, l));
        self.ptrs.clear();
        self.lens.clear();
        for a in keys.iter().chain(args) {
            self.ptrs.push(a.as_ptr().cast());
            self.lens.push(a.len());
        }
        let names = self.names.as_ptr().cast::<c_char>();
        let mut tramp = Trampoline { host, reply, out: core::mem::take(&mut self.out) };
        let h = tramp.c_host();
        let r = unsafe {
            ffi::memoria_lua_call(
                self.raw.as_ptr(),
                lib_at.map_or(core::ptr::null(), |at| names.add(at)),
                names.add(name_at),
                names.add(shown_at),
                keys.len() as c_int,
                self.ptrs.as_ptr(),
                self.lens.as_ptr(),
                args.len() as c_int,
                self.ptrs.as_ptr().add(keys.len()),
                self.lens.as_ptr().add(keys.len()),
                client_resp3 as c_int,
                budget,
                slice,
                &h,
            )
        };
        self.out = reusable(tramp.out);
        Run::of(r)
    }

    /// Goes on with a run that yielded, like `call`; `kill`: it fails at once with Redis's
    /// "Script killed by user" error.
    pub fn resume<H: Host>(&mut self, kill: bool, host: &mut H, reply: &mut Vec<u8>) -> Run {
        let mut tramp = Trampoline { host, reply, out: core::mem::take(&mut self.out) };
        let h = tramp.c_host();
        let r = unsafe { ffi::memoria_lua_resume(self.raw.as_ptr(), kill as c_int, &h) };
        self.out = reusable(tramp.out);
        Run::of(r)
    }
}

/// Where a run stands after `Vm::call` or `Vm::resume`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Run {
    /// It ended; its reply was written.
    Done,
    /// It yielded at the end of a slice.
    Yielded,
}

impl Run {
    fn of(r: c_int) -> Run {
        if r == 0 { Run::Done } else { Run::Yielded }
    }
}

/// What `Vm::call` runs.
pub enum Target<'a> {
    /// An EVAL script compiled as `name`; KEYS and ARGV are globals.
    Script { name: &'a [u8], sha: &'a [u8] },
    /// Function `name` of library `lib`; KEYS and ARGV are its arguments.
    Function { lib: &'a [u8], name: &'a [u8] },
}

impl Drop for Vm {
    fn drop(&mut self) {
        unsafe { ffi::memoria_lua_close(self.raw.as_ptr()) }
    }
}

/// The hex SHA1 of `data` (script names, `redis.sha1hex`).
pub fn sha1_hex(data: &[u8]) -> [u8; 40] {
    use sha1::Digest;
    let d = sha1::Sha1::digest(data);
    let mut out = [0u8; 40];
    for (i, b) in d.iter().enumerate() {
        out[2 * i] = b"0123456789abcdef"[(b >> 4) as usize];
        out[2 * i + 1] = b"0123456789abcdef"[(b & 15) as usize];
    }
    out
}

struct Trampoline<'a, H> {
    host: &'a mut H,
    reply: &'a mut Vec<u8>,
    /// The last redis.call's reply, read by C until the next call.
    out: Vec<u8>,
}

impl<H: Host> Trampoline<'_, H> {
    /// The callbacks C calls, with this trampoline as their context. The trampoline must
    /// stay in place while C may call them.
    fn c_host(&mut self) -> ffi::MemoriaHost {
        ffi::MemoriaHost {
            ud: (self as *mut Self).cast(),
            call: call_cb::<H>,
            acl_check: acl_cb::<H>,
            sha1hex: sha1_cb,
            log: log_cb::<H>,
            reply: reply_cb::<H>,
            registered: registered_cb::<H>,
            error: error_cb::<H>,
        }
    }
}

unsafe extern "C" fn registered_cb<H: Host>(ud: *mut c_void, name: *const c_char, len: usize, flags: c_int, desc: *const c_char, desc_len: usize) {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    let name = unsafe { core::slice::from_raw_parts(name.cast::<u8>(), len) };
    let desc = (!desc.is_null()).then(|| unsafe { core::slice::from_raw_parts(desc.cast::<u8>(), desc_len) });
    t.host.registered(name, flags as u32, desc);
}

/// Runs `f` on C's argument vector as slices (`with_args`: no allocation for a usual
/// redis.call).
unsafe fn with_argv<R>(argc: c_int, argv: *const *const c_char, lens: *const usize, f: impl FnOnce(&[&[u8]]) -> R) -> R {
    crate::util::with_args(argc.max(0) as usize, |i| unsafe { core::slice::from_raw_parts((*argv.add(i)).cast::<u8>(), *lens.add(i)) }, f)
}

unsafe extern "C" fn call_cb<H: Host>(
    ud: *mut c_void,
    argc: c_int,
    argv: *const *const c_char,
    lens: *const usize,
    resp3: c_int,
    reply: *mut *const c_char,
    reply_len: *mut usize,
) {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    t.out.clear();
    unsafe { with_argv(argc, argv, lens, |argv| t.host.call(argv, resp3 != 0, &mut t.out)) };
    unsafe {
        *reply = t.out.as_ptr().cast();
        *reply_len = t.out.len();
    }
}

unsafe extern "C" fn acl_cb<H: Host>(ud: *mut c_void, argc: c_int, argv: *const *const c_char, lens: *const usize) -> c_int {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    match unsafe { with_argv(argc, argv, lens, |argv| t.host.acl_check(argv)) } {
        None => -1,
        Some(ok) => ok as c_int,
    }
}

unsafe extern "C" fn sha1_cb(p: *const c_char, len: usize, out: *mut c_char) {
    let data = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) };
    let hex = sha1_hex(data);
    unsafe { core::ptr::copy_nonoverlapping(hex.as_ptr(), out.cast::<u8>(), 40) };
}

unsafe extern "C" fn log_cb<H: Host>(ud: *mut c_void, level: c_int, msg: *const c_char, len: usize) {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    t.host.log(level, unsafe { core::slice::from_raw_parts(msg.cast::<u8>(), len) });
}

unsafe extern "C" fn error_cb<H: Host>(ud: *mut c_void, counted: c_int) {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    t.host.error_reply(t.reply.len(), counted != 0);
}

unsafe extern "C" fn reply_cb<H: Host>(ud: *mut c_void, p: *const c_char, len: usize) {
    let t = unsafe { &mut *ud.cast::<Trampoline<'_, H>>() };
    t.reply.extend_from_slice(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) });
}
