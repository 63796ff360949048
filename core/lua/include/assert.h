/* Freestanding libc for the engine component (wasm32): only what Lua 5.1 uses. */
#ifndef MEMORIA_ASSERT_H
#define MEMORIA_ASSERT_H
#define assert(x) ((void)0)
#endif
