#ifndef MEMORIA_LOCALE_H
#define MEMORIA_LOCALE_H
struct lconv { char *decimal_point; };
struct lconv *localeconv(void);
#define LC_ALL 6
char *setlocale(int category, const char *locale);
#endif
