#ifndef MEMORIA_STDLIB_H
#define MEMORIA_STDLIB_H
#include <stddef.h>
/* malloc/realloc/free and strtod are implemented in Rust (core/src/lua/libc.rs). */
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
double strtod(const char *s, char **end);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
#define RAND_MAX 0x7fffffff
int rand(void);
void srand(unsigned seed);
int abs(int x);
long labs(long x);
_Noreturn void abort(void);
_Noreturn void exit(int code);
char *getenv(const char *name);
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif
