#!/bin/sh
# tests/cross/run.sh - `make cross`: rlock on targets other than the host.
#
#   i686        (i686-linux-gnu-gcc, or gcc -m32; runs natively)
#               warning gate; unit suite; fuzz corpus replays; every
#               real-Redis suite (tests/test_*.c but unit and compile, linked
#               with Debian's libhiredis-dev:i386; test_cli runs a 32-bit
#               build/cross/i686/rlock) against throwaway redis-servers
#   ppc         big-endian 32-bit PowerPC (powerpc-linux-gnu-gcc -static,
#               under qemu-ppc): warning gate; unit suite; fuzz corpus replays
#   cortex-m0   bare metal, QEMU microbit (nRF51): warning gate; unit suite
#   cortex-m4   bare metal, QEMU mps2-an386, unaligned accesses trapping
#               (CCR.UNALIGN_TRP; the code built -mno-unaligned-access and
#               linked with newlib's alignment-safe v6-M libc): warning gate;
#               unit suite
#
# The warning gate compiles rlock.h with its implementation (and, on i686,
# the adapters) at -std=c99 -Wall -Wextra -Wpedantic -Werror -Wconversion
# -Wcast-align=strict in each configuration of `make compile-check` that the
# target can build. The unit suite (tests/test_unit.c) is the scripted
# transport on a fake clock: the codec, every lock machine, bad arguments;
# bare metal it runs without the POSIX-only parts (RLOCK_NO_POSIX: no
# RLOCK_WATCHDOG thread, no CLOCK_MONOTONIC check), with tests/cross/
# startup.c, baremetal.h and a linker script of its own, output and exit
# status through semihosting. The 32-bit Linux builds use
# -D_FILE_OFFSET_BITS=64: without it readdir() fails with EOVERFLOW on a
# file system with 64-bit inode numbers, and suites that list directories
# (fd counts, corpora, temp dirs) would count wrong.
#
# One line per target: "cross: TARGET  what ran ... ok (N s)"; i686 runs in the
# background beside the others and reports last. A target whose
# tools are missing fails (tests/ensure-deps.sh cross installs them; `make
# cross` calls it). Logs: build/cross/TARGET.log. RLOCK_CROSS_TARGETS limits
# the run ("i686 ppc cortex-m0 cortex-m4" by default). Exit 0 when all passed.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}/cross
STRICT="-std=c99 -Wall -Wextra -Wpedantic -Werror"
GATE="-Wconversion -Wcast-align=strict"
# RLOCK_MAX_NODES=1 is examples/firmware's configuration (gcc 12 once warned
# -Warray-bounds there at -O2/-Os).
CONFIGS="default RLOCK_STATIC RLOCK_NO_STATUS_STRINGS RLOCK_NO_THREAD_ID RLOCK_WATCHDOG RLOCK_MAX_NODES=1"
TARGETS=${RLOCK_CROSS_TARGETS:-i686 ppc cortex-m0 cortex-m4}
QEMU_TIMEOUT=300
mkdir -p "$B"
rc=0
log=

now() { date +%s; }
say() { echo "$*" >>"$log"; }
# run CMD...: log the command and its output; non-zero on failure
run() { say "+ $*"; "$@" >>"$log" 2>&1; }

# A suite's own summary line ("unit: N passed, 0 failed"), or empty.
suite_line() { grep -E '^[A-Za-z_ -]+: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1; }

# run_suite NAME CMD...: run a test binary, keep its summary for the report
run_suite() {
    name=$1; shift
    out=$B/$tname-$name.out
    say "+ $*"
    "$@" >"$out" 2>&1; st=$?
    cat "$out" >>"$log"
    line=$(suite_line "$out")
    if [ $st -ne 0 ] || [ -z "$line" ] || ! echo "$line" | grep -q ' 0 failed$'; then
        say "== $name exited $st${line:+ after: $line}"
        return 1
    fi
    passed=$((passed + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
    ran="$ran $name"
}

# gate CC [FLAGS...]: rlock.h (+ implementation) warning-free at $GATE in
# every configuration the target builds
gate() {
    cc=$1; shift
    printf '#define RLOCK_IMPLEMENTATION\n#include "rlock.h"\nint rlock_cross_gate(void);\nint rlock_cross_gate(void) { return 0; }\n' >"$B/$tname/gate.c"
    for cfg in $CONFIGS; do
        d=; [ "$cfg" = default ] || d=-D$cfg
        case "$* $cfg" in *baremetal.h*RLOCK_WATCHDOG) continue ;; esac # no threads on bare metal
        # shellcheck disable=SC2086
        run $cc $STRICT $GATE "$@" $d -I. -c "$B/$tname/gate.c" -o "$B/gate-$tname.o" || return 1
    done
    ran="$ran gate"
}

# gate_adapters CC [FLAGS...]: the adapters too, where POSIX and hiredis exist
gate_adapters() {
    cc=$1; shift
    printf '#include "adapters/rlock_posix.h"\n#include "adapters/rlock_hiredis.h"\n#define RLOCK_IMPLEMENTATION\n#include "rlock.h"\nint rlock_cross_gate(void);\nint rlock_cross_gate(void) { return 0; }\n' >"$B/$tname/gate-adapters.c"
    # shellcheck disable=SC2086
    run $cc $STRICT $GATE "$@" -I. -c "$B/$tname/gate-adapters.c" -o "$B/gate-$tname.o" || return 1
    ran="$ran gate-adapters"
}

# fuzz_replays CC FLAGS EXEC: the fuzz harnesses' seed corpora, replayed
fuzz_replays() {
    cc=$1; fl=$2; ex=$3
    for h in resp lock locks; do
        # shellcheck disable=SC2086
        run $cc $STRICT -O1 -g $fl -I. tests/fuzz/fuzz_$h.c -o "$B/$tname/replay_$h" || return 1
        # shellcheck disable=SC2086
        run_suite fuzz-replay-$h $ex "$B/$tname/replay_$h" tests/fuzz/corpus_$h || return 1
    done
}

need() {
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || { say "missing: $t (tests/ensure-deps.sh cross installs it)"; return 1; }
    done
}

target_i686() {
    if command -v i686-linux-gnu-gcc >/dev/null 2>&1; then cc=i686-linux-gnu-gcc; else cc="gcc -m32"; fi
    fl="-D_FILE_OFFSET_BITS=64"
    gate "$cc" -O2 || return 1
    gate_adapters "$cc" -O2 || return 1
    # shellcheck disable=SC2086
    run $cc $STRICT -O1 -g $fl -static -I. -Itests tests/test_unit.c -lpthread -o "$B/i686/test_unit" || return 1
    run_suite unit "$B/i686/test_unit" || return 1
    fuzz_replays "$cc" "$fl" "" || return 1
    # The real-Redis suites, dynamically linked to hiredis for i386.
    # shellcheck disable=SC2086
    run $cc $STRICT -O2 -I. cli/rlock.c -o "$B/i686/rlock" || return 1
    # Built two at a time, then run four at a time (tests/run-suites.sh -j:
    # the runs mostly wait on servers and timers; one after another they took
    # about 5 min, the longest, test_deploy, about 2).
    suites=; bpids=; built=1
    for src in tests/test_*.c; do
        s=${src#tests/test_}; s=${s%.c}
        # examples: it runs the host's build/asan|vg examples, not i686 code;
        # tls: links OpenSSL, which is not installed for i386
        case $s in unit|compile|examples|tls) continue ;; esac
        suites="$suites $s"
        # shellcheck disable=SC2086
        run $cc $STRICT -O1 -g $fl -I. -Itests "$src" -lhiredis -lpthread -o "$B/i686/test_$s" &
        bpids="$bpids $!"
        # shellcheck disable=SC2086
        set -- $bpids
        if [ $# -ge 2 ]; then wait "$1" || built=0; shift; bpids="$*"; fi
    done
    for p in $bpids; do wait "$p" || built=0; done
    [ $built = 1 ] || return 1
    i686_suites $suites
}
# i686_suites NAME...: the real-Redis suites, four at a time; each one's
# summary kept for the report as run_suite does
i686_suites() {
    out=$B/$tname-suites.out
    bins=
    for s in "$@"; do bins="$bins $B/i686/test_$s"; done
    say "+ RLOCK_TEST_QUICK=1 RLOCK_CLI=$B/i686/rlock tests/run-suites.sh -j 4$bins"
    # shellcheck disable=SC2086
    RLOCK_TEST_QUICK=1 RLOCK_CLI=$B/i686/rlock tests/run-suites.sh -j 4 $bins >"$out" 2>&1; st=$?
    cat "$out" >>"$log"
    line=$(grep -E '^total: [0-9]+ passed, 0 failed$' "$out")
    [ $st -eq 0 ] && [ -n "$line" ] || return 1
    passed=$((passed + $(echo "$line" | sed -E 's/total: ([0-9]+) passed.*/\1/')))
    ran="$ran $*"
}
target_ppc() {
    need powerpc-linux-gnu-gcc qemu-ppc || return 1
    cc=powerpc-linux-gnu-gcc
    fl="-D_FILE_OFFSET_BITS=64 -static"
    gate "$cc" -O2 || return 1
    # shellcheck disable=SC2086
    run $cc $STRICT -O1 -g $fl -I. -Itests tests/test_unit.c -lpthread -o "$B/ppc/test_unit" || return 1
    run_suite unit qemu-ppc "$B/ppc/test_unit" || return 1
    fuzz_replays "$cc" "$fl" qemu-ppc || return 1
}

# bare CPU MACHINE...: the unit suite as a bare-metal image under qemu-system-arm
bare() {
    cpu=$1; shift
    need arm-none-eabi-gcc qemu-system-arm || return 1
    cc="arm-none-eabi-gcc -mcpu=$cpu -mthumb"
    libcpu=$cpu
    # Cortex-M4: trap unaligned accesses; the compiler must not make any of
    # its own, and newlib's v7-M memcpy does (by design): link the v6-M libc.
    [ "$cpu" = cortex-m4 ] && { cc="$cc -mno-unaligned-access"; libcpu=cortex-m0; }
    gate "$cc" -Os -include tests/cross/baremetal.h || return 1
    fl="-O2 -g -ffunction-sections -fdata-sections"
    # shellcheck disable=SC2086
    run $cc $STRICT $fl -c tests/cross/startup.c -o "$B/$tname/startup.o" || return 1
    # shellcheck disable=SC2086
    run $cc $STRICT $fl $BARE_DEFS -include tests/cross/baremetal.h -I. -Itests -c tests/test_unit.c -o "$B/$tname/test_unit.o" || return 1
    run arm-none-eabi-gcc -mcpu=$libcpu -mthumb "$B/$tname/test_unit.o" "$B/$tname/startup.o" -nostartfiles \
        --specs=rdimon.specs -Ltests/cross -T "$cpu.ld" -Wl,--gc-sections -o "$B/$tname/test_unit.elf" || return 1
    run_suite unit timeout $QEMU_TIMEOUT qemu-system-arm "$@" -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$B/$tname/test_unit.elf" || return 1
}

# The nRF51's real 16 KiB of SRAM cannot hold the suite's fakes (request logs
# of up to 10 scripted nodes, 2.6 MiB); QEMU's SoC takes a bigger one.
# Its 256 KiB of flash no longer holds the suite with every script: it runs
# without the primitives (RLOCK_NO_PRIMITIVES, the configuration small
# targets use); cortex-m4 runs them.
target_cortex_m0() { BARE_DEFS=-DRLOCK_NO_PRIMITIVES bare cortex-m0 -M microbit -global nrf51-soc.sram-size=4194304 -global nrf51-soc.flash-size=1048576; }
target_cortex_m4() { BARE_DEFS= bare cortex-m4 -M mps2-an386; }

# run_target NAME: one target, its report line on stdout; exit 0 if it passed
run_target() {
    tname=$1
    log=$B/$tname.log
    : >"$log"
    mkdir -p "$B/$tname"
    ran=
    passed=0
    t0=$(now)
    fn=target_$(echo "$tname" | tr - _)
    if ! command -v "$fn" >/dev/null 2>&1; then
        echo "cross: unknown target $tname (i686 ppc cortex-m0 cortex-m4)"; return 1
    fi
    if $fn; then
        printf 'cross: %-10s ok    %6d checks (%s) in %d s\n' "$tname" "$passed" "${ran# }" $(($(now) - t0))
    else
        echo "---- $log (last 30 lines)"; tail -n 30 "$log"
        printf 'cross: %-10s FAILED after (%s) in %d s; log: %s\n' "$tname" "${ran# }" $(($(now) - t0)) "$log"
        return 1
    fi
}

# i686's real-Redis suites (most of the run, mostly waiting on servers and
# timers) run in the background beside the other targets, one after another.
bg=
for tname in $TARGETS; do
    if [ "$tname" = i686 ] && [ "$TARGETS" != i686 ]; then
        (run_target i686 >"$B/i686.line" 2>&1) &
        bg=$!
        continue
    fi
    run_target "$tname" || rc=1
done
if [ -n "$bg" ]; then
    wait "$bg" || rc=1
    cat "$B/i686.line"
fi
[ $rc = 0 ] && echo "cross: all targets passed" || echo "cross: FAILED"
exit $rc
