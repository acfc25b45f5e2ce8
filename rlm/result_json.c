/* SPDX-License-Identifier: MIT */
/* rlm/result_json.c -- a solve's result as JSON: what `rlm solve --json`
 * prints and what the store keeps as a run's result. */
#include "solve_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static cJSON *usage_json(const struct llm_usage *u, double cost)
{
	cJSON *o = cJSON_CreateObject();
	json_add_num(o, "input_tokens", (double)u->input_tokens);
	json_add_num(o, "output_tokens", (double)u->output_tokens);
	json_add_num(o, "cached_tokens", (double)u->cached_tokens);
	json_add_num(o, "cache_write_tokens", (double)u->cache_write_tokens);
	if (cost >= 0)
		json_add_num(o, "cost_usd", cost);
	return o;
}

/* s cut to max characters (code points), with "..." when cut. */
static cJSON *cut_string(const char *s, size_t max)
{
	size_t i = text_utf8_offset(s, strlen(s), max);
	cJSON *j;
	char *t;
	if (!s[i])
		return cJSON_CreateString(s);
	t = xasprintf("%.*s...", (int)i, s);
	j = cJSON_CreateString(t);
	free(t);
	return j;
}

static cJSON *cache_json(const struct rlm_result *r)
{
	cJSON *o = cJSON_CreateObject();
	json_add_num(o, "hits", (double)r->cache_hits);
	json_add_num(o, "memo_hits", (double)r->memo_hits);
	json_add(o, "saved", usage_json(&r->saved_usage, r->saved_cost));
	return o;
}

/* A copy of member key of o, or a new item made by dflt when o has none. */
static cJSON *dup_or(const cJSON *o, const char *key, cJSON *(*dflt)(void))
{
	const cJSON *it = json_get(o, key);
	return it ? cJSON_Duplicate(it, true) : dflt();
}

/* "memo" of a solve answered from the memo: the run whose answer it is,
 * and what that run did as it recorded it (orig, parsed from memo_json,
 * may be NULL). */
static cJSON *memo_json(const struct rlm_result *r, const cJSON *orig)
{
	cJSON *m = cJSON_CreateObject();
	char date[32] = "";
	time_t t = (time_t)(r->memo_created_ms / 1000);
	struct tm tm;
	json_add(m, "run", r->memo_run[0] ? cJSON_CreateString(r->memo_run) : cJSON_CreateNull());
	if (r->memo_created_ms > 0 && gmtime_r(&t, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_add(m, "date", date[0] ? cJSON_CreateString(date) : cJSON_CreateNull());
	json_add_num(m, "created_ms", (double)r->memo_created_ms);
	json_add(m, "calls", dup_or(orig, "calls", cJSON_CreateNull));
	json_add(m, "usage", usage_json(&r->saved_usage, -1));
	json_add_num(m, "cost_usd", r->saved_cost);
	json_add(m, "usage_by_role", dup_or(orig, "usage_by_role", cJSON_CreateNull));
	json_add(m, "repl", dup_or(orig, "repl", cJSON_CreateNull));
	json_add(m, "timings", dup_or(orig, "timings", cJSON_CreateNull));
	return m;
}

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* The node's turns: [{iteration, reply, blocks: [{code, output}],
 * notices: [...]}]. */
static cJSON *turns_json(const struct rlm_result *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_turns; i++) {
		const struct rlm_turn *t = &r->turns[i];
		cJSON *o = cJSON_CreateObject(), *blocks = cJSON_CreateArray(),
		      *notices = cJSON_CreateArray();
		json_add_num(o, "iteration", t->iteration);
		json_add(o, "reply", str_or_null(t->reply));
		for (size_t k = 0; k < t->n_blocks; k++) {
			cJSON *b = cJSON_CreateObject();
			json_add(b, "code", str_or_null(t->blocks[k].code));
			json_add(b, "output", str_or_null(t->blocks[k].output));
			json_add(blocks, NULL, b);
		}
		for (size_t k = 0; k < t->n_notices; k++)
			json_add(notices, NULL, cJSON_CreateString(t->notices[k]));
		json_add(o, "blocks", blocks);
		json_add(o, "notices", notices);
		json_add(a, NULL, o);
	}
	return a;
}

/* The child RLMs of r, each with its own children (and turns). */
static cJSON *children_json(const struct rlm_result *r, bool turns)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_children; i++) {
		const struct rlm_result *ch = &r->children[i];
		cJSON *o = cJSON_CreateObject();
		json_add_num(o, "depth", ch->depth);
		json_add_num(o, "node", ch->node);
		json_add(o, "question", cut_string(ch->question ? ch->question : "", 200));
		json_add(o, "answer", str_or_null(ch->answer));
		json_add(o, "sources", rlm_sources_json(ch->sources, ch->n_sources));
		if (ch->sources_dropped)
			json_add_num(o, "sources_dropped", (double)ch->sources_dropped);
		if (ch->answer_truncated) {
			json_add_bool(o, "answer_truncated", true);
			json_add_num(o, "answer_bytes", (double)ch->answer_bytes);
		}
		json_add_str(o, "stop", rlm_stop_name(ch->stop));
		if (ch->stop_detail)
			json_add_str(o, "stop_detail", ch->stop_detail);
		json_add_bool(o, "complete", ch->complete);
		if (ch->failed)
			json_add_num(o, "failed", (double)ch->failed);
		json_add(o, "usage", usage_json(&ch->usage, -1));
		json_add_num(o, "cost_usd", ch->cost);
		json_add_num(o, "calls", (double)ch->calls);
		json_add_num(o, "iterations", ch->iterations);
		json_add_num(o, "sub_calls", (double)ch->sub_calls);
		json_add_num(o, "nodes", (double)ch->nodes);
		json_add_num(o, "solve_ms", (double)ch->solve_ns / 1e6);
		json_add_bool(o, "memo", ch->memo);
		if (ch->cache_hits || ch->memo_hits)
			json_add(o, "cache", cache_json(ch));
		if (ch->warning)
			json_add_str(o, "warning", ch->warning);
		if (turns)
			json_add(o, "turns", turns_json(ch));
		json_add(o, "children", children_json(ch, turns));
		json_add(a, NULL, o);
	}
	return a;
}

/* r's failures as [{kind, node, depth, reason}], the first
 * RLM_FAILURES_MAX (the count of all is "failed"). */
static cJSON *failures_json(const struct rlm_result *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_failures; i++) {
		const struct rlm_failure *f = &r->failures[i];
		cJSON *o = cJSON_CreateObject();
		json_add_str(o, "kind", f->kind);
		json_add_num(o, "node", f->node);
		json_add_num(o, "depth", f->depth);
		json_add_str(o, "reason", f->reason ? f->reason : "");
		json_add(a, NULL, o);
	}
	return a;
}

/* The discovery health of host tools and skills, and the calls made. */
static cJSON *tools_json(const struct rlm_result *r, const struct rlm_opts *ro)
{
	const struct rlm_tool_stats *t = &r->tools;
	cJSON *o = cJSON_CreateObject(), *calls;
	json_add_num(o, "servers", ro && ro->tools ? (double)tool_set_n_servers(ro->tools) : 0);
	json_add_num(o, "discovery", (double)(t->listings + t->searches + t->infos));
	json_add_num(o, "listings", (double)t->listings);
	json_add_num(o, "searches", (double)t->searches);
	json_add_num(o, "infos", (double)t->infos);
	json_add_num(o, "calls", (double)t->calls);
	json_add_num(o, "calls_ok", (double)t->calls_ok);
	json_add_num(o, "calls_without_info", (double)t->blind);
	json_add_num(o, "schema_refused", (double)t->schema_refused);
	json_add_num(o, "policy_refused", (double)t->policy_refused);
	json_add_num(o, "budget_refused", (double)t->budget_refused);
	json_add_num(o, "repeated_discovery", (double)t->repeated);
	json_add_num(o, "skill_discovery", (double)t->skill_discovery);
	json_add_num(o, "skills_loaded", (double)t->skills_loaded);
	json_add_num(o, "skills_saved", (double)t->skills_saved);
	json_add_num(o, "tool_ms", (double)t->tool_ns / 1e6);
	calls = r->tool_calls_json ? json_parse(r->tool_calls_json, strlen(r->tool_calls_json))
				   : NULL;
	json_add(o, "list", calls ? calls : cJSON_CreateArray());
	return o;
}

static bool tools_used(const struct rlm_result *r, const struct rlm_opts *ro)
{
	const struct rlm_tool_stats *t = &r->tools;
	return (ro && ro->tools) || t->listings || t->searches || t->infos || t->calls ||
	       t->skill_discovery || t->skills_loaded || t->skills_saved;
}

cJSON *rlm_result_json(const struct rlm_result *r, const struct rlm_opts *ro)
{
	cJSON *o = cJSON_CreateObject(), *calls, *t, *x, *per;
	cJSON *orig = r->memo && r->memo_json ? cJSON_Parse(r->memo_json) : NULL;
	bool repl = ro->strategy == RLM_REPL;
	{
		/* A structured answer as its JSON value (it validated). */
		cJSON *v = r->answer_json && r->answer ? cJSON_Parse(r->answer) : NULL;
		json_add(o, "answer", v ? v : str_or_null(r->answer));
		if (v)
			json_add_bool(o, "answer_json", true);
	}
	json_add_bool(o, "found", r->found);
	json_add(o, "sources", rlm_sources_json(r->sources, r->n_sources));
	if (r->sources_dropped)
		json_add_num(o, "sources_dropped", (double)r->sources_dropped);
	if (r->answer_truncated) {
		json_add_bool(o, "answer_truncated", true);
		json_add_num(o, "answer_bytes", (double)r->answer_bytes);
	}
	json_add_str(o, "stop", rlm_stop_name(r->stop));
	if (r->stop_detail)
		json_add_str(o, "stop_detail", r->stop_detail);
	json_add_bool(o, "complete", r->complete);
	json_add_num(o, "failed", (double)r->failed);
	json_add(o, "failures", failures_json(r));
	json_add_str(o, "strategy", repl ? "repl" : "tree");
	if (ro->model)
		json_add_str(o, "model", llm_model_name(ro->model));
	if (ro->model)
		json_add_str(o, "sub_model",
			     llm_model_name(ro->sub_model ? ro->sub_model : ro->model));
	json_add(o, "usage", usage_json(&r->usage, -1));
	json_add_num(o, "cost_usd", r->cost);
	if (repl) {
		per = cJSON_CreateObject();
		json_add(per, "root", usage_json(&r->root_usage, r->root_cost));
		json_add(per, "sub", usage_json(&r->sub_usage, r->sub_cost));
		json_add(o, "usage_by_role", per);
	}
	calls = cJSON_CreateObject();
	json_add_num(calls, "total", (double)r->calls);
	json_add_num(calls, "failed", (double)r->failed_calls);
	json_add_num(calls, "attempts", (double)r->attempts);
	if (repl) {
		/* Model calls: the root node's own, and the rest (its
		 * sub-calls and its child RLMs' calls), as usage_by_role. */
		json_add_num(calls, "root", (double)r->root_calls);
		json_add_num(calls, "sub", (double)(r->calls - r->root_calls));
	}
	json_add_num(calls, "cached", (double)r->cache_hits);
	json_add(o, "calls", calls);
	json_add(o, "cache", cache_json(r));
	x = cJSON_CreateObject();
	if (repl) {
		json_add_num(x, "iterations", r->iterations);
		json_add_num(x, "error_turns", r->error_turns);
		json_add_num(x, "execs", r->execs);
		json_add_num(x, "restarts", r->restarts);
		json_add_num(x, "compactions", r->compactions);
		json_add(o, "repl", x);
	} else {
		json_add_num(x, "parts", (double)r->leaves);
		json_add_num(x, "failed_parts", (double)r->failed_leaves);
		json_add_num(x, "combine_levels", r->levels);
		json_add_num(x, "part_bytes", (double)r->leaf_chars);
		json_add(o, "tree", x);
	}
	t = cJSON_CreateObject();
	json_add_num(t, "solve_ms", (double)r->solve_ns / 1e6);
	if (repl) {
		json_add_num(t, "root_ms", (double)r->root_ns / 1e6);
		json_add_num(t, "exec_ms", (double)r->exec_ns / 1e6);
		json_add_num(t, "sub_calls_ms", (double)r->sub_ns / 1e6);
		json_add_num(t, "worker_start_ms", (double)r->worker_start_ns / 1e6);
	}
	json_add(o, "timings", t);
	if (repl && r->sandbox)
		json_add(o, "sandbox", repl_sandbox_status_json(r->sandbox));
	if (r->warning)
		json_add_str(o, "warning", r->warning);
	if (repl) {
		json_add_num(o, "depth", r->depth);
		json_add_num(o, "max_depth", ro->max_depth ? ro->max_depth : RLM_DEF_MAX_DEPTH);
		json_add_num(o, "sub_calls", (double)r->sub_calls);
		json_add_num(o, "nodes", (double)r->nodes);
		if (ro->trajectory)
			json_add(o, "turns", turns_json(r));
		/* Answered from the memo: the original's children (this
		 * solve ran none), as it recorded them. */
		if (orig && cJSON_IsArray(json_get(orig, "children")))
			json_add(o, "children", dup_or(orig, "children", cJSON_CreateArray));
		else
			json_add(o, "children", children_json(r, ro->trajectory));
	}
	if (r->memo)
		json_add(o, "memo", memo_json(r, orig));
	if (tools_used(r, ro))
		json_add(o, "tools", tools_json(r, ro));
	json_add(o, "run", r->run_id[0] ? cJSON_CreateString(r->run_id) : cJSON_CreateNull());
	cJSON_Delete(orig);
	return o;
}
