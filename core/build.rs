//! Builds the Lua 5.1 VM of scripting (EVAL, FUNCTION) and its Redis libraries
//! (`lua/*.c`) into a static library: natively with the system C compiler, for the
//! engine component (wasm32) with clang 22, whose `-wasm-enable-sjlj` turns Lua's
//! setjmp/longjmp into wasm exceptions, against the freestanding headers of
//! `lua/include` (the rest of that libc is `lua/wasm/libc.c` and `src/lua/libc.rs`).
//!
//! Lua's sources come from the `lua-src` crate (vanilla 5.1.5); the changes Redis makes to
//! its Lua are applied here to a copy in OUT_DIR: read-only tables, no bytecode loading,
//! and a pattern matcher whose nesting and steps are bounded.

use std::path::{Path, PathBuf};

/// The `lua-src` release whose 5.1.5 sources are compiled (pinned in Cargo.toml).
const LUA_SRC: &str = "lua-src-550.1.1";

const LUA_FILES: &[&str] = &[
    "lapi", "lcode", "ldebug", "ldo", "ldump", "lfunc", "lgc", "llex", "lmem", "lobject", "lopcodes", "lparser", "lstate", "lstring", "ltable", "ltm",
    "lundump", "lvm", "lzio", "lauxlib", "lbaselib", "ltablib", "lstrlib", "lmathlib",
];
const OUR_FILES: &[&str] = &["vm", "redis_lib", "resp", "functions", "bit", "cjson", "struct", "cmsgpack"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = std::env::var("TARGET").unwrap();
    let wasm = target.starts_with("wasm32");
    println!("cargo:rerun-if-changed=lua");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MEMORIA_LUA_SRC");

    let src = lua_sources();
    let lua_dir = out.join("lua-5.1.5");
    std::fs::create_dir_all(&lua_dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "c" || x == "h") {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_str().unwrap();
            write_if_changed(&lua_dir.join(name), &patch(name, text));
        }
    }

    let mut cc = cc::Build::new();
    cc.include(&lua_dir).include(manifest.join("lua")).warnings(false).define("LUA_ANSI", None);
    cc.define("MEMORIA_REDIS_VERSION", "\"7.0.15\"").define("MEMORIA_REDIS_VERSION_NUM", "0x07000f");
    if wasm {
        let clang = std::env::var("MEMORIA_WASM_CC").unwrap_or_else(|_| "clang-22".into());
        if std::process::Command::new(&clang).arg("--version").output().is_err() {
            panic!(
                "building the engine's Lua for wasm32 needs clang 22 ({clang} not found).\n\
                 Install it with: apt-get install -y clang-22 lld-22   (.ci/run does this)"
            );
        }
        cc.compiler(&clang).archiver(std::env::var("MEMORIA_WASM_AR").unwrap_or_else(|_| "llvm-ar-22".into()));
        cc.flag("-ffreestanding").flag("-nostdlibinc").flag("-isystem").flag(manifest.join("lua/include").to_str().unwrap());
        cc.flag("-mexception-handling").flag("-mllvm").flag("-wasm-enable-sjlj").flag("-mllvm").flag("-wasm-use-legacy-eh=false");
        cc.file(manifest.join("lua/wasm/libc.c"));
    }
    for f in LUA_FILES {
        cc.file(lua_dir.join(format!("{f}.c")));
    }
    for f in OUR_FILES {
        cc.file(manifest.join(format!("lua/{f}.c")));
    }
    cc.opt_level(2).compile("memoria_lua");
}

/// Where lua-src keeps Lua 5.1.5: cargo's registry, or `MEMORIA_LUA_SRC` (vendored builds).
fn lua_sources() -> PathBuf {
    if let Ok(p) = std::env::var("MEMORIA_LUA_SRC") {
        return p.into();
    }
    let home = std::env::var("CARGO_HOME").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry/src");
    if let Ok(dirs) = std::fs::read_dir(&registry) {
        for d in dirs.flatten() {
            let p = d.path().join(LUA_SRC).join("lua-5.1.5");
            if p.join("lapi.c").exists() {
                return p;
            }
        }
    }
    panic!("Lua 5.1.5 sources not found under {}/*/{LUA_SRC} (run `cargo fetch`, or set MEMORIA_LUA_SRC)", registry.display());
}

/// Replaces `from` (which must occur `times` times) in a Lua source file.
fn replace(text: String, file: &str, from: &str, to: &str, times: usize) -> String {
    let n = text.matches(from).count();
    assert_eq!(n, times, "{file}: expected {times} of {from:?}, found {n} (a different Lua release?)");
    text.replace(from, to)
}

/// Redis's changes to its Lua, and the bounds Memoria adds.
fn patch(name: &str, text: String) -> String {
    match name {
        // Read-only tables (Redis's lua_enablereadonlytable): a flag on each table,
        // checked wherever a table is written.
        "lobject.h" => replace(
            text,
            name,
            "  lu_byte lsizenode;  /* log2 of size of `node' array */\n",
            "  lu_byte lsizenode;  /* log2 of size of `node' array */\n  lu_byte readonly;\n",
            1,
        ),
        "ltable.c" => replace(text, name, "  t->flags = cast_byte(~0);\n", "  t->flags = cast_byte(~0);\n  t->readonly = 0;\n", 1),
        "lvm.c" => replace(
            text,
            name,
            "      Table *h = hvalue(t);\n      TValue *oldval = luaH_set(L, h, key); /* do a primitive set */\n",
            "      Table *h = hvalue(t);\n      TValue *oldval;\n      if (h->readonly) luaG_runerror(L, \"Attempt to modify a readonly table\");\n      oldval = luaH_set(L, h, key); /* do a primitive set */\n",
            1,
        ),
        "lapi.c" => {
            let t = replace(
                text,
                name,
                "  api_check(L, ttistable(t));\n  setobj2t(L, luaH_set(L, hvalue(t), L->top-2), L->top-1);\n",
                "  api_check(L, ttistable(t));\n  if (hvalue(t)->readonly) luaG_runerror(L, \"Attempt to modify a readonly table\");\n  setobj2t(L, luaH_set(L, hvalue(t), L->top-2), L->top-1);\n",
                1,
            );
            let t = replace(
                t,
                name,
                "  api_check(L, ttistable(o));\n  setobj2t(L, luaH_setnum(L, hvalue(o), n), L->top-1);\n",
                "  api_check(L, ttistable(o));\n  if (hvalue(o)->readonly) luaG_runerror(L, \"Attempt to modify a readonly table\");\n  setobj2t(L, luaH_setnum(L, hvalue(o), n), L->top-1);\n",
                1,
            );
            let t = replace(
                t,
                name,
                "    case LUA_TTABLE: {\n      hvalue(obj)->metatable = mt;\n",
                "    case LUA_TTABLE: {\n      if (hvalue(obj)->readonly) luaG_runerror(L, \"Attempt to modify a readonly table\");\n      hvalue(obj)->metatable = mt;\n",
                1,
            );
            t + "\nLUA_API void lua_enablereadonlytable (lua_State *L, int objindex, int enabled) {\n  const TValue *o = index2adr(L, objindex);\n  api_check(L, ttistable(o));\n  hvalue(o)->readonly = (lu_byte)enabled;\n}\n"
        }
        // `[[` inside a long string is text, as redis-server 7.0.15 reads it (not "nesting
        // of [[...]] is deprecated").
        "luaconf.h" => replace(text, name, "#define LUA_COMPAT_LSTR\t\t1\n", "#undef LUA_COMPAT_LSTR\n", 1),
        // unpack's count, computed in unsigned arithmetic: `e - i + 1` overflowed, and the
        // compiler may drop the `n <= 0` test of the overflow, so a range such as
        // (0, INT_MAX) pushed past the stack (CVE-2025-46817; Redis's fix answers "too many
        // results to unpack").
        "lbaselib.c" => replace(
            text,
            name,
            "  n = e - i + 1;  /* number of elements */\n  if (n <= 0 || !lua_checkstack(L, n))  /* n <= 0 means arith. overflow */\n    return luaL_error(L, \"too many results to unpack\");\n  lua_rawgeti(L, 1, i);  /* push arg[i] (avoiding overflow problems) */\n  while (i++ < e)  /* push arg[i + 1...e] */\n    lua_rawgeti(L, 1, i);\n",
            "  if ((unsigned int)e - (unsigned int)i >= (unsigned int)INT_MAX ||\n      !lua_checkstack(L, n = (int)((unsigned int)e - (unsigned int)i) + 1))\n    return luaL_error(L, \"too many results to unpack\");\n  lua_rawgeti(L, 1, i);  /* push arg[i] (avoiding overflow problems) */\n  while (i < e)  /* push arg[i + 1...e] */\n    lua_rawgeti(L, 1, ++i);\n",
            1,
        ),
        // Source only: a binary chunk is refused (Redis refuses bytecode; it can be
        // crafted to break the VM).
        "ldo.c" => replace(
            text,
            name,
            "  tf = ((c == LUA_SIGNATURE[0]) ? luaU_undump : luaY_parser)(L, p->z,\n                                                             &p->buff, p->name);\n",
            "  if (c == LUA_SIGNATURE[0]) {\n    luaO_pushfstring(L, \"%s: bytecode loading is disabled\", p->name);\n    luaD_throw(L, LUA_ERRSYNTAX);\n  }\n  tf = luaY_parser(L, p->z, &p->buff, p->name);\n",
            1,
        ),
        // 5.1's matcher recurses without a limit (a deep pattern exhausts the C stack, a
        // trap in wasm) and runs any time inside one C call: nesting is bounded as in Lua
        // 5.2 and every step counts against the script's budget.
        "lstrlib.c" => {
            let t = replace(
                text,
                name,
                "#include \"lualib.h\"\n",
                "#include \"lualib.h\"\n\nvoid memoria_match_step (lua_State *L);\n#define MEMORIA_MAXMATCHDEPTH 200\n",
                1,
            );
            let t = replace(
                t,
                name,
                "  int level;  /* total number of captures (finished or unfinished) */\n",
                "  int level;  /* total number of captures (finished or unfinished) */\n  int matchdepth;\n",
                1,
            );
            let t = replace(t, name, "  ms.L = L;\n", "  ms.L = L;\n  ms.matchdepth = 0;\n", 3);
            replace(
                t,
                name,
                "static const char *match (MatchState *ms, const char *s, const char *p) {\n  init: /* using goto's to optimize tail recursion */\n",
                "static const char *match_body (MatchState *ms, const char *s, const char *p);\n\
                 static const char *match (MatchState *ms, const char *s, const char *p) {\n\
                 \x20 const char *r;\n\
                 \x20 if (++ms->matchdepth > MEMORIA_MAXMATCHDEPTH) luaL_error(ms->L, \"pattern too complex\");\n\
                 \x20 r = match_body(ms, s, p);\n\
                 \x20 ms->matchdepth--;\n\
                 \x20 return r;\n\
                 }\n\
                 static const char *match_body (MatchState *ms, const char *s, const char *p) {\n\
                 \x20 init: memoria_match_step(ms->L);\n",
                1,
            )
        }
        _ => text,
    }
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}
