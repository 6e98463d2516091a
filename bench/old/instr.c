/* bench/old/instr.c - instructions per uncontended acquire+release cycle,
 * today's rlock.h and the pre-engine library (bench/old/old.c) in one
 * program, for callgrind: bench/old/instr.sh runs it with
 * --toggle-collect=instr_now or instr_old, so only the measured cycles
 * count. Unlike CPU time this does not move with the machine's load.
 *   build/instr_old now|old NODES CYCLES PORT [PORT ...]   (exit 0: all OK) */
#define RLOCK_IMPLEMENTATION
#include "../../adapters/rlock_posix.h" /* first: sets the POSIX feature macros */
#include "old.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PORTS 5

static rlock_posix_conn g_pc[MAX_PORTS];
static rlock_node g_nodes[MAX_PORTS];
static rlock_client g_cl;
static rlock_lock g_lk;

int instr_now(int cycles);
__attribute__((noinline)) int instr_now(int cycles) {
    int i, bad = 0;
    for (i = 0; i < cycles; i++)
        bad |= rlock_acquire(&g_lk, 30000, 0) != RLOCK_OK || rlock_release(&g_lk) != RLOCK_OK;
    return bad;
}

int instr_old(int cycles);
__attribute__((noinline)) int instr_old(int cycles) {
    static int idx = 0;
    int i, bad = 0;
    for (i = 0; i < cycles; i++) bad |= old_acq(&idx) != 0 || old_rel(&idx) != 0;
    return bad;
}

int main(int argc, char **argv) {
    int i, n, cycles, ports[MAX_PORTS], rc;
    if (argc < 5 || (strcmp(argv[1], "now") != 0 && strcmp(argv[1], "old") != 0)) {
        fprintf(stderr, "usage: instr_old now|old NODES CYCLES PORT [PORT ...]\n");
        return 2;
    }
    n = atoi(argv[2]);
    cycles = atoi(argv[3]);
    if (n < 1 || n > MAX_PORTS || argc < 4 + n || cycles < 1) { fprintf(stderr, "instr_old: bad NODES/CYCLES/ports\n"); return 2; }
    for (i = 0; i < n; i++) ports[i] = atoi(argv[4 + i]);
    if (strcmp(argv[1], "old") == 0) {
        if (old_missing()) { printf("skipped: %s\n", old_missing()); return 3; }
        if (old_setup(0, n, ports, "bench:instr:old") != 0) { fprintf(stderr, "instr_old: old setup failed\n"); return 1; }
        int idx = 0;
        for (i = 0, rc = 0; i < 10; i++) rc |= old_acq(&idx) != 0 || old_rel(&idx) != 0; /* warm-up, not counted */
        rc = rc || instr_old(cycles);
        old_teardown(0);
        return rc ? 1 : 0;
    }
    for (i = 0; i < n; i++)
        if (rlock_posix_init_tcp(&g_pc[i], "127.0.0.1", ports[i], 1000) != 0 ||
            rlock_node_init(&g_nodes[i], rlock_posix_transport(&g_pc[i])) != RLOCK_OK) return 1;
    if (rlock_client_init(&g_cl, g_nodes, (size_t)n, NULL) != RLOCK_OK || rlock_client_connect(&g_cl, 2000) != RLOCK_OK ||
        rlock_lock_init(&g_lk, &g_cl, "bench:instr:now", 15, RLOCK_KIND_SIMPLE) != RLOCK_OK) return 1;
    for (i = 0, rc = 0; i < 10; i++) /* warm-up, not counted */
        rc |= rlock_acquire(&g_lk, 30000, 0) != RLOCK_OK || rlock_release(&g_lk) != RLOCK_OK;
    rc = rc || instr_now(cycles);
    rlock_lock_destroy(&g_lk);
    rlock_client_close(&g_cl);
    for (i = 0; i < n; i++) rlock_posix_close(&g_pc[i]);
    return rc ? 1 : 0;
}
