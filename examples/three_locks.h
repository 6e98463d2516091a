/* three_locks.h - what the event-loop examples (poll_loop.c, epoll_loop.c,
 * libuv_loop.c, libevent_loop.c) share, so that each of them shows only its
 * loop: one client with one connection to one redis-server, three locks
 * acquired at once over it (requests pipelined, a waiter waiting on the same
 * socket under RESP3), then released at once.
 *
 *   demo_init      parse "PORT [KEY1 KEY2 KEY3]", set up, begin the acquires
 *   demo_progress  after each rlock_client_step: collect what finished,
 *                  print it, begin the releases once all three are held;
 *                  1 when nothing is left in progress
 *   demo_close     close what demo_init opened; the exit status: 0 only when
 *                  all three were acquired and then released
 *   demo_conn      say which descriptor the loop now watches for a connection
 *                  (printed when it is new: first connect, or a reconnect)
 *
 * Include it after adapters/rlock_posix.h (with RLOCK_IMPLEMENTATION). */
#ifndef RLOCK_EXAMPLE_THREE_LOCKS_H
#define RLOCK_EXAMPLE_THREE_LOCKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEMO_LOCKS 3
#define DEMO_TTL_MS 30000  /* lease of each lock: longer than the wait */
#define DEMO_WAIT_MS 25000 /* how long an acquire may wait for a held key */

typedef struct demo {
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk[DEMO_LOCKS];
    const char *key[DEMO_LOCKS];
    rlock_status st[DEMO_LOCKS]; /* of the operation in progress, or its result */
    int releasing;               /* 0: acquiring, 1: releasing */
    int acquired, released;      /* how many of the three */
    unsigned long gen;           /* connection last reported by demo_conn */
    unsigned long long t0;
} demo;

static unsigned long long demo_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000u + (unsigned long long)ts.tv_nsec / 1000000u;
}

static int demo_init(demo *d, int argc, char **argv) {
    static const char *const def[DEMO_LOCKS] = { "example:a", "example:b", "example:c" };
    rlock_config cfg;
    int i, port = argc > 1 ? atoi(argv[1]) : 6379;
    memset(d, 0, sizeof *d);
    if (argc != 1 && argc != 2 && argc != 2 + DEMO_LOCKS) {
        fprintf(stderr, "usage: %s [PORT [KEY1 KEY2 KEY3]]   (a redis-server on 127.0.0.1)\n", argv[0]);
        return -1;
    }
    rlock_config_init(&cfg);
    cfg.pubsub = 1; /* under RESP3 a waiter waits on the command connection */
    if (rlock_posix_init_tcp(&d->pc, "127.0.0.1", port, 1000) != 0 ||
        rlock_node_init(&d->node, rlock_posix_transport(&d->pc)) != RLOCK_OK ||
        rlock_client_init(&d->cl, &d->node, 1, &cfg) != RLOCK_OK) {
        fprintf(stderr, "bad port %s\n", argc > 1 ? argv[1] : "");
        return -1;
    }
    d->t0 = demo_now_ms();
    for (i = 0; i < DEMO_LOCKS; i++) {
        d->key[i] = argc > 2 ? argv[2 + i] : def[i];
        if (rlock_lock_init(&d->lk[i], &d->cl, d->key[i], strlen(d->key[i]), RLOCK_KIND_SIMPLE) != RLOCK_OK) {
            fprintf(stderr, "bad key '%s'\n", d->key[i]);
            d->st[i] = RLOCK_E_BADARG;
            continue;
        }
        /* Sends nothing yet: the loop's first rlock_client_step connects. */
        d->st[i] = rlock_acquire_begin(&d->lk[i], DEMO_TTL_MS, DEMO_WAIT_MS);
    }
    return 0;
}

static void demo_conn(demo *d, int fd, unsigned long gen) {
    if (gen == d->gen) return;
    printf("connection %lu: watching fd %d\n", gen, fd);
    fflush(stdout);
    d->gen = gen;
}

static int demo_progress(demo *d) {
    int i, busy = 0;
    for (i = 0; i < DEMO_LOCKS; i++) {
        if (d->st[i] != RLOCK_WOULD_BLOCK) continue;
        /* after rlock_client_step: the result, without stepping again */
        if ((d->st[i] = rlock_result(&d->lk[i])) == RLOCK_WOULD_BLOCK) { busy = 1; continue; }
        if (d->st[i] == RLOCK_OK) {
            if (d->releasing) d->released++;
            else d->acquired++;
            printf("%s %s after %llu ms\n", d->releasing ? "released" : "acquired", d->key[i],
                   demo_now_ms() - d->t0);
        } else {
            printf("%s %s failed: %s (%s)\n", d->releasing ? "release of" : "acquire of", d->key[i],
                   rlock_status_str(d->st[i]), rlock_node_error(&d->node));
        }
        fflush(stdout);
    }
    if (busy || d->releasing) return !busy;
    /* Every acquire has finished: release what is held, all at once. */
    d->releasing = 1;
    for (i = 0; i < DEMO_LOCKS; i++)
        if (rlock_lock_state(&d->lk[i]) == RLOCK_STATE_HELD) {
            d->st[i] = rlock_release_begin(&d->lk[i]);
            busy |= d->st[i] == RLOCK_WOULD_BLOCK;
        }
    return busy ? 0 : demo_progress(d);
}

static int demo_close(demo *d) {
    int i;
    for (i = 0; i < DEMO_LOCKS; i++) rlock_lock_destroy(&d->lk[i]);
    rlock_client_close(&d->cl); /* closes the connection */
    rlock_posix_close(&d->pc);
    printf("%d of %d acquired, %d released\n", d->acquired, DEMO_LOCKS, d->released);
    return d->acquired == DEMO_LOCKS && d->released == DEMO_LOCKS ? 0 : 1;
}

#endif
