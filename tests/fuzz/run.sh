#!/bin/sh
# Run the libFuzzer harnesses that `make fuzz` built, each for SECONDS
# (default 60), side by side (four harnesses: on two cores each gets about half of one,
# and the step still takes SECONDS), then report executions.
# Usage: tests/fuzz/run.sh [SECONDS]     (from the repo root)
# The seed corpora in tests/fuzz/corpus_* are read, never written: what the
# fuzzer adds goes to build/fuzz/corpus_* (kept between local runs). A crash,
# leak or timeout fails the run and names the input; replay it with
#   FUZZ_TRACE=1 build/fuzz/replay_lock build/fuzz/artifacts/lock-crash-...
secs="${1:-60}"
dir=build/fuzz
harnesses="resp lock lock_compact locks" # lock_compact: fuzz_lock against the compact engine, on its corpus;
# locks: several locks sharing the connections (fuzz_locks.c)
mkdir -p "$dir/artifacts"
pids=""
for h in $harnesses; do
    mkdir -p "$dir/corpus_$h"
    dict=""
    [ -f "tests/fuzz/$h.dict" ] && dict="-dict=tests/fuzz/$h.dict"
    "./$dir/fuzz_$h" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/$h-" $dict \
        "$dir/corpus_$h" "tests/fuzz/corpus_${h%_compact}" >"$dir/fuzz_$h.log" 2>&1 &
    pids="$pids $!"
done
fail=0
set -- $pids
for h in $harnesses; do
    wait "$1"; rc=$?; shift
    log="$dir/fuzz_$h.log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1)
    if [ "$rc" -ne 0 ]; then
        fail=1
        grep -E '^fuzz_[a-z]+:|ERROR|SUMMARY|Test unit written' "$log" | head -n 20
        echo "fuzz_$h: FAILED (exit $rc) after ${runs:-?} executions; log: $log"
    else
        echo "fuzz_$h: ${runs:-?} executions in ${secs}s (${rate:-?}/s; ${cov:-no stats}), no crash"
    fi
done
exit $fail
