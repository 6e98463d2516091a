#!/usr/bin/env bash
# Run test binaries, print each suite's own summary, then one total line.
# Usage: run-suites.sh [--valgrind] [-j N] binary...
#
# -j N (or RLOCK_SUITE_JOBS=N) runs up to N suites at once: the real-Redis
# suites spend nearly all their time waiting on servers and timers (test_deploy:
# ~2 min, ~5 s of CPU; under valgrind too), and each starts its own servers on
# free ports, so they share a machine as they would share CI's. Each suite's
# output is kept apart and printed in the order given, when it ends. Default 1.
vg=()
jobs=${RLOCK_SUITE_JOBS:-1}
while [ $# -gt 0 ]; do
    case $1 in
        --valgrind)
            # shellcheck disable=SC2054 # (the commas are valgrind's own lists)
            vg=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect
                --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --child-silent-after-fork=yes)
            shift ;;
        -j) jobs=$2; shift 2 ;;
        -j*) jobs=${1#-j}; shift ;;
        *) break ;;
    esac
done
case $jobs in '' | *[!0-9]* | 0) echo "run-suites: -j wants a positive number, not '$jobs'" >&2; exit 2 ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# start I BINARY: run it in the background, its output and exit status into $dir
start() { { "${vg[@]}" "$2" >"$dir/$1.out" 2>&1; echo $? >"$dir/$1.rc"; } & }
pass=0; fail=0; bad=0
# report I BINARY: its summary (or, when it failed, all it printed)
report() {
    local out=$dir/$1.out rc line p f
    rc=$(cat "$dir/$1.rc")
    line=$(grep -E '^[A-Za-z_-]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$line" ] || [ "$rc" -ne 0 ]; then
        cat "$out"
        echo "== $2 ${vg:+(valgrind) }exited $rc${line:+ after: $line}"
        bad=$((bad + 1))
    else
        grep -E '^FAIL|^SKIP' "$out"
        echo "== $2 ${vg:+(valgrind) }$line"
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
}
suites=("$@")
next=0   # the next suite to start
shown=0  # the next suite to report (in order)
running=0
while [ $shown -lt ${#suites[@]} ]; do
    while [ $running -lt "$jobs" ] && [ $next -lt ${#suites[@]} ]; do
        start $next "${suites[$next]}"
        next=$((next + 1)); running=$((running + 1))
    done
    # report every suite that has ended, in order; else look again shortly
    if [ -f "$dir/$shown.rc" ]; then
        report $shown "${suites[$shown]}"
        shown=$((shown + 1))
        continue
    fi
    sleep 0.2
    running=0
    for ((i = shown; i < next; i++)); do [ -f "$dir/$i.rc" ] || running=$((running + 1)); done
done
wait
[ $bad -gt 0 ] && fail=$((fail + bad))
echo "total: $pass passed, $fail failed"
[ $fail -eq 0 ]
