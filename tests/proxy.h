/* proxy.h - a small fault-injecting TCP proxy for tests, run in-process on
 * its own pthread. Header-only, every function static, prefix rp_.
 * Listens on 127.0.0.1:<free port> and connects only to 127.0.0.1:<upstream>.
 *
 * INCLUDE ORDER: needs POSIX.1-2008; define _POSIX_C_SOURCE 200809L before
 * the first system header (or include this / harness.h / rlock.h first).
 * Link with -lpthread.
 *
 * MODES (rp_set_mode changes them while running; a change applies to new
 * AND existing connections from the proxy's next loop turn):
 *   RP_FORWARD  relay both directions (anything still queued goes at once)
 *   RP_DELAY    hold each chunk read, in both directions, for delay_ms
 *               before forwarding it (so a round trip costs >= 2*delay_ms)
 *   RP_DROP     black hole: keep reading from both sides and discard it,
 *               never forward or answer. New clients are accepted but get no
 *               upstream connection; when the mode later leaves DROP such
 *               connections are closed (their byte stream is broken anyway)
 *   RP_RESET    every new client connection is closed at once with
 *               SO_LINGER 0 (RST); existing connections are reset likewise
 *   RP_CUT_AFTER_REQUEST
 *               forward the client's bytes to the server, then as soon as the
 *               server starts answering (or RP_CUT_WAIT_MS after the bytes
 *               went out, if it never does) close the client connection
 *               without relaying anything: the server applied the command,
 *               the client never learns
 *
 * At most RP_MAX_CONNS concurrent client connections; extra ones are reset.
 * rp_stop() wakes the thread, joins it and closes every fd it opened.
 *
 * API (all static inline)
 *   int  rp_start(rp_proxy *p, int upstream_port);  0 ok (p->port = listen
 *            port on 127.0.0.1), -1 failed. Starts in RP_FORWARD.
 *   void rp_set_mode(rp_proxy *p, rp_mode m, unsigned delay_ms);
 *            thread-safe; delay_ms is used by RP_DELAY only
 *   rp_stats rp_get_stats(rp_proxy *p);  thread-safe snapshot of counters
 *   void rp_stop(rp_proxy *p);           join thread, close all fds; idempotent
 */
#ifndef RLOCK_TEST_PROXY_H
#define RLOCK_TEST_PROXY_H

#if !defined(_POSIX_C_SOURCE)
#  if defined(_FEATURES_H) || defined(_STDIO_H) || defined(_STDLIB_H)
#    error "proxy.h: define _POSIX_C_SOURCE 200809L before the first system header (or include proxy.h first)"
#  endif
#  define _POSIX_C_SOURCE 200809L
#elif _POSIX_C_SOURCE < 200809L
#  error "proxy.h needs _POSIX_C_SOURCE >= 200809L"
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef enum { RP_FORWARD, RP_DELAY, RP_DROP, RP_RESET, RP_CUT_AFTER_REQUEST } rp_mode;

#ifndef RP_MAX_CONNS
#define RP_MAX_CONNS 64
#endif
#define RP_QUEUE_CAP (4u << 20)   /* bytes queued per direction before we stop reading */
#define RP_CUT_WAIT_MS 1000u
#define RP_READ_CHUNK 16384

typedef struct rp_chunk {
    struct rp_chunk *next;
    unsigned long long due_ms;    /* CLOCK_MONOTONIC ms when it may be sent */
    size_t len, off;
    char data[];
} rp_chunk;

typedef struct rp_conn {
    int used;
    int fd[2];                    /* [0] client side, [1] upstream side; -1 closed */
    int connecting;               /* upstream non-blocking connect in progress */
    int eof[2];                   /* fd[i] has sent EOF */
    rp_chunk *head[2], *tail[2];  /* bytes waiting to be written TO fd[i] */
    size_t queued[2];
    int cut_armed;                /* CUT mode: request forwarded, waiting */
    unsigned long long cut_deadline;
} rp_conn;

typedef struct rp_stats {
    unsigned long accepted;       /* client connections accepted */
    unsigned long active;         /* client connections open right now */
    unsigned long resets;         /* connections reset by RP_RESET */
    unsigned long cuts;           /* connections cut by RP_CUT_AFTER_REQUEST */
    unsigned long refused;        /* reset because RP_MAX_CONNS were open */
} rp_stats;

typedef struct rp_proxy {
    int listen_fd;
    int port;                     /* where clients connect: 127.0.0.1:port */
    int upstream_port;            /* 127.0.0.1:upstream_port */
    int wake[2];                  /* self-pipe: set_mode / stop wake the thread */
    int running;
    pthread_t thread;
    pthread_mutex_t mu;           /* guards mode, delay_ms, stop, stats */
    rp_mode mode;
    unsigned delay_ms;
    int stop;
    rp_stats stats;
    rp_conn conns[RP_MAX_CONNS];  /* proxy thread only */
} rp_proxy;

static inline unsigned long long rp__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

static inline int rp__setfl(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static inline void rp__rst_close(int fd) {
    struct linger lg;
    lg.l_onoff = 1;
    lg.l_linger = 0;
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

static inline void rp__free_queue(rp_conn *c, int side) {
    rp_chunk *k = c->head[side];
    while (k) { rp_chunk *n = k->next; free(k); k = n; }
    c->head[side] = c->tail[side] = NULL;
    c->queued[side] = 0;
}

static inline void rp__stat_add(rp_proxy *p, unsigned long *field, long delta) {
    pthread_mutex_lock(&p->mu);
    *field = (unsigned long)((long)*field + delta);
    pthread_mutex_unlock(&p->mu);
}

/* how: 0 normal close, 1 reset client (RST), 2 cut */
static inline void rp__close_conn(rp_proxy *p, rp_conn *c, int how) {
    if (!c->used) return;
    /* count first: a test that sees the close must also see the count */
    pthread_mutex_lock(&p->mu);
    p->stats.active--;
    if (how == 1) p->stats.resets++;
    if (how == 2) p->stats.cuts++;
    pthread_mutex_unlock(&p->mu);
    if (c->fd[0] >= 0) { if (how == 1) rp__rst_close(c->fd[0]); else close(c->fd[0]); }
    if (c->fd[1] >= 0) close(c->fd[1]);
    rp__free_queue(c, 0);
    rp__free_queue(c, 1);
    memset(c, 0, sizeof *c);
    c->fd[0] = c->fd[1] = -1;
}

static inline void rp__close_upstream(rp_conn *c) {
    if (c->fd[1] >= 0) close(c->fd[1]);
    c->fd[1] = -1;
    c->connecting = 0;
    c->eof[1] = 0;
    rp__free_queue(c, 1);
}

static inline int rp__can_write(rp_mode m, const rp_chunk *k, unsigned long long now) {
    if (!k || m == RP_DROP) return 0;
    if (m == RP_DELAY) return k->due_ms <= now;
    return 1;
}

static inline void rp__accept(rp_proxy *p, rp_mode mode) {
    for (;;) {
        struct sockaddr_in a;
        int cfd = accept(p->listen_fd, NULL, NULL), i, slot = -1;
        rp_conn *c;
        if (cfd < 0) return;   /* EAGAIN, or a transient error: next turn */
        rp__stat_add(p, &p->stats.accepted, 1);
        if (mode == RP_RESET) { rp__stat_add(p, &p->stats.resets, 1); rp__rst_close(cfd); continue; }
        for (i = 0; i < RP_MAX_CONNS; i++) if (!p->conns[i].used) { slot = i; break; }
        if (slot < 0 || rp__setfl(cfd) != 0) {
            rp__stat_add(p, &p->stats.refused, 1);
            rp__rst_close(cfd);
            continue;
        }
        c = &p->conns[slot];
        memset(c, 0, sizeof *c);
        c->used = 1;
        c->fd[0] = cfd;
        c->fd[1] = -1;
        rp__stat_add(p, &p->stats.active, 1);
        if (mode == RP_DROP) continue;   /* black hole: no upstream */
        c->fd[1] = socket(AF_INET, SOCK_STREAM, 0);
        if (c->fd[1] < 0 || rp__setfl(c->fd[1]) != 0) { rp__close_conn(p, c, 0); continue; }
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);   /* loopback only, always */
        a.sin_port = htons((unsigned short)p->upstream_port);
        if (connect(c->fd[1], (struct sockaddr *)&a, sizeof a) == 0) c->connecting = 0;
        else if (errno == EINPROGRESS || errno == EINTR) c->connecting = 1;
        else rp__close_conn(p, c, 0);   /* upstream refused: client sees EOF */
    }
}

/* Write what may be written to side s. 0 ok, -1 conn closed. */
static inline int rp__flush(rp_proxy *p, rp_conn *c, int s, rp_mode mode, unsigned long long now) {
    int wrote = 0;
    while (rp__can_write(mode, c->head[s], now)) {
        rp_chunk *k = c->head[s];
        ssize_t n = send(c->fd[s], k->data + k->off, k->len - k->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            rp__close_conn(p, c, 0);
            return -1;
        }
        wrote = 1;
        k->off += (size_t)n;
        c->queued[s] -= (size_t)n;
        if (k->off < k->len) break;
        c->head[s] = k->next;
        if (!c->head[s]) c->tail[s] = NULL;
        free(k);
    }
    if (wrote && s == 1 && mode == RP_CUT_AFTER_REQUEST && !c->cut_armed) {
        c->cut_armed = 1;
        c->cut_deadline = now + RP_CUT_WAIT_MS;
    }
    return 0;
}

/* Read once from side s. 0 ok, -1 conn closed. */
static inline int rp__read(rp_proxy *p, rp_conn *c, int s, rp_mode mode, unsigned delay,
                    unsigned long long now) {
    char buf[RP_READ_CHUNK];
    size_t room = RP_QUEUE_CAP - c->queued[!s];
    ssize_t n;
    rp_chunk *k;
    if (mode == RP_DROP || room > sizeof buf) room = sizeof buf;
    do n = recv(c->fd[s], buf, room, 0); while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        rp__close_conn(p, c, 0);
        return -1;
    }
    if (n == 0) { c->eof[s] = 1; return 0; }
    if (mode == RP_DROP) return 0;                       /* discard */
    if (mode == RP_CUT_AFTER_REQUEST && s == 1) {         /* server answered */
        rp__close_conn(p, c, 2);
        return -1;
    }
    k = (rp_chunk *)malloc(sizeof *k + (size_t)n);
    if (!k) { rp__close_conn(p, c, 0); return -1; }
    k->next = NULL;
    k->due_ms = now + (mode == RP_DELAY ? delay : 0u);
    k->len = (size_t)n;
    k->off = 0;
    memcpy(k->data, buf, (size_t)n);
    if (c->tail[!s]) c->tail[!s]->next = k; else c->head[!s] = k;
    c->tail[!s] = k;
    c->queued[!s] += (size_t)n;
    return 0;
}

/* Per-turn bookkeeping: mode-driven resets, cuts, finished connections. */
static inline void rp__sweep(rp_proxy *p, rp_mode mode, unsigned long long now) {
    int i;
    for (i = 0; i < RP_MAX_CONNS; i++) {
        rp_conn *c = &p->conns[i];
        if (!c->used) continue;
        if (mode == RP_RESET) { rp__close_conn(p, c, 1); continue; }
        if (c->fd[0] < 0) { rp__close_conn(p, c, 0); continue; }
        if (mode == RP_CUT_AFTER_REQUEST && c->cut_armed && now >= c->cut_deadline) {
            rp__close_conn(p, c, 2);
            continue;
        }
        if (c->eof[0] && (mode == RP_DROP || c->fd[1] < 0 || !c->head[1])) {
            rp__close_conn(p, c, 0);   /* client gone and nothing left for upstream */
            continue;
        }
        if (c->eof[1] && mode == RP_DROP) { rp__close_upstream(c); continue; }
        if ((c->eof[1] || c->fd[1] < 0) && mode != RP_DROP && !c->head[0]) {
            rp__close_conn(p, c, 0);   /* upstream gone and client has all it gets */
            continue;
        }
    }
}

static inline void *rp__thread(void *arg) {
    rp_proxy *p = (rp_proxy *)arg;
    struct pollfd pfd[2 + 2 * RP_MAX_CONNS];
    int who[2 + 2 * RP_MAX_CONNS];
    int i;
    for (;;) {
        rp_mode mode;
        unsigned delay;
        int stop, n = 0, timeout = 1000, r;
        unsigned long long now;

        pthread_mutex_lock(&p->mu);
        mode = p->mode;
        delay = p->delay_ms;
        stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        now = rp__now_ms();
        rp__sweep(p, mode, now);

        pfd[n].fd = p->listen_fd; pfd[n].events = POLLIN; pfd[n].revents = 0; who[n++] = -1;
        pfd[n].fd = p->wake[0];   pfd[n].events = POLLIN; pfd[n].revents = 0; who[n++] = -2;
        for (i = 0; i < RP_MAX_CONNS; i++) {
            rp_conn *c = &p->conns[i];
            int s;
            if (!c->used) continue;
            if (c->cut_armed && mode == RP_CUT_AFTER_REQUEST) {
                long long left = (long long)(c->cut_deadline - now);
                if (left < timeout) timeout = left < 0 ? 0 : (int)left;
            }
            for (s = 0; s < 2; s++) {
                short ev = 0;
                if (c->fd[s] < 0) continue;
                if (s == 1 && c->connecting) ev = POLLOUT;
                else {
                    if (!c->eof[s] && (mode == RP_DROP || c->queued[!s] < RP_QUEUE_CAP)) ev |= POLLIN;
                    if (!(s == 1 && c->connecting) && rp__can_write(mode, c->head[s], now)) ev |= POLLOUT;
                    else if (mode == RP_DELAY && c->head[s]) {
                        long long left = (long long)(c->head[s]->due_ms - now);
                        if (left < timeout) timeout = left < 0 ? 0 : (int)left;
                    }
                }
                if (!ev) continue;
                pfd[n].fd = c->fd[s]; pfd[n].events = ev; pfd[n].revents = 0;
                who[n++] = i * 2 + s;
            }
        }
        r = poll(pfd, (nfds_t)n, timeout);
        if (r < 0) { if (errno == EINTR) continue; break; }
        pthread_mutex_lock(&p->mu);   /* re-read: a change made while polling wins */
        mode = p->mode;
        delay = p->delay_ms;
        pthread_mutex_unlock(&p->mu);
        now = rp__now_ms();
        for (i = 0; i < n; i++) {
            rp_conn *c;
            int s;
            short re = pfd[i].revents;
            if (!re) continue;
            if (who[i] == -2) {
                char junk[64];
                while (read(p->wake[0], junk, sizeof junk) > 0) {}
                continue;
            }
            if (who[i] == -1) { rp__accept(p, mode); continue; }
            c = &p->conns[who[i] / 2];
            s = who[i] % 2;
            if (!c->used || c->fd[s] != pfd[i].fd) continue;   /* closed this turn */
            if (s == 1 && c->connecting) {
                int err = 0;
                socklen_t len = sizeof err;
                if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
                    rp__close_conn(p, c, 0);
                else
                    c->connecting = 0;
                continue;
            }
            if ((re & POLLOUT) && rp__flush(p, c, s, mode, now) != 0) continue;
            if (pfd[i].events & POLLIN) {
                if (re & (POLLIN | POLLHUP | POLLERR)) rp__read(p, c, s, mode, delay, now);
            } else if (re & (POLLHUP | POLLERR)) {
                rp__close_conn(p, c, 0);
            }
        }
    }
    for (i = 0; i < RP_MAX_CONNS; i++) rp__close_conn(p, &p->conns[i], 0);
    return NULL;
}

/* Start a proxy to 127.0.0.1:upstream_port. 0 ok (p->port set), -1 error. */
static inline int rp_start(rp_proxy *p, int upstream_port) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int i;
    memset(p, 0, sizeof *p);
    p->listen_fd = p->wake[0] = p->wake[1] = -1;
    for (i = 0; i < RP_MAX_CONNS; i++) p->conns[i].fd[0] = p->conns[i].fd[1] = -1;
    p->upstream_port = upstream_port;
    p->mode = RP_FORWARD;
    if (pipe(p->wake) != 0) { p->wake[0] = p->wake[1] = -1; goto fail; }
    if (rp__setfl(p->wake[0]) != 0 || rp__setfl(p->wake[1]) != 0) goto fail;
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (p->listen_fd < 0 || rp__setfl(p->listen_fd) != 0) goto fail;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->listen_fd, 64) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0) goto fail;
    p->port = ntohs(a.sin_port);
    if (pthread_mutex_init(&p->mu, NULL) != 0) goto fail;
    if (pthread_create(&p->thread, NULL, rp__thread, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        goto fail;
    }
    p->running = 1;
    return 0;
fail:
    fprintf(stderr, "proxy: rp_start: %s\n", strerror(errno));
    if (p->listen_fd >= 0) close(p->listen_fd);
    if (p->wake[0] >= 0) close(p->wake[0]);
    if (p->wake[1] >= 0) close(p->wake[1]);
    p->listen_fd = p->wake[0] = p->wake[1] = -1;
    return -1;
}

static inline void rp__wake(rp_proxy *p) {
    ssize_t r;
    do r = write(p->wake[1], "x", 1); while (r < 0 && errno == EINTR);
    /* EAGAIN: pipe already full of wake-ups, fine */
}

static inline void rp_set_mode(rp_proxy *p, rp_mode m, unsigned delay_ms) {
    if (!p->running) return;
    pthread_mutex_lock(&p->mu);
    p->mode = m;
    p->delay_ms = delay_ms;
    pthread_mutex_unlock(&p->mu);
    rp__wake(p);
}

static inline rp_stats rp_get_stats(rp_proxy *p) {
    rp_stats st;
    memset(&st, 0, sizeof st);
    if (!p->running) return p->stats;
    pthread_mutex_lock(&p->mu);
    st = p->stats;
    pthread_mutex_unlock(&p->mu);
    return st;
}

static inline void rp_stop(rp_proxy *p) {
    if (!p->running) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    rp__wake(p);
    pthread_join(p->thread, NULL);
    p->running = 0;
    pthread_mutex_destroy(&p->mu);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    p->listen_fd = p->wake[0] = p->wake[1] = -1;
}

#endif /* RLOCK_TEST_PROXY_H */
