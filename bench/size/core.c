/* size/core.c - rlock's implementation alone in one object, as a firmware
 * builds it, for `make size` (bench/size.sh): no POSIX, the three platform
 * hooks as calls into board code (stubs.c), assertions off. The feature
 * macros come from the command line (-DRLOCK_SMALLEST, ...); the link map
 * counts this object's kept sections only. */
#define RLOCK_NO_POSIX
#include <stddef.h>
#include <stdint.h>
extern uint64_t board_now_ms(void);
extern void board_sleep_ms(uint32_t ms);
extern int board_random(unsigned char *buf, size_t n);
#define RLOCK_NOW_MS() board_now_ms()
#define RLOCK_SLEEP_MS(ms) board_sleep_ms(ms)
#define RLOCK_RANDOM_BYTES(buf, n) board_random((buf), (n))
#define RLOCK_ASSERT(x) ((void)0)
#define RLOCK_IMPLEMENTATION
#include "rlock.h"
