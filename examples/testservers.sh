# testservers.sh - sourced by examples/demo.sh and tests/install-check.sh
# (from the checkout's root): throwaway redis-servers through
# build/rlock-testserver (tests/harness.h: free loopback ports, temp dirs,
# no persistence), stopped by PID when the helper reads EOF.
# The caller has $tmp (its temp dir) and a fail function. POSIX sh.
helper=

# servers_start N: start N servers and wait (10 s bound) until they answer;
# "PORT PID" of each is then a line of $tmp/servers. Fd 3 stays open to the
# helper's stdin until servers_stop.
# shellcheck disable=SC2154 # $tmp is the caller's
servers_start() {
    mkfifo "$tmp/ctl" || fail "mkfifo failed"
    ./build/rlock-testserver "$1" <"$tmp/ctl" >"$tmp/servers" &
    helper=$!
    exec 3>"$tmp/ctl"
    i=0
    until grep -q '^ready$' "$tmp/servers" 2>/dev/null; do
        kill -0 "$helper" 2>/dev/null || fail "could not start redis-server"
        i=$((i + 1))
        [ $i -le 100 ] || fail "redis-server did not come up in 10 s"
        sleep 0.1
    done
}

# servers_stop: EOF to the helper, which stops its servers by PID and
# removes their dirs; waits for it. Safe to call when none was started.
servers_stop() {
    exec 3>&-
    [ -n "$helper" ] && wait "$helper"
    helper=
}
