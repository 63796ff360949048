#ifndef MEMORIA_MATH_H
#define MEMORIA_MATH_H
/* Implemented in Rust with the libm crate (core/src/lua/libc.rs). */
#define HUGE_VAL (__builtin_huge_val())
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
double floor(double); double ceil(double); double fabs(double); double fmod(double, double);
double pow(double, double); double sqrt(double); double sin(double); double cos(double);
double tan(double); double asin(double); double acos(double); double atan(double);
double atan2(double, double); double exp(double); double log(double); double log10(double);
double sinh(double); double cosh(double); double tanh(double); double frexp(double, int *);
double ldexp(double, int); double modf(double, double *);
#endif
