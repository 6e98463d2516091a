#!/bin/sh
# Make sure what the tests need is installed. As root it installs what is
# missing with apt-get (Debian); otherwise it says what to install and fails.
#   ensure-deps.sh          redis-server (the tests start their own throwaway
#                           servers), hiredis headers (the hiredis adapter
#                           and the test harness), libuv and libevent headers
#                           (examples/libuv_loop.c, libevent_loop.c), OpenSSL
#                           headers and the openssl command (the TLS suite):
#                           `make test`
#   ensure-deps.sh cross    also what `make cross` needs (tests/cross/run.sh):
#                           a 32-bit x86 compiler (gcc -m32 if it works, else
#                           gcc-i686-linux-gnu) and hiredis for i386 (multiarch),
#                           the big-endian PowerPC cross compiler and qemu-user,
#                           arm-none-eabi-gcc with newlib, qemu-system-arm
#   ensure-deps.sh firmware also what `make firmware` needs (examples/firmware):
#                           arm-none-eabi-gcc with newlib, qemu-system-arm,
#                           redis-cli
#   ensure-deps.sh install  also what `make install-check` needs: cmake,
#                           pkg-config, man-db and groff
# gcc-multilib and Debian's *-linux-gnu cross compilers conflict: an existing
# gcc -m32 is used rather than replaced.
missing=""
i386=0
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
[ -f /usr/include/hiredis/hiredis.h ] || missing="$missing libhiredis-dev"
# examples/libuv_loop.c and examples/libevent_loop.c (tests/test_examples.c runs them)
[ -f /usr/include/uv.h ] || missing="$missing libuv1-dev"
[ -f /usr/include/event2/event.h ] || missing="$missing libevent-dev"
# the TLS adapter's suite (test_tls) and the rlock command's rediss://
[ -f /usr/include/openssl/ssl.h ] || missing="$missing libssl-dev"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
if [ "$RLOCK_WANT_VALGRIND" = 1 ]; then command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"; fi
for want in "$@"; do
    case $want in
    cross)
        if ! command -v i686-linux-gnu-gcc >/dev/null 2>&1 &&
           ! echo 'int main(void){return 0;}' | gcc -m32 -x c - -o /dev/null >/dev/null 2>&1; then
            missing="$missing gcc-i686-linux-gnu libc6-dev-i386-cross"
        fi
        if [ ! -f /usr/lib/i386-linux-gnu/libhiredis.so ]; then missing="$missing libhiredis-dev:i386"; i386=1; fi
        command -v powerpc-linux-gnu-gcc >/dev/null 2>&1 || missing="$missing gcc-powerpc-linux-gnu libc6-dev-powerpc-cross"
        command -v qemu-ppc >/dev/null 2>&1 || missing="$missing qemu-user"
        command -v qemu-system-arm >/dev/null 2>&1 || missing="$missing qemu-system-arm"
        command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing="$missing gcc-arm-none-eabi"
        [ -f /usr/lib/arm-none-eabi/lib/thumb/v6-m/nofp/librdimon.a ] || missing="$missing libnewlib-arm-none-eabi"
        ;;
    firmware)
        command -v qemu-system-arm >/dev/null 2>&1 || missing="$missing qemu-system-arm"
        command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing="$missing gcc-arm-none-eabi"
        [ -f /usr/lib/arm-none-eabi/lib/thumb/v6-m/nofp/librdimon.a ] || missing="$missing libnewlib-arm-none-eabi"
        command -v redis-cli >/dev/null 2>&1 || missing="$missing redis-tools"
        ;;
    install)
        command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
        command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
        command -v man >/dev/null 2>&1 || missing="$missing man-db"
        command -v groff >/dev/null 2>&1 || missing="$missing groff-base"
        ;;
    *) echo "ensure-deps: unknown set '$want' (cross, firmware, install)" >&2; exit 64 ;;
    esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    if [ $i386 = 1 ] && ! dpkg --print-foreign-architectures | grep -qx i386; then
        dpkg --add-architecture i386 || { echo "ensure-deps: dpkg --add-architecture i386 failed" >&2; exit 1; }
    fi
    # An index that fails to refresh (a mirror mid-sync) is not fatal: the
    # install below says so if a package really cannot be found.
    apt-get update -qq >/dev/null 2>&1
    apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
        echo "ensure-deps: apt-get install$missing failed" >&2; exit 1; }
    exit 0
fi
[ $i386 = 1 ] && echo "ensure-deps: libhiredis-dev:i386 needs: sudo dpkg --add-architecture i386 && sudo apt-get update" >&2
echo "ensure-deps: missing:$missing" >&2
echo "ensure-deps: install them, e.g.: sudo apt-get install$missing" >&2
exit 1
