/* The part of a C library Lua 5.1 needs, for the engine component (wasm32, no imports).
 * Memory, math, strtod and the digits of floating-point conversions come from Rust
 * (core/src/lua/libc.rs): one allocator for the whole engine, libm, and Rust's correctly
 * rounded float parsing and printing. The C locale only; no files. */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int errno;

/* ---- setjmp/longjmp as wasm exceptions: the contract of LLVM's -wasm-enable-sjlj ---- */
__asm__(".globl __c_longjmp\n.tagtype __c_longjmp i32\n__c_longjmp:\n");

struct jmp_buf_impl {
  void *func_invocation_id;
  uint32_t label;
  struct { void *env; int val; } arg;
};

void __wasm_setjmp(void *env, uint32_t label, void *func_invocation_id) {
  struct jmp_buf_impl *jb = env;
  jb->func_invocation_id = func_invocation_id;
  jb->label = label;
}

uint32_t __wasm_setjmp_test(void *env, void *func_invocation_id) {
  struct jmp_buf_impl *jb = env;
  return jb->func_invocation_id == func_invocation_id ? jb->label : 0;
}

void __wasm_longjmp(void *env, int val) {
  struct jmp_buf_impl *jb = env;
  jb->arg.env = env;
  jb->arg.val = val == 0 ? 1 : val;
  __builtin_wasm_throw(1, &jb->arg);
}

int abs(int x) { return x < 0 ? -x : x; }
long labs(long x) { return x < 0 ? -x : x; }
_Noreturn void abort(void) { __builtin_trap(); }
_Noreturn void exit(int code) { (void)code; __builtin_trap(); }
char *getenv(const char *name) { (void)name; return NULL; }

/* ---- memory and strings ---- */
void *memcpy(void *d, const void *s, size_t n) { return __builtin_memcpy(d, s, n); }
void *memmove(void *d, const void *s, size_t n) { return __builtin_memmove(d, s, n); }
void *memset(void *d, int c, size_t n) { return __builtin_memset(d, c, n); }
int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++) if (x[i] != y[i]) return x[i] - y[i];
  return 0;
}
void *memchr(const void *s, int c, size_t n) {
  const unsigned char *p = s;
  for (size_t i = 0; i < n; i++) if (p[i] == (unsigned char)c) return (void *)(p + i);
  return NULL;
}
size_t strlen(const char *s) { const char *p = s; while (*p) p++; return (size_t)(p - s); }
int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return (unsigned char)*a - (unsigned char)*b;
}
int strncmp(const char *a, const char *b, size_t n) {
  for (; n; n--, a++, b++) {
    if (*a != *b || !*a) return (unsigned char)*a - (unsigned char)*b;
  }
  return 0;
}
int strcoll(const char *a, const char *b) { return strcmp(a, b); }
char *strcpy(char *d, const char *s) { char *r = d; while ((*d++ = *s++)) {} return r; }
char *strncpy(char *d, const char *s, size_t n) {
  size_t i = 0;
  for (; i < n && s[i]; i++) d[i] = s[i];
  for (; i < n; i++) d[i] = 0;
  return d;
}
char *strcat(char *d, const char *s) { strcpy(d + strlen(d), s); return d; }
char *strncat(char *d, const char *s, size_t n) {
  char *e = d + strlen(d);
  while (n-- && *s) *e++ = *s++;
  *e = 0;
  return d;
}
char *strchr(const char *s, int c) {
  for (;; s++) {
    if (*s == (char)c) return (char *)s;
    if (!*s) return NULL;
  }
}
char *strrchr(const char *s, int c) {
  const char *r = NULL;
  for (;; s++) {
    if (*s == (char)c) r = s;
    if (!*s) return (char *)r;
  }
}
char *strstr(const char *h, const char *n) {
  size_t k = strlen(n);
  for (; *h; h++) if (!strncmp(h, n, k)) return (char *)h;
  return k ? NULL : (char *)h;
}
size_t strspn(const char *s, const char *a) { size_t i = 0; while (s[i] && strchr(a, s[i])) i++; return i; }
size_t strcspn(const char *s, const char *r) { size_t i = 0; while (s[i] && !strchr(r, s[i])) i++; return i; }
char *strpbrk(const char *s, const char *a) { s += strcspn(s, a); return *s ? (char *)s : NULL; }
char *strerror(int e) { (void)e; return "error"; }

/* ---- ctype, C locale ---- */
int isdigit(int c) { return c >= '0' && c <= '9'; }
int islower(int c) { return c >= 'a' && c <= 'z'; }
int isupper(int c) { return c >= 'A' && c <= 'Z'; }
int isalpha(int c) { return islower(c) || isupper(c); }
int isalnum(int c) { return isalpha(c) || isdigit(c); }
int isxdigit(int c) { return isdigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int isspace(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
int iscntrl(int c) { return (c >= 0 && c < 32) || c == 127; }
int isprint(int c) { return c >= 32 && c < 127; }
int isgraph(int c) { return c > 32 && c < 127; }
int ispunct(int c) { return isgraph(c) && !isalnum(c); }
int tolower(int c) { return isupper(c) ? c + 32 : c; }
int toupper(int c) { return islower(c) ? c - 32 : c; }

static char decimal_point[] = ".";
static struct lconv c_lconv = { decimal_point };
struct lconv *localeconv(void) { return &c_lconv; }
char *setlocale(int category, const char *locale) { (void)category; (void)locale; return "C"; }

/* ---- numbers from text ---- */
static int digit_value(int c) {
  if (isdigit(c)) return c - '0';
  if (islower(c)) return c - 'a' + 10;
  if (isupper(c)) return c - 'A' + 10;
  return 99;
}

unsigned long strtoul(const char *s, char **end, int base) {
  const char *p = s;
  int neg = 0, any = 0;
  unsigned long v = 0;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
    p += 2;
    base = 16;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  for (;; p++) {
    int d = digit_value((unsigned char)*p);
    if (d >= base) break;
    any = 1;
    unsigned long next = v * (unsigned long)base + (unsigned long)d;
    if (next / (unsigned long)base != v && v != 0) { errno = ERANGE; v = ~0UL; } else v = next;
  }
  if (end) *end = (char *)(any ? p : s);
  return neg ? -v : v;
}

long strtol(const char *s, char **end, int base) { return (long)strtoul(s, end, base); }

/* ---- stdio: no files ---- */
struct memoria_file { int unused; };
static struct memoria_file std_streams[3];
FILE *stdin = &std_streams[0], *stdout = &std_streams[1], *stderr = &std_streams[2];
FILE *fopen(const char *path, const char *mode) { (void)path; (void)mode; errno = EINVAL; return NULL; }
FILE *freopen(const char *path, const char *mode, FILE *f) { (void)path; (void)mode; (void)f; return NULL; }
int fclose(FILE *f) { (void)f; return 0; }
int fflush(FILE *f) { (void)f; return 0; }
int getc(FILE *f) { (void)f; return EOF; }
int ungetc(int c, FILE *f) { (void)c; (void)f; return EOF; }
int feof(FILE *f) { (void)f; return 1; }
int ferror(FILE *f) { (void)f; return 0; }
void clearerr(FILE *f) { (void)f; }
size_t fread(void *p, size_t size, size_t n, FILE *f) { (void)p; (void)size; (void)n; (void)f; return 0; }
size_t fwrite(const void *p, size_t size, size_t n, FILE *f) { (void)p; (void)size; (void)f; return n; }
char *fgets(char *s, int n, FILE *f) { (void)s; (void)n; (void)f; return NULL; }
int fputs(const char *s, FILE *f) { (void)s; (void)f; return 0; }

/* ---- formatting ---- */
/* Rust: the digits of a double in %e/%f/%g style (no sign, no padding): writes at most
 * `cap` bytes and returns the length. `upper`: E/G conversions; `alt`: the # flag. */
size_t memoria_fmt_double(char *out, size_t cap, double v, char conv, int prec, int alt);

struct sink { char *buf; size_t cap, len; };

static void put(struct sink *s, char c) {
  if (s->len + 1 < s->cap) s->buf[s->len] = c;
  s->len++;
}
static void put_n(struct sink *s, const char *p, size_t n) { while (n--) put(s, *p++); }
static void pad(struct sink *s, char c, int n) { while (n-- > 0) put(s, c); }

/* One converted field: sign/prefix, then zero padding, then the body, within `width`. */
static void field(struct sink *s, const char *prefix, const char *body, size_t blen, int width, int left, int zero) {
  size_t plen = strlen(prefix);
  int fill = width - (int)(plen + blen);
  if (!left && !zero) pad(s, ' ', fill);
  put_n(s, prefix, plen);
  if (!left && zero) pad(s, '0', fill);
  put_n(s, body, blen);
  if (left) pad(s, ' ', fill);
}

int vsnprintf(char *out, size_t n, const char *f, va_list ap) {
  struct sink s = { out, n, 0 };
  for (; *f; f++) {
    if (*f != '%') { put(&s, *f); continue; }
    f++;
    int left = 0, plus = 0, space = 0, alt = 0, zero = 0, width = 0, prec = -1, lng = 0;
    for (;; f++) {
      if (*f == '-') left = 1;
      else if (*f == '+') plus = 1;
      else if (*f == ' ') space = 1;
      else if (*f == '#') alt = 1;
      else if (*f == '0') zero = 1;
      else break;
    }
    if (*f == '*') { width = va_arg(ap, int); if (width < 0) { left = 1; width = -width; } f++; }
    else while (isdigit((unsigned char)*f)) width = width * 10 + (*f++ - '0');
    if (*f == '.') {
      f++;
      prec = 0;
      if (*f == '*') { prec = va_arg(ap, int); f++; }
      else while (isdigit((unsigned char)*f)) prec = prec * 10 + (*f++ - '0');
    }
    while (*f == 'l' || *f == 'h' || *f == 'z' || *f == 'j' || *f == 't') { if (*f == 'l' || *f == 'z' || *f == 'j' || *f == 't') lng++; f++; }
    char body[512];
    size_t blen = 0;
    char prefix[4] = { 0 };
    switch (*f) {
    case 'd': case 'i': {
      long long v = lng >= 2 ? va_arg(ap, long long) : lng == 1 ? (long long)va_arg(ap, long) : va_arg(ap, int);
      unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
      if (v < 0) prefix[0] = '-'; else if (plus) prefix[0] = '+'; else if (space) prefix[0] = ' ';
      char tmp[24]; int k = 0;
      do { tmp[k++] = (char)('0' + u % 10); u /= 10; } while (u);
      if (prec == 0 && v == 0) k = 0;
      for (int z = k; z < prec && blen < sizeof body; z++) body[blen++] = '0';
      while (k) body[blen++] = tmp[--k];
      field(&s, prefix, body, blen, width, left, zero && prec < 0);
      break;
    }
    case 'u': case 'o': case 'x': case 'X': case 'p': {
      unsigned long long u;
      unsigned base = *f == 'o' ? 8 : *f == 'u' ? 10 : 16;
      if (*f == 'p') { u = (uintptr_t)va_arg(ap, void *); prefix[0] = '0'; prefix[1] = 'x'; }
      else u = lng >= 2 ? va_arg(ap, unsigned long long) : lng == 1 ? (unsigned long long)va_arg(ap, unsigned long) : va_arg(ap, unsigned);
      const char *digits = *f == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      if (alt && u && base == 16) { prefix[0] = '0'; prefix[1] = *f; }
      char tmp[24]; int k = 0;
      do { tmp[k++] = digits[u % base]; u /= base; } while (u);
      if (prec == 0 && tmp[0] == '0' && k == 1) k = 0;
      if (alt && base == 8 && (k == 0 || tmp[k - 1] != '0')) tmp[k++] = '0';
      for (int z = k; z < prec && blen < sizeof body; z++) body[blen++] = '0';
      while (k) body[blen++] = tmp[--k];
      field(&s, prefix, body, blen, width, left, zero && prec < 0);
      break;
    }
    case 'c':
      body[0] = (char)va_arg(ap, int);
      field(&s, "", body, 1, width, left, 0);
      break;
    case 's': {
      const char *str = va_arg(ap, const char *);
      if (!str) str = "(null)";
      size_t len = 0;
      while (str[len] && (prec < 0 || len < (size_t)prec)) len++;
      field(&s, "", str, len, width, left, 0);
      break;
    }
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
      double v = va_arg(ap, double);
      int neg = __builtin_signbit(v) && v == v;
      if (neg) prefix[0] = '-'; else if (plus) prefix[0] = '+'; else if (space) prefix[0] = ' ';
      if (v != v) prefix[0] = '-'; /* glibc on x86 prints 0/0 as -nan, as Redis shows it */
      blen = memoria_fmt_double(body, sizeof body, neg ? -v : v, *f, prec < 0 ? 6 : prec, alt);
      int finite = v == v && v - v == 0;
      field(&s, prefix, body, blen, width, left, zero && finite);
      break;
    }
    case '%':
      put(&s, '%');
      break;
    default:
      put(&s, '%');
      if (*f) put(&s, *f); else f--;
    }
  }
  if (n) out[s.len < n ? s.len : n - 1] = 0;
  return (int)s.len;
}

int snprintf(char *s, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vsnprintf(s, n, fmt, ap);
  va_end(ap);
  return r;
}

/* Lua sizes its sprintf buffers for what it formats (LUAI_MAXNUMBER2STR, MAX_FORMAT). */
int sprintf(char *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vsnprintf(s, (size_t)1 << 20, fmt, ap);
  va_end(ap);
  return r;
}

int fprintf(FILE *f, const char *fmt, ...) { (void)f; (void)fmt; return 0; }

/* Lua's own math.random is replaced by Redis's (redis_lib.c); these only link. */
static unsigned long rand_state = 1;
int rand(void) {
  rand_state = rand_state * 1103515245UL + 12345UL;
  return (int)((rand_state >> 1) & RAND_MAX);
}
void srand(unsigned seed) { rand_state = seed; }
