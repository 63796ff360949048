/* The `cjson` library Redis loads (lua-cjson 2.1.0's API and behaviour, written here):
 * cjson.encode/decode, the option functions, cjson.null and cjson.new. Texts of errors,
 * number formats, escapes and the sparse-array rule are lua-cjson's, as Redis 7.0 shows
 * them. The encode and string buffers belong to the module's config (lua-cjson's
 * encode_keep_buffer), so an error raised halfway leaks nothing. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "memoria_lua.h"

#define DEFAULT_SPARSE_CONVERT 0
#define DEFAULT_SPARSE_RATIO 2
#define DEFAULT_SPARSE_SAFE 10
#define DEFAULT_MAX_DEPTH 1000
#define DEFAULT_PRECISION 14

typedef struct {
  char *buf;
  size_t len, cap;
} strbuf;

typedef struct {
  int sparse_convert, sparse_ratio, sparse_safe;
  int encode_max_depth, decode_max_depth;
  int precision;
  int encode_invalid_numbers; /* 0 no, 1 yes, 2 as null */
  int decode_invalid_numbers;
  int keep_buffer;
  strbuf out, tmp;
} config;

static void sb_reserve(lua_State *L, strbuf *s, size_t more) {
  if (s->len + more <= s->cap) return;
  size_t cap = s->cap ? s->cap : 256;
  while (cap < s->len + more) cap *= 2;
  char *p = realloc(s->buf, cap);
  if (!p) luaL_error(L, "not enough memory");
  s->buf = p;
  s->cap = cap;
}
static void sb_add(lua_State *L, strbuf *s, const char *p, size_t n) {
  sb_reserve(L, s, n);
  memcpy(s->buf + s->len, p, n);
  s->len += n;
}
static void sb_char(lua_State *L, strbuf *s, char c) { sb_add(L, s, &c, 1); }
static void sb_str(lua_State *L, strbuf *s, const char *p) { sb_add(L, s, p, strlen(p)); }

static config *cfg_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

static int cfg_gc(lua_State *L) {
  config *c = lua_touserdata(L, 1);
  free(c->out.buf);
  free(c->tmp.buf);
  c->out.buf = c->tmp.buf = NULL;
  return 0;
}

/* ---- options ---- */

static int int_option(lua_State *L, int idx, int *v, int min, int max) {
  if (!lua_isnoneornil(L, idx)) {
    int n = luaL_checkint(L, idx);
    if (n < min || n > max) {
      char msg[64];
      snprintf(msg, sizeof msg, "expected integer between %d and %d", min, max);
      luaL_argerror(L, idx, msg);
    }
    *v = n;
  }
  lua_pushinteger(L, *v);
  return 1;
}

/* on/off (booleans, or the strings "on"/"off"; "null" too where allowed). */
static int enum_option(lua_State *L, int idx, int *v, int allow_null) {
  static const char *names[] = {"off", "on", "null", NULL};
  if (!lua_isnoneornil(L, idx)) {
    if (lua_isboolean(L, idx)) {
      *v = lua_toboolean(L, idx);
    } else {
      const char *s = luaL_checkstring(L, idx);
      int i;
      for (i = 0; names[i] && (i < 2 || allow_null); i++)
        if (!strcmp(s, names[i])) break;
      if (!names[i] || (i == 2 && !allow_null)) luaL_argerror(L, idx, allow_null ? "invalid option 'on', 'off' or 'null' expected" : "invalid option");
      *v = i;
    }
  }
  if (*v == 2) lua_pushliteral(L, "null");
  else lua_pushboolean(L, *v);
  return 1;
}

static int opt_sparse(lua_State *L) {
  config *c = cfg_of(L);
  enum_option(L, 1, &c->sparse_convert, 0);
  int_option(L, 2, &c->sparse_ratio, 0, INT_MAX);
  int_option(L, 3, &c->sparse_safe, 0, INT_MAX);
  return 3;
}
static int opt_encode_depth(lua_State *L) { return int_option(L, 1, &cfg_of(L)->encode_max_depth, 1, INT_MAX); }
static int opt_decode_depth(lua_State *L) { return int_option(L, 1, &cfg_of(L)->decode_max_depth, 1, INT_MAX); }
static int opt_precision(lua_State *L) { return int_option(L, 1, &cfg_of(L)->precision, 1, 14); }
static int opt_keep_buffer(lua_State *L) { return enum_option(L, 1, &cfg_of(L)->keep_buffer, 0); }
static int opt_encode_invalid(lua_State *L) { return enum_option(L, 1, &cfg_of(L)->encode_invalid_numbers, 1); }
static int opt_decode_invalid(lua_State *L) { return enum_option(L, 1, &cfg_of(L)->decode_invalid_numbers, 0); }

/* ---- encode ---- */

static void encode_error(lua_State *L, int idx, const char *reason) {
  luaL_error(L, "Cannot serialise %s: %s", luaL_typename(L, idx), reason);
}

static void encode_string(lua_State *L, strbuf *out, int idx) {
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  sb_reserve(L, out, len * 6 + 2);
  sb_char(L, out, '"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    const char *e = NULL;
    switch (c) {
    case '"': e = "\\\""; break;
    case '\\': e = "\\\\"; break;
    case '/': e = "\\/"; break;
    case '\b': e = "\\b"; break;
    case '\t': e = "\\t"; break;
    case '\n': e = "\\n"; break;
    case '\f': e = "\\f"; break;
    case '\r': e = "\\r"; break;
    default:
      if (c < 32 || c == 127) {
        snprintf(esc, sizeof esc, "\\u%04x", c);
        e = esc;
      }
    }
    if (e) sb_str(L, out, e);
    else sb_char(L, out, (char)c);
  }
  sb_char(L, out, '"');
}

static void encode_number(lua_State *L, config *c, strbuf *out, int idx) {
  double n = lua_tonumber(L, idx);
  if (isinf(n) || isnan(n)) {
    if (c->encode_invalid_numbers == 0) encode_error(L, idx, "must not be NaN or Inf");
    if (c->encode_invalid_numbers == 2) {
      sb_str(L, out, "null");
      return;
    }
  }
  char buf[40];
  if (isnan(n)) snprintf(buf, sizeof buf, "nan");
  else if (isinf(n)) snprintf(buf, sizeof buf, n > 0 ? "inf" : "-inf");
  else snprintf(buf, sizeof buf, "%.*g", c->precision, n);
  sb_str(L, out, buf);
}

/* The array length of the table on the top, or -1 for an object (lua-cjson's rule). */
static int array_length(lua_State *L, config *c) {
  double k;
  int max = 0, items = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TNUMBER && (k = lua_tonumber(L, -2))) {
      if (floor(k) == k && k >= 1) {
        if (k > max) max = (int)k;
        items++;
        lua_pop(L, 1);
        continue;
      }
    }
    lua_pop(L, 2);
    return -1;
  }
  if (c->sparse_ratio > 0 && max > items * c->sparse_ratio && max > c->sparse_safe) {
    if (!c->sparse_convert) encode_error(L, -1, "excessively sparse array");
    return -1;
  }
  return max;
}

static void encode_value(lua_State *L, config *c, strbuf *out, int depth);

static void check_depth(lua_State *L, config *c, int depth) {
  if (depth <= c->encode_max_depth && lua_checkstack(L, 3)) return;
  luaL_error(L, "Cannot serialise, excessive nesting (%d)", depth);
}

static void encode_table(lua_State *L, config *c, strbuf *out, int depth) {
  check_depth(L, c, depth);
  int len = array_length(L, c);
  if (len > 0) {
    sb_char(L, out, '[');
    for (int i = 1; i <= len; i++) {
      if (i > 1) sb_char(L, out, ',');
      lua_rawgeti(L, -1, i);
      encode_value(L, c, out, depth);
      lua_pop(L, 1);
    }
    sb_char(L, out, ']');
    return;
  }
  int first = 1;
  sb_char(L, out, '{');
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (!first) sb_char(L, out, ',');
    first = 0;
    int kt = lua_type(L, -2);
    if (kt == LUA_TNUMBER) {
      sb_char(L, out, '"');
      encode_number(L, c, out, -2);
      sb_str(L, out, "\":");
    } else if (kt == LUA_TSTRING) {
      encode_string(L, out, -2);
      sb_char(L, out, ':');
    } else {
      encode_error(L, -2, "table key must be a number or string");
    }
    encode_value(L, c, out, depth);
    lua_pop(L, 1);
  }
  sb_char(L, out, '}');
}

static void encode_value(lua_State *L, config *c, strbuf *out, int depth) {
  switch (lua_type(L, -1)) {
  case LUA_TSTRING:
    encode_string(L, out, -1);
    break;
  case LUA_TNUMBER:
    encode_number(L, c, out, -1);
    break;
  case LUA_TBOOLEAN:
    sb_str(L, out, lua_toboolean(L, -1) ? "true" : "false");
    break;
  case LUA_TTABLE:
    encode_table(L, c, out, depth + 1);
    break;
  case LUA_TNIL:
    sb_str(L, out, "null");
    break;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, -1) == NULL) {
      sb_str(L, out, "null");
      break;
    }
    /* fall through */
  default:
    encode_error(L, -1, "type not supported");
  }
}

static int cjson_encode(lua_State *L) {
  config *c = cfg_of(L);
  luaL_argcheck(L, lua_gettop(L) == 1, 1, "expected 1 argument");
  c->out.len = 0;
  encode_value(L, c, &c->out, 0);
  lua_pushlstring(L, c->out.buf ? c->out.buf : "", c->out.len);
  if (!c->keep_buffer || c->out.cap > (1 << 20)) {
    free(c->out.buf);
    c->out.buf = NULL;
    c->out.cap = 0;
  }
  c->out.len = 0;
  return 1;
}

/* ---- decode ---- */

typedef enum {
  T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_BOOLEAN,
  T_NULL, T_COLON, T_COMMA, T_END, T_WHITESPACE, T_ERROR, T_UNKNOWN
} token_type;

static const char *token_names[] = {
    "T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER", "T_BOOLEAN",
    "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN",
};

typedef struct {
  token_type type;
  size_t index;
  union {
    const char *string;
    double number;
    int boolean;
  } value;
  size_t string_len;
} token;

typedef struct {
  const char *data, *ptr;
  config *cfg;
  int depth;
} parser;

static token_type char_token(int ch) {
  switch (ch) {
  case '{': return T_OBJ_BEGIN;
  case '}': return T_OBJ_END;
  case '[': return T_ARR_BEGIN;
  case ']': return T_ARR_END;
  case ',': return T_COMMA;
  case ':': return T_COLON;
  case '\0': return T_END;
  case ' ': case '\t': case '\n': case '\r': return T_WHITESPACE;
  case 'f': case 'i': case 'I': case 'n': case 'N': case 't': case '"': case '+': case '-':
  case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
    return T_UNKNOWN;
  default:
    return T_ERROR;
  }
}

static void token_error(token *t, parser *p, const char *what) {
  t->type = T_ERROR;
  t->index = (size_t)(p->ptr - p->data);
  t->value.string = what;
}

static int hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = (unsigned char)s[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v << 4 | d;
  }
  return v;
}

static int to_utf8(char *u, int cp) {
  if (cp <= 0x7F) { u[0] = (char)cp; return 1; }
  if (cp <= 0x7FF) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp <= 0xFFFF) {
    u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  if (cp <= 0x1FFFFF) {
    u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (char)(0x80 | (cp >> 6 & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
  }
  return 0;
}

static int unicode_escape(lua_State *L, parser *p) {
  char u[4];
  int escape_len = 6;
  int cp = hex4(p->ptr + 2);
  if (cp < 0) return -1;
  if ((cp & 0xF800) == 0xD800) {
    if (cp & 0x400) return -1;
    if (p->ptr[escape_len] != '\\' || p->ptr[escape_len + 1] != 'u') return -1;
    int low = hex4(p->ptr + 2 + escape_len);
    if (low < 0 || (low & 0xFC00) != 0xDC00) return -1;
    cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
    escape_len = 12;
  }
  int n = to_utf8(u, cp);
  if (!n) return -1;
  sb_add(L, &p->cfg->tmp, u, (size_t)n);
  p->ptr += escape_len;
  return 0;
}

static void string_token(lua_State *L, parser *p, token *t) {
  strbuf *tmp = &p->cfg->tmp;
  char ch;
  p->ptr++;
  tmp->len = 0;
  while ((ch = *p->ptr) != '"') {
    if (!ch) {
      token_error(t, p, "unexpected end of string");
      return;
    }
    if (ch == '\\') {
      switch (p->ptr[1]) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 't': ch = '\t'; break;
      case 'n': ch = '\n'; break;
      case 'f': ch = '\f'; break;
      case 'r': ch = '\r'; break;
      case 'u':
        if (unicode_escape(L, p) == 0) continue;
        token_error(t, p, "invalid unicode escape code");
        return;
      default:
        token_error(t, p, "invalid escape code");
        return;
      }
      p->ptr++;
    }
    sb_char(L, tmp, ch);
    p->ptr++;
  }
  p->ptr++;
  t->type = T_STRING;
  t->value.string = tmp->buf ? tmp->buf : "";
  t->string_len = tmp->len;
}

/* Numbers strict JSON does not allow but strtod takes: a leading '+', hex, leading
 * zeros, inf and nan. */
static int invalid_number(const char *p) {
  if (*p == '+') return 1;
  if (*p == '-') p++;
  if (*p == '0') {
    int ch2 = p[1];
    return (ch2 | 0x20) == 'x' || (ch2 >= '0' && ch2 <= '9');
  } else if (*p <= '9') {
    return 0;
  }
  if (!strncmp(p, "inf", 3) || !strncmp(p, "INF", 3) || !strncmp(p, "Inf", 3)) return 1;
  if (!strncmp(p, "nan", 3) || !strncmp(p, "NAN", 3) || !strncmp(p, "NaN", 3)) return 1;
  return 0;
}

static void number_token(parser *p, token *t) {
  char *end;
  t->type = T_NUMBER;
  t->value.number = strtod(p->ptr, &end);
  if (p->ptr == end) token_error(t, p, "invalid number");
  else p->ptr = end;
}

static void next_token(lua_State *L, parser *p, token *t) {
  int ch;
  for (;;) {
    ch = (unsigned char)*p->ptr;
    t->type = char_token(ch);
    if (t->type != T_WHITESPACE) break;
    p->ptr++;
  }
  t->index = (size_t)(p->ptr - p->data);
  if (t->type == T_ERROR) {
    token_error(t, p, "invalid token");
    return;
  }
  if (t->type == T_END) return;
  if (t->type != T_UNKNOWN) {
    p->ptr++;
    return;
  }
  if (ch == '"') {
    string_token(L, p, t);
    return;
  } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
    if (!p->cfg->decode_invalid_numbers && invalid_number(p->ptr)) {
      token_error(t, p, "invalid number");
      return;
    }
    number_token(p, t);
    return;
  } else if (!strncmp(p->ptr, "true", 4)) {
    t->type = T_BOOLEAN;
    t->value.boolean = 1;
    p->ptr += 4;
    return;
  } else if (!strncmp(p->ptr, "false", 5)) {
    t->type = T_BOOLEAN;
    t->value.boolean = 0;
    p->ptr += 5;
    return;
  } else if (!strncmp(p->ptr, "null", 4)) {
    t->type = T_NULL;
    p->ptr += 4;
    return;
  } else if (p->cfg->decode_invalid_numbers && invalid_number(p->ptr)) {
    number_token(p, t);
    return;
  }
  token_error(t, p, "invalid token");
}

static void parse_error(lua_State *L, const char *expected, token *t) {
  const char *found = t->type == T_ERROR ? t->value.string : token_names[t->type];
  luaL_error(L, "Expected %s but found %s at character %d", expected, found, (int)t->index + 1);
}

static void descend(lua_State *L, parser *p, int slots) {
  p->depth++;
  if (p->depth <= p->cfg->decode_max_depth && lua_checkstack(L, slots)) return;
  luaL_error(L, "Found too many nested data structures (%d) at character %d", p->depth, (int)(p->ptr - p->data));
}

static void parse_value(lua_State *L, parser *p, token *t);

static void parse_object(lua_State *L, parser *p) {
  token t;
  descend(L, p, 3);
  lua_newtable(L);
  next_token(L, p, &t);
  if (t.type == T_OBJ_END) {
    p->depth--;
    return;
  }
  for (;;) {
    if (t.type != T_STRING) parse_error(L, "object key string", &t);
    lua_pushlstring(L, t.value.string, t.string_len);
    next_token(L, p, &t);
    if (t.type != T_COLON) parse_error(L, "colon", &t);
    next_token(L, p, &t);
    parse_value(L, p, &t);
    lua_rawset(L, -3);
    next_token(L, p, &t);
    if (t.type == T_OBJ_END) {
      p->depth--;
      return;
    }
    if (t.type != T_COMMA) parse_error(L, "comma or object end", &t);
    next_token(L, p, &t);
  }
}

static void parse_array(lua_State *L, parser *p) {
  token t;
  descend(L, p, 2);
  lua_newtable(L);
  next_token(L, p, &t);
  if (t.type == T_ARR_END) {
    p->depth--;
    return;
  }
  for (int i = 1;; i++) {
    parse_value(L, p, &t);
    lua_rawseti(L, -2, i);
    next_token(L, p, &t);
    if (t.type == T_ARR_END) {
      p->depth--;
      return;
    }
    if (t.type != T_COMMA) parse_error(L, "comma or array end", &t);
    next_token(L, p, &t);
  }
}

static void parse_value(lua_State *L, parser *p, token *t) {
  switch (t->type) {
  case T_STRING: lua_pushlstring(L, t->value.string, t->string_len); break;
  case T_NUMBER: lua_pushnumber(L, t->value.number); break;
  case T_BOOLEAN: lua_pushboolean(L, t->value.boolean); break;
  case T_OBJ_BEGIN: parse_object(L, p); break;
  case T_ARR_BEGIN: parse_array(L, p); break;
  case T_NULL: lua_pushlightuserdata(L, NULL); break;
  default: parse_error(L, "value", t);
  }
}

static int cjson_decode(lua_State *L) {
  config *c = cfg_of(L);
  size_t len;
  luaL_argcheck(L, lua_gettop(L) == 1, 1, "expected 1 argument");
  const char *s = luaL_checklstring(L, 1, &len);
  if (len >= 2 && (!s[0] || !s[1])) luaL_error(L, "JSON parser does not support UTF-16 or UTF-32");
  parser p = {s, s, c, 0};
  token t;
  next_token(L, &p, &t);
  parse_value(L, &p, &t);
  next_token(L, &p, &t);
  if (t.type != T_END) parse_error(L, "the end", &t);
  if (c->tmp.cap > (1 << 20)) {
    free(c->tmp.buf);
    c->tmp.buf = NULL;
    c->tmp.cap = 0;
  }
  return 1;
}

static int cjson_new(lua_State *L);

/* Pushes a new cjson module table with its own config. */
static void push_module(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"encode", cjson_encode},
      {"decode", cjson_decode},
      {"encode_sparse_array", opt_sparse},
      {"encode_max_depth", opt_encode_depth},
      {"decode_max_depth", opt_decode_depth},
      {"encode_number_precision", opt_precision},
      {"encode_keep_buffer", opt_keep_buffer},
      {"encode_invalid_numbers", opt_encode_invalid},
      {"decode_invalid_numbers", opt_decode_invalid},
      {"new", cjson_new},
      {NULL, NULL},
  };
  config *c = memoria_new_library(L, fns, sizeof *c, cfg_gc);
  c->sparse_convert = DEFAULT_SPARSE_CONVERT;
  c->sparse_ratio = DEFAULT_SPARSE_RATIO;
  c->sparse_safe = DEFAULT_SPARSE_SAFE;
  c->encode_max_depth = DEFAULT_MAX_DEPTH;
  c->decode_max_depth = DEFAULT_MAX_DEPTH;
  c->precision = DEFAULT_PRECISION;
  c->decode_invalid_numbers = 1;
  c->keep_buffer = 1;
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  lua_pushliteral(L, "cjson");
  lua_setfield(L, -2, "_NAME");
  lua_pushliteral(L, "2.1.0");
  lua_setfield(L, -2, "_VERSION");
}

static int cjson_new(lua_State *L) {
  push_module(L);
  return 1;
}

void memoria_open_cjson(lua_State *L) {
  push_module(L);
  lua_setglobal(L, "cjson");
}
