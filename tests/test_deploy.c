/* test_deploy.c - where Redis really runs (issue 14), against real,
 * throw-away redis-server processes on loopback (free ports, stopped by PID).
 *
 * Covers: servers that refuse EVAL (an ACL user without +eval/+evalsha but
 * with +fcall): rlock switches to its Redis 7 function libraries by itself,
 * loads them once (FUNCTION LOAD REPLACE pipelined before the FCALL), loads
 * them again after FUNCTION FLUSH, and EVAL and FCALL holders exclude each
 * other on one key; RLOCK_SCRIPTS_EVAL never switches; RLOCK_SCRIPTS_FCALL
 * uses functions from the start; a user refused both gets RLOCK_E_AUTH with
 * nothing held; libraries are named by version and each FCALL connection
 * says its version (CLIENT SETNAME), and `rlock check --delete-old-functions`
 * deletes another version's libraries only once none of its clients is
 * connected. `rlock check` (the CLI) against a fit server, one with
 * allkeys-lru, a replica, one without persistence, an EVAL-less user, a
 * sentinel-managed primary, bad arguments and --json. Sentinel: discovery,
 * failover followed through +switch-master (rlock_posix_sentinel_watch,
 * driven by poll()), the held lock extended on the new primary.
 *
 * RLOCK_TEST_QUICK=1 (the valgrind run) skips the CLI runs (they exec
 * build/rlock-asan, which valgrind cannot host). */
#define RLOCK_IMPLEMENTATION
#define RLOCK_POSIX_SENTINEL_PING_MS 1000u /* (the watches here: keepalive checked within the tests' time) */
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "rlock.h"
#include "harness.h"
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>

static int quick;

/* A client whose scripts go as `scripts` says (RLOCK_SCRIPTS_*). */
static int tc_open(rh_tconn *t, const rh_server *s, int scripts, const char *user, const char *pass) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 2000; /* far above a loopback round trip, even under valgrind */
    cfg.scripts = scripts;
    cfg.scripts_only = 1; /* every acquire a script: no SET NX PX fast path, so the counts below are the scripts' */
    return rh_tc_open(t, s, 0, &cfg, user, pass);
}

/* The reply text of a command (status/string/error). */
static int says(const rh_server *s, const char *want, const char *fmt, const char *arg) {
    char buf[256];
    rh_str(s, buf, sizeof buf, fmt, arg);
    if (strcmp(buf, want) != 0) fprintf(stderr, "  redis said: %s\n", buf);
    return strcmp(buf, want) == 0;
}

/* How many function libraries the server has whose names match pattern. */
static int libraries(const rh_server *s, const char *pattern) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    int n = -1;
    if (!c) return -1;
    r = (redisReply *)redisCommand(c, "FUNCTION LIST LIBRARYNAME %s", pattern);
    if (r && r->type == REDIS_REPLY_ARRAY) n = (int)r->elements;
    if (r) freeReplyObject(r);
    redisFree(c);
    return n;
}

/* 1 when the server has the function library of script id. */
static int has_library(const rh_server *s, int id) {
    char name[32];
    CHECK(rlock_function_name(id, name, sizeof name) == 27);
    return libraries(s, name);
}

/* ------------------------------------------------- 1. EVAL-less servers */

static void test_eval_refused(const rh_server *s) {
    rh_tconn fc, ev, strict, both, pre;
    rlock_lock a, b, re, x, y;
    unsigned long c0;
    char fn[32], ver[16];
    int id;

    /* a managed-service user: everything but scripts; functions allowed */
    CHECK(says(s, "OK", "ACL SETUSER fc on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro%s", ""));
    CHECK(says(s, "OK", "ACL SETUSER nofn on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro -fcall -fcall_ro%s", ""));
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));

    /* names: "rlock_" + the build's version + "_" + 8 hex digits of the
     * script's SHA1; bad ids refused */
    CHECK_EQ_LL(rlock_function_version(ver, sizeof ver), 12);
    CHECK_EQ_LL(strspn(ver, "0123456789abcdef"), 12);
    CHECK_EQ_LL(rlock_function_version(ver, 12), 0); /* no room for the NUL */
    for (id = 0; id < RLOCK_SCRIPT_COUNT; id++) {
        CHECK_EQ_LL(rlock_function_name(id, fn, sizeof fn), 27);
        CHECK(strncmp(fn, "rlock_", 6) == 0 && strncmp(fn + 6, ver, 12) == 0 && fn[18] == '_' &&
              strncmp(fn + 19, rlock_script_sha(id), 8) == 0);
    }
    CHECK_EQ_LL(rlock_function_name(RLOCK_SCRIPT_COUNT, fn, sizeof fn), 0);
    CHECK_EQ_LL(rlock_function_name(0, fn, 27), 0); /* no room for the NUL */

    CHECK(tc_open(&fc, s, RLOCK_SCRIPTS_AUTO, "fc", "pw") == 0);
    CHECK(tc_open(&ev, s, RLOCK_SCRIPTS_AUTO, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &fc.cl, "fn:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &ev.cl, "fn:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* EVALSHA refused (NOPERM) -> FCALL -> not found -> LOAD + FCALL */
    c0 = rlock_node_commands(&fc.node);
    CHECK_EQ_ST(rlock_acquire(&a, 5000, 0), RLOCK_OK);
    /* AUTH, EVALSHA, CLIENT SETNAME, FCALL, FUNCTION LOAD, FCALL */
    CHECK_EQ_LL(rlock_node_commands(&fc.node) - c0, 6);
    CHECK_EQ_LL(has_library(s, 0), 1);
    {   /* the connection that runs FCALL says its version */
        char list[4096], want[32];
        snprintf(want, sizeof want, " name=rlock-%s ", ver);
        CHECK(rh_str(s, list, sizeof list, "CLIENT LIST%s", "") == REDIS_REPLY_STRING && strstr(list, want) != NULL);
    }
    {
        char buf[64];
        CHECK(rh_str(s, buf, sizeof buf, "GET %s", "fn:key") == REDIS_REPLY_STRING &&
              strcmp(buf, rlock_lock_token(&a)) == 0);
    }
    /* an EVAL holder on the same key is excluded, and the other way round */
    CHECK_EQ_ST(rlock_acquire(&b, 5000, 0), RLOCK_NOT_ACQUIRED);
    c0 = rlock_node_commands(&fc.node);
    CHECK_EQ_ST(rlock_extend(&a, 8000), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&fc.node) - c0, 3); /* FCALL, LOAD, FCALL: extend's own library */
    CHECK(rh_int(s, "PTTL %s", "fn:key") > 5000);
    c0 = rlock_node_commands(&fc.node);
    CHECK_EQ_ST(rlock_extend(&a, 8000), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&fc.node) - c0, 1); /* loaded now: one FCALL */
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:key"), 0);
    CHECK_EQ_ST(rlock_acquire(&b, 5000, 0), RLOCK_OK);
    c0 = rlock_node_commands(&fc.node);
    CHECK_EQ_ST(rlock_acquire(&a, 5000, 0), RLOCK_NOT_ACQUIRED);
    CHECK_EQ_LL(rlock_node_commands(&fc.node) - c0, 1); /* the node stays on FCALL */
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);

    /* FUNCTION FLUSH (or a restart without persistence): loaded again */
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));
    CHECK_EQ_ST(rlock_acquire(&a, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(has_library(s, 0), 1);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(has_library(s, 2), 1);

    /* reentrant scripts, fencing, and a waiter queued through FCALL */
    CHECK_EQ_ST(rlock_lock_init(&re, &fc.cl, "fn:re", 5, RLOCK_KIND_REENTRANT), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&re, 5000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&re, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_hold_count(&re), 2);
    CHECK_EQ_ST(rlock_extend(&re, 5000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&re), RLOCK_OK);
    {
        char buf[32];
        CHECK(rh_str(s, buf, sizeof buf, "HGET fn:re %s", rlock_lock_token(&re)) == REDIS_REPLY_STRING &&
              strcmp(buf, "1") == 0);
    }
    CHECK_EQ_ST(rlock_release(&re), RLOCK_OK);
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:re"), 0);
    /* each library is loaded when first needed: simple extend did not run since the flush */
    for (id = 0; id < 6; id++) CHECK_EQ_LL(has_library(s, id), id != 1); /* the barging ones */
    rh_tc_close(&fc);
    rh_tc_close(&ev);

    /* RLOCK_SCRIPTS_EVAL: the NOPERM is the answer; nothing is held */
    CHECK(tc_open(&strict, s, RLOCK_SCRIPTS_EVAL, "fc", "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&x, &strict.cl, "fn:strict", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&x, 5000, 0), RLOCK_E_AUTH);
    CHECK_MSG(strstr(rlock_node_error(&strict.node), "evalsha") != NULL, "%s", rlock_node_error(&strict.node));
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:strict"), 0);
    rh_tc_close(&strict);

    /* refused both: RLOCK_E_AUTH naming fcall, nothing held */
    CHECK(tc_open(&both, s, RLOCK_SCRIPTS_AUTO, "nofn", "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&x, &both.cl, "fn:both", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&x, 5000, 0), RLOCK_E_AUTH);
    CHECK_MSG(strstr(rlock_node_error(&both.node), "fcall") != NULL, "%s", rlock_node_error(&both.node));
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:both"), 0);
    rh_tc_close(&both);

    /* RLOCK_SCRIPTS_FCALL from the start (default user): no EVALSHA at all */
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));
    CHECK(tc_open(&pre, s, RLOCK_SCRIPTS_FCALL, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&y, &pre.cl, "fn:pre", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    c0 = rlock_node_commands(&pre.node);
    CHECK_EQ_ST(rlock_acquire(&y, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&pre.node) - c0, 4); /* SETNAME, FCALL, LOAD, FCALL */
    CHECK_EQ_ST(rlock_release(&y), RLOCK_OK);
    rh_tc_close(&pre);

    /* a bad value is refused by name */
    {
        rlock_config cfg;
        rlock_client cl;
        rlock_node nd;
        rlock_posix_conn pc;
        CHECK_EQ_LL(rlock_posix_init_tcp(&pc, "127.0.0.1", s->port, 1000), 0);
        CHECK_EQ_ST(rlock_node_init(&nd, rlock_posix_transport(&pc)), RLOCK_OK);
        rlock_config_init(&cfg);
        cfg.scripts = 3;
        CHECK_EQ_ST(rlock_client_init(&cl, &nd, 1, &cfg), RLOCK_E_BADARG);
        CHECK_MSG(strstr(rlock_client_error(&cl), "scripts 3") != NULL, "%s", rlock_client_error(&cl));
        rlock_posix_close(&pc);
    }
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));
    CHECK_EQ_LL(rh_int(s, "ACL DELUSER fc nofn%s", ""), 2);
}


/* ------------------------------------------------------ 2. rlock check */

static char tmpdir[128];
#define CLI_BIN "build/rlock-asan"

/* Run `rlock-asan check ARGS...` (20 s bound); stdout+stderr into out.
 * Returns its exit status, or -1. env: "NAME=VALUE" or NULL. */
static int cli_run(int check, const char *const *args, const char *env, char *out, size_t cap);
static int check_run(const char *const *args, const char *env, char *out, size_t cap) {
    return cli_run(1, args, env, out, cap);
}
static int cli_nofile; /* > 0: cli_run runs the command under `ulimit -n cli_nofile` (sh) */
static int cli_run(int check, const char *const *args, const char *env, char *out, size_t cap) {
    char file[200], lim[16];
    const char *argv[28];
    int argc = 0, i, status;
    unsigned long long end = rh_now_ms() + 20000;
    pid_t pid;
    FILE *f;
    size_t n = 0;
    snprintf(file, sizeof file, "%s/check.out", tmpdir);
    if (cli_nofile > 0) argc = rh_ulimit_argv(argv, lim, sizeof lim, cli_nofile);
    argv[argc++] = CLI_BIN;
    if (check) argv[argc++] = "check";
    for (i = 0; args[i] && argc < 27; i++) argv[argc++] = args[i];
    argv[argc] = NULL;
    if ((pid = rh_spawn(argv, file, env, cli_nofile > 0)) < 0) return -1;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (rh_now_ms() > end) { kill(pid, SIGKILL); waitpid(pid, &status, 0); return -1; }
        rh_sleep_ms(5);
    }
    f = fopen(file, "r");
    if (f) { n = fread(out, 1, cap - 1, f); fclose(f); }
    out[n] = '\0';
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run check on one server "127.0.0.1:PORT" (+ extra args); expect rc and
 * each of the words in the output. */
static void check_expect(int port, const char *const *extra, const char *env, int want_rc, const char *const *words) {
    char addr[32], out[8192];
    const char *args[16];
    int n = 0, i, rc;
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    for (i = 0; extra && extra[i] && n < 14; i++) args[n++] = extra[i];
    if (port) args[n++] = addr;
    args[n] = NULL;
    rc = check_run(args, env, out, sizeof out);
    CHECK_MSG(rc == want_rc, "rlock check %s: exit %d, want %d; output:\n%s", addr, rc, want_rc, out);
    for (i = 0; words && words[i]; i++)
        CHECK_MSG(strstr(out, words[i]) != NULL, "rlock check %s: no '%s' in:\n%s", addr, words[i], out);
}

/* A Sentinel (redis-server --sentinel, config in its own temp dir)
 * watching the primary on master_port as "mymaster"; stopped by PID.
 * extra: more config lines (NULL: none). */
static int sentinel_start_conf(rh_server *s, int master_port, int quorum, const char *extra) {
    char conf[300], bin[PATH_MAX];
    FILE *f;
    int tries;
    memset(s, 0, sizeof *s);
    s->pid = -1;
    if (rh__make_dir(s) != 0 || rh__find_binary(bin, sizeof bin) != 0) return -1;
    snprintf(conf, sizeof conf, "%s/sentinel.conf", s->dir);
    for (tries = 0; tries < 5; tries++) {
        unsigned long long end;
        pid_t pid;
        s->port = rh_free_port();
        f = fopen(conf, "w");
        if (!f) return -1;
        fprintf(f, "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\ndaemonize no\n"
                   "sentinel monitor mymaster 127.0.0.1 %d %d\nsentinel down-after-milliseconds mymaster 1000\n"
                   "sentinel failover-timeout mymaster 10000\n%s",
                s->port, s->dir, s->logfile, master_port, quorum, extra ? extra : "");
        fclose(f);
        pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
            int fd = open("/dev/null", O_RDWR);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            dup2(fd, 0); dup2(fd, 1); dup2(fd, 2);
            execl(bin, bin, conf, "--sentinel", (char *)NULL);
            _exit(127);
        }
        s->pid = pid;
        for (end = rh_now_ms() + 5000; rh_now_ms() < end; rh_sleep_ms(20)) {
            int status;
            if (waitpid(pid, &status, WNOHANG) == pid) { s->pid = -1; break; }
            if (rh__ping_tcp(s->port, 200)) return 0;
        }
        if (s->pid > 0) { kill(s->pid, SIGKILL); waitpid(s->pid, NULL, 0); s->pid = -1; }
    }
    return -1;
}
static int sentinel_start(rh_server *s, int master_port, int quorum) {
    return sentinel_start_conf(s, master_port, quorum, NULL);
}

/* Libraries of another rlock version: rlock check reports them, and with
 * --delete-old-functions deletes them only once no client of that version
 * is connected (its connections are named rlock-VERSION); this version's
 * libraries and those whose version cannot be told are kept. Run as an ACL
 * user with +fcall but no +eval. */
static void test_old_functions(const rh_server *s) {
    static const char *const del[] = { "--user", "fc", "--delete-old-functions", NULL };
    static const char *const look[] = { "--user", "fc", NULL };
    rh_tconn fc;
    rlock_lock a;
    redisContext *old;
    redisReply *r;
    char addr[32], out[8192];
    const char *args[8];
    int i;
    CHECK(says(s, "OK", "ACL SETUSER fc on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro%s", ""));
    /* this version's client, holding a lock through its functions */
    CHECK(tc_open(&fc, s, RLOCK_SCRIPTS_AUTO, "fc", "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &fc.cl, "fn:old", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_OK);
    /* an old version's library, its client still connected; and a library
     * named the way no version is (cannot be told: always kept) */
    CHECK(says(s, "rlock_0123456789ab_deadbeef",
               "FUNCTION LOAD %s", "#!lua name=rlock_0123456789ab_deadbeef\n"
               "redis.register_function('rlock_0123456789ab_deadbeef', function() return 1 end)"));
    CHECK(says(s, "rlock_0123456789abcdef",
               "FUNCTION LOAD %s", "#!lua name=rlock_0123456789abcdef\n"
               "redis.register_function('rlock_0123456789abcdef', function() return 1 end)"));
    old = rh_connect(s);
    r = old ? (redisReply *)redisCommand(old, "CLIENT SETNAME rlock-0123456789ab") : NULL;
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r) freeReplyObject(r);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s->port);
    for (i = 0; del[i]; i++) args[i] = del[i];
    args[i++] = addr;
    args[i] = NULL;
    CHECK_EQ_LL(check_run(args, "RLOCK_PASSWORD=pw", out, sizeof out), 1); /* no AOF: warnings */
    CHECK_MSG(strstr(out, "version 0123456789ab: 1 library kept, 1 client connection of that version still connected"),
              "%s", out);
    CHECK_MSG(strstr(out, "1 rlock function library of an unknown version: kept"), "%s", out);
    CHECK_EQ_LL(libraries(s, "rlock_0123456789ab_*"), 1);
    /* its client gone: reported, kept without the option, deleted with it */
    if (old) redisFree(old);
    for (i = 0; look[i]; i++) args[i] = look[i];
    args[i++] = addr;
    args[i] = NULL;
    CHECK_EQ_LL(check_run(args, "RLOCK_PASSWORD=pw", out, sizeof out), 1);
    CHECK_MSG(strstr(out, "version 0123456789ab: 1 library, no client connected (--delete-old-functions deletes them)"),
              "%s", out);
    CHECK_EQ_LL(libraries(s, "rlock_0123456789ab_*"), 1);
    for (i = 0; del[i]; i++) args[i] = del[i];
    args[i++] = addr;
    args[i] = NULL;
    CHECK_EQ_LL(check_run(args, "RLOCK_PASSWORD=pw", out, sizeof out), 1);
    CHECK_MSG(strstr(out, "version 0123456789ab: no client connected, 1 of 1 library deleted"), "%s", out);
    CHECK_EQ_LL(libraries(s, "rlock_0123456789ab_*"), 0);
    CHECK_EQ_LL(libraries(s, "rlock_0123456789abcdef"), 1);
    CHECK_EQ_LL(has_library(s, 0), 1); /* this version's: kept, and the held lock goes on */
    CHECK_EQ_ST(rlock_extend(&a, 30000), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rh_tc_close(&fc);
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));
    CHECK_EQ_LL(rh_int(s, "ACL DELUSER fc%s", ""), 1);
}

/* How many of rlock's scripts SCRIPT EXISTS finds on s (-1: no answer). */
static int scripts_cached(const rh_server *s) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    const char *argv[2 + RLOCK_SCRIPT_COUNT];
    int i, n = -1;
    argv[0] = "SCRIPT";
    argv[1] = "EXISTS";
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) argv[2 + i] = rlock_script_sha(i);
    r = c ? (redisReply *)redisCommandArgv(c, 2 + RLOCK_SCRIPT_COUNT, argv, NULL) : NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == RLOCK_SCRIPT_COUNT)
        for (n = 0, i = 0; i < RLOCK_SCRIPT_COUNT; i++) n += r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 1;
    if (r) freeReplyObject(r);
    if (c) redisFree(c);
    return n;
}

/* A stand-in "server" for what a real Redis never does: answer SCRIPT LOAD
 * with a SHA1 that is not the script's (a proxy or a fork that rewrites
 * replies). On one connection: SCRIPT LOAD -> 40 zeros, SCRIPT EXISTS ->
 * all 0, PING -> PONG, anything else -> an error. Forked; stopped by PID. */
static pid_t fake_sha_server(int *port) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    pid_t pid;
    if (ls < 0) return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 4) != 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &sl) != 0) { close(ls); return -1; }
    *port = ntohs(sa.sin_port);
    pid = rh_fork();
    if (pid != 0) { close(ls); return pid; }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) {
        static char buf[65536];
        size_t len = 0;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) _exit(0);
        for (;;) {
            ssize_t n = read(fd, buf + len, sizeof buf - len);
            char *p = buf, *end, *args[3] = { NULL, NULL, NULL };
            long argc, i;
            if (n <= 0) break;
            len += (size_t)n;
            for (;;) { /* each complete command: *N $L arg ... */
                end = buf + len;
                if (p >= end || *p != '*' || !memchr(p, '\n', (size_t)(end - p))) break;
                argc = strtol(p + 1, NULL, 10);
                p = (char *)memchr(p, '\n', (size_t)(end - p)) + 1;
                for (i = 0; i < argc; i++) {
                    char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
                    long l = nl ? strtol(p + 1, NULL, 10) : 0;
                    if (!nl || nl + 1 + l + 2 > end) break;
                    if (i < 3) { args[i] = nl + 1; args[i][l] = '\0'; }
                    p = nl + 1 + l + 2;
                }
                if (i < argc) break; /* incomplete: read on */
                if (!args[0]) {
                    _exit(1);
                } else if (args[1] && !strcasecmp(args[0], "SCRIPT") && !strcasecmp(args[1], "LOAD")) {
                    if (write(fd, "$40\r\n0000000000000000000000000000000000000000\r\n", 47) != 47) _exit(1);
                } else if (args[1] && !strcasecmp(args[0], "SCRIPT") && !strcasecmp(args[1], "EXISTS")) {
                    char a[16];
                    int k = snprintf(a, sizeof a, "*%ld\r\n", argc - 2);
                    if (write(fd, a, (size_t)k) != k) _exit(1);
                    for (i = 2; i < argc; i++) if (write(fd, ":0\r\n", 4) != 4) _exit(1);
                } else if (!strcasecmp(args[0], "PING")) {
                    if (write(fd, "+PONG\r\n", 7) != 7) _exit(1);
                } else if (write(fd, "-ERR not here\r\n", 15) != 15) {
                    _exit(1);
                }
                memmove(buf, p, (size_t)(end - p));
                len = (size_t)(end - p);
                p = buf;
            }
        }
        close(fd);
    }
}

static int wait_replicas(const rh_server *s, int n);

/* `rlock check --load` puts every script into a fresh server's script cache
 * (what a build without the EVAL fallback needs: tests/test_smallest.c locks
 * on a server loaded this way), each SHA1 checked; the check reports how
 * many are cached; --print-scripts' lines load to the SHA1s they name. Bad
 * cases: nobody listening, AUTH refused, a user refused SCRIPT: exit 2, the
 * reason, nothing loaded. --load-functions loads the libraries an FCALL
 * client of this build calls. */
static void test_load(void) {
    rh_server s;
    static char out[65536];
    char addr[32], want[128];
    const char *a[8];
    int i;
    if (rh_server_start(&s, NULL) != 0) { CHECK_MSG(0, "could not start redis-server"); return; }
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    CHECK_EQ_LL(scripts_cached(&s), 0);
    a[0] = addr; a[1] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 1); /* no AOF: warnings */
    snprintf(want, sizeof want, "ok: scripts: 0 of rlock's %d in the script cache (SCRIPT EXISTS)", RLOCK_SCRIPT_COUNT);
    CHECK_MSG(strstr(out, want) && strstr(out, "rlock check --load"), "%s", out);
    CHECK_EQ_LL(scripts_cached(&s), 0); /* the check alone loads nothing */
    a[0] = "--load"; a[1] = addr; a[2] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 1);
    snprintf(want, sizeof want, "ok: SCRIPT LOAD: %d scripts loaded, each SHA1 rlock's (%d were not in the script cache)",
             RLOCK_SCRIPT_COUNT, RLOCK_SCRIPT_COUNT);
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);
    CHECK_MSG(strstr(out, "script a13c") == NULL, "no -v, no list: %s", out);
    CHECK_EQ_LL(scripts_cached(&s), RLOCK_SCRIPT_COUNT);
    /* -v lists every SHA1; loading again is harmless */
    CHECK(says(&s, "OK", "SCRIPT FLUSH%s", ""));
    CHECK(rh_str(&s, want, sizeof want, "SCRIPT LOAD %s", rlock_script_text(1)) == REDIS_REPLY_STRING);
    a[0] = "--load"; a[1] = "-v"; a[2] = addr; a[3] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 1);
    snprintf(want, sizeof want, "(%d were not in the script cache)", RLOCK_SCRIPT_COUNT - 1);
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
        snprintf(want, sizeof want, "  script %s ", rlock_script_sha(i));
        CHECK_MSG(strstr(out, want) != NULL, "no %s in:\n%s", want, out);
    }
    snprintf(want, sizeof want, "  script %s simple extend: loaded (it was in the cache)\n", rlock_script_sha(1));
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof want, "  script %s simple acquire: loaded\n", rlock_script_sha(0));
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);
    CHECK_EQ_LL(scripts_cached(&s), RLOCK_SCRIPT_COUNT);
    /* a replica does not get them from its primary (Redis 7 does not pass
     * SCRIPT LOAD on): a failover to it would find none. Loaded directly it
     * has them; as a lock server it stays unfit (exit 2) */
    {
        rh_server replica;
        char replicaof[64], raddr[32];
        const char *ra[3] = { "--replicaof", replicaof, NULL };
        snprintf(replicaof, sizeof replicaof, "127.0.0.1 %d", s.port);
        CHECK(rh_server_start(&replica, ra) == 0);
        CHECK(wait_replicas(&s, 1));
        CHECK_EQ_LL(scripts_cached(&replica), 0);
        snprintf(raddr, sizeof raddr, "127.0.0.1:%d", replica.port);
        a[0] = "--load"; a[1] = raddr; a[2] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
        snprintf(want, sizeof want, "ok: SCRIPT LOAD: %d scripts loaded", RLOCK_SCRIPT_COUNT);
        CHECK_MSG(strstr(out, want) && strstr(out, "unfit: a replica (of 127.0.0.1:"), "%s", out);
        CHECK_EQ_LL(scripts_cached(&replica), RLOCK_SCRIPT_COUNT);
        rh_server_stop(&replica);
    }
    a[0] = "--json"; a[1] = addr; a[2] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 1);
    snprintf(want, sizeof want, "\"scripts_cached\":%d,\"scripts_loaded\":0,", RLOCK_SCRIPT_COUNT);
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof want, "scripts: all %d of rlock's in the script cache", RLOCK_SCRIPT_COUNT);
    CHECK_MSG(strstr(out, want) != NULL, "%s", out);

    /* --print-scripts: one "SHA1 TEXT" line per script, rlock's; each text
     * loads to the SHA1 its line names */
    CHECK(says(&s, "OK", "SCRIPT FLUSH%s", ""));
    a[0] = "--print-scripts"; a[1] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 0);
    {
        char *line = out, *nl;
        for (i = 0; i < RLOCK_SCRIPT_COUNT && (nl = strchr(line, '\n')) != NULL; i++, line = nl + 1) {
            char sha[64];
            *nl = '\0';
            CHECK_MSG(strlen(line) > 41 && line[40] == ' ', "line %d: %.80s", i, line);
            if (strlen(line) <= 41) break;
            CHECK_MSG(strncmp(line, rlock_script_sha(i), 40) == 0 && strcmp(line + 41, rlock_script_text(i)) == 0,
                      "line %d is not script %d: %.80s", i, i, line);
            CHECK(rh_str(&s, sha, sizeof sha, "SCRIPT LOAD %s", line + 41) == REDIS_REPLY_STRING);
            CHECK_MSG(strncmp(sha, line, 40) == 0 && strlen(sha) == 40, "line %d loads as %s", i, sha);
        }
        CHECK_EQ_LL(i, RLOCK_SCRIPT_COUNT);
        CHECK_MSG(*line == '\0', "more after the last script: %.80s", line);
    }
    CHECK_EQ_LL(scripts_cached(&s), RLOCK_SCRIPT_COUNT);
    a[0] = "--print-scripts"; a[1] = addr; a[2] = NULL;
    CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 64);
    CHECK_MSG(strstr(out, "--print-scripts connects to nothing") != NULL, "%s", out);

    /* bad cases: exit 2, the reason, nothing loaded */
    CHECK(says(&s, "OK", "SCRIPT FLUSH%s", ""));
    {
        char down[32];
        snprintf(down, sizeof down, "127.0.0.1:%d", rh_free_port());
        a[0] = "--load"; a[1] = down; a[2] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
        CHECK_MSG(strstr(out, "cannot connect: connect 127.0.0.1:") && strstr(out, "Connection refused") &&
                  !strstr(out, "SCRIPT LOAD"), "%s", out);
    }
    CHECK(says(&s, "OK", "ACL SETUSER loader on >pw ~* &* +@all%s", ""));
    CHECK(says(&s, "OK", "ACL SETUSER noscript on >pw ~* &* +@all -script%s", ""));
    a[0] = "--load"; a[1] = "--user"; a[2] = "loader"; a[3] = addr; a[4] = NULL;
    CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=wrong", out, sizeof out), 77); /* AUTH refused, as for rlock */
    CHECK_MSG(strstr(out, "unfit: AUTH refused: WRONGPASS") && !strstr(out, "SCRIPT LOAD"), "%s", out);
    CHECK_EQ_LL(scripts_cached(&s), 0);
    a[2] = "noscript";
    CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=pw", out, sizeof out), 2);
    CHECK_MSG(strstr(out, "unfit: SCRIPT LOAD of script 0 (simple acquire) refused: NOPERM") &&
              strstr(out, "ok: SCRIPT EXISTS refused (NOPERM") && strstr(out, "overall: unfit"), "%s", out);
    CHECK_EQ_LL(scripts_cached(&s), 0);
    a[1] = "-v"; a[2] = "--user"; a[3] = "noscript"; a[4] = addr; a[5] = NULL; /* no --load: reported, not unfit */
    CHECK_EQ_LL(check_run(a + 1, "RLOCK_PASSWORD=pw", out, sizeof out), 1);
    CHECK_MSG(strstr(out, "ok: SCRIPT EXISTS refused (NOPERM") && !strstr(out, "  script "), "%s", out);
    /* the right user, through AUTH: loaded */
    a[1] = "--user"; a[2] = "loader"; a[3] = addr; a[4] = NULL;
    CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=pw", out, sizeof out), 1);
    CHECK_EQ_LL(scripts_cached(&s), RLOCK_SCRIPT_COUNT);

    /* a SHA1 that is not rlock's: unfit, naming the script and both SHA1s */
    {
        int fport = 0, status;
        pid_t fpid = fake_sha_server(&fport);
        char faddr[32];
        CHECK(fpid > 0);
        if (fpid > 0) {
            snprintf(faddr, sizeof faddr, "127.0.0.1:%d", fport);
            a[0] = "--load"; a[1] = faddr; a[2] = NULL;
            CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
            snprintf(want, sizeof want, "unfit: SCRIPT LOAD of script 0 (simple acquire): the server's SHA1 '%.40s' is "
                     "not rlock's %s", "0000000000000000000000000000000000000000", rlock_script_sha(0));
            CHECK_MSG(strstr(out, want) != NULL, "%s", out);
            kill(fpid, SIGKILL);
            status = rh_wait_child(fpid, 5000);
            (void)status;
        }
    }

    /* --load-functions: this version's libraries, the very ones an FCALL
     * client of this build calls: one whose user may not FUNCTION LOAD
     * (as a build without the EVAL fallback cannot) locks only once they
     * are loaded */
    CHECK(says(&s, "OK", "ACL SETUSER fconly on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro -function%s", ""));
    {
        rh_tconn t;
        rlock_lock lk;
        char pattern[32], ver[16];
        rlock_function_version(ver, sizeof ver);
        snprintf(pattern, sizeof pattern, "rlock_%s_*", ver);
        CHECK(says(&s, "OK", "FUNCTION FLUSH%s", ""));
        CHECK(tc_open(&t, &s, RLOCK_SCRIPTS_FCALL, "fconly", "pw") == 0);
        CHECK_EQ_ST(rlock_lock_init(&lk, &t.cl, "fn:load", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK(rlock_acquire(&lk, 30000, 0) != RLOCK_OK);
        CHECK_EQ_LL(rlock_lock_state(&lk), RLOCK_STATE_IDLE);
        CHECK_EQ_LL(libraries(&s, pattern), 0);
        /* refused: exit 2, the library and the reason named, nothing loaded */
        a[0] = "--load-functions"; a[1] = "--user"; a[2] = "fconly"; a[3] = addr; a[4] = NULL;
        CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=pw", out, sizeof out), 2);
        rlock_function_name(0, want, sizeof want);
        CHECK_MSG(strstr(out, "unfit: FUNCTION LOAD of ") && strstr(out, want) &&
                  strstr(out, " (simple acquire) refused: NOPERM"), "%s", out);
        CHECK_EQ_LL(libraries(&s, pattern), 0);
        a[2] = "loader";
        CHECK(says(&s, "OK", "ACL SETUSER loader on >pw ~* &* +@all%s", ""));
        CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=pw", out, sizeof out), 1);
        snprintf(want, sizeof want, "ok: FUNCTION LOAD: %d libraries of version %s loaded", RLOCK_SCRIPT_COUNT, ver);
        CHECK_MSG(strstr(out, want) != NULL, "%s", out);
        CHECK_EQ_LL(libraries(&s, pattern), RLOCK_SCRIPT_COUNT);
        for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) CHECK_MSG(has_library(&s, i) == 1, "library of script %d", i);
        CHECK_EQ_ST(rlock_acquire(&lk, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
        rh_tc_close(&t);
        CHECK(says(&s, "OK", "FUNCTION FLUSH%s", ""));
    }
    CHECK_EQ_LL(rh_int(&s, "ACL DELUSER loader noscript fconly%s", ""), 3);
    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0);
    rh_server_stop(&s);
}

static void test_check(const rh_server *plain) {
    rh_server fit, lru, replica, sentinel;
    static const char *const fit_args[] = { "--appendonly", "yes", "--appendfsync", "always", NULL };
    static const char *const lru_args[] = { "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru", NULL };
    char replicaof[64], port[16];
    const char *rep_args[3];
    char out[8192];

    /* a fit server: noeviction, AOF with fsync always */
    CHECK(rh_server_start(&fit, fit_args) == 0);
    {
        static const char *const w[] = { "overall: fit", "ok: role master", "maxmemory-policy noeviction",
                                         "appendfsync always", NULL };
        check_expect(fit.port, NULL, NULL, 0, w);
    }
    {
        static const char *const w[] = { "\"verdict\":\"fit\"", "\"exit\":0", "\"eval\":true", "\"fcall\":true",
                                         "\"publish\":true", "\"wait\":true", "\"appendfsync\":\"always\"", NULL };
        static const char *const json[] = { "--json", NULL };
        check_expect(fit.port, json, NULL, 0, w);
    }
    /* evicting policy under a maxmemory limit: unfit */
    CHECK(rh_server_start(&lru, lru_args) == 0);
    {
        static const char *const w[] = { "unfit: maxmemory-policy allkeys-lru", "overall: unfit", NULL };
        check_expect(lru.port, NULL, NULL, 2, w);
    }
    /* no persistence (the harness default): warnings */
    {
        static const char *const w[] = { "warning: appendonly no", "overall: warnings", NULL };
        check_expect(plain->port, NULL, NULL, 1, w);
    }
    /* a replica of the fit server: unfit, naming its primary */
    snprintf(port, sizeof port, "%d", fit.port);
    rep_args[0] = "--replicaof";
    snprintf(replicaof, sizeof replicaof, "127.0.0.1 %d", fit.port);
    rep_args[1] = replicaof;
    rep_args[2] = NULL;
    CHECK(rh_server_start(&replica, rep_args) == 0);
    {
        char want[64];
        const char *w[3];
        snprintf(want, sizeof want, "a replica (of 127.0.0.1:%d)", fit.port);
        w[0] = want; w[1] = "overall: unfit"; w[2] = NULL;
        check_expect(replica.port, NULL, NULL, 2, w);
    }
    /* an EVAL-less user: FCALL allowed, so not unfit on that account */
    CHECK(says(plain, "OK", "ACL SETUSER fc on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro%s", ""));
    CHECK(says(plain, "OK", "ACL SETUSER none on >pw ~* +@all -eval -evalsha -fcall -fcall_ro -publish%s", ""));
    {
        static const char *const a[] = { "--user", "fc", NULL };
        static const char *const w[] = { "ok: EVAL refused: NOPERM", "FCALL allowed", "overall: warnings", NULL };
        check_expect(plain->port, a, "RLOCK_PASSWORD=pw", 1, w);
    }
    /* credentials or permissions refused: exit 77, as rlock itself exits
     * for this user (RLOCK_E_AUTH) - not 2, which says the server is unfit */
    {
        static const char *const a[] = { "--user", "none", NULL };
        static const char *const w[] = { "unfit: neither EVAL nor FCALL may run here: NOPERM",
                                         "warning: PUBLISH refused", NULL };
        check_expect(plain->port, a, "RLOCK_PASSWORD=pw", 77, w);
    }
    {
        static const char *const a[] = { "--user", "fc", NULL };
        static const char *const w[] = { "AUTH refused: WRONGPASS", "overall: unfit", NULL };
        check_expect(plain->port, a, "RLOCK_PASSWORD=wrong", 77, w);
    }
    {
        static const char *const a[] = { "--user", "fc", "--json", NULL };
        static const char *const w[] = { "\"exit\":77", "\"auth_refused\":true", "WRONGPASS", NULL };
        check_expect(plain->port, a, "RLOCK_PASSWORD=wrong", 77, w);
    }
    {   /* no password for a server that wants one: its NOAUTH, said once -
         * not a cascade of refused probes ending in a reset connection */
        static const char *const rp[] = { "--requirepass", "pw", NULL };
        static const char *const w[] = { "unfit: NOAUTH Authentication required.", "overall: unfit", NULL };
        rh_server auth;
        char a0[32];
        const char *a[2];
        int i;
        CHECK(rh_server_start(&auth, rp) == 0);
        snprintf(a0, sizeof a0, "127.0.0.1:%d", auth.port);
        a[0] = a0; a[1] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 77);
        for (i = 0; w[i]; i++) CHECK_MSG(strstr(out, w[i]) != NULL, "NOAUTH: no '%s' in:\n%s", w[i], out);
        CHECK_MSG(strstr(out, "neither EVAL") == NULL && strstr(out, "PING") == NULL && strstr(out, "Redis ?") == NULL,
                  "NOAUTH:\n%s", out);
        {   /* the right password: checked (no AOF: warnings) */
            static const char *const ok[] = { "overall: warnings", NULL };
            check_expect(auth.port, NULL, "RLOCK_PASSWORD=pw", 1, ok);
        }
        {   /* with a fit server beside it: still 77 (the credentials first) */
            char a1[32], a2[32];
            const char *a[3];
            snprintf(a1, sizeof a1, "127.0.0.1:%d", fit.port);
            snprintf(a2, sizeof a2, "127.0.0.1:%d", auth.port);
            a[0] = a1; a[1] = a2; a[2] = NULL;
            CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 77);
            CHECK_MSG(strstr(out, ": fit\n") != NULL && strstr(out, "NOAUTH") != NULL, "%s", out);
        }
        rh_server_stop(&auth);
    }
    CHECK_EQ_LL(rh_int(plain, "ACL DELUSER fc none%s", ""), 2);

    /* Redlock over a fit and an unfit server: the worst decides */
    {
        char a1[32], a2[32];
        const char *a[3];
        snprintf(a1, sizeof a1, "127.0.0.1:%d", fit.port);
        snprintf(a2, sizeof a2, "127.0.0.1:%d", lru.port);
        a[0] = a1; a[1] = a2; a[2] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
        CHECK(strstr(out, ": fit\n") != NULL && strstr(out, ": unfit\n") != NULL);
    }
    /* nobody listening: unfit, with the reason */
    {
        int p = rh_free_port();
        char want[64];
        const char *w[2];
        snprintf(want, sizeof want, "cannot connect: connect 127.0.0.1:%d: Connection refused", p);
        w[0] = want; w[1] = NULL;
        check_expect(p, NULL, NULL, 2, w);
    }
    /* through a Sentinel: the primary it names is checked */
    if (sentinel_start(&sentinel, fit.port, 1) == 0) {
        char sarg[32];
        const char *a[6];
        snprintf(sarg, sizeof sarg, "127.0.0.1:%d", sentinel.port);
        a[0] = "--sentinel"; a[1] = sarg; a[2] = "--master"; a[3] = "mymaster"; a[4] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 0);
        {
            char want[96];
            snprintf(want, sizeof want, "names 127.0.0.1:%d as primary 'mymaster'", fit.port);
            CHECK_MSG(strstr(out, want) != NULL, "%s", out);
        }
        a[3] = "nosuch";
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
        CHECK_MSG(strstr(out, "does not know primary 'nosuch'") != NULL, "%s", out);
        /* a Sentinel given as a server is not a lock server */
        a[0] = sarg; a[1] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 2);
        CHECK_MSG(strstr(out, "this is a Sentinel") != NULL, "%s", out);
        rh_server_stop(&sentinel);
    } else {
        CHECK_MSG(0, "could not start a Sentinel");
    }
    /* usage errors: exit 64, nothing sent */
    {
        char s1[32], u3[48];
        const char *const a1[] = { "--sentinel", s1, NULL };
        static const char *const a2[] = { "--bogus", NULL };
        const char *const a3[] = { u3, NULL }; /* the path is a database number */
        static const char *const a4[] = { "--help", NULL };
        snprintf(s1, sizeof s1, "127.0.0.1:%d", plain->port);
        snprintf(u3, sizeof u3, "redis://127.0.0.1:%d/x", plain->port);
        CHECK_EQ_LL(check_run(a1, NULL, out, sizeof out), 64);
        CHECK(strstr(out, "--sentinel needs --master NAME") != NULL);
        CHECK_EQ_LL(check_run(a2, NULL, out, sizeof out), 64);
        CHECK(strstr(out, "unknown option '--bogus'") != NULL);
        CHECK_EQ_LL(check_run(a3, NULL, out, sizeof out), 64);
        CHECK_EQ_LL(check_run(a4, NULL, out, sizeof out), 0);
        CHECK(strstr(out, "Usage: rlock check") != NULL);
    }
    rh_server_stop(&replica);
    rh_server_stop(&lru);
    rh_server_stop(&fit);
}

/* ------------------------------------------ 3. replica acknowledgement */

/* 1 once the primary reports n connected replicas (bounded: 10 s). */
static int wait_replicas(const rh_server *s, int n) {
    unsigned long long end = rh_now_ms() + 10000;
    char buf[4096];
    char want[32];
    snprintf(want, sizeof want, "connected_slaves:%d", n);
    while (rh_now_ms() < end) {
        if (rh_str(s, buf, sizeof buf, "INFO %s", "replication") == REDIS_REPLY_STRING && strstr(buf, want) &&
            (n == 0 || strstr(buf, "state=online")))
            return 1;
        rh_sleep_ms(20);
    }
    return 0;
}

static void test_replica_ack(void) {
    rh_server prim, rep;
    char ro[64];
    const char *rep_args[3];
    rlock_config cfg;
    rh_tconn t, w;
    rlock_lock a, b;
    unsigned long c0;

    CHECK(rh_server_start(&prim, NULL) == 0);
    snprintf(ro, sizeof ro, "127.0.0.1 %d", prim.port);
    rep_args[0] = "--replicaof"; rep_args[1] = ro; rep_args[2] = NULL;
    CHECK(rh_server_start(&rep, rep_args) == 0);
    CHECK(wait_replicas(&prim, 1));

    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 3000;
    cfg.replicas = 1;
    cfg.replica_timeout_ms = 1000; /* a loaded machine's replica may take a while to ack */
    CHECK(rh_tc_open(&t, &prim, 0, &cfg, NULL, NULL) == 0);
    cfg.replica_warn = 1;
    CHECK(rh_tc_open(&w, &prim, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &t.cl, "ack:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &w.cl, "ack:warn", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_LL(rlock_replica_acks(&a), -1);

    /* the replica is up: granted, acknowledged by it, in one round trip (once
     * a script has run on the node: the fast path waits for one) */
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_replica_acks(&a), 1);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    c0 = rlock_node_commands(&t.node);
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_replica_acks(&a), 1);
    CHECK_EQ_LL(rlock_node_commands(&t.node) - c0, 2); /* the fast path's SET NX PX + WAIT, one round trip */
    {
        char buf[64];
        CHECK(rh_str(&rep, buf, sizeof buf, "GET %s", "ack:key") == REDIS_REPLY_STRING &&
              strcmp(buf, rlock_lock_token(&a)) == 0); /* the replica has it */
    }
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);

    /* the replica paused (SIGSTOP): the grant is not acknowledged, so it is
     * released again and the acquire says so */
    rh_server_pause(&rep);
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 0), RLOCK_E_REPLICAS);
    CHECK_EQ_LL(rlock_replica_acks(&a), 0);
    CHECK_EQ_LL(rlock_lock_state(&a), RLOCK_STATE_IDLE);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "ack:key"), 0);
    /* ... with a wait, it keeps trying until the deadline, then says the same */
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 700), RLOCK_E_REPLICAS);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "ack:key"), 0);
    /* warn mode: kept, and the count tells */
    CHECK_EQ_ST(rlock_acquire(&b, 10000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_replica_acks(&b), 0);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "ack:warn"), 1);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);

    /* resumed: acknowledged again */
    rh_server_resume(&rep);
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 5000), RLOCK_OK);
    CHECK_EQ_LL(rlock_replica_acks(&a), 1);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);

    /* asking for more replicas than exist: never acknowledged */
    rh_tc_close(&t);
    cfg.replica_warn = 0;
    cfg.replicas = 2;
    CHECK(rh_tc_open(&t, &prim, 0, &cfg, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &t.cl, "ack:key", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 10000, 0), RLOCK_E_REPLICAS);
    CHECK_EQ_LL(rlock_replica_acks(&a), 1);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "ack:key"), 0);
    CHECK(strcmp(rlock_status_str(RLOCK_E_REPLICAS), "too few replica acks") == 0);

    rh_tc_close(&t);
    rh_tc_close(&w);
    rh_server_stop(&rep);
    rh_server_stop(&prim);
}

/* ---------------------------------------------------------- 4. Sentinel */

/* The primary's port as sentinel s names it, 0 when none. */
static int sentinel_master_port(const rh_server *s) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    int port = 0;
    if (!c) return 0;
    r = (redisReply *)redisCommand(c, "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster");
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r) freeReplyObject(r);
    redisFree(c);
    return port;
}

/* 1 when the server on s says ROLE master. */
static int is_primary(const rh_server *s) {
    char buf[4096];
    return rh_str(s, buf, sizeof buf, "INFO %s", "replication") == REDIS_REPLY_STRING && strstr(buf, "role:master");
}

/* Drive w for up to ms (poll() on its descriptor, as an event loop
 * would) or until done(w): 1 when done. */
static int watch_until(rlock_posix_sentinel_watch *w, unsigned ms, int (*done)(const rlock_posix_sentinel_watch *)) {
    unsigned long long end = rh_now_ms() + ms;
    while (!done(w) && rh_now_ms() < end) {
        struct pollfd p;
        uint32_t t;
        int ev = rlock_posix_sentinel_watch_interest(w, &p.fd, &t);
        p.events = (short)(((ev & RLOCK_WANT_READ) ? POLLIN : 0) | ((ev & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        (void)poll(&p, p.fd >= 0 ? 1 : 0, t > 50 ? 50 : (int)t);
        (void)rlock_posix_sentinel_watch_step(w);
    }
    return done(w);
}
static int watch_subscribed(const rlock_posix_sentinel_watch *w) { return w->subscribed; }
static int watch_switched(const rlock_posix_sentinel_watch *w) { return w->switches > 0; }
static int watch_not_subscribed(const rlock_posix_sentinel_watch *w) { return !w->subscribed; }

/* Discovery in an event loop: with the first Sentinel stopped (SIGSTOP: the
 * kernel still accepts, nobody answers), a step returns with the
 * connection waiting to read the Sentinel's answer - nothing blocks in
 * connect() - and poll() sleeps there; once it runs again the loop
 * finishes the acquire on the primary, on a descriptor of another number. */
static void sentinel_event_loop(rh_server *sen, const rlock_posix_sentinel *sn, int prim_port) {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock lk;
    rlock_interest it;
    struct pollfd p;
    uint32_t t;
    rlock_status st = RLOCK_WOULD_BLOCK;
    int i, slept = -1, sfd = -1;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, sn, 5000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 5000;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "sen:loop", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    rh_server_pause(&sen[0]);
    CHECK_EQ_ST(rlock_acquire_begin(&lk, 10000, 0), RLOCK_WOULD_BLOCK);
    for (i = 0; i < 20 && slept < 0; i++) {
        size_t n = rlock_client_interest(&cl, &it, 1, &t);
        p.fd = n == 1 ? it.fd : -1;
        p.events = (short)((n == 1 && (it.events & RLOCK_WANT_READ) ? POLLIN : 0) |
                           (n == 1 && (it.events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        if (n == 1 && it.fd >= 0 && it.events == RLOCK_WANT_READ && rlock_node_wants(&node) == RLOCK_WANT_WRITE &&
            pc.port == sn->port[0]) {
            slept = poll(&p, 1, 100); /* the stopped Sentinel's answer: nothing comes */
            sfd = it.fd;
        } else {
            (void)poll(&p, p.fd >= 0 ? 1 : 0, t > 100 ? 100 : (int)t);
        }
        rlock_client_step(&cl);
    }
    CHECK_MSG(slept == 0, "waiting on the stopped Sentinel: poll() returned %d (want 0)", slept);
    CHECK_EQ_ST(rlock_result(&lk), RLOCK_WOULD_BLOCK);
    rh_server_resume(&sen[0]);
    for (i = 0; i < 200 && (st = rlock_result(&lk)) == RLOCK_WOULD_BLOCK; i++) {
        size_t n = rlock_client_interest(&cl, &it, 1, &t);
        p.fd = n == 1 ? it.fd : -1;
        p.events = (short)((n == 1 && (it.events & RLOCK_WANT_READ) ? POLLIN : 0) |
                           (n == 1 && (it.events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        (void)poll(&p, p.fd >= 0 ? 1 : 0, t > 100 ? 100 : (int)t);
        rlock_client_step(&cl);
    }
    CHECK_EQ_ST(st, RLOCK_OK);
    CHECK_EQ_LL(pc.port, prim_port);
    /* the primary's socket is opened before the Sentinel's closes: never the
     * same number in one connect (an epoll loop re-registers it) */
    CHECK(pc.fd >= 0 && pc.fd != sfd);
    CHECK_EQ_ST(rlock_release(&lk), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
}

/* A Sentinel that lags behind a failover (fake, on loopback): it names
 * the primary at old_port to a connect's question, and refuses a watch
 * (SUBSCRIBE: an error, so the watch moves on to a real Sentinel) - unless
 * push is set: then it confirms the subscription and sends push's
 * +switch-master messages (each "name old-host old-port new-host
 * new-port", separated by '\n'). */
typedef struct fake_sentinel {
    int lfd, cfd[32], n, old_port;
    const char *port_text; /* set: the port named is this text (a bad one), not old_port */
    const char *host_text; /* set: the host named (else 127.0.0.1) */
    const char *push;      /* set: SUBSCRIBE confirmed, then these messages */
} fake_sentinel;
static int fake_sentinel_open(fake_sentinel *f, int old_port) {
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    memset(f, 0, sizeof *f);
    f->old_port = old_port;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->lfd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(f->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(f->lfd, 8) != 0 ||
        getsockname(f->lfd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    fcntl(f->lfd, F_SETFL, fcntl(f->lfd, F_GETFL) | O_NONBLOCK);
    return ntohs(a.sin_port);
}
static void fake_sentinel_pump(fake_sentinel *f) {
    char buf[4096], out[8192];
    int fd, i;
    while (f->n < 32 && (fd = accept(f->lfd, NULL, NULL)) >= 0) f->cfd[f->n++] = fd;
    for (i = 0; i < f->n; i++) {
        ssize_t r = recv(f->cfd[i], buf, sizeof buf - 1, MSG_DONTWAIT);
        if (r <= 0) continue;
        buf[r] = '\0';
        if (f->push && strstr(buf, "SUBSCRIBE")) { /* [the address,] subscribed, the messages */
            const char *m = f->push, *e;
            const char *host = f->host_text ? f->host_text : "127.0.0.1";
            int n = 0;
            if (strstr(buf, "GET-MASTER-ADDR-BY-NAME"))
                n = snprintf(out, sizeof out, "*2\r\n$%d\r\n%s\r\n$%d\r\n%d\r\n", (int)strlen(host), host,
                             snprintf(NULL, 0, "%d", f->old_port), f->old_port);
            n += snprintf(out + n, sizeof out - (size_t)n, "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n");
            for (; *m; m = *e ? e + 1 : e) {
                e = strchr(m, '\n');
                if (!e) e = m + strlen(m);
                n += snprintf(out + n, sizeof out - (size_t)n, "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$%d\r\n%.*s\r\n",
                              (int)(e - m), (int)(e - m), m);
            }
            (void)!send(f->cfd[i], out, (size_t)n, MSG_NOSIGNAL);
        } else if (strstr(buf, "SUBSCRIBE") && !(f->port_text && strstr(buf, "GET-MASTER-ADDR-BY-NAME"))) {
            (void)!send(f->cfd[i], "-ERR lagging\r\n", 14, MSG_NOSIGNAL);
        } else { /* (a bad port_text: to the watch too, then its SUBSCRIBE refused) */
            char port[16];
            int n;
            if (f->port_text) snprintf(port, sizeof port, "%s", f->port_text);
            else snprintf(port, sizeof port, "%d", f->old_port);
            const char *host = f->host_text ? f->host_text : "127.0.0.1";
            n = snprintf(out, sizeof out, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s", (int)strlen(host), host,
                         (int)strlen(port), port, strstr(buf, "SUBSCRIBE") ? "-ERR lagging\r\n" : "");
            (void)!send(f->cfd[i], out, (size_t)n, MSG_NOSIGNAL);
        }
    }
}
static void fake_sentinel_close(fake_sentinel *f) {
    int i;
    for (i = 0; i < f->n; i++) close(f->cfd[i]);
    if (f->lfd >= 0) close(f->lfd);
    f->n = 0;
    f->lfd = -1;
}

static void test_sentinel(void) {
    rh_server prim, rep, sen[3];
    char ro[64];
    const char *rep_args[3];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a, b;
    rlock_posix_sentinel_watch w, late, w3;
    rlock_posix_conn pc2, pc3;
    int r3 = 0;
    int i, up = 0, promoted = 0;
    unsigned long long t0, end;
    char buf[64];

    CHECK(rh_server_start(&prim, NULL) == 0);
    snprintf(ro, sizeof ro, "127.0.0.1 %d", prim.port);
    rep_args[0] = "--replicaof"; rep_args[1] = ro; rep_args[2] = NULL;
    CHECK(rh_server_start(&rep, rep_args) == 0);
    CHECK(wait_replicas(&prim, 1));
    for (i = 0; i < 3; i++) up += sentinel_start(&sen[i], prim.port, 2) == 0;
    CHECK_EQ_LL(up, 3);
    if (up != 3) goto out;

    /* discovery by name: the client connects where the Sentinels point */
    memset(&sn, 0, sizeof sn);
    sn.n = 3;
    sn.master = "mymaster";
    for (i = 0; i < 3; i++) { sn.host[i] = "127.0.0.1"; sn.port[i] = sen[i].port; }
    sentinel_event_loop(sen, &sn, prim.port);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 2000;
    cfg.replicas = 1; /* the grant reaches the replica before it counts */
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:held", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &cl, "sen:next", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_OK);
    CHECK_EQ_LL(pc.port, prim.port);
    /* a watch on the Sentinels: subscribed, and nothing moved yet */
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
    CHECK(watch_until(&w, 5000, watch_subscribed));
    CHECK_EQ_LL(w.switches, 0);
    CHECK_EQ_LL(pc.switched, 0);
    /* a second connection to the primary, watched only after the failover */
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc2, &sn, 2000), 0);
    {
        int r, n = 0;
        while ((r = pc2.tr.connect(pc2.tr.ctx)) == 0 && n++ < 100) (void)pc2.tr.wait(pc2.tr.ctx, RLOCK_WANT_WRITE, 100);
        CHECK_EQ_LL(r, 1);
    }
    CHECK_EQ_LL(pc2.port, prim.port);
    CHECK(rh_str(&prim, buf, sizeof buf, "GET %s", "sen:held") == REDIS_REPLY_STRING &&
          strcmp(buf, rlock_lock_token(&a)) == 0);
    CHECK(rh_str(&rep, buf, sizeof buf, "GET %s", "sen:held") == REDIS_REPLY_STRING &&
          strcmp(buf, rlock_lock_token(&a)) == 0); /* acknowledged: on the replica too */
    if (!quick) { /* the rlock command and rlock check find it the same way */
        char s0[32], s1[32], s2[32], out[4096], want[64];
        const char *lock[] = { "--sentinel", s0, "--sentinel", s1, "--sentinel", s2, "--master", "mymaster",
                               "sen:cli", "sh", "-c", "exit 7", NULL };
        const char *chk[] = { "--sentinel", s0, "--sentinel", s1, "--master", "mymaster", NULL };
        snprintf(s0, sizeof s0, "127.0.0.1:%d", sen[0].port);
        snprintf(s1, sizeof s1, "127.0.0.1:%d", sen[1].port);
        snprintf(s2, sizeof s2, "127.0.0.1:%d", sen[2].port);
        CHECK_EQ_LL(cli_run(0, lock, NULL, out, sizeof out), 7);
        CHECK_EQ_LL(check_run(chk, NULL, out, sizeof out), 1); /* no AOF: warnings */
        snprintf(want, sizeof want, "names 127.0.0.1:%d as primary 'mymaster'", prim.port);
        CHECK_MSG(strstr(out, want) != NULL, "%s", out);
        lock[7] = "nosuch";
        lock[8] = "-n";
        lock[9] = "sen:cli";
        lock[10] = "true";
        lock[11] = NULL;
        CHECK_EQ_LL(cli_run(0, lock, NULL, out, sizeof out), 69);
        CHECK_MSG(strstr(out, "does not know 'nosuch'") != NULL, "%s", out);
    }

    /* failover mid-run (the lock held): the replica is promoted. The
     * valgrind run (quick) stops here: the demotion alone takes ~11 s. */
    if (quick) goto done;
    /* a connect under way when the Sentinels announce the new primary: it
     * already asked a Sentinel, whose answer (the old primary, which still
     * says ROLE master) waits unread; its own watch sees the announcement */
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc3, &sn, 60000), 0);
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w3, &pc3), 0);
    CHECK(watch_until(&w3, 5000, watch_subscribed));
    r3 = pc3.tr.connect(pc3.tr.ctx);
    printf("sentinel: a connect left %s (phase %d)\n", r3 == 0 ? "under way" : "done", pc3.phase);
    t0 = rh_now_ms();
    for (end = t0 + 15000; rh_now_ms() < end; rh_sleep_ms(200)) {
        char r[128];
        rh_str(&sen[0], r, sizeof r, "SENTINEL FAILOVER %s", "mymaster");
        if (strcmp(r, "OK") == 0) break;
    }
    for (end = rh_now_ms() + 20000; rh_now_ms() < end && !promoted;) {
        (void)watch_until(&w, 50, watch_switched); /* the event loop goes on meanwhile */
        (void)watch_until(&w3, 10, watch_switched);
        if (sentinel_master_port(&sen[0]) == rep.port && is_primary(&rep)) promoted = 1;
    }
    CHECK_MSG(promoted, "the replica was not promoted within 20 s");
    printf("sentinel: failover took %llu ms\n", rh_now_ms() - t0);
    if (!promoted) goto done;

    /* +switch-master: the watch marks the connection as soon as the
     * Sentinels announce the new primary - seconds before the old one is
     * demoted. Until then the old primary still believes it is the primary
     * and takes writes from clients connected to it (a split brain: without
     * the watch an extend would land there; only the replica
     * acknowledgement would show it). With the mark, the next request
     * drops the connection and asks the Sentinels again. */
    {
        int old_still_primary;
        rlock_status st;
        CHECK_MSG(watch_until(&w, 10000, watch_switched), "no +switch-master within 10 s (%s)", w.err);
        old_still_primary = is_primary(&prim);
        /* the connect under way goes on: it must end on the new primary
         * (asking again), never on the old one unmarked */
        (void)watch_until(&w3, 2000, watch_switched);
        while (r3 == 0) {
            (void)pc3.tr.wait(pc3.tr.ctx, RLOCK_WANT_WRITE, 100);
            r3 = pc3.tr.connect(pc3.tr.ctx);
        }
        CHECK_EQ_LL(r3, 1);
        CHECK_MSG(pc3.port == rep.port || pc3.switched, "a connect under way at the failover ended on port %d "
                  "(old primary %d, new %d), unmarked (watch switches %lu)", pc3.port, prim.port, rep.port, w3.switches);
        rlock_posix_sentinel_watch_close(&w3);
        rlock_posix_close(&pc3);
        CHECK_EQ_LL(w.switches, 1);
        CHECK_EQ_LL(pc.switched, 1);
        /* the held lock was acknowledged by the replica, so the new primary
         * has it: it extends there, in one call */
        st = rlock_extend(&a, 30000);
        CHECK_MSG(st == RLOCK_OK, "extend after +switch-master: %s (%s)", rlock_status_str(st), rlock_node_error(&node));
        CHECK_EQ_LL(pc.switched, 0); /* the mark was taken: reconnected */
        CHECK_EQ_LL(pc.port, rep.port);
        printf("sentinel: +switch-master %llu ms after the failover began; the client moved to the new primary "
               "while the old one %s\n", rh_now_ms() - t0,
               old_still_primary ? "still took writes as a primary" : "was already demoted");
    }
    /* a Sentinel that has not caught up yet (fake: it still names the old
     * primary, which still says ROLE master until it is demoted) asked
     * first by a connect whose watch heard where the primary is now: the
     * connect takes the next Sentinel's answer, not the old primary */
    if (is_primary(&prim)) {
        fake_sentinel fk;
        rlock_posix_sentinel sn5 = sn;
        rlock_posix_sentinel_watch w5;
        rlock_posix_conn pc5;
        int fport = fake_sentinel_open(&fk, prim.port), r = 0;
        unsigned long long until;
        CHECK(fport > 0);
        sn5.n = 4;
        sn5.port[0] = fport;
        for (i = 0; i < 3; i++) { sn5.host[i + 1] = "127.0.0.1"; sn5.port[i + 1] = sen[i].port; }
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc5, &sn5, 5000), 0);
        CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w5, &pc5), 0);
        for (until = rh_now_ms() + 5000; !w5.subscribed && rh_now_ms() < until; rh_sleep_ms(5)) {
            fake_sentinel_pump(&fk);
            (void)rlock_posix_sentinel_watch_step(&w5);
        }
        CHECK_MSG(w5.subscribed && w5.at > 0, "watch: %s", w5.err);
        for (until = rh_now_ms() + 5000; (r = pc5.tr.connect(pc5.tr.ctx)) == 0 && rh_now_ms() < until;) {
            fake_sentinel_pump(&fk);
            (void)pc5.tr.wait(pc5.tr.ctx, RLOCK_WANT_WRITE, 10);
        }
        CHECK_EQ_LL(r, 1);
        CHECK_MSG(pc5.port == rep.port, "a lagging Sentinel asked first: connected to port %d (old primary %d, new %d)",
                  pc5.port, prim.port, rep.port);
        rlock_posix_sentinel_watch_close(&w5);
        rlock_posix_close(&pc5);
        fake_sentinel_close(&fk);
    } else {
        printf("sentinel: the old primary was demoted already: the lagging-Sentinel case is not run\n");
    }
    CHECK(rh_int(&rep, "PTTL %s", "sen:held") > 20000);
    /* a failover missed while nobody watched: a watch started afterwards
     * asks where the primary is first, and marks the connection still on
     * the old one */
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&late, &pc2), 0);
    CHECK(watch_until(&late, 5000, watch_subscribed));
    CHECK_EQ_LL(late.switches, 1);
    CHECK_EQ_LL(pc2.switched, 1);
    rlock_posix_sentinel_watch_close(&late);
    {
        int demoted = 0;
        for (end = rh_now_ms() + 20000; rh_now_ms() < end; rh_sleep_ms(50))
            if (!is_primary(&prim)) { demoted = 1; break; }
        CHECK_MSG(demoted, "the old primary was not demoted within 20 s");
        printf("sentinel: old primary demoted %llu ms after the failover began\n", rh_now_ms() - t0);
    }
    /* never on a replica: new locks go to the new primary only (once the
     * old one replicates from it, so that WAIT 1 can be met) */
    CHECK(wait_replicas(&rep, 1));
    CHECK_EQ_ST(rlock_acquire(&b, 30000, 5000), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&rep, "EXISTS %s", "sen:next"), 1);
    CHECK_EQ_ST(rlock_release(&b), RLOCK_OK);
    CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(&rep, "EXISTS %s", "sen:held"), 0);
    /* the watched Sentinel goes away: the watch moves on to the next */
    {
        size_t at = w.at;
        rh_server_stop(&sen[at]);
        CHECK(watch_until(&w, 3000, watch_not_subscribed));
        CHECK_MSG(w.err[0] != '\0', "%s", w.err);
        CHECK(watch_until(&w, 5000, watch_subscribed));
        CHECK(w.at != at);
        CHECK_EQ_LL(w.switches, 1);
    }
done:
    rlock_posix_sentinel_watch_close(&w);
    rlock_posix_close(&pc2);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    /* bad arguments */
    sn.n = 0;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
    sn.n = 1;
    sn.master = "";
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
    /* nobody knows the name: the connect fails and says why (asking a
     * Sentinel still running: one was stopped above) */
    for (i = 0; i < 3; i++)
        if (sen[i].pid > 0) { sn.port[0] = sen[i].port; break; }
    sn.master = "nosuch";
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:x", 5, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_E_IO);
    CHECK_MSG(strstr(rlock_node_error(&node), "does not know 'nosuch'") != NULL, "%s", rlock_node_error(&node));
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
out:
    for (i = 0; i < 3; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&rep);
    rh_server_stop(&prim);
}

/* Stale or lying Sentinels: the first names a replica (it says ROLE
 * slave), the second an address where nothing listens (a primary that
 * died), the third the primary. Each connect goes on to the next Sentinel
 * rather than failing - one bad Sentinel must not stop all locking. */
static void test_sentinel_stale(void) {
    rh_server prim, rep, sen[3];
    char ro[64];
    const char *rep_args[3];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a;
    rlock_status st;
    int i, up = 0, fds0, named[3];

    CHECK(rh_server_start(&prim, NULL) == 0);
    snprintf(ro, sizeof ro, "127.0.0.1 %d", prim.port);
    rep_args[0] = "--replicaof"; rep_args[1] = ro; rep_args[2] = NULL;
    CHECK(rh_server_start(&rep, rep_args) == 0);
    named[0] = rep.port;
    named[1] = rh_free_port();
    named[2] = prim.port;
    for (i = 0; i < 3; i++) up += sentinel_start(&sen[i], named[i], 1) == 0;
    CHECK_EQ_LL(up, 3);
    if (up != 3) goto out;
    memset(&sn, 0, sizeof sn);
    sn.n = 3;
    sn.master = "mymaster";
    for (i = 0; i < 3; i++) { sn.host[i] = "127.0.0.1"; sn.port[i] = sen[i].port; }
    for (i = 0; i < 2; i++) CHECK_EQ_LL(sentinel_master_port(&sen[i]), named[i]);
    fds0 = rh_count_fds();
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 3000;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:stale", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire(&a, 30000, 0);
    CHECK_MSG(st == RLOCK_OK, "acquire past a Sentinel naming a replica and one naming a dead address: %s (%s)",
              rlock_status_str(st), rlock_node_error(&node));
    CHECK_EQ_LL(pc.port, prim.port);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "sen:stale"), 1);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    /* only the bad ones: the connect fails, saying why the last one did */
    sn.n = 2;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:stale", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_E_IO);
    CHECK_MSG(strstr(rlock_node_error(&node), "Connection refused") != NULL, "%s", rlock_node_error(&node));
    sn.port[1] = sen[0].port; /* both name the replica */
    CHECK_EQ_ST(rlock_acquire(&a, 30000, 0), RLOCK_E_IO);
    CHECK_MSG(strstr(rlock_node_error(&node), "not a primary") != NULL, "%s", rlock_node_error(&node));
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    CHECK_EQ_LL(rh_count_fds(), fds0);
    CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "sen:stale"), 0);
out:
    for (i = 0; i < 3; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&rep);
    rh_server_stop(&prim);
}

/* connect_timeout_ms in the blocking calls (one poll() over all their
 * connections: the adapter's wait_many): a connect that hangs (the
 * server's accept queue full: the SYN is dropped) fails when its bound
 * runs out, with its own reason - not at the request's later deadline as a
 * timeout. */
static void test_connect_bound(void) {
    rh_hang hang;
    int port;
    rlock_posix_conn c;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock lk;
    rlock_status st;
    unsigned long long t0;

    port = rh_hang_open(&hang);
    CHECK_MSG(port > 0, "could not fill a listener's accept queue");
    if (port > 0) {
        CHECK_EQ_LL(rlock_posix_init_tcp(&c, "127.0.0.1", port, 300), 0);
        CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&c)), RLOCK_OK);
        rlock_config_init(&cfg);
        cfg.node_timeout_ms = 5000;
        CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&lk, &cl, "ct", 2, RLOCK_KIND_SIMPLE), RLOCK_OK);
        t0 = rh_now_ms();
        st = rlock_acquire(&lk, 10000, 0);
        CHECK_EQ_ST(st, RLOCK_E_IO);
        CHECK_MSG(strstr(rlock_node_error(&node), "timed out after 300 ms") != NULL,
                  "acquire: '%s' after %llu ms (connect bound 300 ms, node timeout 5000 ms)", rlock_node_error(&node),
                  rh_now_ms() - t0);
        rlock_client_close(&cl);
        rlock_posix_close(&c);
        CHECK_EQ_LL(c.fd, -1);
    }
    rh_hang_close(&hang);
}

/* A Sentinel that does not answer (paused: the kernel still accepts the
 * connection and takes the question) must not stop the client from asking
 * the next one: Sentinel is there so that one of them may fail. Each
 * Sentinel gets its share of the connect's bound, in the blocking calls
 * (wait_many) and in the transport's own wait(). Nothing leaks. */
static void test_sentinel_silent(void) {
    rh_server prim, sen[2];
    rlock_posix_sentinel sn;
    rlock_posix_sentinel_watch w;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a;
    rlock_status st;
    int i, up = 0, fds0;
    unsigned long long t0;

    CHECK(rh_server_start(&prim, NULL) == 0);
    for (i = 0; i < 2; i++) up += sentinel_start(&sen[i], prim.port, 1) == 0;
    CHECK_EQ_LL(up, 2);
    if (up != 2) goto out;
    memset(&sn, 0, sizeof sn);
    sn.n = 2;
    sn.master = "mymaster";
    for (i = 0; i < 2; i++) { sn.host[i] = "127.0.0.1"; sn.port[i] = sen[i].port; }
    rh_server_pause(&sen[0]); /* the first one asked: silent */
    fds0 = rh_count_fds();
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 3000;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:silent", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire(&a, 30000, 0);
    CHECK_MSG(st == RLOCK_OK, "acquire with the first Sentinel silent: %s (%s) after %llu ms", rlock_status_str(st),
              rlock_node_error(&node), rh_now_ms() - t0);
    CHECK_EQ_LL(pc.port, prim.port);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    /* the transport's own wait(), as a program without wait_many drives it */
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    {
        int r, n = 0;
        t0 = rh_now_ms();
        while ((r = pc.tr.connect(pc.tr.ctx)) == 0 && n++ < 1000) (void)pc.tr.wait(pc.tr.ctx, RLOCK_WANT_WRITE, 3000);
        CHECK_MSG(r == 1, "connect with the first Sentinel silent: %d (%s) after %llu ms", r, pc.err,
                  rh_now_ms() - t0);
        CHECK_EQ_LL(pc.port, prim.port);
    }
    rlock_posix_close(&pc);
    /* the watch too: a silent Sentinel is left for the next one once the
     * connect bound passes without its answers (its interest says when to
     * step: not "never") */
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
    {
        int fd;
        uint32_t t = 0;
        unsigned long long end = rh_now_ms() + 2000;
        while (w.state != RLOCK__SW_UP && rh_now_ms() < end) {
            (void)rlock_posix_sentinel_watch_step(&w);
            rh_sleep_ms(5);
        }
        CHECK_EQ_LL(w.at, 0);
        (void)rlock_posix_sentinel_watch_interest(&w, &fd, &t);
        CHECK_MSG(t <= 1000, "watch on the silent Sentinel: step after %lu ms", (unsigned long)t);
    }
    CHECK_MSG(watch_until(&w, 6000, watch_subscribed), "the watch stayed on the silent Sentinel (%s)", w.err);
    CHECK_EQ_LL(w.at, 1);
    /* ... and one that stops answering once subscribed (its PING is not
     * answered: RLOCK_POSIX_SENTINEL_PING_MS is 1000 here): the next one */
    rh_server_resume(&sen[0]);
    rh_server_pause(&sen[1]);
    CHECK_MSG(watch_until(&w, 8000, watch_not_subscribed), "the watch stayed on the stopped Sentinel");
    CHECK_MSG(strstr(w.err, "PING") != NULL, "%s", w.err);
    CHECK_MSG(watch_until(&w, 6000, watch_subscribed), "no other Sentinel (%s)", w.err);
    CHECK_EQ_LL(w.at, 0);
    rh_server_resume(&sen[1]);
    rh_server_pause(&sen[0]);
    rlock_posix_sentinel_watch_close(&w);
    /* a node timeout shorter than a Sentinel's share (the default one is
     * 50..250 ms): the request gives up on the silent Sentinel first - its
     * retry must ask the next one, not the silent one again */
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    cfg.node_timeout_ms = 300;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:silent", 10, RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_acquire(&a, 30000, 5000);
    CHECK_MSG(st == RLOCK_OK, "acquire (node timeout 300 ms) with the first Sentinel silent: %s (%s) after %llu ms",
              rlock_status_str(st), rlock_node_error(&node), rh_now_ms() - t0);
    CHECK_EQ_LL(pc.port, prim.port);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    CHECK_EQ_LL(rh_count_fds(), fds0);
    rh_server_resume(&sen[0]);
out:
    for (i = 0; i < 2; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&prim);
}

/* A command to a Sentinel that wants AUTH pass: its reply as text (status,
 * string, error), or "" when none. */
static void sentinel_cmd(const rh_server *s, const char *pass, char *out, size_t cap, const char *cmd) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    out[0] = '\0';
    if (!c) return;
    r = (redisReply *)redisCommand(c, "AUTH %s", pass);
    if (r) freeReplyObject(r);
    r = (redisReply *)redisCommand(c, cmd);
    if (r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_ERROR))
        snprintf(out, cap, "%s", r->str);
    else if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(out, cap, "%s", r->element[1]->str); /* GET-MASTER-ADDR-BY-NAME: the port */
    if (r) freeReplyObject(r);
    redisFree(c);
}

/* Start build/rlock-asan ARGS in the background, stdout+stderr into file. */
static pid_t cli_spawn(const char *const *args, const char *file) {
    const char *argv[32];
    int argc = 0;
    argv[argc++] = CLI_BIN;
    while (*args && argc < 31) argv[argc++] = *args++;
    argv[argc] = NULL;
    return rh_spawn(argv, file, NULL, 0);
}

/* The text of file (at most cap - 1 bytes; "" when missing). */
static const char *slurp(const char *file, char *out, size_t cap) {
    FILE *f = fopen(file, "r");
    size_t n = 0;
    if (f) { n = fread(out, 1, cap - 1, f); fclose(f); }
    out[n] = '\0';
    return out;
}

/* The rlock command under Sentinel: Sentinels that want AUTH (requirepass),
 * one named by host name, and a failover while the command holds the lock
 * and COMMAND runs: rlock follows the Sentinels' +switch-master at once and
 * renews on the new primary (the old one still takes writes then: the split
 * brain README describes), the grant - acknowledged by the replica
 * (--replicas 1) - is there, COMMAND keeps running, and the lock is
 * released on the new primary at the end. */
static void test_sentinel_cli(void) {
    static const char *const sconf = "requirepass sentpw\nsentinel sentinel-pass sentpw\n";
    rh_server prim, rep, sen[3];
    char ro[64], pwfile[200], badfile[200], s0[40], s1[40], s2[40], out[8192], tok[64], buf[128], want[128];
    char logf[200], tokf[200], stopf[200], donef[200], script[1200];
    const char *rep_args[3];
    int i, up = 0, rc, status = -1, moved = 0;
    unsigned long long t0, end;
    pid_t pid;
    FILE *f;

    snprintf(pwfile, sizeof pwfile, "%s/sentpw", tmpdir);
    snprintf(badfile, sizeof badfile, "%s/sentbad", tmpdir);
    snprintf(logf, sizeof logf, "%s/hold.log", tmpdir);
    snprintf(tokf, sizeof tokf, "%s/hold.tok", tmpdir);
    snprintf(stopf, sizeof stopf, "%s/hold.stop", tmpdir);
    snprintf(donef, sizeof donef, "%s/hold.done", tmpdir);
    CHECK(rh_server_start(&prim, NULL) == 0);
    snprintf(ro, sizeof ro, "127.0.0.1 %d", prim.port);
    rep_args[0] = "--replicaof"; rep_args[1] = ro; rep_args[2] = NULL;
    CHECK(rh_server_start(&rep, rep_args) == 0);
    CHECK(wait_replicas(&prim, 1));
    for (i = 0; i < 3; i++) up += sentinel_start_conf(&sen[i], prim.port, 2, sconf) == 0;
    CHECK_EQ_LL(up, 3);
    if (up != 3) goto out;
    snprintf(s0, sizeof s0, "localhost:%d", sen[0].port); /* by name: resolved before the non-blocking part */
    snprintf(s1, sizeof s1, "127.0.0.1:%d", sen[1].port);
    snprintf(s2, sizeof s2, "127.0.0.1:%d", sen[2].port);
    f = fopen(pwfile, "w");
    if (f) { fputs("sentpw\n", f); fclose(f); }
    f = fopen(badfile, "w");
    if (f) { fputs("wrong\n", f); fclose(f); }

    /* Sentinel AUTH: none given -> the Sentinel's NOAUTH is said; a wrong
     * one -> refused; the right one -> COMMAND runs on the primary */
    {
        const char *noauth[] = { "--sentinel", s1, "--master", "mymaster", "-n", "sen:auth", "true", NULL };
        const char *bad[] = { "--sentinel", s1, "--sentinel-password-file", badfile, "--master", "mymaster", "-n",
                              "sen:auth", "true", NULL };
        const char *good[] = { "--sentinel", s0, "--sentinel-password-file", pwfile, "--master", "mymaster", "-n",
                               "sen:auth", "sh", "-c", "exit 7", NULL };
        const char *userless[] = { "--sentinel", s0, "--sentinel-user", "default", "--master", "mymaster", "sen:auth",
                                   "true", NULL };
        rc = cli_run(0, noauth, NULL, out, sizeof out); /* 77: as a refused AUTH on a plain server */
        CHECK_MSG(rc == 77 && strstr(out, "NOAUTH") != NULL, "exit %d:\n%s", rc, out);
        rc = cli_run(0, bad, NULL, out, sizeof out);
        CHECK_MSG(rc == 77 && strstr(out, "refused AUTH") != NULL, "exit %d:\n%s", rc, out);
        rc = cli_run(0, good, NULL, out, sizeof out);
        CHECK_MSG(rc == 7, "exit %d:\n%s", rc, out);
        noauth[4] = "-v";
        rc = cli_run(0, noauth, "RLOCK_SENTINEL_PASSWORD=sentpw", out, sizeof out); /* from the environment */
        CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
        {   /* rlock check asks the Sentinels the same way */
            const char *chk[] = { "--sentinel", s1, "--sentinel-password-file", pwfile, "--master", "mymaster", NULL };
            rc = check_run(chk, NULL, out, sizeof out);
            snprintf(want, sizeof want, "names 127.0.0.1:%d as primary 'mymaster'", prim.port);
            CHECK_MSG(rc == 1 && strstr(out, want) != NULL, "check: exit %d:\n%s", rc, out); /* no AOF: warnings */
            chk[3] = badfile;
            rc = check_run(chk, NULL, out, sizeof out);
            CHECK_MSG(rc == 77 && strstr(out, "refused AUTH") != NULL, "check, wrong password: exit %d:\n%s", rc, out);
            chk[2] = "--master"; chk[3] = "mymaster"; chk[4] = NULL;
            rc = check_run(chk, NULL, out, sizeof out);
            CHECK_MSG(rc == 77 && strstr(out, "NOAUTH") != NULL, "check, no password: exit %d:\n%s", rc, out);
        }
        rc = cli_run(0, userless, NULL, out, sizeof out); /* a user name needs a password: nothing sent */
        CHECK_MSG(rc == 64 && strstr(out, "--sentinel-user needs a password") != NULL, "exit %d:\n%s", rc, out);
        CHECK_EQ_LL(rh_int(&prim, "EXISTS %s", "sen:auth"), 0);
    }

    /* hold through a failover */
    unlink(tokf); unlink(stopf); unlink(donef);
    snprintf(script, sizeof script,
             "echo \"$RLOCK_TOKEN\" > %s.tmp && mv %s.tmp %s; while [ ! -e %s ]; do sleep 0.05; done; echo done > %s",
             tokf, tokf, tokf, stopf, donef);
    {
        const char *hold[] = { "-v", "--ttl", "3s", "--replicas", "1", "--sentinel", s0, "--sentinel", s1, "--sentinel",
                               s2, "--sentinel-password-file", pwfile, "--master", "mymaster", "sen:hold", "-c", script,
                               NULL };
        pid = cli_spawn(hold, logf);
    }
    CHECK(pid > 0);
    if (pid <= 0) goto out;
    for (end = rh_now_ms() + 15000; rh_now_ms() < end && access(tokf, F_OK) != 0; rh_sleep_ms(20)) {}
    slurp(tokf, tok, sizeof tok);
    tok[strcspn(tok, "\n")] = '\0';
    CHECK_MSG(tok[0] != '\0', "COMMAND did not start:\n%s", slurp(logf, out, sizeof out));
    CHECK(rh_str(&prim, buf, sizeof buf, "GET %s", "sen:hold") == REDIS_REPLY_STRING && strncmp(buf, tok, strlen(tok)) == 0);
    CHECK(rh_str(&rep, buf, sizeof buf, "GET %s", "sen:hold") == REDIS_REPLY_STRING && strncmp(buf, tok, strlen(tok)) == 0);

    /* the failover */
    t0 = rh_now_ms();
    for (end = t0 + 15000; rh_now_ms() < end; rh_sleep_ms(200)) {
        sentinel_cmd(&sen[1], "sentpw", buf, sizeof buf, "SENTINEL FAILOVER mymaster");
        if (strcmp(buf, "OK") == 0) break;
    }
    CHECK_MSG(strcmp(buf, "OK") == 0, "SENTINEL FAILOVER: %s", buf);
    snprintf(want, sizeof want, "renewed 'sen:hold' on the new primary 127.0.0.1:%d", rep.port);
    for (end = rh_now_ms() + 25000; rh_now_ms() < end && !moved; rh_sleep_ms(20))
        moved = strstr(slurp(logf, out, sizeof out), want) != NULL;
    CHECK_MSG(moved, "rlock did not renew on the new primary:\n%s", out);
    if (moved) {
        int old_primary = is_primary(&prim);
        printf("sentinel cli: renewed on the new primary %llu ms after SENTINEL FAILOVER (the old primary %s)\n",
               rh_now_ms() - t0, old_primary ? "still took writes: the split brain" : "was already demoted");
    }
    CHECK(strstr(out, "+switch-master") != NULL);
    CHECK(is_primary(&rep));
    /* the lock is on the new primary, and renewed there: still there after
     * two leases (3 s each) with COMMAND still running */
    CHECK(rh_str(&rep, buf, sizeof buf, "GET %s", "sen:hold") == REDIS_REPLY_STRING && strncmp(buf, tok, strlen(tok)) == 0);
    rh_sleep_ms(6500);
    CHECK(rh_str(&rep, buf, sizeof buf, "GET %s", "sen:hold") == REDIS_REPLY_STRING && strncmp(buf, tok, strlen(tok)) == 0);
    CHECK(rh_int(&rep, "PTTL %s", "sen:hold") > 0);
    CHECK_EQ_LL(waitpid(pid, &status, WNOHANG), 0); /* rlock and COMMAND still run */
    CHECK(access(donef, F_OK) != 0);
    CHECK_MSG(strstr(slurp(logf, out, sizeof out), "lost") == NULL, "%s", out);
    /* COMMAND ends: exit 0, released on the new primary */
    f = fopen(stopf, "w");
    if (f) fclose(f);
    for (end = rh_now_ms() + 15000; rh_now_ms() < end && waitpid(pid, &status, WNOHANG) == 0; rh_sleep_ms(20)) {}
    if (rh_now_ms() >= end) { kill(pid, SIGKILL); waitpid(pid, &status, 0); }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rlock ended with status %d:\n%s", status,
              slurp(logf, out, sizeof out));
    CHECK(access(donef, F_OK) == 0);
    CHECK_EQ_LL(rh_int(&rep, "EXISTS %s", "sen:hold"), 0);
out:
    unlink(pwfile); unlink(badfile); unlink(logf); unlink(tokf); unlink(stopf); unlink(donef);
    for (i = 0; i < 3; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&rep);
    rh_server_stop(&prim);
}

/* Connect pc (Sentinel-led) while fk answers as a Sentinel: 1 / RLOCK_IO_ERROR. */
static int connect_pumping(rlock_posix_conn *pc, fake_sentinel *fk) {
    unsigned long long until = rh_now_ms() + 10000;
    int r;
    while ((r = pc->tr.connect(pc->tr.ctx)) == 0 && rh_now_ms() < until) {
        fake_sentinel_pump(fk);
        rh_sleep_ms(2);
    }
    return r;
}

/* What Sentinels and primaries answer: a port in a Sentinel's answer that
 * is not 1..65535 in digits is refused, saying so, and the next Sentinel
 * asked; a primary's ROLE answer longer than the connect's buffer (four
 * replicas announcing 250-byte addresses: well over 1 KiB) is read
 * through, not refused. */
static void test_sentinel_answers(void) {
    static const char *const bad[] = { "99999999999", "0", "65536", "12a", "-1", "" };
    rh_server prim, reps[4], sen;
    char ro[64], ann[4][260];
    const char *rep_args[5];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a;
    rlock_status st;
    fake_sentinel fk;
    int i, up = 0, fport, r;
    size_t k;

    CHECK(rh_server_start(&prim, NULL) == 0);
    CHECK(sentinel_start(&sen, prim.port, 1) == 0);
    fport = fake_sentinel_open(&fk, prim.port);
    CHECK(fport > 0);
    if (prim.pid <= 0 || sen.pid <= 0 || fport <= 0) goto out0;
    memset(&sn, 0, sizeof sn);
    sn.master = "mymaster";
    sn.host[0] = sn.host[1] = "127.0.0.1";
    sn.port[0] = fport;
    sn.port[1] = sen.port;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fk.port_text = bad[k];
        sn.n = 1; /* the fake one alone: refused, saying why */
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
        r = connect_pumping(&pc, &fk);
        CHECK_MSG(r == RLOCK_IO_ERROR && strstr(pc.err, "bad port") != NULL, "port '%s': %d (%s), port %d", bad[k], r,
                  pc.err, pc.port);
        rlock_posix_close(&pc);
        sn.n = 2; /* then the real one */
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
        r = connect_pumping(&pc, &fk);
        CHECK_MSG(r == 1 && pc.port == prim.port, "port '%s', then a real Sentinel: %d (%s)", bad[k], r, pc.err);
        {   /* the watch asking the fake one: a bad port is no new primary */
            rlock_posix_sentinel_watch w;
            unsigned long long until = rh_now_ms() + 3000;
            CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
            while (!w.err[0] && rh_now_ms() < until) {
                fake_sentinel_pump(&fk);
                (void)rlock_posix_sentinel_watch_step(&w);
                rh_sleep_ms(2);
            }
            CHECK_MSG(strstr(w.err, "lagging") != NULL, "watch, port '%s': '%s'", bad[k], w.err);
            CHECK_MSG(w.switches == 0 && pc.switched == 0 && pc.sn_hint[0] == '\0',
                      "port '%s' taken by the watch: %lu switches, hint %s:%d", bad[k], w.switches, pc.sn_hint,
                      pc.sn_hint_port);
            rlock_posix_sentinel_watch_close(&w);
        }
        rlock_posix_close(&pc);
    }

    /* a connect under way when the watch marks it (the primary moved: what
     * rlock__sw_moved does, set by hand here) starts again - on a socket
     * that is not the old one's number: rlock did not reconnect (its gen is
     * the same), so an event loop that keeps registrations (epoll) would
     * keep the closed socket's and never hear of the new one */
    {
        int fd0;
        fk.port_text = NULL;
        sn.n = 1;
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 5000), 0);
        for (i = 0; i < 100 && (r = pc.tr.connect(pc.tr.ctx)) == 0 && pc.phase != RLOCK__SN_ASK_READ; i++)
            rh_sleep_ms(2); /* (asked; the fake Sentinel, not pumped, has not answered) */
        CHECK_MSG(r == 0 && pc.phase == RLOCK__SN_ASK_READ, "connect: %d, phase %d (%s)", r, pc.phase, pc.err);
        fd0 = pc.fd;
        pc.switched = 1;
        r = pc.tr.connect(pc.tr.ctx);
        CHECK_EQ_LL(pc.switched, 0);
        CHECK_MSG(r == 1 || (r == 0 && pc.fd >= 0 && pc.fd != fd0),
                  "the connect that started again took descriptor %d of the one it left (connect: %d)", fd0, r);
        r = connect_pumping(&pc, &fk);
        CHECK_MSG(r == 1 && pc.port == prim.port, "after the restart: %d (%s), port %d", r, pc.err, pc.port);
        rlock_posix_close(&pc);
    }

    /* ROLE's answer, > 1 KiB */
    snprintf(ro, sizeof ro, "127.0.0.1 %d", prim.port);
    for (i = 0; i < 4; i++) {
        memset(ann[i], 'a' + i, 250);
        ann[i][250] = '\0';
        rep_args[0] = "--replicaof"; rep_args[1] = ro;
        rep_args[2] = "--replica-announce-ip"; rep_args[3] = ann[i]; rep_args[4] = NULL;
        up += rh_server_start(&reps[i], rep_args) == 0;
    }
    CHECK_EQ_LL(up, 4);
    if (up != 4) goto out;
    CHECK(wait_replicas(&prim, 4));
    sn.n = 1;
    sn.port[0] = sen.port;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
    CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 3000;
    CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:role", 8, RLOCK_KIND_SIMPLE), RLOCK_OK);
    st = rlock_acquire(&a, 30000, 0);
    CHECK_MSG(st == RLOCK_OK, "acquire on a primary with four long-named replicas: %s (%s)", rlock_status_str(st),
              rlock_node_error(&node));
    CHECK_EQ_LL(pc.port, prim.port);
    if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
out:
    for (i = 0; i < 4; i++) rh_server_stop(&reps[i]);
out0:
    fake_sentinel_close(&fk);
    rh_server_stop(&sen);
    rh_server_stop(&prim);
}

/* Where text names host:port after pre (port < 0: no ":PORT"): the host
 * whole, or shortened in the middle - at least 8 of its first and 8 of
 * its last characters around "..." - and the port whole. What follows the
 * port in text (NULL: not so named). */
static const char *named(const char *text, const char *pre, const char *host, int port) {
    char pt[16];
    size_t n = strlen(host), pl;
    const char *t, *dots, *q;
    pt[0] = '\0';
    if (port >= 0) snprintf(pt, sizeof pt, ":%d", port);
    pl = strlen(pt);
    if (strncmp(text, pre, strlen(pre)) != 0) return NULL;
    t = text + strlen(pre);
    if (strncmp(t, host, n) == 0 && strncmp(t + n, pt, pl) == 0) return t + n + pl;
    if ((dots = strstr(t, "...")) == NULL || dots - t < 8 || strncmp(t, host, (size_t)(dots - t)) != 0) return NULL;
    for (q = dots + 3; *q; q++) { /* the end of the name: where its last characters and the port follow */
        size_t tail = (size_t)(q - dots - 3);
        if (tail < 8) continue;
        if ((size_t)(dots - t) + tail >= n) return NULL;
        if (strncmp(q, pt, pl) == 0 && memcmp(dots + 3, host + n - tail, tail) == 0 &&
            (pl || q[0] == '\0' || q[0] == ':' || q[0] == ' ' || q[0] == '\''))
            return q + pl;
    }
    return NULL;
}

/* text is "pre HOST:PORT why", the reason whole, in rlock_node_error's 127 bytes. */
static int names_fit(const char *text, const char *pre, const char *host, int port, const char *why) {
    const char *rest = named(text, pre, host, port);
    return strlen(text) < 128 && rest && strcmp(rest, why) == 0;
}

#define WRONGPASS "WRONGPASS invalid username-password pair or user is disabled."

/* The opening test_long_host_names and test_host_names_253 share, for
 * the host name name: plain TCP to it with nothing listening on free_port
 * (the text names it whole when whole, else as names_fit takes it), then
 * a primary that wants AUTH, a Sentinel that wants AUTH (sentpw) and the
 * fake Sentinel started, and a Sentinel by that name: down, silent (the
 * fake one, not pumped: timed out), refusing AUTH - in discovery and in
 * the watch. 1 with all started, sn set for one Sentinel, "mymaster", no
 * Sentinel password; 0 when something did not start. Either way the
 * caller stops prim and sen and closes fk. */
static int long_name_opening(const char *name, int whole, int free_port, rh_server *prim, rh_server *sen,
                             fake_sentinel *fk, int *fport, rlock_posix_sentinel *sn) {
    static const char *const sconf = "requirepass sentpw\n";
    static const char *const pargs[] = { "--requirepass", "datapw", NULL };
    char want[200];
    rlock_posix_conn pc;
    rlock_posix_sentinel_watch w;
    int i, r = 0;

    /* plain TCP, nothing listening */
    CHECK_EQ_LL(rlock_posix_init_tcp(&pc, name, free_port, 1000), 0);
    for (i = 0; i < 500 && (r = pc.tr.connect(pc.tr.ctx)) == 0; i++) rh_sleep_ms(2);
    CHECK_EQ_LL(r, RLOCK_IO_ERROR);
    snprintf(want, sizeof want, "connect %s:%d: Connection refused", name, free_port);
    if (whole) CHECK_MSG(strcmp(pc.err, want) == 0, "plain: '%s', want '%s'", pc.err, want);
    else CHECK_MSG(names_fit(pc.err, "connect ", name, free_port, ": Connection refused"), "plain: '%s'", pc.err);
    rlock_posix_close(&pc);

    CHECK(rh_server_start(prim, pargs) == 0);
    CHECK(sentinel_start_conf(sen, prim->port, 1, sconf) == 0);
    *fport = fake_sentinel_open(fk, prim->port);
    CHECK(*fport > 0);
    if (prim->pid <= 0 || sen->pid <= 0 || *fport <= 0) return 0;
    memset(sn, 0, sizeof *sn);
    sn->n = 1;
    sn->master = "mymaster";
    /* a Sentinel by the long name: nothing listening */
    sn->host[0] = name;
    sn->port[0] = free_port;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, sn, 1000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, fk), RLOCK_IO_ERROR);
    snprintf(want, sizeof want, ": connect 127.0.0.1:%d: Connection refused", free_port);
    CHECK_MSG(names_fit(pc.err, "Sentinel ", name, free_port, want), "Sentinel down: '%s', want '...%s'", pc.err, want);
    rlock_posix_close(&pc);
    /* ... silent (the fake one, not pumped): timed out */
    sn->port[0] = *fport;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, sn, 300), 0);
    for (i = 0; i < 2000 && (r = pc.tr.connect(pc.tr.ctx)) == 0; i++) rh_sleep_ms(2);
    CHECK_EQ_LL(r, RLOCK_IO_ERROR);
    CHECK_MSG(names_fit(pc.err, "Sentinel ", name, *fport, ": timed out"), "Sentinel silent: '%s'", pc.err);
    rlock_posix_close(&pc);
    /* ... refusing AUTH, in discovery and in the watch */
    sn->port[0] = sen->port;
    sn->sentinel_password = "wrong";
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, fk), RLOCK_IO_ERROR);
    CHECK_MSG(names_fit(pc.err, "Sentinel ", name, sen->port, ": refused AUTH: " WRONGPASS) && pc.auth_refused,
              "Sentinel AUTH: '%s'", pc.err);
    rlock_posix_close(&pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, sn, 2000), 0);
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
    CHECK(!watch_until(&w, 1000, watch_subscribed));
    CHECK_MSG(names_fit(w.err, "Sentinel ", name, sen->port, ": " WRONGPASS), "watch: '%s'", w.err);
    rlock_posix_sentinel_watch_close(&w);
    rlock_posix_close(&pc);
    sn->sentinel_password = NULL;
    return 1;
}

/* Host names longer than 40 (Sentinel) or 64 (plain) characters are named
 * whole in the adapter's texts where the text fits rlock_node_error's 127
 * bytes with its reason: a Kubernetes FQDN is ~70 characters, and with
 * --sentinel the text is the only place that says which Sentinel failed;
 * where it does not fit, the name is shortened in the middle ("...") and
 * the port and the reason stay whole. The long name here is a
 * numeric-looking one that getaddrinfo reads as 127.0.0.1 (inet_aton: the
 * last part 000...1), so no name service is involved. */
static void test_long_host_names(void) {
    char lname[80], want[200], s0[120], bad[200], out[8192];
    rh_server prim, sen;
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    fake_sentinel fk;
    int fport, rc;
    FILE *f;

    snprintf(lname, sizeof lname, "127.0.0.%0*d", 64, 1); /* 72 characters */
    CHECK_EQ_LL(strlen(lname), 72);
    if (!long_name_opening(lname, 1, rh_free_port(), &prim, &sen, &fk, &fport, &sn)) goto out;
    /* a primary named by its long name that wants AUTH (the fake Sentinel
     * names it: a real one announces IPs unless announce-hostnames) */
    fk.host_text = lname;
    sn.host[0] = "127.0.0.1";
    sn.port[0] = fport;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, &fk), RLOCK_IO_ERROR);
    snprintf(want, sizeof want, "primary %s:%d: NOAUTH", lname, prim.port);
    CHECK_MSG(strncmp(pc.err, want, strlen(want)) == 0 && pc.auth_refused, "primary NOAUTH: '%s', want '%s...'",
              pc.err, want);
    rlock_posix_close(&pc);
    /* ... that is not a primary: the fake Sentinel itself (ROLE: an error) */
    fk.old_port = fport;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, &fk), RLOCK_IO_ERROR);
    snprintf(want, sizeof want, "Sentinel 127.0.0.1:%d: ", fport);
    CHECK_MSG(strlen(pc.err) < 128 && strncmp(pc.err, want, strlen(want)) == 0 &&
                  names_fit(pc.err + strlen(want), "names ", lname, fport, ", not a primary (ROLE)"),
              "not a primary: '%s'", pc.err); /* (the reason whole, the name shortened to leave it room) */
    rlock_posix_close(&pc);
    fk.host_text = NULL;

    {   /* the watch follows a primary announced by a long name: a failover
         * (here the fake Sentinel naming the primary by lname, not by the
         * 127.0.0.1 the connection went to) marks the connection */
        rh_server p2;
        char port[16];
        rlock_posix_sentinel_watch w;
        unsigned long long until;
        CHECK(rh_server_start(&p2, NULL) == 0);
        snprintf(port, sizeof port, "%d", p2.port);
        fk.host_text = "127.0.0.1";
        fk.port_text = port;
        sn.host[0] = "127.0.0.1";
        sn.port[0] = fport;
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
        CHECK_EQ_LL(connect_pumping(&pc, &fk), 1);
        CHECK_EQ_LL(pc.port, p2.port);
        fk.host_text = lname;
        CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
        for (until = rh_now_ms() + 3000; w.switches == 0 && !w.err[0] && rh_now_ms() < until; rh_sleep_ms(2)) {
            fake_sentinel_pump(&fk);
            (void)rlock_posix_sentinel_watch_step(&w);
        }
        CHECK_MSG(w.switches == 1 && pc.switched == 1 && strcmp(pc.sn_hint, lname) == 0 && pc.sn_hint_port == p2.port,
                  "watch, a primary named by 72 characters: %lu switches, marked %d, hint '%s':%d (%s)", w.switches,
                  pc.switched, pc.sn_hint, pc.sn_hint_port, w.err);
        rlock_posix_sentinel_watch_close(&w);
        rlock_posix_close(&pc);
        fk.host_text = NULL;
        fk.port_text = NULL;
        rh_server_stop(&p2);
    }

    /* the rlock command says it as it is */
    if (!quick) {
        snprintf(bad, sizeof bad, "%s/l-sentbad", tmpdir);
        if ((f = fopen(bad, "w")) != NULL) { fputs("wrong\n", f); fclose(f); }
        snprintf(s0, sizeof s0, "%s:%d", lname, sen.port);
        {
            const char *a[] = { "--sentinel", s0, "--master", "mymaster", "--sentinel-password-file", bad, "-n",
                                "sen:long", "true", NULL };
            rc = cli_run(0, a, NULL, out, sizeof out);
            const char *at = strstr(out, "Sentinel 127.0.0.0");
            char line[200];
            snprintf(line, sizeof line, "%.*s", at ? (int)strcspn(at, "\n") : 0, at ? at : "");
            CHECK_MSG(rc == 77 && names_fit(line, "Sentinel ", lname, sen.port, ": refused AUTH: " WRONGPASS),
                      "rlock, Sentinel by a long name: exit %d:\n%s", rc, out);
        }
        unlink(bad);
    }
out:
    fake_sentinel_close(&fk);
    rh_server_stop(&sen);
    rh_server_stop(&prim);
}

/* The same with host names as long as DNS allows (253 characters) - where
 * no text can hold the name whole: each says why, whole, and the port, and
 * as much of the name as fits - its start and its end around "..." - in
 * rlock_node_error's 127 bytes; two and three names in one text share the
 * room. (Before, the name filled the 128-byte err and the port and the
 * reason were cut off.) Numeric-looking names read as 127.0.0.1 / .2 / .3. */
static void test_host_names_253(void) {
    char h1[254], h2[254], h3[254];
    rh_server prim, sen;
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    fake_sentinel fk;
    int fport, free_port = rh_free_port(), r, i;
    const char *rest;

    snprintf(h1, sizeof h1, "127.0.0.%0*d", 245, 1);
    snprintf(h2, sizeof h2, "127.0.0.%0*d", 245, 2);
    snprintf(h3, sizeof h3, "127.0.0.%0*d", 245, 3);
    CHECK(strlen(h1) == 253);
    if (!long_name_opening(h1, 0, free_port, &prim, &sen, &fk, &fport, &sn)) goto out;
    /* a primary named by 253 characters (the fake Sentinel's answer) that wants AUTH */
    fk.host_text = h1;
    sn.host[0] = "127.0.0.1";
    sn.port[0] = fport;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, &fk), RLOCK_IO_ERROR);
    CHECK_MSG(names_fit(pc.err, "primary ", h1, prim.port, ": NOAUTH Authentication required.") && pc.auth_refused,
              "primary NOAUTH: '%s'", pc.err);
    rlock_posix_close(&pc);
    /* ... that is not a primary (the fake Sentinel itself), told by a
     * Sentinel of 253 characters too: two long names in one text */
    fk.old_port = fport;
    sn.host[0] = h1;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, &fk), RLOCK_IO_ERROR);
    rest = named(pc.err, "Sentinel ", h1, fport);
    CHECK_MSG(strlen(pc.err) < 128 && rest && strncmp(rest, ": ", 2) == 0 &&
                  names_fit(rest + 2, "names ", h1, fport, ", not a primary (ROLE)"),
              "not a primary: '%s'", pc.err);
    rlock_posix_close(&pc);
    /* ... unreachable (h2 is 127.0.0.2: nothing listens there on that port) */
    fk.host_text = h2;
    fk.old_port = free_port;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
    CHECK_EQ_LL(connect_pumping(&pc, &fk), RLOCK_IO_ERROR);
    rest = named(pc.err, "Sentinel ", h1, fport);
    CHECK_MSG(strlen(pc.err) < 128 && rest && strncmp(rest, ": ", 2) == 0 &&
                  names_fit(rest + 2, "connect ", h2, free_port, ": Connection refused"),
              "primary unreachable: '%s'", pc.err);
    rlock_posix_close(&pc);
    /* a Sentinel lagging behind +switch-master (the watch's hint, set by
     * hand: h3): three long names in one text; the next Sentinel's answer
     * is taken */
    fk.old_port = prim.port;
    fk.host_text = h2;
    sn.n = 2;
    sn.host[1] = "127.0.0.1";
    sn.port[1] = fport;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
    memcpy(pc.sn_hint, h3, sizeof h3);
    pc.sn_hint_port = free_port;
    pc.sn_hint_at = rlock__posix_now_ms();
    for (i = 0; i < 3000 && (r = pc.tr.connect(pc.tr.ctx)) == 0 && pc.sn_tried == 0; i++) {
        fake_sentinel_pump(&fk);
        rh_sleep_ms(1);
    }
    rest = named(pc.err, "Sentinel ", h1, fport);
    CHECK_MSG(strlen(pc.err) < 128 && rest && strncmp(rest, ": ", 2) == 0 &&
                  (rest = named(rest + 2, "names ", h2, prim.port)) != NULL &&
                  names_fit(rest, ", not ", h3, free_port, " (+switch-master)"),
              "lagging: '%s' (connect %d, asked %u)", pc.err, r, (unsigned)pc.sn_tried);
    rlock_posix_close(&pc);
    sn.n = 1;
out:
    fake_sentinel_close(&fk);
    rh_server_stop(&sen);
    rh_server_stop(&prim);
}

/* What rlock_posix_init_sentinel refuses - before it resolves or sends
 * anything - saying why in c->err: no Sentinels, too many, a host NULL,
 * empty or too long, a port not 1..65535, a Sentinel given twice, no
 * master name, one longer than the watch's request can carry (928 bytes;
 * with Sentinel AUTH, that much less: the limit it states), credentials
 * too long. (Before, a master name of 929..968 bytes was taken: discovery
 * worked, but the watch could not ask about it and failed at each try.)
 * c is left as it was: an open connection in it is not lost. */
static void test_sentinel_inputs(void) {
    static char lmaster[1100], lhost[300], lpass[1100];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    size_t k;
    int lfd, p0 = rh_free_port(), p1 = rh_free_port(); /* (nothing is sent to them) */
    char want[96], sa[2][32];

    CHECK(p0 > 0 && p1 > 0);
    if (p1 == p0) p1 = p0 == 65535 ? p0 - 1 : p0 + 1; /* two ports: one Sentinel twice is refused */
    memset(lmaster, 'm', 929);
    memset(lhost, 'h', 256);
    memset(lpass, 'p', 1000);
    memset(&sn, 0, sizeof sn);
    sn.master = "mymaster";
    sn.n = 2;
    sn.host[0] = "127.0.0.1"; sn.port[0] = p0;
    sn.host[1] = "localhost"; sn.port[1] = p1;
    lfd = socket(AF_INET, SOCK_STREAM, 0); /* c's open connection, kept through a refusal */
#define REFUSED(why)                                                                                       \
    do {                                                                                                   \
        memset(&pc, 0, sizeof pc);                                                                         \
        pc.fd = lfd;                                                                                       \
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);                                        \
        CHECK_MSG(strcmp(pc.err, why) == 0, "refused: '%s', want '%s'", pc.err, why);                      \
        CHECK_EQ_LL(pc.fd, lfd);                                                                           \
    } while (0)
    CHECK_EQ_LL(rlock_posix_init_sentinel(NULL, &sn, 1000), -1);
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, NULL, 1000), -1);
    CHECK_MSG(strcmp(pc.err, "Sentinel: no Sentinels given (NULL)") == 0, "'%s'", pc.err);
    sn.n = 0;
    REFUSED("Sentinel: no Sentinels given (n is 0)");
    sn.n = RLOCK_POSIX_MAX_SENTINELS + 1;
    REFUSED("Sentinel: 6 Sentinels given, at most 5 (RLOCK_POSIX_MAX_SENTINELS)");
    sn.n = 2;
    sn.host[1] = NULL;
    REFUSED("Sentinel host[1]: no host name");
    sn.host[1] = "";
    REFUSED("Sentinel host[1]: no host name");
    sn.host[1] = lhost;
    REFUSED("Sentinel host[1]: the name has 256 bytes, at most 255");
    sn.host[1] = "localhost";
    sn.port[1] = 0;
    REFUSED("Sentinel host[1] localhost: port 0 is not 1..65535");
    sn.port[1] = 65536;
    REFUSED("Sentinel host[1] localhost: port 65536 is not 1..65535");
    sn.port[1] = -1;
    REFUSED("Sentinel host[1] localhost: port -1 is not 1..65535");
    sn.host[1] = "127.0.0.1";
    sn.port[1] = p0;
    snprintf(want, sizeof want, "Sentinel host[1] 127.0.0.1:%d: the same Sentinel as host[0]", p0);
    REFUSED(want);
    sn.host[0] = "LocalHost";
    sn.host[1] = "localhost";
    snprintf(want, sizeof want, "Sentinel host[1] localhost:%d: the same Sentinel as host[0]", p0);
    REFUSED(want);
    sn.host[0] = "127.0.0.1";
    sn.port[1] = p1; /* (localhost and 127.0.0.1 on one port are not refused: names, not addresses) */
    sn.master = NULL;
    REFUSED("Sentinel: no master name");
    sn.master = "";
    REFUSED("Sentinel: no master name");
    /* the master name: 928 bytes taken, 929 refused stating the limit */
    sn.master = lmaster;
    REFUSED("Sentinel: the master name has 929 bytes, at most 928");
    lmaster[928] = '\0';
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    CHECK_EQ_LL(pc.fd, -1);
    rlock_posix_close(&pc);
    for (k = 929; k < 1000; k += 13) { /* (929..968 were taken before) */
        lmaster[k] = '\0';
        memset(lmaster, 'm', k);
        memset(&pc, 0, sizeof pc);
        pc.fd = lfd;
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
        CHECK_MSG(strstr(pc.err, "at most 928") != NULL, "%u bytes: '%s'", (unsigned)k, pc.err);
    }
    memset(lmaster, 'm', 929);
    lmaster[929] = '\0';
    /* with Sentinel AUTH the limit is less by AUTH's bytes: "*3 $4 AUTH $4 user $6 secret" is 36 */
    sn.sentinel_username = "user";
    sn.sentinel_password = "secret";
    lmaster[893] = '\0';
    REFUSED("Sentinel: the master name has 893 bytes, at most 892 with these Sentinel credentials");
    lmaster[892] = '\0';
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    rlock_posix_close(&pc);
    sn.sentinel_password = lpass; /* 1000 bytes: no master name fits */
    REFUSED("Sentinel credentials too long: AUTH takes 1033 bytes of the watch's 1024");
    sn.sentinel_username = sn.sentinel_password = NULL;
    sn.master = "mymaster";
    sn.password = lpass; /* the primary's: AUTH and ROLE in 1024 bytes */
    lpass[989] = '\0';
    REFUSED("Sentinel: username and password too long: AUTH and ROLE take 1025 bytes, at most 1024");
    lpass[988] = '\0';
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    rlock_posix_close(&pc);
    sn.password = NULL;
#undef REFUSED
    CHECK(fcntl(lfd, F_GETFD) >= 0);
    close(lfd);
    {   /* the rlock command: a usage error (64), nothing sent */
        const char *a[] = { "--sentinel", sa[0], "--sentinel", sa[1], "--master", "mymaster",
                            "-n", "sen:twice", "true", NULL };
        char out[4096];
        int rc;
        snprintf(sa[0], sizeof sa[0], "localhost:%d", p0);
        snprintf(sa[1], sizeof sa[1], "LocalHost:%d", p0);
        snprintf(want, sizeof want, "--sentinel '%s': that Sentinel is given twice", sa[1]);
        rc = cli_run(0, a, NULL, out, sizeof out);
        CHECK_MSG(rc == 64 && strstr(out, want) != NULL, "rlock, a Sentinel given twice: exit %d:\n%s", rc, out);
        rc = cli_run(1, a, NULL, out, sizeof out); /* rlock check */
        CHECK_MSG(rc == 64 && strstr(out, want) != NULL, "rlock check, a Sentinel given twice: exit %d:\n%s", rc, out);
    }
}

/* What rlock_posix_init_sentinel takes, the watch and a connect can send:
 * init checks the requests by writing them (the watch's [AUTH] question
 * and SUBSCRIBE, RLOCK__SW_TX = 1024 bytes; AUTH and ROLE to the primary,
 * sn_buf's 1024), so the longest master name it states is taken and one
 * byte more refused, for Sentinel credentials of any length (here: user
 * "user" and passwords of 0..999 bytes - the limit crosses 100 and 10
 * bytes), and the watch writes that request whole: 1023 or 1024 bytes
 * (the name's length has a digit less than one byte more would have).
 * The edges worked out by hand: a question and SUBSCRIBE are 94 bytes and
 * the name's, AUTH user with a password of 897 bytes 929, so 897 leaves
 * room for a name of 1 byte (1024 bytes whole) and 898 for none: its AUTH
 * (930 bytes) is stated. The primary's AUTH default PASSWORD and ROLE
 * take 49 bytes and the password's: 975 bytes fit. Nothing here connects
 * anywhere (the watch to a free port: refused). */
static void test_sentinel_request_limits(void) {
    static char lmaster[1100], lpass[1100];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    rlock_posix_sentinel_watch w;
    char want[128];
    size_t p, x;
    int port = rh_free_port();

    memset(&sn, 0, sizeof sn);
    sn.n = 1;
    sn.host[0] = "127.0.0.1";
    sn.port[0] = port;
    sn.master = lmaster;
    sn.sentinel_username = "user";
    sn.sentinel_password = lpass;
    for (p = 0; p < 1000; p += 9) {
        const char *at;
        memset(lpass, 'p', p);
        lpass[p] = '\0';
        memset(lmaster, 'm', 1000);
        lmaster[1000] = '\0';
        memset(&pc, 0, sizeof pc);
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
        if (strncmp(pc.err, "Sentinel credentials too long: AUTH takes ", 42) == 0) {
            CHECK_MSG(p > 897, "password of %u bytes: '%s'", (unsigned)p, pc.err);
            continue;
        }
        at = strstr(pc.err, "at most ");
        x = at ? (size_t)strtoul(at + 8, NULL, 10) : 0;
        snprintf(want, sizeof want, "Sentinel: the master name has 1000 bytes, at most %u with these Sentinel credentials",
                 (unsigned)x);
        CHECK_MSG(x > 0 && strcmp(pc.err, want) == 0 && p <= 897, "password of %u bytes: '%s'", (unsigned)p, pc.err);
        if (x == 0 || x >= 1000) continue;
        lmaster[x + 1] = '\0'; /* one byte more: refused, the same limit */
        snprintf(want, sizeof want, "Sentinel: the master name has %u bytes, at most %u with these Sentinel credentials",
                 (unsigned)x + 1, (unsigned)x);
        memset(&pc, 0, sizeof pc);
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
        CHECK_MSG(strcmp(pc.err, want) == 0, "password of %u bytes, name of %u: '%s'", (unsigned)p, (unsigned)x + 1,
                  pc.err);
        lmaster[x] = '\0'; /* the limit: taken, and the watch writes its request whole */
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
        CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
        (void)rlock_posix_sentinel_watch_step(&w);
        CHECK_MSG((w.tx_len == 1024 || w.tx_len == 1023) && memcmp(w.tx + w.tx_len - 16, "+switch-master\r\n", 16) == 0 &&
                      strstr(w.err, "too long") == NULL,
                  "password of %u bytes, name of %u: the watch wrote %u bytes (%s)", (unsigned)p, (unsigned)x,
                  (unsigned)w.tx_len, w.err);
        rlock_posix_sentinel_watch_close(&w);
        rlock_posix_close(&pc);
    }
    /* the edges: 897 takes a name of 1 byte, 898 none */
    memset(lpass, 'p', 898);
    lpass[897] = '\0';
    lpass[898] = '\0';
    sn.master = "mm";
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
    CHECK_MSG(strcmp(pc.err, "Sentinel: the master name has 2 bytes, at most 1 with these Sentinel credentials") == 0,
              "'%s'", pc.err);
    sn.master = "m";
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
    (void)rlock_posix_sentinel_watch_step(&w);
    CHECK_MSG(w.tx_len == 1024 && memcmp(w.tx, "*3\r\n$4\r\nAUTH\r\n$4\r\nuser\r\n$897\r\npp", 30) == 0,
              "the watch wrote %u bytes (%s)", (unsigned)w.tx_len, w.err);
    rlock_posix_sentinel_watch_close(&w);
    rlock_posix_close(&pc);
    lpass[897] = 'p';
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
    CHECK_MSG(strcmp(pc.err, "Sentinel credentials too long: AUTH takes 930 bytes of the watch's 1024") == 0, "'%s'",
              pc.err);
    /* the primary's: AUTH default PASSWORD, ROLE */
    sn.sentinel_username = sn.sentinel_password = NULL;
    sn.username = "default";
    sn.password = lpass;
    memset(lpass, 'p', 976);
    lpass[976] = '\0';
    memset(&pc, 0, sizeof pc);
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), -1);
    CHECK_MSG(strcmp(pc.err, "Sentinel: username and password too long: AUTH and ROLE take 1025 bytes, at most 1024") == 0,
              "'%s'", pc.err);
    lpass[975] = '\0';
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
    rlock_posix_close(&pc);
}

/* Sentinels that announce host names (announce-hostnames yes,
 * resolve-hostnames yes) as long as a DNS name may be - 253 characters -
 * for a primary whose name is the longest the watch can ask about (its
 * question and SUBSCRIBE fill the 1024-byte tx: 928 bytes; init refuses
 * 929, saying so): the Sentinel's answer names the primary by such a host
 * (discovery connects there; the watch sees c is there: no mark), and a
 * +switch-master naming two such hosts - over 1.4 KiB with that master
 * name, 0.5 KiB with "mymaster" - is understood: c is marked from the
 * message itself, the subscription kept (a message about another master
 * before it changes nothing). The long hosts are numeric-looking names
 * that getaddrinfo reads as 127.0.0.1 / .2 (inet_aton: the last part
 * 000...1), so no name service is involved. */
static void test_sentinel_long_names(void) {
    static char lmaster[930], h1[254], h2[254], push[4096];
    rh_server prim;
    rlock_posix_sentinel sn;
    rlock_posix_sentinel_watch w;
    rlock_posix_conn pc;
    fake_sentinel fk;
    int fport, round, r, p2 = rh_free_port();
    unsigned long long until;

    snprintf(h1, sizeof h1, "127.0.0.%0*d", 245, 1);
    snprintf(h2, sizeof h2, "127.0.0.%0*d", 245, 2);
    CHECK(strlen(h1) == 253 && strlen(h2) == 253);
    memset(lmaster, 'm', 929);
    lmaster[929] = '\0';
    CHECK(rh_server_start(&prim, NULL) == 0);
    fport = fake_sentinel_open(&fk, prim.port);
    CHECK(fport > 0);
    if (prim.pid <= 0 || fport <= 0) goto out;
    memset(&sn, 0, sizeof sn);
    sn.n = 1;
    sn.host[0] = "127.0.0.1";
    sn.port[0] = fport;
    fk.host_text = h1;
    for (round = 0; round < 2; round++) {
        sn.master = round ? lmaster : "mymaster";
        lmaster[928] = '\0'; /* 928 bytes */
        /* discovery: the answer names the primary by h1 */
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
        r = connect_pumping(&pc, &fk);
        CHECK_MSG(r == 1 && strcmp(pc.host, h1) == 0 && pc.port == prim.port,
                  "master of %u bytes, primary named by 253 characters: connect %d (%s), port %d",
                  (unsigned)strlen(sn.master), r, pc.err, pc.port);
        /* the watch: the answer (c is there), subscribed, another master's
         * +switch-master, then c's: h1 -> h2 */
        snprintf(push, sizeof push, "other %s %d %s %d\n%s %s %d %s %d", h1, prim.port, h2, p2, sn.master, h1, prim.port,
                 h2, p2);
        fk.push = push;
        CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
        for (until = rh_now_ms() + 3000; w.switches == 0 && !w.err[0] && rh_now_ms() < until; rh_sleep_ms(2)) {
            fake_sentinel_pump(&fk);
            (void)rlock_posix_sentinel_watch_step(&w);
        }
        CHECK_MSG(w.switches == 1 && pc.switched == 1 && w.subscribed && !w.err[0] && strcmp(pc.sn_hint, h2) == 0 &&
                      pc.sn_hint_port == p2,
                  "+switch-master for a master of %u bytes, hosts of 253: %lu switches, marked %d, subscribed %d, "
                  "hint '%.12s...' (%u bytes):%d, err '%s'",
                  (unsigned)strlen(sn.master), w.switches, pc.switched, w.subscribed, pc.sn_hint,
                  (unsigned)strlen(pc.sn_hint), pc.sn_hint_port, w.err);
        rlock_posix_sentinel_watch_close(&w);
        rlock_posix_close(&pc);
        fk.push = NULL;
    }
    /* one byte more: the watch could not ask about it - refused by init,
     * saying so (test_sentinel_inputs; before, init took it and the watch
     * failed at each try with "master name too long") */
    lmaster[928] = 'm';
    sn.master = lmaster;
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), -1);
    CHECK_MSG(strstr(pc.err, "master name has 929 bytes, at most 928") != NULL, "a master name of 929 bytes: '%s'",
              pc.err);
out:
    fake_sentinel_close(&fk);
    rh_server_stop(&prim);
}

/* A mark of the watch (the primary moved) is for the connection it was set
 * on: when rlock drops that connection itself first (a request timed out:
 * its close hook), the fresh connect asks the Sentinels anyway - the mark
 * must not then drop the new, right connection too. Two Sentinels that
 * disagree stand in for a failover: the first names P1 (the connection
 * goes there), the watch's (the second) names P2. */
static void test_sentinel_stale_mark(void) {
    rh_server p1, p2, sen[2];
    rlock_posix_sentinel sn;
    rlock_posix_sentinel_watch w;
    rlock_posix_conn pc;
    int i, up = 0, r, n = 0;
    long sent;

    CHECK(rh_server_start(&p1, NULL) == 0);
    CHECK(rh_server_start(&p2, NULL) == 0);
    up += sentinel_start(&sen[0], p1.port, 1) == 0;
    up += sentinel_start(&sen[1], p2.port, 1) == 0;
    CHECK_EQ_LL(up, 2);
    if (up != 2 || p1.pid <= 0 || p2.pid <= 0) goto out;
    memset(&sn, 0, sizeof sn);
    sn.n = 2;
    sn.master = "mymaster";
    for (i = 0; i < 2; i++) { sn.host[i] = "127.0.0.1"; sn.port[i] = sen[i].port; }
    CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 3000), 0);
    while ((r = pc.tr.connect(pc.tr.ctx)) == 0 && n++ < 1000) (void)pc.tr.wait(pc.tr.ctx, RLOCK_WANT_WRITE, 100);
    CHECK_MSG(r == 1 && pc.port == p1.port, "connect: %d (%s) port %d", r, pc.err, pc.port);
    CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
    w.at = 1; /* the watch asks the second Sentinel: P2 */
    CHECK_MSG(watch_until(&w, 6000, watch_subscribed), "no subscription (%s)", w.err);
    CHECK_EQ_LL(w.switches, 1);
    CHECK_EQ_LL(pc.switched, 1);
    pc.tr.close(pc.tr.ctx); /* rlock dropped it first (a timeout) */
    /* the fresh connect goes to the Sentinels anyway: the mark is spent. A
     * mark left over would drop this connection at its first send when the
     * connect finished in one call (both answers already there: seen under
     * valgrind), else restart the connect at its next call */
    r = pc.tr.connect(pc.tr.ctx);
    CHECK_MSG(pc.switched == 0, "the stale mark outlived the connection it was set on (connect: %d)", r);
    n = 0;
    while (r == 0 && (r = pc.tr.connect(pc.tr.ctx)) == 0 && n++ < 1000) (void)pc.tr.wait(pc.tr.ctx, RLOCK_WANT_WRITE, 100);
    /* (the first Sentinel lags behind the watch's: the second is taken) */
    CHECK_MSG(r == 1 && pc.port == p2.port, "reconnect: %d (%s) port %d", r, pc.err, pc.port);
    sent = pc.tr.send(pc.tr.ctx, (const unsigned char *)"*1\r\n$4\r\nPING\r\n", 14);
    CHECK_MSG(sent == 14, "the fresh connection to the new primary: send %ld (%s)", sent, pc.err);
    rlock_posix_sentinel_watch_close(&w);
    rlock_posix_close(&pc);
out:
    for (i = 0; i < 2; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&p2);
    rh_server_stop(&p1);
}

/* Drive lk's acquire (begun) in an event loop on rlock_client_interest
 * (helper: its timeout capped by rlock_posix_interest_timeout); *asked_ms:
 * the longest wait it chose while asking the Sentinel on port s0. */
static rlock_status loop_acquire(rlock_client *cl, rlock_lock *lk, const rlock_posix_conn *pc, int helper, int s0,
                                 uint32_t *asked_ms) {
    rlock_status st = RLOCK_WOULD_BLOCK;
    unsigned long long end = rh_now_ms() + 20000;
    *asked_ms = 0;
    while (st == RLOCK_WOULD_BLOCK && rh_now_ms() < end) {
        rlock_interest it;
        struct pollfd p;
        uint32_t t;
        size_t n = rlock_client_interest(cl, &it, 1, &t);
        if (helper) t = rlock_posix_interest_timeout(&it, n, t);
        if (pc->connecting && pc->port == s0 && pc->phase <= RLOCK__SN_ASK_READ && t > *asked_ms) *asked_ms = t;
        p.fd = n == 1 ? it.fd : -1;
        p.events = (short)((n == 1 && (it.events & RLOCK_WANT_READ) ? POLLIN : 0) |
                           (n == 1 && (it.events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        (void)poll(&p, p.fd >= 0 ? 1 : 0, t > 10000 ? 10000 : (int)t);
        rlock_client_step(cl);
        st = rlock_result(lk);
    }
    return st;
}

/* An event loop's wait and a Sentinel's share of the connect bound: with
 * the first Sentinel silent (SIGSTOP), a loop on rlock_client_interest alone
 * sleeps until the request's deadline (node timeout 4 s) - the silent
 * Sentinel costs the whole request; capped by rlock_posix_interest_timeout
 * it wakes when the share (half of the 1 s bound) runs out, asks the
 * second Sentinel and acquires in the same request. */
static void test_sentinel_loop_bound(void) {
    rh_server prim, sen[2];
    rlock_posix_sentinel sn;
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_config cfg;
    rlock_lock a;
    rlock_status st;
    uint32_t asked;
    int i, up = 0, helper;

    CHECK(rh_server_start(&prim, NULL) == 0);
    for (i = 0; i < 2; i++) up += sentinel_start(&sen[i], prim.port, 1) == 0;
    CHECK_EQ_LL(up, 2);
    if (up != 2 || prim.pid <= 0) goto out;
    memset(&sn, 0, sizeof sn);
    sn.n = 2;
    sn.master = "mymaster";
    for (i = 0; i < 2; i++) { sn.host[i] = "127.0.0.1"; sn.port[i] = sen[i].port; }
    rh_server_pause(&sen[0]);
    for (helper = quick; helper < 2; helper++) {
        unsigned long long t0 = rh_now_ms();
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 1000), 0);
        CHECK_EQ_ST(rlock_node_init(&node, rlock_posix_transport(&pc)), RLOCK_OK);
        rlock_config_init(&cfg);
        cfg.node_timeout_ms = 4000;
        CHECK_EQ_ST(rlock_client_init(&cl, &node, 1, &cfg), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_init(&a, &cl, "sen:loop2", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_acquire_begin(&a, 30000, 0), RLOCK_WOULD_BLOCK);
        st = loop_acquire(&cl, &a, &pc, helper, sen[0].port, &asked);
        printf("sentinel loop%s: %s after %llu ms (waited up to %lu ms on the silent Sentinel)\n",
               helper ? ", capped by rlock_posix_interest_timeout" : " on rlock_client_interest alone",
               rlock_status_str(st), rh_now_ms() - t0, (unsigned long)asked);
        if (helper) {
            CHECK_MSG(st == RLOCK_OK && asked <= 1000, "%s (%s), waited up to %lu ms on the silent Sentinel",
                      rlock_status_str(st), rlock_node_error(&node), (unsigned long)asked);
            CHECK_EQ_LL(pc.port, prim.port);
            if (st == RLOCK_OK) CHECK_EQ_ST(rlock_release(&a), RLOCK_OK);
        }
        rlock_client_close(&cl);
        rlock_posix_close(&pc);
    }
    rh_server_resume(&sen[0]);
out:
    for (i = 0; i < 2; i++) rh_server_stop(&sen[i]);
    rh_server_stop(&prim);
}

/* AUTH through Sentinel with the rlock command: a Sentinel that refuses
 * AUTH (none given, a wrong password) and a primary that refuses it (the
 * data server's password, needed for ROLE) end as a refused AUTH on a
 * plain server does - exit 77 (README: the exit-code table), with the
 * server's whole reason - and the right passwords reach the primary. */
static void test_sentinel_cli_auth(void) {
    static const char *const sconf = "requirepass sentpw\nsentinel auth-pass mymaster datapw\n";
    static const char *const pargs[] = { "--requirepass", "datapw", NULL };
    rh_server prim, sen;
    char s0[40], spw[200], sbad[200], dpw[200], dbad[200], out[8192];
    int rc;
    FILE *f;

    snprintf(spw, sizeof spw, "%s/a-sentpw", tmpdir);
    snprintf(sbad, sizeof sbad, "%s/a-sentbad", tmpdir);
    snprintf(dpw, sizeof dpw, "%s/a-datapw", tmpdir);
    snprintf(dbad, sizeof dbad, "%s/a-databad", tmpdir);
    if ((f = fopen(spw, "w")) != NULL) { fputs("sentpw\n", f); fclose(f); }
    if ((f = fopen(sbad, "w")) != NULL) { fputs("wrong\n", f); fclose(f); }
    if ((f = fopen(dpw, "w")) != NULL) { fputs("datapw\n", f); fclose(f); }
    if ((f = fopen(dbad, "w")) != NULL) { fputs("wrong\n", f); fclose(f); }
    CHECK(rh_server_start(&prim, pargs) == 0);
    CHECK(sentinel_start_conf(&sen, prim.port, 1, sconf) == 0);
    if (sen.pid <= 0 || prim.pid <= 0) goto out;
    snprintf(s0, sizeof s0, "127.0.0.1:%d", sen.port);
    {
        const char *a[] = { "--sentinel", s0, "--master", "mymaster", "--sentinel-password-file", spw,
                            "--password-file", dpw, "-n", "sen:auth2", "sh", "-c", "exit 7", NULL };
        rc = cli_run(0, a, NULL, out, sizeof out); /* both right: COMMAND runs */
        CHECK_MSG(rc == 7, "both passwords right: exit %d:\n%s", rc, out);
        a[5] = sbad; /* the Sentinel refuses AUTH */
        rc = cli_run(0, a, NULL, out, sizeof out);
        CHECK_MSG(rc == 77 && strstr(out, "WRONGPASS invalid username-password pair or user is disabled.") != NULL,
                  "wrong Sentinel password: exit %d:\n%s", rc, out);
        a[4] = "-n"; a[5] = "-n"; /* no Sentinel password: its NOAUTH */
        rc = cli_run(0, a, NULL, out, sizeof out);
        CHECK_MSG(rc == 77 && strstr(out, "NOAUTH Authentication required.") != NULL,
                  "no Sentinel password: exit %d:\n%s", rc, out);
        a[4] = "--sentinel-password-file"; a[5] = spw; a[7] = dbad; /* the primary refuses AUTH */
        rc = cli_run(0, a, NULL, out, sizeof out);
        CHECK_MSG(rc == 77 && strstr(out, "WRONGPASS invalid username-password pair or user is disabled.") != NULL,
                  "wrong data password: exit %d:\n%s", rc, out);
        a[6] = "-n"; a[7] = "-n"; /* no data password: the primary's NOAUTH */
        rc = cli_run(0, a, NULL, out, sizeof out);
        CHECK_MSG(rc == 77 && strstr(out, "NOAUTH") != NULL, "no data password: exit %d:\n%s", rc, out);
    }
    {   /* the +switch-master watch says the whole reason too */
        rlock_posix_sentinel sn;
        rlock_posix_sentinel_watch w;
        rlock_posix_conn pc;
        memset(&sn, 0, sizeof sn);
        sn.n = 1;
        sn.master = "mymaster";
        sn.host[0] = "127.0.0.1";
        sn.port[0] = sen.port;
        sn.sentinel_password = "wrong";
        CHECK_EQ_LL(rlock_posix_init_sentinel(&pc, &sn, 2000), 0);
        CHECK_EQ_LL(rlock_posix_sentinel_watch_init(&w, &pc), 0);
        CHECK(!watch_until(&w, 1000, watch_subscribed));
        CHECK_MSG(strstr(w.err, "WRONGPASS invalid username-password pair or user is disabled.") != NULL, "watch: %s",
                  w.err);
        rlock_posix_sentinel_watch_close(&w);
        rlock_posix_close(&pc);
    }
out:
    unlink(spw); unlink(sbad); unlink(dpw); unlink(dbad);
    rh_server_stop(&sen);
    rh_server_stop(&prim);
}

/* ----------------------------------------------------------- 5. Cluster */

#define CL_N 6

/* The server of ours listening on port, or NULL. */
static rh_server *cl_server(rh_server *sv, int port) {
    int i;
    for (i = 0; i < CL_N; i++)
        if (sv[i].port == port) return &sv[i];
    return NULL;
}

/* CLUSTER NODES of s: the port of the replica of the primary on port `of`. */
static int cl_replica_of(const rh_server *s, int of) {
    char buf[4096], id[64] = "", want[64];
    char *line, *save = NULL;
    int port = 0;
    if (rh_str(s, buf, sizeof buf, "CLUSTER NODES%s", "") != REDIS_REPLY_STRING) return 0;
    snprintf(want, sizeof want, "127.0.0.1:%d@", of);
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strstr(line, want)) sscanf(line, "%63s", id);
    if (!id[0]) return 0;
    rh_str(s, buf, sizeof buf, "CLUSTER NODES%s", "");
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char nid[64], addr[64], flags[64], master[64];
        if (sscanf(line, "%63s %63s %63s %63s", nid, addr, flags, master) == 4 && strcmp(master, id) == 0 &&
            strstr(flags, "slave"))
            port = atoi(strchr(addr, ':') + 1);
    }
    return port;
}

/* CLUSTER NODES of s: how many primaries serve slots and are not marked
 * failing (fail or fail?) - the view a client's slot map is read from. */
static int cl_healthy_primaries(const rh_server *s) {
    char buf[4096];
    char *line, *save = NULL;
    int n = 0;
    if (rh_str(s, buf, sizeof buf, "CLUSTER NODES%s", "") != REDIS_REPLY_STRING) return 0;
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char f[9][64];
        if (sscanf(line, "%63s %63s %63s %63s %63s %63s %63s %63s %63s", f[0], f[1], f[2], f[3], f[4], f[5], f[6],
                   f[7], f[8]) == 9 && strstr(f[2], "master") && !strstr(f[2], "fail"))
            n++;
    }
    return n;
}

/* An integer reply of `cmd key` sent after ASKING (a slot being imported). */
static long long asking_int(const rh_server *s, const char *cmd, const char *key) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -999;
    if (!c) return v;
    r = (redisReply *)redisCommand(c, "ASKING");
    if (r) freeReplyObject(r);
    r = (redisReply *)redisCommand(c, "%s %s", cmd, key);
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* ASKING, then the command argv[0..argc): its integer reply, 0 for a
 * status, -1 for an error or none. */
static long long asking_argv(const rh_server *s, int argc, const char **argv) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -1;
    if (!c) return v;
    r = (redisReply *)redisCommand(c, "ASKING");
    if (r) freeReplyObject(r);
    r = (redisReply *)redisCommandArgv(c, argc, argv, NULL);
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    else if (r && r->type == REDIS_REPLY_STATUS) v = 0;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* Subscribers of a channel: PUBSUB SHARDNUMSUB (sharded) or NUMSUB (classic). */
static long long cl_numsub(const rh_server *s, const char *which, const char *chan) {
    redisContext *c = rh_connect(s);
    redisReply *r;
    long long v = -1;
    if (!c) return v;
    r = (redisReply *)redisCommand(c, "PUBSUB %s %s", which, chan);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
        v = r->element[1]->integer;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
}

/* How often s ran cmd (INFO commandstats; scripts' commands count too). */
static long long cl_calls(const rh_server *s, const char *cmd) {
    char buf[16384], want[64], *p;
    if (rh_str(s, buf, sizeof buf, "INFO %s", "commandstats") != REDIS_REPLY_STRING) return -1;
    snprintf(want, sizeof want, "cmdstat_%s:calls=", cmd);
    p = strstr(buf, want);
    return p ? atoll(p + strlen(want)) : 0;
}

/* Drive lk's cluster operation as an event loop would: poll() what
 * rlock_cluster_interest lists, for as long as it says, then step; at most
 * max_ms. */
static rlock_status cl_drive(rlock_cluster *cl, rlock_lock *lk, rlock_status st, unsigned long long max_ms) {
    unsigned long long end = rh_now_ms() + max_ms;
    while (st == RLOCK_WOULD_BLOCK && rh_now_ms() < end) {
        rlock_interest it[2 * RLOCK_CLUSTER_MAX_PRIMARIES];
        struct pollfd pf[2 * RLOCK_CLUSTER_MAX_PRIMARIES];
        uint32_t t;
        size_t k, n = rlock_cluster_interest(cl, it, sizeof it / sizeof it[0], &t);
        nfds_t m = 0;
        unsigned long long left = end - rh_now_ms();
        for (k = 0; k < n && k < sizeof it / sizeof it[0]; k++) {
            if (it[k].fd < 0) { t = 0; continue; }
            pf[m].fd = it[k].fd;
            pf[m].events = (short)(((it[k].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                                   ((it[k].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            m++;
        }
        if (t > left) t = (uint32_t)left;
        (void)poll(pf, m, (int)t);
        st = rlock_cluster_step(cl, lk);
    }
    return st;
}

static int cl_state_ok(rh_server *sv) {
    int i;
    char buf[2048];
    for (i = 0; i < CL_N; i++)
        if (rh_str(&sv[i], buf, sizeof buf, "CLUSTER INFO%s", "") != REDIS_REPLY_STRING ||
            !strstr(buf, "cluster_state:ok"))
            return 0;
    return 1;
}

static void test_cluster(void) {
    static const char *const args[] = { "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                        "--cluster-node-timeout", "1000", NULL };
    static rh_server sv[CL_N];
    static rlock_posix_conn pa[RLOCK_CLUSTER_MAX_PRIMARIES], pb[RLOCK_CLUSTER_MAX_PRIMARIES];
    static rlock_cluster ca, cb;
    static rlock_lock la[40], lb[40];
    rlock_config cfg;
    char addr[CL_N][32], buf[256], key[32];
    const char *seed_host[1] = { "127.0.0.1" };
    int seed_port[1], i, up = 0, ok = 0;
    unsigned long long t0 = rh_now_ms(), end;

    for (i = 0; i < CL_N; i++) {
        /* the bus port is the data port + 10000 unless given: a free one of its own */
        char cport[16];
        const char *a[10];
        int k;
        for (k = 0; args[k]; k++) a[k] = args[k];
        snprintf(cport, sizeof cport, "%d", rh_free_port());
        a[k++] = "--cluster-port";
        a[k++] = cport;
        a[k] = NULL;
        up += rh_server_start(&sv[i], a) == 0;
    }
    CHECK_EQ_LL(up, CL_N);
    if (up != CL_N) goto out;
    {   /* redis-cli --cluster create: 3 primaries, one replica each */
        const char *argv[16];
        int n = 0, status;
        pid_t pid;
        argv[n++] = "redis-cli";
        argv[n++] = "--cluster";
        argv[n++] = "create";
        for (i = 0; i < CL_N; i++) { snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", sv[i].port); argv[n++] = addr[i]; }
        argv[n++] = "--cluster-replicas";
        argv[n++] = "1";
        argv[n++] = "--cluster-yes";
        argv[n] = NULL;
        pid = rh_spawn(argv, NULL, NULL, 1);
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (end = rh_now_ms() + 20000; rh_now_ms() < end && !ok; rh_sleep_ms(100)) ok = cl_state_ok(sv);
    CHECK_MSG(ok, "cluster not ok within 20 s");
    if (!ok) goto out;
    /* every primary's replica in sync (WAIT and failover need it) */
    for (i = 0; i < CL_N; i++)
        if (is_primary(&sv[i])) CHECK(wait_replicas(&sv[i], 1));
    printf("cluster: 6 nodes up, cluster_state:ok, replicas in sync after %llu ms\n", rh_now_ms() - t0);

    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 1000;
    seed_port[0] = sv[0].port;
    CHECK_EQ_ST(rlock_cluster_init(&ca, seed_host, seed_port, 1, &cfg, rlock_posix_cluster_connect, pa), RLOCK_OK);
    CHECK_EQ_ST(rlock_cluster_init(&cb, seed_host, seed_port, 1, &cfg, rlock_posix_cluster_connect, pb), RLOCK_OK);

    /* the slot function agrees with the cluster's own */
    for (i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "cl:%d", i);
        CHECK_EQ_LL(rlock_cluster_slot(key, strlen(key)), rh_int(&sv[0], "CLUSTER KEYSLOT %s", key));
    }
    CHECK_EQ_LL(rlock_cluster_slot("{user1000}.following", 20), rlock_cluster_slot("user1000", 8));
    CHECK_EQ_LL(rlock_cluster_slot("foo{}{bar}", 10), rh_int(&sv[0], "CLUSTER KEYSLOT %s", "foo{}{bar}"));

    /* locks across many slots: each lands on its slot's primary, from the
     * map read before the first lock - no MOVED on a fresh client */
    for (i = 0; i < 40; i++) {
        rh_server *owner;
        snprintf(key, sizeof key, "cl:%d", i);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &la[i], key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cb, &lb[i], key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &la[i], 30000, 0), RLOCK_OK);
        owner = cl_server(sv, ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(key, strlen(key)))]);
        CHECK(owner != NULL && rh_str(owner, buf, sizeof buf, "GET %s", key) == REDIS_REPLY_STRING &&
              strcmp(buf, rlock_lock_token(&la[i])) == 0);
        CHECK_EQ_ST(rlock_cluster_acquire(&cb, &lb[i], 30000, 0), RLOCK_NOT_ACQUIRED); /* no overlap */
    }
    CHECK_EQ_LL(ca.n, 3); /* the seed and the two primaries the map named */
    CHECK_EQ_LL(ca.fetches, 1);
    CHECK_EQ_LL(ca.moved + ca.asked + cb.moved + cb.asked, 0);
    printf("cluster: 40 locks on %d slots' primaries, %lu MOVED, map read %lu time(s)\n", 40, ca.moved, ca.fetches);
    if (!quick) { /* rlock check --cluster finds the three primaries */
        char out[8192], seed[32];
        const char *a[3];
        int found = 0;
        snprintf(seed, sizeof seed, "127.0.0.1:%d", sv[0].port);
        a[0] = "--cluster"; a[1] = seed; a[2] = NULL;
        CHECK_EQ_LL(check_run(a, NULL, out, sizeof out), 1); /* no AOF: warnings */
        for (i = 0; i < 3; i++) {
            char want[48];
            snprintf(want, sizeof want, "127.0.0.1:%d: warnings", ca.port[i]);
            found += strstr(out, want) != NULL;
        }
        CHECK_MSG(found == 3 && strstr(out, "ok: a cluster primary (--cluster)"), "%s", out);
        /* a password the nodes refuse (they have none): 77, as rlock --cluster */
        CHECK_EQ_LL(check_run(a, "RLOCK_PASSWORD=wrong", out, sizeof out), 77);
        CHECK_MSG(strstr(out, "no seed answered CLUSTER NODES with a primary (AUTH refused)") != NULL, "%s", out);
        {
            const char *r[] = { "-n", "--cluster", seed, "cl:auth", "true", NULL };
            int rc = cli_run(0, r, "RLOCK_PASSWORD=wrong", out, sizeof out);
            CHECK_MSG(rc == 77, "rlock --cluster, AUTH refused: exit %d:\n%s", rc, out);
        }
    }
    for (i = 0; i < 40; i++) CHECK_EQ_ST(rlock_cluster_release(&ca, &la[i]), RLOCK_OK);

    {   /* rlock_lock_destroy of a handle whose rlock_cluster_* operation is
         * in progress: the handle leaves the cluster's list of operations
         * (before, the list kept pointing at the zeroed handle), and what
         * an acquire the program never saw end granted is released */
        const char *k = "cl:destroy";
        rh_server *prim;
        rlock_lock d, w;
        long long writes = 0;
        prim = cl_server(sv, ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(k, strlen(k)))]);
        CHECK(prim != NULL);
        if (!prim) goto out;
        writes = -(rh_stat_calls(prim, "set") + rh_stat_calls(prim, "evalsha") + rh_stat_calls(prim, "fcall"));
        /* the attempt is held up by the server (a write paused for 300 ms):
         * destroy waits for its answer (node timeout 1 s), then releases */
        CHECK(rh_str(prim, buf, sizeof buf, "CLIENT PAUSE 300 WRITE") == REDIS_REPLY_STATUS);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &d, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire_begin(&ca, &d, 30000, 0), RLOCK_WOULD_BLOCK);
        CHECK_EQ_ST(rlock_cluster_step(&ca, &d), RLOCK_WOULD_BLOCK);
        rlock_lock_destroy(&d);
        CHECK_MSG(ca.ops == NULL, "the destroyed handle is still in the cluster's list");
        CHECK_EQ_LL(rh_int(prim, "EXISTS %s", k), 0);
        writes += rh_stat_calls(prim, "set") + rh_stat_calls(prim, "evalsha") + rh_stat_calls(prim, "fcall");
        CHECK_MSG(writes >= 2, "%lld attempt(s) and releases ran: the acquire was withdrawn, not granted", writes);
        /* a waiter destroyed in its backoff: out of the list, the holder's lock kept */
        CHECK_EQ_ST(rlock_cluster_lock_init(&cb, &w, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cb, &w, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &d, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire_begin(&ca, &d, 30000, 5000), RLOCK_WOULD_BLOCK);
        for (i = 0; i < 20; i++) { rh_sleep_ms(5); (void)rlock_cluster_step(&ca, &d); } /* refused at least once */
        rlock_lock_destroy(&d);
        CHECK(ca.ops == NULL);
        CHECK(prim != NULL && rh_str(prim, buf, sizeof buf, "GET %s", k) == REDIS_REPLY_STRING &&
              strcmp(buf, rlock_lock_token(&w)) == 0);
        CHECK_EQ_ST(rlock_cluster_release(&cb, &w), RLOCK_OK);
        rlock_lock_destroy(&w);
    }

    /* the rlock command with --cluster: runs COMMAND under the lock on the
     * key's primary; -n refuses a held lock; a waiter is woken by the
     * holder's release (sharded pub/sub) */
    {
        char seed[32], out[8192], arg_ttl[] = "30";
        const char *k = "cl:cli";
        rh_server *prim;
        rlock_lock l;
        pid_t holder;
        int status;
        snprintf(seed, sizeof seed, "127.0.0.1:%d", sv[1].port);
        {
            const char *a[] = { "-v", "--cluster", seed, "--cluster", addr[2], k, "-c", "exit 7", NULL };
            CHECK_EQ_LL(cli_run(0, a, NULL, out, sizeof out), 7);
            CHECK_MSG(strstr(out, "acquired 'cl:cli' on the cluster primary") && strstr(out, "0 MOVED"), "%s", out);
        }
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &l, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &l, 30000, 0), RLOCK_OK);
        {
            const char *a[] = { "-n", "--cluster", seed, k, "true", NULL };
            CHECK_EQ_LL(cli_run(0, a, NULL, out, sizeof out), 1);
        }
        {   /* inspection on the key's primary: a stale map entry is
             * corrected by the MOVED it gets (followed, counted) */
            unsigned slot = rlock_cluster_slot(k, strlen(k));
            size_t home = rlock_cluster_primary(&ca, slot);
            unsigned long moved = ca.moved;
            rlock_lock look;
            rlock_info info;
            CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &look, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
            ca.slot[slot] = (unsigned char)((home + 1) % ca.n + 1); /* another primary */
            CHECK_EQ_ST(rlock_cluster_inspect(&ca, &look, &info), RLOCK_OK);
            CHECK_EQ_LL(ca.moved, moved + 1);
            CHECK_EQ_LL(rlock_cluster_primary(&ca, slot), home);
            CHECK(info.st == RLOCK_OK && info.holders == 1 && info.pttl_ms > 25000 &&
                  strncmp(info.owner, rlock_lock_token(&l), 16) == 0);
            CHECK_EQ_LL(rlock_lock_state(&l), RLOCK_STATE_HELD);
            CHECK_EQ_ST(rlock_cluster_inspect(&ca, &look, NULL), RLOCK_E_BADARG);
            /* the same with the nodes' cluster-preferred-endpoint-type
             * unknown-endpoint: the MOVED reads "MOVED slot :port" (an empty
             * host: the answering node's). Before, not followed: RLOCK_E_MOVED. */
            for (i = 0; i < CL_N; i++)
                CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CONFIG SET cluster-preferred-endpoint-type unknown-endpoint"),
                            REDIS_REPLY_STATUS);
            ca.slot[slot] = (unsigned char)((home + 1) % ca.n + 1);
            CHECK_EQ_ST(rlock_cluster_inspect(&ca, &look, &info), RLOCK_OK);
            CHECK_EQ_LL(ca.moved, moved + 2);
            CHECK_EQ_LL(rlock_cluster_primary(&ca, slot), home);
            CHECK(info.st == RLOCK_OK && info.holders == 1);
            /* cluster-preferred-endpoint-type hostname, no node with a
             * hostname: "MOVED slot ?:port", "ASK slot ?:port" ("?": endpoint
             * unknown). The map is read again (CLUSTER SHARDS gives the ip
             * too), then MOVED goes to the slot's primary it names, ASK to
             * the node of that port. Before, "?" was taken for a host name:
             * a node "?" added, its connect failed, RLOCK_E_IO after 4 s. */
            for (i = 0; i < CL_N; i++)
                CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CONFIG SET cluster-preferred-endpoint-type hostname"),
                            REDIS_REPLY_STATUS);
            {
                size_t known = ca.n;
                unsigned long fetches = ca.fetches;
                rlock_status st;
                ca.slot[slot] = (unsigned char)((home + 1) % ca.n + 1);
                t0 = rh_now_ms();
                st = rlock_cluster_inspect(&ca, &look, &info);
                CHECK_MSG(st == RLOCK_OK, "inspect after 'MOVED %u ?:port': %s (%s) after %llu ms", slot,
                          rlock_status_str(st), rlock_node_error(look.client->nodes[0]), rh_now_ms() - t0);
                CHECK_EQ_LL(ca.moved, moved + 3);
                CHECK_EQ_LL(rlock_cluster_primary(&ca, slot), home);
                CHECK(info.st == RLOCK_OK && info.holders == 1);
                CHECK_EQ_LL(ca.n, known); /* no node named "?" */
                CHECK(ca.fetches > fetches);
            }
            {   /* ASK ?:port: a slot set migrating, its key on neither side */
                const char *kq = "cl:qask";
                unsigned sq = rlock_cluster_slot(kq, strlen(kq));
                size_t hq = rlock_cluster_primary(&ca, sq);
                rh_server *src = cl_server(sv, ca.port[hq]), *dst = cl_server(sv, ca.port[(hq + 1) % ca.n]);
                char src_id[64], dst_id[64];
                unsigned long asked = ca.asked;
                size_t known = ca.n;
                rlock_lock q;
                rlock_status st;
                CHECK(src && dst && src != dst && is_primary(src) && is_primary(dst));
                if (!src || !dst || src == dst) goto out;
                rh_str(src, src_id, sizeof src_id, "CLUSTER MYID%s", "");
                rh_str(dst, dst_id, sizeof dst_id, "CLUSTER MYID%s", "");
                CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u IMPORTING %s", sq, src_id), REDIS_REPLY_STATUS);
                CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u MIGRATING %s", sq, dst_id), REDIS_REPLY_STATUS);
                CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &q, kq, strlen(kq), RLOCK_KIND_SIMPLE), RLOCK_OK);
                t0 = rh_now_ms();
                st = rlock_cluster_acquire(&ca, &q, 30000, 0);
                CHECK_MSG(st == RLOCK_OK, "acquire after 'ASK %u ?:port': %s (%s) after %llu ms", sq,
                          rlock_status_str(st), rlock_node_error(q.client->nodes[0]), rh_now_ms() - t0);
                CHECK(ca.asked > asked);
                CHECK_EQ_LL(asking_int(dst, "EXISTS", kq), 1); /* on the importing primary */
                CHECK_EQ_LL(ca.n, known);
                if (st == RLOCK_OK) CHECK_EQ_ST(rlock_cluster_release(&ca, &q), RLOCK_OK);
                CHECK_EQ_LL(asking_int(dst, "EXISTS", kq), 0);
                CHECK_EQ_LL(rlock_cluster_primary(&ca, sq), hq); /* ASK: the map unchanged */
                CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", sq), REDIS_REPLY_STATUS);
                CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", sq), REDIS_REPLY_STATUS);
            }
            for (i = 0; i < CL_N; i++)
                CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CONFIG SET cluster-preferred-endpoint-type ip"),
                            REDIS_REPLY_STATUS);
        }
        {   /* rlock status / unlock --force --cluster: on the key's primary */
            const char *st[] = { "status", "--cluster", seed, k, NULL };
            const char *un[] = { "unlock", "--force", "--cluster", seed, k, NULL };
            char want[96];
            int rc;
            prim = cl_server(sv, ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(k, strlen(k)))]);
            snprintf(want, sizeof want, "%s on 127.0.0.1:%d: held", k, prim ? prim->port : 0);
            rc = cli_run(0, st, NULL, out, sizeof out);
            CHECK_MSG(rc == 1 && strstr(out, want) != NULL, "status: exit %d (want 1, '%s'):\n%s", rc, want, out);
            rc = cli_run(0, un, NULL, out, sizeof out);
            CHECK_MSG(rc == 0, "unlock --force: exit %d:\n%s", rc, out);
            CHECK(prim && rh_int(prim, "EXISTS %s", k) == 0);
            rc = cli_run(0, st, NULL, out, sizeof out);
            CHECK_MSG(rc == 0 && strstr(out, "free") != NULL, "status after unlock: exit %d:\n%s", rc, out);
            rc = cli_run(0, un, NULL, out, sizeof out);
            CHECK_MSG(rc == 1, "unlock --force of a free lock: exit %d:\n%s", rc, out);
            CHECK_EQ_ST(rlock_cluster_extend(&ca, &l, 30000), RLOCK_LOST); /* the holder learns it */
            CHECK_EQ_ST(rlock_cluster_acquire(&ca, &l, 30000, 0), RLOCK_OK);
        }
        CHECK_EQ_ST(rlock_cluster_release(&ca, &l), RLOCK_OK);
        prim = cl_server(sv, ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(k, strlen(k)))]);
        holder = fork(); /* a holder for ~1 s, in the background */
        if (holder == 0) {
            const char *a[] = { CLI_BIN, "--cluster", seed, "-t", arg_ttl, k, "-c", "sleep 1", NULL };
            int fd = open("/dev/null", O_RDWR);
            dup2(fd, 1); dup2(fd, 2);
            execv(CLI_BIN, (char *const *)a);
            _exit(121);
        }
        for (end = rh_now_ms() + 10000; prim && rh_now_ms() < end && rh_int(prim, "EXISTS %s", k) != 1;) rh_sleep_ms(10);
        CHECK(prim && rh_int(prim, "EXISTS %s", k) == 1);
        {   /* waits (lease 30 s, so only the release notice ends the wait this soon) */
            const char *a[] = { "-w", "20", "--cluster", seed, k, "-c", "exit 3", NULL };
            unsigned long long t0c = rh_now_ms();
            CHECK_EQ_LL(cli_run(0, a, NULL, out, sizeof out), 3);
            CHECK_MSG(rh_now_ms() - t0c < 15000, "the waiter took %llu ms", rh_now_ms() - t0c);
        }
        CHECK(waitpid(holder, &status, 0) == holder && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(prim && rh_int(prim, "EXISTS %s", k) == 0);
        {
            const char *a[] = { "--cluster", seed, "-S", seed, k, "true", NULL };
            CHECK_EQ_LL(cli_run(0, a, NULL, out, sizeof out), 64);
            CHECK_MSG(strstr(out, "--cluster finds the servers") != NULL, "%s", out);
        }
        {   /* --limit 2 with --cluster: the handle is set up on the
             * cluster's first client, but each permit goes to the primary of
             * RESOURCE's slot (a key the seed does not serve): two holders,
             * a third refused (-n) and a fourth waiting, woken when one
             * leaves; every permit released there */
            const char *ks = "cl:sem2";
            char gate[160], cmd[256];
            const char *hold[] = { CLI_BIN, "--cluster", seed, "--limit", "2", ks, "-c", cmd, NULL };
            const char *nb[] = { "-n", "--cluster", seed, "--limit", "2", ks, "true", NULL };
            const char *wt[] = { "-w", "20", "--cluster", seed, "--limit", "2", ks, "-c", "exit 4", NULL };
            pid_t h[2];
            int j, rc;
            rh_server *home = cl_server(sv, ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(ks, strlen(ks)))]);
            CHECK(home != NULL && home->port != sv[1].port);
            snprintf(gate, sizeof gate, "%s/sem2.gate", tmpdir);
            snprintf(cmd, sizeof cmd, "while [ ! -e %s ]; do sleep 0.05; done", gate);
            unlink(gate);
            for (j = 0; j < 2; j++) {
                h[j] = fork();
                if (h[j] == 0) {
                    int fd = open("/dev/null", O_RDWR);
                    dup2(fd, 1); dup2(fd, 2);
                    execv(CLI_BIN, (char *const *)hold);
                    _exit(121);
                }
            }
            for (end = rh_now_ms() + 10000; home && rh_now_ms() < end && rh_int(home, "ZCARD %s", ks) != 2;) rh_sleep_ms(10);
            CHECK(home && rh_int(home, "ZCARD %s", ks) == 2);
            rc = cli_run(0, nb, NULL, out, sizeof out);
            CHECK_MSG(rc == 1, "a third permit of 2: exit %d:\n%s", rc, out);
            if (home) CHECK_EQ_LL(rh_int(home, "ZCARD %s", ks), 2);
            {
                FILE *f = fopen(gate, "w"); /* the holders end: the waiter gets a permit */
                if (f) fclose(f);
            }
            rc = cli_run(0, wt, NULL, out, sizeof out);
            CHECK_MSG(rc == 4, "a waiting permit: exit %d:\n%s", rc, out);
            for (j = 0; j < 2; j++)
                CHECK(waitpid(h[j], &status, 0) == h[j] && WIFEXITED(status) && WEXITSTATUS(status) == 0);
            if (home) CHECK_EQ_LL(rh_int(home, "EXISTS %s", ks), 0);
            unlink(gate);
        }
    }

    /* the rlock command, --cluster, the lock granted through an ASK
     * (RESOURCE's slot migrating, the key created on the importing primary;
     * the map still names the migrating one): every way out releases it
     * where it is - after COMMAND ran, and when COMMAND could not be started
     * (an fd limit: "cannot start COMMAND", exit 71) - not with a release
     * sent only to the map's primary, which answers ASK and would leave the
     * lock held for its lease. (The lock's wait-queue keys are put on the
     * importing primary first: the release script names them, and with its
     * lock key there but not them it would get -TRYAGAIN until the
     * migration ends - which here it never does.) */
    if (!quick) {
        const char *k = "cl:oserr";
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        size_t home = rlock_cluster_primary(&ca, slot);
        rh_server *src = cl_server(sv, ca.port[home]), *dst = cl_server(sv, ca.port[(home + 1) % ca.n]);
        char src_id[64], dst_id[64], seed[32], out[8192];
        int lim, rc, oserr = 0, ran = 0;
        CHECK(src && dst && src != dst && is_primary(src) && is_primary(dst));
        if (!src || !dst || src == dst) goto out;
        snprintf(seed, sizeof seed, "127.0.0.1:%d", sv[1].port);
        rh_str(src, src_id, sizeof src_id, "CLUSTER MYID%s", "");
        rh_str(dst, dst_id, sizeof dst_id, "CLUSTER MYID%s", "");
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u IMPORTING %s", slot, src_id), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u MIGRATING %s", slot, dst_id), REDIS_REPLY_STATUS);
        /* fewer and fewer fds short (lim 33: no limit): the first limits
         * fail before the lock (no connection) or at COMMAND's pipes; then
         * COMMAND runs */
        for (lim = 4; lim <= 33 && !ran; lim++) {
            const char *a[] = { "-v", "-n", "--cluster", seed, k, "true", NULL };
            const char *zadd[] = { "ZADD", "{cl:oserr}:waiters", "0", "nobody" };
            const char *hset[] = { "HSET", "{cl:oserr}:deadlines", "nobody", "0" };
            CHECK(asking_argv(dst, 4, zadd) >= 0);
            CHECK(asking_argv(dst, 4, hset) >= 0);
            cli_nofile = lim < 33 ? lim : 0;
            rc = cli_run(0, a, NULL, out, sizeof out);
            cli_nofile = 0;
            if (rc == 0) {
                ran = 1;
                CHECK_MSG(strstr(out, "1 ASK") && strstr(out, "released"), "ulimit -n %d: exit 0:\n%s", lim, out);
            } else if (rc == 71 && strstr(out, "cannot start COMMAND")) {
                oserr++;
                CHECK_MSG(strstr(out, "1 ASK"), "ulimit -n %d: not acquired through an ASK:\n%s", lim, out);
            } else {
                continue; /* (not as far as the lock) */
            }
            CHECK_MSG(!strstr(out, "could not release") && asking_int(dst, "EXISTS", k) == 0,
                      "ulimit -n %d: exit %d, the lock left held (PTTL %lld):\n%s", lim, rc, asking_int(dst, "PTTL", k),
                      out);
            (void)asking_int(dst, "DEL", k); /* (a failure above: the next try starts free) */
        }
        CHECK_MSG(oserr > 0 && ran, "no fd limit hit COMMAND's start (%d) or let it run (%d)", oserr, ran);
        {
            const char *del[] = { "DEL", "{cl:oserr}:waiters", "{cl:oserr}:deadlines" };
            CHECK(asking_argv(dst, 3, del) >= 0);
        }
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", slot), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", slot), REDIS_REPLY_STATUS);
    }

    /* seeds that are all replicas: the map names the primaries, a replica
     * never gets a lock, nothing is redirected */
    {
        static rlock_posix_conn pr[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster cr;
        const char *hosts[CL_N];
        int ports[CL_N], nr = 0;
        for (i = 0; i < CL_N; i++)
            if (!is_primary(&sv[i])) { hosts[nr] = "127.0.0.1"; ports[nr++] = sv[i].port; }
        CHECK_EQ_LL(nr, 3);
        CHECK_EQ_ST(rlock_cluster_init(&cr, hosts, ports, (size_t)nr, &cfg, rlock_posix_cluster_connect, pr), RLOCK_OK);
        for (i = 0; i < 20; i++) {
            rlock_lock l;
            rh_server *on;
            snprintf(key, sizeof key, "cl:r%d", i);
            CHECK_EQ_ST(rlock_cluster_lock_init(&cr, &l, key, strlen(key), RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_cluster_acquire(&cr, &l, 30000, 0), RLOCK_OK);
            on = cl_server(sv, cr.port[l.client - cr.client]);
            CHECK(on != NULL && is_primary(on));
            CHECK_EQ_ST(rlock_cluster_release(&cr, &l), RLOCK_OK);
        }
        CHECK_EQ_LL(cr.n, 6); /* 3 replica seeds + 3 primaries */
        CHECK_EQ_LL(cr.moved + cr.asked, 0);
        rlock_cluster_close(&cr);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pr[i]);
    }

    /* waiting by sharded pub/sub: the waiter SSUBSCRIBEs on the key's
     * primary, the release SPUBLISHes there once, nobody PUBLISHes. Its
     * recheck is 60 s and its wait 20 s: only the notice can wake it in time. */
    {
        static rlock_posix_conn ph[RLOCK_CLUSTER_MAX_PRIMARIES], pw[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster ch, cw;
        const char *k = "cl:wait";
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        rlock_lock h, w;
        rh_server *prim;
        long long spub[CL_N], pub[CL_N], subs = 0;
        unsigned long long t0w;
        rlock_status st;
        cfg.pubsub = 1;
        cfg.recheck_ms = 60000;
        CHECK_EQ_ST(rlock_cluster_init(&ch, seed_host, seed_port, 1, &cfg, rlock_posix_cluster_connect, ph), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_init(&cw, seed_host, seed_port, 1, &cfg, rlock_posix_cluster_connect, pw), RLOCK_OK);
        cfg.pubsub = 0;
        cfg.recheck_ms = 0;
        CHECK_EQ_ST(rlock_cluster_lock_init(&ch, &h, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cw, &w, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ch, &h, 30000, 0), RLOCK_OK);
        prim = cl_server(sv, ch.port[rlock_cluster_primary(&ch, slot)]);
        CHECK(prim != NULL);
        if (!prim) goto out;
        for (i = 0; i < CL_N; i++) { spub[i] = cl_calls(&sv[i], "spublish"); pub[i] = cl_calls(&sv[i], "publish"); }
        st = rlock_cluster_acquire_begin(&cw, &w, 30000, 20000);
        for (end = rh_now_ms() + 5000; st == RLOCK_WOULD_BLOCK && rh_now_ms() < end && subs < 1;)
            if ((st = cl_drive(&cw, &w, st, 20)) == RLOCK_WOULD_BLOCK) subs = cl_numsub(prim, "SHARDNUMSUB", "{cl:wait}:released");
        CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
        CHECK_EQ_LL(subs, 1);                                               /* on the key's primary */
        CHECK_EQ_LL(cl_numsub(prim, "NUMSUB", "{cl:wait}:released"), 0);    /* not a classic channel */
        t0w = rh_now_ms();
        CHECK_EQ_ST(rlock_cluster_release(&ch, &h), RLOCK_OK);
        st = cl_drive(&cw, &w, st, 15000);
        CHECK_EQ_ST(st, RLOCK_OK);
        printf("cluster: a waiter woke %llu ms after the release (recheck 60 s)\n", rh_now_ms() - t0w);
        for (i = 0; i < CL_N; i++) {
            CHECK_EQ_LL(cl_calls(&sv[i], "spublish") - spub[i], &sv[i] == prim ? 1 : 0);
            CHECK_EQ_LL(cl_calls(&sv[i], "publish") - pub[i], 0);
        }
        CHECK_EQ_LL(cw.moved + ch.moved, 0); /* under RESP3 too, the map came first */
        CHECK_EQ_LL(cw.fetches, 1);
        CHECK_EQ_ST(rlock_cluster_release(&cw, &w), RLOCK_OK);
        /* a waiter cancelled mid-wait: nothing of it goes on, nothing held */
        CHECK_EQ_ST(rlock_cluster_acquire(&ch, &h, 30000, 0), RLOCK_OK);
        st = rlock_cluster_acquire_begin(&cw, &w, 30000, 20000);
        for (end = rh_now_ms() + 5000; st == RLOCK_WOULD_BLOCK && !rlock_acquire_waiting(&w) && rh_now_ms() < end;)
            st = cl_drive(&cw, &w, st, 10);
        CHECK(st == RLOCK_WOULD_BLOCK && rlock_acquire_waiting(&w));
        rlock_cluster_cancel(&cw, &w);
        CHECK(cw.ops == NULL);
        CHECK_EQ_ST(rlock_cluster_step(&cw, &w), RLOCK_E_STATE);
        CHECK_EQ_LL(rlock_lock_state(&w), RLOCK_STATE_IDLE);
        CHECK_EQ_ST(rlock_cluster_release(&ch, &h), RLOCK_OK);
        CHECK_EQ_LL(rh_int(prim, "EXISTS %s", k), 0);
        rlock_cluster_close(&ch);
        rlock_cluster_close(&cw);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) { rlock_posix_close(&ph[i]); rlock_posix_close(&pw[i]); }
    }

    /* a slot migrated mid-run, the lock held: ASK, then MOVED, followed */
    {
        const char *k = "cl:mig";
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        rlock_lock a, b;
        rh_server *src, *dst, *third = NULL;
        char src_id[64], dst_id[64];
        rlock_status st;
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cb, &b, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &a, 30000, 0), RLOCK_OK);
        src = cl_server(sv, ca.port[rlock_cluster_primary(&ca, slot)]);
        dst = cl_server(sv, ca.port[(rlock_cluster_primary(&ca, slot) + 1) % ca.n]);
        for (i = 0; i < (int)ca.n; i++)
            if (cl_server(sv, ca.port[i]) != src && cl_server(sv, ca.port[i]) != dst) third = cl_server(sv, ca.port[i]);
        CHECK(src && dst && third && src != dst);
        if (!src || !dst || !third) goto out;
        rh_str(src, src_id, sizeof src_id, "CLUSTER MYID%s", "");
        rh_str(dst, dst_id, sizeof dst_id, "CLUSTER MYID%s", "");
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u IMPORTING %s", slot, src_id), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u MIGRATING %s", slot, dst_id), REDIS_REPLY_STATUS);
        CHECK_EQ_ST(rlock_cluster_extend(&ca, &a, 30000), RLOCK_OK); /* still on the source */
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "MIGRATE 127.0.0.1 %d %s 0 5000 KEYS %s", dst->port, "", k),
                    REDIS_REPLY_STATUS);
        /* the key is on the target now, the slot still the source's: ASK */
        CHECK_EQ_ST(rlock_cluster_extend(&ca, &a, 30000), RLOCK_OK);
        CHECK(asking_int(dst, "PTTL", k) > 25000);
        CHECK_EQ_LL(rh_int(src, "CLUSTER COUNTKEYSINSLOT %u", slot), 0); /* moved, not copied */
        CHECK(ca.asked >= 1);
        /* B, mid-migration: ASK to the target, where its script finds the
         * lock key but not the wait-queue keys (never created): -TRYAGAIN,
         * retried after a pause while the migration finishes */
        st = rlock_cluster_acquire_begin(&cb, &b, 30000, 0);
        for (end = rh_now_ms() + 5000; st == RLOCK_WOULD_BLOCK && !b.cl.again && rh_now_ms() < end;)
            st = cl_drive(&cb, &b, st, 10);
        CHECK_EQ_ST(st, RLOCK_WOULD_BLOCK);
        CHECK_MSG(b.cl.again > 0 && cb.asked >= 1, "B during migration: no TRYAGAIN (%u), %lu ASK", b.cl.again, cb.asked);
        CHECK_EQ_LL(asking_int(dst, "EXISTS", k), 1);
        /* the slot handed over: MOVED, the map learns it */
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u NODE %s", slot, dst_id), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u NODE %s", slot, dst_id), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(third, buf, sizeof buf, "CLUSTER SETSLOT %u NODE %s", slot, dst_id), REDIS_REPLY_STATUS);
        CHECK_EQ_ST(cl_drive(&cb, &b, st, 5000), RLOCK_NOT_ACQUIRED); /* held by A: no overlap */
        CHECK_EQ_ST(rlock_cluster_extend(&ca, &a, 30000), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cb, &b, 30000, 0), RLOCK_NOT_ACQUIRED);
        CHECK_EQ_LL(cb.port[rlock_cluster_primary(&cb, slot)], dst->port); /* B learnt it from MOVED */
        CHECK(rh_str(dst, buf, sizeof buf, "GET %s", k) == REDIS_REPLY_STRING && strcmp(buf, rlock_lock_token(&a)) == 0);
        CHECK_EQ_ST(rlock_cluster_release(&ca, &a), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cb, &b, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_release(&cb, &b), RLOCK_OK);
        CHECK_EQ_LL(rh_int(dst, "EXISTS %s", k), 0);
    }

    /* A lock granted by ASK on the importing primary, its release after
     * -TRYAGAIN: the slot set migrating by hand (no key moved), the key not on
     * the source, so the plain SET goes on to the target with ASKING and
     * takes the key there. The release script names the lock and its queue
     * keys; the target lacks the queue keys (never created): -TRYAGAIN for as
     * long as the migration lasts. Sent again naming only the lock key (a
     * compare-and-delete), it frees the lock at once. The same for a lock
     * held on the source (it has the key, not its queue keys). Extend names
     * one key: never refused. Then with functions (RLOCK_SCRIPTS_FCALL) and
     * the target without rlock's library: ASKING right before the FCALL, not
     * before the FUNCTION LOAD (which consumed it: the FCALL got MOVED). */
    {
        static rlock_posix_conn pf[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster cf;
        const char *k = "cl:ask", *kh = "{cl:ask}h", *kf = "{cl:ask}f", *kr = "{cl:ask}r", *kw = "{cl:ask}w", *krd = "{cl:ask}rd";
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        rlock_lock a, h, fair, fre, wr, rd, f;
        rh_server *src, *dst = NULL;
        char src_id[64], dst_id[64], kd[32];
        unsigned long asked, moved;
        size_t home;
        rlock_status st;
        cfg.scripts = RLOCK_SCRIPTS_FCALL;
        CHECK_EQ_ST(rlock_cluster_init(&cf, seed_host, seed_port, 1, &cfg, rlock_posix_cluster_connect, pf), RLOCK_OK);
        cfg.scripts = RLOCK_SCRIPTS_AUTO;
        CHECK_EQ_LL(rlock_cluster_slot(kh, strlen(kh)), slot);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &h, kh, strlen(kh), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &h, 30000, 0), RLOCK_OK); /* on the source, before the migration */
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &fair, kf, strlen(kf), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_set_fair(&fair, 1, 1000u), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &fair, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &fre, kr, strlen(kr), RLOCK_KIND_REENTRANT), RLOCK_OK);
        CHECK_EQ_ST(rlock_lock_set_fair(&fre, 1, 1000u), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &fre, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &wr, kw, strlen(kw), RLOCK_KIND_WRITE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &wr, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &rd, krd, strlen(krd), RLOCK_KIND_READ), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &rd, 30000, 0), RLOCK_OK);
        home = rlock_cluster_primary(&ca, slot);
        src = cl_server(sv, ca.port[home]);
        for (i = 0; i < (int)ca.n; i++)
            if (i != (int)home && cl_server(sv, ca.port[i]) && is_primary(cl_server(sv, ca.port[i])))
                dst = cl_server(sv, ca.port[i]);
        CHECK(src && dst && src != dst);
        if (!src || !dst) { rlock_cluster_close(&cf); goto out; }
        /* cf has run a script on the target (the plain SET needs that), and the
         * target then loses its functions */
        for (i = 0; i < 1000; i++) {
            snprintf(kd, sizeof kd, "cl:ask%d", i);
            if (ca.port[rlock_cluster_primary(&ca, rlock_cluster_slot(kd, strlen(kd)))] == dst->port) break;
        }
        CHECK_EQ_ST(rlock_cluster_lock_init(&cf, &f, kd, strlen(kd), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cf, &f, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_release(&cf, &f), RLOCK_OK);
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "FUNCTION FLUSH%s", ""), REDIS_REPLY_STATUS);
        rh_str(src, src_id, sizeof src_id, "CLUSTER MYID%s", "");
        rh_str(dst, dst_id, sizeof dst_id, "CLUSTER MYID%s", "");
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u IMPORTING %s", slot, src_id), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u MIGRATING %s", slot, dst_id), REDIS_REPLY_STATUS);
        asked = ca.asked;
        moved = ca.moved;
        CHECK_EQ_ST(rlock_cluster_lock_init(&ca, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&ca, &a, 30000, 0), RLOCK_OK);
        CHECK(ca.asked > asked);
        CHECK_EQ_LL(asking_int(dst, "EXISTS", k), 1); /* on the target only */
        CHECK_EQ_LL(rh_int(src, "CLUSTER COUNTKEYSINSLOT %u", slot), 5); /* kh kf kr kw krd (EXISTS k: ASK) */
        CHECK_EQ_ST(rlock_cluster_extend(&ca, &a, 40000), RLOCK_OK);
        CHECK(asking_int(dst, "PTTL", k) > 35000);
        t0 = rh_now_ms();
        st = rlock_cluster_release(&ca, &a);
        CHECK_MSG(st == RLOCK_OK, "release of a lock granted by ASK: %s (%s) after %llu ms", rlock_status_str(st),
                  rlock_node_error(a.client->nodes[0]), rh_now_ms() - t0);
        CHECK_EQ_LL(asking_int(dst, "EXISTS", k), 0); /* free now, not at its TTL */
        CHECK_EQ_LL(rlock_lock_state(&a), RLOCK_STATE_IDLE);
        st = rlock_cluster_release(&ca, &h); /* the source has the key, not its queue keys */
        CHECK_MSG(st == RLOCK_OK, "release on the migrating source: %s (%s)", rlock_status_str(st),
                  rlock_node_error(h.client->nodes[0]));
        CHECK_EQ_LL(rh_int(src, "EXISTS %s", kf), 1);
        st = rlock_cluster_release(&ca, &fair); /* a fair lock's release script, its queue key left out */
        CHECK_MSG(st == RLOCK_OK, "fair release on the migrating source: %s (%s)", rlock_status_str(st),
                  rlock_node_error(fair.client->nodes[0]));
        st = rlock_cluster_release(&ca, &fre);
        CHECK_MSG(st == RLOCK_OK, "fair reentrant release on the migrating source: %s (%s)", rlock_status_str(st),
                  rlock_node_error(fre.client->nodes[0]));
        st = rlock_cluster_release(&ca, &wr);
        CHECK_MSG(st == RLOCK_OK, "write release on the migrating source: %s (%s)", rlock_status_str(st),
                  rlock_node_error(wr.client->nodes[0]));
        st = rlock_cluster_release(&ca, &rd);
        CHECK_MSG(st == RLOCK_OK, "read release on the migrating source: %s (%s)", rlock_status_str(st),
                  rlock_node_error(rd.client->nodes[0]));
        CHECK_EQ_LL(rh_int(src, "CLUSTER COUNTKEYSINSLOT %u", slot), 0);
        CHECK_EQ_LL(ca.moved, moved);
        /* FCALL after ASK, the target without the library: ASK, no MOVED */
        CHECK_EQ_ST(rlock_cluster_lock_init(&cf, &f, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cf, &f, 30000, 0), RLOCK_OK); /* the plain SET, by ASK */
        CHECK_EQ_LL(asking_int(dst, "EXISTS", k), 1);
        asked = cf.asked;
        moved = cf.moved;
        CHECK_EQ_ST(rlock_cluster_extend(&cf, &f, 40000), RLOCK_OK); /* FCALL: the library loaded first */
        CHECK(asking_int(dst, "PTTL", k) > 35000);
        CHECK_MSG(cf.moved == moved && cf.asked == asked + 1, "extend by FCALL after ASK: %lu MOVED, %lu ASK",
                  cf.moved - moved, cf.asked - asked);
        CHECK_EQ_ST(rlock_cluster_release(&cf, &f), RLOCK_OK);
        CHECK_EQ_LL(asking_int(dst, "EXISTS", k), 0);
        CHECK_EQ_LL(cf.moved, moved);
        /* the migration called off: nothing of the slot left on either side */
        CHECK_EQ_LL(rh_int(dst, "CLUSTER COUNTKEYSINSLOT %u", slot), 0);
        CHECK_EQ_LL(rh_int(src, "CLUSTER COUNTKEYSINSLOT %u", slot), 0);
        CHECK_EQ_LL(rh_str(dst, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", slot), REDIS_REPLY_STATUS);
        CHECK_EQ_LL(rh_str(src, buf, sizeof buf, "CLUSTER SETSLOT %u STABLE", slot), REDIS_REPLY_STATUS);
        rlock_cluster_close(&cf);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pf[i]);
    }

    /* a primary killed with a lock held, its replica promoted: the client
     * follows; the lock was acknowledged by the replica (WAIT), so it is
     * still there. An unacknowledged grant may be lost (async replication). */
    {
        static rlock_posix_conn pr[RLOCK_CLUSTER_MAX_PRIMARIES], pe[RLOCK_CLUSTER_MAX_PRIMARIES],
            pv[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster cr, ce, cv;
        const char *k = "cl:kill", *ke = "{cl:kill}e", *kv = "{cl:kill}v";
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        rlock_lock a, b, e, v;
        rh_server *victim, *heir;
        int heir_port, promoted = 0;
        rlock_status st = RLOCK_E_IO;
        const char *hosts[CL_N];
        int ports[CL_N];
        for (i = 0; i < CL_N; i++) { hosts[i] = "127.0.0.1"; ports[i] = sv[i].port; }
        /* every node as a seed: when the one primary it knows dies, the
         * others (replicas too) answer MOVED to whoever took over */
        cfg.replicas = 1;
        CHECK_EQ_ST(rlock_cluster_init(&cr, hosts, ports, CL_N, &cfg, rlock_posix_cluster_connect, pr), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_init(&ce, hosts, ports, CL_N, &cfg, rlock_posix_cluster_connect, pe), RLOCK_OK);
        cfg.replicas = 0;
        CHECK_EQ_ST(rlock_cluster_lock_init(&cr, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cr, &a, 30000, 0), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&ce, &e, ke, strlen(ke), RLOCK_KIND_SIMPLE), RLOCK_OK); /* same slot */
        CHECK_EQ_ST(rlock_cluster_acquire(&ce, &e, 30000, 0), RLOCK_OK);
        CHECK_EQ_LL(rlock_replica_acks(&e), 1);
        CHECK_EQ_LL(rlock_replica_acks(&a), 1);
        victim = cl_server(sv, cr.port[rlock_cluster_primary(&cr, slot)]);
        heir_port = victim ? cl_replica_of(victim, victim->port) : 0;
        heir = cl_server(sv, heir_port);
        CHECK(victim && heir);
        if (!victim || !heir) { rlock_cluster_close(&cr); rlock_cluster_close(&ce); goto out; }
        {   /* a client whose nodes are the victim, then its heir: asking
             * around from the dead primary reaches the heir first */
            int n = 0;
            hosts[n] = "127.0.0.1"; ports[n++] = victim->port;
            hosts[n] = "127.0.0.1"; ports[n++] = heir_port;
            for (i = 0; i < CL_N; i++)
                if (sv[i].port != victim->port && sv[i].port != heir_port) { hosts[n] = "127.0.0.1"; ports[n++] = sv[i].port; }
            cfg.replicas = 1;
            CHECK_EQ_ST(rlock_cluster_init(&cv, hosts, ports, CL_N, &cfg, rlock_posix_cluster_connect, pv), RLOCK_OK);
            cfg.replicas = 0;
            CHECK_EQ_ST(rlock_cluster_lock_init(&cv, &v, kv, strlen(kv), RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_cluster_acquire(&cv, &v, 30000, 0), RLOCK_OK);
            CHECK_EQ_LL(rlock_replica_acks(&v), 1);
            CHECK_EQ_LL(rlock_cluster_primary(&cv, slot), 0);
        }
        t0 = rh_now_ms();
        rh_server_kill9(victim);
        /* an extend at once (another client's lock on the slot): the others
         * answer MOVED to the dead primary, then -CLUSTERDOWN once it is
         * marked failing, then MOVED to the heir - followed within its 4 s
         * (CLUSTERDOWN once ended it there) */
        st = rlock_cluster_extend(&ce, &e, 30000);
        CHECK_MSG(st == RLOCK_OK || rh_now_ms() - t0 >= 4000, "extend during the failover: %s (%s) after %llu ms",
                  rlock_status_str(st), rlock_node_error(e.client->nodes[0]), rh_now_ms() - t0);
        printf("cluster: an extend begun as the primary died: %s after %llu ms\n", rlock_status_str(st), rh_now_ms() - t0);
        for (end = rh_now_ms() + 20000; rh_now_ms() < end; rh_sleep_ms(100))
            if (is_primary(heir)) { promoted = 1; break; }
        CHECK_MSG(promoted, "replica on %d not promoted within 20 s", heir_port);
        printf("cluster: replica promoted %llu ms after its primary was killed\n", rh_now_ms() - t0);
        {   /* cv's extend: the dead primary refuses, the next node asked is
             * the heir, which runs it - no MOVED. Before, the map kept naming
             * the dead primary (the next operation on the slot went there
             * first, then was corrected) */
            unsigned long moved = cv.moved;
            for (end = rh_now_ms() + 10000; rh_now_ms() < end; rh_sleep_ms(100)) {
                st = rlock_cluster_extend(&cv, &v, 30000);
                if (st == RLOCK_OK || st == RLOCK_LOST) break;
            }
            CHECK_MSG(st == RLOCK_OK, "cv: extend after the failover: %s (%s)", rlock_status_str(st),
                      rlock_node_error(v.client->nodes[0]));
            CHECK_MSG(cv.port[rlock_cluster_primary(&cv, slot)] == heir_port,
                      "cv: the extend ran on %d, %lu MOVED; the map names %d (dead primary %d, heir %d)",
                      cv.port[v.client - cv.client], cv.moved - moved, cv.port[rlock_cluster_primary(&cv, slot)],
                      victim->port, heir_port);
            CHECK_EQ_ST(rlock_cluster_release(&cv, &v), RLOCK_OK);
            rlock_cluster_close(&cv);
            for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pv[i]);
        }
        for (end = rh_now_ms() + 10000; rh_now_ms() < end; rh_sleep_ms(100)) {
            st = rlock_cluster_extend(&cr, &a, 30000);
            if (st == RLOCK_OK || st == RLOCK_LOST) break;
        }
        CHECK_MSG(st == RLOCK_OK, "extend after the failover: %s (%s)", rlock_status_str(st),
                  rlock_node_error(a.client->nodes[0]));
        CHECK_EQ_LL(cr.port[rlock_cluster_primary(&cr, slot)], heir_port);
        CHECK(rh_int(heir, "PTTL %s", k) > 25000);
        CHECK_EQ_ST(rlock_cluster_lock_init(&cb, &b, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cb, &b, 30000, 0), RLOCK_NOT_ACQUIRED); /* no overlap */
        CHECK_EQ_ST(rlock_cluster_release(&cr, &a), RLOCK_OK);
        CHECK_EQ_LL(rh_int(heir, "EXISTS %s", k), 0);
        st = rlock_cluster_release(&ce, &e);
        CHECK_MSG(st == RLOCK_OK, "release of the lock extended during the failover: %s (%s)", rlock_status_str(st),
                  rlock_node_error(e.client->nodes[0]));
        CHECK_EQ_LL(rh_int(heir, "EXISTS %s", ke), 0);
        rlock_cluster_close(&cr);
        rlock_cluster_close(&ce);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) { rlock_posix_close(&pr[i]); rlock_posix_close(&pe[i]); }
    }
    /* a grant its replica never received (the replication link cut, the
     * replica kept from reconnecting by a masterauth the primary refuses),
     * then the primary killed and that replica promoted: the lock is gone
     * (asynchronous replication) and the holder is told - its next extend
     * says RLOCK_LOST, after which another client takes the key */
    {
        static rlock_posix_conn pl[RLOCK_CLUSTER_MAX_PRIMARIES], pm[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster cl1, cl2;
        rlock_lock a, b;
        rh_server *victim = NULL, *heir = NULL;
        const char *hosts[CL_N];
        int ports[CL_N], promoted = 0;
        char k[32] = "";
        rlock_status st = RLOCK_E_IO;
        for (i = 0; i < CL_N; i++) { hosts[i] = "127.0.0.1"; ports[i] = sv[i].port; }
        CHECK_EQ_ST(rlock_cluster_init(&cl1, hosts, ports, CL_N, &cfg, rlock_posix_cluster_connect, pl), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_init(&cl2, hosts, ports, CL_N, &cfg, rlock_posix_cluster_connect, pm), RLOCK_OK);
        /* a key whose primary still has a replica (not the shard failed over above) */
        for (i = 0; i < 200 && !heir; i++) {
            snprintf(k, sizeof k, "cl:lost%d", i);
            CHECK_EQ_ST(rlock_cluster_lock_init(&cl1, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
            CHECK_EQ_ST(rlock_cluster_acquire(&cl1, &a, 30000, 0), RLOCK_OK); /* (the map read) */
            CHECK_EQ_ST(rlock_cluster_release(&cl1, &a), RLOCK_OK);
            victim = cl_server(sv, cl1.port[rlock_cluster_primary(&cl1, rlock_cluster_slot(k, strlen(k)))]);
            heir = victim ? cl_server(sv, cl_replica_of(victim, victim->port)) : NULL;
        }
        CHECK(victim && heir);
        if (!victim || !heir) { rlock_cluster_close(&cl1); rlock_cluster_close(&cl2); goto out; }
        CHECK_EQ_LL(rh_str(heir, buf, sizeof buf, "CONFIG SET masterauth %s", "no-such-password"), REDIS_REPLY_STATUS);
        CHECK(rh_int(victim, "CLIENT KILL TYPE %s", "replica") >= 1);
        CHECK_EQ_ST(rlock_cluster_acquire(&cl1, &a, 30000, 0), RLOCK_OK);
        CHECK(rh_str(victim, buf, sizeof buf, "GET %s", k) == REDIS_REPLY_STRING && strcmp(buf, rlock_lock_token(&a)) == 0);
        rh_server_kill9(victim);
        t0 = rh_now_ms();
        for (end = rh_now_ms() + 20000; rh_now_ms() < end; rh_sleep_ms(100))
            if (is_primary(heir)) { promoted = 1; break; }
        CHECK_MSG(promoted, "replica on %d not promoted within 20 s", heir->port);
        CHECK_EQ_LL(rh_int(heir, "EXISTS %s", k), 0); /* the grant did not reach it */
        for (end = rh_now_ms() + 10000; rh_now_ms() < end; rh_sleep_ms(100)) {
            st = rlock_cluster_extend(&cl1, &a, 30000);
            if (st == RLOCK_OK || st == RLOCK_LOST) break;
        }
        CHECK_MSG(st == RLOCK_LOST, "extend after a failover that lost the grant: %s (%s)", rlock_status_str(st),
                  rlock_node_error(a.client->nodes[0]));
        CHECK_EQ_LL(rlock_lock_state(&a), RLOCK_STATE_LOST);
        printf("cluster: a grant the replica never had, its primary killed: the replica promoted %llu ms later, "
               "the holder's extend said %s\n", rh_now_ms() - t0, rlock_status_str(st));
        CHECK_EQ_ST(rlock_cluster_lock_init(&cl2, &b, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_acquire(&cl2, &b, 30000, 0), RLOCK_OK);
        CHECK(rh_str(heir, buf, sizeof buf, "GET %s", k) == REDIS_REPLY_STRING && strcmp(buf, rlock_lock_token(&b)) == 0);
        CHECK(rlock_cluster_release(&cl1, &a) != RLOCK_OK); /* never b's lock */
        CHECK_EQ_LL(rh_int(heir, "EXISTS %s", k), 1);
        CHECK_EQ_ST(rlock_cluster_release(&cl2, &b), RLOCK_OK);
        CHECK_EQ_LL(rh_int(heir, "EXISTS %s", k), 0);
        rlock_cluster_close(&cl1);
        rlock_cluster_close(&cl2);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) { rlock_posix_close(&pl[i]); rlock_posix_close(&pm[i]); }
    }
    /* bad arguments */
    {
        static rlock_cluster bad;
        int zero = 0;
        CHECK_EQ_ST(rlock_cluster_init(&bad, seed_host, &zero, 1, NULL, rlock_posix_cluster_connect, pa), RLOCK_E_BADARG);
        CHECK_MSG(strstr(rlock_cluster_error(&bad), "seed 0") != NULL, "%s", rlock_cluster_error(&bad));
        CHECK_EQ_ST(rlock_cluster_init(&bad, seed_host, seed_port, 0, NULL, rlock_posix_cluster_connect, pa), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_cluster_init(&bad, seed_host, seed_port, 1, NULL, NULL, pa), RLOCK_E_BADARG);
        CHECK_EQ_ST(rlock_cluster_lock_init(&bad, &la[0], "k", 1, RLOCK_KIND_SIMPLE), RLOCK_E_BADARG);
    }
    /* a cluster with more nodes than RLOCK_CLUSTER_MAX_PRIMARIES: the table
     * filled with seeds (one real), so any other primary in the map is one
     * too many (CI once saw 15 seeds + 2 primaries fit: the diagnostic below) */
    {
        static rlock_posix_conn pg[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster big;
        const char *hosts[RLOCK_CLUSTER_MAX_PRIMARIES];
        int ports[RLOCK_CLUSTER_MAX_PRIMARIES];
        rlock_lock l;
        rlock_status st;
        int live = 0;
        unsigned long long end;
        for (i = 0; i < CL_N; i++)
            if (is_primary(&sv[i])) live = sv[i].port; /* a primary still up after the failover above */
        /* right after the failover the live node may not see the other
         * primaries yet: wait until it sees all three */
        for (i = 0; i < CL_N; i++)
            if (sv[i].port == live) break;
        for (end = rh_now_ms() + 20000; i < CL_N && cl_healthy_primaries(&sv[i]) < 3 && rh_now_ms() < end;)
            rh_sleep_ms(100);
        CHECK_MSG(i < CL_N && cl_healthy_primaries(&sv[i]) == 3, "the live primary does not see 3 healthy primaries");
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) { hosts[i] = "127.0.0.1"; ports[i] = i ? rh_free_port() : live; }
        CHECK_EQ_ST(rlock_cluster_init(&big, hosts, ports, RLOCK_CLUSTER_MAX_PRIMARIES, &cfg, rlock_posix_cluster_connect, pg),
                    RLOCK_OK);
        CHECK_EQ_ST(rlock_cluster_lock_init(&big, &l, "cl:big", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
        st = rlock_cluster_acquire(&big, &l, 30000, 0);
        CHECK_MSG(st == RLOCK_E_BADARG, "got %s (%s); %lu nodes known, map read %lu time(s), fetch state %d, from node %lu",
                  rlock_status_str(st), rlock_node_error(l.client->nodes[0]), (unsigned long)big.n, big.fetches,
                  big.fetch, (unsigned long)big.from);
        CHECK_MSG(strstr(rlock_cluster_error(&big), "RLOCK_CLUSTER_MAX_PRIMARIES") != NULL, "%s", rlock_cluster_error(&big));
        CHECK_EQ_LL(rlock_lock_state(&l), RLOCK_STATE_IDLE);
        if (st == RLOCK_OK) (void)rlock_cluster_release(&big, &l);
        rlock_cluster_close(&big);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pg[i]);
    }
out:
    rlock_cluster_close(&ca);
    rlock_cluster_close(&cb);
    for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) { rlock_posix_close(&pa[i]); rlock_posix_close(&pb[i]); }
    for (i = 0; i < CL_N; i++) rh_server_stop(&sv[i]);
}

/* A primary that stops answering (SIGSTOP: a host gone without a reset)
 * and is not failed over (cluster-node-timeout 60 s: nobody marks it
 * failing during the test). The lock calls ask the other nodes, which
 * answer MOVED to it, for about 4 s (rlock.h section 7, README) - each try
 * at it costs a node timeout, and that must not multiply the 4 s (40 tries
 * of node timeout + 100 ms). Then RLOCK_E_IO; and the lock as before once
 * it answers again. */
static void test_cluster_unreachable(void) {
    static const char *const args[] = { "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                        "--cluster-node-timeout", "60000", NULL };
    static rh_server sv[3];
    static rlock_posix_conn pc[RLOCK_CLUSTER_MAX_PRIMARIES];
    static rlock_cluster cl;
    const char *k = "clu:stop", *hosts[3];
    char addr[3][32];
    int ports[3], i, up = 0, ok = 0;
    unsigned long long end, t0, took;
    rlock_config cfg;
    rlock_lock a, h;
    rlock_status st;
    rh_server *prim = NULL;
    static char cport[3][16];
    const char *a2[3][10];
    for (i = 0; i < 3; i++) {
        int n;
        for (n = 0; args[n]; n++) a2[i][n] = args[n];
        snprintf(cport[i], sizeof cport[i], "%d", rh_free_port());
        a2[i][n++] = "--cluster-port";
        a2[i][n++] = cport[i];
        a2[i][n] = NULL;
        up += rh_server_start(&sv[i], a2[i]) == 0;
    }
    CHECK_EQ_LL(up, 3);
    if (up != 3) goto out;
    {   /* 3 primaries, no replicas */
        const char *argv[8];
        int n = 0, status;
        pid_t pid;
        argv[n++] = "redis-cli";
        argv[n++] = "--cluster";
        argv[n++] = "create";
        for (i = 0; i < 3; i++) { snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", sv[i].port); argv[n++] = addr[i]; }
        argv[n++] = "--cluster-yes";
        argv[n] = NULL;
        pid = rh_spawn(argv, NULL, NULL, 1);
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (end = rh_now_ms() + 20000; rh_now_ms() < end && !ok; rh_sleep_ms(100)) {
        char buf[2048];
        for (ok = 1, i = 0; i < 3; i++)
            if (rh_str(&sv[i], buf, sizeof buf, "CLUSTER INFO%s", "") != REDIS_REPLY_STRING ||
                !strstr(buf, "cluster_state:ok"))
                ok = 0;
    }
    CHECK_MSG(ok, "cluster not ok within 20 s");
    if (!ok) goto out;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 500;
    for (i = 0; i < 3; i++) { hosts[i] = "127.0.0.1"; ports[i] = sv[i].port; }
    CHECK_EQ_ST(rlock_cluster_init(&cl, hosts, ports, 3, &cfg, rlock_posix_cluster_connect, pc), RLOCK_OK);
    CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &h, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_cluster_acquire(&cl, &h, 30000, 0), RLOCK_OK); /* the map read, the lock held */
    for (i = 0; i < 3; i++)
        if (sv[i].port == cl.port[rlock_cluster_primary(&cl, rlock_cluster_slot(k, strlen(k)))]) prim = &sv[i];
    CHECK(prim != NULL);
    if (!prim) goto close;
    rh_server_pause(prim);
    CHECK_EQ_ST(rlock_cluster_lock_init(&cl, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
    t0 = rh_now_ms();
    st = rlock_cluster_acquire(&cl, &a, 30000, 0);
    took = rh_now_ms() - t0;
    CHECK_MSG(st == RLOCK_E_IO && took < 9000, "acquire, the primary stopped: %s after %llu ms (want io error in ~4.5 s)",
              rlock_status_str(st), took);
    printf("cluster: the slot's primary stopped, not failed over: acquire %s after %llu ms\n", rlock_status_str(st), took);
    t0 = rh_now_ms();
    st = rlock_cluster_extend(&cl, &h, 30000);
    took = rh_now_ms() - t0;
    CHECK_MSG(st == RLOCK_E_IO && took < 9000, "extend, the primary stopped: %s after %llu ms (want io error in ~4.5 s)",
              rlock_status_str(st), took);
    rh_server_resume(prim);
    CHECK_EQ_ST(rlock_cluster_acquire(&cl, &a, 30000, 0), RLOCK_NOT_ACQUIRED); /* h still holds it */
    CHECK_EQ_ST(rlock_cluster_extend(&cl, &h, 30000), RLOCK_OK);
    {   /* the cluster down for a while, as between a primary marked failing
         * and its replica's promotion: every node answers -CLUSTERDOWN
         * (nothing ran). An extend begun then goes on once it is up (the key's
         * slot unassigned everywhere, then given back to its primary) */
        unsigned slot = rlock_cluster_slot(k, strlen(k));
        char buf[256], pid[64];
        int down = 0;
        rh_str(prim, pid, sizeof pid, "CLUSTER MYID%s", "");
        for (i = 0; i < 3; i++) CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CLUSTER DELSLOTS %u", slot), REDIS_REPLY_STATUS);
        for (end = rh_now_ms() + 5000; rh_now_ms() < end && !down; rh_sleep_ms(10))
            for (down = 1, i = 0; i < 3; i++)
                if (rh_str(&sv[i], buf, sizeof buf, "CLUSTER INFO%s", "") != REDIS_REPLY_STRING ||
                    !strstr(buf, "cluster_state:fail"))
                    down = 0;
        CHECK_MSG(down, "the cluster did not go down");
        st = cl_drive(&cl, &h, rlock_cluster_extend_begin(&cl, &h, 30000), 500);
        CHECK_MSG(st == RLOCK_WOULD_BLOCK, "extend while the cluster is down: %s (%s), not waiting",
                  rlock_status_str(st), rlock_node_error(h.client->nodes[0]));
        CHECK_EQ_LL(rh_str(prim, buf, sizeof buf, "CLUSTER ADDSLOTS %u", slot), REDIS_REPLY_STATUS);
        for (i = 0; i < 3; i++)
            if (&sv[i] != prim)
                CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CLUSTER SETSLOT %u NODE %s", slot, pid), REDIS_REPLY_STATUS);
        if (st == RLOCK_WOULD_BLOCK) st = cl_drive(&cl, &h, st, 5000);
        CHECK_MSG(st == RLOCK_OK, "extend once the cluster is up: %s (%s)", rlock_status_str(st),
                  rlock_node_error(h.client->nodes[0]));
        CHECK(rh_int(prim, "PTTL %s", k) > 25000);
    }
    CHECK_EQ_ST(rlock_cluster_release(&cl, &h), RLOCK_OK);
    CHECK_EQ_ST(rlock_cluster_acquire(&cl, &a, 30000, 0), RLOCK_OK);
    CHECK_EQ_ST(rlock_cluster_release(&cl, &a), RLOCK_OK);
    CHECK_EQ_LL(rh_int(prim, "EXISTS %s", k), 0);
    {   /* the rlock command with -w and the key's primary stopped: it does
         * not give up after the library's 4 s of asking around (suspected,
         * not so: a waiting acquire keeps trying while -w lasts) and takes
         * the lock once the primary answers */
        char seed[32], out[4096];
        const char *ca[] = { "-v", "--cluster", seed, "-w", "60", "{clu:stop}:cli", "true", NULL };
        const char *log = "build/test_deploy_clu_cli.log";
        int status;
        pid_t pid;
        snprintf(seed, sizeof seed, "127.0.0.1:%d", sv[prim == &sv[0] ? 1 : 0].port);
        rh_server_pause(prim);
        pid = cli_spawn(ca, log);
        CHECK(pid > 0);
        rh_sleep_ms(7000);
        CHECK_MSG(pid > 0 && waitpid(pid, &status, WNOHANG) == 0, "rlock -w 60 gave up while the primary was stopped:\n%s",
                  slurp(log, out, sizeof out));
        rh_server_resume(prim);
        status = pid > 0 ? rh_wait_child(pid, 30000) : -1;
        CHECK_MSG(status != -1 && rh_exited_with(status, 0), "rlock -w 60 after the primary came back: %d\n%s", status,
                  slurp(log, out, sizeof out));
        /* the same with the primary killed (connections refused at once) and
         * started again on its port and nodes.conf */
        rh_server_kill9(prim);
        pid = cli_spawn(ca, log);
        CHECK(pid > 0);
        rh_sleep_ms(7000);
        CHECK_MSG(pid > 0 && waitpid(pid, &status, WNOHANG) == 0, "rlock -w 60 gave up while the primary was down:\n%s",
                  slurp(log, out, sizeof out));
        CHECK_EQ_LL(rh_server_restart(prim, a2[prim - sv]), 0);
        status = pid > 0 ? rh_wait_child(pid, 30000) : -1;
        CHECK_MSG(status != -1 && rh_exited_with(status, 0), "rlock -w 60 after the primary restarted: %d\n%s", status,
                  slurp(log, out, sizeof out));
    }
    {   /* a cluster with requirepass (last: the harness does not AUTH): the
         * credentials set in the struct after rlock_cluster_init, as its
         * comment says ("AUTH on every primary"), go to the seeds too - the
         * map is read from a seed, and a seed may serve the lock */
        static rlock_posix_conn pp[RLOCK_CLUSTER_MAX_PRIMARIES];
        static rlock_cluster cp;
        char buf[64];
        for (i = 0; i < 3; i++)
            CHECK_EQ_LL(rh_str(&sv[i], buf, sizeof buf, "CONFIG SET requirepass %s", "cl-secret"), REDIS_REPLY_STATUS);
        CHECK_EQ_ST(rlock_cluster_init(&cp, hosts, ports, 3, &cfg, rlock_posix_cluster_connect, pp), RLOCK_OK);
        cp.password = "cl-secret";
        CHECK_EQ_ST(rlock_cluster_lock_init(&cp, &a, k, strlen(k), RLOCK_KIND_SIMPLE), RLOCK_OK);
        st = rlock_cluster_acquire(&cp, &a, 30000, 0);
        CHECK_MSG(st == RLOCK_OK, "acquire on a cluster with requirepass: %s (%s)", rlock_status_str(st),
                  rlock_node_error(a.client->nodes[0]));
        CHECK_EQ_LL(cp.fetches, 1);
        if (st == RLOCK_OK) CHECK_EQ_ST(rlock_cluster_release(&cp, &a), RLOCK_OK);
        rlock_cluster_close(&cp);
        for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pp[i]);
    }
close:
    rlock_cluster_close(&cl);
    for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) rlock_posix_close(&pc[i]);
out:
    for (i = 0; i < 3; i++) rh_server_stop(&sv[i]);
}

int main(void) {
    rh_server s;
    int fds0, fds1;

    quick = getenv("RLOCK_TEST_QUICK") != NULL && getenv("RLOCK_TEST_QUICK")[0] != '\0' &&
            strcmp(getenv("RLOCK_TEST_QUICK"), "0") != 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();

    if (rh_server_start(&s, NULL) != 0) {
        CHECK_MSG(0, "could not start redis-server");
        return check_summary("deploy");
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/rlock-deploy-XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);
    test_eval_refused(&s);
    if (!quick) test_old_functions(&s);
    test_replica_ack();
    test_sentinel();
    test_sentinel_silent();
    test_connect_bound();
    test_sentinel_stale();
    if (!quick) test_sentinel_cli();
    test_sentinel_cli_auth();
    test_sentinel_answers();
    test_long_host_names();
    test_host_names_253();
    test_sentinel_inputs();
    test_sentinel_request_limits();
    test_sentinel_long_names();
    test_sentinel_stale_mark();
    test_sentinel_loop_bound();
    test_cluster();
    test_cluster_unreachable();
    if (!quick) test_check(&s);
    if (!quick) test_load();
    {
        char f[200];
        snprintf(f, sizeof f, "%s/check.out", tmpdir);
        unlink(f);
        CHECK(rmdir(tmpdir) == 0);
    }
    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0);
    rh_server_stop(&s);

    CHECK_EQ_LL(rh_count_children(), 0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    return check_summary("deploy");
}
