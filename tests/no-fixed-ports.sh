#!/bin/sh
# tests/no-fixed-ports.sh - part of `make lint`: the tests take their ports
# from the system (rh_free_port, a started server's port), never a fixed one:
# a fixed port may be another program's (a developer's own Redis or Sentinel),
# and a regression that connects where it should not would reach it unseen.
# Flags, in tests/ (C sources and headers):
#   - Redis's and Sentinel's usual ports 6379-6381 and 26379-26381 anywhere;
#   - a loopback address with a literal port 1..65535 in a string
#     ("127.0.0.1:1", "localhost:26379", "[::1]:7000", "::1:6379").
# Left alone: ports 0 and over 65535 (refused by design: the tests of that),
# cluster replies' ports (data parsed, no socket: "+port\r\n:7000"), and
# examples/ (their 6379 is the documented default for a user's own Redis;
# the tests always give them a port).
# Prints each offending line; exit 1 if there is any.
set -u
cd "$(dirname "$0")" || exit 2
bad=$({ grep -nE '\b(6379|638[01]|26379|2638[01])\b' ./*.c ./*.h fuzz/*.c fuzz/*.h 2>/dev/null
      grep -niE '"[^"]*(127\.0\.0\.1|localhost|\[::1\]|::1):[1-9][0-9]*' ./*.c ./*.h fuzz/*.c fuzz/*.h 2>/dev/null |
          awk '{ s = $0; ok = 1
                 while (match(tolower(s), /(127\.0\.0\.1|localhost|\[::1\]|::1):[1-9][0-9]*/)) {
                     m = substr(s, RSTART, RLENGTH); sub(/.*:/, "", m)
                     if (m + 0 <= 65535) ok = 0
                     s = substr(s, RSTART + RLENGTH) }
                 if (!ok) print }'; } | sort -t: -k1,1 -k2,2n -u)
if [ -n "$bad" ]; then
    printf '%s\n' "$bad" | sed 's|^\./||'
    echo "no-fixed-ports: FAILED (use rh_free_port() or a started server's port)"
    exit 1
fi
echo "no-fixed-ports: ok (tests/ names no fixed port)"
