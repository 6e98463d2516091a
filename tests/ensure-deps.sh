#!/bin/sh
# Make sure what `make test` needs is installed: redis-server (the tests start
# their own throwaway servers), hiredis headers (the hiredis adapter and the
# test harness), libuv and libevent headers (two of the examples). As root
# it installs them with apt-get; otherwise it says what to install and fails.
missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
[ -f /usr/include/hiredis/hiredis.h ] || missing="$missing libhiredis-dev"
# examples/libuv_loop.c and examples/libevent_loop.c (tests/test_examples.c runs them)
[ -f /usr/include/uv.h ] || missing="$missing libuv1-dev"
[ -f /usr/include/event2/event.h ] || missing="$missing libevent-dev"
if [ "$RLOCK_WANT_VALGRIND" = 1 ]; then command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"; fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null || {
        echo "ensure-deps: apt-get install$missing failed" >&2; exit 1; }
    exit 0
fi
echo "ensure-deps: missing:$missing" >&2
echo "ensure-deps: install them, e.g.: sudo apt-get install$missing" >&2
exit 1
