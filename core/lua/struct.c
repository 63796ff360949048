/* The `struct` library Redis loads (Roberto Ierusalimschy's struct 0.2 API: pack, unpack,
 * size), written here from its documented behaviour and black-box comparison with
 * redis-server 7.0.15 on x86-64. Its formats are those of that build on every target:
 * `l`, `L` and `T` are 8 bytes, `i`/`I` 4 (or `iN`, N up to 32), `h` 2, the native order
 * little-endian, the default maximum alignment (`!`) 8; integers go through 64 bits, and
 * doubles become integers as x86 converts them (out of range or NaN: INT64_MIN, for
 * unsigned targets via 2^63), so the wasm32 engine (32-bit `long` and `size_t`) packs the
 * same bytes. Counts in formats are checked against INT_MAX ("integral size overflow"),
 * unpack checks every size against the data before reading, and each result is preceded
 * by a check of Lua's stack ("too many results"). */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "lauxlib.h"
#include "memoria_lua.h"

#define MAXINTSIZE 32
#define MAXALIGN 8
#define BIG 0
#define LITTLE 1

typedef struct {
  int endian;
  int align;
} header;

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int64_t x86_i64(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return (int64_t)d;
  return INT64_MIN;
}
/* A double to an unsigned 64-bit integer as gcc does it on x86-64 (through 2^63). */
static uint64_t x86_u64(double d) {
  if (d >= 9223372036854775808.0) return (uint64_t)x86_i64(d - 9223372036854775808.0) ^ 0x8000000000000000ull;
  return (uint64_t)x86_i64(d);
}

/* The digits at *fmt, or `df` when there are none. */
static int getnum(lua_State *L, const char **fmt, int df) {
  if (!is_digit((unsigned char)**fmt)) return df;
  int a = 0;
  do {
    int d = **fmt - '0';
    if (a > (INT_MAX - d) / 10) luaL_error(L, "integral size overflow");
    a = a * 10 + d;
    (*fmt)++;
  } while (is_digit((unsigned char)**fmt));
  return a;
}

static uint64_t optsize(lua_State *L, int opt, const char **fmt) {
  switch (opt) {
  case 'B':
  case 'b':
  case 'x':
    return 1;
  case 'H':
  case 'h':
    return 2;
  case 'L':
  case 'l':
  case 'T':
  case 'd':
    return 8;
  case 'f':
    return 4;
  case 'c':
    return (uint64_t)getnum(L, fmt, 1);
  case 'i':
  case 'I': {
    int n = getnum(L, fmt, 4);
    if (n > MAXINTSIZE) luaL_error(L, "integral size %d is larger than limit of %d", n, MAXINTSIZE);
    return (uint64_t)n;
  }
  default:
    return 0;
  }
}

/* Padding before an item of `size` bytes at `len` (strings are not aligned). */
static uint64_t toalign(uint64_t len, const header *h, int opt, uint64_t size) {
  if (size == 0 || opt == 'c') return 0;
  if (size > (uint64_t)h->align) size = (uint64_t)h->align;
  return (size - (len & (size - 1))) & (size - 1);
}

static void control(lua_State *L, int opt, const char **fmt, header *h) {
  switch (opt) {
  case ' ':
    return;
  case '>':
    h->endian = BIG;
    return;
  case '<':
    h->endian = LITTLE;
    return;
  case '!': {
    int a = getnum(L, fmt, MAXALIGN);
    if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
    h->align = a;
    return;
  }
  default:
    luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
  }
}

/* Bytes of a little-endian value in the header's order. */
static void add_ordered(luaL_Buffer *b, unsigned char *p, int size, int endian) {
  if (endian == BIG)
    for (int i = 0, j = size - 1; i < j; i++, j--) {
      unsigned char t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
  luaL_addlstring(b, (const char *)p, (size_t)size);
}

static void put_integer(lua_State *L, luaL_Buffer *b, int arg, int endian, int size) {
  double n = luaL_checknumber(L, arg);
  uint64_t v = n < 0 ? (uint64_t)x86_i64(n) : x86_u64(n);
  unsigned char buf[MAXINTSIZE];
  for (int i = 0; i < size; i++) {
    buf[i] = (unsigned char)(v & 0xff);
    v >>= 8;
  }
  add_ordered(b, buf, size, endian);
}

/* A double to a float as x86 converts it: a NaN keeps its sign and top payload bits and
 * becomes quiet. */
static uint32_t float_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  if ((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (u & 0x000fffffffffffffull))
    return (uint32_t)(u >> 63 << 31) | 0x7fc00000u | (uint32_t)((u & 0x000fffffffffffffull) >> 29);
  float f = (float)d;
  uint32_t r;
  memcpy(&r, &f, 4);
  return r;
}

static int st_pack(lua_State *L) {
  luaL_Buffer b;
  const char *fmt = luaL_checkstring(L, 1);
  header h = {LITTLE, 1};
  int arg = 2;
  uint64_t total = 0;
  lua_pushnil(L); /* separates the arguments from the buffer */
  luaL_buffinit(L, &b);
  while (*fmt) {
    int opt = (unsigned char)*fmt++;
    uint64_t size = optsize(L, opt, &fmt);
    uint64_t pad = toalign(total, &h, opt, size);
    total += pad;
    while (pad-- > 0) luaL_addchar(&b, '\0');
    switch (opt) {
    case 'b':
    case 'B':
    case 'h':
    case 'H':
    case 'l':
    case 'L':
    case 'T':
    case 'i':
    case 'I':
      put_integer(L, &b, arg++, h.endian, (int)size);
      break;
    case 'x':
      luaL_addchar(&b, '\0');
      break;
    case 'f': {
      uint32_t u = float_bits(luaL_checknumber(L, arg++));
      unsigned char p[4];
      for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
      add_ordered(&b, p, 4, h.endian);
      break;
    }
    case 'd': {
      double d = luaL_checknumber(L, arg++);
      uint64_t u;
      memcpy(&u, &d, 8);
      unsigned char p[8];
      for (int i = 0; i < 8; i++) p[i] = (unsigned char)(u >> (8 * i));
      add_ordered(&b, p, 8, h.endian);
      break;
    }
    case 'c':
    case 's': {
      size_t l;
      const char *s = luaL_checklstring(L, arg++, &l);
      if (size == 0) size = l;
      luaL_argcheck(L, (uint64_t)l >= size, arg, "string too short");
      luaL_addlstring(&b, s, (size_t)size);
      if (opt == 's') {
        luaL_addchar(&b, '\0');
        size++;
      }
      break;
    }
    default:
      control(L, opt, &fmt, &h);
    }
    total += size;
  }
  luaL_pushresult(&b);
  return 1;
}

static double get_integer(const unsigned char *p, int endian, int is_signed, int size) {
  uint64_t v = 0;
  if (endian == BIG)
    for (int i = 0; i < size; i++) v = (v << 8) | p[i];
  else
    for (int i = size - 1; i >= 0; i--) v = (v << 8) | p[i];
  if (!is_signed) return (double)v;
  /* The sign bit of a `size`-byte integer, and every bit above it; x86 takes the shift
   * modulo 64, so sizes past 8 and size 0 test a bit that the 64 bits do hold. */
  uint64_t mask = ~(uint64_t)0 << ((size * 8 - 1) & 63);
  if (v & mask) v |= mask;
  return (double)(int64_t)v;
}

static int st_unpack(lua_State *L) {
  header h = {LITTLE, 1};
  const char *fmt = luaL_checkstring(L, 1);
  size_t ld_;
  const unsigned char *data = (const unsigned char *)luaL_checklstring(L, 2, &ld_);
  uint64_t ld = ld_;
  uint64_t pos = (uint64_t)x86_i64(luaL_optnumber(L, 3, 1));
  luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
  pos--;
  int n = 0;
  while (*fmt) {
    int opt = (unsigned char)*fmt++;
    uint64_t size = optsize(L, opt, &fmt);
    pos += toalign(pos, &h, opt, size);
    luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");
    switch (opt) {
    case 'b':
    case 'B':
    case 'h':
    case 'H':
    case 'l':
    case 'L':
    case 'T':
    case 'i':
    case 'I':
      lua_pushnumber(L, get_integer(data + pos, h.endian, opt >= 'a', (int)size));
      n++;
      break;
    case 'x':
      break;
    case 'f': {
      uint32_t u = 0;
      for (int i = 0; i < 4; i++) u |= (uint32_t)data[pos + (uint64_t)(h.endian == BIG ? 3 - i : i)] << (8 * i);
      lua_pushnumber(L, memoria_f32_to_double(u));
      n++;
      break;
    }
    case 'd': {
      uint64_t u = 0;
      for (int i = 0; i < 8; i++) u |= (uint64_t)data[pos + (uint64_t)(h.endian == BIG ? 7 - i : i)] << (8 * i);
      double d;
      memcpy(&d, &u, 8);
      lua_pushnumber(L, d);
      n++;
      break;
    }
    case 'c':
      if (size == 0) {
        if (n == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
        size = x86_u64(lua_tonumber(L, -1));
        lua_pop(L, 1);
        n--;
        luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
      }
      lua_pushlstring(L, (const char *)data + pos, (size_t)size);
      n++;
      break;
    case 's': {
      const unsigned char *e = memchr(data + pos, '\0', (size_t)(ld - pos));
      if (!e) luaL_error(L, "unfinished string in data");
      size = (uint64_t)(e - (data + pos)) + 1;
      lua_pushlstring(L, (const char *)data + pos, (size_t)size - 1);
      n++;
      break;
    }
    default:
      control(L, opt, &fmt, &h);
    }
    pos += size;
  }
  lua_pushnumber(L, (lua_Number)(int64_t)(pos + 1)); /* the next position */
  return n + 1;
}

static int st_size(lua_State *L) {
  header h = {LITTLE, 1};
  const char *fmt = luaL_checkstring(L, 1);
  uint64_t pos = 0;
  while (*fmt) {
    int opt = (unsigned char)*fmt++;
    uint64_t size = optsize(L, opt, &fmt);
    pos += toalign(pos, &h, opt, size);
    if (opt == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
    else if (opt == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
    if (!is_alnum(opt)) control(L, opt, &fmt, &h);
    pos += size;
  }
  lua_pushnumber(L, (lua_Number)(int64_t)pos);
  return 1;
}

void memoria_open_struct(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"pack", st_pack},
      {"unpack", st_unpack},
      {"size", st_size},
      {NULL, NULL},
  };
  luaL_register(L, "struct", fns);
  lua_pop(L, 1);
}
