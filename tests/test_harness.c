/* SPDX-License-Identifier: MIT */
/* tests/test_harness.c -- the runner itself: passed, failed and skipped
 * tests, its closing line and exit status, with and without fork, and
 * tests/run.sh's sum of those lines. The checks run this binary again with
 * RLM_HARNESS_SAMPLES=1, which registers the sample tests below (one that
 * passes, one that fails, ...); a plain run has none of them. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the samples, run only in the child run ---- */

static void sample_passes(void)
{
	CHECK(1 + 1 == 2);
}

static void sample_fails(void)
{
	CHECK_INT(1 + 1, 3);
}

/* Its scratch directory is made, then SKIP: the runner removes it all the
 * same. The path goes to stdout for the check to look at. */
static void sample_skips(void)
{
	printf("  tmpdir %s\n", harness_tmpdir());
	SKIP("no widget %d here\n(a second line)", 42);
	CHECK_MSG(0, "SKIP returned");
}

/* exit(77) of its own is a failure, not a skip. */
static void sample_exits_77(void)
{
	fflush(stdout);
	_exit(HARNESS_SKIP_STATUS);
}

/* SKIP in a process the test forked ends that process only; the test goes
 * on (under TEST_NOFORK too, where a jump back to the runner in the child
 * would run the remaining tests twice). */
static void sample_skip_in_child(void)
{
	int status;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		SKIP("in the child");
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == HARNESS_SKIP_STATUS,
		  "the child: status %d", status);
}

__attribute__((constructor)) static void reg_samples(void)
{
	const char *e = getenv("RLM_HARNESS_SAMPLES");
	if (!e || strcmp(e, "1") != 0)
		return;
	harness_register("sample_passes", sample_passes);
	harness_register("sample_fails", sample_fails);
	harness_register("sample_skips", sample_skips);
	harness_register("sample_exits_77", sample_exits_77);
	harness_register("sample_skip_in_child", sample_skip_in_child);
}

/* ---- the checks ---- */

/* This binary with the samples on, the tests named in `names` selected,
 * TEST_NOFORK=nofork. */
static struct proc_out run_samples(const char *nofork, const char *const *names)
{
	static char self[PATH_MAX];
	const char *argv[8] = {self};
	const char *env[] = {"RLM_HARNESS_SAMPLES=1", nofork, NULL};
	struct proc_out o;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t i;
	CHECK(n > 0);
	self[n] = '\0';
	for (i = 0; names[i] && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[i + 1] = names[i];
	CHECK_INT(proc_run(argv, NULL, env, 60 * (int)slow_factor(), &o), 0);
	return o;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

/* The path sample_skips printed after "  tmpdir ". */
static char *printed_tmpdir(const char *out)
{
	const char *p = strstr(out, "  tmpdir "), *end;
	CHECK_MSG(p, "no tmpdir line: %s", out);
	p += strlen("  tmpdir ");
	end = strchr(p, '\n');
	CHECK(end);
	return xasprintf("%.*s", (int)(end - p), p);
}

TEST(harness_counts_skipped_apart_from_passed_and_failed)
{
	const char *names[] = {"sample_", NULL};
	struct proc_out o = run_samples("TEST_NOFORK", names);
	struct stat st;
	char *dir;
	CHECK_MSG(o.status == 1, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_MSG(strncmp(o.out, "ok   sample_passes (", 20) == 0, "out: %s", o.out);
	CHECK_CONTAINS(o.out, "\nFAIL sample_fails (");
	CHECK_CONTAINS(o.err, "1 + 1 == 2, want 3 == 3");
	/* One line, the reason's newline a space. */
	CHECK_CONTAINS(o.out, "\nSKIP sample_skips: no widget 42 here (a second line)\n");
	CHECK_CONTAINS(o.out, "\nFAIL sample_exits_77 (");
	CHECK_CONTAINS(o.err, "exited 77 without SKIP");
	CHECK_CONTAINS(o.out, "\nok   sample_skip_in_child (");
	CHECK_MSG(ends_with(o.out, "\n2 passed, 2 failed, 1 skipped\n"), "closing line: %s", o.out);
	dir = printed_tmpdir(o.out);
	CHECK_MSG(stat(dir, &st) != 0, "%s is left", dir);
	free(dir);
	proc_out_release(&o);
}

/* A skip is no failure: with nothing failed the status is 0. */
TEST(harness_skip_alone_exits_zero)
{
	const char *names[] = {"sample_passes", "sample_skips", NULL};
	struct proc_out o = run_samples("TEST_NOFORK", names);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\nSKIP sample_skips: no widget 42 here");
	CHECK_CONTAINS(o.out, "\n1 passed, 0 failed, 1 skipped\n");
	proc_out_release(&o);
}

/* In-process (TEST_NOFORK=1) SKIP jumps back to the runner, which removes
 * the scratch directory and goes on with the next test; the child of
 * sample_skip_in_child does not (one closing line). */
TEST(harness_skip_without_fork)
{
	const char *names[] = {"sample_skips", "sample_passes", "sample_skip_in_child", NULL};
	struct proc_out o = run_samples("TEST_NOFORK=1", names);
	struct stat st;
	char *dir;
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\nSKIP sample_skips: no widget 42 here (a second line)\n"
			      "ok   sample_skip_in_child (");
	CHECK_CONTAINS(o.out, "\n2 passed, 0 failed, 1 skipped\n");
	CHECK_MSG(count(o.out, " passed, ") == 1, "closing lines: %s", o.out);
	dir = printed_tmpdir(o.out);
	CHECK_MSG(stat(dir, &st) != 0, "%s is left", dir);
	free(dir);
	proc_out_release(&o);
}

/* An executable shell script at path that prints text and exits rc. */
static void fake_test(const char *path, const char *text, int rc)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "#!/bin/sh\nprintf '%s'\nexit %d\n", text, rc);
	CHECK(fclose(f) == 0);
	CHECK(chmod(path, 0755) == 0);
}

/* tests/run.sh sums both forms of the closing line, counts a binary that
 * died before its line as one failure, and exits 1 only on a failure. */
TEST(run_sh_sums_skipped)
{
	const char *dir = harness_tmpdir();
	char *tdir = xasprintf("%s/tests", dir), *p;
	const char *argv[] = {"/bin/sh", "tests/run.sh", dir, NULL};
	struct proc_out o;
	if (access("tests/run.sh", R_OK) != 0)
		SKIP("no tests/run.sh here (run from the top of the tree)");
	CHECK(mkdir(tdir, 0755) == 0);
	p = xasprintf("%s/test_a", tdir);
	fake_test(p, "ok   x (1 ms)\\n3 passed, 0 failed\\n", 0);
	free(p);
	p = xasprintf("%s/test_b", tdir);
	fake_test(p, "SKIP y: why\\n2 passed, 0 failed, 4 skipped\\n", 0);
	free(p);
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\ntotal: 5 passed, 0 failed, 4 skipped\n");
	proc_out_release(&o);

	p = xasprintf("%s/test_c", tdir);
	fake_test(p, "1 passed, 2 failed, 1 skipped\\n", 1);
	free(p);
	p = xasprintf("%s/test_d", tdir);
	fake_test(p, "ok   z (1 ms)\\n", 1);
	free(p);
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 1, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\nfailing binaries: test_c test_d\n"
			      "total: 6 passed, 3 failed, 5 skipped\n");
	proc_out_release(&o);
	free(tdir);
}
