/* poll_loop.c - three locks at once over one client, from a poll() loop.
 *
 * Shows the event-loop pattern with the least machinery: each turn asks
 * rlock_client_interest which connections need which events and by when,
 * polls exactly those, then lets rlock_client_step move every operation on.
 * A reconnect needs no re-registration here (the pollfd array is rebuilt
 * each turn), but a changed `gen` still says the descriptor is a new one.
 * The shared part (set-up, printing, releasing) is in three_locks.h.
 *
 * Run: make build/poll_loop && build/poll_loop [PORT [KEY1 KEY2 KEY3]]
 * against a redis-server on 127.0.0.1 (default port 6379); hold one of the
 * keys meanwhile, e.g. `build/rlock example:b sleep 3`, to see it wait. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#include "three_locks.h"
#include <poll.h>

#define MAX_CONNS (2 * RLOCK_MAX_NODES) /* every node and every subscriber */

int main(int argc, char **argv) {
    demo d;
    if (demo_init(&d, argc, argv) != 0) return 2;
    while (!demo_progress(&d)) {
        rlock_interest it[MAX_CONNS];
        struct pollfd p[MAX_CONNS];
        uint32_t timeout_ms;
        size_t i, n = rlock_client_interest(&d.cl, it, MAX_CONNS, &timeout_ms);
        if (n > MAX_CONNS) n = MAX_CONNS; /* cannot happen: one node */
        timeout_ms = rlock_posix_interest_timeout(it, n, timeout_ms); /* a connect's own bound too */
        for (i = 0; i < n; i++) {
            p[i].fd = it[i].fd; /* -1 (not connected yet) is ignored by poll; timeout_ms is 0 then */
            p[i].events = (short)(((it[i].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                  ((it[i].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[i].revents = 0;
            if (it[i].fd >= 0) demo_conn(&d, it[i].fd, it[i].gen);
        }
        if (poll(p, (nfds_t)n, timeout_ms == UINT32_MAX ? -1 : timeout_ms > 60000 ? 60000 : (int)timeout_ms) < 0 &&
            errno != EINTR) {
            perror("poll");
            break;
        }
        rlock_client_step(&d.cl);
    }
    return demo_close(&d);
}
