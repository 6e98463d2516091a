/* test_examples.c - runs every program in examples/ against a throwaway
 * redis-server (tests/harness.h: free loopback port, stopped by PID), so that
 * none of them can rot.
 *
 * The event loops (poll, epoll, libuv, libevent): another process (a forked
 * child) holds one of the three keys. The example must acquire the two free
 * keys at once, over one connection (the server sees one client), and keep
 * waiting for the third. The test then kills that connection (CLIENT KILL):
 * the example must reconnect and say which new descriptor it watches (its
 * re-registration). Then the server is stopped (SIGSTOP) for 1.5 s: the
 * example's requests time out and its reconnects go unanswered, and it
 * must sleep meanwhile - under half of that in CPU time, where a loop
 * that busy-polls would use all of it. Only then is the holder told to release; the example
 * must acquire the third key after that release - never before - then
 * release all three, close what it opened and exit 0, leaving no key behind.
 *
 * blocking_transport: takes and releases a lock; against a port with no
 * server it fails with the transport's own error text.
 * basic: the README's quick start and rlock.h's EXAMPLE must be examples/basic.c,
 *   verbatim; it runs, and stops (exit 2) on a port the adapter refuses.
 *
 * This suite's sanitizer build runs the examples' sanitizer builds
 * (build/asan/NAME); its plain build (build/vg/test_examples, run by make
 * test under valgrind) runs build/vg/NAME under valgrind, leak-checked.
 * Run from the repository's root (make test does). */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "harness.h"
#include "check.h"

#if defined(__SANITIZE_ADDRESS__)
#define EX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EX_ASAN 1
#endif
#endif
#ifdef EX_ASAN
#define EX_DIR "build/asan/"
#define EX_SLOW 1
#else
#define EX_DIR "build/vg/"
#define EX_SLOW 4 /* valgrind */
#endif

#ifndef EX_ASAN
static const char *const valgrind_argv[] = {
    "valgrind", "--quiet", "--leak-check=full", "--show-leak-kinds=definite,indirect",
    "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99", NULL
};
#endif

/* ------------------------------------------------------------- helpers */

static void cloexec(int fd) { (void)fcntl(fd, F_SETFD, FD_CLOEXEC); }

/* A running example: its pid and its stdout+stderr, read line by line. */
typedef struct proc {
    pid_t pid;
    int fd;             /* read end of its output; -1 after EOF */
    char out[16384];    /* everything it printed (shown when a check fails) */
    size_t len, used;   /* bytes in out; bytes already returned as lines */
} proc;

/* Start EX_DIR/name with args (NULL-terminated), under valgrind unless
 * this is the sanitizer build. 0 ok, -1 failed. */
static int proc_start(proc *p, const char *name, const char *const *args) {
    const char *argv[32];
    char bin[256];
    int fds[2], n = 0, i;
    memset(p, 0, sizeof *p);
    p->fd = -1;
    snprintf(bin, sizeof bin, EX_DIR "%s", name);
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "%s: not built (make %s)\n", bin, bin);
        return -1;
    }
#ifndef EX_ASAN
    for (i = 0; valgrind_argv[i]; i++) argv[n++] = valgrind_argv[i];
#endif
    argv[n++] = bin;
    for (i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    if (pipe(fds) != 0) return -1;
    cloexec(fds[0]);
    p->pid = rh_fork();
    if (p->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (p->pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[1]);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    p->fd = fds[0];
    return 0;
}

/* The next line it prints, without the newline, by deadline: 1 a line,
 * 0 end of output, -1 not in time. */
static int proc_line(proc *p, char *line, size_t cap, unsigned long long deadline) {
    for (;;) {
        char *nl = memchr(p->out + p->used, '\n', p->len - p->used);
        struct pollfd pf;
        ssize_t r;
        long long left;
        if (nl) {
            size_t n = (size_t)(nl - (p->out + p->used));
            if (n >= cap) n = cap - 1;
            memcpy(line, p->out + p->used, n);
            line[n] = '\0';
            p->used = (size_t)(nl - p->out) + 1;
            return 1;
        }
        if (p->fd < 0) return 0;
        left = (long long)deadline - (long long)rh_now_ms();
        if (left <= 0) return -1;
        pf.fd = p->fd;
        pf.events = POLLIN;
        pf.revents = 0;
        if (poll(&pf, 1, (int)left) <= 0) continue;
        if (p->len == sizeof p->out) p->len = p->used = 0; /* far too much output: keep going */
        r = read(p->fd, p->out + p->len, sizeof p->out - p->len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            close(p->fd);
            p->fd = -1;
            if (p->len > p->used && p->out[p->len - 1] != '\n' && p->len < sizeof p->out)
                p->out[p->len++] = '\n'; /* a last line without a newline */
            continue;
        }
        p->len += (size_t)r;
    }
}

/* Read it to the end (by deadline) and reap it: its wait status, -1 if it
 * had to be killed. */
static int proc_finish(proc *p, unsigned long long deadline) {
    char line[512];
    while (proc_line(p, line, sizeof line, deadline) == 1) { }
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    return rh_wait_child(p->pid, deadline > rh_now_ms() ? (unsigned)(deadline - rh_now_ms()) : 1);
}

static void proc_dump(const proc *p, const char *name) {
    fprintf(stderr, "---- output of %s ----\n%.*s---- end of %s ----\n", name, (int)p->len, p->out, name);
}

static int client_count(const rh_server *s) {
    char buf[16384];
    int n = 0;
    const char *c;
    if (rh_str(s, buf, sizeof buf, "CLIENT LIST") != REDIS_REPLY_STRING) return -1;
    for (c = buf; *c; c++) n += *c == '\n';
    return n;
}

/* ------------------------------------------------- the key holder child */

/* Take key (lease 60 s), close the connection (the lock stays in Redis and
 * the server then sees only the example), say 'h'; on a byte from rfd
 * release, and say 'R' (released: the key still had this holder's token) or
 * 'F'. */
static int holder_child(const rh_server *s, const char *key, int wfd, int rfd) {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    rlock_config cfg;
    char c;
    rlock_status st;
    /* Setup, not under test: a node timeout that a loaded machine keeps
     * (the default, 250 ms for this lease, was outlasted under valgrind at
     * -j 4: this child is the process's first to run an acquire, its code
     * translated then, and one in a few runs failed with exit 11) */
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000u * rh_slow();
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000 * (int)rh_slow()) != 0 ||
        rlock_node_init(&node, rlock_posix_transport(&pc)) != RLOCK_OK ||
        rlock_client_init(&cl, &node, 1, &cfg) != RLOCK_OK ||
        rlock_lock_init(&lk, &cl, key, strlen(key), RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 10;
    if ((st = rlock_acquire(&lk, 60000, 0)) != RLOCK_OK) {
        fprintf(stderr, "holder of %s: acquire: %s\n", key, rlock_status_str(st));
        return 11;
    }
    rlock_client_close(&cl);
    if (write(wfd, "h", 1) != 1) return 12;
    if (rh_read_full(rfd, &c, 1, 60000) != 0) return 13;
    st = rlock_release(&lk);
    if (st != RLOCK_OK) fprintf(stderr, "holder of %s: release: %s\n", key, rlock_status_str(st));
    if (write(wfd, st == RLOCK_OK ? "R" : "F", 1) != 1) return 15;
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    return st == RLOCK_OK ? 0 : 16;
}

/* Bytes the holder has said so far, appended to said (non-blocking). */
static void holder_said(int fd, char *said, size_t cap) {
    size_t n = strlen(said);
    struct pollfd pf;
    pf.fd = fd;
    pf.events = POLLIN;
    while (n + 1 < cap) {
        pf.revents = 0;
        if (poll(&pf, 1, 0) <= 0 || read(fd, said + n, 1) != 1) break;
        said[++n] = '\0';
    }
}

/* ------------------------------------------------------ the event loops */

static long slurp(const char *path, char *buf, size_t cap);

/* CPU time (user + system, ms) process pid has used so far; 0 unknown. */
static unsigned long long proc_cpu_ms(pid_t pid) {
    char path[64], buf[1024], *q;
    unsigned long long ut = 0, st = 0;
    long n, hz = sysconf(_SC_CLK_TCK);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    n = slurp(path, buf, sizeof buf);
    if (n <= 0 || hz <= 0 || !(q = strrchr(buf, ')'))) return 0;
    /* after "pid (comm)": state, then fields 4..13; utime and stime are 14 and 15 */
    if (sscanf(q + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return 0;
    return (ut + st) * 1000u / (unsigned long long)hz;
}

#define PAUSE_MS 1500

static void test_loop(const rh_server *s, const char *name) {
    char key[3][64], port[16], line[512], said[16] = "";
    const char *args[5];
    int h2p[2], p2h[2], i, status, base = -1, during = -1, conns = 0, regen = 0, go = 0, early = 0;
    int acquired[3] = { 0, 0, 0 }, released = 0, killed = 0, summary = 0, paused = 0;
    unsigned long long deadline, killed_at = 0;
    int fails = check_fail_count;
    pid_t holder;
    proc p;
    for (i = 0; i < 3; i++) snprintf(key[i], sizeof key[i], "ex:%s:%c", name, 'a' + i);
    snprintf(port, sizeof port, "%d", s->port);
    /* key[1] is held by another process */
    CHECK(pipe(h2p) == 0 && pipe(p2h) == 0);
    cloexec(h2p[0]);
    cloexec(p2h[1]);
    holder = rh_fork();
    if (holder == 0) {
        close(h2p[0]);
        close(p2h[1]);
        _exit(holder_child(s, key[1], h2p[1], p2h[0]));
    }
    close(h2p[1]);
    close(p2h[0]);
    CHECK_MSG(rh_read_full(h2p[0], said, 1, 5000) == 0 && said[0] == 'h', "%s: the holder did not take %s",
              name, key[1]);
    base = client_count(s);
    args[0] = port;
    args[1] = key[0];
    args[2] = key[1];
    args[3] = key[2];
    args[4] = NULL;
    CHECK_MSG(proc_start(&p, name, args) == 0, "%s: could not start it", name);
    deadline = rh_now_ms() + 30000u * EX_SLOW;
    while (p.pid > 0) {
        /* after the kill, poll often: the reconnect is awaited with a bound */
        int r = proc_line(&p, line, sizeof line, killed && !go ? rh_now_ms() + 100 : deadline);
        unsigned long gen;
        int fd;
        char what[16], k[64];
        if (r == 0 || (r < 0 && rh_now_ms() >= deadline)) break;
        if (r == 1 && sscanf(line, "connection %lu: watching fd %d", &gen, &fd) == 2) {
            conns++;
            if (killed && gen > 1) regen = 1; /* a new connection after the kill, re-registered */
        }
        if (r == 1 && sscanf(line, "%15s %63s after", what, k) == 2) {
            for (i = 0; i < 3 && strcmp(k, key[i]) != 0; i++) { }
            if (i < 3 && strcmp(what, "acquired") == 0) {
                acquired[i]++;
                if (i == 1) early = !go; /* printed before the holder was told to release */
            }
            if (i < 3 && strcmp(what, "released") == 0) released++;
        }
        if (r == 1 && strcmp(line, "3 of 3 acquired, 3 released") == 0) summary = 1;
        if (acquired[0] && acquired[2] && !acquired[1] && !killed) {
            /* the two free keys are held, the third is awaited: one connection */
            char reply[64];
            during = client_count(s);
            rh_str(s, reply, sizeof reply, "CLIENT KILL SKIPME yes"); /* the example's connection */
            killed = 1;
            killed_at = rh_now_ms();
        }
        if (killed && !go && regen && !paused) {
            /* The server stopped (SIGSTOP) while the example waits: its
             * requests time out, it reconnects to a server that never
             * answers - and must sleep meanwhile, not spin. */
            unsigned long long t0 = rh_now_ms(), c0 = proc_cpu_ms(p.pid), c1;
            rh_server_pause((rh_server *)s);
            while (rh_now_ms() < t0 + PAUSE_MS && proc_line(&p, line, sizeof line, t0 + PAUSE_MS) == 1) {
                if (sscanf(line, "acquired %63s", k) == 1 && strcmp(k, key[1]) == 0) acquired[1]++, early = 1;
                conns += strncmp(line, "connection ", 11) == 0;
            }
            c1 = proc_cpu_ms(p.pid);
            rh_server_resume((rh_server *)s);
            paused = 1;
            printf("%s: server stopped %llu ms while it waited: %llu ms of CPU\n", name, rh_now_ms() - t0, c1 - c0);
            CHECK_MSG(c1 - c0 < PAUSE_MS / 2, "%s: %llu ms of CPU in %d ms with the server stopped: busy-polling",
                      name, c1 - c0, PAUSE_MS);
        }
        if (killed && !go && (paused || rh_now_ms() > killed_at + 5000u * EX_SLOW)) {
            /* Reconnected (or given up on): let the holder release. Lines
             * printed until now come first, so that an "acquired" among
             * them counts as early. */
            while (!acquired[1] && proc_line(&p, line, sizeof line, rh_now_ms()) == 1)
                if (sscanf(line, "acquired %63s", k) == 1 && strcmp(k, key[1]) == 0) acquired[1]++, early = 1;
            CHECK(write(p2h[1], "g", 1) == 1);
            go = 1;
        }
    }
    if (!go) CHECK(write(p2h[1], "g", 1) == 1); /* never leave the holder waiting */
    status = proc_finish(&p, deadline);
    CHECK_MSG(rh_exited_with(status, 0), "%s: exit status 0x%x", name, (unsigned)status);
    CHECK_MSG(acquired[0] == 1 && acquired[1] == 1 && acquired[2] == 1 && released == 3 && summary,
              "%s: acquired %d %d %d, released %d", name, acquired[0], acquired[1], acquired[2], released);
    /* base: the query's own connection (the holder closed its own); during: that + the example's */
    CHECK_MSG(during == base + 1, "%s: %d connections while two keys were held and one awaited, %d "
              "before the example started (want one more: one connection for three locks)", name, during, base);
    CHECK_MSG(!early, "%s: %s acquired before its holder was told to release it", name, key[1]);
    CHECK_MSG(killed && regen, "%s: no new connection watched after its connection was killed", name);
    for (i = 0; i < 3; i++) CHECK_MSG(rh_int(s, "EXISTS %s", key[i]) == 0, "%s: %s left behind", name, key[i]);
    status = rh_wait_child(holder, 10000);
    holder_said(h2p[0], said, sizeof said);
    CHECK_MSG(rh_exited_with(status, 0) && strchr(said, 'R'), "%s: holder status 0x%x, said '%s'", name,
              (unsigned)status, said);
    if (check_fail_count != fails) proc_dump(&p, name);
    printf("%s: 3 locks over one connection; %s acquired only once its holder was told to release; after a "
           "CLIENT KILL it watched the new connection (%d connection lines)\n", name, key[1], conns);
    close(h2p[0]);
    close(p2h[1]);
}

/* ------------------------------------------- blocking transport, basic */

static void test_blocking_transport(const rh_server *s) {
    char port[16], want[128], line[512];
    const char *args[3];
    int status, acquired = 0, released = 0, refused = 0, fails = check_fail_count;
    proc p;
    snprintf(port, sizeof port, "%d", s->port);
    args[0] = port;
    args[1] = "ex:blocking";
    args[2] = NULL;
    CHECK(proc_start(&p, "blocking_transport", args) == 0);
    while (proc_line(&p, line, sizeof line, rh_now_ms() + 20000u * EX_SLOW) == 1) {
        acquired += strncmp(line, "acquired ex:blocking (", 22) == 0;
        released += strcmp(line, "released ex:blocking") == 0;
    }
    status = proc_finish(&p, rh_now_ms() + 5000u * EX_SLOW);
    CHECK_MSG(rh_exited_with(status, 0) && acquired == 1 && released == 1,
              "blocking_transport: status 0x%x, acquired %d, released %d", (unsigned)status, acquired, released);
    CHECK_EQ_LL(rh_int(s, "EXISTS ex:blocking"), 0);
    if (check_fail_count != fails) proc_dump(&p, "blocking_transport");

    /* no server there: the transport's own words reach rlock_node_error */
    fails = check_fail_count;
    snprintf(port, sizeof port, "%d", rh_free_port());
    snprintf(want, sizeof want, "failed: io error: connect 127.0.0.1:%s: Connection refused", port);
    CHECK(proc_start(&p, "blocking_transport", args) == 0);
    while (proc_line(&p, line, sizeof line, rh_now_ms() + 20000u * EX_SLOW) == 1) refused += strcmp(line, want) == 0;
    status = proc_finish(&p, rh_now_ms() + 5000u * EX_SLOW);
    CHECK_MSG(rh_exited_with(status, 1) && refused == 1, "blocking_transport, no server: status 0x%x, want "
              "exit 1 and '%s'", (unsigned)status, want);
    if (check_fail_count != fails) proc_dump(&p, "blocking_transport (no server)");
    printf("blocking_transport: took and released a lock; with no server: '%s'\n", want);
}

/* Whole file into buf (NUL-terminated); its length, or -1. */
static long slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f) return -1;
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n == cap - 1 ? -1 : (long)n;
}

/* rlock.h's EXAMPLE (the lines after " * EXAMPLE" up to " * TABLE OF
 * CONTENTS", each " *   " or " *" taken off, the last empty one dropped)
 * must be examples/basic.c. */
static void header_example_is(const char *basic) {
    static char header[1 << 20], ex[8192]; /* rlock.h is over 256 KiB */
    const char *p, *end;
    size_t n = 0;
    CHECK_MSG(slurp("rlock.h", header, sizeof header) > 0, "rlock.h: not found or over %u bytes", (unsigned)sizeof header);
    p = strstr(header, "\n * EXAMPLE");
    p = p ? strchr(p + 1, '\n') : NULL;
    end = p ? strstr(p, "\n * TABLE OF CONTENTS\n") : NULL;
    CHECK_MSG(p && end, "rlock.h: no EXAMPLE block before TABLE OF CONTENTS");
    if (!p || !end) return;
    while (p < end) { /* p is at the '\n' before a line */
        const char *eol = strchr(p + 1, '\n');
        size_t len;
        if (strncmp(p + 1, " *   ", 5) == 0) p += 6;
        else if (strncmp(p + 1, " *\n", 3) == 0) p += 3;
        else { CHECK_MSG(0, "rlock.h EXAMPLE: a line without ' *   ': %.40s", p + 1); return; }
        len = (size_t)(eol - p);
        if (n + len + 1 >= sizeof ex) break;
        memcpy(ex + n, p, len);
        n += len;
        ex[n++] = '\n';
        p = eol;
    }
    if (n >= 2 && ex[n - 1] == '\n' && ex[n - 2] == '\n') n--; /* the empty line before TABLE */
    ex[n] = '\0';
    CHECK_MSG(strcmp(ex, basic) == 0, "rlock.h's EXAMPLE differs from examples/basic.c (make them the same)");
}

static void test_quick_start(const rh_server *s) {
    static char readme[524288], basic[8192];
    char port[16], line[512];
    const char *args[2], *start, *end;
    int status, ok = 0, fails = check_fail_count;
    size_t n = 0;
    proc p;
    CHECK_MSG(slurp("README.md", readme, sizeof readme) > 0, "README.md: not found or over %u bytes", (unsigned)sizeof readme);
    CHECK(slurp("examples/basic.c", basic, sizeof basic) > 0);
    /* the first ```c block after "## Quick start" */
    start = strstr(readme, "\n## Quick start\n");
    start = start ? strstr(start, "\n```c\n") : NULL;
    end = start ? strstr(start + 6, "\n```\n") : NULL;
    if (start && end) n = (size_t)(end + 1 - (start + 6));
    CHECK_MSG(start && end && n == strlen(basic) && memcmp(start + 6, basic, n) == 0,
              "README.md's quick start differs from examples/basic.c (make them the same)");
    header_example_is(basic);
    snprintf(port, sizeof port, "%d", s->port);
    args[0] = port;
    args[1] = NULL;
    CHECK(proc_start(&p, "basic", args) == 0);
    while (proc_line(&p, line, sizeof line, rh_now_ms() + 20000u * EX_SLOW) == 1) ok += strcmp(line, "ok ") == 0;
    status = proc_finish(&p, rh_now_ms() + 5000u * EX_SLOW);
    CHECK_MSG(rh_exited_with(status, 0) && ok == 1, "basic: status 0x%x", (unsigned)status);
    CHECK_EQ_LL(rh_int(s, "EXISTS jobs:nightly"), 0);
    if (check_fail_count != fails) proc_dump(&p, "basic");

    /* a port rlock_posix_init_tcp refuses: the program stops there (exit 2)
     * instead of handing rlock a transport nobody filled in (valgrind:
     * "depends on uninitialised value(s)", exit 99) */
    fails = check_fail_count;
    args[0] = "0";
    CHECK(proc_start(&p, "basic", args) == 0);
    while (proc_line(&p, line, sizeof line, rh_now_ms() + 20000u * EX_SLOW) == 1) { }
    status = proc_finish(&p, rh_now_ms() + 5000u * EX_SLOW);
    CHECK_MSG(rh_exited_with(status, 2), "basic 0: status 0x%x, want exit 2", (unsigned)status);
    if (check_fail_count != fails) proc_dump(&p, "basic 0");
    printf("basic: the README quick start and rlock.h's EXAMPLE are examples/basic.c, and it ran; port 0: exit 2\n");
}

int main(void) {
    static const char *const loops[] = { "poll_loop", "epoll_loop", "libuv_loop", "libevent_loop" };
    rh_server s;
    int fds0 = rh_count_fds(), fds1;
    size_t i;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    if (rh_server_start(&s, NULL) != 0) {
        CHECK_MSG(0, "could not start redis-server");
        return check_summary("examples");
    }
    printf("examples: running %s*%s\n", EX_DIR, EX_SLOW > 1 ? " under valgrind" : "");
    test_quick_start(&s);
    test_blocking_transport(&s);
    for (i = 0; i < sizeof loops / sizeof loops[0]; i++) test_loop(&s, loops[i]);
    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0); /* nothing left behind */
    rh_server_stop(&s);
    CHECK_EQ_LL(rh_count_children(), 0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    return check_summary("examples");
}
