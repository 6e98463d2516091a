/* test_unit.c - unit tests of rlock.h without a network or a Redis server:
 * the RESP codec (every reply type, every split point, malformed input, a
 * fixed-seed fuzz loop), rlock_aux_key against Redis Cluster's own keyslot
 * function, status names, argument checks, and the lock state machine driven
 * through a scripted in-memory transport on a fake clock.
 *
 * The fake transport (fk_*) holds, per node, a script of expected requests:
 * each step may check the exact bytes (or a substring) of the request and
 * queues a canned reply. Per call it can move 1 byte at a time, say "would
 * block" every other call, fail or close at a chosen call or mid-reply, return
 * more than asked, refuse or stall the connect, and hold a reply back (a "late"
 * reply, delivered only if the same connection is used again). It counts
 * connects and closes so tests can see a connection being dropped and made
 * again. Time never comes from the wall clock: now_ms/sleep_ms/random_bytes
 * are hooks on g_now, and the transport's wait() advances g_now when nothing
 * is ready, so a "hang" turns into a timeout at once.
 *
 * Section 7 holds FAULTS.md rows tested here and nowhere else: backoff jitter
 * (row 1) and the clock (row 10); test_bad_args_every_public_function walks
 * every public function with bad input (row 23), the RLOCK_WATCHDOG ones too
 * (built here for that; no thread is ever started). docs/FAULTS-MATRIX.md
 * maps every row to its tests.
 *
 * Build: gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -g -fsanitize=address,undefined \
 *            -fno-sanitize-recover=all -I. -Itests tests/test_unit.c -lpthread -o build/test_unit
 * Also builds as C++ and with clang. RLOCK_TEST_QUICK=1 (set by `make test`
 * under valgrind) shortens the fuzz loop. */
#ifndef RLOCK_NO_POSIX /* bare metal (tests/cross) has no threads */
#define RLOCK_WATCHDOG /* its functions' argument checks are tested here; no thread is started */
#endif
#define RLOCK_IMPLEMENTATION
#include "rlock.h"
#include "check.h"
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "why.h"

/* Script numbering (rlock_script_text ids); test_scripts() checks it. */
enum { S_ACQ = 0, S_EXT, S_REL, S_RACQ, S_REXT, S_RREL };

#define GRANT "*2\r\n:1\r\n:1\r\n"
/* a lock kind for tests where any kind will do: reentrant when it is built */
#ifdef RLOCK_NO_REENTRANT
#define KIND_RE RLOCK_KIND_SIMPLE
#else
#define KIND_RE RLOCK_KIND_REENTRANT
#endif
#define TTL 10000LL
#define DRIFT 102LL      /* TTL * 10 / 1000 + 2 */
#define NODE_TMO 250ULL  /* min(TTL / 10, 250) */
#define T0 1000000ULL

static const char *g_test = "";
static int g_quiet = 0; /* the fake self-test provokes its own complaints */

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */
/* ------------------------------------------------------------------------ */

static const unsigned char *mem_find(const unsigned char *h, size_t hn, const void *needle, size_t nn) {
    size_t i;
    if (nn == 0) return h;
    for (i = 0; i + nn <= hn; i++)
        if (memcmp(h + i, needle, nn) == 0) return h + i;
    return NULL;
}

static void dump(const char *what, const unsigned char *b, size_t n) {
    size_t i;
    fprintf(stderr, "    %s (%lu bytes): \"", what, (unsigned long)n);
    for (i = 0; i < n && i < 400; i++) {
        if (b[i] == '\r') fputs("\\r", stderr);
        else if (b[i] == '\n') fputs("\\n", stderr);
        else if (b[i] < 32 || b[i] > 126) fprintf(stderr, "\\x%02x", b[i]);
        else fputc(b[i], stderr);
    }
    fputs(n > 400 ? "...\"\n" : "\"\n", stderr);
}

/* An encoder written independently of rlock's, for expected request bytes. */
static size_t mk_cmd(unsigned char *out, int argc, const char *const *argv, const size_t *lens) {
    size_t pos = 0;
    int i;
    pos += (size_t)sprintf((char *)out, "*%d\r\n", argc);
    for (i = 0; i < argc; i++) {
        pos += (size_t)sprintf((char *)out + pos, "$%lu\r\n", (unsigned long)lens[i]);
        if (lens[i]) memcpy(out + pos, argv[i], lens[i]);
        pos += lens[i];
        out[pos++] = '\r';
        out[pos++] = '\n';
    }
    return pos;
}

/* Split a request (a RESP array of bulk strings) into its arguments with a
 * reader independent of rlock's. Returns argc, or -1 when it is not one. */
#define MAX_ARGS 16
static int split_cmd(const unsigned char *b, size_t n, const unsigned char **arg, size_t *len) {
    size_t pos = 0;
    long argc = 0, i;
    char *end;
    if (n < 4 || b[0] != '*') return -1;
    argc = strtol((const char *)b + 1, &end, 10);
    if (argc < 1 || argc > MAX_ARGS || (const unsigned char *)end + 2 > b + n || end[0] != '\r') return -1;
    pos = (size_t)((const unsigned char *)end - b) + 2;
    for (i = 0; i < argc; i++) {
        long l;
        if (pos >= n || b[pos] != '$') return -1;
        l = strtol((const char *)b + pos + 1, &end, 10);
        if (l < 0 || (const unsigned char *)end + 2 > b + n) return -1;
        pos = (size_t)((const unsigned char *)end - b) + 2;
        if (pos + (size_t)l + 2 > n) return -1;
        arg[i] = b + pos;
        len[i] = (size_t)l;
        pos += (size_t)l + 2;
    }
    return pos == n ? (int)argc : -1;
}
static int arg_is(const unsigned char *a, size_t al, const char *s, size_t sl) {
    return al == sl && memcmp(a, s, sl) == 0;
}

/* The lock scripts' calling convention, checked by structure so that added
 * arguments do not break it: EVALSHA sha|EVAL body, numkeys, the key first,
 * the fence counter "{key}:fence" among the keys when cfg.fencing is on (acquire
 * scripts only), then the owner token/id and the ttl among the arguments. */
static int g_fencing = 0;
static int check_script_req(const unsigned char *b, size_t n, int use_eval, int script, const char *key,
                            size_t key_len, const char *owner, const char *ttl, const char **why) {
    const unsigned char *arg[MAX_ARGS];
    size_t len[MAX_ARGS];
    char fence[RLOCK_MAX_KEY_LEN + 16];
    size_t fence_len = rlock_aux_key(fence, sizeof fence, key, key_len, ":fence");
    int argc = split_cmd(b, n, arg, len), k, i, has_owner = 0, has_ttl = 0, has_fence = 0;
    const char *cmd = use_eval ? "EVAL" : "EVALSHA";
    const char *body = use_eval ? rlock_script_text(script) : rlock_script_sha(script);
    *why = "not a RESP array of bulk strings";
    if (argc < 0) return 0;
    *why = "fewer than 6 arguments";
    if (argc < 6) return 0;
    *why = "wrong command";
    if (!arg_is(arg[0], len[0], cmd, strlen(cmd))) return 0;
    *why = "wrong script (SHA or body)";
    if (!arg_is(arg[1], len[1], body, strlen(body))) return 0;
    *why = "bad numkeys";
    if (len[2] != 1 || arg[2][0] < '1' || arg[2][0] > '4') return 0;
    k = arg[2][0] - '0';
    if (3 + k > argc) return 0;
    *why = "KEYS[1] is not the lock key";
    if (!arg_is(arg[3], len[3], key, key_len)) return 0;
    for (i = 4; i < 3 + k; i++) if (fence_len && arg_is(arg[i], len[i], fence, fence_len)) has_fence = 1;
    for (i = 3 + k; i < argc; i++) {
        if (arg_is(arg[i], len[i], owner, strlen(owner))) has_owner = 1;
        if (arg_is(arg[i], len[i], ttl, strlen(ttl))) has_ttl = 1;
    }
    *why = "owner token/id missing from ARGV";
    if (!has_owner) return 0;
    *why = "ttl missing from ARGV";
    if (!has_ttl) return 0;
    *why = g_fencing ? "fence key missing from KEYS" : "fence key sent with fencing off";
    if (has_fence != (g_fencing && (script == 0 || script == 3))) return 0;
    *why = "";
    return 1;
}

/* deterministic PRNG for the fuzz loop and key generation */
static unsigned long long g_rng = 0x2545F4914F6CDD1DULL;
static unsigned rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (unsigned)((g_rng * 2685821657736338717ULL) >> 33);
}

static unsigned char *dup_exact(const void *s, size_t n) {
    unsigned char *b = (unsigned char *)malloc(n ? n : 1);
    if (!b) { fprintf(stderr, "out of memory\n"); exit(2); }
    if (n) memcpy(b, s, n);
    return b;
}

/* Parse from a heap block of exactly n bytes, so ASan sees any overread. */
static long parse_exact(const void *s, size_t n, size_t max_len) {
    rlock_reply r;
    unsigned char *b = dup_exact(s, n);
    long rc = rlock_resp_parse(b, n, max_len, &r);
    free(b);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* hooks: fake clock, sleep, random                                          */
/* ------------------------------------------------------------------------ */

static uint64_t g_now = T0;
static int g_rand_fail = 0;
static unsigned g_rand_ctr = 0;
#define MAX_SLEEPS 256
static uint32_t g_sleep_ms[MAX_SLEEPS];
static uint64_t g_sleep_at[MAX_SLEEPS];
static int g_n_sleeps = 0;
static uint64_t g_slept = 0;
static long g_now_calls = 0;

static uint64_t hk_now(void *u) {
    (void)u;
    if (++g_now_calls > 20000000L) { fprintf(stderr, "%s: runaway loop (clock hook)\n", g_test); abort(); }
    return g_now;
}
static void hk_sleep(void *u, uint32_t ms) {
    (void)u;
    if (g_n_sleeps < MAX_SLEEPS) { g_sleep_ms[g_n_sleeps] = ms; g_sleep_at[g_n_sleeps] = g_now; }
    g_n_sleeps++;
    g_slept += ms;
    g_now += ms;
}
static int hk_random(void *u, unsigned char *b, size_t n) {
    size_t i;
    (void)u;
    if (g_rand_fail) return -1;
    for (i = 0; i < n; i++) b[i] = (unsigned char)(0x5a ^ (g_rand_ctr++ * 131u + 7u));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* the scripted fake transport                                               */
/* ------------------------------------------------------------------------ */

#define FK_STEPS 40
#define FK_LOG 40
#define FK_REQ 3000
#define FK_IO 4096

typedef struct fk_step {
    unsigned char expect[FK_REQ]; /* exact request bytes when has_expect */
    size_t expect_len;
    int has_expect;
    const char *contains;         /* substring the request must contain (NULL: any) */
    unsigned char reply[256];
    size_t reply_len;
    int hang;                     /* hold the reply back: delivered before the next reply on
                                     this connection, discarded by close() */
    size_t cut;                   /* with cut_code: deliver only `cut` reply bytes, then fail */
    long cut_code;                /* RLOCK_IO_CLOSED or RLOCK_IO_ERROR, 0 = none */
    uint64_t delay_ms;            /* the fake clock moves on while the server "works" */
    uint64_t clock_back;          /* ... or moves back */
} fk_step;

typedef struct fake {
    int id;
    fk_step steps[FK_STEPS];
    int n_steps, pos, repeat_last;
    /* behaviour */
    size_t max_chunk;             /* bytes per send/recv call, 0 = all */
    int block_alt;                /* odd-numbered send/recv calls would block */
    long send_fail_at, send_fail_code, recv_fail_at, recv_fail_code;
    int over_send, over_recv;     /* return len + 1 */
    int limit_send;               /* send takes at most send_room bytes more, then would block */
    size_t send_room;
    int connect_fail, connect_block, connect_hang, peer_closed;
    size_t split_at;              /* first recv of each reply gives <= split_at bytes, then one WB */
    /* state */
    int connected, conn_id;
    unsigned char in[FK_IO];
    size_t in_len;
    unsigned char out[FK_IO];
    size_t out_len, out_off;
    int cut_pending;
    long cut_code;
    unsigned char late[256];
    size_t late_len;
    size_t split_left;
    int split_armed;
    /* what happened */
    long send_calls, recv_calls, connect_calls, close_calls, wait_calls, bytes_sent;
    int n_reqs;
    unsigned char req[FK_LOG][FK_REQ];
    size_t req_len[FK_LOG];
    int req_conn[FK_LOG];
    int unexpected, mismatch, bad_io, double_connect;
} fake;

static void fk_request(fake *f, const unsigned char *b, size_t n) {
    int idx = f->n_reqs++;
    fk_step *st;
    if (idx < FK_LOG) {
        size_t c = n < FK_REQ ? n : FK_REQ;
        memcpy(f->req[idx], b, c);
        f->req_len[idx] = c;
        f->req_conn[idx] = f->conn_id;
    }
    if (f->peer_closed) return; /* nobody is listening: no step is used */
    if (f->pos < f->n_steps) st = &f->steps[f->pos++];
    else if (f->repeat_last && f->n_steps) st = &f->steps[f->n_steps - 1];
    else {
        f->unexpected++;
        if (!g_quiet) fprintf(stderr, "%s: node %d: unexpected request #%d\n", g_test, f->id, idx);
        if (!g_quiet) dump("request", b, n);
        return;
    }
    if (st->has_expect && (n != st->expect_len || memcmp(b, st->expect, n) != 0)) {
        f->mismatch++;
        fprintf(stderr, "%s: node %d: request #%d differs\n", g_test, f->id, idx);
        dump("got ", b, n);
        dump("want", st->expect, st->expect_len);
    }
    if (st->contains && !mem_find(b, n, st->contains, strlen(st->contains))) {
        f->mismatch++;
        if (!g_quiet) {
            fprintf(stderr, "%s: node %d: request #%d lacks \"%s\"\n", g_test, f->id, idx, st->contains);
            dump("got", b, n);
        }
    }
    if (f->late_len) { /* the server answers the old command first */
        memcpy(f->out + f->out_len, f->late, f->late_len);
        f->out_len += f->late_len;
        f->late_len = 0;
    }
    g_now += st->delay_ms;
    g_now -= st->clock_back;
    if (st->hang) {
        memcpy(f->late, st->reply, st->reply_len);
        f->late_len = st->reply_len;
        return;
    }
    {
        size_t give = st->cut_code && st->cut < st->reply_len ? st->cut : st->reply_len;
        if (f->out_len + give > sizeof f->out) { f->mismatch++; return; }
        memcpy(f->out + f->out_len, st->reply, give);
        f->out_len += give;
        if (st->cut_code) { f->cut_pending = 1; f->cut_code = st->cut_code; }
        if (f->split_at) { f->split_armed = 1; f->split_left = f->split_at; }
    }
}

static void fk_process(fake *f) {
    for (;;) {
        rlock_reply r;
        long used = rlock_resp_parse(f->in, f->in_len, sizeof f->in, &r);
        size_t i;
        if (used == 0) return;
        if (used < 0 || r.v.type != RLOCK_RESP_ARRAY || r.count < 1) {
            f->mismatch++;
            fprintf(stderr, "%s: node %d: request is not a RESP array\n", g_test, f->id);
            dump("sent", f->in, f->in_len);
            f->in_len = 0;
            return;
        }
        for (i = 0; i < (size_t)r.count && i < RLOCK_RESP_MAX_ELEMS; i++)
            if (r.elem[i].type != RLOCK_RESP_BULK) f->mismatch++;
        fk_request(f, f->in, (size_t)used);
        memmove(f->in, f->in + used, f->in_len - (size_t)used);
        f->in_len -= (size_t)used;
    }
}

static void fk_guard(const fake *f) {
    if (f->send_calls + f->recv_calls + f->connect_calls > 5000000L) {
        fprintf(stderr, "%s: node %d: runaway loop in the transport\n", g_test, f->id);
        abort();
    }
}

static long fk_send(void *ctx, const unsigned char *buf, size_t len) {
    fake *f = (fake *)ctx;
    size_t n = len;
    f->send_calls++;
    fk_guard(f);
    if (!f->connected) { f->bad_io++; return RLOCK_IO_ERROR; }
    if (len == 0) { f->bad_io++; return RLOCK_IO_ERROR; }
    if (f->send_fail_at && f->send_calls == f->send_fail_at) return f->send_fail_code;
    if (f->block_alt && (f->send_calls & 1)) return RLOCK_IO_WOULD_BLOCK;
    if (f->max_chunk && n > f->max_chunk) n = f->max_chunk;
    if (f->limit_send) {
        if (!f->send_room) return RLOCK_IO_WOULD_BLOCK;
        if (n > f->send_room) n = f->send_room;
        f->send_room -= n;
    }
    if (f->in_len + n > sizeof f->in) { f->mismatch++; return RLOCK_IO_ERROR; }
    memcpy(f->in + f->in_len, buf, n);
    f->in_len += n;
    f->bytes_sent += (long)n;
    fk_process(f);
    if (f->over_send) return (long)len + 1;
    return (long)n;
}

static long fk_recv(void *ctx, unsigned char *buf, size_t len) {
    fake *f = (fake *)ctx;
    size_t n, avail;
    f->recv_calls++;
    fk_guard(f);
    if (!f->connected) { f->bad_io++; return RLOCK_IO_ERROR; }
    if (len == 0) { f->bad_io++; return RLOCK_IO_ERROR; }
    if (f->recv_fail_at && f->recv_calls == f->recv_fail_at) return f->recv_fail_code;
    if (f->block_alt && (f->recv_calls & 1)) return RLOCK_IO_WOULD_BLOCK;
    avail = f->out_len - f->out_off;
    if (!avail) {
        if (f->cut_pending) return f->cut_code;
        if (f->peer_closed) return RLOCK_IO_CLOSED;
        return RLOCK_IO_WOULD_BLOCK;
    }
    n = avail < len ? avail : len;
    if (f->max_chunk && n > f->max_chunk) n = f->max_chunk;
    if (f->split_armed) {
        if (f->split_left == 0) { f->split_armed = 0; return RLOCK_IO_WOULD_BLOCK; }
        if (n > f->split_left) n = f->split_left;
        f->split_left -= n;
    }
    memcpy(buf, f->out + f->out_off, n);
    f->out_off += n;
    if (f->out_off == f->out_len) f->out_off = f->out_len = 0;
    if (f->over_recv) return (long)len + 1;
    return (long)n;
}

static void fk_reset_conn(fake *f) {
    f->in_len = 0;
    f->out_len = f->out_off = 0;
    f->late_len = 0;
    f->cut_pending = 0;
    f->cut_code = 0;
    f->split_armed = 0;
    f->peer_closed = 0;
}

static int fk_connect(void *ctx) {
    fake *f = (fake *)ctx;
    f->connect_calls++;
    fk_guard(f);
    if (f->connect_hang) return RLOCK_IO_WOULD_BLOCK;
    if (f->connect_block > 0) { f->connect_block--; return RLOCK_IO_WOULD_BLOCK; }
    if (f->connect_fail) return RLOCK_IO_ERROR;
    if (f->connected) f->double_connect++;
    f->connected = 1;
    f->conn_id++;
    fk_reset_conn(f);
    return 1;
}

static void fk_close(void *ctx) {
    fake *f = (fake *)ctx;
    f->close_calls++;
    f->connected = 0;
    fk_reset_conn(f); /* a late reply dies with its connection */
}

static int fk_ready(const fake *f, int want) {
    if (want & RLOCK_WANT_WRITE) return !f->connect_hang;
    return f->out_off < f->out_len || f->cut_pending || f->peer_closed;
}

/* Ready: 1. Not ready: time passes until the timeout, then 0. */
static int fk_wait(void *ctx, int want, uint32_t timeout_ms) {
    fake *f = (fake *)ctx;
    f->wait_calls++;
    fk_guard(f);
    if (fk_ready(f, want)) return 1;
    g_now += timeout_ms;
    return 0;
}

/* A descriptor per connection: changes with every connect. */
static int fk_fd(void *ctx) {
    const fake *f = (const fake *)ctx;
    return f->connected ? 1000 + f->id * 100 + f->conn_id : -1;
}

static rlock_transport fk_transport(fake *f, int with_wait) {
    rlock_transport t;
    memset(&t, 0, sizeof t);
    t.ctx = f;
    t.send = fk_send;
    t.recv = fk_recv;
    t.connect = fk_connect;
    t.close = fk_close;
    t.wait = with_wait ? fk_wait : NULL;
    t.fd = fk_fd;
    return t;
}

/* Add a step: the request must contain `contains` (NULL: anything); `reply`
 * is queued (NULL: none). Returns the step for further settings. */
static fk_step *fk_add(fake *f, const char *contains, const char *reply) {
    fk_step *s;
    if (f->n_steps >= FK_STEPS) { fprintf(stderr, "too many steps\n"); abort(); }
    s = &f->steps[f->n_steps++];
    memset(s, 0, sizeof *s);
    s->contains = contains;
    if (reply) {
        s->reply_len = strlen(reply);
        memcpy(s->reply, reply, s->reply_len);
    }
    return s;
}
static void fk_exact(fk_step *s, const void *b, size_t n) {
    memcpy(s->expect, b, n);
    s->expect_len = n;
    s->has_expect = 1;
}
static int fk_sent_nothing(const fake *f) {
    return f->send_calls == 0 && f->connect_calls == 0 && f->bytes_sent == 0 && f->n_reqs == 0;
}
static int req_has(const fake *f, int i, const char *s) {
    return i < f->n_reqs && i < FK_LOG && mem_find(f->req[i], f->req_len[i], s, strlen(s)) != NULL;
}
static int req_eq(const fake *f, int i, const unsigned char *want, size_t n) {
    int ok = i < f->n_reqs && i < FK_LOG && f->req_len[i] == n && memcmp(f->req[i], want, n) == 0;
    if (!ok && i < f->n_reqs && i < FK_LOG) {
        fprintf(stderr, "%s: node %d: request #%d is not the expected one\n", g_test, f->id, i);
        dump("got ", f->req[i], f->req_len[i]);
        dump("want", want, n);
    }
    return ok;
}

/* ------------------------------------------------------------------------ */
/* test environment                                                          */
/* ------------------------------------------------------------------------ */

static fake F[RLOCK_MAX_NODES + 1];
static rlock_node N[RLOCK_MAX_NODES + 1];
static rlock_client C;
static rlock_config CFG;
static rlock_lock LK, LK2;
static size_t g_n;

static void env_reset(const char *name) {
    size_t i;
    g_test = name;
    memset(F, 0, sizeof F);
    memset(N, 0, sizeof N);
    memset(&C, 0, sizeof C);
    memset(&LK, 0, sizeof LK);
    memset(&LK2, 0, sizeof LK2);
    for (i = 0; i < RLOCK_MAX_NODES + 1; i++) F[i].id = (int)i;
    rlock_config_init(&CFG);
    CFG.now_ms = hk_now;
    CFG.sleep_ms = hk_sleep;
    CFG.random_bytes = hk_random;
    /* The scripted fake speaks scripts; the plain SET NX PX fast path has
     * tests of its own (test_plain_fast_path). */
    CFG.scripts_only = 1;
    g_now = T0;
    g_rand_fail = 0;
    g_rand_ctr = 0;
    g_n_sleeps = 0;
    g_slept = 0;
    g_now_calls = 0;
    g_n = 0;
    g_fencing = 0;
}

static void env_nodes(size_t n, int with_wait) {
    size_t i;
    for (i = 0; i < n; i++) {
        rlock_transport t = fk_transport(&F[i], with_wait);
        if (rlock_node_init(&N[i], &t) != RLOCK_OK) { fprintf(stderr, "node init\n"); abort(); }
    }
    g_n = n;
}

/* n nodes, a client over them and LK on "res:1". */
static void env_up(size_t n, int with_wait, rlock_kind kind) {
    env_nodes(n, with_wait);
    CHECK_EQ_ST(rlock_client_init(&C, N, n, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, kind), RLOCK_OK);
}

/* Every node's script was used exactly, with no surprises. */
/* One node whose transport has no connect hook: it comes connected (the
 * fake's connection 1). The client is not set up yet. */
static void env_no_connect_hook(const char *name) {
    rlock_transport t;
    env_reset(name);
    t = fk_transport(&F[0], 1);
    t.connect = NULL;
    CHECK_EQ_ST(rlock_node_init(&N[0], &t), RLOCK_OK);
    g_n = 1;
    F[0].connected = 1;
    F[0].conn_id = 1;
}

static void env_done(void) {
    size_t i;
    for (i = 0; i < g_n; i++) {
        const fake *f = &F[i];
        CHECK_MSG(f->unexpected == 0 && f->mismatch == 0 && f->bad_io == 0 && f->double_connect == 0 &&
                      f->pos == f->n_steps,
                  "%s: node %d: unexpected %d, mismatched %d, io on a closed connection %d, "
                  "connect while connected %d, steps used %d of %d",
                  g_test, f->id, f->unexpected, f->mismatch, f->bad_io, f->double_connect, f->pos,
                  f->n_steps);
    }
}

/* A non-blocking event loop: step; when no node can progress, jump the
 * clock to rlock_next_timeout_ms() (what a poll() timeout would do). */
static rlock_status drive(rlock_lock *lk, rlock_status st) {
    long guard = 0;
    while (st == RLOCK_WOULD_BLOCK) {
        size_t i;
        int ready = 0;
        for (i = 0; i < g_n; i++) {
            int w = rlock_node_wants(&N[i]);
            if (w && fk_ready(&F[i], w)) ready = 1;
        }
        if (!ready) g_now += rlock_next_timeout_ms(lk);
        st = rlock_step(lk);
        if (++guard > 2000000L) { fprintf(stderr, "%s: drive loop does not end\n", g_test); abort(); }
    }
    return st;
}

/* Check request #i of node f is the script call. */
static int req_script(const fake *f, int i, int use_eval, int script, const rlock_lock *lk,
                      const char *key, size_t key_len, const char *ttl) {
    const char *why = "no such request";
    int ok = i < f->n_reqs && i < FK_LOG &&
             check_script_req(f->req[i], f->req_len[i], use_eval, script, key, key_len, rlock_lock_token(lk), ttl, &why);
    if (!ok) {
        fprintf(stderr, "%s: node %d: request #%d: %s (want %s of script %d, ttl %s)\n", g_test, f->id, i, why,
                use_eval ? "EVAL" : "EVALSHA", script, ttl);
        if (i < f->n_reqs && i < FK_LOG) dump("got", f->req[i], f->req_len[i]);
    }
    return ok;
}
#define CHECK_REQ(f, i, ev, s, ttl) \
    CHECK_MSG(req_script(&(f), (i), (ev), (s), &LK, "res:1", 5, (ttl)), "%s", g_test)

/* ------------------------------------------------------------------------ */
/* 1. RESP parser                                                            */
/* ------------------------------------------------------------------------ */

typedef struct pcase { const char *s; size_t n; } pcase;
#define PC(lit) { lit, sizeof(lit) - 1 }

static const pcase valid_replies[] = {
    PC("+OK\r\n"), PC("+\r\n"), PC("-ERR something bad\r\n"), PC("-\r\n"), PC(":0\r\n"), PC(":-1\r\n"),
    PC(":42\r\n"), PC(":9223372036854775807\r\n"), PC(":-9223372036854775808\r\n"),
    PC("$0\r\n\r\n"), PC("$5\r\nhello\r\n"), PC("$6\r\na\0b\rc\n\r\n"), PC("$2\r\n\r\n\r\n"),
    PC("$-1\r\n"), PC("*-1\r\n"), PC("*0\r\n"), PC("*2\r\n:1\r\n:1\r\n"), PC("*2\r\n:0\r\n:5000\r\n"),
    PC("*3\r\n$3\r\nfoo\r\n*2\r\n:1\r\n+x\r\n:-5\r\n"), PC("*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n"),
    PC("*2\r\n$-1\r\n*-1\r\n"), PC("*1\r\n*0\r\n"), PC("*3\r\n-ERR x\r\n+OK\r\n$0\r\n\r\n"),
    PC("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:7\r\n"), /* 8 levels: the maximum */
#ifndef RLOCK_NO_WAITING /* RESP3 is read only where HELLO 3 may be sent (waiting) */
    /* RESP3: what Redis sends after HELLO 3 */
    PC("!3\r\nabc\r\n"), PC("_\r\n"), PC("%1\r\n:1\r\n:1\r\n"), PC(">1\r\n:1\r\n"), PC("#t\r\n"), PC("#f\r\n"),
    PC(",1.5\r\n"), PC(",-inf\r\n"), PC(",1e10\r\n"), PC("(123\r\n"), PC("(-3492890328409238509324850943850943825024385\r\n"),
    PC("=7\r\ntxt:abc\r\n"), PC("~1\r\n:1\r\n"), PC("~0\r\n"), PC("%0\r\n"), PC("|1\r\n+a\r\n:1\r\n:5\r\n"),
    PC(">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$16\r\n0123456789abcdef\r\n"),
    PC(">3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n"),
    PC("%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nmodules\r\n*0\r\n"),
    PC("*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n"), PC("|1\r\n+k\r\n%1\r\n+a\r\n+b\r\n*1\r\n_\r\n"),
    PC("%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n"), /* 8 levels */
#endif
};

static const pcase bad_replies[] = {
    PC("$-2\r\n"), PC("*-2\r\n"), PC("*4294967295\r\n"), PC("*4294967295\r\n:1\r\n"),
    PC(":99999999999999999999\r\n"), PC(":9223372036854775808\r\n"), PC(":-9223372036854775809\r\n"),
    PC(":12a\r\n"), PC(":\r\n"), PC(":-\r\n"), PC(": 1\r\n"), PC(":+1\r\n"), PC("$\r\n"), PC("*\r\n"),
    PC("$x\r\n"), PC(":1\n"), PC(":1\r:"), PC("+OK\rX\r\n"), PC("+O\nK\r\n"), PC("\r\n"), PC("\nX\r\n"),
    PC("=3\r\ntxt\r\n"), PC("=5\r\ntxtX1\r\n"), PC("#x\r\n"), PC("#\r\n"), PC("#tt\r\n"), PC("_x\r\n"),
    PC(",abc\r\n"), PC(",\r\n"), PC("(12a\r\n"), PC("(\r\n"), PC("(-\r\n"), PC("%-1\r\n"), PC(">-1\r\n"),
    PC("~-1\r\n"), PC("!-1\r\n"), PC("|-1\r\n"), PC("%1\r\n:1\r\n!x\r\n"), PC(">1\r\n_\r\r"),
    PC("%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n%1\r\n:1\r\n:1\r\n"), /* 9 levels */
    PC("OK\r\n"), PC("\0\r\n"),
    PC("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:7\r\n"), /* 9 levels */
    PC("$5\r\nhelloXX"), PC("$5\r\nhello\rX"), PC("$5\r\nhello\n\r"), PC("$3\r\nabcd\r\n"),
    PC("*2\r\n:1\r\n!x\r\n"), PC("*1\r\n$-2\r\n"), PC("*2\r\n:1\r\n:1\n"), PC("*1\r\n*-3\r\n"),
};

/* 1 when the whole of text (no NUL inside) parses as one reply of type. */
static int parses_as(const char *text, rlock_resp_type type, rlock_reply *r) {
    long n = (long)strlen(text);
    return rlock_resp_parse((const unsigned char *)text, (size_t)n, 64, r) == n && r->v.type == type;
}

static void test_parse_valid_values(void) {
    rlock_reply r;
    static const unsigned char bin[] = "$6\r\na\0b\rc\n\r\n";
    static const unsigned char nested[] = "*3\r\n$3\r\nfoo\r\n*2\r\n:1\r\n+x\r\n:-5\r\n";
    static const unsigned char five[] = "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n";
    static const unsigned char mixed[] = "*3\r\n-ERR x\r\n+OK\r\n$0\r\n\r\n";
    g_test = "parse values";

    CHECK(parses_as("+OK\r\n", RLOCK_RESP_STATUS, &r) && r.v.len == 2 && memcmp(r.v.str, "OK", 2) == 0);
    CHECK(parses_as("+\r\n", RLOCK_RESP_STATUS, &r) && r.v.len == 0);
    CHECK(parses_as("-ERR bad\r\n", RLOCK_RESP_ERROR, &r) && r.v.len == 7 && memcmp(r.v.str, "ERR bad", 7) == 0);
    CHECK(parses_as(":0\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == 0);
    CHECK(parses_as(":-1\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == -1);
    CHECK(parses_as(":-0\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == 0);
    CHECK(parses_as(":9223372036854775807\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == LLONG_MAX);
    CHECK(parses_as(":-9223372036854775808\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == LLONG_MIN);
    CHECK(parses_as(":-9223372036854775807\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == -LLONG_MAX);
    CHECK(parses_as("$0\r\n\r\n", RLOCK_RESP_BULK, &r) && r.v.len == 0 && r.v.str != NULL);
    CHECK(parses_as("$5\r\nhello\r\n", RLOCK_RESP_BULK, &r) && r.v.len == 5 && memcmp(r.v.str, "hello", 5) == 0);
    CHECK_EQ_LL(rlock_resp_parse(bin, sizeof bin - 1, 64, &r), (long)sizeof bin - 1);
    CHECK(r.v.type == RLOCK_RESP_BULK && r.v.len == 6 && memcmp(r.v.str, "a\0b\rc\n", 6) == 0);
    CHECK(r.v.str == (const char *)bin + 4);
    CHECK(parses_as("$-1\r\n", RLOCK_RESP_NIL, &r));
    CHECK(parses_as("*-1\r\n", RLOCK_RESP_NIL, &r));
    CHECK(parses_as("*0\r\n", RLOCK_RESP_ARRAY, &r) && r.count == 0);
    CHECK_EQ_LL(rlock_resp_parse((const unsigned char *)GRANT, 12, 64, &r), 12);
    CHECK(r.v.type == RLOCK_RESP_ARRAY && r.count == 2 && r.elem[0].type == RLOCK_RESP_INTEGER &&
          r.elem[0].integer == 1 && r.elem[1].type == RLOCK_RESP_INTEGER && r.elem[1].integer == 1);
    CHECK_EQ_LL(rlock_resp_parse(nested, sizeof nested - 1, 64, &r), (long)sizeof nested - 1);
    CHECK(r.v.type == RLOCK_RESP_ARRAY && r.count == 3);
    CHECK(r.elem[0].type == RLOCK_RESP_BULK && r.elem[0].len == 3 && memcmp(r.elem[0].str, "foo", 3) == 0);
    CHECK(r.elem[1].type == RLOCK_RESP_ARRAY && r.elem[1].integer == 2);
    CHECK(r.elem[2].type == RLOCK_RESP_INTEGER && r.elem[2].integer == -5);
    CHECK_EQ_LL(rlock_resp_parse(five, sizeof five - 1, 64, &r), (long)sizeof five - 1);
    CHECK(r.count == 5 && r.elem[0].integer == 1 && r.elem[3].integer == 4);
    CHECK_EQ_LL(rlock_resp_parse(mixed, sizeof mixed - 1, 64, &r), (long)sizeof mixed - 1);
    CHECK(r.count == 3 && r.elem[0].type == RLOCK_RESP_ERROR && r.elem[1].type == RLOCK_RESP_STATUS &&
          r.elem[2].type == RLOCK_RESP_BULK && r.elem[2].len == 0);
#ifdef RLOCK_NO_WAITING
    { /* RESP2 only: every RESP3 type is a protocol error */
        static const char *const resp3[] = { ">1\r\n:1\r\n", "%1\r\n:1\r\n:1\r\n", "~1\r\n:1\r\n", "|1\r\n+a\r\n:1\r\n:5\r\n",
                                             "_\r\n", "#t\r\n", ",1.5\r\n", "(12\r\n", "=7\r\ntxt:abc\r\n", "!3\r\nabc\r\n" };
        size_t i;
        for (i = 0; i < sizeof resp3 / sizeof resp3[0]; i++)
            CHECK_MSG(rlock_resp_parse((const unsigned char *)resp3[i], strlen(resp3[i]), 64, &r) < 0, "%s", resp3[i]);
    }
#else
    /* RESP3 values */
    {
        static const unsigned char push[] = ">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$2\r\nid\r\n";
        static const unsigned char map[] = "%2\r\n+proto\r\n:3\r\n+modules\r\n*0\r\n";
        static const unsigned char attr[] = "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n";
        CHECK_EQ_LL(rlock_resp_parse(push, sizeof push - 1, 64, &r), (long)sizeof push - 1);
        CHECK(r.v.type == RLOCK_RESP_PUSH && r.count == 3 && r.elem[1].len == 3 && memcmp(r.elem[2].str, "id", 2) == 0);
        CHECK_EQ_LL(rlock_resp_parse(map, sizeof map - 1, 64, &r), (long)sizeof map - 1);
        CHECK(r.v.type == RLOCK_RESP_MAP && r.count == 4 && r.elem[1].type == RLOCK_RESP_INTEGER &&
              r.elem[1].integer == 3 && r.elem[3].type == RLOCK_RESP_ARRAY && r.elem[3].integer == 0);
        CHECK_EQ_LL(rlock_resp_parse(attr, sizeof attr - 1, 64, &r), (long)sizeof attr - 1);
        CHECK(r.v.type == RLOCK_RESP_ARRAY && r.count == 2 && r.elem[0].integer == 1 && r.elem[1].integer == 2);
        CHECK(parses_as("|1\r\n+a\r\n:1\r\n:5\r\n", RLOCK_RESP_INTEGER, &r) && r.v.integer == 5);
        CHECK(parses_as("_\r\n", RLOCK_RESP_NIL, &r));
        CHECK(parses_as("#f\r\n", RLOCK_RESP_BOOL, &r) && r.v.integer == 0);
        CHECK(parses_as(",-1.5e3\r\n", RLOCK_RESP_DOUBLE, &r) && r.v.len == 6 && memcmp(r.v.str, "-1.5e3", 6) == 0);
        CHECK(parses_as("(-12\r\n", RLOCK_RESP_BIGNUM, &r) && r.v.len == 3);
        CHECK(parses_as("=7\r\ntxt:abc\r\n", RLOCK_RESP_BULK, &r) && r.v.len == 3 && memcmp(r.v.str, "abc", 3) == 0);
        CHECK(parses_as("!3\r\nabc\r\n", RLOCK_RESP_ERROR, &r) && r.v.len == 3);
        CHECK(parses_as("~2\r\n:1\r\n#t\r\n", RLOCK_RESP_SET, &r) && r.count == 2 && r.elem[1].type == RLOCK_RESP_BOOL);
    }
#endif
    /* one reply at a time: what follows is left for the next call */
    CHECK_EQ_LL(rlock_resp_parse((const unsigned char *)":1\r\n:2\r\n", 8, 64, &r), 4);
    CHECK(r.v.integer == 1);
    /* bad parameters */
    CHECK(rlock_resp_parse(NULL, 0, 64, &r) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 64, NULL) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 0, &r) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 3, &r) < 0); /* len > max_len */
    CHECK_EQ_LL(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 4, &r), 4); /* exactly max */
}

static void test_parse_splits(void) {
    size_t i, k;
    int bad = 0;
    g_test = "parse splits";
    for (i = 0; i < sizeof valid_replies / sizeof valid_replies[0]; i++) {
        const pcase *c = &valid_replies[i];
        unsigned char tail[300];
        for (k = 0; k < c->n; k++) {
            long r = parse_exact(c->s, k, 1024);
            if (r != 0) { bad++; fprintf(stderr, "case %lu: prefix %lu gave %ld, want 0\n", (unsigned long)i, (unsigned long)k, r); }
        }
        CHECK_MSG(parse_exact(c->s, c->n, 1024) == (long)c->n, "case %lu", (unsigned long)i);
        CHECK_MSG(parse_exact(c->s, c->n, c->n) == (long)c->n, "case %lu, max_len = len", (unsigned long)i);
        /* followed by more bytes (even garbage): still exactly this reply */
        memcpy(tail, c->s, c->n);
        memcpy(tail + c->n, "!garbage\n", 9);
        CHECK_MSG(parse_exact(tail, c->n + 9, 1024) == (long)c->n, "case %lu + tail", (unsigned long)i);
    }
    CHECK_MSG(bad == 0, "%d prefixes of valid replies were not 'incomplete'", bad);
}

static void test_parse_malformed(void) {
    size_t i, k;
    unsigned char big[2100];
    g_test = "parse malformed";
    for (i = 0; i < sizeof bad_replies / sizeof bad_replies[0]; i++) {
        const pcase *c = &bad_replies[i];
        int prefix_bad = 0;
        CHECK_MSG(parse_exact(c->s, c->n, 1024) < 0, "bad case %lu must be rejected", (unsigned long)i);
        /* no prefix of a bad reply is a complete reply */
        for (k = 0; k < c->n; k++)
            if (parse_exact(c->s, k, 1024) > 0) prefix_bad++;
        CHECK_MSG(prefix_bad == 0, "bad case %lu: a prefix parsed as a reply", (unsigned long)i);
    }
    /* declared lengths are bounded by max_len before anything waits for them */
    CHECK(parse_exact("$2000\r\n", 7, 1024) < 0);
    CHECK(parse_exact("$1020\r\n", 7, 1024) < 0); /* 7 + 1020 + 2 > 1024 */
    CHECK(parse_exact("$1015\r\n", 7, 1024) == 0); /* 7 + 1015 + 2 == 1024: still possible */
    CHECK(parse_exact("$5\r\nhel", 7, 8) < 0);
    CHECK(parse_exact("$9223372036854775807\r\n", 22, 1024) < 0);
    CHECK(parse_exact("*400\r\n", 6, 1024) < 0);  /* 400 elements need >= 1200 bytes */
    CHECK(parse_exact("*300\r\n", 6, 1024) == 0);
    /* a huge count with a big max_len still returns at once (incomplete) */
    CHECK(parse_exact("*300000000\r\n:1\r\n", 16, (size_t)1 << 30) == 0);
    CHECK(parse_exact("*4294967295\r\n:1\r\n", 17, (size_t)1 << 30) < 0);
    /* a line with no CRLF that fills max_len can never complete */
    memset(big, 'A', sizeof big);
    big[0] = '+';
    CHECK(parse_exact(big, 64, 64) < 0);
    CHECK(parse_exact(big, 63, 64) == 0);
    big[0] = ':';
    CHECK(parse_exact(big, 64, 64) < 0);
    /* a bulk body longer than max_len-framing, with all bytes present */
    memcpy(big, "$2048\r\n", 7);
    big[7 + 2048] = '\r';
    big[7 + 2048 + 1] = '\n';
    CHECK(parse_exact(big, 2057, 2057) == 2057);
    CHECK(parse_exact(big, 2057, 2056 + 1) == 2057);
    CHECK(parse_exact(big, 2056, 2056) < 0);
    /* nesting deeper than RLOCK_RESP_MAX_DEPTH, built programmatically */
    {
        unsigned char deep[200];
        size_t n = 0;
        int d;
        for (d = 0; d < RLOCK_RESP_MAX_DEPTH; d++) { memcpy(deep + n, "*1\r\n", 4); n += 4; }
        memcpy(deep + n, ":1\r\n", 4);
        CHECK_EQ_LL(parse_exact(deep, n + 4, 1024), (long)(n + 4));
        memmove(deep + 4, deep, n + 4);
        memcpy(deep, "*1\r\n", 4);
        CHECK(parse_exact(deep, n + 8, 1024) < 0);
        /* the too-deep header is rejected before its elements arrive */
        CHECK(parse_exact(deep, n + 4, 1024) < 0);
    }
}

/* random bytes and mutations of valid replies: never crash, never claim
 * more than was given, and keep every parse self-consistent */
static void test_parse_fuzz(void) {
    static const char alphabet[] = "+-:$*\r\n0123456789-\r\n\r\nab!%_>#,(=~|tf.";
    long iters = getenv("RLOCK_TEST_QUICK") ? 20000L : 200000L, it;
    long crashes_would_show = 0, inconsistent = 0, ok_parses = 0, rejects = 0;
    size_t nvalid = sizeof valid_replies / sizeof valid_replies[0];
    g_test = "parse fuzz";
    g_rng = 0x9E3779B97F4A7C15ULL;
    for (it = 0; it < iters; it++) {
        unsigned char tmp[128];
        size_t len = 0, max_len, k;
        unsigned mode = rnd() % 4;
        unsigned char *b;
        rlock_reply r;
        long rc;
        if (mode == 0) {
            len = rnd() % 40;
            for (k = 0; k < len; k++) tmp[k] = (unsigned char)alphabet[rnd() % (sizeof alphabet - 1)];
        } else if (mode == 1) {
            len = rnd() % 256 < 16 ? rnd() % 40 : 0;
            for (k = 0; k < len; k++) tmp[k] = (unsigned char)rnd();
            if (!len) { len = 1; tmp[0] = (unsigned char)"+-:$*"[rnd() % 5]; }
        } else {
            /* one or two valid replies, then 1..4 mutations */
            const pcase *c = &valid_replies[rnd() % nvalid];
            memcpy(tmp, c->s, c->n);
            len = c->n;
            if (mode == 3) {
                const pcase *d = &valid_replies[rnd() % nvalid];
                if (len + d->n <= sizeof tmp) { memcpy(tmp + len, d->s, d->n); len += d->n; }
            }
            for (k = rnd() % 4 + 1; k > 0 && len > 0; k--) {
                size_t at = rnd() % len;
                switch (rnd() % 5) {
                case 0: tmp[at] = (unsigned char)rnd(); break;
                case 1: tmp[at] = (unsigned char)alphabet[rnd() % (sizeof alphabet - 1)]; break;
                case 2: len = at; break; /* truncate */
                case 3: if (len < sizeof tmp) { memmove(tmp + at + 1, tmp + at, len - at); tmp[at] = (unsigned char)('0' + rnd() % 10); len++; } break;
                default: memmove(tmp + at, tmp + at + 1, len - at - 1); len--; break;
                }
            }
        }
        switch (rnd() % 4) {
        case 0: max_len = len ? len : 1; break;
        case 1: max_len = len + rnd() % 8 + 1; break;
        case 2: max_len = rnd() % 64 + 1; break;
        default: max_len = 1024; break;
        }
        b = dup_exact(tmp, len);
        rc = rlock_resp_parse(b, len, max_len, &r);
        if (len > max_len && rc >= 0) inconsistent++;
        if (rc > (long)len) inconsistent++;
        if (rc > 0) {
            size_t e;
            const unsigned char *lo = b, *hi = b + rc;
            ok_parses++;
            if ((r.v.type == RLOCK_RESP_STATUS || r.v.type == RLOCK_RESP_ERROR || r.v.type == RLOCK_RESP_BULK) &&
                ((const unsigned char *)r.v.str < lo || (const unsigned char *)r.v.str + r.v.len > hi))
                inconsistent++;
            if (r.v.type == RLOCK_RESP_ARRAY || r.v.type == RLOCK_RESP_PUSH || r.v.type == RLOCK_RESP_MAP ||
                r.v.type == RLOCK_RESP_SET) {
                if (r.count < 0 || r.count != r.v.integer) inconsistent++;
                for (e = 0; e < (size_t)r.count && e < RLOCK_RESP_MAX_ELEMS; e++) {
                    const rlock_resp_value *v = &r.elem[e];
                    if ((v->type == RLOCK_RESP_STATUS || v->type == RLOCK_RESP_ERROR || v->type == RLOCK_RESP_BULK) &&
                        ((const unsigned char *)v->str < lo || (const unsigned char *)v->str + v->len > hi))
                        inconsistent++;
                    if (v->type == RLOCK_RESP_NONE) inconsistent++;
                }
            }
            /* the same reply alone parses the same; every strict prefix is incomplete */
            if (parse_exact(b, (size_t)rc, max_len) != rc) inconsistent++;
            for (k = 0; k < (size_t)rc; k++)
                if (parse_exact(b, k, max_len) != 0) inconsistent++;
        } else if (rc < 0) {
            rejects++;
        }
        free(b);
    }
    CHECK_MSG(inconsistent == 0 && crashes_would_show == 0, "%ld inconsistent parses", inconsistent);
    /* the fuzz loop actually exercised both outcomes */
    CHECK_MSG(ok_parses > iters / 50 && rejects > iters / 50, "ok %ld, rejected %ld", ok_parses, rejects);
}

/* ------------------------------------------------------------------------ */
/* 2. encoder                                                                */
/* ------------------------------------------------------------------------ */

static void test_encode(void) {
    static const char want[] = "*4\r\n$3\r\nSET\r\n$3\r\nk\0y\r\n$4\r\nv\r\n!\r\n$0\r\n\r\n";
    const char *argv[4];
    size_t lens[4], n, cap;
    unsigned char out[256];
    int bad = 0;
    rlock_reply r;
    g_test = "encode";
    argv[0] = "SET"; lens[0] = 3;
    argv[1] = "k\0y"; lens[1] = 3;
    argv[2] = "v\r\n!"; lens[2] = 4;
    argv[3] = NULL; lens[3] = 0; /* empty argument; NULL allowed with length 0 */
    n = rlock_resp_encode(out, sizeof out, 4, argv, lens);
    CHECK_EQ_LL(n, sizeof want - 1);
    CHECK(memcmp(out, want, sizeof want - 1) == 0);
    /* exactly the size fits; one byte less (and every smaller cap) writes into a
     * block of exactly cap bytes without overflowing, and returns 0 */
    for (cap = 0; cap <= sizeof want - 1; cap++) {
        unsigned char *b = (unsigned char *)malloc(cap ? cap : 1);
        size_t got = rlock_resp_encode(b, cap, 4, argv, lens);
        if (cap == sizeof want - 1 ? (got != cap || memcmp(b, want, cap) != 0) : got != 0) bad++;
        free(b);
    }
    CHECK_MSG(bad == 0, "%d caps misbehaved", bad);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof want - 2, 4, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, 0, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, -1, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, INT_MIN, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, 1, NULL, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, 1, argv, NULL), 0);
    CHECK_EQ_LL(rlock_resp_encode(NULL, sizeof out, 1, argv, lens), 0);
    /* NULL argument with a length, and absurd lengths: 0, no read, no wrap */
    argv[1] = NULL; lens[1] = 3;
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, 2, argv, lens), 0);
    argv[1] = "x"; lens[1] = (size_t)-1;
    CHECK_EQ_LL(rlock_resp_encode(out, sizeof out, 2, argv, lens), 0);
    lens[1] = (size_t)-1 - 8;
    CHECK_EQ_LL(rlock_resp_encode(out, (size_t)-1, 2, argv, lens), 0);
    /* round trip through the parser */
    argv[0] = "EVALSHA"; lens[0] = 7;
    argv[1] = "abc"; lens[1] = 3;
    n = rlock_resp_encode(out, sizeof out, 2, argv, lens);
    CHECK(n > 0 && rlock_resp_parse(out, n, sizeof out, &r) == (long)n);
    CHECK(r.v.type == RLOCK_RESP_ARRAY && r.count == 2 && r.elem[0].type == RLOCK_RESP_BULK &&
          r.elem[0].len == 7 && memcmp(r.elem[0].str, "EVALSHA", 7) == 0 && r.elem[1].len == 3);
    /* 12 arguments: a two-digit count */
    {
        const char *a12[12];
        size_t l12[12];
        int i;
        for (i = 0; i < 12; i++) { a12[i] = "z"; l12[i] = 1; }
        n = rlock_resp_encode(out, sizeof out, 12, a12, l12);
        CHECK(n == 5 + 12 * 7 && memcmp(out, "*12\r\n$1\r\nz\r\n", 12) == 0);
    }
}

/* Redis error replies to statuses (rlock__map_error): MOVED / ASK only at
 * the start of the reply, the other words anywhere in it (Redis 6 wraps a
 * script's error in "ERR Error running script ..."), the first word found
 * deciding; anything else is RLOCK_E_REDIS. */
static void test_error_words(void) {
    /* (one string of short replies: this suite fills a Cortex-M0's 256 KiB) */
    static const char replies[] = "MOVED 1 h:1\0ASK 1 h:1\0MOVED\0ASKING\0ERR MOVED \0ERR TASK 1\0NOAUTH x\0"
                                  "WRONGPASS x\0NOPERM x\0ERR invalid password\0ERR can't run this command\0"
                                  "ERR x: WRONGTYPE y\0WRONGTYPE NOAUTH\0\0UPGRADE read lock held\0"
                                  "ERR Protocol error: unauthenticated multibulk length\0";
    /* (WRONGPASS and "invalid password" answer AUTH alone: the compact
     * engine knows AUTH's reply by its place, RLOCK_E_AUTH whatever its text
     * - test_auth's "AUTH refused" - and its scan has no such words) */
    static const unsigned char st[] = { RLOCK_E_MOVED, RLOCK_E_MOVED, RLOCK_E_REDIS, RLOCK_E_REDIS, RLOCK_E_REDIS,
                                        RLOCK_E_REDIS, RLOCK_E_AUTH, RLOCK__COMPACT ? RLOCK_E_REDIS : RLOCK_E_AUTH,
                                        RLOCK_E_AUTH, RLOCK__COMPACT ? RLOCK_E_REDIS : RLOCK_E_AUTH,
                                        RLOCK_E_AUTH, RLOCK_E_WRONGTYPE,
                                        RLOCK_E_AUTH, /* (the table's order decides, not the reply's) */
                                        RLOCK_E_REDIS, RLOCK__HAS_PRIMITIVES ? RLOCK_E_UPGRADE : RLOCK_E_REDIS,
                                        RLOCK__COMPACT ? RLOCK_E_REDIS : RLOCK_E_AUTH };
    const char *r = replies;
    size_t i;
    g_test = "error words";
    for (i = 0; i < sizeof st; i++, r += strlen(r) + 1)
        CHECK_EQ_ST(rlock__map_error(r, strlen(r)), (rlock_status)st[i]);
    /* the length bounds the search: a word past it is not seen */
    CHECK_EQ_ST(rlock__map_error("ERR NOAUTH", 8), RLOCK_E_REDIS); /* (and "MOVED" above: no space) */
#if RLOCK__COMPACT
    /* the compact engine's flags: READONLY, NOSCRIPT and NOPERM at the start
     * only (NOPERM inside the text: a command in a script that ran was
     * refused), never the status; no other word sets one */
    {
        static const char *const flagged[] = { "READONLY x", "NOSCRIPT x", "NOPERM x", "ERR x NOPERM y",
                                               "x READONLY", "x NOSCRIPT", "MOVED 1 h:1", "ASK 1 h:1",
                                               "WRONGTYPE x", "NOAUTH x", "ERR x can't run this command", "ERR x" };
        static const int want[] = { RLOCK__C_W_READONLY | RLOCK_E_REDIS, RLOCK__C_W_NOSCRIPT | RLOCK_E_REDIS,
                                    RLOCK__C_W_NOPERM | RLOCK_E_AUTH, RLOCK_E_AUTH, RLOCK_E_REDIS, RLOCK_E_REDIS,
                                    RLOCK_E_MOVED, RLOCK_E_MOVED, RLOCK_E_WRONGTYPE, RLOCK_E_AUTH, RLOCK_E_AUTH,
                                    RLOCK_E_REDIS };
        const int flags = RLOCK__C_W_READONLY | RLOCK__C_W_NOSCRIPT | RLOCK__C_W_NOPERM | RLOCK__C_W_SCRIPT;
        for (i = 0; i < sizeof want / sizeof want[0]; i++) {
            int e = rlock__error_scan(flagged[i], strlen(flagged[i]));
            CHECK_MSG((e & (flags | 31)) == want[i], "%s: %#x, want %#x", flagged[i], (unsigned)e, (unsigned)want[i]);
        }
    }
#endif
}

/* The core divides no 64-bit value (libgcc's __udivmoddi4 is 700 B on a
 * Cortex-M): rlock__divmod (32-bit steps) must agree with the compiler's
 * division, and rlock__utoa with a plain conversion, over the whole range
 * (under RLOCK_NO_ERROR_TEXTS: over an unsigned long's, all it is given
 * there, without rlock__divmod). */
static void test_narrow_division(void) {
    static const uint32_t ds[] = { 1, 3, 7, 10, 1000, 65535 };
    uint64_t x = 0x9E3779B97F4A7C15ULL, v, q;
    int i, k, bad = 0;
    g_test = "narrow division";
    for (i = 0; i < 2000; i++) {
        /* edges, then xorshift values of every magnitude */
        if (i < 6) v = i == 0 ? 0 : i == 1 ? 1 : i == 2 ? UINT32_MAX : i == 3 ? (uint64_t)UINT32_MAX + 1 :
                        i == 4 ? (uint64_t)LLONG_MAX : UINT64_MAX;
        else { x ^= x << 13; x ^= x >> 7; x ^= x << 17; v = x >> (i % 64); }
#ifdef RLOCK_NO_ERROR_TEXTS
        v = (unsigned long)v;
        (void)ds;
        (void)k;
#else
        for (k = 0; k < (int)(sizeof ds / sizeof ds[0]); k++) {
            uint32_t r;
            q = v;
            r = rlock__divmod(&q, ds[k]);
            if (q != v / ds[k] || r != v % ds[k]) {
                if (bad++ < 3) fprintf(stderr, "divmod %llu / %lu: %llu r %lu\n", (unsigned long long)v,
                                       (unsigned long)ds[k], (unsigned long long)q, (unsigned long)r);
            }
        }
#endif
        {
            char got[24], want[24], tmp[24];
            size_t n = rlock__utoa(got, v), m = 0, j;
            q = v;
            do { tmp[m++] = (char)('0' + (int)(q % 10u)); q /= 10u; } while (q);
            for (j = 0; j < m; j++) want[j] = tmp[m - 1 - j];
            want[m] = '\0';
            if (n != m || strcmp(got, want) != 0) {
                if (bad++ < 3) fprintf(stderr, "utoa %s, want %s\n", got, want);
            }
        }
    }
    CHECK_MSG(bad == 0, "%d wrong quotients or digits", bad);
}

/* ------------------------------------------------------------------------ */
/* 3. aux keys and Redis Cluster slots                                       */
/* ------------------------------------------------------------------------ */

static unsigned crc16x(const char *s, size_t n) { /* CRC16-CCITT (XMODEM), as Redis Cluster */
    unsigned crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= (unsigned)(unsigned char)s[i] << 8;
        for (b = 0; b < 8; b++) crc = (crc & 0x8000u) ? ((crc << 1) ^ 0x1021u) & 0xFFFFu : (crc << 1) & 0xFFFFu;
    }
    return crc;
}
static unsigned keyslot(const char *k, size_t n) { /* Redis cluster.c keyHashSlot() */
    size_t s, e;
    for (s = 0; s < n; s++) if (k[s] == '{') break;
    if (s == n) return crc16x(k, n) & 16383u;
    for (e = s + 1; e < n; e++) if (k[e] == '}') break;
    if (e == n || e == s + 1) return crc16x(k, n) & 16383u;
    return crc16x(k + s + 1, e - s - 1) & 16383u;
}
/* does k have a non-empty hash tag (what Redis hashes instead of the key)? */
static int has_tag(const char *k, size_t n) {
    size_t s, e;
    for (s = 0; s < n; s++) if (k[s] == '{') break;
    if (s == n) return 0;
    for (e = s + 1; e < n; e++) if (k[e] == '}') break;
    return e < n && e > s + 1;
}

static int aux_ok(const char *key, size_t n, const char *suffix) {
    char out[64];
    size_t r = rlock_aux_key(out, sizeof out, key, n, suffix), sl = strlen(suffix);
    if (r == 0) /* documented: only when a '}' sits outside a hash tag */
        return !has_tag(key, n) && memchr(key, '}', n) != NULL;
    if (memchr(key, '}', n) && !has_tag(key, n)) return 0;
    if (out[r] != '\0' || r < sl || memcmp(out + r - sl, suffix, sl) != 0) return 0;
    if (has_tag(key, n)) {
        if (r != n + sl || memcmp(out, key, n) != 0) return 0;
    } else if (r != n + sl + 2 || out[0] != '{' || memcmp(out + 1, key, n) != 0 || out[n + 1] != '}') {
        return 0;
    }
    return keyslot(out, r) == keyslot(key, n);
}

static void test_aux_key(void) {
    char out[64];
    static const char *const suffixes[] = { ":fence", "", "}", "{x}", ":{a}b" };
    static const char alpha[] = "ab{}";
    size_t r, i, len;
    int bad = 0, checked = 0, refused = 0;
    g_test = "aux key";
    /* the slot function itself, against values from the Redis documentation */
    CHECK_EQ_LL(crc16x("123456789", 9), 0x31C3);
    CHECK_EQ_LL(keyslot("somekey", 7), 11058);
    CHECK_EQ_LL(keyslot("foo{hash_tag}", 13), 2515);
    CHECK_EQ_LL(keyslot("bar{hash_tag}", 13), 2515);

    r = rlock_aux_key(out, sizeof out, "lock", 4, ":fence");
    CHECK(r == 12 && strcmp(out, "{lock}:fence") == 0);
    r = rlock_aux_key(out, sizeof out, "a{b}c", 5, ":f");
    CHECK(r == 7 && strcmp(out, "a{b}c:f") == 0);
    r = rlock_aux_key(out, sizeof out, "x}y{z}", 6, ":f"); /* '}' before the tag is fine */
    CHECK(r == 8 && strcmp(out, "x}y{z}:f") == 0);
    r = rlock_aux_key(out, sizeof out, "a{b", 3, ":f"); /* unclosed '{': untagged */
    CHECK(r == 7 && strcmp(out, "{a{b}:f") == 0 && keyslot(out, r) == keyslot("a{b", 3));
    /* documented: a '}' outside a hash tag (incl. an empty tag "{}") -> 0 */
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "a{}b", 4, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "a}b", 3, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "}", 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "{}{x}", 5, ":f"), 0);
    /* binary key */
    r = rlock_aux_key(out, sizeof out, "k\0\r", 3, "!");
    CHECK(r == 6 && memcmp(out, "{k\0\r}!", 7) == 0);
    /* capacity: the NUL needs a byte */
    CHECK_EQ_LL(rlock_aux_key(out, 13, "lock", 4, ":fence"), 12);
    CHECK_EQ_LL(rlock_aux_key(out, 12, "lock", 4, ":fence"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, 8, "a{b}c", 5, ":f"), 7);
    CHECK_EQ_LL(rlock_aux_key(out, 7, "a{b}c", 5, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, 0, "a", 1, ""), 0);
    CHECK_EQ_LL(rlock_aux_key(NULL, sizeof out, "a", 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, NULL, 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "a", 1, NULL), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "a", 0, ":f"), 0);

    /* every key over {a,b,'{','}'} up to 7 bytes, with several suffixes */
    for (len = 1; len <= 7; len++) {
        unsigned long total = 1, code;
        for (i = 0; i < len; i++) total *= 4;
        for (code = 0; code < total; code++) {
            char key[8];
            unsigned long c = code;
            for (i = 0; i < len; i++) { key[i] = alpha[c % 4]; c /= 4; }
            for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
                if (!aux_ok(key, len, suffixes[i])) {
                    if (bad++ < 5) fprintf(stderr, "aux key wrong for \"%.*s\" + \"%s\"\n", (int)len, key, suffixes[i]);
                }
                checked++;
                if (rlock_aux_key(out, sizeof out, key, len, suffixes[i]) == 0) refused++;
            }
        }
    }
    /* random longer keys with real-world characters */
    g_rng = 12345;
    for (i = 0; i < 20000; i++) {
        char key[40];
        size_t k;
        len = rnd() % 39 + 1;
        for (k = 0; k < len; k++) key[k] = "abc:{}_-0\0"[rnd() % 10];
        if (!aux_ok(key, len, ":fence")) bad++;
        checked++;
    }
    CHECK_MSG(bad == 0, "%d of %d aux keys wrong", bad, checked);
    CHECK(refused > 0 && refused < checked); /* both branches ran */
}

/* ------------------------------------------------------------------------ */
/* 4. status names, script SHA1s                                             */
/* ------------------------------------------------------------------------ */

static void test_status_strings(void) {
    int i, j, distinct = 1, nonempty = 1;
    g_test = "status strings";
#ifdef RLOCK_NO_STATUS_STRINGS /* left out: "" for every status, never NULL */
    for (i = -1; i <= (int)RLOCK_STATUS_COUNT; i++) CHECK(rlock_status_str((rlock_status)i) != NULL &&
                                                        rlock_status_str((rlock_status)i)[0] == '\0');
    (void)j; (void)distinct; (void)nonempty;
    return;
#endif
    for (i = 0; i < (int)RLOCK_STATUS_COUNT; i++) {
        const char *a = rlock_status_str((rlock_status)i);
        if (!a || !*a || strcmp(a, "unknown status") == 0) nonempty = 0;
        for (j = 0; j < i; j++)
            if (a && strcmp(a, rlock_status_str((rlock_status)j)) == 0) distinct = 0;
    }
    CHECK_MSG(nonempty, "every status has a name");
    CHECK_MSG(distinct, "status names are distinct");
    CHECK(strcmp(rlock_status_str(RLOCK_STATUS_COUNT), "unknown status") == 0);
    CHECK(strcmp(rlock_status_str((rlock_status)-1), "unknown status") == 0);
    CHECK(strcmp(rlock_status_str((rlock_status)1000), "unknown status") == 0);
    CHECK(strcmp(rlock_status_str(RLOCK_OK), "ok") == 0);
}

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
static void sha1_hex(const unsigned char *data, size_t len, char out[41]) {
    uint32_t h[5] = { 0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u };
    unsigned long long bits = (unsigned long long)len * 8u;
    size_t total = ((len + 8) / 64 + 1) * 64, off, i;
    for (off = 0; off < total; off += 64) {
        unsigned char blk[64];
        uint32_t w[80], a, b, c, d, e, t;
        for (i = 0; i < 64; i++) {
            size_t k = off + i;
            blk[i] = (unsigned char)(k < len ? data[k] : k == len ? 0x80 : 0);
        }
        if (off + 64 == total)
            for (i = 0; i < 8; i++) blk[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
        for (i = 0; i < 16; i++)
            w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 | (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
        for (i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4];
        for (i = 0; i < 80; i++) {
            uint32_t f, k;
            if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999u; }
            else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1u; }
            else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDCu; }
            else { f = b ^ c ^ d; k = 0xCA62C1D6u; }
            t = rol32(a, 5) + f + e + k + w[i];
            e = d; d = c; c = rol32(b, 30); b = a; a = t;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
    }
    for (i = 0; i < 5; i++) sprintf(out + 8 * i, "%08lx", (unsigned long)h[i]);
}

/* Is script id in this build? A feature compiled out takes its scripts
 * (ids: rlock.h's RLOCK__S_*; 3..5 reentrant, 6..9 fair, 8..9 both). */
static int script_in_build(int id) {
#ifdef RLOCK_NO_REENTRANT
    if ((id >= 3 && id <= 5) || id == 8 || id == 9) return 0;
#endif
#ifdef RLOCK_NO_FAIR
    if (id >= 6 && id <= 9) return 0;
#endif
    return id >= 0 && id < RLOCK_SCRIPT_COUNT;
}

static void test_scripts(void) {
    char hex[41];
    int i;
    g_test = "scripts";
    sha1_hex((const unsigned char *)"abc", 3, hex);
    CHECK(strcmp(hex, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0);
    sha1_hex((const unsigned char *)"", 0, hex);
    CHECK(strcmp(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709") == 0);
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
        const char *t = rlock_script_text(i), *s = rlock_script_sha(i);
        char fn[32];
        if (!script_in_build(i)) { /* its feature is compiled out: neither text nor SHA1 is there */
            CHECK_MSG(!t && !s && rlock_function_name(i, fn, sizeof fn) == 0, "script %d", i);
            continue;
        }
        CHECK_MSG(s && strlen(s) == 40, "script %d", i);
#ifdef RLOCK_NO_EVAL_FALLBACK
        CHECK_MSG(!t, "script %d: its text is in a build without the EVAL fallback", i);
#else
        CHECK_MSG(t != NULL, "script %d", i);
        if (!t || !s) continue;
        sha1_hex((const unsigned char *)t, strlen(t), hex);
        CHECK_MSG(strcmp(hex, s) == 0, "script %d: SHA1 of the text is %s, header says %s", i, hex, s);
#endif
    }
    CHECK(rlock_script_text(-1) == NULL && rlock_script_text(RLOCK_SCRIPT_COUNT) == NULL);
    CHECK(rlock_script_sha(-1) == NULL && rlock_script_sha(RLOCK_SCRIPT_COUNT) == NULL);
#ifndef RLOCK_NO_EVAL_FALLBACK
    /* the numbering these tests rely on */
    CHECK(strstr(rlock_script_text(S_ACQ), "'set',KEYS[1],ARGV[1]..m,'PX'") != NULL);
    CHECK(strstr(rlock_script_text(S_EXT), "pexpire") != NULL && strstr(rlock_script_text(S_EXT), "get") != NULL);
    CHECK(strstr(rlock_script_text(S_REL), "'del'") != NULL);
#ifndef RLOCK_NO_REENTRANT
    CHECK(strstr(rlock_script_text(S_RACQ), "hincrby',KEYS[1],ARGV[1],1") != NULL);
    CHECK(strstr(rlock_script_text(S_REXT), "hexists") != NULL && strstr(rlock_script_text(S_REXT), "pexpire") != NULL);
    CHECK(strstr(rlock_script_text(S_RREL), "return -1") != NULL);
#endif
#endif
}

/* ------------------------------------------------------------------------ */
/* 0. the fake itself                                                        */
/* ------------------------------------------------------------------------ */

/* The fake must be able to catch what the state-machine tests rely on it for:
 * a late reply is read if the connection is reused, and an unexpected or
 * differing request is counted. */
static void test_fake_selftest(void) {
    unsigned char buf[64];
    fake *f = &F[0];
    fk_step *s;
    env_reset("fake self-test");
    g_quiet = 1;
    s = fk_add(f, "PING", ":1\r\n");
    s->hang = 1;
    fk_add(f, "PING", ":2\r\n");
    fk_add(f, "ECHO", ":3\r\n");
    CHECK_EQ_LL(fk_recv(f, buf, sizeof buf), RLOCK_IO_ERROR); /* not connected */
    CHECK_EQ_LL(f->bad_io, 1);
    CHECK_EQ_LL(fk_connect(f), 1);
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n$4\r\nPING\r\n", 14), 14);
    CHECK_EQ_LL(fk_recv(f, buf, sizeof buf), RLOCK_IO_WOULD_BLOCK); /* held back */
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n$4\r\nPING\r\n", 14), 14);
    CHECK_EQ_LL(fk_recv(f, buf, sizeof buf), 8); /* the late reply comes first */
    CHECK(memcmp(buf, ":1\r\n:2\r\n", 8) == 0);
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n$4\r\nPING\r\n", 14), 14);
    CHECK_EQ_LL(f->mismatch, 1); /* wanted ECHO */
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n$4\r\nPING\r\n", 14), 14);
    CHECK_EQ_LL(f->unexpected, 1);
    fk_close(f);
    CHECK_EQ_LL(fk_recv(f, buf, sizeof buf), RLOCK_IO_ERROR);
    /* 1-byte chunks and alternating would-block */
    memset(f, 0, sizeof *f);
    f->max_chunk = 1;
    f->block_alt = 1;
    fk_add(f, NULL, "+OK\r\n");
    fk_connect(f);
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n", 4), RLOCK_IO_WOULD_BLOCK);
    CHECK_EQ_LL(fk_send(f, (const unsigned char *)"*1\r\n", 4), 1);
    memset(F, 0, sizeof F);
    g_quiet = 0;
    /* the independent encoder, splitter and script-call checker agree with
     * rlock's encoder and can say no */
    {
        static unsigned char a[1024], b[1024];
        const char *argv[7];
        size_t lens[7], na, nb;
        const unsigned char *args[MAX_ARGS];
        size_t alen[MAX_ARGS];
        const char *why;
        int i;
        argv[0] = "EVALSHA"; argv[1] = rlock_script_sha(S_ACQ); argv[2] = "1"; argv[3] = "res:1";
        argv[4] = "0123456789abcdef0123456789abcdef"; argv[5] = "10000"; argv[6] = "{res:1}:released";
        for (i = 0; i < 7; i++) lens[i] = strlen(argv[i]);
        na = mk_cmd(a, 7, argv, lens);
        nb = rlock_resp_encode(b, sizeof b, 7, argv, lens);
        CHECK(na == nb && memcmp(a, b, na) == 0);
        CHECK_EQ_LL(split_cmd(a, na, args, alen), 7);
        CHECK(arg_is(args[3], alen[3], "res:1", 5) && arg_is(args[6], alen[6], argv[6], lens[6]));
        CHECK_EQ_LL(split_cmd(a, na - 1, args, alen), -1);
        CHECK(check_script_req(a, na, 0, S_ACQ, "res:1", 5, argv[4], "10000", &why));
        CHECK(!check_script_req(a, na, 1, S_ACQ, "res:1", 5, argv[4], "10000", &why));
        CHECK(!check_script_req(a, na, 0, S_REL, "res:1", 5, argv[4], "10000", &why));
        CHECK(!check_script_req(a, na, 0, S_ACQ, "res:2", 5, argv[4], "10000", &why));
        CHECK(!check_script_req(a, na, 0, S_ACQ, "res:1", 5, "other-owner", "10000", &why));
        CHECK(!check_script_req(a, na, 0, S_ACQ, "res:1", 5, argv[4], "20000", &why));
        g_fencing = 1;
        CHECK(!check_script_req(a, na, 0, S_ACQ, "res:1", 5, argv[4], "10000", &why));
        g_fencing = 0;
    }
}

/* ------------------------------------------------------------------------ */
/* 5. bad API input                                                          */
/* ------------------------------------------------------------------------ */

static int all_silent(size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!fk_sent_nothing(&F[i])) return 0;
    return 1;
}

static void test_bad_args(void) {
    rlock_transport tr;
    rlock_node tmp;
    rlock_lock junk;
    rlock_config cfg2;
    static char longkey[RLOCK_MAX_KEY_LEN + 2];
    size_t i;
    env_reset("bad args");
    env_nodes(RLOCK_MAX_NODES + 1, 1);

    /* nodes */
    tr = fk_transport(&F[0], 1);
    CHECK_EQ_ST(rlock_node_init(NULL, &tr), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_node_init(&tmp, NULL), RLOCK_E_BADARG);
    tr.send = NULL;
    CHECK_EQ_ST(rlock_node_init(&tmp, &tr), RLOCK_E_BADARG);
    tr = fk_transport(&F[0], 1);
    tr.recv = NULL;
    CHECK_EQ_ST(rlock_node_init(&tmp, &tr), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_node_status(NULL), RLOCK_E_BADARG);
    CHECK(strcmp(rlock_node_error(NULL), "") == 0);
    CHECK_EQ_LL(rlock_node_commands(NULL), 0);
    CHECK_EQ_LL(rlock_node_wants(NULL), 0);

    /* clients */
    CHECK_EQ_ST(rlock_client_init(NULL, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&C, NULL, 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&C, N, 0, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&C, N, RLOCK_MAX_NODES + 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&C, N, RLOCK_MAX_NODES, &CFG), RLOCK_OK); /* the limit itself is fine */
    CHECK_EQ_LL(rlock_client_quorum(&C), RLOCK_MAX_NODES / 2 + 1);
    cfg2 = CFG;
    cfg2.drift_permille = 1000;
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &cfg2), RLOCK_E_BADARG);
    memset(&tmp, 0, sizeof tmp); /* never initialised */
    {
        static rlock_node two[2];
        rlock_transport t0 = fk_transport(&F[0], 1);
        rlock_node_init(&two[0], &t0);
        rlock_node_init(&two[1], &t0); /* the same connection twice: two votes for one server */
        CHECK_EQ_ST(rlock_client_init(&C, two, 2, &CFG), RLOCK_E_BADARG);
        memset(&two[1], 0, sizeof two[1]);
        CHECK_EQ_ST(rlock_client_init(&C, two, 2, &CFG), RLOCK_E_BADARG);
    }
    for (i = 1; i <= RLOCK_MAX_NODES; i++) {
        CHECK_EQ_ST(rlock_client_init(&C, N, i, &CFG), RLOCK_OK);
        CHECK_EQ_LL(rlock_client_quorum(&C), i / 2 + 1);
    }
    CHECK_EQ_LL(rlock_client_quorum(NULL), 0);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_connect(&C, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_connect(NULL, 100), RLOCK_E_BADARG);

    /* locks */
    memset(longkey, 'k', sizeof longkey);
    CHECK_EQ_ST(rlock_lock_init(NULL, &C, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, NULL, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, NULL, 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "k", 0, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, longkey, RLOCK_MAX_KEY_LEN + 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "k", 1, (rlock_kind)0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "k", 1, (rlock_kind)3), RLOCK_E_BADARG);
    {
        rlock_client dead;
        memset(&dead, 0, sizeof dead);
        CHECK_EQ_ST(rlock_lock_init(&LK, &dead, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    }
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, longkey, RLOCK_MAX_KEY_LEN, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* NULL / never initialised lock handles */
    memset(&junk, 0xAB, sizeof junk);
    CHECK_EQ_ST(rlock_acquire(NULL, TTL, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_try_acquire(NULL, TTL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_release(NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_extend(NULL, TTL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_step(NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&junk, TTL, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_release(&junk), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire_begin(&junk, TTL, 0), RLOCK_E_BADARG);
    rlock_cancel(NULL);
    rlock_lock_destroy(NULL);
    rlock_client_close(NULL);
    rlock_config_init(NULL);
    CHECK_EQ_LL(rlock_lock_state(NULL), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rlock_validity_ms(NULL), 0);
    CHECK_EQ_LL(rlock_hold_count(NULL), 0);
    CHECK_EQ_LL(rlock_last_votes(NULL), 0);
    CHECK_EQ_LL(rlock_next_timeout_ms(NULL), 0);
    CHECK(strcmp(rlock_lock_token(NULL), "") == 0);

    /* ttl and wait */
    CHECK_EQ_ST(rlock_acquire(&LK, 0, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, -1, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, 2, 0), RLOCK_E_BADARG); /* <= drift (2 ms) */
    CHECK_EQ_ST(rlock_acquire(&LK, RLOCK_MAX_TTL_MS + 1, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, LLONG_MAX, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, LLONG_MIN, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, -1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, LLONG_MIN), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_try_acquire(&LK, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, -5), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_STATE); /* nothing in progress */
    /* not held: nothing to release or extend */
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_release_begin(&LK), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_extend(&LK, 0), RLOCK_E_BADARG);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    /* a node timeout as long as the ttl leaves no validity */
    {
        rlock_client c2;
        rlock_lock l2;
        cfg2 = CFG;
        cfg2.node_timeout_ms = 500;
        CHECK_EQ_ST(rlock_client_init(&c2, N + 1, 1, &cfg2), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&l2, &c2, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&l2, 500, 0), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_acquire(&l2, 400, 0), RLOCK_E_BADARG);
#ifndef RLOCK_NO_REENTRANT
        /* reentrant owner ids: empty or too long */
        cfg2 = CFG;
        cfg2.owner = "";
        CHECK_EQ_ST(rlock_client_init(&c2, N + 1, 1, &cfg2), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&l2, &c2, "k", 1, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&l2, TTL, 0), RLOCK_E_BADARG);
        cfg2.owner = "0123456789012345678901234567890123456789012345678901234567890123X"; /* 65 */
        CHECK_EQ_ST(rlock_client_init(&c2, N + 1, 1, &cfg2), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&l2, &c2, "k", 1, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&l2, TTL, 0), RLOCK_E_BADARG);
        { /* named as a read-write lock's hash fields (test_primitives test_owner_clash) */
            static const char *const clash[] = { "job:r", "job:w", "job:x", "job:y", "job:q", "job:t", "mode", "wq", ":r" };
            size_t j;
            for (j = 0; j < sizeof clash / sizeof clash[0]; j++) {
                cfg2.owner = clash[j];
                CHECK_EQ_ST(rlock_client_init(&c2, N + 1, 1, &cfg2), RLOCK_OK);
                CHECK_EQ_ST(rlock_lock_init(&l2, &c2, "k", 1, RLOCK_KIND_REENTRANT), RLOCK_OK);
                CHECK_MSG(rlock_acquire(&l2, TTL, 0) == RLOCK_E_BADARG, "owner '%s'", clash[j]);
                CHECK(why_has(rlock_lock_error(&l2), "reentrant owner id"));
            }
        }
#endif
    }
    /* after destroy every call is a bad argument */
    rlock_lock_destroy(&LK);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_BADARG);
    CHECK(strcmp(rlock_lock_token(&LK), "") == 0);
    rlock_lock_destroy(&LK); /* twice is harmless */
    CHECK_MSG(all_silent(RLOCK_MAX_NODES + 1), "bad arguments must send nothing");
}

/* A password too long for the command buffer: a bad argument, nothing sent. */
static void test_bad_args_oversized_auth(void) {
    static char pw[RLOCK_TX_BUF + 10];
    env_reset("oversized AUTH");
    memset(pw, 'p', sizeof pw - 1);
    pw[sizeof pw - 1] = '\0';
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    N[0].password = pw;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
    CHECK(F[0].bytes_sent == 0 && F[0].n_reqs == 0);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    /* a bad argument is not worth waiting for: no retries, no sleeps */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 5000), RLOCK_E_BADARG);
    CHECK_EQ_LL(g_n_sleeps, 0);
    CHECK_EQ_LL(g_now, T0);
    CHECK(F[0].bytes_sent == 0 && F[0].n_reqs == 0);
    env_done();
}

#if !defined(RLOCK_NO_EVAL_FALLBACK) && !defined(RLOCK_NO_REENTRANT)
/* The longest key, binary, also fits the EVAL fallback. */
static void test_max_key(void) {
    static char key[RLOCK_MAX_KEY_LEN];
    size_t i;
    env_reset("max key");
    for (i = 0; i < sizeof key; i++) key[i] = (char)(i * 7u); /* includes \0, \r, \n */
    env_nodes(1, 1);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, key, sizeof key, RLOCK_KIND_REENTRANT), RLOCK_OK);
    fk_add(&F[0], "EVALSHA", "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    fk_add(&F[0], "EVAL", GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK(req_script(&F[0], 0, 0, S_RACQ, &LK, key, sizeof key, "10000"));
    CHECK(req_script(&F[0], 1, 1, S_RACQ, &LK, key, sizeof key, "10000"));
    env_done();
}
#endif

/* RLOCK_TX_BUF holds the longest attempt any lock can make: every script of
 * every kind (fair, fenced, queued, replica WAIT and cluster ASKING around
 * it), at the longest key and owner, the largest numbers, each way a script
 * goes out (EVALSHA; EVAL; FUNCTION LOAD + FCALL) - as far as the build has
 * each of these (a feature compiled out is never sent, and its floor goes
 * with it). Encoded for real, into a buffer far larger, and measured against
 * the floor of section 1. */
static void test_tx_floor(void) {
    static const rlock_kind kinds[] = { RLOCK_KIND_SIMPLE
#ifndef RLOCK_NO_REENTRANT
                                        , RLOCK_KIND_REENTRANT
#endif
#ifndef RLOCK_NO_PRIMITIVES
                                        , RLOCK_KIND_SEMAPHORE, RLOCK_KIND_READ, RLOCK_KIND_WRITE
#endif
    };
    static unsigned char buf[2 * RLOCK_TX_BUF];
    static char key[RLOCK_MAX_KEY_LEN], owner[RLOCK_MAX_OWNER_LEN + 1];
    size_t k, i, longest = 0, nodes = RLOCK_MAX_NODES < 2 ? 1 : 2;
    size_t around = (RLOCK__HAS_CLUSTER ? 17 : 0) + (RLOCK__HAS_REPLICAS ? 48 : 0);
    int fair, op, how;
    env_reset("TX floor");
    memset(key, 'k', sizeof key);
    memset(owner, 'o', sizeof owner - 1);
    env_nodes(nodes, 2);
    CFG.fencing = RLOCK__HAS_FENCING;
    CFG.owner = owner;
    CHECK_EQ_ST(rlock_client_init(&C, N, nodes, &CFG), RLOCK_OK);
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (fair = 0; fair <= RLOCK__HAS_FAIR; fair++) {
#ifndef RLOCK_NO_PRIMITIVES
            if (kinds[k] == RLOCK_KIND_SEMAPHORE) CHECK_EQ_ST(rlock_semaphore_init(&LK, &C, key, sizeof key, 1000000), RLOCK_OK);
            else
#endif
                CHECK_EQ_ST(rlock_lock_init(&LK, &C, key, sizeof key, kinds[k]), RLOCK_OK);
            if (fair && kinds[k] <= RLOCK_KIND_REENTRANT) CHECK_EQ_ST(rlock_lock_set_fair(&LK, 1, 600000u), RLOCK_OK);
            LK.param = LLONG_MAX;
            LK.held_mask = 1;
            LK.op.queue = 1;
#if !RLOCK__ENC_TEMPLATE /* (the templates send no wait left) */
            LK.op.wait_left = 86400000u;
#endif
#ifndef RLOCK_NO_PRIMITIVES /* (a semaphore's permits, a writer's hold-off) */
            LK.op.arg5 = UINT32_MAX; /* (its type's largest) */
#endif
            LK.op.ttl = RLOCK_MAX_TTL_MS; /* (the templates': RLOCK__ENC_TEMPLATE) */
#if !RLOCK__ENC_TEMPLATE
            LK.op.round.ttl = RLOCK_MAX_TTL_MS;
#endif
            for (op = RLOCK__OP_ACQUIRE; op <= RLOCK__OP_RELEASE; op++) {
#if RLOCK__COMPACT /* a simple lock's script (rlock__c_ops_are_scripts) */
                LK.op.round.script = op - RLOCK__OP_ACQUIRE;
#else
                LK.op.round.script = rlock__script_for(&LK, op);
#endif
                for (how = RLOCK__RUN_EVALSHA; how <= RLOCK__RUN_FCALL; how++) {
                    size_t n;
                    if ((how == RLOCK__RUN_EVAL && !RLOCK__HAS_EVAL) || (how == RLOCK__RUN_FCALL && !RLOCK__HAS_FCALL))
                        continue; /* never goes out that way */
                    for (i = 0; i < nodes; i++) { /* a Redlock release wakes from one node only */
                        n = rlock__encode_lock(&LK, i, buf, sizeof buf, how);
                        CHECK(n > 0);
#if !RLOCK__COMPACT /* the compact engine has no FCALL (nor its library loader) */
                        if (how == RLOCK__RUN_FCALL && RLOCK__HAS_EVAL) /* the library goes first */
                            n += rlock__encode_lock(&LK, i, buf, sizeof buf, RLOCK__RUN_FNLOAD);
#endif
                        if (n > longest) longest = n;
                    }
                }
            }
        }
#ifndef RLOCK_NO_PRIMITIVES
    { /* a multi-lock of RLOCK_MAX_MULTI keys filling RLOCK_MAX_KEY_LEN: with fencing its acquire carries
       * every key's counter, its release every key's queue and deadlines */
        static char mk[RLOCK_MAX_MULTI][RLOCK_MAX_KEY_LEN];
        const char *mks[RLOCK_MAX_MULTI];
        size_t mls[RLOCK_MAX_MULTI];
        for (i = 0; i < RLOCK_MAX_MULTI; i++) {
            mls[i] = RLOCK_MAX_KEY_LEN / RLOCK_MAX_MULTI - 2;
            memset(mk[i], 'm', mls[i]);
            memcpy(mk[i], "{t}", 3);
            mk[i][3] = (char)('a' + i);
            mks[i] = mk[i];
        }
        CHECK_EQ_ST(rlock_multi_init(&LK, &C, mks, mls, RLOCK_MAX_MULTI), RLOCK_OK);
        LK.held_mask = 1;
        LK.op.round.ttl = RLOCK_MAX_TTL_MS;
        for (op = RLOCK__OP_ACQUIRE; op <= RLOCK__OP_RELEASE; op++) {
            LK.op.round.script = rlock__script_for(&LK, op);
            for (how = RLOCK__RUN_EVALSHA; how <= RLOCK__RUN_FCALL; how++) {
                size_t n;
                if ((how == RLOCK__RUN_EVAL && !RLOCK__HAS_EVAL) || (how == RLOCK__RUN_FCALL && !RLOCK__HAS_FCALL))
                    continue;
                for (i = 0; i < nodes; i++) {
                    n = rlock__encode_lock(&LK, i, buf, sizeof buf, how);
                    CHECK(n > 0);
                    if (how == RLOCK__RUN_FCALL && RLOCK__HAS_EVAL)
                        n += rlock__encode_lock(&LK, i, buf, sizeof buf, RLOCK__RUN_FNLOAD);
                    if (n > longest) longest = n;
                }
            }
        }
    }
#endif
    /* ASKING (17 bytes) before the script, WAIT (at most 48) after it */
    CHECK_MSG(longest + around <= RLOCK_TX_BUF, "the longest attempt does not fit in RLOCK_TX_BUF");
    printf("TX floor: longest attempt %lu + %lu bytes, RLOCK_TX_BUF %lu\n", (unsigned long)longest,
           (unsigned long)around, (unsigned long)RLOCK_TX_BUF);
    env_done();
}

/* A second op while one runs: invalid state, nothing sent for it. */
/* Two locks on one client run at once: their requests are pipelined on the
 * one connection and each reply goes to its own lock. A handle that is busy
 * still refuses a second op. */
static void test_busy(void) {
    rlock_status a = RLOCK_WOULD_BLOCK, b = RLOCK_WOULD_BLOCK;
    long guard = 0;
    env_reset("busy");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    F[0].connect_block = 1;
    fk_add(&F[0], "res:1", GRANT);
    fk_add(&F[0], "res:2", "*2\r\n:0\r\n:5000\r\n"); /* held elsewhere */
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_E_STATE);
    CHECK_EQ_ST(rlock_release_begin(&LK), RLOCK_E_STATE);
    CHECK_EQ_ST(rlock_extend_begin(&LK, TTL), RLOCK_E_STATE);
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK); /* shares the connection */
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_STATE);
    CHECK_EQ_LL(F[0].n_reqs, 0);
    while ((a == RLOCK_WOULD_BLOCK || b == RLOCK_WOULD_BLOCK) && ++guard < 1000) {
        if (a == RLOCK_WOULD_BLOCK) a = rlock_step(&LK);
        if (b == RLOCK_WOULD_BLOCK) b = rlock_step(&LK2);
    }
    CHECK_EQ_ST(a, RLOCK_OK);
    CHECK_EQ_ST(b, RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK_EQ_LL(F[0].connect_calls, 2); /* one connection (one WOULD_BLOCK connect first) */
    CHECK_EQ_LL(F[0].req_conn[0], F[0].req_conn[1]);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_STATE); /* a simple lock is not reentrant */
    CHECK_EQ_LL(F[0].n_reqs, 2);
    env_done();
}

/* A failing random source: no client, no lock, nothing sent. */
static void test_random_fails(void) {
    rlock_status st;
    char tok[RLOCK_TOKEN_LEN + 1];
    env_reset("random fails");
    env_nodes(1, 1);
    g_rand_fail = 1;
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_E_RANDOM);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    g_rand_fail = 0;
    g_rand_ctr = 500;
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    {   /* the instance id: the init's 64 random bits in hex, asked for after
         * later draws too (the compact engine writes it out when asked) */
        unsigned char b[8];
        char id[17];
        size_t i;
        g_rand_ctr = 500;
        hk_random(NULL, b, sizeof b);
        for (i = 0; i < sizeof b; i++) sprintf(id + 2 * i, "%02x", b[i]);
        hk_random(NULL, b, sizeof b);
        CHECK(strcmp(rlock_client_instance_id(&C), id) == 0);
        CHECK(strcmp(rlock_client_instance_id(&C), id) == 0);
    }
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, KIND_RE), RLOCK_OK);
    g_rand_fail = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_RANDOM);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_E_RANDOM);
    CHECK_EQ_ST(rlock_acquire(&LK2, TTL, 0), RLOCK_E_RANDOM);
    CHECK(fk_sent_nothing(&F[0]));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_STATE); /* nothing started */
    g_rand_fail = 0;
    /* the token is the random source's bytes in hex: nothing else feeds it */
    fk_add(&F[0], NULL, GRANT);
    g_rand_ctr = 1000;
    st = rlock_acquire(&LK, TTL, 0);
    CHECK_EQ_ST(st, RLOCK_OK);
    {
        unsigned char b[RLOCK_TOKEN_LEN / 2];
        size_t i;
        g_rand_ctr = 1000;
        hk_random(NULL, b, sizeof b);
        for (i = 0; i < sizeof b; i++) sprintf(tok + 2 * i, "%02x", b[i]);
    }
    CHECK(strcmp(rlock_lock_token(&LK), tok) == 0);
    CHECK_EQ_LL(rlock_replica_acks(&LK), -1); /* none asked (cfg.replicas 0, or RLOCK_NO_REPLICAS) */
    env_done();
}

#if RLOCK_MAX_NODES >= 4 /* a two-node client and spare nodes for others */
/* FAULTS.md row 23, through every public function of rlock.h (sections 3-5
 * and the RLOCK_WATCHDOG ones): NULL, out-of-range, never initialised and
 * destroyed handles give RLOCK_E_BADARG, or the documented neutral value of
 * a getter (0, "", NULL, RLOCK_STATE_IDLE, "unknown status"); nothing
 * crashes (ASan/UBSan/valgrind), no handle is half-changed, and not a byte
 * reaches any transport. */
static void test_bad_args_every_public_function(void) {
    static rlock_node junk_node, zero_node, tmp_node;
    static rlock_subscriber junk_sub, subs[2];
    static rlock_client junk_client, zero_client, dead_client;
    static rlock_lock junk_lock, zero_lock, destroyed, orphan, dl;
#ifdef RLOCK_WATCHDOG
    static rlock_client own;
    static rlock_watchdog w, w_zero;
    long long v;
#endif
    static char longkey[RLOCK_MAX_KEY_LEN + 1];
    const char *argv[2];
    size_t lens[2];
    rlock_transport tr;
    rlock_reply rep;
    rlock_config cfg;
    unsigned char buf[64];
    char out[32];
    uint32_t next;
    size_t i;
    rlock_lock *const bad_locks[] = { NULL, &junk_lock, &zero_lock, &destroyed, &orphan };
    const rlock_node *const bad_nodes[] = { NULL, &junk_node, &zero_node };
    rlock_client *const bad_clients[] = { NULL, &junk_client, &zero_client };

    env_reset("bad args, every public function");
    env_nodes(RLOCK_MAX_NODES + 1, 1);
    memset(&junk_node, 0xA5, sizeof junk_node);     /* garbage: never initialised */
    memset(&junk_client, 0xA5, sizeof junk_client);
    memset(&junk_lock, 0xA5, sizeof junk_lock);
    memset(&zero_node, 0, sizeof zero_node);        /* zeroed: never initialised */
    memset(&zero_client, 0, sizeof zero_client);
    memset(&zero_lock, 0, sizeof zero_lock);
    memset(longkey, 'k', sizeof longkey);

    /* --- 2. status names ("" for all when left out: test_status_strings) --- */
#ifndef RLOCK_NO_STATUS_STRINGS
    CHECK(strcmp(rlock_status_str((rlock_status)-1), "unknown status") == 0);
    CHECK(strcmp(rlock_status_str(RLOCK_STATUS_COUNT), "unknown status") == 0);
    CHECK(strcmp(rlock_status_str((rlock_status)INT_MAX), "unknown status") == 0);
#endif

    /* --- 3. RESP codec --- */
    CHECK(rlock_resp_parse(NULL, 4, 64, &rep) < 0);
    CHECK(rlock_resp_parse(NULL, 0, 64, &rep) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 64, NULL) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 0, &rep) < 0);
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, 3, &rep) < 0);          /* len > max_len */
    CHECK(rlock_resp_parse((const unsigned char *)":1\r\n", 4, (size_t)-1, &rep) < 0); /* > LONG_MAX */
    argv[0] = "PING"; lens[0] = 4;
    argv[1] = NULL; lens[1] = 1;
    CHECK_EQ_LL(rlock_resp_encode(NULL, sizeof buf, 1, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, 0, 1, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, sizeof buf, 0, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, sizeof buf, -1, argv, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, sizeof buf, 1, NULL, lens), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, sizeof buf, 1, argv, NULL), 0);
    CHECK_EQ_LL(rlock_resp_encode(buf, sizeof buf, 2, argv, lens), 0); /* NULL argument with a length */
    memset(buf, 0x5c, sizeof buf);
    CHECK_EQ_LL(rlock_resp_encode(buf, 3, 1, argv, lens), 0);           /* "*1\r\n" does not fit */
    for (i = 0; i < sizeof buf; i++) if (buf[i] != 0x5c) break;
    CHECK_MSG(i == sizeof buf, "encode wrote byte %lu with cap 3", (unsigned long)i);

    /* --- 4. config, nodes --- */
    rlock_config_init(NULL);
    tr = fk_transport(&F[0], 1);
    memset(&tmp_node, 0x33, sizeof tmp_node);
    CHECK_EQ_ST(rlock_node_init(NULL, &tr), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_node_init(&tmp_node, NULL), RLOCK_E_BADARG);
    tr.send = NULL;
    CHECK_EQ_ST(rlock_node_init(&tmp_node, &tr), RLOCK_E_BADARG);
    tr = fk_transport(&F[0], 1);
    tr.recv = NULL;
    CHECK_EQ_ST(rlock_node_init(&tmp_node, &tr), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_node_status(&tmp_node), RLOCK_E_BADARG); /* failed init left it uninitialised */
    memset(&junk_sub, 0xA5, sizeof junk_sub);
    CHECK_EQ_ST(rlock_subscriber_init(NULL, &tr), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_subscriber_init(&junk_sub, NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_subscriber_init(&junk_sub, &tr), RLOCK_E_BADARG); /* tr.recv is NULL */
    CHECK_EQ_LL(rlock_subscriber_commands(&junk_sub), 0);
    CHECK(rlock_subscriber_error(&junk_sub)[0] == '\0');
    CHECK(rlock_subscriber_error(NULL)[0] == '\0');
    CHECK_EQ_LL(rlock_subscriber_commands(NULL), 0);
    CHECK_EQ_LL(rlock_subscriber_wants(NULL), 0);
    CHECK_EQ_LL(rlock_subscriber_wants(&junk_sub), 0);
    CHECK(rlock_client_instance_id(NULL)[0] == '\0');
    for (i = 0; i < sizeof bad_nodes / sizeof bad_nodes[0]; i++) {
        CHECK_EQ_ST(rlock_node_status(bad_nodes[i]), RLOCK_E_BADARG);
        CHECK(rlock_node_error(bad_nodes[i]) != NULL && rlock_node_error(bad_nodes[i])[0] == '\0');
        CHECK_EQ_LL(rlock_node_commands(bad_nodes[i]), 0);
        CHECK_EQ_LL(rlock_node_wants(bad_nodes[i]), 0);
    }

    /* --- 4. clients --- */
    CHECK_EQ_ST(rlock_client_init(NULL, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, NULL, 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, N, 0, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, N, RLOCK_MAX_NODES + 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, N, (size_t)-1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, &junk_node, 1, &CFG), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_init(&zero_client, &zero_node, 1, &CFG), RLOCK_E_BADARG);
    {
        static rlock_node two[2];
        rlock_transport t0 = fk_transport(&F[0], 1);
        CHECK_EQ_ST(rlock_node_init(&two[0], &t0), RLOCK_OK);
        CHECK_EQ_ST(rlock_node_init(&two[1], &t0), RLOCK_OK);
        CHECK_EQ_ST(rlock_client_init(&zero_client, two, 2, &CFG), RLOCK_E_BADARG); /* duplicate */
    }
    cfg = CFG;
    cfg.drift_permille = 1000;
    CHECK_EQ_ST(rlock_client_init(&zero_client, N, 1, &cfg), RLOCK_E_BADARG);
    cfg.drift_permille = UINT32_MAX;
    CHECK_EQ_ST(rlock_client_init(&zero_client, N, 1, &cfg), RLOCK_E_BADARG);
    CHECK_EQ_LL(rlock_client_quorum(&zero_client), 0); /* every failed init left it as it was */
    for (i = 0; i < sizeof bad_clients / sizeof bad_clients[0]; i++) {
        CHECK_EQ_ST(rlock_client_connect(bad_clients[i], 100), RLOCK_E_BADARG);
        CHECK_EQ_LL(rlock_client_quorum(bad_clients[i]), 0);
        rlock_client_close(bad_clients[i]);
        CHECK_EQ_ST(rlock_client_set_subscribers(bad_clients[i], subs, 1), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_lock_init(&dl, bad_clients[i], "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    }
    CHECK_EQ_ST(rlock_client_init(&C, N, 2, &CFG), RLOCK_OK); /* the good client: nodes 0, 1 */
    CHECK_EQ_ST(rlock_client_connect(&C, 0), RLOCK_E_BADARG);
    /* subscribers: none, too many, never initialised, a command connection */
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, NULL, 1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, subs, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, subs, 3), RLOCK_E_BADARG); /* more than the nodes */
    memset(subs, 0, sizeof subs);
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, subs, 1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, &junk_sub, 1), RLOCK_E_BADARG);
    tr = fk_transport(&F[0], 1);
    CHECK_EQ_ST(rlock_subscriber_init(&subs[0], &tr), RLOCK_OK); /* its own struct, node 0's connection */
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, subs, 1), RLOCK_E_BADARG);
    tr = fk_transport(&F[1], 1);
    CHECK_EQ_ST(rlock_subscriber_init(&subs[0], &tr), RLOCK_OK); /* node 1's connection */
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, subs, 1), RLOCK_E_BADARG);
    /* No public call counts a client's subscribers: look inside to prove
     * that the refused calls left none set. */
    CHECK_EQ_LL(C.n_subs, 0);
    CHECK_EQ_LL(rlock_client_quorum(&C), 2);

    /* --- 5. lock init --- */
    memset(&dl, 0x77, sizeof dl);
    CHECK_EQ_ST(rlock_lock_init(NULL, &C, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, NULL, 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, "k", 0, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, longkey, RLOCK_MAX_KEY_LEN + 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, longkey, (size_t)-1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, "k", 1, (rlock_kind)0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, "k", 1, (rlock_kind)3), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_lock_init(&dl, &C, "k", 1, (rlock_kind)-1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&dl, TTL, 0), RLOCK_E_BADARG); /* failed inits left it unusable */

    /* handles that were destroyed, or whose client is gone */
    CHECK_EQ_ST(rlock_lock_init(&destroyed, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    rlock_lock_destroy(&destroyed);
    CHECK_EQ_ST(rlock_client_init(&dead_client, N + 2, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&orphan, &dead_client, "res:1", 5, KIND_RE), RLOCK_OK);
    memset(&dead_client, 0, sizeof dead_client); /* the client's memory was reused */

    /* --- 5. every lock function on every bad handle --- */
    for (i = 0; i < sizeof bad_locks / sizeof bad_locks[0]; i++) {
        rlock_lock *lk = bad_locks[i];
        CHECK_EQ_ST(rlock_acquire(lk, TTL, 0), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_acquire(lk, TTL, 1000), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_try_acquire(lk, TTL), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_extend(lk, TTL), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_release(lk), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_acquire_begin(lk, TTL, 0), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_extend_begin(lk, TTL), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_release_begin(lk), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_step(lk), RLOCK_E_BADARG);
        CHECK_EQ_LL(rlock_next_timeout_ms(lk), 0);
        rlock_cancel(lk);
        CHECK_EQ_LL(rlock_lock_state(lk), RLOCK_STATE_IDLE);
        CHECK_EQ_LL(rlock_validity_ms(lk), 0);
        CHECK_EQ_LL(rlock_hold_count(lk), 0);
        CHECK(rlock_lock_token(lk) != NULL && rlock_lock_token(lk)[0] == '\0');
        CHECK_EQ_LL(rlock_last_votes(lk), 0);
        CHECK_EQ_LL(rlock_fence_token(lk), 0);
        next = 12345;
        CHECK_EQ_ST(rlock_renew_poll(lk, &next), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_renew_poll(lk, NULL), RLOCK_E_BADARG);
        rlock_lock_destroy(lk);
#ifdef RLOCK_WATCHDOG
        CHECK_EQ_ST(rlock_watchdog_start(&w, lk, &C), RLOCK_E_BADARG);
#endif
    }

    /* --- 5. out-of-range values on a good, idle handle --- */
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    {
        static const long long bad_ttls[] = { 0, -1, 2 /* <= drift */, RLOCK_MAX_TTL_MS + 1, LLONG_MAX, LLONG_MIN };
        for (i = 0; i < sizeof bad_ttls / sizeof bad_ttls[0]; i++) {
            CHECK_EQ_ST(rlock_acquire(&LK, bad_ttls[i], 0), RLOCK_E_BADARG);
            CHECK_EQ_ST(rlock_try_acquire(&LK, bad_ttls[i]), RLOCK_E_BADARG);
            CHECK_EQ_ST(rlock_acquire_begin(&LK, bad_ttls[i], 100), RLOCK_E_BADARG);
            CHECK_EQ_ST(rlock_extend(&LK, bad_ttls[i]), RLOCK_E_BADARG);
            CHECK_EQ_ST(rlock_extend_begin(&LK, bad_ttls[i]), RLOCK_E_BADARG);
        }
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, -1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, LLONG_MIN), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, -1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_STATE);               /* nothing started */
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 0);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_NOT_HELD);           /* documented: nothing sent */
    CHECK_EQ_ST(rlock_release_begin(&LK), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_NOT_HELD);
    CHECK_EQ_ST(rlock_renew_poll(&LK, NULL), RLOCK_E_BADARG);
    next = 12345;
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_NOT_HELD);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK(rlock_lock_token(&LK)[0] == '\0');

    /* --- 6.9 keys, scripts --- */
    memset(out, 0x5c, sizeof out);
    CHECK_EQ_LL(rlock_aux_key(NULL, sizeof out, "k", 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, NULL, 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "k", 0, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "k", 1, NULL), 0);
    CHECK_EQ_LL(rlock_aux_key(out, 0, "k", 1, ":f"), 0);
    CHECK_EQ_LL(rlock_aux_key(out, 5, "k", 1, ":f"), 0); /* "{k}:f" needs 6 with the NUL */
    CHECK_EQ_LL(rlock_aux_key(out, sizeof out, "a}b", 3, ":f"), 0);
    CHECK((unsigned char)out[sizeof out - 1] == 0x5c);
    {
        static const int ids[] = { -1, RLOCK_SCRIPT_COUNT, INT_MIN, INT_MAX };
        for (i = 0; i < sizeof ids / sizeof ids[0]; i++)
            CHECK(rlock_script_text(ids[i]) == NULL && rlock_script_sha(ids[i]) == NULL);
    }

#ifdef RLOCK_WATCHDOG
    /* --- RLOCK_WATCHDOG: bad arguments start no thread --- */
    memset(&w_zero, 0, sizeof w_zero);
    CHECK_EQ_ST(rlock_client_init(&own, N + 3, 2, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_start(NULL, &LK, &own), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &junk_client), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &zero_client), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &C), RLOCK_E_BADARG);      /* the lock's own client */
    CHECK_EQ_ST(rlock_client_init(&own, N + 3, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &own), RLOCK_E_BADARG);    /* another node count */
    CHECK_EQ_ST(rlock_client_init(&own, N + 3, 2, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &own), RLOCK_NOT_HELD);    /* documented */
    CHECK_EQ_ST(rlock_watchdog_stop(NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_watchdog_stop(&w_zero), RLOCK_E_BADARG);           /* never started */
    v = 99;
    CHECK_EQ_LL(rlock_watchdog_state(NULL, &v), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(v, 0);
    v = 99;
    CHECK_EQ_LL(rlock_watchdog_state(&w_zero, &v), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(v, 0);
    CHECK_EQ_LL(rlock_watchdog_state(NULL, NULL), RLOCK_STATE_IDLE);
#endif

    CHECK_MSG(all_silent(RLOCK_MAX_NODES + 1), "a bad argument reached a transport");
    for (i = 0; i < RLOCK_MAX_NODES + 1; i++) CHECK(F[i].close_calls == 0 && F[i].wait_calls == 0);

    /* --- bad values on a held lock: refused, the lock and the server untouched --- */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_extend(&LK, -1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_extend(&LK, RLOCK_MAX_TTL_MS + 1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_extend_begin(&LK, LLONG_MIN), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_renew_poll(&LK, NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, 0, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_STATE); /* a simple lock is not reentrant */
#ifdef RLOCK_WATCHDOG
    CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &C), RLOCK_E_BADARG);
#endif
    CHECK(F[0].n_reqs == 1 && F[1].n_reqs == 1);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    env_done();
}
#endif

/* ------------------------------------------------------------------------ */
/* 6. the lock state machine                                                 */
/* ------------------------------------------------------------------------ */

/* The uncontended fast path (cfg.scripts_only 0): a barging simple lock
 * without fencing first sends the plain SET key token NX PX ttl a raw client
 * would; refused (nil), the script attempt follows at once - it queues and
 * tells a holder's PTTL from a foreign key. Fencing, reentrant and fair
 * locks always use scripts. Only once a script ran on the node: before, a
 * user whose ACL refuses scripts would get the key by SET and could not
 * release it. The compact engine has no fast path: always the script. */
static void test_plain_fast_path(void) {
    unsigned char want[256];
    const char *argv[6];
    size_t lens[6], n, i;
    env_reset("plain SET NX PX fast path");
    CFG.scripts_only = 0;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    /* no script has run on the node yet: the first acquire is one */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
#if RLOCK__COMPACT
    /* the compact engine has no fast path: every attempt is the script,
     * after a script ran too (a step whose request holds no EVALSHA of the
     * acquire script fails the fake) */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_REQ(F[0], 2, 0, S_ACQ, "10000");
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:500\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_REQ(F[0], 4, 0, S_ACQ, "10000");
    CHECK_EQ_LL(F[0].n_reqs, 5);
    for (i = 0; i < (size_t)F[0].n_reqs; i++) CHECK(!req_has(&F[0], (int)i, "NX")); /* (no SET NX PX) */
    (void)want, (void)argv, (void)lens, (void)n;
#else
    fk_add(&F[0], "SET", "+OK\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    argv[0] = "SET"; argv[1] = "res:1"; argv[2] = rlock_lock_token(&LK); argv[3] = "NX"; argv[4] = "PX"; argv[5] = "10000";
    for (i = 0; i < 6; i++) lens[i] = strlen(argv[i]);
    n = mk_cmd(want, 6, argv, lens);
    CHECK(req_eq(&F[0], 2, want, n));
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_REQ(F[0], 3, 0, S_REL, "10000");
    /* refused: the script follows at once and gives the real answer */
    fk_add(&F[0], "SET", "$-1\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_FOREIGN);
    CHECK_REQ(F[0], 5, 0, S_ACQ, "10000");
    fk_add(&F[0], "SET", "$-1\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:500\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].n_reqs, 8);
    /* a reply of another shape is a protocol error, and drops the connection */
    fk_add(&F[0], "SET", ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n"); /* the outcome was unknown: cleaned up */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK(F[0].close_calls >= 1);
    { /* a status other than OK, an array: the same */
        static const char *const other[] = { "+OKAY\r\n", "+O\r\n", "+\r\n", "+KO\r\n", "*1\r\n:1\r\n" };
        for (i = 0; i < sizeof other / sizeof other[0]; i++) {
            fk_add(&F[0], "SET", other[i]);
            fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
        }
        CHECK_EQ_LL(F[0].n_reqs, 10 + 2 * (long long)i);
    }
#endif
    env_done();

#if RLOCK_MAX_NODES >= 3
    /* Redlock: a partial plain grant is released (no wake), then the script */
#if RLOCK_MAX_NODES >= 3
    env_reset("plain SET NX PX fast path, Redlock");
    CFG.scripts_only = 0;
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) { /* a script runs on every node first */
        fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    fk_add(&F[0], "SET", "+OK\r\n");
    fk_add(&F[1], "SET", "$-1\r\n");
    fk_add(&F[2], "SET", "$-1\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_OK);
    /* the release before: nodes 0 and 1 wake (a build whose requests carry no
     * wait queue - RLOCK_NO_WAITING, _NO_FENCING and _NO_FAIR - names no channel) */
    CHECK(req_has(&F[0], 1, "{res:1}:released") == RLOCK__REQ_QUEUE);
    CHECK(req_has(&F[1], 1, "{res:1}:released") == RLOCK__REQ_QUEUE && !req_has(&F[2], 1, "{res:1}:released"));
    CHECK(!req_has(&F[0], 3, "{res:1}:released")); /* a cleanup wakes no one */
    CHECK_EQ_LL(rlock_last_votes(&LK), 3);
    env_done();
#endif
#endif

#if RLOCK_MAX_NODES > 1
    /* Redlock over RLOCK_MAX_NODES nodes: every bit of the node masks in use
     * (compile-check runs this with RLOCK_MAX_NODES=32, the most a mask holds,
     * under UBSan: a 1u << 32 there is undefined) */
    env_reset("Redlock over RLOCK_MAX_NODES nodes");
    env_up(RLOCK_MAX_NODES, 0, RLOCK_KIND_SIMPLE);
    for (i = 0; i < RLOCK_MAX_NODES; i++) {
        char run_id[64]; /* (a server of its own each: rlock_client_connect asks) */
        snprintf(run_id, sizeof run_id, "$40\r\n%040u\r\n", (unsigned)i);
        fk_add(&F[i], "PING", "+PONG\r\n");
        fk_add(&F[i], "run_id", run_id);
        fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
    }
    CHECK_EQ_ST(rlock_client_connect(&C, 1000), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), RLOCK_MAX_NODES);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    for (i = 0; i < RLOCK_MAX_NODES; i++) CHECK_EQ_LL(F[i].n_reqs, 4); /* PING, run_id, acquire, release */
    env_done();
#endif

#ifndef RLOCK_NO_FENCING
    /* fencing: scripts only */
    env_reset("plain SET NX PX fast path, fencing");
    CFG.scripts_only = 0;
    CFG.fencing = 1;
    g_fencing = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:7\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&LK), 7);
    env_done();

    /* the fence key's INCR fails after the script's SET (not an integer):
     * Redis keeps the SET, so the failed acquire releases it */
    env_reset("fence INCR fails after the SET");
    CFG.fencing = 1;
    g_fencing = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ),
           "-ERR value is not an integer or out of range script: x, on @user_script:1.\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK(why_has(rlock_node_error(&N[0]), "not an integer"));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#endif
}

static void test_acquire_release_basic(void) {
    char tok1[RLOCK_TOKEN_LEN + 1];
    size_t i;
    fk_step *s;
    env_reset("acquire/release");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], NULL, GRANT);
    s->delay_ms = 7;
    fk_add(&F[0], NULL, ":1\r\n");
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - 7 - DRIFT);
    CHECK_EQ_LL(rlock_hold_count(&LK), 1);
    CHECK_EQ_LL(rlock_last_votes(&LK), 1);
    CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&N[0]), 1);
    CHECK_EQ_LL(strlen(rlock_lock_token(&LK)), RLOCK_TOKEN_LEN);
    for (i = 0; i < RLOCK_TOKEN_LEN; i++) CHECK_MSG(strchr("0123456789abcdef", rlock_lock_token(&LK)[i]) != NULL, "hex");
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    CHECK(F[0].connect_calls == 1 && F[0].close_calls == 0);
    CHECK(!req_has(&F[0], 0, "AUTH"));
    /* validity runs down with the clock */
    g_now += 1000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - 1007 - DRIFT);
    snprintf(tok1, sizeof tok1, "%s", rlock_lock_token(&LK)); /* "" when not held: never read past it */
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_REQ(F[0], 1, 0, S_REL, "10000");
    CHECK_EQ_LL(F[0].req_conn[1], 1); /* same connection */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
    CHECK_EQ_LL(rlock_hold_count(&LK), 0);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_NOT_HELD); /* over-release: nothing sent */
    CHECK_EQ_LL(F[0].n_reqs, 2);
    /* a new grant gets a new token */
    CHECK_EQ_ST(rlock_try_acquire(&LK, TTL), RLOCK_OK);
    CHECK(strcmp(tok1, rlock_lock_token(&LK)) != 0);
    CHECK_REQ(F[0], 2, 0, S_ACQ, "10000");
    CHECK(F[0].connect_calls == 1 && F[0].close_calls == 0);
    env_done();
}

static void test_refused(void) {
    env_reset("refused, try once");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:5000\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].n_reqs, 1); /* no cleanup: nothing was granted */
    CHECK_EQ_LL(g_n_sleeps, 0);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rlock_last_votes(&LK), 0);
    CHECK_EQ_LL(F[0].close_calls, 0);
    env_done();
}

static void test_refused_then_granted(void) {
    int i;
    env_reset("refused then granted");
    CFG.backoff_min_ms = 100;
    CFG.backoff_max_ms = 1000;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:30\r\n");  /* holder has 30 ms left */
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:500\r\n");
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 5000), RLOCK_OK);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK_EQ_LL(g_n_sleeps, 2);
    /* the backoff never sleeps past the holder's PTTL (+1 ms so the key is gone) */
    CHECK_MSG(g_sleep_ms[0] >= 1 && g_sleep_ms[0] <= 31, "slept %lu", (unsigned long)g_sleep_ms[0]);
    CHECK_MSG(g_sleep_ms[1] >= 100 && g_sleep_ms[1] <= 200, "slept %lu", (unsigned long)g_sleep_ms[1]);
    /* one token for the whole call: every round asks with the same one */
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    CHECK_REQ(F[0], 1, 0, S_ACQ, "10000");
    CHECK_REQ(F[0], 2, 0, S_ACQ, "10000");
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    for (i = 0; i < 3; i++) CHECK(!req_has(&F[0], i, rlock_script_sha(S_REL)));
    env_done();
}

/* A backoff configured past 2^31 ms: doubled, it wrapped to a 1-2 ms wait
 * in the compact engine (and twice the cap overflowed elsewhere). Config
 * values are taken as at most 2^30 ms, so every wait here is the holder's
 * PTTL + 1, never a short one. */
static void test_backoff_huge(void) {
    int i, short_sleeps = 0;
    env_reset("backoff configured past 2^31 ms");
    CFG.backoff_min_ms = 0x80000001u;
    CFG.backoff_max_ms = 0xFFFFFFFFu;
    CFG.recheck_ms = 0xFFFFFFFFu;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:5000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 20000), RLOCK_TIMEOUT);
    CHECK_EQ_LL(g_n_sleeps, 4); /* 5001 x 3, then the 4,997 ms left */
    for (i = 0; i + 1 < g_n_sleeps && i < MAX_SLEEPS; i++)
        if (g_sleep_ms[i] != 5001) short_sleeps++;
    CHECK_MSG(short_sleeps == 0, "%d waits other than the holder's PTTL + 1", short_sleeps);
    CHECK_EQ_LL(g_slept, 20000);
    env_done();
}

/* A holder's PTTL too large for 32 bits (the compact engine reads numbers in
 * 32 bits, cut to 2^31 - 1) caps no backoff: read modulo 2^32 it would be
 * 1 ms. */
static void test_huge_holder_pttl(void) {
    env_reset("a holder's PTTL past 2^32");
    CFG.backoff_min_ms = CFG.backoff_max_ms = 100;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:4294967297\r\n");
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:2147483648\r\n");
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 5000), RLOCK_OK);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK_EQ_LL(g_n_sleeps, 2);
    CHECK_MSG(g_sleep_ms[0] >= 50 && g_sleep_ms[0] <= 100, "slept %lu", (unsigned long)g_sleep_ms[0]);
    CHECK_MSG(g_sleep_ms[1] >= 50 && g_sleep_ms[1] <= 100, "slept %lu", (unsigned long)g_sleep_ms[1]);
    env_done();
}

static void test_wait_deadline(void) {
    int i, over = 0;
    env_reset("wait deadline (capped sleep)");
    CFG.backoff_min_ms = 100;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:5000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 60), RLOCK_TIMEOUT);
    CHECK_EQ_LL(g_n_sleeps, 1);
    CHECK_EQ_LL(g_sleep_ms[0], 60); /* cut to the deadline */
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    env_reset("wait deadline (default backoff)");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:5000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 300), RLOCK_TIMEOUT);
    for (i = 0; i < g_n_sleeps && i < MAX_SLEEPS; i++) {
        if (g_sleep_at[i] + g_sleep_ms[i] > T0 + 300) over++;
        if (g_sleep_ms[i] == 0) over++;
        if (i > 0 && g_sleep_ms[i] > 128) over++; /* backoff_max */
    }
    CHECK_MSG(over == 0, "%d sleeps past the deadline, empty or over the cap", over);
    CHECK_EQ_LL(g_slept, 300);
    CHECK(g_n_sleeps >= 4 && F[0].n_reqs == g_n_sleeps + 1);
    for (i = 0; i < F[0].n_reqs && i < FK_LOG; i++) CHECK(req_has(&F[0], i, rlock_script_sha(S_ACQ)));
    env_done();

    env_reset("max attempts");
    CFG.max_attempts = 3;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:5000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 100000), RLOCK_TIMEOUT);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    env_done();
}

static void test_foreign_wrongtype(void) {
    env_reset("foreign key");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "*2\r\n:0\r\n:-1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_FOREIGN);
    CHECK_EQ_LL(F[0].n_reqs, 1); /* not retried, nothing deleted */
    CHECK_EQ_LL(g_n_sleeps, 0);
    CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_E_FOREIGN);
    CHECK(rlock_node_error(&N[0])[0] != '\0');
    env_done();

    env_reset("wrongtype");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK_EQ_LL(g_n_sleeps, 0);
    CHECK(why_has(rlock_node_error(&N[0]), "WRONGTYPE"));
    CHECK_EQ_LL(F[0].close_calls, 0);
    env_done();

#ifndef RLOCK_NO_REENTRANT
    env_reset("wrongtype from a script (Redis 6 wording)");
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], NULL, "-ERR Error running script (call to f_x): @user_script:1: WRONGTYPE key is not a reentrant rlock lock\r\n");
    /* raised by a command inside the script, which may have written before
     * it: the cleanup release follows (by owner: it touches nothing else) */
    fk_add(&F[0], "EVALSHA", ":-1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK_REQ(F[0], 1, 0, S_RREL, "10000");
    env_done();
    /* refused before it ran (NOPERM for EVALSHA, rlock's own error_reply): no cleanup */
    env_reset("wrongtype from rlock's own check");
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], NULL, "-WRONGTYPE key is not a reentrant rlock lock\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_WRONGTYPE);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    env_done();
#endif
}

#ifndef RLOCK_NO_EVAL_FALLBACK
static void test_noscript(void) {
    env_reset("NOSCRIPT fallback");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "EVALSHA", "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    fk_add(&F[0], "EVAL", GRANT);
    fk_add(&F[0], "EVALSHA", ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    CHECK_REQ(F[0], 1, 1, S_ACQ, "10000"); /* the script body, same key/token/ttl */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_REQ(F[0], 2, 0, S_REL, "10000"); /* EVALSHA again next time */
    CHECK_EQ_LL(F[0].close_calls, 0);
    CHECK_EQ_LL(rlock_node_commands(&N[0]), 3);
    env_done();

    env_reset("NOSCRIPT twice");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "EVALSHA", "-NOSCRIPT No matching script.\r\n");
    fk_add(&F[0], "EVAL", "-NOSCRIPT No matching script.\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS); /* falls back once only */
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK(why_has(rlock_node_error(&N[0]), "NOSCRIPT"));
    env_done();
}
#endif

static void test_auth(void) {
    static const char *const auth_errors[] = {
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
        "-NOAUTH HELLO must be called with the client already authenticated\r\n",
        "-ERR invalid password\r\n",
    };
    size_t i;
    for (i = 0; i < sizeof auth_errors / sizeof auth_errors[0]; i++) {
        fk_step *s;
        env_reset("AUTH refused");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        N[0].password = "s3cret";
        s = fk_add(&F[0], NULL, auth_errors[i]);
        fk_exact(s, "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n", 26);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_AUTH);
        /* AUTH alone: the command waited for its reply and was never sent
         * (pipelined, it would run as the default user where that has no
         * password: a lock held that nobody knows of); not retried */
        CHECK_EQ_LL(F[0].n_reqs, 1);
        CHECK_EQ_LL(g_n_sleeps, 0);
        CHECK_EQ_LL(F[0].close_calls, 1);
        CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_E_AUTH);
        CHECK(strstr(rlock_node_error(&N[0]), "s3cret") == NULL); /* never echo the secret */
        CHECK(rlock_node_error(&N[0])[0] != '\0');
        env_done();
    }

#if RLOCK__COMPACT
    {   /* AUTH, or SELECT behind it, that does not fit in RLOCK_TX_BUF: said
         * so, nothing sent (the compact engine encodes them itself) */
        static char pw[RLOCK_TX_BUF];
        memset(pw, 'p', sizeof pw - 1);
        env_reset("AUTH that does not fit");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        N[0].password = pw;
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
        CHECK(fk_sent_nothing(&F[0]));
        CHECK_MSG(why_is(rlock_node_error(&N[0]), "AUTH does not fit in RLOCK_TX_BUF"), "%s", rlock_node_error(&N[0]));
        env_done();
        env_reset("SELECT that does not fit behind AUTH");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        pw[sizeof pw - 32] = '\0'; /* AUTH takes all but 9 bytes; SELECT 5 needs 23 */
        N[0].password = pw;
        N[0].db = 5;
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
        CHECK(fk_sent_nothing(&F[0]));
        CHECK_MSG(why_is(rlock_node_error(&N[0]), "SELECT does not fit in RLOCK_TX_BUF"), "%s", rlock_node_error(&N[0]));
        env_done();
        {   /* without a connect hook: a connection never set up is not one
             * that was dropped - said so again, then set up once it fits */
            env_no_connect_hook("AUTH that does not fit, no connect hook");
            CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
            CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
            memset(pw, 'p', sizeof pw - 1);
            N[0].password = pw;
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
            CHECK_MSG(why_is(rlock_node_error(&N[0]), "AUTH does not fit in RLOCK_TX_BUF"), "%s", rlock_node_error(&N[0]));
            N[0].db = 5;
            pw[sizeof pw - 32] = '\0';
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
            CHECK_MSG(why_is(rlock_node_error(&N[0]), "SELECT does not fit in RLOCK_TX_BUF"), "%s", rlock_node_error(&N[0]));
            CHECK(fk_sent_nothing(&F[0]));
            N[0].password = "pw";
            fk_add(&F[0], "AUTH", "+OK\r\n");
            fk_add(&F[0], "SELECT", "+OK\r\n");
            fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
            CHECK_EQ_LL(F[0].n_reqs, 3);
            env_done();
        }
    }
#endif

    env_reset("NOAUTH without a password");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "EVALSHA", "-NOAUTH Authentication required.\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_AUTH);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    env_done();

    env_reset("NOPERM");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
#ifdef RLOCK_NO_FCALL /* no switch to FCALL: the refusal is the answer */
#define RLOCK_NO_FCALL_REQS 1
#else
#define RLOCK_NO_FCALL_REQS 3 /* EVALSHA, CLIENT SETNAME, FCALL */
#endif
    /* scripts refused: the same code as a function (FCALL), refused too */
    fk_add(&F[0], "EVALSHA", "-NOPERM this user has no permissions to run the 'evalsha' command\r\n");
#ifndef RLOCK_NO_FCALL
    fk_add(&F[0], "CLIENT", "+OK\r\n"); /* SETNAME rlock-VERSION before the first FCALL */
    fk_add(&F[0], "FCALL", "-NOPERM this user has no permissions to run the 'fcall' command\r\n");
#endif
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_AUTH);
    CHECK_EQ_LL(F[0].n_reqs, RLOCK_NO_FCALL_REQS);
    env_done();

    env_reset("NOPERM on a key is not a reason for FCALL");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "EVALSHA", "-NOPERM No permissions to access a key\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_AUTH);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    env_done();

    {
        fk_step *s;
        env_reset("AUTH on new connections only");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        N[0].username = "app";
        N[0].password = "pw";
        s = fk_add(&F[0], NULL, "+OK\r\n");
        fk_exact(s, "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n", 31);
        fk_add(&F[0], "EVALSHA", GRANT);
        fk_add(&F[0], "EVALSHA", ":1\r\n");
        s = fk_add(&F[0], NULL, "+OK\r\n");
        fk_exact(s, "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n", 31);
        fk_add(&F[0], "EVALSHA", GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        CHECK_EQ_LL(F[0].n_reqs, 3); /* the release did not AUTH again */
        CHECK(!req_has(&F[0], 2, "AUTH"));
        rlock_client_close(&C);
        CHECK_EQ_LL(F[0].close_calls, 1);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_EQ_LL(F[0].connect_calls, 2);
        CHECK(F[0].req_conn[3] == 2 && F[0].req_conn[4] == 2);
        CHECK_REQ(F[0], 4, 0, S_ACQ, "10000");
        env_done();
    }
    {   /* node.db > 0: SELECT behind AUTH on each new connection, before
         * the lock's request; refused (out of range): the request fails
         * with the server's text and the connection is not used */
        fk_step *s;
        env_reset("SELECT on new connections");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        N[0].password = "pw";
        N[0].db = 5;
        s = fk_add(&F[0], NULL, "+OK\r\n");
        fk_exact(s, "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", 22);
        s = fk_add(&F[0], NULL, "+OK\r\n");
        fk_exact(s, "*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n", 23);
        fk_add(&F[0], "EVALSHA", GRANT);
        fk_add(&F[0], "EVALSHA", ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        CHECK_EQ_LL(F[0].n_reqs, 4); /* the release did not SELECT again */
        CHECK(!req_has(&F[0], 3, "SELECT"));
        CHECK_EQ_LL(F[0].connect_calls, 1);
        env_done();
        /* an AUTH that leaves too little room for the request behind it:
         * the request goes once AUTH is answered */
        {
            static char pw[RLOCK_TX_BUF];
            memset(pw, 'p', sizeof pw - 1);
            pw[sizeof pw - 64] = '\0';
            env_reset("a request that does not fit behind AUTH");
            env_up(1, 1, RLOCK_KIND_SIMPLE);
            N[0].password = pw;
            fk_add(&F[0], "AUTH", "+OK\r\n");
            fk_add(&F[0], "EVALSHA", GRANT);
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
            CHECK_EQ_LL(F[0].n_reqs, 2);
            CHECK(req_has(&F[0], 0, "AUTH") && req_has(&F[0], 1, "EVALSHA"));
            CHECK_EQ_LL(F[0].connect_calls, 1);
            env_done();
        }
        env_reset("SELECT refused");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        N[0].db = 99;
        s = fk_add(&F[0], NULL, "-ERR DB index is out of range\r\n");
        fk_exact(s, "*2\r\n$6\r\nSELECT\r\n$2\r\n99\r\n", 24);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        CHECK(why_has(rlock_node_error(&N[0]), "DB index is out of range"));
        CHECK_EQ_LL(F[0].n_reqs, 1); /* the request waited for SELECT: never sent (it would run in db 0) */
        CHECK(F[0].close_calls >= 1);
        env_done();
    }
}

static void test_redis_error(void) {
    env_reset("OOM");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS);
    CHECK(why_has(rlock_node_error(&N[0]), "OOM command not allowed when used memory"));
    CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_E_REDIS);
    CHECK_EQ_LL(F[0].n_reqs, 1); /* an error reply means the script wrote nothing: no cleanup */
    CHECK_EQ_LL(F[0].close_calls, 0); /* a well-formed answer: the stream is in step */
    env_done();

    env_reset("READONLY, long message");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, "-READONLY You can't write against a read only replica. "
                        "0123456789012345678901234567890123456789012345678901234567890123456789"
                        "0123456789012345678901234567890123456789\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS);
    CHECK(strncmp(rlock_node_error(&N[0]), "READONLY You can't write", 24) == 0);
    CHECK(strlen(rlock_node_error(&N[0])) == RLOCK_ERR_LEN - 1); /* truncated, terminated */
    /* a demoted primary: its connection is dropped, the next request
     * connects again (a transport that finds the primary asks anew) */
    CHECK_EQ_LL(F[0].close_calls, 1);
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    CHECK_EQ_LL(F[0].req_conn[1], 2);
    env_done();
}

/* Well-formed replies of the wrong shape. RLOCK_E_PROTOCOL is documented as
 * "malformed or oversized reply; the connection was dropped", and an acquire
 * whose answer we cannot read may have landed, so a release follows. */
static void test_wrong_shape(void) {
    static const char *const shapes[] = {
        ":1\r\n", "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n", "*3\r\n:1\r\n:1\r\n+x\r\n", "*2\r\n:2\r\n:1\r\n", "*2\r\n$1\r\n1\r\n:1\r\n",
        "+OK\r\n", "$-1\r\n", "*1\r\n:1\r\n", "*2\r\n*0\r\n:1\r\n",
        ":2\r\n", ":3\r\n", ":0\r\n", "*0\r\n", "*-1\r\n", /* (integers and counts the compact reader gives as v[0]) */
    };
    size_t i;
    for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        env_reset("wrong reply shape to acquire");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(S_ACQ), shapes[i]);
        fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
        CHECK_EQ_LL(F[0].n_reqs, 2);
        CHECK_MSG(F[0].close_calls == 1 && F[0].connect_calls == 2,
                  "shape %lu: E_PROTOCOL must drop the connection (closes %ld, connects %ld)",
                  (unsigned long)i, F[0].close_calls, F[0].connect_calls);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
#if !RLOCK__COMPACT /* the general engine's cleanup keeps the acquire's diagnostic */
        CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to acquire"));
#endif
        env_done();
    }

    env_reset("wrong reply shape to release");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_PROTOCOL);
    CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to release"));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD); /* unknown: may be retried */
    CHECK_MSG(F[0].close_calls == 1, "E_PROTOCOL must drop the connection (closes %ld)", F[0].close_calls);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
}

/* An integer no script answers (rlock__answer_fits; the compact engine's
 * rlock__c_answer): an extend's or a release's is 1 or 0 (a counting
 * release's holds left or -1, a force-unlock's 1, 0 or -1). Another one is
 * a reply of the wrong shape - RLOCK_E_PROTOCOL, the connection dropped, the
 * lock kept as held (its outcome unknown) - not the "not ours" it was read
 * as before: LOST (extend) or released-and-lost (release), a hold the
 * server may still keep forgotten. */
static void test_out_of_range_integer(void) {
    /* (18 digits at most: the compact reader's longest number) */
    static const char *const bad[] = { ":2\r\n", ":-1\r\n", ":99\r\n", ":-2\r\n", ":2147483648\r\n",
                                       ":-999999999999999999\r\n" };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long long validity;
        env_reset("out-of-range integer to extend");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(S_EXT), bad[i]);
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        validity = rlock_validity_ms(&LK);
        CHECK_MSG(rlock_extend(&LK, 20000) == RLOCK_E_PROTOCOL, "extend answered %.*s", (int)strlen(bad[i]) - 2, bad[i]);
        CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to extend"));
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD); /* not LOST: the key may still be ours */
        CHECK_EQ_LL(rlock_validity_ms(&LK), validity);        /* nor extended */
        CHECK_MSG(F[0].close_calls == 1, "E_PROTOCOL must drop the connection (closes %ld)", F[0].close_calls);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK); /* nothing left behind */
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        env_done();

        env_reset("out-of-range integer to release");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(S_REL), bad[i]);
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_MSG(rlock_release(&LK) == RLOCK_E_PROTOCOL, "release answered %.*s", (int)strlen(bad[i]) - 2, bad[i]);
        CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to release"));
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD); /* not IDLE: unknown, may be retried */
        CHECK_MSG(F[0].close_calls == 1, "E_PROTOCOL must drop the connection (closes %ld)", F[0].close_calls);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        env_done();
    }

#if !RLOCK__COMPACT && !defined(RLOCK_NO_REENTRANT)
    /* a counting release: holds left (any >= 0) or -1; below -1 is no answer */
    env_reset("out-of-range integer to a reentrant release");
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], rlock_script_sha(S_RACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REXT), ":2\r\n");
    fk_add(&F[0], rlock_script_sha(S_RREL), ":-2\r\n");
    fk_add(&F[0], rlock_script_sha(S_RREL), ":5\r\n"); /* any count is one */
    fk_add(&F[0], rlock_script_sha(S_RREL), ":-1\r\n"); /* -1: not ours */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_E_PROTOCOL);
    CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to extend"));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_PROTOCOL);
    CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to release"));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_LL(rlock_hold_count(&LK), 1);
    CHECK_EQ_LL(F[0].close_calls, 2);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 5);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#endif

#if !RLOCK__COMPACT && !defined(RLOCK_NO_PRIMITIVES)
    /* force-unlock: 1 deleted, 0 absent, -1 no TTL; another is no answer
     * (it was read as "absent": RLOCK_NOT_HELD, though the key may be gone) */
    for (i = 0; i < 2; i++) {
        env_reset("out-of-range integer to force-unlock");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(RLOCK__S_FORCE), i ? ":-2\r\n" : ":2\r\n");
        fk_add(&F[0], rlock_script_sha(RLOCK__S_FORCE), ":-1\r\n");
        CHECK_EQ_ST(rlock_force_unlock(&LK), RLOCK_E_PROTOCOL);
        CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to force-unlock"));
        CHECK_EQ_LL(F[0].close_calls, 1);
        CHECK_EQ_ST(rlock_force_unlock(&LK), RLOCK_E_FOREIGN);
        env_done();
    }
#endif

#if RLOCK_MAX_NODES >= 3
    /* Redlock: the node that answered out of range is unknown, not a "not
     * ours" - one "not ours" of three is no quorum lost: E_QUORUM, still
     * held (before: two "not ours", LOST); the rest of the round is read */
    for (i = 0; i < 2; i++) {
        size_t k;
        env_reset(i ? "3 nodes: out-of-range integer to release" : "3 nodes: out-of-range integer to extend");
        env_up(3, 1, RLOCK_KIND_SIMPLE);
        for (k = 0; k < 3; k++) fk_add(&F[k], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(i ? S_REL : S_EXT), ":1\r\n");
        fk_add(&F[1], rlock_script_sha(i ? S_REL : S_EXT), i ? ":-1\r\n" : ":2\r\n");
        fk_add(&F[2], rlock_script_sha(i ? S_REL : S_EXT), ":0\r\n");
        for (k = 0; k < 3; k++) fk_add(&F[k], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_EQ_ST(i ? rlock_release(&LK) : rlock_extend(&LK, TTL), RLOCK_E_QUORUM);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
        CHECK_EQ_ST(rlock_node_status(&N[1]), RLOCK_E_PROTOCOL);
        CHECK(why_is(rlock_node_error(&N[1]), i ? "unexpected reply to release" : "unexpected reply to extend"));
        CHECK(F[0].close_calls == 0 && F[1].close_calls == 1 && F[2].close_calls == 0);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        env_done();
    }
#endif
}

/* A SUBSCRIBE confirmed for another channel (the general engine's waits,
 * RESP2 on a subscriber connection, RESP3 by a push on the command
 * connection): the stream is out of step, so the connection is dropped as
 * for any malformed reply, the wait does not take it as subscribed (it
 * backs off and retries: granted), and nothing stays subscribed. Before,
 * the confirmation was taken whatever channel it named. */
#if !RLOCK__COMPACT && !defined(RLOCK_NO_WAITING) && !defined(RLOCK_NO_CLUSTER)
/* A cluster whose node i is fake F[i]. */
static int sw_cl_connect(void *user, size_t i, const char *host, int port, rlock_transport *out) {
    (void)user; (void)host; (void)port;
    *out = fk_transport(&F[i], 1);
    return 0;
}
#endif

static void test_subscribe_wrong_channel(void) {
#if !RLOCK__COMPACT && !defined(RLOCK_NO_WAITING)
    static const char *const other[2] = { "*3\r\n$9\r\nsubscribe\r\n$16\r\n{res:2}:released\r\n:1\r\n",
                                          ">3\r\n$9\r\nsubscribe\r\n$16\r\n{res:2}:released\r\n:1\r\n" };
    static rlock_subscriber sub;
    rlock_status st;
    int resp3, k;
    for (resp3 = 0; resp3 < 2; resp3++) {
        fake *fs = resp3 ? &F[0] : &F[1]; /* where the SUBSCRIBE goes */
        rlock_transport t = fk_transport(&F[1], 1);
        env_reset(resp3 ? "RESP3 SUBSCRIBE confirmed for another channel" : "SUBSCRIBE confirmed for another channel");
        CFG.pubsub = resp3;
        env_nodes(1, 1);
        CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
        if (!resp3) {
            CHECK_EQ_ST(rlock_subscriber_init(&sub, &t), RLOCK_OK);
            CHECK_EQ_ST(rlock_client_set_subscribers(&C, &sub, 1), RLOCK_OK);
        }
        CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
        if (resp3) fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
        fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:5000\r\n");
        fk_add(fs, "{res:1}:released", other[resp3]);
        if (resp3) fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n"); /* (connected again) */
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        st = rlock_acquire_begin(&LK, TTL, 10000);
        for (k = 0; st == RLOCK_WOULD_BLOCK && !fs->close_calls && k < 100; k++) st = rlock_step(&LK);
        CHECK(req_has(fs, resp3 ? 2 : 0, "SUBSCRIBE"));
        CHECK_MSG(fs->close_calls == 1, "%s: the connection is dropped (closes %ld)", g_test, fs->close_calls);
        /* (no request of the node's failed with it: its reason is the connection's) */
        CHECK(why_is(resp3 ? N[0].x.xerr : rlock_subscriber_error(&sub), "unexpected reply to SUBSCRIBE"));
        CHECK_EQ_ST(drive(&LK, st), RLOCK_OK);
        CHECK_MSG(C.linger_mask == 0, "%s: still taken as subscribed (linger_mask %u)", g_test, C.linger_mask);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        g_n = 2;
        env_done();
        rlock_client_close(&C);
    }
    /* RESP3: a "subscribe" push out of turn (no SUBSCRIBE sent: it comes
     * before the acquire's reply) is a reply nobody asked for; before, it
     * was read as a confirmation for whichever waiter its channel named */
    env_reset("RESP3 subscribe push out of turn");
    CFG.pubsub = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), ">3\r\n$9\r\nsubscribe\r\n$16\r\n{res:1}:released\r\n:1\r\n" GRANT);
    fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n"); /* connected again */
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");           /* the unknown grant's cleanup */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);                /* the retry */
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    st = rlock_acquire_begin(&LK, TTL, 10000);
    for (k = 0; st == RLOCK_WOULD_BLOCK && !F[0].close_calls && k < 100; k++) st = rlock_step(&LK);
    CHECK_MSG(F[0].close_calls == 1, "%s: the connection is dropped (closes %ld)", g_test, F[0].close_calls);
    CHECK(why_is(rlock_node_error(&N[0]), "a reply nobody asked for"));
    CHECK_EQ_ST(drive(&LK, st), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    env_done();
#ifndef RLOCK_NO_CLUSTER
    {   /* A Redis Cluster primary's waiter SSUBSCRIBEs on its RESP3 command
         * connection: an "ssubscribe" push naming another shard channel is
         * dropped as the SUBSCRIBE's is */
        static rlock_cluster cl;
        static const char *const seeds[1] = { "seed" };
        static const int seed_ports[1] = { 7000 };
        long guard = 0;
        env_reset("RESP3 SSUBSCRIBE confirmed for another channel");
        CFG.pubsub = 1;
        CHECK_EQ_ST(rlock_cluster_init(&cl, seeds, seed_ports, 1, &CFG, sw_cl_connect, NULL), RLOCK_OK);
        g_n = 1;
        CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &LK, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
        fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
        fk_add(&F[0], "SHARDS", "*0\r\n"); /* no slot known: every key to the seed */
        fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:5000\r\n");
        fk_add(&F[0], "SSUBSCRIBE", ">3\r\n$10\r\nssubscribe\r\n$16\r\n{res:2}:released\r\n:1\r\n");
        fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n"); /* connected again */
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        st = rlock_cluster_acquire_begin(&cl, &LK, TTL, 10000);
        for (k = 0; st == RLOCK_WOULD_BLOCK && !F[0].close_calls && k < 100; k++) st = rlock_cluster_step(&cl, &LK);
        CHECK(req_has(&F[0], 3, "{res:1}:released"));
        CHECK_MSG(F[0].close_calls == 1, "%s: the connection is dropped (closes %ld)", g_test, F[0].close_calls);
        CHECK(why_is(cl.node[0].x.xerr, "unexpected reply to SUBSCRIBE"));
        while (st == RLOCK_WOULD_BLOCK && ++guard < 100000L) { /* (drive's loop, the cluster's calls) */
            uint32_t t = 0;
            (void)rlock_cluster_interest(&cl, NULL, 0, &t);
            if (!fk_ready(&F[0], RLOCK_WANT_READ)) g_now += t;
            st = rlock_cluster_step(&cl, &LK);
        }
        CHECK_EQ_ST(st, RLOCK_OK);
        CHECK_MSG(cl.client[0].linger_mask == 0, "%s: still taken as subscribed (linger_mask %u)", g_test,
                  cl.client[0].linger_mask);
        CHECK_EQ_ST(rlock_cluster_release(&cl, &LK), RLOCK_OK);
        env_done();
        rlock_cluster_close(&cl);
    }
#endif
#endif
}

static void test_extra_bytes(void) {
    env_reset("extra bytes after the reply");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT "+EXTRA\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2); /* the release went on a new connection */
    CHECK_EQ_LL(F[0].req_conn[1], 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    env_reset("malformed reply");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:1\r\n$-2\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    env_done();

    env_reset("oversized reply");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "$100000\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
    env_done();

    /* Numbers: 18 digits are read by every engine; the compact engine
     * without fencing reads no more (malformed: no simple lock is answered
     * with such a number), the others any 64-bit one. A sign alone is not a
     * number. */
    env_reset("a number of 18 digits");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-123456789012345678\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].close_calls, 0);
    env_done();
    env_reset("a number of 19 digits");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:1234567890123456789\r\n");
#if RLOCK__COMPACT && !RLOCK__HAS_FENCING
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
#else
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].close_calls, 0);
#endif
    env_done();
    env_reset("a sign alone");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
    env_done();
}

/* FAULTS.md row 20 through the lock machine, not only the codec: each
 * malformed reply of bad_replies as the answer to an acquire (the compact
 * engine has a reader of its own, rlock__c_parse). It is a protocol error
 * at once - not a wait for bytes that a declared length or count promises
 * (the reply has all there is: the next read would block) -, the
 * connection is dropped, and the attempt's outcome being unknown, its
 * release goes out on a new connection: nothing else is sent, nothing is
 * left held. */
static void test_bad_replies_to_acquire(void) {
    size_t i;
    for (i = 0; i < sizeof bad_replies / sizeof bad_replies[0]; i++) {
        const pcase *c = &bad_replies[i];
        fk_step *s;
        rlock_status st;
        env_reset("malformed reply to acquire");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        s = fk_add(&F[0], rlock_script_sha(S_ACQ), NULL);
        memcpy(s->reply, c->s, c->n); /* (may hold a NUL) */
        s->reply_len = c->n;
        fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
        st = rlock_acquire(&LK, TTL, 0);
        CHECK_MSG(st == RLOCK_E_PROTOCOL, "reply %lu (%.*s): %s, want a protocol error", (unsigned long)i,
                  (int)c->n, c->s, rlock_status_str(st));
        CHECK_MSG(F[0].n_reqs == 2 && F[0].req_conn[1] == 2 && F[0].close_calls == 1,
                  "reply %lu: %d requests (the release on connection %d), %ld closes", (unsigned long)i,
                  F[0].n_reqs, F[0].n_reqs > 1 ? F[0].req_conn[1] : 0, F[0].close_calls);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        env_done();
    }
}

/* The same conversation under every transport behaviour gives the same
 * answers and the same request bytes. */
static unsigned char g_ref[3][8][FK_REQ];
static size_t g_ref_len[3][8];

/* AUTH, EVALSHA (+ EVAL after NOSCRIPT, when the build can), extend, release */
#ifdef RLOCK_NO_EVAL_FALLBACK
#define CHAOS_REQS 4
#else
#define CHAOS_REQS 5
#endif
static void chaos_one(size_t n, size_t chunk, int alt, int with_wait, int nonblock, size_t split, int record) {
    size_t i;
    int k;
    env_reset("chaos");
    env_up(n, with_wait, RLOCK_KIND_SIMPLE);
    for (i = 0; i < n; i++) {
        N[i].password = "pw";
        F[i].max_chunk = chunk;
        F[i].block_alt = alt;
        F[i].split_at = split;
        F[i].connect_block = alt ? 2 : 0;
        fk_add(&F[i], "AUTH", "+OK\r\n");
#ifndef RLOCK_NO_EVAL_FALLBACK
        fk_add(&F[i], "EVALSHA", "-NOSCRIPT No matching script. Please use EVAL.\r\n");
        fk_add(&F[i], "EVAL", GRANT);
#else
        fk_add(&F[i], "EVALSHA", GRANT);
#endif
        fk_add(&F[i], rlock_script_sha(S_EXT), ":1\r\n");
        fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
    }
    if (nonblock) {
        CHECK_EQ_ST(drive(&LK, rlock_acquire_begin(&LK, TTL, 0)), RLOCK_OK);
    } else {
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    }
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_LL(rlock_last_votes(&LK), n);
    g_now += 100;
    if (nonblock) {
        CHECK_EQ_ST(drive(&LK, rlock_extend_begin(&LK, 20000)), RLOCK_OK);
    } else {
        CHECK_EQ_ST(rlock_extend(&LK, 20000), RLOCK_OK);
    }
    CHECK_EQ_LL(rlock_validity_ms(&LK), 20000 - 202);
    if (nonblock) {
        CHECK_EQ_ST(drive(&LK, rlock_release_begin(&LK)), RLOCK_OK);
    } else {
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    }
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    for (i = 0; i < n; i++) {
        CHECK_MSG(F[i].n_reqs == CHAOS_REQS && F[i].connect_calls == (alt ? 3 : 1) && F[i].close_calls == 0,
                  "chunk %lu alt %d wait %d nb %d split %lu: node %lu reqs %d connects %ld closes %ld",
                  (unsigned long)chunk, alt, with_wait, nonblock, (unsigned long)split, (unsigned long)i,
                  F[i].n_reqs, F[i].connect_calls, F[i].close_calls);
        for (k = 0; k < CHAOS_REQS && k < F[i].n_reqs; k++) {
            if (record) {
                memcpy(g_ref[i][k], F[i].req[k], F[i].req_len[k]);
                g_ref_len[i][k] = F[i].req_len[k];
            } else {
                CHECK_MSG(req_eq(&F[i], k, g_ref[i][k], g_ref_len[i][k]), "chunk %lu alt %d: request %d",
                          (unsigned long)chunk, alt, k);
            }
        }
    }
    if (record) {
        CHECK_REQ(F[0], 1, 0, S_ACQ, "10000");
#ifndef RLOCK_NO_EVAL_FALLBACK
        CHECK_REQ(F[0], 2, 1, S_ACQ, "10000");
#endif
        CHECK_REQ(F[0], CHAOS_REQS - 2, 0, S_EXT, "20000");
        CHECK_REQ(F[0], CHAOS_REQS - 1, 0, S_REL, "20000");
    }
    env_done();
}

static void test_chunking(void) {
    static const size_t chunks[] = { 0, 1, 2, 3, 5, 7, 13 };
    size_t c, n, split;
    int alt, w, nb;
    for (n = 1; n <= 3 && n <= RLOCK_MAX_NODES; n += 2) {
        chaos_one(n, 0, 0, 1, 0, 0, 1);
        for (c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
            for (alt = 0; alt <= 1; alt++)
                for (w = 0; w <= 1; w++)
                    for (nb = 0; nb <= 1; nb++) chaos_one(n, chunks[c], alt, w, nb, 0, 0);
        /* every split point of the replies: k bytes, would-block, the rest */
        for (split = 1; split < sizeof GRANT - 1; split++) chaos_one(n, 0, 0, 1, 0, split, 0);
    }
}

static void test_io_errors(void) {
    long codes[2];
    int ci;
    fk_step *s;
    codes[0] = RLOCK_IO_CLOSED;
    codes[1] = RLOCK_IO_ERROR;
    for (ci = 0; ci < 2; ci++) {
        env_reset("closed/error mid-reply (acquire)");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        s->cut = 5;
        s->cut_code = codes[ci];
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n"); /* the SET may have landed */
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
        CHECK_EQ_LL(F[0].close_calls, 1);
        CHECK_EQ_LL(F[0].connect_calls, 2);
        CHECK_EQ_LL(F[0].req_conn[1], 2);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        /* (the node's error text is the cleanup release's by now: see the release case) */
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK); /* the new connection is fine */
        CHECK_EQ_LL(F[0].connect_calls, 2);
        env_done();

        env_reset("closed/error mid-reply (release)");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], NULL, GRANT);
        s = fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        s->cut = 1;
        s->cut_code = codes[ci];
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_IO);
        CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_E_IO);
        CHECK(why_has(rlock_node_error(&N[0]), codes[ci] == RLOCK_IO_CLOSED ? "closed" : "recv"));
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD); /* unknown: still ours to release */
        CHECK_EQ_LL(F[0].close_calls, 1);
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK); /* the next op reconnects */
        CHECK_EQ_LL(F[0].connect_calls, 2);
        CHECK_EQ_LL(F[0].req_conn[2], 2);
        env_done();
    }

    env_reset("closed before any reply byte");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], NULL, GRANT);
    s->cut = 0;
    s->cut_code = RLOCK_IO_CLOSED;
    fk_add(&F[0], NULL, ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    env_done();

    /* The server closed an idle connection (CLIENT KILL, idle timeout).
     * Before a request goes on an idle connection rlock probes it through
     * recv() (the transport contract): EOF there means reconnect first, so
     * the op succeeds on a new connection - also without a wait hook. */
    env_reset("server closed between operations (no wait hook)");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    F[0].peer_closed = 1;
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK(F[0].n_reqs == 2 && F[0].req_conn[1] == 2);
    env_done();
    {
        rlock_status st;
        int calls = 1;
        env_reset("server closed between operations (wait hook)");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], NULL, GRANT);
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        F[0].peer_closed = 1;
        st = rlock_release(&LK);
        if (st == RLOCK_E_IO) { st = rlock_release(&LK); calls++; }
        CHECK_EQ_ST(st, RLOCK_OK);
        CHECK(F[0].close_calls == 1 && F[0].connect_calls == 2);
        CHECK_EQ_LL(F[0].req_conn[F[0].n_reqs - 1], 2);
        CHECK(calls <= 2);
        env_done();
    }

    env_reset("send fails");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].send_fail_at = 1;
    F[0].send_fail_code = RLOCK_IO_ERROR;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    env_done();

    env_reset("connect fails");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].connect_fail = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK(F[0].bytes_sent == 0 && F[0].send_calls == 0);
    CHECK(F[0].connect_calls >= 1);
    CHECK(why_has(rlock_node_error(&N[0]), "connect"));
    F[0].connect_fail = 0;
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    env_done();

    env_reset("connect would-block, then connects");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    F[0].connect_block = 3;
    fk_add(&F[0], NULL, GRANT);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_node_wants(&N[0]), RLOCK_WANT_WRITE);
    CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_OK);
    CHECK_EQ_LL(F[0].connect_calls, 4);
    env_done();

    env_reset("connect never completes");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].connect_hang = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK(F[0].bytes_sent == 0);
    CHECK(g_now - T0 >= NODE_TMO);
    CHECK(F[0].close_calls >= 1); /* the half-open socket is given back */
    env_done();

    env_reset("recv returns more than asked");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].over_recv = 1;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls >= 1, 1);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    F[0].over_recv = 0;
    env_done();

    env_reset("send returns more than asked");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].over_send = 1;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK(F[0].close_calls >= 1);
    CHECK(why_has(rlock_node_error(&N[0]), "more than asked"));
    env_done();

    env_reset("recv error at call k");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    F[0].max_chunk = 1;
    F[0].recv_fail_at = 9;
    F[0].recv_fail_code = RLOCK_IO_ERROR;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].req_conn[1], 2);
    env_done();
}

/* The documented cost of a transport with wait() but no wait_many: while
 * n > 1 connections are pending, each ms costs at most n + 1 wait() calls
 * (n probes, one 1 ms wait); one pending connection, one call for the whole
 * timeout. Redlock-3, two nodes late (their replies come only after the
 * node timeout): the round ends at the timeout, no sooner, no later. */
static void test_wait_only_cost(void) {
    fk_step *s;
#if RLOCK_MAX_NODES >= 3
    long calls;
    size_t i;
    env_reset("wait() without wait_many: what it costs");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n"); /* no quorum: the cleanup release */
    for (i = 1; i < 3; i++) {
        s = fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        s->hang = 1; /* late: dropped by the timeout */
        fk_add(&F[i], rlock_script_sha(S_REL), ":0\r\n");
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_QUORUM);
    CHECK_EQ_LL(g_now - T0, NODE_TMO); /* the round waited out the timeout; the cleanup took no time */
    calls = F[0].wait_calls + F[1].wait_calls + F[2].wait_calls;
    printf("wait() only, Redlock-3, 2 nodes late for %llu ms: %ld wait() calls\n", (unsigned long long)NODE_TMO, calls);
    CHECK_MSG(calls <= 3 * ((long)NODE_TMO + 2), "%ld wait() calls over %llu ms, more than 3 per ms", calls,
              (unsigned long long)NODE_TMO);
    env_done();
#endif
    env_reset("wait() without wait_many: one connection, one call");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    CHECK_EQ_LL(g_now - T0, NODE_TMO);
    CHECK_MSG(F[0].wait_calls <= 3, "%ld wait() calls for one late reply", F[0].wait_calls);
    env_done();
}

/* A transport with fd, events and wait_many and no wait(): the blocking
 * calls wait through wait_many, with each connection's descriptor and the
 * events the transport's events hook turned rlock's wants into. The compact
 * engine (one connection) waits with wait() alone: given both, it never
 * calls wait_many nor events (its wait() turns the wants into events). */
static long g_wm_calls, g_wm_bad, g_ev_calls;
static int fk_events(void *ctx, int want) {
    (void)ctx;
    g_ev_calls++;
    return want | RLOCK_WANT_READ; /* (a TLS-like transport reads while rlock writes) */
}
static int fk_wait_many(const rlock_interest *it, size_t n, uint32_t timeout_ms) {
    size_t i, k;
    int ready = 0;
    g_wm_calls++;
    for (i = 0; i < n; i++) {
        for (k = 0; k < g_n && it[i].conn != (const void *)&N[k]; k++) {
        }
        if (k == g_n || it[i].fd != fk_fd(&F[k]) || !(it[i].events & RLOCK_WANT_READ)) {
            g_wm_bad++;
            continue;
        }
        fk_guard(&F[k]);
        ready += fk_ready(&F[k], it[i].events);
    }
    if (!ready) g_now += timeout_ms;
    return ready;
}
static void test_wait_many(void) {
    rlock_transport t;
    fk_step *s;
    env_reset("wait_many: a late reply times out");
    t = fk_transport(&F[0], RLOCK__COMPACT);
    t.events = fk_events;
    t.wait_many = fk_wait_many;
    CHECK_EQ_ST(rlock_node_init(&N[0], &t), RLOCK_OK);
    g_n = 1;
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    g_wm_calls = g_wm_bad = g_ev_calls = 0;
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
#if RLOCK__COMPACT
    CHECK_EQ_LL(g_now - T0, NODE_TMO); /* waited out in wait(), not spun */
    CHECK(F[0].wait_calls >= 1 && F[0].wait_calls <= 3);
    CHECK_EQ_LL(g_wm_calls, 0);
    CHECK_EQ_LL(g_ev_calls, 0);
#else
    CHECK_EQ_LL(g_now - T0, NODE_TMO); /* waited out in wait_many, not spun */
    CHECK(g_wm_calls >= 1 && g_wm_calls <= 3);
    CHECK(g_ev_calls >= 1);
    CHECK_EQ_LL(g_wm_bad, 0);
    CHECK_EQ_LL(F[0].wait_calls, 0);
#endif
    env_done();
}

static void test_timeouts(void) {
    fk_step *s;
    size_t i;
    env_reset("node timeout, late reply (blocking)");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;                                        /* arrives only after we gave up */
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");   /* cleanup on a new connection */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_IO);
    /* the timeout text itself is checked in the release case (cleanup overwrote it here) */
    CHECK_EQ_LL(g_now - T0, NODE_TMO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    CHECK_EQ_LL(F[0].req_conn[1], 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    /* The retry after a cleanup whose attempt's answer never came carries a
     * new token: that attempt (or its cleanup) may still reach the server
     * late, after the retry's grant, and must not be able to delete it. */
    {
        env_reset("a retry after a timed-out attempt's cleanup: a new token");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        s->hang = 1;
        fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 10 * NODE_TMO), RLOCK_OK);
        CHECK_EQ_LL(F[0].n_reqs, 3);
        CHECK(req_has(&F[0], 2, rlock_lock_token(&LK)));
        CHECK(!req_has(&F[0], 0, rlock_lock_token(&LK)));  /* the timed-out attempt's token ... */
        CHECK(!req_has(&F[0], 1, rlock_lock_token(&LK)));  /* ... and its cleanup's are the old one */
        fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        env_done();
    }

#ifndef RLOCK_NO_REENTRANT
    /* The same for a reentrant lock at hold 0: its retry holds under a new
     * owner id (the cleanup is a decrement that deletes at 0); a re-entry's
     * retry keeps it. And a release that went unanswered burns the owner id:
     * the handle's later holds take random ones (the release may land late). */
    {
        char first[RLOCK_MAX_OWNER_LEN + 1];
        env_reset("reentrant: a retry after a timed-out attempt's cleanup, a late release: new owner ids");
        env_up(1, 1, RLOCK_KIND_REENTRANT);
        snprintf(first, sizeof first, "%s:", rlock_client_instance_id(&C));
        s = fk_add(&F[0], rlock_script_sha(S_RACQ), GRANT);
        s->hang = 1;
        fk_add(&F[0], rlock_script_sha(S_RREL), ":0\r\n");
        fk_add(&F[0], rlock_script_sha(S_RACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 10 * NODE_TMO), RLOCK_OK);
        CHECK_EQ_LL(F[0].n_reqs, 3);
        CHECK(req_has(&F[0], 0, first) && req_has(&F[0], 1, first)); /* the default owner id ... */
        CHECK(!req_has(&F[0], 2, first) && req_has(&F[0], 2, rlock_lock_token(&LK))); /* ... not the retry's */
        fk_add(&F[0], rlock_script_sha(S_RREL), ":0\r\n");
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        env_done();

        env_reset("reentrant: a release that went unanswered burns the owner id");
        env_up(1, 1, RLOCK_KIND_REENTRANT);
        fk_add(&F[0], rlock_script_sha(S_RACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        snprintf(first, sizeof first, "%s", rlock_lock_token(&LK));
        CHECK(strncmp(first, rlock_client_instance_id(&C), 16) == 0);
        fk_add(&F[0], rlock_script_sha(S_RACQ), "*2\r\n:1\r\n:2\r\n"); /* a re-entry keeps the owner */
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK(strcmp(rlock_lock_token(&LK), first) == 0);
        s = fk_add(&F[0], rlock_script_sha(S_RREL), ":1\r\n");
        s->hang = 1;
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_IO);
        fk_add(&F[0], rlock_script_sha(S_RREL), ":0\r\n");
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK); /* (the fake's count: 0 left) */
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
        fk_add(&F[0], rlock_script_sha(S_RACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK(strcmp(rlock_lock_token(&LK), first) != 0);
        CHECK_EQ_LL(strlen(rlock_lock_token(&LK)), RLOCK_TOKEN_LEN);
        fk_add(&F[0], rlock_script_sha(S_RREL), ":0\r\n");
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        env_done();
    }
#endif

    env_reset("node timeout (non-blocking, clock jump)");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_node_wants(&N[0]), RLOCK_WANT_READ);
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), NODE_TMO);
    g_now += NODE_TMO - 1;
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK); /* not yet */
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 1);
    CHECK_EQ_LL(F[0].close_calls, 0);
    g_now += 5000; /* the clock jumps far past the node timeout */
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    env_done();

    env_reset("release timeout, late reply never read");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    s = fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    s->hang = 1; /* a late ":0" would say LOST if it were read */
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_IO);
    CHECK(why_has(rlock_node_error(&N[0]), "timeout"));
    CHECK_EQ_LL(g_now - T0, NODE_TMO);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    CHECK_EQ_LL(F[0].req_conn[2], 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    /* Cancel while the attempt is unanswered: rlock waits for the answer
     * (here none: the node times out, so it may have granted) and releases
     * on the node - no partial grant is left behind. */
    env_reset("cancel: unanswered attempt is released");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_acquire_waiting(&LK), 0); /* an attempt is out */
    rlock_cancel(&LK);
    CHECK_EQ_LL(F[0].close_calls, 1);           /* timed out: the stream was dropped */
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK_REQ(F[0], 1, 0, S_REL, "10000");      /* the release of what may have been granted */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_STATE);
    CHECK_EQ_ST(drive(&LK, rlock_acquire_begin(&LK, TTL, 0)), RLOCK_OK);
    CHECK_EQ_LL(F[0].connect_calls, 2);
    env_done();

    /* Cancel (non-blocking) an attempt whose answer is a grant: released. */
#if RLOCK_MAX_NODES >= 3
    env_reset("cancel: a granted attempt is released");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) {
        fk_add(&F[i], rlock_script_sha(S_ACQ), i == 2 ? "*2\r\n:0\r\n:900\r\n" : GRANT);
        if (i < 2) fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
    }
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(drive(&LK, rlock_cancel_begin(&LK)), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK(F[0].n_reqs == 2 && F[1].n_reqs == 2 && F[2].n_reqs == 1); /* released where granted */
    CHECK(F[0].close_calls == 0 && F[1].close_calls == 0 && F[2].close_calls == 0);
    env_done();

    /* Cancel between rounds: nothing granted, nothing sent, ends at once. */
#endif
    env_reset("cancel: between rounds");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:5000\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 3000), RLOCK_WOULD_BLOCK);
    for (i = 0; i < 10 && !rlock_acquire_waiting(&LK); i++) CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_acquire_waiting(&LK), 1);
    CHECK_EQ_ST(rlock_cancel_begin(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_acquire_waiting(&LK), 0);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK_EQ_ST(rlock_cancel_begin(&LK), RLOCK_E_STATE); /* nothing in progress */
    CHECK_EQ_ST(rlock_cancel_begin(NULL), RLOCK_E_BADARG);
    env_done();

    /* Destroying a handle mid-acquire undoes it as rlock_cancel does (no
     * handle would be left to release a grant that lands): the answer is
     * awaited and the grant released; the other lock on the connection
     * gets its own answer, not the grant. */
    env_reset("destroy during an op");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
#if RLOCK__COMPACT
    /* One request in flight: LK's attempt is out (its grant half read: each
     * reply in two reads), LK2's waits its turn; destroy reads the grant
     * and releases it, then LK2's request goes out. */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[0], "res:2", "*2\r\n:0\r\n:900\r\n");
    F[0].split_at = 2;
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(F[0].n_reqs, 0); /* nothing sent before a step */
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    rlock_lock_destroy(&LK);
    CHECK_EQ_LL(F[0].n_reqs, 3); /* (LK2's went out as the release's answer was read) */
    CHECK(req_has(&F[0], 1, rlock_script_sha(S_REL))); /* the grant released */
    CHECK(req_has(&F[0], 2, "res:2"));
    {
        rlock_status st = rlock_step(&LK2);
        for (i = 0; i < 10 && st == RLOCK_WOULD_BLOCK; i++) st = rlock_step(&LK2);
        CHECK_EQ_ST(st, RLOCK_NOT_ACQUIRED); /* its own answer, not the grant */
    }
    CHECK_EQ_LL(F[0].close_calls, 0);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_BADARG);
    env_done();
    /* LK's attempt not sent yet (all its bytes in the TX buffer): destroy
     * takes it back - nothing of it ever goes out (before: it went out,
     * and its grant was released) - and LK2's request goes next. */
    env_reset("destroy during an op: its attempt unsent");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], "res:2", "*2\r\n:0\r\n:900\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK);
    rlock_lock_destroy(&LK);
    CHECK_EQ_LL(F[0].n_reqs, 0);
    CHECK_EQ_ST(rlock_step(&LK2), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK(req_has(&F[0], 0, "res:2"));
    CHECK_EQ_LL(rlock_node_commands(&N[0]), 1);
#else
    /* The answer withheld: the node times out (it may have granted), the
     * stream is dropped and the release goes out on a new connection. */
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    fk_add(&F[0], "res:2", "*2\r\n:0\r\n:900\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    rlock_lock_destroy(&LK);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK(req_has(&F[0], 1, rlock_script_sha(S_REL))); /* the release of what may have been granted */
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire(&LK2, TTL, 0), RLOCK_NOT_ACQUIRED); /* its own answer, not the late grant */
    CHECK_EQ_LL(F[0].close_calls, 1);
#endif
    env_done();
}

/* A request past its node timeout before it went out (the program did not
 * step meanwhile) fails alone, unsent: nothing of it reaches the server -
 * no cleanup release after it either - and the connection stays for the
 * requests behind it. An attempt's parts (CLIENT SETNAME before a
 * connection's first FCALL) go or stay together: all unsent, they fail
 * together (and the next FCALL names the connection, as none did); the
 * first part sent, the rest goes out too and the timeout drops the
 * connection, as for any request that went out. (The general engine's
 * exchange: the compact engine queues no request behind another.) */
static void test_unsent_timeout(void) {
#if !RLOCK__COMPACT
    env_reset("unsent past its timeout: fails alone");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], "res:1", GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK); /* (connected) */
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK); /* queued, not sent */
    g_now += NODE_TMO;
    fk_add(&F[0], "res:1", ":1\r\n");
    CHECK_EQ_ST(rlock_release_begin(&LK), RLOCK_WOULD_BLOCK); /* behind it, in time */
    CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_OK);
    CHECK_EQ_ST(rlock_result(&LK2), RLOCK_E_IO);
    CHECK_EQ_LL(rlock_lock_state(&LK2), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(F[0].n_reqs, 2); /* LK's acquire and release: nothing of LK2's, no cleanup */
    CHECK(F[0].close_calls == 0 && F[0].connect_calls == 1);
    env_done();

#ifndef RLOCK_NO_FCALL
    env_reset("unsent past its timeout: an attempt's parts fail together");
    CFG.scripts = RLOCK_SCRIPTS_FCALL;
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], "PING", "+PONG\r\n");
    CHECK_EQ_ST(rlock_client_connect(&C, 1000), RLOCK_OK); /* (up, not named yet) */
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK); /* CLIENT SETNAME + FCALL, queued */
    g_now += NODE_TMO;
    fk_add(&F[0], "res:2", GRANT);
    CHECK_EQ_ST(drive(&LK2, rlock_acquire_begin(&LK2, TTL, 0)), RLOCK_OK);
    CHECK_EQ_ST(rlock_result(&LK), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].n_reqs, 2); /* PING, then LK2's FCALL alone */
    CHECK(req_has(&F[0], 1, "FCALL") && !req_has(&F[0], 1, "CLIENT"));
    CHECK(F[0].close_calls == 0 && F[0].connect_calls == 1);
    fk_add(&F[0], "CLIENT", "+OK\r\n"); /* the connection was never named: the next FCALL does */
    fk_add(&F[0], "res:1", GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(F[0].n_reqs, 4);
    env_done();

    {
        fk_step *s;
        env_reset("past its timeout with its attempt's first part sent: goes out, drops");
        CFG.scripts = RLOCK_SCRIPTS_FCALL;
        env_up(1, 0, RLOCK_KIND_SIMPLE);
        F[0].limit_send = 1;
        F[0].send_room = 4 + 12 + 13 + 5 + 6 + RLOCK__FN_VER + 2; /* CLIENT SETNAME rlock-<12 hex digits> */
        fk_add(&F[0], "CLIENT", "+OK\r\n");
        s = fk_add(&F[0], "res:1", GRANT);
        s->hang = 1; /* (its answer late: the timeout is seen) */
        CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
        CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(F[0].n_reqs, 1); /* SETNAME went, the FCALL did not */
        g_now += NODE_TMO;
        F[0].limit_send = 0;
        fk_add(&F[0], "CLIENT", "+OK\r\n"); /* the cleanup, on a new connection (named first) */
        fk_add(&F[0], "res:1", ":0\r\n");
        CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_E_IO);
        CHECK(req_has(&F[0], 1, "FCALL")); /* not taken back: it went with its first part */
        CHECK_EQ_LL(F[0].close_calls, 1);
        env_done();
    }
#endif
#else
    /* The compact engine's one request in flight, past its node timeout
     * before any of it went out - the program did not step (how 0), or the
     * transport took none of its bytes (how 1) - then the transport takes
     * bytes again: it fails ("timeout"; the connection dropped, it held
     * nothing else) and none of it is sent, so no grant can land that the
     * caller was told failed; its cleanup release goes on a new connection. */
    int how;
    for (how = 0; how < 2; how++) {
        env_reset(how ? "compact: its bytes refused past its timeout: never sent" : "compact: unsent past its timeout: never sent");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], "res:1", GRANT);
        fk_add(&F[0], "res:1", ":1\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK); /* (connected) */
        CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
        F[0].limit_send = how;
        F[0].send_room = 0;
        CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
        if (how) CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK); /* (send took nothing) */
        CHECK_EQ_LL(F[0].n_reqs, 2);
        g_now += NODE_TMO;
        F[0].limit_send = 0;
        fk_add(&F[0], "res:1", ":0\r\n"); /* the cleanup release */
        CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_E_IO);
        CHECK_MSG(why_is(rlock_node_error(&N[0]), "timeout"), "node error: %s", rlock_node_error(&N[0]));
        CHECK_EQ_LL(F[0].n_reqs, 3); /* nothing of the acquire: the release alone, on a new connection */
        CHECK(req_has(&F[0], 2, rlock_script_sha(S_REL)));
        CHECK(F[0].req_conn[1] != F[0].req_conn[2]);
        CHECK(F[0].close_calls == 1 && F[0].connect_calls == 2);
        env_done();
    }
#endif
}

#if RLOCK__COMPACT
/* The compact engine (rlock.h 6.8c) pipelines nothing: two locks begun at
 * once take turns on the connection. The second request goes out only once
 * the first one's reply is read, and each reply goes to its own lock. */
static void test_compact_turns(void) {
    rlock_status a = RLOCK_WOULD_BLOCK, b = RLOCK_WOULD_BLOCK;
    long guard = 0;
    env_reset("compact: one request in flight");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    F[0].split_at = 2; /* each reply in two reads: the step in between is seen */
    fk_add(&F[0], "res:1", GRANT);
    fk_add(&F[0], "res:2", "*2\r\n:0\r\n:5000\r\n"); /* held elsewhere */
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(RLOCK_MAX_PIPELINE, 1);
    CHECK_EQ_LL(rlock_node_wants(&N[0]), RLOCK_WANT_WRITE);
    CHECK_EQ_ST(rlock_step(&LK2), RLOCK_WOULD_BLOCK); /* LK's request out, half its reply read */
    CHECK_EQ_LL(F[0].n_reqs, 1);                       /* LK2's waits for its turn */
    CHECK(req_has(&F[0], 0, "res:1"));
    CHECK_EQ_LL(rlock_node_wants(&N[0]), RLOCK_WANT_READ);
    CHECK_EQ_ST(rlock_result(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_result(&LK2), RLOCK_WOULD_BLOCK);
    while ((a == RLOCK_WOULD_BLOCK || b == RLOCK_WOULD_BLOCK) && ++guard < 1000) {
        if (a == RLOCK_WOULD_BLOCK) a = rlock_step(&LK);
        if (b == RLOCK_WOULD_BLOCK) b = rlock_step(&LK2);
        if (a == RLOCK_WOULD_BLOCK) CHECK_EQ_LL(F[0].n_reqs, 1); /* not before LK's answer */
    }
    CHECK_EQ_ST(a, RLOCK_OK);
    CHECK_EQ_ST(b, RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK(req_has(&F[0], 1, "res:2"));
    CHECK_EQ_LL(F[0].req_conn[0], F[0].req_conn[1]);
    CHECK_EQ_LL(F[0].close_calls, 0);
    CHECK_EQ_LL(rlock_node_wants(&N[0]), 0);
    env_done();

    /* Waiting for its turn is not part of a request's node timeout (250 ms
     * at this ttl): LK2's goes out when LK's answer came, 200 ms after it
     * began, and times out 250 ms after that - not 50 ms after. */
    env_reset("compact: a turn's wait is not the request's timeout");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], "res:1", GRANT)->delay_ms = 200;
    fk_add(&F[0], "res:2", GRANT)->hang = 1; /* never answered */
    fk_add(&F[0], "res:2", ":1\r\n");        /* the cleanup release, on a new connection */
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_OK);
    CHECK_EQ_LL(g_now - T0, 200);
    CHECK_EQ_ST(drive(&LK2, RLOCK_WOULD_BLOCK), RLOCK_E_IO);
    CHECK_EQ_LL(g_now - T0, 200 + 250);
    CHECK_MSG(why_is(rlock_node_error(&N[0]), "timeout"), "node error: %s", rlock_node_error(&N[0]));
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK_EQ_LL(rlock_lock_state(&LK2), RLOCK_STATE_IDLE);
    env_done();
}
#endif

/* An exchange that ends inside one rlock_step (a transport that blocks in
 * send/recv) took real time: validity must count it, and a grant that came
 * back after the lease minus drift is no grant (Redlock spec, step 4). */
static void test_slow_exchange(void) {
    fk_step *s;
    env_reset("slow exchange inside one step");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->delay_ms = 300;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - 300 - DRIFT);
    env_done();

    env_reset("grant arrives after the validity");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->delay_ms = TTL - DRIFT + 50;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(F[0].n_reqs, 2); /* and what was granted is released */
    env_done();

    env_reset("extend answered after the validity");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s = fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    s->delay_ms = TTL;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
    env_done();
}

static void test_extend(void) {
    env_reset("extend");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_EXT), ":0\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    g_now += 4000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - 4000 - DRIFT);
    CHECK_EQ_ST(rlock_extend(&LK, 20000), RLOCK_OK);
    CHECK_REQ(F[0], 1, 0, S_EXT, "20000");
    CHECK_EQ_LL(rlock_validity_ms(&LK), 20000 - 202);
    g_now += 100;
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
    CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
    CHECK_EQ_LL(rlock_hold_count(&LK), 0);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST); /* nothing sent */
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST); /* still sent, reports its reply */
    CHECK_REQ(F[0], 3, 0, S_REL, "20000");
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_NOT_HELD);
    env_done();

    env_reset("release of a lost lock that was still ours");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":0\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    env_reset("extend after the validity ran out");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    g_now += TTL - DRIFT;
    CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    env_done();
}

#ifndef RLOCK_NO_REENTRANT
static void test_reentrant(void) {
    const char *tok;
    env_reset("reentrant");
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], rlock_script_sha(S_RACQ), "*2\r\n:1\r\n:1\r\n");
    fk_add(&F[0], rlock_script_sha(S_RACQ), "*2\r\n:1\r\n:2\r\n");
    fk_add(&F[0], rlock_script_sha(S_REXT), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_RREL), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_RREL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 1);
    tok = rlock_lock_token(&LK);
    CHECK_MSG(strlen(tok) > 17 && tok[16] == ':' && strlen(rlock_client_instance_id(&C)) == 16 &&
              strncmp(tok, rlock_client_instance_id(&C), 16) == 0, "owner %s", tok);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 2);
    CHECK_REQ(F[0], 0, 0, S_RACQ, "10000"); /* the same owner id, twice */
    CHECK_REQ(F[0], 1, 0, S_RACQ, "10000");
    /* each attempt names its grant's record by the handle's id (RLOCK__LUA_RECORD) */
    CHECK(req_has(&F[0], 0, LK.waiter_id) && req_has(&F[0], 1, LK.waiter_id));
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 2);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 1);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 0);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_NOT_HELD); /* over-release: nothing sent */
    CHECK_EQ_LL(F[0].n_reqs, 5);
    env_done();

    env_reset("reentrant release not ours");
    CFG.owner = "worker-7";
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], rlock_script_sha(S_RACQ), "*2\r\n:1\r\n:1\r\n");
    fk_add(&F[0], rlock_script_sha(S_RREL), ":-1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK(strcmp(rlock_lock_token(&LK), "worker-7") == 0);
    CHECK(req_has(&F[0], 0, "$8\r\nworker-7\r\n"));
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST);
    CHECK_EQ_LL(rlock_hold_count(&LK), 0);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    env_reset("simple release not ours");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
}
#endif

/* Release on Redlock judges "not ours" by whether that node granted us: from
 * a node that never did it is neutral, from one that did it means lost. */
#if RLOCK_MAX_NODES >= 3
static void test_release_held_mask(void) {
    const char *refuse = "*2\r\n:0\r\n:4000\r\n";
    fk_step *s;
#if RLOCK_MAX_NODES >= 3
    env_reset("release: granted on 0,1; node 0 unreachable, 1 deleted, 2 never held -> OK");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[2], rlock_script_sha(S_ACQ), refuse);
    s = fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    s->hang = 1;
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[2], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 1);
    CHECK(rlock_lock_state(&LK) == RLOCK_STATE_IDLE);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("release: granted on 0,1; node 0 now someone else's -> LOST");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[2], rlock_script_sha(S_ACQ), refuse);
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[2], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST);
    CHECK(rlock_lock_state(&LK) == RLOCK_STATE_IDLE);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("release: granted on 0,1; 0 and 2 unreachable, 1 deleted -> no quorum, still held");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[2], rlock_script_sha(S_ACQ), refuse);
    s = fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    s->hang = 1;
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    s = fk_add(&F[2], rlock_script_sha(S_REL), ":0\r\n");
    s->hang = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_QUORUM);
    CHECK(rlock_lock_state(&LK) == RLOCK_STATE_HELD);
    env_done();
#endif
}
#endif

#if RLOCK_MAX_NODES >= 3 /* rounds over 3 nodes */
/* The round layer's pure functions: answers kept as numbers, then tallied,
 * with no transport at all. */
/* The round asks what want_array says: 1 an acquire script's array, 2 a
 * plain SET's +OK / nil, 0 a release script's integer (its want). */
static void round_wants(rlock_round *r, int want_array) {
    r->want = want_array;
    r->script = want_array == 1 ? RLOCK__S_SIMPLE_ACQUIRE : RLOCK__S_SIMPLE_RELEASE;
}
/* (script: the round's, when it is not round_wants' for want_array; -1 that one) */
static rlock_status store_str_as(rlock_round *r, size_t i, const char *reply, int want_array, int script) {
    rlock_reply rep;
    long n = rlock_resp_parse((const unsigned char *)reply, strlen(reply), 1024, &rep);
    if (n <= 0) return RLOCK_E_PROTOCOL;
    round_wants(r, want_array);
    if (script >= 0) r->script = script;
    /* (a reply comes with its error scan; the status kept is below an error's flag words) */
    return (rlock_status)(rlock__round_store(r, i, (rlock_status)(rep.v.type == RLOCK_RESP_ERROR ?
                                                    rlock__error_scan(rep.v.str, rep.v.len) : 0), &rep) & 31);
}
static rlock_status store_str(rlock_round *r, size_t i, const char *reply, int want_array) {
    return store_str_as(r, i, reply, want_array, -1);
}

static void test_round_tally(void) {
    rlock_round r;
    rlock__tally t;
    env_reset("round tally");
    memset(&r, 0, sizeof r);
    r.mask = 0x1f; /* five nodes */
    CHECK_EQ_ST(store_str(&r, 0, "*3\r\n:1\r\n:1\r\n:7\r\n", 1), RLOCK_OK);   /* granted, fence 7 */
    CHECK_EQ_ST(store_str(&r, 1, "*3\r\n:1\r\n:1\r\n:9\r\n", 1), RLOCK_OK);   /* granted, fence 9 */
    CHECK_EQ_ST(store_str(&r, 2, "*2\r\n:0\r\n:4000\r\n", 1), RLOCK_OK);       /* held, pttl 4000 */
    CHECK_EQ_ST(store_str(&r, 3, "*2\r\n:0\r\n:250\r\n", 1), RLOCK_OK);        /* held, pttl 250 */
    round_wants(&r, 1);
    CHECK_EQ_ST(rlock__round_store(&r, 4, RLOCK_E_IO, NULL), RLOCK_E_IO);          /* no answer */
    CHECK_EQ_LL(r.answered, 0x1f);
    rlock__tally_round(&r, &t);
    CHECK_EQ_LL(t.yes, 0x3);
    CHECK_EQ_LL(t.no, 0xc);
    CHECK_EQ_LL(t.unknown, 0x10);
    CHECK_EQ_LL(t.n_yes, 2);
    CHECK_EQ_LL(t.n_no, 2);
    CHECK_EQ_LL(rlock__tally_pttl(&t), 250);
    CHECK_EQ_LL(t.most, 9); /* the largest fence */
    CHECK_EQ_LL(t.holds, 1);
    CHECK_EQ_ST(t.fatal, RLOCK_OK);
    CHECK_EQ_ST(t.error, RLOCK_E_QUORUM);
    /* shapes that are not an answer; fatal statuses */
    CHECK_EQ_ST(store_str(&r, 0, ":1\r\n", 1), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str(&r, 1, "*2\r\n:2\r\n:1\r\n", 1), RLOCK_E_PROTOCOL);   /* flag not 0/1 */
    CHECK_EQ_ST(store_str(&r, 2, "*2\r\n:0\r\n:-1\r\n", 1), RLOCK_E_FOREIGN);   /* no TTL */
    CHECK_EQ_ST(store_str(&r, 3, "-WRONGTYPE x\r\n", 1), RLOCK_E_WRONGTYPE);
    CHECK_EQ_ST(store_str(&r, 4, "-NOPERM no\r\n", 1), RLOCK_E_AUTH);
    rlock__tally_round(&r, &t);
    CHECK_EQ_LL(t.n_yes + t.n_no, 0);
    CHECK_EQ_LL(t.unknown, 0x3); /* a reply of the wrong shape: treated as no answer */
    CHECK(t.fatal == RLOCK_E_FOREIGN || t.fatal == RLOCK_E_WRONGTYPE || t.fatal == RLOCK_E_AUTH);
    CHECK_EQ_ST(t.error, RLOCK_E_FOREIGN); /* the first node's (by index) that is not about sending here */
    CHECK_EQ_LL(rlock__tally_pttl(&t), -1);
    /* on one node of five (a minority; nodes 0 and 1 now answered in a wrong shape, no answer)
     * they are a failed vote: not fatal */
    CHECK_EQ_ST(store_str(&r, 3, "*2\r\n:0\r\n:100\r\n", 1), RLOCK_OK);
    CHECK_EQ_ST(store_str(&r, 4, "*3\r\n:1\r\n:1\r\n:0\r\n", 1), RLOCK_OK);
    rlock__tally_round(&r, &t);
    CHECK_EQ_ST(t.fatal, RLOCK_OK);
    CHECK_EQ_LL(t.n_fatal, 1); /* node 2's FOREIGN (nodes 0, 1: wrong shapes) */
    CHECK_EQ_ST(t.error, RLOCK_E_FOREIGN);
    CHECK_EQ_ST(store_str(&r, 0, "-WRONGTYPE x\r\n", 1), RLOCK_E_WRONGTYPE);
    CHECK_EQ_ST(store_str(&r, 1, "-NOAUTH x\r\n", 1), RLOCK_E_AUTH);
    rlock__tally_round(&r, &t);
    CHECK_EQ_LL(t.n_fatal, 3); /* three of five: no quorum is left */
    CHECK(t.fatal == RLOCK_E_FOREIGN || t.fatal == RLOCK_E_WRONGTYPE || t.fatal == RLOCK_E_AUTH);
#ifndef RLOCK_NO_REENTRANT
    /* a grant's holds are 1 or more: another count is no grant of ours */
    CHECK_EQ_ST(store_str_as(&r, 0, "*3\r\n:1\r\n:2\r\n:0\r\n", 1, RLOCK__S_REENTRANT_ACQUIRE), RLOCK_OK);
    CHECK_EQ_ST(store_str_as(&r, 0, "*3\r\n:1\r\n:0\r\n:0\r\n", 1, RLOCK__S_REENTRANT_ACQUIRE), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 0, "*3\r\n:1\r\n:-3\r\n:0\r\n", 1, RLOCK__S_REENTRANT_ACQUIRE), RLOCK_E_PROTOCOL);
#endif
    CHECK_EQ_ST(store_str(&r, 0, "*3\r\n:1\r\n:0\r\n:0\r\n", 1), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str(&r, 0, "*2\r\n:0\r\n:0\r\n", 1), RLOCK_OK); /* (a refusal's is its PTTL) */
#ifndef RLOCK_NO_PRIMITIVES
    CHECK_EQ_ST(store_str_as(&r, 0, "*3\r\n:1\r\n:0\r\n:0\r\n", 1, RLOCK__S_SEM_ACQUIRE), RLOCK_OK); /* slot 0 */
    CHECK_EQ_ST(store_str_as(&r, 0, "*3\r\n:1\r\n:-1\r\n:0\r\n", 1, RLOCK__S_SEM_ACQUIRE), RLOCK_OK); /* slot 0, handed */
#endif
    /* extend / release: integers */
    memset(&r, 0, sizeof r);
    r.mask = 0x7;
    CHECK_EQ_ST(store_str(&r, 0, ":1\r\n", 0), RLOCK_OK);
    CHECK_EQ_ST(store_str(&r, 1, ":0\r\n", 0), RLOCK_OK);
    CHECK_EQ_ST(store_str(&r, 2, "*2\r\n:1\r\n:1\r\n", 0), RLOCK_E_PROTOCOL);
    rlock__tally_round(&r, &t);
    CHECK(t.yes == 0x1 && t.no == 0x2 && t.unknown == 0x4 && t.n_yes == 1 && t.n_no == 1);
    /* an integer the script cannot answer: of the wrong shape (an
     * extend's or a release's is 1 or 0), never a "not ours" */
    CHECK_EQ_ST(store_str_as(&r, 1, ":-1\r\n", 0, RLOCK__S_FORCE), RLOCK_OK); /* (force-unlock: 1, 0, -1) */
    CHECK_EQ_ST(store_str(&r, 1, ":2\r\n", 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str(&r, 2, ":-1\r\n", 0), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 1, ":-1\r\n", 0, RLOCK__S_SIMPLE_EXTEND), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 1, ":2\r\n", 0, RLOCK__S_MULTI_RELEASE), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 1, ":-2\r\n", 0, RLOCK__S_REENTRANT_RELEASE), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 1, ":2\r\n", 0, RLOCK__S_FORCE), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(store_str_as(&r, 1, ":-2\r\n", 0, RLOCK__S_FORCE), RLOCK_E_PROTOCOL);
    rlock__tally_round(&r, &t);
    CHECK(t.yes == 0x1 && t.no == 0x0 && t.unknown == 0x6);
    /* reentrant release: holds left >= 0 is yes, -1 not ours (its script
     * says so: rlock__counts_holds) */
    CHECK_EQ_ST(store_str_as(&r, 1, ":2\r\n", 0, RLOCK__S_REENTRANT_RELEASE), RLOCK_OK);
    CHECK_EQ_ST(store_str_as(&r, 2, ":-1\r\n", 0, RLOCK__S_REENTRANT_RELEASE), RLOCK_OK);
    CHECK_EQ_ST(store_str_as(&r, 0, ":9223372036854775807\r\n", 0, RLOCK__S_READ_RELEASE), RLOCK_OK);
    CHECK_EQ_ST(store_str_as(&r, 0, ":1\r\n", 0, RLOCK__S_REENTRANT_RELEASE), RLOCK_OK);
    rlock__tally_round(&r, &t);
    CHECK(t.yes == 0x3 && t.no == 0x4 && t.most == 2); /* the most holds left */
    r.mask = 0x1; /* one node */
    rlock__tally_round(&r, &t);
    CHECK_EQ_ST(t.error, RLOCK_E_PROTOCOL); /* one node that answered OK: wrong shape */
    r.st[0] = RLOCK_E_IO;
    rlock__tally_round(&r, &t);
    CHECK_EQ_ST(t.error, RLOCK_E_IO); /* one node: its own status */
}
#endif

/* The event-loop API: which connection, which events, which descriptor,
 * until when; a reconnect shows as a new gen and descriptor. */
static void test_interest(void) {
    rlock_interest it[4];
    uint32_t to = 0;
    size_t n;
    unsigned long gen1;
    env_reset("interest");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    F[0].split_at = 1; /* each reply: 1 byte, then would-block once */
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_LL(rlock_client_interest(&C, it, 4, &to), 0);
    CHECK_EQ_LL(to, UINT32_MAX); /* nothing to do */
    CHECK_EQ_LL(rlock_client_interest(NULL, it, 4, &to), 0);
    CHECK_EQ_LL(rlock_client_interest(&C, NULL, 4, &to), 0);
    CHECK_EQ_ST(rlock_client_step(NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    n = rlock_client_interest(&C, it, 4, &to);
    CHECK(n == 1 && it[0].conn == (const void *)&N[0] && it[0].fd == -1 && it[0].events == RLOCK_WANT_WRITE && to == 0);
    CHECK_EQ_LL(rlock_client_interest(&C, NULL, 0, NULL), 1); /* count only */
    CHECK_EQ_ST(rlock_client_step(&C), RLOCK_OK);               /* connects, sends */
    n = rlock_client_interest(&C, it, 4, &to);
    CHECK(n == 1 && it[0].fd == 1001 && it[0].events == RLOCK_WANT_READ && to == NODE_TMO);
    gen1 = it[0].gen;
    CHECK_EQ_ST(rlock_client_step(&C), RLOCK_OK);               /* the rest of the reply */
    CHECK_EQ_LL(rlock_client_interest(&C, it, 4, &to), 0);
    CHECK_EQ_LL(to, 0);                                         /* done: collect it now */
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_OK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_E_STATE);
    /* the server closed the idle connection: the release reconnects */
    F[0].peer_closed = 1;
    CHECK_EQ_ST(rlock_release_begin(&LK), RLOCK_WOULD_BLOCK);
    n = rlock_client_interest(&C, it, 4, &to);
    CHECK(n == 1 && it[0].gen == gen1 + 1 && it[0].fd == -1 && to == 0);
    CHECK_EQ_ST(rlock_client_step(&C), RLOCK_OK);
    n = rlock_client_interest(&C, it, 4, &to);
    CHECK_MSG(n == 1 && it[0].gen == gen1 + 1 && it[0].fd == 1002, "n %lu fd %d", (unsigned long)n, n ? it[0].fd : -9);
    CHECK_EQ_ST(drive(&LK, RLOCK_WOULD_BLOCK), RLOCK_OK);
    env_done();
}

/* Collecting results is free of I/O: after one rlock_client_step finished
 * three pipelined acquires, rlock_result on each makes no transport call;
 * while an op runs, rlock_result says WOULD_BLOCK without I/O, where
 * rlock_step steps the whole client (tries the connection again). */
static void test_result_no_io(void) {
    static rlock_lock lk3;
    rlock_lock *lks[3];
    long io0, io1;
    int i;
    env_reset("result without I/O");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk3, &C, "res:3", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    lks[0] = &LK; lks[1] = &LK2; lks[2] = &lk3;
    for (i = 0; i < 3; i++) fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    for (i = 0; i < 3; i++) fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_acquire_begin(lks[i], TTL, 0), RLOCK_WOULD_BLOCK);
    io0 = F[0].send_calls + F[0].recv_calls + F[0].connect_calls;
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_result(lks[i]), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(F[0].send_calls + F[0].recv_calls + F[0].connect_calls, io0); /* running: no I/O either */
    CHECK_EQ_ST(rlock_client_step(&C), RLOCK_OK); /* connects, sends all three, reads the replies */
    io1 = F[0].send_calls + F[0].recv_calls + F[0].connect_calls;
    CHECK(io1 > io0);
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_result(lks[i]), RLOCK_OK);
    CHECK_EQ_LL(F[0].send_calls + F[0].recv_calls + F[0].connect_calls, io1);
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_result(lks[i]), RLOCK_E_STATE); /* returned once */
    /* rlock_step on a running op drives the client (the documented way
     * without an event loop); on a finished one it only collects. */
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_release_begin(lks[i]), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_OK); /* one step finished all three */
    io1 = F[0].send_calls + F[0].recv_calls + F[0].connect_calls;
    CHECK_EQ_ST(rlock_step(&LK2), RLOCK_OK);
    CHECK_EQ_ST(rlock_step(&lk3), RLOCK_OK);
    CHECK_EQ_LL(F[0].send_calls + F[0].recv_calls + F[0].connect_calls, io1);
    CHECK_EQ_ST(rlock_result(NULL), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_result(&LK), RLOCK_E_STATE);
    env_done();
}

/* rlock_renew_poll says what it did: not due, renewed, failed (unknown
 * outcome, retried sooner), lost - read with rlock_renew_outcome. */
static void test_renew_outcome(void) {
    uint32_t next = 0;
    fk_step *s;
    env_reset("renew outcome");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    s = fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    s->hang = 1; /* no answer: timeout */
    fk_add(&F[0], rlock_script_sha(S_EXT), ":0\r\n"); /* not ours any more */
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_NONE);
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_NOT_HELD);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_NONE);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_OK);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_NOT_DUE);
    CHECK_EQ_LL(next, TTL / 3);
    g_now += TTL / 3;
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_OK); /* the answer comes at once */
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_RENEWED);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    g_now += TTL / 3;
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_IN_FLIGHT);
    g_now += NODE_TMO;
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_E_IO);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_FAILED);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    g_now += next;
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_LOST);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_LOST);
    CHECK_EQ_LL(rlock_renew_outcome(NULL), RLOCK_RENEW_NONE);
    env_done();
}

#define CHECK_STR(got, want) CHECK_MSG(why_is((got), (want)), "got \"%s\", want \"%s\"", (got), (want))

/* RLOCK_E_BADARG comes with a text naming the argument and the bound. */
#if RLOCK_MAX_NODES >= 2 /* two nodes, and the default limits in the texts */
static void test_badarg_texts(void) {
    static char key[301];
    rlock_config cfg;
    rlock_client c2;
    env_reset("bad argument texts");
    env_up(2, 1, RLOCK_KIND_SIMPLE);
    memset(key, 'k', sizeof key);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, key, 300, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK2), "key is 300 bytes, RLOCK_MAX_KEY_LEN is 256");
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, key, 0, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK2), "key is 0 bytes, RLOCK_MAX_KEY_LEN is 256");
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, key, 3, (rlock_kind)7), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK2), "kind 7 is not 1, 2, 4 or 5 (SIMPLE, REENTRANT, READ, WRITE)");
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, NULL, 3, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK2), "key is NULL");
    CHECK_STR(rlock_lock_error(&LK), "");
    CHECK_EQ_ST(rlock_acquire(&LK, 1, 0), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "ttl 1 ms is not above the drift allowance 2 ms");
    CHECK_EQ_ST(rlock_acquire(&LK, 0, 0), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "ttl 0 ms is not positive");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, -5, 0), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "ttl -5 ms is not positive");
    CHECK_EQ_ST(rlock_extend(&LK, RLOCK_MAX_TTL_MS + 1), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "ttl 2147483648 ms is above RLOCK_MAX_TTL_MS 2147483647");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, -1), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "wait -1 ms is negative");
    CHECK(strcmp(rlock_lock_error(NULL), "") != 0);
    /* a valid handle with a bad argument beside it: the text names it (it
     * said the last one's, "wait -1 ms is negative") */
    CHECK_EQ_ST(rlock_renew_poll(&LK, NULL), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "next_ms is NULL");
#ifdef RLOCK_WATCHDOG
    {
        static rlock_watchdog w;
        static rlock_node one;
        rlock_client own;
        rlock_transport t2 = fk_transport(&F[2], 1);
        CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &C), RLOCK_E_BADARG);
        CHECK_STR(rlock_lock_error(&LK), "own is lk's own client: the watchdog needs a client of its own");
        CHECK_EQ_ST(rlock_node_init(&one, &t2), RLOCK_OK);
        CHECK_EQ_ST(rlock_client_init(&own, &one, 1, &CFG), RLOCK_OK);
        CHECK_EQ_ST(rlock_watchdog_start(&w, &LK, &own), RLOCK_E_BADARG);
        CHECK_STR(rlock_lock_error(&LK), "own has 1 nodes, lk's client 2: give it the same servers");
    }
#endif
    CHECK_MSG(all_silent(2), "a bad argument reached a transport");
    /* client */
    rlock_config_init(&cfg);
    cfg.random_bytes = hk_random;
    cfg.drift_permille = 1000;
    CHECK_EQ_ST(rlock_client_init(&c2, N, 2, &cfg), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&c2), "drift_permille 1000 is not below 1000");
    CHECK_EQ_ST(rlock_client_init(&c2, N, 0, NULL), RLOCK_E_BADARG);
    {
        char want[64];
        snprintf(want, sizeof want, "n is 0, it must be 1..RLOCK_MAX_NODES (%d)", RLOCK_MAX_NODES);
        CHECK_STR(rlock_client_error(&c2), want);
    }
    CHECK_EQ_ST(rlock_client_init(&c2, NULL, 1, NULL), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&c2), "nodes is NULL");
    CHECK_EQ_ST(rlock_client_connect(&C, 0), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "timeout_ms is 0");
#ifndef RLOCK_NO_WAITING /* else test_compiled_out */
    {
        static rlock_subscriber s3[3];
        rlock_transport t1 = fk_transport(&F[1], 1);
        CHECK_EQ_ST(rlock_client_set_subscribers(&C, s3, 3), RLOCK_E_BADARG);
        CHECK_STR(rlock_client_error(&C), "n is 3, it must be 1..2 (the client's nodes)");
        CHECK_EQ_ST(rlock_client_set_subscribers(&C, s3, 1), RLOCK_E_BADARG);
        CHECK_STR(rlock_client_error(&C), "subs[0] is not initialised (rlock_subscriber_init)");
        CHECK_EQ_ST(rlock_subscriber_init(&s3[0], &t1), RLOCK_OK);
        CHECK_EQ_ST(rlock_client_set_subscribers(&C, s3, 1), RLOCK_E_BADARG);
        CHECK_STR(rlock_client_error(&C), "subs[0] is the command connection of nodes[1]");
    }
#endif
#ifndef RLOCK_NO_REENTRANT
    {
        static char owner[RLOCK_MAX_OWNER_LEN + 2];
        memset(owner, 'o', RLOCK_MAX_OWNER_LEN + 1);
        CFG.owner = owner;
        CHECK_EQ_ST(rlock_client_init(&c2, N, 2, &CFG), RLOCK_OK);
        CHECK_STR(rlock_client_error(&c2), "");
        CHECK_EQ_ST(rlock_lock_init(&LK2, &c2, "r", 1, RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire(&LK2, TTL, 0), RLOCK_E_BADARG);
        CHECK_STR(rlock_lock_error(&LK2), "owner is 65 bytes, it must be 1..RLOCK_MAX_OWNER_LEN (64)");
        CFG.owner = NULL;
    }
#endif
    CHECK_MSG(all_silent(2), "a bad argument reached a transport");
}
#endif

/* A key of exactly RLOCK_MAX_KEY_LEN bytes: its "{key}" prefix (2 more
 * bytes) still fits, so a fenced acquire sends the fence counter and the
 * wait-queue keys (it was one byte short: BADARG, and no queue keys). */
#ifndef RLOCK_NO_FENCING
static void test_max_key_fenced(void) {
    static char key[RLOCK_MAX_KEY_LEN];
    char fence[RLOCK_MAX_KEY_LEN + 16], waiters[RLOCK_MAX_KEY_LEN + 16];
    const char *why = "";
    env_reset("max key, fenced");
    memset(key, 'm', sizeof key);
    CFG.fencing = 1;
    g_fencing = 1;
    env_nodes(1, 1);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, key, sizeof key, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:42\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&LK), 42);
    CHECK(rlock_aux_key(fence, sizeof fence, key, sizeof key, ":fence") == sizeof key + 8);
    CHECK(rlock_aux_key(waiters, sizeof waiters, key, sizeof key, ":waiters") == sizeof key + 10);
    CHECK_MSG(F[0].n_reqs == 1 && check_script_req(F[0].req[0], F[0].req_len[0], 0, S_ACQ, key, sizeof key,
                                                   rlock_lock_token(&LK), "10000", &why), "%s", why);
    CHECK(mem_find(F[0].req[0], F[0].req_len[0], waiters, strlen(waiters)) != NULL);
    env_done();
}
#endif

#if RLOCK_MAX_NODES >= 3
static void test_three_nodes(void) {
    size_t i;
    fk_step *s;
#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: 2 granted + 1 timeout (non-blocking)");
    env_up(3, 0, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    for (i = 0; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_node_wants(&N[0]), 0);
    CHECK_EQ_LL(rlock_node_wants(&N[1]), 0);
    CHECK_EQ_LL(rlock_node_wants(&N[2]), RLOCK_WANT_READ);
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), NODE_TMO);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    g_now += NODE_TMO;
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - (long long)NODE_TMO - DRIFT);
    CHECK_EQ_ST(rlock_node_status(&N[2]), RLOCK_E_IO);
    CHECK_EQ_LL(F[2].close_calls, 1);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK); /* to all three; node 2 reconnects */
    CHECK_EQ_LL(F[2].connect_calls, 2);
    CHECK_EQ_LL(F[2].req_conn[1], 2);
    CHECK_EQ_LL(rlock_last_votes(&LK), 3);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: 2 granted + 1 timeout (blocking)");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - (long long)NODE_TMO - DRIFT);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: 1 granted + 2 refused");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:4000\r\n");
    fk_add(&F[2], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:3000\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(rlock_last_votes(&LK), 1);
    CHECK(F[0].n_reqs == 2 && F[1].n_reqs == 1 && F[2].n_reqs == 1);
    CHECK_REQ(F[0], 1, 0, S_REL, "10000");
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: granted + refused + IO error");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:4000\r\n");
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    s->cut = 3;
    s->cut_code = RLOCK_IO_CLOSED;
    fk_add(&F[2], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_NOT_ACQUIRED);
    CHECK(F[0].n_reqs == 2 && F[1].n_reqs == 1 && F[2].n_reqs == 2);
    CHECK_EQ_LL(F[2].connect_calls, 2);
    CHECK_EQ_LL(F[2].req_conn[1], 2);
    CHECK_EQ_LL(F[1].close_calls + F[0].close_calls, 0);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: all IO errors");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) {
        s = fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        s->cut = 2 + i;
        s->cut_code = i == 1 ? RLOCK_IO_ERROR : RLOCK_IO_CLOSED;
        fk_add(&F[i], rlock_script_sha(S_REL), ":0\r\n");
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_QUORUM);
    for (i = 0; i < 3; i++) CHECK(F[i].close_calls == 1 && F[i].connect_calls == 2);
    CHECK_EQ_LL(rlock_last_votes(&LK), 0);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: all connects fail");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) F[i].connect_fail = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_QUORUM);
    CHECK(F[0].bytes_sent + F[1].bytes_sent + F[2].bytes_sent == 0);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: refused, then a quorum after backoff");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:20\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:20\r\n");
    fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK(g_n_sleeps == 1 && g_sleep_ms[0] <= 21);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    /* A foreign key on a minority of the nodes is a failed node: the
     * quorum of the others grants (liveness), the node's status says why. */
    env_reset("3 nodes: a foreign key on one node");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[2], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-1\r\n");
    fk_add(&F[2], rlock_script_sha(S_REL), ":0\r\n"); /* owner-checked: the foreign value is not ours */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK_EQ_ST(rlock_node_status(&N[2]), RLOCK_E_FOREIGN);
    CHECK(strstr(rlock_node_error(&N[2]), "without a TTL") != NULL);
    CHECK_EQ_LL(F[2].n_reqs, 1); /* nothing but the attempt */
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK(F[2].n_reqs <= 2 && !req_has(&F[2], 1, "DEL")); /* never a bare DEL of the foreign key */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    /* ... and with a holder's refusal on another node: held (as two
     * refusals would say), not the foreign node's status; the grant released */
    env_reset("3 nodes: a foreign key on one node, held on another");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:50\r\n");
    fk_add(&F[2], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-1\r\n");
    CHECK_EQ_ST(rlock_try_acquire(&LK, TTL), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_ST(rlock_node_status(&N[2]), RLOCK_E_FOREIGN);
    CHECK(F[0].n_reqs == 2 && req_has(&F[0], 1, rlock_script_sha(S_REL)));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    /* On a majority no quorum is possible: ended at once, untouched */
    env_reset("3 nodes: a foreign key on two nodes");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-1\r\n");
    fk_add(&F[2], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:-1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_FOREIGN);
    CHECK(g_n_sleeps == 0);                        /* not waited on */
    CHECK(F[1].n_reqs == 1 && F[2].n_reqs == 1); /* never deletes the foreign keys */
    CHECK(F[0].n_reqs == 2 && req_has(&F[0], 1, rlock_script_sha(S_REL))); /* the grant released */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: extend on a minority is LOST");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) {
        fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[i], rlock_script_sha(S_EXT), i == 0 ? ":1\r\n" : ":0\r\n");
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_LL(rlock_last_votes(&LK), 1);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
    env_done();
#endif

#if RLOCK_MAX_NODES >= 3
    env_reset("3 nodes: release with one node down");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) {
        fk_add(&F[i], rlock_script_sha(S_ACQ), GRANT);
        s = fk_add(&F[i], rlock_script_sha(S_REL), ":1\r\n");
        if (i == 1) { s->cut = 0; s->cut_code = RLOCK_IO_ERROR; }
    }
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 3);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK); /* a quorum released */
    CHECK_EQ_LL(rlock_last_votes(&LK), 2);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#endif
}
#endif

static void test_clock(void) {
    fk_step *s;
    env_reset("clock goes backwards (acquire)");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->clock_back = 50;
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n"); /* what was granted is given back */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 1000), RLOCK_E_CLOCK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    env_done();

#if RLOCK_MAX_NODES >= 3
    env_reset("clock goes backwards (3 nodes, non-blocking)");
    env_up(3, 0, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_REL), ":1\r\n");
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[2], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    g_now -= 1000;
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK); /* a clock behind the deadline is no timeout */
    CHECK_EQ_LL(F[2].close_calls, 0);
    F[2].steps[0].hang = 0;
    memcpy(F[2].out, GRANT, sizeof GRANT - 1); /* the reply arrives now */
    F[2].out_len = sizeof GRANT - 1;
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_E_CLOCK);
    CHECK(F[0].n_reqs == 2 && F[1].n_reqs == 2 && F[2].n_reqs == 2);
    env_done();
#endif

    env_reset("clock goes backwards (extend)");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], NULL, GRANT);
    s = fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    s->clock_back = 10;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_E_CLOCK);
    env_done();
}

/* rlock's clock is the now_ms hook's value modulo 2^32 (rlock__ms): times
 * are compared by their difference, so a lease, a wait or a timer that
 * spans the wrap (every 49.7 days) runs as any other. Each case starts just
 * below 2^32 and crosses it; a compare of raw times fails each of them. */
#define WRAP_T (0x100000000ULL - 3000u) /* 3 s before rlock's clock wraps */
/* A handle nobody touched for 2^31 ms or more (and 2^32 ms: where 32-bit
 * times read as "ahead" again, or as the same time) has no validity
 * left: renew_poll and extend report the lock lost without sending. */
static void test_clock_stale_handle(void) {
    static const uint64_t idle[3] = {0x80000000ULL, 0x100000000ULL, 0x100000000ULL + 5000u};
    uint32_t next = 0;
    int i;
    for (i = 0; i < 3; i++) {
        env_reset("clock wrap: a handle unused for 2^31 ms or more");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        g_now = WRAP_T;
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        g_now += idle[i];
        CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
        CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_LOST);
        CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
        CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
        CHECK_EQ_LL(F[0].n_reqs, 1); /* nothing sent */
        env_done();
    }
}

static void test_clock_wrap(void) {
    uint32_t next = 0;
    fk_step *s;
    int i;
    env_reset("clock wrap: held, renewed, extended and released across it");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_OK);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_NOT_DUE);
    CHECK_EQ_LL(next, TTL / 3);
    g_now += TTL / 3; /* 333 ms past the wrap: the renewal is due */
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - TTL / 3);
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_OK);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_RENEWED);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_renew_poll(&LK, &next), RLOCK_OK);
    CHECK_EQ_LL(rlock_renew_outcome(&LK), RLOCK_RENEW_NOT_DUE);
    CHECK_EQ_LL(next, TTL / 3);
    g_now += 1000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 1000);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(F[0].n_reqs, 4);
    env_done();

    /* a lease taken before the wrap runs out after it */
    env_reset("clock wrap: validity runs out across it");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    g_now += TTL - DRIFT - 1;
    CHECK_EQ_LL(rlock_validity_ms(&LK), 1);
    g_now += 1;
    CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST);
    CHECK_EQ_LL(F[0].n_reqs, 1); /* nothing sent */
    env_done();

    /* The holder's PTTL (3999) cuts the backoff to 4000 ms: the retry is due
     * 1 s after the wrap, and rlock_next_timeout_ms counts down to it. */
    env_reset("clock wrap: a backoff across it");
    CFG.backoff_min_ms = CFG.backoff_max_ms = 8000;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:3999\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 10000), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK(rlock_acquire_waiting(&LK));
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 4000);
    g_now += 2999;
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 1001);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    g_now += 1000; /* 999 ms past the wrap */
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 1);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK); /* not yet */
    CHECK_EQ_LL(F[0].n_reqs, 1);
    g_now += 1;
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 0);
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_OK);
    CHECK_EQ_LL(F[0].n_reqs, 2);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    env_done();

    /* the wait ends 2 s after the wrap: slept exactly up to it, then TIMEOUT */
    env_reset("clock wrap: a wait that times out across it");
    CFG.backoff_min_ms = 100;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:50000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 5000), RLOCK_TIMEOUT);
    CHECK_EQ_LL(g_slept, 5000);
    CHECK_EQ_LL(g_now - WRAP_T, 5000);
    CHECK(F[0].n_reqs >= 3);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();

    /* A wait of 2^31 ms or more is forever (LLONG_MAX says so: the rlock
     * command's default): it outlasts 30 days of refusals; 2^31 - 2 ms
     * does not. */
    env_reset("clock wrap: a wait of LLONG_MAX outlasts 2^31 ms");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:50000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, LLONG_MAX), RLOCK_WOULD_BLOCK);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
        CHECK(rlock_acquire_waiting(&LK));
        CHECK_MSG(rlock_next_timeout_ms(&LK) <= 128, "next timeout %lu", (unsigned long)rlock_next_timeout_ms(&LK));
        g_now += 10ULL * 86400000u; /* 10 days */
    }
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK); /* 30 days on: still waiting */
    CHECK(F[0].n_reqs >= 4);
    F[0].repeat_last = 0;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    g_now += 200;
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    env_done();

    env_reset("clock wrap: a wait of 2^31 - 2 ms ends");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:50000\r\n");
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0x7ffffffeLL), RLOCK_WOULD_BLOCK);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
        g_now += 10ULL * 86400000u;
    }
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_TIMEOUT);
    env_done();

    /* a request sent before the wrap times out after it, not before or never */
    env_reset("clock wrap: a node timeout across it");
    env_up(1, 0, RLOCK_KIND_SIMPLE);
    g_now = 0x100000000ULL - 100u;
    s = fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), NODE_TMO);
    g_now += NODE_TMO - 1;
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 1);
    CHECK_EQ_LL(F[0].close_calls, 0);
    g_now += 1;
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_E_IO);
    CHECK_EQ_LL(F[0].close_calls, 1);
    env_done();

#if RLOCK_MAX_NODES >= 3
    /* Redlock: the round starts before the wrap, its last grant comes
     * 3.1 s later; validity counts from the round's start. */
    env_reset("clock wrap: Redlock validity across it");
    CFG.node_timeout_ms = 5000;
    env_up(3, 0, RLOCK_KIND_SIMPLE);
    g_now = WRAP_T;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
    s->hang = 1;
    CHECK_EQ_ST(rlock_acquire_begin(&LK, TTL, 0), RLOCK_WOULD_BLOCK);
    CHECK_EQ_ST(rlock_step(&LK), RLOCK_WOULD_BLOCK);
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 5000);
    g_now += 3100;
    CHECK_EQ_LL(rlock_next_timeout_ms(&LK), 1900);
    F[2].steps[0].hang = 0;
    memcpy(F[2].out, GRANT, sizeof GRANT - 1); /* the reply arrives now */
    F[2].out_len = sizeof GRANT - 1;
    CHECK_EQ_ST(drive(&LK, rlock_step(&LK)), RLOCK_OK);
    CHECK_EQ_LL(rlock_last_votes(&LK), 3);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 3100);
    g_now += 6000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 9100);
    env_done();
#endif

    /* The hook's own 64-bit end is a 2^32 wrap too: a lease across it. */
    env_reset("clock wrap: the 64-bit hook's end");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    g_now = UINT64_MAX - 1000;
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    g_now += 2000; /* 999 */
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 2000);
    CHECK_EQ_ST(rlock_extend(&LK, 2 * TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), 2 * TTL - (2 * TTL * 10 / 1000 + 2));
    env_done();
}

#define RUN_ID_A "$40\r\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
#define RUN_ID_B "$40\r\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n"
#define RUN_ID_C "$40\r\ncccccccccccccccccccccccccccccccccccccccc\r\n"

static void test_client_connect(void) {
#if RLOCK_MAX_NODES >= 3
    env_reset("client connect");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "PING", "+PONG\r\n");
    fk_add(&F[1], "PING", "+PONG\r\n");
    fk_add(&F[0], "run_id", RUN_ID_A); /* the nodes that answered: which server are you? */
    fk_add(&F[1], "run_id", RUN_ID_B);
    F[2].connect_fail = 1;
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_OK); /* a quorum is up */
    CHECK_EQ_ST(rlock_node_status(&N[2]), RLOCK_E_IO);
    CHECK(req_has(&F[0], 1, "EVAL") && req_has(&F[1], 1, "'info','server'"));
    fk_add(&F[0], "PING", "-ERR nope\r\n");
    fk_add(&F[1], "PING", ":1\r\n");
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_QUORUM);
    rlock_client_close(&C);
    CHECK(F[0].close_calls == 1 && F[1].close_calls == 1);
    env_done();
#endif

    env_reset("client connect, one node, password");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    N[0].password = "pw";
    fk_add(&F[0], "AUTH", "-WRONGPASS nope\r\n");
#if RLOCK__COMPACT /* its PING goes behind AUTH (it changes nothing); a lock's request waits */
    fk_add(&F[0], "PING", "+PONG\r\n");
#endif
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_AUTH);
    CHECK_EQ_LL(F[0].n_reqs, 1 + RLOCK__COMPACT); /* (the general engine's PING waited for AUTH's reply) */
    env_done();


    env_reset("client connect, one node: no identity round");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "PING", "+PONG\r\n");
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_OK);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    env_done();
}

/* AUTH or SELECT answered with nil, an integer, an array or another
 * status (+PONG: out of step; no server sends them): not +OK - the stream
 * is malformed, the connection dropped, the acquire sent nowhere (both
 * engines took such a reply for +OK and sent the acquire behind it; the
 * general engine still took another status); the compact engine, whose
 * request waits unqueued behind AUTH and which cannot tell it from one
 * sent, cleans up on a new connection. */
static void test_auth_reply_not_ok(void) {
    static const char *const not_ok[4] = { "$-1\r\n", ":1\r\n", "*1\r\n:1\r\n", "+PONG\r\n" };
    size_t i;
    int select;
    for (select = 0; select < 2; select++) {
        const char *cmd = select ? "SELECT" : "AUTH";
        for (i = 0; i < 4; i++) {
            env_reset("AUTH or SELECT answered with nil, an integer, an array, another status");
            env_up(1, 1, RLOCK_KIND_SIMPLE);
            if (select) N[0].db = 5;
            else N[0].password = "pw";
            fk_add(&F[0], cmd, not_ok[i]);
#if RLOCK__COMPACT
            fk_add(&F[0], cmd, "+OK\r\n"); /* the attempt's cleanup, on a new connection */
            fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
#endif
            CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_PROTOCOL);
            CHECK_MSG(F[0].n_reqs == 1 + 2 * RLOCK__COMPACT, "%s reply %lu: %d requests", cmd, (unsigned long)i,
                      F[0].n_reqs);
            CHECK(!req_has(&F[0], 0, "EVALSHA") && !req_has(&F[0], 1, rlock_script_sha(S_ACQ)));
            CHECK(F[0].close_calls >= 1);
            CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
            env_done();
        }
    }
}

/* rlock_client_connect's PING answered with nil, an integer or an array:
 * RLOCK_E_PROTOCOL, which says the connection was dropped - it was kept
 * (both engines), its stream out of step for the next request; the next
 * acquire connects again. (The compact engine reads nil as malformed.) */
static void test_ping_reply_unexpected(void) {
    static const char *const wrong[3] = { "$-1\r\n", ":1\r\n", "*1\r\n:1\r\n" };
    size_t i;
    for (i = 0; i < 3; i++) {
        env_reset("PING answered with nil, an integer, an array");
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], "PING", wrong[i]);
        CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_PROTOCOL);
        CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_E_PROTOCOL);
        CHECK(why_is(rlock_node_error(&N[0]),
                     RLOCK__COMPACT && i == 0 ? "malformed or oversized reply" : "unexpected reply to PING"));
        CHECK_MSG(F[0].close_calls == 1, "PING reply %lu: closes %ld", (unsigned long)i, F[0].close_calls);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_MSG(F[0].connect_calls == 2 && F[0].req_conn[1] == 2, "PING reply %lu: connects %ld", (unsigned long)i,
                  F[0].connect_calls);
        env_done();
    }
}

#if RLOCK_MAX_NODES >= 3 && !RLOCK__COMPACT
/* The identity round's run_id answered with a reply of the wrong type (an
 * integer, an array, a status; its script answers a bulk string, nil, or an
 * error): the identity is unknown, as for nil, and the stream is not
 * trusted - the connection is dropped; the next request connects again. */
static void test_run_id_reply_unexpected(void) {
    static const char *const wrong[3] = { ":1\r\n", "*1\r\n:1\r\n", "+OK\r\n" };
    size_t i;
    for (i = 0; i < 3; i++) {
        env_reset("run_id answered with an integer, an array, a status");
        env_up(3, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], "PING", "+PONG\r\n");
        fk_add(&F[1], "PING", "+PONG\r\n");
        fk_add(&F[2], "PING", "+PONG\r\n");
        fk_add(&F[0], "run_id", wrong[i]);
        fk_add(&F[1], "run_id", RUN_ID_B);
        fk_add(&F[2], "run_id", RUN_ID_C);
        CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_OK);
        CHECK_MSG(F[0].close_calls == 1, "run_id reply %lu: closes %ld", (unsigned long)i, F[0].close_calls);
        CHECK(F[1].close_calls == 0 && F[2].close_calls == 0);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[1], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[2], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_MSG(F[0].connect_calls == 2 && F[0].req_conn[2] == 2, "run_id reply %lu: connects %ld", (unsigned long)i,
                  F[0].connect_calls);
        env_done();
    }
}
#endif

/* RESP3 frames where a lock's RESP2 reply is due (pins README's reader
 * notes): the general engine reads an attribute as metadata before the
 * value it annotates (skipped: the grant behind it counts) and a push on a
 * connection that waits for nothing as no reply (ignored: the grant behind
 * it counts); a map, a set, a boolean or RESP3's null is a wrong shape
 * (RLOCK_E_PROTOCOL, the connection dropped, the attempt cleaned up). The
 * compact engine, and the general one without waiting (no HELLO 3), read
 * every RESP3 type as malformed: the same. */
static void test_resp3_frames_on_lock(void) {
    static const char *const framed[] = { "|1\r\n+k\r\n+v\r\n" GRANT, ">2\r\n+x\r\n+y\r\n" GRANT, "%1\r\n:1\r\n:1\r\n",
                                          "~2\r\n:1\r\n:1\r\n", "#t\r\n", "_\r\n" };
    size_t i;
    for (i = 0; i < sizeof framed / sizeof framed[0]; i++) {
        int granted = !RLOCK__COMPACT && RLOCK__HAS_WAITING && i < 2; /* (RESP3 is read only with waiting) */
        env_reset("RESP3 frames where a lock's reply is due");
        env_up(1, 0, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(S_ACQ), framed[i]);
        if (!granted) fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), granted ? RLOCK_OK : RLOCK_E_PROTOCOL);
        CHECK_EQ_LL(rlock_lock_state(&LK), granted ? RLOCK_STATE_HELD : RLOCK_STATE_IDLE);
        CHECK_MSG(F[0].n_reqs == 2 - granted && F[0].close_calls == !granted, "frame %lu: %d requests, %ld closes",
                  (unsigned long)i, F[0].n_reqs, F[0].close_calls);
        env_done();
    }
}

/* Half a RESP3 push read with a reply, the connection then idle: the next
 * request's idle probe keeps it (the push's rest comes with that request's
 * reply). It used to read over it, and the push's rest was taken as the
 * release's reply (fuzz_locks; FAULTS-MATRIX row 25). */
static void test_idle_probe_keeps_half_a_push(void) {
#if !RLOCK__COMPACT && !defined(RLOCK_NO_WAITING)
    env_reset("idle probe after half a RESP3 push");
    CFG.pubsub = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT ">2\r\n+x\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), "+y\r\n:1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(F[0].close_calls, 0);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    env_done();
    /* unread bytes that are no push's start are stray: connected again */
    env_reset("idle probe after stray bytes");
    CFG.pubsub = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT ">2\r\n+x\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    memcpy(N[0].x.rx + N[0].x.rx_used, ":1\r", 3); /* (the bytes left become a reply's start) */
    fk_add(&F[0], "HELLO", "%1\r\n$5\r\nproto\r\n:3\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_LL(F[0].n_reqs, 4);
    env_done();
#endif
}

/* FAULTS.md row 28: one server listed twice under different names answers
 * with one run_id: two votes for one server. rlock_client_connect refuses
 * (E_BADARG, the node's error names the other node and the run_id), closes
 * every connection and leaves the client unusable: nothing more is sent. */
#if RLOCK_MAX_NODES >= 3
static void test_client_connect_same_server(void) {
    int i;
#if RLOCK_MAX_NODES >= 3
    env_reset("client connect, one server twice");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) fk_add(&F[i], "PING", "+PONG\r\n");
    fk_add(&F[0], "run_id", RUN_ID_A);
    fk_add(&F[1], "run_id", RUN_ID_B);
    fk_add(&F[2], "run_id", RUN_ID_A);
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_node_status(&N[2]), RLOCK_E_BADARG);
    CHECK_MSG(strcmp(rlock_node_error(&N[2]), "same server as node 0 (run_id aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)") == 0,
              "%s", rlock_node_error(&N[2]));
    CHECK_EQ_ST(rlock_node_status(&N[0]), RLOCK_OK);
    CHECK_EQ_ST(rlock_node_status(&N[1]), RLOCK_OK);
    for (i = 0; i < 3; i++) CHECK_MSG(F[i].close_calls == 1 && !F[i].connected, "node %d left connected", i);
    CHECK_EQ_LL(rlock_client_quorum(&C), 0);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_E_BADARG);
    for (i = 0; i < 3; i++) CHECK_EQ_LL(F[i].n_reqs, 2);
    env_done();

    /* a node whose user may not run EVAL (or INFO: nil) is not compared;
     * the probe's refusal is not that node's error */
#endif
#if RLOCK_MAX_NODES >= 3
    env_reset("client connect, identity unknown");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) fk_add(&F[i], "PING", "+PONG\r\n");
    fk_add(&F[0], "run_id", RUN_ID_A);
    fk_add(&F[1], "run_id", "-NOPERM this user has no permissions to run the 'eval' command\r\n");
    fk_add(&F[2], "run_id", "$-1\r\n");
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_OK);
    for (i = 0; i < 3; i++) CHECK_EQ_ST(rlock_node_status(&N[i]), RLOCK_OK);
    CHECK(rlock_node_error(&N[1])[0] == '\0');
    fk_add(&F[0], "EVALSHA", GRANT);
    fk_add(&F[1], "EVALSHA", GRANT);
    fk_add(&F[2], "EVALSHA", GRANT);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK); /* the client still works */
    env_done();

    /* the check runs on the nodes that answered; distinct ids are fine */
#endif
#if RLOCK_MAX_NODES >= 3
    env_reset("client connect, three servers");
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    for (i = 0; i < 3; i++) fk_add(&F[i], "PING", "+PONG\r\n");
    fk_add(&F[0], "run_id", RUN_ID_A);
    fk_add(&F[1], "run_id", RUN_ID_B);
    fk_add(&F[2], "run_id", RUN_ID_C);
    CHECK_EQ_ST(rlock_client_connect(&C, 100), RLOCK_OK);
    env_done();
#endif
}
#endif

/* A transport without a connect hook comes connected: the first command
 * goes out on it (README/header: "Without it a dropped connection stays
 * down"), AUTH still leads; once dropped, nothing is sent again. */
static void test_no_connect_hook(void) {
    env_no_connect_hook("no connect hook");
    N[0].password = "pw";
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], "AUTH", "+OK\r\n");
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), "*2\r\n:1\r\n:1\r\n"); /* wrong shape: dropped */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_PROTOCOL);
    CHECK_EQ_LL(F[0].close_calls, 1);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_E_IO); /* stays down */
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK_EQ_LL(F[0].bad_io, 0);
    env_done();
}

/* cfg.fencing: acquire scripts get the "{key}:fence" counter as KEYS[2] and
 * answer {1, holds, fence}; Redlock keeps the largest counter. */
#ifndef RLOCK_NO_FENCING
static void test_fencing(void) {
    static const char stray[] = "a}b";
    size_t i;
    env_reset("fencing, one node");
    CFG.fencing = 1;
    g_fencing = 1;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:42\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&LK), 42);
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK_REQ(F[0], 1, 0, S_REL, "10000"); /* no fence key outside acquire */
    CHECK_EQ_LL(rlock_fence_token(&LK), 0);
    env_done();

    /* the fence as the counter's text (the scripts' answer: a Lua number
     * is a double, exact to 2^53 only), read whole in any chunking */
    {
        static const struct { const char *reply; long long fence; } texts[] = {
            { "*3\r\n:1\r\n:1\r\n$19\r\n9223372036854775807\r\n", 9223372036854775807LL },
            { "*3\r\n:1\r\n:1\r\n$16\r\n9007199254740993\r\n", 9007199254740993LL },
            { "*3\r\n:1\r\n:1\r\n$1\r\n7\r\n", 7 },
        };
        static const char *const bad[] = {
            "*3\r\n:1\r\n:1\r\n$3\r\nabc\r\n", "*3\r\n:1\r\n:1\r\n$0\r\n\r\n", "*3\r\n:1\r\n:1\r\n$-1\r\n",
            "*3\r\n:1\r\n:1\r\n$2\r\n123\r\n", "*3\r\n:1\r\n:1\r\n$20\r\n99999999999999999999\r\n",
            "*3\r\n:1\r\n$1\r\n1\r\n:5\r\n", /* (text only in the fence's place) */
        };
        size_t chunk;
        for (chunk = 0; chunk < 2; chunk++)
            for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
                env_reset("fencing, the fence as text");
                CFG.fencing = 1;
                g_fencing = 1;
                env_up(1, 1, RLOCK_KIND_SIMPLE);
                F[0].max_chunk = chunk;
                fk_add(&F[0], rlock_script_sha(S_ACQ), texts[i].reply);
                CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
                CHECK_EQ_LL(rlock_fence_token(&LK), texts[i].fence);
                env_done();
            }
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            env_reset("fencing, a fence text that is no number");
            CFG.fencing = 1;
            g_fencing = 1;
            env_up(1, 1, RLOCK_KIND_SIMPLE);
            fk_add(&F[0], rlock_script_sha(S_ACQ), bad[i]);
            fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
            CHECK_MSG(rlock_acquire(&LK, TTL, 0) == RLOCK_E_PROTOCOL, "reply %lu", (unsigned long)i);
            CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
            CHECK_EQ_LL(F[0].n_reqs, 2); /* (the cleanup) */
            env_done();
        }
    }

#if RLOCK_MAX_NODES >= 3
#if RLOCK_MAX_NODES >= 3
    {
    fk_step *s;
    env_reset("fencing, 3 nodes");
    CFG.fencing = 1;
    g_fencing = 1;
    env_up(3, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:5\r\n");
    fk_add(&F[1], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:9\r\n");
    s = fk_add(&F[2], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:99\r\n");
    s->hang = 1; /* its counter never arrives */
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&LK), 9);
    env_done();
    }
#endif
#endif

#ifndef RLOCK_NO_REENTRANT
    env_reset("fencing, reentrant");
    CFG.fencing = 1;
    g_fencing = 1;
    env_up(1, 1, RLOCK_KIND_REENTRANT);
    fk_add(&F[0], rlock_script_sha(S_RACQ), "*3\r\n:1\r\n:1\r\n:7\r\n");
    fk_add(&F[0], rlock_script_sha(S_RACQ), "*3\r\n:1\r\n:2\r\n:0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&LK), 2);
    CHECK_EQ_LL(rlock_fence_token(&LK), 7); /* a re-entry keeps the grant's token */
    CHECK_REQ(F[0], 1, 0, S_RACQ, "10000");
    env_done();
#endif

    env_reset("fencing off: {1,1,0} and {1,1} both grant, token 0");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*3\r\n:1\r\n:1\r\n:0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_fence_token(&LK), 0);
    CHECK_REQ(F[0], 0, 0, S_ACQ, "10000");
    env_done();

    env_reset("fencing with a key that has no same-slot counter");
    CFG.fencing = 1;
    env_nodes(1, 1);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, stray, 3, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_BADARG);
    CHECK(fk_sent_nothing(&F[0]));
    env_done();
    /* without fencing the same key locks, with an empty release channel */
    env_reset("stray '}' key without fencing");
    env_nodes(1, 1);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, stray, 3, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK(req_script(&F[0], 1, 0, S_REL, &LK, stray, 3, "10000"));
    for (i = 0; i < 2; i++) CHECK(!req_has(&F[0], (int)i, "released"));
    env_done();
}
#endif

/* Features compiled out (RLOCK_NO_*, rlock.h section 1): the calls that
 * would need one say RLOCK_E_BADARG naming the macro, and send nothing; in
 * a build that has the feature the same calls are accepted. */
static void test_compiled_out(void) {
    rlock_subscriber sub;
    rlock_transport t;
    env_reset("compiled out: reentrant");
    env_nodes(1, 1);
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
#ifdef RLOCK_NO_REENTRANT
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_REENTRANT), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "reentrant locks are compiled out (RLOCK_NO_REENTRANT)");
#else
    CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_REENTRANT), RLOCK_OK);
#endif
    env_reset("compiled out: fair");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_set_fair(&LK, 0, 0), RLOCK_OK); /* barging is always there */
#ifdef RLOCK_NO_FAIR
    CHECK_EQ_ST(rlock_lock_set_fair(&LK, 1, 0), RLOCK_E_BADARG);
    CHECK_STR(rlock_lock_error(&LK), "fair locks are compiled out (RLOCK_NO_FAIR)");
#else
    CHECK_EQ_ST(rlock_lock_set_fair(&LK, 1, 600001), RLOCK_E_BADARG);
    CHECK(why_is(rlock_lock_error(&LK), "grace 600001 ms is above 600000"));
#ifndef RLOCK_NO_PRIMITIVES
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:2", 5, RLOCK_KIND_READ), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_set_fair(&LK2, 1, 0), RLOCK_E_BADARG);
    CHECK(why_is(rlock_lock_error(&LK2), "fair: kind 4 has no fair form (simple and reentrant locks do)"));
#endif
    CHECK_EQ_ST(rlock_lock_set_fair(&LK, 1, 0), RLOCK_OK);
    /* Whatever else is compiled out (waiting and fencing too), a fair lock's
     * scripts get its wait queue: they use KEYS[2] on every call (without
     * it Redis failed the acquire after setting the key). Ids 6, 7: the fair
     * acquire and release (RLOCK__S_*). */
    fk_add(&F[0], rlock_script_sha(6), GRANT);
    fk_add(&F[0], rlock_script_sha(7), ":1\r\n");
    CHECK_EQ_ST(rlock_try_acquire(&LK, TTL), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    CHECK(req_has(&F[0], 0, "{res:1}:waiters"));
    CHECK(req_has(&F[0], 1, "{res:1}:waiters") && req_has(&F[0], 1, "{res:1}:released"));
    env_done();
#endif
    env_reset("compiled out: waiting");
    env_nodes(2 <= RLOCK_MAX_NODES ? 2 : 1, 1);
    CFG.pubsub = 1;
#ifdef RLOCK_NO_WAITING
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "cfg.pubsub: waiting is compiled out (RLOCK_NO_WAITING)");
    CFG.pubsub = 0;
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
#else
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
    CFG.pubsub = 0;
#endif
    t = fk_transport(&F[g_n], 1); /* a connection of its own */
    CHECK_EQ_ST(rlock_subscriber_init(&sub, &t), RLOCK_OK);
#ifdef RLOCK_NO_WAITING
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, &sub, 1), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "subscribers: waiting is compiled out (RLOCK_NO_WAITING)");
#else
    CHECK_EQ_ST(rlock_client_set_subscribers(&C, &sub, 1), RLOCK_OK);
#endif
    env_reset("compiled out: fencing");
    env_nodes(1, 1);
    CFG.fencing = 1;
#ifdef RLOCK_NO_FENCING
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "cfg.fencing: fencing is compiled out (RLOCK_NO_FENCING)");
#else
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
#endif
    CFG.fencing = 0;
    env_reset("compiled out: replicas, FCALL");
    env_nodes(1, 1);
    CFG.replicas = 1;
#ifdef RLOCK_NO_REPLICAS
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "cfg.replicas: WAIT is compiled out (RLOCK_NO_REPLICAS)");
#else
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
#endif
    CFG.replicas = 0;
    CFG.scripts = RLOCK_SCRIPTS_FCALL;
#ifdef RLOCK_NO_FCALL
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_E_BADARG);
    CHECK_STR(rlock_client_error(&C), "cfg.scripts: FCALL is compiled out (RLOCK_NO_FCALL)");
#else
    CHECK_EQ_ST(rlock_client_init(&C, N, 1, &CFG), RLOCK_OK);
#endif
    CFG.scripts = RLOCK_SCRIPTS_AUTO;
    CHECK_MSG(all_silent(g_n + 1), "a compiled-out feature reached a transport");

#ifdef RLOCK_NO_EVAL_FALLBACK
    /* No script text in the image: NOSCRIPT is an error that says how to
     * load them, and nothing else is sent (no EVAL). */
    env_reset("compiled out: EVAL fallback");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CFG.scripts_only = 1;
    fk_add(&F[0], "EVALSHA", "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_E_REDIS);
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK(why_has(rlock_node_error(&N[0]), "RLOCK_NO_EVAL_FALLBACK") &&
          why_has(rlock_node_error(&N[0]), "SCRIPT LOAD"));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_IDLE);
    env_done();
#else
    CHECK(rlock_script_text(0) != NULL);
#endif
}

/* ------------------------------------------------------------------------ */
/* 7. FAULTS.md rows not covered elsewhere in this suite                     */
/* ------------------------------------------------------------------------ */

/* FAULTS.md row 1 (the waiting side): between rounds a waiter backs off
 * exponentially - round i sleeps within [d/2, d], d = min(backoff_max,
 * backoff_min << (i-1)) - with jitter (handles do not sleep in lockstep),
 * never past the wait deadline. */
static void test_fault01_backoff_jitter(void) {
    uint32_t first[MAX_SLEEPS];
    int i, n1, bad = 0, distinct = 0, same = 0;
    uint64_t d;
    env_reset("FAULTS 1: backoff with jitter, bounded by the deadline");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_ACQ), "*2\r\n:0\r\n:5000\r\n"); /* held, 5 s left */
    F[0].repeat_last = 1;
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 3000), RLOCK_TIMEOUT);
    n1 = g_n_sleeps < MAX_SLEEPS ? g_n_sleeps : MAX_SLEEPS;
    CHECK_MSG(n1 >= 20, "only %d sleeps in a 3 s wait", n1);
    CHECK_EQ_LL(g_slept, 3000);       /* the whole wait, not a millisecond more */
    CHECK_EQ_LL(g_now - T0, 3000);
    for (i = 0, d = 2; i < n1; i++, d = d * 2 > 128 ? 128 : d * 2) {
        int last = i == n1 - 1; /* may be cut short by the deadline */
        first[i] = g_sleep_ms[i];
        if (g_sleep_ms[i] > d || (!last && g_sleep_ms[i] < d / 2) || g_sleep_ms[i] == 0) {
            if (bad++ < 3) fprintf(stderr, "sleep %d: %lu ms, want %lu..%lu\n", i, (unsigned long)g_sleep_ms[i],
                                   (unsigned long)(d / 2), (unsigned long)d);
        }
        if (i >= 8 && !last) {
            int k, seen = 0;
            for (k = 7; k < i; k++) if (g_sleep_ms[k] == g_sleep_ms[i]) seen = 1;
            distinct += !seen;
        }
    }
    CHECK_MSG(bad == 0, "%d sleeps outside [d/2, d]", bad);
    CHECK_MSG(distinct >= 5, "capped sleeps take only %d distinct values: no jitter", distinct + 1);
    /* a second waiter (its own seed from the random source) sleeps differently */
    g_n_sleeps = 0;
    CHECK_EQ_ST(rlock_acquire(&LK2, TTL, 3000), RLOCK_TIMEOUT);
    for (i = 0; i < n1 && i < g_n_sleeps && i < MAX_SLEEPS; i++) same += g_sleep_ms[i] == first[i];
    CHECK_MSG(same < n1 / 2, "two waiters slept the same %d of %d times (lockstep)", same, n1);
    env_done();
}

/* FAULTS.md row 10: validity runs on the monotonic clock. The default clock
 * is CLOCK_MONOTONIC (which settimeofday, NTP steps and an administrator's
 * `date -s` do not move), never the wall clock; through the clock hook,
 * jumps in either direction are what rlock sees, and a backwards step never
 * adds validity. */
static int g_lost_calls = 0;
static void count_lost(rlock_lock *lk, void *user) { (void)lk; (void)user; g_lost_calls++; }

static void test_fault10_monotonic_clock(void) {
#ifndef RLOCK_NO_POSIX
    {
        struct timespec a, b, wall;
        uint64_t before, now, after, wall_ms;
        clock_gettime(CLOCK_MONOTONIC, &a);
        now = RLOCK_NOW_MS();
        clock_gettime(CLOCK_MONOTONIC, &b);
        clock_gettime(CLOCK_REALTIME, &wall);
        before = (uint64_t)a.tv_sec * 1000u + (uint64_t)a.tv_nsec / 1000000u;
        after = (uint64_t)b.tv_sec * 1000u + (uint64_t)b.tv_nsec / 1000000u;
        wall_ms = (uint64_t)wall.tv_sec * 1000u + (uint64_t)wall.tv_nsec / 1000000u;
        g_test = "FAULTS 10: the default clock";
        CHECK_MSG(before <= now && now <= after, "RLOCK_NOW_MS %llu outside CLOCK_MONOTONIC [%llu, %llu]",
                  (unsigned long long)now, (unsigned long long)before, (unsigned long long)after);
        CHECK_MSG(now + 86400000ULL < wall_ms, "RLOCK_NOW_MS %llu looks like wall time %llu",
                  (unsigned long long)now, (unsigned long long)wall_ms);
    }
    {   /* a client on the default clock (no hook): validity is counted on it */
        rlock_config cfg;
        env_reset("FAULTS 10: validity on the default clock");
        env_nodes(1, 1);
        rlock_config_init(&cfg);
        cfg.random_bytes = hk_random;
        cfg.scripts_only = 1;
        CHECK_EQ_ST(rlock_client_init(&C, N, 1, &cfg), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&LK, &C, "res:1", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        CHECK_MSG(rlock_validity_ms(&LK) <= TTL - DRIFT && rlock_validity_ms(&LK) > TTL - DRIFT - 1000,
                  "validity %lld", rlock_validity_ms(&LK));
        env_done();
    }
#endif
    /* the hook jumps forward while the lock is held */
    env_reset("FAULTS 10: clock hook jumps forward");
    CFG.on_lost = count_lost;
    g_lost_calls = 0;
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_REL), ":0\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    g_now += 3000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 3000); /* exactly the jump */
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    g_now += TTL; /* far past the lease */
    CHECK_EQ_LL(rlock_validity_ms(&LK), 0);
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_LOST);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_LOST); /* not sent: validity is gone */
    CHECK_EQ_LL(F[0].n_reqs, 1);
    CHECK_EQ_LL(g_lost_calls, 1);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_LOST); /* owner-checked: says it was gone */
    env_done();

    /* the hook steps backwards between operations: never more validity than
     * the lease minus drift, and the extend after it counts from its own start */
    env_reset("FAULTS 10: clock hook steps backwards between operations");
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
    fk_add(&F[0], rlock_script_sha(S_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
    g_now += 1000;
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT - 1000);
    g_now -= 6000; /* 5 s before the grant */
    CHECK_MSG(rlock_validity_ms(&LK) <= TTL - DRIFT, "validity %lld > ttl - drift after the clock went back",
              rlock_validity_ms(&LK));
    CHECK_EQ_LL(rlock_lock_state(&LK), RLOCK_STATE_HELD);
    CHECK_EQ_ST(rlock_extend(&LK, TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_validity_ms(&LK), TTL - DRIFT);
    CHECK_EQ_ST(rlock_release(&LK), RLOCK_OK);
    env_done();

    /* max_hold_ms 40 s while the hook steps back 25 s 20 s into the hold
     * (to 5 s before the hold began, before the last renewal's grant):
     * renew_poll renews at once (validity cannot be told), and that renewal
     * takes the step as no time passed since the last grant - the hold
     * counts on, and renewals stop when held + ttl would pass the cap (real
     * time ~30 s, within one renewal interval), not 25 s later (the hold
     * measured from a start the clock had stepped back past). Real time
     * moves in 250 ms polls; every renewal is answered at once. */
    {
        const uint64_t cap = 40000, back = 25000;
        uint64_t real, last = 0;
        uint32_t next = 0;
        rlock_status st = RLOCK_OK;
        env_reset("FAULTS 10: clock hook steps back during a max_hold_ms hold");
        CFG.max_hold_ms = (uint32_t)cap;
        env_up(1, 1, RLOCK_KIND_SIMPLE);
        fk_add(&F[0], rlock_script_sha(S_ACQ), GRANT);
        fk_add(&F[0], rlock_script_sha(S_EXT), ":1\r\n");
        F[0].repeat_last = 1;
        CHECK_EQ_ST(rlock_acquire(&LK, TTL, 0), RLOCK_OK);
        for (real = 250; real <= 60000 && (st == RLOCK_OK || st == RLOCK_WOULD_BLOCK); real += 250) {
            g_now = T0 + real - (real >= 20000 ? back : 0);
            st = rlock_renew_poll(&LK, &next);
            if (rlock_renew_outcome(&LK) == RLOCK_RENEW_RENEWED) last = real;
        }
        printf("FAULTS 10: max_hold_ms %llu, clock back %llu ms at 20 s: last renewal %llu ms into the hold, then %s\n",
               (unsigned long long)cap, (unsigned long long)back, (unsigned long long)last, rlock_status_str(st));
        CHECK_MSG(last + (uint64_t)TTL <= cap + (uint64_t)TTL / 3 + 250 && last + (uint64_t)TTL >= cap - (uint64_t)TTL / 3 - 250,
                  "max_hold_ms %llu: the last renewal %llu ms into the hold (clock back %llu ms)",
                  (unsigned long long)cap, (unsigned long long)last, (unsigned long long)back);
        CHECK_EQ_ST(st, RLOCK_LOST); /* (the lease ran out after the last renewal) */
        env_done();
    }
}

/* Section 5b on the scripted transport: the Cluster slot function, the
 * inspect answer's parser, multi-lock arguments and encoding (every key,
 * one token, nothing else), the semaphore's permits argument, UPGRADE
 * mapped to its own status (not retried), an inspect answer read into
 * rlock_info. */
#ifndef RLOCK_NO_PRIMITIVES /* the small-flash configuration (cortex-m0's 256 KiB) holds the suite only without the
                              cluster code this pulls in; i686, ppc (big-endian) and cortex-m4 run it */
#ifndef RLOCK_NO_CLUSTER /* (rlock_cluster_slot, below, stays: multi-locks use it) */
/* ---- Redis Cluster: the slot map read value by value (rlock__walk) ---- */
static long ut_cl_send(void *ctx, const unsigned char *b, size_t n) { (void)ctx; (void)b; (void)n; return 0; }
static long ut_cl_recv(void *ctx, unsigned char *b, size_t n) { (void)ctx; (void)b; (void)n; return 0; }
static int ut_cl_connect(void *user, size_t i, const char *host, int port, rlock_transport *out) {
    (void)user; (void)i; (void)host; (void)port;
    out->send = ut_cl_send;
    out->recv = ut_cl_recv;
    return 0;
}

/* Feed text through cl's walk in a 48-byte window, `step` bytes arriving at
 * a time (as a small receive buffer would): 1 done, 0 not done, -1 malformed. */
static int ut_walk(rlock_cluster *cl, int slots_cmd, const char *text, size_t step) {
    unsigned char buf[48];
    size_t len = 0, off = 0, n = strlen(text);
    memset(&cl->walk, 0, sizeof cl->walk);
    cl->walk.visit = rlock__cluster_visit;
    cl->walk.user = cl;
    cl->slots_cmd = slots_cmd;
    cl->prim = -1;
    cl->full = cl->pending = 0;
    while (!cl->walk.done) {
        long used;
        size_t k = n - off < step ? n - off : step;
        if (k > sizeof buf - len) k = sizeof buf - len;
        memcpy(buf + len, text + off, k);
        len += k;
        off += k;
        used = rlock__walk_feed(&cl->walk, buf, len, sizeof buf);
        if (used < 0) return -1;
        memmove(buf, buf + used, len - (size_t)used);
        len -= (size_t)used;
        if (off == n && used == 0) break;
    }
    rlock__cluster_settle(cl, 0);
    return cl->walk.done && len == 0 ? 1 : 0;
}

static void test_cluster_map(void) {
    /* CLUSTER SHARDS under RESP3: a shard whose slots come before its nodes
     * (a replica listed first), one whose nodes come first, one whose
     * primary has failed (its slots stay unknown) */
    static const char shards[] =
        "*3\r\n"
        "%2\r\n$5\r\nslots\r\n*4\r\n:0\r\n:5460\r\n:10000\r\n:10001\r\n$5\r\nnodes\r\n*2\r\n"
        "%4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n:7001\r\n$4\r\nrole\r\n$7\r\nreplica\r\n"
        "$6\r\nhealth\r\n$6\r\nonline\r\n"
        "%5\r\n$2\r\nid\r\n$3\r\nabc\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n:7000\r\n"
        "$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
        "%2\r\n$5\r\nnodes\r\n*1\r\n%3\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n:7002\r\n"
        "$4\r\nrole\r\n$6\r\nmaster\r\n$5\r\nslots\r\n*2\r\n:5461\r\n:9999\r\n"
        "%2\r\n$5\r\nslots\r\n*2\r\n:12000\r\n:12001\r\n$5\r\nnodes\r\n*1\r\n%3\r\n$4\r\nport\r\n:7009\r\n"
        "$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$6\r\nfailed\r\n";
    /* CLUSTER SLOTS (RESP2): [start, end, [host, port, id], [replica ...]] */
    static const char slots[] =
        "*1\r\n*4\r\n:12000\r\n:12010\r\n*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$3\r\nid1\r\n"
        "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$3\r\nid2\r\n";
    static rlock_cluster cl;
    static const char *const seeds[1] = { "seed" };
    static const int seed_ports[1] = { 1 };
    size_t step;
    int deep;
    char nested[64] = "";
    char shards_in[sizeof shards + 8]; /* (+1 per map of 5 or more fields) */
#ifdef RLOCK_NO_WAITING
    {   /* no HELLO 3 (and no RESP3 reader) without waiting: the server
         * sends CLUSTER SHARDS' maps as flat arrays, "%N" as "*2N" */
        const char *p;
        size_t o = 0;
        for (p = shards; *p; p++) {
            if (*p == '%') { /* one digit in: 1..9 fields, 2..18 elements */
                int n = 2 * (p[1] - '0');
                shards_in[o++] = '*';
                if (n >= 10) shards_in[o++] = '1';
                shards_in[o++] = (char)('0' + n % 10);
                p++;
            }
            else shards_in[o++] = *p;
        }
        shards_in[o] = '\0';
    }
#else
    memcpy(shards_in, shards, sizeof shards);
#endif
    env_reset("cluster_map"); /* CFG: the fake clock and random source (bare metal has no other) */
    for (step = 1; step <= 48; step += 47) {
        CHECK_EQ_ST(rlock_cluster_init(&cl, seeds, seed_ports, 1, &CFG, ut_cl_connect, NULL), RLOCK_OK);
        CHECK_EQ_LL(ut_walk(&cl, 0, shards_in, step), 1);
        CHECK_EQ_LL(cl.n, 3); /* the seed, 7000 and 7002: not the replica, not the failed primary */
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 0)], 7000);
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 5460)], 7000);
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 10001)], 7000);
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 5461)], 7002);
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 9999)], 7002);
        CHECK_EQ_LL(cl.slot[12000], 0); /* no live primary: not known (the seed is asked) */
        CHECK_EQ_LL(cl.slot[10002], 0);
        CHECK_EQ_LL(ut_walk(&cl, 1, slots, step), 1);
        CHECK_EQ_LL(cl.port[rlock_cluster_primary(&cl, 12005)], 7003);
        CHECK_EQ_LL(cl.n, 4); /* the replica 7004 is not added */
        CHECK_EQ_LL(ut_walk(&cl, 1, "*1\r\n:x\r\n", step), -1);                /* malformed */
        CHECK_EQ_LL(ut_walk(&cl, 1, "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", step), -1); /* attributes: refused */
        rlock_cluster_close(&cl);
    }
    for (deep = 0; deep <= RLOCK_RESP_MAX_DEPTH; deep++) strcat(nested, "*1\r\n");
    strcat(nested, ":1\r\n");
    CHECK_EQ_LL(ut_walk(&cl, 1, nested, 48), -1); /* too deep */
    {   /* one value longer than the window cannot be read */
        char big[128];
        snprintf(big, sizeof big, "*1\r\n$60\r\n%060d\r\n", 0);
        CHECK_EQ_LL(ut_walk(&cl, 1, big, 48), -1);
    }
    {   /* more primaries than fit: noted, and the operation says so */
        char text[4096];
        size_t pos = 0;
        int i;
        CHECK_EQ_ST(rlock_cluster_init(&cl, seeds, seed_ports, 1, &CFG, ut_cl_connect, NULL), RLOCK_OK);
        pos += (size_t)snprintf(text + pos, sizeof text - pos, "*%d\r\n", RLOCK_CLUSTER_MAX_PRIMARIES);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++)
            pos += (size_t)snprintf(text + pos, sizeof text - pos, "*3\r\n:%d\r\n:%d\r\n*2\r\n$1\r\nh\r\n:%d\r\n", i, i,
                                    100 + i);
        CHECK_EQ_LL(ut_walk(&cl, 1, text, 48), 1);
        CHECK_EQ_LL(cl.full, 1);
        CHECK_EQ_LL(cl.n, RLOCK_CLUSTER_MAX_PRIMARIES);
        CHECK_EQ_ST(rlock__cluster_full(&cl), RLOCK_E_BADARG);
        CHECK(why_has(rlock_cluster_error(&cl), "RLOCK_CLUSTER_MAX_PRIMARIES"));
        rlock_cluster_close(&cl);
    }
    {   /* a MOVED while the map is being read (a failover: a node answered
         * before it heard of the promotion that the MOVED names): that answer,
         * when it comes, is older than the MOVED - the map is read again, from
         * the node the MOVED named. (Before, the older answer overwrote the slot
         * the MOVED had set, and the map named the dead primary.) */
        static const char *const two[2] = { "a", "b" };
        static const int two_ports[2] = { 7000, 7001 };
        rlock__event ev;
        CHECK_EQ_ST(rlock_cluster_init(&cl, two, two_ports, 2, &CFG, ut_cl_connect, NULL), RLOCK_OK);
        rlock__cluster_fetch_start(&cl, 0, 0);
        CHECK_EQ_LL(cl.fetch, RLOCK__MAP_BUSY);
        CHECK_EQ_LL(cl.from, 0);
        rlock__cluster_fetch_start(&cl, 1, 0); /* rlock__cluster_judge's, at a MOVED to node 1 */
        memset(&ev, 0, sizeof ev);
        ev.kind = RLOCK__EV_REPLY;
        ev.reply.v.type = RLOCK_RESP_ARRAY; /* node 0's answer */
        rlock__cluster_fetch_done(&cl.call, &cl.client[0], 0, &ev);
        CHECK_EQ_LL(cl.fetches, 1);
        CHECK_EQ_LL(cl.fetch, RLOCK__MAP_BUSY); /* read again */
        CHECK_EQ_LL(cl.from, 1);
        rlock_cluster_close(&cl);
        CHECK_EQ_LL(cl.fetch, RLOCK__MAP_NONE);
    }
    {   /* "MOVED 5 :7002": an empty host (the nodes' cluster-preferred-
         * endpoint-type unknown-endpoint) means the host of the node that
         * answered. (Before, the redirect was not parsed: RLOCK_E_MOVED.) */
        static const char *const two[2] = { "a", "b" };
        static const int two_ports[2] = { 7000, 7001 };
        rlock_lock lk;
        CHECK_EQ_ST(rlock_cluster_init(&cl, two, two_ports, 2, &CFG, ut_cl_connect, NULL), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &lk, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_OK);
        lk.client = &cl.client[1];
        strcpy(lk.client->nodes[0]->err, "MOVED 5 :7002");
        CHECK_EQ_ST(rlock__cluster_judge(&cl, &lk, RLOCK_E_MOVED, 0), RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(cl.n, 3);
        CHECK_STR(cl.host[2], "b");
        CHECK_EQ_LL(cl.port[2], 7002);
        CHECK_EQ_LL(rlock_cluster_primary(&cl, 5), 2);
        CHECK(lk.client == &cl.client[2]);
        strcpy(lk.client->nodes[0]->err, "ASK 6 :7000");
        CHECK_EQ_ST(rlock__cluster_judge(&cl, &lk, RLOCK_E_MOVED, 0), RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(cl.n, 4); /* b:7000, not a:7000 */
        CHECK_STR(cl.host[3], "b");
        CHECK(lk.client == &cl.client[3] && lk.asking);
        rlock_lock_destroy(&lk);
        rlock_cluster_close(&cl);
    }
    {   /* the non-blocking calls' argument checks */
        rlock_lock lk;
        uint32_t t = 7;
        CHECK_EQ_ST(rlock_cluster_acquire_begin(NULL, NULL, 1000, 0), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_cluster_extend_begin(NULL, NULL, 1000), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_cluster_release_begin(NULL, NULL), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_cluster_step(NULL, NULL), RLOCK_E_BADARG);
        CHECK_EQ_LL(rlock_cluster_interest(NULL, NULL, 0, &t), 0);
        CHECK_EQ_LL(t, 0);
        CHECK_EQ_ST(rlock_cluster_init(&cl, seeds, seed_ports, 1, &CFG, ut_cl_connect, NULL), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &lk, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_step(&cl, &lk), RLOCK_E_STATE);                 /* nothing begun */
        CHECK_EQ_ST(rlock_cluster_acquire_begin(&cl, &lk, 0, 0), RLOCK_E_BADARG);  /* ttl 0 */
        CHECK_EQ_ST(rlock_cluster_acquire_begin(&cl, &lk, 1000, -1), RLOCK_E_BADARG);
        CHECK(why_has(rlock_lock_error(&lk), "negative"));
        {   /* every refusal names what was wrong in the handle's text (a
             * handle never initialised included: its text was its garbage) */
            rlock_lock junk, plain;
            rlock_cluster dead;
            memset(&junk, 0xA5, sizeof junk);
            CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &junk, NULL, 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
            CHECK_STR(rlock_lock_error(&junk), "key is NULL");
            memset(&dead, 0, sizeof dead);
            memset(&junk, 0xA5, sizeof junk);
            CHECK_EQ_ST(rlock_cluster_lock_init(&dead, &junk, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
            CHECK_STR(rlock_lock_error(&junk), "cl is not initialised (rlock_cluster_init)");
            env_up(1, 1, RLOCK_KIND_SIMPLE); /* C: not the cluster's */
            CHECK_EQ_ST(rlock_lock_init(&plain, &C, "k", 1, RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_cluster_acquire_begin(&cl, &plain, 1000, 0), RLOCK_E_BADARG);
            CHECK_STR(rlock_lock_error(&plain), "lk is not one of cl's locks (rlock_cluster_lock_init)");
            CHECK_EQ_ST(rlock_cluster_acquire_begin(&dead, &lk, 1000, 0), RLOCK_E_BADARG);
            CHECK_STR(rlock_lock_error(&lk), "cl is not initialised (rlock_cluster_init)");
#ifndef RLOCK_NO_PRIMITIVES
            CHECK_EQ_ST(rlock_cluster_inspect_begin(&cl, &lk, NULL), RLOCK_E_BADARG);
            CHECK_STR(rlock_lock_error(&lk), "out is NULL");
#endif
        }
        CHECK_EQ_LL(rlock_cluster_interest(&cl, NULL, 0, &t), 0);
        CHECK_EQ_LL(t, UINT32_MAX); /* nothing to do */
        rlock_cluster_close(&cl);
    }
}
#endif /* RLOCK_NO_CLUSTER */

static void test_primitives_unit(void) {
    enum { S_SEM_ACQ = 10, S_WRITE_ACQ = 16, S_MULTI_ACQ = 19, S_MULTI_REL = 21, S_INSPECT = 22 };
    rlock_info info[2];
    const char *keys[3] = { "{j}:a", "{j}:bb", "{j}:c" }, *mixed[2] = { "a", "b" };
    size_t lens[3] = { 5, 6, 5 }, mlens[2] = { 1, 1 }, big[2] = { 200, 200 };
    static char bigkey[256];
    const char *bigs[2] = { bigkey, bigkey };
    env_reset("primitives");
    CHECK_EQ_LL(rlock_cluster_slot("123456789", 9), 0x31C3);       /* the Cluster spec's CRC16 test vector */
    CHECK_EQ_LL(rlock_cluster_slot("foo", 3), 12182);
    CHECK_EQ_LL(rlock_cluster_slot("{user1000}.following", 20), rlock_cluster_slot("{user1000}.followers", 20));
    CHECK_EQ_LL(rlock_cluster_slot("x{}y", 4), rlock__crc16((const unsigned char *)"x{}y", 4) & 16383u); /* empty tag: the whole key */
    CHECK_EQ_LL(rlock_cluster_slot("a{b", 3), rlock__crc16((const unsigned char *)"a{b", 3) & 16383u);   /* no '}': the whole key */
    CHECK_EQ_LL(rlock_cluster_slot(NULL, 3), 0);
    /* the inspect answer */
    {
        static const char ok1[] = "semaphore 1500 3 1 2 0 0 abcdef0123456789", ok2[] = "free -2 0 0 4 3 2 ";
        static const char *const bad[] = { "", "x", "simple 12", "simple a b c d e f", "averyveryverylongkind 1 1 1 1 1 1 x", "simple 1 1 1 1 1 x",
                                           " 1 1 1 1 1 x" };
        size_t i;
        CHECK(rlock__parse_info(&info[0], ok1, strlen(ok1)));
        CHECK(strcmp(info[0].kind, "semaphore") == 0 && info[0].pttl_ms == 1500 && info[0].holders == 3 &&
              info[0].holds == 1 && info[0].waiters == 2 && info[0].writer_waiting == 0 &&
              info[0].readers_turn == 0 && info[0].readers_waiting == 0 && strcmp(info[0].owner, "abcdef0123456789") == 0);
        CHECK(rlock__parse_info(&info[0], ok2, strlen(ok2)));
        CHECK(strcmp(info[0].kind, "free") == 0 && info[0].pttl_ms == -2 && info[0].waiters == 4 &&
              info[0].writer_waiting == 1 && info[0].readers_turn == 1 && info[0].readers_waiting == 2 &&
              info[0].owner[0] == '\0');
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
            CHECK_MSG(!rlock__parse_info(&info[0], bad[i], strlen(bad[i])), "'%s' parsed", bad[i]);
    }
    env_up(1, 1, RLOCK_KIND_SIMPLE);
    /* multi-lock arguments */
    memset(bigkey, 'k', sizeof bigkey);
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, keys, lens, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, keys, lens, RLOCK_MAX_MULTI + 1), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, NULL, lens, 2), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, bigs, big, 2), RLOCK_E_BADARG);
    CHECK(why_has(rlock_lock_error(&LK2), "RLOCK_MAX_KEY_LEN"));
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, mixed, mlens, 2), RLOCK_E_BADARG);
#ifdef RLOCK_NO_ERROR_TEXTS
    CHECK(why_has(rlock_lock_error(&LK2), "key 1 hashes to Cluster slot"));
#else
    CHECK_MSG(strcmp(rlock_lock_error(&LK2), "key 1 hashes to Cluster slot 3300, key 0 to 15495: give the keys one hash tag, ") == 0,
              "'%s'", rlock_lock_error(&LK2)); /* three numbers, cut at RLOCK_WHY_LEN */
#endif
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 0), RLOCK_E_BADARG);
    CHECK_EQ_ST(rlock_multi_init(&LK2, &C, keys, lens, 3), RLOCK_OK);
    CHECK_EQ_ST(rlock_inspect(&LK2, info, 2), RLOCK_E_BADARG); /* one key at a time */
    fk_add(&F[0], rlock_script_sha(S_MULTI_ACQ), GRANT);
    fk_add(&F[0], rlock_script_sha(S_MULTI_REL), ":1\r\n");
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_OK);
    CHECK(req_has(&F[0], 0, "$1\r\n3\r\n$5\r\n{j}:a\r\n$6\r\n{j}:bb\r\n$5\r\n{j}:c\r\n$32\r\n"));
    CHECK(req_has(&F[0], 0, "*9\r\n")); /* EVALSHA sha 3 k k k token ttl n: no fence */
    CHECK_EQ_ST(rlock_release(&LK2), RLOCK_OK);
    CHECK(req_has(&F[0], 1, "*15\r\n$7\r\nEVALSHA")); /* the release: + 3 queues + 3 deadline hashes */
    CHECK(req_has(&F[0], 1, "$1\r\n9\r\n$5\r\n{j}:a\r\n$6\r\n{j}:bb\r\n$5\r\n{j}:c\r\n$13\r\n{j}:a:waiters\r\n"));
    /* a semaphore sends its permits as ARGV[5] ... */
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 7), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_SEM_ACQ), "*2\r\n:0\r\n:100\r\n");
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_NOT_ACQUIRED);
    /* ... and the slot it asks for as ARGV[6]: -1 (any) on one node */
    CHECK(req_has(&F[0], 2, "$5\r\n10000\r\n$0\r\n\r\n$1\r\n0\r\n$1\r\n7\r\n$2\r\n-1\r\n"));
    /* an upgrade is refused with its own status, at once */
    CHECK_EQ_ST(rlock_lock_init(&LK2, &C, "rw", 2, RLOCK_KIND_WRITE), RLOCK_OK);
    fk_add(&F[0], rlock_script_sha(S_WRITE_ACQ), "-UPGRADE read lock held by this owner\r\n");
    CHECK_EQ_ST(rlock_acquire(&LK2, TTL, 5000), RLOCK_E_UPGRADE);
    CHECK(rlock_lock_state(&LK2) == RLOCK_STATE_IDLE);
    /* inspect reads the text answer into out[] */
    fk_add(&F[0], rlock_script_sha(S_INSPECT), "$36\r\nwrite 900 1 2 0 1 0 0123456789abcdef\r\n");
    CHECK_EQ_ST(rlock_inspect(&LK2, info, 2), RLOCK_OK);
    CHECK(info[0].st == RLOCK_OK && strcmp(info[0].kind, "write") == 0 && info[0].holds == 2 &&
          info[0].writer_waiting == 1 && strcmp(info[0].owner, "0123456789abcdef") == 0);
    fk_add(&F[0], rlock_script_sha(S_INSPECT), ":1\r\n"); /* not the text: the stream is not trusted */
    CHECK_EQ_ST(rlock_inspect(&LK2, info, 2), RLOCK_E_PROTOCOL);
    CHECK_EQ_ST(info[0].st, RLOCK_E_PROTOCOL);
    CHECK(why_is(rlock_node_error(&N[0]), "unexpected reply to inspect"));
    /* A semaphore or multi-lock handle whose script set lacks the
     * primitives' parts (not made by its init call) is refused before
     * anything is sent: nothing calls through their NULL pointers. */
    {
        int before = F[0].n_reqs;
        CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 7), RLOCK_OK);
        LK2.scripts = &rlock__set_lock;
        CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_E_STATE);
        LK2.kind = RLOCK_KIND_MULTI;
        CHECK_EQ_ST(rlock_acquire_begin(&LK2, TTL, 0), RLOCK_E_STATE);
        CHECK_EQ_ST(rlock_release_begin(&LK2), RLOCK_E_STATE);
        CHECK_EQ_LL(F[0].n_reqs, before);
        CHECK_EQ_ST(rlock_result(&LK2), RLOCK_E_STATE); /* no operation was started */
    }
    env_done();
}
#endif

#if !defined(RLOCK_NO_PRIMITIVES) && RLOCK_MAX_NODES >= 3
/* Does request #i of node f end with tail (its last arguments)? */
static int req_ends(const fake *f, int i, const char *tail) {
    size_t n = strlen(tail);
    return i < f->n_reqs && i < FK_LOG && f->req_len[i] >= n && memcmp(f->req[i] + f->req_len[i] - n, tail, n) == 0;
}
/* A Redlock semaphore whose attempt asked for a taken slot while refusing
 * nodes named free ones (1 + slot, third number of a refusal): it asks for
 * the lowest named slot at once (even a try-acquire), at most 3 times, and
 * not for the slot it just asked for. */
static void test_semaphore_hop(void) {
    enum { S_SEM_ACQ = 10 };
    static const char *const free_of[3] = { "*3\r\n:0\r\n:100\r\n:3\r\n", "*3\r\n:0\r\n:100\r\n:2\r\n", "*2\r\n:0\r\n:100\r\n" };
    size_t i;
    int k;
    /* 1. slot 0 taken; nodes name 2 and 1 free: the next attempt asks for 1 and gets it */
    env_reset("semaphore hop: to the lowest free slot named");
    env_nodes(3, 0);
    CHECK_EQ_ST(rlock_client_init(&C, N, 3, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 3), RLOCK_OK);
    LK2.slot = 0;
    for (i = 0; i < 3; i++) {
        fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), free_of[i]);
        fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), "*3\r\n:1\r\n:1\r\n:0\r\n");
    }
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_semaphore_slot(&LK2), 1);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_LL(F[i].n_reqs, 2);
        CHECK(req_ends(&F[i], 0, "$1\r\n3\r\n$1\r\n0\r\n")); /* permits 3, slot 0 */
        CHECK(req_ends(&F[i], 1, "$1\r\n3\r\n$1\r\n1\r\n")); /* slot 1 */
    }
    env_done();
    /* 2. the only free slot named is the one asked for: no second attempt */
    env_reset("semaphore hop: not to the slot asked for");
    env_nodes(3, 0);
    CHECK_EQ_ST(rlock_client_init(&C, N, 3, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 3), RLOCK_OK);
    LK2.slot = 1;
    for (i = 0; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), i == 1 ? free_of[1] : free_of[2]);
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_NOT_ACQUIRED);
    for (i = 0; i < 3; i++) CHECK_EQ_LL(F[i].n_reqs, 1);
    env_done();
    /* 3. refusals naming 1, 2, 1, 2: three hops (slots 1, 2, 1), then it stops */
    env_reset("semaphore hop: three at most");
    env_nodes(3, 0);
    CHECK_EQ_ST(rlock_client_init(&C, N, 3, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 3), RLOCK_OK);
    LK2.slot = 0;
    for (k = 0; k < 4; k++)
        for (i = 0; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), k % 2 ? free_of[0] : free_of[1]);
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_NOT_ACQUIRED);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_LL(F[i].n_reqs, 4);
        CHECK(req_ends(&F[i], 1, "$1\r\n1\r\n") && req_ends(&F[i], 2, "$1\r\n2\r\n") && req_ends(&F[i], 3, "$1\r\n1\r\n"));
    }
    env_done();
    /* 4. node 0 grants slot 0, the others name slot 1 free: node 0's grant
     * is cleaned up first, and the hop still goes out after that cleanup
     * round, past a try-acquire's wait */
    env_reset("semaphore hop: after a cleanup, past the wait");
    env_nodes(3, 0);
    CHECK_EQ_ST(rlock_client_init(&C, N, 3, &CFG), RLOCK_OK);
    CHECK_EQ_ST(rlock_semaphore_init(&LK2, &C, "s", 1, 3), RLOCK_OK);
    LK2.slot = 0;
    fk_add(&F[0], rlock_script_sha(S_SEM_ACQ), "*3\r\n:1\r\n:0\r\n:0\r\n");
    fk_add(&F[0], rlock_script_sha(S_SEM_ACQ + 2), ":1\r\n"); /* the cleanup */
    for (i = 1; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), free_of[1]);
    for (i = 0; i < 3; i++) fk_add(&F[i], rlock_script_sha(S_SEM_ACQ), "*3\r\n:1\r\n:1\r\n:0\r\n");
    CHECK_EQ_ST(rlock_try_acquire(&LK2, TTL), RLOCK_OK);
    CHECK_EQ_LL(rlock_semaphore_slot(&LK2), 1);
    CHECK_EQ_LL(F[0].n_reqs, 3);
    CHECK(req_ends(&F[0], 2, "$1\r\n3\r\n$1\r\n1\r\n")); /* slot 1 */
    for (i = 1; i < 3; i++) {
        CHECK_EQ_LL(F[i].n_reqs, 2);
        CHECK(req_ends(&F[i], 1, "$1\r\n3\r\n$1\r\n1\r\n"));
    }
    env_done();
}
#endif

int main(void) {
    test_fake_selftest();
#ifndef RLOCK_NO_PRIMITIVES
    test_primitives_unit();
#endif
#if !defined(RLOCK_NO_PRIMITIVES) && RLOCK_MAX_NODES >= 3
    test_semaphore_hop();
#endif
    test_parse_valid_values();
    test_parse_splits();
    test_parse_malformed();
    test_parse_fuzz();
#if !defined(RLOCK_NO_PRIMITIVES) && !defined(RLOCK_NO_CLUSTER)
    test_cluster_map();
#endif
    test_encode();
    test_narrow_division();
    test_error_words();
    test_aux_key();
    test_status_strings();
    test_scripts();
    test_bad_args();
    test_bad_args_oversized_auth();
#if RLOCK_MAX_NODES >= 4
    test_bad_args_every_public_function();
#endif
#if !defined(RLOCK_NO_EVAL_FALLBACK) && !defined(RLOCK_NO_REENTRANT)
    test_max_key();
#endif
    test_tx_floor();
    test_busy();
#if RLOCK__COMPACT
    test_compact_turns();
#endif
#if RLOCK_MAX_NODES >= 3
    test_round_tally();
#endif
    test_interest();
    test_result_no_io();
    test_wait_only_cost();
    test_wait_many();
    test_renew_outcome();
#if RLOCK_MAX_NODES >= 2
    test_badarg_texts();
#endif
#ifndef RLOCK_NO_FENCING
    test_max_key_fenced();
#endif
    test_random_fails();
    test_acquire_release_basic();
    test_plain_fast_path();
    test_refused();
    test_refused_then_granted();
    test_backoff_huge();
    test_huge_holder_pttl();
    test_wait_deadline();
    test_foreign_wrongtype();
#ifndef RLOCK_NO_EVAL_FALLBACK
    test_noscript();
#endif
    test_auth();
    test_redis_error();
    test_wrong_shape();
    test_out_of_range_integer();
    test_subscribe_wrong_channel();
    test_extra_bytes();
    test_bad_replies_to_acquire();
    test_chunking();
    test_io_errors();
    test_timeouts();
    test_unsent_timeout();
    test_slow_exchange();
    test_extend();
#ifndef RLOCK_NO_REENTRANT
    test_reentrant();
#endif
#if RLOCK_MAX_NODES >= 3
    test_three_nodes();
    test_release_held_mask();
#endif
    test_clock();
    test_clock_wrap();
    test_clock_stale_handle();
    test_client_connect();
    test_auth_reply_not_ok();
    test_ping_reply_unexpected();
    test_resp3_frames_on_lock();
    test_idle_probe_keeps_half_a_push();
#if RLOCK_MAX_NODES >= 3 && !RLOCK__COMPACT
    test_run_id_reply_unexpected();
#endif
#if RLOCK_MAX_NODES >= 3
    test_client_connect_same_server();
#endif
    test_no_connect_hook();
#ifndef RLOCK_NO_FENCING
    test_fencing();
#endif
    test_compiled_out();
    test_fault01_backoff_jitter();
    test_fault10_monotonic_clock();
#ifndef UNIT_SUITE
#define UNIT_SUITE "unit" /* tests/test_compact.c runs this file as "compact" */
#endif
    return check_summary(UNIT_SUITE);
}
