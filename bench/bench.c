/* bench.c - `make bench`: rlock's speed next to raw hiredis and to other lock
 * clients, same machine, same run, plus what one lock cycle costs the client.
 *
 * Starts 5 throwaway redis-servers on loopback (tests/harness.h), then:
 *   1. floor      raw hiredis: PING round trip; SET key tok NX PX 30000 +
 *                 EVALSHA <rlock's simple release script> (2 round trips/cycle)
 *      ref        hiredis sending rlock's own EVALSHA scripts (1 node, and
 *                 fanned out to 3 and 5 nodes: every request written before
 *                 any reply is read) - what rlock costs beyond the commands
 *   2. rlock      uncontended acquire+release cycles: single node (POSIX and
 *                 hiredis adapters), reentrant, Redlock 3 and 5 (and Redlock 3
 *                 over hiredis), as ratios to the floor, to the ref row with
 *                 the same commands, and to single-node. The peers' uncontended
 *                 rows (4.) run in the same loop: every row runs in short
 *                 slices, round-robin, so a busy spell of the machine hits all
 *                 of them alike; each also reports the client's CPU per cycle.
 *   3. contended  8 and 16 forked processes on one key, 1 ms critical sections,
 *                 on 1, 3 and 5 nodes, each waiting by backoff ("spin"), by
 *                 pub/sub (a subscriber connection per node,
 *                 rlock_client_set_subscribers), and the fair lock ("fair":
 *                 rlock_lock_set_fair, pub/sub): acquisitions/s against the
 *                 ceiling 1 / (critical section + one PING RTT); commands per
 *                 acquisition the clients sent (rlock_node_commands) and calls
 *                 the servers executed (INFO commandstats, scripts' inner calls
 *                 included); handoff latency - every hold's acquire-return,
 *                 release-call and release-return times (CLOCK_MONOTONIC) go
 *                 to a shared file mapping, the parent orders the holds and
 *                 measures release call -> next holder's acquire return; the
 *                 share of re-takes by the releaser; longest wait; overlaps
 *                 (must be 0).
 *   4. peers      bench/peers/: node-redlock and redis-semaphore (Mutex,
 *                 RedlockMutex) over ioredis, redis-py's Lock, and each
 *                 language's raw client as its own floor; uncontended (in the
 *                 slices of 2.) and 8 processes contended, same measurements.
 *                 `make bench` installs them first (bench/peers/setup.sh); a
 *                 missing one is a "skipped: <why>" row.
 *   5. footprint  bench/footprint.sh: heap allocations during the cycles (0
 *                 expected), instructions per cycle (callgrind), stack
 *                 high-water of one acquire; bench/size.sh: .text of the core
 *                 at -Os for x86-64, Cortex-M4 and RISC-V (`make size`).
 *   6. engine     issue 11: the pre-engine library (bc01738, bench/old/) in
 *                 the slices of 2. and paired A/B against today's, with
 *                 instructions per cycle of both (bench/old/instr.sh); 1, 4
 *                 and 16 locks on one event-loop client; connections per
 *                 server and a pub/sub waiter's sockets (RESP3, RESP2) as the
 *                 servers count them (CLIENT LIST); sizes before and after;
 *                 the longest functions (bench/funclen.sh).
 * Then the issues' goals, judged on this run (issue 12's: fair and default
 * rows against the ceiling, Redlock-5 against its single-node row and the
 * peers, the uncontended fast path against the floor and the fan-out ref).
 * Prints tables and writes CSV
 * (default build/bench.csv, or argv[1]). Speed is only reported, never
 * asserted; the exit status is non-zero only for errors (servers, lock
 * failures, overlapping critical sections, a failing helper).
 * RLOCK_BENCH_SECONDS=x sets the seconds per uncontended row (default 2;
 * contended rows run 1.5 times as long). RLOCK_BENCH_ONLY=text runs only the
 * rlock contended rows whose "name, waiting, N procs" contains text (e.g.
 * "1 node, pub/sub", "fair", "procs" for all of them; the primitives' rows by
 * name: "semaphore", "read-write"), after a PING round-trip
 * measure for their ceiling; everything else is skipped (a quick look at one
 * change on a shared machine). Servers are stopped by PID on every
 * exit path (and die with this process otherwise: PR_SET_PDEATHSIG). */
#define RLOCK_IMPLEMENTATION
#include "../adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "../adapters/rlock_hiredis.h"
#include "../tests/harness.h"
#include "old/old.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/mman.h>
#include <poll.h>
#include <dirent.h>
#include <arpa/inet.h>

#define N_SERVERS 5
#define MAX_PROCS 16
#define MAX_REC 16384 /* holds recorded per worker and row */
#define N_RL_CROWS 16 /* rlock contended rows */
#define N_PRIM_CROWS 2 /* rlock primitives rows: semaphore, read-write */
/* A contended row's waiting: pubsub -1 a peer's own polling, 0 rlock's
 * backoff, 1 pub/sub (barging lock), 2 the fair lock (pub/sub). */
#define WAITING(r) ((r)->pubsub < 0 ? "poll" : (r)->pubsub == 2 ? "fair" : (r)->pubsub ? "pub/sub" : "spin")
#define WARMUP_CYCLES 300
#define SLICES 10 /* uncontended rows run interleaved in this many slices each */
#define ROW_TTL_MS 30000
#define CS_TTL_MS 5000
#define CS_WAIT_MS 30000
#define N_ROWS 21 /* uncontended rows: 12 + the engine rows (6.) */

static rh_server g_srv[N_SERVERS];
static pid_t g_parent;
static volatile sig_atomic_t g_stop;
static double g_row_s = 2.0, g_contended_s = 3.0;

/* ------------------------------------------------------------ utilities */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stop_servers(void) {
    int i;
    if (getpid() != g_parent) return; /* forked workers never stop servers */
    for (i = 0; i < N_SERVERS; i++)
        if (g_srv[i].pid > 0 || g_srv[i].dir[0]) rh_server_stop(&g_srv[i]);
}

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1; /* loops end early; main stops the servers. SA_RESETHAND: a second ^C kills */
}

static void sleep_1ms(void) {
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

/* ------------------------------------------------------- machine header */

static void cpu_model(char *out, size_t cap) {
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(out, cap, "unknown");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            size_t n;
            colon++;
            while (*colon == ' ' || *colon == '\t') colon++;
            n = strcspn(colon, "\n");
            snprintf(out, cap, "%.*s", (int)n, colon);
            break;
        }
    }
    fclose(f);
}

static int count_cpus(void) {
    char line[512];
    int n = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "processor", 9) == 0) n++;
    fclose(f);
    return n;
}

/* The first three fields of /proc/loadavg. */
static const char *loadavg(char *out, size_t cap) {
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;
    if (!f || fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3) snprintf(out, cap, "?");
    else snprintf(out, cap, "%.2f %.2f %.2f", a, b, c);
    if (f) fclose(f);
    return out;
}

/* redis_version from INFO server of a running server. */
static void redis_version(const rh_server *s, char *out, size_t cap) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    snprintf(out, cap, "unknown");
    if (!c) return;
    r = (redisReply *)redisCommand(c, "INFO server");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "redis_version:");
        if (p) {
            p += 14;
            snprintf(out, cap, "%.*s", (int)strcspn(p, "\r\n"), p);
        }
    }
    if (r) freeReplyObject(r);
    redisFree(c);
}

/* ------------------------------------------------- INFO commandstats */

#define MAX_CMDS 48
typedef struct cmdstats {
    unsigned long long all;     /* calls of every command except info / config (incl. calls made inside Lua) */
    unsigned long long scripts; /* EVAL / EVALSHA calls: what clients sent for the lock */
    int n;                      /* per command (the first MAX_CMDS) */
    char name[MAX_CMDS][32];
    unsigned long long calls[MAX_CMDS];
} cmdstats;

/* Add (sign 1) or subtract (sign -1) s's per-command calls into acc. */
static void cmdstats_acc(cmdstats *acc, const cmdstats *s, int sign) {
    int i, j;
    for (i = 0; i < s->n; i++) {
        for (j = 0; j < acc->n && strcmp(acc->name[j], s->name[i]) != 0; j++) { }
        if (j == acc->n) {
            if (acc->n == MAX_CMDS) continue;
            memcpy(acc->name[acc->n], s->name[i], sizeof acc->name[0]);
            acc->calls[acc->n++] = 0;
        }
        acc->calls[j] += sign > 0 ? s->calls[i] : (unsigned long long)0 - s->calls[i];
    }
}

static int read_cmdstats(const rh_server *s, cmdstats *out) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    const char *p;
    int ok = -1;
    memset(out, 0, sizeof *out);
    if (!c) return -1;
    r = (redisReply *)redisCommand(c, "INFO commandstats");
    if (r && r->type == REDIS_REPLY_STRING) {
        ok = 0;
        for (p = r->str; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            char name[64];
            const char *colon, *calls;
            size_t n;
            unsigned long long v;
            if (strncmp(p, "cmdstat_", 8) != 0) continue;
            p += 8;
            colon = strchr(p, ':');
            if (!colon) break;
            n = (size_t)(colon - p);
            if (n >= sizeof name) continue;
            memcpy(name, p, n);
            name[n] = 0;
            calls = strstr(colon, "calls=");
            if (!calls) continue;
            v = strtoull(calls + 6, NULL, 10);
            if (strcmp(name, "info") == 0 || strcmp(name, "config") == 0 ||
                strncmp(name, "config|", 7) == 0)
                continue;
            out->all += v;
            if (out->n < MAX_CMDS && n < sizeof out->name[0]) {
                memcpy(out->name[out->n], name, n + 1);
                out->calls[out->n++] = v;
            }
            if (strcmp(name, "eval") == 0 || strcmp(name, "evalsha") == 0 ||
                strcmp(name, "eval_ro") == 0 || strcmp(name, "evalsha_ro") == 0)
                out->scripts += v;
        }
    }
    if (r) freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* ----------------------------------------------- uncontended rows */

typedef int (*op_fn)(void *ctx); /* 0 ok */

typedef struct row {
    const char *name;
    const char *adapter;
    int nodes;
    op_fn acq, rel;
    void *ctx;
    int ready;               /* set up, and not given up on */
    int ref, single;         /* rows to compare with (-1: none) */
    uint32_t *samples;       /* acquire latencies, ns */
    size_t n, cap;
    unsigned long errors;
    uint64_t ns;             /* time spent in this row's slices */
    uint64_t cpu_ns;         /* this process's CPU time (user + sys) in them */
    double cps, p50, p99, cpu_us;
    double x_floor, x_ref, x_single, p50_x_single; /* < 0: not applicable */
} row;

static void row_warmup(row *r) {
    int i;
    for (i = 0; i < WARMUP_CYCLES && !g_stop; i++) {
        if (r->acq(r->ctx) != 0) { r->errors++; continue; }
        if (r->rel && r->rel(r->ctx) != 0) r->errors++;
    }
}

/* One slice: cycle acq (timed) + rel for slice_ns. */
static uint64_t cpu_ns(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void row_slice(row *r, uint64_t slice_ns) {
    uint64_t cpu0 = cpu_ns(), start = now_ns(), end = start, t0, t1;
    while (!g_stop && end - start < slice_ns) {
        if (r->n == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 65536;
            uint32_t *p = (uint32_t *)realloc(r->samples, cap * sizeof *p);
            if (!p) { r->errors++; r->ready = 0; break; }
            r->samples = p;
            r->cap = cap;
        }
        t0 = now_ns();
        if (r->acq(r->ctx) != 0) {
            end = now_ns();
            if (++r->errors > 1000) { r->ready = 0; break; }
            continue;
        }
        t1 = now_ns();
        r->samples[r->n++] = t1 - t0 > UINT32_MAX ? UINT32_MAX : (uint32_t)(t1 - t0);
        if (r->rel && r->rel(r->ctx) != 0) r->errors++;
        end = now_ns();
    }
    r->ns += end - start;
    r->cpu_ns += cpu_ns() - cpu0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void row_finish(row *r) {
    r->cps = r->ns ? (double)r->n / ((double)r->ns / 1e9) : 0;
    r->cpu_us = r->n ? (double)r->cpu_ns / (double)r->n / 1000.0 : 0;
    r->p50 = r->p99 = 0;
    if (r->n) {
        qsort(r->samples, r->n, sizeof *r->samples, cmp_u32);
        r->p50 = (double)r->samples[r->n / 2] / 1000.0;
        r->p99 = (double)r->samples[(r->n * 99) / 100] / 1000.0;
    }
}

/* floor: raw hiredis */
typedef struct floor_ctx {
    redisContext *c;
    const char *sha;
} floor_ctx;

#define FLOOR_KEY "bench:floor"
#define FLOOR_TOKEN "0123456789abcdef0123456789abcdef" /* 32 chars, like an rlock token */

static int floor_ping(void *p) {
    floor_ctx *f = (floor_ctx *)p;
    redisReply *r = (redisReply *)redisCommand(f->c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok ? 0 : -1;
}
static int floor_set(void *p) {
    floor_ctx *f = (floor_ctx *)p;
    static const char *argv[6] = { "SET", FLOOR_KEY, FLOOR_TOKEN, "NX", "PX", "30000" };
    static const size_t lens[6] = { 3, sizeof FLOOR_KEY - 1, sizeof FLOOR_TOKEN - 1, 2, 2, 5 };
    redisReply *r = (redisReply *)redisCommandArgv(f->c, 6, argv, lens);
    int ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    if (r) freeReplyObject(r);
    return ok ? 0 : -1;
}
static int floor_release(void *p) {
    floor_ctx *f = (floor_ctx *)p;
    const char *argv[7];
    size_t lens[7];
    redisReply *r;
    int ok;
    argv[0] = "EVALSHA"; lens[0] = 7;
    argv[1] = f->sha; lens[1] = strlen(f->sha);
    argv[2] = "1"; lens[2] = 1;
    argv[3] = FLOOR_KEY; lens[3] = sizeof FLOOR_KEY - 1;
    argv[4] = FLOOR_TOKEN; lens[4] = sizeof FLOOR_TOKEN - 1;
    argv[5] = "30000"; lens[5] = 5; /* ARGV[2]: unused by the simple release, passed like rlock does */
    argv[6] = ""; lens[6] = 0;      /* ARGV[3]: release channel, empty = none (as rlock without waiters) */
    r = (redisReply *)redisCommandArgv(f->c, 7, argv, lens);
    ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r) freeReplyObject(r);
    return ok ? 0 : -1;
}

/* reference: hiredis sending exactly rlock's commands - the very bytes rlock
 * wrote for one acquire and one release, captured below - to n nodes at once
 * (every request written before any reply is read), so that rlock's own
 * client-side cost can be told apart from the server's script cost and from
 * the machine's fan-out cost, whatever arguments rlock's scripts take. */
#define CMD_MAX 2048
typedef struct captured {
    unsigned char acq[CMD_MAX], rel[CMD_MAX];
    size_t acq_len, rel_len;
} captured;

typedef struct fan_ctx {
    redisContext *c[N_SERVERS];
    int n, reentrant;
    const captured *cmds;
} fan_ctx;

static int fan_exchange(fan_ctx *f, int acquire) {
    const unsigned char *cmd = acquire ? f->cmds->acq : f->cmds->rel;
    size_t len = acquire ? f->cmds->acq_len : f->cmds->rel_len;
    int i, ok = 1;
    for (i = 0; i < f->n; i++) {
        int done = 0;
        if (redisAppendFormattedCommand(f->c[i], (const char *)cmd, len) != REDIS_OK) return -1;
        while (!done)
            if (redisBufferWrite(f->c[i], &done) != REDIS_OK) return -1;
    }
    for (i = 0; i < f->n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(f->c[i], (void **)&r) != REDIS_OK || !r) return -1;
        if (acquire) /* the fast path's SET NX PX (+OK), or a script's {1, ...} */
            ok &= (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ||
                  (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
                   r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 1);
        else ok &= r->type == REDIS_REPLY_INTEGER && r->integer == (f->reentrant ? 0 : 1);
        freeReplyObject(r);
    }
    return ok ? 0 : -1;
}
static int fan_acq(void *p) { return fan_exchange((fan_ctx *)p, 1); }
static int fan_rel(void *p) { return fan_exchange((fan_ctx *)p, 0); }

static int fan_init(fan_ctx *f, int n, int reentrant, const captured *cmds) {
    int i, rc = 0;
    memset(f, 0, sizeof *f);
    f->n = n;
    f->reentrant = reentrant;
    f->cmds = cmds;
    for (i = 0; i < n; i++)
        if (!(f->c[i] = rh_connect(&g_srv[i]))) rc = -1;
    return rc;
}

/* A transport that records what rlock sends, around the POSIX one. */
typedef struct capture_tr {
    rlock_posix_conn pc;
    unsigned char *buf; /* NULL: not recording */
    size_t len, cap;
} capture_tr;

static long cap_send(void *ctx, const unsigned char *b, size_t len) {
    capture_tr *t = (capture_tr *)ctx;
    long r = t->pc.tr.send(t->pc.tr.ctx, b, len);
    if (r > 0 && t->buf) {
        if (t->len + (size_t)r > t->cap) return RLOCK_IO_ERROR;
        memcpy(t->buf + t->len, b, (size_t)r);
        t->len += (size_t)r;
    }
    return r;
}
static long cap_recv(void *ctx, unsigned char *b, size_t len) {
    capture_tr *t = (capture_tr *)ctx;
    return t->pc.tr.recv(t->pc.tr.ctx, b, len);
}
static int cap_connect(void *ctx) { capture_tr *t = (capture_tr *)ctx; return t->pc.tr.connect(t->pc.tr.ctx); }
static void cap_close(void *ctx) { capture_tr *t = (capture_tr *)ctx; t->pc.tr.close(t->pc.tr.ctx); }
static int cap_wait(void *ctx, int want, uint32_t ms) {
    capture_tr *t = (capture_tr *)ctx;
    return t->pc.tr.wait(t->pc.tr.ctx, want, ms);
}

/* The bytes of one rlock acquire (ttl ROW_TTL_MS, try once) and release of
 * key on server 0. */
static int capture_cmds(const char *key, rlock_kind kind, captured *out) {
    static capture_tr t;
    rlock_transport tr;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    int ok = 0;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);
    if (rlock_posix_init_tcp(&t.pc, "127.0.0.1", g_srv[0].port, 1000) != 0) return -1;
    tr = t.pc.tr;
    tr.ctx = &t;
    tr.send = cap_send; tr.recv = cap_recv; tr.connect = cap_connect; tr.close = cap_close; tr.wait = cap_wait;
    if (rlock_node_init(&node, &tr) == RLOCK_OK && rlock_client_init(&cl, &node, 1, NULL) == RLOCK_OK) {
        if (rlock_client_connect(&cl, 2000) == RLOCK_OK &&
            rlock_lock_init(&lk, &cl, key, strlen(key), kind) == RLOCK_OK) {
            /* one cycle first, not captured: a client's fast path starts once
             * a script has run on the node, and the rows run warmed up */
            if (rlock_acquire(&lk, ROW_TTL_MS, 0) == RLOCK_OK) (void)rlock_release(&lk);
            t.buf = out->acq; t.cap = sizeof out->acq; t.len = 0;
            if (rlock_acquire(&lk, ROW_TTL_MS, 0) == RLOCK_OK) {
                out->acq_len = t.len;
                t.buf = out->rel; t.cap = sizeof out->rel; t.len = 0;
                ok = rlock_release(&lk) == RLOCK_OK;
                out->rel_len = t.len;
            }
            t.buf = NULL;
            rlock_lock_destroy(&lk);
        }
        rlock_client_close(&cl);
    }
    rlock_posix_close(&t.pc);
    return ok && out->acq_len && out->rel_len ? 0 : -1;
}
static void fan_free(fan_ctx *f) {
    int i;
    for (i = 0; i < f->n; i++) if (f->c[i]) redisFree(f->c[i]);
    memset(f, 0, sizeof *f);
}


/* An rlock client over n nodes: POSIX adapter, or hiredis contexts; with
 * pubsub, a second POSIX connection per node as its subscriber. */
typedef struct rl_setup {
    int n, use_hiredis, pubsub;
    rlock_posix_conn pc[N_SERVERS];
    rlock_posix_conn spc[N_SERVERS]; /* subscriber connections (pubsub) */
    rlock_hiredis_conn hc[N_SERVERS];
    redisContext *rc[N_SERVERS];
    rlock_node nodes[N_SERVERS];
    rlock_subscriber subs[N_SERVERS];
    rlock_client cl;
    rlock_lock lk;
    rlock_status last; /* of the last call */
} rl_setup;

static fan_ctx g_fans[4];
static captured g_cmds[2]; /* rlock's acquire/release bytes: simple, reentrant */
static rl_setup g_rls[6]; /* ~3 KB per node: static, not on the stack */

static int rl_acq(void *p) {
    rl_setup *s = (rl_setup *)p;
    s->last = rlock_acquire(&s->lk, ROW_TTL_MS, 0);
    return s->last == RLOCK_OK ? 0 : -1;
}
static int rl_rel(void *p) {
    rl_setup *s = (rl_setup *)p;
    s->last = rlock_release(&s->lk);
    return s->last == RLOCK_OK ? 0 : -1;
}

static void rl_teardown(rl_setup *s) {
    int i;
    rlock_lock_destroy(&s->lk);
    rlock_client_close(&s->cl);
    for (i = 0; i < s->n; i++) {
        rlock_posix_close(&s->pc[i]);
        if (s->pubsub) rlock_posix_close(&s->spc[i]);
        if (s->rc[i]) redisFree(s->rc[i]);
        s->rc[i] = NULL;
    }
}

/* Commands this client sent so far: its nodes and its subscribers. */
static unsigned long long rl_commands(const rl_setup *s) {
    unsigned long long n = 0;
    int i;
    for (i = 0; i < s->n; i++) {
        n += rlock_node_commands(&s->nodes[i]);
        if (s->pubsub) n += rlock_subscriber_commands(&s->subs[i]);
    }
    return n;
}

static int rl_setup_init(rl_setup *s, int n, int use_hiredis, const char *key, rlock_kind kind, int pubsub) {
    int i;
    memset(s, 0, sizeof *s);
    s->n = n;
    s->use_hiredis = use_hiredis;
    s->pubsub = pubsub;
    for (i = 0; i < n; i++) {
        const rlock_transport *tr;
        if (use_hiredis) {
            s->rc[i] = rh_connect(&g_srv[i]);
            if (!s->rc[i] || rlock_hiredis_init(&s->hc[i], s->rc[i]) != 0) goto fail;
            tr = rlock_hiredis_transport(&s->hc[i]);
        } else {
            if (rlock_posix_init_tcp(&s->pc[i], "127.0.0.1", g_srv[i].port, 1000) != 0) goto fail;
            tr = rlock_posix_transport(&s->pc[i]);
        }
        if (rlock_node_init(&s->nodes[i], tr) != RLOCK_OK) goto fail;
        if (pubsub) {
            if (rlock_posix_init_tcp(&s->spc[i], "127.0.0.1", g_srv[i].port, 1000) != 0 ||
                rlock_subscriber_init(&s->subs[i], rlock_posix_transport(&s->spc[i])) != RLOCK_OK) goto fail;
        }
    }
    if (rlock_client_init(&s->cl, s->nodes, (size_t)n, NULL) != RLOCK_OK) goto fail;
    if (pubsub && rlock_client_set_subscribers(&s->cl, s->subs, (size_t)n) != RLOCK_OK) goto fail;
    if (rlock_client_connect(&s->cl, 2000) != RLOCK_OK) {
        fprintf(stderr, "bench: rlock_client_connect: %s\n", rlock_node_error(&s->nodes[0]));
        goto fail;
    }
    if (rlock_lock_init(&s->lk, &s->cl, key, strlen(key), kind) != RLOCK_OK) goto fail;
    return 0;
fail:
    rl_teardown(s);
    return -1;
}

/* ----------------------------------------------------- contended rows */

/* One hold of the lock, on CLOCK_MONOTONIC (one clock for every process of
 * this machine): acquire returned, release called, release returned. Each
 * worker writes its own slice of a shared file mapping; after the run the
 * parent sorts every hold by acq_end - the holds never overlap, so that is
 * the order the lock passed in - and a handoff is the next hold's acq_end
 * minus this hold's rel_begin (or rel_end). */
typedef struct hold_rec {
    uint64_t acq_end, rel_begin, rel_end;
    int proc;
} hold_rec;

typedef struct worker_result {
    unsigned long acq, errors, overlaps, n_rec;
    unsigned long long cs_ns, wait_ns, max_wait_ns, client_cmds;
    uint64_t finish_ns;
    int idx;
} worker_result;

/* The primitive a contended row's workers take (forked: they inherit it):
 * g_cs_permits > 0 a semaphore of that many permits; g_cs_rw worker 0 the
 * writer, the others readers of one read-write lock; both 0: the lock. */
static int g_cs_permits, g_cs_rw;

/* The critical section's overlap check for the current primitive: the
 * lock's marker directory; a semaphore's N slot directories (no free slot:
 * more than N inside); a reader's own directory while no writer's exists,
 * the writer's while no reader's does (each creates, then looks: two that
 * overlap cannot both miss the other). 1 inside (cs_leave undoes it), 0
 * overlap found. */
static int cs_enter(const char *marker, int idx, int procs, char *mine, size_t cap) {
    char other[560];
    int k;
    if (g_cs_permits) {
        for (k = 0; k < g_cs_permits; k++) {
            snprintf(mine, cap, "%s-slot%d", marker, k);
            if (mkdir(mine, 0700) == 0) return 1;
        }
        return 0;
    }
    if (g_cs_rw) {
        snprintf(mine, cap, idx == 0 ? "%s-w" : "%s-r%d", marker, idx);
        if (mkdir(mine, 0700) != 0) return 0;
        for (k = idx == 0 ? 1 : 0; k < (idx == 0 ? procs : 1); k++) {
            snprintf(other, sizeof other, k == 0 ? "%s-w" : "%s-r%d", marker, k);
            if (access(other, F_OK) == 0) { rmdir(mine); return 0; }
        }
        return 1;
    }
    snprintf(mine, cap, "%s", marker);
    return mkdir(mine, 0700) == 0;
}

/* Handoff statistics over holds sorted by acq_end (shared with the peers'
 * rows, whose scripts report the same numbers). */
typedef struct handoff {
    double p50_us, p99_us;        /* to another process, from its release call */
    double ret_p50_us;            /* same, from its release return (< 0: acquired before it returned) */
    double all_p50_us;            /* every transition, re-takes included */
    double retake;                /* share of transitions where the releaser re-took the lock */
    unsigned long n, bad;         /* transitions measured; ones that went backwards (overlap) */
} handoff;

typedef struct contended {
    const char *name;
    int nodes, procs, pubsub;
    unsigned long acq, errors, overlaps, min_acq, max_acq;
    double secs, acq_s, cs_us, ceiling, x_ceiling, max_wait_ms, mean_wait_ms;
    unsigned long long cmds, scripts, client_cmds;
    double cmds_per_acq, cmds_per_acq_node, scripts_per_acq, client_per_acq;
    handoff ho;
    cmdstats delta;     /* per-command calls during the run, all nodes */
    unsigned long gave_up; /* peers: acquire calls that gave up and were called again */
    int single;          /* the comparable single-node contended row (-1: none) */
    double x_single;     /* acq/s over that row's (< 0: not applicable) */
    const char *skipped; /* peers: why the row did not run (NULL: it ran) */
    char skip_buf[160];
    unsigned long writer_acq; /* read-write row: the writer's acquisitions */
} contended;

static int cmp_hold(const void *a, const void *b) {
    uint64_t x = ((const hold_rec *)a)->acq_end, y = ((const hold_rec *)b)->acq_end;
    return x < y ? -1 : x > y;
}
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
static double pct_us(int64_t *v, size_t n, int pct) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_i64);
    return (double)v[(n * (size_t)pct) / 100 < n ? (n * (size_t)pct) / 100 : n - 1] / 1000.0;
}

static void handoff_stats(hold_rec *h, size_t n, handoff *out) {
    int64_t *call = NULL, *ret = NULL, *all = NULL;
    size_t k, nc = 0, na = 0, same = 0;
    memset(out, 0, sizeof *out);
    if (n < 2) return;
    call = (int64_t *)malloc(n * sizeof *call);
    ret = (int64_t *)malloc(n * sizeof *ret);
    all = (int64_t *)malloc(n * sizeof *all);
    if (!call || !ret || !all) goto done;
    qsort(h, n, sizeof *h, cmp_hold);
    for (k = 0; k + 1 < n; k++) {
        const hold_rec *a = &h[k], *b = &h[k + 1];
        if (!a->rel_begin) continue; /* the last hold of a worker whose release failed */
        if (b->acq_end < a->rel_begin) { out->bad++; continue; }
        all[na++] = (int64_t)(b->acq_end - a->rel_begin);
        if (a->proc == b->proc) { same++; continue; }
        call[nc] = (int64_t)(b->acq_end - a->rel_begin);
        ret[nc++] = (int64_t)b->acq_end - (int64_t)a->rel_end;
    }
    out->n = (unsigned long)na;
    out->retake = na ? (double)same / (double)na : 0;
    out->all_p50_us = pct_us(all, na, 50);
    out->p50_us = pct_us(call, nc, 50);
    out->p99_us = pct_us(call, nc, 99);
    out->ret_p50_us = pct_us(ret, nc, 50);
done:
    free(call);
    free(ret);
    free(all);
}

static void worker(int n, int pubsub, int idx, int procs, const char *key, const char *marker, hold_rec *rec,
                   int ready_w, int go_r, int res_w) {
    static rl_setup s;
    worker_result res;
    unsigned long long cmds0 = 0;
    uint64_t deadline, t0, t1, c0, c1, r0, r1;
    char b = 1, mine[560];
    memset(&res, 0, sizeof res);
    res.idx = idx;
    if (rl_setup_init(&s, n, 0, key, RLOCK_KIND_SIMPLE, pubsub != 0) != 0) _exit(2);
    if (pubsub == 2 && rlock_lock_set_fair(&s.lk, 1, 0) != RLOCK_OK) _exit(2);
    if (g_cs_permits && rlock_semaphore_init(&s.lk, &s.cl, key, strlen(key), g_cs_permits) != RLOCK_OK) _exit(2);
    if (g_cs_rw && rlock_lock_init(&s.lk, &s.cl, key, strlen(key), idx == 0 ? RLOCK_KIND_WRITE : RLOCK_KIND_READ) !=
                       RLOCK_OK)
        _exit(2);
    if (write(ready_w, &b, 1) != 1) _exit(3);
    close(ready_w);
    while (read(go_r, &b, 1) < 0 && errno == EINTR) { } /* EOF: go */
    close(go_r);
    cmds0 = rl_commands(&s);
    deadline = now_ns() + (uint64_t)(g_contended_s * 1e9);
    while (!g_stop && now_ns() < deadline) {
        rlock_status st;
        t0 = now_ns();
        st = rlock_acquire(&s.lk, CS_TTL_MS, CS_WAIT_MS);
        t1 = now_ns();
        if (t1 - t0 > res.max_wait_ns) res.max_wait_ns = t1 - t0;
        res.wait_ns += t1 - t0;
        if (st != RLOCK_OK) {
            if (res.errors++ < 3)
                fprintf(stderr, "bench: worker %d: acquire: %s (%s)\n", (int)getpid(),
                        rlock_status_str(st), rlock_node_error(&s.nodes[0]));
            continue;
        }
        c0 = now_ns();
        if (!cs_enter(marker, idx, procs, mine, sizeof mine)) res.overlaps++; /* another holder is inside */
        else {
            sleep_1ms();
            rmdir(mine);
        }
        c1 = now_ns();
        res.cs_ns += c1 - c0;
        res.acq++;
        r0 = now_ns();
        st = rlock_release(&s.lk);
        r1 = now_ns();
        if (res.n_rec < MAX_REC) {
            hold_rec *h = &rec[res.n_rec++];
            h->acq_end = t1;
            h->rel_begin = st == RLOCK_OK ? r0 : 0;
            h->rel_end = r1;
            h->proc = idx;
        }
        if (st != RLOCK_OK && res.errors++ < 3)
            fprintf(stderr, "bench: worker %d: release: %s\n", (int)getpid(), rlock_status_str(st));
    }
    res.finish_ns = now_ns();
    res.client_cmds = rl_commands(&s) - cmds0;
    rl_teardown(&s);
    if (write(res_w, &res, sizeof res) != (ssize_t)sizeof res) _exit(4);
    _exit(0);
}

/* Ratios and per-acquisition numbers of a finished contended row. */
static void contended_finish(contended *r, double ping_rtt_us) {
    r->acq_s = r->secs > 0 ? (double)r->acq / r->secs : 0;
    r->ceiling = r->cs_us + ping_rtt_us > 0 ? 1e6 / (r->cs_us + ping_rtt_us) : 0;
    r->x_ceiling = r->ceiling > 0 ? r->acq_s / r->ceiling : 0;
    r->cmds_per_acq = r->acq ? (double)r->cmds / (double)r->acq : 0;
    r->cmds_per_acq_node = r->cmds_per_acq / r->nodes;
    r->scripts_per_acq = r->acq ? (double)r->scripts / (double)r->acq : 0;
    r->client_per_acq = r->acq ? (double)r->client_cmds / (double)r->acq : 0;
}

/* INFO commandstats of the row's nodes, before (sign 0) or after (1). */
static int contended_stats(contended *r, cmdstats *before, int after_run) {
    cmdstats after;
    int i, failed = 0;
    if (!after_run) {
        for (i = 0; i < r->nodes; i++)
            if (read_cmdstats(&g_srv[i], &before[i]) != 0) failed = 1;
        return failed ? -1 : 0;
    }
    r->cmds = r->scripts = 0;
    memset(&r->delta, 0, sizeof r->delta);
    for (i = 0; i < r->nodes; i++) {
        if (read_cmdstats(&g_srv[i], &after) != 0) { failed = 1; continue; }
        r->cmds += after.all - before[i].all;
        r->scripts += after.scripts - before[i].scripts;
        cmdstats_acc(&r->delta, &after, 1);
        cmdstats_acc(&r->delta, &before[i], -1);
    }
    return failed ? -1 : 0;
}

static int bench_contended(contended *r, const char *dir, double ping_rtt_us) {
    int ready[2], go[2], res[2], i, got = 0, failed = 0, fd;
    pid_t kids[MAX_PROCS] = { 0 };
    static cmdstats before[N_SERVERS];
    char key[64], marker[512], recs_path[512], b;
    uint64_t start, finish = 0;
    worker_result wr;
    hold_rec *recs, *all = NULL;
    size_t map_len = sizeof(hold_rec) * MAX_REC * MAX_PROCS, n_all = 0;
    unsigned long n_rec[MAX_PROCS] = { 0 };

    snprintf(key, sizeof key, "bench:contended:%d:%d:%d:%d:%d", r->nodes, r->procs, r->pubsub, g_cs_permits, g_cs_rw);
    snprintf(marker, sizeof marker, "%s/inside-%d", dir, r->nodes);
    snprintf(recs_path, sizeof recs_path, "%s/holds", dir);
    fd = open(recs_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)map_len) != 0) { perror("bench: holds file"); if (fd >= 0) close(fd); return -1; }
    recs = (hold_rec *)mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    unlink(recs_path);
    if (recs == (hold_rec *)MAP_FAILED) { perror("bench: mmap"); return -1; }
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(res) != 0) { perror("pipe"); munmap(recs, map_len); return -1; }
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < r->procs; i++) {
        kids[i] = fork();
        if (kids[i] < 0) { perror("fork"); kids[i] = 0; failed = 1; break; }
        if (kids[i] == 0) {
            close(ready[0]); close(go[1]); close(res[0]);
            worker(r->nodes, r->pubsub, i, r->procs, key, marker, recs + (size_t)i * MAX_REC, ready[1], go[0], res[1]);
        }
    }
    close(ready[1]); close(go[0]); close(res[1]);
    /* every worker connected (or died): EOF once all closed their end */
    while (read(ready[0], &b, 1) == 1) got++;
    close(ready[0]);
    if (got != r->procs) failed = 1;
    if (contended_stats(r, before, 0) != 0) failed = 1;
    start = now_ns();
    close(go[1]); /* go */

    r->acq = r->errors = r->overlaps = r->min_acq = r->max_acq = 0;
    r->client_cmds = 0;
    r->max_wait_ms = r->mean_wait_ms = 0;
    r->cs_us = 0;
    got = 0;
    {
        unsigned long long cs = 0, wait = 0;
        while (read(res[0], &wr, sizeof wr) == (ssize_t)sizeof wr) {
            got++;
            r->acq += wr.acq;
            r->errors += wr.errors;
            r->overlaps += wr.overlaps;
            r->client_cmds += wr.client_cmds;
            cs += wr.cs_ns;
            wait += wr.wait_ns;
            if (wr.max_wait_ns / 1e6 > r->max_wait_ms) r->max_wait_ms = (double)wr.max_wait_ns / 1e6;
            if (got == 1 || wr.acq < r->min_acq) r->min_acq = wr.acq;
            if (wr.acq > r->max_acq) r->max_acq = wr.acq;
            if (wr.finish_ns > finish) finish = wr.finish_ns;
            if (g_cs_rw && wr.idx == 0) r->writer_acq = wr.acq;
        }
        if (r->acq) {
            r->cs_us = (double)cs / (double)r->acq / 1000.0;
            r->mean_wait_ms = (double)wait / (double)(r->acq + r->errors) / 1e6;
        }
    }
    close(res[0]);
    for (i = 0; i < r->procs; i++) {
        int status = 0;
        if (kids[i] <= 0) continue;
        while (waitpid(kids[i], &status, 0) < 0 && errno == EINTR) { }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    if (got != r->procs) failed = 1;
    if (contended_stats(r, before, 1) != 0) failed = 1;
    r->secs = finish > start ? (double)(finish - start) / 1e9 : 0;
    contended_finish(r, ping_rtt_us);
    /* holds: how many each worker wrote = the non-zero prefix of its slice */
    for (i = 0; i < r->procs; i++) {
        const hold_rec *h = recs + (size_t)i * MAX_REC;
        while (n_rec[i] < MAX_REC && h[n_rec[i]].acq_end) n_rec[i]++;
        n_all += n_rec[i];
    }
    all = (hold_rec *)malloc((n_all ? n_all : 1) * sizeof *all);
    if (all) {
        n_all = 0;
        for (i = 0; i < r->procs; i++) {
            memcpy(all + n_all, recs + (size_t)i * MAX_REC, n_rec[i] * sizeof *all);
            n_all += n_rec[i];
        }
        if (!g_cs_permits && !g_cs_rw) handoff_stats(all, n_all, &r->ho); /* holds overlap by design otherwise */
        free(all);
    }
    munmap(recs, map_len);
    rmdir(marker);
    if (failed) fprintf(stderr, "bench: %s: a worker failed\n", r->name);
    return failed || r->errors || r->overlaps || r->ho.bad ? -1 : 0;
}

/* ------------------------------------------------------------- peers */

/* Other lock clients, run as scripts (bench/peers/) against the same servers.
 * The script prints "ready <versions>" once connected and warmed up (or
 * "skipped: <why>" and exits), waits for "go", runs, prints
 * "result key=value ...", waits for "exit" and closes its connections - so
 * INFO commandstats read around the run counts exactly the run. */
typedef struct peer_spec {
    const char *name, *lang, *lib;
    int nodes;
    int contended;   /* also measured contended */
    int lang_floor;  /* index (in the peer table) of this language's raw-client floor, -1 none */
    int single;      /* index of the same library's single-node row, -1 none */
    int procs;       /* contended processes (0: 8) */
} peer_spec;

static const peer_spec g_peers[] = {
    { "node: ioredis SET NX PX + EVALSHA", "node", "ioredis-floor", 1, 0, -1, -1, 0 },
    { "node-redlock", "node", "node-redlock", 1, 1, 0, -1, 0 },
    { "node-redlock", "node", "node-redlock", 5, 1, 0, 1, 0 },
    { "redis-semaphore Mutex", "node", "semaphore-mutex", 1, 1, 0, -1, 0 },
    { "redis-semaphore RedlockMutex", "node", "semaphore-redlock", 5, 1, 0, 3, 0 },
    { "redis-semaphore Semaphore(4)", "node", "semaphore-4", 1, 1, 0, -1, 16 }, /* next to rlock semaphore(4) */
    { "py: redis-py SET NX PX + EVALSHA", "python", "redis-py-floor", 1, 0, -1, -1, 0 },
    { "redis-py Lock", "python", "redis-py-lock", 1, 1, 6, -1, 0 },
};
#define N_PEERS ((int)(sizeof g_peers / sizeof g_peers[0]))

typedef struct peer_row {
    const char *skipped;
    char skip_buf[160];
    double cps, p50, p99, cpu_us, x_floor, x_lang, x_single, p50_x_single;
    double client_per_cycle, srv_per_cycle;
    unsigned long cycles, errors;
    double secs;
} peer_row;

static char g_peer_versions[2][256]; /* node, python: what the scripts reported */

/* Debian's python3-redis installs for /usr/bin/python3, which may not be the
 * python3 first on PATH. */
static const char *python_bin(void) {
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* A line from fd within timeout_ms; 0 ok, -1 EOF/timeout/error. */
static int read_line_fd(int fd, char *out, size_t cap, int timeout_ms) {
    size_t n = 0;
    uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        struct pollfd p;
        char ch;
        uint64_t now = now_ns();
        int left = now >= end ? 0 : (int)((end - now) / 1000000u) + 1, r;
        p.fd = fd;
        p.events = POLLIN;
        p.revents = 0;
        if (now >= end) return -1;
        r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR) { if (g_stop) return -1; continue; }
        if (r <= 0) return -1;
        r = (int)read(fd, &ch, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        if (ch == '\n') { out[n] = 0; return 0; }
        if (n + 1 < cap) out[n++] = ch;
    }
}

/* " key=" value of a result line, or dflt. */
static double kv(const char *line, const char *key, double dflt) {
    char pat[40];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(line, pat);
    return p ? atof(p + strlen(pat)) : dflt;
}

/* A running peer script. */
typedef struct peer_proc {
    pid_t pid;
    int to, from;            /* its stdin / stdout */
    int live;                /* answered "ready" and has not failed */
    const char *script;
} peer_proc;

/* Start a peer script and read its first line. 0 ready, 1 skipped (why),
 * -1 failed (why). */
static int peer_start(peer_proc *pp, const peer_spec *ps, const char *mode, int procs, double secs,
                      const char *marker, char *why, size_t why_cap) {
    int to[2], from[2], i;
    char ports[128], secs_s[32], procs_s[16], line[1024];
    static char script_node[] = "bench/peers/node_peer.js", script_py[] = "bench/peers/py_peer.py";
    const char *argv[10];
    size_t pos = 0;
    int is_node = strcmp(ps->lang, "node") == 0;

    memset(pp, 0, sizeof *pp);
    pp->pid = -1;
    pp->to = pp->from = -1;
    ports[0] = 0;
    for (i = 0; i < ps->nodes; i++)
        pos += (size_t)snprintf(ports + pos, sizeof ports - pos, "%s%d", i ? "," : "", g_srv[i].port);
    snprintf(secs_s, sizeof secs_s, "%.2f", secs);
    snprintf(procs_s, sizeof procs_s, "%d", procs);
    pp->script = is_node ? script_node : script_py;
    argv[0] = is_node ? "node" : python_bin();
    argv[1] = pp->script; argv[2] = ps->lib; argv[3] = mode; argv[4] = ports; argv[5] = secs_s;
    argv[6] = procs_s; argv[7] = marker; argv[8] = NULL;
    if (pipe(to) != 0) { snprintf(why, why_cap, "pipe failed"); return -1; }
    if (pipe(from) != 0) { close(to[0]); close(to[1]); snprintf(why, why_cap, "pipe failed"); return -1; }
    fflush(stdout);
    fflush(stderr);
    pp->pid = fork();
    if (pp->pid < 0) {
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        snprintf(why, why_cap, "fork failed");
        return -1;
    }
    if (pp->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        execvp(argv[0], (char *const *)argv);
        printf("skipped: %s not runnable (%s)\n", argv[0], strerror(errno));
        fflush(stdout);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    pp->to = to[1];
    pp->from = from[0];
    if (read_line_fd(pp->from, line, sizeof line, 120000) != 0) {
        snprintf(why, why_cap, "%s %s: no answer", argv[0], pp->script);
        return -1;
    }
    if (strncmp(line, "skipped:", 8) == 0) { snprintf(why, why_cap, "%.150s", line); return 1; }
    if (strncmp(line, "ready", 5) != 0) { snprintf(why, why_cap, "unexpected: %.100s", line); return -1; }
    snprintf(g_peer_versions[is_node ? 0 : 1], sizeof g_peer_versions[0], "%.200s", line[5] ? line + 6 : "");
    pp->live = 1;
    return 0;
}

/* Send cmd; read a line starting with expect into out. 0 ok. */
static int peer_cmd(peer_proc *pp, const char *cmd, const char *expect, char *out, size_t cap, int timeout_ms) {
    char line[1024];
    size_t n = strlen(cmd);
    if (!pp->live || write(pp->to, cmd, n) != (ssize_t)n ||
        read_line_fd(pp->from, line, sizeof line, timeout_ms) != 0 || strncmp(line, expect, strlen(expect)) != 0) {
        pp->live = 0;
        return -1;
    }
    if (out) snprintf(out, cap, "%.1000s", line);
    return 0;
}

/* "exit", then wait (bounded) for the script to end; kills it by PID if not. */
static void peer_stop(peer_proc *pp) {
    int status = 0;
    uint64_t end;
    int r = 0;
    if (pp->to >= 0) {
        if (write(pp->to, "exit\n", 5) != 5) { }
        close(pp->to);
    }
    if (pp->pid > 0) {
        end = now_ns() + 15000000000ull;
        while ((r = waitpid(pp->pid, &status, WNOHANG)) == 0 && now_ns() < end) sleep_1ms();
        if (r == 0) {
            fprintf(stderr, "bench: %s did not exit; killing pid %d\n", pp->script, (int)pp->pid);
            kill(pp->pid, SIGKILL);
            waitpid(pp->pid, &status, 0);
        }
    }
    if (pp->from >= 0) close(pp->from);
    pp->to = pp->from = -1;
    pp->pid = -1;
    pp->live = 0;
}

/* Uncontended peers: started before the slices, each given its slices in
 * the same round-robin as rlock's rows, results collected after. */
static peer_proc g_pproc[N_PEERS];
static unsigned long long g_peer_srv[N_PEERS]; /* server calls during its slices */

static void peers_start(peer_row *pr) {
    int i;
    for (i = 0; i < N_PEERS && !g_stop; i++) {
        char why[160];
        int r;
        memset(&pr[i], 0, sizeof pr[i]);
        pr[i].x_floor = pr[i].x_lang = pr[i].x_single = pr[i].p50_x_single = -1;
        why[0] = 0;
        r = peer_start(&g_pproc[i], &g_peers[i], "uncontended", 1, g_row_s, "-", why, sizeof why);
        if (r != 0) {
            snprintf(pr[i].skip_buf, sizeof pr[i].skip_buf, "%s%s", r > 0 ? "" : "skipped: ", why);
            pr[i].skipped = pr[i].skip_buf;
            if (r < 0) fprintf(stderr, "bench: peer %s: %s\n", g_peers[i].name, why);
            peer_stop(&g_pproc[i]);
        }
    }
}

static void peer_slice(int i, uint64_t slice_ns) {
    static cmdstats before[N_SERVERS];
    contended st;
    char cmd[64];
    if (!g_pproc[i].live) return;
    memset(&st, 0, sizeof st);
    st.nodes = g_peers[i].nodes;
    if (contended_stats(&st, before, 0) != 0) return;
    snprintf(cmd, sizeof cmd, "slice %.4f\n", (double)slice_ns / 1e9);
    if (peer_cmd(&g_pproc[i], cmd, "done", NULL, 0, (int)(slice_ns / 1000000u) + 60000) != 0) {
        fprintf(stderr, "bench: peer %s: slice failed\n", g_peers[i].name);
        return;
    }
    if (contended_stats(&st, before, 1) == 0) g_peer_srv[i] += st.cmds;
}

static void peers_finish(peer_row *pr, double floor_cps, int *rc) {
    int i;
    for (i = 0; i < N_PEERS; i++) {
        peer_row *p = &pr[i];
        char res[1024];
        if (p->skipped) continue;
        if (peer_cmd(&g_pproc[i], "result\n", "result", res, sizeof res, 30000) != 0) {
            snprintf(p->skip_buf, sizeof p->skip_buf, "skipped: the script failed (see stderr)");
            p->skipped = p->skip_buf;
            *rc = 1;
            peer_stop(&g_pproc[i]);
            continue;
        }
        peer_stop(&g_pproc[i]);
        p->cycles = (unsigned long)kv(res, "cycles", 0);
        p->secs = kv(res, "secs", 0);
        p->cps = p->secs > 0 ? (double)p->cycles / p->secs : 0;
        p->p50 = kv(res, "p50_us", 0);
        p->p99 = kv(res, "p99_us", 0);
        p->cpu_us = kv(res, "cpu_us", 0);
        p->errors = (unsigned long)kv(res, "errors", 0);
        p->client_per_cycle = p->cycles ? kv(res, "client_cmds", 0) / (double)p->cycles : 0;
        p->srv_per_cycle = p->cycles ? (double)g_peer_srv[i] / (double)p->cycles : 0;
        if (floor_cps > 0) p->x_floor = p->cps / floor_cps;
        if (p->errors) { fprintf(stderr, "bench: peer %s: %lu errors\n", g_peers[i].name, p->errors); *rc = 1; }
    }
    for (i = 0; i < N_PEERS; i++) {
        peer_row *p = &pr[i];
        const peer_spec *ps = &g_peers[i];
        if (p->skipped) continue;
        if (ps->lang_floor >= 0 && !pr[ps->lang_floor].skipped && pr[ps->lang_floor].cps > 0)
            p->x_lang = p->cps / pr[ps->lang_floor].cps;
        if (ps->single >= 0 && !pr[ps->single].skipped && pr[ps->single].cps > 0) {
            p->x_single = p->cps / pr[ps->single].cps;
            p->p50_x_single = pr[ps->single].p50 > 0 ? p->p50 / pr[ps->single].p50 : -1;
        }
    }
}

/* One contended peer run: 0 ran (result line in result), 1 skipped, -1 failed. */
static int peer_run(const peer_spec *ps, int procs, double secs, const char *marker,
                    char *result, size_t cap, contended *stats, char *why, size_t why_cap) {
    peer_proc pp;
    static cmdstats before[N_SERVERS];
    int rc = peer_start(&pp, ps, "contended", procs, secs, marker, why, why_cap);
    if (rc != 0) { peer_stop(&pp); return rc; }
    rc = -1;
    stats->nodes = ps->nodes;
    if (contended_stats(stats, before, 0) != 0) snprintf(why, why_cap, "INFO commandstats failed");
    else if (peer_cmd(&pp, "go\n", "result", result, cap, (int)(secs * 1000) + 120000) != 0)
        snprintf(why, why_cap, "no result line (see stderr)");
    else if (contended_stats(stats, before, 1) != 0) snprintf(why, why_cap, "INFO commandstats failed");
    else rc = 0;
    peer_stop(&pp);
    return rc;
}

/* Contended peer rows, appended to crows. */
static void bench_peers(peer_row *pr, contended *crows, int *n_crows, const char *dir, double ping_rtt_us, int *rc) {
    int i, crow_of[N_PEERS];
    for (i = 0; i < N_PEERS; i++) crow_of[i] = -1;
    for (i = 0; i < N_PEERS && !g_stop; i++) {
        const peer_spec *ps = &g_peers[i];
        contended *r;
        char res[1024], why[160], marker[512];
        int k;
        crow_of[i] = -1;
        if (!ps->contended) continue;
        crow_of[i] = *n_crows;
        r = &crows[(*n_crows)++];
        memset(r, 0, sizeof *r);
        r->single = ps->single >= 0 ? crow_of[ps->single] : -1;
        r->x_single = -1;
        r->name = ps->name;
        r->nodes = ps->nodes;
        r->procs = ps->procs ? ps->procs : 8;
        r->pubsub = -1; /* a peer: polls in its own way */
        why[0] = 0;
        if (pr[i].skipped) {
            snprintf(r->skip_buf, sizeof r->skip_buf, "%s", pr[i].skipped);
            r->skipped = r->skip_buf;
            continue;
        }
        snprintf(marker, sizeof marker, "%s/peer-inside-%d", dir, i);
        printf("  peer: %s (%d node%s), contended ...\n", ps->name, ps->nodes, ps->nodes > 1 ? "s" : "");
        k = peer_run(ps, r->procs, g_contended_s, marker, res, sizeof res, r, why, sizeof why);
        rmdir(marker);
        if (k != 0) {
            snprintf(r->skip_buf, sizeof r->skip_buf, "%s%s", k > 0 ? "" : "skipped: ", why);
            r->skipped = r->skip_buf;
            if (k < 0) fprintf(stderr, "bench: peer %s contended: %s\n", ps->name, why);
            continue;
        }
        r->acq = (unsigned long)kv(res, "acq", 0);
        r->errors = (unsigned long)kv(res, "errors", 0);
        r->overlaps = (unsigned long)kv(res, "overlaps", 0);
        r->secs = kv(res, "secs", 0);
        r->cs_us = kv(res, "cs_us", 0);
        r->max_wait_ms = kv(res, "max_wait_ms", 0);
        r->mean_wait_ms = kv(res, "mean_wait_ms", 0);
        r->min_acq = (unsigned long)kv(res, "min_acq", 0);
        r->max_acq = (unsigned long)kv(res, "max_acq", 0);
        r->client_cmds = (unsigned long long)kv(res, "client_cmds", 0);
        r->ho.p50_us = kv(res, "ho_p50_us", 0);
        r->ho.p99_us = kv(res, "ho_p99_us", 0);
        r->ho.ret_p50_us = kv(res, "hor_p50_us", 0);
        r->ho.all_p50_us = kv(res, "ho_all_p50_us", 0);
        r->ho.retake = kv(res, "retake", 0);
        r->ho.n = (unsigned long)kv(res, "ho_n", 0);
        r->ho.bad = (unsigned long)kv(res, "ho_bad", 0);
        r->gave_up = (unsigned long)kv(res, "gave_up", 0);
        contended_finish(r, ping_rtt_us);
        if (r->overlaps || r->ho.bad) { fprintf(stderr, "bench: peer %s: overlapping critical sections\n", ps->name); *rc = 1; }
    }
}

/* --------------------------------------------------------------- output */

static void fmt_ratio(char *out, size_t cap, double v) {
    if (v < 0) snprintf(out, cap, "-");
    else snprintf(out, cap, "%.2f", v);
}

static void csv_num(FILE *f, double v, int last) {
    if (v < 0) fprintf(f, "%s", last ? "\n" : ",");
    else fprintf(f, "%.3f%s", v, last ? "\n" : ",");
}

/* "prefix key value..." lines of a helper's output (footprint.sh, size.sh) */
#define KV_MAX 64
typedef struct kvset {
    int n;
    char key[KV_MAX][64];
    char val[KV_MAX][128];
} kvset;

static int run_kv(const char *cmd, const char *prefix, kvset *kv) {
    char line[512];
    size_t pl = strlen(prefix);
    FILE *p;
    int st;
    fflush(stdout);
    fflush(stderr);
    p = popen(cmd, "r");
    if (!p) return -1;
    while (fgets(line, sizeof line, p)) {
        char *k, *v;
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, prefix, pl) != 0 || line[pl] != ' ') { printf("  %s\n", line); continue; }
        k = line + pl + 1;
        v = strchr(k, ' ');
        if (!v || kv->n == KV_MAX) continue;
        *v++ = 0;
        snprintf(kv->key[kv->n], sizeof kv->key[0], "%s:%s", prefix, k);
        snprintf(kv->val[kv->n], sizeof kv->val[0], "%s", v);
        kv->n++;
    }
    st = pclose(p);
    return st == 0 ? 0 : -1;
}

static const char *kv_get(const kvset *kv, const char *key) {
    int i;
    for (i = 0; i < kv->n; i++)
        if (strcmp(kv->key[i], key) == 0) return kv->val[i];
    return NULL;
}
static double kv_num(const kvset *kv, const char *key) {
    const char *v = kv_get(kv, key);
    return v ? atof(v) : -1;
}

static void print_footprint(const kvset *fp) {
    static const struct { const char *key, *label; } allocs[5] = {
        { "single", "single node" }, { "reentrant", "reentrant (2 holds)" }, { "redlock5", "Redlock-5" },
        { "wait_pubsub", "contended wait, pub/sub" }, { "wait_backoff", "contended wait, backoff" },
    };
    static const char *targets[4] = { "x86-64", "cortex-m4", "cortex-m4+NO_STATUS_STRINGS", "riscv32-rv32imac-freestanding" };
    char key[64];
    int i;
    printf("  heap allocations, whole process, during the measured cycles (connect/init excluded):\n   ");
    for (i = 0; i < 5; i++) {
        double a, c;
        snprintf(key, sizeof key, "fp:allocs_%s", allocs[i].key);
        a = kv_num(fp, key);
        snprintf(key, sizeof key, "fp:cycles_%s", allocs[i].key);
        c = kv_num(fp, key);
        if (a < 0) printf(" %s: not measured;", allocs[i].label);
        else printf(" %s %.0f in %.0f cycles;", allocs[i].label, a, c);
    }
    printf(" (the counter's self-test saw %.0f for one fopen)\n", kv_num(fp, "fp:allocator_selftest"));
    if (kv_get(fp, "fp:ir_total"))
        printf("  instructions per acquire+release cycle (callgrind, 1 node, -O2, %.0f cycles): %.0f = core (rlock.h) %.0f\n"
               "   + POSIX adapter %.0f + libc/vDSO %.0f (kernel work in syscalls not counted)\n",
               kv_num(fp, "fp:callgrind_cycles"), kv_num(fp, "fp:ir_total"), kv_num(fp, "fp:ir_core"),
               kv_num(fp, "fp:ir_adapter"), kv_num(fp, "fp:ir_other"));
    else
        printf("  instructions per cycle: %s\n", kv_get(fp, "fp:skip_callgrind") ? kv_get(fp, "fp:skip_callgrind") : "not measured");
    printf("  stack high-water (-O2, POSIX adapter; above an empty thread's %.0f B): acquire %.0f B, release %.0f B,"
           " Redlock-5 acquire %.0f B\n", kv_num(fp, "fp:stack_baseline"), kv_num(fp, "fp:stack_acquire"),
           kv_num(fp, "fp:stack_release"), kv_num(fp, "fp:stack_acquire_redlock5"));
    printf("  caller-allocated objects: rlock_node %.0f B, rlock_subscriber %.0f B, rlock_client %.0f B,"
           " rlock_lock %.0f B\n", kv_num(fp, "fp:sizeof_node"), kv_num(fp, "fp:sizeof_subscriber"),
           kv_num(fp, "fp:sizeof_client"), kv_num(fp, "fp:sizeof_lock"));
    printf("  core at -Os (make size; .text / .rodata bytes):");
    for (i = 0; i < 4; i++) {
        const char *v;
        unsigned long t = 0, r = 0;
        snprintf(key, sizeof key, "size:%s", targets[i]);
        v = kv_get(fp, key);
        if (v && sscanf(v, "%lu %lu", &t, &r) == 2) printf(" %s %lu / %lu;", targets[i], t, r);
        else printf(" %s %s;", targets[i], v ? v : "not built");
    }
    printf("\n\n");
}

static void goal(const char *what, const char *target, double v, int met, const char *fmt) {
    char val[32];
    if (v < 0) { printf("  %-62s | %-8s | %9s | not measured\n", what, target, "-"); return; }
    snprintf(val, sizeof val, fmt, v);
    printf("  %-62s | %-8s | %9s | %s\n", what, target, val, met ? "met" : "NOT met");
}

/* Issue 12's goals (contention), judged on this run. crows: the rlock rows
 * (N_RL_CROWS, in bench order) then the peers' contended rows (n_crows in
 * all); prow: the peers' uncontended rows, g_peers order. */
static void print_goals12(const row *rows, const contended *crows, int n_crows, const peer_row *prow) {
    static const int fair1[2] = { 10, 11 }, def1[2] = { 1, 3 }, fair5[2] = { 14, 15 }, def5[2] = { 7, 9 };
    double best_peer_c = 0, best_peer_u = 0;
    unsigned long overlaps = 0;
    int i, k;
    char what[96], tgt[32];
    for (i = N_RL_CROWS; i < n_crows; i++)
        if (crows[i].nodes > 1 && !crows[i].skipped && crows[i].acq_s > best_peer_c) best_peer_c = crows[i].acq_s;
    for (i = 0; i < N_PEERS; i++)
        if (g_peers[i].nodes > 1 && !prow[i].skipped && prow[i].cps > best_peer_u) best_peer_u = prow[i].cps;
    for (i = 0; i < n_crows; i++) overlaps += crows[i].overlaps + crows[i].ho.bad;
    printf("issue 12 goals (this run)\n");
    for (k = 0; k < 2; k++) {
        const contended *f = &crows[fair1[k]];
        double bound = 2.0 * f->procs * (f->cs_us + f->ho.p50_us) / 1000.0;
        snprintf(what, sizeof what, "fair, 1 node, %d procs: acq/s vs ceiling", f->procs);
        goal(what, ">= 0.90x", f->acq ? f->x_ceiling : -1, f->x_ceiling >= 0.9, "%.2fx");
        snprintf(what, sizeof what, "fair, 1 node, %d procs: re-takes", f->procs);
        snprintf(tgt, sizeof tgt, "<= %.0f%%", 100.0 / f->procs + 5);
        goal(what, tgt, f->acq ? 100.0 * f->ho.retake : -1, f->ho.retake <= 1.0 / f->procs + 0.05, "%.0f%%");
        snprintf(what, sizeof what, "fair, 1 node, %d procs: longest wait (ms)", f->procs);
        snprintf(tgt, sizeof tgt, "<= %.0f", bound);
        goal(what, tgt, f->acq ? f->max_wait_ms : -1, f->max_wait_ms <= bound, "%.1f");
        snprintf(what, sizeof what, "fair, 1 node, %d procs: client commands / server calls per acq.", f->procs);
        goal(what, "<= 3", f->acq ? f->client_per_acq : -1, f->client_per_acq <= 3.0, "%.2f");
        goal("  (server calls)", "<= 8", f->acq ? f->cmds_per_acq : -1, f->cmds_per_acq <= 8.0, "%.2f");
        snprintf(what, sizeof what, "fair, 1 node, %d procs: handoff p99 (ms)", f->procs);
        goal(what, "<= 2", f->acq ? f->ho.p99_us / 1000.0 : -1, f->ho.p99_us <= 2000.0, "%.2f");
    }
    for (k = 0; k < 2; k++) {
        const contended *d = &crows[def1[k]];
        snprintf(what, sizeof what, "default (pub/sub), 1 node, %d procs: acq/s vs ceiling", d->procs);
        goal(what, ">= 0.95x", d->acq ? d->x_ceiling : -1, d->x_ceiling >= 0.95, "%.2fx");
        snprintf(what, sizeof what, "default (pub/sub), 1 node, %d procs: client commands per acq.", d->procs);
        goal(what, "<= 3", d->acq ? d->client_per_acq : -1, d->client_per_acq <= 3.0, "%.2f");
    }
    for (k = 0; k < 4; k++) {
        const contended *r = &crows[k < 2 ? fair5[k] : def5[k - 2]];
        snprintf(what, sizeof what, "Redlock-5, %s, %d procs: vs its single-node row", WAITING(r), r->procs);
        goal(what, ">= 0.80x", r->acq ? r->x_single : -1, r->x_single >= 0.8, "%.2fx");
        snprintf(what, sizeof what, "Redlock-5, %s, %d procs: vs the best peer Redlock row", WAITING(r), r->procs);
        goal(what, "> 1x", r->acq && best_peer_c > 0 ? r->acq_s / best_peer_c : -1, r->acq_s > best_peer_c, "%.2fx");
    }
    goal("uncontended, 1 node: cycles/s vs the floor (this run; goal: median of 3)", ">= 0.95x", rows[6].x_floor,
         rows[6].x_floor >= 0.95, "%.2fx");
    for (k = 0; k < 2; k++) {
        const row *r = &rows[9 + k]; /* its ref row: hiredis sending its bytes, fanned out */
        snprintf(what, sizeof what, "uncontended, Redlock-%d: vs hiredis fanning SET NX PX + EVALSHA", r->nodes);
        goal(what, ">= 0.95x", r->x_ref, r->x_ref >= 0.95, "%.2fx");
        snprintf(what, sizeof what, "uncontended, Redlock-%d: vs the best peer Redlock row", r->nodes);
        goal(what, "> 1x", best_peer_u > 0 ? r->cps / best_peer_u : -1, r->cps > best_peer_u, "%.2fx");
    }
    goal("overlapping critical sections, every row", "0", (double)overlaps, overlaps == 0, "%.0f");
}

/* The issues' goals, judged on this run. */
static void print_goals(const row *rows, const contended *crows, const kvset *fp) {
    const row *single = &rows[6], *r5 = &rows[10];
    const contended *p8 = &crows[1], *p16 = &crows[3], *r5p = &crows[7];
    double allocs = 0, m4 = -1;
    const char *v;
    int i, measured = 0;
    static const char *keys[5] = { "fp:allocs_single", "fp:allocs_reentrant", "fp:allocs_redlock5",
                                   "fp:allocs_wait_pubsub", "fp:allocs_wait_backoff" };
    for (i = 0; i < 5; i++) {
        double a = kv_num(fp, keys[i]);
        if (a >= 0) { allocs += a; measured++; }
    }
    v = kv_get(fp, "size:cortex-m4");
    if (v && strncmp(v, "skipped", 7) != 0) m4 = atof(v);
    printf("goals (this run)\n");
    goal("single-node cycles/s vs the floor", ">= 0.95x", single->x_floor, single->x_floor >= 0.95, "%.2fx");
    goal("Redlock-5 cycles/s vs single-node", ">= 0.80x", r5->x_single, r5->x_single >= 0.8, "%.2fx");
    goal("Redlock-5 acquire p50 vs single-node", "<= 1.30x", r5->p50_x_single, r5->p50_x_single >= 0 && r5->p50_x_single <= 1.3, "%.2fx");
    goal("contended 1 node, pub/sub, 8 procs: acq/s vs ceiling", ">= 0.95x", p8->acq ? p8->x_ceiling : -1, p8->x_ceiling >= 0.95, "%.2fx");
    goal("contended 1 node, pub/sub, 8 procs: commands per acquisition", "<= 3", p8->acq ? p8->client_per_acq : -1, p8->client_per_acq <= 3.0, "%.2f");
    goal("contended 1 node, pub/sub, 16 procs: acq/s vs ceiling", ">= 0.95x", p16->acq ? p16->x_ceiling : -1, p16->x_ceiling >= 0.95, "%.2fx");
    goal("contended 1 node, pub/sub, 16 procs: commands per acquisition", "<= 3", p16->acq ? p16->client_per_acq : -1, p16->client_per_acq <= 3.0, "%.2f");
    goal("contended Redlock-5 vs contended single-node (pub/sub, 8)", ">= 0.80x", r5p->x_single, r5p->x_single >= 0.8, "%.2fx");
    goal("heap allocations in the measured cycles", "0", measured ? allocs : -1, allocs == 0, "%.0f");
    goal("core .text at -Os, Cortex-M4 (KiB)", "<= 10", m4 >= 0 ? m4 / 1024.0 : -1, m4 >= 0 && m4 <= 10240, "%.2f");
}

/* ------------------------------------------- 6. engine (issue 11) rows */

/* (a) The pre-engine library (bc01738, bench/old/) next to today's, same
 *     slices, same process: single node, Redlock-3 and -5, POSIX adapter.
 * (b) K = 1, 4, 16 locks held at once by one event-loop client (one
 *     connection per server): every cycle begins K acquires, drives them
 *     through rlock_client_interest + poll() + rlock_client_step until all
 *     are granted, then the same for K releases. The row counts lock cycles
 *     (K per batch); its p50 is the time to acquire all K.
 * (c) Sockets: 16 locks held by one client, and a process waiting for a
 *     held lock with pub/sub, under RESP3 (cfg.pubsub) and RESP2 (a
 *     subscriber connection per server), counted by the servers (CLIENT
 *     LIST), on 1 node and Redlock-3.
 * (d) Sizes of the caller-allocated types before and after, and the
 *     longest functions (bench/funclen.sh). */
#define ENG_OLD_ROWS 3
#define ENG_MULTI_ROWS 6
#define ENG_MAX_K 16

typedef struct multi_ctx {
    int k, n;
    rlock_posix_conn pc[N_SERVERS];
    rlock_node nodes[N_SERVERS];
    rlock_client cl;
    rlock_lock lk[ENG_MAX_K];
    rlock_status last;       /* the last status that was not OK */
    size_t max_interest;     /* most connections rlock_client_interest listed at once */
    unsigned long polls, batches; /* poll() calls; batches of K acquires or K releases */
} multi_ctx;

typedef struct eng_sockets {
    const char *what;
    int nodes, resp3;
    int total, subscribed, on_resp3; /* the waiter's connections, all servers (-1: not measured) */
    const char *fail;
} eng_sockets;

static const struct { const char *name; int nodes; } g_eng_old[ENG_OLD_ROWS] = {
    { "rlock single node [" OLD_REV "]", 1 }, { "redlock 3 nodes [" OLD_REV "]", 3 }, { "redlock 5 nodes [" OLD_REV "]", 5 },
};
static const struct { int nodes, k; } g_eng_multi[ENG_MULTI_ROWS] = { { 1, 1 }, { 1, 4 }, { 1, 16 }, { 3, 1 }, { 3, 4 }, { 3, 16 } };
static int g_eng_old_idx[ENG_OLD_ROWS] = { 0, 1, 2 };
static multi_ctx g_multi[ENG_MULTI_ROWS]; /* 16 locks of ~1.2 KB each: static */
static char g_multi_names[ENG_MULTI_ROWS][48];
static int g_eng_first = -1;              /* index of the first engine row in rows[]: the old rows */
static int g_eng_multi_first = -1;        /* ... then the multi rows (right at g_eng_first without the old library) */
static int g_multi_conns[2] = { -1, -1 }; /* connections per server of 16 locks on one client (1 node, Redlock-3) */
static eng_sockets g_eng_sock[4] = {
    { "pub/sub waiter, RESP3 (cfg.pubsub = 1)", 1, 1, -1, -1, -1, NULL },
    { "pub/sub waiter, RESP2 + subscriber per server", 1, 0, -1, -1, -1, NULL },
    { "pub/sub waiter, RESP3 (cfg.pubsub = 1)", 3, 1, -1, -1, -1, NULL },
    { "pub/sub waiter, RESP2 + subscriber per server", 3, 0, -1, -1, -1, NULL },
};

static void multi_teardown(multi_ctx *m) {
    int i;
    for (i = 0; i < m->k; i++) rlock_lock_destroy(&m->lk[i]);
    rlock_client_close(&m->cl);
    for (i = 0; i < m->n; i++) rlock_posix_close(&m->pc[i]);
}

static int multi_init(multi_ctx *m, int n, int k, const char *tag) {
    int i;
    memset(m, 0, sizeof *m);
    m->n = n;
    for (i = 0; i < n; i++)
        if (rlock_posix_init_tcp(&m->pc[i], "127.0.0.1", g_srv[i].port, 1000) != 0 ||
            rlock_node_init(&m->nodes[i], rlock_posix_transport(&m->pc[i])) != RLOCK_OK) goto fail;
    if (rlock_client_init(&m->cl, m->nodes, (size_t)n, NULL) != RLOCK_OK || rlock_client_connect(&m->cl, 2000) != RLOCK_OK)
        goto fail;
    for (i = 0; i < k; i++) {
        char key[64];
        snprintf(key, sizeof key, "bench:multi:%s:%d", tag, i);
        if (rlock_lock_init(&m->lk[i], &m->cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK) goto fail;
        m->k = i + 1;
    }
    return 0;
fail:
    multi_teardown(m);
    return -1;
}

/* Begin K acquires (try once) or K releases, then run the event loop until
 * every one has finished. 0 when all said RLOCK_OK. */
static int multi_batch(multi_ctx *m, int acquire) {
    rlock_status st[ENG_MAX_K];
    int i, left = 0, bad = 0;
    uint64_t end = now_ns() + 5000000000u;
    m->batches++;
    for (i = 0; i < m->k; i++) {
        st[i] = acquire ? rlock_acquire_begin(&m->lk[i], ROW_TTL_MS, 0) : rlock_release_begin(&m->lk[i]);
        if (st[i] == RLOCK_WOULD_BLOCK) left++;
        else if (st[i] != RLOCK_OK) { m->last = st[i]; bad = 1; }
    }
    while (left > 0) {
        rlock_interest it[2 * N_SERVERS];
        struct pollfd p[2 * N_SERVERS];
        uint32_t to = 0;
        size_t k, n = rlock_client_interest(&m->cl, it, 2 * N_SERVERS, &to);
        if (n > m->max_interest) m->max_interest = n;
        if (n > 2 * N_SERVERS) n = 2 * N_SERVERS;
        for (k = 0; k < n; k++) {
            if (it[k].fd < 0) to = 0; /* no descriptor yet: step now */
            p[k].fd = it[k].fd;
            p[k].events = (short)(((it[k].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                  ((it[k].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[k].revents = 0;
        }
        if (to > 0) {
            m->polls++;
            if (poll(p, (nfds_t)n, to > 1000 ? 1000 : (int)to) < 0 && errno != EINTR) bad = 1;
        }
        (void)rlock_client_step(&m->cl);
        for (i = 0; i < m->k; i++)
            if (st[i] == RLOCK_WOULD_BLOCK && (st[i] = rlock_result(&m->lk[i])) != RLOCK_WOULD_BLOCK) {
                left--;
                if (st[i] != RLOCK_OK) { m->last = st[i]; bad = 1; }
            }
        if (left > 0 && (g_stop || now_ns() > end)) { /* never leave an op running on the handle */
            for (i = 0; i < m->k; i++) if (st[i] == RLOCK_WOULD_BLOCK) rlock_cancel(&m->lk[i]);
            m->last = RLOCK_TIMEOUT;
            return -1;
        }
    }
    return bad ? -1 : 0;
}
static int multi_acq(void *p) { return multi_batch((multi_ctx *)p, 1); }
static int multi_rel(void *p) { return multi_batch((multi_ctx *)p, 0); }

/* Append the engine rows to rows[] from index first; returns the new count. */
static int engine_rows_add(row *rows, int first) {
    int i, ports[N_SERVERS];
    g_eng_first = first;
    g_eng_multi_first = first + (old_missing() ? 0 : ENG_OLD_ROWS); /* no commit, no rows: a shallow clone is no error */
    for (i = 0; i < N_SERVERS; i++) ports[i] = g_srv[i].port;
    for (i = 0; i < ENG_OLD_ROWS && !old_missing(); i++) {
        row *r = &rows[first + i];
        r->name = g_eng_old[i].name; r->adapter = "posix"; r->nodes = g_eng_old[i].nodes;
        r->acq = old_acq; r->rel = old_rel; r->ctx = &g_eng_old_idx[i];
        r->ref = g_eng_old[i].nodes == 1 ? 2 : g_eng_old[i].nodes == 3 ? 4 : 5;
        r->single = i == 0 ? -1 : first;
        r->ready = old_setup(i, g_eng_old[i].nodes, ports, g_eng_old[i].nodes == 1 ? "bench:old:single" :
                             g_eng_old[i].nodes == 3 ? "bench:old:redlock3" : "bench:old:redlock5") == 0;
    }
    for (i = 0; i < ENG_MULTI_ROWS; i++) {
        row *r = &rows[g_eng_multi_first + i];
        char tag[16];
        snprintf(g_multi_names[i], sizeof g_multi_names[i], "%d lock%s, 1 client, event loop%s", g_eng_multi[i].k,
                 g_eng_multi[i].k > 1 ? "s" : "", g_eng_multi[i].nodes > 1 ? ", R3" : "");
        snprintf(tag, sizeof tag, "%d", i);
        r->name = g_multi_names[i]; r->adapter = "posix"; r->nodes = g_eng_multi[i].nodes;
        r->acq = multi_acq; r->rel = multi_rel; r->ctx = &g_multi[i];
        r->ref = g_eng_multi[i].nodes == 1 ? 2 : 4;
        r->single = g_eng_multi[i].nodes == 1 ? 6 : 9; /* the blocking rlock row with the same nodes */
        r->ready = multi_init(&g_multi[i], g_eng_multi[i].nodes, g_eng_multi[i].k, tag) == 0;
    }
    return g_eng_multi_first + ENG_MULTI_ROWS;
}

/* After row_finish: a multi row did K lock cycles per batch, so its cycles/s
 * and CPU are per lock cycle; the old rows' errors say why. */
static void engine_rows_finish(row *rows) {
    int i;
    if (g_eng_first < 0) return;
    for (i = 0; i < ENG_OLD_ROWS && !old_missing(); i++) {
        const row *r = &rows[g_eng_first + i];
        if (r->errors) fprintf(stderr, "bench: %s: last error: %s\n", r->name, old_last_error(i));
    }
    for (i = 0; i < ENG_MULTI_ROWS; i++) {
        row *r = &rows[g_eng_multi_first + i];
        r->cps *= g_eng_multi[i].k;
        r->cpu_us /= g_eng_multi[i].k;
        if (r->errors) fprintf(stderr, "bench: %s: last error: %s (node 0: %s)\n", r->name,
                               rlock_status_str(g_multi[i].last), rlock_node_error(&g_multi[i].nodes[0]));
    }
}

static void engine_rows_teardown(void) {
    int i;
    if (g_eng_first < 0) return;
    for (i = 0; i < ENG_OLD_ROWS; i++) old_teardown(i);
    for (i = 0; i < ENG_MULTI_ROWS; i++) multi_teardown(&g_multi[i]);
}

/* The local TCP ports of process pid's sockets: its /proc/PID/fd links
 * name socket inodes, /proc/PID/net/tcp{,6} give each inode's local port.
 * Returns how many (at most cap). */
static int proc_ports(pid_t pid, int *ports, int cap) {
    static unsigned long inodes[512];
    char path[64], link[64], line[512];
    int n_in = 0, n = 0, t;
    DIR *d;
    struct dirent *e;
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    if (!(d = opendir(path))) return 0;
    while ((e = readdir(d)) && n_in < (int)(sizeof inodes / sizeof inodes[0])) {
        char fdpath[320];
        ssize_t len;
        snprintf(fdpath, sizeof fdpath, "%s/%s", path, e->d_name);
        len = readlink(fdpath, link, sizeof link - 1);
        if (len <= 0) continue;
        link[len] = 0;
        if (strncmp(link, "socket:[", 8) == 0) inodes[n_in++] = strtoul(link + 8, NULL, 10);
    }
    closedir(d);
    for (t = 0; t < 2; t++) {
        FILE *f;
        snprintf(path, sizeof path, "/proc/%d/net/%s", (int)pid, t ? "tcp6" : "tcp");
        if (!(f = fopen(path, "r"))) continue;
        while (fgets(line, sizeof line, f) && n < cap) {
            char local[80];
            unsigned long inode = 0;
            unsigned port = 0;
            int i;
            const char *colon;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*s %79s %*s %*s %*s %*s %*s %*s %*s %lu", local, &inode) != 2) continue;
            if (!(colon = strrchr(local, ':')) || sscanf(colon + 1, "%x", &port) != 1) continue;
            for (i = 0; i < n_in; i++)
                if (inodes[i] == inode && inode) { ports[n++] = (int)port; break; }
        }
        fclose(f);
    }
    return n;
}

/* CLIENT LIST of server s, counting only the connections whose client port
 * is one of ports[0..n_ports) (the query's own connection left out): how
 * many, how many are subscribed to something, how many speak RESP3. -1 on
 * error. */
static int client_list(const rh_server *s, const int *ports, int n_ports, int *subscribed, int *resp3) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    int n = -1, self = -1;
    *subscribed = *resp3 = 0;
    if (!c) return -1;
    if (getsockname(c->fd, (struct sockaddr *)&sa, &sl) == 0)
        self = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port : ((struct sockaddr_in *)&sa)->sin_port);
    r = (redisReply *)redisCommand(c, "CLIENT LIST");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = r->str;
        n = 0;
        while (p && *p) {
            const char *eol = strchr(p, '\n'), *f;
            size_t len = eol ? (size_t)(eol - p) : strlen(p);
            char line[1024];
            int port = -1, i, mine = 0;
            snprintf(line, sizeof line, "%.*s", (int)len, p);
            if ((f = strstr(line, " addr=")) && (f = strchr(f + 6, ' ')) != NULL) {
                const char *q = f;
                while (q > line && q[-1] != ':') q--;
                port = atoi(q);
            }
            for (i = 0; i < n_ports; i++) mine |= ports[i] == port;
            if (mine && port != self) {
                n++;
                if (((f = strstr(line, " sub=")) && atoi(f + 5) > 0) || ((f = strstr(line, " psub=")) && atoi(f + 6) > 0))
                    (*subscribed)++;
                if (strstr(line, " resp=3")) (*resp3)++;
            }
            p = eol ? eol + 1 : NULL;
        }
    }
    if (r) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Child: wait (pub/sub, RESP3 or a RESP2 subscriber per server) for key,
 * which the parent holds; exit 0 once acquired and released. */
static void waiter_child(int n, int resp3, const char *key) {
    static rlock_posix_conn pc[N_SERVERS], spc[N_SERVERS];
    static rlock_node nodes[N_SERVERS];
    static rlock_subscriber subs[N_SERVERS];
    static rlock_client cl;
    static rlock_lock lk;
    rlock_config cfg;
    int i, code = 0;
    rlock_config_init(&cfg);
    cfg.pubsub = resp3;
    cfg.recheck_ms = 20000; /* no re-check while the parent counts */
    for (i = 0; i < n; i++) {
        if (rlock_posix_init_tcp(&pc[i], "127.0.0.1", g_srv[i].port, 1000) != 0 ||
            rlock_node_init(&nodes[i], rlock_posix_transport(&pc[i])) != RLOCK_OK) _exit(2);
        if (!resp3 && (rlock_posix_init_tcp(&spc[i], "127.0.0.1", g_srv[i].port, 1000) != 0 ||
                       rlock_subscriber_init(&subs[i], rlock_posix_transport(&spc[i])) != RLOCK_OK)) _exit(2);
    }
    if (rlock_client_init(&cl, nodes, (size_t)n, &cfg) != RLOCK_OK ||
        (!resp3 && rlock_client_set_subscribers(&cl, subs, (size_t)n) != RLOCK_OK) ||
        rlock_lock_init(&lk, &cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK) _exit(3);
    if (rlock_acquire(&lk, ROW_TTL_MS, 20000) != RLOCK_OK || rlock_release(&lk) != RLOCK_OK) code = 4;
    rlock_client_close(&cl);
    for (i = 0; i < n; i++) { rlock_posix_close(&pc[i]); if (!resp3) rlock_posix_close(&spc[i]); }
    _exit(code);
}

/* One waiting process's sockets, as the servers see them: the parent holds
 * the key, the child waits for it; once every server shows a subscribed
 * connection of the child (its ports: /proc/PID, less those it inherited
 * from this process, such as the holder's), the child's connections in
 * CLIENT LIST are counted. */
static void measure_waiter(eng_sockets *w) {
    static rl_setup holder;
    const char *key = w->nodes > 1 ? "bench:waiter:r3" : "bench:waiter:1";
    int ports[64], mine[64], n_mine, j, sub, r3, status;
    pid_t pid;
    uint64_t end;
    if (rl_setup_init(&holder, w->nodes, 0, key, RLOCK_KIND_SIMPLE, 0) != 0 || rl_acq(&holder) != 0) {
        w->fail = "holder could not take the key";
        return;
    }
    n_mine = proc_ports(getpid(), mine, 64);
    pid = rh_fork();
    if (pid == 0) waiter_child(w->nodes, w->resp3, key);
    end = now_ns() + 5000000000u;
    for (;;) {
        int total = 0, subs = 0, on3 = 0, all = pid > 0, np = pid > 0 ? proc_ports(pid, ports, 64) : 0, i, k;
        for (i = k = 0; i < np; i++) { /* drop the inherited ones */
            int inherited = 0, m;
            for (m = 0; m < n_mine; m++) inherited |= mine[m] == ports[i];
            if (!inherited) ports[k++] = ports[i];
        }
        np = k;
        for (j = 0; j < w->nodes && all; j++) {
            int c = client_list(&g_srv[j], ports, np, &sub, &r3);
            if (c < 0 || sub < 1) all = 0;
            total += c;
            subs += sub;
            on3 += r3;
        }
        if (all) { w->total = total; w->subscribed = subs; w->on_resp3 = on3; break; }
        if (pid < 0 || now_ns() > end || g_stop) { w->fail = "the waiter never subscribed (5 s)"; break; }
        rh_sleep_ms(10);
    }
    (void)rl_rel(&holder);
    rl_teardown(&holder);
    if (pid > 0) {
        status = rh_wait_child(pid, 25000);
        if (!rh_exited_with(status, 0) && !w->fail) w->fail = "the waiter did not acquire after the release";
    }
}

/* 16 locks held at once by one client: this process's connections per
 * server (its ports: /proc/self; nothing else of the bench is connected). */
static int measure_multi_conns(int n) {
    static multi_ctx m;
    int ports[64], np, j, sub, r3, most = -1;
    if (multi_init(&m, n, ENG_MAX_K, "conns") != 0) return -1;
    if (multi_batch(&m, 1) == 0) {
        np = proc_ports(getpid(), ports, 64);
        for (j = 0; j < n; j++) {
            int c = client_list(&g_srv[j], ports, np, &sub, &r3);
            if (c < 0) { most = -1; break; }
            if (c > most) most = c;
        }
        (void)multi_batch(&m, 0);
    }
    multi_teardown(&m);
    return most;
}

/* Paired A/B, today against bc01738 on the same nodes: blocks of AB_BLOCK
 * cycles, alternating (old, new, old, new, ...) for AB_SECONDS, each block
 * timed by the wall clock and by this process's CPU clock. A load spell of
 * the machine lasts many blocks, so it hits both alike - the slices above
 * (0.2 s per row, 21 rows between one row's slices) let it hit one row more.
 * Ratios: of the totals, and the median of the block pairs' ratios. */
#define AB_BLOCK 50
#define AB_SECONDS 2.0
#define AB_MAX_PAIRS 4096
typedef struct eng_ab {
    int nodes;
    unsigned long pairs, errors;
    double cps_x, cpu_x, cps_x_med, cpu_x_med; /* today over bc01738 (-1: not measured) */
} eng_ab;
static eng_ab g_eng_ab[3] = { { 1, 0, 0, -1, -1, -1, -1 }, { 3, 0, 0, -1, -1, -1, -1 }, { 5, 0, 0, -1, -1, -1, -1 } };

static uint64_t proc_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One block of AB_BLOCK cycles: wall and CPU ns into w/c; errors counted. */
static void ab_block(op_fn acq, op_fn rel, void *ctx, uint64_t *w, uint64_t *c, unsigned long *errors) {
    uint64_t w0 = now_ns(), c0 = proc_cpu_ns();
    int i;
    for (i = 0; i < AB_BLOCK; i++) {
        if (acq(ctx) != 0) { (*errors)++; continue; }
        if (rel(ctx) != 0) (*errors)++;
    }
    *c = proc_cpu_ns() - c0;
    *w = now_ns() - w0;
}

static void engine_ab(eng_ab *ab, int idx) {
    static rl_setup now;
    static double wr[AB_MAX_PAIRS], cr[AB_MAX_PAIRS];
    int ports[N_SERVERS], i;
    uint64_t tw[2] = { 0, 0 }, tc[2] = { 0, 0 }, end;
    const char *key = ab->nodes == 1 ? "bench:ab:1" : ab->nodes == 3 ? "bench:ab:3" : "bench:ab:5";
    if (old_missing()) return;
    for (i = 0; i < N_SERVERS; i++) ports[i] = g_srv[i].port;
    if (old_setup(idx, ab->nodes, ports, key) != 0) { ab->errors++; return; }
    if (rl_setup_init(&now, ab->nodes, 0, key, RLOCK_KIND_SIMPLE, 0) != 0) { old_teardown(idx); ab->errors++; return; }
    for (i = 0; i < WARMUP_CYCLES / AB_BLOCK; i++) { /* warm-up, not counted */
        uint64_t w, c;
        ab_block(old_acq, old_rel, &g_eng_old_idx[idx], &w, &c, &ab->errors);
        ab_block(rl_acq, rl_rel, &now, &w, &c, &ab->errors);
    }
    ab->errors = 0;
    end = now_ns() + (uint64_t)(AB_SECONDS * 1e9);
    while (ab->pairs < AB_MAX_PAIRS && now_ns() < end && !g_stop && ab->errors < 100) {
        uint64_t w[2], c[2];
        int first = (int)(ab->pairs & 1); /* who goes first alternates too */
        for (i = 0; i < 2; i++) {
            int lib = first ^ i; /* 0 old, 1 now */
            if (lib == 0) ab_block(old_acq, old_rel, &g_eng_old_idx[idx], &w[0], &c[0], &ab->errors);
            else ab_block(rl_acq, rl_rel, &now, &w[1], &c[1], &ab->errors);
        }
        for (i = 0; i < 2; i++) { tw[i] += w[i]; tc[i] += c[i]; }
        wr[ab->pairs] = w[1] > 0 ? (double)w[0] / (double)w[1] : 0; /* cycles/s ratio, now over old */
        cr[ab->pairs] = c[0] > 0 ? (double)c[1] / (double)c[0] : 0;
        ab->pairs++;
    }
    rl_teardown(&now);
    old_teardown(idx);
    if (!ab->pairs || ab->errors) return;
    ab->cps_x = tw[1] > 0 ? (double)tw[0] / (double)tw[1] : -1;
    ab->cpu_x = tc[0] > 0 ? (double)tc[1] / (double)tc[0] : -1;
    qsort(wr, ab->pairs, sizeof wr[0], cmp_double);
    qsort(cr, ab->pairs, sizeof cr[0], cmp_double);
    ab->cps_x_med = wr[ab->pairs / 2];
    ab->cpu_x_med = cr[ab->pairs / 2];
}

static void engine_sockets(void) {
    int i;
    for (i = 0; i < 3 && !g_stop; i++) engine_ab(&g_eng_ab[i], i);
    g_multi_conns[0] = measure_multi_conns(1);
    g_multi_conns[1] = measure_multi_conns(3);
    for (i = 0; i < 4 && !g_stop; i++) measure_waiter(&g_eng_sock[i]);
}

static kvset g_instr; /* bench/old/instr.sh: instructions per cycle, now and bc01738 */

static double instr_ratio(int nodes) {
    char k[32];
    double now, was;
    snprintf(k, sizeof k, "instr:now_%d", nodes);
    now = kv_num(&g_instr, k);
    snprintf(k, sizeof k, "instr:old_%d", nodes);
    was = kv_num(&g_instr, k);
    return now > 0 && was > 0 ? now / was : -1;
}

static void engine_print(const row *rows) {
    static const char *const names[3] = { "single node", "redlock 3", "redlock 5" };
    static const int now_rows[3] = { 6, 9, 10 };
    char cmd[256];
    size_t pos;
    old_sizes os;
    int i;
    printf("engine (issue 11): the pre-engine library (%s, bench/old/) in the same slices and process\n", OLD_REV);
    if (old_missing()) printf("  skipped: %s\n", old_missing());
    else {
        printf("  %-12s | %9s | %9s | %7s | %7s | %7s | %7s | %8s\n", "POSIX", "cycles/s", "was", "x was", "x ref", "was x ref",
               "cpu us", "x was");
        for (i = 0; i < 3; i++) {
            const row *n = &rows[now_rows[i]], *o = &rows[g_eng_first + i];
            printf("  %-12s | %9.0f | %9.0f | %7.3f | %7.3f | %9.3f | %7.2f | %8.3f (was %.2f)\n", names[i], n->cps, o->cps,
                   o->cps > 0 ? n->cps / o->cps : 0, n->x_ref, o->x_ref, n->cpu_us, o->cpu_us > 0 ? n->cpu_us / o->cpu_us : 0,
                   o->cpu_us);
        }
        printf("  (x was: today over %s, cycles/s and client CPU per cycle; x ref: each over the hiredis row\n"
               "   sending today's bytes to the same nodes - the same-run reference of both)\n", OLD_REV);
        printf("  paired A/B (blocks of %d cycles, alternating, %.0f s per row; ratios today over %s: of the totals,\n"
               "   and the median of the block pairs):\n", AB_BLOCK, AB_SECONDS, OLD_REV);
        for (i = 0; i < 3; i++) {
            const eng_ab *ab = &g_eng_ab[i];
            if (ab->cps_x < 0) { printf("    %-12s not measured (%lu errors)\n", names[i], ab->errors); continue; }
            printf("    %-12s cycles/s %.3fx (median %.3fx), CPU per cycle %.3fx (median %.3fx), %lu block pairs\n",
                   names[i], ab->cps_x, ab->cps_x_med, ab->cpu_x, ab->cpu_x_med, ab->pairs);
        }
        pos = (size_t)snprintf(cmd, sizeof cmd, "./bench/old/instr.sh");
        for (i = 0; i < N_SERVERS; i++) pos += (size_t)snprintf(cmd + pos, sizeof cmd - pos, " %d", g_srv[i].port);
        if (run_kv(cmd, "instr", &g_instr) != 0) fprintf(stderr, "bench: bench/old/instr.sh failed\n");
        printf("  instructions per cycle (callgrind, user space: rlock, adapter, libc; 1000 cycles):");
        for (i = 0; i < 3; i++) {
            char k[32];
            int nodes = i == 0 ? 1 : i == 1 ? 3 : 5;
            snprintf(k, sizeof k, "instr:now_%d", nodes);
            if (kv_num(&g_instr, k) < 0) { printf(" %s: not measured;", names[i]); continue; }
            printf(" %s %.0f", names[i], kv_num(&g_instr, k));
            snprintf(k, sizeof k, "instr:old_%d", nodes);
            printf(" (was %.0f, %.3fx);", kv_num(&g_instr, k), instr_ratio(nodes));
        }
        printf("\n");
    }
    printf("  K locks held at once by one client over one connection per server (event loop: poll + rlock_client_step):\n");
    printf("  %-34s | %10s | %13s | %11s | %9s | %12s | %6s | %s\n", "row", "lock cyc/s", "per lock cyc/s", "x blocking",
           "p50 all K", "cpu us/lock", "polls", "conns listed");
    for (i = 0; i < ENG_MULTI_ROWS; i++) {
        const row *r = &rows[g_eng_multi_first + i];
        double batches = (double)g_multi[i].batches;
        printf("  %-34s | %10.0f | %14.0f | %11.2f | %7.0f us | %12.1f | %6.1f | %lu\n", r->name, r->cps,
               r->cps / g_eng_multi[i].k, r->x_single, r->p50, r->cpu_us,
               batches > 0 ? (double)g_multi[i].polls / batches : 0, (unsigned long)g_multi[i].max_interest);
    }
    printf("  (lock cyc/s: acquire+release cycles of all K locks per second; per lock: of each; x blocking: lock\n"
           "   cycles/s over the blocking rlock row with the same nodes; p50 all K: begin -> all K granted; polls:\n"
           "   poll() calls per batch of K acquires or K releases; conns listed: most rlock_client_interest gave)\n");
    printf("  connections per server, 16 locks held by one client (CLIENT LIST): 1 node %d, Redlock-3 %d\n",
           g_multi_conns[0], g_multi_conns[1]);
    printf("  a waiting process's sockets (CLIENT LIST, the waiter's own; goal under RESP3: one per server):\n");
    for (i = 0; i < 4; i++) {
        const eng_sockets *w = &g_eng_sock[i];
        if (w->fail || w->total < 0) { printf("    %-46s %d node%s: not measured: %s\n", w->what, w->nodes,
                                              w->nodes > 1 ? "s" : "", w->fail ? w->fail : "interrupted"); continue; }
        printf("    %-46s %d node%s: %d socket%s (%.1f per server; %d subscribed, %d on RESP3)\n", w->what, w->nodes,
               w->nodes > 1 ? "s" : "", w->total, w->total == 1 ? "" : "s", (double)w->total / w->nodes, w->subscribed,
               w->on_resp3);
    }
    old_get_sizes(&os);
    {   /* "-" for bc01738 when it is not built in */
        char o[5][16];
        unsigned long v[5];
        v[0] = os.node; v[1] = os.client; v[2] = os.lock; v[3] = os.op_fields; v[4] = os.lock + os.client + 3 * os.node;
        for (i = 0; i < 5; i++) snprintf(o[i], sizeof o[i], old_missing() ? "-" : "%lu", v[i]);
        printf("  sizes (bytes, x86-64 defaults)  %-10s %s\n", OLD_REV, "now");
        printf("    rlock_node                    %-10s %lu\n", o[0], (unsigned long)sizeof(rlock_node));
        printf("    rlock_subscriber (RESP2 only) %-10s %lu (%s: an rlock_node)\n", o[0],
               (unsigned long)sizeof(rlock_subscriber), OLD_REV);
        printf("    rlock_client                  %-10s %lu\n", o[1], (unsigned long)sizeof(rlock_client));
        printf("    rlock_lock                    %-10s %lu (each additional lock on a client)\n", o[2],
               (unsigned long)sizeof(rlock_lock));
        printf("    per-operation state           %-10s %lu (rlock_op inside rlock_lock, with its rlock_round %lu;\n"
               "                                             %s: the operation's fields among rlock_lock's)\n",
               o[3], (unsigned long)sizeof(rlock_op), (unsigned long)sizeof(rlock_round), OLD_REV);
        printf("    each additional concurrent lock, Redlock-3: %s %s (a client and 3 nodes of its own), now %lu\n", OLD_REV,
               o[4], (unsigned long)sizeof(rlock_lock));
    }
    printf("  longest functions (bench/funclen.sh):\n");
    fflush(stdout);
    if (system("./bench/funclen.sh 8") != 0) fprintf(stderr, "bench: funclen.sh failed\n");
    printf("\n");
}

/* "engine,<key>,...,<value>," CSV lines, in the footprint rows' columns. */
static void engine_csv(FILE *csv) {
    static const char *const fmt = "engine,%s,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,%s,\n";
    char k[64], v[32];
    old_sizes os;
    int i;
    old_get_sizes(&os);
    for (i = 0; i < 4; i++) {
        snprintf(k, sizeof k, "waiter_sockets_%s_%dnode%s", g_eng_sock[i].resp3 ? "resp3" : "resp2", g_eng_sock[i].nodes,
                 g_eng_sock[i].nodes > 1 ? "s" : "");
        snprintf(v, sizeof v, "%d", g_eng_sock[i].fail ? -1 : g_eng_sock[i].total);
        fprintf(csv, fmt, k, v);
    }
    snprintf(v, sizeof v, "%d", g_multi_conns[0]); fprintf(csv, fmt, "conns_per_server_16_locks_1node", v);
    snprintf(v, sizeof v, "%d", g_multi_conns[1]); fprintf(csv, fmt, "conns_per_server_16_locks_redlock3", v);
    snprintf(v, sizeof v, "%lu", os.node); fprintf(csv, fmt, "sizeof_node_" OLD_REV, v);
    snprintf(v, sizeof v, "%lu", os.client); fprintf(csv, fmt, "sizeof_client_" OLD_REV, v);
    snprintf(v, sizeof v, "%lu", os.lock); fprintf(csv, fmt, "sizeof_lock_" OLD_REV, v);
    snprintf(v, sizeof v, "%lu", os.op_fields); fprintf(csv, fmt, "op_fields_" OLD_REV, v);
    snprintf(v, sizeof v, "%lu", (unsigned long)sizeof(rlock_op)); fprintf(csv, fmt, "sizeof_op", v);
    for (i = 0; i < g_instr.n; i++) fprintf(csv, fmt, g_instr.key[i], g_instr.val[i]);
    for (i = 0; i < 3; i++) {
        snprintf(k, sizeof k, "ab_cps_x_%dnode%s", g_eng_ab[i].nodes, g_eng_ab[i].nodes > 1 ? "s" : "");
        snprintf(v, sizeof v, "%.4f", g_eng_ab[i].cps_x);
        fprintf(csv, fmt, k, v);
        snprintf(k, sizeof k, "ab_cpu_x_%dnode%s", g_eng_ab[i].nodes, g_eng_ab[i].nodes > 1 ? "s" : "");
        snprintf(v, sizeof v, "%.4f", g_eng_ab[i].cpu_x);
        fprintf(csv, fmt, k, v);
    }
}

static void engine_goals(const row *rows) {
    static const char *const what[3] = { "single node", "Redlock-3", "Redlock-5" };
    static const int now_rows[3] = { 6, 9, 10 };
    char label[80];
    int i;
    for (i = 0; i < 3; i++) {
        const row *n = &rows[now_rows[i]], *o = old_missing() ? NULL : &rows[g_eng_first + i];
        double x = o && o->cps > 0 && n->cps > 0 ? n->cps / o->cps : -1;
        double c = o && o->cpu_us > 0 && n->cpu_us > 0 ? n->cpu_us / o->cpu_us : -1;
        snprintf(label, sizeof label, "%s cycles/s vs %s (slices)", what[i], OLD_REV);
        goal(label, ">= 0.95x", x, x >= 0.95, "%.3fx");
        snprintf(label, sizeof label, "%s client CPU per cycle vs %s (slices)", what[i], OLD_REV);
        goal(label, "<= 1.05x", c, c >= 0 && c <= 1.05, "%.3fx");
        snprintf(label, sizeof label, "%s cycles/s vs %s (paired A/B)", what[i], OLD_REV);
        goal(label, ">= 0.95x", g_eng_ab[i].cps_x, g_eng_ab[i].cps_x >= 0.95, "%.3fx");
        snprintf(label, sizeof label, "%s client CPU per cycle vs %s (paired A/B)", what[i], OLD_REV);
        goal(label, "<= 1.05x", g_eng_ab[i].cpu_x, g_eng_ab[i].cpu_x >= 0 && g_eng_ab[i].cpu_x <= 1.05, "%.3fx");
        x = instr_ratio(i == 0 ? 1 : i == 1 ? 3 : 5);
        snprintf(label, sizeof label, "%s instructions per cycle vs %s (callgrind)", what[i], OLD_REV);
        goal(label, "<= 1.05x", x, x >= 0 && x <= 1.05, "%.3fx");
    }
    goal("16 locks on one client: connections per server (1 node)", "1", g_multi_conns[0], g_multi_conns[0] == 1, "%.0f");
    goal("16 locks on one client: connections per server (Redlock-3)", "1", g_multi_conns[1], g_multi_conns[1] == 1, "%.0f");
    goal("waiting process, RESP3, 1 node: sockets per server", "1", g_eng_sock[0].fail ? -1 : g_eng_sock[0].total,
         g_eng_sock[0].total == 1, "%.0f");
    goal("waiting process, RESP3, Redlock-3: sockets per server", "1",
         g_eng_sock[2].fail || g_eng_sock[2].total < 0 ? -1 : g_eng_sock[2].total / 3.0, g_eng_sock[2].total == 3, "%.2f");
}

int main(int argc, char **argv) {
    const char *csv_path = argc > 1 ? argv[1] : "build/bench.csv";
    const char *env = getenv("RLOCK_BENCH_SECONDS"), *only = getenv("RLOCK_BENCH_ONLY");
    char cpu[256], ver[64], load[64], dir[] = "/tmp/rlock-bench-XXXXXX";
    struct utsname un;
    struct sigaction sa;
    floor_ctx fc = { NULL, NULL };
    row rows[N_ROWS];
    static contended crows[N_RL_CROWS + N_PRIM_CROWS + N_PEERS];
    static peer_row prow[N_PEERS];
    static kvset fp;
    int n_rows = 0, n_crows = 0, i, rc = 0, dir_made = 0;
    double ping_rtt;
    FILE *csv;
    uint64_t t_begin = now_ns();

    g_parent = getpid();
    memset(rows, 0, sizeof rows);
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the table and stderr in order */
    for (i = 0; i < N_SERVERS; i++) { g_srv[i].pid = -1; g_srv[i].dir[0] = 0; }
    atexit(stop_servers);
    rh_ignore_sigpipe();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (env && atof(env) > 0) { g_row_s = atof(env); g_contended_s = 1.5 * g_row_s; }

    for (i = 0; i < N_SERVERS; i++)
        if (rh_server_start(&g_srv[i], NULL) != 0) {
            fprintf(stderr, "bench: could not start redis-server %d\n", i);
            rc = 1;
            goto out;
        }
    if (!mkdtemp(dir)) { perror("mkdtemp"); rc = 1; goto out; }
    dir_made = 1;

    /* Scripts cached everywhere up front, so no row pays the NOSCRIPT fallback. */
    for (i = 0; i < N_SERVERS; i++) {
        int k;
        for (k = 0; k < RLOCK_SCRIPT_COUNT; k++) {
            char sha[256];
            if (rh_str(&g_srv[i], sha, sizeof sha, "SCRIPT LOAD %s", rlock_script_text(k)) != REDIS_REPLY_STRING ||
                strcmp(sha, rlock_script_sha(k)) != 0) {
                fprintf(stderr, "bench: SCRIPT LOAD of script %d on server %d: %s\n", k, i, sha);
                rc = 1;
                goto out;
            }
        }
    }

    cpu_model(cpu, sizeof cpu);
    redis_version(&g_srv[0], ver, sizeof ver);
    if (uname(&un) != 0) { snprintf(un.sysname, sizeof un.sysname, "?"); un.release[0] = un.machine[0] = 0; }
    printf("rlock %s bench: %d CPUs (nproc), %s; %s %s %s\n", RLOCK_VERSION_STRING, count_cpus(), cpu,
           un.sysname, un.release, un.machine);
    printf("redis-server %s x%d on 127.0.0.1 (ports", ver, N_SERVERS);
    for (i = 0; i < N_SERVERS; i++) printf(" %d", g_srv[i].port);
    printf("), hiredis %d.%d.%d; client and servers share the CPUs above\n", HIREDIS_MAJOR, HIREDIS_MINOR,
           HIREDIS_PATCH);
    printf("uncontended rows: %.1f s each after %d warm-up cycles, run as %d interleaved slices; contended rows:\n"
           "8 or 16 processes x %.1f s. Load average now: %s (anything else running skews absolute numbers)\n\n",
           g_row_s, WARMUP_CYCLES, SLICES, g_contended_s, loadavg(load, sizeof load));
    fflush(stdout);

    /* 1-2. floor, references, rlock: every row gets its connections and a
     * warm-up first, then all rows run in SLICES short slices, round-robin
     * (rotated each round), so a slow spell of the machine hits every row
     * alike instead of skewing the ratios. */
    fc.c = rh_connect(&g_srv[0]);
    fc.sha = rlock_script_sha(2);
    if (!fc.c) { rc = 1; goto out; }
    if (only && *only) { /* RLOCK_BENCH_ONLY: the contended rows' ceiling needs the PING round trip only */
        rows[0].name = "floor: PING round trip"; rows[0].acq = floor_ping; rows[0].adapter = "hiredis";
        rows[0].nodes = 1; rows[0].ctx = &fc; rows[0].ready = 1;
        row_warmup(&rows[0]);
        row_slice(&rows[0], (uint64_t)(g_row_s * 1e9));
        row_finish(&rows[0]);
        rows[0].x_floor = rows[0].x_ref = rows[0].x_single = rows[0].p50_x_single = -1;
        ping_rtt = rows[0].p50;
        n_rows = 1;
        printf("RLOCK_BENCH_ONLY=\"%s\": only the rlock contended rows that match; PING p50 %.1f us\n\n", only, ping_rtt);
    } else {
        static const struct { const char *name; int nodes, reentrant; } ref[4] = {
            { "ref: rlock cmds (1 node)", 1, 0 },
            { "ref: rlock reentrant cmds (1 node)", 1, 1 },
            { "ref: rlock cmds (3-node fan-out)", 3, 0 },
            { "ref: rlock cmds (5-node fan-out)", 5, 0 },
        };
        /* ref/single: the reference row doing the same commands on the same
         * nodes, and the single-node rlock row with the same client */
        static const struct { const char *name, *adapter, *key; int nodes, hiredis; rlock_kind kind; int ref, single; } spec[6] = {
            { "rlock single node", "posix", "bench:single:posix", 1, 0, RLOCK_KIND_SIMPLE, 2, -1 },
            { "rlock single node", "hiredis", "bench:single:hiredis", 1, 1, RLOCK_KIND_SIMPLE, 2, -1 },
            { "rlock reentrant single node", "posix", "bench:reentrant", 1, 0, RLOCK_KIND_REENTRANT, 3, -1 },
            { "redlock 3 nodes", "posix", "bench:redlock3:posix", 3, 0, RLOCK_KIND_SIMPLE, 4, 6 },
            { "redlock 5 nodes", "posix", "bench:redlock5:posix", 5, 0, RLOCK_KIND_SIMPLE, 5, 6 },
            { "redlock 3 nodes", "hiredis", "bench:redlock3:hiredis", 3, 1, RLOCK_KIND_SIMPLE, 4, 7 },
        };
        int k;
        uint64_t slice_ns = (uint64_t)(g_row_s / SLICES * 1e9);
        for (i = 0; i < N_ROWS; i++) rows[i].ref = rows[i].single = -1;
        rows[0].name = "floor: PING round trip"; rows[0].acq = floor_ping;
        rows[1].name = "floor: SET NX PX + EVALSHA del"; rows[1].acq = floor_set; rows[1].rel = floor_release;
        for (i = 0; i < 2; i++) { rows[i].adapter = "hiredis"; rows[i].nodes = 1; rows[i].ctx = &fc; rows[i].ready = 1; }
        for (i = 0; i < 4; i++) {
            row *r = &rows[2 + i];
            r->name = ref[i].name; r->adapter = "hiredis"; r->nodes = ref[i].nodes;
            r->acq = fan_acq; r->rel = fan_rel; r->ctx = &g_fans[i];
            if (ref[i].nodes > 1) r->single = 2;
            r->ready = fan_init(&g_fans[i], ref[i].nodes, ref[i].reentrant, &g_cmds[ref[i].reentrant]) == 0;
        }
        for (i = 0; i < 6; i++) {
            row *r = &rows[6 + i];
            r->name = spec[i].name; r->adapter = spec[i].adapter; r->nodes = spec[i].nodes;
            r->acq = rl_acq; r->rel = rl_rel; r->ctx = &g_rls[i];
            r->ref = spec[i].ref; r->single = spec[i].single;
            r->ready = rl_setup_init(&g_rls[i], spec[i].nodes, spec[i].hiredis, spec[i].key, spec[i].kind, 0) == 0;
        }
        n_rows = engine_rows_add(rows, 12);
        if (capture_cmds("bench:ref:simple", RLOCK_KIND_SIMPLE, &g_cmds[0]) != 0 ||
            capture_cmds("bench:ref:reentrant", RLOCK_KIND_REENTRANT, &g_cmds[1]) != 0) {
            fprintf(stderr, "bench: could not capture rlock's commands for the ref rows\n");
            for (i = 2; i < 6; i++) rows[i].ready = 0;
            rc = 1;
        }
        for (i = 0; i < n_rows; i++) {
            if (!rows[i].ready) { fprintf(stderr, "bench: %s (%s): setup failed\n", rows[i].name, rows[i].adapter); rc = 1; continue; }
            row_warmup(&rows[i]);
        }
        printf("  starting the peers' scripts (bench/peers/) ...\n");
        peers_start(prow);
        printf("  running %d rows + %d peers in %d interleaved slices ...\n", n_rows, N_PEERS, SLICES);
        for (k = 0; k < SLICES && !g_stop; k++)
            for (i = 0; i < n_rows + N_PEERS; i++) {
                int j = (i + k) % (n_rows + N_PEERS);
                if (j >= n_rows) { peer_slice(j - n_rows, slice_ns); continue; }
                if (rows[j].ready) row_slice(&rows[j], slice_ns);
            }
        for (i = 0; i < n_rows; i++) {
            row *r = &rows[i];
            row_finish(r);
            if (r->errors) {
                fprintf(stderr, "bench: %s (%s): %lu errors", r->name, r->adapter, r->errors);
                if (i >= 6 && i < 12) fprintf(stderr, " (last rlock status: %s; node 0: %s)", rlock_status_str(g_rls[i - 6].last),
                                    rlock_node_error(&g_rls[i - 6].nodes[0]));
                fprintf(stderr, "\n");
                rc = 1;
            }
        }
        engine_rows_finish(rows);
        peers_finish(prow, rows[1].cps, &rc); /* after row_finish: needs the floor's cycles/s */
        for (i = 0; i < n_rows; i++) {
            row *r = &rows[i];
            r->x_floor = r->x_ref = r->x_single = r->p50_x_single = -1;
            if (i >= 2 && rows[1].cps > 0) r->x_floor = r->cps / rows[1].cps;
            if (r->ref >= 0 && rows[r->ref].cps > 0) r->x_ref = r->cps / rows[r->ref].cps;
            if (r->single >= 0 && rows[r->single].cps > 0) {
                r->x_single = r->cps / rows[r->single].cps;
                r->p50_x_single = rows[r->single].p50 > 0 ? r->p50 / rows[r->single].p50 : -1;
            }
        }
        redisFree(fc.c);
        fc.c = NULL;
        for (i = 0; i < 4; i++) fan_free(&g_fans[i]);
        for (i = 0; i < 6; i++) if (rows[6 + i].ready) rl_teardown(&g_rls[i]);
        engine_rows_teardown();
        engine_sockets();
        ping_rtt = rows[0].p50;
    }

    printf("%-36s | %-7s | %8s | %7s | %7s | %7s | %6s | %8s | %7s | %6s\n", "uncontended (acquire+release)", "adapter",
           "cycles/s", "p50 us", "p99 us", "x floor", "x ref", "x single", "p50 x 1", "cpu us");
    printf("-------------------------------------+---------+----------+---------+---------+---------+--------+----------+---------+-------\n");
    for (i = 0; i < n_rows; i++) {
        char a[16], b2[16], c[16], d[16];
        fmt_ratio(a, sizeof a, rows[i].x_floor);
        fmt_ratio(d, sizeof d, rows[i].x_ref);
        fmt_ratio(b2, sizeof b2, rows[i].x_single);
        fmt_ratio(c, sizeof c, rows[i].p50_x_single);
        printf("%-36s | %-7s | %8.0f | %7.1f | %7.1f | %7s | %6s | %8s | %7s | %6.1f%s\n", rows[i].name, rows[i].adapter,
               rows[i].cps, rows[i].p50, rows[i].p99, a, d, b2, c, rows[i].cpu_us, rows[i].errors ? "  ERRORS" : "");
        if (i == 1 || i == 5 || i == 11)
            printf("-------------------------------------+---------+----------+---------+---------+---------+--------+----------+---------+-------\n");
    }
    printf("(p50/p99: acquire only; PING row: one round trip. x floor: cycles/s over the SET NX PX floor.\n"
           " ref rows: hiredis sending the very bytes rlock sends (captured), written to every node before any\n"
           " reply is read; x ref: rlock over the ref row with the same commands and nodes = client-side cost.\n"
           " x single / p50 x 1: cycles/s and acquire p50 over the single-node row with the same client.\n"
           " cpu us: this client's CPU time (user+sys) per cycle - what the client library itself costs)\n\n");
    fflush(stdout);

    /* 3. contended: rlock waiting by backoff ("spin") and by pub/sub, then
     * the peers (4.), each on the same servers */
    {
        static const struct { const char *name; int nodes, procs, pubsub, single; } cs[N_RL_CROWS] = {
            { "rlock 1 node", 1, 8, 0, -1 }, { "rlock 1 node", 1, 8, 1, -1 },
            { "rlock 1 node", 1, 16, 0, -1 }, { "rlock 1 node", 1, 16, 1, -1 },
            { "rlock redlock 3", 3, 8, 0, 0 }, { "rlock redlock 3", 3, 8, 1, 1 },
            { "rlock redlock 5", 5, 8, 0, 0 }, { "rlock redlock 5", 5, 8, 1, 1 },
            { "rlock redlock 3", 3, 16, 1, 3 }, { "rlock redlock 5", 5, 16, 1, 3 },
            { "rlock fair 1 node", 1, 8, 2, -1 }, { "rlock fair 1 node", 1, 16, 2, -1 },
            { "rlock fair redlock 3", 3, 8, 2, 10 }, { "rlock fair redlock 3", 3, 16, 2, 11 },
            { "rlock fair redlock 5", 5, 8, 2, 10 }, { "rlock fair redlock 5", 5, 16, 2, 11 },
        };
        for (i = 0; i < N_RL_CROWS; i++) {
            contended *r = &crows[n_crows++];
            memset(r, 0, sizeof *r);
            r->name = cs[i].name;
            r->nodes = cs[i].nodes;
            r->procs = cs[i].procs;
            r->pubsub = cs[i].pubsub;
            r->single = cs[i].single;
            r->x_single = -1;
            if (g_stop) continue;
            if (only && *only) {
                char what[96];
                snprintf(what, sizeof what, "%s, %s, %d procs", r->name, WAITING(r), r->procs);
                if (!strstr(what, only)) { r->skipped = "not run (RLOCK_BENCH_ONLY)"; continue; }
            }
            printf("  contended: %s, %s, %d procs ...\n", r->name, WAITING(r), r->procs);
            if (bench_contended(r, dir, ping_rtt) != 0) rc = 1;
        }
    }
    /* 3b. primitives (rlock.h section 5b): a semaphore of 4 permits among 16
     * processes (next to redis-semaphore's Semaphore below), and one writer
     * among 15 readers of a read-write lock; 1 ms critical sections.
     * RLOCK_BENCH_ONLY=semaphore / =read-write runs one of them. */
    {
        static const struct { const char *name; int procs, permits, rw; } ps[N_PRIM_CROWS] = {
            { "rlock semaphore(4) 1 node", 16, 4, 0 }, { "rlock read-write 15r+1w 1 node", 16, 0, 1 },
        };
        for (i = 0; i < N_PRIM_CROWS; i++) {
            contended *r = &crows[n_crows++];
            memset(r, 0, sizeof *r);
            r->name = ps[i].name;
            r->nodes = 1;
            r->procs = ps[i].procs;
            r->pubsub = 1;
            r->single = -1;
            r->x_single = -1;
            if (only && *only && !strstr(r->name, only)) { r->skipped = "not run (RLOCK_BENCH_ONLY)"; continue; }
            if (g_stop) continue;
            printf("  contended: %s, pub/sub, %d procs ...\n", r->name, r->procs);
            g_cs_permits = ps[i].permits;
            g_cs_rw = ps[i].rw;
            if (bench_contended(r, dir, ping_rtt) != 0) rc = 1;
            g_cs_permits = g_cs_rw = 0;
        }
    }
    if (!only || !*only) {
        printf("\n4. peers (bench/peers/, the same servers; see bench/package.json for versions)\n");
        bench_peers(prow, crows, &n_crows, dir, ping_rtt, &rc);
    }
    for (i = 0; i < n_crows; i++) {
        contended *r = &crows[i];
        if (r->single >= 0 && !r->skipped && !crows[r->single].skipped && crows[r->single].acq_s > 0)
            r->x_single = r->acq_s / crows[r->single].acq_s;
    }
    printf("\n");

    printf("%-38s | %-7s | %5s | %6s | %6s | %6s | %6s | %6s | %7s | %7s | %8s | %9s | %6s | %9s | %9s | %s\n",
           "contended, 1 ms CS", "waiting", "procs", "acq/s", "CS us", "ceil/s", "x ceil", "x 1 nd", "cmd/acq",
           "srv/acq", "ho p50us", "ho p99us", "retake", "max wait", "min-max", "overlap");
    printf("---------------------------------------+---------+-------+--------+--------+--------+--------+--------+---------+---------+----------+-----------+--------+-----------+-----------+--------\n");
    for (i = 0; i < n_crows; i++) {
        const contended *r = &crows[i];
        char mm[32], xs[16], name[64];
        snprintf(name, sizeof name, "%s%s", r->name, r->pubsub < 0 ? (r->nodes > 1 ? " (5 nodes)" : " (1 node)") : "");
        if (r->pubsub >= 0) snprintf(name, sizeof name, "%s", r->name);
        if (i == N_RL_CROWS)
            printf("---------------------------------------+---------+-------+--------+--------+--------+--------+--------+---------+---------+----------+-----------+--------+-----------+-----------+--------\n");
        if (r->skipped) {
            if (only && *only) continue; /* RLOCK_BENCH_ONLY left it out */
            printf("%-38s | %-7s | %5d | %s\n", name, WAITING(r), r->procs, r->skipped);
            continue;
        }
        snprintf(mm, sizeof mm, "%lu-%lu", r->min_acq, r->max_acq);
        fmt_ratio(xs, sizeof xs, r->x_single);
        printf("%-38s | %-7s | %5d | %6.0f | %6.0f | %6.0f | %6.2f | %6s | %7.2f | %7.2f | %8.0f | %9.0f | %5.0f%% | %6.0f ms | %9s | %lu%s\n",
               name, WAITING(r), r->procs, r->acq_s, r->cs_us, r->ceiling,
               r->x_ceiling, xs, r->client_per_acq, r->cmds_per_acq, r->ho.p50_us, r->ho.p99_us, 100.0 * r->ho.retake,
               r->max_wait_ms, mm, r->overlaps + r->ho.bad,
               !r->errors ? "" : r->pubsub < 0 ? "  (some waits ended unacquired after 30 s)" : "  ERRORS");
    }
    printf("(ceil/s = 1 / (this row's mean critical section + PING p50 %.1f us); x 1 nd = acq/s over the single-node\n"
           " row with the same waiting and procs. cmd/acq = commands the clients sent per acquisition, all nodes:\n"
           " rlock counts them itself (rlock_node_commands, rlock_subscriber_commands), the peers'\n"
           " scripts count them in the client library's send path. srv/acq = calls the servers executed per\n"
           " acquisition (INFO commandstats, all nodes, info/config left out) - Redis 7 counts the commands a\n"
           " script runs too, so a one-EVALSHA release that GETs, DELs and ZPOPMINs is 4 calls. ho = handoff:\n"
           " from the holder calling release to the next holder (another process) returning from acquire, on one\n"
           " CLOCK_MONOTONIC; retake = holds followed by the same process again. spin = rlock's capped exponential\n"
           " backoff (2..128 ms); pub/sub = rlock_client_set_subscribers + wake-one queue; poll = the peer's\n"
           " own fixed-interval retry (node-redlock 200 ms +-100, redis-semaphore 10 ms, redis-py 100 ms).\n"
           " overlap: critical sections found overlapping (must be 0); for the semaphore more than 4 inside,\n"
           " for the read-write lock a reader inside with the writer. Those two rows hold concurrently by design:\n"
           " x ceil can pass 1 and handoffs are not measured (0))\n", ping_rtt);
    for (i = 0; i < n_crows; i++)
        if (crows[i].writer_acq && crows[i].secs > 0)
            printf("  %s: the writer took it %lu times (%.0f/s) among 15 readers' %lu (writers first: no starvation)\n",
                   crows[i].name, crows[i].writer_acq, (double)crows[i].writer_acq / crows[i].secs,
                   crows[i].acq - crows[i].writer_acq);
    for (i = 0; i < n_crows; i++) {
        const contended *r = &crows[i];
        int k;
        if (!r->acq || r->skipped) continue;
        printf("  %-28s %-7s %2d procs, server calls per acquisition:", r->name,
               WAITING(r), r->procs);
        for (k = 0; k < r->delta.n; k++)
            if (r->delta.calls[k]) printf(" %s %.2f", r->delta.name[k], (double)r->delta.calls[k] / (double)r->acq);
        printf("\n");
    }
    for (i = 0; i < n_crows; i++) {
        const contended *r = &crows[i];
        if (!r->acq || r->skipped) continue;
        printf("  %-28s %-7s %2d procs, handoff p50 from release return %.0f us, every transition (re-takes too) p50 %.0f us, mean wait %.2f ms",
               r->name, WAITING(r), r->procs, r->ho.ret_p50_us,
               r->ho.all_p50_us, r->mean_wait_ms);
        if (r->gave_up) printf(", acquire gave up and was called again %lu times", r->gave_up);
        printf("\n");
    }
    printf("\n");

    if (only && *only) goto csv; /* RLOCK_BENCH_ONLY: no peers, footprint or goals */
    printf("%-36s | %-6s | %5s | %8s | %7s | %7s | %7s | %9s | %8s | %7s | %7s | %7s | %6s\n", "peers, uncontended (acquire+release)",
           "client", "nodes", "cycles/s", "p50 us", "p99 us", "x floor", "x lang fl", "x single", "p50 x 1", "cmd/cyc",
           "srv/cyc", "cpu us");
    printf("-------------------------------------+--------+-------+----------+---------+---------+---------+-----------+----------+---------+---------+---------+-------\n");
    for (i = 0; i < N_PEERS; i++) {
        const peer_row *p = &prow[i];
        char a[16], b2[16], c[16], d[16];
        if (p->skipped) {
            printf("%-36s | %-6s | %5d | %s\n", g_peers[i].name, g_peers[i].lang, g_peers[i].nodes, p->skipped);
            continue;
        }
        fmt_ratio(a, sizeof a, p->x_floor);
        fmt_ratio(b2, sizeof b2, p->x_lang);
        fmt_ratio(c, sizeof c, p->x_single);
        fmt_ratio(d, sizeof d, p->p50_x_single);
        printf("%-36s | %-6s | %5d | %8.0f | %7.1f | %7.1f | %7s | %9s | %8s | %7s | %7.2f | %7.2f | %6.1f%s\n", g_peers[i].name,
               g_peers[i].lang, g_peers[i].nodes, p->cps, p->p50, p->p99, a, b2, c, d, p->client_per_cycle,
               p->srv_per_cycle, p->cpu_us, p->errors ? "  ERRORS" : "");
    }
    printf("(x floor: over the C floor (SET NX PX + EVALSHA del, hiredis) above; x lang fl: over the same\n"
           " language's raw client doing SET NX PX + EVALSHA del (what the runtime costs before any lock library);\n"
           " x single / p50 x 1: the library's 5-node row over its single-node row. cmd/cyc: client-sent commands\n"
           " per cycle; srv/cyc: server calls per cycle, scripts' inner calls included. versions: %s; %s)\n\n",
           g_peer_versions[0][0] ? g_peer_versions[0] : "node: not run",
           g_peer_versions[1][0] ? g_peer_versions[1] : "python: not run");

    /* 5. footprint */
    {
        char cmd[256];
        size_t pos;
        printf("footprint of the client (bench/footprint.c, bench/size.sh)\n");
        pos = (size_t)snprintf(cmd, sizeof cmd, "./bench/footprint.sh");
        for (i = 0; i < N_SERVERS; i++) pos += (size_t)snprintf(cmd + pos, sizeof cmd - pos, " %d", g_srv[i].port);
        if (run_kv(cmd, "fp", &fp) != 0) { fprintf(stderr, "bench: footprint failed\n"); rc = 1; }
        if (run_kv("./bench/size.sh --kv", "size", &fp) != 0) { fprintf(stderr, "bench: size failed\n"); rc = 1; }
        print_footprint(&fp);
    }

    engine_print(rows);
    print_goals(rows, crows, &fp);
    engine_goals(rows);
    print_goals12(rows, crows, n_crows, prow);

csv:
    csv = fopen(csv_path, "w");
    if (!csv) {
        fprintf(stderr, "bench: cannot write %s: %s\n", csv_path, strerror(errno));
        rc = 1;
    } else {
        fprintf(csv, "section,row,adapter,nodes,procs,seconds,ops,ops_per_s,p50_us,p99_us,client_cpu_us,x_floor,x_ref,x_single,"
                     "p50_x_single,cs_mean_us,ceiling_per_s,x_ceiling,redis_cmds,cmds_per_acq,cmds_per_acq_per_node,"
                     "scripts_per_acq,client_cmds_per_acq,overlaps,max_wait_ms,mean_wait_ms,min_acq_per_proc,"
                     "max_acq_per_proc,errors,waiting,handoff_p50_us,handoff_p99_us,handoff_from_return_p50_us,"
                     "handoff_all_p50_us,retake,value,note\n");
        for (i = 0; i < n_rows; i++) {
            const row *r = &rows[i];
            fprintf(csv, "%s,%s,%s,%d,1,%.3f,%lu,%.1f,%.2f,%.2f,%.2f,", i < 2 ? "floor" : i < 6 ? "reference" : "uncontended", r->name,
                    r->adapter, r->nodes, (double)r->ns / 1e9, (unsigned long)r->n, r->cps, r->p50, r->p99, r->cpu_us);
            csv_num(csv, r->x_floor, 0);
            csv_num(csv, r->x_ref, 0);
            csv_num(csv, r->x_single, 0);
            csv_num(csv, r->p50_x_single, 0);
            fprintf(csv, ",,,,,,,,,,,,,%lu,,,,,,,,\n", r->errors);
        }
        for (i = 0; i < n_crows; i++) {
            const contended *r = &crows[i];
            fprintf(csv, "contended,%s,%s,%d,%d,%.3f,%lu,%.1f,,,,,,", r->name, r->pubsub < 0 ? "peer" : "posix", r->nodes,
                    r->procs, r->secs, r->acq, r->acq_s);
            csv_num(csv, r->x_single, 0);
            fprintf(csv, ",%.2f,%.1f,%.3f,%llu,%.3f,%.3f,%.3f,%.3f,%lu,%.2f,%.3f,%lu,%lu,%lu,%s,%.1f,%.1f,%.1f,%.1f,%.4f,,\"%s\"\n",
                    r->cs_us, r->ceiling, r->x_ceiling, r->cmds, r->cmds_per_acq, r->cmds_per_acq_node,
                    r->scripts_per_acq, r->client_per_acq, r->overlaps + r->ho.bad, r->max_wait_ms, r->mean_wait_ms,
                    r->min_acq, r->max_acq, r->errors, WAITING(r),
                    r->ho.p50_us, r->ho.p99_us, r->ho.ret_p50_us, r->ho.all_p50_us, r->ho.retake,
                    r->skipped ? r->skipped : "");
        }
        for (i = 0; i < N_PEERS; i++) {
            const peer_row *p = &prow[i];
            fprintf(csv, "peer,%s,%s,%d,1,%.3f,%lu,%.1f,%.2f,%.2f,%.2f,", g_peers[i].name, g_peers[i].lang,
                    g_peers[i].nodes, p->secs, p->cycles, p->cps, p->p50, p->p99, p->cpu_us);
            csv_num(csv, p->x_floor, 0);
            csv_num(csv, p->x_lang, 0);
            csv_num(csv, p->x_single, 0);
            csv_num(csv, p->p50_x_single, 0);
            fprintf(csv, ",,,,%.3f,,,%.3f,,,,,,%lu,,,,,,,,\"%s\"\n", p->srv_per_cycle, p->client_per_cycle, p->errors,
                    p->skipped ? p->skipped : "");
        }
        for (i = 0; i < fp.n; i++)
            fprintf(csv, "footprint,%s,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,%s,\n", fp.key[i], fp.val[i]);
        engine_csv(csv);
        fclose(csv);
        printf("\nCSV: %s; total %.1f s; load average now: %s\n", csv_path, (double)(now_ns() - t_begin) / 1e9,
               loadavg(load, sizeof load));
    }

out:
    if (dir_made) rmdir(dir);
    stop_servers();
    if (fc.c) redisFree(fc.c);
    for (i = 0; i < N_ROWS; i++) free(rows[i].samples);
    if (g_stop) { fprintf(stderr, "bench: interrupted\n"); rc = 1; }
    if (rc) fprintf(stderr, "bench: FAILED (see above)\n");
    return rc;
}
