/* test_cli.c - the rlock command (cli/rlock.c) as a black box against real,
 * throwaway redis-servers: exit codes, -n, -E, the -w deadline, pub/sub
 * waiting, 8 concurrent invocations serialized, Redlock with a node killed
 * mid-run, the lost-lock path (SIGSTOP rlock past its TTL), early stop when
 * renewal fails, signal forwarding, AUTH, foreign keys and bad arguments;
 * COMMAND that cannot be started (an fd limit): the lock released, exit 71.
 *
 * It runs build/rlock-asan when built with AddressSanitizer (so the CLI is
 * checked by the sanitizers too), else build/rlock; $RLOCK_CLI overrides.
 * Paths are relative to the repo root, where the Makefile runs the tests.
 * RLOCK_TEST_QUICK=1 (valgrind run) does fewer rounds. */
#include "harness.h" /* first: it sets the POSIX feature macros */
#include "check.h"
#ifdef __linux__
#include <sys/prctl.h>
#endif

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define CLI_FIRST "build/rlock-asan"
#else
#define CLI_FIRST "build/rlock"
#endif

#define EX_USAGE 64
#define EX_DATAERR 65
#define EX_UNAVAILABLE 69
#define EX_LOST 75
#define EX_NOPERM 77

static const char *cli;     /* the binary under test */
static char tmp[256];       /* scratch dir for outputs and files */
static int quick;
static rh_server srv[3];    /* three servers for everything */
static char S[3][64];       /* "127.0.0.1:PORT" of each */
static int out_seq;
static int cli_setpgid;     /* cli_start: rlock leads a process group of its own */
static int cli_nofile;      /* cli_start: > 0, rlock runs under RLIMIT_NOFILE cli_nofile */

/* ------------------------------------------------------------ helpers */

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmp, name); }

/* Start rlock with args (NULL-terminated) and env entries "K=V" (NULL-terminated
 * or NULL); stdin from /dev/null, stdout+stderr into outfile. The rlock env
 * variables of the test's own environment are cleared first. */
static pid_t cli_start(const char *const *args, const char *const *env, const char *outfile) {
    const char *argv[68];
    char lim[16];
    int n = 0, i;
    pid_t pid;
    if (cli_nofile > 0) n = rh_ulimit_argv(argv, lim, sizeof lim, cli_nofile);
    argv[n++] = cli;
    for (i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY), out = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0) _exit(120);
        if (cli_setpgid) setpgid(0, 0);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        close(in);
        close(out);
        /* whatever the test inherited, rlock starts with default dispositions */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        unsetenv("RLOCK_SERVERS");
        unsetenv("RLOCK_PASSWORD");
        unsetenv("REDISCLI_AUTH");
        for (i = 0; env && env[i]; i++) {
            char kv[512], *eq;
            snprintf(kv, sizeof kv, "%s", env[i]);
            if ((eq = strchr(kv, '=')) == NULL) continue;
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
        execv(argv[0], (char *const *)argv);
        _exit(121);
    }
    return pid;
}

/* Wait up to timeout_ms: exit code, 128+signal, or -1 (timed out: killed). */
static int cli_wait(pid_t pid, unsigned timeout_ms) {
    unsigned long long end = rh_now_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) return -2;
        if (rh_now_ms() > end) {
            fprintf(stderr, "rlock pid %ld still running after %u ms: killed\n", (long)pid, timeout_ms);
            kill(pid, SIGCONT);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rh_sleep_ms(5);
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -3;
}

static void read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    size_t n = 0;
    if (f) { n = fread(buf, 1, cap - 1, f); fclose(f); }
    buf[n] = '\0';
}

/* Run to completion (timeout 20 s); output into out. */
static int cli_run_env(const char *const *args, const char *const *env, char *out, size_t cap) {
    char file[300], name[32];
    int rc;
    snprintf(name, sizeof name, "out.%d", ++out_seq);
    path_in(file, sizeof file, name);
    rc = cli_wait(cli_start(args, env, file), 20000);
    read_file(file, out, cap);
    return rc;
}
static int cli_run(const char *const *args, char *out, size_t cap) { return cli_run_env(args, NULL, out, cap); }

static int wait_file(const char *path, unsigned timeout_ms) {
    unsigned long long end = rh_now_ms() + timeout_ms;
    struct stat st;
    while (rh_now_ms() < end) {
        if (stat(path, &st) == 0 && st.st_size > 0) return 1;
        rh_sleep_ms(5);
    }
    return 0;
}

static int wait_key(const rh_server *s, const char *key, int exists, unsigned timeout_ms) {
    unsigned long long end = rh_now_ms() + timeout_ms;
    while (rh_now_ms() < end) {
        if (rh_int(s, "EXISTS %s", key) == exists) return 1;
        rh_sleep_ms(10);
    }
    return 0;
}

static long read_pid(const char *path) {
    char buf[32];
    read_file(path, buf, sizeof buf);
    return atol(buf);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static int count_substr(const char *s, const char *needle) {
    int n = 0;
    while ((s = strstr(s, needle)) != NULL) { n++; s += strlen(needle); }
    return n;
}

static long long info_field(const rh_server *s, const char *field) {
    char buf[8192], *p;
    if (rh_str(s, buf, sizeof buf, "INFO stats") < 0) return -1;
    p = strstr(buf, field);
    return p ? atoll(p + strlen(field) + 1) : -1;
}

/* ------------------------------------------------------------- tests */

/* Bad arguments: exit 64, one line saying why plus the usage, and not a
 * single connection to the server named on the command line. Every
 * address names srv[0]'s port (no fixed port: one would be counted). */
static void test_usage(void) {
    static const char *const fmt[8] = { ":%d", "::1:%d", "rediss://127.0.0.1:%d/x", "redis://127.0.0.1:%d/x",
                                        "redis://127.0.0.1:%d?db=0", "redis://a@b@127.0.0.1:%d",
                                        "redis://:pw%%zz@127.0.0.1:%d", "http://127.0.0.1:%d" };
    static char longhost[400], longres[400], a[8][48], env_s[160];
    const char *s0 = S[0];
    const char *const cases[][16] = {
        { NULL },
        { "-S", s0, "res", NULL },
        { "-S", s0, "-t", "0", "res", "true", NULL },
        { "-S", s0, "-t", "-5", "res", "true", NULL },
        { "-S", s0, "-t", "abc", "res", "true", NULL },
        { "-S", s0, "-t", "10x", "res", "true", NULL },
        { "-S", s0, "-t", "0.05", "res", "true", NULL },  /* 50 ms: under the 100 ms floor */
        { "-S", s0, "--ttl=99999999999", "res", "true", NULL },
        { "-S", s0, "--ttl", NULL },
        { "-S", s0, "-w", "1.5.2", "res", "true", NULL },
        { "-S", s0, "-w", "soon", "res", "true", NULL },
        { "-S", s0, "-w", "0.0000001", "res", "true", NULL }, /* under 1 ms, not 0 (-n) */
        { "-S", s0, "-n", "-w", "100", "res", "true", NULL },
        { "-S", s0, "-E", "256", "res", "true", NULL },
        { "-S", s0, "-E", "x", "res", "true", NULL },
        { "-S", s0, "--nonblock=1", "res", "true", NULL },
        { "-S", s0, "--bogus", "res", "true", NULL },
        { "-S", s0, "-u", "res", "true", NULL },
        { "-S", "127.0.0.1:0", "res", "true", NULL },
        { "-S", "127.0.0.1:65536", "res", "true", NULL },
        { "-S", "127.0.0.1:", "res", "true", NULL },
        { "-S", a[0], "res", "true", NULL },
        { "-S", a[1], "res", "true", NULL },
        { "-S", "[::1", "res", "true", NULL },
        { "-S", "redis://", "res", "true", NULL },
        { "-S", a[2], "res", "true", NULL }, /* TLS or not: a bad path */
        { "-S", a[3], "res", "true", NULL },
        { "-S", a[4], "res", "true", NULL },
        { "-S", a[5], "res", "true", NULL },
        { "-S", a[6], "res", "true", NULL },
        { "-S", a[7], "res", "true", NULL },
        { "-S", "unix:", "res", "true", NULL },
        { "-S", longhost, "res", "true", NULL },
        { "-S", s0, "-S", s0, "res", "true", NULL },
        { "-S", s0, "--password-file", "/nonexistent/rlock-pw", "res", "true", NULL },
        { "-S", s0, "--user", "bob", "res", "true", NULL },
        { "-S", s0, "", "true", NULL },
        { "-S", s0, longres, "true", NULL },
        { "-S", s0, "--fence", "a}b", "true", NULL },
        { "-S", s0, "--fair", "a}b", "true", NULL },
        { "-S", s0, "--fair", "-s", "res", "true", NULL },
        { "-S", s0, "-t", "3", "--command-timeout", "2s", "res", "true", NULL },
    };
    const char *ten[] = { "-S", "h1:1", "-S", "h2:1", "-S", "h3:1", "-S", "h4:1", "-S", "h5:1", "-S", "h6:1",
                          "-S", "h7:1", "-S", "h8:1", "-S", "h9:1", "-S", "h10:1", "res", "true", NULL };
    const char *secret[] = { "-S", "redis://:Sup3rSecretPw@127.0.0.1:0", "res", "true", NULL };
    const char *env_bad[] = { env_s, NULL };
    const char *env_args[] = { "res", "true", NULL };
    char out[4096];
    size_t i;
    long long before, after;
    for (i = 0; i < 8; i++) snprintf(a[i], sizeof a[i], fmt[i], srv[0].port);
    snprintf(env_s, sizeof env_s, "RLOCK_SERVERS=%s,,%s", s0, S[1]);
    memset(longhost, 'h', 300);
    snprintf(longhost + 300, sizeof longhost - 300, ":%d", srv[0].port);
    memset(longres, 'r', 300);
    longres[300] = '\0';
    before = info_field(&srv[0], "total_connections_received");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = cli_run(cases[i], out, sizeof out);
        CHECK_MSG(rc == EX_USAGE, "case %zu: exit %d, want 64; output: %s", i, rc, out);
        CHECK_MSG(strncmp(out, "rlock: ", 7) == 0 && count_lines(out) == 3 && strstr(out, "Usage: rlock"),
                  "case %zu: want one line plus usage, got: %s", i, out);
    }
    CHECK_EQ_LL(cli_run(ten, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "at most 9") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run(secret, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "Sup3rSecretPw") == NULL, "the password was printed: %s", out);
    CHECK_EQ_LL(cli_run_env(env_args, env_bad, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "RLOCK_SERVERS") != NULL, "%s", out);
    after = info_field(&srv[0], "total_connections_received");
    CHECK_MSG(after == before + 1, "bad arguments reached Redis: %lld connections (1 is the check's own)", after - before);
}

static void test_help(void) {
    const char *h[] = { "--help", NULL }, *h2[] = { "-h", NULL }, *v[] = { "-V", NULL };
    const char *want[] = { "--server", "--ttl", "--wait", "--nonblock", "--conflict-exit-code", "--verbose",
                           "--fence", "--fair", "--password-file", "--kill-after", "RLOCK_TOKEN", "RLOCK_SERVERS",
                           "Exit status", "75", "69", "64", "Examples", NULL };
    char out[16384]; /* (the help is over 8 KiB) */
    int i;
    CHECK_EQ_LL(cli_run(h, out, sizeof out), 0);
    for (i = 0; want[i]; i++) CHECK_MSG(strstr(out, want[i]) != NULL, "--help does not mention %s", want[i]);
    CHECK_EQ_LL(cli_run(h2, out, sizeof out), 0);
    CHECK(strncmp(out, "Usage: rlock", 12) == 0);
    CHECK_EQ_LL(cli_run(v, out, sizeof out), 0);
    CHECK(strncmp(out, "rlock 0.", 8) == 0);
}

/* COMMAND's status passes through; it runs holding the lock, with the
 * documented environment; the lock is gone afterwards. */
static void test_run(void) {
    char out[4096], envf[300], noexec[300], cmd[1100], token[128] = "", got[256], key[128], unixs[300], url[64];
    char fence1[32] = "", fence2[32] = "";
    const char *exit7[] = { "-S", S[0], "t:run", "sh", "-c", "exit 7", NULL };
    const char *catin[] = { "-n", "-S", S[0], "t:run", "cat", NULL };
    const char *kill9[] = { "-S", S[0], "t:run", "sh", "-c", "kill -9 $$", NULL };
    const char *missing[] = { "-S", S[0], "t:run", "/nonexistent/rlock-cmd", NULL };
    const char *notexec[] = { "-S", S[0], "t:run", noexec, NULL };
    const char *envrun[] = { "-S", S[0], "--fence", "t:env", "sh", "-c", cmd, NULL };
    const char *nofence[] = { "-S", S[0], "t:env", "sh", "-c", "test -z \"${RLOCK_FENCE+x}\"", NULL };
    const char *outer[] = { "RLOCK_FENCE=999", NULL };
    const char *viaunix[] = { "-S", unixs, "t:run", "true", NULL };
    const char *viaurl[] = { "-S", url, "t:run", "true", NULL };
    const char *viaenv[] = { "-v", "t:run", "true", NULL };
    char envservers[256];
    const char *envlist[] = { envservers, NULL };
    pid_t pid;
    int rc;
    FILE *f;

    /* COMMAND gets rlock's stdin (here /dev/null), with -n too */
    CHECK_EQ_LL(cli_run(catin, out, sizeof out), 0);
    CHECK_MSG(out[0] == '\0', "%s", out);
    CHECK_EQ_LL(cli_run(catin + 1, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run(exit7, out, sizeof out), 7);
    CHECK_EQ_LL(cli_run(kill9, out, sizeof out), 128 + 9);
    CHECK_EQ_LL(cli_run(missing, out, sizeof out), 127);
    CHECK_MSG(strstr(out, "cannot run") != NULL, "%s", out);
    path_in(noexec, sizeof noexec, "not-executable");
    if ((f = fopen(noexec, "w")) != NULL) { fputs("echo hi\n", f); fclose(f); }
    CHECK_EQ_LL(cli_run(notexec, out, sizeof out), 126);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:run"), 0);
    {   /* --fair: the lock is free, COMMAND runs, its status passes through */
        const char *fair[] = { "--fair", "-S", S[0], "t:fair", "sh", "-c", "exit 3", NULL };
        CHECK_EQ_LL(cli_run(fair, out, sizeof out), 3);
        CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:fair"), 0);
    }

    /* RLOCK_RESOURCE / RLOCK_TOKEN / RLOCK_FENCE, and the key holds the token meanwhile */
    path_in(envf, sizeof envf, "env.txt");
    snprintf(cmd, sizeof cmd, "printf '%%s %%s %%s' \"$RLOCK_RESOURCE\" \"$RLOCK_TOKEN\" \"$RLOCK_FENCE\" > %s.tmp && "
             "mv %s.tmp %s && sleep 0.5", envf, envf, envf);
    path_in(got, sizeof got, "out.env");
    pid = cli_start(envrun, NULL, got);
    CHECK(wait_file(envf, 5000));
    read_file(envf, out, sizeof out);
    CHECK_MSG(sscanf(out, "%127s %127s %31s", key, token, fence1) == 3, "env: %s", out);
    CHECK(strcmp(key, "t:env") == 0);
    CHECK_MSG(strlen(token) == 32 && strspn(token, "0123456789abcdef") == 32, "token %s", token);
    CHECK(atoll(fence1) >= 1);
    rh_str(&srv[0], got, sizeof got, "GET t:env");
    CHECK_MSG(strcmp(got, token) == 0, "while COMMAND runs the key holds %s, not the token %s", got, token);
    CHECK(rh_int(&srv[0], "PTTL t:env") > 0);
    CHECK_EQ_LL(cli_wait(pid, 10000), 0);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:env"), 0);
    unlink(envf);
    CHECK_EQ_LL(cli_run(envrun, out, sizeof out), 0);
    read_file(envf, out, sizeof out);
    CHECK(sscanf(out, "%*s %*s %31s", fence2) == 1 && atoll(fence2) > atoll(fence1));
    CHECK_EQ_LL(cli_run_env(nofence, outer, out, sizeof out), 0);

    /* other ways to name servers */
    snprintf(unixs, sizeof unixs, "unix:%s", srv[0].unixsock);
    CHECK_EQ_LL(cli_run(viaunix, out, sizeof out), 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", srv[0].port);
    CHECK_EQ_LL(cli_run(viaurl, out, sizeof out), 0);
    snprintf(envservers, sizeof envservers, "RLOCK_SERVERS=%s, %s,%s", S[0], S[1], S[2]);
    rc = cli_run_env(viaenv, envlist, out, sizeof out);
    CHECK_EQ_LL(rc, 0);
    CHECK_MSG(strstr(out, "on 3/3 servers") != NULL, "%s", out);
}

/* -n, -E, -w against a holder; a plain waiter wakes when it releases. */
static void test_conflict(void) {
    char out[4096], hold_out[300], wait_out[300];
    const char *holder[] = { "-S", S[0], "t:c", "sleep", "2", NULL };
    const char *nb[] = { "-n", "-S", S[0], "t:c", "true", NULL };
    const char *nbE[] = { "-n", "-E", "42", "-S", S[0], "t:c", "true", NULL };
    const char *w300[] = { "-w", "0.3", "-S", S[0], "t:c", "true", NULL }; /* seconds, as flock */
    const char *waiter[] = { "-v", "-S", S[0], "t:c", "true", NULL };
    unsigned long long t0, t1;
    pid_t h, w;
    path_in(hold_out, sizeof hold_out, "out.holder");
    path_in(wait_out, sizeof wait_out, "out.waiter");
    t0 = rh_now_ms();
    h = cli_start(holder, NULL, hold_out);
    CHECK(wait_key(&srv[0], "t:c", 1, 5000));
    CHECK_EQ_LL(cli_run(nb, out, sizeof out), 1);
    CHECK_MSG(out[0] == '\0', "a conflict should be silent without -v: %s", out);
    CHECK_EQ_LL(cli_run(nbE, out, sizeof out), 42);
    t1 = rh_now_ms();
    CHECK_EQ_LL(cli_run(w300, out, sizeof out), 1);
    t1 = rh_now_ms() - t1;
    CHECK_MSG(t1 >= 280 && t1 < 1800, "-w 0.3 gave up after %llu ms", t1);
    w = cli_start(waiter, NULL, wait_out);
    CHECK_EQ_LL(cli_wait(h, 10000), 0);
    CHECK_EQ_LL(cli_wait(w, 10000), 0);
    t1 = rh_now_ms() - t0;
    /* The holder's lease is 30 s: finishing soon after its 2 s proves the
     * waiter woke on the release, not on the lease running out. */
    CHECK_MSG(t1 < 6000, "the waiter took %llu ms", t1);
    read_file(wait_out, out, sizeof out);
    CHECK_MSG(strstr(out, "waiting") && strstr(out, "acquired") && strstr(out, "released"), "%s", out);
    CHECK_EQ_LL(cli_run(nb, out, sizeof out), 0); /* free again */
}

/* A server that refuses HELLO 3 (Redis < 6, or HELLO renamed away): rlock
 * waits by backoff on RESP2, with no subscriber connection. The holder's
 * lease is 30 s, so a waiter done soon after the holder's 1 s proves the
 * backoff rechecked; no SUBSCRIBE ever reached the server. */
static void test_no_hello(void) {
    static const char *const extra[] = { "--rename-command", "HELLO", "", NULL };
    rh_server old;
    char sv[64], out[4096], hold_out[300], wait_out[300];
    const char *holder[] = { "-S", sv, "t:nohello", "sleep", "1", NULL };
    const char *waiter[] = { "-v", "-w", "20", "-S", sv, "t:nohello", "true", NULL };
    redisContext *rc;
    redisReply *r;
    unsigned long long t0;
    pid_t h, w;
    if (rh_server_start(&old, extra) != 0) { CHECK_MSG(0, "cannot start a server without HELLO"); return; }
    snprintf(sv, sizeof sv, "127.0.0.1:%d", old.port);
    path_in(hold_out, sizeof hold_out, "out.nohello.holder");
    path_in(wait_out, sizeof wait_out, "out.nohello.waiter");
    t0 = rh_now_ms();
    h = cli_start(holder, NULL, hold_out);
    CHECK(wait_key(&old, "t:nohello", 1, 5000));
    w = cli_start(waiter, NULL, wait_out);
    CHECK_EQ_LL(cli_wait(h, 10000), 0);
    CHECK_EQ_LL(cli_wait(w, 15000), 0);
    CHECK_MSG(rh_now_ms() - t0 < 8000, "the waiter took %llu ms", rh_now_ms() - t0);
    read_file(wait_out, out, sizeof out);
    CHECK_MSG(strstr(out, "waiting") && strstr(out, "acquired"), "%s", out);
    rc = rh_connect(&old);
    r = rc ? (redisReply *)redisCommand(rc, "INFO commandstats") : NULL;
    CHECK(r && r->type == REDIS_REPLY_STRING);
    if (r && r->type == REDIS_REPLY_STRING) {
        CHECK_MSG(strstr(r->str, "cmdstat_subscribe:") == NULL, "%s", r->str);
        CHECK_MSG(strstr(r->str, "cmdstat_hello:") == NULL, "%s", r->str);
    }
    if (r) freeReplyObject(r);
    if (rc) redisFree(rc);
    rh_server_stop(&old);
}

/* 8 invocations at once on one lock: each critical section alone, all run. */
static void test_concurrent(void) {
    enum { N = 8 };
    char dir[300], denv[320], outs[N][300], counter[320], overlaps[320], out[256];
    const char *bump = "mkdir \"$D/inside\" 2>/dev/null || echo x >>\"$D/overlaps\"; "
                       "n=$(cat \"$D/counter\"); sleep 0.03; echo $((n + 1)) >\"$D/counter\"; rmdir \"$D/inside\"";
    const char *args[] = { "-t", "5", "-S", S[0], "t:many", "sh", "-c", bump, NULL };
    const char *env[] = { denv, NULL };
    int rounds = quick ? 1 : 3, r, i, bad = 0;
    FILE *f;
    path_in(dir, sizeof dir, "many");
    mkdir(dir, 0700);
    snprintf(denv, sizeof denv, "D=%s", dir);
    snprintf(counter, sizeof counter, "%s/counter", dir);
    snprintf(overlaps, sizeof overlaps, "%s/overlaps", dir);
    if ((f = fopen(counter, "w")) != NULL) { fputs("0\n", f); fclose(f); }
    for (r = 0; r < rounds; r++) {
        pid_t p[N];
        for (i = 0; i < N; i++) {
            char name[32];
            snprintf(name, sizeof name, "out.many%d", i);
            path_in(outs[i], sizeof outs[i], name);
            p[i] = cli_start(args, env, outs[i]);
        }
        for (i = 0; i < N; i++) {
            int rc = cli_wait(p[i], 30000);
            if (rc != 0) {
                read_file(outs[i], out, sizeof out);
                fprintf(stderr, "concurrent rlock %d exited %d: %s\n", i, rc, out);
                bad++;
            }
        }
    }
    CHECK_EQ_LL(bad, 0);
    read_file(counter, out, sizeof out);
    CHECK_MSG(atoi(out) == N * rounds, "counter %s, want %d: updates were lost", out, N * rounds);
    CHECK_MSG(access(overlaps, F_OK) != 0, "two holders were inside at once");
}

/* Redlock over 3: a node killed mid-run, renewals go on with 2 of 3; with
 * 2 of 3 gone there is no quorum: 69. One unreachable server: 69. */
static void test_redlock(void) {
    char out[8192], job_out[300], done[300], cmd[800], nowhere[64];
    const char *job[] = { "-v", "-t", "1000ms", "-S", S[0], "-S", S[1], "-S", S[2], "t:red", "sh", "-c", cmd, NULL };
    const char *rival[] = { "-n", "-S", S[0], "-S", S[1], "-S", S[2], "t:red", "true", NULL };
    const char *alone[] = { "-S", nowhere, "t:red", "true", NULL };
    pid_t p;
    int renewed_on_two;
    path_in(job_out, sizeof job_out, "out.redlock");
    path_in(done, sizeof done, "redlock-done");
    snprintf(cmd, sizeof cmd, "sleep 2.5; echo done > %s", done);
    p = cli_start(job, NULL, job_out);
    CHECK(wait_key(&srv[0], "t:red", 1, 5000));
    rh_sleep_ms(300);
    rh_server_kill9(&srv[1]);
    rh_sleep_ms(500);
    CHECK_EQ_LL(cli_run(rival, out, sizeof out), 1); /* still held, on 2 of 3 */
    CHECK_EQ_LL(cli_wait(p, 15000), 0);
    CHECK(access(done, F_OK) == 0);
    read_file(job_out, out, sizeof out);
    renewed_on_two = count_substr(out, "on 2/3 servers");
    CHECK_MSG(renewed_on_two >= 2, "renewals with 2 of 3 servers: %d\n%s", renewed_on_two, out);
    CHECK(strstr(out, "released") != NULL);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:red"), 0);
    CHECK_EQ_LL(rh_int(&srv[2], "EXISTS t:red"), 0);
    CHECK_EQ_LL(cli_run(rival, out, sizeof out), 0); /* 2 of 3 grant */
    {   /* -w with a minority down: a waiter gets the lock when the holder
         * (lease 30 s) releases it on the two left, not at its lease's end */
        const char *holder[] = { "-S", S[0], "-S", S[1], "-S", S[2], "t:red", "sleep", "1", NULL };
        const char *waiter[] = { "-v", "-w", "20", "-S", S[0], "-S", S[1], "-S", S[2], "t:red", "true", NULL };
        char hold_out[300];
        unsigned long long t0 = rh_now_ms();
        path_in(hold_out, sizeof hold_out, "out.redhold");
        p = cli_start(holder, NULL, hold_out);
        CHECK(wait_key(&srv[0], "t:red", 1, 5000));
        CHECK_EQ_LL(cli_run(waiter, out, sizeof out), 0);
        CHECK_MSG(strstr(out, "waiting") && strstr(out, "acquired 't:red' on 2/3"), "%s", out);
        CHECK_MSG(rh_now_ms() - t0 < 15000, "the waiter took %llu ms", rh_now_ms() - t0);
        CHECK_EQ_LL(cli_wait(p, 10000), 0);
        CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:red"), 0);
    }
    rh_server_kill9(&srv[2]);
    CHECK_EQ_LL(cli_run(rival, out, sizeof out), EX_UNAVAILABLE);
    CHECK_MSG(strstr(out, "quorum") != NULL, "%s", out);
    CHECK(rh_server_restart(&srv[1], NULL) == 0);
    CHECK(rh_server_restart(&srv[2], NULL) == 0);
    snprintf(nowhere, sizeof nowhere, "127.0.0.1:%d", rh_free_port());
    CHECK_EQ_LL(cli_run(alone, out, sizeof out), EX_UNAVAILABLE);
}

/* COMMAND cannot be started (an fd limit: its pipes fail, "cannot start
 * COMMAND", exit 71): the lock is released where it was taken - one server
 * and Redlock on three - not left held for its lease. The limits go up
 * until COMMAND runs; the lower ones fail before the lock (no connection).
 * (--cluster: test_deploy.c, a lock granted through an ASK.) */
static void test_oserr(void) {
    int redlock;
    for (redlock = 0; redlock < 2; redlock++) {
        const char *one[] = { "-v", "-n", "-t", "30s", "-S", S[0], "t:oserr", "true", NULL };
        const char *three[] = { "-v", "-n", "-t", "30s", "-S", S[0], "-S", S[1], "-S", S[2], "t:oserr", "true", NULL };
        int lim, oserr = 0, ran = 0;
        for (lim = 4; lim <= 33 && !ran; lim++) {
            char out[8192];
            int rc, i;
            cli_nofile = lim < 33 ? lim : 0; /* (33: no limit) */
            rc = cli_run(redlock ? three : one, out, sizeof out);
            cli_nofile = 0;
            ran = rc == 0;
            if (rc == 71 && strstr(out, "cannot start COMMAND")) {
                oserr++;
                CHECK_MSG(strstr(out, "acquired") && !strstr(out, "could not release"), "ulimit -n %d:\n%s", lim, out);
            }
            for (i = 0; i < 3; i++)
                CHECK_MSG(rh_int(&srv[i], "EXISTS t:oserr") == 0, "ulimit -n %d: exit %d, the lock left on server %d:\n%s",
                          lim, rc, i, out);
        }
        CHECK_MSG(oserr > 0 && ran, "%s: no fd limit hit COMMAND's start (%d) or let it run (%d)",
                  redlock ? "Redlock" : "one server", oserr, ran);
    }
}

/* rlock paused past its lease: on resume COMMAND is stopped and rlock exits
 * 75 - also when COMMAND ignores SIGTERM. Renewal failing: stopped early. */
static void test_lost(void) {
    char out[4096], pidf[300], pidf2[300], cmd[800], cmd2[800], o1[300], o2[300], o3[300];
    const char *job[] = { "-t", "1000ms", "-S", S[0], "t:lost", "sh", "-c", cmd, NULL };
    const char *stubborn[] = { "-t", "1s", "-k", "0.3", "-S", S[0], "t:lost2", "sh", "-c", cmd2, NULL };
    const char *other[] = { "-n", "-S", S[0], "t:lost", "true", NULL };
    char s_own[64];
    const char *early[] = { "-t", "1.5", "-S", s_own, "t:early", "sleep", "30", NULL };
    rh_server own;
    unsigned long long t;
    long child;
    pid_t p;

    path_in(pidf, sizeof pidf, "lost.pid");
    path_in(o1, sizeof o1, "out.lost");
    snprintf(cmd, sizeof cmd, "echo $$ > %s; exec sleep 30", pidf);
    p = cli_start(job, NULL, o1);
    CHECK(wait_file(pidf, 5000));
    child = read_pid(pidf);
    kill(p, SIGSTOP);
    rh_sleep_ms(1600);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:lost"), 0);       /* the lease ran out */
    CHECK_EQ_LL(cli_run(other, out, sizeof out), 0);          /* so someone else could take it */
    t = rh_now_ms();
    kill(p, SIGCONT);
    CHECK_EQ_LL(cli_wait(p, 10000), EX_LOST);
    t = rh_now_ms() - t;
    CHECK_MSG(t < 3000, "rlock took %llu ms to stop COMMAND after resuming", t);
    CHECK(child > 0 && kill((pid_t)child, 0) != 0);         /* COMMAND is gone */
    read_file(o1, out, sizeof out);
    CHECK_MSG(strstr(out, "lost") && strstr(out, "the lease ran out before it could be renewed"), "%s", out);

    path_in(pidf2, sizeof pidf2, "lost2.pid");
    path_in(o2, sizeof o2, "out.lost2");
    snprintf(cmd2, sizeof cmd2, "trap '' TERM; echo $$ > %s; while :; do sleep 0.1; done", pidf2);
    p = cli_start(stubborn, NULL, o2);
    CHECK(wait_file(pidf2, 5000));
    child = read_pid(pidf2);
    kill(p, SIGSTOP);
    rh_sleep_ms(1400);
    kill(p, SIGCONT);
    CHECK_EQ_LL(cli_wait(p, 10000), EX_LOST);
    CHECK(child > 0 && kill((pid_t)child, 0) != 0);
    read_file(o2, out, sizeof out);
    CHECK_MSG(strstr(out, "SIGKILL") != NULL, "%s", out);

    /* the only server dies: renewals fail, COMMAND is stopped before the lease ends */
    if (rh_server_start(&own, NULL) != 0) { CHECK(0); return; }
    snprintf(s_own, sizeof s_own, "127.0.0.1:%d", own.port);
    path_in(o3, sizeof o3, "out.early");
    t = rh_now_ms();
    p = cli_start(early, NULL, o3);
    CHECK(wait_key(&own, "t:early", 1, 5000));
    rh_server_kill9(&own);
    CHECK_EQ_LL(cli_wait(p, 10000), EX_LOST);
    t = rh_now_ms() - t;
    CHECK_MSG(t < 4000, "stopped after %llu ms", t);
    read_file(o3, out, sizeof out);
    CHECK_MSG(strstr(out, "cannot be renewed") != NULL, "%s", out);
    rh_server_stop(&own);
}

/* The server paused (SIGSTOP, not killed) while COMMAND runs and ignores
 * SIGTERM: renewals time out, and COMMAND's whole group must be dead before
 * the key's expiry time on the server (PEXPIRETIME, read right after a
 * renewal landed and just before the pause): its heartbeats (wall-clock ms
 * written by COMMAND itself, so a slow test cannot make it fail) all come
 * before that instant. Then COMMAND exiting while a renewal is in flight on
 * a paused server: its own exit status, and the release still reaches the
 * server once it resumes. */
static void test_server_paused(void) {
    char out[8192], pidf[300], hb[300], go[300], cmd[900], cmd2[900], o[300], s_own[64], *last;
    const char *job[] = { "-t", "3s", "-k", "20", "-S", s_own, "t:paused", "sh", "-c", cmd, NULL };
    /* (9 s: COMMAND exits 3.1 s into the lease, ~2.8 s before rlock would give the lease up (its
     * validity down to ttl/3), the pause ending 0.3 s later. 3 s and then 6 s each ended once with
     * exit 75 in a loaded CI run - at 6 s, the sanitizer suites two at once, with ~1.8 s of margin;
     * rlock's words are printed if it happens again) */
    const char *quitter[] = { "-t", "9s", "--command-timeout", "1s", "-S", s_own, "t:paused2", "sh", "-c", cmd2, NULL };
    int rc;
    long long pttl, prev, expire_at, beat;
    unsigned long long t;
    rh_server own;
    long child;
    pid_t p;
    if (rh_server_start(&own, NULL) != 0) { CHECK(0); return; }
    snprintf(s_own, sizeof s_own, "127.0.0.1:%d", own.port);
    path_in(pidf, sizeof pidf, "paused.pid");
    path_in(hb, sizeof hb, "paused.hb");
    path_in(go, sizeof go, "paused.go");
    path_in(o, sizeof o, "out.paused");
    snprintf(cmd, sizeof cmd, "trap '' TERM; echo $$ > %s; while :; do date +%%s%%3N >> %s; sleep 0.01; done", pidf, hb);
    p = cli_start(job, NULL, o);
    CHECK(wait_file(pidf, 5000));
    child = read_pid(pidf);
    prev = rh_int(&own, "PTTL t:paused"); /* wait for a renewal: the next is ttl/3 away */
    for (t = rh_now_ms(); rh_now_ms() - t < 5000; prev = pttl) {
        pttl = rh_int(&own, "PTTL t:paused");
        if (pttl > prev) break;
        rh_sleep_ms(2);
    }
    expire_at = rh_int(&own, "PEXPIRETIME t:paused");
    rh_server_pause(&own);
    CHECK_EQ_LL(cli_wait(p, 15000), EX_LOST);
    CHECK(child > 0 && kill((pid_t)child, 0) != 0);
    read_file(hb, out, sizeof out);
    last = out + strlen(out);
    while (last > out && last[-1] == '\n') *--last = '\0';
    while (last > out && last[-1] != '\n') last--;
    beat = atoll(last);
    CHECK_MSG(expire_at > 0 && beat > 0 && beat < expire_at, "COMMAND ran at %lld, the key expired at %lld on the server",
              beat, expire_at);
    read_file(o, out, sizeof out);
    CHECK_MSG(strstr(out, "cannot be renewed") && strstr(out, "SIGKILL"), "%s", out);
    rh_server_resume(&own);

    snprintf(cmd2, sizeof cmd2, "while [ ! -e %s ]; do sleep 0.01; done; exit 7", go);
    p = cli_start(quitter, NULL, o);
    CHECK(wait_key(&own, "t:paused2", 1, 5000));
    prev = rh_int(&own, "PTTL t:paused2");
    for (t = rh_now_ms(); rh_now_ms() - t < 5000; prev = pttl) {
        pttl = rh_int(&own, "PTTL t:paused2");
        if (pttl > prev) break;
        rh_sleep_ms(2);
    }
    rh_server_pause(&own);
    rh_sleep_ms(3100); /* the next renewal (at ttl/3, 3 s) is in flight (it times out after 1 s) */
    CHECK(fclose(fopen(go, "w")) == 0);
    rh_sleep_ms(300);
    rh_server_resume(&own);
    rc = cli_wait(p, 10000);
    read_file(o, out, sizeof out);
    CHECK_MSG(rc == 7, "exit %d, want COMMAND's 7; rlock said: %s", rc, out);
    CHECK_EQ_LL(rh_int(&own, "EXISTS t:paused2"), 0);
    rh_server_stop(&own);
}

/* --fair: a waiter killed (kill -9) while queued does not hold up the
 * queue: the waiter behind it gets the lock when the holder releases, not
 * when the lease (30 s) or the dead waiter's queue entry would run out. */
static void test_fair_waiter_killed(void) {
    char out[4096], o[300], ob[300];
    const char *holder[] = { "--fair", "-S", S[0], "t:fairk", "sleep", "1.5", NULL };
    const char *waiter[] = { "--fair", "-S", S[0], "t:fairk", "sleep", "1", NULL };
    const char *next[] = { "--fair", "-S", S[0], "t:fairk", "true", NULL };
    unsigned long long t;
    pid_t h, a, b;
    path_in(o, sizeof o, "out.fairk");
    path_in(ob, sizeof ob, "out.fairk2");
    h = cli_start(holder, NULL, o);
    CHECK(wait_key(&srv[0], "t:fairk", 1, 5000));
    a = cli_start(waiter, NULL, o);
    for (t = rh_now_ms(); rh_now_ms() - t < 5000 && rh_int(&srv[0], "ZCARD {t:fairk}:waiters") < 1;) rh_sleep_ms(5);
    b = cli_start(next, NULL, ob);
    for (t = rh_now_ms(); rh_now_ms() - t < 5000 && rh_int(&srv[0], "ZCARD {t:fairk}:waiters") < 2;) rh_sleep_ms(5);
    CHECK_EQ_LL(rh_int(&srv[0], "ZCARD {t:fairk}:waiters"), 2);
    kill(a, SIGKILL);
    CHECK_EQ_LL(cli_wait(a, 5000), 128 + SIGKILL);
    CHECK_EQ_LL(cli_wait(h, 10000), 0);
    t = rh_now_ms();
    CHECK_EQ_LL(cli_wait(b, 20000), 0);
    t = rh_now_ms() - t;
    read_file(ob, out, sizeof out);
    CHECK_MSG(t < 10000, "the waiter behind the killed one got the lock %llu ms after the release: %s", t, out);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:fairk"), 0);
}

/* SIGTERM/SIGINT/SIGHUP reach COMMAND; the lock is released after. A
 * signal while waiting ends the wait, leaving the holder alone. */
static void test_signals(void) {
    char out[4096], pidf[300], mark[300], cmd[800], o[300], ow[300];
    const char *trapper[] = { "-S", S[0], "t:sig", "sh", "-c", cmd, NULL };
    const char *sleeper[] = { "-S", S[0], "t:sig", "sleep", "30", NULL };
    const char *waiter[] = { "-v", "-S", S[0], "t:sig", "true", NULL };
    const int sigs[] = { SIGINT, SIGHUP };
    unsigned long long t;
    pid_t p, w;
    size_t i;
    path_in(pidf, sizeof pidf, "sig.pid");
    path_in(mark, sizeof mark, "sig.mark");
    path_in(o, sizeof o, "out.sig");
    path_in(ow, sizeof ow, "out.sigwait");
    snprintf(cmd, sizeof cmd, "trap 'echo term > %s; exit 3' TERM; echo $$ > %s; while :; do sleep 0.05; done",
             mark, pidf);
    p = cli_start(trapper, NULL, o);
    CHECK(wait_file(pidf, 5000));
    kill(p, SIGTERM);
    CHECK_EQ_LL(cli_wait(p, 10000), 3);
    read_file(mark, out, sizeof out);
    CHECK(strncmp(out, "term", 4) == 0);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:sig"), 0);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        p = cli_start(sleeper, NULL, o);
        CHECK(wait_key(&srv[0], "t:sig", 1, 5000));
        rh_sleep_ms(50);
        kill(p, sigs[i]);
        CHECK_EQ_LL(cli_wait(p, 10000), 128 + sigs[i]);
        CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:sig"), 0);
    }
    /* a waiter interrupted */
    p = cli_start(sleeper, NULL, o);
    CHECK(wait_key(&srv[0], "t:sig", 1, 5000));
    w = cli_start(waiter, NULL, ow);
    t = rh_now_ms();
    while (rh_now_ms() - t < 5000) {
        read_file(ow, out, sizeof out);
        if (strstr(out, "waiting")) break;
        rh_sleep_ms(10);
    }
    t = rh_now_ms();
    kill(w, SIGTERM);
    CHECK_EQ_LL(cli_wait(w, 5000), 128 + SIGTERM);
    CHECK_MSG(rh_now_ms() - t < 2000, "the waiter took %llu ms to stop", rh_now_ms() - t);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:sig"), 1); /* the holder still has it */
    kill(p, SIGTERM);
    CHECK_EQ_LL(cli_wait(p, 10000), 128 + SIGTERM);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:sig"), 0);
}

/* COMMAND ends but leaves a process running in its process group (`job &`
 * without `wait`): the lock is held until that one ends too, as flock(1)
 * holds it while the child keeps the inherited descriptor - it was
 * released at once and the leftover ran unprotected. Then COMMAND's own
 * status. A signal while waiting for it is passed on to the group. */
static int proc_running(long pid);
static void test_background(void) {
    char out[4096], pidf[300], cmd[800], o[300];
    const char *job[] = { "-v", "-t", "1", "-S", S[0], "t:bg", "sh", "-c", cmd, NULL };
    const char *rival[] = { "-n", "-S", S[0], "t:bg", "true", NULL };
    long bg;
    int rc;
    pid_t p;
    path_in(pidf, sizeof pidf, "bg.pid");
    path_in(o, sizeof o, "out.bg");
    snprintf(cmd, sizeof cmd, "sleep 1.5 & echo $! > %s; exit 5", pidf);
    p = cli_start(job, NULL, o);
    CHECK(wait_file(pidf, 5000));
    bg = read_pid(pidf);
    rh_sleep_ms(300); /* COMMAND (sh) has exited; its sleep runs */
    CHECK(bg > 0 && proc_running(bg));
    rc = cli_run(rival, out, sizeof out);
    CHECK_MSG(rc == 1, "a rival got the lock while COMMAND's background process ran (exit %d)", rc);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:bg"), 1);
    rc = cli_wait(p, 10000);
    read_file(o, out, sizeof out);
    CHECK_MSG(rc == 5, "exit %d:\n%s", rc, out);
    CHECK(!proc_running(bg));
    CHECK_MSG(strstr(out, "renewed") != NULL, "%s", out); /* (lease 1 s, held ~1.5 s) */
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:bg"), 0);
    /* SIGTERM while it waits for the leftover: passed on to it */
    snprintf(cmd, sizeof cmd, "sleep 30 & echo $! > %s; exit 0", pidf);
    unlink(pidf);
    p = cli_start(job, NULL, o);
    CHECK(wait_file(pidf, 5000));
    bg = read_pid(pidf);
    rh_sleep_ms(300);
    kill(p, SIGTERM);
    rc = cli_wait(p, 10000);
    CHECK_MSG(rc == 0 && bg > 0 && !proc_running(bg), "exit %d, leftover %s", rc,
              bg > 0 && proc_running(bg) ? "still runs" : "gone");
    if (bg > 0 && proc_running(bg)) kill((pid_t)bg, SIGKILL);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:bg"), 0);
#ifdef __linux__
    {   /* the guard killed while rlock waits for the leftover: that is
         * killed before the lock is released (exit 70, as when the guard
         * dies under COMMAND) - rlock spun on the guard's closed pipe */
        char path[64];
        long guard = 0;
        FILE *f;
        unlink(pidf);
        p = cli_start(job, NULL, o);
        CHECK(wait_file(pidf, 5000));
        bg = read_pid(pidf);
        rh_sleep_ms(300);
        snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)p, (long)p);
        if ((f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%ld", &guard) != 1) guard = 0;
            fclose(f);
        }
        CHECK(guard > 0);
        if (guard > 0) kill((pid_t)guard, SIGKILL);
        rc = cli_wait(p, 10000);
        read_file(o, out, sizeof out);
        CHECK_MSG(rc == 70 && bg > 0 && !proc_running(bg), "exit %d, leftover %s:\n%s", rc,
                  bg > 0 && proc_running(bg) ? "still runs" : "gone", out);
        if (bg > 0 && proc_running(bg)) kill((pid_t)bg, SIGKILL);
        CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:bg"), 0);
    }
#endif
}

/* AUTH from every source; refused AUTH is 77 and never shows the password. */
static void test_auth(void) {
    const char *const extra[] = { "--requirepass", "pw1", NULL };
    rh_server a;
    char sa[64], url[96], pwfile[300], badfile[300], out[4096];
    const char *plain[] = { "-S", sa, "t:auth", "true", NULL };
    const char *viaurl[] = { "-S", url, "t:auth", "true", NULL };
    const char *viafile[] = { "--password-file", pwfile, "-S", sa, "t:auth", "true", NULL };
    const char *viabad[] = { "--password-file", badfile, "-S", sa, "t:auth", "true", NULL };
    const char *env_ok[] = { "RLOCK_PASSWORD=pw1", NULL };
    const char *env_cli[] = { "REDISCLI_AUTH=pw1", NULL };
    const char *env_bad[] = { "RLOCK_PASSWORD=WrongSecret42", NULL };
    FILE *f;
    if (rh_server_start(&a, extra) != 0) { CHECK(0); return; }
    snprintf(sa, sizeof sa, "127.0.0.1:%d", a.port);
    snprintf(url, sizeof url, "redis://:pw1@127.0.0.1:%d", a.port);
    path_in(pwfile, sizeof pwfile, "pw");
    path_in(badfile, sizeof badfile, "badpw");
    if ((f = fopen(pwfile, "w")) != NULL) { fputs("pw1\n", f); fclose(f); }
    if ((f = fopen(badfile, "w")) != NULL) { fputs("AlsoWrong77\r\n", f); fclose(f); }
    CHECK_EQ_LL(cli_run(plain, out, sizeof out), EX_NOPERM);
    CHECK_EQ_LL(cli_run_env(plain, env_ok, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run_env(plain, env_cli, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run(viafile, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run(viaurl, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run_env(plain, env_bad, out, sizeof out), EX_NOPERM);
    CHECK_MSG(strstr(out, "WrongSecret42") == NULL, "the password was printed: %s", out);
    CHECK_EQ_LL(cli_run(viabad, out, sizeof out), EX_NOPERM);
    CHECK_MSG(strstr(out, "AlsoWrong77") == NULL, "the password was printed: %s", out);
    rh_server_stop(&a);
}

/* A password in a redis:// or rediss:// URL is wiped from rlock's argv, so
 * ps shows it only for the moment before the options are read: checked
 * once rlock connects (to a socket here that never answers). rediss:// was
 * left as given: the password in ps for the whole run. */
static void test_url_password_hidden(void) {
    static const char *const schemes[] = { "redis", "rediss" };
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    size_t k;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 4) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &sl) != 0) {
        CHECK(0);
        if (ls >= 0) close(ls);
        return;
    }
    for (k = 0; k < 2; k++) {
        char url[128], o[300], out[4096], path[64], cmdline[4096];
        const char *args[] = { "--connect-timeout", "2", "-S", url, "t:pw", "true", NULL };
        struct pollfd pf;
        int fd = -1, rc;
        unsigned long long end = rh_now_ms() + 5000;
        FILE *f;
        size_t n = 0, i;
        pid_t p;
        snprintf(url, sizeof url, "%s://:HiddenPw42@127.0.0.1:%d", schemes[k], ntohs(sa.sin_port));
        path_in(o, sizeof o, "out.pwurl");
        p = cli_start(args, NULL, o);
        pf.fd = ls;
        pf.events = POLLIN;
        while (fd < 0 && rh_now_ms() < end && waitpid(p, NULL, WNOHANG) == 0) /* (exited: reaped; see below) */
            if (poll(&pf, 1, 20) == 1) fd = accept(ls, NULL, NULL);
        snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)p);
        if (fd >= 0 && (f = fopen(path, "r")) != NULL) {
            n = fread(cmdline, 1, sizeof cmdline - 1, f);
            fclose(f);
        }
        for (i = 0; i < n; i++) if (cmdline[i] == '\0') cmdline[i] = ' ';
        cmdline[n] = '\0';
        if (fd >= 0) close(fd);
        rc = fd >= 0 ? cli_wait(p, 10000) : -1;
        read_file(o, out, sizeof out);
        if (fd < 0 && k == 1 && strstr(out, "without TLS")) { printf("rediss:// password in ps: no TLS in this rlock\n"); continue; }
        CHECK_MSG(fd >= 0 && n > 0, "%s: rlock did not connect:\n%s", schemes[k], out);
        CHECK_MSG(strstr(cmdline, "HiddenPw42") == NULL && strstr(cmdline, ":**********@") != NULL,
                  "%s:// password shown by ps: %s", schemes[k], cmdline);
        CHECK_MSG(strstr(out, "HiddenPw42") == NULL, "%s", out);
        CHECK_MSG(rc == EX_UNAVAILABLE, "%s: exit %d:\n%s", schemes[k], rc, out);
    }
    close(ls);
}

/* A key that is not an rlock lock: 65 at once (not a wait for ever), untouched. */
static void test_foreign(void) {
    char out[4096], got[64];
    const char *plain[] = { "-S", S[0], "t:foreign", "true", NULL };
    const char *hash[] = { "-S", S[0], "t:hash", "true", NULL };
    const char *st[] = { "status", "-S", S[0], "t:hash", NULL };
    unsigned long long t = rh_now_ms();
    rh_str(&srv[0], got, sizeof got, "SET t:foreign 1");
    rh_int(&srv[0], "HSET t:hash f 1");
    rh_int(&srv[0], "PEXPIRE t:hash 60000");
    CHECK_EQ_LL(cli_run(plain, out, sizeof out), EX_DATAERR);
    CHECK_EQ_LL(cli_run(hash, out, sizeof out), EX_DATAERR);
    CHECK(rh_now_ms() - t < 5000);
    rh_str(&srv[0], got, sizeof got, "GET t:foreign");
    CHECK(strcmp(got, "1") == 0);
    /* rlock status on a program's hash whose values are not numbers: 65, not
     * an rlock lock (the inspect script failed on them: 69, "redis error") */
    rh_int(&srv[0], "HSET t:hash f v");
    rh_int(&srv[0], "PERSIST t:hash");
    CHECK_MSG(cli_run(st, out, sizeof out) == EX_DATAERR && strstr(out, "not an rlock lock") != NULL,
              "status on a hash of text: '%s'", out);
    rh_int(&srv[0], "PEXPIRE t:hash 60000");
    CHECK_MSG(cli_run(st, out, sizeof out) != EX_UNAVAILABLE && strstr(out, "cannot inspect") == NULL,
              "status on a hash of text with a TTL: '%s'", out);
    rh_int(&srv[0], "DEL t:foreign t:hash");
}

/* --replicas N on a server without N replicas: every grant is released again
 * (too few WAIT acks). That is exit 69, COMMAND not run and no key left - at
 * once with -n, and also with no -w: it used to count as "held" and wait for
 * ever; now it gives up as when no quorum answers (10 s). */
static void test_replicas_short(void) {
    char out[4096], f[300];
    const char *nb[] = { "-n", "--replicas", "1", "-S", S[0], "t:repl", "touch", f, NULL };
    const char *forever[] = { "--replicas", "1", "-S", S[0], "t:repl", "touch", f, NULL };
    path_in(f, sizeof f, "repl.ran");
    CHECK_EQ_LL(cli_run(nb, out, sizeof out), EX_UNAVAILABLE);
    CHECK_MSG(strstr(out, "replica") != NULL, "-n --replicas 1: '%s'", out);
    CHECK_EQ_LL(cli_run(forever, out, sizeof out), EX_UNAVAILABLE);
    CHECK_MSG(strstr(out, "replicas acknowledged") != NULL, "--replicas 1, no -w: '%s'", out);
    CHECK(access(f, F_OK) != 0);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:repl"), 0);
}

/* rlock check --help names the options as they parse: -S (and -s) for a
 * server, --connect-timeout a TIME in seconds like rlock's (it said "MS
 * [1000]": 1000 was 1000 s); the reply timeout it sets shows in its message. */
static void test_check_help(void) {
    char out[8192];
    const char *h[] = { "check", "--help", NULL };
    const char *silent[] = { "check", "--connect-timeout", "0.2", "-S", NULL, NULL };
    char addr[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    CHECK_EQ_LL(cli_run(h, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "-S, -s, --server") != NULL, "rlock check --help: no '-S, -s, --server'");
    CHECK_MSG(strstr(out, "--connect-timeout TIME") != NULL && strstr(out, "[1]") != NULL,
              "rlock check --help: --connect-timeout is not a TIME [1]");
    CHECK_MSG(strstr(out, "MS ") == NULL, "rlock check --help still says MS");
    /* a listener that accepts (the kernel's backlog) and never answers */
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 4) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
    silent[4] = addr;
    CHECK_EQ_LL(cli_run(silent, out, sizeof out), 2);
    CHECK_MSG(strstr(out, "within 200 ms") != NULL, "check --connect-timeout 0.2: '%s'", out);
    if (fd >= 0) close(fd);
    {   /* a bad value that rlock check parses as rlock does: its own usage
         * line and help, not rlock's ("Usage: rlock [OPTIONS] RESOURCE COMMAND") */
        const char *const bad[][4] = { { "check", "--connect-timeout", "0", NULL }, { "check", "-S", "", NULL },
                                        { "check", "--password-file", "/nonexistent/rlock-pw", NULL },
                                        { "check", "127.0.0.1:0", NULL } };
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int rc = cli_run(bad[i], out, sizeof out);
            CHECK_MSG(rc == EX_USAGE && strncmp(out, "rlock check: ", 13) == 0 && count_lines(out) == 3 &&
                      strstr(out, "Usage: rlock check [OPTIONS] [SERVER...]") && strstr(out, "rlock check --help"),
                      "rlock check %s %s: exit %d:\n%s", bad[i][1], bad[i][2] ? bad[i][2] : "", rc, out);
        }
    }
}

/* README exit 65: a RESOURCE held as one kind of lock is refused (exit 65,
 * COMMAND not run, the holder's key untouched) to rlock invoked as another -
 * plain against -s, -x against plain, --limit against -s, and the reverse. */
static void test_kind_mismatch(void) {
    char out[4096], hold_out[300], f[300], before[64], after[64];
    static const char *const kinds[3][3] = { { NULL }, { "-s", NULL }, { "--limit", "2", NULL } };
    int h, o;
    path_in(f, sizeof f, "kind.ran");
    for (h = 0; h < 3; h++) {
        const char *holder[10];
        pid_t hp;
        int n = 0, k;
        for (k = 0; kinds[h][k]; k++) holder[n++] = kinds[h][k];
        holder[n++] = "-S"; holder[n++] = S[0]; holder[n++] = "t:kind"; holder[n++] = "sleep"; holder[n++] = "30";
        holder[n] = NULL;
        snprintf(hold_out, sizeof hold_out, "%s/kind.hold", tmp);
        hp = cli_start(holder, NULL, hold_out);
        CHECK(wait_key(&srv[0], "t:kind", 1, 5000));
        rh_str(&srv[0], before, sizeof before, "TYPE t:kind");
        for (o = 0; o < 3; o++) {
            const char *other[10];
            if (o == h) continue;
            n = 0;
            other[n++] = "-n";
            for (k = 0; kinds[o][k]; k++) other[n++] = kinds[o][k];
            if (o == 0 && h == 1) other[n++] = "-x"; /* -x: the write side of the same kind, no conflict */
            other[n++] = "-S"; other[n++] = S[0]; other[n++] = "t:kind"; other[n++] = "touch"; other[n++] = f;
            other[n] = NULL;
            if (o == 0 && h == 1) {
                CHECK_EQ_LL(cli_run(other, out, sizeof out), 1); /* held by a reader: a conflict */
                continue;
            }
            CHECK_MSG(cli_run(other, out, sizeof out) == EX_DATAERR, "holder kind %d, other kind %d: '%s'", h, o, out);
            CHECK_MSG(strstr(out, "of this kind") != NULL, "holder kind %d, other kind %d: '%s'", h, o, out);
        }
        rh_str(&srv[0], after, sizeof after, "TYPE t:kind");
        CHECK(strcmp(before, after) == 0);
        CHECK(access(f, F_OK) != 0);
        kill(hp, SIGTERM);
        CHECK(cli_wait(hp, 10000) != -1);
        CHECK(wait_key(&srv[0], "t:kind", 0, 5000));
    }
}

/* A process that exists and is not a zombie (a zombie has stopped running;
 * whether its parent reaps it is not rlock's doing). */
static int proc_running(long pid) {
    char path[64], buf[512], *p;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    read_file(path, buf, sizeof buf);
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Read up to cap pids, one per line, from path; returns how many. */
static int read_pids(const char *path, long *pids, int cap) {
    char buf[1024], *p = buf;
    int n = 0;
    read_file(path, buf, sizeof buf);
    while (n < cap && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (v > 0) pids[n++] = v;
        p = end;
    }
    return n;
}

/* FAULTS.md row 27: a conflict never runs COMMAND, whatever -E says, and
 * exits exactly N - also N = 0 (it was read as "acquired": COMMAND started,
 * then was killed, exit 75). */
static void test_conflict_exit0(void) {
    char out[4096], f[300], hold_out[300];
    const char *holder[] = { "-S", S[0], "t:e0", "sleep", "30", NULL };
    const char *nb0[] = { "-n", "-E", "0", "-S", S[0], "t:e0", "touch", f, NULL };
    const char *w0[] = { "-w", "200ms", "-E", "0", "-S", S[0], "t:e0", "touch", f, NULL };
    const char *nb7[] = { "-n", "-E", "7", "-S", S[0], "t:e0", "touch", f, NULL };
    int i;
    pid_t h;
    path_in(f, sizeof f, "e0-ran");
    path_in(hold_out, sizeof hold_out, "out.e0holder");
    h = cli_start(holder, NULL, hold_out);
    CHECK(wait_key(&srv[0], "t:e0", 1, 5000));
    for (i = 0; i < 5; i++) {
        CHECK_EQ_LL(cli_run(nb0, out, sizeof out), 0);
        CHECK_EQ_LL(cli_run(w0, out, sizeof out), 0);
        CHECK_EQ_LL(cli_run(nb7, out, sizeof out), 7);
    }
    CHECK_MSG(access(f, F_OK) != 0, "COMMAND ran while another held the lock");
    kill(h, SIGTERM);
    CHECK_EQ_LL(cli_wait(h, 10000), 128 + SIGTERM);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:e0"), 0);
}

/* FAULTS.md row 26: rlock killed with SIGKILL while COMMAND runs: COMMAND's
 * whole process tree stops at once - background children, a grandchild
 * under another shell, and one that left the process group with setsid -
 * not only the direct child. Also when rlock's whole process group is
 * killed (a CI timeout), which must not take the guard along. The lock is
 * left to expire by its TTL. */
static void kill9_tree(int whole_group) {
    char out[4096], pidf[300], cmd[2000], o[300];
    const char *job[] = { "-t", "3", "-S", S[0], "t:k9", "sh", "-c", cmd, NULL };
    long pids[8];
    int n = 0, i, alive = 0;
    unsigned long long t0, t;
    pid_t p;
    path_in(pidf, sizeof pidf, "k9.pids");
    path_in(o, sizeof o, "out.k9");
    snprintf(cmd, sizeof cmd,
             "sleep 30 & echo $! >> %s; setsid sleep 30 & echo $! >> %s; "
             "sh -c 'sleep 30 & echo $! >> %s; wait' & echo $! >> %s; echo $$ >> %s; wait",
             pidf, pidf, pidf, pidf, pidf);
    unlink(pidf);
    cli_setpgid = whole_group;
    p = cli_start(job, NULL, o);
    cli_setpgid = 0;
    t0 = rh_now_ms();
    while (rh_now_ms() - t0 < 5000 && (n = read_pids(pidf, pids, 8)) < 5) rh_sleep_ms(10);
    CHECK_MSG(n == 5, "COMMAND's tree reported %d of 5 pids", n);
    for (i = 0; i < n; i++) CHECK_MSG(proc_running(pids[i]), "pid %ld not running before the kill", pids[i]);
    kill(whole_group ? -p : p, SIGKILL); /* the group: rlock and what shares it (not the guard) */
    CHECK_EQ_LL(cli_wait(p, 5000), 128 + SIGKILL);
    t0 = rh_now_ms();
    do {
        for (alive = 0, i = 0; i < n; i++) alive += proc_running(pids[i]);
        if (!alive) break;
        rh_sleep_ms(5);
    } while (rh_now_ms() - t0 < 2000);
    t = rh_now_ms() - t0;
    CHECK_MSG(alive == 0, "%d of COMMAND's %d processes still run %llu ms after rlock%s was killed", alive, n, t,
              whole_group ? "'s process group" : "");
    for (i = 0; i < n; i++) if (proc_running(pids[i])) kill((pid_t)pids[i], SIGKILL); /* never leave them */
    if (!alive) printf("kill -9 rlock%s: COMMAND's %d processes gone %llu ms after rlock's death\n",
                       whole_group ? "'s process group" : "", n, t);
    CHECK(rh_int(&srv[0], "PTTL t:k9") > 0); /* the lock expires by itself */
    rh_int(&srv[0], "DEL t:k9");
    (void)out;
}

/* The guard killed (kill -9 of the wrong "rlock" in ps, the OOM killer):
 * COMMAND goes with it (PDEATHSIG), and rlock, still alive, releases the
 * lock - so what COMMAND started must be gone first: a background child,
 * one under another shell, one that left the group with setsid. (They were
 * orphaned to init and ran on, the lock released under them: exit 70.)
 * by_name: `killall -9 rlock`, done here to this rlock's processes only
 * (every one whose name is "rlock"): it took the guard along with rlock,
 * nobody was left to kill what COMMAND started, and that ran on without
 * the lock. The guard is named "rlock-guard" now: killall spares it.
 * by_name 2: `pkill -9 -f t:guard` (a pattern naming what rlock runs), done
 * here to this rlock's processes only: the guard's command line was rlock's
 * (a fork), so it went too and 4 of 5 ran on; it now says "rlock-guard". */
static int proc_is_named(long pid, const char *name) {
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    read_file(path, buf, sizeof buf);
    buf[strcspn(buf, "\n")] = '\0';
    return strcmp(buf, name) == 0;
}

/* pid's command line (NULs as spaces, as pkill -f and ps see it) has needle. */
static int proc_cmdline_has(long pid, const char *needle) {
    char path[64], buf[4096];
    size_t n, i;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    if ((f = fopen(path, "r")) == NULL) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (i = 0; i < n; i++) if (buf[i] == '\0') buf[i] = ' ';
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void guard_killed(int by_name) {
#ifdef __linux__
    char out[4096], pidf[300], cmd[2000], o[300], path[64];
    const char *job[] = { "-t", "3", "-S", S[0], "t:guard", "sh", "-c", cmd, NULL };
    const char *rival[] = { "-n", "-S", S[0], "t:guard", "true", NULL };
    long pids[8], guard = 0;
    int n = 0, i, alive = 0, rc;
    unsigned long long t0;
    FILE *f;
    pid_t p;
    path_in(pidf, sizeof pidf, "guard.pids");
    path_in(o, sizeof o, "out.guard");
    snprintf(cmd, sizeof cmd,
             "sleep 30 & echo $! >> %s; setsid sleep 30 & echo $! >> %s; "
             "sh -c 'sleep 30 & echo $! >> %s; wait' & echo $! >> %s; echo $$ >> %s; wait",
             pidf, pidf, pidf, pidf, pidf);
    unlink(pidf);
    p = cli_start(job, NULL, o);
    t0 = rh_now_ms();
    while (rh_now_ms() - t0 < 5000 && (n = read_pids(pidf, pids, 8)) < 5) rh_sleep_ms(10);
    CHECK_MSG(n == 5, "COMMAND's tree reported %d of 5 pids", n);
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)p, (long)p);
    if ((f = fopen(path, "r")) != NULL) { /* rlock's one child: the guard */
        if (fscanf(f, "%ld", &guard) != 1) guard = 0;
        fclose(f);
    }
    CHECK(guard > 0);
    if (by_name == 1) { /* killall -9 rlock */
        if (proc_is_named(guard, "rlock") || proc_is_named(guard, "rlock-asan")) kill((pid_t)guard, SIGKILL);
        kill(p, SIGKILL);
    } else if (by_name == 2) { /* pkill -9 -f t:guard */
        int both = proc_cmdline_has(guard, "t:guard");
        CHECK(proc_cmdline_has(p, "t:guard"));
        kill(p, SIGSTOP); /* every match dies at once: stopped first, none acts on another's death */
        if (both) {
            kill((pid_t)guard, SIGSTOP);
            kill((pid_t)guard, SIGKILL);
        }
        kill(p, SIGKILL);
    } else if (guard > 0) {
        kill((pid_t)guard, SIGKILL);
    }
    rc = cli_wait(p, 15000);
    t0 = rh_now_ms();
    do { /* (after rlock's death the guard kills them; after the guard's, rlock did before it exited) */
        for (alive = 0, i = 0; i < n; i++) alive += proc_running(pids[i]);
        if (!alive) break;
        rh_sleep_ms(5);
    } while (by_name && rh_now_ms() - t0 < 2000);
    read_file(o, out, sizeof out);
    CHECK_MSG(alive == 0, "%s: %d of COMMAND's %d processes still run (rlock exited %d):\n%s",
              by_name == 2 ? "pkill -9 -f t:guard" : by_name ? "killall -9 rlock" : "the guard killed", alive, n, rc,
              out);
    for (i = 0; i < n; i++) if (proc_running(pids[i])) kill((pid_t)pids[i], SIGKILL); /* never leave them */
    if (by_name) {
        CHECK_EQ_LL(rc, 128 + SIGKILL);
        rh_int(&srv[0], "DEL t:guard"); /* (it would expire by its TTL) */
        return;
    }
    CHECK_MSG(rc == 70 && strstr(out, "guard process ended unexpectedly"), "exit %d:\n%s", rc, out);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:guard"), 0); /* released, as nothing of COMMAND runs */
    CHECK_EQ_LL(cli_run(rival, out, sizeof out), 0);
#else
    (void)by_name;
#endif
}

/* pkill rlock / pkill -f PATTERN with its default SIGTERM reach the guard
 * too (named rlock-guard, it matches the pattern rlock): it ignores the
 * signals that are rlock's to pass on, rlock passes SIGTERM on to COMMAND's
 * group, and exits 143 once that ended, the lock released, nothing left. */
static void pattern_term(void) {
#ifdef __linux__
    char out[4096], pidf[300], cmd[800], o[300], path[64];
    const char *job[] = { "-t", "3", "-S", S[0], "t:pterm", "sh", "-c", cmd, NULL };
    long pids[4], guard = 0;
    int n = 0, i, alive = 0, rc;
    unsigned long long t0;
    FILE *f;
    pid_t p;
    path_in(pidf, sizeof pidf, "pterm.pids");
    path_in(o, sizeof o, "out.pterm");
    snprintf(cmd, sizeof cmd, "sleep 30 & echo $! >> %s; echo $$ >> %s; wait", pidf, pidf);
    unlink(pidf);
    p = cli_start(job, NULL, o);
    t0 = rh_now_ms();
    while (rh_now_ms() - t0 < 5000 && (n = read_pids(pidf, pids, 4)) < 2) rh_sleep_ms(10);
    CHECK_MSG(n == 2, "COMMAND's tree reported %d of 2 pids", n);
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)p, (long)p);
    if ((f = fopen(path, "r")) != NULL) {
        if (fscanf(f, "%ld", &guard) != 1) guard = 0;
        fclose(f);
    }
    CHECK(guard > 0 && proc_cmdline_has(guard, "rlock"));
    if (guard > 0) kill((pid_t)guard, SIGTERM); /* the guard first: the worst order */
    kill(p, SIGTERM);
    rc = cli_wait(p, 10000);
    read_file(o, out, sizeof out);
    CHECK_MSG(rc == 128 + SIGTERM, "pkill (SIGTERM) of rlock and its guard: exit %d:\n%s", rc, out);
    for (i = 0; i < n; i++) alive += proc_running(pids[i]);
    CHECK_MSG(alive == 0, "pkill (SIGTERM): %d of COMMAND's %d processes still run", alive, n);
    for (i = 0; i < n; i++) if (proc_running(pids[i])) kill((pid_t)pids[i], SIGKILL);
    CHECK(guard <= 0 || !proc_running(guard));
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:pterm"), 0); /* released */
#endif
}

static void test_kill9_tree(void) {
    kill9_tree(0);
    kill9_tree(1);
    guard_killed(0);
    guard_killed(1);
    guard_killed(2);
    pattern_term();
}

/* Where nobody reaps orphans (a container whose PID 1 does not: simulated
 * by making this test a child subreaper that does not reap), a zombie in
 * COMMAND's process group must not count as alive: rlock reaps orphans (its
 * guard is a subreaper) and does not wait the whole --kill-after. */
static void test_zombie(void) {
#ifdef __linux__
    char out[4096], gpf[300], pidf[300], cmd[800], o[300];
    const char *job[] = { "-t", "1000ms", "-k", "5", "-S", S[0], "t:zombie", "sh", "-c", cmd, NULL };
    unsigned long long t;
    long gpid;
    int st;
    pid_t p, r;
    path_in(gpf, sizeof gpf, "zombie.gpid");
    path_in(pidf, sizeof pidf, "zombie.pid");
    path_in(o, sizeof o, "out.zombie");
    /* the inner sh leaves a short sleep behind, orphaned; COMMAND goes on */
    snprintf(cmd, sizeof cmd, "sh -c 'sleep 0.2 & echo $! > %s'; echo $$ > %s; exec sleep 30", gpf, pidf);
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    p = cli_start(job, NULL, o);
    CHECK(wait_file(pidf, 5000));
    gpid = read_pid(gpf);
    CHECK(gpid > 0);
    kill(p, SIGSTOP); /* past the lease: on resume COMMAND is stopped, then its group is awaited */
    rh_sleep_ms(1500);
    t = rh_now_ms();
    kill(p, SIGCONT);
    CHECK_EQ_LL(cli_wait(p, 15000), EX_LOST);
    t = rh_now_ms() - t;
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
    read_file(o, out, sizeof out);
    CHECK_MSG(t < 3000, "rlock took %llu ms after resuming (--kill-after 5000): it waited for a zombie\n%s", t, out);
    CHECK_MSG(strstr(out, "did not exit after SIGTERM") == NULL, "%s", out);
    printf("zombie in COMMAND's group: rlock exited %llu ms after resuming (--kill-after 5000)\n", t);
    r = gpid > 0 ? waitpid((pid_t)gpid, &st, WNOHANG) : -1;
    CHECK_MSG(r < 0 && errno == ECHILD, "the orphan %ld was left to this process (a zombie here)", gpid);
    rh_int(&srv[0], "DEL t:zombie");
#endif
}

/* The lock deleted or overwritten under a running COMMAND: the renewal is
 * refused while validity is left, and rlock says so (not "ran out"). */
static void test_taken(void) {
    char out[4096], o[300], got[64];
    const char *job[] = { "-t", "3000ms", "-S", S[0], "t:taken", "sleep", "30", NULL };
    const char *how[] = { "DEL t:taken", "SET t:taken someone-else PX 20000" };
    const char *force[] = { "unlock", "--force", "-S", S[0], "t:taken", NULL };
    unsigned long long t;
    size_t i;
    pid_t p;
    path_in(o, sizeof o, "out.taken");
    for (i = 0; i < 2; i++) {
        p = cli_start(job, NULL, o);
        CHECK(wait_key(&srv[0], "t:taken", 1, 5000));
        rh_str(&srv[0], got, sizeof got, how[i]);
        t = rh_now_ms();
        CHECK_EQ_LL(cli_wait(p, 10000), EX_LOST);
        t = rh_now_ms() - t;
        CHECK_MSG(t < 3000, "%s: stopped after %llu ms", how[i], t);
        read_file(o, out, sizeof out);
        CHECK_MSG(strstr(out, "the lock was deleted or taken by another client") != NULL, "%s: %s", how[i], out);
        CHECK_MSG(strstr(out, "ran out") == NULL, "%s: %s", how[i], out);
    }
    CHECK(rh_str(&srv[0], got, sizeof got, "GET t:taken") == REDIS_REPLY_STRING && strcmp(got, "someone-else") == 0);
    rh_int(&srv[0], "DEL t:taken");
    /* an operator's rlock unlock --force: found at the next renewal (ttl/3) */
    p = cli_start(job, NULL, o);
    CHECK(wait_key(&srv[0], "t:taken", 1, 5000));
    CHECK_EQ_LL(cli_run(force, got, sizeof got), 0);
    CHECK_EQ_LL(cli_wait(p, 10000), EX_LOST);
    read_file(o, out, sizeof out);
    CHECK_MSG(strstr(out, "the lock was deleted or taken by another client") != NULL, "--force: %s", out);
}

/* The longest RESOURCE (RLOCK_MAX_KEY_LEN bytes) works with --fence (it was
 * exit 70 after connecting); one more byte is a usage error. */
static void test_longest_key(void) {
    static char res[300];
    char out[4096];
    const char *fenced[] = { "--fence", "-S", S[0], res, "sh", "-c", "test \"$RLOCK_FENCE\" -ge 1", NULL };
    const char *waiter[] = { "-w", "5", "--fence", "-S", S[0], res, "true", NULL };
    char fence_key[320];
    memset(res, 'r', 256);
    res[256] = '\0';
    CHECK_EQ_LL(cli_run(fenced, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run(waiter, out, sizeof out), 0);
    snprintf(fence_key, sizeof fence_key, "{%s}:fence", res);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS %s", fence_key), 1);
    rh_int(&srv[0], "DEL %s", fence_key);
    res[256] = 'r';
    res[257] = '\0';
    CHECK_EQ_LL(cli_run(fenced, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "longer than 256") != NULL, "%s", out);
}

/* FAULTS.md row 28: one server under two names would give it two votes and
 * rlock waited on itself. By address (127.0.0.1 and localhost): refused
 * before anything is sent. A TCP port and its unix socket: the servers'
 * run_ids match (the library's check). Exit 64, both names in the message. */
static void test_same_server(void) {
    char out[4096], local[64], unixs[300];
    const char *byname[] = { "-n", "-S", S[0], "-S", local, "t:same", "true", NULL };
    const char *byunix[] = { "-n", "-S", S[0], "-S", unixs, "-S", S[1], "t:same", "true", NULL };
    long long before, after;
    snprintf(local, sizeof local, "localhost:%d", srv[0].port);
    snprintf(unixs, sizeof unixs, "unix:%s", srv[0].unixsock);
    before = info_field(&srv[0], "total_connections_received");
    CHECK_EQ_LL(cli_run(byname, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, S[0]) && strstr(out, local) && strstr(out, "same server"), "%s", out);
    after = info_field(&srv[0], "total_connections_received");
    CHECK_MSG(after == before + 1, "%lld connections (1 is the check's own)", after - before);
    CHECK_EQ_LL(cli_run(byunix, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, S[0]) && strstr(out, unixs) && strstr(out, "run_id") && count_lines(out) == 1, "%s", out);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:same"), 0);
}

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        char p[600];
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) rm_tree(p);
    }
    closedir(d);
    rmdir(dir);
}

/* flock(1) lines used verbatim (the server from $RLOCK_SERVERS): -c, -w in
 * seconds with fractions, -w 0 as -n, --timeout, -o, -x / -s on one
 * read-write lock; -u and the fd form refused with a reason. */
static void test_flock_forms(void) {
    char out[4096], hold_out[300], env_s[96];
    const char *env[] = { env_s, NULL };
    const char *holder[] = { "-S", S[0], "t:fl", "sleep", "2", NULL };
    const char *c_after[] = { "-w", "10", "-x", "t:fl2", "-c", "test -n \"$RLOCK_TOKEN\" && echo hi-$RLOCK_RESOURCE", NULL };
    const char *c_before[] = { "-c", "exit 3", "t:fl2", NULL };
    const char *c_exit[] = { "-n", "t:fl2", "-c", "exit 7", NULL };
    const char *c_extra[] = { "t:fl2", "-c", "true", "extra", NULL };
    const char *w0[] = { "-o", "-w", "0", "t:fl", "true", NULL };
    const char *w_half[] = { "--timeout=0.5", "t:fl", "true", NULL };
    const char *unlock_u[] = { "-u", "t:fl", "true", NULL };
    const char *fd_form[] = { "-n", "9", NULL };
    const char *rd_hold[] = { "-s", "t:rw", "sleep", "2", NULL };
    const char *rd_nb[] = { "-s", "-n", "t:rw", "true", NULL };
    const char *wr_nb[] = { "-x", "-n", "t:rw", "true", NULL };
    const char *both[] = { "-s", "-x", "t:rw", "true", NULL };
    const char *old_server[] = { "-s", S[0], "t:rw", "true", NULL };
    unsigned long long t0;
    pid_t h;
    snprintf(env_s, sizeof env_s, "RLOCK_SERVERS=%s", S[0]);
    CHECK_EQ_LL(cli_run_env(c_after, env, out, sizeof out), 0);
    CHECK_MSG(strcmp(out, "hi-t:fl2\n") == 0, "%s", out);
    CHECK_EQ_LL(cli_run_env(c_before, env, out, sizeof out), 3);
    CHECK_EQ_LL(cli_run_env(c_exit, env, out, sizeof out), 7);
    CHECK_EQ_LL(cli_run_env(c_extra, env, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "one shell command") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run_env(unlock_u, env, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "descriptor") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run_env(fd_form, env, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "file-descriptor form") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run_env(both, env, out, sizeof out), EX_USAGE);
    CHECK_EQ_LL(cli_run_env(old_server, env, out, sizeof out), EX_USAGE); /* the old -s ADDR: told why */
    CHECK_MSG(strstr(out, "give it with -S") != NULL, "%s", out);
    path_in(hold_out, sizeof hold_out, "out.flholder");
    h = cli_start(holder, NULL, hold_out);
    CHECK(wait_key(&srv[0], "t:fl", 1, 5000));
    t0 = rh_now_ms();
    CHECK_EQ_LL(cli_run_env(w0, env, out, sizeof out), 1); /* -w 0 is -n */
    CHECK_MSG(rh_now_ms() - t0 < 1500, "-w 0 took %llu ms", rh_now_ms() - t0);
    t0 = rh_now_ms();
    CHECK_EQ_LL(cli_run_env(w_half, env, out, sizeof out), 1);
    t0 = rh_now_ms() - t0;
    CHECK_MSG(t0 >= 450 && t0 < 1900, "--timeout=0.5 gave up after %llu ms", t0);
    CHECK_EQ_LL(cli_wait(h, 10000), 0);
    /* shared holders together, the exclusive one kept out */
    path_in(hold_out, sizeof hold_out, "out.rdholder");
    h = cli_start(rd_hold, env, hold_out);
    CHECK(wait_key(&srv[0], "t:rw", 1, 5000));
    CHECK_EQ_LL(cli_run_env(rd_nb, env, out, sizeof out), 0);
    CHECK_EQ_LL(cli_run_env(wr_nb, env, out, sizeof out), 1);
    CHECK_EQ_LL(cli_wait(h, 10000), 0);
    CHECK_EQ_LL(cli_run_env(wr_nb, env, out, sizeof out), 0);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:rw t:fl t:fl2"), 0);
}

/* --limit N, -d / redis://HOST/N, rlock status, rlock unlock --force. */
static void test_primitives_cli(void) {
    char out[4096], o1[300], o2[300], url[96], tok[64];
    const char *sem_hold[] = { "--limit", "2", "-S", S[0], "t:sem", "sleep", "2", NULL };
    const char *sem_nb[] = { "--limit", "2", "-n", "-S", S[0], "t:sem", "true", NULL };
    const char *db_run[] = { "-d", "3", "-S", S[0], "t:db", "sh", "-c", "sleep 0.5", NULL };
    const char *url_run[] = { "-S", url, "t:db", "sh", "-c", "sleep 0.5", NULL };
    const char *st[] = { "status", "-S", S[0], "t:st", NULL };
    const char *st_none[] = { "status", "-S", S[0], NULL };
    const char *unl[] = { "unlock", "--force", "-S", S[0], "t:st", NULL };
    const char *unl_noforce[] = { "unlock", "-S", S[0], "t:st", NULL };
    const char *victim[] = { "-t", "1", "-S", S[0], "t:st", "sleep", "30", NULL };
    const char *writer[] = { "-x", "-S", S[0], "t:rw", "sleep", "1.5", NULL };
    const char *reader[] = { "-s", "-w", "20", "-S", S[0], "t:rw", "true", NULL };
    const char *st_rw[] = { "status", "-S", S[0], "t:rw", NULL };
    const char *count_db = "redis.call('select',ARGV[1]) return redis.call('exists',KEYS[1])";
    pid_t a, b;
    /* a semaphore of 2 */
    path_in(o1, sizeof o1, "out.sem1");
    path_in(o2, sizeof o2, "out.sem2");
    a = cli_start(sem_hold, NULL, o1);
    b = cli_start(sem_hold, NULL, o2);
    CHECK(wait_key(&srv[0], "t:sem", 1, 5000));
    {
        unsigned long long end = rh_now_ms() + 5000;
        while (rh_int(&srv[0], "ZCARD t:sem") < 2 && rh_now_ms() < end) rh_sleep_ms(10);
    }
    CHECK_EQ_LL(rh_int(&srv[0], "ZCARD t:sem"), 2);
    CHECK_EQ_LL(cli_run(sem_nb, out, sizeof out), 1);
    CHECK_EQ_LL(cli_wait(a, 10000), 0);
    CHECK_EQ_LL(cli_wait(b, 10000), 0);
    CHECK_EQ_LL(cli_run(sem_nb, out, sizeof out), 0);
    /* the database: -d 3 and redis://HOST:PORT/4 */
    a = cli_start(db_run, NULL, o1);
    {
        unsigned long long end = rh_now_ms() + 5000;
        while (rh_int(&srv[0], "EVAL %s 1 t:db 3", count_db) != 1 && rh_now_ms() < end) rh_sleep_ms(10);
    }
    CHECK_EQ_LL(rh_int(&srv[0], "EVAL %s 1 t:db 3", count_db), 1);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:db"), 0);
    CHECK_EQ_LL(cli_wait(a, 10000), 0);
    snprintf(url, sizeof url, "redis://%s/4", S[0]);
    a = cli_start(url_run, NULL, o1);
    {
        unsigned long long end = rh_now_ms() + 5000;
        while (rh_int(&srv[0], "EVAL %s 1 t:db 4", count_db) != 1 && rh_now_ms() < end) rh_sleep_ms(10);
    }
    CHECK_EQ_LL(rh_int(&srv[0], "EVAL %s 1 t:db 4", count_db), 1);
    CHECK_EQ_LL(cli_wait(a, 10000), 0);
    /* status: free, then held; unlock --force takes it from its holder */
    CHECK_EQ_LL(cli_run(st, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "t:st: free") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run(st_none, out, sizeof out), EX_USAGE);
    CHECK_EQ_LL(cli_run(unl_noforce, out, sizeof out), EX_USAGE);
    CHECK_MSG(strstr(out, "--force") != NULL, "%s", out);
    CHECK_EQ_LL(cli_run(unl, out, sizeof out), 1); /* nothing to remove */
    a = cli_start(victim, NULL, o1);
    CHECK(wait_key(&srv[0], "t:st", 1, 5000));
    CHECK(rh_str(&srv[0], tok, sizeof tok, "GET t:st") == REDIS_REPLY_STRING);
    tok[16] = '\0';
    CHECK_EQ_LL(cli_run(st, out, sizeof out), 1);
    CHECK_MSG(strstr(out, "held (simple)") != NULL && strstr(out, tok) != NULL, "%s (token %s)", out, tok);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:st"), 1); /* status changed nothing */
    CHECK_EQ_LL(cli_run(unl, out, sizeof out), 0);
    CHECK_EQ_LL(cli_wait(a, 10000), EX_LOST); /* its next renewal finds it gone */
    read_file(o1, out, sizeof out);
    CHECK_MSG(strstr(out, "deleted or taken by another client") != NULL, "%s", out);
    CHECK_EQ_LL(rh_int(&srv[0], "EXISTS t:st t:sem"), 0);
    rh_int(&srv[0], "DEL {t:sem}:waiters {t:sem}:deadlines");
    /* status shows a reader waiting behind a writer */
    a = cli_start(writer, NULL, o1);
    CHECK(wait_key(&srv[0], "t:rw", 1, 5000));
    b = cli_start(reader, NULL, o2);
    {
        unsigned long long end = rh_now_ms() + 5000;
        while (rh_int(&srv[0], "ZCARD {t:rw}:waiters") < 1 && rh_now_ms() < end) rh_sleep_ms(10);
    }
    CHECK_EQ_LL(cli_run(st_rw, out, sizeof out), 1);
    CHECK_MSG(strstr(out, "held (write)") != NULL && strstr(out, "1 reader waiting") != NULL, "%s", out);
    CHECK_EQ_LL(cli_wait(a, 10000), 0);
    CHECK_EQ_LL(cli_wait(b, 10000), 0);
    rh_int(&srv[0], "DEL t:rw {t:rw}:waiters {t:rw}:deadlines");
}

int main(void) {
    const char *env = getenv("RLOCK_CLI");
    const char *t = getenv("TMPDIR");
    int i;
    rh_ignore_sigpipe();
    quick = getenv("RLOCK_TEST_QUICK") && atoi(getenv("RLOCK_TEST_QUICK")) > 0;
    cli = env && *env ? env : access(CLI_FIRST, X_OK) == 0 ? CLI_FIRST : "build/rlock";
    if (access(cli, X_OK) != 0) {
        fprintf(stderr, "test_cli: %s not found: build it first (make), and run from the repo root\n", cli);
        CHECK(0);
        return check_summary("cli");
    }
    snprintf(tmp, sizeof tmp, "%s/rlock-cli-XXXXXX", t && *t && strlen(t) < 150 ? t : "/tmp");
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
    for (i = 0; i < 3; i++) {
        if (rh_server_start(&srv[i], NULL) != 0) {
            fprintf(stderr, "test_cli: cannot start redis-server\n");
            CHECK(0);
            while (i-- > 0) rh_server_stop(&srv[i]);
            rm_tree(tmp);
            return check_summary("cli");
        }
        snprintf(S[i], sizeof S[i], "127.0.0.1:%d", srv[i].port);
    }
    test_usage();
    test_help();
    test_run();
    test_conflict();
    test_no_hello();
    test_flock_forms();
    test_primitives_cli();
    test_concurrent();
    test_signals();
    test_fair_waiter_killed();
    test_background();
    test_auth();
    test_url_password_hidden();
    test_foreign();
    test_replicas_short();
    test_kind_mismatch();
    test_check_help();
    test_conflict_exit0();
    test_longest_key();
    test_same_server();
    test_taken();
    test_kill9_tree();
    test_zombie();
    test_oserr();
    test_lost();
    test_server_paused();
    test_redlock();
    for (i = 0; i < 3; i++) rh_server_stop(&srv[i]);
    rm_tree(tmp);
    return check_summary("cli");
}
