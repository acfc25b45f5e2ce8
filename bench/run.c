/* SPDX-License-Identifier: MIT */
/* bench/run.c -- `rlm bench run`'s engine: the datasets read and checked,
 * the tasks (item x strategy), the workers that solve and score them, the
 * direct baseline, and resuming from an earlier run's results.
 *
 * DESIGN
 * The datasets are read and checked whole before anything runs: a bad line,
 * an unknown scorer or a missing context file stops the run naming
 * FILE:LINE, before a model is paid. The work is a list of tasks, item-major;
 * --jobs threads take the next one from an atomic counter and solve it on
 * their own thread, as rlm_solve wants, all on one call pool, one pair of
 * models and one store. A task's context is loaded when it starts and freed
 * when it ends, so memory is jobs x one context, whatever the datasets hold.
 *
 * Resuming: a finished task is appended to DIR/results.jsonl at once, as
 * one write(2) of one line, under the run's mutex; a rerun reads the file
 * back and skips every (id, strategy) it holds, failed ones excepted, and
 * those of other models or of other solve options (a digest of
 * rlm_config_json in each line: --max-depth, a budget, sampling). A
 * solve killed halfway is resumed by the store instead: its calls are
 * answered from the cache, and its run is marked as resuming the killed
 * one. */
#include "bench.h"
#include "score.h"
#include "../common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const bench_strat_names[BST_COUNT] = {"repl", "tree", "direct"};

/* Reply tokens kept free by direct without --max-tokens (a quarter of the
 * window, when that is less). */
#define DIRECT_RESERVE 8192

/* ---- the datasets ---- */

void bench_run_init(struct bench_run *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	atomic_init(&r->next, 0);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

static void item_release(struct bench_item *it)
{
	free(it->id);
	free(it->suite);
	free(it->question);
	free(it->scorer);
	cJSON_Delete(it->gold);
	free(it->answer_type);
	free(it->context);
	free(it->path);
}

/* A string field, non-empty; NULL when absent or of another type. */
static const char *str_field(const cJSON *j, const char *key)
{
	const char *s = json_str(j, key);
	return s && *s ? s : NULL;
}

/* Fill it from line j of a dataset in dir; "" or the problem in msg. */
static void parse_item(const cJSON *j, const char *dir, const char *suite, struct bench_item *it,
		       char *msg, size_t n)
{
	const char *id = str_field(j, "id"), *q = str_field(j, "question");
	const char *sc = str_field(j, "scorer"), *ctx = json_str(j, "context");
	const char *cp = str_field(j, "context_path"), *fmt = str_field(j, "format");
	const char *at = json_str(j, "answer_type");
	const cJSON *gold = json_get(j, "answer"), *tok = json_get(j, "tokens");
	struct rlm_err err = {0, ""};
	struct stat st;
	double score;
	*msg = '\0';
	if (!cJSON_IsObject(j))
		snprintf(msg, n, "not a JSON object");
	else if (!id)
		snprintf(msg, n, "no \"id\" (a non-empty string)");
	else if (!q && json_get(j, "text"))
		snprintf(msg, n,
			 "item '%s': no \"question\": this is a document of a context, not "
			 "an item (pass the dataset's JSONL, the one `rlm bench gen` prints)",
			 id);
	else if (!q)
		snprintf(msg, n, "item '%s': no \"question\" (a non-empty string)", id);
	else if (!gold || !(cJSON_IsArray(gold) || cJSON_IsString(gold) || cJSON_IsNumber(gold)))
		snprintf(msg, n, "item '%s': no \"answer\" (an array of gold answers)", id);
	else if (!sc)
		snprintf(msg, n, "item '%s': no \"scorer\" (a string)", id);
	else if (!bench_scorer_known(sc))
		snprintf(msg, n,
			 "item '%s': unknown scorer '%s' (known: contains_all, exact, oolong, "
			 "set_f1, mc)",
			 id, sc);
	else if (json_get(j, "answer_type") && !(at && *at))
		snprintf(msg, n, "item '%s': \"answer_type\" is not a non-empty string", id);
	else if (bench_score_typed(sc, at, "", gold, &score, &err))
		snprintf(msg, n, "item '%s': %s", id, err.msg);
	else if (!!ctx == !!cp)
		snprintf(msg, n,
			 "item '%s': want one of \"context\" (the text) and \"context_path\"", id);
	else if (fmt && corpus_kind_parse(fmt, &it->kind))
		snprintf(msg, n, "item '%s': unknown \"format\" '%s' (known: text, dir, jsonl)", id,
			 fmt);
	else if (tok && !(cJSON_IsNumber(tok) && tok->valuedouble >= 0 && tok->valuedouble < 1e15))
		snprintf(msg, n, "item '%s': \"tokens\" is not a count", id);
	if (*msg)
		return;
	it->path = cp ? (cp[0] == '/' ? xstrdup(cp) : xasprintf("%s/%s", dir, cp)) : NULL;
	if (it->path && stat(it->path, &st) != 0) {
		snprintf(msg, n, "item '%s': cannot read context '%s': %s", id, it->path,
			 strerror(errno));
		free(it->path);
		it->path = NULL;
		return;
	}
	it->id = xstrdup(id);
	it->question = xstrdup(q);
	it->scorer = xstrdup(sc);
	it->suite = xstrdup(str_field(j, "suite") ? str_field(j, "suite") : suite);
	it->gold = cJSON_Duplicate(gold, true);
	it->answer_type = at ? xstrdup(at) : NULL;
	it->context = ctx ? xstrdup(ctx) : NULL;
	it->tokens = tok ? (int64_t)tok->valuedouble : 0;
}

/* Append the items of dataset path (its first `limit`, 0: all) to r.
 * Returns the bad lines, each said on stderr; -1 when the file cannot be
 * read. */
long bench_run_load(struct bench_run *r, const char *path, long limit)
{
	FILE *f = fopen(path, "r");
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char *dir = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
	char *suite = xstrndup(base, strcspn(base, ".")), *line = NULL, msg[600];
	size_t cap = 0, lineno = 0, taken = 0;
	ssize_t len;
	long bad = 0;
	if (!f) {
		fprintf(stderr, "rlm: error: cannot open dataset '%s': %s\n", path,
			strerror(errno));
		bad = -1;
		goto out;
	}
	while ((len = getline(&line, &cap, f)) >= 0 && (!limit || taken < (size_t)limit)) {
		struct bench_item it = {0};
		cJSON *j;
		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		if (!(j = json_parse(line, (size_t)len)))
			snprintf(msg, sizeof(msg), "not valid JSON");
		else
			parse_item(j, dir, *suite ? suite : "items", &it, msg, sizeof(msg));
		cJSON_Delete(j);
		if (*msg) {
			bad++;
			if (r->bad_said++ < BENCH_MAX_BAD_LINES)
				fprintf(stderr, "rlm: error: %s:%zu: %s\n", path, lineno, msg);
			item_release(&it);
			continue;
		}
		it.dataset = path;
		it.line = lineno;
		r->items = xrealloc(r->items, (r->n_items + 1) * sizeof(*r->items));
		r->items[r->n_items++] = it;
		taken++;
	}
	if (ferror(f)) {
		fprintf(stderr, "rlm: error: cannot read dataset '%s': %s\n", path,
			strerror(errno));
		bad = -1;
	} else if (!taken && !bad) {
		fprintf(stderr, "rlm: error: dataset '%s' holds no items\n", path);
		bad = 1;
	}
	fclose(f);
out:
	free(line);
	free(suite);
	free(dir);
	return bad;
}

static int cmp_item_id(const void *a, const void *b)
{
	const struct bench_item *x = *(const struct bench_item *const *)a,
				*y = *(const struct bench_item *const *)b;
	return strcmp(x->id, y->id);
}

/* Ids are what resuming goes by: two items with one id would share a
 * result. Returns the duplicates, each said on stderr. */
size_t bench_run_check_ids(const struct bench_run *r)
{
	const struct bench_item **v = xcalloc(r->n_items + 1, sizeof(*v));
	size_t dup = 0;
	for (size_t i = 0; i < r->n_items; i++)
		v[i] = &r->items[i];
	qsort(v, r->n_items, sizeof(*v), cmp_item_id);
	for (size_t i = 1; i < r->n_items; i++)
		if (strcmp(v[i - 1]->id, v[i]->id) == 0 && dup++ < BENCH_MAX_BAD_LINES) {
			const struct bench_item *a = v[i - 1], *b = v[i];
			if (a->line > b->line && a->dataset == b->dataset)
				a = v[i], b = v[i - 1];
			fprintf(stderr, "rlm: error: %s:%zu: duplicate id '%s' (also at %s:%zu)\n",
				b->dataset, b->line, b->id, a->dataset, a->line);
		}
	free(v);
	return dup;
}

void bench_run_plan(struct bench_run *r, const enum bench_strat *strats, size_t n)
{
	r->tasks = xcalloc(r->n_items * n + 1, sizeof(*r->tasks));
	r->n_tasks = 0;
	for (size_t i = 0; i < r->n_items; i++)
		for (size_t k = 0; k < n; k++)
			r->tasks[r->n_tasks++] =
			    (struct bench_task){.it = &r->items[i], .strat = strats[k]};
}

void bench_run_release(struct bench_run *r)
{
	for (size_t i = 0; i < r->n_tasks; i++)
		bench_res_release(&r->tasks[i].res);
	free(r->tasks);
	for (size_t i = 0; i < r->n_items; i++)
		item_release(&r->items[i]);
	free(r->items);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	r->tasks = NULL;
	r->items = NULL;
	r->n_tasks = r->n_items = 0;
}

/* ---- resuming: what DIR/results.jsonl already holds ---- */

static int cmp_task(const void *a, const void *b)
{
	const struct bench_task *x = *(const struct bench_task *const *)a,
				*y = *(const struct bench_task *const *)b;
	int c = strcmp(x->it->id, y->it->id);
	return c ? c : (int)x->strat - (int)y->strat;
}

/* The tools member of a result line. */
static struct bench_tools tools_of(const cJSON *t)
{
	struct bench_tools b = {0};
	if (!cJSON_IsObject(t))
		return b;
	b.used = true;
	b.discovery = json_int(t, "discovery", 0);
	b.calls = json_int(t, "calls", 0);
	b.blind = json_int(t, "calls_without_info", 0);
	b.schema_refused = json_int(t, "schema_refused", 0);
	b.repeated = json_int(t, "repeated_discovery", 0);
	return b;
}

/* t's result is v (its strings are t's item's and strategy's). */
static void res_fill(struct bench_task *t, struct bench_res v)
{
	bench_res_release(&t->res);
	t->res = v;
	t->res.id = xstrdup(t->it->id);
	t->res.suite = xstrdup(t->it->suite);
	t->res.strategy = xstrdup(bench_strat_names[t->strat]);
	t->res.approx = t->it->tokens == 0;
	t->done = true;
}

void bench_run_digest(struct bench_run *r)
{
	char *cfg = rlm_config_json(&r->ro), hex[33];
	struct store_key k;
	store_digest(cfg, strlen(cfg), &k);
	store_key_hex(&k, hex);
	snprintf(r->digest, sizeof(r->digest), "%.16s", hex);
	free(cfg);
}

/* 16 hex digits of what an item asks: its question, scorer, answer type,
 * gold, and context (inline: its text; a file: its path and size), so a
 * result is not taken for an item that changed since. */
static void item_digest(const struct bench_item *it, char hex[17])
{
	struct store_kb kb;
	struct store_key k;
	char *gold = it->gold ? json_print(it->gold) : NULL, full[33], size[32] = "";
	struct stat st;
	if (it->path && stat(it->path, &st) == 0)
		snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
	store_kb_init(&kb, "bench-item/1");
	store_kb_str(&kb, it->question, strlen(it->question));
	store_kb_str(&kb, it->scorer, strlen(it->scorer));
	store_kb_str(&kb, it->answer_type ? it->answer_type : "",
		     it->answer_type ? strlen(it->answer_type) : 0);
	store_kb_str(&kb, gold ? gold : "", gold ? strlen(gold) : 0);
	store_kb_str(&kb, it->context ? it->context : "", it->context ? strlen(it->context) : 0);
	store_kb_str(&kb, it->path ? it->path : "", it->path ? strlen(it->path) : 0);
	store_kb_str(&kb, size, strlen(size));
	store_kb_final(&kb, &k);
	store_key_hex(&k, full);
	snprintf(hex, 17, "%.16s", full);
	free(gold);
}

/* Mark the tasks whose results are in path as done. Returns how many; a
 * line that does not parse (a run killed mid-write) is passed over. */
size_t bench_run_resume(struct bench_run *r, const char *path, size_t *other_model,
			size_t *other_opts)
{
	const char *model = llm_model_name(r->ms.model), *sub = llm_model_name(r->ms.sub);
	FILE *f = fopen(path, "r");
	struct bench_task **idx;
	char *line = NULL;
	size_t cap = 0, found = 0;
	ssize_t len;
	*other_model = *other_opts = 0;
	if (!f)
		return 0;
	idx = xcalloc(r->n_tasks + 1, sizeof(*idx));
	for (size_t i = 0; i < r->n_tasks; i++)
		idx[i] = &r->tasks[i];
	qsort(idx, r->n_tasks, sizeof(*idx), cmp_task);
	while ((len = getline(&line, &cap, f)) >= 0) {
		cJSON *j = json_parse(line, (size_t)len);
		const char *id = json_str(j, "id"), *st = json_str(j, "strategy");
		const char *m = json_str(j, "model"), *sm = json_str(j, "sub_model");
		const char *dg = json_str(j, "options_digest");
		struct bench_item key_it = {0};
		struct bench_task key = {0}, *kp = &key, **hit;
		if (!id || !st || json_get(j, "error")) {
			cJSON_Delete(j);
			continue;
		}
		key_it.id = (char *)(uintptr_t)id;
		key.it = &key_it;
		key.strat = BST_COUNT;
		for (int s = 0; s < BST_COUNT; s++)
			if (strcmp(st, bench_strat_names[s]) == 0)
				key.strat = (enum bench_strat)s;
		hit = bsearch(&kp, idx, r->n_tasks, sizeof(*idx), cmp_task);
		/* Another model's answer is not this run's result, nor one made
		 * with other options (a line of before the digest included). */
		if (hit && ((m && strcmp(m, model) != 0) || (sm && strcmp(sm, sub) != 0))) {
			(*other_model)++;
			hit = NULL;
		} else if (hit && (!dg || strcmp(dg, r->digest) != 0)) {
			(*other_opts)++;
			hit = NULL;
		} else if (hit) {
			/* of the item as it is now */
			char want[17];
			const char *ig = json_str(j, "item_digest");
			item_digest((*hit)->it, want);
			if (!ig || strcmp(ig, want) != 0) {
				(*other_opts)++;
				hit = NULL;
			}
		}
		if (hit) {
			found += !(*hit)->done;
			res_fill(*hit, (struct bench_res){
					   .tools = tools_of(json_get(j, "tools")),
					   .tokens = json_int(j, "tokens", (*hit)->it->tokens),
					   .score = json_num(j, "score", 0),
					   .wall_ms = json_num(j, "wall_ms", 0),
					   .cost = json_num(j, "cost_usd", 0),
					   .cut = json_num(j, "context_cut_tokens", 0) > 0,
					   .cached = cJSON_IsTrue(json_get(j, "from_cache"))});
			(*hit)->skipped = true;
		}
		cJSON_Delete(j);
	}
	free(line);
	free(idx);
	fclose(f);
	return found;
}

/* ---- one task ---- */

static bool direct_lookup(void *arg, struct llm_call *c)
{
	const struct bench_run *r = arg;
	struct store_key k;
	if (r->ro.refresh)
		return false;
	rlm_store_call_key(c, &k);
	return rlm_store_call_get(r->store, &k, c, NULL) == 1;
}

static void direct_save(void *arg, const struct llm_call *c)
{
	const struct bench_run *r = arg;
	struct store_key k;
	struct rlm_err err = {0, ""};
	rlm_store_call_key(c, &k);
	if (rlm_store_call_put(r->store, &k, c, &err) < 0)
		log_warn("the store failed (keeping a call): %s", err.msg);
}

static const char direct_head[] = "Answer the question about the text below. Reply with the "
				  "answer alone, as briefly as the question allows.\n\nText:\n";

int64_t bench_direct_reserve(const struct bench_run *r)
{
	long window = llm_model_context_window(r->ms.model);
	if (r->ms.params.max_tokens > 0)
		return r->ms.params.max_tokens;
	return RLM_MIN(DIRECT_RESERVE, window / 4);
}

int64_t bench_direct_room(const struct bench_run *r, const char *question)
{
	int64_t prompt = llm_estimate_tokens(sizeof(direct_head) + strlen(question) + 32);
	return llm_model_context_window(r->ms.model) - bench_direct_reserve(r) - prompt;
}

/* The direct baseline: one call with the question and the head of the
 * context that fits the root model's window. Fills res as rlm_solve would
 * (answer, usage, calls, stop) and *cut with the tokens left out. A
 * context that would not fit at all is an error, not a call without it. */
static int run_direct(struct bench_run *r, const struct bench_item *it, const struct corpus *c,
		      struct rlm_result *res, int64_t *cut, struct rlm_err *err)
{
	int64_t room = bench_direct_room(r, it->question);
	size_t keep = room > 0 ? (size_t)((double)room * 0.95) * 4 : 0;
	struct buf b = BUF_INIT;
	struct llm_msg msg;
	struct llm_call call;
	int rc;
	if (c->len && keep == 0)
		return rlm_err_set(
		    err, RLM_EINVAL,
		    "direct: the question and the reply's %lld tokens fill %s's window "
		    "of %ld: no room for the context (lower --max-tokens)",
		    (long long)bench_direct_reserve(r), llm_model_name(r->ms.model),
		    llm_model_context_window(r->ms.model));
	keep = keep < c->len ? text_utf8_floor(c->buf, keep) : c->len;
	*cut = llm_estimate_tokens(c->len) - llm_estimate_tokens(keep);
	buf_reserve(&b, keep + sizeof(direct_head) + strlen(it->question) + 32);
	buf_puts(&b, direct_head);
	buf_append(&b, c->buf, keep);
	buf_printf(&b, "\n\nQuestion: %s\n", it->question);
	msg = (struct llm_msg){LLM_USER, b.p, b.len};
	llm_call_init(&call, r->ms.model, &msg, 1);
	call.params = r->ms.params;
	call.front = r->store ? &r->front : NULL;
	rc = llm_pool_call(r->ms.pool, &call);
	res->calls = 1;
	res->cache_hits = call.cached;
	res->usage = res->root_usage = call.usage;
	res->cost = res->root_cost = call.cost;
	res->root_calls = 1;
	if (rc) {
		res->failed_calls = 1;
		res->stop = RLM_STOP_ERROR;
		rlm_err_set(err, rc, "%s", call.error ? call.error : rlm_strerror(rc));
	} else {
		size_t n = call.len;
		while (n && strchr(" \t\r\n", call.text[n - 1]))
			n--;
		res->answer = xstrndup(call.text, n);
		res->found = true;
		res->complete = true; /* one call, which answered */
	}
	llm_call_release(&call);
	buf_release(&b);
	return rc;
}

/* The REPL error turns over a solve's tree of nodes, and its deepest
 * child's depth (a solve the memo answered keeps no tree: 1 when it had
 * children). */
static void tree_stats(const struct rlm_result *r, int64_t *errors, int *depth)
{
	*errors += r->error_turns;
	*depth = RLM_MAX(*depth, r->depth);
	if (r->depth == 0 && r->nodes > 0 && !r->n_children)
		*depth = RLM_MAX(*depth, 1);
	for (size_t i = 0; i < r->n_children; i++)
		tree_stats(&r->children[i], errors, depth);
}

static cJSON *usage_json(const struct llm_usage *u)
{
	cJSON *o = cJSON_CreateObject();
	json_add_num(o, "input_tokens", (double)u->input_tokens);
	json_add_num(o, "output_tokens", (double)u->output_tokens);
	return o;
}

/* Solve task t and append its line to the results. */
static void run_task(struct bench_run *r, struct bench_task *t)
{
	const struct bench_item *it = t->it;
	struct corpus_opts co = {.kind = it->kind, .quiet = true};
	struct corpus *c = NULL;
	struct rlm_result res = {0};
	struct rlm_err err = {0, ""};
	int64_t t0 = time_now_ns(), tokens = it->tokens, cut = -1, repl_errors = 0;
	int depth = 0;
	double score = 0, wall_ms;
	bool cached;
	struct bench_tools tb;
	cJSON *o = cJSON_CreateObject(), *u = cJSON_CreateObject();
	char *line, *nl;
	int rc = 0;

	if (it->context)
		c = corpus_borrow_text(it->context, strlen(it->context));
	else if ((rc = corpus_load(it->path, &co, &c, &err)))
		rlm_err_prefix(&err, "item '%s'", it->id);
	if (c && !tokens)
		tokens = llm_estimate_tokens(c->len);
	if (c && t->strat == BST_DIRECT) {
		rc = run_direct(r, it, c, &res, &cut, &err);
	} else if (c) {
		struct rlm_opts ro = r->ro;
		cJSON *note = cJSON_CreateObject(), *b = cJSON_CreateObject();
		json_add_str(b, "dataset", it->dataset);
		json_add_str(b, "id", it->id);
		json_add_str(b, "strategy", bench_strat_names[t->strat]);
		json_add(note, "bench", b);
		ro.run_note_json = line = json_print(note);
		cJSON_Delete(note);
		ro.strategy = t->strat == BST_TREE ? RLM_TREE : RLM_REPL;
		rc = rlm_solve(&ro, it->question, c, &res, &err);
		/* Answered whole from the memo, the solve spent nothing: the
		 * benchmark reports what the method's answer cost when made
		 * (from_cache says it came from the store). */
		if (!rc && res.memo) {
			res.usage = res.saved_usage;
			res.cost = res.saved_cost;
		}
		free(line);
		if (t->strat == BST_TREE) {
			res.iterations = res.levels;
			res.sub_calls = (int64_t)res.leaves;
		}
	}
	wall_ms = (double)((time_now_ns() - t0) / 1000) / 1e3; /* to the microsecond */
	corpus_free(c);
	if (!rc &&
	    bench_score_typed(it->scorer, it->answer_type, res.answer, it->gold, &score, &err))
		rc = err.code ? err.code : RLM_EINVAL;
	cached = !rc && (res.memo || (res.calls && res.cache_hits == res.calls));
	tree_stats(&res, &repl_errors, &depth);

	json_add_str(o, "id", it->id);
	json_add_str(o, "suite", it->suite);
	json_add_str(o, "dataset", it->dataset);
	json_add_num(o, "tokens", (double)tokens);
	json_add_str(o, "strategy", bench_strat_names[t->strat]);
	json_add_str(o, "scorer", it->scorer);
	json_add_str(o, "model", llm_model_name(r->ms.model));
	json_add_str(o, "sub_model", llm_model_name(r->ms.sub));
	json_add_str(o, "options_digest", r->digest);
	{
		char ig[17];
		item_digest(it, ig);
		json_add_str(o, "item_digest", ig);
	}
	json_add_num(o, "score", score);
	json_add(o, "answer", res.answer ? cJSON_CreateString(res.answer) : cJSON_CreateNull());
	json_add(o, "gold", cJSON_Duplicate(it->gold, true));
	if (it->answer_type)
		json_add_str(o, "answer_type", it->answer_type);
	json_add(u, "root", usage_json(&res.root_usage));
	json_add(u, "sub", usage_json(&res.sub_usage));
	json_add(u, "total", usage_json(&res.usage));
	json_add(o, "usage", u);
	json_add_num(o, "calls", (double)res.calls);
	json_add_num(o, "cache_hits", (double)res.cache_hits);
	json_add_bool(o, "from_cache", cached);
	json_add_num(o, "iterations", res.iterations);
	json_add_num(o, "sub_calls", (double)res.sub_calls);
	json_add_num(o, "errors", (double)res.failed_calls);
	json_add_num(o, "repl_errors", (double)repl_errors);
	json_add_num(o, "depth", depth);
	json_add_num(o, "nodes", (double)res.nodes);
	json_add_num(o, "wall_ms", wall_ms);
	json_add_num(o, "cost_usd", res.cost);
	json_add_str(o, "run_id", res.run_id);
	json_add_str(o, "stop", rc ? "error" : rlm_stop_name(res.stop));
	/* whether the answer rests on everything asked (rlm_result.complete) */
	json_add_bool(o, "complete", rc == 0 && res.complete);
	if (res.failed)
		json_add_num(o, "failed", (double)res.failed);
	if (cut >= 0)
		json_add_num(o, "context_cut_tokens", (double)cut);
	if (rc)
		json_add_str(o, "error", err.msg);
	if (res.warning)
		json_add_str(o, "warning", res.warning);
	if (r->ro.tools) {
		cJSON *tj = cJSON_CreateObject();
		const struct rlm_tool_stats *ts = &res.tools;
		json_add_num(tj, "discovery", (double)(ts->listings + ts->searches + ts->infos));
		json_add_num(tj, "calls", (double)ts->calls);
		json_add_num(tj, "calls_without_info", (double)ts->blind);
		json_add_num(tj, "schema_refused", (double)ts->schema_refused);
		json_add_num(tj, "repeated_discovery", (double)ts->repeated);
		json_add(o, "tools", tj);
	}
	tb = tools_of(json_get(o, "tools"));
	line = json_print(o);
	cJSON_Delete(o);
	nl = xasprintf("%s\n", line);

	pthread_mutex_lock(&r->mu);
	res_fill(t, (struct bench_res){.tools = tb,
				       .tokens = tokens,
				       .score = score,
				       .wall_ms = wall_ms,
				       .cost = res.cost,
				       .failed = rc != 0,
				       .cut = cut > 0,
				       .cached = cached});
	if (file_write_all(r->fd, nl, strlen(nl)))
		r->write_failed = true;
	r->n_done++;
	r->n_failed += rc != 0;
	if (rc && !r->quiet) {
		if (r->tty)
			fputs("\r\033[K", stderr);
		fprintf(stderr, "rlm: error: %s (%s): %s\n", it->id, bench_strat_names[t->strat],
			err.msg);
	}
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	free(line);
	free(nl);
	rlm_result_release(&res);
}

static void *worker(void *arg)
{
	struct bench_run *r = arg;
	size_t i;
	while ((i = atomic_fetch_add(&r->next, 1)) < r->n_tasks)
		if (!r->tasks[i].done)
			run_task(r, &r->tasks[i]);
	return NULL;
}

/* ---- progress ---- */

static void fmt_secs(double s, char *buf, size_t n)
{
	if (s < 60)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

/* Under r->mu. */
static void draw(const struct bench_run *r)
{
	char bar[31], eta[32] = "--", el[32];
	double elapsed = (double)(time_now_ns() - r->t0) / 1e9;
	size_t fill = r->n_run ? r->n_done * 30 / r->n_run : 30;
	for (size_t i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[30] = '\0';
	if (r->n_done)
		fmt_secs(elapsed / (double)r->n_done * (double)(r->n_run - r->n_done), eta,
			 sizeof(eta));
	fmt_secs(elapsed, el, sizeof(el));
	fprintf(stderr, "\r\033[K[%s] %zu/%zu solves", bar, r->n_done, r->n_run);
	if (r->n_failed)
		fprintf(stderr, ", %zu failed", r->n_failed);
	fprintf(stderr, "  %s  ETA %s", el, eta);
	fflush(stderr);
}

/* Start the workers, draw the bar until they end, join them. */
void bench_run_all(struct bench_run *r)
{
	pthread_t *th;
	long started = 0, jobs;
	r->front = (struct llm_front){direct_lookup, direct_save, r, NULL};
	r->n_run = r->n_done = r->n_failed = 0;
	for (size_t i = 0; i < r->n_tasks; i++)
		r->n_run += !r->tasks[i].done;
	jobs = (long)RLM_MIN((size_t)r->jobs, r->n_run);
	th = xcalloc((size_t)jobs + 1, sizeof(*th));
	r->t0 = time_now_ns();
	for (long i = 0; i < jobs; i++)
		started += pthread_create(&th[started], NULL, worker, r) == 0;
	if (!started && jobs)
		worker(r);
	pthread_mutex_lock(&r->mu);
	while (r->n_done < r->n_run) {
		struct timespec ts;
		if (r->tty)
			draw(r);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 500000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	}
	if (r->tty) {
		draw(r);
		fputs("\r\033[K", stderr);
	}
	pthread_mutex_unlock(&r->mu);
	for (long i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}
