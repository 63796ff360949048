/* The `bit` library Redis loads (LuaBitOp's API): 32-bit operations on Lua numbers.
 * A number becomes a 32-bit integer by adding 2^52 + 2^51 and taking the low word of the
 * double, which rounds to nearest and wraps modulo 2^32; results are signed. */
#include <stdint.h>

#include "lauxlib.h"
#include "memoria_lua.h"

typedef int32_t SBits;
typedef uint32_t UBits;

static UBits barg(lua_State *L, int idx) {
  union {
    lua_Number n;
    uint64_t b;
  } bn;
  bn.n = luaL_checknumber(L, idx) + 6755399441055744.0;
  return (UBits)bn.b;
}

#define BRET(b)                          \
  lua_pushnumber(L, (lua_Number)(SBits)(b)); \
  return 1;

static int bit_tobit(lua_State *L) { BRET(barg(L, 1)) }
static int bit_bnot(lua_State *L) { BRET(~barg(L, 1)) }

static int bit_band(lua_State *L) {
  int i;
  UBits b = barg(L, 1);
  for (i = lua_gettop(L); i > 1; i--) b &= barg(L, i);
  BRET(b)
}
static int bit_bor(lua_State *L) {
  int i;
  UBits b = barg(L, 1);
  for (i = lua_gettop(L); i > 1; i--) b |= barg(L, i);
  BRET(b)
}
static int bit_bxor(lua_State *L) {
  int i;
  UBits b = barg(L, 1);
  for (i = lua_gettop(L); i > 1; i--) b ^= barg(L, i);
  BRET(b)
}

static int bit_lshift(lua_State *L) {
  UBits b = barg(L, 1), n = barg(L, 2) & 31;
  BRET(b << n)
}
static int bit_rshift(lua_State *L) {
  UBits b = barg(L, 1), n = barg(L, 2) & 31;
  BRET(b >> n)
}
static int bit_arshift(lua_State *L) {
  UBits b = barg(L, 1), n = barg(L, 2) & 31;
  BRET((UBits)((SBits)b >> n))
}
static int bit_rol(lua_State *L) {
  UBits b = barg(L, 1), n = barg(L, 2) & 31;
  BRET((b << n) | (b >> ((32 - n) & 31)))
}
static int bit_ror(lua_State *L) {
  UBits b = barg(L, 1), n = barg(L, 2) & 31;
  BRET((b >> n) | (b << ((32 - n) & 31)))
}
static int bit_bswap(lua_State *L) {
  UBits b = barg(L, 1);
  b = (b >> 24) | ((b >> 8) & 0xff00) | ((b & 0xff00) << 8) | (b << 24);
  BRET(b)
}

static int bit_tohex(lua_State *L) {
  UBits b = barg(L, 1);
  SBits n = lua_isnone(L, 2) ? 8 : (SBits)barg(L, 2);
  const char *hexdigits = "0123456789abcdef";
  char buf[8];
  int i;
  /* -INT32_MIN overflows (CVE-2024-31449: a huge length reached pushlstring); Redis's
   * fix reads it as INT32_MIN + 1, 8 upper-case digits. */
  if (n == INT32_MIN) n = INT32_MIN + 1;
  if (n < 0) {
    n = -n;
    hexdigits = "0123456789ABCDEF";
  }
  if (n > 8) n = 8;
  for (i = (int)n; --i >= 0;) {
    buf[i] = hexdigits[b & 15];
    b >>= 4;
  }
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

void memoria_open_bit(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"tobit", bit_tobit},   {"bnot", bit_bnot},       {"band", bit_band}, {"bor", bit_bor},
      {"bxor", bit_bxor},     {"lshift", bit_lshift},   {"rshift", bit_rshift},
      {"arshift", bit_arshift}, {"rol", bit_rol},       {"ror", bit_ror},   {"bswap", bit_bswap},
      {"tohex", bit_tohex},   {NULL, NULL},
  };
  luaL_register(L, "bit", fns);
  lua_pop(L, 1);
}
