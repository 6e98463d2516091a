/* size/smallest.c - what the smallest configuration (-DRLOCK_SMALLEST) is
 * for: one node, one simple lock - acquire (waiting by backoff), try,
 * extend, renew, release - blocking and through the non-blocking step API.
 * With -DSIZE_SUPERLOOP (make size's "superloop" figure) the non-blocking
 * calls only, as a firmware superloop (examples/firmware) uses them: the
 * blocking wait is not linked. The budget is measured without it. */
#include "stubs.h"
static rlock_node node;
static rlock_client cl;
static rlock_lock lk;
int main(void) {
    rlock_transport tr = stub_transport();
    uint32_t next = 0;
    rlock_status st;
    rlock_node_init(&node, &tr);
    if (rlock_client_init(&cl, &node, 1, NULL) != RLOCK_OK) return 1;
    rlock_lock_init(&lk, &cl, "fw:job", 6, RLOCK_KIND_SIMPLE);
#ifndef SIZE_SUPERLOOP
    st = rlock_acquire(&lk, 3000, 1000);
    st = st == RLOCK_OK ? rlock_extend(&lk, 3000) : rlock_try_acquire(&lk, 3000);
    st = rlock_release(&lk);
#endif
    st = rlock_acquire_begin(&lk, 3000, 1000);
    while (st == RLOCK_WOULD_BLOCK) { next = rlock_next_timeout_ms(&lk); st = rlock_step(&lk); }
    while (rlock_renew_poll(&lk, &next) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    if (rlock_extend_begin(&lk, 3000) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    if (rlock_release_begin(&lk) == RLOCK_WOULD_BLOCK) st = rlock_step(&lk);
    stub_sink = (unsigned char)(rlock_validity_ms(&lk) + (long long)rlock_lock_state(&lk) + (long long)next);
    rlock_client_close(&cl);
    return (int)st;
}
