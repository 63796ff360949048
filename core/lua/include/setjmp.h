#ifndef MEMORIA_SETJMP_H
#define MEMORIA_SETJMP_H
/* LLVM lowers setjmp/longjmp to wasm exceptions (-mllvm -wasm-enable-sjlj); the runtime
 * functions it calls are in wasm/libc.c. */
typedef unsigned long jmp_buf[8];
int setjmp(jmp_buf env) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf env, int val);
#endif
