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
 * The fake servers, clock and oracle helpers are tests/fuzz/fake.h's
 * (fuzz_locks.c has the same); this file checks and records what they get.
 *
 * Build with -DRLOCK_LIBFUZZER for libFuzzer; without it, main() replays the
 * files or directories named on the command line (gcc, no libFuzzer).
 */
/* A fixed thread id: the default reentrant owner id ("<instance id>:<thread
 * id>") is then the same in every replay - the instance id comes from the
 * fake random source - and so is every request's length (pthread_self's
 * digits vary with ASLR). */
#define RLOCK_THREAD_ID() 42UL
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it asks for the POSIX APIs the replay main uses */

#define FK_NAME "fuzz_lock"
#define FK_MAX_REQ 384
#include "fake.h"

#define FK_DRY_STEPS 8
#define FK_MAX_OPS 8

static int h_lost_calls;   /* on_lost calls since the last fresh grant */
static rlock_lock lk;

static void hook_lost(rlock_lock *l, void *u) {
    (void)u;
    FL_CHECK(l == &lk, "on_lost called with another lock");
    FL_CHECK(++h_lost_calls == 1, "on_lost called %d times for one grant", h_lost_calls);
}

/* What the harness is doing, for the fakes to check requests against. */
static int h_op_id, h_op;
static long long h_ttl, h_held_ttl;
static int h_was_held, h_cancelled;
static char h_tokens[FK_MAX_OPS][RLOCK_MAX_OWNER_LEN + 1]; /* simple tokens handed out so far */
static int h_ntok;
static char h_key[RLOCK_MAX_KEY_LEN];
static size_t h_key_len;
static unsigned h_held_mask; /* the nodes that granted the hold (count_votes) */

/* A complete command arrived on f (fake.h: fk_accept). */
static void fk_request(fk_node *f, int ni, const unsigned char **av, const size_t *al, int ac) {
    fk_req *r;
    fk_call c;
    int done, s;
    /* Nothing may be sent while an earlier reply on this connection is
     * unread: that reply would be read as this command's answer. */
    for (int i = f->conn_first; i < f->nreq; i++) {
        const fk_req *e = &f->req[i];
        FL_CHECK(e->kind == RQ_AUTH || (e->reply != RP_NONE && e->delivered),
                 "node %d: command sent while the reply to request %d is unread (stale reply)", ni, i);
    }
    r = fk_new_request(f, ni, av, al, ac, &done);
    if (!r) return;
    r->op = h_op_id;
    if (done) return; /* AUTH, PING */
    fk_parse_script(f, r, ni, av, al, ac, &c);
    r->lock = 0;
    FL_CHECK(c.key_len == h_key_len && memcmp(c.key, h_key, h_key_len) == 0, "node %d: wrong key", ni);
    FL_CHECK(fk_arg_is(c.owner, c.owner_len, rlock_lock_token(&lk)), "node %d: owner is not the lock's token", ni);
    /* The script must be the op's: acquire may also clean up with release. */
    s = r->script - script_base();
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
    if (r->eval) { /* only as the fallback right after NOSCRIPT for this script */
        const fk_req *p = f->nreq >= 2 ? &f->req[f->nreq - 2] : NULL;
        FL_CHECK(p && p->conn == f->conn && p->kind == RQ_SCRIPT && !p->eval && p->script == r->script &&
                 p->reply == RP_NOSCRIPT, "node %d: EVAL without a NOSCRIPT just before", ni);
    }
    if (f->hung) return;
    fk_reply_script(f, r);
}

/* A grant rlock read: while an acquire runs, it must be released if the acquire fails. */
static void fk_granted(fk_node *f, const fk_req *r) {
    (void)r;
    if (h_op == 0) f->needs_release = 1;
}

static long fk_send(void *ctx, const unsigned char *buf, size_t len) {
    fk_node *f = (fk_node *)ctx;
    int ni = (int)(f - fk);
    unsigned c;
    size_t k;
    if (fl_trace) fprintf(stderr, "  node %d: send %zu bytes\n", ni, len);
    if (!fk_send_ok(f->state, len, "node", ni)) return RLOCK_IO_WOULD_BLOCK;
    c = in_byte();
    switch (c % 16) {
    case 0: case 1: return RLOCK_IO_WOULD_BLOCK;
    case 2: return RLOCK_IO_ERROR;
    case 3: return (long)len + 1; /* a broken transport: rlock must not trust it */
    case 4: case 5: case 6: k = 1 + (c >> 4) % 8; break;
    case 7: k = 1 + (c >> 4) * 16; break;
    default: k = len; break;
    }
    return fk_accept(f, ni, buf, k < len ? k : len);
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
    return fk_deliver(f, buf, len, k);
}


/* ---- the harness ------------------------------------------------------------ */

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
            int votes = count_votes(&lk, 0, h_op_id, h_held_mask, script_base(), 1, &first);
            FL_CHECK((size_t)votes >= rlock_client_quorum(&cl), "acquire OK with %d granted replies, quorum %zu",
                     votes, rlock_client_quorum(&cl));
            check_validity(&lk, 0, h_ttl, first, 0);
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
            int votes = count_votes(&lk, 0, h_op_id, h_held_mask, script_base() + 1, 0, &first);
            FL_CHECK((size_t)votes >= rlock_client_quorum(&cl), "extend OK with %d votes", votes);
            check_validity(&lk, 0, h_ttl, first, 0);
            h_held_mask = h_vote_mask;
            h_held_ttl = h_ttl;
        }
    } else {
        FL_CHECK(st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT, "release returned %s", rlock_status_str(st));
        if (st == RLOCK_OK) {
            uint64_t first;
            int votes = count_votes(&lk, 0, h_op_id, h_held_mask, script_base() + 2, 0, &first), q = (int)rlock_client_quorum(&cl);
            /* released where we held it, and "not ours" only from nodes that
             * never granted this hold: the rule rlock__release_round_done states */
            FL_CHECK(votes >= q || (popcount(h_held_mask) >= q && votes > 0 && votes + h_neutral >= q),
                     "release OK with %d votes, %d neutral, %d nodes held", votes, h_neutral, popcount(h_held_mask));
        } else if (st == RLOCK_LOST) {
            /* lost: some node said "not ours" (an answer no script gives is
             * no such word: RP_SHAPE) */
            uint64_t first;
            (void)count_votes(&lk, 0, h_op_id, h_held_mask, script_base() + 2, 0, &first);
            FL_CHECK(h_not_ours > 0, "release LOST with no node's \"not ours\"");
        }
    }
    for (int n = 0; n < h_nodes; n++) fk[n].needs_release = 0;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const uint32_t timeouts[4] = { 0, 1, 20, 100 };
    unsigned b[3];
    int ops;
    if (!fk_start(data, size, b)) return 0;
    h_op = -1; h_op_id = 0; h_held_ttl = 0; h_ntok = 0; h_cancelled = 0; h_lost_calls = 0; h_held_mask = 0;
    fk_client_init(b, timeouts, (b[2] & 0x80) != 0, 0);
    h_key_len = (b[2] & 0x20) ? RLOCK_MAX_KEY_LEN : 7;
    memset(h_key, 'k', h_key_len);
    memcpy(h_key, "fz:lock", 7);
    FL_CHECK(rlock_lock_init(&lk, &cl, h_key, h_key_len, (rlock_kind)h_kind) == RLOCK_OK, "lock init");
    fk_random_can_fail = (b[2] & 0x40) != 0;

    for (ops = 0; ops < FK_MAX_OPS && !in_dry && !fk_overflow; ops++) run_op(in_byte());

    rlock_lock_destroy(&lk);
    fk_finish();
    return 0;
}
