/* demo.c - `make demo`: a handful of processes fight for one lock.
 *
 * Starts a throwaway redis-server on a free loopback port, forks WORKERS
 * processes, and has each run ROUNDS critical sections under one rlock:
 * read a shared counter file, pause, write it back + 1. Without the lock,
 * updates get lost; with it the final counter equals WORKERS * ROUNDS.
 * Each critical section also creates a marker directory: if mkdir() finds it
 * already there, two holders overlapped, and the demo says so. */
#define RLOCK_IMPLEMENTATION
#include "../rlock.h"
#include "../adapters/rlock_posix.h"
#include "../tests/harness.h"

#include <stdio.h>
#include <stdlib.h>

#define WORKERS 6
#define ROUNDS 25

static int worker(int port, const char *dir, int id) {
    char marker[512], counter[512];
    rlock_posix_conn pc;
    rlock_node node;
    rlock_client cl;
    rlock_lock lk;
    int i, overlaps = 0, failures = 0;
    snprintf(marker, sizeof marker, "%s/inside", dir);
    snprintf(counter, sizeof counter, "%s/counter", dir);
    if (rlock_posix_init_tcp(&pc, "127.0.0.1", port, 1000) != 0 ||
        rlock_node_init(&node, rlock_posix_transport(&pc)) != RLOCK_OK ||
        rlock_client_init(&cl, &node, 1, NULL) != RLOCK_OK ||
        rlock_lock_init(&lk, &cl, "demo:counter", 12, RLOCK_KIND_SIMPLE) != RLOCK_OK)
        return 100;
    for (i = 0; i < ROUNDS; i++) {
        rlock_status st = rlock_acquire(&lk, 5000, 20000);
        FILE *f;
        long value = 0;
        if (st != RLOCK_OK) {
            fprintf(stderr, "worker %d: acquire: %s (%s)\n", id, rlock_status_str(st), rlock_node_error(&node));
            failures++;
            continue;
        }
        if (mkdir(marker, 0700) != 0) overlaps++; /* someone else is inside */
        f = fopen(counter, "r");
        if (f) { if (fscanf(f, "%ld", &value) != 1) value = 0; fclose(f); }
        rh_sleep_ms(1); /* widen the window a lost update would need */
        f = fopen(counter, "w");
        if (f) { fprintf(f, "%ld\n", value + 1); fclose(f); }
        rmdir(marker);
        st = rlock_release(&lk);
        if (st != RLOCK_OK) { fprintf(stderr, "worker %d: release: %s\n", id, rlock_status_str(st)); failures++; }
    }
    rlock_client_close(&cl);
    rlock_posix_close(&pc);
    return overlaps * 2 + (failures ? 1 : 0) > 99 ? 99 : overlaps * 2 + (failures ? 1 : 0);
}

int main(void) {
    rh_server srv;
    char dir[] = "/tmp/rlock-demo-XXXXXX", path[512];
    pid_t kids[WORKERS];
    int i, overlaps = 0, failed = 0;
    long value = -1;
    unsigned long long t0, t1;
    FILE *f;

    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    if (rh_server_start(&srv, NULL) != 0) { fprintf(stderr, "demo: could not start redis-server\n"); return 1; }
    printf("rlock demo: redis-server pid %d on 127.0.0.1:%d (throwaway)\n", (int)srv.pid, srv.port);
    printf("%d processes x %d critical sections on lock \"demo:counter\", each a read-sleep-write of one counter file\n",
           WORKERS, ROUNDS);
    fflush(stdout);
    t0 = rh_now_ms();
    for (i = 0; i < WORKERS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) _exit(worker(srv.port, dir, i));
    }
    for (i = 0; i < WORKERS; i++) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) % 2) failed++;
        if (WIFEXITED(status)) overlaps += WEXITSTATUS(status) / 2;
    }
    t1 = rh_now_ms();
    snprintf(path, sizeof path, "%s/counter", dir);
    if ((f = fopen(path, "r")) != NULL) { if (fscanf(f, "%ld", &value) != 1) value = -1; fclose(f); }
    printf("finished in %llu ms\n", t1 - t0);
    printf("counter = %ld (expected %d): %s\n", value, WORKERS * ROUNDS,
           value == WORKERS * ROUNDS ? "no update was lost" : "UPDATES WERE LOST");
    printf("overlapping critical sections detected: %d%s\n", overlaps, overlaps ? "  <-- MUTUAL EXCLUSION BROKEN" : "");
    printf("workers with errors: %d\n", failed);
    unlink(path);
    rmdir(dir);
    rh_server_stop(&srv);
    if (overlaps == 0 && failed == 0 && value == WORKERS * ROUNDS) {
        printf("RESULT: no overlap - every critical section ran alone\n");
        return 0;
    }
    printf("RESULT: FAILED\n");
    return 1;
}
