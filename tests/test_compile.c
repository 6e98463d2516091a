/* Compile test: the header with every option the Makefile passes (-D...),
 * as C and as C++. Built in several configurations by `make compile-check`;
 * running it checks that the configuration still works at the most basic level. */
#ifdef RLOCK_TEST_RUNTIME_HOOKS
/* A target without POSIX that gives its hooks at run time only (rlock_config):
 * the header must compile without the macros. */
#define RLOCK_NO_POSIX
#include <stdint.h>
#include <stddef.h>
static uint64_t rt_now;
static uint64_t rt_now_ms(void *u) { (void)u; return rt_now += 1; }
static void rt_sleep_ms(void *u, uint32_t ms) { (void)u; rt_now += ms; }
static int rt_random(void *u, unsigned char *b, size_t n) { size_t i; (void)u; for (i = 0; i < n; i++) b[i] = (unsigned char)(i * 37u + 11u); return 0; }
static long rt_sent;
static long rt_send(void *c, const unsigned char *b, size_t n) { (void)c; (void)b; (void)n; rt_sent++; return 0; }
static long rt_recv(void *c, unsigned char *b, size_t n) { (void)c; (void)b; (void)n; return 0; }
#elif defined(RLOCK_NO_POSIX)
/* A target without POSIX supplies its own clock, sleep and random source. */
#include <stdint.h>
#include <stddef.h>
static uint64_t fake_now;
static uint64_t my_now_ms(void) { return fake_now += 1; }
static void my_sleep_ms(uint32_t ms) { fake_now += ms; }
static int my_random(unsigned char *b, size_t n) { size_t i; for (i = 0; i < n; i++) b[i] = (unsigned char)(i * 37u + 11u); return 0; }
#define RLOCK_NOW_MS() my_now_ms()
#define RLOCK_SLEEP_MS(ms) my_sleep_ms(ms)
#define RLOCK_RANDOM_BYTES(b, n) my_random((b), (n))
#endif
#define RLOCK_IMPLEMENTATION
#include "rlock.h"
#include "rlock.h" /* a second include must be harmless */
#include <stdio.h>
#include <string.h>

int main(void) {
    rlock_reply r;
    unsigned char buf[64];
    const char *argv[2] = { "PING", "x" };
    size_t lens[2] = { 4, 1 };
    size_t n = rlock_resp_encode(buf, sizeof buf, 2, argv, lens);
    int ok = n == 21 && memcmp(buf, "*2\r\n$4\r\nPING\r\n$1\r\nx\r\n", 21) == 0 &&
             rlock_resp_parse((const unsigned char *)":7\r\n", 4, 64, &r) == 4 && r.v.integer == 7 &&
             rlock_status_str(RLOCK_OK) != NULL;
    /* rlock_function_version is a constant per feature set (rlock.h 6.4b,
     * RLOCK__FN_V_<re><fair><prim>): fold the SHA1s again (FNV-1a 64, top 48
     * bits in hex). Every build checks its own set; a build with all three
     * features checks all eight, each leaving out the scripts it lacks. */
    {
        static const char *const want[8] = { RLOCK__FN_V_000, RLOCK__FN_V_001, RLOCK__FN_V_010, RLOCK__FN_V_011,
                                             RLOCK__FN_V_100, RLOCK__FN_V_101, RLOCK__FN_V_110, RLOCK__FN_V_111 };
        const int mine = RLOCK__HAS_REENTRANT * 4 + RLOCK__HAS_FAIR * 2 + RLOCK__HAS_PRIMITIVES;
        char ver[RLOCK__FN_VER + 1], hex[32];
        int set, id, i;
        ok = ok && rlock_function_version(ver, sizeof ver) == RLOCK__FN_VER;
        for (set = 0; set < 8; set++) {
            unsigned long long h = 14695981039346656037ULL;
            if (set != mine && mine != 7) continue;
            for (id = 0; id < RLOCK_SCRIPT_COUNT; id++) {
                const char *sha = rlock_script_sha(id);
                int re = (id >= RLOCK__S_REENTRANT_ACQUIRE && id <= RLOCK__S_REENTRANT_RELEASE) ||
                         id == RLOCK__S_FAIR_REENTRANT_ACQUIRE || id == RLOCK__S_FAIR_REENTRANT_RELEASE;
                int fair = id >= RLOCK__S_FAIR_ACQUIRE && id <= RLOCK__S_FAIR_REENTRANT_RELEASE;
                int prim = id >= RLOCK__S_SEM_ACQUIRE;
                if (!sha || (re && !(set & 4)) || (fair && !(set & 2)) || (prim && !(set & 1))) continue;
                for (i = 0; sha[i]; i++) h = (h ^ (unsigned char)sha[i]) * 1099511628211ULL;
            }
            snprintf(hex, sizeof hex, "%012llx", h >> 16);
            if (strcmp(hex, want[set]) != 0 || (set == mine && strcmp(hex, ver) != 0)) {
                printf("function version of set %d: %s, rlock.h says %s\n", set, hex, set == mine ? ver : want[set]);
                ok = 0;
            }
        }
    }
#ifdef RLOCK_TEST_RUNTIME_HOOKS
    {
        static rlock_node node;
        static rlock_client cl;
        static rlock_lock lk;
        rlock_status st;
        rlock_config cfg;
        rlock_transport tr;
        memset(&tr, 0, sizeof tr);
        tr.send = rt_send;
        tr.recv = rt_recv;
        rlock_config_init(&cfg);
        ok = ok && rlock_node_init(&node, &tr) == RLOCK_OK;
        ok = ok && rlock_client_init(&cl, &node, 1, &cfg) == RLOCK_E_BADARG &&
             strstr(rlock_client_error(&cl), "cfg.now_ms is required") != NULL;
        cfg.now_ms = rt_now_ms;
        ok = ok && rlock_client_init(&cl, &node, 1, &cfg) == RLOCK_E_BADARG &&
             strstr(rlock_client_error(&cl), "cfg.random_bytes is required") != NULL;
        cfg.random_bytes = rt_random;
        /* No sleep hook: the non-blocking API needs none; a blocking acquire
         * that would wait says which hook is missing and sends nothing. */
        ok = ok && rlock_client_init(&cl, &node, 1, &cfg) == RLOCK_OK;
        ok = ok && rlock_lock_init(&lk, &cl, "k", 1, RLOCK_KIND_SIMPLE) == RLOCK_OK;
        ok = ok && rlock_acquire(&lk, 1000, 500) == RLOCK_E_BADARG &&
             strcmp(rlock_lock_error(&lk), "cfg.sleep_ms is required to wait (RLOCK_NO_POSIX, no RLOCK_SLEEP_MS)") == 0 &&
             rt_sent == 0 && rlock_lock_state(&lk) == RLOCK_STATE_IDLE;
        ok = ok && rlock_acquire_begin(&lk, 1000, 500) == RLOCK_WOULD_BLOCK; /* non-blocking: fine */
        rlock_lock_destroy(&lk);
        rlock_client_close(&cl);
        /* With it, the same blocking acquire runs (this transport never
         * answers: it ends on its deadline, not on a missing hook). */
        cfg.sleep_ms = rt_sleep_ms;
        ok = ok && rlock_node_init(&node, &tr) == RLOCK_OK; /* closed above: no connect hook to reopen */
        ok = ok && rlock_client_init(&cl, &node, 1, &cfg) == RLOCK_OK;
        ok = ok && rlock_lock_init(&lk, &cl, "k", 1, RLOCK_KIND_SIMPLE) == RLOCK_OK;
        st = rlock_acquire(&lk, 1000, 500);
        ok = ok && st != RLOCK_E_BADARG && st != RLOCK_OK && rlock_lock_error(&lk)[0] == '\0';
        rlock_client_close(&cl);
    }
#endif
    printf("compile: %d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
    return ok ? 0 : 1;
}
