/* SPDX-License-Identifier: MIT */
/* api/api_solve.c -- a solve through librlm's API: the context of each
 * kind, the options applied to rlm_opts, the events as JSON (and the usage
 * by model counted from them), the result as JSON. */
#include "api_int.h"
#include "../common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- contexts ---- */

/* "docs": a JSON array of strings, one document each. */
static int docs_context(const char *ctx, size_t len, struct corpus **out, struct rlm_err *err)
{
	cJSON *j = json_parse(ctx, len), *it;
	const char **items = NULL;
	size_t *lens = NULL, n = 0, i = 0;
	int rc;
	if (!j)
		return rlm_err_set(err, RLM_EINVAL, "context: \"docs\" is not valid JSON");
	if (!cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL,
				   "context: \"docs\" must be a JSON array of strings");
	}
	if (json_has_nul_escape(ctx, len)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "context: a document holds \\u0000");
	}
	n = (size_t)cJSON_GetArraySize(j);
	if (!n) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "context: \"docs\" is an empty array");
	}
	items = xcalloc(n, sizeof(*items));
	lens = xcalloc(n, sizeof(*lens));
	cJSON_ArrayForEach(it, j)
	{
		if (!cJSON_IsString(it)) {
			rc = rlm_err_set(err, RLM_EINVAL,
					 "context: \"docs\" item %zu is not a string", i);
			goto out;
		}
		items[i] = it->valuestring;
		lens[i] = strlen(it->valuestring);
		i++;
	}
	if ((rc = corpus_from_docs_memfd(items, lens, n, out)))
		rlm_err_set(err, rc, "context: %s", rlm_strerror(rc));
out:
	free(items);
	free(lens);
	cJSON_Delete(j);
	return rc;
}

int rlm_api__context(const char *ctx, size_t len, const char *kind, bool borrow,
		     struct corpus **out, struct rlm_err *err)
{
	size_t bad;
	int rc;
	*out = NULL;
	if (!ctx)
		return rlm_err_set(err, RLM_EINVAL, "context: none given");
	if (!kind || !strcmp(kind, "text")) {
		const char *nul = memchr(ctx, '\0', len);
		if (nul)
			return rlm_err_set(err, RLM_EINVAL, "context: a NUL byte at byte %zu",
					   (size_t)(nul - ctx));
		if (!text_utf8_valid(ctx, len, &bad))
			return rlm_err_set(err, RLM_EINVAL, "context: not valid UTF-8 at byte %zu",
					   bad);
		*out = borrow ? corpus_borrow_text(ctx, len) : corpus_from_text(ctx, len);
		return 0;
	}
	if (!strcmp(kind, "docs"))
		return docs_context(ctx, len, out, err);
	if (!strcmp(kind, "json")) {
		if ((rc = corpus_from_json(ctx, len, out, err)))
			rlm_err_prefix(err, "context");
		return rc;
	}
	if (!strcmp(kind, "file")) {
		struct corpus_opts co = {0};
		char *path = xstrndup(ctx, len);
		co.quiet = true;
		if (!*path || !strcmp(path, "-") || strlen(path) != len)
			rc = rlm_err_set(err, RLM_EINVAL, "context: \"file\" wants a path");
		else if ((rc = corpus_load(path, &co, out, err)))
			rlm_err_prefix(err, "context");
		free(path);
		return rc;
	}
	return rlm_err_set(err, RLM_EINVAL,
			   "context: unknown kind '%s' (known: text, docs, json, file)", kind);
}

/* ---- options ---- */

void rlm_api__opts_apply(struct rlm_api *a, const struct rlm_api__opts *o, struct rlm_opts *ro)
{
	*ro = o->ro;
	ro->pool = a->ms.pool;
	ro->model = a->ms.model;
	ro->sub_model = a->ms.sub;
	ro->params = a->ms.params;
	ro->store = a->store;
	/* under the lock: a tool added on another thread lands before this
	 * solve reads the sets, or is refused */
	pthread_mutex_lock(&a->mu);
	a->solved = true;
	ro->tools = a->tools;
	ro->sub_tools = a->sub_tools;
	pthread_mutex_unlock(&a->mu);
}

/* ---- events ---- */

static const char *const detail_kinds[] = {"turn", "turn_end", "call", "child", "child_end"};

void rlm_api__events_init(struct rlm_api__events *e, struct rlm_api *a, rlm_api_event_fn *fn,
			  void *arg, bool detail)
{
	memset(e, 0, sizeof(*e));
	e->a = a;
	e->fn = fn;
	e->arg = arg;
	e->detail = detail;
	e->by_model = cJSON_CreateObject();
	e->node_model = cJSON_CreateObject();
}

void rlm_api__events_release(struct rlm_api__events *e)
{
	cJSON_Delete(e->by_model);
	cJSON_Delete(e->node_model);
	memset(e, 0, sizeof(*e));
}

static void add_usage(cJSON *by_model, const char *model, int64_t calls, int64_t in, int64_t out,
		      double cost)
{
	cJSON *m = json_get(by_model, model);
	if (!m) {
		m = cJSON_CreateObject();
		json_add_num(m, "calls", 0);
		json_add_num(m, "input_tokens", 0);
		json_add_num(m, "output_tokens", 0);
		json_add_num(m, "cost", 0);
		json_add(by_model, model, m);
	}
	cJSON_SetNumberValue(json_get(m, "calls"), json_num(m, "calls", 0) + (double)calls);
	cJSON_SetNumberValue(json_get(m, "input_tokens"),
			     json_num(m, "input_tokens", 0) + (double)in);
	cJSON_SetNumberValue(json_get(m, "output_tokens"),
			     json_num(m, "output_tokens", 0) + (double)out);
	cJSON_SetNumberValue(json_get(m, "cost"), json_num(m, "cost", 0) + cost);
}

/* A "call" event's model: a sub-call names its own; a node's root and
 * compaction calls are its model's (the root's for node 0, a child's as
 * its "child" event said). */
static void count_call(struct rlm_api__events *e, const struct rlm_event *ev, const cJSON *d)
{
	const char *role = json_str(d, "role"), *model = NULL;
	const cJSON *u = json_get(d, "usage");
	char key[24];
	if (role && !strcmp(role, "sub")) {
		model = json_str(d, "model");
		if (!model && e->a->ms.sub)
			model = llm_model_name(e->a->ms.sub);
	} else if (ev->node) {
		snprintf(key, sizeof(key), "%d", ev->node);
		model = json_str(e->node_model, key);
	}
	if (!model)
		model = llm_model_name(e->a->ms.model);
	e->saw_call = true;
	add_usage(e->by_model, model, 1, json_int(u, "input_tokens", 0),
		  json_int(u, "output_tokens", 0), json_num(d, "cost", 0));
}

void rlm_api__event(const struct rlm_event *ev, void *arg)
{
	struct rlm_api__events *e = arg;
	cJSON *d = ev->data_json ? json_parse(ev->data_json, strlen(ev->data_json)) : NULL, *j;
	bool detail = false;
	char *text, key[24];
	for (size_t i = 0; i < ARRAY_SIZE(detail_kinds); i++)
		detail |= !strcmp(ev->kind, detail_kinds[i]);
	if (!strcmp(ev->kind, "call") && d)
		count_call(e, ev, d);
	if (!strcmp(ev->kind, "child") && d && json_str(d, "model")) {
		snprintf(key, sizeof(key), "%d", ev->node);
		cJSON_DeleteItemFromObjectCaseSensitive(e->node_model, key);
		json_add_str(e->node_model, key, json_str(d, "model"));
	}
	if (!e->fn || (detail && !e->detail)) {
		cJSON_Delete(d);
		return;
	}
	j = cJSON_CreateObject();
	json_add_str(j, "kind", ev->kind);
	json_add_num(j, "node", ev->node);
	json_add_num(j, "depth", ev->depth);
	json_add_num(j, "iteration", ev->iteration);
	json_add_num(j, "elapsed_ms", (double)ev->elapsed_ns / 1e6);
	json_add_strn(j, "text", ev->text ? ev->text : "", ev->text ? ev->len : 0);
	json_add(j, "data", d ? d : cJSON_CreateNull());
	text = json_print(j);
	cJSON_Delete(j);
	e->fn(e->arg, text);
	free(text);
}

/* ---- the result ---- */

static const char *code_name(int code)
{
	static const char *const names[] = {
	    "RLM_EINVAL", "RLM_ETOOBIG",   "RLM_EPARSE",  "RLM_EHTTP",	 "RLM_EPROVIDER",
	    "RLM_EAUTH",  "RLM_ETIMEOUT",  "RLM_ECANCEL", "RLM_EBUDGET", "RLM_ESANDBOX",
	    "RLM_EIO",	  "RLM_ENOTFOUND", "RLM_ESTORE",
	};
	const char *s;
	/* RLM_EINVAL is -1000, the next ones count up from it */
	if (code >= RLM_EINVAL && code < RLM_EINVAL + (int)ARRAY_SIZE(names))
		return names[code - RLM_EINVAL];
	if (code < 0 && code > -4096 && (s = strerrorname_np(-code)))
		return s;
	return "RLM_EUNKNOWN";
}

char *rlm_api__result(struct rlm_api *a, const struct rlm_api__opts *o, const struct rlm_opts *ro,
		      int rc, const struct rlm_result *res, const struct rlm_err *err,
		      struct rlm_api__events *e)
{
	cJSON *j = cJSON_CreateObject(), *er;
	char *out;
	json_add_bool(j, "ok", rc == 0);
	if (rc) {
		er = cJSON_CreateObject();
		json_add_str(er, "code", code_name(rc));
		json_add_str(er, "message", err->msg[0] ? err->msg : rlm_strerror(rc));
		json_add(j, "error", er);
	} else {
		json_add(j, "error", cJSON_CreateNull());
	}
	json_add(j, "result", rlm_result_json(res, ro));
	/* No call events (the tree strategy makes none): the whole usage
	 * under the root model. */
	if (!e->saw_call && res->calls)
		add_usage(e->by_model, llm_model_name(a->ms.model), res->calls,
			  res->usage.input_tokens, res->usage.output_tokens, res->cost);
	json_add(j, "usage_by_model", e->by_model);
	e->by_model = NULL;
	if (o->export_jsonl && a->store && res->run_id[0]) {
		char *jl = rlm_api_run_jsonl(a, res->run_id, NULL);
		json_add(j, "trajectory_jsonl", jl ? cJSON_CreateString(jl) : cJSON_CreateNull());
		free(jl);
	} else {
		json_add(j, "trajectory_jsonl", cJSON_CreateNull());
	}
	out = json_print(j);
	cJSON_Delete(j);
	return out;
}

/* ---- a solve ---- */

char *rlm_api_solve(struct rlm_api *a, const char *question, const char *ctx, size_t ctx_len,
		    const char *ctx_kind, const char *opts_json, struct rlm_api_job *job,
		    rlm_api_event_fn *ev, void *ev_arg, char **err)
{
	struct rlm_err e = {0, ""};
	struct rlm_api__opts o;
	struct rlm_api__events evs;
	struct rlm_result res = {0};
	struct rlm_opts ro;
	struct corpus *c = NULL;
	char *out;
	int rc;
	if (err)
		*err = NULL;
	if (!a) {
		rlm_err_set(&e, RLM_EINVAL, "no client");
		rlm_api__err(err, &e);
		return NULL;
	}
	if (rlm_api__opts_parse(opts_json, &o, &e)) {
		rlm_api__err(err, &e);
		return NULL;
	}
	if (question && !text_utf8_valid(question, strlen(question), NULL)) {
		rlm_err_set(&e, RLM_EINVAL, "question: not valid UTF-8");
		goto fail;
	}
	if (question && !*question) {
		rlm_err_set(&e, RLM_EINVAL, "question: empty (NULL: at the end of the context)");
		goto fail;
	}
	if (rlm_api__context(ctx, ctx_len, ctx_kind, true, &c, &e))
		goto fail;
	rlm_api__opts_apply(a, &o, &ro);
	if (o.ro.schema_json && rlm_schema_check(&ro, &e)) {
		rlm_err_prefix(&e, "options: 'schema'");
		goto fail;
	}
	if (ro.max_cost > 0 &&
	    rlm_check_cost(ro.model, ro.sub_model, ro.max_cost, "'max_cost'", &e))
		goto fail;
	rlm_api__events_init(&evs, a, ev, ev_arg, o.detail_events);
	ro.event = rlm_api__event;
	ro.event_arg = &evs;
	ro.detail_events = true; /* the "call" events count usage by model */
	ro.cancel = job ? &job->cancel : NULL;
	rc = rlm_solve(&ro, question ? question : RLM_QUESTION_AT_END, c, &res, &e);
	out = rlm_api__result(a, &o, &ro, rc, &res, &e, &evs);
	rlm_api__events_release(&evs);
	rlm_result_release(&res);
	corpus_free(c);
	rlm_api__opts_release(&o);
	return out;
fail:
	rlm_api__err(err, &e);
	corpus_free(c);
	rlm_api__opts_release(&o);
	return NULL;
}
