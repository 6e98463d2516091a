#!/bin/sh
# bench/footprint.sh PORT [PORT ...] - the client-side footprint rows of
# `make bench` (bench.c runs this with its own servers' ports):
#   - heap allocations during N acquire+release cycles, and stack high-water
#     of one acquire/release: build/footprint (see bench/footprint.c)
#   - instructions per acquire+release cycle: valgrind --tool=callgrind with
#     --toggle-collect=fp_cycles, so only the measured cycles count; the
#     total is split by callgrind_annotate into the core (rlock.h), the POSIX
#     adapter and everything else (libc, the vDSO). Instruction counts under
#     callgrind are deterministic up to the random tokens and the numbers in
#     replies; syscalls' kernel work is not counted.
# Prints "fp <key> <value>" lines; a missing tool prints "fp skip_<what> <why>".
set -u
cd "$(dirname "$0")/.."
fp=build/footprint
[ -x "$fp" ] || { echo "fp skip_all $fp not built"; exit 1; }
[ $# -ge 1 ] || { echo "usage: $0 PORT [PORT ...]" >&2; exit 2; }
rc=0
"$fp" "$@" || rc=1
cycles=2000
if ! command -v valgrind >/dev/null 2>&1; then
    echo "fp skip_callgrind valgrind not installed (apt-get install valgrind)"
    exit $rc
fi
out=$(mktemp /tmp/rlock-callgrind.XXXXXX)
if valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect=fp_cycles \
        "$fp" --cycles "$cycles" "$1" >/dev/null 2>"$out.log"; then
    total=$(awk '/^totals:/{print $2}' "$out")
    if command -v callgrind_annotate >/dev/null 2>&1; then
        callgrind_annotate --inclusive=no --threshold=100 --auto=no "$out" 2>/dev/null |
            awk -v n="$cycles" '/file:function/{go=1;next}
                go && /^ *[0-9,]+ /{v=$1; gsub(",","",v);
                    if ($0 ~ /rlock\.h:/) c+=v; else if ($0 ~ /rlock_posix\.h:/) a+=v; else o+=v}
                END{printf "fp ir_core %.0f\nfp ir_adapter %.0f\nfp ir_other %.0f\n", c/n, a/n, o/n}'
    fi
    echo "fp ir_total $(awk -v t="$total" -v n="$cycles" 'BEGIN{printf "%.0f", t/n}')"
    echo "fp callgrind_cycles $cycles"
else
    echo "fp skip_callgrind valgrind failed (see $out.log)"
    rc=1
fi
rm -f "$out" "$out.log"
exit $rc
