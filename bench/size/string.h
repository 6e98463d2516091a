/* string.h for the freestanding RISC-V size build (no libc installed): the
 * declarations rlock.h's core uses; a firmware links its own. */
#ifndef RLOCK_SIZE_STRING_H
#define RLOCK_SIZE_STRING_H
#include <stddef.h>
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memchr(const void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
#endif
