//! FUNCTION (LOAD, DELETE, FLUSH, LIST, STATS, KILL, HELP) and FCALL/FCALL_RO. Libraries
//! are logged state: LOAD (as LOAD REPLACE), DELETE and FLUSH are effects, and snapshots
//! carry every library, so replicas, a new primary and a restarted node have the same
//! functions. A library is Lua whose first line is `#!lua name=<lib>`; its code runs once
//! at load, in an environment that has only redis.register_function and redis.log.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::commands::scripting::{INSTRUCTIONS_PER_MS, kill, run_in, split_keys};
use crate::lua::{FLAG_NAMES, FLAG_NO_WRITES, Host, LoadError, Target, Vm};
use crate::rdb;
use crate::server::ctx::Ctx;
use crate::server::functions::{FunctionInfo, Library};
use crate::server::scripts::{BUSY_EVAL, VmHome};
use crate::util::eq_ic;

/// Redis's FUNCTION LOAD timeout (500 ms), as a count of VM instructions.
const LOAD_BUDGET_MS: u64 = 500;

const NAME_RULE: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The library name of `#!lua name=<lib>` on the code's first line.
fn library_name(code: &[u8]) -> Result<&[u8], String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(eol) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let mut parts = code[..eol].split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = &parts.next().unwrap_or(b"#!")[2..];
    if engine != b"lua" {
        return Err(format!("ERR Engine '{}' not found", String::from_utf8_lossy(engine)));
    }
    let mut name = None;
    for p in parts {
        match p.strip_prefix(b"name=") {
            Some(n) => name = Some(n),
            None => return Err(format!("ERR Invalid metadata value given: {}", String::from_utf8_lossy(p))),
        }
    }
    let name = name.ok_or_else(|| String::from("ERR Library name was not given"))?;
    if !valid_name(name) {
        return Err(NAME_RULE.into());
    }
    Ok(name)
}

/// Collects what a loading library registers (its code cannot call commands).
struct Registrar {
    functions: BTreeMap<Box<[u8]>, FunctionInfo>,
}

impl Host for Registrar {
    fn call(&mut self, _argv: &[&[u8]], _resp3: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-ERR redis.call is not available while a library loads\r\n");
    }
    fn acl_check(&mut self, _argv: &[&[u8]]) -> Option<bool> {
        None
    }
    fn log(&mut self, _level: i32, _msg: &[u8]) {}
    fn registered(&mut self, name: &[u8], flags: u32, description: Option<&[u8]>) {
        self.functions.insert(name.into(), FunctionInfo { flags, description: description.map(Into::into) });
    }
}

/// A library's functions, by name.
type Registered = BTreeMap<Box<[u8]>, FunctionInfo>;

/// Runs library `code` in `vm` so it registers its functions (staged in the VM until
/// `commit_library`); the functions it registered.
fn register(vm: &mut Vm, code: &[u8]) -> Result<Registered, String> {
    let mut reg = Registrar { functions: BTreeMap::new() };
    match vm.load_library(&crate::server::scripts::shebang_as_comment(code), LOAD_BUDGET_MS * INSTRUCTIONS_PER_MS, &mut reg) {
        Ok(()) => {}
        Err(LoadError::Compile(m)) => return Err(format!("ERR Error compiling function: {}", String::from_utf8_lossy(&m))),
        Err(LoadError::Run(m)) => return Err(format!("ERR Error registering functions: {}", String::from_utf8_lossy(&m))),
    }
    if reg.functions.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(reg.functions)
}

/// Loads `code` as a library (replacing one of its name when `replace`).
pub fn load_library(ctx: &mut Ctx<'_>, code: &[u8], replace: bool) -> Result<Vec<u8>, String> {
    let name = library_name(code)?.to_vec();
    let fs = &mut ctx.st.functions;
    if !replace && fs.libraries.contains_key(&name[..]) {
        return Err(format!("ERR Library '{}' already exists", String::from_utf8_lossy(&name)));
    }
    let vm = fs.vm().ok_or_else(|| String::from("ERR Error registering functions: not enough memory"))?;
    let functions = register(vm, code)?;
    for f in functions.keys() {
        if fs.by_function.get(f).is_some_and(|lib| **lib != name[..]) {
            return Err(format!("ERR Function {} already exists", String::from_utf8_lossy(f)));
        }
    }
    fs.remove(&name);
    fs.vm().expect("made above").commit_library(&name);
    fs.insert(&name, Library { code: code.into(), functions });
    Ok(name)
}

pub fn function_load(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let code = argv[argv.len() - 1];
    let mut replace = false;
    for opt in &argv[2..argv.len() - 1] {
        if eq_ic(opt, b"replace") {
            replace = true;
        } else {
            return ctx.err(&format!("ERR Unknown option given: {}", String::from_utf8_lossy(opt)));
        }
    }
    match load_library(ctx, code, replace) {
        Ok(name) => {
            ctx.dirty += 1;
            // Logged as LOAD REPLACE: applying it again (a snapshot then the log) is harmless.
            ctx.propagate(&[b"FUNCTION", b"LOAD", b"REPLACE", code]);
            ctx.reply.bulk(&name);
        }
        Err(e) => ctx.err(&e),
    }
}

/// FUNCTION DUMP: every library's code as Redis's payload (RDB function records, the RDB
/// version, a CRC-64), which redis-server restores too.
pub fn function_dump(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let mut out = Vec::new();
    for lib in ctx.st.functions.libraries.values() {
        out.push(rdb::TYPE_FUNCTION2);
        rdb::write_string(&mut out, &lib.code);
    }
    rdb::finish_payload(&mut out);
    ctx.reply.bulk(&out);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE], as Redis 7.0: every library of the
/// payload is loaded first (into a VM of its own), so an error changes nothing. Logged as
/// what it did: FUNCTION FLUSH, FUNCTION DELETE of the libraries it replaced, and a
/// FUNCTION LOAD REPLACE of each library.
pub fn function_restore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return ctx.err(&format!("ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.", String::from_utf8_lossy(argv[1])));
    }
    let policy = match argv.get(3) {
        None => RestorePolicy::Append,
        Some(p) if eq_ic(p, b"append") => RestorePolicy::Append,
        Some(p) if eq_ic(p, b"replace") => RestorePolicy::Replace,
        Some(p) if eq_ic(p, b"flush") => RestorePolicy::Flush,
        Some(_) => return ctx.err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."),
    };
    let Ok(body) = rdb::payload_body(argv[2]) else {
        return ctx.err("ERR DUMP payload version or checksum are wrong");
    };
    let staged = match stage_payload(body) {
        Ok(s) => s,
        Err(e) => return ctx.err(&e),
    };
    let fs = &ctx.st.functions;
    if policy != RestorePolicy::Flush {
        for (name, _, _) in &staged {
            if policy == RestorePolicy::Append && fs.libraries.contains_key(&name[..]) {
                return ctx.err(&format!("ERR Library {} already exists", String::from_utf8_lossy(name)));
            }
        }
        for (_, _, functions) in &staged {
            for f in functions.keys() {
                // A function of a library the payload replaces is no collision.
                if let Some(owner) = fs.by_function.get(f)
                    && !(policy == RestorePolicy::Replace && staged.iter().any(|(n, _, _)| n[..] == owner[..]))
                {
                    return ctx.err(&format!("ERR Function {} already exists", String::from_utf8_lossy(f)));
                }
            }
        }
    }
    if policy == RestorePolicy::Flush {
        ctx.st.functions.flush();
        ctx.propagate(&[b"FUNCTION", b"FLUSH"]);
    }
    for (name, _, _) in &staged {
        if ctx.st.functions.remove(name) {
            ctx.propagate(&[b"FUNCTION", b"DELETE", name]);
        }
    }
    for (_, code, _) in &staged {
        if let Err(e) = load_library(ctx, code, true) {
            // The same code loaded in a VM of its own: only memory can fail it here.
            ctx.dirty += 1;
            return ctx.err(&e);
        }
        ctx.propagate(&[b"FUNCTION", b"LOAD", b"REPLACE", code]);
    }
    ctx.dirty += 1;
    ctx.reply.ok();
}

/// A library of a FUNCTION RESTORE payload: (name, code, functions).
type Staged = (Vec<u8>, Vec<u8>, Registered);

/// The libraries of a payload's records, each loaded in a VM of its own, in the
/// payload's order; or the error Redis gives for the first bad one.
fn stage_payload(body: &[u8]) -> Result<Vec<Staged>, String> {
    let mut records = rdb::Reader::new(body);
    let mut staged: Vec<Staged> = Vec::new();
    let mut scratch = None;
    while !records.is_empty() {
        match records.byte() {
            Ok(rdb::TYPE_FUNCTION2) => {}
            Ok(rdb::TYPE_FUNCTION_PRE_GA) => return Err("ERR Pre-GA function format not supported".into()),
            _ => return Err("ERR given type is not a function".into()),
        }
        let code = records.string().map_err(|_| String::from("ERR Failed loading library payload"))?;
        let name = library_name(&code)?.to_vec();
        if staged.iter().any(|(n, _, _)| *n == name) {
            return Err(format!("ERR Library '{}' already exists", String::from_utf8_lossy(&name)));
        }
        if scratch.is_none() {
            scratch = Vm::new_functions(crate::server::scripts::LUA_MEMORY_CAP);
        }
        let vm = scratch.as_mut().ok_or_else(|| String::from("ERR Error registering functions: not enough memory"))?;
        let functions = register(vm, &code)?;
        vm.commit_library(&name);
        for f in functions.keys() {
            if staged.iter().any(|(_, _, other)| other.contains_key(f)) {
                return Err(format!("ERR Function {} already exists", String::from_utf8_lossy(f)));
            }
        }
        staged.push((name, code, functions));
    }
    Ok(staged)
}

pub fn function_delete(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !ctx.st.functions.remove(argv[2]) {
        return ctx.err("ERR Library not found");
    }
    ctx.dirty += 1;
    ctx.reply.ok();
}

pub fn function_flush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 || (argv.len() == 3 && !eq_ic(argv[2], b"sync") && !eq_ic(argv[2], b"async")) {
        return ctx.err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    ctx.st.functions.flush();
    ctx.dirty += 1;
    ctx.reply.ok();
}

pub fn function_list(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (mut pattern, mut with_code) = (None, false);
    let mut i = 2;
    while i < argv.len() {
        if eq_ic(argv[i], b"withcode") && !with_code {
            with_code = true;
        } else if eq_ic(argv[i], b"libraryname") && pattern.is_none() {
            let Some(p) = argv.get(i + 1) else {
                return ctx.err("ERR library name argument was not given");
            };
            pattern = Some(*p);
            i += 1;
        } else {
            return ctx.err(&format!("ERR Unknown argument {}", String::from_utf8_lossy(argv[i])));
        }
        i += 1;
    }
    let libs: Vec<(&Box<[u8]>, &Library)> =
        ctx.st.functions.libraries.iter().filter(|(n, _)| pattern.is_none_or(|p| crate::util::glob_match(p, n, false))).collect();
    let r = &mut *ctx.reply;
    r.array(libs.len());
    for (name, lib) in libs {
        r.map(if with_code { 4 } else { 3 });
        r.bulk(b"library_name");
        r.bulk(name);
        r.bulk(b"engine");
        r.bulk(b"LUA");
        r.bulk(b"functions");
        r.array(lib.functions.len());
        for (fname, f) in &lib.functions {
            r.map(3);
            r.bulk(b"name");
            r.bulk(fname);
            r.bulk(b"description");
            match &f.description {
                Some(d) => r.bulk(d),
                None => r.null(),
            }
            r.bulk(b"flags");
            let names: Vec<&str> = FLAG_NAMES.iter().filter(|(b, _)| f.flags & b != 0).map(|(_, n)| *n).collect();
            r.set(names.len());
            for n in names {
                r.simple(n.as_bytes());
            }
        }
        if with_code {
            r.bulk(b"library_code");
            r.bulk(&lib.code);
        }
    }
}

pub fn function_stats(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let (libs, funcs) = (ctx.st.functions.libraries.len(), ctx.st.functions.by_function.len());
    let running = ctx.st.scripts.running.as_ref();
    if running.is_some_and(|r| r.home == VmHome::Scripts) {
        return ctx.err(BUSY_EVAL);
    }
    let r = &mut *ctx.reply;
    r.map(2);
    r.bulk(b"running_script");
    match running {
        Some(run) => {
            r.map(3);
            r.bulk(b"name");
            r.bulk(&run.argv[1]);
            r.bulk(b"command");
            r.array(run.argv.len());
            for a in &run.argv {
                r.bulk(a);
            }
            r.bulk(b"duration_ms");
            r.int(ctx.st.now_ms - run.started_ms);
        }
        None => r.null(),
    }
    r.bulk(b"engines");
    r.map(1);
    r.bulk(b"LUA");
    r.map(2);
    r.bulk(b"libraries_count");
    r.int(libs as i64);
    r.bulk(b"functions_count");
    r.int(funcs as i64);
}

pub fn function_kill(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    kill(ctx, false);
}

pub fn function_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ]);
}

pub fn fcall(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    fcall_generic(ctx, argv, false);
}
pub fn fcall_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    fcall_generic(ctx, argv, true);
}

fn fcall_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], ro: bool) {
    let Some((lib, flags)) = ctx.st.functions.find(argv[1]).map(|(l, f)| (l.to_vec(), f)) else {
        return ctx.err("ERR Function not found");
    };
    let Some((keys, args)) = split_keys(ctx, argv, "ERR Bad number of keys provided") else { return };
    if ro && flags & FLAG_NO_WRITES == 0 {
        return ctx.err("ERR Can not execute a script with write flag using *_ro command.");
    }
    run_in(ctx, VmHome::Functions, Target::Function { lib: &lib, name: argv[1] }, argv, keys, args, flags, ro || flags & FLAG_NO_WRITES != 0);
}
