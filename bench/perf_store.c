/* SPDX-License-Identifier: MIT */
/* bench/perf_store.c -- the store's speed: cache lookups per second, from
 * one thread and from eight at once, on a real SQLite file in a temporary
 * directory. */
#include "bench.h"
#include "../rlm/rlm.h"
#include "../store/store.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct lookers {
	struct store *s;
	struct llm_model *m;
	size_t n_keys, n;
	_Atomic long misses;
	int seed;
};

/* The user message of call i. */
static void prompt_of(size_t i, char *dst, size_t cap)
{
	snprintf(dst, cap, "Question %zu: what does part %zu of the text say about the key?", i,
		 i * 7919);
}

static void *look(void *arg)
{
	struct lookers *lk = arg;
	unsigned x = (unsigned)lk->seed * 2654435761u + 1;
	for (size_t j = 0; j < lk->n; j++) {
		char p[128];
		struct llm_msg msg;
		struct llm_call c;
		struct store_key k;
		struct rlm_err err = {0, ""};
		x = x * 1103515245u + 12345u;
		prompt_of(x % lk->n_keys, p, sizeof(p));
		msg = (struct llm_msg){LLM_USER, p, strlen(p)};
		llm_call_init(&c, lk->m, &msg, 1);
		rlm_store_call_key(&c, &k);
		if (rlm_store_call_get(lk->s, &k, &c, &err) != 1)
			lk->misses++;
		llm_call_release(&c);
	}
	return NULL;
}

int bench_perf_store_lookups(size_t n_keys, size_t n, double per_s[2], struct rlm_err *err)
{
	char dir[] = "/tmp/rlm-bench-store-XXXXXX", path[64];
	struct llm_model_cfg mc = {0};
	struct store_cfg sc = {path, false, 0};
	struct lookers lk[8];
	struct llm_model *m = NULL;
	struct store *s = NULL;
	pthread_t th[8];
	int rc;
	if (!mkdtemp(dir))
		return rlm_err_set(err, -1, "cannot make a temporary directory: %m");
	snprintf(path, sizeof(path), "%s/bench.db", dir);
	mc.kind = LLM_OPENAI;
	mc.name = "bench-model";
	mc.base_urls = "http://127.0.0.1:9/v1";
	if (!(m = llm_model_new(&mc, err)) || (rc = store_open(&sc, &s, err)) < 0) {
		rc = err->code ? err->code : RLM_EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n_keys; i++) {
		char p[128];
		struct llm_msg msg;
		struct llm_call c;
		struct store_key k;
		prompt_of(i, p, sizeof(p));
		msg = (struct llm_msg){LLM_USER, p, strlen(p)};
		llm_call_init(&c, m, &msg, 1);
		c.text = xstrdup("NONE");
		c.len = 4;
		c.usage.input_tokens = 30;
		c.usage.output_tokens = 1;
		rlm_store_call_key(&c, &k);
		rc = rlm_store_call_put(s, &k, &c, err);
		llm_call_release(&c);
		if (rc < 0)
			goto out;
	}
	for (int t = 0; t < 2; t++) {
		int threads = t ? 8 : 1;
		int64_t t0 = time_now_ns();
		long misses = 0;
		for (int i = 0; i < threads; i++) {
			lk[i] = (struct lookers){s, m, n_keys, n / (size_t)threads, 0, i + 1};
			pthread_create(&th[i], NULL, look, &lk[i]);
		}
		for (int i = 0; i < threads; i++) {
			pthread_join(th[i], NULL);
			misses += lk[i].misses;
		}
		per_s[t] = (double)n / ((double)(time_now_ns() - t0) / 1e9);
		if (misses) {
			rc = rlm_err_set(err, RLM_EIO, "%ld of %zu lookups missed a stored call",
					 misses, n);
			goto out;
		}
	}
	rc = 0;
out:
	store_close(s);
	llm_model_free(m);
	bench_store_remove(path);
	rmdir(dir);
	return rc;
}

void bench_store_remove(const char *path)
{
	char side[PATH_MAX];
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}
