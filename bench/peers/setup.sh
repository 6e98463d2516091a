#!/bin/sh
# bench/peers/setup.sh - install what `make bench`'s peer and footprint rows
# use; never fails (a row whose peer is missing says "skipped: <why>").
#   - node-redlock, redis-semaphore, ioredis: `npm ci` into bench/node_modules
#     (ignored by git) from bench/package.json + package-lock.json, which pin
#     exact versions; re-run only when node_modules is older than the lock
#   - redis-py: Debian's python3-redis (for /usr/bin/python3), apt-get as root
#   - valgrind (callgrind instruction counts): apt-get as root
cd "$(dirname "$0")/.." || exit 0
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
        echo "peers: npm ci (bench/node_modules) ..."
        log=${TMPDIR:-/tmp}/rlock-bench-npm-ci.log
        npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$log" && rm -f "$log" ||
            echo "peers: npm ci failed (see $log): the node rows will be skipped"
    fi
else
    echo "peers: node/npm not found: the node-redlock and redis-semaphore rows will be skipped"
fi
need=""
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import redis' >/dev/null 2>&1 || need="$need python3-redis"
command -v valgrind >/dev/null 2>&1 || need="$need valgrind"
if [ -n "$need" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "peers: apt-get install$need ..."
        export DEBIAN_FRONTEND=noninteractive
        { apt-get install -y -qq $need || { apt-get update -qq && apt-get install -y -qq $need; }; } >/dev/null 2>&1 ||
            echo "peers: apt-get install$need failed: those rows will be skipped"
    else
        echo "peers: not installed:$need (not root): those rows will be skipped"
    fi
fi
exit 0
