/* SPDX-License-Identifier: MIT */
/* tests/harness.h -- a small test runner in the libuv manner: every test runs
 * in a forked child with a timeout, so a crash or a hang fails that test
 * alone. A test that cannot run here (not root, no tool) ends with
 * SKIP(reason): it is neither passed nor failed. The run ends with the line
 * "N passed, N failed, N skipped" that CI reads; the exit status is 1 when
 * a test failed, else 0.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_STR(got, "want"); }
 *   TEST(as_root) { if (geteuid() != 0) SKIP("needs root"); ... }
 *
 * Run `test_foo [substring...]` to run only matching tests; set
 * TEST_NOFORK=1 to run in-process (for gdb), TEST_TIMEOUT=secs to change
 * the per-test limit (default 120, times slow_factor() up to 4 under a
 * sanitizer or valgrind). */
#ifndef RLM_HARNESS_H
#define RLM_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void test_fn(void);

void harness_register(const char *name, test_fn *fn);
void harness_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/* End the current test as skipped, with a printf-style reason. Call it from
 * the test's own process (not from a child the test forked): in the forked
 * child it exits with HARNESS_SKIP_STATUS, under TEST_NOFORK=1 it jumps
 * back to the runner. */
void harness_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The exit status of a skipped test's child, automake's. */
#define HARNESS_SKIP_STATUS 77
/* Per-test scratch directory, created on first use, removed after the test. */
const char *harness_tmpdir(void);
/* Absolute path of the rlm binary under test (RLM_BIN or ./rlm). */
const char *harness_rlm_bin(void);
/* What time limits are multiplied by: 8 under TSan, 2 under ASan, 20
 * under valgrind (VALGRIND=1), else 1. */
int64_t slow_factor(void);

#define TEST(name)                                                                                 \
	static void name(void);                                                                    \
	__attribute__((constructor)) static void reg_##name(void)                                  \
	{                                                                                          \
		harness_register(#name, name);                                                     \
	}                                                                                          \
	static void name(void)

#define SKIP(...) harness_skip(__VA_ARGS__)

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			harness_fail(__FILE__, __LINE__, "CHECK(%s)", #c);                         \
	} while (0)

#define CHECK_MSG(c, ...)                                                                          \
	do {                                                                                       \
		if (!(c))                                                                          \
			harness_fail(__FILE__, __LINE__, __VA_ARGS__);                             \
	} while (0)

#define CHECK_INT(a, b)                                                                            \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_)                                                                      \
			harness_fail(__FILE__, __LINE__, "%s == %lld, want %s == %lld", #a, a_,    \
				     #b, b_);                                                      \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                                             \
			harness_fail(__FILE__, __LINE__, "%s == \"%s\", want \"%s\"", #a,          \
				     a_ ? a_ : "(null)", b_ ? b_ : "(null)");                      \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			harness_fail(__FILE__, __LINE__, "%s does not contain \"%s\": \"%.400s\"", \
				     #hay, n_, h_ ? h_ : "(null)");                                \
	} while (0)

#endif
