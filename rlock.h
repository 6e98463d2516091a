/* rlock.h - Redis distributed locks for C99, firmware and legacy code.  v0.1.0
 *
 * WHAT
 *   A single-file, header-only library for Redis locks: single-node locks
 *   (SET NX PX + owner-checked Lua release), reentrant locks (a hash of
 *   owner -> hold count changed only by Lua) and Redlock over up to
 *   RLOCK_MAX_NODES independent masters. It never allocates, keeps no mutable
 *   globals, and reaches the network only through a transport vtable you
 *   supply (adapters/rlock_posix.h and adapters/rlock_hiredis.h ship with it).
 *
 * HOW TO COMPILE
 *   In exactly one C or C++ file, include it with the implementation:
 *       #define RLOCK_IMPLEMENTATION
 *       #include "rlock.h"          <- first, so it can ask for POSIX APIs
 *   Everywhere else just #include "rlock.h". Add -DRLOCK_STATIC to make every
 *   function static (one translation unit only).
 *
 * EXAMPLE (blocking, one node, POSIX adapter)
 *   rlock_posix_conn pc; rlock_node node; rlock_client cl; rlock_lock lk;
 *   rlock_posix_init_tcp(&pc, "127.0.0.1", 6379, 1000);
 *   rlock_node_init(&node, rlock_posix_transport(&pc));
 *   rlock_client_init(&cl, &node, 1, NULL);               // NULL: defaults
 *   rlock_lock_init(&lk, &cl, "jobs:nightly", 12, RLOCK_KIND_SIMPLE);
 *   if (rlock_acquire(&lk, 30000, 5000) == RLOCK_OK) {   // ttl 30 s, wait 5 s
 *       do_work();                                        // < rlock_validity_ms(&lk)
 *       rlock_release(&lk);
 *   }
 *   rlock_client_close(&cl);
 *
 * TABLE OF CONTENTS
 *   1. Configuration macros           4. Connection / transport layer
 *   2. Status codes                   5. Lock operations (blocking, non-blocking)
 *   3. RESP codec                     6. Implementation (same order)
 *
 * CONFIGURATION MACROS (define before including; defaults in brackets)
 *   RLOCK_STATIC               make every function static
 *   RLOCK_MAX_NODES            Redlock nodes per client            [9]
 *   RLOCK_MAX_KEY_LEN          longest key in bytes                 [256]
 *   RLOCK_MAX_OWNER_LEN        longest reentrant owner id           [64]
 *   RLOCK_TX_BUF / RX_BUF      per-node command / reply buffers     [1536 / 1024]
 *   RLOCK_RESP_MAX_DEPTH       deepest nested array the reader takes [8]
 *   RLOCK_MAX_TTL_MS           longest lease accepted               [2^31-1 ms]
 *   RLOCK_NO_POSIX             no POSIX defaults: you must supply
 *                              RLOCK_NOW_MS(), RLOCK_SLEEP_MS(ms) and
 *                              RLOCK_RANDOM_BYTES(buf,n), or set the hooks
 *                              in rlock_config at run time
 *   RLOCK_NOW_MS()             monotonic milliseconds (uint64_t)    [CLOCK_MONOTONIC]
 *   RLOCK_SLEEP_MS(ms)         sleep, used only by blocking calls   [nanosleep]
 *   RLOCK_RANDOM_BYTES(b,n)    fill b with n secure random bytes,
 *                              return 0 on success                  [/dev/urandom]
 *   RLOCK_THREAD_ID()          unsigned long naming this thread     [pthread_self hash]
 *   RLOCK_NO_THREAD_ID         owner ids use the instance id only
 *   RLOCK_ASSERT(x)            internal invariants                  [assert]
 *   RLOCK_NO_STATUS_STRINGS    rlock_status_str() returns "" (saves .rodata)
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
#define RLOCKDEF static
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

#ifndef RLOCK_MAX_NODES
#define RLOCK_MAX_NODES 9
#endif
#ifndef RLOCK_MAX_KEY_LEN
#define RLOCK_MAX_KEY_LEN 256
#endif
#ifndef RLOCK_MAX_OWNER_LEN
#define RLOCK_MAX_OWNER_LEN 64
#endif
#ifndef RLOCK_TX_BUF
#define RLOCK_TX_BUF 1536
#endif
#ifndef RLOCK_RX_BUF
#define RLOCK_RX_BUF 1024
#endif
#ifndef RLOCK_RESP_MAX_DEPTH
#define RLOCK_RESP_MAX_DEPTH 8
#endif
#ifndef RLOCK_MAX_TTL_MS
#define RLOCK_MAX_TTL_MS 2147483647LL
#endif
#ifndef RLOCK_ERR_LEN
#define RLOCK_ERR_LEN 128 /* last error message kept per node */
#endif

/* A token is 128 random bits as 32 hex characters. */
#define RLOCK_TOKEN_LEN 32

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
    RLOCK_E_AUTH,          /* NOAUTH / WRONGPASS / NOPERM: not retried */
    RLOCK_E_WRONGTYPE,     /* the key holds a value that is not this kind of lock: not retried */
    RLOCK_E_FOREIGN,       /* the key exists without a TTL: not written by rlock; not retried */
    RLOCK_E_QUORUM,        /* Redlock: too many nodes failed to reach N/2+1 */
    RLOCK_E_RANDOM,        /* the random source failed: refusing to lock with a guessable token */
    RLOCK_E_CLOCK,         /* the clock hook went backwards past a deadline or overflowed */
    RLOCK_STATUS_COUNT
} rlock_status;

/* A short English name for a status; never NULL. */
RLOCKDEF const char *rlock_status_str(rlock_status st);

/* ======================================================================== */
/* 3. RESP codec (RESP2, what a lock needs)                                  */
/* ======================================================================== */

typedef enum rlock_resp_type {
    RLOCK_RESP_NONE = 0,
    RLOCK_RESP_STATUS,   /* +OK      str/len */
    RLOCK_RESP_ERROR,    /* -ERR ... str/len */
    RLOCK_RESP_INTEGER,  /* :42      integer */
    RLOCK_RESP_BULK,     /* $3 abc   str/len */
    RLOCK_RESP_NIL,      /* $-1 or *-1 */
    RLOCK_RESP_ARRAY     /* *N ...   count, and the first RLOCK_RESP_MAX_ELEMS elements */
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
    long long count;                            /* array element count */
    rlock_resp_value elem[RLOCK_RESP_MAX_ELEMS];/* first elements; nested arrays as type ARRAY */
} rlock_reply;

/* Parse one complete reply from buf[0..len).
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

/* Wait events for the optional wait() hook. */
#define RLOCK_WANT_READ  1
#define RLOCK_WANT_WRITE 2

/* THE TRANSPORT CONTRACT
 * rlock owns retry loops and deadlines; a transport only moves bytes.
 *   send(ctx, buf, len)  -> bytes written (1..len; short writes are fine),
 *                           RLOCK_IO_WOULD_BLOCK (0) when it cannot write now,
 *                           RLOCK_IO_ERROR on a hard error.
 *   recv(ctx, buf, len)  -> bytes read (1..len; any chunking is fine),
 *                           RLOCK_IO_WOULD_BLOCK (0) when nothing is ready,
 *                           RLOCK_IO_CLOSED when the peer closed,
 *                           RLOCK_IO_ERROR on a hard error.
 *   Returning more than len is a transport bug: rlock treats it as an error.
 *   connect(ctx) optional -> 1 when connected, RLOCK_IO_WOULD_BLOCK (0) while a
 *                           non-blocking connect is in progress (rlock calls
 *                           it again), RLOCK_IO_ERROR on failure. rlock calls
 *                           it before the first command and after it dropped
 *                           a connection. Without it, a dropped connection
 *                           stays dropped (RLOCK_E_IO).
 *   close(ctx)   optional -> drop the connection; rlock calls it after an
 *                           error, a timeout (a late reply must never be read
 *                           as the answer to a later command) or a protocol error.
 *   wait(ctx, want, timeout_ms) optional -> block until the connection can do
 *                           `want` (RLOCK_WANT_READ/WRITE) or timeout_ms passes;
 *                           > 0 ready, 0 timeout, < 0 error. Only the blocking
 *                           calls use it. Without it, blocking calls spin on
 *                           send/recv, so a transport with no wait() should
 *                           block inside recv()/send() itself (with a timeout).
 * Functions may be called from one thread at a time per node. */
typedef struct rlock_transport {
    void *ctx;
    long (*send)(void *ctx, const unsigned char *buf, size_t len);
    long (*recv)(void *ctx, unsigned char *buf, size_t len);
    int (*connect)(void *ctx);
    void (*close)(void *ctx);
    int (*wait)(void *ctx, int want, uint32_t timeout_ms);
} rlock_transport;

/* One Redis server. Caller-allocated; fields after `transport` are private. */
typedef struct rlock_node {
    rlock_transport transport;
    const char *username; /* optional ACL user for AUTH (NULL: none) */
    const char *password; /* optional AUTH password (NULL: none); never logged */
    /* --- private --- */
    unsigned magic;
    int conn;             /* rlock__CONN_* */
    int io;               /* rlock__IO_* */
    int want;             /* RLOCK_WANT_* while waiting */
    int replies_left;     /* replies still expected for this exchange */
    int auth_inflight;    /* the next reply answers AUTH */
    int script;           /* rlock__SCRIPT_* in flight; for the EVAL fallback */
    int fell_back;        /* this exchange already fell back to EVAL */
    uint64_t deadline;    /* this exchange must finish by then */
    size_t tx_len, tx_off, rx_len;
    rlock_status result;  /* outcome of the last exchange */
    rlock_reply reply;    /* its reply (pointers into rx; valid until the next exchange) */
    unsigned long commands;  /* commands sent on this node (for benchmarks) */
    unsigned long reconnects;
    char err[RLOCK_ERR_LEN]; /* last error text (Redis message or transport reason) */
    unsigned char tx[RLOCK_TX_BUF];
    unsigned char rx[RLOCK_RX_BUF];
} rlock_node;

/* Run-time hooks and defaults. Zero means default everywhere. */
typedef struct rlock_config {
    uint32_t node_timeout_ms;  /* per-node, per-exchange timeout [min(ttl/10, 250), at least 5] */
    uint32_t backoff_min_ms;   /* first retry delay while waiting [2] */
    uint32_t backoff_max_ms;   /* cap of the exponential backoff [128] */
    uint32_t max_attempts;     /* acquire rounds per call, 0 = until the wait deadline [0] */
    uint32_t drift_permille;   /* clock drift allowance: ttl*permille/1000 + 2 ms [10] */
    const char *owner;         /* reentrant owner id; NULL: instance id + thread id */
    uint64_t (*now_ms)(void *user);                 /* monotonic clock [RLOCK_NOW_MS] */
    int (*random_bytes)(void *user, unsigned char *buf, size_t n); /* 0 = ok [RLOCK_RANDOM_BYTES] */
    void (*sleep_ms)(void *user, uint32_t ms);      /* blocking calls only [RLOCK_SLEEP_MS] */
    void *hook_user;
} rlock_config;

/* A set of N nodes sharing one configuration. Caller-allocated, private. */
typedef struct rlock_client {
    unsigned magic;
    rlock_config cfg;
    rlock_node *nodes[RLOCK_MAX_NODES];
    size_t n_nodes;
    void *busy;                  /* the lock whose op owns the connections now */
    char instance_id[17];        /* 64 random bits, hex: owner ids and tokens */
} rlock_client;

/* Fill cfg with the defaults (for callers without designated initialisers). */
RLOCKDEF void rlock_config_init(rlock_config *cfg);

/* Prepare a node around a transport (copied). Does not connect. */
RLOCKDEF rlock_status rlock_node_init(rlock_node *node, const rlock_transport *tr);

/* Group n nodes (1..RLOCK_MAX_NODES, distinct) into a client; cfg may be NULL.
 * Needs the random source (for the instance id): RLOCK_E_RANDOM if it fails. */
RLOCKDEF rlock_status rlock_client_init(rlock_client *c, rlock_node *nodes, size_t n,
                                        const rlock_config *cfg);

/* Connect every node now (blocking, each bounded by timeout_ms) and AUTH.
 * Optional: operations connect lazily. Returns RLOCK_OK when a quorum is up. */
RLOCKDEF rlock_status rlock_client_connect(rlock_client *c, uint32_t timeout_ms);

/* Close every node's connection. The client can be used again (reconnects). */
RLOCKDEF void rlock_client_close(rlock_client *c);

RLOCKDEF size_t rlock_client_quorum(const rlock_client *c); /* n/2 + 1 */

/* Per-node diagnostics for the last operation. */
RLOCKDEF rlock_status rlock_node_status(const rlock_node *node);
RLOCKDEF const char *rlock_node_error(const rlock_node *node);    /* "" when none */
RLOCKDEF unsigned long rlock_node_commands(const rlock_node *node); /* commands sent so far */
RLOCKDEF int rlock_node_wants(const rlock_node *node); /* RLOCK_WANT_* bits while an op waits on it */

/* ======================================================================== */
/* 5. Lock operations                                                        */
/* ======================================================================== */

typedef enum rlock_kind {
    RLOCK_KIND_SIMPLE = 1,    /* string key = token; not reentrant */
    RLOCK_KIND_REENTRANT = 2  /* hash {owner -> hold count} */
} rlock_kind;

typedef enum rlock_state {
    RLOCK_STATE_IDLE = 0,     /* not held */
    RLOCK_STATE_HELD,         /* held; rlock_validity_ms() > 0 until it runs out */
    RLOCK_STATE_LOST          /* was held; an extend or release found it gone */
} rlock_state;

/* One lock on one key. Caller-allocated; fields are private. */
typedef struct rlock_lock {
    unsigned magic;
    rlock_client *client;
    rlock_kind kind;
    rlock_state state;
    char key[RLOCK_MAX_KEY_LEN];
    size_t key_len;
    char owner[RLOCK_MAX_OWNER_LEN + 1]; /* token (simple) or owner id (reentrant) */
    size_t owner_len;
    long long ttl_ms;
    uint64_t validity_end;    /* monotonic ms when validity runs out */
    long long holds;          /* reentrant hold count seen on the quorum */
    /* operation in progress */
    int op;                   /* rlock__OP_* */
    int phase;                /* rlock__PH_* */
    uint64_t round_start;
    uint64_t wait_end;        /* acquire: give up after this */
    uint64_t wake_at;         /* backoff: next round not before */
    uint32_t attempts;
    uint32_t node_timeout;
    long long holder_pttl;    /* smallest PTTL reported by a node that refused */
    rlock_status op_result;   /* result to report after cleanup */
    size_t votes;
    unsigned long long prng;  /* jitter only; seeded from the secure source */
    char ttl_str[24];
} rlock_lock;

/* Prepare a lock handle for key[0..key_len) (1..RLOCK_MAX_KEY_LEN bytes,
 * binary-safe; copied). Sends nothing. */
RLOCKDEF rlock_status rlock_lock_init(rlock_lock *lk, rlock_client *c, const char *key,
                                      size_t key_len, rlock_kind kind);

/* Forget the handle; later calls on it return RLOCK_E_BADARG. A held lock is
 * not released (it expires by its TTL): release first. */
RLOCKDEF void rlock_lock_destroy(rlock_lock *lk);

/* --- blocking calls (a loop over the non-blocking ones) --- */

/* Acquire with lease ttl_ms, waiting up to wait_ms (0: try once).
 * RLOCK_OK, RLOCK_NOT_ACQUIRED (wait_ms == 0), RLOCK_TIMEOUT, or an error.
 * A reentrant lock already held by this owner is re-entered (count + 1). */
RLOCKDEF rlock_status rlock_acquire(rlock_lock *lk, long long ttl_ms, long long wait_ms);
RLOCKDEF rlock_status rlock_try_acquire(rlock_lock *lk, long long ttl_ms);

/* Reset the lease to ttl_ms, owner-checked. Never re-creates a vanished lock:
 * that is RLOCK_LOST. */
RLOCKDEF rlock_status rlock_extend(rlock_lock *lk, long long ttl_ms);

/* Owner-checked release. Reentrant: one hold is dropped; the key goes at 0.
 * RLOCK_OK, RLOCK_NOT_HELD (this handle holds nothing; nothing sent),
 * RLOCK_LOST (Redis no longer had it as ours), or an error. */
RLOCKDEF rlock_status rlock_release(rlock_lock *lk);

/* --- non-blocking calls: begin, then rlock_step() until not WOULD_BLOCK --- */
RLOCKDEF rlock_status rlock_acquire_begin(rlock_lock *lk, long long ttl_ms, long long wait_ms);
RLOCKDEF rlock_status rlock_extend_begin(rlock_lock *lk, long long ttl_ms);
RLOCKDEF rlock_status rlock_release_begin(rlock_lock *lk);
/* Drive the op: RLOCK_WOULD_BLOCK while it runs, then its final status.
 * Wait for rlock_node_wants() on the client's nodes or until
 * rlock_next_timeout_ms(), whichever comes first, then call again. */
RLOCKDEF rlock_status rlock_step(rlock_lock *lk);
/* Milliseconds until rlock_step() must be called again even without I/O. */
RLOCKDEF uint32_t rlock_next_timeout_ms(const rlock_lock *lk);
/* Abandon the op in progress (connections with unread replies are dropped). */
RLOCKDEF void rlock_cancel(rlock_lock *lk);

/* --- state --- */
RLOCKDEF rlock_state rlock_lock_state(const rlock_lock *lk);
/* Milliseconds of validity left (ttl - elapsed - drift), 0 when none. */
RLOCKDEF long long rlock_validity_ms(const rlock_lock *lk);
RLOCKDEF long long rlock_hold_count(const rlock_lock *lk); /* reentrant holds; 1/0 simple */
/* The token (simple) or owner id (reentrant), NUL-terminated. */
RLOCKDEF const char *rlock_lock_token(const rlock_lock *lk);
/* Votes (nodes that agreed) in the last round. */
RLOCKDEF size_t rlock_last_votes(const rlock_lock *lk);

/* Derive an auxiliary key (fence counter, release channel) that hashes to
 * the same Redis Cluster slot as key: key + suffix when key has a hash tag,
 * "{key}" + suffix otherwise. Returns its length, or 0 when it does not fit
 * or key contains '}' outside a hash tag (no same-slot name exists). */
RLOCKDEF size_t rlock_aux_key(char *out, size_t cap, const char *key, size_t key_len,
                              const char *suffix);

#ifdef __cplusplus
}
#endif
#endif /* RLOCK_H */
