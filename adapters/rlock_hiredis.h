/* rlock_hiredis.h - run rlock over a program's existing hiredis connection.
 *
 * WHAT
 *   An rlock_transport around a blocking hiredis redisContext (hiredis 0.14
 *   and 1.x; plain TCP or unix socket). rlock speaks RESP itself, so this
 *   adapter only moves raw bytes on c->fd (with the rlock_posix.h fd helpers:
 *   non-blocking, no SIGPIPE) and never touches hiredis' buffers. Header-only,
 *   every function static. Link with -lhiredis.
 *
 * USAGE
 *   #include "adapters/rlock_hiredis.h"   <- FIRST, before any system header
 *   redisContext *rc = redisConnectWithTimeout("127.0.0.1", 6379, tv);
 *   rlock_hiredis_conn hc;  rlock_node node;
 *   rlock_hiredis_init(&hc, rc);                           // 0 ok, -1 NULL
 *   rlock_node_init(&node, rlock_hiredis_transport(&hc));  // hc must outlive node
 *   ... locks on node, hiredis commands on rc - one at a time, same thread ...
 *   rlock_client_close(&cl);   // NOTE: closes rc's socket too (rc->err set):
 *                              // redisReconnect(rc) before using rc again
 *   redisFree(rc);                                         // the program owns rc
 *
 * SHARING RULES (why the checks below exist)
 *   Redis answers in order on one connection, so rlock and hiredis must never
 *   both have a request in flight. Before rlock queues anything (connect()
 *   for the first request, idle() before each later one) the adapter refuses
 *   with RLOCK_IO_BUSY - rlock then sends nothing, closes nothing, and the
 *   operation fails with RLOCK_E_IO and rlock_node_error saying why - when
 *     - hiredis has unsent output (redisAppendCommand without redisGetReply),
 *     - hiredis holds unread reply bytes or is in the middle of a reply,
 *     - the socket holds bytes nobody read yet (the program's replies),
 *     - the context is in an error state (a late reply may be on the socket).
 *   The program's queued commands are never dropped: after redisGetReply
 *   has read them, the next rlock operation goes through. send/recv check
 *   the hiredis buffers again and fail (RLOCK_IO_ERROR) if the program used
 *   the context while an rlock operation was in flight - a program bug.
 *   The database: with node.db > 0 rlock SELECTs it before each operation
 *   on the shared context (its reply waited for: one round trip more), so a
 *   program that SELECTs another db in between cannot send rlock's requests
 *   there - and the context is left in node.db afterwards: the program
 *   SELECTs its own again. With node.db 0 rlock sends no SELECT at all: a
 *   program that SELECTs another db must SELECT 0 again before rlock's next
 *   call (or set node.db), or rlock's locks live in its db. Nor may the
 *   program leave a MULTI open, CLIENT REPLY OFF / SKIP, or AUTH as another
 *   user across an rlock call.
 *   The protocol: rlock never sends HELLO 3 on the shared context (its
 *   replies stay RESP2, which hiredis 0.14 reads): with cfg.pubsub a
 *   waiter on it listens through rlock_subscriber connections, or backs off.
 *   Contexts in SUBSCRIBE or MONITOR mode, or with RESP3 push messages
 *   (CLIENT TRACKING), receive data at any time: do not share them. Async
 *   contexts are not supported. SSL contexts are not supported either (rlock
 *   would write plaintext into the TLS stream): hiredis 1.x SSL contexts are
 *   refused; 0.14 has no SSL.
 *
 * CLOSE / CONNECT
 *   close() closes c->fd, sets it to -1 and puts an error on the context
 *   (err = REDIS_ERR_OTHER), so neither rlock nor hiredis can ever read a
 *   late reply from that socket; redisFree/redisReconnect skip a -1 fd, so
 *   there is no double close. rlock calls close() after errors and timeouts
 *   and from rlock_client_close(): after that the program's own commands on
 *   the context fail until redisReconnect() (or rlock's next connect()).
 *   connect() returns RLOCK_IO_BUSY while the program has commands queued
 *   or replies unread (it never reconnects over them), 1 for a healthy idle
 *   context, and otherwise calls redisReconnect(), which BLOCKS for up to the
 *   context's own connect timeout (set one: redisConnectWithTimeout) - the
 *   one place where this transport blocks outside wait(). Reconnecting
 *   discards the connection's SELECT / AUTH state (hiredis' buffers are empty
 *   by then): rlock AUTHs itself when the node has credentials; the program
 *   must redo its own.
 */
#ifndef RLOCK_HIREDIS_H
#define RLOCK_HIREDIS_H

#include "rlock_posix.h" /* first: sets the POSIX feature macros */

#include <hiredis/hiredis.h>

#ifndef MSG_DONTWAIT /* (an enum in glibc: test the macro, not its value) */
#error "rlock_hiredis.h needs MSG_DONTWAIT: hiredis' socket is blocking"
#endif

/* obuf is an sds string: binary data, so its length is in the sds header,
 * not a NUL (a partial write can leave a NUL byte first). hiredis exports the
 * inline length helper: sdslen() up to 1.0.0, hi_sdslen() since the rename
 * (whose header guard is HIREDIS_SDS_H). */
#if defined(HIREDIS_SDS_H)
#define RLOCK__HIREDIS_SDSLEN(s) hi_sdslen(s)
#else
#define RLOCK__HIREDIS_SDSLEN(s) sdslen(s)
#endif

#ifdef REDIS_INVALID_FD
#define RLOCK__HIREDIS_NOFD REDIS_INVALID_FD
#else
#define RLOCK__HIREDIS_NOFD (-1)
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlock_hiredis_conn {
    rlock_transport tr;   /* filled by init; hand it to rlock_node_init */
    redisContext *ctx;    /* the program's context (not owned) */
    char err[128];        /* last error text ("" when none) */
} rlock_hiredis_conn;

static int rlock__hiredis_fd_ok(const redisContext *c) {
    return c->fd != RLOCK__HIREDIS_NOFD && (int)c->fd >= 0;
}

/* 0 when rlock may use the socket now; else -1 with h->err explaining. */
static int rlock__hiredis_check(rlock_hiredis_conn *h) {
    redisContext *c = h->ctx;
    if (!c) {
        snprintf(h->err, sizeof h->err, "no hiredis context");
        return -1;
    }
    if (c->err) {
        snprintf(h->err, sizeof h->err, "hiredis context has an error: %.90s", c->errstr);
        return -1;
    }
    if (!rlock__hiredis_fd_ok(c)) {
        snprintf(h->err, sizeof h->err, "hiredis context is not connected");
        return -1;
    }
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
    if (c->privctx) { /* only SSL uses privctx */
        snprintf(h->err, sizeof h->err, "hiredis SSL contexts are not supported");
        return -1;
    }
#endif
    if (c->obuf && RLOCK__HIREDIS_SDSLEN(c->obuf) > 0) {
        snprintf(h->err, sizeof h->err,
                 "hiredis has unsent commands (redisAppendCommand without redisGetReply)");
        return -1;
    }
    if (c->reader && (c->reader->pos < c->reader->len || c->reader->ridx >= 0)) {
        snprintf(h->err, sizeof h->err, "hiredis holds unread reply bytes (call redisGetReply)");
        return -1;
    }
    return 0;
}

/* Bytes waiting on the socket that nobody read (MSG_PEEK: not consumed).
 * 1 some, 0 none, -1 EOF or error (the server closed it). */
static int rlock__hiredis_pending(int fd) {
    unsigned char b;
    ssize_t n;
    do n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0) return 1;
    if (n == 0) return -1;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
}

/* Before rlock queues a request on its idle connection: refuse while the
 * program has anything in flight, touching nothing. */
static int rlock__hiredis_idle(void *ctx) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    int p;
    if (!h) return RLOCK_IO_ERROR;
    if (rlock__hiredis_check(h) != 0) return h->ctx && !h->ctx->err && rlock__hiredis_fd_ok(h->ctx) ? RLOCK_IO_BUSY
                                                                                                    : RLOCK_IO_ERROR;
    p = rlock__hiredis_pending((int)h->ctx->fd);
    if (p > 0) {
        snprintf(h->err, sizeof h->err, "hiredis has replies unread on the socket (call redisGetReply)");
        return RLOCK_IO_BUSY;
    }
    if (p < 0) {
        snprintf(h->err, sizeof h->err, "connection closed by the server");
        return RLOCK_IO_CLOSED;
    }
    return 1;
}

static long rlock__hiredis_send(void *ctx, const unsigned char *buf, size_t len) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    long n;
    if (!h) return RLOCK_IO_ERROR;
    if (rlock__hiredis_check(h) != 0) return RLOCK_IO_ERROR;
    n = rlock_posix_fd_send((int)h->ctx->fd, buf, len);
    if (n == RLOCK_IO_ERROR) snprintf(h->err, sizeof h->err, "send: %s", strerror(errno));
    return n;
}

static long rlock__hiredis_recv(void *ctx, unsigned char *buf, size_t len) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    long n;
    if (!h) return RLOCK_IO_ERROR;
    if (rlock__hiredis_check(h) != 0) return RLOCK_IO_ERROR;
    n = rlock_posix_fd_recv((int)h->ctx->fd, buf, len);
    if (n == RLOCK_IO_ERROR) snprintf(h->err, sizeof h->err, "recv: %s", strerror(errno));
    else if (n == RLOCK_IO_CLOSED)
        snprintf(h->err, sizeof h->err, "connection closed by the server");
    return n;
}

static int rlock__hiredis_connect(void *ctx) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    redisContext *c;
    if (!h || !h->ctx) return RLOCK_IO_ERROR;
    c = h->ctx;
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
    /* redisReconnect() would silently drop TLS: refuse instead */
    if (c->privctx) {
        snprintf(h->err, sizeof h->err, "hiredis SSL contexts are not supported");
        return RLOCK_IO_ERROR;
    }
#endif
    /* The program's own commands first: never reconnect over them (that
     * would discard hiredis' output buffer) nor start rlock's behind them.
     * (A context in an error state cannot send them any more: hiredis' own
     * redisReconnect would discard them too, so rlock may reconnect.) */
    if (c->err == 0 && ((c->obuf && RLOCK__HIREDIS_SDSLEN(c->obuf) > 0) ||
                        (c->reader && (c->reader->pos < c->reader->len || c->reader->ridx >= 0)))) {
        (void)rlock__hiredis_check(h);
        return RLOCK_IO_BUSY;
    }
    if (c->err == 0 && rlock__hiredis_fd_ok(c)) {
        int r = rlock__hiredis_idle(h);
        if (r != 1 && r != RLOCK_IO_CLOSED) return r;
        if (r == 1) {
            rlock__posix_nosigpipe((int)c->fd);
            return 1;
        }
    }
    if (redisReconnect(c) != REDIS_OK || c->err || !rlock__hiredis_fd_ok(c)) {
        snprintf(h->err, sizeof h->err, "redisReconnect: %.100s",
                 c->errstr[0] ? c->errstr : "failed");
        return RLOCK_IO_ERROR;
    }
    rlock__posix_nosigpipe((int)c->fd);
    h->err[0] = '\0';
    return 1;
}

static void rlock__hiredis_close(void *ctx) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    redisContext *c;
    if (!h || !h->ctx) return;
    c = h->ctx;
    if (rlock__hiredis_fd_ok(c)) close((int)c->fd);
    c->fd = RLOCK__HIREDIS_NOFD;
    c->flags &= ~REDIS_CONNECTED;
    if (c->err == 0) { /* keep an earlier, more telling error */
        c->err = REDIS_ERR_OTHER;
        snprintf(c->errstr, sizeof c->errstr, "connection dropped by rlock (call redisReconnect)");
    }
}

static int rlock__hiredis_fd(void *ctx) {
    const rlock_hiredis_conn *h = (const rlock_hiredis_conn *)ctx;
    return h && h->ctx && rlock__hiredis_fd_ok(h->ctx) ? (int)h->ctx->fd : -1;
}

static const char *rlock__hiredis_error(void *ctx) {
    const rlock_hiredis_conn *h = (const rlock_hiredis_conn *)ctx;
    return h ? h->err : "";
}

static int rlock__hiredis_wait(void *ctx, int want, uint32_t timeout_ms) {
    rlock_hiredis_conn *h = (rlock_hiredis_conn *)ctx;
    if (!h || !h->ctx || !rlock__hiredis_fd_ok(h->ctx)) return -1;
    return rlock_posix_fd_wait((int)h->ctx->fd, want, timeout_ms);
}

/* Wrap c (not owned: the program still redisFree()s it, after the node is
 * done). Does not connect. 0 ok, -1 when h or c is NULL. */
RLOCK__ADAPTER_FN int rlock_hiredis_init(rlock_hiredis_conn *h, redisContext *c) {
    if (!h || !c) return -1;
    memset(h, 0, sizeof *h);
    h->ctx = c;
    h->tr.ctx = h;
    h->tr.send = rlock__hiredis_send;
    h->tr.recv = rlock__hiredis_recv;
    h->tr.connect = rlock__hiredis_connect;
    h->tr.close = rlock__hiredis_close;
    h->tr.wait = rlock__hiredis_wait;
    h->tr.fd = rlock__hiredis_fd;
    h->tr.error = rlock__hiredis_error;
    h->tr.wait_many = rlock_posix_wait_many; /* the same poll() over plain descriptors */
    h->tr.idle = rlock__hiredis_idle;
    return 0;
}

/* The transport to hand to rlock_node_init (copied there; its ctx points at
 * h, so h must stay where it is while the node is in use). */
RLOCK__ADAPTER_FN const rlock_transport *rlock_hiredis_transport(rlock_hiredis_conn *h) {
    return h ? &h->tr : NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* RLOCK_HIREDIS_H */
