/* epoll_loop.c - three locks at once over one client, from an epoll loop.
 *
 * Shows how a loop that keeps registrations (epoll, kqueue, an RTOS select
 * set) follows rlock: after each rlock_client_step, rlock_client_interest
 * lists the connections that need events now; a connection that is gone from
 * the list, or whose descriptor or `gen` changed (rlock reconnected it, maybe
 * onto the same fd number), is unregistered and registered again; changed
 * events are modified. The timeout it returns bounds epoll_wait.
 * The shared part (set-up, printing, releasing) is in three_locks.h.
 *
 * Run: make build/epoll_loop && build/epoll_loop [PORT [KEY1 KEY2 KEY3]]
 * against a redis-server on 127.0.0.1 (default port 6379); hold one of the
 * keys meanwhile, e.g. `build/rlock example:b sleep 3`, to see it wait.
 * Linux only (epoll). */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#include "three_locks.h"
#include <sys/epoll.h>

#define MAX_CONNS (2 * RLOCK_MAX_NODES) /* every node and every subscriber */

/* What is registered with epoll, per connection. */
typedef struct watch {
    const void *conn; /* rlock_interest.conn: which connection */
    int fd, events;
    unsigned long gen;
} watch;

static uint32_t epoll_events(int want) {
    return ((want & RLOCK_WANT_READ) ? EPOLLIN : 0u) | ((want & RLOCK_WANT_WRITE) ? EPOLLOUT : 0u);
}

/* Make the registrations match it[0..n). Removals first: a connection rlock
 * closed may have left its fd number to another one registered below. The
 * kernel already forgot a closed fd, so EPOLL_CTL_DEL may fail: harmless. */
static void sync_watches(demo *d, int ep, watch *w, size_t *nw, const rlock_interest *it, size_t n) {
    size_t i, k;
    struct epoll_event ev;
    for (k = 0; k < *nw;) {
        for (i = 0; i < n && it[i].conn != w[k].conn; i++) { }
        if (i < n && it[i].fd == w[k].fd && it[i].gen == w[k].gen) { k++; continue; }
        (void)epoll_ctl(ep, EPOLL_CTL_DEL, w[k].fd, &ev);
        w[k] = w[--*nw];
    }
    for (i = 0; i < n; i++) {
        if (it[i].fd < 0) continue; /* not connected yet: the timeout is 0, step at once */
        for (k = 0; k < *nw && w[k].conn != it[i].conn; k++) { }
        memset(&ev, 0, sizeof ev);
        ev.events = epoll_events(it[i].events);
        ev.data.fd = it[i].fd;
        if (k == *nw) {
            if (epoll_ctl(ep, EPOLL_CTL_ADD, it[i].fd, &ev) != 0) { perror("epoll_ctl ADD"); continue; }
            w[k].conn = it[i].conn;
            w[k].fd = it[i].fd;
            w[k].gen = it[i].gen;
            w[k].events = it[i].events;
            ++*nw;
            demo_conn(d, it[i].fd, it[i].gen);
        } else if (w[k].events != it[i].events) {
            if (epoll_ctl(ep, EPOLL_CTL_MOD, it[i].fd, &ev) != 0) perror("epoll_ctl MOD");
            w[k].events = it[i].events;
        }
    }
}

int main(int argc, char **argv) {
    demo d;
    watch w[MAX_CONNS];
    size_t nw = 0;
    int ep, rc;
    if (demo_init(&d, argc, argv) != 0) return 2;
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        perror("epoll_create1");
        (void)demo_close(&d);
        return 1;
    }
    while (!demo_progress(&d)) {
        rlock_interest it[MAX_CONNS];
        struct epoll_event evs[MAX_CONNS];
        uint32_t timeout_ms;
        size_t n = rlock_client_interest(&d.cl, it, MAX_CONNS, &timeout_ms);
        if (n > MAX_CONNS) n = MAX_CONNS; /* cannot happen: one node */
        timeout_ms = rlock_posix_interest_timeout(it, n, timeout_ms); /* a connect's own bound too */
        sync_watches(&d, ep, w, &nw, it, n);
        if (epoll_wait(ep, evs, MAX_CONNS,
                       timeout_ms == UINT32_MAX ? -1 : timeout_ms > 60000 ? 60000 : (int)timeout_ms) < 0 &&
            errno != EINTR) {
            perror("epoll_wait");
            break;
        }
        rlock_client_step(&d.cl); /* which fds were ready does not matter: rlock tries them all */
    }
    rc = demo_close(&d);
    close(ep);
    return rc;
}
