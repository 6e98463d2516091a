/* main.c - rlock on a bare-metal Cortex-M, talking to Redis over a UART.
 *
 * An Arm MPS2 board (QEMU -M mps2-an386, Cortex-M4) whose UART0 is wired
 * to a Redis server (QEMU: -serial tcp:127.0.0.1:PORT,reconnect=1; on a
 * real board, a serial-to-TCP bridge or a modem). No RTOS, no threads, no heap: one
 * cooperative superloop drives the lock through rlock's non-blocking API
 * next to the other tasks of the firmware, and sleeps (WFI) until the UART
 * has a byte or the next deadline. It takes the lock FW_ROUNDS times, holds
 * it FW_HOLD_MS each time - longer than the lease, FW_TTL_MS - while
 * rlock_renew_poll renews the lease, and releases it.
 *
 * What a port to another MCU replaces (each is a section below):
 *   board_*     clock (a free-running timer), sleep-until-event, the UART
 *   uart_*      the transport: polls the UART's status and data registers
 *   test_random_bytes   A TEST STAND-IN for the MCU's TRNG - replace it
 *   report_*    test instrumentation: semihosting, absent on a real board
 * examples/firmware/README.md explains the configuration, RAM and reconnect.
 */

/* The configuration this example is built with (also in the README): one
 * node, simple locks with fencing, waiting by backoff, keys up to 64 bytes;
 * every feature it does not use compiled out (RLOCK_SMALLEST less fencing,
 * the EVAL fallback - a fresh server has no scripts loaded - status names
 * and error texts, which its reports print). That is rlock's compact engine (rlock.h
 * section 6.8c): one request in flight on the connection at a time.
 * RLOCK_NO_POSIX: the clock, sleep and random hooks are set at run time in
 * rlock_config. */
#define RLOCK_NO_POSIX
#define RLOCK_NO_REENTRANT
#define RLOCK_NO_WAITING    /* a waiter backs off: no pub/sub, no RESP3 */
#define RLOCK_NO_FAIR
#define RLOCK_NO_REPLICAS
#define RLOCK_NO_FCALL
#define RLOCK_NO_CLUSTER
#define RLOCK_NO_PRIMITIVES /* no semaphores / read-write locks */
#define RLOCK_MAX_NODES 1
#define RLOCK_MAX_KEY_LEN 64
#define RLOCK_MAX_OWNER_LEN 32
#define RLOCK_RX_BUF 256
#define RLOCK_ERR_LEN 64
#define RLOCK_WHY_LEN 64
#define RLOCK_IMPLEMENTATION
#include "rlock.h"
#include "board.h"

#include <stdio.h>
#include <string.h>

#ifndef FW_KEY
#define FW_KEY "fw:job"
#endif
#ifndef FW_ROUNDS
#define FW_ROUNDS 4
#endif
#ifndef FW_TTL_MS
#define FW_TTL_MS 3000      /* lease; rlock_renew_poll renews it every ttl/3 */
#endif
#ifndef FW_HOLD_MS
#define FW_HOLD_MS 4000     /* time in the critical section: longer than one lease */
#endif
#ifndef FW_WAIT_MS
#define FW_WAIT_MS 30000    /* how long one acquire waits for another holder */
#endif
#define FW_PAUSE_MS 200     /* between a release and the next acquire */
#define FW_NODE_TIMEOUT_MS 500

/* ======================================================================== */
/* board: clock and sleep                                                    */
/* ======================================================================== */

/* TIMER0 counts down from 2^32-1 at PCLK (25 MHz) and wraps every 171 s.
 * The clock adds up the ticks since its last call; it needs a call at least
 * once per wrap, which a superloop that reads it every pass gives. */
static uint64_t board_ticks;
static uint32_t board_last;

static void board_clock_init(void) {
    BOARD_TIMER0->ctrl = 0;
    BOARD_TIMER0->reload = 0xFFFFFFFFu;
    BOARD_TIMER0->value = 0xFFFFFFFFu;
    BOARD_TIMER0->ctrl = TIMER_CTRL_EN;
    board_last = BOARD_TIMER0->value;
}

static uint64_t board_now_ms(void *user) {
    uint32_t v = BOARD_TIMER0->value;
    (void)user;
    board_ticks += (uint32_t)(board_last - v); /* a down counter: wrap-safe */
    board_last = v;
    return board_ticks / (BOARD_PCLK_HZ / 1000u);
}

/* Sleep until UART0 receives a byte or ms pass. Interrupts stay masked
 * (PRIMASK, set once at start): no handler ever runs, but a pending
 * interrupt still ends WFI. The flags are cleared before the last look at
 * the UART, so a byte that arrives after that look wakes WFI at once. */
static void board_wait(uint32_t ms) {
    BOARD_UART0->intstatus = UART_INT_RX;
    BOARD_TIMER1->ctrl = 0;
    BOARD_TIMER1->intclear = 1;
    NVIC_ICPR0 = (1u << BOARD_IRQ_UART0_RX) | (1u << BOARD_IRQ_TIMER1);
    if (ms == 0 || (BOARD_UART0->state & UART_STATE_RXFULL)) return;
    if (ms > 60000u) ms = 60000u; /* keeps ms * 25000 within 32 bits */
    BOARD_TIMER1->reload = ms * (BOARD_PCLK_HZ / 1000u);
    BOARD_TIMER1->value = ms * (BOARD_PCLK_HZ / 1000u);
    BOARD_TIMER1->ctrl = TIMER_CTRL_EN | TIMER_CTRL_IRQ;
    __asm__ volatile("wfi" ::: "memory");
    BOARD_TIMER1->ctrl = 0;
}


static void board_init(void) {
    __asm__ volatile("cpsid i" ::: "memory"); /* PRIMASK: interrupts only wake WFI */
    board_clock_init();
    BOARD_UART0->ctrl = 0;
    BOARD_UART0->bauddiv = BOARD_PCLK_HZ / 115200u;
    BOARD_UART0->ctrl = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXIRQ;
    /* Empty the receive buffer. Under QEMU this read also matters: its UART
     * model tells the socket behind it that it takes bytes again only when
     * DATA is read, not when RX is enabled - without it nothing arrives
     * until some unrelated event wakes QEMU's I/O thread. */
    (void)BOARD_UART0->data;
    NVIC_ISER0 = (1u << BOARD_IRQ_UART0_RX) | (1u << BOARD_IRQ_TIMER1);
}

/* ======================================================================== */
/* test stand-in for the TRNG                                                */
/* ======================================================================== */

/* !!! TEST STAND-IN, NOT FOR A PRODUCT !!!
 * rlock's lock tokens and instance id come from this hook: they must be
 * unpredictable to anyone else who can reach the Redis server and must
 * never repeat across resets. On a real MCU this reads the hardware TRNG
 * (STM32 RNG, nRF RNG, SAM TRNG, ...) - or a CSPRNG (CTR_DRBG, ChaCha20)
 * seeded from it - and returns non-zero when the TRNG reports an error, so
 * that rlock refuses to lock (RLOCK_E_RANDOM) instead of using a guessable
 * token. Never rand(), a counter, the chip's unique id, or a fixed seed.
 * QEMU's MPS2 has no TRNG: this stand-in reads the HOST's /dev/urandom
 * through semihosting, which exists only under a debugger or QEMU. */
static FILE *test_urandom;
static int test_random_bytes(void *user, unsigned char *buf, size_t n) {
    (void)user;
    if (!test_urandom) test_urandom = fopen("/dev/urandom", "rb");
    return test_urandom && fread(buf, 1, n, test_urandom) == n ? 0 : -1;
}

/* ======================================================================== */
/* uart: the rlock transport                                                 */
/* ======================================================================== */

/* The UART is a byte pipe with no connect, no close and no end of stream:
 * what "connected" means is the transport's to define. Here the link is
 * "connected" once a handshake has gone through the whole path (UART, the
 * bridge, Redis and back): connect() sends ECHO with a fresh random nonce
 * and reads, discarding everything, until that exact reply arrives. So
 *   - with the socket behind the UART down (QEMU's tcp chardev drops what
 *     the UART sends while it has no connection), connect() stays in
 *     progress and rlock fails the request at its node timeout;
 *   - after close(), the late replies of abandoned requests still in the
 *     pipe are read and thrown away before anything new is trusted: Redis
 *     answers in order, so whatever precedes the nonce's echo is stale.
 * close() cannot hang up a wire: it only marks the link as needing that
 * handshake again. See README.md, "Reconnect", for what that leaves out. */
enum { LINK_DOWN, LINK_SYNC, LINK_UP };

typedef struct uart_link {
    board_uart *uart;
    int state;
    unsigned char hs[96];      /* the handshake: CLIENT SETNAME rlock-fw, ECHO <nonce> */
    size_t hs_len, hs_off;
    char expect[24];           /* its reply: $16\r\n<nonce>\r\n */
    size_t expect_len, matched;
    size_t owed;               /* bytes rlock handed to send() that the UART has not taken yet */
    unsigned long syncs;       /* handshakes completed */
    unsigned long abandoned;   /* close() with a command half on the wire (README: Reconnect) */
    const char *err;
} uart_link;

static int uart_connect(void *ctx) {
    uart_link *l = (uart_link *)ctx;
    int budget = 256; /* bytes read per call: the superloop's other tasks keep running */
    if (l->state == LINK_UP) return 1;
    if (l->state == LINK_DOWN) {
        /* CLIENT SETNAME first: the connection shows as rlock-fw in CLIENT
         * LIST, for the operator (and for the test, which kills it). */
        static const char head[] = "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$8\r\nrlock-fw\r\n"
                                   "*2\r\n$4\r\nECHO\r\n$16\r\n";
        static const char hex[] = "0123456789abcdef";
        unsigned char r[8];
        char nonce[16];
        int i;
        if (test_random_bytes(NULL, r, sizeof r) != 0) {
            l->err = "random source failed";
            return RLOCK_IO_ERROR;
        }
        for (i = 0; i < 8; i++) {
            nonce[2 * i] = hex[r[i] >> 4];
            nonce[2 * i + 1] = hex[r[i] & 15];
        }
        memcpy(l->hs, head, sizeof head - 1);
        memcpy(l->hs + sizeof head - 1, nonce, 16);
        memcpy(l->hs + sizeof head - 1 + 16, "\r\n", 2);
        l->hs_len = sizeof head - 1 + 18;
        l->hs_off = 0;
        memcpy(l->expect, "$16\r\n", 5);
        memcpy(l->expect + 5, nonce, 16);
        memcpy(l->expect + 21, "\r\n", 2);
        l->expect_len = 23;
        l->matched = 0;
        l->state = LINK_SYNC;
    }
    while (l->hs_off < l->hs_len && !(l->uart->state & UART_STATE_TXFULL))
        l->uart->data = l->hs[l->hs_off++];
    while (budget-- > 0 && (l->uart->state & UART_STATE_RXFULL)) {
        char c = (char)l->uart->data;
        /* '$' occurs only at the start of the pattern, so on a mismatch
         * the byte can only begin a new match. */
        if (c == l->expect[l->matched]) l->matched++;
        else l->matched = c == l->expect[0] ? 1 : 0;
        if (l->matched == l->expect_len) {
            l->state = LINK_UP;
            l->syncs++;
            return 1;
        }
    }
    return RLOCK_IO_WOULD_BLOCK;
}

/* As many bytes as the UART takes now; never waits for it. */
static long uart_send(void *ctx, const unsigned char *buf, size_t len) {
    uart_link *l = (uart_link *)ctx;
    size_t i = 0;
    if (l->state != LINK_UP) {
        l->err = "send on a link that is not up";
        return RLOCK_IO_ERROR;
    }
    while (i < len && !(l->uart->state & UART_STATE_TXFULL)) l->uart->data = buf[i++];
    l->owed = len - i; /* rlock always offers everything it has queued */
    return (long)i;
}

/* Whatever the UART has received; 0 (would block) when nothing. A UART
 * cannot see the far end hang up, so this never returns RLOCK_IO_CLOSED:
 * a dead link shows up as a request timing out. */
static long uart_recv(void *ctx, unsigned char *buf, size_t len) {
    uart_link *l = (uart_link *)ctx;
    size_t i = 0;
    if (l->state != LINK_UP) {
        l->err = "recv on a link that is not up";
        return RLOCK_IO_ERROR;
    }
    while (i < len && (l->uart->state & UART_STATE_RXFULL)) buf[i++] = (unsigned char)l->uart->data;
    return (long)i;
}

static void uart_close(void *ctx) {
    uart_link *l = (uart_link *)ctx;
    if (l->owed) l->abandoned++;
    l->owed = 0;
    l->state = LINK_DOWN;
}

static const char *uart_error(void *ctx) {
    const uart_link *l = (const uart_link *)ctx;
    return l->err ? l->err : "";
}

/* Whether the superloop may sleep while rlock says it wants to write: not
 * while rlock has bytes for the UART, but yes once the handshake is out and
 * only its echo is awaited (a received byte wakes the loop). */
static int uart_may_sleep(const uart_link *l, int events) {
    if (!(events & RLOCK_WANT_WRITE)) return 1;
    return l->state == LINK_SYNC && l->hs_off == l->hs_len;
}

static rlock_transport uart_transport(uart_link *l, board_uart *uart) {
    rlock_transport t;
    memset(l, 0, sizeof *l);
    l->uart = uart;
    memset(&t, 0, sizeof t);
    t.ctx = l;
    t.send = uart_send;
    t.recv = uart_recv;
    t.connect = uart_connect;
    t.close = uart_close;
    t.error = uart_error;
    return t; /* no wait/fd hooks: this firmware never calls the blocking API */
}

/* ======================================================================== */
/* report: test instrumentation (semihosting)                                */
/* ======================================================================== */

/* The test (examples/firmware/run.sh) reads two things: status lines on
 * stdout, and enter/leave records appended to cs.log in QEMU's working
 * directory - the same file the host's `rlock` critical sections append
 * to, so the file's order is the real order of both sides' critical
 * sections. One write per record; the host file is opened O_APPEND. */
static FILE *report_log;

static int report_record(const char *fmt, long long a, long long b, long long c) {
    char line[96];
    int n = snprintf(line, sizeof line, fmt, a, b, c);
    if (!report_log) report_log = fopen("cs.log", "a");
    if (!report_log || n <= 0 || (size_t)n >= sizeof line) return -1;
    if (fwrite(line, 1, (size_t)n, report_log) != (size_t)n || fflush(report_log) != 0) return -1;
    return 0;
}

/* ======================================================================== */
/* the lock task                                                             */
/* ======================================================================== */

enum { TASK_PAUSE, TASK_ACQUIRING, TASK_HOLDING, TASK_RELEASING, TASK_DONE };

typedef struct lock_task {
    rlock_lock *lk;
    rlock_node *node;     /* for its error text */
    int phase;
    int round;            /* 1..FW_ROUNDS */
    uint64_t until;       /* PAUSE: next acquire; HOLDING: end of the critical section */
    uint32_t renew_next;  /* HOLDING: rlock_renew_poll wants a call within this */
    int said_waiting;
    unsigned renewals;    /* this hold */
    unsigned long renewals_total;
    int failed;
} lock_task;

static void task_fail(lock_task *t, const char *what, rlock_status st) {
    printf("fw: round %d: %s: %s (%s)\n", t->round, what, rlock_status_str(st),
           rlock_node_error(t->node));
    fflush(stdout);
    t->failed = 1;
    t->phase = TASK_DONE;
}

/* One pass of the lock task: never blocks, returns at once. */
static void lock_task_step(lock_task *t, uint64_t now) {
    rlock_status st;
    switch (t->phase) {
    case TASK_PAUSE:
        if (now < t->until) return;
        t->round++;
        t->said_waiting = 0;
        st = rlock_acquire_begin(t->lk, FW_TTL_MS, FW_WAIT_MS);
        if (st != RLOCK_WOULD_BLOCK && st != RLOCK_OK) { task_fail(t, "acquire_begin", st); return; }
        t->phase = TASK_ACQUIRING;
        /* fall through */
    case TASK_ACQUIRING:
        st = rlock_step(t->lk);
        if (st == RLOCK_WOULD_BLOCK) {
            if (!t->said_waiting && rlock_acquire_waiting(t->lk)) {
                /* An attempt did not get it; rlock waits, then tries again.
                 * The node answered (refused) or failed (why). */
                rlock_status why = rlock_node_status(t->node);
                t->said_waiting = 1;
                printf("fw: waiting round %d: %s\n", t->round,
                       why == RLOCK_OK ? "refused, held by another owner" : rlock_status_str(why));
                fflush(stdout);
            }
            return;
        }
        if (st != RLOCK_OK) { task_fail(t, "acquire", st); return; }
        if (report_record("enter fw %lld round=%lld\n", rlock_fence_token(t->lk), t->round, 0) != 0) {
            task_fail(t, "cs.log", RLOCK_OK);
            return;
        }
        t->phase = TASK_HOLDING;
        t->until = now + FW_HOLD_MS;
        t->renewals = 0;
        t->renew_next = 0;
        return;
    case TASK_HOLDING:
        st = rlock_renew_poll(t->lk, &t->renew_next);
        if (st == RLOCK_OK && rlock_renew_outcome(t->lk) == RLOCK_RENEW_RENEWED) t->renewals++;
        if (st == RLOCK_LOST) { task_fail(t, "renew", st); return; }
        /* Any other error is a renewal that failed; rlock_renew_poll retries
         * it sooner, until validity runs out (then RLOCK_LOST). */
        if (st == RLOCK_WOULD_BLOCK || now < t->until) return;
        /* The work is done and no renewal is in flight: leave, then release.
         * validity > 0: the lease covered the whole critical section. */
        if (report_record("leave fw %lld renewals=%lld validity=%lld\n", rlock_fence_token(t->lk),
                          t->renewals, rlock_validity_ms(t->lk)) != 0) {
            task_fail(t, "cs.log", RLOCK_OK);
            return;
        }
        t->renewals_total += t->renewals;
        st = rlock_release_begin(t->lk);
        if (st != RLOCK_WOULD_BLOCK && st != RLOCK_OK) { task_fail(t, "release_begin", st); return; }
        t->phase = TASK_RELEASING;
        /* fall through */
    case TASK_RELEASING:
        st = rlock_step(t->lk);
        if (st == RLOCK_WOULD_BLOCK) return;
        if (st != RLOCK_OK) { task_fail(t, "release", st); return; }
        t->phase = t->round == FW_ROUNDS ? TASK_DONE : TASK_PAUSE;
        t->until = now + FW_PAUSE_MS;
        return;
    default:
        return;
    }
}

/* When the lock task next needs the CPU without I/O, in ms from now. */
static uint32_t lock_task_due(const lock_task *t, uint64_t now) {
    uint64_t left;
    switch (t->phase) {
    case TASK_PAUSE:
    case TASK_HOLDING:
        left = t->until > now ? t->until - now : 0;
        /* Holding: the renewal's time, or all that is left once the work is
         * done but a renewal is still in flight (release waits for it). */
        if (t->phase == TASK_HOLDING && (left == 0 || t->renew_next < left)) left = t->renew_next;
        return (uint32_t)left;
    default:
        return UINT32_MAX; /* an operation runs: rlock_client_interest says when */
    }
}

/* ======================================================================== */
/* the superloop                                                             */
/* ======================================================================== */

static uart_link link0;
static rlock_node node0;
static rlock_client client0;
static rlock_lock lock0;

int main(void) {
    rlock_config cfg;
    rlock_transport tr;
    lock_task task;
    rlock_status st;
    unsigned long passes = 0, sleeps = 0;

    board_init();
    printf("fw: sizeof rlock_node %u, rlock_client %u, rlock_lock %u, uart_link %u\n", (unsigned)sizeof(rlock_node),
           (unsigned)sizeof(rlock_client), (unsigned)sizeof(rlock_lock), (unsigned)sizeof(uart_link));

    rlock_config_init(&cfg);
    cfg.now_ms = board_now_ms;
    /* no cfg.sleep_ms: only a blocking rlock_acquire with a wait needs it */
    cfg.random_bytes = test_random_bytes; /* TEST STAND-IN: see above */
    cfg.fencing = 1;
    cfg.node_timeout_ms = FW_NODE_TIMEOUT_MS;
    tr = uart_transport(&link0, BOARD_UART0);
    if ((st = rlock_node_init(&node0, &tr)) != RLOCK_OK ||
        (st = rlock_client_init(&client0, &node0, 1, &cfg)) != RLOCK_OK ||
        (st = rlock_lock_init(&lock0, &client0, FW_KEY, strlen(FW_KEY), RLOCK_KIND_SIMPLE)) != RLOCK_OK) {
        printf("fw: init: %s %s %s\n", rlock_status_str(st), rlock_client_error(&client0), rlock_lock_error(&lock0));
        return 1;
    }

    memset(&task, 0, sizeof task);
    task.lk = &lock0;
    task.node = &node0;
    task.phase = TASK_PAUSE;

    for (;;) {
        uint64_t now = board_now_ms(NULL);
        rlock_interest in[1];
        uint32_t wait_ms;
        size_t n;

        lock_task_step(&task, now);
        /* ... the firmware's other tasks run here, each a quick step ... */
        passes++;
        if (task.phase == TASK_DONE) break;

        /* Sleep until the UART has a byte or the earliest deadline - unless
         * rlock has bytes to push (the UART takes one at a time). */
        n = rlock_client_interest(&client0, in, 1, &wait_ms);
        if (n > 0 && !uart_may_sleep(&link0, in[0].events)) continue;
        now = board_now_ms(NULL);
        if (lock_task_due(&task, now) < wait_ms) wait_ms = lock_task_due(&task, now);
        if (wait_ms > 0) {
            board_wait(wait_ms);
            sleeps++;
        }
    }

    printf("fw: done rounds=%d renewals=%lu syncs=%lu abandoned=%lu passes=%lu sleeps=%lu %s\n", task.round,
           task.renewals_total, link0.syncs, link0.abandoned, passes, sleeps, task.failed ? "FAILED" : "ok");
    fflush(stdout);
    return task.failed ? 1 : 0;
}
