# rlock - `make` builds everything into build/, `make test` runs every test,
# `make demo` shows processes contending for one lock. See README.md.
CC      ?= cc
CXX     ?= c++
BUILD   := build
STRICT  := -std=c99 -Wall -Wextra -Wpedantic -Werror
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
INC     := -I. -Itests
LIBS    := -lhiredis -lpthread
HEADERS := rlock.h $(wildcard adapters/*.h) $(wildcard tests/*.h)

SUITES  := $(patsubst tests/test_%.c,%,$(filter-out tests/test_compile.c,$(wildcard tests/test_*.c)))
ASAN_BINS := $(SUITES:%=$(BUILD)/test_%)
VG_BINS   := $(SUITES:%=$(BUILD)/vg/test_%)
EXAMPLES  := $(BUILD)/demo $(BUILD)/basic

# Header configurations that must keep compiling (C and C++, gcc and clang).
COMPILE_CONFIGS := default RLOCK_STATIC RLOCK_NO_POSIX RLOCK_NO_STATUS_STRINGS RLOCK_NO_THREAD_ID RLOCK_WATCHDOG

.PHONY: all test deps compile-check unit demo bench size clean
all: deps $(ASAN_BINS) $(VG_BINS) $(EXAMPLES) compile-check

deps:
	@./tests/ensure-deps.sh

$(BUILD)/test_%: tests/test_%.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -g -O1 $(SAN) $(INC) $< $(LIBS) -o $@

$(BUILD)/vg/test_%: tests/test_%.c $(HEADERS) | $(BUILD)
	@mkdir -p $(BUILD)/vg
	$(CC) $(STRICT) -g -O1 $(INC) $< $(LIBS) -o $@

$(BUILD)/%: examples/%.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 $(INC) $< $(LIBS) -o $@

$(BUILD):
	@mkdir -p $(BUILD)

# The header compiles warning-free as C99 and C++ with both compilers, in
# every configuration, and each build passes its small self-check.
compile-check: | $(BUILD)
	@set -e; for cfg in $(COMPILE_CONFIGS); do \
	  d=; [ $$cfg = default ] || d=-D$$cfg; \
	  for cc in gcc clang; do command -v $$cc >/dev/null || continue; \
	    $$cc $(STRICT) $$d -I. tests/test_compile.c -o $(BUILD)/compile_$${cc}_$$cfg || exit 1; \
	    ./$(BUILD)/compile_$${cc}_$$cfg >/dev/null || exit 1; done; \
	  for cxx in g++ clang++; do command -v $$cxx >/dev/null || continue; \
	    $$cxx -x c++ -Wall -Wextra -Wpedantic -Werror $$d -I. tests/test_compile.c -o $(BUILD)/compilexx_$${cxx}_$$cfg || exit 1; \
	    ./$(BUILD)/compilexx_$${cxx}_$$cfg >/dev/null || exit 1; done; \
	done; \
	printf '#include "adapters/rlock_posix.h"\n#include "adapters/rlock_hiredis.h"\n#define RLOCK_IMPLEMENTATION\n#include "rlock.h"\nint main(void){return 0;}\n' > $(BUILD)/adapters_cc.c; \
	gcc $(STRICT) -I. $(BUILD)/adapters_cc.c -lhiredis -o $(BUILD)/adapters_c || exit 1; \
	g++ -x c++ -Wall -Wextra -Werror -I. $(BUILD)/adapters_cc.c -lhiredis -o $(BUILD)/adapters_cxx || exit 1; \
	echo "compile-check: rlock.h + adapters clean as C99 and C++ (gcc, clang) in: $(COMPILE_CONFIGS)"

# Everything under sanitizers, then everything again under valgrind.
test: all
	@./tests/run-suites.sh $(ASAN_BINS)
	@RLOCK_TEST_QUICK=1 ./tests/run-suites.sh --valgrind $(VG_BINS)
	@./$(BUILD)/demo > $(BUILD)/demo.log 2>&1 || { cat $(BUILD)/demo.log; exit 1; }
	@echo "demo: $$(tail -n 1 $(BUILD)/demo.log)"

unit: $(BUILD)/test_unit
	./$(BUILD)/test_unit

demo: deps $(BUILD)/demo
	./$(BUILD)/demo

# Speed next to raw hiredis on 5 throwaway servers, the peers (node-redlock,
# redis-semaphore, redis-py; bench/peers/setup.sh installs them, a missing one
# is a "skipped" row) and the client's footprint; table + build/bench.csv.
bench: deps $(BUILD)/bench $(BUILD)/footprint
	@./bench/peers/setup.sh
	./$(BUILD)/bench

$(BUILD)/bench: bench/bench.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 $(INC) $< $(LIBS) -o $@

# -g: callgrind names the functions it splits the instruction count by.
$(BUILD)/footprint: bench/footprint.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 -g $(INC) $< -lpthread -o $@

# .text/.rodata of the core at -Os: x86-64, Cortex-M4, freestanding RISC-V.
size:
	@./bench/size.sh

clean:
	rm -rf $(BUILD)
