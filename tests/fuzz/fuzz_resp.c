/* fuzz_resp.c - differential fuzzer for rlock_resp_parse (FAULTS.md #20, #21).
 *
 * The engine (rlock__node_drive) appends whatever recv() returns to a buffer
 * of RLOCK_RX_BUF bytes and, after every chunk, re-parses from the start; a
 * complete reply is consumed and the rest moved to the front. This harness
 * does the same, with the chunk sizes and the buffer size taken from the
 * input, and after every chunk compares rlock_resp_parse (iterative) with
 * ref_parse(), a plain recursive decoder written from the RESP2/RESP3 grammar.
 *
 * INPUT: byte 0 picks the buffer bound max_len (bit 7: RLOCK_RX_BUF as the
 * engine uses, else 1..128 to hit the bounds) and bit 6 selects encode mode;
 * byte 1 (k) says how many chunk-size bytes follow (k % 8, 0 = one byte at a
 * time); those k bytes are the chunk sizes, used in turn (0 means 1, else the
 * value); the rest is the byte stream. In encode mode the rest is split into
 * arguments instead, encoded with rlock_resp_encode and parsed back.
 *
 * THE CONTRACT CHECKED (rlock.h section 3), where `need` is the smallest total
 * length any valid completion of an incomplete prefix could have:
 *   ref COMPLETE(n)        -> parse returns n, same type, integer, string bytes
 *                             (and offset in buf), count, and first elements
 *   ref MALFORMED          -> parse < 0
 *   ref INCOMPLETE, len == max_len -> parse < 0 (the buffer cannot grow)
 *   ref INCOMPLETE, need <= max_len -> parse == 0
 *   ref INCOMPLETE, need >  max_len -> parse == 0 or < 0: the only place they
 *        may legitimately differ. The reader rejects a reply that cannot fit
 *        as soon as it sees a declared length or count proving it ($n with
 *        header+n+2 > max_len; *n with n > max_len/3), and otherwise when the
 *        buffer is full; the reference does not try to predict which.
 * The reference applies the same documented bounds and decision points:
 *   - nesting: an array header (not *-1) at depth >= RLOCK_RESP_MAX_DEPTH
 *     (top level = depth 0) is MALFORMED, whatever its count;
 *   - a header line (type byte + text + CRLF) is judged once its CRLF is in
 *     the buffer, except that a bare LF, or a CR followed by anything but LF,
 *     is MALFORMED as soon as it is seen (the type byte itself is judged
 *     with its line, so "x" alone is INCOMPLETE, "x\r\n" MALFORMED);
 *   - a bulk payload and its trailing CRLF are judged once all of
 *     them are in the buffer (so "$1\r\nab" is INCOMPLETE, "$1\r\nabc" not);
 *   - integers are -?[0-9]+ (leading zeros and "-0" accepted) within
 *     [LLONG_MIN, LLONG_MAX]; lengths/counts below -1 are MALFORMED; $-1 and
 *     *-1 are NIL at any depth (the RESP3 aggregates and blobs have no -1);
 *   - RESP3: _ # , ( ! = > ~ % | as the RESP3 spec has them; a map or an
 *     attribute of N entries holds 2N elements; an attribute is skipped and
 *     the value after it is the value (its header counts for the depth);
 *     a verbatim string of fewer than 4 bytes, or whose 4th is not ':', is
 *     MALFORMED as soon as that byte is in the buffer.
 * Also checked: the reader never reads outside buf (each call gets a fresh
 * heap copy of exactly len bytes, so ASan sees any overread), and verdicts
 * are prefix-stable: once complete or malformed, more bytes never change it.
 */
#define RLOCK_IMPLEMENTATION
#include "rlock.h" /* first: it asks for the POSIX APIs the replay main uses */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_FAIL(...) do { fprintf(stderr, "fuzz_resp: "); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); abort(); } while (0)
#define FZ_CHECK(c, ...) do { if (!(c)) FZ_FAIL(__VA_ARGS__); } while (0)

/* ---- the reference decoder ---------------------------------------------- */
enum { REF_COMPLETE, REF_INCOMPLETE, REF_MALFORMED };

typedef struct ref_val {
    int type;          /* rlock_resp_type */
    long long integer; /* INTEGER value; ARRAY count */
    size_t off, len;   /* STATUS/ERROR/BULK: bytes buf[off..off+len) */
} ref_val;

typedef struct ref_result {
    int verdict;
    size_t end;        /* COMPLETE: bytes used */
    size_t need;       /* INCOMPLETE: smallest total length of a valid completion */
    ref_val v;
    long long count;
    ref_val elem[RLOCK_RESP_MAX_ELEMS];
} ref_result;

/* Decimal by comparing digit strings, not by arithmetic overflow checks. */
static int ref_int(const unsigned char *s, size_t n, long long *out) {
    static const char maxpos[] = "9223372036854775807", maxneg[] = "9223372036854775808";
    int neg = 0;
    size_t i = 0, nd;
    const char *lim;
    unsigned long long v = 0;
    if (n && s[0] == '-') { neg = 1; i = 1; }
    if (i == n) return 0;
    for (size_t j = i; j < n; j++) if (s[j] < '0' || s[j] > '9') return 0;
    while (i + 1 < n && s[i] == '0') i++;          /* leading zeros */
    nd = n - i;
    lim = neg ? maxneg : maxpos;
    if (nd > 19) return 0;
    if (nd == 19 && memcmp(s + i, lim, 19) > 0) return 0;
    for (; i < n; i++) v = v * 10u + (unsigned)(s[i] - '0');
    if (neg) *out = v > (unsigned long long)LLONG_MAX ? LLONG_MIN : -(long long)v;
    else *out = (long long)v;
    return 1;
}

/* One value at pos. On INCOMPLETE *need is a lower bound for this value's end
 * that is exact wherever the reader can decide early (see the top comment). */
static int ref_value(const unsigned char *b, size_t len, size_t pos, int depth,
                     ref_val *v, ref_result *top, size_t *end, size_t *need) {
    size_t i, eol;
    long long n;
    if (pos >= len) { *need = pos + 3; return REF_INCOMPLETE; } /* "+\r\n" is the shortest value */
    for (i = pos + 1; i < len; i++) {
        if (b[i] == '\n') return REF_MALFORMED;
        if (b[i] == '\r') break;
    }
    if (i >= len) { *need = len + 2; return REF_INCOMPLETE; }
    if (i + 1 >= len) { *need = len + 1; return REF_INCOMPLETE; }
    if (b[i + 1] != '\n') return REF_MALFORMED;
    eol = i;
    memset(v, 0, sizeof *v);
    switch (b[pos]) {
    case '+': case '-':
        v->type = b[pos] == '+' ? RLOCK_RESP_STATUS : RLOCK_RESP_ERROR;
        v->off = pos + 1;
        v->len = eol - pos - 1;
        *end = eol + 2;
        return REF_COMPLETE;
    case ':':
        if (!ref_int(b + pos + 1, eol - pos - 1, &n)) return REF_MALFORMED;
        v->type = RLOCK_RESP_INTEGER;
        v->integer = n;
        *end = eol + 2;
        return REF_COMPLETE;
    case '_':
        if (eol != pos + 1) return REF_MALFORMED;
        v->type = RLOCK_RESP_NIL;
        *end = eol + 2;
        return REF_COMPLETE;
    case '#':
        if (eol != pos + 2 || (b[pos + 1] != 't' && b[pos + 1] != 'f')) return REF_MALFORMED;
        v->type = RLOCK_RESP_BOOL;
        v->integer = b[pos + 1] == 't';
        *end = eol + 2;
        return REF_COMPLETE;
    case ',': case '(': {
        size_t n0 = eol - pos - 1, j;
        const unsigned char *t = b + pos + 1;
        if (n0 == 0) return REF_MALFORMED;
        if (b[pos] == '(') {
            j = t[0] == '-' ? 1 : 0;
            if (j == n0) return REF_MALFORMED;
            for (; j < n0; j++) if (t[j] < '0' || t[j] > '9') return REF_MALFORMED;
        } else if (!((n0 == 3 && !memcmp(t, "inf", 3)) || (n0 == 4 && !memcmp(t, "-inf", 4)) ||
                     (n0 == 3 && !memcmp(t, "nan", 3)))) {
            for (j = 0; j < n0; j++)
                if (!strchr("0123456789.eE+-", t[j]) || t[j] == 0) return REF_MALFORMED;
        }
        v->type = b[pos] == ',' ? RLOCK_RESP_DOUBLE : RLOCK_RESP_BIGNUM;
        v->off = pos + 1;
        v->len = n0;
        *end = eol + 2;
        return REF_COMPLETE;
    }
    case '$': case '!': case '=': {
        size_t body = eol + 2;
        if (!ref_int(b + pos + 1, eol - pos - 1, &n) || n < -1) return REF_MALFORMED;
        if (n == -1) {
            if (b[pos] != '$') return REF_MALFORMED;
            v->type = RLOCK_RESP_NIL; *end = body; return REF_COMPLETE;
        }
        if ((unsigned long long)n > (unsigned long long)SIZE_MAX / 2) { *need = SIZE_MAX; return REF_INCOMPLETE; }
        if (b[pos] == '=' && (n < 4 || (len >= body + 4 && b[body + 3] != ':'))) return REF_MALFORMED;
        if (len < body + (size_t)n + 2) { *need = body + (size_t)n + 2; return REF_INCOMPLETE; }
        if (b[body + (size_t)n] != '\r' || b[body + (size_t)n + 1] != '\n') return REF_MALFORMED;
        v->type = b[pos] == '!' ? RLOCK_RESP_ERROR : RLOCK_RESP_BULK;
        v->off = body + (b[pos] == '=' ? 4 : 0);
        v->len = (size_t)n - (b[pos] == '=' ? 4 : 0);
        *end = body + (size_t)n + 2;
        return REF_COMPLETE;
    }
    case '*': case '>': case '~': case '%': case '|': {
        size_t p = eol + 2;
        int pairs = b[pos] == '%' || b[pos] == '|';
        if (!ref_int(b + pos + 1, eol - pos - 1, &n) || n < -1) return REF_MALFORMED;
        if (n == -1) {
            if (b[pos] != '*') return REF_MALFORMED;
            v->type = RLOCK_RESP_NIL; *end = p; return REF_COMPLETE;
        }
        if (depth >= RLOCK_RESP_MAX_DEPTH) return REF_MALFORMED;
        if (pairs) {
            if (n > LLONG_MAX / 2) { *need = SIZE_MAX; return REF_INCOMPLETE; }
            n *= 2;
        }
        v->type = b[pos] == '*' ? RLOCK_RESP_ARRAY : b[pos] == '>' ? RLOCK_RESP_PUSH
                : b[pos] == '~' ? RLOCK_RESP_SET : RLOCK_RESP_MAP;
        v->integer = n;
        for (long long k = 0; k < n; k++) {
            ref_val tmp;
            size_t e = 0, nd = 0;
            int keep = top && b[pos] != '|' && k < RLOCK_RESP_MAX_ELEMS;
            int r = ref_value(b, len, p, depth + 1, keep ? &top->elem[k] : &tmp, NULL, &e, &nd);
            if (r == REF_MALFORMED) return r;
            if (r == REF_INCOMPLETE) {
                /* each remaining element takes at least 3 bytes (plus the
                 * annotated value after an attribute); saturate */
                unsigned long long rest = (unsigned long long)(n - k - 1) + (b[pos] == '|');
                *need = rest > (SIZE_MAX - nd) / 3 ? SIZE_MAX : nd + 3 * (size_t)rest;
                return r;
            }
            p = e;
        }
        if (b[pos] == '|') /* an attribute: the value it annotates is this value */
            return ref_value(b, len, p, depth, v, top, end, need);
        if (top) top->count = n;
        *end = p;
        return REF_COMPLETE;
    }
    default:
        return REF_MALFORMED;
    }
}

static void ref_parse(const unsigned char *b, size_t len, ref_result *out) {
    memset(out, 0, sizeof *out);
    out->verdict = ref_value(b, len, 0, 0, &out->v, out, &out->end, &out->need);
}

/* ---- comparison ----------------------------------------------------------- */
static void same_value(const rlock_resp_value *a, const ref_val *e, const unsigned char *buf,
                       const char *what) {
    FZ_CHECK((int)a->type == e->type, "%s: type %d, reference %d", what, (int)a->type, e->type);
    switch (e->type) {
    case RLOCK_RESP_INTEGER: case RLOCK_RESP_ARRAY: case RLOCK_RESP_PUSH: case RLOCK_RESP_SET:
    case RLOCK_RESP_MAP: case RLOCK_RESP_BOOL:
        FZ_CHECK(a->integer == e->integer, "%s: integer %lld, reference %lld", what, a->integer, e->integer);
        break;
    case RLOCK_RESP_STATUS: case RLOCK_RESP_ERROR: case RLOCK_RESP_BULK: case RLOCK_RESP_DOUBLE:
    case RLOCK_RESP_BIGNUM:
        FZ_CHECK(a->len == e->len, "%s: len %zu, reference %zu", what, a->len, e->len);
        FZ_CHECK(a->str == (const char *)buf + e->off, "%s: str does not point at offset %zu", what, e->off);
        break;
    default:
        break;
    }
}

/* Parse buf[0..len) both ways; returns the reader's result. */
static long check_prefix(const unsigned char *data, size_t len, size_t max_len, ref_result *ref) {
    unsigned char *copy = (unsigned char *)malloc(len ? len : 1);
    rlock_reply rep;
    long r;
    if (!copy) abort();
    if (len) memcpy(copy, data, len);
    r = rlock_resp_parse(copy, len, max_len, &rep);
    ref_parse(copy, len, ref);
    switch (ref->verdict) {
    case REF_COMPLETE:
        FZ_CHECK(r > 0 && (size_t)r == ref->end, "len %zu max %zu: parse %ld, reference complete at %zu",
                 len, max_len, r, ref->end);
        same_value(&rep.v, &ref->v, copy, "top");
        if (ref->v.type == RLOCK_RESP_ARRAY || ref->v.type == RLOCK_RESP_PUSH || ref->v.type == RLOCK_RESP_SET ||
            ref->v.type == RLOCK_RESP_MAP) {
            FZ_CHECK(rep.count == ref->count, "count %lld, reference %lld", rep.count, ref->count);
            for (long long i = 0; i < ref->count && i < RLOCK_RESP_MAX_ELEMS; i++)
                same_value(&rep.elem[i], &ref->elem[i], copy, "element");
        } else {
            FZ_CHECK(rep.count == 0, "count %lld on a non-array", rep.count);
        }
        break;
    case REF_MALFORMED:
        FZ_CHECK(r < 0, "len %zu max %zu: parse %ld, reference malformed", len, max_len, r);
        break;
    default:
        if (len >= max_len)
            FZ_CHECK(r < 0, "len %zu == max %zu and incomplete: parse %ld, want < 0", len, max_len, r);
        else if (ref->need <= max_len)
            FZ_CHECK(r == 0, "len %zu max %zu need %zu: parse %ld, reference incomplete", len, max_len,
                     ref->need, r);
        else
            FZ_CHECK(r <= 0, "len %zu max %zu need %zu: parse %ld, reference incomplete (cannot fit)",
                     len, max_len, ref->need, r);
        break;
    }
    free(copy);
    return r;
}

/* The stream mode: feed chunks like the engine, consume complete replies. */
static void run_stream(const uint8_t *sizes, size_t nsizes, const uint8_t *data, size_t n, size_t max_len) {
    unsigned char *buf = (unsigned char *)malloc(max_len);
    size_t len = 0, off = 0, si = 0;
    long stable = 0; /* verdict of the whole remaining stream, for prefix stability */
    int have_stable = 0;
    if (!buf) abort();
    while (off < n) {
        size_t chunk = nsizes ? sizes[si++ % nsizes] : 1;
        ref_result ref;
        long r;
        if (chunk == 0) chunk = 1;
        if (chunk > n - off) chunk = n - off;
        if (chunk > max_len - len) chunk = max_len - len;
        if (chunk == 0) FZ_FAIL("buffer full but the reader asked for more bytes");
        memcpy(buf + len, data + off, chunk);
        len += chunk;
        off += chunk;
        r = check_prefix(buf, len, max_len, &ref);
        if (!have_stable) {
            /* What the reader says about everything that will ever be in the
             * buffer before this reply is consumed. */
            size_t all = len + (n - off);
            ref_result whole;
            if (all > max_len) all = max_len;
            {
                unsigned char *tmp = (unsigned char *)malloc(all);
                rlock_reply rep;
                if (!tmp) abort();
                memcpy(tmp, buf, len);
                memcpy(tmp + len, data + off, all - len);
                stable = rlock_resp_parse(tmp, all, max_len, &rep);
                ref_parse(tmp, all, &whole);
                free(tmp);
            }
            have_stable = 1;
        }
        if (r != 0)
            FZ_CHECK(r == stable, "prefix instability: %ld after %zu bytes, %ld with all of them", r, len, stable);
        if (r < 0) break;          /* protocol error: the engine drops the connection */
        if (r > 0) {               /* consumed: the rest moves to the front */
            memmove(buf, buf + r, len - (size_t)r);
            len -= (size_t)r;
            have_stable = 0;
            while (len) {          /* pipelined replies already in the buffer */
                r = check_prefix(buf, len, max_len, &ref);
                if (r <= 0) break;
                memmove(buf, buf + r, len - (size_t)r);
                len -= (size_t)r;
            }
            if (r < 0) break;
        }
    }
    free(buf);
}

/* The encode mode: arguments split at 0xff bytes, encoded, parsed back. */
static void run_encode(const uint8_t *data, size_t n, size_t cap) {
    const char *argv[16];
    size_t lens[16], w;
    int argc = 0;
    size_t start = 0;
    unsigned char *out = (unsigned char *)malloc(cap);
    rlock_reply rep;
    long r;
    if (!out) abort();
    for (size_t i = 0; i <= n && argc < 16; i++) {
        if (i == n || data[i] == 0xff) {
            argv[argc] = (const char *)data + start;
            lens[argc++] = i - start;
            start = i + 1;
        }
    }
    w = rlock_resp_encode(out, cap, argc, argv, lens);
    if (w == 0) {
        /* only when it does not fit: the exact size is known */
        size_t need = 1 + (size_t)snprintf(NULL, 0, "%d", argc) + 2;
        for (int i = 0; i < argc; i++) need += 1 + (size_t)snprintf(NULL, 0, "%zu", lens[i]) + 2 + lens[i] + 2;
        FZ_CHECK(need > cap, "encode refused %zu bytes into %zu", need, cap);
    } else {
        FZ_CHECK(w <= cap, "encode wrote %zu > cap %zu", w, cap);
        r = rlock_resp_parse(out, w, w, &rep);
        FZ_CHECK(r > 0 && (size_t)r == w, "encoded command does not parse back: %ld of %zu", r, w);
        FZ_CHECK(rep.v.type == RLOCK_RESP_ARRAY && rep.count == argc, "encoded array count %lld, want %d",
                 rep.count, argc);
        for (int i = 0; i < argc && i < RLOCK_RESP_MAX_ELEMS; i++)
            FZ_CHECK(rep.elem[i].type == RLOCK_RESP_BULK && rep.elem[i].len == lens[i] &&
                     (lens[i] == 0 || memcmp(rep.elem[i].str, argv[i], lens[i]) == 0),
                     "argument %d does not round-trip", i);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t max_len, k;
    if (size < 2) return 0;
    max_len = (data[0] & 0x80) ? RLOCK_RX_BUF : (size_t)(data[0] & 0x3f) * 2 + 1;
    k = data[1] % 8;
    if (size < 2 + k) return 0;
    if (data[0] & 0x40)
        run_encode(data + 2 + k, size - 2 - k, (data[0] & 0x80) ? RLOCK_TX_BUF : max_len + 16);
    else
        run_stream(data + 2, k, data + 2 + k, size - 2 - k, max_len);
    return 0;
}

#ifndef RLOCK_LIBFUZZER
#include "replay.h"
int main(int argc, char **argv) {
    return fuzz_replay_main("fuzz_resp", argc, argv);
}
#endif
