/* Function libraries (FUNCTION LOAD, FCALL) as Redis 7.0 runs them: one VM for all
 * libraries, whose `_G` is an empty read-only table; its metatable sends reads to the
 * library API while a library's code runs (only redis.register_function, redis.log and
 * the constants) and to the usual globals while a function runs. Functions are kept in
 * the registry: __libs[library][function] = callback. */
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "memoria_lua.h"

static const char LIBS[] = "__libs";
static const char STAGED[] = "__staged";
static const char LIBRARY_API[] = "__library_api";
static const char GLOBALS_API[] = "__globals_api";

/* Points `_G`'s reads at the API table stored in the registry under `api`. */
static void use_api(lua_State *L, const char *api) {
  lua_getmetatable(L, LUA_GLOBALSINDEX);
  lua_enablereadonlytable(L, -1, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, api);
  lua_setfield(L, -2, "__index");
  lua_enablereadonlytable(L, -1, 1);
  lua_pop(L, 1);
}

/* A table whose missing names are errors, as `_G`'s are. */
static void protect_missing(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, memoria_undefined_global);
  lua_setfield(L, -2, "__index");
  lua_enablereadonlytable(L, -1, 1);
  lua_setmetatable(L, -2);
}

static int raise(lua_State *L, const char *msg) {
  memoria_push_error(L, msg, strlen(msg));
  return lua_error(L);
}

static const struct {
  const char *name;
  int bit;
} FLAGS[] = {
    {"no-writes", MEMORIA_FLAG_NO_WRITES},     {"allow-oom", MEMORIA_FLAG_ALLOW_OOM},
    {"allow-stale", MEMORIA_FLAG_ALLOW_STALE}, {"no-cluster", MEMORIA_FLAG_NO_CLUSTER},
    {"allow-cross-slot-keys", MEMORIA_FLAG_ALLOW_CROSS_SLOT},
};

static int valid_name(const char *s, size_t len) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

/* redis.register_function(name, callback) or redis.register_function{function_name=…,
 * callback=…, flags={…}, description=…}, with Redis 7.0's checks and texts. */
static int register_function(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  int flags = 0;
  int has_desc = 0;
  if (lua_gettop(L) == 2) {
    if (!lua_isstring(L, 1)) return raise(L, "first argument to redis.register_function must be a string");
    if (!lua_isfunction(L, 2)) return raise(L, "second argument to redis.register_function must be a function");
    lua_pushnil(L); /* description */
  } else if (lua_gettop(L) == 1 && lua_istable(L, 1)) {
    int has_name = 0, has_cb = 0;
    lua_pushnil(L);
    lua_pushnil(L);
    lua_pushnil(L); /* 2: name, 3: callback, 4: description */
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
      if (!strcmp(key, "function_name")) {
        if (!lua_isstring(L, -1)) return raise(L, "function_name argument given to redis.register_function must be a string");
        lua_replace(L, 2);
        has_name = 1;
      } else if (!strcmp(key, "callback")) {
        if (!lua_isfunction(L, -1)) return raise(L, "callback argument given to redis.register_function must be a function");
        lua_replace(L, 3);
        has_cb = 1;
      } else if (!strcmp(key, "description")) {
        if (!lua_isstring(L, -1)) return raise(L, "description argument given to redis.register_function must be a string");
        lua_replace(L, 4);
        has_desc = 1;
      } else if (!strcmp(key, "flags")) {
        if (!lua_istable(L, -1)) return raise(L, "flags argument to redis.register_function must be a table representing function flags");
        for (int i = 1;; i++) {
          lua_rawgeti(L, -1, i);
          if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
          }
          const char *f = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
          int bit = 0;
          for (size_t j = 0; j < sizeof FLAGS / sizeof FLAGS[0]; j++)
            if (!strcmp(f, FLAGS[j].name)) bit = FLAGS[j].bit;
          if (!bit) return raise(L, "unknown flag given");
          flags |= bit;
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
      } else {
        return raise(L, "unknown argument given to redis.register_function");
      }
    }
    if (!has_name) return raise(L, "redis.register_function must get a function name argument");
    if (!has_cb) return raise(L, "redis.register_function must get a callback argument");
    lua_settop(L, 4);
    lua_remove(L, 1);
  } else {
    return raise(L, "wrong number of arguments to redis.register_function");
  }
  /* Stack: name, callback, description. */
  size_t len;
  const char *name = lua_tolstring(L, 1, &len);
  /* (Redis 7.0 names libraries in this message.) */
  if (!valid_name(name, len)) return raise(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long");
  lua_getfield(L, LUA_REGISTRYINDEX, STAGED);
  lua_pushvalue(L, 1);
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) return raise(L, "Function already exists in the library");
  lua_pop(L, 1);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_rawset(L, -3);
  size_t dlen = 0;
  const char *desc = has_desc ? lua_tolstring(L, 3, &dlen) : NULL;
  if (vm->host && vm->host->registered) vm->host->registered(vm->host->ud, name, len, flags, desc, dlen);
  return 0;
}

memoria_vm *memoria_lua_open_functions(size_t mem_cap) {
  memoria_vm *vm = memoria_lua_open(mem_cap);
  if (!vm) return NULL;
  lua_State *L = vm->L;
  /* The globals EVAL sees become the API functions run with. */
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  lua_setfield(L, LUA_REGISTRYINDEX, GLOBALS_API);
  /* What a library's code sees: redis.register_function, redis.log, the constants. */
  lua_newtable(L);
  lua_newtable(L);
  lua_pushcfunction(L, register_function);
  lua_setfield(L, -2, "register_function");
  memoria_redis_common(L);
  protect_missing(L);
  lua_enablereadonlytable(L, -1, 1);
  lua_setfield(L, -2, "redis");
  protect_missing(L);
  lua_enablereadonlytable(L, -1, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, LIBRARY_API);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, LIBS);
  /* An empty, read-only `_G` whose reads go to one API or the other. */
  lua_newtable(L);
  lua_newtable(L);
  lua_setmetatable(L, -2);
  lua_replace(L, LUA_GLOBALSINDEX);
  lua_enablereadonlytable(L, LUA_GLOBALSINDEX, 1);
  use_api(L, GLOBALS_API);
  return vm;
}

int memoria_lua_load_library(memoria_vm *vm, const char *code, size_t len, unsigned long long budget,
                             const memoria_host *host, const char **err, size_t *err_len) {
  lua_State *L = vm->L;
  memoria_run_begin(vm, 0, budget, host);
  lua_pushcfunction(L, memoria_err_handler); /* at 1, for lua_pcall */
  vm->kill_msg = "FUNCTION LOAD timeout";
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, STAGED);
  if (memoria_load_chunk(L, code, len, "@user_function", err, err_len)) {
    vm->host = NULL;
    return 1;
  }
  use_api(L, LIBRARY_API);
  lua_sethook(L, memoria_count_hook, LUA_MASKCOUNT, MEMORIA_HOOK_EVERY);
  int failed = lua_pcall(L, 0, 0, 1);
  lua_sethook(L, NULL, 0, 0);
  use_api(L, GLOBALS_API);
  vm->host = NULL;
  if (!failed) {
    lua_settop(L, 0);
    return 0;
  }
  if (lua_istable(L, -1)) lua_getfield(L, -1, "err");
  *err = lua_tolstring(L, -1, err_len);
  if (!*err) *err = "execution failure", *err_len = strlen(*err);
  return 2;
}

void memoria_lua_commit_library(memoria_vm *vm, const char *lib) {
  lua_State *L = vm->L;
  lua_getfield(L, LUA_REGISTRYINDEX, LIBS);
  lua_getfield(L, LUA_REGISTRYINDEX, STAGED);
  lua_setfield(L, -2, lib);
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, STAGED);
}

void memoria_lua_delete_library(memoria_vm *vm, const char *lib) {
  lua_State *L = vm->L;
  lua_getfield(L, LUA_REGISTRYINDEX, LIBS);
  lua_pushnil(L);
  lua_setfield(L, -2, lib);
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);
}

void memoria_push_library_function(lua_State *L, const char *lib, const char *fname) {
  lua_getfield(L, LUA_REGISTRYINDEX, LIBS);
  lua_getfield(L, -1, lib);
  lua_remove(L, -2);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, fname);
    lua_remove(L, -2);
  }
}
