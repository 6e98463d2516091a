#!/bin/sh
# Line and branch coverage of rlock.h by the test suites (gcc --coverage, gcov).
# Usage: tests/coverage.sh [MIN_BRANCH_PERCENT]   (run from the repo root; `make coverage`)
#
# Every tests/test_*.c is built without sanitizers at -O0 with --coverage; a
# file that does not build is skipped with a note (someone may be mid-edit).
# Each binary runs once (the real-Redis suites start their own redis-server,
# see tests/ensure-deps.sh); a failing suite is reported but its coverage
# still counts - `make test` is the pass/fail gate, this is the measurement.
# gcov writes one rlock.h.gcov per binary; they are merged line by line: a
# line is covered when any binary ran it, a branch (line, gcov branch index)
# when any binary took it. Branch % is gcov's "taken at least once".
# With MIN_BRANCH_PERCENT, exits 1 when rlock.h's branch coverage is below it.
set -u
min="${1:-}"
out=build/cov
cc="${CC_COV:-gcc}"
timeout_s="${COVERAGE_TIMEOUT:-900}"
root=$(pwd)
rm -rf "$out"
mkdir -p "$out"
# build NAME: the coverage build of tests/NAME.c into $out/NAME (exit status)
build() {
    # the TLS suite links OpenSSL and tests/loop_conns.c, as in the Makefile
    extra=
    [ "$1" = test_tls ] && extra="$root/tests/loop_conns.c -lssl -lcrypto"
    # -fprofile-abs-path: gcov finds the sources from the build directory
    # shellcheck disable=SC2086
    "$cc" -std=c99 -O0 -g --coverage -fprofile-abs-path -I"$root" -I"$root/tests" \
        "$root/tests/$1.c" -lhiredis -lpthread $extra -o "$out/$1/$1" >"$out/$1/build.log" 2>&1
}
# run NAME: run it once from the repo root, like `make test` (the .gcda goes
# next to the binary), then gcov
run() {
    name=$1; dir="$out/$name"
    start=$(date +%s)
    if command -v timeout >/dev/null 2>&1; then
        timeout "$timeout_s" "$dir/$name" >"$dir/run.log" 2>&1
    else
        "$dir/$name" >"$dir/run.log" 2>&1
    fi
    rc=$?
    summary=$(grep -E '^[A-Za-z_-]+: [0-9]+ passed, [0-9]+ failed' "$dir/run.log" | tail -n 1)
    echo "coverage: ran $name in $(( $(date +%s) - start ))s (exit $rc) ${summary:+- $summary}"
    # built from two sources, gcc names the data NAME-NAME.gcda (and one per source)
    gcda=$name.gcda; [ -f "$dir/$name-$name.gcda" ] && gcda=$name-$name.gcda
    (cd "$dir" && gcov -b -c "$gcda" >gcov.log 2>&1)
}
# Two lanes, side by side (the runs mostly wait on servers and timers, so
# two fit on two cores with lint and fuzz beside them): the longest suites
# (LONG: test_deploy ~120 s and test_cli ~50 s at -O0, about half of the
# whole) one after the other in the background, the rest in the foreground,
# each binary built while the one before it runs. Each suite has its own
# directory, .gcda and gcov output; they start their own servers on free
# ports. A lane's count of binaries built comes back through a file.
LONG="test_deploy test_cli"
# lane NAME...: build and run each tests/NAME.c in turn; prints the count built
lane() {
    n=0; prev=
    for t in "$@"; do
        mkdir -p "$out/$t"
        build "$t" &
        bpid=$!
        [ -z "$prev" ] || run "$prev"
        prev=
        if wait $bpid; then
            n=$((n + 1)); prev=$t
        else
            echo "coverage: skip $t (does not build; see $out/$t/build.log)"
        fi
    done
    [ -z "$prev" ] || run "$prev"
    echo "$n" > "$out/.built.$$.$1"
}
long=; rest=
for src in tests/test_*.c; do
    t=$(basename "$src" .c)
    case " $LONG " in *" $t "*) long="$long $t" ;; *) rest="$rest $t" ;; esac
done
# shellcheck disable=SC2086
{ [ -z "$long" ] || lane $long; } &
lpid=$!
# shellcheck disable=SC2086
lane $rest
wait $lpid
built=0
for f in "$out"/.built."$$".*; do [ -f "$f" ] && built=$((built + $(cat "$f"))); rm -f "$f"; done
[ "$built" -gt 0 ] || { echo "coverage: no test built" >&2; exit 1; }

set -- "$out"/*/rlock.h.gcov
[ -f "$1" ] || { echo "coverage: gcov produced no rlock.h.gcov" >&2; exit 1; }
awk -v min="$min" '
    # "  count:  line: source"; count is -, #####, =====, or N (N* when some
    # blocks of the line did not run)
    /^ *(-|#####|=====|[0-9]+\*?): *[0-9]+:/ {
        split($0, f, ":"); c = f[1]; gsub(/ /, "", c); ln = f[2] + 0
        cur = ln
        if (ln == 0 || c == "-") next
        exe[ln] = 1
        sub(/\*$/, "", c)
        if (c ~ /^[0-9]+$/ && c + 0 > 0) hit[ln] = 1
        next
    }
    /^branch +[0-9]+ / {
        k = cur SUBSEP $2
        br[k] = 1
        if ($3 == "taken" && $4 + 0 > 0) tk[k] = 1
    }
    END {
        for (l in exe) { nl++; if (l in hit) hl++ }
        for (k in br) { nb++; if (k in tk) hb++ }
        lp = nl ? 100 * hl / nl : 0; bp = nb ? 100 * hb / nb : 0
        printf "coverage: rlock.h lines %.1f%% (%d of %d), branches %.1f%% (%d of %d taken at least once)\n", lp, hl, nl, bp, hb, nb
        if (min != "" && bp + 1e-9 < min + 0) {
            printf "coverage: FAIL: branch coverage %.1f%% is below COVERAGE_MIN=%s\n", bp, min
            exit 1
        }
        if (min != "") printf "coverage: branch coverage %.1f%% >= COVERAGE_MIN=%s\n", bp, min
    }' "$@"
