/* rlock_tls.h - TLS transport for rlock.h (OpenSSL >= 1.1.1, over the POSIX adapter).
 *
 * WHAT
 *   An rlock_transport that speaks TLS to Redis (redis-server --tls-port):
 *   verification ON by default (the server's chain against ca_file, or the
 *   system's CAs, and its name against server_name or the host: DNS name or
 *   IP address), SNI, an optional client certificate and key (Redis'
 *   tls-auth-clients). Header-only, every function static; link -lssl
 *   -lcrypto (Debian: libssl-dev). Nothing is sent in clear: the first bytes
 *   on the socket are the TLS handshake, and a server that does not speak
 *   TLS fails the handshake (rlock reports RLOCK_E_IO with the reason)
 *   before any command leaves.
 *
 * USAGE
 *   #include "adapters/rlock_tls.h"      <- first (it includes rlock_posix.h)
 *   rlock_tls_config tc = { 0 };  tc.ca_file = "/etc/redis/ca.crt";
 *   rlock_tls_conn t;
 *   if (rlock_tls_init(&t, "redis.example", 6380, 1000, &tc) != 0) die(t.err);
 *   rlock_node_init(&node, rlock_tls_transport(&t));   // t must not move
 *   ... rlock_client_close(&cl); rlock_tls_free(&t);   // free: the SSL_CTX too
 *
 * LIMITS
 *   OpenSSL allocates (the SSL_CTX at init, the SSL per connection); the rlock
 *   core still does not. The handshake is non-blocking and counts against
 *   connect_timeout_ms. Event loops (rlock_client_interest / _step) get the
 *   socket from the fd hook and what to poll it for from the events hook
 *   (during the handshake, what OpenSSL waits for); while OpenSSL holds
 *   decrypted bytes not yet read the fd is -1: step at once (part of a
  *   record is polled for on the socket). Cap the loop's wait with
 *   rlock_tls_interest_timeout (rlock_posix_interest_timeout, from any
 *   file: the transport's due hook), or a server that never answers the
 *   handshake costs the node timeout.
 *   insecure = 1 turns verification off (say so only when asked).
 *   The hiredis adapter has no TLS: Debian 12's hiredis 0.14 has no SSL
 *   support, so for TLS use this transport, not rlock_hiredis.h.
 */
#ifndef RLOCK_TLS_H
#define RLOCK_TLS_H

#include "rlock_posix.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlock_tls_config {
    const char *ca_file;      /* PEM CAs to trust (NULL: the system's default paths) */
    const char *cert_file;    /* client certificate, PEM (NULL: none) */
    const char *key_file;     /* its private key, PEM (NULL: none; needed with cert_file) */
    const char *server_name;  /* name to verify and send as SNI (NULL: the host given) */
    int insecure;             /* 1: do not verify the server (encrypted, not authenticated) */
} rlock_tls_config;

typedef struct rlock_tls_conn {
    rlock_transport tr;       /* hand it to rlock_node_init */
    rlock_posix_conn tcp;     /* the socket underneath */
    char err[192];            /* why the last step failed ("" when none) */
    /* --- private --- */
    SSL_CTX *ctx;
    SSL *ssl;
    int handshaking;          /* TLS handshake in progress on tcp */
    int want;                 /* RLOCK_WANT_* OpenSSL waits for when not what rlock asks (handshake), 0 */
    char name[256];           /* verified name and SNI */
} rlock_tls_conn;

/* "what HOST:PORT: why" into c->err: why and the port whole, a host too
 * long for the rest shortened in the middle (rlock__posix_fit) - to what
 * rlock_node_error keeps (RLOCK_ERR_LEN), not the larger c->err. */
static void rlock__tls_say(rlock_tls_conn *c, const char *what, const char *why) {
    char pre[32], w[200];
    snprintf(pre, sizeof pre, "%s ", what);
    rlock__posix_text(w, sizeof w, ": %s", why);
    rlock__posix_fit(c->err, sizeof c->err < RLOCK_ERR_LEN ? sizeof c->err : RLOCK_ERR_LEN, pre, c->tcp.host,
                     c->tcp.port, w);
}

static void rlock__tls_err(rlock_tls_conn *c, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[160];
    /* the chain's verdict explains a failed handshake that verified it;
     * unverified (insecure) OpenSSL keeps its verdict too, but it failed nothing */
    long v = c->ssl && c->handshaking && SSL_get_verify_mode(c->ssl) != SSL_VERIFY_NONE ? SSL_get_verify_result(c->ssl)
                                                                                       : X509_V_OK;
    if (v != X509_V_OK) {
        snprintf(buf, sizeof buf, "certificate verify failed: %s", X509_verify_cert_error_string(v));
    } else if (e) {
        ERR_error_string_n(e, buf, sizeof buf);
    } else {
        snprintf(buf, sizeof buf, "connection closed");
    }
    rlock__tls_say(c, what, buf);
    ERR_clear_error();
}

static void rlock__tls_drop(rlock_tls_conn *c) {
    if (c->ssl) SSL_free(c->ssl); /* no close_notify: it could block, and rlock drops on errors */
    c->ssl = NULL;
    c->handshaking = 0;
    c->want = 0;
    rlock_posix_close(&c->tcp);
}

/* Drive the handshake: 1 done, 0 would block, RLOCK_IO_ERROR failed. */
static int rlock__tls_handshake(rlock_tls_conn *c) {
    int r, e;
    ERR_clear_error();
    r = SSL_connect(c->ssl);
    if (r == 1) { c->handshaking = 0; c->want = 0; return 1; }
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (rlock__posix_connect_left(&c->tcp) == 0) {
            char why[64];
            snprintf(why, sizeof why, "timed out after %lu ms (not a TLS port?)",
                     (unsigned long)rlock__posix_budget(&c->tcp));
            rlock__tls_say(c, "TLS handshake with", why);
            rlock__tls_drop(c);
            return RLOCK_IO_ERROR;
        }
        c->want = e == SSL_ERROR_WANT_READ ? RLOCK_WANT_READ : RLOCK_WANT_WRITE;
        return RLOCK_IO_WOULD_BLOCK;
    }
    rlock__tls_err(c, "TLS handshake with");
    rlock__tls_drop(c);
    return RLOCK_IO_ERROR;
}

static int rlock__tls_connect(void *ctx) {
    rlock_tls_conn *c = (rlock_tls_conn *)ctx;
    int r;
    if (c->ssl && !c->handshaking) return 1;
    if (!c->ssl) {
        struct in6_addr a6;
        struct in_addr a4;
        int is_ip;
        r = c->tcp.tr.connect(c->tcp.tr.ctx);
        if (r != 1) {
            if (r < 0) snprintf(c->err, sizeof c->err, "%s", c->tcp.err);
            return r;
        }
        c->err[0] = '\0';
        c->ssl = SSL_new(c->ctx);
        if (!c->ssl || SSL_set_fd(c->ssl, c->tcp.fd) != 1) {
            rlock__tls_err(c, "TLS setup for");
            rlock__tls_drop(c);
            return RLOCK_IO_ERROR;
        }
        is_ip = inet_pton(AF_INET, c->name, &a4) == 1 || inet_pton(AF_INET6, c->name, &a6) == 1;
        /* SNI names a host, never an address (RFC 6066) */
        if (!is_ip) SSL_set_tlsext_host_name(c->ssl, c->name);
        if (SSL_get_verify_mode(c->ssl) != SSL_VERIFY_NONE) {
            X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
            if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, c->name) : X509_VERIFY_PARAM_set1_host(vp, c->name, 0)) != 1) {
                rlock__tls_err(c, "TLS name check for");
                rlock__tls_drop(c);
                return RLOCK_IO_ERROR;
            }
        }
        c->handshaking = 1;
    }
    return rlock__tls_handshake(c);
}

/* One SSL_write (out) or SSL_read (!out) as the transport's send/recv:
 * bytes moved, would-block (noting what OpenSSL waits for), closed, error. */
static long rlock__tls_io(rlock_tls_conn *c, unsigned char *buf, size_t len, int out) {
    int r, e;
    if (!c->ssl) return RLOCK_IO_ERROR;
    if (c->handshaking) {
        r = rlock__tls_handshake(c);
        if (r != 1) return r;
    }
    if (len > INT_MAX) len = INT_MAX;
    ERR_clear_error();
    r = out ? SSL_write(c->ssl, buf, (int)len) : SSL_read(c->ssl, buf, (int)len);
    if (r > 0) { c->want = 0; return r; }
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        /* noted only when OpenSSL needs the other direction (a write that
         * must read first: TLS 1.3 key update), which the events hook says */
        c->want = out == (e == SSL_ERROR_WANT_READ) ? (out ? RLOCK_WANT_READ : RLOCK_WANT_WRITE) : 0;
        return RLOCK_IO_WOULD_BLOCK;
    }
    if (!out && (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))) {
        rlock__posix_fit(c->err, sizeof c->err < RLOCK_ERR_LEN ? sizeof c->err : RLOCK_ERR_LEN, "", c->tcp.host,
                         c->tcp.port, " closed the connection");
        ERR_clear_error();
        return RLOCK_IO_CLOSED;
    }
    rlock__tls_err(c, out ? "TLS send to" : "TLS recv from");
    return RLOCK_IO_ERROR;
}

static long rlock__tls_send(void *ctx, const unsigned char *buf, size_t len) {
    /* SSL_write only reads buf; the cast spares a second copy of rlock__tls_io */
    return rlock__tls_io((rlock_tls_conn *)ctx, (unsigned char *)(uintptr_t)buf, len, 1);
}

static long rlock__tls_recv(void *ctx, unsigned char *buf, size_t len) {
    return rlock__tls_io((rlock_tls_conn *)ctx, buf, len, 0);
}

/* The event-loop hooks. The socket, except while OpenSSL holds decrypted
 * bytes not yet read (the rest of a record longer than a recv): then -1,
 * which rlock_client_interest reports as "step now", since poll() would
 * not wake for bytes no longer on the socket. Part of a record is not
 * that (SSL_has_pending would say so): nothing is readable until the
 * socket brings the rest, and "step now" would spin until it does. (No
 * read-ahead: OpenSSL reads no further than the record it decrypts.) */
static int rlock__tls_fd(void *ctx) {
    rlock_tls_conn *c = (rlock_tls_conn *)ctx;
    if (c->ssl && !c->handshaking && SSL_pending(c->ssl) > 0) return -1;
    return c->tcp.fd;
}

/* What to poll for: during the handshake (or a write that must read
 * first) what OpenSSL waits for, which may be to read while rlock asks to
 * write; else what rlock wants. */
static int rlock__tls_events(void *ctx, int want) {
    const rlock_tls_conn *c = (const rlock_tls_conn *)ctx;
    return c->ssl && c->want ? c->want : want;
}

/* What rlock asks to wait for, or what OpenSSL needs (a handshake, a
 * renegotiation); at once when OpenSSL holds decrypted bytes. The handshake
 * counts against the connect bound: "ready" when that runs out, so that
 * the next connect() fails saying so (a plaintext server never answers a
 * ClientHello) instead of the request timing out without a reason. */
static int rlock__tls_wait(void *ctx, int want, uint32_t timeout_ms) {
    rlock_tls_conn *c = (rlock_tls_conn *)ctx;
    int r;
    if (c->ssl && !c->handshaking && (want & RLOCK_WANT_READ) && SSL_pending(c->ssl) > 0) return 1;
    if (c->handshaking) {
        uint64_t left = rlock__posix_connect_left(&c->tcp);
        if (left < (uint64_t)timeout_ms) {
            r = c->tcp.tr.wait(c->tcp.tr.ctx, rlock__tls_events(c, want), (uint32_t)left);
            return r == 0 ? 1 : r;
        }
    }
    return c->tcp.tr.wait(c->tcp.tr.ctx, rlock__tls_events(c, want), timeout_ms);
}

static void rlock__tls_close(void *ctx) { rlock__tls_drop((rlock_tls_conn *)ctx); }

static const char *rlock__tls_error(void *ctx) { return ((rlock_tls_conn *)ctx)->err; }

/* The due hook: while the TCP connect or the handshake is under way, the
 * time until it must step again (both within connect_timeout_ms); 0 while
 * OpenSSL holds decrypted bytes; UINT32_MAX otherwise. An event loop that waits on rlock_client_interest's
 * timeout alone sleeps past that bound, to the request's deadline: a server
 * that takes the connection and never answers the ClientHello costs the
 * whole node timeout, and the reason is a bare "timeout". */
static uint32_t rlock__tls_due(void *ctx) {
    const rlock_tls_conn *c = (const rlock_tls_conn *)ctx;
    uint64_t left = c && (c->handshaking || c->tcp.connecting) ? rlock__posix_connect_left(&c->tcp) : UINT32_MAX;
    /* Decrypted bytes not yet read (fd -1, see rlock__tls_fd): step now,
     * whatever the loop's timeout says. */
    if (c && c->ssl && !c->handshaking && SSL_pending(c->ssl) > 0) return 0;
    return left < UINT32_MAX ? (uint32_t)left : UINT32_MAX;
}

/* rlock_posix_interest_timeout under its former TLS name: it caps the
 * wait for TLS and POSIX connections alike (each one's due hook), from any
 * file. Call it after rlock_client_interest, before waiting. */
RLOCK__ADAPTER_FN uint32_t rlock_tls_interest_timeout(const rlock_interest *items, size_t n, uint32_t timeout_ms) {
    return rlock_posix_interest_timeout(items, n, timeout_ms);
}

/* Prepare c for host:port over TLS with cfg (NULL: verify against the
 * system's CAs, no client certificate). Creates the SSL_CTX and loads the
 * files now, so a bad path or key is reported here (in c->err), not at
 * the first lock. Does not connect. 0 ok, -1 with c->err set. */
RLOCK__ADAPTER_FN int rlock_tls_init(rlock_tls_conn *c, const char *host, int port, uint32_t connect_timeout_ms,
                                     const rlock_tls_config *cfg) {
    static const rlock_tls_config none = { NULL, NULL, NULL, NULL, 0 };
    const char *name;
    if (!c) return -1;
    memset(c, 0, sizeof *c);
    c->tcp.fd = -1; /* a failed init leaves nothing for close/free to close (not fd 0) */
    if (!cfg) cfg = &none;
    if (rlock_posix_init_tcp(&c->tcp, host, port, connect_timeout_ms) != 0) {
        snprintf(c->err, sizeof c->err, "bad host or port");
        return -1;
    }
    name = cfg->server_name ? cfg->server_name : host;
    if (strlen(name) == 0 || strlen(name) >= sizeof c->name) {
        snprintf(c->err, sizeof c->err, "server name must be 1..%d bytes", (int)sizeof c->name - 1);
        return -1;
    }
    memcpy(c->name, name, strlen(name) + 1);
    if ((cfg->cert_file == NULL) != (cfg->key_file == NULL)) {
        snprintf(c->err, sizeof c->err, "a client certificate needs its key, and a key its certificate");
        return -1;
    }
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx) { snprintf(c->err, sizeof c->err, "SSL_CTX_new failed"); return -1; }
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(c->ctx, cfg->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (!cfg->insecure) {
        int ok = cfg->ca_file ? SSL_CTX_load_verify_locations(c->ctx, cfg->ca_file, NULL)
                              : SSL_CTX_set_default_verify_paths(c->ctx);
        if (ok != 1) {
            snprintf(c->err, sizeof c->err, "cannot load the CAs from %.150s", cfg->ca_file ? cfg->ca_file : "the system");
            goto fail;
        }
    }
    if (cfg->cert_file) {
        if (SSL_CTX_use_certificate_chain_file(c->ctx, cfg->cert_file) != 1) {
            snprintf(c->err, sizeof c->err, "cannot load the certificate %.150s", cfg->cert_file);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(c->ctx, cfg->key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(c->ctx) != 1) {
            snprintf(c->err, sizeof c->err, "cannot load the key %.120s, or it does not match the certificate",
                     cfg->key_file);
            goto fail;
        }
    }
    c->tr.ctx = c;
    c->tr.send = rlock__tls_send;
    c->tr.recv = rlock__tls_recv;
    c->tr.connect = rlock__tls_connect;
    c->tr.close = rlock__tls_close;
    c->tr.wait = rlock__tls_wait;
    c->tr.error = rlock__tls_error;
    c->tr.fd = rlock__tls_fd;
    c->tr.events = rlock__tls_events;
    c->tr.due = rlock__tls_due;
    return 0;
fail:
    ERR_clear_error();
    SSL_CTX_free(c->ctx);
    c->ctx = NULL;
    return -1;
}

RLOCK__ADAPTER_FN const rlock_transport *rlock_tls_transport(rlock_tls_conn *c) { return c ? &c->tr : NULL; }

/* Close the connection (idempotent); the context stays for a reconnect.
 * Like rlock_tls_free, a no-op on a connection whose init failed. */
RLOCK__ADAPTER_FN void rlock_tls_close(rlock_tls_conn *c) {
    if (c && c->ctx) rlock__tls_drop(c);
}

/* Close, and free the SSL_CTX. */
RLOCK__ADAPTER_FN void rlock_tls_free(rlock_tls_conn *c) {
    if (!c || !c->ctx) return;
    rlock__tls_drop(c);
    if (c->ctx) SSL_CTX_free(c->ctx);
    c->ctx = NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* RLOCK_TLS_H */
