/* size/stubs.c - what a firmware brings besides rlock, as bodies that only
 * make the size programs link (never run): the board hooks, a transport,
 * and the few libc functions rlock calls. Not counted. */
#include <stddef.h>
#include <stdint.h>
#include "stubs.h"
volatile unsigned char stub_sink;
uint64_t board_now_ms(void) { return stub_sink; }
void board_sleep_ms(uint32_t ms) { stub_sink = (unsigned char)ms; }
int board_random(unsigned char *buf, size_t n) { size_t i; for (i = 0; i < n; i++) buf[i] = stub_sink; return 0; }
long stub_send(void *ctx, const unsigned char *buf, size_t len) { (void)ctx; stub_sink = buf[0]; return (long)len; }
long stub_recv(void *ctx, unsigned char *buf, size_t len) { (void)ctx; buf[0] = stub_sink; return len > 0; }
int stub_connect(void *ctx) { (void)ctx; return 1; }
void stub_close(void *ctx) { (void)ctx; }
rlock_transport stub_transport(void) {
    rlock_transport t = { 0, stub_send, stub_recv, stub_connect, stub_close, 0, 0, 0, 0, 0, 0, 0 };
    return t;
}
int stub_cluster_connect(void *user, size_t i, const char *host, int port, rlock_transport *out) {
    (void)user; (void)i; (void)host; (void)port;
    *out = stub_transport();
    return 0;
}
void *memcpy(void *d, const void *s, size_t n) { unsigned char *a = (unsigned char *)d; const unsigned char *b = (const unsigned char *)s; while (n--) *a++ = *b++; return d; }
void *memmove(void *d, const void *s, size_t n) {
    unsigned char *a = (unsigned char *)d; const unsigned char *b = (const unsigned char *)s;
    if (a < b) while (n--) *a++ = *b++; else while (n--) a[n] = b[n];
    return d;
}
void *memset(void *d, int c, size_t n) { unsigned char *a = (unsigned char *)d; while (n--) *a++ = (unsigned char)c; return d; }
void *memchr(const void *s, int c, size_t n) { const unsigned char *a = (const unsigned char *)s; for (; n; n--, a++) if (*a == (unsigned char)c) return (void *)a; return 0; }
int memcmp(const void *x, const void *y, size_t n) { const unsigned char *a = (const unsigned char *)x, *b = (const unsigned char *)y; for (; n; n--, a++, b++) if (*a != *b) return *a - *b; return 0; }
size_t strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
/* the entry point the bare link asks for: the program's main */
int main(void);
void _start(void) { stub_sink = (unsigned char)main(); for (;;) { } }
