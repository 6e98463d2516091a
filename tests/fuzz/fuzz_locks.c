/* fuzz_locks.c - several locks (2-4) sharing the connections of one client,
 * against fake Redis servers whose every move comes from the fuzz input:
 * tests/fuzz/fuzz_lock.c's model (its fake transport and replies), with the
 * locks' operations interleaved on the same pipelined connections.
 *
 * One input: 1 or 3 fake nodes, 2-4 locks of one kind (simple or
 * reentrant, keys fz:lock0..3), optional AUTH, then up to FK_MAX_EVENTS
 * events, each one of: begin an acquire / extend / release on an idle lock
 * (or step it, or cancel it, when it is running: rlock_cancel_begin, then
 * stepped like any op), rlock_step on one lock, rlock_client_step, a clock
 * step, a jump past the node timeouts. The transport takes from the input
 * what fuzz_lock's does (connects, partial sends and receives, errors,
 * closes, every reply and its shape), plus stalls: a send that takes
 * nothing for the next N calls. Requests of several locks then wait
 * together in a connection's TX buffer and FIFO, and one whose node
 * timeout runs out while its bytes are still unsent is taken out of the
 * MIDDLE of both (rlock__x_timed_out), the others staying.
 * When the input runs out the fake goes quiet and the clock jumps past every
 * deadline: every op must end within FK_DRY_STEPS client steps.
 *
 * INVARIANTS (any violation aborts)
 *  - the RESP stream stays in sync, checked after every call into rlock on
 *    every connection: the requests the fake received on it (in order), then
 *    the commands left in rlock's TX buffer (parsed, continuing any command
 *    the fake got part of), end with exactly rlock's FIFO of requests in
 *    flight, entry by entry - a lock's request is owned by that lock (or by
 *    nobody: an op that ended disowns it), an exchange's own (AUTH...) by no
 *    lock - and every request before those has had its whole reply read.
 *    So a reply is never matched to another request, no request taken back
 *    from the TX buffer ever goes out (the fake would have it, the FIFO
 *    not), and the TX buffer holds whole, well-formed commands only;
 *  - a lock's FIFO entries belong to an op in progress (none once its op
 *    ended: a later reply would answer its next op);
 *  - no request begins to go out at or past its deadline (its FIFO entry's:
 *    it fails unsent instead, rlock__x_timed_out), whether its op still runs
 *    or ended, an acquire's cleanup release excepted;
 *  - every command is well-formed RESP, names one of the locks' keys, an
 *    owner token that lock has had, a script of the locks' kind, a ttl that
 *    lock was given; EVAL only after a NOSCRIPT to the same script from that
 *    node; AUTH first on its connection, with the configured credentials;
 *  - per lock, as fuzz_lock: statuses valid (acquire never LOST/NOT_HELD,
 *    NOT_ACQUIRED only with wait 0, TIMEOUT only with wait > 0; extend and
 *    release never NOT_ACQUIRED/TIMEOUT); acquire OK only with a quorum of
 *    granted replies to THIS lock's acquire, sent in its final round with
 *    its token and fully read; extend/release OK likewise; 0 < validity <=
 *    ttl - drift, ending no later than the first counted request's send
 *    time + ttl - drift; the fence token the largest granted (no larger,
 *    when a grant was read in the same recv() as a reply that made rlock
 *    drop the connection, uncounted); a fresh simple acquire never reuses
 *    a token of any lock;
 *  - an acquire that fails (or is cancelled and ends not holding) has sent
 *    its release to every node whose grant to it rlock read during the op,
 *    or dropped that connection;
 *  - connect() never on an open connection, send()/recv() never on a
 *    closed one; after rlock_client_close every connection is closed.
 *
 * Not here: renewals and blocking calls (fuzz_lock drives them, one lock);
 * FCALL (CLIENT SETNAME and FUNCTION LOAD joined to a script) and pub/sub
 * waits (neither fuzzer: the fakes answer scripts only). (fuzz_lock's "no command while a reply is unread" is no invariant
 * here: pipelining is the point; the stream check above replaces it.)
 *
 * Build with -DRLOCK_LIBFUZZER for libFuzzer; without it, main() replays the
 * files or directories named (gcc, ASan; FUZZ_TRACE=1 prints each call).
 */
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it asks for the POSIX APIs the replay main uses */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_FAIL(...) do { fprintf(stderr, "fuzz_locks: "); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); abort(); } while (0)
#define FL_CHECK(c, ...) do { if (!(c)) FL_FAIL(__VA_ARGS__); } while (0)

#define FK_NODES 3
#define FK_LOCKS 4
#define FK_MAX_REQ 512
#define FK_IN 4096
#define FK_OUT 4096
#define FK_DRY_JUMP 1000000u /* ms per step once the input is spent: past every deadline */
#define FK_DRY_STEPS 12
#define FK_MAX_EVENTS 96
#define FK_MAX_ARGS 16
#define FK_HIST 24 /* tokens and ttls a lock had */

/* ---- the input ------------------------------------------------------------ */
static const uint8_t *in_d;
static size_t in_n, in_i;
static int in_dry;
static int fl_trace;

static unsigned in_byte(void) {
    if (in_i < in_n) return in_d[in_i++];
    in_dry = 1;
    return 0;
}

/* ---- the locks, as the harness sees them ------------------------------------ */
typedef struct hlock {
    int running;      /* an op begun whose final status was not collected yet */
    int op;           /* 0 acquire, 1 extend, 2 release */
    int op_id;        /* unique over all locks' ops */
    long long ttl, held_ttl, wait;
    int was_held, cancelled, lost_calls;
    unsigned held_mask;
    char tokens[FK_HIST][RLOCK_MAX_OWNER_LEN + 1];
    int ntok;
    long long ttls[FK_HIST];
    int nttl;
} hlock;

static rlock_client cl;
static rlock_node nodes[FK_NODES];
static rlock_lock lk[FK_LOCKS];
static hlock hl[FK_LOCKS];
static int h_nodes, h_locks, h_kind, h_op_seq, h_noconnect;
static const char *h_user, *h_pass;
static size_t h_key_len;
static char h_fresh[FK_MAX_EVENTS][RLOCK_MAX_OWNER_LEN + 1]; /* simple tokens of fresh grants, every lock */
static int h_nfresh;

static void key_of(int l, char *out) { /* "fz:lockN" then 'k' to h_key_len */
    memset(out, 'k', h_key_len);
    memcpy(out, "fz:lock", 7);
    out[7] = (char)('0' + l);
}

/* ---- fake clock and hooks --------------------------------------------------- */
static uint64_t fk_now;
static int fk_random_can_fail;
static unsigned long long fk_rng;

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
static void hook_lost(rlock_lock *l, void *u) {
    int j = (int)(l - lk);
    (void)u;
    FL_CHECK(j >= 0 && j < h_locks, "on_lost called with a lock that is not one of ours");
    FL_CHECK(++hl[j].lost_calls == 1, "lock %d: on_lost called %d times for one grant", j, hl[j].lost_calls);
}
static void hook_sleep(void *u, uint32_t ms) { (void)u; fk_now += ms; } /* (no blocking calls here) */

/* ---- fake servers ------------------------------------------------------------ */
enum { FC_CLOSED = 0, FC_CONNECTING, FC_OPEN };
enum { RQ_AUTH = 1, RQ_PING, RQ_OTHER, RQ_SCRIPT };
static uint64_t fk_hash(const unsigned char *p, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    while (n--) h = (h ^ *p++) * 1099511628211ULL;
    return h;
}
enum { RP_NONE = 0, RP_OK, RP_GRANTED, RP_REFUSED, RP_INT, RP_NOSCRIPT, RP_ERROR, RP_SHAPE, RP_BAD, RP_PARTIAL };

typedef struct fk_req {
    int conn;
    int lock;            /* its lock (-1: not a script) */
    int op;              /* that lock's op id when it arrived (0: none running) */
    int kind, script, eval;
    uint64_t t_first;
    long long ttl;
    int reply;
    long long val, fence;
    int nkeys;
    unsigned long long rep_end;
    int delivered;
    uint64_t owner;
} fk_req;

typedef struct fk_node {
    int state, conn, hung, eof;
    int stall;           /* sends still to refuse (would block) before the input is read again */
    unsigned char in[FK_IN];
    size_t in_len;
    uint64_t in_t_first;
    unsigned char out[FK_OUT];
    size_t out_len, out_off;
    unsigned long long out_base;
    int conn_first;
    int next_undelivered;
    fk_req req[FK_MAX_REQ];
    int nreq;
    unsigned needs_release; /* locks whose acquire in progress was granted here, no release seen yet */
} fk_node;

static fk_node fk[FK_NODES];
static int fk_overflow;
static int send_first; /* in fk_send: the FIFO index of the next command to complete (-1: unknown) */
/* The stream as rlock has it (check_sync, fk_send): the fake's partial command, then rlock's TX buffer. */
typedef struct fk_ent { int lock; int delivered; int in_tx; } fk_ent;
static fk_ent sync_l[FK_MAX_REQ + RLOCK_MAX_PIPELINE + 8];
static unsigned char sync_buf[FK_IN + RLOCK_TX_BUF];

static void fk_emit(fk_node *f, const char *s, size_t n) {
    if (f->out_off > 0) {
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
    if (fl_trace) fprintf(stderr, "  node %d: lock %d op %d script %d%s t=%llu -> %.*s\n", (int)(f - fk), r->lock,
                          r->op, r->script, r->eval ? " (EVAL)" : "", (unsigned long long)r->t_first,
                          (int)strcspn(s + 4, "\r") + 4, s);
    fk_emitz(f, s);
    r->rep_end = f->out_base + f->out_len;
}

static int fk_arg_is(const unsigned char *a, size_t n, const char *s) {
    return s && n == strlen(s) && memcmp(a, s, n) == 0;
}

static int script_base(void) { return h_kind == RLOCK_KIND_SIMPLE ? 0 : 3; }

/* The lock a script call names (KEYS[1]), -1 none of ours. */
static int lock_of_key(const unsigned char *k, size_t n) {
    char want[RLOCK_MAX_KEY_LEN];
    for (int l = 0; l < h_locks; l++) {
        key_of(l, want);
        if (n == h_key_len && memcmp(k, want, n) == 0) return l;
    }
    return -1;
}

static int tok_known(const hlock *h, const unsigned char *t, size_t n) {
    for (int i = 0; i < h->ntok; i++)
        if (fk_arg_is(t, n, h->tokens[i])) return 1;
    return 0;
}
static void tok_note(hlock *h, const char *t) {
    for (int i = 0; i < h->ntok; i++)
        if (strcmp(h->tokens[i], t) == 0) return;
    if (h->ntok < FK_HIST) snprintf(h->tokens[h->ntok++], sizeof h->tokens[0], "%s", t);
    else fk_overflow = 1;
}
static void ttl_note(hlock *h, long long t) {
    for (int i = 0; i < h->nttl; i++)
        if (h->ttls[i] == t) return;
    if (h->nttl < FK_HIST) h->ttls[h->nttl++] = t;
    else fk_overflow = 1;
}

/* A complete command arrived on f. */
static void fk_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac) {
    fk_req *r;
    int i;
    if (f->nreq == FK_MAX_REQ) { fk_overflow = 1; f->hung = 1; return; }
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
    FL_CHECK(ac >= 6, "node %d: script call with %d arguments", ni, ac);
    r->script = -1;
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++)
        if (fk_arg_is(av[1], al[1], r->eval ? rlock_script_text(i) : rlock_script_sha(i))) r->script = i;
    FL_CHECK(r->script >= 0, "node %d: unknown script", ni);
    FL_CHECK(al[2] == 1 && av[2][0] >= '1' && av[2][0] <= '9', "node %d: bad numkeys", ni);
    {
        int nk = av[2][0] - '0', l, s;
        long long t = 0;
        size_t j;
        const unsigned char *owner, *ttl;
        hlock *h;
        FL_CHECK(ac >= 5 + nk, "node %d: %d keys but %d arguments", ni, nk, ac);
        owner = av[3 + nk]; ttl = av[4 + nk];
        r->nkeys = nk;
        l = lock_of_key(av[3], al[3]);
        FL_CHECK(l >= 0, "node %d: a key that is none of the locks'", ni);
        h = &hl[l];
        r->lock = l;
        r->op = h->running ? h->op_id : 0;
        if (fk_arg_is(owner, al[3 + nk], rlock_lock_token(&lk[l]))) tok_note(h, rlock_lock_token(&lk[l]));
        else FL_CHECK(tok_known(h, owner, al[3 + nk]), "node %d: lock %d's request with an owner it never had", ni, l);
        r->owner = fk_hash(owner, al[3 + nk]);
        FL_CHECK(al[4 + nk] > 0 && al[4 + nk] < 20, "node %d: bad ttl argument", ni);
        for (j = 0; j < al[4 + nk]; j++) {
            FL_CHECK(ttl[j] >= '0' && ttl[j] <= '9', "node %d: ttl is not a number", ni);
            t = t * 10 + (ttl[j] - '0');
        }
        r->ttl = t;
        s = r->script - script_base();
        FL_CHECK(s >= 0 && s < 3, "node %d: script of the other lock kind", ni);
        for (j = 0; j < (size_t)h->nttl && h->ttls[j] != t; j++) {}
        FL_CHECK(j < (size_t)h->nttl, "node %d: lock %d sent ttl %lld, never its", ni, l, t);
        /* (a request of an op that ended - cancelled, timed out - may still
         * go out after it, while its lock runs another op: what the script
         * and ttl must be is checked for the op's own requests only) */
        if (h->running && r->owner == fk_hash((const unsigned char *)rlock_lock_token(&lk[l]), strlen(rlock_lock_token(&lk[l])))) {
        }
        if (s == 2 && r->owner == fk_hash((const unsigned char *)rlock_lock_token(&lk[l]), strlen(rlock_lock_token(&lk[l]))))
            f->needs_release &= ~(1u << l);
    }
    if (r->eval) { /* only as the fallback after a NOSCRIPT to the same script (the round remembers
                    * it across a reconnection: any connection of this node) */
        const fk_req *p = NULL;
        for (i = f->nreq - 2; i >= 0; i--) {
            p = &f->req[i];
            if (p->kind == RQ_SCRIPT && p->lock == r->lock && p->script == r->script && !p->eval && p->reply == RP_NOSCRIPT)
                break;
            p = NULL;
        }
        FL_CHECK(p, "node %d: EVAL without a NOSCRIPT before", ni);
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
        if (r->reply == RP_GRANTED && r->lock >= 0 && hl[r->lock].running && hl[r->lock].op == 0 &&
            r->op == hl[r->lock].op_id)
            f->needs_release |= 1u << r->lock;
        f->next_undelivered++;
    }
}

static void fk_close_conn(fk_node *f) {
    f->state = FC_CLOSED;
    f->in_len = 0;
    f->out_len = f->out_off = 0;
    f->needs_release = 0; /* rlock gave up on this connection: the releases were attempted or are moot */
}

static int fk_connect(void *ctx) {
    fk_node *f = (fk_node *)ctx;
    unsigned c;
    if (fl_trace) fprintf(stderr, "  node %d: connect\n", (int)(f - fk));
    FL_CHECK(f->state != FC_OPEN, "node %ld: connect() on an open connection (leak)", (long)(f - fk));
    if (in_dry) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    c = in_byte() % 8;
    if (fl_trace) fprintf(stderr, "  node %d: connect -> %s (input byte %zu)\n", (int)(f - fk), c == 0 ? "in progress" : c == 1 ? "error" : "up", in_i - 1);
    if (c == 0) { f->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    if (c == 1) { f->state = FC_CLOSED; return RLOCK_IO_ERROR; }
    f->state = FC_OPEN;
    f->conn++;
    f->hung = f->eof = 0;
    f->stall = 0;
    f->in_len = 0;
    f->out_base += f->out_len;
    f->out_len = f->out_off = 0;
    f->conn_first = f->next_undelivered = f->nreq;
    return 1;
}

static void fk_close(void *ctx) {
    if (fl_trace) fprintf(stderr, "  node %d: close (%s)\n", (int)((fk_node *)ctx - fk), nodes[(fk_node *)ctx - fk].x.xerr);
    fk_close_conn((fk_node *)ctx);
}

static long fk_send(void *ctx, const unsigned char *buf, size_t len) {
    fk_node *f = (fk_node *)ctx;
    int ni = (int)(f - fk);
    unsigned c;
    size_t k;
    FL_CHECK(f->state == FC_OPEN, "node %d: send() on a connection that is not open", ni);
    FL_CHECK(len > 0, "node %d: send() of 0 bytes", ni);
    if (in_dry) return RLOCK_IO_WOULD_BLOCK;
    if (f->stall > 0) { f->stall--; if (fl_trace) fprintf(stderr, "  node %d: send stalled\n", ni); return RLOCK_IO_WOULD_BLOCK; }
    c = in_byte();
    if (fl_trace && c % 16 < 4) fprintf(stderr, "  node %d: send -> %u (%u more stalled)\n", ni, c % 16, c % 16 ? 0 : c >> 4);
    switch (c % 16) {
    case 0: f->stall = (int)(c >> 4); return RLOCK_IO_WOULD_BLOCK; /* a stall: this send and the next c>>4 */
    case 1: return RLOCK_IO_WOULD_BLOCK;
    case 2: return (c >> 4) < 8 ? RLOCK_IO_WOULD_BLOCK : RLOCK_IO_ERROR; /* (errors rarer than in fuzz_lock: they drop every lock's requests) */
    case 3: return (c >> 4) == 0 ? (long)len + 1 : RLOCK_IO_WOULD_BLOCK; /* a broken transport, rarely */
    case 4: case 5: case 6: k = 1 + (c >> 4) % 8; break;
    case 7: case 8: k = 1 + (c >> 4) * 16; break;
    default: k = len; break;
    }
    if (k > len) k = len;
    if (fl_trace) fprintf(stderr, "  node %d: send %zu of %zu bytes\n", ni, k, len);
    if (k > FK_IN - f->in_len) { fk_overflow = 1; return RLOCK_IO_ERROR; }
    {
        /* Which of rlock's FIFO entries the commands completed below are:
         * those of f->in's partial command and the commands in tx (buf is
         * tx: rlock's unsent bytes) are its newest, in order. */
        const rlock__conn *x = &nodes[ni].x;
        size_t blen = f->in_len + x->tx_len, p = 0;
        FL_CHECK(buf == nodes[ni].tx && len <= x->tx_len, "node %d: send() of bytes that are not rlock's TX buffer", ni);
        memcpy(sync_buf, f->in, f->in_len);
        memcpy(sync_buf + f->in_len, x->tx, x->tx_len);
        send_first = -1;
        while (p < blen) {
            const unsigned char *av[FK_MAX_ARGS];
            size_t al[FK_MAX_ARGS];
            int ac = 0;
            long used = fk_cmd(sync_buf + p, blen - p, av, al, &ac);
            if (used <= 0) break; /* (check_sync reports it after the call) */
            p += (size_t)used;
            send_first = send_first < 0 ? 1 : send_first + 1;
        }
        send_first = send_first < 0 ? -1 : (int)x->count - send_first; /* the FIFO index of the first */
    }
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
        if (send_first >= 0 && send_first < (int)nodes[ni].x.count) {
            /* No request begins to go out at or past its deadline: it
             * fails unsent instead (rlock__x_timed_out), an acquire's
             * cleanup (RLOCK__X_KEEP) and the exchange's own (tag < 0) excepted. */
            const rlock__pending *e = &nodes[ni].x.q[send_first++];
            FL_CHECK(e->tag <= 0 || (e->tag & RLOCK__X_KEEP) || RLOCK__MS_BEFORE(f->in_t_first, e->deadline),
                     "node %d: a request (%s) began to go out at %llu, at or past its deadline %u", ni,
                     e->owner ? "its op running" : "its op ended", (unsigned long long)f->in_t_first,
                     (unsigned)e->deadline);
        }
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
    FL_CHECK(f->state == FC_OPEN, "node %d: recv() on a connection that is not open", ni);
    FL_CHECK(len > 0, "node %d: recv() into 0 bytes", ni);
    if (in_dry) return RLOCK_IO_WOULD_BLOCK;
    avail = f->out_len - f->out_off;
    if (avail == 0) return f->eof ? RLOCK_IO_CLOSED : RLOCK_IO_WOULD_BLOCK; /* (no input used: nothing to say) */
    c = in_byte();
    switch (c % 16) {
    case 0: return RLOCK_IO_WOULD_BLOCK;
    case 1: return (c >> 4) < 8 ? RLOCK_IO_WOULD_BLOCK : RLOCK_IO_ERROR;
    case 2: return (c >> 4) < 8 ? RLOCK_IO_WOULD_BLOCK : RLOCK_IO_CLOSED;
    case 3: return (c >> 4) == 0 ? (long)len + 1 : RLOCK_IO_WOULD_BLOCK;
    case 4: case 5: case 6: k = 1 + (c >> 4) % 4; break;
    default: k = avail; break;
    }
    if (k > avail) k = avail;
    if (k > len) k = len;
    if (fl_trace) fprintf(stderr, "  node %d: recv %zu bytes\n", ni, k);
    memcpy(buf, f->out + f->out_off, k);
    f->out_off += k;
    fk_mark_delivered(f);
    return (long)k;
}

static int fk_wait(void *ctx, int want, uint32_t timeout_ms) {
    (void)ctx; (void)want;
    fk_now += timeout_ms ? timeout_ms : 1; /* (no blocking calls here: not reached) */
    return 0;
}

/* ---- the stream-sync check ---------------------------------------------------- */

/* Node n: what the fake received on its current connection, then the
 * commands in rlock's TX buffer, must end with rlock's FIFO entry by entry
 * (see INVARIANTS). */
static void check_sync(int n) {
    const fk_node *f = &fk[n];
    const rlock__conn *x = &nodes[n].x;
    int len = 0, m, i;
    size_t blen, p = 0;
    if (fk_overflow) return;
    FL_CHECK(x->count <= RLOCK_MAX_PIPELINE && x->failing <= x->count, "node %d: FIFO count %u, failing %u", n,
             x->count, x->failing);
    FL_CHECK(x->tx_len <= sizeof nodes[n].tx, "node %d: tx_len %zu", n, x->tx_len);
    for (i = (int)x->failing; i < (int)x->count; i++) { /* an op's entries: only while it runs */
        const void *o = x->q[i].owner;
        for (int l = 0; l < h_locks; l++)
            FL_CHECK(o != &lk[l] || hl[l].running, "node %d: FIFO entry %d owned by lock %d, whose op ended", n, i, l);
    }
    if (x->conn == RLOCK__CONN_DOWN) {
        FL_CHECK(x->failing == x->count && x->tx_len == 0, "node %d: down with requests not failed", n);
        return;
    }
    if (f->state == FC_OPEN && x->conn == RLOCK__CONN_UP)
        for (i = f->conn_first; i < f->nreq; i++) {
            sync_l[len].lock = f->req[i].lock;
            sync_l[len].delivered = f->req[i].delivered;
            sync_l[len++].in_tx = 0;
        }
    else FL_CHECK(f->in_len == 0, "node %d: rlock not connected, the fake holds part of a command", n);
    memcpy(sync_buf, f->in, f->in_len);
    memcpy(sync_buf + f->in_len, nodes[n].tx, x->tx_len);
    blen = f->in_len + x->tx_len;
    while (p < blen) {
        const unsigned char *av[FK_MAX_ARGS];
        size_t al[FK_MAX_ARGS];
        int ac = 0;
        long used = fk_cmd(sync_buf + p, blen - p, av, al, &ac);
        FL_CHECK(used > 0, "node %d: rlock's TX buffer %s at byte %zu of %zu: %.*s", n,
                 used == 0 ? "ends inside a command" : "holds malformed RESP", p, blen, (int)(blen - p),
                 (const char *)sync_buf + p);
        sync_l[len].lock = ac >= 4 && (fk_arg_is(av[0], al[0], "EVALSHA") || fk_arg_is(av[0], al[0], "EVAL"))
                         ? lock_of_key(av[3], al[3]) : -1;
        sync_l[len].delivered = 0;
        sync_l[len++].in_tx = 1;
        p += (size_t)used;
    }
    m = (int)(x->count - x->failing);
    FL_CHECK(m <= len, "node %d: %d requests in rlock's FIFO, %d on the wire and in its buffer", n, m, len);
    for (i = 0; i < m; i++) {
        const rlock__pending *e = &x->q[(int)x->count - 1 - i];
        const fk_ent *w = &sync_l[len - 1 - i];
        if (w->lock >= 0) {
            FL_CHECK(RLOCK__X_TAG(e->tag) == RLOCK__TAG_LOCK && (e->owner == NULL || e->owner == &lk[w->lock]),
                     "node %d: FIFO entry %d (tag %d) is not lock %d's request the stream has there", n,
                     (int)x->count - 1 - i, e->tag, w->lock);
        } else {
            for (int l = 0; l < h_locks; l++)
                FL_CHECK(e->owner != &lk[l], "node %d: FIFO entry %d is lock %d's, the stream has no script there", n,
                         (int)x->count - 1 - i, l);
        }
    }
    for (i = 0; i < len - m; i++)
        FL_CHECK(!sync_l[i].in_tx && sync_l[i].delivered,
                 "node %d: request %d of the connection left rlock's FIFO with its reply %s", n, i,
                 sync_l[i].in_tx ? "(it is still in the TX buffer)" : "unread");
}

/* ---- the oracle ---------------------------------------------------------------- */
static void check_status(rlock_status st, const char *where) {
    FL_CHECK((int)st >= 0 && (int)st < (int)RLOCK_STATUS_COUNT, "%s returned %d, not a status", where, (int)st);
}

static uint32_t h_drift_permille;
static long long drift_of(long long ttl) {
    return ttl * (long long)(h_drift_permille ? h_drift_permille : 10) / 1000 + 2;
}

static long long h_max_fence;
static unsigned h_vote_mask;
static int h_neutral;

/* fuzz_lock's count_votes for lock l: the nodes whose last delivered answer
 * to `script` from l's requests of its op in progress, in its final round
 * (at or after lk[l].op.round.start: private, looked at), was yes. The
 * other locks' requests in between are skipped. */
static int count_votes(int l, int script, int want_granted, uint64_t *first_sent) {
    const hlock *h = &hl[l];
    const char *tok = rlock_lock_token(&lk[l]);
    uint64_t tok_h = fk_hash((const unsigned char *)tok, strlen(tok));
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
            if (r->lock != l) continue;
            if (r->op != h->op_id || RLOCK__MS_BEFORE(r->t_first, lk[l].op.round.start)) break;
            if (want_granted && r->kind == RQ_SCRIPT && r->script == script + 2) break;
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
            } else if (r->reply == RP_INT && !(h->held_mask & (1u << n))) {
                h_neutral++;
            }
            break;
        }
    }
    return votes;
}

static int popcount(unsigned m) { int k = 0; for (; m; m &= m - 1) k++; return k; }

static void check_validity(int l, long long ttl, uint64_t first_sent) {
    long long v = rlock_validity_ms(&lk[l]), drift = drift_of(ttl);
    FL_CHECK(rlock_lock_state(&lk[l]) == RLOCK_STATE_HELD, "lock %d: OK but not held", l);
    FL_CHECK(v > 0, "lock %d: OK with no validity left", l);
    FL_CHECK(v <= ttl - drift, "lock %d: validity %lld > ttl %lld - drift %lld", l, v, ttl, drift);
    FL_CHECK(fk_now + (uint64_t)v <= first_sent + (uint64_t)(ttl - drift),
             "lock %d: validity ends at %llu, after the first request was sent at %llu + ttl - drift %lld", l,
             (unsigned long long)(fk_now + (uint64_t)v), (unsigned long long)first_sent, ttl - drift);
}

/* Lock l's op ended with st (collected now). */
static void end_of_op(int l, rlock_status st) {
    hlock *h = &hl[l];
    int q = (int)rlock_client_quorum(&cl);
    uint64_t first;
    check_status(st, "op");
    FL_CHECK(st != RLOCK_WOULD_BLOCK, "lock %d: op ended WOULD_BLOCK", l);
    if (fl_trace)
        fprintf(stderr, "lock %d op %d: %s%s -> %s (state %d, votes %zu, t=%llu)\n", l, h->op_id,
                h->op == 0 ? "acquire" : h->op == 1 ? "extend" : "release", h->cancelled ? " (cancelled)" : "",
                rlock_status_str(st), (int)rlock_lock_state(&lk[l]), rlock_last_votes(&lk[l]),
                (unsigned long long)fk_now);
    if (h->op == 0) {
        FL_CHECK(st != RLOCK_LOST && st != RLOCK_NOT_HELD, "lock %d: acquire returned %s", l, rlock_status_str(st));
        if (st == RLOCK_NOT_ACQUIRED) FL_CHECK(h->wait == 0, "lock %d: NOT_ACQUIRED after waiting %lld", l, h->wait);
        if (st == RLOCK_TIMEOUT) FL_CHECK(h->wait > 0, "lock %d: TIMEOUT from a try-once acquire", l);
        if (st == RLOCK_OK && !h->cancelled) {
            int votes = count_votes(l, script_base(), 1, &first);
            FL_CHECK(votes >= q, "lock %d: acquire OK with %d granted replies to it, quorum %d", l, votes, q);
            check_validity(l, h->ttl, first);
            h->held_mask = h_vote_mask;
            FL_CHECK(rlock_hold_count(&lk[l]) >= 1, "lock %d: acquired with hold count %lld", l, rlock_hold_count(&lk[l]));
            if (!h->was_held) {
                /* (a grant read in the same recv() as an earlier reply that
                 * made rlock drop the connection was read, yet never counted:
                 * the largest is checked when rlock counted what we did) */
                if ((size_t)votes == rlock_last_votes(&lk[l]))
                    FL_CHECK(rlock_fence_token(&lk[l]) == h_max_fence, "lock %d: fence token %lld, largest granted %lld",
                             l, rlock_fence_token(&lk[l]), h_max_fence);
                else
                    FL_CHECK(rlock_fence_token(&lk[l]) <= h_max_fence, "lock %d: fence token %lld, largest granted %lld",
                             l, rlock_fence_token(&lk[l]), h_max_fence);
                h->lost_calls = 0;
                if (h_kind == RLOCK_KIND_SIMPLE) {
                    for (int i = 0; i < h_nfresh; i++)
                        FL_CHECK(strcmp(h_fresh[i], rlock_lock_token(&lk[l])) != 0, "lock %d: a fresh acquire reused token %s",
                                 l, h_fresh[i]);
                    if (h_nfresh < FK_MAX_EVENTS) snprintf(h_fresh[h_nfresh++], sizeof h_fresh[0], "%s", rlock_lock_token(&lk[l]));
                }
            }
            h->held_ttl = h->ttl;
        } else if (st == RLOCK_OK && rlock_lock_state(&lk[l]) == RLOCK_STATE_HELD) {
            /* Cancelled, yet holding: a grant that came before the cancel
             * (kept), or a re-entry undone (the earlier hold stays) - which
             * one, and so which nodes hold, only rlock knows: look inside. */
            if (!h->was_held) h->held_ttl = h->ttl;
            h->held_mask = lk[l].held_mask;
        } else if (!h->cancelled || rlock_lock_state(&lk[l]) != RLOCK_STATE_HELD) {
            for (int n = 0; n < h_nodes; n++)
                FL_CHECK(!(fk[n].needs_release & (1u << l)),
                         "node %d granted lock %d, its acquire %s (%s), and no release was sent", n, l,
                         h->cancelled ? "was cancelled" : "failed", rlock_status_str(st));
        }
    } else if (h->op == 1) {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "lock %d: extend returned %s", l, rlock_status_str(st));
        if (st == RLOCK_OK && !h->cancelled) {
            int votes = count_votes(l, script_base() + 1, 0, &first);
            FL_CHECK(votes >= q, "lock %d: extend OK with %d votes", l, votes);
            check_validity(l, h->ttl, first);
            h->held_mask = h_vote_mask;
            h->held_ttl = h->ttl;
        }
    } else {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "lock %d: release returned %s", l, rlock_status_str(st));
        if (st == RLOCK_OK && !h->cancelled) {
            int votes = count_votes(l, script_base() + 2, 0, &first);
            FL_CHECK(votes >= q || (popcount(h->held_mask) >= q && votes > 0 && votes + h_neutral >= q),
                     "lock %d: release OK with %d votes, %d neutral, %d nodes held", l, votes, h_neutral,
                     popcount(h->held_mask));
        }
    }
    for (int n = 0; n < h_nodes; n++) fk[n].needs_release &= ~(1u << l);
    h->running = 0;
}

static void check_all(void) {
    for (int n = 0; n < h_nodes; n++) {
        check_sync(n);
        if (fl_trace && nodes[n].x.count) { /* rlock's FIFO: owner lock (- nobody), tag, length, deadline */
            const rlock__conn *x = &nodes[n].x;
            fprintf(stderr, "  node %d FIFO (%u failing, tx %zu):", n, x->failing, x->tx_len);
            for (unsigned i = 0; i < x->count; i++) {
                int o = -1;
                for (int l = 0; l < h_locks; l++) o = x->q[i].owner == &lk[l] ? l : o;
                fprintf(stderr, " [%d %#x %u %u]", o, (unsigned)(unsigned short)x->q[i].tag, (unsigned)x->q[i].len,
                        (unsigned)x->q[i].deadline);
            }
            fputc('\n', stderr);
        }
    }
}

/* Collect every finished op (rlock_result: no I/O), then check the streams. */
static void collect(void) {
    for (int l = 0; l < h_locks; l++) {
        rlock_status st;
        if (!hl[l].running) continue;
        st = rlock_result(&lk[l]);
        check_status(st, "rlock_result");
        if (st != RLOCK_WOULD_BLOCK) end_of_op(l, st);
    }
    check_all();
}

/* What a call that starts or steps lock l returned. */
static void took(int l, rlock_status st, const char *where) {
    check_status(st, where);
    if (st != RLOCK_WOULD_BLOCK) end_of_op(l, st);
    collect();
}

static uint64_t clock_step(unsigned b) {
    switch (b >> 6) {
    case 0: return 0;
    case 1: return b & 63;
    case 2: return (uint64_t)(b & 63) * 8;
    default: return (uint64_t)(b & 63) * 256;
    }
}

static const long long ttls[16] = { 1, 5, 10, 20, 50, 100, 200, 500, 1000, 3000, 10000, 30000,
                                    60000, RLOCK_MAX_TTL_MS, 0, -5 };

static void begin(int l, int op) {
    hlock *h = &hl[l];
    rlock_status st;
    h->op = op;
    h->op_id = ++h_op_seq;
    h->cancelled = 0;
    h->wait = 0;
    h->was_held = rlock_lock_state(&lk[l]) == RLOCK_STATE_HELD;
    h->running = 1; /* (before the call: requests may go out in it) */
    if (op == 0) {
        unsigned w;
        h->ttl = ttls[in_byte() % 16];
        w = in_byte();
        h->wait = (w & 3) == 0 ? 0 : (long long)(w >> 2) * 16;
        ttl_note(h, h->ttl);
        /* the token the acquire will send is chosen inside: note the
         * current one (re-entry, cleanup) and, after begin, the new one */
        tok_note(h, rlock_lock_token(&lk[l]));
        st = rlock_acquire_begin(&lk[l], h->ttl, h->wait);
    } else if (op == 1) {
        h->ttl = ttls[in_byte() % 16];
        ttl_note(h, h->ttl);
        st = rlock_extend_begin(&lk[l], h->ttl);
    } else {
        st = rlock_release_begin(&lk[l]);
    }
    tok_note(h, rlock_lock_token(&lk[l]));
    if (fl_trace) fprintf(stderr, "lock %d op %d: %s begins (ttl %lld, wait %lld) -> %s\n", l, h->op_id,
                          op == 0 ? "acquire" : op == 1 ? "extend" : "release", h->ttl, h->wait, rlock_status_str(st));
    took(l, st, "begin");
}

static void event(unsigned e) {
    int l = (int)((e >> 3) % (unsigned)h_locks);
    rlock_status st;
    switch (e & 7) {
    case 0: case 1: case 2: case 3: case 7: /* begin on an idle lock, else step it */
        if (!hl[l].running) { begin(l, (e & 7) <= 1 || (e & 7) == 7 ? 0 : (int)(e & 7) - 1); break; }
        fk_now += clock_step(in_byte());
        if (fl_trace) fprintf(stderr, "step lock %d (t=%llu)\n", l, (unsigned long long)fk_now);
        st = rlock_step(&lk[l]);
        (void)rlock_next_timeout_ms(&lk[l]);
        took(l, st, "rlock_step");
        break;
    case 4:
        if (!hl[l].running) { begin(l, (int)(e >> 5) % 3); break; }
        if (fl_trace) fprintf(stderr, "cancel lock %d\n", l);
        hl[l].cancelled = 1;
        st = rlock_cancel_begin(&lk[l]);
        took(l, st, "rlock_cancel_begin");
        break;
    case 5: {
        rlock_interest it[FK_NODES];
        uint32_t to;
        fk_now += clock_step(in_byte());
        if (fl_trace) fprintf(stderr, "client step (t=%llu)\n", (unsigned long long)fk_now);
        check_status(rlock_client_step(&cl), "rlock_client_step");
        collect();
        (void)rlock_client_interest(&cl, it, FK_NODES, &to);
        break;
    }
    case 6: /* the process stalled: time jumps, often past the node timeouts */
        fk_now += (uint64_t)(1 + (e >> 3)) * 16;
        if (fl_trace) fprintf(stderr, "jump to t=%llu, client step\n", (unsigned long long)fk_now);
        check_status(rlock_client_step(&cl), "rlock_client_step");
        collect();
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint64_t bases[4] = { 0, 1000, 1000000000000ULL, 1ULL << 62 };
    static const uint32_t timeouts[4] = { 0, 5, 20, 100 };
    static const uint32_t drifts[4] = { 0, 0, 1, 500 };
    static const uint32_t bmin[4] = { 0, 1, 5, 200 }, bmax[4] = { 0, 1, 50, 100 };
    rlock_config cfg;
    rlock_transport tr;
    unsigned b0, b1, b2;
    int ev, dry;
    if (size < 4) return 0;
    in_d = data; in_n = size; in_i = 0; in_dry = 0;
    b0 = in_byte(); b1 = in_byte(); b2 = in_byte();
    memset(fk, 0, sizeof fk);
    memset(hl, 0, sizeof hl);
    fk_overflow = 0;
    fk_rng = 0x1234567ULL;
    fk_random_can_fail = 0;
    h_nodes = (b0 & 1) && RLOCK_MAX_NODES >= 3 ? 3 : 1;
    h_noconnect = (b0 & 0x20) != 0;
    h_kind = (b0 & 2) && RLOCK__HAS_REENTRANT ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE;
    h_pass = (b0 & 4) ? "s3cret pass" : NULL;
    h_user = (b0 & 4) && (b0 & 8) ? "fuzzer" : NULL;
    h_locks = 2 + (int)((b0 >> 4) & 1) + (int)((b2 >> 6) & 1); /* 2-4 */
    fk_now = bases[(b0 >> 6) & 3];
    h_op_seq = 0; h_nfresh = 0;

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
    cfg.fencing = (b1 & 0x40) != 0 && RLOCK__HAS_FENCING;
    cfg.scripts_only = 1; /* (the fake answers scripts only, as fuzz_lock's) */
    for (int n = 0; n < h_nodes; n++) {
        memset(&tr, 0, sizeof tr);
        tr.ctx = &fk[n];
        tr.send = fk_send;
        tr.recv = fk_recv;
        tr.connect = h_noconnect ? NULL : fk_connect;
        tr.close = fk_close;
        tr.wait = fk_wait;
        if (!tr.connect) fk[n].state = FC_OPEN;
        FL_CHECK(rlock_node_init(&nodes[n], &tr) == RLOCK_OK, "node init");
        nodes[n].username = h_user;
        nodes[n].password = h_pass;
    }
    FL_CHECK(rlock_client_init(&cl, nodes, (size_t)h_nodes, &cfg) == RLOCK_OK, "client init");
    /* long keys fill the TX buffer sooner: requests wait for room behind others */
    h_key_len = (b2 & 0x20) ? RLOCK_MAX_KEY_LEN : 8;
    for (int l = 0; l < h_locks; l++) {
        char key[RLOCK_MAX_KEY_LEN];
        key_of(l, key);
        FL_CHECK(rlock_lock_init(&lk[l], &cl, key, h_key_len, (rlock_kind)h_kind) == RLOCK_OK, "lock init");
    }
    fk_random_can_fail = (b1 & 0x80) != 0;

    for (ev = 0; ev < FK_MAX_EVENTS && !fk_overflow; ev++) {
        unsigned e = in_byte();
        if (in_dry) break;
        event(e);
    }
    /* The input is spent: the fake is quiet, time jumps past every deadline. */
    in_dry = 1;
    for (dry = 0;; dry++) {
        int running = 0;
        for (int l = 0; l < h_locks; l++) running += hl[l].running;
        if (!running) break;
        FL_CHECK(dry < FK_DRY_STEPS, "%d ops still running %d client steps after every deadline passed", running,
                 FK_DRY_STEPS);
        fk_now += FK_DRY_JUMP;
        check_status(rlock_client_step(&cl), "rlock_client_step");
        collect();
    }

    for (int l = 0; l < h_locks; l++) rlock_lock_destroy(&lk[l]);
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
    return fuzz_replay_main("fuzz_locks", argc, argv);
}
#endif
