#!/bin/sh
# bench/old/gen.sh OUTDIR - the pre-engine library (commit bc01738, before
# issue 11's engine) for `make bench`'s side-by-side rows: its rlock.h and
# adapters/rlock_posix.h from git, every rlock_/RLOCK_ name renamed to
# rlockv0_/RLOCKV0_ so that bench/old/old.c can link it beside today's
# rlock.h in one binary. Without that commit in the repository (a shallow
# clone, a tarball) it writes OUTDIR/rlockv0_posix.h defining only
# RLOCKV0_MISSING with the reason: bench prints those rows as skipped.
set -u
out=${1:?usage: $0 OUTDIR}
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
rev=bc01738
mkdir -p "$out"
cd "$(dirname "$0")/../.." || exit 1
rename() { sed -e 's/rlock_/rlockv0_/g' -e 's/RLOCK_/RLOCKV0_/g' -e 's/\bRLOCK\([A-Z]*\)\b/RLOCKV0\1/g'; }
if git show "$rev:rlock.h" > "$out/rlockv0.h.tmp" 2>/dev/null &&
   git show "$rev:adapters/rlock_posix.h" > "$out/rlockv0_posix.h.tmp" 2>/dev/null; then
    rename < "$out/rlockv0.h.tmp" > "$out/rlockv0.h"
    rename < "$out/rlockv0_posix.h.tmp" | sed 's|#include "\.\./rlock\.h"|#include "rlockv0.h"|' > "$out/rlockv0_posix.h"
else
    printf '#define RLOCKV0_MISSING "commit %s not in this clone (git fetch --unshallow)"\n' "$rev" > "$out/rlockv0_posix.h"
fi
rm -f "$out/rlockv0.h.tmp" "$out/rlockv0_posix.h.tmp"
