#!/bin/sh
# examples/firmware/run.sh - `make firmware` (and the end of `make test`):
# the firmware image on an emulated Cortex-M4 takes a real lock on a real
# redis-server, through its UART, while `rlock` commands on the host contend
# for the same key.
#
#   QEMU -M mps2-an386, UART0 = -serial tcp:127.0.0.1:PORT,reconnect=1 to a
#   throwaway redis-server (build/rlock-testserver: free loopback port, no
#   persistence, stopped by PID). Both sides append "enter WHO FENCE" /
#   "leave WHO FENCE" to one file, cs.log: the firmware through semihosting
#   (O_APPEND on the host), the host from inside rlock's critical section.
#
#   1. host1 takes the lock first and holds it until the firmware says it
#      was refused ("fw: waiting round 1: refused"): the firmware must wait
#      for it.
#   2. When the firmware holds the lock, host2 starts ("try host2" in the
#      log): it must wait until the firmware leaves.
#   3. More host rlocks contend in a loop until the firmware is done.
#   4. During the firmware's third hold its connection is killed (CLIENT
#      KILL): QEMU reconnects the socket, the firmware's transport redoes its
#      handshake, and the renewals carry the lock through.
# Checks: no two critical sections overlap, fence tokens strictly increase
# across both sides, every firmware hold was renewed and left with validity
# left, the superloop slept rather than spun, the lock is free at the end. Bounded: QEMU gets FW_TIMEOUT seconds.
# Last line: "firmware: N passed, M failed"; exit 0 when none failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
ELF=$PWD/$B/firmware/firmware.elf
RLOCK=$PWD/$B/rlock
KEY=fw:job            # the firmware's FW_KEY
ROUNDS=4              # the firmware's FW_ROUNDS
FW_TIMEOUT=150
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "  ok    $*"; }
bad() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() { # check "what" command...
    what=$1; shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
    echo "firmware: $passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit $?
}

for f in "$ELF" "$RLOCK" "$B/rlock-testserver"; do
    [ -e "$f" ] || { echo "firmware: $f is missing (make firmware builds it)"; bad "built"; finish; }
done
for t in qemu-system-arm redis-cli; do
    command -v $t >/dev/null 2>&1 || { echo "firmware: $t missing (tests/ensure-deps.sh firmware)"; bad "tools"; finish; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-fw.XXXXXX") || exit 1
helper='' server_pid='' qemu_pid='' hosts_pid='' host1_pid=''
cleanup() {
    trap - EXIT INT TERM
    # On an early exit: QEMU (through timeout), then the host subshells and
    # the rlock they run (by parent PID).
    [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null
    for p in $hosts_pid $host1_pid; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    exec 3>&- # EOF: rlock-testserver stops its server and removes its dir
    [ -n "$helper" ] && wait "$helper"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for SECONDS FILE PATTERN: until grep finds PATTERN in FILE
wait_for() {
    i=0
    while ! grep -q "$3" "$2" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le $(($1 * 20)) ] || return 1
        sleep 0.05
    done
}

# ---- a throwaway redis-server ------------------------------------------
mkfifo "$tmp/ctl" || exit 1
"$B/rlock-testserver" 1 <"$tmp/ctl" >"$tmp/servers" &
helper=$!
exec 3>"$tmp/ctl"
if ! wait_for 10 "$tmp/servers" '^ready$'; then bad "redis-server started"; finish; fi
read -r PORT server_pid <"$tmp/servers"
SRV=127.0.0.1:$PORT
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
echo "firmware: QEMU mps2-an386 (Cortex-M4), UART0 <-> redis-server on $SRV, key $KEY"

# The host's critical section: cs.sh WHO HOLD, where HOLD is seconds or
# "fw-waiting" (until the firmware says it was refused, at most 30 s).
cat >"$tmp/cs.sh" <<'EOF'
echo "enter $1 $RLOCK_FENCE" >>cs.log
if [ "$2" = fw-waiting ]; then
    i=0
    until grep -q '^fw: waiting round 1: refused' fw.out 2>/dev/null; do
        i=$((i + 1)); [ $i -le 600 ] || { echo "leave $1 $RLOCK_FENCE timeout" >>cs.log; exit 0; }
        sleep 0.05
    done
else
    sleep "$2"
fi
echo "leave $1 $RLOCK_FENCE" >>cs.log
EOF
cd "$tmp" || exit 1
: >cs.log
: >fw.out
: >hosts.status

# 1. host1 holds the lock before the firmware starts.
("$RLOCK" -s "$SRV" --fence -t 10s "$KEY" sh cs.sh host1 fw-waiting; echo "host1 $?" >>hosts.status) &
host1_pid=$!
check "host1 took the lock first" wait_for 10 cs.log '^enter host1 '

timeout $FW_TIMEOUT qemu-system-arm -M mps2-an386 -nographic -monitor none \
    -serial "tcp:$SRV,reconnect=1" -semihosting-config enable=on,target=native \
    -kernel "$ELF" >fw.out 2>&1 &
qemu_pid=$!

# 2 and 3. Once the firmware holds it: host2, then the contention loop.
if wait_for 60 cs.log '^enter fw '; then
    (
        echo "try host2" >>cs.log
        "$RLOCK" -s "$SRV" --fence -w 60s "$KEY" sh cs.sh host2 0.5; echo "host2 $?" >>hosts.status
        i=3
        while [ $i -le 40 ] && ! grep -q '^fw: done' fw.out; do
            sleep 0.3 # room for the firmware between two host holds
            "$RLOCK" -s "$SRV" --fence -w 60s "$KEY" sh cs.sh host$i 0.2; echo "host$i $?" >>hosts.status
            i=$((i + 1))
        done
    ) &
    hosts_pid=$!
fi

# 4. Kill the firmware's connection while it holds the lock in round 3.
killed=
if wait_for 90 cs.log '^enter fw .* round=3'; then
    sleep 0.5
    id=$(rcli CLIENT LIST | sed -n 's/^id=\([0-9]*\) .* name=rlock-fw .*/\1/p' | head -n 1)
    [ -n "$id" ] && killed=$(rcli CLIENT KILL ID "$id")
fi

wait "$qemu_pid"
qemu_rc=$?
[ -n "$hosts_pid" ] && wait "$hosts_pid"
wait "$host1_pid"
qemu_pid='' hosts_pid='' host1_pid=''

# ---- checks ------------------------------------------------------------
sed -n 's/^fw: /  firmware said: /p' fw.out
check "firmware exited 0 (QEMU status $qemu_rc; 124: out of time)" [ "$qemu_rc" = 0 ]
check "firmware finished $ROUNDS rounds" grep -q "^fw: done rounds=$ROUNDS .* ok$" fw.out
check "firmware was refused while host1 held the lock" grep -q '^fw: waiting round 1: refused' fw.out
check "host1 left after that, not by its timeout" grep -q '^leave host1 [0-9]*$' cs.log

# One pass over cs.log: alternating enter/leave of one holder and fence,
# fences strictly increasing, and what happened around host2's try.
awk -v rounds=$ROUNDS '
    /^try / { if (holder == "fw") tried_in_fw = 1; next }
    /^enter / {
        if (holder != "") { print "overlap: " $0 " while " holder " " fence " holds"; bad = 1 }
        else if ($2 == "host2" && tried_in_fw) host2_waited = 1
        if ($3 + 0 <= last) { print "fence " $3 " after " last; bad = 1 }
        holder = $2; fence = $3; last = $3 + 0
        if ($2 == "fw") { fw++ } else { hosts++; if (prev == "fw") switches++ }
        prev = ($2 == "fw") ? "fw" : "host"
        next
    }
    /^leave / {
        if ($2 != holder || $3 != fence) { print "leave without its enter: " $0; bad = 1 }
        if ($2 == "fw") {
            split($4, r, "="); split($5, v, "=")
            if (r[2] + 0 < 1) { print "no renewal in: " $0; bad = 1 }
            if (v[2] + 0 <= 0) { print "no validity left at: " $0; bad = 1 }
        }
        holder = ""
        next
    }
    { print "unexpected line: " $0; bad = 1 }
    END {
        if (holder != "") { print "never left: " holder; bad = 1 }
        printf "fw=%d hosts=%d switches=%d host2_waited=%d bad=%d\n", fw, hosts, switches, host2_waited, bad
    }' cs.log >check.out
summary=$(tail -n 1 check.out)
echo "  ($summary; $(grep -c . cs.log) records)"
check "no two holders at once, fence tokens increase, each firmware hold renewed and left in time" \
    grep -q ' bad=0$' check.out
check "the firmware held the lock $ROUNDS times" grep -q "^fw=$ROUNDS " check.out
check "host2 tried while the firmware held it, and got it after" grep -q ' host2_waited=1 ' check.out
check "the lock went back and forth (host after firmware at least twice)" \
    awk '{ split($3, s, "="); exit !(s[2] >= 2) }' check.out
check "every host rlock ran its critical section (exit 0)" awk '$2 != 0 { exit 1 }' hosts.status
check "the firmware's connection was killed mid-hold" [ "$killed" = 1 ]
check "the firmware reconnected (handshake again) and kept the lock" \
    grep -Eq '^fw: done .* syncs=([2-9]|[1-9][0-9]+) .* ok$' fw.out
# Each pass of the superloop follows an event (a UART byte, a deadline):
# ~200 in a run. A loop that spins instead of sleeping makes tens of
# thousands during the reconnect alone.
passes=$(sed -n 's/^fw: done .* passes=\([0-9]*\) .*/\1/p' fw.out)
check "the superloop slept between events (${passes:-?} passes, fewer than 10000)" [ "${passes:-99999}" -lt 10000 ]
check "the lock is free at the end" [ "$(rcli EXISTS "$KEY")" = 0 ]
if [ "$failed" != 0 ]; then
    echo "---- fw.out"; cat fw.out
    echo "---- cs.log"; cat cs.log
    echo "---- checks"; cat check.out
    echo "---- host exit statuses"; cat hosts.status
fi
cd - >/dev/null || exit 1
finish
