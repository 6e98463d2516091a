/* fuzz_locks.c - several locks (2-4) sharing the connections of one client,
 * against fake Redis servers whose every move comes from the fuzz input:
 * fuzz_lock.c's model (the fake servers and replies both take from
 * tests/fuzz/fake.h), with the locks' operations interleaved on the same
 * pipelined connections.
 *
 * One input: 1 or 3 fake nodes, 2-4 locks of one kind (simple or
 * reentrant, keys fz:lock0..3), optional AUTH, waiting (b[3]: below), then up to FK_MAX_EVENTS
 * events, each one of: begin an acquire / extend / release / renewal
 * (rlock_renew_poll: an extend when due, stepped and collected by the poll)
 * on an idle lock, or run an acquire / extend / release there by its
 * blocking call (or step it, or cancel it, when it is running:
 * rlock_cancel_begin, then stepped like any op), rlock_step on one lock,
 * rlock_client_step, a clock
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
 *  - and none fails BEFORE it (check_unsent): between two calls the FIFO
 *    entries whose commands are wholly in the TX buffer become the earlier
 *    ones less those that went out (from the front, as many as the fake
 *    began to receive), less those taken back - each at or past its own
 *    deadline or of an op that ended, and no cleanup - then new ones, each survivor the same entry
 *    (its bytes, deadline, tag; owner the same or nobody): so the entry
 *    taken out of the FIFO is the one whose bytes left the buffer; a
 *    connection dropped for a timeout has a request past its deadline on it
 *    (fake.h, fk_close);
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
 *  - a renewal is judged as an extend to the lock's ttl; the poll that
 *    collects it returns its status, outcome RENEWED / LOST / FAILED to
 *    match, on_lost once when it found the lock lost; one that finished
 *    in another call's client step is still the poll's to collect;
 *  - FCALL mode (b[2] bit 7, cfg.scripts RLOCK_SCRIPTS_FCALL): the fake
 *    answers FCALL as the script (or "Function not found"), CLIENT SETNAME
 *    with this build's version, FUNCTION LOAD REPLACE of exactly a
 *    script's library and only after that function was not found on the
 *    node; the parts of one attempt are joined (RLOCK__X_JOINED: a later
 *    part may go out late behind a first part that went in time);
 *  - a blocking call (rlock_acquire / _extend / _release on an idle lock,
 *    the other locks' ops going on inside it) returns a final status, ends
 *    within FK_DRY_CALLS hook calls once the input is spent, and never
 *    spins: the clock read 1,000,000 times without moving fails (fake.h);
 *    an op that ended inside another lock's blocking call may be LOST by
 *    the time it is collected (its validity ran out meanwhile);
 *  - waiting by notification (b[3], the input's 4th byte: bit 0 cfg.pubsub -
 *    HELLO 3 at connect, accepted (a RESP3 map) or refused as bits 4-5 or
 *    the input say, and [UN]SUBSCRIBE on a RESP3 command connection,
 *    answered by a push or an error: a FIFO entry like any request's (its
 *    waiter's or nobody's), checked by the stream check;
 *    bit 1 a subscriber connection per node, its fake (fs_*) answering AUTH
 *    and [UN]SUBSCRIBE; bits 2-3 recheck_ms; bit 6 (simple locks) locks 2, 3
 *    second handles on locks 0's, 1's keys - two waiters of one channel):
 *    confirmations right, for another channel, with a wrong count, refused
 *    (NOPERM: an ACL user without the channel), missing, malformed, cut by a
 *    close; and, as events (case 6, bit 7), release notices naming a lock's
 *    waiter id, another id, a fair "W N", unknown channels, odd payloads,
 *    unasked confirmations, malformed pushes, a close mid-notice - RESP3
 *    pushes between the replies on the command connection. check_waiting:
 *    an op that ended has no subscription attributed to it (sub_ok,
 *    sub_pending) and no subscriber FIFO entry; a subscriber FIFO holds
 *    AUTH, SUBSCRIBE (a running acquire's or nobody's), UNSUBSCRIBE
 *    (nobody's); an acquire that counts itself subscribed on server j, and
 *    the lingering channel, had its SUBSCRIBE sent or queued on the
 *    connection rlock keeps server j's subscriptions on, no UNSUBSCRIBE of
 *    it after (so no UNSUBSCRIBE goes out for a channel a waiter needs). A
 *    notice is never a grant: the acquire checks above count grant replies
 *    only.
 * (fuzz_lock's "no command while a reply is unread" is no invariant
 * here: pipelining is the point; the stream check above replaces it.)
 *
 * Build with -DRLOCK_LIBFUZZER for libFuzzer; without it, main() replays the
 * files or directories named (gcc, ASan; FUZZ_TRACE=1 prints each call).
 */
/* A fixed thread id: the default reentrant owner id ("<instance id>:<thread
 * id>") is then the same in every replay - the instance id comes from the
 * fake random source - and so is every request's length (pthread_self's
 * digits vary with ASLR). */
#define RLOCK_THREAD_ID() 42UL
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it asks for the POSIX APIs the replay main uses */

#define FK_NAME "fuzz_locks"
#define FK_MAX_REQ 512
#include "fake.h"

#define FK_LOCKS 4
#define FK_DRY_STEPS 12
#define FK_MAX_EVENTS 96
#define FK_HIST 24 /* tokens and ttls a lock had */

/* ---- the locks, as the harness sees them ------------------------------------ */
typedef struct hlock {
    int running;      /* an op begun whose final status was not collected yet */
    int op;           /* 0 acquire, 1 extend, 2 release */
    int renew;        /* the extend is rlock_renew_poll's: stepped and collected by it */
    int blocking;     /* in a blocking call: its own status ends it, not collect() */
    int blocking_call; /* (took: the call that returned was blocking) */
    int op_id;        /* unique over all locks' ops */
    long long ttl, held_ttl, wait;
    int was_held, cancelled, lost_calls;
    unsigned held_mask;
    char tokens[FK_HIST][RLOCK_MAX_OWNER_LEN + 1];
    int ntok;
    long long ttls[FK_HIST];
    int nttl;
} hlock;

static rlock_lock lk[FK_LOCKS];
static hlock hl[FK_LOCKS];
static int h_locks, h_op_seq;
static int h_late; /* collecting ops that ended during another lock's blocking call */
static size_t h_key_len;
static char h_fresh[FK_MAX_EVENTS][RLOCK_MAX_OWNER_LEN + 1]; /* simple tokens of fresh grants, every lock */
static int h_nfresh;

/* b[3] bit 6 (simple locks only: their tokens tell the handles apart):
 * locks 2 and 3 are second handles on locks 0's and 1's keys - two waiters
 * of one channel in one client. */
static int h_shared;
static int key_idx(int l) { return h_shared ? l % 2 : l; }
static void key_of(int l, char *out) { /* "fz:lockN" then 'k' to h_key_len */
    memset(out, 'k', h_key_len);
    memcpy(out, "fz:lock", 7);
    out[7] = (char)('0' + key_idx(l));
}

/* ---- hooks -------------------------------------------------------------------- */
static void hook_lost(rlock_lock *l, void *u) {
    int j = (int)(l - lk);
    (void)u;
    FL_CHECK(j >= 0 && j < h_locks, "on_lost called with a lock that is not one of ours");
    FL_CHECK(++hl[j].lost_calls == 1, "lock %d: on_lost called %d times for one grant", j, hl[j].lost_calls);
}

/* ---- the fake servers (fake.h), as this harness records and checks them --------- */
static int send_first; /* in fk_send: the FIFO index of the next command to complete (-1: unknown) */
/* The stream as rlock has it (check_sync, fk_send): the fake's partial command, then rlock's TX buffer. */
typedef struct fk_ent { int lock; int delivered; int in_tx; uint64_t hash; } fk_ent;
/* A FIFO entry whose command is all in rlock's TX buffer (none of it went
 * out), as check_sync saw it after the last call (check_unsent). */
typedef struct fk_unsent { const void *owner; rlock__ms deadline; short tag; uint64_t hash; } fk_unsent;
typedef struct fk_shadow {
    int valid, gen, nreq;  /* the connection it was taken on (fk_node.gen), requests the fake had */
    size_t in_len;         /* bytes of a partial command the fake had */
    int n;
    fk_unsent e[RLOCK_MAX_PIPELINE];
} fk_shadow;
static fk_shadow shadow[FK_NODES];
static fk_ent sync_l[FK_MAX_REQ + RLOCK_MAX_PIPELINE + 8];
static unsigned char sync_buf[FK_IN + RLOCK_TX_BUF];

static int tok_known(const hlock *h, const unsigned char *t, size_t n) {
    for (int i = 0; i < h->ntok; i++)
        if (fk_arg_is(t, n, h->tokens[i])) return 1;
    return 0;
}

/* The lock a script call names (KEYS[1]; of handles sharing a key, the one
 * whose token ARGV[1] is - its current one, else one it had), -1 none of ours. */
static int lock_of_key(const unsigned char *k, size_t n, const unsigned char *o, size_t on) {
    char want[RLOCK_MAX_KEY_LEN];
    int first = -1;
    for (int l = 0; l < h_locks; l++) {
        key_of(l, want);
        if (n != h_key_len || memcmp(k, want, n) != 0) continue;
        if (!h_shared || fk_arg_is(o, on, rlock_lock_token(&lk[l]))) return l;
        if (first < 0 || (tok_known(&hl[l], o, on) && !tok_known(&hl[first], o, on))) first = l;
    }
    return first;
}
/* ... a whole command's (EVAL[SHA] / FCALL name numkeys KEYS... ARGV...) */
static int lock_of_cmd(const unsigned char **av, const size_t *al, int ac) {
    int nk;
    if (ac < 5 || !(fk_arg_is(av[0], al[0], "EVALSHA") || fk_arg_is(av[0], al[0], "EVAL") ||
                    fk_arg_is(av[0], al[0], "FCALL")))
        return -1;
    nk = al[2] == 1 ? av[2][0] - '0' : 0;
    return nk >= 1 && nk <= 9 && 3 + nk < ac ? lock_of_key(av[3], al[3], av[3 + nk], al[3 + nk]) : -1;
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

/* ---- waiting by notification (b[3]: cfg.pubsub, subscribers) -------------------- */
static int h_pubsub, h_subs; /* cfg.pubsub; subscriber connections attached */
static int h_hello;          /* HELLO 3: 0 the input says each time, 1 accepted, 2 refused */
static uint32_t h_recheck;
static rlock_subscriber subs[FK_NODES];
/* The server's subscriptions as asked for (the last command of each channel
 * a SUBSCRIBE, refused or not), bit k for key k's channel "{fz:lockk...}:released":
 * on server j's command connection (RESP3) and on subscriber j, each while
 * that connection (gen) lasts; resp3_gen: node gen + 1 when HELLO 3 was
 * accepted on it. */
static unsigned chan_node[FK_NODES], chan_sub[FK_NODES];
static int chan_node_gen[FK_NODES], resp3_gen[FK_NODES];
static int is_subcmd(const unsigned char *a, size_t n) {
    return fk_arg_is(a, n, "SUBSCRIBE") || fk_arg_is(a, n, "UNSUBSCRIBE");
}

static void cfg_waiting(rlock_config *cfg) {
    cfg->pubsub = h_pubsub;
    if (h_recheck) cfg->recheck_ms = h_recheck;
}

static size_t chan_of_key(int k, char *out) { /* "{" key "}:released" */
    char key[RLOCK_MAX_KEY_LEN];
    memset(key, 'k', h_key_len);
    memcpy(key, "fz:lock", 7);
    key[7] = (char)('0' + k);
    out[0] = '{';
    memcpy(out + 1, key, h_key_len);
    memcpy(out + 1 + h_key_len, "}:released", 10);
    return h_key_len + 11;
}
/* The key index whose channel ch is, -1 none. */
static int key_of_chan(const unsigned char *ch, size_t n) {
    char want[RLOCK_MAX_KEY_LEN + 16];
    for (int k = 0; k < FK_LOCKS; k++)
        if (chan_of_key(k, want) == n && memcmp(ch, want, n) == 0) return k;
    return -1;
}
static int keys_in_use(void) { return h_shared ? 2 : h_locks; }

/* "*3\r\n$K\r\nkind\r\n$N\r\nchan\r\n" + the third element x (already RESP), as a
 * RESP3 push (type '>') or a RESP2 array ('*'), into s (cap FS_MSG). */
#define FS_MSG (RLOCK_MAX_KEY_LEN + 128)
static size_t ps_frame(char *s, char type, const char *kind, const char *ch, size_t chn, const char *x) {
    int k = snprintf(s, FS_MSG, "%c3\r\n$%zu\r\n%s\r\n$%zu\r\n", type, strlen(kind), kind, chn);
    memcpy(s + k, ch, chn);
    k += (int)chn;
    k += snprintf(s + k, FS_MSG - (size_t)k, "\r\n%s", x);
    return (size_t)k;
}

/* A confirmation of [UN]SUBSCRIBE ch (kind "subscribe"/"unsubscribe") as the
 * input says: right; another channel; a wrong count; silence; an error
 * (the server did NOT subscribe: ACL channel rules, NOPERM). *ok: whether the
 * server did what was asked. type '>' (RESP3 push) or '*' (RESP2). Returns
 * the bytes in s (0: none). */
static size_t ps_confirm(char *s, char type, const char *kind, const unsigned char *ch, size_t chn, unsigned count,
                         int *ok) {
    unsigned c = in_byte();
    char other[RLOCK_MAX_KEY_LEN + 16], num[32];
    size_t on;
    *ok = 1;
    switch (c % 8) {
    case 0: return 0; /* (a server that stops answering: the caller hangs) */
    case 1: /* another channel: a lock's or none's */
        on = chan_of_key((int)((c >> 3) % FK_LOCKS), other);
        if ((c >> 5) == 7) on = 5, memcpy(other, "other", 5);
        snprintf(num, sizeof num, ":%u\r\n", count);
        return ps_frame(s, type, kind, other, on, num);
    case 2:
        if (type == '*' || (c >> 3) % 2 == 0) { /* (RESP3: read as its reply, not the next request's) */
            *ok = 0;
            return (size_t)snprintf(s, FS_MSG, "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n");
        }
        /* fall through */
    case 3: snprintf(num, sizeof num, ":%u\r\n", (c >> 3) % 3 == 0 ? 0u : count + 7u); break; /* a wrong count */
    default: snprintf(num, sizeof num, ":%u\r\n", count); break;
    }
    return ps_frame(s, type, kind, (const char *)ch, chn, num);
}
static unsigned popc(unsigned m) { unsigned k = 0; for (; m; m &= m - 1) k++; return k; }

/* [UN]SUBSCRIBE on a command connection (RESP3 after HELLO 3 only): a
 * request like any (a FIFO entry), answered by a push or an error. */
static void ps_node_cmd(fk_node *f, int ni, fk_req *r, const unsigned char **av, const size_t *al, int ac, int unsub) {
    char s[FS_MSG];
    size_t n;
    int k, ok;
    unsigned after;
    FL_CHECK(h_pubsub && resp3_gen[ni] == f->gen + 1, "node %d: %sSUBSCRIBE on a command connection that is not RESP3",
             ni, unsub ? "UN" : "");
    FL_CHECK(ac == 2, "node %d: %sSUBSCRIBE with %d arguments", ni, unsub ? "UN" : "", ac);
    k = key_of_chan(av[1], al[1]);
    FL_CHECK(k >= 0 && k < keys_in_use(), "node %d: %sSUBSCRIBE %.*s, no lock's channel", ni, unsub ? "UN" : "",
             (int)al[1], (const char *)av[1]);
    r->kind = RQ_OTHER;
    r->lock = -2; /* (check_sync: a SUBSCRIBE's entry is its lock's or nobody's) */
    if (chan_node_gen[ni] != f->gen) chan_node[ni] = 0, chan_node_gen[ni] = f->gen;
    if (f->hung || in_dry) { /* (the server still does it) */
        if (unsub) chan_node[ni] &= ~(1u << k);
        else chan_node[ni] |= 1u << k;
        return;
    }
    after = unsub ? chan_node[ni] & ~(1u << k) : chan_node[ni] | 1u << k;
    n = ps_confirm(s, '>', unsub ? "unsubscribe" : "subscribe", av[1], al[1], popc(after), &ok);
    (void)ok; /* (the model is each channel's last command, done or refused: check_waiting) */
    chan_node[ni] = after;
    if (fl_trace) fprintf(stderr, "  node %d: %sSUBSCRIBE key %d -> %.*s\n", ni, unsub ? "UN" : "", k,
                          (int)(n > 40 ? 40 : n), s);
    if (!n) { f->hung = 1; return; }
    r->reply = s[0] == '-' ? RP_ERROR : RP_OK;
    fk_emit(f, s, n);
    r->rep_end = f->out_base + f->out_len;
}

/* HELLO 3 on a command connection: accepted (a RESP3 map: pushes from now
 * on) or refused (RESP2: its waits use the subscribers, or back off). */
static void ps_hello(fk_node *f, int ni, fk_req *r, const unsigned char **av, const size_t *al, int ac) {
    int yes;
    FL_CHECK(h_pubsub && ac == 2 && fk_arg_is(av[1], al[1], "3"), "node %d: HELLO without cfg.pubsub, or not HELLO 3", ni);
    r->kind = RQ_OTHER;
    if (f->hung || in_dry) return;
    yes = h_hello == 1 || (h_hello != 2 && in_byte() % 4 != 0);
    if (yes) {
        r->reply = RP_OK;
        fk_emitz(f, "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n");
        resp3_gen[ni] = f->gen + 1;
    } else {
        r->reply = RP_ERROR;
        fk_emitz(f, "-ERR unknown command 'HELLO', with args beginning with: '3' \r\n");
    }
    r->rep_end = f->out_base + f->out_len;
    if (fl_trace) fprintf(stderr, "  node %d: HELLO 3 -> %s\n", ni, yes ? "RESP3" : "refused");
}

/* A complete command arrived on f (fake.h: fk_accept). */
static void fk_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac) {
    fk_req *r;
    fk_call c;
    int done, l, s, i;
    hlock *h;
    if (send_first >= 0 && send_first < (int)nodes[ni].x.count) {
        /* No request begins to go out at or past its deadline: it
         * fails unsent instead (rlock__x_timed_out), an acquire's
         * cleanup (RLOCK__X_KEEP), the exchange's own (tag < 0) and a later
         * part of an attempt whose first part went out (RLOCK__X_JOINED:
         * the FCALL behind its CLIENT SETNAME / FUNCTION LOAD) excepted. */
        const rlock__pending *e = &nodes[ni].x.q[send_first++];
        FL_CHECK(e->tag <= 0 || (e->tag & (RLOCK__X_KEEP | RLOCK__X_JOINED)) || RLOCK__MS_BEFORE(f->in_t_first, e->deadline),
                 "node %d: a request (%s) began to go out at %llu, at or past its deadline %u", ni,
                 e->owner ? "its op running" : "its op ended", (unsigned long long)f->in_t_first,
                 (unsigned)e->deadline);
    }
    r = fk_new_request(f, ni, av, al, ac, &done);
    if (!r || done) return; /* (AUTH, PING) */
    if (fk_arg_is(av[0], al[0], "HELLO")) { ps_hello(f, ni, r, av, al, ac); return; }
    if (is_subcmd(av[0], al[0])) { ps_node_cmd(f, ni, r, av, al, ac, av[0][0] == 'U'); return; }
    fk_parse_script(f, r, ni, av, al, ac, &c);
    l = lock_of_key(c.key, c.key_len, c.owner, c.owner_len);
    FL_CHECK(l >= 0, "node %d: a key that is none of the locks'", ni);
    h = &hl[l];
    r->lock = l;
    r->op = h->running ? h->op_id : 0;
    if (fk_arg_is(c.owner, c.owner_len, rlock_lock_token(&lk[l]))) tok_note(h, rlock_lock_token(&lk[l]));
    else FL_CHECK(tok_known(h, c.owner, c.owner_len), "node %d: lock %d's request with an owner it never had", ni, l);
    s = r->script - script_base();
    FL_CHECK(s >= 0 && s < 3, "node %d: script of the other lock kind", ni);
    /* (a request of an op that ended - cancelled, timed out - may still go
     * out after it, while its lock runs another op: the ttl is checked
     * against every ttl the lock was given) */
    for (i = 0; i < h->nttl && h->ttls[i] != r->ttl; i++) {}
    FL_CHECK(i < h->nttl, "node %d: lock %d sent ttl %lld, never its", ni, l, r->ttl);
    if (s == 2 && r->owner == fk_hashz(rlock_lock_token(&lk[l]))) f->needs_release &= ~(1u << l);
    if (r->eval) { /* only as the fallback after a NOSCRIPT to the same script (the round remembers
                    * it across a reconnection: any connection of this node). An FCALL right
                    * after its library's FUNCTION LOAD may be another lock's: a cancelled
                    * retry's FUNCTION LOAD (no lock's: not taken back with it) still goes out */
        const fk_req *p = NULL;
        for (i = f->nreq - 2; i >= 0; i--) {
            p = &f->req[i];
            if (p->kind == RQ_SCRIPT && (p->lock == r->lock || r->fcall) && p->script == r->script && !p->eval &&
                p->reply == RP_NOSCRIPT)
                break;
            p = NULL;
        }
        FL_CHECK(p, "node %d: EVAL without a NOSCRIPT before", ni);
    }
    if (f->hung) return;
    fk_reply_script(f, r);
}

/* A grant rlock read: if it answers its lock's acquire in progress, that
 * acquire must release it should it fail. */
static void fk_granted(fk_node *f, const fk_req *r) {
    const hlock *h = &hl[r->lock];
    if (h->running && h->op == 0 && r->op == h->op_id) f->needs_release |= 1u << r->lock;
}

static long fk_send(void *ctx, const unsigned char *buf, size_t len) {
    fk_node *f = (fk_node *)ctx;
    int ni = (int)(f - fk);
    unsigned c;
    size_t k;
    if (!fk_send_ok(f->state, len, "node", ni)) return RLOCK_IO_WOULD_BLOCK;
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
    return fk_accept(f, ni, buf, k);
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
    return fk_deliver(f, buf, len, k);
}


/* ---- the fake subscriber connections (RESP2: replies are arrays, notices too) ---- */
#define FS_BUF 2048
typedef struct fs_node {
    int state, gen, hung, eof;
    int ncmd;                 /* commands on the current connection */
    unsigned char in[FS_BUF];
    size_t in_len;
    unsigned char out[FS_BUF];
    size_t out_len, out_off;
} fs_node;
static fs_node fs[FK_NODES];

static void fs_emit(fs_node *s, const char *b, size_t n) {
    if (s->out_off > 0) {
        memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
        s->out_len -= s->out_off;
        s->out_off = 0;
    }
    if (n > FS_BUF - s->out_len) { fk_overflow = 1; return; }
    memcpy(s->out + s->out_len, b, n);
    s->out_len += n;
}
static void fs_drop_conn(fs_node *s) {
    s->gen++;
    s->in_len = s->out_len = s->out_off = 0;
    s->ncmd = 0;
    s->hung = s->eof = 0;
    chan_sub[s - fs] = 0;
}
static int fs_connect(void *ctx) {
    fs_node *s = (fs_node *)ctx;
    unsigned c;
    FL_CHECK(s->state != FC_OPEN, "subscriber %d: connect() on an open connection (leak)", (int)(s - fs));
    if (in_dry) { s->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    c = in_byte() % 8;
    if (fl_trace) fprintf(stderr, "  sub %d: connect -> %s\n", (int)(s - fs), c == 0 ? "in progress" : c == 1 ? "error" : "up");
    if (c == 0) { s->state = FC_CONNECTING; return RLOCK_IO_WOULD_BLOCK; }
    if (c == 1) { s->state = FC_CLOSED; return RLOCK_IO_ERROR; }
    fs_drop_conn(s);
    s->state = FC_OPEN;
    return 1;
}
static void fs_close(void *ctx) {
    fs_node *s = (fs_node *)ctx;
    if (fl_trace) fprintf(stderr, "  sub %d: close (%s)\n", (int)(s - fs), subs[s - fs].x.xerr);
    fs_drop_conn(s);
    s->state = FC_CLOSED;
}
/* A command on subscriber j: AUTH first, then [UN]SUBSCRIBE of one lock's channel. */
static void fs_request(void *ctx, int j, const unsigned char **av, const size_t *al, int ac) {
    fs_node *s = (fs_node *)ctx;
    char b[FS_MSG];
    size_t n = 0;
    int k, ok = 1, unsub;
    unsigned after;
    s->ncmd++;
    if (fk_arg_is(av[0], al[0], "AUTH")) {
        FL_CHECK(h_pass && s->ncmd == 1, "subscriber %d: AUTH %s", j, h_pass ? "not first on its connection" : "without a password");
        FL_CHECK(ac == (h_user ? 3 : 2) && fk_arg_is(av[ac - 1], al[ac - 1], h_pass) && (!h_user || fk_arg_is(av[1], al[1], h_user)),
                 "subscriber %d: AUTH with the wrong credentials", j);
        if (s->hung || in_dry) return;
        if (in_byte() % 8 == 0) fs_emit(s, "-WRONGPASS invalid username-password pair or user is disabled\r\n", 63);
        else fs_emit(s, "+OK\r\n", 5);
        return;
    }
    unsub = fk_arg_is(av[0], al[0], "UNSUBSCRIBE");
    FL_CHECK(unsub || fk_arg_is(av[0], al[0], "SUBSCRIBE"), "subscriber %d: unexpected command %.*s", j, (int)al[0],
             (const char *)av[0]);
    FL_CHECK(ac == 2, "subscriber %d: %sSUBSCRIBE with %d arguments", j, unsub ? "UN" : "", ac);
    k = key_of_chan(av[1], al[1]);
    FL_CHECK(k >= 0 && k < keys_in_use(), "subscriber %d: %sSUBSCRIBE %.*s, no lock's channel", j, unsub ? "UN" : "",
             (int)al[1], (const char *)av[1]);
    after = unsub ? chan_sub[j] & ~(1u << k) : chan_sub[j] | 1u << k;
    if (!s->hung && !in_dry) {
        unsigned c = in_byte();
        if (c % 16 == 15) { /* part of the confirmation, then the connection closes */
            n = ps_frame(b, '*', unsub ? "unsubscribe" : "subscribe", (const char *)av[1], al[1], ":1\r\n");
            n = 1 + (c >> 4) % (n - 1);
            s->hung = s->eof = 1;
        } else if (c % 16 == 14) { /* malformed: the stream is lost */
            n = (size_t)snprintf(b, sizeof b, (c >> 4) & 1 ? "*3\r\n$9\r\nsubscribe\r\n?x\r\n" : "*3\r\n$-5\r\n");
            s->hung = 1;
        } else {
            n = ps_confirm(b, '*', unsub ? "unsubscribe" : "subscribe", av[1], al[1], popc(after), &ok);
            if (n == 0) s->hung = 1; /* (RESP2: a reply unsent is a stalled server; none later can come) */
        }
    }
    (void)ok;
    chan_sub[j] = after;
    if (fl_trace) fprintf(stderr, "  sub %d: %sSUBSCRIBE key %d -> %.*s\n", j, unsub ? "UN" : "", k, (int)(n > 40 ? 40 : n), b);
    if (n) fs_emit(s, b, n);
}
static long fs_send(void *ctx, const unsigned char *buf, size_t len) {
    fs_node *s = (fs_node *)ctx;
    int j = (int)(s - fs);
    unsigned c;
    size_t k;
    if (!fk_send_ok(s->state, len, "subscriber", j)) return RLOCK_IO_WOULD_BLOCK;
    c = in_byte();
    switch (c % 8) {
    case 0: return RLOCK_IO_WOULD_BLOCK;
    case 1: return (c >> 3) == 0 ? RLOCK_IO_ERROR : RLOCK_IO_WOULD_BLOCK;
    case 2: case 3: k = 1 + (c >> 3) % 8; break;
    default: k = len; break;
    }
    if (k > len) k = len;
    if (k > FS_BUF - s->in_len) { fk_overflow = 1; return RLOCK_IO_ERROR; }
    return fk_take(s->in, &s->in_len, buf, k, fs_request, s, j, "subscriber");
}
static long fs_recv(void *ctx, unsigned char *buf, size_t len) {
    fs_node *s = (fs_node *)ctx;
    size_t k, avail;
    unsigned c;
    FL_CHECK(s->state == FC_OPEN, "subscriber %d: recv() on a connection that is not open", (int)(s - fs));
    FL_CHECK(len > 0, "subscriber %d: recv() into 0 bytes", (int)(s - fs));
    if (in_dry) return RLOCK_IO_WOULD_BLOCK;
    avail = s->out_len - s->out_off;
    if (avail == 0) return s->eof ? RLOCK_IO_CLOSED : RLOCK_IO_WOULD_BLOCK;
    c = in_byte();
    switch (c % 8) {
    case 0: return RLOCK_IO_WOULD_BLOCK;
    case 1: return (c >> 3) < 16 ? RLOCK_IO_WOULD_BLOCK : RLOCK_IO_ERROR;
    case 2: k = 1 + (c >> 3) % 4; break;
    default: k = avail; break;
    }
    if (k > avail) k = avail;
    if (k > len) k = len;
    memcpy(buf, s->out + s->out_off, k);
    s->out_off += k;
    return (long)k;
}
static int fs_wait(void *ctx, int want, uint32_t timeout_ms) {
    fs_node *s = (fs_node *)ctx;
    unsigned c;
    FL_CHECK(want > 0 && (want & ~(RLOCK_WANT_READ | RLOCK_WANT_WRITE)) == 0, "wait() for %d", want);
    if (in_dry) { fk_now += timeout_ms ? timeout_ms : 1; dry_tick(); return 0; }
    if ((want & RLOCK_WANT_READ) && s->state == FC_OPEN && (s->out_off < s->out_len || s->eof)) return 1;
    c = in_byte();
    if (c & 1) return 1;
    fk_now += (c >> 1) < timeout_ms ? (c >> 1) : timeout_ms;
    return 0;
}

/* A notice the fuzzer chooses (p, q: input bytes), on server j's command
 * connection (a RESP3 push, when HELLO 3 was accepted there) or its
 * subscriber: a release notice for a lock's channel naming its waiter id
 * (a wake-up), another id or a fair "W N" ("N is next"), an unknown
 * channel, a short or odd payload, an unasked confirmation, malformed
 * bytes, part of a notice then a close. */
static void ps_publish(unsigned p, unsigned q) {
    int j = (int)((p >> 3) % (unsigned)h_nodes), to_sub = (p & 0x40) != 0, l = (int)(q % (unsigned)h_locks);
    char b[FS_MSG], ch[RLOCK_MAX_KEY_LEN + 16], x[80];
    size_t chn = chan_of_key(key_idx(l), ch), n;
    char type = to_sub ? '*' : '>';
    char wid[17]; /* (private: the id its attempts queue under; "" before its first wait: an id of 16 0s then) */
    if (p % 8 < 3) { /* a wake-up: mostly for a lock that waits, where it is subscribed (else rarely met) */
        int w[FK_LOCKS], nw = 0;
        for (int k = 0; k < h_locks; k++)
            if (lk[k].op.kind == RLOCK__OP_ACQUIRE && lk[k].op.sub_ok) w[nw++] = k;
        if (nw) {
            unsigned m = lk[w[q % (unsigned)nw]].op.sub_ok;
            const rlock__conn *on;
            l = w[q % (unsigned)nw];
            for (int k = (int)((p >> 3) % (unsigned)h_nodes), t = 0; t < h_nodes; t++, k = (k + 1) % h_nodes)
                if (m >> k & 1u) { j = k; break; }
            on = rlock__sub_conn(&cl, (size_t)j);
            to_sub = on == &subs[j].x;
            type = to_sub ? '*' : '>';
            chn = chan_of_key(key_idx(l), ch);
        }
    }
    snprintf(wid, sizeof wid, "%s", lk[l].waiter_id[0] ? lk[l].waiter_id : "0000000000000000");
    if (to_sub ? !h_subs || fs[j].state != FC_OPEN || fs[j].hung
               : fk[j].state != FC_OPEN || fk[j].hung || resp3_gen[j] != fk[j].gen + 1)
        return;
    switch (p % 8) {
    case 0: case 1: case 2: default:
        snprintf(x, sizeof x, "$16\r\n%.16s\r\n", wid);
        break;
    case 3:
        if (q & 0x40) snprintf(x, sizeof x, "$33\r\n%.16s %.16s\r\n", "0123456789abcdef", wid); /* we are next */
        else snprintf(x, sizeof x, "$16\r\n%.16s\r\n", "0123456789abcdef");
        break;
    case 4: /* unknown channel */
        chn = (q & 0x40) ? chan_of_key(3, ch) : 7;
        if (!(q & 0x40)) memcpy(ch, "random:", 7);
        snprintf(x, sizeof x, "$16\r\n%.16s\r\n", wid);
        break;
    case 5: { /* short or odd payload, or an unasked confirmation */
        static const char *const odd[4] = { "$0\r\n\r\n", ":1\r\n", "$5\r\nabcde\r\n", "*1\r\n:1\r\n" };
        if (q & 0x40) {
            n = ps_frame(b, type, (q & 0x80) ? "unsubscribe" : "subscribe", ch, chn, ":1\r\n");
            goto out;
        }
        snprintf(x, sizeof x, "%s", odd[(q >> 2) % 4]);
        break;
    }
    case 6: { /* malformed: the stream is lost */
        static const char *const bad[4] = { ">3\r\n$7\r\nmessage\r\n?\r\n", ">-1\r\n", ">3\r\n$7\r\nmessage\r\n$99999999999\r\n",
                                            ">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n" };
        n = (size_t)snprintf(b, sizeof b, "%s", bad[(q >> 2) % 4]);
        if (to_sub) b[0] = '*';
        if (to_sub) fs[j].hung = 1; else fk[j].hung = 1;
        goto out;
    }
    case 7: /* part of a notice, then the connection closes */
        snprintf(x, sizeof x, "$16\r\n%.16s\r\n", wid);
        n = ps_frame(b, type, "message", ch, chn, x);
        n = 1 + (q >> 2) % (n - 1);
        if (to_sub) fs[j].hung = fs[j].eof = 1;
        else fk[j].hung = fk[j].eof = 1;
        goto out;
    }
    n = ps_frame(b, type, "message", ch, chn, x);
out:
    if (fl_trace) fprintf(stderr, "publish on %s %d (lock %d, phase %d, subscribed %#x): %.*s\n", to_sub ? "sub" : "node", j,
                          l, lk[l].op.phase, lk[l].op.sub_ok, (int)n, b);
    if (to_sub) fs_emit(&fs[j], b, n);
    else fk_emit(&fk[j], b, n);
}

/* ---- the stream-sync check ---------------------------------------------------- */

/* Node n's requests that were wholly unsent after the last call (o, the
 * shadow), against those wholly unsent now (w, nw), on the same connection.
 * Between the two, rlock sent the first k of them (in order), took some
 * back unsent (rlock__x_timed_out: each at or past its own deadline or of
 * an op that ended, RLOCK__X_GONE; not an acquire's cleanup) and appended
 * new ones: so w must be o less what
 * was taken back, less the k sent, then the new ones - each survivor the
 * same entry as before (its bytes, deadline and tag; its owner the same, or
 * nobody once its op ended). A request failed before its deadline, or a
 * FIFO entry moved that is not the one whose bytes left tx (the stream then
 * pairs an entry with another's bytes: other deadline or bytes), fails this. */
static int unsent_same(const fk_unsent *a, const fk_unsent *b) {
    /* (disowned since: owner NULL, and tagged RLOCK__X_GONE) */
    return a->hash == b->hash && a->deadline == b->deadline &&
           ((a->tag == b->tag && b->owner == a->owner) ||
            (b->owner == NULL && (a->tag | RLOCK__X_GONE) == (b->tag | RLOCK__X_GONE)));
}
/* Whose op has ended (cancelled, destroyed, finished): its requests are
 * disowned (RLOCK__X_GONE), and what of them never went out never does. */
static int unsent_op_ended(const fk_unsent *a) {
    for (int l = 0; l < h_locks; l++)
        if (a->owner == &lk[l]) return lk[l].op.kind == RLOCK__OP_NONE || lk[l].op.phase == RLOCK__PH_DONE;
    return 0;
}
static int unsent_may_go(const fk_unsent *a) { /* what rlock__x_timed_out may take back now */
    return a->tag > 0 && !(a->tag & RLOCK__X_KEEP) &&
           (!RLOCK__MS_BEFORE((rlock__ms)fk_now, a->deadline) || (a->tag & RLOCK__X_GONE) || unsent_op_ended(a));
}
static void check_unsent(int n, const fk_unsent *w, int nw) {
    const fk_node *f = &fk[n];
    fk_shadow *sh = &shadow[n];
    if (sh->valid && sh->gen == f->gen) {
        const fk_unsent *o = sh->e;
        int no = sh->n, k = f->nreq - sh->nreq + (f->in_len > 0) - (sh->in_len > 0), ok = 0;
        for (int j = nw < no ? nw : no; j >= 0 && !ok; j--) {
            /* w[0..j) survivors, matched from the end to the latest places in o */
            int pos[RLOCK_MAX_PIPELINE], i = no, q, gone = 0, spare = 0;
            for (q = j - 1; q >= 0; q--) {
                while (--i >= 0 && !unsent_same(&o[i], &w[q])) {}
                if (i < 0) break;
                pos[q] = i;
            }
            if (q >= 0) continue;
            ok = 1;
            /* before the first survivor: k sent, the rest taken back (no
             * survivor: those not taken back sent, and maybe new ones after) */
            for (i = 0; i < (j ? pos[0] : no); i++) spare += unsent_may_go(&o[i]);
            gone = (j ? pos[0] : no) - k;
            if (!j && gone < 0) gone = 0;
            if (gone < 0 || spare < gone) ok = 0;
            /* between and after the survivors: all taken back */
            for (q = 0; q < j && ok; q++)
                for (i = pos[q] + 1; i < (q + 1 < j ? pos[q + 1] : no); i++)
                    if (!unsent_may_go(&o[i])) ok = 0;
        }
        if (!ok) {
            if (fl_trace) {
                fprintf(stderr, "  node %d unsent before (k %d sent since):", n, k);
                for (int i = 0; i < no; i++) fprintf(stderr, " [%#x %u %llx]", (unsigned)(unsigned short)o[i].tag,
                                                     (unsigned)o[i].deadline, (unsigned long long)(o[i].hash & 0xffff));
                fprintf(stderr, "\n  node %d unsent now (t=%u):", n, (unsigned)(rlock__ms)fk_now);
                for (int i = 0; i < nw; i++) fprintf(stderr, " [%#x %u %llx]", (unsigned)(unsigned short)w[i].tag,
                                                     (unsigned)w[i].deadline, (unsigned long long)(w[i].hash & 0xffff));
                fputc('\n', stderr);
            }
            FL_FAIL("node %d: the requests in rlock's TX buffer are not the earlier ones less those sent and those "
                    "taken back at or past their deadline, then new ones: one failed before its deadline, or a FIFO "
                    "entry moved that is not the one whose bytes left", n);
        }
    }
    sh->valid = 1;
    sh->gen = f->gen;
    sh->nreq = f->nreq;
    sh->in_len = f->in_len;
    sh->n = nw;
    memcpy(sh->e, w, (size_t)nw * sizeof *w);
}

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
        sync_l[len].lock = is_subcmd(av[0], al[0]) ? -2 : lock_of_cmd(av, al, ac);
        sync_l[len].delivered = 0;
        sync_l[len].hash = fk_hash(sync_buf + p, (size_t)used);
        sync_l[len++].in_tx = 1;
        p += (size_t)used;
    }
    m = (int)(x->count - x->failing);
    FL_CHECK(m <= len, "node %d: %d requests in rlock's FIFO, %d on the wire and in its buffer", n, m, len);
    for (i = 0; i < m; i++) {
        const rlock__pending *e = &x->q[(int)x->count - 1 - i];
        const fk_ent *w = &sync_l[len - 1 - i];
        if (w->lock == -2) { /* [UN]SUBSCRIBE: a waiter's (or nobody's) */
            FL_CHECK((RLOCK__X_TAG(e->tag) == RLOCK__TAG_SUB || (RLOCK__X_TAG(e->tag) == RLOCK__TAG_UNSUB && !e->owner)),
                     "node %d: FIFO entry %d (tag %#x) is not the [UN]SUBSCRIBE the stream has there", n,
                     (int)x->count - 1 - i, (unsigned)(unsigned short)e->tag);
        } else if (w->lock >= 0) {
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
    if (x->conn == RLOCK__CONN_UP && f->state == FC_OPEN) {
        /* the FIFO's entries whose commands are wholly in tx (the first one
         * in tx is the fake's partial command's rest when it has one) */
        int first;
        fk_unsent now_u[RLOCK_MAX_PIPELINE];
        int nu = 0;
        for (first = 0; first < len && !sync_l[first].in_tx; first++) {}
        if (f->in_len > 0) first++;
        for (i = len - m > first ? len - m : first; i < len; i++) {
            const rlock__pending *e = &x->q[(int)x->count - (len - i)];
            now_u[nu].owner = e->owner;
            now_u[nu].deadline = e->deadline;
            now_u[nu].tag = e->tag;
            now_u[nu++].hash = sync_l[i].hash;
        }
        check_unsent(n, now_u, nu);
    } else shadow[n].valid = 0;
}

/* ---- waiting's invariants ---------------------------------------------------------- */
/* The channels whose last [UN]SUBSCRIBE on connection `on` (server j's
 * command connection or subscriber) is a SUBSCRIBE - counting the commands
 * still in rlock's TX buffer (and the part of one the fake has): bit k for
 * key k's channel. */
static unsigned subscribed_after_tx(int j, const rlock__conn *on) {
    unsigned m;
    const unsigned char *in;
    size_t in_len, blen, p = 0;
    if (on == &nodes[j].x) { m = chan_node_gen[j] == fk[j].gen ? chan_node[j] : 0; in = fk[j].in; in_len = fk[j].in_len; }
    else { m = chan_sub[j]; in = fs[j].in; in_len = fs[j].in_len; }
    memcpy(sync_buf, in, in_len);
    memcpy(sync_buf + in_len, on->tx, on->tx_len);
    blen = in_len + on->tx_len;
    while (p < blen) {
        const unsigned char *av[FK_MAX_ARGS];
        size_t al[FK_MAX_ARGS];
        int ac = 0, k;
        long used = fk_cmd(sync_buf + p, blen - p, av, al, &ac);
        if (used <= 0) break;
        p += (size_t)used;
        if (ac != 2 || !is_subcmd(av[0], al[0]) || (k = key_of_chan(av[1], al[1])) < 0) continue;
        if (av[0][0] == 'U') m &= ~(1u << k);
        else m |= 1u << k;
    }
    return m;
}

/* Waiting (rlock__op_finish: "nothing of it stays in flight or subscribed
 * to"; rlock__op_unsubscribe: a channel another op still waits on is not
 * unsubscribed; rlock__adopt_linger: the lingering channel is subscribed):
 *  - an op that ended has no subscription attributed to it (sub_ok,
 *    sub_pending), and no subscriber FIFO entry (tag SUB) of it;
 *  - a subscriber FIFO holds AUTH, SUBSCRIBE (its lock's op running, or
 *    nobody's) and UNSUBSCRIBE (nobody's) only;
 *  - an acquire that believes it is subscribed on server j (sub_ok bit j,
 *    on the connection rlock keeps server j's subscriptions on) has had its
 *    channel's SUBSCRIBE sent or queued there, with no UNSUBSCRIBE of it
 *    after; the same for the lingering channel (linger_mask). */
static void check_waiting(void) {
    for (int l = 0; l < h_locks; l++) {
        const rlock_op *op = &lk[l].op;
        if (op->kind == RLOCK__OP_NONE || op->phase == RLOCK__PH_DONE)
            FL_CHECK(!op->sub_ok && !op->sub_pending, "lock %d: its op ended, subscriptions still its own (ok %#x, pending %#x)",
                     l, op->sub_ok, op->sub_pending);
    }
    for (int j = 0; j < h_nodes && h_subs; j++) {
        const rlock__conn *x = &subs[j].x;
        FL_CHECK(x->count <= RLOCK_SUB_PIPELINE && x->failing <= x->count, "subscriber %d: FIFO count %u, failing %u", j,
                 x->count, x->failing);
        for (unsigned i = x->failing; i < x->count; i++) {
            const rlock__pending *e = &x->q[i];
            int t = RLOCK__X_TAG(e->tag), o = -1;
            for (int l = 0; l < h_locks; l++) o = e->owner == &lk[l] ? l : o;
            FL_CHECK(e->tag == RLOCK__TAG_AUTH || (t == RLOCK__TAG_SUB && (e->owner == NULL || o >= 0)) ||
                     (t == RLOCK__TAG_UNSUB && e->owner == NULL),
                     "subscriber %d: FIFO entry %u: tag %#x, owner %p", j, i, (unsigned)(unsigned short)e->tag, e->owner);
            FL_CHECK(o < 0 || (hl[o].running && lk[o].op.kind == RLOCK__OP_ACQUIRE && lk[o].op.phase != RLOCK__PH_DONE),
                     "subscriber %d: FIFO entry %u owned by lock %d, whose op ended", j, i, o);
        }
    }
    if (fk_overflow) return;
    for (int j = 0; j < h_nodes; j++) {
        const rlock__conn *on = rlock__sub_conn(&cl, (size_t)j);
        unsigned m;
        if (!on) continue;
        m = subscribed_after_tx(j, on);
        for (int l = 0; l < h_locks; l++)
            if (lk[l].op.kind == RLOCK__OP_ACQUIRE && (lk[l].op.sub_ok >> j & 1u))
                FL_CHECK(m >> key_idx(l) & 1u, "lock %d waits subscribed on server %d's %s, where its channel's last "
                         "command is %s", l, j, on == &nodes[j].x ? "command connection" : "subscriber",
                         "an UNSUBSCRIBE (or none)");
        if (cl.linger_mask >> j & 1u) {
            int k = key_of_chan((const unsigned char *)cl.linger, cl.linger_len);
            FL_CHECK(k >= 0 && (m >> k & 1u), "the lingering channel %.*s: subscribed on server %d, says rlock; its last "
                     "command there is an UNSUBSCRIBE (or none)", (int)cl.linger_len, cl.linger, j);
        }
    }
}

/* ---- the oracle ---------------------------------------------------------------- */
/* Lock l's op ended with st (collected now). */
static void end_of_op(int l, rlock_status st) {
    hlock *h = &hl[l];
    int q = (int)rlock_client_quorum(&cl);
    uint64_t first;
    check_status(st, "op");
    FL_CHECK(st != RLOCK_WOULD_BLOCK, "lock %d: op ended WOULD_BLOCK", l);
    if (fl_trace)
        fprintf(stderr, "lock %d op %d: %s%s -> %s (state %d, votes %zu, t=%llu)\n", l, h->op_id,
                h->op == 0 ? "acquire" : h->renew ? "renewal" : h->op == 1 ? "extend" : "release",
                h->cancelled ? " (cancelled)" : "",
                rlock_status_str(st), (int)rlock_lock_state(&lk[l]), rlock_last_votes(&lk[l]),
                (unsigned long long)fk_now);
    if (h->op == 0) {
        FL_CHECK(st != RLOCK_LOST && st != RLOCK_NOT_HELD, "lock %d: acquire returned %s", l, rlock_status_str(st));
        if (st == RLOCK_NOT_ACQUIRED) FL_CHECK(h->wait == 0, "lock %d: NOT_ACQUIRED after waiting %lld", l, h->wait);
        if (st == RLOCK_TIMEOUT) FL_CHECK(h->wait > 0, "lock %d: TIMEOUT from a try-once acquire", l);
        if (st == RLOCK_OK && !h->cancelled) {
            int votes = count_votes(&lk[l], l, h->op_id, h->held_mask, script_base(), 1, &first);
            FL_CHECK(votes >= q, "lock %d: acquire OK with %d granted replies to it, quorum %d", l, votes, q);
            check_validity(&lk[l], l, h->ttl, first, h_late);
            /* (a grant read in the same recv() as an earlier reply that made
             * rlock drop the connection is never counted: rlock does not
             * know it holds there - the release's round reaches that node
             * anyway - so its "not ours" to the release is neutral) */
            h->held_mask = h_vote_mask & lk[l].held_mask;
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
            int votes = count_votes(&lk[l], l, h->op_id, h->held_mask, script_base() + 1, 0, &first);
            FL_CHECK(votes >= q, "lock %d: extend OK with %d votes", l, votes);
            check_validity(&lk[l], l, h->ttl, first, h_late);
            h->held_mask = h_vote_mask & lk[l].held_mask; /* (as the acquire's) */
            h->held_ttl = h->ttl;
        }
    } else {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "lock %d: release returned %s", l, rlock_status_str(st));
        if (st == RLOCK_OK && !h->cancelled) {
            int votes = count_votes(&lk[l], l, h->op_id, h->held_mask, script_base() + 2, 0, &first);
            FL_CHECK(votes >= q || (popcount(h->held_mask) >= q && votes > 0 && votes + h_neutral >= q),
                     "lock %d: release OK with %d votes, %d neutral, %d nodes held", l, votes, h_neutral,
                     popcount(h->held_mask));
        } else if (st == RLOCK_LOST && !h->cancelled) {
            /* lost: some node said "not ours" (fuzz_lock.c) */
            (void)count_votes(&lk[l], l, h->op_id, h->held_mask, script_base() + 2, 0, &first);
            FL_CHECK(h_not_ours > 0, "lock %d: release LOST with no node's \"not ours\"", l);
        }
    }
    if (h->renew && !h->cancelled) {
        rlock_renewal o = rlock_renew_outcome(&lk[l]);
        FL_CHECK(st == RLOCK_OK ? o == RLOCK_RENEW_RENEWED : st == RLOCK_LOST ? o == RLOCK_RENEW_LOST : o == RLOCK_RENEW_FAILED,
                 "lock %d: a renewal ended %s, its outcome %d", l, rlock_status_str(st), (int)o);
        if (st == RLOCK_LOST && h->was_held) FL_CHECK(h->lost_calls == 1, "lock %d: renewal found it lost without on_lost", l);
    }
    FL_CHECK(!lk[l].op.sub_ok && !lk[l].op.sub_pending, "lock %d: its op ended (%s), subscriptions still its own (ok %#x, "
             "pending %#x)", l, rlock_status_str(st), lk[l].op.sub_ok, lk[l].op.sub_pending);
    for (int n = 0; n < h_nodes; n++) fk[n].needs_release &= ~(1u << l);
    h->running = h->renew = h->blocking = 0;
}

static void check_all(void) {
    if (h_pubsub || h_subs) check_waiting();
    for (int j = 0; j < h_nodes && h_subs && fl_trace; j++) {
        const rlock__conn *x = &subs[j].x;
        if (!x->count && !cl.linger_mask) continue;
        fprintf(stderr, "  sub %d FIFO (conn %d, %u failing, tx %zu; linger %#x):", j, x->conn, x->failing, x->tx_len, cl.linger_mask);
        for (unsigned i = 0; i < x->count; i++) {
            int o = -1;
            for (int l = 0; l < h_locks; l++) o = x->q[i].owner == &lk[l] ? l : o;
            fprintf(stderr, " [%d %#x %u %u]", o, (unsigned)(unsigned short)x->q[i].tag, (unsigned)x->q[i].len,
                    (unsigned)x->q[i].deadline);
        }
        fputc('\n', stderr);
    }
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
        if (!hl[l].running || hl[l].blocking) continue;
        if (hl[l].renew) {
            /* A renewal's end is the poll's to collect (rlock_result would
             * take it and leave the poll's bookkeeping undone): once it is
             * done (private: look inside), the poll must return it without I/O. */
            uint32_t next;
            if (lk[l].op.kind == RLOCK__OP_NONE || lk[l].op.phase != RLOCK__PH_DONE) continue;
            st = rlock_renew_poll(&lk[l], &next);
            FL_CHECK(st != RLOCK_WOULD_BLOCK, "lock %d: its renewal is done, rlock_renew_poll says it blocks", l);
        } else {
            st = rlock_result(&lk[l]);
        }
        check_status(st, "rlock_result");
        if (st != RLOCK_WOULD_BLOCK) end_of_op(l, st);
    }
    check_all();
}

/* What a call that starts or steps lock l returned. */
static void took(int l, rlock_status st, const char *where) {
    check_status(st, where);
    if (st != RLOCK_WOULD_BLOCK) end_of_op(l, st);
    h_late = hl[l].blocking_call; /* the others' ops that ended during l's blocking call */
    hl[l].blocking_call = 0;
    collect();
    h_late = 0;
}

/* Begin op on idle lock l (3: a renewal), or with `blocking` run it to its
 * end by the blocking call (rlock_acquire / _extend / _release), which
 * steps the client: the other locks' ops go on meanwhile. */
static void begin(int l, int op, int blocking) {
    hlock *h = &hl[l];
    rlock_status st;
    fk_hook_calls = 0;
    h->op = op;
    h->op_id = ++h_op_seq;
    h->cancelled = 0;
    h->wait = 0;
    h->was_held = rlock_lock_state(&lk[l]) == RLOCK_STATE_HELD;
    h->running = 1; /* (before the call: requests may go out in it) */
    h->blocking = h->blocking_call = blocking;
    if (op == 0) {
        unsigned w;
        h->ttl = ttls[in_byte() % 16];
        w = in_byte();
        h->wait = (w & 3) == 0 ? 0 : (long long)(w >> 2) * 16;
        ttl_note(h, h->ttl);
        /* the token the acquire will send is chosen inside: note the
         * current one (re-entry, cleanup) and, after begin, the new one */
        tok_note(h, rlock_lock_token(&lk[l]));
        st = blocking ? rlock_acquire(&lk[l], h->ttl, h->wait) : rlock_acquire_begin(&lk[l], h->ttl, h->wait);
    } else if (op == 1) {
        h->ttl = ttls[in_byte() % 16];
        ttl_note(h, h->ttl);
        st = blocking ? rlock_extend(&lk[l], h->ttl) : rlock_extend_begin(&lk[l], h->ttl);
    } else if (op == 3) { /* a renewal: an extend to the lock's own ttl (private: look inside), when due */
        uint32_t next;
        h->op = 1;
        h->renew = 1;
        h->ttl = lk[l].ttl_ms;
        ttl_note(h, h->ttl);
        st = rlock_renew_poll(&lk[l], &next);
        if (st != RLOCK_WOULD_BLOCK && (st == RLOCK_NOT_HELD || rlock_renew_outcome(&lk[l]) == RLOCK_RENEW_NOT_DUE)) {
            FL_CHECK(st == RLOCK_OK || st == RLOCK_NOT_HELD, "lock %d: a renewal not due returned %s", l, rlock_status_str(st));
            if (fl_trace) fprintf(stderr, "lock %d: renewal not due -> %s\n", l, rlock_status_str(st));
            h->running = h->renew = h->blocking = 0; /* no extend went out */
            collect();
            return;
        }
    } else {
        st = blocking ? rlock_release(&lk[l]) : rlock_release_begin(&lk[l]);
    }
    if (blocking) FL_CHECK(st != RLOCK_WOULD_BLOCK, "lock %d: a blocking call returned WOULD_BLOCK", l);
    tok_note(h, rlock_lock_token(&lk[l]));
    if (fl_trace) fprintf(stderr, "lock %d op %d: %s%s%s (ttl %lld, wait %lld) -> %s\n", l, h->op_id,
                          blocking ? "blocking " : "",
                          op == 0 ? "acquire" : op == 1 ? "extend" : op == 3 ? "renewal" : "release",
                          blocking ? "" : " begins", h->ttl, h->wait, rlock_status_str(st));
    took(l, st, "begin");
}

static void event(unsigned e) {
    int l = (int)((e >> 3) % (unsigned)h_locks);
    rlock_status st;
    switch (e & 7) {
    case 0: case 1: case 2: case 3: case 7: /* begin on an idle lock, else step it */
        if (!hl[l].running) { /* (7: the blocking call of an op the next byte picks) */
            if ((e & 7) == 7) begin(l, (int)(in_byte() % 3), 1);
            else begin(l, (e & 7) <= 1 ? 0 : (int)(e & 7) - 1, 0);
            break;
        }
        fk_now += clock_step(in_byte());
        if (fl_trace) fprintf(stderr, "step lock %d (t=%llu)\n", l, (unsigned long long)fk_now);
        if (hl[l].renew) {
            uint32_t next;
            st = rlock_renew_poll(&lk[l], &next);
        } else {
            st = rlock_step(&lk[l]);
        }
        (void)rlock_next_timeout_ms(&lk[l]);
        took(l, st, hl[l].renew ? "rlock_renew_poll" : "rlock_step");
        break;
    case 4:
        if (!hl[l].running) { begin(l, (e >> 5) < 6 ? (int)(e >> 5) % 3 : 3, 0); break; } /* (3: a renewal) */
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
        if ((h_pubsub || h_subs) && (e & 0x80)) { /* (waiting: half of them a notice instead) */
            unsigned p = in_byte();
            ps_publish(p, in_byte());
            break;
        }
        fk_now += (uint64_t)(1 + (e >> 3)) * 16;
        if (fl_trace) fprintf(stderr, "jump to t=%llu, client step\n", (unsigned long long)fk_now);
        check_status(rlock_client_step(&cl), "rlock_client_step");
        collect();
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint32_t timeouts[4] = { 0, 5, 20, 100 }, recheck[4] = { 0, 1, 30, 300 };
    unsigned b[3], b3;
    int ev, dry;
    if (!fk_start(data, size, b)) return 0;
    b3 = in_byte(); /* waiting: see the top */
    memset(hl, 0, sizeof hl);
    memset(shadow, 0, sizeof shadow);
    memset(fs, 0, sizeof fs);
    memset(chan_node, 0, sizeof chan_node); memset(chan_sub, 0, sizeof chan_sub);
    memset(chan_node_gen, 0, sizeof chan_node_gen); memset(resp3_gen, 0, sizeof resp3_gen);
    h_pubsub = b3 & 1;
    h_subs = (b3 >> 1) & 1;
    h_recheck = recheck[(b3 >> 2) & 3];
    h_hello = (int)((b3 >> 4) & 3) % 3;
    h_shared = (b3 & 0x40) && h_kind == RLOCK_KIND_SIMPLE;
    fk_cfg_more = cfg_waiting;
    h_locks = 2 + (int)((b[0] >> 4) & 1) + (int)((b[2] >> 6) & 1); /* 2-4 */
    h_op_seq = 0; h_nfresh = 0;
    /* b[2] bit 7: the scripts as Redis functions (FCALL, CLIENT SETNAME and
     * FUNCTION LOAD joined to it in one attempt) */
    fk_client_init(b, timeouts, (b[1] & 0x40) != 0, (b[2] & 0x80) && RLOCK__HAS_FCALL ? RLOCK_SCRIPTS_FCALL : 0);
    /* long keys fill the TX buffer sooner: requests wait for room behind others */
    h_key_len = (b[2] & 0x20) ? RLOCK_MAX_KEY_LEN : 8;
    if (h_subs) {
        for (int j = 0; j < h_nodes; j++) {
            rlock_transport tr;
            memset(&tr, 0, sizeof tr);
            tr.ctx = &fs[j];
            tr.send = fs_send;
            tr.recv = fs_recv;
            tr.connect = h_noconnect ? NULL : fs_connect;
            tr.close = fs_close;
            tr.wait = fs_wait;
            if (!tr.connect) fs[j].state = FC_OPEN;
            FL_CHECK(rlock_subscriber_init(&subs[j], &tr) == RLOCK_OK, "subscriber init");
            subs[j].username = h_user;
            subs[j].password = h_pass;
        }
        FL_CHECK(rlock_client_set_subscribers(&cl, subs, (size_t)h_nodes) == RLOCK_OK, "set subscribers: %s",
                 rlock_client_error(&cl));
    }
    for (int l = 0; l < h_locks; l++) {
        char key[RLOCK_MAX_KEY_LEN];
        key_of(l, key);
        FL_CHECK(rlock_lock_init(&lk[l], &cl, key, h_key_len, (rlock_kind)h_kind) == RLOCK_OK, "lock init");
    }
    fk_random_can_fail = (b[1] & 0x80) != 0;

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
    fk_finish();
    if (!fk_overflow && h_subs)
        for (int j = 0; j < h_nodes; j++)
            FL_CHECK(fs[j].state == FC_CLOSED || (h_noconnect && fs[j].gen == 0), "subscriber %d left open at the end", j);
    return 0;
}
