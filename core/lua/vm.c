/* The Lua VM of one shard, set up as Redis 7.0 sets up its own: the libraries it loads,
 * the globals it removes, read-only library tables and `_G`, an error handler that adds
 * where an error happened, and scripts run as registered functions with KEYS and ARGV.
 * A count hook bounds the work of a script; an allocator cap bounds its memory. */
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "lstate.h"
#include "lualib.h"
#include "memoria_lua.h"

/* Runs between garbage-collection steps (Redis's LUA_GC_CYCLE_PERIOD). */
#define GC_PERIOD 50

static const char KILLED[] = "Script killed: it ran past its execution budget (busy-reply-threshold)";
static const char USER_KILLED[] = "Script killed by user with SCRIPT KILL...";

static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  memoria_vm *vm = ud;
  if (nsize == 0) {
    free(ptr);
    vm->used -= osize;
    return NULL;
  }
  if (nsize > osize && vm->used - osize + nsize > vm->cap) return NULL;
  void *p = realloc(ptr, nsize);
  if (p) vm->used = vm->used - osize + nsize;
  return p;
}

memoria_vm *memoria_vm_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}

size_t memoria_lua_used(const memoria_vm *vm) { return vm->used; }

/* Stops a script that ran past its budget. Like Redis's SCRIPT KILL, the hook then fires
 * on every instruction, so a pcall cannot swallow the error and go on. */
static void kill_script(lua_State *L) {
  lua_sethook(L, memoria_count_hook, LUA_MASKCOUNT, 1);
  memoria_vm *vm = memoria_vm_of(L);
  memoria_push_error(L, vm->kill_msg, strlen(vm->kill_msg));
  lua_error(L);
}

/* Whether `L` may yield here: no C function (pcall, a metamethod, sort's comparator)
 * between it and the resume, whose C frame a yield would have to cross. */
static int can_yield(lua_State *L) { return L->nCcalls <= L->baseCcalls; }

void memoria_count_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  memoria_vm *vm = memoria_vm_of(L);
  vm->steps += MEMORIA_HOOK_EVERY;
  if (vm->steps > vm->budget) kill_script(L);
  /* A run that may yield hands control back every slice, where it can: only the run's
   * own thread (never a coroutine of the script's), outside C calls. The budget then
   * bounds only the stretches that cannot yield. */
  if (vm->slice && L == vm->co && vm->steps >= vm->slice && can_yield(L)) {
    vm->steps = 0;
    vm->yielded = 1;
    lua_yield(L, 0);
  }
}

void memoria_match_step(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  if (++vm->steps > vm->budget) kill_script(L);
}

/* Makes the error value on the top of L a Redis error table ({err = "ERR " .. msg} for a
 * string) and adds the source and line of the Lua code that raised it: the function at
 * `level` of `stack`'s calls, or its caller when that is a C function such as redis.call
 * or error. */
static void error_table(lua_State *L, lua_State *stack, int level) {
  lua_Debug ar;
  int have = lua_getstack(stack, level, &ar) && lua_getinfo(stack, "nSl", &ar);
  if (have && strcmp(ar.what, "C") == 0) have = lua_getstack(stack, level + 1, &ar) && lua_getinfo(stack, "nSl", &ar);
  int e = lua_gettop(L);
  if (!lua_istable(L, e)) {
    /* tostring(err), without reaching for globals (a function library has none). */
    switch (lua_type(L, e)) {
    case LUA_TNUMBER:
    case LUA_TSTRING:
      lua_pushvalue(L, e);
      break;
    case LUA_TNIL:
      lua_pushliteral(L, "nil");
      break;
    case LUA_TBOOLEAN:
      lua_pushstring(L, lua_toboolean(L, e) ? "true" : "false");
      break;
    default:
      if (!luaL_callmeta(L, e, "__tostring")) lua_pushfstring(L, "%s: %p", luaL_typename(L, e), lua_topointer(L, e));
    }
    lua_newtable(L);
    lua_pushstring(L, "err");
    lua_pushfstring(L, "ERR %s", lua_tostring(L, -3));
    lua_rawset(L, -3);
    lua_replace(L, e);
    lua_settop(L, e);
  }
  if (have) {
    lua_pushstring(L, "source");
    lua_pushstring(L, ar.source);
    lua_rawset(L, e);
    lua_pushstring(L, "line");
    lua_pushinteger(L, ar.currentline);
    lua_rawset(L, e);
  }
}

/* Redis's __redis__err__handler, as an error handler of lua_pcall: level 1 is the
 * function that raised the error (level 0 is the handler). */
int memoria_err_handler(lua_State *L) {
  lua_settop(L, 1);
  error_table(L, L, 1);
  return 1;
}

/* coroutine.yield, refusing to yield the thread a script runs in: in Redis a script runs
 * on the main thread, where Lua refuses with this message. */
static int coroutine_yield(lua_State *L) {
  if (L == memoria_vm_of(L)->co) {
    lua_pushliteral(L, "attempt to yield across metamethod/C-call boundary");
    return lua_error(L);
  }
  return lua_yield(L, lua_gettop(L));
}

/* Redis 7.0's pcall: a caught Redis error table ({err = "…"}) comes back as its text. */
static int redis_pcall_global(lua_State *L) {
  int argc = lua_gettop(L);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
    lua_remove(L, 1);
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) lua_replace(L, -2);
      else lua_pop(L, 1);
    }
    lua_pushboolean(L, 0);
    lua_insert(L, 1);
  }
  return lua_gettop(L);
}

/* `_G`'s __index: reading an undefined global is an error, as in Redis. */
int memoria_undefined_global(lua_State *L) {
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'", lua_tostring(L, 2));
}

/* loadstring and load compile source only: bytecode is refused by the build-time patch
 * of ldo.c (f_parser), as Redis refuses it. */

static void remove_global(lua_State *L, const char *name) {
  lua_pushnil(L);
  lua_setglobal(L, name);
}

void *memoria_new_library(lua_State *L, const luaL_Reg *fns, size_t size, lua_CFunction gc) {
  lua_newtable(L);
  void *state = lua_newuserdata(L, size);
  memset(state, 0, size);
  lua_newtable(L);
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, -3, f->name);
  }
  lua_pop(L, 1);
  return state;
}

double memoria_f32_to_double(uint32_t u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
    uint64_t b = ((uint64_t)(u >> 31) << 63) | 0x7ff8000000000000ull | ((uint64_t)(u & 0x007fffffu) << 29);
    double d;
    memcpy(&d, &b, 8);
    return d;
  }
  float f;
  memcpy(&f, &u, 4);
  return (double)f;
}

/* Marks every table reachable from the one on the top of the stack read-only. */
static void protect_tables(lua_State *L, int depth) {
  if (depth > 4 || !lua_istable(L, -1)) return;
  lua_enablereadonlytable(L, -1, 1);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_istable(L, -1) && !lua_rawequal(L, -1, -3)) protect_tables(L, depth + 1);
    lua_pop(L, 1);
  }
}

memoria_vm *memoria_lua_open(size_t mem_cap) {
  memoria_vm *vm = calloc(1, sizeof *vm);
  if (!vm) return NULL;
  vm->cap = mem_cap;
  vm->resp = 2;
  lua_State *L = lua_newstate(vm_alloc, vm);
  if (!L) {
    free(vm);
    return NULL;
  }
  vm->L = L;
  lua_pushcfunction(L, luaopen_base);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_table);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_string);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_math);
  lua_call(L, 0, 0);
  memoria_open_rand(L);
  memoria_open_bit(L);
  memoria_open_cjson(L);
  memoria_open_struct(L);
  memoria_open_cmsgpack(L);
  memoria_open_redis(L);
  static const char *const removed[] = {"dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy", NULL};
  for (const char *const *n = removed; *n; n++) remove_global(L, *n);
  lua_getglobal(L, "coroutine");
  lua_pushcfunction(L, coroutine_yield);
  lua_setfield(L, -2, "yield");
  lua_pop(L, 1);
  lua_pushcfunction(L, memoria_err_handler);
  lua_setglobal(L, "__redis__err__handler");
  lua_pushcfunction(L, redis_pcall_global);
  lua_setglobal(L, "pcall");
  /* The string metatable and every library table are read-only, then `_G` itself. */
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  protect_tables(L, 0);
  lua_settop(L, 0);
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  protect_tables(L, 0);
  lua_newtable(L);
  lua_pushcfunction(L, memoria_undefined_global);
  lua_setfield(L, -2, "__index");
  lua_enablereadonlytable(L, -1, 1);
  lua_enablereadonlytable(L, -2, 0);
  lua_setmetatable(L, -2);
  lua_enablereadonlytable(L, -1, 1);
  lua_settop(L, 0);
  return vm;
}

void memoria_lua_close(memoria_vm *vm) {
  if (!vm) return;
  lua_close(vm->L);
  free(vm->shown);
  free(vm);
}

int memoria_load_chunk(lua_State *L, const char *code, size_t len, const char *chunkname, const char **err,
                       size_t *err_len) {
  int top = lua_gettop(L);
  int r = luaL_loadbuffer(L, code, len, chunkname);
  if (r == LUA_ERRMEM) {
    /* 5.1 has no emergency collection: collect, then try once more. */
    lua_settop(L, top);
    lua_gc(L, LUA_GCCOLLECT, 0);
    r = luaL_loadbuffer(L, code, len, chunkname);
  }
  if (r) {
    *err = lua_tolstring(L, -1, err_len);
    if (!*err) {
      *err = "unknown error";
      *err_len = strlen(*err);
    }
  }
  return r;
}

int memoria_lua_compile(memoria_vm *vm, const char *name, const char *body, size_t len, const char **err, size_t *err_len) {
  lua_State *L = vm->L;
  lua_settop(L, 0);
  if (memoria_load_chunk(L, body, len, "@user_script", err, err_len)) return 1;
  lua_setfield(L, LUA_REGISTRYINDEX, name);
  return 0;
}

void memoria_push_array(lua_State *L, int n, const char *const *v, const size_t *lens) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushlstring(L, v[i], lens[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static void reply_str(memoria_vm *vm, const char *s) { vm->host->reply(vm->host->ud, s, strlen(s)); }

/* An error reply's text: no CR or LF inside (they would break the protocol). */
static void reply_error_text(memoria_vm *vm, const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    char c = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
    vm->host->reply(vm->host->ud, &c, 1);
  }
}

void memoria_reply_error_begins(memoria_vm *vm, lua_State *L, int table_on_top) {
  int counted = 0;
  if (table_on_top) {
    /* Raw: a metatable's __index must not run (and raise) while the reply is written. */
    lua_pushstring(L, MEMORIA_ERR_COUNTED_FIELD);
    lua_rawget(L, -2);
    counted = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  vm->host->error(vm->host->ud, counted);
}

/* The reply for a failed run: Redis's "-<err> script: <name>, on <source>:<line>." */
static void reply_failure(memoria_vm *vm, const char *shown) {
  lua_State *L = vm->L;
  memoria_reply_error_begins(vm, L, lua_istable(L, -1));
  if (!lua_istable(L, -1)) {
    const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
    char buf[160];
    snprintf(buf, sizeof buf, "-ERR Error running script %s, %.100s", shown, msg);
    reply_error_text(vm, buf, strlen(buf));
    reply_str(vm, "\r\n");
    return;
  }
  lua_getfield(L, -1, "err");
  size_t len = 0;
  const char *msg = lua_tolstring(L, -1, &len);
  reply_str(vm, "-");
  if (msg) reply_error_text(vm, msg, len);
  lua_getfield(L, -2, "source");
  lua_getfield(L, -3, "line");
  if (lua_isstring(L, -2) && lua_isstring(L, -1)) {
    reply_str(vm, " script: ");
    reply_error_text(vm, shown, strlen(shown));
    reply_str(vm, ", on ");
    size_t n;
    const char *src = lua_tolstring(L, -2, &n);
    reply_error_text(vm, src, n);
    reply_str(vm, ":");
    src = lua_tolstring(L, -1, &n);
    reply_error_text(vm, src, n);
    reply_str(vm, ".");
  }
  reply_str(vm, "\r\n");
}

/* Ends a run: what is left on the stacks goes, and some garbage with it. */
static void run_end(memoria_vm *vm, int failed) {
  lua_State *L = vm->L;
  lua_settop(L, 0);
  if (failed || vm->used > vm->cap / 2) {
    /* What a failed script left (a memory bomb's garbage) goes now, not at the next
     * allocation failure: 5.1 has no emergency collection. */
    vm->runs = 0;
    lua_gc(L, LUA_GCCOLLECT, 0);
  } else if (++vm->runs >= GC_PERIOD) {
    vm->runs = 0;
    lua_gc(L, LUA_GCSTEP, 1);
  }
  vm->host = NULL;
  free(vm->shown);
  vm->shown = NULL;
}

/* Runs the run's thread until it returns, fails or yields at a slice's end (1: it yielded;
 * the run goes on with memoria_lua_resume). Else sends its reply, or its error naming the
 * script, to the host. `nargs`: the arguments on the thread's stack for a start, 0 for a
 * resume. */
static int run_slice(memoria_vm *vm, int nargs) {
  lua_State *L = vm->L, *co = vm->co;
  vm->yielded = 0;
  int status = lua_resume(co, nargs);
  if (status == LUA_YIELD) {
    if (vm->yielded) return 1;
    /* coroutine.yield refuses the run's thread, so nothing else yields it: fail safe. */
    lua_settop(co, 0);
    lua_pushliteral(co, "the script yielded");
    status = LUA_ERRRUN;
  }
  lua_sethook(co, NULL, 0, 0);
  int failed = status != 0;
  if (failed) {
    lua_xmove(co, L, 1);
    /* A failed thread cannot run again: the next run makes another. The stack is still
     * there for error_table: level 0 is the function that raised the error. */
    if (status == LUA_ERRRUN) error_table(L, co, 0);
    luaL_unref(L, LUA_REGISTRYINDEX, vm->co_ref);
    vm->co = NULL;
    reply_failure(vm, vm->shown);
  } else {
    /* The first result, as lua_pcall(…, 1, …) keeps it. */
    lua_settop(co, 1);
    lua_xmove(co, L, 1);
    if (!lua_checkstack(L, 4)) {
      reply_str(vm, "-ERR reached lua stack limit\r\n");
    } else {
      /* Converting a deep reply runs no Lua code: no budget applies. */
      memoria_lua_to_resp(L, vm);
    }
  }
  run_end(vm, failed);
  return 0;
}

/* Starts the function under `nargs` arguments on the stack in the run's thread. */
static int start_run(memoria_vm *vm, int nargs, const char *shown) {
  lua_State *L = vm->L;
  size_t n = strlen(shown) + 1;
  vm->shown = malloc(n);
  if (vm->shown) memcpy(vm->shown, shown, n);
  if (!vm->co) {
    vm->co = lua_newthread(L);
    vm->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  if (!vm->shown) {
    lua_settop(L, 0);
    lua_pushliteral(L, "not enough memory");
    reply_failure(vm, "?");
    run_end(vm, 1);
    return 0;
  }
  lua_xmove(L, vm->co, nargs + 1);
  lua_sethook(vm->co, memoria_count_hook, LUA_MASKCOUNT, MEMORIA_HOOK_EVERY);
  return run_slice(vm, nargs);
}

void memoria_run_begin(memoria_vm *vm, int client_resp3, unsigned long long budget, const memoria_host *host) {
  vm->host = host;
  vm->steps = 0;
  vm->budget = budget;
  vm->resp = 2;
  vm->client_resp3 = client_resp3;
  vm->kill_msg = KILLED;
  vm->slice = 0;
  lua_settop(vm->L, 0);
}

int memoria_lua_call(memoria_vm *vm, const char *lib, const char *name, const char *shown, int nkeys,
                     const char *const *keys, const size_t *klens, int nargs, const char *const *args,
                     const size_t *alens, int client_resp3, unsigned long long budget, unsigned long long slice,
                     const memoria_host *host) {
  lua_State *L = vm->L;
  memoria_run_begin(vm, client_resp3, budget, host);
  vm->slice = slice;
  if (lib) {
    /* A function gets KEYS and ARGV as its arguments. */
    memoria_push_library_function(L, lib, name);
    memoria_push_array(L, nkeys, keys, klens);
    memoria_push_array(L, nargs, args, alens);
    return start_run(vm, 2, shown);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, name);
  /* An EVAL script's KEYS and ARGV are globals: `_G` is opened for them only. */
  lua_enablereadonlytable(L, LUA_GLOBALSINDEX, 0);
  memoria_push_array(L, nkeys, keys, klens);
  lua_setglobal(L, "KEYS");
  memoria_push_array(L, nargs, args, alens);
  lua_setglobal(L, "ARGV");
  lua_enablereadonlytable(L, LUA_GLOBALSINDEX, 1);
  return start_run(vm, 0, shown);
}

int memoria_lua_resume(memoria_vm *vm, int kill, const memoria_host *host) {
  vm->host = host;
  if (kill) {
    /* Fails at the next hook, and at every instruction after it (kill_script), so a
     * pcall cannot swallow it. */
    vm->kill_msg = USER_KILLED;
    vm->budget = 0;
  }
  return run_slice(vm, 0);
}
