/* rlock_posix.h - POSIX sockets transport for rlock.h (TCP and unix sockets).
 *
 * WHAT
 *   A ready-made rlock_transport over a non-blocking socket it owns: TCP
 *   (IPv4/IPv6, numeric hosts or names) or AF_UNIX. Header-only, every
 *   function static, no globals. Also exports the fd-level helpers
 *   rlock_posix_fd_send/recv/wait, which adapters/rlock_hiredis.h reuses.
 *
 * USAGE
 *   #include "adapters/rlock_posix.h"   <- FIRST, before any system header
 *   rlock_posix_conn pc;  rlock_node node;
 *   if (rlock_posix_init_tcp(&pc, "127.0.0.1", 6379, 1000) != 0) abort();
 *   rlock_node_init(&node, rlock_posix_transport(&pc));   // pc must outlive node
 *   ... use node with rlock_client_init() / locks; rlock connects lazily ...
 *   rlock_client_close(&cl);  rlock_posix_close(&pc);      // close is idempotent
 *   (rlock_posix_init_unix(&pc, "/run/redis.sock", 1000) for a unix socket.)
 *
 * INCLUDE ORDER
 *   Under -std=c99 glibc hides getaddrinfo/poll/clock_gettime unless
 *   _POSIX_C_SOURCE is defined before the first system header, so this header
 *   defines it when it is not defined yet - which only works if it comes
 *   first. It stops with an #error when glibc headers were already read
 *   without it (or compile with -D_POSIX_C_SOURCE=200809L).
 *
 * BEHAVIOUR
 *   send/recv/connect never block (MSG_DONTWAIT, non-blocking connect); only
 *   wait() blocks, in poll(). send never raises SIGPIPE (MSG_NOSIGNAL, or
 *   SO_NOSIGPIPE where that is what the platform has). connect() enforces
 *   connect_timeout_ms itself as a wall-clock bound over all addresses a name
 *   resolves to (0 means RLOCK_POSIX_DEFAULT_CONNECT_TIMEOUT_MS); wait() on a
 *   connecting socket waits for writability, never past that bound. Caveat:
 *   host names are resolved with getaddrinfo(), which may block on DNS; pass
 *   a numeric address where that matters. The adapter allocates nothing
 *   itself (getaddrinfo does, and is freed before connect() returns).
 */
#ifndef RLOCK_POSIX_H
#define RLOCK_POSIX_H

#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#  if defined(_FEATURES_H) || defined(__GLIBC__)
#    error "rlock_posix.h: include it before any system header (glibc already hid the POSIX APIs), or compile with -D_POSIX_C_SOURCE=200809L"
#  endif
#  define _POSIX_C_SOURCE 200809L
#endif
/* macOS hides SO_NOSIGPIPE under plain _POSIX_C_SOURCE. */
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#  define _DARWIN_C_SOURCE 1
#endif

#include "../rlock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#ifndef RLOCK_POSIX_DEFAULT_CONNECT_TIMEOUT_MS
#define RLOCK_POSIX_DEFAULT_CONNECT_TIMEOUT_MS 1000u
#endif

/* Platform gaps: no MSG_NOSIGNAL (macOS) -> SO_NOSIGPIPE on the socket;
 * no MSG_DONTWAIT -> only non-blocking sockets are safe (ours are). */
#ifdef MSG_NOSIGNAL
#define RLOCK__POSIX_NOSIGNAL MSG_NOSIGNAL
#else
#define RLOCK__POSIX_NOSIGNAL 0
#endif
#ifdef MSG_DONTWAIT
#define RLOCK__POSIX_DONTWAIT MSG_DONTWAIT
#else
#define RLOCK__POSIX_DONTWAIT 0
#endif

/* Every function here is static; a program that uses only some of them must
 * not get -Wunused-function for the others. */
#if defined(__GNUC__) || defined(__clang__)
#define RLOCK__ADAPTER_FN static __attribute__((unused))
#else
#define RLOCK__ADAPTER_FN static
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RLOCK_POSIX_SENTINEL_LAG_MS
/* For this long after a watch (rlock_posix_sentinel_watch) heard where the
 * primary is (+switch-master, or its answer), a Sentinel that names another
 * address is taken for one that has not caught up with the failover yet
 * (the old primary still says ROLE master until it is demoted): the
 * connect asks the next Sentinel; the last one's answer is still taken. */
#define RLOCK_POSIX_SENTINEL_LAG_MS 10000u
#endif
#ifndef RLOCK_POSIX_MAX_SENTINELS
#define RLOCK_POSIX_MAX_SENTINELS 5
#endif

/* Where a Sentinel-led connect is (rlock_posix_conn.phase). */
enum { RLOCK__SN_NONE = 0, RLOCK__SN_ASK_CONN, RLOCK__SN_ASK_SEND, RLOCK__SN_ASK_READ, RLOCK__SN_PRIM_CONN,
       RLOCK__SN_PRIM_SEND, RLOCK__SN_PRIM_READ };

typedef struct rlock_posix_conn {
    rlock_transport tr;            /* filled by init; hand it to rlock_node_init */
    int fd;                        /* -1 when not connected */
    int is_unix;                   /* 1: AF_UNIX path, 0: TCP host:port */
    char host[256];
    int port;
    char path[108];
    uint32_t connect_timeout_ms;   /* wall bound for one connect, all addresses */
    int connecting;                /* non-blocking connect in progress on fd */
    /* last error text ("" when none): "... HOST:PORT: why", a host too long
     * to leave the port and why whole shortened in the middle ("...") */
    char err[128];
    /* 1: the last connect failed, and on the way a Sentinel or the primary
     * it named refused AUTH (NOAUTH, WRONGPASS, NOPERM): credentials to fix,
     * not a server to wait for (the rlock command exits 77) */
    int auth_refused;
    /* --- private --- */
    uint64_t connect_start_ms;     /* monotonic ms when this connect began */
    int addr_index;                /* getaddrinfo entry being tried */
    const struct rlock_posix_sentinel *sentinel; /* set: host/port come from Sentinel at each connect */
    /* how a connect goes when not the plain way (Sentinel): called for a
     * fresh connect and then for each step until it said 1; a pointer, so
     * that a program without it needs no rlock core */
    int (*start)(struct rlock_posix_conn *c);
    int phase;                     /* where start's connect is (RLOCK__SN_*), 0: not begun */
    size_t sn_at, sn_len, sn_off;  /* Sentinel asked; bytes in sn_buf; sent / parsed so far */
    uint64_t sn_until;             /* monotonic ms: the Sentinel asked now has until then (its share) */
    size_t sn_first, sn_tried;     /* the Sentinel a connect asks first; how many this one asked */
    unsigned char sn_buf[1024];    /* [AUTH] its question and answer, then [AUTH] ROLE and the reply */
    size_t sn_skip, sn_vals;       /* ROLE's reply: values still to read, values read */
    int sn_master;                 /* ROLE's reply said "master" */
    /* each Sentinel's address, resolved once by rlock_posix_init_sentinel
     * (numeric: no DNS in the non-blocking connect); "" did not resolve */
    char sn_ip[RLOCK_POSIX_MAX_SENTINELS][64];
    /* 1: a Sentinel announced a new primary (rlock_posix_sentinel_watch):
     * the next send/recv drops this connection, so rlock reconnects */
    int switched;
    /* where the watch last heard the primary is, and when (monotonic ms;
     * "": never): see RLOCK_POSIX_SENTINEL_LAG_MS */
    char sn_hint[256];             /* (a host name as long as host's: announce-hostnames) */
    int sn_hint_port;
    uint64_t sn_hint_at;
} rlock_posix_conn;

/* Sentinel discovery (rlock_posix_init_sentinel). The addresses of up to
 * RLOCK_POSIX_MAX_SENTINELS Sentinels and the primary's name; the caller
 * keeps it alive while connections use it. username/password: optional
 * credentials of the data servers, used only for the ROLE check.
 * sentinel_username/sentinel_password: AUTH to every Sentinel (a Sentinel
 * with requirepass or ACL users), NULL: none. */
typedef struct rlock_posix_sentinel {
    const char *host[RLOCK_POSIX_MAX_SENTINELS];
    int port[RLOCK_POSIX_MAX_SENTINELS];
    size_t n;
    const char *master;            /* the name the Sentinels monitor it under (1..928 bytes: rlock_posix_init_sentinel) */
    const char *username, *password;
    const char *sentinel_username, *sentinel_password;
} rlock_posix_sentinel;

/* ------------------------------------------------------------------------ */
/* fd-level helpers (shared with rlock_hiredis.h)                            */
/* ------------------------------------------------------------------------ */

static uint64_t rlock__posix_now_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Write up to len bytes without blocking, whatever the socket's mode.
 * > 0 written, RLOCK_IO_WOULD_BLOCK, or RLOCK_IO_ERROR (errno tells why). */
RLOCK__ADAPTER_FN long rlock_posix_fd_send(int fd, const unsigned char *buf, size_t len) {
    ssize_t n;
    if (fd < 0) { errno = EBADF; return RLOCK_IO_ERROR; }
    if (len == 0) return RLOCK_IO_WOULD_BLOCK;
    if (len > (size_t)LONG_MAX) len = (size_t)LONG_MAX;
    do n = send(fd, buf, len, RLOCK__POSIX_NOSIGNAL | RLOCK__POSIX_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n >= 0) return (long)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RLOCK_IO_WOULD_BLOCK;
    return RLOCK_IO_ERROR;
}

/* Read up to len bytes without blocking. > 0 read, RLOCK_IO_WOULD_BLOCK,
 * RLOCK_IO_CLOSED on EOF, RLOCK_IO_ERROR (errno tells why). */
RLOCK__ADAPTER_FN long rlock_posix_fd_recv(int fd, unsigned char *buf, size_t len) {
    ssize_t n;
    if (fd < 0) { errno = EBADF; return RLOCK_IO_ERROR; }
    if (len == 0) return RLOCK_IO_WOULD_BLOCK; /* recv() of 0 bytes would look like EOF */
    if (len > (size_t)LONG_MAX) len = (size_t)LONG_MAX;
    do n = recv(fd, buf, len, RLOCK__POSIX_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0) return (long)n;
    if (n == 0) return RLOCK_IO_CLOSED;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RLOCK_IO_WOULD_BLOCK;
    return RLOCK_IO_ERROR;
}

/* poll() for RLOCK_WANT_READ/WRITE. > 0 ready - also on POLLERR/POLLHUP, so
 * that the next send/recv reports the error - 0 timeout, < 0 error (bad fd).
 * EINTR restarts with the time that is left. */
RLOCK__ADAPTER_FN int rlock_posix_fd_wait(int fd, int want, uint32_t timeout_ms) {
    uint64_t deadline = rlock__posix_now_ms() + timeout_ms;
    struct pollfd p;
    if (fd < 0) { errno = EBADF; return -1; }
    for (;;) {
        uint64_t now = rlock__posix_now_ms();
        uint64_t left = now < deadline ? deadline - now : 0;
        int r;
        p.fd = fd;
        p.events = (short)(((want & RLOCK_WANT_READ) ? POLLIN : 0) |
                           ((want & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        r = poll(&p, 1, left > (uint64_t)INT_MAX ? INT_MAX : (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) {
            if (left > (uint64_t)INT_MAX) continue; /* very long waits: poll again */
            return 0;
        }
        if (p.revents & POLLNVAL) { errno = EBADF; return -1; }
        return 1;
    }
}

/* Best effort: no SIGPIPE where MSG_NOSIGNAL is missing. */
static void rlock__posix_nosigpipe(int fd) {
#if !defined(MSG_NOSIGNAL) && defined(SO_NOSIGPIPE)
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
    (void)fd;
#endif
}

/* ------------------------------------------------------------------------ */
/* The transport over an rlock_posix_conn                                    */
/* ------------------------------------------------------------------------ */

/* printf into out[cap], cut where out ends (snprintf itself would need a
 * %.40s for a host[256] into err[128]: gcc's -Wformat-truncation refuses
 * it). The texts that name a host go through rlock__posix_fit. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void rlock__posix_text(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(out, cap, fmt, ap);
    va_end(ap);
}

/* A host name in an error text is shortened to no fewer characters than
 * this; a Sentinel's reason about another host leaves the wrapping
 * "Sentinel HOST:65535: " (rlock__sn_why) that much room. */
#define RLOCK__POSIX_HOST_MIN 20u
#define RLOCK__SN_WRAP (9u + RLOCK__POSIX_HOST_MIN + 8u)

static void rlock__posix_seterr(rlock_posix_conn *c, const char *what, int errnum) {
    if (errnum) snprintf(c->err, sizeof c->err, "%s: %s", what, strerror(errnum));
    else snprintf(c->err, sizeof c->err, "%s", what);
}

/* "pre HOST:PORT post" into out[cap] ([HOST] for an IPv6 address; port < 0:
 * "pre NAME post", no port). The error texts are what says which server
 * failed and why, and rlock_node_error keeps 127 bytes of them: the reason
 * (post) and the port are whole, and a host too long for what is left is
 * shortened in the middle - its first and last characters around "..."
 * (a DNS name may have 253) - to no fewer than RLOCK__POSIX_HOST_MIN; only
 * a reason longer than that leaves (a server's error text) is cut, at its
 * end. post may be out itself. */
static void rlock__posix_fit(char *out, size_t cap, const char *pre, const char *host, int port, const char *post) {
    char p[128], h[128], num[16];
    size_t n = strlen(host), fixed, room, head;
    int v6 = port >= 0 && strchr(host, ':') != NULL;
    rlock__posix_text(p, sizeof p, "%s", post);
    num[0] = '\0';
    if (port >= 0) snprintf(num, sizeof num, ":%d", port);
    fixed = strlen(pre) + (v6 ? 2u : 0u) + strlen(num) + strlen(p);
    room = cap > fixed + RLOCK__POSIX_HOST_MIN + 1 ? cap - 1 - fixed : RLOCK__POSIX_HOST_MIN;
    if (room >= sizeof h) room = sizeof h - 1;
    if (n <= room) {
        memcpy(h, host, n + 1);
    } else { /* the start (a node's own name) and the end (its domain) */
        head = (room - 2) / 2;
        memcpy(h, host, head);
        memcpy(h + head, "...", 3);
        memcpy(h + head + 3, host + n - (room - 3 - head), room - 3 - head);
        h[room] = '\0';
    }
    rlock__posix_text(out, cap, "%s%s%s%s%s%s", pre, v6 ? "[" : "", h, v6 ? "]" : "", num, p);
}

/* "connect HOST:PORT: why" ([HOST] for an IPv6 address, as the rlock
 * command takes it; unix: "connect unix:PATH: why"). Sentinel-led, it is
 * the reason of "Sentinel HOST:PORT: ...": room left for that. */
static void rlock__posix_connwhy(rlock_posix_conn *c, const char *why) {
    char w[64];
    snprintf(w, sizeof w, ": %s", why);
    rlock__posix_fit(c->err, sizeof c->err - (c->sentinel ? RLOCK__SN_WRAP : 0u), "connect ", c->host,
                     c->is_unix ? -1 : c->port, w);
}

static void rlock__posix_connerr(rlock_posix_conn *c, int errnum) { rlock__posix_connwhy(c, strerror(errnum)); }

static void rlock__posix_drop(rlock_posix_conn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->connecting = 0;
}

static uint32_t rlock__posix_budget(const rlock_posix_conn *c) {
    return c->connect_timeout_ms ? c->connect_timeout_ms : RLOCK_POSIX_DEFAULT_CONNECT_TIMEOUT_MS;
}

/* Milliseconds left of this connect's wall bound at now (0 when spent). */
static uint64_t rlock__posix_left_at(const rlock_posix_conn *c, uint64_t now) {
    uint64_t end = c->connect_start_ms + rlock__posix_budget(c);
    return now < end ? end - now : 0;
}

/* Milliseconds left of this connect's wall bound (0 when spent). */
static uint64_t rlock__posix_connect_left(const rlock_posix_conn *c) {
    return rlock__posix_left_at(c, rlock__posix_now_ms());
}

/* Milliseconds until a connect in progress must step again: the connect's
 * bound, or - Sentinel-led - the share of it that the Sentinel asked now
 * and the primary it names have (one that does not answer must not keep
 * the others from being asked). */
static uint64_t rlock__posix_step_left(const rlock_posix_conn *c) {
    uint64_t left = rlock__posix_connect_left(c), now;
    if (c->phase != RLOCK__SN_NONE) {
        now = rlock__posix_now_ms();
        if (c->sn_until < now + left) left = c->sn_until > now ? c->sn_until - now : 0;
    }
    return left;
}

/* A non-blocking, close-on-exec stream socket; -1 with errno on failure. */
static int rlock__posix_socket(int family) {
    int fd, fl;
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC)
    fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 || errno != EINVAL) return fd; /* EINVAL: kernel without the flags */
#endif
    fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Start a connect to one address. 1 connected, 0 in progress, -1 failed
 * (errno set, nothing left open). */
static int rlock__posix_start_one(rlock_posix_conn *c, int family, const struct sockaddr *sa,
                                  socklen_t salen) {
    int fd = rlock__posix_socket(family), r;
    if (fd < 0) return -1;
    rlock__posix_nosigpipe(fd);
    if (family != AF_UNIX) {
        int one = 1; /* lock commands are tiny: never wait for Nagle */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    r = connect(fd, sa, salen);
    c->fd = fd;
    if (r == 0) { c->connecting = 0; return 1; }
    /* TCP: EINPROGRESS, or EINTR (the connect goes on asynchronously). A unix
     * socket answers EAGAIN when the listen backlog is full: that is a
     * failure here; rlock retries with backoff. */
    if (family != AF_UNIX && (errno == EINPROGRESS || errno == EINTR)) {
        c->connecting = 1;
        return 0;
    }
    {
        int e = errno;
        rlock__posix_drop(c);
        errno = e;
    }
    return -1;
}

/* Try the TCP addresses from c->addr_index on. 1 / 0 / RLOCK_IO_ERROR.
 * last_errno: why the previous address failed (0: none yet). The name is
 * resolved again for each address tried (nothing is kept allocated between
 * calls); a DNS answer that changes order meanwhile may skip or repeat one. */
static int rlock__posix_start_tcp(rlock_posix_conn *c, int last_errno) {
    struct addrinfo hints, *res = NULL, *ai;
    char service[16];
    int i, r, gai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(service, sizeof service, "%d", c->port);
    gai = getaddrinfo(c->host, service, &hints, &res);
    if (gai != 0) {
        char w[80];
        snprintf(w, sizeof w, ": %s", gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        rlock__posix_fit(c->err, sizeof c->err - (c->sentinel ? RLOCK__SN_WRAP : 0u), "getaddrinfo ", c->host, -1, w);
        return RLOCK_IO_ERROR;
    }
    for (ai = res, i = 0; ai; ai = ai->ai_next, i++) {
        if (i < c->addr_index) continue;
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        c->addr_index = i;
        r = rlock__posix_start_one(c, ai->ai_family, ai->ai_addr, ai->ai_addrlen);
        if (r >= 0) { freeaddrinfo(res); return r; }
        last_errno = errno;
        if (rlock__posix_connect_left(c) == 0) break;
    }
    freeaddrinfo(res);
    if (last_errno) rlock__posix_connerr(c, last_errno);
    else rlock__posix_connwhy(c, "no usable address");
    return RLOCK_IO_ERROR;
}

static int rlock__posix_start(rlock_posix_conn *c) {
    if (c->is_unix) {
        struct sockaddr_un sa;
        size_t n = strlen(c->path);
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        memcpy(sa.sun_path, c->path, n + 1); /* init checked n < sizeof sa.sun_path */
        if (rlock__posix_start_one(c, AF_UNIX, (const struct sockaddr *)&sa,
                                   (socklen_t)sizeof sa) == 1)
            return 1;
        rlock__posix_connerr(c, errno);
        return RLOCK_IO_ERROR;
    }
    return rlock__posix_start_tcp(c, 0);
}

static int rlock__posix_progress(rlock_posix_conn *c);

static int rlock__posix_connect(void *ctx) {
    rlock_posix_conn *c = (rlock_posix_conn *)ctx;
    int old = -1, r;
    if (!c) return RLOCK_IO_ERROR;
    if (c->switched && c->connecting) { /* the primary moved meanwhile (a Sentinel may have named the old one): again */
        c->switched = 0;
        /* its socket closed only once the new one is open: never the same
         * number (rlock did not reconnect, its gen is the same: an event
         * loop that keeps registrations would keep the closed one's) */
        old = c->fd;
        c->fd = -1;
        c->connecting = 0;
    }
    if (c->fd >= 0 && !c->connecting) return 1;
    if (c->fd < 0) { /* a fresh connect: its wall bound starts now */
        c->err[0] = '\0';
        c->auth_refused = 0;
        /* a watch's mark (the primary moved) was for the connection now
         * gone: this one asks the Sentinels anyway - kept, it would drop
         * the new connection at its first send, or restart this connect */
        c->switched = 0;
        c->connecting = 0;
        c->addr_index = 0;
        c->connect_start_ms = rlock__posix_now_ms();
        c->phase = 0;
        r = c->start ? c->start(c) : rlock__posix_start(c);
        if (old >= 0) close(old);
        return r;
    }
    if (c->start) return c->start(c); /* its next step */
    return rlock__posix_progress(c);
}

/* A TCP connect in progress: poll without waiting, then ask the socket how
 * it went. 1 connected, 0 not yet, RLOCK_IO_ERROR (every address failed,
 * or the bound ran out). */
static int rlock__posix_progress(rlock_posix_conn *c) {
    struct pollfd p;
    int r, soerr = 0;
    socklen_t sl = (socklen_t)sizeof soerr;
    p.fd = c->fd;
    p.events = POLLOUT;
    p.revents = 0;
    do r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        rlock__posix_seterr(c, "poll", errno);
        rlock__posix_drop(c);
        return RLOCK_IO_ERROR;
    }
    if (r == 0) {
        char why[40];
        if (rlock__posix_connect_left(c) > 0) return RLOCK_IO_WOULD_BLOCK;
        snprintf(why, sizeof why, "timed out after %lu ms", (unsigned long)rlock__posix_budget(c));
        rlock__posix_connwhy(c, why);
        rlock__posix_drop(c);
        return RLOCK_IO_ERROR;
    }
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) soerr = errno;
    if (soerr == 0 && (p.revents & POLLOUT)) {
        c->connecting = 0;
        return 1;
    }
    if (soerr == 0) soerr = ECONNREFUSED; /* POLLHUP/POLLERR without a reason */
    /* this address failed: try the next one while the bound allows - its
     * socket opened before this one is closed, so that it never reuses the
     * number: rlock did not reconnect (its gen is the same), and an event
     * loop that keeps registrations (epoll) would keep the dead one's */
    c->addr_index++;
    if (rlock__posix_connect_left(c) > 0) {
        int old = c->fd;
        c->fd = -1;
        c->connecting = 0;
        r = rlock__posix_start_tcp(c, soerr);
        close(old);
        return r;
    }
    rlock__posix_drop(c);
    rlock__posix_connerr(c, soerr);
    return RLOCK_IO_ERROR;
}

/* send/recv before connect() said 1: finish the connect first, so a caller
 * that only waits and retries send/recv still makes progress. */
static int rlock__posix_ready(rlock_posix_conn *c) {
    if (c->switched) { /* the primary moved: a fresh connect asks the Sentinels again */
        c->switched = 0;
        rlock__posix_drop(c);
        snprintf(c->err, sizeof c->err, "the Sentinels announced a new primary (+switch-master)");
        return RLOCK_IO_CLOSED;
    }
    return c->connecting ? rlock__posix_connect(c) : 1;
}

static long rlock__posix_send(void *ctx, const unsigned char *buf, size_t len) {
    rlock_posix_conn *c = (rlock_posix_conn *)ctx;
    long n;
    if (!c || c->fd < 0) {
        if (c) snprintf(c->err, sizeof c->err, "send: not connected");
        return RLOCK_IO_ERROR;
    }
    if ((n = rlock__posix_ready(c)) != 1) return n == RLOCK_IO_CLOSED ? RLOCK_IO_ERROR : n;
    n = rlock_posix_fd_send(c->fd, buf, len);
    if (n == RLOCK_IO_ERROR) rlock__posix_seterr(c, "send", errno);
    return n;
}

static long rlock__posix_recv(void *ctx, unsigned char *buf, size_t len) {
    rlock_posix_conn *c = (rlock_posix_conn *)ctx;
    long n;
    if (!c || c->fd < 0) {
        if (c) snprintf(c->err, sizeof c->err, "recv: not connected");
        return RLOCK_IO_ERROR;
    }
    if ((n = rlock__posix_ready(c)) != 1) return n;
    n = rlock_posix_fd_recv(c->fd, buf, len);
    if (n == RLOCK_IO_ERROR) rlock__posix_seterr(c, "recv", errno);
    else if (n == RLOCK_IO_CLOSED)
        snprintf(c->err, sizeof c->err, "connection closed by the server");
    return n;
}

/* What to poll the descriptor for: while connecting, writability - but a
 * Sentinel-led connect reads the answers to its questions. */
static int rlock__posix_events(void *ctx, int want) {
    const rlock_posix_conn *c = (const rlock_posix_conn *)ctx;
    if (!c || !c->connecting) return want;
    return c->phase == RLOCK__SN_ASK_READ || c->phase == RLOCK__SN_PRIM_READ ? RLOCK_WANT_READ : RLOCK_WANT_WRITE;
}

/* While connecting, wait for what the connect needs (writability; a
 * Sentinel's answer) but never past the connect bound: when it runs out,
 * report "ready" so that the next connect() call fails with the timeout
 * instead of the caller sleeping on. */
static int rlock__posix_wait(void *ctx, int want, uint32_t timeout_ms) {
    rlock_posix_conn *c = (rlock_posix_conn *)ctx;
    int r;
    if (!c || c->fd < 0) return -1;
    if (c->connecting) {
        uint64_t left = rlock__posix_step_left(c);
        uint32_t t = left < (uint64_t)timeout_ms ? (uint32_t)left : timeout_ms;
        r = rlock_posix_fd_wait(c->fd, rlock__posix_events(c, RLOCK_WANT_WRITE), t);
        if (r == 0 && left <= (uint64_t)timeout_ms) return 1;
        return r;
    }
    r = rlock_posix_fd_wait(c->fd, want, timeout_ms);
    if (r < 0) rlock__posix_seterr(c, "poll", errno);
    return r;
}

static void rlock__posix_close_hook(void *ctx) {
    rlock_posix_conn *c = (rlock_posix_conn *)ctx;
    if (!c) return;
    /* rlock gave up on a Sentinel-led connect (the request's deadline came
     * first: node_timeout_ms shorter than a Sentinel's share): the next
     * connect asks the next Sentinel first, so that one that does not
     * answer is not asked first again and again */
    if (c->sentinel && c->phase != RLOCK__SN_NONE && c->sentinel->n) c->sn_first = (c->sn_at + 1) % c->sentinel->n;
    rlock__posix_drop(c);
}

static int rlock__posix_fd_hook(void *ctx) {
    const rlock_posix_conn *c = (const rlock_posix_conn *)ctx;
    return c ? c->fd : -1;
}

static const char *rlock__posix_error_hook(void *ctx) {
    const rlock_posix_conn *c = (const rlock_posix_conn *)ctx;
    return c ? c->err : "";
}

/* The due hook: while a connect is in progress, the time until it must
 * step again (rlock__posix_step_left); UINT32_MAX otherwise. */
static uint32_t rlock__posix_due(void *ctx) {
    const rlock_posix_conn *c = (const rlock_posix_conn *)ctx;
    uint64_t left = c && c->connecting ? rlock__posix_step_left(c) : UINT32_MAX;
    return left < UINT32_MAX ? (uint32_t)left : UINT32_MAX;
}

/* The sooner of timeout_ms and what each connection among items
 * (rlock_client_interest's or rlock_cluster_interest's: items[i].conn is
 * the rlock_node or rlock_subscriber, or NULL) says through its due hook:
 * for this adapter's, a connect in progress must step again at its bound,
 * or - Sentinel-led - when the share of it of the Sentinel asked now runs
 * out; for the TLS adapter's, the TCP connect or the handshake at its
 * bound. rlock's own *timeout_ms knows only rlock's deadlines (the
 * request's): an event loop that waits on it alone sleeps past a connect's
 * bound, and one silent Sentinel then costs the whole request instead of
 * its share. Call it after rlock_client_interest, before waiting - from
 * any file: it asks each connection's own hook (a transport without one
 * caps nothing). */
RLOCK__ADAPTER_FN uint32_t rlock_posix_interest_timeout(const rlock_interest *items, size_t n, uint32_t timeout_ms) {
    size_t i;
    for (i = 0; items && i < n; i++) { /* (a node's and a subscriber's first member is its transport) */
        const rlock_transport *t = (const rlock_transport *)items[i].conn;
        if (t && t->due) {
            uint32_t left = t->due(t->ctx);
            if (left < timeout_ms) timeout_ms = left;
        }
    }
    return timeout_ms;
}

/* One poll() over every connection rlock waits on (the blocking calls).
 * > 0 ready (also POLLERR/POLLHUP: the next send/recv says what), 0 timeout,
 * < 0 error. EINTR restarts with the time that is left. A connect of this
 * adapter in progress is woken as ready when its bound runs out
 * (rlock_posix_interest_timeout), as wait() does, so that it fails - or asks
 * the next Sentinel - then rather than at the request's deadline. A list
 * longer than 2 * RLOCK_MAX_NODES (rlock's own never is; a program's may be,
 * several clients' or rlock_cluster_interest's) is polled a slice at a
 * time: each slice looked at, then the last waited on for 1 ms at most. */
RLOCK__ADAPTER_FN int rlock_posix_wait_many(const rlock_interest *items, size_t n, uint32_t timeout_ms) {
    struct pollfd p[2 * RLOCK_MAX_NODES];
    uint64_t deadline, cap;
    size_t i, at = 0, k;
    int capped;
    cap = rlock_posix_interest_timeout(items, n, timeout_ms);
    capped = cap < timeout_ms;
    deadline = rlock__posix_now_ms() + cap;
    for (;;) {
        uint64_t now = rlock__posix_now_ms(), left = now < deadline ? deadline - now : 0;
        int r, t = left > (uint64_t)INT_MAX ? INT_MAX : (int)left;
        k = n - at < sizeof p / sizeof p[0] ? n - at : sizeof p / sizeof p[0];
        if (k < n) t = at + k < n ? 0 : t < 1 ? t : 1;
        for (i = 0; i < k; i++) {
            p[i].fd = items[at + i].fd;
            p[i].events = (short)(((items[at + i].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                  ((items[at + i].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[i].revents = 0;
        }
        r = poll(p, (nfds_t)k, t);
        if (r < 0 && errno == EINTR) continue;
        if (r != 0) return r;
        if (k < n) { /* sliced: the next slice, or round again while time is left */
            at = at + k < n ? at + k : 0;
            if (at || left) continue;
        } else if (left > (uint64_t)INT_MAX) {
            continue; /* very long waits: poll again */
        }
        return capped ? 1 : 0;
    }
}

static void rlock__posix_fill(rlock_posix_conn *c, uint32_t connect_timeout_ms) {
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->connect_timeout_ms = connect_timeout_ms;
    c->tr.ctx = c;
    c->tr.send = rlock__posix_send;
    c->tr.recv = rlock__posix_recv;
    c->tr.connect = rlock__posix_connect;
    c->tr.close = rlock__posix_close_hook;
    c->tr.wait = rlock__posix_wait;
    c->tr.fd = rlock__posix_fd_hook;
    c->tr.events = rlock__posix_events;
    c->tr.error = rlock__posix_error_hook;
    c->tr.wait_many = rlock_posix_wait_many;
    c->tr.due = rlock__posix_due;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                */
/* ------------------------------------------------------------------------ */

/* Prepare c for host:port (numeric address or name). Does not connect; does
 * not close a connection c may still hold (rlock_posix_close first).
 * connect_timeout_ms 0 = RLOCK_POSIX_DEFAULT_CONNECT_TIMEOUT_MS.
 * 0 ok, -1 bad arguments (NULL, empty or too long host, port not 1..65535). */
RLOCK__ADAPTER_FN int rlock_posix_init_tcp(rlock_posix_conn *c, const char *host, int port,
                                           uint32_t connect_timeout_ms) {
    size_t n;
    if (!c || !host || port < 1 || port > 65535) return -1;
    n = strlen(host);
    if (n == 0 || n >= sizeof c->host) return -1;
    rlock__posix_fill(c, connect_timeout_ms);
    memcpy(c->host, host, n + 1);
    c->port = port;
    return 0;
}

/* Prepare c for a unix socket path (filesystem paths only, no abstract
 * names). 0 ok, -1 bad arguments (NULL, empty, longer than sun_path allows). */
RLOCK__ADAPTER_FN int rlock_posix_init_unix(rlock_posix_conn *c, const char *path,
                                            uint32_t connect_timeout_ms) {
    struct sockaddr_un sa;
    size_t n;
    if (!c || !path) return -1;
    n = strlen(path);
    if (n == 0 || n >= sizeof c->path || n >= sizeof sa.sun_path) return -1;
    rlock__posix_fill(c, connect_timeout_ms);
    c->is_unix = 1;
    memcpy(c->path, path, n + 1);
    /* %.107s: n < sizeof c->path is checked above, but gcc cannot see it once
     * inlined with a longer caller buffer (-Wformat-truncation under -Werror) */
    snprintf(c->host, sizeof c->host, "unix:%.107s", path); /* for error texts */
    return 0;
}

/* The transport to hand to rlock_node_init (which copies it; its ctx points
 * at c, so c must stay where it is while the node is in use). */
RLOCK__ADAPTER_FN const rlock_transport *rlock_posix_transport(rlock_posix_conn *c) {
    return c ? &c->tr : NULL;
}

/* Sentinel discovery speaks RESP through rlock's own codec, so it is compiled
 * only in the file that defines RLOCK_IMPLEMENTATION: the plain TCP/unix
 * transport above still needs no rlock core (even at -O0, where unused
 * static functions are still emitted and would need rlock_resp_*). */
#ifdef RLOCK_IMPLEMENTATION
/* ---- Sentinel ------------------------------------------------------------
 * Each (re)connect asks the Sentinels, in order, SENTINEL
 * GET-MASTER-ADDR-BY-NAME, connects to the first address named, and asks it
 * ROLE: only a server that says "master" is used - never a replica, even one
 * a Sentinel still names during a failover (with credentials, AUTH goes
 * before ROLE). A Sentinel that does not answer, or names a server that
 * cannot be reached or does not say "master" (a stale or lying Sentinel),
 * is left for the next one: each Sentinel with the server it names has
 * only its share of the time left (divided among the Sentinels not asked
 * yet; wait() and wait_many() wake when it runs out) - one bad Sentinel
 * must not make every connect fail. The Sentinel that led to the primary
 * is asked first next time; after a connect rlock gave up on (its request
 * timed out first), the next Sentinel is.
 * It is a connect like any other, within connect_timeout_ms,
 * and as non-blocking: each connect() call moves it on as far as the
 * sockets allow and says 0 until the primary has answered (the fd and
 * events hooks give the socket and what it waits for), so an event loop
 * never blocks in it (Sentinels given by name were resolved once, by
 * rlock_posix_init_sentinel; the primary's address comes from the Sentinel
 * as an IP unless the Sentinels announce host names, which getaddrinfo
 * then resolves). With sentinel_password each question to a Sentinel goes
 * behind AUTH. rlock reconnects after a dropped connection and after a
 * READONLY reply (a primary demoted under it), so each failover is followed
 * by a fresh question to the Sentinels; rlock_posix_sentinel_watch (below)
 * reconnects as soon as the Sentinels announce it. */

/* Bytes of the line "*n" or "$n" with its CRLF, as the encoder writes it. */
static size_t rlock__sn_line(size_t n) {
    size_t b = 4;
    for (; n >= 10; n /= 10) b++;
    return b;
}

/* The Sentinel requests are written by these, into c->sn_buf or the
 * watch's tx - and by rlock_posix_init_sentinel into a scratch buffer as
 * large, to refuse what would not fit: the check is the writing itself.
 * Each appends one command at out[*len..cap) and adds its bytes to *len.
 * When the encoder finds no room, nothing is written and *len goes past
 * cap (then nothing more is written), by as much as the command would
 * take: how long the request would be, for the error texts. argv[i] has
 * lens[i] bytes (lens NULL: strings). */
static void rlock__sn_put(unsigned char *out, size_t cap, size_t *len, int argc, const char *const *argv,
                          const size_t *lens) {
    size_t l[3], n = 0;
    int i;
    for (i = 0; i < argc; i++) l[i] = lens ? lens[i] : strlen(argv[i]);
    if (*len <= cap) n = rlock_resp_encode(out + *len, cap - *len, argc, argv, l);
    if (!n) { /* "*argc", then "$len" and the argument each, with CRLF */
        n = rlock__sn_line((size_t)argc);
        for (i = 0; i < argc; i++) n += rlock__sn_line(l[i]) + l[i] + 2;
        if (*len <= cap && n <= cap - *len) n = cap - *len + 1; /* (past cap whatever the count: the encoder decides) */
    }
    *len += n;
}

/* AUTH [user] password (nothing when password is NULL). */
static void rlock__sn_auth(unsigned char *out, size_t cap, size_t *len, const char *user, const char *password) {
    const char *auth[3];
    auth[0] = "AUTH";
    auth[1] = user ? user : password;
    auth[2] = password;
    if (password) rlock__sn_put(out, cap, len, user ? 3 : 2, auth, NULL);
}

/* The question to a Sentinel - [AUTH] SENTINEL GET-MASTER-ADDR-BY-NAME
 * name, with the master name's first m bytes - at out[*len..cap) (above). */
static void rlock__sn_question(unsigned char *out, size_t cap, size_t *len, const rlock_posix_sentinel *sn, size_t m) {
    const char *ask[3] = { "SENTINEL", "GET-MASTER-ADDR-BY-NAME", sn->master };
    size_t lens[3];
    lens[0] = strlen(ask[0]);
    lens[1] = strlen(ask[1]);
    lens[2] = m;
    rlock__sn_auth(out, cap, len, sn->sentinel_username, sn->sentinel_password);
    rlock__sn_put(out, cap, len, 3, ask, lens);
}

/* What the primary is sent: [AUTH] ROLE, at out[*len..cap) (above). */
static void rlock__sn_role_req(unsigned char *out, size_t cap, size_t *len, const rlock_posix_sentinel *sn) {
    const char *role[1] = { "ROLE" };
    rlock__sn_auth(out, cap, len, sn->username, sn->password);
    rlock__sn_put(out, cap, len, 1, role, NULL);
}

/* "Sentinel HOST:PORT: why" into err[cap] (why may be err itself): why
 * and the port whole, the name as much of it as fits (rlock__posix_fit). */
static void rlock__sn_why(char *err, size_t cap, const char *host, int port, const char *why) {
    char w[128];
    rlock__posix_text(w, sizeof w, ": %s", why);
    rlock__posix_fit(err, cap, "Sentinel ", host, port, w);
}

/* Start on Sentinel c->sn_at, or the next that can be started (in turn,
 * each once per connect): 1 started, 0 none left (c->err says why the last
 * failed). */
static int rlock__sn_ask(rlock_posix_conn *c) {
    const rlock_posix_sentinel *sn = c->sentinel;
    for (; c->sn_tried < sn->n && rlock__posix_connect_left(c) > 0; c->sn_tried++, c->sn_at = (c->sn_at + 1) % sn->n) {
        uint64_t now;
        int r;
        if (!c->sn_ip[c->sn_at][0]) { /* its name did not resolve at init */
            rlock__posix_fit(c->err, sizeof c->err, "Sentinel ", sn->host[c->sn_at], sn->port[c->sn_at],
                             ": the name did not resolve");
            continue;
        }
        snprintf(c->host, sizeof c->host, "%s", c->sn_ip[c->sn_at]);
        c->port = sn->port[c->sn_at];
        c->addr_index = 0;
        /* its share of what is left: the last one asked has all of it, to
         * the millisecond (one clock reading, so its share ends with the
         * connect's bound and a timeout is named as one) */
        now = rlock__posix_now_ms();
        c->sn_until = now + rlock__posix_left_at(c, now) / (sn->n - c->sn_tried);
        r = rlock__posix_start_tcp(c, 0);
        if (r < 0) {
            rlock__sn_why(c->err, sizeof c->err, sn->host[c->sn_at], sn->port[c->sn_at], c->err);
            continue;
        }
        c->sn_len = c->sn_off = 0;
        rlock__sn_question(c->sn_buf, sizeof c->sn_buf, &c->sn_len, sn, strlen(sn->master));
        if (c->sn_len > sizeof c->sn_buf) { /* (init refuses that) */
            snprintf(c->err, sizeof c->err, "Sentinel credentials or master name too long");
            break;
        }
        c->phase = r == 1 ? RLOCK__SN_ASK_SEND : RLOCK__SN_ASK_CONN;
        c->connecting = 1;
        return 1;
    }
    rlock__posix_drop(c);
    c->phase = RLOCK__SN_NONE;
    return 0;
}

/* Open the next socket with start(c) while the current one is still open,
 * then close that: the new descriptor never reuses the old number, so an
 * event loop that watches descriptors (epoll) sees a new one to register. */
static int rlock__sn_move(rlock_posix_conn *c, int (*start)(rlock_posix_conn *c)) {
    int old = c->fd, r;
    c->fd = -1;
    c->connecting = 0;
    r = start(c);
    if (old >= 0) close(old);
    return r;
}

static int rlock__sn_start_primary(rlock_posix_conn *c) {
    c->addr_index = 0;
    return rlock__posix_start_tcp(c, 0);
}

/* This Sentinel failed (why; NULL: c->err says it all): on to the next. */
static void rlock__sn_next(rlock_posix_conn *c, const char *why) {
    const rlock_posix_sentinel *sn = c->sentinel;
    if (why) rlock__sn_why(c->err, sizeof c->err, sn->host[c->sn_at], sn->port[c->sn_at], why);
    c->sn_at = (c->sn_at + 1) % sn->n;
    c->sn_tried++;
    rlock__sn_move(c, rlock__sn_ask);
}

/* An error reply (str, len) of who ("Sentinel " or "primary "): its whole
 * text into c->err (as much as fits), after "Sentinel HOST:PORT: " or
 * "primary HOST:PORT: "
 * (and "refused AUTH: " when it answered AUTH); c->auth_refused when it
 * refused AUTH or wants it (NOAUTH, WRONGPASS, NOPERM). */
static void rlock__sn_said(rlock_posix_conn *c, const char *who, const char *host, int port, int to_auth,
                           const char *str, size_t len) {
    int n = (int)(len < sizeof c->err ? len : sizeof c->err - 1);
    char w[sizeof c->err];
    if (to_auth || (len >= 6 && (memcmp(str, "NOAUTH", 6) == 0 || memcmp(str, "NOPERM", 6) == 0)) ||
        (len >= 9 && memcmp(str, "WRONGPASS", 9) == 0))
        c->auth_refused = 1;
    rlock__posix_text(w, sizeof w, ": %s%.*s", to_auth ? "refused AUTH: " : "", n, str);
    rlock__posix_fit(c->err, sizeof c->err, who, host, port, w);
}

/* The Sentinel's answer in sn_buf[0..sn_off): 1 a primary's address (now in
 * c->host/port), 0 incomplete, -1 not an address (c->err says why; -2:
 * c->err is the whole text). */
static int rlock__sn_answer(rlock_posix_conn *c) {
    const rlock_posix_sentinel *sn = c->sentinel;
    rlock_reply rep;
    long got, off = 0;
    size_t k;
    int port = 0;
    if (sn->sentinel_password) { /* AUTH's answer first */
        got = rlock_resp_parse(c->sn_buf, c->sn_off, sizeof c->sn_buf, &rep);
        if (got == 0) return 0;
        if (got < 0) {
            snprintf(c->err, sizeof c->err, "refused AUTH: protocol error");
            return -1;
        }
        if (rep.v.type == RLOCK_RESP_ERROR) {
            rlock__sn_said(c, "Sentinel ", sn->host[c->sn_at], sn->port[c->sn_at], 1, rep.v.str, rep.v.len);
            return -2;
        }
        off = got;
    }
    got = rlock_resp_parse(c->sn_buf + off, c->sn_off - (size_t)off, sizeof c->sn_buf - (size_t)off, &rep);
    if (got == 0) return 0;
    if (got > 0 && rep.v.type == RLOCK_RESP_ERROR) { /* NOAUTH (a password is needed), ... */
        rlock__sn_said(c, "Sentinel ", sn->host[c->sn_at], sn->port[c->sn_at], 0, rep.v.str, rep.v.len);
        return -2;
    }
    if (got < 0 || rep.v.type != RLOCK_RESP_ARRAY || rep.count != 2 || rep.elem[0].type != RLOCK_RESP_BULK ||
        rep.elem[1].type != RLOCK_RESP_BULK || rep.elem[0].len == 0 || rep.elem[0].len >= sizeof c->host) {
        rlock__posix_fit(c->err, sizeof c->err - RLOCK__SN_WRAP, "does not know '", sn->master, -1, "'");
        return -1;
    }
    /* the port: 1..65535 in decimal digits, or this Sentinel is not believed */
    for (k = 0; k < rep.elem[1].len && port <= 65535; k++) {
        if (rep.elem[1].str[k] < '0' || rep.elem[1].str[k] > '9') break;
        port = port * 10 + (rep.elem[1].str[k] - '0');
    }
    if (k != rep.elem[1].len || port < 1 || port > 65535) {
        snprintf(c->err, sizeof c->err, "names a bad port '%.*s'", (int)(rep.elem[1].len < 16 ? rep.elem[1].len : 16),
                 rep.elem[1].str);
        return -1;
    }
    memcpy(c->host, rep.elem[0].str, rep.elem[0].len);
    c->host[rep.elem[0].len] = '\0';
    c->port = port;
    return 1;
}

/* [AUTH's reply] ROLE's reply, read as it comes in sn_buf[0..sn_off): 1
 * "master", 0 more to read, -1 anything else (-2: c->err says why). The
 * whole reply is read, so that none of it is left for rlock's first
 * request - but only the role word is kept: each value (a line, a bulk
 * string with its line) is dropped from sn_buf once read, so a primary's
 * list of replicas, however long, needs no bigger buffer. RESP2: the
 * connection has said no HELLO. */
static int rlock__sn_role(rlock_posix_conn *c) {
    size_t authv = c->sentinel->password ? 1u : 0u; /* AUTH's reply comes first */
    while (c->sn_skip > 0) {
        unsigned char *b = c->sn_buf;
        const unsigned char *e = (const unsigned char *)memchr(b, '\n', c->sn_off);
        size_t line, used, i, k = 0;
        if (!e) return 0;
        line = (size_t)(e - b) + 1;
        if (line < 3 || e[-1] != '\r') return -1;
        if (b[0] == '-') { /* AUTH's refusal, or ROLE's: NOAUTH, NOPERM, ... */
            if (c->sn_vals > authv) return -1; /* (an error inside ROLE's reply: nonsense) */
            rlock__sn_said(c, "primary ", c->host, c->port, c->sn_vals < authv, (const char *)b + 1, line - 3);
            return -2;
        }
        if (b[0] == '*' || b[0] == '$') {
            if (b[1] == '-') k = 0; /* a null array or string: nothing follows */
            else
                for (i = 1; i + 2 < line; i++) {
                    if (b[i] < '0' || b[i] > '9' || k > 99999999u) return -1;
                    k = k * 10 + (size_t)(b[i] - '0');
                }
        } else if (b[0] != '+' && b[0] != ':') {
            return -1;
        }
        used = line;
        if (b[0] == '$' && b[1] != '-') {
            used += k + 2;
            if (used > sizeof c->sn_buf) return -1;
            if (used > c->sn_off) return 0;
            /* the role word: the first value inside ROLE's array */
            if (c->sn_vals == authv + 1) c->sn_master = k == 6 && memcmp(e + 1, "master", 6) == 0;
        }
        if (c->sn_vals == authv && b[0] != '*') return -1; /* ROLE's reply is an array */
        c->sn_skip--;
        if (b[0] == '*') c->sn_skip += k;
        c->sn_vals++;
        memmove(b, b + used, c->sn_off - used);
        c->sn_off -= used;
    }
    return c->sn_master && c->sn_off == 0 ? 1 : -1;
}

/* The connect hook of a Sentinel-led connection: one step as far as the
 * sockets allow. 1 connected to the primary, 0 in progress, RLOCK_IO_ERROR. */
static int rlock__posix_sentinel_connect(rlock_posix_conn *c) {
    const rlock_posix_sentinel *sn = c->sentinel;
    for (;;) {
        long n;
        int r, spent;
        if (c->phase == RLOCK__SN_NONE) { /* a fresh connect: the first Sentinel */
            c->sn_at = c->sn_first < sn->n ? c->sn_first : 0;
            c->sn_tried = 0;
            snprintf(c->err, sizeof c->err, "no Sentinel answered");
            if (!rlock__sn_ask(c)) return RLOCK_IO_ERROR;
            continue;
        }
        /* the share first: when it ran out with the connect's bound (the
         * last Sentinel's), the bound is what ran out */
        spent = rlock__posix_step_left(c) == 0;
        if (spent && rlock__posix_connect_left(c) == 0) {
            int asking = c->phase <= RLOCK__SN_ASK_READ;
            if (asking) rlock__sn_why(c->err, sizeof c->err, sn->host[c->sn_at], sn->port[c->sn_at], "timed out");
            else rlock__posix_fit(c->err, sizeof c->err, "connect ", c->host, c->port, ": timed out");
            rlock__posix_drop(c);
            c->phase = RLOCK__SN_NONE;
            return RLOCK_IO_ERROR;
        }
        if (spent) { /* this Sentinel's share ran out */
            char why[sizeof c->err];
            if (c->phase <= RLOCK__SN_ASK_READ) snprintf(why, sizeof why, "did not answer in time");
            else rlock__posix_fit(why, sizeof why - RLOCK__SN_WRAP, "names ", c->host, c->port, ", no answer in time");
            rlock__sn_next(c, why);
            if (c->phase == RLOCK__SN_NONE) return RLOCK_IO_ERROR; /* no Sentinel left */
            continue;
        }
        switch (c->phase) {
        case RLOCK__SN_ASK_CONN:
        case RLOCK__SN_PRIM_CONN:
            r = rlock__posix_progress(c);
            c->connecting = 1; /* until the primary said ROLE master */
            if (r == 0) return RLOCK_IO_WOULD_BLOCK;
            if (r < 0) { rlock__sn_next(c, c->err); break; }
            c->phase++; /* to its _SEND */
            break;
        case RLOCK__SN_ASK_SEND:
        case RLOCK__SN_PRIM_SEND:
            n = rlock_posix_fd_send(c->fd, c->sn_buf + c->sn_off, c->sn_len - c->sn_off);
            if (n == RLOCK_IO_WOULD_BLOCK) return RLOCK_IO_WOULD_BLOCK;
            if (n < 0) { rlock__sn_next(c, strerror(errno)); break; }
            c->sn_off += (size_t)n;
            if (c->sn_off == c->sn_len) { c->phase++; c->sn_off = 0; } /* to its _READ */
            break;
        case RLOCK__SN_ASK_READ:
        case RLOCK__SN_PRIM_READ:
            n = rlock_posix_fd_recv(c->fd, c->sn_buf + c->sn_off, sizeof c->sn_buf - c->sn_off);
            if (n == RLOCK_IO_WOULD_BLOCK) return RLOCK_IO_WOULD_BLOCK;
            if (n > 0) c->sn_off += (size_t)n;
            r = n > 0 ? (c->phase == RLOCK__SN_ASK_READ ? rlock__sn_answer(c) : rlock__sn_role(c)) : -1;
            if (r == 0 && c->sn_off < sizeof c->sn_buf) break;
            if (r == 0) snprintf(c->err, sizeof c->err, "answer longer than %u bytes", (unsigned)sizeof c->sn_buf);
            if (n < 0) snprintf(c->err, sizeof c->err, "closed the connection before answering");
            if (r == -2) { rlock__sn_next(c, NULL); break; } /* (c->err says it all: a refused AUTH, ...) */
            if (c->phase == RLOCK__SN_ASK_READ) {
                if (r != 1) { rlock__sn_next(c, c->err); break; }
                if (c->sn_hint[0] && c->sn_tried + 1 < sn->n &&
                    rlock__posix_now_ms() - c->sn_hint_at < RLOCK_POSIX_SENTINEL_LAG_MS &&
                    (c->port != c->sn_hint_port || strcmp(c->host, c->sn_hint) != 0)) { /* a Sentinel lagging behind */
                    char why[sizeof c->err], not_at[sizeof c->err]; /* (two hosts: room for "names " the first) */
                    rlock__posix_fit(not_at, sizeof c->err - RLOCK__SN_WRAP - 12u - RLOCK__POSIX_HOST_MIN, ", not ",
                                     c->sn_hint, c->sn_hint_port, " (+switch-master)");
                    rlock__posix_fit(why, sizeof why - RLOCK__SN_WRAP, "names ", c->host, c->port, not_at);
                    rlock__sn_next(c, why);
                    break;
                }
                r = rlock__sn_move(c, rlock__sn_start_primary); /* the Sentinel's socket for the primary's */
                if (r < 0) { rlock__sn_next(c, c->err); break; }
                c->sn_len = c->sn_off = c->sn_vals = 0;
                c->sn_skip = sn->password ? 2u : 1u; /* [AUTH's reply,] ROLE's */
                c->sn_master = 0;
                rlock__sn_role_req(c->sn_buf, sizeof c->sn_buf, &c->sn_len, sn);
                if (c->sn_len > sizeof c->sn_buf) { /* (init refuses that) */
                    snprintf(c->err, sizeof c->err, "credentials too long");
                    rlock__posix_drop(c);
                    c->phase = RLOCK__SN_NONE;
                    return RLOCK_IO_ERROR;
                }
                c->phase = r == 1 ? RLOCK__SN_PRIM_SEND : RLOCK__SN_PRIM_CONN;
                c->connecting = 1;
                break;
            }
            if (r == 1) { /* (this Sentinel is asked first next time) */
                c->sn_first = c->sn_at;
                c->auth_refused = 0;
                c->phase = RLOCK__SN_NONE;
                c->connecting = 0;
                c->err[0] = '\0';
                return 1;
            }
            if (n > 0 && r < 0)
                rlock__posix_fit(c->err, sizeof c->err - RLOCK__SN_WRAP, "names ", c->host, c->port, ", not a primary (ROLE)");
            /* a stale or lying Sentinel (a replica, a dead primary): the next one */
            rlock__sn_next(c, c->err);
            break;
        default:
            c->phase = RLOCK__SN_NONE;
            return RLOCK_IO_ERROR;
        }
        if (c->phase == RLOCK__SN_NONE) return RLOCK_IO_ERROR; /* no Sentinel left */
    }
}

/* A Sentinel's name as a numeric address in out ("" when it does not
 * resolve): the first IPv4 address, else the first IPv6 one. getaddrinfo
 * may block on DNS, so this runs once, in rlock_posix_init_sentinel -
 * never in the non-blocking connect or watch. */
static void rlock__sn_resolve(const char *host, char *out, size_t cap) {
    struct addrinfo hints, *res = NULL, *ai, *pick = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    out[0] = '\0';
    if (getaddrinfo(host, NULL, &hints, &res) != 0) return;
    for (ai = res; ai; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || (ai->ai_family == AF_INET6 && !pick)) {
            pick = ai;
            if (ai->ai_family == AF_INET) break;
        }
    if (!pick || getnameinfo(pick->ai_addr, pick->ai_addrlen, out, (socklen_t)cap, NULL, 0, NI_NUMERICHOST) != 0)
        out[0] = '\0';
    freeaddrinfo(res);
}

/* The watch's request: [AUTH] SENTINEL GET-MASTER-ADDR-BY-NAME name,
 * SUBSCRIBE +switch-master (rlock_posix_sentinel_watch.tx); a connect's
 * [AUTH] question is shorter, in a buffer as large. */
#define RLOCK__SW_TX 1024u
typedef char rlock__sn_buf_fits[sizeof(((rlock_posix_conn *)0)->sn_buf) >= RLOCK__SW_TX ? 1 : -1];

/* The watch's request with the master name's first m bytes into out[cap]:
 * its bytes, more than cap when it does not fit (rlock__sn_put). */
static size_t rlock__sw_request(unsigned char *out, size_t cap, const rlock_posix_sentinel *sn, size_t m) {
    const char *sub[2] = { "SUBSCRIBE", "+switch-master" };
    size_t len = 0;
    rlock__sn_question(out, cap, &len, sn, m);
    rlock__sn_put(out, cap, &len, 2, sub, NULL);
    return len;
}

/* a and b the same name (ASCII letters in either case: DNS names). */
static int rlock__sn_same(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (x != y) return 0;
    }
    return *a == *b;
}

/* 1 when sn cannot be used, c->err saying why (the limit it breaks). */
static int rlock__sn_refused(rlock_posix_conn *c, const rlock_posix_sentinel *sn) {
    char pre[40];
    unsigned char tx[sizeof c->sn_buf]; /* (at least RLOCK__SW_TX) */
    size_t i, j, m, n;
    if (!sn || sn->n == 0) {
        snprintf(c->err, sizeof c->err, "Sentinel: no Sentinels given (%s)", sn ? "n is 0" : "NULL");
        return 1;
    }
    if (sn->n > RLOCK_POSIX_MAX_SENTINELS) {
        snprintf(c->err, sizeof c->err, "Sentinel: %lu Sentinels given, at most %d (RLOCK_POSIX_MAX_SENTINELS)",
                 (unsigned long)sn->n, RLOCK_POSIX_MAX_SENTINELS);
        return 1;
    }
    for (i = 0; i < sn->n; i++) {
        snprintf(pre, sizeof pre, "Sentinel host[%lu] ", (unsigned long)i);
        if (!sn->host[i] || !sn->host[i][0]) {
            snprintf(c->err, sizeof c->err, "Sentinel host[%lu]: no host name", (unsigned long)i);
            return 1;
        }
        if (strlen(sn->host[i]) >= sizeof c->host) {
            rlock__posix_text(c->err, sizeof c->err, "Sentinel host[%lu]: the name has %lu bytes, at most %lu",
                              (unsigned long)i, (unsigned long)strlen(sn->host[i]), (unsigned long)sizeof c->host - 1);
            return 1;
        }
        if (sn->port[i] < 1 || sn->port[i] > 65535) {
            char w[64];
            snprintf(w, sizeof w, ": port %d is not 1..65535", sn->port[i]);
            rlock__posix_fit(c->err, sizeof c->err, pre, sn->host[i], -1, w);
            return 1;
        }
        for (j = 0; j < i; j++)
            if (sn->port[j] == sn->port[i] && rlock__sn_same(sn->host[j], sn->host[i])) {
                char w[64];
                snprintf(w, sizeof w, ": the same Sentinel as host[%lu]", (unsigned long)j);
                rlock__posix_fit(c->err, sizeof c->err, pre, sn->host[i], sn->port[i], w);
                return 1;
            }
    }
    if (!sn->master || !sn->master[0]) {
        snprintf(c->err, sizeof c->err, "Sentinel: no master name");
        return 1;
    }
    /* what rlock sends is written here, by the same code, into a scratch
     * buffer as large as its own: the watch's request (RLOCK__SW_TX bytes;
     * a connect's question is its first part) and [AUTH] ROLE to the
     * primary (sn_buf). What does not fit is refused here, not at the
     * first failover missed; the longest name that fits is found the
     * same way. */
    m = strlen(sn->master);
    if (rlock__sw_request(tx, RLOCK__SW_TX, sn, m) > RLOCK__SW_TX) {
        size_t lo = 0, hi = m; /* hi does not fit; lo does (0: no name fits) */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (rlock__sw_request(tx, RLOCK__SW_TX, sn, mid) <= RLOCK__SW_TX) lo = mid;
            else hi = mid;
        }
        if (lo == 0) {
            n = 0;
            rlock__sn_auth(tx, RLOCK__SW_TX, &n, sn->sentinel_username, sn->sentinel_password);
            snprintf(c->err, sizeof c->err, "Sentinel credentials too long: AUTH takes %lu bytes of the watch's %u",
                     (unsigned long)n, RLOCK__SW_TX);
        } else
            snprintf(c->err, sizeof c->err, "Sentinel: the master name has %lu bytes, at most %lu%s", (unsigned long)m,
                     (unsigned long)lo, sn->sentinel_password ? " with these Sentinel credentials" : "");
        return 1;
    }
    n = 0;
    rlock__sn_role_req(tx, sizeof tx, &n, sn);
    if (n > sizeof tx) {
        snprintf(c->err, sizeof c->err, "Sentinel: username and password too long: AUTH and ROLE take %lu bytes, at most %lu",
                 (unsigned long)n, (unsigned long)sizeof tx);
        return 1;
    }
    return 0;
}

/* Prepare c to reach the primary that the Sentinels in sn call
 * sn->master: found again at every (re)connect (see above). sn must stay
 * where it is while c is in use. The Sentinels' names are resolved here,
 * once (blocking on DNS; a name that does not resolve is skipped at each
 * connect: init again to resolve again). 0 ok; -1 bad arguments, checked
 * before anything is resolved or sent, and c->err (c not NULL) says which:
 * no Sentinels or more than RLOCK_POSIX_MAX_SENTINELS, a host NULL, empty
 * or of 256 bytes or more, a port not 1..65535, a Sentinel given twice
 * (the same name, in any case, and port), no master name, or one longer
 * than the watch's request carries - 928 bytes, less the AUTH with
 * sentinel_password - or credentials of the primary longer than the
 * 1024-byte buffer takes with ROLE (c is left as it was, but for err). */
RLOCK__ADAPTER_FN int rlock_posix_init_sentinel(rlock_posix_conn *c, const rlock_posix_sentinel *sn,
                                                uint32_t connect_timeout_ms) {
    size_t i;
    if (!c || rlock__sn_refused(c, sn)) return -1;
    rlock__posix_fill(c, connect_timeout_ms);
    for (i = 0; i < sn->n; i++) rlock__sn_resolve(sn->host[i], c->sn_ip[i], sizeof c->sn_ip[i]);
    snprintf(c->host, sizeof c->host, "sentinel:%.200s", sn->master); /* for error texts until found */
    c->sentinel = sn;
    c->start = rlock__posix_sentinel_connect;
    return 0;
}


/* ---- Sentinel: following +switch-master ---------------------------------
 * A failover is announced by the Sentinels (+switch-master) seconds before
 * the old primary is demoted: until then it still takes writes from the
 * clients connected to it, READONLY never comes, and a client that waits
 * for it locks on a primary nobody else uses. rlock_posix_sentinel_watch
 * keeps one connection to a Sentinel (the first of c's that answers, then
 * the next when it fails, or has not confirmed the subscription within c's
 * connect timeout) subscribed to +switch-master, after asking it
 * where the primary is (a failover missed while no Sentinel was watched is
 * seen then). When a notice names c's primary (or the answer is not where
 * c is connected) it marks c (c->switched): c's next send/recv drops the
 * connection and rlock's reconnect asks the Sentinels again; a connect of
 * c under way (not yet heading for the new address) starts again.
 * Non-blocking, for event loops like rlock_client_interest/_step: watch the
 * descriptor _interest gives (or call _step when its timeout passes), call
 * _step, and after it returned 1 call rlock_client_step, which moves the
 * client's requests over. Nothing in it blocks (it connects to the
 * addresses rlock_posix_init_sentinel resolved; with sentinel_password it
 * says AUTH first). The blocking calls do not drive it: a program using
 * only them follows on READONLY and dropped connections (the rlock command
 * drives it while it waits and while COMMAND runs). */
#ifndef RLOCK_POSIX_SENTINEL_RETRY_MS
#define RLOCK_POSIX_SENTINEL_RETRY_MS 250u /* before trying the next Sentinel */
#endif
#ifndef RLOCK_POSIX_SENTINEL_PING_MS
/* a PING this often on the subscribed connection: a Sentinel that stopped
 * answering (hung, stopped, a half-open link) is left for the next when
 * its PONG is not back within the connect timeout */
#define RLOCK_POSIX_SENTINEL_PING_MS 5000u
#endif
enum { RLOCK__SW_DOWN = 0, RLOCK__SW_CONNECTING, RLOCK__SW_UP };
typedef struct rlock_posix_sentinel_watch {
    rlock_posix_conn *c;           /* the data connection it re-points */
    unsigned long switches;        /* times it marked c: notices naming c's primary, or a moved answer */
    int subscribed;                /* 1 while a Sentinel confirmed the subscription */
    char err[128];                 /* why the last Sentinel was left ("" when none) */
    /* --- private --- */
    rlock_posix_conn q;            /* to the Sentinel watched now */
    size_t at;                     /* which of c->sentinel's Sentinels */
    int state;                     /* RLOCK__SW_* */
    uint64_t retry_at;             /* DOWN: not before this (monotonic ms) */
    uint64_t ping_at, pong_by;     /* subscribed: the next PING; its answer's deadline (0: none due) */
    size_t tx_len, tx_off, have;
    unsigned char tx[RLOCK__SW_TX]; /* [AUTH] SENTINEL GET-MASTER-ADDR-BY-NAME, SUBSCRIBE */
    /* a reply or message, read whole: the longest it must understand is a
     * +switch-master for c's master - one bulk string with its name (< 1024:
     * the question in tx holds it), two host names of up to 255 bytes
     * (announce-hostnames: a DNS name may have 253), the ports and the
     * framing (< 96). A longer one (another master's) is a protocol error:
     * the next Sentinel is asked where c's primary is. */
    unsigned char buf[1024 + 2 * 255 + 96];
} rlock_posix_sentinel_watch;

/* Watch the Sentinels of c (made by rlock_posix_init_sentinel; c must stay
 * where it is). Does not connect. 0 ok, -1 bad arguments. */
RLOCK__ADAPTER_FN int rlock_posix_sentinel_watch_init(rlock_posix_sentinel_watch *w, rlock_posix_conn *c) {
    if (!w || !c || !c->sentinel) return -1;
    memset(w, 0, sizeof *w);
    w->q.fd = -1;
    w->c = c;
    return 0;
}

static void rlock__sw_fail(rlock_posix_sentinel_watch *w, const char *why) {
    const rlock_posix_sentinel *sn = w->c->sentinel;
    rlock__sn_why(w->err, sizeof w->err, sn->host[w->at], sn->port[w->at], why);
    rlock__posix_drop(&w->q);
    w->state = RLOCK__SW_DOWN;
    w->subscribed = 0;
    w->pong_by = 0;
    w->at = (w->at + 1) % sn->n;
    w->retry_at = rlock__posix_now_ms() + RLOCK_POSIX_SENTINEL_RETRY_MS;
}

/* The primary is at host:port now: mark c unless it is connected there. */
static int rlock__sw_moved(rlock_posix_sentinel_watch *w, const rlock_resp_value *host, const rlock_resp_value *port) {
    rlock_posix_conn *c = w->c;
    char h[sizeof c->host]; /* a name of up to 255 (announce-hostnames), not only an IP */
    int p = 0;
    size_t k;
    if (host->len == 0 || host->len >= sizeof h || port->len == 0 || port->len > 5) return 0;
    memcpy(h, host->str, host->len);
    h[host->len] = '\0';
    for (k = 0; k < port->len; k++) {
        if (port->str[k] < '0' || port->str[k] > '9') return 0;
        p = p * 10 + (port->str[k] - '0');
    }
    if (p < 1 || p > 65535) return 0; /* no address: nothing moved */
    memcpy(c->sn_hint, h, host->len + 1); /* (the connect skips Sentinels that lag behind it) */
    c->sn_hint_port = p;
    c->sn_hint_at = rlock__posix_now_ms();
    /* not connected (the next connect asks anew), or there already - a
     * connect under way only once it goes there (while it asks a Sentinel,
     * the answer may name the old primary, which still says ROLE master) */
    if (c->fd < 0 || ((!c->connecting || c->phase >= RLOCK__SN_PRIM_CONN) && p == c->port && strcmp(h, c->host) == 0))
        return 0;
    c->switched = 1;
    w->switches++;
    return 1;
}

/* One reply or message from the Sentinel: 1 when c was marked. */
static int rlock__sw_frame(rlock_posix_sentinel_watch *w, const rlock_reply *r) {
    const char *master = w->c->sentinel->master;
    size_t ml = strlen(master);
    if (r->v.type == RLOCK_RESP_ERROR) { /* not a Sentinel, or it wants AUTH: try the next */
        char why[sizeof w->err - RLOCK__SN_WRAP]; /* (room for "Sentinel HOST:PORT: ") */
        snprintf(why, sizeof why, "%.*s", (int)(r->v.len < sizeof why ? r->v.len : sizeof why - 1), r->v.str);
        rlock__sw_fail(w, why);
        return 0;
    }
    if ((r->v.type != RLOCK_RESP_ARRAY && r->v.type != RLOCK_RESP_PUSH) || r->count < 2) return 0;
    if (r->count == 2 && r->elem[0].len == 4 && memcmp(r->elem[0].str, "pong", 4) == 0) { /* PING's: alive */
        w->pong_by = 0;
        w->ping_at = rlock__posix_now_ms() + RLOCK_POSIX_SENTINEL_PING_MS;
        return 0;
    }
    if (r->count == 2 && r->elem[0].type == RLOCK_RESP_BULK && r->elem[1].type == RLOCK_RESP_BULK)
        return rlock__sw_moved(w, &r->elem[0], &r->elem[1]); /* GET-MASTER-ADDR-BY-NAME */
    if (r->count == 3 && r->elem[0].len == 9 && memcmp(r->elem[0].str, "subscribe", 9) == 0) {
        w->subscribed = 1;
        w->ping_at = rlock__posix_now_ms() + RLOCK_POSIX_SENTINEL_PING_MS;
        return 0;
    }
    if (r->count == 3 && r->elem[0].len == 7 && memcmp(r->elem[0].str, "message", 7) == 0 &&
        r->elem[2].type == RLOCK_RESP_BULK) {
        /* "<name> <old-ip> <old-port> <new-ip> <new-port>" */
        const char *m = r->elem[2].str, *f[5];
        size_t len = r->elem[2].len, i, n = 0, fl[5];
        for (i = 0; i < len && n < 5; n++) {
            f[n] = m + i;
            while (i < len && m[i] != ' ') i++;
            fl[n] = (size_t)(m + i - f[n]);
            while (i < len && m[i] == ' ') i++;
        }
        if (n == 5 && fl[0] == ml && memcmp(f[0], master, ml) == 0) {
            rlock_resp_value h, p;
            memset(&h, 0, sizeof h);
            memset(&p, 0, sizeof p);
            h.str = f[3]; h.len = fl[3];
            p.str = f[4]; p.len = fl[4];
            return rlock__sw_moved(w, &h, &p);
        }
    }
    return 0;
}

/* Make progress without blocking: (re)connect to a Sentinel, ask, subscribe,
 * read notices. 1 when it marked c in this step (call rlock_client_step),
 * else 0; a failed Sentinel is left for the next (w->err says why). */
RLOCK__ADAPTER_FN int rlock_posix_sentinel_watch_step(rlock_posix_sentinel_watch *w) {
    const rlock_posix_sentinel *sn;
    int r, marked = 0;
    if (!w || !w->c || !w->c->sentinel) return 0;
    sn = w->c->sentinel;
    if (w->state == RLOCK__SW_DOWN) {
        size_t n;
        if (rlock__posix_now_ms() < w->retry_at) return 0;
        if (rlock_posix_init_tcp(&w->q, w->c->sn_ip[w->at], sn->port[w->at], w->c->connect_timeout_ms) != 0) {
            rlock__sw_fail(w, w->c->sn_ip[w->at][0] ? "bad address" : "the name did not resolve");
            return 0;
        }
        /* (AUTH first, when set: its +OK is skipped, an error leaves this Sentinel) */
        n = rlock__sw_request(w->tx, sizeof w->tx, sn, strlen(sn->master));
        if (n > sizeof w->tx) { rlock__sw_fail(w, "credentials or master name too long"); return 0; } /* (init refuses that) */
        w->tx_len = n;
        w->tx_off = w->have = 0;
        w->state = RLOCK__SW_CONNECTING;
    }
    if (w->state == RLOCK__SW_CONNECTING) {
        r = rlock__posix_connect(&w->q);
        if (r == 0) return 0;
        if (r < 0) { rlock__sw_fail(w, w->q.err); return 0; }
        w->state = RLOCK__SW_UP;
    }
    if (!w->subscribed && rlock__posix_connect_left(&w->q) == 0) { /* a Sentinel that does not answer */
        rlock__sw_fail(w, "did not answer in time");
        return 0;
    }
    if (w->subscribed && w->pong_by && rlock__posix_now_ms() >= w->pong_by) {
        rlock__sw_fail(w, "did not answer PING in time");
        return 0;
    }
    if (w->subscribed && !w->pong_by && rlock__posix_now_ms() >= w->ping_at && w->tx_off == w->tx_len) {
        memcpy(w->tx, "*1\r\n$4\r\nPING\r\n", 14);
        w->tx_len = 14;
        w->tx_off = 0;
        w->pong_by = rlock__posix_now_ms() + rlock__posix_budget(&w->q);
    }
    while (w->tx_off < w->tx_len) {
        long n = rlock_posix_fd_send(w->q.fd, w->tx + w->tx_off, w->tx_len - w->tx_off);
        if (n == RLOCK_IO_WOULD_BLOCK) return 0;
        if (n < 0) { rlock__sw_fail(w, strerror(errno)); return 0; }
        w->tx_off += (size_t)n;
    }
    for (;;) {
        rlock_reply rep;
        long got = rlock_resp_parse(w->buf, w->have, sizeof w->buf, &rep), n;
        if (got < 0) { rlock__sw_fail(w, "protocol error"); return marked; }
        if (got > 0) {
            marked |= rlock__sw_frame(w, &rep);
            if (w->state != RLOCK__SW_UP) return marked;
            memmove(w->buf, w->buf + got, w->have - (size_t)got);
            w->have -= (size_t)got;
            continue;
        }
        n = rlock_posix_fd_recv(w->q.fd, w->buf + w->have, sizeof w->buf - w->have);
        if (n == RLOCK_IO_WOULD_BLOCK) return marked;
        if (n < 0) { rlock__sw_fail(w, n == RLOCK_IO_CLOSED ? "closed the connection" : strerror(errno)); return marked; }
        w->have += (size_t)n;
    }
}

/* What to watch: returns RLOCK_WANT_* for *fd (0 with *fd -1: nothing to
 * watch, step after *timeout_ms; UINT32_MAX: no deadline). */
RLOCK__ADAPTER_FN int rlock_posix_sentinel_watch_interest(const rlock_posix_sentinel_watch *w, int *fd,
                                                         uint32_t *timeout_ms) {
    uint64_t now = rlock__posix_now_ms();
    *fd = -1;
    *timeout_ms = UINT32_MAX;
    if (!w || !w->c) return 0;
    if (w->state == RLOCK__SW_DOWN) {
        *timeout_ms = now >= w->retry_at ? 0 : (uint32_t)(w->retry_at - now);
        return 0;
    }
    *fd = w->q.fd;
    /* until the subscription is confirmed, within the connect bound; then
     * the next PING, or its answer's deadline */
    if (!w->subscribed) *timeout_ms = (uint32_t)rlock__posix_connect_left(&w->q);
    else {
        uint64_t at = w->pong_by ? w->pong_by : w->ping_at;
        *timeout_ms = at > now ? (uint32_t)(at - now) : 0;
    }
    if (w->state == RLOCK__SW_CONNECTING) return RLOCK_WANT_WRITE;
    return w->tx_off < w->tx_len ? RLOCK_WANT_WRITE : RLOCK_WANT_READ;
}

/* Close the Sentinel connection (idempotent); c is left as it is. */
RLOCK__ADAPTER_FN void rlock_posix_sentinel_watch_close(rlock_posix_sentinel_watch *w) {
    if (!w) return;
    rlock__posix_drop(&w->q);
    w->state = RLOCK__SW_DOWN;
    w->subscribed = 0;
    w->pong_by = 0;
}

#endif /* RLOCK_IMPLEMENTATION: Sentinel */

#ifndef RLOCK_NO_CLUSTER
/* The connect hook of rlock_cluster (rlock.h section 7): user is the
 * caller's array of RLOCK_CLUSTER_MAX_PRIMARIES rlock_posix_conn; primary
 * i gets conns[i], TCP to host:port (default connect timeout). */
RLOCK__ADAPTER_FN int rlock_posix_cluster_connect(void *user, size_t i, const char *host, int port,
                                                  rlock_transport *out) {
    rlock_posix_conn *conns = (rlock_posix_conn *)user;
    if (!conns || !out || i >= RLOCK_CLUSTER_MAX_PRIMARIES || rlock_posix_init_tcp(&conns[i], host, port, 0) != 0)
        return -1;
    *out = conns[i].tr;
    return 0;
}
#endif

/* Close the socket if open (also a connect in progress). Idempotent. */
RLOCK__ADAPTER_FN void rlock_posix_close(rlock_posix_conn *c) {
    if (c) rlock__posix_drop(c);
}

#ifdef __cplusplus
}
#endif
#endif /* RLOCK_POSIX_H */
