/* baremetal.h - force-included (-include) into a test suite built for a
 * bare-metal Cortex-M (tests/cross/run.sh): no POSIX. The suites set their
 * own clock/sleep/random hooks in rlock_config; the compile-time defaults
 * only have to exist, and stop the run (startup.c) if one is ever reached. */
#ifndef RLOCK_TEST_BAREMETAL_H
#define RLOCK_TEST_BAREMETAL_H
#define RLOCK_NO_POSIX
#include <stdint.h>
#include <stddef.h>
uint64_t rlock_cross_no_clock(void);
void rlock_cross_no_sleep(uint32_t ms);
int rlock_cross_no_random(unsigned char *buf, size_t n);
#define RLOCK_NOW_MS() rlock_cross_no_clock()
#define RLOCK_SLEEP_MS(ms) rlock_cross_no_sleep(ms)
#define RLOCK_RANDOM_BYTES(buf, n) rlock_cross_no_random((buf), (n))
#endif
