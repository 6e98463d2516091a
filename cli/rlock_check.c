/* rlock_check.c - `rlock check [OPTIONS] [SERVER...]`: is this Redis fit for locks?
 *
 * Included by cli/rlock.c (one translation unit: it uses its server parser,
 * password sources and messages); main() there hands argv to check_main()
 * when the first argument is "check". It connects as the lock would (same
 * addresses, user and password), asks each server with read-only commands
 * and harmless probes, and says per server and overall whether it is fit:
 *   unfit (exit 2)    cannot connect, a replica, a Sentinel, a
 *                     maxmemory-policy that evicts keys with a TTL (every lock
 *                     has one) under a maxmemory limit, neither EVAL nor FCALL
 *                     allowed, Redis < 2.6.12 (no SET NX PX), two addresses of
 *                     one server (one run_id: two Redlock votes)
 *   warnings (exit 1) no persistence or appendfsync other than always (a
 *                     restart or crash forgets locks), an evicting policy with
 *                     no maxmemory yet, PUBLISH refused (waiters poll), WAIT
 *                     refused, appendfsync unreadable (CONFIG refused), cluster
 *                     mode without --cluster
 *   fit (exit 0)      none of those.
 * Credentials refused (exit 77, as rlock exits for them): AUTH refused, no
 * password for a server that wants one (NOAUTH), a user refused both EVAL
 * and FCALL (NOPERM), no Sentinel answered and one refused AUTH, no
 * cluster seed answered and one refused AUTH. The verdict says unfit then.
 * Probes: EVAL "return 1" and FCALL of a function that does not exist on
 * the probe key (an error that names the function means FCALL is allowed),
 * PUBLISH to the probe key's name as a channel (no subscriber: nobody
 * hears it), WAIT 0 0; FUNCTION LIST and CLIENT LIST for rlock's function
 * libraries of other versions; SCRIPT EXISTS of rlock's scripts. Nothing is
 * written, except that --delete-old-functions deletes those no connected
 * client runs, --load loads the scripts (SCRIPT LOAD: builds without the
 * EVAL fallback cannot) and --load-functions this version's function
 * libraries. --print-scripts prints the scripts and connects to nothing.
 * Forms: servers as for the lock (-s/positional, $RLOCK_SERVERS);
 * --sentinel ADDR (repeatable) --master NAME checks the primary those
 * Sentinels name; --cluster ADDR (repeatable seeds) checks every primary of
 * the cluster (CLUSTER NODES). */

#define CHK_MAX 16                 /* servers checked at most (cluster primaries included) */
#define CHK_NOTES 20               /* a server's notes: probes, old function versions, loads */
#define CHK_NOTE_LEN 200
#define CHK_BUF 65536              /* INFO and CLUSTER NODES replies */

enum { CHK_FIT = 0, CHK_WARN = 1, CHK_UNFIT = 2 };
static const char *const chk_level_name[3] = { "fit", "warnings", "unfit" };

typedef struct chk_result {
    char label[320];               /* "sentinel " / "cluster " + a server label */
    int level;
    int connected;
    int auth;                      /* refused AUTH, or the user's permissions: exit 77 (see check_main) */
    char version[32], role[16], mode[16], policy[32], fsync[16], run_id[48], master[300];
    long long maxmemory;
    int aof;                       /* -1 unknown */
    int eval, fcall, publish, wait_ok;
    int scripts;                   /* rlock's scripts in the script cache (SCRIPT EXISTS), -1 unknown */
    int loaded;                    /* --load: scripts loaded, SHA1 checked */
    int functions;                 /* --load-functions: libraries loaded */
    uint32_t cached;               /* bit i: script i was in the cache before any --load */
    long long rtt_us;
    int n_notes;
    int note_level[CHK_NOTES];
    char note[CHK_NOTES][CHK_NOTE_LEN];
} chk_result;

typedef struct chk_conn {
    rlock_posix_conn pc;
#ifdef RLOCK_CLI_TLS
    rlock_tls_conn tls;
    int use_tls;
#endif
    rlock_transport t;
    uint32_t timeout_ms;
    size_t len;                    /* bytes in buf */
    char err[CHK_NOTE_LEN];
    unsigned char buf[CHK_BUF];
} chk_conn;

static struct {
    int json;
    int delete_old;                /* --delete-old-functions */
    int load, print_scripts;       /* --load, --print-scripts */
    int load_functions;            /* --load-functions */
    const char *master;
    const char *probe_key;
    server sentinels[MAX_SERVERS], seeds[MAX_SERVERS];
    size_t n_sentinels, n_seeds;
    server found[CHK_MAX];         /* discovered: the sentinel's primary, the cluster's primaries */
    size_t n_found;
    chk_result res[CHK_MAX];
    size_t n_res;
    chk_conn c;
    int auth;                      /* a server or the Sentinels refused AUTH: exit 77 */
} ck;

static const char *const check_help[] = {
    "Usage: rlock check [OPTIONS] [SERVER...]",
    "Say, per server and overall, whether Redis is fit for locks, and why: version",
    "and role (a replica is not a lock server), maxmemory-policy (only noeviction",
    "keeps locks from being evicted), persistence (appendonly/appendfsync: a restart",
    "without it forgets locks), cluster/sentinel mode, whether this user may run",
    "EVAL, FCALL and PUBLISH on a probe key, WAIT, the round-trip time, and how",
    "many of rlock's scripts are in the script cache (SCRIPT EXISTS). It connects",
    "as the lock would and writes nothing (but --load, --load-functions and",
    "--delete-old-functions).",
    "",
    "Options:",
    "  -S, -s, --server ADDR   a server to check (also as a plain argument; default",
    "                          $RLOCK_SERVERS, else 127.0.0.1:6379); ADDR as for rlock",
    "      --sentinel ADDR     a Sentinel (repeatable): check the primary it names",
    "      --master NAME       the primary's name at the Sentinels (with --sentinel)",
    "      --sentinel-user NAME, --sentinel-password-file FILE   AUTH to the Sentinels",
    "                          (password also from $RLOCK_SENTINEL_PASSWORD)",
    "      --cluster ADDR      a cluster node (repeatable seeds): check every primary",
    "      --user NAME, --password-file FILE   as for rlock",
    "      --tls-ca FILE, --tls-cert FILE, --tls-key FILE, --tls-insecure   as for rlock",
    "      --connect-timeout TIME  bound on each connection and each reply [1]:",
    "                          seconds, or with a unit (500ms), as for rlock",
    "      --probe-key KEY     the key EVAL/FCALL/PUBLISH are tried on [rlock:check:probe]",
    "      --json              one JSON object on stdout instead of text",
    "      --delete-old-functions  delete rlock's function libraries of other",
    "                          versions that no connected client runs (CLIENT LIST",
    "                          shows none named rlock-VERSION); all others are kept",
    "      --load              SCRIPT LOAD every rlock script into each server and",
    "                          check each SHA1 the server returns is rlock's. Builds",
    "                          without the EVAL fallback (RLOCK_NO_EVAL_FALLBACK,",
    "                          RLOCK_SMALLEST) send only EVALSHA and need this; Redis",
    "                          forgets scripts on a restart, SCRIPT FLUSH and a",
    "                          failover to a replica that never loaded them: run it",
    "                          again then (a deploy or boot step)",
    "      --load-functions    FUNCTION LOAD REPLACE this version's Redis 7 function",
    "                          libraries (rlock_VERSION_*, one per script): what a",
    "                          build without the EVAL fallback calls by FCALL on a",
    "                          server that refuses EVAL - if it has every lock kind",
    "                          (reentrant, fair, the primitives: one compiled out is",
    "                          another VERSION)",
    "      --print-scripts     print every rlock script, one per line: SHA1, a space,",
    "                          the text (for loading with other tools); connects to",
    "                          nothing",
    "  -v, --verbose           list each script's SHA1 and whether it is loaded",
    "  -h, --help              show this help and exit",
    "",
    "Exit status: 0 fit, 1 fit with warnings, 2 unfit (also: unreachable, and",
    "with --load / --load-functions a refused load or a SHA1 that is not rlock's),",
    "64 usage, 77 credentials refused, as rlock exits then: AUTH refused, NOAUTH",
    "(no password given), a user refused both EVAL and FCALL (NOPERM), or no",
    "Sentinel / cluster seed answered and one refused AUTH. With --load, 0 or 1",
    "means every server now has every script (--load-functions: every library).",
    NULL
};

static void chk_note(chk_result *r, int level, const char *fmt, ...) {
    va_list ap;
    if (level > r->level) r->level = level;
    if (r->n_notes == CHK_NOTES) return;
    va_start(ap, fmt);
    vsnprintf(r->note[r->n_notes], CHK_NOTE_LEN, fmt, ap);
    va_end(ap);
    r->note_level[r->n_notes++] = level;
}

/* Connect (blocking, bounded by timeout_ms) and AUTH as the lock would. */
static int chk_open(chk_conn *c, const server *sv, uint32_t timeout_ms) {
    uint64_t end = now_ms() + timeout_ms;
    int r;
    c->timeout_ms = timeout_ms;
    c->err[0] = '\0';
#ifdef RLOCK_CLI_TLS
    c->use_tls = sv->tls || g.o.tls_ca || g.o.tls_cert || g.o.tls_insecure;
    if (c->use_tls) {
        rlock_tls_config tcfg;
        memset(&tcfg, 0, sizeof tcfg);
        tcfg.ca_file = g.o.tls_ca;
        tcfg.cert_file = g.o.tls_cert;
        tcfg.key_file = g.o.tls_key;
        tcfg.insecure = g.o.tls_insecure;
        if (sv->is_unix || rlock_tls_init(&c->tls, sv->host, sv->port, timeout_ms, &tcfg) != 0) {
            snprintf(c->err, sizeof c->err, "%s", sv->is_unix ? "TLS over a unix socket is not supported" : c->tls.err);
            return -1;
        }
        c->t = *rlock_tls_transport(&c->tls);
    } else
#endif
    if ((sv->is_unix ? rlock_posix_init_unix(&c->pc, sv->path, timeout_ms)
                     : rlock_posix_init_tcp(&c->pc, sv->host, sv->port, timeout_ms)) != 0) {
        snprintf(c->err, sizeof c->err, "cannot set up a connection");
        return -1;
    } else {
        c->t = *rlock_posix_transport(&c->pc);
    }
    while ((r = c->t.connect(c->t.ctx)) == RLOCK_IO_WOULD_BLOCK) {
        uint64_t now = now_ms();
        if (now >= end) { snprintf(c->err, sizeof c->err, "connect timed out"); return -1; }
        c->t.wait(c->t.ctx, RLOCK_WANT_WRITE, (uint32_t)(end - now));
    }
    if (r < 0) {
        const char *e = c->t.error(c->t.ctx);
        snprintf(c->err, sizeof c->err, "%s", e && *e ? e : "connect failed");
        return -1;
    }
    return 0;
}

static void chk_close(chk_conn *c) {
#ifdef RLOCK_CLI_TLS
    if (c->use_tls) { rlock_tls_free(&c->tls); c->use_tls = 0; }
#endif
    rlock_posix_close(&c->pc);
}

#define CHK_ARGS (2 + RLOCK_SCRIPT_COUNT) /* SCRIPT EXISTS of every SHA1 */
static int chk_request(chk_conn *c, rlock_reply *rep, size_t n);

/* Send one command, read its reply into *rep (pointing into c->buf). 0 ok
 * (a Redis error reply too), -1 on I/O error or timeout (c->err says). */
static int chk_cmd(chk_conn *c, rlock_reply *rep, int argc, const char *const *argv) {
    size_t lens[CHK_ARGS], n;
    int i;
    if (argc > CHK_ARGS) { snprintf(c->err, sizeof c->err, "too many arguments"); return -1; }
    for (i = 0; i < argc; i++) lens[i] = strlen(argv[i]);
    n = rlock_resp_encode(c->buf, sizeof c->buf, argc, argv, lens);
    return chk_request(c, rep, n);
}

/* Send the n bytes of a request encoded in c->buf, read its reply (as chk_cmd). */
static int chk_request(chk_conn *c, rlock_reply *rep, size_t n) {
    size_t off = 0;
    uint64_t end = now_ms() + c->timeout_ms;
    if (n == 0) { snprintf(c->err, sizeof c->err, "command too long"); return -1; }
    while (off < n) {
        long w = c->t.send(c->t.ctx, c->buf + off, n - off);
        uint64_t now = now_ms();
        if (w < 0) { snprintf(c->err, sizeof c->err, "send: %s", c->t.error(c->t.ctx)); return -1; }
        off += (size_t)w;
        if (off < n) {
            if (now >= end) { snprintf(c->err, sizeof c->err, "send timed out"); return -1; }
            c->t.wait(c->t.ctx, RLOCK_WANT_WRITE, (uint32_t)(end - now));
        }
    }
    c->len = 0;
    for (;;) {
        long got = rlock_resp_parse(c->buf, c->len, sizeof c->buf, rep), r;
        uint64_t now;
        if (got > 0) return 0;
        if (got < 0) { snprintf(c->err, sizeof c->err, "malformed or oversized reply"); return -1; }
        r = c->t.recv(c->t.ctx, c->buf + c->len, sizeof c->buf - c->len);
        if (r > 0) { c->len += (size_t)r; continue; }
        if (r == RLOCK_IO_CLOSED) { snprintf(c->err, sizeof c->err, "the server closed the connection"); return -1; }
        if (r < 0) { snprintf(c->err, sizeof c->err, "recv: %s", c->t.error(c->t.ctx)); return -1; }
        now = now_ms();
        if (now >= end) { snprintf(c->err, sizeof c->err, "no reply within %u ms", (unsigned)c->timeout_ms); return -1; }
        c->t.wait(c->t.ctx, RLOCK_WANT_READ, (uint32_t)(end - now));
    }
}

static int chk_is_error(const rlock_reply *r) { return r->v.type == RLOCK_RESP_ERROR; }
/* Does r's text hold word anywhere? (rlock.h asks its questions of an
 * error in one scan, rlock__error_scan: this one is the CLI's own.) */
static int chk_says(const rlock_reply *r, const char *word) {
    size_t w = strlen(word), i;
    for (i = 0; i + w <= r->v.len; i++)
        if (memcmp(r->v.str + i, word, w) == 0) return 1;
    return 0;
}

/* An error that refuses the user (NOAUTH: a password is needed, WRONGPASS,
 * NOPERM): rlock itself exits 77 for these. */
static int chk_refused(const rlock_reply *r) {
    return chk_is_error(r) && r->v.str &&
           ((r->v.len >= 6 && (memcmp(r->v.str, "NOAUTH", 6) == 0 || memcmp(r->v.str, "NOPERM", 6) == 0)) ||
            (r->v.len >= 9 && memcmp(r->v.str, "WRONGPASS", 9) == 0));
}

/* "field:value" of an INFO text into out ("" when absent). */
static void chk_info_field(const rlock_reply *r, const char *field, char *out, size_t cap) {
    size_t fl = strlen(field), i;
    out[0] = '\0';
    if (r->v.type != RLOCK_RESP_BULK) return;
    for (i = 0; i + fl + 1 <= r->v.len; i++) {
        if ((i == 0 || r->v.str[i - 1] == '\n') && memcmp(r->v.str + i, field, fl) == 0 && r->v.str[i + fl] == ':') {
            size_t j = i + fl + 1, k = 0;
            while (j < r->v.len && r->v.str[j] != '\r' && r->v.str[j] != '\n' && k + 1 < cap) out[k++] = r->v.str[j++];
            out[k] = '\0';
            return;
        }
    }
}

/* Copy a reply's text (error, status, bulk) for a note. */
static const char *chk_text(const rlock_reply *r, char *out, size_t cap) {
    size_t n = r->v.len < cap - 1 ? r->v.len : cap - 1;
    if (!r->v.str) n = 0;
    if (n) memcpy(out, r->v.str, n);
    out[n] = '\0';
    return out;
}

/* Cluster: probe-key{N} for the first N whose slot is in the first slot
 * range of the "myself" line of CLUSTER NODES. 1 found. */
static int chk_cluster_probe(const rlock_reply *rep, char *out, size_t cap) {
    const char *p = rep->v.str, *end = rep->v.str + rep->v.len, *me = NULL;
    unsigned long lo = 0, hi = 0, n;
    int field = 0;
    while (p < end && !me) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        const char *m = p;
        for (; m + 6 <= le; m++)
            if (memcmp(m, "myself", 6) == 0) { me = p; break; }
        if (!me) p = nl ? nl + 1 : end;
        else end = le;
    }
    if (!me) return 0;
    for (p = me; p < end && field < 8; p++) /* the slots start at the 9th field */
        if (*p == ' ') field++;
    if (field < 8 || p >= end || *p < '0' || *p > '9') return 0;
    while (p < end && *p >= '0' && *p <= '9') lo = lo * 10 + (unsigned long)(*p++ - '0');
    hi = lo;
    if (p < end && *p == '-')
        for (hi = 0, p++; p < end && *p >= '0' && *p <= '9'; p++) hi = hi * 10 + (unsigned long)(*p - '0');
    for (n = 0; n < 1000000; n++) {
        int len = snprintf(out, cap, "%s{%lu}", ck.probe_key, n);
        unsigned slot;
        if (len <= 0 || (size_t)len >= cap) return 0;
        slot = rlock_cluster_slot(out, (size_t)len);
        if (slot >= lo && slot <= hi) return 1;
    }
    return 0;
}

/* rlock's function libraries of other versions (rlock_VERSION_SHA8; this
 * build's version is rlock_function_version). A version's clients name
 * each connection that runs FCALL "rlock-VERSION" (CLIENT SETNAME), so a
 * version with no such connection has no client that could call its
 * libraries now. With --delete-old-functions those libraries are deleted
 * (FUNCTION DELETE) - and only those: a version whose clients are
 * connected, a library whose version cannot be told (an older naming), or
 * any library at all when CLIENT LIST cannot be read, is kept. A client of
 * a deleted version that connects later loads its library again (FUNCTION
 * LOAD, which its user must be allowed). */
#define CHK_LIBS 256
#define CHK_VERS 8
static void chk_functions(chk_conn *c, chk_result *r) {
    static char libs[CHK_LIBS][64];
    char mine[16], vers[CHK_VERS][16], tmp[CHK_NOTE_LEN];
    size_t n_libs = 0, n_vers = 0, i, v, unknown = 0, deleted[CHK_VERS] = { 0 }, count[CHK_VERS] = { 0 };
    long clients[CHK_VERS];
    const char *fl[4] = { "FUNCTION", "LIST", "LIBRARYNAME", "rlock_*" };
    const char *cl[2] = { "CLIENT", "LIST" };
    rlock_reply rep;
    const char *p, *end;
    int listed;
    rlock_function_version(mine, sizeof mine);
    if (chk_cmd(c, &rep, 4, fl) != 0 || chk_is_error(&rep) || rep.v.type != RLOCK_RESP_ARRAY) return; /* < 7, or refused */
    /* each library: ... $12 library_name $N NAME ... (the raw reply, nested) */
    for (p = (const char *)c->buf, end = p + c->len; p < end; p++) {
        static const char key[] = "library_name\r\n$";
        size_t len = 0;
        if ((size_t)(end - p) < sizeof key - 1 || memcmp(p, key, sizeof key - 1) != 0) continue;
        for (p += sizeof key - 1; p < end && *p >= '0' && *p <= '9'; p++) len = len * 10 + (size_t)(*p - '0');
        p += 2;
        if (p + len > end || len >= sizeof libs[0] || n_libs == CHK_LIBS) break;
        memcpy(libs[n_libs], p, len);
        libs[n_libs++][len] = '\0';
        p += len;
    }
    for (i = 0; i < n_libs; i++) {
        const char *l = libs[i];
        size_t k, ok = strlen(l) == 27 && l[18] == '_';
        for (k = 6; ok && k < 27; k++) ok = k == 18 || (l[k] >= '0' && l[k] <= '9') || (l[k] >= 'a' && l[k] <= 'f');
        if (!ok) { unknown++; continue; }
        if (memcmp(l + 6, mine, 12) == 0) continue;
        for (v = 0; v < n_vers && memcmp(vers[v], l + 6, 12) != 0; v++) {}
        if (v == n_vers) {
            if (n_vers == CHK_VERS) { unknown++; continue; }
            memcpy(vers[n_vers], l + 6, 12);
            vers[n_vers++][12] = '\0';
        }
        count[v]++;
    }
    if (unknown)
        chk_note(r, CHK_FIT, "%zu rlock function librar%s of an unknown version: kept (FUNCTION DELETE by hand once "
                 "no client of it runs)", unknown, unknown == 1 ? "y" : "ies");
    if (!n_vers) return;
    /* which versions have clients connected: "name=rlock-VERSION" */
    listed = chk_cmd(c, &rep, 2, cl) == 0 && rep.v.type == RLOCK_RESP_BULK;
    for (v = 0; v < n_vers; v++) clients[v] = listed ? 0 : -1;
    for (p = listed ? rep.v.str : NULL, end = p ? p + rep.v.len : NULL; p && p + 24 <= end; p++) {
        if (memcmp(p, " name=rlock-", 12) != 0) continue;
        for (v = 0; v < n_vers; v++)
            if (memcmp(p + 12, vers[v], 12) == 0 && (p[24] == ' ' || p[24] == '\n' || p[24] == '\r')) clients[v]++;
    }
    for (v = 0; v < n_vers; v++) {
        if (clients[v] == 0 && ck.delete_old) {
            for (i = 0; i < n_libs; i++) {
                const char *fd[3] = { "FUNCTION", "DELETE", libs[i] };
                if (strlen(libs[i]) != 27 || memcmp(libs[i] + 6, vers[v], 12) != 0) continue;
                if (chk_cmd(c, &rep, 3, fd) == 0 && rep.v.type == RLOCK_RESP_STATUS) deleted[v]++;
                else chk_note(r, CHK_WARN, "FUNCTION DELETE %s: %s", libs[i], chk_is_error(&rep) ? chk_text(&rep, tmp, sizeof tmp) : c->err);
            }
            chk_note(r, CHK_FIT, "rlock functions of version %s: no client connected, %zu of %zu librar%s deleted",
                     vers[v], deleted[v], count[v], count[v] == 1 ? "y" : "ies");
        } else if (clients[v] == 0) {
            chk_note(r, CHK_FIT, "rlock functions of version %s: %zu librar%s, no client connected "
                     "(--delete-old-functions deletes them)", vers[v], count[v], count[v] == 1 ? "y" : "ies");
        } else if (clients[v] > 0) {
            chk_note(r, CHK_FIT, "rlock functions of version %s: %zu librar%s kept, %ld client connection%s of that "
                     "version still connected", vers[v], count[v], count[v] == 1 ? "y" : "ies", clients[v],
                     clients[v] == 1 ? "" : "s");
        } else {
            chk_note(r, ck.delete_old ? CHK_WARN : CHK_FIT, "rlock functions of version %s: %zu librar%s kept: "
                     "CLIENT LIST refused, so whether its clients still run cannot be told", vers[v], count[v],
                     count[v] == 1 ? "y" : "ies");
        }
    }
}

/* Names of rlock_script_text(i)'s scripts, for messages. */
static const char *const chk_script_name[] = {
    "simple acquire", "simple extend", "simple release", "reentrant acquire", "reentrant extend",
    "reentrant release", "fair acquire", "fair release", "fair reentrant acquire", "fair reentrant release",
    "semaphore acquire", "semaphore extend", "semaphore release", "read acquire", "read extend", "read release",
    "write acquire", "write extend", "write release", "multi-lock acquire", "multi-lock extend",
    "multi-lock release", "inspect", "force unlock"
};
typedef char chk_script_names_complete[sizeof chk_script_name / sizeof chk_script_name[0] == RLOCK_SCRIPT_COUNT &&
                                       RLOCK_SCRIPT_COUNT <= 32 ? 1 : -1];

/* rlock's scripts on this server: how many are in its script cache
 * (SCRIPT EXISTS: informational, since a build with the EVAL fallback sends
 * a missing one's text itself), and with --load SCRIPT LOAD of each, the
 * SHA1 the server computes compared with rlock's (the one EVALSHA sends).
 * The first refusal or mismatch stops the load: unfit, naming the script. */
static void chk_scripts(chk_conn *c, chk_result *r) {
    const char *ex[CHK_ARGS] = { "SCRIPT", "EXISTS" };
    char tmp[CHK_NOTE_LEN];
    rlock_reply rep;
    int i, missing;
    r->scripts = -1;
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) ex[2 + i] = rlock_script_sha(i);
    if (chk_cmd(c, &rep, CHK_ARGS, ex) != 0) { chk_note(r, CHK_UNFIT, "SCRIPT EXISTS: %s", c->err); return; }
    if (chk_is_error(&rep)) {
        chk_note(r, CHK_FIT, "SCRIPT EXISTS refused (%s): whether rlock's scripts are loaded cannot be told",
                 chk_text(&rep, tmp, sizeof tmp));
    } else if (rep.v.type == RLOCK_RESP_ARRAY && rep.count == RLOCK_SCRIPT_COUNT) {
        /* the reply keeps its first elements only: read the rest raw (RESP2, parsed already: ":0\r\n" / ":1\r\n") */
        const unsigned char *p = memchr(c->buf, '\n', c->len), *end = c->buf + c->len;
        for (r->scripts = 0, i = 0; p && i < RLOCK_SCRIPT_COUNT; i++, p += 4) {
            if (end - p < 5 || p[1] != ':' || (p[2] != '0' && p[2] != '1')) { r->scripts = -1; break; }
            if (p[2] == '1') {
                r->scripts++;
                r->cached |= (uint32_t)1 << i;
            }
        }
        if (r->scripts < 0) chk_note(r, CHK_WARN, "SCRIPT EXISTS: an unexpected reply");
    } else {
        chk_note(r, CHK_WARN, "SCRIPT EXISTS: an unexpected reply");
    }
    missing = r->scripts < 0 ? -1 : RLOCK_SCRIPT_COUNT - r->scripts;
    if (ck.load) {
        for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
            const char *ld[3] = { "SCRIPT", "LOAD", rlock_script_text(i) };
            const char *sha = rlock_script_sha(i);
            if (chk_cmd(c, &rep, 3, ld) != 0) {
                chk_note(r, CHK_UNFIT, "SCRIPT LOAD of script %d (%s): %s", i, chk_script_name[i], c->err);
                return;
            }
            if (chk_is_error(&rep)) {
                chk_note(r, CHK_UNFIT, "SCRIPT LOAD of script %d (%s) refused: %s", i, chk_script_name[i],
                         chk_text(&rep, tmp, sizeof tmp));
                return;
            }
            if (rep.v.type != RLOCK_RESP_BULK || rep.v.len != 40 || memcmp(rep.v.str, sha, 40) != 0) {
                chk_note(r, CHK_UNFIT, "SCRIPT LOAD of script %d (%s): the server's SHA1 '%.40s' is not rlock's %s "
                         "(EVALSHA would not find it)", i, chk_script_name[i],
                         rep.v.type == RLOCK_RESP_BULK ? chk_text(&rep, tmp, sizeof tmp) : "", sha);
                return;
            }
            r->loaded++;
        }
        r->scripts = RLOCK_SCRIPT_COUNT;
        if (missing >= 0)
            chk_note(r, CHK_FIT, "SCRIPT LOAD: %d scripts loaded, each SHA1 rlock's (%d were not in the script cache)",
                     r->loaded, missing);
        else
            chk_note(r, CHK_FIT, "SCRIPT LOAD: %d scripts loaded, each SHA1 rlock's", r->loaded);
    } else if (missing == 0) {
        chk_note(r, CHK_FIT, "scripts: all %d of rlock's in the script cache (SCRIPT EXISTS)", RLOCK_SCRIPT_COUNT);
    } else if (missing > 0) {
        chk_note(r, CHK_FIT, "scripts: %d of rlock's %d in the script cache (SCRIPT EXISTS); builds without the EVAL "
                 "fallback (RLOCK_NO_EVAL_FALLBACK) need them: rlock check --load", r->scripts, RLOCK_SCRIPT_COUNT);
    }
}

/* --load-functions: FUNCTION LOAD REPLACE of this version's library of
 * each script - the very request the library pipelines before an FCALL that
 * finds its function missing (rlock__encode_lock's RLOCK__RUN_FNLOAD part, for a
 * handle of every script), so the text is the one it would load. The reply must name the library. These are the
 * libraries of builds with every script (this command's version); a build
 * that compiles out reentrant or fair locks or the primitives has another
 * version (rlock_function_version) and other names. */
static void chk_load_functions(chk_conn *c, chk_result *r) {
    char tmp[CHK_NOTE_LEN], name[32], ver[16];
    rlock_reply rep;
    static rlock_lock lk; /* (only its script set and script are read) */
    int i;
    lk.scripts = &rlock__set_all;
    for (i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
        size_t len = rlock_function_name(i, name, sizeof name);
        lk.op.round.script = i;
        if (chk_request(c, &rep, rlock__encode_lock(&lk, 0, c->buf, sizeof c->buf, RLOCK__RUN_FNLOAD)) != 0) {
            chk_note(r, CHK_UNFIT, "FUNCTION LOAD of %s (%s): %s", name, chk_script_name[i], c->err);
            return;
        }
        if (chk_is_error(&rep)) {
            chk_note(r, CHK_UNFIT, "FUNCTION LOAD of %s (%s) refused: %s", name, chk_script_name[i],
                     chk_text(&rep, tmp, sizeof tmp));
            return;
        }
        if (rep.v.type != RLOCK_RESP_BULK || rep.v.len != len || memcmp(rep.v.str, name, len) != 0) {
            chk_note(r, CHK_UNFIT, "FUNCTION LOAD of %s (%s): the server answered '%s'", name, chk_script_name[i],
                     chk_text(&rep, tmp, sizeof tmp));
            return;
        }
        r->functions++;
    }
    rlock_function_version(ver, sizeof ver);
    chk_note(r, CHK_FIT, "FUNCTION LOAD: %d libraries of version %s loaded (rlock_%s_*)", r->functions, ver, ver);
}

static void chk_server(const server *sv, const options *o, chk_result *r) {
    chk_conn *c = &ck.c;
    rlock_reply rep;
    char tmp[CHK_NOTE_LEN], probe[RLOCK_MAX_KEY_LEN + 32];
    const char *key = ck.probe_key;
    const char *user = sv->has_user ? sv->user : o->user;
    const char *pass = sv->has_pass ? sv->pass : o->has_password ? o->password : NULL;
    int major = 0, minor = 0, patch = 0, i;
    long long rtts[5];

    memset(r, 0, sizeof *r);
    snprintf(r->label, sizeof r->label, "%s", sv->label);
    r->aof = -1;
    r->scripts = -1;
    if (chk_open(c, sv, (uint32_t)o->connect_timeout_ms) != 0) {
        chk_note(r, CHK_UNFIT, "cannot connect: %s", c->err);
        chk_close(c);
        return;
    }
    if (pass) {
        const char *argv[3] = { "AUTH", user ? user : pass, pass };
        if (chk_cmd(c, &rep, user ? 3 : 2, argv) != 0) { chk_note(r, CHK_UNFIT, "AUTH: %s", c->err); goto done; }
        if (chk_is_error(&rep)) {
            chk_note(r, CHK_UNFIT, "AUTH refused: %s", chk_text(&rep, tmp, sizeof tmp));
            r->auth = 1;
            goto done;
        }
    }
    r->connected = 1;
    {
        const char *argv[2] = { "INFO", "server" };
        if (chk_cmd(c, &rep, 2, argv) != 0) { chk_note(r, CHK_UNFIT, "INFO: %s", c->err); goto done; }
        if (chk_is_error(&rep) && rep.v.len >= 6 && memcmp(rep.v.str, "NOAUTH", 6) == 0) {
            /* no password given, one needed: nothing else can be asked (each
             * probe would be refused the same way) */
            chk_note(r, CHK_UNFIT, "%s (give the password: --password-file, $RLOCK_PASSWORD)",
                     chk_text(&rep, tmp, sizeof tmp));
            r->auth = 1;
            r->connected = 0; /* (nothing known: as after a refused AUTH) */
            goto done;
        }
        if (chk_is_error(&rep)) {
            chk_note(r, CHK_WARN, "INFO refused (%s): version and role unknown", chk_text(&rep, tmp, sizeof tmp));
        } else {
            chk_info_field(&rep, "redis_version", r->version, sizeof r->version);
            chk_info_field(&rep, "redis_mode", r->mode, sizeof r->mode);
            chk_info_field(&rep, "run_id", r->run_id, sizeof r->run_id);
        }
    }
    if (sscanf(r->version, "%d.%d.%d", &major, &minor, &patch) >= 2) {
        if (major < 2 || (major == 2 && (minor < 6 || (minor == 6 && patch < 12))))
            chk_note(r, CHK_UNFIT, "Redis %s has no SET NX PX (needs >= 2.6.12)", r->version);
    }
    if (strcmp(r->mode, "sentinel") == 0) {
        chk_note(r, CHK_UNFIT, "this is a Sentinel, not a data server: use --sentinel %s --master NAME", sv->label);
        goto done;
    }
    {
        const char *argv[2] = { "INFO", "replication" };
        if (chk_cmd(c, &rep, 2, argv) != 0) { chk_note(r, CHK_UNFIT, "INFO: %s", c->err); goto done; }
        chk_info_field(&rep, "role", r->role, sizeof r->role);
        if (strcmp(r->role, "slave") == 0 || strcmp(r->role, "replica") == 0) {
            char h[256], p[16];
            chk_info_field(&rep, "master_host", h, sizeof h);
            chk_info_field(&rep, "master_port", p, sizeof p);
            snprintf(r->master, sizeof r->master, "%s:%s", h, p);
            chk_note(r, CHK_UNFIT, "a replica (of %s): a lock must go to a primary; a replica refuses writes "
                     "or, if writable, loses them", r->master);
        } else if (r->role[0]) {
            chk_note(r, CHK_FIT, "role %s", r->role);
        }
    }
    if (strcmp(r->mode, "cluster") == 0) {
        if (ck.n_seeds) chk_note(r, CHK_FIT, "a cluster primary (--cluster)");
        else chk_note(r, CHK_WARN, "cluster mode: this node serves only its own slots; check the cluster with --cluster %s",
                      sv->label);
    }
    {
        const char *argv[2] = { "INFO", "memory" };
        char mm[32];
        if (chk_cmd(c, &rep, 2, argv) != 0) { chk_note(r, CHK_UNFIT, "INFO: %s", c->err); goto done; }
        chk_info_field(&rep, "maxmemory_policy", r->policy, sizeof r->policy);
        chk_info_field(&rep, "maxmemory", mm, sizeof mm);
        r->maxmemory = atoll(mm);
        if (!r->policy[0]) chk_note(r, CHK_WARN, "maxmemory-policy unknown");
        else if (strcmp(r->policy, "noeviction") == 0)
            chk_note(r, CHK_FIT, "maxmemory-policy noeviction: locks are never evicted (writes fail with OOM instead)");
        else if (r->maxmemory > 0)
            chk_note(r, CHK_UNFIT, "maxmemory-policy %s with maxmemory %lld: Redis evicts keys %s when memory is "
                     "full, and locks are keys with a TTL; use noeviction", r->policy, r->maxmemory,
                     strncmp(r->policy, "volatile", 8) == 0 ? "that have a TTL" : "of any kind");
        else
            chk_note(r, CHK_WARN, "maxmemory-policy %s: it evicts locks as soon as a maxmemory limit is set; use "
                     "noeviction", r->policy);
    }
    {
        const char *argv[2] = { "INFO", "persistence" };
        char aof[8];
        if (chk_cmd(c, &rep, 2, argv) != 0) { chk_note(r, CHK_UNFIT, "INFO: %s", c->err); goto done; }
        chk_info_field(&rep, "aof_enabled", aof, sizeof aof);
        r->aof = aof[0] ? atoi(aof) : -1;
    }
    {
        const char *argv[3] = { "CONFIG", "GET", "appendfsync" };
        if (chk_cmd(c, &rep, 3, argv) != 0) { chk_note(r, CHK_UNFIT, "CONFIG GET: %s", c->err); goto done; }
        if (!chk_is_error(&rep) && rep.count == 2 && rep.elem[1].type == RLOCK_RESP_BULK) {
            size_t n = rep.elem[1].len < sizeof r->fsync - 1 ? rep.elem[1].len : sizeof r->fsync - 1;
            memcpy(r->fsync, rep.elem[1].str, n);
            r->fsync[n] = '\0';
        }
    }
    if (r->aof == 0)
        chk_note(r, CHK_WARN, "appendonly no: a restart forgets every lock (another client can take a held one); "
                 "Redlock needs appendfsync always, or restarts delayed by the longest TTL");
    else if (r->aof == 1 && strcmp(r->fsync, "always") == 0)
        chk_note(r, CHK_FIT, "appendonly yes, appendfsync always: a restart keeps every granted lock");
    else if (r->aof == 1 && r->fsync[0])
        chk_note(r, CHK_WARN, "appendonly yes, appendfsync %s: a crash may forget the last second of locks; "
                 "Redlock needs appendfsync always", r->fsync);
    else
        chk_note(r, CHK_WARN, "persistence unknown (appendfsync not readable: CONFIG refused?)");

    if (strcmp(r->mode, "cluster") == 0) { /* a probe key this node serves, or every probe says MOVED */
        const char *argv[2] = { "CLUSTER", "NODES" };
        if (chk_cmd(c, &rep, 2, argv) == 0 && rep.v.type == RLOCK_RESP_BULK && chk_cluster_probe(&rep, probe, sizeof probe))
            key = probe;
    }
    {   /* what this user may run on the probe key */
        const char *ev[5] = { "EVAL", "return 1", "1", key, NULL };
        const char *fc[4] = { "FCALL", "rlock_check_no_such_function", "1", key };
        const char *pb[3] = { "PUBLISH", key, "" };
        const char *wt[3] = { "WAIT", "0", "0" };
        if (chk_cmd(c, &rep, 4, ev) != 0) { chk_note(r, CHK_UNFIT, "EVAL: %s", c->err); goto done; }
        r->eval = !chk_is_error(&rep);
        if (!r->eval) chk_note(r, CHK_FIT, "EVAL refused: %s", chk_text(&rep, tmp, sizeof tmp));
        if (chk_cmd(c, &rep, 4, fc) != 0) { chk_note(r, CHK_UNFIT, "FCALL: %s", c->err); goto done; }
        /* only "the function is not there" shows that FCALL itself is allowed */
        r->fcall = chk_is_error(&rep) && chk_says(&rep, "not found");
        if (!r->fcall && !r->eval) {
            chk_note(r, CHK_UNFIT, "neither EVAL nor FCALL may run here: %s", chk_text(&rep, tmp, sizeof tmp));
            r->auth = chk_refused(&rep); /* this user's ACL: rlock gets RLOCK_E_AUTH */
        }
        else if (!r->eval)
            chk_note(r, CHK_FIT, "FCALL allowed: rlock switches to its function libraries (Redis >= 7)");
        if (chk_cmd(c, &rep, 3, pb) != 0) { chk_note(r, CHK_UNFIT, "PUBLISH: %s", c->err); goto done; }
        r->publish = rep.v.type == RLOCK_RESP_INTEGER;
        if (!r->publish)
            chk_note(r, CHK_WARN, "PUBLISH refused (%s): waiters are not woken on release, they poll",
                     chk_text(&rep, tmp, sizeof tmp));
        if (chk_cmd(c, &rep, 3, wt) != 0) { chk_note(r, CHK_UNFIT, "WAIT: %s", c->err); goto done; }
        r->wait_ok = rep.v.type == RLOCK_RESP_INTEGER;
        if (!r->wait_ok)
            chk_note(r, CHK_WARN, "WAIT refused (%s): replica acknowledgement is not available",
                     chk_text(&rep, tmp, sizeof tmp));
    }
    chk_functions(c, r);
    if (ck.load_functions) chk_load_functions(c, r);
    chk_scripts(c, r);
    for (i = 0; i < 5; i++) {
        const char *argv[1] = { "PING" };
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (chk_cmd(c, &rep, 1, argv) != 0) { chk_note(r, CHK_UNFIT, "PING: %s", c->err); goto done; }
        clock_gettime(CLOCK_MONOTONIC, &b);
        rtts[i] = (long long)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
    }
    {   /* the median of five */
        int j, k;
        for (j = 1; j < 5; j++)
            for (k = j; k > 0 && rtts[k - 1] > rtts[k]; k--) { long long t = rtts[k]; rtts[k] = rtts[k - 1]; rtts[k - 1] = t; }
        r->rtt_us = rtts[2];
    }
done:
    chk_close(c);
}

/* Ask the Sentinels for the primary's address; every answer must agree. */
static int chk_sentinels(const options *o) {
    size_t i, answered = 0, refused_any = 0;
    char first[300] = "";
    for (i = 0; i < ck.n_sentinels; i++) {
        chk_conn *c = &ck.c;
        rlock_reply rep;
        const char *argv[3] = { "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ck.master };
        char addr[300];
        chk_result *r = &ck.res[ck.n_res];
        memset(r, 0, sizeof *r);
        snprintf(r->label, sizeof r->label, "sentinel %s", ck.sentinels[i].label);
        snprintf(r->role, sizeof r->role, "sentinel");
        r->aof = -1;
        r->scripts = -1;
        const char *auth[3] = { "AUTH", o->sentinel_user ? o->sentinel_user : o->sentinel_password, o->sentinel_password };
        int refused = 0;
        if (chk_open(c, &ck.sentinels[i], (uint32_t)o->connect_timeout_ms) != 0 ||
            (o->has_sentinel_password && chk_cmd(c, &rep, o->sentinel_user ? 3 : 2, auth) != 0) ||
            (!(refused = o->has_sentinel_password && chk_is_error(&rep)) && chk_cmd(c, &rep, 3, argv) != 0)) {
            chk_note(r, CHK_WARN, "no answer: %s", c->err);
        } else if (refused) {
            char t[CHK_NOTE_LEN];
            chk_note(r, CHK_WARN, "refused AUTH: %s", chk_text(&rep, t, sizeof t));
            refused_any++;
        } else if (rep.v.type == RLOCK_RESP_ARRAY && rep.count == 2 && rep.elem[0].type == RLOCK_RESP_BULK &&
                   rep.elem[1].type == RLOCK_RESP_BULK && rep.elem[0].len < 256 && rep.elem[1].len < 8) {
            snprintf(addr, sizeof addr, "%.*s:%.*s", (int)rep.elem[0].len, rep.elem[0].str, (int)rep.elem[1].len,
                     rep.elem[1].str);
            snprintf(r->master, sizeof r->master, "%s", addr);
            chk_note(r, CHK_FIT, "names %s as primary '%s'", addr, ck.master);
            if (!first[0]) snprintf(first, sizeof first, "%s", addr);
            else if (strcmp(first, addr) != 0)
                chk_note(r, CHK_WARN, "disagrees with another Sentinel (%s): a failover is under way?", first);
            answered++;
        } else {
            char t[CHK_NOTE_LEN];
            chk_note(r, CHK_UNFIT, "does not know primary '%s'%s%s", ck.master, chk_is_error(&rep) ? ": " : "",
                     chk_is_error(&rep) ? chk_text(&rep, t, sizeof t) : "");
            refused_any += (size_t)chk_refused(&rep); /* its NOAUTH: no password given */
        }
        chk_close(c);
        ck.n_res++;
    }
    if (!answered) {
        ck.auth |= refused_any > 0; /* as rlock, which finds no primary then: 77 */
        return -1;
    }
    {
        const char *why = parse_server(first, &ck.found[ck.n_found]);
        if (why) return -1;
        ck.n_found++;
    }
    return 0;
}

/* The cluster's primaries (CLUSTER NODES from the first seed that answers).
 * 0, -1 none found, -2 none found and a seed refused AUTH (or wants it). */
static int chk_cluster(const options *o) {
    size_t i;
    int refused = 0;
    for (i = 0; i < ck.n_seeds; i++) {
        chk_conn *c = &ck.c;
        rlock_reply rep;
        const char *argv[2] = { "CLUSTER", "NODES" };
        const char *p, *end;
        if (chk_open(c, &ck.seeds[i], (uint32_t)o->connect_timeout_ms) != 0) { chk_close(c); continue; }
        if (o->has_password) {
            const char *a[3] = { "AUTH", o->user ? o->user : o->password, o->password };
            if (chk_cmd(c, &rep, o->user ? 3 : 2, a) != 0) { chk_close(c); continue; }
            if (chk_is_error(&rep)) { refused = 1; chk_close(c); continue; }
        }
        if (chk_cmd(c, &rep, 2, argv) != 0) { chk_close(c); continue; }
        if (rep.v.type != RLOCK_RESP_BULK) { refused |= chk_refused(&rep); chk_close(c); continue; }
        /* <id> <ip:port@cport[,host]> <flags> <master> <ping> <pong> <epoch> <link> <slot>... */
        for (p = rep.v.str, end = rep.v.str + rep.v.len; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp1, *at, *sp2, *le = nl ? nl : end;
            sp1 = memchr(p, ' ', (size_t)(le - p));
            if (sp1) {
                at = memchr(sp1 + 1, '@', (size_t)(le - sp1 - 1));
                sp2 = memchr(sp1 + 1, ' ', (size_t)(le - sp1 - 1));
                if (at && sp2 && at < sp2 && ck.n_found < CHK_MAX) {
                    const char *fl = sp2 + 1, *fe = memchr(fl, ' ', (size_t)(le - fl));
                    char flags[128], addr[300];
                    size_t n = fe ? (size_t)(fe - fl) : 0;
                    if (n < sizeof flags) {
                        memcpy(flags, fl, n);
                        flags[n] = '\0';
                        snprintf(addr, sizeof addr, "%.*s", (int)(at - sp1 - 1), sp1 + 1);
                        if (strstr(flags, "master") && !strstr(flags, "fail") && !strstr(flags, "noaddr") &&
                            !parse_server(addr, &ck.found[ck.n_found]))
                            ck.n_found++;
                    }
                }
            }
            p = nl ? nl + 1 : end;
        }
        chk_close(c);
        return ck.n_found ? 0 : -1;
    }
    return refused ? -2 : -1;
}

static void chk_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void chk_print(int overall) {
    size_t i;
    int j;
    if (!ck.json) {
        for (i = 0; i < ck.n_res; i++) {
            const chk_result *r = &ck.res[i];
            printf("%s: %s\n", r->label, chk_level_name[r->level]);
            if (r->connected)
                printf("  Redis %s, role %s, mode %s, round trip %lld.%03lld ms\n", r->version[0] ? r->version : "?",
                       r->role[0] ? r->role : "?", r->mode[0] ? r->mode : "?", r->rtt_us / 1000, r->rtt_us % 1000);
            for (j = 0; j < r->n_notes; j++)
                printf("  %s: %s\n", r->note_level[j] == CHK_FIT ? "ok" : r->note_level[j] == CHK_WARN ? "warning" : "unfit",
                       r->note[j]);
            for (j = 0; g.o.verbose && (r->scripts >= 0 || r->loaded) && j < RLOCK_SCRIPT_COUNT; j++)
                printf("  script %s %s: %s\n", rlock_script_sha(j), chk_script_name[j],
                       j < r->loaded ? ((r->cached >> j) & 1u ? "loaded (it was in the cache)" : "loaded")
                       : (r->cached >> j) & 1u ? "in the cache" : "not in the cache");
        }
        printf("overall: %s%s\n", chk_level_name[overall], ck.auth ? " (AUTH refused: exit 77)" : "");
        return;
    }
    printf("{\"verdict\":\"%s\",\"exit\":%d,\"servers\":[", chk_level_name[overall], ck.auth ? RC_NOPERM : overall);
    for (i = 0; i < ck.n_res; i++) {
        const chk_result *r = &ck.res[i];
        printf("%s{\"server\":", i ? "," : "");
        chk_json_str(r->label);
        printf(",\"verdict\":\"%s\",\"connected\":%s,\"auth_refused\":%s,\"version\":", chk_level_name[r->level],
               r->connected ? "true" : "false", r->auth ? "true" : "false");
        chk_json_str(r->version);
        printf(",\"role\":");
        chk_json_str(r->role);
        printf(",\"mode\":");
        chk_json_str(r->mode);
        printf(",\"maxmemory_policy\":");
        chk_json_str(r->policy);
        printf(",\"maxmemory\":%lld,\"appendonly\":%s,\"appendfsync\":", r->maxmemory,
               r->aof < 0 ? "null" : r->aof ? "true" : "false");
        chk_json_str(r->fsync);
        printf(",\"master\":");
        chk_json_str(r->master);
        printf(",\"eval\":%s,\"fcall\":%s,\"publish\":%s,\"wait\":%s,\"rtt_us\":%lld", r->eval ? "true" : "false",
               r->fcall ? "true" : "false", r->publish ? "true" : "false", r->wait_ok ? "true" : "false", r->rtt_us);
        if (r->scripts >= 0) printf(",\"scripts_cached\":%d", r->scripts);
        else printf(",\"scripts_cached\":null");
        printf(",\"scripts_loaded\":%d,\"functions_loaded\":%d,\"notes\":[", r->loaded, r->functions);
        for (j = 0; j < r->n_notes; j++) {
            printf("%s{\"level\":\"%s\",\"text\":", j ? "," : "",
                   r->note_level[j] == CHK_FIT ? "ok" : r->note_level[j] == CHK_WARN ? "warning" : "unfit");
            chk_json_str(r->note[j]);
            putchar('}');
        }
        printf("]}");
    }
    printf("]}\n");
}

static CLI_NORETURN void check_usage(const char *fmt, const char *arg) {
    fputs("rlock check: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nUsage: rlock check [OPTIONS] [SERVER...]\nTry 'rlock check --help' for more information.\n", stderr);
    exit(RC_USAGE);
}

static void chk_add(server *list, size_t *n, const char *arg, const char *opt) {
    const char *why;
    if (*n == MAX_SERVERS) check_usage("%s: too many addresses", opt);
    if ((why = parse_server(arg, &list[*n])) != NULL) {
        fprintf(stderr, "rlock check: %s '%.200s': %s\n", opt, shown(arg), why);
        exit(RC_USAGE);
    }
    (*n)++;
}

/* argv[0] is "check". */
static int check_main(int argc, char **argv) {
    options *o = &g.o;
    int i, overall = CHK_FIT;
    size_t k, m;
    memset(o, 0, sizeof *o);
    o->connect_timeout_ms = 1000;
    ck.probe_key = "rlock:check:probe";
    for (i = 1; i < argc; i++) {
        char *a = argv[i];
        static const char *const with_value[] = { "-S", "-s", "--server", "--sentinel", "--cluster", "--master",
                                                  "--probe-key", "--user", "--password-file", "--connect-timeout",
                                                  "--tls-ca", "--tls-cert", "--tls-key", "--sentinel-user",
                                                  "--sentinel-password-file", NULL };
        char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            for (k = 0; check_help[k]; k++) puts(check_help[k]);
            return 0;
        }
        if (!strcmp(a, "--json")) { ck.json = 1; continue; }
        if (!strcmp(a, "--delete-old-functions")) { ck.delete_old = 1; continue; }
        if (!strcmp(a, "--load")) { ck.load = 1; continue; }
        if (!strcmp(a, "--load-functions")) { ck.load_functions = 1; continue; }
        if (!strcmp(a, "--print-scripts")) { ck.print_scripts = 1; continue; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = 1; continue; }
        if (!strcmp(a, "--tls-insecure")) { o->tls_insecure = 1; continue; }
        if (a[0] != '-') { add_server(o, a, "SERVER"); scrub_url_password(a); continue; }
        for (k = 0; with_value[k] && strcmp(a, with_value[k]) != 0; k++) {}
        if (!with_value[k]) check_usage("unknown option '%.64s'", a);
        if (!val) check_usage("%s needs a value", a);
        i++;
        if (!strcmp(a, "-S") || !strcmp(a, "-s") || !strcmp(a, "--server")) { add_server(o, val, a); scrub_url_password(val); }
        else if (!strcmp(a, "--sentinel")) {
            chk_add(ck.sentinels, &ck.n_sentinels, val, a);
            for (k = 0; k + 1 < ck.n_sentinels; k++) /* (as rlock: the same Sentinel asked twice tells nothing) */
                if (ck.sentinels[k].port == ck.sentinels[ck.n_sentinels - 1].port &&
                    strcasecmp(ck.sentinels[k].host, ck.sentinels[ck.n_sentinels - 1].host) == 0)
                    check_usage("--sentinel '%.200s': that Sentinel is given twice", shown(val));
        }
        else if (!strcmp(a, "--cluster")) chk_add(ck.seeds, &ck.n_seeds, val, a);
        else if (!strcmp(a, "--master")) ck.master = val;
        else if (!strcmp(a, "--probe-key")) ck.probe_key = val;
        else if (!strcmp(a, "--user")) o->user = val;
        else if (!strcmp(a, "--sentinel-user")) o->sentinel_user = val;
        else if (!strcmp(a, "--sentinel-password-file")) o->sentinel_password_file = val;
        else if (!strcmp(a, "--password-file")) o->password_file = val;
        else if (!strcmp(a, "--tls-ca")) o->tls_ca = val;
        else if (!strcmp(a, "--tls-cert")) o->tls_cert = val;
        else if (!strcmp(a, "--tls-key")) o->tls_key = val;
        else o->connect_timeout_ms = duration_arg(a, val, 0);
    }
#ifndef RLOCK_CLI_TLS
    if (o->tls_ca || o->tls_cert || o->tls_key || o->tls_insecure)
        check_usage("%s", "this rlock was built without TLS (OpenSSL): --tls-* cannot be used");
#endif
    if (ck.print_scripts) {
        if (argc != 2) check_usage("%s", "--print-scripts connects to nothing: give it alone");
        for (k = 0; k < RLOCK_SCRIPT_COUNT; k++) printf("%s %s\n", rlock_script_sha((int)k), rlock_script_text((int)k));
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : RC_OSERR;
    }
    if ((o->tls_cert == NULL) != (o->tls_key == NULL)) check_usage("%s", "--tls-cert and --tls-key go together");
    if (ck.n_sentinels && !ck.master) check_usage("%s", "--sentinel needs --master NAME");
    if (ck.master && !ck.n_sentinels) check_usage("%s", "--master needs --sentinel ADDR");
    if (ck.master && (!ck.master[0] || strlen(ck.master) > 200)) check_usage("%s", "--master: the name must be 1..200 bytes");
    if (!ck.probe_key[0] || strlen(ck.probe_key) > RLOCK_MAX_KEY_LEN) check_usage("%s", "--probe-key must be 1..256 bytes");
    if (o->user && (!o->user[0] || strlen(o->user) > MAX_USER)) check_usage("%s", "--user: the name must be 1..128 bytes");
    if (o->password_file) {
        read_password_file("--password-file", o->password_file, o->password, &o->has_password);
    } else {
        const char *env = getenv("RLOCK_PASSWORD");
        if (!env || !*env) env = getenv("REDISCLI_AUTH");
        if (env && *env) {
            if (strlen(env) > MAX_PASS) check_usage("%s", "the password in the environment is too long");
            memcpy(o->password, env, strlen(env) + 1);
            o->has_password = 1;
        }
    }
    if ((o->sentinel_user || o->sentinel_password_file) && !ck.n_sentinels)
        check_usage("%s", "--sentinel-user and --sentinel-password-file go with --sentinel");
    if (o->sentinel_user && (!o->sentinel_user[0] || strlen(o->sentinel_user) > MAX_USER))
        check_usage("%s", "--sentinel-user: the name must be 1..128 bytes");
    if (o->sentinel_password_file) {
        read_password_file("--sentinel-password-file", o->sentinel_password_file, o->sentinel_password,
                           &o->has_sentinel_password);
    } else {
        const char *env = getenv("RLOCK_SENTINEL_PASSWORD");
        if (env && *env) {
            if (strlen(env) > MAX_PASS) check_usage("%s", "$RLOCK_SENTINEL_PASSWORD is too long");
            memcpy(o->sentinel_password, env, strlen(env) + 1);
            o->has_sentinel_password = 1;
        }
    }
    if (o->sentinel_user && !o->has_sentinel_password)
        check_usage("%s", "--sentinel-user needs a password (--sentinel-password-file or $RLOCK_SENTINEL_PASSWORD)");
    if (o->n_servers == 0 && !ck.n_sentinels && !ck.n_seeds) {
        const char *env = getenv("RLOCK_SERVERS");
        if (env && *env && !strchr(env, ',')) add_server(o, env, "$RLOCK_SERVERS");
        else if (env && *env) check_usage("%s", "give the servers as arguments ($RLOCK_SERVERS with several is for rlock)");
        else add_server(o, "127.0.0.1:6379", "default server");
    }

    if (ck.n_sentinels && chk_sentinels(o) != 0) overall = CHK_UNFIT;
    if (ck.n_seeds && (i = chk_cluster(o)) != 0) {
        chk_result *r = &ck.res[ck.n_res++];
        memset(r, 0, sizeof *r);
        snprintf(r->label, sizeof r->label, "cluster %s", ck.seeds[0].label);
        r->aof = -1;
        r->scripts = -1;
        r->auth = i == -2;
        chk_note(r, CHK_UNFIT, "no seed answered CLUSTER NODES with a primary%s", r->auth ? " (AUTH refused)" : "");
    }
    for (k = 0; k < o->n_servers && ck.n_res < CHK_MAX; k++) chk_server(&o->servers[k], o, &ck.res[ck.n_res++]);
    for (k = 0; k < ck.n_found && ck.n_res < CHK_MAX; k++) chk_server(&ck.found[k], o, &ck.res[ck.n_res++]);
    /* one server under two names would cast two Redlock votes */
    for (k = 0; k < ck.n_res; k++)
        for (m = 0; m < k; m++)
            if (ck.res[k].run_id[0] && strcmp(ck.res[k].run_id, ck.res[m].run_id) == 0)
                chk_note(&ck.res[k], CHK_UNFIT, "same server as %s (run_id %.12s...): it would get two votes",
                         ck.res[m].label, ck.res[k].run_id);
    for (k = 0; k < ck.n_res; k++) {
        if (ck.res[k].level > overall) overall = ck.res[k].level;
        ck.auth |= ck.res[k].auth;
    }
    memset(o->password, 0, sizeof o->password);
    chk_print(overall);
    /* refused credentials: 77, as rlock exits for them - the verdict of a
     * server that could not be asked means nothing until they are fixed */
    return ck.auth ? RC_NOPERM : overall;
}
