/* test_deploy.c - where Redis really runs (issue 14), against real,
 * throw-away redis-server processes on loopback (free ports, stopped by PID).
 *
 * Covers: servers that refuse EVAL (an ACL user without +eval/+evalsha but
 * with +fcall): rlock switches to its Redis 7 function libraries by itself,
 * loads them once (FUNCTION LOAD REPLACE pipelined before the FCALL), loads
 * them again after FUNCTION FLUSH, and EVAL and FCALL holders exclude each
 * other on one key; RLOCK_SCRIPTS_EVAL never switches; RLOCK_SCRIPTS_FCALL
 * uses functions from the start; a user refused both gets RLOCK_E_AUTH with
 * nothing held. `rlock check` (the CLI) against a fit server, one with
 * allkeys-lru, a replica, one without persistence, an EVAL-less user, a
 * sentinel-managed primary, bad arguments and --json.
 *
 * RLOCK_TEST_QUICK=1 (the valgrind run) skips the CLI runs (they exec
 * build/rlock-asan, which valgrind cannot host). */
#define RLOCK_IMPLEMENTATION
#include "adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "rlock.h"
#include "harness.h"
#include "check.h"

#include <sys/wait.h>

static int quick;

typedef struct tconn {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
} tconn;

static int tc_open(tconn *t, const rh_server *s, int scripts, const char *user, const char *pass) {
    rlock_config cfg;
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = 2000; /* far above a loopback round trip, even under valgrind */
    cfg.scripts = scripts;
    if (rlock_posix_init_tcp(&t->pc, "127.0.0.1", s->port, 1000) != 0) return -1;
    if (rlock_node_init(&t->node, rlock_posix_transport(&t->pc)) != RLOCK_OK) return -1;
    t->node.username = user;
    t->node.password = pass;
    return rlock_client_init(&t->cl, &t->node, 1, &cfg) == RLOCK_OK ? 0 : -1;
}
static void tc_close(tconn *t) {
    rlock_client_close(&t->cl);
    rlock_posix_close(&t->pc);
}

/* The reply text of a command (status/string/error). */
static int says(const rh_server *s, const char *want, const char *fmt, const char *arg) {
    char buf[256];
    rh_str(s, buf, sizeof buf, fmt, arg);
    if (strcmp(buf, want) != 0) fprintf(stderr, "  redis said: %s\n", buf);
    return strcmp(buf, want) == 0;
}

/* 1 when the server has the function library of script id. */
static int has_library(const rh_server *s, int id) {
    char name[32];
    CHECK(rlock_function_name(id, name, sizeof name) == 22);
    {
        redisContext *c = rh_connect(s);
        redisReply *r;
        int n = -1;
        if (!c) return -1;
        r = (redisReply *)redisCommand(c, "FUNCTION LIST LIBRARYNAME %s", name);
        if (r && r->type == REDIS_REPLY_ARRAY) n = (int)r->elements;
        if (r) freeReplyObject(r);
        redisFree(c);
        return n;
    }
}

/* ------------------------------------------------- 1. EVAL-less servers */

static void test_eval_refused(const rh_server *s) {
    tconn fc, ev, strict, both, pre;
    rlock_lock a, b, re, x, y;
    unsigned long c0;
    char fn[32];
    int id;

    /* a managed-service user: everything but scripts; functions allowed */
    CHECK(says(s, "OK", "ACL SETUSER fc on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro%s", ""));
    CHECK(says(s, "OK", "ACL SETUSER nofn on >pw ~* &* +@all -eval -evalsha -eval_ro -evalsha_ro -fcall -fcall_ro%s", ""));
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));

    /* names: "rlock_" + 16 hex digits of the script's SHA1; bad ids refused */
    for (id = 0; id < RLOCK_SCRIPT_COUNT; id++) {
        CHECK_EQ_LL(rlock_function_name(id, fn, sizeof fn), 22);
        CHECK(strncmp(fn, "rlock_", 6) == 0 && strncmp(fn + 6, rlock_script_sha(id), 16) == 0);
    }
    CHECK_EQ_LL(rlock_function_name(RLOCK_SCRIPT_COUNT, fn, sizeof fn), 0);
    CHECK_EQ_LL(rlock_function_name(0, fn, 22), 0); /* no room for the NUL */

    CHECK(tc_open(&fc, s, RLOCK_SCRIPTS_AUTO, "fc", "pw") == 0);
    CHECK(tc_open(&ev, s, RLOCK_SCRIPTS_AUTO, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&a, &fc.cl, "fn:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_lock_init(&b, &ev.cl, "fn:key", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);

    /* EVALSHA refused (NOPERM) -> FCALL -> not found -> LOAD + FCALL */
    c0 = rlock_node_commands(&fc.node);
    CHECK_EQ_ST(rlock_acquire(&a, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&fc.node) - c0, 5); /* AUTH, EVALSHA, FCALL, FUNCTION LOAD, FCALL */
    CHECK_EQ_LL(has_library(s, 0), 1);
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
    for (id = 0; id < RLOCK_SCRIPT_COUNT; id++) CHECK_EQ_LL(has_library(s, id), id != 1);
    tc_close(&fc);
    tc_close(&ev);

    /* RLOCK_SCRIPTS_EVAL: the NOPERM is the answer; nothing is held */
    CHECK(tc_open(&strict, s, RLOCK_SCRIPTS_EVAL, "fc", "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&x, &strict.cl, "fn:strict", 9, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&x, 5000, 0), RLOCK_E_AUTH);
    CHECK_MSG(strstr(rlock_node_error(&strict.node), "evalsha") != NULL, "%s", rlock_node_error(&strict.node));
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:strict"), 0);
    tc_close(&strict);

    /* refused both: RLOCK_E_AUTH naming fcall, nothing held */
    CHECK(tc_open(&both, s, RLOCK_SCRIPTS_AUTO, "nofn", "pw") == 0);
    CHECK_EQ_ST(rlock_lock_init(&x, &both.cl, "fn:both", 7, RLOCK_KIND_SIMPLE), RLOCK_OK);
    CHECK_EQ_ST(rlock_acquire(&x, 5000, 0), RLOCK_E_AUTH);
    CHECK_MSG(strstr(rlock_node_error(&both.node), "fcall") != NULL, "%s", rlock_node_error(&both.node));
    CHECK_EQ_LL(rh_int(s, "EXISTS %s", "fn:both"), 0);
    tc_close(&both);

    /* RLOCK_SCRIPTS_FCALL from the start (default user): no EVALSHA at all */
    CHECK(says(s, "OK", "FUNCTION FLUSH%s", ""));
    CHECK(tc_open(&pre, s, RLOCK_SCRIPTS_FCALL, NULL, NULL) == 0);
    CHECK_EQ_ST(rlock_lock_init(&y, &pre.cl, "fn:pre", 6, RLOCK_KIND_SIMPLE), RLOCK_OK);
    c0 = rlock_node_commands(&pre.node);
    CHECK_EQ_ST(rlock_acquire(&y, 5000, 0), RLOCK_OK);
    CHECK_EQ_LL(rlock_node_commands(&pre.node) - c0, 3); /* FCALL, LOAD, FCALL */
    CHECK_EQ_ST(rlock_release(&y), RLOCK_OK);
    tc_close(&pre);

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
    test_eval_refused(&s);
    CHECK_EQ_LL(rh_int(&s, "DBSIZE"), 0);
    rh_server_stop(&s);

    CHECK_EQ_LL(rh_count_children(), 0);
    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds at start %d, at end %d", fds0, fds1);
    return check_summary("deploy");
}
