/* test_harness.c - self-test for tests/harness.h and tests/proxy.h.
 * Build: gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -Itests \
 *            tests/test_harness.c -lhiredis -lpthread -o build/test_harness */
#define _POSIX_C_SOURCE 200809L   /* before any system header */
#include "harness.h"
#include "proxy.h"
#include "check.h"

/* check cond once; on failure record it and leave the test function */
#define REQUIRE(cond) do { int req_ok_ = (cond) ? 1 : 0; \
    CHECK_MSG(req_ok_, "required"); if (!req_ok_) return; } while (0)

static redisReply *cmd(redisContext *c, const char *fmt, ...) {
    va_list ap;
    void *r;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return (redisReply *)r;
}

/* PING on c: 1 if +PONG, 0 otherwise (reply freed). */
static int ping_ok(redisContext *c) {
    redisReply *r = cmd(c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r) freeReplyObject(r);
    return ok;
}

static redisContext *connect_ms(int port, int timeout_ms) {
    struct timeval tv;
    redisContext *c;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && !c->err) redisSetTimeout(c, tv);
    return c;   /* may carry c->err; caller frees */
}

static int wait_active(rp_proxy *p, unsigned long want, unsigned ms) {
    unsigned long long end = rh_now_ms() + ms;
    while (rp_get_stats(p).active != want && rh_now_ms() < end) rh_sleep_ms(5);
    return rp_get_stats(p).active == want;
}

static void test_server_basics(void) {
    rh_server s;
    char buf[64], dir[256];
    redisContext *c;
    unsigned long long t0;
    int port;

    CHECK(rh_free_port() > 1024);
    REQUIRE(rh_server_start(&s, NULL) == 0);
    CHECK(s.pid > 0);
    CHECK(s.port > 0);
    CHECK(access(s.logfile, F_OK) == 0);
    CHECK_EQ_LL(rh_int(&s, "INCR x"), 1);
    CHECK_EQ_LL(rh_int(&s, "INCR x"), 2);
    CHECK_EQ_LL(rh_str(&s, buf, sizeof buf, "PING"), REDIS_REPLY_STATUS);
    CHECK(strcmp(buf, "PONG") == 0);
    CHECK_EQ_LL(rh_str(&s, buf, sizeof buf, "GET %s", "x"), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "2") == 0);
    CHECK_EQ_LL(rh_str(&s, buf, sizeof buf, "GET nosuchkey"), REDIS_REPLY_NIL);
    CHECK_EQ_LL(rh_str(&s, buf, sizeof buf, "NOSUCHCOMMAND"), REDIS_REPLY_ERROR);
    CHECK(strncmp(buf, "ERR", 3) == 0);
    CHECK_EQ_LL(rh_str(&s, buf, 3, "SET y %s", "abcdef"), REDIS_REPLY_STATUS);
    CHECK(strcmp(buf, "OK") == 0);
    CHECK_EQ_LL(rh_str(&s, buf, 4, "GET y"), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "abc") == 0);   /* truncated, terminated */

    /* kill -9 and restart on the same port: fresh, empty server */
    port = s.port;
    rh_server_kill9(&s);
    CHECK_EQ_LL(s.pid, -1);
    fprintf(stderr, "(expected connect error follows)\n");
    CHECK_EQ_LL(rh_int(&s, "PING"), -999);
    CHECK(rh_server_restart(&s, NULL) == 0);
    CHECK_EQ_LL(s.port, port);
    CHECK(s.pid > 0);
    CHECK_EQ_LL(rh_int(&s, "INCR x"), 1);
    CHECK_EQ_LL(rh_int(&s, "INCR x"), 2);

    /* pause: a command with a 200 ms timeout fails; resume: it works */
    rh_server_pause(&s);
    c = connect_ms(s.port, 200);   /* the kernel completes the handshake */
    CHECK(c != NULL);
    if (c) {
        t0 = rh_now_ms();
        CHECK(!ping_ok(c));
        CHECK(c->err != 0);
        CHECK_MSG(rh_now_ms() - t0 >= 150, "timed out after %llu ms", rh_now_ms() - t0);
        redisFree(c);
    }
    rh_server_resume(&s);
    CHECK_EQ_LL(rh_int(&s, "INCR x"), 3);

    /* stop works on a paused server and removes the temp dir */
    rh_server_pause(&s);
    snprintf(dir, sizeof dir, "%s", s.dir);
    t0 = rh_now_ms();
    rh_server_stop(&s);
    CHECK_MSG(rh_now_ms() - t0 < 3000, "stop took %llu ms", rh_now_ms() - t0);
    CHECK_EQ_LL(s.pid, -1);
    CHECK(access(dir, F_OK) != 0);
    rh_server_stop(&s);   /* idempotent */
}

static void test_requirepass(void) {
    static const char *const args[] = { "--requirepass", "pw", NULL };
    rh_server s;
    redisContext *c;
    redisReply *r;
    REQUIRE(rh_server_start(&s, args) == 0);
    c = rh_connect(&s);
    CHECK(c != NULL);
    if (c) {
        r = cmd(c, "PING");
        CHECK(r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0);
        if (r) freeReplyObject(r);
        r = cmd(c, "AUTH %s", "pw");
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r) freeReplyObject(r);
        CHECK(ping_ok(c));
        redisFree(c);
    }
    rh_server_stop(&s);
}

static void test_start_failures(void) {
    static const char *const bad[] = { "--no-such-option", "1", NULL };
    rh_server s;
    struct sockaddr_in a;
    int blocker, port;

    fprintf(stderr, "(expected startup failure messages follow)\n");
    CHECK(rh_server_start(&s, bad) == -1);
    CHECK_EQ_LL(s.pid, -1);
    CHECK(s.dir[0] == 0);

    /* restart when the port is held by someone else fails, then works */
    REQUIRE(rh_server_start(&s, NULL) == 0);
    port = s.port;
    rh_server_kill9(&s);
    blocker = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    CHECK(bind(blocker, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(blocker, 1) == 0);
    CHECK(rh_server_restart(&s, NULL) == -1);
    CHECK_EQ_LL(s.pid, -1);
    close(blocker);
    CHECK(rh_server_restart(&s, NULL) == 0);
    CHECK_EQ_LL(s.port, port);
    CHECK_EQ_LL(rh_int(&s, "INCR z"), 1);
    rh_server_stop(&s);
}

static void test_proxy(void) {
    rh_server s;
    rp_proxy p;
    redisContext *c, *keep;
    redisReply *r;
    unsigned long long t0, dt;
    char buf[64];
    rp_stats st;

    REQUIRE(rh_server_start(&s, NULL) == 0);
    if (rp_start(&p, s.port) != 0) { CHECK(!"rp_start"); rh_server_stop(&s); return; }
    CHECK(p.port > 0 && p.port != s.port);

    /* FORWARD */
    keep = connect_ms(p.port, 2000);
    CHECK(keep && !keep->err);
    CHECK(ping_ok(keep));
    {   /* a value larger than one read chunk survives the trip */
        static char big[200000];
        memset(big, 'q', sizeof big);
        r = cmd(keep, "SET big %b", big, sizeof big);
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r) freeReplyObject(r);
        r = cmd(keep, "GET big");
        CHECK(r && r->type == REDIS_REPLY_STRING && r->len == sizeof big &&
              memcmp(r->str, big, sizeof big) == 0);
        if (r) freeReplyObject(r);
    }

    /* DELAY 200 ms, applied to an existing connection */
    rp_set_mode(&p, RP_DELAY, 200);
    t0 = rh_now_ms();
    CHECK(ping_ok(keep));
    dt = rh_now_ms() - t0;
    CHECK_MSG(dt >= 200, "delayed PING took %llu ms", dt);
    c = connect_ms(p.port, 2000);   /* and a new one */
    t0 = rh_now_ms();
    CHECK(c && ping_ok(c));
    dt = rh_now_ms() - t0;
    CHECK_MSG(dt >= 200, "delayed PING took %llu ms", dt);
    if (c) redisFree(c);
    rp_set_mode(&p, RP_FORWARD, 0);
    t0 = rh_now_ms();
    CHECK(ping_ok(keep));
    dt = rh_now_ms() - t0;
    CHECK_MSG(dt < 150, "forwarded PING took %llu ms", dt);

    /* DROP: a black hole */
    rp_set_mode(&p, RP_DROP, 0);
    c = connect_ms(p.port, 300);
    CHECK(c && !c->err);
    if (c) {
        t0 = rh_now_ms();
        CHECK(!ping_ok(c));
        dt = rh_now_ms() - t0;
        CHECK(c->err == REDIS_ERR_IO);
        CHECK_MSG(dt >= 250, "dropped PING failed after %llu ms", dt);
        redisFree(c);
    }

    /* RESET: new connections die at once, existing ones too */
    rp_set_mode(&p, RP_RESET, 0);
    c = connect_ms(p.port, 1000);
    CHECK(c != NULL);
    if (c) {
        CHECK(c->err || !ping_ok(c));
        redisFree(c);
    }
    CHECK(!ping_ok(keep));   /* was reset (or dropped-then-reset) */
    redisFree(keep);
    rp_set_mode(&p, RP_FORWARD, 0);
    CHECK(wait_active(&p, 0, 2000));
    st = rp_get_stats(&p);
    CHECK(st.resets >= 2);

    /* CUT_AFTER_REQUEST: applied on the server, client gets an error */
    CHECK_EQ_LL(rh_int(&s, "DEL k"), 0);
    rp_set_mode(&p, RP_CUT_AFTER_REQUEST, 0);
    c = connect_ms(p.port, 2000);
    CHECK(c && !c->err);
    if (c) {
        t0 = rh_now_ms();
        r = cmd(c, "SET k v");
        CHECK(r == NULL);
        CHECK(c->err != 0);
        CHECK_MSG(rh_now_ms() - t0 < 900, "cut took %llu ms", rh_now_ms() - t0);
        if (r) freeReplyObject(r);
        redisFree(c);
    }
    CHECK_EQ_LL(rh_str(&s, buf, sizeof buf, "GET k"), REDIS_REPLY_STRING);
    CHECK(strcmp(buf, "v") == 0);
    CHECK_EQ_LL(rp_get_stats(&p).cuts, 1);

    /* back to FORWARD: a fresh connection works again */
    rp_set_mode(&p, RP_FORWARD, 0);
    c = connect_ms(p.port, 2000);
    CHECK(c && ping_ok(c));
    if (c) redisFree(c);

    /* connections accepted during DROP are closed once DROP ends */
    rp_set_mode(&p, RP_DROP, 0);
    c = connect_ms(p.port, 300);
    CHECK(c && !ping_ok(c));
    CHECK(wait_active(&p, 1, 2000));
    rp_set_mode(&p, RP_FORWARD, 0);
    CHECK(wait_active(&p, 0, 2000));
    if (c) redisFree(c);

    /* more than RP_MAX_CONNS clients: the extra ones are reset */
    {
        redisContext *cs[RP_MAX_CONNS + 4];
        int i, ok = 0;
        unsigned long refused0 = rp_get_stats(&p).refused;
        for (i = 0; i < RP_MAX_CONNS + 4; i++) {
            cs[i] = connect_ms(p.port, 2000);
            if (cs[i] && !cs[i]->err && ping_ok(cs[i])) ok++;
        }
        CHECK_EQ_LL(ok, RP_MAX_CONNS);
        CHECK_EQ_LL(rp_get_stats(&p).refused - refused0, 4);
        for (i = 0; i < RP_MAX_CONNS + 4; i++) if (cs[i]) redisFree(cs[i]);
        CHECK(wait_active(&p, 0, 2000));
    }

    /* upstream dies: clients through the proxy see the connection fail */
    c = connect_ms(p.port, 1000);
    CHECK(c && ping_ok(c));
    rh_server_kill9(&s);
    if (c) {
        CHECK(!ping_ok(c));
        redisFree(c);
    }
    c = connect_ms(p.port, 1000);
    CHECK(c != NULL);
    if (c) {
        CHECK(c->err || !ping_ok(c));
        redisFree(c);
    }
    CHECK(wait_active(&p, 0, 2000));
    st = rp_get_stats(&p);
    CHECK(st.accepted >= RP_MAX_CONNS + 10);

    rp_stop(&p);
    rp_stop(&p);   /* idempotent */
    rh_server_stop(&s);
    /* the listener is gone */
    c = connect_ms(p.port, 500);
    CHECK(c == NULL || c->err);
    if (c) redisFree(c);
}

int main(void) {
    int fds0, fds1;
    rh_ignore_sigpipe();
    fds0 = rh_count_fds();
    CHECK(fds0 > 0);
    CHECK_EQ_LL(rh_count_children(), 0);

    test_server_basics();
    test_requirepass();
    test_start_failures();
    test_proxy();

    fds1 = rh_count_fds();
    CHECK_MSG(fds1 == fds0, "fds before %d, after %d", fds0, fds1);
    CHECK_EQ_LL(rh_count_children(), 0);
    return check_summary("harness");
}
