#!/bin/sh
# Run test binaries, print each suite's own summary, then one total line.
# Usage: run-suites.sh [--valgrind] binary...
vg=""
if [ "$1" = "--valgrind" ]; then
    vg="valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --child-silent-after-fork=yes"
    shift
fi
pass=0; fail=0; bad=0
for t in "$@"; do
    out=$(mktemp)
    $vg "$t" >"$out" 2>&1
    rc=$?
    line=$(grep -E '^[A-Za-z_-]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$line" ] || [ $rc -ne 0 ]; then
        cat "$out"
        echo "== $t ${vg:+(valgrind) }exited $rc${line:+ after: $line}"
        bad=$((bad + 1))
    else
        grep -E '^FAIL|^SKIP' "$out"
        echo "== $t ${vg:+(valgrind) }$line"
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
    rm -f "$out"
done
[ $bad -gt 0 ] && fail=$((fail + bad))
echo "total: $pass passed, $fail failed"
[ $fail -eq 0 ]
