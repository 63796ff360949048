/* The `cmsgpack` library Redis loads (lua-cmsgpack 0.4.0's API: pack, unpack, unpack_one,
 * unpack_limit), written here from its documented behaviour and black-box comparison with
 * redis-server 7.0.15 on x86-64, whose outputs, error texts and limits it reproduces on
 * every target:
 *  - a number is an integer when it converts to int64 and back unchanged (else a float32
 *    when that is exact, else a float64); conversions of doubles to integers follow x86's
 *    (out of range and NaN give INT64_MIN), never the wasm32 build's own;
 *  - a table is an array when its keys are exactly 1..n (n in int range), else a map;
 *    tables nested deeper than 16 encode as nil;
 *  - unpack's stack checks (Lua's 8000-slot limit of a C function) fail at the same depths
 *    and counts, with the same messages, as Redis's recursive decoder. The decoder here is
 *    iterative (its containers on a heap array of at most 8000 frames), so no input reaches
 *    deep C recursion, and nothing is allocated from a declared count: every element
 *    takes input bytes.
 * Each encoded or decoded value counts one step of the script's budget, so a table that
 * refers to itself many times cannot make pack run unbounded. pack's buffer is a userdata
 * in a stack slot of its own (so the garbage collector frees it, after an error too, and
 * the VM's memory cap bounds it); the stack checks count the slots Redis's stack would
 * hold, without that one. The decoder's frames belong to the module (an upvalue, freed by
 * its __gc), allocated through the VM's allocator. */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "lauxlib.h"
#include "ldo.h"
#include "lstate.h"
#include "memoria_lua.h"

#define MAX_NESTING 16

enum { MP_OK, MP_EOF, MP_BADFMT };

typedef struct {
  uint32_t left; /* elements (arrays) or pairs (maps) still to decode */
  uint32_t next; /* an array's next index */
  uint8_t map;
  uint8_t want_value; /* a map's key is on the stack, its value comes next */
} frame;

typedef struct {
  frame *frames;
  size_t nframes;
} mp_state;

/* pack's output: the userdata at stack index `slot`. */
typedef struct {
  unsigned char *buf;
  size_t len, cap;
  int slot;
} encoder;

/* ---- conversions as x86-64 makes them ---- */

/* cvttsd2si: truncation; NaN and out of range give INT64_MIN. */
static int64_t x86_i64(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return (int64_t)d;
  return INT64_MIN;
}
static int32_t x86_i32(double d) {
  if (d > -2147483649.0 && d < 2147483648.0) return (int32_t)d;
  return INT32_MIN;
}

/* ---- the module's buffers ---- */

static mp_state *state_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

static void *mp_realloc(lua_State *L, void *p, size_t osize, size_t nsize) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  void *q = f(ud, p, osize, nsize);
  if (!q && nsize) luaL_error(L, "not enough memory");
  return q;
}

static int state_gc(lua_State *L) {
  mp_state *s = lua_touserdata(L, 1);
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (s->frames) f(ud, s->frames, s->nframes * sizeof(frame), 0);
  memset(s, 0, sizeof *s);
  return 0;
}

/* Room for `n` more values on the stack, past the API's 8000-slot limit of a C function
 * (the limit applies to the slots Redis would hold, checked before). */
static void room(lua_State *L, int n) {
  luaD_checkstack(L, n);
  if (L->ci->top < L->top + n) L->ci->top = L->top + n;
}

/* Redis's luaL_checkstack, on the stack Redis would have: ours holds pack's buffer too. */
static void check_stack(lua_State *L, int n, const char *msg) {
  if (lua_gettop(L) - 1 + n > LUAI_MAXCSTACK) luaL_error(L, "stack overflow (%s)", msg);
  room(L, n);
}

static void put(lua_State *L, encoder *s, const void *p, size_t n) {
  if (n > s->cap - s->len) {
    if (n > SIZE_MAX / 2 || s->len > SIZE_MAX / 2 - n) luaL_error(L, "not enough memory");
    size_t cap = s->cap ? s->cap : 256;
    while (cap - s->len < n) cap *= 2;
    room(L, 1);
    unsigned char *buf = lua_newuserdata(L, cap);
    if (s->len) memcpy(buf, s->buf, s->len);
    lua_replace(L, s->slot);
    s->buf = buf;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, p, n);
  s->len += n;
}

/* A type byte and `bytes` bytes of v, big-endian. */
static void put_tagged(lua_State *L, encoder *s, unsigned char tag, uint64_t v, int bytes) {
  unsigned char b[9];
  b[0] = tag;
  for (int i = bytes; i >= 1; i--) {
    b[i] = (unsigned char)(v & 0xff);
    v >>= 8;
  }
  put(L, s, b, (size_t)bytes + 1);
}

/* ---- pack ---- */

static void encode_int(lua_State *L, encoder *s, int64_t n) {
  if (n >= 0) {
    if (n <= 127) put_tagged(L, s, (unsigned char)n, 0, 0);
    else if (n <= 0xff) put_tagged(L, s, 0xcc, (uint64_t)n, 1);
    else if (n <= 0xffff) put_tagged(L, s, 0xcd, (uint64_t)n, 2);
    else if (n <= 0xffffffffLL) put_tagged(L, s, 0xce, (uint64_t)n, 4);
    else put_tagged(L, s, 0xcf, (uint64_t)n, 8);
  } else {
    if (n >= -32) put_tagged(L, s, (unsigned char)(n & 0xff), 0, 0);
    else if (n >= -128) put_tagged(L, s, 0xd0, (uint64_t)n, 1);
    else if (n >= -32768) put_tagged(L, s, 0xd1, (uint64_t)n, 2);
    else if (n >= INT32_MIN) put_tagged(L, s, 0xd2, (uint64_t)n, 4);
    else put_tagged(L, s, 0xd3, (uint64_t)n, 8);
  }
}

static void encode_number(lua_State *L, encoder *s, double d) {
  int64_t i = x86_i64(d);
  if ((double)i == d) {
    encode_int(L, s, i);
  } else if (d == (double)(float)d) { /* never a NaN */
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    put_tagged(L, s, 0xca, u, 4);
  } else {
    uint64_t u;
    memcpy(&u, &d, 8);
    put_tagged(L, s, 0xcb, u, 8);
  }
}

static void encode_string(lua_State *L, encoder *s) {
  size_t len;
  const char *p = lua_tolstring(L, -1, &len);
  if (len < 32) put_tagged(L, s, (unsigned char)(0xa0 | len), 0, 0);
  else if (len <= 0xff) put_tagged(L, s, 0xd9, len, 1);
  else if (len <= 0xffff) put_tagged(L, s, 0xda, len, 2);
  else put_tagged(L, s, 0xdb, (uint32_t)len, 4);
  put(L, s, p, len);
}

/* An array: the keys are exactly 1..n, each an integer in int range (an empty table is
 * one). The table is on the top. */
static int is_array(lua_State *L) {
  int top = lua_gettop(L);
  int count = 0, max = 0;
  check_stack(L, 2, "in function table_is_an_array");
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    double n;
    if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 || (double)x86_i32(n) != n) {
      lua_settop(L, top);
      return 0;
    }
    if ((int)n > max) max = (int)n;
    count++;
  }
  lua_settop(L, top);
  return max == count;
}

static void encode_value(lua_State *L, encoder *s, int level);

static void encode_table(lua_State *L, encoder *s, int level) {
  if (is_array(L)) {
    size_t n = lua_objlen(L, -1);
    if (n < 16) put_tagged(L, s, (unsigned char)(0x90 | n), 0, 0);
    else if (n <= 0xffff) put_tagged(L, s, 0xdc, n, 2);
    else put_tagged(L, s, 0xdd, (uint32_t)n, 4);
    check_stack(L, 1, "in function mp_encode_lua_table_as_array");
    for (size_t j = 1; j <= n; j++) {
      lua_rawgeti(L, -1, (int)j);
      encode_value(L, s, level + 1);
    }
    return;
  }
  check_stack(L, 3, "in function mp_encode_lua_table_as_map");
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    n++;
  }
  if (n < 16) put_tagged(L, s, (unsigned char)(0x80 | n), 0, 0);
  else if (n <= 0xffff) put_tagged(L, s, 0xde, n, 2);
  else put_tagged(L, s, 0xdf, (uint32_t)n, 4);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    encode_value(L, s, level + 1); /* the key */
    encode_value(L, s, level + 1); /* its value */
  }
}

/* Encodes the value on the top and pops it. */
static void encode_value(lua_State *L, encoder *s, int level) {
  memoria_match_step(L);
  int t = lua_type(L, -1);
  if (t == LUA_TTABLE && level == MAX_NESTING) t = LUA_TNIL;
  switch (t) {
  case LUA_TSTRING:
    encode_string(L, s);
    break;
  case LUA_TBOOLEAN:
    put_tagged(L, s, lua_toboolean(L, -1) ? 0xc3 : 0xc2, 0, 0);
    break;
  case LUA_TNUMBER:
    encode_number(L, s, lua_tonumber(L, -1));
    break;
  case LUA_TTABLE:
    encode_table(L, s, level);
    break;
  default:
    put_tagged(L, s, 0xc0, 0, 0);
  }
  lua_pop(L, 1);
}

static int mp_pack(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
  if (!lua_checkstack(L, n)) return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
  encoder e = {NULL, 0, 0, n + 1};
  lua_pushnil(L); /* the buffer's slot */
  for (int i = 1; i <= n; i++) {
    check_stack(L, 1, "in function mp_check");
    lua_pushvalue(L, i);
    e.len = 0;
    encode_value(L, &e, 0);
    room(L, 1);
    lua_pushlstring(L, (const char *)e.buf, e.len);
  }
  lua_concat(L, n);
  return 1;
}

/* ---- unpack ---- */

typedef struct {
  const unsigned char *p;
  size_t left;
  int err;
} cursor;

static int need(cursor *c, uint64_t n) {
  if ((uint64_t)c->left >= n) return 1;
  c->err = MP_EOF;
  return 0;
}
static void skip(cursor *c, size_t n) {
  c->p += n;
  c->left -= n;
}
static uint64_t be(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v = (v << 8) | p[i];
  return v;
}

static void push_string(lua_State *L, cursor *c, int hdr, uint64_t len) {
  if (!need(c, (uint64_t)hdr + len)) return;
  lua_pushlstring(L, (const char *)c->p + hdr, (size_t)len);
  skip(c, (size_t)hdr + (size_t)len);
}

static void push_frame(lua_State *L, mp_state *s, size_t depth, uint32_t n, int map) {
  if (depth == s->nframes) {
    size_t cap = s->nframes ? s->nframes * 2 : 64;
    s->frames = mp_realloc(L, s->frames, s->nframes * sizeof(frame), cap * sizeof(frame));
    s->nframes = cap;
  }
  frame *f = &s->frames[depth];
  f->left = n;
  f->next = 1;
  f->map = (uint8_t)map;
  f->want_value = 0;
}

/* Decodes one value onto the stack; c->err on truncated or invalid input. */
static void decode_one(lua_State *L, mp_state *s, cursor *c) {
  size_t depth = 0;
  for (;;) {
    if (!need(c, 1)) return;
    luaL_checkstack(L, 1, "too many return values at once; use unpack_one or unpack_limit instead.");
    memoria_match_step(L);
    unsigned b = c->p[0];
    int container = 0; /* 1 array, 2 map */
    uint64_t count = 0;
    switch (b) {
    case 0xc0:
      lua_pushnil(L);
      skip(c, 1);
      break;
    case 0xc2:
    case 0xc3:
      lua_pushboolean(L, b == 0xc3);
      skip(c, 1);
      break;
    case 0xcc:
    case 0xcd:
    case 0xce: {
      int n = b == 0xcc ? 1 : b == 0xcd ? 2 : 4;
      if (!need(c, (uint64_t)n + 1)) return;
      lua_pushnumber(L, (lua_Number)be(c->p + 1, n));
      skip(c, (size_t)n + 1);
      break;
    }
    case 0xcf: /* read as a signed 64-bit integer, as Redis reads it */
    case 0xd3:
      if (!need(c, 9)) return;
      lua_pushnumber(L, (lua_Number)(int64_t)be(c->p + 1, 8));
      skip(c, 9);
      break;
    case 0xd0:
      if (!need(c, 2)) return;
      lua_pushnumber(L, (lua_Number)(int8_t)c->p[1]);
      skip(c, 2);
      break;
    case 0xd1:
      if (!need(c, 3)) return;
      lua_pushnumber(L, (lua_Number)(int16_t)be(c->p + 1, 2));
      skip(c, 3);
      break;
    case 0xd2:
      if (!need(c, 5)) return;
      lua_pushnumber(L, (lua_Number)(int32_t)be(c->p + 1, 4));
      skip(c, 5);
      break;
    case 0xca:
      if (!need(c, 5)) return;
      lua_pushnumber(L, memoria_f32_to_double((uint32_t)be(c->p + 1, 4)));
      skip(c, 5);
      break;
    case 0xcb: {
      if (!need(c, 9)) return;
      uint64_t u = be(c->p + 1, 8);
      double d;
      memcpy(&d, &u, 8);
      lua_pushnumber(L, d);
      skip(c, 9);
      break;
    }
    case 0xd9:
      if (!need(c, 2)) return;
      push_string(L, c, 2, c->p[1]);
      break;
    case 0xda:
      if (!need(c, 3)) return;
      push_string(L, c, 3, be(c->p + 1, 2));
      break;
    case 0xdb:
      if (!need(c, 5)) return;
      push_string(L, c, 5, be(c->p + 1, 4));
      break;
    case 0xdc:
    case 0xde:
      if (!need(c, 3)) return;
      count = be(c->p + 1, 2);
      container = b == 0xdc ? 1 : 2;
      skip(c, 3);
      break;
    case 0xdd:
    case 0xdf:
      if (!need(c, 5)) return;
      count = be(c->p + 1, 4);
      container = b == 0xdd ? 1 : 2;
      skip(c, 5);
      break;
    default:
      if ((b & 0x80) == 0) {
        lua_pushnumber(L, (lua_Number)b);
        skip(c, 1);
      } else if ((b & 0xe0) == 0xe0) {
        lua_pushnumber(L, (lua_Number)(int8_t)b);
        skip(c, 1);
      } else if ((b & 0xe0) == 0xa0) {
        push_string(L, c, 1, b & 0x1f);
      } else if ((b & 0xf0) == 0x90 || (b & 0xf0) == 0x80) {
        count = b & 0x0f;
        container = (b & 0xf0) == 0x90 ? 1 : 2;
        skip(c, 1);
      } else {
        c->err = MP_BADFMT;
      }
    }
    if (c->err) return;
    if (container) {
      lua_newtable(L);
      if (container == 1) luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
      if (count) {
        push_frame(L, s, depth++, (uint32_t)count, container == 2);
        if (container == 1) lua_pushnumber(L, 1);
        continue; /* its first element (or key) */
      }
    }
    /* A value is complete on the top: it goes into its container, which may complete. */
    for (;;) {
      if (depth == 0) return;
      frame *f = &s->frames[depth - 1];
      if (f->map && !f->want_value) {
        f->want_value = 1;
        break;
      }
      lua_settable(L, -3);
      if (--f->left == 0) {
        depth--;
        continue;
      }
      f->want_value = 0;
      if (!f->map) lua_pushnumber(L, (lua_Number)++f->next);
      break;
    }
  }
}

/* Decodes up to `limit` values from `offset`; with neither, all of them and no offset. */
static int unpack_full(lua_State *L, int64_t limit, int64_t offset) {
  size_t len;
  const char *str = luaL_checklstring(L, 1, &len);
  int all = limit == 0 && offset == 0;
  if (offset < 0 || limit < 0)
    return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.", (int)offset, (int)len);
  if ((uint64_t)offset > (uint64_t)len)
    return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset, (int)len);
  if (all) limit = INT_MAX;
  mp_state *s = state_of(L);
  cursor c = {(const unsigned char *)str + offset, len - (size_t)offset, MP_OK};
  int cnt;
  for (cnt = 0; c.left > 0 && cnt < limit; cnt++) {
    decode_one(L, s, &c);
    if (c.err == MP_EOF) return luaL_error(L, "Missing bytes in input.");
    if (c.err == MP_BADFMT) return luaL_error(L, "Bad data format in input.");
  }
  if (!all) {
    luaL_checkstack(L, 1, "in function mp_unpack_full");
    lua_pushnumber(L, c.left == 0 ? -1 : (lua_Number)(int)(len - c.left));
    lua_insert(L, 2);
    cnt++;
  }
  return cnt;
}

static int mp_unpack(lua_State *L) { return unpack_full(L, 0, 0); }

static int mp_unpack_one(lua_State *L) {
  int64_t offset = x86_i64(luaL_optnumber(L, 2, 0));
  if (lua_gettop(L) > 1) lua_settop(L, 1);
  return unpack_full(L, 1, offset);
}

static int mp_unpack_limit(lua_State *L) {
  int64_t limit = x86_i64(luaL_checknumber(L, 2));
  int64_t offset = x86_i64(luaL_optnumber(L, 3, 0));
  if (lua_gettop(L) > 1) lua_settop(L, 1);
  return unpack_full(L, limit, offset);
}

void memoria_open_cmsgpack(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"pack", mp_pack},
      {"unpack", mp_unpack},
      {"unpack_one", mp_unpack_one},
      {"unpack_limit", mp_unpack_limit},
      {NULL, NULL},
  };
  memoria_new_library(L, fns, sizeof(mp_state), state_gc);
  lua_pushliteral(L, "cmsgpack");
  lua_setfield(L, -2, "_NAME");
  lua_pushliteral(L, "lua-cmsgpack 0.4.0");
  lua_setfield(L, -2, "_VERSION");
  lua_pushliteral(L, "Copyright (C) 2012, Salvatore Sanfilippo");
  lua_setfield(L, -2, "_COPYRIGHT");
  lua_pushliteral(L, "MessagePack C implementation for Lua");
  lua_setfield(L, -2, "_DESCRIPTION");
  lua_setglobal(L, "cmsgpack");
}
