/* fuzz_lock_compact.c - tests/fuzz/fuzz_lock.c (its invariants, its seed
 * corpus tests/fuzz/corpus_lock) against the compact engine (rlock.h
 * section 6.8c): built with RLOCK_SMALLEST, so one node and simple locks. */
#define RLOCK_SMALLEST
#include "fuzz_lock.c"
