/* fuzz_lock.c - lock operations against fake Redis servers whose every move
 * comes from the fuzz input (FAULTS.md #4-#8, #16, #20-#22, #25).
 *
 * One input is a short session on one lock: 1 or 3 fake nodes, simple or
 * reentrant, optional AUTH, then up to 8 operations (acquire, extend,
 * release, an acquire cancelled midway, rlock_client_close), each driven
 * either by rlock_step() (non-blocking) or by the blocking call. The fake
 * transport takes from the input: connect results, how many bytes each
 * send()/recv() moves, would-blocks, errors, closes, "returns more than asked",
 * the reply to each request (granted, refused, foreign, integers, Redis
 * errors, NOSCRIPT, wrong shapes, malformed RESP, a partial reply then EOF,
 * silence), and how far the fake clock moves before each step.
 *
 * When the input runs out the fake goes quiet (every call would block) and
 * the clock jumps FK_DRY_JUMP ms per step, past every deadline: the op must
 * then end within FK_DRY_STEPS steps (blocking: within FK_DRY_CALLS hook calls).
 *
 * INVARIANTS (any violation aborts, so libFuzzer reports it)
 *  - every status returned is a valid rlock_status; begin returns WOULD_BLOCK
 *    or a final status; acquire never ends LOST/NOT_HELD, NOT_ACQUIRED only
 *    with wait 0 and TIMEOUT only with wait > 0;
 *  - acquire OK only if >= quorum nodes were sent, in this round (sent at or
 *    after the round's start, during this op), this lock's acquire script
 *    with its owner and ttl and got back a granted reply *2 :1 :n that was
 *    fully delivered; extend/release OK likewise with :1 (release of a
 *    reentrant lock: :n >= 0);
 *  - after acquire/extend OK: 0 < validity <= ttl - drift, and validity ends
 *    no later than (time the earliest counted request was sent) + ttl - drift;
 *  - every command rlock sends is well-formed RESP, names this key and the
 *    lock's owner, the script of the op in progress (acquire may send its
 *    release script as cleanup), the op's ttl, EVAL only right after a
 *    NOSCRIPT answer to the same script, AUTH with the configured credentials;
 *  - a reply is never read as the answer to another request: no command is
 *    sent on a connection while an earlier reply there is unread (the AUTH
 *    pipelined ahead of the first command excepted), and when an op ends no
 *    open connection holds an unread reply or a half-sent command;
 *  - connect() is never called on an open connection (leak), send()/recv()
 *    never on a closed one; after rlock_client_close every connection is closed;
 *  - an acquire that fails sends its release script to every node that
 *    granted during the op (or drops that connection trying);
 *  - a fresh simple acquire never reuses an earlier token.
 * ASan/UBSan catch memory errors and undefined behaviour on the way.
 *
 * Build with -DRLOCK_LIBFUZZER for libFuzzer; without it, main() replays the
 * files or directories named on the command line (gcc, no libFuzzer).
 */
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it asks for the POSIX APIs the replay main uses */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_FAIL(...) do { fprintf(stderr, "fuzz_lock: "); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); abort(); } while (0)
#define FL_CHECK(c, ...) do { if (!(c)) FL_FAIL(__VA_ARGS__); } while (0)

#define FK_NODES 3
#define FK_MAX_REQ 384
#define FK_IN 4096
#define FK_OUT 4096
#define FK_DRY_JUMP 1000000u /* ms per step once the input is spent: past every deadline */
#define FK_DRY_STEPS 8
#define FK_DRY_CALLS 200000
#define FK_MAX_OPS 8
#define FK_MAX_ARGS 16

/* ---- the input ------------------------------------------------------------ */
static const uint8_t *in_d;
static size_t in_n, in_i;
static int in_dry; /* the input is spent: the fake goes quiet */
static int fl_trace; /* replay with FUZZ_TRACE=1 in the environment: print each op and transport call */

static unsigned in_byte(void) {
    if (in_i < in_n) return in_d[in_i++];
    in_dry = 1;
    return 0;
}

/* ---- fake clock and hooks --------------------------------------------------- */
static uint64_t fk_now;
static int fk_random_can_fail;
static unsigned long long fk_rng;
static long fk_hook_calls; /* hook calls since the input ran dry (blocking calls) */
static int h_lost_calls;   /* on_lost calls since the last fresh grant */
static rlock_lock lk;

static uint64_t hook_now(void *u) { (void)u; return fk_now; }
static int hook_random(void *u, unsigned char *b, size_t n) {
    (void)u;
    if (fk_random_can_fail && in_byte() < 8) return -1;
    for (size_t i = 0; i < n; i++) {
        fk_rng = fk_rng * 6364136223846793005ULL + 1442695040888963407ULL;
        b[i] = (unsigned char)(fk_rng >> 56);
    }
    return 0;
}
static void dry_tick(void) {
    if (in_dry && ++fk_hook_calls > FK_DRY_CALLS)
        FL_FAIL("blocking call still running after %d hook calls with the input spent", FK_DRY_CALLS);
}
static void hook_lost(rlock_lock *l, void *u) {
    (void)u;
    FL_CHECK(l == &lk, "on_lost called with another lock");
    FL_CHECK(++h_lost_calls == 1, "on_lost called %d times for one grant", h_lost_calls);
}
static void hook_sleep(void *u, uint32_t ms) {
    (void)u;
    fk_now += ms;
    dry_tick();
}

/* ---- fake servers ------------------------------------------------------------ */
enum { FC_CLOSED = 0, FC_CONNECTING, FC_OPEN };
enum { RQ_AUTH = 1, RQ_PING, RQ_SCRIPT };
static uint64_t fk_hash(const unsigned char *p, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    while (n--) h = (h ^ *p++) * 1099511628211ULL;
    return h;
}
enum { RP_NONE = 0, RP_OK, RP_GRANTED, RP_REFUSED, RP_INT, RP_NOSCRIPT, RP_ERROR, RP_SHAPE, RP_BAD, RP_PARTIAL };

typedef struct fk_req {
    int conn;            /* connection number on its node */
    int op;              /* harness op number when it arrived */
    int kind, script, eval;
    uint64_t t_first;    /* clock when its first byte arrived */
    long long ttl;
    int reply;           /* RP_*; RP_NONE: never answered */
    long long val;       /* RP_INT value, RP_GRANTED count */
    long long fence;     /* RP_GRANTED fence counter */
    int nkeys;
    unsigned long long rep_end; /* stream offset where its reply ends */
    int delivered;       /* rlock has read all of its reply */
    uint64_t owner;      /* FNV-1a of the token / owner id it carried */
} fk_req;

typedef struct fk_node {
    int state, conn, hung, eof;
    unsigned char in[FK_IN];
    size_t in_len;
    uint64_t in_t_first;
    unsigned char out[FK_OUT];
    size_t out_len, out_off;
    unsigned long long out_base; /* stream offset of out[0] */
    int conn_first;      /* first request on the current connection */
    int next_undelivered;
    fk_req req[FK_MAX_REQ];
    int nreq;
    int needs_release;   /* granted during this acquire op, no release seen yet */
} fk_node;

static fk_node fk[FK_NODES];
static int fk_overflow; /* a fake's bookkeeping filled up: stop checking this input */

/* What the harness is doing, for the fakes to check requests against. */
static rlock_client cl;
static rlock_node nodes[FK_NODES];
static int h_nodes, h_kind, h_op_id, h_op;
static long long h_ttl, h_held_ttl;
static int h_was_held, h_cancelled;
static int h_noconnect; /* transports without connect(): they come connected */
static char h_tokens[FK_MAX_OPS][RLOCK_MAX_OWNER_LEN + 1]; /* simple tokens handed out so far */
static int h_ntok;
static const char *h_user, *h_pass;
static char h_key[RLOCK_MAX_KEY_LEN];
static size_t h_key_len;

static void fk_emit(fk_node *f, const char *s, size_t n) {
    if (f->out_off > 0) { /* keep only what rlock has not read */
        memmove(f->out, f->out + f->out_off, f->out_len - f->out_off);
        f->out_base += f->out_off;
        f->out_len -= f->out_off;
        f->out_off = 0;
    }
    if (n > FK_OUT - f->out_len) { fk_overflow = 1; return; }
    memcpy(f->out + f->out_len, s, n);
    f->out_len += n;
}
static void fk_emitz(fk_node *f, const char *s) { fk_emit(f, s, strlen(s)); }

/* Parse "<type>digits\r\n" at *p. 1 done, 0 incomplete, -1 malformed. */
static int fk_num(const unsigned char *b, size_t n, size_t *p, char type, long long *out) {
    size_t i = *p;
    long long v = 0;
    if (i >= n) return 0;
    if (b[i++] != type) return -1;
    if (i >= n) return 0;
    if (b[i] < '0' || b[i] > '9') return -1;
    while (i < n && b[i] >= '0' && b[i] <= '9') {
        if (v > 100000000) return -1;
        v = v * 10 + (b[i++] - '0');
    }
    if (i + 2 > n) return 0;
    if (b[i] != '\r' || b[i + 1] != '\n') return -1;
    *p = i + 2;
    *out = v;
    return 1;
}

/* A command: *N then N bulk strings. Returns bytes used, 0 incomplete, -1 bad. */
static long fk_cmd(const unsigned char *b, size_t n, const unsigned char **av, size_t *al, int *ac) {
    size_t p = 0;
    long long cnt, l;
    int r = fk_num(b, n, &p, '*', &cnt);
    if (r <= 0) return r;
    if (cnt < 1 || cnt > FK_MAX_ARGS) return -1;
    for (int i = 0; i < cnt; i++) {
        r = fk_num(b, n, &p, '$', &l);
        if (r <= 0) return r;
        if ((size_t)l + 2 > n - p) return l > FK_IN ? -1 : 0;
        if (b[p + (size_t)l] != '\r' || b[p + (size_t)l + 1] != '\n') return -1;
        av[i] = b + p;
        al[i] = (size_t)l;
        p += (size_t)l + 2;
    }
    *ac = (int)cnt;
    return (long)p;
}

static int fk_arg_is(const unsigned char *a, size_t n, const char *s) {
    return s && n == strlen(s) && memcmp(a, s, n) == 0; /* s NULL: a script this build left out */
}

static int script_base(void) { return h_kind == RLOCK_KIND_SIMPLE ? 0 : 3; }

static void fk_reply_script(fk_node *f, fk_req *r) {
    char s[96];
    unsigned c = in_byte();
    int acquire = r->script % 3 == 0;
    if (in_dry) { f->hung = 1; return; }
    switch (c % 16) {
    case 0: f->hung = 1; return;                                  /* silence */
    case 1: case 12: case 13: case 14: case 15: default:
        if (acquire) {
            long long holds = h_kind == RLOCK_KIND_SIMPLE ? 1 : 1 + (c >> 4) % 4;
            r->reply = RP_GRANTED; r->val = holds;
            /* like the scripts: a counter only when KEYS[4] (fencing) was sent */
            r->fence = r->nkeys < 4 ? 0 : 1000 + (long long)(c >> 4) * 3 + (long long)(r - f->req);
            if ((c >> 4) == 1) { /* the two-element form: no fence counter */
                r->fence = 0;
                snprintf(s, sizeof s, "*2\r\n:1\r\n:%lld\r\n", holds);
            }
            else snprintf(s, sizeof s, "*3\r\n:1\r\n:%lld\r\n:%lld\r\n", holds, r->fence);
        } else {
            r->reply = RP_INT; r->val = 1;
            snprintf(s, sizeof s, ":1\r\n");
        }
        break;
    case 2: case 3:
        if (acquire) {
            long long pttl = (c >> 4) == 15 ? -2 : (long long)(c >> 4) * 97;
            r->reply = RP_REFUSED; r->val = pttl;
            snprintf(s, sizeof s, "*2\r\n:0\r\n:%lld\r\n", pttl);
        } else {
            r->reply = RP_INT; r->val = (c >> 4) % 3 == 0 ? -1 : (long long)(c >> 4) % 4;
            snprintf(s, sizeof s, ":%lld\r\n", r->val);
        }
        break;
    case 4:
        if (acquire) { r->reply = RP_REFUSED; r->val = -1; snprintf(s, sizeof s, "*2\r\n:0\r\n:-1\r\n"); }
        else { r->reply = RP_INT; r->val = 0; snprintf(s, sizeof s, ":0\r\n"); }
        break;
    case 5: r->reply = RP_NOSCRIPT; snprintf(s, sizeof s, "-NOSCRIPT No matching script. Please use EVAL.\r\n"); break;
    case 6: r->reply = RP_ERROR; snprintf(s, sizeof s, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"); break;
    case 7: r->reply = RP_ERROR; snprintf(s, sizeof s, (c >> 4) & 1 ? "-NOAUTH Authentication required.\r\n" : "-NOPERM this user has no permissions\r\n"); break;
    case 8: r->reply = RP_ERROR; snprintf(s, sizeof s, (c >> 4) & 1 ? "-READONLY You can't write against a read only replica.\r\n" : "-OOM command not allowed\r\n"); break;
    case 9: {
        /* well-formed RESP, but not an answer this script can give */
        static const char *const acq_shapes[] = { ":1\r\n", "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
            "*2\r\n:2\r\n:1\r\n", "$-1\r\n", "*2\r\n$1\r\n1\r\n:1\r\n", "+OK\r\n", "*1\r\n:1\r\n",
            "*3\r\n:1\r\n:1\r\n$2\r\n1x\r\n" }; /* (a fence of digits as text is a grant's: the scripts answer GET's text) */
        static const char *const int_shapes[] = { "*2\r\n:1\r\n:1\r\n", "$1\r\n1\r\n", "+OK\r\n", "$-1\r\n",
            "*-1\r\n", "*0\r\n", "*1\r\n:1\r\n", "+1\r\n" };
        r->reply = RP_SHAPE;
        snprintf(s, sizeof s, "%s", (acquire ? acq_shapes : int_shapes)[(c >> 4) % 8]);
        break;
    }
    case 10: {
        static const char *const bad[] = { "$-2\r\n", "*4294967295\r\n", ":99999999999999999999\r\n", "?x\r\n",
            "+OK\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "$2\r\nabcd\r\n", ":1\r\r\n" };
        r->reply = RP_BAD; snprintf(s, sizeof s, "%s", bad[(c >> 4) % 8]);
        f->hung = 1; /* a confused server says nothing more */
        break;
    }
    case 11: /* part of a good reply, then the connection closes */
        snprintf(s, sizeof s, acquire ? "*2\r\n:1\r\n:1\r\n" : ":1\r\n");
        s[1 + (c >> 4) % (strlen(s) - 1)] = '\0';
        r->reply = RP_PARTIAL;
        fk_emitz(f, s);
        r->rep_end = ~0ULL;
        f->hung = 1; f->eof = 1;
        return;
    }
    if (r->reply == RP_NOSCRIPT && r->eval) { r->reply = RP_ERROR; snprintf(s, sizeof s, "-ERR no script\r\n"); }
    if (fl_trace) fprintf(stderr, "  node %d: script %d%s t=%llu -> %.*s\n", (int)(f - fk), r->script,
                          r->eval ? " (EVAL)" : "", (unsigned long long)r->t_first, (int)strcspn(s, "\r"), s);
    fk_emitz(f, s);
    r->rep_end = f->out_base + f->out_len;
}

/* A complete command arrived on f. */
static void fk_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac) {
    fk_req *r;
    int i;
    if (f->nreq == FK_MAX_REQ) { fk_overflow = 1; f->hung = 1; return; }
    /* Nothing may be sent while an earlier reply on this connection is
     * unread: that reply would be read as this command's answer. */
    for (i = f->conn_first; i < f->nreq; i++) {
        const fk_req *e = &f->req[i];
        FL_CHECK(e->kind == RQ_AUTH || (e->reply != RP_NONE && e->delivered),
                 "node %d: command sent while the reply to request %d is unread (stale reply)", ni, i);
    }
    r = &f->req[f->nreq++];
    memset(r, 0, sizeof *r);
    r->conn = f->conn;
    r->op = h_op_id;
    r->t_first = f->in_t_first;
    if (fk_arg_is(av[0], al[0], "AUTH")) {
        r->kind = RQ_AUTH;
        FL_CHECK(h_pass, "node %d: AUTH without a password configured", ni);
        FL_CHECK(ac == (h_user ? 3 : 2), "node %d: AUTH with %d arguments", ni, ac);
        if (h_user) FL_CHECK(fk_arg_is(av[1], al[1], h_user), "node %d: AUTH with the wrong user", ni);
        FL_CHECK(fk_arg_is(av[ac - 1], al[ac - 1], h_pass), "node %d: AUTH with the wrong password", ni);
        FL_CHECK(f->nreq - 1 == f->conn_first, "node %d: AUTH that is not first on its connection", ni);
        if (in_dry) { f->hung = 1; return; }
        if (f->hung) return;
        if (in_byte() % 8 == 0) { r->reply = RP_ERROR; fk_emitz(f, "-WRONGPASS invalid username-password pair or user is disabled\r\n"); }
        else { r->reply = RP_OK; fk_emitz(f, "+OK\r\n"); }
        r->rep_end = f->out_base + f->out_len;
        return;
    }
    if (fk_arg_is(av[0], al[0], "PING")) {
        r->kind = RQ_PING;
        if (!f->hung && !in_dry) { r->reply = RP_OK; fk_emitz(f, "+PONG\r\n"); r->rep_end = f->out_base + f->out_len; }
        return;
    }
    r->kind = RQ_SCRIPT;
    r->eval = fk_arg_is(av[0], al[0], "EVAL");
    FL_CHECK(r->eval || fk_arg_is(av[0], al[0], "EVALSHA"), "node %d: unexpected command %.*s", ni, (int)al[0], (const char *)av[0]);
    /* EVAL[SHA] script numkeys KEYS... ARGV...: KEYS[1] is the lock,
     * ARGV[1] the owner, ARGV[2] the ttl (the rest is the wait queue's). */
    FL_CHECK(ac >= 6, "node %d: script call with %d arguments", ni, ac);
    r->script = -1;
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++)
        if (fk_arg_is(av[1], al[1], r->eval ? rlock_script_text(i) : rlock_script_sha(i))) r->script = i;
    FL_CHECK(r->script >= 0, "node %d: unknown script", ni);
    FL_CHECK(al[2] == 1 && av[2][0] >= '1' && av[2][0] <= '9', "node %d: bad numkeys", ni);
    {
        int nk = av[2][0] - '0';
        r->nkeys = nk;
        long long t = 0;
        size_t j;
        const unsigned char *owner = av[3 + nk], *ttl = av[4 + nk];
        FL_CHECK(ac >= 5 + nk, "node %d: %d keys but %d arguments", ni, nk, ac);
        FL_CHECK(al[3] == h_key_len && memcmp(av[3], h_key, h_key_len) == 0, "node %d: wrong key", ni);
        FL_CHECK(fk_arg_is(owner, al[3 + nk], rlock_lock_token(&lk)), "node %d: owner is not the lock's token", ni);
        r->owner = fk_hash(owner, al[3 + nk]);
        FL_CHECK(al[4 + nk] > 0 && al[4 + nk] < 20, "node %d: bad ttl argument", ni);
        for (j = 0; j < al[4 + nk]; j++) {
            FL_CHECK(ttl[j] >= '0' && ttl[j] <= '9', "node %d: ttl is not a number", ni);
            t = t * 10 + (ttl[j] - '0');
        }
        r->ttl = t;
    }
    /* The script must be the op's: acquire may also clean up with release. */
    {
        int s = r->script - script_base();
        FL_CHECK(s >= 0 && s < 3, "node %d: script of the other lock kind", ni);
        if (h_op == 0) FL_CHECK(s == 0 || s == 2, "node %d: acquire sent script %d", ni, s);
        if (h_op == 1) FL_CHECK(s == 1, "node %d: extend sent script %d", ni, s);
        if (h_op == 2) FL_CHECK(s == 2, "node %d: release sent script %d", ni, s);
        if (h_op == 0 && s == 0) FL_CHECK(r->ttl == h_ttl, "node %d: acquire ttl %lld, op ttl %lld", ni, r->ttl, h_ttl);
        if (h_op == 0 && s == 2) FL_CHECK(r->ttl == h_ttl || r->ttl == h_held_ttl,
                                          "node %d: cleanup release ttl %lld", ni, r->ttl);
        if (h_op == 1) FL_CHECK(r->ttl == h_ttl, "node %d: extend ttl %lld, op ttl %lld", ni, r->ttl, h_ttl);
        if (h_op == 2) FL_CHECK(r->ttl == h_held_ttl, "node %d: release ttl %lld, held ttl %lld", ni, r->ttl, h_held_ttl);
        if (s == 2) f->needs_release = 0;
    }
    if (r->eval) { /* only as the fallback right after NOSCRIPT for this script */
        const fk_req *p = f->nreq >= 2 ? &f->req[f->nreq - 2] : NULL;
        FL_CHECK(p && p->conn == f->conn && p->kind == RQ_SCRIPT && !p->eval && p->script == r->script &&
                 p->reply == RP_NOSCRIPT, "node %d: EVAL without a NOSCRIPT just before", ni);
    }
    if (f->hung) return;
    fk_reply_script(f, r);
}

static void fk_mark_delivered(fk_node *f) {
    unsigned long long at = f->out_base + f->out_off;
    while (f->next_undelivered < f->nreq) {
        fk_req *r = &f->req[f->next_undelivered];
        if (r->conn != f->conn || r->reply == RP_NONE || r->rep_end > at) break;
        r->delivered = 1;
        if (r->reply == RP_GRANTED && h_op == 0) f->needs_release = 1;
        f->next_undelivered++;
    }
}

static void fk_close_conn(fk_node *f) {
    f->state = FC_CLOSED;
    f->in_len = 0;
    f->out_len = f->out_off = 0;
    f->needs_release = 0; /* rlock gave up on this connection: the release was attempted or is moot */
}

static int fk_connect(void *ctx) {
    fk_node *f = (fk_node *)ctx;
    unsigned c;
    if (fl_trace) fprintf(stderr, "  node %d: connect\n", (int)(f - fk));
    FL_CHECK(f->state != FC_OPEN, "node %ld: connect() on an open connection (leak)", (long)(f - fk));
    if (in_dry) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    c = in_byte() % 8;
    if (c == 0) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    if (c == 1) { f->state = FC_CLOSED; return RLOCK_IO_ERROR; }
    f->state = FC_OPEN;
    f->conn++;
    f->hung = f->eof = 0;
    f->in_len = 0;
    f->out_base += f->out_len;
    f->out_len = f->out_off = 0;
    f->conn_first = f->next_undelivered = f->nreq;
    return 1;
}

static void fk_close(void *ctx) {
    if (fl_trace) fprintf(stderr, "  node %d: close\n", (int)((fk_node *)ctx - fk));
    fk_close_conn((fk_node *)ctx);
}

static long fk_send(void *ctx, const unsigned char *buf, size_t len) {
    fk_node *f = (fk_node *)ctx;
    int ni = (int)(f - fk);
    unsigned c;
    size_t k;
    if (fl_trace) fprintf(stderr, "  node %d: send %zu bytes\n", ni, len);
    FL_CHECK(f->state == FC_OPEN, "node %d: send() on a connection that is not open", ni);
    FL_CHECK(len > 0, "node %d: send() of 0 bytes", ni);
    if (in_dry) return RLOCK_IO_WOULD_BLOCK;
    c = in_byte();
    switch (c % 16) {
    case 0: case 1: return RLOCK_IO_WOULD_BLOCK;
    case 2: return RLOCK_IO_ERROR;
    case 3: return (long)len + 1; /* a broken transport: rlock must not trust it */
    case 4: case 5: case 6: k = 1 + (c >> 4) % 8; break;
    case 7: k = 1 + (c >> 4) * 16; break;
    default: k = len; break;
    }
    if (k > len) k = len;
    if (k > FK_IN - f->in_len) { fk_overflow = 1; return RLOCK_IO_ERROR; }
    if (f->in_len == 0) f->in_t_first = fk_now;
    memcpy(f->in + f->in_len, buf, k);
    f->in_len += k;
    for (;;) {
        const unsigned char *av[FK_MAX_ARGS];
        size_t al[FK_MAX_ARGS];
        int ac = 0;
        long used = fk_cmd(f->in, f->in_len, av, al, &ac);
        FL_CHECK(used >= 0, "node %d: rlock sent malformed RESP: %.*s", ni, (int)f->in_len, (const char *)f->in);
        if (used == 0) break;
        fk_request(f, ni, av, al, ac);
        memmove(f->in, f->in + used, f->in_len - (size_t)used);
        f->in_len -= (size_t)used;
        f->in_t_first = fk_now;
    }
    return (long)k;
}

static long fk_recv(void *ctx, unsigned char *buf, size_t len) {
    fk_node *f = (fk_node *)ctx;
    int ni = (int)(f - fk);
    unsigned c;
    size_t k, avail;
    if (fl_trace) fprintf(stderr, "  node %d: recv\n", ni);
    FL_CHECK(f->state == FC_OPEN, "node %d: recv() on a connection that is not open", ni);
    FL_CHECK(len > 0, "node %d: recv() into 0 bytes", ni);
    if (in_dry) return RLOCK_IO_WOULD_BLOCK;
    avail = f->out_len - f->out_off;
    c = in_byte();
    switch (c % 16) {
    case 0: return RLOCK_IO_WOULD_BLOCK;
    case 1: return RLOCK_IO_ERROR;
    case 2: return RLOCK_IO_CLOSED;
    case 3: return (long)len + 1; /* a broken transport; nothing written */
    case 4: case 5: case 6: k = 1 + (c >> 4) % 4; break;
    default: k = avail; break;
    }
    if (avail == 0) return f->eof ? RLOCK_IO_CLOSED : RLOCK_IO_WOULD_BLOCK;
    if (k > avail) k = avail;
    if (k > len) k = len;
    memcpy(buf, f->out + f->out_off, k);
    f->out_off += k;
    fk_mark_delivered(f);
    return (long)k;
}

static int fk_wait(void *ctx, int want, uint32_t timeout_ms) {
    fk_node *f = (fk_node *)ctx;
    unsigned c;
    FL_CHECK(want > 0 && (want & ~(RLOCK_WANT_READ | RLOCK_WANT_WRITE)) == 0, "wait() for %d", want);
    if (in_dry) { fk_now += timeout_ms ? timeout_ms : 1; dry_tick(); return 0; } /* quiet: recv would block */
    if ((want & RLOCK_WANT_READ) && f->state == FC_OPEN && (f->out_off < f->out_len || f->eof)) return 1;
    c = in_byte();
    if (c & 1) return 1;
    fk_now += (c >> 1) < timeout_ms ? (c >> 1) : timeout_ms;
    return 0;
}

/* ---- the harness ------------------------------------------------------------ */
static void check_status(rlock_status st, const char *where) {
    FL_CHECK((int)st >= 0 && (int)st < (int)RLOCK_STATUS_COUNT, "%s returned %d, not a status", where, (int)st);
}

static uint32_t h_drift_permille; /* what the client was given; 0 means the default, 10 */
static long long drift_of(long long ttl) {
    return ttl * (long long)(h_drift_permille ? h_drift_permille : 10) / 1000 + 2;
}

/* Count nodes whose answer in the final round of this op was what `ok` says. */
/* What count_votes saw: the largest fence among counted grants, the nodes
 * that said yes, and the nodes that said "not ours" but never granted us. */
static long long h_max_fence;
static unsigned h_vote_mask, h_held_mask;
static int h_neutral;

/* Count the nodes whose last delivered answer to `script` in the final round
 * of this op (sent during this op, at or after lk.op.round.start) was yes. */
static int count_votes(int script, int want_granted, uint64_t *first_sent) {
    int votes = 0;
    *first_sent = UINT64_MAX;
    h_max_fence = 0;
    h_vote_mask = 0;
    h_neutral = 0;
    for (int n = 0; n < h_nodes; n++) {
        const fk_node *f = &fk[n];
        for (int i = f->nreq - 1; i >= 0; i--) {
            const fk_req *r = &f->req[i];
            int yes;
            /* The final round's start is private (no public call says
             * when an op's last round began), and only it tells this op's
             * final answers from its earlier rounds': look inside. The
             * start is the clock cut to 32 bits (rlock__ms): compare the
             * same way, or on a clock past 2^32 every request reads as sent
             * after it and an earlier round's grant gets counted. */
            if (r->op != h_op_id || RLOCK__MS_BEFORE(r->t_first, lk.op.round.start)) break;
            /* An acquire's cleanup (a release sent during it) undid what
             * the node granted before it, and a retry after a cleanup
             * carries a new token (owner id): with a clock that did not
             * move, times alone cannot tell an earlier round from the last. */
            if (want_granted && r->kind == RQ_SCRIPT && r->script == script + 2) break;
            if (want_granted && r->kind == RQ_SCRIPT && r->owner != fk_hash((const unsigned char *)rlock_lock_token(&lk),
                                                                            strlen(rlock_lock_token(&lk)))) break;
            if (r->kind != RQ_SCRIPT || r->script != script || !r->delivered) continue;
            if (want_granted) yes = r->reply == RP_GRANTED;
            else if (script % 3 == 2 && h_kind == RLOCK_KIND_REENTRANT) yes = r->reply == RP_INT && r->val >= 0;
            else yes = r->reply == RP_INT && r->val == 1;
            if (yes) {
                votes++;
                h_vote_mask |= 1u << n;
                if (want_granted && r->fence > h_max_fence) h_max_fence = r->fence;
                if (r->t_first < *first_sent) *first_sent = r->t_first;
            } else if (r->reply == RP_INT && !(h_held_mask & (1u << n))) {
                h_neutral++;
            }
            break; /* the latest answer (EVAL after NOSCRIPT) is the one that counts */
        }
    }
    return votes;
}

static int popcount(unsigned m) { int k = 0; for (; m; m &= m - 1) k++; return k; }

static void check_validity(long long ttl, uint64_t first_sent) {
    long long v = rlock_validity_ms(&lk), drift = drift_of(ttl);
    FL_CHECK(rlock_lock_state(&lk) == RLOCK_STATE_HELD, "OK but the lock is not held");
    FL_CHECK(v > 0, "OK with no validity left");
    FL_CHECK(v <= ttl - drift, "validity %lld > ttl %lld - drift %lld", v, ttl, drift);
    FL_CHECK(fk_now + (uint64_t)v <= first_sent + (uint64_t)(ttl - drift),
             "validity ends at %llu, after the first request was sent at %llu + ttl - drift %lld",
             (unsigned long long)(fk_now + (uint64_t)v), (unsigned long long)first_sent, ttl - drift);
}

static void check_end_of_op(rlock_status st, int op, long long wait) {
    int cancelled = h_cancelled;
    check_status(st, "op");
    FL_CHECK(st != RLOCK_WOULD_BLOCK, "op ended WOULD_BLOCK");
    for (int n = 0; n < h_nodes; n++) {
        fk_node *f = &fk[n];
        FL_CHECK(rlock_node_wants(&nodes[n]) == 0, "node %d still wants I/O after the op", n);
        if (f->state == FC_OPEN) {
            FL_CHECK(f->in_len == 0, "node %d: connection kept with a half-sent command", n);
            FL_CHECK(f->out_off == f->out_len && !f->hung,
                     "node %d: connection kept with an unread or missing reply", n);
            for (int i = f->conn_first; i < f->nreq; i++)
                FL_CHECK(f->req[i].delivered, "node %d: connection kept while request %d is unanswered", n, i);
        }
    }
    if (op == 0) {
        FL_CHECK(st != RLOCK_LOST && st != RLOCK_NOT_HELD, "acquire returned %s", rlock_status_str(st));
        if (st == RLOCK_NOT_ACQUIRED) FL_CHECK(wait == 0, "NOT_ACQUIRED after waiting %lld", wait);
        if (st == RLOCK_TIMEOUT) FL_CHECK(wait > 0, "TIMEOUT from a try-once acquire");
        if (st == RLOCK_OK && !cancelled) {
            uint64_t first;
            int votes = count_votes(script_base(), 1, &first);
            FL_CHECK((size_t)votes >= rlock_client_quorum(&cl), "acquire OK with %d granted replies, quorum %zu",
                     votes, rlock_client_quorum(&cl));
            check_validity(h_ttl, first);
            h_held_mask = h_vote_mask;
            FL_CHECK(rlock_hold_count(&lk) >= 1, "acquired with hold count %lld", rlock_hold_count(&lk));
            if (!h_was_held) {
                FL_CHECK(rlock_fence_token(&lk) == h_max_fence,
                         "fence token %lld, largest granted %lld", rlock_fence_token(&lk), h_max_fence);
                h_lost_calls = 0;
            }
            h_held_ttl = h_ttl;
        } else if (!cancelled) {
            for (int n = 0; n < h_nodes; n++)
                FL_CHECK(!fk[n].needs_release, "node %d granted, the acquire failed (%s), and no release was sent",
                         n, rlock_status_str(st));
        }
    } else if (op == 1) {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "extend returned %s", rlock_status_str(st));
        if (st == RLOCK_OK) {
            uint64_t first;
            int votes = count_votes(script_base() + 1, 0, &first);
            FL_CHECK((size_t)votes >= rlock_client_quorum(&cl), "extend OK with %d votes", votes);
            check_validity(h_ttl, first);
            h_held_mask = h_vote_mask;
            h_held_ttl = h_ttl;
        }
    } else {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "release returned %s", rlock_status_str(st));
        if (st == RLOCK_OK) {
            uint64_t first;
            int votes = count_votes(script_base() + 2, 0, &first), q = (int)rlock_client_quorum(&cl);
            /* released where we held it, and "not ours" only from nodes that
             * never granted this hold: the rule rlock__release_round_done states */
            FL_CHECK(votes >= q || (popcount(h_held_mask) >= q && votes > 0 && votes + h_neutral >= q),
                     "release OK with %d votes, %d neutral, %d nodes held", votes, h_neutral, popcount(h_held_mask));
        }
    }
    for (int n = 0; n < h_nodes; n++) fk[n].needs_release = 0;
}

static uint64_t clock_step(unsigned b) {
    switch (b >> 6) {
    case 0: return 0;
    case 1: return b & 63;
    case 2: return (uint64_t)(b & 63) * 8;
    default: return (uint64_t)(b & 63) * 256;
    }
}

/* Drive a started op with rlock_step(); cancel after `cancel_at` steps if >= 0. */
static rlock_status run_steps(rlock_status st, int cancel_at) {
    int dry_steps = 0, steps = 0;
    while (st == RLOCK_WOULD_BLOCK) {
        if (cancel_at >= 0 && steps == cancel_at) { rlock_cancel(&lk); h_cancelled = 1; return RLOCK_OK; }
        if (in_dry || fk_overflow) {
            FL_CHECK(++dry_steps <= FK_DRY_STEPS, "op still running %d steps after every deadline passed",
                     FK_DRY_STEPS);
            fk_now += FK_DRY_JUMP;
        } else {
            fk_now += clock_step(in_byte());
        }
        st = rlock_step(&lk);
        check_status(st, "rlock_step");
        (void)rlock_next_timeout_ms(&lk);
        steps++;
    }
    return st;
}

static const long long ttls[16] = { 1, 5, 10, 20, 50, 100, 200, 500, 1000, 3000, 10000, 30000,
                                    60000, RLOCK_MAX_TTL_MS, 0, -5 };

static void run_op(unsigned o) {
    int kind = o % 8, blocking = (o >> 3) & 1;
    rlock_status st;
    long long wait = 0;
    h_op_id++;
    h_was_held = rlock_lock_state(&lk) == RLOCK_STATE_HELD; /* held with validity left: acquire re-enters */
    if (kind == 7) {
        rlock_client_close(&cl);
        for (int n = 0; n < h_nodes; n++)
            FL_CHECK(fk[n].state == FC_CLOSED || (h_noconnect && fk[n].nreq == 0),
                     "node %d still open after rlock_client_close", n);
        return;
    }
    fk_hook_calls = 0;
    h_cancelled = 0;
    if (kind == 2) { /* rlock_renew_poll until it stops asking, the clock moving meanwhile */
        uint32_t next = 0;
        int dry_steps = 0, sent_before = 0, sent_after = 0;
        h_op = 1;
        /* Renewals extend to the lock's own ttl (its last grant's or
         * extend's, cancelled ones included): private, and the harness's own
         * bookkeeping would have to re-derive it - look inside. */
        h_ttl = lk.ttl_ms;
        for (int n = 0; n < h_nodes; n++) sent_before += fk[n].nreq;
        fk_now += clock_step(in_byte());
        st = rlock_renew_poll(&lk, &next);
        check_status(st, "rlock_renew_poll");
        while (st == RLOCK_WOULD_BLOCK) {
            if (in_dry || fk_overflow) {
                FL_CHECK(++dry_steps <= FK_DRY_STEPS, "renewal still running %d polls after every deadline passed",
                         FK_DRY_STEPS);
                fk_now += FK_DRY_JUMP;
            } else {
                fk_now += clock_step(in_byte());
            }
            st = rlock_renew_poll(&lk, &next);
            check_status(st, "rlock_renew_poll");
        }
        for (int n = 0; n < h_nodes; n++) sent_after += fk[n].nreq;
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "renew returned %s", rlock_status_str(st));
        /* OK means renewed, or nothing due: judge it as an extend only if one went out */
        check_end_of_op(sent_after > sent_before ? st : RLOCK_E_STATE, 1, 0);
        if (st == RLOCK_LOST && h_was_held) FL_CHECK(h_lost_calls == 1, "renewal found the lock lost without on_lost");
    } else if (kind <= 1 || kind == 6) {
        unsigned w;
        h_op = 0;
        h_ttl = ttls[in_byte() % 16];
        w = in_byte();
        wait = (w & 3) == 0 ? 0 : (long long)(w >> 2) * 16;
        if (blocking && kind != 6) st = rlock_acquire(&lk, h_ttl, wait);
        else {
            st = rlock_acquire_begin(&lk, h_ttl, wait);
            check_status(st, "rlock_acquire_begin");
            st = run_steps(st, kind == 6 ? (int)(in_byte() % 8) : -1);
        }
        check_end_of_op(st, 0, wait);
        if (h_kind == RLOCK_KIND_SIMPLE && !h_was_held && st == RLOCK_OK && !h_cancelled) {
            for (int i = 0; i < h_ntok; i++)
                FL_CHECK(strcmp(h_tokens[i], rlock_lock_token(&lk)) != 0, "a fresh acquire reused token %s", h_tokens[i]);
            if (h_ntok < FK_MAX_OPS) snprintf(h_tokens[h_ntok++], sizeof h_tokens[0], "%s", rlock_lock_token(&lk));
        }
    } else if (kind <= 4) {
        h_op = 1;
        h_ttl = ttls[in_byte() % 16];
        if (blocking) st = rlock_extend(&lk, h_ttl);
        else {
            st = rlock_extend_begin(&lk, h_ttl);
            check_status(st, "rlock_extend_begin");
            st = run_steps(st, -1);
        }
        check_end_of_op(st, 1, 0);
    } else {
        h_op = 2;
        if (blocking) st = rlock_release(&lk);
        else {
            st = rlock_release_begin(&lk);
            check_status(st, "rlock_release_begin");
            st = run_steps(st, -1);
        }
        check_end_of_op(st, 2, 0);
    }
    if (fl_trace)
        fprintf(stderr, "op %d: %s%s -> %s (state %d, votes %zu, t=%llu)\n", h_op_id,
                h_op == 0 ? (kind == 6 ? "acquire+cancel" : "acquire") : h_op == 1 ? (kind == 2 ? "renew" : "extend") : "release",
                blocking ? " (blocking)" : "", rlock_status_str(st), (int)rlock_lock_state(&lk),
                rlock_last_votes(&lk), (unsigned long long)fk_now);
    h_op = -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint64_t bases[4] = { 0, 1000, 1000000000000ULL, 1ULL << 62 };
    static const uint32_t timeouts[4] = { 0, 1, 20, 100 };
    static const uint32_t drifts[4] = { 0, 0, 1, 500 };
    static const uint32_t bmin[4] = { 0, 1, 5, 200 }, bmax[4] = { 0, 1, 50, 100 };
    rlock_config cfg;
    rlock_transport tr;
    unsigned b0, b1, b2;
    int ops;
    if (size < 4) return 0;
    in_d = data; in_n = size; in_i = 0; in_dry = 0;
    b0 = in_byte(); b1 = in_byte(); b2 = in_byte();
    memset(fk, 0, sizeof fk);
    fk_overflow = 0;
    fk_rng = 0x1234567ULL;
    fk_random_can_fail = 0;
    h_nodes = (b0 & 1) && RLOCK_MAX_NODES >= 3 ? 3 : 1; /* (built smaller: what the build has) */
    h_noconnect = (b0 & 0x20) != 0;
    h_kind = (b0 & 2) && RLOCK__HAS_REENTRANT ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE;
    h_pass = (b0 & 4) ? "s3cret pass" : NULL;
    h_user = (b0 & 4) && (b0 & 8) ? "fuzzer" : NULL;
    fk_now = bases[(b0 >> 6) & 3];
    h_op = -1; h_op_id = 0; h_held_ttl = 0; h_ntok = 0; h_cancelled = 0; h_lost_calls = 0; h_held_mask = 0;

    rlock_config_init(&cfg);
    cfg.node_timeout_ms = timeouts[b1 & 3];
    cfg.drift_permille = drifts[(b1 >> 2) & 3];
    h_drift_permille = cfg.drift_permille;
    cfg.max_attempts = (b1 >> 4) & 3;
    cfg.backoff_min_ms = bmin[b2 & 3];
    cfg.backoff_max_ms = bmax[(b2 >> 2) & 3];
    cfg.owner = (b2 & 0x10) ? "fuzz-owner" : NULL;
    cfg.now_ms = hook_now;
    cfg.random_bytes = hook_random;
    cfg.sleep_ms = hook_sleep;
    cfg.on_lost = hook_lost;
    cfg.fencing = (b2 & 0x80) != 0 && RLOCK__HAS_FENCING;
    /* The model server answers scripts only; the plain SET NX PX fast path
     * is covered by test_unit (test_plain_fast_path) and the Redis suites. */
    cfg.scripts_only = 1;
    for (int n = 0; n < h_nodes; n++) {
        memset(&tr, 0, sizeof tr);
        tr.ctx = &fk[n];
        tr.send = fk_send;
        tr.recv = fk_recv;
        tr.connect = (b0 & 0x20) ? NULL : fk_connect; /* no hook: the caller's connection is already up */
        tr.close = fk_close;
        tr.wait = fk_wait;
        if (!tr.connect) fk[n].state = FC_OPEN;
        FL_CHECK(rlock_node_init(&nodes[n], &tr) == RLOCK_OK, "node init");
        nodes[n].username = h_user;
        nodes[n].password = h_pass;
    }
    FL_CHECK(rlock_client_init(&cl, nodes, (size_t)h_nodes, &cfg) == RLOCK_OK, "client init");
    h_key_len = (b2 & 0x20) ? RLOCK_MAX_KEY_LEN : 7;
    memset(h_key, 'k', h_key_len);
    memcpy(h_key, "fz:lock", 7);
    FL_CHECK(rlock_lock_init(&lk, &cl, h_key, h_key_len, (rlock_kind)h_kind) == RLOCK_OK, "lock init");
    fk_random_can_fail = (b2 & 0x40) != 0;

    for (ops = 0; ops < FK_MAX_OPS && !in_dry && !fk_overflow; ops++) run_op(in_byte());

    rlock_lock_destroy(&lk);
    rlock_client_close(&cl);
    if (!fk_overflow)
        for (int n = 0; n < h_nodes; n++)
            FL_CHECK(fk[n].state == FC_CLOSED || (h_noconnect && fk[n].nreq == 0), "node %d left open at the end", n);
    return 0;
}

#ifndef RLOCK_LIBFUZZER
#include "replay.h"
int main(int argc, char **argv) {
    fl_trace = getenv("FUZZ_TRACE") != NULL;
    return fuzz_replay_main("fuzz_lock", argc, argv);
}
#endif
