/* size/stubs.h - the stand-ins of bench/size/stubs.c, for the size programs. */
#ifndef RLOCK_SIZE_STUBS_H
#define RLOCK_SIZE_STUBS_H
#include "rlock.h"
long stub_send(void *ctx, const unsigned char *buf, size_t len);
long stub_recv(void *ctx, unsigned char *buf, size_t len);
int stub_connect(void *ctx);
void stub_close(void *ctx);
int stub_cluster_connect(void *user, size_t i, const char *host, int port, rlock_transport *out);
rlock_transport stub_transport(void);
extern volatile unsigned char stub_sink;
#endif
