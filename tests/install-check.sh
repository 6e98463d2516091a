#!/bin/sh
# tests/install-check.sh - `make install-check` (part of `make test`): rlock
# installed like a library, and used the ways a user would.
#
#  1. make install DESTDIR=<tmp> PREFIX=/opt/rlock-check: exactly the
#     expected files, nothing outside the prefix, DESTDIR written nowhere
#  2. the man page: renders with `man -l`, no groff warnings (-ww), the
#     version of `rlock --version`, every option of `rlock --help`
#     and of `rlock check --help`
#  3. tests/install/app.c (#include <rlock/...>) built three ways - with
#     pkg-config, with CMake find_package(rlock VERSION EXACT) from the
#     staged prefix, with CMake add_subdirectory(<this checkout>) - each run
#     against a throwaway redis-server: lock, rival refused, release, rival
#     gets it; the installed `rlock` command takes a lock there too
#  4. make uninstall with the same DESTDIR/PREFIX: no file left, rlock's
#     own directories gone
# Needs build/rlock, build/rlock-testserver, cmake, pkg-config, man, groff
# (`make install-check` builds and installs them). Prints one line per step;
# the last is "install-check: ok" or "install-check: FAILED".
set -u
cd "$(dirname "$0")/.." || exit 1
src=$(pwd)
prefix=/opt/rlock-check
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlock-install.XXXXXX") || exit 1
stage=$tmp/stage
root=$stage$prefix
. ./examples/testservers.sh
cleanup() {
    trap - EXIT INT TERM
    servers_stop # the helper stops its server by PID
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
    echo "install-check: $*"
    echo "install-check: FAILED"
    exit 1
}
# quiet CMD...: run it, show its output only when it fails
quiet() {
    "$@" >"$tmp/out" 2>&1 || { cat "$tmp/out"; return 1; }
}

version=$(sed -n 's/^#define RLOCK_VERSION_STRING "\(.*\)"/\1/p' rlock.h)
[ -n "$version" ] || fail "no RLOCK_VERSION_STRING in rlock.h"

# ---- 1. install ---------------------------------------------------------
quiet make --no-print-directory install DESTDIR="$stage" PREFIX="$prefix" || fail "make install failed"
expected=$( { echo bin/rlock; echo include/rlock/rlock.h
              for a in adapters/*.h; do echo "include/rlock/$a"; done
              echo share/cmake/rlock/rlockConfig.cmake; echo share/cmake/rlock/rlockConfigVersion.cmake
              echo share/man/man1/rlock.1; echo share/pkgconfig/rlock.pc; } | LC_ALL=C sort)
got=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
[ "$got" = "$expected" ] || fail "installed files differ from the expected list:
$(printf '%s\n' "$expected" >"$tmp/want"; printf '%s\n' "$got" | diff "$tmp/want" - )"
outside=$(find "$stage" \( -type f -o -type l \) ! -path "$root/*")
[ -z "$outside" ] || fail "files outside PREFIX: $outside"
grep -rq "$stage" "$root" && fail "DESTDIR ($stage) is written into an installed file"
[ -x "$root/bin/rlock" ] || fail "bin/rlock is not executable"
[ "$(stat -c %a "$root/include/rlock/rlock.h")" = 644 ] || fail "include/rlock/rlock.h is not mode 644"
grep -qx "prefix=$prefix" "$root/share/pkgconfig/rlock.pc" || fail "rlock.pc does not say prefix=$prefix"
echo "install-check: make install DESTDIR=... PREFIX=$prefix: $(echo "$got" | wc -l) files, as expected"

# ---- 2. the command and its man page ------------------------------------
"$root/bin/rlock" --version | grep -q "^rlock $version " || fail "installed rlock --version is not $version"
grep -q "^\.TH RLOCK 1 .*\"rlock $version\"" "$root/share/man/man1/rlock.1" ||
    fail "man page: .TH does not say rlock $version"
warn=$(groff -man -Tutf8 -ww -z "$root/share/man/man1/rlock.1" 2>&1)
[ -z "$warn" ] || fail "man page: groff warnings: $warn"
MANWIDTH=80 man --warnings -l "$root/share/man/man1/rlock.1" >"$tmp/man.txt" 2>"$tmp/man.err" || fail "man -l failed: $(cat "$tmp/man.err")"
[ -s "$tmp/man.err" ] && fail "man page: warnings: $(cat "$tmp/man.err")"
grep -q '^NAME' "$tmp/man.txt" && grep -q '^EXIT STATUS' "$tmp/man.txt" || fail "man -l output lacks NAME / EXIT STATUS"
for opt in $("$root/bin/rlock" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$tmp/man.txt" || fail "man page: option $opt of rlock --help is missing"
done
for opt in $("$root/bin/rlock" check --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$tmp/man.txt" || fail "man page: option $opt of rlock check --help is missing"
done
echo "install-check: rlock $version, man page renders without warnings and has every option of --help and check --help"

# ---- a throwaway redis-server --------------------------------------------
servers_start 1
port=$(sed -n '1s/ .*//p' "$tmp/servers")

# ---- 3. a program built three ways, and the installed command -----------
# Sources copied out of the checkout: nothing resolves against it by accident.
mkdir "$tmp/app" && cp tests/install/app.c tests/install/CMakeLists.txt "$tmp/app/" || fail "copy failed"
cc=${CC:-cc}
export PKG_CONFIG_PATH="$root/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
cflags=$(pkg-config --cflags rlock) || fail "pkg-config --cflags rlock failed"
libs=$(pkg-config --libs rlock) || fail "pkg-config --libs rlock failed"
cflags=$(echo $cflags) libs=$(echo $libs) # pkg-config pads with a space
[ "$(pkg-config --modversion rlock)" = "$version" ] || fail "pkg-config --modversion rlock is not $version"
[ "$cflags" = "-I$root/include" ] || fail "pkg-config --cflags rlock: '$cflags', want -I$root/include"
[ -z "$libs" ] || fail "pkg-config --libs rlock: '$libs', want nothing (header-only)"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# shellcheck disable=SC2086
quiet "$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror $cflags '-DHOW="pkg-config"' "$tmp/app/app.c" $libs -o "$tmp/app-pkgconfig" ||
    fail "pkg-config: the program did not build"
quiet "$tmp/app-pkgconfig" "$port" || fail "pkg-config: the program failed"
echo "install-check: $(cat "$tmp/out")"

quiet cmake -S "$tmp/app" -B "$tmp/b-find" -DCMAKE_PREFIX_PATH="$root" -DRLOCK_VERSION="$version" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF || fail "find_package: cmake configure failed"
grep -qx "rlock_DIR:PATH=$root/share/cmake/rlock" "$tmp/b-find/CMakeCache.txt" ||
    fail "find_package: found $(grep '^rlock_DIR' "$tmp/b-find/CMakeCache.txt"), not the staged install"
quiet cmake --build "$tmp/b-find" || fail "find_package: the program did not build"
quiet "$tmp/b-find/app" "$port" || fail "find_package: the program failed"
echo "install-check: $(cat "$tmp/out")"

quiet cmake -S "$tmp/app" -B "$tmp/b-sub" -DRLOCK_SOURCE_DIR="$src" || fail "add_subdirectory: cmake configure failed"
quiet cmake --build "$tmp/b-sub" || fail "add_subdirectory: the program did not build"
quiet "$tmp/b-sub/app" "$port" || fail "add_subdirectory: the program failed"
echo "install-check: $(cat "$tmp/out")"

"$root/bin/rlock" -S "127.0.0.1:$port" -n install-check:cli sh -c 'test -n "$RLOCK_TOKEN"' ||
    fail "the installed rlock command did not run its command under the lock (exit $?)"
echo "install-check: the installed rlock command took a lock and ran its command"

# ---- 4. uninstall -------------------------------------------------------
quiet make --no-print-directory uninstall DESTDIR="$stage" PREFIX="$prefix" || fail "make uninstall failed"
left=$(find "$stage" \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left: $left"
for d in include/rlock share/cmake/rlock; do
    [ ! -e "$root/$d" ] || fail "make uninstall left the directory $d"
done
echo "install-check: make uninstall removed every file and rlock's directories"
echo "install-check: ok"
