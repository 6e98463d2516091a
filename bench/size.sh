#!/bin/sh
# bench/size.sh [--kv] - `make size`: what rlock costs in a LINKED program.
#
# Each configuration is a small program under bench/size/ (smallest.c,
# default.c, full.c, primitives.c, cluster.c) using what that configuration
# is for; rlock's implementation is compiled into an object of its own
# (bench/size/core.c: RLOCK_NO_POSIX, the hooks as extern calls, asserts off)
# and the board hooks, a transport and the few libc functions it calls are
# stand-ins in another (bench/size/stubs.c). Linked with -Wl,--gc-sections
# and a map; bench/size/mapsum.py sums the kept .text/.rodata/.data/.bss of
# rlock's object alone. Targets: Cortex-M0 and Cortex-M4 (arm-none-eabi-gcc),
# RV32 (riscv64-unknown-elf-gcc -march=rv32imac), x86-64 (gcc), each at -Os
# and -O2. RAM and stack figures come from bench/ram.sh --kv.
#
# Writes build/size/sizes.kv and regenerates docs/SIZE.md (commit it).
# Budgets (Cortex-M4 -Os): the goals are issue 15's - smallest .text+.rodata
# <= 4096 B, full .text <= 10240 B; what is ENFORCED is the limit reached so
# far (RLOCK_SIZE_LIMIT_SMALLEST / RLOCK_SIZE_LIMIT_FULL, below): over it
# `make size` exits 1; the gap to each goal is printed. RAM: one lock on one
# node in the smallest configuration <= 2048 B (bench/ram.sh, RLOCK_RAM_BUDGET),
# enforced as it is. A missing cross
# compiler skips its target (a "not measured" row), except arm-none-eabi-gcc
# under CI=true (exit 1). docs/SIZE.md is not checked for being current by
# CI: its figures depend on the compilers' versions.
# --kv prints the "size CONFIG TARGET OPT text rodata data bss" lines only.
set -u
cd "$(dirname "$0")/.." || exit 1
kv=0; [ "${1:-}" = --kv ] && kv=1
out=${BUILD:-build}/size; mkdir -p "$out"
goal_smallest=4096; goal_full=10240
# The limits enforced: the figures reached (Cortex-M4 -Os, gcc 12.2.1:
# smallest 7,558 B, full 18,640 B) with a little room for compiler
# versions. Lower them as the code shrinks; never raise them to pass a
# change of the same branch. (Raised once, at the merge of issues 12 and 13
# into this work: their code - queued mark, scripts-ran fast path, wake nodes,
# semaphore slots - took smallest from 13,645 and full from 19,910 B. Full
# raised once more, 21,504 -> 23,040, at the merge of main's deploy2 and
# cluster work: versioned function names + CLIENT SETNAME, the cluster's
# streaming reply reader and sharded pub/sub in the exchange took full .text
# from 21,256 to 22,870 B; smallest stayed within its limit, 14,068 B.
# Smallest lowered to 11,264 when it got the compact engine, rlock.h 6.8c:
# 14,068 -> 10,621 B, with main's rlock__divmod and encoder. Full lowered to
# 19,456 after the exchange/client and rounds/operations shrinking: 22,870 ->
# 19,144 B - no 64-bit division, Pub/Sub events classified once, a two-pass
# encoder, the primitives' parts reached through their script set.
# Full lowered to 18,720 when the general engine moved to 32-bit time
# (rlock__ms) and 32-bit lease arithmetic: 19,298 -> 18,576 B.
# Smallest lowered to 7,710 (branch micro): error texts compiled out
# (RLOCK_NO_ERROR_TEXTS: "rlock.h:LINE"), the compact engine on 32-bit time
# with its own public calls, answer store and AUTH/SELECT encoding, the
# simple lock's three scripts only: 10,621 -> 7,558 B (with t32's 32-bit
# lease arithmetic and the 64-bit validity end). Full lowered to 17,490
# after shrinking the rounds, operations and encoder (branch fo): 18,632 ->
# 17,318 B (the 64-bit validity end included) - the primitives' request
# layouts, inspect answers and semaphore notices behind rlock__set_all, one
# tally, table-driven script choice, hot fields first in rlock_lock / rlock_op.
# Full lowered to 16,880 after the exchange/client shrinking (branch fx)
# merged on top: 17,318 -> 16,718 B - a table-driven RESP reader, the
# handshake and fixed requests without rlock_resp_encode, the exchange
# through one pointer to the connection, rlock__why with two numbers;
# smallest 7,474 -> 7,491 B, within its limit.
# Full lowered to 16,710 after shrinking the rounds and operations (branch
# gr): 16,830 -> 16,542 B - the cluster's SPUBLISH padding, ASKING and
# sunsubscribe handler behind rlock_client.shard, a Redlock semaphore's
# slot hop behind rlock__set_all, one tally per finished round, answers
# stored by what the round wants.
# Full lowered to 16,610 (branch gp: the exchange and client again):
# 16,830 -> 16,438 B - the RESP reader's one-result value reader and 32-bit
# lengths, connect's fixed requests copied as bytes, [UN]SUBSCRIBE from the
# tag, one commands count per step pass, transports reached through
# rlock_interest.conn; smallest unchanged at 7,541 B: its limit to 7,620.
# Branch pub shrank the shared public calls and byte writers: 7,541 ->
# 7,219 B and 16,830 -> 16,600 B alone - one decimal routine (32-bit without
# error texts), one reason per check chain, 32-bit wait / validity / seed
# arithmetic, the error words as one string; with main's gr and gp merged:
# smallest 7,219 B, full 15,940 B, limits +1 %: 7,290 / 16,090.)
# Smallest lowered to 7,145 (branch ce): the compact engine's one-pass reply
# reader with 32-bit numbers (no fencing), 32-bit answers in its rounds,
# shared failure exits: 7,541 -> 7,071 B.)
# All four merged on main (with own and the config clamp): smallest 6,795 B,
# full 15,982 B (Cortex-M4 -Os, gcc 12.2.1); limits +1 %: 6,865 / 16,140.
# Branch tpub (the shared public calls and the encoder): RLOCK_SMALLEST's
# requests from templates with the SHA1s as 20 bytes, one body for the
# compact acquire / extend / release begin, smaller config defaults and
# byte writers: 6,795 -> 6,420 B, full 15,982 -> 15,956 B; limits +1 %.
# Branch tiny on top (the compact engine judges each answer as it is read,
# keeps its own round/op structs with only its fields, reads only what a
# simple lock is answered with): 6,420 -> 6,213 B, full unchanged; +1 %.
# Raised once, 6,213 -> 6,289 B: a request that fails before it is sent is
# judged at the next run again, not at once (no recursion in the compact
# engine: bench/ram.sh's worst-case stack holds); +1 %: 6,350.
# Branch loop (the compact engine as one claim / answer / next-round path:
# c_store, c_reply, c_begin, c_commit, acquire_next_round and c_again folded
# in, round.queued and round.answered gone): 6,289 -> 6,043 B, full
# unchanged; +0.5 %: 6,075.
# Branch pub (the shared public layer): one RESP header/argument writer,
# the compact engine's error words searched inline, the blocking calls and
# the general engine's extend/release begins each one body, renew_poll one
# loop, the general engine's jitter generator 32-bit too, rlock__drift out
# of line, rlock__node_note inlined by the compact engine: smallest 6,289 ->
# 6,218 B alone, 5,975 B with loop's merged; full 16,018 -> 15,876 B;
# +0.5 %: 6,005 / 15,955.
# Branch gx (the general engine's encoder, rounds and connect): a lock
# script's arguments, the plain SET, WAIT, CLIENT SETNAME, ASKING and
# FUNCTION LOAD written from templates (rlock__enc_tpl, .rodata) by one
# writer; an attempt's parts committed as encoded and taken back together:
# full 16,018 -> 15,500 B alone, 15,358 B with loop and pub merged;
# smallest unchanged (5,965 B merged); full +0.5 %: 15,435.
# All four merged (and the compact engine's c_parse inlined): smallest
# 5,965 B; +0.5 %: 5,995.
# Branch cop (the compact op machine and the shared public layer): the
# judge as one decision tree (no retry / three-valued plain / fatal flags),
# answers always with their reply struct, the lease's validity from
# rlock__check_ttl, the compact rlock_lock in the order its code reads it,
# error words carrying their status, put_len checking each part where it
# writes it, rlock_step's own result: smallest 5,965 -> 5,516 B, full
# 15,206 -> 15,170 B; +0.5 %: 5,545 / 15,246.
# Branch cio (the compact engine's exchange: one line reader, the buffers
# emptied once by the claim, the wait without the interest walk, checks that
# cannot fail gone): smallest 5,965 -> 5,823 B; full unchanged; +0.5 %: 5,852.
# cop and cio merged: smallest 5,370 B; +0.5 %: 5,397.
# Branch cx (the compact engine across its exchange / op boundary: AUTH and
# SELECT written from templates by the request writer, one TX append; the
# round's copies of the op's ttl / cleanup / owner length gone from the
# template build; one node note per answer; the compact rlock_step one body):
# smallest 5,370 -> 5,257 B; full unchanged; +0.5 %: 5,283.
# gc (the exchange and client; compact-only inlining): smallest 5,257 -> 5,207 B; +0.5 %: 5,233.
# Branch sc (the compact engine: op_link / op_unlink / now / c_wants inlined,
# c_next returns the status, no hold count or op.holder_pttl kept there):
# smallest 5,257 -> 5,145 B, full 14,634 -> 14,616 B; +0.5 %: 5,171 / 14,689.
# gc and sc merged (with gr; one RLOCK__FEW macro for both branches' inline-in-compact helpers): smallest 5,103 B; +0.5 %: 5,129.
# No hold count and no op.holder_pttl in the compact rlock_lock (neither read there): smallest 5,083 B, RAM 1,764 B; +0.5 %: 5,108.
# Branch go (the general op machine; shared: lock_ok, renew_interval):
# smallest 5,257 -> 5,241 B; +0.5 %: 5,267.
# gr, gc, sc and go merged: smallest 5,079 B; +0.5 %: 5,104.
# Session of 2026-11-27, seven branches (cx3 compact exchange, cop3 compact op
# machine, pub3 public layer, ce4 compact second pass, lay3 compact struct
# layout for Thumb's short loads; gex3 / gop3 / gpub4 below): smallest
# 5,079 -> 4,761 B; +0.5 %: 4,785.
# Second session of 2026-11-27 (cs5 one Redis-error scan, cn5 the compact
# exchange and templates, cp5 / pd5 the public layer, cj6 the reader/judge
# boundary): smallest 4,761 -> 4,614 B; limit 4,633. Raised once at the
# end of it, for three correctness fixes (a lock's request waits for AUTH /
# SELECT; node.db SELECTed again on a connection shared with the program;
# an acquire script's error after its write released): 4,654 B; +0.5 %: 4,677.
# Session of 2026-11-28 (bug fixes only): 4,656 B (rlock_next_timeout_ms is 0
# while a connection is still to be made); the limit kept.
# Second session of 2026-11-28: one tree per operation in the compact
# engine's start, round and submit (-24 B), then +26 B for the re-init guard
# (rlock_lock_init on a handle whose op runs) and +4 B for renewal after a
# clock step-back: 4,662 B; the limit kept.
# Third session of 2026-11-28 (bug fixes only): +14 B for renewal (an extend
# in flight when validity ends is LOST then; validity 0 while the clock hook
# reads before the grant), +4 B for renew_poll's NULL next_ms text, +4 B
# from their interplay: 4,684 B; raised, +0.5 %: 4,707.
# Fourth session of 2026-11-28: +10 B for rlock_transport's due hook (see
# full, below): 4,694 B; the limit kept.
# Fifth session of 2026-11-28: +16 B for a blocking call no longer spinning
# beside another lock's finished op (test_smallest
# test_blocking_beside_done_op: 7.5 million clock reads in a 400 ms wait
# before): 4,710 B; raised, +0.5 %: 4,733. Kept after +14 B for max_hold_ms
# through a clock step back (the general engine's fix, which did not fit
# the old limit by 1 B): 4,724 B.
# Sixth session of 2026-11-28: +4 B for a cancelled extend / release none
# of whose bytes went out taken back, +12 B for an op cut off by
# rlock_client_init ended by its step alone, -10 B for two fields the
# compact engine never reads moved past the ones it does: 4,730 B; kept.
# Seventh session of 2026-11-28: cx7 (the compact error words: NOPERM's flag
# a bit, no AUTH-only words; config defaults as a table) -45 B, cop7 (the
# op machine: the token drawn by the first round, utoa in place, the state
# before the clock) -82 B, cj7 (the judge: scripted set once, arrays over 3
# elements refused at their count) -12 B, then +38 B (nbr: the begin calls
# no longer link the blocking wait - a begin-only program 4,575 -> 4,411 B): merged
# 4,629 B; lowered, +0.5 %: 4,652.
# Session of 2026-11-29: cs8 (the compact engine: the lease reads the clock,
# x.failing holds the status, x.closed and op.fail gone, the instance id
# written out when asked for) -34 B: 4,595 B; lowered, +0.5 %: 4,618.
# Second session of 2026-11-29: cq (op_finish leaves the slot owner, renew
# flag in the op, RLOCK_NO_ERROR_TEXTS texts as 2-byte offsets from an
# anchor line, c_line saturating by an immediate) -90 B, fx (round fields
# no compact build reads) -4 B, cq2 (renew_poll knows its renewal by
# op.renewing, a failed acquire ends in the judge, max_hold_ms as one sum)
# -32 B; the anchors' line numbers move the figure by +-4 B as lines above
# them come and go: 4,473 B; lowered, +0.5 %: 4,496.
# Third session of 2026-11-29: maxclients behind a password told from
# AUTH's refusal (rlock__c_refused) +10 B, cs (rlock__c_due_in without its
# self argument) -12 B, line numbers -4 B: 4,467 B; lowered, +0.5 %: 4,489.
# Fourth session of 2026-11-29: the compact engine without the SET NX PX fast
# path (every attempt the acquire script) -117 B and its blocking wait with
# wait() alone -58 B; cz (requests without the wait left, one script
# template, nil malformed, node timeout simplifications) -108 B; AUTH's or
# SELECT's reply that is not +OK refused +8 B: 4,194 B; lowered, +0.5 %: 4,215.
# Fifth session of 2026-11-29: an extend's or release's integer other than
# 1 or 0 refused +4 B; cs (error words carry their length, the template's
# and the texts' prefix NULs shared, text bases rounded to 64 lines) -24 B:
# 4,174 B; lowered, +0.5 %: 4,195.
limit_smallest=${RLOCK_SIZE_LIMIT_SMALLEST:-4195}
# The superloop program (bench/size/smallest.c -DSIZE_SUPERLOOP: the smallest
# configuration through the non-blocking calls only, as examples/firmware; informational,
# the budget is smallest.c's) is enforced at the figure reached too, so that
# no change trades it for smallest.c's (a blocking body shared with the begin
# calls made smallest.c 36 B smaller and this one 108 B larger: rejected).
# Fourth session of 2026-11-29: 4,022 B when first measured; +0.5 %: 4,042.
# Fifth: +4 B, -24 B (as smallest.c): 4,002 B; lowered, +0.5 %: 4,022.
limit_superloop=${RLOCK_SIZE_LIMIT_SUPERLOOP:-4022}
# Branch pump (the general engine's op machine: one walk keeps the
# subscriptions, the tally says a failed round's error, the lease worked out
# once, op timers within Thumb's short loads): full 16,018 -> 15,856 B alone,
# 15,728 B with pub's merged; +0.5 %: 15,807.
# gx with loop, pub and pump merged: full .text 15,206 B; +0.5 %: 15,282.
# Branch gxr (the general exchange, rounds and encoder: rlock__why's second
# number one word, RLOCK__INLINE where gcc -Os misjudged a helper, Pub/Sub
# kinds and [UN]SUBSCRIBE heads as tables, values read in place by
# rlock_resp_parse, one template filler, the version's digits in 32 bits):
# full .text 15,206 -> 14,862 B alone; smallest unchanged. With cop and cio
# merged: full .text 14,826 B, smallest 5,370 B; +0.5 %: 14,900 (and 5,397).
# Branch gop (the general op machine: 32-bit holder PTTL, the quorum
# inline, one walk in subs_listen, a dead clamp out of the backoff; one
# decision after a failed attempt with or without a cleanup; one reason and
# one owner copy in rlock_acquire_begin; no per-node answer shapes):
# 15,206 -> 15,022 B alone; with cop merged 14,986 B; +0.5 %: 15,061.
# gxr and gop merged (with cop and cio): full .text 14,634 B; +0.5 %: 14,707.
# Branch gr (the function version a constant per feature set, one FCALL test
# in round_submit, one fit check per auxiliary name, resp_int and resp_one
# trimmed): full .text 14,634 -> 14,484 B alone; smallest unchanged; +0.5 %: 14,556.
# gc (the exchange and client): full .text 14,634 -> 14,584 B; +0.5 %: 14,657.
# gr and gc merged: full .text 14,434 B; +0.5 %: 14,506.
# gr, gc and sc merged: full .text 14,424 B; +0.5 %: 14,497.
# Branch go (the general op machine and waiting: one sleep for both waits,
# client_next answers from now, sub_send's connection named once, lock_ok
# a tail call, no lingering-channel checks the callees make): full .text
# 14,634 -> 14,548 B; +0.5 %: 14,621.
# gr, gc, sc and go merged: full .text 14,338 B; +0.5 %: 14,410.
# Branches gex3 (the general exchange, codec and rounds: a send buffer of
# unsent bytes only, one parse entry without the public checks, attribute
# flags in the counts' low bits), gop3 (the general op machine: round-done
# calls return the op's status, one finish, op.split / op.fail gone) and
# gpub4 (the general public setup: one bind per connection, rlock_step
# through rlock_result), with the shared changes above: full .text 14,338 ->
# 13,772 B; +0.5 %: 13,841.
# Second session of 2026-11-27 (gp5 the exchange's FIFO from slot 0, go5 one
# [UN]SUBSCRIBE sender, ge5 the encoder as one walk, pd5 / cp5 shared calls;
# +50 B for the handshake fix: a lock's request waits for AUTH / SELECT):
# full .text 13,768 -> 13,446 B; +0.5 %: 13,513. Raised once at the end of
# it for the same three fixes and a fourth (no HELLO 3 on a connection
# shared with the program): 13,706 B; +0.5 %: 13,775.
# Session of 2026-11-28: the re-SELECT folded into the handshake block
# (-80 B), then a dozen bug fixes (Cluster TRYAGAIN release, max_attempts
# leaving the queue, waiters of a killed subscription due at once, ...):
# 13,676 B; +0.5 %: 13,745.
# Second session of 2026-11-28: rlock__why formats with rlock__fill and
# inlining measured function by function (-108 B; the reply path's stack
# +72 B), then +46 B for fixes (a request whose node timeout ran out
# before it could be sent fails alone, the re-init guard, renewal after a
# clock step-back): 13,614 B; +0.5 %: 13,682.
# Third session of 2026-11-28 (eg): a request whose node timeout runs out
# before any of it was sent fails alone, unsent (its length kept beside its
# tag in the FIFO entry, taken back from tx; an attempt's parts together),
# instead of dropping the connection with every other lock's request; an
# acquire that never reached a node sends it no cleanup release; be1's check
# in rlock__round_submit folded into it (-32 B): 13,938 B. With the same
# session's other fixes - renewal at validity's end (+36 B), fence tokens
# exact past 2^53 (the acquire scripts answer GET's text: +36 B), reentrant
# owner ids named like read-write fields refused (+88 B), bad-argument texts
# (+24 B): 14,116 B; +0.5 %: 14,187. Kept after +62 B for two cases the
# fuzzer found in eg's fix (a cleanup also where an earlier round reached a
# node whose request never went out; a cleanup never taken back): 14,178 B.
# Fourth session of 2026-11-28 (bug fixes only): +8 B for rlock_transport's
# due hook (the node's fields 4 B further: a few loads in the long form),
# +10 B for a cancel that ends at once an acquire none of whose requests was
# sent: 14,196 B; raised, +0.5 %: 14,267. Kept after +12 B: a request in
# front of an acquire's cleanup, unsent past its time, taken back too
# (fuzz_locks; the cleanup flagged, not its length hidden): 14,208 B.
# Fifth session of 2026-11-28 (bug fixes only, each with a test that failed
# before): fq +24 B (a cancelled queued waiter leaves the queue, a
# cancelled unsent extend/release taken back, max_hold_ms through a clock
# step back), lk +50 B (on_lost from a release that finds the lock gone, an
# op cut off by rlock_client_init told by a stamp), fz +6 B (a blocking
# call no longer spinning beside a finished op; a renewal found lost by
# another call's step): 14,288 B; raised, +0.5 %: 14,360.
# Sixth session of 2026-11-28: +70 B (gw: a cut-off Pub/Sub waiter leaves
# the new client's subscriptions alone; a cut-off acquire releases what it
# may have been granted), -36 B (fz2: RESP3 [UN]SUBSCRIBE through the one
# commit path, with a FIFO entry, never taken back unsent): 14,322 B; kept.
# Seventh session of 2026-11-28: go7 (the op machine: wake_nodes out of
# line, node_timeout and drift inlined, a token written in place, one votes
# store) -38 B, gx7 (the exchange's inlining) -20 B, cx7's config defaults
# table -20 B, cop7 -10 B, fix7 +14 B (a SUBSCRIBE confirmation naming
# another channel, or out of turn, is a protocol error): 14,244 B merged; lowered,
# +0.5 %: 14,315.
# Session of 2026-11-29: gs8 (one error scan for both engines: the status
# and READONLY / NOSCRIPT / NOPERM / "script:" / FCALL flag words from one
# pass, carried along) -228 B, fix8 (schedule_retry's clamp once) -12 B, +20 B
# (the scan carried as an int: arm-none-eabi's short enums cut its flags off
# an rlock_status), gs9 (x_bind one body, the init checks' reasons written
# by one call, a waiter's channel compared once) -58 B: 13,966 B; lowered,
# +0.5 %: 14,036.
# Second session of 2026-11-29: gp (one start body for acquire/extend/
# release begin, round_begin derives mask and lease, x_bind sizes as data,
# acks kept + 1) -76 B, gq (tally reads holds and nodes from the round,
# answers and wake-ups through the script table, checks another mechanism
# covers) -74 B, ge2 (encode_lock's FUNCTION LOAD / FCALL name / SETNAME
# through rlock__fill and a literal, x_begin reads db once) -76 B, cq2
# -20 B, fx -8 B; RLOCK_MAX_NODES 32's masks without a shift by 32 (folded
# away below 32) 0 B: 13,712 B; lowered, +0.5 %: 13,781.
# Third session of 2026-11-29: maxclients behind a password told from
# AUTH's refusal +16 B, gf (the client's connections in one list, conns;
# one x_drop; node_clear) -144 B, gg (a round's want, the judge's lease
# from check_ttl, the attempt counted where the plain SET is decided)
# -70 B: 13,514 B; lowered, +0.5 %: 13,581.
# Fourth session of 2026-11-29: rlock__node_timeout's default simplified
# -10 B, then replies out of step dropping the connection (AUTH's / SELECT's
# that is not +OK, rlock_client_connect's PING and run_id answered with the
# wrong type) +56 B: 13,560 B; the limit kept.
# Fifth session of 2026-11-29: integers no script gives refused (extend,
# release, force-unlock) +44 B; gs (round and tally fields whose "none" is
# the memset's 0, field order, 32-bit WAIT acks, disown by pointer) -52 B;
# cs's error words -16 B: 13,536 B; the limit kept (below +0.5 %).
# Session of 2026-11-29 (after stop 37): Redlock's AUTH / WRONGTYPE /
# FOREIGN from a minority of nodes a failed vote, not the acquire's end
# (the tally counts them) +20 B; a grant's holds below 1 refused +12 B:
# 13,568 B; the limit kept. Then the idle probe no longer reads over the
# start of a push (fuzz_locks: its rest was read as the next request's
# reply) +28 B: 13,596 B, past the limit: raised, +0.5 % (the rule used
# when lowering it): 13,664. A stream read out of step outweighs 28 B.
limit_full=${RLOCK_SIZE_LIMIT_FULL:-13664}
warn="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-error=type-limits"
common="-ffunction-sections -fdata-sections -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -I. -Ibench/size"
rc=0
kvf=$out/sizes.kv; : > "$kvf"

# config name -> program and defines
cfg_prog() { case $1 in smallest|smallest-superloop) echo smallest ;; default) echo default ;; full) echo full ;;
                        default+primitives) echo primitives ;; default+cluster) echo cluster ;;
                        default-*) echo default ;; *) echo full ;; esac; }
cfg_defs() { case $1 in smallest) echo -DRLOCK_SMALLEST ;; smallest-superloop) echo -DRLOCK_SMALLEST -DSIZE_SUPERLOOP ;; default|full|default+primitives|default+cluster) ;;
                        full-*) echo "-D${1#full-}" ;; default-*) echo "-D${1#default-}" ;; esac; }
# target -> compiler and flags
tgt_cc() { case $1 in cortex-m0|cortex-m4) echo arm-none-eabi-gcc ;; rv32) echo riscv64-unknown-elf-gcc ;; x86-64) echo gcc ;; esac; }
tgt_flags() { case $1 in cortex-m0) echo "-mcpu=cortex-m0 -mthumb" ;; cortex-m4) echo "-mcpu=cortex-m4 -mthumb" ;;
                         rv32) echo "-march=rv32imac -mabi=ilp32 -ffreestanding" ;; x86-64) echo "-fno-pie" ;; esac; }
tgt_link() { case $1 in x86-64) echo "-no-pie -static" ;; rv32) echo "-Wl,--no-warn-rwx-segments" ;; *) echo "" ;; esac; }

# one CONFIG TARGET OPT: compile, link, sum; appends to $kvf
one() {
    cfg=$1; tgt=$2; opt=$3; cc=$(tgt_cc "$tgt")
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "size $cfg $tgt $opt skipped $cc-not-installed" >> "$kvf"
        case $cc in arm-none-eabi-gcc) # the budgets are Cortex-M4's: CI must measure them
            if [ "${CI:-}" = true ]; then echo "size: $cc not found (CI installs it: .ci/run)" >&2; rc=1; fi ;; esac
        return
    fi
    prog=$(cfg_prog "$cfg"); defs=$(cfg_defs "$cfg"); fl="$(tgt_flags "$tgt") $opt $common"
    d=$out/$tgt$opt-$cfg; mkdir -p "$d"
    # shellcheck disable=SC2086,SC2046 # (flag lists: split on purpose)
    if ! { $cc $warn $fl $defs -c bench/size/core.c -o "$d/core.o" &&
           $cc $warn $fl $defs -c "bench/size/$prog.c" -o "$d/prog.o" &&
           $cc $warn $fl $defs -c bench/size/stubs.c -o "$d/stubs.o" &&
           $cc $fl $(tgt_link "$tgt") -nostdlib -nostartfiles -Wl,--gc-sections -Wl,-e,_start -Wl,-Map="$d/prog.map" \
               "$d/prog.o" "$d/core.o" "$d/stubs.o" -lgcc -o "$d/prog.elf"; }; then
        echo "size: $cfg $tgt $opt: build failed" >&2; rc=1; return
    fi
    echo "size $cfg $tgt $opt $(python3 bench/size/mapsum.py "$d/prog.map" /core.o)" >> "$kvf"
}

# RLOCK_SIZE_QUICK=1: Cortex-M4 -Os only (while shrinking; docs/SIZE.md is then partial)
targets="cortex-m0 cortex-m4 rv32 x86-64"; opts="-Os -O2"
[ "${RLOCK_SIZE_QUICK:-0}" = 1 ] && { targets=cortex-m4; opts=-Os; }
# One job per target (and one for the macros' rows), side by side: each
# writes its own rows and a failure mark, gathered in this order after.
job() { # NAME, then CONFIG TARGET OPT triples on stdin
    name=$1; kvf=$out/sizes.kv.$name; : > "$kvf"; rm -f "$out/failed.$name"; rc=0
    while read -r cfg tgt opt; do one "$cfg" "$tgt" "$opt"; done
    [ $rc -eq 0 ] || : > "$out/failed.$name"
}
jobs=""
for tgt in $targets; do
    for opt in $opts; do
        for cfg in smallest default full default+primitives default+cluster; do echo "$cfg $tgt $opt"; done
    done | job "$tgt" &
    jobs="$jobs $tgt"
done
# What each feature macro saves: the full program built without it (Cortex-M4 -Os),
# and each add-on module: the default program built without it. And the
# smallest configuration as a firmware superloop uses it (non-blocking calls only).
{ echo "smallest-superloop cortex-m4 -Os"
  for m in RLOCK_NO_REENTRANT RLOCK_NO_WAITING RLOCK_NO_FENCING RLOCK_MAX_NODES=1 RLOCK_NO_EVAL_FALLBACK \
         RLOCK_NO_FAIR RLOCK_NO_REPLICAS RLOCK_NO_FCALL RLOCK_NO_STATUS_STRINGS RLOCK_NO_ERROR_TEXTS; do
    echo "full-$m cortex-m4 -Os"
  done
  for m in RLOCK_NO_PRIMITIVES RLOCK_NO_CLUSTER; do echo "default-$m cortex-m4 -Os"; done
} | job macros &
jobs="$jobs macros"
wait
for j in $jobs; do
    cat "$out/sizes.kv.$j" >> "$kvf"; rm -f "$out/sizes.kv.$j"
    [ -f "$out/failed.$j" ] && { rc=1; rm -f "$out/failed.$j"; }
done
# RAM per lock/node/client and the worst-case stack of every public call
# (bench/ram.sh --kv); it exits 1 when the smallest configuration's lock +
# node + client on Cortex-M4 is over RLOCK_RAM_BUDGET (2048 B): so does make size.
ram=$(./bench/ram.sh --kv) || { echo "size: bench/ram.sh failed (over the RAM budget, a call cycle, or a build failed)" >&2; rc=1; }
ram_m4=$(echo "$ram" | awk '$1 == "ram" && $2 == "smallest" && $3 == "cortex-m4" && $4 == "total" {print $5}')
ram_budget=$(echo "$ram" | awk '$1 == "ram" && $2 == "budget_smallest_cortex_m4" {print $3}')

get() { awk -v c="$1" -v t="$2" -v o="$3" -v f="$4" '$1=="size" && $2==c && $3==t && $4==o && $5!="skipped" {print $(4+f)}' "$kvf"; }
s_text=$(get smallest cortex-m4 -Os 1); s_ro=$(get smallest cortex-m4 -Os 2); f_text=$(get full cortex-m4 -Os 1)
l_text=$(get smallest-superloop cortex-m4 -Os 1); l_ro=$(get smallest-superloop cortex-m4 -Os 2)

if [ $kv = 1 ]; then cat "$kvf"; [ -z "$ram" ] || echo "$ram"; exit $rc; fi

if python3 bench/size/gen.py "$kvf" "$goal_smallest" "$goal_full" "$limit_smallest" "$limit_full" "$limit_superloop" \
       "$(arm-none-eabi-gcc -dumpversion 2>/dev/null)" > docs/SIZE.md.tmp <<EOF
$ram
EOF
then mv docs/SIZE.md.tmp docs/SIZE.md
else echo "size: bench/size/gen.py failed: docs/SIZE.md left as it was" >&2; rm -f docs/SIZE.md.tmp; rc=1
fi
sed -n '/^## Per configuration/,/^## /p' docs/SIZE.md | sed '$d'
if [ -n "$s_text" ] && [ -n "$f_text" ]; then
    s=$((s_text + s_ro))
    echo "budget: smallest .text+.rodata $s B (goal $goal_smallest B: $( [ $s -le $goal_smallest ] && echo met || echo "$((s - goal_smallest)) B over") ; enforced limit $limit_smallest B)"
    echo "budget: full .text $f_text B (goal $goal_full B: $( [ "$f_text" -le $goal_full ] && echo met || echo "$((f_text - goal_full)) B over") ; enforced limit $limit_full B)"
    [ $s -le "$limit_smallest" ] || { echo "size: smallest .text+.rodata $s B exceeds its limit $limit_smallest B" >&2; rc=1; }
    [ "$f_text" -le "$limit_full" ] || { echo "size: full .text $f_text B exceeds its limit $limit_full B" >&2; rc=1; }
    if [ -n "$l_text" ]; then
        l=$((l_text + l_ro))
        echo "superloop: smallest through the non-blocking calls only (smallest.c -DSIZE_SUPERLOOP) $l B (enforced limit $limit_superloop B)"
        [ $l -le "$limit_superloop" ] || { echo "size: superloop .text+.rodata $l B exceeds its limit $limit_superloop B" >&2; rc=1; }
    fi
else
    echo "size: no Cortex-M4 figures: budgets not checked" >&2; [ "${CI:-}" = true ] && rc=1
fi
if [ -n "$ram_m4" ]; then
    echo "budget: smallest RAM, one lock on one node, $ram_m4 B (limit ${ram_budget:-2048} B: $( [ "$ram_m4" -le "${ram_budget:-2048}" ] && echo met || echo OVER))"
else
    echo "size: no Cortex-M4 RAM figure: RAM budget not checked" >&2; [ "${CI:-}" = true ] && rc=1
fi
echo "docs/SIZE.md regenerated"
exit $rc
