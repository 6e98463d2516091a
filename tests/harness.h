/* harness.h - start, stop and poke throw-away redis-server processes for
 * integration tests. Header-only, every function static, prefix rh_.
 * Linux only (prctl, /proc).
 *
 * INCLUDE ORDER
 *   This header needs POSIX.1-2008 (mkdtemp, clock_gettime, kill, ...). Under
 *   -std=c99 glibc only declares them when _POSIX_C_SOURCE is defined before
 *   the FIRST system header of the translation unit. So either include
 *   harness.h (or rlock.h, which does the same) before anything else, or put
 *       #define _POSIX_C_SOURCE 200809L
 *   on the first line of the .c file. The header stops with an #error if it
 *   sees system headers were already included without that macro.
 *
 * WHAT IT DOES
 *   rh_server_start() creates a private directory (mkdtemp under $TMPDIR or
 *   /tmp), picks a free loopback port and runs
 *       redis-server --port P --bind 127.0.0.1 --save '' --appendonly no
 *                    --dir DIR --logfile DIR/redis.log --daemonize no
 *                    --unixsocket DIR/redis.sock --unixsocketperm 700 [extra]
 *   from a forked child (stdin </dev/null, stdout/stderr >>DIR/stdout.log,
 *   every inherited fd above 2 closed, PR_SET_PDEATHSIG=SIGKILL so the server
 *   dies with the thread that started it - start servers from the main
 *   thread or from a thread that outlives them). It waits (5 s bound) until
 *   the server answers PING on its private unix socket AND on its TCP port,
 *   so a PONG can never come from a foreign process that raced us for the
 *   port; if the server exits early (port taken) it retries with a new port,
 *   up to 5 times. A -NOAUTH reply counts as ready (for --requirepass).
 *   Binary: $RLOCK_REDIS_SERVER, else redis-server from $PATH.
 *   Servers are only ever stopped by their own PID.
 *
 * SIGPIPE
 *   hiredis write()s to sockets; a test that makes a peer vanish (kill9,
 *   proxy RESET/CUT) should call rh_ignore_sigpipe() once at start.
 *
 * hiredis (0.14.x, <hiredis/hiredis.h>, -lhiredis) is used only for the
 * inspection helpers rh_connect / rh_int / rh_str.
 *
 * API (all static inline, so unused ones do not trip -Wunused-function)
 *   int  rh_server_start(rh_server *s, const char *const *extra_args);
 *            extra_args: NULL-terminated, e.g. {"--requirepass","pw",NULL},
 *            or NULL. 0 ok, -1 failed (reason printed to stderr).
 *   int  rh_server_restart(rh_server *s, const char *const *extra_args);
 *            same port (and dir) again, e.g. after rh_server_kill9; kills
 *            a still-running server first. 0 ok, -1 failed.
 *   void rh_server_stop(rh_server *s);   SIGTERM (+SIGCONT), wait <= 5 s,
 *            then SIGKILL; removes the temp dir. Idempotent.
 *   void rh_server_kill9(rh_server *s);  SIGKILL + waitpid, pid = -1 (dir kept)
 *   void rh_server_pause(rh_server *s);  SIGSTOP
 *   void rh_server_resume(rh_server *s); SIGCONT
 *   int  rh_free_port(void);             bind 127.0.0.1:0, read it, close
 *   redisContext *rh_connect(const rh_server *s);  2 s connect+command
 *            timeout; NULL on failure (printed). AUTH is the caller's job.
 *   redisContext *rh_connect_port(int port, int timeout_ms);
 *   long long rh_int(const rh_server *s, const char *fmt, ...);
 *            hiredis format; integer reply, or -999 on any error
 *   int  rh_str(const rh_server *s, char *out, size_t cap, const char *fmt, ...);
 *            reply text into out (string/status/error verbatim, integer in
 *            decimal, nil/array ""); returns REDIS_REPLY_* or -1
 *   long long rh_stat_calls(const rh_server *s, const char *cmd);  INFO commandstats calls
 *   pid_t rh_spawn(argv, out_file, env, search);  a command in the background, output
 *            into a file, without the rlock command's environment defaults
 *   int  rh_tc_open(rh_tconn *t, const rh_server *s, int use_unix, const rlock_config *cfg,
 *                   const char *user, const char *pass);  void rh_tc_close(rh_tconn *t);
 *            one rlock client on one node over the POSIX adapter (declared
 *            only when adapters/rlock_posix.h was included first)
 *   int  rh_gc_open(rh_gconn *g, const rh_server *s, uint32_t recheck_ms);  void rh_gc_close(rh_gconn *g);
 *            the same, waiting by RESP3 pub/sub, read only while g->gate is 0
 *   rlock_status rh_step_until_waitmsg(rlock_lock *lk, rlock_status st);  step until it
 *            waits for a release notice (with RLOCK_IMPLEMENTATION)
 *   int  rh_hc_open(rh_hconn *h, const rh_server *s, uint32_t node_timeout_ms);  void rh_hc_close(rh_hconn *h);
 *            one rlock client whose next h->hold connections' requests are held back
 *            (rlock times them out); int rh_hc_deliver(h, i, s) sends held request i late
 *   rlock_status rh_step_like_a_loop(rlock_client *cl, rlock_lock *lk, rlock_status st, int *steps);
 *            poll + step as an event loop would, 50 steps at most; stops on a sleep of 2 s or more
 *   unsigned long long rh_now_ms(void);  CLOCK_MONOTONIC milliseconds
 *   unsigned rh_slow(void);              how many times slower than natively timing runs here:
 *            $RLOCK_TEST_SLOW, else 3 under valgrind, else 1 (a scale for timed tests)
 *   void rh_sleep_ms(unsigned ms);
 *   void rh_ignore_sigpipe(void);
 *   int  rh_count_fds(void);             open fds of this process
 *   int  rh_count_children(void);        child processes (live or zombie)
 */
#ifndef RLOCK_TEST_HARNESS_H
#define RLOCK_TEST_HARNESS_H

#if !defined(_POSIX_C_SOURCE)
#  if defined(_FEATURES_H) || defined(_STDIO_H) || defined(_STDLIB_H)
#    error "harness.h: define _POSIX_C_SOURCE 200809L before the first system header (or include harness.h first)"
#  endif
#  define _POSIX_C_SOURCE 200809L
#elif _POSIX_C_SOURCE < 200809L
#  error "harness.h needs _POSIX_C_SOURCE >= 200809L"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <hiredis/hiredis.h>
#if defined(__has_include) /* (valgrind's client requests: rh_slow; none where it is not installed) */
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

typedef struct rh_server {
    pid_t pid;            /* -1 when not running */
    int port;             /* TCP port on 127.0.0.1 */
    char dir[256];        /* private temp dir ("" when none) */
    char unixsock[256];   /* DIR/redis.sock */
    char logfile[300];    /* DIR/redis.log */
} rh_server;

#define RH_START_TRIES 5
#define RH_READY_MS 5000
#define RH_STOP_MS 5000

/* ---------------------------------------------------------------- time */

static inline unsigned long long rh_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

static inline void rh_sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* How many times slower than natively this run keeps time: $RLOCK_TEST_SLOW
 * (1..50) when set (an emulator, a loaded machine), else 3 under valgrind
 * (its threads take turns on one core, and on a loaded 2-core machine a
 * round trip there can outlast a 60 ms node timeout), else 1. A test scales
 * a lease by it together with its node timeouts, waits and bounds, so that
 * each check keeps its meaning: what never happens (a renewal, a wake-up)
 * still fails. */
static inline unsigned rh_slow(void) {
    const char *e = getenv("RLOCK_TEST_SLOW");
    long v = e && *e ? strtol(e, NULL, 10) : 0;
    if (v >= 1 && v <= 50) return (unsigned)v;
    return RUNNING_ON_VALGRIND ? 3u : 1u;
}

static inline void rh_ignore_sigpipe(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
}

/* --------------------------------------------------------- process info */

/* Entries of a /proc directory, or -1. A readdir() that fails (EOVERFLOW:
 * a 32-bit build without -D_FILE_OFFSET_BITS=64 meeting a 64-bit inode
 * number) is -1 too, never a short count. */
static inline int rh__count_dir(const char *path) {
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    errno = 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    if (errno != 0) n = -1;
    closedir(d);
    return n;
}

/* Number of open fds of this process (the DIR's own fd is not counted). */
static inline int rh_count_fds(void) { return rh__count_dir("/proc/self/fd") - 1; }

/* Number of threads of this process. */
static inline int rh_count_threads(void) { return rh__count_dir("/proc/self/task"); }

/* Wait for a child up to timeout_ms; SIGKILL it after that. Returns the
 * waitpid status, or -1 when it had to be killed. */
static inline int rh_wait_child(pid_t pid, unsigned timeout_ms) {
    unsigned long long end = rh_now_ms() + timeout_ms;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
        if (rh_now_ms() > end) {
            fprintf(stderr, "child %ld did not finish in %u ms: killing it\n", (long)pid, timeout_ms);
            kill(pid, SIGCONT);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            return -1;
        }
        rh_sleep_ms(2);
    }
}

/* fork() with stdio flushed first, so buffered output is not printed twice. */
static inline pid_t rh_fork(void) {
    fflush(stdout);
    fflush(stderr);
    return fork();
}

/* Read exactly n bytes from fd within ms. 0 ok, -1 not in time / EOF. */
static inline int rh_read_full(int fd, void *buf, size_t n, int ms) {
    size_t got = 0;
    unsigned long long end = rh_now_ms() + (unsigned long long)ms;
    while (got < n) {
        struct pollfd p;
        long long left = (long long)(end - rh_now_ms());
        ssize_t r;
        if (rh_now_ms() >= end) return -1;
        p.fd = fd; p.events = POLLIN; p.revents = 0;
        if (poll(&p, 1, (int)left) <= 0) continue;
        r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* The child exited normally with code. */
static inline int rh_exited_with(int status, int code) {
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* Start argv (argv[0] a path; searched in PATH when `search`) in the
 * background, stdout and stderr into out_file (NULL: /dev/null), without the
 * rlock command's environment defaults (RLOCK_SERVERS, the password
 * variables) and with env ("NAME=VALUE", or NULL) set. Returns its pid, or
 * -1; a child that cannot open out_file or exec exits 121. */
static inline pid_t rh_spawn(const char *const *argv, const char *out_file, const char *env, int search) {
    pid_t pid = rh_fork();
    int fd;
    if (pid != 0) return pid;
    fd = open(out_file ? out_file : "/dev/null", out_file ? O_WRONLY | O_CREAT | O_TRUNC : O_RDWR, 0600);
    if (fd < 0) _exit(121);
    if (!out_file) dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    unsetenv("RLOCK_SERVERS");
    unsetenv("RLOCK_PASSWORD");
    unsetenv("RLOCK_SENTINEL_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    if (env) {
        char kv[128], *eq;
        snprintf(kv, sizeof kv, "%s", env);
        if ((eq = strchr(kv, '=')) != NULL) { *eq = '\0'; setenv(kv, eq + 1, 1); }
    }
    if (search) execvp(argv[0], (char *const *)argv);
    else execv(argv[0], (char *const *)argv);
    _exit(121);
}

/* Highest open fd number of this process, or -1. */
static inline int rh__max_fd(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int mx = -1;
    if (!d) return -1;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        int v;
        if (e->d_name[0] == '.') continue;
        v = atoi(e->d_name);
        if (v > mx) mx = v;
    }
    if (errno != 0) mx = -1;
    closedir(d);
    return mx;
}

/* Live or zombie child processes of this process (scans /proc; reaps none). */
static inline int rh_count_children(void) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    long me = (long)getpid();
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[512], *p;
        FILE *f;
        long ppid;
        char st;
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(buf, sizeof buf, f)) { fclose(f); continue; }
        fclose(f);
        p = strrchr(buf, ')');   /* comm may contain spaces and parens */
        if (p && sscanf(p + 1, " %c %ld", &st, &ppid) == 2 && ppid == me) n++;
    }
    closedir(d);
    return n;
}

/* ------------------------------------------------------------- sockets */

static inline int rh_free_port(void) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Send an inline PING on fd and read the first reply line (timeout_ms per
 * recv). 1: ready (+PONG, or -NOAUTH/-ERR auth errors), 0: not ready. */
/* argv's first words to run the rest under an fd limit of lim: a shell's
 * ulimit -n around it (not setrlimit in the fork: under valgrind the fork
 * is still valgrind's, which keeps RLIMIT_NOFILE to itself). Fills
 * argv[0..4) (num, >= 12 bytes, holds the number) and returns 4. */
static inline int rh_ulimit_argv(const char **argv, char *num, size_t cap, int lim) {
    snprintf(num, cap, "%d", lim);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = "ulimit -n \"$0\" && exec \"$@\"";
    argv[3] = num;
    return 4;
}

/* A loopback port whose connects hang: a listener whose accept queue is
 * full drops SYNs, so a connect to it stays in SYN_SENT - a server that
 * never answers, for tests of a connect bound. The port, or -1 (the queue
 * could not be filled); rh_hang_close after, either way. */
typedef struct rh_hang { int ls, fillers[16], n; } rh_hang;
static inline int rh_hang_open(rh_hang *h) {
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    h->n = 0;
    h->ls = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (h->ls < 0 || bind(h->ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(h->ls, 0) != 0 ||
        getsockname(h->ls, (struct sockaddr *)&a, &al) != 0)
        return -1;
    while (h->n < 16) {
        struct pollfd p;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return -1;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        h->fillers[h->n++] = fd;
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) continue;
        p.fd = fd;
        p.events = POLLOUT;
        p.revents = 0;
        if (poll(&p, 1, 100) == 0) return ntohs(a.sin_port); /* this one hangs: the queue is full */
    }
    return -1;
}
static inline void rh_hang_close(rh_hang *h) {
    int i;
    for (i = 0; i < h->n; i++) close(h->fillers[i]);
    if (h->ls >= 0) close(h->ls);
}

static inline int rh__ping_fd(int fd, int timeout_ms) {
    struct timeval tv;
    char buf[128];
    size_t got = 0;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (send(fd, "PING\r\n", 6, MSG_NOSIGNAL) != 6) return 0;
    while (got < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0) { if (r < 0 && errno == EINTR) continue; return 0; }
        got += (size_t)r;
        buf[got] = 0;
        if (strchr(buf, '\n')) break;
    }
    buf[got] = 0;
    if (strncmp(buf, "+PONG", 5) == 0) return 1;
    if (buf[0] == '-' && strncmp(buf, "-LOADING", 8) != 0) return 1;  /* -NOAUTH etc. */
    return 0;
}

static inline int rh__ping_tcp(int port, int timeout_ms) {
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok = 0;
    if (fd < 0) return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) ok = rh__ping_fd(fd, timeout_ms);
    close(fd);
    return ok;
}

static inline int rh__ping_unix(const char *path, int timeout_ms) {
    struct sockaddr_un a;
    int fd, ok = 0;
    if (strlen(path) >= sizeof a.sun_path) return 0;
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, path, strlen(path) + 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) ok = rh__ping_fd(fd, timeout_ms);
    close(fd);
    return ok;
}

/* ----------------------------------------------------------- spawning */

/* Resolve the redis-server binary into out. 0 ok, -1 not found. */
static inline int rh__find_binary(char *out, size_t cap) {
    const char *env = getenv("RLOCK_REDIS_SERVER");
    const char *path = getenv("PATH");
    if (env && *env) {
        if (strlen(env) >= cap) return -1;
        strcpy(out, env);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n > 0 && n + sizeof "/redis-server" <= cap) {
            memcpy(out, path, n);
            strcpy(out + n, "/redis-server");
            if (access(out, X_OK) == 0) return 0;
        }
        path += n;
        if (*path == ':') path++;
    }
    return -1;
}

static inline int rh__make_dir(rh_server *s) {
    const char *tmp = getenv("TMPDIR");
    char tmpl[96];
    size_t n;
    /* unix socket paths are limited to 107 bytes: fall back to /tmp */
    if (!tmp || !*tmp || strlen(tmp) > 60) tmp = "/tmp";
    if ((size_t)snprintf(tmpl, sizeof tmpl, "%s/rlock-test-XXXXXX", tmp) >= sizeof tmpl) return -1;
    if (!mkdtemp(tmpl)) {
        fprintf(stderr, "harness: mkdtemp(%s): %s\n", tmpl, strerror(errno));
        return -1;
    }
    n = strlen(tmpl);   /* <= 60 + 19: every name below fits */
    memcpy(s->dir, tmpl, n + 1);
    memcpy(s->unixsock, tmpl, n);
    memcpy(s->unixsock + n, "/redis.sock", sizeof "/redis.sock");
    memcpy(s->logfile, tmpl, n);
    memcpy(s->logfile + n, "/redis.log", sizeof "/redis.log");
    return 0;
}

/* Empty a directory; depth 1 also empties its subdirectories (Redis 7
 * keeps the AOF files in appendonlydir/). */
static inline void rh__empty_dir(const char *dir, int depth) {
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char p[700];
        int n;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        n = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof p) continue; /* cannot be: our dirs are short */
        if (unlink(p) != 0 && depth > 0) {
            rh__empty_dir(p, depth - 1);
            rmdir(p);
        }
    }
    closedir(d);
}

/* Remove the server's temp dir and what redis put in it. */
static inline void rh__remove_dir(rh_server *s) {
    if (!s->dir[0]) return;
    rh__empty_dir(s->dir, 1);
    if (rmdir(s->dir) != 0)
        fprintf(stderr, "harness: rmdir(%s): %s\n", s->dir, strerror(errno));
    s->dir[0] = s->unixsock[0] = s->logfile[0] = 0;
}

static inline long rh__file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0L;
}

/* Print to stderr what this start attempt wrote to redis.log (from byte
 * log_from on) and to stdout.log, at most the last ~1.5 KB of each. */
static inline void rh__dump_log(const rh_server *s, long log_from) {
    int i;
    for (i = 0; i < 2; i++) {
        char p[600], buf[1536];
        FILE *f;
        long sz, from = i == 0 ? log_from : 0L;
        size_t n;
        if (i == 0) snprintf(p, sizeof p, "%s", s->logfile);
        else snprintf(p, sizeof p, "%s/stdout.log", s->dir);
        f = fopen(p, "r");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        sz = ftell(f);
        if (sz - from > (long)sizeof buf - 1) from = sz - (long)sizeof buf + 1;
        fseek(f, from, SEEK_SET);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        if (n) fprintf(stderr, "harness: --- %s ---\n%s%s", p, buf, buf[n - 1] == '\n' ? "" : "\n");
    }
}

/* Does this attempt's part of redis.log (from byte `from`) contain needle? */
static inline int rh__log_has(const rh_server *s, long from, const char *needle) {
    char buf[4096];
    size_t n;
    FILE *f = fopen(s->logfile, "r");
    if (!f) return 0;
    fseek(f, from, SEEK_SET);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

/* Reap pid if it has exited. 1: exited (reaped), 0: still running. */
static inline int rh__reaped(pid_t pid, int *status) {
    pid_t r;
    do r = waitpid(pid, status, WNOHANG); while (r < 0 && errno == EINTR);
    return r == pid || (r < 0 && errno == ECHILD);
}

/* One attempt on s->port with s->dir set up. 0 ready, 1 the port was taken
 * (retryable), -1 any other failure (bad args, exited, not ready in time). */
static inline int rh__spawn_once(rh_server *s, const char *const *extra) {
    char bin[PATH_MAX], portstr[16], outlog[600];
    const char *argv[64];
    int argc = 0, i, devnull, outfd, maxfd, status;
    struct rlimit rl;
    pid_t parent = getpid(), pid;
    unsigned long long deadline;
    long log_from = rh__file_size(s->logfile);

    if (rh__find_binary(bin, sizeof bin) != 0) {
        fprintf(stderr, "harness: redis-server not found (set RLOCK_REDIS_SERVER or PATH)\n");
        return -1;
    }
    snprintf(portstr, sizeof portstr, "%d", s->port);
    snprintf(outlog, sizeof outlog, "%s/stdout.log", s->dir);
    argv[argc++] = bin;
    argv[argc++] = "--port"; argv[argc++] = portstr;
    argv[argc++] = "--bind"; argv[argc++] = "127.0.0.1";
    argv[argc++] = "--save"; argv[argc++] = "";
    argv[argc++] = "--appendonly"; argv[argc++] = "no";
    argv[argc++] = "--dir"; argv[argc++] = s->dir;
    argv[argc++] = "--logfile"; argv[argc++] = s->logfile;
    argv[argc++] = "--daemonize"; argv[argc++] = "no";
    argv[argc++] = "--unixsocket"; argv[argc++] = s->unixsock;
    argv[argc++] = "--unixsocketperm"; argv[argc++] = "700";
    for (i = 0; extra && extra[i]; i++) {
        if (argc >= (int)(sizeof argv / sizeof argv[0]) - 1) {
            fprintf(stderr, "harness: too many extra redis-server args\n");
            return -1;
        }
        argv[argc++] = extra[i];
    }
    argv[argc] = NULL;

    /* Everything the child needs is prepared here: between fork and exec
     * only async-signal-safe calls (other threads may hold locks). */
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    outfd = open(outlog, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (devnull < 0 || outfd < 0) {
        fprintf(stderr, "harness: open /dev/null or %s: %s\n", outlog, strerror(errno));
        if (devnull >= 0) close(devnull);
        if (outfd >= 0) close(outfd);
        return -1;
    }
    maxfd = rh__max_fd();
    maxfd = maxfd < 0 ? 1024 : maxfd + 1024;   /* room for fds other threads open meanwhile */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)maxfd > rl.rlim_cur)
        maxfd = (int)rl.rlim_cur;

    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "harness: fork: %s\n", strerror(errno));
        close(devnull); close(outfd);
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        int fd;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);   /* parent died before prctl */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);   /* ignored dispositions survive exec */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        dup2(devnull, 0);
        dup2(outfd, 1);
        dup2(outfd, 2);
        for (fd = 3; fd < maxfd; fd++) close(fd);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(devnull);
    close(outfd);
    s->pid = pid;

    deadline = rh_now_ms() + RH_READY_MS;
    for (;;) {
        if (rh__reaped(pid, &status)) {
            s->pid = -1;
            fprintf(stderr, "harness: redis-server on port %d exited during startup (status 0x%x)\n",
                    s->port, (unsigned)status);
            rh__dump_log(s, log_from);
            return rh__log_has(s, log_from, "Address already in use") ? 1 : -1;
        }
        if (rh__ping_unix(s->unixsock, 200) && rh__ping_tcp(s->port, 200)) return 0;
        if (rh_now_ms() > deadline) {
            fprintf(stderr, "harness: redis-server (pid %ld, port %d) not ready after %d ms\n",
                    (long)pid, s->port, RH_READY_MS);
            rh__dump_log(s, log_from);
            kill(pid, SIGCONT);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            s->pid = -1;
            return -1;
        }
        rh_sleep_ms(10);
    }
}

static inline int rh_server_start(rh_server *s, const char *const *extra_args) {
    int attempt;
    memset(s, 0, sizeof *s);
    s->pid = -1;
    if (rh__make_dir(s) != 0) return -1;
    for (attempt = 0; attempt < RH_START_TRIES; attempt++) {
        int r;
        s->port = rh_free_port();
        if (s->port <= 0) { fprintf(stderr, "harness: no free port\n"); break; }
        r = rh__spawn_once(s, extra_args);
        if (r == 0) return 0;
        if (r < 0) break;
        /* exited early (port raced away?): fresh log, new port */
        unlink(s->logfile);
    }
    rh__remove_dir(s);
    s->port = 0;
    return -1;
}

static inline void rh_server_kill9(rh_server *s) {
    int status;
    if (s->pid <= 0) return;
    kill(s->pid, SIGKILL);
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {}
    s->pid = -1;
}

static inline int rh_server_restart(rh_server *s, const char *const *extra_args) {
    int attempt, r = -1;
    if (s->port <= 0) return -1;
    if (s->pid > 0) rh_server_kill9(s);
    if (!s->dir[0] || access(s->dir, F_OK) != 0) {
        int port = s->port;
        if (rh__make_dir(s) != 0) return -1;
        s->port = port;
    }
    for (attempt = 0; attempt < RH_START_TRIES; attempt++) {
        r = rh__spawn_once(s, extra_args);
        if (r <= 0) break;
        rh_sleep_ms(100);   /* same port wanted: give it a moment to free up */
    }
    return r == 0 ? 0 : -1;
}

static inline void rh_server_stop(rh_server *s) {
    if (s->pid > 0) {
        unsigned long long deadline = rh_now_ms() + RH_STOP_MS;
        int status, done = 0;
        kill(s->pid, SIGTERM);
        kill(s->pid, SIGCONT);   /* a paused server must run to handle SIGTERM */
        while (!(done = rh__reaped(s->pid, &status)) && rh_now_ms() < deadline) rh_sleep_ms(5);
        if (!done) {
            fprintf(stderr, "harness: redis-server pid %ld ignored SIGTERM, killing\n", (long)s->pid);
            kill(s->pid, SIGKILL);
            while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {}
        }
        s->pid = -1;
    }
    rh__remove_dir(s);
}

static inline void rh_server_pause(rh_server *s) { if (s->pid > 0) kill(s->pid, SIGSTOP); }
static inline void rh_server_resume(rh_server *s) { if (s->pid > 0) kill(s->pid, SIGCONT); }

/* -------------------------------------------------------- inspection */

static inline redisContext *rh_connect_port(int port, int timeout_ms) {
    struct timeval tv;
    redisContext *c;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c) { fprintf(stderr, "harness: redisConnect: out of memory\n"); return NULL; }
    if (c->err) {
        fprintf(stderr, "harness: connect 127.0.0.1:%d: %s\n", port, c->errstr);
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

static inline redisContext *rh_connect(const rh_server *s) { return rh_connect_port(s->port, 2000); }

static inline long long rh_int(const rh_server *s, const char *fmt, ...) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -999;
    va_list ap;
    if (!c) return -999;
    va_start(ap, fmt);
    r = (redisReply *)redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    else if (r && r->type == REDIS_REPLY_ERROR) fprintf(stderr, "harness: rh_int(%s): %s\n", fmt, r->str);
    else if (!r) fprintf(stderr, "harness: rh_int(%s): %s\n", fmt, c->errstr);
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* Reply text into out (always NUL-terminated, truncated to cap): string,
 * status and error replies verbatim, integers in decimal, nil/array as "".
 * Returns the REDIS_REPLY_* type, or -1 (out = connection error text). */
static inline int rh_str(const rh_server *s, char *out, size_t cap, const char *fmt, ...) {
    redisContext *c;
    redisReply *r;
    int type = -1;
    va_list ap;
    if (cap) out[0] = 0;
    c = rh_connect(s);
    if (!c) { if (cap) snprintf(out, cap, "connect failed"); return -1; }
    va_start(ap, fmt);
    r = (redisReply *)redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r) {
        if (cap) snprintf(out, cap, "%s", c->errstr);
    } else {
        type = r->type;
        if (cap) {
            if (type == REDIS_REPLY_STRING || type == REDIS_REPLY_STATUS || type == REDIS_REPLY_ERROR) {
                size_t n = r->len < cap - 1 ? r->len : cap - 1;
                memcpy(out, r->str, n);
                out[n] = 0;
            } else if (type == REDIS_REPLY_INTEGER) {
                snprintf(out, cap, "%lld", r->integer);
            }
        }
        freeReplyObject(r);
    }
    redisFree(c);
    return type;
}

/* INFO commandstats of s: how many times cmd ran (0: never), -1 when INFO failed. */
static inline long long rh_stat_calls(const rh_server *s, const char *cmd) {
    static char info[16384];
    char needle[64];
    const char *p;
    if (rh_str(s, info, sizeof info, "INFO commandstats") != REDIS_REPLY_STRING) return -1;
    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
    p = strstr(info, needle);
    return p ? atoll(p + strlen(needle)) : 0;
}

/* ------------------------------------------- an rlock client on a server */
#ifdef RLOCK_POSIX_H /* only where the POSIX adapter was included first */
/* One rlock client over one node, the POSIX adapter to s (TCP, or its unix
 * socket with use_unix), as the integration suites use it. cfg NULL: the
 * defaults with a 1 s node timeout (far above a loopback round trip, even
 * on a loaded machine or under valgrind). user/pass: AUTH (NULL: none). */
typedef struct rh_tconn {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
} rh_tconn;

static inline int rh_tc_open(rh_tconn *t, const rh_server *s, int use_unix, const rlock_config *cfg, const char *user,
                             const char *pass) {
    rlock_config def;
    int r = use_unix ? rlock_posix_init_unix(&t->pc, s->unixsock, 1000)
                     : rlock_posix_init_tcp(&t->pc, "127.0.0.1", s->port, 1000);
    rlock_config_init(&def);
    def.node_timeout_ms = 1000;
    if (r != 0 || rlock_node_init(&t->node, rlock_posix_transport(&t->pc)) != RLOCK_OK) return -1;
    t->node.username = user;
    t->node.password = pass;
    return rlock_client_init(&t->cl, &t->node, 1, cfg ? cfg : &def) == RLOCK_OK ? 0 : -1;
}

static inline void rh_tc_close(rh_tconn *t) {
    rlock_client_close(&t->cl);
    rlock_posix_close(&t->pc);
}

/* One rlock client (RESP3 pub/sub waiting, the given re-check) whose
 * connection is read only while t->gate is 0: its transport's recv says
 * "nothing yet" otherwise, so a test decides what has arrived by the time it
 * reads - e.g. a refused attempt's answer and the release notice published
 * after it, in one recv. */
typedef struct rh_gconn {
    rlock_posix_conn pc; /* first: the transport's ctx (&pc) is the rh_gconn too */
    int gate;
    rlock_transport tr;
    rlock_node node;
    rlock_client cl;
} rh_gconn;

static inline long rh_gated_recv(void *ctx, unsigned char *buf, size_t n) {
    rh_gconn *g = (rh_gconn *)ctx;
    return g->gate ? RLOCK_IO_WOULD_BLOCK : g->pc.tr.recv(ctx, buf, n);
}

static inline int rh_gc_open(rh_gconn *g, const rh_server *s, uint32_t recheck_ms) {
    rlock_config cfg;
    g->gate = 0;
    if (rlock_posix_init_tcp(&g->pc, "127.0.0.1", s->port, 1000) != 0) return -1;
    g->tr = g->pc.tr;
    g->tr.recv = rh_gated_recv;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    cfg.pubsub = 1;
    cfg.recheck_ms = recheck_ms;
    if (rlock_node_init(&g->node, &g->tr) != RLOCK_OK) return -1;
    return rlock_client_init(&g->cl, &g->node, 1, &cfg) == RLOCK_OK ? 0 : -1;
}

static inline void rh_gc_close(rh_gconn *g) {
    rlock_client_close(&g->cl);
    rlock_posix_close(&g->pc);
}

#ifdef RLOCK_IMPLEMENTATION /* reads the op's phase (rlock.h's private enum) */
/* Step lk until it waits for a release notice (subscribed and queued). */
static inline rlock_status rh_step_until_waitmsg(rlock_lock *lk, rlock_status st) {
    int i;
    for (i = 0; i < 5000 && st == RLOCK_WOULD_BLOCK && lk->op.phase != RLOCK__PH_WAITMSG; i++) {
        rh_sleep_ms(1);
        st = rlock_step(lk);
    }
    return st;
}
#endif

/* Drive lk as an event loop would (poll its descriptors as long as it
 * says, step), at most 50 steps; 2 s without I/O while it wants to sleep
 * longer ends it: that sleep is the re-check (a lost wake-up). *steps: how
 * many it took. */
static inline rlock_status rh_step_like_a_loop(rlock_client *cl, rlock_lock *lk, rlock_status st, int *steps) {
    *steps = 0;
    while (st == RLOCK_WOULD_BLOCK && *steps < 50) {
        rlock_interest in[2];
        struct pollfd p[2];
        uint32_t to;
        size_t k, n = rlock_client_interest(cl, in, 2, &to);
        for (k = 0; k < n; k++) {
            p[k].fd = in[k].fd;
            p[k].events = (short)((in[k].events & RLOCK_WANT_READ ? POLLIN : 0) |
                                  (in[k].events & RLOCK_WANT_WRITE ? POLLOUT : 0));
        }
        if (poll(p, (nfds_t)n, to >= 2000 ? 2000 : (int)to) == 0 && to >= 2000) break;
        st = rlock_step(lk);
        (*steps)++;
    }
    return st;
}

/* One rlock client (one node, no pub/sub) whose requests a test can hold
 * back, as a network spike that delays them past the node timeout would:
 * while h->hold > 0, the next connection rlock sends on is held (one of
 * h->hold each): its bytes are kept, not sent, and its recv sees nothing,
 * so rlock times it out and closes it. On close the bytes become late
 * request h->n_late - 1; rh_hc_deliver sends one to the server later on a
 * connection of its own (a late request reaching the server in the order
 * the test chooses) and waits until the server ran it. */
#define RH_LATE_MAX 4
typedef struct rh_hconn {
    rlock_posix_conn pc; /* first: the transport's ctx (&pc) is the rh_hconn too */
    int hold, held, n_late;
    size_t cur_len, late_len[RH_LATE_MAX];
    char cur[2048], late[RH_LATE_MAX][2048];
    rlock_transport tr;
    rlock_node node;
    rlock_client cl;
} rh_hconn;

static inline long rh__held_send(void *ctx, const unsigned char *buf, size_t n) {
    rh_hconn *h = (rh_hconn *)ctx;
    if (!h->held && h->hold > 0) {
        h->hold--;
        h->held = 1;
        h->cur_len = 0;
    }
    if (!h->held) return h->pc.tr.send(ctx, buf, n);
    if (n > sizeof h->cur - h->cur_len) return RLOCK_IO_ERROR; /* (not expected: a few requests) */
    memcpy(h->cur + h->cur_len, buf, n);
    h->cur_len += n;
    return (long)n;
}
static inline long rh__held_recv(void *ctx, unsigned char *buf, size_t n) {
    rh_hconn *h = (rh_hconn *)ctx;
    return h->held ? RLOCK_IO_WOULD_BLOCK : h->pc.tr.recv(ctx, buf, n);
}
static inline void rh__held_close(void *ctx) {
    rh_hconn *h = (rh_hconn *)ctx;
    if (h->held && h->cur_len && h->n_late < RH_LATE_MAX) {
        memcpy(h->late[h->n_late], h->cur, h->cur_len);
        h->late_len[h->n_late++] = h->cur_len;
    }
    h->held = 0;
    h->pc.tr.close(ctx);
}

static inline int rh_hc_open(rh_hconn *h, const rh_server *s, uint32_t node_timeout_ms) {
    rlock_config cfg;
    memset(h, 0, sizeof *h);
    if (rlock_posix_init_tcp(&h->pc, "127.0.0.1", s->port, 1000) != 0) return -1;
    h->tr = h->pc.tr;
    h->tr.send = rh__held_send;
    h->tr.recv = rh__held_recv;
    h->tr.close = rh__held_close;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = node_timeout_ms;
    if (rlock_node_init(&h->node, &h->tr) != RLOCK_OK) return -1;
    return rlock_client_init(&h->cl, &h->node, 1, &cfg) == RLOCK_OK ? 0 : -1;
}

static inline void rh_hc_close(rh_hconn *h) {
    rlock_client_close(&h->cl);
    rlock_posix_close(&h->pc);
}

/* Send held request i to s on a new connection, then PING: 0 once PONG came
 * back (the late request ran before it), -1 on an error or after 5 s. */
static inline int rh_hc_deliver(rh_hconn *h, int i, const rh_server *s) {
    redisContext *c;
    redisReply *r = NULL;
    int ok = -1;
    if (i < 0 || i >= h->n_late || !(c = rh_connect_port(s->port, 5000))) return -1;
    if (redisAppendFormattedCommand(c, h->late[i], h->late_len[i]) == REDIS_OK &&
        redisAppendCommand(c, "PING") == REDIS_OK) {
        while (redisGetReply(c, (void **)&r) == REDIS_OK && r) {
            int pong = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
            freeReplyObject(r);
            r = NULL;
            if (pong) { ok = 0; break; }
        }
    }
    redisFree(c);
    return ok;
}
#endif /* RLOCK_POSIX_H */

#endif /* RLOCK_TEST_HARNESS_H */
