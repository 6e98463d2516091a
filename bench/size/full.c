/* size/full.c - every lock-core feature used: Redlock over 3 nodes,
 * reentrant and fair locks, waiting by notification (RESP3 and RESP2
 * subscribers), fencing, renewal, cancel, the EVAL fallback (default
 * cfg.scripts), the event-loop API, status strings and diagnostics. The
 * add-on modules (primitives, Cluster) have rows of their own. */
#include "stubs.h"
static rlock_node node[3];
static rlock_subscriber sub[3];
static rlock_client cl;
static rlock_lock lk, rk;
int main(void) {
    rlock_transport tr = stub_transport();
    rlock_interest in[8];
    rlock_config cfg;
    uint32_t next = 0;
    rlock_status st;
    size_t i;
    rlock_config_init(&cfg);
    cfg.pubsub = 1;
    cfg.fencing = 1;
    for (i = 0; i < 3; i++) { rlock_node_init(&node[i], &tr); rlock_subscriber_init(&sub[i], &tr); }
    if (rlock_client_init(&cl, node, 3, &cfg) != RLOCK_OK) return 1;
    rlock_client_set_subscribers(&cl, sub, 3);
    rlock_client_connect(&cl, 500);
    rlock_lock_init(&lk, &cl, "fw:job", 6, RLOCK_KIND_SIMPLE);
    rlock_lock_set_fair(&lk, 1, 0);
    rlock_lock_init(&rk, &cl, "fw:re", 5, RLOCK_KIND_REENTRANT);
    st = rlock_acquire(&lk, 3000, 1000);
    st = st == RLOCK_OK ? rlock_extend(&lk, 3000) : rlock_try_acquire(&lk, 3000);
    stub_sink = (unsigned char)rlock_fence_token(&lk);
    st = rlock_release(&lk);
    st = rlock_acquire(&rk, 3000, 1000);
    stub_sink = (unsigned char)rlock_hold_count(&rk);
    st = rlock_release(&rk);
    st = rlock_acquire_begin(&lk, 3000, 1000);
    while (st == RLOCK_WOULD_BLOCK) {
        stub_sink = (unsigned char)rlock_client_interest(&cl, in, 8, &next);
        rlock_client_step(&cl);
        st = rlock_result(&lk);
    }
    if (rlock_acquire_begin(&rk, 3000, 1000) == RLOCK_WOULD_BLOCK) rlock_cancel(&rk);
    while (rlock_renew_poll(&lk, &next) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    if (rlock_extend_begin(&lk, 3000) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    if (rlock_release_begin(&lk) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    stub_sink = (unsigned char)(rlock_validity_ms(&lk) + (long long)rlock_lock_state(&lk) + (long long)next);
    stub_sink = (unsigned char)(rlock_status_str(st)[0] + rlock_node_error(&node[1])[0] + rlock_lock_error(&lk)[0]);
    stub_sink = (unsigned char)(rlock_last_votes(&lk) + (size_t)rlock_renew_outcome(&lk));
    rlock_client_close(&cl);
    return (int)st;
}
