/* SPDX-License-Identifier: MIT */
/* rlm/solve.c -- rlm_solve: pick the strategy; the result's release; the
 * budget a solve shares between all its calls. */
#include "solve_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rlm__result_finish(struct rlm_result *r, int rc)
{
	if (rc == 0 && r->stop == RLM_STOP_ANSWER && r->failed > 0 &&
	    (!r->answer || text_is_none(r->answer, strlen(r->answer)) ||
	     text_is_blank(r->answer, strlen(r->answer)))) {
		char *sum = rlm_failures_summary(r);
		r->stop = RLM_STOP_INCOMPLETE;
		free(r->stop_detail);
		r->stop_detail = xasprintf(
		    "%s; the answer %s may be wrong", sum,
		    r->answer && !text_is_blank(r->answer, strlen(r->answer)) ? "NONE" : "(empty)");
		free(sum);
		r->found = false;
	}
	r->complete = rc == 0 && r->stop == RLM_STOP_ANSWER && r->failed == 0;
}

bool rlm__answer_cap(struct rlm_result *r, size_t max, char *out, size_t cap)
{
	size_t len = r->answer ? strlen(r->answer) : 0, keep;
	char note[240];
	if (!max)
		max = RLM_DEF_MAX_ANSWER;
	if (len <= max)
		return false;
	keep = text_utf8_floor(r->answer, max);
	r->answer[keep] = '\0';
	r->answer = xrealloc(r->answer, keep + 1);
	r->answer_truncated = true;
	r->answer_bytes = len;
	snprintf(note, sizeof(note),
		 "the answer was cut from %zu to %zu bytes, the limit of an answer kept "
		 "(--max-answer %zu)%s",
		 len, keep, max, r->answer_json ? "; cut, it is no longer the JSON that validated" : "");
	if (r->answer_json) {
		/* never cut JSON presented as the typed answer */
		r->answer_json = false;
		r->found = false;
	}
	if (r->warning) {
		char *w = xasprintf("%s; %s", r->warning, note);
		free(r->warning);
		r->warning = w;
	} else {
		r->warning = xstrdup(note);
	}
	if (out)
		snprintf(out, cap, "%s", note);
	return true;
}

static const char *kind_plural(const char *kind, int64_t n)
{
	if (!strcmp(kind, "child"))
		return n == 1 ? "child RLM" : "child RLMs";
	if (!strcmp(kind, "worker"))
		return n == 1 ? "REPL worker" : "REPL workers";
	if (!strcmp(kind, "part"))
		return n == 1 ? "part" : "parts";
	return n == 1 ? "sub-call" : "sub-calls";
}

char *rlm_failures_summary(const struct rlm_result *r)
{
	static const char *const kinds[] = {"child", "sub-call", "part", "worker"};
	int64_t count[4] = {0, 0, 0, 0}, listed = 0;
	struct buf b;
	size_t shown = 0, n_kinds = 0;
	char num[32], num2[32];
	if (!r->failed)
		return NULL;
	for (size_t i = 0; i < r->n_failures; i++)
		for (size_t k = 0; k < 4; k++)
			if (!strcmp(r->failures[i].kind, kinds[k]))
				count[k]++, listed++;
	for (size_t k = 0; k < 4; k++)
		n_kinds += count[k] > 0;
	buf_init(&b, 0);
	/* Past the list only the count is known: "70 failed (the first 64:
	 * 64 sub-calls; the first: ...)". */
	if (r->failed > listed)
		buf_printf(&b, "%s failed (the first %s: ", text_fmt_count(num, sizeof(num), r->failed),
			   text_fmt_count(num2, sizeof(num2), listed));
	for (size_t k = 0; k < 4; k++) {
		if (!count[k])
			continue;
		shown++;
		buf_printf(&b, "%s%s %s", shown == 1 ? "" : shown == n_kinds ? " and " : ", ",
			   text_fmt_count(num, sizeof(num), count[k]), kind_plural(kinds[k], count[k]));
	}
	if (r->failed > listed)
		buf_printf(&b, "; the first: %s)", r->n_failures ? r->failures[0].reason : "?");
	else
		buf_printf(&b, " failed (%s%s)", r->failed > 1 ? "the first: " : "",
			   r->failures[0].reason);
	return buf_detach(&b, NULL);
}

static int solve_strategy(const struct rlm_opts *opts, const char *question,
			  const struct corpus *ctx, struct rlm_result *out, struct rlm_err *err)
{
	int rc;
	switch (opts->strategy) {
	case RLM_REPL:
		/* A sandbox the worker would refuse fails here, before the
		 * first root call is paid for, not when the worker starts. */
		if ((rc = repl_sandbox_check(&opts->sandbox, err))) {
			out->stop = RLM_STOP_ERROR;
			return rc;
		}
		if (!(opts->compaction_threshold >= 0 && opts->compaction_threshold <= 1)) {
			out->stop = RLM_STOP_ERROR;
			return rlm_err_set(err, RLM_EINVAL,
					   "bad compaction threshold %g: want a fraction in (0, 1]",
					   opts->compaction_threshold);
		}
		rc = rlm__loop_solve(opts, question, ctx, out, err);
		rlm__result_finish(out, rc);
		return rc;
	case RLM_TREE:
		rc = rlm__tree_solve(opts, question, ctx, out, err);
		rlm__answer_cap(out, opts->max_answer, NULL, 0);
		rlm__result_finish(out, rc);
		return rc;
	}
	out->stop = RLM_STOP_ERROR;
	return rlm_err_set(err, RLM_EINVAL, "unknown strategy %d", (int)opts->strategy);
}

/* The answer schema as far as C can judge it (JSON, an object, the repl
 * strategy); the worker checks it is valid JSON Schema. */
static int schema_check(const struct rlm_opts *o, struct rlm_result *out, struct rlm_err *err)
{
	cJSON *j;
	const char *why = NULL;
	if (!o->schema_json)
		return 0;
	j = cJSON_Parse(o->schema_json);
	if (!j)
		why = "the answer schema is not JSON";
	else if (!cJSON_IsObject(j) && !cJSON_IsBool(j))
		why = "the answer schema is not a JSON object";
	else if (o->strategy != RLM_REPL)
		why = "an answer schema needs the repl strategy (the tree strategy has no REPL to "
		      "check answers)";
	cJSON_Delete(j);
	if (!why)
		return 0;
	out->stop = RLM_STOP_ERROR;
	out->stop_detail = xstrdup(why);
	return rlm_err_set(err, RLM_EINVAL, "%s", why);
}

int rlm_schema_check(const struct rlm_opts *o, struct rlm_err *err)
{
	struct rlm_result r;
	struct repl_cfg c;
	struct repl *w = NULL;
	int rc;
	memset(&r, 0, sizeof(r));
	rc = schema_check(o, &r, err);
	free(r.stop_detail);
	if (rc || !o->schema_json)
		return rc;
	if ((rc = repl_sandbox_check(&o->sandbox, err)))
		return rc;
	memset(&c, 0, sizeof(c));
	c.python = o->python;
	c.sandbox = o->sandbox;
	c.schema = o->schema_json;
	c.lone = true; /* it only checks the schema */
	c.ctx.text = "";
	rc = repl_start(&c, &w, err);
	repl_free(w);
	return rc;
}

int rlm_solve(const struct rlm_opts *opts, const char *question, const struct corpus *ctx,
	      struct rlm_result *out, struct rlm_err *err)
{
	struct rlm_record rec;
	struct rlm_opts o;
	struct rlm_err local = {0, ""};
	struct store_key k;
	int64_t t0;
	bool memo;
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = schema_check(opts, out, err)))
		return rc;
	if (!opts->store)
		return solve_strategy(opts, question, ctx, out, err);
	/* With a store: the run is recorded, and every node finds the cache
	 * and the record through o.record_. */
	o = *opts;
	rlm__record_init(&rec, &o);
	o.record_ = &rec;
	rlm__record_begin(&rec, &o, question, ctx);
	if (o.on_run)
		o.on_run(rec.run, o.on_run_arg);
	/* The whole solve asked before: its answer, and nothing runs. The
	 * context stands in the key by its digest. */
	t0 = time_now_ns();
	/* Not in a session: its answer rests on the session's state too. */
	memo = question && !o.session_ &&
	       rlm__record_memo_key(&o, 0, question, rec.digest, strlen(rec.digest), &k);
	if (memo && rlm__record_memo_get(&o, NULL, &k, out)) {
		rc = 0;
		rlm__answer_cap(out, o.max_answer, NULL, 0); /* kept before there was a cap */
		rlm__record_memo_origin(&o, question, out);
		out->solve_ns = time_now_ns() - t0;
	} else {
		rc = solve_strategy(&o, question, ctx, out, err ? err : &local);
		if (rc == 0 && memo)
			rlm__record_memo_put(&o, &k, out);
	}
	memcpy(out->run_id, rec.run, sizeof(out->run_id));
	rlm__record_end(&rec, &o, out, rc, rc < 0 ? (err ? err->msg : local.msg) : NULL);
	return rc;
}

static void turns_release(struct rlm_turn *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < t[i].n_blocks; k++) {
			free(t[i].blocks[k].code);
			free(t[i].blocks[k].output);
		}
		for (size_t k = 0; k < t[i].n_notices; k++)
			free(t[i].notices[k]);
		free(t[i].blocks);
		free(t[i].notices);
		free(t[i].reply);
	}
	free(t);
}

void rlm_result_release(struct rlm_result *r)
{
	for (size_t i = 0; i < r->n_children; i++)
		rlm_result_release(&r->children[i]);
	free(r->children);
	turns_release(r->turns, r->n_turns);
	r->turns = NULL;
	r->n_turns = 0;
	free(r->question);
	r->children = NULL;
	r->n_children = 0;
	r->question = NULL;
	free(r->answer);
	rlm__sources_free(r->sources, r->n_sources);
	r->sources = NULL;
	r->n_sources = 0;
	for (size_t i = 0; i < r->n_failures; i++)
		free(r->failures[i].reason);
	free(r->failures);
	r->failures = NULL;
	r->n_failures = 0;
	free(r->warning);
	free(r->stop_detail);
	free(r->memo_json);
	r->memo_json = NULL;
	free(r->tool_calls_json);
	r->tool_calls_json = NULL;
	free(r->sandbox);
	r->sandbox = NULL;
	r->answer = NULL;
	r->warning = NULL;
	r->stop_detail = NULL;
}

const char *rlm_stop_name(enum rlm_stop s)
{
	switch (s) {
	case RLM_STOP_ANSWER:
		return "answer";
	case RLM_STOP_ITERATIONS:
		return "max_iterations";
	case RLM_STOP_ERRORS:
		return "max_errors";
	case RLM_STOP_TIMEOUT:
		return "timeout";
	case RLM_STOP_TOKENS:
		return "max_tokens";
	case RLM_STOP_COST:
		return "max_cost";
	case RLM_STOP_CALLS:
		return "max_sub_calls";
	case RLM_STOP_MAX_CALLS:
		return "max_calls";
	case RLM_STOP_CANCEL:
		return "cancelled";
	case RLM_STOP_ERROR:
		return "error";
	case RLM_STOP_INCOMPLETE:
		return "incomplete";
	}
	return "unknown";
}

/* ---- the budget ---- */

static int64_t to_nusd(double usd)
{
	if (!(usd > 0))
		return 0;
	if (usd > 9e9)
		return INT64_MAX / 2;
	return (int64_t)llround(usd * 1e9);
}

void rlm__budget_init(struct rlm_budget *b, const struct rlm_opts *o, int64_t t0)
{
	memset(b, 0, sizeof(*b));
	b->max_tokens = o->max_tokens > 0 ? o->max_tokens : 0;
	b->max_cost_nusd = o->max_cost > 0 ? RLM_MAX(to_nusd(o->max_cost), (int64_t)1) : 0;
	b->max_sub_calls = o->max_sub_calls > 0 ? o->max_sub_calls : 0;
	b->max_calls = o->max_calls > 0 ? o->max_calls : 0;
	b->timeout_ns = o->timeout_ns > 0 ? o->timeout_ns : 0;
	b->deadline_ns = b->timeout_ns ? t0 + b->timeout_ns : 0;
	atomic_init(&b->tokens, 0);
	atomic_init(&b->cost_nusd, 0);
	atomic_init(&b->sub_calls, 0);
	atomic_init(&b->calls, 0);
}

/* One more against max (0: none): true, else false with the count it was
 * at in *had, and nothing taken. */
static bool take_one(_Atomic int64_t *used, int64_t max, int64_t *had)
{
	int64_t k = atomic_fetch_add(used, 1);
	if (max && k >= max) {
		atomic_fetch_sub(used, 1);
		*had = k;
		return false;
	}
	return true;
}

bool rlm__budget_reserve(struct rlm_budget *b, int64_t est_tokens, double est_cost,
		    enum budget_kind kind, enum rlm_stop *why, char *msg, size_t n)
{
	char x[32], y[32], z[32];
	int64_t est_nusd = to_nusd(est_cost), cost, t, k;
	bool sub = kind != BUDGET_ROOT, call = kind != BUDGET_CHILD;
	cost = atomic_load(&b->cost_nusd);
	for (;;) {
		if (b->max_cost_nusd && (cost >= b->max_cost_nusd ||
					 (est_nusd && cost + est_nusd > b->max_cost_nusd))) {
			*why = RLM_STOP_COST;
			if (cost >= b->max_cost_nusd)
				snprintf(msg, n, "cost budget exhausted ($%.4f of $%.4f spent)",
					 (double)cost / 1e9, (double)b->max_cost_nusd / 1e9);
			else
				snprintf(msg, n,
					 "cost budget exhausted ($%.4f of $%.4f spent or reserved; "
					 "this call's input costs about $%.4f)",
					 (double)cost / 1e9, (double)b->max_cost_nusd / 1e9,
					 (double)est_nusd / 1e9);
			return false;
		}
		if (atomic_compare_exchange_weak(&b->cost_nusd, &cost, cost + est_nusd))
			break;
	}
	if (sub && !take_one(&b->sub_calls, b->max_sub_calls, &k)) {
		atomic_fetch_sub(&b->cost_nusd, est_nusd);
		*why = RLM_STOP_CALLS;
		snprintf(msg, n, "sub-call budget exhausted (%s of %s sub-calls made)",
			 text_fmt_count(x, sizeof(x), k),
			 text_fmt_count(y, sizeof(y), b->max_sub_calls));
		return false;
	}
	if (call && !take_one(&b->calls, b->max_calls, &k)) {
		if (sub)
			atomic_fetch_sub(&b->sub_calls, 1);
		atomic_fetch_sub(&b->cost_nusd, est_nusd);
		*why = RLM_STOP_MAX_CALLS;
		snprintf(msg, n, "call budget exhausted (%s of %s model calls made)",
			 text_fmt_count(x, sizeof(x), k),
			 text_fmt_count(y, sizeof(y), b->max_calls));
		return false;
	}
	t = atomic_load(&b->tokens);
	for (;;) {
		if (b->max_tokens && t + est_tokens > b->max_tokens) {
			if (sub)
				atomic_fetch_sub(&b->sub_calls, 1);
			if (call)
				atomic_fetch_sub(&b->calls, 1);
			atomic_fetch_sub(&b->cost_nusd, est_nusd);
			*why = RLM_STOP_TOKENS;
			snprintf(
			    msg, n,
			    "token budget exhausted (%s of %s tokens used; this call needs about "
			    "%s more)",
			    text_fmt_count(x, sizeof(x), t),
			    text_fmt_count(y, sizeof(y), b->max_tokens),
			    text_fmt_count(z, sizeof(z), est_tokens));
			return false;
		}
		if (atomic_compare_exchange_weak(&b->tokens, &t, t + est_tokens))
			return true;
	}
}

void rlm__budget_settle(struct rlm_budget *b, int64_t est_tokens, double est_cost, int64_t used_tokens,
		   double cost)
{
	atomic_fetch_add(&b->tokens, used_tokens - est_tokens);
	atomic_fetch_add(&b->cost_nusd, to_nusd(cost) - to_nusd(est_cost));
}

bool rlm__budget_expired(const struct rlm_budget *b, int64_t now)
{
	return b->deadline_ns && now >= b->deadline_ns;
}
