/* test_waiting.c - waiting, renewal and lost-lock notice against real
 * redis-server processes that the test starts on free loopback ports and
 * stops by PID: pub/sub wake-up on release (and what happens when the
 * subscriber connection dies: FAULTS.md row 13), fencing tokens among
 * contending processes, thread-free renewal (rlock_renew_poll) and the
 * RLOCK_WATCHDOG renewal thread, a holder paused past its TTL (rows 3, 12),
 * renewal through a node failure, renewal caps, and that nothing leaks
 * (fds, threads, child processes, servers).
 *
 * RLOCK_TEST_QUICK=1 (the valgrind run) shrinks the loops. Timing asserts use
 * generous bounds and orderings; exact counts only where nothing is timed.
 * The tests of sub-second leases scale them, with their node timeouts, waits
 * and bounds, by rh_slow() (3 under valgrind; RLOCK_TEST_SLOW); so do the
 * tests of longer leases with their node timeouts wherever that timeout only
 * bounds how fast a healthy loopback server answers. Fixed: the node timeouts
 * that a test relates to its lease (one that must outlast the validity, with
 * the server stopped: test_state_during_renewal, test_watchdog_stop_in_flight;
 * under a clock hook: test_renew_past_validity), and the warm-up's 10 s. */
#define RLOCK_WATCHDOG
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "harness.h"
#include "check.h"

#include <poll.h>

#define NSRV 3

/* Threads of this process before any test: 1, plus an emulator's own
 * (qemu-user's show in /proc/self/task); "no thread left" means back to it. */
static int g_threads0 = 1;

/* The thread count once it is back to g_threads0, or what it still is after
 * 2 s. Natively a joined thread is gone at once; under qemu-user its host
 * thread can linger a moment after pthread_join returns. */
static int threads_back(void) {
    int i, n = rh_count_threads();
    for (i = 0; i < 400 && n != g_threads0; i++) {
        rh_sleep_ms(5);
        n = rh_count_threads();
    }
    return n;
}
static int quick;
/* rh_slow(): SLOW(ms) is ms on this run's clock (a lease, a node timeout, a
 * wait or a bound of one test, all scaled together). */
static unsigned slow = 1;
#define SLOW(ms) ((unsigned)(ms) * slow)

/* ------------------------------------------------------------ helpers */

static long long since(unsigned long long t0) { return (long long)(rh_now_ms() - t0); }

/* A client over the POSIX adapter on n servers, optionally with one
 * subscriber connection per server. Must not move once opened. */
typedef struct tcli {
    int n, nsubs;
    rlock_posix_conn pc[NSRV], spc[NSRV];
    rlock_node nodes[NSRV];
    rlock_subscriber subs[NSRV];
    rlock_client cl;
} tcli;

static int tcli_open(tcli *t, rh_server *const *srv, int n, const rlock_config *cfg, int with_subs) {
    int i;
    memset(t, 0, sizeof *t);
    t->n = n;
    for (i = 0; i < n; i++) {
        if (rlock_posix_init_tcp(&t->pc[i], "127.0.0.1", srv[i]->port, 1000) != 0) return -1;
        if (rlock_node_init(&t->nodes[i], rlock_posix_transport(&t->pc[i])) != RLOCK_OK) return -1;
    }
    if (rlock_client_init(&t->cl, t->nodes, (size_t)n, cfg) != RLOCK_OK) return -1;
    if (with_subs) {
        for (i = 0; i < n; i++) {
            if (rlock_posix_init_tcp(&t->spc[i], "127.0.0.1", srv[i]->port, 1000) != 0) return -1;
            if (rlock_subscriber_init(&t->subs[i], rlock_posix_transport(&t->spc[i])) != RLOCK_OK) return -1;
        }
        if (rlock_client_set_subscribers(&t->cl, t->subs, (size_t)n) != RLOCK_OK) return -1;
        t->nsubs = n;
    }
    return 0;
}

static void tcli_close(tcli *t) {
    int i;
    rlock_client_close(&t->cl);
    for (i = 0; i < t->n; i++) rlock_posix_close(&t->pc[i]);
    for (i = 0; i < t->nsubs; i++) rlock_posix_close(&t->spc[i]);
}

/* Wait up to ms for any connection of t that an op waits on (what a caller
 * of the non-blocking API does); plain sleep when none waits. */
static void tcli_wait(tcli *t, uint32_t ms) {
    struct pollfd p[2 * NSRV];
    int i, k = 0;
    for (i = 0; i < t->n + t->nsubs; i++) {
        rlock_posix_conn *pc = i < t->n ? &t->pc[i] : &t->spc[i - t->n];
        int w = i < t->n ? rlock_node_wants(&t->nodes[i]) : rlock_subscriber_wants(&t->subs[i - t->n]);
        if (!w || pc->fd < 0) continue;
        p[k].fd = pc->fd;
        p[k].events = (short)(((w & RLOCK_WANT_READ) ? POLLIN : 0) | ((w & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p[k].revents = 0;
        k++;
    }
    if (k == 0) { if (ms) rh_sleep_ms(ms); return; }
    (void)poll(p, (nfds_t)k, (int)ms);
}

/* Step lk, waiting on t's connections in between (at most 50 ms at a time,
 * less when lk is due sooner), until it is done or ms have passed; its last
 * status (st: the one it had). */
static rlock_status step_until_done(rlock_lock *lk, tcli *t, rlock_status st, unsigned ms) {
    unsigned long long t0 = rh_now_ms();
    while (st == RLOCK_WOULD_BLOCK && since(t0) < (long long)ms) {
        uint32_t to = rlock_next_timeout_ms(lk);
        if ((st = rlock_step(lk)) != RLOCK_WOULD_BLOCK) break;
        tcli_wait(t, to < 50 ? to : 50);
    }
    return st;
}

/* A waiter woken by a release: wl (status *st, waiting; stepped on w's
 * connections) is stepped for settle_ms and must still wait - only a
 * notice moves it now -, then the holder hl releases and wl must be granted
 * within 1 s: by the notice, not its re-check (5 s; what: which waiter, for
 * the message). The ms from the release to the grant (or to giving up, 8 s);
 * wl's status in *st (the caller releases it). */
static long long release_wakes(rlock_lock *hl, rlock_lock *wl, tcli *w, rlock_status *st, unsigned settle_ms,
                               const char *what) {
    unsigned long long t0 = rh_now_ms();
    long long took;
    while (*st == RLOCK_WOULD_BLOCK && since(t0) < (long long)settle_ms) {
        uint32_t to = rlock_next_timeout_ms(wl);
        *st = rlock_step(wl);
        tcli_wait(w, to < 10 ? to : 10);
    }
    CHECK_EQ_ST(*st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_release(hl), RLOCK_OK);
    t0 = rh_now_ms();
    *st = step_until_done(wl, w, *st, 8000);
    took = since(t0);
    CHECK_EQ_ST(*st, RLOCK_OK);
    CHECK_MSG(took < 1000, "%s: granted %lld ms after the release (re-check 5 s)", what, took);
    return took;
}

/* Finish a renewal still in flight (rlock_renew_poll said WOULD_BLOCK):
 * until then the handle is busy and release says RLOCK_E_STATE. */
static rlock_status renew_settle(tcli *t, rlock_lock *lk) {
    unsigned long long t0 = rh_now_ms();
    rlock_status st;
    uint32_t next;
    while ((st = rlock_renew_poll(lk, &next)) == RLOCK_WOULD_BLOCK && since(t0) < 2000)
        tcli_wait(t, next > 10 ? 10 : next);
    return st;
}

static rlock_config cfg_base(uint32_t node_timeout_ms, int *lost_counter) {
    rlock_config c;
    rlock_config_init(&c);
    c.node_timeout_ms = node_timeout_ms;
    if (lost_counter) c.hook_user = lost_counter;
    return c;
}

/* on_lost: count the calls in the int that hook_user points to. */
static void count_lost(rlock_lock *lk, void *user) {
    (void)lk;
    if (user) (*(int *)user)++;
}

/* GET key == want, or want + "+": a waiter granted by a script marks its
 * value, so that its release wakes the next (rlock.h, the "queued" mark). */
static int key_is(const rh_server *s, const char *key, const char *want) {
    char buf[256];
    size_t n = strlen(want);
    return rh_str(s, buf, sizeof buf, "GET %s", key) == REDIS_REPLY_STRING && strncmp(buf, want, n) == 0 &&
           (buf[n] == '\0' || (buf[n] == '+' && buf[n + 1] == '\0'));
}

/* GET key as a number, -999 when missing or not a string. */
static long long get_ll(const rh_server *s, const char *key) {
    char buf[64];
    if (rh_str(s, buf, sizeof buf, "GET %s", key) != REDIS_REPLY_STRING) return -999;
    return atoll(buf);
}

/* PUBSUB NUMSUB chan -> subscribers, -1 on error. */
static long long numsub(const rh_server *s, const char *chan) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -1;
    if (!c) return -1;
    r = (redisReply *)redisCommand(c, "PUBSUB NUMSUB %s", chan);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
        v = r->element[1]->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* Poll until PUBSUB NUMSUB chan >= want, up to ms. */
static int wait_numsub(const rh_server *s, const char *chan, long long want, unsigned ms) {
    unsigned long long t0 = rh_now_ms();
    while (since(t0) < (long long)ms) {
        if (numsub(s, chan) >= want) return 1;
        rh_sleep_ms(5);
    }
    return 0;
}

/* Poll until ZCARD zkey == want, up to ms: a subscribed waiter queues by
 * the attempt it makes next, in its own time (a child stalled on a loaded
 * machine makes it late, not never). */
static int wait_zcard(const rh_server *s, const char *zkey, long long want, unsigned ms) {
    unsigned long long t0 = rh_now_ms();
    while (since(t0) < (long long)ms) {
        if (rh_int(s, "ZCARD %s", zkey) == want) return 1;
        rh_sleep_ms(5);
    }
    return 0;
}

static int exit_code(int status) { return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

/* Child: poll try_acquire on key every ~10 ms for dur_ms. Exit 0 never got
 * it, 1 got it (two holders), 2 mostly errors, 3 too few attempts, 10 setup. */
static int competitor_child(rh_server *const *srv, int n, const char *key, unsigned dur_ms) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    unsigned long long t0 = rh_now_ms();
    int attempts = 0, got = 0, errors = 0;
    if (tcli_open(&t, srv, n, &cfg, 0) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    while (since(t0) < (long long)dur_ms) {
        rlock_status st = rlock_try_acquire(&lk, 5000);
        attempts++;
        if (st == RLOCK_OK) {
            got++;
            fprintf(stderr, "competitor %ld: acquired %s while it should be held\n", (long)getpid(), key);
            (void)rlock_release(&lk);
        } else if (st != RLOCK_NOT_ACQUIRED) {
            errors++;
        }
        rh_sleep_ms(10);
    }
    tcli_close(&t);
    return got ? 1 : errors * 2 > attempts ? 2 : attempts < 20 ? 3 : 0;
}

/* ---------------------------- 1. holder paused past its TTL (rows 3, 12) */

/* Child: acquire (ttl 300), report 'A' on wfd, then renew with
 * rlock_renew_poll. Exit 0 when after the pause it saw LOST promptly, on_lost
 * ran exactly once, and release said LOST. */
static int pause_child(rh_server *s, int wfd) {
    int lost_calls = 0, errors = 0;
    rlock_config cfg = cfg_base(SLOW(100), &lost_calls);
    tcli t;
    rlock_lock lk;
    rlock_status st;
    uint32_t next;
    unsigned long long start, prev = 0, resumed = 0, lost_at = 0;
    char c;
    cfg.on_lost = count_lost;
    if (tcli_open(&t, &s, 1, &cfg, 0) != 0 ||
        rlock_lock_init(&lk, &t.cl, "pause:key", 9, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    st = rlock_acquire(&lk, SLOW(300), SLOW(2000));
    c = st == RLOCK_OK ? 'A' : 'F';
    if (write(wfd, &c, 1) != 1 || st != RLOCK_OK) { tcli_close(&t); return 11; }
    close(wfd);
    start = rh_now_ms();
    while (since(start) < SLOW(15000)) {
        unsigned long long now = rh_now_ms();
        /* a gap between two iterations much longer than any wait = we were stopped */
        if (prev && now - prev > SLOW(400) && !resumed) resumed = now;
        prev = now;
        st = rlock_renew_poll(&lk, &next);
        now = rh_now_ms();
        if (now - prev > SLOW(400) && !resumed) resumed = now; /* stopped just before or inside the call */
        if (st == RLOCK_LOST) { lost_at = now; break; }
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) errors++;
        if (rlock_lock_state(&lk) == RLOCK_STATE_LOST && !resumed) {
            /* the state says LOST before any call found out: only after the pause */
            fprintf(stderr, "pause child: LOST without a pause (errors %d)\n", errors);
        }
        tcli_wait(&t, next > 50 ? 50 : next);
    }
    if (!lost_at) { tcli_close(&t); return 12; }
    if (!resumed) { tcli_close(&t); return 15; }            /* LOST, but never paused? */
    if (lost_at - resumed > SLOW(300)) {
        fprintf(stderr, "pause child: LOST %llu ms after resuming\n", lost_at - resumed);
        tcli_close(&t);
        return 16;
    }
    if (lost_calls != 1) { fprintf(stderr, "pause child: on_lost ran %d times\n", lost_calls); tcli_close(&t); return 13; }
    if (rlock_lock_state(&lk) != RLOCK_STATE_LOST) { tcli_close(&t); return 18; }
    if (rlock_renew_poll(&lk, &next) != RLOCK_LOST || lost_calls != 1) { tcli_close(&t); return 17; }
    if (rlock_release(&lk) != RLOCK_LOST) { tcli_close(&t); return 14; }
    if (rlock_lock_state(&lk) == RLOCK_STATE_HELD || lost_calls != 1) { tcli_close(&t); return 19; }
    if (rlock_renew_poll(&lk, &next) != RLOCK_NOT_HELD) { tcli_close(&t); return 20; }
    tcli_close(&t);
    return 0;
}

static void test_lost_after_pause(rh_server *s) {
    int pfd[2], status;
    pid_t pid;
    char c = 0;
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    unsigned long long t0, tcont;

    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(pause_child(s, pfd[1]));
    }
    CHECK(pid > 0);
    close(pfd[1]);
    if (pid < 0) { close(pfd[0]); return; }
    CHECK(rh_read_full(pfd[0], &c, 1, 10000) == 0 && c == 'A');
    close(pfd[0]);
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "pause:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    if (c == 'A') {
        rh_sleep_ms(SLOW(500)); /* > its TTL: still held only because it renews */
        CHECK_EQ_ST(rlock_try_acquire(&lk, 5000), RLOCK_NOT_ACQUIRED);
        kill(pid, SIGSTOP);
        t0 = rh_now_ms();
        CHECK_EQ_ST(rlock_acquire(&lk, SLOW(5000), SLOW(3000)), RLOCK_OK); /* its lease runs out meanwhile */
        CHECK_MSG(since(t0) < SLOW(700), "took the lock %lld ms after SIGSTOP", since(t0));
        while (since(t0) < SLOW(800)) rh_sleep_ms(10);
        tcont = rh_now_ms();
        kill(pid, SIGCONT);
        status = rh_wait_child(pid, 20000);
        printf("pause: the resumed holder finished %lld ms after SIGCONT\n", since(tcont));
        CHECK_MSG(since(tcont) < SLOW(3000), "child took %lld ms after SIGCONT", since(tcont));
    } else {
        status = rh_wait_child(pid, 20000);
    }
    CHECK_MSG(rh_exited_with(status, 0), "paused holder: exit %d (12 never LOST, 13 on_lost count, 14 release "
              "not LOST, 15 no pause seen, 16 LOST late, 17/18/19/20 state after)", exit_code(status));
    if (c == 'A') {
        CHECK(key_is(s, "pause:key", rlock_lock_token(&lk))); /* the child never deleted ours */
        CHECK(rh_int(s, "PTTL pause:key") > SLOW(3000));
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    }
    CHECK_EQ_LL(rh_int(s, "EXISTS pause:key"), 0);
    tcli_close(&t);
}

/* A renewal is in flight to a server that stopped answering (SIGSTOP) when
 * the lease's validity runs out: rlock_lock_state says LOST from then on
 * (the extend can no longer succeed: it needs a quorum before the validity's
 * end), not HELD until the node timeout ends the extend; and renew_poll
 * says LOST (on_lost, once) then too: the renewal's wait ends there.
 * (rlock_watchdog_state reads the watchdog's handle so, whose renewal is
 * often in flight.) */
static void test_state_during_renewal(rh_server *s) {
    int lost_calls = 0, in_flight = 0;
    rlock_config cfg = cfg_base(900, &lost_calls);
    tcli t;
    rlock_lock lk;
    uint32_t next = 0;
    rlock_status st = RLOCK_OK;
    rlock_state during = RLOCK_STATE_IDLE;
    unsigned long long t0;
    cfg.on_lost = count_lost;
    cfg.renew_every_ms = 300;

    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "statefly:key", 12, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    rh_server_pause(s);
    t0 = rh_now_ms();
    /* poll until the validity is gone, the renewal (started at 300 ms, its
     * node timeout 900 ms) still in flight */
    while (since(t0) < 3000) {
        st = rlock_renew_poll(&lk, &next);
        if (st != RLOCK_WOULD_BLOCK && st != RLOCK_OK) break;
        if (st == RLOCK_WOULD_BLOCK) in_flight = 1;
        if (in_flight && rlock_validity_ms(&lk) == 0) {
            during = rlock_lock_state(&lk);
            break;
        }
        tcli_wait(&t, next > 5 ? 5 : next);
    }
    /* (the poll that found the validity gone may have said LOST already) */
    CHECK_MSG(in_flight && (st == RLOCK_WOULD_BLOCK || st == RLOCK_LOST),
              "no renewal in flight at the validity's end (%s, %lld ms)", rlock_status_str(st), since(t0));
    CHECK_MSG(st == RLOCK_LOST || during == RLOCK_STATE_LOST, "rlock_lock_state %d (not LOST) with the validity "
              "gone, %lld ms into a 1000 ms lease, its renewal in flight", (int)during, since(t0));
    /* Still paused: the renewal's wait ends with the validity (LOST now,
     * on_lost once), not at its node timeout ~200 ms later. */
    if (st == RLOCK_WOULD_BLOCK) st = rlock_renew_poll(&lk, &next);
    CHECK_MSG(st == RLOCK_LOST && lost_calls == 1, "the validity gone, the renewal in flight: renew_poll %s, on_lost "
              "%d times, %lld ms into the lease", rlock_status_str(st), lost_calls, since(t0));
    rh_server_resume(s);
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    /* (the late extend may have reached the server before the key expired:
     * the owner-checked release removes what is left of ours) */
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_LOST, "release: %s", rlock_status_str(st));
    CHECK_EQ_LL(rh_int(s, "EXISTS statefly:key"), 0);
    tcli_close(&t);
}

/* A renewal that another call finds LOST: the app's event loop drives the
 * client (rlock_client_step; another lock's rlock_step on the same client
 * does the same), which reads the renewal's refusal (the key was deleted)
 * and marks the lock LOST (on_lost, once). The next rlock_renew_poll
 * collects that renewal: LOST, outcome RLOCK_RENEW_LOST, the handle free
 * again. (Found by fuzz_locks, which drives renewals among other locks'
 * ops: marking the lock lost cleared the "renewal in flight" flag, so the
 * poll no longer knew the finished extend as its own and said RLOCK_E_STATE
 * on every call, outcome stuck at IN_FLIGHT, the op never collected.) */
static void test_renewal_lost_in_client_step(rh_server *s) {
    int lost_calls = 0;
    rlock_config cfg = cfg_base(SLOW(2000), &lost_calls);
    tcli t;
    rlock_lock lk;
    uint32_t next = 0;
    rlock_status st;
    unsigned long long t0;
    cfg.on_lost = count_lost;
    cfg.renew_every_ms = 1; /* due at once */
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "stepfound:key", 13, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "DEL stepfound:key"), 1); /* the renewal will be refused */
    rh_sleep_ms(5);
    /* paused: the renewal goes out and stays in flight */
    rh_server_pause(s);
    st = rlock_renew_poll(&lk, &next);
    CHECK_MSG(st == RLOCK_WOULD_BLOCK, "renew_poll with the server paused: %s", rlock_status_str(st));
    rh_server_resume(s);
    /* the event loop, not the poll, reads the refusal */
    t0 = rh_now_ms();
    while (lost_calls == 0 && since(t0) < 3000) {
        CHECK_EQ_ST(rlock_client_step(&t.cl), RLOCK_OK);
        tcli_wait(&t, 5);
    }
    CHECK_MSG(lost_calls == 1 && rlock_lock_state(&lk) == RLOCK_STATE_LOST,
              "the client step did not find the renewal refused: on_lost %d, state %d", lost_calls,
              (int)rlock_lock_state(&lk));
    st = rlock_renew_poll(&lk, &next);
    CHECK_MSG(st == RLOCK_LOST, "renew_poll after the client step found the renewal refused: %s (outcome %d)",
              rlock_status_str(st), (int)rlock_renew_outcome(&lk));
    CHECK_EQ_LL(rlock_renew_outcome(&lk), RLOCK_RENEW_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    st = rlock_release(&lk); /* (the handle is free: not RLOCK_E_STATE) */
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_LOST, "release: %s", rlock_status_str(st));
    tcli_close(&t);
}

/* ------------------------ 2. renewal keeps a lock 10x its TTL, no gap */

static void test_renew_no_gap(rh_server *s) {
    int lost_calls = 0, errors = 0, status, polls = 0;
    rlock_config cfg = cfg_base(SLOW(60), &lost_calls);
    tcli t;
    rlock_lock lk;
    pid_t pid;
    unsigned dur = SLOW(quick ? 1500 : 2000);
    unsigned long long t0;
    cfg.on_lost = count_lost;

    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "gap:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(200), 0), RLOCK_OK);
    pid = rh_fork();
    if (pid == 0) _exit(competitor_child(&s, 1, "gap:key", dur));
    CHECK(pid > 0);
    t0 = rh_now_ms();
    status = -1;
    for (;;) {
        uint32_t next;
        rlock_status st = rlock_renew_poll(&lk, &next);
        polls++;
        if (st == RLOCK_LOST) break;
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) errors++;
        if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) break;
        if (since(t0) > (long long)dur + 10000) break;
        tcli_wait(&t, next > 20 ? 20 : next);
    }
    if (pid > 0 && status == -1) status = rh_wait_child(pid, 1000);
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_OK);
    printf("renew_poll: ttl %u held %lld ms, %d polls, %d failed renewals\n", SLOW(200), since(t0), polls, errors);
    CHECK_MSG(rh_exited_with(status, 0), "competitor exit %d (1 = it acquired a held lock)", exit_code(status));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK_EQ_LL(lost_calls, 0);
    CHECK(since(t0) >= (long long)dur); /* it really was held 7-10x its TTL */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS gap:key"), 0);
    tcli_close(&t);
}

static void test_watchdog_no_gap(rh_server *s) {
    int lost_calls = 0, status = -1, not_held = 0, samples = 0, tasks0;
    rlock_config cfg = cfg_base(SLOW(60), &lost_calls);
    tcli t, own;
    rlock_lock lk;
    rlock_watchdog w;
    pid_t pid;
    unsigned dur = SLOW(quick ? 1500 : 2000);
    unsigned long long t0;
    long long validity = 0;
    cfg.on_lost = count_lost;

    tasks0 = rh_count_threads();
    CHECK_EQ_LL(tasks0, g_threads0);
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK(tcli_open(&own, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wdgap:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(200), 0), RLOCK_OK);
    /* fork before the thread exists: a child of a threaded process may only
     * use async-signal-safe calls */
    pid = rh_fork();
    if (pid == 0) _exit(competitor_child(&s, 1, "wdgap:key", dur));
    CHECK(pid > 0);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
    CHECK_EQ_LL(rh_count_threads(), tasks0 + 1);
    t0 = rh_now_ms();
    while (pid > 0 && since(t0) < (long long)dur + 10000) {
        if (waitpid(pid, &status, WNOHANG) == pid) break;
        if (rlock_watchdog_state(&w, &validity) != RLOCK_STATE_HELD) not_held++;
        samples++;
        rh_sleep_ms(10);
    }
    if (pid > 0 && status == -1) status = rh_wait_child(pid, 1000);
    printf("watchdog: ttl %u held %lld ms (%d samples, %d not HELD)\n", SLOW(200), since(t0), samples, not_held);
    CHECK_MSG(rh_exited_with(status, 0), "competitor exit %d (1 = it acquired a held lock)", exit_code(status));
    CHECK_EQ_LL(not_held, 0);
    CHECK(rlock_watchdog_state(&w, &validity) == RLOCK_STATE_HELD);
    CHECK(validity > 0);
    CHECK_EQ_ST(rlock_watchdog_stop(&w), RLOCK_OK);
    CHECK_EQ_LL(threads_back(), g_threads0);
    CHECK_EQ_LL(lost_calls, 0);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK(rlock_watchdog_state(&w, &validity) == RLOCK_STATE_IDLE); /* stopped */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS wdgap:key"), 0);
    tcli_close(&t);
    tcli_close(&own);
}

/* -------------- 3. Redlock renewal through 1, then 2, of 3 nodes killed */

/* Renew lk for dur_ms; every ~30 ms a competitor on the same nodes tries.
 * Returns the competitor's successes; *errors counts failed renewals. Stops
 * early on LOST. With until_ok, returns once renew_poll says OK (nothing in flight). */
static int renew_for(tcli *t, rlock_lock *lk, tcli *comp, rlock_lock *clk, unsigned dur_ms,
                     int *errors, rlock_status *last) {
    unsigned long long t0 = rh_now_ms(), next_try = 0;
    int got = 0;
    *last = RLOCK_OK;
    while (since(t0) < (long long)dur_ms) {
        uint32_t next;
        rlock_status st = rlock_renew_poll(lk, &next);
        *last = st;
        if (st == RLOCK_LOST) break;
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) (*errors)++;
        if (comp && rh_now_ms() >= next_try) {
            rlock_status cs = rlock_try_acquire(clk, 5000);
            if (cs == RLOCK_OK) { got++; (void)rlock_release(clk); }
            next_try = rh_now_ms() + 30;
        }
        tcli_wait(t, next > 10 ? 10 : next);
    }
    return got;
}

static void test_redlock_renew_kill(rh_server *srv) {
    rh_server *sp[NSRV];
    int lost_calls = 0, errors = 0, got, i;
    rlock_config cfg = cfg_base(SLOW(100), &lost_calls);
    tcli t, comp;
    rlock_lock lk, clk;
    rlock_status last, st;
    unsigned long long t_end, t_lost = 0, t0;
    long long validity;
    cfg.on_lost = count_lost;

    for (i = 0; i < NSRV; i++) sp[i] = &srv[i];
    CHECK(tcli_open(&t, sp, NSRV, &cfg, 0) == 0);
    CHECK(tcli_open(&comp, sp, NSRV, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "rl:renew", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&clk, &comp.cl, "rl:renew", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(600), 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&lk), 3);

    got = renew_for(&t, &lk, &comp, &clk, SLOW(300), &errors, &last);
    CHECK_EQ_LL(got, 0);
    rh_server_kill9(&srv[2]);
    got = renew_for(&t, &lk, &comp, &clk, SLOW(1800), &errors, &last); /* 3x the TTL on 2 of 3 */
    printf("redlock renewal: held %u ms of a %u ms lease on 2 of 3 nodes, %d failed renewals, last votes %zu\n",
           SLOW(1800), SLOW(600), errors, rlock_last_votes(&lk));
    CHECK_EQ_LL(got, 0);
    CHECK(last != RLOCK_LOST);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK_EQ_LL(lost_calls, 0);
    CHECK_EQ_LL(rlock_last_votes(&lk), 2);
    CHECK_EQ_ST(rlock_try_acquire(&clk, 5000), RLOCK_NOT_ACQUIRED);

    /* settle: nothing in flight, so the validity we read is final */
    t0 = rh_now_ms();
    do {
        uint32_t next;
        st = rlock_renew_poll(&lk, &next);
        if (st == RLOCK_OK) break;
        tcli_wait(&t, next > 10 ? 10 : next);
    } while (since(t0) < SLOW(2000));
    CHECK_EQ_ST(st, RLOCK_OK);
    rh_server_kill9(&srv[1]);
    validity = rlock_validity_ms(&lk);
    t_end = rh_now_ms() + (unsigned long long)validity;
    CHECK(validity > 0);
    errors = 0;
    while (rh_now_ms() < t_end + 3000) {
        uint32_t next;
        st = rlock_renew_poll(&lk, &next);
        if (st == RLOCK_LOST) { t_lost = rh_now_ms(); break; }
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) errors++;
        tcli_wait(&t, next > 10 ? 10 : next);
    }
    printf("redlock renewal: 2 of 3 down, %d failed renewals, LOST %lld ms after validity end\n", errors,
           t_lost ? (long long)t_lost - (long long)t_end : -1LL);
    CHECK(t_lost != 0);
    CHECK_MSG(t_lost <= t_end + (quick ? 300 : 150), "LOST %lld ms after the validity ended",
              (long long)t_lost - (long long)t_end);
    CHECK_MSG(t_lost + 30 >= t_end, "LOST %lld ms before the validity ended (no node refused)",
              (long long)t_end - (long long)t_lost);
    CHECK(errors > 0); /* it kept trying (quorum errors) */
    CHECK_EQ_LL(lost_calls, 1);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_LOST);
    CHECK_EQ_LL(rlock_validity_ms(&lk), 0);
    CHECK_EQ_LL(rlock_fence_token(&lk), 0);
    /* one node left: no quorum either way; the release cannot confirm */
    st = rlock_release(&lk);
    printf("redlock renewal: release with 1 of 3 up: %s\n", rlock_status_str(st));
    CHECK(st == RLOCK_LOST || st == RLOCK_E_QUORUM);
    CHECK(rlock_lock_state(&lk) != RLOCK_STATE_HELD);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_ST(rlock_try_acquire(&clk, 5000), RLOCK_E_QUORUM);
    tcli_close(&t);
    tcli_close(&comp);
}

/* ------------------------------------------------ 4. pub/sub wake-up */

/* What a holder child says once its acquire returned: c 'A' (granted) or
 * 'F', and when (rh_now_ms: CLOCK_MONOTONIC, one clock for all processes). */
typedef struct hold_report {
    unsigned long long t_grant;
    char c;
} hold_report;

/* Child: hold key (lease 10 s), report (hold_report), release after
 * hold_ms. Exit 0 when the release was OK. */
static int holder_child(rh_server *s, const char *key, unsigned hold_ms, int wfd) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    rlock_status st;
    hold_report r;
    memset(&r, 0, sizeof r);
    if (tcli_open(&t, &s, 1, &cfg, 0) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    st = rlock_acquire(&lk, 10000, 2000);
    r.t_grant = rh_now_ms();
    r.c = st == RLOCK_OK ? 'A' : 'F';
    if (write(wfd, &r, sizeof r) != (ssize_t)sizeof r || st != RLOCK_OK) { tcli_close(&t); return 11; }
    close(wfd);
    rh_sleep_ms(hold_ms);
    st = rlock_release(&lk);
    tcli_close(&t);
    return st == RLOCK_OK ? 0 : 12;
}

/* A holder child keeps key for 300 ms of a 10 s lease; we wait for it with
 * or without subscribers. Returns the waiter's commands on the main node.
 * The hold and the re-check (1 s) scale by rh_slow() together: the hold is
 * what this process, stalled after the grant, must not outlive, and the
 * command counts hold while the re-check is the longer. */
static long long wake_once(rh_server *s, int with_subs, long long *elapsed, unsigned long *sub_cmds) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    int pfd[2], status;
    pid_t pid;
    hold_report hr;
    unsigned long cmds0;
    unsigned long long t0;
    long long cmds = -1;
    const char *key = with_subs ? "wake:sub" : "wake:poll";

    *elapsed = -1;
    *sub_cmds = 0;
    cfg.recheck_ms = SLOW(1000); /* (the default, natively) */
    CHECK(tcli_open(&t, &s, 1, &cfg, with_subs) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    /* warm up: connect and load the scripts (NOSCRIPT fallback) first */
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(holder_child(s, key, SLOW(300), pfd[1]));
    }
    close(pfd[1]);
    CHECK(pid > 0);
    memset(&hr, 0, sizeof hr);
    if (pid > 0 && rh_read_full(pfd[0], &hr, sizeof hr, 10000) == 0 && hr.c == 'A') {
        rlock_status st;
        cmds0 = rlock_node_commands(&t.nodes[0]);
        t0 = rh_now_ms();
        st = rlock_acquire(&lk, 5000, 5000);
        *elapsed = since(t0);
        cmds = (long long)(rlock_node_commands(&t.nodes[0]) - cmds0);
        if (with_subs) *sub_cmds = rlock_subscriber_commands(&t.subs[0]);
        CHECK_EQ_ST(st, RLOCK_OK);
        /* from the holder's grant (not from here: this process may have
         * been stalled after it); ms truncated on both sides */
        CHECK_MSG(since(hr.t_grant) >= SLOW(300) - 1, "acquired %lld ms into a %u ms hold", since(hr.t_grant),
                  SLOW(300));
        CHECK_MSG(*elapsed < SLOW(1500), "%s: acquired after %lld ms (waited for the 10 s TTL?)",
                  with_subs ? "pub/sub" : "backoff", *elapsed);
        CHECK_MSG(!with_subs || *elapsed < SLOW(900), "pub/sub: acquired after %lld ms, %lld ms into the hold "
                  "(woken by the re-check, %u ms, not the release's notice?)", *elapsed, since(hr.t_grant), SLOW(1000));
        if (with_subs) {
            CHECK_EQ_LL(numsub(s, "{wake:sub}:released"), 1); /* stays subscribed for the next wait */
        }
        CHECK(key_is(s, key, rlock_lock_token(&lk)));
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    } else {
        CHECK_MSG(0, "holder child did not get %s", key);
    }
    close(pfd[0]);
    if (pid > 0) {
        status = rh_wait_child(pid, 10000);
        CHECK_MSG(rh_exited_with(status, 0), "holder child exit %d", exit_code(status));
    }
    tcli_close(&t);
    return cmds;
}

static void test_pubsub_wake(rh_server *s) {
    long long e_sub, e_poll, c_sub, c_poll;
    unsigned long subc, dummy;
    unsigned long long t0;
    c_sub = wake_once(s, 1, &e_sub, &subc);
    c_poll = wake_once(s, 0, &e_poll, &dummy);
    printf("wake-up on release after %u ms: pub/sub %lld ms, %lld lock commands (+%lu on the subscriber); "
           "backoff %lld ms, %lld lock commands\n", SLOW(300), e_sub, c_sub, subc, e_poll, c_poll);
    CHECK_MSG(c_sub >= 2 && c_sub <= 4, "pub/sub waiter sent %lld lock commands", c_sub);
    CHECK_EQ_LL(subc, 1); /* one SUBSCRIBE */
    CHECK_MSG(c_poll > c_sub, "backoff %lld commands, pub/sub %lld", c_poll, c_sub);
    /* the closed subscriber is gone from the server */
    t0 = rh_now_ms();
    while (numsub(s, "{wake:sub}:released") != 0 && since(t0) < 2000) rh_sleep_ms(5);
    CHECK_EQ_LL(numsub(s, "{wake:sub}:released"), 0);
}

/* ------------------------- 5. subscriber connection killed (row 13) */

typedef struct wait_report {
    int st;
    unsigned long long t_done;
    unsigned long cmds, sub_cmds;
} wait_report;

/* Child: wait for key with subscribers (ttl 2000, wait 5000); report. */
static int waiter_child(rh_server *s, const char *key, int wfd) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    wait_report rep;
    memset(&rep, 0, sizeof rep);
    if (tcli_open(&t, &s, 1, &cfg, 1) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    rep.st = (int)rlock_acquire(&lk, 2000, 5000);
    rep.t_done = rh_now_ms();
    rep.cmds = rlock_node_commands(&t.nodes[0]);
    rep.sub_cmds = rlock_subscriber_commands(&t.subs[0]);
    if (write(wfd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 11;
    close(wfd);
    if (rep.st == RLOCK_OK && rlock_release(&lk) != RLOCK_OK) { tcli_close(&t); return 12; }
    tcli_close(&t);
    return 0;
}

/* holder takes key with ttl 800; a waiter child subscribes; then either the
 * subscriber connection is killed and the holder never releases (kill = 1),
 * or the holder releases 100 ms later (kill = 0, with a tiny pubsub output
 * buffer limit set by the caller). Returns ms from the holder's grant to the
 * waiter's, -1 on failure. */
static long long sub_fault_once(rh_server *s, const char *key, int kill_subs) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli h;
    rlock_lock hl;
    int pfd[2], status;
    pid_t pid;
    wait_report rep;
    char chan[64];
    unsigned long long t_h;
    long long took = -1;

    snprintf(chan, sizeof chan, "{%s}:released", key);
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    t_h = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&hl, 800, 0), RLOCK_OK);
    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(waiter_child(s, key, pfd[1]));
    }
    close(pfd[1]);
    CHECK(pid > 0);
    if (pid < 0) { close(pfd[0]); tcli_close(&h); return -1; }
    CHECK_MSG(wait_numsub(s, chan, 1, 2000), "the waiter never subscribed to %s", chan);
    if (kill_subs) {
        long long killed = rh_int(s, "CLIENT KILL TYPE pubsub");
        /* (not followed by NUMSUB == 0: the waiter may already have
         * reconnected and subscribed again - a valgrind run saw 1) */
        CHECK_MSG(killed >= 1, "CLIENT KILL TYPE pubsub killed %lld", killed);
    } else {
        rh_sleep_ms(100);
        CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* publishes */
    }
    memset(&rep, 0, sizeof rep);
    if (rh_read_full(pfd[0], &rep, sizeof rep, 8000) == 0) {
        took = (long long)(rep.t_done - t_h);
        CHECK_EQ_ST((rlock_status)rep.st, RLOCK_OK);
        CHECK_MSG(took < 800 + 500, "waiter acquired %lld ms after the holder's 800 ms grant", took);
        if (kill_subs) {
            CHECK_MSG(took >= 600, "waiter acquired %lld ms into an 800 ms lease nobody released", took);
            CHECK_MSG(rep.cmds <= 6, "waiter sent %lu lock commands (spinning after the kill?)", rep.cmds);
        }
        printf("pub/sub %s: acquired %lld ms after the holder's grant; %lu lock commands, %lu on the "
               "subscriber\n", kill_subs ? "connection killed" : "tiny output buffer", took, rep.cmds,
               rep.sub_cmds);
    } else {
        CHECK_MSG(0, "no report from the waiter");
    }
    close(pfd[0]);
    status = rh_wait_child(pid, 10000);
    CHECK_MSG(rh_exited_with(status, 0), "waiter child exit %d", exit_code(status));
    if (kill_subs) CHECK_EQ_ST(rlock_release(&hl), RLOCK_LOST); /* it expired and was taken */
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    tcli_close(&h);
    return took;
}

static void test_pubsub_faults(rh_server *s) {
    char buf[128];
    (void)sub_fault_once(s, "subkill:key", 1);
    /* pub/sub is at-most-once: a server may drop a slow subscriber. With a
     * 1-byte limit Redis counts only the overflow list, so small messages
     * may still arrive; either way the waiter is on time. */
    CHECK(rh_str(s, buf, sizeof buf, "CONFIG SET client-output-buffer-limit %s", "pubsub 1 1 0") ==
          REDIS_REPLY_STATUS);
    (void)sub_fault_once(s, "subobuf:key", 0);
    CHECK(rh_str(s, buf, sizeof buf, "CONFIG SET client-output-buffer-limit %s", "pubsub 33554432 8388608 60") ==
          REDIS_REPLY_STATUS);
}

/* ------------------------------- 5b. one waiter woken per release */

/* Child: wait for key with subscribers (ttl 5000, wait 8000), hold it 20 ms,
 * release; report (st 99: the release failed). */
static int chain_child(rh_server *s, const char *key, int wfd) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    wait_report rep;
    memset(&rep, 0, sizeof rep);
    if (tcli_open(&t, &s, 1, &cfg, 1) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    rep.st = (int)rlock_acquire(&lk, 5000, 8000);
    rep.t_done = rh_now_ms();
    if (rep.st == RLOCK_OK) {
        rh_sleep_ms(20);
        if (rlock_release(&lk) != RLOCK_OK) rep.st = 99;
    }
    rep.cmds = rlock_node_commands(&t.nodes[0]);
    rep.sub_cmds = rlock_subscriber_commands(&t.subs[0]);
    tcli_close(&t);
    return write(wfd, &rep, sizeof rep) == (ssize_t)sizeof rep ? 0 : 11; /* < PIPE_BUF: atomic */
}

static int cmp_ull(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* N subscribed waiters queue behind a 10 s lease released after they all
 * queued: each release wakes the next, so all get it in turn long before
 * the lease would have run out, with few commands each. */
static void test_wake_chain(rh_server *s) {
    enum { MAXW = 8 };
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli h;
    rlock_lock hl;
    int pfd[2], i, nw = quick ? 3 : 6, ok = 0;
    pid_t pids[MAXW];
    unsigned long long t_rel, done[MAXW];
    unsigned long cmds = 0;
    long long last = 0, min_gap = 1000000;
    const char *key = "chain:key", *chan = "{chain:key}:released";

    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
    CHECK(pipe(pfd) == 0);
    for (i = 0; i < nw; i++) {
        pids[i] = rh_fork();
        if (pids[i] == 0) {
            close(pfd[0]);
            _exit(chain_child(s, key, pfd[1]));
        }
        CHECK(pids[i] > 0);
    }
    close(pfd[1]);
    CHECK_MSG(wait_numsub(s, chan, nw, 5000), "only %lld of %d waiters subscribed", numsub(s, chan), nw);
    /* each retries once after subscribing: that attempt queues it */
    (void)wait_zcard(s, "{chain:key}:waiters", nw, 5000);
    CHECK_EQ_LL(rh_int(s, "ZCARD {chain:key}:waiters"), nw);
    t_rel = rh_now_ms();
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    for (i = 0; i < nw; i++) {
        wait_report rep;
        done[i] = 0;
        if (rh_read_full(pfd[0], &rep, sizeof rep, 10000) != 0) { CHECK_MSG(0, "no report from waiter %d", i); break; }
        CHECK_EQ_ST((rlock_status)rep.st, RLOCK_OK);
        if (rep.st == RLOCK_OK) ok++;
        done[i] = rep.t_done;
        cmds += rep.cmds;
    }
    close(pfd[0]);
    for (i = 0; i < nw; i++) {
        int st = pids[i] > 0 ? rh_wait_child(pids[i], 10000) : -1;
        CHECK_MSG(rh_exited_with(st, 0), "chain waiter %d exit %d", i, exit_code(st));
    }
    qsort(done, (size_t)nw, sizeof done[0], cmp_ull);
    for (i = 0; i < nw; i++) {
        if (i > 0 && (long long)(done[i] - done[i - 1]) < min_gap) min_gap = (long long)(done[i] - done[i - 1]);
        last = (long long)(done[i] - t_rel);
    }
    printf("wake-one chain: %d waiters acquired in turn, the last %lld ms after the release (lease 10 s); "
           "%.1f lock commands per waiter; closest hand-over %lld ms\n", nw, last,
           nw ? (double)cmds / nw : 0.0, min_gap);
    CHECK_EQ_LL(ok, nw);
    CHECK_MSG(last < 4000, "the last waiter got the lock %lld ms after the release", last);
    CHECK_MSG(min_gap >= 15, "two waiters acquired %lld ms apart while each holds 20 ms", min_gap);
    CHECK_MSG(cmds <= (unsigned long)nw * 6, "%lu lock commands for %d waiters", cmds, nw);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    CHECK_EQ_LL(rh_int(s, "EXISTS {chain:key}:waiters"), 0); /* queue empty */
    CHECK_EQ_LL(rh_int(s, "EXISTS {chain:key}:deadlines"), 0);
    tcli_close(&h);
}

/* A barging lock's Pub/Sub waiter cancelled between rounds leaves the
 * queue as one whose wait ran out does (one last attempt with no wait
 * left: its entry's deadline is then past, and a release skips it), so the
 * release wakes the waiter behind it. Before, the entry kept its deadline,
 * the release woke the cancelled waiter (its notice read by nobody) and
 * the one behind slept until its timed re-check (60 s here, the holder's
 * lease 30 s). w0 queues first with the earlier deadline (popped first). */
static void test_cancelled_waiter_wake(rh_server *s) {
    rlock_config cfg = cfg_base(SLOW(1000), NULL), wcfg = cfg_base(SLOW(1000), NULL);
    tcli h, w[2];
    rlock_lock hl, wl[2];
    rlock_status st;
    char score[32];
    long long now;
    int i;
    const char *key = "cwake:key";
    wcfg.pubsub = 1;
    wcfg.recheck_ms = 60000;
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 30000, 0), RLOCK_OK);
    for (i = 0; i < 2; i++) {
        CHECK(tcli_open(&w[i], &s, 1, &wcfg, 0) == 0);
        CHECK_EQ_ST(rlock_lock_init(&wl[i], &w[i].cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rh_step_until_waitmsg(&wl[i], rlock_acquire_begin(&wl[i], 10000, i ? 50000 : 40000)),
                    RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(wl[i].op.phase, RLOCK__PH_WAITMSG);
    }
    CHECK_EQ_LL(rh_int(s, "ZCARD {%s}:waiters", key), 2);
    rlock_cancel(&wl[0]);
    CHECK_EQ_LL(rlock_lock_state(&wl[0]), RLOCK_STATE_IDLE);
    now = rh_int(s, "EVAL %s 0", "local t=redis.call('time') return t[1]*1000+math.floor(t[2]/1000)");
    (void)rh_str(s, score, sizeof score, "ZSCORE {%s}:waiters %b", key, wl[0].waiter_id, (size_t)16);
    CHECK_MSG(score[0] == '\0' || atoll(score) <= now,
              "the cancelled waiter's entry still waits (deadline %s, server time %lld)", score, now);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    st = step_until_done(&wl[1], &w[1], RLOCK_WOULD_BLOCK, 5000);
    CHECK_MSG(st == RLOCK_OK, "the waiter behind the cancelled one was not woken (%s after 5 s; re-check 60 s)",
              rlock_status_str(st));
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&wl[1]), RLOCK_OK);
    else rlock_cancel(&wl[1]);
    printf("barging Pub/Sub: a waiter cancelled between rounds left the queue; the release woke the one behind\n");
    (void)rh_int(s, "DEL %s {%s}:waiters", key, key);
    for (i = 0; i < 2; i++) tcli_close(&w[i]);
    tcli_close(&h);
}

/* A queued waiter dies (SIGKILL). The next release still wakes someone: the
 * waiter behind it gets the lock by the holder's lease at the latest. */
static void test_dead_waiter(rh_server *s) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli h;
    rlock_lock hl;
    int p1[2], p2[2], st;
    pid_t w1, w2;
    wait_report rep;
    unsigned long long t_h, t_rel;
    const char *key = "dead:key", *chan = "{dead:key}:released";

    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    t_h = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&hl, 2000, 0), RLOCK_OK);
    CHECK(pipe(p1) == 0);
    w1 = rh_fork();
    if (w1 == 0) { close(p1[0]); _exit(waiter_child(s, key, p1[1])); }
    close(p1[1]);
    CHECK(wait_numsub(s, chan, 1, 3000));
    (void)wait_zcard(s, "{dead:key}:waiters", 1, 3000);
    CHECK_EQ_LL(rh_int(s, "ZCARD {dead:key}:waiters"), 1);
    if (w1 > 0) { kill(w1, SIGKILL); st = rh_wait_child(w1, 5000); (void)st; }
    close(p1[0]);
    CHECK(wait_numsub(s, chan, 0, 3000) && numsub(s, chan) == 0);
    CHECK(pipe(p2) == 0);
    w2 = rh_fork();
    if (w2 == 0) { close(p2[0]); _exit(waiter_child(s, key, p2[1])); }
    close(p2[1]);
    CHECK(wait_numsub(s, chan, 1, 3000));
    (void)wait_zcard(s, "{dead:key}:waiters", 2, 3000);
    CHECK_EQ_LL(rh_int(s, "ZCARD {dead:key}:waiters"), 2); /* the dead one is still first */
    t_rel = rh_now_ms();
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    memset(&rep, 0, sizeof rep);
    if (rh_read_full(p2[0], &rep, sizeof rep, 8000) == 0) {
        CHECK_EQ_ST((rlock_status)rep.st, RLOCK_OK);
        printf("dead queued waiter: the next waiter got the lock %lld ms after the release (%lld ms into a "
               "2000 ms lease): %s\n", (long long)(rep.t_done - t_rel), (long long)(rep.t_done - t_h),
               rep.t_done - t_rel < 300 ? "woken" : "NOT woken, waited for the lease");
        CHECK_MSG(rep.t_done - t_h < 2000 + 500, "acquired %lld ms after the grant", (long long)(rep.t_done - t_h));
    } else {
        CHECK_MSG(0, "no report from the second waiter");
    }
    close(p2[0]);
    st = w2 > 0 ? rh_wait_child(w2, 10000) : -1;
    CHECK_MSG(rh_exited_with(st, 0), "second waiter exit %d", exit_code(st));
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    tcli_close(&h);
}

/* ------------------------------------------- 6. fencing among processes */

/* Child: rounds x {acquire, append "token who\n" while holding, release}.
 * Exit 0, 1 own tokens went backwards, 2 lock errors, 10 setup. */
static int fence_child(rh_server *const *srv, int n, const char *key, const char *path, int who, int rounds,
                       int with_subs, int check_own) {
    /* (0: the default, 250 ms for this lease; what is tested is the tokens' order) */
    rlock_config cfg = cfg_base(n > 1 ? SLOW(100) : slow > 1 ? SLOW(250) : 0, NULL);
    tcli t;
    rlock_lock lk;
    long long last = 0;
    int i, errors = 0, backwards = 0, fd;
    cfg.fencing = 1;
    if (tcli_open(&t, srv, n, &cfg, with_subs) != 0 ||
        rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) { tcli_close(&t); return 10; }
    for (i = 0; i < rounds; i++) {
        char line[64];
        long long tok;
        int len;
        rlock_status st = rlock_acquire(&lk, 5000, 60000);
        if (st != RLOCK_OK) {
            fprintf(stderr, "fence child %d: acquire: %s\n", who, rlock_status_str(st));
            errors++;
            continue;
        }
        tok = rlock_fence_token(&lk);
        if (tok <= last) backwards++;
        last = tok;
        len = snprintf(line, sizeof line, "%lld %d\n", tok, who);
        if (write(fd, line, (size_t)len) != len) errors++; /* one append, inside the critical section */
        st = rlock_release(&lk);
        if (st != RLOCK_OK && st != RLOCK_LOST) {
            /* Unanswered in time (a loaded machine): the outcome is unknown
             * and the handle stays HELD - retry, as rlock.h says, or every
             * later acquire here is RLOCK_E_STATE for the 60 s lease. LOST on
             * a retry: the first try landed late. Not an error unless the
             * retries fail too (the release itself is tested elsewhere). */
            int r;
            fprintf(stderr, "fence child %d: release: %s, retrying\n", who, rlock_status_str(st));
            for (r = 0; r < 5 && st != RLOCK_OK && st != RLOCK_LOST; r++) st = rlock_release(&lk);
            if (st != RLOCK_OK && st != RLOCK_LOST) {
                fprintf(stderr, "fence child %d: release retried: %s\n", who, rlock_status_str(st));
                errors++;
            }
        } else if (st != RLOCK_OK) {
            fprintf(stderr, "fence child %d: release: %s\n", who, rlock_status_str(st));
            errors++;
        }
        else if (rlock_last_votes(&lk) < (size_t)n) {
            int k;
            /* a quorum confirmed; the rest expires by the TTL (say why) */
            for (k = 0; k < n; k++)
                if (rlock_node_status(&t.nodes[k]) != RLOCK_OK)
                    fprintf(stderr, "fence child %d: release not confirmed by node %d: %s (%s)\n", who, k,
                            rlock_status_str(rlock_node_status(&t.nodes[k])), rlock_node_error(&t.nodes[k]));
        }
        if (rlock_fence_token(&lk) != 0) errors++;
    }
    close(fd);
    tcli_close(&t);
    return errors ? 2 : (backwards && check_own) ? 1 : 0;
}

/* Parse "token who" lines. Returns how many. */
static int read_tokens(const char *path, long long *tok, int *who, int cap) {
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f) return -1;
    while (n < cap && fscanf(f, "%lld %d", &tok[n], &who[n]) == 2) n++;
    fclose(f);
    return n;
}

static void fence_run(rh_server *const *srv, int n, const char *key, int procs, int rounds, const char *label) {
    char dir[] = "/tmp/rlock-fence-XXXXXX", path[300], counter[300];
    pid_t pids[16];
    int i, fd, got, ok_children = 0, total = procs * rounds;
    long long *tok = (long long *)calloc((size_t)total + 1, sizeof *tok);
    int *who = (int *)calloc((size_t)total + 1, sizeof *who);
    long long last_of[16];
    int global_inv = 0, own_inv = 0, leftovers = 0;
    unsigned long long t0;

    if (!tok || !who || !mkdtemp(dir)) { CHECK_MSG(0, "setup"); free(tok); free(who); return; }
    snprintf(path, sizeof path, "%s/tokens", dir);
    snprintf(counter, sizeof counter, "{%s}:fence", key);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    t0 = rh_now_ms();
    for (i = 0; i < procs; i++) {
        pids[i] = rh_fork();
        if (pids[i] == 0) _exit(fence_child(srv, n, key, path, i, rounds, i % 2, n == 1));
        CHECK(pids[i] > 0);
    }
    for (i = 0; i < procs; i++) {
        int st;
        if (pids[i] <= 0) continue;
        st = rh_wait_child(pids[i], 120000);
        CHECK_MSG(rh_exited_with(st, 0), "%s: fence child %d exit %d (1 own tokens went backwards, 2 lock errors)",
                  label, i, exit_code(st));
        if (rh_exited_with(st, 0)) ok_children++;
    }
    CHECK_EQ_LL(ok_children, procs);
    got = read_tokens(path, tok, who, total + 1);
    CHECK_EQ_LL(got, total);
    for (i = 0; i < 16; i++) last_of[i] = 0;
    for (i = 0; i < got; i++) {
        if (tok[i] <= 0) global_inv += 1000000; /* no token at all */
        if (i > 0 && tok[i] <= tok[i - 1]) global_inv++;
        if (who[i] >= 0 && who[i] < 16) {
            if (tok[i] <= last_of[who[i]]) own_inv++;
            last_of[who[i]] = tok[i];
        }
    }
    printf("%s: %d processes x %d grants in %lld ms; fence tokens %lld..%lld, global order %s (%d inversions), "
           "per-process inversions %d\n", label, procs, rounds, since(t0), got ? tok[0] : 0LL,
           got ? tok[got - 1] : 0LL, global_inv ? "NOT monotonic" : "strictly increasing", global_inv, own_inv);
    if (n == 1) {
        /* one node: the counter is the order of grants */
        CHECK_EQ_LL(global_inv, 0);
        CHECK_EQ_LL(own_inv, 0);
        CHECK_EQ_LL(get_ll(srv[0], counter), total);
        if (got == total) CHECK_EQ_LL(tok[got - 1], total);
    } else {
        /* Redlock: each grant's token is the largest counter among the nodes
         * that granted it. Counters drift apart whenever a round is granted
         * by a minority (split votes under contention, then cleanup) or a
         * node loses data or is down, so the tokens are NOT guaranteed to be
         * monotonic - not even per process, and not only across node
         * failures. We only require a token for every grant. */
        long long sum = 0;
        CHECK(global_inv < 1000000);
        for (i = 0; i < n; i++) sum += get_ll(srv[i], counter);
        /* every grant incremented a majority of the counters */
        CHECK_MSG(sum >= (long long)total * (n / 2 + 1), "counters sum to %lld for %d grants", sum, total);
    }
    for (i = 0; i < n; i++) {
        char val[64];
        long long ex = rh_int(srv[i], "EXISTS %s", key);
        if (ex != 0) {
            /* a release (or cleanup) that a node did not answer in time: the
             * quorum said OK, the straggler's copy expires by itself */
            long long pttl = rh_int(srv[i], "PTTL %s", key);
            (void)rh_str(srv[i], val, sizeof val, "GET %s", key);
            printf("%s: node %d still has %s = %s, PTTL %lld\n", label, i, key, val, pttl);
            CHECK(n > 1 && pttl > 0 && pttl <= 5000);
            leftovers++;
        }
        CHECK_EQ_LL(rh_int(srv[i], "DEL %s", counter), 1);
    }
    CHECK_MSG(leftovers < n / 2 + 1, "lock key left on %d of %d nodes", leftovers, n);
    for (i = 0; i < n; i++) (void)rh_int(srv[i], "DEL %s", key);
    unlink(path);
    CHECK(rmdir(dir) == 0);
    free(tok);
    free(who);
}

static void test_fencing(rh_server *srv) {
    rh_server *sp[NSRV];
    rlock_config cfg = cfg_base(slow > 1 ? SLOW(250) : 0, NULL); /* (as fence_child's, 1 node) */
    tcli t;
    rlock_lock lk;
    int i;
    for (i = 0; i < NSRV; i++) sp[i] = &srv[i];

    /* fencing off: no counter, token 0 */
    CHECK(tcli_open(&t, sp, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "nofence:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&lk), 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS {nofence:key}:fence"), 0);
    tcli_close(&t);

    fence_run(sp, 1, "fence:one", 8, quick ? 16 : 125, "fencing, 1 node");
    fence_run(sp, NSRV, "fence:red", 4, quick ? 8 : 40, "fencing, Redlock 3 nodes");
}

/* ------------------------------------- 7. watchdog start/stop/release */

static void test_watchdog_lifecycle(rh_server *s) {
    int lost_calls = 0;
    rlock_config cfg = cfg_base(SLOW(100), &lost_calls);
    tcli t, own;
    rlock_lock lk;
    rlock_watchdog w;
    long long validity;
    unsigned long long t0;
    cfg.on_lost = count_lost;

    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK(tcli_open(&own, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wd:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* refused: not held, or the lock's own client */
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(300), 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &t.cl), RLOCK_E_BADARG);
    CHECK_EQ_LL(threads_back(), g_threads0);

    /* start and stop at once */
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_stop(&w), RLOCK_OK);
    CHECK_EQ_LL(threads_back(), g_threads0);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);

    /* run past 3x the TTL, stop, release */
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
    rh_sleep_ms(SLOW(1000));
    CHECK(rlock_watchdog_state(&w, &validity) == RLOCK_STATE_HELD);
    CHECK(validity > 0);
    /* lk itself is not updated until stop: its own view has run out (use
     * rlock_watchdog_state meanwhile) */
    printf("watchdog: after %u ms of a %u ms lease, watchdog state HELD (%lld ms left), "
           "rlock_lock_state(lk) %s\n", SLOW(1000), SLOW(300), validity,
           rlock_lock_state(&lk) == RLOCK_STATE_HELD ? "HELD" : "LOST (stale until stop)");
    CHECK(rh_int(s, "PTTL wd:key") > 0);
    CHECK(key_is(s, "wd:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_watchdog_stop(&w), RLOCK_OK);
    CHECK_EQ_LL(threads_back(), g_threads0);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK(rlock_validity_ms(&lk) > 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS wd:key"), 0);
    CHECK_EQ_LL(lost_calls, 0);

    /* the lock is taken away under the watchdog: it stops, on_lost runs once */
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(300), 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
    rh_sleep_ms(SLOW(150));
    CHECK_EQ_LL(rh_int(s, "DEL wd:key"), 1);
    t0 = rh_now_ms();
    while (rlock_watchdog_state(&w, &validity) == RLOCK_STATE_HELD && since(t0) < SLOW(3000)) rh_sleep_ms(5);
    printf("watchdog: noticed the deleted key after %lld ms\n", since(t0));
    CHECK(rlock_watchdog_state(&w, &validity) == RLOCK_STATE_LOST);
    CHECK_MSG(since(t0) < SLOW(600), "LOST seen %lld ms after the DEL", since(t0));
    CHECK_EQ_ST(rlock_watchdog_stop(&w), RLOCK_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_LL(threads_back(), g_threads0);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_NOT_HELD);
    tcli_close(&t);
    tcli_close(&own);
}

/* rlock_watchdog_stop while the watchdog's renewal is in flight (its server
 * stopped answering, SIGSTOP): the thread cancels it, so no renewal is out
 * when stop returns, and lk's rlock_renew_outcome says FAILED (an unknown
 * outcome, retried at the next poll), not IN_FLIGHT; lk's next poll renews. */
static void test_watchdog_stop_in_flight(rh_server *s) {
    int lost_calls = 0;
    rlock_config cfg = cfg_base(2000, &lost_calls);
    tcli t, own;
    rlock_lock lk;
    rlock_watchdog w;
    long long validity = 0;
    rlock_status st;
    cfg.on_lost = count_lost;
    cfg.renew_every_ms = 50;

    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK(tcli_open(&own, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wdfly:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    rh_server_pause(s);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
    rh_sleep_ms(300); /* the renewal due at 50 ms is out; its node timeout (2 s) is far */
    CHECK(rlock_watchdog_state(&w, &validity) == RLOCK_STATE_HELD);
    st = rlock_watchdog_stop(&w);
    rh_server_resume(s);
    CHECK_MSG(st == RLOCK_OK, "watchdog_stop: %s", rlock_status_str(st));
    CHECK_EQ_LL(threads_back(), g_threads0);
    CHECK_MSG(rlock_renew_outcome(&lk) == RLOCK_RENEW_FAILED,
              "rlock_renew_outcome after a stop that cancelled the renewal in flight: %d (not FAILED)",
              (int)rlock_renew_outcome(&lk));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_OK); /* due: lk renews on its own client */
    CHECK_EQ_LL(rlock_renew_outcome(&lk), RLOCK_RENEW_RENEWED);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS wdfly:key"), 0);
    CHECK_EQ_LL(lost_calls, 0);
    tcli_close(&t);
    tcli_close(&own);
}

/* ---------------------------------------------------- 8. renewal caps */

/* Renew lk until LOST (or limit_ms); returns ms from start to LOST, -1 never. */
static long long renew_until_lost(tcli *t, rlock_lock *lk, unsigned limit_ms, int *errors) {
    unsigned long long t0 = rh_now_ms();
    while (since(t0) < (long long)limit_ms) {
        uint32_t next;
        rlock_status st = rlock_renew_poll(lk, &next);
        if (st == RLOCK_LOST) return since(t0);
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) (*errors)++;
        tcli_wait(t, next > 10 ? 10 : next);
    }
    return -1;
}

static void test_caps(rh_server *s) {
    int lost_calls = 0, errors = 0;
    rlock_config cfg = cfg_base(SLOW(100), &lost_calls);
    tcli t;
    rlock_lock lk;
    unsigned long c0;
    long long took;
    unsigned long long t0;
    cfg.on_lost = count_lost;

    /* max_renewals = 2, ttl 300: renewed at ~100 and ~200 ms, then left to
     * expire at ~500 ms */
    cfg.max_renewals = 2;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "cap:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(300), 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&lk, SLOW(300)), RLOCK_OK); /* loads the extend script: exact counts below */
    c0 = rlock_node_commands(&t.nodes[0]);
    t0 = rh_now_ms();
    took = renew_until_lost(&t, &lk, SLOW(3000), &errors);
    printf("max_renewals 2, ttl %u: LOST after %lld ms, %lu renewals sent\n", SLOW(300), took,
           rlock_node_commands(&t.nodes[0]) - c0);
    CHECK_MSG(took >= SLOW(350) && took < SLOW(1000), "LOST after %lld ms", took);
    CHECK_EQ_LL(rlock_node_commands(&t.nodes[0]) - c0, 2);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_LL(errors, 0);
    rh_sleep_ms(SLOW(30));
    CHECK_EQ_LL(rh_int(s, "EXISTS cap:key"), 0); /* expired on the server too */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    (void)t0;
    tcli_close(&t);

    /* max_hold_ms = 500, ttl 300: no renewal may push the expiry past 500 ms */
    lost_calls = 0;
    cfg.max_renewals = 0;
    cfg.max_hold_ms = SLOW(500);
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "cap:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(300), 0), RLOCK_OK);
    took = renew_until_lost(&t, &lk, SLOW(3000), &errors);
    printf("max_hold_ms %u, ttl %u: LOST after %lld ms\n", SLOW(500), SLOW(300), since(t0));
    CHECK_MSG(took >= SLOW(300) && since(t0) <= SLOW(500 + 100), "LOST %lld ms after the grant", since(t0));
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_LL(errors, 0);
    /* the server's lease may outlast local validity by the drift allowance */
    rh_sleep_ms(SLOW(30));
    CHECK_EQ_LL(rh_int(s, "EXISTS cap:key"), 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
    tcli_close(&t);

    /* validity ran out without rlock_renew_poll: an explicit extend finds the
     * lock lost, and the holder is told once */
    lost_calls = 0;
    cfg.max_hold_ms = 0;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "cap:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(200), 0), RLOCK_OK);
    rh_sleep_ms(SLOW(250));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_LOST); /* as soon as validity ran out */
    CHECK_EQ_LL(lost_calls, 0);                        /* nothing called yet */
    CHECK_EQ_ST(rlock_extend(&lk, SLOW(200)), RLOCK_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_ST(rlock_extend(&lk, SLOW(200)), RLOCK_LOST);
    CHECK_EQ_LL(lost_calls, 1);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
    tcli_close(&t);
}

/* -------------------------------------------------------------- main */

/* --------------------- RESP3: waiting on the command connection itself */

/* Lines of CLIENT LIST on s: its connections now (this query's included). */
static int client_count(const rh_server *s) {
    char buf[16384];
    int n = 0;
    const char *p;
    if (rh_str(s, buf, sizeof buf, "CLIENT LIST") != REDIS_REPLY_STRING) return -1;
    for (p = buf; *p; p++) n += *p == '\n';
    return n;
}

/* A Redlock client with cfg.pubsub and no subscriber connections: HELLO 3 at
 * connect, and its waiters SUBSCRIBE on the command connections, so a
 * waiting process has one socket per server (counted with CLIENT LIST). Two
 * handles of that client wait on the same key, so on the same channel: the
 * first one granted stops waiting without unsubscribing the other, which
 * is woken by the first one's release. */
static void test_resp3_wait(rh_server *srv) {
    rh_server *s3[NSRV];
    tcli h, w;
    rlock_lock hl, a, b;
    rlock_config cfg = cfg_base(SLOW(250), NULL);
    rlock_status sa = RLOCK_WOULD_BLOCK, sb = RLOCK_WOULD_BLOCK;
    int base[NSRV], during[NSRV], i, subscribed = 0;
    long long at_a = -1, at_b = -1, rel_h, rel_a = -1;
    unsigned long long t0;
    for (i = 0; i < NSRV; i++) { s3[i] = &srv[i]; base[i] = client_count(&srv[i]); during[i] = -1; }
    CHECK(tcli_open(&h, s3, NSRV, &cfg, 0) == 0);
    cfg.pubsub = 1;
    CHECK(tcli_open(&w, s3, NSRV, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "r3:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &w.cl, "r3:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &w.cl, "r3:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire_begin(&a, 5000, 4000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&b, 5000, 4000), RLOCK_WOULD_BLOCK);
    t0 = rh_now_ms();
    rel_h = -1;
    while ((sa == RLOCK_WOULD_BLOCK || sb == RLOCK_WOULD_BLOCK) && since(t0) < 6000) {
        uint32_t to = 50;
        if (sa == RLOCK_WOULD_BLOCK && (sa = rlock_step(&a)) != RLOCK_WOULD_BLOCK) at_a = since(t0);
        if (sb == RLOCK_WOULD_BLOCK && (sb = rlock_step(&b)) != RLOCK_WOULD_BLOCK) at_b = since(t0);
        if (sa == RLOCK_WOULD_BLOCK && rlock_next_timeout_ms(&a) < to) to = rlock_next_timeout_ms(&a);
        if (sb == RLOCK_WOULD_BLOCK && rlock_next_timeout_ms(&b) < to) to = rlock_next_timeout_ms(&b);
        if (!subscribed) {
            /* both waiting, subscribed on every server: count the sockets, then let go */
            int k, all = 1;
            for (k = 0; k < NSRV; k++) all = all && numsub(&srv[k], "{r3:key}:released") == 1;
            if (all && sa == RLOCK_WOULD_BLOCK && sb == RLOCK_WOULD_BLOCK) {
                subscribed = 1;
                for (k = 0; k < NSRV; k++) during[k] = client_count(&srv[k]);
                rh_sleep_ms(50); /* each retries once after subscribing: that attempt queues it */
                rlock_step(&a); rlock_step(&b);
                rh_sleep_ms(50);
                rel_h = since(t0);
                CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
            }
        }
        if (subscribed && rel_a < 0 && (sa == RLOCK_OK) != (sb == RLOCK_OK)) {
            /* one is granted, the other still waits on the same channel */
            int k;
            for (k = 0; k < NSRV; k++)
                CHECK_MSG(numsub(&srv[k], "{r3:key}:released") == 1, "server %d: the other waiter was unsubscribed", k);
            rh_sleep_ms(20);
            rel_a = since(t0);
            CHECK_EQ_ST(rlock_release(sa == RLOCK_OK ? &a : &b), RLOCK_OK);
        }
        tcli_wait(&w, to);
    }
    CHECK_MSG(subscribed, "the waiters never subscribed on all %d servers", NSRV);
    for (i = 0; i < NSRV; i++)
        CHECK_MSG(during[i] == base[i] + 2, "server %d: %d connections while waiting, %d before (want +1 holder, "
                  "+1 waiter: one socket per server)", i, during[i], base[i]);
    CHECK_EQ_ST(sa, RLOCK_OK);
    CHECK_EQ_ST(sb, RLOCK_OK);
    {
        long long first = at_a < at_b ? at_a : at_b, second = at_a < at_b ? at_b : at_a;
        CHECK_MSG(first >= rel_h && first - rel_h < 500, "first waiter granted %lld ms after the holder's release",
                  first - rel_h);
        CHECK_MSG(second >= rel_a && second - rel_a < 500, "second waiter granted %lld ms after the first's release",
                  second - rel_a);
        printf("RESP3 waiting: 1 socket per server (%d servers); woken %lld ms after the holder's release, "
               "the second waiter (same channel) %lld ms after the first's\n", NSRV, first - rel_h, second - rel_a);
    }
    CHECK_EQ_ST(rlock_release(sa == RLOCK_OK && rlock_lock_state(&a) == RLOCK_STATE_HELD ? &a : &b), RLOCK_OK);
    tcli_close(&w);
    tcli_close(&h);
    for (i = 0; i < NSRV; i++) rh_int(&srv[i], "DEL {r3:key}:waiters {r3:key}:deadlines");
}


/* A subscribed, queued waiter's connection carrying its subscription is
 * killed (CLIENT KILL TYPE pubsub: its RESP3 command connection, or its
 * RESP2 subscriber connection); the holder releases gap_ms later. The waiter
 * gets the lock soon after the release, not at its 5 s re-check nor at the
 * holder's 10 s lease. */
static long long kill_sub_then_release(rh_server *s, const char *key, int resp3, int fair, unsigned gap_ms) {
    rlock_config cfg = cfg_base(SLOW(250), NULL);
    tcli h, w;
    rlock_lock hl, wl;
    rlock_status st = RLOCK_WOULD_BLOCK;
    char chan[64], q[64], what[96];
    unsigned long long t0;
    long long took, killed;
    snprintf(chan, sizeof chan, "{%s}:released", key);
    snprintf(q, sizeof q, "ZCARD {%s}:waiters", key);
    cfg.recheck_ms = 5000;
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    cfg.pubsub = resp3;
    CHECK(tcli_open(&w, &s, 1, &cfg, !resp3) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&wl, &w.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    if (fair) {
        CHECK_EQ_ST(rlock_lock_set_fair(&hl, 1, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_set_fair(&wl, 1, 0), RLOCK_OK);
    }
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire_begin(&wl, 10000, 9000), RLOCK_WOULD_BLOCK);
    t0 = rh_now_ms();
    while (st == RLOCK_WOULD_BLOCK && since(t0) < 3000 && !(numsub(s, chan) == 1 && rh_int(s, q) == 1)) {
        st = rlock_step(&wl);
        tcli_wait(&w, 10);
    }
    CHECK_MSG(st == RLOCK_WOULD_BLOCK && numsub(s, chan) == 1, "the waiter never subscribed (%s)", rlock_status_str(st));
    t0 = rh_now_ms(); /* its queueing attempt answered: it waits for a notice */
    while (st == RLOCK_WOULD_BLOCK && since(t0) < 100) {
        st = rlock_step(&wl);
        tcli_wait(&w, 10);
    }
    killed = rh_int(s, "CLIENT KILL TYPE pubsub");
    CHECK_MSG(killed == 1, "CLIENT KILL TYPE pubsub killed %lld", killed);
    snprintf(what, sizeof what, "%s%s waiter, its connection killed %u ms before the release", resp3 ? "RESP3" : "RESP2",
             fair ? " fair" : "", gap_ms);
    took = release_wakes(&hl, &wl, &w, &st, gap_ms, what);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&wl), RLOCK_OK);
    tcli_close(&w);
    tcli_close(&h);
    rh_int(s, "DEL {%s}:waiters", key);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    return took;
}

/* ------------- a waiter gone before its SUBSCRIBE went out (fuzz_locks) */

/* A subscriber transport whose sends would block while `hold` is set (a
 * full socket buffer): rlock's SUBSCRIBE waits in its send buffer. */
typedef struct held_conn {
    rlock_posix_conn pc;
    const rlock_transport *in;
    int hold;
} held_conn;
static long held_send(void *ctx, const unsigned char *b, size_t n) {
    held_conn *h = (held_conn *)ctx;
    return h->hold ? RLOCK_IO_WOULD_BLOCK : h->in->send(h->in->ctx, b, n);
}
static long held_recv(void *ctx, unsigned char *b, size_t n) {
    held_conn *h = (held_conn *)ctx;
    return h->in->recv(h->in->ctx, b, n);
}
static int held_connect(void *ctx) {
    held_conn *h = (held_conn *)ctx;
    return h->in->connect(h->in->ctx);
}
static void held_close(void *ctx) {
    held_conn *h = (held_conn *)ctx;
    h->in->close(h->in->ctx);
}
static int held_wait(void *ctx, int want, uint32_t timeout_ms) {
    held_conn *h = (held_conn *)ctx;
    return h->in->wait(h->in->ctx, want, timeout_ms);
}

/* A waiter cancelled while its SUBSCRIBE was still in the subscriber's send
 * buffer leaves the channel lingering (the next wait on the key needs no
 * SUBSCRIBE): the SUBSCRIBE must still go out. It was taken back unsent
 * (its op ended: RLOCK__X_GONE) while the client went on counting the
 * channel as subscribed, so the next wait adopted a subscription the server
 * never had and slept through the release's notice (found by fuzz_locks:
 * "the lingering channel ... its last command there is an UNSUBSCRIBE (or
 * none)"). Re-checks (10 s) and the holder's lease (30 s) outlast the
 * wait (5 s): only a notice can wake it in time. */
static void test_linger_unsent_subscribe(rh_server *s) {
    const char *key = "lingerq:key", *chan = "{lingerq:key}:released";
    rlock_config cfg = cfg_base(SLOW(200), NULL);
    tcli h;
    held_conn hc;
    rlock_transport tr;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_subscriber sub;
    rlock_client cl;
    rlock_lock hl, w;
    rlock_status st;
    unsigned long long t0;
    cfg.recheck_ms = 10000;
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 30000, 0), RLOCK_OK);

    memset(&hc, 0, sizeof hc);
    CHECK(rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000) == 0);
    CHECK(rlock_posix_init_tcp(&hc.pc, "127.0.0.1", s->port, 1000) == 0);
    hc.in = rlock_posix_transport(&hc.pc);
    memset(&tr, 0, sizeof tr);
    tr.ctx = &hc;
    tr.send = held_send;
    tr.recv = held_recv;
    tr.connect = held_connect;
    tr.close = held_close;
    tr.wait = held_wait;
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_subscriber_init(&sub, &tr), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_set_subscribers(&cl, &sub, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w, &cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* refused, it subscribes: the SUBSCRIBE stays in the send buffer; cancelled */
    hc.hold = 1;
    st = rlock_acquire_begin(&w, 5000, 5000);
    for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && !rlock_acquire_waiting(&w) && since(t0) < 2000; rh_sleep_ms(1))
        st = rlock_step(&w);
    /* (until the subscriber's connect completed: its send blocks, not its connect - private) */
    for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && sub.x.conn != RLOCK__CONN_UP && since(t0) < 2000; rh_sleep_ms(1))
        st = rlock_step(&w);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK(rlock_acquire_waiting(&w));
    CHECK(sub.x.conn == RLOCK__CONN_UP && sub.x.tx_len > 0);
    CHECK_EQ_LL(rlock_subscriber_commands(&sub), 1); /* the SUBSCRIBE, queued */
    st = rlock_cancel_begin(&w);
    for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && since(t0) < 2000; rh_sleep_ms(1)) st = rlock_step(&w);
    CHECK_EQ_ST(st, RLOCK_OK); /* (cancelled: nothing of it left) */
    CHECK_EQ_LL(rlock_lock_state(&w), RLOCK_STATE_IDLE);
    hc.hold = 0;

    /* the next wait on the key: subscribed on the server, and woken by the release */
    st = rlock_acquire_begin(&w, 5000, 5000);
    for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && numsub(s, chan) != 1 && since(t0) < 2000; rh_sleep_ms(5))
        st = rlock_step(&w);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_MSG(numsub(s, chan) == 1, "the waiter counts on %s, the server has %lld subscribers to it", chan,
              numsub(s, chan));
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* publishes */
    for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && since(t0) < 3000; rh_sleep_ms(5)) st = rlock_step(&w);
    CHECK_EQ_ST(st, RLOCK_OK);
    printf("a waiter cancelled with its SUBSCRIBE unsent: the next wait on the key woken %lld ms after the release\n",
           since(t0));
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    rlock_posix_close(&hc.pc);
    tcli_close(&h);
}

/* RESP3 waiting for an ACL user without channel permissions (Redis 7's
 * default for new users: acl-pubsub-default resetchannels): the server
 * answers the waiter's SUBSCRIBE with -NOPERM, a reply on the command
 * connection. Under RESP3 the SUBSCRIBE had no FIFO entry (a push was
 * its only answer), so the error was read as the answer of whatever was
 * in flight behind it (found by fuzz_locks: another lock's request), or,
 * nothing in flight, as "a reply nobody asked for": the connection was
 * dropped and made again at every wait. Now the error answers the
 * SUBSCRIBE: the waiter backs off on the connection it has. */
static long long noperm_count(const rh_server *s) { /* the server's NOPERM error replies so far */
    static char info[4096];
    const char *p;
    if (rh_str(s, info, sizeof info, "INFO errorstats") != REDIS_REPLY_STRING) return -1;
    p = strstr(info, "errorstat_NOPERM:count=");
    return p ? atoll(p + 23) : 0;
}
static void test_resp3_subscribe_refused(rh_server *s) {
    rlock_config cfg = cfg_base(SLOW(500), NULL); /* (a timeout would reconnect: HELLO counted) */
    tcli h, w;
    rlock_lock hl, w1;
    rlock_status st;
    long long hello0, sub0, hellos, subs_sent;
    char out[64];
    CHECK(rh_str(s, out, sizeof out, "ACL SETUSER nochan on >pw ~* resetchannels +@all") == REDIS_REPLY_STATUS);
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    cfg.pubsub = 1;
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 50;
    CHECK(tcli_open(&w, &s, 1, &cfg, 0) == 0);
    w.nodes[0].username = "nochan";
    w.nodes[0].password = "pw";
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "nochan:key", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w1, &w.cl, "nochan:key", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&w1, 5000), RLOCK_OK); /* (the connection up: AUTH, HELLO 3 answered) */
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, SLOW(600), 0), RLOCK_OK); /* (a lease above the node timeout) */
    hello0 = rh_stat_calls(s, "hello");
    sub0 = noperm_count(s);
    st = rlock_acquire(&w1, 5000, SLOW(3000)); /* refused, subscribes (refused), backs off until the lease ran out */
    hellos = rh_stat_calls(s, "hello") - hello0;
    subs_sent = noperm_count(s) - sub0;
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_MSG(subs_sent >= 1, "the waiter had %lld SUBSCRIBEs refused", subs_sent);
    CHECK_MSG(hellos == 0, "the waiter's connection was made again %lld times (%s)", hellos, rlock_node_error(&w.nodes[0]));
    printf("RESP3 waiter whose SUBSCRIBE is refused (NOPERM): %s, %lld SUBSCRIBEs, %lld reconnections\n",
           rlock_status_str(st), subs_sent, hellos);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);
    (void)rlock_release(&hl); /* (expired: LOST) */
    tcli_close(&w);
    tcli_close(&h);
    CHECK(rh_str(s, out, sizeof out, "ACL DELUSER nochan") == REDIS_REPLY_INTEGER);
}

static void test_sub_killed_then_release(rh_server *s) {
    static const unsigned gaps[] = { 0, 200 };
    int resp3, fair, g;
    for (resp3 = 0; resp3 < 2; resp3++)
        for (fair = 0; fair < 2; fair++)
            for (g = 0; g < 2; g++) {
                long long took = kill_sub_then_release(s, "subkr:key", resp3, fair, gaps[g]);
                printf("%s%s waiter, subscription connection killed %u ms before the release: granted %lld ms "
                       "after it\n", resp3 ? "RESP3" : "RESP2", fair ? " fair" : "", gaps[g], took);
            }
}

/* Step a and b (either may be NULL or done) until one is granted or ms pass;
 * returns the granted one, NULL on none. */
static rlock_lock *step_until_granted(tcli *t, rlock_lock *a, rlock_status *sa, rlock_lock *b, rlock_status *sb,
                                      unsigned ms) {
    unsigned long long t0 = rh_now_ms();
    while (since(t0) < (long long)ms) {
        if (a && *sa == RLOCK_WOULD_BLOCK && (*sa = rlock_step(a)) == RLOCK_OK) return a;
        if (b && *sb == RLOCK_WOULD_BLOCK && (*sb = rlock_step(b)) == RLOCK_OK) return b;
        tcli_wait(t, 10);
    }
    return NULL;
}

/* Right after a release: the first of a and b (b NULL: a alone) granted,
 * within 1 s (re-checks are 5 s: by a wake-up; what: who, for the
 * message); NULL when neither is in 3 s. */
static rlock_lock *granted_soon(tcli *t, rlock_lock *a, rlock_status *sa, rlock_lock *b, rlock_status *sb,
                                const char *what) {
    unsigned long long t0 = rh_now_ms();
    rlock_lock *first = step_until_granted(t, a, sa, b, sb, 3000);
    CHECK_MSG(first != NULL && since(t0) < 1000, "%s got the lock %lld ms after the release%s", what, since(t0),
              first ? "" : " (not in 3 s)");
    return first;
}

/* The uncontended release in a waiting setup (cfg.pubsub: the release names
 * the queue and channel) is one compare-and-delete: EVALSHA, GET, DEL - no
 * look at the queue, because nobody marked the value. The race argument of
 * rlock.h's "queued" mark, on a real server: a waiter queued during the hold
 * marks it and is woken; a waiter queued during an EARLIER hold is still
 * woken after a barging client took the lock by the fast path (unmarked):
 * the waiter that release woke comes back, finds it held, queues again and
 * marks it. Re-checks are 5 s and leases 5 s, so only wake-ups are fast. */
static void test_release_floor(rh_server *s) {
    rlock_config cfg = cfg_base(SLOW(250), NULL);
    tcli h, w, bc;
    rlock_lock hl, w1, w2, bl, *first, *second;
    rlock_status s1 = RLOCK_WOULD_BLOCK, s2 = RLOCK_WOULD_BLOCK;
    char v[128], want[128];
    unsigned long long t0;
    long long zp;
    cfg.recheck_ms = 5000;
    cfg.pubsub = 1;
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    CHECK(tcli_open(&w, &s, 1, &cfg, 0) == 0);
    CHECK(tcli_open(&bc, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "floor:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w1, &w.cl, "floor:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w2, &w.cl, "floor:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&bl, &bc.cl, "floor:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    /* a script has run on each client's node: the fast path is on */
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&bl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&bl), RLOCK_OK);

    CHECK_EQ_LL(rh_str(s, v, sizeof v, "CONFIG RESETSTAT"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_EQ_LL(rh_stat_calls(s, "set"), 1);
    CHECK_EQ_LL(rh_stat_calls(s, "evalsha"), 1);
    CHECK_EQ_LL(rh_stat_calls(s, "get"), 1);
    CHECK_EQ_LL(rh_stat_calls(s, "del"), 1);
    CHECK_EQ_LL(rh_stat_calls(s, "zpopmin") + rh_stat_calls(s, "time") + rh_stat_calls(s, "publish"), 0);
    printf("uncontended cycle with waiting on: SET NX PX, then EVALSHA + GET + DEL (no queue look-up)\n");

    /* a waiter queued during the hold marks it; the release wakes it */
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire_begin(&w1, 5000, 8000), RLOCK_WOULD_BLOCK);
    t0 = rh_now_ms();
    while (rh_int(s, "ZCARD {floor:key}:waiters") != 1 && since(t0) < 3000) {
        if ((s1 = rlock_step(&w1)) != RLOCK_WOULD_BLOCK) break;
        tcli_wait(&w, 10);
    }
    snprintf(want, sizeof want, "%s+", rlock_lock_token(&hl));
    CHECK(rh_str(s, v, sizeof v, "GET floor:key") == REDIS_REPLY_STRING && strcmp(v, want) == 0);
    zp = rh_stat_calls(s, "zpopmin");
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK);
    CHECK_EQ_LL(rh_stat_calls(s, "zpopmin"), zp + 1);
    CHECK(granted_soon(&w, &w1, &s1, NULL, NULL, "the queued waiter") == &w1);
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);

    /* two waiters queued during H's hold; H's release wakes one, but a
     * barging client takes the lock first by the fast path (unmarked) */
    s1 = s2 = RLOCK_WOULD_BLOCK;
    CHECK_EQ_ST(rlock_acquire(&hl, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire_begin(&w1, 5000, 8000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&w2, 5000, 8000), RLOCK_WOULD_BLOCK);
    t0 = rh_now_ms();
    while (rh_int(s, "ZCARD {floor:key}:waiters") != 2 && since(t0) < 3000) {
        s1 = rlock_step(&w1);
        s2 = rlock_step(&w2);
        tcli_wait(&w, 10);
    }
    CHECK_EQ_LL(rh_int(s, "ZCARD {floor:key}:waiters"), 2);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* pops one and publishes; neither has stepped yet */
    CHECK_EQ_LL(rh_int(s, "ZCARD {floor:key}:waiters"), 1);
    CHECK_EQ_ST(rlock_acquire(&bl, 5000, 0), RLOCK_OK);
    CHECK(rh_str(s, v, sizeof v, "GET floor:key") == REDIS_REPLY_STRING && strcmp(v, rlock_lock_token(&bl)) == 0);
    /* the woken waiter comes back, finds B, queues again and marks B */
    snprintf(want, sizeof want, "%s+", rlock_lock_token(&bl));
    t0 = rh_now_ms();
    while (!(rh_str(s, v, sizeof v, "GET floor:key") == REDIS_REPLY_STRING && strcmp(v, want) == 0) &&
           since(t0) < 2000) {
        s1 = rlock_step(&w1);
        s2 = rlock_step(&w2);
        tcli_wait(&w, 10);
    }
    CHECK_MSG(strcmp(v, want) == 0, "the barging holder's value is \"%s\", not marked", v);
    CHECK_EQ_ST(s1, RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(s2, RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_release(&bl), RLOCK_OK);
    first = granted_soon(&w, &w1, &s1, &w2, &s2, "a waiter, after the barging holder's release,");
    if (first) {
        second = first == &w1 ? &w2 : &w1;
        CHECK_EQ_ST(rlock_release(first), RLOCK_OK);
        CHECK(granted_soon(&w, second, second == &w1 ? &s1 : &s2, NULL, NULL, "the last waiter") == second);
        CHECK_EQ_ST(rlock_release(second), RLOCK_OK);
    }
    printf("a waiter queued in an earlier hold: woken after a fast-path holder's release too (its peer re-marked it)\n");
    CHECK_EQ_LL(rh_int(s, "EXISTS floor:key {floor:key}:waiters"), 0);
    tcli_close(&bc);
    tcli_close(&w);
    tcli_close(&h);
}

/* Redlock waiting with the first node that granted - a release's first
 * wake node - killed during the hold: the release wakes from a second node
 * that granted, so the waiter (RESP3, re-check 5 s) gets the lock on the
 * other two at once instead of after its re-check or the holder's TTL. */
static void test_wake_node_down(rh_server *srv) {
    rh_server *s3[NSRV];
    tcli h, w;
    rlock_lock hl, wl;
    rlock_config cfg = cfg_base(SLOW(250), NULL);
    rlock_status st = RLOCK_WOULD_BLOCK;
    long long took;
    unsigned long long t0;
    int i, queued = 0;
    for (i = 0; i < NSRV; i++) s3[i] = &srv[i];
    cfg.recheck_ms = 5000;
    CHECK(tcli_open(&h, s3, NSRV, &cfg, 0) == 0);
    cfg.pubsub = 1;
    CHECK(tcli_open(&w, s3, NSRV, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "wd:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&wl, &w.cl, "wd:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&hl), 3);
    CHECK_EQ_ST(rlock_acquire_begin(&wl, 5000, 8000), RLOCK_WOULD_BLOCK);
    /* until the waiter is queued on every node (bounded) */
    t0 = rh_now_ms();
    while (st == RLOCK_WOULD_BLOCK && !queued && since(t0) < 3000) {
        st = rlock_step(&wl);
        for (queued = 1, i = 0; i < NSRV; i++) queued = queued && rh_int(&srv[i], "ZCARD {wd:key}:waiters") == 1;
        if (!queued) tcli_wait(&w, 10);
    }
    CHECK_MSG(queued && st == RLOCK_WOULD_BLOCK, "the waiter never queued on all %d nodes (%s)", NSRV,
              rlock_status_str(st));
    rh_server_kill9(&srv[0]);
    /* the waiter sees its node-0 connection drop and settles (held on 1, 2) */
    took = release_wakes(&hl, &wl, &w, &st, 300, "Redlock-3, the first wake node killed: the waiter");
    CHECK_EQ_LL(rlock_last_votes(&wl), 2);
    printf("Redlock-3, first wake node killed during the hold: the waiter got the lock %lld ms after the "
           "release (woken by another node)\n", took);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&wl), RLOCK_OK);
    tcli_close(&w);
    tcli_close(&h);
    CHECK(rh_server_restart(&srv[0], NULL) == 0);
    for (i = 1; i < NSRV; i++) rh_int(&srv[i], "DEL {wd:key}:waiters");
}

/* ----------------- rlock's 32-bit clock wrapping, against real Redis */

/* rlock keeps the now_ms hook's value modulo 2^32 (it wraps every 49.7
 * days). A hook that reads 2^32 at real time `at` (an offset on the real
 * clock) puts the wrap inside each case below: a lease, renewals, an
 * extend, waits by notification and by backoff, a timeout and Redlock
 * validity all cross it against real servers. */
typedef struct wrap_clock { unsigned long long at; } wrap_clock;
static uint64_t wrap_now(void *user) {
    return 0x100000000ULL + rh_now_ms() - ((const wrap_clock *)user)->at;
}
static rlock_config wrap_cfg(wrap_clock *w, unsigned lead_ms) {
    rlock_config c = cfg_base(SLOW(100), NULL);
    w->at = rh_now_ms() + lead_ms; /* the wrap comes lead_ms from now */
    c.now_ms = wrap_now;
    c.hook_user = w;
    return c;
}

/* Acquire key while a holder child keeps it 600 ms from its grant, the
 * wrap halfway to the release (~300 ms on): the wait (by notification with
 * subscribers, else by backoff) ends after the wrap, when the holder
 * releases. */
static void wrap_wait_once(rh_server *s, int with_subs) {
    wrap_clock w;
    rlock_config cfg = wrap_cfg(&w, 5000);
    tcli t;
    rlock_lock lk;
    int pfd[2], status;
    pid_t pid;
    hold_report hr;
    const char *key = with_subs ? "wrap:sub" : "wrap:poll";
    memset(&hr, 0, sizeof hr);
    CHECK(tcli_open(&t, &s, 1, &cfg, with_subs) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(holder_child(s, key, 600, pfd[1]));
    }
    close(pfd[1]);
    CHECK(pid > 0);
    if (pid > 0 && rh_read_full(pfd[0], &hr, sizeof hr, 10000) == 0 && hr.c == 'A') {
        unsigned long long t0 = rh_now_ms(), rel = hr.t_grant + 600;
        long long took, held;
        rlock_status st;
        /* the wrap halfway to the holder's release: 300 ms from now, sooner
         * if this process was stalled after the grant (nothing is in
         * flight: a jump is harmless) */
        w.at = t0 + (rel > t0 ? (rel - t0) / 2 : 0);
        st = rlock_acquire(&lk, 5000, 5000);
        took = since(t0);
        held = since(hr.t_grant);
        CHECK_EQ_ST(st, RLOCK_OK);
        CHECK_MSG(rh_now_ms() > w.at, "acquired before the wrap");
        CHECK_MSG(held >= 600 - 1 && took < 4000, "%s: acquired %lld ms into a 600 ms hold (%lld ms waited)",
                  with_subs ? "pub/sub" : "backoff", held, took);
        CHECK(key_is(s, key, rlock_lock_token(&lk)));
        CHECK_MSG(rlock_validity_ms(&lk) > 4000, "validity %lld", rlock_validity_ms(&lk));
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        printf("clock wrap: a wait by %s across it acquired %lld ms into a 600 ms hold\n",
               with_subs ? "notification" : "backoff", held);
    } else {
        CHECK_MSG(0, "holder child did not get %s", key);
    }
    close(pfd[0]);
    if (pid > 0) {
        status = rh_wait_child(pid, 10000);
        CHECK_MSG(rh_exited_with(status, 0), "holder child exit %d", exit_code(status));
    }
    tcli_close(&t);
}

static void test_clock_wrap(rh_server *srv) {
    wrap_clock w;
    rlock_config cfg = wrap_cfg(&w, 500);
    tcli t, o;
    rlock_lock lk, other;
    unsigned long long t0;
    int renewed = 0, i;
    long long v, took, pttl[NSRV];
    uint32_t next = 0;
    rlock_status st = RLOCK_OK;
    rh_server *sp[NSRV];

    for (i = 0; i < NSRV; i++) sp[i] = &srv[i];
    /* held 500 ms before the wrap, renewed (every ttl / 3) across it,
     * extended and released after it */
    CHECK(tcli_open(&t, &srv, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wrap:hold", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1500, 0), RLOCK_OK);
    t0 = rh_now_ms(); /* until two renewals after the wrap (bounded: 8 s) */
    while (renewed < 2 && since(t0) < 8000) {
        st = rlock_renew_poll(&lk, &next);
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) break;
        if (rlock_renew_outcome(&lk) == RLOCK_RENEW_RENEWED && rh_now_ms() > w.at) renewed++;
        CHECK_MSG(next <= 1500, "renew_poll asks to come back in %lu ms", (unsigned long)next);
        tcli_wait(&t, next > 20 ? 20 : next);
    }
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_WOULD_BLOCK, "renewal across the wrap: %s", rlock_status_str(st));
    CHECK(renew_settle(&t, &lk) == RLOCK_OK);
    CHECK_MSG(renewed >= 2, "%d renewals after the wrap in %lld ms of a 1.5 s lease", renewed, since(t0));
    CHECK(rh_now_ms() > w.at);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
    CHECK(key_is(&srv[0], "wrap:hold", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_extend(&lk, 3000), RLOCK_OK);
    v = rlock_validity_ms(&lk);
    CHECK_MSG(v > 2500 && v <= 3000 - 32, "validity %lld after a 3000 ms extend", v);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS wrap:hold"), 0);
    tcli_close(&t);

    /* waits across the wrap: by notification, by backoff */
    wrap_wait_once(&srv[0], 1);
    wrap_wait_once(&srv[0], 0);

    /* a wait that times out across the wrap: the key is another's for 10 s;
     * rlock_next_timeout_ms never points past the wait's end */
    cfg = cfg_base(SLOW(100), NULL);
    CHECK(tcli_open(&o, &srv, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&other, &o.cl, "wrap:busy", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&other, 10000, 0), RLOCK_OK);
    cfg = wrap_cfg(&w, 200);
    CHECK(tcli_open(&t, &srv, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wrap:busy", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire_begin(&lk, 2000, 600);
    while (st == RLOCK_WOULD_BLOCK && since(t0) < 3000) {
        next = rlock_next_timeout_ms(&lk);
        CHECK_MSG(next <= 600, "next timeout %lu ms in a 600 ms wait", (unsigned long)next);
        if ((st = rlock_step(&lk)) != RLOCK_WOULD_BLOCK) break;
        tcli_wait(&t, next);
    }
    took = since(t0);
    CHECK_EQ_ST(st, RLOCK_TIMEOUT);
    CHECK_MSG(took >= 590 && took < 3000, "a 600 ms wait across the wrap timed out after %lld ms", took);
    CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
    tcli_close(&t);
    tcli_close(&o);

    /* Redlock-3: acquired 200 ms before the wrap; validity counts down
     * across it as on the servers */
    cfg = wrap_cfg(&w, 200);
    CHECK(tcli_open(&t, sp, NSRV, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wrap:redlock", 12, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 3000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&lk), NSRV);
    t0 = rh_now_ms();
    rh_sleep_ms(400);
    took = since(t0);
    CHECK(rh_now_ms() > w.at);
    for (i = 0; i < NSRV; i++) pttl[i] = rh_int(&srv[i], "PTTL wrap:redlock");
    v = rlock_validity_ms(&lk); /* after the PTTLs: it is never above what any node had left before */
    CHECK_MSG(v > 1000 && v <= 3000 - 32 - took, /* (a raw compare says 0 after the wrap) */
              "Redlock validity %lld ms, %lld ms into a 3000 ms lease", v, took);
    for (i = 0; i < NSRV; i++) CHECK_MSG(pttl[i] >= v, "node %d PTTL %lld below the validity %lld", i, pttl[i], v);
    CHECK_EQ_ST(rlock_extend(&lk, 3000), RLOCK_OK);
    CHECK_MSG(rlock_validity_ms(&lk) > 2500, "validity %lld after the extend", rlock_validity_ms(&lk));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    tcli_close(&t);
    printf("clock wrap: lease, renewals (%d), extend, timeout and Redlock validity across it\n", renewed);
}

/* The clock hook steps back 5 s (FAULTS row 10) while renew_poll keeps a
 * 1000 ms lease: the renewal due ~333 ms after the grant is due by the
 * step-back clock too (it is before the grant: nothing can be told of the
 * time since), not 5 s later, when Redis has long let the key expire while
 * the handle still says HELD. */
typedef struct back_clock { unsigned long long back, fwd; int lost; } back_clock; /* (fwd: jumped forward) */
static uint64_t back_now(void *user) {
    return 1000000000ULL + rh_now_ms() + ((const back_clock *)user)->fwd - ((const back_clock *)user)->back;
}
static void back_lost(rlock_lock *lk, void *user) { (void)lk; ((back_clock *)user)->lost++; }
static void test_clock_back_renew(rh_server *s) {
    back_clock b = {0};
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    unsigned long long t0;
    uint32_t next = 0;
    rlock_status st = RLOCK_OK;
    cfg.now_ms = back_now;
    cfg.hook_user = &b;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "back:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    t0 = rh_now_ms();
    while (since(t0) < 2500) { /* 2.5 leases */
        if (since(t0) >= 100) b.back = 5000;
        st = rlock_renew_poll(&lk, &next);
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) break;
        tcli_wait(&t, next > 20 ? 20 : next);
    }
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_WOULD_BLOCK, "renew_poll after the clock stepped back: %s",
              rlock_status_str(st));
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
    CHECK_MSG(key_is(s, "back:key", rlock_lock_token(&lk)),
              "the clock stepped back 5 s: the 1000 ms key expired, %lld ms on, the handle HELD (%lld ms left)",
              since(t0), rlock_validity_ms(&lk));
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_LOST, "release: %s", rlock_status_str(st));
    CHECK_EQ_LL(rh_int(s, "EXISTS back:key"), 0);
    tcli_close(&t);
}

/* The clock hook steps back 5 s (FAULTS row 10) right after a grant:
 * rlock_validity_ms claims none of the lease while the clock reads before
 * the grant (the time since cannot be told; Redis's TTL runs on) - not the
 * whole lease, still claimed after Redis let the key expire - while the
 * lock is not known lost (HELD; renew_poll then finds it gone: LOST, once).
 * With max_hold_ms set, renew_poll renews at once through the step as
 * without (test_clock_back_renew): the hold counts to the grant while the
 * clock reads before it - not 2^32 ms, over the cap, so that renewals
 * stopped and the key expired under a handle that said HELD. */
static void test_clock_back_hold(rh_server *s) {
    back_clock b = {0, 0, 0};
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    unsigned long long t0;
    uint32_t next = 0;
    rlock_status st = RLOCK_OK;
    cfg.now_ms = back_now;
    cfg.hook_user = &b;
    cfg.on_lost = back_lost;
    cfg.max_hold_ms = 60000;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "backhold:key", 12, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    b.back = 5000;
    CHECK_MSG(rlock_validity_ms(&lk) == 0, "%lld ms of validity claimed with the clock ~5 s before the grant",
              rlock_validity_ms(&lk));
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
    t0 = rh_now_ms();
    while (rh_int(s, "EXISTS backhold:key") != 0 && since(t0) < 3000) rh_sleep_ms(20);
    CHECK_EQ_LL(rh_int(s, "EXISTS backhold:key"), 0);
    CHECK_MSG(rlock_validity_ms(&lk) == 0, "the 1000 ms key expired on the server, %lld ms of validity claimed",
              rlock_validity_ms(&lk));
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_LOST); /* renewed at once: refused */
    CHECK_EQ_LL(b.lost, 1);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);

    /* max_hold_ms: renewed through a 5 s step back */
    b.back = 0;
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    t0 = rh_now_ms();
    while (since(t0) < 2500) { /* 2.5 leases */
        if (since(t0) >= 100) b.back = 5000;
        st = rlock_renew_poll(&lk, &next);
        if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK) break;
        tcli_wait(&t, next > 20 ? 20 : next);
    }
    CHECK_MSG(st == RLOCK_OK || st == RLOCK_WOULD_BLOCK, "max_hold_ms, renew_poll after the clock stepped back: %s",
              rlock_status_str(st));
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
    CHECK_MSG(key_is(s, "backhold:key", rlock_lock_token(&lk)), "max_hold_ms, the clock stepped back 5 s: the 1000 "
              "ms key expired, %lld ms on, the handle HELD (%lld ms left)", since(t0), rlock_validity_ms(&lk));
    CHECK_EQ_LL(b.lost, 1);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS backhold:key"), 0);
    tcli_close(&t);
}

/* The server closes the lock's connection between renewals (FAULTS row
 * 25: CLIENT KILL), twice: each next renewal reconnects through the
 * transport and renews - RENEWED again, the key still ours, on_lost never;
 * a renewal whose request met the closed connection may say FAILED (an
 * unknown outcome, retried sooner), never LOST. */
static void test_renew_reconnect(rh_server *s) {
    int lost_calls = 0, i, failed = 0;
    rlock_config cfg = cfg_base(SLOW(100), &lost_calls);
    tcli t;
    rlock_lock lk;
    uint32_t next = 0;
    rlock_status st = RLOCK_OK;
    unsigned long long t0;
    cfg.on_lost = count_lost;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "renewkill:key", 13, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, SLOW(600), 0), RLOCK_OK);
    for (i = 0; i < 2; i++) {
        long long killed = rh_int(s, "CLIENT KILL TYPE normal"); /* (not the asking connection: SKIPME) */
        CHECK_MSG(killed >= 1, "CLIENT KILL TYPE normal killed %lld", killed);
        t0 = rh_now_ms();
        do {
            st = rlock_renew_poll(&lk, &next);
            failed += rlock_renew_outcome(&lk) == RLOCK_RENEW_FAILED;
            if (st != RLOCK_OK && st != RLOCK_WOULD_BLOCK && rlock_renew_outcome(&lk) != RLOCK_RENEW_FAILED) break;
            if (rlock_renew_outcome(&lk) == RLOCK_RENEW_RENEWED) break;
            tcli_wait(&t, next > 10 ? 10 : next);
        } while (since(t0) < SLOW(3000));
        CHECK_MSG(rlock_renew_outcome(&lk) == RLOCK_RENEW_RENEWED, "kill %d: renew_poll %s, outcome %d, %lld ms on", i,
                  rlock_status_str(st), (int)rlock_renew_outcome(&lk), since(t0));
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
        CHECK(key_is(s, "renewkill:key", rlock_lock_token(&lk)));
    }
    printf("renewal across a killed connection: renewed both times (%d failed polls)\n", failed);
    CHECK_EQ_LL(lost_calls, 0);
    CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS renewkill:key"), 0);
    tcli_close(&t);
}

/* A renewal (and an rlock_extend_begin) in flight - every node stopped
 * (SIGSTOP), its user-set node timeout (900 ms) outlasting the lease's
 * validity - when the validity ends: the next poll (step) says LOST and
 * on_lost runs then, not at the node timeout, with the handle LOST all
 * along. The clock hook jumps, so nothing depends on this machine's speed:
 * the renewal goes out 400 ms into a 1000 ms lease (validity ~988 ms), the
 * clock then moves to 1000 ms, 300 ms before that node timeout. One node,
 * then Redlock on 3. */
static void test_renew_past_validity(rh_server *srv) {
    int n, k, ext;
    for (n = 1; n <= NSRV; n += NSRV - 1)
        for (ext = 0; ext < 2; ext++) {
            back_clock b = {0, 0, 0};
            rlock_config cfg = cfg_base(900, NULL);
            rh_server *sp[NSRV];
            tcli t;
            rlock_lock lk;
            uint32_t next = 0;
            rlock_status st;
            const char *how = ext ? "rlock_extend_begin" : "renew_poll";
            for (k = 0; k < NSRV; k++) sp[k] = &srv[k];
            cfg.now_ms = back_now;
            cfg.hook_user = &b;
            cfg.on_lost = back_lost;
            CHECK(tcli_open(&t, sp, n, &cfg, 0) == 0);
            CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "pastval:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
            for (k = 0; k < n; k++) rh_server_pause(sp[k]);
            b.fwd = 400;
            st = ext ? rlock_extend_begin(&lk, 1000) : rlock_renew_poll(&lk, &next);
            CHECK_MSG(st == RLOCK_WOULD_BLOCK, "%d node(s), %s: %s", n, how, rlock_status_str(st));
            st = ext ? rlock_step(&lk) : rlock_renew_poll(&lk, &next);
            CHECK_MSG(st == RLOCK_WOULD_BLOCK && (ext || rlock_renew_outcome(&lk) == RLOCK_RENEW_IN_FLIGHT),
                      "%d node(s), %s: not in flight (%s)", n, how, rlock_status_str(st));
            CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
            b.fwd = 1000; /* the validity is gone, the node timeout 300 ms ahead */
            CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_LOST);
            CHECK_MSG(ext || rlock_next_timeout_ms(&lk) == 0, "%d node(s): the next poll due in %u ms, not now", n,
                      (unsigned)rlock_next_timeout_ms(&lk));
            st = ext ? rlock_step(&lk) : rlock_renew_poll(&lk, &next);
            CHECK_MSG(st == RLOCK_LOST && b.lost == 1, "%d node(s), %s with the validity gone and the request in "
                      "flight: %s, on_lost %d times (the node timeout was 300 ms ahead)", n, how,
                      rlock_status_str(st), b.lost);
            CHECK(ext || rlock_renew_outcome(&lk) == RLOCK_RENEW_LOST);
            CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_LOST);
            for (k = 0; k < n; k++) rh_server_resume(sp[k]);
            CHECK_EQ_ST(renew_settle(&t, &lk), RLOCK_LOST);
            CHECK_EQ_LL(b.lost, 1);
            st = rlock_release(&lk); /* (the renewal may have extended it meanwhile: owner-checked) */
            CHECK_MSG(st == RLOCK_OK || st == RLOCK_LOST, "release: %s", rlock_status_str(st));
            for (k = 0; k < n; k++) CHECK_EQ_LL(rh_int(sp[k], "EXISTS pastval:key"), 0);
            tcli_close(&t);
        }
}

/* ------------------------------------- lifecycle misuse (rows 12, 14, 23) */

/* 1 and 3 servers: a release that finds the lock gone - its lease ran out
 * unrenewed (the keys expired), or the keys were deleted under it with
 * validity left - says RLOCK_LOST and calls on_lost once, as an extend
 * that finds it gone does (before: RLOCK_LOST, on_lost never called, so a
 * holder that does not renew never heard of its loss through the hook).
 * Once per grant: an extend that reported the loss first is not followed
 * by a second call from the release; a release that finds the lock calls
 * none. */
static void test_release_finds_lost(rh_server *all) {
    rh_server *srv[NSRV] = {&all[0], &all[1], &all[2]};
    int n, i;
    for (n = 1; n <= 3; n += 2) {
        int lost = 0;
        rlock_config cfg = cfg_base(SLOW(100), &lost);
        tcli t;
        rlock_lock lk;
        unsigned long long t0;
        cfg.on_lost = count_lost;
        CHECK(tcli_open(&t, srv, n, &cfg, 0) == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "rel:lost", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        /* expired: a 300 ms lease never renewed, its keys gone from every server */
        CHECK_EQ_ST(rlock_acquire(&lk, SLOW(300), 0), RLOCK_OK);
        t0 = rh_now_ms();
        for (i = 0; i < n; i++)
            while (rh_int(srv[i], "EXISTS rel:lost") != 0 && since(t0) < SLOW(3000)) rh_sleep_ms(20);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
        CHECK_MSG(lost == 1, "%d servers: a release that found the expired lock gone: on_lost ran %d times", n, lost);
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_NOT_HELD);
        CHECK_EQ_LL(lost, 1);
        /* deleted under it, validity left */
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
        for (i = 0; i < n; i++) CHECK_EQ_LL(rh_int(srv[i], "DEL rel:lost"), 1);
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
        CHECK_MSG(lost == 2, "%d servers: a release that found the deleted lock gone: on_lost ran %d times in all", n, lost);
        /* the extend found it gone first: one call for this grant */
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
        for (i = 0; i < n; i++) CHECK_EQ_LL(rh_int(srv[i], "DEL rel:lost"), 1);
        CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_LOST);
        CHECK_EQ_LL(lost, 3);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST);
        CHECK_EQ_LL(lost, 3);
        /* found: no call */
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        CHECK_EQ_LL(lost, 3);
        for (i = 0; i < n; i++) CHECK_EQ_LL(rh_int(srv[i], "EXISTS rel:lost"), 0);
        rlock_lock_destroy(&lk);
        tcli_close(&t);
    }
}

/* rlock_client_init on a client while an operation of it runs (the client
 * cannot tell: c may be memory never initialised, so its old list of
 * operations is not read). Before: the op was cut off - no step of the
 * client moved it again, its rlock_step said RLOCK_WOULD_BLOCK for ever
 * and rlock_lock_destroy (which ends it first) never returned. Now the
 * op's next step, result, cancel or destroy ends it with RLOCK_E_STATE.
 * Three ways, each on 1 and 3 servers: an acquire backing off from a held
 * key; one whose request is out to a stopped server (its reply, read by
 * the new client once the server resumes, is dropped, never taken for a
 * later request's - a new lock on the same connection works); and a
 * destroy of such a handle (in a child, bounded: before, it hung). */
static int reinit_child(rh_server *const *srv, int n) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk;
    int i;
    if (tcli_open(&t, srv, n, &cfg, 0) != 0 || rlock_lock_init(&lk, &t.cl, "ri:held", 7, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    if (rlock_acquire_begin(&lk, 5000, 60000) != RLOCK_WOULD_BLOCK) return 11;
    for (i = 0; i < 5; i++) {
        (void)rlock_step(&lk);
        rh_sleep_ms(5);
    }
    if (rlock_client_init(&t.cl, t.nodes, (size_t)n, &cfg) != RLOCK_OK) return 12;
    rlock_lock_destroy(&lk); /* (before: never returned) */
    tcli_close(&t);
    return 0;
}
static void test_client_reinit_in_flight(rh_server *all) {
    rh_server *srv[NSRV] = {&all[0], &all[1], &all[2]};
    int n, i;
    for (n = 1; n <= 3; n += 2) {
        rlock_config cfg = cfg_base(SLOW(100), NULL);
        tcli t;
        rlock_lock lk, lk2;
        rlock_status st;
        unsigned long long t0;
        pid_t pid;
        int status;
        for (i = 0; i < n; i++) {
            char buf[16];
            CHECK_EQ_LL(rh_str(srv[i], buf, sizeof buf, "SET ri:held other PX 20000"), REDIS_REPLY_STATUS);
        }
        CHECK(tcli_open(&t, srv, n, &cfg, 0) == 0);
        /* backing off */
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "ri:held", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire_begin(&lk, 5000, 60000), RLOCK_WOULD_BLOCK);
        for (i = 0; i < 5; i++) {
            CHECK_EQ_ST(rlock_step(&lk), RLOCK_WOULD_BLOCK);
            rh_sleep_ms(5);
        }
        CHECK_EQ_ST(rlock_client_init(&t.cl, t.nodes, (size_t)n, &cfg), RLOCK_OK);
        t0 = rh_now_ms();
        while ((st = rlock_step(&lk)) == RLOCK_WOULD_BLOCK && since(t0) < 1000) tcli_wait(&t, 20);
        CHECK_MSG(st == RLOCK_E_STATE, "%d servers: the op of a client initialised again: rlock_step %s after %lld ms",
                  n, rlock_status_str(st), since(t0));
        CHECK_EQ_ST(rlock_step(&lk), RLOCK_E_STATE); /* (ended: no op) */
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        /* its request out to a stopped server */
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "ri:free", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK); /* (connected, scripts known) */
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        for (i = 0; i < n; i++) rh_server_pause(srv[i]);
        CHECK_EQ_ST(rlock_acquire_begin(&lk, 5000, 0), RLOCK_WOULD_BLOCK);
        CHECK_EQ_ST(rlock_step(&lk), RLOCK_WOULD_BLOCK); /* (sent) */
        CHECK_EQ_ST(rlock_client_init(&t.cl, t.nodes, (size_t)n, &cfg), RLOCK_OK);
        CHECK_EQ_ST(rlock_step(&lk), RLOCK_E_STATE);
        for (i = 0; i < n; i++) rh_server_resume(srv[i]);
        CHECK_EQ_ST(rlock_lock_init(&lk2, &t.cl, "ri:other", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk2, 5000, 0), RLOCK_OK); /* (the old reply read first, dropped) */
        for (i = 0; i < n; i++) {
            char buf[64];
            CHECK_EQ_LL(rh_str(srv[i], buf, sizeof buf, "GET ri:other"), REDIS_REPLY_STRING);
            CHECK_MSG(strcmp(buf, rlock_lock_token(&lk2)) == 0, "server %d holds %s, not the new lock's token", i, buf);
        }
        CHECK_EQ_ST(rlock_release(&lk2), RLOCK_OK);
        rlock_lock_destroy(&lk);
        rlock_lock_destroy(&lk2);
        tcli_close(&t);
        /* a destroy of the cut-off op's handle returns */
        pid = rh_fork();
        if (pid == 0) _exit(reinit_child(srv, n));
        CHECK(pid > 0);
        status = pid > 0 ? rh_wait_child(pid, 10000) : -1;
        CHECK_MSG(rh_exited_with(status, 0), "%d servers: destroy of an op cut off by rlock_client_init: exit %d (-1: it hung)",
                  n, exit_code(status));
        for (i = 0; i < n; i++) (void)rh_int(srv[i], "DEL ri:held ri:free ri:other");
    }
}

/* An acquire cut off by rlock_client_init while its attempt was out (the
 * servers stopped: its SET waits in their sockets and lands once they
 * resume) is ended by its step, result, cancel or destroy: RLOCK_E_STATE
 * at once, as before, and what the attempt may have been granted is
 * released (owner-checked, its token) through the new client's nodes,
 * behind the attempt on each connection - the key is gone once the client
 * has been stepped (here by another lock's acquire), not held until its TTL
 * (before: PTTL ~5 s left on every server). A key another handle holds is
 * not touched: the cut-off attempt was refused there, and its release
 * (owner-checked) finds another's token. */
static void test_reinit_cut_off_grant(rh_server *all) {
    static const char *const hows[] = { "step", "result", "cancel", "destroy" };
    rh_server *srv[NSRV] = {&all[0], &all[1], &all[2]};
    int n, i, how;
    for (n = 1; n <= 3; n += 2)
        for (how = 0; how < 4; how++) {
            rlock_config cfg = cfg_base(SLOW(250), NULL);
            tcli t, h;
            rlock_lock lk, other, hl, held;
            CHECK(tcli_open(&t, srv, n, &cfg, 0) == 0);
            CHECK(tcli_open(&h, srv, n, &cfg, 0) == 0);
            CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "rg:held", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "rg:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&held, &t.cl, "rg:held", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK); /* (connected, scripts known) */
            CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
            for (i = 0; i < n; i++) rh_server_pause(srv[i]);
            CHECK_EQ_ST(rlock_acquire_begin(&lk, 5000, 0), RLOCK_WOULD_BLOCK);
            CHECK_EQ_ST(rlock_acquire_begin(&held, 5000, 0), RLOCK_WOULD_BLOCK);
            CHECK_EQ_ST(rlock_step(&lk), RLOCK_WOULD_BLOCK); /* (both sent) */
            CHECK_EQ_ST(rlock_client_init(&t.cl, t.nodes, (size_t)n, &cfg), RLOCK_OK);
            if (how == 0) CHECK_EQ_ST(rlock_step(&lk), RLOCK_E_STATE);
            else if (how == 1) CHECK_EQ_ST(rlock_result(&lk), RLOCK_E_STATE);
            else if (how == 2) CHECK_EQ_ST(rlock_cancel_begin(&lk), RLOCK_E_STATE);
            rlock_lock_destroy(&lk);
            CHECK_EQ_ST(rlock_step(&held), RLOCK_E_STATE);
            rlock_lock_destroy(&held);
            for (i = 0; i < n; i++) rh_server_resume(srv[i]);
            CHECK_EQ_ST(rlock_lock_init(&other, &t.cl, "rg:other", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_acquire(&other, 5000, 0), RLOCK_OK); /* (behind the releases: answered first) */
            CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
            for (i = 0; i < n; i++)
                CHECK_MSG(rh_int(srv[i], "EXISTS rg:key") == 0,
                          "%d servers, ended by %s: server %d still has the cut-off acquire's key (PTTL %lld)", n,
                          hows[how], i, rh_int(srv[i], "PTTL rg:key"));
            CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* (its key untouched) */
            rlock_lock_destroy(&other);
            rlock_lock_destroy(&hl);
            tcli_close(&t);
            tcli_close(&h);
            for (i = 0; i < n; i++) (void)rh_int(srv[i], "DEL rg:key rg:held");
        }
    printf("an acquire cut off by rlock_client_init with its attempt out: its grant released through the new "
           "client (1 and 3 servers; step, result, cancel, destroy)\n");
}

/* A Pub/Sub waiter cut off by rlock_client_init (same node, same
 * subscriber) is ended (cancel, destroy or step): nothing of it may reach
 * the new client. Its subscription was the old client's: the new client
 * must not count it as its lingering channel (a new waiter would adopt it
 * and wait unheard: nothing reads the subscriber for a channel the client
 * never subscribed), and its SUBSCRIBE's reply, still unread, must reach
 * nobody (the handle may be freed; with the subscribers set only after the
 * end, `late`, the new client's disowning walk never saw that reply).
 * Then a new waiter on the key is woken by the holder's release, well
 * before its re-check (5 s). phase 0: cut off just after its first
 * refusal (SUBSCRIBE sent, the retry that queues not yet); 1: queued,
 * waiting for a notice. The new waiter's wait is the shorter: a cut-off
 * queued waiter's entry is a dead waiter's (FAULTS.md), popped first by
 * a release only while its deadline is the earlier one. The lock is
 * malloc'd and freed after the end: a write to it later is caught by
 * ASan / valgrind. */
static long long reinit_waiter_once(rh_server *s, int resp3, int phase, int how, int late) {
    static const char *const hows[] = { "cancel", "destroy", "step" };
    rlock_config cfg = cfg_base(SLOW(250), NULL);
    tcli h, w;
    rlock_lock hl, nl, *a = (rlock_lock *)malloc(sizeof *a);
    rlock_status st = RLOCK_WOULD_BLOCK;
    unsigned long long t0;
    long long took;
    char what[96];
    const char *key = "rw:key";
    CHECK(a != NULL);
    if (!a) return -1;
    cfg.recheck_ms = 5000;
    CHECK(tcli_open(&h, &s, 1, &cfg, 0) == 0);
    cfg.pubsub = resp3;
    CHECK(tcli_open(&w, &s, 1, &cfg, !resp3) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 10000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(a, &w.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire_begin(a, 10000, 9000);
    if (phase == 0) {
        /* each step with the server stopped: the one that reads the refusal
         * sends SUBSCRIBE, whose answer cannot come in that same step */
        for (t0 = rh_now_ms(); st == RLOCK_WOULD_BLOCK && !rlock_acquire_waiting(a) && since(t0) < 2000;) {
            tcli_wait(&w, 5);
            rh_server_pause(s);
            st = rlock_step(a);
            rh_server_resume(s);
        }
        CHECK_MSG(st == RLOCK_WOULD_BLOCK && a->op.phase == RLOCK__PH_SUBSCRIBE && a->op.sub_pending,
                  "the waiter is not subscribing (%s, phase %d)", rlock_status_str(st), a->op.phase);
    } else {
        st = rh_step_until_waitmsg(a, st);
        CHECK_MSG(st == RLOCK_WOULD_BLOCK && a->op.phase == RLOCK__PH_WAITMSG && a->op.sub_ok,
                  "the waiter is not waiting for a notice (%s, phase %d)", rlock_status_str(st), a->op.phase);
    }
    CHECK_EQ_ST(rlock_client_init(&w.cl, w.nodes, 1, &cfg), RLOCK_OK);
    if (!resp3 && !late) CHECK_EQ_ST(rlock_client_set_subscribers(&w.cl, w.subs, 1), RLOCK_OK);
    if (how == 0) CHECK_EQ_ST(rlock_cancel_begin(a), RLOCK_E_STATE);
    else if (how == 2) CHECK_EQ_ST(rlock_step(a), RLOCK_E_STATE);
    rlock_lock_destroy(a);
    free(a);
    if (!resp3 && late) CHECK_EQ_ST(rlock_client_set_subscribers(&w.cl, w.subs, 1), RLOCK_OK);
    CHECK_MSG(w.cl.ops == NULL && w.cl.linger_mask == 0,
              "%s, %s of a cut-off waiter (phase %d%s): the new client has ops %p, a lingering channel on %#x",
              resp3 ? "RESP3" : "RESP2", hows[how], phase, late ? ", subscribers set after" : "", (void *)w.cl.ops,
              w.cl.linger_mask);
    /* a new waiter on the new client */
    CHECK_EQ_ST(rlock_lock_init(&nl, &w.cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rh_step_until_waitmsg(&nl, rlock_acquire_begin(&nl, 10000, 4000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    snprintf(what, sizeof what, "%s, %s of a cut-off waiter (phase %d%s): the new waiter", resp3 ? "RESP3" : "RESP2",
             hows[how], phase, late ? ", subscribers set after" : "");
    took = release_wakes(&hl, &nl, &w, &st, 100, what); /* (settled: only a notice moves it) */
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&nl), RLOCK_OK);
    rlock_lock_destroy(&nl);
    tcli_close(&w);
    tcli_close(&h);
    (void)rh_int(s, "DEL %s {%s}:waiters", key, key);
    return took;
}

static void test_reinit_cut_off_waiter(rh_server *s) {
    int resp3, phase, how;
    long long worst = 0;
    for (resp3 = 0; resp3 < 2; resp3++)
        for (phase = 0; phase < 2; phase++)
            for (how = 0; how < 3; how++) {
                long long took = reinit_waiter_once(s, resp3, phase, how, 0);
                if (took > worst) worst = took;
                if (!resp3) {
                    took = reinit_waiter_once(s, resp3, phase, how, 1);
                    if (took > worst) worst = took;
                }
            }
    printf("a Pub/Sub waiter cut off by rlock_client_init, then ended: the new client's waiter woken by the "
           "release (at worst %lld ms after it; re-check 5 s)\n", worst);
}

/* rlock_lock_init on a handle that holds its lock (no operation running)
 * forgets it, as rlock_lock_destroy does - documented, not refused: lk may
 * be memory never initialised, so rlock_lock_init reads nothing of it, and
 * a held lock is in no list of its client's. This pins what the manual
 * says: the key stays on the server with its TTL, the handle is IDLE (its
 * release sends nothing: NOT_HELD; rlock_renew_poll renews nothing), and
 * the client is unharmed (a new acquire of the key by another handle waits
 * for that TTL). While an operation of it runs, rlock_lock_init refuses
 * (RLOCK_E_STATE) and the operation goes on to its end. */
static void test_lock_init_held(rh_server *s) {
    rlock_config cfg = cfg_base(SLOW(100), NULL);
    tcli t;
    rlock_lock lk, other;
    uint32_t next;
    long long pttl;
    CHECK(tcli_open(&t, &s, 1, &cfg, 0) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "li:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend_begin(&lk, 5000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "li:key", 6, RLOCK_KIND_SIMPLE), RLOCK_E_STATE);
    CHECK_EQ_ST(step_until_done(&lk, &t, RLOCK_WOULD_BLOCK, 2000), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "li:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_renew_poll(&lk, &next), RLOCK_NOT_HELD);
    pttl = rh_int(s, "PTTL li:key");
    CHECK_MSG(pttl > 0 && pttl <= 5000, "the forgotten lock's key: PTTL %lld", pttl);
    CHECK_EQ_ST(rlock_lock_init(&other, &t.cl, "li:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&other, 5000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(rh_int(s, "DEL li:key"), 1);
    CHECK_EQ_ST(rlock_try_acquire(&other, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
    tcli_close(&t);
}

int main(void) {
    rh_server srv[NSRV];
    int fds0, fds1, i, up = 1;
    unsigned long long t0 = rh_now_ms();

    quick = getenv("RLOCK_TEST_QUICK") != NULL && getenv("RLOCK_TEST_QUICK")[0] != '\0' &&
            strcmp(getenv("RLOCK_TEST_QUICK"), "0") != 0;
    slow = rh_slow();
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    g_threads0 = rh_count_threads();
    CHECK(g_threads0 >= 1);
    fds0 = rh_count_fds();

    for (i = 0; i < NSRV; i++) {
        if (rh_server_start(&srv[i], NULL) != 0) { up = 0; srv[i].pid = -1; }
    }
    if (!up) {
        CHECK_MSG(0, "could not start redis-server");
        for (i = 0; i < NSRV; i++) rh_server_stop(&srv[i]);
        return check_summary("waiting");
    }
    {   /* A lock taken, watched by a watchdog thread and released first:
         * under valgrind a code path's first run is translated - the first
         * acquire and the first thread start each took 100-300 ms on a loaded
         * 2-core machine, which the first test to run them paid inside its
         * 300 ms or 200 ms lease (their second runs: ~10 ms). Forked
         * children inherit the translations. */
        rlock_config cfg = cfg_base(10000, NULL);
        rh_server *s0 = &srv[0];
        tcli t, own;
        rlock_lock lk;
        rlock_watchdog w;
        CHECK(tcli_open(&t, &s0, 1, &cfg, 0) == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "warm:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 60000, 0), RLOCK_OK);
        CHECK(tcli_open(&own, &s0, 1, &cfg, 0) == 0);
        CHECK_EQ_ST(rlock_watchdog_start(&w, &lk, &own.cl), RLOCK_OK);
        CHECK_EQ_ST(rlock_watchdog_stop(&w), RLOCK_OK);
        CHECK_EQ_LL(threads_back(), g_threads0);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        tcli_close(&t);
        tcli_close(&own);
    }
    test_lost_after_pause(&srv[0]);
    test_state_during_renewal(&srv[0]);
    test_renewal_lost_in_client_step(&srv[0]);
    test_renew_no_gap(&srv[0]);
    test_watchdog_no_gap(&srv[0]);
    test_pubsub_wake(&srv[0]);
    test_resp3_wait(srv);
    test_sub_killed_then_release(&srv[0]);
    test_linger_unsent_subscribe(&srv[0]);
    test_resp3_subscribe_refused(&srv[0]);
    test_pubsub_faults(&srv[0]);
    test_wake_chain(&srv[0]);
    test_dead_waiter(&srv[0]);
    test_cancelled_waiter_wake(&srv[0]);
    test_fencing(srv);
    test_watchdog_lifecycle(&srv[0]);
    test_watchdog_stop_in_flight(&srv[0]);
    test_caps(&srv[0]);
    test_release_floor(&srv[0]);
    test_clock_wrap(srv);
    test_clock_back_renew(&srv[0]);
    test_clock_back_hold(&srv[0]);
    test_renew_reconnect(&srv[0]);
    test_renew_past_validity(srv);
    test_wake_node_down(srv);
    test_release_finds_lost(srv);
    test_client_reinit_in_flight(srv);
    test_reinit_cut_off_grant(srv);
    test_reinit_cut_off_waiter(&srv[0]);
    test_lock_init_held(&srv[0]);
    test_redlock_renew_kill(srv); /* kills srv[1] and srv[2]: keep it last */

    CHECK_EQ_LL(rh_int(&srv[0], "DBSIZE"), 0); /* no lock or counter left behind */
    for (i = 0; i < NSRV; i++) {
        rh_server_stop(&srv[i]);
        CHECK_EQ_LL(srv[i].pid, -1);
    }
    CHECK_EQ_LL(rh_count_children(), 0);
    CHECK_EQ_LL(threads_back(), g_threads0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    printf("waiting: %s run in %lld ms (timing x%u)\n", quick ? "quick" : "full", since(t0), slow);
    return check_summary("waiting");
}
