/* test_redis.c - the single-node and reentrant locks against real, throw-away
 * redis-server processes on loopback (started and stopped by PID here, on
 * free ports; never a system service).
 *
 * Covers: acquire/extend/release over the POSIX adapter (TCP, unix socket)
 * and the hiredis adapter; the scripts' SHA1s; mutual exclusion between
 * forked processes; token safety when a holder pauses past its TTL (also a
 * real SIGSTOP); reentrancy; NOSCRIPT fallback; WRONGTYPE / foreign keys;
 * a paused, killed, restarted server and killed connections; AUTH / ACL;
 * maxclients; OOM and READONLY; the non-blocking API driven by poll(); a
 * holder killed with SIGKILL (FAULTS.md row 2), a server restarted without
 * persistence (row 9: two holders, shown), a SIGALRM storm (row 22: EINTR);
 * the longest key with fencing and a queued waiter (every auxiliary name);
 * one server under two names refused by rlock_client_connect (row 28); a
 * release with an unknown outcome (the handle stays HELD; retry it); a
 * handle destroyed with its acquire in flight or its grant unread (the
 * grant released, not left held for its lease); 40 locks on one
 * connection (replies a byte at a time, a cancel mid-pipeline, the
 * connection killed with all in flight, a handle re-initialised in flight);
 * and that nothing leaks (fds, child processes, servers).
 *
 * RLOCK_TEST_QUICK=1 (set by `make test` for the valgrind run) shrinks the
 * loops. Timing asserts use generous bounds and check orderings. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "rlock.h"
#include "adapters/rlock_hiredis.h"
#include "harness.h"
#include "proxy.h"
#include "check.h"

#include <poll.h>

static int quick;

/* ------------------------------------------------------------ helpers */

/* One node over the POSIX adapter, in a one-node client. Must not move. */

/* The default for these tests: a per-node timeout far above a loopback
 * round trip, so a loaded machine (valgrind, parallel suites) does not turn
 * a slow first EVAL into RLOCK_E_IO. Tests of timeouts and of short TTLs
 * pass their own. */
#define T_NODE_TIMEOUT 1000

static rlock_config cfg_node_timeout(uint32_t ms) {
    rlock_config c;
    rlock_config_init(&c);
    c.node_timeout_ms = ms;
    return c;
}

static int tc_tcp(rh_tconn *t, const rh_server *s) { return rh_tc_open(t, s, 0, NULL, NULL, NULL); }

static long long since(unsigned long long t0) { return (long long)(rh_now_ms() - t0); }

/* GET key == want (a string reply). */
static int key_is(const rh_server *s, const char *key, const char *want) {
    char buf[256];
    return rh_str(s, buf, sizeof buf, "GET %s", key) == REDIS_REPLY_STRING && strcmp(buf, want) == 0;
}

/* The key is gone within ms. */
static int wait_gone(const rh_server *s, const char *key, unsigned ms) {
    unsigned long long end = rh_now_ms() + ms;
    while (rh_int(s, "EXISTS %s", key) != 0) {
        if (rh_now_ms() > end) return 0;
        rh_sleep_ms(5);
    }
    return 1;
}

/* SCRIPT EXISTS sha -> 1 / 0, -1 on error. */
static int script_exists(const rh_server *s, const char *sha) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    int v = -1;
    if (!c) return -1;
    r = (redisReply *)redisCommand(c, "SCRIPT EXISTS %s", sha);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        v = (int)r->element[0]->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* A reply's text (status/string/error) equals want. Frees r. */
static int reply_is(redisReply *r, const char *want) {
    int ok = r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING ||
                   r->type == REDIS_REPLY_ERROR) && strcmp(r->str, want) == 0;
    if (!ok && r && r->type == REDIS_REPLY_ERROR) fprintf(stderr, "  redis said: %s\n", r->str);
    if (r) freeReplyObject(r);
    return ok;
}


/* ------------------------------------------------ 1. basic operations */

/* acquire / extend / release on one client; checks what Redis holds. */
static void basic_cycle(rlock_client *cl, const rh_server *s, const char *key, const char *how) {
    rlock_lock lk, other;
    long long pttl;
    char token[RLOCK_TOKEN_LEN + 1];

    CHECK_EQ_ST(rlock_lock_init(&lk, cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&other, cl, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK_EQ_LL(rlock_hold_count(&lk), 1);
    CHECK_MSG(rlock_validity_ms(&lk) > 8000 && rlock_validity_ms(&lk) <= 10000, "%s: validity %lld",
              how, rlock_validity_ms(&lk));
    CHECK_EQ_LL(strlen(rlock_lock_token(&lk)), RLOCK_TOKEN_LEN);
    memcpy(token, rlock_lock_token(&lk), sizeof token);
    CHECK_MSG(key_is(s, key, token), "%s: the key holds the token", how);
    pttl = rh_int(s, "PTTL %s", key);
    CHECK_MSG(pttl > 8000 && pttl <= 10000, "%s: PTTL %lld after acquire(ttl 10000)", how, pttl);

    /* the same handle cannot take a simple lock twice; another handle is refused */
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_E_STATE);
    CHECK_EQ_ST(rlock_try_acquire(&other, 10000), RLOCK_NOT_ACQUIRED);
    CHECK(strcmp(rlock_lock_token(&other), token) != 0);
    CHECK_EQ_ST(rlock_release(&other), RLOCK_NOT_HELD);
    CHECK_MSG(key_is(s, key, token), "%s: a refused acquire left the key alone", how);

    CHECK_EQ_ST(rlock_extend(&lk, 30000), RLOCK_OK);
    pttl = rh_int(s, "PTTL %s", key);
    CHECK_MSG(pttl > 28000 && pttl <= 30000, "%s: PTTL %lld after extend(30000)", how, pttl);
    CHECK(rlock_validity_ms(&lk) > 28000);
    CHECK(strcmp(rlock_lock_token(&lk), token) == 0); /* extend keeps the token */
    CHECK(key_is(s, key, token));

    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rlock_hold_count(&lk), 0);
    CHECK_EQ_LL(rlock_validity_ms(&lk), 0);
    CHECK_MSG(rh_int(s, "EXISTS %s", key) == 0, "%s: key gone after release", how);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_NOT_HELD);

    /* a fresh acquire makes a fresh token */
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK(strcmp(rlock_lock_token(&lk), token) != 0);
    CHECK(key_is(s, key, rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    rlock_lock_destroy(&other);
    rlock_lock_destroy(&lk);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_E_BADARG); /* use after destroy */
}

static void test_basic(const rh_server *s) {
    rh_tconn t;
    struct timeval tv;
    redisContext *rc;

    /* POSIX adapter, TCP */
    CHECK(tc_tcp(&t, s) == 0);
    basic_cycle(&t.cl, s, "basic:tcp", "posix tcp");
    CHECK(rlock_node_commands(&t.node) >= 6);
    CHECK_EQ_ST(rlock_client_connect(&t.cl, 1000), RLOCK_OK);
    rh_tc_close(&t);

    /* POSIX adapter, unix socket */
    CHECK(rh_tc_open(&t, s, 1, NULL, NULL, NULL) == 0);
    basic_cycle(&t.cl, s, "basic:unix", "posix unix");
    rh_tc_close(&t);

    /* hiredis adapter on a program's own context */
    tv.tv_sec = 2;
    tv.tv_usec = 0;
    rc = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    CHECK(rc && !rc->err);
    if (rc && !rc->err) {
        rlock_hiredis_conn hc;
        rlock_node node;
        rlock_client cl;
        redisReply *r;
        CHECK_EQ_LL(rlock_hiredis_init(&hc, rc), 0);
        CHECK_EQ_ST(rlock_node_init(&node, rlock_hiredis_transport(&hc)), RLOCK_OK);
        {
            rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
            CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
        }
        basic_cycle(&cl, s, "basic:hiredis", "hiredis");
        /* the program's context still works between lock operations */
        r = (redisReply *)redisCommand(rc, "SET basic:hiredis:plain v");
        CHECK(reply_is(r, "OK"));
        r = (redisReply *)redisCommand(rc, "GET basic:hiredis:plain");
        CHECK(reply_is(r, "v"));
        r = (redisReply *)redisCommand(rc, "DEL basic:hiredis:plain");
        CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
        if (r) freeReplyObject(r);
        basic_cycle(&cl, s, "basic:hiredis", "hiredis after plain commands");
        /* The program's queued commands are never dropped: rlock refuses
         * before sending anything, says why, and the program's SET still
         * reaches Redis; then rlock works again. Twice: unsent (in hiredis'
         * output buffer), then sent but its reply unread on the socket. */
        {
            rlock_lock lk;
            void *vr = NULL;
            int k;
            CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "basic:hiredis:lk", 16, RLOCK_KIND_SIMPLE), RLOCK_OK);
            for (k = 0; k < 2; k++) {
                int done = 0;
                CHECK_EQ_LL(redisAppendCommand(rc, "SET basic:hiredis:queued v%d", k), REDIS_OK);
                if (k == 1) {
                    while (!done) CHECK_EQ_LL(redisBufferWrite(rc, &done), REDIS_OK);
                    rh_sleep_ms(50); /* the reply is on the socket */
                }
                CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_E_IO);
                CHECK_MSG(strstr(rlock_node_error(&node), k == 0 ? "unsent" : "unread") != NULL, "node error: %s",
                          rlock_node_error(&node));
                CHECK_EQ_LL(rh_int(s, "EXISTS basic:hiredis:lk"), 0); /* nothing of rlock's was sent */
                CHECK_EQ_LL(rc->err, 0);
                CHECK_EQ_LL(redisGetReply(rc, &vr), REDIS_OK);
                CHECK(reply_is((redisReply *)vr, "OK"));
                vr = NULL;
                {
                    char want[16], got[16];
                    snprintf(want, sizeof want, "v%d", k);
                    CHECK(rh_str(s, got, sizeof got, "GET basic:hiredis:queued") == REDIS_REPLY_STRING &&
                          strcmp(got, want) == 0);
                }
                CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
                CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
            }
            r = (redisReply *)redisCommand(rc, "DEL basic:hiredis:queued");
            CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
            if (r) freeReplyObject(r);
        }
        rlock_client_close(&cl); /* closes rc's socket and marks the context */
        CHECK(rc->err != 0);
        redisFree(rc);
    } else if (rc) {
        redisFree(rc);
    }
}

/* ------------------------------------------------------ 2. script SHAs */

static void test_script_shas(const rh_server *s) {
    int id;
    char buf[128];
    for (id = 0; id < RLOCK_SCRIPT_COUNT; id++) {
        const char *text = rlock_script_text(id), *sha = rlock_script_sha(id);
        CHECK(text && sha);
        if (!text || !sha) continue;
        CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT LOAD %s", text), REDIS_REPLY_STRING);
        CHECK_MSG(strcmp(buf, sha) == 0, "script %d: server sha %s, rlock says %s", id, buf, sha);
    }
    CHECK(rlock_script_text(RLOCK_SCRIPT_COUNT) == NULL);
    CHECK(rlock_script_sha(-1) == NULL);
}

/* --------------------------------------------- 3. mutual exclusion (fork) */

#define MUTEX_PROCS 8

/* Child body. Exit code: 0 fine, 1 overlap seen, 2 lock errors, 3 setup. */
static int mutex_child(const rh_server *s, const char *dir, int rounds) {
    rh_tconn t;
    rlock_lock lk;
    char marker[300], counter[300];
    int i, overlaps = 0, errors = 0;
    snprintf(marker, sizeof marker, "%s/inside", dir);
    snprintf(counter, sizeof counter, "%s/counter", dir);
    if (tc_tcp(&t, s) != 0 || rlock_lock_init(&lk, &t.cl, "mutex:key", 9, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 3;
    for (i = 0; i < rounds; i++) {
        rlock_status st = rlock_acquire(&lk, 5000, 30000);
        if (st != RLOCK_OK) {
            fprintf(stderr, "mutex child %ld: acquire: %s (%s)\n", (long)getpid(),
                    rlock_status_str(st), rlock_node_error(&t.node));
            errors++;
            continue;
        }
        if (mkdir(marker, 0700) != 0) {
            if (errno == EEXIST) overlaps++;
            else errors++;
        } else {
            char buf[32];
            long v = 0;
            ssize_t n;
            int fd = open(counter, O_RDWR);
            if (fd < 0) errors++;
            else {
                n = read(fd, buf, sizeof buf - 1);
                if (n > 0) { buf[n] = 0; v = strtol(buf, NULL, 10); }
                rh_sleep_ms(1); /* the window a lost update needs */
                n = snprintf(buf, sizeof buf, "%ld\n", v + 1);
                if (pwrite(fd, buf, (size_t)n, 0) != n) errors++;
                close(fd);
            }
            if (rmdir(marker) != 0) errors++;
        }
        st = rlock_release(&lk);
        if (st != RLOCK_OK) {
            fprintf(stderr, "mutex child %ld: release: %s\n", (long)getpid(), rlock_status_str(st));
            errors++;
        }
    }
    rh_tc_close(&t);
    return overlaps ? 1 : errors ? 2 : 0;
}

static void test_mutex(const rh_server *s) {
    char dir[] = "/tmp/rlock-mutex-XXXXXX", path[300], buf[32];
    pid_t pids[MUTEX_PROCS];
    int i, fd, rounds = quick ? 10 : 30, ok_children = 0;
    unsigned long long t0;
    long v = -1;

    if (!mkdtemp(dir)) { CHECK_MSG(0, "mkdtemp: %s", strerror(errno)); return; }
    snprintf(path, sizeof path, "%s/counter", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) { CHECK(write(fd, "0\n", 2) == 2); close(fd); }
    fflush(stdout);
    fflush(stderr);
    t0 = rh_now_ms();
    for (i = 0; i < MUTEX_PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(mutex_child(s, dir, rounds));
        CHECK(pids[i] > 0);
    }
    for (i = 0; i < MUTEX_PROCS; i++) {
        int st;
        if (pids[i] <= 0) continue;
        st = rh_wait_child(pids[i], 120000);
        CHECK_MSG(rh_exited_with(st, 0), "mutex child %d: status 0x%x (1 = overlap, 2 = lock error)", i,
                  (unsigned)st);
        if (rh_exited_with(st, 0)) ok_children++;
    }
    printf("mutex: %d processes x %d critical sections in %lld ms\n", MUTEX_PROCS, rounds, since(t0));
    CHECK_EQ_LL(ok_children, MUTEX_PROCS);
    fd = open(path, O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n > 0) { buf[n] = 0; v = strtol(buf, NULL, 10); }
        close(fd);
    }
    CHECK_EQ_LL(v, (long long)MUTEX_PROCS * rounds);
    CHECK_EQ_LL(rh_int(s, "EXISTS mutex:key"), 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/inside", dir);
    CHECK(access(path, F_OK) != 0); /* no marker left behind */
    rmdir(path);
    CHECK(rmdir(dir) == 0);
}

/* ------------------------------------------------- 4. token safety */

static void test_token_safety(const rh_server *s) {
    rlock_config cfg = cfg_node_timeout(250); /* below the 300 ms TTLs */
    rh_tconn a, b;
    rlock_lock la, lb;
    char btok[RLOCK_TOKEN_LEN + 1];
    unsigned long cmds;

    CHECK(rh_tc_open(&a, s, 0, &cfg, NULL, NULL) == 0);
    CHECK(rh_tc_open(&b, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&la, &a.cl, "safety:key", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lb, &b.cl, "safety:key", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* A is "paused" past its TTL; B takes the lock meanwhile */
    CHECK_EQ_ST(rlock_acquire(&la, 300, 0), RLOCK_OK);
    rh_sleep_ms(450);
    CHECK_EQ_LL(rlock_validity_ms(&la), 0);
    CHECK_EQ_ST(rlock_acquire(&lb, 5000, 0), RLOCK_OK);
    memcpy(btok, rlock_lock_token(&lb), sizeof btok);
    CHECK_EQ_ST(rlock_extend(&la, 300), RLOCK_LOST);
    CHECK(rlock_lock_state(&la) == RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_extend(&la, 300), RLOCK_LOST); /* stays lost */
    CHECK_EQ_ST(rlock_release(&la), RLOCK_LOST);
    CHECK(rlock_lock_state(&la) != RLOCK_STATE_HELD);
    CHECK_EQ_LL(rlock_hold_count(&la), 0);
    CHECK_EQ_ST(rlock_release(&la), RLOCK_NOT_HELD);
    CHECK(key_is(s, "safety:key", btok)); /* B's lock untouched */
    CHECK(rh_int(s, "PTTL safety:key") > 4000);
    CHECK_EQ_ST(rlock_release(&lb), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS safety:key"), 0);

    /* The key changes hands while A's local validity still runs (someone
     * deleted it): the owner check on the server says LOST. */
    CHECK_EQ_ST(rlock_acquire(&la, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "DEL safety:key"), 1);
    CHECK_EQ_ST(rlock_acquire(&lb, 10000, 0), RLOCK_OK);
    memcpy(btok, rlock_lock_token(&lb), sizeof btok);
    cmds = rlock_node_commands(&a.node);
    CHECK_EQ_ST(rlock_extend(&la, 10000), RLOCK_LOST);
    CHECK(rlock_node_commands(&a.node) > cmds); /* it asked the server */
    CHECK(rlock_lock_state(&la) == RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_release(&la), RLOCK_LOST);
    CHECK(key_is(s, "safety:key", btok));
    CHECK_EQ_ST(rlock_release(&lb), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS safety:key"), 0);
    rh_tc_close(&a);
    rh_tc_close(&b);
}

/* Child: acquire (ttl 300), report on the pipe, extend every 100 ms.
 * Exit 0 when extend reported LOST and the release after it too. */
static int sigstop_child(const rh_server *s, int wfd) {
    rlock_config cfg = cfg_node_timeout(250); /* below the 300 ms TTL */
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    char c;
    int i, lost = 0, rc = 0;
    if (rh_tc_open(&t, s, 0, &cfg, NULL, NULL) != 0 ||
        rlock_lock_init(&lk, &t.cl, "sigstop:key", 11, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    st = rlock_acquire(&lk, 300, 2000);
    c = st == RLOCK_OK ? 'A' : 'F';
    if (write(wfd, &c, 1) != 1 || st != RLOCK_OK) { rh_tc_close(&t); return 11; }
    close(wfd);
    for (i = 0; i < 100 && !lost; i++) {
        rh_sleep_ms(100);
        st = rlock_extend(&lk, 300);
        if (st == RLOCK_LOST) lost = 1;
        /* other errors: keep trying; the validity check ends it as LOST */
    }
    if (!lost) rc = 12;
    else if (rlock_lock_state(&lk) != RLOCK_STATE_LOST) rc = 13;
    else if (rlock_release(&lk) != RLOCK_LOST) rc = 14;
    rh_tc_close(&t);
    return rc;
}

static void test_sigstop(const rh_server *s) {
    int pfd[2], status;
    pid_t pid;
    char c = 0;
    rh_tconn t;
    rlock_lock lk;
    unsigned long long t0;

    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(sigstop_child(s, pfd[1]));
    }
    CHECK(pid > 0);
    close(pfd[1]);
    if (pid < 0) { close(pfd[0]); return; }
    CHECK(rh_read_full(pfd[0], &c, 1, 10000) == 0 && c == 'A');
    close(pfd[0]);
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "sigstop:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
    if (c == 'A') {
        rh_sleep_ms(120); /* let it be somewhere in its extend loop */
        CHECK_EQ_ST(rlock_try_acquire(&lk, 5000), RLOCK_NOT_ACQUIRED); /* it is alive and holding */
        kill(pid, SIGSTOP);
        t0 = rh_now_ms();
        /* while it is stopped its lease runs out and we take the lock */
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 3000), RLOCK_OK);
        CHECK_MSG(since(t0) < 600, "took the lock %lld ms after SIGSTOP", since(t0));
        while (since(t0) < 600) rh_sleep_ms(10);
        kill(pid, SIGCONT);
    }
    status = rh_wait_child(pid, 20000);
    CHECK_MSG(rh_exited_with(status, 0), "SIGSTOP child: status 0x%x (12: never LOST, 13: state, "
              "14: release not LOST)", (unsigned)status);
    if (c == 'A') {
        CHECK(key_is(s, "sigstop:key", rlock_lock_token(&lk))); /* never deleted by the child */
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    }
    CHECK_EQ_LL(rh_int(s, "EXISTS sigstop:key"), 0);
    rh_tc_close(&t);
}

/* ------------------------------------------------------- 5. reentrancy */

static void test_reentrant(const rh_server *s) {
    rlock_config cfg = cfg_node_timeout(150); /* below the 200 ms TTL used here */
    rh_tconn a, b;
    rlock_lock ra, rb;
    char buf[64];
    long long i, pttl;
    unsigned long cmds;
    unsigned long long t0;
    const char *key = "re:key";

    CHECK(rh_tc_open(&a, s, 0, &cfg, NULL, NULL) == 0);
    CHECK(rh_tc_open(&b, s, 0, &cfg, NULL, NULL) == 0);
    CHECK(strlen(rlock_client_instance_id(&a.cl)) == 16 &&
          strcmp(rlock_client_instance_id(&a.cl), rlock_client_instance_id(&b.cl)) != 0);
    CHECK_EQ_ST(rlock_lock_init(&ra, &a.cl, key, strlen(key), RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&rb, &b.cl, key, strlen(key), RLOCK_KIND_REENTRANT), RLOCK_OK);

    for (i = 1; i <= 3; i++) {
        CHECK_EQ_ST(rlock_acquire(&ra, 5000, 0), RLOCK_OK);
        CHECK_EQ_LL(rlock_hold_count(&ra), i);
    }
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "HGET %s %s", key, rlock_lock_token(&ra)), REDIS_REPLY_STRING);
    CHECK_MSG(strcmp(buf, "3") == 0, "HGET owner = '%s'", buf);
    CHECK_EQ_LL(rh_int(s, "HLEN %s", key), 2); /* the count and the first hold's record (RLOCK__LUA_RECORD) */

    /* another owner: refused, and its release sends nothing */
    CHECK_EQ_ST(rlock_try_acquire(&rb, 5000), RLOCK_NOT_ACQUIRED);
    CHECK(strcmp(rlock_lock_token(&ra), rlock_lock_token(&rb)) != 0);
    CHECK_EQ_LL(rlock_hold_count(&rb), 0);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&rb, 5000, 200), RLOCK_TIMEOUT);
    CHECK_MSG(since(t0) >= 150 && since(t0) < 2000, "timed wait took %lld ms", since(t0));
    cmds = rlock_node_commands(&b.node);
    CHECK_EQ_ST(rlock_release(&rb), RLOCK_NOT_HELD);
    CHECK_EQ_LL(rlock_node_commands(&b.node), cmds);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "HGET %s %s", key, rlock_lock_token(&ra)), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "3") == 0);

    /* extend keeps the count */
    CHECK_EQ_ST(rlock_extend(&ra, 8000), RLOCK_OK);
    pttl = rh_int(s, "PTTL %s", key);
    CHECK_MSG(pttl > 6000 && pttl <= 8000, "PTTL %lld after reentrant extend(8000)", pttl);
    CHECK_EQ_LL(rlock_hold_count(&ra), 3);

    for (i = 2; i >= 0; i--) {
        CHECK_EQ_ST(rlock_release(&ra), RLOCK_OK);
        CHECK_EQ_LL(rlock_hold_count(&ra), i);
        CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), i > 0 ? 1 : 0);
    }
    CHECK(rlock_lock_state(&ra) == RLOCK_STATE_IDLE);
    cmds = rlock_node_commands(&a.node);
    CHECK_EQ_ST(rlock_release(&ra), RLOCK_NOT_HELD); /* over-release */
    CHECK_EQ_LL(rlock_node_commands(&a.node), cmds);
    CHECK_EQ_LL(rlock_hold_count(&ra), 0);

    /* release after the hash expired: LOST, count never negative */
    CHECK_EQ_ST(rlock_acquire(&ra, 200, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&ra, 200, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&ra), 2);
    rh_sleep_ms(350);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    CHECK_EQ_ST(rlock_release(&ra), RLOCK_LOST);
    CHECK_EQ_LL(rlock_hold_count(&ra), 0);
    CHECK(rlock_lock_state(&ra) != RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_release(&ra), RLOCK_NOT_HELD);
    CHECK_EQ_LL(rlock_hold_count(&ra), 0);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);

    /* a waiter's sleep is bounded by the holder's PTTL */
    CHECK_EQ_ST(rlock_acquire(&ra, 300, 0), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&rb, 5000, 2000), RLOCK_OK);
    CHECK_MSG(since(t0) >= 200 && since(t0) < 1500, "acquired %lld ms after a ttl-300 holder", since(t0));
    CHECK_EQ_LL(rlock_hold_count(&rb), 1);
    CHECK_EQ_ST(rlock_release(&ra), RLOCK_LOST); /* A's hold expired: B's hold untouched */
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "HGET %s %s", key, rlock_lock_token(&rb)), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "1") == 0);
    CHECK_EQ_LL(rh_int(s, "HLEN %s", key), 2);
    CHECK_EQ_ST(rlock_release(&rb), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0); /* the record went with it */
    rh_tc_close(&a);
    rh_tc_close(&b);
}

/* --------------------------------------------------------- 6. NOSCRIPT */

static void test_noscript(const rh_server *s) {
    rh_tconn t;
    rlock_lock lk, re;
    char buf[64];
    unsigned long c0;
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);

    /* The uncontended fast path needs no script: one plain SET NX PX, once a
     * script has run on the node (the first acquire is one). */
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "ns:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    c0 = rlock_node_commands(&t.node);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 1);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(0)), 0);
    CHECK(rh_int(s, "PTTL ns:key") > 4000);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS ns:key"), 0);
    rh_tc_close(&t);

    /* Scripts only (cfg.scripts_only): each script falls back to EVAL once. */
    cfg.scripts_only = 1;
    CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "ns:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&re, &t.cl, "ns:re", 5, RLOCK_KIND_REENTRANT), RLOCK_OK);

    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(0)), 0);
    c0 = rlock_node_commands(&t.node);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 2); /* EVALSHA, then EVAL once */
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(0)), 1);

    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_extend(&lk, 6000), RLOCK_OK);
    CHECK(rh_int(s, "PTTL ns:key") > 5000);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(1)), 1);

    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS ns:key"), 0);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(2)), 1);

    /* the flush before release also dropped acquire's and extend's scripts:
     * one fallback each, then every op is a single EVALSHA again */
    c0 = rlock_node_commands(&t.node);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 4);
    c0 = rlock_node_commands(&t.node);
    CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 4);
    CHECK_EQ_LL(rh_int(s, "EXISTS ns:key"), 0);

    /* reentrant scripts too */
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_acquire(&re, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(3)), 1);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_extend(&re, 5000), RLOCK_OK);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(4)), 1);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SCRIPT FLUSH"), REDIS_REPLY_STATUS);
    CHECK_EQ_ST(rlock_release(&re), RLOCK_OK);
    CHECK_EQ_LL(script_exists(s, rlock_script_sha(5)), 1);
    CHECK_EQ_LL(rh_int(s, "EXISTS ns:re"), 0);
    rh_tc_close(&t);
}

/* ---------------------------------------- 7. WRONGTYPE / foreign keys */

static void test_wrongtype(const rh_server *s) {
    rh_tconn t;
    rlock_lock lk;
    char buf[64];
    unsigned long long t0;
    rlock_status st;

    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_LL(rh_int(s, "HSET wt:hash f 1"), 1);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "SET wt:str v"), REDIS_REPLY_STATUS);
    CHECK(key_is(s, "wt:str", "v"));

    /* simple lock on a hash */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wt:hash", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 5000, 2000);
    CHECK_EQ_ST(st, RLOCK_E_WRONGTYPE);
    CHECK_MSG(since(t0) < 500, "WRONGTYPE took %lld ms (spinning?)", since(t0));
    CHECK_MSG(strstr(rlock_node_error(&t.node), "WRONGTYPE") != NULL, "error '%s'", rlock_node_error(&t.node));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "HGET wt:hash f"), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "1") == 0);
    CHECK_EQ_LL(rh_int(s, "HLEN wt:hash"), 1);
    CHECK_EQ_LL(rh_int(s, "PTTL wt:hash"), -1);
    rlock_lock_destroy(&lk);

    /* simple lock on a string without a TTL: not ours */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wt:str", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_FOREIGN);
    CHECK_MSG(since(t0) < 500, "FOREIGN took %lld ms (spinning?)", since(t0));
    CHECK(key_is(s, "wt:str", "v"));
    CHECK_EQ_LL(rh_int(s, "PTTL wt:str"), -1);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_NOT_HELD);
    CHECK(key_is(s, "wt:str", "v"));
    rlock_lock_destroy(&lk);

    /* reentrant lock on a string */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wt:str", 6, RLOCK_KIND_REENTRANT), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_WRONGTYPE);
    CHECK_MSG(since(t0) < 500, "reentrant WRONGTYPE took %lld ms", since(t0));
    CHECK(key_is(s, "wt:str", "v"));
    CHECK_EQ_LL(rh_int(s, "PTTL wt:str"), -1);
    rlock_lock_destroy(&lk);

    /* reentrant lock on a foreign hash without a TTL */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wt:hash", 7, RLOCK_KIND_REENTRANT), RLOCK_OK);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_FOREIGN);
    CHECK_MSG(since(t0) < 500, "reentrant FOREIGN took %lld ms", since(t0));
    CHECK_EQ_LL(rh_int(s, "HLEN wt:hash"), 1);
    CHECK_EQ_LL(rh_int(s, "PTTL wt:hash"), -1);
    rlock_lock_destroy(&lk);

    /* the connection is still good after the errors */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wt:fine", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "DEL wt:hash wt:str"), 2);
    rh_tc_close(&t);
}

/* ------------------------------------- 8. server paused / killed / kicked */

static void test_server_faults(rh_server *s) {
    rlock_config cfg = cfg_node_timeout(200);
    rh_tconn ft, t;
    rlock_lock lk;
    unsigned long long t0;
    rlock_status st;
    long long dt, killed;

    /* ft: a 200 ms per-node timeout, for the paused and killed server */
    CHECK(rh_tc_open(&ft, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &ft.cl, "fault:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 3000), RLOCK_OK); /* connection is up */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);

    /* paused server: the per-node timeout fires */
    rh_server_pause(s);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 1000, 0);
    dt = since(t0);
    rh_server_resume(s);
    CHECK_EQ_ST(st, RLOCK_E_IO);
    CHECK_MSG(dt >= 150 && dt < 1000, "acquire on a paused server returned after %lld ms", dt);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    /* the next acquire must not read the late reply as its own answer; a
     * late SET from the timed-out attempt may hold the key for <= 1 s */
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 3000), RLOCK_OK);
    CHECK(key_is(s, "fault:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS fault:key"), 0);

    /* killed server: prompt IO error; restarted on the same port: reconnect */
    rh_server_kill9(s);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 1000, 0);
    dt = since(t0);
    CHECK_EQ_ST(st, RLOCK_E_IO);
    CHECK_MSG(dt < 1000, "acquire on a dead server took %lld ms", dt);
    CHECK_MSG(rh_server_restart(s, NULL) == 0, "restart on port %d", s->port);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 3000), RLOCK_OK);
    CHECK(key_is(s, "fault:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rlock_lock_destroy(&lk);
    rh_tc_close(&ft);

    /* the server kills the connection between operations (FAULTS 25): the
     * next operation - even an extend or release, which never retry -
     * reconnects and succeeds */
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "fault:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    killed = rh_int(s, "CLIENT KILL TYPE normal");
    CHECK_MSG(killed >= 1, "CLIENT KILL killed %lld", killed);
    rh_sleep_ms(20);
    st = rlock_extend(&lk, 5000);
    CHECK_MSG(st == RLOCK_OK, "extend after CLIENT KILL: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    CHECK_EQ_LL(rh_int(s, "CLIENT KILL TYPE normal") >= 1, 1);
    rh_sleep_ms(20);
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK, "release after CLIENT KILL: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    CHECK_EQ_LL(rh_int(s, "CLIENT KILL TYPE normal") >= 1, 1);
    rh_sleep_ms(20);
    st = rlock_acquire(&lk, 5000, 0);
    CHECK_MSG(st == RLOCK_OK, "acquire after CLIENT KILL: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS fault:key"), 0);

    /* idle timeout on the server side closes the connection */
    {
        char buf[32];
        CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "CONFIG SET timeout 1"), REDIS_REPLY_STATUS);
        CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
        rh_sleep_ms(2600);
        st = rlock_release(&lk);
        CHECK_MSG(st == RLOCK_OK, "release after an idle timeout: %s (%s)", rlock_status_str(st),
                  rlock_node_error(&t.node));
        CHECK_EQ_LL(rh_str(s, buf, sizeof buf, "CONFIG SET timeout 0"), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_int(s, "EXISTS fault:key"), 0);
    }
    rh_tc_close(&t);

    /* the hiredis adapter reconnects through redisReconnect */
    {
        struct timeval tv;
        redisContext *rc;
        tv.tv_sec = 2;
        tv.tv_usec = 0;
        rc = redisConnectWithTimeout("127.0.0.1", s->port, tv);
        CHECK(rc && !rc->err);
        if (rc && !rc->err) {
            rlock_hiredis_conn hc;
            rlock_node node;
            rlock_client cl;
            CHECK_EQ_LL(rlock_hiredis_init(&hc, rc), 0);
            CHECK_EQ_ST(rlock_node_init(&node, rlock_hiredis_transport(&hc)), RLOCK_OK);
            rlock_config hcfg = cfg_node_timeout(T_NODE_TIMEOUT);
            CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &hcfg), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "fault:hi", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
            CHECK(rh_int(s, "CLIENT KILL TYPE normal") >= 1);
            rh_sleep_ms(20);
            st = rlock_release(&lk);
            CHECK_MSG(st == RLOCK_OK, "hiredis release after CLIENT KILL: %s (%s / %s)",
                      rlock_status_str(st), rlock_node_error(&node), hc.err);
            CHECK_EQ_LL(rh_int(s, "EXISTS fault:hi"), 0);
            /* rlock dropped the connection at most once and reconnected it */
            rlock_client_close(&cl);
        }
        if (rc) redisFree(rc);
    }
}

/* ------------------------------------------------------------ 9. AUTH */

/* rh_int on the --requirepass pw server: AUTH first. -999 on any error. */
static long long auth_int(const rh_server *s, const char *cmd) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -999;
    if (!c) return v;
    r = (redisReply *)redisCommand(c, "AUTH pw");
    if (r) freeReplyObject(r);
    r = (redisReply *)redisCommand(c, cmd);
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* A holder whose ACL user may not publish releases while a pub/sub waiter
 * is queued: the release still succeeds (the wake-up PUBLISH is denied, the
 * waiter wakes by the holder's PTTL instead). */
static int nochan_waiter_child(const rh_server *s) {
    rh_tconn w;
    rlock_posix_conn sp;
    rlock_subscriber sn;
    rlock_lock lk;
    rlock_status st;
    int rc = 0;
    if (rh_tc_open(&w, s, 0, NULL, NULL, "pw") != 0 || rlock_posix_init_tcp(&sp, "127.0.0.1", s->port, 1000) != 0 ||
        rlock_subscriber_init(&sn, rlock_posix_transport(&sp)) != RLOCK_OK)
        return 3;
    sn.password = "pw";
    if (rlock_client_set_subscribers(&w.cl, &sn, 1) != RLOCK_OK) rc = 4;
    else if (rlock_lock_init(&lk, &w.cl, "auth:q", 6, RLOCK_KIND_SIMPLE) != RLOCK_OK) rc = 5;
    else if ((st = rlock_acquire(&lk, 3000, 6000)) != RLOCK_OK) {
        fprintf(stderr, "nochan waiter: %s (%s)\n", rlock_status_str(st), rlock_node_error(&w.node));
        rc = 1;
    } else if (rlock_release(&lk) != RLOCK_OK) rc = 2;
    rh_tc_close(&w);
    rlock_posix_close(&sp);
    return rc;
}

static void test_auth_nochan_waiter(const rh_server *s) {
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    pid_t pid;
    unsigned long long t0;
    CHECK(rh_tc_open(&t, s, 0, NULL, "nochan", "pw4") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:q", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 1500, 0), RLOCK_OK);
    pid = rh_fork();
    if (pid == 0) _exit(nochan_waiter_child(s));
    CHECK(pid > 0);
    /* until the waiter has queued itself (bounded: proceed anyway) */
    t0 = rh_now_ms();
    while (auth_int(s, "EXISTS {auth:q}:waiters") != 1 && since(t0) < 1000) rh_sleep_ms(10);
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK, "release with a queued waiter by a user without channels: %s (%s)",
              rlock_status_str(st), rlock_node_error(&t.node));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    if (pid > 0) {
        int status = rh_wait_child(pid, 20000);
        CHECK_MSG(rh_exited_with(status, 0), "nochan waiter child: status 0x%x", (unsigned)status);
    }
    CHECK_EQ_LL(auth_int(s, "EXISTS auth:q"), 0);
    rh_tc_close(&t);
}

static void test_auth(void) {
    static const char *const args[] = { "--requirepass", "pw", NULL };
    rh_server s;
    rh_tconn t;
    rlock_lock lk;
    redisContext *admin;
    unsigned long long t0;
    unsigned long c0;
    rlock_status st;
    int i;

    if (rh_server_start(&s, args) != 0) { CHECK_MSG(0, "start redis-server --requirepass"); return; }

    /* right password */
    CHECK(rh_tc_open(&t, &s, 0, NULL, NULL, "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&lk, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    /* re-AUTH after a reconnect (unix socket too) */
    rh_tc_close(&t);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rh_tc_close(&t);
    CHECK(rh_tc_open(&t, &s, 1, NULL, NULL, "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rh_tc_close(&t);

    /* wrong password: WRONGPASS, prompt, not retried, secret not in the error */
    CHECK(rh_tc_open(&t, &s, 0, NULL, NULL, "wrong-secret") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    c0 = rlock_node_commands(&t.node);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 5000, 2000);
    CHECK_EQ_ST(st, RLOCK_E_AUTH);
    CHECK_MSG(since(t0) < 500, "wrong password took %lld ms", since(t0));
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 2); /* AUTH + EVALSHA, once */
    CHECK_MSG(strstr(rlock_node_error(&t.node), "WRONGPASS") != NULL, "error '%s'", rlock_node_error(&t.node));
    CHECK(strstr(rlock_node_error(&t.node), "wrong-secret") == NULL);
    CHECK(strstr(t.pc.err, "wrong-secret") == NULL);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    rh_tc_close(&t);

    /* no password: NOAUTH */
    CHECK(rh_tc_open(&t, &s, 0, NULL, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    c0 = rlock_node_commands(&t.node);
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_AUTH);
    CHECK_MSG(since(t0) < 500, "no password took %lld ms", since(t0));
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 1);
    CHECK_MSG(strstr(rlock_node_error(&t.node), "NOAUTH") != NULL, "error '%s'", rlock_node_error(&t.node));
    rh_tc_close(&t);
    /* a reentrant lock's request is longer than the 10 elements Redis reads
     * from a client that did not AUTH ("Protocol error: unauthenticated
     * multibulk length"): the same status */
    CHECK(rh_tc_open(&t, &s, 0, NULL, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_AUTH);
    CHECK_MSG(strstr(rlock_node_error(&t.node), "unauthenticated") != NULL, "error '%s'", rlock_node_error(&t.node));
    rh_tc_close(&t);

    /* ACL users: one without scripting (EVAL nor FCALL: a user with FCALL
     * is served by functions, test_deploy), one outside its key pattern */
    admin = rh_connect(&s);
    CHECK(admin != NULL);
    if (admin) {
        CHECK(reply_is((redisReply *)redisCommand(admin, "AUTH pw"), "OK"));
        CHECK(reply_is((redisReply *)redisCommand(admin, "ACL SETUSER limited on >pw2 ~* +@all -evalsha -eval -fcall -fcall_ro"), "OK"));
        /* rlock's auxiliary keys/channels are "{key}:..." (same cluster slot) */
        CHECK(reply_is((redisReply *)redisCommand(admin, "ACL SETUSER keyed on >pw3 ~other:* ~{other:* allchannels +@all"), "OK"));
        /* Redis 7's default for new users: no pub/sub channels at all */
        CHECK(reply_is((redisReply *)redisCommand(admin, "ACL SETUSER nochan on >pw4 ~* resetchannels +@all"), "OK"));
        CHECK(reply_is((redisReply *)redisCommand(admin, "ACL SETUSER fnonly on >pw5 ~* allchannels +@all -evalsha -eval"), "OK"));
        redisFree(admin);
    }
    {   /* without scripts (cfg.scripts_only, as such a user should set) the
         * first acquire says so; with the fast path a plain SET gets the lock
         * and the owner-checked release is what is refused (never a bare DEL):
         * the lease then runs out */
        rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
        cfg.scripts_only = 1;
        CHECK(rh_tc_open(&t, &s, 0, &cfg, "limited", "pw2") == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        t0 = rh_now_ms();
        st = rlock_acquire(&lk, 5000, 2000);
        CHECK_EQ_ST(st, RLOCK_E_AUTH);
        CHECK_MSG(since(t0) < 500, "NOPERM took %lld ms", since(t0));
        CHECK_MSG(strstr(rlock_node_error(&t.node), "NOPERM") != NULL, "error '%s'", rlock_node_error(&t.node));
        printf("auth: ACL user without eval -> %s (%s)\n", rlock_status_str(st), rlock_node_error(&t.node));
        rh_tc_close(&t);
        /* Without scripts_only: the fast path's SET would get the key and
         * the release (a script) could not give it back. The fast path waits
         * until a script has run on the node, so the acquire is refused just
         * as cleanly, every time, and no key is left behind. */
        CHECK(rh_tc_open(&t, &s, 0, NULL, "limited", "pw2") == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        for (i = 0; i < 2; i++) {
            st = rlock_acquire(&lk, 1500, 0);
            CHECK_EQ_ST(st, RLOCK_E_AUTH);
            CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
            CHECK_EQ_LL(auth_int(&s, "EXISTS auth:key"), 0);
            CHECK_MSG(strstr(rlock_node_error(&t.node), "NOPERM") != NULL, "error '%s'", rlock_node_error(&t.node));
            CHECK_EQ_LL(auth_int(&s, "EXISTS auth:key"), 0);
        }
        printf("auth: ACL user without eval nor fcall, fast path on -> %s (%s), twice, no key left\n",
               rlock_status_str(st), rlock_node_error(&t.node));
        rh_tc_close(&t);
        /* A user refused EVAL/EVALSHA but not FCALL: the first acquire runs as
         * a function, so the fast path follows, and its release works. */
        CHECK(rh_tc_open(&t, &s, 0, NULL, "fnonly", "pw5") == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
        for (i = 0; i < 2; i++) {
            c0 = rlock_node_commands(&t.node);
            CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
            if (i == 1) CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 1); /* the SET NX PX */
            CHECK_EQ_LL(auth_int(&s, "EXISTS auth:key"), 1);
            CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
            CHECK_EQ_LL(auth_int(&s, "EXISTS auth:key"), 0);
        }
        rh_tc_close(&t);
    }

    CHECK(rh_tc_open(&t, &s, 0, NULL, "keyed", "pw3") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 5000, 2000);
    CHECK_EQ_ST(st, RLOCK_E_AUTH);
    CHECK_MSG(since(t0) < 500, "key-pattern NOPERM took %lld ms", since(t0));
    printf("auth: ACL user outside its key pattern -> %s (%s)\n", rlock_status_str(st), rlock_node_error(&t.node));
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "other:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK); /* inside its pattern: fine */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(auth_int(&s, "EXISTS other:key"), 0);
    rh_tc_close(&t);

    /* a user without channel permissions can still lock and unlock: a
     * release must not half-succeed (delete, then fail on a PUBLISH) */
    CHECK(rh_tc_open(&t, &s, 0, NULL, "nochan", "pw4") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK, "release by a user without channels: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    CHECK_EQ_LL(auth_int(&s, "EXISTS auth:key"), 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:re", 7, RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    st = rlock_release(&lk);
    CHECK_MSG(st == RLOCK_OK, "reentrant release by a user without channels: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    CHECK_EQ_LL(auth_int(&s, "EXISTS auth:re"), 0);
    rh_tc_close(&t);
    test_auth_nochan_waiter(&s);

    /* wrong ACL password */
    CHECK(rh_tc_open(&t, &s, 0, NULL, "limited", "nope") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "auth:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_E_AUTH);
    CHECK(strstr(rlock_node_error(&t.node), "nope") == NULL);
    rh_tc_close(&t);

    rh_server_stop(&s);
    CHECK_EQ_LL(s.pid, -1);
}

/* ------------------------------------------------------ 10. maxclients */

static void test_maxclients(const rh_server *s) {
    redisContext *hold = rh_connect(s);
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    unsigned long long t0;
    int fds0;

    CHECK(hold != NULL);
    if (!hold) return;
    CHECK(reply_is((redisReply *)redisCommand(hold, "CONFIG SET maxclients 1"), "OK"));
    fds0 = rh_count_fds();
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "maxc:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire(&lk, 5000, 0);
    CHECK_MSG(st == RLOCK_E_REDIS || st == RLOCK_E_IO, "maxclients: %s", rlock_status_str(st));
    printf("maxclients: acquire -> %s (%s)\n", rlock_status_str(st), rlock_node_error(&t.node));
    if (st == RLOCK_E_REDIS)
        CHECK(strstr(rlock_node_error(&t.node), "max number of clients") != NULL);
    /* with a wait it retries until the deadline, then says what went wrong */
    st = rlock_acquire(&lk, 5000, 300);
    CHECK_MSG(st == RLOCK_E_REDIS || st == RLOCK_E_IO, "maxclients with a wait: %s", rlock_status_str(st));
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    rh_tc_close(&t);
    /* Behind a password the same: Redis says "max number of clients" before
     * it reads AUTH, and that is not AUTH's refusal (RLOCK_E_AUTH would end
     * the wait at once): retried until the wait is over */
    CHECK(rh_tc_open(&t, s, 0, NULL, NULL, "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "maxc:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 5000, 300);
    CHECK_MSG(st == RLOCK_E_REDIS || st == RLOCK_E_IO, "maxclients behind a password: %s (%s)", rlock_status_str(st),
              rlock_node_error(&t.node));
    CHECK_MSG(since(t0) >= 290, "maxclients behind a password: gave up after %lld ms of a 300 ms wait", since(t0));
    if (st == RLOCK_E_REDIS) CHECK(strstr(rlock_node_error(&t.node), "max number of clients") != NULL);
    rh_tc_close(&t);
    CHECK_EQ_LL(rh_count_fds(), fds0);
    CHECK(reply_is((redisReply *)redisCommand(hold, "CONFIG SET maxclients 10000"), "OK"));
    redisFree(hold);
    CHECK_EQ_LL(rh_int(s, "EXISTS maxc:key"), 0);

    /* restored: works again */
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "maxc:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rh_tc_close(&t);
}

/* ------------------------------------------------- 11. OOM / READONLY */

static void test_oom_readonly(const rh_server *s) {
    static const char *const oom_args[] = { "--maxmemory", "1mb", "--maxmemory-policy", "noeviction", NULL };
    char portstr[16];
    const char *rep_args[4];
    rh_server o, r;
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    redisContext *c;
    int i, full = 0;
    static char big[16385];

    if (rh_server_start(&o, oom_args) == 0) {
        /* Fill with ever smaller values until even a tiny SET from a fresh
         * connection is refused (a big SET fails on its own query buffer
         * first, while small writes would still fit). */
        static const size_t sizes[] = { 16384, 1024, 64, 8 };
        int n = 0;
        size_t k;
        char probe[128];
        memset(big, 'x', sizeof big - 1);
        c = rh_connect(&o);
        CHECK(c != NULL);
        for (i = 0; c && i < 50 && !full; i++) {
            for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                int refused = 0;
                while (!refused && n < 20000) {
                    redisReply *rp = (redisReply *)redisCommand(c, "SET fill:%d %b", n++, big, sizes[k]);
                    if (!rp) break;
                    refused = rp->type == REDIS_REPLY_ERROR && strncmp(rp->str, "OOM", 3) == 0;
                    freeReplyObject(rp);
                }
            }
            full = rh_str(&o, probe, sizeof probe, "SET probe x") == REDIS_REPLY_ERROR &&
                   strncmp(probe, "OOM", 3) == 0;
        }
        CHECK_MSG(full, "could not fill a 1mb server (%d keys)", n);
        CHECK(tc_tcp(&t, &o) == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "oom:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
        st = rlock_acquire(&lk, 5000, 0);
        CHECK_EQ_ST(st, RLOCK_E_REDIS);
        CHECK_MSG(strncmp(rlock_node_error(&t.node), "OOM", 3) == 0, "error '%s'", rlock_node_error(&t.node));
        printf("oom: acquire -> %s (%s)\n", rlock_status_str(st), rlock_node_error(&t.node));
        CHECK_EQ_LL(rh_int(&o, "EXISTS oom:key"), 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "oom:re", 6, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_E_REDIS);
        CHECK_MSG(strncmp(rlock_node_error(&t.node), "OOM", 3) == 0, "error '%s'", rlock_node_error(&t.node));
        CHECK_EQ_LL(rh_int(&o, "EXISTS oom:re"), 0);
        rh_tc_close(&t);
        if (c) redisFree(c);
        rh_server_stop(&o);
    } else {
        CHECK_MSG(0, "start redis-server --maxmemory 1mb");
    }

    snprintf(portstr, sizeof portstr, "%d", s->port);
    rep_args[0] = "--replicaof";
    rep_args[1] = "127.0.0.1";
    rep_args[2] = portstr;
    rep_args[3] = NULL;
    if (rh_server_start(&r, rep_args) == 0) {
        CHECK(tc_tcp(&t, &r) == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "ro:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
        st = rlock_acquire(&lk, 5000, 0);
        CHECK_EQ_ST(st, RLOCK_E_REDIS);
        CHECK_MSG(strstr(rlock_node_error(&t.node), "READONLY") != NULL, "error '%s'", rlock_node_error(&t.node));
        printf("readonly: acquire -> %s (%s)\n", rlock_status_str(st), rlock_node_error(&t.node));
        CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
        rh_tc_close(&t);
        rh_server_stop(&r);
    } else {
        CHECK_MSG(0, "start redis-server --replicaof");
    }
}

/* -------------------------------------------- 12. non-blocking API */

/* Drive lk with rlock_step + poll() on the posix fd until it finishes. */
static rlock_status drive(rlock_lock *lk, rh_tconn *t, rlock_status st, unsigned budget_ms, int *polls) {
    unsigned long long end = rh_now_ms() + budget_ms;
    while (st == RLOCK_WOULD_BLOCK && rh_now_ms() < end) {
        struct pollfd p;
        int w;
        uint32_t to;
        st = rlock_step(lk);
        if (st != RLOCK_WOULD_BLOCK) break;
        w = rlock_node_wants(&t->node);
        to = rlock_next_timeout_ms(lk);
        p.fd = w ? t->pc.fd : -1;
        p.events = (short)(((w & RLOCK_WANT_READ) ? POLLIN : 0) | ((w & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        if (poll(&p, 1, to > 1000 ? 1000 : (int)to) < 0 && errno != EINTR) break;
        (*polls)++;
    }
    return st;
}

/* rlock_step's contract (rlock.h): after a *_begin, wait for
 * rlock_node_wants on the node's descriptor or rlock_next_timeout_ms,
 * whichever comes first, then step. Here waiting first: no descriptor to
 * watch is a plain sleep of the timeout (poll ignores fd -1). */
static rlock_status drive_wait_first(rlock_lock *lk, rh_tconn *t, rlock_status st, unsigned budget_ms) {
    unsigned long long end = rh_now_ms() + budget_ms;
    while (st == RLOCK_WOULD_BLOCK && rh_now_ms() < end) {
        struct pollfd p;
        int w = rlock_node_wants(&t->node);
        uint32_t to = rlock_next_timeout_ms(lk);
        p.fd = w ? t->pc.fd : -1;
        p.events = (short)(((w & RLOCK_WANT_READ) ? POLLIN : 0) | ((w & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        if (poll(&p, 1, to > 1000 ? 1000 : (int)to) < 0 && errno != EINTR) break;
        st = rlock_step(lk);
    }
    return st;
}

/* A connection not made yet (a fresh client, or one the server closed) has
 * no descriptor to watch: rlock_next_timeout_ms says 0 (step now, to
 * connect), as rlock_client_interest's timeout does - not the request's
 * node timeout, slept away before the request timed out unsent. */
static void test_wait_first_connect(const rh_server *s) {
    rlock_config cfg = cfg_node_timeout(250);
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    int i;
    CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "wf:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    for (i = 0; i < 2; i++) {
        if (i == 1) CHECK(rh_int(s, "CLIENT KILL TYPE normal") >= 1); /* rlock's connection (and rh_int's own) */
        st = rlock_acquire_begin(&lk, 5000, 0);
        CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
        CHECK_MSG(rlock_node_wants(&t.node) == 0 || t.pc.fd >= 0 || rlock_next_timeout_ms(&lk) == 0,
                  "%s: the node wants %d with no descriptor, and the next timeout is %lu ms", i ? "after CLIENT KILL"
                  : "a fresh client", rlock_node_wants(&t.node), (unsigned long)rlock_next_timeout_ms(&lk));
        st = drive_wait_first(&lk, &t, st, 5000);
        CHECK_MSG(st == RLOCK_OK, "%s: try-acquire by the documented loop: %s (%s)", i ? "after CLIENT KILL" :
                  "a fresh client", rlock_status_str(st), rlock_lock_error(&lk));
        if (st == RLOCK_OK) CHECK_EQ_ST(drive_wait_first(&lk, &t, rlock_release_begin(&lk), 5000), RLOCK_OK);
        CHECK_EQ_LL(rh_int(s, "EXISTS wf:key"), 0);
    }
    rh_tc_close(&t);
}

static void test_nonblocking(const rh_server *s) {
    rh_tconn t, h;
    rlock_lock lk, hl;
    rlock_status st;
    int polls = 0;
    unsigned long long t0;

    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "nb:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire_begin(&lk, 5000, 1000);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&lk, 5000, 1000), RLOCK_E_STATE); /* busy */
    st = drive(&lk, &t, st, 5000, &polls);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK(polls >= 1);
    CHECK(key_is(s, "nb:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_step(&lk), RLOCK_E_STATE); /* nothing in progress */
    CHECK_EQ_ST(drive(&lk, &t, rlock_extend_begin(&lk, 7000), 5000, &polls), RLOCK_OK);
    CHECK(rh_int(s, "PTTL nb:key") > 6000);
    CHECK_EQ_ST(drive(&lk, &t, rlock_release_begin(&lk), 5000, &polls), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS nb:key"), 0);

    /* contended: backoff phases (no fd wanted) are timed by rlock_next_timeout_ms */
    {
        rlock_config hcfg = cfg_node_timeout(250);
        CHECK(rh_tc_open(&h, s, 0, &hcfg, NULL, NULL) == 0);
    }
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "nb:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 300, 0), RLOCK_OK);
    polls = 0;
    t0 = rh_now_ms();
    st = drive(&lk, &t, rlock_acquire_begin(&lk, 5000, 2000), 5000, &polls);
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_MSG(since(t0) >= 200 && since(t0) < 1500, "non-blocking acquire took %lld ms", since(t0));
    CHECK_MSG(polls < 500, "%d polls for a 300 ms wait (busy loop?)", polls);
    CHECK(key_is(s, "nb:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_LOST);
    CHECK_EQ_ST(drive(&lk, &t, rlock_release_begin(&lk), 5000, &polls), RLOCK_OK);

    /* cancel mid-flight: the answer is awaited and what it granted released; the next op works */
    st = rlock_acquire_begin(&lk, 5000, 0);
    CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
    rlock_cancel(&lk);
    CHECK_EQ_ST(rlock_step(&lk), RLOCK_E_STATE);
    CHECK_EQ_LL(rh_int(s, "EXISTS nb:key"), 0); /* granted, then released by the cancel */
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 2000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rh_tc_close(&h);
    rh_tc_close(&t);
}

/* Begin lk's acquire of key and step it until the server has granted it
 * (the key exists) while its answer is still unread (rlock_step said
 * RLOCK_WOULD_BLOCK): an acquire in flight, its outcome unknown to the
 * program. 1 when there; else (a step read the answer first) 0, nothing
 * left held or in flight - try again. */
/* lk's acquire sent and granted on the server, its answer held back by the
 * gate (rlock cannot have read it): 1; 0 when the SET never landed. */
static int acquire_in_flight(rlock_lock *lk, rh_gconn *g, const rh_server *s, const char *key) {
    unsigned long long end = rh_now_ms() + 2000;
    rlock_status st;
    int out;
    g->gate = 1;
    st = rlock_acquire_begin(lk, 30000, 0);
    while (st == RLOCK_WOULD_BLOCK && rh_int(s, "EXISTS %s", key) != 1 && rh_now_ms() < end) {
        st = rlock_step(lk);
        rh_sleep_ms(2);
    }
    out = st == RLOCK_WOULD_BLOCK && rh_int(s, "EXISTS %s", key) == 1;
    g->gate = 0;
    return out;
}

/* rlock_lock_destroy with an acquire in flight (granted on the server, the
 * answer unread): no handle is left to release it, so destroy undoes it as
 * rlock_cancel does - the key is gone when destroy returns, not held for
 * its 30 s lease. The same after rlock_client_close (the answer lost: an
 * unknown outcome, released on a new connection - by destroy, or by the
 * op's own next steps, which report RLOCK_E_IO); with an acquire that
 * finished granted while the program stepped only the client (its result
 * never read: the program does not know it holds it); and with the
 * documented non-blocking way (rlock_cancel_begin, rlock_step until done,
 * then destroy, which then sends nothing). */
static void test_destroy_in_flight(const rh_server *s) {
    static const char *const how[5] = { "destroy", "close, then destroy", "finished unread, then destroy",
                                        "cancel_begin + step, then destroy", "close, then step until done" };
    rh_gconn t;
    rlock_lock lk, other;
    int i;
    CHECK(rh_gc_open(&t, s, 30000) == 0);
    CHECK_EQ_ST(rlock_lock_init(&other, &t.cl, "dif:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&other, 5000, 0), RLOCK_OK); /* (connected: HELLO answered) */
    CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
    for (i = 0; i < 5; i++) {
        int out;
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "dif:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
        out = acquire_in_flight(&lk, &t, s, "dif:key");
        CHECK_MSG(out, "%s: the acquire's SET did not land with its answer held back", how[i]);
        if (!out) break;
        if (i == 1 || i == 4) rlock_client_close(&t.cl);
        if (i == 4) { /* the op goes on after the close: its answer lost, it releases on a new connection */
            rlock_status st;
            unsigned long long end = rh_now_ms() + 3000;
            do {
                rh_sleep_ms(1);
                st = rlock_step(&lk);
            } while (st == RLOCK_WOULD_BLOCK && rh_now_ms() < end);
            CHECK_EQ_ST(st, RLOCK_E_IO); /* (the outcome it could not read) */
            CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
            CHECK_MSG(rh_int(s, "EXISTS dif:key") == 0, "%s: the grant in flight is left held (PTTL %lld)", how[i],
                      rh_int(s, "PTTL dif:key"));
        }
        if (i == 2) { /* the answer read by the client's step, the result left for rlock_step */
            unsigned long long end = rh_now_ms() + 2000;
            while (rlock_lock_state(&lk) != RLOCK_STATE_HELD && rh_now_ms() < end) {
                CHECK_EQ_ST(rlock_client_step(&t.cl), RLOCK_OK);
                rh_sleep_ms(1);
            }
            CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_HELD);
        }
        if (i == 3) {
            rlock_status st = rlock_cancel_begin(&lk);
            while (st == RLOCK_WOULD_BLOCK) {
                rh_sleep_ms(1);
                st = rlock_step(&lk);
            }
            CHECK_EQ_ST(st, RLOCK_OK);
            CHECK_EQ_LL(rh_int(s, "EXISTS dif:key"), 0);
        }
        rlock_lock_destroy(&lk);
        CHECK_MSG(rh_int(s, "EXISTS dif:key") == 0, "%s: the grant in flight is left held (PTTL %lld)", how[i],
                  rh_int(s, "PTTL dif:key"));
        CHECK_EQ_ST(rlock_acquire(&other, 5000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
    }
    /* a lock the program knows it holds is still not released by destroy
     * (documented: release first), an extend in flight or not */
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "dif:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend_begin(&lk, 6000), RLOCK_WOULD_BLOCK);
    rlock_lock_destroy(&lk);
    CHECK(rh_int(s, "PTTL dif:key") > 0);
    rh_int(s, "DEL dif:key");
    rh_gc_close(&t);
}

/* An extend whose answer has not come when the validity ends - held back
 * by the gate, then let through (its answer is there, late) or not - is
 * RLOCK_LOST at the first step after that end, not when its node timeout
 * (1 s, 400 ms later) ends it, although the server ran it and extended the
 * key (to 5 s). The lost lock's
 * release is still the owner-checked script with the token (or owner id)
 * the extend used: it removes that key, RLOCK_OK (README: still release a
 * lost lock). */
static void test_extend_late_lost(const rh_server *s) {
    static const char *const how[3] = { "simple, answer late", "simple, timed out", "reentrant, answer late" };
    rh_gconn t;
    rlock_lock lk;
    int i;
    CHECK(rh_gc_open(&t, s, 30000) == 0);
    for (i = 0; i < 3; i++) {
        rlock_status st = RLOCK_OK;
        unsigned long long end;
        long long pttl = 0;
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "xll:key", 7, i == 2 ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE),
                    RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 1500, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_extend(&lk, 1500), RLOCK_OK); /* (its script cached: no NOSCRIPT behind the gate) */
        /* extend with 600 ms of validity left: its node timeout (1 s) ends after the validity */
        while (rlock_validity_ms(&lk) > 600) rh_sleep_ms(5);
        t.gate = 1;
        st = rlock_extend_begin(&lk, 5000);
        end = rh_now_ms() + 3000;
        /* until it ran on the server (a PTTL above the first lease), while the validity lasts */
        while (st == RLOCK_WOULD_BLOCK && (pttl = rh_int(s, "PTTL xll:key")) <= 1500 && rh_now_ms() < end) {
            st = rlock_step(&lk);
            rh_sleep_ms(2);
        }
        CHECK_MSG(st == RLOCK_WOULD_BLOCK && pttl > 1500, "%s: the extend in flight (%s), PTTL %lld", how[i],
                  rlock_status_str(st), pttl);
        while (st == RLOCK_WOULD_BLOCK && rlock_validity_ms(&lk) > 0 && rh_now_ms() < end) {
            st = rlock_step(&lk);
            rh_sleep_ms(2);
        }
        /* (a step at the very end may have said LOST: the same) */
        CHECK_MSG(rlock_validity_ms(&lk) == 0 && (st == RLOCK_WOULD_BLOCK || st == RLOCK_LOST), "%s: the extend ended (%s) with %lld ms of validity left", how[i],
                  rlock_status_str(st), rlock_validity_ms(&lk));
        if (i != 1) t.gate = 0; /* its answer now, after the validity */
        if (st == RLOCK_WOULD_BLOCK) st = rlock_step(&lk); /* the first step with the validity gone */
        t.gate = 0;
        CHECK_MSG(st == RLOCK_LOST, "%s: extend said %s with the validity gone (the node timeout ~400 ms on)", how[i],
                  rlock_status_str(st));
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_LOST);
        CHECK_MSG(rh_int(s, "PTTL xll:key") > 1500, "%s: the key was not extended", how[i]);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        CHECK_MSG(rh_int(s, "EXISTS xll:key") == 0, "%s: the lost lock's release left the key (PTTL %lld)", how[i],
                  rh_int(s, "PTTL xll:key"));
        rh_int(s, "DEL xll:key");
    }
    rh_gc_close(&t);
}

/* ------------------------------- many locks on one client (pipelining) */

/* Lines of CLIENT LIST: the connections the server has now (this query's own
 * included). */
static int client_count(const rh_server *s) {
    char buf[16384];
    int n = 0;
    const char *p;
    if (rh_str(s, buf, sizeof buf, "CLIENT LIST") != REDIS_REPLY_STRING && buf[0] == '\0') return -1;
    for (p = buf; *p; p++) n += *p == '\n';
    return n;
}

/* Child: hold pipe:b for ~300 ms from its own process, then release. */
static int pipe_holder_child(const rh_server *s, int wfd) {
    rh_tconn h;
    rlock_lock hl;
    if (tc_tcp(&h, s) != 0) return 2;
    if (rlock_lock_init(&hl, &h.cl, "pipe:b", 6, RLOCK_KIND_SIMPLE) != RLOCK_OK) return 3;
    if (rlock_acquire(&hl, 5000, 0) != RLOCK_OK) return 4;
    if (write(wfd, "h", 1) != 1) return 5;
    rh_sleep_ms(300);
    if (rlock_release(&hl) != RLOCK_OK) return 6;
    rh_tc_close(&h);
    return 0;
}

/* The clock hook, counted: how often a blocking call reads the time. */
static unsigned long g_now_calls;
static uint64_t counted_now(void *u) { (void)u; g_now_calls++; return (uint64_t)rh_now_ms(); }

/* A blocking acquire that waits (refused: backoff between attempts) on a
 * client where another lock's non-blocking acquire finished meanwhile, its
 * result not collected yet (the app collects it after the blocking call):
 * the blocking call sleeps until its own next attempt. (Found by fuzz_locks,
 * driving blocking calls among other locks' ops: the finished op made
 * rlock_next_timeout_ms of the WAITING lock say 0 - "due now" - so the
 * blocking loop stepped without sleeping, reading the clock hundreds of
 * thousands of times for the whole wait: a busy loop, 100 % CPU.) */
static void test_blocking_beside_done_op(const rh_server *s) {
    rh_tconn t;
    rlock_config cfg;
    rlock_lock a, b;
    rlock_status st;
    unsigned long long t0;
    long long took_ms;
    unsigned long calls;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.now_ms = counted_now;
    CHECK_EQ_LL(rh_int(s, "DEL spin:a spin:b"), 0);
    {
        char ok[16];
        CHECK(rh_str(s, ok, sizeof ok, "SET spin:a someone-else PX 10000") == REDIS_REPLY_STATUS); /* held: a waits */
    }
    CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &t.cl, "spin:a", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &t.cl, "spin:b", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire_begin(&b, 5000, 0), RLOCK_WOULD_BLOCK); /* granted during a's wait */
    g_now_calls = 0;
    t0 = rh_now_ms();
    st = rlock_acquire(&a, 5000, 400);
    took_ms = since(t0);
    calls = g_now_calls;
    CHECK_MSG(st == RLOCK_TIMEOUT, "a: %s (%s)", rlock_status_str(st), rlock_node_error(&t.node));
    CHECK_EQ_ST(rlock_step(&b), RLOCK_OK); /* b's grant, collected now */
    CHECK(key_is(s, "spin:b", rlock_lock_token(&b)));
    /* a few reads per attempt (a dozen attempts in 400 ms at most) */
    CHECK_MSG(calls < 5000, "a blocking acquire waiting %lld ms read the clock %lu times (a busy loop)", took_ms, calls);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    rlock_lock_destroy(&a);
    rlock_lock_destroy(&b);
    rh_tc_close(&t);
    CHECK_EQ_LL(rh_int(s, "DEL spin:a"), 1);
}

/* Three locks on one client, driven from one poll() loop over its single
 * connection (rlock_client_interest / rlock_client_step, the descriptor
 * through the transport): their requests are pipelined and each reply
 * reaches its lock.
 * Two keys are free and granted at once; the third is held by another
 * process and granted after that process releases it. The server sees one
 * connection from this client, not three. */
static void test_pipelined_locks(const rh_server *s) {
    static const char *const keys[3] = { "pipe:a", "pipe:b", "pipe:c" };
    rh_tconn t;
    rlock_lock lk[3];
    rlock_status st[3];
    long long done_at[3];
    int fds[2], i, status = -1, base, during = -1, guard = 0;
    unsigned long gen = 0;
    unsigned long long t0;
    pid_t pid;
    CHECK(pipe(fds) == 0);
    base = client_count(s);
    pid = rh_fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(pipe_holder_child(s, fds[1]));
    }
    close(fds[1]);
    {
        char c;
        CHECK(rh_read_full(fds[0], &c, 1, 5000) == 0);
    }
    CHECK(tc_tcp(&t, s) == 0);
    t0 = rh_now_ms();
    for (i = 0; i < 3; i++) {
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &t.cl, keys[i], 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
        st[i] = rlock_acquire_begin(&lk[i], 5000, 3000);
        CHECK_EQ_ST(st[i], RLOCK_WOULD_BLOCK);
        done_at[i] = -1;
    }
    /* the event loop: rlock_client_interest says what to poll and for how
     * long, rlock_client_step drives all three, rlock_step(lk) collects */
    while ((st[0] == RLOCK_WOULD_BLOCK || st[1] == RLOCK_WOULD_BLOCK || st[2] == RLOCK_WOULD_BLOCK) &&
           ++guard < 100000 && rh_now_ms() < t0 + 5000) {
        rlock_interest it[4];
        struct pollfd p[4];
        uint32_t to = 0;
        size_t k, n = rlock_client_interest(&t.cl, it, 4, &to);
        CHECK(n <= 1); /* one connection for the three locks */
        for (k = 0; k < n && k < 4; k++) {
            CHECK(it[k].conn == (const void *)&t.node && (it[k].fd == t.pc.fd || (it[k].fd < 0 && to == 0)));
            CHECK(it[k].events != 0);
            if (gen == 0) gen = it[k].gen;
            CHECK_EQ_LL(it[k].gen, gen); /* never reconnected */
            p[k].fd = it[k].fd;
            p[k].events = (short)(((it[k].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                  ((it[k].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[k].revents = 0;
        }
        if (poll(p, (nfds_t)n, to > 1000 ? 1000 : (int)to) < 0 && errno != EINTR) break;
        CHECK_EQ_ST(rlock_client_step(&t.cl), RLOCK_OK);
        for (i = 0; i < 3; i++)
            if (st[i] == RLOCK_WOULD_BLOCK && (st[i] = rlock_step(&lk[i])) != RLOCK_WOULD_BLOCK) done_at[i] = since(t0);
        if (during < 0 && st[0] != RLOCK_WOULD_BLOCK && st[2] != RLOCK_WOULD_BLOCK && st[1] == RLOCK_WOULD_BLOCK)
            during = client_count(s); /* a and c held, b waiting: holder + this client + the query */
    }
    for (i = 0; i < 3; i++) {
        CHECK_MSG(st[i] == RLOCK_OK, "%s: %s (%s)", keys[i], rlock_status_str(st[i]), rlock_node_error(&t.node));
        CHECK(key_is(s, keys[i], rlock_lock_token(&lk[i])));
    }
    CHECK_MSG(done_at[0] >= 0 && done_at[1] > done_at[0] && done_at[1] > done_at[2] && done_at[1] >= 200,
              "a %lld ms, b %lld ms, c %lld ms", done_at[0], done_at[1], done_at[2]);
    CHECK_MSG(during == base + 2, "connections while waiting: %d, before %d (want one more for this client and "
              "one for the holder)", during, base);
    /* release all three at once, also pipelined */
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_release_begin(&lk[i]), RLOCK_WOULD_BLOCK);
    for (i = 0; i < 3; i++) CHECK_EQ_ST(drive(&lk[i], &t, RLOCK_WOULD_BLOCK, 5000, &guard), RLOCK_OK);
    for (i = 0; i < 3; i++) CHECK_EQ_LL(rh_int(s, "EXISTS %s", keys[i]), 0);
    status = rh_wait_child(pid, 5000);
    CHECK_MSG(rh_exited_with(status, 0), "holder child status 0x%x", status);
    printf("pipelined: 3 locks on one client over one connection; a %lld ms, c %lld ms, b (held by another "
           "process for 300 ms) %lld ms\n", done_at[0], done_at[2], done_at[1]);
    close(fds[0]);
    rh_tc_close(&t);
}

/* ------------------ many locks on one client: faults in the pipeline */

/* One rlock client on one node whose transport reads only while gate is 0,
 * and at most chunk bytes a call (0: as many as asked; 1: every reply split
 * at every byte). */
typedef struct mconn {
    rlock_posix_conn pc; /* first: the transport's ctx (&pc) is the mconn too */
    int gate;
    size_t chunk;
    long room;            /* bytes send may still take before it would block (< 0: any) */
    int connects;         /* connections begun */
    unsigned char sent[16384]; /* what went out, from mc_open on (as much as fits) */
    size_t sent_len;
    rlock_transport tr;
    rlock_node node;
    rlock_client cl;
} mconn;

static long mc_recv(void *ctx, unsigned char *buf, size_t n) {
    mconn *g = (mconn *)ctx;
    if (g->gate) return RLOCK_IO_WOULD_BLOCK;
    return g->pc.tr.recv(ctx, buf, g->chunk && n > g->chunk ? g->chunk : n);
}

static long mc_send(void *ctx, const unsigned char *buf, size_t n) {
    mconn *g = (mconn *)ctx;
    long r;
    if (g->room >= 0 && (size_t)g->room < n) n = (size_t)g->room;
    if (n == 0) return RLOCK_IO_WOULD_BLOCK;
    r = g->pc.tr.send(ctx, buf, n);
    if (r > 0) {
        size_t k = (size_t)r < sizeof g->sent - g->sent_len ? (size_t)r : sizeof g->sent - g->sent_len;
        memcpy(g->sent + g->sent_len, buf, k);
        g->sent_len += k;
        if (g->room >= 0) g->room -= r;
    }
    return r;
}

static int mc_connect(void *ctx) {
    mconn *g = (mconn *)ctx;
    g->connects += g->pc.fd < 0; /* (a connect that would block is called again until it is made) */
    return g->pc.tr.connect(ctx);
}

/* Did key go out (as an argument of any request) since mc_open? */
static int mc_sent_key(const mconn *g, const char *key) {
    char arg[40];
    size_t n = (size_t)snprintf(arg, sizeof arg, "\r\n%s\r\n", key), i;
    for (i = 0; i + n <= g->sent_len; i++)
        if (memcmp(g->sent + i, arg, n) == 0) return 1;
    return 0;
}

static int mc_open(mconn *g, const rh_server *s, int pubsub) {
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
    memset(g, 0, sizeof *g);
    if (rlock_posix_init_tcp(&g->pc, "127.0.0.1", s->port, 1000) != 0) return -1;
    g->tr = g->pc.tr;
    g->tr.recv = mc_recv;
    g->tr.send = mc_send;
    g->tr.connect = mc_connect;
    g->room = -1;
    cfg.pubsub = pubsub; /* (1: HELLO 3, RESP3 replies) */
    if (rlock_node_init(&g->node, &g->tr) != RLOCK_OK) return -1;
    return rlock_client_init(&g->cl, &g->node, 1, &cfg) == RLOCK_OK ? 0 : -1;
}

/* More locks than RLOCK_MAX_PIPELINE (32): the last ones wait for room. */
#define MANY 40
static char many_key[MANY][24];

/* The event loop of a program with n locks on g's client: poll what
 * rlock_client_interest says, rlock_client_step, rlock_result of each op
 * still running (st[i] RLOCK_WOULD_BLOCK). 1 when all ended in budget_ms. */
static int many_drive(mconn *g, rlock_lock *lk, rlock_status *st, int n, unsigned budget_ms) {
    unsigned long long end = rh_now_ms() + budget_ms;
    int i, left = 1;
    while (left && rh_now_ms() < end) {
        rlock_interest it[1];
        struct pollfd p[1];
        uint32_t to = 0;
        size_t k, m = rlock_client_interest(&g->cl, it, 1, &to);
        for (k = 0; k < m && k < 1; k++) {
            p[k].fd = it[k].fd;
            p[k].events = (short)(((it[k].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                  ((it[k].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[k].revents = 0;
        }
        if (poll(p, (nfds_t)(m < 1 ? m : 1), to > 100 ? 100 : (int)to) < 0 && errno != EINTR) break;
        CHECK_EQ_ST(rlock_client_step(&g->cl), RLOCK_OK);
        for (i = 0, left = 0; i < n; i++) {
            if (st[i] == RLOCK_WOULD_BLOCK) st[i] = rlock_result(&lk[i]);
            left |= st[i] == RLOCK_WOULD_BLOCK;
        }
    }
    return !left;
}

/* How many of the first n keys exist. */
static int many_held(const rh_server *s, int n) {
    int i, k = 0;
    for (i = 0; i < n; i++) k += rh_int(s, "EXISTS %s", many_key[i]) == 1;
    return k;
}

/* Begin op (0 acquire, 1 extend, 2 release) on lk[0..n) at once, gated
 * (gate: their answers held back until the caller opens it). */
static void many_begin(mconn *g, rlock_lock *lk, rlock_status *st, int n, int op, int gate) {
    int i;
    g->gate = gate;
    for (i = 0; i < n; i++) {
        st[i] = op == 0 ? rlock_acquire_begin(&lk[i], 10000, 0)
              : op == 1 ? rlock_extend_begin(&lk[i], 12000) : rlock_release_begin(&lk[i]);
        CHECK_EQ_ST(st[i], RLOCK_WOULD_BLOCK);
    }
}

/* Step g's client (gated) until the first n keys exist: every acquire
 * granted on the server, its answer unread. 1 when there. */
static int many_granted_unread(mconn *g, const rh_server *s, int n) {
    unsigned long long end = rh_now_ms() + 3000;
    while (many_held(s, n) != n && rh_now_ms() < end) {
        CHECK_EQ_ST(rlock_client_step(&g->cl), RLOCK_OK);
        rh_sleep_ms(2);
    }
    return many_held(s, n) == n;
}

/* MANY locks (simple and reentrant) on one client over one connection,
 * driven from one poll() loop, as a program with many locks would:
 * (1) every reply split at every byte (a recv that returns 1 byte), on
 * RESP2 and RESP3: acquire, extend, release of all 40 at once, each OK;
 * (2) one acquire cancelled while its request is in the middle of the
 * pipeline, granted on the server, the answers held back: its answer is
 * consumed and its grant released, the others' answers reach their own
 * locks (each holds its key with its own token);
 * (3) the connection killed (CLIENT KILL) with all 40 acquires in flight:
 * run by the server but not answered (CLIENT PAUSE WRITE held them), each
 * ends RLOCK_E_IO, IDLE, nothing left held, and the next round reconnects;
 * answered but unread (the gate held the replies), each is granted;
 * (4) a handle whose acquire is in flight re-initialised (rlock_lock_init):
 * RLOCK_E_STATE, nothing changed - cleared, it cut the client's list of
 * ops, so the locks begun before it never ended (their rlock_result said
 * RLOCK_WOULD_BLOCK forever) and its own grant was left with no handle;
 * (5) the program busy past the node timeout with 40 acquires begun (31
 * sent, 9 waiting for room in the pipeline), then a 41st begun: the sent
 * ones' answers are still theirs (granted), the 9 whose time ran out unsent
 * fail (RLOCK_E_IO) - and the 41st is granted: the 9 were queued with their
 * past deadline, which dropped the connection with its request on it
 * (RLOCK_E_IO "timeout" from a healthy server); so did any queued but not
 * yet sent when the stall began (test_stalled_program). */
static void test_many_locks(const rh_server *s) {
    mconn g;
    rlock_lock lk[MANY];
    rlock_status st[MANY];
    int i, p, op, tries;
    char buf[64];
    for (i = 0; i < MANY; i++) snprintf(many_key[i], sizeof many_key[i], "many:%d", i);
    /* (1) a byte at a time */
    for (p = 0; p < 2; p++) {
        CHECK(mc_open(&g, s, p) == 0);
        g.chunk = 1;
        for (i = 0; i < MANY; i++)
            CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, many_key[i], strlen(many_key[i]),
                                        i & 1 ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE), RLOCK_OK);
        for (op = 0; op < 3; op++) {
            many_begin(&g, lk, st, MANY, op, 0);
            CHECK_MSG(many_drive(&g, lk, st, MANY, 20000), "bytewise, RESP%d, op %d: not done", p ? 3 : 2, op);
            for (i = 0; i < MANY; i++)
                CHECK_MSG(st[i] == RLOCK_OK, "bytewise, RESP%d, op %d, lock %d: %s (%s)", p ? 3 : 2, op, i,
                          rlock_status_str(st[i]), rlock_node_error(&g.node));
            if (op == 1) CHECK(rh_int(s, "PTTL %s", many_key[MANY - 1]) > 10000);
        }
        CHECK_EQ_LL(many_held(s, MANY), 0);
        rlock_client_close(&g.cl);
        rlock_posix_close(&g.pc);
    }
    CHECK(mc_open(&g, s, 0) == 0);
    for (i = 0; i < MANY; i++)
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, many_key[i], strlen(many_key[i]), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_connect(&g.cl, 2000), RLOCK_OK);
    /* (2) cancel lock 2 of 5, all granted, answers unread */
    for (tries = 0; tries < 2; tries++) { /* (the first may meet NOSCRIPT: its EVAL answer gated) */
        many_begin(&g, lk, st, 5, 0, 1);
        if (many_granted_unread(&g, s, 5)) break;
        g.gate = 0;
        CHECK(many_drive(&g, lk, st, 5, 5000));
        for (i = 0; i < 5; i++) if (st[i] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
    }
    CHECK_MSG(tries < 2, "cancel: the 5 acquires were not granted with their answers held back");
    st[2] = rlock_cancel_begin(&lk[2]);
    CHECK_EQ_ST(st[2], RLOCK_WOULD_BLOCK); /* its answer is still out */
    g.gate = 0;
    CHECK(many_drive(&g, lk, st, 5, 5000));
    for (i = 0; i < 5; i++) {
        CHECK_MSG(st[i] == RLOCK_OK, "cancel mid-pipeline: lock %d said %s", i, rlock_status_str(st[i]));
        CHECK_EQ_LL(rlock_lock_state(&lk[i]), i == 2 ? RLOCK_STATE_IDLE : RLOCK_STATE_HELD);
        if (i == 2) CHECK_MSG(rh_int(s, "EXISTS %s", many_key[i]) == 0, "the cancelled grant is left held");
        else CHECK_MSG(key_is(s, many_key[i], rlock_lock_token(&lk[i])), "lock %d: not its own token", i);
    }
    for (i = 0; i < 5; i++) if (i != 2) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
    /* (3) killed with MANY acquires in flight: unanswered (paused), then answered but unread */
    for (p = 0; p < 2; p++) {
        if (p == 0) CHECK(rh_str(s, buf, sizeof buf, "CLIENT PAUSE 5000 WRITE") == REDIS_REPLY_STATUS);
        many_begin(&g, lk, st, MANY, 0, p);
        if (p == 0) for (i = 0; i < 10; i++) { CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); rh_sleep_ms(2); }
        else CHECK(many_granted_unread(&g, s, RLOCK_MAX_PIPELINE - 1)); /* (as many as the pipeline holds) */
        CHECK(rh_int(s, "CLIENT KILL TYPE normal SKIPME yes") == 1);
        if (p == 0) CHECK(rh_str(s, buf, sizeof buf, "CLIENT UNPAUSE") == REDIS_REPLY_STATUS);
        g.gate = 0;
        CHECK_MSG(many_drive(&g, lk, st, MANY, 10000), "killed (%s): not all done", p ? "answered" : "paused");
        for (i = 0; i < MANY; i++) {
            /* (paused: the first ones surely went out on the killed connection; answered: all granted) */
            CHECK_MSG(p == 0 && i < 8 ? st[i] == RLOCK_E_IO : st[i] == RLOCK_OK || (p == 0 && st[i] == RLOCK_E_IO),
                      "killed (%s): lock %d said %s", p ? "answered" : "paused", i, rlock_status_str(st[i]));
            CHECK_EQ_LL(rlock_lock_state(&lk[i]), st[i] == RLOCK_OK ? RLOCK_STATE_HELD : RLOCK_STATE_IDLE);
            if (st[i] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
        }
        CHECK_MSG(many_held(s, MANY) == 0, "killed (%s): %d keys left held", p ? "answered" : "paused",
                  many_held(s, MANY));
    }
    /* the next round reconnects */
    many_begin(&g, lk, st, MANY, 0, 0);
    CHECK(many_drive(&g, lk, st, MANY, 10000));
    for (i = 0; i < MANY; i++) CHECK_EQ_ST(st[i], RLOCK_OK);
    many_begin(&g, lk, st, MANY, 2, 0);
    CHECK(many_drive(&g, lk, st, MANY, 10000));
    for (i = 0; i < MANY; i++) CHECK_EQ_ST(st[i], RLOCK_OK);
    /* (4) re-initialised in flight: the last begun (the head of the list) and the first */
    for (p = 0; p < 2; p++) {
        int r = p ? 0 : 2;
        many_begin(&g, lk, st, 3, 0, 1);
        CHECK(many_granted_unread(&g, s, 3));
        CHECK_EQ_ST(rlock_lock_init(&lk[r], &g.cl, many_key[r], strlen(many_key[r]), RLOCK_KIND_SIMPLE),
                    RLOCK_E_STATE);
        g.gate = 0;
        CHECK_MSG(many_drive(&g, lk, st, 3, 5000), "re-init of lock %d: the others' ops never end (%s, %s, %s)", r,
                  rlock_status_str(st[0]), rlock_status_str(st[1]), rlock_status_str(st[2]));
        for (i = 0; i < 3; i++) {
            CHECK_EQ_ST(st[i], RLOCK_OK);
            if (st[i] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
        }
        CHECK_EQ_LL(many_held(s, 3), 0);
    }
    /* (5) the program stalls past the node timeout with MANY acquires
     * begun, the pipeline full (the rest wait for room); then one more lock
     * x begins and the loop runs again. Every op ends, each OK or E_IO,
     * nothing is left held, and x is granted: requests that were still
     * unsent when the stall ended fail alone, whichever step queued them
     * (CI's i686 run saw x fail "timeout" when the first step's last pass
     * had queued some that it did not send: the step after the stall
     * dropped the connection for them; test_stalled_program shows that case
     * deterministically). */
    {
        rlock_lock x;
        rlock_status xs;
        CHECK_EQ_ST(rlock_lock_init(&x, &g.cl, "many:x", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
        many_begin(&g, lk, st, MANY, 0, 0);
        CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); /* the first RLOCK_MAX_PIPELINE - 1 go out */
        rh_sleep_ms(T_NODE_TIMEOUT + 100);
        xs = rlock_acquire_begin(&x, 10000, 0);
        CHECK(many_drive(&g, lk, st, MANY, 10000));
        CHECK(many_drive(&g, &x, &xs, 1, 5000));
        CHECK_MSG(xs == RLOCK_OK, "stalled: the lock begun after the stall said %s (%s)",
                  rlock_status_str(xs), rlock_node_error(&g.node));
        printf("many locks, stalled past the node timeout: the lock begun after it said %s\n", rlock_status_str(xs));
        for (i = 0; i < MANY; i++) {
            /* (answered, read late - still theirs; never sent in their time, or the connection dropped: failed) */
            CHECK_MSG(st[i] == RLOCK_OK || st[i] == RLOCK_E_IO, "stalled: lock %d said %s", i, rlock_status_str(st[i]));
            if (st[i] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
        }
        if (xs == RLOCK_OK) CHECK_EQ_ST(rlock_release(&x), RLOCK_OK);
        CHECK_EQ_LL(many_held(s, MANY) + rh_int(s, "EXISTS many:x"), 0);
        rlock_lock_destroy(&x);
    }
    for (i = 0; i < MANY; i++) rlock_lock_destroy(&lk[i]);
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    printf("many locks: %d on one connection, byte-at-a-time replies, a cancel mid-pipeline, a kill with all in "
           "flight, a re-init in flight, a stall past the node timeout\n", MANY);
}

/* Step g's client until key[0..n) are set on the server
 * (their answers held back by the gate). 1 when there. */
static int stall_granted_unread(mconn *g, const rh_server *s, char key[][24], int n) {
    unsigned long long end = rh_now_ms() + 3000;
    int i, k = 0;
    while (rh_now_ms() < end) {
        for (i = 0, k = 0; i < n; i++) k += rh_int(s, "EXISTS %s", key[i]) == 1;
        if (k == n) break;
        CHECK_EQ_ST(rlock_client_step(&g->cl), RLOCK_OK);
        rh_sleep_ms(2);
    }
    return k == n;
}

/* The program stalls (busy, not stepping its client) past the node timeout
 * with several locks' requests on one connection, on a healthy server:
 * (1) five sent (granted on the server, the answers unread) and five queued
 * but never sent (rlock_acquire_begin queues, the next step sends), then a
 * sixth lock begun after the stall: the sent ones' answers are still
 * theirs (granted), the never-sent ones fail alone (RLOCK_E_IO "timeout")
 * and never reach the server (no cleanup release either: nothing of theirs
 * ran), the lock begun after the stall is granted, and the connection
 * stays. Before, the first step after the stall dropped the connection:
 * all eleven failed "timeout" (the five grants released by cleanups, the
 * never-sent ones "cleaned up" too) - what test_many_locks (5) met at random.
 * (2) the first of five queued requests sent in part (send would block)
 * when the program stalls: it went out, so it cannot be taken back - the
 * rest of it goes, and with no answer to read by then the timeout drops the
 * connection (a late reply could no longer be matched) - while the four
 * behind it, never sent, still fail without reaching the server. */
static void test_stalled_program(const rh_server *s) {
    mconn g;
    rlock_lock lk[11];
    rlock_status st[11];
    char key[11][24];
    int i, connects;
    CHECK(mc_open(&g, s, 0) == 0);
    for (i = 0; i < 11; i++) {
        snprintf(key[i], sizeof key[i], "stall:%d", i);
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, key[i], strlen(key[i]), RLOCK_KIND_SIMPLE), RLOCK_OK);
    }
    /* (the scripts cached and used once on this connection: no NOSCRIPT or fast-path switch below) */
    CHECK_EQ_ST(rlock_acquire(&lk[0], 10000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk[0]), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk[0], 10000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk[0]), RLOCK_OK);
    /* (1) */
    connects = g.connects;
    g.gate = 1;
    for (i = 0; i < 5; i++) CHECK_EQ_ST(st[i] = rlock_acquire_begin(&lk[i], 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_MSG(stall_granted_unread(&g, s, key, 5), "stalled: the first five were not granted");
    for (i = 5; i < 10; i++) CHECK_EQ_ST(st[i] = rlock_acquire_begin(&lk[i], 10000, 0), RLOCK_WOULD_BLOCK);
    rh_sleep_ms(T_NODE_TIMEOUT + 100); /* the stall: no step */
    CHECK_EQ_ST(st[10] = rlock_acquire_begin(&lk[10], 10000, 0), RLOCK_WOULD_BLOCK);
    g.gate = 0;
    CHECK(many_drive(&g, lk, st, 11, 5000));
    for (i = 0; i < 11; i++) {
        rlock_status want = i < 5 || i == 10 ? RLOCK_OK : RLOCK_E_IO;
        CHECK_MSG(st[i] == want, "stalled: lock %d (%s) said %s (%s), not %s", i,
                  i < 5 ? "sent" : i < 10 ? "never sent" : "begun after", rlock_status_str(st[i]),
                  rlock_node_error(&g.node), rlock_status_str(want));
        if (st[i] == RLOCK_OK) CHECK_MSG(key_is(s, key[i], rlock_lock_token(&lk[i])), "lock %d: not its token", i);
        if (i >= 5 && i < 10) CHECK_MSG(!mc_sent_key(&g, key[i]), "stalled: never-sent lock %d reached the server", i);
    }
    CHECK_MSG(g.connects == connects, "stalled: the connection was made again (%d connects)", g.connects - connects);
    for (i = 0; i < 11; i++)
        if (st[i] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
    /* (2) */
    connects = g.connects;
    g.room = 10;
    for (i = 0; i < 5; i++) CHECK_EQ_ST(st[i] = rlock_acquire_begin(&lk[5 + i], 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); /* 10 bytes of the first go out */
    CHECK_EQ_LL(g.room, 0);
    rh_sleep_ms(T_NODE_TIMEOUT + 100);
    g.room = -1;
    g.gate = 1; /* (its answer held back for a step: the timeout is seen, not a late reply) */
    CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK);
    g.gate = 0;
    CHECK(many_drive(&g, lk + 5, st, 5, 5000));
    for (i = 0; i < 5; i++) {
        CHECK_MSG(st[i] == RLOCK_E_IO, "sent in part: lock %d said %s", 5 + i, rlock_status_str(st[i]));
        if (i > 0) CHECK_MSG(!mc_sent_key(&g, key[5 + i]), "sent in part: never-sent lock %d reached the server", 5 + i);
    }
    CHECK_MSG(g.connects == connects + 1, "sent in part: %d connects, not 1", g.connects - connects);
    for (i = 0; i < 11; i++) CHECK_EQ_LL(rh_int(s, "EXISTS %s", key[i]), 0);
    for (i = 0; i < 11; i++) rlock_lock_destroy(&lk[i]);
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    printf("stalled program: sent ones granted, never-sent ones failed alone (unsent), a lock begun after granted; "
           "one sent in part dropped the connection\n");
}

/* The program stalls past the node timeout while an acquire it never sent
 * (lock b's) waits in the TX buffer IN FRONT of another lock's cleanup
 * release (a's acquire, granted and cancelled: its release is queued after
 * b's request, sends blocked meanwhile). A cleanup is never taken back
 * unsent, but b's request must still fail alone, unsent (RLOCK_E_IO), and
 * never reach the server; the cleanup goes (late) and removes a's grant.
 * Before, the cleanup's length was hidden and rlock__x_timed_out's walk from
 * the newest request stopped at it: b's acquire went out past its time
 * (fuzz_locks: "lock 2's request began to go out at 1487, at or past its
 * round's deadline 1095 + 100", an acquire's cleanup queued behind it). */
static void test_stalled_behind_cleanup(const rh_server *s) {
    mconn g;
    rlock_lock lk[2];
    rlock_status st[2];
    char key[2][24] = { "sbc:a", "sbc:b" };
    unsigned long before, end;
    int i;
    CHECK(mc_open(&g, s, 0) == 0);
    for (i = 0; i < 2; i++) CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, key[i], 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    for (i = 0; i < 2; i++) { /* (connected, the scripts cached: no NOSCRIPT below) */
        CHECK_EQ_ST(rlock_acquire(&lk[0], 10000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&lk[0]), RLOCK_OK);
    }
    g.gate = 1;
    CHECK_EQ_ST(st[0] = rlock_acquire_begin(&lk[0], 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_MSG(stall_granted_unread(&g, s, key, 1), "behind a cleanup: a was not granted");
    g.room = 0; /* nothing more goes out */
    CHECK_EQ_ST(st[1] = rlock_acquire_begin(&lk[1], 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(st[0] = rlock_cancel_begin(&lk[0]), RLOCK_WOULD_BLOCK); /* (its attempt is out: it waits) */
    before = rlock_node_commands(&g.node);
    g.gate = 0;
    for (end = (unsigned long)rh_now_ms() + 2000; rlock_node_commands(&g.node) == before && rh_now_ms() < end;) {
        CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); /* a's grant read: its cleanup queued behind b's */
        rh_sleep_ms(2);
    }
    CHECK_MSG(rlock_node_commands(&g.node) == before + 1, "behind a cleanup: a's cleanup was not queued");
    CHECK_EQ_ST(rlock_result(&lk[0]), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_result(&lk[1]), RLOCK_WOULD_BLOCK);
    rh_sleep_ms(T_NODE_TIMEOUT + 100); /* the stall: no step */
    g.room = -1;
    CHECK(many_drive(&g, lk, st, 2, 5000));
    CHECK_MSG(st[1] == RLOCK_E_IO, "behind a cleanup: the never-sent acquire said %s (%s)", rlock_status_str(st[1]),
              rlock_lock_error(&lk[1]));
    CHECK_MSG(!mc_sent_key(&g, key[1]), "behind a cleanup: the never-sent acquire reached the server");
    for (end = (unsigned long)rh_now_ms() + 2000; rh_int(s, "EXISTS sbc:a") != 0 && rh_now_ms() < end;) rh_sleep_ms(5);
    CHECK_MSG(rh_int(s, "EXISTS sbc:a") == 0, "behind a cleanup: the cancelled grant is still there (cancel said %s)",
              rlock_status_str(st[0]));
    CHECK_EQ_LL(rh_int(s, "EXISTS sbc:b"), 0);
    for (i = 0; i < 2; i++) rlock_lock_destroy(&lk[i]);
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    printf("stalled behind a cleanup: the never-sent acquire failed alone (%s), the cleanup went (cancel %s)\n",
           rlock_status_str(st[1]), rlock_status_str(st[0]));
}

/* Cancel of acquires still waiting for pipeline room (40 on one
 * connection, up to RLOCK_MAX_PIPELINE (32) of them sent, their answers held back):
 * those never handed to the connection end at once and never reach the
 * server; the sent ones wait for their answers, then release what they
 * were granted. (Before: every cancel said WOULD_BLOCK and the 8 waiting
 * acquires were sent after their cancel, granted, then released.) */
#define CANCEL_N (RLOCK_MAX_PIPELINE + 8)
static void test_cancel_unsent(const rh_server *s) {
    static mconn g;
    static rlock_lock lk[CANCEL_N];
    rlock_status st[CANCEL_N];
    char key[CANCEL_N][24], early[CANCEL_N];
    int i, at_once = 0, later = 0, unsent_went = 0, went = 0;
    CHECK(mc_open(&g, s, 0) == 0);
    for (i = 0; i < CANCEL_N; i++) {
        snprintf(key[i], sizeof key[i], "cnl:%d", i);
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, key[i], strlen(key[i]), RLOCK_KIND_SIMPLE), RLOCK_OK);
    }
    CHECK_EQ_ST(rlock_acquire(&lk[0], 10000, 0), RLOCK_OK); /* (connected, the script cached) */
    CHECK_EQ_ST(rlock_release(&lk[0]), RLOCK_OK);
    g.gate = 1;
    for (i = 0; i < CANCEL_N; i++) CHECK_EQ_ST(rlock_acquire_begin(&lk[i], 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK);
    for (i = 0; i < CANCEL_N; i++) {
        st[i] = rlock_cancel_begin(&lk[i]);
        early[i] = st[i] == RLOCK_OK;
        if (st[i] == RLOCK_OK) at_once++;
        else if (st[i] == RLOCK_WOULD_BLOCK) later++;
        else CHECK_MSG(0, "cancel of lock %d said %s", i, rlock_status_str(st[i]));
    }
    /* (the pipeline may hold one entry fewer: what went is counted below) */
    CHECK_MSG(at_once >= CANCEL_N - RLOCK_MAX_PIPELINE && later <= RLOCK_MAX_PIPELINE && at_once + later == CANCEL_N,
              "cancel: %d ended at once, %d waited (want at least %d at once)", at_once, later,
              CANCEL_N - RLOCK_MAX_PIPELINE);
    g.gate = 0;
    CHECK(many_drive(&g, lk, st, CANCEL_N, 5000));
    for (i = 0; i < CANCEL_N; i++) {
        CHECK_MSG(st[i] == RLOCK_OK, "cancel: lock %d ended %s", i, rlock_status_str(st[i]));
        CHECK_EQ_LL(rlock_lock_state(&lk[i]), RLOCK_STATE_IDLE);
        CHECK_EQ_LL(rh_int(s, "EXISTS %s", key[i]), 0);
        if (early[i] && mc_sent_key(&g, key[i])) unsent_went++;
        went += mc_sent_key(&g, key[i]);
    }
    CHECK_MSG(went == later, "cancel: %d of the %d acquires reached the server (want the %d sent before their cancel)",
              went, CANCEL_N, later);
    CHECK_MSG(unsent_went == 0, "cancel: %d acquires cancelled before they were sent reached the server", unsent_went);
    for (i = 0; i < CANCEL_N; i++) rlock_lock_destroy(&lk[i]);
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    printf("cancel: %d acquires never sent ended at once, %d sent ones after their answers\n", at_once, later);
}

/* Did key go out in a request sent after the first `from` bytes? */
static int mc_sent_key_from(const mconn *g, const char *key, size_t from) {
    char arg[40];
    size_t n = (size_t)snprintf(arg, sizeof arg, "\r\n%s\r\n", key), i;
    for (i = from; i + n <= g->sent_len; i++)
        if (memcmp(g->sent + i, arg, n) == 0) return 1;
    return 0;
}

/* Step g's client (no op of the caller's runs) for about ms. */
static void mc_idle(mconn *g, unsigned ms) {
    unsigned long long end = rh_now_ms() + ms;
    while (rh_now_ms() < end) {
        CHECK_EQ_ST(rlock_client_step(&g->cl), RLOCK_OK);
        rh_sleep_ms(5);
    }
}

/* Cancel of an extend or release that has not gone out: it never does -
 * cancel abandons the op, and what of it has not begun to go out is taken
 * back, as for an acquire (test_cancel_unsent); the handle's state is the
 * server's then (HELD: the key is there, its lease unchanged), and a
 * release after it is answered OK. (1) its bytes in rlock's TX buffer, the
 * transport taking none (a full socket buffer); before: they went out at
 * the next step - the key extended to 60 s under a handle that knew of
 * 10 s, or released under a handle that said HELD. (2) a stalled server
 * (SIGSTOP) with RLOCK_MAX_PIPELINE extends of other locks in flight on
 * the connection: the extend and release wait for pipeline room, end at
 * once when cancelled, and never go out once the server answers again. */
#define CXN (RLOCK_MAX_PIPELINE + 2)
static void test_cancel_unsent_extend_release(rh_server *s) {
    static mconn g;
    static rlock_lock lk[CXN];
    rlock_status st[CXN];
    char key[CXN][24];
    size_t from;
    int i, op;
    CHECK(mc_open(&g, s, 0) == 0);
    for (i = 0; i < CXN; i++) {
        snprintf(key[i], sizeof key[i], "cxn:%d", i);
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &g.cl, key[i], strlen(key[i]), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk[i], 10000, 0), RLOCK_OK);
    }
    CHECK_EQ_ST(rlock_extend(&lk[0], 10000), RLOCK_OK); /* (the extend script cached) */
    /* (1) */
    for (op = 0; op < 2; op++) {
        g.room = 0;
        from = g.sent_len;
        CHECK_EQ_ST(op ? rlock_release_begin(&lk[0]) : rlock_extend_begin(&lk[0], 60000), RLOCK_WOULD_BLOCK);
        CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK);
        CHECK_EQ_ST(rlock_cancel_begin(&lk[0]), RLOCK_OK);
        g.room = -1;
        mc_idle(&g, 100);
        CHECK_MSG(!mc_sent_key_from(&g, key[0], from), "the cancelled %s, never sent, went out later",
                  op ? "release" : "extend");
        CHECK_MSG(rh_int(s, "PTTL %s", key[0]) > 0 && rh_int(s, "PTTL %s", key[0]) <= 10000,
                  "after the cancelled %s: PTTL %lld (lease 10 s)", op ? "release" : "extend",
                  rh_int(s, "PTTL %s", key[0]));
        CHECK_EQ_LL(rlock_lock_state(&lk[0]), RLOCK_STATE_HELD);
    }
    /* (2) */
    rh_server_pause(s);
    g.gate = 0;
    for (i = 0; i < RLOCK_MAX_PIPELINE; i++) CHECK_EQ_ST(st[i] = rlock_extend_begin(&lk[2 + i], 10000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); /* (the pipeline full of them first) */
    from = g.sent_len;
    CHECK_EQ_ST(rlock_extend_begin(&lk[0], 60000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_release_begin(&lk[1]), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK);
    CHECK_MSG(!lk[0].op.round.queued && !lk[1].op.round.queued, "stalled: the extend and release did not wait for room");
    CHECK_EQ_ST(rlock_cancel_begin(&lk[0]), RLOCK_OK); /* (waiting for room: at once) */
    CHECK_EQ_ST(rlock_cancel_begin(&lk[1]), RLOCK_OK);
    rh_server_resume(s);
    CHECK(many_drive(&g, lk + 2, st, RLOCK_MAX_PIPELINE, 5000));
    for (i = 0; i < RLOCK_MAX_PIPELINE; i++) CHECK_MSG(st[i] == RLOCK_OK, "stalled: extend %d said %s", 2 + i,
                                                       rlock_status_str(st[i]));
    mc_idle(&g, 100);
    for (i = 0; i < 2; i++) {
        CHECK_MSG(!mc_sent_key_from(&g, key[i], from), "stalled: the cancelled %s went out", i ? "release" : "extend");
        CHECK_MSG(rh_int(s, "PTTL %s", key[i]) > 0 && rh_int(s, "PTTL %s", key[i]) <= 10000, "stalled: %s PTTL %lld",
                  key[i], rh_int(s, "PTTL %s", key[i]));
        CHECK_EQ_LL(rlock_lock_state(&lk[i]), RLOCK_STATE_HELD);
    }
    for (i = 0; i < CXN; i++) {
        CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
        CHECK_EQ_LL(rh_int(s, "EXISTS %s", key[i]), 0);
        rlock_lock_destroy(&lk[i]);
    }
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    printf("cancel: an extend and a release never sent (held in TX; waiting for pipeline room, server stopped) "
           "never went out; the lock stayed HELD, as on the server\n");
}

/* A release notice (a RESP3 "message" push on the command connection, for
 * lock a waiting there) read while the oldest request in flight is another
 * lock's cleanup release (b's acquire granted, then cancelled): the push is
 * a's wake-up, not the cleanup's reply. The cleanup's flag (RLOCK__X_KEEP,
 * 0x4000) was the bit the reader tests for a push that answers the oldest
 * request (0x800 << kind: a "message" is kind 3), so the push was taken
 * for the cleanup's reply, the cleanup's own reply then answered nobody and
 * the connection was dropped ("a reply nobody asked for"), a's wake-up lost
 * with it. */
static void test_push_before_cleanup_reply(const rh_server *s) {
    static mconn g;
    rh_tconn h;
    rlock_lock a, b, hl;
    rlock_status st[2];
    char kb[1][24] = { "pbc:b" }, pong[8];
    unsigned long before;
    unsigned long long end;
    int connects;
    CHECK(mc_open(&g, s, 1) == 0);
    CHECK(rh_tc_open(&h, s, 0, NULL, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "pbc:a", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &g.cl, "pbc:a", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &g.cl, "pbc:b", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&b, 10000, 0), RLOCK_OK); /* (connected, RESP3, the scripts cached) */
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&hl, 20000, 0), RLOCK_OK);
    CHECK_EQ_ST(rh_step_until_waitmsg(&a, rlock_acquire_begin(&a, 10000, 30000)), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(a.op.phase, RLOCK__PH_WAITMSG);
    g.gate = 1;
    CHECK_EQ_ST(rlock_acquire_begin(&b, 10000, 0), RLOCK_WOULD_BLOCK);
    CHECK_MSG(stall_granted_unread(&g, s, kb, 1), "b was not granted");
    CHECK_EQ_ST(rlock_cancel_begin(&b), RLOCK_WOULD_BLOCK); /* (its attempt is out: it waits) */
    g.room = 0; /* the cleanup stays unsent */
    before = rlock_node_commands(&g.node);
    g.gate = 0;
    for (end = rh_now_ms() + 2000; rlock_node_commands(&g.node) == before && rh_now_ms() < end;) {
        CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK); /* b's grant read: its cleanup queued */
        rh_sleep_ms(2);
    }
    CHECK_MSG(rlock_node_commands(&g.node) == before + 1, "b's cleanup was not queued");
    g.gate = 1;
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_OK); /* a's notice: pushed to g's connection */
    CHECK(rh_str(s, pong, sizeof pong, "PING") == REDIS_REPLY_STATUS);
    connects = g.connects;
    g.room = -1;
    g.gate = 0; /* the cleanup goes; the push comes before its reply */
    st[0] = st[1] = RLOCK_WOULD_BLOCK;
    for (end = rh_now_ms() + 5000; (st[0] == RLOCK_WOULD_BLOCK || st[1] == RLOCK_WOULD_BLOCK) && rh_now_ms() < end;) {
        CHECK_EQ_ST(rlock_client_step(&g.cl), RLOCK_OK);
        if (st[0] == RLOCK_WOULD_BLOCK) st[0] = rlock_result(&a);
        if (st[1] == RLOCK_WOULD_BLOCK) st[1] = rlock_result(&b);
        rh_sleep_ms(2);
    }
    CHECK_MSG(st[1] == RLOCK_OK, "b's cancel said %s", rlock_status_str(st[1]));
    CHECK_MSG(st[0] == RLOCK_OK, "a (woken) said %s", rlock_status_str(st[0]));
    CHECK_MSG(g.connects == connects, "the connection was dropped (%s)", rlock_node_error(&g.node));
    CHECK_EQ_LL(rh_int(s, "EXISTS pbc:b"), 0);
    {
        char v[80];
        (void)rh_str(s, v, sizeof v, "GET pbc:a");
        /* (its token, marked "+" by a script grant to a queued waiter) */
        CHECK_MSG(strncmp(v, rlock_lock_token(&a), strlen(rlock_lock_token(&a))) == 0,
                  "a does not hold pbc:a (it has \"%s\", a's token %s)", v, rlock_lock_token(&a));
    }
    if (st[0] == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rlock_lock_destroy(&a);
    rlock_lock_destroy(&b);
    rlock_client_close(&g.cl);
    rlock_posix_close(&g.pc);
    rh_tc_close(&h);
    (void)rh_int(s, "DEL pbc:a {pbc:a}:waiters");
    printf("a release notice read while a cancelled acquire's cleanup was the oldest request: a woken, the "
           "cleanup answered, the connection kept\n");
}

/* ------------------------------------------- 13. FAULTS.md rows 2, 9, 22 */

/* Child of test_fault02: take the lock (lease 1000 ms), say so, then hold
 * it until killed. */
static int killed_holder_child(const rh_server *s, int wfd) {
    rlock_config cfg = cfg_node_timeout(250); /* below the 1000 ms TTL */
    rh_tconn t;
    rlock_lock lk;
    char c;
    if (rh_tc_open(&t, s, 0, &cfg, NULL, NULL) != 0 ||
        rlock_lock_init(&lk, &t.cl, "killed:key", 10, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    c = rlock_acquire(&lk, 1000, 2000) == RLOCK_OK ? 'A' : 'F';
    if (write(wfd, &c, 1) != 1 || c != 'A') return 11;
    for (;;) rh_sleep_ms(1000); /* never releases: SIGKILL ends it */
}

/* FAULTS.md row 2: the holder process is killed (SIGKILL) while it holds
 * the lock. Nobody acquires before its lease runs out on the server; a
 * waiter does soon after (its backoff never sleeps past the holder's PTTL). */
static void test_fault02_holder_killed(const rh_server *s) {
    int pfd[2], status;
    pid_t pid;
    char c = 0;
    rh_tconn t;
    rlock_lock lk;
    long long pttl;
    unsigned long long t_kill, t_read, t_got;
    rlock_status st;

    CHECK(pipe(pfd) == 0);
    pid = rh_fork();
    if (pid == 0) {
        close(pfd[0]);
        _exit(killed_holder_child(s, pfd[1]));
    }
    CHECK(pid > 0);
    close(pfd[1]);
    if (pid < 0) { close(pfd[0]); return; }
    CHECK(rh_read_full(pfd[0], &c, 1, 10000) == 0 && c == 'A');
    close(pfd[0]);
    kill(pid, SIGKILL);
    t_kill = rh_now_ms();
    status = rh_wait_child(pid, 5000);
    CHECK_MSG(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "holder status 0x%x", (unsigned)status);
    if (c != 'A') return;
    pttl = rh_int(s, "PTTL killed:key"); /* the dead holder's lease, still running */
    t_read = rh_now_ms();
    CHECK_MSG(pttl > 0 && pttl <= 1000, "PTTL %lld after the holder died", pttl);
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "killed:key", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&lk, 5000), RLOCK_NOT_ACQUIRED);
    st = rlock_acquire(&lk, 5000, 5000);
    t_got = rh_now_ms();
    CHECK_EQ_ST(st, RLOCK_OK);
    /* the key expired between t_kill + pttl and t_read + pttl */
    CHECK_MSG(t_got + 5 >= t_kill + (unsigned long long)pttl, "acquired %lld ms before the dead holder's lease ended",
              (long long)(t_kill + (unsigned long long)pttl - t_got));
    CHECK_MSG(t_got <= t_read + (unsigned long long)pttl + (quick ? 600 : 300),
              "acquired %lld ms after the dead holder's lease ended", (long long)(t_got - t_read - (unsigned long long)pttl));
    printf("holder killed: its lease had %lld ms left; acquired %lld ms after the kill\n", pttl,
           (long long)(t_got - t_kill));
    CHECK(key_is(s, "killed:key", rlock_lock_token(&lk)));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS killed:key"), 0);
    rh_tc_close(&t);
}

/* Child of test_max_key_aux: wait (pub/sub, so it queues) for the longest
 * key, fenced; exit 0 when it got the lock with a fence above `above`. */
static int max_key_waiter_child(const rh_server *s, const char *key, long long above) {
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
    rlock_posix_conn spc;
    rlock_subscriber sub;
    rh_tconn t;
    rlock_lock lk;
    rlock_status st;
    int rc;
    cfg.fencing = 1;
    if (rh_tc_open(&t, s, 0, &cfg, NULL, NULL) != 0 || rlock_posix_init_tcp(&spc, "127.0.0.1", s->port, 1000) != 0 ||
        rlock_subscriber_init(&sub, rlock_posix_transport(&spc)) != RLOCK_OK ||
        rlock_client_set_subscribers(&t.cl, &sub, 1) != RLOCK_OK ||
        rlock_lock_init(&lk, &t.cl, key, RLOCK_MAX_KEY_LEN, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    st = rlock_acquire(&lk, 5000, 8000);
    rc = st != RLOCK_OK ? 11 : rlock_fence_token(&lk) <= above ? 12 : rlock_release(&lk) != RLOCK_OK ? 13 : 0;
    rlock_posix_close(&spc);
    rh_tc_close(&t);
    return rc;
}

/* The longest key (RLOCK_MAX_KEY_LEN bytes) keeps every auxiliary name:
 * fenced acquire works and "{key}:fence" counts, a waiter queues in
 * "{key}:waiters" and is woken by the release. (The lock's aux_base was one
 * byte short for "{key}" + NUL: fencing failed with E_BADARG and the wait
 * queue was silently skipped.) */
static void test_max_key_aux(const rh_server *s) {
    static char key[RLOCK_MAX_KEY_LEN + 1];
    char fence_key[RLOCK_MAX_AUX_LEN + 16], waiters[RLOCK_MAX_AUX_LEN + 16], deadlines[RLOCK_MAX_AUX_LEN + 16];
    char got[32];
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
    unsigned long long t0;
    long long fence, queued = 0;
    int status;
    pid_t pid;
    rh_tconn t;
    rlock_lock lk;
    memset(key, 'm', RLOCK_MAX_KEY_LEN);
    CHECK_EQ_LL(rlock_aux_key(fence_key, sizeof fence_key, key, RLOCK_MAX_KEY_LEN, ":fence"), RLOCK_MAX_AUX_LEN + 6);
    CHECK_EQ_LL(rlock_aux_key(waiters, sizeof waiters, key, RLOCK_MAX_KEY_LEN, ":waiters"), RLOCK_MAX_AUX_LEN + 8);
    CHECK_EQ_LL(rlock_aux_key(deadlines, sizeof deadlines, key, RLOCK_MAX_KEY_LEN, ":deadlines"), RLOCK_MAX_AUX_LEN + 10);
    cfg.fencing = 1;
    CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, key, RLOCK_MAX_KEY_LEN, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
    fence = rlock_fence_token(&lk);
    CHECK(fence >= 1);
    rh_str(s, got, sizeof got, "GET %s", fence_key);
    CHECK_MSG(atoll(got) == fence, "{key}:fence holds '%s', the fence token is %lld", got, fence);
    pid = rh_fork();
    if (pid == 0) _exit(max_key_waiter_child(s, key, fence));
    CHECK(pid > 0);
    t0 = rh_now_ms();
    while (rh_now_ms() - t0 < 5000 && (queued = rh_int(s, "ZCARD %s", waiters)) < 1) rh_sleep_ms(10);
    CHECK_MSG(queued == 1, "the waiter is not in {key}:waiters (ZCARD %lld)", queued);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    status = pid > 0 ? rh_wait_child(pid, 10000) : -1;
    CHECK_MSG(rh_exited_with(status, 0), "the waiter on the longest key: status 0x%x", (unsigned)status);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", key), 0);
    CHECK_EQ_LL(rh_int(s, "DEL %s", fence_key), 1);
    rh_int(s, "DEL %s %s", waiters, deadlines); /* they also expire by themselves */
    rh_tc_close(&t);
}

/* Nodes [0..n) over TCP or unix to servers srv[i], one client. */
typedef struct tmulti {
    rlock_posix_conn pc[3];
    rlock_node node[3];
    rlock_client cl;
    size_t n;
} tmulti;

static int tm_open(tmulti *m, const rh_server *const *srv, const int *use_unix, size_t n, const char *user,
                   const char *pass) {
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
    size_t i;
    m->n = n;
    for (i = 0; i < n; i++) {
        int r = use_unix[i] ? rlock_posix_init_unix(&m->pc[i], srv[i]->unixsock, 1000)
                            : rlock_posix_init_tcp(&m->pc[i], "127.0.0.1", srv[i]->port, 1000);
        if (r != 0 || rlock_node_init(&m->node[i], rlock_posix_transport(&m->pc[i])) != RLOCK_OK) return -1;
        m->node[i].username = user;
        m->node[i].password = pass;
    }
    return rlock_client_init(&m->cl, m->node, n, &cfg) == RLOCK_OK ? 0 : -1;
}
static void tm_close(tmulti *m) {
    size_t i;
    rlock_client_close(&m->cl);
    for (i = 0; i < m->n; i++) rlock_posix_close(&m->pc[i]);
}

/* FAULTS.md row 28 on real servers: one server under two names (its TCP
 * port and its unix socket) is refused by rlock_client_connect, which names
 * the repeated node and the server's run_id; the client is unusable after,
 * nothing is left open or written. Two distinct servers pass. A user who may
 * not run INFO cannot be checked: connect succeeds (documented). */
static void test_connect_same_server(const rh_server *s) {
    const rh_server *same[3] = { s, s, NULL }, *two[3] = { s, NULL, NULL };
    const int tcp_unix[3] = { 0, 1, 0 }, tcp3[3] = { 0, 0, 0 };
    char run_id[64], want[128], line[256];
    rh_server other;
    tmulti m;
    rlock_lock lk;
    int fds = rh_count_fds();

    rh_str(s, run_id, sizeof run_id, "EVAL %s 0", "return string.match(redis.call('info','server'),'run_id:(%x+)')");
    CHECK_EQ_LL(strlen(run_id), 40);
    CHECK(tm_open(&m, same, tcp_unix, 2, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &m.cl, "same:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_connect(&m.cl, 1000), RLOCK_E_BADARG);
    snprintf(want, sizeof want, "same server as node 0 (run_id %s)", run_id);
    CHECK_MSG(strcmp(rlock_node_error(&m.node[1]), want) == 0, "node 1: '%s'", rlock_node_error(&m.node[1]));
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_E_BADARG); /* unusable: no two votes */
    CHECK_EQ_LL(m.pc[0].fd, -1);
    CHECK_EQ_LL(m.pc[1].fd, -1);
    tm_close(&m);
    CHECK_EQ_LL(rh_int(s, "EXISTS same:key"), 0);

    /* two servers: fine */
    if (rh_server_start(&other, NULL) != 0) { CHECK(0); return; }
    two[1] = &other;
    CHECK(tm_open(&m, two, tcp3, 2, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_client_connect(&m.cl, 1000), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &m.cl, "same:key", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&lk), 2);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    tm_close(&m);
    rh_server_stop(&other);

    /* a user without INFO: the identity is unknown, not an error */
    rh_str(s, line, sizeof line, "ACL SETUSER noinfo on >pw ~* &* +@all -info");
    CHECK(strcmp(line, "OK") == 0);
    CHECK(tm_open(&m, same, tcp_unix, 2, "noinfo", "pw") == 0);
    CHECK_EQ_ST(rlock_client_connect(&m.cl, 1000), RLOCK_OK);
    CHECK_EQ_ST(rlock_node_status(&m.node[1]), RLOCK_OK);
    tm_close(&m);
    rh_str(s, line, sizeof line, "ACL DELUSER noinfo");
    CHECK(atoi(line) == 1);
    CHECK_EQ_LL(rh_count_fds(), fds);
}

/* A release whose outcome is unknown (E_IO: no reply within the node
 * timeout) leaves the handle HELD - the lock may still be there - so a new
 * acquire on it is E_STATE. Calling rlock_release again is the retry: OK
 * when the first attempt never arrived (black-holed by the proxy), LOST when
 * it did arrive, late (the server was paused): either way the key is gone
 * and the handle idle. Not retried: E_STATE until the validity runs out,
 * then the handle acquires afresh. */
static void test_release_unknown(rh_server *s) {
    rlock_config cfg = cfg_node_timeout(200);
    char token[RLOCK_TOKEN_LEN + 1];
    rp_proxy px;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    if (rp_start(&px, s->port) != 0) { CHECK(0); return; }
    CHECK(rlock_posix_init_tcp(&pc, "127.0.0.1", px.port, 1000) == 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "unknown:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* the release never arrives */
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
    memcpy(token, rlock_lock_token(&lk), sizeof token);
    rp_set_mode(&px, RP_DROP, 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_E_IO);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_E_STATE);
    CHECK(key_is(s, "unknown:key", token)); /* still there */
    rp_set_mode(&px, RP_FORWARD, 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK); /* the retry */
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rh_int(s, "EXISTS unknown:key"), 0);

    /* the release arrives late */
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_OK);
    rh_server_pause(s);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_E_IO);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD);
    rh_server_resume(s);
    CHECK(wait_gone(s, "unknown:key", 2000)); /* the server ran it on resuming */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_LOST); /* the retry: no longer ours */
    CHECK(rlock_lock_state(&lk) != RLOCK_STATE_HELD);

    /* not retried */
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_OK);
    rp_set_mode(&px, RP_DROP, 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_E_IO);
    rp_set_mode(&px, RP_FORWARD, 0);
    CHECK_EQ_ST(rlock_acquire(&lk, 1000, 0), RLOCK_E_STATE);
    rh_sleep_ms(1100);
    CHECK(rlock_lock_state(&lk) == RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS unknown:key"), 0);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    rp_stop(&px);
}

/* CONFIG GET name == want (a 2-element array reply). */
static int config_is(const rh_server *s, const char *name, const char *want) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    int ok = 0;
    if (!c) return 0;
    r = (redisReply *)redisCommand(c, "CONFIG GET %s", name);
    ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING &&
         strcmp(r->element[1]->str, want) == 0;
    if (r) freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* FAULTS.md row 9: a node restarted without persistence forgets its locks -
 * the documented unsafety (README: Redlock, "Crashed nodes"; Guarantees),
 * shown rather than hidden. A holds the lock on a server run with --save ''
 * --appendonly no; the server is killed (-9) and restarted on the same port
 * at once; B acquires the same lock while A still believes it holds it
 * (validity > 0): two holders. A finds out at its next extend (LOST) and its
 * release cannot delete B's lock. With the restart delayed past the TTL, B
 * gets the lock only after A's validity has ended; with appendfsync always
 * the restarted server still has A's lock. */
static void test_fault09_restart_without_persistence(void) {
    static const char *const nopersist[] = { "--save", "", "--appendonly", "no", NULL };
    static const char *const fsync_always[] = { "--appendonly", "yes", "--appendfsync", "always", NULL };
    rlock_config cfg = cfg_node_timeout(200);
    rh_server s;
    rh_tconn a, b;
    rlock_lock la, lb;
    char btok[RLOCK_TOKEN_LEN + 1];
    long long va;
    unsigned long long t_grant, t_end, t_kill, t_got;
    int down_attempts = 0;
    rlock_status st;

    if (rh_server_start(&s, nopersist) != 0) { CHECK_MSG(0, "start redis-server --save '' --appendonly no"); return; }
    CHECK(config_is(&s, "save", "") && config_is(&s, "appendonly", "no"));
    CHECK(rh_tc_open(&a, &s, 0, &cfg, NULL, NULL) == 0);
    CHECK(rh_tc_open(&b, &s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&la, &a.cl, "restart:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lb, &b.cl, "restart:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* 1. restarted at once: the lock is forgotten, a second holder appears */
    CHECK_EQ_ST(rlock_acquire(&la, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_try_acquire(&lb, 5000), RLOCK_NOT_ACQUIRED);
    rh_server_kill9(&s);
    CHECK_MSG(rh_server_restart(&s, nopersist) == 0, "restart on port %d", s.port);
    CHECK_EQ_LL(rh_int(&s, "EXISTS restart:key"), 0);
    CHECK_EQ_ST(rlock_acquire(&lb, 5000, 2000), RLOCK_OK); /* its old connection died with the server */
    va = rlock_validity_ms(&la);
    CHECK_MSG(va > 0 && rlock_lock_state(&la) == RLOCK_STATE_HELD,
              "A should still believe it holds the lock (state %d, validity %lld)", (int)rlock_lock_state(&la), va);
    printf("restart without persistence: B acquired while A still had %lld ms of validity - two holders, "
           "the documented unsafety\n", va);
    memcpy(btok, rlock_lock_token(&lb), sizeof btok);
    CHECK(key_is(&s, "restart:key", btok));
    CHECK_EQ_ST(rlock_extend(&la, 5000), RLOCK_LOST); /* the owner check tells A */
    CHECK_EQ_ST(rlock_release(&la), RLOCK_LOST);
    CHECK(key_is(&s, "restart:key", btok)); /* and A never deletes B's lock */
    CHECK_EQ_ST(rlock_release(&lb), RLOCK_OK);

    /* 2. restart delayed past the TTL: B cannot get the lock before A's
     * validity has ended */
    t_grant = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&la, 1000, 0), RLOCK_OK);
    t_end = rh_now_ms() + (unsigned long long)rlock_validity_ms(&la);
    rh_server_kill9(&s);
    t_kill = rh_now_ms();
    while (rh_now_ms() < t_grant + 1000 + 50) { /* down for the whole lease */
        st = rlock_try_acquire(&lb, 1000);
        CHECK_MSG(st == RLOCK_E_IO, "acquire while the server is down: %s", rlock_status_str(st));
        down_attempts++;
        rh_sleep_ms(50);
    }
    CHECK_MSG(rh_server_restart(&s, nopersist) == 0, "restart on port %d", s.port);
    CHECK_EQ_ST(rlock_acquire(&lb, 1000, 2000), RLOCK_OK);
    t_got = rh_now_ms();
    CHECK_MSG(t_got >= t_end, "B acquired %lld ms before A's validity ended", (long long)(t_end - t_got));
    CHECK_EQ_LL(rlock_validity_ms(&la), 0);
    CHECK(rlock_lock_state(&la) == RLOCK_STATE_LOST);
    printf("restart delayed past the TTL: down %llu ms, %d refused attempts meanwhile; B acquired %lld ms after "
           "A's validity ended\n", t_got - t_kill, down_attempts, (long long)(t_got - t_end));
    memcpy(btok, rlock_lock_token(&lb), sizeof btok);
    CHECK_EQ_ST(rlock_release(&la), RLOCK_LOST);
    CHECK(key_is(&s, "restart:key", btok));
    CHECK_EQ_ST(rlock_release(&lb), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&s, "EXISTS restart:key"), 0);
    rh_tc_close(&a);
    rh_tc_close(&b);
    rh_server_stop(&s);

    /* 3. the other fix the README names, appendfsync always: the server
     * restarted at once still has A's lock, with its TTL; B is refused */
    if (rh_server_start(&s, fsync_always) != 0) { CHECK_MSG(0, "start redis-server --appendfsync always"); return; }
    CHECK(config_is(&s, "appendonly", "yes") && config_is(&s, "appendfsync", "always"));
    CHECK(rh_tc_open(&a, &s, 0, &cfg, NULL, NULL) == 0);
    CHECK(rh_tc_open(&b, &s, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&la, &a.cl, "restart:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lb, &b.cl, "restart:key", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&la, 5000, 0), RLOCK_OK);
    rh_server_kill9(&s);
    CHECK_MSG(rh_server_restart(&s, fsync_always) == 0, "restart on port %d", s.port);
    CHECK(key_is(&s, "restart:key", rlock_lock_token(&la)));
    va = rh_int(&s, "PTTL restart:key");
    CHECK_MSG(va > 0 && va <= 5000, "PTTL %lld after the restart", va);
    CHECK_EQ_ST(rlock_acquire(&lb, 5000, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_extend(&la, 5000), RLOCK_OK); /* still A's */
    CHECK_EQ_ST(rlock_release(&la), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&s, "EXISTS restart:key"), 0);
    rh_tc_close(&a);
    rh_tc_close(&b);
    rh_server_stop(&s);
}

/* FAULTS.md row 22 (EINTR): a signal storm - SIGALRM every millisecond,
 * handled without SA_RESTART - interrupts every blocking call rlock and the
 * POSIX adapter make: poll() in wait, nanosleep() in the backoff, connect.
 * Each is restarted with the time left: a 150 ms wait is 150 ms, not an
 * early return or an error, and a contended acquire, an extend and a release
 * all come out right. */
static volatile sig_atomic_t g_alarms;
static void on_alarm(int sig) { (void)sig; g_alarms++; }

static void test_fault22_eintr(const rh_server *s) {
    rlock_config hcfg = cfg_node_timeout(250);
    struct sigaction sa;
    struct itimerval it, off;
    rh_tconn t, h;
    rlock_lock lk, hl;
    unsigned long long t0, th;
    long long dt;
    int r;
    rlock_status st;

    CHECK(tc_tcp(&t, s) == 0);
    CHECK(rh_tc_open(&h, s, 0, &hcfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "eintr:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&hl, &h.cl, "eintr:key", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    th = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&hl, 300, 0), RLOCK_OK); /* a holder for 300 ms */

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll, nanosleep, connect return EINTR */
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    memset(&it, 0, sizeof it);
    it.it_interval.tv_usec = 1000;
    it.it_value.tv_usec = 1000;
    memset(&off, 0, sizeof off);
    g_alarms = 0;
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);

    CHECK_EQ_ST(rlock_client_connect(&t.cl, 1000), RLOCK_OK); /* connect + PING */
    t0 = rh_now_ms();
    r = t.pc.tr.wait(t.pc.tr.ctx, RLOCK_WANT_READ, 150); /* nothing to read */
    dt = since(t0);
    CHECK_EQ_LL(r, 0);
    CHECK_MSG(dt >= 145 && dt < 2000, "a 150 ms wait under EINTR took %lld ms", dt);
    t0 = rh_now_ms();
    st = rlock_acquire(&lk, 5000, 3000); /* backoff sleeps until the holder's lease ends */
    dt = since(t0);
    CHECK_EQ_ST(st, RLOCK_OK);
    /* Granted only once the holder's 300 ms lease ran out (counted from before
     * its SET; the connect and the 150 ms wait above used part of it). */
    CHECK_MSG(since(th) >= 295 && dt < 2000, "contended acquire under EINTR took %lld ms, %lld ms after the holder's grant",
              dt, since(th));
    CHECK_EQ_ST(rlock_extend(&lk, 6000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);

    CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
    /* The counting handler stays: a SIGALRM can still arrive once the timer
     * is off (valgrind queues signals and delivers them later, even after a
     * quiet spell), and the old default action would kill the suite. */
    printf("EINTR storm: %d signals during a wait, a contended acquire, extend and release\n", (int)g_alarms);
    CHECK_MSG(g_alarms >= 100, "only %d signals arrived", (int)g_alarms);
    CHECK_EQ_ST(rlock_release(&hl), RLOCK_LOST); /* it expired, and was taken */
    CHECK_EQ_LL(rh_int(s, "EXISTS eintr:key"), 0);
    rh_tc_close(&h);
    rh_tc_close(&t);
}

/* -------------------------------------------------------------- main */

/* A refused connect: rlock_node_error is the adapter's own text (the
 * transport's error hook), not a generic "connect failed". */
/* A refused handshake leaves no lock behind: a database the server does not
 * have (SELECT 99), and a password for a server whose default user has none
 * (AUTH fails, the connection stays the default user's). Pipelined behind
 * them the acquire would run anyway - in db 0, as the default user - and
 * leave a lock held that nobody knows of; it waits for their replies.
 * The scripts are cached first, so an EVALSHA that got through would land. */
static void test_refused_handshake(const rh_server *s) {
    static const struct { int db; const char *pass; rlock_status st; const char *says; } cases[] = {
        { 99, NULL, RLOCK_E_REDIS, "DB index is out of range" },
        { 0, "nosuchpw", RLOCK_E_AUTH, "AUTH" },
    };
    size_t i;
    rh_tconn t;
    CHECK(tc_tcp(&t, s) == 0);
    basic_cycle(&t.cl, s, "handshake:warm", "scripts cached");
    rh_tc_close(&t);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlock_posix_conn c;
        rlock_node node;
        rlock_client cl;
        rlock_lock lk;
        CHECK_EQ_LL(rlock_posix_init_tcp(&c, "127.0.0.1", s->port, 1000), 0);
        CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&c)), RLOCK_OK);
        node.db = cases[i].db;
        node.password = cases[i].pass;
        CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, NULL), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "handshake:k", 11, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), cases[i].st);
        CHECK_MSG(strstr(rlock_node_error(&node), cases[i].says) != NULL, "%s", rlock_node_error(&node));
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        CHECK_MSG(rh_int(s, "EXISTS handshake:k") == 0, "case %d: a lock left held in db 0", (int)i);
        rlock_client_close(&cl);
        rlock_posix_close(&c);
    }
}

/* cfg.pubsub on a node whose connection is the program's hiredis context:
 * rlock must not switch that connection to RESP3 (HELLO 3) - hiredis 0.14
 * then failed the program's next command ("Protocol error, got "%" as
 * reply type byte"). A contended wait still works (it backs off). */
static void test_hiredis_pubsub_resp2(const rh_server *s) {
    redisContext *rc = rh_connect(s);
    rlock_hiredis_conn hc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk, other;
    rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
    rh_tconn t;
    redisReply *r;
    rlock_status st;
    CHECK(rc != NULL);
    if (!rc) return;
    cfg.pubsub = 1;
    CHECK_EQ_LL(rlock_hiredis_init(&hc, rc), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_hiredis_transport(&hc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "hps:k", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK(tc_tcp(&t, s) == 0);
    CHECK_EQ_ST(rlock_lock_init(&other, &t.cl, "hps:k", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire(&other, 1500, 0); /* expires: lk's wait ends by it */
    CHECK_MSG(st == RLOCK_OK, "%s: %s / %s", rlock_status_str(st), rlock_lock_error(&other), rlock_client_error(&t.cl));
    CHECK_EQ_ST(rlock_acquire(&lk, 30000, 5000), RLOCK_OK);
    r = (redisReply *)redisCommand(rc, "HGETALL hps:none"); /* a map under RESP3 */
    CHECK_MSG(r && r->type == REDIS_REPLY_ARRAY && rc->err == 0, "program's reply: %s", rc->errstr);
    if (r) freeReplyObject(r);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS hps:k"), 0);
    rh_tc_close(&t);
    rlock_client_close(&cl);
    redisFree(rc);
}

/* An acquire script that fails after its write: with fencing, the INCR
 * of a fence key that holds no integer (or is at 2^63 - 1) fails the
 * script after the SET (the reentrant script's HINCRBY), and Redis keeps
 * what the script wrote. Before: the acquire said E_REDIS and the lock
 * stayed held for the whole TTL, nobody knowing of it. Now the error is
 * an unknown outcome: the cleanup releases it (by token). */
static void test_script_error_after_write(const rh_server *s) {
    static const struct { rlock_kind kind; const char *fence; const char *says; } cases[] = {
        { RLOCK_KIND_SIMPLE, "abc", "not an integer" },
        { RLOCK_KIND_REENTRANT, "abc", "not an integer" },
        { RLOCK_KIND_SIMPLE, "9223372036854775807", "overflow" },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
        rh_tconn t;
        rlock_lock lk;
        cfg.fencing = 1;
        CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
        CHECK(rh_int(s, "SET {fe:k}:fence %s", cases[i].fence) == -999); /* (+OK: not an integer) */
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "fe:k", 4, cases[i].kind), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_E_REDIS);
        CHECK_MSG(strstr(rlock_node_error(&t.node), cases[i].says) != NULL, "%s", rlock_node_error(&t.node));
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        CHECK_MSG(rh_int(s, "EXISTS fe:k") == 0, "case %d: a lock left held after E_REDIS (PTTL %lld)", (int)i,
                  rh_int(s, "PTTL fe:k"));
        rh_int(s, "DEL {fe:k}:fence");
        CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK); /* a good fence key: works again */
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        CHECK_EQ_LL(rh_int(s, "DEL {fe:k}:fence"), 1);
        rh_tc_close(&t);
    }
}

/* Fence tokens are exact over INCR's whole range: the counter pre-set to
 * 2^53 and to 2^63 - 2, each kind's next token is 2^53 + 1 and 2^63 - 1.
 * Before: the acquire scripts returned INCR's answer, a Lua number (a
 * double), and the token came back rounded (2^53 + 1 as 2^53, 2^63 - 1 as
 * -2^63: the double 2^63 cast back). Now they return the counter's text. */
static void test_fence_exact(const rh_server *s) {
    static const char *const pre[2] = { "9007199254740992", "9223372036854775806" };
    static const long long want[2] = { 9007199254740993LL, 9223372036854775807LL };
    static const rlock_kind kinds[2] = { RLOCK_KIND_SIMPLE, RLOCK_KIND_REENTRANT };
    int i, k, fair;
    for (fair = 0; fair < 2; fair++)
        for (k = 0; k < 2; k++)
            for (i = 0; i < 2; i++) {
                rlock_config cfg = cfg_node_timeout(T_NODE_TIMEOUT);
                rh_tconn t;
                rlock_lock lk;
                cfg.fencing = 1;
                CHECK(rh_tc_open(&t, s, 0, &cfg, NULL, NULL) == 0);
                CHECK(rh_int(s, "SET {fx:k}:fence %s", pre[i]) == -999); /* (+OK) */
                CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "fx:k", 4, kinds[k]), RLOCK_OK);
                if (fair) CHECK_EQ_ST(rlock_lock_set_fair(&lk, 1, 1000), RLOCK_OK);
                CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK);
                CHECK_MSG(rlock_fence_token(&lk) == want[i], "fair %d kind %d: fence %lld, want %lld", fair,
                          (int)kinds[k], rlock_fence_token(&lk), want[i]);
                if (k == 1) { /* re-entry keeps the first grant's token */
                    CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK);
                    CHECK_EQ_LL(rlock_fence_token(&lk), want[i]);
                    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
                }
                CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
                CHECK_EQ_LL(rh_int(s, "DEL {fx:k}:fence {fx:k}:waiters"), 1);
                rh_tc_close(&t);
            }
}

/* A hiredis context the program SELECTs to another db between lock
 * operations: rlock's requests still run in node.db (it SELECTs it again on
 * the shared connection before each one). Before: the release went to the
 * program's db 2, reported LOST and left the lock held in db 3; the next
 * acquire was granted in db 2 while db 3 still held it. */
static long long in_db(const rh_server *s, int db, const char *key) {
    char lua[96];
    snprintf(lua, sizeof lua, "redis.call('select',%d) return redis.call('exists',KEYS[1])", db);
    return rh_int(s, "EVAL %s 1 %s", lua, key);
}

static void test_hiredis_program_select(const rh_server *s) {
    redisContext *rc = rh_connect(s);
    rlock_hiredis_conn hc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    redisReply *r;
    CHECK(rc != NULL);
    if (!rc) return;
    CHECK_EQ_LL(rlock_hiredis_init(&hc, rc), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_hiredis_transport(&hc)), RLOCK_OK);
    node.db = 3;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, NULL), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "hsel:k", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK);
    CHECK_EQ_LL(in_db(s, 3, "hsel:k"), 1);
    r = (redisReply *)redisCommand(rc, "SELECT 2"); /* the program's own db */
    CHECK(reply_is(r, "OK"));
    CHECK_EQ_ST(rlock_extend(&lk, 30000), RLOCK_OK);
    r = (redisReply *)redisCommand(rc, "SELECT 2");
    CHECK(reply_is(r, "OK"));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_MSG(in_db(s, 3, "hsel:k") == 0, "the lock was left held in db 3");
    r = (redisReply *)redisCommand(rc, "SELECT 2");
    CHECK(reply_is(r, "OK"));
    CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK);
    CHECK_EQ_LL(in_db(s, 3, "hsel:k"), 1);
    CHECK_EQ_LL(in_db(s, 2, "hsel:k"), 0);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK_EQ_LL(in_db(s, 3, "hsel:k"), 0);
    rlock_client_close(&cl);
    redisFree(rc);
}

static void test_connect_error_text(void) {
    rlock_posix_conn c;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    char want[64];
    int port = rh_free_port(); /* bound then released: nobody listens there */
    CHECK(port > 0);
    CHECK_EQ_LL(rlock_posix_init_tcp(&c, "127.0.0.1", port, 1000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&c)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, NULL), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 10000, 0), RLOCK_E_IO);
    snprintf(want, sizeof want, "connect 127.0.0.1:%d: Connection refused", port);
    CHECK_MSG(strcmp(rlock_node_error(&node), want) == 0, "node error: %s", rlock_node_error(&node));
    rlock_client_close(&cl);
    rlock_posix_close(&c);
}

int main(void) {
    rh_server s;
    int fds0, fds1;
    unsigned long long t0 = rh_now_ms();

    quick = getenv("RLOCK_TEST_QUICK") != NULL && getenv("RLOCK_TEST_QUICK")[0] != '\0' &&
            strcmp(getenv("RLOCK_TEST_QUICK"), "0") != 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();

    if (rh_server_start(&s, NULL) != 0) {
        CHECK_MSG(0, "could not start redis-server");
        return check_summary("redis");
    }
    test_basic(&s);
    test_script_shas(&s);
    test_mutex(&s);
    test_token_safety(&s);
    test_sigstop(&s);
    test_reentrant(&s);
    test_noscript(&s);
    test_wrongtype(&s);
    test_maxclients(&s);
    test_oom_readonly(&s);
    test_wait_first_connect(&s);
    test_nonblocking(&s);
    test_destroy_in_flight(&s);
    test_extend_late_lost(&s);
    test_pipelined_locks(&s);
    test_blocking_beside_done_op(&s);
    test_many_locks(&s);
    test_stalled_program(&s);
    test_stalled_behind_cleanup(&s);
    test_cancel_unsent(&s);
    test_cancel_unsent_extend_release(&s);
    test_push_before_cleanup_reply(&s);
    test_connect_error_text();
    test_refused_handshake(&s);
    test_hiredis_program_select(&s);
    test_script_error_after_write(&s);
    test_fence_exact(&s);
    test_hiredis_pubsub_resp2(&s);
    test_max_key_aux(&s);
    test_connect_same_server(&s);
    test_release_unknown(&s);
    test_fault02_holder_killed(&s);
    test_fault22_eintr(&s);
    test_server_faults(&s); /* restarts s: keep it last on s */
    test_auth();
    test_fault09_restart_without_persistence();

    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0); /* no lock left behind */
    rh_server_stop(&s);
    CHECK_EQ_LL(s.pid, -1);
    CHECK_EQ_LL(rh_count_children(), 0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    printf("redis: %s run in %lld ms\n", quick ? "quick" : "full", since(t0));
    return check_summary("redis");
}
