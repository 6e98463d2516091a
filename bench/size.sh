#!/bin/sh
# bench/size.sh [--kv] - `make size`: .text/.rodata of the rlock core at -Os
# (bench/size/core.c: RLOCK_NO_POSIX, hooks as extern calls, NDEBUG-style
# asserts; every function of the header, -ffunction-sections, not linked) for
#   x86-64 (gcc), Cortex-M4 (arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb, from
#   Debian's gcc-arm-none-eabi + libnewlib-arm-none-eabi), and freestanding
#   RISC-V rv32imac (riscv64-unknown-elf-gcc -ffreestanding, from Debian's
#   gcc-riscv64-unknown-elf; bench/size/string.h stands in for the libc).
# Warnings are errors, except -Wtype-limits (see README: it fires on ARM's
# short enums). A missing cross compiler is skipped with a note, except
# Cortex-M4 under CI=true, which fails. Exit status: non-zero when a compile
# fails (or, with RLOCK_SIZE_ENFORCE=1, when Cortex-M4 .text exceeds
# RLOCK_SIZE_BUDGET bytes, default 10240).
# --kv prints "size <target> <text> <rodata> <data> <bss>" lines instead.
set -u
cd "$(dirname "$0")/.."
kv=0; [ "${1:-}" = --kv ] && kv=1
out=${BUILD:-build}/size; mkdir -p "$out"
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-error=type-limits -Os -ffunction-sections -fdata-sections -I. -Ibench/size"
budget=${RLOCK_SIZE_BUDGET:-10240}
rc=0; m4_text=""
[ $kv = 1 ] || {
    echo "rlock core at -Os (bench/size/core.c: RLOCK_NO_POSIX, hooks as extern calls, asserts off; all functions, not linked)"
    printf '%-34s %-30s %7s %7s %6s %5s\n' target compiler .text .rodata .data .bss
}
# one TARGET-NAME CC "CFLAGS" [EXTRA-DEFINES]
one() {
    name=$1; cc=$2; cfl=$3; extra=${4:-}
    if ! command -v "$cc" >/dev/null 2>&1; then
        case $name in cortex-m4*) [ "${CI:-}" = true ] && { echo "size: $cc not found (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)" >&2; rc=1; } ;; esac
        if [ $kv = 1 ]; then echo "size $name skipped $cc-not-installed"
        else printf '%-34s skipped: %s not installed\n' "$name" "$cc"; fi
        return
    fi
    o=$out/core-$name.o
    # shellcheck disable=SC2086
    if ! $cc $flags $cfl $extra -c bench/size/core.c -o "$o"; then
        echo "size: $name: compile failed" >&2; rc=1; return
    fi
    sz=$(echo "$cc" | sed 's/gcc$/size/'); command -v "$sz" >/dev/null 2>&1 || sz=size
    set -- $("$sz" -A "$o" | awk '$1 ~ /^\.text/{t+=$2} $1 ~ /^\.rodata/{r+=$2} $1 ~ /^\.(data|sdata)/{d+=$2} $1 ~ /^\.(bss|sbss)/{b+=$2} END{print t+0, r+0, d+0, b+0}')
    ver=$("$cc" -dumpversion 2>/dev/null)
    case $name in cortex-m4) m4_text=$1 ;; esac
    if [ $kv = 1 ]; then echo "size $name $1 $2 $3 $4"
    else printf '%-34s %-30s %7s %7s %6s %5s\n' "$name" "$cc $ver" "$1" "$2" "$3" "$4"; fi
}
one x86-64 gcc ""
one cortex-m4 arm-none-eabi-gcc "-mcpu=cortex-m4 -mthumb"
one cortex-m4+NO_STATUS_STRINGS arm-none-eabi-gcc "-mcpu=cortex-m4 -mthumb" -DRLOCK_NO_STATUS_STRINGS
one cortex-m4+NO_PRIMITIVES arm-none-eabi-gcc "-mcpu=cortex-m4 -mthumb" -DRLOCK_NO_PRIMITIVES
one riscv32-rv32imac-freestanding riscv64-unknown-elf-gcc "-march=rv32imac -mabi=ilp32 -ffreestanding"
if [ -n "$m4_text" ]; then
    if [ $kv = 1 ]; then echo "size budget_cortex_m4 $budget"
    else
        awk -v t="$m4_text" -v b="$budget" 'BEGIN{printf "Cortex-M4 .text %d B = %.2f KiB; budget %d B: %s (%.2fx)\n", t, t/1024, b, t<=b?"within":"OVER by " t-b " B", t/b}'
    fi
    if [ "${RLOCK_SIZE_ENFORCE:-0}" = 1 ] && [ "$m4_text" -gt "$budget" ]; then
        echo "size: Cortex-M4 .text $m4_text B exceeds the budget of $budget B" >&2; rc=1
    fi
fi
exit $rc
