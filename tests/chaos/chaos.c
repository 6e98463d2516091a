/* chaos.c - `make chaos`: a seeded, bounded fault campaign against rlock.
 *
 * Three scenarios (one node, Redlock-3, Redlock-5). In each, 12 clients work
 * on ONE lock key: 8 forked library clients (the blocking API over the POSIX
 * adapter, under ASan+UBSan as `make chaos` builds this file; half wait by
 * pub/sub, one section in 15 is long and renews with rlock_extend) and 4
 * slots that run the rlock command again and again, as
 *     rlock --fence -t 900 -w 3000 ... chaos:key sh -c '"$0" "$@"; true' chaos --worker
 * so the worker that touches the resource is a GRANDCHILD of rlock (the
 * process tree a kill -9 of rlock must take down with it). Everything talks
 * to the servers through tests/proxy.h, one proxy per node.
 *
 * The shared resource is a file updated under flock(2) - the flock only makes
 * each access atomic, it excludes nothing. A critical section reads the
 * counter (one access), works, then writes counter+1 (a second access). The
 * resource is FENCED: an access carrying a fence token lower than the highest
 * it has seen, or equal to it from another grant (another lock token), is
 * rejected - the mitigation README documents for holders that pause past
 * their TTL. Every access is appended to an event log with the monotonic time
 * and the holder's validity end (the library's rlock_validity_ms; for the CLI
 * "until the section ends", cut at the moment a fault hit its rlock). Lines
 * (times in us of CLOCK_MONOTONIC, vend -1 = an rlock run's open validity):
 *   S id kind pid fence t vend counter token   first access accepted
 *   R id kind pid fence t vend maxfence token  first access refused by the fence
 *   W id t vend lost | X id t vend maxfence    write accepted | refused
 *   A id t vend                    section abandoned (extend said LOST)
 *   F t kind target length         a fault (the campaign)
 *   P pid t0 t1                    a holder was SIGSTOPped from t0 to t1
 *   K id call ms | E pid what | D pid fds_before fds_after   slow call,
 *                                  unexpected status, a client's fd count
 *
 * Faults come from a seeded PRNG (splitmix64): holders SIGSTOPped past their
 * TTL then SIGCONTed, kill -9 of library clients and of rlock, node kill -9
 * and restart (appendfsync always; or kept down past the TTL, and on Redlock
 * restarted with its data wiped), node SIGSTOP/SIGCONT, and through the proxy
 * latency spikes, partitions (drop) and connection resets.
 *
 * Checkers, after each scenario:
 *   overlaps     two critical sections that overlap in time while BOTH holders
 *                were within their validity: a violation. Overlaps where one
 *                holder was past its validity are the documented limit (a
 *                holder paused past its TTL); the fence must then have
 *                rejected every stale write (one that came after another
 *                holder's access) - "fence rejected x/y stale writes". An
 *                overlap by a CLI worker that outlived a kill -9 of its rlock
 *                is a violation of rlock's own promise (issue 10, item 2).
 *   lost updates accepted writes minus the final counter.
 *   stuck        a blocking call that overran its bound (client side), or a
 *                client process still running past its deadline (killed).
 *   leftover     keys still in Redis after everyone finished and the longest
 *                TTL ran out (the fence counter, and wait-queue keys that carry
 *                their own expiry, are expected). A key without a TTL is
 *                explained: its fields, its last commands in the node's AOF.
 *   key watch    every 100 ms each node's PTTL of the lock key, straight to
 *                the server: seen without a TTL, even for a while, it counts
 *                as an unexpected status, noted with the node faults before.
 *   fds          open fds of a library client after rlock_client_close vs
 *                before it connected.
 *   and: unexpected statuses from the library or exit codes from rlock, a
 *   valid holder's access rejected by the fence on a single node (tokens must
 *   increase there; on Redlock they need not - documented), processes left.
 *
 * Output: the seed, one line per scenario, a summary line. CHAOS_SEED=<n>
 * replays a run's fault schedule: the same node faults (kind, node, length,
 * gaps) and the same sequence of client faults; which holder a client fault
 * hits, and the clients' own timing, follow the OS;
 * CHAOS_SECONDS=<n> is the total fault time over the three scenarios.
 * Exit 1 on any violation. `chaos --selftest` proves every checker can fail:
 * synthetic event logs, then live runs with deliberately broken clients.
 * Other knobs: CHAOS_RLOCK=<path> (the rlock binary, default build/rlock),
 * CHAOS_KEEP=1 (keep every event log, not only a failed scenario's),
 * CHAOS_ONLY=<scenario name> (run that one alone, with the time and fault
 * schedule it has in the whole run: "Redlock-3" replays that part of a seed),
 * CHAOS_VERBOSE=1 (print each overlapping pair), CHAOS_KIND=fair |
 * reentrant | fair-reentrant (the library clients' lock; default the barging
 * simple lock: `make chaos`; fair: the rlock runs pass --fair; reentrant:
 * the rlock slots run library clients too, a hash key is not the command's)
 * | seed (one of the four, picked by the seed: CI's run; the first line
 * names the kind, replayed with CHAOS_SEED and that CHAOS_KIND),
 * CHAOS_BREAK=nolock |
 * nofence | leak,stuck (the self-test's broken clients; nofence lets stale
 * writes through, so pauses past the TTL turn into lost updates).
 *
 * Modes used internally: --lib (a library client), --worker (the CLI's
 * COMMAND). Loopback only; servers started by tests/harness.h on free ports
 * and stopped by PID, also when the campaign fails. */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#include "harness.h"
#include "proxy.h"

#include <ctype.h>
#include <sys/file.h>
#include <sys/mman.h>

#define KEY "chaos:key"
/* CHAOS_KIND (inherited by the clients): "" the barging simple lock */
static const char *g_kind = "";
#define FENCE_KEY "{chaos:key}:fence"
#define MAX_NODES 5
#define MAX_SLOTS 16
#define LIB_TTL 600           /* library lease, ms */
#define CLI_TTL 900           /* rlock -t */
#define LIB_WAIT 2000         /* rlock_acquire wait */
#define CLI_WAIT 3000         /* rlock -w */
#define CLI_KILL_AFTER 300    /* rlock -k */
#define CALL_SLACK_MS 1500    /* a blocking call may overrun its bound by this much */
#define PROC_SLACK_MS 6000    /* a client process may overrun its deadline by this much */

/* ------------------------------------------------------------------ util */

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}
static long long now_ms(void) { return now_us() / 1000; }

static unsigned long long splitmix(unsigned long long *s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* snprintf that may truncate, on purpose (names and notes are bounded). */
static void fmt(char *out, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    if (vsnprintf(out, cap, f, ap) < 0 && cap) out[0] = 0;
    va_end(ap);
}

/* uniform in [lo, hi] */
static long long rnd(unsigned long long *s, long long lo, long long hi) {
    return lo + (long long)(splitmix(s) % (unsigned long long)(hi - lo + 1));
}

/* ------------------------------------------------- shared state (files) */

/* One per client slot, in DIR/slots, mmapped by the parent and the clients:
 * the parent learns who is inside a critical section (to pause or kill a
 * holder), and tells clients how long they were paused (so a stopped client
 * does not count its pause as a slow call). */
typedef struct slot_shm {
    volatile long long paused_ms;   /* total time the parent kept it SIGSTOPped */
    volatile int in_section;        /* 1 between the resource read and the write */
    volatile int stop;              /* the campaign winds down: finish now */
} slot_shm;

typedef struct res_state {
    long long counter;
    long long maxfence;
    long holder;                      /* pid of the last accepted access */
    char token[RLOCK_TOKEN_LEN + 1];  /* the grant that presented maxfence */
} res_state;

static int g_log = -1, g_res = -1;
static slot_shm *g_slots;
static int g_nofence;   /* break mode: the resource checks no fence */

static void ev(const char *f, ...) {
    char buf[512];
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsnprintf(buf, sizeof buf - 1, f, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* one write() with O_APPEND: lines from many processes never interleave */
    if (write(g_log, buf, (size_t)n) != n) {}
}

static int open_shared(const char *dir) {
    char p[512];
    fmt(p, sizeof p, "%s/events.log", dir);
    g_log = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    fmt(p, sizeof p, "%s/resource", dir);
    g_res = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    fmt(p, sizeof p, "%s/slots", dir);
    {
        int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        void *m;
        if (fd < 0) return -1;
        if (ftruncate(fd, (off_t)(sizeof(slot_shm) * MAX_SLOTS)) != 0) { close(fd); return -1; }
        m = mmap(NULL, sizeof(slot_shm) * MAX_SLOTS, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) return -1;
        g_slots = (slot_shm *)m;
    }
    return g_log >= 0 && g_res >= 0 ? 0 : -1;
}

static void res_load(res_state *st) {
    memset(st, 0, sizeof *st);
    if (pread(g_res, st, sizeof *st, 0) != (ssize_t)sizeof *st) memset(st, 0, sizeof *st);
    st->token[RLOCK_TOKEN_LEN] = 0;
}
static void res_store(const res_state *st) {
    if (pwrite(g_res, st, sizeof *st, 0) != (ssize_t)sizeof *st) ev("# resource write failed: %s", strerror(errno));
}

/* The fence rule: a higher token, or the same grant again. */
static int res_fence_ok(const res_state *st, long long fence, const char *token) {
    if (g_nofence) return 1;
    return fence > st->maxfence || (fence == st->maxfence && strcmp(token, st->token) == 0);
}
static void res_note_fence(res_state *st, long long fence, const char *token) {
    st->holder = (long)getpid();
    if (g_nofence) return;
    st->maxfence = fence;
    fmt(st->token, sizeof st->token, "%s", token);
}

/* Access 1: read the counter. 1 accepted (*counter set), 0 rejected. */
static int res_read(const char *id, char kind, long long fence, const char *token, long long vend_us,
                    long long *counter) {
    res_state st;
    int ok;
    long long t;
    flock(g_res, LOCK_EX);
    res_load(&st);
    t = now_us();
    ok = res_fence_ok(&st, fence, token);
    if (ok) {
        res_note_fence(&st, fence, token);
        res_store(&st);
        *counter = st.counter;
        ev("S %s %c %ld %lld %lld %lld %lld %s", id, kind, (long)getpid(), fence, t, vend_us, st.counter, token);
    } else {
        ev("R %s %c %ld %lld %lld %lld %lld %s", id, kind, (long)getpid(), fence, t, vend_us, st.maxfence, token);
    }
    flock(g_res, LOCK_UN);
    return ok;
}

/* Access 2: write counter_read + 1. 1 accepted, 0 rejected (fenced). */
static int res_write(const char *id, long long fence, const char *token, long long vend_us, long long counter_read) {
    res_state st;
    int ok;
    long long t;
    flock(g_res, LOCK_EX);
    res_load(&st);
    t = now_us();
    ok = res_fence_ok(&st, fence, token);
    if (ok) {
        int lost = st.counter != counter_read;
        res_note_fence(&st, fence, token);
        st.counter = counter_read + 1;
        res_store(&st);
        ev("W %s %lld %lld %d", id, t, vend_us, lost);
    } else {
        ev("X %s %lld %lld %lld", id, t, vend_us, st.maxfence);
    }
    flock(g_res, LOCK_UN);
    return ok;
}

static void sleep_ms(long long ms) { if (ms > 0) rh_sleep_ms((unsigned)ms); }

/* ------------------------------------------------------ library client */

/* A status the blocking API may return under these faults. Anything else
 * (E_STATE, E_PROTOCOL, E_BADARG, ...) is logged as unexpected. */
static int expected_status(rlock_status st) {
    switch (st) {
    case RLOCK_OK: case RLOCK_NOT_ACQUIRED: case RLOCK_TIMEOUT: case RLOCK_LOST: case RLOCK_NOT_HELD:
    case RLOCK_E_IO: case RLOCK_E_QUORUM: case RLOCK_E_REDIS:
        return 1;
    default:
        return 0;
    }
}

/* chaos --lib DIR SLOT ID TTL LIFE_MS PUBSUB BREAK SEED PORT... */
static int lib_main(int argc, char **argv) {
    const char *dir = argv[2], *pid_id = argv[4], *brk = argv[8];
    int slot = atoi(argv[3]), pubsub = atoi(argv[7]), n = argc - 10, i, fds0, fds1, k = 0;
    long long ttl = atoll(argv[5]), life = atoll(argv[6]);
    unsigned long long rs = strtoull(argv[9], NULL, 10);
    int nolock = strstr(brk, "nolock") != NULL, leak = strstr(brk, "leak") != NULL && slot == 0,
        hang = strstr(brk, "stuck") != NULL && slot == 1;
    rlock_posix_conn pc[MAX_NODES], sc[MAX_NODES];
    rlock_node nodes[MAX_NODES];
    rlock_subscriber subs[MAX_NODES];
    rlock_client cl;
    rlock_lock lk;
    rlock_config cfg;
    slot_shm *me;
    long long end;

    if (n < 1 || n > MAX_NODES || open_shared(dir) != 0) return 2;
    g_nofence = nolock || strstr(brk, "nofence") != NULL;
    me = &g_slots[slot];
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();
    rlock_config_init(&cfg);
    cfg.fencing = 1;
    for (i = 0; i < n; i++) {
        int port = atoi(argv[10 + i]);
        rlock_posix_init_tcp(&pc[i], "127.0.0.1", port, 500);
        rlock_node_init(&nodes[i], rlock_posix_transport(&pc[i]));
        rlock_posix_init_tcp(&sc[i], "127.0.0.1", port, 500);
        rlock_subscriber_init(&subs[i], rlock_posix_transport(&sc[i]));
    }
    if (rlock_client_init(&cl, nodes, (size_t)n, &cfg) != RLOCK_OK) { ev("E %ld client_init", (long)getpid()); return 2; }
    if (pubsub && rlock_client_set_subscribers(&cl, subs, (size_t)n) != RLOCK_OK) ev("E %ld set_subscribers", (long)getpid());
    rlock_lock_init(&lk, &cl, KEY, strlen(KEY), strstr(g_kind, "reentrant") ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE);
    if (strstr(g_kind, "fair") && rlock_lock_set_fair(&lk, 1, 0) != RLOCK_OK) ev("E %ld set_fair", (long)getpid());
    if (leak) {   /* break mode: a lease far longer than the campaign, never released, and a leaked fd */
        if (rlock_acquire(&lk, 600000, 5000) == RLOCK_OK) ev("# leak: holding %s for 600 s", KEY);
        if (open("/dev/null", O_RDONLY) < 0) {}
        rlock_client_close(&cl);
        for (i = 0; i < n; i++) { rlock_posix_close(&pc[i]); rlock_posix_close(&sc[i]); }
        ev("D %ld %d %d", (long)getpid(), fds0, rh_count_fds());
        return 0;
    }
    if (hang) { ev("# stuck: slot 1 hangs (break mode)"); for (;;) sleep_ms(1000); }
    end = now_ms() + life;
    while (now_ms() < end && !me->stop) {
        char id[64], token[RLOCK_TOKEN_LEN + 1];
        long long t0 = now_ms(), p0 = me->paused_ms, counter = 0, vend, fence, dt;
        rlock_status st;
        fmt(id, sizeof id, "%s.%d", pid_id, k++);
        if (nolock) {
            st = RLOCK_OK;
        } else {
            st = rlock_acquire(&lk, ttl, LIB_WAIT);
            dt = now_ms() - t0 - (me->paused_ms - p0);
            if (dt > LIB_WAIT + CALL_SLACK_MS) ev("K %s acquire %lld", id, dt);
        }
        if (st != RLOCK_OK) {
            if (!expected_status(st)) ev("E %ld acquire %s", (long)getpid(), rlock_status_str(st));
            sleep_ms(rnd(&rs, 5, 40));
            continue;
        }
        vend = nolock ? LLONG_MAX : now_us() + rlock_validity_ms(&lk) * 1000;
        fence = nolock ? 0 : rlock_fence_token(&lk);
        fmt(token, sizeof token, "%s", nolock ? "-" : rlock_lock_token(&lk));
        me->in_section = 1;
        if (res_read(id, 'L', fence, token, vend, &counter)) {
            int abandoned = 0;
            if (!nolock && rnd(&rs, 0, 14) == 0) {   /* long section, renewed */
                long long until = now_ms() + rnd(&rs, ttl, ttl * 3 / 2);
                while (now_ms() < until && !abandoned) {
                    sleep_ms(ttl / 4);
                    p0 = me->paused_ms;
                    t0 = now_ms();
                    st = rlock_extend(&lk, ttl);
                    dt = now_ms() - t0 - (me->paused_ms - p0);
                    if (dt > CALL_SLACK_MS) ev("K %s extend %lld", id, dt);
                    if (st == RLOCK_OK) {
                        vend = now_us() + rlock_validity_ms(&lk) * 1000;
                    } else {
                        if (!expected_status(st)) ev("E %ld extend %s", (long)getpid(), rlock_status_str(st));
                        /* LOST, or no renewal before the lease runs low: stop
                         * before the write, as a careful holder would */
                        if (st == RLOCK_LOST || rlock_validity_ms(&lk) < ttl / 4) abandoned = 1;
                    }
                }
            } else {
                sleep_ms(rnd(&rs, 1, 10));
            }
            if (abandoned) ev("A %s %lld %lld", id, now_us(), vend);
            else res_write(id, fence, token, vend, counter);
        }
        me->in_section = 0;
        if (!nolock) {
            /* A release with an unknown outcome leaves the handle HELD:
             * retry it until it is settled or the lease has run out. */
            int tries = 0;
            for (;;) {
                p0 = me->paused_ms;
                t0 = now_ms();
                st = rlock_release(&lk);
                dt = now_ms() - t0 - (me->paused_ms - p0);
                if (dt > CALL_SLACK_MS) ev("K %s release %lld", id, dt);
                if (!expected_status(st)) ev("E %ld release %s", (long)getpid(), rlock_status_str(st));
                if (st == RLOCK_OK || st == RLOCK_LOST || st == RLOCK_NOT_HELD || !expected_status(st)) break;
                if (rlock_lock_state(&lk) != RLOCK_STATE_HELD || ++tries > 50) break;
                sleep_ms(20);
            }
        }
        sleep_ms(rnd(&rs, 0, 20));
    }
    rlock_lock_destroy(&lk);
    rlock_client_close(&cl);
    for (i = 0; i < n; i++) { rlock_posix_close(&pc[i]); rlock_posix_close(&sc[i]); }
    fds1 = rh_count_fds();
    ev("D %ld %d %d", (long)getpid(), fds0, fds1);
    return 0;
}

/* ------------------------------------------------------------ CLI worker */

/* The COMMAND rlock runs (through sh): one critical section. Environment:
 * RLOCK_FENCE, RLOCK_TOKEN from rlock; CHAOS_DIR, CHAOS_ID, CHAOS_SLOT,
 * CHAOS_WORK_MS from the campaign. */
static int worker_main(void) {
    const char *dir = getenv("CHAOS_DIR"), *id = getenv("CHAOS_ID"), *fs = getenv("RLOCK_FENCE"),
               *tok = getenv("RLOCK_TOKEN"), *sl = getenv("CHAOS_SLOT"), *wk = getenv("CHAOS_WORK_MS");
    long long counter = 0, fence;
    slot_shm *me;
    if (!dir || !id || !tok || !sl || !wk || open_shared(dir) != 0) return 2;
    g_nofence = getenv("CHAOS_NOFENCE") != NULL;
    if (!fs) { ev("E %ld worker without RLOCK_FENCE", (long)getpid()); return 2; }
    fence = atoll(fs);
    me = &g_slots[atoi(sl)];
    me->in_section = 1;
    if (res_read(id, 'C', fence, tok, -1, &counter)) {
        sleep_ms(atoll(wk));
        res_write(id, fence, tok, -1, counter);
    }
    me->in_section = 0;
    return 0;
}

/* ------------------------------------------------------------- checker */

typedef struct section {
    char id[48];
    char kind;            /* 'L' library, 'C' CLI worker */
    long pid;
    long long fence;
    long long t_read, t_end, vend;   /* us; vend -1: CLI, valid until cut by a fault */
    int rejected_read;   /* R: the fence refused its first access */
    int wrote;           /* 1 W, 2 X (rejected), 3 A (abandoned), 0 none */
    int cut;             /* CLI: 1 its rlock was paused, 2 killed */
    int paused;          /* its process was SIGSTOPped during the section */
} section;

typedef struct results {
    long sections, faults, overlaps, lost, stuck, leftover, fds_leaked;
    long overlaps_paused, overlaps_late, overlaps_orphan;  /* past validity: pause, slow, rlock killed */
    long stale_writes, stale_rejected, rejected_reads, rejected_reads_valid, rejected_reads_backwards;
    long unexpected, cli_runs, cli_unexpected, procs_left, accepted_writes, final_counter;
    long cli_exit[5];     /* rlock runs that exited 0, 3 (conflict, -E 3), 69, 75, were killed */
    long fk[16];          /* faults by kind */
    long long gap_pause_ms, gap_kill_ms;   /* CLI: earliest entry of another holder after its rlock
                                              was paused / killed (-1: none); should be about a lease */
    char notes[1024];
} results;

/* Append to r's notes (cut at their size). */
static void note(results *r, const char *f, ...) {
    size_t used = strlen(r->notes);
    va_list ap;
    va_start(ap, f);
    if (vsnprintf(r->notes + used, sizeof r->notes - used, f, ap) < 0) r->notes[used] = 0;
    va_end(ap);
}

enum { FK_HOLDER_PAUSE, FK_KILL_LIB, FK_KILL_RLOCK, FK_NODE_KILL, FK_NODE_KILL_DELAYED, FK_NODE_PAUSE,
       FK_DELAY, FK_DROP, FK_RESET, FK_COUNT };
static const char *const fk_name[FK_COUNT] = {
    "holder pauses", "library kills", "rlock kills", "node kill+restart", "node kill+delayed restart",
    "node pauses", "latency spikes", "partitions", "resets"
};
static const char *const fk_tag[FK_COUNT] = {
    "holder_pause", "kill_lib", "kill_rlock", "node_kill", "node_kill_delayed", "node_pause",
    "delay", "drop", "reset"
};

static int sec_cmp(const void *a, const void *b) {
    const section *x = (const section *)a, *y = (const section *)b;
    return x->t_read < y->t_read ? -1 : x->t_read > y->t_read;
}

static section *find_section(section *s, long n, const char *id) {
    long i;
    for (i = n - 1; i >= 0; i--) if (strcmp(s[i].id, id) == 0) return &s[i];
    return NULL;
}

/* Protected end of a section: it may touch the resource as a holder until
 * min(its end, its validity end). */
static long long sec_pend(const section *s) {
    long long v = s->vend;
    if (s->kind == 'C' && v < 0) v = LLONG_MAX;
    return s->t_end < v ? s->t_end : v;
}

typedef struct pause_rec { long pid; long long t0, t1; } pause_rec;

/* Read an event log and add its verdicts to r (which may already hold the
 * campaign's own counts). redlock: fence tokens need not increase. */
static void check_log(const char *path, int redlock, long long final_counter, results *r) {
    FILE *f = fopen(path, "r");
    char line[600];
    long cap = 4096, n = 0, np = 0, ncut = 0, i, j;
    section *s = (section *)calloc((size_t)cap, sizeof *s);
    pause_rec pauses[512];
    struct { char id[48]; long long t; int cut; } cuts[64];   /* recent faults on CLI runs */
    if (!f || !s) { note(r, "[cannot read %s] ", path); r->unexpected++; if (f) fclose(f); free(s); return; }
    while (fgets(line, sizeof line, f)) {
        char id[64], kind, tag[48], what[64];
        long pid, a, b;
        long long fence, t, vend, x, t1;
        if (line[0] == 'S' &&
            sscanf(line, "S %63s %c %ld %lld %lld %lld %lld", id, &kind, &pid, &fence, &t, &vend, &x) == 7) {
            section *c;
            if (n == cap) {
                section *g = (section *)realloc(s, sizeof *s * (size_t)cap * 2);
                if (!g) { r->unexpected++; break; }
                s = g;
                cap *= 2;
            }
            c = &s[n++];
            memset(c, 0, sizeof *c);
            fmt(c->id, sizeof c->id, "%s", id);
            c->kind = kind; c->pid = pid; c->fence = fence; c->t_read = c->t_end = t; c->vend = vend;
            for (i = 0; i < ncut && i < 64 && kind == 'C'; i++)   /* its rlock was hit before this read */
                if (strcmp(cuts[i].id, id) == 0) { c->vend = cuts[i].t; c->cut = cuts[i].cut; }
        } else if (line[0] == 'R' &&
                   sscanf(line, "R %63s %c %ld %lld %lld %lld", id, &kind, &pid, &fence, &t, &vend) == 6) {
            int valid = kind == 'C' ? 1 : t < vend;
            r->rejected_reads++;
            r->sections++;
            for (i = 0; i < ncut && i < 64 && kind == 'C'; i++) if (strcmp(cuts[i].id, id) == 0) valid = 0;
            /* a holder within its validity refused: its token is lower than
             * one already presented - tokens went backwards */
            if (valid) r->rejected_reads_valid++;
        } else if ((line[0] == 'W' || line[0] == 'X' || line[0] == 'A') &&
                   sscanf(line + 2, "%63s %lld %lld", id, &t, &vend) == 3) {
            section *c = find_section(s, n, id);
            if (line[0] == 'W') r->accepted_writes++;
            if (!c) continue;
            c->t_end = t;
            if (vend >= 0) c->vend = vend;
            c->wrote = line[0] == 'W' ? 1 : line[0] == 'X' ? 2 : 3;
        } else if (line[0] == 'F' && sscanf(line, "F %lld %47s %63s %lld", &t, tag, what, &t1) >= 3) {
            int k;
            for (k = 0; k < FK_COUNT; k++) if (strcmp(tag, fk_tag[k]) == 0) break;
            if (k < FK_COUNT) { r->faults++; r->fk[k]++; }
            if (k == FK_KILL_RLOCK || k == FK_HOLDER_PAUSE) {
                section *c = find_section(s, n, what);   /* a CLI run's id */
                fmt(cuts[ncut % 64].id, sizeof cuts[0].id, "%s", what);
                cuts[ncut % 64].t = t;
                cuts[ncut % 64].cut = k == FK_KILL_RLOCK ? 2 : 1;
                ncut++;
                if (c && c->kind == 'C' && c->t_end >= c->t_read) {
                    if (c->vend < 0 || t < c->vend) c->vend = t;
                    c->cut = k == FK_KILL_RLOCK ? 2 : 1;
                }
            }
        } else if (line[0] == 'P' && np < 512 && sscanf(line, "P %ld %lld %lld", &pid, &t, &t1) == 3) {
            pauses[np].pid = pid; pauses[np].t0 = t; pauses[np].t1 = t1; np++;
        } else if (line[0] == 'K') {
            r->stuck++;
            note(r, "[%.*s] ",
                     (int)strcspn(line, "\n"), line);
        } else if (line[0] == 'E') {
            r->unexpected++;
            note(r, "[%.*s] ",
                     (int)strcspn(line, "\n"), line);
        } else if (line[0] == 'D' && sscanf(line, "D %ld %ld %ld", &pid, &a, &b) == 3) {
            if (a != b) r->fds_leaked += b - a > 0 ? b - a : 1;
        }
    }
    fclose(f);
    r->sections += n;
    /* A CLI section whose worker wrote nothing may have been cut by a fault
     * logged before its end is known; the F line applies either way. */
    for (i = 0; i < n; i++) {
        long q;
        for (q = 0; q < np; q++)
            if (pauses[q].pid == s[i].pid && pauses[q].t0 < s[i].t_end && pauses[q].t1 > s[i].t_read) s[i].paused = 1;
    }
    qsort(s, (size_t)n, sizeof *s, sec_cmp);
    for (i = 0; i < n; i++) {
        long long pend_i = sec_pend(&s[i]);
        /* overlaps: every later section that read before this one ended */
        for (j = i + 1; j < n && s[j].t_read < s[i].t_end; j++) {
            long long pend_j = sec_pend(&s[j]);
            const section *late;
            if (s[j].t_read < pend_i && s[j].t_read < pend_j) { r->overlaps++; continue; }
            late = s[j].t_read >= pend_i ? &s[i] : &s[j];
            if (getenv("CHAOS_VERBOSE"))
                fprintf(stderr, "overlap %s [%lld..%lld v%lld w%d cut%d p%d] %s [%lld..%lld v%lld w%d cut%d p%d]\n",
                        s[i].id, s[i].t_read, s[i].t_end, s[i].vend, s[i].wrote, s[i].cut, s[i].paused,
                        s[j].id, s[j].t_read, s[j].t_end, s[j].vend, s[j].wrote, s[j].cut, s[j].paused);
            if (late == &s[i] && late->cut) {   /* how soon after the fault the next holder came in */
                long long gap = (s[j].t_read - late->vend) / 1000, *m = late->cut == 2 ? &r->gap_kill_ms : &r->gap_pause_ms;
                if (*m < 0 || gap < *m) *m = gap;
            }
            if (late->cut == 2) r->overlaps_orphan++;
            else if (late->cut == 1 || late->paused) r->overlaps_paused++;
            else r->overlaps_late++;
        }
        /* stale write: another holder's accepted read came between this
         * section's read and its write attempt - the fence must refuse it */
        if (s[i].wrote == 1 || s[i].wrote == 2) {
            int stale = 0;
            for (j = i + 1; j < n && s[j].t_read < s[i].t_end; j++) stale = 1;
            if (stale) { r->stale_writes++; if (s[i].wrote == 2) r->stale_rejected++; }
        }
    }
    r->final_counter = final_counter;
    r->lost = r->accepted_writes - final_counter;
    if (redlock) {   /* Redlock tokens need not increase: documented, not a violation */
        r->rejected_reads_backwards = r->rejected_reads_valid;
        r->rejected_reads_valid = 0;
    }
    free(s);
}

/* A violation anywhere in r? */
static int violated(const results *r) {
    return r->overlaps || r->lost || r->stuck || r->leftover || r->fds_leaked || r->overlaps_orphan ||
           r->stale_writes != r->stale_rejected || r->unexpected || r->cli_unexpected || r->procs_left ||
           r->rejected_reads_valid;
}

/* -------------------------------------------------------------- campaign */

enum { K_LIB = 1, K_CLI = 2 };

typedef struct client {
    pid_t pid;            /* 0: free */
    int kind;
    int seq;
    char id[32];
    long long start, deadline;   /* ms */
    long long work_ms;           /* CLI: how long its worker works */
    long long respawn_at;        /* free slot: start the next client then (0: not scheduled) */
} client;

typedef struct scenario {
    const char *name;
    int nodes, n_lib, n_cli;
} scenario;

typedef struct campaign {
    const scenario *sc;
    int idx;
    char dir[256];
    rh_server srv[MAX_NODES];
    rp_proxy px[MAX_NODES];
    int up[MAX_NODES];         /* server running */
    client cl[MAX_SLOTS];
    int n_clients;
    unsigned long long rs;     /* node fault PRNG */
    unsigned long long rs_cl;  /* client parameters PRNG */
    const char *brk;
    char self[PATH_MAX], rlock_bin[PATH_MAX];
    /* one node fault and one client fault at a time */
    int nf_kind, nf_node; long long nf_until;
    /* the key watch: each node's PTTL of KEY, straight to the server, every
     * 100 ms; when the key is first seen without a TTL, what faults came before */
    redisContext *watch[MAX_NODES];
    int watch_seen[MAX_NODES];
    long long t_start, t_watch, nf_hist_t[4]; int nf_hist_kind[4], nf_hist_node[4], nf_hist_n;
    int cf_active, cf_slot; pid_t cf_pid; long long cf_t0, cf_until;
    unsigned long long rs_cf;  /* client fault PRNG */
    int cf_pending, cf_kind; long long cf_len_pm, cf_since; unsigned long long cf_pick;
} campaign;

static volatile sig_atomic_t g_interrupted;
static int g_selftest;     /* live self-test runs: their violations are the point, keep no logs */
static campaign *g_cur;   /* for the emergency cleanup */

static const char *const persist_args[] = { "--appendonly", "yes", "--appendfsync", "always", NULL };

static void on_signal(int sig) { (void)sig; g_interrupted = 1; }

static void fault_log(const char *tag, const char *target, long long extra) {
    ev("F %lld %s %s %lld", now_us(), tag, target, extra);
}

static void spawn_lib(campaign *c, int slot) {
    client *k = &c->cl[slot];
    char sslot[8], ttl[16], life[16], pubsub[4], seed[24], ports[MAX_NODES][8];
    const char *argv[32];
    int a = 0, i;
    pid_t pid;
    k->seq++;
    fmt(k->id, sizeof k->id, "L%d.%d.%d", c->idx, slot, k->seq);
    fmt(sslot, sizeof sslot, "%d", slot);
    fmt(ttl, sizeof ttl, "%d", LIB_TTL);
    fmt(life, sizeof life, "%lld", rnd(&c->rs_cl, 2000, 6000));
    fmt(pubsub, sizeof pubsub, "%d", slot % 2);
    fmt(seed, sizeof seed, "%llu", splitmix(&c->rs_cl));
    argv[a++] = c->self; argv[a++] = "--lib"; argv[a++] = c->dir; argv[a++] = sslot; argv[a++] = k->id;
    argv[a++] = ttl; argv[a++] = life; argv[a++] = pubsub; argv[a++] = c->brk; argv[a++] = seed;
    for (i = 0; i < c->sc->nodes; i++) {
        fmt(ports[i], sizeof ports[i], "%d", c->px[i].port);
        argv[a++] = ports[i];
    }
    argv[a] = NULL;
    pid = rh_fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(c->self, (char *const *)argv);
        _exit(127);
    }
    if (pid < 0) { k->respawn_at = now_ms() + 100; return; }   /* fork failed: try again later */
    k->pid = pid;
    k->kind = K_LIB;
    k->start = now_ms();
    k->deadline = k->start + atoll(life) + LIB_WAIT + LIB_TTL * 3 + PROC_SLACK_MS;
    g_slots[slot].in_section = 0;
}

static void spawn_cli(campaign *c, int slot) {
    client *k = &c->cl[slot];
    if (strstr(g_kind, "reentrant")) { spawn_lib(c, slot); return; } /* (CHAOS_KIND: the key is a hash) */
    char work[16], sslot[8], logp[300], srv[MAX_NODES][32];
    const char *argv[40];
    int a = 0, i;
    /* mostly short sections; one in 12 outlives a lease, so that a kill -9
     * of its rlock leaves work that would run past the TTL */
    long long w = rnd(&c->rs_cl, 0, 11) == 0 ? rnd(&c->rs_cl, 1200, 2500) : rnd(&c->rs_cl, 5, 60);
    pid_t pid;
    k->seq++;
    fmt(k->id, sizeof k->id, "C%d.%d.%d", c->idx, slot, k->seq);
    fmt(work, sizeof work, "%lld", w);
    fmt(sslot, sizeof sslot, "%d", slot);
    fmt(logp, sizeof logp, "%s/cli-%d.log", c->dir, slot);
    argv[a++] = c->rlock_bin; argv[a++] = "--fence"; argv[a++] = "-t"; argv[a++] = "900ms";
    if (strstr(g_kind, "fair")) argv[a++] = "--fair";
    argv[a++] = "-w"; argv[a++] = "3000ms"; argv[a++] = "-k"; argv[a++] = "300ms"; argv[a++] = "-E"; argv[a++] = "3";
    for (i = 0; i < c->sc->nodes; i++) {
        fmt(srv[i], sizeof srv[i], "127.0.0.1:%d", c->px[i].port);
        argv[a++] = "-S"; argv[a++] = srv[i];
    }
    argv[a++] = KEY;
    argv[a++] = "sh"; argv[a++] = "-c"; argv[a++] = "\"$0\" \"$@\"; true";
    argv[a++] = c->self; argv[a++] = "--worker";
    argv[a] = NULL;
    pid = rh_fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY), out = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (in >= 0) { dup2(in, 0); close(in); }
        if (out >= 0) { dup2(out, 1); dup2(out, 2); close(out); }
        setenv("CHAOS_DIR", c->dir, 1);
        setenv("CHAOS_ID", k->id, 1);
        setenv("CHAOS_SLOT", sslot, 1);
        setenv("CHAOS_WORK_MS", work, 1);
        if (strstr(c->brk, "nofence") || strstr(c->brk, "nolock")) setenv("CHAOS_NOFENCE", "1", 1);
        unsetenv("RLOCK_SERVERS");
        execv(c->rlock_bin, (char *const *)argv);
        _exit(127);
    }
    if (pid < 0) { k->respawn_at = now_ms() + 100; return; }
    k->pid = pid;
    k->kind = K_CLI;
    k->work_ms = w;
    k->start = now_ms();
    k->deadline = k->start + 1000 + CLI_WAIT + w + CLI_KILL_AFTER + CLI_TTL + PROC_SLACK_MS;
    g_slots[slot].in_section = 0;
}

/* Undo the client fault in progress (SIGCONT a paused holder). */
static void client_fault_end(campaign *c) {
    client *k;
    long long d;
    if (!c->cf_active) return;
    c->cf_active = 0;
    k = &c->cl[c->cf_slot];
    if (k->pid != c->cf_pid) return;   /* gone meanwhile (killed) */
    /* The pause is counted before the holder runs again: counted after
     * SIGCONT, a call the pause fell into could return first and read its
     * own duration with the pause in it (a false "stuck": CI saw an extend
     * of 1547 ms that was a 1497 ms pause). */
    d = now_ms() - c->cf_t0;
    g_slots[c->cf_slot].paused_ms += d;
    k->deadline += d;
    kill(c->cf_pid, SIGCONT);
    ev("P %ld %lld %lld", (long)c->cf_pid, c->cf_t0 * 1000, now_us());
}

/* The next client fault's parameters come from the client-fault stream as
 * soon as it is due, whether or not someone can be hit right then, so a
 * seed replays the same sequence of faults; only which holder is hit, and
 * exactly when, follows the run's timing. 1 applied, 0 not yet. */
static int client_fault_start(campaign *c) {
    int cand[MAX_SLOTS], nc = 0, i, kind, slot;
    if (!c->cf_pending) {
        long long r = rnd(&c->rs_cf, 0, 99);
        c->cf_kind = r < 50 ? FK_HOLDER_PAUSE : r < 75 ? FK_KILL_LIB : FK_KILL_RLOCK;
        c->cf_len_pm = rnd(&c->rs_cf, 1500, 2500);   /* a pause, in per mille of the TTL */
        c->cf_pick = splitmix(&c->rs_cf);
        c->cf_since = now_ms();
        c->cf_pending = 1;
    }
    kind = c->cf_kind;
    for (i = 0; i < c->n_clients; i++) {
        client *k = &c->cl[i];
        if (k->pid <= 0) continue;
        if (kind == FK_KILL_LIB && k->kind != K_LIB) continue;
        if (kind == FK_KILL_RLOCK && k->kind != K_CLI) continue;
        if (g_slots[i].in_section) cand[nc++] = i;
    }
    if (nc == 0) return 0;   /* nobody holding right now: try again shortly */
    if (kind == FK_KILL_RLOCK) {   /* prefer (for 1.5 s) a worker that would outlive the lease */
        int lg[MAX_SLOTS], nl = 0;
        for (i = 0; i < nc; i++) if (c->cl[cand[i]].work_ms >= 1200) lg[nl++] = cand[i];
        if (nl == 0 && now_ms() - c->cf_since < 1500) return 0;
        if (nl > 0) { memcpy(cand, lg, sizeof(int) * (size_t)nl); nc = nl; }
    }
    slot = cand[c->cf_pick % (unsigned long long)nc];
    c->cf_pending = 0;
    if (kind == FK_HOLDER_PAUSE) {
        long long ttl = c->cl[slot].kind == K_CLI ? CLI_TTL : LIB_TTL;
        c->cf_active = 1;
        c->cf_slot = slot;
        c->cf_pid = c->cl[slot].pid;
        c->cf_t0 = now_ms();
        c->cf_until = c->cf_t0 + ttl * c->cf_len_pm / 1000;
        kill(c->cf_pid, SIGSTOP);
        fault_log(fk_tag[kind], c->cl[slot].id, c->cf_until - c->cf_t0);
    } else {
        kill(c->cl[slot].pid, SIGKILL);
        fault_log(fk_tag[kind], c->cl[slot].id, 0);
    }
    return 1;
}

static void wipe_data(const rh_server *s) {
    char p[600];
    DIR *d;
    struct dirent *e;
    fmt(p, sizeof p, "%s/appendonlydir", s->dir);
    d = opendir(p);
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char q[900];
        if (e->d_name[0] == '.') continue;
        fmt(q, sizeof q, "%s/%s", p, e->d_name);
        unlink(q);
    }
    closedir(d);
}

static int restart_node(campaign *c, int i) {
    if (rh_server_restart(&c->srv[i], persist_args) != 0) {
        fprintf(stderr, "chaos: node %d did not restart on port %d\n", i, c->srv[i].port);
        return -1;
    }
    c->up[i] = 1;
    return 0;
}

static void node_fault_end(campaign *c) {
    int i = c->nf_node;
    if (!c->nf_kind) return;
    switch (c->nf_kind - 1) {
    case FK_NODE_KILL: case FK_NODE_KILL_DELAYED:
        if (c->nf_kind - 1 == FK_NODE_KILL_DELAYED && c->sc->nodes > 1) wipe_data(&c->srv[i]);
        restart_node(c, i);
        break;
    case FK_NODE_PAUSE: rh_server_resume(&c->srv[i]); break;
    default: rp_set_mode(&c->px[i], RP_FORWARD, 0); break;
    }
    c->nf_kind = 0;
}

static void node_fault_start(campaign *c) {
    int kind = FK_NODE_KILL + (int)rnd(&c->rs, 0, FK_RESET - FK_NODE_KILL);
    int i = (int)rnd(&c->rs, 0, c->sc->nodes - 1);
    long long d = 0;
    char tgt[16];
    switch (kind) {
    case FK_NODE_KILL: rh_server_kill9(&c->srv[i]); c->up[i] = 0; d = rnd(&c->rs, 50, 400); break;
    case FK_NODE_KILL_DELAYED:
        rh_server_kill9(&c->srv[i]); c->up[i] = 0; d = CLI_TTL + rnd(&c->rs, 200, 600); break;
    case FK_NODE_PAUSE: rh_server_pause(&c->srv[i]); d = rnd(&c->rs, 200, 1500); break;
    case FK_DELAY: {
        unsigned ms = (unsigned)rnd(&c->rs, 20, 250);
        rp_set_mode(&c->px[i], RP_DELAY, ms); d = rnd(&c->rs, 300, 2000); break;
    }
    case FK_DROP: rp_set_mode(&c->px[i], RP_DROP, 0); d = rnd(&c->rs, 300, 1500); break;
    default: rp_set_mode(&c->px[i], RP_RESET, 0); d = rnd(&c->rs, 50, 300); break;
    }
    fmt(tgt, sizeof tgt, "node%d", i);
    fault_log(fk_tag[kind], tgt, d);
    c->nf_hist_t[c->nf_hist_n % 4] = now_ms();
    c->nf_hist_kind[c->nf_hist_n % 4] = kind;
    c->nf_hist_node[c->nf_hist_n++ % 4] = i;
    c->nf_kind = kind + 1;
    c->nf_node = i;
    c->nf_until = now_ms() + d;
}

/* Child exited: its slot is free. Returns the slot, or -1 (an orphan the
 * subreaper adopted, e.g. a worker whose rlock was killed). */
static int on_exit_status(campaign *c, pid_t pid, int status, results *r) {
    int i;
    for (i = 0; i < c->n_clients; i++) {
        client *k = &c->cl[i];
        if (k->pid != pid) continue;
        if (c->cf_active && c->cf_slot == i) { c->cf_active = 0; }
        k->pid = 0;
        g_slots[i].in_section = 0;
        if (k->kind == K_CLI) {
            int ok;
            r->cli_runs++;
            ok = (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3 ||
                                        WEXITSTATUS(status) == 69 || WEXITSTATUS(status) == 75)) ||
                 (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            if (WIFSIGNALED(status)) r->cli_exit[4]++;
            else if (WIFEXITED(status))
                switch (WEXITSTATUS(status)) {
                case 0: r->cli_exit[0]++; break;
                case 3: r->cli_exit[1]++; break;
                case 69: r->cli_exit[2]++; break;
                case 75: r->cli_exit[3]++; break;
                default: break;
                }
            if (!ok) {
                char p[300], buf[300] = "";
                FILE *f;
                r->cli_unexpected++;
                fmt(p, sizeof p, "%s/cli-%d.log", c->dir, i);
                if ((f = fopen(p, "r")) != NULL) { size_t n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f); }
                buf[strcspn(buf, "\n")] = 0;
                note(r, "[rlock %s exit 0x%x: %s] ", k->id, (unsigned)status, buf);
            }
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                   !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
            r->unexpected++;
            note(r, "[library client %s exit 0x%x] ", k->id, (unsigned)status);
        }
        return i;
    }
    return -1;
}

static int is_server_pid(const campaign *c, pid_t pid) {
    int i;
    for (i = 0; i < c->sc->nodes; i++) if (c->srv[i].pid == pid) return i;
    return -1;
}

/* Reap every exited child; respawn freed slots while spawning. */
static void reap_all(campaign *c, int spawning, results *r) {
    for (;;) {
        int status, slot, si;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        if ((si = is_server_pid(c, pid)) >= 0) {   /* a server died on its own */
            c->srv[si].pid = -1;
            c->up[si] = 0;
            r->unexpected++;
            note(r, "[node %d died] ", si);
            continue;
        }
        slot = on_exit_status(c, pid, status, r);
        if (slot >= 0 && spawning) c->cl[slot].respawn_at = now_ms() + rnd(&c->rs_cl, 10, 150);
    }
}

static void respawn_due(campaign *c) {
    int i;
    long long t = now_ms();
    for (i = 0; i < c->n_clients; i++) {
        client *k = &c->cl[i];
        if (k->pid > 0 || !k->respawn_at || t < k->respawn_at) continue;
        k->respawn_at = 0;
        if (i < c->sc->n_lib) spawn_lib(c, i); else spawn_cli(c, i);
    }
}

/* Processes whose parent is us, other than the servers: pids into out. */
static int list_children(const campaign *c, pid_t *out, int cap) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    long me = (long)getpid();
    if (!d) return 0;
    while ((e = readdir(d)) != NULL && n < cap) {
        char path[300], buf[512], *p, st;
        FILE *f;
        long ppid;
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        fmt(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        if (!fgets(buf, sizeof buf, f)) { fclose(f); continue; }
        fclose(f);
        p = strrchr(buf, ')');
        if (p && sscanf(p + 1, " %c %ld", &st, &ppid) == 2 && ppid == me && st != 'Z' &&
            is_server_pid(c, (pid_t)atol(e->d_name)) < 0)
            out[n++] = (pid_t)atol(e->d_name);
    }
    closedir(d);
    return n;
}

/* A key with no expiry is never rlock's doing: print what node i holds in
 * it and the last commands on it in the node's AOF (its history since the
 * last wipe), so that a CI log alone shows how it came about. */
static void explain_key(campaign *c, int i, redisContext *ctx, const char *name) {
    enum { RING = 24, LINE = 200 };
    static char ring[RING][LINE];
    redisReply *t = (redisReply *)redisCommand(ctx, "TYPE %s", name), *h;
    char p[600], q[900];
    DIR *d;
    struct dirent *e;
    long n = 0, k;
    printf("  node %d %s: type %s", i, name, t && t->type == REDIS_REPLY_STATUS ? t->str : "?");
    if (t) freeReplyObject(t);
    h = (redisReply *)redisCommand(ctx, "HGETALL %s", name);
    if (h && h->type == REDIS_REPLY_ARRAY)
        for (k = 0; k + 1 < (long)h->elements && k < 16; k += 2) {
            const redisReply *f = h->element[k];
            size_t j;
            printf(" [");
            for (j = 0; j < f->len; j++) printf(isprint((unsigned char)f->str[j]) ? "%c" : "\\x%02x", (unsigned char)f->str[j]);
            printf("]=%s", h->element[k + 1]->str);
        }
    if (h) freeReplyObject(h);
    printf("\n");
    fmt(p, sizeof p, "%s/appendonlydir", c->srv[i].dir);
    if (!(d = opendir(p))) return;
    while ((e = readdir(d)) != NULL) {  /* the incr files: RESP arrays, one command each */
        FILE *f;
        char ln[512];
        if (!strstr(e->d_name, ".incr.aof")) continue;
        fmt(q, sizeof q, "%s/%s", p, e->d_name);
        if (!(f = fopen(q, "r"))) continue;
        while (fgets(ln, sizeof ln, f)) {
            char cmd[LINE] = "", arg[512];
            int argc = ln[0] == '*' ? atoi(ln + 1) : 0, a, on_key = 0;
            for (a = 0; a < argc && fgets(ln, sizeof ln, f) && ln[0] == '$'; a++) {
                size_t al = (size_t)atol(ln + 1), j, cl = strlen(cmd);
                if (al + 2 > sizeof arg || fread(arg, 1, al + 2, f) != al + 2) break;
                if (al == strlen(name) && memcmp(arg, name, al) == 0) on_key = 1;
                if (a && cl + 2 < LINE) cmd[cl++] = ' ';
                for (j = 0; j < al && cl + 1 < LINE; j++) /* (a NUL, in a record field, as '.') */
                    cmd[cl++] = isprint((unsigned char)arg[j]) ? arg[j] : '.';
                cmd[cl] = 0;
            }
            if (on_key || strcmp(cmd, "MULTI") == 0 || strcmp(cmd, "EXEC") == 0)
                fmt(ring[n++ % RING], LINE, "%s", cmd);
        }
        fclose(f);
    }
    closedir(d);
    printf("  node %d AOF, the last commands on %s:", i, name);
    for (k = n > RING ? n - RING : 0; k < n; k++) printf(" | %s", ring[k % RING]);
    printf("\n");
    {   /* and what the server said of its AOF (loads, truncations, reverted transactions) */
        FILE *f = fopen(c->srv[i].logfile, "r");
        char ln[LINE];
        n = 0;
        while (f && fgets(ln, sizeof ln, f))
            if (strstr(ln, "AOF") || strstr(ln, "MULTI") || strstr(ln, "runcat") || strstr(ln, "# "))
                fmt(ring[n++ % RING], LINE, "%.*s", (int)strcspn(ln, "\n"), ln);
        if (f) fclose(f);
        for (k = n > RING ? n - RING : 0; k < n; k++) printf("  node %d log: %s\n", i, ring[k % RING]);
    }
}

/* Keys left on node i, beyond the fence counter and wait-queue keys that
 * carry their own expiry. Names go into r->notes. */
static long leftover_keys(campaign *c, int i, results *r) {
    redisContext *ctx = rh_connect(&c->srv[i]);
    redisReply *rep;
    long n = 0;
    size_t k;
    if (!ctx) { r->unexpected++; return 0; }
    rep = (redisReply *)redisCommand(ctx, "KEYS *");
    if (rep && rep->type == REDIS_REPLY_ARRAY) {
        for (k = 0; k < rep->elements; k++) {
            const char *name = rep->element[k]->str;
            redisReply *t;
            long long pttl = -3;
            if (strcmp(name, FENCE_KEY) == 0) continue;
            t = (redisReply *)redisCommand(ctx, "PTTL %s", name);
            if (t && t->type == REDIS_REPLY_INTEGER) pttl = t->integer;
            if (t) freeReplyObject(t);
            if (strstr(name, ":waiters") || strstr(name, ":deadlines")) { if (pttl > 0) continue; }
            n++;
            note(r, "[node %d keeps %s, pttl %lld] ", i, name, pttl);
            if (pttl == -1) explain_key(c, i, ctx, name);
        }
    } else {
        r->unexpected++;
    }
    if (rep) freeReplyObject(rep);
    redisFree(ctx);
    return n;
}

/* One turn of the key watch (see campaign.watch). Not while a node is down
 * or paused: its answer would wait. */
static void watch_keys(campaign *c, results *r) {
    int i, k;
    for (i = 0; i < c->sc->nodes; i++) {
        redisReply *rep;
        if (!c->up[i] || c->watch_seen[i] || (c->nf_kind - 1 == FK_NODE_PAUSE && c->nf_node == i)) continue;
        if (!c->watch[i] && !(c->watch[i] = rh_connect_port(c->srv[i].port, 50))) continue;
        rep = (redisReply *)redisCommand(c->watch[i], "PTTL %s", KEY);
        if (!rep) { redisFree(c->watch[i]); c->watch[i] = NULL; continue; }
        if (rep->type == REDIS_REPLY_INTEGER && rep->integer == -1) {
            c->watch_seen[i] = 1;
            r->unexpected++; /* (a lock key without a TTL is never rlock's: a violation, if only for a while) */
            note(r, "[node %d: %s first seen without a TTL %.1f s into the scenario; the node faults before:", i, KEY,
                (double)(now_ms() - c->t_start) / 1000);
            for (k = c->nf_hist_n > 4 ? c->nf_hist_n - 4 : 0; k < c->nf_hist_n; k++)
                note(r, " %s node%d at %.1f s",
                    fk_tag[c->nf_hist_kind[k % 4]], c->nf_hist_node[k % 4],
                    (double)(c->nf_hist_t[k % 4] - c->t_start) / 1000);
            note(r, "] ");
        }
        freeReplyObject(rep);
    }
}

static void stop_infra(campaign *c) {
    int i;
    for (i = 0; i < MAX_NODES; i++) {
        if (c->watch[i]) redisFree(c->watch[i]);
        c->watch[i] = NULL;
        rp_stop(&c->px[i]);
        if (c->srv[i].pid > 0 || c->srv[i].dir[0]) rh_server_stop(&c->srv[i]);
    }
}

static void emergency_cleanup(void) {
    if (g_cur) {
        int i;
        for (i = 0; i < g_cur->n_clients; i++)
            if (g_cur->cl[i].pid > 0) { kill(g_cur->cl[i].pid, SIGCONT); kill(g_cur->cl[i].pid, SIGKILL); }
        stop_infra(g_cur);
        g_cur = NULL;
    }
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char p[600];
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        fmt(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Run one scenario for `ms` of faults. 0 done (r filled), -1 setup failed. */
static int run_scenario(const scenario *sc, int idx, unsigned long long seed, long long ms, const char *brk,
                        int faults_on, results *r) {
    static campaign C;
    campaign *c = &C;
    const char *tmp = getenv("TMPDIR");
    char p[600];
    int i, keep;
    long long t_end, next_nf, next_cf, t;
    res_state st;

    memset(c, 0, sizeof *c);
    memset(r, 0, sizeof *r);
    r->gap_pause_ms = r->gap_kill_ms = -1;
    for (i = 0; i < MAX_NODES; i++) { c->srv[i].pid = -1; c->px[i].listen_fd = -1; }
    c->sc = sc;
    c->idx = idx;
    c->brk = brk;
    c->rs = seed ^ (0x1000193ull * (unsigned long long)(idx + 1));
    c->rs_cl = c->rs ^ 0xC0FFEEull;
    c->rs_cf = c->rs ^ 0xFA17ull;
    splitmix(&c->rs);
    c->n_clients = sc->n_lib + sc->n_cli;
    if (readlink("/proc/self/exe", c->self, sizeof c->self - 1) <= 0) return -1;
    fmt(c->rlock_bin, sizeof c->rlock_bin, "%s", getenv("CHAOS_RLOCK") ? getenv("CHAOS_RLOCK") : "build/rlock");
    if (access(c->rlock_bin, X_OK) != 0) { fprintf(stderr, "chaos: %s not built\n", c->rlock_bin); return -1; }
    if (c->rlock_bin[0] != '/') {   /* workers run with another cwd? keep it absolute */
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) { fmt(p, sizeof p, "%s/%s", cwd, c->rlock_bin); fmt(c->rlock_bin, sizeof c->rlock_bin, "%s", p); }
    }
    if (!tmp || !*tmp || strlen(tmp) > 100) tmp = "/tmp";
    fmt(c->dir, sizeof c->dir, "%s/rlock-chaos-XXXXXX", tmp);
    if (!mkdtemp(c->dir)) { perror("chaos: mkdtemp"); return -1; }
    if (open_shared(c->dir) != 0) { perror("chaos: shared files"); return -1; }
    memset(&st, 0, sizeof st);
    res_store(&st);
    memset((void *)g_slots, 0, sizeof(slot_shm) * MAX_SLOTS);
    g_cur = c;
    for (i = 0; i < sc->nodes; i++) {
        if (rh_server_start(&c->srv[i], persist_args) != 0 || rp_start(&c->px[i], c->srv[i].port) != 0) {
            fprintf(stderr, "chaos: cannot start node %d\n", i);
            stop_infra(c);
            g_cur = NULL;
            return -1;
        }
        c->up[i] = 1;
    }
    for (i = 0; i < c->n_clients; i++) { if (i < sc->n_lib) spawn_lib(c, i); else spawn_cli(c, i); }

    t = now_ms();
    t_end = t + ms;
    next_nf = t + rnd(&c->rs, 500, 1500);
    next_cf = t + rnd(&c->rs_cf, 300, 1200);
    c->t_start = t;
    while (!g_interrupted && (t = now_ms()) < t_end) {
        if (t / 100 != c->t_watch) { c->t_watch = t / 100; watch_keys(c, r); }
        reap_all(c, 1, r);
        respawn_due(c);
        if (c->nf_kind && t >= c->nf_until) { node_fault_end(c); next_nf = t + rnd(&c->rs, 500, 2500); }
        if (c->cf_active && t >= c->cf_until) { client_fault_end(c); next_cf = t + rnd(&c->rs_cf, 500, 2500); }
        if (faults_on && !c->nf_kind && t >= next_nf) node_fault_start(c);
        if (faults_on && !c->cf_active && t >= next_cf) {
            int hit = client_fault_start(c);
            /* a pause ends (above) before the next gap; after a kill the gap
             * starts now; nobody to hit: try again soon */
            if (!c->cf_active) next_cf = t + (hit ? rnd(&c->rs_cf, 500, 2500) : 50);
        }
        for (i = 0; i < c->n_clients; i++) {   /* stuck: past the deadline */
            client *k = &c->cl[i];
            if (k->pid > 0 && t > k->deadline) {
                r->stuck++;
                note(r, "[%s pid %ld still running %lld ms after its deadline: killed] ", k->id, (long)k->pid,
                         t - k->deadline + PROC_SLACK_MS);
                kill(k->pid, SIGCONT);
                kill(k->pid, SIGKILL);
                k->deadline = LLONG_MAX;
            }
        }
        rh_sleep_ms(5);
    }
    /* wind down: faults off, library clients finish their section and exit,
     * rlock runs end by themselves */
    for (i = 0; i < c->n_clients; i++) g_slots[i].stop = 1;
    client_fault_end(c);
    node_fault_end(c);
    for (i = 0; i < sc->nodes; i++) if (!c->up[i]) restart_node(c, i);
    for (;;) {
        int left = 0;
        t = now_ms();
        reap_all(c, 0, r);
        for (i = 0; i < c->n_clients; i++) {
            client *k = &c->cl[i];
            if (k->pid <= 0) continue;
            left++;
            if (t > k->deadline || g_interrupted) {
                if (!g_interrupted) {
                    r->stuck++;
                    note(r, "[%s pid %ld still running at its deadline: killed] ", k->id, (long)k->pid);
                }
                kill(k->pid, SIGCONT);
                kill(k->pid, SIGKILL);
                k->deadline = LLONG_MAX;
            }
        }
        if (!left) break;
        rh_sleep_ms(10);
    }
    /* every lease runs out, then nothing may be left: keys, processes */
    rh_sleep_ms(CLI_TTL + 400);
    reap_all(c, 0, r);
    {
        pid_t kids[64];
        int nk = list_children(c, kids, 64);
        for (i = 0; i < nk; i++) {
            r->procs_left++;
            note(r, "[pid %ld still running after the campaign: killed] ", (long)kids[i]);
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
    }
    for (i = 0; i < sc->nodes; i++) r->leftover += leftover_keys(c, i, r);
    res_load(&st);
    fmt(p, sizeof p, "%s/events.log", c->dir);
    check_log(p, sc->nodes > 1, st.counter, r);   /* adds to the run-time counts in r */
    stop_infra(c);
    g_cur = NULL;
    munmap((void *)g_slots, sizeof(slot_shm) * MAX_SLOTS);
    close(g_log); close(g_res);
    g_log = g_res = -1;
    keep = (violated(r) && !g_selftest) || getenv("CHAOS_KEEP");
    if (keep) {
        note(r, "[event log kept: %s]", p);
    } else {
        fmt(p, sizeof p, "%s", c->dir);
        remove_tree(p);
    }
    return 0;
}

static void print_scenario(const char *name, int nodes, const results *r, long long secs) {
    int k, first = 1;
    printf("%s: %ld critical sections, %ld faults (", name, r->sections, r->faults);
    for (k = 0; k < FK_COUNT; k++) if (r->fk[k]) { printf("%s%ld %s", first ? "" : ", ", r->fk[k], fk_name[k]); first = 0; }
    printf("), %ld overlaps, %ld lost updates, %ld stuck, %ld leftover keys, %ld fds leaked",
           r->overlaps, r->lost, r->stuck, r->leftover, r->fds_leaked);
    printf("; %ld accepted writes, counter %ld; %ld rlock runs (exit 0: %ld, conflict: %ld, 69: %ld, 75: %ld, "
           "killed: %ld)", r->accepted_writes, r->final_counter, r->cli_runs, r->cli_exit[0], r->cli_exit[1],
           r->cli_exit[2], r->cli_exit[3], r->cli_exit[4]);
    printf("; fence rejected %ld/%ld stale writes", r->stale_rejected, r->stale_writes);
    if (r->overlaps_paused)
        printf("; %ld overlaps after a holder paused past its TTL: documented limit", r->overlaps_paused);
    if (r->gap_pause_ms >= 0)
        printf(" (after a paused rlock the next holder came in %lld ms later at the earliest; lease %d ms)",
               r->gap_pause_ms, CLI_TTL);
    if (r->overlaps_late)
        printf("; %ld overlaps after a holder was delayed past its validity without an injected pause (the OS; same documented limit)",
               r->overlaps_late);
    if (r->overlaps_orphan)
        printf("; VIOLATION %ld overlaps by a COMMAND that outlived its kill -9'd rlock (issue 10 item 2; the next "
               "holder came in %lld ms after the kill at the earliest, lease %d ms)", r->overlaps_orphan, r->gap_kill_ms, CLI_TTL);
    if (r->rejected_reads)
        printf("; fence refused %ld first accesses: %ld by holders past their validity", r->rejected_reads,
               r->rejected_reads - r->rejected_reads_valid - r->rejected_reads_backwards);
    if (r->rejected_reads_backwards)
        printf(", %ld by valid holders whose Redlock token was lower than an earlier grant's (documented: "
               "Redlock fence tokens are not monotonic)", r->rejected_reads_backwards);
    if (r->rejected_reads_valid)
        printf(", VIOLATION %ld by valid holders on one node (a token went backwards)", r->rejected_reads_valid);
    if (r->unexpected) printf("; %ld unexpected statuses", r->unexpected);
    if (r->cli_unexpected) printf("; %ld rlock runs with an unexpected exit status", r->cli_unexpected);
    if (r->procs_left) printf("; %ld processes left behind", r->procs_left);
    printf(" [%d node%s, %llds]\n", nodes, nodes > 1 ? "s" : "", secs);
    if (r->notes[0]) printf("  notes: %s\n", r->notes);
}

static void add_results(results *t, const results *r) {
    int k;
    t->sections += r->sections; t->faults += r->faults; t->overlaps += r->overlaps; t->lost += r->lost;
    t->stuck += r->stuck; t->leftover += r->leftover; t->fds_leaked += r->fds_leaked;
    t->overlaps_paused += r->overlaps_paused; t->overlaps_late += r->overlaps_late;
    t->overlaps_orphan += r->overlaps_orphan; t->stale_writes += r->stale_writes;
    t->stale_rejected += r->stale_rejected; t->rejected_reads += r->rejected_reads;
    t->rejected_reads_backwards += r->rejected_reads_backwards;
    t->unexpected += r->unexpected; t->cli_runs += r->cli_runs; t->cli_unexpected += r->cli_unexpected;
    t->procs_left += r->procs_left; t->accepted_writes += r->accepted_writes;
    for (k = 0; k < FK_COUNT; k++) t->fk[k] += r->fk[k];
}

static const scenario g_scenarios[] = {
    { "single node", 1, 8, 4 },
    { "Redlock-3", 3, 8, 4 },
    { "Redlock-5", 5, 8, 4 },
};

static int campaign_main(void) {
    const char *ss = getenv("CHAOS_SECONDS"), *sd = getenv("CHAOS_SEED"), *brk = getenv("CHAOS_BREAK"),
               *only = getenv("CHAOS_ONLY");
    long long secs = ss && *ss ? atoll(ss) : 105;
    unsigned long long seed;
    results tot, r;
    long long t0 = now_ms();
    int i, bad = 0, ns = (int)(sizeof g_scenarios / sizeof g_scenarios[0]);
    if (secs < 3) secs = 3;
    static const char *const kinds[] = {"", "fair", "reentrant", "fair-reentrant"};
    int by_seed = strcmp(g_kind, "seed") == 0;
    if (*g_kind && !by_seed && strcmp(g_kind, "fair") && strcmp(g_kind, "reentrant") && strcmp(g_kind, "fair-reentrant")) {
        fprintf(stderr, "chaos: CHAOS_KIND=%s: expected fair, reentrant, fair-reentrant or seed\n", g_kind);
        return 2;
    }
    if (only && *only) {
        for (i = 0; i < ns && strcmp(only, g_scenarios[i].name) != 0; i++) {}
        if (i == ns) {
            fprintf(stderr, "chaos: CHAOS_ONLY=%s: expected \"single node\", \"Redlock-3\" or \"Redlock-5\"\n", only);
            return 2;
        }
    }
    if (sd && *sd) seed = strtoull(sd, NULL, 10);
    else {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        seed = (unsigned long long)now_us() ^ ((unsigned long long)getpid() << 32);
        if (fd >= 0) { if (read(fd, &seed, sizeof seed) != (ssize_t)sizeof seed) {} close(fd); }
        seed %= 1000000000000ull;   /* short enough to type */
    }
    if (by_seed) { /* CI: each run one of the kinds, replayed by its seed alone */
        g_kind = kinds[seed % 4];
        setenv("CHAOS_KIND", g_kind, 1); /* (the clients read it) */
    }
    printf("chaos: seed %llu (replay: CHAOS_SEED=%llu), %lld s of faults over %d scenarios%s%s%s%s\n", seed, seed, secs,
           ns, brk ? ", CHAOS_BREAK=" : "", brk ? brk : "", *g_kind ? ", CHAOS_KIND=" : "", g_kind);
    fflush(stdout);
    memset(&tot, 0, sizeof tot);
    for (i = 0; i < ns && !g_interrupted; i++) {
        long long ms = secs * 1000 / ns, ts = now_ms();
        if (only && *only && strcmp(only, g_scenarios[i].name) != 0) continue;
        if (run_scenario(&g_scenarios[i], i, seed, ms, brk ? brk : "", 1, &r) != 0) { bad = 1; break; }
        print_scenario(g_scenarios[i].name, g_scenarios[i].nodes, &r, (now_ms() - ts) / 1000);
        fflush(stdout);
        add_results(&tot, &r);
        if (violated(&r)) bad = 1;
    }
    printf("%ld critical sections, %ld faults, %ld overlaps, %ld lost updates, %ld stuck, %ld leftover keys"
           " (+ %ld fds leaked, fence rejected %ld/%ld stale writes, %ld overlaps past a holder's validity"
           " [documented], %ld by orphaned COMMANDs, %ld unexpected statuses; seed %llu, %lld s)\n",
           tot.sections, tot.faults, tot.overlaps, tot.lost, tot.stuck, tot.leftover, tot.fds_leaked,
           tot.stale_rejected, tot.stale_writes, tot.overlaps_paused + tot.overlaps_late, tot.overlaps_orphan,
           tot.unexpected + tot.cli_unexpected + tot.procs_left, seed, (now_ms() - t0) / 1000);
    if (g_interrupted) { printf("chaos: interrupted\n"); return 1; }
    printf("chaos: %s\n", bad ? "FAILED (a violation above)" : "passed");
    return bad ? 1 : 0;
}


/* --------------------------------------------------------------- selftest */

static int g_st_fail, g_st_ok;

static void st_expect(const char *what, int cond, const results *r) {
    if (cond) { g_st_ok++; printf("selftest: %-58s fired\n", what); return; }
    g_st_fail++;
    printf("selftest: %-58s DID NOT FIRE (sections %ld overlaps %ld paused %ld orphan %ld lost %ld stale %ld/%ld "
           "stuck %ld fds %ld leftover %ld unexpected %ld rejected-valid %ld)\n", what, r->sections, r->overlaps,
           r->overlaps_paused, r->overlaps_orphan, r->lost, r->stale_rejected, r->stale_writes, r->stuck,
           r->fds_leaked, r->leftover, r->unexpected, r->rejected_reads_valid);
}

/* Run the checker on a hand-written event log. */
static void st_log(const char *dir, const char *text, int redlock, long long counter, results *r) {
    char p[300];
    FILE *f;
    fmt(p, sizeof p, "%s/synthetic.log", dir);
    f = fopen(p, "w");
    if (f) { fputs(text, f); fclose(f); }
    memset(r, 0, sizeof *r);
    r->gap_pause_ms = r->gap_kill_ms = -1;
    check_log(p, redlock, counter, r);
    unlink(p);
}

/* Every checker must be able to fail: hand-written logs for each verdict,
 * then live runs with clients broken on purpose. 0 when every one fired. */
static int selftest_main(void) {
    static const scenario live = { "selftest", 1, 8, 4 };
    char dir[128];
    results r;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 100) tmp = "/tmp";
    fmt(dir, sizeof dir, "%s/rlock-chaos-st-XXXXXX", tmp);
    if (!mkdtemp(dir)) { perror("chaos: mkdtemp"); return 2; }
    /* times in us; vend = validity end */
    st_log(dir, "S a L 1 1 1000 900000 0\nS b L 2 2 5000 900000 0\nW a 9000 900000 0\nW b 9500 900000 0\n", 0, 1, &r);
    st_expect("overlap within both holders' validity", r.overlaps == 1 && violated(&r), &r);
    st_expect("lost update (2 accepted writes, counter 1)", r.lost == 1, &r);
    st_expect("stale write accepted (a wrote after b read)", r.stale_writes == 1 && r.stale_rejected == 0, &r);
    st_log(dir, "S a L 1 1 1000 3000 0\nP 1 2000 90000\nS b L 2 2 5000 900000 0\nW b 9000 900000 0\nX a 95000 3000 2\n",
           0, 1, &r);
    st_expect("holder paused past its TTL: documented, fence rejected 1/1",
              r.overlaps == 0 && r.overlaps_paused == 1 && r.stale_writes == 1 && r.stale_rejected == 1 &&
              r.lost == 0 && !violated(&r), &r);
    st_log(dir, "S a L 1 1 1000 3000 0\nS b L 2 2 5000 900000 0\nW b 9000 900000 0\nX a 95000 3000 2\n", 0, 1, &r);
    st_expect("holder late past its validity without a pause: documented", r.overlaps_late == 1 && !violated(&r), &r);
    st_log(dir, "S c C 1 1 1000 -1 0\nF 2000 kill_rlock c 0\nS b L 2 2 5000 900000 0\nW b 9000 900000 0\n"
                "X c 95000 -1 2\n", 0, 1, &r);
    st_expect("COMMAND outlived its kill -9'd rlock", r.overlaps_orphan == 1 && violated(&r), &r);
    st_log(dir, "F 500 kill_rlock c 0\nS c C 1 1 1000 -1 0\nS b L 2 2 5000 900000 0\nW b 9000 900000 0\n"
                "X c 95000 -1 2\n", 0, 1, &r);
    st_expect("... also when the kill came before the worker's first access", r.overlaps_orphan == 1, &r);
    st_log(dir, "S c C 1 1 1000 -1 0\nF 2000 holder_pause c 1500\nS b L 2 2 5000 900000 0\nW b 9000 900000 0\n"
                "X c 95000 -1 2\n", 0, 1, &r);
    st_expect("rlock paused past its TTL: documented", r.overlaps_paused == 1 && !violated(&r), &r);
    st_log(dir, "S a L 1 5 1000 900000 0\nW a 2000 900000 0\nR b L 2 4 3000 900000 5\n", 0, 1, &r);
    st_expect("fence token went backwards for a valid holder (single node)",
              r.rejected_reads_valid == 1 && violated(&r), &r);
    st_log(dir, "S a L 1 5 1000 900000 0\nW a 2000 900000 0\nR b L 2 4 3000 900000 5\n", 1, 1, &r);
    st_expect("the same on Redlock: documented (tokens need not increase)",
              r.rejected_reads == 1 && !violated(&r), &r);
    st_log(dir, "K a.0 acquire 9000\nE 12 acquire RLOCK_E_STATE\nD 12 7 8\n", 0, 0, &r);
    st_expect("stuck call, unexpected status, leaked fd",
              r.stuck == 1 && r.unexpected == 1 && r.fds_leaked == 1 && violated(&r), &r);
    rmdir(dir);

    /* live: clients that skip the lock (and a resource without a fence) */
    g_selftest = 1;
    if (run_scenario(&live, 7, 1, 3000, "nolock", 0, &r) != 0) return 2;
    st_expect("live: clients without the lock -> overlaps", r.overlaps > 0 && violated(&r), &r);
    st_expect("live: clients without the lock -> lost updates", r.lost > 0, &r);
    /* live: a client that leaks an fd and a lease, one that hangs */
    if (run_scenario(&live, 8, 2, 3000, "leak,stuck", 0, &r) != 0) return 2;
    st_expect("live: a leaked fd", r.fds_leaked > 0, &r);
    st_expect("live: a 600 s lease never released -> leftover key", r.leftover > 0, &r);
    st_expect("live: a client that hangs -> stuck", r.stuck > 0, &r);
    printf("chaos selftest: %d checkers fired, %d did not\n", g_st_ok, g_st_fail);
    return g_st_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    struct sigaction sa;
    if (getenv("CHAOS_KIND")) g_kind = getenv("CHAOS_KIND");
    if (argc >= 11 && strcmp(argv[1], "--lib") == 0) return lib_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "--worker") == 0) return worker_main();
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* orphans (a worker whose rlock was killed) become our children: we can
     * see them, reap them and kill any left at the end */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    atexit(emergency_cleanup);
    if (argc >= 2 && strcmp(argv[1], "--selftest") == 0) return selftest_main();
    return campaign_main();
}
