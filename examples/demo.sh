#!/bin/sh
# demo.sh - `make demo`: the rlock command against throwaway redis-servers.
#
# 1. Six processes bump one counter file (read, pause, write back + 1), first
#    with no lock - updates get lost - then each bump under `rlock`: none lost,
#    never two holders at once.
# 2. Redlock over 3 servers: a job holds a lock with a short lease that rlock
#    renews; one server is killed mid-run; the lock holds on 2 of 3, a rival
#    is refused, the job finishes; with a second server gone rlock exits 69.
#
# The servers come from build/rlock-testserver (tests/harness.h: free loopback
# ports, temp dirs, no persistence) and are stopped by PID when the demo ends.
# The last line starts with "RESULT:"; the exit status is 0 when every check
# held. Needs build/rlock and build/rlock-testserver (`make` builds both).
# POSIX sh, plus fractional `sleep` (GNU coreutils, busybox).
set -u
cd "$(dirname "$0")/.." || exit 1
RLOCK=./build/rlock
WORKERS=6
ROUNDS=10
for f in "$RLOCK" ./build/rlock-testserver; do
    [ -x "$f" ] || { echo "demo: $f is missing: run make first"; echo "RESULT: FAILED (not built)"; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-demo.XXXXXX") || exit 1
. ./examples/testservers.sh
server_pids=
cleanup() {
    trap - EXIT INT TERM
    [ -n "$server_pids" ] && kill $server_pids 2>/dev/null # stop the servers by PID
    servers_stop                                            # the helper reaps them, removes their dirs
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
    echo "demo: $*"
    echo "RESULT: FAILED ($*)"
    exit 1
}

# ---- three throwaway redis-servers -------------------------------------
servers_start 3
set -- $(sed -n '1,3p' "$tmp/servers")
P1=$1 PID1=$2 P2=$3 PID2=$4 P3=$5 PID3=$6
server_pids="$PID1 $PID2 $PID3"
echo "rlock demo: the rlock command with 3 throwaway redis-servers on 127.0.0.1 ports $P1, $P2, $P3"
echo

# ---- 1. one counter file, six processes --------------------------------
# Enter (a marker dir: if it is already there, two holders overlap), read,
# pause 10 ms, write back + 1, leave. D is the directory of the run.
bump='mkdir "$D/inside" 2>/dev/null || echo x >>"$D/overlaps"
n=$(cat "$D/counter"); sleep 0.01; echo $((n + 1)) >"$D/counter"; rmdir "$D/inside" 2>/dev/null; :'

run_workers() { # $1: free | lock, $2: directory
    mkdir "$2" && echo 0 >"$2/counter"
    pids=
    w=0
    while [ $w -lt $WORKERS ]; do
        (
            r=0
            while [ $r -lt $ROUNDS ]; do
                if [ "$1" = lock ]; then
                    D=$2 "$RLOCK" -S "127.0.0.1:$P1" -t 5 demo:counter sh -c "$bump" || echo "exit $?" >>"$2/errors"
                else
                    D=$2 sh -c "$bump"
                fi
                r=$((r + 1))
            done
        ) &
        pids="$pids $!"
        w=$((w + 1))
    done
    wait $pids
}
count() { [ -f "$1" ] && wc -l <"$1" | tr -d ' ' || echo 0; }

total=$((WORKERS * ROUNDS))
echo "1. $WORKERS processes, one counter file"
echo "   Each process adds 1 to a shared counter file $ROUNDS times: read the number, wait 10 ms, write it back + 1."
run_workers free "$tmp/free"
free_value=$(cat "$tmp/free/counter")
echo "   with no lock:          counter = $free_value of $total - $((total - free_value)) updates lost"
run_workers lock "$tmp/lock"
lock_value=$(cat "$tmp/lock/counter")
overlaps=$(count "$tmp/lock/overlaps")
errors=$(count "$tmp/lock/errors")
echo "   each bump under rlock: counter = $lock_value of $total - $((total - lock_value)) lost;" \
    "two holders at once: $overlaps times; failed rlock runs: $errors"
part1=ok
[ "$lock_value" = "$total" ] && [ "$overlaps" = 0 ] && [ "$errors" = 0 ] || part1=FAILED
echo

# ---- 2. Redlock over 3 servers, one killed -----------------------------
all="-S 127.0.0.1:$P1 -S 127.0.0.1:$P2 -S 127.0.0.1:$P3"
echo "2. Redlock over 3 servers; one is killed while the lock is held"
echo "   A 3 s job takes \"demo:deploy\" on all 3 servers with a 1.5 s lease, which rlock renews every 0.5 s."
"$RLOCK" -v -t 1.5 $all demo:deploy sh -c 'sleep 3' 2>"$tmp/job.err" &
job=$!
sleep 1
kill -9 "$PID2"
echo "   After 1 s the demo kills server 2 (kill -9, pid $PID2)."
sleep 0.5
"$RLOCK" -n $all demo:deploy true
rival=$?
if [ $rival = 1 ]; then
    echo "   Meanwhile another 'rlock -n demo:deploy' is refused (exit 1): the lock still holds, on 2 of 3 servers."
else
    echo "   Meanwhile another 'rlock -n demo:deploy' exited $rival, but should have been refused (exit 1)."
fi
wait $job
job_rc=$?
renewed=$(grep -c 'renewed' "$tmp/job.err")
on_two=$(grep -c 'renewed .* on 2/3' "$tmp/job.err")
echo "   The job finished with exit $job_rc; its lease was renewed $renewed times, $on_two of them with 2 of 3 servers."
"$RLOCK" -v $all demo:deploy true 2>"$tmp/next.err"
next_rc=$?
votes=$(sed -n "s/.*acquired 'demo:deploy' on \([0-9]*\)\/\([0-9]*\) servers.*/\1 of \2/p" "$tmp/next.err")
echo "   A new 'rlock demo:deploy' now acquires with ${votes:-?} servers (exit $next_rc)."
kill -9 "$PID3"
"$RLOCK" -n $all demo:deploy true 2>/dev/null
noquorum_rc=$?
echo "   With server 3 killed too, rlock refuses to run anything: exit $noquorum_rc (no quorum of servers)."
part2=ok
[ $rival = 1 ] && [ $job_rc = 0 ] && [ "$on_two" -ge 1 ] && [ $next_rc = 0 ] && [ $noquorum_rc = 69 ] || part2=FAILED
if [ $part2 != ok ]; then
    echo "   rlock's own words from the job:"
    sed 's/^/     /' "$tmp/job.err"
fi
echo

if [ $part1 = ok ] && [ $part2 = ok ]; then
    echo "RESULT: ok - under rlock no counter update was lost ($lock_value/$total; $((total - free_value)) lost without it)," \
        "and Redlock kept the lock through a server failure, then refused without a quorum"
    exit 0
fi
echo "RESULT: FAILED - counter: $part1, Redlock: $part2"
exit 1
