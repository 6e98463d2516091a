/* bench/old/old.h - the pre-engine library (bc01738) as `make bench` drives
 * it beside today's rlock.h: bench/old/old.c, built over the renamed copy
 * bench/old/gen.sh writes. Plain types only, so that bench.c needs neither
 * library's names from the other. */
#ifndef BENCH_OLD_H
#define BENCH_OLD_H

#define OLD_REV "bc01738"
#define OLD_MAX 3 /* clients set up at once */

/* NULL when the old library is built in, else why not. */
const char *old_missing(void);
/* Client idx (0..OLD_MAX-1) over the first n of ports (POSIX adapter,
 * 127.0.0.1), connected, with one simple lock on key. 0 ok. */
int old_setup(int idx, int n, const int *ports, const char *key);
void old_teardown(int idx);
/* One blocking acquire (ttl_ms, try once) / release on client idx's lock;
 * ctx is the int* idx. 0 ok. */
int old_acq(void *ctx);
int old_rel(void *ctx);
const char *old_last_error(int idx);

typedef struct old_sizes {
    unsigned long node, client, lock, op_fields; /* op_fields: the lock's per-operation fields, summed */
} old_sizes;
void old_get_sizes(old_sizes *out);

#endif
