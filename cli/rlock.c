/* rlock - run a command while holding a Redis lock: a distributed flock(1).
 *
 *   rlock [OPTIONS] RESOURCE COMMAND [ARG...]        (rlock --help for all)
 *   rlock [OPTIONS] RESOURCE -c 'SHELL COMMAND'
 *   rlock status [OPTIONS] RESOURCE;  rlock unlock --force [OPTIONS] RESOURCE
 *
 * One process, no threads. rlock checks every argument before it opens a
 * connection, connects (a quorum of the servers must answer), acquires
 * RESOURCE - waiting for release notices on its one connection per server (RESP3)
 * - then forks a guard process that forks and execs COMMAND (the guard kills
 * COMMAND's whole tree if rlock dies; see guard_main). While COMMAND runs,
 * rlock sits in one poll() over the lock's sockets, the guard's reports,
 * (with --sentinel) one Sentinel's +switch-master notices, and a self-pipe
 * that its signal handlers write to: it renews the lease with rlock_renew_poll(), passes signals on,
 * reaps COMMAND and watches the lease. When the lease cannot be kept, COMMAND
 * is stopped before the lease runs out, or as soon as rlock finds it already
 * gone (rlock itself was paused). Then rlock releases the lock and exits with
 * COMMAND's status, or with one of the codes listed in help_text below.
 *
 * It uses rlock.h's public API only (and the POSIX adapter's public calls).
 *
 * Build: cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I. cli/rlock.c -o build/rlock
 */
#define RLOCK_IMPLEMENTATION
#define RLOCK_NO_THREAD_ID        /* one thread, simple locks: no libpthread */
#ifdef RLOCK_CLI_TLS /* the Makefile sets it when OpenSSL is there: rediss:// and --tls-* */
#include "adapters/rlock_tls.h"   /* first: it sets the POSIX feature macros */
#else
#include "adapters/rlock_posix.h" /* first: it sets the POSIX feature macros */
#endif

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/wait.h>
#include <dirent.h>
#include <netdb.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* Exit statuses of rlock itself (sysexits.h values, defined here because
 * sysexits.h is not POSIX). COMMAND's own status passes through unchanged. */
enum {
    RC_CONFLICT = 1,     /* default of -E: the lock is held by someone else */
    RC_USAGE = 64,       /* EX_USAGE: bad arguments; nothing was sent */
    RC_DATAERR = 65,     /* EX_DATAERR: RESOURCE holds a key that is not an rlock lock */
    RC_UNAVAILABLE = 69, /* EX_UNAVAILABLE: no quorum of servers reachable */
    RC_SOFTWARE = 70,    /* EX_SOFTWARE: internal error */
    RC_OSERR = 71,       /* EX_OSERR: fork, pipe, random source */
    RC_LOST = 75,        /* EX_TEMPFAIL: the lock was lost while COMMAND ran */
    RC_NOPERM = 77,      /* EX_NOPERM: AUTH refused */
    RC_CANNOT_EXEC = 126,
    RC_NOT_FOUND = 127
};

#define MAX_SERVERS RLOCK_MAX_NODES
#define MAX_USER 128
#define MAX_PASS 512   /* AUTH travels with the first command in RLOCK_TX_BUF */
#define MAX_ADDR 1024  /* longest --server argument */
#define MIN_TTL_MS 100 /* shorter leases cannot be renewed reliably */
#define UNAVAILABLE_GIVE_UP_MS 10000 /* waiting: give up when no quorum for this long */

static const char *const help_text[] = {
    "Usage: rlock [OPTIONS] RESOURCE COMMAND [ARG...]",
    "       rlock [OPTIONS] RESOURCE -c 'SHELL COMMAND'",
    "       rlock status [OPTIONS] RESOURCE",
    "       rlock unlock --force [OPTIONS] RESOURCE",
    "       rlock check [OPTIONS] [SERVER...]   (is Redis fit for locks? rlock check --help)",
    "       rlock check --load [SERVER...]      (load rlock's Lua scripts: builds without",
    "                                            the EVAL fallback need it after each restart)",
    "Run COMMAND while holding the Redis lock RESOURCE, so that one such COMMAND",
    "runs at a time across every machine that uses the same Redis server(s).",
    "rlock waits for the lock, renews its lease while COMMAND runs, and releases",
    "it when COMMAND ends. RESOURCE is the Redis key, as given. Options end at",
    "RESOURCE: the rest is COMMAND and its arguments (or -c and one shell command).",
    "A flock(1) line works as it is: flock -w 10 -x NAME -c 'CMD' -> rlock -w 10",
    "-x NAME -c 'CMD' (the lock is NAME in Redis, not a file).",
    "",
    "Options:",
    "  -S, --server ADDR           a Redis server; repeat for Redlock over independent",
    "                              masters (a majority must grant the lock; one server",
    "                              under two names is refused). ADDR is HOST:PORT,",
    "                              HOST (port 6379), [IPV6]:PORT,",
    "                              redis://[USER[:PASS]@]HOST[:PORT][/DB] or unix:/PATH.",
    "                              Default: $RLOCK_SERVERS (comma-separated), else",
    "                              127.0.0.1:6379. (Changed: the short form was -s.)",
    "                              rediss://... is TLS (see --tls-ca).",
    "      --tls-ca FILE           TLS for every server, verified against these CAs",
    "      --tls-cert FILE, --tls-key FILE   TLS client certificate and its key",
    "      --tls-insecure          TLS without verifying the server (not recommended)",
    "      --sentinel ADDR         find the server through Sentinel (repeatable, up to",
    "                              5; with --master NAME): every (re)connect asks them",
    "                              for the primary NAME and checks its ROLE; while",
    "                              rlock waits and COMMAND runs it follows the",
    "                              Sentinels' +switch-master (renews on the new primary)",
    "      --sentinel-user NAME, --sentinel-password-file FILE   AUTH to the Sentinels",
    "                              (password also from $RLOCK_SENTINEL_PASSWORD)",
    "      --cluster ADDR          a Redis Cluster node, HOST:PORT (repeatable seeds;",
    "                              replicas are fine): the lock goes to the primary of",
    "                              RESOURCE's slot (the map is read from the seeds),",
    "                              follows MOVED/ASK, waits by sharded pub/sub; also",
    "                              for status and unlock; TLS with --tls-* or a",
    "                              rediss:// seed (the nodes' TLS ports, tls-cluster)",
    "      --replicas N            the grant counts only once N replicas acknowledged",
    "                              it (WAIT, in the acquire's round trip); fewer: it is",
    "                              released again, exit 69. A failover that promotes",
    "                              an acknowledging replica keeps the lock",
    "  -d, --db N                  database number, SELECTed on every server [0]",
    "  -x, --exclusive             exclusive: one holder (the default), taken on the",
    "                              read-write lock that -s shares: give -x to the",
    "                              writers of a RESOURCE that has -s readers",
    "  -s, --shared                shared (read) lock: many -s holders at once, none",
    "                              while an -x holder has it; a waiting -x keeps new",
    "                              -s holders out, and -s holders that waited go",
    "                              before the next -x when one leaves",
    "      --limit N               at most N holders at once (a semaphore of N",
    "                              permits, each with its own lease)",
    "  -c, --command CMD           run CMD through sh -c (instead of COMMAND [ARG...])",
    "  -t, --ttl TIME              lease, renewed every TIME/3 while COMMAND runs [30]",
    "  -w, --wait, --timeout TIME  give up after TIME if the lock stays held",
    "                              [forever]; -w 0 is -n",
    "  -n, --nonblock, --nb        give up at once if the lock is held",
    "  -E, --conflict-exit-code N  exit status when the lock was not acquired [1];",
    "                              COMMAND never runs then, whatever N (also 0)",
    "  -k, --kill-after TIME       grace between SIGTERM and SIGKILL when COMMAND must",
    "                              be stopped because the lease is lost [5]",
    "  -o, --close                 accepted for flock(1) lines; nothing to close",
    "      --fence                 also take a fencing token, passed as RLOCK_FENCE",
    "      --fair                  a fair lock: waiters get it in the order they queued",
    "                              (every rlock on RESOURCE must agree on --fair)",
    "      --user NAME             ACL user name for AUTH",
    "      --password-file FILE    AUTH password: the first line of FILE",
    "      --connect-timeout TIME  bound on each connection attempt [1]",
    "      --command-timeout TIME  bound on each round trip [ttl/10, within 50..250 ms]",
    "  -v, --verbose               say on stderr when it waits, acquires, renews, releases",
    "  -h, --help                  show this help and exit",
    "  -V, --version               show the version and exit",
    "TIME is seconds as in flock(1) and timeout(1), fractions allowed (10, 0.5), or",
    "a number with a unit: 500ms, 30s, 10m, 2h. (Changed: a bare number used to be",
    "milliseconds; -w 10 now waits 10 seconds.)",
    "flock's -u and its file-descriptor form (flock N) have no distributed meaning",
    "(there is no descriptor): rlock says so and exits 64.",
    "",
    "rlock status RESOURCE says who holds RESOURCE (kind, owner/token prefix, TTL,",
    "holds, holders, waiters) without changing it: exit 0 free, 1 held. rlock unlock",
    "--force RESOURCE deletes it whoever holds it and wakes its waiters (operators",
    "only: the holder is not told until its next renewal): exit 0 removed, 1 it was",
    "not held.",
    "",
    "Password: --password-file, else $RLOCK_PASSWORD, else $REDISCLI_AUTH. A password",
    "in a redis:// URL is used for that server, but other users can read it with ps.",
    "",
    "COMMAND runs with RLOCK_RESOURCE, RLOCK_TOKEN (this holder's random token) and,",
    "with --fence, RLOCK_FENCE (a number that grows with every grant; pass it to the",
    "resource you protect so it can reject stale writers) in its environment.",
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to COMMAND",
    "(to its process group, unless rlock runs in the foreground of a terminal); the",
    "lock is released when COMMAND has ended and (outside a terminal's foreground)",
    "what it left running in its process group (job &) too, as flock(1)'s lock",
    "stays with a child holding its descriptor. If the lease cannot be renewed,",
    "rlock stops COMMAND (SIGTERM, then SIGKILL after --kill-after) before the lease",
    "runs out, or at once if it finds the lease already gone (rlock was paused), and",
    "exits 75.",
    "COMMAND runs under a small guard process; if rlock itself is killed (kill -9,",
    "OOM), the guard kills COMMAND's whole process tree at once: on Linux every",
    "process COMMAND started, also one that left its process group (setsid); on",
    "other systems COMMAND's process group (in a terminal's foreground: COMMAND",
    "alone). So COMMAND never keeps running without the lock. The guard also reaps",
    "orphans, so zombies never delay rlock. On Linux it is named rlock-guard: kill",
    "-9 rlock by its PID or exact name (killall, pkill -x), not by a pattern that",
    "matches rlock-guard too (pkill -9 rlock): what COMMAND started would run on.",
    "SIGTERM by any pattern is safe (the guard ignores it; rlock passes it on).",
    "A conflict is silent without -v.",
    "",
    "Exit status:",
    "  COMMAND's status  COMMAND ran; 128+N if signal N killed it",
    "  1 (-E N)          the lock is held by someone else (-n, or -w ran out)",
    "  64                usage error (nothing was sent to Redis), or two servers",
    "                    given are one server (found by address, or by run_id)",
    "  65                RESOURCE exists in Redis but is not an rlock lock",
    "                    (or a lock of another kind: plain, -s/-x, --limit)",
    "  69                a quorum of the servers could not be reached",
    "  70, 71            internal error (or COMMAND's guard was killed),",
    "                    operating-system error (fork, pipe)",
    "  75                the lock was lost while COMMAND ran; COMMAND was stopped",
    "  77                the server refused AUTH (NOAUTH, WRONGPASS, NOPERM); with",
    "                    --sentinel also a Sentinel or the primary it names",
    "  126, 127          COMMAND could not be executed, was not found",
    "  128+N             signal N arrived while rlock waited for the lock",
    "  status, unlock    0 free / removed, 1 held / was not held; errors as above",
    "",
    "Examples:",
    "  # cron: at most one report at a time; skip this run if one is still going",
    "  */5 * * * *  rlock -n -S redis1:6379 cron:report /usr/local/bin/report",
    "  # deploy: wait up to 10 minutes for other deploys, over 3 Redis masters",
    "  rlock -w 10m -S r1:6379 -S r2:6379 -S r3:6379 deploy:web ./deploy.sh",
    "  # at most 4 encoders at once, each waiting up to 30 s for a slot",
    "  rlock --limit 4 -w 30 jobs:encode -c 'ffmpeg -i in.mp4 out.webm'",
    NULL
};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct server {
    int is_unix;
    char host[256];        /* TCP: a name or address (IPv6 without brackets) */
    int port;
    char path[108];        /* unix socket path */
    char user[MAX_USER + 1];
    char pass[MAX_PASS + 1];
    int has_user, has_pass; /* given in a redis:// URL */
    int db, has_db;         /* redis://HOST/DB */
    int tls;               /* rediss:// */
    char label[300];       /* for messages; never holds credentials */
} server;

enum { MODE_RUN = 0, MODE_STATUS, MODE_UNLOCK };

typedef struct options {
    server servers[MAX_SERVERS];
    size_t n_servers;
    long long ttl_ms, wait_ms, kill_after_ms, connect_timeout_ms, command_timeout_ms;
    int wait_set, nonblock, conflict_rc, fence, fair, verbose;
    int mode;                       /* MODE_*: rlock status / rlock unlock --force */
    int shared, exclusive, force;   /* -s, -x, --force */
    long long limit, db;            /* --limit N (0: none), --db N */
    long long replicas;             /* --replicas N: WAIT N after the acquire (0: none) */
    int db_set;
    char *shell_cmd;                /* -c CMD */
    char *sh_argv[4];               /* sh -c CMD */
    const char *tls_ca, *tls_cert, *tls_key; /* --tls-*: TLS for every server */
    int tls_insecure;
    const char *sentinel[5], *master;         /* --sentinel (HOST:PORT), --master */
    size_t n_sentinels;
    const char *user;               /* --user */
    const char *password_file;
    char password[MAX_PASS + 1];    /* from the file or the environment */
    int has_password;
    const char *sentinel_user, *sentinel_password_file; /* --sentinel-user, --sentinel-password-file */
    char sentinel_password[MAX_PASS + 1];               /* from the file or $RLOCK_SENTINEL_PASSWORD */
    int has_sentinel_password;
    const char *resource;
    size_t resource_len;
    char **command;
} options;

/* Everything rlock owns. One process, one lock: static storage. */
static struct {
    options o;
    rlock_posix_conn pc[MAX_SERVERS];
#ifdef RLOCK_CLI_TLS
    rlock_tls_conn tc[MAX_SERVERS];  /* the same over TLS */
#endif
    server sentinels[5];
    rlock_posix_sentinel sn;
    rlock_posix_sentinel_watch sw; /* --sentinel: +switch-master, while waiting and holding */
    int watching;          /* sw is in use */
    int switched;          /* sw marked the connection: renew on the new primary now */
    rlock_node node[MAX_SERVERS];
    rlock_client cl;
    rlock_lock lk;
    int sigfd[2];          /* self-pipe: handlers write signal numbers */
    struct sigaction old_pipe;
    sigset_t orig_mask;
    int stop_sig;          /* a terminating signal arrived before COMMAND started */
    pid_t child;           /* COMMAND, 0 when none */
    pid_t guard;           /* rlock's child, COMMAND's parent (see start_command) */
    int life_fd;           /* write end of the guard's lifeline; -1 when none */
    int stat_fd;           /* the guard's reports; -1 when none */
    pid_t target;          /* where signals for COMMAND go: -pgid or pid */
    int own_group;         /* COMMAND runs in a process group of its own */
    int group_wait;        /* COMMAND ended; what it left in its group still runs */
    char *args;            /* rlock's argument strings, one block (Linux): the guard's title */
    size_t args_len;
    int check;             /* rlock check runs: usage errors name it */
} g;

/* --cluster: the seeds, and the cluster's own connections (one per node). */
static struct {
    server seeds[RLOCK_CLUSTER_MAX_PRIMARIES];
    const char *host[RLOCK_CLUSTER_MAX_PRIMARIES];
    int port[RLOCK_CLUSTER_MAX_PRIMARIES];
    size_t n;                       /* seeds given; 0: not a cluster */
    int tls;                        /* every node over TLS (--tls-* or a rediss:// seed) */
    rlock_posix_conn pc[RLOCK_CLUSTER_MAX_PRIMARIES];
#ifdef RLOCK_CLI_TLS
    rlock_tls_conn tc[RLOCK_CLUSTER_MAX_PRIMARIES];
#endif
    rlock_cluster cl;
} gc;

static const int forwarded_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define N_FORWARDED (sizeof forwarded_sigs / sizeof forwarded_sigs[0])
static int installed[N_FORWARDED]; /* 0: it was ignored when rlock started; left so */

static const char *sig_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

static void say(const char *fmt, ...) {
    va_list ap;
    fputs("rlock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define VERBOSE(args) do { if (g.o.verbose) say args; } while (0)

#if defined(__GNUC__) || defined(__clang__)
#define CLI_NORETURN __attribute__((noreturn))
#else
#define CLI_NORETURN
#endif

static CLI_NORETURN void usage_error(const char *fmt, ...) {
    va_list ap;
    fputs(g.check ? "rlock check: " : "rlock: ", stderr); /* (check shares the value parsers) */
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(g.check ? "\nUsage: rlock check [OPTIONS] [SERVER...]\nTry 'rlock check --help' for more information.\n"
                  : "\nUsage: rlock [OPTIONS] RESOURCE COMMAND [ARG...]\nTry 'rlock --help' for more information.\n",
          stderr);
    exit(RC_USAGE);
}

/* An argument as it may appear in a message: a URL with credentials is not
 * repeated (it may hold a password). */
static const char *shown(const char *arg) {
    return strchr(arg, '@') ? "(a redis:// URL with credentials)" : arg;
}

/* As flock(1) and timeout(1): "10", "0.5" are seconds; "1500ms", "30s",
 * "10m", "2h" as written. -> 0..RLOCK_MAX_TTL_MS milliseconds (rounded).
 * 0 ok, -1 anything else (sign, spaces, unknown unit, too large, a nonzero
 * value under 1 ms). */
static int parse_duration(const char *s, long long *out) {
    long long whole = 0, frac = 0, fdiv = 1, mul, v;
    int nonzero = 0; /* a fraction digit other than 0, also past the six kept */
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return -1;
    for (; isdigit((unsigned char)*p); p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > RLOCK_MAX_TTL_MS) return -1; /* checked every digit: no overflow */
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p)) return -1;
        for (; isdigit((unsigned char)*p); p++) {
            nonzero |= *p != '0';
            if (fdiv < 1000000) { frac = frac * 10 + (*p - '0'); fdiv *= 10; } /* finer is noise */
        }
    }
    if (*p == '\0' || strcmp(p, "s") == 0) mul = 1000;
    else if (strcmp(p, "ms") == 0) mul = 1;
    else if (strcmp(p, "m") == 0) mul = 60000;
    else if (strcmp(p, "h") == 0) mul = 3600000;
    else return -1;
    if (whole > RLOCK_MAX_TTL_MS / mul) return -1;
    v = whole * mul + (frac * mul + fdiv / 2) / fdiv;
    if (v > RLOCK_MAX_TTL_MS || (v == 0 && (whole || nonzero))) return -1;
    *out = v;
    return 0;
}

/* A duration option's value; 0 only where allow_zero (-w 0). */
static long long duration_arg(const char *opt, const char *val, int allow_zero) {
    long long v;
    if (parse_duration(val, &v) != 0 || (v == 0 && !allow_zero))
        usage_error("%s: '%.64s' is not a duration of 1 ms to 24 days (seconds as in flock, "
                    "fractions allowed, or with a unit: 500ms, 30s, 10m, 2h)", opt, val);
    return v;
}

/* A whole number lo..hi, or a usage error naming the option. */
static long long number_arg(const char *opt, const char *val, long long lo, long long hi) {
    long long v = 0;
    const char *p = val;
    if (!isdigit((unsigned char)*p)) usage_error("%s: '%.64s' is not a number %lld..%lld", opt, val, lo, hi);
    for (; isdigit((unsigned char)*p); p++) {
        v = v * 10 + (*p - '0');
        if (v > hi) usage_error("%s: '%.64s' is not a number %lld..%lld", opt, val, lo, hi);
    }
    if (*p || v < lo) usage_error("%s: '%.64s' is not a number %lld..%lld", opt, val, lo, hi);
    return v;
}

/* Decode %XX escapes of s[0..n) into out (cap bytes with the NUL).
 * 0 ok, -1 bad escape, decoded NUL, or too long. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap) {
    size_t i, o = 0;
    for (i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= n) return -1;
            hi = isxdigit((unsigned char)s[i + 1]) ? s[i + 1] : -1;
            lo = isxdigit((unsigned char)s[i + 2]) ? s[i + 2] : -1;
            if (hi < 0 || lo < 0) return -1;
            hi = isdigit(hi) ? hi - '0' : tolower(hi) - 'a' + 10;
            lo = isdigit(lo) ? lo - '0' : tolower(lo) - 'a' + 10;
            c = hi * 16 + lo;
            if (c == 0) return -1;
            i += 2;
        }
        if (o + 1 >= cap) return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

/* host[:port] or [v6]:port in b[0..n). NULL ok, else why not. */
static const char *parse_hostport(const char *b, size_t n, server *sv) {
    const char *host = b, *colon = NULL;
    size_t hl, i;
    int v6 = 0;
    if (n == 0) return "missing host";
    if (b[0] == '[') {
        const char *close = memchr(b, ']', n);
        if (!close) return "missing ']' after the IPv6 address";
        host = b + 1;
        hl = (size_t)(close - host);
        if (close + 1 < b + n) {
            if (close[1] != ':') return "expected ':PORT' after ']'";
            colon = close + 1;
        }
        for (i = 0; i < hl; i++)
            if (!isxdigit((unsigned char)host[i]) && host[i] != ':' && host[i] != '.')
                return "bad IPv6 address";
        v6 = 1;
    } else {
        for (i = 0; i < n; i++)
            if (b[i] == ':') {
                if (colon) return "put an IPv6 address in brackets, e.g. [::1]:6379";
                colon = b + i;
            }
        hl = colon ? (size_t)(colon - b) : n;
        for (i = 0; i < hl; i++)
            if (!isalnum((unsigned char)host[i]) && host[i] != '.' && host[i] != '-' && host[i] != '_')
                return "bad character in host name";
    }
    if (hl == 0) return "missing host";
    if (hl >= sizeof sv->host) return "host name too long";
    sv->port = 6379;
    if (colon) {
        const char *p = colon + 1, *end = b + n;
        long v = 0;
        if (p == end) return "missing port after ':'";
        if (end - p > 5) return "port must be 1..65535";
        for (; p < end; p++) {
            if (!isdigit((unsigned char)*p)) return "port must be 1..65535";
            v = v * 10 + (*p - '0');
        }
        if (v < 1 || v > 65535) return "port must be 1..65535";
        sv->port = (int)v;
    }
    for (i = 0; i < hl; i++) sv->host[i] = (char)tolower((unsigned char)host[i]);
    sv->host[hl] = '\0';
    snprintf(sv->label, sizeof sv->label, v6 ? "[%s]:%d" : "%s:%d", sv->host, sv->port);
    return NULL;
}

/* The part of redis://[user[:pass]@]host[:port][/0] after the scheme. */
static const char *parse_url(const char *s, server *sv) {
    size_t n = strlen(s), auth_len;
    const char *slash = strchr(s, '/'), *at = NULL, *hp, *p;
    if (strpbrk(s, "?#")) return "query strings and fragments are not supported";
    auth_len = slash ? (size_t)(slash - s) : n;
    for (p = s; p < s + auth_len; p++)
        if (*p == '@') {
            if (at) return "more than one '@' (write '@' in a password as %40)";
            at = p;
        }
    hp = s;
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        size_t ul = colon ? (size_t)(colon - s) : (size_t)(at - s);
        if (pct_decode(s, ul, sv->user, sizeof sv->user) != 0) return "bad or too long user name";
        sv->has_user = ul > 0;
        if (colon) {
            if (colon + 1 == at) return "empty password";
            if (pct_decode(colon + 1, (size_t)(at - colon - 1), sv->pass, sizeof sv->pass) != 0)
                return "bad %-escape in the password, or longer than 512 bytes";
            sv->has_pass = 1;
        }
        hp = at + 1;
    }
    {
        const char *why = parse_hostport(hp, (size_t)(s + auth_len - hp), sv);
        if (why) return why;
    }
    if (slash && slash[1] != '\0') { /* /DB */
        const char *d = slash + 1;
        long v = 0;
        for (; *d; d++) {
            if (!isdigit((unsigned char)*d) || v > 100000) return "the path must be a database number, e.g. /2";
            v = v * 10 + (*d - '0');
        }
        sv->db = (int)v;
        sv->has_db = 1;
    }
    return NULL;
}

static const char *parse_server(const char *s, server *sv) {
    size_t n = strlen(s);
    memset(sv, 0, sizeof *sv);
    if (n == 0) return "empty address";
    if (n > MAX_ADDR) return "address too long";
    if (strncmp(s, "unix:", 5) == 0) {
        const char *p = s + 5;
        if (strncmp(p, "//", 2) == 0) p += 2; /* unix:///path */
        if (*p == '\0') return "empty unix socket path";
        if (strlen(p) >= sizeof sv->path) return "unix socket path longer than 107 bytes";
        sv->is_unix = 1;
        memcpy(sv->path, p, strlen(p) + 1);
        memcpy(sv->label, "unix:", 5);
        memcpy(sv->label + 5, p, strlen(p) + 1);
        return NULL;
    }
    if (strncmp(s, "redis://", 8) == 0) return parse_url(s + 8, sv);
#ifdef RLOCK_CLI_TLS
    if (strncmp(s, "rediss://", 9) == 0) { sv->tls = 1; return parse_url(s + 9, sv); }
#else
    if (strncmp(s, "rediss://", 9) == 0) return "this rlock was built without TLS (OpenSSL)";
#endif
    if (strstr(s, "://")) return "unknown scheme (use HOST:PORT, redis://... or unix:/PATH)";
    return parse_hostport(s, n, sv);
}

static void add_server(options *o, const char *arg, const char *from) {
    server *sv;
    const char *why;
    size_t i;
    if (o->n_servers == MAX_SERVERS) usage_error("%s: at most %d servers", from, MAX_SERVERS);
    sv = &o->servers[o->n_servers];
    if ((why = parse_server(arg, sv)) != NULL) usage_error("%s '%.200s': %s", from, shown(arg), why);
    for (i = 0; i < o->n_servers; i++)
        if (strcmp(o->servers[i].label, sv->label) == 0)
            usage_error("%s: %s is listed twice (it would get two votes)", from, sv->label);
    o->n_servers++;
}

/* Wipe a password given on the command line from argv, so that ps shows it
 * only for the moment before rlock got this far. */
static void scrub_url_password(char *arg) {
    char *at, *colon, *u = strncmp(arg, "redis://", 8) == 0 ? arg + 8 : strncmp(arg, "rediss://", 9) == 0 ? arg + 9 : NULL;
    if (!u || (at = strchr(u, '@')) == NULL) return;
    colon = memchr(u, ':', (size_t)(at - u));
    if (colon) memset(colon + 1, '*', (size_t)(at - colon - 1));
}

static void read_password_file(const char *opt, const char *path, char *password, int *has_password) {
    char buf[MAX_PASS + 3];
    size_t n, len;
    char *nl;
    FILE *f = fopen(path, "r");
    if (!f) usage_error("%s '%.200s': %s", opt, path, strerror(errno));
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    nl = memchr(buf, '\n', n);
    len = nl ? (size_t)(nl - buf) : n;
    if (len > 0 && buf[len - 1] == '\r') len--;
    if (!nl && n == sizeof buf - 1) usage_error("%s: the password is longer than %d bytes", opt, MAX_PASS);
    if (len > MAX_PASS) usage_error("%s: the password is longer than %d bytes", opt, MAX_PASS);
    if (len == 0) usage_error("%s '%.200s': the first line is empty", opt, path);
    if (memchr(buf, '\0', len)) usage_error("%s: the password contains a NUL byte", opt);
    memcpy(password, buf, len);
    password[len] = '\0';
    *has_password = 1;
    memset(buf, 0, sizeof buf);
}

enum { OPT_SERVER = 1, OPT_TTL, OPT_WAIT, OPT_NONBLOCK, OPT_CONFLICT, OPT_KILL_AFTER, OPT_FENCE, OPT_FAIR, OPT_USER,
       OPT_PASSFILE, OPT_CONNECT_TIMEOUT, OPT_COMMAND_TIMEOUT, OPT_VERBOSE, OPT_HELP, OPT_VERSION,
       OPT_TLS_CA, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_INSECURE, OPT_SENTINEL, OPT_MASTER, OPT_CLUSTER,
       OPT_SHARED, OPT_EXCLUSIVE, OPT_LIMIT, OPT_DB, OPT_COMMAND, OPT_UNLOCK, OPT_CLOSE, OPT_FORCE, OPT_REPLICAS,
       OPT_SENTINEL_USER, OPT_SENTINEL_PASSFILE };

static const struct option_spec {
    char short_name;
    const char *long_name;
    int id, has_arg;
} option_specs[] = {
    { 'S', "server", OPT_SERVER, 1 },          { 't', "ttl", OPT_TTL, 1 },
    { 'w', "wait", OPT_WAIT, 1 },              { 0, "timeout", OPT_WAIT, 1 },
    { 'n', "nonblock", OPT_NONBLOCK, 0 },      { 's', "shared", OPT_SHARED, 0 },
    { 'x', "exclusive", OPT_EXCLUSIVE, 0 },    { 0, "limit", OPT_LIMIT, 1 },
    { 'd', "db", OPT_DB, 1 },                  { 'c', "command", OPT_COMMAND, 1 },
    { 'u', "unlock", OPT_UNLOCK, 0 },          { 'o', "close", OPT_CLOSE, 0 },
    { 0, "force", OPT_FORCE, 0 },
    { 0, "nb", OPT_NONBLOCK, 0 },              { 'E', "conflict-exit-code", OPT_CONFLICT, 1 },
    { 'k', "kill-after", OPT_KILL_AFTER, 1 },  { 0, "fence", OPT_FENCE, 0 },
    { 0, "fair", OPT_FAIR, 0 },
    { 0, "user", OPT_USER, 1 },                { 0, "password-file", OPT_PASSFILE, 1 },
    { 0, "connect-timeout", OPT_CONNECT_TIMEOUT, 1 }, { 0, "command-timeout", OPT_COMMAND_TIMEOUT, 1 },
    { 'v', "verbose", OPT_VERBOSE, 0 },        { 'h', "help", OPT_HELP, 0 },
    { 'V', "version", OPT_VERSION, 0 },
    { 0, "tls-ca", OPT_TLS_CA, 1 },            { 0, "tls-cert", OPT_TLS_CERT, 1 },
    { 0, "tls-key", OPT_TLS_KEY, 1 },          { 0, "tls-insecure", OPT_TLS_INSECURE, 0 },
    { 0, "sentinel", OPT_SENTINEL, 1 },        { 0, "master", OPT_MASTER, 1 },
    { 0, "cluster", OPT_CLUSTER, 1 },          { 0, "replicas", OPT_REPLICAS, 1 },
    { 0, "sentinel-user", OPT_SENTINEL_USER, 1 }, { 0, "sentinel-password-file", OPT_SENTINEL_PASSFILE, 1 },
    { 0, NULL, 0, 0 }
};

static void apply_option(options *o, const struct option_spec *sp, char *val, const char *name) {
    if (sp->has_arg && !val) usage_error("%s needs a value", name);
    switch (sp->id) {
    case OPT_SERVER:
        add_server(o, val, name);
        scrub_url_password(val);
        break;
    case OPT_TTL: o->ttl_ms = duration_arg(name, val, 0); break;
    case OPT_WAIT:
        o->wait_ms = duration_arg(name, val, 1);
        if (o->wait_ms == 0) o->nonblock = 1; /* as flock: -w 0 is -n */
        else o->wait_set = 1;
        break;
    case OPT_SHARED: o->shared = 1; break;
    case OPT_EXCLUSIVE: o->exclusive = 1; break;
    case OPT_LIMIT: o->limit = number_arg(name, val, 1, 2147483647LL); break;
    case OPT_DB: o->db = number_arg(name, val, 0, 100000); o->db_set = 1; break;
    case OPT_REPLICAS: o->replicas = number_arg(name, val, 1, 64); break;
    case OPT_COMMAND:
        if (o->shell_cmd) usage_error("%s given twice", name);
        o->shell_cmd = val;
        break;
    case OPT_UNLOCK:
        usage_error("%s: flock -u unlocks a file descriptor's lock; rlock holds no descriptor: its lock "
                    "is released when COMMAND ends (an operator can use 'rlock unlock --force RESOURCE')", name);
        break;
    case OPT_CLOSE: break; /* flock -o closes the lock's fd before COMMAND: rlock has none */
    case OPT_FORCE:
        if (o->mode != MODE_UNLOCK) usage_error("%s is an option of 'rlock unlock'", name);
        o->force = 1;
        break;
    case OPT_NONBLOCK: o->nonblock = 1; break;
    case OPT_CONFLICT: {
        size_t i, n = strlen(val);
        int v = 0;
        if (n == 0 || n > 3) usage_error("%s: '%.64s' is not an exit status 0..255", name, val);
        for (i = 0; i < n; i++) {
            if (!isdigit((unsigned char)val[i])) usage_error("%s: '%.64s' is not an exit status 0..255", name, val);
            v = v * 10 + (val[i] - '0');
        }
        if (v > 255) usage_error("%s: '%.64s' is not an exit status 0..255", name, val);
        o->conflict_rc = v;
        break;
    }
    case OPT_KILL_AFTER: o->kill_after_ms = duration_arg(name, val, 0); break;
    case OPT_FENCE: o->fence = 1; break;
    case OPT_FAIR: o->fair = 1; break;
    case OPT_USER:
        if (val[0] == '\0' || strlen(val) > MAX_USER) usage_error("%s: the user name must be 1..%d bytes", name, MAX_USER);
        o->user = val;
        break;
    case OPT_PASSFILE: o->password_file = val; break;
    case OPT_SENTINEL_USER:
        if (val[0] == '\0' || strlen(val) > MAX_USER) usage_error("%s: the user name must be 1..%d bytes", name, MAX_USER);
        o->sentinel_user = val;
        break;
    case OPT_SENTINEL_PASSFILE: o->sentinel_password_file = val; break;
    case OPT_CONNECT_TIMEOUT: o->connect_timeout_ms = duration_arg(name, val, 0); break;
    case OPT_COMMAND_TIMEOUT: o->command_timeout_ms = duration_arg(name, val, 0); break;
    case OPT_VERBOSE: o->verbose = 1; break;
    case OPT_TLS_CA: o->tls_ca = val; break;
    case OPT_TLS_CERT: o->tls_cert = val; break;
    case OPT_TLS_KEY: o->tls_key = val; break;
    case OPT_TLS_INSECURE: o->tls_insecure = 1; break;
    case OPT_SENTINEL: {
        const char *why;
        size_t k;
        if (o->n_sentinels == 5) usage_error("%s: at most 5 Sentinels", name);
        if ((why = parse_server(val, &g.sentinels[o->n_sentinels])) != NULL || g.sentinels[o->n_sentinels].is_unix ||
            g.sentinels[o->n_sentinels].tls)
            usage_error("%s '%.200s': %s", name, shown(val), why ? why : "a Sentinel is HOST:PORT");
        if (g.sentinels[o->n_sentinels].has_user || g.sentinels[o->n_sentinels].has_pass)
            usage_error("%s: give a Sentinel's user and password with --sentinel-user / --sentinel-password-file", name);
        for (k = 0; k < o->n_sentinels; k++) /* (rlock_posix_init_sentinel refuses it too) */
            if (g.sentinels[k].port == g.sentinels[o->n_sentinels].port &&
                strcasecmp(g.sentinels[k].host, g.sentinels[o->n_sentinels].host) == 0)
                usage_error("%s '%.200s': that Sentinel is given twice", name, shown(val));
        o->sentinel[o->n_sentinels++] = val;
        break;
    }
    case OPT_CLUSTER: { /* a seed: HOST:PORT */
        const char *why;
        server *sv;
        if (gc.n == RLOCK_CLUSTER_MAX_PRIMARIES) usage_error("%s: at most %d seeds", name, RLOCK_CLUSTER_MAX_PRIMARIES);
        sv = &gc.seeds[gc.n];
        if ((why = parse_server(val, sv)) != NULL || sv->is_unix || sv->has_db || strlen(sv->host) >= 64)
            usage_error("%s '%.200s': %s", name, shown(val), why ? why : "a cluster node is HOST:PORT or rediss://HOST:PORT (no /DB)");
        gc.tls |= sv->tls;
        if (sv->has_user || sv->has_pass) usage_error("%s: give the user and password with --user / --password-file", name);
        gc.host[gc.n] = sv->host;
        gc.port[gc.n++] = sv->port;
        break;
    }
    case OPT_MASTER:
        if (val[0] == '\0' || strlen(val) > 200) usage_error("%s: the name must be 1..200 bytes", name);
        o->master = val;
        break;
    case OPT_HELP: {
        size_t i;
        for (i = 0; help_text[i]; i++) puts(help_text[i]);
        exit(0);
    }
    case OPT_VERSION:
        printf("rlock %s (rlock.h %s)\n", RLOCK_VERSION_STRING, RLOCK_VERSION_STRING);
        exit(0);
    default: break;
    }
}

/* Only digits: flock's file-descriptor form ("flock 9"). */
static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++) if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static void parse_args(options *o, int argc, char **argv) {
    int i = 1;
    char name[48];
    memset(o, 0, sizeof *o);
    /* rlock status / rlock unlock: a RESOURCE of that name goes after "--" */
    if (argc > 1 && strcmp(argv[1], "status") == 0) { o->mode = MODE_STATUS; i = 2; }
    else if (argc > 1 && strcmp(argv[1], "unlock") == 0) { o->mode = MODE_UNLOCK; i = 2; }
    o->ttl_ms = 30000;
    o->kill_after_ms = 5000;
    o->connect_timeout_ms = 1000;
    o->conflict_rc = RC_CONFLICT;
    while (i < argc) {
        char *a = argv[i];
        const struct option_spec *sp;
        if (strcmp(a, "--") == 0) { i++; break; }
        if (a[0] != '-' || a[1] == '\0') break; /* RESOURCE */
        if (a[1] == '-') {                      /* --name, --name=value, --name value */
            char *eq = strchr(a + 2, '=');
            size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            for (sp = option_specs; sp->long_name; sp++)
                if (strlen(sp->long_name) == nl && memcmp(sp->long_name, a + 2, nl) == 0) break;
            if (!sp->long_name) usage_error("unknown option '--%.*s'", (int)(nl > 64 ? 64 : nl), a + 2);
            snprintf(name, sizeof name, "--%s", sp->long_name);
            if (!sp->has_arg && eq) usage_error("%s takes no value", name);
            if (sp->has_arg && !eq && i + 1 >= argc) usage_error("%s needs a value", name);
            apply_option(o, sp, sp->has_arg ? (eq ? eq + 1 : argv[++i]) : NULL, name);
        } else {                                /* -nv, -t5000, -t 5000 */
            char *c;
            for (c = a + 1; *c; c++) {
                for (sp = option_specs; sp->long_name; sp++)
                    if (sp->short_name && sp->short_name == *c) break;
                if (!sp->long_name) {
                    if (isprint((unsigned char)*c)) usage_error("unknown option '-%c'", *c);
                    usage_error("unknown option");
                }
                snprintf(name, sizeof name, "-%c", *c);
                if (!sp->has_arg) { apply_option(o, sp, NULL, name); continue; }
                if (c[1]) apply_option(o, sp, c + 1, name);
                else if (i + 1 < argc) apply_option(o, sp, argv[++i], name);
                else usage_error("%s needs a value", name);
                break;
            }
        }
        i++;
    }
    if (o->mode != MODE_RUN) {
        const char *what = o->mode == MODE_STATUS ? "rlock status" : "rlock unlock --force";
        if (i >= argc) usage_error("%s: missing RESOURCE", what);
        if (i + 1 < argc) usage_error("%s takes one RESOURCE, no COMMAND", what);
        if (o->mode == MODE_UNLOCK && !o->force)
            usage_error("rlock unlock needs --force: it removes the lock whoever holds it");
        o->resource = argv[i];
        o->resource_len = strlen(argv[i]);
        return;
    }
    if (i >= argc) usage_error(o->shell_cmd ? "missing RESOURCE" : "missing RESOURCE and COMMAND");
    o->resource = argv[i];
    o->resource_len = strlen(argv[i]);
    /* flock NAME -c CMD: -c may follow RESOURCE, with nothing after CMD */
    if (!o->shell_cmd && i + 1 < argc && (strcmp(argv[i + 1], "-c") == 0 || strcmp(argv[i + 1], "--command") == 0)) {
        if (i + 2 >= argc) usage_error("%s needs a value", argv[i + 1]);
        o->shell_cmd = argv[i + 2];
        i += 2;
    }
    if (o->shell_cmd) {
        if (i + 1 < argc) usage_error("-c takes one shell command: quote it, with nothing after it");
        o->sh_argv[0] = (char *)"sh";
        o->sh_argv[1] = (char *)"-c";
        o->sh_argv[2] = o->shell_cmd;
        o->sh_argv[3] = NULL;
        o->command = o->sh_argv;
        return;
    }
    if (i + 1 >= argc) {
        if (all_digits(o->resource))
            usage_error("'%s': flock's file-descriptor form locks an open descriptor of the shell; a distributed "
                        "lock has none to hold: give rlock RESOURCE COMMAND", o->resource);
        usage_error("missing COMMAND to run under the lock");
    }
    o->command = argv + i + 1;
}

/* Two TCP servers that resolve to a common address and port are one server
 * under two names (127.0.0.1 and localhost): it would cast two votes and
 * rlock would wait on itself. Names that do not resolve are left to the
 * connection to report. (The library also compares the servers' run_ids
 * when it connects, which catches a TCP port and its unix socket too.) */
static void check_same_addresses(const options *o) {
    struct addrinfo *ai[MAX_SERVERS], hints;
    size_t i, j;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    for (i = 0; i < o->n_servers; i++) {
        char port[8];
        ai[i] = NULL;
        if (o->servers[i].is_unix) continue;
        snprintf(port, sizeof port, "%d", o->servers[i].port);
        if (getaddrinfo(o->servers[i].host, port, &hints, &ai[i]) != 0) ai[i] = NULL;
    }
    for (i = 0; i < o->n_servers; i++)
        for (j = i + 1; j < o->n_servers; j++) {
            const struct addrinfo *a, *b;
            for (a = ai[i]; a; a = a->ai_next)
                for (b = ai[j]; b; b = b->ai_next)
                    if (a->ai_addrlen == b->ai_addrlen && memcmp(a->ai_addr, b->ai_addr, a->ai_addrlen) == 0) {
                        const server *x = &o->servers[i], *y = &o->servers[j];
                        char label_x[sizeof x->label];
                        size_t k;
                        memcpy(label_x, x->label, sizeof label_x);
                        for (k = 0; k < o->n_servers; k++) if (ai[k]) freeaddrinfo(ai[k]);
                        usage_error("servers %s and %s are the same server (same address): it would get two votes",
                                    label_x, y->label);
                    }
        }
    for (i = 0; i < o->n_servers; i++) if (ai[i]) freeaddrinfo(ai[i]);
}

/* An address as the old "-s ADDR" took it: a URL, a unix socket, or an IPv4
 * address / localhost with a port. (Key names like "jobs:42" are not.) */
static int looks_like_server(const char *r) {
    const char *colon = strrchr(r, ':');
    size_t i;
    if (strncmp(r, "redis://", 8) == 0 || strncmp(r, "rediss://", 9) == 0 || strncmp(r, "unix:", 5) == 0) return 1;
    if (!colon || !all_digits(colon + 1)) return 0;
    if ((size_t)(colon - r) == 9 && strncmp(r, "localhost", 9) == 0) return 1;
    for (i = 0; r + i < colon; i++)
        if (!isdigit((unsigned char)r[i]) && r[i] != '.') return 0;
    return colon > r;
}

/* Cross-checks, defaults from the environment, the password. Nothing here
 * talks to Redis (with several servers, their names are resolved). */
static void check_options(options *o) {
    size_t i;
    const char *env;
    if (o->resource_len == 0) usage_error("RESOURCE is empty");
    if (o->resource_len > RLOCK_MAX_KEY_LEN) usage_error("RESOURCE is longer than %d bytes", RLOCK_MAX_KEY_LEN);
    if (o->fence) { /* the library's own rule and room for the name */
        char tmp[RLOCK_MAX_AUX_LEN + sizeof ":fence"];
        if (rlock_aux_key(tmp, sizeof tmp, o->resource, o->resource_len, ":fence") == 0)
            usage_error("--fence: RESOURCE has a '}' outside a {hash tag}, so no fence counter can share its slot");
    }
    if (o->fair) { /* the wait queue's name must share the slot too */
        char tmp[RLOCK_MAX_AUX_LEN + sizeof ":waiters"];
        if (rlock_aux_key(tmp, sizeof tmp, o->resource, o->resource_len, ":waiters") == 0)
            usage_error("--fair: RESOURCE has a '}' outside a {hash tag}, so no wait queue can share its slot");
    }
    if (o->nonblock && o->wait_set) usage_error("-n and -w cannot be combined");
    if (o->shared + o->exclusive + (o->limit > 0) > 1) usage_error("-s, -x and --limit cannot be combined");
    if (o->fair && (o->shared || o->exclusive || o->limit))
        usage_error("--fair works with the plain exclusive lock, not with -s, -x or --limit");
    if (o->fence && o->shared) usage_error("--fence: a shared (-s) lock has no fence token (writers' grants do)");
    if (o->shared && looks_like_server(o->resource))
        usage_error("-s is --shared now (as in flock); '%.200s' looks like a server: give it with -S (was -s)",
                    shown(o->resource));
    if (o->ttl_ms < MIN_TTL_MS) usage_error("--ttl: a lease under %d ms cannot be renewed reliably", MIN_TTL_MS);
    if (o->command_timeout_ms && o->command_timeout_ms * 3 > o->ttl_ms)
        usage_error("--command-timeout must be at most a third of --ttl (%lld ms)", o->ttl_ms);
#ifndef RLOCK_CLI_TLS
    if (o->tls_ca || o->tls_cert || o->tls_key || o->tls_insecure)
        usage_error("this rlock was built without TLS (OpenSSL): --tls-* cannot be used");
#endif
    if ((o->tls_cert == NULL) != (o->tls_key == NULL)) usage_error("--tls-cert and --tls-key go together");
    if (o->n_sentinels && !o->master) usage_error("--sentinel needs --master NAME");
    if (o->master && !o->n_sentinels) usage_error("--master needs --sentinel ADDR");
    if (o->n_sentinels && o->n_servers) usage_error("--sentinel finds the server: give no --server with it");
    if (o->n_sentinels && (o->tls_ca || o->tls_cert || o->tls_insecure))
        usage_error("--sentinel with TLS is not supported (Sentinel discovery is plaintext)");
    if ((o->sentinel_user || o->sentinel_password_file) && !o->n_sentinels)
        usage_error("--sentinel-user and --sentinel-password-file go with --sentinel");
    if (o->n_sentinels) { /* one server: the primary the Sentinels name */
        size_t k;
        server *sv = &o->servers[0];
        if (o->sentinel_password_file) {
            read_password_file("--sentinel-password-file", o->sentinel_password_file, o->sentinel_password, &o->has_sentinel_password);
        } else if ((env = getenv("RLOCK_SENTINEL_PASSWORD")) != NULL && *env) {
            if (strlen(env) > MAX_PASS)
                usage_error("$RLOCK_SENTINEL_PASSWORD is longer than %d bytes", MAX_PASS);
            memcpy(o->sentinel_password, env, strlen(env) + 1);
            o->has_sentinel_password = 1;
        }
        if (o->sentinel_user && !o->has_sentinel_password)
            usage_error("--sentinel-user needs a password (--sentinel-password-file or $RLOCK_SENTINEL_PASSWORD)");
        g.sn.sentinel_username = o->sentinel_user;
        g.sn.sentinel_password = o->has_sentinel_password ? o->sentinel_password : NULL;
        memset(sv, 0, sizeof *sv);
        snprintf(sv->label, sizeof sv->label, "sentinel:%.200s", o->master);
        for (k = 0; k < o->n_sentinels; k++) {
            g.sn.host[k] = g.sentinels[k].host;
            g.sn.port[k] = g.sentinels[k].port;
        }
        g.sn.n = o->n_sentinels;
        g.sn.master = o->master;
        o->n_servers = 1;
    }
    if (gc.n) { /* the cluster's nodes are the servers */
        if (o->n_servers || o->n_sentinels) usage_error("--cluster finds the servers: give no --server or --sentinel with it");
        gc.tls |= o->tls_ca || o->tls_cert || o->tls_insecure; /* TLS to every node */
        if (o->db_set) usage_error("--cluster: a cluster has only database 0 (no --db)");
    } else if (o->n_servers == 0) {
        env = getenv("RLOCK_SERVERS");
        if (env && *env) {
            char buf[MAX_SERVERS * (MAX_ADDR + 1) + 64], *p, *next;
            if (strlen(env) >= sizeof buf) usage_error("$RLOCK_SERVERS is too long");
            memcpy(buf, env, strlen(env) + 1);
            for (p = buf; p; p = next) {
                char *end;
                next = strchr(p, ',');
                if (next) *next++ = '\0';
                while (*p == ' ' || *p == '\t') p++;
                end = p + strlen(p);
                while (end > p && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
                if (*p == '\0') usage_error("$RLOCK_SERVERS has an empty entry");
                add_server(o, p, "$RLOCK_SERVERS");
            }
            memset(buf, 0, sizeof buf);
        } else {
            add_server(o, "127.0.0.1:6379", "default server");
        }
    }
    if (o->password_file) {
        read_password_file("--password-file", o->password_file, o->password, &o->has_password);
    } else {
        env = getenv("RLOCK_PASSWORD");
        if (!env || !*env) env = getenv("REDISCLI_AUTH");
        if (env && *env) {
            if (strlen(env) > MAX_PASS) usage_error("the password in the environment is longer than %d bytes", MAX_PASS);
            memcpy(o->password, env, strlen(env) + 1);
            o->has_password = 1;
        }
    }
    if (o->n_servers > 1) check_same_addresses(o);
    for (i = 0; i < o->n_servers; i++) {
        server *sv = &o->servers[i];
        if ((sv->has_user || o->user) && !sv->has_pass && !o->has_password)
            usage_error("%s: a user name needs a password (--password-file or $RLOCK_PASSWORD)", sv->label);
    }
}

/* ------------------------------------------------------------------------ */
/* Signals: handlers only write the signal number to a self-pipe             */
/* ------------------------------------------------------------------------ */

#define SIG_FROM_KERNEL 0x80 /* not sent by kill(): e.g. the terminal's ^C */

static void on_signal(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t r;
    (void)uc;
    if (si && si->si_code != SI_USER && si->si_code != SI_QUEUE) b |= SIG_FROM_KERNEL;
    r = write(g.sigfd[1], &b, 1);
    (void)r; /* a full pipe already holds a wake-up */
    errno = saved;
}

static int set_fd_flags(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 ? -1 : 0;
}

static void signals_block(sigset_t *set) {
    size_t i;
    sigemptyset(set);
    for (i = 0; i < N_FORWARDED; i++) sigaddset(set, forwarded_sigs[i]);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGCONT);
}

static int setup_signals(void) {
    struct sigaction sa, old;
    size_t i;
    if (pipe(g.sigfd) != 0 || set_fd_flags(g.sigfd[0]) != 0 || set_fd_flags(g.sigfd[1]) != 0) return -1;
    sigprocmask(SIG_SETMASK, NULL, &g.orig_mask);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < N_FORWARDED; i++) {
        /* A signal ignored by whoever started rlock (e.g. SIGINT for a
         * background job of a script) stays ignored, for COMMAND too. */
        if (sigaction(forwarded_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        if (sigaction(forwarded_sigs[i], &sa, NULL) == 0) installed[i] = 1;
    }
    sigaction(SIGCONT, &sa, NULL);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    /* rlock writes only to sockets (MSG_NOSIGNAL) and stderr; a closed
     * stderr must not kill it while COMMAND depends on its renewals. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &g.old_pipe);
    return 0;
}

static void handle_signal(int sig, int from_kernel) {
    if (sig == SIGCHLD || sig == SIGCONT) return; /* the loops reap and re-check */
    if (g.child > 0 || g.group_wait) {
        /* In the terminal's foreground COMMAND shares rlock's process group:
         * the terminal's ^C reached it already. */
        if (!g.own_group && from_kernel) return;
        VERBOSE(("passing %s on to COMMAND", sig_name(sig)));
        kill(g.target, sig);
    } else if (!g.stop_sig && sig != SIGUSR1 && sig != SIGUSR2) {
        g.stop_sig = sig;
    }
}

static void drain_signals(void) {
    unsigned char buf[64];
    ssize_t n, i;
    while ((n = read(g.sigfd[0], buf, sizeof buf)) > 0)
        for (i = 0; i < n; i++) handle_signal(buf[i] & ~SIG_FROM_KERNEL, (buf[i] & SIG_FROM_KERNEL) != 0);
}

/* ------------------------------------------------------------------------ */
/* Connections                                                               */
/* ------------------------------------------------------------------------ */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* --sentinel: keep one Sentinel connection subscribed to +switch-master
 * (rlock_posix_sentinel_watch) while rlock waits for the lock and while
 * COMMAND runs, so that a failover is followed when the Sentinels announce
 * it - not seconds later, when the old primary is demoted (READONLY) or
 * drops the connection: until then it still takes writes (README,
 * Deployments: the split brain). Started once; closed by close_all. */
static void watch_start(void) {
    if (g.watching || !g.o.n_sentinels) return;
    if (rlock_posix_sentinel_watch_init(&g.sw, &g.pc[0]) == 0) g.watching = 1;
}

static void watch_step(void) {
    unsigned long before = g.sw.switches;
    if (!rlock_posix_sentinel_watch_step(&g.sw)) return;
    /* the connection is marked: its next request goes to the Sentinels and
     * on to the new primary; requests waiting on the old one move over */
    if (g.sw.switches != before) {
        g.switched = 1;
        VERBOSE(("the Sentinels announced a new primary for '%s' (+switch-master): moving to it", g.o.master));
    }
    (void)rlock_client_step(&g.cl);
}

/* One poll() over the self-pipe, the guard's reports and every connection
 * the client's operations need (rlock_client_interest), until something
 * happens, the client's own next deadline, or limit_ms (-1: no limit). */
static void wait_io(long long limit_ms) {
    struct pollfd p[3 + 2 * MAX_SERVERS + RLOCK_CLUSTER_MAX_PRIMARIES];
    rlock_interest it[2 * MAX_SERVERS + RLOCK_CLUSTER_MAX_PRIMARIES];
    nfds_t n = 0;
    size_t i, k;
    uint32_t next;
    long long timeout_ms = limit_ms;
    int t, r;
    p[n].fd = g.sigfd[0];
    p[n].events = POLLIN;
    p[n++].revents = 0;
    if (g.stat_fd >= 0) { /* the guard reports COMMAND's end */
        p[n].fd = g.stat_fd;
        p[n].events = POLLIN;
        p[n++].revents = 0;
    }
    if (g.watching) { /* the Sentinel watched for +switch-master */
        int fd, ev = rlock_posix_sentinel_watch_interest(&g.sw, &fd, &next);
        if (next != UINT32_MAX && (timeout_ms < 0 || (long long)next < timeout_ms)) timeout_ms = next;
        if (fd >= 0) {
            p[n].fd = fd;
            p[n].events = (short)(((ev & RLOCK_WANT_READ) ? POLLIN : 0) | ((ev & RLOCK_WANT_WRITE) ? POLLOUT : 0));
            p[n++].revents = 0;
        }
    }
    k = gc.n ? rlock_cluster_interest(&gc.cl, it, sizeof it / sizeof it[0], &next)
             : rlock_client_interest(&g.cl, it, sizeof it / sizeof it[0], &next);
    if (k > sizeof it / sizeof it[0]) k = sizeof it / sizeof it[0];
#ifdef RLOCK_CLI_TLS
    next = rlock_tls_interest_timeout(it, k, next); /* a connect's own bound: TLS handshakes, a Sentinel's share */
#else
    next = rlock_posix_interest_timeout(it, k, next); /* a connect's own bound (a Sentinel's share) */
#endif
    if (next != UINT32_MAX && (timeout_ms < 0 || (long long)next < timeout_ms)) timeout_ms = next;
    for (i = 0; i < k; i++) {
        if (it[i].fd < 0) { timeout_ms = 0; continue; } /* not connected yet: step now */
        p[n].fd = it[i].fd;
        p[n].events = (short)(((it[i].events & RLOCK_WANT_READ) ? POLLIN : 0) |
                              ((it[i].events & RLOCK_WANT_WRITE) ? POLLOUT : 0));
        p[n++].revents = 0;
    }
    t = timeout_ms < 0 ? -1 : timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
    r = poll(p, n, t);
    if (r < 0 || (r > 0 && (p[0].revents & POLLIN))) drain_signals(); /* < 0: EINTR, a handler ran */
    if (g.watching) watch_step();
}

/* Say, for every server whose last exchange failed, why. */
static void report_nodes(void) {
    size_t i;
    if (gc.n && g.lk.client) { /* the cluster node the lock went to last */
        const rlock_node *nd = g.lk.client->nodes[0];
        size_t at = (size_t)(g.lk.client - gc.cl.client);
        if (rlock_node_status(nd) != RLOCK_OK)
            say("%s:%d: %s%s%s", gc.cl.host[at], gc.cl.port[at], rlock_status_str(rlock_node_status(nd)),
                rlock_node_error(nd)[0] ? ": " : "", rlock_node_error(nd));
        if (rlock_cluster_error(&gc.cl)[0]) say("cluster: %s", rlock_cluster_error(&gc.cl));
    }
    for (i = 0; i < g.o.n_servers; i++) {
        const char *why = rlock_node_error(&g.node[i]); /* the transport's own text included */
        rlock_status st = rlock_node_status(&g.node[i]);
        if (st == RLOCK_OK) continue;
        say("%s: %s%s%s", g.o.servers[i].label, rlock_status_str(st), why[0] ? ": " : "", why);
    }
}

static size_t nodes_with(rlock_status st) {
    size_t i, n = 0;
    for (i = 0; i < g.o.n_servers; i++) n += rlock_node_status(&g.node[i]) == st;
    return n;
}

/* Servers that refused AUTH (exit 77): rlock's own RLOCK_E_AUTH, or with
 * --sentinel a connect that failed because a Sentinel, or the primary it
 * named, refused it (the adapter says so; rlock sees an I/O error). */
static size_t auth_refused(void) {
    return nodes_with(RLOCK_E_AUTH) +
           (g.o.n_sentinels && g.pc[0].auth_refused && rlock_node_status(&g.node[0]) == RLOCK_E_IO);
}

/* The connection nd to sv (waiting rides on it: RESP3, cfg.pubsub). */
static int init_conn(rlock_posix_conn *pc, rlock_node *nd, const server *sv) {
    const options *o = &g.o;
    uint32_t ct = (uint32_t)o->connect_timeout_ms;
    const char *user = sv->has_user ? sv->user : o->user;
    const char *pass = sv->has_pass ? sv->pass : o->has_password ? o->password : NULL;
    const rlock_transport *tr;
#ifdef RLOCK_CLI_TLS
    if (sv->tls || o->tls_ca || o->tls_cert || o->tls_insecure) {
        rlock_tls_conn *tc = &g.tc[pc - g.pc]; /* the TLS connection of the same slot */
        rlock_tls_config tcfg;
        memset(&tcfg, 0, sizeof tcfg);
        tcfg.ca_file = o->tls_ca;
        tcfg.cert_file = o->tls_cert;
        tcfg.key_file = o->tls_key;
        tcfg.insecure = o->tls_insecure;
        if (sv->is_unix || rlock_tls_init(tc, sv->host, sv->port, ct, &tcfg) != 0) {
            say("%s: %s", sv->label, sv->is_unix ? "TLS over a unix socket is not supported" : tc->err);
            return -1;
        }
        tr = rlock_tls_transport(tc);
    } else
#endif
    {
        g.sn.username = user; /* the primary's ROLE is asked behind AUTH too */
        g.sn.password = pass;
        if ((o->n_sentinels ? rlock_posix_init_sentinel(pc, &g.sn, ct)
             : sv->is_unix ? rlock_posix_init_unix(pc, sv->path, ct) : rlock_posix_init_tcp(pc, sv->host, sv->port, ct)) != 0)
            return -1;
        tr = rlock_posix_transport(pc);
    }
    if (rlock_node_init(nd, tr) != RLOCK_OK) return -1;
    nd->username = user;
    nd->password = pass;
    nd->db = sv->has_db ? sv->db : (int)o->db;
    return 0;
}

static void close_all(void) {
    size_t i;
    if (g.watching) rlock_posix_sentinel_watch_close(&g.sw);
    g.watching = 0;
    rlock_client_close(&g.cl);
    for (i = 0; i < g.o.n_servers; i++) {
        rlock_posix_close(&g.pc[i]);
#ifdef RLOCK_CLI_TLS
        rlock_tls_free(&g.tc[i]);
#endif
    }
}

/* ------------------------------------------------------------------------ */
/* Acquire                                                                   */
/* ------------------------------------------------------------------------ */

static int status_exit(rlock_status st) {
    switch (st) {
    case RLOCK_E_AUTH: return RC_NOPERM;
    case RLOCK_E_WRONGTYPE: case RLOCK_E_FOREIGN: return RC_DATAERR;
    case RLOCK_E_IO: case RLOCK_E_PROTOCOL: case RLOCK_E_REDIS: case RLOCK_E_QUORUM: case RLOCK_E_REPLICAS:
        return RC_UNAVAILABLE;
    case RLOCK_E_RANDOM: case RLOCK_E_CLOCK: return RC_OSERR;
    default: return RC_SOFTWARE;
    }
}

/* Not held: *rc is why (an exit status). */
static int not_held(int *rc, int code) {
    *rc = code;
    return 0;
}

/* An acquire that ended without the lock because of a signal or a conflict
 * (held elsewhere, or --wait ran out): sets *rc and returns 1. */
static int gave_up(rlock_status st, int *rc) {
    const options *o = &g.o;
    if (g.stop_sig) return !not_held(rc, 128 + g.stop_sig);
    if (st != RLOCK_NOT_ACQUIRED && st != RLOCK_TIMEOUT) return 0;
    VERBOSE(("'%s' is held by someone else; giving up%s (exit %d)", o->resource,
             st == RLOCK_TIMEOUT ? " after the --wait time" : "", o->conflict_rc));
    return !not_held(rc, o->conflict_rc);
}

/* --cluster: acquire on the primary of RESOURCE's slot (the map read from
 * the seeds first), following redirects; signals end the wait. As acquire. */
static int acquire_cluster(int *rc) {
    const options *o = &g.o;
    long long wait = o->nonblock ? 0 : o->wait_set ? o->wait_ms : LLONG_MAX / 4;
    int said_waiting = 0;
    rlock_status st = rlock_cluster_acquire_begin(&gc.cl, &g.lk, o->ttl_ms, wait);
    while (st == RLOCK_WOULD_BLOCK) {
        drain_signals();
        if (g.stop_sig) {
            rlock_cluster_cancel(&gc.cl, &g.lk); /* nothing granted is left behind */
            if (rlock_lock_state(&g.lk) == RLOCK_STATE_HELD) rlock_cluster_release(&gc.cl, &g.lk);
            VERBOSE(("%s: stopped waiting", sig_name(g.stop_sig)));
            return not_held(rc, 128 + g.stop_sig);
        }
        if (!said_waiting && rlock_acquire_waiting(&g.lk)) {
            said_waiting = 1;
            VERBOSE(("'%s' is held; waiting for it", o->resource));
        }
        wait_io(-1);
        st = rlock_cluster_step(&gc.cl, &g.lk);
    }
    if (st == RLOCK_OK) {
        size_t at = (size_t)(g.lk.client - gc.cl.client);
        VERBOSE(("acquired '%s' on the cluster primary %s:%d (lease %lld ms, valid %lld ms; %lu MOVED, %lu ASK)",
                 o->resource, gc.cl.host[at], gc.cl.port[at], o->ttl_ms, rlock_validity_ms(&g.lk), gc.cl.moved,
                 gc.cl.asked));
        if (!g.stop_sig) return 1;
        rlock_cluster_release(&gc.cl, &g.lk);
    }
    if (gave_up(st, rc)) return 0;
    report_nodes();
    say("could not acquire '%s' on the cluster: %s", o->resource, rlock_status_str(st));
    return not_held(rc, st == RLOCK_E_BADARG ? RC_SOFTWARE : status_exit(st));
}

/* Connect, then acquire, waiting in our own poll() so that signals end the
 * wait. Returns 1 when the lock is held, else 0 with the exit status in *rc:
 * "held" is an outcome of its own, so no exit status - not even -E 0 - can
 * be mistaken for it. */
static int acquire(int *rc) {
    const options *o = &g.o;
    long long wait = o->nonblock ? 0 : o->wait_set ? o->wait_ms : LLONG_MAX;
    uint64_t unavailable_since = 0;
    int said_waiting = 0;
    rlock_status st = rlock_client_connect(&g.cl, (uint32_t)o->connect_timeout_ms);
    drain_signals();
    if (g.stop_sig) return not_held(rc, 128 + g.stop_sig);
    if (st == RLOCK_E_BADARG) {
        /* rlock_client_connect found one server under two names (same run_id) */
        size_t i;
        unsigned first = 0;
        for (i = 0; i < o->n_servers; i++) {
            const char *why = rlock_node_error(&g.node[i]);
            if (rlock_node_status(&g.node[i]) != RLOCK_E_BADARG) continue;
            if (sscanf(why, "same server as node %u", &first) != 1 || first >= o->n_servers) first = 0;
            say("servers %s and %s are the same server %s: it would get two votes", o->servers[first].label,
                o->servers[i].label, strchr(why, '(') ? strchr(why, '(') : "");
            break;
        }
        return not_held(rc, RC_USAGE);
    }
    if (st != RLOCK_OK) {
        int auth = auth_refused() > 0;
        report_nodes();
        say("cannot reach %s%s", o->n_servers > 1 ? "a quorum of the servers" : "the server",
            auth ? ": authentication refused" : "");
        return not_held(rc, auth ? RC_NOPERM : RC_UNAVAILABLE);
    }
    if (o->verbose && nodes_with(RLOCK_OK) < o->n_servers) report_nodes();
    st = rlock_acquire_begin(&g.lk, o->ttl_ms, wait);
    while (st == RLOCK_WOULD_BLOCK) {
        st = rlock_step(&g.lk);
        if (st != RLOCK_WOULD_BLOCK) break;
        if (g.stop_sig) {
            /* Cancelling at any point leaves nothing granted behind: an
             * attempt in flight is waited for and undone. */
            rlock_cancel(&g.lk);
            if (rlock_lock_state(&g.lk) == RLOCK_STATE_HELD) rlock_release(&g.lk);
            VERBOSE(("%s: stopped waiting", sig_name(g.stop_sig)));
            return not_held(rc, 128 + g.stop_sig);
        }
        if (rlock_acquire_waiting(&g.lk)) { /* between attempts: the lock is held by others */
            uint64_t now = now_ms();
            if (!said_waiting) {
                said_waiting = 1;
                watch_start(); /* a failover while waiting: the wait moves too */
                if (o->wait_set) VERBOSE(("'%s' is held; waiting up to %lld ms", o->resource, o->wait_ms));
                else VERBOSE(("'%s' is held; waiting for it", o->resource));
            }
            /* --replicas: a grant too few replicas acknowledged is released and
             * retried - the servers answer, but the lock cannot be had: as no
             * quorum (exit 69), not "held" for ever */
            long long acks = o->replicas ? rlock_replica_acks(&g.lk) : -1;
            if (nodes_with(RLOCK_OK) < rlock_client_quorum(&g.cl) || (acks >= 0 && acks < o->replicas)) {
                if (!unavailable_since) unavailable_since = now;
                else if (now - unavailable_since >= UNAVAILABLE_GIVE_UP_MS) {
                    rlock_cancel(&g.lk);
                    report_nodes();
                    if (acks >= 0 && acks < o->replicas)
                        say("gave up waiting: fewer than %lld replicas acknowledged the grant for %d s", o->replicas,
                            UNAVAILABLE_GIVE_UP_MS / 1000);
                    else say("gave up waiting: no quorum of the servers for %d s", UNAVAILABLE_GIVE_UP_MS / 1000);
                    return not_held(rc, RC_UNAVAILABLE);
                }
            } else {
                unavailable_since = 0;
            }
        }
        wait_io(-1);
    }
    if (st == RLOCK_OK) {
        if (g.stop_sig) {
            rlock_release(&g.lk);
            return not_held(rc, 128 + g.stop_sig);
        }
        return 1;
    }
    if (gave_up(st, rc)) return 0;
    report_nodes();
    if (st == RLOCK_E_WRONGTYPE || st == RLOCK_E_FOREIGN)
        say("the key '%s' exists but is not an rlock lock of this kind (%s: another kind of key, or a lock "
            "taken with other options among plain, -s/-x and --limit); rlock does not touch it",
            o->resource, rlock_status_str(st));
    else
        say("could not acquire '%s': %s", o->resource, rlock_status_str(st));
    return not_held(rc, status_exit(st));
}

/* ------------------------------------------------------------------------ */
/* Run COMMAND under the lock                                                */
/* ------------------------------------------------------------------------ */

/* COMMAND does not run as rlock's child but as the child of a small guard
 * process, rlock's only child. The guard holds the read end of a pipe whose
 * write end only rlock holds ("lifeline"): when rlock dies (kill -9, OOM)
 * the guard reads EOF - and on Linux is also sent PR_SET_PDEATHSIG - and
 * SIGKILLs COMMAND's whole process tree at once: COMMAND's process group
 * and, on Linux, every descendant, found in /proc/PID/task/TID/children.
 * The guard is a child subreaper (Linux), so orphans - also those that left
 * the group with setsid() - are reparented to it: it finds them, and it
 * reaps them, so a zombie never counts as a live process (containers whose
 * PID 1 does not reap). It reports COMMAND's pid, exec errno and wait status
 * to rlock through a second pipe. rlock itself still sends COMMAND's
 * signals (to its group, or to it alone in a terminal's foreground). */
enum { GUARD_PID = 'P', GUARD_EXEC = 'X', GUARD_STATUS = 'S' }; /* guard -> rlock */
enum { GUARD_QUIT = 'Q', GUARD_KILL = 'K' };                     /* rlock -> guard */
typedef struct guard_msg { int type, value; } guard_msg;         /* < PIPE_BUF: atomic */
#define GUARD_KILL_MAX_MS 10000 /* bound on killing a tree that keeps forking */
#define GUARD_MAX_PIDS 4096

static void guard_send(int fd, int type, int value) {
    guard_msg m;
    ssize_t r;
    m.type = type;
    m.value = value;
    do r = write(fd, &m, sizeof m);
    while (r < 0 && errno == EINTR);
}

#ifdef __linux__
/* Append pid's children (of every thread) to list[n..cap); the new count. */
static size_t children_of(pid_t pid, pid_t *list, size_t n, size_t cap) {
    char path[64];
    DIR *d;
    struct dirent *e;
    snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
    if ((d = opendir(path)) == NULL) return n;
    while (n < cap && (e = readdir(d)) != NULL) {
        char cp[128];
        FILE *f;
        long c;
        if (e->d_name[0] == '.') continue;
        snprintf(cp, sizeof cp, "%s/%.20s/children", path, e->d_name);
        if ((f = fopen(cp, "r")) == NULL) continue;
        while (n < cap && fscanf(f, "%ld", &c) == 1) list[n++] = (pid_t)c;
        fclose(f);
    }
    closedir(d);
    return n;
}
#endif

typedef struct guard_state {
    pid_t cmd;         /* COMMAND */
    int cmd_done;      /* reaped, status sent */
    int stat_fd;       /* to rlock */
} guard_state;

/* Reap every child that has ended (COMMAND's status goes to rlock). 1 when
 * the guard has no child left. */
static int guard_reap(guard_state *gs) {
    int st;
    pid_t r;
    for (;;) {
        r = waitpid(-1, &st, WNOHANG);
        if (r > 0) {
            if (r == gs->cmd && !gs->cmd_done) {
                gs->cmd_done = 1;
                guard_send(gs->stat_fd, GUARD_STATUS, st);
            }
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        return r < 0 && errno == ECHILD;
    }
}

/* SIGKILL COMMAND's process tree and reap it, again until nothing is left:
 * a process may fork while the tree is walked, and killed parents hand
 * their children to the guard (the subreaper). */
static void guard_kill_tree(guard_state *gs) {
    static pid_t list[GUARD_MAX_PIDS];
    uint64_t end = now_ms() + GUARD_KILL_MAX_MS;
    for (;;) {
        size_t n = 0, i;
        if (g.own_group) kill(-gs->cmd, SIGKILL); /* the group outlives its leader */
        if (!gs->cmd_done) kill(gs->cmd, SIGKILL);
#ifdef __linux__
        n = children_of(getpid(), list, 0, GUARD_MAX_PIDS);
        for (i = 0; i < n; i++) {             /* breadth first: kill, then look deeper */
            kill(list[i], SIGKILL);
            n = children_of(list[i], list, n, GUARD_MAX_PIDS);
        }
#else
        (void)i; (void)n; (void)list;
#endif
        if (guard_reap(gs) || now_ms() >= end) return;
        {
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
    }
}

/* A connection's descriptor, through the transport contract; -1: none. */
static int conn_fd(const rlock_transport *tr) {
    return tr->fd ? tr->fd(tr->ctx) : -1;
}

static CLI_NORETURN void guard_main(char **cmd, pid_t rlock_pid, int life, int stat_fd) {
    guard_state gs;
    sigset_t unblock;
    int ep[2], e = 0;
    size_t i;
    ssize_t n;
    pid_t self = getpid(), rlock_group = getpgrp();
    struct sigaction sa;
    memset(&gs, 0, sizeof gs);
    gs.stat_fd = stat_fd;
    /* rlock's connections and self-pipe are not the guard's business. (Each
     * descriptor through the transport's fd hook; a connection never set up
     * has none. Fds 0-2 were filled at start: never one of them.) */
    for (i = 0; i < g.o.n_servers; i++) {
        int fd = conn_fd(&g.node[i].transport);
        if (fd > 2) close(fd);
    }
    if (g.watching && g.sw.q.fd > 2) close(g.sw.q.fd);
    close(g.sigfd[0]);
    close(g.sigfd[1]);
    if (pipe(g.sigfd) != 0 || set_fd_flags(g.sigfd[0]) != 0 || set_fd_flags(g.sigfd[1]) != 0 ||
        pipe(ep) != 0 || fcntl(ep[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(ep[1], F_SETFD, FD_CLOEXEC) != 0) {
        guard_send(stat_fd, GUARD_PID, -errno);
        _exit(RC_OSERR);
    }
    /* The guard's handlers write to its own self-pipe; signals meant for
     * COMMAND that reach the guard (its process group was signalled) are
     * rlock's to pass on: the guard only wakes up. */
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGALRM); /* rlock gone: wake up (the pipe says so too) */
    /* not "rlock": `killall -9 rlock`, `pkill -9 -x rlock` leave the guard
     * to kill COMMAND's tree (its command line too, below) */
    prctl(PR_SET_NAME, "rlock-guard");
#endif
    if (getppid() != rlock_pid) _exit(RC_SOFTWARE); /* rlock died already */
    /* A process group of its own: whoever kills rlock's group (kill -9 -PGID,
     * a CI job's timeout) does not take the guard along, so it can still
     * clean up. COMMAND leads its own group, or in a terminal's foreground
     * joins rlock's, to read the terminal. */
    setpgid(0, 0);
    gs.cmd = fork();
    if (gs.cmd == 0) {
        for (i = 0; i < N_FORWARDED; i++) if (installed[i]) signal(forwarded_sigs[i], SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGCONT, SIG_DFL);
        signal(SIGALRM, SIG_DFL);
        sigaction(SIGPIPE, &g.old_pipe, NULL);
        setpgid(0, g.own_group ? 0 : rlock_group);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the guard killed too: COMMAND goes */
        if (getppid() != self) _exit(RC_SOFTWARE);
#else
        (void)self;
#endif
        sigprocmask(SIG_SETMASK, &g.orig_mask, NULL);
        execvp(cmd[0], cmd);
        e = errno;
        n = write(ep[1], &e, sizeof e);
        (void)n;
        _exit(e == ENOENT ? RC_NOT_FOUND : RC_CANNOT_EXEC);
    }
    if (gs.cmd < 0) {
        guard_send(stat_fd, GUARD_PID, -errno);
        _exit(RC_OSERR);
    }
    setpgid(gs.cmd, g.own_group ? gs.cmd : rlock_group); /* also here: no window for a signal */
#ifdef __linux__
    /* ps and pkill -f see "rlock-guard", not rlock's command line (a copy
     * of it, after the fork): a pattern naming what rlock runs (pkill -9 -f
     * deploy:web) takes rlock alone, and the guard kills COMMAND's tree.
     * (After COMMAND's fork: its arguments are in there.) */
    if (g.args_len > 1) {
        memset(g.args, 0, g.args_len);
        memcpy(g.args, "rlock-guard", g.args_len - 1 < 11 ? g.args_len - 1 : 11);
    }
#endif
    guard_send(stat_fd, GUARD_PID, (int)gs.cmd);
    close(ep[1]);
    do n = read(ep[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(ep[0]);
    guard_send(stat_fd, GUARD_EXEC, n == (ssize_t)sizeof e ? e : 0);
    signals_block(&unblock);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    for (;;) {
        struct pollfd p[2];
        unsigned char buf[64];
        char c;
        p[0].fd = life; p[0].events = POLLIN; p[0].revents = 0;
        p[1].fd = g.sigfd[0]; p[1].events = POLLIN; p[1].revents = 0;
        /* 1 s: where there is no PDEATHSIG, also notice a new parent */
        if (poll(p, 2, 1000) < 0 && errno != EINTR) _exit(RC_OSERR);
        while (read(g.sigfd[0], buf, sizeof buf) > 0) {}
        guard_reap(&gs);
        if (getppid() != rlock_pid) break;
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        n = read(life, &c, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n == 1 && c == GUARD_QUIT) _exit(0);
        if (n == 1 && c == GUARD_KILL) { guard_kill_tree(&gs); continue; }
        break; /* EOF: rlock is gone */
    }
    guard_kill_tree(&gs);
    _exit(0);
}

/* The guard's reports ended (EOF): it was killed. COMMAND died with it (on
 * Linux; elsewhere it is killed here), but what COMMAND started is orphaned
 * - on Linux to rlock, a subreaper for this (start_command) - and must be
 * gone before the lock is released. */
static void guard_died(void) {
    guard_state gs;
    say("rlock's guard process ended unexpectedly; what ran of COMMAND was killed with it");
    memset(&gs, 0, sizeof gs);
    gs.cmd = g.child > 0 ? g.child : -g.target; /* (reaped: its group's id) */
    gs.cmd_done = g.child <= 0;
    gs.stat_fd = -1;
    guard_kill_tree(&gs); /* (reaps the guard too) */
    close(g.stat_fd);
    g.stat_fd = -1;
}

/* COMMAND has ended: its wait status in *status. 0 while it runs. */
static int reap(int *status) {
    guard_msg m;
    ssize_t n;
    if (g.child <= 0) return 1;
    for (;;) {
        n = read(g.stat_fd, &m, sizeof m);
        if (n == (ssize_t)sizeof m) {
            if (m.type != GUARD_STATUS) continue;
            *status = m.value;
            g.child = 0;
            return 1;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        guard_died();
        *status = RC_SOFTWARE << 8;
        g.child = 0;
        return 1;
    }
}

static void signal_command(int sig) {
    if (g.target) kill(g.target, sig);
}

/* Tell the guard: GUARD_KILL (COMMAND's whole tree, now) or GUARD_QUIT. */
static void tell_guard(char c) {
    ssize_t r;
    if (g.life_fd < 0) return;
    do r = write(g.life_fd, &c, 1);
    while (r < 0 && errno == EINTR);
}

/* Let the guard go and reap it: COMMAND's leftovers outside its process
 * group (a daemon it started) are left alone, as they were before. */
static void stop_guard(void) {
    int st;
    tell_guard(GUARD_QUIT);
    if (g.life_fd >= 0) close(g.life_fd);
    if (g.stat_fd >= 0) close(g.stat_fd);
    g.life_fd = g.stat_fd = -1;
    if (g.guard > 0) {
        while (waitpid(g.guard, &st, 0) < 0 && errno == EINTR) {}
        g.guard = 0;
    }
}

static int read_guard(guard_msg *m) {
    ssize_t n;
    do n = read(g.stat_fd, m, sizeof *m);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof *m ? 0 : -1;
}

/* Fork the guard, which forks and execs COMMAND. COMMAND's pid, or -1. */
static pid_t start_command(char **cmd, int *exec_errno) {
    int life[2], sp[2];
    sigset_t block, old;
    guard_msg m;
    pid_t pid, parent = getpid();
    *exec_errno = 0;
    m.type = m.value = 0;
    if (pipe(life) != 0) return -1;
    if (pipe(sp) != 0) { close(life[0]); close(life[1]); return -1; }
    if (fcntl(life[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(life[1], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(sp[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(sp[1], F_SETFD, FD_CLOEXEC) != 0) {
        close(life[0]); close(life[1]); close(sp[0]); close(sp[1]);
        return -1;
    }
    /* In the foreground of a terminal COMMAND stays in rlock's process group,
     * so it can read the terminal and gets ^C from it. Otherwise it leads a
     * group of its own, and signals reach everything COMMAND started. */
    g.own_group = !(isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp());
#ifdef __linux__
    /* should the guard be killed, COMMAND's orphans come to rlock (see reap) */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    signals_block(&block);
    sigprocmask(SIG_BLOCK, &block, &old);
    pid = fork();
    if (pid == 0) {
        close(life[1]); /* rlock's alone: its death is the guard's EOF */
        close(sp[0]);
        guard_main(cmd, parent, life[0], sp[1]);
    }
    close(life[0]);
    close(sp[1]);
    if (pid < 0) {
        close(life[1]);
        close(sp[0]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    g.guard = pid;
    g.life_fd = life[1];
    g.stat_fd = sp[0];
    /* Signals stay blocked until COMMAND's pid is known: none is lost. */
    if (read_guard(&m) != 0 || m.type != GUARD_PID || m.value <= 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (m.type == GUARD_PID && m.value < 0) errno = -m.value;
        else errno = ECHILD;
        stop_guard();
        return -1;
    }
    g.child = (pid_t)m.value;
    g.target = g.own_group ? -g.child : g.child;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (read_guard(&m) == 0 && m.type == GUARD_EXEC) *exec_errno = m.value;
    set_fd_flags(g.stat_fd);
    return g.child;
}

/* After COMMAND was told to stop: give what is left of its process group
 * until kill_at, then SIGKILL it. (The guard reaps orphans, so a zombie
 * does not keep the group alive.) */
static void finish_group(uint64_t kill_at, int kill_sent) {
    pid_t pgid = -g.target;
    if (!g.own_group || kill_sent || pgid <= 0) return;
    while (kill(-pgid, 0) == 0) {
        uint64_t now = now_ms();
        if (now >= kill_at) {
            say("processes COMMAND started did not exit after SIGTERM: sending SIGKILL");
            kill(-pgid, SIGKILL);
            return;
        }
        wait_io(kill_at - now < 20 ? (long long)(kill_at - now) : 20);
    }
}

/* Something COMMAND started still runs in its process group (COMMAND
 * ended). (Only when it has a group of its own: in a terminal's foreground
 * it shares rlock's.) */
static int group_left(void) {
    return g.own_group && g.target < 0 && (kill(g.target, 0) == 0 || errno == EPERM);
}

/* Release the lock run_locked holds, as it was taken: on a cluster where
 * the slot's primary is now (MOVED and ASK followed; a plain release is
 * sent only where the map pointed, which answers ASK during a migration),
 * else on the servers or the Sentinel's primary. */
static rlock_status release_lock(void) {
    return gc.n ? rlock_cluster_release(&gc.cl, &g.lk) : rlock_release(&g.lk);
}

/* Run COMMAND and keep the lease while it runs. Returns the exit status. */
static int run_locked(void) {
    const options *o = &g.o;
    char fence[32];
    int status = 0, exec_errno, lost = 0, taken = 0, failing = 0, inflight = 0, term_sent = 0, kill_sent = 0;
    uint64_t kill_at = 0;
    long long early = o->kill_after_ms < o->ttl_ms / 3 ? o->kill_after_ms : o->ttl_ms / 3;
    rlock_status st;
    pid_t pid;

    if (setenv("RLOCK_RESOURCE", o->resource, 1) != 0 || setenv("RLOCK_TOKEN", rlock_lock_token(&g.lk), 1) != 0)
        goto oserr;
    if (o->fence) {
        snprintf(fence, sizeof fence, "%lld", rlock_fence_token(&g.lk));
        if (setenv("RLOCK_FENCE", fence, 1) != 0) goto oserr;
    } else {
        unsetenv("RLOCK_FENCE"); /* never an outer rlock's */
    }
    watch_start();
    pid = start_command(o->command, &exec_errno);
    if (pid < 0) goto oserr;
    if (exec_errno) {
        while (!reap(&status)) wait_io(10);
        say("cannot run '%.200s': %s", o->command[0], strerror(exec_errno));
        status = (exec_errno == ENOENT ? RC_NOT_FOUND : RC_CANNOT_EXEC) << 8;
    }

    while (g.child > 0 || g.group_wait) {
        uint32_t next = 0;
        uint64_t now;
        long long validity, timeout = -1;
        /* COMMAND ended, but what it left running in its group (`job &`)
         * keeps the lock, as flock(1)'s inherited descriptor does */
        if (g.child > 0 && reap(&status) && (g.group_wait = group_left()) != 0)
            VERBOSE(("COMMAND ended; '%s' is held until the processes it left in its process group end",
                     o->resource));
        if (g.group_wait && g.child <= 0 && g.stat_fd >= 0) { /* the guard still there? */
            guard_msg m;
            if (read(g.stat_fd, &m, sizeof m) == 0) {
                guard_died();
                status = RC_SOFTWARE << 8;
            }
        }
        if (g.child <= 0 && !(g.group_wait = group_left())) break;
        if (!lost) {
            uint64_t end_before = now_ms() + (uint64_t)rlock_validity_ms(&g.lk);
            int followed = 0, renewed;
            if (g.switched && !inflight) {
                /* +switch-master: renew on the new primary now (blocking,
                 * bounded by the connect and command timeouts), so COMMAND
                 * learns at once whether the lock is there; a renewal that
                 * was in flight on the old primary ends first */
                g.switched = 0;
                followed = 1;
                st = rlock_extend(&g.lk, o->ttl_ms);
                next = 0; /* then back to the renewal schedule */
            } else {
                st = rlock_renew_poll(&g.lk, &next);
            }
            if (st == RLOCK_E_MOVED && gc.n) /* the slot moved: renew where it went (blocking, bounded) */
                st = rlock_cluster_extend(&gc.cl, &g.lk, o->ttl_ms);
            renewed = followed ? st == RLOCK_OK : rlock_renew_outcome(&g.lk) == RLOCK_RENEW_RENEWED;
            now = now_ms();
            validity = rlock_validity_ms(&g.lk);
            timeout = next;
            if (st == RLOCK_WOULD_BLOCK) {
                inflight = 1;
            } else {
                inflight = 0;
                if (st == RLOCK_LOST || rlock_lock_state(&g.lk) == RLOCK_STATE_LOST) {
                    lost = 1;
                    /* Refused while validity was left: not ours on the
                     * servers any more. Else it simply ran out. */
                    taken = st == RLOCK_LOST && now < end_before;
                } else {
                    if (renewed) {
                        failing = 0;
                        if (followed)
                            VERBOSE(("renewed '%s' on the new primary %s:%d (valid %lld ms)", o->resource,
                                     g.pc[0].host, g.pc[0].port, validity));
                        else
                            VERBOSE(("renewed '%s' on %zu/%zu servers (valid %lld ms)", o->resource,
                                     rlock_last_votes(&g.lk), o->n_servers ? o->n_servers : 1, validity));
                    }
                    if (st != RLOCK_OK) {
                        if (!failing && !g.switched) { /* (switched: it is renewed on the new primary next) */
                            report_nodes();
                            say("could not renew '%s' (%s); retrying while %lld ms of the lease are left",
                                o->resource, rlock_status_str(st), validity);
                        }
                        failing = 1;
                    }
                }
            }
        } else {
            now = now_ms();
            validity = 0;
        }
        if (!term_sent && (lost || (failing && validity <= early))) {
            if (lost) say("lost the lock '%s' (%s); stopping COMMAND: SIGTERM, SIGKILL after %lld ms", o->resource,
                          taken ? "the lock was deleted or taken by another client"
                                : "the lease ran out before it could be renewed", o->kill_after_ms);
            else say("the lease on '%s' ends in %lld ms and cannot be renewed; stopping COMMAND: "
                     "SIGTERM, SIGKILL when the lease ends", o->resource, validity);
            signal_command(SIGTERM);
            term_sent = 1;
            kill_at = now + (uint64_t)(lost ? o->kill_after_ms : validity);
        }
        if (term_sent && !kill_sent && now >= kill_at) {
            say("COMMAND did not exit after SIGTERM: sending SIGKILL");
            signal_command(SIGKILL);
            tell_guard(GUARD_KILL); /* and whatever left its process group */
            kill_sent = 1;
        }
        if (lost) timeout = -1;
        if (failing && !term_sent && validity > early && (timeout < 0 || validity - early < timeout))
            timeout = validity - early;
        if (term_sent && !kill_sent && (timeout < 0 || (long long)(kill_at - now) < timeout))
            timeout = (long long)(kill_at - now);
        if (g.group_wait && (timeout < 0 || timeout > 50)) timeout = 50; /* (their end is not reported) */
        wait_io(timeout);
    }
    if (term_sent) {
        finish_group(kill_at, kill_sent);
        tell_guard(GUARD_KILL); /* nothing COMMAND started outlives the lease */
    }
    stop_guard();

    /* COMMAND is gone: release (owner-checked, so a lost lock is safe to try). */
    if (inflight) rlock_cancel(&g.lk);
    if (!lost && rlock_lock_state(&g.lk) == RLOCK_STATE_LOST) {
        lost = 1;
        say("the lease on '%s' ran out before COMMAND ended (rlock could not renew it in time)", o->resource);
    }
    st = release_lock();
    if (st == RLOCK_OK) {
        VERBOSE(("released '%s'", o->resource));
    } else if (st == RLOCK_LOST) {
        if (!lost && !term_sent)
            say("'%s' was no longer held when COMMAND ended (it expired or was removed on the server)", o->resource);
        lost = 1;
    } else {
        report_nodes();
        say("could not release '%s' (%s); it expires by itself within %lld ms", o->resource,
            rlock_status_str(st), o->ttl_ms);
    }
    if (lost || term_sent) {
        const char *what = lost ? "the lock was lost while COMMAND ran" : "COMMAND was stopped: the lease could not be renewed";
        if (WIFEXITED(status)) say("exit %d: %s (COMMAND exited %d)", RC_LOST, what, WEXITSTATUS(status));
        else if (WIFSIGNALED(status)) say("exit %d: %s (COMMAND was killed by signal %d)", RC_LOST, what, WTERMSIG(status));
        return RC_LOST;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return RC_SOFTWARE;

oserr:
    say("cannot start COMMAND: %s", strerror(errno));
    st = release_lock();
    if (st != RLOCK_OK) say("could not release '%s' (%s); it expires within %lld ms", o->resource,
                            rlock_status_str(st), o->ttl_ms);
    return RC_OSERR;
}

/* ------------------------------------------------------------------------ */
/* rlock status / rlock unlock --force                                       */
/* ------------------------------------------------------------------------ */

/* Connect for an admin command: 0, or the exit status (said why). */
static int admin_connect(void) {
    rlock_status st = rlock_client_connect(&g.cl, (uint32_t)g.o.connect_timeout_ms);
    if (st == RLOCK_OK) return 0;
    report_nodes();
    say("cannot reach %s", g.o.n_servers > 1 ? "a quorum of the servers" : "the server");
    return st == RLOCK_E_BADARG ? RC_USAGE : auth_refused() ? RC_NOPERM : RC_UNAVAILABLE;
}

/* Print what each of n servers holds under RESOURCE (label(i): the
 * server's name, NULL: not said): exit 0 free, 1 held (on quorum of them). */
static int print_status(const rlock_info *info, size_t n, size_t quorum, const char *(*label)(size_t)) {
    size_t i, held = 0, foreign = 0;
    for (i = 0; i < n; i++) {
        const rlock_info *in = &info[i];
        const char *on = label(i);
        char rd[96];
        if (in->st != RLOCK_OK) {
            printf("%s%s%s: no answer (%s)\n", g.o.resource, on ? " on " : "", on ? on : "", rlock_status_str(in->st));
            continue;
        }
        if (strcmp(in->kind, "other") == 0 || (in->pttl_ms == -1 && strcmp(in->kind, "free") != 0)) {
            foreign++;
            printf("%s%s%s: not an rlock lock (a key of another kind, or without a TTL)\n", g.o.resource,
                   on ? " on " : "", on ? on : "");
            continue;
        }
        if (in->readers_waiting > 0)
            snprintf(rd, sizeof rd, "; %lld reader%s waiting%s", in->readers_waiting, in->readers_waiting == 1 ? "" : "s",
                     in->readers_turn ? ", their turn (writers wait)" : "");
        else
            rd[0] = '\0';
        if (strcmp(in->kind, "free") == 0 || in->holders == 0) {
            printf("%s%s%s: free%s, %lld waiting%s\n", g.o.resource, on ? " on " : "", on ? on : "",
                   in->writer_waiting ? " (a writer is waiting: new readers wait)" : "", in->waiters, rd);
            continue;
        }
        held++;
        printf("%s%s%s: held (%s) by %s%s, %lld holder%s, hold count %lld, ttl %lld ms, %lld waiting%s%s\n",
               g.o.resource, on ? " on " : "", on ? on : "", in->kind, in->owner, strlen(in->owner) >= 16 ? "..." : "",
               in->holders, in->holders == 1 ? "" : "s", in->holds, in->pttl_ms, in->waiters,
               in->writer_waiting ? " (a writer among them: new readers wait)" : "", rd);
    }
    if (foreign && !held) return RC_DATAERR;
    return held >= quorum ? 1 : 0;
}

static const char *server_label(size_t i) { return g.o.n_servers > 1 ? g.o.servers[i].label : NULL; }

/* What each server holds under RESOURCE: exit 0 free, 1 held (on a quorum). */
static int show_status(void) {
    rlock_info info[MAX_SERVERS];
    rlock_status st;
    int rc = admin_connect();
    if (rc) return rc;
    st = rlock_inspect(&g.lk, info, MAX_SERVERS);
    if (st != RLOCK_OK) {
        report_nodes();
        say("cannot inspect '%s': %s", g.o.resource, rlock_status_str(st));
        return status_exit(st);
    }
    return print_status(info, g.o.n_servers, rlock_client_quorum(&g.cl), server_label);
}

/* The outcome of rlock unlock --force: 0 removed, 1 not held. */
static int unlock_result(rlock_status st) {
    if (st == RLOCK_OK) { VERBOSE(("removed '%s' (forced)", g.o.resource)); return 0; }
    if (st == RLOCK_NOT_HELD) { VERBOSE(("'%s' was not held", g.o.resource)); return 1; }
    report_nodes();
    if (st == RLOCK_E_FOREIGN) say("the key '%s' has no TTL: not an rlock lock; left alone", g.o.resource);
    else say("could not unlock '%s': %s", g.o.resource, rlock_status_str(st));
    return status_exit(st);
}

/* Operators: delete RESOURCE whoever holds it. 0 removed, 1 not held. */
static int force_unlock(void) {
    int rc = admin_connect();
    return rc ? rc : unlock_result(rlock_force_unlock(&g.lk));
}

#include "rlock_check.c" /* `rlock check`: is this Redis fit for locks? */

#ifdef RLOCK_CLI_TLS
/* The cluster's connect hook over TLS (--cluster with --tls-* or rediss://):
 * node i gets gc.tc[i], verified as the options say. */
static int tls_cluster_connect(void *user, size_t i, const char *host, int port, rlock_transport *out) {
    const options *o = &g.o;
    rlock_tls_config tcfg;
    (void)user;
    if (i >= RLOCK_CLUSTER_MAX_PRIMARIES) return -1;
    memset(&tcfg, 0, sizeof tcfg);
    tcfg.ca_file = o->tls_ca;
    tcfg.cert_file = o->tls_cert;
    tcfg.key_file = o->tls_key;
    tcfg.insecure = o->tls_insecure;
    if (rlock_tls_init(&gc.tc[i], host, port, (uint32_t)o->connect_timeout_ms, &tcfg) != 0) {
        say("%s:%d: %s", host, port, gc.tc[i].err);
        return -1;
    }
    *out = gc.tc[i].tr;
    return 0;
}
#endif

/* The cluster primary RESOURCE was sent to last, as HOST:PORT. */
static const char *cluster_label(size_t i) {
    static char at[80];
    size_t k = (size_t)(g.lk.client - gc.cl.client);
    (void)i;
    snprintf(at, sizeof at, "%s:%d", gc.cl.host[k], gc.cl.port[k]);
    return at;
}

/* rlock status --cluster: what the primary of RESOURCE's slot holds. */
static int cluster_status(void) {
    rlock_info info;
    rlock_status st = rlock_cluster_inspect(&gc.cl, &g.lk, &info);
    if (st != RLOCK_OK) {
        report_nodes();
        say("cannot inspect '%s' on the cluster: %s", g.o.resource, rlock_status_str(st));
        return status_exit(st);
    }
    return print_status(&info, 1, 1, cluster_label);
}

/* --cluster: the lock command on a Redis Cluster (after the options). */
static int cluster_main(rlock_config *cfg) {
    const options *o = &g.o;
    rlock_status st;
    int rc = 0;
    size_t i;
    cfg->pubsub = !o->nonblock && o->mode == MODE_RUN; /* sharded pub/sub: SSUBSCRIBE on the key's primary (RESP3) */
#ifdef RLOCK_CLI_TLS
    if (gc.tls) st = rlock_cluster_init(&gc.cl, gc.host, gc.port, gc.n, cfg, tls_cluster_connect, NULL);
    else
#endif
        st = rlock_cluster_init(&gc.cl, gc.host, gc.port, gc.n, cfg, rlock_posix_cluster_connect, gc.pc);
    if (st == RLOCK_OK) {
        gc.cl.tls = gc.tls; /* the nodes' TLS ports from the map */
        gc.cl.username = o->user;
        gc.cl.password = o->has_password ? o->password : NULL;
        for (i = 0; i < gc.cl.n; i++) { gc.cl.node[i].username = gc.cl.username; gc.cl.node[i].password = gc.cl.password; }
        st = o->limit ? rlock_semaphore_init(&g.lk, &gc.cl.client[0], o->resource, o->resource_len, o->limit)
           : rlock_cluster_lock_init(&gc.cl, &g.lk, o->resource, o->resource_len,
                                     o->shared ? RLOCK_KIND_READ : o->exclusive ? RLOCK_KIND_WRITE : RLOCK_KIND_SIMPLE);
    }
    if (st == RLOCK_OK && o->fair) st = rlock_lock_set_fair(&g.lk, 1, 0);
    if (st != RLOCK_OK) {
        say("cannot set up the cluster lock (%s%s%s)", rlock_status_str(st), rlock_cluster_error(&gc.cl)[0] ? ": " : "",
            rlock_cluster_error(&gc.cl));
        rc = st == RLOCK_E_RANDOM ? RC_OSERR : RC_SOFTWARE;
    } else if (o->mode == MODE_STATUS) rc = cluster_status();
    else if (o->mode == MODE_UNLOCK) rc = unlock_result(rlock_cluster_force_unlock(&gc.cl, &g.lk));
    else if (acquire_cluster(&rc)) rc = run_locked();
    rlock_cluster_close(&gc.cl);
    for (i = 0; i < RLOCK_CLUSTER_MAX_PRIMARIES; i++) {
        rlock_posix_close(&gc.pc[i]);
#ifdef RLOCK_CLI_TLS
        rlock_tls_free(&gc.tc[i]);
#endif
    }
    return rc;
}

int main(int argc, char **argv) {
    options *o = &g.o;
    rlock_config cfg;
    size_t i;
    int rc, fd;
    /* Started with stdin/stdout/stderr closed (some daemons do that), a
     * socket could become fd 2 and messages would go to Redis: fill them. */
    for (fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) != fd) return RC_OSERR;
    g.life_fd = g.stat_fd = -1;
    if (argc > 1 && strcmp(argv[1], "check") == 0) {
        g.check = 1;
        return check_main(argc - 1, argv + 1);
    }
#ifdef __linux__
    if (argc > 0) { /* where the guard writes its name (guard_main): the strings, when they are one block */
        char *end = argv[0] + strlen(argv[0]) + 1;
        for (i = 1; i < (size_t)argc && argv[i] == end; i++) end += strlen(argv[i]) + 1;
        if (i == (size_t)argc) {
            g.args = argv[0];
            g.args_len = (size_t)(end - argv[0]);
        }
    }
#endif
    parse_args(o, argc, argv);
    check_options(o);

    if (setup_signals() != 0) { say("cannot set up signals: %s", strerror(errno)); return RC_OSERR; }
    rlock_config_init(&cfg);
    cfg.node_timeout_ms = (uint32_t)o->command_timeout_ms;
    cfg.fencing = o->fence;
    cfg.replicas = (uint32_t)o->replicas;
    if (gc.n) return cluster_main(&cfg);
    for (i = 0; i < o->n_servers; i++)
        if (init_conn(&g.pc[i], &g.node[i], &o->servers[i]) != 0) {
            say("%s: cannot set up a connection%s%s", o->servers[i].label, g.pc[i].err[0] ? ": " : "", g.pc[i].err);
            return RC_SOFTWARE;
        }
    /* Waiting is on release notices pushed on the command connection (RESP3,
     * HELLO 3: one socket per server); a server that refuses HELLO 3 (Redis
     * < 6) is waited on by backoff. */
    cfg.pubsub = !o->nonblock && o->mode == MODE_RUN;
    rc = rlock_client_init(&g.cl, g.node, o->n_servers, &cfg) == RLOCK_OK ? 0 : RC_OSERR;
    if (rc == 0) {
        rlock_status st = o->limit ? rlock_semaphore_init(&g.lk, &g.cl, o->resource, o->resource_len, o->limit)
                        : rlock_lock_init(&g.lk, &g.cl, o->resource, o->resource_len,
                                          o->shared ? RLOCK_KIND_READ : o->exclusive ? RLOCK_KIND_WRITE
                                                                                     : RLOCK_KIND_SIMPLE);
        if (st != RLOCK_OK) rc = RC_SOFTWARE;
    }
    if (rc == 0 && o->fair && rlock_lock_set_fair(&g.lk, 1, 0) != RLOCK_OK) rc = RC_SOFTWARE;
    if (rc != 0) {
        say("cannot set up the lock (%s)", rc == RC_OSERR ? "the random source failed" : "internal error");
        return rc;
    }
    if (o->mode != MODE_RUN) {
        rc = o->mode == MODE_STATUS ? show_status() : force_unlock();
        close_all();
        return rc;
    }

    if (acquire(&rc)) {
        if (o->fence)
            VERBOSE(("acquired '%s' on %zu/%zu servers (lease %lld ms, valid %lld ms, fence %lld)", o->resource,
                     rlock_last_votes(&g.lk), o->n_servers, o->ttl_ms, rlock_validity_ms(&g.lk),
                     rlock_fence_token(&g.lk)));
        else
            VERBOSE(("acquired '%s' on %zu/%zu servers (lease %lld ms, valid %lld ms)", o->resource,
                     rlock_last_votes(&g.lk), o->n_servers, o->ttl_ms, rlock_validity_ms(&g.lk)));
        rc = run_locked();
    }
    close_all();
    return rc;
}
