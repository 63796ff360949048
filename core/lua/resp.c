/* RESP ↔ Lua, as Redis 7.0 converts (script_lua.c): a command's reply becomes a Lua
 * value for redis.call, and the script's return value becomes the reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "memoria_lua.h"

/* ---- RESP → Lua ---- */

static const char *line_end(const char *p, const char *end) {
  while (p + 1 < end && !(p[0] == '\r' && p[1] == '\n')) p++;
  return p + 1 < end ? p : NULL;
}

static long long parse_ll(const char *p, const char *e) {
  int neg = p < e && *p == '-';
  long long v = 0;
  for (p += neg; p < e; p++) v = v * 10 + (*p - '0');
  return neg ? -v : v;
}

/* Pushes t[field] = value-on-top into a new table: {field = value}. */
static void wrap_field(lua_State *L, const char *field) {
  lua_newtable(L);
  lua_pushstring(L, field);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_remove(L, -2);
}

int memoria_resp_to_lua(lua_State *L, const char **pp, const char *end) {
  const char *p = *pp;
  if (p >= end) return 0;
  const char *e = line_end(p + 1, end);
  if (!e) return 0;
  if (!lua_checkstack(L, 5)) luaL_error(L, "reached lua stack limit");
  char type = *p++;
  switch (type) {
  case '+':
    lua_newtable(L);
    lua_pushstring(L, "ok");
    lua_pushlstring(L, p, (size_t)(e - p));
    lua_rawset(L, -3);
    *pp = e + 2;
    return 1;
  case '-':
  case '!': {
    const char *msg = p - 1;
    size_t len = (size_t)(e - msg);
    if (type == '!') {
      long long n = parse_ll(p, e);
      msg = e + 2;
      if (n < 0 || msg + n + 2 > end) return 0;
      len = (size_t)n;
      e = msg + n;
      lua_pushliteral(L, "-");
      lua_pushlstring(L, msg, len);
      lua_concat(L, 2);
      msg = lua_tolstring(L, -1, &len);
      memoria_push_error(L, msg, len);
      lua_remove(L, -2);
    } else {
      memoria_push_error(L, msg, len);
    }
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, MEMORIA_ERR_COUNTED_FIELD);
    *pp = e + 2;
    return 1;
  }
  case ':':
    lua_pushnumber(L, (lua_Number)parse_ll(p, e));
    *pp = e + 2;
    return 1;
  case '$':
  case '=': {
    long long n = parse_ll(p, e);
    if (n < 0) {
      lua_pushboolean(L, 0);
      *pp = e + 2;
      return 1;
    }
    const char *s = e + 2;
    if (s + n + 2 > end) return 0;
    if (type == '=' && n >= 4) {
      /* {verbatim_string = {format = "txt", string = "…"}} */
      lua_newtable(L);
      lua_pushstring(L, "format");
      lua_pushlstring(L, s, 3);
      lua_rawset(L, -3);
      lua_pushstring(L, "string");
      lua_pushlstring(L, s + 4, (size_t)n - 4);
      lua_rawset(L, -3);
      wrap_field(L, "verbatim_string");
    } else {
      lua_pushlstring(L, s, (size_t)n);
    }
    *pp = s + n + 2;
    return 1;
  }
  case '*':
  case '~':
  case '%': {
    long long n = parse_ll(p, e);
    *pp = e + 2;
    if (n < 0) {
      lua_pushboolean(L, 0);
      return 1;
    }
    lua_newtable(L);
    for (long long i = 0; i < n; i++) {
      if (type == '*') {
        if (!memoria_resp_to_lua(L, pp, end)) return 0;
        lua_rawseti(L, -2, (int)i + 1);
      } else if (type == '~') {
        if (!memoria_resp_to_lua(L, pp, end)) return 0;
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
      } else {
        if (!memoria_resp_to_lua(L, pp, end) || !memoria_resp_to_lua(L, pp, end)) return 0;
        lua_rawset(L, -3);
      }
    }
    if (type == '~') wrap_field(L, "set");
    if (type == '%') wrap_field(L, "map");
    return 1;
  }
  case '_':
    lua_pushnil(L);
    *pp = e + 2;
    return 1;
  case '#':
    lua_pushboolean(L, *p == 't');
    *pp = e + 2;
    return 1;
  case ',': {
    char buf[64];
    size_t n = (size_t)(e - p) < sizeof buf - 1 ? (size_t)(e - p) : sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    lua_pushnumber(L, strtod(buf, NULL));
    wrap_field(L, "double");
    *pp = e + 2;
    return 1;
  }
  case '(':
    lua_pushlstring(L, p, (size_t)(e - p));
    wrap_field(L, "big_number");
    *pp = e + 2;
    return 1;
  default:
    return 0;
  }
}

/* ---- Lua → RESP ---- */

/* A Lua number as Redis's (long long) cast gives it on x86-64: out of range and NaN give
 * LLONG_MIN (the cast itself is undefined in C; wasm would saturate instead). */
static long long number_to_ll(double d) {
  if (d != d || d >= 9223372036854775808.0 || d < -9223372036854775808.0) return (long long)(-9223372036854775807LL - 1);
  return (long long)d;
}

static void out(memoria_vm *vm, const char *p, size_t len) { vm->host->reply(vm->host->ud, p, len); }
static void out_s(memoria_vm *vm, const char *s) { out(vm, s, strlen(s)); }

static void out_line(memoria_vm *vm, char prefix, long long n) {
  /* By hand: snprintf's format parsing costs more than the rest of a small reply. */
  char buf[24], *p = buf + sizeof buf;
  unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
  *--p = '\n';
  *--p = '\r';
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (n < 0) *--p = '-';
  *--p = prefix;
  out(vm, p, (size_t)(buf + sizeof buf - p));
}

static void out_bulk(memoria_vm *vm, const char *s, size_t len) {
  out_line(vm, '$', (long long)len);
  out(vm, s, len);
  out_s(vm, "\r\n");
}

/* Text of a status, error or big number: CR and LF become spaces. */
static void out_text(memoria_vm *vm, const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    char c = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
    out(vm, &c, 1);
  }
  out_s(vm, "\r\n");
}

static void out_null(memoria_vm *vm) { out_s(vm, vm->client_resp3 ? "_\r\n" : "$-1\r\n"); }

static void out_double(memoria_vm *vm, double d) {
  char buf[64];
  if (d - d != 0 && d == d) {
    snprintf(buf, sizeof buf, "%s", d > 0 ? "inf" : "-inf");
  } else {
    snprintf(buf, sizeof buf, "%.17g", d);
  }
  if (vm->client_resp3) {
    out_s(vm, ",");
    out_s(vm, buf);
    out_s(vm, "\r\n");
  } else {
    out_bulk(vm, buf, strlen(buf));
  }
}

/* The string on the top as a status, error or big number line (after `prefix`), popped. */
static void out_text_line(lua_State *L, memoria_vm *vm, const char *prefix) {
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  out_s(vm, prefix);
  out_text(vm, s, len);
  lua_pop(L, 1);
}

/* The number of entries of the table on the top. */
static int table_count(lua_State *L) {
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    n++;
  }
  return n;
}

/* Whether t[field] (t on the top) has type `type`; if so it is pushed. */
static int get_field(lua_State *L, const char *field, int type) {
  lua_pushstring(L, field);
  lua_rawget(L, -2);
  if (lua_type(L, -1) == type) return 1;
  lua_pop(L, 1);
  return 0;
}

/* Nesting past this is refused: a table that contains itself would recurse forever. */
#define MAX_REPLY_DEPTH 1000

void memoria_lua_to_resp(lua_State *L, memoria_vm *vm) {
  if (vm->reply_depth >= MAX_REPLY_DEPTH || !lua_checkstack(L, 4)) {
    out_s(vm, "-ERR reached lua stack limit\r\n");
    lua_pop(L, 1);
    return;
  }
  size_t len;
  const char *s;
  switch (lua_type(L, -1)) {
  case LUA_TSTRING:
    s = lua_tolstring(L, -1, &len);
    out_bulk(vm, s, len);
    break;
  case LUA_TBOOLEAN:
    if (vm->resp == 2) {
      if (lua_toboolean(L, -1)) out_s(vm, ":1\r\n");
      else out_null(vm);
    } else if (vm->client_resp3) {
      out_s(vm, lua_toboolean(L, -1) ? "#t\r\n" : "#f\r\n");
    } else {
      out_s(vm, lua_toboolean(L, -1) ? ":1\r\n" : ":0\r\n");
    }
    break;
  case LUA_TNUMBER:
    out_line(vm, ':', number_to_ll(lua_tonumber(L, -1)));
    break;
  case LUA_TTABLE:
    if (get_field(L, "err", LUA_TSTRING)) {
      /* Redis's addReplyErrorFormatEx trims CR/LF off the end of an error before it maps
       * the others to spaces (CVE-2025-67733's test). */
      size_t elen;
      const char *e = lua_tolstring(L, -1, &elen);
      while (elen && (e[elen - 1] == '\r' || e[elen - 1] == '\n')) elen--;
      lua_pushvalue(L, -2);
      memoria_reply_error_begins(vm, L, 1);
      lua_pop(L, 1);
      out_s(vm, "-");
      out_text(vm, e, elen);
      lua_pop(L, 1);
      break;
    }
    if (get_field(L, "ok", LUA_TSTRING)) {
      out_text_line(L, vm, "+");
      break;
    }
    if (get_field(L, "double", LUA_TNUMBER)) {
      out_double(vm, lua_tonumber(L, -1));
      lua_pop(L, 1);
      break;
    }
    if (get_field(L, "big_number", LUA_TSTRING)) {
      if (vm->client_resp3) {
        out_text_line(L, vm, "(");
      } else {
        /* RESP2 shows a big number as a bulk string of its text, CR/LF mapped alike. */
        s = lua_tolstring(L, -1, &len);
        out_line(vm, '$', (long long)len);
        out_text(vm, s, len);
        lua_pop(L, 1);
      }
      break;
    }
    if (get_field(L, "verbatim_string", LUA_TTABLE)) {
      if (get_field(L, "format", LUA_TSTRING)) {
        lua_pushstring(L, "string");
        lua_rawget(L, -3);
        if (lua_type(L, -1) == LUA_TSTRING) {
          size_t flen;
          const char *fmt = lua_tolstring(L, -2, &flen);
          s = lua_tolstring(L, -1, &len);
          if (vm->client_resp3) {
            char ext[4] = {' ', ' ', ' ', ':'};
            for (size_t i = 0; i < 3 && i < flen; i++) ext[i] = fmt[i];
            out_line(vm, '=', (long long)len + 4);
            out(vm, ext, 4);
            out(vm, s, len);
            out_s(vm, "\r\n");
          } else {
            out_bulk(vm, s, len);
          }
          lua_pop(L, 3);
          break;
        }
        lua_pop(L, 2);
      } else {
        lua_pop(L, 1);
      }
    }
    if (get_field(L, "map", LUA_TTABLE)) {
      int n = table_count(L);
      vm->reply_depth++;
      if (vm->client_resp3) out_line(vm, '%', n);
      else out_line(vm, '*', 2LL * n);
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        memoria_lua_to_resp(L, vm); /* the key */
        memoria_lua_to_resp(L, vm); /* the value */
      }
      vm->reply_depth--;
      lua_pop(L, 1);
      break;
    }
    if (get_field(L, "set", LUA_TTABLE)) {
      int n = table_count(L);
      vm->reply_depth++;
      out_line(vm, vm->client_resp3 ? '~' : '*', n);
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        memoria_lua_to_resp(L, vm);
      }
      vm->reply_depth--;
      lua_pop(L, 1);
      break;
    }
    vm->reply_depth++;
    {
      /* An array: elements 1, 2, … up to the first nil. */
      int n = 0;
      for (;;) {
        lua_rawgeti(L, -1, n + 1);
        int nil = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (nil) break;
        n++;
      }
      out_line(vm, '*', n);
      for (int j = 1; j <= n; j++) {
        lua_rawgeti(L, -1, j);
        memoria_lua_to_resp(L, vm);
      }
    }
    vm->reply_depth--;
    break;
  default:
    out_null(vm);
  }
  lua_pop(L, 1);
}
