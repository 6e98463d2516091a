/* check.h - the smallest test framework that still says what failed.
 * CHECK(cond) records a pass or prints file:line and the expression.
 * CHECK_EQ_ST(a, b) compares rlock_status values and prints both names.
 * check_summary() prints "N passed, N failed" and returns the exit code. */
#ifndef RLOCK_TEST_CHECK_H
#define RLOCK_TEST_CHECK_H
#include <stdio.h>

static int check_pass_count = 0;
static int check_fail_count = 0;

#define CHECK(cond) do { if (cond) check_pass_count++; else { check_fail_count++; \
    fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECK_MSG(cond, ...) do { if (cond) check_pass_count++; else { check_fail_count++; \
    fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_EQ_ST(a, b) do { rlock_status check_a_ = (a), check_b_ = (b); \
    if (check_a_ == check_b_) check_pass_count++; else { check_fail_count++; \
    fprintf(stderr, "FAIL %s:%d: %s == %s: got %s, want %s\n", __FILE__, __LINE__, #a, #b, \
            rlock_status_str(check_a_), rlock_status_str(check_b_)); } } while (0)

#define CHECK_EQ_LL(a, b) do { long long check_a_ = (long long)(a), check_b_ = (long long)(b); \
    if (check_a_ == check_b_) check_pass_count++; else { check_fail_count++; \
    fprintf(stderr, "FAIL %s:%d: %s == %s: got %lld, want %lld\n", __FILE__, __LINE__, #a, #b, \
            check_a_, check_b_); } } while (0)

static int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_pass_count, check_fail_count);
    return check_fail_count == 0 && check_pass_count > 0 ? 0 : 1;
}
#endif
