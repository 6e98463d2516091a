/* bench.c - `make bench`: rlock's speed next to raw hiredis, same machine, same run.
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
 *                 the same commands, and to single-node. Rows 1-2 run
 *                 interleaved in short slices, so a busy spell of the machine
 *                 hits all of them alike; each also reports this process's
 *                 CPU time per cycle.
 *   3. contended  8 forked processes on one key, 1 ms critical sections, on 1,
 *                 3 and 5 nodes: acquisitions/s against the ceiling
 *                 1 / (critical section + one PING RTT), Redis commands per
 *                 acquisition (INFO commandstats before/after), overlaps (must
 *                 be 0), the longest wait
 * Prints a table and writes CSV (default build/bench.csv, or argv[1]).
 * Speed is only reported, never asserted; the exit status is non-zero only
 * for errors (servers, lock failures, overlapping critical sections).
 * RLOCK_BENCH_SECONDS=x sets the seconds per uncontended row (default 2;
 * contended rows run 1.5 times as long). Servers are stopped by PID on every
 * exit path (and die with this process otherwise: PR_SET_PDEATHSIG). */
#define RLOCK_IMPLEMENTATION
#include "../adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "../adapters/rlock_hiredis.h"
#include "../tests/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define N_SERVERS 5
#define N_PROCS 8
#define WARMUP_CYCLES 300
#define SLICES 10 /* uncontended rows run interleaved in this many slices each */
#define ROW_TTL_MS 30000
#define CS_TTL_MS 5000
#define CS_WAIT_MS 30000

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
        if (acquire) ok &= r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
                           r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 1;
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


/* An rlock client over n nodes: POSIX adapter, or hiredis contexts. */
typedef struct rl_setup {
    int n, use_hiredis;
    rlock_posix_conn pc[N_SERVERS];
    rlock_hiredis_conn hc[N_SERVERS];
    redisContext *rc[N_SERVERS];
    rlock_node nodes[N_SERVERS];
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
        if (s->rc[i]) redisFree(s->rc[i]);
        s->rc[i] = NULL;
    }
}

static int rl_setup_init(rl_setup *s, int n, int use_hiredis, const char *key, rlock_kind kind) {
    int i;
    memset(s, 0, sizeof *s);
    s->n = n;
    s->use_hiredis = use_hiredis;
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
    }
    if (rlock_client_init(&s->cl, s->nodes, (size_t)n, NULL) != RLOCK_OK) goto fail;
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

typedef struct worker_result {
    unsigned long acq, errors, overlaps;
    unsigned long long cs_ns, wait_ns, max_wait_ns, client_cmds;
    uint64_t finish_ns;
} worker_result;

typedef struct contended {
    const char *name;
    int nodes;
    unsigned long acq, errors, overlaps, min_acq, max_acq;
    double secs, acq_s, cs_us, ceiling, x_ceiling, max_wait_ms, mean_wait_ms;
    unsigned long long cmds, scripts, client_cmds;
    double cmds_per_acq, cmds_per_acq_node, scripts_per_acq, client_per_acq;
    cmdstats delta;     /* per-command calls during the run, all nodes */
} contended;

static void worker(int n, const char *key, const char *marker, int ready_w, int go_r, int res_w) {
    static rl_setup s;
    worker_result res;
    unsigned long long cmds0 = 0;
    uint64_t deadline, t0, t1, c0, c1;
    char b = 1;
    int i;
    memset(&res, 0, sizeof res);
    if (rl_setup_init(&s, n, 0, key, RLOCK_KIND_SIMPLE) != 0) _exit(2);
    if (write(ready_w, &b, 1) != 1) _exit(3);
    close(ready_w);
    while (read(go_r, &b, 1) < 0 && errno == EINTR) { } /* EOF: go */
    close(go_r);
    for (i = 0; i < n; i++) cmds0 += rlock_node_commands(&s.nodes[i]);
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
        if (mkdir(marker, 0700) != 0) res.overlaps++; /* another holder is inside */
        else {
            sleep_1ms();
            rmdir(marker);
        }
        c1 = now_ns();
        res.cs_ns += c1 - c0;
        res.acq++;
        st = rlock_release(&s.lk);
        if (st != RLOCK_OK && res.errors++ < 3)
            fprintf(stderr, "bench: worker %d: release: %s\n", (int)getpid(), rlock_status_str(st));
    }
    res.finish_ns = now_ns();
    for (i = 0; i < n; i++) res.client_cmds += rlock_node_commands(&s.nodes[i]);
    res.client_cmds -= cmds0;
    rl_teardown(&s);
    if (write(res_w, &res, sizeof res) != (ssize_t)sizeof res) _exit(4);
    _exit(0);
}

static int bench_contended(contended *r, const char *dir, double ping_rtt_us) {
    int ready[2], go[2], res[2], i, got = 0, failed = 0;
    pid_t kids[N_PROCS] = { 0 };
    static cmdstats before[N_SERVERS], after[N_SERVERS];
    char key[64], marker[512], b;
    uint64_t start, finish = 0;
    worker_result wr;

    snprintf(key, sizeof key, "bench:contended:%d", r->nodes);
    snprintf(marker, sizeof marker, "%s/inside-%d", dir, r->nodes);
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(res) != 0) { perror("pipe"); return -1; }
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < N_PROCS; i++) {
        kids[i] = fork();
        if (kids[i] < 0) { perror("fork"); kids[i] = 0; failed = 1; break; }
        if (kids[i] == 0) {
            close(ready[0]); close(go[1]); close(res[0]);
            worker(r->nodes, key, marker, ready[1], go[0], res[1]);
        }
    }
    close(ready[1]); close(go[0]); close(res[1]);
    /* every worker connected (or died): EOF once all closed their end */
    while (read(ready[0], &b, 1) == 1) got++;
    close(ready[0]);
    if (got != N_PROCS) failed = 1;
    for (i = 0; i < r->nodes; i++)
        if (read_cmdstats(&g_srv[i], &before[i]) != 0) failed = 1;
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
        }
        if (r->acq) {
            r->cs_us = (double)cs / (double)r->acq / 1000.0;
            r->mean_wait_ms = (double)wait / (double)(r->acq + r->errors) / 1e6;
        }
    }
    close(res[0]);
    for (i = 0; i < N_PROCS; i++) {
        int status = 0;
        if (kids[i] <= 0) continue;
        while (waitpid(kids[i], &status, 0) < 0 && errno == EINTR) { }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    if (got != N_PROCS) failed = 1;
    r->cmds = r->scripts = 0;
    memset(&r->delta, 0, sizeof r->delta);
    for (i = 0; i < r->nodes; i++) {
        if (read_cmdstats(&g_srv[i], &after[i]) != 0) { failed = 1; continue; }
        r->cmds += after[i].all - before[i].all;
        r->scripts += after[i].scripts - before[i].scripts;
        cmdstats_acc(&r->delta, &after[i], 1);
        cmdstats_acc(&r->delta, &before[i], -1);
    }
    r->secs = finish > start ? (double)(finish - start) / 1e9 : 0;
    r->acq_s = r->secs > 0 ? (double)r->acq / r->secs : 0;
    r->ceiling = r->cs_us + ping_rtt_us > 0 ? 1e6 / (r->cs_us + ping_rtt_us) : 0;
    r->x_ceiling = r->ceiling > 0 ? r->acq_s / r->ceiling : 0;
    r->cmds_per_acq = r->acq ? (double)r->cmds / (double)r->acq : 0;
    r->cmds_per_acq_node = r->cmds_per_acq / r->nodes;
    r->scripts_per_acq = r->acq ? (double)r->scripts / (double)r->acq : 0;
    r->client_per_acq = r->acq ? (double)r->client_cmds / (double)r->acq : 0;
    rmdir(marker);
    if (failed) fprintf(stderr, "bench: %s: a worker failed\n", r->name);
    return failed || r->errors || r->overlaps ? -1 : 0;
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

int main(int argc, char **argv) {
    const char *csv_path = argc > 1 ? argv[1] : "build/bench.csv";
    const char *env = getenv("RLOCK_BENCH_SECONDS");
    char cpu[256], ver[64], load[64], dir[] = "/tmp/rlock-bench-XXXXXX";
    struct utsname un;
    struct sigaction sa;
    floor_ctx fc = { NULL, NULL };
    row rows[12];
    contended crows[3];
    int n_rows = 0, i, rc = 0, dir_made = 0;
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
           "%d processes x %.1f s. Load average now: %s (anything else running skews absolute numbers)\n\n",
           g_row_s, WARMUP_CYCLES, SLICES, N_PROCS, g_contended_s, loadavg(load, sizeof load));
    fflush(stdout);

    /* 1-2. floor, references, rlock: every row gets its connections and a
     * warm-up first, then all rows run in SLICES short slices, round-robin
     * (rotated each round), so a slow spell of the machine hits every row
     * alike instead of skewing the ratios. */
    fc.c = rh_connect(&g_srv[0]);
    fc.sha = rlock_script_sha(2);
    if (!fc.c) { rc = 1; goto out; }
    {
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
        for (i = 0; i < 12; i++) rows[i].ref = rows[i].single = -1;
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
            r->ready = rl_setup_init(&g_rls[i], spec[i].nodes, spec[i].hiredis, spec[i].key, spec[i].kind) == 0;
        }
        n_rows = 12;
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
        for (k = 0; k < SLICES && !g_stop; k++)
            for (i = 0; i < n_rows; i++) {
                row *r = &rows[(i + k) % n_rows];
                if (r->ready) row_slice(r, slice_ns);
            }
        for (i = 0; i < n_rows; i++) {
            row *r = &rows[i];
            row_finish(r);
            if (r->errors) {
                fprintf(stderr, "bench: %s (%s): %lu errors", r->name, r->adapter, r->errors);
                if (i >= 6) fprintf(stderr, " (last rlock status: %s; node 0: %s)", rlock_status_str(g_rls[i - 6].last),
                                    rlock_node_error(&g_rls[i - 6].nodes[0]));
                fprintf(stderr, "\n");
                rc = 1;
            }
        }
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
        if (i == 1 || i == 5)
            printf("-------------------------------------+---------+----------+---------+---------+---------+--------+----------+---------+-------\n");
    }
    printf("(p50/p99: acquire only; PING row: one round trip. x floor: cycles/s over the SET NX PX floor.\n"
           " ref rows: hiredis sending the very bytes rlock sends (captured), written to every node before any\n"
           " reply is read; x ref: rlock over the ref row with the same commands and nodes = client-side cost.\n"
           " x single / p50 x 1: cycles/s and acquire p50 over the single-node row with the same client.\n"
           " cpu us: this client's CPU time (user+sys) per cycle - what the client library itself costs)\n\n");
    fflush(stdout);

    /* 3. contended */
    for (i = 0; i < 3; i++) {
        static const char *names[3] = { "contended 1 node", "contended redlock 3", "contended redlock 5" };
        static const int nodes[3] = { 1, 3, 5 };
        memset(&crows[i], 0, sizeof crows[i]);
        crows[i].name = names[i];
        crows[i].nodes = nodes[i];
        if (g_stop) continue;
        if (bench_contended(&crows[i], dir, ping_rtt) != 0) rc = 1;
    }
    printf("%-20s | %6s | %6s | %9s | %7s | %6s | %9s | %8s | %7s | %8s | %8s | %7s\n", "contended, 8 procs",
           "acq/s", "CS us", "ceiling/s", "x ceil", "cmds/a", "cmds/a/nd", "evalsh/a", "overlap",
           "maxwait", "meanwait", "min-max");
    printf("---------------------+--------+--------+-----------+---------+--------+-----------+----------+---------+----------+----------+--------\n");
    for (i = 0; i < 3; i++) {
        const contended *r = &crows[i];
        char mm[32];
        snprintf(mm, sizeof mm, "%lu-%lu", r->min_acq, r->max_acq);
        printf("%-20s | %6.0f | %6.0f | %9.0f | %7.2f | %6.2f | %9.2f | %8.2f | %7lu | %5.1f ms | %5.2f ms | %7s%s\n",
               r->name, r->acq_s, r->cs_us, r->ceiling, r->x_ceiling, r->cmds_per_acq, r->cmds_per_acq_node,
               r->scripts_per_acq, r->overlaps, r->max_wait_ms, r->mean_wait_ms, mm,
               r->errors ? "  ERRORS" : "");
    }
    printf("(ceiling = 1 / (mean critical section + PING p50 %.1f us); cmds/a = Redis commands per acquisition,\n"
           " all nodes, from INFO commandstats without info/config - Redis 7 also counts the commands a script\n"
           " runs; cmds/a/nd = per node; evalsh/a = EVALSHA+EVAL the clients sent per acquisition (client-side\n"
           " count:", ping_rtt);
    for (i = 0; i < 3; i++) printf(" %.2f", crows[i].client_per_acq);
    printf("); min-max = acquisitions of the least and most lucky process)\n");
    for (i = 0; i < 3; i++) {
        const contended *r = &crows[i];
        int k;
        if (!r->acq) continue;
        printf("  %-20s per acquisition:", r->name);
        for (k = 0; k < r->delta.n; k++)
            if (r->delta.calls[k]) printf(" %s %.2f", r->delta.name[k], (double)r->delta.calls[k] / (double)r->acq);
        printf("\n");
    }

    /* CSV */
    csv = fopen(csv_path, "w");
    if (!csv) {
        fprintf(stderr, "bench: cannot write %s: %s\n", csv_path, strerror(errno));
        rc = 1;
    } else {
        fprintf(csv, "section,row,adapter,nodes,procs,seconds,ops,ops_per_s,p50_us,p99_us,client_cpu_us,x_floor,x_ref,x_single,"
                     "p50_x_single,cs_mean_us,ceiling_per_s,x_ceiling,redis_cmds,cmds_per_acq,cmds_per_acq_per_node,"
                     "scripts_per_acq,client_cmds_per_acq,overlaps,max_wait_ms,mean_wait_ms,min_acq_per_proc,"
                     "max_acq_per_proc,errors\n");
        for (i = 0; i < n_rows; i++) {
            const row *r = &rows[i];
            fprintf(csv, "%s,%s,%s,%d,1,%.3f,%lu,%.1f,%.2f,%.2f,%.2f,", i < 2 ? "floor" : i < 6 ? "reference" : "uncontended", r->name,
                    r->adapter, r->nodes, (double)r->ns / 1e9, (unsigned long)r->n, r->cps, r->p50, r->p99, r->cpu_us);
            csv_num(csv, r->x_floor, 0);
            csv_num(csv, r->x_ref, 0);
            csv_num(csv, r->x_single, 0);
            csv_num(csv, r->p50_x_single, 0);
            fprintf(csv, ",,,,,,,,,,,,,%lu\n", r->errors);
        }
        for (i = 0; i < 3; i++) {
            const contended *r = &crows[i];
            fprintf(csv, "contended,%s,posix,%d,%d,%.3f,%lu,%.1f,,,,,,,,%.2f,%.1f,%.3f,%llu,%.3f,%.3f,%.3f,%.3f,%lu,%.2f,%.3f,%lu,%lu,%lu\n",
                    r->name, r->nodes, N_PROCS, r->secs, r->acq, r->acq_s, r->cs_us, r->ceiling, r->x_ceiling,
                    r->cmds, r->cmds_per_acq, r->cmds_per_acq_node, r->scripts_per_acq, r->client_per_acq,
                    r->overlaps, r->max_wait_ms, r->mean_wait_ms, r->min_acq, r->max_acq, r->errors);
        }
        fclose(csv);
        printf("\nCSV: %s; total %.1f s; load average now: %s\n", csv_path, (double)(now_ns() - t_begin) / 1e9,
               loadavg(load, sizeof load));
    }

out:
    if (dir_made) rmdir(dir);
    stop_servers();
    if (fc.c) redisFree(fc.c);
    for (i = 0; i < 12; i++) free(rows[i].samples);
    if (g_stop) { fprintf(stderr, "bench: interrupted\n"); rc = 1; }
    if (rc) fprintf(stderr, "bench: FAILED (see above)\n");
    return rc;
}
