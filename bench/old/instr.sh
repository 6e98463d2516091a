#!/bin/sh
# bench/old/instr.sh PORT [PORT ...] - instructions per uncontended
# acquire+release cycle (callgrind, -O2, POSIX adapter; client side only:
# rlock, adapter, libc; not the kernel's work in syscalls) for today's
# rlock.h and bc01738's, on 1, 3 and 5 nodes (as many as ports given).
# Prints "instr <now|old>_<nodes> <instructions per cycle>" lines; a missing
# tool or commit prints "instr skip <why>".
set -u
cd "$(dirname "$0")/../.." || exit 1
bin=build/instr_old
cycles=${INSTR_CYCLES:-1000}
[ -x "$bin" ] || { echo "instr skip $bin not built"; exit 1; }
command -v valgrind >/dev/null 2>&1 || { echo "instr skip valgrind not installed (apt-get install valgrind)"; exit 0; }
rc=0
out=$(mktemp /tmp/rlock-instr.XXXXXX)
for n in 1 3 5; do
    [ $# -ge $n ] || continue
    for lib in now old; do
        # shellcheck disable=SC2046
        if valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="instr_$lib" \
                "$bin" "$lib" "$n" "$cycles" $(echo "$@" | cut -d' ' -f1-$n) > "$out.txt" 2> "$out.log"; then
            echo "instr ${lib}_$n $(awk -v c="$cycles" '/^totals:/{printf "%.0f", $2 / c}' "$out")"
        elif grep -q '^skipped:' "$out.txt"; then
            echo "instr skip $(sed -n 's/^skipped: //p' "$out.txt")"; break 2
        else
            echo "instr: $lib on $n nodes failed:" >&2; tail -n 5 "$out.log" >&2; rc=1
        fi
    done
done
rm -f "$out" "$out.txt" "$out.log"
exit $rc
