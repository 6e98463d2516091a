#!/bin/sh
# bench/funclen.sh [--kv] [TOP] - the longest functions of rlock.h before the
# issue-11 engine (commit bc01738, from git) and now (the working tree):
# lines from the signature to the closing brace, blank lines and comments
# included. A function is a definition that starts in column 0 and ends at
# the first "}" in column 0 (the header's style). Prints the TOP (default 8)
# of each, then the number of functions, how many exceed 60 and 100 lines,
# and the median. --kv adds "funclen <rev> <what> <n>" lines for bench.c.
set -u
cd "$(dirname "$0")/.." || exit 1
kv=0; [ "${1:-}" = --kv ] && { kv=1; shift; }
top=${1:-8}
old=bc01738
lens() { # stdin: C source -> "lines name" per function definition
    awk '
    function ident(s) { sub(/[ \t]*\(.*/, "", s); n = split(s, w, /[ \t*]+/); return w[n] }
    state == 0 && /^[A-Za-z_][A-Za-z0-9_ \t*]*\(/ && !/^(typedef|struct|enum|union|return)[ \t]/ && !/;[ \t]*$/ {
        state = 1; start = NR; name = ident($0)
    }
    state == 1 {
        if (/\{[ \t]*(\/\*.*)?$/) { state = 2; if (/^\}/) state = 0; next }
        if (/;[ \t]*(\/\*.*)?$/) state = 0
        next
    }
    state == 2 && /^\}/ { print NR - start + 1, name; state = 0 }'
}
report() { # label file-or-"-"
    label=$1
    sorted=$(lens | sort -rn)
    [ -n "$sorted" ] || { echo "funclen: $label: no functions found" >&2; return 1; }
    n=$(echo "$sorted" | wc -l)
    o60=$(echo "$sorted" | awk '$1 > 60' | wc -l)
    o100=$(echo "$sorted" | awk '$1 > 100' | wc -l)
    med=$(echo "$sorted" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    total=$(echo "$sorted" | awk '{s+=$1} END{print s}')
    echo "  rlock.h $label: $n functions, $total lines in them; median $med lines; over 60 lines: $o60; over 100: $o100; longest:"
    echo "$sorted" | head -n "$top" | awk '{printf "    %4d  %s\n", $1, $2}'
    if [ $kv = 1 ]; then
        echo "funclen $label functions $n"
        echo "funclen $label longest $(echo "$sorted" | head -n 1 | cut -d' ' -f1)"
        echo "funclen $label over60 $o60"
        echo "funclen $label median $med"
    fi
}
rc=0
if git show "$old:rlock.h" >/dev/null 2>&1; then git show "$old:rlock.h" | report "$old" || rc=1
else echo "  rlock.h $old: not in this clone (git fetch --unshallow)"; fi
report now < rlock.h || rc=1
exit $rc
