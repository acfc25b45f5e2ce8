/* SPDX-License-Identifier: MIT */
/* bench/gen_suites.c -- the items of `rlm bench gen oolong`, `oolong-pairs`,
 * `browse` and `which-doc`: each one's context, its question and gold, and
 * its JSONL line.
 *
 * DESIGN
 * An item's window or corpus comes from its own seed (gen_cli.c derives it
 * from --seed, the size and the index), its question from another stream
 * of the same seed, so oolong and oolong-pairs items of the same seed, size,
 * index and --users read the very same window. OOLONG asks some questions
 * only when their gold is clear (a single most frequent date, say); when
 * none of the allowed tasks fits a window, the item's window is drawn again
 * from a seed derived from its own, up to REDRAWS times.
 */
#include "bench.h"

#include "../common/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REDRAWS 16

static uint64_t derive(uint64_t seed, uint64_t k)
{
	uint64_t st = seed ^ (0x9e3779b97f4a7c15ULL * (k + 1));
	return rng_splitmix64(&st);
}

int bench_gen_task_parse(enum gen_suite suite, const char *s, unsigned *mask)
{
	*mask = 0;
	if (suite == GEN_PAIRS) {
		if (strcmp(s, "any") == 0)
			*mask = (1u << PAIRS_KINDS) - 1;
		for (int k = 0; k < PAIRS_KINDS; k++)
			if (strcmp(s, bench_pairs_kind_name((enum pairs_kind)k)) == 0)
				*mask = 1u << k;
		return *mask ? 0 : RLM_EINVAL;
	}
	if (suite != GEN_OOLONG)
		return RLM_EINVAL;
	for (int t = 0; t < OOLONG_TASKS; t++)
		if (strcmp(s, "any") == 0 ||
		    strcmp(s, bench_oolong_task_name((enum oolong_task)t)) == 0 ||
		    strcmp(s, bench_oolong_task_group((enum oolong_task)t)) == 0)
			*mask |= 1u << t;
	return *mask ? 0 : RLM_EINVAL;
}

/* The k-th set bit of mask. */
static int nth_bit(unsigned mask, unsigned k)
{
	for (int b = 0; b < 32; b++)
		if (mask & (1u << b) && k-- == 0)
			return b;
	return -1;
}

/* Ask one of the tasks of mask, drawn, then the others in turn. */
static int ask_any(const struct oolong_window *w, unsigned mask, struct rng *r,
		   struct oolong_question *q)
{
	unsigned n = (unsigned)__builtin_popcount(mask), first = (unsigned)rng_below(r, n);
	for (unsigned i = 0; i < n; i++)
		if (bench_oolong_ask(w, (enum oolong_task)nth_bit(mask, (first + i) % n), r, q) == 0)
			return 0;
	return -EAGAIN;
}

static int write_line(cJSON *j, FILE *jl, const char *jl_path)
{
	char *s = json_print(j);
	int status = 0;
	if (fprintf(jl, "%s\n", s) < 0)
		status = log_fail(1, "cannot write '%s': %s", jl_path, strerror(errno));
	free(s);
	cJSON_Delete(j);
	return status;
}

/* The fields every item has, in the order sniah's have them. */
static cJSON *item_head(const struct gen_req *r, const char *suite, const char *question,
			cJSON *answer, const char *ctx, const char *scorer, uint64_t bytes)
{
	cJSON *j = cJSON_CreateObject();
	json_add_str(j, "id", r->id);
	json_add_str(j, "suite", suite);
	json_add_str(j, "question", question);
	json_add(j, "answer", answer);
	json_add_str(j, "context_path", ctx);
	json_add_str(j, "scorer", scorer);
	json_add_num(j, "tokens", (double)r->tokens);
	json_add_num(j, "bytes", (double)bytes);
	return j;
}

/* ---- oolong and oolong-pairs ---- */

static int oolong_item(const struct gen_req *r, FILE *jl, const char *jl_path)
{
	bool pairs = r->suite == GEN_PAIRS;
	char *name = xasprintf("%s.txt", r->id), *path = xasprintf("%s/%s", r->dir, name);
	struct oolong_opts o = {r->tokens, r->seed, r->users};
	struct oolong_window *w = NULL;
	struct oolong_question oq;
	struct pairs_question pq = {0};
	struct rng qr;
	cJSON *ans, *j, *counts;
	size_t users = 0;
	int status = 1, k;

	for (k = 0; k < REDRAWS; k++) {
		FILE *f = fopen(path, "wb");
		int rc;
		if (!f) {
			log_fail(1, "cannot write '%s': %s", path, strerror(errno));
			goto out;
		}
		o.seed = k ? derive(r->seed, (uint64_t)k) : r->seed;
		rc = bench_oolong_generate(&o, f, &w);
		if (fclose(f) != 0 && !rc)
			rc = errno ? -errno : -EIO;
		if (rc == -EINVAL) {
			status = log_fail(2, "size '%s' is too small for an oolong window",
					  r->size_name);
			goto out;
		}
		if (rc) {
			log_fail(1, "cannot write '%s': %s", path, strerror(-rc));
			goto out;
		}
		rng_seed(&qr, derive(o.seed, 1000));
		if (pairs) {
			unsigned n = (unsigned)__builtin_popcount(r->tasks);
			bench_pairs_ask(w,
				  (enum pairs_kind)nth_bit(r->tasks, (unsigned)rng_below(&qr, n)),
				  &qr, &pq);
			break;
		}
		if (ask_any(w, r->tasks, &qr, &oq) == 0)
			break;
		bench_oolong_window_free(w);
		w = NULL;
	}
	if (!w) {
		log_fail(1, "no question of the --task asked fits item '%s' in %d windows", r->id,
			 REDRAWS);
		goto out;
	}
	for (int u = 0; u < w->n_users; u++)
		users += w->user_lines[u] > 0;
	ans = cJSON_CreateArray();
	if (pairs) {
		for (size_t i = 0; i < pq.n_pairs; i++) {
			char p[32];
			snprintf(p, sizeof(p), "%u,%u", (unsigned)pq.pairs[i][0],
				 (unsigned)pq.pairs[i][1]);
			json_add_str(ans, NULL, p);
		}
	} else if (oq.numeric) {
		json_add_num(ans, NULL, (double)strtoull(oq.answer, NULL, 10));
	} else {
		json_add_str(ans, NULL, oq.answer);
	}
	j = item_head(r, pairs ? "oolong-pairs" : "oolong", pairs ? pq.question : oq.question, ans,
		      name, pairs ? "set_f1" : "oolong", w->bytes);
	json_add_str(j, "dataset", "trec_coarse");
	if (pairs) {
		json_add_str(j, "task", bench_pairs_kind_name(pq.kind));
		json_add_num(j, "pairs", (double)pq.n_pairs);
		json_add_num(j, "qualifying_users", (double)pq.qualifying);
	} else {
		json_add_str(j, "task", bench_oolong_task_name(oq.task));
		json_add_str(j, "task_group", bench_oolong_task_group(oq.task));
		json_add_str(j, "task_type", bench_oolong_task_type(oq.task));
		json_add_str(j, "answer_type", bench_oolong_answer_type(oq.task));
	}
	json_add_num(j, "instances", (double)w->lines);
	json_add_num(j, "users", (double)users);
	json_add_num(j, "user_pool", w->n_users);
	counts = cJSON_CreateObject();
	for (int l = 0; l < OOLONG_LABELS; l++)
		json_add_num(counts, bench_oolong_label_name((enum oolong_label)l),
			     (double)w->label_count[l]);
	json_add(j, "label_counts", counts);
	if (k)
		json_add_num(j, "redraws", k);
	if ((status = write_line(j, jl, jl_path)))
		goto out;
	fprintf(stderr, "%s: %llu bytes, %zu instances of %zu users, ", path,
		(unsigned long long)w->bytes, w->lines, users);
	if (pairs)
		fprintf(stderr, "%s: %zu pairs\n", bench_pairs_kind_name(pq.kind), pq.n_pairs);
	else
		fprintf(stderr, "%s: %s\n", bench_oolong_task_name(oq.task), oq.answer);
out:
	bench_pairs_question_release(&pq);
	bench_oolong_window_free(w);
	free(name);
	free(path);
	return status;
}

/* ---- browse ---- */

static int browse_item(const struct gen_req *r, FILE *jl, const char *jl_path)
{
	struct browse_opts o = {r->tokens, r->seed, r->docs};
	struct browse_item it;
	char *name = xasprintf("%s%s", r->id, r->format == SNIAH_JSONL ? ".jsonl" : ""),
	     *path = xasprintf("%s/%s", r->dir, name);
	size_t docs = r->docs ? r->docs : bench_browse_default_docs(r->tokens);
	cJSON *ans, *j, *dups;
	int rc, status = 1;

	if (docs < BROWSE_MIN_DOCS || r->tokens * 4 / docs < BROWSE_DOC_BYTES) {
		/* what it takes: the documents asked for (at least the fewest
		 * browse makes), each of at least BROWSE_DOC_BYTES */
		size_t need = RLM_MAX(r->docs, (size_t)BROWSE_MIN_DOCS);
		if (r->docs)
			status =
			    log_fail(2,
				     "size '%s' is too small for browse with --docs %zu: %zu "
				     "documents of at least %d bytes need %zu tokens; pass --sizes "
				     "%zu or more, or fewer --docs",
				     r->size_name, r->docs, need, BROWSE_DOC_BYTES,
				     need * BROWSE_DOC_BYTES / 4, need * BROWSE_DOC_BYTES / 4);
		else
			status =
			    log_fail(2,
				     "size '%s' is too small for browse: its %zu documents (the "
				     "fewest it makes) of at least %d bytes need %zu tokens; pass "
				     "--sizes %zu or more",
				     r->size_name, need, BROWSE_DOC_BYTES,
				     need * BROWSE_DOC_BYTES / 4, need * BROWSE_DOC_BYTES / 4);
		goto out;
	}
	if ((rc = bench_browse_write(&o, r->format, path, &it))) {
		log_fail(1, "cannot write '%s': %s", path, strerror(-rc));
		goto out;
	}
	ans = cJSON_CreateArray();
	for (int i = 0; i < it.n_answers; i++)
		json_add_str(ans, NULL, it.answers[i]);
	j = item_head(r, "browse", it.question, ans, name, "exact", it.bytes);
	json_add_str(j, "format", r->format == SNIAH_DIR ? "dir" : "jsonl");
	json_add_num(j, "documents", (double)it.n_docs);
	json_add_str(j, "chain", it.chain);
	json_add_str(j, "subject", it.subject);
	json_add_str(j, "bridge_entity", it.bridge);
	json_add_num(j, "bridge_doc", (double)it.bridge_doc);
	json_add_num(j, "answer_doc", (double)it.answer_doc);
	json_add_str(j, "fact_a", it.fact_a);
	json_add_num(j, "fact_a_offset", (double)it.fact_a_off);
	json_add_str(j, "fact_b", it.fact_b);
	json_add_num(j, "fact_b_offset", (double)it.fact_b_off);
	dups = cJSON_CreateArray();
	json_add_num(dups, NULL, (double)it.dup_docs[0]);
	json_add_num(dups, NULL, (double)it.dup_docs[1]);
	json_add(j, "near_duplicate_docs", dups);
	json_add_num(j, "trap_doc", (double)it.trap_doc);
	if ((status = write_line(j, jl, jl_path)))
		goto out;
	fprintf(stderr, "%s: %llu bytes in %zu documents, %s chain: documents %zu -> %zu\n", path,
		(unsigned long long)it.bytes, it.n_docs, it.chain, it.bridge_doc, it.answer_doc);
out:
	free(name);
	free(path);
	return status;
}

/* ---- which-doc ---- */

static int which_item(const struct gen_req *r, FILE *jl, const char *jl_path)
{
	struct browse_opts o = {r->tokens, r->seed, r->docs};
	struct which_item it;
	char *name = xasprintf("%s%s", r->id, r->format == SNIAH_JSONL ? ".jsonl" : ""),
	     *path = xasprintf("%s/%s", r->dir, name);
	size_t docs = r->docs ? r->docs : bench_browse_default_docs(r->tokens);
	cJSON *ans, *j, *near;
	int rc, status = 1;

	if (docs < BROWSE_MIN_DOCS || r->tokens * 4 / docs < BROWSE_DOC_BYTES / 2) {
		size_t need = RLM_MAX(r->docs, (size_t)BROWSE_MIN_DOCS);
		status = log_fail(2,
				  "size '%s' is too small for which-doc with %zu documents of at "
				  "least %d bytes: pass --sizes %zu or more%s",
				  r->size_name, need, BROWSE_DOC_BYTES / 2,
				  need * BROWSE_DOC_BYTES / 8, r->docs ? ", or fewer --docs" : "");
		goto out;
	}
	if ((rc = bench_which_write(&o, r->format, path, &it))) {
		log_fail(1, "cannot write '%s': %s", path, strerror(-rc));
		goto out;
	}
	ans = cJSON_CreateArray();
	json_add_str(ans, NULL, it.answer);
	j = item_head(r, "which-doc", it.question, ans, name, "exact", it.bytes);
	json_add_str(j, "format", r->format == SNIAH_DIR ? "dir" : "jsonl");
	json_add_num(j, "documents", (double)it.n_docs);
	json_add_str(j, "ask", bench_which_ask_name(it.ask));
	json_add_num(j, "answer_doc", (double)it.answer_doc);
	json_add_str(j, "fact", it.fact);
	json_add_str(j, "phrase", it.phrase);
	json_add_str(j, "code", it.code);
	near = cJSON_CreateArray();
	json_add_num(near, NULL, (double)it.near_docs[0]);
	json_add_num(near, NULL, (double)it.near_docs[1]);
	json_add(j, "near_miss_docs", near);
	if ((status = write_line(j, jl, jl_path)))
		goto out;
	fprintf(stderr, "%s: %llu bytes in %zu documents, %s question: %s\n", path,
		(unsigned long long)it.bytes, it.n_docs, bench_which_ask_name(it.ask), it.answer);
out:
	free(name);
	free(path);
	return status;
}

int bench_gen_suite_item(const struct gen_req *r, FILE *jl, const char *jl_path)
{
	if (r->suite == GEN_WHICH)
		return which_item(r, jl, jl_path);
	if (r->suite == GEN_BROWSE)
		return browse_item(r, jl, jl_path);
	return oolong_item(r, jl, jl_path);
}
