/* test_compact.c - the unit suite (tests/test_unit.c, scripted transport)
 * against the compact engine (rlock.h section 6.8c): built with
 * RLOCK_SMALLEST, so that `make test` runs it under ASan+UBSan and valgrind
 * and tests/coverage.sh counts the compact engine's branches (compile-check
 * runs the same build without valgrind). tests/test_smallest.c runs the
 * engine against a real redis-server. */
#define RLOCK_SMALLEST
#define UNIT_SUITE "compact"
#include "test_unit.c"
