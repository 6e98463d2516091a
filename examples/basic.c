/* basic.c - the README quick start, compiled by `make` so it cannot rot.
 * Usage: build/basic [port]   (needs a redis-server on 127.0.0.1) */
#define RLOCK_IMPLEMENTATION
#include "../rlock.h"
#include "../adapters/rlock_posix.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    rlock_posix_conn pc; rlock_node node; rlock_client cl; rlock_lock lk;
    rlock_status st;
    rlock_posix_init_tcp(&pc, "127.0.0.1", argc > 1 ? atoi(argv[1]) : 6379, 1000);
    rlock_node_init(&node, rlock_posix_transport(&pc));
    rlock_client_init(&cl, &node, 1, NULL);
    rlock_lock_init(&lk, &cl, "jobs:nightly", 12, RLOCK_KIND_SIMPLE);
    if ((st = rlock_acquire(&lk, 30000, 5000)) == RLOCK_OK) {  /* ttl 30 s, wait up to 5 s */
        printf("locked for %lld ms more\n", rlock_validity_ms(&lk));
        st = rlock_release(&lk);
    }
    printf("%s %s\n", rlock_status_str(st), rlock_node_error(&node));
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    return st == RLOCK_OK ? 0 : 1;
}
