/* libevent_loop.c - three locks at once over one client, inside libevent.
 *
 * Shows rlock living in a libevent event_base: one persistent event per
 * connection that rlock_client_interest lists, one timer for its deadline,
 * and every callback doing the same thing - rlock_client_step, collect
 * results, then bring the events in line with the new interest list. An
 * event is bound to one fd, so when rlock reconnects (`gen` or the fd
 * changed) the old event is freed and a new one added on the new descriptor
 * (freeing first: the new socket may have the old fd number). Events are
 * freed before rlock_client_close closes the sockets.
 * The shared part (set-up, printing, releasing) is in three_locks.h.
 *
 * Run: make build/libevent_loop && build/libevent_loop [PORT [KEY1 KEY2 KEY3]]
 * (Debian: libevent-dev) against a redis-server on 127.0.0.1 (default port
 * 6379); hold one of the keys meanwhile, e.g. `build/rlock example:b sleep 3`. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#include "three_locks.h"
#include <event2/event.h>

#define MAX_CONNS (2 * RLOCK_MAX_NODES) /* every node and every subscriber */

typedef struct watch {
    struct event *ev;
    const void *conn; /* rlock_interest.conn: which connection */
    int fd, events;
    unsigned long gen;
} watch;

typedef struct app {
    demo d;
    struct event_base *base;
    struct event *timer;
    watch w[MAX_CONNS];
    size_t nw;
} app;

static void on_event(evutil_socket_t fd, short what, void *arg);

static void unwatch(app *a, size_t k) {
    event_free(a->w[k].ev); /* its fd may be closed already: libevent only forgets it */
    a->w[k] = a->w[--a->nw];
}

/* Bring the events in line with what rlock wants now; removals first. */
static void sync_watches(app *a) {
    rlock_interest it[MAX_CONNS];
    uint32_t timeout_ms;
    size_t i, k, n = rlock_client_interest(&a->d.cl, it, MAX_CONNS, &timeout_ms);
    if (n > MAX_CONNS) n = MAX_CONNS; /* cannot happen: one node */
    timeout_ms = rlock_posix_interest_timeout(it, n, timeout_ms); /* a connect's own bound too */
    for (k = 0; k < a->nw;) {
        for (i = 0; i < n && it[i].conn != a->w[k].conn; i++) { }
        /* an event's fd and events are fixed: anything changed, make a new one */
        if (i < n && it[i].fd == a->w[k].fd && it[i].gen == a->w[k].gen && it[i].events == a->w[k].events) k++;
        else unwatch(a, k);
    }
    for (i = 0; i < n; i++) {
        short what = (short)(EV_PERSIST | ((it[i].events & RLOCK_WANT_READ) ? EV_READ : 0) |
                             ((it[i].events & RLOCK_WANT_WRITE) ? EV_WRITE : 0));
        watch *w;
        if (it[i].fd < 0) continue; /* not connected yet: the timeout is 0 */
        for (k = 0; k < a->nw && a->w[k].conn != it[i].conn; k++) { }
        if (k < a->nw) continue; /* unchanged */
        w = &a->w[a->nw];
        if (!(w->ev = event_new(a->base, it[i].fd, what, on_event, a)) || event_add(w->ev, NULL) != 0) {
            fprintf(stderr, "event_new/event_add failed\n");
            if (w->ev) event_free(w->ev);
            continue;
        }
        w->conn = it[i].conn;
        w->fd = it[i].fd;
        w->gen = it[i].gen;
        w->events = it[i].events;
        a->nw++;
        demo_conn(&a->d, it[i].fd, it[i].gen);
    }
    if (timeout_ms == UINT32_MAX) {
        evtimer_del(a->timer);
    } else {
        struct timeval tv;
        tv.tv_sec = (time_t)(timeout_ms / 1000u);
        tv.tv_usec = (suseconds_t)(timeout_ms % 1000u) * 1000;
        evtimer_add(a->timer, &tv);
    }
}

/* Every callback: drive rlock, collect, follow the interest list. */
static void on_event(evutil_socket_t fd, short what, void *arg) {
    app *a = (app *)arg;
    (void)fd;
    (void)what;
    rlock_client_step(&a->d.cl);
    if (!demo_progress(&a->d)) {
        sync_watches(a);
        return;
    }
    while (a->nw) unwatch(a, 0); /* done: no event left, the dispatch returns */
    evtimer_del(a->timer);
}

int main(int argc, char **argv) {
    app a;
    struct timeval now = { 0, 0 };
    int rc;
    memset(&a, 0, sizeof a);
    if (demo_init(&a.d, argc, argv) != 0) return 2;
    if (!(a.base = event_base_new()) || !(a.timer = evtimer_new(a.base, on_event, &a))) {
        fprintf(stderr, "event_base_new/evtimer_new failed\n");
        if (a.base) event_base_free(a.base);
        (void)demo_close(&a.d);
        return 1;
    }
    evtimer_add(a.timer, &now);     /* first step at once: it connects */
    event_base_dispatch(a.base);    /* until on_event removed every event */
    event_free(a.timer);
    event_base_free(a.base);
    rc = demo_close(&a.d);
    libevent_global_shutdown();     /* libevent's own globals: leave nothing allocated */
    return rc;
}
