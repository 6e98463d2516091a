/* size/cluster.c - the default configuration plus the Cluster add-on
 * (rlock_cluster_*): a simple lock on a 3-seed cluster, following MOVED/ASK. */
#include "stubs.h"
static rlock_cluster rc;
static rlock_lock lk;
int main(void) {
    const char *hosts[3] = { "10.0.0.1", "10.0.0.2", "10.0.0.3" };
    int ports[3] = { 6379, 6379, 6379 };
    rlock_status st;
    if (rlock_cluster_init(&rc, hosts, ports, 3, NULL, stub_cluster_connect, 0) != RLOCK_OK) return 1;
    rlock_cluster_lock_init(&rc, &lk, "fw:job", 6, RLOCK_KIND_SIMPLE);
    st = rlock_cluster_acquire(&rc, &lk, 3000, 1000);
    st = rlock_cluster_extend(&rc, &lk, 3000);
    st = rlock_cluster_release(&rc, &lk);
    stub_sink = (unsigned char)(rlock_status_str(st)[0] + rlock_cluster_error(&rc)[0]);
    rlock_cluster_close(&rc);
    return (int)st;
}
