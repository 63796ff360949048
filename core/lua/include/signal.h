#ifndef MEMORIA_SIGNAL_H
#define MEMORIA_SIGNAL_H
typedef int sig_atomic_t;
#endif
