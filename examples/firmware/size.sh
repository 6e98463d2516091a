#!/bin/sh
# examples/firmware/size.sh - rlock's share of the firmware image (the README
# table): rlock's implementation compiled in a file of its own with the
# firmware's flags and configuration; the link map gives each object's sections
# (bench/size/mapsum.py: merged strings counted once).
cd "$(dirname "$0")/../.." || exit 1
D=$(mktemp -d "${TMPDIR:-/tmp}/rlock-fwsize.XXXXXX")
sed -n '/^#define RLOCK_NO_POSIX/,/^#define RLOCK_WHY_LEN/p' examples/firmware/main.c > "$D"/rlock_impl.c
printf '#define RLOCK_IMPLEMENTATION\n#include "rlock.h"\n' >> "$D"/rlock_impl.c
sed 's/^#define RLOCK_IMPLEMENTATION$//' examples/firmware/main.c > "$D"/main.c
cp examples/firmware/board.h "$D"/
CC="arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mno-unaligned-access -std=c99 -Os -g -ffunction-sections -fdata-sections -I."
$CC -c "$D"/rlock_impl.c -o "$D"/rlock_impl.o
$CC -c "$D"/main.c -o "$D"/main.o
$CC -c tests/cross/startup.c -o "$D"/startup.o
arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb "$D"/main.o "$D"/rlock_impl.o "$D"/startup.o -nostartfiles --specs=rdimon.specs -Ltests/cross -T cortex-m4.ld -Wl,--gc-sections -Wl,-Map="$D"/fw.map -o "$D"/fw.elf
arm-none-eabi-size "$D"/fw.elf
for o in /rlock_impl.o /main.o /startup.o; do
    printf '%-12s .text .rodata .data .bss: %s\n' "${o#/}" "$(python3 bench/size/mapsum.py "$D"/fw.map "$o")"
done
rm -rf "$D"
