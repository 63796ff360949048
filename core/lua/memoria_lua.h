/* The C side of scripting: a Lua 5.1 VM set up as Redis 7 sets up its own, and the
 * conversions between RESP and Lua values. Everything that touches the Lua API lives in
 * C, so a Lua error (a longjmp, or a wasm exception in the component) never crosses a
 * Rust frame; Rust is reached only through the function pointers of `memoria_host`. */
#ifndef MEMORIA_LUA_H
#define MEMORIA_LUA_H

#include <stddef.h>
#include <stdint.h>

#include "lua.h"

/* What the engine lends a running script. Replies and errors travel as RESP bytes. */
typedef struct memoria_host {
  void *ud;
  /* redis.call/pcall: runs argv with replies in RESP3 when `resp3`; *reply is valid
   * until the next call. Refusals by the script rules come back as error replies. */
  void (*call)(void *ud, int argc, const char *const *argv, const size_t *lens, int resp3,
               const char **reply, size_t *reply_len);
  /* redis.acl_check_cmd: 1 allowed, 0 denied, -1 no such command. */
  int (*acl_check)(void *ud, int argc, const char *const *argv, const size_t *lens);
  /* redis.sha1hex: 40 lower-case hex digits. */
  void (*sha1hex)(const char *p, size_t len, char *out40);
  /* redis.log at Redis's level numbers (0 debug … 3 warning). */
  void (*log)(void *ud, int level, const char *msg, size_t len);
  /* The script's reply, appended in pieces. */
  void (*reply)(void *ud, const char *p, size_t len);
  /* redis.register_function during FUNCTION LOAD: a function of the library being
   * loaded, its flag bits (MEMORIA_FLAG_*) and description (NULL: none). */
  void (*registered)(void *ud, const char *name, size_t len, int flags, const char *desc, size_t desc_len);
  /* An error is about to be appended to the script's reply; `counted`: it came from a
   * redis.call/pcall and was counted there (INFO errorstats counts it once). */
  void (*error)(void *ud, int counted);
} memoria_host;

/* The field Redis 7.0 sets on an error table made from a command's error reply: that
 * error was counted already. */
#define MEMORIA_ERR_COUNTED_FIELD "ignore_error_stats_update"


/* Script flags (shebang `flags=` of EVAL, `flags` of redis.register_function). */
#define MEMORIA_FLAG_NO_WRITES 1
#define MEMORIA_FLAG_ALLOW_OOM 2
#define MEMORIA_FLAG_ALLOW_STALE 4
#define MEMORIA_FLAG_NO_CLUSTER 8
#define MEMORIA_FLAG_ALLOW_CROSS_SLOT 16

typedef struct memoria_vm memoria_vm;

/* A fresh VM whose allocations stop at `mem_cap` bytes (then: "not enough memory"). */
memoria_vm *memoria_lua_open(size_t mem_cap);
void memoria_lua_close(memoria_vm *vm);
size_t memoria_lua_used(const memoria_vm *vm);

/* Compiles `body` into the function registered as `name` ("f_<sha>"). On a syntax error
 * returns 1 and points *err at Lua's message (valid until the next call into the VM). */
int memoria_lua_compile(memoria_vm *vm, const char *name, const char *body, size_t len,
                        const char **err, size_t *err_len);

/* Runs a script and sends its reply (or its error, naming it `shown`) to host->reply,
 * encoded for a RESP3 client when `client_resp3`. `lib` NULL: the EVAL script compiled as
 * `name`, with KEYS and ARGV as globals; else function `name` of library `lib`, with KEYS
 * and ARGV as its arguments. `budget` bounds the work in VM instructions (and
 * pattern-matching steps) between yields. `slice` non-zero: the run yields after about
 * that many instructions, where it can, and 1 is returned, with nothing replied yet; it
 * goes on with memoria_lua_resume. 0: the run ended and replied. */
int memoria_lua_call(memoria_vm *vm, const char *lib, const char *name, const char *shown, int nkeys,
                     const char *const *keys, const size_t *klens, int nargs, const char *const *args,
                     const size_t *alens, int client_resp3, unsigned long long budget, unsigned long long slice,
                     const memoria_host *host);
/* Goes on with a run that yielded (same returns); `kill`: it fails at once with Redis's
 * "Script killed by user" error. */
int memoria_lua_resume(memoria_vm *vm, int kill, const memoria_host *host);

/* math.random's rand48 state (Redis keeps one per process, for EVAL and FCALL alike). */
unsigned long long memoria_lua_rand_state(const memoria_vm *vm);
void memoria_lua_set_rand_state(memoria_vm *vm, unsigned long long state);

/* ---- Functions (FUNCTION LOAD, FCALL): a VM of their own ---- */

/* A VM for function libraries: its globals table is empty and read-only, and reads go to
 * the library API (`redis.register_function`, `redis.log`) while a library loads, to the
 * usual globals while a function runs (Redis 7.0's function_lua.c). */
memoria_vm *memoria_lua_open_functions(size_t mem_cap);

/* Runs a library's code (after its `#!lua name=` line) so it registers its functions
 * (each reported through host->registered). 0: ok, the library is staged; 1: a syntax
 * error; 2: the code failed. *err is the message. */
int memoria_lua_load_library(memoria_vm *vm, const char *code, size_t len, unsigned long long budget,
                             const memoria_host *host, const char **err, size_t *err_len);
/* The staged library becomes `lib` (replacing one of that name). */
void memoria_lua_commit_library(memoria_vm *vm, const char *lib);
void memoria_lua_delete_library(memoria_vm *vm, const char *lib);

/* ---- internal to the C files ---- */

/* The count hook fires every this many VM instructions. */
#define MEMORIA_HOOK_EVERY 1000
struct memoria_vm {
  lua_State *L;
  size_t used, cap;
  const memoria_host *host; /* during a run */
  int resp;                 /* redis.setresp: 2 or 3 */
  int client_resp3;
  unsigned long long steps, budget;
  int runs;                 /* since the last GC step */
  int reply_depth;          /* nesting of the reply being encoded */
  const char *kill_msg;     /* the error of a run past its budget */
  unsigned long long slice; /* a run's instructions between yields (0: it never yields) */
  lua_State *co;            /* the thread scripts run in (NULL: make one) */
  int co_ref;               /* its registry reference */
  int yielded;              /* the count hook yielded (not the script) */
  char *shown;              /* the running script's name in its errors */
  unsigned long long rand48; /* Redis's rand48 state for math.random */
};

memoria_vm *memoria_vm_of(lua_State *L);
void memoria_count_hook(lua_State *L, lua_Debug *ar);
int memoria_err_handler(lua_State *L);
int memoria_undefined_global(lua_State *L);
void memoria_push_array(lua_State *L, int n, const char *const *v, const size_t *lens);
/* Tells the host an error goes into the reply next; `counted` from the error table on
 * the top of the stack, if it is one (0 otherwise). */
void memoria_reply_error_begins(memoria_vm *vm, lua_State *L, int table_on_top);
void memoria_run_begin(memoria_vm *vm, int client_resp3, unsigned long long budget, const memoria_host *host);
/* Compiles a chunk onto the stack (collecting once on running out of memory); non-zero and
 * *err set when it does not compile. */
int memoria_load_chunk(lua_State *L, const char *code, size_t len, const char *chunkname, const char **err,
                       size_t *err_len);
/* Pushes function `fname` of library `lib` (nil if there is none). */
void memoria_push_library_function(lua_State *L, const char *lib, const char *fname);
/* Pushes a new library table of the functions `fns`, each a closure over one zeroed
 * userdata of `size` bytes (the library's state, returned), which `gc` releases when the
 * library is collected. */
void *memoria_new_library(lua_State *L, const struct luaL_Reg *fns, size_t size, lua_CFunction gc);
/* A float's bits as a double; a NaN keeps its sign and payload and becomes quiet (as x86's
 * cvtss2sd makes it). */
double memoria_f32_to_double(uint32_t bits);
/* Adds redis.log, the LOG_* levels and REDIS_VERSION(_NUM) to the table on the top. */
void memoria_redis_common(lua_State *L);
void memoria_open_redis(lua_State *L);
void memoria_open_rand(lua_State *L);
void memoria_open_bit(lua_State *L);
void memoria_open_cjson(lua_State *L);
void memoria_open_struct(lua_State *L);
void memoria_open_cmsgpack(lua_State *L);
/* Pushes the Lua value of one RESP reply at *p (advancing it); 0 on malformed input. */
int memoria_resp_to_lua(lua_State *L, const char **p, const char *end);
/* Encodes the value on the top of the stack (popping it) as the script's reply. */
void memoria_lua_to_resp(lua_State *L, memoria_vm *vm);
/* Counts one pattern-matching step (lstrlib's `match`, patched at build time). */
void memoria_match_step(lua_State *L);
/* Pushes a Redis error table {err = "CODE msg"} built from "-CODE msg" or "msg". */
void memoria_push_error(lua_State *L, const char *msg, size_t len);
/* Marks the table at `idx` read-only (the build-time patch of the Lua VM checks it). */
LUA_API void lua_enablereadonlytable(lua_State *L, int idx, int enabled);

#endif
