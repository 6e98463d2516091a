/* libuv_loop.c - three locks at once over one client, inside a libuv loop.
 *
 * Shows rlock living in someone else's loop: one uv_poll_t per connection
 * that rlock_client_interest lists, one uv_timer_t for its deadline, and
 * every callback doing the same thing - rlock_client_step, collect results,
 * then bring the handles in line with the new interest list. A uv_poll_t is
 * bound to one fd, so when rlock reconnects (`gen` or the fd changed) the old
 * handle is stopped and closed and a new one started on the new descriptor.
 * Handles are stopped before rlock_client_close closes the sockets.
 * The shared part (set-up, printing, releasing) is in three_locks.h.
 *
 * Run: make build/libuv_loop && build/libuv_loop [PORT [KEY1 KEY2 KEY3]]
 * (Debian: libuv1-dev) against a redis-server on 127.0.0.1 (default port
 * 6379); hold one of the keys meanwhile, e.g. `build/rlock example:b sleep 3`. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#include "three_locks.h"
#include <uv.h>

#define MAX_CONNS (2 * RLOCK_MAX_NODES) /* every node and every subscriber */

typedef struct watch {
    uv_poll_t *h;          /* heap: it lives until its close callback */
    const void *conn; /* rlock_interest.conn: which connection */
    int fd, events;
    unsigned long gen;
} watch;

typedef struct app {
    demo d;
    uv_loop_t loop;
    uv_timer_t timer;
    watch w[MAX_CONNS];
    size_t nw;
} app;

static void on_closed(uv_handle_t *h) { free(h); }

static void unwatch(app *a, size_t k) {
    uv_poll_stop(a->w[k].h); /* its fd may be closed already: libuv only forgets it */
    uv_close((uv_handle_t *)a->w[k].h, on_closed);
    a->w[k] = a->w[--a->nw];
}

static int uv_events(int want) {
    return ((want & RLOCK_WANT_READ) ? UV_READABLE : 0) | ((want & RLOCK_WANT_WRITE) ? UV_WRITABLE : 0);
}

static void on_io(uv_poll_t *h, int status, int events);
static void on_timer(uv_timer_t *t);

/* Bring the handles in line with what rlock wants now; removals first (a
 * reconnect may reuse the fd number of the connection it replaced). */
static void sync_watches(app *a) {
    rlock_interest it[MAX_CONNS];
    uint32_t timeout_ms;
    size_t i, k, n = rlock_client_interest(&a->d.cl, it, MAX_CONNS, &timeout_ms);
    if (n > MAX_CONNS) n = MAX_CONNS; /* cannot happen: one node */
    timeout_ms = rlock_posix_interest_timeout(it, n, timeout_ms); /* a connect's own bound too */
    for (k = 0; k < a->nw;) {
        for (i = 0; i < n && it[i].conn != a->w[k].conn; i++) { }
        if (i < n && it[i].fd == a->w[k].fd && it[i].gen == a->w[k].gen) k++;
        else unwatch(a, k);
    }
    for (i = 0; i < n; i++) {
        watch *w;
        if (it[i].fd < 0) continue; /* not connected yet: the timeout is 0 */
        for (k = 0; k < a->nw && a->w[k].conn != it[i].conn; k++) { }
        w = &a->w[k];
        if (k == a->nw) {
            w->h = (uv_poll_t *)malloc(sizeof *w->h);
            if (!w->h || uv_poll_init(&a->loop, w->h, it[i].fd) != 0) {
                fprintf(stderr, "uv_poll_init failed\n");
                free(w->h);
                continue;
            }
            w->h->data = a;
            w->conn = it[i].conn;
            w->fd = it[i].fd;
            w->gen = it[i].gen;
            w->events = 0;
            a->nw++;
            demo_conn(&a->d, it[i].fd, it[i].gen);
        }
        if (w->events != it[i].events) {
            uv_poll_start(w->h, uv_events(it[i].events), on_io); /* also changes the events */
            w->events = it[i].events;
        }
    }
    if (timeout_ms == UINT32_MAX) uv_timer_stop(&a->timer);
    else uv_timer_start(&a->timer, on_timer, timeout_ms, 0);
}

/* Every callback: drive rlock, collect, follow the interest list. */
static void step(app *a) {
    rlock_client_step(&a->d.cl);
    if (!demo_progress(&a->d)) {
        sync_watches(a);
        return;
    }
    while (a->nw) unwatch(a, 0); /* done: nothing left open, uv_run returns */
    uv_close((uv_handle_t *)&a->timer, NULL);
}

static void on_io(uv_poll_t *h, int status, int events) {
    (void)status; /* an error shows up in rlock's own send/recv */
    (void)events;
    step((app *)h->data);
}
static void on_timer(uv_timer_t *t) { step((app *)t->data); }

int main(int argc, char **argv) {
    app a;
    int rc;
    memset(&a, 0, sizeof a);
    if (demo_init(&a.d, argc, argv) != 0) return 2;
    if (uv_loop_init(&a.loop) != 0) {
        (void)demo_close(&a.d);
        return 1;
    }
    uv_timer_init(&a.loop, &a.timer);
    a.timer.data = &a;
    uv_timer_start(&a.timer, on_timer, 0, 0); /* first step at once: it connects */
    uv_run(&a.loop, UV_RUN_DEFAULT);          /* until step() closed every handle */
    rc = uv_loop_close(&a.loop);
    if (rc != 0) fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
    return demo_close(&a.d) || rc != 0;
}
