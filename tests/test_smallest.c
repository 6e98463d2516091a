/* test_smallest.c - the smallest configuration (RLOCK_SMALLEST: every feature
 * that compiles out left out, one node, 4 requests in flight) against a real
 * redis-server the test starts on a free loopback port and stops by PID.
 * Its buffers are sized by what it sends and reads (rlock.h section 1: a
 * 496-byte TX buffer at the default RLOCK_MAX_KEY_LEN, a 256-byte RX buffer),
 * and this shows they are enough, at the longest key, for what a lock does:
 *   - acquire, extend, release of a RLOCK_MAX_KEY_LEN-byte binary key; the
 *     server holds exactly our token, with the TTL asked;
 *   - the same behind AUTH with a 100-byte password: AUTH and the first
 *     attempt do not fit in the TX buffer together, so the attempt goes out
 *     once AUTH is sent - it must not fail;
 *   - a contended acquire waits by backoff and times out; then succeeds;
 *   - more locks at once than the pipeline holds (8 on 4): each waits for
 *     room, none fails;
 *   - an error reply (a hash under the key: WRONGTYPE) fits the RX buffer and
 *     is reported as itself, not as a protocol error.
 * The scripts are loaded first (SCRIPT LOAD): without the EVAL fallback,
 * rlock only sends EVALSHA. */
#define RLOCK_SMALLEST
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "harness.h"
#include "check.h"

#define PASSWORD "p0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop"
#define NLOCKS 8

static redisContext *g_rc; /* the test's own connection, authenticated once a password is set */

static redisReply *cmd(const char *fmt, ...) {
    va_list ap;
    redisReply *r;
    va_start(ap, fmt);
    r = (redisReply *)redisvCommand(g_rc, fmt, ap);
    va_end(ap);
    return r;
}
static int cmd_ok(redisReply *r, int type) {
    int ok = r && r->type == type;
    if (r) freeReplyObject(r);
    return ok;
}

/* A key of RLOCK_MAX_KEY_LEN bytes, every byte value but '{' and '}' (so its
 * auxiliary names are the longest form, "{key}..."). */
static void make_key(char *key, char tag) {
    size_t i;
    for (i = 0; i < RLOCK_MAX_KEY_LEN; i++) {
        unsigned char b = (unsigned char)(i * 7u + (unsigned char)tag);
        key[i] = (char)(b == '{' || b == '}' ? 'x' : b);
    }
}

typedef struct scli {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
} scli;

static int scli_open(scli *t, const rh_server *s, const char *password) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    if (rlock_posix_init_tcp(&t->pc, "127.0.0.1", s->port, 1000) != 0) return -1;
    if (rlock_node_init(&t->node, rlock_posix_transport(&t->pc)) != RLOCK_OK) return -1;
    t->node.password = password;
    return rlock_client_init(&t->cl, &t->node, 1, &cfg) == RLOCK_OK ? 0 : -1;
}
static void scli_close(scli *t) {
    rlock_client_close(&t->cl);
    rlock_posix_close(&t->pc);
}

/* The server holds exactly lk's token under key, with a TTL in (0, ttl]. */
static int held_by(const char *key, const rlock_lock *lk, long long ttl) {
    redisReply *r = cmd("GET %b", key, (size_t)RLOCK_MAX_KEY_LEN);
    int ok = r && r->type == REDIS_REPLY_STRING && strlen(rlock_lock_token(lk)) == r->len &&
             memcmp(r->str, rlock_lock_token(lk), r->len) == 0;
    long long pttl;
    if (r) freeReplyObject(r);
    r = cmd("PTTL %b", key, (size_t)RLOCK_MAX_KEY_LEN);
    pttl = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -9;
    if (r) freeReplyObject(r);
    return ok && pttl > 0 && pttl <= ttl;
}
static int absent(const char *key) {
    redisReply *r = cmd("EXISTS %b", key, (size_t)RLOCK_MAX_KEY_LEN);
    int ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 0;
    if (r) freeReplyObject(r);
    return ok;
}

static void test_cycle(const rh_server *s, const char *password) {
    scli t;
    rlock_lock lk, other;
    static char key[RLOCK_MAX_KEY_LEN];
    unsigned long long t0;
    make_key(key, password ? 'a' : 'b');
    CHECK(scli_open(&t, s, password) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, key, sizeof key, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&other, &t.cl, key, sizeof key, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK);
    CHECK(held_by(key, &lk, 5000));
    CHECK_EQ_ST(rlock_extend(&lk, 20000), RLOCK_OK);
    CHECK(held_by(key, &lk, 20000));
    /* held: another handle waits by backoff, then gives up */
    t0 = rh_now_ms();
    CHECK_EQ_ST(rlock_acquire(&other, 5000, 200), RLOCK_TIMEOUT);
    CHECK(rh_now_ms() - t0 >= 150);
    CHECK(held_by(key, &lk, 20000));
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    CHECK(absent(key));
    CHECK_EQ_ST(rlock_acquire(&other, 5000, 200), RLOCK_OK);
    CHECK(held_by(key, &other, 5000));
    CHECK_EQ_ST(rlock_release(&other), RLOCK_OK);
    CHECK(absent(key));
    CHECK_EQ_ST(rlock_node_status(&t.node), RLOCK_OK);
    scli_close(&t);
}

/* NLOCKS acquires begun at once on a pipeline of RLOCK_MAX_PIPELINE. */
static void test_more_locks_than_pipeline(const rh_server *s) {
    scli t;
    static rlock_lock lk[NLOCKS];
    static char key[NLOCKS][RLOCK_MAX_KEY_LEN];
    int i, left, rounds = 0, ok = 0;
    CHECK(NLOCKS > RLOCK_MAX_PIPELINE);
    CHECK(scli_open(&t, s, PASSWORD) == 0);
    for (i = 0; i < NLOCKS; i++) {
        make_key(key[i], (char)('c' + i));
        CHECK_EQ_ST(rlock_lock_init(&lk[i], &t.cl, key[i], sizeof key[i], RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire_begin(&lk[i], 10000, 0), RLOCK_WOULD_BLOCK);
    }
    for (left = NLOCKS; left > 0 && rounds < 20000; rounds++) {
        rlock_interest in[2];
        uint32_t tmo;
        size_t n = rlock_client_interest(&t.cl, in, 2, &tmo);
        if (n && in[0].fd >= 0) {
            struct pollfd p;
            p.fd = in[0].fd;
            p.events = (short)(((in[0].events & RLOCK_WANT_READ) ? POLLIN : 0) | ((in[0].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            (void)poll(&p, 1, (int)(tmo > 50 ? 50 : tmo));
        }
        (void)rlock_client_step(&t.cl);
        for (i = 0, left = 0; i < NLOCKS; i++) {
            rlock_status st = rlock_result(&lk[i]);
            if (st == RLOCK_WOULD_BLOCK) left++;
            else if (st == RLOCK_OK) ok++;
            else if (st != RLOCK_E_STATE) CHECK_MSG(0, "lock %d: %s (%s)", i, rlock_status_str(st), rlock_node_error(&t.node));
        }
    }
    CHECK_EQ_LL(ok, NLOCKS);
    for (i = 0; i < NLOCKS; i++) {
        CHECK(held_by(key[i], &lk[i], 10000));
        CHECK_EQ_ST(rlock_release(&lk[i]), RLOCK_OK);
        CHECK(absent(key[i]));
    }
    scli_close(&t);
}

/* A hash under the key: the script's WRONGTYPE error line fits RLOCK_RX_BUF. */
static void test_error_reply(const rh_server *s) {
    scli t;
    rlock_lock lk;
    static char key[RLOCK_MAX_KEY_LEN];
    make_key(key, 'w');
    CHECK(cmd_ok(cmd("HSET %b f v", key, sizeof key), REDIS_REPLY_INTEGER));
    CHECK(scli_open(&t, s, PASSWORD) == 0);
    CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, key, sizeof key, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_E_WRONGTYPE);
    CHECK_MSG(strstr(rlock_node_error(&t.node), "WRONGTYPE") != NULL, "node error: %s", rlock_node_error(&t.node));
    CHECK(cmd_ok(cmd("DEL %b", key, sizeof key), REDIS_REPLY_INTEGER));
    CHECK_EQ_ST(rlock_acquire(&lk, 5000, 0), RLOCK_OK); /* the connection is still good */
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    scli_close(&t);
}

/* A transport never used: requests are only encoded. */
static long no_send(void *ctx, const unsigned char *buf, size_t len) { (void)ctx; (void)buf; (void)len; return RLOCK_IO_ERROR; }
static long no_recv(void *ctx, unsigned char *buf, size_t len) { (void)ctx; (void)buf; (void)len; return RLOCK_IO_ERROR; }

/* The longest request this configuration encodes (every script of a simple
 * lock, EVALSHA and FCALL, the longest key, the largest numbers, queued,
 * with cfg.fencing asked) plus WAIT fits the TX buffer: how tight the floor
 * is. */
static void test_floor_tight(void) {
    static unsigned char buf[4 * RLOCK_TX_BUF];
    static char key[RLOCK_MAX_KEY_LEN];
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    rlock_config cfg;
    rlock_transport tr;
    size_t longest = 0;
    int op, how;
    memset(&tr, 0, sizeof tr);
    tr.send = no_send;
    tr.recv = no_recv;
    rlock_config_init(&cfg);
    cfg.fencing = 1; /* refused at acquire without the fence in the build: set here to see it is not sent */
    make_key(key, 'f');
    CHECK_EQ_ST(rlock_node_init(&node, &tr), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, key, sizeof key, RLOCK_KIND_SIMPLE), RLOCK_OK);
    lk.op.queue = 1;
    lk.op.wait_left = 86400000u;
    lk.op.round.ttl = RLOCK_MAX_TTL_MS;
    lk.held_mask = 1;
    for (op = RLOCK__OP_ACQUIRE; op <= RLOCK__OP_RELEASE; op++) {
        lk.op.round.script = rlock__script_for(&lk, op);
        for (how = RLOCK__RUN_EVALSHA; how <= RLOCK__RUN_FCALL; how += RLOCK__RUN_FCALL - RLOCK__RUN_EVALSHA) {
            size_t n = rlock__encode_lock(&lk, 0, buf, sizeof buf, how);
            CHECK(n > 0);
            if (n > longest) longest = n;
        }
    }
    CHECK_MSG(longest + 48 <= RLOCK_TX_BUF, "longest request %lu + WAIT does not fit RLOCK_TX_BUF %lu",
              (unsigned long)longest, (unsigned long)RLOCK_TX_BUF);
    printf("smallest: longest request %lu B + WAIT 48 of RLOCK_TX_BUF %lu\n", (unsigned long)longest,
           (unsigned long)RLOCK_TX_BUF);
}

int main(void) {
    rh_server srv;
    int i, fds0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();
    printf("smallest: TX %u B, RX %u B, pipeline %u; x86-64: lock %u + node %u + client %u = %u B\n",
           (unsigned)RLOCK_TX_BUF, (unsigned)RLOCK_RX_BUF, (unsigned)RLOCK_MAX_PIPELINE, (unsigned)sizeof(rlock_lock),
           (unsigned)sizeof(rlock_node), (unsigned)sizeof(rlock_client),
           (unsigned)(sizeof(rlock_lock) + sizeof(rlock_node) + sizeof(rlock_client)));
    test_floor_tight();
    if (rh_server_start(&srv, NULL) != 0) {
        CHECK_MSG(0, "could not start redis-server");
        return check_summary("smallest");
    }
    g_rc = rh_connect(&srv);
    CHECK(g_rc != NULL);
    if (g_rc) {
        for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
            redisReply *r;
            if (!rlock_script_text(i)[0]) continue; /* left out of this configuration */
            r = cmd("SCRIPT LOAD %s", rlock_script_text(i));
            CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, rlock_script_sha(i)) == 0);
            if (r) freeReplyObject(r);
        }
        test_cycle(&srv, NULL);
        CHECK(cmd_ok(cmd("CONFIG SET requirepass %s", PASSWORD), REDIS_REPLY_STATUS));
        CHECK(cmd_ok(cmd("AUTH %s", PASSWORD), REDIS_REPLY_STATUS));
        test_cycle(&srv, PASSWORD);
        test_more_locks_than_pipeline(&srv);
        test_error_reply(&srv);
        redisFree(g_rc);
    }
    rh_server_stop(&srv);
    CHECK_EQ_LL(rh_count_fds(), fds0);
    return check_summary("smallest");
}
