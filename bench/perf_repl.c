/* SPDX-License-Identifier: MIT */
/* bench/perf_repl.c -- the REPL worker's two performance numbers: the
 * round trip of a trivial exec and the start with a large context. */
#include "bench.h"
#include "../repl/repl.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int perf_repl_roundtrip(size_t n, double *p50_us, double *p99_us, struct rlm_err *err)
{
	struct repl_cfg cfg;
	struct repl *r = NULL;
	int64_t *t;
	int rc;
	if (n == 0)
		return rlm_err_set(err, RLM_EINVAL, "no execs to time");
	memset(&cfg, 0, sizeof(cfg));
	rc = repl_start(&cfg, &r, err);
	if (rc < 0)
		return rc;
	t = xcalloc(n, sizeof(*t));
	/* A few to warm up: the first exec imports and compiles more. */
	for (size_t i = 0; i < n + 20 && rc == 0; i++) {
		struct repl_result res;
		int64_t t0 = now_ns();
		rc = repl_exec(r, "x = 1", 5, 0, &res, err);
		if (i >= 20)
			t[i - 20] = now_ns() - t0;
		if (rc == 0 && (res.error || res.restarted))
			rc = rlm_err_set(err, RLM_EIO, "the exec failed: %s", res.output);
		repl_result_release(&res);
	}
	if (rc == 0) {
		qsort(t, n, sizeof(*t), cmp_i64);
		*p50_us = (double)t[n / 2] / 1e3;
		*p99_us = (double)t[n * 99 / 100 < n ? n * 99 / 100 : n - 1] / 1e3;
	}
	free(t);
	repl_free(r);
	return rc;
}

int perf_repl_ready(size_t ctx_bytes, double *ms, struct rlm_err *err)
{
	static const char words[] = "the quick brown fox jumps over a lazy dog and keeps going\n";
	struct repl_cfg cfg;
	int64_t t[5];
	char *text = xmalloc(ctx_bytes + 1);
	int rc = 0;
	for (size_t i = 0; i < ctx_bytes; i++)
		text[i] = words[i % (sizeof(words) - 1)];
	text[ctx_bytes] = '\0';
	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx.text = text;
	cfg.ctx.len = ctx_bytes;
	for (int i = 0; i < 5 && rc == 0; i++) {
		struct repl *r = NULL;
		int64_t t0 = now_ns();
		rc = repl_start(&cfg, &r, err);
		t[i] = now_ns() - t0;
		repl_free(r);
	}
	if (rc == 0) {
		qsort(t, 5, sizeof(t[0]), cmp_i64);
		*ms = (double)t[2] / 1e6;
	}
	free(text);
	return rc;
}
