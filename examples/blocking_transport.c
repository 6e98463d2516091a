/* blocking_transport.c - a transport of your own, written from the contract
 * in rlock.h ("THE TRANSPORT CONTRACT") alone: a plain blocking TCP socket
 * whose send/recv time out after a few milliseconds (SO_SNDTIMEO /
 * SO_RCVTIMEO), the way a simple RTOS or legacy socket API behaves. No
 * adapter code is used. The program takes one lock, then releases it.
 *
 * What the contract asks, and how this answers it:
 *   send/recv  bytes moved; a timeout or EINTR is "would block" (0); recv's
 *              EOF (0 from the system) is RLOCK_IO_CLOSED, not 0.
 *   connect    blocking, bounded by its own timeout (SO_SNDTIMEO bounds
 *              connect() on Linux); 1 when connected.
 *   close      drops the socket (rlock calls it after errors and timeouts).
 *   idle       rlock's health check of an idle connection must not block, so
 *              this one peeks without waiting (without it rlock would call
 *              recv(), which here blocks for the recv timeout).
 *   error      the reason of the last failure, for rlock_node_error().
 *   no wait/fd: the blocking calls then rely on send/recv blocking (bounded)
 *              themselves, as here.
 *
 * Run: make build/blocking_transport && build/blocking_transport [PORT [KEY]]
 * against a redis-server on 127.0.0.1 (default port 6379, key example:lock). */
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it sets the POSIX feature macros */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define IO_TIMEOUT_MS 20        /* each send/recv blocks at most this long */
#define CONNECT_TIMEOUT_MS 1000

typedef struct bsock {
    int fd;                     /* -1: not connected */
    struct sockaddr_in addr;
    char err[128];
} bsock;

static void set_timeout(int fd, int opt, int ms) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    (void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void fail(bsock *b, const char *what, int err) {
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &b->addr.sin_addr, ip, sizeof ip);
    snprintf(b->err, sizeof b->err, "%s %s:%d: %s", what, ip, ntohs(b->addr.sin_port), strerror(err));
}

static void b_close(void *ctx) {
    bsock *b = (bsock *)ctx;
    if (b->fd >= 0) close(b->fd);
    b->fd = -1;
}

static int b_connect(void *ctx) {
    bsock *b = (bsock *)ctx;
    if (b->fd >= 0) return 1;
    if ((b->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) {
        fail(b, "socket", errno);
        return RLOCK_IO_ERROR;
    }
    set_timeout(b->fd, SO_SNDTIMEO, CONNECT_TIMEOUT_MS);
    if (connect(b->fd, (const struct sockaddr *)&b->addr, sizeof b->addr) != 0) {
        fail(b, "connect", errno == EINPROGRESS ? ETIMEDOUT : errno); /* EINPROGRESS: the timeout */
        b_close(b);
        return RLOCK_IO_ERROR;
    }
    set_timeout(b->fd, SO_SNDTIMEO, IO_TIMEOUT_MS);
    set_timeout(b->fd, SO_RCVTIMEO, IO_TIMEOUT_MS);
    b->err[0] = '\0';
    return 1;
}

static long b_send(void *ctx, const unsigned char *buf, size_t len) {
    bsock *b = (bsock *)ctx;
    ssize_t n = send(b->fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) return (long)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return RLOCK_IO_WOULD_BLOCK;
    fail(b, "send to", errno);
    return RLOCK_IO_ERROR;
}

static long b_recv(void *ctx, unsigned char *buf, size_t len) {
    bsock *b = (bsock *)ctx;
    ssize_t n = recv(b->fd, buf, len, 0);
    if (n > 0) return (long)n;
    if (n == 0) {
        fail(b, "recv from", ECONNRESET);
        return RLOCK_IO_CLOSED; /* EOF is not "would block" */
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return RLOCK_IO_WOULD_BLOCK;
    fail(b, "recv from", errno);
    return RLOCK_IO_ERROR;
}

/* Healthy when nothing is waiting to be read; must not consume bytes. */
static int b_idle(void *ctx) {
    bsock *b = (bsock *)ctx;
    unsigned char c;
    ssize_t n = recv(b->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 1;
    if (n == 0) return RLOCK_IO_CLOSED;  /* the server closed it (restart, idle timeout) */
    return RLOCK_IO_ERROR;               /* an error, or bytes nobody asked for */
}

static const char *b_error(void *ctx) { return ((bsock *)ctx)->err; }

int main(int argc, char **argv) {
    bsock b;
    rlock_transport tr;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    rlock_status st;
    const char *key = argc > 2 ? argv[2] : "example:lock";
    int port = argc > 1 ? atoi(argv[1]) : 6379;
    if (port < 1 || port > 65535) {
        fprintf(stderr, "usage: %s [PORT [KEY]]\n", argv[0]);
        return 2;
    }
    memset(&b, 0, sizeof b);
    b.fd = -1;
    b.addr.sin_family = AF_INET;
    b.addr.sin_port = htons((unsigned short)port);
    b.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    memset(&tr, 0, sizeof tr); /* hooks left NULL are optional: wait, fd, wait_many */
    tr.ctx = &b;
    tr.send = b_send;
    tr.recv = b_recv;
    tr.connect = b_connect;
    tr.close = b_close;
    tr.idle = b_idle;
    tr.error = b_error;
    if (rlock_node_init(&node, &tr) != RLOCK_OK || rlock_client_init(&cl, &node, 1, NULL) != RLOCK_OK ||
        rlock_lock_init(&lk, &cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK) {
        fprintf(stderr, "bad key '%s'\n", key);
        return 2;
    }
    st = rlock_acquire(&lk, 10000, 5000); /* lease 10 s, wait up to 5 s */
    if (st == RLOCK_OK) {
        printf("acquired %s (%lld ms of the lease left)\n", key, rlock_validity_ms(&lk));
        if ((st = rlock_release(&lk)) == RLOCK_OK) printf("released %s\n", key);
    }
    if (st != RLOCK_OK) printf("failed: %s: %s\n", rlock_status_str(st), rlock_node_error(&node));
    rlock_client_close(&cl); /* calls b_close */
    return st == RLOCK_OK ? 0 : 1;
}
