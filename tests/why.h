/* why.h - rlock's own error texts in the tests (tests/test_unit.c,
 * tests/test_smallest.c). Under RLOCK_NO_ERROR_TEXTS a reason is
 * "rlock.h:LINE", LINE holding the RLOCK__TXT("text") of the check that
 * failed: why_is / why_has read that line of rlock.h (found next to this
 * file's directory) and hold its text to what the texts build says - the
 * line must be the right check's, not just any. Other texts (the
 * transport's, Redis's, a general-engine site without RLOCK__TXT) are
 * compared as they are. Include after rlock.h. */
#ifndef RLOCK_TEST_WHY_H
#define RLOCK_TEST_WHY_H
#include <string.h>
#if defined(__GNUC__) || defined(__clang__)
#define WHY_UNUSED __attribute__((unused)) /* a suite may use one of them only */
#else
#define WHY_UNUSED
#endif
#ifdef RLOCK_NO_ERROR_TEXTS
#include <stdio.h>
#include <stdlib.h>
/* The text of the RLOCK__TXT("...") (or RLOCK__TXT_IN(base, "...")) on the
 * line "rlock.h:N" names, into out; 0 when reason is not such a line or the
 * line has none. */
static int why_src(const char *reason, char *out, size_t cap) {
    static char path[512];
    char line[4096];
    const char *slash = strrchr(__FILE__, '/'), *p, *q;
    long want, no = 0;
    FILE *f;
    if (strncmp(reason, "rlock.h:", 8) != 0 || (want = strtol(reason + 8, NULL, 10)) <= 0) return 0;
    snprintf(path, sizeof path, "%.*s../rlock.h", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
    if (!(f = fopen(path, "r"))) return 0;
    while (fgets(line, sizeof line, f) && ++no < want) {}
    fclose(f);
    if (no != want) return 0;
    if ((p = strstr(line, "RLOCK__TXT(\"")) != NULL) p += 12;
    else if ((p = strstr(line, "RLOCK__TXT_IN(")) != NULL && (p = strchr(p, '"')) != NULL) p++; /* (base, "...") */
    else return 0;
    if (!(q = strstr(p, "\")"))) return 0;
    if ((size_t)(q - p) >= cap) return 0;
    for (; p < q; p++) /* (each number's escape, \1 or \2 in the source, as a '%') */
        if (*p == '\\' && (p[1] == '1' || p[1] == '2')) *out++ = '%', p++;
        else *out++ = *p;
    *out = '\0';
    return 1;
}
/* s is fmt with each '%' a decimal number (rlock__why's numbers). */
static int fmt_match(const char *fmt, const char *s) {
    for (; *fmt; fmt++) {
        if (*fmt != '%') { if (*s++ != *fmt) return 0; continue; }
        if (*s == '-') s++;
        if (*s < '0' || *s > '9') return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}
WHY_UNUSED static int why_is(const char *got, const char *want) {
    char src[512];
    return why_src(got, src, sizeof src) ? fmt_match(src, want) : strcmp(got, want) == 0;
}
/* part may hold numbers where the source has '%' ("key 1 hashes"). */
WHY_UNUSED static int why_has(const char *got, const char *part) {
    char src[512], pat[512];
    size_t n = 0;
    if (!why_src(got, src, sizeof src)) return strstr(got, part) != NULL;
    for (; *part && n + 1 < sizeof pat; part++)
        if (*part < '0' || *part > '9') pat[n++] = *part;
        else if (!n || pat[n - 1] != '%') pat[n++] = '%';
    pat[n] = '\0';
    return strstr(src, pat) != NULL;
}
#else
WHY_UNUSED static int why_is(const char *got, const char *want) { return strcmp(got, want) == 0; }
WHY_UNUSED static int why_has(const char *got, const char *part) { return strstr(got, part) != NULL; }
#endif
#endif
