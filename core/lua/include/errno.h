#ifndef MEMORIA_ERRNO_H
#define MEMORIA_ERRNO_H
extern int errno;
#define ERANGE 34
#define EINVAL 22
#endif
