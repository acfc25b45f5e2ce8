/* SPDX-License-Identifier: MIT */
/* bench/perf_repl.c -- the REPL worker's performance numbers: the round
 * trip of a trivial exec and the start of a worker, each with the sandbox
 * and without it (its cost), a worker forked by the zygote, and the start
 * with a large context. */
#include "bench.h"
#include "../repl/repl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* A config with every layer of the sandbox, or none at all. */
static void cfg_init(struct repl_cfg *cfg, bool sandbox)
{
	memset(cfg, 0, sizeof(*cfg));
	if (!sandbox) {
		cfg->sandbox.disable = REPL_L_ALL;
		cfg->sandbox.unsafe = true;
	}
}

int bench_perf_repl_roundtrip(size_t n, double p50_us[2], double p99_us[2], struct rlm_err *err)
{
	struct repl_cfg cfg[2];
	struct repl *r[2] = {NULL, NULL};
	int64_t *t[2];
	int rc = 0;
	if (n == 0)
		return rlm_err_set(err, RLM_EINVAL, "no execs to time");
	cfg_init(&cfg[0], true);
	cfg_init(&cfg[1], false);
	/* Both cold: the zygote serves one plan at a time. */
	cfg[0].no_zygote = cfg[1].no_zygote = true;
	for (int k = 0; k < 2 && rc == 0; k++)
		rc = repl_start(&cfg[k], &r[k], err);
	t[0] = xcalloc(n, sizeof(int64_t));
	t[1] = xcalloc(n, sizeof(int64_t));
	/* A few to warm up: the first exec imports and compiles more. The two
	 * workers take turns, so that both see the machine in the same state. */
	for (size_t i = 0; i < n + 20 && rc == 0; i++) {
		for (int k = 0; k < 2 && rc == 0; k++) {
			struct repl_result res;
			int64_t t0 = time_now_ns();
			rc = repl_exec(r[k], "x = 1", 5, 0, &res, err);
			if (i >= 20)
				t[k][i - 20] = time_now_ns() - t0;
			if (rc == 0 && (res.error || res.restarted))
				rc = rlm_err_set(err, RLM_EIO, "the exec failed: %s", res.output);
			repl_result_release(&res);
		}
	}
	for (int k = 0; k < 2 && rc == 0; k++) {
		qsort(t[k], n, sizeof(int64_t), cmp_i64);
		p50_us[k] = (double)t[k][n / 2] / 1e3;
		p99_us[k] = (double)t[k][n * 99 / 100 < n ? n * 99 / 100 : n - 1] / 1e3;
	}
	free(t[0]);
	free(t[1]);
	repl_free(r[0]);
	repl_free(r[1]);
	return rc;
}

int bench_perf_repl_start(size_t n, double ms[3], struct rlm_err *err)
{
	struct repl_cfg cfg[3];
	struct repl *parent = NULL;
	int64_t *t[3];
	int rc = 0;
	if (n == 0)
		return rlm_err_set(err, RLM_EINVAL, "no starts to time");
	for (int k = 0; k < 3; k++) {
		cfg_init(&cfg[k], k != 1);
		cfg[k].ctx.text = "tiny";
		cfg[k].ctx.len = 4;
		cfg[k].no_zygote = k < 2;
		t[k] = xcalloc(n, sizeof(int64_t));
	}
	/* [2]: a node's REPL while its parent's is up, which holds the
	 * zygote, as in a solve. */
	rc = repl_start(&cfg[2], &parent, err);
	/* One of each to warm up: the spawner thread, the filters, the probes. */
	for (size_t i = 0; i < n + 1 && rc == 0; i++) {
		for (int k = 0; k < 3 && rc == 0; k++) {
			struct repl *r = NULL;
			struct repl_stats st;
			int64_t t0 = time_now_ns();
			rc = repl_start(&cfg[k], &r, err);
			if (i >= 1)
				t[k][i - 1] = time_now_ns() - t0;
			if (rc == 0) {
				repl_stats(r, &st);
				if (st.zygote != (k == 2))
					rc = rlm_err_set(err, RLM_EIO, "worker %d was %s", k,
							 st.zygote ? "forked by the zygote"
								   : "started cold");
			}
			repl_free(r);
		}
	}
	repl_free(parent);
	for (int k = 0; k < 3 && rc == 0; k++) {
		qsort(t[k], n, sizeof(int64_t), cmp_i64);
		ms[k] = (double)t[k][n / 2] / 1e6;
	}
	for (int k = 0; k < 3; k++)
		free(t[k]);
	return rc;
}

/* RssAnon of process pid in bytes: its private memory (a str the worker
 * decoded is; the context memfd it maps is shared, and unmapped once
 * decoded); -1 when /proc does not say. */
static long long rss_anon(pid_t pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "RssAnon:", 8) == 0)
			kb = strtoll(line + 8, NULL, 10);
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* Start a worker on text[0..len) with cfg; its RssAnon once ready into
 * *anon (-1: unknown) and the start's wall time into *ns. */
static int start_measured(struct repl_cfg *cfg, const char *text, size_t len, long long *anon,
			  int64_t *ns, struct rlm_err *err)
{
	struct repl *r = NULL;
	struct repl_stats st;
	int64_t t0 = time_now_ns();
	int rc;
	cfg->ctx.text = text;
	cfg->ctx.len = len;
	rc = repl_start(cfg, &r, err);
	*ns = time_now_ns() - t0;
	*anon = -1;
	if (rc == 0) {
		repl_stats(r, &st);
		*anon = rss_anon(st.pid);
	}
	repl_free(r);
	return rc;
}

int bench_perf_repl_ready(size_t ctx_bytes, double *ms, double *copies, struct rlm_err *err)
{
	static const char words[] = "the quick brown fox jumps over a lazy dog and keeps going\n";
	struct repl_cfg cfg;
	int64_t t[5], ns;
	long long base = -1, anon, most = -1;
	char *text = xmalloc(ctx_bytes + 1);
	int rc;
	for (size_t i = 0; i < ctx_bytes; i++)
		text[i] = words[i % (sizeof(words) - 1)];
	text[ctx_bytes] = '\0';
	memset(&cfg, 0, sizeof(cfg));
	/* the same start with a tiny context: what a worker holds anyway */
	rc = start_measured(&cfg, "tiny", 4, &base, &ns, err);
	for (int i = 0; i < 5 && rc == 0; i++) {
		rc = start_measured(&cfg, text, ctx_bytes, &anon, &t[i], err);
		if (anon < 0 || base < 0)
			most = -1, base = -1;
		else if (anon > most)
			most = anon;
	}
	if (rc == 0) {
		qsort(t, 5, sizeof(t[0]), cmp_i64);
		*ms = (double)t[2] / 1e6;
		*copies = base >= 0 && ctx_bytes ? (double)(most - base) / (double)ctx_bytes : -1;
	}
	free(text);
	return rc;
}

/* A corpus of documents of varied words, ctx_bytes in all, `needles`
 * of them holding one line with "ZEBRA-CODE-<n>" and every 40th line an
 * "err=<n>" field: what search() is timed on. */
static char *search_corpus(size_t ctx_bytes, size_t doc_bytes, size_t needles, size_t **off,
			   size_t **lens, size_t *n_docs, struct buf *meta)
{
	static const char *const words[] = {"alpha", "kernel", "river", "quota", "fox",
					    "ledger", "smooth", "Tuesday", "ångström", "42",
					    "the", "of", "and", "packet", "northern", "lazy"};
	size_t n = ctx_bytes / doc_bytes, cap = ctx_bytes + 4096, len = 0;
	char *text = xmalloc(cap);
	uint64_t s = 12345;
	*off = xcalloc(n, sizeof(**off));
	*lens = xcalloc(n, sizeof(**lens));
	for (size_t d = 0; d < n; d++) {
		size_t start = len, line = 0;
		while (len - start < doc_bytes - 200) {
			const char *w = words[rng_splitmix64(&s) % ARRAY_SIZE(words)];
			size_t k = strlen(w);
			memcpy(text + len, w, k);
			len += k;
			text[len++] = rng_splitmix64(&s) % 9 ? ' ' : '\n';
			if (text[len - 1] == '\n' && ++line % 40 == 0)
				len += (size_t)snprintf(text + len, 32, "err=%zu\n", d * 100 + line);
		}
		if (needles && d % (n / needles) == n / needles / 2)
			len += (size_t)snprintf(text + len, 64, "\nthe ZEBRA-CODE-%zu is here", d);
		(*off)[d] = start;
		(*lens)[d] = len - start;
		text[len++] = '\n';
		buf_printf(meta, "{\"id\":\"dir/doc%05zu.txt\",\"path\":\"dir/doc%05zu.txt\"}\n", d,
			   d);
	}
	*n_docs = n;
	return text;
}

int bench_perf_repl_search(size_t ctx_bytes, double *literal_ms, double *regex_ms, size_t *hits,
			   struct rlm_err *err)
{
	static const char code[] =
	    "import time\n"
	    "def best(f):\n"
	    "    ts = []\n"
	    "    for _ in range(5):\n"
	    "        t = time.perf_counter(); h = f(); ts.append(time.perf_counter() - t)\n"
	    "    return sorted(ts)[2] * 1000, len(h)\n"
	    "a, na = best(lambda: search('ZEBRA-CODE', regex=False))\n"
	    "b, nb = best(lambda: search(r'^err=\\d+$', max_results=100000))\n"
	    "print(a, b, na, nb)\n";
	struct repl_cfg cfg;
	struct repl *r = NULL;
	struct repl_result res;
	struct buf meta = BUF_INIT;
	size_t *off, *lens, n;
	char *text = search_corpus(ctx_bytes, 4096, 3, &off, &lens, &n, &meta);
	size_t na = 0, nb = 0;
	int rc;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx = (struct repl_context){.text = text,
					.len = off[n - 1] + lens[n - 1] + 1,
					.docs = true,
					.doc_off = off,
					.doc_len = lens,
					.n_docs = n,
					.meta = meta.p,
					.meta_len = meta.len,
					.n_meta = n};
	rc = repl_start(&cfg, &r, err);
	if (rc == 0)
		rc = repl_exec(r, code, sizeof(code) - 1, 0, &res, err);
	if (rc == 0) {
		if (res.error ||
		    sscanf(res.output, "%lf %lf %zu %zu", literal_ms, regex_ms, &na, &nb) != 4 ||
		    na != 3)
			rc = rlm_err_set(err, RLM_EIO, "search did not run as expected: %.300s",
					 res.output);
		repl_result_release(&res);
	}
	*hits = nb;
	repl_free(r);
	free(text);
	free(off);
	free(lens);
	buf_release(&meta);
	return rc;
}
