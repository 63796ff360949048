/* The `redis` table of Redis 7.0 (call, pcall, error_reply, status_reply, sha1hex, log,
 * setresp, set_repl, replicate_commands, breakpoint, debug, acl_check_cmd and the
 * constants), and math.random/randomseed on Redis's rand48 generator. Error texts are
 * Redis's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "memoria_lua.h"

#define MAX_ARGV_STACK 16

void memoria_push_error(lua_State *L, const char *msg, size_t len) {
  /* "-CODE msg" keeps its code; a bare "msg" gets ERR. Trailing CR/LF go. */
  const char *code = "ERR";
  size_t code_len = 3;
  if (len && msg[0] == '-') {
    const char *sp = memchr(msg, ' ', len);
    if (sp) {
      code = msg + 1;
      code_len = (size_t)(sp - msg) - 1;
      len -= (size_t)(sp - msg) + 1;
      msg = sp + 1;
    } else {
      msg++;
      len--;
    }
  }
  while (len && (msg[len - 1] == '\r' || msg[len - 1] == '\n')) len--;
  lua_newtable(L);
  lua_pushstring(L, "err");
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, code, code_len);
  luaL_addchar(&b, ' ');
  luaL_addlstring(&b, msg, len);
  luaL_pushresult(&b);
  lua_rawset(L, -3);
}

static int raise_error(lua_State *L, const char *msg) {
  memoria_push_error(L, msg, strlen(msg));
  return lua_error(L);
}

static memoria_vm *running(lua_State *L, const char *what) {
  memoria_vm *vm = memoria_vm_of(L);
  if (!vm->host) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s can only be called inside a script invocation", what);
    raise_error(L, buf);
  }
  return vm;
}

/* The arguments of a redis lib call as strings: numbers as "%.17g" (Lua's own
 * conversion loses precision). Returns 0 and pushes an error table when refused. The
 * number texts are kept in `nums` (17 significant digits fit in 32 bytes). */
typedef struct {
  int argc;
  const char **argv;
  size_t *lens;
  const char *argv_stack[MAX_ARGV_STACK];
  size_t lens_stack[MAX_ARGV_STACK];
  char (*nums)[32];
  char nums_stack[MAX_ARGV_STACK][32];
} args_t;

static int collect_args(lua_State *L, args_t *a) {
  int argc = lua_gettop(L);
  a->argc = argc;
  if (argc == 0) {
    memoria_push_error(L, "Please specify at least one argument for this redis lib call", strlen("Please specify at least one argument for this redis lib call"));
    return 0;
  }
  if (argc <= MAX_ARGV_STACK) {
    a->argv = a->argv_stack;
    a->lens = a->lens_stack;
    a->nums = a->nums_stack;
  } else {
    a->argv = lua_newuserdata(L, sizeof(char *) * (size_t)argc);
    a->lens = lua_newuserdata(L, sizeof(size_t) * (size_t)argc);
    a->nums = lua_newuserdata(L, 32 * (size_t)argc);
  }
  for (int j = 0; j < argc; j++) {
    int t = lua_type(L, j + 1);
    if (t == LUA_TNUMBER) {
      int n = snprintf(a->nums[j], 32, "%.17g", (double)lua_tonumber(L, j + 1));
      a->argv[j] = a->nums[j];
      a->lens[j] = (size_t)n;
    } else if (t == LUA_TSTRING) {
      a->argv[j] = lua_tolstring(L, j + 1, &a->lens[j]);
    } else {
      memoria_push_error(L, "Lua redis lib command arguments must be strings or integers", strlen("Lua redis lib command arguments must be strings or integers"));
      return 0;
    }
  }
  return 1;
}

static int generic_call(lua_State *L, int raise) {
  memoria_vm *vm = running(L, "redis.call/pcall");
  args_t a;
  if (!collect_args(L, &a)) return raise ? lua_error(L) : 1;
  const char *reply;
  size_t len;
  vm->host->call(vm->host->ud, a.argc, a.argv, a.lens, vm->resp == 3, &reply, &len);
  const char *p = reply;
  if (!memoria_resp_to_lua(L, &p, reply + len)) return raise_error(L, "reply of the command could not be read");
  if (raise && lua_istable(L, -1)) {
    lua_pushstring(L, "err");
    lua_rawget(L, -2);
    int is_err = lua_isstring(L, -1);
    lua_pop(L, 1);
    if (is_err) return lua_error(L);
  }
  return 1;
}

static int redis_call(lua_State *L) { return generic_call(L, 1); }
static int redis_pcall(lua_State *L) { return generic_call(L, 0); }

static int single_field_table(lua_State *L, const char *field) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    memoria_push_error(L, "wrong number or type of arguments", strlen("wrong number or type of arguments"));
    return 1;
  }
  lua_newtable(L);
  lua_pushstring(L, field);
  lua_pushvalue(L, -3);
  lua_settable(L, -3);
  return 1;
}

static int redis_error_reply(lua_State *L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    memoria_push_error(L, "wrong number or type of arguments", strlen("wrong number or type of arguments"));
    return 1;
  }
  size_t len;
  const char *err = lua_tolstring(L, -1, &len);
  if (err[0] == '-') {
    memoria_push_error(L, err, len);
  } else {
    lua_pushliteral(L, "-");
    lua_pushvalue(L, 1);
    lua_concat(L, 2);
    err = lua_tolstring(L, -1, &len);
    memoria_push_error(L, err, len);
  }
  return 1;
}

static int redis_status_reply(lua_State *L) { return single_field_table(L, "ok"); }

static int redis_sha1hex(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  if (lua_gettop(L) != 1) return raise_error(L, "wrong number of arguments");
  size_t len;
  const char *s = lua_tolstring(L, 1, &len);
  char hex[40];
  if (!vm->host) return raise_error(L, "redis.sha1hex can only be called inside a script invocation");
  vm->host->sha1hex(s ? s : "", s ? len : 0, hex);
  lua_pushlstring(L, hex, 40);
  return 1;
}

static int redis_log(lua_State *L) {
  int argc = lua_gettop(L);
  if (argc < 2) return raise_error(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) return raise_error(L, "First argument must be a number (log level).");
  int level = (int)lua_tonumber(L, 1);
  if (level < 0 || level > 3) return raise_error(L, "Invalid debug level.");
  memoria_vm *vm = memoria_vm_of(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int j = 2; j <= argc; j++) {
    size_t len;
    const char *s = lua_tolstring(L, j, &len);
    if (!s) continue;
    if (j != 2) luaL_addchar(&b, ' ');
    luaL_addlstring(&b, s, len);
  }
  luaL_pushresult(&b);
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  if (vm->host) vm->host->log(vm->host->ud, level, msg, len);
  return 0;
}

static int redis_setresp(lua_State *L) {
  memoria_vm *vm = running(L, "redis.setresp");
  if (lua_gettop(L) != 1) return raise_error(L, "redis.setresp() requires one argument.");
  int resp = (int)lua_tonumber(L, 1);
  if (resp != 2 && resp != 3) return raise_error(L, "RESP version must be 2 or 3.");
  vm->resp = resp;
  return 0;
}

/* Memoria logs every effect of a script, whatever the flags (a write that is not in the
 * log would be lost on failover): the flags are checked as Redis checks them, then kept
 * for nothing. */
static int redis_set_repl(lua_State *L) {
  running(L, "redis.set_repl");
  if (lua_gettop(L) != 1) return raise_error(L, "redis.set_repl() requires two arguments.");
  int flags = (int)lua_tonumber(L, -1);
  if (flags & ~3) return raise_error(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
  return 0;
}

static int redis_replicate_commands(lua_State *L) {
  lua_pushboolean(L, 1);
  return 1;
}

static int redis_breakpoint(lua_State *L) {
  lua_pushboolean(L, 0);
  return 1;
}

static int redis_debug(lua_State *L) {
  (void)L;
  return 0;
}

static int redis_acl_check_cmd(lua_State *L) {
  memoria_vm *vm = running(L, "redis.acl_check_cmd");
  args_t a;
  if (!collect_args(L, &a)) return lua_error(L);
  int r = vm->host->acl_check(vm->host->ud, a.argc, a.argv, a.lens);
  if (r < 0) return raise_error(L, "Invalid command passed to redis.acl_check_cmd()");
  lua_pushboolean(L, r);
  return 1;
}

static void set_int(lua_State *L, const char *name, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, name);
}

void memoria_open_redis(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"call", redis_call},
      {"pcall", redis_pcall},
      {"error_reply", redis_error_reply},
      {"status_reply", redis_status_reply},
      {"sha1hex", redis_sha1hex},
      {"setresp", redis_setresp},
      {"set_repl", redis_set_repl},
      {"replicate_commands", redis_replicate_commands},
      {"breakpoint", redis_breakpoint},
      {"debug", redis_debug},
      {"acl_check_cmd", redis_acl_check_cmd},
      {NULL, NULL},
  };
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  memoria_redis_common(L);
  set_int(L, "REPL_NONE", 0);
  set_int(L, "REPL_AOF", 1);
  set_int(L, "REPL_SLAVE", 2);
  set_int(L, "REPL_REPLICA", 2);
  set_int(L, "REPL_ALL", 3);
  lua_setglobal(L, "redis");
}

void memoria_redis_common(lua_State *L) {
  lua_pushcfunction(L, redis_log);
  lua_setfield(L, -2, "log");
  set_int(L, "LOG_DEBUG", 0);
  set_int(L, "LOG_VERBOSE", 1);
  set_int(L, "LOG_NOTICE", 2);
  set_int(L, "LOG_WARNING", 3);
  lua_pushstring(L, MEMORIA_REDIS_VERSION);
  lua_setfield(L, -2, "REDIS_VERSION");
  set_int(L, "REDIS_VERSION_NUM", MEMORIA_REDIS_VERSION_NUM);
}

/* ---- math.random: Redis's rand48 (a 48-bit LCG), one generator per VM ---- */

#define RAND48_MAX 0x7fffffff

static long rand48_next(memoria_vm *vm) {
  vm->rand48 = (vm->rand48 * 0x5DEECE66DULL + 0xB) & 0xFFFFFFFFFFFFULL;
  return (long)(vm->rand48 >> 17);
}

static int math_random(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  lua_Number r = (lua_Number)(rand48_next(vm) % RAND48_MAX) / (lua_Number)RAND48_MAX;
  switch (lua_gettop(L)) {
  case 0:
    lua_pushnumber(L, r);
    break;
  case 1: {
    int u = luaL_checkint(L, 1);
    luaL_argcheck(L, 1 <= u, 1, "interval is empty");
    lua_pushnumber(L, floor(r * u) + 1);
    break;
  }
  case 2: {
    int l = luaL_checkint(L, 1);
    int u = luaL_checkint(L, 2);
    luaL_argcheck(L, l <= u, 2, "interval is empty");
    lua_pushnumber(L, floor(r * (u - l + 1)) + l);
    break;
  }
  default:
    return luaL_error(L, "wrong number of arguments");
  }
  return 1;
}

static int math_randomseed(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  unsigned int seed = (unsigned int)luaL_checkint(L, 1);
  vm->rand48 = ((unsigned long long)(seed >> 16 & 0xFFFF) << 32) | ((unsigned long long)(seed & 0xFFFF) << 16) | 0x330E;
  return 0;
}

unsigned long long memoria_lua_rand_state(const memoria_vm *vm) { return vm->rand48; }
void memoria_lua_set_rand_state(memoria_vm *vm, unsigned long long state) { vm->rand48 = state & 0xFFFFFFFFFFFFULL; }

void memoria_open_rand(lua_State *L) {
  memoria_vm *vm = memoria_vm_of(L);
  vm->rand48 = 0x1234ABCD330EULL;
  lua_getglobal(L, "math");
  lua_pushcfunction(L, math_random);
  lua_setfield(L, -2, "random");
  lua_pushcfunction(L, math_randomseed);
  lua_setfield(L, -2, "randomseed");
  lua_pop(L, 1);
}
