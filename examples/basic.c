// basic.c - take a lock on one Redis server, work, release, close.
#define RLOCK_IMPLEMENTATION             // in exactly one .c file
#include "adapters/rlock_posix.h"        // first: it sets POSIX feature macros
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    rlock_posix_conn pc; rlock_node node; rlock_client cl; rlock_lock lk;
    rlock_status st;
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", argc > 1 ? atoi(argv[1]) : 6379, 1000) != 0) return 2; // bad port
    rlock_node_init(&node, rlock_posix_transport(&pc));
    rlock_client_init(&cl, &node, 1, NULL);                 // NULL: default config
    rlock_lock_init(&lk, &cl, "jobs:nightly", 12, RLOCK_KIND_SIMPLE);
    st = rlock_acquire(&lk, 30000, 5000);                   // lease 30 s, wait up to 5 s
    if (st == RLOCK_OK) {
        printf("working, %lld ms of the lease left\n", rlock_validity_ms(&lk)); // finish within it
        st = rlock_release(&lk);
    }
    printf("%s %s\n", rlock_status_str(st), rlock_node_error(&node));
    rlock_client_close(&cl);                                // closes the connection
    rlock_posix_close(&pc);
    return st == RLOCK_OK ? 0 : 1;
}
