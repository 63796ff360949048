/* The Lua VM of one shard, set up as Redis 7.0 sets up its own: the libraries it loads,
 * the globals it removes, read-only library tables and `_G`, an error handler that adds
 * where an error happened, and scripts run as registered functions with KEYS and ARGV.
 * A count hook bounds the work of a script; an allocator cap bounds its memory. */
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "lualib.h"
#include "memoria_lua.h"

/* Runs between garbage-collection steps (Redis's LUA_GC_CYCLE_PERIOD). */
#define GC_PERIOD 50

static const char KILLED[] = "Script killed: it ran past its execution budget (busy-reply-threshold)";

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

void memoria_count_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  memoria_vm *vm = memoria_vm_of(L);
  vm->steps += MEMORIA_HOOK_EVERY;
  if (vm->steps > vm->budget) kill_script(L);
}

void memoria_match_step(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  if (++vm->steps > vm->budget) kill_script(L);
}

/* Redis's __redis__err__handler: a string error becomes {err = "ERR " .. msg}; the table
 * gets the source and line of the Lua code that raised it (its caller when a C function
 * such as redis.call or error raised it). */
int memoria_err_handler(lua_State *L) {
  lua_Debug ar;
  int have = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
  if (have && strcmp(ar.what, "C") == 0) have = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
  if (!lua_istable(L, 1)) {
    /* tostring(err), without reaching for globals (a function library has none). */
    switch (lua_type(L, 1)) {
    case LUA_TNUMBER:
    case LUA_TSTRING:
      lua_pushvalue(L, 1);
      break;
    case LUA_TNIL:
      lua_pushliteral(L, "nil");
      break;
    case LUA_TBOOLEAN:
      lua_pushstring(L, lua_toboolean(L, 1) ? "true" : "false");
      break;
    default:
      if (!luaL_callmeta(L, 1, "__tostring")) lua_pushfstring(L, "%s: %p", luaL_typename(L, 1), lua_topointer(L, 1));
    }
    lua_newtable(L);
    lua_pushstring(L, "err");
    lua_pushfstring(L, "ERR %s", lua_tostring(L, -3));
    lua_rawset(L, -3);
    lua_replace(L, 1);
    lua_settop(L, 1);
  }
  if (have) {
    lua_pushstring(L, "source");
    lua_pushstring(L, ar.source);
    lua_rawset(L, 1);
    lua_pushstring(L, "line");
    lua_pushinteger(L, ar.currentline);
    lua_rawset(L, 1);
  }
  lua_settop(L, 1);
  return 1;
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
  memoria_open_redis(L);
  static const char *const removed[] = {"dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy", NULL};
  for (const char *const *n = removed; *n; n++) remove_global(L, *n);
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

/* The reply for a failed run: Redis's "-<err> script: <name>, on <source>:<line>." */
static void reply_failure(memoria_vm *vm, const char *shown) {
  lua_State *L = vm->L;
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

/* Calls the function under `nargs` arguments on the stack (above the error handler at
 * index 1) and sends its reply, or its error naming `shown`, to the host. */
static void call_and_reply(memoria_vm *vm, int nargs, const char *shown) {
  lua_State *L = vm->L;
  lua_sethook(L, memoria_count_hook, LUA_MASKCOUNT, MEMORIA_HOOK_EVERY);
  int failed = lua_pcall(L, nargs, 1, 1);
  lua_sethook(L, NULL, 0, 0);
  if (failed) {
    reply_failure(vm, shown);
  } else if (!lua_checkstack(L, 4)) {
    reply_str(vm, "-ERR reached lua stack limit\r\n");
  } else {
    /* Converting a deep reply runs no Lua code: no budget applies. */
    memoria_lua_to_resp(L, vm);
  }
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
}

void memoria_run_begin(memoria_vm *vm, int client_resp3, unsigned long long budget, const memoria_host *host) {
  vm->host = host;
  vm->steps = 0;
  vm->budget = budget;
  vm->resp = 2;
  vm->client_resp3 = client_resp3;
  vm->kill_msg = KILLED;
  lua_settop(vm->L, 0);
  lua_pushcfunction(vm->L, memoria_err_handler);
}

void memoria_lua_call(memoria_vm *vm, const char *lib, const char *name, const char *shown, int nkeys,
                      const char *const *keys, const size_t *klens, int nargs, const char *const *args,
                      const size_t *alens, int client_resp3, unsigned long long budget, const memoria_host *host) {
  lua_State *L = vm->L;
  memoria_run_begin(vm, client_resp3, budget, host);
  if (lib) {
    /* A function gets KEYS and ARGV as its arguments. */
    memoria_push_library_function(L, lib, name);
    memoria_push_array(L, nkeys, keys, klens);
    memoria_push_array(L, nargs, args, alens);
    call_and_reply(vm, 2, shown);
    return;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, name);
  /* An EVAL script's KEYS and ARGV are globals: `_G` is opened for them only. */
  lua_enablereadonlytable(L, LUA_GLOBALSINDEX, 0);
  memoria_push_array(L, nkeys, keys, klens);
  lua_setglobal(L, "KEYS");
  memoria_push_array(L, nargs, args, alens);
  lua_setglobal(L, "ARGV");
  lua_enablereadonlytable(L, LUA_GLOBALSINDEX, 1);
  call_and_reply(vm, 0, shown);
}
