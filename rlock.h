/* rlock.h - Redis distributed locks for C99, firmware and legacy code.  v0.1.0
 *
 * WHAT
 *   A single-file, header-only library for Redis locks: single-node locks
 *   (SET NX PX with a 128-bit random token; owner-checked Lua release),
 *   reentrant locks (a hash of owner -> hold count changed only by Lua) and
 *   Redlock over up to RLOCK_MAX_NODES independent masters; each barging (the
 *   default: first come when free, uncontended acquire a plain SET NX PX) or
 *   fair (rlock_lock_set_fair: FIFO by the server's clock, the key reserved
 *   for the oldest waiter on release). Waiting by backoff
 *   or by Pub/Sub wake-up, lease renewal (rlock_renew_poll, or a thread),
 *   lost-lock notice and fencing tokens. It never allocates, keeps no mutable
 *   globals, and reaches the network only through a transport vtable you
 *   supply (adapters/rlock_posix.h and adapters/rlock_hiredis.h ship with it).
 *   Every operation is a non-blocking state machine (*_begin + rlock_step);
 *   the blocking calls are loops over it. README.md has the guarantees and
 *   their limits - read them before relying on any Redis lock for safety.
 *
 * HOW TO COMPILE
 *   In exactly one C or C++ file, include it with the implementation:
 *       #define RLOCK_IMPLEMENTATION
 *       #include "rlock.h"          <- first, so it can ask for POSIX APIs
 *   Everywhere else just #include "rlock.h". Add -DRLOCK_STATIC to make every
 *   function static (one translation unit only).
 *
 * EXAMPLE (examples/basic.c and README's quick start, verbatim: test_examples)
 *   // basic.c - take a lock on one Redis server, work, release, close.
 *   #define RLOCK_IMPLEMENTATION             // in exactly one .c file
 *   #include "adapters/rlock_posix.h"        // first: it sets POSIX feature macros
 *   #include <stdio.h>
 *   #include <stdlib.h>
 *
 *   int main(int argc, char **argv) {
 *       rlock_posix_conn pc; rlock_node node; rlock_client cl; rlock_lock lk;
 *       rlock_status st;
 *       if (rlock_posix_init_tcp(&pc, "127.0.0.1", argc > 1 ? atoi(argv[1]) : 6379, 1000) != 0) return 2; // bad port
 *       rlock_node_init(&node, rlock_posix_transport(&pc));
 *       rlock_client_init(&cl, &node, 1, NULL);                 // NULL: default config
 *       rlock_lock_init(&lk, &cl, "jobs:nightly", 12, RLOCK_KIND_SIMPLE);
 *       st = rlock_acquire(&lk, 30000, 5000);                   // lease 30 s, wait up to 5 s
 *       if (st == RLOCK_OK) {
 *           printf("working, %lld ms of the lease left\n", rlock_validity_ms(&lk)); // finish within it
 *           st = rlock_release(&lk);
 *       }
 *       printf("%s %s\n", rlock_status_str(st), rlock_node_error(&node));
 *       rlock_client_close(&cl);                                // closes the connection
 *       rlock_posix_close(&pc);
 *       return st == RLOCK_OK ? 0 : 1;
 *   }
 *
 * TABLE OF CONTENTS
 *   1. Configuration macros           4. Connection / transport layer
 *   2. Status codes                   5. Lock operations (blocking, non-blocking)
 *   3. RESP codec                     6. Implementation (same order)
 *                                     7. Redis Cluster (rlock_cluster_*)
 *
 * CONFIGURATION MACROS (define before including; defaults in brackets)
 *   RLOCK_STATIC               make every function static
 *   RLOCK_MAX_NODES            Redlock nodes per client, 1..32      [9]
 *   RLOCK_MAX_KEY_LEN          longest key in bytes                 [256]
 *   RLOCK_MAX_OWNER_LEN        longest reentrant owner id (>= 32)   [64; 32 with RLOCK_NO_REENTRANT
 *                                                                    and RLOCK_NO_PRIMITIVES]
 *   RLOCK_TX_BUF / RX_BUF      per-node command / reply buffers: the longest
 *                              request / reply the compiled features make
 *                              (checked at compile time; TX below 64 KiB)
 *                              [3632 / 1024 (x86-64 and 32-bit alike);
 *                              RLOCK_SMALLEST: 448 / 256]
 *   RLOCK_SUB_TX_BUF / RX_BUF  per-subscriber buffers (TX below 64 KiB) [772 / 644]
 *   RLOCK_SUB_PIPELINE         requests in flight per subscriber    [8]
 *   RLOCK_MAX_PIPELINE         requests in flight per connection    [32; 1 with
 *                                                                    the compact engine]
 *   RLOCK_WHY_LEN              bad-argument text per lock/client    [80]
 *   RLOCK_RESP_MAX_DEPTH       deepest nesting the reader takes     [8]
 *   RLOCK_MAX_TTL_MS           longest lease accepted               [2^31-1 ms]
 *   RLOCK_CLUSTER_MAX_PRIMARIES  cluster nodes an rlock_cluster knows [16]
 *   RLOCK_NO_POSIX             no POSIX defaults: supply RLOCK_NOW_MS(),
 *                              RLOCK_SLEEP_MS(ms), RLOCK_RANDOM_BYTES(buf,n),
 *                              or set each missing one in rlock_config at run
 *                              time (rlock_client_init says which is missing;
 *                              sleep only rlock_acquire with a wait needs,
 *                              and it says so)
 *   RLOCK_NOW_MS()             monotonic milliseconds (uint64_t; rlock keeps
 *                              it modulo 2^32, wrap-safe); it must never step
 *                              back (not wall time)          [CLOCK_MONOTONIC]
 *   RLOCK_SLEEP_MS(ms)         sleep, used only by blocking calls   [nanosleep]
 *   RLOCK_RANDOM_BYTES(b,n)    fill b with n secure random bytes,
 *                              return 0 on success     [getrandom, else /dev/urandom]
 *   RLOCK_THREAD_ID()          unsigned long naming this thread     [pthread_self hash]
 *   RLOCK_NO_THREAD_ID         owner ids use the instance id only
 *   RLOCK_ASSERT(x)            internal invariants (op transitions) [assert]
 *   RLOCK_WATCHDOG             build the optional renewal thread (pthreads)
 * FEATURES THAT COMPILE OUT (each with its code and its Lua scripts; a call
 * that needs one says RLOCK_E_BADARG and its error text names the macro;
 * docs/SIZE.md has the bytes each saves, `make size` measures them)
 *   RLOCK_NO_REENTRANT         RLOCK_KIND_REENTRANT locks
 *   RLOCK_NO_WAITING           waiting by notification: cfg.pubsub, subscriber
 *                              connections, HELLO 3 and the RESP3 reader (a
 *                              waiter backs off; rlock_resp_parse reads RESP2)
 *   RLOCK_NO_FENCING           cfg.fencing (fence tokens)
 *   RLOCK_NO_EVAL_FALLBACK     no script text in the image: EVALSHA only, the
 *                              scripts must be loaded (`rlock check --load`,
 *                              after every server restart); NOSCRIPT is an
 *                              error that says so
 *   RLOCK_NO_FAIR              rlock_lock_set_fair
 *   RLOCK_NO_REPLICAS          cfg.replicas (WAIT after an acquire)
 *   RLOCK_NO_FCALL             Redis functions (cfg.scripts FCALL, the switch
 *                              to FCALL on NOPERM)
 *   RLOCK_NO_CLUSTER           section 7 (rlock_cluster_*)
 *   RLOCK_NO_PRIMITIVES        section 5b (semaphores, read-write and
 *                              multi-locks, inspection), a smaller RLOCK_TX_BUF
 *   RLOCK_NO_STATUS_STRINGS    rlock_status_str() returns ""
 *   RLOCK_NO_ERROR_TEXTS       rlock's own error texts (rlock_lock_error,
 *                              rlock_client_error, rlock_node_error): each
 *                              becomes "rlock.h:LINE", LINE the line of the
 *                              check that failed in your copy of rlock.h
 *                              (open it there: the text is on that line, in
 *                              RLOCK__TXT("...")); the numbers a text would
 *                              show are dropped; statuses are unchanged, and
 *                              texts from Redis or the transport still show
 *   RLOCK_MAX_NODES 1          Redlock (one node per client)
 *   RLOCK_SMALLEST             all of the above: one node, simple locks;
 *                              ERR/WHY_LEN 64: one lock on one node in 1,712 B
 *                              of RAM on Cortex-M4 (bench/ram.sh); the compact
 *                              engine. To keep some feature (the error texts,
 *                              say), define the RLOCK_NO_* macros you want
 *                              instead of RLOCK_SMALLEST
 * THE COMPACT ENGINE (section 6.8c; private macro RLOCK__COMPACT, set in
 * section 1) replaces the general engine (6.5-6.8: a FIFO of pipelined
 * requests per connection, rounds over nodes, tallies, waiting) whenever the
 * build has RLOCK_MAX_NODES 1 and RLOCK_NO_REENTRANT, _NO_WAITING, _NO_FAIR,
 * _NO_REPLICAS, _NO_FCALL, _NO_CLUSTER and _NO_PRIMITIVES: RLOCK_SMALLEST,
 * also with fencing and the EVAL fallback put back (examples/firmware). Same
 * API, scripts, statuses and error texts (none under RLOCK_NO_ERROR_TEXTS,
 * which RLOCK_SMALLEST sets); times are 32-bit (rlock__ms, wrap-safe). No
 * SET NX PX fast path (every attempt is the acquire script, whatever
 * cfg.scripts_only says); its blocking calls wait with the transport's
 * wait(), never wait_many. What it does not do is
 * pipeline: one request in flight per connection (AUTH / SELECT go ahead of
 * the first one after a connect), so the locks of one client take turns - a
 * lock whose turn has not come waits (RLOCK_WOULD_BLOCK) until the reply
 * before it is read, and a slow reply delays them all (each request keeps its
 * own node timeout). It reads RESP2 statuses, errors, integers and arrays
 * of integers only (all that simple locks get back; with fencing the
 * token also as a bulk string of digits; any other reply is malformed).
 * Smallest, Cortex-M4 -Os, linked: 4,174 B
 * .text+.rodata (the general engine's: 14,068 B); README "On a
 * microcontroller".
 */
#ifndef RLOCK_H
#define RLOCK_H

/* Under -std=c99 glibc hides clock_gettime/nanosleep/open unless asked before
 * the first system header; this is why the implementation file should include
 * rlock.h first (or compile with -D_POSIX_C_SOURCE=200809L). */
#if defined(RLOCK_IMPLEMENTATION) && !defined(RLOCK_NO_POSIX) && !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>

#define RLOCK_VERSION_MAJOR 0
#define RLOCK_VERSION_MINOR 1
#define RLOCK_VERSION_PATCH 0
#define RLOCK_VERSION_STRING "0.1.0"

#ifndef RLOCKDEF
#ifdef RLOCK_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define RLOCKDEF static __attribute__((unused)) /* a unit may use only part of the API */
#else
#define RLOCKDEF static
#endif
#else
#define RLOCKDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* 1. Configuration                                                          */
/* ======================================================================== */

/* Features that compile out (issue 15; docs/SIZE.md has what each saves).
 * Each removes its code and its Lua scripts; a call that needs a feature
 * compiled out says so: RLOCK_E_BADARG, and rlock_lock_error /
 * rlock_client_error name the macro ("... compiled out (RLOCK_NO_FAIR)").
 * RLOCK_SMALLEST is all of them, one node (RLOCK_MAX_NODES 1) and the
 * smaller defaults below (each can still be set). */
#ifdef RLOCK_SMALLEST
#ifndef RLOCK_NO_REENTRANT
#define RLOCK_NO_REENTRANT
#endif
#ifndef RLOCK_NO_WAITING
#define RLOCK_NO_WAITING
#endif
#ifndef RLOCK_NO_FENCING
#define RLOCK_NO_FENCING
#endif
#ifndef RLOCK_NO_EVAL_FALLBACK
#define RLOCK_NO_EVAL_FALLBACK
#endif
#ifndef RLOCK_NO_FAIR
#define RLOCK_NO_FAIR
#endif
#ifndef RLOCK_NO_CLUSTER
#define RLOCK_NO_CLUSTER
#endif
#ifndef RLOCK_NO_REPLICAS
#define RLOCK_NO_REPLICAS
#endif
#ifndef RLOCK_NO_FCALL
#define RLOCK_NO_FCALL
#endif
#ifndef RLOCK_NO_PRIMITIVES
#define RLOCK_NO_PRIMITIVES
#endif
#ifndef RLOCK_NO_STATUS_STRINGS
#define RLOCK_NO_STATUS_STRINGS
#endif
#ifndef RLOCK_NO_ERROR_TEXTS
#define RLOCK_NO_ERROR_TEXTS
#endif
#ifndef RLOCK_MAX_NODES
#define RLOCK_MAX_NODES 1
#endif
#ifndef RLOCK_ERR_LEN
#define RLOCK_ERR_LEN 64
#endif
#ifndef RLOCK_WHY_LEN
#define RLOCK_WHY_LEN 64
#endif
#endif /* RLOCK_SMALLEST */
/* 1/0 per feature, for conditions the compiler folds away. */
#ifdef RLOCK_NO_REENTRANT
#define RLOCK__HAS_REENTRANT 0
#else
#define RLOCK__HAS_REENTRANT 1
#endif
#ifdef RLOCK_NO_WAITING
#define RLOCK__HAS_WAITING 0
#else
#define RLOCK__HAS_WAITING 1
#endif
#ifdef RLOCK_NO_FENCING
#define RLOCK__HAS_FENCING 0
#else
#define RLOCK__HAS_FENCING 1
#endif
#ifdef RLOCK_NO_EVAL_FALLBACK
#define RLOCK__HAS_EVAL 0
#else
#define RLOCK__HAS_EVAL 1
#endif
#ifdef RLOCK_NO_FAIR
#define RLOCK__HAS_FAIR 0
#else
#define RLOCK__HAS_FAIR 1
#endif
#ifdef RLOCK_NO_CLUSTER
#define RLOCK__HAS_CLUSTER 0
#else
#define RLOCK__HAS_CLUSTER 1
#endif
#ifdef RLOCK_NO_REPLICAS
#define RLOCK__HAS_REPLICAS 0
#else
#define RLOCK__HAS_REPLICAS 1
#endif
#ifdef RLOCK_NO_FCALL
#define RLOCK__HAS_FCALL 0
#else
#define RLOCK__HAS_FCALL 1
#endif
#ifdef RLOCK_NO_PRIMITIVES
#define RLOCK__HAS_PRIMITIVES 0
#else
#define RLOCK__HAS_PRIMITIVES 1
#endif

#ifndef RLOCK_MAX_NODES
#define RLOCK_MAX_NODES 9
#endif
/* The compact engine (section 6.8c) instead of the general one (6.5-6.8's
 * exchange FIFO, pipelining, rounds over nodes and tallies) when a build
 * has one node and simple locks only: RLOCK_MAX_NODES 1 with reentrant
 * locks, waiting, fair locks, replicas, FCALL, Cluster and primitives
 * compiled out (RLOCK_SMALLEST, and RLOCK_SMALLEST with fencing or the
 * EVAL fallback put back). */
#if RLOCK_MAX_NODES == 1 && !RLOCK__HAS_REENTRANT && !RLOCK__HAS_WAITING && !RLOCK__HAS_FAIR && \
    !RLOCK__HAS_REPLICAS && !RLOCK__HAS_FCALL && !RLOCK__HAS_CLUSTER && !RLOCK__HAS_PRIMITIVES
#define RLOCK__COMPACT 1
#else
#define RLOCK__COMPACT 0
#endif
#ifndef RLOCK_MAX_KEY_LEN
#define RLOCK_MAX_KEY_LEN 256
#endif
#ifndef RLOCK_MAX_OWNER_LEN
#if defined(RLOCK_NO_REENTRANT) && defined(RLOCK_NO_PRIMITIVES)
#define RLOCK_MAX_OWNER_LEN 32 /* a token only (RLOCK_TOKEN_LEN): read/write locks hold by owner id too */
#else
#define RLOCK_MAX_OWNER_LEN 64
#endif
#endif

/* Buffer floors: a node's TX buffer holds the longest request the compiled
 * features send, its RX buffer the longest reply they read (both checked at
 * compile time: rlock__tx_buf_fits, rlock__rx_buf_fits). RLOCK__ARG(n): one bulk argument of n bytes. */
#define RLOCK__DIGITS(n) ((n) < 10 ? 1 : (n) < 100 ? 2 : (n) < 1000 ? 3 : (n) < 10000 ? 4 : 20)
#define RLOCK__ARG(n) ((n) + RLOCK__DIGITS(n) + 5)
/* Whether script requests carry the wait queue (its two keys, the waiter id,
 * the release channel): not without waiting - the scripts touch the queue
 * only when given a waiter id or a channel - unless fencing needs the fence
 * counter's place after them (KEYS[4]) or fair locks are compiled in (their
 * scripts always use KEYS[2], the queue: without it the acquire script
 * failed on Redis after setting the key, leaving it held by nobody). */
#if defined(RLOCK_NO_WAITING) && defined(RLOCK_NO_FENCING) && defined(RLOCK_NO_FAIR)
#define RLOCK__REQ_QUEUE 0
#else
#define RLOCK__REQ_QUEUE 1
#endif
/* The compact engine without the wait queue and the EVAL fallback
 * (RLOCK_SMALLEST) writes its requests from templates (rlock__encode_lock):
 * no argument writers, no script kinds. */
#if RLOCK__COMPACT && !RLOCK__REQ_QUEUE && !RLOCK__HAS_EVAL
#define RLOCK__ENC_TEMPLATE 1
#else
#define RLOCK__ENC_TEMPLATE 0
#endif
/* Auxiliary names a script request carries besides the key: the queue's two
 * keys and the channel (release) or the fence counter (acquire). */
#define RLOCK__REQ_AUX (RLOCK__REQ_QUEUE ? 3 : 0)
/* After the owner: the ttl, a waiter id (16) and the wait left (8 digits);
 * a semaphore's permits / a writer's hold-off, or a fair release's grace;
 * a semaphore's slot (10 digits) / a writer release's readers' turn. */
#if defined(RLOCK_NO_PRIMITIVES) && defined(RLOCK_NO_FAIR)
#define RLOCK__REQ_NUMS (RLOCK__ARG(20) + 2 * RLOCK__ARG(16))
#elif defined(RLOCK_NO_PRIMITIVES)
#define RLOCK__REQ_NUMS (2 * RLOCK__ARG(20) + 2 * RLOCK__ARG(16))
#else
#define RLOCK__REQ_NUMS (3 * RLOCK__ARG(20) + 2 * RLOCK__ARG(16))
#endif
/* A script request whose script argument is script_len bytes (the text for
 * EVAL, else a SHA1 or a function name): header, command, script, numkeys,
 * key, auxiliary names, owner, numbers and ids. */
#define RLOCK__REQ_LEN(script_len) \
    (5 + RLOCK__ARG(7) + RLOCK__ARG(script_len) + RLOCK__ARG(1) + RLOCK__ARG(RLOCK_MAX_KEY_LEN) + \
     RLOCK__REQ_AUX * RLOCK__ARG(RLOCK_MAX_KEY_LEN + 12) + RLOCK__ARG(RLOCK_MAX_OWNER_LEN) + RLOCK__REQ_NUMS)
/* An attempt goes out in one write: [FUNCTION LOAD] [ASKING] (cluster, 17
 * bytes) script [WAIT] (cfg.replicas, at most 48 bytes); each compiled out
 * with its feature. */
#ifdef RLOCK_NO_CLUSTER
#define RLOCK__REQ_ASKING 0
#else
#define RLOCK__REQ_ASKING 17
#endif
#ifdef RLOCK_NO_REPLICAS
#define RLOCK__REQ_AROUND RLOCK__REQ_ASKING
#else
#define RLOCK__REQ_AROUND (RLOCK__REQ_ASKING + 48)
#endif
/* Without the EVAL fallback: EVALSHA and a SHA1 (FCALL's function name is
 * shorter). With it, FUNCTION LOAD REPLACE of the script's library (its
 * text + 168 bytes) and the FCALL behind it (a 27-byte name), longer than
 * the EVAL form (without functions, RLOCK_NO_FCALL: the EVAL form). */
#define RLOCK__TX_FLOOR_SHA (RLOCK__REQ_LEN(40) + RLOCK__REQ_AROUND)
#ifdef RLOCK_NO_FCALL
#define RLOCK__TX_FLOOR_TEXT(script_len) (RLOCK__REQ_LEN(script_len) + RLOCK__REQ_AROUND)
#else
#define RLOCK__TX_FLOOR_TEXT(script_len) ((script_len) + 170 + RLOCK__REQ_LEN(27) + RLOCK__REQ_AROUND)
#endif
#ifndef RLOCK_TX_BUF
/* The longest script is up to 2 KB (a writer's, section 5b; ~1 KB, a fair
 * reentrant acquire, without the primitives - the default has room for
 * 1,088 B; ~0.85 KB, the simple lock's acquire, without reentrant locks
 * too). */
#if defined(RLOCK_NO_EVAL_FALLBACK)
#define RLOCK_TX_BUF (RLOCK__TX_FLOOR_SHA)
#elif defined(RLOCK_NO_PRIMITIVES) && defined(RLOCK_NO_REENTRANT)
#define RLOCK_TX_BUF RLOCK__TX_FLOOR_TEXT(864)
#elif defined(RLOCK_NO_PRIMITIVES)
#define RLOCK_TX_BUF RLOCK__TX_FLOOR_TEXT(1088)
#else
#define RLOCK_TX_BUF RLOCK__TX_FLOOR_TEXT(2048)
#endif
#endif
#ifndef RLOCK_RX_BUF
/* The longest replies are HELLO 3's map and release notices (waiting) and
 * inspection texts (primitives); the rest are numbers, short arrays and
 * error lines. */
#if defined(RLOCK_NO_WAITING) && defined(RLOCK_NO_PRIMITIVES)
#define RLOCK_RX_BUF 256
#else
#define RLOCK_RX_BUF 1024
#endif
#endif
#ifndef RLOCK_RESP_MAX_DEPTH
#define RLOCK_RESP_MAX_DEPTH 8
#endif
#ifndef RLOCK_MAX_TTL_MS
#define RLOCK_MAX_TTL_MS 2147483647LL
#endif
#if RLOCK_MAX_TTL_MS > 2147483647
#error "RLOCK_MAX_TTL_MS must stay below 2^31 ms (rlock's times are 32-bit, compared by their difference)"
#endif
#ifndef RLOCK_ERR_LEN
#define RLOCK_ERR_LEN 128 /* last error message kept per node */
#endif
#ifndef RLOCK_WHY_LEN
#define RLOCK_WHY_LEN 80 /* the reason of the last RLOCK_E_BADARG, per lock and per client */
#endif
#ifndef RLOCK_SUB_TX_BUF
/* A subscriber sends AUTH, then (UN)SUBSCRIBE {key}:released, a few at a
 * time; one that does not fit now is sent by a later wait (backoff meanwhile). */
#define RLOCK_SUB_TX_BUF (256 + 2 * RLOCK_MAX_AUX_LEN)
#endif
#ifndef RLOCK_SUB_RX_BUF
/* The largest reply a subscriber reads: a release notice ["message",
 * "{key}:released", waiter id] (~300 bytes at RLOCK_MAX_KEY_LEN 256), or an
 * AUTH error. */
#define RLOCK_SUB_RX_BUF (128 + 2 * RLOCK_MAX_AUX_LEN)
#endif
#ifndef RLOCK_SUB_PIPELINE
#define RLOCK_SUB_PIPELINE 8 /* (UN)SUBSCRIBEs in flight per subscriber */
#endif
#ifndef RLOCK_MAX_PIPELINE
#if RLOCK__COMPACT
#define RLOCK_MAX_PIPELINE 1 /* the compact engine: one request in flight (locks take turns) */
#else
/* Requests in flight per connection: every lock of a client that has an
 * operation running needs one (two while a waiter (un)subscribes on it: RESP3). */
#define RLOCK_MAX_PIPELINE 32
#endif
#endif

/* Longest prefix of a lock's auxiliary names (rlock_aux_key): "{key}". A
 * buffer for an auxiliary name needs RLOCK_MAX_AUX_LEN + strlen(suffix) + 1. */
#define RLOCK_MAX_AUX_LEN (RLOCK_MAX_KEY_LEN + 2)

/* The reply floor: an error line (a Redis message, a MOVED address); with
 * waiting, a release notice of the longest channel and HELLO 3's map. */
#ifdef RLOCK_NO_WAITING
typedef char rlock__rx_buf_fits[RLOCK_RX_BUF >= 128 ? 1 : -1];
#else
typedef char rlock__rx_buf_fits[RLOCK_RX_BUF >= 256 && RLOCK_RX_BUF >= RLOCK_MAX_AUX_LEN + 80 ? 1 : -1];
#endif

/* A subscriber must hold one UNSUBSCRIBE and read one release notice of the
 * longest channel (a smaller RLOCK_SUB_*_BUF would fail every wait). */
typedef char rlock__sub_tx_fits[RLOCK_SUB_TX_BUF >= RLOCK_MAX_AUX_LEN + 48 ? 1 : -1];
typedef char rlock__sub_rx_fits[RLOCK_SUB_RX_BUF >= RLOCK_MAX_AUX_LEN + 80 ? 1 : -1];
typedef char rlock__sub_pipeline_fits[RLOCK_SUB_PIPELINE >= 3 ? 1 : -1]; /* AUTH + (UN)SUBSCRIBE */

/* A token is 128 random bits as 32 hex characters. */
#define RLOCK_TOKEN_LEN 32
/* The token is kept where the owner id is: it must fit. */
typedef char rlock__owner_len_holds_a_token[RLOCK_MAX_OWNER_LEN >= RLOCK_TOKEN_LEN ? 1 : -1];

/* ======================================================================== */
/* 2. Status codes                                                           */
/* ======================================================================== */

typedef enum rlock_status {
    RLOCK_OK = 0,          /* done: acquired / extended / released */
    RLOCK_WOULD_BLOCK,     /* non-blocking op in progress: call rlock_step() again */
    RLOCK_NOT_ACQUIRED,    /* someone else holds the lock (try-once) */
    RLOCK_TIMEOUT,         /* the wait deadline passed while the lock stayed held */
    RLOCK_LOST,            /* extend/release: the lock is no longer ours (expired or taken) */
    RLOCK_NOT_HELD,        /* release/extend of a lock this handle does not hold; nothing sent */
    RLOCK_E_BADARG,        /* bad argument (NULL, empty/long key, ttl out of range, ...); nothing sent */
    RLOCK_E_STATE,         /* handle busy with another op, or op invalid in its state */
    RLOCK_E_IO,            /* transport error, connection closed, or per-node timeout */
    RLOCK_E_PROTOCOL,      /* malformed or oversized reply; the connection was dropped */
    RLOCK_E_REDIS,         /* Redis answered with an error (OOM, READONLY, ...): see rlock_node_error() */
    /* (E_AUTH, _WRONGTYPE, _FOREIGN, _UPGRADE on Redlock: not retried when
     * the nodes that said them leave no quorum; a minority of them is a
     * failed vote, the others may grant) */
    RLOCK_E_AUTH,          /* NOAUTH / WRONGPASS / NOPERM: not retried */
    RLOCK_E_WRONGTYPE,     /* the key holds a value that is not this kind of lock: not retried */
    RLOCK_E_FOREIGN,       /* the key exists without a TTL: not written by rlock; not retried */
    RLOCK_E_QUORUM,        /* Redlock: too many nodes failed to reach N/2+1 */
    RLOCK_E_RANDOM,        /* the random source failed: refusing to lock with a guessable token */
    RLOCK_E_CLOCK,         /* the clock hook went backwards across an operation */
    RLOCK_E_REPLICAS,      /* acquire: granted, but fewer replicas than cfg.replicas acknowledged
                              it in time: released again (see rlock_replica_acks) */
    RLOCK_E_MOVED,         /* cluster: MOVED / ASK - the key's slot is served elsewhere (the address
                              is in rlock_node_error); the rlock_cluster_* calls follow it */
    RLOCK_E_UPGRADE,       /* write lock asked by an owner holding only the read lock: refused
                            * (two upgraders would wait for each other for ever); not retried */
    RLOCK_STATUS_COUNT
} rlock_status;

/* A short English name for a status; never NULL. */
RLOCKDEF const char *rlock_status_str(rlock_status st);

/* ======================================================================== */
/* 3. RESP codec (RESP2 and the RESP3 types Redis sends)                     */
/* ======================================================================== */

typedef enum rlock_resp_type {
    RLOCK_RESP_NONE = 0,
    RLOCK_RESP_STATUS,   /* +OK      str/len */
    RLOCK_RESP_ERROR,    /* -ERR ... str/len */
    RLOCK_RESP_INTEGER,  /* :42      integer */
    RLOCK_RESP_BULK,     /* $3 abc   str/len */
    RLOCK_RESP_NIL,      /* $-1 or *-1 */
    RLOCK_RESP_ARRAY,    /* *N ...   count, and the first RLOCK_RESP_MAX_ELEMS elements */
    /* RESP3 (after HELLO 3): */
    RLOCK_RESP_PUSH,     /* >N ...   out-of-band message (Pub/Sub); like ARRAY */
    RLOCK_RESP_MAP,      /* %N ...   like ARRAY of 2N elements: key, value, ... */
    RLOCK_RESP_SET,      /* ~N ...   like ARRAY */
    RLOCK_RESP_BOOL,     /* #t / #f  integer 1 / 0 */
    RLOCK_RESP_DOUBLE,   /* ,1.5     str/len (the text) */
    RLOCK_RESP_BIGNUM    /* (123...  str/len (the digits) */
    /* also read: _ (NIL), !N blob error (ERROR), =N verbatim (BULK without
     * its "txt:" prefix), |N attributes (skipped: the value that follows) */
} rlock_resp_type;

#define RLOCK_RESP_MAX_ELEMS 4 /* top-level elements of an array kept (scalars only) */

/* A scalar value inside a reply; str points into the parser's input buffer. */
typedef struct rlock_resp_value {
    rlock_resp_type type;
    long long integer;
    const char *str;
    size_t len;
} rlock_resp_value;

typedef struct rlock_reply {
    rlock_resp_value v;                         /* the reply itself */
    long long count;                            /* aggregate element count (map: 2N) */
    rlock_resp_value elem[RLOCK_RESP_MAX_ELEMS];/* first elements; nested arrays as type ARRAY */
} rlock_reply;

/* Parse one complete reply from buf[0..len) (RESP2, and RESP3 unless
 * RLOCK_NO_WAITING: only waiting asks a server for RESP3).
 *   > 0  a reply of that many bytes was parsed into *out
 *   = 0  incomplete: feed more bytes (buf grows; call again from the start)
 *   < 0  protocol error (malformed, too deep, a length that cannot fit in
 *        max_len bytes). Bounded: never reads outside buf, never trusts a
 *        declared length or count beyond max_len. */
RLOCKDEF long rlock_resp_parse(const unsigned char *buf, size_t len, size_t max_len, rlock_reply *out);

/* Encode a command (argc binary-safe arguments) into out. Returns the bytes
 * written, or 0 when it does not fit in cap. */
RLOCKDEF size_t rlock_resp_encode(unsigned char *out, size_t cap, int argc,
                                  const char *const *argv, const size_t *argvlen);

/* ======================================================================== */
/* 4. Connection / transport layer                                           */
/* ======================================================================== */

/* Transport return values for send/recv/connect. */
#define RLOCK_IO_WOULD_BLOCK 0   /* nothing moved now; try again later */
#define RLOCK_IO_ERROR      (-1) /* hard error; rlock calls close() and drops the connection */
#define RLOCK_IO_CLOSED     (-2) /* the peer closed the connection (recv got EOF) */
#define RLOCK_IO_BUSY       (-3) /* connect/idle: someone else uses the connection now (a program's
                                    own hiredis commands): rlock sends nothing, closes nothing,
                                    and fails this request with RLOCK_E_IO and the error text */

/* Wait events for the optional wait() hook. */
#define RLOCK_WANT_READ  1
#define RLOCK_WANT_WRITE 2

/* THE TRANSPORT CONTRACT
 * rlock owns retry loops, deadlines and the byte stream; a transport only
 * moves bytes. One thread at a time per node calls its hooks.
 *   send(ctx, buf, len)  -> bytes written (1..len; short writes are fine),
 *                           RLOCK_IO_WOULD_BLOCK (0) when it cannot write now,
 *                           RLOCK_IO_ERROR on a hard error.
 *   recv(ctx, buf, len)  -> bytes read (1..len; any chunking is fine),
 *                           RLOCK_IO_WOULD_BLOCK (0) when nothing is ready,
 *                           RLOCK_IO_CLOSED when the peer closed (EOF),
 *                           RLOCK_IO_ERROR on a hard error.
 *   RLOCK_IO_WOULD_BLOCK is 0, so a recv() that returns what the system
 *   recv() returns must map its EOF (0) to RLOCK_IO_CLOSED. Returning more
 *   than len is a transport bug: rlock drops the connection. EINTR is the
 *   transport's to retry (or to report as would-block); never an error.
 *   connect(ctx) optional -> 1 connected, RLOCK_IO_WOULD_BLOCK (0) while a
 *                           non-blocking connect is in progress (rlock calls
 *                           it again, and send/recv only after it said 1),
 *                           RLOCK_IO_ERROR on failure. Called before the first
 *                           request and after rlock dropped the connection. It
 *                           may block (a blocking transport), but then it must
 *                           bound itself: rlock cannot interrupt it, and the
 *                           time it takes counts against the lease. Without
 *                           it the transport came connected; once rlock
 *                           dropped it, it stays down (RLOCK_E_IO).
 *   close(ctx)   optional -> drop the connection; rlock calls it after an
 *                           error, a timeout (a late reply must never be read
 *                           as the answer to a later request), a protocol
 *                           error, a cancel, and from rlock_client_close.
 *   wait(ctx, want, timeout_ms) optional -> block until the connection can do
 *                           `want` (RLOCK_WANT_READ and/or WRITE) or
 *                           timeout_ms passes; > 0 ready, 0 timeout, < 0 error.
 *                           Only the blocking calls use it, and never with a
 *                           timeout past the next deadline (so a transport
 *                           cannot overrun the node timeout). Without it the
 *                           blocking calls spin on send/recv, so such a
 *                           transport should block inside recv()/send()
 *                           itself, bounded by a timeout of its own.
 *                           What wait() alone costs: one connection to wait
 *                           on is one call for the whole timeout. With n > 1
 *                           (Redlock, pub/sub waiting on every server) and no
 *                           wait_many, rlock cannot wait on all at once: it
 *                           probes each with wait(.., 0), then waits at most
 *                           1 ms on the first - up to n + 1 calls per ms of
 *                           waiting (about 3 per ms while two of a Redlock
 *                           round's nodes are late; about 4,000 for a pub/sub
 *                           waiter on 3 servers over 1 s), and a reply or
 *                           notice on any of them is seen within ~1 ms.
 *                           Waiting longer on one would leave another's
 *                           reply unread meanwhile (a NOSCRIPT answer whose
 *                           EVAL must go out before the round's deadline, a
 *                           release notice). wait_many ends the slicing.
 *   fd, events, wait_many, error   optional: see their fields below.
 * The non-blocking path (rlock_step, rlock_client_step, *_begin) calls only
 * connect, send, recv and close - never wait. It reads while a reply is due;
 * and once before it queues a request on an idle connection (nothing
 * outstanding, no subscription) it calls recv(): would-block means healthy,
 * EOF / error / stray bytes mean the server dropped it (CLIENT KILL, idle
 * timeout, restart), and rlock reconnects before sending. Under RESP3 a
 * connection with subscriptions is read at any time (pushed notices). */
struct rlock_interest;
typedef struct rlock_transport {
    void *ctx;
    long (*send)(void *ctx, const unsigned char *buf, size_t len);
    long (*recv)(void *ctx, unsigned char *buf, size_t len);
    int (*connect)(void *ctx);
    void (*close)(void *ctx);
    int (*wait)(void *ctx, int want, uint32_t timeout_ms);
    /* optional: the descriptor an event loop polls for this connection, -1
     * when not connected; NULL when the transport has none. Its readiness
     * must be the connection's: while bytes wait buffered inside the
     * transport (TLS records already decrypted) it returns -1 (step now).
     * Any step (rlock_client_step, rlock_step, *_begin, cancel) may close()
     * it - a timeout, an error, a reconnect - while an event loop still
     * watches it, and the next connect() may reuse the number: re-read
     * rlock_client_interest after every step, before waiting again. */
    int (*fd)(void *ctx);
    /* optional: block until one of n connections (with descriptors) can do
     * its events, or timeout_ms passes: > 0 ready, 0 timeout, < 0 error.
     * The blocking calls use it when every connection they wait on has the
     * same wait_many (POSIX adapter: one poll()); otherwise wait(). (The
     * compact engine, RLOCK_SMALLEST, waits on one connection: wait().) */
    int (*wait_many)(const struct rlock_interest *items, size_t n, uint32_t timeout_ms);
    /* optional: why the last connect/send/recv failed, e.g. "connect
     * 127.0.0.1:6379: Connection refused" (rlock_node_error shows it);
     * NULL or "" when it has no text. */
    const char *(*error)(void *ctx);
    /* optional: called instead of the recv() probe before rlock queues a
     * request on an idle connection: 1 healthy; RLOCK_IO_CLOSED or
     * RLOCK_IO_ERROR: the server dropped it (rlock reconnects); RLOCK_IO_BUSY:
     * someone else uses it now (nothing is sent). Must not consume bytes. */
    int (*idle)(void *ctx);
    /* optional, with fd: the events to watch on fd when rlock wants `want`
     * (RLOCK_WANT_*), for a transport whose own protocol reads while rlock
     * writes (TLS: the handshake waits for the server's answer while rlock
     * asks to write); NULL: want itself. */
    int (*events)(void *ctx, int want);
    /* optional: ms until this connection must be stepped again though its
     * fd stays quiet - its own bound (the adapters': a connect's or TLS
     * handshake's), which rlock_client_interest's timeout does not know;
     * UINT32_MAX: none now. The core never calls it: an event loop folds
     * it into its wait with rlock_posix_interest_timeout (any transport's,
     * wherever the connections were made). */
    uint32_t (*due)(void *ctx);
} rlock_transport;

/* rlock's own clock: monotonic milliseconds modulo 2^32 (the now_ms hook's
 * value, cut to 32 bits; it wraps every 49.7 days). Every interval rlock
 * keeps is below 2^31 ms (RLOCK_MAX_TTL_MS; longer waits are cut to it), so
 * two times are compared by their signed difference (RLOCK__MS_BEFORE), which
 * a wrap does not upset; 32-bit times keep Cortex-M code small. */
typedef uint32_t rlock__ms;
#define RLOCK__MS_BEFORE(a, b) ((rlock__ms)((rlock__ms)(a) - (rlock__ms)(b)) >= 0x80000000u)
/* a comes before b as seen from now: their signed distances from now
 * compared (a time up to 2^31 ms past is sooner than any ahead). For the
 * earliest of deadlines some of which may be past. */
#define RLOCK__MS_SOONER(now, a, b) \
    ((rlock__ms)((rlock__ms)((a) - (now)) ^ 0x80000000u) < (rlock__ms)((rlock__ms)((b) - (now)) ^ 0x80000000u))
/* "No deadline": this far ahead of now. Every real interval is shorter
 * (waits and timeouts are cut to RLOCK__MS_FAR - 1), so the earliest of
 * deadlines, started from now + RLOCK__MS_FAR, tells "none" by its value. */
#define RLOCK__MS_FAR 0x7fffffffu

/* One request in flight on a connection: whose reply it is (owner, tag: what
 * the layer above asked), and by when it must be answered. */
typedef struct rlock__pending {
    void *owner;          /* NULL: nobody waits for it any more (reply discarded) */
    rlock__ms deadline;   /* (after owner: no padding on 64-bit targets, 16 bytes, not 24) */
    short tag;            /* (short, len beside it: 16 bytes still) */
    unsigned short len;   /* its bytes in tx (rlock__x_timed_out; the compact engine's: tx_len when
                             queued, rlock__c_cmd - a cancel takes it back while all are there) */
} rlock__pending;

/* The owner of a request that is told of its answer by a function (private:
 * the layer above the client, the cluster's slot-map fetch). */
struct rlock__event;
struct rlock_client;
typedef struct rlock__call {
    void (*done)(struct rlock__call *self, struct rlock_client *c, size_t i, const struct rlock__event *ev);
} rlock__call;

/* A reply read piece by piece (private): one larger than the receive buffer
 * (CLUSTER SHARDS of a big cluster), each complete value handed to visit and
 * then forgotten. visit sees a scalar or an aggregate's header (type and
 * integer = its element count) at `depth` (aggregates around it), pos[d]
 * being the index within the aggregate open at depth d; and, with type
 * RLOCK_RESP_NONE, the end of the aggregate at `depth`. */
struct rlock__walk;
struct rlock__conn;
typedef void (*rlock__visit_fn)(void *user, const struct rlock__walk *w, const rlock_resp_value *v);
typedef struct rlock__walk {
    rlock__visit_fn visit;
    void *user;
    /* the exchange's reader of such a reply (rlock__x_walk_read), set when
     * the request is queued: a program that never walks a reply (no
     * cluster) does not link it */
    int (*read)(struct rlock__conn *n, struct rlock__event *ev);
    int depth, started, done;
    long long left[RLOCK_RESP_MAX_DEPTH];
    long long pos[RLOCK_RESP_MAX_DEPTH];
} rlock__walk;

/* The exchange's state of one connection (private), the same for a node
 * and a subscriber; their buffers and request FIFO are their own, sized for
 * what each sends and receives. (The compact engine's node puts it after
 * its request slot: its words, up to commands, end at offset 112 there,
 * within a Thumb short load's reach, 0..124.) */
typedef struct rlock__conn {
    int conn;             /* rlock__CONN_* */
#if !RLOCK__COMPACT
    int is_sub;           /* a subscriber connection: pushed Pub/Sub messages are not replies */
    int listen;           /* read even with nothing outstanding (subscriptions) */
    int hello;            /* send HELLO 3 at connect */
#endif
#if !RLOCK__COMPACT
    int proto;            /* 3 once HELLO 3 was accepted on this connection, else 0 (RESP2) */
#endif
    unsigned long gen;    /* connections made so far: a new one has a new descriptor, no subscriptions */
    int active;           /* an event of it is being handled: it is alive, no idle probe */
#if RLOCK__COMPACT
    unsigned head;        /* the replies due before the request's (6.8c's x.head) */
#endif
    unsigned count;       /* the FIFO of requests in flight (the general engine's: q[0..count), oldest first) */
#if !RLOCK__COMPACT
    unsigned failing;     /* the first `failing` of them failed with fail_st: to be reported */
    int fail_st;          /* (an rlock_status, in a word: no byte store this far in; the padding
                             before tx_len was there anyway) */
#else
    unsigned failing;     /* the request in flight failed with this rlock_status, to be reported
                             (0, RLOCK_OK: it did not; one word, not a flag and a status) */
#endif
    size_t tx_len;        /* tx's bytes, all unsent (sent ones are moved out) */
    size_t rx_len;
#if !RLOCK__COMPACT
    size_t rx_used;
    size_t held;          /* while AUTH or SELECT is unanswered, only tx's first `held` bytes
                             go (theirs, HELLO's): rlock__x_sendable */
#endif
    unsigned long commands;  /* commands queued on this connection (for benchmarks; before selected: 4 B less) */
    unsigned long selected; /* `commands` when node.db was last SELECTed again on an idle shared
                               connection (nothing queued since: not again; rlock__x_begin, c_claim) */
#if RLOCK__COMPACT
    int is_sub, hello;       /* (never read by the compact engine: here, after the words it reads,
                                which they pushed past offset 124, 10 B more code) */
#endif
#ifndef RLOCK_NO_CLUSTER
    rlock__walk *walk;       /* the reply of the request queued with RLOCK__X_WALK is read through it */
#endif
#if !RLOCK__COMPACT
    /* The rest of the connection, where the exchange finds it (set by
     * rlock_node_init / rlock_subscriber_init, and again when a client takes
     * the connection): one pointer reaches all it works on. */
    const void *owner;           /* its rlock_node or rlock_subscriber (is_sub): transport (the first
                                    member of both: rlock__x_t), credentials, db */
    struct rlock__pending *q;    /* the request FIFO, q_cap entries */
    unsigned char *tx, *rx;
    unsigned q_cap;
    size_t tx_cap, rx_cap;
#endif
    char xerr[RLOCK_ERR_LEN]; /* why the connection failed last */
} rlock__conn;

/* One Redis server connection. Caller-allocated; transport, username,
 * password and db are the caller's, the other fields private. Several
 * operations pipeline their requests on it: replies are matched to
 * requests in order (a FIFO of at most RLOCK_MAX_PIPELINE). */
typedef struct rlock_node {
    rlock_transport transport;
    const char *username; /* optional ACL user for AUTH (NULL: none) */
    const char *password; /* optional AUTH password (NULL: none); never logged */
    unsigned magic;       /* (private; here, before db: a subscriber's magic is at this offset too) */
    int db;               /* database SELECTed at connect, after AUTH (0: none sent) */
    /* --- private --- */
#if RLOCK__COMPACT
    /* (the compact engine's: its request slot and the exchange's words right
     * after the fields above, within Thumb's short loads (a word at 0..124);
     * the bytes below are far either way. Smallest configuration, Cortex-M4
     * -Os: 12 bytes less than the general order.) */
    rlock__pending q[RLOCK_MAX_PIPELINE];
    rlock__conn x;        /* the exchange */
#endif
    /* (small types: RLOCK_SMALLEST's one lock on one node stays within 2 KiB) */
    unsigned char fcall;    /* scripts go as FCALL (configured, or EVAL refused by ACL) */
    unsigned char scripted; /* a script ran here (not refused by the ACL): the fast path may be used
                               (the general engine's: the compact engine has no fast path) */
    unsigned short fn_named; /* the connection (gen, low 16 bits) that told its function version (CLIENT
                                SETNAME); a later connection whose gen matches mod 65536 is not named again */
#if !RLOCK__COMPACT
    rlock__conn x;        /* the exchange */
    rlock__pending q[RLOCK_MAX_PIPELINE];
#endif
    /* diagnostics of the last round on this node (set by the round layer) */
    rlock_status result;
    char err[RLOCK_ERR_LEN]; /* last error text (Redis message or transport reason) */
    unsigned char tx[RLOCK_TX_BUF];
    unsigned char rx[RLOCK_RX_BUF];
} rlock_node;

/* A receive-only Pub/Sub connection, for servers that refuse HELLO 3 (Redis
 * < 6, RESP2 only: a subscribed connection can send nothing else). It sends
 * AUTH, SUBSCRIBE and UNSUBSCRIBE, and reads release notices; its buffers
 * are sized for that. Caller-allocated; fields after `password` are private. */
typedef struct rlock_subscriber {
    rlock_transport transport;
    const char *username; /* optional ACL user for AUTH (NULL: none) */
    const char *password; /* optional AUTH password (NULL: none); never logged */
    /* --- private --- */
    unsigned magic;
    rlock__conn x;        /* the exchange: the same code as a node's */
    rlock__pending q[RLOCK_SUB_PIPELINE];
    unsigned char tx[RLOCK_SUB_TX_BUF];
    unsigned char rx[RLOCK_SUB_RX_BUF];
} rlock_subscriber;

struct rlock_lock;

/* Run-time hooks and defaults. Zero means default everywhere. */
typedef struct rlock_config {
    uint32_t node_timeout_ms;  /* per-node, per-exchange timeout [ttl/10 within 50..250, <= ttl/3] */
    uint32_t backoff_min_ms;   /* first retry delay while waiting [2] (<= 2^30) */
    uint32_t backoff_max_ms;   /* cap of the exponential backoff [128] (<= 2^30) */
    uint32_t max_attempts;     /* acquire rounds per call, 0 = until the wait deadline [0] */
    uint32_t recheck_ms;       /* a pub/sub waiter retries at least this often, bounding
                                  what a lost wake-up costs [1000] (<= 2^30) */
    uint32_t drift_permille;   /* clock drift allowance: ttl*permille/1000 + 2 ms [10] */
    const char *owner;         /* reentrant owner id; NULL: instance id + thread id (a handle
                                  whose release went unanswered takes random ones: rlock_release).
                                  A reentrant lock refuses "mode", "wq" and ids ending ":r" ":w"
                                  ":x" ":y" ":q" ":t" (a read-write lock's hash fields) */
    int fencing;               /* acquire also returns a fence token (INCR on "{key}:fence") [0] */
    /* 1: every acquire attempt is a script. 0: a barging simple lock without
     * fencing tries a plain SET key token NX PX ttl first (the uncontended
     * fast path; refused, a script attempt follows at once), once a script
     * has run on each node (not with a user the ACL refuses scripts). Set it
     * for an ACL user that may run EVALSHA but not SET. (The compact engine,
     * RLOCK_SMALLEST, has no fast path: always the script.) [0] */
    int scripts_only;
    /* How the scripts run: RLOCK_SCRIPTS_AUTO (EVALSHA, EVAL on NOSCRIPT, and
     * on a server whose ACL refuses EVAL/EVALSHA with NOPERM that node
     * switches to FCALL for good), RLOCK_SCRIPTS_EVAL (never FCALL), or
     * RLOCK_SCRIPTS_FCALL (Redis >= 7 functions from the start). [AUTO] */
    int scripts;
    /* Replica acknowledgement: an acquire also sends WAIT replicas timeout,
     * pipelined behind its script (or fast-path SET) on each node (one round
     * trip). A node whose grant fewer than `replicas` replicas acknowledged
     * within replica_timeout_ms [node timeout / 2] does not count: the grant
     * is released and the acquire says RLOCK_E_REPLICAS - or, with
     * replica_warn = 1, the lock is kept and rlock_replica_acks() tells.
     * WAIT makes a failover that promotes an acknowledging replica keep the
     * lock; it is NOT consensus: a replica that acked can still lose the
     * write, or a non-acking one be promoted (see README). 0: off [0] */
    uint32_t replicas;
    uint32_t replica_timeout_ms;
    int replica_warn;
    /* 1: a waiter waits for release notices instead of polling: HELLO 3 at
     * connect, and under RESP3 (Redis >= 6) it SUBSCRIBEs on its command
     * connection (one socket per server). A server that refuses HELLO 3 uses
     * the subscriber connections (rlock_client_set_subscribers) if set, else
     * backoff. [0] */
    int pubsub;
    uint32_t renew_every_ms;   /* rlock_renew_poll renews this often [ttl/3] */
    uint32_t max_renewals;     /* stop renewing after this many, 0 = no cap [0] */
    uint32_t max_hold_ms;      /* never renew past this total hold time, 0 = no cap [0] */
    /* Called once per grant when a held lock is found lost (extend/renew
     * refused, validity ran out in rlock_renew_poll or before an extend or
     * acquire, or a release found it gone: RLOCK_LOST). Runs inside the
     * rlock call.
     * Release it still: a late or timed-out extend may have landed (the
     * release, owner-checked with the same token, deletes what it left). */
    void (*on_lost)(struct rlock_lock *lk, void *user);
    /* Monotonic milliseconds [RLOCK_NOW_MS]: never stepping back (not wall
     * time). One that does is survived, not trusted: rlock_renew_poll. */
    uint64_t (*now_ms)(void *user);
    int (*random_bytes)(void *user, unsigned char *buf, size_t n); /* 0 = ok [RLOCK_RANDOM_BYTES] */
    void (*sleep_ms)(void *user, uint32_t ms);      /* blocking calls only [RLOCK_SLEEP_MS] */
    void *hook_user;
} rlock_config;

/* rlock_config.scripts. FCALL runs each script as a Redis 7 function of a
 * library of its own named "rlock_" VERSION "_" + the first 8 hex digits of
 * the script's SHA1 (rlock_function_name; VERSION, rlock_function_version: 12
 * hex digits folded over every script's SHA1): a changed script is a new
 * library, so versions never overwrite each other's code, and loading one again (FUNCTION
 * LOAD REPLACE, sent pipelined before the FCALL when the server says the
 * function is not there) replaces it with the very same text. */
enum { RLOCK_SCRIPTS_AUTO = 0, RLOCK_SCRIPTS_EVAL = 1, RLOCK_SCRIPTS_FCALL = 2 };

/* Room for the lingering channel, any lock's: without waiting there is none
 * to keep. */
#ifdef RLOCK_NO_WAITING
#define RLOCK__LINGER_CAP 1
#else
#define RLOCK__LINGER_CAP (RLOCK_MAX_AUX_LEN + sizeof ":released")
#endif

/* A set of N nodes sharing one configuration. Caller-allocated, private. */
typedef struct rlock_client {
    /* (the fields read most come first: small offsets are short loads on a Cortex-M;
     * ops at 0, its address the client's own: the unlinking walks (rlock__op_unlink, the
     * compact rlock__result) compute none;
     * cfg at 4, a short add from c: rlock_client_init fills it) */
    struct rlock_lock *ops;      /* operations in progress (intrusive list through rlock_op.next) */
    rlock_config cfg;
    unsigned magic;
    size_t n_nodes;
    size_t n_subs;
    size_t linger_len;           /* (linger: below) */
    unsigned linger_mask;
#ifndef RLOCK_NO_CLUSTER
    /* Set: a Redis Cluster primary's (section 7): notices by SPUBLISH, waiting
     * by SSUBSCRIBE on the command connection (RESP3); what only such a
     * client sends or reads, reached through here so that only a program
     * with the cluster links it (rlock__shard_ops). */
    const struct rlock__shard_ops *shard;
#endif
    rlock_node *nodes[RLOCK_MAX_NODES];
#if RLOCK__COMPACT
    rlock_subscriber *subs[RLOCK_MAX_NODES]; /* optional pub/sub connections, subs[i] to nodes[i]'s server */
#else
    /* Every connection's exchange: node i's at i, then the optional pub/sub
     * connections (subscriber j, to node j's server, at n_nodes + j); NULL
     * after the last, where the walks over them all stop (one load a
     * connection, no count to add up: 78 B less than nodes, then subs). */
    struct rlock__conn *conns[2 * RLOCK_MAX_NODES + 1];
#endif
#if !RLOCK__COMPACT /* (waiting: the compact engine has none) */
    /* Where server j's subscriptions live (its RESP3 command connection or
     * subscriber j) and that connection's gen then: a new connection has none. */
    const rlock__conn *sub_on[RLOCK_MAX_NODES];
    unsigned long sub_gen[RLOCK_MAX_NODES];
#endif
    /* A channel no operation waits on any more, left subscribed (linger_mask:
     * on which subscribers) so that the next wait on the same key needs no
     * SUBSCRIBE; unsubscribed when another channel is wanted. */
    char linger[RLOCK__LINGER_CAP];
#if !RLOCK__COMPACT
    /* The random bits of instance_id, drawn anew at each rlock_client_init:
     * stamp[0] stamps each op linked (rlock_op.stamp, rlock__result). */
    uint32_t stamp[2];
#else
    /* The random bits of instance_id, drawn at each rlock_client_init;
     * written out in hex by rlock_client_instance_id, its only reader here
     * (the compact engine has no owner ids): 16 B less in client_init. (The
     * 8 B of RAM are sub_on's and sub_gen's, which it does not have.) */
    unsigned char id_bits[8];
#endif
    char instance_id[17];        /* 64 random bits, hex: owner ids and tokens */
    char why[RLOCK_WHY_LEN];     /* why the last call on it said RLOCK_E_BADARG */
} rlock_client;

/* Fill cfg with the defaults (for callers without designated initialisers). */
RLOCKDEF void rlock_config_init(rlock_config *cfg);

/* Prepare a node around a transport (copied). Does not connect. */
RLOCKDEF rlock_status rlock_node_init(rlock_node *node, const rlock_transport *tr);

/* Group n nodes (1..RLOCK_MAX_NODES, distinct) into a client; cfg may be NULL.
 * Needs the random source (for the instance id): RLOCK_E_RANDOM if it fails.
 * Re-initialise a client only with no operation running on it. c may be
 * memory never initialised, so this is not checked: an operation that
 * ran is cut off from the client (in its list no more). Its next
 * rlock_step, rlock_result, cancel or destroy ends it, RLOCK_E_STATE, its
 * requests disowned; an acquire (not a re-entry) also queues the release
 * of what its attempt may have been granted (owner-checked, its token) on
 * every node of c, sent with c's next step - on a node c no longer has, a
 * SET that landed stays until its TTL. The connections c takes (here, and
 * rlock_client_set_subscribers) drop the old ops' replies unread.
 * (Told by 32 random bits drawn at each init: a 2^-32 chance it is not.
 * Compact engine: told by its rlock_step not finding it in the client's
 * list - not rlock_result alone, which stays O(1) - once nothing is in
 * flight on the node: a request of its that was out is first answered
 * through the client's node and judged (an acquire granted then ends
 * RLOCK_OK, held); its cancel or destroy releases what it was granted.) */
RLOCKDEF rlock_status rlock_client_init(rlock_client *c, rlock_node *nodes, size_t n,
                                        const rlock_config *cfg);

/* Connect every node now (blocking, each bounded by timeout_ms) and AUTH.
 * Returns RLOCK_OK when a quorum is up. With several nodes it also checks
 * that they are distinct servers: each that answered is asked its run_id
 * (INFO server, through a small EVAL; a second round, also bounded by
 * timeout_ms). Two nodes with one run_id are one server under two names
 * (127.0.0.1 and localhost, a TCP port and its unix socket) and would cast
 * two Redlock votes: RLOCK_E_BADARG, rlock_node_error() of the second says
 * "same server as node I (run_id ...)", every connection is closed and the
 * client is left unusable, as after a failed rlock_client_init. A node
 * whose user may not run EVAL or INFO is not compared. Optional, but only
 * this call checks: operations connect lazily, without the check. */
RLOCKDEF rlock_status rlock_client_connect(rlock_client *c, uint32_t timeout_ms);

/* Close every node's connection. The client can be used again (reconnects).
 * Operations in progress are not ended: an acquire whose attempt was out has
 * its answer lost (an unknown outcome, as any I/O error), and its next
 * rlock_step, rlock_cancel or rlock_lock_destroy releases what it may have
 * granted, on a new connection - so end them (rlock_lock_destroy or
 * rlock_cancel) before closing the transport, or better before this call. */
RLOCKDEF void rlock_client_close(rlock_client *c);

RLOCKDEF size_t rlock_client_quorum(const rlock_client *c); /* n/2 + 1 */
/* The client's instance id: 16 hex characters (64 random bits drawn at
 * rlock_client_init) that start every default reentrant owner id
 * ("<id>:<thread>") - what to log to tell this process's holds from
 * others'. "" for a bad client. */
RLOCKDEF const char *rlock_client_instance_id(const rlock_client *c);

/* Why the last call on c (init, connect, set_subscribers) returned
 * RLOCK_E_BADARG, naming the argument and the bound, e.g. "drift_permille
 * 1000 is not below 1000"; "" when none. Never NULL. */
RLOCKDEF const char *rlock_client_error(const rlock_client *c);

/* Wake waiters on release through Redis Pub/Sub instead of polling, on
 * servers that refuse HELLO 3 (with cfg.pubsub and Redis >= 6 the command
 * connection is used and no subscriber is needed). subs are extra
 * connections (RESP2 needs one to subscribe) to the same servers as the
 * client's nodes, subs[i] to nodes[i]'s server; n = 1..n_nodes. A waiter
 * subscribes after its first failed attempt, retries at once, then sleeps
 * until a release message or the holder's PTTL, whichever is first (pub/sub
 * is at-most-once). Without subscribers, waiting is backoff. */
RLOCKDEF rlock_status rlock_client_set_subscribers(rlock_client *c, rlock_subscriber *subs, size_t n);

/* Prepare a subscriber around a transport (copied). Does not connect. */
RLOCKDEF rlock_status rlock_subscriber_init(rlock_subscriber *sub, const rlock_transport *tr);
RLOCKDEF const char *rlock_subscriber_error(const rlock_subscriber *sub); /* why it failed last; "" */
RLOCKDEF unsigned long rlock_subscriber_commands(const rlock_subscriber *sub); /* commands sent so far */
RLOCKDEF int rlock_subscriber_wants(const rlock_subscriber *sub); /* RLOCK_WANT_* bits, as rlock_node_wants */

/* Per-node diagnostics for the last operation. */
RLOCKDEF rlock_status rlock_node_status(const rlock_node *node);
RLOCKDEF const char *rlock_node_error(const rlock_node *node);    /* "" when none */
RLOCKDEF unsigned long rlock_node_commands(const rlock_node *node); /* commands sent so far */
RLOCKDEF int rlock_node_wants(const rlock_node *node); /* RLOCK_WANT_* bits while an op waits on it */

/* --- event loops: which connections to watch, then rlock_client_step --- */
typedef struct rlock_interest {
    const void *conn;         /* the connection: its rlock_node or rlock_subscriber */
    int fd;                   /* its descriptor (transport fd hook), -1: none (the transport has no fd
                                 hook, or is not connected yet: step now) */
    int events;               /* RLOCK_WANT_READ and/or RLOCK_WANT_WRITE */
    unsigned long gen;        /* grows each time the connection is made again: a changed gen means
                                 the descriptor may be another one (re-register it) */
} rlock_interest;
/* Every connection of c that its operations need now, up to cap of them into
 * out; returns how many there are (more than cap: call again with more room).
 * *timeout_ms: call rlock_client_step at the latest after this long even
 * without I/O (0: now; UINT32_MAX: no deadline) - rlock's own deadlines:
 * a transport's connect bound is its own (its due hook; cap the wait with
 * rlock_posix_interest_timeout, which calls it, or with the POSIX adapter
 * a silent Sentinel costs the whole request instead of its share of
 * connect_timeout_ms, with TLS a silent handshake does). The list holds until the
 * next call into c: a step may close a listed descriptor (timeout, error,
 * reconnect - the number may then come back for another connection, with a
 * new gen), so call this again after every step, before waiting, and stop
 * watching a connection that is no longer listed. */
RLOCKDEF size_t rlock_client_interest(rlock_client *c, rlock_interest *out, size_t cap, uint32_t *timeout_ms);
/* Drive every operation of c (after readiness or the timeout). An operation
 * that finished keeps its result until rlock_result(lk) (or rlock_step)
 * returns it. */
RLOCKDEF rlock_status rlock_client_step(rlock_client *c);

/* ======================================================================== */
/* 5. Lock operations                                                        */
/* ======================================================================== */

typedef enum rlock_kind {
    RLOCK_KIND_SIMPLE = 1,    /* string key = token; not reentrant */
    RLOCK_KIND_REENTRANT = 2, /* hash {owner -> hold count} */
    /* Section 5b (primitives): */
    RLOCK_KIND_SEMAPHORE = 3, /* zset {token -> lease end}: rlock_semaphore_init */
    RLOCK_KIND_READ = 4,      /* read side of a read-write lock (hash; reentrant per owner) */
    RLOCK_KIND_WRITE = 5,     /* write side of the same read-write lock */
    RLOCK_KIND_MULTI = 6      /* several simple-lock keys, all or none: rlock_multi_init */
} rlock_kind;

/* What one node says a lock key holds (rlock_inspect), read without changing it. */
typedef struct rlock_info {
    rlock_status st;          /* this node's answer: RLOCK_OK, or why there is none */
    char kind[12];            /* "free", "simple", "reentrant", "semaphore", "read", "write", "other" */
    long long pttl_ms;        /* the key's remaining TTL; -2 absent, -1 none (not an rlock key) */
    long long holders;        /* owners holding it: 1 simple/reentrant/write, live permits, live readers */
    long long holds;          /* hold count of the first holder (reentrant / write / read) */
    long long waiters;        /* wait-queue length (stale entries of dead waiters included) */
    int writer_waiting;       /* read-write: a waiting writer keeps new readers out */
    int readers_turn;         /* read-write: a writer left while readers waited; they go first */
    long long readers_waiting; /* read-write: readers waiting (a writer holds or waits) */
    char owner[17];           /* first 16 characters of the first holder's token / owner id */
} rlock_info;

typedef enum rlock_state {
    RLOCK_STATE_IDLE = 0,     /* not held */
    RLOCK_STATE_HELD,         /* held; rlock_validity_ms() > 0 until it runs out (0 while the
                               * clock hook reads before the grant: rlock_validity_ms) */
    RLOCK_STATE_LOST          /* was held; an extend or release found it gone */
} rlock_state;

/* What the last rlock_renew_poll call did, without guessing from counters. */
typedef enum rlock_renewal {
    RLOCK_RENEW_NONE = 0,     /* no call yet, or it returned an error before doing anything */
    RLOCK_RENEW_NOT_DUE,      /* held; nothing was due (or renewals are capped) */
    RLOCK_RENEW_IN_FLIGHT,    /* a renewal is out (RLOCK_WOULD_BLOCK) */
    RLOCK_RENEW_RENEWED,      /* a renewal completed: validity was extended */
    RLOCK_RENEW_FAILED,       /* a renewal failed with an unknown outcome; retried sooner */
    RLOCK_RENEW_LOST          /* the lock is lost (refused, or validity ran out) */
} rlock_renewal;

/* A number an answer carries (private): 32 bits in the compact engine
 * without fencing, where every such number fits (section 6.8c). */
#if RLOCK__COMPACT && !RLOCK__HAS_FENCING
typedef int32_t rlock__num;
#else
typedef long long rlock__num;
#endif

#if RLOCK__COMPACT
/* The compact engine's (section 6.8c) round and operation: one node, simple
 * locks; only the fields its build reads, the most used first (Thumb's short
 * loads reach a struct's first 124 bytes). Same names as the general
 * engine's. cleanup, ttl and wake are the general encoder's (the templates,
 * RLOCK__ENC_TEMPLATE, read the op and the phase instead), evaled the EVAL
 * fallback's: the compact engine reaches them by the macros below (nothing,
 * or 0, where a build has no such field). */
typedef struct rlock_round {
    rlock__ms start;
#if !RLOCK__ENC_TEMPLATE
    int cleanup;
#endif
    int script;
#if !RLOCK__ENC_TEMPLATE
    uint32_t ttl;
#endif
#if RLOCK__HAS_EVAL
    unsigned evaled;
#endif
#if !RLOCK__ENC_TEMPLATE
    unsigned wake;
#endif
} rlock_round;
#if RLOCK__ENC_TEMPLATE
#define RLOCK__C_SET_ENC(r, f, v) (void)0
#else
#define RLOCK__C_SET_ENC(r, f, v) ((r)->f = (v))
#endif
#if RLOCK__HAS_EVAL
#define RLOCK__C_EVALED(r) ((r)->evaled)
#define RLOCK__C_SET_EVALED(r, v) ((r)->evaled = (v))
#else
#define RLOCK__C_EVALED(r) 0u
#define RLOCK__C_SET_EVALED(r, v) (void)0
#endif
typedef struct rlock_op {
    struct rlock_lock *next;
    int kind;
    int phase;
    int result;               /* (rlock_status, in words: Thumb stores a byte this far only in 4 bytes);
                                 before DONE, an acquire's to report if it stops after the cleanup */
    int timed;
    int cancel;
    int renewing;             /* the extend rlock_renew_poll started (cleared with the op: rlock__op_link) */
    uint32_t attempts;
#if !RLOCK__ENC_TEMPLATE /* (the general encoder's; the templates send no wait left: rlock__c_tpls) */
    uint32_t wait_left;
#endif
    uint32_t ttl;
    uint32_t life;            /* acquire, extend: ttl less the drift (rlock__c_start) */
    rlock__ms wait_end;
    rlock__ms wake_at;
    rlock_round round;
    int queue;                /* (0: it queues no waiter; tests set it for the longest request) */
} rlock_op;
#else
/* One request to a set of nodes and what each answered (private). The
 * answers are kept as plain numbers; rlock__tally_* sum them up. */
typedef struct rlock_round {
    rlock_status st[RLOCK_MAX_NODES]; /* (first, and the op's timers below first: Thumb's short loads;
                                         just before v instead: 16 bytes more) */
    unsigned queued;          /* handed to the node's connection (before mask, and start before
                                 timeout: 12 B less code, full configuration) */
    unsigned mask;            /* nodes asked */
    unsigned answered;        /* answer (or failure) recorded */
    unsigned evaled;          /* NOSCRIPT came back: the EVAL form went out (FCALL: FUNCTION LOAD) */
    unsigned acking;          /* cfg.replicas: nodes whose WAIT reply is due */
    unsigned stale_wait;      /* nodes whose next WAIT reply belongs to a script sent again */
    unsigned short_acks;      /* nodes whose WAIT reported fewer than cfg.replicas */
    int script;               /* RLOCK__S_* */
    int want;                 /* its answer: 2 a plain SET NX PX's (no script), 1 an acquire script's, 0 an integer */
    int cleanup;              /* a cleanup release: wakes no waiter, keeps the diagnostics */
    unsigned wake;            /* release: the nodes that wake a waiter (Redlock: two, see round_begin) */
    int32_t acks;             /* fewest acks reported, kept + 1 (0: none, from the memset), as rlock_lock.acks */
    rlock__ms start;
    uint32_t timeout;         /* per-node timeout of this round */
    uint32_t ttl;             /* the lease it asks for (<= RLOCK_MAX_TTL_MS; written out when encoding) */
    rlock__num v[RLOCK_MAX_NODES][3];
} rlock_round;

/* The operation in progress on a lock (private); its round last, after
 * the scalars (see rlock_lock), those read least just before it (full
 * configuration, Cortex-M4 -Os: 16 bytes less). */
typedef struct rlock_op {
    struct rlock_lock *next;  /* the client's list of operations in progress */
    int kind;                 /* rlock__OP_* */
    int phase;                /* rlock__PH_* */
    uint32_t ttl;             /* ttl this op asks for (<= RLOCK_MAX_TTL_MS) */
    rlock__ms wait_end;       /* acquire: give up after this */
    rlock__ms wake_at;        /* backoff / wait: next round not before */
    int retry;                /* after the cleanup round: retry (1; 2: even past the wait) or report fail */
    int timed;                /* acquire was given a wait time (> 0): report TIMEOUT; 2: >= 2^31 ms, forever */
    int queue;                /* this round's attempt joins the wait queue */
    int plain;                /* 1: this attempt is the uncontended fast path (SET NX PX, no script);
                                 2: it was refused, the script attempt follows at once */
    int woke;                 /* a release notice named this waiter */
    int fresh;                /* the next attempt draws a new token (see rlock__acquire_round_done) */
    int standby;              /* fair: a release notice named this waiter next in line */
    unsigned sub_ok;          /* subscribers subscribed to this lock's channel */
    unsigned sub_pending;     /* subscribers whose SUBSCRIBE is unanswered */
    uint32_t attempts;
    uint32_t wait_left;       /* wait left, ms, sent with an attempt that may queue */
    rlock_info *info;         /* inspect: one per node */
    uint32_t arg5;            /* acquire: semaphore permits / writer's hold-off ms */
    uint32_t holder_wait;     /* smallest PTTL reported by a node that refused (at most 2^31 - 1), + 1;
                                 0 none: set by each acquire round, read only after one */
    unsigned reached;         /* nodes an earlier acquire round of this op sent its request to */
    uint32_t stamp;           /* its client's stamp[0] when linked: another, the client was initialised
                                 again since (rlock__result). (Here: within Thumb's short loads) */
    rlock_status result;      /* final status once phase is DONE; before, an acquire's to report
                                 if it stops after the cleanup */
    int cancel;               /* cancelled: release what the round in flight grants, then stop */
    int hops;                 /* semaphore (Redlock): attempts sent at once for a slot a refusal named */
    int renewing;             /* the extend rlock_renew_poll started (cleared with the op: rlock__op_link) */
    rlock_round round;
} rlock_op;
#endif /* RLOCK__COMPACT */

struct rlock__scripts;

/* A Redis Cluster operation across its redirects (private, section 7). */
typedef struct rlock__cluster_op {
    struct rlock_lock *next;  /* the cluster's list of operations in progress */
    struct rlock_cluster *owner; /* that cluster (rlock_lock_destroy ends the operation there) */
    union { long long ttl; struct rlock_info *info; } arg; /* acquire / extend: the ttl; inspect: where its answer goes */
    rlock__ms wait_end, wake_at, io_end; /* io_end: when asking the others for an unreachable primary stops */
    unsigned char kind, phase, hops, io, again, asked, timed;
    unsigned short port;      /* a redirect to "?:port": its port, until the map read again says where */
} rlock__cluster_op;

/* One lock on one key. Caller-allocated; fields are private. Those most
 * code reads come first, then the operation (its round last): Thumb's short
 * loads reach only a struct's first 124 bytes, so this order is the smaller
 * code (full configuration, Cortex-M4 -Os: 166 bytes less than grouped by
 * concern). Then grant, renewal, and the texts. The operation last instead
 * (its 216-byte round.v out of the middle, the grant within 124 bytes) or
 * just before the texts measured 178 / 176 bytes more. */
#if RLOCK__COMPACT
/* The compact engine's: the same fields (the public calls both engines
 * share name them all), in the order of what its code reads most - state,
 * grant and renewal, then the operation - so that they sit within Thumb's
 * short loads (smallest configuration, Cortex-M4 -Os: 48 bytes less than
 * the general order); what it never reads after them. Keep the two lists
 * the same fields. */
typedef struct rlock_lock {
    rlock_client *client;
    unsigned magic;
    rlock_kind kind;
    rlock_state state;
    rlock_renewal renewal;
    unsigned char stale;
    int lost_notified;
    uint64_t validity_end;    /* (here, not after the operation: 6 bytes less) */
    size_t key_len;
    rlock__ms held_since;
    rlock__ms granted_at;
    uint32_t ttl_ms;
    size_t votes;
    rlock__ms renew_at;
    uint32_t renewals;
    uint32_t prng;
    rlock_op op;
    rlock__num fence;         /* (its numbers: 32-bit without fencing; read at a grant only) */
    unsigned held_mask;
    int queued;
    const struct rlock__scripts *scripts;
    size_t aux_base_len;
    long long param;
    long long acks;
    int32_t slot;
    int asking;
    uint32_t fair_grace;      /* (after param and acks: no padding before them, 8 bytes less) */
    char waiter_id[17];
    char owner[RLOCK_MAX_OWNER_LEN + 1];
    char why[RLOCK_WHY_LEN];
    char key[RLOCK_MAX_KEY_LEN];
} rlock_lock;
#else
typedef struct rlock_lock {
    rlock_client *client;
    /* identity and state */
    unsigned magic;
    rlock_kind kind;
    rlock_state state;
    unsigned held_mask;       /* nodes that granted or extended the current hold */
    int lost_notified;
    int queued;               /* this acquisition queued its waiter id (a Redlock release unqueues it) */
    const struct rlock__scripts *scripts; /* the scripts it may send (6.4): its kinds' */
    size_t key_len;
    /* Auxiliary names are aux_base + suffix (":fence", ":released", ...):
     * aux_base is "{key}", or key itself when it has a hash tag, so every
     * auxiliary key hashes to the key's cluster slot. It is not stored (the
     * key is kept once): derived from key where a name is needed. */
    size_t aux_base_len;      /* its length: key_len + 2, key_len, or 0: none exists (stray '}') */
    uint32_t fair_grace;      /* 0: the barging lock; else fair, and how long a release reserves the key */
    /* the operation in progress */
    rlock_op op;
    long long param;          /* semaphore: permits; write: writers-first (1/0); multi: key count */
    uint32_t prng;            /* jitter only (xorshift32); seeded from the secure source */
    /* grant */
    long long fence;          /* fence token of the current grant (0 when fencing is off) */
    uint64_t validity_end;    /* when validity runs out, in the now_ms hook's own 64 bits (not
                               * rlock__ms): rlock_validity_ms reads 0 however long the handle lay unused */
    long long holds;          /* reentrant hold count seen on the quorum */
    int32_t acks;             /* cfg.replicas: fewest WAIT acks of a granting node (WAIT counts
                               * replicas: < 2^31), -1 none; kept + 1 (0: rlock_lock_init's memset) */
    rlock__ms held_since;     /* when the current grant's first round started */
    rlock__ms granted_at;     /* when the round of the last grant/extend started */
    uint32_t ttl_ms;          /* the lease of the current grant */
    size_t votes;             /* nodes that agreed in the last round */
    /* renewal */
    rlock__ms renew_at;       /* rlock_renew_poll extends at or after this */
    uint32_t renewals;
    int32_t slot;             /* semaphore: the permit slot held, or (Redlock) the one to ask for next */
    int asking;               /* cluster (rlock_cluster_*): 1 send ASKING before the script; 2 name
                               * the lock key alone (a release after -TRYAGAIN) */
#ifndef RLOCK_NO_CLUSTER
    rlock__cluster_op cl;     /* cluster: the rlock_cluster_* operation in progress */
#endif
    rlock_renewal renewal;    /* what the last rlock_renew_poll did */
    unsigned char stale;      /* a release or cleanup went unanswered: it may still land, so the
                               * owner id it carried holds no more (rlock__round_answer) */
    char waiter_id[17];       /* random id this handle waits under (not the token) */
    char owner[RLOCK_MAX_OWNER_LEN + 1]; /* token (simple) or owner id (reentrant); NUL-terminated wherever
                                          * written, so its length is strlen's (none kept) */
    char why[RLOCK_WHY_LEN];  /* why the last call on it said RLOCK_E_BADARG */
    char key[RLOCK_MAX_KEY_LEN];
} rlock_lock;
#endif

/* Prepare a lock handle for key[0..key_len) (1..RLOCK_MAX_KEY_LEN bytes,
 * binary-safe; copied). Sends nothing. RLOCK_E_STATE (the handle left as
 * it is) while an operation of lk still runs on c: destroy it first
 * (rlock_lock_destroy ends it; its requests may be out, its grant held).
 * A lock lk holds (no operation running) is forgotten, as by destroy, not
 * released - it expires by its TTL: release first. (lk may be memory never
 * initialised, so only c's list of operations is looked at, never lk.) */
RLOCKDEF rlock_status rlock_lock_init(rlock_lock *lk, rlock_client *c, const char *key,
                                      size_t key_len, rlock_kind kind);

/* Why the last call on lk returned RLOCK_E_BADARG, naming the argument and
 * the bound: "key is 300 bytes, RLOCK_MAX_KEY_LEN is 256", "ttl 1 ms is not
 * above the drift allowance 2 ms"; "" when none. Never NULL. */
RLOCKDEF const char *rlock_lock_error(const rlock_lock *lk);

/* Forget the handle; later calls on it return RLOCK_E_BADARG. A held lock is
 * not released (it expires by its TTL): release first. An operation in
 * progress is ended first, as by rlock_cancel - blocking, bounded by the
 * node timeout: an acquire whose outcome the program has not seen (its
 * attempt still out, or finished granted but its result not read yet) may
 * hold the lock with no handle left to release it, so what it granted is
 * released before destroy returns (a node that cannot be reached keeps its
 * copy until the lease runs out); an extend or release is abandoned (as by
 * rlock_cancel: one that has not gone out never does - a lock whose
 * release had not gone out stays until its lease runs out). Not
 * to block (an event loop): rlock_cancel_begin, rlock_step until it is not
 * RLOCK_WOULD_BLOCK, then destroy, which then sends nothing. A cluster
 * lock's rlock_cluster_* operation is ended the same way (as by
 * rlock_cluster_cancel; what its acquire granted released through the
 * cluster), and the handle leaves the cluster's list of operations. */
RLOCKDEF void rlock_lock_destroy(rlock_lock *lk);

/* --- fair locks --- */
/* Make lk fair (fair = 1) or the default barging lock (0), for its next
 * acquires; simple and reentrant alike, with or without Pub/Sub waiting.
 * Waiters are served in the order the server queued them (its clock only):
 * a release reserves the key for the oldest waiter for grace_ms (0:
 * RLOCK_FAIR_GRACE_MS) - no one else, the releaser included, can take it -
 * and that waiter claims it with an ordinary acquire (validity counted from
 * its own send time). A waiter that died or missed its notice is skipped
 * once the grace runs out: the next in line, told it is next, re-checks
 * then. One whose wait ran out left the queue with its last attempt (no
 * wait left), and costs none; so does one cancelled (rlock_cancel_begin
 * sends that last attempt: a key reserved for it meanwhile is claimed and
 * released, without a hand-off). Every client of a key must agree on fair
 * or not.
 * Redlock: each node keeps its own FIFO and reserves for its own oldest
 * waiter; a waiter holds the lock when a quorum of nodes served it. Waiters
 * that queued within a round trip of each other may be in a different order
 * on different nodes: a round whose reservations split without a quorum
 * returns its partial grants without a hand-off and retries within a few
 * ms, so a split lasts one round and the free nodes go to the first comer.
 * RLOCK_E_STATE while an operation runs or the lock is held. */
#define RLOCK_FAIR_GRACE_MS 100u
RLOCKDEF rlock_status rlock_lock_set_fair(rlock_lock *lk, int fair, uint32_t grace_ms);

/* --- blocking calls (a loop over the non-blocking ones) --- */

/* Acquire with lease ttl_ms, waiting up to wait_ms (0: try once; 2^31 ms,
 * 24.8 days, or more: forever - rlock's clock is 32-bit, LLONG_MAX says it).
 * RLOCK_OK, RLOCK_NOT_ACQUIRED (wait_ms == 0), RLOCK_TIMEOUT, or an error.
 * A reentrant lock already held by this owner is re-entered (count + 1). */
RLOCKDEF rlock_status rlock_acquire(rlock_lock *lk, long long ttl_ms, long long wait_ms);
RLOCKDEF rlock_status rlock_try_acquire(rlock_lock *lk, long long ttl_ms);

/* Reset the lease to ttl_ms, owner-checked. Never re-creates a vanished lock:
 * that is RLOCK_LOST. It waits for answers until the node timeout or the
 * validity's end, whichever is first: unanswered then, RLOCK_LOST. */
RLOCKDEF rlock_status rlock_extend(rlock_lock *lk, long long ttl_ms);

/* Owner-checked release. Reentrant: one hold is dropped; the key goes at 0.
 * RLOCK_OK, RLOCK_NOT_HELD (this handle holds nothing; nothing sent),
 * RLOCK_LOST (Redis no longer had it as ours: on_lost runs, unless this
 * grant's loss was told already), or an error. After an error
 * (E_IO, E_QUORUM, ...) the outcome is unknown - the lock may still be on
 * the servers - so the handle stays HELD and a new acquire on it returns
 * RLOCK_E_STATE until its validity runs out. Retry by calling rlock_release
 * again: it is owner-checked, so a retry never removes another's lock; it
 * returns RLOCK_LOST when the lock is already gone (the first try may have
 * landed late). The unanswered try may still land later, and would end a
 * later hold of the same owner id: a reentrant or read/write handle whose
 * release (or an acquire's cleanup) went unanswered holds under random owner
 * ids from then on (no longer the same owner as its other handles). */
RLOCKDEF rlock_status rlock_release(rlock_lock *lk);

/* --- non-blocking calls: begin, then rlock_step() until not WOULD_BLOCK --- */
RLOCKDEF rlock_status rlock_acquire_begin(rlock_lock *lk, long long ttl_ms, long long wait_ms);
RLOCKDEF rlock_status rlock_extend_begin(rlock_lock *lk, long long ttl_ms);
RLOCKDEF rlock_status rlock_release_begin(rlock_lock *lk);
/* Drive the op: RLOCK_WOULD_BLOCK while it runs, then its final status.
 * Wait for rlock_node_wants() on the client's nodes (rlock_subscriber_wants
 * on its subscribers; or rlock_client_interest for all) or until
 * rlock_next_timeout_ms(), whichever comes first, then call again. While
 * the op runs, each call steps the whole client (tries its connections):
 * an event loop with several locks calls rlock_client_step once, then
 * rlock_result on each lock. */
RLOCKDEF rlock_status rlock_step(rlock_lock *lk);
/* The op's result without any I/O: RLOCK_WOULD_BLOCK while it runs, then
 * its final status (once, as rlock_step); RLOCK_E_STATE: no op. (Ending
 * an acquire cut off by rlock_client_init queues its release, which may
 * probe an idle connection, as a *_begin does; sent by a later step.) */
RLOCKDEF rlock_status rlock_result(rlock_lock *lk);
/* Milliseconds until rlock_step() must be called again even without I/O
 * (0 while a connection is still to be made: it has no descriptor yet). */
RLOCKDEF uint32_t rlock_next_timeout_ms(const rlock_lock *lk);
/* Cancel the op in progress, leaving no partial grant behind: an acquire
 * whose attempt is out waits for its answers and releases whatever they
 * granted (driven like any op: RLOCK_WOULD_BLOCK, then rlock_step until it
 * is not; RLOCK_OK then means nothing of it is left - a node that cannot be
 * reached keeps its copy only until the lease runs out). Between rounds
 * (rlock_acquire_waiting), and while none of its requests went to a
 * connection yet (a full pipeline, the compact engine's turn; in the
 * compact engine also while none of its bytes went out, all still in
 * rlock's send buffer), it ends at once and sends nothing - but a waiter that
 * queued (Pub/Sub waiting, a fair lock, a semaphore) leaves the queue
 * first, by one last attempt with no wait left (what that claims is
 * released, as above), or the next release would wake it, reserve the key
 * or hand a permit to a waiter gone while the one behind it waits on. An
 * extend or release is abandoned: what of it has not begun to go out (in
 * rlock's send buffer, or waiting for room in a full pipeline or for its
 * turn) never does, one partly sent goes on whole (never cut in half),
 * what went out may still act on the servers, its answers are discarded,
 * and the lock's state is unchanged - a cancelled release leaves it HELD:
 * release again (owner-checked: OK, or RLOCK_LOST when the first one had
 * gone out and landed).
 * A finished op (rlock_step not yet called) is not undone: its result is
 * returned, and a granted lock is held. RLOCK_E_STATE: nothing in progress. */
RLOCKDEF rlock_status rlock_cancel_begin(rlock_lock *lk);
/* The blocking form of rlock_cancel_begin (bounded by the node timeout). */
RLOCKDEF void rlock_cancel(rlock_lock *lk);
/* 1 while an acquire waits between rounds: no attempt in flight, nothing
 * granted by it - cancelling it now ends it at once, sending nothing (a
 * waiter that queued - Pub/Sub, fair, semaphore: after one last attempt
 * that leaves the queue, rlock_cancel_begin). */
RLOCKDEF int rlock_acquire_waiting(const rlock_lock *lk);

/* --- state --- */
/* HELD, IDLE, or LOST - LOST as soon as validity has run out, even before
 * any call found it out. */
RLOCKDEF rlock_state rlock_lock_state(const rlock_lock *lk);
/* Milliseconds of validity left (ttl - elapsed - drift), 0 when none - and
 * 0 while a clock hook that stepped back reads before the grant (the time
 * since cannot be told; the servers' TTL runs on), the lock still HELD:
 * rlock_renew_poll renews it at once, and the renewal counts from its start. */
RLOCKDEF long long rlock_validity_ms(const rlock_lock *lk);
RLOCKDEF long long rlock_hold_count(const rlock_lock *lk); /* reentrant holds; 1/0 simple */
/* The token (simple) or owner id (reentrant), NUL-terminated; a semaphore
 * permit handed to the waiter: its waiter id (section 5b). */
RLOCKDEF const char *rlock_lock_token(const rlock_lock *lk);
/* Votes (nodes that agreed) in the last round. */
RLOCKDEF size_t rlock_last_votes(const rlock_lock *lk);
/* cfg.replicas: the fewest replica acknowledgements (WAIT) a granting node
 * reported in the last acquire; -1 when not asked or none granted. */
RLOCKDEF long long rlock_replica_acks(const rlock_lock *lk);
/* Fence token of the current grant (cfg.fencing): a number that grows with
 * every grant of this lock name, for the protected resource to reject stale
 * holders. Single node: strictly increasing, exact over INCR's whole
 * range (to 2^63 - 1: the script answers the counter's text, not a Lua
 * number, which is a double). Redlock: the largest of the
 * granting nodes' counters, NOT guaranteed monotonic - not even with every
 * node up: counters drift apart whenever a round is granted by a minority
 * (split votes under contention), and two grants through different
 * majorities can then go backwards; node failures and data loss add to it.
 * 0 when fencing is off or nothing is held. */
RLOCKDEF long long rlock_fence_token(const rlock_lock *lk);

/* --- renewal and lost-lock notice --- */
/* Thread-free renewal for an event loop or RTOS task: renews (extends to the
 * lock's ttl) when due, every cfg.renew_every_ms (default ttl/3). Sets
 * *next_ms to when it wants to be called again. Returns RLOCK_OK (nothing due,
 * or renewed), RLOCK_WOULD_BLOCK (a renewal is in flight: call again when the
 * nodes are ready or after *next_ms), RLOCK_LOST (lost: on_lost has run),
 * RLOCK_NOT_HELD, RLOCK_E_STATE (client busy with another op), or the error
 * of a failed renewal (it retries sooner, until validity runs out -> LOST).
 * A renewal in flight when validity runs out is LOST then (its wait ends
 * there, whatever node_timeout_ms).
 * After max_renewals / max_hold_ms it stops renewing; the lease then expires.
 * A clock hook that stepped back before the grant makes a renewal due at
 * once, caps or not (the time since cannot be told; the servers' TTL runs
 * on); while it reads before the hold's start, max_hold_ms does not stop
 * renewals (the hold so far cannot be told either). That renewal takes the
 * step as no time passed since the last grant: the hold counts on from
 * there, so max_hold_ms is not stretched by the step (by at most the time
 * between that grant and the step). A step back by less than the time since the last
 * grant cannot be told from a slow clock: the hook must be monotonic.
 * Redis Cluster: it renews on the primary that granted the lock and does not
 * follow redirects (it has no rlock_cluster). When the slot has moved it
 * returns RLOCK_E_MOVED (outcome RLOCK_RENEW_FAILED) and retries the same
 * node every renew interval / 4 until validity runs out (RLOCK_LOST), and so
 * does RLOCK_WATCHDOG: on RLOCK_E_MOVED call rlock_cluster_extend, which
 * follows MOVED / ASK and, after a MOVED, points lk at the new primary, where
 * later polls renew. */
RLOCKDEF rlock_status rlock_renew_poll(rlock_lock *lk, uint32_t *next_ms);
RLOCKDEF rlock_renewal rlock_renew_outcome(const rlock_lock *lk);

#ifdef RLOCK_WATCHDOG
/* --- optional renewal thread (POSIX threads; define RLOCK_WATCHDOG) --- */
#ifdef RLOCK_NO_POSIX
#error "RLOCK_WATCHDOG needs POSIX threads; use rlock_renew_poll from your own task instead"
#endif
#include <pthread.h>
typedef struct rlock_watchdog {
    rlock_lock shadow;        /* the lock, bound to the watchdog's own client */
    rlock_lock *lk;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, running;
    rlock_status last;
} rlock_watchdog;
/* Keep a HELD lock alive from a thread, with rlock_renew_poll on `own`: a
 * client of its own connections to the same servers (same node count), so
 * renewals never queue behind the application's commands. Until
 * rlock_watchdog_stop, do not call extend/release on lk. When the lock is
 * lost the watchdog stops renewing and calls lk's client on_lost with lk,
 * from the watchdog thread. */
RLOCKDEF rlock_status rlock_watchdog_start(rlock_watchdog *w, rlock_lock *lk, rlock_client *own);
/* Stop and join the thread; lk takes over the lock as the watchdog left it
 * (its validity, the nodes that still hold it, the last votes; or LOST).
 * Returns the last renewal status (RLOCK_OK when nothing failed). A renewal
 * it cancels in flight leaves rlock_renew_outcome(lk) RLOCK_RENEW_FAILED
 * (unknown outcome; lk's next rlock_renew_poll renews). */
RLOCKDEF rlock_status rlock_watchdog_stop(rlock_watchdog *w);
/* Thread-safe view: state and validity left, as the watchdog sees them. */
RLOCKDEF rlock_state rlock_watchdog_state(rlock_watchdog *w, long long *validity_ms);
#endif

/* ---- 5b. Primitives: semaphores, read-write locks, multi-locks, inspection ----
 * Each is an rlock_lock of its own kind, driven by the same calls as a lock
 * (rlock_acquire / _begin + rlock_step, rlock_extend, rlock_release,
 * rlock_renew_poll, the watchdog, rlock_cancel), waiting in the same queue
 * with one wake-up per release.
 *
 * SEMAPHORE: at most `permits` holders of one name at once. Each handle that
 * acquires holds one permit - one of N numbered slots - under its own random
 * token, with its own lease (a zset "<slot>:<token>" -> lease end, in the
 * server's clock): a holder that dies frees its permit when its lease ends,
 * not before, and not the others'. rlock_extend / rlock_renew_poll renew
 * only the handle's own permit; release frees exactly it and wakes one
 * waiter (extend and release find it by a scan: O(permits held)). On one
 * node (without fencing) the release hands the freed permit straight to
 * that waiter - its own slot and lease, written by the release script, as
 * "<slot>:<waiter id>" - so the woken waiter holds it without another
 * attempt, under its waiter id (rlock_lock_token returns that id, 16 hex
 * digits; extend and release go by it); a waiter that died keeps it until
 * that lease ends, one that gave up or was cancelled left the queue first.
 * Expired
 * permits are reaped by the next script that looks. Changing N: every
 * acquire carries its handle's permits and is granted when fewer than that
 * many live permits exist and a slot below it is free. Raising N admits
 * more at once; lowering it revokes nothing - new acquires wait until the
 * holders have dropped below the new N. Handles that disagree on N each
 * apply their own. Redlock: at most N holders, exactly (nodes that keep
 * their data, as for any Redlock). Each slot is a Redlock mutex: an attempt
 * names one slot, every node judges that slot, and a permit is held when a
 * majority granted it - one slot cannot have two majorities. A refusal names
 * the lowest free slot; the attempt that asks for it follows at once (at
 * most 3 such per acquire call). (Counting permits per node would not do:
 * majorities overlap, and n nodes with quorum q would admit floor(n*N/q).)
 *
 * READ-WRITE: init two handles on the same key with RLOCK_KIND_READ and
 * RLOCK_KIND_WRITE. Many readers or one writer; reentrant per owner id (as
 * RLOCK_KIND_REENTRANT: cfg.owner, or instance id + thread). Each reader has
 * its own lease, and so has the writer (the key lives as long as the
 * longest): a writer half-way through a downgrade (read lock taken, write
 * lock neither released nor renewed) holds only the read lock once its
 * write lease ends - other readers get in. A writer that waits (wait
 * > 0) keeps new readers out so a stream of readers cannot starve it (its
 * hold-off lasts its wait left, at most max(ttl, 2 x recheck_ms, 2 x
 * backoff_max_ms), renewed by its next attempt); rlock_rw_writers_first(lk, 0)
 * turns that off for a write handle. Nor can a writer that re-acquires in a
 * loop starve the readers: a reader refused while it waits is noted, and a
 * writer's release gives every noted reader a turn ticket lasting
 * max(recheck_ms, 2 x backoff_max_ms); no writer enters while a ticket is
 * out, and readers noted during the turn wait for the next one. An owner
 * holding the read lock only that asks for the write lock gets
 * RLOCK_E_UPGRADE at once (two upgraders would deadlock): release the read
 * lock first. Holding the write lock and acquiring the read lock (then
 * releasing the write one) downgrades. Fence tokens come with write grants
 * only. A key that is no read-write lock is refused before anything in it
 * is written or reaped: a reentrant lock's hash, or a hash with fields of
 * its own, RLOCK_E_WRONGTYPE; a hash without a TTL RLOCK_E_FOREIGN.
 *
 * MULTI: 1..RLOCK_MAX_MULTI distinct keys taken all or none by one script per node
 * (one round trip), each key a simple lock (string = token) that excludes
 * RLOCK_KIND_SIMPLE locks on it; released together, waking one waiter of
 * each key. The keys must share a Redis Cluster hash slot (give them one
 * hash tag: "{job}:in", "{job}:out"), checked at init, so the same code runs
 * on a Cluster. With cfg.fencing its fence token is one above the largest
 * of its keys' counters, and each counter is set to it (so it orders with
 * the simple locks' tokens on every key). A multi-lock waits by backoff: it
 * joins no wait queue, so a single-key release does not wake it. */
#ifndef RLOCK_MAX_MULTI
#define RLOCK_MAX_MULTI 8
#endif
#ifndef RLOCK_NO_PRIMITIVES
/* A semaphore handle on key allowing `permits` (1..2^31-1) holders at once. */
RLOCKDEF rlock_status rlock_semaphore_init(rlock_lock *lk, rlock_client *c, const char *key, size_t key_len,
                                           long long permits);
/* Change the N this handle acquires with (see "Changing N" above). */
RLOCKDEF rlock_status rlock_semaphore_set_permits(rlock_lock *lk, long long permits);
/* The permit slot (0..N-1) a held semaphore handle has; -1 when not held. */
RLOCKDEF long long rlock_semaphore_slot(const rlock_lock *lk);
/* Writers-first on (1, the default) or off (0) for a RLOCK_KIND_WRITE handle. */
RLOCKDEF rlock_status rlock_rw_writers_first(rlock_lock *lk, int on);
/* A multi-lock over keys[0..n) (lens[i] bytes each, 2 + lens[i] summed over
 * the keys at most RLOCK_MAX_KEY_LEN; no key twice). RLOCK_E_BADARG names
 * the key whose Cluster slot differs from the first key's. */
RLOCKDEF rlock_status rlock_multi_init(rlock_lock *lk, rlock_client *c, const char *const *keys,
                                       const size_t *lens, size_t n);

/* Inspection, for any kind but MULTI: what each node holds under lk's key,
 * one rlock_info per node in out[0..cap) (cap >= the client's node count),
 * without changing anything (no reaping, no renewal), as the next script
 * on the key would see it: a lease that ended holds nothing (a read-write
 * lock whose writer's lease ended is "read" or "free"). The handle need not
 * hold anything and keeps its own state. RLOCK_OK when a quorum of nodes
 * answered (out[i].st says which did); else the round's error. */
RLOCKDEF rlock_status rlock_inspect_begin(rlock_lock *lk, rlock_info *out, size_t cap);
RLOCKDEF rlock_status rlock_inspect(rlock_lock *lk, rlock_info *out, size_t cap);
/* Operators only: delete lk's key whoever holds it (any rlock kind; a key
 * without a TTL is not rlock's and is left alone: RLOCK_E_FOREIGN) and wake
 * every waiter. RLOCK_OK when some node had it, RLOCK_NOT_HELD when none
 * did. The holders are not told: their next renewal finds it LOST. */
RLOCKDEF rlock_status rlock_force_unlock_begin(rlock_lock *lk);
RLOCKDEF rlock_status rlock_force_unlock(rlock_lock *lk);
#endif /* RLOCK_NO_PRIMITIVES */

/* The Lua scripts rlock sends (0..RLOCK_SCRIPT_COUNT-1) and their SHA1s,
 * for tests and for preloading with SCRIPT LOAD. NULL when out of range or
 * compiled out (a feature's scripts go with it; RLOCK_NO_EVAL_FALLBACK
 * leaves every text out, the SHA1s stay: preload the texts of a build
 * without it - they are the same scripts). */
#ifdef RLOCK_NO_PRIMITIVES
#define RLOCK_SCRIPT_COUNT 10
#else
#define RLOCK_SCRIPT_COUNT 24
#endif
RLOCKDEF const char *rlock_script_text(int id);
RLOCKDEF const char *rlock_script_sha(int id);
/* The function (and library) name of script id under RLOCK_SCRIPTS_FCALL,
 * "rlock_" + this build's function version + "_" + 8 hex digits of the
 * script's SHA1, into out (>= 28 bytes); its length, 0 when out of range or
 * it does not fit. */
RLOCKDEF size_t rlock_function_name(int id, char *out, size_t cap);
/* This build's function version: 12 hex digits that change whenever any of
 * its scripts does, into out (>= 13 bytes); its length, 0 when it does not
 * fit. A connection that runs FCALL says it with CLIENT SETNAME rlock-VERSION,
 * so a tool (rlock check --delete-old-functions) can tell which versions'
 * libraries still have clients (README "Deployments"). */
RLOCKDEF size_t rlock_function_version(char *out, size_t cap);

/* Derive an auxiliary key (fence counter, release channel) that hashes to
 * the same Redis Cluster slot as key: key + suffix when key has a hash tag,
 * "{key}" + suffix otherwise. Returns its length, or 0 when it does not fit
 * or key contains '}' outside a hash tag (no same-slot name exists). */
RLOCKDEF size_t rlock_aux_key(char *out, size_t cap, const char *key, size_t key_len,
                              const char *suffix);

/* ======================================================================== */
/* 7. Redis Cluster                                                          */
/* ======================================================================== */
/* A lock on a cluster is a single-node lock on the primary that serves its
 * key's slot (its auxiliary keys share the slot). rlock_cluster keeps one
 * node + client per known node (seeds and primaries: at most
 * RLOCK_CLUSTER_MAX_PRIMARIES, all in the caller's struct, no heap) and a
 * slot -> primary map.
 *   The map is learnt before the first lock: the first operation asks a seed
 * CLUSTER SHARDS (Redis >= 7; CLUSTER SLOTS on older servers), read as it
 * arrives (a big cluster's answer is larger than RLOCK_RX_BUF), and only
 * primaries marked online go in the map: a replica never gets a lock. A
 * cluster with more nodes than fit (seeds included) is an error,
 * RLOCK_E_BADARG, rlock_cluster_error saying so. A seed that does not answer
 * is skipped for the next; when none does, locks go to the first seed and
 * follow its MOVED. Give seeds on more than one shard (replicas are fine).
 *   The operations follow MOVED (the slot is updated at once and the whole
 * map fetched again in the background) and ASK (the next script goes with
 * ASKING to the importing primary; the map is not changed), up to
 * RLOCK_CLUSTER_HOPS redirects; an empty host ("MOVED 3999 :6381", nodes
 * with cluster-preferred-endpoint-type unknown-endpoint) is the sender's.
 * Host "?" (type hostname, the node without one): the map is read again
 * from the sender (CLUSTER SHARDS names the node's ip), then MOVED goes to
 * the slot's primary it says, ASK to the known node of that port (the
 * first, when nodes share a port).
 * -TRYAGAIN: a multi-key script while its slot migrates, on a node that
 * lacks some of its keys (the wait-queue keys: mostly none exist); nothing
 * ran. A release (inspect, force-unlock)
 * is sent again after 10 ms naming the lock key alone, a compare-and-delete
 * that wakes no waiter (they find the key free at their re-check; a fair
 * lock's is not handed off); so a lock granted by ASK on the importing
 * primary, or held on the migrating one, is freed at once. An acquire
 * script is retried after 10..80 ms, up to 20 times (~1.4 s), then
 * RLOCK_E_REDIS: while a slot stays half-migrated only the uncontended
 * plain SET (one key) acquires there, nothing grants twice. A primary
 * that cannot be reached (killed, failing over) makes them ask the
 * other nodes every 100 ms for 4 s from the first failure (a try at a
 * primary that does not answer costs a node timeout more), which answer
 * MOVED once the cluster has promoted a replica (one that runs the call is
 * learnt as the slot's primary, as from a MOVED); then RLOCK_E_IO.
 * -CLUSTERDOWN (nothing ran: what they answer between marking the primary
 * failing and the promotion) is retried the same way, then RLOCK_E_REDIS.
 *   Waiting (cfg.pubsub, Redis >= 7): the waiter SSUBSCRIBEs to the key's
 * shard channel "{key}:released" on its primary's command connection
 * (RESP3) and the release scripts SPUBLISH there, so a notice goes to that
 * shard only (PUBLISH would cross every node of the cluster). A slot that
 * moves unsubscribes its waiters (the server's "sunsubscribe"): they retry
 * at once and are redirected. Without cfg.pubsub, waiting is backoff.
 *   Every call has a non-blocking form (*_begin, then rlock_cluster_step
 * until not RLOCK_WOULD_BLOCK; rlock_cluster_interest says which
 * connections to watch); the blocking ones loop over them. Connections are
 * made through the user's hook: it prepares a transport for host:port in
 * slot i of the user's own storage (adapters/rlock_posix.h:
 * rlock_posix_cluster_connect; over TLS, a hook making rlock_tls.h
 * transports, with cl->tls = 1 so that the map takes each node's TLS port).
 * README "Deployments" says what a cluster
 * lock guarantees across failover (in short: what replication keeps). */
#define RLOCK_CLUSTER_SLOTS 16384
/* The cluster slot of a key (CRC16 of its {hash tag} or of all of it). */
RLOCKDEF unsigned rlock_cluster_slot(const char *key, size_t key_len);
#ifndef RLOCK_NO_CLUSTER /* (the multi-lock's same-slot check needs only rlock_cluster_slot) */
#ifndef RLOCK_CLUSTER_MAX_PRIMARIES
#define RLOCK_CLUSTER_MAX_PRIMARIES 16
#endif
#define RLOCK_CLUSTER_HOPS 8
/* slot map: one byte per slot, node index + 1 (255: being read) */
typedef char rlock__cluster_index_fits[RLOCK_CLUSTER_MAX_PRIMARIES <= 254 ? 1 : -1];
typedef int (*rlock_cluster_connect_fn)(void *user, size_t i, const char *host, int port, rlock_transport *out);
typedef struct rlock_cluster {
    rlock_config cfg;
    rlock_cluster_connect_fn connect;
    void *user;
    const char *username, *password;  /* AUTH on every node, the seeds too (set them after rlock_cluster_init,
                                         which zeroes them; each operation hands them on; NULL: none) */
    int tls;                          /* 1: the hook connects over TLS: a node's port is CLUSTER SHARDS'
                                         tls-port (MOVED / ASK name the port of the asking connection's kind) */
    size_t n;                         /* nodes known (seeds, then primaries learnt) */
    char host[RLOCK_CLUSTER_MAX_PRIMARIES][64];
    int port[RLOCK_CLUSTER_MAX_PRIMARIES];
    rlock_node node[RLOCK_CLUSTER_MAX_PRIMARIES];
    rlock_client client[RLOCK_CLUSTER_MAX_PRIMARIES];
    unsigned char slot[RLOCK_CLUSTER_SLOTS]; /* node index + 1; 0: not known (ask node 0) */
    /* counters (read them; tests and benchmarks do) */
    unsigned long moved;              /* MOVED replies followed */
    unsigned long asked;              /* ASK replies followed */
    unsigned long fetches;            /* slot maps read (CLUSTER SHARDS / SLOTS) */
    /* --- private: the slot-map fetch and the operations in progress --- */
    struct rlock_lock *ops;
    /* starts an inspect / force-unlock: set by their _begin, so that a
     * program that never inspects does not link the admin scripts */
    rlock_status (*admin)(struct rlock_lock *lk, int kind);
    rlock__call call;
    rlock__walk walk;
    int fetch;                        /* RLOCK__MAP_* */
    size_t refetch;                   /* a MOVED came while the map was read: read it again then, from this node + 1 */
    int slots_cmd;                    /* asking CLUSTER SLOTS (SHARDS was refused) */
    size_t from, tries;               /* node asked; nodes asked in this fetch */
    int field, nfield, prim, role_ok, health_ok, pending, full, port_v;
    long long lo, hi;
    char ip[64], ep[64];
    char why[RLOCK_WHY_LEN];
} rlock_cluster;

/* Start from seed addresses (1..RLOCK_CLUSTER_MAX_PRIMARIES); cfg may be
 * NULL. Nothing is sent. RLOCK_E_BADARG (rlock_cluster_error says why). */
RLOCKDEF rlock_status rlock_cluster_init(rlock_cluster *cl, const char *const *hosts, const int *ports, size_t n,
                                         const rlock_config *cfg, rlock_cluster_connect_fn connect, void *user);
RLOCKDEF const char *rlock_cluster_error(const rlock_cluster *cl);
/* A lock handle for key (not sent yet); its primary is chosen when it acquires. */
RLOCKDEF rlock_status rlock_cluster_lock_init(rlock_cluster *cl, rlock_lock *lk, const char *key, size_t key_len,
                                              rlock_kind kind);
/* rlock_acquire / extend / release that learn the map and follow MOVED and ASK. */
RLOCKDEF rlock_status rlock_cluster_acquire(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms, long long wait_ms);
RLOCKDEF rlock_status rlock_cluster_extend(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms);
RLOCKDEF rlock_status rlock_cluster_release(rlock_cluster *cl, rlock_lock *lk);
/* Non-blocking forms: begin, then rlock_cluster_step(cl, lk) until it is
 * not RLOCK_WOULD_BLOCK (its final status). Between steps, wait for the
 * connections rlock_cluster_interest lists, or its timeout. */
RLOCKDEF rlock_status rlock_cluster_acquire_begin(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms,
                                                  long long wait_ms);
RLOCKDEF rlock_status rlock_cluster_extend_begin(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms);
RLOCKDEF rlock_status rlock_cluster_release_begin(rlock_cluster *cl, rlock_lock *lk);
RLOCKDEF rlock_status rlock_cluster_step(rlock_cluster *cl, rlock_lock *lk);
#ifndef RLOCK_NO_PRIMITIVES
/* rlock_inspect (one rlock_info: the key's primary's) and
 * rlock_force_unlock on the primary of lk's slot, the map read first,
 * MOVED and ASK followed; lk need not hold anything. */
RLOCKDEF rlock_status rlock_cluster_inspect(rlock_cluster *cl, rlock_lock *lk, rlock_info *out);
RLOCKDEF rlock_status rlock_cluster_force_unlock(rlock_cluster *cl, rlock_lock *lk);
RLOCKDEF rlock_status rlock_cluster_inspect_begin(rlock_cluster *cl, rlock_lock *lk, rlock_info *out);
RLOCKDEF rlock_status rlock_cluster_force_unlock_begin(rlock_cluster *cl, rlock_lock *lk);
#endif
/* Stop lk's cluster operation: a lock call in flight is cancelled as by
 * rlock_cancel (blocking, bounded by the node timeout: a grant it got is
 * released), and nothing of it goes on. A grant that had finished is kept
 * (rlock_lock_state says HELD: release it). */
RLOCKDEF void rlock_cluster_cancel(rlock_cluster *cl, rlock_lock *lk);
/* Every connection of cl its operations (and its map fetch) need now, as
 * rlock_client_interest; *timeout_ms: step again at the latest then. */
RLOCKDEF size_t rlock_cluster_interest(rlock_cluster *cl, rlock_interest *out, size_t cap, uint32_t *timeout_ms);
/* The node (index into cl->host/port) that serves slot now, per the map. */
RLOCKDEF size_t rlock_cluster_primary(const rlock_cluster *cl, unsigned slot);
RLOCKDEF void rlock_cluster_close(rlock_cluster *cl);
#endif /* RLOCK_NO_CLUSTER */

#ifdef __cplusplus
}
#endif
#endif /* RLOCK_H */

/* ======================================================================== */
/* 6. Implementation                                                         */
/* ======================================================================== */
#ifdef RLOCK_IMPLEMENTATION
#ifndef RLOCK_IMPLEMENTATION_INCLUDED
#define RLOCK_IMPLEMENTATION_INCLUDED

#include <string.h>
#include <limits.h>

#ifndef RLOCK_ASSERT
#include <assert.h>
#define RLOCK_ASSERT(x) assert(x)
#endif

/* ---- 6.1 Platform defaults (POSIX), each overridable by a macro --------- */
#ifndef RLOCK_NO_POSIX
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#ifndef RLOCK_NO_THREAD_ID
#include <pthread.h>
#endif

static uint64_t rlock__sys_now_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000u + (unsigned long)ts.tv_nsec / 1000000u; /* no 64-bit division */
}
static void rlock__sys_sleep_ms(uint32_t ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}
/* getrandom() where the libc has it (one syscall, no fd); /dev/urandom,
 * which every POSIX system we target has, otherwise or on ENOSYS. */
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#include <sys/random.h>
#define RLOCK__HAVE_GETRANDOM 1
#endif
static int rlock__sys_random(unsigned char *buf, size_t n) {
    size_t got = 0;
    int fd;
#ifdef RLOCK__HAVE_GETRANDOM
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got == n) return 0;
    got = 0;
#endif
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}
#ifndef RLOCK_NOW_MS
#define RLOCK_NOW_MS() rlock__sys_now_ms()
#endif
#ifndef RLOCK_SLEEP_MS
#define RLOCK_SLEEP_MS(ms) rlock__sys_sleep_ms(ms)
#endif
#ifndef RLOCK_RANDOM_BYTES
#define RLOCK_RANDOM_BYTES(buf, n) rlock__sys_random((buf), (n))
#endif
#if !defined(RLOCK_THREAD_ID) && !defined(RLOCK_NO_THREAD_ID) && !RLOCK__COMPACT /* (owner ids: reentrant locks) */
static unsigned long rlock__sys_thread_id(void) {
    /* pthread_t is opaque: fold its bytes instead of casting it. */
    pthread_t self = pthread_self();
    unsigned char b[sizeof(pthread_t)];
    unsigned long h = 1469598103UL;
    size_t i;
    memcpy(b, &self, sizeof b);
    for (i = 0; i < sizeof b; i++) h = (h ^ b[i]) * 16777619UL;
    return h;
}
#define RLOCK_THREAD_ID() rlock__sys_thread_id()
#endif
#endif /* !RLOCK_NO_POSIX */

/* RLOCK_NO_POSIX: a hook with no macro must be given at run time in
 * rlock_config (now_ms, sleep_ms, random_bytes); rlock_client_init refuses
 * with RLOCK_E_BADARG, naming it, when now_ms or random_bytes is not. sleep_ms
 * only the one blocking call that sleeps needs - rlock_acquire with a wait
 * (backoff between attempts) - so it refuses instead, and a program on the
 * non-blocking API never gives it. */
#ifndef RLOCK_NOW_MS
#define RLOCK__NEED_NOW_HOOK 1
#define RLOCK_NOW_MS() 0
#endif
#ifndef RLOCK_SLEEP_MS
#define RLOCK__NEED_SLEEP_HOOK 1
#define RLOCK_SLEEP_MS(ms) ((void)(ms))
#endif
#ifndef RLOCK_RANDOM_BYTES
#define RLOCK__NEED_RANDOM_HOOK 1
#define RLOCK_RANDOM_BYTES(b, n) ((void)(b), (void)(n), -1)
#endif
#if !defined(RLOCK_THREAD_ID)
#define RLOCK_THREAD_ID() 0UL
#endif

/* A helper that gcc -Os would copy into each caller although one copy
 * called from each is smaller (the firmware size budget, docs/SIZE.md). */
#if defined(__GNUC__) || defined(__clang__)
#define RLOCK__NOINLINE __attribute__((noinline))
#else
#define RLOCK__NOINLINE
#endif
/* ... and one it would keep out of line although copying it into each
 * caller is smaller (measured: bench/size.sh). */
#if defined(__GNUC__) || defined(__clang__)
#define RLOCK__INLINE inline __attribute__((always_inline))
#else
#define RLOCK__INLINE inline
#endif
/* Out of line in the general engine, where several callers share it; the
 * compact engine's caller (or few callers) are smaller inlining it: left to
 * gcc (RLOCK__SHARED) or always (RLOCK__FEW, where gcc -Os misjudges). */
#if RLOCK__COMPACT
#define RLOCK__SHARED
#define RLOCK__FEW RLOCK__INLINE
#else
#define RLOCK__SHARED RLOCK__NOINLINE
#define RLOCK__FEW RLOCK__NOINLINE
#endif

/* Handle magics: catch uninitialised and destroyed handles (and one kind
 * passed for another). Each is one letter four times ("NNNN", "CCCC",
 * "KKKK" for a lock, "SSSS"): a 32-bit word no common fill pattern makes,
 * that a Thumb-2 compare or move carries as its immediate (no literal to
 * load: 2 bytes less per use, and no 4-byte literal, on a Cortex-M). */
#define RLOCK__MAGIC_NODE   0x4e4e4e4eu
#define RLOCK__MAGIC_CLIENT 0x43434343u
#define RLOCK__MAGIC_LOCK   0x4b4b4b4bu
#define RLOCK__MAGIC_SUB    0x53535353u

/* Feature tests the compiler folds to 0 when the feature is compiled out,
 * so the code behind them goes too (section 1: RLOCK_NO_*). */
#define RLOCK__FAIR(lk) (RLOCK__HAS_FAIR ? (lk)->fair_grace : 0u)
#define RLOCK__FENCING(c) (RLOCK__HAS_FENCING && (c)->cfg.fencing)
#define RLOCK__ASKING(lk) (RLOCK__HAS_CLUSTER && ((lk)->asking & 1))
#define RLOCK__SOLO(lk) (RLOCK__HAS_CLUSTER && ((lk)->asking & 2)) /* the lock key alone (rlock__cluster_judge) */
#define RLOCK__REPLICAS(c) (RLOCK__HAS_REPLICAS ? (c)->cfg.replicas : 0u)

/* ---- 6.2 Status names --------------------------------------------------- */
RLOCKDEF const char *rlock_status_str(rlock_status st) {
#ifdef RLOCK_NO_STATUS_STRINGS
    (void)st;
    return "";
#else
    static const char *const names[RLOCK_STATUS_COUNT] = {
        "ok", "would block", "not acquired", "timeout", "lost", "not held",
        "bad argument", "invalid state", "io error", "protocol error", "redis error",
        "auth error", "wrong type", "foreign key", "no quorum", "random source failed",
        "clock error", "too few replica acks", "moved (cluster)", "upgrade refused"
    };
    if ((unsigned)st >= (unsigned)RLOCK_STATUS_COUNT) return "unknown status"; /* also < 0 */
    return names[st];
#endif
}

/* ---- 6.3 RESP codec ------------------------------------------------------ */

/* Find the CRLF that ends the line starting at pos. 1: *eol = index of '\r';
 * 0: incomplete; -1: a bare '\r' or '\n', or no CRLF within max_len. */
static int rlock__resp_line(const unsigned char *b, size_t len, size_t pos, size_t max_len,
                            size_t *eol) {
    size_t i;
    for (i = pos; i < len; i++) {
        if (b[i] == '\n') return -1;
        if (b[i] == '\r') {
            if (i + 1 >= len) break;
            if (b[i + 1] != '\n') return -1;
            *eol = i;
            return 1;
        }
    }
    return len >= max_len ? -1 : 0;
}

/* Strict decimal: optional '-', digits, no overflow. (Below 2^60, v * 10
 * + 9 cannot wrap 64 bits, and every value in range is below 2^60 before
 * its last digit: one shift per digit, one range check at the end.) */
static int rlock__resp_int(const unsigned char *s, size_t n, long long *out) {
    size_t i = n > 0 && s[0] == '-';
    unsigned neg = (unsigned)i;
    unsigned long long v = 0;
    if (i == n) return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v >> 60) return -1;
        v = v * 10u + (unsigned)(s[i] - '0');
    }
    if (v > (unsigned long long)LLONG_MAX + neg) return -1;
    *out = neg && v ? -(long long)(v - 1) - 1 : (long long)v; /* (v - 1: -2^63 without overflow) */
    return 0;
}

#ifndef RLOCK_NO_WAITING /* RESP3 only: HELLO 3 is sent for waiting alone */
/* The RESP3 numbers that are checked only: a double (digits, sign, '.',
 * exponent, or inf / -inf / nan: mark ',') or a big number (strict decimal
 * digits with an optional '-': mark '('). 0 when s[0..n) is one. */
static int rlock__resp_number(int mark, const unsigned char *s, size_t n) {
    size_t i = n > 0 && s[0] == '-', chars = 10; /* a big number: the digits; a double: "0123456789.eE+-" */
    if (mark == ',') {
        if (n - i == 3 && (memcmp(s + i, "inf", 3) == 0 || (!i && memcmp(s, "nan", 3) == 0))) return 0;
        i = 0; /* (its '-' is one of its characters) */
        chars = 15;
    }
    if (i == n) return -1;
    for (; i < n; i++) if (!memchr("0123456789.eE+-", s[i], chars)) return -1;
    return 0;
}

#endif

/* Each type mark's class (high nibble) and rlock_resp_type (low nibble). */
enum { RLOCK__R_LINE = 0x00, RLOCK__R_NUM = 0x10, RLOCK__R_INT = 0x20, RLOCK__R_NIL = 0x30, RLOCK__R_BOOL = 0x40,
       RLOCK__R_BLOB = 0x50, RLOCK__R_AGG = 0x60 };
#ifdef RLOCK_NO_WAITING
#define RLOCK__RESP3_MARKS ""
#else
#define RLOCK__RESP3_MARKS ",(_#!=>~%|"
#endif
static const char rlock__resp_marks[] = "+-:$*" RLOCK__RESP3_MARKS;
static const unsigned char rlock__resp_kinds[] = {
    RLOCK__R_LINE | RLOCK_RESP_STATUS, RLOCK__R_LINE | RLOCK_RESP_ERROR, RLOCK__R_INT | RLOCK_RESP_INTEGER,
    RLOCK__R_BLOB | RLOCK_RESP_BULK, RLOCK__R_AGG | RLOCK_RESP_ARRAY,
#ifndef RLOCK_NO_WAITING /* RESP3: a RESP2 connection never sees them */
    RLOCK__R_NUM | RLOCK_RESP_DOUBLE, RLOCK__R_NUM | RLOCK_RESP_BIGNUM, RLOCK__R_NIL | RLOCK_RESP_NIL,
    RLOCK__R_BOOL | RLOCK_RESP_BOOL, RLOCK__R_BLOB | RLOCK_RESP_ERROR, RLOCK__R_BLOB | RLOCK_RESP_BULK,
    RLOCK__R_AGG | RLOCK_RESP_PUSH, RLOCK__R_AGG | RLOCK_RESP_SET, RLOCK__R_AGG | RLOCK_RESP_MAP,
    RLOCK__R_AGG | RLOCK_RESP_NONE /* '|': an attribute */
#endif
};

/* What rlock__resp_one returns when it is no aggregate's count (>= 0). */
enum { RLOCK__R_SCALAR = -1, RLOCK__R_MORE = -2, RLOCK__R_BAD = -3 };

/* Read the header of one value at *pos (and, for blobs, the body) into *v
 * (cleared first). Returns its element count (an aggregate, >= 0; v->type
 * RLOCK_RESP_NONE for a RESP3 attribute, "|": metadata before a value,
 * skipped: never a value itself), RLOCK__R_SCALAR, RLOCK__R_MORE
 * (incomplete) or RLOCK__R_BAD (malformed). Every declared length and count
 * is bounded by max_len before anything waits for it. (One result, few
 * arguments: a call costs little.) */
static long rlock__resp_one(const unsigned char *b, size_t len, size_t *pos, size_t max_len, rlock_resp_value *v) {
    size_t p = *pos, eol = 0, ll, z;
    const unsigned char *line;
    const char *m;
    long long k;
    int r, mark, kind;
    memset(v, 0, sizeof *v);
    if (p >= len) return len >= max_len ? RLOCK__R_BAD : RLOCK__R_MORE;
    r = rlock__resp_line(b, len, p + 1, max_len, &eol);
    if (r <= 0) return r - 2; /* 0: RLOCK__R_MORE; -1: RLOCK__R_BAD */
    mark = b[p];
    m = (const char *)memchr(rlock__resp_marks, mark, sizeof rlock__resp_marks - 1);
    if (!m) return RLOCK__R_BAD;
    kind = rlock__resp_kinds[m - rlock__resp_marks];
    line = b + p + 1;
    ll = eol - p - 1;
    v->type = (rlock_resp_type)(kind & 15);
    switch (kind >> 4) {
    case RLOCK__R_NUM >> 4: /* (RESP3 only) */
    case RLOCK__R_LINE >> 4:
#ifndef RLOCK_NO_WAITING
        if (kind >> 4 == RLOCK__R_NUM >> 4 && rlock__resp_number(mark, line, ll) != 0) return RLOCK__R_BAD;
#endif
        v->str = (const char *)line;
        v->len = ll;
        break;
#ifndef RLOCK_NO_WAITING
    case RLOCK__R_NIL >> 4:
        if (ll != 0) return RLOCK__R_BAD;
        break;
    case RLOCK__R_BOOL >> 4:
        if (ll != 1 || (line[0] != 't' && line[0] != 'f')) return RLOCK__R_BAD;
        v->integer = line[0] == 't';
        break;
#endif
    default: /* INT, BLOB, AGG: a number */
        if (rlock__resp_int(line, ll, &k) != 0) return RLOCK__R_BAD;
        if (kind >> 4 == RLOCK__R_INT >> 4) { v->integer = k; break; }
        if (k == -1 && (mark == '$' || mark == '*')) { v->type = RLOCK_RESP_NIL; break; } /* RESP2's nulls */
        /* Bound the declared length or count before using it: it must fit
         * in max_len (then it is a size_t: 32-bit arithmetic below). */
        if (k < 0 || (unsigned long long)k > (unsigned long long)max_len) return RLOCK__R_BAD;
        z = (size_t)k;
        if (kind >> 4 == RLOCK__R_BLOB >> 4) {
            if (eol + 2 + z + 2 > max_len) return RLOCK__R_BAD;
            if (mark == '=' && (z < 4 || (eol + 6 <= len && b[eol + 5] != ':'))) return RLOCK__R_BAD; /* "txt:" */
            if (eol + 2 + z + 2 > len) return RLOCK__R_MORE;
            if (b[eol + 2 + z] != '\r' || b[eol + 3 + z] != '\n') return RLOCK__R_BAD;
            v->str = (const char *)b + eol + 2;
            v->len = z;
            if (mark == '=') { v->str += 4; v->len -= 4; } /* a verbatim string without its format */
            *pos = eol + 2 + z + 2;
            return RLOCK__R_SCALAR;
        }
        {
            int pairs = mark == '%' || mark == '|';
            /* Each element takes at least 3 bytes ("+\r\n"): reject counts that
             * cannot fit before looping over them. Maps hold 2 per entry. */
            if (z > max_len / (pairs ? 6u : 3u)) return RLOCK__R_BAD;
            z <<= pairs;
            v->integer = (long long)z;
            *pos = eol + 2;
            return (long)z; /* (<= max_len <= LONG_MAX: rlock_resp_parse checks, rx_cap is a buffer's size) */
        }
    }
    *pos = eol + 2;
    return RLOCK__R_SCALAR;
}

/* rlock_resp_parse past its argument checks: the exchange's receive buffer
 * passes them all (0 < rx_len <= rx_cap, a buffer's size). Iterative: one
 * counter per open aggregate, so the stack it uses does not grow with the
 * nesting (see README "Memory" for the figure). */
static RLOCK__INLINE long rlock__resp_parse(const unsigned char *buf, size_t len, size_t max_len, rlock_reply *out) {
    /* Per open aggregate: twice the elements it still has, plus 1 for an
     * attribute (counts fit: each is bounded by max_len / 3, rlock__resp_one). */
    size_t left[RLOCK_RESP_MAX_DEPTH + 1];
    int depth = 0;
    size_t pos = 0;
    memset(out, 0, sizeof *out);
    for (;;) {
        /* Read where the value is kept (the reply itself, or one of its
         * first elements: nested aggregates as type and count), else into
         * scratch: no copy. An attribute read there first is overwritten by
         * the value it annotates; inside a top-level attribute out->count is
         * still 0, so the index wraps past RLOCK_RESP_MAX_ELEMS. */
        rlock_resp_value scratch, *v = &scratch;
        long n;
        int is_attr;
        if (depth == 0) v = &out->v;
        else if (depth == 1 && (size_t)out->count - (left[0] >> 1) < RLOCK_RESP_MAX_ELEMS)
            v = &out->elem[(size_t)out->count - (left[0] >> 1)];
        n = rlock__resp_one(buf, len, &pos, max_len, v);
        is_attr = v->type == RLOCK_RESP_NONE;
        if (n < RLOCK__R_SCALAR) return n == RLOCK__R_MORE ? 0 : -1;
        if (n >= 0 && depth >= RLOCK_RESP_MAX_DEPTH) return -1; /* too deep: before its elements arrive */
        if (!is_attr && depth == 0 && n >= 0) out->count = n;
        if (n > 0) {
            left[depth++] = (size_t)n * 2 + (size_t)is_attr;
            continue;
        }
        if (is_attr) continue; /* an empty attribute: the value it annotates follows */
        /* A value is complete: close the aggregates it completes. An attribute
         * that closes is no value of its parent: what it annotates follows. */
        for (;;) {
            if (depth == 0) return (long)pos;
            if ((left[depth - 1] -= 2) > 1) break;
            if (left[--depth]) break; /* (1: an attribute) */
        }
    }
}
RLOCKDEF long rlock_resp_parse(const unsigned char *buf, size_t len, size_t max_len, rlock_reply *out) {
    if (!buf || !out || max_len == 0 || len > max_len || max_len > (size_t)LONG_MAX) return -1;
    return rlock__resp_parse(buf, len, max_len, out);
}

/* v in decimal into out (NUL-terminated, up to 20 digits); returns the
 * digit count. Every number given is below 2^32 (lengths, TTLs, counts) but
 * a thread id (an unsigned long) and rlock__why's (any long long a caller
 * passed): without error texts (RLOCK_NO_ERROR_TEXTS) an unsigned long holds
 * them all, and the 64-bit steps are not built. */
#ifdef RLOCK_NO_ERROR_TEXTS
typedef unsigned long rlock__unum;
/* (its digits counted first, then written in place, the last first: no
 * buffer, no copy - 4 B less, smallest configuration) */
static size_t rlock__utoa(char *out, rlock__unum v) {
    char *p = out;
    rlock__unum t = v;
    do p++; while (t /= 10u);
    *p = '\0';
    t = (rlock__unum)(p - out);
    do *--p = (char)('0' + v % 10u); while (v /= 10u);
    return t;
}
#else
typedef uint64_t rlock__unum;
/* *v /= d (d < 65536) in 32-bit steps, returning the remainder: the core
 * divides no 64-bit value (that links libgcc's __udivmoddi4, 700 B on a
 * Cortex-M). */
static uint32_t rlock__divmod(uint64_t *v, uint32_t d) {
    uint32_t hi = (uint32_t)(*v >> 32), lo = (uint32_t)*v, q1, q0, r = hi % d;
    q1 = ((r << 16) | (lo >> 16)) / d;
    r = ((r << 16) | (lo >> 16)) % d;
    q0 = ((r << 16) | (lo & 0xFFFFu)) / d;
    r = ((r << 16) | (lo & 0xFFFFu)) % d;
    *v = ((uint64_t)(hi / d) << 32) | ((uint64_t)q1 << 16) | q0;
    return r;
}
static size_t rlock__utoa(char *out, rlock__unum v) {
    char tmp[20];
    size_t i = sizeof tmp, n;
    do tmp[--i] = (char)('0' + rlock__divmod(&v, 10)); while (v);
    n = sizeof tmp - i;
    memcpy(out, tmp + i, n);
    out[n] = '\0';
    return n;
}
#endif

/* rlock's own error texts are written RLOCK__TXT("...") where a check fails
 * (one per line: its __LINE__ names it). Under RLOCK_NO_ERROR_TEXTS the
 * text is that line number, shown as "rlock.h:LINE" (rlock__txt_put): the
 * same reason, no bytes of text in the image. */
#ifdef RLOCK_NO_ERROR_TEXTS
typedef unsigned rlock__txt;
#define RLOCK__TXT(s) ((rlock__txt)__LINE__)
/* Entry i of a table of texts written one per line: without texts, the
 * first's line + i (no table in the image). Its size, n, written
 * RLOCK__TXT_TABLE(n) on the line before its first text: in the compact
 * engine, all of them near rlock__c_txt_near or none (rlock__c_claim). */
#define RLOCK__TXT_AT(t, i) ((t)[0] + (rlock__txt)(i))
#if RLOCK__COMPACT
#define RLOCK__TXT_TABLE(n)                                                                     \
    ((n) + 0 * sizeof(char[((unsigned)(__LINE__ + 1 - rlock__c_txt_near) < 256u) ==             \
                                   ((unsigned)(__LINE__ + (n) - rlock__c_txt_near) < 256u) ? 1 : -1]))
#endif
#else
typedef const char *rlock__txt;
#define RLOCK__TXT(s) (s)
#define RLOCK__TXT_AT(t, i) ((t)[i])
#endif
#ifndef RLOCK__TXT_TABLE
#define RLOCK__TXT_TABLE(n) (n)
#endif
/* A function whose texts all go out through one call (its rlock__why):
 * without texts, each is written as its distance from base, an enum of the
 * line RLOCK__TXT_FROM(base) stands on before it - one 2-byte Thumb move
 * where a line number takes a 4-byte one - and that call adds base back
 * (RLOCK__TXT_OUT): the same "rlock.h:LINE". (base: that line rounded down
 * to a multiple of 64, a Thumb-2 immediate up to line 16,383: one add, not
 * two - 2 B less in each such function; its texts stay within 256 of it.) */
#ifdef RLOCK_NO_ERROR_TEXTS
#define RLOCK__TXT_FROM(base) enum { base = __LINE__ & ~63 }
#define RLOCK__TXT_IN(base, s) ((rlock__txt)(__LINE__ - (base)))
#define RLOCK__TXT_OUT(base, t) ((t) + (rlock__txt)(base))
#else
#define RLOCK__TXT_FROM(base) enum { base = 0 }
#define RLOCK__TXT_IN(base, s) (s)
#define RLOCK__TXT_OUT(base, t) (t)
#endif

/* rlock__error_scan's words (here: rlock__txt_put's prefix, without error
 * texts, leads them). The first word found decides. One string (rodata,
 * not code; no table of pointers): each word after its length and its
 * status byte, whose
 * bit 5 (octal 40) says it counts only at the start, bit 6 (octal 100)
 * that it is a flag word, bit 7 (octal 200) NOPERM's flag; a length 0
 * ends it. (Lengths, not NULs: no strlen per word.) The flag words come
 * first: every one is looked for before a word decides. */
static const char rlock__words[] =
#ifdef RLOCK_NO_ERROR_TEXTS
    "rlock.h:" /* (rlock__txt_put's prefix, kept here: no string of its own, no NUL) */
#define RLOCK__WORDS_AT 8
#else
#define RLOCK__WORDS_AT 0
#endif
    "\10\141READONLY\10\142NOSCRIPT"
#if !RLOCK__COMPACT || RLOCK__HAS_FENCING /* (the compact engine's only command after the SET: its INCR) */
    "\7\110script:"
#endif
#if !RLOCK__COMPACT && RLOCK__HAS_FCALL
    "\22\104Function not found\5\120'eval"
#endif
#if !RLOCK__COMPACT /* a request over 10 elements (reentrant, read-write, fencing, semaphore) from a client
                 * that did not AUTH gets "ERR Protocol error: unauthenticated multibulk length" */
    "\17\13unauthenticated"
#endif
    /* (NOPERM before the other E_AUTH words: at the start it is found first) */
    "\6\62MOVED \4\62ASK \6\213NOPERM\6\13NOAUTH"
#if !RLOCK__COMPACT /* AUTH's refusals only: the compact engine knows AUTH's reply by its place (x.head,
                 * rlock__c_next: RLOCK_E_AUTH whatever its text), never scanned here */
    "\11\13WRONGPASS\20\13invalid password"
#endif
    "\26\13can't run this command\11\14WRONGTYPE"
#if RLOCK__HAS_PRIMITIVES
    "\26\23UPGRADE read lock held"
#endif
    ;
#if RLOCK__COMPACT || defined(RLOCK_NO_ERROR_TEXTS)
#ifndef RLOCK_NO_ERROR_TEXTS
static void rlock__copy_text(char *dst, size_t cap, const char *msg, size_t len);
#elif RLOCK__COMPACT
static RLOCK__INLINE rlock__txt rlock__txt_line(rlock__txt t); /* (6.8c: its exchange's texts, by their distance) */
#else
#define rlock__txt_line(t) (t)
#endif
/* One of rlock's texts into out[cap]. */
static void rlock__txt_put(char *out, size_t cap, rlock__txt t) {
#ifdef RLOCK_NO_ERROR_TEXTS
    char num[11];
    size_t n;
    t = rlock__txt_line(t);
    n = cap < 19 ? rlock__utoa(num, t) : 0; /* (10 digits at most: in 19 bytes the line fits) */
    if (cap < n + 9) { out[0] = '\0'; return; } /* (an RLOCK_ERR_LEN / _WHY_LEN below 15) */
    memcpy(out, rlock__words, 8); /* "rlock.h:" */
    (void)rlock__utoa(out + 8, t);
#else
    rlock__copy_text(out, cap, t, strlen(t)); /* (the texts' copy: one body, cut to cap) */
#endif
}
#endif

/* A reason text into out (a why[RLOCK_WHY_LEN]): fmt with each \1 replaced
 * by x, each \2 by y, in decimal (no stdio in the core; two numbers: a third
 * argument cost every call site a stack store; y, a bound or an index,
 * never negative, is one word on a 32-bit stack); under
 * RLOCK_NO_ERROR_TEXTS the line alone. Returns RLOCK_E_BADARG, for
 * "return rlock__why(...)". */
#if !RLOCK__COMPACT && !defined(RLOCK_NO_ERROR_TEXTS)
static size_t rlock__fill(char *out, size_t cap, size_t pos, const char *tpl, const char *a, size_t an,
                          const char *b, size_t bn);
#endif
static rlock_status rlock__why(char *out, rlock__txt fmt, long long x, unsigned long y) {
#ifdef RLOCK_NO_ERROR_TEXTS
    (void)x; (void)y;
    rlock__txt_put(out, RLOCK_WHY_LEN, fmt);
#elif !RLOCK__COMPACT /* (the texts' \1 and \2 are rlock__fill's) */
    char a[24], b[24];
    size_t an = x < 0;
    a[0] = '-';
    an += rlock__utoa(a + an, x < 0 ? 0ULL - (rlock__unum)x : (rlock__unum)x);
    out[rlock__fill(out, RLOCK_WHY_LEN - 1, 0, fmt, a, an, b, rlock__utoa(b, y))] = '\0';
#else
    size_t n = 0, cap = RLOCK_WHY_LEN;
    for (; *fmt && n + 1 < cap; fmt++) {
        char num[24], *p = num; /* the number's text: its sign, its digits */
        rlock__unum u;
        if ((unsigned char)*fmt > 2) { out[n++] = *fmt; continue; }
        if (*fmt == 2) u = y;
        else if (x < 0) *p++ = '-', u = 0ULL - (rlock__unum)x;
        else u = (rlock__unum)x;
        (void)rlock__utoa(p, u);
        for (p = num; *p && n + 1 < cap; p++) out[n++] = *p;
    }
    out[n] = '\0';
#endif
    return RLOCK_E_BADARG;
}

/* CRLF at *pos. */
static RLOCK__INLINE void rlock__put_end(unsigned char *out, size_t *pos) {
    size_t p = *pos;
    out[p] = '\r';
    out[p + 1] = '\n';
    *pos = p + 2;
}
#if !RLOCK__ENC_TEMPLATE
/* Marks rlock__put_len's bulk header whose bytes the caller writes. */
static const char rlock__no_body[] = "";
#define RLOCK__NO_BODY(a) ((a) == rlock__no_body)
#else
#define RLOCK__NO_BODY(a) 0 /* (the templates write none) */
#endif
/* Append at *pos a line "<mark><n>\r\n" and, given its bytes, a bulk
 * argument's: a NULL, an array's header ('*', n arguments); a
 * rlock__no_body, a bulk argument's header ('$'; the caller writes its n
 * bytes, then rlock__put_end; not with RLOCK__ENC_TEMPLATE); else the bulk
 * argument a[0..n) whole. Every part is checked to fit with its CRLF (no sum
 * can wrap: p is within a buffer, n the length of something in memory -
 * rlock_resp_encode checks its caller's against cap first), then copied and
 * ended with CRLF by the same lines; a header's bytes are checked, not
 * written. 0 when it does not fit: *pos unchanged (what was past it may not
 * be). RLOCK_SMALLEST's one caller is rlock__c_tpl (rlock_resp_encode
 * aside): inlined there, for its constant cap (measured 28 B less). */
#if RLOCK__ENC_TEMPLATE
#define RLOCK__PUT_LEN_INLINE RLOCK__INLINE
#else
#define RLOCK__PUT_LEN_INLINE
#endif
static RLOCK__PUT_LEN_INLINE int rlock__put_len(unsigned char *out, size_t cap, size_t *pos, const char *a, size_t n) {
    char line[22];
    const char *src = line;
    size_t k = rlock__utoa(line + 1, (rlock__unum)n) + 1, p = *pos;
    line[0] = a ? '$' : '*';
    for (;;) {
        if (k + 2 > cap - p) return 0;
        if (RLOCK__NO_BODY(src)) break; /* (its bytes fit: the caller's) */
        memcpy(out + p, src, k);
        p += k;
        rlock__put_end(out, &p);
        if (!a || src == a) break;
        src = a;
        k = n;
    }
    *pos = p;
    return 1;
}
/* Its three uses: a bulk argument's header (the caller writes its len
 * bytes), one bulk argument a[0..alen) (a not NULL), an array's header. */
#if !RLOCK__ENC_TEMPLATE
#define rlock__put_bulk(out, cap, pos, len) rlock__put_len((out), (cap), (pos), rlock__no_body, (len))
#endif
#define rlock__put_arg(out, cap, pos, a, alen) rlock__put_len((out), (cap), (pos), (a), (alen))
#define rlock__put_header(out, cap, pos, argc) rlock__put_len((out), (cap), (pos), NULL, (size_t)(argc))

RLOCKDEF size_t rlock_resp_encode(unsigned char *out, size_t cap, int argc,
                                  const char *const *argv, const size_t *argvlen) {
    size_t pos = 0;
    int i;
    if (!out || argc <= 0 || !argv || !argvlen || !rlock__put_header(out, cap, &pos, argc)) return 0;
    for (i = 0; i < argc; i++)
        if ((!argv[i] && argvlen[i]) || argvlen[i] > cap || /* (never fits: rlock__put_len's sums stay small) */
            !rlock__put_arg(out, cap, &pos, argv[i] ? argv[i] : "", argvlen[i]))
            return 0;
    return pos;
}

/* ---- 6.4 Lua scripts ----------------------------------------------------- */
/* Each returns integers only, so replies stay tiny. The SHA1 of each text is
 * fixed here (EVALSHA first, EVAL once on NOSCRIPT); tests check them with
 * SCRIPT LOAD against a real server, so an edit that forgets the SHA fails. */
enum { RLOCK__S_SIMPLE_ACQUIRE, RLOCK__S_SIMPLE_EXTEND, RLOCK__S_SIMPLE_RELEASE,
       RLOCK__S_REENTRANT_ACQUIRE, RLOCK__S_REENTRANT_EXTEND, RLOCK__S_REENTRANT_RELEASE,
       RLOCK__S_FAIR_ACQUIRE, RLOCK__S_FAIR_RELEASE, RLOCK__S_FAIR_REENTRANT_ACQUIRE,
       RLOCK__S_FAIR_REENTRANT_RELEASE,
       /* 6.4b primitives: acquire / extend / release per kind, then admin */
       RLOCK__S_SEM_ACQUIRE, RLOCK__S_SEM_EXTEND, RLOCK__S_SEM_RELEASE,
       RLOCK__S_READ_ACQUIRE, RLOCK__S_READ_EXTEND, RLOCK__S_READ_RELEASE,
       RLOCK__S_WRITE_ACQUIRE, RLOCK__S_WRITE_EXTEND, RLOCK__S_WRITE_RELEASE,
       RLOCK__S_MULTI_ACQUIRE, RLOCK__S_MULTI_EXTEND, RLOCK__S_MULTI_RELEASE,
       RLOCK__S_INSPECT, RLOCK__S_FORCE,
       RLOCK__S_COUNT };

/* Shared fragments. The wait queue: a failed attempt that will wait on
 * pub/sub enqueues a random waiter id (ARGV[3], never the token) in the zset
 * KEYS[2], scored by its deadline (server ms: when it stops waiting); a grant
 * dequeues it; a release pops the waiter whose deadline comes first, skips
 * those already past it, and publishes only its id, so one waiter wakes per
 * release, not all of them. The deadline is the score (no second key, no
 * HSET/HGET/HDEL per wait); KEYS[3] ("{key}:deadlines") is still passed but
 * unused. The queue's TTL is renewed only when it falls below the longest
 * wait + 60 s, to twice that margin: one PEXPIRE per minute, not per wait.
 * PUBLISH is a pcall: a releaser whose ACL user may not publish (Redis 7's
 * default for new users) must not fail after its DEL already happened.
 * On a Redis Cluster (section 7) a release or force request carries
 * 'spublish' as ARGV[7] (padded with '' up to ARGV[6]; no release script
 * reads past ARGV[5]): the notice goes to the key's shard only (the channel
 * "{key}:released" hashes to the key's slot); PUBLISH would be broadcast to
 * every node. */
#define RLOCK__LUA_PUBLISH(ch, msg) "redis.pcall(ARGV[7] or 'publish'," ch "," msg ") "
#define RLOCK__LUA_NOW \
    "local n=redis.call('time') local ms=n[1]*1000+math.floor(n[2]/1000) "
/* (ms: the server time, read by the script already; C: redis.call, or R
 * where a script has it as R) */
#define RLOCK__LUA_ENQUEUE_MS(C) \
    C "('zadd',KEYS[2],ms+tonumber(ARGV[4]),ARGV[3]) local e=tonumber(ARGV[4])+60000 " \
    "if " C "('pttl',KEYS[2])<e then " C "('pexpire',KEYS[2],e+60000) end end "
#define RLOCK__LUA_ENQUEUE "if ARGV[3]~='' then " RLOCK__LUA_NOW RLOCK__LUA_ENQUEUE_MS("redis.call")
#define RLOCK__LUA_DEQUEUE \
    "if ARGV[3]~='' then redis.call('zrem',KEYS[2],ARGV[3]) end "
/* The loop of a wake-up from a wait queue scored by deadline (a lock's
 * queue): w the popped head of queue q, ch the channel (Lua expressions);
 * ms the server time. Waiters already past their deadline are skipped. */
#define RLOCK__LUA_WAKE_SCORED(q, ch) \
    "for i=1,16 do if not w[1] then break end " \
    "if tonumber(w[2])>ms then " RLOCK__LUA_PUBLISH(ch, "w[1]") "break end " \
    "w=redis.call('zpopmin'," q ") end "
#define RLOCK__LUA_WAKE_ONE \
    "if ARGV[3]~='' then local w=redis.call('zpopmin',KEYS[2]) if w[1] then " RLOCK__LUA_NOW \
    RLOCK__LUA_WAKE_SCORED("KEYS[2]", "ARGV[3]") "end end "

/* A grant's fence token: INCR the counter (KEYS[4]), then answer its text
 * (GET), before..text..after: INCR's own answer is a Lua number, a double,
 * exact to 2^53 only (2^53 + 1 came back as 2^53, 2^63 - 1 as -2^63); the
 * text is exact over INCR's whole 64-bit range. */
#define RLOCK__LUA_FENCE(before, after) \
    "redis.call('incr',KEYS[4]) " before "redis.call('get',KEYS[4])" after " "
/* Acquire scripts: KEYS = lock, waiters, (unused)[, fence counter];
 * ARGV = token/owner, ttl, waiter id or '', wait ms (the simple lock's
 * ARGV[5]: '1' when an earlier attempt queued, so a grant has an entry to
 * dequeue; absent, the ZREM is saved).
 * -> {1,holds,fence} granted | {0,pttl} held (pttl -1: no TTL, foreign key)
 *
 * The simple lock's "queued" mark: a waiter that queues appends "+" to the
 * holder's value (token -> token+), in the same script that saw the lock
 * held; a waiter granted by a script while queueing (ARGV[3] set) stores
 * token+ itself. A release finding the bare token knows nothing queued
 * during this hold and is one compare-and-delete (GET, DEL): it skips the
 * queue. Race argument: scripts run one at a time, so a waiter either queued
 * before the release (the value is token+ by then, and the release wakes
 * it) or after it (it saw the key free, or another holder, whom it marks).
 * Waiters queued during an earlier hold are covered too: that hold's release
 * woke one of them, and that one, on its way back, either takes the lock
 * (by a script: it stores the mark, so its release wakes the next) or finds
 * it held and queues again (marking the new holder). Only a woken waiter
 * that never comes back (killed, gave up) strands the rest until their
 * timed re-check - the same loss as a notice lost on the way (FAULTS.md).
 * GET first: a free key is SET at once; a held one is read (its type checked
 * by the same call: pcall, WRONGTYPE on a hash) and marked unless it already
 * is, or is a fair lock's reservation ("~..."). */
#define RLOCK__LUA_SIMPLE_ACQUIRE \
    "local v=redis.pcall('get',KEYS[1]) if type(v)=='table' then " \
    "return redis.error_reply('WRONGTYPE key is not a simple rlock lock') end " \
    "if not v then local m='' if ARGV[3]~='' then m='+' end " \
    "redis.call('set',KEYS[1],ARGV[1]..m,'PX',ARGV[2]) if ARGV[5]=='1' then " RLOCK__LUA_DEQUEUE "end " \
    "if KEYS[4] then " RLOCK__LUA_FENCE("return {1,1,", "}") "end return {1,1,0} end " \
    "local t=redis.call('pttl',KEYS[1]) if t>=0 then " RLOCK__LUA_ENQUEUE \
    "if ARGV[3]~='' and string.sub(v,-1)~='+' and string.sub(v,1,1)~='~' then " \
    "redis.call('append',KEYS[1],'+') end end return {0,t}"
/* Is v (a simple lock's value) ARGV[1]'s, marked or not? */
#define RLOCK__LUA_MINE(v) "(" v "==ARGV[1] or " v "==ARGV[1]..'+')"
/* extend: KEYS = lock; ARGV = token, ttl -> 1 extended | 0 not ours */
#define RLOCK__LUA_SIMPLE_EXTEND \
    "local v=redis.call('get',KEYS[1]) if " RLOCK__LUA_MINE("v") " then " \
    "return redis.call('pexpire',KEYS[1],ARGV[2]) end return 0"
/* A Redlock releaser drops its own queue entry (ARGV[4], its waiter id, ''
 * on one node and when it never queued): a node that refused it while a
 * quorum granted still has it queued, and would later wake it instead of a
 * live waiter. */
#define RLOCK__LUA_UNQUEUE_SELF \
    "if KEYS[2] and ARGV[4] and ARGV[4]~='' then redis.call('zrem',KEYS[2],ARGV[4]) end "
/* release: KEYS = lock, waiters, (unused); ARGV = token, ttl, channel or '',
 * own waiter id or '' -> 1 deleted | 0 not ours (never a bare DEL). The bare
 * token: nothing queued during the hold (see the mark above), no wake. */
#define RLOCK__LUA_SIMPLE_RELEASE \
    RLOCK__LUA_UNQUEUE_SELF "local v=redis.call('get',KEYS[1]) " \
    "if v==ARGV[1] then redis.call('del',KEYS[1]) return 1 end " \
    "if v==ARGV[1]..'+' then redis.call('del',KEYS[1]) " RLOCK__LUA_WAKE_ONE "return 1 end return 0"
/* A grant's record (reentrant, read, write; see rlock__acquire_round_done):
 * ARGV[i], after the script's other arguments (ARGV[5]; ARGV[6] where
 * ARGV[5] is taken: a writer's, a fair release's), is the handle's random
 * id, and a grant stores the hash field NUL..id..owner (no owner id has a
 * NUL) next to the count it added. A release removes it; a cleanup (its id
 * 17 bytes: a NUL follows) decrements only if it removes it, so a cleanup
 * whose attempt never ran cannot take another handle's hold of the same
 * owner id. A reentrant release at 0 deletes the key (records go with it);
 * the read-write live() drops the records of owners holding nothing. */
#define RLOCK__LUA_RECORD(i) "redis.call('hset',KEYS[1],'\\0'..ARGV[" i "]..ARGV[1],1) "
#define RLOCK__LUA_UNRECORD(i) \
    "if redis.call('hdel',KEYS[1],'\\0'..string.sub(ARGV[" i "],1,16)..ARGV[1])==0 and #ARGV[" i "]>16 then return -1 end "
/* re-entry keeps the fence of the first grant (returns 0 for it) */
#define RLOCK__LUA_REENTRANT_ACQUIRE \
    "local t=redis.call('type',KEYS[1]).ok " \
    "if t=='none' or (t=='hash' and redis.call('hexists',KEYS[1],ARGV[1])==1) then " \
    "local c=redis.call('hincrby',KEYS[1],ARGV[1],1) " \
    "redis.call('pexpire',KEYS[1],ARGV[2]) " RLOCK__LUA_RECORD("5") RLOCK__LUA_DEQUEUE "local f=0 " \
    "if c==1 and KEYS[4] then " RLOCK__LUA_FENCE("f=", "") "end return {1,c,f} end " \
    "if t~='hash' then return redis.error_reply('WRONGTYPE key is not a reentrant rlock lock') end " \
    "local p=redis.call('pttl',KEYS[1]) if p>=0 then " RLOCK__LUA_ENQUEUE "end return {0,p}"
#define RLOCK__LUA_REENTRANT_EXTEND \
    "if redis.pcall('hexists',KEYS[1],ARGV[1])==1 then " \
    "return redis.call('pexpire',KEYS[1],ARGV[2]) end return 0"
/* -> holds left (>= 0; at 0 the key is gone and one waiter is woken) | -1 not ours */
#define RLOCK__LUA_REENTRANT_RELEASE \
    RLOCK__LUA_UNQUEUE_SELF "if redis.call('hexists',KEYS[1],ARGV[1])==0 then return -1 end " \
    RLOCK__LUA_UNRECORD("5") "local c=redis.call('hincrby',KEYS[1],ARGV[1],-1) " \
    "if c>0 then redis.call('pexpire',KEYS[1],ARGV[2]) return c end " \
    "redis.call('del',KEYS[1]) " RLOCK__LUA_WAKE_ONE "return 0"

/* ---- 6.4b Lua scripts of the primitives (section 5b) -----------------------
 * Same argument layout as the lock scripts: KEYS = key, waiters, (unused)[,
 * fence]; ARGV = token/owner, ttl, waiter id or '' (release: channel or ''),
 * wait ms, and ARGV[5] for a semaphore's permits / a writer's hold-off ms.
 * Acquire answers {1,holds,fence} | {0,pttl}; extend 1/0; release as the
 * lock kinds (count left >= 0, or -1 / 0 not ours). */
/* Wake up to 16 live waiters at once (a reader or writer leaving; a read-write queue is scored by deadline). */
#define RLOCK__LUA_WAKE_ALL \
    "if ARGV[3]~='' then " RLOCK__LUA_NOW "for i=1,16 do local w=redis.call('zpopmin',KEYS[2]) " \
    "if not w[1] then break end if tonumber(w[2])>ms then " RLOCK__LUA_PUBLISH("ARGV[3]", "w[1]") "end end end "
/* The key's TTL is the longest lease in it. */
#define RLOCK__LUA_TTL_AT_LEAST(d) \
    "if redis.call('pttl',KEYS[1])<" d " then redis.call('pexpire',KEYS[1]," d ") end "
/* Semaphore: zset "<slot>:<token>" -> lease end (server ms), expired permits
 * reaped first. A permit is one of N numbered slots, each held by one token
 * at a time: ARGV[6] names the slot to take (Redlock: every node judges the
 * same slot, so a slot is a Redlock mutex and at most N holders can have a
 * majority) or -1 for the lowest free one (one node). Refused: {0, ms until
 * the earliest lease ends, 1 + lowest free slot (0: none)}. Extend and
 * release find the token's member by a scan: O(permits held), which also
 * reaps expired permits. The queue fragments skip a call when there is
 * nothing to do (one TIME per script).
 * The queue is FIFO (scored by arrival); each waiter's entry in KEYS[3] is
 * its deadline, or on one node without fencing "deadline ttl N": a release
 * hands its freed permit straight to the first live waiter (a slot below
 * the waiter's N, leased for the waiter's ttl, "<slot>:<waiter id>";
 * "<waiter id> <slot>" published) while fewer than that N are live, so the
 * woken waiter holds it without a second attempt - under its waiter id,
 * which it then extends and releases by. Not under a token: a retry after
 * a cleanup draws a new one (a late cleanup, by the old token, must not
 * end the retry's permit), the waiter id stays with the queue place. A
 * waiter that died holds it until that lease ends, as a holder that died
 * would; one whose notice was lost finds it at its next attempt (a live
 * "<slot>:<ARGV[3]>": a grant, the lease renewed, answered with the slot
 * as -1 - slot: held under the waiter id); an attempt with no wait left
 * (the last one before a timeout, or a cancel's) leaves the queue, so
 * nothing is handed to a waiter that gave up. A late attempt that finds
 * the permit only renews it. A member not "<slot>:..." is not rlock's (a
 * sorted set of the program's, its scores long past as lease ends): the
 * acquire answers {0,-1}, a foreign key, before it reaps or adds anything. */
#define RLOCK__LUA_SEM_DEQUEUE \
    "if ARGV[3]~='' and redis.call('zrem',KEYS[2],ARGV[3])==1 then redis.call('hdel',KEYS[3],ARGV[3]) end "
#define RLOCK__LUA_SEM_ENQUEUE \
    "if ARGV[3]~='' and tonumber(ARGV[4])<=0 then " RLOCK__LUA_SEM_DEQUEUE \
    "elseif ARGV[3]~='' and redis.call('zadd',KEYS[2],'NX',ms,ARGV[3])==1 then local d=ms+tonumber(ARGV[4]) " \
    "if p<0 and not KEYS[4] then d=d..' '..tt..' '..n end " \
    "redis.call('hset',KEYS[3],ARGV[3],d) local e=tonumber(ARGV[4])+60000 " \
    "if redis.call('pttl',KEYS[2])<e then redis.call('pexpire',KEYS[2],e) redis.call('pexpire',KEYS[3],e) end end "
#define RLOCK__LUA_SEM_ACQUIRE \
    RLOCK__LUA_NOW "local k,n,tt,p=KEYS[1],tonumber(ARGV[5]),tonumber(ARGV[2]),tonumber(ARGV[6]) " \
    "local h=redis.pcall('zrange',k,0,-1,'WITHSCORES') if h.err then " \
    "return redis.error_reply('WRONGTYPE key is not an rlock semaphore') end " \
    "local c,u,mx,mn,f,x0,m,o,s=0,{},ms,nil,-1,{},':'..ARGV[1],':'..ARGV[3],nil for i=1,#h,2 do " \
    "local x,j=tonumber(h[i+1]),tonumber(string.match(h[i],'^(%d+):')) if not j then return {0,-1} end " \
    "if x<=ms then x0[#x0+1]=h[i] else c=c+1 u[j]=true " \
    "if p<0 and string.sub(h[i],-#o)==o then s=j m=o end " \
    "if x>mx then mx=x end if not mn or x<mn then mn=x end end end " \
    "if #x0>0 then redis.call('zrem',k,unpack(x0,1,math.min(#x0,4000))) end " \
    "if not s and c<n then for i=0,c do if not u[i] then f=i break end end " \
    "if (p<0 and f>=0) or (p>=0 and p<n and not u[p]) then s=p<0 and f or p end end " \
    "if s then redis.call('zadd',k,ms+tt,s..m) if ms+tt>mx then redis.call('pexpire',k,tt) end " \
    RLOCK__LUA_SEM_DEQUEUE "if m==o then s=-1-s end " \
    "if KEYS[4] then " RLOCK__LUA_FENCE("return {1,s,", "}") "end return {1,s,0} end " \
    RLOCK__LUA_SEM_ENQUEUE "return {0,(mn or ms)-ms,f+1}"
#define RLOCK__LUA_SEM_MINE \
    "local k,m=KEYS[1],':'..ARGV[1] local h=redis.call('zrange',k,0,-1,'WITHSCORES') "
#define RLOCK__LUA_SEM_EXTEND \
    RLOCK__LUA_NOW RLOCK__LUA_SEM_MINE "local tt,g,mx=tonumber(ARGV[2]),false,ms for i=1,#h,2 do " \
    "local x=tonumber(h[i+1]) if string.sub(h[i],-#m)==m then if x>ms then g=h[i] end elseif x>mx then mx=x end end " \
    "if not g then return 0 end redis.call('zadd',k,ms+tt,g) if ms+tt>mx then redis.call('pexpire',k,tt) end return 1"
/* Wake (or hand the freed permit to) the first live waiter of the FIFO;
 * w its popped head, c / u / mx the live permits left, their slots and
 * latest lease end. Waiters past their deadline are skipped. */
#define RLOCK__LUA_SEM_HANDOFF \
    "for i=1,16 do if not w[1] then break end " \
    "local v=redis.call('hget',KEYS[3],w[1]) or '' redis.call('hdel',KEYS[3],w[1]) " \
    "local d,tt,n=string.match(v,'^(%d+) (%d+) (%d+)$') d=tonumber(d or v) " \
    "if d and d>ms then local s='' if n and c<tonumber(n) then s=0 while u[s] do s=s+1 end " \
    "redis.call('zadd',k,ms+tt,s..':'..w[1]) if ms+tt>mx then redis.call('pexpire',k,tt) end s=' '..s end " \
    RLOCK__LUA_PUBLISH("ARGV[3]", "w[1]..s") "break end " \
    "w=redis.call('zpopmin',KEYS[2]) end "
#define RLOCK__LUA_SEM_RELEASE \
    RLOCK__LUA_UNQUEUE_SELF RLOCK__LUA_NOW RLOCK__LUA_SEM_MINE "local g,c,u,mx=0,0,{},ms for i=1,#h,2 do local x=tonumber(h[i+1]) " \
    "if string.sub(h[i],-#m)==m then redis.call('zrem',k,h[i]) if x>ms then g=1 end " \
    "elseif x>ms then c=c+1 u[tonumber(string.match(h[i],'^%d+')) or -1]=true if x>mx then mx=x end end end " \
    "if g==0 then return 0 end if ARGV[3]~='' then local w=redis.call('zpopmin',KEYS[2]) " \
    RLOCK__LUA_SEM_HANDOFF "end return 1"
/* Read-write: hash mode = read|write, <owner>:r / <owner>:w hold counts,
 * <owner>:x a reader's lease end (server ms), <owner>:y the writer's (an
 * expired writer is dropped and the mode is read: a writer half-way through
 * a downgrade, whose read lease made the key live on), wq a waiting writer's hold-off
 * end, <owner>:q a waiting reader's wait end, <owner>:t the same reader's
 * turn ticket (given by a writer's release, ends with the turn). live()
 * finds expired readers, waiting readers, tickets and the records of owners
 * holding nothing, and drops them from F (F holds every field first: an
 * expired reader's "<owner>:r" read after its ":x" - HGETALL's order in a
 * hashtable-encoded hash - must stay gone); it writes nothing: RW_REAP
 * deletes what F dropped, once the script has checked the key is one it
 * may change (a refusal writes nothing). It returns live readers, the
 * latest lease end, waiting readers (a list of their fields and ends), live
 * tickets, the latest end of any of these, and how many fields a key
 * without a mode cannot have (holds, records, and none of rlock's: a
 * reentrant lock's owners and records, a foreign hash's fields - each name
 * compared whole, "code" is no "mode"; RW_EMPTY leaves only waiting
 * readers, tickets and wq). */
#define RLOCK__LUA_RW_LIVE \
    "local R,S,N,M,F,A,h=redis.call,string.sub,tonumber,math.max,{},{} " \
    "local function live(k,ms) h=R('hgetall',k) local l,mx,Q,t,e,z=0,ms,{},0,ms,0 " \
    "for i=1,#h,2 do F[h[i]]=h[i+1] end for i=1,#h,2 do " \
    "local f=h[i] local s,x=S(f,-2),N(h[i+1]) if S(f,1,1)=='\\0' then A[#A+1]=f z=z+1 " \
    "elseif s==':q' or s==':t' then " \
    "if x<=ms then F[f]=nil elseif s==':q' then Q[#Q+1]=f Q[#Q+1]=x e=M(e,x) else t=t+1 e=M(e,x) end " \
    "elseif f~='mode' and f~='wq' then z=z+1 if s==':x' then if x>ms then l=l+1 mx=M(mx,x) " \
    "else F[f]=nil F[S(f,1,-3)..':r']=nil end elseif s==':y' and x<=ms and F.mode then " \
    "F[f]=nil F[S(f,1,-3)..':w']=nil F.mode='read' end end end " \
    "for _,f in ipairs(A) do local o=S(f,18) if not F[o..':r'] and not F[o..':w'] then F[f]=nil end end " \
    "return l,mx,Q,t,M(e,N(F.wq or 0)),z end "
#define RLOCK__LUA_RW_REAP \
    "for i=1,#h,2 do local f,v=h[i],F[h[i]] if not v then R('hdel',k,f) elseif v~=h[i+1] then R('hset',k,f,v) end end "
#define RLOCK__LUA_RW_NOW "local n=R('time') local ms=n[1]*1000+math.floor(n[2]/1000) "
/* No holder left: the mode goes, but a waiting writer's hold-off, the
 * waiting readers and their tickets stay (the key lives as long as the
 * latest of them), so nobody barges in ahead of them. Nothing is called
 * on a key a call emptied: on a Cluster primary whose slot migrates, a
 * call on a key not there is refused mid-script ("non local key") - a
 * release naming the lock key alone runs there (section 7). */
#define RLOCK__LUA_RW_EMPTY \
    "if e>ms then R('hdel',k,'mode') R('pexpire',k,e-ms) else R('del',k) end "
/* A key of another type fails the HGETALL with Redis's own WRONGTYPE. The
 * fields are read once (F); calls are left for the changes. */
#define RLOCK__LUA_RW_MODE \
    RLOCK__LUA_RW_LIVE RLOCK__LUA_RW_NOW \
    "local k,o,tt=KEYS[1],ARGV[1],N(ARGV[2]) local l,mx,Q,t,e,z=live(k,ms) local m=F.mode " \
    "if not m and z>0 then return redis.error_reply('WRONGTYPE key is not a read-write rlock lock') end " \
    "if R('pttl',k)==-1 then return {0,-1} end " RLOCK__LUA_RW_REAP \
    "if m=='read' and l==0 then " RLOCK__LUA_RW_EMPTY "m=false end "
/* A reader is refused while a writer holds, and while a writer waits
 * (writers first) unless it holds a turn ticket; refused, it queues as a
 * waiting reader for the next turn. */
#define RLOCK__LUA_READ_ACQUIRE \
    RLOCK__LUA_RW_MODE "local w=F[o..':t'] " \
    "if F[o..':r'] or F[o..':w'] or (m~='write' and (N(F.wq or 0)<=ms or w)) then " \
    "local c=R('hincrby',k,o..':r',1) R('hset',k,o..':x',ms+tt,'\\0'..ARGV[5]..o,1) " /* (RLOCK__LUA_RECORD) */ \
    "if w or F[o..':q'] then R('hdel',k,o..':q',o..':t') end " \
    "if not m then R('hset',k,'mode','read') end " RLOCK__LUA_TTL_AT_LEAST("tt") \
    RLOCK__LUA_DEQUEUE "return {1,c,0} end if N(ARGV[4])>0 then R('hset',k,o..':q',ms+N(ARGV[4])) end " \
    "local p=R('pttl',k) if p>=0 then if ARGV[3]~='' then " RLOCK__LUA_ENQUEUE_MS("R") "end return {0,p}"
/* A writer is refused while turn tickets are out. Granted, the key's TTL
 * is the writer's lease (its own read leases kept, after a downgrade): the
 * key may have lived longer for the waiters' ends (RW_EMPTY), and a writer
 * that dies must not keep the lock that long. Its lease end <owner>:y ends
 * its hold where the key lives on for its own read lease (live()); the
 * extend renews it, and refuses a writer whose lease ended. */
#define RLOCK__LUA_WRITE_ACQUIRE \
    RLOCK__LUA_RW_MODE "if (not m and t==0) or (m=='write' and F[o..':w']) then " \
    "local c=R('hincrby',k,o..':w',1) R('hset',k,'mode','write',o..':y',ms+tt,'\\0'..ARGV[6]..o,1) " \
    "if F.wq then R('hdel',k,'wq') end " /* (and the grant's record: RLOCK__LUA_RECORD) */ \
    "R('pexpire',k,M(tt,mx-ms)) " RLOCK__LUA_DEQUEUE "local f=0 " \
    "if c==1 and KEYS[4] then R('incr',KEYS[4]) f=R('get',KEYS[4]) end return {1,c,f} end " \
    "if m=='read' and F[o..':r'] then return redis.error_reply('UPGRADE read lock held by this owner') end " \
    "local d=ms+N(ARGV[5]) if d>ms and d>N(F.wq or 0) then R('hset',k,'wq',d) end " \
    "local p=R('pttl',k) if p>=0 then if ARGV[3]~='' then " RLOCK__LUA_ENQUEUE_MS("R") "end return {0,p}"
#define RLOCK__LUA_READ_EXTEND \
    RLOCK__LUA_NOW "local k,o=KEYS[1],ARGV[1] local x=tonumber(redis.call('hget',k,o..':x') or 0) " \
    "if x>ms and redis.call('hexists',k,o..':r')==1 then redis.call('hset',k,o..':x',ms+tonumber(ARGV[2])) " \
    RLOCK__LUA_TTL_AT_LEAST("tonumber(ARGV[2])") "return 1 end return 0"
#define RLOCK__LUA_WRITE_EXTEND \
    RLOCK__LUA_NOW "local k,y=KEYS[1],ARGV[1]..':y' " \
    "if redis.call('hget',k,'mode')=='write' and redis.call('hexists',k,ARGV[1]..':w')==1 and " \
    "tonumber(redis.call('hget',k,y) or ms+1)>ms then redis.call('hset',k,y,ms+tonumber(ARGV[2])) " \
    RLOCK__LUA_TTL_AT_LEAST("tonumber(ARGV[2])") "return 1 end return 0"
/* The last reader out ends the read mode (keeping what RW_EMPTY keeps) and
 * wakes every waiter: they are writers and the readers the hold-off
 * refused, in no useful order, so waking one could wake a refused reader
 * and leave the writer asleep until its recheck. A writer out leaves the
 * downgraded readers or ends the write mode, and gives every waiting reader
 * a turn ticket that lasts ARGV[5] ms (the releaser's): no writer, this one
 * included, enters while a ticket is out, so a writer that re-acquires in a
 * loop cannot starve them; readers that come during the turn wait for the
 * next one, so the turn cannot starve the writers either. It also wakes
 * every waiter (readers enter together). */
#define RLOCK__LUA_READ_RELEASE \
    RLOCK__LUA_RW_LIVE RLOCK__LUA_RW_NOW "local k,o=KEYS[1],ARGV[1] local l,mx,Q,t,e=live(k,ms) " \
    "if not F[o..':r'] then return -1 end " RLOCK__LUA_RW_REAP RLOCK__LUA_UNRECORD("5") "local c=R('hincrby',k,o..':r',-1) if c>0 then return c end " \
    "R('hdel',k,o..':r',o..':x') if F.mode=='read' and l<=1 and (l==0 or F[o..':x']) then " RLOCK__LUA_RW_EMPTY \
    RLOCK__LUA_WAKE_ALL "end return 0"
#define RLOCK__LUA_WRITE_RELEASE \
    RLOCK__LUA_RW_LIVE RLOCK__LUA_RW_NOW "local k,o=KEYS[1],ARGV[1] local l,mx,Q,t,e=live(k,ms) " \
    "if not F[o..':w'] then return -1 end " RLOCK__LUA_RW_REAP RLOCK__LUA_UNRECORD("6") "local c=R('hincrby',k,o..':w',-1) if c>0 then return c end " \
    "R('hdel',k,o..':w',o..':y') local d=N(ARGV[5] or 0) if #Q>0 and d>0 then local H,D={},{} " \
    "for i=1,#Q,2 do D[#D+1]=Q[i] H[#H+1]=S(Q[i],1,-3)..':t' H[#H+1]=math.min(Q[i+1],ms+d) end " \
    "R('hdel',k,unpack(D)) R('hset',k,unpack(H)) end " \
    "if l>0 then R('hset',k,'mode','read') R('pexpire',k,M(mx,e)-ms) else " RLOCK__LUA_RW_EMPTY "end " \
    RLOCK__LUA_WAKE_ALL "return 0"

/* Multi: KEYS = the n keys (acquire: then their n fence counters when
 * fencing; release: then their n wait queues and n deadline hashes (unused) when it
 * wakes); ARGV = token, ttl, n. All free -> all set, or none. The fence is
 * one more than the largest of the keys' counters, and every counter is set
 * to it: above any token a lock on any of the keys was given before. The
 * counters are never Lua numbers (doubles: exact to 2^53, and written back
 * as "1.2e+17" past 17 digits, which INCR refuses): the largest, found by
 * its number and then exactly by its text, is INCRed and its text copied
 * to the others - as exact as the single lock's INCR, and before any key
 * is set (an INCR that fails has written nothing). A
 * release wakes one waiter of each key it frees (a simple lock's waiter on
 * it), on that key's channel "<queue minus :waiters>:released". */
#define RLOCK__LUA_MULTI_MINE \
    "local function mine(k) if redis.call('type',k).ok~='string' then return false end " \
    "local v=redis.call('get',k) return " RLOCK__LUA_MINE("v") " end "
#define RLOCK__LUA_MULTI_ACQUIRE \
    "local n=tonumber(ARGV[3]) for i=1,n do local p=redis.call('pttl',KEYS[i]) if p~=-2 then return {0,p} end end " \
    "local f=0 if #KEYS>n then local b,v,x=KEYS[n+1],'',-1/0 for i=n+1,#KEYS do " \
    "local c=redis.call('get',KEYS[i]) or '0' local y=tonumber(c) or 0 " \
    "if y>x or (y==x and (#c>#v or (#c==#v and c>v))) then b,v,x=KEYS[i],c,y end end " \
    "redis.call('incr',b) f=redis.call('get',b) for i=n+1,#KEYS do redis.call('set',KEYS[i],f) end end " \
    "for i=1,n do redis.call('set',KEYS[i],ARGV[1],'PX',ARGV[2]) end return {1,1,f}"
#define RLOCK__LUA_MULTI_EXTEND \
    RLOCK__LUA_MULTI_MINE "for i=1,#KEYS do if not mine(KEYS[i]) then return 0 end end " \
    "for i=1,#KEYS do redis.call('pexpire',KEYS[i],ARGV[2]) end return 1"
#define RLOCK__LUA_MULTI_RELEASE \
    RLOCK__LUA_MULTI_MINE "local n,c,ms=tonumber(ARGV[3]),0,nil for i=1,n do if mine(KEYS[i]) then " \
    "redis.call('del',KEYS[i]) c=c+1 local q=KEYS[n+i] local w=q and redis.call('zpopmin',q) or {} " \
    "if w[1] and not ms then local t=redis.call('time') ms=t[1]*1000+math.floor(t[2]/1000) end " \
    RLOCK__LUA_WAKE_SCORED("q", "string.sub(q,1,-9)..':released'") "end end if c==n then return 1 end return 0"
/* Inspect: KEYS = key[, waiters] -> "kind pttl holders holds waiters flags
 * readers-waiting owner16"; flags: 1 a writer waits (new readers wait), 2
 * readers hold turn tickets (writers wait). Reads only, and says what the
 * next script would see (live()): a writer whose lease ended leaves the read
 * mode (its own read lease, after a downgrade), and a mode without a live
 * holder is free. */
#define RLOCK__LUA_INSPECT \
    RLOCK__LUA_NOW "local k=KEYS[1] local t=redis.call('type',k).ok local p=redis.call('pttl',k) " \
    "local q=0 if KEYS[2] then q=redis.call('zcard',KEYS[2]) end local kind,h,c,w,r,o='other',0,0,0,0,'' " \
    "if t=='none' then kind='free' elseif t=='string' then kind='simple' h=1 c=1 o=redis.call('get',k) " \
    "elseif t=='zset' then kind='semaphore' h=redis.call('zcount',k,'('..ms,'+inf') c=h>0 and 1 or 0 " \
    "o=string.gsub(redis.call('zrangebyscore',k,'('..ms,'+inf','LIMIT',0,1)[1] or '','^%d+:','') " \
    "elseif t=='hash' then local f=redis.call('hgetall',k) local m=redis.call('hget',k,'mode') local z=0 " \
    "local T,O,C=0,'',0 for i=1,#f,2 do local s=string.sub(f[i],-2) if string.byte(f[i])==0 then " \
    "elseif s==':q' or s==':t' then if (tonumber(f[i+1]) or 0)>ms then " \
    "r=r+1 if s==':t' then T=2 end end elseif m and s==':y' and (tonumber(f[i+1]) or 0)<=ms then m='read' " \
    "elseif f[i]~='wq' then z=z+1 if z==1 then O=f[i] C=tonumber(f[i+1]) or 0 end end end " \
    "if (tonumber(redis.call('hget',k,'wq')) or 0)>ms then w=1 end w=w+T " \
    "if not m and z==0 then kind='free' elseif not m then kind='reentrant' w=0 r=0 " \
    "h=z o=O c=C else kind=m for i=1,#f,2 do local s=string.sub(f[i],-2) " \
    "local n=string.sub(f[i],1,-3) if string.byte(f[i])~=0 and ((m=='write' and s==':w') or (m=='read' and s==':r' and " \
    "(tonumber(redis.call('hget',k,n..':x')) or 0)>ms)) then h=h+1 if o=='' then o=n c=tonumber(f[i+1]) or 0 end end " \
    "end if h==0 then kind='free' end end end return kind..' '..p..' '..h..' '..c..' '..q..' '..w..' '..r..' '..string.sub(o,1,16)"
/* Force: KEYS = key, waiters, a semaphore's deadlines; ARGV[3] = channel or ''.
 * -> 1 deleted | 0 absent | -1 no TTL (not rlock's: left alone)
 * Wakes up to 16 waiters whatever their score: a lock's queue is scored by
 * deadline, a fair lock's and a semaphore's by arrival (WAKE_ALL's test
 * would skip every semaphore waiter); a popped semaphore waiter's deadline
 * entry goes with it. */
#define RLOCK__LUA_FORCE \
    "local p=redis.call('pttl',KEYS[1]) if p==-2 then return 0 end if p==-1 then return -1 end " \
    "redis.call('del',KEYS[1]) if ARGV[3]~='' then for i=1,16 do local w=redis.call('zpopmin',KEYS[2]) " \
    "if not w[1] then break end redis.pcall('hdel',KEYS[3],w[1]) " RLOCK__LUA_PUBLISH("ARGV[3]", "w[1]") "end end return 1"

/* Fair locks (rlock_lock_set_fair): FIFO by the server's clock, release
 * hands the key to the oldest waiter. Their own scripts; the extend scripts
 * are the ones above (a fair simple lock's value is the token, a fair
 * reentrant lock's the owner hash, as for the barging kinds).
 *   KEYS[1] the lock; KEYS[2] "{key}:waiters", a zset: waiter id (ARGV[3]
 *   of an acquire, 16 hex, random per acquisition) -> server time when it
 *   queued (microseconds: two waiters in one millisecond keep their order);
 *   KEYS[3] "{key}:fence" when fencing.
 *   A reservation is the lock key holding the string "~" .. waiter id with a
 *   PX of the release's grace: no one else, the releaser included, can take
 *   the key meanwhile; the named waiter's acquire replaces it with its own
 *   grant (its validity counts from its own send time). A reservation that
 *   expires unclaimed (the waiter died or missed its notice) leaves the key
 *   free: the next acquirer takes it. A cancelled waiter's last attempt
 *   (no wait left) claims it, and the cancel's cleanup deletes it.
 * Acquire: ARGV = token/owner, ttl, waiter id, wait ms.
 *   -> {1,holds,fence} granted | {0,pttl} held, the waiter queued (pttl -1:
 *   no TTL, foreign key). The queue's TTL is kept above the longest wait.
 *   An attempt with no wait left (a timed-out or cancelled waiter's last)
 *   that is refused leaves the queue instead: a later release would
 *   otherwise reserve the key for a waiter gone, for a grace.
 *   A barging waiter queued behind a fair holder marks its token "+" (see
 *   the simple lock's mark): the release accepts it.
 * Release: ARGV = token/owner, ttl, channel or '', grace ms ('0': a cleanup,
 *   delete without a hand-off), and on Redlock the releaser's own waiter id
 *   (a node that refused it while others granted still has it queued).
 *   Pops the oldest waiter, reserves the key for it, and publishes "W" or
 *   "W N": W the reserved waiter (claim now), N the next in line (standby:
 *   re-check after the grace, in case W is gone). Without KEYS[2] (a
 *   cluster release after -TRYAGAIN, rlock__cluster_judge) it deletes. */
#define RLOCK__LUA_FAIR_ENQUEUE \
    "if ARGV[3]~='' then if ARGV[4]=='0' then redis.call('zrem',KEYS[2],ARGV[3]) else local n=redis.call('time') " \
    "redis.call('zadd',KEYS[2],'NX',n[1]*1000000+n[2],ARGV[3]) " \
    "local e=tonumber(ARGV[4])+60000 " \
    "if redis.call('pttl',KEYS[2])<e then redis.call('pexpire',KEYS[2],e+60000) end end end "
#define RLOCK__LUA_FAIR_UNQUEUE_SELF "if ARGV[5]~='' then redis.call('zrem',KEYS[2],ARGV[5]) end "
#define RLOCK__LUA_FAIR_HANDOFF \
    "local w=KEYS[2] and redis.call('zrange',KEYS[2],0,1) or {} " \
    "if w[1] and ARGV[4]~='0' then redis.call('zrem',KEYS[2],w[1]) " \
    "redis.call('set',KEYS[1],'~'..w[1],'PX',ARGV[4]) " \
    "if ARGV[3]~='' then " RLOCK__LUA_PUBLISH("ARGV[3]", "w[2] and w[1]..' '..w[2] or w[1]") "end " \
    "else redis.call('del',KEYS[1]) end "
#define RLOCK__LUA_FAIR_FENCE \
    "if KEYS[3] then redis.call('incr',KEYS[3]) f=redis.call('get',KEYS[3]) end "
#define RLOCK__LUA_FAIR_ACQUIRE \
    "local v=redis.call('get',KEYS[1]) " \
    "if not v or v=='~'..ARGV[3] then redis.call('set',KEYS[1],ARGV[1],'PX',ARGV[2]) " \
    "if not v then redis.call('zrem',KEYS[2],ARGV[3]) end local f=0 " RLOCK__LUA_FAIR_FENCE "return {1,1,f} end " \
    "local t=redis.call('pttl',KEYS[1]) if t>=0 then " RLOCK__LUA_FAIR_ENQUEUE "end return {0,t}"
/* A Redlock node may hold a reservation for the releaser itself (served
 * there after a quorum elsewhere had granted it): passed on, not kept. */
#define RLOCK__LUA_FAIR_RELEASE \
    RLOCK__LUA_FAIR_UNQUEUE_SELF "local v=redis.call('get',KEYS[1]) " \
    "local mine=" RLOCK__LUA_MINE("v") " if not mine and (ARGV[5]=='' or v~='~'..ARGV[5]) then return 0 end " \
    RLOCK__LUA_FAIR_HANDOFF "if mine then return 1 end return 0"
#define RLOCK__LUA_FAIR_REENTRANT_ACQUIRE \
    "local t,w,r=redis.call('type',KEYS[1]).ok,'WRONGTYPE key is not a reentrant rlock lock' " \
    "if t=='string' then local v=redis.call('get',KEYS[1]) " \
    "if string.sub(v,1,1)~='~' then return redis.error_reply(w) end " \
    "r=v=='~'..ARGV[3] if r then redis.call('del',KEYS[1]) end end " \
    "if t=='none' or r or (t=='hash' and redis.call('hexists',KEYS[1],ARGV[1])==1) then " \
    "local c=redis.call('hincrby',KEYS[1],ARGV[1],1) redis.call('pexpire',KEYS[1],ARGV[2]) " RLOCK__LUA_RECORD("5") \
    "if t=='none' then redis.call('zrem',KEYS[2],ARGV[3]) end local f=0 " \
    "if c==1 then " RLOCK__LUA_FAIR_FENCE "end return {1,c,f} end " \
    "if t~='hash' and t~='string' then return redis.error_reply(w) end " \
    "local p=redis.call('pttl',KEYS[1]) if p>=0 then " RLOCK__LUA_FAIR_ENQUEUE "end return {0,p}"
/* -> holds left (>= 0; at 0 the key is handed off or deleted: as a whole,
 * not emptied first - see RLOCK__LUA_RW_EMPTY) | -1 not ours */
#define RLOCK__LUA_FAIR_REENTRANT_RELEASE \
    RLOCK__LUA_FAIR_UNQUEUE_SELF "local function h() " RLOCK__LUA_FAIR_HANDOFF "end " \
    "if redis.call('type',KEYS[1]).ok=='string' then " \
    "if ARGV[5]~='' and redis.call('get',KEYS[1])=='~'..ARGV[5] then h() end return -1 end " \
    "if redis.call('hexists',KEYS[1],ARGV[1])==0 then return -1 end " RLOCK__LUA_UNRECORD("6") \
    "local c=redis.call('hincrby',KEYS[1],ARGV[1],-1) " \
    "if c>0 then redis.call('pexpire',KEYS[1],ARGV[2]) return c end " \
    "h() return 0"

/* The longest attempt (section 1: RLOCK__TX_FLOOR_*) must fit in a node's
 * empty TX buffer: with the EVAL fallback, the longest compiled script's
 * library and its FCALL; without it, EVALSHA (no script text is sent). */
/* NOLINTBEGIN(bugprone-implicit-widening-of-multiplication-result): a
 * compile-time constant of small config values, not a run-time product */
/* The longest script text a build with the EVAL fallback may send: the
 * longest script of the kinds built. */
#define RLOCK__MAX(a, b) ((a) > (b) ? (a) : (b))
#define RLOCK__MAX3(a, b, c) RLOCK__MAX(RLOCK__MAX(a, b), c)
#define RLOCK__LEN_SIMPLE RLOCK__MAX3(sizeof(RLOCK__LUA_SIMPLE_ACQUIRE), sizeof(RLOCK__LUA_SIMPLE_EXTEND), \
                                      sizeof(RLOCK__LUA_SIMPLE_RELEASE))
#ifdef RLOCK_NO_REENTRANT
#define RLOCK__LEN_RE 0
#else
#define RLOCK__LEN_RE RLOCK__MAX3(sizeof(RLOCK__LUA_REENTRANT_ACQUIRE), sizeof(RLOCK__LUA_REENTRANT_EXTEND), \
                                  sizeof(RLOCK__LUA_REENTRANT_RELEASE))
#endif
#if defined(RLOCK_NO_FAIR)
#define RLOCK__LEN_FAIR 0
#elif defined(RLOCK_NO_REENTRANT)
#define RLOCK__LEN_FAIR RLOCK__MAX(sizeof(RLOCK__LUA_FAIR_ACQUIRE), sizeof(RLOCK__LUA_FAIR_RELEASE))
#else
#define RLOCK__LEN_FAIR RLOCK__MAX(RLOCK__MAX(sizeof(RLOCK__LUA_FAIR_ACQUIRE), sizeof(RLOCK__LUA_FAIR_RELEASE)), \
                                   RLOCK__MAX(sizeof(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE), \
                                              sizeof(RLOCK__LUA_FAIR_REENTRANT_RELEASE)))
#endif
#ifdef RLOCK_NO_PRIMITIVES
#define RLOCK__LEN_PRIM 0
#else
#define RLOCK__LEN_PRIM \
    RLOCK__MAX(RLOCK__MAX(RLOCK__MAX3(sizeof(RLOCK__LUA_SEM_ACQUIRE), sizeof(RLOCK__LUA_SEM_EXTEND), \
                                      sizeof(RLOCK__LUA_SEM_RELEASE)), \
                          RLOCK__MAX3(sizeof(RLOCK__LUA_READ_ACQUIRE), sizeof(RLOCK__LUA_READ_EXTEND), \
                                      sizeof(RLOCK__LUA_READ_RELEASE))), \
               RLOCK__MAX(RLOCK__MAX3(sizeof(RLOCK__LUA_WRITE_ACQUIRE), sizeof(RLOCK__LUA_WRITE_EXTEND), \
                                      sizeof(RLOCK__LUA_WRITE_RELEASE)), \
                          RLOCK__MAX(RLOCK__MAX3(sizeof(RLOCK__LUA_MULTI_ACQUIRE), sizeof(RLOCK__LUA_MULTI_EXTEND), \
                                                 sizeof(RLOCK__LUA_MULTI_RELEASE)), \
                                     RLOCK__MAX(sizeof(RLOCK__LUA_INSPECT), sizeof(RLOCK__LUA_FORCE)))))
#endif
#define RLOCK__LONGEST_SCRIPT \
    RLOCK__MAX(RLOCK__MAX(RLOCK__LEN_SIMPLE, RLOCK__LEN_RE), RLOCK__MAX(RLOCK__LEN_FAIR, RLOCK__LEN_PRIM))
#ifdef RLOCK_NO_PRIMITIVES
#define RLOCK__PRIM(x) "" /* left out: never sent (no handle of these kinds can be made) */
#else
#define RLOCK__PRIM(x) x
#endif
#if defined(RLOCK_NO_EVAL_FALLBACK)
typedef char rlock__tx_buf_fits[RLOCK_TX_BUF >= RLOCK__TX_FLOOR_SHA ? 1 : -1];
#else
typedef char rlock__tx_buf_fits[RLOCK_TX_BUF >= RLOCK__TX_FLOOR_TEXT(RLOCK__LONGEST_SCRIPT) ? 1 : -1];
#endif
/* NOLINTEND(bugprone-implicit-widening-of-multiplication-result) */

/* ... and the defaults' comments hold: a fair reentrant acquire is the
 * longest lock script, a writer's acquire the longest of all. */
typedef char rlock__fair_reentrant_acquire_is_longest[
    sizeof(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE) >= sizeof(RLOCK__LUA_FAIR_REENTRANT_RELEASE) &&
    sizeof(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE) >= sizeof(RLOCK__LUA_REENTRANT_ACQUIRE) &&
    sizeof(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE) >= sizeof(RLOCK__LUA_SIMPLE_ACQUIRE) ? 1 : -1];
typedef char rlock__write_acquire_is_longest[sizeof(RLOCK__LUA_WRITE_ACQUIRE) >= sizeof(RLOCK__LUA_READ_ACQUIRE) &&
                                             sizeof(RLOCK__LUA_WRITE_ACQUIRE) >= sizeof(RLOCK__LUA_INSPECT) &&
                                             sizeof(RLOCK__LUA_WRITE_ACQUIRE) >= sizeof(RLOCK__LUA_SEM_ACQUIRE) &&
                                             sizeof(RLOCK__LUA_WRITE_ACQUIRE) >= sizeof(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE) ?
                                             1 : -1];

/* A script of a feature compiled out is "" (never sent: no handle can ask
 * for it); RLOCK_NO_EVAL_FALLBACK leaves every text out (EVALSHA only). */
#ifdef RLOCK_NO_REENTRANT
#define RLOCK__RE(x) ""
#else
#define RLOCK__RE(x) x
#endif
#ifdef RLOCK_NO_FAIR
#define RLOCK__FAIRS(x) ""
#else
#define RLOCK__FAIRS(x) x
#endif
#ifdef RLOCK_NO_EVAL_FALLBACK
#define RLOCK__TEXT(x) ""
#else
#define RLOCK__TEXT(x) x
#endif
/* Each script's text and SHA1 is an array of its own (with -fdata-sections
 * a section of its own), reached only through the script sets below, so a
 * program links the scripts of the lock kinds it can make and no others. */
/* The simple lock's SHA1s are written as 20 hex pairs, so that the compact
 * engine can send them from their 20 bytes (rlock__sha_bin: 60 B instead
 * of 123 B of text) while the rest reads the same digits as text. */
#define RLOCK__SHA_TEXT(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t) \
    #a #b #c #d #e #f #g #h #i #j #k #l #m #n #o #p #q #r #s #t
#define RLOCK__SHA_BYTES(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t)                      \
    { 0x##a, 0x##b, 0x##c, 0x##d, 0x##e, 0x##f, 0x##g, 0x##h, 0x##i, 0x##j, 0x##k, 0x##l, 0x##m, 0x##n, \
      0x##o, 0x##p, 0x##q, 0x##r, 0x##s, 0x##t }
#define RLOCK__SHA0(X) X(55,9d,51,3d,a3,b6,3a,f2,09,be,13,bc,c4,0b,41,1d,d1,22,82,d9)
#define RLOCK__SHA1(X) X(79,61,2b,9e,4b,e0,76,a6,d7,53,91,59,4e,28,3b,d6,c5,7b,82,10)
#define RLOCK__SHA2(X) X(59,00,29,a6,87,90,71,2f,c1,07,36,e0,1a,a2,01,31,e0,a6,7a,a9)
static const char rlock__t0[] = RLOCK__TEXT(RLOCK__LUA_SIMPLE_ACQUIRE);
static const char rlock__h0[] = RLOCK__SHA0(RLOCK__SHA_TEXT);
static const char rlock__t1[] = RLOCK__TEXT(RLOCK__LUA_SIMPLE_EXTEND);
static const char rlock__h1[] = RLOCK__SHA1(RLOCK__SHA_TEXT);
static const char rlock__t2[] = RLOCK__TEXT(RLOCK__LUA_SIMPLE_RELEASE);
static const char rlock__h2[] = RLOCK__SHA2(RLOCK__SHA_TEXT);
#if RLOCK__ENC_TEMPLATE
static const unsigned char rlock__sha_bin[3][20] = { RLOCK__SHA0(RLOCK__SHA_BYTES), RLOCK__SHA1(RLOCK__SHA_BYTES),
                                                     RLOCK__SHA2(RLOCK__SHA_BYTES) };
#endif
static const char rlock__t3[] = RLOCK__TEXT(RLOCK__RE(RLOCK__LUA_REENTRANT_ACQUIRE));
static const char rlock__h3[] = RLOCK__RE("aa3e6c22a98f91b3b038cd180acbd226b3202ec6");
static const char rlock__t4[] = RLOCK__TEXT(RLOCK__RE(RLOCK__LUA_REENTRANT_EXTEND));
static const char rlock__h4[] = RLOCK__RE("279d625e0cd3e64899f00d9f0ecab5936c9c71c0");
static const char rlock__t5[] = RLOCK__TEXT(RLOCK__RE(RLOCK__LUA_REENTRANT_RELEASE));
static const char rlock__h5[] = RLOCK__RE("3b209281efcfbceec1c362c4a591532781dcd4f1");
static const char rlock__t6[] = RLOCK__TEXT(RLOCK__FAIRS(RLOCK__LUA_FAIR_ACQUIRE));
static const char rlock__h6[] = RLOCK__FAIRS("82f29421e53e12c2f97d5885334460745eeef024");
static const char rlock__t7[] = RLOCK__TEXT(RLOCK__FAIRS(RLOCK__LUA_FAIR_RELEASE));
static const char rlock__h7[] = RLOCK__FAIRS("a85520ed1cefaae8e139d2c5ca81ae59fa97f60d");
static const char rlock__t8[] = RLOCK__TEXT(RLOCK__FAIRS(RLOCK__RE(RLOCK__LUA_FAIR_REENTRANT_ACQUIRE)));
static const char rlock__h8[] = RLOCK__FAIRS(RLOCK__RE("ab9ae245467d7eed50fd4e49205cef1805b993db"));
static const char rlock__t9[] = RLOCK__TEXT(RLOCK__FAIRS(RLOCK__RE(RLOCK__LUA_FAIR_REENTRANT_RELEASE)));
static const char rlock__h9[] = RLOCK__FAIRS(RLOCK__RE("753d16fdc4ff3bde866d32a5ad936f74b4e64ef0"));
static const char rlock__t10[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_SEM_ACQUIRE));
static const char rlock__h10[] = RLOCK__PRIM("388e243e3c9de9a9f38ca433e91deb0e570a5940");
static const char rlock__t11[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_SEM_EXTEND));
static const char rlock__h11[] = RLOCK__PRIM("a62ba4875a927db76512e84798a66a7d570f0799");
static const char rlock__t12[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_SEM_RELEASE));
static const char rlock__h12[] = RLOCK__PRIM("3c5be2e23f017faca36104d487a9d5d9eaef7714");
static const char rlock__t13[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_READ_ACQUIRE));
static const char rlock__h13[] = RLOCK__PRIM("54b40d59303e2b52b1e61ce586ba12545ecab3cf");
static const char rlock__t14[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_READ_EXTEND));
static const char rlock__h14[] = RLOCK__PRIM("2f8697bce275e0e230870f94607b9fa525eb6ae0");
static const char rlock__t15[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_READ_RELEASE));
static const char rlock__h15[] = RLOCK__PRIM("53a47ccf8274e29ca73eca503ea49977f1b46330");
static const char rlock__t16[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_WRITE_ACQUIRE));
static const char rlock__h16[] = RLOCK__PRIM("7656b190d8db3e8ddc213b29c3550c2506e74b94");
static const char rlock__t17[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_WRITE_EXTEND));
static const char rlock__h17[] = RLOCK__PRIM("5f1849b94945f3618921adc2bc6e457f8820d7de");
static const char rlock__t18[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_WRITE_RELEASE));
static const char rlock__h18[] = RLOCK__PRIM("825cfa2a69b311ba38e473ed482ba036dc95d1f0");
static const char rlock__t19[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_MULTI_ACQUIRE));
static const char rlock__h19[] = RLOCK__PRIM("ce775f39d173f2b9c3f0e31d4f0d806d6f761c64");
static const char rlock__t20[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_MULTI_EXTEND));
static const char rlock__h20[] = RLOCK__PRIM("418b67d9a419f74ae959d7accb330343b5491a76");
static const char rlock__t21[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_MULTI_RELEASE));
static const char rlock__h21[] = RLOCK__PRIM("f5335c9979a3fcab87cece94d17e28a4df6f672a");
static const char rlock__t22[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_INSPECT));
static const char rlock__h22[] = RLOCK__PRIM("1db77fc5c9890b401025f4aa819e96fa38a3569f");
static const char rlock__t23[] = RLOCK__TEXT(RLOCK__PRIM(RLOCK__LUA_FORCE));
static const char rlock__h23[] = RLOCK__PRIM("ca693fe1f8045b60b6709e030fdb985f602d99ad");
/* The scripts a lock may send (its script set, rlock_lock.scripts): what
 * rlock_lock_init's kinds need (simple, reentrant, read, write); that and the
 * fair ones once rlock_lock_set_fair made it fair; all of them for the
 * handles of section 5b (semaphores, multi-locks, inspect, force-unlock).
 * "" where a set has none: never asked for (a handle of that kind has the
 * set that has it). */
#if RLOCK__COMPACT /* simple locks only: their three scripts (ids 0..2), no empty slots */
static const char *const rlock__lua_lock[3] = { rlock__t0, rlock__t1, rlock__t2 };
static const char *const rlock__sha_lock[3] = { rlock__h0, rlock__h1, rlock__h2 };
typedef char rlock__compact_scripts[RLOCK__S_SIMPLE_ACQUIRE == 0 && RLOCK__S_SIMPLE_EXTEND == 1 &&
                                    RLOCK__S_SIMPLE_RELEASE == 2 ? 1 : -1];
#else
static const char *const rlock__lua_lock[RLOCK__S_COUNT] = {
    rlock__t0, rlock__t1, rlock__t2, rlock__t3, rlock__t4, rlock__t5, "", "", "", "", "", "", "", rlock__t13,
    rlock__t14, rlock__t15, rlock__t16, rlock__t17, rlock__t18, "", "", "", "", ""
};
static const char *const rlock__sha_lock[RLOCK__S_COUNT] = {
    rlock__h0, rlock__h1, rlock__h2, rlock__h3, rlock__h4, rlock__h5, "", "", "", "", "", "", "", rlock__h13,
    rlock__h14, rlock__h15, rlock__h16, rlock__h17, rlock__h18, "", "", "", "", ""
};
#endif
static const char *const rlock__lua_fair[RLOCK__S_COUNT] = {
    rlock__t0, rlock__t1, rlock__t2, rlock__t3, rlock__t4, rlock__t5, rlock__t6, rlock__t7, rlock__t8,
    rlock__t9, "", "", "", rlock__t13, rlock__t14, rlock__t15, rlock__t16, rlock__t17, rlock__t18, "", "", "",
    "", ""
};
static const char *const rlock__sha_fair[RLOCK__S_COUNT] = {
    rlock__h0, rlock__h1, rlock__h2, rlock__h3, rlock__h4, rlock__h5, rlock__h6, rlock__h7, rlock__h8,
    rlock__h9, "", "", "", rlock__h13, rlock__h14, rlock__h15, rlock__h16, rlock__h17, rlock__h18, "", "", "",
    "", ""
};
static const char *const rlock__lua[RLOCK__S_COUNT] = {
    rlock__t0, rlock__t1, rlock__t2, rlock__t3, rlock__t4, rlock__t5, rlock__t6, rlock__t7, rlock__t8,
    rlock__t9, rlock__t10, rlock__t11, rlock__t12, rlock__t13, rlock__t14, rlock__t15, rlock__t16, rlock__t17,
    rlock__t18, rlock__t19, rlock__t20, rlock__t21, rlock__t22, rlock__t23
};
static const char *const rlock__lua_sha[RLOCK__S_COUNT] = {
    rlock__h0, rlock__h1, rlock__h2, rlock__h3, rlock__h4, rlock__h5, rlock__h6, rlock__h7, rlock__h8,
    rlock__h9, rlock__h10, rlock__h11, rlock__h12, rlock__h13, rlock__h14, rlock__h15, rlock__h16, rlock__h17,
    rlock__h18, rlock__h19, rlock__h20, rlock__h21, rlock__h22, rlock__h23
};
#ifndef RLOCK_NO_PRIMITIVES
/* The primitives' parts of the operations (6.8), reached through
 * rlock__set_all only (every primitive's handle has it, section 6.10): a
 * program that uses no primitive does not link them. */
struct rlock__enc;
static int rlock__all_store(struct rlock_lock *lk, size_t i, int st, const rlock_reply *rep);
static int rlock__lock_store(struct rlock_lock *lk, size_t i, int st, const rlock_reply *rep);
static void rlock__admin_round_done(struct rlock_lock *lk);
static void rlock__enc_prim(struct rlock__enc *e, const struct rlock_lock *lk, size_t i);
static int rlock__multi_aux(const struct rlock_lock *lk);
static void rlock__enc_sem_args(struct rlock__enc *e, const struct rlock_lock *lk);
static int rlock__handed_slot(const struct rlock_lock *lk, const char *d, size_t n);
static int rlock__woken(const struct rlock_lock *lk, const char *d, size_t n);
static int rlock__sem_hop(struct rlock_lock *lk);
static void rlock__sem_handed(struct rlock_lock *lk, long long *slot);
static void rlock__sem_woken(struct rlock_lock *lk);
#define RLOCK__PRIM_PARTS(info, admin_done, enc_prim, multi_aux, enc_sem_args, handed_slot, sem_hop, sem_handed, \
                          sem_woken) \
    , info, admin_done, enc_prim, multi_aux, enc_sem_args, handed_slot, sem_hop, sem_handed, sem_woken
#else
#define RLOCK__PRIM_PARTS(info, admin_done, enc_prim, multi_aux, enc_sem_args, handed_slot, sem_hop, sem_handed, \
                          sem_woken)
#endif
struct rlock__scripts {
    const char *const *text;
    const char *const *sha;
#ifndef RLOCK_NO_PRIMITIVES
    int (*store)(struct rlock_lock *lk, size_t i, int st, const rlock_reply *rep); /* node i's answer kept */
    void (*admin_done)(struct rlock_lock *lk);                       /* an inspect / force round's end (set_all) */
    void (*enc_prim)(struct rlock__enc *e, const struct rlock_lock *lk, size_t i); /* multi, inspect, force requests */
    int (*multi_aux)(const struct rlock_lock *lk);                   /* its keys have same-slot names */
    void (*enc_sem_args)(struct rlock__enc *e, const struct rlock_lock *lk); /* a semaphore acquire's ARGV[6] */
    int (*handed_slot)(const struct rlock_lock *lk, const char *d, size_t n); /* a wake-up notice: op.woke */
    int (*sem_hop)(struct rlock_lock *lk);  /* a Redlock semaphore's refusal named a free slot: ask for it */
    void (*sem_handed)(struct rlock_lock *lk, long long *slot); /* a granted slot < 0: a permit handed to us */
    void (*sem_woken)(struct rlock_lock *lk); /* a wake-up handed us a permit: the round's answer */
#endif
};
static const struct rlock__scripts rlock__set_lock = { rlock__lua_lock, rlock__sha_lock RLOCK__PRIM_PARTS(rlock__lock_store, 0, 0, 0, 0, rlock__woken, 0, 0, 0) };
#ifndef RLOCK_NO_FAIR
static const struct rlock__scripts rlock__set_fair = { rlock__lua_fair, rlock__sha_fair RLOCK__PRIM_PARTS(rlock__lock_store, 0, 0, 0, 0, rlock__woken, 0, 0, 0) };
#endif
#ifndef RLOCK_NO_PRIMITIVES
static const struct rlock__scripts rlock__set_all = { rlock__lua, rlock__lua_sha
                                                      RLOCK__PRIM_PARTS(rlock__all_store, rlock__admin_round_done,
                                                                        rlock__enc_prim, rlock__multi_aux,
                                                                        rlock__enc_sem_args, rlock__handed_slot,
                                                                        rlock__sem_hop, rlock__sem_handed,
                                                                        rlock__sem_woken) };
#endif

/* All scripts (rlock_script_text / _sha): a program that calls these links them all. */
RLOCKDEF const char *rlock_script_text(int id) {
    return id >= 0 && id < RLOCK_SCRIPT_COUNT && rlock__lua[id][0] ? rlock__lua[id] : NULL;
}
RLOCKDEF const char *rlock_script_sha(int id) {
    return id >= 0 && id < RLOCK_SCRIPT_COUNT && rlock__lua_sha[id][0] ? rlock__lua_sha[id] : NULL;
}

/* ---- 6.4b Redis 7 functions (servers that refuse EVAL) ------------------- */
/* Names carry the build's version (every script's SHA1 folded), so one
 * version's libraries are all its own: a new version loads new libraries
 * beside the old ones (never over them while old clients run), and the old
 * ones can be deleted by version once no client of it is connected. The
 * version is the top 48 bits, in hex, of FNV-1a 64 over the build's
 * rlock__lua_sha in order (a script compiled out: its "" adds nothing), so
 * it depends on which of reentrant, fair and primitives are built: one
 * constant per combination, RLOCK__FN_V_<re><fair><prim>, folded once here
 * rather than by every FCALL user at run time (tests/test_compile.c folds
 * them again from the SHA1s: a script edited without its constant fails). */
#define RLOCK__FN_VER 12 /* hex digits of the version */
#define RLOCK__FN_HEX 8  /* of the script's SHA1 (the version already tells builds apart) */
#define RLOCK__FN_LEN (6 + RLOCK__FN_VER + 1 + RLOCK__FN_HEX)
#define RLOCK__FN_V_111 "00d27b172b0c"
#define RLOCK__FN_V_110 "4bd1ac663416"
#define RLOCK__FN_V_101 "9432a0428395"
#define RLOCK__FN_V_100 "95d598ea1dfc"
#define RLOCK__FN_V_011 "4cc2df68c226"
#define RLOCK__FN_V_010 "e6f276cdf6ff"
#define RLOCK__FN_V_001 "e81ff6498c71"
#define RLOCK__FN_V_000 "c034a346f52d"
#define RLOCK__FN_V(re, fair, prim) RLOCK__FN_V_(re, fair, prim)
#define RLOCK__FN_V_(re, fair, prim) RLOCK__FN_V_##re##fair##prim
#define RLOCK__FN_VERSION RLOCK__FN_V(RLOCK__HAS_REENTRANT, RLOCK__HAS_FAIR, RLOCK__HAS_PRIMITIVES)
RLOCKDEF size_t rlock_function_version(char *out, size_t cap) {
    static const char version[] = RLOCK__FN_VERSION;
    if (!out || cap < sizeof version) return 0;
    memcpy(out, version, sizeof version);
    return RLOCK__FN_VER;
}
/* "rlock_" VERSION "_" + the first RLOCK__FN_HEX digits of sha into out
 * (RLOCK__FN_LEN + 1 bytes). */
static RLOCK__INLINE size_t rlock__function_name(const char *sha, char *out) {
    static const char prefix[] = "rlock_" RLOCK__FN_VERSION "_";
    memcpy(out, prefix, sizeof prefix); /* (its NUL is overwritten next) */
    memcpy(out + 7 + RLOCK__FN_VER, sha, RLOCK__FN_HEX);
    out[RLOCK__FN_LEN] = '\0';
    return RLOCK__FN_LEN;
}
RLOCKDEF size_t rlock_function_name(int id, char *out, size_t cap) {
    if (id < 0 || id >= RLOCK__S_COUNT || !out || cap < RLOCK__FN_LEN + 1 || !rlock__lua_sha[id][0]) return 0;
    return rlock__function_name(rlock__lua_sha[id], out);
}

/* ---- 6.5 Exchange: one connection, requests pipelined, replies in order --
 * It is handed encoded bytes and hands back, one event at a time, the reply
 * to each request (with the owner and tag it was queued with), a failure of
 * each request when the connection fails, or a pushed message. It knows
 * nothing about locks. */
/* NEW: requests queued, connect() not called yet; CONNECTING: it said would-block. */
enum { RLOCK__CONN_DOWN = 0, RLOCK__CONN_NEW, RLOCK__CONN_CONNECTING, RLOCK__CONN_UP };
enum { RLOCK__EV_REPLY = 1, RLOCK__EV_FAIL, RLOCK__EV_PUSH };
#define RLOCK__TAG_AUTH (-1)  /* the exchange's own requests: AUTH, SELECT, HELLO 3 (in that order) */
#define RLOCK__TAG_SELECT (-2)
#define RLOCK__TAG_HELLO (-3)
/* Flags on a tag: the request is answered, when it succeeds, by a push of
 * that kind (RESP3 SSUBSCRIBE / SUNSUBSCRIBE), or by an error reply: the
 * flag of Pub/Sub kind k (RLOCK__PS_SUB 1, _UNSUB 2) is 0x800 << k. */
#define RLOCK__X_BY_SUB_PUSH 0x1000
#define RLOCK__X_BY_UNSUB_PUSH 0x2000
/* ... its reply, when an aggregate, is read through the connection's walk. */
#define RLOCK__X_WALK 0x400
/* ... it is a later part of one attempt (rlock__round_submit): it goes or
 * stays with the parts before it (rlock__x_timed_out). */
#define RLOCK__X_JOINED 0x100
/* (the exchange's: it failed without any of its bytes sent - it never ran) */
#define RLOCK__X_UNSENT 0x200
/* ... it is never taken back unsent, past its time (an acquire's cleanup:
 * rlock__round_submit); the requests in front of it still are. (Not 0x4000
 * nor 0x800: 0x800 << kind is what a push of kind 0 or 3 would answer -
 * a "message" push was taken for a cleanup's reply.) */
#define RLOCK__X_KEEP 0x40
/* ... its op ended (rlock__x_disown): not yet gone out, it is taken back
 * as one past its time is (rlock__x_timed_out), reported to nobody. */
#define RLOCK__X_GONE 0x80
/* The layer above's tag without the flags (an own tag, < 0, is reported to nobody). */
#define RLOCK__X_TAG(t) ((t) & 0x3F)
/* Whether tag t (the layer above's: > 0; the exchange's own are < 0) has flag f. */
#define RLOCK__X_HAS(t, f) ((t) > 0 && ((t) & (f)) != 0)
/* An error in AUTH's place: AUTH's refusal (RLOCK_E_AUTH, never retried),
 * but for "ERR max number of clients reached", which Redis sends a
 * connection it has no room for before it reads a command - the node's
 * passing failure (RLOCK_E_REDIS, retried), as it is without a password. */
#define rlock__auth_error(s, n) ((n) > 4 && (s)[4] == 'm' ? RLOCK_E_REDIS : RLOCK_E_AUTH) /* ("ERR m": no refusal of AUTH's) */

#if !RLOCK__COMPACT /* the exchange's FIFO and reader (the compact engine's: 6.8c) */
#ifndef RLOCK_NO_CLUSTER
/* Hand every complete value in buf[0..len) to w->visit (see rlock__walk).
 * Returns the bytes consumed (the rest is an incomplete value: feed it again
 * with more), -1 when malformed, too deep, or one value cannot fit in
 * max_len. w->done once the outermost value is complete. */
static long rlock__walk_feed(rlock__walk *w, const unsigned char *buf, size_t len, size_t max_len) {
    size_t pos = 0;
    while (!w->done && pos < len) {
        rlock_resp_value v, end;
        size_t used = 0;
        long n = rlock__resp_one(buf + pos, len - pos, &used, max_len, &v);
        if (n == RLOCK__R_MORE) break;
        if (n == RLOCK__R_BAD || v.type == RLOCK_RESP_NONE) return -1; /* attributes: never in the replies walked */
        if (n >= 0 && w->depth >= RLOCK_RESP_MAX_DEPTH) return -1;
        pos += used;
        w->started = 1;
        w->visit(w->user, w, &v);
        if (n > 0) {
            w->left[w->depth] = n;
            w->pos[w->depth] = 0;
            w->depth++;
            continue;
        }
        for (;;) { /* a value is complete: close the aggregates it completes */
            if (w->depth == 0) { w->done = 1; break; }
            w->pos[w->depth - 1]++;
            if (--w->left[w->depth - 1] > 0) break;
            w->depth--;
            memset(&end, 0, sizeof end);
            w->visit(w->user, w, &end);
        }
    }
    return (long)pos;
}
#endif /* RLOCK_NO_CLUSTER */

typedef struct rlock__event {
    int kind;            /* RLOCK__EV_* */
    void *owner;         /* REPLY / FAIL: the request's owner (NULL: nobody) */
    int tag;
    rlock_status st;     /* FAIL: why */
    const char *why;     /* FAIL: text */
    int ps;              /* REPLY / PUSH: what Pub/Sub event it is (rlock__pubsub); FAIL:
                            RLOCK__X_UNSENT when it never went out */
    rlock_reply reply;   /* REPLY / PUSH: points into rx until the next rlock__x_next */
} rlock__event;

/* What a Pub/Sub event [kind, channel, x] (RESP3 push or RESP2 array) is:
 * RLOCK__PS_SUB, _UNSUB or _MSG (whose payload is a bulk string too), plus
 * RLOCK__PS_SHARD for the sharded forms ("ssubscribe", ...); 0: none.
 * Classified once, when read; the layers above test the number. */
enum { RLOCK__PS_SUB = 1, RLOCK__PS_UNSUB, RLOCK__PS_MSG, RLOCK__PS_KIND = 3, RLOCK__PS_SHARD = 4 };
static RLOCK__NOINLINE int rlock__pubsub(const rlock_reply *r) { /* (inline: 12 B more) */
    /* the six kinds' names differ in length (7..12): the length picks the one to compare */
    static const char kinds[6][13] = { "message", "smessage", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe" };
    static const unsigned char ps[6] = { RLOCK__PS_MSG, RLOCK__PS_MSG | RLOCK__PS_SHARD, RLOCK__PS_SUB,
                                         RLOCK__PS_SUB | RLOCK__PS_SHARD, RLOCK__PS_UNSUB,
                                         RLOCK__PS_UNSUB | RLOCK__PS_SHARD };
    const rlock_resp_value *k = &r->elem[0];
    size_t i = k->len - 7; /* (shorter: wraps, > 5) */
    if ((r->v.type != RLOCK_RESP_ARRAY && r->v.type != RLOCK_RESP_PUSH) || r->count != 3 ||
        k->type != RLOCK_RESP_BULK || r->elem[1].type != RLOCK_RESP_BULK || i > 5 ||
        memcmp(k->str, kinds[i], k->len) != 0 || (i < 2 && r->elem[2].type != RLOCK_RESP_BULK)) return 0;
    return ps[i];
}

#endif /* !RLOCK__COMPACT */

static RLOCK__NOINLINE void rlock__copy_text(char *dst, size_t cap, const char *msg, size_t len) {
    if (len >= cap) len = cap - 1;
    memmove(dst, msg, len); /* (dst == msg: a no-op) */
    dst[len] = '\0';
}

#if !RLOCK__COMPACT

/* A connection as the exchange sees it: its state and, through the pointers
 * rlock__x_bind set, transport, credentials, request FIFO and buffers - a
 * node's or a subscriber's. */
typedef rlock__conn rlock__x;

/* Point x (is_sub set) at the rest of its connection, owner, for the
 * client that takes it (rlock_client_init, rlock_client_set_subscribers:
 * none of that client's ops is in flight). A request still queued there is
 * an op's of the client before (cut off by rlock_client_init): nobody's now,
 * as rlock__x_disown makes it - its reply, read later, must reach no
 * handle (it may be freed by then, its end never walking this connection). */
static RLOCK__NOINLINE void rlock__x_bind(rlock__x *x, void *owner) {
    static const size_t lay[2][4] = { /* a node's, a subscriber's FIFO room, tx offset, tx and rx sizes */
        { RLOCK_MAX_PIPELINE, offsetof(rlock_node, tx), RLOCK_TX_BUF, RLOCK_RX_BUF },
        { RLOCK_SUB_PIPELINE, offsetof(rlock_subscriber, tx), RLOCK_SUB_TX_BUF, RLOCK_SUB_RX_BUF } };
    const size_t *l = lay[x->is_sub]; /* (data, not code; is_sub 0 or 1: rlock_subscriber_init's) */
    struct rlock__pending *p;
    x->owner = owner;
    /* (one body: the FIFO follows x, rx follows tx in both - rlock__x_bind_layout) */
    x->q = (struct rlock__pending *)(x + 1);
    x->q_cap = (unsigned)l[0]; x->tx = (unsigned char *)owner + l[1]; x->tx_cap = l[2]; x->rx_cap = l[3];
    x->rx = x->tx + x->tx_cap;
    for (p = x->q + x->count; p-- != x->q;) p->owner = NULL;
}
typedef char rlock__x_bind_layout[offsetof(rlock_node, q) == offsetof(rlock_node, x) + sizeof(rlock__conn) &&
                                  offsetof(rlock_subscriber, q) == offsetof(rlock_subscriber, x) + sizeof(rlock__conn) &&
                                  offsetof(rlock_node, rx) == offsetof(rlock_node, tx) + RLOCK_TX_BUF &&
                                  offsetof(rlock_subscriber, rx) == offsetof(rlock_subscriber, tx) + RLOCK_SUB_TX_BUF
                              ? 1 : -1];
/* Its transport: its owner's first member (a node's, a subscriber's). */
#define rlock__x_t(n) ((const rlock_transport *)(n)->owner)
static rlock__x *rlock__x_node(const rlock_node *n) {
    return (rlock__x *)&n->x; /* views of a const node only read */
}

/* The FIFO is q[0..count), the oldest first: a pop moves the rest up
 * (rlock__x_pop: a memmove of the few in flight), so no index wraps and
 * there is no head to keep. */
#define rlock__x_at(n, i) (&(n)->q[i])

/* A request's length is kept in 16 bits (rlock__pending.len). */
typedef char rlock__tx_len_fits[RLOCK_TX_BUF < 0xFFFF && RLOCK_SUB_TX_BUF < 0xFFFF ? 1 : -1];

/* Drop the connection: after a timeout or a protocol error the byte stream
 * can no longer be trusted (a late reply would answer the wrong request).
 * Every request in flight fails with st; rlock__x_next reports each (those
 * that never went out as such: they never ran, rlock__op_reply). why is
 * NUL-terminated (a reply's text is copied to xerr first: 6 B less). */
static void rlock__x_drop(rlock__x *n, rlock_status st, const char *why) {
    size_t end = n->tx_len;
    rlock__pending *p = n->q + n->count;
    /* (tx holds only unsent bytes, requests appended in order: those whose
     * bytes are all there, walked from the newest, never went out) */
    while (p-- > n->q + n->failing && p->tag > 0 && p->len <= end) {
        end -= p->len;
        p->tag = (short)(p->tag | RLOCK__X_UNSENT);
    }
    rlock__copy_text(n->xerr, sizeof n->xerr, why, strlen(why)); /* before close(): why may be the transport's */
    if (n->conn != RLOCK__CONN_DOWN) {
        const rlock_transport *t = rlock__x_t(n);
        if (t->close) t->close(t->ctx);
    }
    n->conn = RLOCK__CONN_DOWN;
    n->proto = 0; /* (not 3: RESP2, as rlock_node_init leaves it) */
    n->rx_len = n->rx_used = 0;
    n->tx_len = 0;
    n->failing = n->count;
    n->fail_st = st;
#ifndef RLOCK_NO_CLUSTER
    n->walk = NULL;
#endif
}
/* Why a transport call failed: its own text when it has one, else ours. */
static const char *rlock__x_why(rlock__x *n, const char *fallback) {
    const rlock_transport *tr = rlock__x_t(n);
    const char *t = tr->error ? tr->error(tr->ctx) : NULL;
    return t && t[0] ? t : fallback;
}
static RLOCK__INLINE void rlock__x_io_fail(rlock__x *n, const char *fallback) {
    rlock__x_drop(n, RLOCK_E_IO, rlock__x_why(n, fallback));
}

/* Nobody waits for owner's replies any more: they are read and discarded,
 * and what of them has not begun to go out never does (RLOCK__X_GONE). */
static RLOCK__INLINE int rlock__x_disown(rlock__x *n, const void *owner) {
    rlock__pending *p;
    int had = 0;
    for (p = n->q + n->count; p-- != n->q;) /* (from the newest: no index to scale, 8 B less) */
        if (p->owner == owner) { p->owner = NULL; p->tag = (short)(p->tag | RLOCK__X_GONE); had = 1; }
    return had;
}

/* The request of len bytes encoded at rlock__x_begin's *out is queued (also the
 * exchange's own, at connect). */
static RLOCK__NOINLINE void rlock__x_commit(rlock__x *n, size_t len, void *owner, int tag, rlock__ms deadline) {
    rlock__pending *p = rlock__x_at(n, n->count++);
    n->tx_len += len;
    p->owner = owner;
    p->tag = (short)tag;
    p->len = (unsigned short)len;
    p->deadline = deadline;
    n->commands++;
}

/* Get room for one request: tx from tx_len (tx_cap - tx_len bytes), where
 * the caller encodes it before rlock__x_commit. A connection that is down
 * is (re)connected, with AUTH queued first. RLOCK_OK; RLOCK_WOULD_BLOCK
 * when the pipeline or the send buffer is full now (try again after the
 * next step); RLOCK_E_IO when it cannot connect (no connect hook, in use
 * by someone else); RLOCK_E_BADARG when AUTH does not fit. *why: the text
 * of an error (left alone otherwise).
 * An idle connection is probed through recv() first: one that has nothing
 * to say but reads as closed (CLIENT KILL, idle timeout, restart) or holds
 * stray bytes is dropped and made again, rather than failing this request. */
static rlock_status rlock__x_begin(rlock__x *n, rlock__ms deadline, const char **why) {
    int reselect = 0; /* a shared connection's db, SELECTed again (below) */
    int db = n->is_sub ? 0 : ((const rlock_node *)n->owner)->db; /* (a subscriber's channels span dbs) */
    if (n->failing) return RLOCK_WOULD_BLOCK; /* report the failed ones first */
    /* Up and idle (not active: answering one of its replies, EVAL after
     * NOSCRIPT, it is alive; the words or-ed: one test, 12 B less) */
    if (n->conn == RLOCK__CONN_UP && ((unsigned)n->active | n->count | n->tx_len | (unsigned)n->listen) == 0) {
        const rlock_transport *t = rlock__x_t(n);
        const char *bad = "idle connection closed";
        long r;
        if (t->idle) {
            r = t->idle(t->ctx);
            if (r == RLOCK_IO_BUSY) {
                *why = rlock__x_why(n, "the connection is in use by someone else");
                return RLOCK_E_IO;
            }
            if (r > 0) { /* (healthy) */
                r = RLOCK_IO_WOULD_BLOCK;
                reselect = db > 0 && n->selected != n->commands;
            }
        } else if (n->rx_len > n->rx_used) {
            /* Bytes read and not yet an event: the start of a push (RESP3),
             * its rest to come - the connection is alive; kept, not probed
             * over (its rest read as the next request's reply: fuzz_locks
             * found an error reply so). Else they are stray. */
            r = n->proto == 3 && n->rx[n->rx_used] == '>' ? RLOCK_IO_WOULD_BLOCK : 1;
        } else {
            r = t->recv(t->ctx, n->rx, n->rx_cap);
            n->rx_len = n->rx_used = 0;
            if (r > 0 && (size_t)r <= n->rx_cap && n->proto == 3 && n->rx[0] == '>') {
                n->rx_len = (size_t)r; /* pushes */
                r = RLOCK_IO_WOULD_BLOCK;
            }
        }
        if (r > 0) bad = "stray bytes on an idle connection"; /* (idle()'s healthy 1 is WOULD_BLOCK by now) */
        if (r != RLOCK_IO_WOULD_BLOCK) rlock__x_drop(n, RLOCK_E_IO, bad);
    }
    if (n->count + 2 > n->q_cap) return RLOCK_WOULD_BLOCK;
    if (n->conn == RLOCK__CONN_DOWN || reselect) {
        int down = n->conn == RLOCK__CONN_DOWN;
        /* read now: the caller may set them any time before (a node's and a
         * subscriber's, at one offset in both: rlock__magic_at; 8 B less than
         * a branch each) */
#define RLOCK__X_CRED(n, f) (*(const char *const *)(const void *)((const char *)(n)->owner + offsetof(rlock_node, f)))
        const char *user = RLOCK__X_CRED(n, username), *pass = RLOCK__X_CRED(n, password);
        /* Without a connect hook, one made once (gen) and down is closed:
         * every drop of a connection not down closes it, and only a connect
         * hook's BUSY or an AUTH that does not fit (gen not counted) leave
         * one down unclosed. */
        if (down && !rlock__x_t(n)->connect && n->gen) {
            *why = "not connected (no connect hook)";
            return RLOCK_E_IO;
        }
        /* (down, its buffers are empty and proto is not 3: rlock__x_drop, init;
         * re-SELECTed, it was idle: empty too) */
        /* Down: AUTH [user] password, then SELECT db, then HELLO 3; the
         * requests behind them are queued at once but sent only once AUTH
         * and SELECT are answered (rlock__x_sendable). AUTH works on every
         * server, and a server that refuses HELLO (Redis < 6) stays on RESP2
         * with the requests behind it unharmed - which folding AUTH into
         * HELLO would not give. A refused AUTH or SELECT (out of range,
         * Cluster): the connection is not used, the requests queued behind
         * fail with it.
         * Up, a connection shared with the program (a transport with an idle
         * hook: hiredis) may have been SELECTed to another db by it since:
         * the request would run there - a release in the wrong db reports
         * LOST and leaves the lock held. SELECT alone is sent again, its
         * reply waited for in the same way. */
        {
            static const char *const cmd[3] = { "AUTH", "SELECT", "HELLO" };
            char num[24];
            const char *val[3], *arg[3]; /* each command's last argument (NULL: not sent); the one going out */
            int k, i, ok;
            val[0] = down ? pass : NULL;
            val[1] = db > 0 && rlock__utoa(num, (rlock__unum)db) ? num : NULL; /* (written only then: 16 B less) */
            /* (not on a connection shared with the program, a transport
             * with an idle hook: HELLO 3 would switch the program's own
             * replies to RESP3 - a RESP2 client such as hiredis 0.14 then
             * fails on its next reply; its waits use subscribers or back off.
             * A re-SELECTed connection has an idle hook: no HELLO there.) */
            val[2] = RLOCK__HAS_WAITING && n->hello && !rlock__x_t(n)->idle ? "3" : NULL;
            for (k = 0; k < 3; k++) {
                size_t pos = n->tx_len;
                if (!val[k]) continue;
                arg[0] = cmd[k];
                arg[1] = k == 0 ? user : NULL; /* AUTH [user] password */
                arg[2] = val[k];
                ok = rlock__put_header(n->tx, n->tx_cap, &pos, arg[1] ? 3 : 2);
                for (i = 0; ok && i < 3; i++)
                    if (arg[i]) ok = rlock__put_arg(n->tx, n->tx_cap, &pos, arg[i], strlen(arg[i]));
                if (!ok) { /* AUTH is long (SELECT, HELLO are not): nothing of it is queued (still down) */
                    n->count = 0; /* (nothing was in flight: a down connection's failed ones were reported) */
                    n->tx_len = 0;
                    *why = "AUTH does not fit in RLOCK_TX_BUF";
                    return RLOCK_E_BADARG;
                }
                rlock__x_commit(n, pos - n->tx_len, NULL, -1 - k, deadline); /* RLOCK__TAG_AUTH, _SELECT, _HELLO */
            }
        }
        n->held = n->tx_len; /* (the handshake's bytes: tx was empty) */
        n->selected = n->commands; /* (re-SELECTed: a request that does not fit behind it waits, not sent again) */
        if (down) {
            n->conn = RLOCK__CONN_NEW;
            n->gen++;
        }
    }
    /* A half-full buffer of others' requests may not leave room for a big
     * one; an empty buffer must (RLOCK_TX_BUF is checked at compile time). */
    return RLOCK_OK;
}

/* Take back the requests committed since n had count requests and tx_len
 * bytes (a caller whose next part did not fit: all or nothing). */
static void rlock__x_uncommit(rlock__x *n, unsigned count, size_t tx_len) {
    n->commands -= n->count - count;
    n->count = count;
    n->tx_len = tx_len;
}

#ifndef RLOCK_NO_CLUSTER
static int rlock__x_walk_read(rlock__x *n, rlock__event *ev);
/* ... a request whose reply (it may be larger than rx) is read through walk. */
static void rlock__x_commit_walk(rlock__x *n, size_t len, void *owner, int tag, rlock__ms deadline,
                                 rlock__walk *walk) {
    walk->depth = walk->started = walk->done = 0;
    walk->read = rlock__x_walk_read;
    n->walk = walk;
    rlock__x_commit(n, len, owner, tag | RLOCK__X_WALK, deadline);
}
#endif

/* The earliest (seen from now) of d and the deadlines of n's requests that
 * did not fail: none on a down connection (whose requests are all failed
 * ones, to be reported: rlock__x_drop); all on one not down (failing is 0).
 * Not inlined: its two callers (rlock__x_timed_out, rlock__client_next: any
 * program that waits has both) would each get a copy of the loop. */
static RLOCK__NOINLINE rlock__ms rlock__x_deadline(rlock__x *n, rlock__ms now, rlock__ms d) {
    unsigned i;
    for (i = n->failing; i < n->count; i++)
        if (RLOCK__MS_SOONER(now, rlock__x_at(n, i)->deadline, d)) d = rlock__x_at(n, i)->deadline;
    return d;
}

/* RLOCK_WANT_* the connection needs now. */
/* The bytes of tx that may be sent now: all of them, but while AUTH or
 * SELECT is unanswered only theirs (and HELLO's). A request pipelined behind
 * them would run even when they are refused - in db 0, or as the default
 * user - and leave a lock held that nobody knows of; it waits for their
 * replies (one round trip more, on a new connection only). */
static RLOCK__NOINLINE size_t rlock__x_sendable(const rlock__x *n) { /* (inline in both callers: 20 B more) */
    return n->count && (n->q[0].tag == RLOCK__TAG_AUTH || n->q[0].tag == RLOCK__TAG_SELECT) ? n->held : n->tx_len;
}

static int rlock__x_wants(rlock__x *n) {
    if (n->conn == RLOCK__CONN_DOWN) return 0; /* (and while failed ones are to be reported: it is down) */
    if (n->conn != RLOCK__CONN_UP) return RLOCK_WANT_WRITE; /* NEW, CONNECTING */
    return (rlock__x_sendable(n) ? RLOCK_WANT_WRITE : 0) | (n->count || n->listen ? RLOCK_WANT_READ : 0);
}

/* A request past its deadline (none: 0). The newest that never went out -
 * all its bytes still in tx (walked as rlock__x_drop does), and not an
 * acquire's cleanup (RLOCK__X_KEEP) - fails alone, unsent (RLOCK_E_IO
 * "timeout"), unless its attempt's first part went out
 * (RLOCK__X_JOINED: the rest goes with it): its bytes are taken out of tx,
 * it moves to the front of the FIFO to be reported (failing: 0 before,
 * rlock__x_next reported those), the connection and the rest stay (1).
 * Else, when `all` (nothing left to read: a reply that arrived while this
 * process was stalled is still its own) or connecting, the connection is
 * dropped (1; a late reply would answer the wrong request). */
static RLOCK__NOINLINE int rlock__x_timed_out(rlock__x *n, rlock__ms now, int all) {
    size_t end = n->tx_len, at = 0;
    rlock__pending *p = n->q + n->count, *c = NULL;
    int joined = 0;
    if (n->conn == RLOCK__CONN_UP) {
        while (p-- > n->q && p->tag > 0 && p->len <= end) {
            end -= p->len;
            if (joined) joined = p->tag & RLOCK__X_JOINED; /* (c's earlier parts: never went out either) */
            if (!c && (!RLOCK__MS_BEFORE(now, p->deadline) || (p->tag & RLOCK__X_GONE)) && !(p->tag & RLOCK__X_KEEP)) {
                c = p;
                at = end;
                joined = p->tag & RLOCK__X_JOINED;
            }
        }
    } else all = 1;
    if (c && !joined) {
        void *owner = c->owner;
        int tag = c->tag | RLOCK__X_UNSENT;
        n->tx_len -= c->len;
        memmove(n->tx + at, n->tx + at + c->len, n->tx_len - at);
        memmove(n->q + 1, n->q, (size_t)(c - n->q) * sizeof *c);
        n->q[0].owner = owner; /* (its deadline and length are not read again) */
        n->q[0].tag = (short)tag;
        n->failing = 1;
        n->fail_st = RLOCK_E_IO;
        rlock__copy_text(n->xerr, sizeof n->xerr, "timeout", 7);
        return 1;
    }
    /* (none in flight: the deadline is now + FAR, ahead) */
    if (!all || RLOCK__MS_BEFORE(now, rlock__x_deadline(n, now, now + RLOCK__MS_FAR))) return 0;
    rlock__x_drop(n, RLOCK_E_IO, "timeout");
    return 1;
}

/* Take the oldest request off the FIFO; *ev says whose it was (kind, owner,
 * tag; st and why are a failure's: rlock__x_pop_failed). 0 when it was the
 * exchange's own (AUTH, SELECT, HELLO: tags < 0), reported to nobody. */
static int rlock__x_pop(rlock__x *n, rlock__event *ev, int kind) {
    int tag = n->q[0].tag; /* the oldest */
    ev->kind = kind;
    ev->owner = n->q[0].owner;
    ev->tag = RLOCK__X_TAG(tag);
    memmove(n->q, n->q + 1, --n->count * sizeof n->q[0]);
    return tag > 0;
}

/* The next failed request to report (the exchange's own are skipped). (Always
 * inline in rlock__x_next, itself gcc's to inline: 12 B less than gcc's choice.) */
static RLOCK__INLINE int rlock__x_pop_failed(rlock__x *n, rlock__event *ev) {
    while (n->failing) {
        n->failing--;
        ev->ps = n->q[0].tag & RLOCK__X_UNSENT; /* (a failure's: it never went out) */
        if (!rlock__x_pop(n, ev, RLOCK__EV_FAIL)) continue;
        ev->st = (rlock_status)n->fail_st;
        ev->why = n->xerr;
        return 1;
    }
    return 0;
}

/* Connect (n is NEW or CONNECTING). 1 up; 0 in progress; -1 failed. */
static int rlock__x_connect_step(rlock__x *n) {
    const rlock_transport *t = rlock__x_t(n);
    int r = t->connect ? t->connect(t->ctx) : 1;
    if (r == RLOCK_IO_WOULD_BLOCK) { n->conn = RLOCK__CONN_CONNECTING; return 0; }
    if (r < 0) {
        /* in use by someone else: send nothing, close nothing (down, the drop does not close()) */
        if (r == RLOCK_IO_BUSY) n->conn = RLOCK__CONN_DOWN;
        rlock__x_io_fail(n, r == RLOCK_IO_BUSY ? "the connection is in use by someone else" : "connect failed");
        return -1;
    }
    n->conn = RLOCK__CONN_UP;
    return 1;
}

/* What send() (rd 0) or recv() (rd 1) returned, r, when it was asked for
 * room bytes: r (0: would block) when it is a count within room; else the
 * connection is dropped and -1 (one failure handling for both; the bytes a
 * failed send was handed may have gone out: not taken for unsent). */
static long rlock__x_moved(rlock__x *n, long r, size_t room, int rd) {
    if (!rd && (r < 0 || (size_t)r > room)) n->tx_len -= room;
    if (r < 0) {
        rlock__x_io_fail(n, !rd ? "send failed" : r == RLOCK_IO_CLOSED ? "connection closed by server" : "recv failed");
        return -1;
    }
    if ((size_t)r > room) {
        rlock__x_drop(n, RLOCK_E_IO, rd ? "transport returned more than asked" : "transport sent more than asked");
        return -1;
    }
    return r;
}

/* Send what tx holds, as far as the transport takes it. 0 ok; -1 failed.
 * What is left unsent moves to the front: tx holds only unsent bytes,
 * and requests are appended to them. */
static int rlock__x_send_step(rlock__x *n) {
    const rlock_transport *t = rlock__x_t(n);
    size_t len;
    while ((len = rlock__x_sendable(n)) > 0) {
        long r = rlock__x_moved(n, t->send(t->ctx, n->tx, len), len, 0);
        if (r <= 0) return (int)r; /* (0: would block) */
        n->tx_len -= (size_t)r;
        n->held -= (size_t)r < n->held ? (size_t)r : n->held;
        memmove(n->tx, n->tx + r, n->tx_len);
    }
    return 0;
}

#ifndef RLOCK_NO_CLUSTER
/* The reply to the oldest request, queued with a walk (rlock__x_commit_walk),
 * read as it comes; an error or a push is read whole (2: the parse step
 * does). Else as rlock__x_parse_step. */
static int rlock__x_walk_read(rlock__x *n, rlock__event *ev) {
    rlock__walk *w = n->walk;
    long used;
    if (!n->count || !RLOCK__X_HAS(n->q[0].tag, RLOCK__X_WALK)) return 2; /* not its turn (up: none failed) */
    if (!w->started && n->rx[0] != '*' && n->rx[0] != '%' && n->rx[0] != '~') return 2;
    used = rlock__walk_feed(w, n->rx, n->rx_len, n->rx_cap);
    if (used < 0) { rlock__x_drop(n, RLOCK_E_PROTOCOL, "malformed or oversized reply"); return -1; }
    memmove(n->rx, n->rx + used, n->rx_len - (size_t)used);
    n->rx_len -= (size_t)used;
    if (!w->done) return 0;
    n->walk = NULL;
    memset(&ev->reply, 0, sizeof ev->reply);
    ev->reply.v.type = RLOCK_RESP_ARRAY; /* its values went to the walk */
    ev->ps = 0;
    return rlock__x_pop(n, ev, RLOCK__EV_REPLY);
}
#endif

/* One complete reply from rx, matched to the oldest request (or a push).
 * 1: *ev filled; 0: no complete reply yet; -1: dropped, or an answer to the
 * exchange's own AUTH / HELLO was consumed (look again). (Always inline in
 * rlock__x_next, its one caller: 4 B less than gcc -Os's own inlining.) */
static RLOCK__INLINE int rlock__x_parse_step(rlock__x *n, rlock__event *ev) {
    rlock__pending *p;
    long used;
    /* the bytes of the event returned last (or of an own request's answer);
     * none (0): a move in place, no test of its own (4 B) */
    memmove(n->rx, n->rx + n->rx_used, n->rx_len - n->rx_used);
    n->rx_len -= n->rx_used;
    n->rx_used = 0;
#ifndef RLOCK_NO_CLUSTER
    if (n->walk) {
        int r = n->walk->read(n, ev);
        if (r < 2) return r;
    }
#endif
    used = rlock__resp_parse(n->rx, n->rx_len, n->rx_cap, &ev->reply);
    if (used == 0) return 0; /* (incomplete, or rx empty: no line yet - no test of its own, 4 B) */
    if (used < 0) { rlock__x_drop(n, RLOCK_E_PROTOCOL, "malformed or oversized reply"); return -1; }
    n->rx_used = (size_t)used;
    p = n->q; /* the oldest request, when count > 0 */
    ev->ps = RLOCK__HAS_WAITING ? rlock__pubsub(&ev->reply) : 0;
    if (RLOCK__HAS_WAITING && /* pushes and messages come only to a waiter's connection */
        (ev->reply.v.type == RLOCK_RESP_PUSH || (n->is_sub && (ev->ps & RLOCK__PS_KIND) == RLOCK__PS_MSG))) {
        /* the push that answers the oldest request ("ssubscribe" to SSUBSCRIBE) is its reply */
        int kind = ev->ps & RLOCK__PS_KIND;
        if (n->count && RLOCK__X_HAS(p->tag, 0x800 << kind)) /* RLOCK__X_BY_SUB_PUSH, _UNSUB_PUSH; 0x800, 0x4000: no flag */
            return rlock__x_pop(n, ev, RLOCK__EV_REPLY);
        /* (every SUBSCRIBE has its FIFO entry: one out of turn is out of step; one drop for both: 4 B less) */
        if (kind == RLOCK__PS_SUB) goto nobody;
        ev->kind = RLOCK__EV_PUSH;
        return 1;
    }
    if (!n->count) {
    nobody:
        rlock__x_drop(n, RLOCK_E_PROTOCOL, "a reply nobody asked for");
        return -1;
    }
    if (p->tag < 0) { /* the exchange's own: AUTH, SELECT, HELLO 3 */
        if (p->tag == RLOCK__TAG_HELLO) {
            /* Redis answers HELLO 3 with a map (RESP3 from now on); an error
             * (unknown command, NOPROTO) leaves RESP2 (a new connection's). */
            if (ev->reply.v.type == RLOCK_RESP_MAP) n->proto = 3;
        } else if (ev->reply.v.type == RLOCK_RESP_ERROR) { /* SELECT: "ERR DB index is out of range" */
            /* (its text, not NUL-terminated in rx, into xerr first: rlock__x_drop) */
            rlock__copy_text(n->xerr, sizeof n->xerr, ev->reply.v.str, ev->reply.v.len);
            rlock__x_drop(n, p->tag == RLOCK__TAG_AUTH ? rlock__auth_error(ev->reply.v.str, ev->reply.v.len) : RLOCK_E_REDIS,
                          n->xerr);
            return -1;
        } else if (ev->reply.v.type != RLOCK_RESP_STATUS || ev->reply.v.len != 2) {
            /* (+OK: a nil, another status - +PONG, out of step: not OK's length, 8 B - is no AUTH) */
            rlock__x_drop(n, RLOCK_E_PROTOCOL, "unexpected reply to AUTH or SELECT");
            return -1;
        }
        (void)rlock__x_pop(n, ev, RLOCK__EV_REPLY);
        return -1;
    }
    if (n->count == 1 && (size_t)used < n->rx_len && !n->is_sub && n->rx[used] != '>') {
        /* More bytes than the replies we asked for: the stream is out of
         * step, this reply cannot be trusted either. */
        rlock__x_drop(n, RLOCK_E_PROTOCOL, "unexpected extra bytes after the reply");
        return -1;
    }
    return rlock__x_pop(n, ev, RLOCK__EV_REPLY);
}

/* Read what the transport has. 1 read some; 0 nothing now; -1 failed (or
 * look again). */
static int rlock__x_recv_step(rlock__x *n, rlock__ms now) {
    const rlock_transport *t = rlock__x_t(n);
    size_t room = n->rx_cap - n->rx_len;
    long r = rlock__x_moved(n, t->recv(t->ctx, n->rx + n->rx_len, room), room, 1);
    if (r < 0) return -1;
    if (r == RLOCK_IO_WOULD_BLOCK) {
        /* Times out only when nothing is left to read: a reply that arrived
         * while this process was stalled is still its own. */
        return rlock__x_timed_out(n, now, 1) ? -1 : 0;
    }
    n->rx_len += (size_t)r;
    return 1;
}

/* The next event of n, moving bytes as far as the transport allows without
 * blocking. 1: *ev filled; 0: nothing more now. (Left to gcc -Os, which
 * inlines it in its one caller, rlock__client_pump: since the walk over
 * conns, 12 B less than always inline.) */
static int rlock__x_next(rlock__x *n, rlock__ms now, rlock__event *ev) {
    for (;;) {
        int r;
        if (rlock__x_pop_failed(n, ev)) return 1;
        if (n->conn == RLOCK__CONN_DOWN) return 0;
        /* Connecting or sending past a request's deadline: it failed (the
         * clock is read once: what holds before connect holds for send) -
         * one that went out only when nothing is left to read (recv_step).
         * (Up with nothing unsent, none is found: no test of its own, 8 B.) */
        if (rlock__x_timed_out(n, now, 0)) continue;
        if (n->conn != RLOCK__CONN_UP) {
            r = rlock__x_connect_step(n);
            if (r < 0) continue;
            if (r == 0) return 0;
        }
        if (rlock__x_send_step(n) < 0) continue;
        r = rlock__x_parse_step(n, ev);
        if (r > 0) return 1;
        if (r < 0) continue;
        if (n->count == 0 && !n->listen) return 0;
        r = rlock__x_recv_step(n, now);
        if (r == 0) return 0;
    }
}
#endif /* !RLOCK__COMPACT */

/* Map a Redis error reply to a status. Checked as substrings too because
 * Redis 6 wraps errors raised inside scripts in "ERR Error running script".
 * An answer also asks whether the error starts with READONLY (connect
 * again), NOSCRIPT (load the script) or NOPERM (a script refused:
 * rlock_node.scripted), or says "script:" or (FCALL) "Function not found"
 * or "'eval" anywhere - flag words in the same scan, which note them above the
 * status's 5 bits (their byte's, shifted by 8) and never decide it; NOPERM's
 * is its status word's bit 7 (octal 200), kept when found at the start (the
 * word's whole byte is returned then). One scan for every question (the
 * general engine asked them one at a time: 5 more calls, 2 more helpers). */
#define RLOCK__C_W_READONLY 0x100
#define RLOCK__C_W_NOSCRIPT 0x200
#define RLOCK__C_W_NOPERM 0x80
#define RLOCK__C_W_NOFUNC 0x400 /* "Function not found": FCALL of a library the server does not have */
#define RLOCK__C_W_SCRIPT 0x800 /* "script:": raised by a command inside a script that ran */
#define RLOCK__C_W_EVAL 0x1000 /* "'eval": 'eval' or 'evalsha' (the only eval* sent) named by NOPERM */
static int rlock__error_scan(const char *s, size_t n);
#define rlock__map_error(s, n) ((rlock_status)(rlock__error_scan((s), (n)) & 31))
static int rlock__error_scan(const char *s, size_t n) {
    /* (its words: rlock__words) */
    const char *w; /* a word's length; w[1] its status byte, w + 2 its text */
    size_t len, i;
    int seen = 0; /* the flag words found */
    for (w = rlock__words + RLOCK__WORDS_AT; (len = (unsigned char)*w) != 0; w += len + 2) {
        for (i = 0; i + len <= n && !(i && (w[1] & 32)); i++) { /* (at the start only: i 0 only) */
            if (memcmp(s + i, w + 2, len) == 0) {
                int b = (unsigned char)w[1];
                if (!(b & 64)) return seen | (i ? b & 31 : b); /* (at the start: NOPERM's bit 7 too) */
                seen |= b << 8; /* (a flag word: then the next word) */
                break;
            }
        }
    }
    return seen | RLOCK_E_REDIS;
}
/* (the status bytes above) */
typedef char rlock__error_words[RLOCK_E_AUTH == 11 && RLOCK_E_WRONGTYPE == 12 && RLOCK_E_MOVED == 18 &&
                                RLOCK_E_UPGRADE == 19 ? 1 : -1];

/* The diagnostics rlock_node_status / rlock_node_error show: set by the
 * round layer for the rounds it reports (never by a cleanup). */
static RLOCK__SHARED void rlock__node_note(rlock_node *n, rlock_status st, const char *msg, size_t len) {
    n->result = st;
    rlock__copy_text(n->err, sizeof n->err, msg, len);
}
static RLOCK__INLINE void rlock__node_notez(rlock_node *n, rlock_status st, const char *msg) {
    rlock__node_note(n, st, msg, strlen(msg));
}
#if !RLOCK__COMPACT
/* ... with no text: two stores (a note of "" is a call, its text's address
 * and length: 20 B more in rlock__round_begin) */
static RLOCK__INLINE void rlock__node_clear(rlock_node *n, rlock_status st) {
    n->result = st;
    n->err[0] = '\0';
}
#endif

/* A node's or a subscriber's common start: obj (size bytes) cleared, its
 * first member, the transport, copied from tr, and its magic set (at one
 * offset in both: the node's db follows its magic). */
typedef char rlock__magic_at[offsetof(rlock_node, magic) == offsetof(rlock_subscriber, magic) &&
                             offsetof(rlock_node, username) == offsetof(rlock_subscriber, username) &&
                             offsetof(rlock_node, password) == offsetof(rlock_subscriber, password) ? 1 : -1];
static RLOCK__FEW rlock_status rlock__conn_init(void *obj, size_t size, const rlock_transport *tr, unsigned magic) {
    if (!obj || !tr || !tr->send || !tr->recv) return RLOCK_E_BADARG;
    memset(obj, 0, size);
    memmove(obj, tr, sizeof *tr); /* (a call: gcc -Os copies a struct inline, 20 bytes of Thumb; memmove is linked anyway) */
    *(unsigned *)(void *)((char *)obj + offsetof(rlock_node, magic)) = magic; /* (a node's and a subscriber's: one offset) */
    return RLOCK_OK;
}

RLOCKDEF rlock_status rlock_node_init(rlock_node *node, const rlock_transport *tr) {
    /* (result: RLOCK_OK, 0, since cleared; its exchange is bound by
     * rlock_client_init: until then only its state is read) */
    return rlock__conn_init(node, sizeof *node, tr, RLOCK__MAGIC_NODE);
}
RLOCKDEF rlock_status rlock_node_status(const rlock_node *node) {
    return node && node->magic == RLOCK__MAGIC_NODE ? node->result : RLOCK_E_BADARG;
}
RLOCKDEF const char *rlock_node_error(const rlock_node *node) {
    return node && node->magic == RLOCK__MAGIC_NODE ? node->err : "";
}
RLOCKDEF unsigned long rlock_node_commands(const rlock_node *node) {
    return node && node->magic == RLOCK__MAGIC_NODE ? node->x.commands : 0;
}
#if !RLOCK__COMPACT /* 6.8c has the compact engine's */
RLOCKDEF int rlock_node_wants(const rlock_node *node) {
    if (!node || node->magic != RLOCK__MAGIC_NODE) return 0;
    return rlock__x_wants(rlock__x_node(node));
}
#endif

RLOCKDEF rlock_status rlock_subscriber_init(rlock_subscriber *sub, const rlock_transport *tr) {
    rlock_status st = rlock__conn_init(sub, sizeof *sub, tr, RLOCK__MAGIC_SUB); /* (RLOCK_OK or RLOCK_E_BADARG) */
    if (st == RLOCK_OK) {
        sub->x.is_sub = 1; /* (bound by rlock_client_set_subscribers: until then only its state is read) */
    }
    return st;
}
RLOCKDEF const char *rlock_subscriber_error(const rlock_subscriber *sub) {
    return sub && sub->magic == RLOCK__MAGIC_SUB ? sub->x.xerr : "";
}
RLOCKDEF unsigned long rlock_subscriber_commands(const rlock_subscriber *sub) {
    return sub && sub->magic == RLOCK__MAGIC_SUB ? sub->x.commands : 0;
}
#if !RLOCK__COMPACT /* 6.8c has the compact engine's */
RLOCKDEF int rlock_subscriber_wants(const rlock_subscriber *sub) {
    if (!sub || sub->magic != RLOCK__MAGIC_SUB) return 0;
    return rlock__x_wants((rlock__x *)&sub->x); /* only reads */
}
#endif

/* ---- 6.6 Client ---------------------------------------------------------- */
/* A client's nodes as bits of an unsigned mask (rounds, tallies, probes). */
typedef char rlock__nodes_fit_mask[RLOCK_MAX_NODES <= 32 ? 1 : -1];
/* The mask of nodes 0..n-1, n 1..RLOCK_MAX_NODES (at 32: 2u << 31 is 0,
 * where 1u << 32 would be undefined; the shorter form below it). */
#if RLOCK_MAX_NODES < 32
#define RLOCK__ALL_NODES(n) ((1u << (n)) - 1u)
#define RLOCK__NODES_FROM(mask, i) ((mask) >> (i)) /* any node i or past it in mask? */
#else
#define RLOCK__ALL_NODES(n) ((2u << ((n) - 1u)) - 1u)
#define RLOCK__NODES_FROM(mask, i) ((i) < 32 && (mask) >> (i))
#endif

static uint64_t rlock__now64(const rlock_client *c) {
#ifdef RLOCK__NEED_NOW_HOOK /* no clock but the hook: rlock_client_init refused a client without it */
    return c->cfg.now_ms(c->cfg.hook_user);
#else
    return c->cfg.now_ms ? c->cfg.now_ms(c->cfg.hook_user) : (uint64_t)RLOCK_NOW_MS();
#endif
}
static RLOCK__INLINE rlock__ms rlock__now(const rlock_client *c) { /* the hook's value cut to 32 bits (rlock__ms) */
    return (rlock__ms)rlock__now64(c);
}
#if !RLOCK__COMPACT /* (the compact engine's: rlock__c_lease) */
/* A grant's validity runs out at end (an rlock__ms a little ahead of now):
 * kept in 64 bits, so that a handle nobody touched for 24.8 days or more
 * (2^31 ms, where 32-bit times would read as ahead again) has none left. An
 * end already past leaves none. */
static void rlock__set_validity(rlock_lock *lk, rlock__ms end) {
    uint64_t now = rlock__now64(lk->client);
    rlock__ms d = end - (rlock__ms)now;
    lk->validity_end = now + (d < 0x80000000u ? d : 0u);
}
#endif
/* (out of line: gcc -Os copied it into both compact callers, 2 B more) */
static RLOCK__NOINLINE int rlock__random(const rlock_client *c, unsigned char *buf, size_t n) {
    return c->cfg.random_bytes ? c->cfg.random_bytes(c->cfg.hook_user, buf, n)
                               : RLOCK_RANDOM_BYTES(buf, n);
}
static void rlock__sleep(const rlock_client *c, uint32_t ms) {
    if (c->cfg.sleep_ms) c->cfg.sleep_ms(c->cfg.hook_user, ms);
    else RLOCK_SLEEP_MS(ms);
}
static void rlock__hex(char *out, const unsigned char *b, size_t n) {
    size_t i;
    for (i = 0; i < 2 * n; i++) { /* (digits computed: no table; the high one first) */
        unsigned d = (unsigned)(b[i / 2] << (i & 1 ? 4 : 0)) >> 4 & 15u;
        out[i] = (char)(d < 10 ? '0' + d : 'a' - 10 + d);
    }
    out[i] = '\0';
}

/* Defaults live here and only here; zero in a config means "default".
 * Waits between attempts are at most 2^30 ms (12.4 days): doubled, they
 * stay a 32-bit interval (rlock__ms), and a backoff doubled past 2^31 would
 * wrap to no wait at all; the node timeout and the renewal interval are
 * intervals: < 2^31 (bounded here, once per client, not at each lease;
 * renew_every_ms 0, ttl / 3, is rlock__renew_interval's). drift is not a
 * time and needs no bound: below 1000 here (rlock_client_init checked it;
 * rlock_config_init's is 0). */
#define RLOCK__CFG_FITS(f) (offsetof(rlock_config, f) < 128 && offsetof(rlock_config, f) % 4 == 0)
typedef char rlock__cfg_fields_fit[RLOCK__CFG_FITS(node_timeout_ms) && RLOCK__CFG_FITS(renew_every_ms) &&
                                   RLOCK__CFG_FITS(backoff_min_ms) && RLOCK__CFG_FITS(backoff_max_ms) &&
                                   RLOCK__CFG_FITS(recheck_ms) && RLOCK__CFG_FITS(drift_permille) ? 1 : -1];
static void rlock__config_defaults(rlock_config *cfg) {
    /* Each field, a uint32_t, by its default << 5 | its offset / 4 (below
     * 32: rlock__cfg_fields_fit): data, not code. The intervals first
     * (bound: < 2^31), then the waits (2^30; drift is below that). */
#define RLOCK__CFG_FIELD(f, dflt) (unsigned short)((dflt) << 5 | offsetof(rlock_config, f) / 4)
    static const unsigned short fields[] = {
        RLOCK__CFG_FIELD(node_timeout_ms, 0), RLOCK__CFG_FIELD(renew_every_ms, 0),
        RLOCK__CFG_FIELD(backoff_min_ms, 2),  RLOCK__CFG_FIELD(backoff_max_ms, 128),
        RLOCK__CFG_FIELD(recheck_ms, 1000),   RLOCK__CFG_FIELD(drift_permille, 10)};
    const unsigned short *p;
    for (p = fields; p < fields + sizeof fields / sizeof fields[0]; p++) {
        uint32_t *f = (uint32_t *)(void *)((char *)cfg + (size_t)4 * (*p & 31u)), dflt = *p >> 5u;
        uint32_t most = (RLOCK__MS_FAR - 1u) >> (dflt != 0); /* (the intervals' default is 0: 2^31 - 2; else 2^30 - 1) */
        if (!*f) *f = dflt;
        if (*f > most) *f = most;
    }
    if (cfg->backoff_max_ms < cfg->backoff_min_ms) cfg->backoff_max_ms = cfg->backoff_min_ms;
}

RLOCKDEF void rlock_config_init(rlock_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    rlock__config_defaults(cfg);
}

RLOCK__TXT_FROM(rlock__ci_txt); /* (its texts: RLOCK__TXT_IN) */
RLOCKDEF rlock_status rlock_client_init(rlock_client *c, rlock_node *nodes, size_t n,
                                        const rlock_config *cfg) {
    unsigned char *id;
    size_t i, j;
    rlock__txt why = 0;
    long long x = 0;
    unsigned long y = RLOCK_MAX_NODES; /* (n's bound: read only by a text with a \2) */
    if (!c) return RLOCK_E_BADARG;
    /* On failure only c->why is written (a client in use is not disturbed).
     * The first check that fails picks the reason; one rlock__why writes it. */
    if (!nodes) why = RLOCK__TXT_IN(rlock__ci_txt, "nodes is NULL");
    else if (n == 0 || n > RLOCK_MAX_NODES)
        why = RLOCK__TXT_IN(rlock__ci_txt, "n is \1, it must be 1..RLOCK_MAX_NODES (\2)"), x = (long long)n;
    if (why) goto bad;
    for (i = 0; i < n; i++) {
        x = (long long)i;
        if (nodes[i].magic != RLOCK__MAGIC_NODE) {
            why = RLOCK__TXT_IN(rlock__ci_txt, "nodes[\1] is not initialised (rlock_node_init)");
            goto bad;
        }
        /* Two entries on one connection would give one server two votes. */
        for (j = 0; j < i; j++)
            if (nodes[j].transport.ctx == nodes[i].transport.ctx && nodes[i].transport.ctx) {
                why = RLOCK__TXT_IN(rlock__ci_txt, "nodes[\1] and nodes[\2] share one connection"), x = (long long)j, y = i;
                goto bad;
            }
    }
    if (cfg && cfg->drift_permille >= 1000)
        why = RLOCK__TXT_IN(rlock__ci_txt, "drift_permille \1 is not below 1000"), x = cfg->drift_permille;
    else if (cfg && (cfg->scripts < RLOCK_SCRIPTS_AUTO || cfg->scripts > RLOCK_SCRIPTS_FCALL))
        why = RLOCK__TXT_IN(rlock__ci_txt, "scripts \1 is not RLOCK_SCRIPTS_AUTO, _EVAL or _FCALL (0..2)"), x = cfg->scripts;
    else if (!RLOCK__HAS_WAITING && cfg && cfg->pubsub)
        why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.pubsub: waiting is compiled out (RLOCK_NO_WAITING)");
    else if (!RLOCK__HAS_REPLICAS && cfg && cfg->replicas)
        why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.replicas: WAIT is compiled out (RLOCK_NO_REPLICAS)");
    else if (!RLOCK__HAS_FCALL && cfg && cfg->scripts == RLOCK_SCRIPTS_FCALL)
        why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.scripts: FCALL is compiled out (RLOCK_NO_FCALL)");
    else if (!RLOCK__HAS_FENCING && cfg && cfg->fencing)
        why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.fencing: fencing is compiled out (RLOCK_NO_FENCING)");
#ifdef RLOCK__NEED_NOW_HOOK
    else if (!cfg || !cfg->now_ms) why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.now_ms is required (RLOCK_NO_POSIX, no RLOCK_NOW_MS)");
#endif
#ifdef RLOCK__NEED_RANDOM_HOOK
    else if (!cfg || !cfg->random_bytes)
        why = RLOCK__TXT_IN(rlock__ci_txt, "cfg.random_bytes is required (RLOCK_NO_POSIX, no RLOCK_RANDOM_BYTES)");
#endif
    if (why) {
    bad:
        return rlock__why(c->why, RLOCK__TXT_OUT(rlock__ci_txt, why), x, y);
    }
    memset(c, 0, sizeof *c);
    if (cfg) c->cfg = *cfg;
    rlock__config_defaults(&c->cfg);
    for (i = 0; i < n; i++) {
        c->nodes[i] = &nodes[i];
        if (RLOCK__HAS_WAITING) nodes[i].x.hello = c->cfg.pubsub; /* (a flag, only tested; else 0 since rlock_node_init) */
#if !RLOCK__COMPACT
        c->conns[i] = &nodes[i].x; /* (then NULL, from the memset) */
        rlock__x_bind(&nodes[i].x, &nodes[i]);
        /* FCALL from the start (or still, EVAL refused there before: kept) */
        if (RLOCK__HAS_FCALL && c->cfg.scripts == RLOCK_SCRIPTS_FCALL) nodes[i].fcall = 1;
#endif
    }
    c->n_nodes = n;
#if !RLOCK__COMPACT
    id = (unsigned char *)c->stamp; /* (drawn there: ops are stamped with them) */
#else
    id = c->id_bits;
#endif
    if (rlock__random(c, id, 8) != 0) return RLOCK_E_RANDOM; /* (c->magic still 0: unusable) */
    if (!RLOCK__COMPACT) rlock__hex(c->instance_id, id, 8);
    c->magic = RLOCK__MAGIC_CLIENT;
    return RLOCK_OK;
}

static RLOCK__FEW int rlock__client_ok(const rlock_client *c) { return c && c->magic == RLOCK__MAGIC_CLIENT; }

RLOCKDEF rlock_status rlock_client_set_subscribers(rlock_client *c, rlock_subscriber *subs, size_t n) {
    size_t i, j;
    rlock__txt why;
    if (!rlock__client_ok(c)) return RLOCK_E_BADARG;
    /* (the first check that fails picks the reason; one rlock__why writes it,
     * in the loop below: 4 B less than after it) */
    j = c->n_nodes;
    i = n;
    if (!RLOCK__HAS_WAITING) why = RLOCK__TXT("subscribers: waiting is compiled out (RLOCK_NO_WAITING)");
    else if (!subs) why = RLOCK__TXT("subs is NULL");
    else if (n == 0 || n > c->n_nodes) why = RLOCK__TXT("n is \1, it must be 1..\2 (the client's nodes)");
    else why = 0;
    if (why) goto bad;
    if (c->ops) return RLOCK_E_STATE;
    for (i = 0; i < n; i++) {
        why = RLOCK__TXT("subs[\1] is not initialised (rlock_subscriber_init)");
        if (subs[i].magic != RLOCK__MAGIC_SUB) goto bad;
        why = RLOCK__TXT("subs[\1] is the command connection of nodes[\2]");
        for (j = 0; j < c->n_nodes; j++)
            if (subs[i].transport.ctx && c->nodes[j]->transport.ctx == subs[i].transport.ctx) {
            bad: /* (i: n, or the subscriber's index; j: the nodes', or the node's) */
                return rlock__why(c->why, why, (long long)i, j);
            }
    }
    for (i = 0; i < n; i++) {
#if RLOCK__COMPACT
        c->subs[i] = &subs[i];
#else
        c->conns[c->n_nodes + i] = &subs[i].x;
        rlock__x_bind(&subs[i].x, &subs[i]);
#endif
    }
#if !RLOCK__COMPACT
    c->conns[c->n_nodes + n] = NULL; /* (the end: fewer than set before) */
#endif
    c->n_subs = n;
    c->linger_mask = 0; /* (the channel left in c->linger is stale: rlock__linger_drop) */
    return RLOCK_OK;
}

RLOCKDEF size_t rlock_client_quorum(const rlock_client *c) {
    return rlock__client_ok(c) ? c->n_nodes / 2 + 1 : 0;
}
RLOCKDEF const char *rlock_client_instance_id(const rlock_client *c) {
    if (!rlock__client_ok(c)) return "";
#if RLOCK__COMPACT /* (the same text at each call: the bits do not change until the next init) */
    rlock__hex((char *)c->instance_id, c->id_bits, 8);
#endif
    return c->instance_id;
}

#if !RLOCK__COMPACT /* 6.8c has the compact engine's */
/* Fill out[0..cap) with the connections of c that want I/O now; returns
 * how many there are. conn is the connection's rlock_node or
 * rlock_subscriber (its exchange's owner), whose first member is its
 * transport: rlock__client_wait reaches the transport through it.
 * *connecting: one is connecting without a descriptor. */
static size_t rlock__client_interest(const rlock_client *c, rlock_interest *out, size_t cap, int *connecting) {
    size_t i, k = 0;
    rlock__x *n;
    *connecting = 0;
    for (i = 0; (n = c->conns[i]) != NULL; i++) {
        int w = rlock__x_wants(n), fd;
        if (!w) continue;
        /* (the transport read again after each call: kept in a register it costs more) */
        fd = rlock__x_t(n)->fd ? rlock__x_t(n)->fd(rlock__x_t(n)->ctx) : -1;
        if (n->conn == RLOCK__CONN_NEW) *connecting = 1;
        if (k < cap) {
            out[k].conn = n->owner;
            out[k].fd = fd;
            out[k].events = rlock__x_t(n)->events && fd >= 0 ? rlock__x_t(n)->events(rlock__x_t(n)->ctx, w) : w;
            out[k].gen = n->gen;
        }
        k++;
    }
    return k;
}

/* Block until some connection of c can make progress, or timeout_ms passes:
 * with the transports' multi-wait (all of them at once) when every
 * connection has one and a descriptor; else with their wait() hooks, one
 * connection at a time in short slices. */
static void rlock__client_wait(rlock_client *c, uint32_t timeout_ms) {
    rlock_interest items[2 * RLOCK_MAX_NODES];
    const rlock_transport *t0;
    size_t i, n;
    int connecting, can_many = 1, can_wait = 1;
    n = rlock__client_interest(c, items, sizeof items / sizeof items[0], &connecting);
    if (n == 0) {
        if (timeout_ms) rlock__sleep(c, timeout_ms);
        return;
    }
    if (connecting) return; /* connect() has not run yet: step at once */
    t0 = (const rlock_transport *)items[0].conn; /* (the first member of a node and of a subscriber) */
    for (i = 0; i < n; i++) {
        const rlock_transport *t = (const rlock_transport *)items[i].conn;
        if (!t->wait_many || t->wait_many != t0->wait_many || items[i].fd < 0) can_many = 0;
        if (!t->wait) can_wait = 0;
    }
    if (can_many) {
        (void)t0->wait_many(items, n, timeout_ms);
        return;
    }
    if (!can_wait) return; /* the transport blocks inside send/recv itself */
    /* More than one: probe them all, then wait on one in short slices.
     * Never wait on one node for the whole timeout: another may need more
     * steps meanwhile (connect, then send; EVAL after NOSCRIPT) and would
     * starve until its deadline. */
    for (i = 0; n > 1 && i < n; i++) {
        const rlock_transport *t = (const rlock_transport *)items[i].conn;
        if (t->wait(t->ctx, items[i].events, 0) != 0) return;
    }
    t0->wait(t0->ctx, items[0].events, n == 1 || timeout_ms < 1 ? timeout_ms : 1);
}
#endif /* !RLOCK__COMPACT */

/* A Redis Cluster primary's client (section 7): notices by SPUBLISH, waiting by SSUBSCRIBE. */
#ifdef RLOCK_NO_CLUSTER
#define RLOCK__SHARD(c) 0
#define RLOCK__SPUBLISH(lk, e) ((void)0)
#else
#define RLOCK__SHARD(c) ((c)->shard != NULL)
#define RLOCK__SPUBLISH(lk, e) ((lk)->client->shard ? (lk)->client->shard->spublish(e) : (void)0)
#endif

/* Tags of the requests the client layer queues (the exchange only keeps them). */
enum { RLOCK__TAG_LOCK = 1, RLOCK__TAG_SUB, RLOCK__TAG_UNSUB, RLOCK__TAG_PING, RLOCK__TAG_WAIT, RLOCK__TAG_CALL };
typedef char rlock__tags_below_flags[RLOCK__TAG_CALL <= RLOCK__X_TAG(0xFF) ? 1 : -1]; /* (RLOCK__X_KEEP, _GONE above) */

/* What rlock_client_connect collects: PING answers, then run_ids. */
typedef struct rlock__ping {
    unsigned answered, up;
    int run_id;                          /* collecting run_ids (errors are not noted) */
    char id[RLOCK_MAX_NODES][48];
    size_t id_len[RLOCK_MAX_NODES];
} rlock__ping;

#if !RLOCK__COMPACT
/* tpl appended to out at pos (<= cap), as much as fits in cap, each \1 in
 * it replaced by a[0..an), each \2 by b[0..bn) (a message with a number
 * and a name; FUNCTION LOAD's library); the new length. */
static RLOCK__NOINLINE size_t rlock__fill(char *out, size_t cap, size_t pos, const char *tpl, const char *a, size_t an,
                                          const char *b, size_t bn) {
    for (; *tpl; tpl++) {
        const char *src = *tpl == 1 ? a : *tpl == 2 ? b : tpl;
        size_t n = *tpl == 1 ? an : *tpl == 2 ? bn : 1;
        if (n > cap - pos) n = cap - pos;
        memcpy(out + pos, src, n);
        pos += n;
    }
    return pos;
}

static void rlock__deliver(rlock_client *c, size_t i, rlock__x *n, rlock__event *ev, rlock__ms now);

/* Read every connection of c and hand each event to its owner. */
static void rlock__client_pump(rlock_client *c, rlock__ms now) {
    size_t i;
    rlock__x *n;
    for (i = 0; (n = c->conns[i]) != NULL; i++) {
        rlock__event ev;
        while (rlock__x_next(n, now, &ev)) {
            n->active = 1;
            rlock__deliver(c, i, n, &ev, now);
            n->active = 0;
        }
    }
}
#endif /* !RLOCK__COMPACT */

#define RLOCK__PING "*1\r\n$4\r\nPING\r\n"
#if RLOCK__COMPACT /* (the general engine's rlock__client_ask copies its requests' bytes itself) */
/* A request whose bytes are known at compile time, s[0..n): its length,
 * 0 when it does not fit in cap. */
static size_t rlock__put_fixed(unsigned char *out, size_t cap, const char *s, size_t n) {
    if (n > cap) return 0;
    memcpy(out, s, n);
    return n;
}

static size_t rlock__encode_ping(unsigned char *out, size_t cap) {
    return rlock__put_fixed(out, cap, RLOCK__PING, sizeof RLOCK__PING - 1);
}
#endif

#if !RLOCK__COMPACT /* 6.8c has the compact engine's rlock_client_connect / _close */
/* The server's run_id (INFO server), or nil when this user may not run INFO:
 * the whole INFO text can exceed RLOCK_RX_BUF, so the script cuts it out. */
#define RLOCK__LUA_RUN_ID \
    "local ok,i=pcall(redis.call,'info','server') " \
    "if ok then return string.match(i,'run_id:(%x+)') end return false"

typedef char rlock__run_id_len[sizeof RLOCK__LUA_RUN_ID - 1 == 110 ? 1 : -1]; /* the "$110" below */
/* EVAL script 0, encoded */
#define RLOCK__RUN_ID_REQ "*3\r\n$4\r\nEVAL\r\n$110\r\n" RLOCK__LUA_RUN_ID "\r\n$1\r\n0\r\n"

/* Ask every node in mask one request - PING, or with run_id the run_id's
 * EVAL - all bounded by timeout_ms from now, and wait (blocking) until each
 * answered or failed; answers go to *p (cleared first). */
static void rlock__client_ask(rlock_client *c, unsigned mask, uint32_t timeout_ms, rlock__ping *p, int run_id) {
    /* (literals, not a table: their bytes go with this function's code) */
    const char *req = run_id ? RLOCK__RUN_ID_REQ : RLOCK__PING;
    size_t i, len = run_id ? sizeof RLOCK__RUN_ID_REQ - 1 : sizeof RLOCK__PING - 1;
    rlock__ms deadline = rlock__now(c) + timeout_ms;
    memset(p, 0, sizeof *p);
    p->run_id = run_id;
    for (i = 0; i < c->n_nodes; i++) {
        rlock_node *n = c->nodes[i];
        rlock__x *x = rlock__x_node(n);
        const char *why = ""; /* (unless it failed) */
        rlock_status st;
        if (!((mask >> i) & 1u)) continue;
        st = rlock__x_begin(x, deadline, &why);
        if (st == RLOCK_OK && len <= x->tx_cap - x->tx_len) {
            memcpy(x->tx + x->tx_len, req, len);
            rlock__x_commit(x, len, p, RLOCK__TAG_PING, deadline);
            st = RLOCK_WOULD_BLOCK; /* the node's result until it answers */
        } else {
            if (st == RLOCK_OK || st == RLOCK_WOULD_BLOCK) st = RLOCK_E_STATE;
            p->answered |= 1u << i;
        }
        if (!p->run_id) rlock__node_notez(n, st, why);
    }
    for (;;) {
        rlock__ms now = rlock__now(c);
        rlock__client_pump(c, now);
        if ((p->answered & mask) == mask) break;
        rlock__client_wait(c, RLOCK__MS_BEFORE(now, deadline) ? deadline - now : 0);
    }
}

/* Two nodes answering with one run_id are one server under two names (e.g.
 * 127.0.0.1 and localhost): it would cast two Redlock votes. 1 when some
 * node repeats another (the first such node's error text says which), 0 when
 * none does. Nodes whose run_id cannot be read are not compared. p: the
 * caller's (its answers are no longer needed), reused: one ~0.5 KB table of
 * run_ids on the stack, not two. */
static int rlock__same_server(rlock_client *c, unsigned up, uint32_t timeout_ms, rlock__ping *p) {
    size_t i, j, k, n;
    char msg[RLOCK_ERR_LEN], num[24];
    rlock__client_ask(c, up, timeout_ms, p, 1);
    /* Bounded by RLOCK_MAX_NODES too: with RLOCK_MAX_NODES 1 the loop is then
     * provably empty (gcc 12 -O2 warned of indexes past the arrays). */
    for (i = 1; i < c->n_nodes && i < RLOCK_MAX_NODES; i++) {
        if (!p->id_len[i]) continue;
        for (j = 0; j < i; j++) {
            if (p->id_len[j] != p->id_len[i] || memcmp(p->id[j], p->id[i], p->id_len[i]) != 0) continue;
            n = rlock__utoa(num, (rlock__unum)j);
            k = rlock__fill(msg, sizeof msg, 0, "same server as node \1 (run_id \2)", num, n, p->id[i], p->id_len[i]);
            rlock__node_note(c->nodes[i], RLOCK_E_BADARG, msg, k);
            (void)rlock__why(c->why, RLOCK__TXT("nodes[\1] and nodes[\2] are one server (same run_id)"),
                             (long long)j, i);
            return 1;
        }
    }
    return 0;
}

static unsigned rlock__popcount(unsigned m);
RLOCKDEF rlock_status rlock_client_connect(rlock_client *c, uint32_t timeout_ms) {
    size_t up;
    rlock__ping ping;
    rlock_status st;
    if (!rlock__client_ok(c)) return RLOCK_E_BADARG;
    if (timeout_ms == 0) return rlock__why(c->why, RLOCK__TXT("timeout_ms is 0"), 0, 0);
    if (c->ops) return RLOCK_E_STATE;
    if (timeout_ms > RLOCK__MS_FAR - 1u) timeout_ms = RLOCK__MS_FAR - 1u; /* an interval: < 2^31 */
    rlock__client_ask(c, RLOCK__ALL_NODES(c->n_nodes), timeout_ms, &ping, 0);
    up = rlock__popcount(ping.up);
    if (up >= 2 && rlock__same_server(c, ping.up, timeout_ms, &ping)) {
        /* Unusable, as after a failed rlock_client_init: fix the node list. */
        rlock_client_close(c);
        c->magic = 0;
        return RLOCK_E_BADARG;
    }
    if (up > c->n_nodes / 2) return RLOCK_OK; /* a quorum */
    if (c->n_nodes > 1) return RLOCK_E_QUORUM;
    st = c->nodes[0]->result; /* one node, down: its own error */
    return st == RLOCK_OK ? RLOCK_E_PROTOCOL : st;
}

RLOCKDEF void rlock_client_close(rlock_client *c) {
    rlock__x **p;
    if (!rlock__client_ok(c)) return;
    for (p = c->conns; *p; p++) {
        rlock__x *n = *p;
        if (n->conn != RLOCK__CONN_DOWN || n->count)
            rlock__x_drop(n, RLOCK_E_IO, "connection closed by rlock_client_close");
    }
    c->linger_mask = 0; /* (the channel left in c->linger is stale: rlock__linger_drop) */
}
#endif /* !RLOCK__COMPACT */

/* ---- 6.7 Rounds: one request to a set of nodes, tallied by pure functions */

/* The length of the prefix of every auxiliary key of key: key itself when
 * it has a Redis Cluster hash tag (the bytes between the first '{' and the
 * next '}', when not empty), "{key}" otherwise - both hash to key's slot.
 * 0 when key has a '}' outside a tag (then no same-slot name exists). */
static RLOCK__INLINE size_t rlock__aux_len(const char *key, size_t key_len) {
    const char *open = (const char *)memchr(key, '{', key_len), *close;
    if (open) { /* (the first '}' after it, if any) */
        close = (const char *)memchr(open + 1, '}', (size_t)(key + key_len - open - 1));
        if (close && close > open + 1) return key_len;
    }
    return memchr(key, '}', key_len) ? 0 : key_len + 2;
}
/* Write the prefix (base_len bytes, from rlock__aux_len) to out, no NUL. */
static void rlock__aux_write(char *out, const char *key, size_t key_len, size_t base_len) {
    if (base_len > key_len) { /* "{key}" */
        out[0] = '{';
        memcpy(out + 1, key, key_len);
        out[key_len + 1] = '}';
    } else {
        memcpy(out, key, key_len);
    }
}
/* The prefix into out[0..cap) with a NUL; its length, 0 when none or it does not fit. */
static size_t rlock__aux_base(char *out, size_t cap, const char *key, size_t key_len) {
    size_t n = rlock__aux_len(key, key_len);
    if (n == 0 || n + 1 > cap) return 0;
    rlock__aux_write(out, key, key_len, n);
    out[n] = '\0';
    return n;
}

/* A lock keeps its key once; its auxiliary names (aux_base + suffix) are
 * derived from it where they are used: appended to a request, compared with
 * a pushed channel. aux_base_len (0: none) tells which form the base has. */
#if !RLOCK__ENC_TEMPLATE /* (the templates have no auxiliary names) */
static RLOCK__INLINE int rlock__put_aux_of(unsigned char *out, size_t cap, size_t *pos, const char *key, size_t key_len,
                             size_t bl, const char *suffix, size_t slen) {
    if (!rlock__put_bulk(out, cap, pos, bl + slen)) return 0; /* (both short: no sum wraps) */
    rlock__aux_write((char *)out + *pos, key, key_len, bl);
    memcpy(out + *pos + bl, suffix, slen);
    *pos += bl + slen;
    rlock__put_end(out, pos);
    return 1;
}
static int rlock__put_aux(unsigned char *out, size_t cap, size_t *pos, const struct rlock_lock *lk,
                          const char *suffix) {
    return rlock__put_aux_of(out, cap, pos, lk->key, lk->key_len, lk->aux_base_len, suffix, strlen(suffix));
}
#endif
#if !RLOCK__COMPACT /* compared with pushed channels: waiting only */
/* Is s[0..aux_base_len) lk's auxiliary prefix? (lk has one: both callers
 * test aux_base_len first) */
static int rlock__aux_is(const struct rlock_lock *lk, const char *s) {
    size_t b = lk->aux_base_len > lk->key_len;
    return (!b || (s[0] == '{' && s[lk->key_len + 1] == '}')) && memcmp(s + b, lk->key, lk->key_len) == 0;
}
#endif

#if !RLOCK__COMPACT /* (the compact engine's: rlock__c_answer) */
/* Keep node i's answer to a round as plain numbers. The round says what it
 * wants (rlock__round_wants_array): an acquire script answers {flag,
 * value[, fence]} (the fence an integer, or its text: RLOCK__LUA_FENCE),
 * a plain SET NX PX acquire +OK or nil (kept as {1,1,0} /
 * {0,0}), any other script a single integer, one it can answer
 * (rlock__answer_fits). A reply of another shape is RLOCK_E_PROTOCOL; a Redis error maps to its status;
 * {0, -1} (held without a TTL) is RLOCK_E_FOREIGN. st: a failure's status
 * (rep NULL), or with a reply its error scan (rlock__round_answer's). Returns
 * the status kept, with an error reply's flag words above it (READONLY). */
static int rlock__round_wants_array(const rlock_round *r);
static int rlock__answer_fits(const rlock_round *r, long long x);
static int rlock__round_store(rlock_round *r, size_t i, int st, const rlock_reply *rep) {
    long long *v = r->v[i];
    int want_array = rlock__round_wants_array(r);
    int k, n, e = 0;
    v[0] = v[1] = v[2] = 0;
    if (rep) {
        if (rep->v.type == RLOCK_RESP_ERROR) {
            e = st; /* (its scan: the caller's) */
            st = e & 31;
            /* An acquire script that failed may have failed after its
             * write: the INCR of a fence key holding no integer (or at
             * 2^63 - 1), a command the ACL refuses, an auxiliary key of a
             * foreign type - Redis keeps what the script wrote, and the
             * lock would stay held while the acquire says it failed. An
             * error raised by a command inside a script says "script:"
             * (7: "... script: SHA, on @user_script:1.", 6: "ERR Error
             * running script (call to f_SHA): @user_script:1: ..."); a
             * refusal before it ran does not (NOAUTH, NOPERM, READONLY,
             * MOVED, NOSCRIPT, BUSY), nor rlock's own error_reply (before
             * any write). v[2] 1: the outcome is unknown, the cleanup
             * releases it there (by token: nothing else is touched). */
            v[2] = want_array == 1 && (e & RLOCK__C_W_SCRIPT);
        } else if (want_array == 2) { /* plain SET NX PX: +OK granted, nil held (by whom, a script tells) */
            if (rep->v.type == RLOCK_RESP_STATUS && rep->v.len == 2 && rep->v.str[0] == 'O' && rep->v.str[1] == 'K')
                v[0] = v[1] = 1;
            else if (rep->v.type != RLOCK_RESP_NIL)
                st = RLOCK_E_PROTOCOL;
        } else if (!want_array) {
            v[0] = rep->v.integer; /* (read only with RLOCK_OK; stored after the test: 8 B more) */
            if (rep->v.type != RLOCK_RESP_INTEGER || !rlock__answer_fits(r, v[0])) st = RLOCK_E_PROTOCOL;
        } else if (rep->v.type != RLOCK_RESP_ARRAY || (unsigned long long)(rep->count - 2) > 1u) {
            st = RLOCK_E_PROTOCOL;
        } else {
            n = (int)rep->count;
            for (k = 0; k < n; k++) {
                const rlock_resp_value *e = &rep->elem[k];
                v[k] = e->integer;
                if (e->type != RLOCK_RESP_INTEGER && (!RLOCK__HAS_FENCING || k != 2 || e->type != RLOCK_RESP_BULK ||
                    rlock__resp_int((const unsigned char *)e->str, e->len, &v[k]) != 0))
                    break;
            }
            /* (a grant's count: its holds, 1 or more - a semaphore's is its
             * slot, or -1 - slot handed to its waiter id: RLOCK__SEM_HANDED;
             * another is no grant of ours) */
            if (k < n || (unsigned long long)v[0] > 1u || (v[0] && v[1] < 1 && r->script != RLOCK__S_SEM_ACQUIRE))
                st = RLOCK_E_PROTOCOL;
            else if (!v[0] && v[1] == -1) st = RLOCK_E_FOREIGN;
        }
    }
    r->st[i] = (rlock_status)st;
    r->answered |= 1u << i;
    return st | (e & ~31);
}
#endif

#if !RLOCK__COMPACT /* tallies over nodes: the compact engine has one */
/* What a round's answers add up to. */
typedef struct rlock__tally {
    unsigned yes, no, unknown;   /* granted/agreed, refused, no answer (may have landed) */
    size_t n_yes, n_no;
    uint32_t min_pttl_not;       /* acquire: ~ the smallest PTTL of a refusing node (at most 2^31 - 1: every
                                  * wait it bounds is shorter), kept complemented: 0, none, is the memset's
                                  * (no store of -1); read through rlock__tally_pttl, -1 none */
    long long most;              /* acquire: largest fence of a granting node; reentrant release
                                  * (count_ok): most holds left on a node (0: none, or none left) */
    long long holds;             /* acquire: hold count of the first granting node */
    rlock_status fatal;          /* AUTH / WRONGTYPE / FOREIGN / BADARG from half the nodes or more: not retried */
    size_t n_fatal;              /* the nodes that answered with one of those */
    rlock_status error;          /* what the round reports if it failed for other reasons than "held" */
} rlock__tally;

/* The smallest PTTL a refusing node reported, -1 none. */
#define rlock__tally_pttl(t) ((int32_t)~(t)->min_pttl_not)

static void rlock__tally_init(rlock__tally *t) {
    memset(t, 0, sizeof *t);
    t->fatal = RLOCK_OK;
}

/* Per-node statuses that end an operation at once; and those that leave
 * the outcome unknown (no answer: the write may have happened). The error
 * a round reports when it failed for reasons other than "held" (the node's
 * own status with one node, no-quorum with several: rlock__tally_round) is
 * the first node's (by index) of those that are not about the request
 * being sent here - AUTH, WRONGTYPE, FOREIGN, UPGRADE - when there is one:
 * noted here, in the tally's one walk over the nodes. */
static void rlock__tally_status(rlock__tally *t, size_t i, rlock_status st, long long wrote) {
    if (st == RLOCK_E_AUTH || st == RLOCK_E_WRONGTYPE || st == RLOCK_E_FOREIGN || st == RLOCK_E_BADARG ||
        st == RLOCK_E_MOVED /* MOVED: not here; waiting on this node cannot help */ || st == RLOCK_E_UPGRADE) {
        t->fatal = st;
        t->n_fatal++;
        if (!t->error && st != RLOCK_E_BADARG && st != RLOCK_E_MOVED) t->error = st;
    }
    /* (wrote: an acquire script's error, it may have written - rlock__round_store) */
    if (st == RLOCK_E_IO || st == RLOCK_E_PROTOCOL || wrote) t->unknown |= 1u << i;
}

/* A round's answers, summed up - a round of every node (rlock__round_begin's
 * callers: only a cleanup asks fewer, and it is never tallied), its mask
 * telling how many. Acquire: granted {1, holds, fence} /
 * refused {0, pttl[, 1 + free slot]}. Extend, release: an integer per node,
 * yes being 1, or for a reentrant release (count_ok) any count >= 0 (holds
 * left). (One loop for both: the fields the other kind does not read come
 * out of the zeros rlock__round_store keeps.) */
static int rlock__counts_holds(const rlock_round *r);
static RLOCK__NOINLINE void rlock__tally_round(const rlock_round *r, rlock__tally *t) {
    int count_ok = rlock__counts_holds(r);
    size_t i;
    rlock__tally_init(t);
    for (i = 0; RLOCK__NODES_FROM(r->mask, i); i++) { /* (every node: a tallied round asks them all) */
        const long long *v = r->v[i];
        if (r->st[i] != RLOCK_OK) {
            rlock__tally_status(t, i, r->st[i], v[2]);
            continue;
        }
        if (count_ok ? v[0] >= 0 : v[0] == 1) {
            /* the largest (Redlock): an acquire's fence, v[2]; a reentrant release's holds left, v[0] */
            long long most = count_ok ? v[0] : v[2];
            t->yes |= 1u << i;
            t->n_yes++;
            if (!t->holds) t->holds = v[1];
            if (most > t->most) t->most = most;
        } else {
            int32_t p = (unsigned long long)v[1] <= 0x7fffffff ? (int32_t)v[1] : v[1] < 0 ? 0 : 0x7fffffff;
            t->no |= 1u << i;
            t->n_no++;
            if (~(uint32_t)p > t->min_pttl_not) t->min_pttl_not = ~(uint32_t)p; /* (p smaller: ~p larger; none, 0) */
        }
    }
    /* Those statuses end an acquire only when the nodes that said them
     * leave no quorum (half of them or more: N/2 + 1 is the quorum): a
     * minority of nodes may fail, in any way - a foreign key or a wrong
     * password on one node of three is such a failure (that node's status
     * says so: rlock_node_status) - and the others still grant, now or on a
     * retry. (i: the nodes) */
    if (t->n_fatal * 2 < i) t->fatal = RLOCK_OK;
    if (!t->error) t->error = r->mask > 1 ? RLOCK_E_QUORUM : r->st[0] == RLOCK_OK ? RLOCK_E_PROTOCOL : r->st[0];
}

static RLOCK__NOINLINE unsigned rlock__popcount(unsigned m) {
    unsigned c = 0;
    for (; m; m &= m - 1u) c++;
    return c;
}
#endif /* !RLOCK__COMPACT */

/* ---- 6.8 Operations: acquire, extend, release as machines over rounds --- */
enum { RLOCK__OP_NONE = 0, RLOCK__OP_ACQUIRE, RLOCK__OP_EXTEND, RLOCK__OP_RELEASE,
       RLOCK__OP_INSPECT, RLOCK__OP_FORCE /* 6.10 */ };
/* ROUND: the op's round is out. CLEANUP: releasing a failed acquire's partial
 * grant. BACKOFF / WAITMSG: between acquire rounds (nothing granted, nothing
 * in flight but a SUBSCRIBE). SUBSCRIBE: waiting for the subscriptions.
 * DONE: finished, rlock_step reports op.result. */
enum { RLOCK__PH_IDLE = 0, RLOCK__PH_ROUND, RLOCK__PH_CLEANUP, RLOCK__PH_BACKOFF, RLOCK__PH_SUBSCRIBE,
       RLOCK__PH_WAITMSG, RLOCK__PH_DONE, RLOCK__PH_COUNT };

/* Every transition of an operation goes through here: the table says which
 * are allowed (ROUND -> ROUND is the next acquire round straight after;
 * CLEANUP -> ROUND a retry at once once subscribed). */
static void rlock__op_goto(rlock_lock *lk, int phase) {
    static const unsigned allowed[RLOCK__PH_COUNT] = {
        /* IDLE      */ 1u << RLOCK__PH_ROUND,
        /* ROUND     */ (1u << RLOCK__PH_ROUND) | (1u << RLOCK__PH_CLEANUP) | (1u << RLOCK__PH_BACKOFF) |
                        (1u << RLOCK__PH_SUBSCRIBE) | (1u << RLOCK__PH_WAITMSG) | (1u << RLOCK__PH_DONE),
        /* CLEANUP   */ (1u << RLOCK__PH_ROUND) | (1u << RLOCK__PH_BACKOFF) | (1u << RLOCK__PH_SUBSCRIBE) |
                        (1u << RLOCK__PH_WAITMSG) | (1u << RLOCK__PH_DONE),
        /* BACKOFF   */ (1u << RLOCK__PH_ROUND) | (1u << RLOCK__PH_DONE),
        /* SUBSCRIBE */ (1u << RLOCK__PH_ROUND) | (1u << RLOCK__PH_BACKOFF) | (1u << RLOCK__PH_DONE),
        /* WAITMSG   */ (1u << RLOCK__PH_ROUND) | (1u << RLOCK__PH_DONE),
        /* DONE      */ 1u << RLOCK__PH_IDLE
    };
    (void)allowed; /* RLOCK_ASSERT may be compiled out */
    RLOCK_ASSERT(lk->op.phase >= 0 && lk->op.phase < RLOCK__PH_COUNT && phase >= 0 && phase < RLOCK__PH_COUNT);
    RLOCK_ASSERT((allowed[lk->op.phase] >> phase) & 1u);
    lk->op.phase = phase;
}

static int rlock__lock_ok(const rlock_lock *lk) {
    return lk && lk->magic == RLOCK__MAGIC_LOCK ? rlock__client_ok(lk->client) : 0; /* (a tail call: 0 or 1) */
}

/* (both engines) An op in progress is ended first: an acquire the program
 * has not seen the end of may be granted, and no handle would be left to
 * release it. One still out is cancelled (its answers awaited, what they
 * granted released); one that ended granted, its result not read yet, is
 * released; an extend or a release is abandoned. */
#if RLOCK__HAS_CLUSTER
static void rlock__cluster_destroy(rlock_lock *lk);
#endif
RLOCKDEF void rlock_lock_destroy(rlock_lock *lk) {
    if (!rlock__lock_ok(lk)) return;
#if RLOCK__HAS_CLUSTER
    if (lk->cl.phase) rlock__cluster_destroy(lk); /* (not RLOCK__CLP_IDLE: in its cluster's list) */
#endif
    if (lk->op.kind != RLOCK__OP_NONE) {
        int granted = lk->op.kind == RLOCK__OP_ACQUIRE && lk->op.phase == RLOCK__PH_DONE && lk->op.result == RLOCK_OK;
        rlock_cancel(lk);
        if (granted) (void)rlock_release(lk);
    }
    memset(lk, 0, sizeof *lk);
}

/* ttl * permille / 1000 + 2, in 32 bits and exact: ttl < 2^31 and
 * drift_permille < 1000 (both checked), so ttl / 1000 * permille < 2^32.
 * One caller, the TTL check: the general engine's judge (rlock__op_run)
 * calls that too, for an acquire's or extend's ttl only (one that passed;
 * no text written): 8 B less than a copy of the sum there - measured. */
static RLOCK__INLINE uint32_t rlock__drift(const rlock_lock *lk, uint32_t ttl) {
    uint32_t p = lk->client->cfg.drift_permille;
    return ttl / 1000u * p + ttl % 1000u * p / 1000u + 2u;
}

/* (not noinline: since the bound moved to the config, each copy is shorter
 * than a call - measured, both engines) */
static uint32_t rlock__renew_interval(const rlock_lock *lk, uint32_t ttl) {
    uint32_t every = lk->client->cfg.renew_every_ms;
    if (every) return every; /* (an interval: < 2^31, rlock__config_defaults bounded it) */
    return ttl / 3u; /* (a lease's ttl exceeds its drift, which is at least 2 (rlock__drift): >= 3, so 1 or more) */
}

/* A TTL must be positive, within what rlock accepts, and leave validity
 * after the drift and one node timeout. The first check that fails picks
 * the reason and its bound; one rlock__why writes it, and 0 is returned;
 * else the lease's validity, ttl less the drift (> 0). */
RLOCK__TXT_FROM(rlock__ct_txt); /* (its texts: RLOCK__TXT_IN) */
static uint32_t rlock__check_ttl(rlock_lock *lk, long long ttl) {
    uint32_t t = (uint32_t)ttl, drift = rlock__drift(lk, t), timeout = lk->client->cfg.node_timeout_ms;
    uint32_t bound = RLOCK_MAX_TTL_MS;
    rlock__txt why;
    if (ttl <= 0) why = RLOCK__TXT_IN(rlock__ct_txt, "ttl \1 ms is not positive");
    else if (ttl > RLOCK_MAX_TTL_MS) why = RLOCK__TXT_IN(rlock__ct_txt, "ttl \1 ms is above RLOCK_MAX_TTL_MS \2");
    else if (t <= (bound = drift)) why = RLOCK__TXT_IN(rlock__ct_txt, "ttl \1 ms is not above the drift allowance \2 ms");
    else if (t <= (bound = timeout)) why = RLOCK__TXT_IN(rlock__ct_txt, "ttl \1 ms is not above node_timeout_ms \2"); /* (0: t > drift >= 2) */
    else return t - drift;
    (void)rlock__why(lk->why, RLOCK__TXT_OUT(rlock__ct_txt, why), ttl, bound);
    return 0;
}

/* (inline: each engine has one caller - measured, 12 B in the general one) */
static RLOCK__INLINE uint32_t rlock__node_timeout(const rlock_lock *lk, uint32_t ttl, rlock__ms now) {
    uint32_t t = lk->client->cfg.node_timeout_ms, third = ttl / 3u;
    rlock__ms left = (rlock__ms)lk->validity_end - now;
    if (!t) {
        /* "Far below the TTL" (the Redlock spec's ratio is ~1/10), but not so
         * small that a busy host times out a healthy loopback node. */
        t = ttl / 10u;
        if (t > 250) t = 250;
        /* (no more than a third of the ttl: ttl / 10 is, and so is 250
         * from 2,510 ms on. A third of 0: a general engine round of no
         * lease. The compact engine's leases are checked ones, an
         * acquire's or extend's, of 3 ms or more: rlock__renew_interval) */
        if (t < 50) t = third >= 50 ? 50 : third > 0 || RLOCK__COMPACT ? third : 1;
    }
    /* An extend sent at now cannot succeed after the validity's end: its
     * wait ends there (LOST), not at a node timeout that outlasts it (a
     * validity gone already wraps "left": the begin or the judge finds it) */
    if (lk->op.kind == RLOCK__OP_EXTEND && left < t) t = left;
    return t;
}

#ifndef RLOCK_NO_PRIMITIVES
/* A number of the inspect answer's text; advances *p past it and a space. */
static int rlock__info_num(const char **p, const char *end, long long *out) {
    const char *q = *p;
    int neg = 0;
    long long v = 0;
    if (q < end && *q == '-') { neg = 1; q++; }
    if (q >= end || *q < '0' || *q > '9') return 0;
    while (q < end && *q >= '0' && *q <= '9' && v < 1000000000000000LL) v = v * 10 + (*q++ - '0');
    while (q < end && *q != ' ') q++; /* a fraction Lua printed (never for these counts) */
    if (q < end) q++;
    *p = q;
    *out = neg ? -v : v;
    return 1;
}
/* "kind pttl holders holds waiters flags readers-waiting owner" -> *info
 * (pure; 0: malformed). */
static int rlock__parse_info(rlock_info *info, const char *s, size_t len) {
    const char *p = s, *end = s + len, *sp = (const char *)memchr(s, ' ', len);
    long long wq = 0;
    size_t k = sp ? (size_t)(sp - s) : 0;
    if (!sp || k == 0 || k >= sizeof info->kind) return 0;
    memcpy(info->kind, s, k);
    info->kind[k] = '\0';
    p = sp + 1;
    if (!rlock__info_num(&p, end, &info->pttl_ms) || !rlock__info_num(&p, end, &info->holders) ||
        !rlock__info_num(&p, end, &info->holds) || !rlock__info_num(&p, end, &info->waiters) ||
        !rlock__info_num(&p, end, &wq) || !rlock__info_num(&p, end, &info->readers_waiting))
        return 0;
    info->writer_waiting = (wq & 1) != 0;
    info->readers_turn = (wq & 2) != 0;
    rlock__copy_text(info->owner, sizeof info->owner, p, (size_t)(end - p));
    return 1;
}
#endif

/* The acquire and the release scripts, as bit masks over RLOCK__S_* (fewer
 * than 32), of the kinds built (the compact engine's: the simple lock's). */
#define RLOCK__S_BIT(s) (1ul << RLOCK__S_##s)
#if !RLOCK__COMPACT
/* 1 when r is a reentrant release - a handle of a kind that is not a token
 * kind: its script says so - whose answer >= 0 is the holds left, any of
 * them a yes (rlock__tally_round; read there, not passed by each caller:
 * 8 B less) */
static RLOCK__INLINE int rlock__counts_holds(const rlock_round *r) {
    return (int)((RLOCK__S_BIT(REENTRANT_RELEASE) | RLOCK__S_BIT(FAIR_REENTRANT_RELEASE) |
                  RLOCK__S_BIT(READ_RELEASE) | RLOCK__S_BIT(WRITE_RELEASE)) >> r->script) & 1;
}
/* Is x an integer r's script can answer (6.4, 6.4b)? An extend's or a
 * release's 1 or 0; a counting release's holds left (>= 0) or -1; a
 * force-unlock's 1, 0 or -1. Any other (rlock__round_store: RLOCK_E_PROTOCOL)
 * is no "not ours", which would end a hold the server may still keep. */
static RLOCK__INLINE int rlock__answer_fits(const rlock_round *r, long long x) {
    int counts = rlock__counts_holds(r), minus_one = counts || r->script == RLOCK__S_FORCE;
    return x >= -minus_one && (x <= 1 || counts);
}
#endif
#define RLOCK__S_KINDS(op)                                                                              \
    (RLOCK__S_BIT(SIMPLE_##op) | (RLOCK__HAS_REENTRANT ? RLOCK__S_BIT(REENTRANT_##op) : 0) |             \
     (RLOCK__HAS_FAIR ? RLOCK__S_BIT(FAIR_##op) | RLOCK__S_BIT(FAIR_REENTRANT_##op) : 0) |               \
     (RLOCK__HAS_PRIMITIVES ? RLOCK__S_BIT(SEM_##op) | RLOCK__S_BIT(READ_##op) | RLOCK__S_BIT(WRITE_##op) | \
                              RLOCK__S_BIT(MULTI_##op) : 0))
typedef char rlock__scripts_fit_mask[RLOCK__S_COUNT <= 32 ? 1 : -1];
#if !RLOCK__COMPACT && !defined(RLOCK_NO_PRIMITIVES) /* (the templates know which script is which; a round its want) */
static int rlock__is_acquire_script(int s) {
    return (int)(RLOCK__S_KINDS(ACQUIRE) >> s) & 1;
}
#endif
#ifndef RLOCK_NO_PRIMITIVES
static int rlock__is_release_script(int s) {
    return (int)(RLOCK__S_KINDS(RELEASE) >> s) & 1;
}
#endif

/* A request being encoded: each argument goes at pos while ok; the first
 * that does not fit clears ok and the rest are skipped (nothing is sent).
 * n counts the arguments, written or not, so a first pass that writes
 * nothing (ok 0) counts them for the header and for numkeys (nkeys). */
typedef struct rlock__enc {
    unsigned char *out;
    size_t cap, pos;
    int ok, n, nkeys;
} rlock__enc;

/* What only a Redis Cluster primary's client does (rlock_client.shard;
 * section 7 sets it): handle the sunsubscribe push of a shard channel whose
 * slot moved away; end a release's (or force-unlock's) arguments with
 * SPUBLISH in ARGV[7]. (ASKING is a template: rlock__enc_tpl.) */
struct rlock__shard_ops {
    void (*moved)(struct rlock_client *c, size_t j, const struct rlock__event *ev);
    void (*spublish)(rlock__enc *e);
};

#if !RLOCK__ENC_TEMPLATE
/* (inline in rlock__encode_lock, its busiest caller: smaller there; a call in
 * the primitives' encoders) */
static RLOCK__INLINE void rlock__enc_arg_in(rlock__enc *e, const char *a, size_t alen) {
    e->n++;
    if (e->ok) e->ok = rlock__put_arg(e->out, e->cap, &e->pos, a, alen);
}
#if !defined(RLOCK_NO_PRIMITIVES) || !defined(RLOCK_NO_CLUSTER) /* (its other callers) */
static void rlock__enc_arg(rlock__enc *e, const char *a, size_t alen) {
    rlock__enc_arg_in(e, a, alen);
}
#endif
#endif
#ifndef RLOCK_NO_PRIMITIVES /* (the multi-lock, inspect and force-unlock requests' writers) */
static void rlock__enc_num(rlock__enc *e, unsigned long long v) { /* v in decimal */
    char num[21];
    rlock__enc_arg(e, num, rlock__utoa(num, (rlock__unum)v));
}
/* lk's auxiliary name with suffix (":waiters", ...). */
static void rlock__enc_aux(rlock__enc *e, const rlock_lock *lk, const char *suffix) {
    e->n++;
    if (e->ok) e->ok = rlock__put_aux(e->out, e->cap, &e->pos, lk, suffix);
}
#endif

#ifndef RLOCK_NO_PRIMITIVES
/* A multi-lock's keys: key[] holds each as a 2-byte big-endian length and
 * its bytes (rlock_multi_init). suffix NULL: the keys; else each key's
 * auxiliary name (rlock_aux_key's) with that suffix, written in place (no
 * copy on the stack). */
static void rlock__enc_multi_keys(rlock__enc *e, const rlock_lock *lk, const char *suffix) {
    size_t at = 0;
    while (at + 2 <= lk->key_len) {
        const char *k = lk->key + at + 2;
        size_t len = ((size_t)(unsigned char)lk->key[at] << 8) | (unsigned char)lk->key[at + 1];
        size_t bl = suffix ? rlock__aux_len(k, len) : 0;
        if (!suffix) rlock__enc_arg(e, k, len);
        else if (e->n++, e->ok) e->ok = bl && rlock__put_aux_of(e->out, e->cap, &e->pos, k, len, bl, suffix, strlen(suffix));
        at += 2 + len;
    }
}

/* How long the readers that waited for a writer get to come in after it
 * leaves, before any writer may enter again: long enough for a woken reader
 * to answer, or for one whose notice was lost to recheck (recheck_ms). */
static uint32_t rlock__readers_turn(const rlock_lock *lk) {
    const rlock_config *cfg = &lk->client->cfg;
    return cfg->recheck_ms > 2u * cfg->backoff_max_ms ? cfg->recheck_ms : 2u * cfg->backoff_max_ms;
}
#endif

#ifndef RLOCK_NO_PRIMITIVES
/* 1 when every key of a multi-lock has a same-slot auxiliary name (no key
 * with a '}' outside a hash tag): its fence counters and wait queues. */
static int rlock__multi_aux(const rlock_lock *lk) {
    size_t at = 0;
    while (at + 2 <= lk->key_len) {
        size_t len = ((size_t)(unsigned char)lk->key[at] << 8) | (unsigned char)lk->key[at + 1];
        if (!rlock__aux_len(lk->key + at + 2, len)) return 0; /* (every name fits rlock_aux_key's buffer) */
        at += 2 + len;
    }
    return 1;
}
/* A multi-lock's request after "EVALSHA sha numkeys" on node i: the keys,
 * then per key its fence counter (acquire with fencing), or its wait queue
 * and deadlines (a release that wakes: from the first node that granted,
 * or any with none known); owner, ttl, key count. */
static void rlock__enc_multi(rlock__enc *e, const rlock_lock *lk, size_t i) {
    const rlock_round *r = &lk->op.round;
    unsigned first = lk->held_mask & (0u - lk->held_mask);
    rlock__enc_multi_keys(e, lk, NULL);
    if (rlock__is_acquire_script(r->script) && RLOCK__FENCING(lk->client)) rlock__enc_multi_keys(e, lk, ":fence");
    if (rlock__is_release_script(r->script) && !r->cleanup && rlock__multi_aux(lk) && (!first || first == 1u << i)) {
        rlock__enc_multi_keys(e, lk, ":waiters");
        rlock__enc_multi_keys(e, lk, ":deadlines");
    }
    e->nkeys = e->n - 3;
    rlock__enc_arg(e, lk->owner, strlen(lk->owner));
    rlock__enc_num(e, (unsigned long long)r->ttl);
    rlock__enc_num(e, (unsigned long long)lk->param);
}
/* The request after "EVALSHA sha numkeys" of what the lock scripts' layout
 * does not fit: a multi-lock's; an inspect's (the key, and its wait queue
 * when it has one); a force-unlock's (key, wait queue, deadlines; ARGV[3]
 * the channel every waiter listens on; Redis Cluster: SPUBLISH in ARGV[7]). */
static void rlock__enc_prim(rlock__enc *e, const rlock_lock *lk, size_t i) {
    int force = lk->op.round.script == RLOCK__S_FORCE, k;
    int aux = lk->aux_base_len > 0 && (RLOCK__REQ_QUEUE || !force) && !RLOCK__SOLO(lk);
    if (lk->kind == RLOCK_KIND_MULTI) { rlock__enc_multi(e, lk, i); return; }
    rlock__enc_arg(e, lk->key, lk->key_len);
    if (aux) rlock__enc_aux(e, lk, ":waiters");
    if (aux && force) rlock__enc_aux(e, lk, ":deadlines");
    e->nkeys = e->n - 3;
    if (!force) return;
    for (k = 0; k < 3; k++)
        if (k == 2 && aux) rlock__enc_aux(e, lk, ":released");
        else rlock__enc_arg(e, "", 0);
    RLOCK__SPUBLISH(lk, e);
}
/* A semaphore acquire's ARGV[6], its permit slot: one node takes the
 * lowest free one (-1); Redlock nodes all judge the same one. */
static void rlock__enc_sem_args(rlock__enc *e, const rlock_lock *lk) {
    if (lk->client->n_nodes == 1) rlock__enc_arg(e, "-1", 2);
    else rlock__enc_num(e, (unsigned long long)lk->slot);
}
#define RLOCK__MULTI_AUX(lk) ((lk)->scripts->multi_aux(lk)) /* (rlock__set_all's) */
#define RLOCK__HANDED_SLOT(lk, d, n) ((lk)->scripts->handed_slot((lk), (d), (n)))
#define RLOCK__SEM_HOP(lk) ((lk)->kind == RLOCK_KIND_SEMAPHORE && (lk)->scripts->sem_hop(lk))
#define RLOCK__SEM_HANDED(lk, slot) \
    do { if ((lk)->kind == RLOCK_KIND_SEMAPHORE) (lk)->scripts->sem_handed((lk), (slot)); } while (0)
#define RLOCK__SEM_WOKEN(lk) ((lk)->scripts->sem_woken(lk))
#else
#define RLOCK__MULTI_AUX(lk) 1
#define RLOCK__HANDED_SLOT(lk, d, n) 1
#define RLOCK__SEM_HOP(lk) 0
#define RLOCK__SEM_HANDED(lk, slot) (void)0
#define RLOCK__SEM_WOKEN(lk) (void)0
#endif

/* How a script goes out: its SHA1, its body, or its function name. */
enum { RLOCK__RUN_EVALSHA, RLOCK__RUN_EVAL, RLOCK__RUN_FCALL,
       /* not the script: the other parts of an attempt (rlock__round_submit's part k is
        * RLOCK__RUN_SETNAME + k, its part 3 the script), each a template of rlock__enc_tpl */
       RLOCK__RUN_SETNAME, RLOCK__RUN_FNLOAD, RLOCK__RUN_ASKING, RLOCK__RUN_SCRIPT_PART, RLOCK__RUN_WAIT };

/* Does a semaphore release hand its permit to lk's queue entry (one node,
 * no fencing: section 6.4b)? The acquire script asks for it by the same
 * signs: ARGV[6] -1 (any slot), no fence key. */
#if !RLOCK__COMPACT && !defined(RLOCK_NO_PRIMITIVES) /* (the compact engine has no primitives) */
static int rlock__sem_handoff(const rlock_lock *lk) {
    return lk->kind == RLOCK_KIND_SEMAPHORE && lk->client->n_nodes == 1 && !RLOCK__FENCING(lk->client);
}
#endif

#if RLOCK__COMPACT
/* The compact engine's templates, in one array (one NUL; passed as offsets,
 * no address each): AUTH's, SELECT's and (RLOCK_SMALLEST) the request's, a
 * script's (the compact engine has no plain SET fast path: every attempt
 * runs the acquire script). RLOCK__C_REQ: lk's request, of
 * RLOCK__C_REQ_ARGC arguments (its template's; the general encoder's: 0). */
#define RLOCK__C_T_AUTH "\4AUTHEF"
#define RLOCK__C_T_SELECT "\6SELECTG"
#define RLOCK__C_T_SCRIPT "\7EVALSHAA\1" "1BCD" /* (last: the array's NUL is its empty ARGV[3]'s length) */
#if RLOCK__ENC_TEMPLATE
/* (a script's arguments end with the empty waiter id / channel, ARGV[3],
 * which the extend script does not read: one template for the three. No
 * wait left, ARGV[4], after it: the scripts read it only with a waiter id,
 * and the simple acquire ARGV[5] only when it is "1" - the general
 * encoder's arguments past ARGV[3], which with nothing queued change
 * nothing) */
static const char rlock__c_tpls[] = RLOCK__C_T_AUTH RLOCK__C_T_SELECT RLOCK__C_T_SCRIPT;
#else
static const char rlock__c_tpls[] = RLOCK__C_T_AUTH RLOCK__C_T_SELECT;
#endif
#define RLOCK__C_AT_AUTH 0u
#define RLOCK__C_AT_SELECT (unsigned)(sizeof RLOCK__C_T_AUTH - 1)
#define RLOCK__C_AT_SCRIPT (RLOCK__C_AT_SELECT + (unsigned)(sizeof RLOCK__C_T_SELECT - 1))
#if RLOCK__ENC_TEMPLATE
#define RLOCK__C_REQ RLOCK__C_AT_SCRIPT
#define RLOCK__C_REQ_ARGC 7
#else
#define RLOCK__C_REQ 0xffu
#define RLOCK__C_REQ_ARGC 0
#endif
/* A request from the template at rlock__c_tpls + at, of its argc arguments,
 * into out[pos..cap): the index after it, 0 when it does not fit (what was
 * past pos may be written then). Each is a literal (its length
 * byte, then its bytes) or a letter spliced in (A..G: one short jump
 * table) - of lk: A the script's SHA1 (templates only), B the key, C the
 * token, D the ttl; of n (AUTH / SELECT): E the user name (none: the
 * password; AUTH's argc is then 2), F the password, G the database. */
static size_t rlock__c_tpl(const rlock_node *n, const rlock_lock *lk, unsigned at, int argc, unsigned char *out,
                           size_t cap, size_t pos) {
    size_t len;
    const char *a, *t;
    char num[41]; /* (a number, or a SHA1 in hex) */
    t = rlock__c_tpls + at;
    a = NULL; /* the array's header first (rlock__put_header), then each argument */
    len = (size_t)argc;
    for (;; t++) {
        if (!rlock__put_len(out, cap, &pos, a, len)) return 0;
        if (argc-- == 0) return pos; /* (argc: the arguments left to write) */
        a = num;
        switch (*t) {
#if RLOCK__ENC_TEMPLATE
        case 'A': rlock__hex(num, rlock__sha_bin[lk->op.round.script], 20), len = 40; break;
#endif
        case 'B': a = lk->key; len = lk->key_len; break;
        case 'C': a = lk->owner; len = RLOCK_TOKEN_LEN; break; /* (a simple lock's owner: its token) */
        case 'D': len = rlock__utoa(num, lk->op.ttl); break;
        case 'E': a = n->username ? n->username : n->password; len = strlen(a); break; /* (AUTH password: argc 2) */
        case 'F': a = n->password; len = strlen(a); break;
        case 'G': len = rlock__utoa(num, (rlock__unum)n->db); break;
        default: a = t + 1; len = (size_t)*t; t += len;
        }
    }
}
#endif
#if RLOCK__ENC_TEMPLATE
/* The compact engine's requests without the wait queue and the EVAL
 * fallback (RLOCK_SMALLEST): the bytes the general encoder would write, from
 * its template (rlock__c_tpl; always EVALSHA: i and how are not read). */
#define rlock__encode_lock(lk, i, out, cap, how) rlock__c_tpl(NULL, (lk), RLOCK__C_REQ, RLOCK__C_REQ_ARGC, (out), (cap), 0)
#else
static int rlock__token_kind(rlock_kind k);
/* The arguments of each lock script after "numkeys", by RLOCK__S_* below
 * RLOCK__S_MULTI_ACQUIRE (data, not code: what a script's kind decides is
 * in its template). Each letter is one argument, or none when its
 * condition fails (letters A..S: one small jump table):
 *   A the key;  B, C, D its wait queue, deadlines, fence counter (when the
 *   key has auxiliary names; D with fencing);  E the keys end here;
 *   F the owner;  G the ttl;  H the waiter id when the attempt queues, else
 *   "";  I the wait left;  J "1" when an earlier attempt queued (else none);
 *   K (barging: from the wake nodes) and L (fair: every node) the release
 *   channel, or "";  M a fair release's grace;  N the waiter id to unqueue,
 *   or "";  O ARGV[5] (a semaphore's permits, a writer's hold-off);  P a
 *   semaphore's slot;  Q the readers' turn;  R the handle's id naming its
 *   records;  S Redis Cluster's SPUBLISH.
 * Every template's head: T the command (EVALSHA, EVAL, FCALL), U the
 * script (its SHA1, body or function name), V numkeys; W a primitive's
 * whole request after it (rlock__enc_prim). The other parts' letters:
 * X, Y WAIT's replicas and timeout; Z FUNCTION LOAD's library.
 * Below 'A', a literal: its length, then its bytes (the plain SET NX PX). */
/* A template of a feature that may be compiled out: has is its
 * RLOCK__HAS_* (0 or 1); 0 leaves "" in the template's place (its kinds and
 * parts are never encoded, and their text is not linked). */
#define RLOCK__TPL(has, t) RLOCK__TPL_(has, t)
#define RLOCK__TPL_(has, t) RLOCK__TPL_##has(t)
#define RLOCK__TPL_0(t) ""
#define RLOCK__TPL_1(t) t
#define RLOCK__TPL_RE(t) RLOCK__TPL(RLOCK__HAS_REENTRANT, t)
#define RLOCK__TPL_FAIR(t) RLOCK__TPL(RLOCK__HAS_FAIR, t)
#define RLOCK__TPL_PRIM(t) RLOCK__TPL(RLOCK__HAS_PRIMITIVES, t)
#if RLOCK__COMPACT /* (the plain SET NX PX fast path: the general engine's) */
#define RLOCK__HAS_PLAIN 0
#else
#define RLOCK__HAS_PLAIN 1
#endif
static const char *const rlock__enc_tpl[] = {
    /* simple, reentrant */
    "TUVABCDEFGHIJ", "TUVAEFG", "TUVABCEFGKNS",
    RLOCK__TPL_RE("TUVABCDEFGHIR"), RLOCK__TPL_RE("TUVAEFGR"), RLOCK__TPL_RE("TUVABCEFGKNRS"),
    /* fair, fair reentrant */
    RLOCK__TPL_FAIR("TUVABDEFGHI"), RLOCK__TPL_FAIR("TUVABEFGLMNS"),
    RLOCK__TPL_FAIR(RLOCK__TPL_RE("TUVABDEFGHIR")), RLOCK__TPL_FAIR(RLOCK__TPL_RE("TUVABEFGLMNRS")),
    /* semaphore, read, write; multi, inspect, force */
    RLOCK__TPL_PRIM("TUVABCDEFGHIOP"), RLOCK__TPL_PRIM("TUVAEFG"), RLOCK__TPL_PRIM("TUVABCEFGKNS"),
    RLOCK__TPL_PRIM("TUVABCDEFGHIR"), RLOCK__TPL_PRIM("TUVAEFGR"), RLOCK__TPL_PRIM("TUVABCEFGKNRS"),
    RLOCK__TPL_PRIM("TUVABCDEFGHIOR"), RLOCK__TPL_PRIM("TUVAEFGR"), RLOCK__TPL_PRIM("TUVABCEFGKNQRS"),
    RLOCK__TPL_PRIM("TUVW"), RLOCK__TPL_PRIM("TUVW"), RLOCK__TPL_PRIM("TUVW"), RLOCK__TPL_PRIM("TUVW"),
    RLOCK__TPL_PRIM("TUVW"),
    /* the plain acquire (none in the compact engine: no fast path) */
    RLOCK__TPL(RLOCK__HAS_PLAIN, "\3SETAF\2NX\2PXG"),
    /* the other parts, by RLOCK__RUN_* from RLOCK__RUN_SETNAME (see rlock__round_submit). CLIENT
     * SETNAME rlock-VERSION (a literal, "\22": 18 bytes): said before a connection's first FCALL, so
     * that version's libraries are not deleted under it. NOLINTNEXTLINE(bugprone-suspicious-missing-comma) */
    RLOCK__TPL(RLOCK__HAS_FCALL, "\6CLIENT\7SETNAME\22rlock-" RLOCK__FN_VERSION),
    RLOCK__TPL(RLOCK__HAS_FCALL, "\10FUNCTION\4LOAD\7REPLACEZ"),
    RLOCK__TPL(RLOCK__HAS_CLUSTER, "\6ASKING"), "", RLOCK__TPL(RLOCK__HAS_REPLICAS, "\4WAITXY")
};
/* one template per script, then the plain acquire and the five parts: a script added needs its own */
typedef char rlock__enc_setname_fits[6 + RLOCK__FN_VER == 18 ? 1 : -1]; /* (SETNAME's literal length) */
typedef char rlock__enc_tpl_fits[sizeof rlock__enc_tpl / sizeof rlock__enc_tpl[0] == RLOCK__S_COUNT + 6 ? 1 : -1];
/* Encode the lock's script for its current round on node i (`how`: RLOCK__RUN_*) into out; its length, or 0 when
 * it does not fit. Two passes over its template: the first counts the arguments (header, numkeys), writing nothing
 * (e.ok 0); what does not depend on the pass is done once. */
#if RLOCK__COMPACT /* (in rlock__c_cmd, its one caller there: smaller, and less stack) */
#define RLOCK__ENCODE_LOCK RLOCK__INLINE
#define RLOCK__R_PLAIN(r) 0 /* (no fast path in the compact engine) */
#else /* (inline in rlock__round_submit: larger) */
#define RLOCK__ENCODE_LOCK RLOCK__NOINLINE
#define RLOCK__R_PLAIN(r) ((r)->want == 2) /* (a plain SET NX PX: the round's want) */
#endif
static RLOCK__ENCODE_LOCK size_t rlock__encode_lock(const rlock_lock *lk, size_t i, unsigned char *out, size_t cap,
                                                    int how) {
    const rlock_op *op = &lk->op;
    const rlock_round *r = &op->round;
    int s = r->script, aux = RLOCK__REQ_QUEUE && lk->aux_base_len > 0 && !RLOCK__SOLO(lk), c = r->cleanup;
    static const char *const cmd[3] = { "EVALSHA", "EVAL", "FCALL" };
    char fn[RLOCK__FN_LEN + 1], num[21];
    const char *t0, *t, *a;
    size_t len;
    rlock__enc e0, *e = &e0;
    /* the uncontended fast path: what a raw client would send */
    t0 = rlock__enc_tpl[how >= RLOCK__RUN_SETNAME ? RLOCK__S_COUNT + 1 + how - RLOCK__RUN_SETNAME
                        : RLOCK__R_PLAIN(r) ? RLOCK__S_COUNT : s];
    /* FCALL, SETNAME and LOAD need the function's name (ASKING and WAIT take it too: one test) */
#if RLOCK__HAS_FCALL /* (rlock__function_name's, by rlock__fill: smaller; never in the compact engine) */
    if (how >= RLOCK__RUN_FCALL) /* (its NUL as \2: no store at the returned length) */
        (void)rlock__fill(fn, sizeof fn, 0, "rlock_" RLOCK__FN_VERSION "_\1\2", lk->scripts->sha[s], RLOCK__FN_HEX,
                          "", 1);
#endif
    memset(e, 0, sizeof *e);
    for (;;) {
        for (t = t0; *t; t++) {
            a = num;
            len = 0;
            switch (*t) {
            case 'T': a = cmd[how]; len = strlen(a); break;
            case 'U': /* the script: its SHA1, its body, or its function's name */
                a = how == RLOCK__RUN_FCALL ? fn : how == RLOCK__RUN_EVAL ? lk->scripts->text[s] : lk->scripts->sha[s];
                len = strlen(a);
                break;
            case 'V': len = rlock__utoa(num, (rlock__unum)e->nkeys); break;
#ifndef RLOCK_NO_PRIMITIVES
            case 'W': lk->scripts->enc_prim(e, lk, i); goto done; /* (rlock__set_all's: the whole request) */
#endif
            case 'A': a = lk->key; len = lk->key_len; break;
            case 'B': a = ":waiters"; goto aux;
            case 'C': a = ":deadlines"; goto aux;
            case 'D': if (!RLOCK__FENCING(lk->client)) continue;
                      a = ":fence"; goto aux;
            case 'E': e->nkeys = e->n - 3; /* (the ARGV start after the command, script, numkeys and keys: nkeys + 3) */
                      continue;
            case 'F': a = lk->owner; len = strlen(a); break; /* (NUL-terminated: rlock_lock.owner) */
            case 'G': len = rlock__utoa(num, r->ttl); break;
            /* ARGV[3], the waiter id: queue on a refusal, dequeue on a grant.
             * Also sent once this acquisition queued, even if this attempt
             * would not (its subscription lost): a grant must take the entry
             * out, or a release would wake it instead of a live waiter. */
            case 'H': a = lk->waiter_id; len = (size_t)((op->queue || lk->queued) && RLOCK__REQ_QUEUE) << 4; break;
            case 'I': len = rlock__utoa(num, op->wait_left); break;
            /* ARGV[5] = '1': an earlier attempt queued (a grant dequeues).
             * Absent otherwise: the request stays at 10 elements, and a server
             * answers an unauthenticated client's longer multibulk with a
             * protocol error, not NOAUTH. */
            case 'J': if (!RLOCK__REQ_QUEUE || !lk->queued) continue;
                      a = "1"; len = 1; break;
            /* A cleanup after a failed round removes only our own partial grant:
             * no real release, so it wakes no waiter and hands nothing off (that
             * churned split votes). A barging lock's release on Redlock wakes from
             * the nodes rlock__wake_nodes chose (K). A fair release wakes on every
             * node (L): each node's reservation is a vote for its waiter. */
            case 'K': if (!(r->wake >> i & 1u)) break;
                      /* fall through */
            case 'L': if (c) break;
                      a = ":released";
            aux:      if (!aux) { if (*t < 'K') continue; a = ""; break; } /* (a channel: "" in its place) */
                      e->n++;
                      if (e->ok) e->ok = rlock__put_aux(e->out, e->cap, &e->pos, lk, a);
                      continue;
            case 'M': len = rlock__utoa(num, c ? 0u : RLOCK__FAIR(lk)); break;
            /* (queued implies aux names: a lock queues only when fair or
             * subscribed, and both need them - rlock_lock_set_fair, rlock__wait_next) */
            case 'N': a = lk->waiter_id; len = RLOCK__REQ_QUEUE && lk->queued && lk->client->n_nodes > 1 ? 16 : 0; break;
#ifndef RLOCK_NO_PRIMITIVES
            case 'O': len = rlock__utoa(num, op->arg5); break;
            case 'P': lk->scripts->enc_sem_args(e, lk); continue; /* (rlock__set_all's) */
            case 'Q': len = rlock__utoa(num, c ? 0u : rlock__readers_turn(lk)); break;
#endif
            /* The handle's id naming its grants' records (RLOCK__LUA_RECORD);
             * a cleanup's carries the NUL after it: it undoes only a recorded grant */
            case 'R': a = lk->waiter_id; len = 16u + (unsigned)c; break;
            case 'S': RLOCK__SPUBLISH(lk, e); continue; /* notices by SPUBLISH, named in ARGV[7] */
#if RLOCK__HAS_REPLICAS /* (WAIT's template is "" without: the compact engine's round has no timeout) */
            case 'X': len = rlock__utoa(num, lk->client->cfg.replicas); break;
            /* WAIT's timeout stays inside the round's, so a missing replica
             * cannot turn into a node timeout (and a dropped connection). */
            case 'Y': {
                uint32_t w = lk->client->cfg.replica_timeout_ms ? lk->client->cfg.replica_timeout_ms : r->timeout / 2;
                /* (WAIT n 0 would block for ever: 0 only when the timeout is 1) */
                if (w == 0 || w >= r->timeout) w = r->timeout > 1 ? r->timeout - 1 : 1;
                len = rlock__utoa(num, w);
                break;
            }
#endif
#if RLOCK__HAS_FCALL
            /* FUNCTION LOAD REPLACE's library: script s's body unchanged inside
             * function(KEYS,ARGV), so FCALL and EVAL run the same code. */
            case 'Z': {
                /* \1 the function's name, \2 the script; then the argument's
                 * CRLF: rlock__fill writes it with the rest (put_bulk checked
                 * that all of it fits) */
                static const char lib[] = "#!lua name=\1\nredis.register_function('\1',function(KEYS,ARGV) \2 end)\r\n";
                const char *body = lk->scripts->text[s];
                size_t blen = strlen(body);
                e->n++;
                if (e->ok && (e->ok = rlock__put_bulk(e->out, e->cap, &e->pos, /* (its bytes fit too) */
                                                      sizeof lib - 6 + RLOCK__FN_LEN + RLOCK__FN_LEN + blen)) != 0)
                    e->pos = rlock__fill((char *)e->out, e->cap, e->pos, lib, fn, RLOCK__FN_LEN, body, blen);
                continue;
            }
#endif
            default: a = t + 1; len = (size_t)*t; t += len; /* a literal */
            }
            rlock__enc_arg_in(e, a, len);
        }
#ifndef RLOCK_NO_PRIMITIVES
    done:
#endif
        if (e->out) return e->ok ? e->pos : 0;
        e->out = out;
        e->cap = cap;
        e->ok = rlock__put_header(out, cap, &e->pos, e->n);
        e->n = 0;
    }
}
#endif

#if !RLOCK__COMPACT /* (the compact engine's locks are simple: rlock__c_ops_are_scripts) */
static RLOCK__NOINLINE int rlock__script_for(const rlock_lock *lk, int op) {
    /* each kind's acquire script; its extend and release follow it */
    static const unsigned char acquire[] = { 0, RLOCK__S_SIMPLE_ACQUIRE, RLOCK__S_REENTRANT_ACQUIRE, RLOCK__S_SEM_ACQUIRE,
                                             RLOCK__S_READ_ACQUIRE, RLOCK__S_WRITE_ACQUIRE, RLOCK__S_MULTI_ACQUIRE };
    if (op >= RLOCK__OP_INSPECT) return RLOCK__S_INSPECT + (op - RLOCK__OP_INSPECT); /* (then FORCE) */
    /* a fair lock (simple or reentrant: rlock_lock_set_fair) extends like a barging one */
    if (RLOCK__FAIR(lk) && op != RLOCK__OP_EXTEND)
        return RLOCK__S_FAIR_ACQUIRE + 2 * ((int)lk->kind - (int)RLOCK_KIND_SIMPLE) + (op == RLOCK__OP_RELEASE);
    return acquire[lk->kind] + (op - RLOCK__OP_ACQUIRE);
}
typedef char rlock__fair_scripts[RLOCK__S_FAIR_REENTRANT_ACQUIRE == RLOCK__S_FAIR_ACQUIRE + 2 &&
                                 RLOCK_KIND_REENTRANT == RLOCK_KIND_SIMPLE + 1 ? 1 : -1];
#endif

#if !RLOCK__COMPACT
static RLOCK__INLINE int rlock__round_wants_array(const rlock_round *r) {
    return r->want; /* (rlock__round_begin's: an acquire's script is an acquire script) */
}
#endif

/* Kinds whose grant is a fresh random token per acquire (not reentrant). */
static int rlock__token_kind(rlock_kind k) {
    /* without reentrant locks and primitives a lock can only be SIMPLE: folded */
    return (!RLOCK__HAS_REENTRANT && !RLOCK__HAS_PRIMITIVES) || k == RLOCK_KIND_SIMPLE || k == RLOCK_KIND_SEMAPHORE ||
           k == RLOCK_KIND_MULTI;
}

#if !RLOCK__COMPACT /* the general engine's rounds and op machine (the compact engine's: 6.8c) */
#ifndef RLOCK_NO_PRIMITIVES
/* Node i's answer to an inspect round (rlock__set_all's): the text answer
 * is read into the caller's rlock_info here (it points into the receive
 * buffer); the round keeps a plain 1. Any other answer is of the wrong
 * shape. */
static int rlock__inspect_store(rlock_lock *lk, size_t i, int st, const rlock_reply *rep) {
    rlock_round *r = &lk->op.round;
    int ok = 0, e;
    if (st == RLOCK_OK && rep && rep->v.type != RLOCK_RESP_ERROR) {
        ok = rep->v.type == RLOCK_RESP_BULK && rlock__parse_info(&lk->op.info[i], rep->v.str, rep->v.len);
        if (!ok) st = RLOCK_E_PROTOCOL;
        rep = NULL;
    }
    e = rlock__round_store(r, i, st, rep); /* (the inspect script's: a single integer) */
    if (ok) r->v[i][0] = 1;
    lk->op.info[i].st = (rlock_status)(e & 31);
    return e;
}
/* A primitive's handle's answer (rlock__set_all's store): an inspect's
 * (only an inspect sets op.info), else as a lock's. */
static int rlock__all_store(rlock_lock *lk, size_t i, int st, const rlock_reply *rep) {
    return lk->op.info ? rlock__inspect_store(lk, i, st, rep) : rlock__round_store(&lk->op.round, i, st, rep);
}
/* A lock's answer (rlock__set_lock's and _fair's store). */
static int rlock__lock_store(rlock_lock *lk, size_t i, int st, const rlock_reply *rep) {
    return rlock__round_store(&lk->op.round, i, st, rep);
}
#endif

/* Record node i's answer; note it (why: its text unless rep is an error,
 * never NULL) for rlock_node_status unless this is a cleanup (which must
 * not erase why the round before it failed). A reply, rep, comes with st
 * its error scan (rlock__error_scan's, which rlock__op_reply needed first:
 * one scan; RLOCK_OK, 0, when it is no error; an int, not an rlock_status:
 * its flag words are above the enum's values, which a short enum - the
 * arm-none-eabi default - does not hold); a failure (st an error: a
 * dropped connection's is never RLOCK_OK) with none. */
static void rlock__round_answer(rlock_lock *lk, size_t i, int st, const rlock_reply *rep, const char *why) {
    /* what was asked, by op kind (a cleanup is a release) */
    static const char *const asked[] = { "", "unexpected reply to acquire", "unexpected reply to extend",
                                         "unexpected reply to release", RLOCK__PRIM("unexpected reply to inspect"),
                                         RLOCK__PRIM("unexpected reply to force-unlock") };
    rlock_round *r = &lk->op.round;
    rlock_node *n = lk->client->nodes[i];
    rlock_status kept, drop = RLOCK_OK;
    int e; /* the status kept, and an error reply's flag words (rlock__error_scan) */
    /* A release (or cleanup) that went unanswered may reach the server
     * late, on another connection, and take away a later hold of the owner
     * id it carried: a reentrant or read/write handle's next holds take
     * random owner ids (rlock_acquire_begin; token kinds always do). */
    if (!rep && (r->cleanup || lk->op.kind == RLOCK__OP_RELEASE)) lk->stale = 1;
#ifndef RLOCK_NO_PRIMITIVES
    e = lk->scripts->store(lk, i, st, rep); /* (an inspect's: rlock__set_all's) */
#else
    e = rlock__round_store(r, i, st, rep);
#endif
    kept = (rlock_status)(e & 31);
    if (kept == RLOCK_E_PROTOCOL && rep) { /* (a reply that is no error: an error maps to no E_PROTOCOL) */
        /* A well-formed reply of the wrong shape: the server is not
         * answering what we asked, so its stream is not trusted either. */
        why = asked[r->cleanup ? RLOCK__OP_RELEASE : lk->op.kind];
        drop = RLOCK_E_PROTOCOL;
    } else if (e & RLOCK__C_W_READONLY) {
        /* A primary demoted under us (failover): the next request connects
         * again, and a transport that finds the primary (Sentinel) asks anew.
         * (The node's diagnostic below is the error's own text.) */
        why = "READONLY: the server is a replica now";
        drop = RLOCK_E_REDIS;
    }
    if (drop != RLOCK_OK) rlock__x_drop(rlock__x_node(n), drop, why);
    if (r->cleanup) return;
    if (rep && rep->v.type == RLOCK_RESP_ERROR) rlock__node_note(n, kept, rep->v.str, rep->v.len);
    else rlock__node_notez(n, kept, kept == RLOCK_E_FOREIGN ? "key exists without a TTL" : why); /* (never an error) */
}

/* Hand node i its request for the current round, if it has room now. */
static void rlock__round_submit(rlock_lock *lk, size_t i) {
    rlock_round *r = &lk->op.round;
    rlock_node *nd = lk->client->nodes[i];
    rlock__x *n = rlock__x_node(nd);
    size_t len, tx_len;
    unsigned count;
    const char *why;
    rlock__ms deadline = r->start + r->timeout; /* one timeout for the round, EVAL fallback included */
    int fcall = RLOCK__HAS_FCALL && nd->fcall; /* (configured: set by rlock_client_init) */
    int again = RLOCK__HAS_EVAL && ((r->evaled >> i) & 1u);
    int wait = RLOCK__REPLICAS(lk->client) && rlock__round_wants_array(r); /* (an acquire's: never a cleanup) */
    int k, keep;
    unsigned want;
    rlock_status st;
    /* (The round's time may have run out before its request could go - it
     * waited for room in a full pipeline, or a NOSCRIPT came late: queued,
     * it fails alone, unsent, at the exchange's next step - rlock__x_next.) */
    st = rlock__x_begin(n, deadline, &why);
    if (st == RLOCK_WOULD_BLOCK) return; /* the connection is full: next step */
    if (st != RLOCK_OK) { rlock__round_answer(lk, i, st, NULL, why); return; }
    /* Everything this attempt needs goes in one write, or nothing does:
     * the parts (bit k of want) are [CLIENT SETNAME] [FUNCTION LOAD]
     * [ASKING] script [WAIT]. SETNAME (reply not waited for) goes before a
     * connection's first FCALL: it says which version's libraries this
     * client runs; no room for it as well, a later attempt says it. A
     * missing function's library is loaded before the FCALL (its reply is
     * not waited for: the FCALL behind it tells). ASKING (cluster: the slot
     * is being imported there) goes right before the script: it holds for
     * the next command only, and a FUNCTION LOAD between them took it (the
     * FCALL then got MOVED back to the source). WAIT follows the script
     * (cfg.replicas), one round trip in all. */
    want = (unsigned)RLOCK__ASKING(lk) << 2 | 1u << 3 | (unsigned)wait << 4;
    if (fcall) want |= (unsigned)(r->want != 2 && nd->fn_named != (unsigned short)n->gen) | (unsigned)again << 1;
    if (n->count + rlock__popcount(want) > RLOCK_MAX_PIPELINE) return;
    count = n->count;
    tx_len = n->tx_len;
    /* A cleanup's script is never taken back unsent: past its time it goes, late (or the
     * connection drops first, as before - the grant it undoes then expires by its TTL); fuzz_lock
     * found one failed unsent with the connection kept and nothing noted. A flag, not its length
     * hidden (as RESP3 [UN]SUBSCRIBE's bytes once were): the walk past it still takes back another
     * lock's request in front of it, unsent and past its time (fuzz_locks found one sent late so,
     * which then dropped the connection). */
    keep = RLOCK__TAG_LOCK | r->cleanup * RLOCK__X_KEEP; /* (cleanup 0 or 1) */
    for (;; want &= ~1u) {
        for (k = 0; k < 5; k++) { /* part k: RLOCK__RUN_SETNAME + k, the script at 3; its reply is lk's from 3 */
            if (!((want >> k) & 1u)) continue;
            len = rlock__encode_lock(lk, i, n->tx + n->tx_len, n->tx_cap - n->tx_len,
                                     k != 3 ? RLOCK__RUN_SETNAME + k : fcall ? RLOCK__RUN_FCALL
                                                                      : again ? RLOCK__RUN_EVAL : RLOCK__RUN_EVALSHA);
            if (!len) break; /* it does not fit */
            rlock__x_commit(n, len, k < 3 ? NULL : lk,
                            (k == 4 ? RLOCK__TAG_WAIT : k == 3 ? keep : RLOCK__TAG_LOCK) |
                                (n->count > count ? RLOCK__X_JOINED : 0),
                            deadline);
        }
        if (k == 5) break;
        rlock__x_uncommit(n, count, tx_len);
        if (!(want & 1u)) { /* (else again, without SETNAME) */
            if (n->tx_len > 0 || n->count > 0) return; /* others' requests first, then it may fit */
            rlock__round_answer(lk, i, RLOCK_E_BADARG, NULL, "command does not fit in RLOCK_TX_BUF");
            return;
        }
    }
    if (want & 1u) nd->fn_named = (unsigned short)n->gen;
    if (wait) {
        r->short_acks &= ~(1u << i); /* only this attempt's WAIT counts */
        r->stale_wait |= r->acking & 1u << i; /* the first script's WAIT is still due */
        r->acking |= 1u << i;
    }
    r->queued |= 1u << i;
}

static void rlock__round_send(rlock_lock *lk) {
    rlock_round *r = &lk->op.round;
    size_t i;
    for (i = 0; i < lk->client->n_nodes; i++)
        if (((r->mask & ~r->queued & ~r->answered) >> i) & 1u) rlock__round_submit(lk, i);
}

/* Which nodes a barging lock's release wakes a waiter from. One node: it.
 * Redlock: each node would wake the head of its own queue, and different
 * waiters woken at once split the votes; but one designated node that is
 * down wakes nobody and every waiter sleeps until its re-check. So two of
 * the nodes that granted, those with a live connection first: their queues
 * are ordered by the same deadlines, so both mostly wake the same waiter
 * (and a waiter woken by any node retries on all); one of them down, the
 * other still wakes. (Out of line: its one caller, rlock__round_begin,
 * is 10 B smaller so - measured.) */
static RLOCK__NOINLINE unsigned rlock__wake_nodes(const rlock_lock *lk) {
    const rlock_client *c = lk->client;
    unsigned held = lk->held_mask ? lk->held_mask : RLOCK__ALL_NODES(c->n_nodes), up = 0, wake = 0, m;
    size_t i;
    for (i = 0; i < c->n_nodes; i++)
        if (c->nodes[i]->x.conn == RLOCK__CONN_UP) up |= 1u << i;
    for (i = 0; i < 2; i++) { /* the lowest-numbered held node left, a live one if any */
        m = held & up & ~wake ? held & up & ~wake : held & ~wake;
        wake |= m & (0u - m);
    }
    return wake;
}

/* Send the script for `op` to every node (or a cleanup's release to those in mask `cleanup`: the lease
 * held by a re-entry, else the op's), all before any reply is read: one round trip of the slowest node. */
static void rlock__round_begin(rlock_lock *lk, int op, unsigned cleanup, rlock__ms now) {
    rlock_round *r = &lk->op.round;
    unsigned mask = cleanup ? cleanup : RLOCK__ALL_NODES(lk->client->n_nodes);
    uint32_t ttl = cleanup && lk->state == RLOCK_STATE_HELD ? lk->ttl_ms : lk->op.ttl;
    size_t i;
    memset(r, 0, offsetof(rlock_round, v)); /* (the answers are written as they come) */
    r->mask = mask;
    r->script = rlock__script_for(lk, op);
    if (op == RLOCK__OP_ACQUIRE) r->want = 1 + lk->op.plain; /* (plain 0 or 1 here: rlock__acquire_next_round; else 0 from the memset) */
    r->cleanup = cleanup != 0;
    /* wake nodes matter only where a release names the channel (RLOCK__REQ_QUEUE); one node wakes itself */
    if (RLOCK__REQ_QUEUE && op == RLOCK__OP_RELEASE && !cleanup) /* (else 0 from the memset) */
        r->wake = RLOCK_MAX_NODES == 1 ? 1u : rlock__wake_nodes(lk);
    r->start = now;
    r->timeout = rlock__node_timeout(lk, ttl, r->start);
    r->ttl = ttl;
    /* (each node's request goes out as it is reached: what one node's
     * submit does touches that node alone) */
    for (i = 0; i < lk->client->n_nodes; i++) {
        r->st[i] = RLOCK_WOULD_BLOCK;
        if (!((mask >> i) & 1u)) continue;
        if (!cleanup) rlock__node_clear(lk->client->nodes[i], RLOCK_WOULD_BLOCK);
        rlock__round_submit(lk, i);
    }
}

static int rlock__round_done(const rlock_round *r) {
    return !(r->mask & (~r->answered | r->acking)); /* every node answered, no WAIT reply due */
}

/* The WAIT reply (or failure) behind node i's acquire script. A failure
 * counts as no acknowledgement. It is always the current round's, due
 * (acking): a round ends only with every WAIT of it answered
 * (rlock__round_done), and an op's end disowns what it left in flight
 * (rlock__op_finish) - no test of its own. */
static void rlock__op_wait_reply(rlock_lock *lk, size_t i, const rlock__event *ev) {
    rlock_round *r = &lk->op.round;
    int32_t got, fewest = (int32_t)((uint32_t)r->acks - 1u); /* (WAIT counts replicas: < 2^31; none: -1) */
    if ((r->stale_wait >> i) & 1u) { r->stale_wait &= ~(1u << i); return; }
    r->acking &= ~(1u << i);
    got = ev->kind == RLOCK__EV_REPLY && ev->reply.v.type == RLOCK_RESP_INTEGER ? (int32_t)ev->reply.v.integer : 0;
    if ((long long)got < (long long)lk->client->cfg.replicas) r->short_acks |= 1u << i;
    if (fewest < 0 || got < fewest) r->acks = (int32_t)((uint32_t)got + 1u);
}

/* A reply or failure for lk's round from node i. */
static void rlock__op_reply(rlock_lock *lk, size_t i, const rlock__event *ev) {
    rlock_round *r = &lk->op.round;
    const rlock_reply *rep = &ev->reply;
    rlock_node *nd = lk->client->nodes[i];
    int again = 0, noperm, missing, e;
    /* not this round's (queued: only nodes in its mask, rlock__round_submit's callers) */
    if (!((r->queued & ~r->answered) >> i & 1u)) return;
    if (ev->kind == RLOCK__EV_FAIL) {
        if (ev->ps) { /* it never went out: it never ran (no cleanup), nor its CLIENT SETNAME, if any */
            r->queued &= ~(1u << i);
            if (RLOCK__HAS_FCALL) nd->fn_named = (unsigned short)(nd->x.gen - 1u);
        }
        rlock__round_answer(lk, i, ev->st, NULL, ev->why);
        return;
    }
    e = rep->v.type == RLOCK_RESP_ERROR ? rlock__error_scan(rep->v.str, rep->v.len) : 0;
    noperm = e & RLOCK__C_W_NOPERM;
    /* 1 NOSCRIPT, 2 (FCALL) no such function; with the fallback either, one test (12 B less) */
    missing = RLOCK__HAS_EVAL ? e & (RLOCK__C_W_NOSCRIPT | (RLOCK__HAS_FCALL ? RLOCK__C_W_NOFUNC : 0))
                              : e & RLOCK__C_W_NOSCRIPT ? 1 : RLOCK__HAS_FCALL && (e & RLOCK__C_W_NOFUNC) ? 2 : 0;
    if (!RLOCK__HAS_EVAL && missing) {
        /* Built without the scripts' text: they must be on the server (the
         * texts are rlock_script_text's of a build with the fallback). The
         * words fit RLOCK_SMALLEST's 64-byte RLOCK_ERR_LEN. */
        rlock__round_answer(lk, i, RLOCK_E_REDIS, NULL,
                            missing == 1 ? "scripts not loaded: SCRIPT LOAD them (RLOCK_NO_EVAL_FALLBACK)"
                                         : "no function: FUNCTION LOAD it (RLOCK_NO_EVAL_FALLBACK)");
        return;
    }
    if (missing && !((r->evaled >> i) & 1u)) {
        /* The server lost its script cache (restart, SCRIPT FLUSH): send the
         * body once with EVAL, which also caches it for the next EVALSHA.
         * FCALL of a library the server does not have: load it, once. */
        r->evaled |= 1u << i;
        again = 1;
    } else if (RLOCK__HAS_FCALL && noperm && !nd->fcall && lk->client->cfg.scripts == RLOCK_SCRIPTS_AUTO &&
               (e & RLOCK__C_W_EVAL)) { /* 'eval' or 'evalsha' (the only eval* sent) */
        /* The ACL refuses scripts (a managed service): the same code as a
         * function, on this node from now on. Nothing ran, so it is safe. */
        nd->fcall = 1;
        r->evaled &= ~(1u << i);
        again = 1;
    }
    if (again) {
        r->queued &= ~(1u << i);
        rlock__round_submit(lk, i);
        return;
    }
    if (r->want != 2) /* a script ran, or was refused for good (FCALL too): the fast path follows suit */
        nd->scripted = (unsigned char)!noperm;
    rlock__round_answer(lk, i, e, rep, "");
}

#endif /* !RLOCK__COMPACT */

/* A held lock turned out lost: record it and tell the holder once. */
static void rlock__mark_lost(rlock_lock *lk) {
    /* (a renewal's extend that found it lost stays rlock_renew_poll's to
     * collect - op.renewing kept - also when another call's client step read
     * the refusal: cleared here, the poll said E_STATE for ever) */
    lk->state = RLOCK_STATE_LOST;
    if (!lk->lost_notified) {
        lk->lost_notified = 1;
        if (lk->client->cfg.on_lost) lk->client->cfg.on_lost(lk, lk->client->cfg.hook_user);
    }
}

/* Jitter (and a semaphore's first slot) only, never tokens: xorshift32
 * over the seed drawn at acquire (never 0: rlock_acquire_begin, rlock__c_round); both
 * engines (32 bits: no 64-bit multiply). */
static uint32_t rlock__prng32(rlock_lock *lk) {
    uint32_t x = lk->prng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    lk->prng = x;
    return x;
}

#if !RLOCK__COMPACT

/* ---- waiting on release notices (RESP2 subscriber connections) ---- */

/* Is chan (a pushed message's channel) this lock's release channel? */
static int rlock__is_my_chan(const rlock_lock *lk, const char *chan, size_t len) {
    return lk->aux_base_len && len == lk->aux_base_len + 9 && rlock__aux_is(lk, chan) &&
           memcmp(chan + lk->aux_base_len, ":released", 9) == 0;
}

static int rlock__same_chan(const rlock_lock *a, const rlock_lock *b) {
    if (!a->aux_base_len || a->aux_base_len != b->aux_base_len) return 0;
    if (a->key_len == b->key_len) return memcmp(a->key, b->key, a->key_len) == 0; /* one form */
    /* "{k}" against a key with a hash tag, whose prefix is the key itself */
    return a->key_len < b->key_len ? rlock__aux_is(a, b->key) : rlock__aux_is(b, a->key);
}

/* The connection that holds server j's subscriptions, while it is the same
 * connection they were made on; NULL when there is none. */
static const rlock__conn *rlock__sub_conn(const rlock_client *c, size_t j) {
    const rlock__conn *n = c->sub_on[j];
    return n && n->gen == c->sub_gen[j] && n->conn != RLOCK__CONN_DOWN ? n : NULL;
}

/* Queue for each server j in mask [UN]SUBSCRIBE c->linger, the channel:
 * SUBSCRIBE for lk (its release channel, rlock__linger_set), or with lk
 * NULL UNSUBSCRIBE the lingering one (only where it is subscribed; nobody
 * waits for the answers). On the connection that already has its
 * subscriptions, else on its command connection when that speaks RESP3
 * (the answer is a push there), else on subscriber j (the answer is a
 * reply, for lk: RLOCK__TAG_SUB). The servers where it was queued. (One
 * sender for both: two loops cost more than the checks.) */
static unsigned rlock__sub_send(rlock_client *c, unsigned mask, rlock_lock *lk, rlock__ms deadline) {
    /* the request up to its channel, by [UN]SUBSCRIBE and shard (SSUBSCRIBE: a shard channel):
     * its length, then its bytes */
    static const char cmds[4][25] = { "\023*2\r\n$9\r\nSUBSCRIBE\r\n", "\026*2\r\n$11\r\nUNSUBSCRIBE\r\n",
                                      "\025*2\r\n$10\r\nSSUBSCRIBE\r\n", "\027*2\r\n$12\r\nSUNSUBSCRIBE\r\n" };
    const int unsub = !lk, shard = RLOCK__SHARD(c);
    const char *cmd = cmds[unsub + 2 * shard];
    size_t len = (size_t)cmd[0], j;
    unsigned sent = 0;
    for (j = 0; j < c->n_nodes; j++) {
        const rlock__conn *on = rlock__sub_conn(c, j);
        rlock__x *n = c->conns[j]; /* (node j's exchange: one load) */
        unsigned char *out;
        size_t cap, pos;
        const char *why;
        if (!((mask >> j) & 1u) || (!on && !lk)) continue;
        if (on ? on == n : c->cfg.pubsub && n->proto == 3 && n->conn == RLOCK__CONN_UP) {
            /* (the command connection) */
        } else if (j < c->n_subs && !shard) n = c->conns[c->n_nodes + j];
        else continue;
        if (rlock__x_begin(n, deadline, &why) != RLOCK_OK) continue;
        out = n->tx + n->tx_len;
        cap = n->tx_cap - n->tx_len;
        if (len > cap) continue;
        memcpy(out, cmd + 1, len);
        pos = len;
        if (!rlock__put_arg(out, cap, &pos, c->linger, c->linger_len)) continue;
        /* Answered by a reply (RESP2), or - RESP3, sharded or not - by a
         * push or an error (NOPERM: an ACL user without the channel; MOVED:
         * the slot is served elsewhere now). A FIFO entry either way
         * (fuzz_locks: without one, RESP3's error was read as the next
         * request's answer, and a request in front of it, its length
         * hidden, went out past its time). Never taken back unsent
         * (RLOCK__X_KEEP): a waiter that ends before its SUBSCRIBE goes out
         * leaves the channel lingering (rlock__op_unsubscribe), and the next
         * wait adopts it as subscribed. */
        rlock__x_commit(n, pos, lk, (RLOCK__TAG_SUB + unsub) | RLOCK__X_KEEP | ((n->proto == 3) * RLOCK__X_BY_SUB_PUSH << unsub),
                        deadline); /* (RLOCK__X_BY_UNSUB_PUSH the next bit: a check below) */
        c->sub_on[j] = n;
        c->sub_gen[j] = n->gen;
        sent |= 1u << j;
    }
    return sent;
}

typedef char rlock__by_push_bits[RLOCK__X_BY_UNSUB_PUSH == RLOCK__X_BY_SUB_PUSH << 1 &&
                                 RLOCK__TAG_UNSUB == RLOCK__TAG_SUB + 1 ? 1 : -1];

/* Forget the lingering channel, unsubscribing it where it is subscribed.
 * (c->linger and its length mean something only while linger_mask has a
 * subscriber: with none, a stale channel left there is dropped again - no
 * UNSUBSCRIBE - or overwritten, never sent or adopted.) */
static void rlock__linger_drop(rlock_client *c, rlock__ms now) {
    (void)rlock__sub_send(c, c->linger_mask, NULL, now + 1000u);
    c->linger_mask = 0;
}

/* c->linger := lk's release channel (any lock's fits: RLOCK__LINGER_CAP),
 * the channel lingering there unsubscribed first (where it is subscribed:
 * with linger_mask 0 the drop sends nothing - lk's own channel is kept so). */
static RLOCK__NOINLINE void rlock__linger_set(rlock_client *c, const rlock_lock *lk, rlock__ms now) {
    rlock__linger_drop(c, now);
    rlock__aux_write(c->linger, lk->key, lk->key_len, lk->aux_base_len);
    memcpy(c->linger + lk->aux_base_len, ":released", 9);
    c->linger_len = lk->aux_base_len + 9;
}

/* lk stops waiting: subscriptions no other operation shares are left to
 * linger (the next wait on this key needs no SUBSCRIBE); the lingering
 * channel they replace is unsubscribed. */
static void rlock__op_unsubscribe(rlock_lock *lk) {
    rlock_client *c = lk->client;
    unsigned mine = lk->op.sub_ok | lk->op.sub_pending, others = 0;
    const rlock_lock *o;
    lk->op.sub_ok = lk->op.sub_pending = 0;
    if (!RLOCK__HAS_WAITING || !mine) return;
    for (o = c->ops; o; o = o->op.next) /* (lk among them adds nothing: cleared above) */
        if (rlock__same_chan(o, lk)) others |= o->op.sub_ok | o->op.sub_pending;
    mine &= ~others;
    if (!mine) return;
    if (!rlock__is_my_chan(lk, c->linger, c->linger_len)) rlock__linger_set(c, lk, rlock__now(c));
    c->linger_mask |= mine;
}

/* Bring c's subscriptions up to date: a connection that went down (or was
 * made again) lost its subscriptions, which are forgotten (an op left
 * SUBSCRIBE-ing for none is due at once: rlock__client_next). Then mark
 * the connections that hold some: they read even with no request out, so
 * that release notices are seen and never pile up unread. Returns the
 * commands queued on all of c's connections so far (rlock__client_step:
 * whether a pass queued any). */
static unsigned long rlock__subs_listen(rlock_client *c) {
    unsigned any, keep = ~0u;
    unsigned long k = 0;
    rlock_lock *o;
    size_t i;
    rlock__conn *n;
    for (i = 0; (n = c->conns[i]) != NULL; i++) {
        n->listen = 0;
        k += n->commands;
        if (!RLOCK__HAS_WAITING || i >= c->n_nodes || !c->sub_on[i] || rlock__sub_conn(c, i)) continue;
        c->sub_on[i] = NULL;
        keep &= ~(1u << i);
    }
    if (!RLOCK__HAS_WAITING) return k;
    any = c->linger_mask &= keep; /* (none left: the channel is stale, rlock__linger_drop) */
    for (o = c->ops; o; o = o->op.next) {
        o->op.sub_ok &= keep;
        o->op.sub_pending &= keep;
        any |= o->op.sub_ok | o->op.sub_pending;
    }
    for (i = 0; i < c->n_nodes; i++) {
        rlock__conn *n = (rlock__conn *)rlock__sub_conn(c, i); /* one of c's own connections */
        if (n && ((any >> i) & 1u)) n->listen = 1;
    }
    return k;
}

/* Server j answered lk's SUBSCRIBE (a reply on subscriber j, or a push):
 * ok, it confirmed the subscription it was asked for. */
static void rlock__sub_answered(rlock_lock *lk, size_t j, int ok) {
    unsigned bit = 1u << j;
    if (ok) lk->op.sub_ok |= lk->op.sub_pending & bit;
    lk->op.sub_pending &= ~bit;
}

/* Sleep until the next attempt, in phase BACKOFF or WAITMSG (waiting for
 * a release notice: rlock__wait_next), never past the holder's PTTL or our
 * deadline. Backoff is exponential with jitter:
 * d = min(max, min << attempts), a random value in [d/2, d]. */
static void rlock__schedule_retry(rlock_lock *lk, rlock__ms now, int phase) {
    int msg = phase == RLOCK__PH_WAITMSG;
    const rlock_config *cfg = &lk->client->cfg;
    rlock_op *op = &lk->op;
    uint32_t d = cfg->backoff_min_ms, max = cfg->backoff_max_ms, delay, shift = op->attempts - 1u;
    if (!msg) {
        /* (attempts >= 1: one went out; min <= max: rlock__config_defaults; doubled past max: max; no wrap) */
        while (shift-- && d < max) d = d > max / 2u ? max : d << 1;
        delay = d / 2u + rlock__prng32(lk) % (d - d / 2u + 1u);
        /* A fair waiter that polls must look within its reservation's grace. */
        if (RLOCK__FAIR(lk) && delay > RLOCK__FAIR(lk) / 2u + 1u) delay = RLOCK__FAIR(lk) / 2u + 1u;
    } else {
        /* Capped by recheck_ms: a wake-up can be lost (pub/sub is at most
         * once; a queued waiter that died swallows the one sent), and then
         * the holder's whole lease would be slept away on a free lock. */
        delay = cfg->recheck_ms;
    }
    /* (after the fair cap: both are minimums; one copy, not one per branch) */
    if (op->holder_wait && op->holder_wait < delay) delay = op->holder_wait;
    /* A split round (Redlock: some nodes granted, lk->votes of them, short
     * of a quorum), waiting for a notice: the refusing nodes' holder is a
     * rival's partial grant, returned a moment from now, and no release
     * will announce it. Retry within a few ms (jittered) instead. (Backoff's
     * delay is at most d already: no msg test needed.) */
    if (lk->votes && delay > 1u + d * 2u) delay = 1u + rlock__prng32(lk) % (d * 2u + 1u);
    op->wake_at = RLOCK__MS_BEFORE(op->wait_end, now + delay) ? op->wait_end : now + delay;
    rlock__op_goto(lk, phase);
}

/* Still subscribed to lk's channel from an earlier wait (the lingering
 * channel): take the subscriptions over. 1 when it did. */
static int rlock__adopt_linger(rlock_lock *lk) {
    rlock_client *c = lk->client;
    if (!c->linger_mask || !rlock__is_my_chan(lk, c->linger, c->linger_len)) return 0; /* (none: no subscriber) */
    lk->op.sub_ok |= c->linger_mask;
    c->linger_mask = 0; /* (the channel stale: rlock__linger_drop) */
    return 1;
}

#ifndef RLOCK_NO_PRIMITIVES
/* How long a waiting writer keeps new readers out: its wait left, at most
 * long enough to outlast the gap to its next attempt (that renews it), so a
 * writer that died frees the readers soon. 0: writers-first is off. */
static uint32_t rlock__holdoff(const rlock_lock *lk, rlock__ms left) {
    const rlock_config *cfg = &lk->client->cfg;
    uint32_t cap = lk->op.ttl, half = left / 2u + (left & 1u); /* left < 2^31: x >= half is 2x >= left */
    if (!lk->param) return 0;
    if (cap >= left || cfg->recheck_ms >= half || cfg->backoff_max_ms >= half) return left; /* a cap past it */
    if (2u * cfg->recheck_ms > cap) cap = 2u * cfg->recheck_ms; /* (each below left: no wrap) */
    if (2u * cfg->backoff_max_ms > cap) cap = 2u * cfg->backoff_max_ms;
    return cap;
}
/* A Redlock semaphore asked for a slot that is taken while a refusing node
 * named another as free - the refusal's third number: its lowest free slot
 * + 1, 0 for none: ask for the lowest such slot at once, a few times
 * (rlock__set_all's). 1 when it will. */
static int rlock__sem_hop(rlock_lock *lk) {
    const rlock_round *r = &lk->op.round;
    long long free_slot = -1;
    size_t i;
    if (lk->kind != RLOCK_KIND_SEMAPHORE || lk->client->n_nodes < 2 || lk->op.hops >= 3) return 0;
    for (i = 0; i < lk->client->n_nodes; i++) {
        const long long *v = r->v[i];
        if (((r->mask >> i) & 1u) && r->st[i] == RLOCK_OK && v[0] != 1 && v[2] > 0 && /* (v[2]: a 3-element answer's) */
            (free_slot < 0 || v[2] - 1 < free_slot))
            free_slot = v[2] - 1;
    }
    if (free_slot < 0 || free_slot == lk->slot) return 0;
    lk->slot = (int32_t)free_slot;
    lk->op.hops++;
    return 1;
}
/* A semaphore acquire round's grant (rlock__set_all's). Slot s answered as
 * -1 - s is a permit handed to our waiter id (section 6.4b), held under
 * that id: it is extended, released - or, judged too late, cleaned up - by
 * it, so the id is spent (that cleanup may land late and must not end a
 * permit handed to the id again): a wait that goes on does so under the
 * token's first half, an id no request carried. */
static void rlock__sem_handed(rlock_lock *lk, long long *slot) {
    int i;
    if (*slot >= 0) return;
    *slot = -1 - *slot;
    for (i = 0; i < 16; i++) { /* (a swap: owner <-> waiter id) */
        char spent = lk->waiter_id[i];
        lk->waiter_id[i] = lk->owner[i];
        lk->owner[i] = spent;
    }
    lk->owner[16] = '\0';
}
/* A semaphore waiter woken with a permit handed to its waiter id (op.woke
 * = 2 + slot, rlock__handed_slot; rlock__set_all's): the release answered
 * our last (refused) attempt - its lease began after that attempt was
 * sent, so validity counts from the attempt's start. That round's one
 * answer becomes the grant (-1 - slot: held under our waiter id), judged
 * as any grant: too late, it is released and we wait again. */
static void rlock__sem_woken(rlock_lock *lk) {
    long long *v = lk->op.round.v[0];
    v[0] = 1;
    v[1] = 1 - lk->op.woke;
    v[2] = 0;
}
#endif

/* Has a script run on every node (rlock_node.scripted)? */
static int rlock__scripts_ran(const rlock_client *c) {
    size_t i;
    for (i = 0; i < c->n_nodes; i++)
        if (!c->nodes[i]->scripted) return 0;
    return 1;
}

/* The next acquire round. Release notices that came before it are stale:
 * the round itself sees the current state; one published after our script
 * ran wakes us. */
static void rlock__op_finish(rlock_lock *lk, rlock_status st);
static void rlock__acquire_next_round(rlock_lock *lk, rlock__ms now) {
    rlock_op *op = &lk->op;
    rlock__ms left;
    if (op->fresh) { /* a new token, or owner id (see rlock__acquire_round_done) */
        unsigned char rnd[RLOCK_TOKEN_LEN / 2];
        op->fresh = 0;
        if (rlock__random(lk->client, rnd, sizeof rnd) != 0) { rlock__op_finish(lk, RLOCK_E_RANDOM); return; }
        rlock__hex(lk->owner, rnd, sizeof rnd);
    }
    if (op->timed == 2) op->wait_end = now + RLOCK__MS_FAR - 1u; /* forever: renewed by each attempt */
    left = RLOCK__MS_BEFORE(now, op->wait_end) ? op->wait_end - now : 0;
    /* The last attempt cfg.max_attempts allows has no wait left either: it
     * leaves the queue, so nothing is handed (a semaphore's permit) or woken
     * for a waiter gone. (This is attempt attempts + 1, or attempts for a
     * follow-up, which is none of its own: not counted below; max_attempts 0,
     * no limit, wraps to the largest.) */
    if (op->attempts - (uint32_t)(op->plain == 2) >= lk->client->cfg.max_attempts - 1u) left = 0;
    op->woke = 0;
    /* Queue for a wake-up only once subscribed: an uncontended first attempt
     * stays as cheap as it can be. A fair lock's waiter queues at once: the
     * queue is the order it is served in. */
    op->queue = (op->sub_ok != 0 || RLOCK__FAIR(lk) != 0) && left != 0;
    /* The first attempt of a barging simple lock without fencing, not
     * queueing, is a plain SET NX PX: an uncontended acquire costs the server
     * what a raw client's does. Refused, a script attempt follows at once: it
     * queues, and tells a holder's PTTL from a foreign or wrong-type key. A
     * client still subscribed from a recent wait (queueing) goes to the
     * script first: under contention SET + script would be two commands per
     * attempt. Only where a script has run on every node: a user whose ACL
     * refuses scripts would get the key by SET and then could not release
     * it (the release is a script). */
    /* (attempts counts this one, before the plain SET's test reads it: a
     * follow-up is not counted) */
    if (op->plain == 2) { /* the follow-up of a refused plain SET: not an attempt of its own */
        op->plain = 0;
    } else {
        op->plain = op->attempts++ == 0 && !op->queue && lk->kind == RLOCK_KIND_SIMPLE && !RLOCK__FAIR(lk) &&
                    !RLOCK__FENCING(lk->client) && !lk->client->cfg.scripts_only && rlock__scripts_ran(lk->client);
    }
    op->wait_left = left > 86400000u ? 86400000u : (uint32_t)left;
#ifndef RLOCK_NO_PRIMITIVES
    if (lk->kind == RLOCK_KIND_SEMAPHORE) op->arg5 = (uint32_t)lk->param; /* permits: < 2^31 */
    if (lk->kind == RLOCK_KIND_WRITE) op->arg5 = rlock__holdoff(lk, left);
#endif
    rlock__op_goto(lk, RLOCK__PH_ROUND);
    rlock__round_begin(lk, RLOCK__OP_ACQUIRE, 0, now);
    /* after: this attempt's grant has no entry to take out (a queueing attempt is
     * never a plain SET: op->plain above needs !op->queue) */
    if (op->queue) lk->queued = 1;
}

/* After a failed round that will be retried: with subscribers and a holder
 * that has a TTL, subscribe (then retry at once, so a release between our
 * attempt and the subscription is not missed) or sleep until a release
 * notice or the holder's PTTL, whichever comes first. Otherwise back off. */
static void rlock__wait_next(rlock_lock *lk, rlock__ms now) {
    rlock_client *c = lk->client;
    rlock_op *op = &lk->op;
    /* ROUND: the next attempt at once (the follow-up after a cleanup) */
    int phase = op->plain == 2 ? RLOCK__PH_ROUND : RLOCK__PH_BACKOFF;
    /* (without subscribers or cfg.pubsub, rlock__sub_send finds nowhere to
     * send and the wait backs off: no test of its own) */
    if (phase == RLOCK__PH_BACKOFF && RLOCK__HAS_WAITING && lk->aux_base_len && op->holder_wait) {
        if (!op->sub_ok && !rlock__adopt_linger(lk)) { /* (the lingering channel another's: dropped) */
            /* Not adopted: the channel lingering is another, or lk's without a
             * subscriber left (linger_mask 0, nothing to unsubscribe: the
             * drop sends nothing, no second channel compare). */
            rlock__linger_set(c, lk, now);
            op->wake_at = now + op->round.timeout; /* a push confirmation has no deadline of its own */
            op->sub_pending |= rlock__sub_send(c, ~0u, lk, op->wake_at);
            if (op->sub_pending) {
                rlock__op_goto(lk, RLOCK__PH_SUBSCRIBE);
                return;
            } /* else nowhere to listen: back off */
        } else {
            /* Subscribed, but the attempt that failed did not join the wait
             * queue (it was sent before): a release would not wake us. Try
             * again at once; that attempt queues. */
            phase = op->queue ? RLOCK__PH_WAITMSG : RLOCK__PH_ROUND;
        }
    }
    if (phase == RLOCK__PH_ROUND) rlock__acquire_next_round(lk, now);
    else rlock__schedule_retry(lk, now, phase);
}

/* The op is over: nothing of it stays in flight or subscribed to. */
static void rlock__op_finish(rlock_lock *lk, rlock_status st) {
    rlock_client *c = lk->client;
    rlock__x **p;
    for (p = c->conns; *p; p++) (void)rlock__x_disown(*p, lk);
    rlock__op_unsubscribe(lk);
    lk->op.result = st;
    rlock__op_goto(lk, RLOCK__PH_DONE);
}

/* The nodes in yes granted or extended the lease op->ttl asked for: it
 * runs from the round's start for life (the ttl less the drift). The op
 * is over: RLOCK_OK, for the caller to return. */
static rlock_status rlock__lease(rlock_lock *lk, unsigned yes, uint32_t life) {
    rlock_op *op = &lk->op;
    lk->held_mask = yes;
    lk->granted_at = op->round.start;
    lk->renew_at = op->round.start + rlock__renew_interval(lk, op->ttl);
    lk->state = RLOCK_STATE_HELD;
    lk->ttl_ms = op->ttl;
    rlock__set_validity(lk, op->round.start + life);
    return RLOCK_OK;
}

/* (life: the lease's, rlock__lease; late: the round ended past it.) The
 * round-done calls return what the op ends with (rlock__op_run finishes
 * it), RLOCK_WOULD_BLOCK when it goes on (here: a cleanup round is out), or
 * here RLOCK__AFTER_CLEANUP when a failed attempt left nothing to clean up:
 * the caller goes on at once as after a cleanup (retry, or report op->result). */
#define RLOCK__AFTER_CLEANUP RLOCK_STATUS_COUNT
static rlock_status rlock__acquire_round_done(rlock_lock *lk, rlock__ms now, uint32_t life, int late, rlock__tally *t, size_t q) {
    rlock_client *c = lk->client;
    rlock_op *op = &lk->op;
    rlock_status final;
    unsigned mask, unacked;
    int go, hop = 0;
    unacked = RLOCK__REPLICAS(c) && !c->cfg.replica_warn ? t->yes & op->round.short_acks : 0u;
    lk->acks = RLOCK__HAS_REPLICAS && t->yes ? op->round.acks : 0; /* (both kept + 1) */
    /* A grant too few replicas acknowledged is no vote (and is released) */
    t->yes &= ~unacked;
    t->n_yes -= rlock__popcount(unacked);
    op->holder_wait = 0u - t->min_pttl_not; /* (~p: p + 1 is its negation; none, 0, stays 0) */
    lk->votes = t->n_yes;
    if (RLOCK__MS_BEFORE(now, op->round.start)) t->fatal = RLOCK_E_CLOCK;
    RLOCK__SEM_HANDED(lk, &t->holds); /* (before the lease or cleanup: it may change the owner) */
    go = !op->cancel && t->fatal == RLOCK_OK; /* granted now, or may be on a retry */
    if (go && t->n_yes >= q && !late) {
        if (lk->state != RLOCK_STATE_HELD) { /* a new grant, not a re-entry */
            lk->held_since = op->round.start;
            lk->fence = t->most;
            lk->renewals = 0;
            lk->lost_notified = 0;
        }
        lk->holds = rlock__token_kind(lk->kind) ? 1 : t->holds;
        if (lk->kind == RLOCK_KIND_SEMAPHORE) lk->slot = (int32_t)t->holds; /* a grant names its slot */
        return rlock__lease(lk, t->yes, life);
    }
    /* Failed round. Decide what to report if we stop now. */
    if (t->fatal != RLOCK_OK) final = t->fatal;
    else if (unacked && t->n_yes + rlock__popcount(unacked) >= q) final = RLOCK_E_REPLICAS;
    /* "Held" only when enough nodes answered for a quorum to be possible;
     * fewer answers is a node failure (E_QUORUM), even if some granted. */
    else if (t->n_yes + t->n_no >= q) final = op->timed ? RLOCK_TIMEOUT : RLOCK_NOT_ACQUIRED;
    else final = t->error;
    op->result = op->cancel ? RLOCK_OK : final;
    /* (attempts < max_attempts, or no limit: max 0 wraps to the largest;
     * the wait left is checked when the retry is due: rlock__op_run) */
    op->retry = go && op->attempts <= c->cfg.max_attempts - 1u;
    /* A refused plain SET: the script attempt follows at once. A Redlock
     * semaphore asked for a slot that is taken while another is free: ask
     * for that one at once (a few times; a follow-up like the plain SET's,
     * sent even by a try-acquire). */
    /* Release what we may hold: granted nodes, and nodes whose answer we never
     * got (a late SET may have landed) - not those whose request never went
     * out (never queued, or taken back unsent: rlock__op_reply), where it
     * never ran, unless an earlier round of this op reached them (its grant,
     * same token, may be held there: fuzz_lock found one left so). A re-entry
     * only undoes the holds it knows it added, so an unanswered node cannot
     * lose a real hold. */
    mask = t->yes | unacked |
           (lk->state == RLOCK_STATE_HELD ? 0u : t->unknown & (op->round.queued | op->reached));
    op->reached |= op->round.queued;
    if (go && ((hop = RLOCK__SEM_HOP(lk)) != 0 || (op->plain == 1 && t->n_no > 0))) {
        op->plain = 2;
        /* 2: goes out even past the wait: a semaphore's hop, and any
         * follow-up with nothing to clean up (see CLEANUP) */
        op->retry = 1 + (hop | !mask);
    }
    if (mask) {
        /* The retry after a cleanup carries a new token or owner id: a
         * cleanup (or the attempt it undoes) whose answer never came may
         * reach a server late - through another connection, after the
         * retry's grant - and would then end it while we believe we hold
         * it (chaos found this under a latency spike; tests/test_fair.c and
         * test_primitives.c test_late_cleanup show it for every kind). The
         * cleanup is owner-checked but not attempt-checked: compare-and-
         * delete (simple, fair, multi), a decrement that deletes at 0
         * (reentrant, read, write), a permit removal (semaphore). A late
         * attempt only leaves a stray hold that expires. A fair lock's
         * queue place and reservation are keyed by its waiter id, which
         * stays. A reentrant owner at hold 0 takes a random id for this
         * hold: another handle of its owner id waits for it like a stranger.
         * That first cleanup, at hold 0, may reach a node where the attempt
         * never ran but another handle of the same owner id holds: it
         * decrements only if it removes the record its attempt's grant
         * stored (named by the handle's id: RLOCK__LUA_RECORD), so it
         * cannot end that hold.
         * A re-entry keeps its owner: it undoes only the holds a node said
         * it added, which a late decrement cannot undercut. A semaphore
         * waiter's queue place and the permit a release hands it are keyed
         * by its waiter id too (section 6.4b), so a queued one draws a new
         * token as well. */
        op->fresh = lk->state != RLOCK_STATE_HELD;
        rlock__op_goto(lk, RLOCK__PH_CLEANUP);
        rlock__round_begin(lk, RLOCK__OP_RELEASE, mask, now);
        return RLOCK_WOULD_BLOCK;
    }
    return (rlock_status)RLOCK__AFTER_CLEANUP; /* nothing to clean up: what follows a cleanup, now */
}

static RLOCK__INLINE rlock_status rlock__extend_round_done(rlock_lock *lk, rlock__ms now, uint32_t life, int late,
                                             const rlock__tally *t, size_t q) {
    rlock_client *c = lk->client;
    rlock_op *op = &lk->op;
    if (RLOCK__MS_BEFORE(now, op->round.start)) return RLOCK_E_CLOCK;
    /* Success needs the quorum inside the validity we had: after it ran out
     * another client may have held the lock in between. */
    if (t->n_yes >= q && RLOCK__MS_BEFORE(now, lk->validity_end) && !late) {
        /* Begun before the last grant, the clock hook stepped back: no
         * time passed since that grant, for max_hold_ms too (the hold is
         * not made longer by the step) */
        if (RLOCK__MS_BEFORE(op->round.start, lk->granted_at)) lk->held_since -= lk->granted_at - op->round.start;
        return rlock__lease(lk, t->yes, life); /* (still HELD: nothing else runs on lk meanwhile) */
    }
    if (t->n_no > c->n_nodes - q || !RLOCK__MS_BEFORE(now, lk->validity_end)) {
        rlock__mark_lost(lk);
        return RLOCK_LOST;
    }
    return t->error;
}

static rlock_status rlock__release_round_done(rlock_lock *lk, const rlock__tally *t, size_t q) {
    rlock_client *c = lk->client;
    size_t held = rlock__popcount(lk->held_mask);
    size_t gone, neutral;
    int lost;
    rlock_status st;
    /* "Not ours" from a node that granted us means we lost it there; from a
     * node that never did, it says nothing. */
    gone = rlock__popcount(t->no & lk->held_mask);
    neutral = t->n_no - gone;
    lost = held >= q && gone > held - q; /* a quorum of our grants is gone: it was lost */
    /* Released where we held it and absent where we never did: released,
     * even if a node that granted is unreachable now (its copy expires). */
    if (!lost && (t->n_yes >= q || (held >= q && t->n_yes > 0 && t->n_yes + neutral >= q))) st = RLOCK_OK;
    else if (lost || t->n_no > c->n_nodes - q) {
        st = RLOCK_LOST;
        rlock__mark_lost(lk); /* (on_lost once, as an extend's) */
    } else return t->error; /* unknown: state kept */
    /* (holds is read only while HELD: rlock_hold_count) */
    /* (a kind that is not a token kind releases by a count_ok script: rlock__op_run) */
    if (st == RLOCK_OK && !rlock__token_kind(lk->kind) && t->most > 0) lk->holds = t->most;
    else lk->state = RLOCK_STATE_IDLE;
    return st;
}

#ifndef RLOCK_NO_PRIMITIVES
/* An inspect or force-unlock round (6.10): answers from a quorum are needed;
 * a force-unlock reports whether any node had the key. */
static void rlock__admin_round_done(rlock_lock *lk) {
    rlock_client *c = lk->client;
    rlock__tally t;
    size_t i, had = 0, foreign = 0;
    rlock__tally_round(&lk->op.round, &t);
    for (i = 0; i < c->n_nodes; i++)
        if (((lk->op.round.mask >> i) & 1u) && lk->op.round.st[i] == RLOCK_OK) {
            had += lk->op.round.v[i][0] == 1;
            foreign += lk->op.round.v[i][0] == -1;
        }
    if (t.n_yes + t.n_no < rlock_client_quorum(c)) {
        rlock__op_finish(lk, t.error);
        return;
    }
    if (lk->op.kind == RLOCK__OP_INSPECT) rlock__op_finish(lk, RLOCK_OK);
    else rlock__op_finish(lk, had ? RLOCK_OK : foreign ? RLOCK_E_FOREIGN : RLOCK_NOT_HELD);
}
#endif

/* Move lk's operation as far as it can go now. The one switch over phases. */
static void rlock__op_run(rlock_lock *lk, rlock__ms now) {
    rlock_op *op = &lk->op;
    rlock__tally t;
    size_t q;
    uint32_t life;
    int late;
    rlock_status st;
    switch (op->phase) {
    case RLOCK__PH_BACKOFF:
        if (!RLOCK__MS_BEFORE(now, op->wake_at)) rlock__acquire_next_round(lk, now);
        return;
    case RLOCK__PH_SUBSCRIBE:
        if (!RLOCK__HAS_WAITING) return; /* never entered */
        if (op->sub_pending && RLOCK__MS_BEFORE(now, op->wake_at)) return;
        /* Subscribed: try again at once. Not possible: back off instead of
         * re-subscribing in a hot loop. */
        if (op->sub_ok) rlock__acquire_next_round(lk, now);
        else rlock__schedule_retry(lk, now, RLOCK__PH_BACKOFF);
        return;
    case RLOCK__PH_WAITMSG:
        if (!RLOCK__HAS_WAITING) return; /* never entered */
        if (op->standby) { /* next in line: if the waiter before us is gone, its grace tells */
            op->standby = 0;
            if (RLOCK__MS_BEFORE(now + RLOCK__FAIR(lk) + 1u, op->wake_at)) op->wake_at = now + RLOCK__FAIR(lk) + 1u;
        }
        /* A semaphore's permit handed to us by the release that woke us
         * (rlock__sem_woken, rlock__set_all's: only a semaphore's handle is
         * woken so) */
        if (RLOCK__HAS_PRIMITIVES && op->woke >= 2) {
            RLOCK__SEM_WOKEN(lk);
            rlock__op_goto(lk, RLOCK__PH_ROUND); /* that round, answered: judged below */
        } else {
            /* (no subscription left - its connection dropped, CLIENT KILL -
             * and a notice may have been lost with it: the attempt at once
             * subscribes again, then queues) */
            if (op->woke || !op->sub_ok || !RLOCK__MS_BEFORE(now, op->wake_at)) rlock__acquire_next_round(lk, now);
            return;
        }
        /* fall through */
    case RLOCK__PH_ROUND:
    case RLOCK__PH_CLEANUP:
        rlock__round_send(lk);
        if (!rlock__round_done(&op->round)) return;
        /* The round may have ended inside a transport call that blocked
         * (connect, send, recv): judge elapsed time and validity by the
         * clock now, not by when this step began. */
        now = rlock__now(lk->client);
        if (op->phase != RLOCK__PH_CLEANUP) {
            /* the lease (acquire, extend) less the drift: rlock__check_ttl's, passed at the start */
            life = op->kind < RLOCK__OP_RELEASE ? rlock__check_ttl(lk, op->ttl) : 0;
            rlock__tally_round(&op->round, &t);
            q = lk->client->n_nodes / 2 + 1; /* (rlock_client_quorum's) */
            late = (rlock__ms)(now - op->round.start) >= life;
            /* (set once for every kind of round - an inspect's: the nodes that
             * answered, a force-unlock's: those that had the key; an acquire
             * sets it again, less the grants too few replicas acknowledged) */
            lk->votes = t.n_yes;
            if (op->kind == RLOCK__OP_EXTEND) st = rlock__extend_round_done(lk, now, life, late, &t, q);
#ifndef RLOCK_NO_PRIMITIVES
            else if (op->kind > RLOCK__OP_RELEASE) { lk->scripts->admin_done(lk); return; } /* (rlock__set_all's) */
#endif
            else if (op->kind == RLOCK__OP_RELEASE) st = rlock__release_round_done(lk, &t, q);
            else st = rlock__acquire_round_done(lk, now, life, late, &t, q);
            if (st != (rlock_status)RLOCK__AFTER_CLEANUP) goto finish;
        }
        /* retry was decided before the cleanup: re-check the wait deadline */
        /* (a follow-up for a free slot or after a plain SET, retry 2, goes out even past the wait) */
        if (op->retry && !op->cancel && (op->retry == 2 || RLOCK__MS_BEFORE(now, op->wait_end))) {
            rlock__wait_next(lk, now);
            return;
        }
        st = op->result;
    finish:
        if (st != RLOCK_WOULD_BLOCK) rlock__op_finish(lk, st);
        return;
    default:
        return; /* IDLE, DONE */
    }
}

/* A semaphore waiter's wake-up (rlock__set_all's): what follows our waiter
 * id in the notice is nothing (woken) or " <slot>" from a release that
 * handed the id its permit (section 6.4b): op.woke = 2 + slot; 1 (a plain wake)
 * where no hand-off was asked for (Redlock, fencing). With cfg.replicas a
 * handed permit is taken by an attempt (it finds the one its waiter id has), whose
 * WAIT checks the copies. */
#ifndef RLOCK_NO_PRIMITIVES
static int rlock__handed_slot(const rlock_lock *lk, const char *d, size_t n) {
    long long v;
    if (!n || !rlock__sem_handoff(lk) || RLOCK__REPLICAS(lk->client) ||
        rlock__resp_int((const unsigned char *)d + 1, n - 1, &v) != 0 || v < 0 || v >= lk->param)
        return 1;
    return 2 + (int)v;
}
/* A lock's wake-up (rlock__set_lock's and _fair's handed_slot): a plain one. */
static int rlock__woken(const rlock_lock *lk, const char *d, size_t n) {
    (void)lk; (void)d; (void)n;
    return 1;
}
#endif

/* A release notice ["message", chan, waiter id] wakes the waiter it names
 * (a fair release's "W N" wakes W and tells N it is next). (A RESP3
 * ["subscribe", chan, n] push answers its SUBSCRIBE: rlock__x_parse_step.) */
static RLOCK__NOINLINE void rlock__deliver_push(rlock_client *c, size_t j, const rlock__event *ev) {
    const rlock_reply *r = &ev->reply;
    rlock_lock *o;
    int msg = (ev->ps & RLOCK__PS_KIND) == RLOCK__PS_MSG;
    (void)j; /* (the server: a shard client's only) */
#ifndef RLOCK_NO_CLUSTER
    if (c->shard && ev->ps == (RLOCK__PS_UNSUB | RLOCK__PS_SHARD)) { c->shard->moved(c, j, ev); return; }
#endif
    if (!msg || r->elem[2].len < 16) return; /* (a confirmation, or no waiter id: nobody's) */
    for (o = c->ops; o; o = o->op.next) {
        const char *d = r->elem[2].str;
        size_t n = r->elem[2].len;
        /* (another op's - extend, release - is marked too, never read: only
         * a waiting acquire reads woke and standby; each op starts cleared) */
        if (!rlock__is_my_chan(o, r->elem[1].str, r->elem[1].len)) continue;
        if (memcmp(d, o->waiter_id, 16) == 0)
            o->op.woke = RLOCK__HANDED_SLOT(o, d + 16, n - 16); /* (a lock's: 1, rlock__woken) */
        else if (n == 33 && memcmp(d + 17, o->waiter_id, 16) == 0) o->op.standby = 1;
    }
}

#ifndef RLOCK_NO_CLUSTER
/* A shard client's (rlock_client.shard): Redis Cluster unsubscribes a shard
 * channel whose slot moved away: its waiters retry now (and are
 * redirected), the lingering one is gone. */
static void rlock__shard_moved(rlock_client *c, size_t j, const rlock__event *ev) {
    const rlock_resp_value *ch = &ev->reply.elem[1];
    rlock_lock *o;
    if (c->linger_len == ch->len && memcmp(c->linger, ch->str, c->linger_len) == 0) c->linger_mask &= ~(1u << j);
    for (o = c->ops; o; o = o->op.next) {
        if (!rlock__is_my_chan(o, ch->str, ch->len)) continue; /* (another op's: as rlock__deliver_push) */
        o->op.sub_ok &= ~(1u << j);
        o->op.sub_pending &= ~(1u << j);
        o->op.woke = 1;
    }
}
/* A release's arguments padded to ARGV[6], then "spublish" in ARGV[7]. */
static void rlock__shard_spublish(rlock__enc *e) {
    while (e->n - (e->nkeys + 3) < 6) rlock__enc_arg(e, "", 0);
    rlock__enc_arg(e, "spublish", 8);
}
static const struct rlock__shard_ops rlock__shard_ops = { rlock__shard_moved, rlock__shard_spublish };
#endif

/* Event ev of connection n, c's connection i. */
typedef char rlock__unsent_no_kind[(RLOCK__X_UNSENT & RLOCK__PS_KIND) == 0 ? 1 : -1]; /* (a failure's ps) */
static void rlock__deliver(rlock_client *c, size_t i, rlock__x *n, rlock__event *ev, rlock__ms now) {
    size_t j = i - (i < c->n_nodes ? 0 : c->n_nodes); /* the server (one subtraction: 8 B less than two arms) */
    (void)now;
    if (ev->kind == RLOCK__EV_PUSH) {
        if (RLOCK__HAS_WAITING && rlock__sub_conn(c, j) == n) rlock__deliver_push(c, j, ev);
        return;
    }
    if (!ev->owner) return; /* nobody waits for it (UNSUBSCRIBE, a finished op's) */
    /* (a lock's reply, the busiest tag, first - node connections only: i <
     * n_nodes; tests, not a switch: 24 B less) */
    if (ev->tag == RLOCK__TAG_LOCK) { rlock__op_reply((rlock_lock *)ev->owner, i, ev); return; }
    if (ev->tag == RLOCK__TAG_WAIT) {
        if (RLOCK__HAS_REPLICAS) rlock__op_wait_reply((rlock_lock *)ev->owner, i, ev);
    } else if (ev->tag == RLOCK__TAG_SUB) {
        rlock_lock *lk = (rlock_lock *)ev->owner;
        /* (or "ssubscribe"; a failure's ps is RLOCK__X_UNSENT or 0: no kind) */
        int ok = (ev->ps & RLOCK__PS_KIND) == RLOCK__PS_SUB;
        if (!RLOCK__HAS_WAITING) return;
        /* A confirmation of another channel: the stream is not trusted (taken
         * as ours, the wait would hear nothing). */
        if (ok && !rlock__is_my_chan(lk, ev->reply.elem[1].str, ev->reply.elem[1].len)) {
            rlock__x_drop(n, RLOCK_E_PROTOCOL, "unexpected reply to SUBSCRIBE");
            ok = 0;
        }
        rlock__sub_answered(lk, j, ok);
    } else if (ev->tag == RLOCK__TAG_PING) {
        rlock__ping *p = (rlock__ping *)ev->owner;
        rlock_node *n = c->nodes[i];
        p->answered |= 1u << i;
        if (p->run_id) { /* a refused probe (no EVAL or INFO for this user): identity unknown */
            if (ev->kind != RLOCK__EV_REPLY) return;
            if (ev->reply.v.type == RLOCK_RESP_BULK) {
                if (ev->reply.v.len > 0 && ev->reply.v.len <= sizeof p->id[i]) {
                    memcpy(p->id[i], ev->reply.v.str, ev->reply.v.len);
                    p->id_len[i] = ev->reply.v.len;
                }
            } else if (ev->reply.v.type != RLOCK_RESP_NIL && ev->reply.v.type != RLOCK_RESP_ERROR) {
                /* (not its script's text, nil or a refusal: the stream is not trusted either) */
                rlock__x_drop(rlock__x_node(n), RLOCK_E_PROTOCOL, "unexpected reply to run_id");
            }
            return;
        }
        if (ev->kind == RLOCK__EV_FAIL) rlock__node_notez(n, ev->st, ev->why);
        else if (ev->reply.v.type == RLOCK_RESP_STATUS) { p->up |= 1u << i; rlock__node_clear(n, RLOCK_OK); }
        else if (ev->reply.v.type == RLOCK_RESP_ERROR)
            rlock__node_note(n, rlock__map_error(ev->reply.v.str, ev->reply.v.len), ev->reply.v.str, ev->reply.v.len);
        else { /* a well-formed reply of the wrong type: the stream is not trusted either */
            rlock__x_drop(rlock__x_node(n), RLOCK_E_PROTOCOL, "unexpected reply to PING");
            rlock__node_notez(n, RLOCK_E_PROTOCOL, "unexpected reply to PING");
        }
    } else { /* RLOCK__TAG_CALL (an UNSUBSCRIBE is nobody's: above) */
        rlock__call *call = (rlock__call *)ev->owner;
        call->done(call, c, i, ev);
    }
}

/* Drive every operation of c: read what arrived, hand it out, let each op
 * move on, and send what that queued - until nothing moves. */
static void rlock__client_step(rlock_client *c) {
    int pass;
    unsigned long before = rlock__subs_listen(c), after; /* (the commands queued so far) */
    for (pass = 0; pass < 4; pass++) {
        rlock__ms now = rlock__now(c);
        rlock_lock *o;
        rlock__client_pump(c, now);
        (void)rlock__subs_listen(c);
        for (o = c->ops; o; o = o->op.next) rlock__op_run(o, now);
        after = rlock__subs_listen(c);
        if (after == before) break; /* nothing new queued: nothing more to send now */
        before = after;
    }
}
#endif /* !RLOCK__COMPACT */

/* ---- 6.8c Compact engine (RLOCK__COMPACT) ---------------------------------
 * One node, simple locks, waiting by backoff: what RLOCK_SMALLEST needs,
 * without the general engine's request FIFO, pipelining, rounds over nodes
 * and tallies. One request in flight on the connection at a time (AUTH and
 * SELECT go ahead of the first one after a connect): a lock whose turn has
 * not come waits until the reply before it is read. Replies are RESP2
 * scalars or arrays of integers. The requests (rlock__encode_lock; from
 * templates, RLOCK_SMALLEST, without the wait left no script reads here),
 * scripts, statuses and error texts are the general engine's; each answer is read
 * as rlock__round_store does (rlock__c_answer) and judged as it comes, with
 * no round left to tally (rlock__c_judge); its round and op structs keep
 * only what it uses (section 5). It defines the same
 * internal calls (rlock__client_step, rlock__op_finish, ...) for the
 * public calls both engines share, and its own of those that start and time
 * operations (rlock_acquire_begin, rlock_renew_poll, ...). */
#if RLOCK__COMPACT
/* Nothing lingers subscribed without waiting (rlock_acquire_begin asks). */
#define rlock__adopt_linger(lk) ((void)(lk), 0)
/* An operation's script is a simple lock's: acquire, extend, release in the
 * order of the operations. */
typedef char rlock__c_ops_are_scripts[RLOCK__OP_EXTEND - RLOCK__OP_ACQUIRE == RLOCK__S_SIMPLE_EXTEND &&
                                      RLOCK__OP_RELEASE - RLOCK__OP_ACQUIRE == RLOCK__S_SIMPLE_RELEASE &&
                                      RLOCK__S_SIMPLE_ACQUIRE == 0 ? 1 : -1];
/* x.head: the replies due before the request's: AUTH (bit 0), SELECT (bit 1);
 * bit 2, the request waits for them: it goes once they are answered (the
 * slot is free again then). */
#define RLOCK__C_AUTH 1u
#define RLOCK__C_ALONE 4u
/* The compact engine's times are rlock__ms (rlock__now: 32 bits), compared
 * wrap-safe (RLOCK__MS_BEFORE). Has time t come (now is t or later)? */
#define RLOCK__C_DUE(now, t) (!RLOCK__MS_BEFORE((now), (t)))
#define RLOCK__C_SELECT 2u

/* A reply as the compact engine reads it: what judging it needs. (v first:
 * an element's slot is rep + i, measured 2 B less than after str.) */
#define RLOCK__C_ELEMS 3 /* an array's elements at most (rlock__c_line) */
typedef struct rlock__c_rep {
    rlock__num v[RLOCK__C_ELEMS]; /* an integer reply's value; an array's elements */
    rlock__num count; /* an array's element count */
    const char *str;  /* the first line after its type byte (a status's or error's text) */
    size_t len;
    int type;         /* the type byte: '+', '-', ':', '*' */
} rlock__c_rep;

/* One reply from b[0..len), read as what a simple lock can be answered
 * with: a status, an error, an integer, or an array of at most three
 * integers (the acquire script's; with fencing its third, the fence, may
 * be a bulk string of digits), walked line by line. > 0 its length, 0
 * incomplete, < 0 malformed: so is every other reply (nil - the plain SET
 * NX PX's refusal, which the compact engine does not send -, a bulk
 * string, an array element that is not an integer, a longer array, RESP3
 * types), never an answer to what it sends; a line that cannot fit in cap
 * bytes at once. A
 * line's number is '-' and 1..18 digits (more are malformed); without
 * fencing it is read in 32 bits, a magnitude past 2,013,265,929
 * (0x0c000000 * 10 + 9) read as 2^31 - 1: every number a simple lock is
 * answered with (a flag, a count, a PTTL) is exact below it, and a PTTL past
 * 2^30 caps no backoff (backoff_max_ms <= 2^30), so they act the same. */
/* The line at b[p..len) (its type byte, its text, CRLF): the index after
 * it, 0 incomplete, -1 malformed; *k its number (0 for a status or an
 * error), checked to be an integer or an array's count (0 to
 * RLOCK__C_ELEMS: each element has its slot in rlock__c_rep.v). */
static RLOCK__NOINLINE long rlock__c_line(const unsigned char *b, size_t p, size_t len, size_t cap, rlock__num *k) {
    size_t q, i;
    int c;
    for (q = p; q < len && b[q] != '\r'; q++) /* to the line's CR (a bare LF is malformed) */
        if (b[q] == '\n') return -1;
    if (q + 1 >= len) return len >= cap ? -1 : 0;
    if (b[q + 1] != '\n') return -1;
    c = b[p]; /* (an empty line's is its CR: malformed below) */
    *k = 0;
    if (c == '+' || c == '-') return (long)q + 2;
#if !RLOCK__HAS_FENCING
    {   /* the type, then '-' and 1..18 digits: read in 32 bits, a
         * magnitude past 0x0c000000 * 10 + 9 as 2^31 - 1 (above) */
        size_t neg = b[p + 1] == '-';
        uint32_t u = 0;
        i = p + 1 + neg;
        if (q - i - 1 > 17) return -1; /* 1..18 digits (none, or an empty line: q - i - 1 wraps) */
        for (; i < q; i++) {
            unsigned d = (unsigned)b[i] - '0';
            if (d > 9) return -1;
            u = u > 0x0c000000u ? 0x7fffffffu : u * 10u + d; /* (0x0c000000 * 10 + 9 < 2^31; one Thumb compare) */
        }
        *k = (rlock__num)u;
        if (neg) *k = -*k;
    }
#else
    (void)i;
    if (q == p || rlock__resp_int(b + p + 1, q - p - 1, k) != 0) return -1; /* fence tokens: any 64-bit number */
#endif
    /* an integer; else an array's count (negative - nil - or past RLOCK__C_ELEMS: malformed) */
    if (c != ':' && (c != '*' || (size_t)*k > RLOCK__C_ELEMS)) return -1;
    return (long)q + 2;
}
#if RLOCK__HAS_FENCING
/* An acquire's fence as the counter's text (RLOCK__LUA_FENCE): the bulk
 * string at b[p..len), "$n" CRLF, n (1..20) bytes of a decimal number, CRLF,
 * its number into *k. As rlock__c_line: the index after it, 0 incomplete,
 * -1 malformed. */
static long rlock__c_text_num(const unsigned char *b, size_t p, size_t len, size_t cap, rlock__num *k) {
    long long n;
    size_t q;
    for (q = p + 1; q < len && b[q] != '\r'; q++) {}
    if (q + 1 >= len) return len >= cap ? -1 : 0;
    if (b[q + 1] != '\n' || rlock__resp_int(b + p + 1, q - p - 1, &n) != 0 || n < 1 || n > 20) return -1;
    p = q + 2; /* the text */
    q = p + (size_t)n; /* its CR */
    if (q + 1 >= len) return len >= cap ? -1 : 0;
    if (b[q] != '\r' || b[q + 1] != '\n' || rlock__resp_int(b + p, (size_t)n, k) != 0) return -1;
    return (long)q + 2;
}
#endif
static long rlock__c_parse(const unsigned char *b, size_t len, size_t cap, rlock__c_rep *o) {
    rlock__num i;
    long e = rlock__c_line(b, 0, len, cap, &o->count); /* the reply's own line */
    int c;
    if (e <= 0) return e;
    c = b[0];
    o->type = c;
    o->str = (const char *)b + 1;
    o->len = (size_t)e - 3;
    o->v[0] = o->count;
    if (RLOCK__HAS_FENCING) o->v[2] = 0; /* (the fence: none without fencing) */
    for (i = 0; c == '*' && i < o->count; i++) { /* an array's elements */
#if RLOCK__HAS_FENCING
        if (i == 2 && (size_t)e < len && b[e] == '$') { /* the fence, as text */
            e = rlock__c_text_num(b, (size_t)e, len, cap, &o->v[2]);
            if (e <= 0) return e;
            continue;
        }
#endif
        if ((size_t)e < len && b[e] != ':') return -1; /* an element that is not an integer, by its first byte */
        e = rlock__c_line(b, (size_t)e, len, cap, &o->v[i]);
        if (e <= 0) return e;
    }
    return e;
}

/* One of rlock's texts into x.xerr (also the scratch of a reason that is
 * not the connection's: rlock__c_answer copies it at once). */
static const char *rlock__c_txt(rlock_node *n, rlock__txt why) {
    rlock__txt_put(n->x.xerr, sizeof n->x.xerr, why);
    return n->x.xerr;
}
/* Drop the connection (as rlock__x_drop): the request in flight, if any,
 * fails with st, reported by the next rlock__c_next; the reason, why, into
 * x.xerr first (written before close(): RLOCK__C_KEPT, rlock__c_down, when
 * it is there already - the transport's, or Redis's). Its buffers are left
 * as they are: the next claim empties them, and sets AUTH and SELECT up
 * again on a new connection. */
#define RLOCK__C_KEPT ((rlock__txt)0)
static void rlock__c_dropz(rlock_node *n, rlock_status st, rlock__txt why) {
    if (why != RLOCK__C_KEPT) (void)rlock__c_txt(n, why);
    if (n->x.conn != RLOCK__CONN_DOWN && n->transport.close) n->transport.close(n->transport.ctx);
    n->x.conn = RLOCK__CONN_DOWN;
    n->x.failing = n->x.count * (unsigned)st; /* (count: 0 or 1) */
}
#define rlock__c_down(n, st) rlock__c_dropz((n), (st), RLOCK__C_KEPT)
/* AUTH's or SELECT's refusal (auth: x.head, AUTH's when its bit 0 is set),
 * its text Redis's: RLOCK_E_AUTH, or RLOCK_E_REDIS as rlock__auth_error
 * says (the fifth byte tested without the length: the reply is at rx's
 * start, and rx[5] is rx's whatever the length; 10 B less, measured). */
static void rlock__c_refused(rlock_node *n, unsigned auth, const char *why, size_t why_len) {
    rlock__copy_text(n->x.xerr, sizeof n->x.xerr, why, why_len);
    rlock__c_down(n, (rlock_status)(RLOCK_E_REDIS + (auth & (why[4] != 'm'))));
}
/* The transport's text of its last failure into x.xerr, else ours. */
static void rlock__c_io_why(rlock_node *n, rlock__txt fallback) {
    const char *t = n->transport.error ? n->transport.error(n->transport.ctx) : NULL;
    size_t len = t ? strlen(t) : 0;
    if (len) rlock__copy_text(n->x.xerr, sizeof n->x.xerr, t, len);
    else (void)rlock__c_txt(n, fallback);
}

/* (q[0].len: tx's bytes after the last command appended, in 16 bits) */
typedef char rlock__c_tx_len_fits[RLOCK_TX_BUF < 0xFFFF ? 1 : -1];
/* (a 32-bit target: the exchange's words up to commands within a Thumb
 * short load's reach, rlock__conn) */
typedef char rlock__c_words_near[sizeof(void *) > 4 || offsetof(rlock_node, x.commands) <= 124 ? 1 : -1];
/* Append a command to what the TX buffer holds: the template at offset tpl
 * of argc arguments (rlock__c_tpl, written in place after what tx holds),
 * or (tpl RLOCK__C_REQ) lk's request; 1, or 0 when it does not fit (nothing
 * appended: tx_len is kept). */
static RLOCK__NOINLINE int rlock__c_cmd(rlock_node *n, const rlock_lock *lk, unsigned tpl, int argc) {
    size_t end, at = n->x.tx_len;
#if RLOCK__ENC_TEMPLATE /* (the templates write lk's request too: RLOCK__C_REQ is its template's) */
    end = rlock__c_tpl(n, lk, tpl, argc, n->tx, sizeof n->tx, at);
#else
    unsigned char *out = n->tx + at;
    size_t cap = sizeof n->tx - at;
    end = tpl != RLOCK__C_REQ ? rlock__c_tpl(n, lk, tpl, argc, out, cap, 0)
            : rlock__encode_lock(lk, 0, out, cap, RLOCK__C_EVALED(&lk->op.round) ? RLOCK__RUN_EVAL : RLOCK__RUN_EVALSHA);
    if (end) end += at;
#endif
    if (!end) return 0;
    n->x.tx_len = end;
    n->q[0].len = (unsigned short)end; /* (all of tx: a cancel takes back a request none of whose bytes went) */
    n->x.commands++;
    return 1;
}

/* lk's answer judged at once (v: its numbers, read only when st is
 * RLOCK_OK). */
static void rlock__c_judge(rlock_lock *lk, rlock_status st, const rlock__num *v);

/* Send lk's request when its turn comes (the connection is idle). It has the
 * node timeout from when it goes out: a request that waited for its turn
 * (behind other locks') is not timed out by that wait; the EVAL sent again
 * after NOSCRIPT stays within the first one's. (One body with the claim:
 * smaller, measured.) */
#define rlock__c_submit(lk, now) rlock__c_claim((lk)->client->nodes[0], (lk), (now))

/* Claim the connection for lk's request and queue its bytes, unless a
 * request is in flight (lk's own too; rlock__c_submit): deadline is now
 * then, the request's own worked out from it (the node timeout from when
 * it goes out; rlock__encode_lock's bytes). lk NULL: only ready the
 * connection, due by deadline (rlock_client_connect queues its PING). A connection that
 * is down is (re)connected, AUTH and SELECT queued first; an idle one is
 * probed first (as rlock__x_begin). A request waits for AUTH's and SELECT's
 * replies: they go alone first (x.head's RLOCK__C_ALONE: the slot is free
 * again once they are answered). Pipelined behind them it would run even
 * when they are refused - in db 0, or as the default user - and leave a
 * lock held that nobody knows of.
 * What fails before sending, RLOCK_E_IO (no connect hook; busy) or
 * RLOCK_E_BADARG (AUTH / SELECT does not fit), the reason in x.xerr, holds
 * the slot (x.failing: its status; rlock_client_connect, lk NULL, reads and
 * frees it itself): the next rlock__c_next reports it as the
 * request's, so it is judged like any other and never from here (judge
 * -> next round -> submit -> judge would make the call graph a cycle, and
 * bench/ram.sh's worst-case stack would not hold). */
#ifdef RLOCK_NO_ERROR_TEXTS
/* From here on a text within 256 lines is its distance from this line: the
 * exchange's (the claim's, the answer's, the reader's: 19 in the smallest
 * configuration) are each set by one 2-byte Thumb move, not a 4-byte one
 * for a line number - 30 B less, measured. rlock__txt_put adds the line
 * back: each still reads "rlock.h:LINE". (No text is in the file's first
 * 256 lines, the manual; none is 0: none is on this line. A table of texts
 * lies on one side of the 256: RLOCK__TXT_TABLE.) */
#undef RLOCK__TXT
#define RLOCK__TXT(s) ((rlock__txt)((unsigned)(__LINE__ - rlock__c_txt_near) < 256u ? __LINE__ - rlock__c_txt_near : __LINE__))
enum { rlock__c_txt_near = __LINE__ };
#endif
static void rlock__c_claim(rlock_node *n, rlock_lock *lk, rlock__ms deadline) {
    const rlock_transport *t = &n->transport;
    rlock__conn *x = &n->x;
    rlock__txt why = RLOCK__TXT("idle connection closed");
    rlock_status st = RLOCK_E_IO;
    unsigned head = 0;
    int again = 0; /* SELECT node.db (a new connection; a shared one that was idle) */
    if (lk) { /* lk's request (rlock__c_submit): its deadline from now, passed in deadline */
        rlock__ms start = deadline;
        if (x->count) return; /* (its own included: answers are judged as they come) */
        /* (the EVAL fallback's: the EVAL sent again after NOSCRIPT, and one
         * sent while the clock reads before the round's start, from that
         * start. Without it a request goes once, its timeout from now.) */
        if (RLOCK__HAS_EVAL && (RLOCK__C_EVALED(&lk->op.round) || RLOCK__MS_BEFORE(deadline, lk->op.round.start)))
            start = lk->op.round.start;
        deadline = start + rlock__node_timeout(lk, lk->op.ttl, start);
    }
    x->tx_len = x->rx_len = 0; /* (nothing is in flight: what is left in them was sent or read) */
    /* (active: the EVAL sent at once after NOSCRIPT: it is alive) */
    if (!(RLOCK__HAS_EVAL && x->active) && x->conn == RLOCK__CONN_UP) {
        long r;
        if (t->idle) {
            r = t->idle(t->ctx);
            if (r == RLOCK_IO_BUSY) {
                rlock__c_io_why(n, RLOCK__TXT("the connection is in use by someone else"));
                goto fail;
            }
            /* Shared with the program (hiredis), which may have SELECTed
             * another db since: node.db again, alone first (as
             * rlock__x_begin; not right after the last one) */
            again = r > 0 && x->selected != x->commands;
        } else {
            r = t->recv(t->ctx, n->rx, sizeof n->rx);
            if (r > 0) { /* (bytes nobody asked for: as a failure) */
                why = RLOCK__TXT("stray bytes on an idle connection");
                r = -1;
            }
        }
        if (r < 0) rlock__c_dropz(n, RLOCK_E_IO, why);
    }
    if (x->conn == RLOCK__CONN_DOWN) {
        /* Without a connect hook the transport came connected: once set up
         * (x.gen, counted below) and dropped - down is up no more but by
         * rlock__c_dropz, or a busy connect(), which a transport without
         * one never says - it stays down. */
        why = RLOCK__TXT("not connected (no connect hook)");
        if (!t->connect && x->gen) goto fail_txt;
        st = RLOCK_E_BADARG;
        why = RLOCK__TXT("AUTH does not fit in RLOCK_TX_BUF");
        if (n->password) {
            if (!rlock__c_cmd(n, NULL, RLOCK__C_AT_AUTH, n->username ? 3 : 2))
                goto fail_txt; /* (it stays down) */
            head = RLOCK__C_AUTH;
        }
        again = 1;
    }
    if (again) {
        st = RLOCK_E_BADARG;
        why = RLOCK__TXT("SELECT does not fit in RLOCK_TX_BUF");
        if (n->db > 0) { /* refused (out of range): the connection is not used */
            if (!rlock__c_cmd(n, NULL, RLOCK__C_AT_SELECT, 2)) goto fail_txt;
            head |= RLOCK__C_SELECT;
        }
        x->head = head;
        x->selected = x->commands;
        if (x->conn == RLOCK__CONN_DOWN) x->conn = RLOCK__CONN_NEW, x->gen++; /* (set up: AUTH and SELECT fit) */
    }
    if (!lk) return; /* (a PING may follow them: it changes nothing) */
    /* (tx is empty here, and an empty buffer holds any request: RLOCK_TX_BUF
     * is checked at compile time) */
    if (x->head) x->head |= RLOCK__C_ALONE;
    else (void)rlock__c_cmd(n, lk, RLOCK__C_REQ, RLOCK__C_REQ_ARGC);
    goto claim;
fail_txt:
    (void)rlock__c_txt(n, why);
fail:
    x->failing = (unsigned)st; /* (lk NULL: rlock_client_connect clears it) */
claim:
    x->count = 1;
    n->q[0].owner = lk;
    n->q[0].deadline = deadline;
}

/* The reply (st RLOCK_OK: rep) or the failure (st; the reason in x.xerr)
 * of lk's request: noted (as rlock__round_answer and rlock__round_store, one
 * node; not a cleanup's) and judged. A reply is read as plain numbers in
 * rep->v: the acquire script's {flag, pttl[, fence]}, extend's and
 * release's 1 or 0. Another shape or integer is RLOCK_E_PROTOCOL (the
 * connection dropped), a Redis error its status (NOSCRIPT: loaded with EVAL,
 * or our text), {0, -1} (held without a TTL) RLOCK_E_FOREIGN. */
static void rlock__c_answer(rlock_lock *lk, rlock_node *n, rlock_status st, rlock__c_rep *rep, rlock__ms now) {
    static const rlock__txt unexpected[RLOCK__TXT_TABLE(3)] = { /* by script: acquire, extend, release; one per line */
        RLOCK__TXT("unexpected reply to acquire"),
        RLOCK__TXT("unexpected reply to extend"),
        RLOCK__TXT("unexpected reply to release")
    };
    rlock_round *r = &lk->op.round;
    const char *why = n->x.xerr;
    size_t len;
#if RLOCK__HAS_FENCING
    rlock__num ran = 0; /* an acquire script answered with an error: it may have written */
#endif
    if (st == RLOCK_OK) {
        const char *s = rep->str;
        int t = rep->type, e = 0; /* (e: Redis's error's words, none for another reply) */
        n->x.xerr[0] = '\0'; /* (an answer's reason: none, or one of ours written there below) */
        if (t == '-') {
            e = rlock__error_scan(s, rep->len);
            if ((e & RLOCK__C_W_NOSCRIPT) && !RLOCK__C_EVALED(r)) {
                if (RLOCK__HAS_EVAL) { /* the server lost its script cache: the body once, with EVAL */
                    RLOCK__C_SET_EVALED(r, 1u);
                    n->x.active = 1; /* (it is alive: no idle probe) */
                    rlock__c_submit(lk, now);
                    n->x.active = 0;
                    return;
                }
                /* built without the texts: they must be loaded */
                (void)rlock__c_txt(n, RLOCK__TXT("scripts not loaded: SCRIPT LOAD them (RLOCK_NO_EVAL_FALLBACK)"));
                st = RLOCK_E_REDIS;
                goto text;
            }
        }
        if (t == '-') { /* Redis's error */
            st = (rlock_status)(e & 31);
            /* (as rlock__round_store: a fence key holding no integer
             * fails the script after its SET, which Redis keeps;
             * without fencing nothing follows the SET) */
#if RLOCK__HAS_FENCING /* (#if: clang-tidy calls a store the folded test never reads dead) */
            ran = r->script == RLOCK__S_SIMPLE_ACQUIRE && (e & RLOCK__C_W_SCRIPT);
#endif
            /* failover: connect again (rx is kept). No reason into x.xerr: its
             * only request is answered (x.count 0, none fails with it), and
             * the node's diagnostic is the error's own text. */
            if (e & RLOCK__C_W_READONLY) rlock__c_down(n, RLOCK_E_REDIS);
            why = s; /* Redis's own text */
            len = rep->len;
            goto note;
        } else if (r->script != RLOCK__S_SIMPLE_ACQUIRE) {
            /* extend's and release's 1 or 0: any other integer is no answer of
             * theirs, not a "not ours" that would end a hold the server may keep */
            if (t != ':' || (unsigned long long)rep->v[0] > 1u) st = RLOCK_E_PROTOCOL;
        } else if ((unsigned long long)((rep->count - 2) | rep->v[0]) > 1u) {
            /* (not {0 or 1, pttl[, fence]}: count - 2 and the flag both 0
             * or 1, one test of the two (a negative one has high bits).
             * Only an array passes: another reply's count is its v[0],
             * an integer's value or a status's 0 (rlock__c_parse)) */
            st = RLOCK_E_PROTOCOL;
        } else if (!(rep->v[0] | ~rep->v[1])) { /* {0, -1}: the only pair whose v[0] | ~v[1] is 0 */
            st = RLOCK_E_FOREIGN;
            (void)rlock__c_txt(n, RLOCK__TXT("key exists without a TTL"));
        }
        if (st == RLOCK_E_PROTOCOL) /* well-formed, of the wrong shape: the stream is not trusted either */
            rlock__c_dropz(n, RLOCK_E_PROTOCOL, RLOCK__TXT_AT(unexpected, r->script));
    }
text:
    len = strlen(why);
note:
    if (lk->op.phase != RLOCK__PH_CLEANUP) rlock__node_note(n, st, why, len);
#if RLOCK__HAS_FENCING
    if (st != RLOCK_OK) rep->v[2] = ran; /* (a failure's v is read for this only: rlock__c_judge) */
#endif
    rlock__c_judge(lk, st, rep->v);
}

/* Move the request in flight along as far as the transport allows without
 * blocking: RLOCK_OK its reply is in *rep (pointing into rx until the next
 * call), RLOCK_WOULD_BLOCK not yet (or none in flight), else it failed with
 * that status (the text in x.xerr). */
static rlock_status rlock__c_next(rlock_node *n, rlock__ms now, rlock__c_rep *rep) {
    const rlock_transport *t = &n->transport;
    rlock__conn *x = &n->x;
    int due = RLOCK__C_DUE(now, n->q[0].deadline); /* (the request's: it does not change here) */
    rlock_status fst;
    rlock__txt why;
    for (;;) {
        long r, used;
        size_t room; /* what recv() was asked to move */
        if (x->failing) {
            fst = (rlock_status)x->failing;
            x->failing = x->count = 0;
            return fst;
        }
        if (!x->count) return RLOCK_WOULD_BLOCK;
        fst = RLOCK_E_IO;
        /* (a reply's wait times out below, only when nothing is left to read) */
        if (due && (x->conn != RLOCK__CONN_UP || x->tx_len)) goto timeout;
        if (x->conn != RLOCK__CONN_UP) {
            r = t->connect ? t->connect(t->ctx) : 1;
            if (r == RLOCK_IO_WOULD_BLOCK) { x->conn = RLOCK__CONN_CONNECTING; return RLOCK_WOULD_BLOCK; }
            why = RLOCK__TXT("the connection is in use by someone else");
            if (r == RLOCK_IO_BUSY) { x->conn = RLOCK__CONN_DOWN; goto io; } /* (close nothing) */
            why = RLOCK__TXT("connect failed");
            if (r < 0) goto io;
            x->conn = RLOCK__CONN_UP;
        }
        if (x->tx_len) {
            r = t->send(t->ctx, n->tx, x->tx_len);
            why = RLOCK__TXT("send failed");
            if (r < 0) goto io;
            why = RLOCK__TXT("transport sent more than asked");
            if ((size_t)r > x->tx_len) goto drop;
            x->tx_len -= (size_t)r; /* (tx keeps only what is unsent, as the general engine's) */
            memmove(n->tx, n->tx + r, x->tx_len);
            if (r > 0) continue;
        }
        /* the reply read so far (nothing yet: an incomplete one) */
        used = rlock__c_parse(n->rx, x->rx_len, sizeof n->rx, rep);
        fst = RLOCK_E_PROTOCOL;
        why = RLOCK__TXT("malformed or oversized reply");
        if (used < 0) goto drop;
        if (used > 0 && x->head) { /* AUTH's (bit 0) or SELECT's: the lowest bit set */
            if (rep->type == '-') {
                rlock__c_refused(n, x->head, rep->str, rep->len);
                continue;
            }
            if (rep->str[1] != 'K') goto drop; /* (not +OK: an integer, an array, another status; 8 B) */
            x->head &= x->head - 1u; /* (its lowest bit cleared) */
            x->rx_len -= (size_t)used; /* (the reply taken out of rx, as the send's bytes out of tx) */
            memmove(n->rx, n->rx + used, x->rx_len);
            if (x->head == RLOCK__C_ALONE) x->head = x->count = 0; /* the request may go now */
            continue;
        }
        /* more bytes than asked for: the stream is out of step */
        why = RLOCK__TXT("unexpected extra bytes after the reply");
        if (used > 0 && (size_t)used < x->rx_len) goto drop;
        if (used > 0) { /* (its bytes stay in rx until the next claim: nothing follows it) */
            x->count = 0;
            return RLOCK_OK;
        }
        fst = RLOCK_E_IO;
        room = sizeof n->rx - x->rx_len;
        r = t->recv(t->ctx, n->rx + x->rx_len, room);
        if (r == RLOCK_IO_WOULD_BLOCK) {
            /* times out only when nothing is left to read: a reply that came
             * while this process was stalled is still its own */
            if (!due) return RLOCK_WOULD_BLOCK;
            goto timeout;
        }
        why = RLOCK__TXT("connection closed by server");
        if (r == RLOCK_IO_CLOSED) goto io;
        why = RLOCK__TXT("recv failed");
        if (r < 0) goto io;
        why = RLOCK__TXT("transport returned more than asked");
        if ((size_t)r > room) goto drop;
        x->rx_len += (size_t)r;
        continue;
    timeout:
        why = RLOCK__TXT("timeout");
        goto drop;
    io: /* a transport call failed: its own text when it has one, else ours */
        rlock__c_io_why(n, why);
        rlock__c_down(n, fst);
        continue;
    drop:
        rlock__c_dropz(n, fst, why);
    }
}

/* RLOCK_WANT_* the connection needs now (inlined: smaller in each caller
 * than a call, measured). */
static RLOCK__INLINE int rlock__c_wants(const rlock_node *n) {
    if (n->x.failing || !n->x.count) return 0;
    if (n->x.conn != RLOCK__CONN_UP) return RLOCK_WANT_WRITE;
    return (n->x.tx_len ? RLOCK_WANT_WRITE : 0) | RLOCK_WANT_READ;
}
RLOCKDEF int rlock_node_wants(const rlock_node *node) {
    return node && node->magic == RLOCK__MAGIC_NODE ? rlock__c_wants(node) : 0;
}
RLOCKDEF int rlock_subscriber_wants(const rlock_subscriber *sub) {
    (void)sub; /* never attached: waiting is compiled out */
    return 0;
}



/* Begin lk's next round (cleanup 0: its op's request - an acquire's next
 * attempt, which draws a new token after a cleanup; always the acquire
 * script: the general engine's plain SET NX PX fast path, its follow-up
 * and its ACL bookkeeping are left out here, 117 B on Cortex-M4 - or, 1,
 * the release that cleans up after a failed attempt. The lease asked for
 * is the op's. */
enum { RLOCK__C_NEXT, RLOCK__C_CLEANUP };
typedef char rlock__c_phases[RLOCK__PH_CLEANUP == RLOCK__PH_ROUND + 1 ? 1 : -1];
static void rlock__op_finish(rlock_lock *lk, rlock_status st);
static void rlock__c_round(rlock_lock *lk, rlock__ms now, int cleanup) {
    rlock_op *op = &lk->op;
    rlock_round *r = &op->round;
    int kind = RLOCK__OP_RELEASE;
    rlock_node *n = lk->client->nodes[0];
    rlock__op_goto(lk, RLOCK__PH_ROUND + cleanup); /* (or CLEANUP: rlock__c_phases; first: a token not drawn ends it) */
    if (!cleanup) {
        kind = op->kind;
        if (kind == RLOCK__OP_ACQUIRE) {
            if (r->script || !op->attempts) {
                /* the first attempt, or the last round was a cleanup (an
                 * attempt's script is 0): a fresh grant - a new token, and
                 * the backoff's jitter seed (rlock__prng32's: 32 bits of
                 * the 8 drawn after it). A random source that fails ends
                 * the op at once: rlock__c_start reports it, nothing sent. */
                unsigned char rnd[RLOCK_TOKEN_LEN / 2 + 8];
                uint32_t seed;
                if (rlock__random(lk->client, rnd, sizeof rnd) != 0) { rlock__op_finish(lk, RLOCK_E_RANDOM); return; }
                memcpy(&seed, rnd + RLOCK_TOKEN_LEN / 2, 4);
                lk->prng = seed | 1u; /* (never 0, xorshift's fixed point: one bit less of jitter seed) */
                rlock__hex(lk->owner, rnd, RLOCK_TOKEN_LEN / 2);
                lk->state = RLOCK_STATE_IDLE; /* (its hold count is 1 while HELD: rlock_hold_count) */
            }
            if (op->timed == 2) op->wait_end = now + RLOCK__MS_FAR - 1u; /* forever: renewed by each attempt */
            op->attempts++;
#if !RLOCK__ENC_TEMPLATE /* (the general encoder's wait left: the templates send none) */
            {
                rlock__ms left = RLOCK__MS_BEFORE(now, op->wait_end) ? op->wait_end - now : 0;
                op->wait_left = left > 86400000u ? 86400000u : left;
            }
#endif
        }
        n->result = RLOCK_WOULD_BLOCK; /* (rlock__node_note's, no text) */
        n->err[0] = '\0';
    }
    RLOCK__C_SET_EVALED(r, 0u); /* (set only on NOSCRIPT: with the EVAL fallback) */
    r->script = kind - RLOCK__OP_ACQUIRE; /* a simple lock's script (rlock__c_ops_are_scripts) */
    RLOCK__C_SET_ENC(r, cleanup, cleanup); /* (the general encoder's; the compact engine reads the phase) */
    if (RLOCK__REQ_QUEUE) RLOCK__C_SET_ENC(r, wake, kind == RLOCK__OP_RELEASE && !cleanup); /* names the channel (fencing) */
    r->start = now;
    RLOCK__C_SET_ENC(r, ttl, op->ttl); /* (the templates read op.ttl: the same) */
    rlock__c_claim(n, lk, now); /* (rlock__c_submit) */
}

/* The op is over. (Its request is never in flight here but from
 * rlock_cancel_begin, which disowns it: its reply is read and discarded.
 * The judge runs once the answer is in (x.count 0); a token not drawn ends
 * an attempt before it is claimed. A stale owner, x.count 0, is never read:
 * rlock__c_next answers only a request in flight, claimed with its owner.) */
static void rlock__op_finish(rlock_lock *lk, rlock_status st) {
    lk->op.result = st;
    rlock__op_goto(lk, RLOCK__PH_DONE);
}

/* Statuses that end an acquire at once (as rlock__tally_status; and
 * RLOCK_E_CLOCK, which no answer carries: the judge's own): one bit each. */
typedef char rlock__c_statuses_fit[RLOCK_STATUS_COUNT <= 32 ? 1 : -1];
/* (the judge tests E_IO or E_PROTOCOL as one range) */
typedef char rlock__c_io_then_protocol[RLOCK_E_PROTOCOL == RLOCK_E_IO + 1 ? 1 : -1];
static int rlock__c_fatal(rlock_status st) {
    return (int)(((1ul << RLOCK_E_AUTH) | (1ul << RLOCK_E_WRONGTYPE) | (1ul << RLOCK_E_FOREIGN) | (1ul << RLOCK_E_BADARG) |
                  (1ul << RLOCK_E_MOVED) | (1ul << RLOCK_E_CLOCK)) >> st & 1u);
}

/* A grant or an extension whose round started at start: 1, and the
 * lease's times set, while validity is left now (elapsed < ttl - drift;
 * ttl > drift was checked); else 0. (The clock read here, not passed in by
 * the judge: its 64 bits set the validity's end; 4 B less, measured.) */
static int rlock__c_lease(rlock_lock *lk, rlock__ms start) {
    uint32_t ttl = lk->op.ttl;
    uint64_t now = rlock__now64(lk->client);
    rlock__ms life = lk->op.life, elapsed = (rlock__ms)now - start;
    if (elapsed >= life) return 0;
    /* An extend begun before the last grant: the clock hook stepped back;
     * no time passed since that grant, for max_hold_ms too (as
     * rlock__extend_round_done; an acquire sets held_since after this) */
    if (RLOCK__MS_BEFORE(start, lk->granted_at)) lk->held_since -= lk->granted_at - start;
    lk->granted_at = start;
    lk->renew_at = start + rlock__renew_interval(lk, ttl);
    lk->ttl_ms = ttl;
    /* (64-bit: a handle left unused for 24.8 days has none; what is left
     * is in (0, life], below 2^31: no clamp) */
    lk->validity_end = now + (life - elapsed);
    return 1;
}

/* Judge lk's answer (st; v: its numbers) at once, by the clock now: an
 * acquire attempt (as rlock__acquire_round_done, one node), an extend (as
 * rlock__extend_round_done), a release, or the cleanup after a failed
 * attempt. */
static void rlock__c_judge(rlock_lock *lk, rlock_status st, const rlock__num *v) {
    rlock_op *op = &lk->op;
    rlock__ms now = rlock__now(lk->client), start = op->round.start;
    int yes = st == RLOCK_OK && v[0] == 1;
    const rlock_config *cfg = &lk->client->cfg;
    rlock__ms d = cfg->backoff_min_ms, delay;
    uint32_t k;
    /* the longest backoff: the holder's PTTL + 1 from a refusal; none:
     * RLOCK__MS_FAR, which caps no delay (the wait left, < 2^31, caps it
     * below) (op.holder_wait is the general engine's: a refusal never has a
     * cleanup) */
    rlock__ms most = RLOCK__MS_FAR;
    int back;
    if (op->phase == RLOCK__PH_CLEANUP) goto again;
    lk->votes = (size_t)yes;
    if (op->kind == RLOCK__OP_RELEASE) { /* 1 released, 0 not ours (then it was lost) */
        if (st == RLOCK_OK) {
            if (!yes) rlock__mark_lost(lk), st = RLOCK_LOST; /* (on_lost once, as an extend's) */
            lk->state = RLOCK_STATE_IDLE;
        }
        rlock__op_finish(lk, st); /* an error: the outcome is unknown, the state kept */
        return;
    }
    back = RLOCK__MS_BEFORE(now, start); /* the clock went back */
    if (op->kind == RLOCK__OP_EXTEND) {
        int live = RLOCK__MS_BEFORE(now, lk->validity_end); /* (the hold's validity not run out) */
        if (back) {
            st = RLOCK_E_CLOCK;
        } else if (!live || (st == RLOCK_OK && !yes)) { /* validity ran out (whatever the answer), or refused */
            rlock__mark_lost(lk);
            st = RLOCK_LOST;
        } else if (yes && !rlock__c_lease(lk, start)) { /* (extended, but no validity left by now) */
            st = RLOCK_E_PROTOCOL;
        }
        rlock__op_finish(lk, st);
        return;
    }
    /* What the op ends with if it stops here or after the cleanup: OK when
     * cancelled, E_CLOCK when the clock went back, the failure, or (refused,
     * or granted too late) NOT_ACQUIRED or TIMEOUT. */
    op->result = st;
    if (op->cancel || back) {
        op->result = op->cancel ? RLOCK_OK : RLOCK_E_CLOCK;
    } else if (st == RLOCK_OK) {
        op->result = op->timed ? RLOCK_TIMEOUT : RLOCK_NOT_ACQUIRED; /* (unless granted, or followed up) */
        if (yes && rlock__c_lease(lk, start)) {
            lk->held_since = start;
            if (RLOCK__HAS_FENCING) lk->fence = v[2]; /* (else 0 since rlock_lock_init) */
            lk->renewals = 0;
            lk->lost_notified = 0;
            lk->state = RLOCK_STATE_HELD; /* (holds: 1 while HELD, rlock_hold_count; held_mask: no reader here, one node) */
            rlock__op_finish(lk, RLOCK_OK);
            return;
        }
        if (!yes) {
            most = (rlock__ms)(v[1] < 0 ? 0 : v[1]) + 1u; /* (32 bits: at most 2^31, past any wait left) */
            if (RLOCK__HAS_FENCING && v[1] >= (rlock__num)RLOCK__MS_FAR) most = RLOCK__MS_FAR; /* (64 bits: not cut to 32) */
        }
    }
    /* Release what we may hold: a grant too late to use, or an answer we
     * never got (the SET may have landed). */
    if (yes || (unsigned)st - RLOCK_E_IO <= 1u || (RLOCK__HAS_FENCING && st != RLOCK_OK && v[2])) { /* (E_IO or E_PROTOCOL:
                                                                                   rlock__c_io_then_protocol) */
        rlock__c_round(lk, now, RLOCK__C_CLEANUP); /* (the retry's token is a new one: rlock__c_round) */
        return;
    }
again: /* after a failed attempt (and its cleanup): back off and retry, or
        * end (cancelled, a status that ends it, the wait over, max_attempts
        * reached). Exponential backoff with jitter, in [d/2, d] (32-bit
        * division), d doubled once per attempt after the first (attempts >=
        * 1 here), never past the holder's PTTL or the wait. */
    if (op->cancel || rlock__c_fatal((rlock_status)op->result) || RLOCK__C_DUE(now, op->wait_end) ||
        op->attempts > cfg->max_attempts - 1u) { /* (max_attempts 0: no cap, its - 1 the largest) */
        rlock__op_goto(lk, RLOCK__PH_DONE); /* (op_finish, its result set already) */
        return;
    }
    for (k = op->attempts; --k && d < cfg->backoff_max_ms;) d <<= 1;
    if (d > cfg->backoff_max_ms) d = cfg->backoff_max_ms;
    delay = d / 2 + rlock__prng32(lk) % (d - d / 2 + 1);
    if (most > op->wait_end - now) most = op->wait_end - now; /* (< 2^31: the wait is not over) */
    if (delay > most) delay = most;
    op->wake_at = now + delay;
    rlock__op_goto(lk, RLOCK__PH_BACKOFF);
}

/* Drive every operation of c: read the reply in flight, hand it to its
 * lock, let each op move on (the next whose turn it is sends) - until
 * nothing new is sent. */
static void rlock__client_step(rlock_client *c) {
    rlock_node *n = c->nodes[0];
    int pass;
    for (pass = 0; pass < 4; pass++) {
        rlock__ms now = rlock__now(c);
        unsigned long before = n->x.commands;
        rlock__c_rep rep;
        rlock_status st;
        rlock_lock *o;
        while ((st = rlock__c_next(n, now, &rep)) != RLOCK_WOULD_BLOCK)
            if (n->q[0].owner) rlock__c_answer((rlock_lock *)n->q[0].owner, n, st, &rep, now);
        /* the next lock's request goes out now: its timeout runs from then
         * (a reply may have come inside a blocking call) */
        now = rlock__now(c);
        /* each op moves as far as it can now: a backoff ends, a request
         * whose turn came goes out (one that fails before it is sent is
         * answered by the next rlock__c_next, never judged from here: judge
         * -> next round -> submit -> judge would be a cycle) */
        for (o = c->ops; o; o = o->op.next) {
            rlock_op *op = &o->op;
            if (op->phase == RLOCK__PH_BACKOFF && RLOCK__C_DUE(now, op->wake_at)) rlock__c_round(o, now, RLOCK__C_NEXT);
            if (op->phase == RLOCK__PH_ROUND || op->phase == RLOCK__PH_CLEANUP) rlock__c_claim(n, o, now); /* (rlock__c_submit: n is its node) */
        }
        if (n->x.commands == before) break;
    }
}

/* The sooner of next and the ms until t (0: due). */
static uint32_t rlock__c_sooner(uint32_t next, rlock__ms now, rlock__ms t) {
    rlock__ms d = RLOCK__MS_BEFORE(now, t) ? t - now : 0;
    return d < next ? d : next;
}
/* In how many ms c must be stepped again even without I/O (UINT32_MAX:
 * never), for an op's next step: an op that is done waits for its own
 * caller to collect it, not for a step - counted "due now", it made a
 * blocking call beside it spin until its own op ended (the client's
 * interest counts one: rlock_client_interest). */
static uint32_t rlock__c_due_in(const rlock_client *c) {
    const rlock_lock *o;
    const rlock_node *n = c->nodes[0];
    rlock__ms now = rlock__now(c); /* (read here: one call for both callers) */
    uint32_t next = UINT32_MAX;
    if (n->x.failing) return 0; /* (a failure before sending: answered at the next step) */
    /* (not connected yet: no descriptor to watch, its connect is due now) */
    if (rlock__c_wants(n)) next = n->x.conn == RLOCK__CONN_NEW ? 0 : rlock__c_sooner(next, now, n->q[0].deadline);
    for (o = c->ops; o; o = o->op.next)
        if (o->op.phase == RLOCK__PH_BACKOFF) next = rlock__c_sooner(next, now, o->op.wake_at);
    return next;
}
RLOCKDEF uint32_t rlock_next_timeout_ms(const rlock_lock *lk) {
    uint32_t next;
    /* (an op is linked to its client from its start until its result is
     * taken: lk's done is due now, another's not, rlock__c_due_in) */
    if (!rlock__lock_ok(lk) || lk->op.kind == RLOCK__OP_NONE || lk->op.phase == RLOCK__PH_DONE) return 0;
    next = rlock__c_due_in(lk->client);
    return next == UINT32_MAX ? 0 : next;
}

/* The connection's interest into *out (NULL: not wanted) when it needs
 * I/O: 0 none, 1, or 2 when connect() has not run yet (step at once). */
static int rlock__client_interest(const rlock_client *c, rlock_interest *out) {
    const rlock_node *n = c->nodes[0];
    const rlock_transport *t = &n->transport;
    int w = rlock__c_wants(n), fd;
    if (!w) return 0;
    fd = t->fd ? t->fd(t->ctx) : -1;
    if (out) {
        out->conn = n;
        out->fd = fd;
        out->gen = n->x.gen;
        if (t->events && fd >= 0) w = t->events(t->ctx, w);
        out->events = w;
    }
    return n->x.conn == RLOCK__CONN_NEW ? 2 : 1;
}

/* Block until the connection can move or timeout_ms passes (sleep when
 * nothing is in flight; none when connect() has not run yet: step at once).
 * One connection: the transport's wait() alone (wait_many is for waiting on
 * several at once; a transport's wait() turns rlock's wants into its own
 * events itself), 58 B less on Cortex-M4. */
static void rlock__client_wait(rlock_client *c, uint32_t timeout_ms) {
    rlock_node *n = c->nodes[0];
    const rlock_transport *t = &n->transport;
    int w = rlock__c_wants(n);
    if (!w) {
        if (timeout_ms) rlock__sleep(c, timeout_ms);
        return;
    }
    if (n->x.conn != RLOCK__CONN_NEW && t->wait) (void)t->wait(t->ctx, w, timeout_ms);
}

RLOCKDEF rlock_status rlock_client_connect(rlock_client *c, uint32_t timeout_ms) {
    rlock_node *n;
    rlock__ms deadline;
    size_t len = 0;
    rlock_status st;
    if (!rlock__client_ok(c)) return RLOCK_E_BADARG;
    if (timeout_ms == 0) return rlock__why(c->why, RLOCK__TXT("timeout_ms is 0"), 0, 0);
    if (c->ops) return RLOCK_E_STATE;
    n = c->nodes[0];
    /* A cancelled op's reply is due first (no op runs: its owner is gone):
     * read and dropped, or failed, within its own node timeout. */
    for (;;) {
        rlock__ms now = rlock__now(c);
        rlock__c_rep rep;
        if (rlock__c_next(n, now, &rep) != RLOCK_WOULD_BLOCK) continue;
        if (!n->x.count) break;
        rlock__client_wait(c, rlock__c_sooner(UINT32_MAX, now, n->q[0].deadline));
    }
    deadline = rlock__now(c) + (timeout_ms < RLOCK__MS_FAR ? timeout_ms : RLOCK__MS_FAR - 1u);
    rlock__c_claim(n, NULL, deadline);
    st = (rlock_status)n->x.failing; /* (RLOCK_OK: none) */
    n->x.failing = n->x.count = 0; /* (a failure is told here, not by the next step) */
    if (st == RLOCK_OK && (len = rlock__encode_ping(n->tx + n->x.tx_len, sizeof n->tx - n->x.tx_len)) > 0) {
        n->x.tx_len += len;
        n->x.count = 1;
        n->x.commands++;
        n->q[0].owner = NULL;
        n->q[0].deadline = deadline;
        rlock__node_notez(n, RLOCK_WOULD_BLOCK, "");
        for (;;) {
            rlock__ms now = rlock__now(c);
            rlock__c_rep rep;
            st = rlock__c_next(n, now, &rep);
            if (st == RLOCK_WOULD_BLOCK) {
                rlock__client_wait(c, rlock__c_sooner(UINT32_MAX, now, deadline));
                continue;
            }
            if (st != RLOCK_OK) rlock__node_notez(n, st, n->x.xerr);
            else if (rep.type == '+') return rlock__node_notez(n, RLOCK_OK, ""), RLOCK_OK;
            else if (rep.type == '-') rlock__node_note(n, rlock__map_error(rep.str, rep.len), rep.str, rep.len);
            else { /* a well-formed reply of the wrong type: the stream is not trusted either */
                rlock__c_dropz(n, RLOCK_E_PROTOCOL, RLOCK__TXT("unexpected reply to PING"));
                rlock__node_notez(n, RLOCK_E_PROTOCOL, n->x.xerr);
            }
            break;
        }
    } else { /* (the claim failed; or PING does not fit behind AUTH / SELECT) */
        if (st == RLOCK_OK) n->x.conn = RLOCK__CONN_DOWN, n->x.gen--; /* (never connected: set up again by the next claim) */
        rlock__node_notez(n, st == RLOCK_OK ? RLOCK_E_STATE : st, st == RLOCK_OK ? "" : n->x.xerr);
    }
    return n->result == RLOCK_OK ? RLOCK_E_PROTOCOL : n->result;
}

/* (down and idle already: only x.xerr, the scratch of the next failure, is
 * written) */
RLOCKDEF void rlock_client_close(rlock_client *c) {
    if (rlock__client_ok(c)) rlock__c_dropz(c->nodes[0], RLOCK_E_IO, RLOCK__TXT("connection closed by rlock_client_close"));
}

RLOCKDEF rlock_status rlock_cancel_begin(rlock_lock *lk) {
    rlock_op *op;
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    op = &lk->op;
    if (op->kind == RLOCK__OP_NONE) return RLOCK_E_STATE;
    if (op->phase != RLOCK__PH_DONE) {
        rlock__conn *x = &lk->client->nodes[0]->x;
        int out = lk->client->nodes[0]->q[0].owner == lk; /* (its request holds the slot) */
        /* Not begun to go out - all its bytes still in tx, queued alone
         * (not behind AUTH / SELECT: x.head) - it never does: taken back,
         * the slot emptied (not a cleanup's: it releases what the attempt may
         * have been granted). One partly sent goes on whole, its reply
         * read and dropped. (Behind AUTH / SELECT, which go alone first, a
         * request is not queued yet: an acquire waits for them, and its
         * attempt, as before; an extend or release ends below, unsent.) */
        if (out && op->phase != RLOCK__PH_CLEANUP && !x->failing && x->count && !x->head &&
            x->tx_len == lk->client->nodes[0]->q[0].len) {
            x->count = 0;
            x->tx_len = 0;
            x->commands--; /* (never sent) */
            out = 0;
        }
        /* an acquire whose attempt is out (one still waiting for its turn,
         * or taken back above, sent nothing) waits for its answer and
         * releases what it granted (the attempt's end sees op->cancel), as
         * does its cleanup; else done */
        if (op->kind == RLOCK__OP_ACQUIRE && (op->phase == RLOCK__PH_CLEANUP || (op->phase == RLOCK__PH_ROUND && out)))
            op->cancel = 1;
        else {
            if (out) lk->client->nodes[0]->q[0].owner = NULL; /* (its reply is read and discarded) */
            rlock__op_finish(lk, RLOCK_OK);
        }
    }
    return rlock_step(lk);
}

/* The public calls that start and time operations, for simple locks on one
 * node (the general engine's carry reentrant owners, wait queues, Redlock
 * and the Cluster). */
static rlock_status rlock__begin(rlock_lock *lk);
static void rlock__op_link(rlock_lock *lk, int kind, uint32_t ttl);

RLOCKDEF size_t rlock_client_interest(rlock_client *c, rlock_interest *out, size_t cap, uint32_t *timeout_ms) {
    const rlock_lock *o;
    size_t n;
    uint32_t next;
    int k;
    if (timeout_ms) *timeout_ms = 0;
    if (!rlock__client_ok(c) || (!out && cap)) return 0;
    k = rlock__client_interest(c, cap ? out : NULL);
    n = k != 0;
    if (!timeout_ms || k == 2) return n;
    next = !c->ops && n == 0 ? UINT32_MAX : rlock__c_due_in(c);
    for (o = c->ops; o; o = o->op.next)
        if (o->op.phase == RLOCK__PH_DONE) next = 0; /* (its caller collects it: a step is due now) */
    *timeout_ms = next;
    return n;
}

/* The three calls that start an operation share one body (op: which):
 * their checks in their order, then the op's first round. An acquire
 * waits up to wait_ms; an extend's and a release's wait_ms is 0. The
 * blocking calls run it and then the steps (rlock__run_op), so that a
 * program of begin calls only does not link the blocking wait: 164 B on
 * Cortex-M4, measured. (noinline: smaller, measured.) */
static RLOCK__NOINLINE rlock_status rlock__c_start(rlock_lock *lk, int op, long long ttl_ms, long long wait_ms) {
    rlock__ms now;
    uint32_t life = 0;
    rlock_state now_st; /* (an acquire's and an extend's: lk->state, once its validity is looked at) */
    rlock_status st = rlock__begin(lk);
    if (st != RLOCK_OK) return st;
    if (op == RLOCK__OP_RELEASE) {
        /* A LOST lock is still released: the script is owner-checked. */
        if (lk->state == RLOCK_STATE_IDLE) return RLOCK_NOT_HELD;
        ttl_ms = lk->ttl_ms;
    } else {
        if ((life = rlock__check_ttl(lk, ttl_ms)) == 0) return RLOCK_E_BADARG;
        if (wait_ms < 0) return rlock__why(lk->why, RLOCK__TXT("wait \1 ms is negative"), wait_ms, 0);
        /* Validity ran out: whatever Redis has now is not our old grant. Say
         * so (on_lost); an acquire then acquires afresh, an extend is LOST. */
        if ((now_st = rlock_lock_state(lk)) == RLOCK_STATE_LOST) rlock__mark_lost(lk); /* (LOST already: stays so, on_lost once) */
        if (op == RLOCK__OP_EXTEND) {
            if (now_st == RLOCK_STATE_IDLE) return RLOCK_NOT_HELD;
            if (now_st == RLOCK_STATE_LOST) return RLOCK_LOST;
        } else {
            if (now_st == RLOCK_STATE_HELD && rlock__token_kind(lk->kind)) return RLOCK_E_STATE; /* (always: simple) */
            if (RLOCK__FENCING(lk->client) && lk->aux_base_len == 0) /* no same-slot counter name */
                return rlock__why(lk->why, RLOCK__TXT("fencing: the key has a '}' outside a hash tag, so no counter name hashes to its slot"), 0, 0);
            /* (a fresh grant's token: rlock__c_round's, the first attempt's) */
        }
    }
    rlock__op_link(lk, op, (uint32_t)ttl_ms); /* (checked: < 2^31) */
    now = rlock__now(lk->client);
    lk->op.life = life; /* (a release's: unused) */
    /* an acquire's wait (an extend's and a release's is 0, unused): of
     * RLOCK__MS_FAR (2^31 - 1) ms or more is forever (timed 2), its end set
     * by each attempt (rlock__c_round) */
    lk->op.timed = wait_ms >= RLOCK__MS_FAR ? 2 : (rlock__ms)wait_ms != 0; /* (below it: 32 bits) */
    lk->op.wait_end = now + (rlock__ms)wait_ms;
    rlock__c_round(lk, now, RLOCK__C_NEXT);
    /* (an op the random source ended at once - no token, nothing sent - is
     * reported now, and taken off the client by its first step) */
    return lk->op.phase == RLOCK__PH_DONE ? rlock_step(lk) : RLOCK_WOULD_BLOCK;
}
RLOCKDEF rlock_status rlock_acquire_begin(rlock_lock *lk, long long ttl_ms, long long wait_ms) {
    return rlock__c_start(lk, RLOCK__OP_ACQUIRE, ttl_ms, wait_ms);
}
/* A call without a wait (extend's, release's, try_acquire's; begin or
 * blocking): their wait_ms 0 goes on the stack in this one place; their
 * calls pass their arguments on in registers. */
static RLOCK__NOINLINE rlock_status rlock__c_start_now(rlock_lock *lk, int op, long long ttl_ms) {
    return rlock__c_start(lk, op, ttl_ms, 0);
}
RLOCKDEF rlock_status rlock_extend_begin(rlock_lock *lk, long long ttl_ms) {
    return rlock__c_start_now(lk, RLOCK__OP_EXTEND, ttl_ms);
}
RLOCKDEF rlock_status rlock_release_begin(rlock_lock *lk) {
    return rlock__c_start_now(lk, RLOCK__OP_RELEASE, 0);
}

#ifdef RLOCK_NO_ERROR_TEXTS
static RLOCK__INLINE rlock__txt rlock__txt_line(rlock__txt t) {
    return t < 256 ? t + rlock__c_txt_near : t;
}
#endif
#endif /* RLOCK__COMPACT */

static RLOCK__FEW void rlock__op_link(rlock_lock *lk, int kind, uint32_t ttl) {
    rlock_client *c = lk->client;
    memset(&lk->op, 0, sizeof lk->op);
    lk->op.kind = kind;
    lk->op.ttl = ttl;
    lk->op.next = c->ops;
    c->ops = lk;
#if !RLOCK__COMPACT
    lk->op.stamp = c->stamp[0];
#endif
}

#if !RLOCK__COMPACT
/* (the general engine's; only an op in progress, kind not NONE: it is in
 * the client's list from rlock__op_link on, unless the client was
 * initialised since. Its next and phase are left: read only while linked,
 * and rlock__op_link clears them.) */
static RLOCK__INLINE void rlock__op_unlink(rlock_lock *lk) {
    rlock_lock **p = &lk->client->ops;
    /* (an op of a client initialised again is in no list: the walk stops
     * at the end - rlock__result ended it) */
    while (*p != lk && *p) p = &(*p)->op.next;
    if (*p) *p = lk->op.next;
    lk->op.kind = RLOCK__OP_NONE;
}
#endif /* !RLOCK__COMPACT */

/* rlock_result of a valid handle; step (the compact rlock_step): its
 * client is stepped first while its op is not done (the compact engine
 * never unlinks an op while stepping: it stays until its result is taken). */
#if RLOCK__COMPACT
/* (The compact engine's: the op is looked for in its client's list - the
 * walk that unlinks a finished one - after each step, which walks that
 * list anyway (rlock__client_step); rlock_result alone stays O(1). One in
 * no list (the client initialised again while it ran: no step moves it)
 * ends RLOCK_E_STATE, once nothing is in flight on the node - a request of
 * its that is out is answered and judged first, and a reply is never
 * handed to an op that ended. Inline: one caller in a firmware.) */
static RLOCK__INLINE rlock_status rlock__result(rlock_lock *lk, int step) {
    rlock_client *c = lk->client;
    rlock_lock **p = &c->ops;
    if (lk->op.kind == RLOCK__OP_NONE) return RLOCK_E_STATE;
    if (lk->op.phase != RLOCK__PH_DONE) {
        if (!step) return RLOCK_WOULD_BLOCK;
        rlock__client_step(c);
    }
    while (*p != lk && *p) p = &(*p)->op.next;
    if (lk->op.phase != RLOCK__PH_DONE) {
        if (*p || c->nodes[0]->x.count) return RLOCK_WOULD_BLOCK;
        lk->op.kind = RLOCK__OP_NONE;
        return RLOCK_E_STATE;
    }
    if (*p) *p = lk->op.next;
    lk->op.kind = RLOCK__OP_NONE;
    return (rlock_status)lk->op.result;
}
#else
static rlock_status rlock__result(rlock_lock *lk, int step) {
    rlock_status st;
    if (lk->op.kind == RLOCK__OP_NONE) return RLOCK_E_STATE;
    /* Another stamp: the client was initialised again while the op ran
     * (rlock_client_init cannot see it: c may be memory never
     * initialised), so it is in the client's list no more: no step would
     * move it again and a cancel or destroy would wait for ever. Unless
     * done already (cancelled), it ends here, RLOCK_E_STATE: its requests
     * disowned (their replies read and dropped), its subscriptions, the
     * old client's, not handed to this one; rlock__op_unlink finds it in
     * no list. The stamp (32 of the 64 random bits drawn at each init;
     * the same again: 2^-32) is O(1): walking the list here cost every
     * step of every op in flight. (The compact engine has no stamp: no
     * room; its rlock__result looks for the op in the list its step walks
     * anyway.) */
    if (lk->op.stamp != lk->client->stamp[0] && lk->op.phase != RLOCK__PH_DONE) {
        rlock_op *op = &lk->op;
        op->sub_ok = op->sub_pending = 0;
        /* Its attempt (or that attempt's cleanup) was out: it may have been
         * granted. Released as a cancel's cleanup releases it (owner-checked,
         * its token), on every node of this client - which of them the
         * attempt reached is the old client's numbering - and on a node kept
         * behind the attempt's own request. Nobody waits for the answers:
         * disowned below, but sent all the same (RLOCK__X_KEEP), with the
         * client's next step. Not a re-entry's: only its answers tell what
         * it added. */
        if (op->kind == RLOCK__OP_ACQUIRE && lk->state != RLOCK_STATE_HELD)
            rlock__round_begin(lk, RLOCK__OP_RELEASE, ~0u, rlock__now(lk->client)); /* (never tallied) */
        rlock__op_finish(lk, RLOCK_E_STATE);
    }
    if (step && lk->op.phase != RLOCK__PH_DONE) rlock__client_step(lk->client);
    if (lk->op.phase != RLOCK__PH_DONE) return RLOCK_WOULD_BLOCK;
    st = (rlock_status)lk->op.result;
    rlock__op_unlink(lk);
    return st;
}
#endif
RLOCKDEF rlock_status rlock_result(rlock_lock *lk) {
    return rlock__lock_ok(lk) ? rlock__result(lk, 0) : RLOCK_E_BADARG;
}

RLOCKDEF rlock_status rlock_step(rlock_lock *lk) {
    rlock_status st;
    /* (compact: one body with rlock_result's, no second handle check - a
     * firmware steps, and rlock_result is then not linked; the general
     * engine shares rlock_result) */
    if (RLOCK__COMPACT) return rlock__lock_ok(lk) ? rlock__result(lk, 1) : RLOCK_E_BADARG;
    /* WOULD_BLOCK: a valid handle whose op is in progress and not done
     * (a done op's result is its outcome, never WOULD_BLOCK: the blocking
     * calls loop on it), the one case that steps its client; then its
     * result, the handle checked again (a callback may have destroyed it). */
    st = rlock_result(lk);
    if (st != RLOCK_WOULD_BLOCK) return st;
    rlock__client_step(lk->client);
    return rlock_result(lk);
}

#if !RLOCK__COMPACT /* 6.8c has the compact engine's */
/* When c must be stepped again even without I/O, from now: the earliest op
 * timer or request deadline (RLOCK__MS_FAR: none; past: above it). For
 * one op's next step (self): another op that is done waits for its own
 * caller to collect it, not for a step - counted "due now", it made a
 * blocking call beside it spin without sleeping until its own op ended. */
static rlock__ms rlock__client_next(const rlock_client *c, const rlock_lock *self) {
    const rlock_lock *o;
    rlock__ms now = rlock__now(c), next = now + RLOCK__MS_FAR;
    rlock__x *const *p;
    for (o = c->ops; o; o = o->op.next)
        /* A release notice read with the refusal it follows (one recv, one
         * pump) was delivered before the round ended: the op went to
         * WAITMSG already woken, and only its next step retries. Due now,
         * not at wake_at (the re-check: that wait was a lost wake-up). */
        if ((o->op.phase == RLOCK__PH_DONE && !self) ||
            (o->op.phase == RLOCK__PH_WAITMSG && (o->op.woke || o->op.standby || !o->op.sub_ok)) ||
            (o->op.phase == RLOCK__PH_SUBSCRIBE && !o->op.sub_pending)) /* (its subscriptions lost) */
            next = now;
        else if ((o->op.phase == RLOCK__PH_BACKOFF || o->op.phase == RLOCK__PH_WAITMSG ||
                  o->op.phase == RLOCK__PH_SUBSCRIBE) && RLOCK__MS_SOONER(now, o->op.wake_at, next))
            next = o->op.wake_at;
    for (p = c->conns; *p; p++) {
        rlock__x *n = *p;
        /* (one not connected yet has no descriptor to watch: its connect is
         * the next step's, now - not at its request's deadline, unsent) */
        next = n->conn == RLOCK__CONN_NEW ? now : rlock__x_deadline(n, now, next); /* (one that wants no I/O has none in flight) */
    }
    return next - now;
}
#endif

#if !RLOCK__COMPACT /* 6.8c has the compact engine's (simple locks, one node) */
RLOCKDEF uint32_t rlock_next_timeout_ms(const rlock_lock *lk) {
    rlock__ms next;
    if (!rlock__lock_ok(lk) || lk->op.kind == RLOCK__OP_NONE || lk->op.phase == RLOCK__PH_DONE) return 0;
    next = rlock__client_next(lk->client, lk); /* past (>= 2^31) or none (RLOCK__MS_FAR): 0 */
    return next >= RLOCK__MS_FAR ? 0 : next;
}

RLOCKDEF size_t rlock_client_interest(rlock_client *c, rlock_interest *out, size_t cap, uint32_t *timeout_ms) {
    rlock__ms next;
    size_t n;
    int connecting;
    if (timeout_ms) *timeout_ms = 0;
    if (!rlock__client_ok(c) || (!out && cap)) return 0;
    n = rlock__client_interest(c, out, cap, &connecting);
    if (!timeout_ms || connecting) return n;
    next = rlock__client_next(c, NULL);
    /* (no op and no connection to watch: nothing is due, next is RLOCK__MS_FAR) */
    if (next == RLOCK__MS_FAR) *timeout_ms = UINT32_MAX;
    else *timeout_ms = next > RLOCK__MS_FAR ? 0 : next; /* > RLOCK__MS_FAR: past */
    return n;
}
#endif

RLOCKDEF rlock_status rlock_client_step(rlock_client *c) {
    if (!rlock__client_ok(c)) return RLOCK_E_BADARG;
    rlock__client_step(c);
    return RLOCK_OK;
}

RLOCKDEF int rlock_acquire_waiting(const rlock_lock *lk) {
    return rlock__lock_ok(lk) && lk->op.kind == RLOCK__OP_ACQUIRE &&
           (lk->op.phase == RLOCK__PH_BACKOFF || lk->op.phase == RLOCK__PH_WAITMSG ||
            lk->op.phase == RLOCK__PH_SUBSCRIBE);
}

#if !RLOCK__COMPACT /* 6.8c has the compact engine's */
RLOCKDEF rlock_status rlock_cancel_begin(rlock_lock *lk) {
    /* (no valid handle, or no op: rlock_step says so - E_BADARG, E_STATE) */
    /* (an op cut off by rlock_client_init too: rlock__result ends it - acted
     * on here, its old client's subscriptions would linger in the new one's) */
    if (rlock__lock_ok(lk) && lk->op.kind != RLOCK__OP_NONE && lk->op.phase != RLOCK__PH_DONE &&
        lk->op.stamp == lk->client->stamp[0]) {
        rlock_client *c = lk->client;
        rlock_op *op = &lk->op;
        if (op->kind == RLOCK__OP_ACQUIRE && (op->phase == RLOCK__PH_ROUND || op->phase == RLOCK__PH_CLEANUP) &&
            (op->round.queued | op->reached)) {
            /* Its answers may grant: wait for them, then release (the
             * round's end sees op->cancel). A round none of whose requests
             * was handed to a connection yet (waiting for pipeline room),
             * of an op no round of which reached a node, ends below. */
        } else if (op->kind == RLOCK__OP_ACQUIRE && lk->queued) {
            /* A queued waiter between rounds (Pub/Sub, fair, a semaphore):
             * its entry would make the next release wake it, reserve the
             * key or hand it a permit - for a waiter gone, while the one
             * behind it waits on. One last attempt with no wait left leaves
             * the queue as a waiter whose wait ran out does (or claims what
             * was reserved or handed meanwhile, or a free key, which the
             * cancel then releases, as any grant the cancel's round gets). */
            op->timed = 1; /* (not forever: the last attempt) */
            op->wait_end = rlock__now(c);
            rlock__acquire_next_round(lk, op->wait_end);
        } else {
            /* Between rounds (nothing granted), or an extend / release: their
             * answers are not needed; they are read and discarded (op_finish). */
            rlock__op_finish(lk, RLOCK_OK);
            rlock__subs_listen(c);
        }
        op->cancel = 1; /* (a finished op does not read it) */
    }
    return rlock_step(lk);
}
#endif

#if !RLOCK__COMPACT
static rlock_status rlock__run(rlock_lock *lk, rlock_status st);
#endif
RLOCKDEF void rlock_cancel(rlock_lock *lk) {
#if RLOCK__COMPACT
    rlock_status st = rlock_cancel_begin(lk);
    while (st == RLOCK_WOULD_BLOCK) {
        rlock__client_wait(lk->client, rlock_next_timeout_ms(lk));
        st = rlock_step(lk);
    }
#else /* (the blocking calls' loop: one step more, at once, than the above) */
    (void)rlock__run(lk, rlock_cancel_begin(lk));
#endif
}

/* Common checks of every *_begin. A semaphore's or multi-lock's parts of
 * the operations are reached through rlock__set_all's pointers (NULL in the
 * other sets, all of them): a handle of those kinds without them (not made
 * by its init call) is refused here, before anything could call through
 * one. (Naming rlock__set_all here would link every primitive.) */
static rlock_status rlock__begin(rlock_lock *lk) {
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (lk->op.kind != RLOCK__OP_NONE) return RLOCK_E_STATE;
#ifndef RLOCK_NO_PRIMITIVES
    if ((lk->kind == RLOCK_KIND_SEMAPHORE || lk->kind == RLOCK_KIND_MULTI) && !lk->scripts->enc_prim)
        return RLOCK_E_STATE;
#endif
    return RLOCK_OK;
}
#if !RLOCK__COMPACT /* 6.8c has the compact engine's (simple locks, one node) */
/* The three calls that start an operation share one body (op: which):
 * their checks, then the op's first round. An acquire waits up to wait_ms;
 * an extend's and a release's wait_ms is 0, a release's ttl_ms too (it
 * asks for the lease it holds). */
static RLOCK__NOINLINE rlock_status rlock__start(rlock_lock *lk, int op, long long ttl_ms, long long wait_ms) {
    rlock_client *c;
    rlock__ms now;
    int token;
    rlock__txt why;
    rlock_status st = rlock__begin(lk);
    if (st != RLOCK_OK) return st;
    c = lk->client;
    if (op != RLOCK__OP_RELEASE) {
        if (!rlock__check_ttl(lk, ttl_ms)) return RLOCK_E_BADARG;
        /* the first check that fails picks the reason; one rlock__why writes
         * it (a lock the fencing check refuses was never held: it is checked
         * before the state) */
        if (wait_ms < 0) why = RLOCK__TXT("wait \1 ms is negative");
        else if (op == RLOCK__OP_ACQUIRE && RLOCK__FENCING(c) &&
                 (lk->kind == RLOCK_KIND_MULTI ? !RLOCK__MULTI_AUX(lk) : lk->aux_base_len == 0))
            why = RLOCK__TXT("fencing: the key has a '}' outside a hash tag, so no counter name hashes to its slot"); /* no same-slot counter name */
        else why = 0;
        if (why) return rlock__why(lk->why, why, wait_ms, 0);
        /* Validity ran out: whatever Redis has now is not our old grant. Say
         * so (on_lost); an extend is then LOST, an acquire acquires afresh -
         * never as a re-entry that would silently lose the earlier holds. */
        if (rlock_lock_state(lk) == RLOCK_STATE_LOST) rlock__mark_lost(lk); /* (LOST already: stays so, on_lost once) */
    }
    now = rlock__now(c);
    if (op != RLOCK__OP_ACQUIRE) {
        if (lk->state == RLOCK_STATE_IDLE) return RLOCK_NOT_HELD;
        /* A LOST lock is still released: the script is owner-checked, so
         * it only removes what is still ours, and it tells us if anything
         * was. */
        if (op == RLOCK__OP_RELEASE) ttl_ms = lk->ttl_ms;
        else if (lk->state == RLOCK_STATE_LOST) return RLOCK_LOST; /* (on_lost: above) */
        rlock__op_link(lk, op, (uint32_t)ttl_ms); /* checked: < 2^31 */
        rlock__op_goto(lk, RLOCK__PH_ROUND); /* (one round on every node) */
        rlock__round_begin(lk, op, 0, now);
        return RLOCK_WOULD_BLOCK;
    }
    token = rlock__token_kind(lk->kind);
    if (lk->state == RLOCK_STATE_HELD && token) return RLOCK_E_STATE;
    if (lk->state != RLOCK_STATE_HELD) {
        /* A fresh grant: new token (simple) or owner id (reentrant). */
        unsigned char rnd[RLOCK_TOKEN_LEN / 2 + 16];
        if (rlock__random(c, rnd, sizeof rnd) != 0) return RLOCK_E_RANDOM;
        rlock__hex(lk->waiter_id, rnd + RLOCK_TOKEN_LEN / 2 + 8, 8);
        memcpy(&lk->prng, rnd + RLOCK_TOKEN_LEN / 2, sizeof lk->prng);
        if (!lk->prng) lk->prng = 0x9e3779b9u;
        if (token || lk->stale) { /* a token (stale: see rlock__round_answer), written in place */
            rlock__hex(lk->owner, rnd, RLOCK_TOKEN_LEN / 2);
        } else { /* cfg.owner; or by default "instance id:thread id" */
            char def[17 + 24];
            const char *src = c->cfg.owner;
            size_t len;
            if (!src) {
                memcpy(def, c->instance_id, 16);
                def[16] = ':';
                (void)rlock__utoa(def + 17, (rlock__unum)RLOCK_THREAD_ID());
                src = def;
            }
            len = strlen(src);
            /* (a thread id has at most 3 digits per byte: with the default
             * RLOCK_MAX_OWNER_LEN the default cannot fail, and its text is
             * not compiled) */
            if (len == 0 || len > RLOCK_MAX_OWNER_LEN)
                why = RLOCK_MAX_OWNER_LEN < 17 + 3 * sizeof(unsigned long) && src == def
                          ? RLOCK__TXT("the default owner id is \1 bytes, RLOCK_MAX_OWNER_LEN is \2: set cfg.owner")
                          : RLOCK__TXT("owner is \1 bytes, it must be 1..RLOCK_MAX_OWNER_LEN (\2)");
            /* A reentrant hold is the hash field its owner id names: one
             * named as a read-write lock's fields ("mode", "wq", any
             * owner's ":r" ":w" ":x" ":y" ":q" ":t") would take such a
             * key's field for its hold, and both would hold the key.
             * (Read-write owner ids are suffixed: no clash. The NUL the
             * search takes in is no last byte: len is strlen's.) */
            else if (RLOCK__HAS_REENTRANT && lk->kind == RLOCK_KIND_REENTRANT &&
                     ((len > 1 && src[len - 2] == ':' && memchr("rwxyqt", src[len - 1], sizeof "rwxyqt")) ||
                      (len == 4 && memcmp(src, "mode", 4) == 0) || (len == 2 && memcmp(src, "wq", 2) == 0)))
                why = RLOCK__TXT("a reentrant owner id may not be mode, wq or end in :r :w :x :y :q :t");
            if (why) return rlock__why(lk->why, why, (long long)len, RLOCK_MAX_OWNER_LEN); /* (0 until here: above) */
            memcpy(lk->owner, src, len + 1);
        }
        lk->state = RLOCK_STATE_IDLE; /* (holds: set by the grant, read only while HELD) */
        lk->queued = 0;
    }
    rlock__op_link(lk, RLOCK__OP_ACQUIRE, (uint32_t)ttl_ms); /* checked: < 2^31 */
    /* a wait of 2^31 - 1 ms or more is forever (timed 2): each attempt
     * renews its wait_end (rlock__acquire_next_round) */
    lk->op.timed = (wait_ms != 0) + (wait_ms >= RLOCK__MS_FAR);
    lk->op.wait_end = now + (rlock__ms)wait_ms;
    /* Subscribed from the last wait on this key: the first attempt already
     * queues, so a release right after it wakes us. (It reads neither.) */
    if (lk->op.timed) (void)rlock__adopt_linger(lk);
    rlock__acquire_next_round(lk, now);
    return RLOCK_WOULD_BLOCK;
}

RLOCKDEF rlock_status rlock_acquire_begin(rlock_lock *lk, long long ttl_ms, long long wait_ms) {
    return rlock__start(lk, RLOCK__OP_ACQUIRE, ttl_ms, wait_ms);
}
/* A call without a wait (extend's, release's): their wait_ms 0 goes on the
 * stack in this one place (as the compact engine's rlock__c_start_now). */
static RLOCK__NOINLINE rlock_status rlock__start_now(rlock_lock *lk, int op, long long ttl_ms) {
    return rlock__start(lk, op, ttl_ms, 0);
}
RLOCKDEF rlock_status rlock_extend_begin(rlock_lock *lk, long long ttl_ms) {
    return rlock__start_now(lk, RLOCK__OP_EXTEND, ttl_ms);
}
RLOCKDEF rlock_status rlock_release_begin(rlock_lock *lk) {
    return rlock__start_now(lk, RLOCK__OP_RELEASE, 0);
}
#endif

/* The blocking calls: begin, then step and wait until done. */
static rlock_status rlock__run(rlock_lock *lk, rlock_status st) {
    while (st == RLOCK_WOULD_BLOCK) {
        st = rlock_step(lk);
        if (st == RLOCK_WOULD_BLOCK) rlock__client_wait(lk->client, rlock_next_timeout_ms(lk));
    }
    return st;
}
/* The lock's three share one body: begin op (RLOCK__OP_ACQUIRE, _EXTEND or
 * _RELEASE; an extend's and a release's wait_ms is 0, a release's ttl_ms
 * too), then rlock__run. (The compact engine's: its one start body, not
 * the public begin calls; the calls without a wait through run_now.) */
#if !RLOCK__COMPACT
static rlock_status rlock__run_op(rlock_lock *lk, int op, long long ttl_ms, long long wait_ms) {
    return rlock__run(lk, op == RLOCK__OP_ACQUIRE  ? rlock_acquire_begin(lk, ttl_ms, wait_ms)
                          : op == RLOCK__OP_EXTEND ? rlock_extend_begin(lk, ttl_ms)
                                                   : rlock_release_begin(lk));
}
#define rlock__run_now(lk, op, ttl_ms) rlock__run_op((lk), (op), (ttl_ms), 0)
#else
static RLOCK__NOINLINE rlock_status rlock__run_op(rlock_lock *lk, int op, long long ttl_ms, long long wait_ms) {
    return rlock__run(lk, rlock__c_start(lk, op, ttl_ms, wait_ms));
}
static RLOCK__NOINLINE rlock_status rlock__run_now(rlock_lock *lk, int op, long long ttl_ms) {
    return rlock__run_op(lk, op, ttl_ms, 0);
}
#endif
RLOCKDEF rlock_status rlock_acquire(rlock_lock *lk, long long ttl_ms, long long wait_ms) {
#ifdef RLOCK__NEED_SLEEP_HOOK
    /* Waiting sleeps between attempts: refuse before anything is sent. The
     * other blocking calls wait only on connections, through the transport. */
    if (rlock__lock_ok(lk) && wait_ms > 0 && !lk->client->cfg.sleep_ms)
        return rlock__why(lk->why,
                          RLOCK__TXT("cfg.sleep_ms is required to wait (RLOCK_NO_POSIX, no RLOCK_SLEEP_MS)"), 0, 0);
#endif
    return rlock__run_op(lk, RLOCK__OP_ACQUIRE, ttl_ms, wait_ms);
}
RLOCKDEF rlock_status rlock_try_acquire(rlock_lock *lk, long long ttl_ms) {
#if RLOCK__COMPACT /* (no wait: rlock_acquire's sleep check is moot) */
    return rlock__run_now(lk, RLOCK__OP_ACQUIRE, ttl_ms);
#else
    return rlock_acquire(lk, ttl_ms, 0);
#endif
}
RLOCKDEF rlock_status rlock_extend(rlock_lock *lk, long long ttl_ms) {
    return rlock__run_now(lk, RLOCK__OP_EXTEND, ttl_ms);
}
RLOCKDEF rlock_status rlock_release(rlock_lock *lk) {
    return rlock__run_now(lk, RLOCK__OP_RELEASE, 0);
}

/* (the kinds rlock_lock_init takes: 1..5 but the semaphore's) */
typedef char rlock__lock_kinds[RLOCK_KIND_SIMPLE == 1 && RLOCK_KIND_REENTRANT == 2 && RLOCK_KIND_SEMAPHORE == 3 &&
                               RLOCK_KIND_READ == 4 && RLOCK_KIND_WRITE == 5 ? 1 : -1];
RLOCK__TXT_FROM(rlock__li_txt); /* (its texts: RLOCK__TXT_IN) */
RLOCKDEF rlock_status rlock_lock_init(rlock_lock *lk, rlock_client *c, const char *key,
                                      size_t key_len, rlock_kind kind) {
    rlock__txt why;
    long long x = (long long)kind;
    if (!lk) return RLOCK_E_BADARG;
    /* On failure only lk->why is written: lk stays unusable (and a handle
     * that is in use elsewhere is not disturbed). The first check that fails
     * picks the reason; one rlock__why writes it. */
    if (!rlock__client_ok(c)) why = RLOCK__TXT_IN(rlock__li_txt, "client is not initialised");
    else if (!key) why = RLOCK__TXT_IN(rlock__li_txt, "key is NULL");
    else if (key_len == 0 || key_len > RLOCK_MAX_KEY_LEN)
        why = RLOCK__TXT_IN(rlock__li_txt, "key is \1 bytes, RLOCK_MAX_KEY_LEN is \2"), x = (long long)key_len;
    else if (!RLOCK__HAS_REENTRANT && kind == RLOCK_KIND_REENTRANT)
        why = RLOCK__TXT_IN(rlock__li_txt, "reentrant locks are compiled out (RLOCK_NO_REENTRANT)");
#ifdef RLOCK_NO_PRIMITIVES
    else if (kind == RLOCK_KIND_READ || kind == RLOCK_KIND_WRITE)
        why = RLOCK__TXT_IN(rlock__li_txt, "kind \1: read-write locks are left out (RLOCK_NO_PRIMITIVES)");
#endif
    else if ((unsigned)kind - 1u > (RLOCK__HAS_PRIMITIVES ? 4u : 1u) || kind == RLOCK_KIND_SEMAPHORE) /* (1, 2, 4, 5: rlock__lock_kinds) */
        why = RLOCK__TXT_IN(rlock__li_txt, "kind \1 is not 1, 2, 4 or 5 (SIMPLE, REENTRANT, READ, WRITE)");
    else why = 0;
    if (why) return rlock__why(lk->why, RLOCK__TXT_OUT(rlock__li_txt, why), x, RLOCK_MAX_KEY_LEN);
    {
        /* lk's op still runs on c (in its list, its requests out): cleared,
         * it would cut the list - the ops after it never end - and leave
         * what it was granted with no handle. (Only c's list is walked: lk's
         * own fields may be uninitialised.) */
        const rlock_lock *o;
        for (o = c->ops; o; o = o->op.next)
            if (o == lk) return RLOCK_E_STATE;
    }
    memset(lk, 0, sizeof *lk);
    lk->client = c;
    lk->scripts = RLOCK__ENC_TEMPLATE ? NULL : &rlock__set_lock; /* (the templates send the simple lock's) */
    lk->kind = kind;
    memcpy(lk->key, key, key_len);
    lk->key_len = key_len;
    /* Same cluster slot as the key, so every script touches one slot. */
    lk->aux_base_len = RLOCK__COMPACT && !RLOCK__REQ_QUEUE ? 0 : rlock__aux_len(key, key_len); /* (compact: fencing) */
    lk->state = RLOCK_STATE_IDLE;
    lk->magic = RLOCK__MAGIC_LOCK;
    lk->param = kind == RLOCK_KIND_WRITE; /* a write lock: writers first */
    return RLOCK_OK;
}

RLOCKDEF rlock_status rlock_lock_set_fair(rlock_lock *lk, int fair, uint32_t grace_ms) {
    rlock__txt why;
    long long x;
    rlock_status st = rlock__begin(lk); /* (E_BADARG; E_STATE while an operation runs) */
    if (st != RLOCK_OK) return st;
    x = (long long)lk->kind;
    if (lk->state == RLOCK_STATE_HELD) return RLOCK_E_STATE;
    if (!fair) { lk->fair_grace = 0; return RLOCK_OK; }
    /* the first check that fails picks the reason; one rlock__why writes it */
    if (!RLOCK__HAS_FAIR) why = RLOCK__TXT("fair locks are compiled out (RLOCK_NO_FAIR)");
    else if (lk->kind != RLOCK_KIND_SIMPLE && lk->kind != RLOCK_KIND_REENTRANT)
        why = RLOCK__TXT("fair: kind \1 has no fair form (simple and reentrant locks do)");
    else if (!lk->aux_base_len) /* the queue needs a name in the key's slot */
        why = RLOCK__TXT("fair: the key has a '}' outside a hash tag, so no queue name hashes to its slot");
    else if (grace_ms > 600000u) why = RLOCK__TXT("grace \1 ms is above 600000"), x = grace_ms;
    else why = 0;
    if (why) return rlock__why(lk->why, why, x, 0);
    lk->fair_grace = grace_ms ? grace_ms : RLOCK_FAIR_GRACE_MS;
#ifndef RLOCK_NO_FAIR
    if (lk->scripts == &rlock__set_lock) lk->scripts = &rlock__set_fair; /* (all has them already) */
#endif
    return RLOCK_OK;
}

/* The reason text of handle h (a client or a lock): its why[] at offset
 * off, when it is one (NUL-terminated in place), or no_handle for NULL. One
 * body for both (both whys are RLOCK_WHY_LEN bytes): out of line in the
 * compact engine, whose firmware reads both (gcc -Os copied it into each);
 * the general engine's is left to gcc (a program reading one inlines it). */
#if RLOCK__COMPACT
RLOCK__NOINLINE
#endif
static const char *rlock__why_of(const void *h, size_t off, const char *no_handle) {
    const char *why;
    if (!h) return no_handle;
    why = (const char *)h + off;
    return memchr(why, '\0', RLOCK_WHY_LEN) ? why : "";
}
RLOCKDEF const char *rlock_lock_error(const rlock_lock *lk) {
    return rlock__why_of(lk, offsetof(rlock_lock, why), "lk is NULL");
}
RLOCKDEF const char *rlock_client_error(const rlock_client *c) {
    return rlock__why_of(c, offsetof(rlock_client, why), "c is NULL");
}


typedef char rlock__lost_follows_held[RLOCK_STATE_LOST == RLOCK_STATE_HELD + 1 ? 1 : -1]; /* (rlock_lock_state) */
RLOCKDEF rlock_state rlock_lock_state(const rlock_lock *lk) {
    if (!rlock__lock_ok(lk)) return RLOCK_STATE_IDLE;
    /* HELD turns LOST (+1) once the clock is at or past the validity's end,
     * in the hook's 64 bits (an op in flight too: a renewal past the end
     * cannot succeed) - not while a clock hook that stepped back reads
     * before the grant, where rlock_validity_ms says 0 */
    if (lk->state != RLOCK_STATE_HELD) return lk->state;
    return (rlock_state)(RLOCK_STATE_HELD + (int)((lk->validity_end - rlock__now64(lk->client) - 1u) >> 63));
}
RLOCKDEF long long rlock_fence_token(const rlock_lock *lk) {
    return rlock__lock_ok(lk) && lk->state == RLOCK_STATE_HELD ? lk->fence : 0;
}

/* One renewal poll: the outcome (rlock_renew_outcome), the time to the
 * next poll and the status are written once, at the end. A renewal that
 * succeeded set renew_at already (the lease's times: granted_at + the renew
 * interval). */
RLOCKDEF rlock_status rlock_renew_poll(rlock_lock *lk, uint32_t *next_ms) {
    const rlock_config *cfg;
    rlock__ms now, left, next = 0;
    rlock_renewal what = RLOCK_RENEW_NOT_DUE; /* (unless a step below says; none when it stops before) */
    rlock_status st = RLOCK_OK;
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (!next_ms) return rlock__why(lk->why, RLOCK__TXT("next_ms is NULL"), 0, 0);
    for (;;) {
        /* (renewing: set only on the extend a renewal starts, cleared with
         * every op by rlock__op_link - an op that has it is that extend) */
        if (lk->op.kind != RLOCK__OP_NONE && lk->op.renewing) {
            st = rlock_step(lk);
            if (st == RLOCK_WOULD_BLOCK) {
                next = rlock_next_timeout_ms(lk);
                what = RLOCK_RENEW_IN_FLIGHT;
                break;
            }
            if (st == RLOCK_OK) {
                lk->renewals++;
                what = RLOCK_RENEW_RENEWED;
            } else if (st == RLOCK_LOST) {
                what = RLOCK_RENEW_LOST; /* (marked by the extend) */
            } else {
                /* Unknown outcome (node down, timeout): try again soon, while
                 * validity lasts; once it has run out the extend says LOST. */
                lk->renew_at = rlock__now(lk->client) + rlock__renew_interval(lk, lk->ttl_ms) / 4 + 1;
                what = RLOCK_RENEW_FAILED;
            }
        } else if (lk->op.kind != RLOCK__OP_NONE) {
            st = RLOCK_E_STATE;
            what = RLOCK_RENEW_NONE;
            break;
        }
        if (lk->state == RLOCK_STATE_IDLE) { /* (no step ran: a renewal's extend leaves it HELD or LOST) */
            st = RLOCK_NOT_HELD;
            what = RLOCK_RENEW_NONE;
            break;
        }
        /* (0 when LOST, or it ran out - the extend below says LOST, on_lost
         * once - or while the clock hook reads before the grant) */
        left = (rlock__ms)rlock_validity_ms(lk); /* (never negative, below 2^32) */
        now = rlock__now(lk->client);
        next = left;
        cfg = &lk->client->cfg; /* (here, not before the loop: one register less across it) */
        /* No validity to tell (left 0): LOST (the extend says so), or the
         * clock hook reads before the grant (the time since cannot be told;
         * the servers' TTL runs on): renewed at once, caps or not */
        if (left) {
            /* (held + ttl > max_hold_ms, in 32 bits: each is below 2^31;
             * while the clock reads before the hold's start, the hold
             * cannot be told: counted 0, renewed unless the ttl alone is
             * past the cap) */
            if ((cfg->max_renewals && lk->renewals >= cfg->max_renewals) ||
                (cfg->max_hold_ms && (RLOCK__MS_BEFORE(now, lk->held_since) ? 0 : now - lk->held_since) + lk->ttl_ms >
                                         cfg->max_hold_ms))
                break; /* capped: let it expire (validity < 2^31) */
            if (RLOCK__MS_BEFORE(now, lk->renew_at)) {
                if (lk->renew_at - now < left) next = lk->renew_at - now;
                break;
            }
        }
        next = 1;
        if (st != RLOCK_OK || what == RLOCK_RENEW_RENEWED) break;
        next = 0;
        st = rlock_extend_begin(lk, lk->ttl_ms);
        if (st != RLOCK_WOULD_BLOCK) { /* lost */
            if (st == RLOCK_LOST) what = RLOCK_RENEW_LOST;
            break;
        }
        lk->op.renewing = 1; /* (the extend's first step says what) */
    }
    *next_ms = next;
    lk->renewal = what;
    return st;
}

RLOCKDEF rlock_renewal rlock_renew_outcome(const rlock_lock *lk) {
    return rlock__lock_ok(lk) ? lk->renewal : RLOCK_RENEW_NONE;
}

RLOCKDEF long long rlock_validity_ms(const rlock_lock *lk) {
    uint64_t now, left;
    rlock__ms len;
    if (!rlock__lock_ok(lk) || lk->state != RLOCK_STATE_HELD) return 0;
    now = rlock__now64(lk->client);
    len = (rlock__ms)lk->validity_end - lk->granted_at; /* the grant's validity */
    left = lk->validity_end - now; /* past the end: "negative", huge (the hook's own 2^64 end wraps too) */
    /* More than the grant's: the clock hook reads before the grant, and
     * the time since cannot be told (the servers' TTL runs on): none */
    return left > len ? 0 : (long long)left;
}
RLOCKDEF long long rlock_hold_count(const rlock_lock *lk) {
#if RLOCK__COMPACT /* simple locks: 1 while held */
    return rlock__lock_ok(lk) && lk->state == RLOCK_STATE_HELD;
#else
    return rlock__lock_ok(lk) && lk->state == RLOCK_STATE_HELD ? lk->holds : 0;
#endif
}
RLOCKDEF const char *rlock_lock_token(const rlock_lock *lk) {
    return rlock__lock_ok(lk) ? lk->owner : "";
}
RLOCKDEF size_t rlock_last_votes(const rlock_lock *lk) {
    return rlock__lock_ok(lk) ? lk->votes : 0;
}
RLOCKDEF long long rlock_replica_acks(const rlock_lock *lk) {
    return RLOCK__HAS_REPLICAS && rlock__lock_ok(lk) ? (int32_t)((uint32_t)lk->acks - 1u) : -1; /* (kept + 1) */
}


/* ---- 6.9 Renewal thread (RLOCK_WATCHDOG) -------------------------------- */
#ifdef RLOCK_WATCHDOG
static void *rlock__watchdog_main(void *arg) {
    rlock_watchdog *w = (rlock_watchdog *)arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        uint32_t next = 0;
        rlock_status st = rlock_renew_poll(&w->shadow, &next);
        if (st == RLOCK_WOULD_BLOCK) {
            /* I/O in flight: wait on the sockets without holding the mutex
             * (nothing else touches the shadow's connections). */
            pthread_mutex_unlock(&w->mu);
            rlock__client_wait(w->shadow.client, next ? next : 1);
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (st != RLOCK_OK) w->last = st;
        if (st == RLOCK_LOST || st == RLOCK_NOT_HELD || st == RLOCK_E_BADARG || st == RLOCK_E_STATE) {
            if (st == RLOCK_LOST && w->lk->client->cfg.on_lost)
                w->lk->client->cfg.on_lost(w->lk, w->lk->client->cfg.hook_user);
            break;
        }
        {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += (time_t)(next / 1000u);
            ts.tv_nsec += (long)(next % 1000u) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            if (!w->stop) pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
    }
    if (w->shadow.op.kind != RLOCK__OP_NONE) { /* a renewal in flight: its outcome is unknown */
        rlock_cancel(&w->shadow);
        w->shadow.renewal = RLOCK_RENEW_FAILED;
    }
    w->running = 0;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

RLOCKDEF rlock_status rlock_watchdog_start(rlock_watchdog *w, rlock_lock *lk, rlock_client *own) {
    pthread_condattr_t ca;
    if (!w || !rlock__lock_ok(lk) || !rlock__client_ok(own)) return RLOCK_E_BADARG;
    if (own == lk->client)
        return rlock__why(lk->why, RLOCK__TXT("own is lk's own client: the watchdog needs a client of its own"), 0, 0);
    if (own->n_nodes != lk->client->n_nodes)
        return rlock__why(lk->why, RLOCK__TXT("own has \1 nodes, lk's client \2: give it the same servers"),
                          (long long)own->n_nodes, lk->client->n_nodes);
    if (lk->op.kind != RLOCK__OP_NONE || own->ops) return RLOCK_E_STATE;
    if (rlock_lock_state(lk) != RLOCK_STATE_HELD) return RLOCK_NOT_HELD;
    memset(w, 0, sizeof *w);
    w->lk = lk;
    w->shadow = *lk;
    w->shadow.client = own;
    memset(&w->shadow.op, 0, sizeof w->shadow.op); /* lk is idle: no operation to copy */
    w->shadow.lost_notified = 1; /* the watchdog reports loss with lk, not the shadow */
    w->last = RLOCK_OK;
    w->running = 1;
    if (pthread_condattr_init(&ca) != 0) return RLOCK_E_STATE;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_cond_init(&w->cv, &ca) != 0) { pthread_condattr_destroy(&ca); return RLOCK_E_STATE; }
    pthread_condattr_destroy(&ca);
    if (pthread_mutex_init(&w->mu, NULL) != 0) { pthread_cond_destroy(&w->cv); return RLOCK_E_STATE; }
    if (pthread_create(&w->thread, NULL, rlock__watchdog_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        return RLOCK_E_STATE;
    }
    return RLOCK_OK;
}

RLOCKDEF rlock_status rlock_watchdog_stop(rlock_watchdog *w) {
    rlock_lock *lk;
    if (!w || !w->lk) return RLOCK_E_BADARG;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    lk = w->lk;
    /* Take over the lock as the renewals left it - all of it: the nodes that
     * still hold it (a release judges by them), the last renewal's start (it
     * caps the validity), its votes. The shadow's op is over (the thread
     * ended it: unlinked, its next pointer unread; a renewal it cancelled is
     * not in flight). HELD: not reported lost yet (rlock_watchdog_start
     * needed HELD, which a grant makes with lost_notified 0); LOST: the
     * watchdog reported it. */
    w->shadow.client = lk->client;
    w->shadow.lost_notified = w->shadow.state == RLOCK_STATE_LOST;
    *lk = w->shadow;
    w->lk = NULL;
    return w->last;
}

RLOCKDEF rlock_state rlock_watchdog_state(rlock_watchdog *w, long long *validity_ms) {
    rlock_state st;
    if (!w || !w->lk) { if (validity_ms) *validity_ms = 0; return RLOCK_STATE_IDLE; }
    pthread_mutex_lock(&w->mu);
    st = rlock_lock_state(&w->shadow);
    if (validity_ms) *validity_ms = rlock_validity_ms(&w->shadow);
    pthread_mutex_unlock(&w->mu);
    return st;
}
#endif /* RLOCK_WATCHDOG */

/* ---- 6.10 Keys ------------------------------------------------------------ */
/* ---- 6.10 Primitives: semaphore, read-write and multi-lock handles,
 * inspection, force-unlock (section 5b; scripts in 6.4b) ---------------- */
#ifndef RLOCK_NO_PRIMITIVES
static rlock_status rlock__check_permits(rlock_lock *lk, long long permits) {
    if (permits < 1 || permits > 2147483647LL)
        return rlock__why(lk->why, RLOCK__TXT("permits \1 is not within 1..2147483647"), permits, 0);
    return RLOCK_OK;
}
RLOCKDEF rlock_status rlock_semaphore_init(rlock_lock *lk, rlock_client *c, const char *key, size_t key_len,
                                           long long permits) {
    rlock_status st;
    if (!lk) return RLOCK_E_BADARG;
    if (rlock__check_permits(lk, permits) != RLOCK_OK) return RLOCK_E_BADARG;
    st = rlock_lock_init(lk, c, key, key_len, RLOCK_KIND_SIMPLE);
    if (st != RLOCK_OK) return st;
    lk->kind = RLOCK_KIND_SEMAPHORE;
    lk->param = permits;
    lk->scripts = &rlock__set_all;
    /* Redlock handles start on different slots, so rivals rarely ask for the same one */
    lk->slot = (int32_t)(rlock__prng32(lk) % (uint32_t)permits);
    return RLOCK_OK;
}
RLOCKDEF rlock_status rlock_semaphore_set_permits(rlock_lock *lk, long long permits) {
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (lk->kind != RLOCK_KIND_SEMAPHORE)
        return rlock__why(lk->why, RLOCK__TXT("lk is not a semaphore (kind \1)"), (long long)lk->kind, 0);
    if (rlock__check_permits(lk, permits) != RLOCK_OK) return RLOCK_E_BADARG;
    lk->param = permits; /* the next attempt carries it */
    if (lk->state != RLOCK_STATE_HELD && lk->slot >= permits) lk->slot = 0;
    return RLOCK_OK;
}
RLOCKDEF long long rlock_semaphore_slot(const rlock_lock *lk) {
    if (!rlock__lock_ok(lk) || lk->kind != RLOCK_KIND_SEMAPHORE || rlock_lock_state(lk) != RLOCK_STATE_HELD) return -1;
    return lk->slot;
}
RLOCKDEF rlock_status rlock_rw_writers_first(rlock_lock *lk, int on) {
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (lk->kind != RLOCK_KIND_WRITE)
        return rlock__why(lk->why, RLOCK__TXT("lk is not a RLOCK_KIND_WRITE handle (kind \1)"), (long long)lk->kind,
                          0);
    lk->param = on != 0;
    return RLOCK_OK;
}

RLOCKDEF rlock_status rlock_multi_init(rlock_lock *lk, rlock_client *c, const char *const *keys,
                                       const size_t *lens, size_t n) {
    size_t i, total = 0;
    unsigned slot0;
    char packed[RLOCK_MAX_KEY_LEN];
    rlock_status st;
    if (!lk) return RLOCK_E_BADARG;
    if (!keys || !lens) return rlock__why(lk->why, RLOCK__TXT("keys or lens is NULL"), 0, 0);
    if (n == 0 || n > RLOCK_MAX_MULTI)
        return rlock__why(lk->why, RLOCK__TXT("\1 keys, a multi-lock takes 1..RLOCK_MAX_MULTI (\2)"), (long long)n,
                          RLOCK_MAX_MULTI);
    for (i = 0; i < n; i++) {
        size_t j;
        if (!keys[i] || lens[i] == 0)
            return rlock__why(lk->why, RLOCK__TXT("key \1 is NULL or empty"), (long long)i, 0);
        if (lens[i] > RLOCK_MAX_KEY_LEN || total + 2 + lens[i] > RLOCK_MAX_KEY_LEN)
            return rlock__why(lk->why, RLOCK__TXT("keys take \1 bytes (2 + length each), RLOCK_MAX_KEY_LEN is \2"),
                              (long long)total + 2 + (long long)lens[i], RLOCK_MAX_KEY_LEN);
        /* (a key named twice is taken once; its release would find the
         * second name gone and say LOST) */
        for (j = 0; j < i; j++)
            if (lens[j] == lens[i] && memcmp(keys[j], keys[i], lens[i]) == 0)
                return rlock__why(lk->why, RLOCK__TXT("key \1 is key \2: name each key once"), (long long)i, j);
        packed[total] = (char)(lens[i] >> 8);
        packed[total + 1] = (char)(lens[i] & 0xffu);
        memcpy(packed + total + 2, keys[i], lens[i]);
        total += 2 + lens[i];
    }
    slot0 = rlock_cluster_slot(keys[0], lens[0]);
    for (i = 1; i < n; i++)
        if (rlock_cluster_slot(keys[i], lens[i]) != slot0) { /* (three numbers: the text in two parts) */
            (void)rlock__why(lk->why, RLOCK__TXT("key \1 hashes to Cluster slot \2, key 0 to "), (long long)i, rlock_cluster_slot(keys[i], lens[i]));
#ifndef RLOCK_NO_ERROR_TEXTS /* (else that line names it) */
            {
                char tail[RLOCK_WHY_LEN];
                size_t k = strlen(lk->why);
                (void)rlock__why(tail, RLOCK__TXT("\1: give the keys one hash tag, e.g. {job}:a {job}:b"), slot0, 0);
                rlock__copy_text(lk->why + k, sizeof lk->why - k, tail, strlen(tail));
            }
#endif
            return RLOCK_E_BADARG;
        }
    st = rlock_lock_init(lk, c, packed, total, RLOCK_KIND_SIMPLE);
    if (st != RLOCK_OK) return st;
    lk->kind = RLOCK_KIND_MULTI;
    lk->param = (long long)n;
    lk->scripts = &rlock__set_all;
    lk->aux_base_len = 0; /* no wait queue of its own: waits by backoff */
    return RLOCK_OK;
}

/* Start an admin round (inspect / force) on every node. */
static rlock_status rlock__admin_begin(rlock_lock *lk, int op, rlock_info *out) {
    rlock_status st = rlock__begin(lk);
    uint32_t ttl = 30000; /* only sizes the node timeout, when cfg.node_timeout_ms is 0 */
    if (st != RLOCK_OK) return st;
    if (lk->kind == RLOCK_KIND_MULTI)
        return rlock__why(lk->why, RLOCK__TXT("a multi-lock handle: inspect or unlock one key at a time"), 0, 0);
    lk->scripts = &rlock__set_all; /* INSPECT / FORCE: kept for its later operations, a superset */
    rlock__op_link(lk, op, ttl);
    lk->op.info = out; /* (before the round: a node that fails at once is answered in it) */
    rlock__op_goto(lk, RLOCK__PH_ROUND);
    rlock__round_begin(lk, op, 0, rlock__now(lk->client));
    return RLOCK_WOULD_BLOCK;
}
RLOCKDEF rlock_status rlock_inspect_begin(rlock_lock *lk, rlock_info *out, size_t cap) {
    size_t i;
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (!out || cap < lk->client->n_nodes)
        return rlock__why(lk->why, RLOCK__TXT("out has room for \1 answers, the client has \2 nodes"),
                          out ? (long long)cap : 0, lk->client->n_nodes);
    if (lk->op.kind != RLOCK__OP_NONE) return RLOCK_E_STATE;
    for (i = 0; i < lk->client->n_nodes; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].st = RLOCK_WOULD_BLOCK;
        out[i].pttl_ms = -2;
    }
    return rlock__admin_begin(lk, RLOCK__OP_INSPECT, out);
}
RLOCKDEF rlock_status rlock_inspect(rlock_lock *lk, rlock_info *out, size_t cap) {
    return rlock__run(lk, rlock_inspect_begin(lk, out, cap));
}
RLOCKDEF rlock_status rlock_force_unlock_begin(rlock_lock *lk) {
    return rlock__admin_begin(lk, RLOCK__OP_FORCE, NULL);
}
RLOCKDEF rlock_status rlock_force_unlock(rlock_lock *lk) {
    return rlock__run(lk, rlock_force_unlock_begin(lk));
}
#endif /* RLOCK_NO_PRIMITIVES */

RLOCKDEF size_t rlock_aux_key(char *out, size_t cap, const char *key, size_t key_len,
                              const char *suffix) {
    size_t base, slen;
    if (!out || !key || !suffix || key_len == 0) return 0;
    base = rlock__aux_base(out, cap, key, key_len);
    slen = strlen(suffix);
    if (base == 0 || slen + 1 > cap - base) return 0;
    memcpy(out + base, suffix, slen + 1);
    return base + slen;
}

/* ---- 6.11 Redis Cluster --------------------------------------------------- */
static unsigned rlock__crc16(const unsigned char *p, size_t n) {
    unsigned crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) { /* CRC16-CCITT (XMODEM), as Redis Cluster hashes keys */
        crc ^= (unsigned)p[i] << 8;
        for (b = 0; b < 8; b++) crc = (crc & 0x8000u) ? ((crc << 1) ^ 0x1021u) & 0xffffu : (crc << 1) & 0xffffu;
    }
    return crc;
}

RLOCKDEF unsigned rlock_cluster_slot(const char *key, size_t key_len) {
    size_t s, e;
    if (!key) return 0;
    for (s = 0; s < key_len && key[s] != '{'; s++) {}
    if (s < key_len) { /* the first {...} that is not empty is the hash tag */
        for (e = s + 1; e < key_len && key[e] != '}'; e++) {}
        if (e < key_len && e > s + 1) { key += s + 1; key_len = e - s - 1; }
    }
    return rlock__crc16((const unsigned char *)key, key_len) & (RLOCK_CLUSTER_SLOTS - 1);
}

#ifndef RLOCK_NO_CLUSTER
static int rlock__cluster_ok(const rlock_cluster *cl) { return cl && cl->n > 0 && cl->connect; }

/* The index of node host:port, added when new; -1 when the address does not
 * fit or the connect hook refuses it, -2 when the table is full. */
static int rlock__cluster_add(rlock_cluster *cl, const char *host, size_t hl, int port) {
    rlock_transport tr;
    size_t i;
    for (i = 0; i < cl->n; i++)
        if (cl->port[i] == port && strlen(cl->host[i]) == hl && memcmp(cl->host[i], host, hl) == 0) return (int)i;
    if (hl == 0 || hl >= sizeof cl->host[0] || port < 1 || port > 65535) return -1;
    if (cl->n == RLOCK_CLUSTER_MAX_PRIMARIES) return -2;
    i = cl->n;
    memcpy(cl->host[i], host, hl);
    cl->host[i][hl] = '\0';
    cl->port[i] = port;
    memset(&tr, 0, sizeof tr);
    if (cl->connect(cl->user, i, cl->host[i], port, &tr) != 0 || rlock_node_init(&cl->node[i], &tr) != RLOCK_OK)
        return -1;
    cl->node[i].username = cl->username;
    cl->node[i].password = cl->password;
    if (rlock_client_init(&cl->client[i], &cl->node[i], 1, &cl->cfg) != RLOCK_OK) return -1;
    cl->client[i].shard = &rlock__shard_ops;
    cl->n++;
    return (int)i;
}

static rlock_status rlock__cluster_full(rlock_cluster *cl) {
    (void)rlock__why(cl->why, RLOCK__TXT("the cluster has more nodes than fit: RLOCK_CLUSTER_MAX_PRIMARIES is \1 (seeds included)"), RLOCK_CLUSTER_MAX_PRIMARIES, 0);
    return RLOCK_E_BADARG;
}

/* ---- the slot map: CLUSTER SHARDS (else CLUSTER SLOTS), read as it comes --
 * SLOTS: [[start, end, [host, port, id, ...], replicas...], ...].
 * SHARDS: [{"slots": [start, end, ...], "nodes": [{"endpoint": host, "ip":
 * ip, "port": p, "role": "master", "health": "online", ...}, ...]}, ...]
 * (maps are flat arrays under RESP2). A shard's slots come before its nodes:
 * they are marked RLOCK__CLUSTER_PENDING until its primary is known. */
enum { RLOCK__MAP_NONE, RLOCK__MAP_BUSY, RLOCK__MAP_DONE, RLOCK__MAP_FAILED };
enum { RLOCK__F_NONE, RLOCK__F_SLOTS, RLOCK__F_NODES, RLOCK__F_IP, RLOCK__F_EP, RLOCK__F_PORT, RLOCK__F_TLS_PORT,
       RLOCK__F_ROLE, RLOCK__F_HEALTH };
#define RLOCK__CLUSTER_PENDING 255u

static int rlock__is(const rlock_resp_value *v, const char *s) {
    size_t n = strlen(s);
    return (v->type == RLOCK_RESP_BULK || v->type == RLOCK_RESP_STATUS) && v->len == n && memcmp(v->str, s, n) == 0;
}

static void rlock__cluster_mark(rlock_cluster *cl, long long lo, long long hi, unsigned v) {
    long long k;
    if (lo < 0 || hi >= RLOCK_CLUSTER_SLOTS || lo > hi) return;
    for (k = lo; k <= hi; k++) cl->slot[k] = (unsigned char)v;
}

/* The shard's slots marked pending go to its primary (index + 1; 0: none known). */
static void rlock__cluster_settle(rlock_cluster *cl, unsigned v) {
    size_t k;
    if (!cl->pending) return;
    for (k = 0; k < RLOCK_CLUSTER_SLOTS; k++)
        if (cl->slot[k] == RLOCK__CLUSTER_PENDING) cl->slot[k] = (unsigned char)v;
    cl->pending = 0;
}

/* A primary's address as read: its index (added when new), -1 unusable. */
static int rlock__cluster_at(rlock_cluster *cl, const char *host, int port) {
    int idx;
    if (!host[0] || (host[0] == '?' && !host[1]) || port <= 0) return -1; /* endpoint unknown: MOVED will say */
    idx = rlock__cluster_add(cl, host, strlen(host), port);
    if (idx == -2) cl->full = 1;
    return idx;
}

static void rlock__cluster_text(char *out, size_t cap, const rlock_resp_value *v) {
    if (v->type == RLOCK_RESP_BULK || v->type == RLOCK_RESP_STATUS) rlock__copy_text(out, cap, v->str, v->len);
    else out[0] = '\0';
}

static void rlock__cluster_visit_slots(rlock_cluster *cl, const rlock__walk *w, const rlock_resp_value *v) {
    if (w->depth == 2 && v->type == RLOCK_RESP_INTEGER && w->pos[1] <= 1) {
        if (w->pos[1] == 0) cl->lo = v->integer;
        else cl->hi = v->integer;
    } else if (w->depth == 3 && w->pos[1] == 2 && w->pos[2] == 0) { /* the primary: host, port, ... */
        rlock__cluster_text(cl->ep, sizeof cl->ep, v);
    } else if (w->depth == 3 && w->pos[1] == 2 && w->pos[2] == 1 && v->type == RLOCK_RESP_INTEGER &&
               v->integer > 0 && v->integer < 65536) {
        int idx = rlock__cluster_at(cl, cl->ep, (int)v->integer);
        if (idx >= 0) rlock__cluster_mark(cl, cl->lo, cl->hi, (unsigned)idx + 1u);
    }
}

static void rlock__cluster_visit_shards(rlock_cluster *cl, const rlock__walk *w, const rlock_resp_value *v) {
    int end = v->type == RLOCK_RESP_NONE;
    if (w->depth == 1) { /* a shard begins or ends */
        if (end) rlock__cluster_settle(cl, cl->prim >= 0 ? (unsigned)cl->prim + 1u : 0u);
        cl->field = RLOCK__F_NONE;
        cl->prim = -1;
    } else if (w->depth == 2 && !end && w->pos[1] % 2 == 0) {
        cl->field = rlock__is(v, "slots") ? RLOCK__F_SLOTS : rlock__is(v, "nodes") ? RLOCK__F_NODES : RLOCK__F_NONE;
    } else if (w->depth == 3 && cl->field == RLOCK__F_SLOTS && v->type == RLOCK_RESP_INTEGER) {
        if (w->pos[2] % 2 == 0) cl->lo = v->integer;
        else if (cl->prim >= 0) rlock__cluster_mark(cl, cl->lo, v->integer, (unsigned)cl->prim + 1u);
        else { rlock__cluster_mark(cl, cl->lo, v->integer, RLOCK__CLUSTER_PENDING); cl->pending = 1; }
    } else if (w->depth == 3 && cl->field == RLOCK__F_NODES) {
        if (!end) { /* a node begins */
            cl->ip[0] = cl->ep[0] = '\0';
            cl->port_v = 0;
            cl->role_ok = 0;
            cl->health_ok = 1;
        } else if (cl->role_ok && cl->health_ok && cl->prim < 0) { /* the shard's primary, online */
            int idx = rlock__cluster_at(cl, cl->ep[0] && !(cl->ep[0] == '?' && !cl->ep[1]) ? cl->ep : cl->ip, cl->port_v);
            if (idx >= 0) {
                cl->prim = idx;
                rlock__cluster_settle(cl, (unsigned)idx + 1u);
            }
        }
    } else if (w->depth == 4 && cl->field == RLOCK__F_NODES && !end) {
        if (w->pos[3] % 2 == 0) {
            cl->nfield = rlock__is(v, "ip") ? RLOCK__F_IP : rlock__is(v, "endpoint") ? RLOCK__F_EP
                       : rlock__is(v, "port") ? RLOCK__F_PORT : rlock__is(v, "tls-port") ? RLOCK__F_TLS_PORT
                       : rlock__is(v, "role") ? RLOCK__F_ROLE
                       : rlock__is(v, "health") ? RLOCK__F_HEALTH : RLOCK__F_NONE;
        } else if (cl->nfield == RLOCK__F_IP) rlock__cluster_text(cl->ip, sizeof cl->ip, v);
        else if (cl->nfield == RLOCK__F_EP) rlock__cluster_text(cl->ep, sizeof cl->ep, v);
        else if (cl->nfield == (cl->tls ? RLOCK__F_TLS_PORT : RLOCK__F_PORT) && v->type == RLOCK_RESP_INTEGER &&
                 v->integer > 0 && v->integer < 65536)
            cl->port_v = (int)v->integer;
        else if (cl->nfield == RLOCK__F_ROLE) cl->role_ok = rlock__is(v, "master") || rlock__is(v, "primary");
        else if (cl->nfield == RLOCK__F_HEALTH) cl->health_ok = rlock__is(v, "online");
    }
}

static void rlock__cluster_visit(void *user, const rlock__walk *w, const rlock_resp_value *v) {
    rlock_cluster *cl = (rlock_cluster *)user;
    if (cl->slots_cmd) rlock__cluster_visit_slots(cl, w, v);
    else rlock__cluster_visit_shards(cl, w, v);
}

static uint32_t rlock__cluster_timeout(const rlock_cluster *cl) {
    uint32_t t = cl->cfg.node_timeout_ms ? cl->cfg.node_timeout_ms : 1000u;
    return t < RLOCK__MS_FAR ? t : RLOCK__MS_FAR - 1u; /* an interval: < 2^31 */
}

/* Ask node cl->from for the map, or the next node that can be asked; none
 * left (each asked once in this fetch): RLOCK__MAP_FAILED. */
static void rlock__cluster_fetch_send(rlock_cluster *cl, rlock__ms now) {
    static const char *const argv[2][2] = { { "CLUSTER", "SHARDS" }, { "CLUSTER", "SLOTS" } };
    static const size_t lens[2][2] = { { 7, 6 }, { 7, 5 } };
    rlock__ms deadline = now + rlock__cluster_timeout(cl);
    for (; cl->tries < cl->n; cl->tries++, cl->from = (cl->from + 1) % cl->n, cl->slots_cmd = 0) {
        rlock__x *x = rlock__x_node(&cl->node[cl->from]);
        size_t len;
        const char *why;
        if (rlock__x_begin(x, deadline, &why) != RLOCK_OK) continue;
        len = rlock_resp_encode(x->tx + x->tx_len, x->tx_cap - x->tx_len, 2, argv[cl->slots_cmd], lens[cl->slots_cmd]);
        if (len == 0) continue;
        cl->walk.visit = rlock__cluster_visit;
        cl->walk.user = cl;
        cl->field = cl->nfield = RLOCK__F_NONE;
        cl->prim = -1;
        cl->pending = cl->full = 0;
        rlock__x_commit_walk(x, len, &cl->call, RLOCK__TAG_CALL, deadline, &cl->walk);
        cl->fetch = RLOCK__MAP_BUSY;
        return;
    }
    cl->fetch = RLOCK__MAP_FAILED;
}

static void rlock__cluster_fetch_start(rlock_cluster *cl, size_t from, rlock__ms now) {
    if (cl->fetch == RLOCK__MAP_BUSY) { /* the answer on its way may be older than this MOVED (a failover) */
        cl->refetch = from + 1;
        return;
    }
    cl->tries = 0;
    cl->from = from;
    cl->slots_cmd = 0;
    rlock__cluster_fetch_send(cl, now);
}

/* The fetch's answer: the map is read (the walk filled it in); refused
 * (CLUSTER SHARDS unknown before Redis 7): CLUSTER SLOTS; failed: the next node. */
static void rlock__cluster_fetch_done(rlock__call *self, rlock_client *c, size_t i, const rlock__event *ev) {
    rlock_cluster *cl = (rlock_cluster *)(void *)((char *)self - offsetof(rlock_cluster, call));
    rlock__cluster_settle(cl, 0);
    if (ev->kind == RLOCK__EV_REPLY && ev->reply.v.type == RLOCK_RESP_ARRAY) {
        cl->fetch = cl->full ? RLOCK__MAP_FAILED : RLOCK__MAP_DONE;
        cl->fetches += !cl->full;
        if (cl->refetch && !cl->full) { /* again, from the node the MOVED named */
            i = cl->refetch - 1;
            cl->refetch = 0;
            rlock__cluster_fetch_start(cl, i, rlock__now(c));
        }
        return;
    }
    if (ev->kind == RLOCK__EV_REPLY && ev->reply.v.type == RLOCK_RESP_ERROR && !cl->slots_cmd) cl->slots_cmd = 1;
    else {
        cl->tries++;
        cl->from = (cl->from + 1) % cl->n;
        cl->slots_cmd = 0;
    }
    rlock__cluster_fetch_send(cl, rlock__now(c));
}

RLOCKDEF rlock_status rlock_cluster_init(rlock_cluster *cl, const char *const *hosts, const int *ports, size_t n,
                                         const rlock_config *cfg, rlock_cluster_connect_fn connect, void *user) {
    size_t i;
    if (!cl) return RLOCK_E_BADARG;
    memset(cl, 0, sizeof *cl);
    if (!hosts || !ports || !connect) return rlock__why(cl->why, RLOCK__TXT("hosts, ports and connect are required"), 0, 0);
    if (n == 0 || n > RLOCK_CLUSTER_MAX_PRIMARIES)
        return rlock__why(cl->why, RLOCK__TXT("n is \1, it must be 1..RLOCK_CLUSTER_MAX_PRIMARIES (\2)"), (long long)n,
                          RLOCK_CLUSTER_MAX_PRIMARIES);
    if (cfg) cl->cfg = *cfg;
    cl->connect = connect;
    cl->user = user;
    cl->call.done = rlock__cluster_fetch_done;
    for (i = 0; i < n; i++)
        if (!hosts[i] || rlock__cluster_add(cl, hosts[i], strlen(hosts[i]), ports[i]) < 0) {
            rlock_status st = rlock__why(cl->why, RLOCK__TXT("seed \1 is not a usable address (host < 64 bytes, port 1..65535)"),
                                         (long long)i, 0);
            rlock_cluster_close(cl);
            cl->n = 0;
            return st;
        }
    return RLOCK_OK;
}

RLOCKDEF const char *rlock_cluster_error(const rlock_cluster *cl) { return cl ? cl->why : ""; }

RLOCKDEF size_t rlock_cluster_primary(const rlock_cluster *cl, unsigned slot) {
    return cl && slot < RLOCK_CLUSTER_SLOTS && cl->slot[slot] && cl->slot[slot] <= cl->n ? (size_t)cl->slot[slot] - 1 : 0;
}

RLOCKDEF rlock_status rlock_cluster_lock_init(rlock_cluster *cl, rlock_lock *lk, const char *key, size_t key_len,
                                              rlock_kind kind) {
    rlock_status st;
    /* (a NULL key: rlock_lock_init says so; its slot is 0) */
    if (!rlock__cluster_ok(cl))
        return lk ? rlock__why(lk->why, RLOCK__TXT("cl is not initialised (rlock_cluster_init)"), 0, 0) : RLOCK_E_BADARG;
    st = rlock_lock_init(lk, &cl->client[rlock_cluster_primary(cl, rlock_cluster_slot(key, key_len))], key, key_len, kind);
    if (st == RLOCK_OK) memset(&lk->cl, 0, sizeof lk->cl);
    return st;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ..." -> slot, host, port. 0 ok. */
static int rlock__cluster_redirect(const char *e, int *ask, unsigned *slot, const char **host, size_t *hl, int *port) {
    const char *p, *colon = NULL;
    unsigned long v = 0;
    *ask = e[0] == 'A';
    p = e + (*ask ? 4 : 6);
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9') v = v * 10 + (unsigned long)(*p++ - '0');
    if (*p++ != ' ' || v >= RLOCK_CLUSTER_SLOTS) return -1;
    *slot = (unsigned)v;
    *host = p;
    for (; *p && *p != ' '; p++)
        if (*p == ':') colon = p;
    if (!colon) return -1;
    *hl = (size_t)(colon - *host); /* 0: the nodes' endpoint type unknown-endpoint - the sender's host */
    for (v = 0, p = colon + 1; *p >= '0' && *p <= '9' && v < 65536; p++) v = v * 10 + (unsigned long)(*p - '0');
    *port = (int)v;
    return 0;
}

enum { RLOCK__CL_ACQUIRE = 1, RLOCK__CL_EXTEND, RLOCK__CL_RELEASE, RLOCK__CL_INSPECT, RLOCK__CL_FORCE };
/* IDLE; MAP: waiting for the slot map; START: the lock call is due; RUN: it runs; PAUSE: until wake_at */
enum { RLOCK__CLP_IDLE, RLOCK__CLP_MAP, RLOCK__CLP_START, RLOCK__CLP_RUN, RLOCK__CLP_PAUSE };
#define RLOCK__CLUSTER_IO_MS 4000u   /* an unreachable primary: ask the others, every 100 ms, for 4 s */
#define RLOCK__CLUSTER_TRIES 20      /* -TRYAGAIN (slot migrating): again after 10..80 ms, ~1.4 s in all */

static rlock_client *rlock__cluster_home(rlock_cluster *cl, const rlock_lock *lk) {
    return &cl->client[rlock_cluster_primary(cl, rlock_cluster_slot(lk->key, lk->key_len))];
}

static void rlock__cluster_unlink(rlock_cluster *cl, rlock_lock *lk) {
    rlock_lock **p = &cl->ops;
    while (*p && *p != lk) p = &(*p)->cl.next;
    if (*p) *p = lk->cl.next;
    lk->cl.next = NULL;
    lk->cl.phase = RLOCK__CLP_IDLE;
}

/* The lock call's status st, redirects followed: RLOCK_WOULD_BLOCK when the
 * operation goes on (phase says how), else its final status. */
static rlock_status rlock__cluster_judge(rlock_cluster *cl, rlock_lock *lk, rlock_status st, rlock__ms now) {
    rlock__cluster_op *o = &lk->cl;
    const char *err = rlock_node_error(lk->client->nodes[0]);
    int asking = lk->asking, down;
    lk->asking = 0;
    if (st == RLOCK_E_MOVED && o->hops++ < RLOCK_CLUSTER_HOPS) {
        const char *host;
        size_t hl;
        int ask, port, idx, unk;
        unsigned slot;
        if (rlock__cluster_redirect(err, &ask, &slot, &host, &hl, &port) != 0) return st;
        if (!hl) hl = strlen(host = cl->host[lk->client - cl->client]);
        /* "?": the node's endpoint unknown (cluster-preferred-endpoint-type
         * hostname, the node without one). The map, read again from the
         * sender, names its ip: then on (rlock__cluster_advance) */
        unk = hl == 1 && *host == '?';
        idx = unk ? (int)(lk->client - cl->client) : rlock__cluster_add(cl, host, hl, port);
        if (idx < 0) {
            if (idx == -2) (void)rlock__cluster_full(cl);
            else (void)rlock__why(cl->why, RLOCK__TXT("redirected to an address that cannot be used"), 0, 0);
            return st;
        }
        if (ask) cl->asked++;
        else { /* the slot moved: learn it now, and the rest of the map again */
            cl->slot[slot] = (unsigned char)(idx + 1); /* ("?": the sender, until the map comes) */
            cl->moved++;
        }
        if (!ask || unk) rlock__cluster_fetch_start(cl, (size_t)idx, now);
        lk->asking = ask; /* ASK: this once, at the importing primary */
        o->asked |= (unsigned char)ask;
        lk->client = &cl->client[idx];
        o->port = (unsigned short)(unk ? port : 0); /* read in RLOCK__CLP_MAP: "?" only */
        o->phase = (unsigned char)(RLOCK__CLP_START - unk); /* "?": RLOCK__CLP_MAP */
        return RLOCK_WOULD_BLOCK;
    }
    /* -CLUSTERDOWN (nothing ran): the others say so once the primary is
     * marked failing, until its replica is promoted */
    down = st == RLOCK_E_IO || (st == RLOCK_E_REDIS && strlen(err) >= 11 && memcmp(err, "CLUSTERDOWN", 11) == 0);
    if (down && cl->n > 1 && !o->io) { /* the first failure */
        o->io = 1;
        o->io_end = now + RLOCK__CLUSTER_IO_MS;
    }
    if (down && cl->n > 1 && RLOCK__MS_BEFORE(now, o->io_end)) {
        /* Unreachable: maybe failing over. Another node answers MOVED to
         * whoever serves the slot (the old address until a replica is
         * promoted). For 4 s from the first failure, not a number of tries:
         * a try at a primary that does not answer costs a node timeout. */
        lk->client = &cl->client[((size_t)(lk->client - cl->client) + 1) % cl->n];
        o->hops = 0;
        o->wake_at = now + 100u;
        o->phase = RLOCK__CLP_PAUSE;
        return RLOCK_WOULD_BLOCK;
    }
    if (st == RLOCK_E_REDIS && strlen(err) >= 8 && memcmp(err, "TRYAGAIN", 8) == 0 && o->again++ < RLOCK__CLUSTER_TRIES) {
        /* A multi-key script while its slot migrates: this node lacks some
         * of its keys (the queue keys, mostly never created), and nothing
         * ran. The same node, soon; a release (inspect, force-unlock) then
         * names the lock key alone: it needs only that one, a
         * compare-and-delete that wakes no waiter (they find the key free at
         * their re-check). Else a lock granted there by ASK stayed held
         * until its TTL, the migration outlasting the retries. */
        lk->asking = asking | (o->kind != RLOCK__CL_ACQUIRE) << 1;
        o->wake_at = now + (10u << (o->again < 4 ? o->again - 1 : 3));
        o->phase = RLOCK__CLP_PAUSE;
        return RLOCK_WOULD_BLOCK;
    }
    /* After an ASK the slot is still the map's primary's: the next operation
     * starts there again (and is sent on if need be). */
    if (o->asked) lk->client = rlock__cluster_home(cl, lk);
    else if (st <= RLOCK_LOST && lk->client != rlock__cluster_home(cl, lk)) {
        /* The script ran (RLOCK_OK .. RLOCK_LOST: its answers; no ASKING, so
         * this node serves the slot) on a node the map does not name: one
         * reached by asking around (a failover, no MOVED on the way). Learn
         * it as from a MOVED, or the map kept naming the dead primary. */
        size_t idx = (size_t)(lk->client - cl->client);
        cl->slot[rlock_cluster_slot(lk->key, lk->key_len)] = (unsigned char)(idx + 1);
        rlock__cluster_fetch_start(cl, idx, now);
    }
    if (st == RLOCK_NOT_ACQUIRED && o->timed) st = RLOCK_TIMEOUT; /* the wait ran out across redirects */
    return st;
}

/* Move lk's cluster operation as far as it goes now. */
static rlock_status rlock__cluster_advance(rlock_cluster *cl, rlock_lock *lk) {
    rlock__cluster_op *o = &lk->cl;
    for (;;) {
        rlock__ms now = rlock__now(lk->client);
        rlock_status st;
        switch (o->phase) {
        case RLOCK__CLP_MAP:
            if (cl->fetch == RLOCK__MAP_BUSY) return RLOCK_WOULD_BLOCK;
            if (cl->full) return rlock__cluster_full(cl);
            /* a lock not held goes where the map says (held: where it was
             * granted); after "MOVED ?:port" too; "ASK ?:port": to the node
             * of that port (the first, when hosts share ports) */
            if (o->port || (o->kind == RLOCK__CL_ACQUIRE && lk->state != RLOCK_STATE_HELD) ||
                o->kind >= RLOCK__CL_INSPECT)
                lk->client = rlock__cluster_home(cl, lk);
            if (o->port && lk->asking) {
                size_t i;
                for (i = cl->n; i-- > 0;)
                    if (cl->port[i] == o->port) lk->client = &cl->client[i];
            }
            o->port = 0;
            o->phase = RLOCK__CLP_START;
            continue;
        case RLOCK__CLP_PAUSE:
            if (RLOCK__MS_BEFORE(now, o->wake_at)) return RLOCK_WOULD_BLOCK;
            o->phase = RLOCK__CLP_START;
            continue;
        case RLOCK__CLP_START:
            if (o->kind == RLOCK__CL_ACQUIRE) {
                long long left = o->timed == 2                         ? LLONG_MAX /* forever */
                                 : RLOCK__MS_BEFORE(now, o->wait_end) ? (long long)(rlock__ms)(o->wait_end - now)
                                                                      : 0;
                st = rlock_acquire_begin(lk, o->arg.ttl, left);
            } else if (o->kind >= RLOCK__CL_INSPECT) {
                st = cl->admin(lk, o->kind);
            } else {
                st = o->kind == RLOCK__CL_EXTEND ? rlock_extend_begin(lk, o->arg.ttl) : rlock_release_begin(lk);
            }
            o->phase = RLOCK__CLP_RUN;
            if (st == RLOCK_WOULD_BLOCK) return st;
            break;
        case RLOCK__CLP_RUN:
            st = rlock_step(lk);
            if (st == RLOCK_WOULD_BLOCK) return st;
            break;
        default:
            return RLOCK_E_STATE;
        }
        st = rlock__cluster_judge(cl, lk, st, rlock__now(lk->client));
        if (st != RLOCK_WOULD_BLOCK) return st;
    }
}

static rlock_status rlock__cluster_begin(rlock_cluster *cl, rlock_lock *lk, int kind, long long ttl, long long wait,
                                         struct rlock_info *info) {
    rlock__ms now;
    rlock_status st;
    size_t i;
    rlock__txt why = RLOCK__TXT("cl is not initialised (rlock_cluster_init)");
    if (!rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (rlock__cluster_ok(cl)) {
        why = RLOCK__TXT("lk is not one of cl's locks (rlock_cluster_lock_init)");
        if (lk->client >= cl->client && lk->client < cl->client + cl->n) why = 0;
    }
    if (why) return rlock__why(lk->why, why, 0, 0);
    if (lk->cl.phase != RLOCK__CLP_IDLE || lk->op.kind != RLOCK__OP_NONE) return RLOCK_E_STATE;
    if (kind <= RLOCK__CL_EXTEND && !rlock__check_ttl(lk, ttl)) return RLOCK_E_BADARG;
    if (wait < 0) return rlock__why(lk->why, RLOCK__TXT("wait \1 ms is negative"), wait, 0);
    now = rlock__now(lk->client);
    memset(&lk->cl, 0, sizeof lk->cl);
    lk->cl.kind = (unsigned char)kind;
    lk->cl.owner = cl;
    if (info) lk->cl.arg.info = info;
    else lk->cl.arg.ttl = ttl;
    lk->cl.wait_end = now + (rlock__ms)(wait < RLOCK__MS_FAR ? wait : RLOCK__MS_FAR - 1); /* < 2^31 */
    lk->cl.timed = (unsigned char)(wait <= 0 ? 0 : wait < RLOCK__MS_FAR ? 1 : 2); /* 2: forever (as acquire's) */
    lk->cl.phase = RLOCK__CLP_MAP;
    lk->cl.next = cl->ops;
    cl->ops = lk;
    for (i = 0; i < cl->n; i++) { /* the credentials, set after rlock_cluster_init added the seeds */
        cl->node[i].username = cl->username;
        cl->node[i].password = cl->password;
    }
    if (cl->fetch == RLOCK__MAP_NONE) rlock__cluster_fetch_start(cl, 0, now); /* the map, before the first lock */
    st = rlock__cluster_advance(cl, lk);
    if (st != RLOCK_WOULD_BLOCK) rlock__cluster_unlink(cl, lk);
    return st;
}

RLOCKDEF rlock_status rlock_cluster_acquire_begin(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms,
                                                  long long wait_ms) {
    return rlock__cluster_begin(cl, lk, RLOCK__CL_ACQUIRE, ttl_ms, wait_ms, NULL);
}
RLOCKDEF rlock_status rlock_cluster_extend_begin(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms) {
    return rlock__cluster_begin(cl, lk, RLOCK__CL_EXTEND, ttl_ms, 0, NULL);
}
RLOCKDEF rlock_status rlock_cluster_release_begin(rlock_cluster *cl, rlock_lock *lk) {
    return rlock__cluster_begin(cl, lk, RLOCK__CL_RELEASE, 0, 0, NULL);
}

#ifndef RLOCK_NO_PRIMITIVES
static rlock_status rlock__cluster_admin(rlock_lock *lk, int kind) {
    return kind == RLOCK__CL_INSPECT ? rlock_inspect_begin(lk, lk->cl.arg.info, 1) : rlock_force_unlock_begin(lk);
}
RLOCKDEF rlock_status rlock_cluster_inspect_begin(rlock_cluster *cl, rlock_lock *lk, rlock_info *out) {
    if (!out) return rlock__lock_ok(lk) ? rlock__why(lk->why, RLOCK__TXT("out is NULL"), 0, 0) : RLOCK_E_BADARG;
    if (cl) cl->admin = rlock__cluster_admin;
    return rlock__cluster_begin(cl, lk, RLOCK__CL_INSPECT, 0, 0, out);
}
RLOCKDEF rlock_status rlock_cluster_force_unlock_begin(rlock_cluster *cl, rlock_lock *lk) {
    if (cl) cl->admin = rlock__cluster_admin;
    return rlock__cluster_begin(cl, lk, RLOCK__CL_FORCE, 0, 0, NULL);
}
#endif

RLOCKDEF rlock_status rlock_cluster_step(rlock_cluster *cl, rlock_lock *lk) {
    rlock_status st;
    if (!rlock__cluster_ok(cl) || !rlock__lock_ok(lk)) return RLOCK_E_BADARG;
    if (lk->cl.phase == RLOCK__CLP_IDLE) return RLOCK_E_STATE;
    if (cl->fetch == RLOCK__MAP_BUSY) rlock__client_step(&cl->client[cl->from]);
    st = rlock__cluster_advance(cl, lk);
    if (st != RLOCK_WOULD_BLOCK) rlock__cluster_unlink(cl, lk);
    return st;
}

RLOCKDEF void rlock_cluster_cancel(rlock_cluster *cl, rlock_lock *lk) {
    if (!rlock__cluster_ok(cl) || !rlock__lock_ok(lk) || lk->cl.phase == RLOCK__CLP_IDLE) return;
    if (lk->op.kind != RLOCK__OP_NONE) {
        rlock_cancel(lk);
        (void)rlock_result(lk); /* a finished op's result: its grant, if any, is kept */
    }
    lk->asking = 0;
    rlock__cluster_unlink(cl, lk);
}

/* rlock_lock_destroy of a handle whose rlock_cluster_* operation is in
 * progress: it leaves its cluster's list (which would otherwise point at
 * the zeroed handle), and a lock that operation granted (it was not held
 * before: an acquire the program has not seen end) is released, as a
 * plain handle's in flight is. */
static void rlock__cluster_destroy(rlock_lock *lk) {
    rlock_cluster *cl = lk->cl.owner;
    int acquiring = lk->cl.kind == RLOCK__CL_ACQUIRE && lk->state != RLOCK_STATE_HELD;
    rlock_cluster_cancel(cl, lk);
    if (acquiring && lk->state == RLOCK_STATE_HELD) (void)rlock_cluster_release(cl, lk);
}

RLOCKDEF size_t rlock_cluster_interest(rlock_cluster *cl, rlock_interest *out, size_t cap, uint32_t *timeout_ms) {
    size_t i, k = 0;
    uint32_t t = UINT32_MAX;
    rlock__ms now;
    const rlock_lock *o;
    if (timeout_ms) *timeout_ms = 0;
    if (!rlock__cluster_ok(cl) || (!out && cap)) return 0;
    for (i = 0; i < cl->n; i++) {
        uint32_t ti = UINT32_MAX;
        k += rlock_client_interest(&cl->client[i], k < cap ? out + k : NULL, k < cap ? cap - k : 0, &ti);
        if (ti < t) t = ti;
    }
    now = rlock__now(&cl->client[0]);
    for (o = cl->ops; o; o = o->cl.next) {
        if (o->cl.phase == RLOCK__CLP_PAUSE) {
            uint32_t ti = RLOCK__MS_BEFORE(now, o->cl.wake_at) ? o->cl.wake_at - now : 0;
            if (ti < t) t = ti;
        } else if (o->cl.phase == RLOCK__CLP_START || (o->cl.phase == RLOCK__CLP_MAP && cl->fetch != RLOCK__MAP_BUSY)) {
            t = 0;
        }
    }
    if (timeout_ms) *timeout_ms = t;
    return k;
}

/* The blocking calls: begin, then step, waiting on what the step needs. */
static rlock_status rlock__cluster_run(rlock_cluster *cl, rlock_lock *lk, rlock_status st) {
    while (st == RLOCK_WOULD_BLOCK) {
        uint32_t t;
        st = rlock_cluster_step(cl, lk);
        if (st != RLOCK_WOULD_BLOCK) break;
        (void)rlock_cluster_interest(cl, NULL, 0, &t);
        if (lk->cl.phase == RLOCK__CLP_MAP) rlock__client_wait(&cl->client[cl->from], t);
        else if (lk->cl.phase == RLOCK__CLP_RUN) rlock__client_wait(lk->client, t);
        else if (t) rlock__sleep(lk->client, t);
    }
    return st;
}

RLOCKDEF rlock_status rlock_cluster_acquire(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms, long long wait_ms) {
    return rlock__cluster_run(cl, lk, rlock_cluster_acquire_begin(cl, lk, ttl_ms, wait_ms));
}
RLOCKDEF rlock_status rlock_cluster_extend(rlock_cluster *cl, rlock_lock *lk, long long ttl_ms) {
    return rlock__cluster_run(cl, lk, rlock_cluster_extend_begin(cl, lk, ttl_ms));
}
RLOCKDEF rlock_status rlock_cluster_release(rlock_cluster *cl, rlock_lock *lk) {
    return rlock__cluster_run(cl, lk, rlock_cluster_release_begin(cl, lk));
}
#ifndef RLOCK_NO_PRIMITIVES
RLOCKDEF rlock_status rlock_cluster_inspect(rlock_cluster *cl, rlock_lock *lk, rlock_info *out) {
    return rlock__cluster_run(cl, lk, rlock_cluster_inspect_begin(cl, lk, out));
}
RLOCKDEF rlock_status rlock_cluster_force_unlock(rlock_cluster *cl, rlock_lock *lk) {
    return rlock__cluster_run(cl, lk, rlock_cluster_force_unlock_begin(cl, lk));
}
#endif

RLOCKDEF void rlock_cluster_close(rlock_cluster *cl) {
    size_t i;
    if (!cl) return;
    for (i = 0; i < cl->n; i++) {
        rlock__x *x = rlock__x_node(&cl->node[i]);
        (void)rlock__x_disown(x, &cl->call); /* a fetch in flight: its failure is nobody's */
        rlock_client_close(&cl->client[i]);
    }
    if (cl->fetch == RLOCK__MAP_BUSY) cl->fetch = RLOCK__MAP_NONE;
}
#endif /* RLOCK_NO_CLUSTER */

#endif /* RLOCK_IMPLEMENTATION_INCLUDED */
#endif /* RLOCK_IMPLEMENTATION */
