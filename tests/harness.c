/* SPDX-License-Identifier: MIT */
/* tests/harness.c -- the forking test runner behind harness.h. */
#include "harness.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct test {
	const char *name;
	test_fn *fn;
};

enum result { RESULT_PASS, RESULT_FAIL, RESULT_SKIP };

/* What SKIP leaves for the runner: in a mapping shared with the forked
 * child, so the parent reads the reason after the child has exited. */
struct skip_note {
	bool skipped;
	char why[512];
};

static struct test tests[512];
static size_t n_tests;
static bool forking = true;
static char tmpdir[PATH_MAX];
static struct skip_note *skip_note;
/* The process running the current test: SKIP from a process the test
 * forked only ends that process. */
static pid_t test_pid;
/* Where SKIP returns to under TEST_NOFORK=1. */
static jmp_buf skip_jmp;

static void cleanup_tmpdir(void);

void harness_register(const char *name, test_fn *fn)
{
	if (n_tests == sizeof(tests) / sizeof(tests[0])) {
		fprintf(stderr, "harness: too many tests\n");
		exit(2);
	}
	tests[n_tests].name = name;
	tests[n_tests].fn = fn;
	n_tests++;
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "  %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

void harness_skip(const char *fmt, ...)
{
	va_list ap;
	if (getpid() != test_pid) {
		/* Not the test's process: it reads this one's exit status. */
		fprintf(stderr, "  harness: SKIP in a child of the test (pid %d), which exits %d\n",
			(int)getpid(), HARNESS_SKIP_STATUS);
		fflush(stderr);
		_exit(HARNESS_SKIP_STATUS);
	}
	va_start(ap, fmt);
	vsnprintf(skip_note->why, sizeof(skip_note->why), fmt, ap);
	va_end(ap);
	skip_note->skipped = true;
	if (!forking)
		longjmp(skip_jmp, 1);
	cleanup_tmpdir();
	fflush(stdout);
	fflush(stderr);
	_exit(HARNESS_SKIP_STATUS);
}

int64_t slow_factor(void)
{
	const char *v = getenv("VALGRIND");
	if (v && strcmp(v, "1") == 0)
		return 20;
#if defined(__SANITIZE_THREAD__)
	return 8;
#elif defined(__SANITIZE_ADDRESS__)
	return 2;
#else
	return 1;
#endif
}

const char *harness_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/rlmtest.XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			_exit(1);
		}
	}
	return tmpdir;
}

const char *harness_rlm_bin(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("RLM_BIN");
	if (!path[0]) {
		/* Run from the repo root, ./rlm is the source directory. */
		const char *want = env && *env ? env : "build/rlm";
		struct stat st;
		if (!realpath(want, path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
		    access(path, X_OK) != 0) {
			fprintf(stderr, "harness: no rlm binary at %s (build it, or set RLM_BIN)\n",
				want);
			_exit(1);
		}
	}
	return path;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void cleanup_tmpdir(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static bool selected(const char *name, int argc, char **argv)
{
	if (argc <= 1)
		return true;
	for (int i = 1; i < argc; i++)
		if (strstr(name, argv[i]))
			return true;
	return false;
}

static enum result run_one(const struct test *t, unsigned timeout)
{
	pid_t pid;
	int status;
	skip_note->skipped = false;
	skip_note->why[0] = '\0';
	if (!forking) {
		test_pid = getpid();
		if (setjmp(skip_jmp) == 0)
			t->fn();
		cleanup_tmpdir();
		return skip_note->skipped ? RESULT_SKIP : RESULT_PASS;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return RESULT_FAIL;
	}
	if (pid == 0) {
		test_pid = getpid();
		setpgid(0, 0);
		alarm(timeout);
		t->fn();
		cleanup_tmpdir();
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* Whatever the test started in its process group goes with it. */
	kill(-pid, SIGKILL);
	if (WIFSIGNALED(status)) {
		if (WTERMSIG(status) == SIGALRM)
			fprintf(stderr, "  timed out after %u s\n", timeout);
		else
			fprintf(stderr, "  killed by signal %d (%s)\n", WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		return RESULT_FAIL;
	}
	if (WEXITSTATUS(status) == HARNESS_SKIP_STATUS) {
		if (skip_note->skipped)
			return RESULT_SKIP;
		/* exit(77) of its own is not a skip: only SKIP says why. */
		fprintf(stderr, "  exited %d without SKIP\n", HARNESS_SKIP_STATUS);
		return RESULT_FAIL;
	}
	return WEXITSTATUS(status) != 0 ? RESULT_FAIL : RESULT_PASS;
}

/* The reason on one line: control characters (a quoted stderr's newlines)
 * become spaces, trailing spaces go. */
static const char *skip_reason(void)
{
	char *w = skip_note->why;
	size_t n = strlen(w);
	for (size_t i = 0; i < n; i++)
		if (iscntrl((unsigned char)w[i]))
			w[i] = ' ';
	while (n > 0 && w[n - 1] == ' ')
		w[--n] = '\0';
	return n ? w : "(no reason given)";
}

int main(int argc, char **argv)
{
	unsigned timeout = 120, passed = 0, failed = 0, skipped = 0;
	const char *e;
	signal(SIGPIPE, SIG_IGN);
	skip_note = mmap(NULL, sizeof(*skip_note), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (skip_note == MAP_FAILED) {
		perror("harness: mmap");
		return 2;
	}
	/* `rlm solve` keeps every call in a store and answers repeats from
	 * it: tests that count calls would see the last run's. Tests of the
	 * store pass --cache (or unset this). */
	setenv("RLM_NO_CACHE", "1", 0);
	if ((e = getenv("TEST_NOFORK")) && *e == '1')
		forking = false;
	/* A sanitizer's build is slower: so is its limit (the whole quick
	 * `rlm bench perf` takes about two minutes under TSan here). */
	timeout *= (unsigned)(slow_factor() < 4 ? slow_factor() : 4);
	if ((e = getenv("TEST_TIMEOUT")))
		timeout = (unsigned)atoi(e);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n_tests; i++) {
		struct timespec t0;
		if (!selected(tests[i].name, argc, argv))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		switch (run_one(&tests[i], timeout)) {
		case RESULT_FAIL:
			failed++;
			printf("FAIL %s (%.0f ms)\n", tests[i].name, ms_since(&t0));
			break;
		case RESULT_SKIP:
			skipped++;
			printf("SKIP %s: %s\n", tests[i].name, skip_reason());
			break;
		case RESULT_PASS:
			passed++;
			printf("ok   %s (%.0f ms)\n", tests[i].name, ms_since(&t0));
			break;
		}
	}
	/* Skipped tests are not passed; only a failure makes the status 1. */
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
