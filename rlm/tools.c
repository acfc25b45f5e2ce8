/* SPDX-License-Identifier: MIT */
/* rlm/tools.c -- the controller's side of host tools: a node's "tool" call
 * frames (repl/repl.h), one JSON request per prompt, answered from the
 * solve's tool set (tool/tool.h) and its skills (rlm/skills.c), under the
 * policy and the budget, each request recorded, and the discovery health
 * of the solve counted (docs/tools.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve_int.h"
#include "../common/json.h"

#define KEEP_ARGS   1000 /* bytes of a call's arguments in the record */
#define KEEP_RESULT 2000 /* bytes of a result in the record */
#define MAX_PARALLEL 16  /* calls of one batch out at once */
#define MAX_SEEN 256     /* names and queries a node remembers */

/* One request of a frame and what became of it. */
struct req {
	struct calls *c;
	int iteration;
	const char *text;
	size_t len;
	char *reply; /* the JSON text the worker gets */
	bool error;
};

/* ---- replies ---- */

char *rlm__tool_ok(cJSON *value)
{
	cJSON *r = cJSON_CreateObject();
	char *s;
	json_add_bool(r, "ok", true);
	json_add(r, "value", value ? value : cJSON_CreateNull());
	s = json_print(r);
	cJSON_Delete(r);
	return s;
}

char *rlm__tool_err(const char *kind, const char *msg)
{
	cJSON *r = cJSON_CreateObject();
	char *s;
	json_add_bool(r, "ok", false);
	json_add_str(r, "error", msg);
	json_add_str(r, "kind", kind);
	s = json_print(r);
	cJSON_Delete(r);
	return s;
}

/* The kind of error a tool/ code stands for. */
static const char *err_kind(int rc)
{
	switch (rc) {
	case RLM_EINVAL: return "schema";
	case RLM_ENOTFOUND: return "notfound";
	case RLM_ETIMEOUT: return "timeout";
	default: return "server";
	}
}

/* ---- what a node has discovered (guarded by c->mu) ---- */

static bool seen(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* Remember s in v; true when it was there already. */
static bool remember(char ***v, size_t *n, const char *s)
{
	if (seen(*v, *n, s))
		return true;
	if (*n < MAX_SEEN) {
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[(*n)++] = xstrdup(s);
	}
	return false;
}

void rlm__tools_node_release(struct calls *c)
{
	for (size_t i = 0; i < c->n_tool_infos; i++)
		free(c->tool_infos[i]);
	for (size_t i = 0; i < c->n_tool_queries; i++)
		free(c->tool_queries[i]);
	free(c->tool_infos);
	free(c->tool_queries);
	c->tool_infos = c->tool_queries = NULL;
	c->n_tool_infos = c->n_tool_queries = 0;
}

/* ---- the solve's counts and record ---- */

void rlm__tool_count(struct calls *c, int64_t *field, int64_t by)
{
	pthread_mutex_lock(&c->nodes->tool_mu);
	*field += by;
	pthread_mutex_unlock(&c->nodes->tool_mu);
}

/* A JSON text cut to max bytes (where a UTF-8 sequence ends), as a str. */
static cJSON *cut_json(const cJSON *v, size_t max)
{
	char *s;
	cJSON *r;
	size_t n;
	if (!v)
		return cJSON_CreateNull();
	if (cJSON_IsString(v) && strlen(v->valuestring) <= max)
		return cJSON_CreateString(v->valuestring);
	s = json_print(v);
	n = strlen(s);
	if (n <= max && !cJSON_IsString(v)) {
		r = json_parse(s, n);
		free(s);
		return r ? r : cJSON_CreateNull();
	}
	if (cJSON_IsString(v)) {
		free(s);
		s = xstrdup(v->valuestring);
		n = strlen(s);
	}
	if (n > max) {
		n = text_utf8_floor(s, max);
		s[n] = 0;
		s = xrealloc(s, n + 40);
		strcat(s, " [... cut]");
	}
	r = cJSON_CreateString(s);
	free(s);
	return r;
}

/* Record one request: a "tool" event of the node (store, detail events)
 * and, for a call, an entry of the solve's list of calls. */
void rlm__tool_record(struct calls *c, int iteration, const char *op, const char *name,
		      const cJSON *args, const cJSON *value, const char *kind, const char *error,
		      int64_t ns)
{
	cJSON *d = cJSON_CreateObject();
	char *data;
	json_add_str(d, "op", op);
	if (name)
		json_add_str(d, "name", name);
	if (args)
		json_add(d, "arguments", cut_json(args, KEEP_ARGS));
	json_add_bool(d, "ok", !error);
	if (error) {
		json_add_str(d, "error", error);
		json_add_str(d, "kind", kind);
	} else if (value) {
		json_add(d, "result", cut_json(value, KEEP_RESULT));
	}
	json_add_num(d, "ms", (double)ns / 1e6);
	data = json_print(d);
	rlm__record_detail(c->o, c->nodes, c->node, c->parent, c->depth, iteration, "tool",
			   name ? name : op, strlen(name ? name : op), data);
	free(data);
	if (strcmp(op, "call") == 0) {
		pthread_mutex_lock(&c->nodes->tool_mu);
		if (!c->nodes->tool_calls)
			c->nodes->tool_calls = cJSON_CreateArray();
		if (cJSON_GetArraySize(c->nodes->tool_calls) < RLM_TOOL_CALLS_KEPT) {
			json_add_num(d, "node", c->node);
			json_add_num(d, "depth", c->depth);
			json_add_num(d, "iteration", iteration);
			json_add(c->nodes->tool_calls, NULL, d);
			d = NULL;
		}
		pthread_mutex_unlock(&c->nodes->tool_mu);
	}
	cJSON_Delete(d);
}

/* ---- the tool ops ---- */

static char *no_tools(void)
{
	return rlm__tool_err("notfound", "no tool servers are configured (rlm takes them with "
				     "--mcp-config FILE)");
}

static char *op_servers(struct req *q)
{
	struct calls *c = q->c;
	cJSON *v;
	bool again;
	rlm__tool_count(c, &STAT(c, listings), 1);
	pthread_mutex_lock(&c->mu);
	again = c->tool_listings++ > 0;
	pthread_mutex_unlock(&c->mu);
	if (again)
		rlm__tool_count(c, &STAT(c, repeated), 1);
	if (!c->o->tools)
		return rlm__tool_ok(cJSON_CreateArray());
	v = tool_set_servers_json(c->o->tools);
	rlm__tool_record(q->c, q->iteration, "servers", NULL, NULL, v, NULL, NULL, 0);
	return rlm__tool_ok(v);
}

static char *op_search(struct req *q, const cJSON *r)
{
	struct calls *c = q->c;
	struct rlm_err err = {0, ""};
	const char *query = json_str(r, "query"), *server = json_str(r, "server");
	char key[600];
	cJSON *v;
	bool again;
	if (!query)
		return rlm__tool_err("request", "search_tools: the query must be a str");
	rlm__tool_count(c, &STAT(c, searches), 1);
	snprintf(key, sizeof(key), "%s\n%s", server ? server : "", query);
	pthread_mutex_lock(&c->mu);
	again = remember(&c->tool_queries, &c->n_tool_queries, key);
	pthread_mutex_unlock(&c->mu);
	if (again)
		rlm__tool_count(c, &STAT(c, repeated), 1);
	if (!c->o->tools)
		return no_tools();
	v = tool_set_search_json(c->o->tools, query, server, (int)json_int(r, "limit", 10), &err);
	if (!v)
		return rlm__tool_err(err_kind(err.code), err.msg);
	rlm__tool_record(q->c, q->iteration, "search", query, NULL, v, NULL, NULL, 0);
	return rlm__tool_ok(v);
}

static char *op_info(struct req *q, const cJSON *r)
{
	struct calls *c = q->c;
	struct rlm_err err = {0, ""};
	const char *name = json_str(r, "name"), *full;
	char why[300];
	cJSON *v;
	if (!name)
		return rlm__tool_err("request", "get_tool_info: the name must be a str");
	rlm__tool_count(c, &STAT(c, infos), 1);
	if (!c->o->tools)
		return no_tools();
	v = tool_set_info_json(c->o->tools, name, &err);
	if (!v)
		return rlm__tool_err(err_kind(err.code), err.msg);
	/* the tool as its full name: a bare one is the same tool */
	full = json_str(v, "name") ? json_str(v, "name") : name;
	pthread_mutex_lock(&c->mu);
	remember(&c->tool_infos, &c->n_tool_infos, full);
	pthread_mutex_unlock(&c->mu);
	why[0] = 0;
	json_add_bool(v, "allowed",
		      tool_policy_allows(c->o->tool_policy, full,
					 cJSON_IsTrue(json_get(v, "read_only")), why, sizeof(why)));
	if (why[0])
		json_add_str(v, "why", why);
	rlm__tool_record(q->c, q->iteration, "info", full, NULL, NULL, NULL, NULL, 0);
	return rlm__tool_ok(v);
}

/* May one more tool call be made? */
static bool budget_take(struct calls *c)
{
	int64_t max = c->o->max_tool_calls;
	if (max <= 0)
		return true;
	if (atomic_fetch_add(&c->nodes->tool_calls_sent, 1) < max)
		return true;
	atomic_fetch_sub(&c->nodes->tool_calls_sent, 1);
	return false;
}

static int64_t call_deadline(const struct calls *c, int64_t frame_deadline)
{
	int64_t t = c->o->tool_timeout_ns > 0 ? c->o->tool_timeout_ns : TOOL_DEF_CALL_TIMEOUT_NS;
	int64_t d = time_now_ns() + t;
	if (c->budget->deadline_ns && c->budget->deadline_ns < d)
		d = c->budget->deadline_ns;
	if (frame_deadline && frame_deadline < d)
		d = frame_deadline;
	return d;
}

static char *op_call(struct req *q, const cJSON *r, int64_t frame_deadline)
{
	struct calls *c = q->c;
	struct rlm_err err = {0, ""};
	const char *name = json_str(r, "name");
	const cJSON *args = json_get(r, "arguments");
	char why[300], msg[600], *full = NULL, *reply;
	cJSON *v = NULL;
	int64_t t0;
	int rc;
	bool blind, ro = false;
	if (!name)
		return rlm__tool_err("request", "call_tool: the name must be a str");
	if (args && !cJSON_IsObject(args))
		return rlm__tool_err("request", "call_tool: the arguments must be a dict");
	rlm__tool_count(c, &STAT(c, calls), 1);
	if (!c->o->tools)
		return no_tools();
	/* Everything is judged on the tool's full name: a bare name must not
	 * slip past a deny pattern "server.*", nor count as a call without
	 * its info when the info was read under the other spelling. */
	if ((rc = tool_set_resolve(c->o->tools, name, &full, &ro, &err))) {
		rlm__tool_record(q->c, q->iteration, "call", name, args, NULL, err_kind(rc), err.msg, 0);
		return rlm__tool_err(err_kind(rc), err.msg);
	}
	pthread_mutex_lock(&c->mu);
	blind = !seen(c->tool_infos, c->n_tool_infos, full);
	pthread_mutex_unlock(&c->mu);
	if (blind)
		rlm__tool_count(c, &STAT(c, blind), 1);
	if (!tool_policy_allows(c->o->tool_policy, full, ro, why, sizeof(why))) {
		snprintf(msg, sizeof(msg), "call_tool('%.100s') refused: %s", full, why);
		rlm__tool_count(c, &STAT(c, policy_refused), 1);
		rlm__tool_record(q->c, q->iteration, "call", full, args, NULL, "policy", msg, 0);
		free(full);
		return rlm__tool_err("policy", msg);
	}
	if (!budget_take(c)) {
		snprintf(msg, sizeof(msg),
			 "call_tool('%.100s') refused: the tool-call budget is spent (%lld calls, "
			 "--max-tool-calls)",
			 full, (long long)c->o->max_tool_calls);
		rlm__tool_count(c, &STAT(c, budget_refused), 1);
		rlm__tool_record(q->c, q->iteration, "call", full, args, NULL, "budget", msg, 0);
		free(full);
		return rlm__tool_err("budget", msg);
	}
	t0 = time_now_ns();
	rc = tool_set_call(c->o->tools, full, args, call_deadline(c, frame_deadline), &v, &err);
	t0 = time_now_ns() - t0;
	rlm__tool_count(c, &STAT(c, tool_ns), t0);
	if (rc) {
		if (rc == RLM_EINVAL) {
			/* refused by the schema: the server saw nothing, so no
			 * call of the budget is spent */
			rlm__tool_count(c, &STAT(c, schema_refused), 1);
			if (c->o->max_tool_calls > 0)
				atomic_fetch_sub(&c->nodes->tool_calls_sent, 1);
		}
		rlm__tool_record(q->c, q->iteration, "call", full, args, NULL, err_kind(rc), err.msg, t0);
		free(full);
		return rlm__tool_err(err_kind(rc), err.msg);
	}
	rlm__tool_count(c, &STAT(c, calls_ok), 1);
	rlm__tool_record(q->c, q->iteration, "call", full, args, v, NULL, NULL, t0);
	free(full);
	reply = rlm__tool_ok(v);
	return reply;
}

/* ---- one request ---- */

static void answer(struct req *q, int64_t frame_deadline)
{
	cJSON *r = json_parse(q->text, q->len);
	const char *op = r ? json_str(r, "op") : NULL;
	char *s;
	if (!op)
		s = rlm__tool_err("request", "a tool request that is not a JSON object with an op");
	else if (strcmp(op, "servers") == 0)
		s = op_servers(q);
	else if (strcmp(op, "search") == 0)
		s = op_search(q, r);
	else if (strcmp(op, "info") == 0)
		s = op_info(q, r);
	else if (strcmp(op, "call") == 0)
		s = op_call(q, r, frame_deadline);
	else if (strncmp(op, "skill", 5) == 0)
		s = rlm__skills_op(q->c, op, r, q->iteration);
	else
		s = rlm__tool_err("request", "a tool request of unknown op");
	cJSON_Delete(r);
	q->error = strncmp(s, "{\"ok\":false", 11) == 0;
	q->reply = s;
}

struct batch {
	struct req *reqs;
	size_t n;
	int64_t deadline;
	pthread_mutex_t mu;
	size_t next;
};

static void *batch_thread(void *arg)
{
	struct batch *b = arg;
	for (;;) {
		size_t i;
		pthread_mutex_lock(&b->mu);
		i = b->next++;
		pthread_mutex_unlock(&b->mu);
		if (i >= b->n)
			return NULL;
		answer(&b->reqs[i], b->deadline);
	}
}

void rlm__tools_on_call(struct calls *c, const struct repl_call *call, char **texts, bool *errors)
{
	struct batch b;
	pthread_t th[MAX_PARALLEL];
	size_t n_th = 0;
	int iteration;
	pthread_mutex_lock(&c->mu);
	iteration = c->level;
	pthread_mutex_unlock(&c->mu);
	memset(&b, 0, sizeof(b));
	b.reqs = xcalloc(call->n, sizeof(*b.reqs));
	b.n = call->n;
	b.deadline = call->deadline_ns;
	for (size_t i = 0; i < call->n; i++)
		b.reqs[i] = (struct req){c, iteration, call->prompts[i], call->lens[i], NULL, false};
	if (call->n == 1) {
		answer(&b.reqs[0], b.deadline);
	} else {
		pthread_mutex_init(&b.mu, NULL);
		while (n_th < MAX_PARALLEL && n_th < call->n &&
		       pthread_create(&th[n_th], NULL, batch_thread, &b) == 0)
			n_th++;
		batch_thread(&b); /* this thread works too (and alone, when none started) */
		for (size_t i = 0; i < n_th; i++)
			pthread_join(th[i], NULL);
		pthread_mutex_destroy(&b.mu);
	}
	for (size_t i = 0; i < call->n; i++) {
		texts[i] = b.reqs[i].reply;
		errors[i] = b.reqs[i].error;
	}
	free(b.reqs);
}

/* ---- the solve's ---- */

void rlm__tools_result(struct rlm_nodes *t, struct rlm_result *out)
{
	pthread_mutex_lock(&t->tool_mu);
	out->tools = t->tool_stats;
	free(out->tool_calls_json);
	out->tool_calls_json = t->tool_calls ? json_print(t->tool_calls) : NULL;
	pthread_mutex_unlock(&t->tool_mu);
}

/* ---- the C API ---- */

struct tool_set *rlm_tools_new(void)
{
	return tool_set_new();
}

int rlm_tools_load_config(struct tool_set *ts, const char *path, struct rlm_err *err)
{
	return tool_set_load_config(ts, path, err);
}

int rlm_tool_register(struct tool_set *ts, const char *name, const char *input_schema_json,
		      const char *description, bool read_only, tool_host_fn *fn, void *arg,
		      struct rlm_err *err)
{
	return tool_set_register(ts, name, description, input_schema_json, read_only, fn, arg, err);
}

void rlm_tools_free(struct tool_set *ts)
{
	tool_set_free(ts);
}
