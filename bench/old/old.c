/* bench/old/old.c - the pre-engine library (bc01738: one operation per
 * client, a subscriber connection per server for pub/sub) in the bench
 * binary, under the names bench/old/gen.sh gave it (rlockv0_*), so that
 * its uncontended cycles run in the same slices and the same process as
 * today's rows: the same load, the same getrusage. */
#include "rlockv0_posix.h" /* first: sets the POSIX feature macros (or RLOCKV0_MISSING) */
#include "old.h"

#ifdef RLOCKV0_MISSING
const char *old_missing(void) { return RLOCKV0_MISSING; }
int old_setup(int idx, int n, const int *ports, const char *key) { (void)idx; (void)n; (void)ports; (void)key; return -1; }
void old_teardown(int idx) { (void)idx; }
int old_acq(void *ctx) { (void)ctx; return -1; }
int old_rel(void *ctx) { (void)ctx; return -1; }
const char *old_last_error(int idx) { (void)idx; return RLOCKV0_MISSING; }
void old_get_sizes(old_sizes *out) { out->node = out->client = out->lock = out->op_fields = 0; }
#else
#define RLOCKV0_IMPLEMENTATION
#include "rlockv0.h"
#include <string.h>

#define OLD_TTL_MS 30000 /* as bench.c's ROW_TTL_MS */

typedef struct old_setup_t {
    int n, up;
    rlockv0_posix_conn pc[RLOCKV0_MAX_NODES];
    rlockv0_node nodes[RLOCKV0_MAX_NODES];
    rlockv0_client cl;
    rlockv0_lock lk;
    rlockv0_status last;
} old_setup_t;

static old_setup_t g_old[OLD_MAX];

const char *old_missing(void) { return NULL; }

void old_teardown(int idx) {
    old_setup_t *s = &g_old[idx];
    int i;
    if (!s->up) return;
    rlockv0_lock_destroy(&s->lk);
    rlockv0_client_close(&s->cl);
    for (i = 0; i < s->n; i++) rlockv0_posix_close(&s->pc[i]);
    s->up = 0;
}

int old_setup(int idx, int n, const int *ports, const char *key) {
    old_setup_t *s;
    int i;
    if (idx < 0 || idx >= OLD_MAX || n < 1 || n > RLOCKV0_MAX_NODES) return -1;
    s = &g_old[idx];
    memset(s, 0, sizeof *s);
    s->n = n;
    s->up = 1;
    for (i = 0; i < n; i++)
        if (rlockv0_posix_init_tcp(&s->pc[i], "127.0.0.1", ports[i], 1000) != 0 ||
            rlockv0_node_init(&s->nodes[i], rlockv0_posix_transport(&s->pc[i])) != RLOCKV0_OK) goto fail;
    if (rlockv0_client_init(&s->cl, s->nodes, (size_t)n, NULL) != RLOCKV0_OK ||
        rlockv0_client_connect(&s->cl, 2000) != RLOCKV0_OK ||
        rlockv0_lock_init(&s->lk, &s->cl, key, strlen(key), RLOCKV0_KIND_SIMPLE) != RLOCKV0_OK) goto fail;
    return 0;
fail:
    old_teardown(idx);
    return -1;
}

int old_acq(void *ctx) {
    old_setup_t *s = &g_old[*(const int *)ctx];
    s->last = rlockv0_acquire(&s->lk, OLD_TTL_MS, 0);
    return s->last == RLOCKV0_OK ? 0 : -1;
}

int old_rel(void *ctx) {
    old_setup_t *s = &g_old[*(const int *)ctx];
    s->last = rlockv0_release(&s->lk);
    return s->last == RLOCKV0_OK ? 0 : -1;
}

const char *old_last_error(int idx) {
    static char buf[192];
    const old_setup_t *s = &g_old[idx];
    snprintf(buf, sizeof buf, "%s; node 0: %s", rlockv0_status_str(s->last), rlockv0_node_error(&s->nodes[0]));
    return buf;
}

/* The old lock kept its operation among its other fields (no struct of its
 * own): these are the ones that only matter while an operation runs. */
#define OLD_F(m) sizeof(((rlockv0_lock *)0)->m)
void old_get_sizes(old_sizes *out) {
    out->node = sizeof(rlockv0_node);
    out->client = sizeof(rlockv0_client);
    out->lock = sizeof(rlockv0_lock);
    out->op_fields = OLD_F(op) + OLD_F(phase) + OLD_F(script) + OLD_F(retry) + OLD_F(timed) + OLD_F(node_mask) +
                     OLD_F(op_ttl) + OLD_F(round_start) + OLD_F(wait_end) + OLD_F(wake_at) + OLD_F(attempts) +
                     OLD_F(node_timeout) + OLD_F(holder_pttl) + OLD_F(op_result) + OLD_F(diag) + OLD_F(ttl_str) +
                     OLD_F(wait_str) + OLD_F(queue);
}
#endif
