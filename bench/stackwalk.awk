# bench/stackwalk.awk - worst-case stack of each public rlock_* function from
# gcc's call graph (-fcallgraph-info=su: a .ci file, VCG). Used by bench/ram.sh.
#   awk -v cfg=NAME -v tgt=TARGET -f bench/stackwalk.awk core.ci
# A function's worst case is its own frame plus the deepest of its callees'
# (a callee inlined into it is inside its frame already). Callees the graph
# cannot see into are left out of the figure and named instead:
#   hook      an indirect call: the transport's send/recv/connect/close/wait/
#             fd/idle/error and rlock_config's now_ms/random_bytes/sleep_ms/
#             on_lost - their stack is the user's
#   platform  an external function with no frame in the graph (the
#             RLOCK_NOW_MS / RLOCK_RANDOM_BYTES / RLOCK_SLEEP_MS macros of
#             bench/size/core.c)
#   libc      memcpy, memmove, memset, memcmp, memchr, strlen and the
#             compiler's helpers (__aeabi_*, __udivdi3, ...): small leaves
# -v path=1 adds "stackpath CFG TGT FUNCTION f(frame)>g(frame)>...", the
# deepest chain. Prints "stack CFG TGT FUNCTION BYTES" and, when any, "stackcallee CFG TGT
# FUNCTION hook,platform,libc"; "stackrecursion CFG TGT A->B" for each cycle
# (the core has none: a cycle makes the figure a lower bound); "stackdynamic
# CFG TGT FUNCTION" for a frame gcc could not bound (VLA, alloca).
# rlock's own indirect calls: the primitives' parts that rlock.h reaches
# through rlock__set_all's pointers (section 6.4b), from these callers (the
# names their bodies may have after inlining; each one present gets the edges).
BEGIN {
    split("rlock__enc_lock rlock__encode_lock rlock__round_submit", c1, " ")
    for (k in c1) INDIRECT[c1[k]] = "rlock__enc_multi rlock__enc_sem_args"
    split("rlock__round_answer rlock__op_reply rlock__deliver rlock__client_pump", c2, " ")
    for (k in c2) INDIRECT[c2[k]] = "rlock__parse_info"
    split("rlock__op_run rlock__client_step", c3, " ")
    for (k in c3) INDIRECT[c3[k]] = "rlock__admin_round_done"
    INDIRECT["rlock_acquire_begin"] = "rlock__multi_aux"
}
function bare(t) { sub(/.*:/, "", t); sub(/\..*/, "", t); return t }
function short(t,   i) { i = index(t, ":"); return i && substr(t, 1, 1) == "/" ? substr(t, i + 1) : t }
function kind(n) {
    if (n == "__indirect_call") return "hook"
    if (n ~ /^(memcpy|memmove|memset|memcmp|memchr|strlen|strchr|abort|__assert_func|__aeabi_.*|__.*di3|__.*si3|__.*df.*|__.*sf.*|__clz.*|__ctz.*|__popcount.*)$/) return "libc"
    return "platform"
}
# depth(n): worst stack from entering n; sets U[n] to the unknown kinds reached.
function depth(n,   k, e, d, best, s, u) {
    if (n in D) return D[n]
    if (n in ON) { REC[n] = 1; return 0 }
    if (!(n in SELF)) { U[n] = kind(short(n)); D[n] = 0; return 0 }
    ON[n] = 1; best = 0; u = ""
    for (k = 1; k <= NE[n]; k++) {
        e = E[n, k]
        d = depth(e)
        if (d > best) { best = d; NEXT[n] = e }
        u = merge(u, U[e])
    }
    delete ON[n]
    D[n] = SELF[n] + best; U[n] = u
    return D[n]
}
function merge(a, b,   i, m, x, out) {
    out = a
    m = split(b, x, ",")
    for (i = 1; i <= m; i++) if (x[i] != "" && index("," out ",", "," x[i] ",") == 0) out = out == "" ? x[i] : out "," x[i]
    return out
}
/^node:/ {
    t = $0; sub(/.*title: "/, "", t); sub(/".*/, "", t)
    l = $0; sub(/.*label: "/, "", l); sub(/".*/, "", l)
    if (match(l, /\\n[0-9]+ bytes \(/)) {
        b = substr(l, RSTART + 2); sub(/ .*/, "", b)
        SELF[t] = b + 0
        if (l ~ /dynamic/ && l !~ /bounded/) DYN[t] = 1
    }
}
/^edge:/ {
    s = $0; sub(/.*sourcename: "/, "", s); sub(/".*/, "", s)
    t = $0; sub(/.*targetname: "/, "", t); sub(/".*/, "", t)
    if (!((s, t) in SEEN)) { SEEN[s, t] = 1; E[s, ++NE[s]] = t }
}
END {
    for (n in SELF) NAMED[bare(n)] = n
    for (n in SELF) if (bare(n) in INDIRECT) {
        m = split(INDIRECT[bare(n)], to, " ")
        for (k = 1; k <= m; k++)
            if ((to[k] in NAMED) && !((n, NAMED[to[k]]) in SEEN)) { SEEN[n, NAMED[to[k]]] = 1; E[n, ++NE[n]] = NAMED[to[k]] }
    }
    for (n in SELF) {
        f = short(n)
        if (f !~ /^rlock_/ || f ~ /^rlock__/) continue
        d = depth(n)
        printf "stack %s %s %s %d\n", cfg, tgt, f, d
        if (U[n] != "") printf "stackcallee %s %s %s %s\n", cfg, tgt, f, U[n]
        if (path) {
            p = ""
            for (x = n; x != ""; x = (x in NEXT) ? NEXT[x] : "") p = p (p == "" ? "" : ">") short(x) "(" SELF[x] + 0 ")"
            printf "stackpath %s %s %s %s\n", cfg, tgt, f, p
        }
    }
    for (n in SELF) { depth(n); if (n in DYN) printf "stackdynamic %s %s %s\n", cfg, tgt, short(n) }
    for (n in REC) printf "stackrecursion %s %s %s\n", cfg, tgt, short(n)
}
