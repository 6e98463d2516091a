/* footprint.c - what one lock cycle costs the client, for `make bench`.
 *
 *   build/footprint PORT [PORT ...]        heap allocations + stack high-water
 *   build/footprint --cycles N PORT        N acquire+release cycles inside
 *                                          fp_cycles() (for callgrind's
 *                                          --toggle-collect=fp_cycles)
 *
 * Prints "fp <key> <value>" lines (bench/footprint.sh and bench.c read them).
 * Needs running redis-servers on 127.0.0.1 (bench.c passes its own; five
 * ports give the Redlock-5 rows).
 *
 * Heap allocations: this program defines malloc/calloc/realloc/free (and the
 * aligned variants) itself, forwarding to glibc's __libc_* entry points, so
 * it sees every allocation of the whole process - rlock, the POSIX adapter
 * and libc alike - without LD_PRELOAD. Counting is switched on only around
 * the measured cycles: connecting, client/lock init and one warm-up cycle
 * (the lazy subscriber connect, the first SUBSCRIBE) are excluded.
 *
 * Stack high-water: the operation runs on a thread whose stack this program
 * supplies, filled with a pattern; afterwards the lowest overwritten byte
 * gives the depth. An empty thread's depth (thread start-up, TLS kept at the
 * top of a user stack by glibc) is reported as the baseline and subtracted. */
#define RLOCK_IMPLEMENTATION
#include "../adapters/rlock_posix.h" /* first: sets the POSIX feature macros */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- counting allocator */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static volatile unsigned long g_allocs;
static volatile int g_counting;

void *malloc(size_t n) {
    if (g_counting) g_allocs++;
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
    if (g_counting) g_allocs++;
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
    if (g_counting) g_allocs++;
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t align, size_t n);
void *aligned_alloc(size_t align, size_t n) {
    if (g_counting) g_allocs++;
    return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
    void *p;
    if (g_counting) g_allocs++;
    p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

/* ------------------------------------------------------------ clients */
#define MAX_NODES 5
typedef struct fp_client {
    int n;
    rlock_posix_conn pc[MAX_NODES], spc[MAX_NODES];
    rlock_node nodes[MAX_NODES];
    rlock_subscriber subs[MAX_NODES];
    rlock_client cl;
    rlock_lock lk;
} fp_client;

static int g_ports[MAX_NODES], g_n_ports;

static int fp_init(fp_client *c, int n, int pubsub, const char *key, rlock_kind kind) {
    int i;
    memset(c, 0, sizeof *c);
    c->n = n;
    for (i = 0; i < n; i++) {
        if (rlock_posix_init_tcp(&c->pc[i], "127.0.0.1", g_ports[i], 1000) != 0 ||
            rlock_node_init(&c->nodes[i], rlock_posix_transport(&c->pc[i])) != RLOCK_OK) return -1;
        if (pubsub && (rlock_posix_init_tcp(&c->spc[i], "127.0.0.1", g_ports[i], 1000) != 0 ||
                       rlock_subscriber_init(&c->subs[i], rlock_posix_transport(&c->spc[i])) != RLOCK_OK)) return -1;
    }
    if (rlock_client_init(&c->cl, c->nodes, (size_t)n, NULL) != RLOCK_OK) return -1;
    if (pubsub && rlock_client_set_subscribers(&c->cl, c->subs, (size_t)n) != RLOCK_OK) return -1;
    if (rlock_client_connect(&c->cl, 2000) != RLOCK_OK) return -1;
    return rlock_lock_init(&c->lk, &c->cl, key, strlen(key), kind) == RLOCK_OK ? 0 : -1;
}

static void fp_close(fp_client *c) {
    int i;
    rlock_lock_destroy(&c->lk);
    rlock_client_close(&c->cl);
    for (i = 0; i < c->n; i++) {
        rlock_posix_close(&c->pc[i]);
        rlock_posix_close(&c->spc[i]);
    }
}

static int cycle(fp_client *c) {
    if (rlock_acquire(&c->lk, 30000, 0) != RLOCK_OK) return -1;
    return rlock_release(&c->lk) == RLOCK_OK ? 0 : -1;
}

static int reentrant_cycle(fp_client *c) {
    if (rlock_acquire(&c->lk, 30000, 0) != RLOCK_OK || rlock_acquire(&c->lk, 30000, 0) != RLOCK_OK) return -1;
    return rlock_release(&c->lk) == RLOCK_OK && rlock_release(&c->lk) == RLOCK_OK ? 0 : -1;
}

static void sleep_us(long us) {
    struct timespec ts;
    ts.tv_sec = us / 1000000L;
    ts.tv_nsec = (us % 1000000L) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

/* A contended cycle in one process: a holds; b starts a waiting acquire
 * (non-blocking) and is driven until it has tried and is waiting; a
 * releases; b is driven until it holds, then releases. Exercises the wait
 * path: failed attempt, queueing, (first time: SUBSCRIBE), release message
 * or backoff, winning attempt. */
static int wait_cycle(fp_client *a, fp_client *b) {
    rlock_status st;
    int i;
    if (rlock_acquire(&a->lk, 30000, 0) != RLOCK_OK) return -1;
    if (rlock_acquire_begin(&b->lk, 30000, 5000) != RLOCK_WOULD_BLOCK) return -1;
    for (i = 0; i < 30; i++) { /* ~3 ms: b's attempt fails, b waits */
        st = rlock_step(&b->lk);
        if (st != RLOCK_WOULD_BLOCK) return -1;
        sleep_us(100);
    }
    if (rlock_release(&a->lk) != RLOCK_OK) return -1;
    for (i = 0; i < 20000; i++) {
        st = rlock_step(&b->lk);
        if (st == RLOCK_OK) break;
        if (st != RLOCK_WOULD_BLOCK) return -1;
        sleep_us(50);
    }
    if (st != RLOCK_OK) return -1;
    return rlock_release(&b->lk) == RLOCK_OK ? 0 : -1;
}

/* ---------------------------------------------------- allocations */

static int count_allocs(const char *what, int n_nodes, int kind, int mode, int cycles) {
    static fp_client a, b;
    unsigned long allocs;
    int i, bad = 0;
    char key[64];
    if (n_nodes > g_n_ports) { printf("fp skip_%s needs %d servers\n", what, n_nodes); return 0; }
    snprintf(key, sizeof key, "fp:%s", what);
    if (fp_init(&a, n_nodes, 0, key, kind == 2 ? RLOCK_KIND_REENTRANT : RLOCK_KIND_SIMPLE) != 0 ||
        (mode && fp_init(&b, n_nodes, mode == 2, key, RLOCK_KIND_SIMPLE) != 0)) {
        fprintf(stderr, "footprint: %s: setup failed\n", what);
        return -1;
    }
    /* one warm-up cycle: lazy connects, the subscriber's first SUBSCRIBE */
    if ((mode ? wait_cycle(&a, &b) : kind == 2 ? reentrant_cycle(&a) : cycle(&a)) != 0) bad = 1;
    g_allocs = 0;
    g_counting = 1;
    for (i = 0; i < cycles && !bad; i++)
        if ((mode ? wait_cycle(&a, &b) : kind == 2 ? reentrant_cycle(&a) : cycle(&a)) != 0) bad = 1;
    g_counting = 0;
    allocs = g_allocs;
    fp_close(&a);
    if (mode) fp_close(&b);
    if (bad) { fprintf(stderr, "footprint: %s: a cycle failed\n", what); return -1; }
    printf("fp allocs_%s %lu\n", what, allocs);
    printf("fp cycles_%s %d\n", what, cycles);
    return 0;
}

/* ---------------------------------------------------- stack high-water */

#define STACK_SIZE (256 * 1024)
#define PAINT 0xA5

typedef struct stack_job {
    fp_client *c;
    int op; /* 0 nothing, 1 acquire, 2 release */
    rlock_status st;
} stack_job;

static void *stack_thread(void *arg) {
    stack_job *j = (stack_job *)arg;
    if (j->op == 1) j->st = rlock_acquire(&j->c->lk, 30000, 0);
    else if (j->op == 2) j->st = rlock_release(&j->c->lk);
    else j->st = RLOCK_OK;
    return NULL;
}

/* Bytes of stack the thread running job touched; -1 on failure. */
static long stack_used(stack_job *job) {
    static unsigned char *stack;
    pthread_attr_t attr;
    pthread_t t;
    size_t i;
    if (!stack && posix_memalign((void **)&stack, 4096, STACK_SIZE) != 0) return -1;
    memset(stack, PAINT, STACK_SIZE);
    if (pthread_attr_init(&attr) != 0) return -1;
    if (pthread_attr_setstack(&attr, stack, STACK_SIZE) != 0 || pthread_create(&t, &attr, stack_thread, job) != 0) {
        pthread_attr_destroy(&attr);
        return -1;
    }
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    for (i = 0; i < STACK_SIZE && stack[i] == PAINT; i++) { } /* the stack grows down */
    return (long)(STACK_SIZE - i);
}

static int measure_stack(void) {
    static fp_client c1, c5;
    stack_job j;
    long base, acq, rel, acq5 = -1;
    memset(&j, 0, sizeof j);
    if (fp_init(&c1, 1, 0, "fp:stack1", RLOCK_KIND_SIMPLE) != 0 || cycle(&c1) != 0) return -1;
    j.c = &c1;
    j.op = 0;
    base = stack_used(&j);
    j.op = 1;
    acq = stack_used(&j);
    if (j.st != RLOCK_OK) return -1;
    j.op = 2;
    rel = stack_used(&j);
    if (j.st != RLOCK_OK) return -1;
    fp_close(&c1);
    if (g_n_ports >= 5) {
        if (fp_init(&c5, 5, 0, "fp:stack5", RLOCK_KIND_SIMPLE) != 0 || cycle(&c5) != 0) return -1;
        j.c = &c5;
        j.op = 1;
        acq5 = stack_used(&j);
        if (j.st != RLOCK_OK) return -1;
        j.op = 2;
        (void)stack_used(&j);
        fp_close(&c5);
    }
    if (base < 0 || acq < 0 || rel < 0) return -1;
    printf("fp stack_baseline %ld\n", base);
    printf("fp stack_acquire %ld\n", acq - base);
    printf("fp stack_release %ld\n", rel - base);
    if (acq5 >= 0) printf("fp stack_acquire_redlock5 %ld\n", acq5 - base);
    printf("fp sizeof_node %lu\n", (unsigned long)sizeof(rlock_node));
    printf("fp sizeof_subscriber %lu\n", (unsigned long)sizeof(rlock_subscriber));
    printf("fp sizeof_client %lu\n", (unsigned long)sizeof(rlock_client));
    printf("fp sizeof_lock %lu\n", (unsigned long)sizeof(rlock_lock));
    return 0;
}

/* ------------------------------------------------------- callgrind */

/* Not static, never inlined: callgrind's --toggle-collect=fp_cycles counts
 * exactly these cycles. */
int fp_cycles(fp_client *c, int n);
__attribute__((noinline)) int fp_cycles(fp_client *c, int n) {
    int i, bad = 0;
    for (i = 0; i < n; i++) bad |= cycle(c);
    return bad;
}

int main(int argc, char **argv) {
    int i, cycles = 0, rc = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) { cycles = atoi(argv[++i]); continue; }
        if (g_n_ports < MAX_NODES) g_ports[g_n_ports++] = atoi(argv[i]);
    }
    if (!g_n_ports) {
        fprintf(stderr, "usage: footprint [--cycles N] PORT [PORT ...]  (redis-servers on 127.0.0.1)\n");
        return 2;
    }
    if (cycles > 0) {
        static fp_client c;
        if (fp_init(&c, 1, 0, "fp:callgrind", RLOCK_KIND_SIMPLE) != 0 || fp_cycles(&c, 10) != 0) return 1;
        rc = fp_cycles(&c, cycles);
        fp_close(&c);
        printf("fp callgrind_cycles %d\n", cycles);
        return rc ? 1 : 0;
    }
    {   /* the counter sees libc's own allocations too (fopen allocates its FILE) */
        FILE *f;
        g_allocs = 0;
        g_counting = 1;
        f = fopen("/dev/null", "r");
        g_counting = 0;
        if (f) fclose(f);
        printf("fp allocator_selftest %lu\n", g_allocs);
        if (!g_allocs) { fprintf(stderr, "footprint: the counting allocator sees nothing\n"); rc = 1; }
    }
    if (count_allocs("single", 1, 1, 0, 2000) != 0) rc = 1;
    if (count_allocs("reentrant", 1, 2, 0, 1000) != 0) rc = 1;
    if (count_allocs("redlock5", 5, 1, 0, 1000) != 0) rc = 1;
    if (count_allocs("wait_pubsub", 1, 1, 2, 100) != 0) rc = 1;
    if (count_allocs("wait_backoff", 1, 1, 1, 100) != 0) rc = 1;
    if (measure_stack() != 0) { fprintf(stderr, "footprint: stack measurement failed\n"); rc = 1; }
    return rc;
}
