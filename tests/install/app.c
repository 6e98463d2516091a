/* app.c - a program built against an installed rlock (tests/install-check.sh
 * builds it with pkg-config, CMake find_package and add_subdirectory), with
 * the include lines a user writes. Usage: app PORT (a throwaway redis-server
 * on 127.0.0.1). It takes a lock, sees a second client refused while it is
 * held, releases it, sees the second client get it; exit 0 when all held. */
#define RLOCK_IMPLEMENTATION
#include <rlock/adapters/rlock_posix.h> /* first: it sets the POSIX feature macros */
#include <rlock/rlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HOW
#define HOW "app"
#endif

typedef struct { rlock_posix_conn pc; rlock_node node; rlock_client cl; rlock_lock lk; } holder;

static int open_holder(holder *h, int port, const char *key) {
    rlock_posix_init_tcp(&h->pc, "127.0.0.1", port, 1000);
    rlock_node_init(&h->node, rlock_posix_transport(&h->pc));
    if (rlock_client_init(&h->cl, &h->node, 1, NULL) != RLOCK_OK) return -1;
    return rlock_lock_init(&h->lk, &h->cl, key, strlen(key), RLOCK_KIND_SIMPLE) == RLOCK_OK ? 0 : -1;
}

static void close_holder(holder *h) {
    rlock_client_close(&h->cl);
    rlock_posix_close(&h->pc);
}

int main(int argc, char **argv) {
    holder a, b;
    rlock_status st;
    long long validity;
    int port = argc > 1 ? atoi(argv[1]) : 0, ok = 0;
    if (port <= 0) { fprintf(stderr, "usage: app PORT\n"); return 64; }
    if (open_holder(&a, port, "install-check:" HOW) != 0 || open_holder(&b, port, "install-check:" HOW) != 0) {
        fprintf(stderr, HOW ": init failed\n");
        return 1;
    }
    st = rlock_acquire(&a.lk, 10000, 2000);
    validity = rlock_validity_ms(&a.lk);
    if (st != RLOCK_OK || validity <= 0) {
        fprintf(stderr, HOW ": acquire: %s (%s)\n", rlock_status_str(st), rlock_node_error(&a.node));
    } else if ((st = rlock_try_acquire(&b.lk, 10000)) != RLOCK_NOT_ACQUIRED) {
        fprintf(stderr, HOW ": a second client while held: %s, want NOT_ACQUIRED\n", rlock_status_str(st));
    } else if ((st = rlock_release(&a.lk)) != RLOCK_OK) {
        fprintf(stderr, HOW ": release: %s\n", rlock_status_str(st));
    } else if ((st = rlock_try_acquire(&b.lk, 10000)) != RLOCK_OK || rlock_release(&b.lk) != RLOCK_OK) {
        fprintf(stderr, HOW ": the second client after the release: %s\n", rlock_status_str(st));
    } else {
        printf(HOW ": rlock %s: acquired (%lld ms valid), a rival refused, released, the rival got it\n",
               RLOCK_VERSION_STRING, validity);
        ok = 1;
    }
    close_holder(&a);
    close_holder(&b);
    return ok ? 0 : 1;
}
