/* fake.h - the fake Redis servers, fake clock and oracle helpers that
 * fuzz_lock.c (one lock) and fuzz_locks.c (2-4 locks on shared connections)
 * both use. Included once, after rlock.h, by each harness, which defines
 * first:
 *   FK_NAME     its name, for failure messages ("fuzz_lock")
 *   FK_MAX_REQ  requests a fake node records per input
 * and, after including this, the functions declared under HARNESS below:
 *   fk_request  a complete command arrived (fk_accept parses the stream
 *               and hands each command over): check it and record it - the
 *               records differ, fuzz_locks' naming which lock sent it -
 *               through fk_new_request and fk_parse_script, then answer it
 *               (fk_reply_script);
 *   fk_granted  a grant to lock r->lock was read by rlock (cleanup bookkeeping).
 * The transport's send()/recv() are each harness's own (their input bytes
 * mean different things: their seed corpora were made for them); they end
 * in fk_accept and fk_deliver.
 *
 * The fake's request records: one per command, in arrival order; a script
 * call's names its lock (fuzz_lock: 0; -1 for AUTH/PING) and the op of that
 * lock in progress, and its answer (reply kind, value, where in the stream
 * it ends, whether rlock has read all of it). */
#ifndef RLOCK_FUZZ_FAKE_H
#define RLOCK_FUZZ_FAKE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_FAIL(...) do { fprintf(stderr, FK_NAME ": "); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); abort(); } while (0)
#define FL_CHECK(c, ...) do { if (!(c)) FL_FAIL(__VA_ARGS__); } while (0)

#define FK_NODES 3
#define FK_IN 4096
#define FK_OUT 4096
#define FK_DRY_JUMP 1000000u /* ms per step once the input is spent: past every deadline */
#define FK_MAX_ARGS 16

/* ---- the input ------------------------------------------------------------ */
static const uint8_t *in_d;
static size_t in_n, in_i;
static int in_dry;   /* the input is spent: the fake goes quiet */
static int fl_trace; /* replay with FUZZ_TRACE=1 in the environment: print each call */

static unsigned in_byte(void) {
    if (in_i < in_n) return in_d[in_i++];
    in_dry = 1;
    return 0;
}

/* ---- fake clock and hooks --------------------------------------------------- */
static uint64_t fk_now;
static int fk_random_can_fail;
static unsigned long long fk_rng;

static uint64_t fk_now_last;
static long fk_now_same; /* clock reads since it last moved */
/* A blocking call that reads a clock that does not move, over and over,
 * spins (with a real clock: a busy loop until its time runs out). */
static uint64_t hook_now(void *u) {
    (void)u;
    if (fk_now != fk_now_last) { fk_now_last = fk_now; fk_now_same = 0; }
    else FL_CHECK(++fk_now_same < 1000000, "the clock read %ld times without moving: a busy loop", fk_now_same);
    return fk_now;
}
/* Blocking calls: once the input is spent, a call must end within
 * FK_DRY_CALLS sleep/wait hook calls (the harness zeroes fk_hook_calls
 * before each). */
#define FK_DRY_CALLS 200000
static long fk_hook_calls;
static void dry_tick(void) {
    if (in_dry && ++fk_hook_calls > FK_DRY_CALLS)
        FL_FAIL("blocking call still running after %d hook calls with the input spent", FK_DRY_CALLS);
}
static void hook_sleep(void *u, uint32_t ms) {
    (void)u;
    fk_now += ms;
    dry_tick();
}
static int hook_random(void *u, unsigned char *b, size_t n) {
    (void)u;
    if (fk_random_can_fail && in_byte() < 8) return -1;
    for (size_t i = 0; i < n; i++) {
        fk_rng = fk_rng * 6364136223846793005ULL + 1442695040888963407ULL;
        b[i] = (unsigned char)(fk_rng >> 56);
    }
    return 0;
}

/* ---- fake servers ------------------------------------------------------------ */
enum { FC_CLOSED = 0, FC_CONNECTING, FC_OPEN };
enum { RQ_AUTH = 1, RQ_PING, RQ_OTHER, RQ_SCRIPT };
enum { RP_NONE = 0, RP_OK, RP_GRANTED, RP_REFUSED, RP_INT, RP_NOSCRIPT, RP_ERROR, RP_SHAPE, RP_BAD, RP_PARTIAL };

static uint64_t fk_hash(const unsigned char *p, size_t n) { /* FNV-1a */
    uint64_t h = 14695981039346656037ULL;
    while (n--) h = (h ^ *p++) * 1099511628211ULL;
    return h;
}
static uint64_t fk_hashz(const char *s) { return fk_hash((const unsigned char *)s, strlen(s)); }

typedef struct fk_req {
    int conn;            /* connection number on its node */
    int lock;            /* the lock a script call names (-1: not a script) */
    int op;              /* that lock's op id when it arrived (0: none running) */
    int kind, script, eval; /* eval: the script's text came with it (EVAL, or FCALL right after its FUNCTION LOAD) */
    int fcall;           /* FCALL (RQ_SCRIPT); RQ_OTHER: 1 CLIENT SETNAME, 2 FUNCTION LOAD of `script`'s library */
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
    int gen;             /* connects and closes so far: a change means the connection went */
    int stall;           /* sends still to refuse (would block) before the input is read again */
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
    unsigned needs_release; /* locks whose acquire in progress was granted here, no release seen yet */
} fk_node;

static fk_node fk[FK_NODES];
static int fk_overflow; /* a fake's bookkeeping filled up: stop checking this input */
static rlock_client cl;
static rlock_node nodes[FK_NODES];
static int h_kind, h_nodes;
static const char *h_user, *h_pass;
/* A harness's own config choices (fuzz_locks: waiting), applied last by
 * fk_client_init; NULL: none. */
static void (*fk_cfg_more)(rlock_config *cfg);

/* HARNESS: see the top; and the transport calls and hooks fk_client_init installs. */
static void fk_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac);
static void fk_granted(fk_node *f, const fk_req *r);
static long fk_send(void *ctx, const unsigned char *buf, size_t len);
static long fk_recv(void *ctx, unsigned char *buf, size_t len);
static void hook_lost(rlock_lock *l, void *u);

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

/* Answer script call r on f as the input says (or not at all). */
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
            /* an integer a script cannot answer - an extend's or a release's
             * not 1 or 0, a reentrant release's below -1 - is no answer
             * (rlock__answer_fits): a shape */
            int counts = r->script % 3 == 2 && h_kind == RLOCK_KIND_REENTRANT;
            r->val = (c >> 4) % 3 == 0 ? -1 : (long long)(c >> 4) % 4;
            r->reply = r->val >= -counts && (r->val <= 1 || counts) ? RP_INT : RP_SHAPE;
            snprintf(s, sizeof s, ":%lld\r\n", r->val);
        }
        break;
    case 4:
        if (acquire) { r->reply = RP_REFUSED; r->val = -1; snprintf(s, sizeof s, "*2\r\n:0\r\n:-1\r\n"); }
        else { r->reply = RP_INT; r->val = 0; snprintf(s, sizeof s, ":0\r\n"); }
        break;
    case 5: r->reply = RP_NOSCRIPT;
        snprintf(s, sizeof s, r->fcall ? "-ERR Function not found\r\n" : "-NOSCRIPT No matching script. Please use EVAL.\r\n");
        break;
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
    if (fl_trace) fprintf(stderr, "  node %d: lock %d op %d script %d%s t=%llu -> %.*s\n", (int)(f - fk), r->lock,
                          r->op, r->script, r->fcall ? (r->eval ? " (FCALL, loaded)" : " (FCALL)") : r->eval ? " (EVAL)" : "", (unsigned long long)r->t_first,
                          (int)strcspn(s + 4, "\r") + 4, s);
    fk_emitz(f, s);
    r->rep_end = f->out_base + f->out_len;
}

/* A command arrived on f: a new record for it (NULL when the fake's
 * records are full). AUTH and PING are checked and answered here (then
 * *done is 1); anything else is left to the harness (kind 0). */
static fk_req *fk_new_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac, int *done) {
    fk_req *r;
    *done = 1;
    if (f->nreq == FK_MAX_REQ) { fk_overflow = 1; f->hung = 1; return NULL; }
    r = &f->req[f->nreq++];
    memset(r, 0, sizeof *r);
    r->conn = f->conn;
    r->lock = -1;
    r->t_first = f->in_t_first;
    if (fk_arg_is(av[0], al[0], "AUTH")) {
        r->kind = RQ_AUTH;
        FL_CHECK(h_pass, "node %d: AUTH without a password configured", ni);
        FL_CHECK(ac == (h_user ? 3 : 2), "node %d: AUTH with %d arguments", ni, ac);
        if (h_user) FL_CHECK(fk_arg_is(av[1], al[1], h_user), "node %d: AUTH with the wrong user", ni);
        FL_CHECK(fk_arg_is(av[ac - 1], al[ac - 1], h_pass), "node %d: AUTH with the wrong password", ni);
        FL_CHECK(f->nreq - 1 == f->conn_first, "node %d: AUTH that is not first on its connection", ni);
        if (in_dry) { f->hung = 1; return r; }
        if (f->hung) return r;
        if (in_byte() % 8 == 0) { r->reply = RP_ERROR; fk_emitz(f, "-WRONGPASS invalid username-password pair or user is disabled\r\n"); }
        else { r->reply = RP_OK; fk_emitz(f, "+OK\r\n"); }
        r->rep_end = f->out_base + f->out_len;
        return r;
    }
    if (fk_arg_is(av[0], al[0], "PING")) {
        r->kind = RQ_PING;
        if (!f->hung && !in_dry) { r->reply = RP_OK; fk_emitz(f, "+PONG\r\n"); r->rep_end = f->out_base + f->out_len; }
        return r;
    }
#if RLOCK__HAS_FCALL
    if (fk_arg_is(av[0], al[0], "CLIENT") || fk_arg_is(av[0], al[0], "FUNCTION")) {
        /* CLIENT SETNAME rlock-VERSION before a connection's first FCALL;
         * FUNCTION LOAD REPLACE of a script's library (its text exactly),
         * only after that function was not found on this node */
        char ver[32], fn[64], lib[8192];
        r->kind = RQ_OTHER;
        if (fk_arg_is(av[0], al[0], "CLIENT")) {
            FL_CHECK(ac == 3 && fk_arg_is(av[1], al[1], "SETNAME") && rlock_function_version(ver, sizeof ver),
                     "node %d: CLIENT %.*s", ni, (int)al[1], (const char *)av[1]);
            FL_CHECK(al[2] == 6 + strlen(ver) && memcmp(av[2], "rlock-", 6) == 0 && memcmp(av[2] + 6, ver, strlen(ver)) == 0,
                     "node %d: CLIENT SETNAME %.*s", ni, (int)al[2], (const char *)av[2]);
            r->fcall = 1;
        } else {
            int i;
            FL_CHECK(ac == 4 && fk_arg_is(av[1], al[1], "LOAD") && fk_arg_is(av[2], al[2], "REPLACE"),
                     "node %d: FUNCTION %.*s", ni, (int)al[1], (const char *)av[1]);
            r->fcall = 2;
            r->script = -1;
            for (i = 0; i < RLOCK_SCRIPT_COUNT && r->script < 0; i++) {
                if (!rlock_script_text(i) || !rlock_function_name(i, fn, sizeof fn)) continue;
                snprintf(lib, sizeof lib, "#!lua name=%s\nredis.register_function('%s',function(KEYS,ARGV) %s end)", fn, fn,
                         rlock_script_text(i));
                if (fk_arg_is(av[3], al[3], lib)) r->script = i;
            }
            FL_CHECK(r->script >= 0, "node %d: FUNCTION LOAD of a library that is none of the scripts'", ni);
            for (i = f->nreq - 2; i >= 0; i--) {
                const fk_req *p = &f->req[i];
                if (p->kind == RQ_SCRIPT && p->fcall && p->script == r->script && p->reply == RP_NOSCRIPT) break;
            }
            FL_CHECK(i >= 0, "node %d: FUNCTION LOAD of script %d's library, never missing here", ni, r->script);
        }
        if (in_dry || f->hung) return r;
        if (r->fcall == 2 && in_byte() % 8 == 0) { r->reply = RP_ERROR; fk_emitz(f, "-ERR Error compiling function\r\n"); }
        else if (r->fcall == 2) { r->reply = RP_OK; snprintf(lib, sizeof lib, "$%zu\r\n%s\r\n", strlen(fn), fn); fk_emitz(f, lib); }
        else { r->reply = RP_OK; fk_emitz(f, "+OK\r\n"); }
        r->rep_end = f->out_base + f->out_len;
        return r;
    }
#endif
    *done = 0;
    return r;
}

/* What a script call carries. */
typedef struct fk_call {
    const unsigned char *key, *owner;
    size_t key_len, owner_len;
} fk_call;

/* EVAL[SHA] script numkeys KEYS... ARGV...: KEYS[1] is the lock, ARGV[1]
 * the owner, ARGV[2] the ttl (the rest is the wait queue's). Checks the
 * shape and fills r (kind, eval, script, nkeys, owner hash, ttl) and *c. */
static void fk_parse_script(const fk_node *f, fk_req *r, int ni, const unsigned char **av, const size_t *al, int ac, fk_call *c) {
    int i, nk;
    long long t = 0;
    const unsigned char *ttl;
    r->kind = RQ_SCRIPT;
    r->eval = fk_arg_is(av[0], al[0], "EVAL");
#if RLOCK__HAS_FCALL
    r->fcall = fk_arg_is(av[0], al[0], "FCALL");
#endif
    FL_CHECK(r->eval || r->fcall || fk_arg_is(av[0], al[0], "EVALSHA"), "node %d: unexpected command %.*s", ni, (int)al[0],
             (const char *)av[0]);
    FL_CHECK(ac >= 6, "node %d: script call with %d arguments", ni, ac);
    r->script = -1;
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
#if RLOCK__HAS_FCALL
        char fn[64];
        if (r->fcall) {
            if (rlock_function_name(i, fn, sizeof fn) && fk_arg_is(av[1], al[1], fn)) r->script = i;
            continue;
        }
#endif
        if (fk_arg_is(av[1], al[1], r->eval ? rlock_script_text(i) : rlock_script_sha(i))) r->script = i;
    }
    FL_CHECK(r->script >= 0, "node %d: unknown script", ni);
    if (r->fcall) { /* right after its library's FUNCTION LOAD (joined: one attempt), the function is there */
        const fk_req *p = r - 1;
        r->eval = r > f->req && p->kind == RQ_OTHER && p->fcall == 2 && p->script == r->script && p->conn == r->conn;
    }
    FL_CHECK(al[2] == 1 && av[2][0] >= '1' && av[2][0] <= '9', "node %d: bad numkeys", ni);
    nk = av[2][0] - '0';
    FL_CHECK(ac >= 5 + nk, "node %d: %d keys but %d arguments", ni, nk, ac);
    r->nkeys = nk;
    c->key = av[3]; c->key_len = al[3];
    c->owner = av[3 + nk]; c->owner_len = al[3 + nk];
    r->owner = fk_hash(c->owner, c->owner_len);
    ttl = av[4 + nk];
    FL_CHECK(al[4 + nk] > 0 && al[4 + nk] < 20, "node %d: bad ttl argument", ni);
    for (size_t j = 0; j < al[4 + nk]; j++) {
        FL_CHECK(ttl[j] >= '0' && ttl[j] <= '9', "node %d: ttl is not a number", ni);
        t = t * 10 + (ttl[j] - '0');
    }
    r->ttl = t;
}

static void fk_mark_delivered(fk_node *f) {
    unsigned long long at = f->out_base + f->out_off;
    while (f->next_undelivered < f->nreq) {
        fk_req *r = &f->req[f->next_undelivered];
        if (r->conn != f->conn || r->reply == RP_NONE || r->rep_end > at) break;
        r->delivered = 1;
        if (r->reply == RP_GRANTED && r->lock >= 0) fk_granted(f, r);
        f->next_undelivered++;
    }
}

static void fk_close_conn(fk_node *f) {
    f->state = FC_CLOSED;
    f->gen++;
    f->in_len = 0;
    f->out_len = f->out_off = 0;
    f->needs_release = 0; /* rlock gave up on this connection: the releases were attempted or are moot */
}

static int fk_connect(void *ctx) {
    fk_node *f = (fk_node *)ctx;
    unsigned c;
    FL_CHECK(f->state != FC_OPEN, "node %ld: connect() on an open connection (leak)", (long)(f - fk));
    if (in_dry) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    c = in_byte() % 8;
    if (fl_trace) fprintf(stderr, "  node %d: connect -> %s (input byte %zu)\n", (int)(f - fk), c == 0 ? "in progress" : c == 1 ? "error" : "up", in_i - 1);
    if (c == 0) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    if (c == 1) { f->state = FC_CLOSED; return RLOCK_IO_ERROR; }
    f->state = FC_OPEN;
    f->conn++;
    f->gen++;
    f->hung = f->eof = 0;
    f->stall = 0;
    f->in_len = 0;
    f->out_base += f->out_len;
    f->out_len = f->out_off = 0;
    f->conn_first = f->next_undelivered = f->nreq;
    return 1;
}

static void fk_close(void *ctx) {
    int ni = (int)((fk_node *)ctx - fk);
    const rlock__conn *x = &nodes[ni].x;
    if (fl_trace) fprintf(stderr, "  node %d: close (%s)\n", ni, x->xerr);
#if !RLOCK__COMPACT
    /* Dropped for a timeout: some request on it (not failed already) is at
     * or past its own deadline - none is failed before it (rlock__x_timed_out). */
    if (strcmp(x->xerr, "timeout") == 0) {
        unsigned i;
        for (i = x->failing; i < x->count && RLOCK__MS_BEFORE((rlock__ms)fk_now, x->q[i].deadline); i++) {}
        FL_CHECK(i < x->count, "node %d: connection dropped for a timeout at %u, no request past its deadline", ni,
                 (unsigned)(rlock__ms)fk_now);
    }
#endif
    fk_close_conn((fk_node *)ctx);
}

/* send() on a fake connection (who: "node" or "subscriber", i): it must be
 * open and be given bytes; 0 once the input is spent (it would block). */
static int fk_send_ok(int state, size_t len, const char *who, int i) {
    FL_CHECK(state == FC_OPEN, "%s %d: send() on a connection that is not open", who, i);
    FL_CHECK(len > 0, "%s %d: send() of 0 bytes", who, i);
    return !in_dry;
}

/* A command that arrived on connection conn (i: its index): its handler. */
typedef void fk_cmd_fn(void *conn, int i, const unsigned char **av, const size_t *al, int ac);

/* send(): k bytes of buf (they fit) join in[0..*in_len); each command they
 * complete goes to done, then leaves in. The fake of nodes and of
 * subscribers (fuzz_locks) take their bytes so. */
static long fk_take(unsigned char *in, size_t *in_len, const unsigned char *buf, size_t k, fk_cmd_fn *done, void *conn,
                    int i, const char *who) {
    memcpy(in + *in_len, buf, k);
    *in_len += k;
    for (;;) {
        const unsigned char *av[FK_MAX_ARGS];
        size_t al[FK_MAX_ARGS];
        int ac = 0;
        long used = fk_cmd(in, *in_len, av, al, &ac);
        FL_CHECK(used >= 0, "%s %d: rlock sent malformed RESP: %.*s", who, i, (int)*in_len, (const char *)in);
        if (used == 0) break;
        done(conn, i, av, al, ac);
        memmove(in, in + used, *in_len - (size_t)used);
        *in_len -= (size_t)used;
    }
    return (long)k;
}

/* A command complete on node f: the harness's, and the clock of the next one's first byte. */
static void fk_took(void *f, int ni, const unsigned char **av, const size_t *al, int ac) {
    fk_request((fk_node *)f, ni, av, al, ac);
    ((fk_node *)f)->in_t_first = fk_now; /* (what is left of in came with this send: now) */
}

/* send(): the fake takes k bytes of buf; each command they complete goes to fk_request. */
static long fk_accept(fk_node *f, int ni, const unsigned char *buf, size_t k) {
    if (k > FK_IN - f->in_len) { fk_overflow = 1; return RLOCK_IO_ERROR; }
    if (f->in_len == 0) f->in_t_first = fk_now;
    return fk_take(f->in, &f->in_len, buf, k, fk_took, f, ni, "node");
}

/* recv(): k of the bytes waiting (avail > 0) go to rlock, no more than len. */
static long fk_deliver(fk_node *f, unsigned char *buf, size_t len, size_t k) {
    size_t avail = f->out_len - f->out_off;
    if (k > avail) k = avail;
    if (k > len) k = len;
    if (fl_trace) fprintf(stderr, "  node %d: recv %zu bytes\n", (int)(f - fk), k);
    memcpy(buf, f->out + f->out_off, k);
    f->out_off += k;
    fk_mark_delivered(f);
    return (long)k;
}

/* wait() (the blocking calls): ready at once when a reply waits, else as
 * the input says, the clock moving by what it waited. */
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

/* ---- the oracle's helpers ------------------------------------------------------ */
static void check_status(rlock_status st, const char *where) {
    FL_CHECK((int)st >= 0 && (int)st < (int)RLOCK_STATUS_COUNT, "%s returned %d, not a status", where, (int)st);
}

static uint32_t h_drift_permille; /* what the client was given; 0 means the default, 10 */
static long long drift_of(long long ttl) {
    return ttl * (long long)(h_drift_permille ? h_drift_permille : 10) / 1000 + 2;
}

/* What count_votes saw: the largest fence among counted grants, the nodes
 * that said yes, and the nodes that said "not ours" but never granted us. */
static long long h_max_fence;
static unsigned h_vote_mask;
static int h_neutral, h_not_ours; /* h_not_ours: every node's "not ours", granted or not */

/* Count the nodes whose last delivered answer to `script` from lock l's
 * requests of its op op_id, in that op's final round, was yes. The final
 * round's start is private (no public call says when an op's last round
 * began), and only it tells this op's final answers from its earlier
 * rounds': look inside. The start is the clock cut to 32 bits (rlock__ms):
 * compare the same way, or on a clock past 2^32 every request reads as sent
 * after it and an earlier round's grant gets counted. held_mask: the nodes
 * that granted the hold being released. The other locks' requests in
 * between are skipped. */
static int count_votes(const rlock_lock *lock, int l, int op_id, unsigned held_mask, int script, int want_granted,
                       uint64_t *first_sent) {
    uint64_t tok_h = fk_hashz(rlock_lock_token(lock));
    int votes = 0;
    *first_sent = UINT64_MAX;
    h_max_fence = 0;
    h_vote_mask = 0;
    h_neutral = 0;
    h_not_ours = 0;
    for (int n = 0; n < h_nodes; n++) {
        const fk_node *f = &fk[n];
        for (int i = f->nreq - 1; i >= 0; i--) {
            const fk_req *r = &f->req[i];
            int yes;
            if (r->lock != l) continue;
            if (r->op != op_id || RLOCK__MS_BEFORE(r->t_first, lock->op.round.start)) break;
            /* An acquire's cleanup (a release sent during it) undid what
             * the node granted before it, and a retry after a cleanup
             * carries a new token (owner id): with a clock that did not
             * move, times alone cannot tell an earlier round from the last. */
            if (want_granted && r->script == script + 2) break;
            if (want_granted && r->owner != tok_h) break;
            if (r->script != script || !r->delivered) continue;
            if (want_granted) yes = r->reply == RP_GRANTED;
            else if (script % 3 == 2 && h_kind == RLOCK_KIND_REENTRANT) yes = r->reply == RP_INT && r->val >= 0;
            else yes = r->reply == RP_INT && r->val == 1;
            if (yes) {
                votes++;
                h_vote_mask |= 1u << n;
                if (want_granted && r->fence > h_max_fence) h_max_fence = r->fence;
                if (r->t_first < *first_sent) *first_sent = r->t_first;
            } else if (r->reply == RP_INT) {
                h_not_ours++;
                if (!(held_mask & (1u << n))) h_neutral++;
            }
            break; /* the latest answer (EVAL after NOSCRIPT) is the one that counts */
        }
    }
    return votes;
}

static int popcount(unsigned m) { int k = 0; for (; m; m &= m - 1) k++; return k; }

/* After an acquire or extend of lock l with ttl said OK. late: it ended
 * during another lock's blocking call, collected after it - its validity
 * may have run out since (LOST by now). */
static void check_validity(const rlock_lock *lock, int l, long long ttl, uint64_t first_sent, int late) {
    long long v = rlock_validity_ms(lock), drift = drift_of(ttl);
    if (late && v == 0 && rlock_lock_state(lock) == RLOCK_STATE_LOST) return;
    FL_CHECK(rlock_lock_state(lock) == RLOCK_STATE_HELD, "lock %d: OK but not held", l);
    FL_CHECK(v > 0, "lock %d: OK with no validity left", l);
    FL_CHECK(v <= ttl - drift, "lock %d: validity %lld > ttl %lld - drift %lld", l, v, ttl, drift);
    FL_CHECK(fk_now + (uint64_t)v <= first_sent + (uint64_t)(ttl - drift),
             "lock %d: validity ends at %llu, after the first request was sent at %llu + ttl - drift %lld", l,
             (unsigned long long)(fk_now + (uint64_t)v), (unsigned long long)first_sent, ttl - drift);
}

static uint64_t clock_step(unsigned b) {
    switch (b >> 6) {
    case 0: return 0;
    case 1: return b & 63;
    case 2: return (uint64_t)(b & 63) * 8;
    default: return (uint64_t)(b & 63) * 256;
    }
}

/* ---- one input's setup and end ---------------------------------------------------- */
static int h_noconnect; /* transports without connect(): they come connected */

/* Start an input: the fakes afresh, its first three bytes b[0..2] choose
 * nodes, kind, credentials, clock base (b[0]); 0 when it is too short. */
static int fk_start(const uint8_t *data, size_t size, unsigned b[3]) {
    static const uint64_t bases[4] = { 0, 1000, 1000000000000ULL, 1ULL << 62 };
    if (size < 4) return 0;
    in_d = data; in_n = size; in_i = 0; in_dry = 0;
    b[0] = in_byte(); b[1] = in_byte(); b[2] = in_byte();
    memset(fk, 0, sizeof fk);
    fk_overflow = 0;
    fk_rng = 0x1234567ULL;
    fk_random_can_fail = 0;
    h_nodes = (b[0] & 1) && RLOCK_MAX_NODES >= 3 ? 3 : 1; /* (built smaller: what the build has) */
    h_noconnect = (b[0] & 0x20) != 0;
    h_kind = (b[0] & 2) && RLOCK__HAS_REENTRANT ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE;
    h_pass = (b[0] & 4) ? "s3cret pass" : NULL;
    h_user = (b[0] & 4) && (b[0] & 8) ? "fuzzer" : NULL;
    fk_now = bases[(b[0] >> 6) & 3];
    fk_now_last = fk_now;
    fk_now_same = 0;
    return 1;
}

/* The client over h_nodes fake nodes: b[1] and b[2] choose its config
 * (node timeout from timeouts[4]), fencing and cfg.scripts as the harness says. */
static void fk_client_init(const unsigned b[3], const uint32_t *timeouts, int fencing, int scripts) {
    static const uint32_t drifts[4] = { 0, 0, 1, 500 };
    static const uint32_t bmin[4] = { 0, 1, 5, 200 }, bmax[4] = { 0, 1, 50, 100 };
    rlock_config cfg;
    rlock_transport tr;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = timeouts[b[1] & 3];
    cfg.drift_permille = drifts[(b[1] >> 2) & 3];
    h_drift_permille = cfg.drift_permille;
    cfg.max_attempts = (b[1] >> 4) & 3;
    cfg.backoff_min_ms = bmin[b[2] & 3];
    cfg.backoff_max_ms = bmax[(b[2] >> 2) & 3];
    cfg.owner = (b[2] & 0x10) ? "fuzz-owner" : NULL;
    cfg.now_ms = hook_now;
    cfg.random_bytes = hook_random;
    cfg.sleep_ms = hook_sleep;
    cfg.on_lost = hook_lost;
    cfg.fencing = fencing && RLOCK__HAS_FENCING;
    /* The model server answers scripts only; the plain SET NX PX fast path
     * is covered by test_unit (test_plain_fast_path) and the Redis suites. */
    cfg.scripts_only = 1;
    if (scripts) cfg.scripts = scripts;
    if (fk_cfg_more) fk_cfg_more(&cfg);
    for (int n = 0; n < h_nodes; n++) {
        memset(&tr, 0, sizeof tr);
        tr.ctx = &fk[n];
        tr.send = fk_send;
        tr.recv = fk_recv;
        tr.connect = h_noconnect ? NULL : fk_connect; /* no hook: the caller's connection is already up */
        tr.close = fk_close;
        tr.wait = fk_wait;
        if (!tr.connect) fk[n].state = FC_OPEN;
        FL_CHECK(rlock_node_init(&nodes[n], &tr) == RLOCK_OK, "node init");
        nodes[n].username = h_user;
        nodes[n].password = h_pass;
    }
    FL_CHECK(rlock_client_init(&cl, nodes, (size_t)h_nodes, &cfg) == RLOCK_OK, "client init");
}

/* The input's end (its locks destroyed): every connection closed. */
static void fk_finish(void) {
    rlock_client_close(&cl);
    if (!fk_overflow)
        for (int n = 0; n < h_nodes; n++)
            FL_CHECK(fk[n].state == FC_CLOSED || (h_noconnect && fk[n].nreq == 0), "node %d left open at the end", n);
}

static const long long ttls[16] = { 1, 5, 10, 20, 50, 100, 200, 500, 1000, 3000, 10000, 30000,
                                    60000, RLOCK_MAX_TTL_MS, 0, -5 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifndef RLOCK_LIBFUZZER
#include "replay.h"
int main(int argc, char **argv) {
    fl_trace = getenv("FUZZ_TRACE") != NULL;
    return fuzz_replay_main(FK_NAME, argc, argv);
}
#endif
#endif
