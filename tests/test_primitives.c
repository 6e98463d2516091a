/* test_primitives.c - semaphores, read-write locks, multi-locks, inspection
 * and force-unlock (rlock.h section 5b) against real, throw-away
 * redis-server processes on loopback (started and stopped by PID here).
 *
 * Covers: a semaphore's permits never exceed N among 16 processes while
 * holders are killed (SIGKILL, their permit stays until its lease ends) and
 * paused past their lease (their release then says LOST), on one node and
 * on three Redlock nodes (one of them paused meanwhile); permit slots (N = 2
 * on 3 nodes: pairwise-overlapping majorities admit 2, not 3); per-permit
 * renewal and release; changing N; readers together, the writer alone,
 * reentrancy, upgrade refused (RLOCK_E_UPGRADE), downgrade, a reader's own
 * lease, no writer starvation under a stream of readers (and the stream
 * wins when writers-first is off), no reader starvation under a writer that
 * re-acquires in a loop (turn tickets), a wake-up read together with the
 * refusal it follows acted on at once (not at the re-check), a writer
 * half-way through a downgrade (its write lease ends on its own), a read or
 * write attempt on a reentrant lock's or a program's hash (refused, nothing
 * written); a multi-lock all or none while one key is held, its Cluster
 * slot check, its release waking single-key waiters and its fence token
 * (its counters exact past 2^53 and 10^17); inspection against what Redis
 * holds; force-unlock; nothing leaked.
 *
 * RLOCK_TEST_QUICK=1 (set by `make test` for the valgrind run) shrinks the
 * loops. No wall-clock asserts: orderings and counts only. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "rlock.h"
#include "harness.h"
#include "check.h"

#include <sys/file.h>
#include <sys/stat.h>

static int quick;

/* A client that waits for release notices (RESP3 pub/sub). */
static int tc_open(rh_tconn *t, const rh_server *s) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000; /* far above a loopback round trip on a loaded machine */
    cfg.pubsub = 1;
    return rh_tc_open(t, s, 0, &cfg, NULL, NULL);
}

/* ------------------------------------------------------ 1. semaphore */

static void test_sem_basic(const rh_server *s) {
    rh_tconn t;
    rlock_lock a, b, c, d;
    rlock_info info[1];
    char tok[48];
    if (tc_open(&t, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_semaphore_init(&a, &t.cl, "sem:b", 5, 0), RLOCK_E_BADARG);
    CHECK(strstr(rlock_lock_error(&a), "permits 0") != NULL);
    CHECK_EQ_ST(rlock_semaphore_init(&a, &t.cl, "sem:b", 5, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&b, &t.cl, "sem:b", 5, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&c, &t.cl, "sem:b", 5, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&b, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_E_STATE); /* one permit per handle */
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:b"), 2);
    CHECK(strcmp(rlock_lock_token(&a), rlock_lock_token(&b)) != 0);
    /* inspection sees both permits and changes nothing */
    CHECK_EQ_ST(rlock_inspect(&c, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "semaphore") == 0);
    CHECK_EQ_LL(info[0].holders, 2);
    CHECK(info[0].pttl_ms > 9000 && info[0].pttl_ms <= 10000);
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:b"), 2);
    /* each holder has its own permit slot: one node hands out the lowest free */
    CHECK_EQ_LL(rlock_semaphore_slot(&a), 0);
    CHECK_EQ_LL(rlock_semaphore_slot(&b), 1);
    CHECK_EQ_LL(rlock_semaphore_slot(&c), -1);
    /* renewal moves only the handle's own permit */
    snprintf(tok, sizeof tok, "1:%s", rlock_lock_token(&b));
    CHECK_EQ_ST(rlock_extend(&a, 30000), RLOCK_OK);
    CHECK(rh_int(s, "PTTL sem:b") > 20000);
    /* release frees exactly its own permit */
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:b"), 1);
    CHECK_EQ_LL(rh_int(s, "ZRANK sem:b %s", tok), 0);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_semaphore_slot(&c), 0); /* the slot a freed */
    /* lowering N revokes nothing; new acquires wait until below it */
    CHECK_EQ_ST(rlock_semaphore_init(&d, &t.cl, "sem:b", 5, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&d, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_extend(&b, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_set_permits(&d, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&d, 10000), RLOCK_OK); /* raising N admits at once */
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:b"), 3);
    CHECK_EQ_ST(rlock_semaphore_set_permits(&d, -1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&c), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&d), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:b"), 0);

    /* An expired permit is reaped: its holder's extend and release say LOST */
    CHECK_EQ_ST(rlock_semaphore_set_permits(&a, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_set_permits(&b, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&a, 1200), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&b, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_acquire(&b, 10000, 5000), RLOCK_OK); /* waits for a's lease to end */
    CHECK_EQ_ST(rlock_release(&a), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:b"), 0);
    /* the key of another kind is refused, not overwritten */
    CHECK(rh_str(s, tok, sizeof tok, "SET sem:str x PX 10000") == REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_semaphore_init(&a, &t.cl, "sem:str", 7, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&a, 5000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_LL(rh_int(s, "DEL sem:str"), 1);
    rh_tc_close(&t);
}

/* Hand-off (one node): a release hands its freed permit straight to the
 * first live waiter, whose wake-up then needs no second attempt. Its
 * safety: a waiter that died holds the permit until its lease ends (then
 * the slot comes back); a cancelled or timed-out waiter leaves the queue
 * (nothing is handed to it); a waiter whose notice was lost finds the
 * permit handed to its waiter id at its next attempt (one member, not
 * two). Counted in scripts and steps, not milliseconds. */
static void test_sem_handoff(const rh_server *s) {
    rh_tconn ta, tc;
    rh_gconn g;
    rlock_lock a, b, c;
    rlock_status st;
    char val[160], member[64], pong[8];
    long long e0, e1;
    int steps, i;
    pid_t pid;
    if (tc_open(&ta, s) != 0 || tc_open(&tc, s) != 0 || rh_gc_open(&g, s, 30000) != 0) {
        CHECK_MSG(0, "connect");
        return;
    }
    CHECK_EQ_ST(rlock_semaphore_init(&a, &ta.cl, "sem:h", 5, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&b, &g.cl, "sem:h", 5, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&c, &tc.cl, "sem:h", 5, 1), RLOCK_OK);

    /* 1. handed over: b's waiter id holds slot 0 before b runs anything;
     * b then holds it under that id (extends and releases by it) */
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    st = rh_step_until_waitmsg(&b, rlock_acquire_begin(&b, 10000, 20000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK(rh_str(s, val, sizeof val, "HGET {sem:h}:deadlines %b", b.waiter_id, (size_t)16) == REDIS_REPLY_STRING &&
          strlen(val) > 8 && strcmp(val + strlen(val) - 8, " 10000 1") == 0); /* "deadline ttl N": a hand-off may go to it */
    e0 = rh_stat_calls(s, "evalsha");
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    snprintf(member, sizeof member, "0:%.16s", b.waiter_id);
    CHECK_EQ_LL(rh_int(s, "ZRANK sem:h %s", member), 0);
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:h"), 1);
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:h}:waiters"), 0);
    st = rh_step_like_a_loop(&g.cl, &b, st, &steps);
    e1 = rh_stat_calls(s, "evalsha");
    printf("semaphore hand-off: the waiter held the released permit after %d step(s), scripts after the release: "
           "%lld (the release's own)\n", steps, e1 - e0 - 1);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_EQ_LL(e1 - e0, 1); /* the release; the waiter's wake-up ran no script */
    CHECK_EQ_LL(rlock_semaphore_slot(&b), 0);
    CHECK_MSG(strcmp(rlock_lock_token(&b), member + 2) == 0, "held under %s, not its waiter id", rlock_lock_token(&b));
    CHECK(rlock_validity_ms(&b) > 0);
    CHECK_EQ_ST(rlock_extend(&b, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:h"), 0);

    /* 2. cancelled while queued: leaves the queue, nothing is handed to it */
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    st = rh_step_until_waitmsg(&b, rlock_acquire_begin(&b, 10000, 20000));
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:h}:waiters"), 1);
    rlock_cancel(&b);
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:h}:waiters"), 0);
    CHECK_EQ_LL(rh_int(s, "HLEN {sem:h}:deadlines"), 0);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:h"), 0);
    CHECK_EQ_LL(rlock_lock_state(&b), RLOCK_STATE_IDLE);

    /* 3. the notice lost (the waiter's connection killed after the hand-off,
     * the notice unread): its next attempt finds the permit its waiter id has */
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    rh_gc_close(&g);
    if (rh_gc_open(&g, s, 300) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_semaphore_init(&b, &g.cl, "sem:h", 5, 1), RLOCK_OK);
    st = rh_step_until_waitmsg(&b, rlock_acquire_begin(&b, 10000, 20000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    g.gate = 1;
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    snprintf(member, sizeof member, "0:%.16s", b.waiter_id);
    CHECK_EQ_LL(rh_int(s, "ZRANK sem:h %s", member), 0);
    CHECK_EQ_LL(rh_int(s, "CLIENT KILL TYPE pubsub"), 1); /* b's connection (the only one subscribed), the notice in it */
    CHECK(rh_str(s, pong, sizeof pong, "PING") == REDIS_REPLY_STATUS);
    g.gate = 0;
    for (i = 0; i < 100 && st == RLOCK_WOULD_BLOCK; i++) { /* the re-check: 300 ms */
        rh_sleep_ms(20);
        st = rlock_step(&b);
    }
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_EQ_LL(rlock_semaphore_slot(&b), 0);
    CHECK_EQ_LL(rh_int(s, "ZRANK sem:h %s", member), 0); /* the same member, renewed */
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:h"), 1);
    CHECK_MSG(strcmp(rlock_lock_token(&b), member + 2) == 0, "held under %s, not its waiter id", rlock_lock_token(&b));
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:h"), 0);

    /* 4. timed out: its last attempt (no wait left) leaves the queue */
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&c, 10000, 300), RLOCK_TIMEOUT);
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:h}:waiters"), 0);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:h"), 0);

    /* 5. a waiter that died (kill -9) after queueing: the permit is handed
     * to it and comes back when its lease (1.5 s) ends */
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        rh_tconn t;
        rlock_lock d;
        if (tc_open(&t, s) != 0 || rlock_semaphore_init(&d, &t.cl, "sem:h", 5, 1) != RLOCK_OK) _exit(3);
        (void)rlock_acquire(&d, 1500, 60000);
        _exit(2); /* killed before */
    }
    for (i = 0; i < 500 && rh_int(s, "ZCARD {sem:h}:waiters") < 1; i++) rh_sleep_ms(10);
    CHECK_MSG(i < 500, "the child never queued");
    kill(pid, SIGKILL);
    (void)rh_wait_child(pid, 10000);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "ZCARD sem:h"), 1); /* handed to the dead waiter's token */
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_NOT_ACQUIRED);
    for (i = 0; i < 250 && (st = rlock_try_acquire(&c, 10000)) == RLOCK_NOT_ACQUIRED; i++) rh_sleep_ms(20);
    CHECK_EQ_ST(st, RLOCK_OK); /* its lease ended: the slot is back */
    CHECK_EQ_LL(rlock_semaphore_slot(&c), 0);
    CHECK_EQ_ST(rlock_release(&c), RLOCK_OK);

    rh_gc_close(&g);
    rh_tc_close(&ta);
    rh_tc_close(&tc);
    rh_int(s, "DEL sem:h {sem:h}:waiters {sem:h}:deadlines");
}

/* One interval a permit was held: [from, to] in CLOCK_MONOTONIC ms; late 1
 * when the holder was still inside when its validity ended (to is then that
 * end). */
static void log_interval(int fd, unsigned long long from, unsigned long long to, int late) {
    char line[80];
    int n = snprintf(line, sizeof line, "%llu %llu %d\n", from, to, late);
    if (write(fd, line, (size_t)n) != n) _exit(4); /* O_APPEND: one line per write */
}

/* A client of one handle over n servers (Redlock when n > 1). */
typedef struct tconn_n {
    rlock_posix_conn pc[3];
    rlock_node node[3];
    rlock_client cl;
    int n;
} tconn_n;

static int tcn_open(tconn_n *t, const rh_server *srv, int n, uint32_t node_timeout_ms) {
    rlock_config cfg;
    int i;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = node_timeout_ms;
    cfg.pubsub = 1;
    t->n = 0;
    for (i = 0; i < n; i++) {
        if (rlock_posix_init_tcp(&t->pc[i], "127.0.0.1", srv[i].port, 1000) != 0) return -1;
        t->n++;
        if (rlock_node_init(&t->node[i], rlock_posix_transport(&t->pc[i])) != RLOCK_OK) return -1;
    }
    return rlock_client_init(&t->cl, t->node, (size_t)n, &cfg) == RLOCK_OK ? 0 : -1;
}
static void tcn_close(tconn_n *t) {
    int i;
    rlock_client_close(&t->cl);
    for (i = 0; i < t->n; i++) rlock_posix_close(&t->pc[i]);
}

/* 16 processes share 4 permits. Normal rounds log [granted, before
 * release], or [granted, validity end] when the holder was still inside
 * then: a holder holds until it releases or its validity ends, whichever
 * comes first - on a loaded machine a process descheduled in its 2 ms
 * section for longer than the lease is no holder past it (another may take
 * the permit; its release may then say LOST, and only then). A holder that
 * kills itself logs [granted, its validity end] (the server keeps the
 * permit at least that long); one that pauses past its lease logs the same
 * and must find the permit LOST. */
static int sem_child(const rh_server *srv, int n, int fd, int idx, int rounds, long long ttl) {
    tconn_n t;
    rlock_lock lk;
    int i, errors = 0;
    if (tcn_open(&t, srv, n, n > 1 ? 250 : 1000) != 0 || rlock_semaphore_init(&lk, &t.cl, "sem:procs", 9, 4) != RLOCK_OK)
        return 3;
    for (i = 0; i < rounds; i++) {
        unsigned long long got, valid_end, end;
        rlock_status st = rlock_acquire(&lk, ttl, 60000);
        if (st != RLOCK_OK) {
            fprintf(stderr, "sem child %d: acquire: %s\n", idx, rlock_status_str(st));
            errors++;
            continue;
        }
        got = rh_now_ms();
        valid_end = got + (unsigned long long)rlock_validity_ms(&lk);
        if (idx % 8 == 1 && i == 1) { /* killed inside: the permit stays until the lease ends */
            log_interval(fd, got, valid_end, 0);
            raise(SIGKILL);
        }
        if (idx % 8 == 2 && i == 1) { /* paused past its lease: no longer a holder after validity */
            log_interval(fd, got, valid_end, 0);
            rh_sleep_ms((unsigned)ttl + 200);
            st = rlock_release(&lk);
            if (st != RLOCK_LOST) { fprintf(stderr, "sem child %d: paused release %s\n", idx, rlock_status_str(st)); errors++; }
            continue;
        }
        rh_sleep_ms(2);
        end = rh_now_ms();
        log_interval(fd, got, end < valid_end ? end : valid_end, end >= valid_end);
        st = rlock_release(&lk);
        /* Redlock: a node paused by the parent may leave the release short of a quorum (its copy expires).
         * LOST only from a release that ended past the validity (the server's lease ends later still). */
        if (st != RLOCK_OK && !(n > 1 && st == RLOCK_E_QUORUM) && !(st == RLOCK_LOST && rh_now_ms() >= valid_end)) {
            fprintf(stderr, "sem child %d: release %s\n", idx, rlock_status_str(st));
            errors++;
        }
    }
    tcn_close(&t);
    return errors ? 2 : 0;
}

static int cmp_ev(const void *a, const void *b) {
    const long long *x = (const long long *)a, *y = (const long long *)b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1]; /* at equal times, ends (-1) before starts (+1) */
}

/* n = 1: one server; n = 3: Redlock, with server 2 paused (SIGSTOP) for a
 * while in the middle of the run (its votes time out; a quorum goes on). */
static void sem_procs(rh_server *srv, int n) {
    enum { PROCS = 16 };
    char path[] = "/tmp/rlock-sem-XXXXXX";
    pid_t pids[PROCS];
    int fd = mkstemp(path), i, rounds = quick ? 3 : 6, killed = 0, clean = 0, max = 0, cur = 0, late, n_late = 0;
    long long (*ev)[2] = NULL;
    size_t n_ev = 0;
    FILE *f;
    unsigned long long a, b;
    if (fd < 0) { CHECK_MSG(0, "mkstemp"); return; }
    close(fd);
    fd = open(path, O_WRONLY | O_APPEND);
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(sem_child(srv, n, fd, i, rounds, 1500));
    }
    if (n > 1) { /* a node stops answering for 600 ms while the permits change hands */
        rh_sleep_ms(300);
        rh_server_pause(&srv[2]);
        rh_sleep_ms(600);
        rh_server_resume(&srv[2]);
    }
    for (i = 0; i < PROCS; i++) {
        int st = rh_wait_child(pids[i], 180000);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && i % 8 == 1) killed++;
        else if (rh_exited_with(st, 0)) clean++;
        else CHECK_MSG(0, "sem child %d: status 0x%x", i, (unsigned)st);
    }
    close(fd);
    CHECK_EQ_LL(killed, 2);
    CHECK_EQ_LL(clean, PROCS - 2);
    f = fopen(path, "r");
    ev = (long long (*)[2])calloc((size_t)PROCS * (size_t)rounds * 2, sizeof *ev);
    while (f && ev && fscanf(f, "%llu %llu %d", &a, &b, &late) == 3 && n_ev + 2 <= (size_t)PROCS * (size_t)rounds * 2) {
        n_late += late;
        ev[n_ev][0] = (long long)a; ev[n_ev++][1] = 1;
        ev[n_ev][0] = (long long)b; ev[n_ev++][1] = -1;
    }
    if (f) fclose(f);
    unlink(path);
    /* every round left one interval: 2 killed after 1 round + their own, the rest all rounds */
    CHECK_EQ_LL(n_ev / 2, (size_t)(PROCS - 2) * (size_t)rounds + 2 * 2);
    if (ev) qsort(ev, n_ev, sizeof *ev, cmp_ev);
    for (i = 0; i < (int)n_ev; i++) {
        cur += (int)ev[i][1];
        if (cur > max) max = cur;
    }
    printf("semaphore%s: %d processes, 4 permits, %d killed holding, 2 paused past the lease%s: at most %d at once"
           " (%d section%s outlived the lease, descheduled)\n", n > 1 ? " over 3 Redlock nodes" : "", PROCS, killed,
           n > 1 ? ", a node paused 600 ms" : "", max, n_late, n_late == 1 ? "" : "s");
    CHECK_MSG(max <= 4, "%d holders at once, 4 permits", max);
    CHECK(max >= 2); /* the permits were shared, not taken one at a time */
    free(ev);
    if (n == 1) CHECK(rh_int(srv, "ZCARD sem:procs") <= 2); /* at most the killed holders' permits, expiring */
    for (i = 0; i < n; i++) rh_int(&srv[i], "DEL sem:procs {sem:procs}:waiters {sem:procs}:deadlines");
}

static void test_sem_procs(rh_server *s) { sem_procs(s, 1); }

/* --------------------------------------------------- 2. read-write lock */

static void test_rw_basic(const rh_server *s) {
    rh_tconn t1, t2;
    rlock_lock r1, w1, r2, w2;
    rlock_info info[1];
    char buf[64];
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&r1, &t1.cl, "rw:k", 4, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w1, &t1.cl, "rw:k", 4, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r2, &t2.cl, "rw:k", 4, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w2, &t2.cl, "rw:k", 4, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_rw_writers_first(&r1, 1), RLOCK_E_BADARG);
    /* readers together, reentrant */
    CHECK_EQ_ST(rlock_try_acquire(&r1, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&r1), 2);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_inspect(&w2, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "read") == 0);
    CHECK_EQ_LL(info[0].holders, 2);
    /* the writer is kept out; an upgrade is refused with its own status */
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_E_UPGRADE); /* w2's owner holds r2 */
    CHECK_EQ_ST(rlock_release(&r2), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_try_acquire(&w1, 10000), RLOCK_E_UPGRADE);
    CHECK(rlock_lock_state(&w1) == RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&r1), 1);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:k"), 0);
    /* the writer alone, reentrant; readers kept out */
    CHECK_EQ_ST(rlock_try_acquire(&w1, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&w1, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&w1), 2);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_inspect(&r2, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "write") == 0);
    CHECK_EQ_LL(info[0].holds, 2);
    CHECK(strncmp(info[0].owner, rlock_lock_token(&w1), 16) == 0);
    CHECK_EQ_ST(rlock_extend(&w1, 20000), RLOCK_OK);
    CHECK(rh_int(s, "PTTL rw:k") > 10000);
    /* downgrade: the writer takes the read lock, then lets the write go */
    CHECK_EQ_ST(rlock_try_acquire(&r1, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);
    CHECK(rh_str(s, buf, sizeof buf, "HGET rw:k mode") == REDIS_REPLY_STRING && strcmp(buf, "read") == 0);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_E_UPGRADE);
    CHECK_EQ_ST(rlock_release(&r2), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:k"), 0);
    /* a reader's own lease: unrenewed, it lapses and the writer gets in */
    CHECK_EQ_ST(rlock_try_acquire(&r1, 1200), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&r2, 1200), RLOCK_OK);
    rh_sleep_ms(1400);
    /* both readers' leases lapsed: they are reaped, so w2 is no upgrade */
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r2), RLOCK_LOST);
    CHECK_EQ_ST(rlock_extend(&r1, 10000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&w2), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:k"), 0);
    rh_tc_close(&t1);
    rh_tc_close(&t2);
}

/* A stream of readers: each loops read (ttl 5 s) / hold 20 ms / release,
 * overlapping one another, until the stop file exists. */
static int reader_child(const rh_server *s, const char *stop, int *got) {
    rh_tconn t;
    rlock_lock r;
    unsigned long long end = rh_now_ms() + 60000;
    *got = 0;
    if (tc_open(&t, s) != 0 || rlock_lock_init(&r, &t.cl, "rw:starve", 9, RLOCK_KIND_READ) != RLOCK_OK) return 3;
    while (access(stop, F_OK) != 0 && rh_now_ms() < end) {
        if (rlock_acquire(&r, 5000, 2000) == RLOCK_OK) {
            (*got)++;
            rh_sleep_ms(20);
            if (rlock_release(&r) != RLOCK_OK) return 2;
        }
    }
    rh_tc_close(&t);
    return 0;
}

/* Readers overlap so the lock is never free; a writer with a bounded wait
 * gets in when writers-first is on, and times out when it is off. */
static rlock_status writer_vs_readers(const rh_server *s, int writers_first, int *reads) {
    enum { READERS = 4 };
    char stop[] = "/tmp/rlock-rw-stop-XXXXXX";
    pid_t pids[READERS];
    rh_tconn t;
    rlock_lock w;
    rlock_status st = RLOCK_E_IO;
    int i, fd = mkstemp(stop), got = 0;
    if (fd < 0) return RLOCK_E_IO;
    close(fd);
    unlink(stop);
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < READERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            rh_sleep_ms((unsigned)i * 7); /* staggered: their holds overlap */
            _exit(reader_child(s, stop, &got));
        }
    }
    /* wait until the readers hold it */
    for (i = 0; i < 400 && rh_int(s, "EXISTS rw:starve") == 0; i++) rh_sleep_ms(5);
    if (tc_open(&t, s) == 0 && rlock_lock_init(&w, &t.cl, "rw:starve", 9, RLOCK_KIND_WRITE) == RLOCK_OK &&
        rlock_rw_writers_first(&w, writers_first) == RLOCK_OK) {
        st = rlock_acquire(&w, 5000, 3000);
        *reads = (int)rh_int(s, "EXISTS rw:starve");
        if (st == RLOCK_OK) {
            rlock_info info[1];
            rlock_lock probe;
            rlock_lock_init(&probe, &t.cl, "rw:starve", 9, RLOCK_KIND_READ);
            CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
            CHECK(strcmp(info[0].kind, "write") == 0); /* alone: no reader inside with it */
            CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
        }
        rh_tc_close(&t);
    }
    fd = open(stop, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0) close(fd);
    for (i = 0; i < READERS; i++) {
        int ws = rh_wait_child(pids[i], 30000);
        CHECK_MSG(rh_exited_with(ws, 0), "reader %d: status 0x%x", i, (unsigned)ws);
    }
    unlink(stop);
    rh_int(s, "DEL rw:starve {rw:starve}:waiters {rw:starve}:deadlines");
    return st;
}

static void test_rw_starvation(const rh_server *s) {
    int reads = 0;
    /* Off first: shows the stream really keeps the lock busy for 3 s. */
    rlock_status off = writer_vs_readers(s, 0, &reads);
    rlock_status on = writer_vs_readers(s, 1, &reads);
    printf("read-write: writer under a stream of 4 readers: writers-first off %s, on %s\n",
           rlock_status_str(off), rlock_status_str(on));
    CHECK_EQ_ST(on, RLOCK_OK);
    CHECK(off == RLOCK_TIMEOUT || off == RLOCK_OK); /* off may still win a gap; never an error */
}

/* Turn-taking: one writer re-acquires in a loop (hold 2 ms, release, take
 * it again at once) while 8 readers loop too. Each reader notes the
 * writer's cycle count (a byte per cycle appended to a file) once its first
 * attempt was refused and when it gets in: a reader that waited gets in before the
 * writer's next cycle (the release gave it a turn ticket), so the
 * difference is at most 1 - counted in writer cycles, not milliseconds.
 * Without turns the writer's immediate re-acquire beats the woken readers
 * (30-35 cycles in runs before them). */
static long long turn_cycles(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}
static int turn_writer(const rh_server *s, const char *path, int cycles) {
    rh_tconn t;
    rlock_lock w;
    int i, fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0 || tc_open(&t, s) != 0 || rlock_lock_init(&w, &t.cl, "rw:turn", 7, RLOCK_KIND_WRITE) != RLOCK_OK)
        return 3;
    for (i = 0; i < cycles; i++) {
        if (rlock_acquire(&w, 5000, 20000) != RLOCK_OK) return 2;
        if (write(fd, "w", 1) != 1) return 2;
        rh_sleep_ms(2);
        if (rlock_release(&w) != RLOCK_OK) return 2;
    }
    close(fd);
    rh_tc_close(&t);
    return 0;
}
static int turn_reader(const rh_server *s, const char *path, int cycles, int out) {
    rh_tconn t;
    rlock_lock r;
    long long worst = 0;
    int got = 0;
    if (tc_open(&t, s) != 0 || rlock_lock_init(&r, &t.cl, "rw:turn", 7, RLOCK_KIND_READ) != RLOCK_OK) return 3;
    while (turn_cycles(path) < cycles) {
        long long c0 = -1, c1;
        rlock_status st = rlock_acquire_begin(&r, 5000, 20000);
        /* c0 once the server has refused it (it waits between rounds): from
         * then on it is a waiting reader, whatever the scheduler does */
        while (st == RLOCK_WOULD_BLOCK) {
            if (c0 < 0 && rlock_acquire_waiting(&r)) c0 = turn_cycles(path);
            rh_sleep_ms(1);
            st = rlock_step(&r);
        }
        if (st != RLOCK_OK) return 2;
        c1 = turn_cycles(path);
        got++;
        if (c0 >= 0 && c1 - c0 > worst) worst = c1 - c0;
        rh_sleep_ms(1);
        if (rlock_release(&r) != RLOCK_OK) return 2;
    }
    rh_tc_close(&t);
    if (write(out, &worst, sizeof worst) != (ssize_t)sizeof worst) return 2;
    return got > 0 ? 0 : 4;
}
static void test_rw_turns(const rh_server *s) {
    enum { READERS = 8 };
    char path[] = "/tmp/rlock-turn-XXXXXX";
    pid_t pids[READERS + 1];
    int i, cycles = quick ? 20 : 60, ok = 0, fd = mkstemp(path), p[2];
    long long worst = 0, w;
    if (fd < 0 || pipe(p) != 0) { CHECK_MSG(0, "mkstemp/pipe"); return; }
    close(fd);
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i <= READERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(i == 0 ? turn_writer(s, path, cycles) : turn_reader(s, path, cycles, p[1]));
    }
    close(p[1]);
    for (i = 0; i <= READERS; i++) {
        int ws = rh_wait_child(pids[i], 120000);
        CHECK_MSG(rh_exited_with(ws, 0), "%s %d: status 0x%x", i ? "reader" : "writer", i, (unsigned)ws);
        ok += rh_exited_with(ws, 0);
    }
    for (i = 0; i < READERS && read(p[0], &w, sizeof w) == (ssize_t)sizeof w; i++)
        if (w > worst) worst = w;
    close(p[0]);
    unlink(path);
    printf("read-write: a writer re-acquiring %d times among %d looping readers: a waiting reader got in within "
           "%lld writer cycle(s) at worst\n", cycles, READERS, worst);
    CHECK_EQ_LL(ok, READERS + 1);
    CHECK_EQ_LL(i, READERS);
    CHECK_MSG(worst <= 1, "a reader waited %lld writer cycles", worst);
    rh_int(s, "DEL rw:turn {rw:turn}:waiters {rw:turn}:deadlines");
}

/* A woken waiter whose release notice arrives with the refusal it follows.
 * The 15-reader / 1-writer stress run (issue 13's note) had readers, or the
 * writer, asleep until their re-check about 1 run in 3: the last reader's
 * release ran right after a waiter's refused attempt and published its id;
 * the refusal and the notice came in one recv(), so the notice was
 * delivered in the same pump, before the round was judged; the op went to
 * WAITMSG already woken, and rlock_next_timeout_ms() (the blocking loop's
 * and an event loop's sleep) said "until the re-check". Here the writer's
 * connection is read only when the test says (a gate on its transport's
 * recv), so the two arrive together every time: its attempt is refused
 * (a reader holds), the server queues it, the reader releases (notice
 * published, a PING after it makes sure it was written), then the gate
 * opens. With a 30 s re-check the wake-up must be acted on at once: the
 * next timeout is 0 and the writer is in within a few steps - counted in
 * steps, and the re-check would be unmistakable besides. */
static void test_rw_wake_with_refusal(const rh_server *s) {
    rh_tconn ta;
    rh_gconn g;
    rlock_lock r, w;
    rlock_status st;
    char old_id[17], pong[8];
    int i, steps = 0;
    uint32_t next;
    if (tc_open(&ta, s) != 0 || rh_gc_open(&g, s, 30000) != 0) { /* a missed wake-up sleeps 30 s */
        CHECK_MSG(0, "connect");
        return;
    }
    CHECK_EQ_ST(rlock_lock_init(&r, &ta.cl, "rw:wake", 7, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w, &g.cl, "rw:wake", 7, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&r, 30000, 0), RLOCK_OK);
    /* A first wait, cancelled: the client stays subscribed (the lingering
     * channel), so the next attempt queues at once. */
    st = rh_step_until_waitmsg(&w, rlock_acquire_begin(&w, 30000, 60000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(w.op.phase, RLOCK__PH_WAITMSG);
    rlock_cancel(&w);
    memcpy(old_id, w.waiter_id, 16);
    old_id[16] = '\0';
    /* The gated attempt: sent, its answer left unread. */
    g.gate = 1;
    st = rlock_acquire_begin(&w, 30000, 60000);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK(memcmp(old_id, w.waiter_id, 16) != 0);
    for (i = 0; i < 5000 && rh_int(s, "ZRANK {rw:wake}:waiters %b", w.waiter_id, (size_t)16) < 0; i++) {
        rh_sleep_ms(1);
        st = rlock_step(&w);
    }
    CHECK_MSG(i < 5000, "the writer's attempt never queued");
    CHECK_EQ_ST(rlock_release(&r), RLOCK_OK); /* the last reader out publishes the writer's id */
    CHECK_EQ_LL(rh_int(s, "ZCARD {rw:wake}:waiters"), 0);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:wake"), 1); /* the writer's hold-off is kept */
    CHECK(rh_str(s, pong, sizeof pong, "PING") == REDIS_REPLY_STATUS); /* the notice is written by now */
    g.gate = 0;
    st = rlock_step(&w); /* reads the refusal and the notice together */
    next = rlock_next_timeout_ms(&w);
    printf("read-write: a release notice read with the refusal it follows: writer %s, next timeout %u ms "
           "(re-check 30000 ms)\n", st == RLOCK_OK ? "in" : "refused, woken", (unsigned)next);
    CHECK_MSG(st == RLOCK_OK || next == 0, "woken, but told to sleep %u ms", (unsigned)next);
    st = rh_step_like_a_loop(&g.cl, &w, st, &steps);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_MSG(steps < 50, "the writer took %d steps", steps);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    else rlock_cancel(&w);
    rh_gc_close(&g);
    rh_tc_close(&ta);
    rh_int(s, "DEL rw:wake {rw:wake}:waiters {rw:wake}:deadlines");
}

/* A writer that dies holding: the write lock ends with its lease (the key's
 * TTL), not with what waited before it. A reader waiting 10 minutes behind
 * a writer's hold-off leaves its wait end in the key, and the last reader
 * out kept the key that long; the writer granted after it must still hold
 * only its own ttl - else, killed, it keeps every reader and writer out for
 * the 10 minutes. */
static void test_rw_dead_writer(const rh_server *s) {
    rh_tconn t1, t2, t3;
    rlock_lock r1, w, r2, w2;
    rlock_status st;
    long long pttl;
    unsigned long long end;
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0 || tc_open(&t3, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&r1, &t1.cl, "rw:dead", 7, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w2, &t1.cl, "rw:dead", 7, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w, &t2.cl, "rw:dead", 7, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r2, &t3.cl, "rw:dead", 7, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&r1, 30000, 0), RLOCK_OK);
    st = rh_step_until_waitmsg(&w, rlock_acquire_begin(&w, 1500, 60000)); /* its hold-off keeps r2 out */
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    st = rh_step_until_waitmsg(&r2, rlock_acquire_begin(&r2, 1500, 600000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK); /* the last reader out wakes the writer */
    for (end = rh_now_ms() + 10000; st == RLOCK_WOULD_BLOCK && rh_now_ms() < end;) {
        rh_sleep_ms(1);
        st = rlock_step(&w);
    }
    CHECK_EQ_ST(st, RLOCK_OK);
    pttl = rh_int(s, "PTTL rw:dead");
    CHECK_MSG(pttl > 0 && pttl <= 1500, "the writer's lease is 1500 ms, the key's TTL %lld ms", pttl);
    rlock_cancel(&r2);
    /* w dies holding (never released nor renewed): another writer gets in
     * once its 1.5 s lease is over, well within 10 s */
    st = RLOCK_NOT_ACQUIRED;
    for (end = rh_now_ms() + 10000; st == RLOCK_NOT_ACQUIRED && rh_now_ms() < end;) {
        rh_sleep_ms(100);
        st = rlock_try_acquire(&w2, 5000);
    }
    CHECK_EQ_ST(st, RLOCK_OK);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&w2), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&w), RLOCK_LOST);
    (void)rh_int(s, "DEL rw:dead {rw:dead}:waiters");
    rh_tc_close(&t1);
    rh_tc_close(&t2);
    rh_tc_close(&t3);
}

/* A writer half-way through a downgrade (its read lock taken, its write
 * lock neither released nor renewed): the write lock ends with its own
 * lease, not with the read lease - the key then holds a read lock only, so
 * other readers get in and writers stay out until the read lease ends. */
static void test_rw_downgrade_lease(const rh_server *s) {
    rh_tconn t1, t2, t3;
    rlock_lock w1, r1, r2, w2;
    rlock_info info[1];
    rlock_status st = RLOCK_NOT_ACQUIRED;
    unsigned long long end;
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0 || tc_open(&t3, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&w1, &t1.cl, "rw:down", 7, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r1, &t1.cl, "rw:down", 7, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r2, &t2.cl, "rw:down", 7, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w2, &t3.cl, "rw:down", 7, RLOCK_KIND_WRITE), RLOCK_OK); /* (another owner) */
    CHECK_EQ_ST(rlock_try_acquire(&w1, 1500), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK); /* the downgrade's first half */
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_NOT_ACQUIRED); /* the writer holds */
    /* the write lease (1.5 s) runs out: r2 gets in within 10 s, w2 never */
    for (end = rh_now_ms() + 10000; st == RLOCK_NOT_ACQUIRED && rh_now_ms() < end;) {
        rh_sleep_ms(100);
        st = rlock_try_acquire(&r2, 10000);
    }
    CHECK_MSG(st == RLOCK_OK, "a reader 10 s after the write lease ended: %s", rlock_status_str(st));
    CHECK_EQ_ST(rlock_try_acquire(&w2, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_inspect(&w2, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "read") == 0);
    CHECK_EQ_ST(rlock_extend(&r1, 30000), RLOCK_OK); /* the read lease is kept */
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_LOST);
    if (rlock_lock_state(&r2) == RLOCK_STATE_HELD) CHECK_EQ_ST(rlock_release(&r2), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:down"), 0);
    /* renewed, the write lease holds past its first 1.5 s (the write extend renews it) */
    CHECK_EQ_ST(rlock_try_acquire(&w1, 1500), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&w1, 30000), RLOCK_OK);
    rh_sleep_ms(1700);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK); /* the downgrade's second half */
    CHECK_EQ_ST(rlock_try_acquire(&r2, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r2), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:down"), 0);
    (void)rh_int(s, "DEL rw:down {rw:down}:waiters");
    rh_tc_close(&t1);
    rh_tc_close(&t2);
    rh_tc_close(&t3);
}

/* ---------------------------------------------------------- 3. multi-lock */

static void test_multi(const rh_server *s) {
    rh_tconn t1, t2;
    rlock_lock m, one, bad;
    const char *keys[3] = { "{job}:a", "{job}:b", "{job}:c" };
    const size_t lens[3] = { 7, 7, 7 };
    const char *mixed[2] = { "alpha", "beta" };
    const size_t mlens[2] = { 5, 4 };
    char buf[64];
    memset(&bad, 0, sizeof bad); /* (never initialised: a failed init writes only its why) */
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_LL(rlock_cluster_slot("foo", 3), 12182);              /* CLUSTER KEYSLOT foo */
    CHECK_EQ_LL(rlock_cluster_slot("{user1000}.following", 20), rlock_cluster_slot("user1000", 8));
    CHECK_EQ_LL(rlock_cluster_slot("foo{}{bar}", 10), rlock_cluster_slot("foo{}{bar}", 10));
    CHECK_EQ_ST(rlock_multi_init(&bad, &t1.cl, mixed, mlens, 2), RLOCK_E_BADARG);
    CHECK(strstr(rlock_lock_error(&bad), "slot") != NULL);
    CHECK_EQ_ST(rlock_multi_init(&bad, &t1.cl, keys, lens, 0), RLOCK_E_BADARG);
    {
        /* a key named twice: refused at init (taken once, its release would
         * find the second name already deleted and say LOST) */
        const char *twice[3] = { "{job}:a", "{job}:b", "{job}:a" };
        const size_t tlens[3] = { 7, 7, 7 };
        CHECK_EQ_ST(rlock_multi_init(&bad, &t1.cl, twice, tlens, 3), RLOCK_E_BADARG);
        CHECK(strstr(rlock_lock_error(&bad), "key 2 is key 0") != NULL);
        if (rlock_lock_state(&bad) == RLOCK_STATE_IDLE && rlock_try_acquire(&bad, 10000) == RLOCK_OK)
            CHECK_EQ_ST(rlock_release(&bad), RLOCK_OK);
        CHECK_EQ_LL(rh_int(s, "EXISTS {job}:a {job}:b"), 0);
    }
    CHECK_EQ_ST(rlock_multi_init(&m, &t1.cl, keys, lens, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&one, &t2.cl, "{job}:b", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    /* one key held: none is taken */
    CHECK_EQ_ST(rlock_try_acquire(&one, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(rh_int(s, "EXISTS {job}:a {job}:c"), 0);
    CHECK_EQ_ST(rlock_release(&one), RLOCK_OK);
    /* all at once, one token on every key */
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_OK);
    CHECK(rh_str(s, buf, sizeof buf, "GET {job}:c") == REDIS_REPLY_STRING && strcmp(buf, rlock_lock_token(&m)) == 0);
    CHECK_EQ_LL(rh_int(s, "EXISTS {job}:a {job}:b {job}:c"), 3);
    CHECK_EQ_ST(rlock_try_acquire(&one, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_extend(&m, 20000), RLOCK_OK);
    CHECK(rh_int(s, "PTTL {job}:a") > 10000 && rh_int(s, "PTTL {job}:c") > 10000);
    CHECK_EQ_ST(rlock_inspect(&m, NULL, 0), RLOCK_E_BADARG);
    /* a waiter on the multi-lock gets it after the holder of one key lets go */
    CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS {job}:a {job}:b {job}:c"), 0);
    CHECK_EQ_ST(rlock_try_acquire(&one, 1200), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&m, 10000, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&one), RLOCK_LOST);
    /* one key taken from under it: release says LOST and removes the rest */
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "DEL {job}:b"), 1);
    CHECK_EQ_ST(rlock_extend(&m, 10000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&m), RLOCK_LOST);
    CHECK_EQ_LL(rh_int(s, "EXISTS {job}:a {job}:b {job}:c"), 0);
    rh_tc_close(&t1);
    rh_tc_close(&t2);
}

/* A simple-lock waiter on one key of a multi-lock: it rechecks only every
 * 60 s, so getting in within the parent's 20 s bound means the multi-lock's
 * release woke it. */
static int multi_waiter_child(const rh_server *s) {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock lk;
    rlock_status st;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.pubsub = 1;
    cfg.recheck_ms = 60000;
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000) != 0 ||
        rlock_node_init(&node, rlock_posix_transport(&pc)) != RLOCK_OK ||
        rlock_client_init(&cl, &node, 1, &cfg) != RLOCK_OK ||
        rlock_lock_init(&lk, &cl, "{job}:b", 7, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 3;
    st = rlock_acquire(&lk, 10000, 120000);
    if (st == RLOCK_OK) st = rlock_release(&lk);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    return st == RLOCK_OK ? 0 : 1;
}

/* A string value as a number (GET of a counter). */
static long long get_num(const rh_server *s, const char *key) {
    char buf[32];
    return rh_str(s, buf, sizeof buf, "GET %s", key) == REDIS_REPLY_STRING ? atoll(buf) : -1;
}

/* The multi-lock's release wakes a waiter of one of its keys; with fencing
 * its token is above every token given on any of its keys, and a lock on
 * one of them afterwards gets a larger one. */
static void test_multi_wake_fence(const rh_server *s) {
    tconn_n t;
    rlock_lock m, one;
    const char *keys[3] = { "{job}:a", "{job}:b", "{job}:c" };
    const size_t lens[3] = { 7, 7, 7 };
    long long f1, fm;
    pid_t pid;
    int i, ws;
    rlock_config cfg;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client fcl;
    if (tcn_open(&t, s, 1, 1000) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_multi_init(&m, &t.cl, keys, lens, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&m, 60000, 0), RLOCK_OK);
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(multi_waiter_child(s));
    for (i = 0; i < 2000 && rh_int(s, "ZCARD {job}:b:waiters") == 0; i++) rh_sleep_ms(5);
    CHECK_EQ_LL(rh_int(s, "ZCARD {job}:b:waiters"), 1);
    CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
    ws = rh_wait_child(pid, 20000);
    CHECK_MSG(rh_exited_with(ws, 0), "waiter on {job}:b after the multi-lock's release: status 0x%x", (unsigned)ws);
    if (!rh_exited_with(ws, 0)) { kill(pid, SIGKILL); rh_wait_child(pid, 5000); }
    tcn_close(&t);
    /* fence tokens */
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.fencing = 1;
    CHECK(rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000) == 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&fcl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&one, &fcl, "{job}:b", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_multi_init(&m, &fcl, keys, lens, 3), RLOCK_OK);
    for (i = 0; i < 3; i++) { /* {job}:b's counter runs ahead of the others */
        CHECK_EQ_ST(rlock_try_acquire(&one, 10000), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&one), RLOCK_OK);
    }
    f1 = get_num(s, "{job}:b:fence");
    CHECK(f1 >= 3);
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_OK);
    fm = rlock_fence_token(&m);
    CHECK_MSG(fm > f1, "multi-lock fence %lld, {job}:b had given %lld", fm, f1);
    CHECK_EQ_LL(get_num(s, "{job}:a:fence"), fm);
    CHECK_EQ_LL(get_num(s, "{job}:c:fence"), fm);
    CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&one, &fcl, "{job}:c", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&one, 10000), RLOCK_OK);
    CHECK(rlock_fence_token(&one) > fm);
    CHECK_EQ_ST(rlock_release(&one), RLOCK_OK);
    rlock_client_close(&fcl);
    rlock_posix_close(&pc);
    rh_int(s, "DEL {job}:a:fence {job}:b:fence {job}:c:fence {job}:b:waiters {job}:b:deadlines");
}

/* A GET's text equals want (a counter read exactly, not as a double). */
static int get_is(const rh_server *s, const char *key, const char *want) {
    char buf[48];
    if (rh_str(s, buf, sizeof buf, "GET %s", key) == REDIS_REPLY_STRING && strcmp(buf, want) == 0) return 1;
    fprintf(stderr, "  GET %s: '%s', want '%s'\n", key, buf, want);
    return 0;
}

/* The multi-lock's fence counters stay exact integers over the 64-bit
 * range INCR keeps them in (the single lock's), not Lua numbers (doubles:
 * exact to 2^53 only, written back as "1.2345678901234568e+17" from about
 * 10^17, which the single lock's INCR then refuses). Counters pre-set near
 * and above 2^53; the largest, compared exactly, is the one counted up. */
static void test_multi_fence_big(const rh_server *s) {
    static const char *const pre[3][3] = {
        /* {job}:a, {job}:b, {job}:c counters; then the expected fence */
        { "9007199254740989", "9007199254740990", NULL },            /* 2^53 - 3, - 2: exact as before */
        { "9007199254740993", "9007199254740992", "5" },             /* 2^53 + 1 (no double) */
        { "123456789012345678", "123456789012345677", "99999999999999999" },
    };
    static const char *const want[3] = { "9007199254740991", "9007199254740994", "123456789012345679" };
    static const char *const after[3] = { "9007199254740992", "9007199254740995", "123456789012345680" };
    const char *keys[3] = { "{job}:a", "{job}:b", "{job}:c" };
    const char *fk[3] = { "{job}:a:fence", "{job}:b:fence", "{job}:c:fence" };
    const size_t lens[3] = { 7, 7, 7 };
    rlock_config cfg;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client fcl;
    rlock_lock m, one;
    int i, k;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.fencing = 1;
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&fcl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_multi_init(&m, &fcl, keys, lens, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&one, &fcl, "{job}:c", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    for (i = 0; i < 3; i++) {
        for (k = 0; k < 3; k++)
            if (pre[i][k]) (void)rh_int(s, "SET %s %s", fk[k], pre[i][k]);
            else (void)rh_int(s, "DEL %s", fk[k]);
        CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_OK);
        for (k = 0; k < 3; k++) CHECK_MSG(get_is(s, fk[k], want[i]), "case %d: counter %d", i, k);
        if (i == 0) CHECK_EQ_LL(rlock_fence_token(&m), 9007199254740991LL); /* (2^53 - 1: a double still) */
        CHECK(rlock_fence_token(&m) > 0);
        CHECK_EQ_LL(rlock_fence_token(&m), atoll(want[i])); /* (and past 2^53: the counter's text) */
        CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
        /* a single lock on one of the keys counts on from there */
        CHECK_EQ_ST(rlock_try_acquire(&one, 10000), RLOCK_OK);
        CHECK_MSG(get_is(s, "{job}:c:fence", after[i]), "case %d: the single lock's counter", i);
        if (rlock_lock_state(&one) == RLOCK_STATE_HELD) CHECK_EQ_ST(rlock_release(&one), RLOCK_OK);
    }
    rlock_client_close(&fcl);
    rlock_posix_close(&pc);
    (void)rh_int(s, "DEL {job}:a:fence {job}:b:fence {job}:c:fence {job}:c:waiters");
}

/* Every primitive's fence token is exact over INCR's whole range: the
 * counter pre-set to 2^53 and to 2^63 - 2, a semaphore's, a writer's and a
 * multi-lock's token is 2^53 + 1 and 2^63 - 1. Before: INCR's answer went
 * back through a Lua number (a double): 2^53 and -2^63 (the token then 0). */
static void test_fence_exact(const rh_server *s) {
    static const char *const pre[2] = { "9007199254740992", "9223372036854775806" };
    static const long long want[2] = { 9007199254740993LL, 9223372036854775807LL };
    const char *keys[2] = { "{fx}:a", "{fx}:b" };
    const size_t lens[2] = { 6, 6 };
    rlock_config cfg;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client fcl;
    rlock_lock lk[3];
    int i, k;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.fencing = 1;
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&fcl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&lk[0], &fcl, "{fx}:a", 6, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk[1], &fcl, "{fx}:a", 6, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_multi_init(&lk[2], &fcl, keys, lens, 2), RLOCK_OK);
    for (k = 0; k < 3; k++)
        for (i = 0; i < 2; i++) {
            (void)rh_int(s, "SET {fx}:a:fence %s", pre[i]);
            (void)rh_int(s, "SET {fx}:b:fence %s", pre[i]);
            CHECK_EQ_ST(rlock_try_acquire(&lk[k], 10000), RLOCK_OK);
            CHECK_MSG(rlock_fence_token(&lk[k]) == want[i], "kind %d: fence %lld, want %lld", (int)lk[k].kind,
                      rlock_fence_token(&lk[k]), want[i]);
            if (rlock_lock_state(&lk[k]) == RLOCK_STATE_HELD) CHECK_EQ_ST(rlock_release(&lk[k]), RLOCK_OK);
        }
    rlock_client_close(&fcl);
    rlock_posix_close(&pc);
    (void)rh_int(s, "DEL {fx}:a:fence {fx}:b:fence {fx}:a:waiters {fx}:a:deadlines");
}

/* ------------------------------------------- 4. inspection, force-unlock */

static int waiter_child(const rh_server *s) {
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    if (tc_open(&t, s) != 0 || rlock_lock_init(&lk, &t.cl, "insp:k", 6, RLOCK_KIND_SIMPLE) != RLOCK_OK) return 3;
    st = rlock_acquire(&lk, 10000, 20000);
    if (st == RLOCK_OK) rlock_release(&lk);
    rh_tc_close(&t);
    return st == RLOCK_OK ? 0 : 1;
}

static void test_inspect_force(const rh_server *s) {
    rh_tconn t;
    rlock_lock lk, re, probe;
    rlock_info info[1];
    pid_t pid;
    int i, ws;
    if (tc_open(&t, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&probe, &t.cl, "insp:k", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 0), RLOCK_E_BADARG);
    CHECK(strstr(rlock_lock_error(&probe), "room for 0") != NULL);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "free") == 0);
    CHECK_EQ_LL(info[0].pttl_ms, -2);
    CHECK_EQ_LL(info[0].holders, 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "insp:k", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&lk, 20000), RLOCK_OK);
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(waiter_child(s));
    for (i = 0; i < 400 && rh_int(s, "ZCARD {insp:k}:waiters") == 0; i++) rh_sleep_ms(5);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "simple") == 0);
    CHECK_EQ_LL(info[0].holders, 1);
    CHECK(info[0].pttl_ms > 10000 && info[0].pttl_ms <= 20000);
    CHECK(strlen(info[0].owner) == 16 && strncmp(info[0].owner, rlock_lock_token(&lk), 16) == 0);
    CHECK_EQ_LL(info[0].waiters, 1);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD); /* inspect changes nothing */
    CHECK(rlock_lock_state(&probe) == RLOCK_STATE_IDLE);
    /* force-unlock: the key goes, the waiter is woken and takes it */
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    ws = rh_wait_child(pid, 30000);
    CHECK_MSG(rh_exited_with(ws, 0), "waiter: status 0x%x", (unsigned)ws);
    CHECK_EQ_ST(rlock_extend(&lk, 10000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_NOT_HELD);
    /* reentrant holds are counted */
    CHECK_EQ_ST(rlock_lock_init(&re, &t.cl, "insp:k", 6, RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&re, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&re, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK(strcmp(info[0].kind, "reentrant") == 0);
    CHECK_EQ_LL(info[0].holds, 2);
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&re), RLOCK_LOST);
    /* a key without a TTL is not rlock's: left alone */
    CHECK(rh_str(s, (char *)info[0].kind, sizeof info[0].kind, "SET insp:k foreign") == REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_E_FOREIGN);
    CHECK_EQ_LL(rh_int(s, "EXISTS insp:k"), 1);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK_EQ_LL(info[0].pttl_ms, -1);
    CHECK_EQ_LL(rh_int(s, "DEL insp:k"), 1);
    rh_int(s, "DEL {insp:k}:waiters {insp:k}:deadlines");
    rh_tc_close(&t);
}

/* Inspect says what the next script would see, before any script has run
 * on the key since a lease ended: a writer half-way through a downgrade
 * whose write lease ended holds a read lock only (kind "read", its owner
 * the one reader); a read mode whose last live reader's lease ended (the
 * key kept alive by a longer lease whose reader left) is free, and a writer
 * gets in. Before: "write" (1 holder) and "read" (0 holders) until the next
 * script on the key reaped the ended leases. */
static void test_inspect_rw_lapsed(const rh_server *s) {
    rh_tconn t1, t2;
    rlock_lock w1, r1, r2, probe;
    rlock_info info[1];
    unsigned long long t0;
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&w1, &t1.cl, "rw:lapse", 8, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r1, &t1.cl, "rw:lapse", 8, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r2, &t2.cl, "rw:lapse", 8, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&probe, &t2.cl, "rw:lapse", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_try_acquire(&w1, 1500), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK); /* the downgrade's first half */
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    if (rh_now_ms() - t0 < 1000) /* (a machine that stalled past the lease has no "meanwhile") */
        CHECK_MSG(strcmp(info[0].kind, "write") == 0, "while the write lease runs: %s", info[0].kind);
    rh_sleep_ms(1800); /* the write lease ends; no script runs on the key */
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK_MSG(strcmp(info[0].kind, "read") == 0 && info[0].holders == 1 && info[0].holds == 1,
              "the write lease ended: %s, %lld holders, %lld holds", info[0].kind, info[0].holders, info[0].holds);
    CHECK_MSG(strncmp(info[0].owner, rlock_lock_token(&r1), 16) == 0, "owner '%s'", info[0].owner);
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:lapse"), 0);
    /* the last live reader's lease ends while the key lives on */
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 1500), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK); /* (the key's TTL stays at r1's 30 s) */
    rh_sleep_ms(1800);
    CHECK(rh_int(s, "PTTL rw:lapse") > 20000);
    CHECK_EQ_ST(rlock_inspect(&probe, info, 1), RLOCK_OK);
    CHECK_MSG(strcmp(info[0].kind, "free") == 0 && info[0].holders == 0,
              "the last reader's lease ended: %s, %lld holders", info[0].kind, info[0].holders);
    CHECK_EQ_ST(rlock_try_acquire(&w1, 10000), RLOCK_OK); /* what a script sees: free */
    CHECK_EQ_ST(rlock_release(&w1), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r2), RLOCK_LOST);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:lapse"), 0);
    (void)rh_int(s, "DEL {rw:lapse}:waiters");
    rh_tc_close(&t1);
    rh_tc_close(&t2);
}

/* Force-unlock on each lock kind not covered above: a read-write key held
 * by two readers with a writer waiting (its hold-off in the hash), one held
 * by a writer, and a fair lock's key: each is deleted, the holders' extend
 * says LOST, and a new holder gets in at once. */
static void test_force_each_kind(const rh_server *s) {
    rh_tconn t1, t2, t3;
    rlock_lock r1, r2, w, w2, f, f2, probe;
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0 || tc_open(&t3, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&r1, &t1.cl, "fo:rw", 5, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&r2, &t2.cl, "fo:rw", 5, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w, &t1.cl, "fo:rw", 5, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w2, &t3.cl, "fo:rw", 5, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&probe, &t2.cl, "fo:rw", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&r2, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&w2, 30000, 200), RLOCK_TIMEOUT); /* (its hold-off stays in the hash) */
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS fo:rw"), 0);
    CHECK_EQ_ST(rlock_extend(&r1, 30000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_extend(&r2, 30000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_try_acquire(&w, 30000), RLOCK_OK); /* no hold-off, no reader left */
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&w, 30000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_try_acquire(&r1, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&r1), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS fo:rw"), 0);
    /* a fair lock */
    CHECK_EQ_ST(rlock_lock_init(&f, &t1.cl, "fo:f", 4, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&f2, &t2.cl, "fo:f", 4, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&f, 1, 1000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&f2, 1, 1000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&probe, &t2.cl, "fo:f", 4, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&f, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&f, 30000), RLOCK_LOST);
    CHECK_EQ_ST(rlock_try_acquire(&f2, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&f2), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS fo:f"), 0);
    (void)rh_int(s, "DEL {fo:rw}:waiters {fo:f}:waiters");
    rh_tc_close(&t1);
    rh_tc_close(&t2);
    rh_tc_close(&t3);
}

/* Force-unlock wakes a semaphore's waiters too. Their queue is scored by
 * arrival (a lock's by deadline): the wake-up must publish to them all the
 * same. The waiter re-checks only every 30 s and the holder's lease is 30 s:
 * woken, it is in within a few steps; not woken, it sleeps (2 s of silence
 * ends rh_step_like_a_loop). */
static void test_force_sem_waiters(const rh_server *s) {
    rh_tconn t;
    rh_gconn g;
    rlock_lock a, b, probe;
    rlock_status st;
    int steps = 0;
    if (tc_open(&t, s) != 0 || rh_gc_open(&g, s, 30000) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_semaphore_init(&a, &t.cl, "sem:force", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&b, &g.cl, "sem:force", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&probe, &t.cl, "sem:force", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_OK);
    st = rh_step_until_waitmsg(&b, rlock_acquire_begin(&b, 30000, 60000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:force}:waiters"), 1);
    CHECK_EQ_ST(rlock_force_unlock(&probe), RLOCK_OK);
    st = rh_step_like_a_loop(&g.cl, &b, st, &steps);
    CHECK_EQ_ST(st, RLOCK_OK);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    else rlock_cancel(&b);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_LOST);
    CHECK_EQ_LL(rh_int(s, "EXISTS {sem:force}:deadlines"), 0); /* the woken waiter's entry went with it */
    (void)rh_int(s, "DEL sem:force {sem:force}:waiters {sem:force}:deadlines");
    rh_gc_close(&g);
    rh_tc_close(&t);
}

/* cfg.max_attempts ends a wait before its deadline: its last attempt must
 * leave the queue, as the last one before a timeout does. Else the waiter,
 * gone, stays queued with its deadline ahead, and the next release hands
 * it the freed permit: held for its 30 s lease by nobody, the next acquire
 * refused. */
static void test_sem_max_attempts(const rh_server *s) {
    rh_tconn ta, tb;
    rlock_config cfg;
    rlock_lock a, b, c;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.pubsub = 1;
    if (rh_tc_open(&ta, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); return; }
    cfg.max_attempts = 3;
    if (rh_tc_open(&tb, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); rh_tc_close(&ta); return; }
    CHECK_EQ_ST(rlock_semaphore_init(&a, &ta.cl, "sem:max", 7, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&b, &tb.cl, "sem:max", 7, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&c, &ta.cl, "sem:max", 7, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&b, 30000, 20000), RLOCK_TIMEOUT); /* 3 attempts, well before 20 s */
    CHECK_EQ_LL(rh_int(s, "ZCARD {sem:max}:waiters"), 0);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS sem:max"), 0); /* nothing handed to b */
    CHECK_EQ_ST(rlock_try_acquire(&c, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&c), RLOCK_OK);
    (void)rh_int(s, "DEL sem:max {sem:max}:waiters {sem:max}:deadlines");
    rh_tc_close(&ta);
    rh_tc_close(&tb);
}

/* A key of the program's own that a semaphore or read-write handle is
 * pointed at by mistake (FAULTS.md row 15): refused, and left exactly as it
 * was - no member reaped, no field added, no TTL set. */
static void test_foreign_keys(const rh_server *s) {
    rh_tconn t;
    rlock_lock sem, rd, wr;
    char buf[64];
    if (tc_open(&t, s) != 0) { CHECK_MSG(0, "connect"); return; }
    /* a sorted set (a leaderboard): its scores are long past as lease ends */
    CHECK_EQ_LL(rh_int(s, "ZADD fk:board 10 alice 20 bob"), 2);
    CHECK_EQ_ST(rlock_semaphore_init(&sem, &t.cl, "fk:board", 8, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&sem, 5000), RLOCK_E_FOREIGN);
    CHECK_EQ_ST(rlock_acquire(&sem, 5000, 2000), RLOCK_E_FOREIGN); /* not waited on */
    CHECK_EQ_LL(rh_int(s, "ZCARD fk:board"), 2);
    CHECK_EQ_LL(rh_int(s, "ZRANK fk:board alice"), 0);
    CHECK_EQ_LL(rh_int(s, "PTTL fk:board"), -1);
    CHECK(rlock_lock_state(&sem) == RLOCK_STATE_IDLE);
    /* a hash whose one field ends like "mode" ("code"): not an empty read-write key */
    CHECK(rh_str(s, buf, sizeof buf, "HSET fk:h code 5") == REDIS_REPLY_INTEGER);
    CHECK_EQ_ST(rlock_lock_init(&rd, &t.cl, "fk:h", 4, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&wr, &t.cl, "fk:h", 4, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&rd, 5000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_ST(rlock_try_acquire(&wr, 5000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_LL(rh_int(s, "HLEN fk:h"), 1);
    CHECK_EQ_LL(rh_int(s, "PTTL fk:h"), -1);
    CHECK(rlock_lock_state(&rd) == RLOCK_STATE_IDLE && rlock_lock_state(&wr) == RLOCK_STATE_IDLE);
    (void)rh_int(s, "DEL fk:board fk:h {fk:board}:waiters {fk:board}:deadlines {fk:h}:waiters");
    rh_tc_close(&t);
}

/* A read or write attempt on a key that is no read-write lock refuses
 * without writing anything (its checks come before any reaping): a
 * reentrant lock's hash keeps its hold and grant records, even under an
 * owner id that ends like a reader's lease (":x": such an owner id is
 * refused for reentrant locks now, test_owner_clash - its hash is written
 * as its grant did before, as another rlock build still may); a program's hash without
 * a TTL whose fields look like a read-write lock's is neither reaped,
 * emptied nor taken over (RLOCK_E_FOREIGN). */
static void test_rw_foreign_hashes(const rh_server *s) {
    static const char *const owners[2] = { NULL, "job:x" };
    rh_tconn t, to;
    rlock_config cfg;
    rlock_lock re, rd, wr;
    char buf[64];
    int i;
    if (tc_open(&t, s) != 0) { CHECK_MSG(0, "connect"); return; }
    for (i = 0; i < 2; i++) {
        rlock_config_init(&cfg);
        cfg.node_timeout_ms = 1000;
        cfg.owner = owners[i];
        if (rh_tc_open(&to, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); break; }
        CHECK_EQ_ST(rlock_lock_init(&re, &to.cl, "fk:re", 5, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&rd, &t.cl, "fk:re", 5, RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&wr, &t.cl, "fk:re", 5, RLOCK_KIND_WRITE), RLOCK_OK);
        if (owners[i]) { /* the hold and grant record (NUL, a 16-byte handle id, the owner id) of that grant */
            CHECK_EQ_ST(rlock_try_acquire(&re, 10000), RLOCK_E_BADARG);
            CHECK_EQ_LL(rh_int(s, "HSET fk:re %s 1 %b 1", owners[i], "\0" "0123456789abcdefjob:x", (size_t)22), 2);
            CHECK_EQ_LL(rh_int(s, "PEXPIRE fk:re 10000"), 1);
        } else {
            CHECK_EQ_ST(rlock_try_acquire(&re, 10000), RLOCK_OK);
        }
        CHECK_EQ_LL(rh_int(s, "HLEN fk:re"), 2); /* owner -> 1, and its grant record */
        CHECK_EQ_ST(rlock_try_acquire(&rd, 5000), RLOCK_E_WRONGTYPE);
        CHECK_EQ_ST(rlock_try_acquire(&wr, 5000), RLOCK_E_WRONGTYPE);
        CHECK_EQ_ST(rlock_acquire(&rd, 5000, 2000), RLOCK_E_WRONGTYPE); /* not waited on */
        CHECK_MSG(rh_int(s, "HLEN fk:re") == 2, "owner %s: the reentrant key has %lld fields left",
                  owners[i] ? owners[i] : "(default)", rh_int(s, "HLEN fk:re"));
        CHECK(rh_str(s, buf, sizeof buf, "HGET fk:re %s", owners[i] ? owners[i] : rlock_lock_token(&re)) ==
                  REDIS_REPLY_STRING &&
              strcmp(buf, "1") == 0);
        CHECK_EQ_LL(rh_int(s, "HEXISTS fk:re mode"), 0);
        CHECK(rlock_lock_state(&rd) == RLOCK_STATE_IDLE && rlock_lock_state(&wr) == RLOCK_STATE_IDLE);
        if (owners[i]) {
            CHECK(rh_int(s, "PTTL fk:re") > 0); /* (and still expires) */
            CHECK_EQ_LL(rh_int(s, "DEL fk:re"), 1);
        } else {
            CHECK_EQ_ST(rlock_extend(&re, 10000), RLOCK_OK);
            CHECK_EQ_ST(rlock_release(&re), RLOCK_OK);
        }
        CHECK_EQ_LL(rh_int(s, "EXISTS fk:re"), 0);
        (void)rh_int(s, "DEL fk:re {fk:re}:waiters");
        rh_tc_close(&to);
    }
    /* a program's hashes, no TTL: one a waiting reader's field only, one a mode only */
    for (i = 0; i < 2; i++) {
        CHECK(rh_str(s, buf, sizeof buf, i ? "HSET fk:p mode read" : "HSET fk:p a:q 5") == REDIS_REPLY_INTEGER);
        CHECK_EQ_ST(rlock_lock_init(&rd, &t.cl, "fk:p", 4, RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&wr, &t.cl, "fk:p", 4, RLOCK_KIND_WRITE), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&rd, 5000), RLOCK_E_FOREIGN);
        CHECK_EQ_ST(rlock_acquire(&wr, 5000, 2000), RLOCK_E_FOREIGN);
        CHECK_EQ_ST(rlock_acquire(&rd, 5000, 2000), RLOCK_E_FOREIGN);
        CHECK_MSG(rh_int(s, "HLEN fk:p") == 1, "program hash %d: %lld fields", i, rh_int(s, "HLEN fk:p"));
        CHECK_EQ_LL(rh_int(s, "PTTL fk:p"), -1);
        CHECK(rlock_lock_state(&rd) == RLOCK_STATE_IDLE && rlock_lock_state(&wr) == RLOCK_STATE_IDLE);
        (void)rh_int(s, "DEL fk:p {fk:p}:waiters");
    }
    rh_tc_close(&t);
}

/* A reentrant lock's hold is the hash field named by its owner id; a
 * read-write lock's fields are "mode", "wq" and <owner>:r / :w / :x / :y /
 * :q / :t. A reentrant owner id named like one of them took a read-write
 * key's field for its own hold: owner "job:r" on a key read-held by owner
 * "job" was granted (HINCRBY on the reader's count; both held, and its
 * PEXPIRE cut the key's TTL to its own lease), "job:x" likewise (on the
 * reader's lease end), and a reader was granted on the hash of a reentrant
 * lock held by owner "mode" (the read-write scripts took its count for the
 * mode). Such owner ids are now refused for reentrant locks (E_BADARG,
 * nothing sent); read-write handles keep them (their fields carry a
 * suffix: no clash). */
static void test_owner_clash(const rh_server *s) {
    static const char *const bad[] = { "job:r", "job:x", "job:w", "job:y", "job:q", "job:t", "mode", "wq" };
    rh_tconn tj, to;
    rlock_config cfg;
    rlock_lock rd, re, rd2;
    size_t i;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.owner = "job";
    if (rh_tc_open(&tj, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&rd, &tj.cl, "oc:k", 4, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&rd, 30000), RLOCK_OK);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlock_status st;
        cfg.owner = bad[i];
        if (rh_tc_open(&to, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); break; }
        CHECK_EQ_ST(rlock_lock_init(&re, &to.cl, "oc:k", 4, RLOCK_KIND_REENTRANT), RLOCK_OK);
        st = rlock_try_acquire(&re, 10000);
        CHECK_MSG(st == RLOCK_E_BADARG, "reentrant owner '%s' on a key read-held by 'job': %s%s", bad[i],
                  rlock_status_str(st), st == RLOCK_OK ? " - both hold" : "");
        CHECK_MSG(strstr(rlock_lock_error(&re), "owner") != NULL, "'%s': %s", bad[i], rlock_lock_error(&re));
        if (st == RLOCK_OK) (void)rlock_release(&re);
        /* a read-write handle keeps the owner id: its own fields carry a suffix */
        CHECK_EQ_ST(rlock_lock_init(&rd2, &to.cl, "oc:k", 4, RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&rd2, 10000), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&rd2), RLOCK_OK);
        rh_tc_close(&to);
    }
    CHECK(rh_int(s, "PTTL oc:k") > 20000); /* the reader's key keeps its lease */
    CHECK_EQ_ST(rlock_extend(&rd, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&rd), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS oc:k"), 0);
    /* owner "mode" on its own reentrant key: a reader must not get in */
    cfg.owner = "mode";
    if (rh_tc_open(&to, s, 0, &cfg, NULL, NULL) == 0) {
        rlock_status st;
        CHECK_EQ_ST(rlock_lock_init(&re, &to.cl, "oc:m", 4, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&rd, &tj.cl, "oc:m", 4, RLOCK_KIND_READ), RLOCK_OK);
        st = rlock_try_acquire(&re, 10000);
        CHECK_EQ_ST(st, RLOCK_E_BADARG);
        if (st == RLOCK_OK) {
            st = rlock_try_acquire(&rd, 10000);
            CHECK_MSG(st != RLOCK_OK, "a reader on owner 'mode''s reentrant key: %s - both hold", rlock_status_str(st));
            if (st == RLOCK_OK) (void)rlock_release(&rd);
            (void)rlock_release(&re);
        }
        rh_tc_close(&to);
    }
    /* the owner ids that do not clash still work: "job" itself, "job:rx", "job:" */
    for (i = 0; i < 3; i++) {
        static const char *const good[3] = { "job", "job:rx", "job:" };
        cfg.owner = good[i];
        if (rh_tc_open(&to, s, 0, &cfg, NULL, NULL) != 0) { CHECK_MSG(0, "connect"); break; }
        CHECK_EQ_ST(rlock_lock_init(&re, &to.cl, "oc:k", 4, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&re, 10000), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&re), RLOCK_OK);
        rh_tc_close(&to);
    }
    (void)rh_int(s, "DEL oc:k oc:m {oc:k}:waiters {oc:m}:waiters");
    rh_tc_close(&tj);
}

/* ------------------------------------------- 5. semaphore over Redlock */

/* With 3 nodes and N = 2, three holders whose majorities overlap pairwise
 * ({0,1}, {1,2}, {0,2}) would each find every node below 2 permits: a count
 * alone admits all three. Permit slots do not: the third finds no slot free
 * on both of its nodes. */
static void sem_overlap(rh_server *srv) {
    tconn_n t;
    rlock_lock h[3];
    int i, held = 0;
    if (tcn_open(&t, srv, 3, 200) != 0) { CHECK_MSG(0, "connect"); return; }
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_semaphore_init(&h[i], &t.cl, "sem:ov", 6, 2), RLOCK_OK);
    for (i = 0; i < 3; i++) {
        rlock_status st;
        rh_server_pause(&srv[(i + 2) % 3]); /* holder i's majority: the other two nodes */
        st = rlock_try_acquire(&h[i], 20000);
        rh_server_resume(&srv[(i + 2) % 3]);
        if (st == RLOCK_OK) held++;
        if (i < 2) CHECK_EQ_ST(st, RLOCK_OK);
        else CHECK_EQ_ST(st, RLOCK_NOT_ACQUIRED);
    }
    printf("semaphore over 3 nodes, N = 2, pairwise-overlapping majorities: %d holders\n", held);
    CHECK_EQ_LL(held, 2);
    CHECK(rlock_semaphore_slot(&h[0]) != rlock_semaphore_slot(&h[1]));
    for (i = 0; i < 2; i++) CHECK_EQ_ST(rlock_release(&h[i]), RLOCK_OK);
    for (i = 0; i < 3; i++) rh_int(&srv[i], "DEL sem:ov");
    tcn_close(&t);
}

/* Permit counts at their limits, on n nodes: 2^31 - 1 permits (a Redlock
 * handle starts on a random slot up to 2^31 - 2: its 10 digits go out as
 * ARGV[6] and come back as the slot) - three holders on three different
 * slots in range, inspect counts them; the count lowered to 1 under them
 * (rlock_semaphore_set_permits): nobody new gets in until all three left,
 * then one does, on slot 0. */
static void sem_limits(rh_server *srv, int n) {
    tconn_n t;
    rlock_lock h[4];
    rlock_info info[3];
    int i;
    if (tcn_open(&t, srv, n, 1000) != 0) { CHECK_MSG(0, "connect"); return; }
    for (i = 0; i < 4; i++) CHECK_EQ_ST(rlock_semaphore_init(&h[i], &t.cl, "sem:lim", 7, 2147483647LL), RLOCK_OK);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_ST(rlock_try_acquire(&h[i], 20000), RLOCK_OK);
        CHECK_MSG(rlock_semaphore_slot(&h[i]) >= 0 && rlock_semaphore_slot(&h[i]) < 2147483647LL, "slot %lld",
                  rlock_semaphore_slot(&h[i]));
    }
    CHECK(rlock_semaphore_slot(&h[0]) != rlock_semaphore_slot(&h[1]) &&
          rlock_semaphore_slot(&h[1]) != rlock_semaphore_slot(&h[2]) &&
          rlock_semaphore_slot(&h[0]) != rlock_semaphore_slot(&h[2]));
    CHECK_EQ_ST(rlock_inspect(&h[3], info, 3), RLOCK_OK);
    CHECK_MSG(strcmp(info[0].kind, "semaphore") == 0 && info[0].holders == 3, "%s, %lld holders", info[0].kind,
              info[0].holders);
    CHECK_EQ_ST(rlock_semaphore_set_permits(&h[3], 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&h[3], 20000), RLOCK_NOT_ACQUIRED);
    for (i = 0; i < 2; i++) {
        CHECK_EQ_ST(rlock_release(&h[i]), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&h[3], 20000), RLOCK_NOT_ACQUIRED); /* one still holds: over 1 */
    }
    CHECK_EQ_ST(rlock_release(&h[2]), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&h[3], 20000), RLOCK_OK);
    CHECK_EQ_LL(rlock_semaphore_slot(&h[3]), 0);
    CHECK_EQ_ST(rlock_release(&h[3]), RLOCK_OK);
    for (i = 0; i < n; i++) CHECK_EQ_LL(rh_int(&srv[i], "EXISTS sem:lim"), 0);
    for (i = 0; i < n; i++) (void)rh_int(&srv[i], "DEL sem:lim {sem:lim}:waiters {sem:lim}:deadlines");
    tcn_close(&t);
}

/* A multi-lock over 3 nodes refused by a majority (one key held on nodes
 * 1 and 2 by someone else) leaves nothing on the node that granted: its
 * keys are released again, the other holder's keys untouched. Then with
 * the key free on a majority it gets in, and its release empties every node. */
static void multi_partial(rh_server *srv) {
    tconn_n t;
    rlock_lock m;
    const char *keys[2] = { "{mk}:a", "{mk}:b" };
    const size_t lens[2] = { 6, 6 };
    char buf[32];
    int i;
    if (tcn_open(&t, srv, 3, 1000) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_multi_init(&m, &t.cl, keys, lens, 2), RLOCK_OK);
    for (i = 1; i < 3; i++) CHECK(rh_str(&srv[i], buf, sizeof buf, "SET {mk}:b other PX 30000") == REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_MSG(rh_int(&srv[0], "EXISTS {mk}:a {mk}:b") == 0, "the granting node keeps %lld keys",
              rh_int(&srv[0], "EXISTS {mk}:a {mk}:b"));
    for (i = 1; i < 3; i++) {
        CHECK_EQ_LL(rh_int(&srv[i], "EXISTS {mk}:a"), 0);
        CHECK(rh_str(&srv[i], buf, sizeof buf, "GET {mk}:b") == REDIS_REPLY_STRING && strcmp(buf, "other") == 0);
    }
    (void)rh_int(&srv[2], "DEL {mk}:b"); /* free on nodes 0 and 2: a majority */
    CHECK_EQ_ST(rlock_try_acquire(&m, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&m), 2);
    CHECK_EQ_ST(rlock_release(&m), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS {mk}:a {mk}:b"), 0);
    CHECK_EQ_LL(rh_int(&srv[2], "EXISTS {mk}:a {mk}:b"), 0);
    CHECK(rh_str(&srv[1], buf, sizeof buf, "GET {mk}:b") == REDIS_REPLY_STRING && strcmp(buf, "other") == 0);
    for (i = 0; i < 3; i++) (void)rh_int(&srv[i], "DEL {mk}:a {mk}:b");
    tcn_close(&t);
}

static void test_sem_redlock(void) {
    rh_server srv[3];
    rlock_posix_conn pc[3];
    rlock_node node[3];
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a, b, c;
    rlock_info info[3];
    int i, up = 0;
    for (i = 0; i < 3; i++) up += rh_server_start(&srv[i], NULL) == 0;
    CHECK_EQ_LL(up, 3);
    if (up != 3) { for (i = 0; i < 3; i++) rh_server_stop(&srv[i]); return; }
    sem_overlap(srv);
    sem_limits(srv, 3);
    multi_partial(srv);
    sem_procs(srv, 3);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    for (i = 0; i < 3; i++) {
        CHECK(rlock_posix_init_tcp(&pc[i], "127.0.0.1", srv[i].port, 1000) == 0);
        CHECK_EQ_ST(rlock_node_init(&node[i], rlock_posix_transport(&pc[i])), RLOCK_OK);
    }
    CHECK_EQ_ST(rlock_client_init(&cl, node, 3, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&a, &cl, "sem:rl", 6, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&b, &cl, "sem:rl", 6, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&c, &cl, "sem:rl", 6, 2), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&a, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&a), 3);
    /* b may first ask for a's slot: refused, it asks at once for the free one */
    CHECK_EQ_ST(rlock_try_acquire(&b, 10000), RLOCK_OK);
    CHECK(rlock_semaphore_slot(&a) != rlock_semaphore_slot(&b));
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    rh_server_stop(&srv[2]); /* one node down: a quorum still grants and refuses */
    CHECK_EQ_ST(rlock_try_acquire(&b, 10000), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&b), 2);
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_inspect(&c, info, 3), RLOCK_OK);
    CHECK_EQ_LL(info[0].holders, 2);
    CHECK(info[2].st != RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&a, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&c, 10000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&c), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS sem:rl"), 0);
    CHECK_EQ_LL(rh_int(&srv[1], "EXISTS sem:rl"), 0);
    rlock_client_close(&cl);
    for (i = 0; i < 3; i++) { rlock_posix_close(&pc[i]); rh_server_stop(&srv[i]); }
}

/* A late cleanup cannot take the retry's grant away (as test_fair's
 * test_late_cleanup, for these kinds): the first attempt and its cleanup
 * are held back past the node timeout, the retry is granted; then the
 * cleanup reaches the server, then the attempt. The cleanup carried the
 * first attempt's token (multi, semaphore: compare-and-delete, permit
 * removal) or owner (read, write: a decrement that deletes at 0); the retry
 * drew a new one, so the rival is still refused and the release finds the
 * grant. (A semaphore that queued: test_sem_late_cleanup_queued.) */
static void test_late_cleanup(const rh_server *s) {
    const char *keys[2] = { "{late}:a", "{late}:b" };
    const size_t lens[2] = { 8, 8 };
    int k;
    for (k = 0; k < 4; k++) {
        rh_hconn hc;
        rh_tconn t;
        rlock_lock w, r;
        if (rh_hc_open(&hc, s, 150) != 0 || tc_open(&t, s) != 0) { CHECK_MSG(0, "connect"); return; }
        if (k == 0) { /* a reader; the rival a writer */
            CHECK_EQ_ST(rlock_lock_init(&w, &hc.cl, "late:rw", 7, RLOCK_KIND_READ), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&r, &t.cl, "late:rw", 7, RLOCK_KIND_WRITE), RLOCK_OK);
        } else if (k == 1) {
            CHECK_EQ_ST(rlock_lock_init(&w, &hc.cl, "late:rw", 7, RLOCK_KIND_WRITE), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&r, &t.cl, "late:rw", 7, RLOCK_KIND_WRITE), RLOCK_OK);
        } else if (k == 2) {
            CHECK_EQ_ST(rlock_multi_init(&w, &hc.cl, keys, lens, 2), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&r, &t.cl, keys[1], lens[1], RLOCK_KIND_SIMPLE), RLOCK_OK);
        } else {
            CHECK_EQ_ST(rlock_semaphore_init(&w, &hc.cl, "late:sem", 8, 1), RLOCK_OK);
            CHECK_EQ_ST(rlock_semaphore_init(&r, &t.cl, "late:sem", 8, 1), RLOCK_OK);
        }
        CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK); /* the scripts are loaded: a late EVALSHA runs */
        CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
        hc.hold = 2; /* the attempt, then its cleanup */
        CHECK_EQ_ST(rlock_acquire(&w, 10000, 5000), RLOCK_OK);
        CHECK_EQ_LL(hc.n_late, 2);
        CHECK_EQ_LL(rh_hc_deliver(&hc, 1, s), 0); /* the cleanup, late */
        CHECK_MSG(rlock_try_acquire(&r, 10000) == RLOCK_NOT_ACQUIRED, "kind %d: a late cleanup let a rival in", k);
        CHECK_EQ_LL(rh_hc_deliver(&hc, 0, s), 0); /* then the attempt it was for: refused */
        CHECK_EQ_ST(rlock_try_acquire(&r, 10000), RLOCK_NOT_ACQUIRED);
        CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
        if (rlock_lock_state(&r) == RLOCK_STATE_HELD) (void)rlock_release(&r);
        (void)rh_int(s, "DEL late:rw late:sem {late}:a {late}:b {late:rw}:waiters {late:sem}:waiters");
        rh_hc_close(&hc);
        rh_tc_close(&t);
    }
}

/* The late-cleanup semaphore tests' clients: hc (its bytes held back,
 * waiting by notification through sn over sp) and a plain t. */
static int semq_open(const rh_server *s, rh_hconn *hc, rh_tconn *t, rlock_posix_conn *sp, rlock_subscriber *sn) {
    if (rh_hc_open(hc, s, 150) != 0 || tc_open(t, s) != 0 || rlock_posix_init_tcp(sp, "127.0.0.1", s->port, 1000) != 0 ||
        rlock_subscriber_init(sn, rlock_posix_transport(sp)) != RLOCK_OK ||
        rlock_client_set_subscribers(&hc->cl, sn, 1) != RLOCK_OK) {
        CHECK_MSG(0, "connect");
        return -1;
    }
    return 0;
}

/* The same for a semaphore that queued on one node, where a release hands
 * its freed permit to the first waiter's queue entry (section 6.4b). The
 * waiter (hc, with a subscriber connection of its own that is not held
 * back) queues behind a holder; its re-check attempt and that attempt's
 * cleanup are held back; its retry is granted: handoff 1, the holder
 * released while the attempt was out (the permit handed to the waiter, the
 * retry finds it); handoff 0, the holder's lease ended (a plain grant).
 * Then the cleanup lands, then the attempt: the rival is still refused and
 * the waiter's release finds its permit. (When a queued semaphore's retry
 * kept its token - its queue entry named the token a permit was handed
 * to - the cleanup removed the retry's permit: two holders of one, both
 * cases.) */
static void test_sem_late_cleanup_queued(const rh_server *s) {
    int handoff;
    for (handoff = 0; handoff < 2; handoff++) {
        rh_hconn hc;
        rh_tconn t;
        rlock_posix_conn sp;
        rlock_subscriber sn;
        rlock_lock w, h, r;
        rlock_status st;
        char wid[17], tok[80];
        int i;
        if (semq_open(s, &hc, &t, &sp, &sn) != 0) return;
        CHECK_EQ_ST(rlock_semaphore_init(&w, &hc.cl, "late:semq", 9, 1), RLOCK_OK);
        CHECK_EQ_ST(rlock_semaphore_init(&h, &t.cl, "late:semq", 9, 1), RLOCK_OK);
        CHECK_EQ_ST(rlock_semaphore_init(&r, &t.cl, "late:semq", 9, 1), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK); /* the scripts are loaded: a late EVALSHA runs */
        CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&h, handoff ? 10000 : 2500), RLOCK_OK);
        st = rh_step_until_waitmsg(&w, rlock_acquire_begin(&w, 10000, 10000));
        CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(rh_int(s, "ZCARD {late:semq}:waiters"), 1); /* queued */
        snprintf(wid, sizeof wid, "%.16s", w.waiter_id);
        snprintf(tok, sizeof tok, "%s", w.owner);
        hc.hold = 2; /* its next attempt (the re-check: recheck_ms, 1 s), then that attempt's cleanup */
        for (i = 0; i < 1000 && st == RLOCK_WOULD_BLOCK && !hc.held; i++) {
            rh_sleep_ms(5);
            st = rlock_step(&w);
        }
        CHECK_MSG(hc.held, "handoff %d: the re-check attempt never went out", handoff);
        if (handoff) CHECK_EQ_ST(rlock_release(&h), RLOCK_OK); /* handed to the waiter's queue entry */
        for (i = 0; i < 3000 && st == RLOCK_WOULD_BLOCK; i++) {
            rh_sleep_ms(5);
            st = rlock_step(&w);
        }
        CHECK_EQ_ST(st, RLOCK_OK);
        if (handoff) /* the retry found the permit handed to its waiter id: it holds it under that id */
            CHECK_MSG(strcmp(rlock_lock_token(&w), wid) == 0, "held under %s, not %s", rlock_lock_token(&w), wid);
        else
            CHECK_MSG(strlen(rlock_lock_token(&w)) == 32 && strcmp(rlock_lock_token(&w), tok) != 0,
                      "the retry kept its token %s", tok);
        CHECK_EQ_LL(hc.n_late, 2);
        CHECK_EQ_LL(rh_hc_deliver(&hc, 1, s), 0); /* the cleanup, late */
        CHECK_MSG(rlock_try_acquire(&r, 10000) == RLOCK_NOT_ACQUIRED, "handoff %d: a late cleanup let a rival in",
                  handoff);
        CHECK_EQ_LL(rh_hc_deliver(&hc, 0, s), 0); /* then the attempt it was for */
        CHECK_MSG(rlock_try_acquire(&r, 10000) == RLOCK_NOT_ACQUIRED, "handoff %d: a late attempt let a rival in",
                  handoff);
        CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
        if (rlock_lock_state(&r) == RLOCK_STATE_HELD) (void)rlock_release(&r);
        if (!handoff) (void)rlock_release(&h); /* (its lease ended: LOST) */
        (void)rh_int(s, "DEL late:semq {late:semq}:waiters {late:semq}:deadlines");
        rh_hc_close(&hc);
        rlock_posix_close(&sp);
        rh_tc_close(&t);
    }
}

/* A permit handed to a waiter that judges it too late (its lease, counted
 * from the waiter's last attempt, ran out before it read the notice) is
 * cleaned up by the waiter id it was handed to; that cleanup is held back.
 * The waiter queues again, is handed a permit again and holds it; then the
 * cleanup lands. The id was spent by the first hand-off - the waiter queued
 * again under another - so the cleanup finds nothing of the second permit.
 * (Were the id kept, the second permit would be "0:<id>" too, and gone.) */
static void test_sem_spent_waiter_id(const rh_server *s) {
    rh_hconn hc;
    rh_tconn t;
    rlock_posix_conn sp;
    rlock_subscriber sn;
    rlock_lock w, h, h2, r;
    rlock_status st;
    char wid[17], member[40];
    int i;
    if (semq_open(s, &hc, &t, &sp, &sn) != 0) return;
    CHECK_EQ_ST(rlock_semaphore_init(&w, &hc.cl, "late:semw", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&h, &t.cl, "late:semw", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&h2, &t.cl, "late:semw", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&r, &t.cl, "late:semw", 9, 1), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&w, 10000, 0), RLOCK_OK); /* the scripts are loaded: a late EVALSHA runs */
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&h, 10000), RLOCK_OK);
    st = rh_step_until_waitmsg(&w, rlock_acquire_begin(&w, 1000, 20000));
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    snprintf(wid, sizeof wid, "%.16s", w.waiter_id);
    CHECK_EQ_ST(rlock_release(&h), RLOCK_OK); /* handed to w: "0:<wid>", leased 1 s */
    snprintf(member, sizeof member, "0:%s", wid);
    CHECK_EQ_LL(rh_int(s, "ZRANK late:semw %s", member), 0);
    rh_sleep_ms(1300); /* w reads the notice only now: too late (and the permit's lease is over) */
    CHECK_EQ_ST(rlock_try_acquire(&h2, 10000), RLOCK_OK);
    hc.hold = 1; /* w's cleanup of the handed permit */
    for (i = 0; i < 2000 && st == RLOCK_WOULD_BLOCK && (hc.n_late < 1 || w.op.phase != RLOCK__PH_WAITMSG); i++) {
        rh_sleep_ms(5);
        st = rlock_step(&w);
    }
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(hc.n_late, 1);
    CHECK_MSG(strstr(hc.late[0], wid) != NULL, "the held cleanup is not by the waiter id %s", wid);
    CHECK_MSG(strncmp(w.waiter_id, wid, 16) != 0, "the waiter id %s is still in use", wid);
    CHECK_EQ_LL(rh_int(s, "ZCARD {late:semw}:waiters"), 1); /* queued again, under another id */
    CHECK_EQ_ST(rlock_release(&h2), RLOCK_OK); /* handed to w again */
    for (i = 0; i < 2000 && st == RLOCK_WOULD_BLOCK; i++) {
        rh_sleep_ms(5);
        st = rlock_step(&w);
    }
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&w, 10000), RLOCK_OK);
    CHECK_EQ_LL(rh_hc_deliver(&hc, 0, s), 0); /* the first permit's cleanup, late */
    CHECK_MSG(rlock_try_acquire(&r, 10000) == RLOCK_NOT_ACQUIRED, "a late cleanup by a spent waiter id let a rival in");
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    if (rlock_lock_state(&r) == RLOCK_STATE_HELD) (void)rlock_release(&r);
    (void)rh_int(s, "DEL late:semw {late:semw}:waiters {late:semw}:deadlines");
    rh_hc_close(&hc);
    rlock_posix_close(&sp);
    rh_tc_close(&t);
}

/* The grants' records (RLOCK__LUA_RECORD) do not pile up in a read-write
 * key that never empties: a reader that died (its lease ran out, never
 * released) leaves a record, and the next script's live() drops it with
 * the reader's count; a release takes its own out. */
static int has_record(const rh_server *s, const char *key, const rlock_lock *lk) {
    char f[1 + 16 + RLOCK_MAX_OWNER_LEN];
    size_t n = strlen(rlock_lock_token(lk));
    f[0] = '\0';
    memcpy(f + 1, lk->waiter_id, 16);
    memcpy(f + 17, rlock_lock_token(lk), n);
    return (int)rh_int(s, "HEXISTS %s %b", key, f, 17 + n);
}
/* A reader whose lease ran out holds nothing, whatever order Redis keeps
 * its fields in. An owner id over ~47 characters makes its record field
 * longer than hash-max-listpack-value (64): the hash is a hashtable and
 * HGETALL returns "<owner>:x" before "<owner>:r" about half the time (per
 * key, by the server's random hash seed). On 16 keys, each with a live
 * reader and a long-owner reader whose lease ran out, the first script
 * that looks must see the expired reader as gone: that owner's writer is
 * refused (it waits), not RLOCK_E_UPGRADE (fatal); its release says LOST. */
static void test_rw_expired_reader(const rh_server *s) {
    static const char owner[] = "a-long-owner-id:host-0123456789:service-abcdefgh:thread-1";
    rh_tconn tl, tk;
    rlock_config cfg;
    rlock_lock keep[16], old[16], w;
    char key[16][24];
    int i, upgrade = 0, refused = 0, lost = 0;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.owner = owner;
    if (rh_tc_open(&tl, s, 0, &cfg, NULL, NULL) != 0 || tc_open(&tk, s) != 0) { CHECK_MSG(0, "connect"); return; }
    for (i = 0; i < 16; i++) {
        snprintf(key[i], sizeof key[i], "rw:exp%d", i);
        CHECK_EQ_ST(rlock_lock_init(&keep[i], &tk.cl, key[i], strlen(key[i]), RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&old[i], &tl.cl, key[i], strlen(key[i]), RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&keep[i], 60000), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&old[i], 1200), RLOCK_OK);
    }
    rh_sleep_ms(1400); /* the old readers' leases run out */
    for (i = 0; i < 16; i++) {
        rlock_status st;
        CHECK_EQ_ST(rlock_lock_init(&w, &tl.cl, key[i], strlen(key[i]), RLOCK_KIND_WRITE), RLOCK_OK);
        st = rlock_try_acquire(&w, 5000);
        upgrade += st == RLOCK_E_UPGRADE;
        refused += st == RLOCK_NOT_ACQUIRED;
        rlock_lock_destroy(&w);
    }
    for (i = 8; i < 16; i++) (void)rh_int(s, "DEL %s", key[i]); /* fresh keys for the release's first look */
    for (i = 8; i < 16; i++) {
        CHECK_EQ_ST(rlock_try_acquire(&keep[i], 60000), RLOCK_OK);
        CHECK_EQ_ST(rlock_try_acquire(&old[i], 1200), RLOCK_OK);
    }
    rh_sleep_ms(1400);
    for (i = 8; i < 16; i++) lost += rlock_release(&old[i]) == RLOCK_LOST;
    CHECK_MSG(upgrade == 0 && refused == 16, "an expired reader's writer: %d refused, %d E_UPGRADE (of 16)", refused,
              upgrade);
    CHECK_MSG(lost == 8, "an expired reader's release: %d of 8 LOST", lost);
    for (i = 0; i < 16; i++) {
        if (rlock_lock_state(&old[i]) == RLOCK_STATE_HELD) (void)rlock_release(&old[i]);
        CHECK_EQ_ST(rlock_release(&keep[i]), RLOCK_OK);
        CHECK_EQ_LL(rh_int(s, "EXISTS %s", key[i]), 0);
    }
    rh_tc_close(&tl);
    rh_tc_close(&tk);
}

static void test_rw_records(const rh_server *s) {
    rh_tconn t1, t2;
    rlock_lock dead, live, w;
    unsigned long long end;
    rlock_status st = RLOCK_NOT_ACQUIRED;
    if (tc_open(&t1, s) != 0 || tc_open(&t2, s) != 0) { CHECK_MSG(0, "connect"); return; }
    CHECK_EQ_ST(rlock_lock_init(&dead, &t1.cl, "rw:rec", 6, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&live, &t2.cl, "rw:rec", 6, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&w, &t2.cl, "rw:rec", 6, RLOCK_KIND_WRITE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&dead, 1200, 0), RLOCK_OK); /* (the shortest lease above the node timeout) */
    CHECK_EQ_ST(rlock_acquire(&live, 30000, 0), RLOCK_OK);
    CHECK_EQ_LL(has_record(s, "rw:rec", &dead), 1);
    CHECK_EQ_LL(has_record(s, "rw:rec", &live), 1);
    /* dead's lease runs out; live's next acquire (a re-entry) reaps it */
    end = rh_now_ms() + 5000;
    while (has_record(s, "rw:rec", &dead) == 1 && rh_now_ms() < end) {
        rh_sleep_ms(50);
        CHECK_EQ_ST(rlock_acquire(&live, 30000, 0), RLOCK_OK);
    }
    CHECK_MSG(has_record(s, "rw:rec", &dead) == 0, "a dead reader's record stayed");
    CHECK_EQ_LL(has_record(s, "rw:rec", &live), 1);
    while (rlock_lock_state(&live) == RLOCK_STATE_HELD && rlock_release(&live) == RLOCK_OK) {}
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:rec"), 0); /* the last reader out: nothing left */
    st = rlock_try_acquire(&w, 30000);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_EQ_LL(has_record(s, "rw:rec", &w), 1);
    CHECK_EQ_ST(rlock_release(&w), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS rw:rec"), 0);
    (void)rlock_release(&dead); /* (lost) */
    (void)rh_int(s, "DEL rw:rec {rw:rec}:waiters");
    rh_tc_close(&t1);
    rh_tc_close(&t2);
}

int main(void) {
    rh_server s;
    int fds0, fds1;
    quick = getenv("RLOCK_TEST_QUICK") != NULL && getenv("RLOCK_TEST_QUICK")[0] != '\0' &&
            strcmp(getenv("RLOCK_TEST_QUICK"), "0") != 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();
    if (rh_server_start(&s, NULL) != 0) {
        CHECK_MSG(0, "could not start redis-server");
        return check_summary("primitives");
    }
    test_sem_basic(&s);
    test_sem_handoff(&s);
    sem_limits(&s, 1);
    test_sem_procs(&s);
    test_rw_basic(&s);
    test_rw_starvation(&s);
    test_rw_turns(&s);
    test_rw_wake_with_refusal(&s);
    test_rw_dead_writer(&s);
    test_rw_downgrade_lease(&s);
    test_multi(&s);
    test_multi_wake_fence(&s);
    test_multi_fence_big(&s);
    test_fence_exact(&s);
    test_late_cleanup(&s);
    test_sem_late_cleanup_queued(&s);
    test_sem_spent_waiter_id(&s);
    test_sem_max_attempts(&s);
    test_rw_records(&s);
    test_rw_expired_reader(&s);
    test_inspect_force(&s);
    test_inspect_rw_lapsed(&s);
    test_force_each_kind(&s);
    test_force_sem_waiters(&s);
    test_foreign_keys(&s);
    test_rw_foreign_hashes(&s);
    test_owner_clash(&s);
    test_sem_redlock();
    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0); /* nothing left behind */
    rh_server_stop(&s);
    CHECK_EQ_LL(rh_count_children(), 0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    return check_summary("primitives");
}
