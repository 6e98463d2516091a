# rlock - `make` builds the rlock command (build/rlock) and the examples into
# build/ (libc only; libuv_loop and libevent_loop also need libuv / libevent
# and are left out without them); `make test` builds and runs every test;
# `make install` installs the header, adapters, command, man page, pkg-config
# and CMake files; `make demo` shows the rlock command on throwaway redis-servers.
# See README.md.
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2
BUILD   := build
STRICT  := -std=c99 -Wall -Wextra -Wpedantic -Werror
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
INC     := -I. -Itests
LIBS    := -lhiredis -lpthread
SUITE_SRC :=
HEADERS := rlock.h $(wildcard adapters/*.h) $(wildcard tests/*.h)

SUITES  := $(patsubst tests/test_%.c,%,$(filter-out tests/test_compile.c,$(wildcard tests/test_*.c)))
ASAN_BINS := $(SUITES:%=$(BUILD)/test_%)
VG_BINS   := $(SUITES:%=$(BUILD)/vg/test_%)
# Every examples/NAME.c is built as build/NAME with libc only; one that
# needs a library says so here. make test also builds each one under
# ASan+UBSan (build/asan/NAME) and for valgrind (build/vg/NAME), and
# tests/test_examples.c runs them against a throwaway redis-server.
# Plain `make` leaves out an example whose library's header is not installed
# (make test installs them all through deps and builds every one).
have_header = $(shell printf '\043include <$(1)>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo y)
EXAMPLES_ALL  := $(patsubst examples/%.c,$(BUILD)/%,$(wildcard examples/*.c))
EXAMPLES  := $(filter-out $(if $(call have_header,uv.h),,$(BUILD)/libuv_loop) \
                          $(if $(call have_header,event2/event.h),,$(BUILD)/libevent_loop),$(EXAMPLES_ALL))
EXAMPLES_ASAN := $(EXAMPLES_ALL:$(BUILD)/%=$(BUILD)/asan/%)
EXAMPLES_VG   := $(EXAMPLES_ALL:$(BUILD)/%=$(BUILD)/vg/%)
EXAMPLE_LIBS :=
$(BUILD)/libuv_loop $(BUILD)/asan/libuv_loop $(BUILD)/vg/libuv_loop: EXAMPLE_LIBS = -luv
$(BUILD)/libevent_loop $(BUILD)/asan/libevent_loop $(BUILD)/vg/libevent_loop: EXAMPLE_LIBS = -levent
# The rlock command; its sanitizer build (test_cli runs it under ASan); the
# throwaway-server helper of examples/demo.sh.
CLI_BINS  := $(BUILD)/rlock $(BUILD)/rlock-asan $(BUILD)/rlock-testserver

# Header configurations that must keep compiling (C and C++, gcc and clang).
# The feature macros (rlock.h section 1, README "On a microcontroller"): each
# combination the README documents also runs the unit suite (the tests that
# apply to it: tests/test_unit.c skips what is compiled out).
# A configuration of several macros joins them with commas. Besides each
# macro alone and RLOCK_SMALLEST: the compact engine with fencing, the EVAL
# fallback, status names and error texts kept (README "The compact engine",
# examples/firmware's configuration); waiting and fencing out with fair locks
# kept, and with them out too (requests without the wait queue, Redlock);
# RLOCK_MAX_NODES=32, the most a node mask holds (every bit in use, UBSan).
FW_LIKE := RLOCK_MAX_NODES=1,RLOCK_NO_REENTRANT,RLOCK_NO_WAITING,RLOCK_NO_FAIR,RLOCK_NO_REPLICAS,RLOCK_NO_FCALL,RLOCK_NO_CLUSTER,RLOCK_NO_PRIMITIVES
FEATURE_CONFIGS := RLOCK_NO_REENTRANT RLOCK_NO_WAITING RLOCK_NO_FENCING RLOCK_NO_EVAL_FALLBACK RLOCK_NO_FAIR \
                   RLOCK_NO_CLUSTER RLOCK_NO_REPLICAS RLOCK_NO_FCALL RLOCK_NO_PRIMITIVES RLOCK_NO_STATUS_STRINGS RLOCK_NO_ERROR_TEXTS RLOCK_MAX_NODES=1 RLOCK_MAX_NODES=32 RLOCK_SMALLEST \
                   $(FW_LIKE) RLOCK_NO_WAITING,RLOCK_NO_FENCING RLOCK_NO_WAITING,RLOCK_NO_FENCING,RLOCK_NO_FAIR
COMPILE_CONFIGS := default RLOCK_STATIC RLOCK_NO_POSIX RLOCK_TEST_RUNTIME_HOOKS RLOCK_NO_THREAD_ID RLOCK_WATCHDOG \
                   $(FEATURE_CONFIGS)

.PHONY: all test test-build deps compile-check compile-check-matrix compile-check-units unit demo bench size ram clean chaos firmware
# What a user wants: no test binaries, no hiredis, no valgrind.
all: $(BUILD)/rlock $(EXAMPLES)

# What `make test` runs: the suites (sanitizer and valgrind builds), the
# rlock command's sanitizer build, the throwaway-server helper, the examples
# and the compile matrix. Needs redis-server and hiredis (deps). The fault
# campaign's binary is built too, so that it keeps compiling.
test-build: deps $(CLI_BINS) $(ASAN_BINS) $(VG_BINS) $(EXAMPLES_ALL) $(BUILD)/chaos compile-check

deps:
	@./tests/ensure-deps.sh

# The TLS adapter's suite links OpenSSL (libssl-dev), and a second source
# file: its event loop's connections made in another translation unit.
$(BUILD)/test_tls $(BUILD)/vg/test_tls: LIBS += -lssl -lcrypto
$(BUILD)/test_tls $(BUILD)/vg/test_tls: SUITE_SRC = tests/loop_conns.c
$(BUILD)/test_tls $(BUILD)/vg/test_tls: tests/loop_conns.c

$(BUILD)/test_%: tests/test_%.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -g -O1 $(SAN) $(INC) $< $(SUITE_SRC) $(LIBS) -o $@

$(BUILD)/vg/test_%: tests/test_%.c $(HEADERS) | $(BUILD)
	@mkdir -p $(BUILD)/vg
	$(CC) $(STRICT) -g -O1 $(INC) $< $(SUITE_SRC) $(LIBS) -o $@

$(BUILD)/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	$(CC) $(STRICT) $(CFLAGS) -I. $< $(LDFLAGS) $(EXAMPLE_LIBS) -o $@

$(BUILD)/asan/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	@mkdir -p $(BUILD)/asan
	$(CC) $(STRICT) -g -O1 $(SAN) -I. $< $(EXAMPLE_LIBS) -o $@

$(BUILD)/vg/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	@mkdir -p $(BUILD)/vg
	$(CC) $(STRICT) -g -O1 -I. $< $(EXAMPLE_LIBS) -o $@

# tests/test_compact.c is tests/test_unit.c built under RLOCK_SMALLEST.
# tests/test_smallest.c loads the scripts with the rlock command (its sanitizer
# build, or build/rlock under valgrind): `make build/test_smallest` alone builds it too.
$(BUILD)/test_smallest: | $(BUILD)/rlock-asan
$(BUILD)/vg/test_smallest: | $(BUILD)/rlock
$(BUILD)/test_compact $(BUILD)/vg/test_compact: tests/test_unit.c

# tests/test_examples.c runs the sanitizer builds of the examples from its
# sanitizer build, and the plain builds under valgrind from its valgrind build.
$(BUILD)/test_examples: $(EXAMPLES_ASAN)
$(BUILD)/vg/test_examples: $(EXAMPLES_VG)

# cli/rlock.c needs neither hiredis nor libpthread. It speaks TLS (rediss://,
# --tls-*) when OpenSSL's headers are there (Debian: libssl-dev), and then
# links libssl; without them, or with `make RLOCK_TLS=0`, it builds without.
RLOCK_TLS ?= $(shell printf '\043include <openssl/ssl.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(RLOCK_TLS),1)
CLI_TLS := -DRLOCK_CLI_TLS
CLI_TLS_LIBS := -lssl -lcrypto
endif
$(BUILD)/rlock: cli/rlock.c cli/rlock_check.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) $(CFLAGS) $(CLI_TLS) -I. $< $(LDFLAGS) $(CLI_TLS_LIBS) -o $@

$(BUILD)/rlock-asan: cli/rlock.c cli/rlock_check.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -g -O1 $(SAN) $(CLI_TLS) -I. $< $(CLI_TLS_LIBS) -o $@

$(BUILD)/rlock-testserver: tests/rlock-testserver.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 $(INC) $< $(LIBS) -o $@

$(BUILD):
	@mkdir -p $(BUILD)

# The header compiles warning-free as C99 and C++ with both compilers, in
# every configuration, and each build passes its small self-check.
# Two halves, side by side under make -j (make test builds so): the
# header matrix with the adapters, and the feature configurations' unit runs
# (and one with -fshort-enums, arm-none-eabi's default: a value kept in an
# enum past its members - flag bits above a status - is cut off there; make
# cross finds it too, this finds it on the host in seconds).
compile-check: compile-check-matrix compile-check-units
compile-check-matrix: | $(BUILD)
	@set -e; for cfg in $(COMPILE_CONFIGS); do \
	  d=; [ $$cfg = default ] || d=-D$$(echo $$cfg | sed 's/,/ -D/g'); \
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
	for cfg in $(FEATURE_CONFIGS); do \
	  gcc $(STRICT) -fsyntax-only -D$$(echo $$cfg | sed 's/,/ -D/g') -I. $(BUILD)/adapters_cc.c || exit 1; done; \
	if [ "$(RLOCK_TLS)" = 1 ]; then \
	  printf '#define RLOCK_IMPLEMENTATION\n#include "adapters/rlock_tls.h"\nint main(void){return 0;}\n' > $(BUILD)/adapters_tls.c; \
	  gcc $(STRICT) -I. $(BUILD)/adapters_tls.c -lssl -lcrypto -o $(BUILD)/adapters_tls_c || exit 1; \
	  clang $(STRICT) -I. $(BUILD)/adapters_tls.c -lssl -lcrypto -o $(BUILD)/adapters_tls_clang || exit 1; \
	  g++ -x c++ -Wall -Wextra -Werror -I. $(BUILD)/adapters_tls.c -lssl -lcrypto -o $(BUILD)/adapters_tls_cxx || exit 1; \
	fi; \
	echo "compile-check: rlock.h + adapters clean as C99 and C++ (gcc, clang) in: $(COMPILE_CONFIGS)"
compile-check-units: | $(BUILD)
	@set -e; for cfg in $(FEATURE_CONFIGS); do d=-D$$(echo $$cfg | sed 's/,/ -D/g'); \
	  gcc $(STRICT) -O1 $(SAN) $$d -I. -Itests tests/test_unit.c -lpthread -o $(BUILD)/unit_$$cfg || exit 1; \
	  ./$(BUILD)/unit_$$cfg > $(BUILD)/unit_$$cfg.log 2>&1 || { tail -20 $(BUILD)/unit_$$cfg.log; exit 1; }; \
	  echo "compile-check: $$d $$(tail -n 1 $(BUILD)/unit_$$cfg.log)"; done; \
	clang $(STRICT) -O1 -DRLOCK_SMALLEST -I. -Itests tests/test_unit.c -lpthread -o $(BUILD)/unit_clang_smallest || exit 1; \
	./$(BUILD)/unit_clang_smallest > /dev/null || exit 1; \
	g++ -x c++ -Wall -Wextra -Wpedantic -Werror -O1 -DRLOCK_SMALLEST -I. -Itests tests/test_unit.c -lpthread -o $(BUILD)/unit_cxx_smallest || exit 1; \
	./$(BUILD)/unit_cxx_smallest > /dev/null || exit 1; \
	gcc $(STRICT) -O1 -fshort-enums -I. -Itests tests/test_unit.c -lpthread -o $(BUILD)/unit_short_enums || exit 1; \
	./$(BUILD)/unit_short_enums > $(BUILD)/unit_short_enums.log 2>&1 || { tail -20 $(BUILD)/unit_short_enums.log; exit 1; }; \
	echo "compile-check: -fshort-enums $$(tail -n 1 $(BUILD)/unit_short_enums.log)"

# Everything under sanitizers, then everything again under valgrind, then
# the demo, the install check, the cross-target runs and the firmware
# example. test_cli runs
# build/rlock(-asan): built before any suite runs. The build runs on every
# core (TEST_JOBS; the dependencies installed first). The suites run
# SUITE_JOBS at a time: they mostly wait on their servers and timers (a few
# seconds of CPU each, under valgrind too), so four at once take about the
# longest one's time (test_deploy's ~2 min) instead of their sum (~6 min).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SUITE_JOBS ?= 4
test: deps
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) test-build
	@./tests/run-suites.sh -j $(SUITE_JOBS) $(ASAN_BINS)
	@RLOCK_TEST_QUICK=1 ./tests/run-suites.sh --valgrind -j $(SUITE_JOBS) $(VG_BINS)
	@./examples/demo.sh > $(BUILD)/demo.log 2>&1 || { cat $(BUILD)/demo.log; exit 1; }
	@echo "demo: $$(tail -n 1 $(BUILD)/demo.log)"
	@$(MAKE) --no-print-directory install-check
	@$(MAKE) --no-print-directory cross
	@$(MAKE) --no-print-directory firmware

unit: $(BUILD)/test_unit
	./$(BUILD)/test_unit

demo: deps $(BUILD)/rlock $(BUILD)/rlock-testserver
	@./examples/demo.sh

# The fault campaign (tests/chaos/chaos.c): first its self-test (every
# checker shown to fire on broken clients), then CHAOS_SECONDS of seeded
# faults over one node, Redlock-3 and Redlock-5 (about 1.3x that in wall
# time, plus ~25 s of self-test). CHAOS_SEED=N replays a run's schedule.
CHAOS_SECONDS ?= 105
chaos: deps $(BUILD)/chaos $(BUILD)/rlock
	@./$(BUILD)/chaos --selftest
	@CHAOS_SECONDS=$(CHAOS_SECONDS) ./$(BUILD)/chaos

# Under ASan+UBSan: the library clients it forks are checked under faults too.
$(BUILD)/chaos: tests/chaos/chaos.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -g -O1 $(SAN) $(INC) $< $(LIBS) -o $@

# Speed next to raw hiredis on 5 throwaway servers, the peers (node-redlock,
# redis-semaphore, redis-py; bench/peers/setup.sh installs them, a missing one
# is a "skipped" row), the client's footprint and the engine against the
# pre-engine library (bench/old/); table + build/bench.csv.
bench: deps $(BUILD)/bench $(BUILD)/footprint $(BUILD)/instr_old
	@./bench/peers/setup.sh
	./$(BUILD)/bench

# bench/old/old.c: the pre-engine library (bc01738) beside today's, renamed
# by bench/old/gen.sh (from git; without that commit in the clone its rows
# are left out and the bench says why).
$(BUILD)/bench: bench/bench.c bench/old/old.c bench/old/old.h $(BUILD)/old/rlockv0_posix.h $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 $(INC) bench/bench.c bench/old/old.c -I$(BUILD)/old $(LIBS) -o $@

$(BUILD)/old/rlockv0_posix.h: bench/old/gen.sh | $(BUILD)
	./bench/old/gen.sh $(BUILD)/old

# Instructions per cycle, today's and bc01738's (bench/old/instr.sh, callgrind).
$(BUILD)/instr_old: bench/old/instr.c bench/old/old.c bench/old/old.h $(BUILD)/old/rlockv0_posix.h $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 -g -I. bench/old/instr.c bench/old/old.c -I$(BUILD)/old -o $@

# -g: callgrind names the functions it splits the instruction count by.
$(BUILD)/footprint: bench/footprint.c $(HEADERS) | $(BUILD)
	$(CC) $(STRICT) -O2 -g $(INC) $< -lpthread -o $@

# .text/.rodata of the core at -Os: x86-64, Cortex-M4, freestanding RISC-V.
size:
	@./bench/size.sh

# RAM per lock/node/client and the worst-case stack of every public call, per
# configuration (smallest, firmware, default) and target (bench/ram.sh; fails
# when RLOCK_SMALLEST on Cortex-M4 exceeds 2 KiB).
ram:
	@./bench/ram.sh

clean:
	rm -rf $(BUILD)

# ---- Install ----------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging-root]: the header and the
# adapters in PREFIX/include/rlock/ (#include <rlock/rlock.h>), the command in
# bin/, rlock(1) in share/man/man1/, rlock.pc in share/pkgconfig/ (header-
# only: Cflags only) and the CMake package (find_package(rlock) ->
# rlock::rlock) in share/cmake/rlock/. PREFIX is written into rlock.pc;
# DESTDIR is not written anywhere. make uninstall, with the same PREFIX and
# DESTDIR, removes exactly those files and the directories that are rlock's.
.PHONY: install uninstall install-check cross
PREFIX   ?= /usr/local
DESTDIR  ?=
VERSION  := $(shell sed -n 's/^\#define RLOCK_VERSION_STRING "\(.*\)"/\1/p' rlock.h)
ADAPTERS := $(wildcard adapters/*.h)
I_INC    := $(DESTDIR)$(PREFIX)/include/rlock
I_BIN    := $(DESTDIR)$(PREFIX)/bin
I_MAN    := $(DESTDIR)$(PREFIX)/share/man/man1
I_PC     := $(DESTDIR)$(PREFIX)/share/pkgconfig
I_CMAKE  := $(DESTDIR)$(PREFIX)/share/cmake/rlock
I_FILES  := $(I_INC)/rlock.h $(ADAPTERS:adapters/%=$(I_INC)/adapters/%) $(I_BIN)/rlock $(I_MAN)/rlock.1 \
            $(I_PC)/rlock.pc $(I_CMAKE)/rlockConfig.cmake $(I_CMAKE)/rlockConfigVersion.cmake

install: $(BUILD)/rlock
	install -d "$(I_INC)/adapters" "$(I_BIN)" "$(I_MAN)" "$(I_PC)" "$(I_CMAKE)"
	install -m 644 rlock.h "$(I_INC)/rlock.h"
	install -m 644 $(ADAPTERS) "$(I_INC)/adapters/"
	install -m 755 $(BUILD)/rlock "$(I_BIN)/rlock"
	install -m 644 docs/rlock.1 "$(I_MAN)/rlock.1"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' packaging/rlock.pc.in > "$(I_PC)/rlock.pc"
	install -m 644 packaging/rlockConfig.cmake "$(I_CMAKE)/rlockConfig.cmake"
	sed -e 's|@VERSION@|$(VERSION)|g' packaging/rlockConfigVersion.cmake.in > "$(I_CMAKE)/rlockConfigVersion.cmake"
	chmod 644 "$(I_PC)/rlock.pc" "$(I_CMAKE)/rlockConfigVersion.cmake"

uninstall:
	rm -f $(foreach f,$(I_FILES),"$(f)")
	@for d in "$(I_INC)/adapters" "$(I_INC)" "$(I_CMAKE)"; do \
	  [ ! -d "$$d" ] || rmdir "$$d" || echo "uninstall: $$d: not empty, left in place"; done

# tests/install-check.sh: install into a temporary DESTDIR, build a program
# against it with pkg-config, CMake find_package and add_subdirectory, run
# each on a throwaway redis-server, uninstall, check nothing is left.
install-check: deps $(BUILD)/rlock $(BUILD)/rlock-testserver
	@./tests/ensure-deps.sh install
	@./tests/install-check.sh

# tests/cross/run.sh: the unit suite on i686, big-endian PowerPC (qemu-user),
# bare-metal Cortex-M0 and M4 (qemu-system-arm); the real-Redis suites on
# i686; rlock.h at -Wconversion -Wcast-align=strict on each.
cross: deps
	@./tests/ensure-deps.sh cross
	@./tests/cross/run.sh

# examples/firmware: rlock on a bare-metal Cortex-M4 (QEMU mps2-an386) whose
# UART is wired to a throwaway redis-server, against host `rlock` commands
# (examples/firmware/run.sh). Start-up code and linker script are the
# bare-metal test images' (tests/cross). Built like those: no unaligned
# accesses of the compiler's own (startup.c makes them trap), linked with
# newlib's alignment-safe v6-M libc.
FW_CC    := arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mno-unaligned-access
FW_FLAGS := $(STRICT) -Wconversion -Wcast-align=strict -Os -g -ffunction-sections -fdata-sections
firmware: deps $(BUILD)/rlock $(BUILD)/rlock-testserver
	@./tests/ensure-deps.sh firmware
	@$(MAKE) --no-print-directory $(BUILD)/firmware/firmware.elf
	@./examples/firmware/run.sh

$(BUILD)/firmware/firmware.elf: examples/firmware/main.c examples/firmware/board.h rlock.h tests/cross/startup.c \
                                tests/cross/baremetal.h tests/cross/cortex-m4.ld tests/cross/sections.ld
	@mkdir -p $(BUILD)/firmware
	$(FW_CC) $(FW_FLAGS) -I. -c examples/firmware/main.c -o $(BUILD)/firmware/main.o
	$(FW_CC) $(FW_FLAGS) -c tests/cross/startup.c -o $(BUILD)/firmware/startup.o
	arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb $(BUILD)/firmware/main.o $(BUILD)/firmware/startup.o -nostartfiles \
	  --specs=rdimon.specs -Ltests/cross -T cortex-m4.ld -Wl,--gc-sections -Wl,-Map=$(BUILD)/firmware/firmware.map -o $@
	arm-none-eabi-size $@

# ---- Hardening: fuzzing, coverage, static analysis ------------------------
.PHONY: fuzz fuzz-replay coverage lint
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZERS      := resp lock lock_compact locks
COVERAGE_MIN ?=

# tests/fuzz: each harness built for libFuzzer (clang; Debian: clang and
# libclang-rt-14-dev) and as a plain replay binary (any C99 compiler). The
# replay runs the seed corpora first, then the harnesses fuzz side by side for
# FUZZ_SECONDS each and report their executions (tests/fuzz/run.sh).
# lock_compact is fuzz_lock built with RLOCK_SMALLEST (the compact engine),
# seeded from corpus_lock; locks is several locks pipelined on the same
# connections (fuzz_locks.c, corpus_locks).
fuzz: fuzz-replay $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@./tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz-replay: $(FUZZERS:%=$(BUILD)/fuzz/replay_%)
	@for h in $(FUZZERS); do ./$(BUILD)/fuzz/replay_$$h tests/fuzz/corpus_$${h%_compact} || exit 1; done

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(HEADERS) tests/fuzz/replay.h tests/fuzz/fake.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(STRICT) -g -O1 -DRLOCK_LIBFUZZER -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -I. $< -o $@ || { echo "fuzz: needs clang with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)"; exit 1; }

$(BUILD)/fuzz/fuzz_lock_compact $(BUILD)/fuzz/replay_lock_compact: tests/fuzz/fuzz_lock.c

$(BUILD)/fuzz/replay_%: tests/fuzz/fuzz_%.c $(HEADERS) tests/fuzz/replay.h tests/fuzz/fake.h
	@mkdir -p $(BUILD)/fuzz
	$(CC) $(STRICT) -g -O1 $(SAN) -I. $< -o $@

# Line and branch coverage of rlock.h by every tests/test_*.c (gcc --coverage
# and gcov; a suite that does not build is skipped). COVERAGE_MIN=<branch %>
# fails the target when rlock.h's branch coverage is below it.
coverage: deps
	@./tests/coverage.sh $(COVERAGE_MIN)

# cppcheck, then clang-tidy (its checks and why: .clang-tidy), over rlock.h
# with its implementation and over the adapters, through tiny translation
# units. cppcheck tries every #ifdef configuration of rlock.h it finds; for
# the adapters it is told MSG_* (it reads no system headers). Findings are
# fixed in the source or suppressed inline with the reason.
LINT_CPPCHECK := cppcheck --enable=warning,performance,portability --error-exitcode=1 --inline-suppr \
                 --std=c99 --quiet --suppress=missingIncludeSystem -I.
lint:
	@mkdir -p $(BUILD)/lint
	@printf '#define RLOCK_IMPLEMENTATION\n#include "rlock.h"\n' > $(BUILD)/lint/rlock_impl.c
	@printf '#define RLOCK_IMPLEMENTATION\n#include "adapters/rlock_tls.h"\n#include "adapters/rlock_hiredis.h"\n' > $(BUILD)/lint/adapters_impl.c
	$(LINT_CPPCHECK) $(BUILD)/lint/rlock_impl.c
	$(LINT_CPPCHECK) -DMSG_DONTWAIT=64 -DMSG_NOSIGNAL=16384 $(BUILD)/lint/adapters_impl.c
	@set -e; for tu in "adapters_impl.c" "rlock_impl.c -DRLOCK_WATCHDOG" "rlock_impl.c -DRLOCK_STATIC" "rlock_impl.c -DRLOCK_SMALLEST"; do \
	  set -- $$tu; f=$$1; shift; echo "clang-tidy $(BUILD)/lint/$$f $$*"; \
	  clang-tidy --quiet $(BUILD)/lint/$$f -- -std=c99 -I. $$* > $(BUILD)/lint/tidy.log 2>&1 || { \
	    grep -v 'warnings generated' $(BUILD)/lint/tidy.log; exit 1; }; \
	  done
	@sh tests/no-fixed-ports.sh
	@echo "lint: cppcheck and clang-tidy clean on rlock.h and adapters/; no fixed port in tests/"
