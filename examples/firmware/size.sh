#!/bin/sh
# examples/firmware/size.sh - rlock's share of the firmware image (the README
# table): rlock's implementation compiled in a file of its own with the
# firmware's flags and configuration; the link map gives each object's sections.
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
python3 - "$D/fw.map" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
i = [k for k, l in enumerate(lines) if l.startswith('Linker script and memory map')][0]
tot, pend = {}, None
for l in lines[i:]:
    m = re.match(r'^ (\.[\w\.\-\$]+)\s*$', l)
    if m: pend = m.group(1); continue
    m = re.match(r'^ (\.[\w\.\-\$]+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)$', l)
    if not m: continue
    sec = m.group(1) or pend; pend = None
    base = '.' + sec.split('.')[1] if sec else ''
    if base not in ('.text', '.rodata', '.data', '.bss'): continue
    o = m.group(4).split('/')[-1]
    who = 'rlock' if 'rlock_impl' in o else 'firmware' if o == 'main.o' else 'startup' if 'startup' in o else 'newlib/libgcc'
    tot[(who, base)] = tot.get((who, base), 0) + int(m.group(3), 16)
for k in sorted(tot): print('%-14s %-8s %6d' % (k[0], k[1], tot[k]))
PY
rm -rf "$D"
