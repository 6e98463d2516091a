/* test_fair.c - fair locks (rlock_lock_set_fair) against real redis-server
 * processes that the test starts on free loopback ports and stops by PID:
 * FIFO order of 8 processes queued in a known order, simple and reentrant;
 * the releaser (and anyone else) cannot take a key reserved for a waiter; a
 * queued waiter killed with kill -9 delays the next by about its grace, and
 * the next is brought in by its standby notice even when that notice is read
 * with the refusal it follows (a gated recv); the holder killed; release
 * notices lost (CLIENT KILL TYPE pubsub on subscriber connections, and the
 * RESP3 command connection killed); FIFO on Redlock-3
 * with one node down; a waiter that timed out leaves the queue; and no two
 * critical sections ever overlap (each holder
 * mkdir()s one marker directory); a waiter cancelled between rounds leaves
 * the queue (and a reservation made for it).
 *
 * Ordering is set up by events, not sleeps: a waiter counts as queued once
 * ZCARD of the key's queue says so. Times are only bounded from above,
 * generously, except where the grace itself is what is tested. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "harness.h"
#include "check.h"

#include <sys/stat.h>

#define NSRV 3
#define MAXP 8

static int quick;
static char g_marker[300];

static long long since(unsigned long long t0) { return (long long)(rh_now_ms() - t0); }

/* A client over the POSIX adapter on n servers: waiting by RESP3 on the
 * command connection (subs 0) or by RESP2 subscriber connections (subs 1). */
typedef struct fcli {
    int n, nsubs;
    rlock_posix_conn pc[NSRV], spc[NSRV];
    rlock_node nodes[NSRV];
    rlock_subscriber subs[NSRV];
    rlock_client cl;
} fcli;

static int fcli_open(fcli *t, rh_server *srv, int n, uint32_t recheck_ms, int subs) {
    rlock_config cfg;
    int i;
    memset(t, 0, sizeof *t);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000; /* far above a round trip, even under valgrind on a loaded machine (200 was not:
                                 * a first script's NOSCRIPT + EVAL timed out there) */
    cfg.recheck_ms = recheck_ms;
    cfg.pubsub = !subs;
    t->n = n;
    for (i = 0; i < n; i++) {
        if (rlock_posix_init_tcp(&t->pc[i], "127.0.0.1", srv[i].port, 1000) != 0) return -1;
        if (rlock_node_init(&t->nodes[i], rlock_posix_transport(&t->pc[i])) != RLOCK_OK) return -1;
    }
    if (rlock_client_init(&t->cl, t->nodes, (size_t)n, &cfg) != RLOCK_OK) return -1;
    if (subs) {
        for (i = 0; i < n; i++) {
            if (rlock_posix_init_tcp(&t->spc[i], "127.0.0.1", srv[i].port, 1000) != 0) return -1;
            if (rlock_subscriber_init(&t->subs[i], rlock_posix_transport(&t->spc[i])) != RLOCK_OK) return -1;
        }
        if (rlock_client_set_subscribers(&t->cl, t->subs, (size_t)n) != RLOCK_OK) return -1;
        t->nsubs = n;
    }
    return 0;
}

static void fcli_close(fcli *t) {
    int i;
    rlock_client_close(&t->cl);
    for (i = 0; i < t->n; i++) rlock_posix_close(&t->pc[i]);
    for (i = 0; i < t->nsubs; i++) rlock_posix_close(&t->spc[i]);
}

/* What a waiter process reports while it holds the lock. */
typedef struct report {
    int idx, st, overlap;
    unsigned long long t_acq;
} report;

typedef struct wopts {
    const char *key;
    int n, subs, reentrant, hold_ms, skip_first; /* skip_first: the node that is down */
    uint32_t grace, recheck;
    long long wait_ms; /* how long a waiter waits (0: 20 s) */
} wopts;

/* A waiter: acquire (fair), report, hold hold_ms inside the marker, release. */
static int waiter(rh_server *srv, const wopts *o, int idx, int wfd) {
    fcli t;
    rlock_lock lk;
    report r;
    rlock_status st;
    memset(&r, 0, sizeof r);
    r.idx = idx;
    if (fcli_open(&t, srv, o->n, o->recheck, o->subs) != 0) return 10;
    if (rlock_lock_init(&lk, &t.cl, o->key, strlen(o->key), o->reentrant ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE) !=
            RLOCK_OK || rlock_lock_set_fair(&lk, 1, o->grace) != RLOCK_OK)
        return 11;
    st = rlock_acquire(&lk, 10000, o->wait_ms ? o->wait_ms : 20000);
    r.st = (int)st;
    r.t_acq = rh_now_ms();
    if (st == RLOCK_OK && mkdir(g_marker, 0700) != 0) r.overlap = 1;
    if (write(wfd, &r, sizeof r) != (ssize_t)sizeof r) return 12;
    if (st != RLOCK_OK) return 13;
    if (o->hold_ms) rh_sleep_ms((unsigned)o->hold_ms);
    if (!r.overlap) rmdir(g_marker);
    st = rlock_release(&lk);
    fcli_close(&t);
    return st == RLOCK_OK ? 0 : 14;
}

/* PUBSUB NUMSUB of the key's release channel on s. */
static long long numsub(const rh_server *s, const char *key) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -1;
    if (!c) return -1;
    r = (redisReply *)redisCommand(c, "PUBSUB NUMSUB {%s}:released", key);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
        v = r->element[1]->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

static char g_qkey[300];
static long long queued(rh_server *s, const char *key) {
    snprintf(g_qkey, sizeof g_qkey, "{%s}:waiters", key);
    return rh_int(s, "ZCARD %s", g_qkey);
}

/* Start a waiter process and wait until the queue on s has `want` entries. */
static pid_t start_waiter(rh_server *srv, int n_up, const wopts *o, int idx, int wfd, long long want) {
    unsigned long long t0 = rh_now_ms();
    pid_t pid = rh_fork();
    int i;
    if (pid == 0) _exit(waiter(srv, o, idx, wfd));
    for (i = 0; i < n_up; i++) { /* queued on every live node: the order is the same on each */
        while (pid > 0 && queued(&srv[i], o->key) < want && since(t0) < 10000) rh_sleep_ms(2);
        CHECK_MSG(queued(&srv[i], o->key) >= want, "waiter %d did not queue on node %d within 10 s", idx, i);
    }
    return pid;
}

static void reap(pid_t *pids, int n, int expect_ok) {
    int i;
    for (i = 0; i < n; i++) {
        int st;
        if (pids[i] <= 0) continue;
        st = rh_wait_child(pids[i], 30000);
        if (expect_ok) CHECK_MSG(rh_exited_with(st, 0), "waiter %d exited with status %d", i, st);
        pids[i] = -1;
    }
}

/* A holder in this process: acquire the fair lock (nothing else queued). */
static int hold(fcli *h, rlock_lock *lk, rh_server *srv, int n, const wopts *o) {
    if (fcli_open(h, srv, n, 1000, 0) != 0) return -1;
    if (rlock_lock_init(lk, &h->cl, o->key, strlen(o->key), o->reentrant ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE) !=
            RLOCK_OK || rlock_lock_set_fair(lk, 1, o->grace) != RLOCK_OK)
        return -1;
    return rlock_acquire(lk, 20000, 0) == RLOCK_OK ? 0 : -1;
}

/* A test's waiter options: key on n servers, the fair grace, the re-check
 * and how long each waiter holds (subs, reentrant: 0; the caller sets them). */
static void wopts_for(wopts *o, const char *key, int n, uint32_t grace, uint32_t recheck, int hold_ms) {
    memset(o, 0, sizeof *o);
    o->key = key;
    o->n = n;
    o->grace = grace;
    o->recheck = recheck;
    o->hold_ms = hold_ms;
}

/* Wait (10 s bound) until n waiters listen for the key's release notices
 * on s: a waiter queues first, then subscribes. */
static void wait_listening(rh_server *s, const char *key, long long n) {
    unsigned long long t0 = rh_now_ms();
    while (numsub(s, key) < n && since(t0) < 10000) rh_sleep_ms(2);
    CHECK_EQ_LL(numsub(s, key), n);
}

/* A test's end: the key is gone from the first server; the report pipe
 * and the holder's client are closed. */
static void test_end(rh_server *srv, const char *key, int pfd[2], fcli *h) {
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s", key), 0);
    close(pfd[0]);
    close(pfd[1]);
    fcli_close(h);
}

/* N processes queue one after another behind a holder; the release then
 * serves them in exactly that order, one at a time. */
static void test_fifo(rh_server *srv, int n_nodes, int reentrant, int subs, int down) {
    wopts o;
    fcli h;
    rlock_lock hl;
    pid_t pids[MAXP];
    int pfd[2], i, np = quick ? 4 : (n_nodes > 1 ? 5 : MAXP), order_ok = 1, got = 0, overlaps = 0;
    char key[64];
    report r;
    unsigned long long t_rel;
    snprintf(key, sizeof key, "fifo:%d:%d:%d", n_nodes, reentrant, subs);
    /* grace 2 s (5 s under valgrind): on a loaded CI a woken waiter must make
     * it in time, or it is skipped and the order check fails for the wrong reason */
    wopts_for(&o, key, n_nodes, quick ? 5000 : 2000, 1000, 5);
    o.subs = subs;
    o.reentrant = reentrant;
    CHECK(pipe(pfd) == 0);
    CHECK(hold(&h, &hl, srv, n_nodes, &o) == 0);
    if (reentrant) CHECK_EQ_ST(rlock_acquire(&hl, 20000, 0), RLOCK_OK); /* held twice */
    for (i = 0; i < np; i++) pids[i] = start_waiter(srv, down ? n_nodes - 1 : n_nodes, &o, i, pfd[1], i + 1);
    t_rel = rh_now_ms();
    if (reentrant) {
        CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* one hold left: nothing handed off */
        CHECK_EQ_LL(queued(&srv[0], key), np);
    }
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    for (i = 0; i < np; i++) {
        if (rh_read_full(pfd[0], &r, sizeof r, 30000) != 0) { CHECK_MSG(0, "no report from waiter %d", i); break; }
        CHECK_EQ_ST((rlock_status)r.st, RLOCK_OK);
        if (r.st == RLOCK_OK) got++;
        if (r.idx != i) order_ok = 0;
        overlaps += r.overlap;
        if (r.idx != i) fprintf(stderr, "  fifo: turn %d went to waiter %d\n", i, r.idx);
    }
    reap(pids, np, 1);
    printf("fair FIFO (%d node%s%s, %s, %s): %d waiters served in queue order: %s; last %lld ms after the release\n",
           n_nodes, n_nodes > 1 ? "s" : "", down ? ", one down" : "", reentrant ? "reentrant" : "simple",
           subs ? "subscriber connections" : "RESP3", np, order_ok ? "yes" : "NO", since(t_rel));
    CHECK_EQ_LL(got, np);
    CHECK_MSG(order_ok, "waiters were not served in the order they queued");
    CHECK_EQ_LL(overlaps, 0);
    CHECK_EQ_LL(queued(&srv[0], key), 0);
    test_end(srv, key, pfd, &h);
}

/* The releaser and a third client cannot take a key reserved for a waiter
 * (stopped with SIGSTOP so that it cannot claim yet); the waiter claims it
 * once resumed, within the grace. */
static void test_no_barging(rh_server *srv) {
    wopts o;
    fcli h, x;
    rlock_lock hl, xl;
    pid_t pid;
    int pfd[2];
    report r;
    char v[64];
    const char *key = "fair:nobarge";
    wopts_for(&o, key, 1, 5000, 1000, 0);
    CHECK(pipe(pfd) == 0);
    CHECK(hold(&h, &hl, srv, 1, &o) == 0);
    pid = start_waiter(srv, 1, &o, 0, pfd[1], 1);
    kill(pid, SIGSTOP);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_EQ_LL(rh_str(&srv[0], v, sizeof v, "GET %s", key), REDIS_REPLY_STRING);
    CHECK_MSG(v[0] == '~', "the released key holds \"%s\", not a reservation", v);
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_NOT_ACQUIRED); /* the releaser */
    CHECK(fcli_open(&x, srv, 1, 1000, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&xl, &x.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&xl, 5000, 0), RLOCK_NOT_ACQUIRED);     /* a barging lock, plain SET NX */
    CHECK_EQ_ST(rlock_lock_set_fair(&xl, 1, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&xl, 5000, 0), RLOCK_NOT_ACQUIRED);     /* another fair client */
    kill(pid, SIGCONT);
    CHECK_EQ_LL(rh_read_full(pfd[0], &r, sizeof r, 10000), 0);
    CHECK_EQ_ST((rlock_status)r.st, RLOCK_OK);
    CHECK_EQ_LL(r.overlap, 0);
    reap(&pid, 1, 1);
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK); /* free again after the waiter's release */
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    printf("fair: a reserved key refused the releaser, a barging and a fair client; its waiter claimed it\n");
    fcli_close(&x);
    test_end(srv, key, pfd, &h);
}

/* The oldest waiter is killed (kill -9) while queued: the release reserves
 * the key for it, nobody claims it, and the next in line - told it is next -
 * takes the lock once the grace has run out: not before, and brought in by
 * that standby notice, not by its re-check. The re-check (60 s) and the wait
 * (120 s) are far beyond the bound (30 s), so a waiter that never acts on
 * its notice fails, while one merely slowed by a loaded machine does not
 * (the tight version, grace + 1.5 s, failed under four make test runs at
 * once: a lost wake-up, test_standby_with_refusal). */
static void test_dead_waiter(rh_server *srv) {
    wopts o;
    fcli h;
    rlock_lock hl;
    pid_t pids[2];
    int pfd[2], st;
    report r;
    long long waited;
    unsigned long long t_rel;
    const char *key = "fair:dead";
    wopts_for(&o, key, 1, 400, 60000, 0); /* re-check 60 s: only the standby notice brings the next one in early */
    o.wait_ms = 120000;
    CHECK(pipe(pfd) == 0);
    CHECK(hold(&h, &hl, srv, 1, &o) == 0);
    pids[0] = start_waiter(srv, 1, &o, 0, pfd[1], 1);
    pids[1] = start_waiter(srv, 1, &o, 1, pfd[1], 2);
    wait_listening(&srv[0], key, 2);
    kill(pids[0], SIGKILL);
    st = rh_wait_child(pids[0], 10000);
    CHECK(WIFSIGNALED(st));
    pids[0] = -1;
    t_rel = rh_now_ms();
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    if (rh_read_full(pfd[0], &r, sizeof r, (int)o.recheck / 2) != 0) {
        CHECK_MSG(0, "the next waiter was not served within %u ms (re-check %u ms): its standby notice was not "
                  "acted on", o.recheck / 2, o.recheck);
        reap(pids, 2, 0); /* (killed after 30 s) */
        test_end(srv, key, pfd, &h);
        return;
    }
    waited = (long long)(r.t_acq - t_rel);
    CHECK_EQ_ST((rlock_status)r.st, RLOCK_OK);
    CHECK_EQ_LL(r.idx, 1);
    printf("fair: the waiter behind a killed one got the lock %lld ms after the release (grace %u ms, re-check "
           "%u ms)\n", waited, o.grace, o.recheck);
    CHECK_MSG(waited >= (long long)o.grace - 50, "the dead waiter's reservation ended after %lld ms", waited);
    CHECK_MSG(waited < (long long)o.recheck / 2, "the next waiter waited %lld ms, grace %u", waited, o.grace);
    reap(pids, 2, 1);
    test_end(srv, key, pfd, &h);
}

/* A waiter whose wait ran out leaves the queue with its last attempt (sent
 * with no wait left): the next release finds nobody to reserve the key for,
 * and anyone takes it at once - not after the grace (2 s here) of a
 * reservation for a waiter gone. (A waiter cancelled between rounds leaves
 * it too: test_cancelled_waiter.) */
static void test_timed_out_waiter(rh_server *srv, rlock_kind kind) {
    fcli h, w;
    rlock_lock hl, wl;
    const char *key = kind == RLOCK_KIND_SIMPLE ? "fair:timedout" : "fair:timedout:re";
    CHECK(fcli_open(&h, srv, 1, 1000, 0) == 0);
    CHECK(fcli_open(&w, srv, 1, 1000, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), kind), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&wl, &w.cl, key, strlen(key), kind), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&hl, 1, 2000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&wl, 1, 2000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&wl, 10000, 300), RLOCK_TIMEOUT);
    CHECK_MSG(queued(&srv[0], key) == 0, "the timed-out waiter is still queued (%lld entries)", queued(&srv[0], key));
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_MSG(rh_int(&srv[0], "EXISTS %s", key) == 0, "the release reserved the key for the waiter gone (PTTL %lld)",
              rh_int(&srv[0], "PTTL %s", key));
    CHECK_EQ_ST(rlock_acquire(&wl, 10000, 0), RLOCK_OK); /* at once */
    CHECK_EQ_ST(rlock_release(&wl), RLOCK_OK);
    rh_int(&srv[0], "DEL %s", key);
    fcli_close(&w);
    fcli_close(&h);
}

/* Step lk (an acquire begun) until its waiter id is in the key's queue on s
 * and it waits between rounds; 1 then. */
static int step_until_queued(rh_server *s, rlock_lock *lk, const char *key) {
    int i;
    for (i = 0; i < 5000; i++) {
        if (rlock_acquire_waiting(lk) && rh_int(s, "ZRANK {%s}:waiters %b", key, lk->waiter_id, (size_t)16) >= 0)
            return 1;
        if (rlock_step(lk) != RLOCK_WOULD_BLOCK) return 0;
        rh_sleep_ms(1);
    }
    return 0;
}

/* Is the key reserved for lk's waiter id ("~" id)? */
static int reserved_for(rh_server *s, const char *key, const rlock_lock *lk) {
    char v[64], want[20];
    snprintf(want, sizeof want, "~%.16s", lk->waiter_id);
    return rh_str(s, v, sizeof v, "GET %s", key) == REDIS_REPLY_STRING && strcmp(v, want) == 0;
}

/* Step lk until its acquire ends (10 s bound). */
static rlock_status step_to_end(rlock_lock *lk) {
    rlock_status st = RLOCK_WOULD_BLOCK;
    int i;
    for (i = 0; i < 10000 && st == RLOCK_WOULD_BLOCK; i++) {
        st = rlock_step(lk);
        if (st == RLOCK_WOULD_BLOCK) rh_sleep_ms(1);
    }
    return st;
}

/* A waiter cancelled between rounds leaves the queue (one last attempt
 * with no wait left, as a waiter whose wait ran out), so a release reserves
 * the key for the one behind it, not for the waiter gone (before: its entry
 * stayed, the release reserved the key for it and the next in line waited
 * out the grace, 2 s here). Three waiters queued in a known order; the
 * middle one cancelled: the queue holds the other two, and the first one's
 * release hands the key straight to the third. Then a waiter cancelled after
 * a release reserved the key for it: the reservation does not outlive it
 * either. Asserted on the queue and the key, not on time. */
static void test_cancelled_waiter(rh_server *srv, rlock_kind kind) {
    fcli h, t[3];
    rlock_lock hl, w[3];
    int i;
    const char *key = kind == RLOCK_KIND_SIMPLE ? "fair:cancelled" : "fair:cancelled:re";
    CHECK(fcli_open(&h, srv, 1, 1000, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), kind), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&hl, 1, 2000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 20000, 0), RLOCK_OK);
    for (i = 0; i < 3; i++) {
        CHECK(fcli_open(&t[i], srv, 1, 1000, 0) == 0);
        CHECK_EQ_ST(rlock_lock_init(&w[i], &t[i].cl, key, strlen(key), kind), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_set_fair(&w[i], 1, 2000), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire_begin(&w[i], 20000, 60000), RLOCK_WOULD_BLOCK);
        CHECK_MSG(step_until_queued(&srv[0], &w[i], key), "waiter %d did not queue", i);
    }
    CHECK_EQ_LL(queued(&srv[0], key), 3);
    rlock_cancel(&w[1]);
    CHECK_EQ_LL(rlock_lock_state(&w[1]), RLOCK_STATE_IDLE);
    CHECK_MSG(rh_int(&srv[0], "ZRANK {%s}:waiters %b", key, w[1].waiter_id, (size_t)16) < 0,
              "the cancelled waiter is still queued (%lld entries)", queued(&srv[0], key));
    CHECK_EQ_LL(queued(&srv[0], key), 2);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_MSG(reserved_for(&srv[0], key, &w[0]), "the release did not reserve the key for the first waiter");
    CHECK_EQ_ST(step_to_end(&w[0]), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&w[0]), RLOCK_OK);
    CHECK_MSG(reserved_for(&srv[0], key, &w[2]),
              "the first waiter's release did not hand the key to the third (the cancelled one was between them)");
    CHECK_EQ_ST(step_to_end(&w[2]), RLOCK_OK);
    CHECK_EQ_LL(queued(&srv[0], key), 0);

    /* cancelled with the key reserved for it: the reservation goes with it */
    CHECK_EQ_ST(rlock_acquire_begin(&w[0], 20000, 60000), RLOCK_WOULD_BLOCK);
    CHECK_MSG(step_until_queued(&srv[0], &w[0], key), "waiter 0 did not queue again");
    CHECK_EQ_ST(rlock_release(&w[2]), RLOCK_OK);
    CHECK_MSG(reserved_for(&srv[0], key, &w[0]), "the release did not reserve the key for waiter 0");
    rlock_cancel(&w[0]);
    CHECK_EQ_LL(rlock_lock_state(&w[0]), RLOCK_STATE_IDLE);
    CHECK_MSG(rh_int(&srv[0], "EXISTS %s", key) == 0, "the key is still reserved for the cancelled waiter (PTTL %lld)",
              rh_int(&srv[0], "PTTL %s", key));
    CHECK_EQ_LL(queued(&srv[0], key), 0);
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK); /* at once */
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    printf("fair (%s): a waiter cancelled between rounds left the queue; the key went to the one behind it\n",
           kind == RLOCK_KIND_SIMPLE ? "simple" : "reentrant");
    (void)rh_int(&srv[0], "DEL %s {%s}:waiters", key, key);
    for (i = 0; i < 3; i++) fcli_close(&t[i]);
    fcli_close(&h);
}

/* The standby notice read together with the refusal it follows, made
 * certain by a gate on the waiter's recv. test_dead_waiter failed this way
 * under four make test runs at once (10 s for a 400 ms grace): the next in
 * line's attempt was answered "held" just before the release, and the
 * release's "W N" notice came in the same recv; the pump delivered it
 * (op.standby) before the round was judged, the op entered WAITMSG already
 * on standby, and rlock_next_timeout_ms - the blocking loop's sleep, and an
 * event loop's - said "until the re-check". rlock__client_next now makes
 * such an op due at once (commit 1f4c473, found through the read-write
 * locks' wake-up; this is the fair lock's case). Here the waiter before us
 * is our own earlier wait, cancelled while queued (the client stays
 * subscribed), its entry put back at the head: a dead waiter's; re-check 30 s. The
 * next timeout must be within the grace, and the waiter in within a few
 * steps - counted in steps, not time. */
static void test_standby_with_refusal(rh_server *srv) {
    wopts o;
    fcli h;
    rlock_lock hl, w;
    rh_gconn g;
    rlock_status st;
    char old_id[17], pong[8];
    int i, steps = 0;
    uint32_t next;
    unsigned long long t_rel;
    const char *key = "fair:standby";
    wopts_for(&o, key, 1, 400, 30000, 0);
    if (hold(&h, &hl, srv, 1, &o) != 0 || rh_gc_open(&g, &srv[0], o.recheck) != 0) {
        CHECK_MSG(0, "connect");
        return;
    }
    CHECK_EQ_ST(rlock_lock_init(&w, &g.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&w, 1, o.grace), RLOCK_OK);
    /* The waiter ahead: queued and subscribed, then gone (cancelled). */
    CHECK_EQ_ST(rh_step_until_waitmsg(&w, rlock_acquire_begin(&w, 10000, 60000)), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(w.op.phase, RLOCK__PH_WAITMSG);
    rlock_cancel(&w);
    memcpy(old_id, w.waiter_id, 16);
    old_id[16] = '\0';
    /* (a cancel takes the entry out: test_cancelled_waiter; put back at the
     * head, it is a dead waiter's) */
    (void)rh_int(&srv[0], "ZADD {%s}:waiters NX 1 %s", key, old_id);
    /* Our attempt: sent, its answer ("held") left unread; queued second. */
    g.gate = 1;
    CHECK_EQ_ST(rlock_acquire_begin(&w, 10000, 60000), RLOCK_WOULD_BLOCK);
    CHECK(memcmp(old_id, w.waiter_id, 16) != 0);
    for (i = 0; i < 5000 && rh_int(&srv[0], "ZRANK {%s}:waiters %b", key, w.waiter_id, (size_t)16) != 1; i++) {
        rh_sleep_ms(1);
        (void)rlock_step(&w);
    }
    CHECK_MSG(i < 5000, "our attempt never queued behind the cancelled one");
    CHECK_EQ_LL(rh_int(&srv[0], "ZRANK {%s}:waiters %s", key, old_id), 0);
    t_rel = rh_now_ms();
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* reserves the key for the one ahead; "W N" names us next */
    CHECK(rh_str(&srv[0], pong, sizeof pong, "PING") == REDIS_REPLY_STATUS); /* the notice is written by now */
    g.gate = 0;
    st = rlock_step(&w); /* reads the refusal and the notice together */
    next = rlock_next_timeout_ms(&w);
    printf("fair: a standby notice read with the refusal it follows: next timeout %u ms (grace %u, re-check %u)\n",
           (unsigned)next, o.grace, o.recheck);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK); /* the key is reserved for the one ahead */
    CHECK_MSG(next <= o.grace + 1u, "on standby, but told to sleep %u ms", (unsigned)next);
    st = rh_step_like_a_loop(&g.cl, &w, st, &steps);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_MSG(steps < 50, "the waiter took %d steps", steps);
    /* not before the reservation for the one ahead ran out */
    CHECK_MSG(rh_now_ms() - t_rel >= o.grace - 50u, "in %llu ms, grace %u", rh_now_ms() - t_rel, o.grace);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    else rlock_cancel(&w);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s {%s}:waiters", key, key), 0);
    rh_gc_close(&g);
    fcli_close(&h);
}

/* The holder is a process killed with kill -9: its waiters get the lock once
 * its lease runs out, one at a time. */
static void test_holder_killed(rh_server *srv) {
    wopts o;
    pid_t holder, pids[2];
    int pfd[2], hfd[2], i, overlaps = 0;
    report r;
    unsigned long long t_kill;
    const char *key = "fair:holder";
    wopts_for(&o, key, 1, 1000, 5000, 5);
    CHECK(pipe(pfd) == 0);
    CHECK(pipe(hfd) == 0);
    holder = rh_fork();
    if (holder == 0) {
        fcli h;
        rlock_lock hl;
        char c = 'F';
        if (fcli_open(&h, srv, 1, 1000, 0) == 0 && rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE) ==
                RLOCK_OK && rlock_lock_set_fair(&hl, 1, o.grace) == RLOCK_OK && rlock_acquire(&hl, 1500, 0) == RLOCK_OK)
            c = 'A';
        if (write(hfd[1], &c, 1) != 1) _exit(1);
        for (;;) pause(); /* killed holding it */
    }
    {
        char c = 0;
        CHECK_EQ_LL(rh_read_full(hfd[0], &c, 1, 10000), 0);
        CHECK_EQ_LL(c, 'A');
    }
    pids[0] = start_waiter(srv, 1, &o, 0, pfd[1], 1);
    pids[1] = start_waiter(srv, 1, &o, 1, pfd[1], 2);
    t_kill = rh_now_ms();
    kill(holder, SIGKILL);
    (void)rh_wait_child(holder, 10000);
    for (i = 0; i < 2; i++) {
        if (rh_read_full(pfd[0], &r, sizeof r, 15000) != 0) { CHECK_MSG(0, "no report %d", i); break; }
        CHECK_EQ_ST((rlock_status)r.st, RLOCK_OK);
        overlaps += r.overlap;
    }
    printf("fair: holder killed; both waiters served, the last %lld ms later (lease 1500 ms)\n", since(t_kill));
    CHECK_MSG(since(t_kill) < 1500 + 5000, "served %lld ms after the holder died", since(t_kill));
    CHECK_EQ_LL(overlaps, 0);
    reap(pids, 2, 1);
    close(pfd[0]);
    close(pfd[1]);
    close(hfd[0]);
    close(hfd[1]);
}

/* Release notices lost: the waiters' notice connections are killed
 * (CLIENT KILL TYPE pubsub: the subscriber connections, or the RESP3
 * command connections the waiters subscribe on) just before the release. The timed re-check
 * brings every waiter in; no overlap. */
static void test_lost_notices(rh_server *srv, int subs) {
    wopts o;
    fcli h;
    rlock_lock hl;
    pid_t pids[3];
    int pfd[2], i, overlaps = 0, np = 3;
    report r;
    long long killed;
    unsigned long long t_rel;
    char key[64];
    snprintf(key, sizeof key, "fair:lost:%d", subs);
    wopts_for(&o, key, 1, 300, 200, 5);
    o.subs = subs;
    CHECK(pipe(pfd) == 0);
    CHECK(hold(&h, &hl, srv, 1, &o) == 0);
    for (i = 0; i < np; i++) pids[i] = start_waiter(srv, 1, &o, i, pfd[1], i + 1);
    wait_listening(&srv[0], key, np);
    /* A RESP3 connection with subscriptions is a pubsub client too: this
     * kills the waiters' command connections (subs 0) or their subscriber
     * connections (subs 1). */
    killed = rh_int(&srv[0], "CLIENT KILL TYPE pubsub");
    CHECK_MSG(killed >= np, "CLIENT KILL killed %lld connections", killed);
    t_rel = rh_now_ms();
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* its own connection was killed too: it reconnects */
    for (i = 0; i < np; i++) {
        if (rh_read_full(pfd[0], &r, sizeof r, 15000) != 0) { CHECK_MSG(0, "no report %d", i); break; }
        CHECK_EQ_ST((rlock_status)r.st, RLOCK_OK);
        overlaps += r.overlap;
    }
    printf("fair: notices lost (%s killed): %d waiters served, the last %lld ms after the release\n",
           subs ? "subscriber connections" : "RESP3 connections", np, since(t_rel));
    CHECK_MSG(since(t_rel) < 10000, "served %lld ms after the release", since(t_rel));
    CHECK_EQ_LL(overlaps, 0);
    reap(pids, np, 1);
    test_end(srv, key, pfd, &h);
}

/* Contention without an order set up: 6 processes x 5 acquisitions each,
 * fair, on 1 or 3 nodes: everyone is served, nothing overlaps. */
static int churn_child(rh_server *srv, int n, const char *key, int rounds) {
    fcli t;
    rlock_lock lk;
    int i, bad = 0;
    if (fcli_open(&t, srv, n, 500, 0) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK ||
        rlock_lock_set_fair(&lk, 1, 1000) != RLOCK_OK)
        return 10;
    for (i = 0; i < rounds; i++) {
        if (rlock_acquire(&lk, 5000, 20000) != RLOCK_OK) return 11;
        if (mkdir(g_marker, 0700) != 0) bad = 1;
        else {
            rh_sleep_ms(1);
            rmdir(g_marker);
        }
        if (rlock_release(&lk) != RLOCK_OK) return 12;
    }
    fcli_close(&t);
    return bad ? 13 : 0;
}
static void test_churn(rh_server *srv, int n) {
    pid_t pids[MAXP];
    int i, np = quick ? 3 : 6, rounds = quick ? 3 : 5;
    char key[32];
    unsigned long long t0 = rh_now_ms();
    snprintf(key, sizeof key, "fair:churn:%d", n);
    for (i = 0; i < np; i++) {
        pids[i] = rh_fork();
        if (pids[i] == 0) _exit(churn_child(srv, n, key, rounds));
    }
    for (i = 0; i < np; i++) {
        int st = rh_wait_child(pids[i], 60000);
        CHECK_MSG(rh_exited_with(st, 0), "churn child %d: status %d (13: overlap)", i, st);
    }
    {   /* a reservation for a waiter that was served elsewhere first ends with its grace */
        char k[64];
        snprintf(k, sizeof k, "EXISTS %s", key);
        while ((rh_int(&srv[0], k) || (n > 1 && rh_int(&srv[1], k))) && since(t0) < 60000) rh_sleep_ms(20);
    }
    printf("fair churn on %d node%s: %d processes x %d acquisitions in %lld ms, no overlap\n", n, n > 1 ? "s" : "",
           np, rounds, since(t0));
}

/* Bad arguments: a clear reason, nothing sent. */
static void test_badarg(rh_server *srv) {
    fcli h;
    rlock_lock lk;
    CHECK(fcli_open(&h, srv, 1, 1000, 0) == 0);
    CHECK_EQ_ST(rlock_lock_set_fair(NULL, 1, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&lk, &h.cl, "a}b", 3, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&lk, 1, 0), RLOCK_E_BADARG);
    CHECK(strstr(rlock_lock_error(&lk), "fair") != NULL);
    CHECK_EQ_ST(rlock_lock_init(&lk, &h.cl, "fair:bad", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&lk, 1, 600001), RLOCK_E_BADARG);
    CHECK(strstr(rlock_lock_error(&lk), "600001") != NULL);
    CHECK_EQ_ST(rlock_lock_set_fair(&lk, 1, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&lk, 0, 0), RLOCK_E_STATE); /* held */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS fair:bad"), 0);
    fcli_close(&h);
}

/* A late cleanup cannot take the retry's grant away. The acquisition's
 * first attempt and its cleanup release time out (held back: the network
 * delays them past the node timeout, as in the chaos run that found this
 * for barging locks, commit bbdebd7); the retry is granted. Then the late
 * requests reach the server, the cleanup first (the attempt it undoes had
 * not landed). The cleanup is a compare-and-delete with the attempt's
 * token: were the retry's token the same, it would delete the grant while
 * its holder believes it holds (a rival then gets the lock: an overlap).
 * The fair simple lock's queue place is its waiter id, not its token, so
 * the retry draws a new token and keeps its place. */
/* Does lk's grant (held once) still stand on s? */
static int mine(rh_server *s, rlock_lock *lk, const char *key) {
    char v[80];
    if (lk->kind != RLOCK_KIND_SIMPLE)
        return rh_str(s, v, sizeof v, "HGET %s %s", key, rlock_lock_token(lk)) == REDIS_REPLY_STRING && strcmp(v, "1") == 0;
    return rh_str(s, v, sizeof v, "GET %s", key) == REDIS_REPLY_STRING && strcmp(v, rlock_lock_token(lk)) == 0;
}

/* The two sides of a late-request test on key: w on a client whose next
 * connections can be held back (hc), its rival r on a plain one (rv, node
 * timeout 1 s); both fair or not. 0 when both are up. hc's node timeout,
 * 150 ms x rh_slow() (x3 under valgrind), times out the held requests and
 * bounds the others - each test's first one loads a script (NOSCRIPT, then
 * EVAL), which a loaded machine under valgrind can keep past 150 ms. */
static int late_pair(rh_server *srv, rh_hconn *hc, rh_tconn *rv, rlock_lock *w, rlock_lock *r, const char *key,
                     rlock_kind kind, int fair) {
    if (rh_hc_open(hc, &srv[0], 150 * rh_slow()) != 0 || rh_tc_open(rv, &srv[0], 0, NULL, NULL, NULL) != 0) {
        CHECK_MSG(0, "connect");
        return -1;
    }
    CHECK_EQ_ST(rlock_lock_init(w, &hc->cl, key, strlen(key), kind), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(w, fair, 100), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(r, &rv->cl, key, strlen(key), kind), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(r, fair, 100), RLOCK_OK);
    return 0;
}

static void test_late_cleanup(rh_server *srv, rlock_kind kind, int fair) {
    rh_hconn hc;
    rh_tconn rv;
    rlock_lock w, r;
    const char *key = kind == RLOCK_KIND_SIMPLE ? "fair:late" : "fair:late:re";
    if (late_pair(srv, &hc, &rv, &w, &r, key, kind, fair) != 0) return;
    CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK); /* the scripts are loaded: a late EVALSHA runs */
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    hc.hold = 2; /* the attempt, then its cleanup */
    CHECK_EQ_ST(rlock_acquire(&w, 10000, 5000), RLOCK_OK);
    CHECK_EQ_LL(hc.n_late, 2);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s", key), 1);
    CHECK_EQ_LL(rh_hc_deliver(&hc, 1, &srv[0]), 0); /* the cleanup, late */
    CHECK_MSG(mine(&srv[0], &w, key), "the late cleanup took %s's grant away (%s)", key, rlock_lock_token(&w));
    CHECK_EQ_ST(rlock_try_acquire(&r, 10000), RLOCK_NOT_ACQUIRED); /* no second holder */
    CHECK_EQ_LL(rh_hc_deliver(&hc, 0, &srv[0]), 0); /* then the attempt it was for: refused */
    CHECK_MSG(mine(&srv[0], &w, key), "the late cleanup took %s's grant away (%s)", key, rlock_lock_token(&w));
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    rlock_cancel(&r);
    (void)rh_int(&srv[0], "DEL %s {%s}:waiters", key, key);
    rh_hc_close(&hc);
    rh_tc_close(&rv);
}

/* A late release cannot take a later hold away. A release times out (held
 * back: it may still reach the server), the retried release is answered,
 * and the handle holds again; then the first release lands. A reentrant
 * owner id is per instance and thread, the same for every hold: were the
 * new hold's the same, the late release (a decrement, deleting at 0) would
 * end it while its holder believes it holds. After a release or cleanup
 * that went unanswered the handle takes random owner ids (a simple lock's
 * token is new for every acquisition anyway). */
static void test_late_release(rh_server *srv, rlock_kind kind, int fair) {
    rh_hconn hc;
    rh_tconn rv;
    rlock_lock w, r;
    const char *key = "fair:late:rel";
    char first[80];
    if (late_pair(srv, &hc, &rv, &w, &r, key, kind, fair) != 0) return;
    CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK);
    snprintf(first, sizeof first, "%s", rlock_lock_token(&w));
    CHECK(kind == RLOCK_KIND_SIMPLE || strncmp(first, rlock_client_instance_id(&hc.cl), 16) == 0); /* the default owner */
    hc.hold = 1;
    CHECK_EQ_ST(rlock_release(&w), RLOCK_E_IO); /* unanswered: the lock may still be there */
    CHECK_EQ_LL(rlock_lock_state(&w), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK); /* the retry lands first */
    CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK);
    CHECK(strcmp(first, rlock_lock_token(&w)) != 0);
    CHECK_EQ_LL(rh_hc_deliver(&hc, 0, &srv[0]), 0); /* the first release, late */
    CHECK_MSG(mine(&srv[0], &w, key), "a late release took %s's hold away", key);
    CHECK_EQ_ST(rlock_try_acquire(&r, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    (void)rh_int(&srv[0], "DEL %s {%s}:waiters", key, key);
    rh_hc_close(&hc);
    rh_tc_close(&rv);
}

/* Two handles of one owner id (the same thread: they re-enter each other)
 * and a first hold's cleanup. a holds the key; b's first-hold attempt and
 * its cleanup are held back past the node timeout (the attempt may or may
 * not have run), then reach the server in either order. The cleanup must
 * undo only what b's attempt added: when the attempt had not run (the
 * cleanup first), a decrement by owner id would take a's count to 0 and
 * delete the key while a believes it holds (a rival then gets the lock);
 * when it had run, the cleanup takes its hold out again. Reentrant (fair
 * or not), read and write locks. */
static long long held_count(rh_server *s, const rlock_lock *lk, const char *key) {
    const char *sfx = lk->kind == RLOCK_KIND_READ ? ":r" : lk->kind == RLOCK_KIND_WRITE ? ":w" : "";
    char v[80];
    if (rh_str(s, v, sizeof v, "HGET %s %s%s", key, rlock_lock_token(lk), sfx) != REDIS_REPLY_STRING) return 0;
    return atoll(v);
}
static void test_shared_owner_cleanup(rh_server *srv, rlock_kind kind, int fair) {
    int order;
    for (order = 0; order < 2; order++) {
        rh_hconn hc;
        rh_tconn rv;
        rlock_lock a, b, r;
        rlock_info in;
        const char *key = "fair:shared";
        if (late_pair(srv, &hc, &rv, &a, &r, key, kind, fair) != 0) return;
        if (kind == RLOCK_KIND_READ) CHECK_EQ_ST(rlock_lock_init(&r, &rv.cl, key, strlen(key), RLOCK_KIND_WRITE), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&b, &hc.cl, key, strlen(key), kind), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_set_fair(&b, fair, 100), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&b, 10000, 0), RLOCK_OK); /* the scripts are loaded: a late EVALSHA runs */
        CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&a, 10000, 0), RLOCK_OK);
        CHECK_EQ_LL(held_count(&srv[0], &a, key), 1);
        hc.hold = 2; /* b's attempt, then its cleanup */
        CHECK_EQ_ST(rlock_try_acquire(&b, 10000), RLOCK_E_IO); /* unanswered (the cleanup too) */
        CHECK_EQ_LL(hc.n_late, 2);
        if (order == 0) { /* the cleanup first: the attempt had not run, nothing to undo */
            CHECK_EQ_LL(rh_hc_deliver(&hc, 1, &srv[0]), 0);
            CHECK_MSG(held_count(&srv[0], &a, key) == 1, "kind %d fair %d: b's cleanup ended a's hold (%lld)",
                      (int)kind, fair, held_count(&srv[0], &a, key));
            CHECK_EQ_ST(rlock_try_acquire(&r, 10000), RLOCK_NOT_ACQUIRED); /* a still holds */
            CHECK_EQ_LL(rh_hc_deliver(&hc, 0, &srv[0]), 0); /* the attempt, later still: a stray hold (its TTL) */
            CHECK_EQ_LL(held_count(&srv[0], &a, key), 2);
            /* the hash holds the grants' records too: inspect counts owners, not fields */
            CHECK_EQ_ST(rlock_inspect(&a, &in, 1), RLOCK_OK);
            CHECK_MSG(in.holders == 1 && in.holds == 2 && strncmp(in.owner, rlock_lock_token(&a), 16) == 0,
                      "inspect: %s, %lld holders, %lld holds, owner %s", in.kind, in.holders, in.holds, in.owner);
        } else { /* the attempt ran: its cleanup takes it out again */
            CHECK_EQ_LL(rh_hc_deliver(&hc, 0, &srv[0]), 0);
            CHECK_EQ_LL(held_count(&srv[0], &a, key), 2);
            CHECK_EQ_LL(rh_hc_deliver(&hc, 1, &srv[0]), 0);
            CHECK_EQ_LL(held_count(&srv[0], &a, key), 1);
        }
        CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
        if (order && !fair) CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s", key), 0); /* nothing of b's attempt left */
        rlock_cancel(&r);
        (void)rh_int(&srv[0], "DEL %s {%s}:waiters", key, key);
        rh_hc_close(&hc);
        rh_tc_close(&rv);
    }
}

/* A fair lock's key holds, between a release and the claim, the string
 * "~<waiter id>" (a reservation). A fair reentrant holder whose key the
 * server lost (deleted here; a restart, a force-unlock) while its validity
 * lasts, then taken and released to a waiter, extends: the key is not ours,
 * so RLOCK_LOST and the lost-lock notice - not RLOCK_E_WRONGTYPE (the
 * extend's HEXISTS on the reservation string), which the renewal took for
 * an unknown outcome and retried until the validity ran out. */
static int g_lost_calls;
static void on_lost_count(rlock_lock *lk, void *user) { (void)lk; (void)user; g_lost_calls++; }
static void test_extend_reserved(rh_server *srv) {
    fcli a, b, w;
    rlock_lock la, lb, lw;
    rlock_status sw;
    uint32_t next = 0;
    int i;
    char buf[64];
    const char *key = "fres:key";
    CHECK(fcli_open(&a, srv, 1, 1000, 0) == 0);
    CHECK(fcli_open(&b, srv, 1, 1000, 0) == 0);
    CHECK(fcli_open(&w, srv, 1, 1000, 0) == 0);
    a.cl.cfg.on_lost = on_lost_count;
    g_lost_calls = 0;
    CHECK_EQ_ST(rlock_lock_init(&la, &a.cl, key, strlen(key), RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lb, &b.cl, key, strlen(key), RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lw, &w.cl, key, strlen(key), RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&la, 1, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&lb, 1, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&lw, 1, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&la, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "DEL %s", key), 1); /* the server lost it */
    CHECK_EQ_ST(rlock_acquire(&lb, 10000, 0), RLOCK_OK);
    sw = rlock_acquire_begin(&lw, 10000, 8000);
    for (i = 0; i < 400 && sw == RLOCK_WOULD_BLOCK && queued(&srv[0], key) != 1; i++) {
        sw = rlock_step(&lw);
        rh_sleep_ms(5);
    }
    CHECK_EQ_ST(sw, RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(queued(&srv[0], key), 1);
    CHECK_EQ_ST(rlock_release(&lb), RLOCK_OK); /* reserved for w (5 s grace), w not stepped yet */
    CHECK_EQ_LL(rh_str(&srv[0], buf, sizeof buf, "GET %s", key), REDIS_REPLY_STRING);
    CHECK_MSG(buf[0] == '~', "the key holds %s, not a reservation", buf);
    CHECK_EQ_ST(rlock_extend(&la, 10000), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&la), RLOCK_STATE_LOST);
    CHECK_EQ_LL(g_lost_calls, 1);
    CHECK_EQ_ST(rlock_renew_poll(&la, &next), RLOCK_LOST); /* stays lost, told once */
    CHECK_EQ_LL(g_lost_calls, 1);
    CHECK_EQ_LL(rh_str(&srv[0], buf, sizeof buf, "GET %s", key), REDIS_REPLY_STRING);
    CHECK_MSG(buf[0] == '~', "the extend changed the reservation: %s", buf);
    for (i = 0; i < 1000 && sw == RLOCK_WOULD_BLOCK; i++) {
        sw = rlock_step(&lw);
        if (sw == RLOCK_WOULD_BLOCK) rh_sleep_ms(5);
    }
    CHECK_EQ_ST(sw, RLOCK_OK); /* w claims its reservation */
    CHECK_EQ_ST(rlock_release(&la), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&lw), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s", key), 0);
    fcli_close(&w);
    fcli_close(&b);
    fcli_close(&a);
    rh_int(&srv[0], "DEL {%s}:waiters", key);
}

int main(void) {
    rh_server srv[NSRV];
    int fds0, i, up = 1;
    unsigned long long t0 = rh_now_ms();
    quick = getenv("RLOCK_TEST_QUICK") != NULL && getenv("RLOCK_TEST_QUICK")[0] != '\0' &&
            strcmp(getenv("RLOCK_TEST_QUICK"), "0") != 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();
    for (i = 0; i < NSRV; i++)
        if (rh_server_start(&srv[i], NULL) != 0) { up = 0; srv[i].pid = -1; }
    snprintf(g_marker, sizeof g_marker, "%s/cs-marker", srv[0].dir);
    if (!up) {
        CHECK_MSG(0, "could not start redis-server");
        for (i = 0; i < NSRV; i++) rh_server_stop(&srv[i]);
        return check_summary("fair");
    }
    test_badarg(srv);
    test_fifo(srv, 1, 0, 0, 0);
    test_fifo(srv, 1, 1, 1, 0);
    test_no_barging(srv);
    test_dead_waiter(srv);
    test_standby_with_refusal(srv);
    test_timed_out_waiter(srv, RLOCK_KIND_SIMPLE);
    test_timed_out_waiter(srv, RLOCK_KIND_REENTRANT);
    test_cancelled_waiter(srv, RLOCK_KIND_SIMPLE);
    test_cancelled_waiter(srv, RLOCK_KIND_REENTRANT);
    test_extend_reserved(srv);
    test_late_cleanup(srv, RLOCK_KIND_SIMPLE, 1);
    test_late_cleanup(srv, RLOCK_KIND_REENTRANT, 1);
    test_late_cleanup(srv, RLOCK_KIND_REENTRANT, 0);
    test_late_cleanup(srv, RLOCK_KIND_SIMPLE, 0);
    test_late_release(srv, RLOCK_KIND_REENTRANT, 0);
    test_late_release(srv, RLOCK_KIND_REENTRANT, 1);
    test_late_release(srv, RLOCK_KIND_SIMPLE, 1);
    test_shared_owner_cleanup(srv, RLOCK_KIND_REENTRANT, 0);
    test_shared_owner_cleanup(srv, RLOCK_KIND_REENTRANT, 1);
    test_shared_owner_cleanup(srv, RLOCK_KIND_READ, 0);
    test_shared_owner_cleanup(srv, RLOCK_KIND_WRITE, 0);
    test_holder_killed(srv);
    test_lost_notices(srv, 1);
    test_lost_notices(srv, 0);
    test_churn(srv, 1);
    test_fifo(srv, 3, 0, 0, 0);
    test_churn(srv, 3);
    rh_server_kill9(&srv[2]); /* one Redlock node down from here on */
    test_fifo(srv, 3, 0, 0, 1);
    /* Nothing left behind on the single node; on Redlock a queue entry of a
     * waiter that one node never served may stay until the queue's TTL. */
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS fair:churn:1 {fair:churn:1}:waiters fair:churn:3"), 0);
    CHECK_EQ_LL(rh_int(&srv[1], "EXISTS fair:churn:3"), 0);
    CHECK_MSG(rh_int(&srv[0], "PTTL {fair:churn:3}:waiters") != -1, "a Redlock queue without a TTL");
    for (i = 0; i < NSRV; i++) rh_server_stop(&srv[i]);
    CHECK_EQ_LL(rh_count_children(), 0);
    CHECK_MSG(rh_count_fds() == fds0, "fds at start %d, at end %d", fds0, rh_count_fds());
    printf("fair: %s run in %lld ms\n", quick ? "quick" : "full", since(t0));
    return check_summary("fair");
}
