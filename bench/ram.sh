#!/bin/sh
# bench/ram.sh [--kv] [CONFIG ...] - RAM and worst-case stack of rlock, per
# configuration and target, measured by each target's own compiler:
#   RAM    sizeof(rlock_lock), sizeof(rlock_node), sizeof(rlock_client) and
#          their sum (one lock on one node; and sizeof(rlock_subscriber), a
#          RESP2 waiting connection), read from the symbol sizes of an object
#          holding one array of each size (nothing is run)
#   stack  the worst case of every public rlock_* function at -Os: gcc's
#          -fstack-usage frames walked over its call graph
#          (-fcallgraph-info=su, gcc >= 12) by bench/stackwalk.awk; callees
#          it cannot see into (the transport's and rlock_config's hooks, the
#          platform macros, libc) are not counted and are named
# The core is bench/size/core.c (RLOCK_NO_POSIX, the platform hooks as extern
# calls, asserts off), as `make size` builds it. Configurations:
#   smallest   -DRLOCK_SMALLEST (every feature out, one node)
#   firmware   the #defines of examples/firmware/main.c
#   default    nothing defined (every feature, RLOCK_MAX_NODES 9)
# Targets: cortex-m0, cortex-m4 (arm-none-eabi-gcc), rv32 (riscv64-unknown-elf-
# gcc -march=rv32imac), x86-64 (gcc); one whose compiler is missing is skipped.
# --kv prints "ram CONFIG TARGET lock|node|client|total|subscriber BYTES", "stack CONFIG
# TARGET FUNCTION BYTES" and stackwalk.awk's other lines (stackcallee,
# stackrecursion, stackdynamic); otherwise readable tables. RLOCK_RAM_BUDGET
# (default 2048): the smallest configuration's total on Cortex-M4 must be
# within it, else the exit status is 1; so it is on any recursion (a call
# cycle: the worst-case stack would not hold).
set -u
cd "$(dirname "$0")/.."
kv=0; [ "${1:-}" = --kv ] && { kv=1; shift; }
configs=${*:-smallest firmware default}
out=${BUILD:-build}/ram; mkdir -p "$out"
budget=${RLOCK_RAM_BUDGET:-2048}
flags="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-error=type-limits -Os -ffunction-sections -fdata-sections -I. -Ibench/size"
rc=0

defs() {
    case $1 in
    smallest) echo "-DRLOCK_SMALLEST" ;;
    default) echo "" ;;
    firmware) awk '/^#define RLOCK_IMPLEMENTATION/{exit} /^#define RLOCK_/ && $2 != "RLOCK_NO_POSIX" {d="-D" $2; if (NF > 2 && $3 !~ /^\/[*\/]/) d=d "=" $3; printf "%s ", d}' examples/firmware/main.c ;;
    *) echo "ram.sh: unknown configuration $1 (smallest, firmware, default)" >&2; return 1 ;;
    esac
}
target_cc() {
    case $1 in
    cortex-m0) echo "arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb" ;;
    cortex-m4) echo "arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb" ;;
    rv32) echo "riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32 -ffreestanding" ;;
    x86-64) echo "gcc" ;;
    esac
}

src=$out/ram.c
cat > "$src" <<'EOF'
#include "core.c"
char rlock_ram_lock[sizeof(rlock_lock)];
char rlock_ram_node[sizeof(rlock_node)];
char rlock_ram_client[sizeof(rlock_client)];
char rlock_ram_subscriber[sizeof(rlock_subscriber)];
EOF
res=$out/results.txt; : > "$res"
for cfg in $configs; do
    d=$(defs "$cfg") || { rc=1; continue; }
    for tgt in cortex-m0 cortex-m4 rv32 x86-64; do
        cc=$(target_cc $tgt); cc0=${cc%% *}
        if ! command -v "$cc0" >/dev/null 2>&1; then
            echo "ram $cfg $tgt skipped $cc0-not-installed" >> "$res"; continue
        fi
        o=$out/$cfg-$tgt.o
        # shellcheck disable=SC2086
        if ! (cd "$out" && $cc $flags -I"$OLDPWD" -I"$OLDPWD/bench/size" $d -fstack-usage -fcallgraph-info=su \
                -c ram.c -o "$cfg-$tgt.o"); then
            echo "ram.sh: $cfg $tgt: compile failed" >&2; rc=1; continue
        fi
        nm=$(echo "$cc0" | sed 's/gcc$/nm/'); command -v "$nm" >/dev/null 2>&1 || nm=nm
        "$nm" -S "$o" | awk -v c="$cfg" -v t="$tgt" '
            function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
            $4 ~ /^rlock_ram_/ { n = $4; sub(/^rlock_ram_/, "", n); v[n] = hex($2) }
            END { printf "ram %s %s lock %d\nram %s %s node %d\nram %s %s client %d\nram %s %s total %d\n",
                         c, t, v["lock"], c, t, v["node"], c, t, v["client"], c, t, v["lock"] + v["node"] + v["client"]
                  printf "ram %s %s subscriber %d\n", c, t, v["subscriber"] }' >> "$res"
        awk -v cfg="$cfg" -v tgt="$tgt" -f bench/stackwalk.awk "$out/$cfg-$tgt.ci" | sort >> "$res"
    done
done

m4=$(awk '$1 == "ram" && $2 == "smallest" && $3 == "cortex-m4" && $4 == "total" {print $5}' "$res")
if [ -n "$m4" ] && [ "$m4" -gt "$budget" ]; then
    echo "ram.sh: one lock on one node, smallest configuration, Cortex-M4: $m4 B, over the budget of $budget B" >&2
    rc=1
fi
# A cycle in the call graph: the worst-case stack printed would not hold.
if grep -q '^stackrecursion ' "$res"; then
    echo "ram.sh: recursion, the worst-case stack is unbounded: $(awk '$1 == "stackrecursion" {printf " %s/%s:%s", $2, $3, $4}' "$res")" >&2
    rc=1
fi
if [ $kv = 1 ]; then
    cat "$res"
    [ -n "$m4" ] && echo "ram budget_smallest_cortex_m4 $budget"
    exit $rc
fi

echo "RAM, bytes (sizeof, each target's compiler): one lock on one node = lock + node + client"
awk '$1 == "ram" && $4 != "skipped" {k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k } v[k, $4] = $5 }
     $1 == "ram" && $4 == "skipped" { printf "%-9s %-10s skipped (%s)\n", $2, $3, $5 }
     END { printf "%-9s %-10s %7s %7s %7s %7s\n", "config", "target", "lock", "node", "client", "total"
           for (i = 1; i <= n; i++) { split(order[i], p, " "); printf "%-9s %-10s %7d %7d %7d %7d\n", p[1], p[2], v[order[i], "lock"], v[order[i], "node"], v[order[i], "client"], v[order[i], "total"] } }' "$res"
[ -n "$m4" ] && awk -v t="$m4" -v b="$budget" 'BEGIN{printf "smallest, Cortex-M4: %d B; budget %d B: %s\n", t, b, t <= b ? "within" : "OVER"}'
echo
echo "Worst-case stack, bytes, -Os (hooks, platform calls and libc not counted; * = reaches a transport/config hook)"
awk '$1 == "stack" { f[$4] = 1; k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; col[++n] = k } v[$4, k] = $5 }
     $1 == "stackcallee" && $5 ~ /hook/ { hk[$4] = 1 }
     $1 == "stackrecursion" { rec = rec " " $2 "/" $3 ":" $4 }
     $1 == "stackdynamic" { dyn = dyn " " $2 "/" $3 ":" $4 }
     END { printf "%-32s", "function"; for (i = 1; i <= n; i++) { split(col[i], p, " "); printf " %9s", substr(p[1], 1, 4) "/" p[2] } print ""
           m = 0; for (x in f) names[++m] = x
           for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (names[j] < names[i]) { t = names[i]; names[i] = names[j]; names[j] = t }
           for (i = 1; i <= m; i++) { printf "%-32s", names[i] (names[i] in hk ? " *" : ""); for (j = 1; j <= n; j++) printf " %9s", ((names[i], col[j]) in v) ? v[names[i], col[j]] : "-"; print "" }
           print "recursion:" (rec == "" ? " none" : rec); print "unbounded frames:" (dyn == "" ? " none" : dyn) }' "$res"
exit $rc
