/* size/primitives.c - the default configuration plus the primitives add-on
 * (section 5b): a semaphore, a read-write lock, a multi-lock, inspection and
 * force-unlock on one node. */
#include "stubs.h"
static rlock_node node;
static rlock_client cl;
static rlock_lock lk, sem, rd, wr, mu;
int main(void) {
    rlock_transport tr = stub_transport();
    rlock_config cfg;
    rlock_info info[1];
    const char *keys[2] = { "{j}:a", "{j}:b" };
    size_t lens[2] = { 5, 5 };
    rlock_status st;
    rlock_config_init(&cfg);
    cfg.pubsub = 1;
    rlock_node_init(&node, &tr);
    if (rlock_client_init(&cl, &node, 1, &cfg) != RLOCK_OK) return 1;
    rlock_lock_init(&lk, &cl, "fw:job", 6, RLOCK_KIND_SIMPLE);
    st = rlock_acquire(&lk, 3000, 1000);
    st = rlock_release(&lk);
    rlock_semaphore_init(&sem, &cl, "sem", 3, 4);
    rlock_lock_init(&rd, &cl, "rw", 2, RLOCK_KIND_READ);
    rlock_lock_init(&wr, &cl, "rw", 2, RLOCK_KIND_WRITE);
    rlock_multi_init(&mu, &cl, keys, lens, 2);
    st = rlock_acquire(&sem, 3000, 1000); st = rlock_release(&sem);
    st = rlock_acquire(&rd, 3000, 1000); st = rlock_release(&rd);
    st = rlock_acquire(&wr, 3000, 1000); st = rlock_release(&wr);
    st = rlock_acquire(&mu, 3000, 1000); st = rlock_release(&mu);
    st = rlock_inspect(&lk, info, 1);
    st = rlock_force_unlock(&lk);
    stub_sink = (unsigned char)rlock_status_str(st)[0];
    rlock_client_close(&cl);
    return (int)st;
}
