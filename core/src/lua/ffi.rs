//! The C API of `core/lua/memoria_lua.h`.

use core::ffi::{c_char, c_int, c_ulonglong, c_void};

#[repr(C)]
pub struct MemoriaVm {
    _opaque: [u8; 0],
}

pub type CallFn = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char, *const usize, c_int, *mut *const c_char, *mut usize);
pub type AclFn = unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char, *const usize) -> c_int;
pub type Sha1Fn = unsafe extern "C" fn(*const c_char, usize, *mut c_char);
pub type LogFn = unsafe extern "C" fn(*mut c_void, c_int, *const c_char, usize);
pub type ReplyFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize);
pub type RegisteredFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, c_int, *const c_char, usize);
pub type ErrorFn = unsafe extern "C" fn(*mut c_void, c_int);

#[repr(C)]
pub struct MemoriaHost {
    pub ud: *mut c_void,
    pub call: CallFn,
    pub acl_check: AclFn,
    pub sha1hex: Sha1Fn,
    pub log: LogFn,
    pub reply: ReplyFn,
    pub registered: RegisteredFn,
    pub error: ErrorFn,
}

unsafe extern "C" {
    pub fn memoria_lua_open_functions(mem_cap: usize) -> *mut MemoriaVm;
    pub fn memoria_lua_load_library(
        vm: *mut MemoriaVm,
        code: *const c_char,
        len: usize,
        budget: c_ulonglong,
        host: *const MemoriaHost,
        err: *mut *const c_char,
        err_len: *mut usize,
    ) -> c_int;
    pub fn memoria_lua_commit_library(vm: *mut MemoriaVm, lib: *const c_char);
    pub fn memoria_lua_delete_library(vm: *mut MemoriaVm, lib: *const c_char);
    pub fn memoria_lua_open(mem_cap: usize) -> *mut MemoriaVm;
    pub fn memoria_lua_close(vm: *mut MemoriaVm);
    pub fn memoria_lua_used(vm: *const MemoriaVm) -> usize;
    pub fn memoria_lua_rand_state(vm: *const MemoriaVm) -> u64;
    pub fn memoria_lua_set_rand_state(vm: *mut MemoriaVm, state: u64);
    pub fn memoria_lua_compile(vm: *mut MemoriaVm, name: *const c_char, body: *const c_char, len: usize, err: *mut *const c_char, err_len: *mut usize)
    -> c_int;
    #[allow(clippy::too_many_arguments)]
    pub fn memoria_lua_call(
        vm: *mut MemoriaVm,
        lib: *const c_char,
        name: *const c_char,
        shown: *const c_char,
        nkeys: c_int,
        keys: *const *const c_char,
        klens: *const usize,
        nargs: c_int,
        args: *const *const c_char,
        alens: *const usize,
        client_resp3: c_int,
        budget: c_ulonglong,
        slice: c_ulonglong,
        host: *const MemoriaHost,
    ) -> c_int;
    pub fn memoria_lua_resume(vm: *mut MemoriaVm, kill: c_int, host: *const MemoriaHost) -> c_int;
}
