#!/usr/bin/env python3
"""size/mapsum.py MAP OBJ - the bytes a linked program keeps of one object
file, from the GNU ld map (-Wl,-Map), printed as "text rodata data bss".
Each input section counts as its own kind (.rodata.* inside a firmware's .text
output section is .rodata). Each output section is split among the input
sections by address: an input
section owns the bytes from its address to the next one's (so merged string
sections, which the map lists with their size before merging, count once,
and the sum over all objects is the output section). Sections that
--gc-sections discarded are listed before the memory map: not counted."""
import re, sys
lines = open(sys.argv[1]).read().split('\n')
obj = sys.argv[2]
start = [k for k, l in enumerate(lines) if l.startswith('Linker script and memory map')][0]
alias = {'text': 'text', 'rodata': 'rodata', 'srodata': 'rodata', 'data': 'data', 'sdata': 'data',
         'bss': 'bss', 'sbss': 'bss'}
kinds = dict.fromkeys(['text', 'rodata', 'data', 'bss'], 0)
out = None      # [kind, end address, [(addr, size, file)]]
outs = []
pend = None
for l in lines[start:]:
    m = re.match(r'^(\.[^\s]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)', l) or re.match(r'^(\.[^\s]+)\s*$', l)
    if m and not l.startswith(' '):
        k = alias.get(m.group(1).split('.')[1]) if m.group(1).count('.') == 1 else None
        out = [k, int(m.group(2), 16) + int(m.group(3), 16), []] if k and m.lastindex == 3 else None
        if out: outs.append(out)
        pend = None
        continue
    m = re.match(r'^ (\.[^\s]+|COMMON)\s*$', l)
    if m:
        pend = m.group(1); continue
    m = re.match(r'^ (\.[^\s]+|COMMON)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)$', l)
    if m and out and (m.group(1) or pend):
        name = m.group(1) or pend
        # a firmware's linker script may put .rodata inside .text: the input section tells
        k = 'bss' if name == 'COMMON' else alias.get(name.split('.')[1]) if name.count('.') >= 1 else None
        out[2].append((int(m.group(2), 16), int(m.group(3), 16), m.group(4), k or out[0]))
    pend = None
for kind, end, ins in outs:
    ins = [x for x in ins if x[1] > 0]
    ins.sort(key=lambda x: x[0])
    for n, (a, s, f, k) in enumerate(ins):
        if n > 0 and ins[n - 1][0] == a: continue
        # Of the sections listed at one address, the largest owns it: a merged
        # string section can end up empty at the address of the next one
        # and is still listed with its size before merging.
        same = [x for x in ins[n:] if x[0] == a]
        a, s, f, k = max(same, key=lambda x: x[1])
        nxt = next((b[0] for b in ins[n + 1:] if b[0] > a), end)
        if f.endswith(obj): kinds[k] += min(s, nxt - a)
print(kinds['text'], kinds['rodata'], kinds['data'], kinds['bss'])
