/* SPDX-License-Identifier: MIT */
/* tool/set.c -- the set of tool servers behind tool.h: servers from
 * configs and tools an embedder registers, the discovery model code does
 * (servers, search, one tool's info) and calls checked against their
 * schema before any server sees them. Servers are started here only
 * through tool__server_ensure (server.c), several at once when a request
 * needs all of them. */
#include "client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"

#define HOST "host"

struct tool_set *tool_set_new(void)
{
	struct tool_set *ts = xcalloc(1, sizeof(*ts));
	pthread_mutex_init(&ts->mu, NULL);
	ts->start_ns = TOOL_DEF_START_TIMEOUT_NS;
	ts->call_ns = TOOL_DEF_CALL_TIMEOUT_NS;
	return ts;
}

/* Run fn on each of the n elements of size bytes at base, in parallel
 * (one thread each) when there are several: starting or stopping servers
 * one after the other would add their times up. */
static void each_parallel(void *base, size_t size, size_t n, void *(*fn)(void *))
{
	pthread_t *th = xcalloc(n ? n : 1, sizeof(*th));
	bool *up = xcalloc(n ? n : 1, sizeof(*up));
	for (size_t i = 0; i < n; i++) {
		void *el = (char *)base + i * size;
		if (n == 1 || !(up[i] = pthread_create(&th[i], NULL, fn, el) == 0))
			fn(el);
	}
	for (size_t i = 0; i < n; i++)
		if (up[i])
			pthread_join(th[i], NULL);
	free(up);
	free(th);
}

/* One element of a struct tool__server * array stopped. */
static void *stop_one(void *arg)
{
	tool__server_stop(*(struct tool__server **)arg);
	return NULL;
}

void tool_set_free(struct tool_set *ts)
{
	if (!ts)
		return;
	each_parallel(ts->servers, sizeof(*ts->servers), ts->n, stop_one);
	for (size_t i = 0; i < ts->n; i++)
		tool__server_free(ts->servers[i]);
	free(ts->servers);
	pthread_mutex_destroy(&ts->mu);
	free(ts);
}

void tool_set_timeouts(struct tool_set *ts, int64_t start_ns, int64_t call_ns)
{
	__atomic_store_n(&ts->start_ns, start_ns > 0 ? start_ns : TOOL_DEF_START_TIMEOUT_NS,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ts->call_ns, call_ns > 0 ? call_ns : TOOL_DEF_CALL_TIMEOUT_NS,
			 __ATOMIC_RELAXED);
}

void tool_set_verbose(struct tool_set *ts, bool on)
{
	__atomic_store_n(&ts->verbose, on, __ATOMIC_RELAXED);
}

size_t tool_set_n_servers(const struct tool_set *ts)
{
	size_t n;
	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&ts->mu);
	n = ts->n;
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&ts->mu);
	return n;
}

cJSON *tool_set_server_names_json(const struct tool_set *ts)
{
	cJSON *a = cJSON_CreateArray();
	pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&ts->mu);
	for (size_t i = 0; i < ts->n; i++)
		json_add_str(a, NULL, ts->servers[i]->name);
	pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&ts->mu);
	return a;
}

/* ---- the list of servers ---- */

/* The servers now (a copy of the list; the servers live until the set is
 * freed): the caller frees the array. */
static struct tool__server **snapshot(struct tool_set *ts, size_t *n)
{
	struct tool__server **v;
	pthread_mutex_lock(&ts->mu);
	v = xcalloc(ts->n + 1, sizeof(*v));
	if (ts->n)
		memcpy(v, ts->servers, ts->n * sizeof(*v));
	*n = ts->n;
	pthread_mutex_unlock(&ts->mu);
	return v;
}

/* ts->mu held. */
static struct tool__server *find_locked(struct tool_set *ts, const char *name, size_t len)
{
	for (size_t i = 0; i < ts->n; i++)
		if (strlen(ts->servers[i]->name) == len &&
		    memcmp(ts->servers[i]->name, name, len) == 0)
			return ts->servers[i];
	return NULL;
}

static struct tool__server *find_server(struct tool_set *ts, const char *name, size_t len)
{
	struct tool__server *s;
	pthread_mutex_lock(&ts->mu);
	s = find_locked(ts, name, len);
	pthread_mutex_unlock(&ts->mu);
	return s;
}

static void append_locked(struct tool_set *ts, struct tool__server *s)
{
	ts->servers = xrealloc(ts->servers, (ts->n + 1) * sizeof(*ts->servers));
	ts->servers[ts->n++] = s;
}

int tool_set_add_config(struct tool_set *ts, const char *json, size_t len, const char *origin,
			struct rlm_err *err)
{
	struct tool__server **v;
	size_t n, i;
	int rc;
	if ((rc = tool__config_parse(json, len, origin, &v, &n, err)))
		return rc;
	pthread_mutex_lock(&ts->mu);
	for (i = 0; i < n && !find_locked(ts, v[i]->name, strlen(v[i]->name)); i++)
		;
	if (i < n)
		rc = rlm_err_set(err, RLM_EINVAL, "%s: server '%s' is defined twice", origin,
				 v[i]->name);
	for (size_t k = 0; !rc && k < n; k++)
		append_locked(ts, v[k]);
	pthread_mutex_unlock(&ts->mu);
	for (size_t k = 0; rc && k < n; k++) /* all or nothing */
		tool__server_free(v[k]);
	free(v);
	return rc;
}

int tool_set_load_config(struct tool_set *ts, const char *path, struct rlm_err *err)
{
	char *text;
	size_t len;
	int rc = file_read(path, 4u << 20, &text, &len, err);
	if (rc) {
		rlm_err_prefix(err, "cannot read MCP config '%s'", path);
		return rc == RLM_ETOOBIG ? rc : RLM_EIO;
	}
	rc = tool_set_add_config(ts, text, len, path, err);
	free(text);
	return rc;
}

/* ---- host tools ---- */

/* Is name a tool name MCP allows: [A-Za-z0-9_.-]{1,128}? */
static bool tool_name_ok(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (!text_is_alnum(name[i]) && !strchr("_.-", name[i]))
			return false;
	return n >= 1 && n <= 128;
}

/* Add t to the host server srv (made when new). ts->mu held. */
static int host_add_locked(struct tool_set *ts, const char *srv, size_t len, struct tool__tool *t,
			   struct rlm_err *err)
{
	struct tool__server *s = find_locked(ts, srv, len);
	int rc = 0;
	if (s && s->kind != TOOL__HOST)
		return rlm_err_set(err, RLM_EINVAL, "cannot register '%s': '%.*s' is an MCP server",
				   t->name, (int)len, srv);
	if (!s) {
		char *name = xstrndup(srv, len);
		s = tool__server_new(name, TOOL__HOST);
		s->description = xstrdup("tools the program running rlm offers");
		free(name);
		append_locked(ts, s);
	}
	pthread_mutex_lock(&s->mu);
	if (tool__server_find(s, t->name)) {
		rc = rlm_err_set(err, RLM_EINVAL, "cannot register '%s.%s': the name is taken",
				 s->name, t->name);
	} else {
		s->tools = xrealloc(s->tools, (s->n_tools + 1) * sizeof(*s->tools));
		s->tools[s->n_tools++] = *t;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int tool_set_register(struct tool_set *ts, const char *name, const char *description,
		      const char *input_schema_json, bool read_only, tool_host_fn *fn, void *arg,
		      struct rlm_err *err)
{
	const char *dot = name ? strchr(name, '.') : NULL;
	const char *srv = dot ? name : HOST, *tool = dot ? dot + 1 : name;
	size_t len = dot ? (size_t)(dot - name) : strlen(HOST);
	struct tool__tool t = {0};
	char sname[80];
	int rc;
	if (!name || !fn)
		return rlm_err_set(err, RLM_EINVAL,
				   "cannot register a tool without a name or function");
	snprintf(sname, sizeof(sname), "%.*s", (int)RLM_MIN(len, 70), srv);
	if (len > 64 || !tool__server_name_ok(sname) || !tool_name_ok(tool))
		return rlm_err_set(
		    err, RLM_EINVAL,
		    "cannot register '%.100s': not TOOL or SERVER.TOOL ([A-Za-z0-9_-] "
		    "server, [A-Za-z0-9_.-] tool)",
		    name);
	t.input = cJSON_Parse(input_schema_json ? input_schema_json : "{\"type\":\"object\"}");
	if (!cJSON_IsObject(t.input)) {
		cJSON_Delete(t.input);
		return rlm_err_set(err, RLM_EINVAL,
				   "cannot register '%s': its schema is not a JSON object", name);
	}
	t.name = xstrdup(tool);
	t.description = xstrdup(description ? description : "");
	t.read_only = read_only;
	t.fn = fn;
	t.arg = arg;
	pthread_mutex_lock(&ts->mu);
	rc = host_add_locked(ts, srv, len, &t, err);
	pthread_mutex_unlock(&ts->mu);
	if (rc)
		tool__tool_release(&t);
	return rc;
}

/* ---- starting what a request needs ---- */

struct ens {
	struct tool_set *ts;
	struct tool__server *s;
	int rc;
	struct rlm_err err;
};

static void *ensure_one(void *arg)
{
	struct ens *e = arg;
	e->rc = tool__server_ensure(e->ts, e->s, &e->err);
	return NULL;
}

/* Start every server of v (in parallel); a failure is kept in the
 * server's error, for servers_json. */
static void ensure_all(struct tool_set *ts, struct tool__server **v, size_t n)
{
	struct ens *e = xcalloc(n ? n : 1, sizeof(*e));
	for (size_t i = 0; i < n; i++) {
		e[i].ts = ts;
		e[i].s = v[i];
	}
	each_parallel(e, sizeof(*e), n, ensure_one);
	free(e);
}

/* ---- discovery ---- */

/* Is s up: its tools can be found and called (s->mu held)? A server that
 * failed keeps its last catalogue, which is not offered meanwhile. */
static bool up_locked(const struct tool__server *s)
{
	return s->kind == TOOL__HOST || s->conn;
}

/* s[0..) cut to TOOL__DESC_CAP bytes, at a character's end. */
static int add_cut(cJSON *o, const char *key, const char *s)
{
	size_t n = strlen(s);
	return json_add_strn(o, key, s,
			     n > TOOL__DESC_CAP ? text_utf8_floor(s, TOOL__DESC_CAP) : n);
}

static cJSON *server_json(struct tool__server *s)
{
	cJSON *o = cJSON_CreateObject();
	pthread_mutex_lock(&s->mu);
	json_add_str(o, "name", s->name);
	add_cut(o, "description", s->description ? s->description : s->info ? s->info : "");
	json_add_num(o, "tools", up_locked(s) ? (double)s->n_tools : 0);
	if (s->kind != TOOL__HOST && !s->conn && s->error)
		json_add_str(o, "error", s->error);
	else
		json_add(o, "error", cJSON_CreateNull());
	pthread_mutex_unlock(&s->mu);
	return o;
}

cJSON *tool_set_servers_json(struct tool_set *ts)
{
	size_t n;
	struct tool__server **v = snapshot(ts, &n);
	cJSON *a = cJSON_CreateArray();
	ensure_all(ts, v, n);
	for (int host = 0; host < 2; host++) /* config order, host tools last */
		for (size_t i = 0; i < n; i++)
			if ((v[i]->kind == TOOL__HOST) == host)
				json_add(a, NULL, server_json(v[i]));
	free(v);
	return a;
}

struct hit {
	char *name;
	char *description;
	double score;
};

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The hits of query among s's tools, appended to *v. */
static void rank_server(struct tool__server *s, const char *query, struct hit **v, size_t *n)
{
	pthread_mutex_lock(&s->mu);
	*v = xrealloc(*v, (*n + s->n_tools + 1) * sizeof(**v));
	for (size_t i = 0; up_locked(s) && i < s->n_tools; i++) {
		struct tool__tool *t = &s->tools[i];
		char *full = xasprintf("%s.%s", s->name, t->name);
		double sc = tool_rank(query, full, t->description);
		if (sc > 0)
			(*v)[(*n)++] = (struct hit){full, xstrdup(t->description), sc};
		else
			free(full);
	}
	pthread_mutex_unlock(&s->mu);
}

static cJSON *hits_json(struct hit *h, size_t n, int limit)
{
	cJSON *a = cJSON_CreateArray();
	qsort(h, n, sizeof(*h), hit_cmp);
	for (size_t i = 0; i < n; i++) {
		if ((int)i < limit) {
			cJSON *o = cJSON_CreateObject();
			json_add_str(o, "name", h[i].name);
			add_cut(o, "description", h[i].description);
			json_add_num(o, "score", (double)(int64_t)(h[i].score * 1000 + 0.5) / 1000);
			json_add(a, NULL, o);
		}
		free(h[i].name);
		free(h[i].description);
	}
	return a;
}

/* "a, b, c": the servers' names, for messages. */
static void names_of(struct tool__server **v, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && k + 1 < cap; i++)
		k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? ", " : "", v[i]->name);
}

cJSON *tool_set_search_json(struct tool_set *ts, const char *query, const char *server, int limit,
			    struct rlm_err *err)
{
	size_t n, nh = 0;
	struct tool__server **v = snapshot(ts, &n), *one = NULL;
	struct hit *h = NULL;
	cJSON *a;
	char names[300];
	if (server && !(one = find_server(ts, server, strlen(server)))) {
		names_of(v, n, names, sizeof(names));
		rlm_err_set(err, RLM_ENOTFOUND, "no tool server '%.80s' (the servers: %s)", server,
			    n ? names : "none");
		free(v);
		return NULL;
	}
	if (one) {
		v[0] = one;
		n = 1;
	}
	ensure_all(ts, v, n);
	for (size_t i = 0; i < n; i++)
		rank_server(v[i], query ? query : "", &h, &nh);
	limit = limit <= 0 ? 10 : RLM_MIN(limit, 100);
	a = hits_json(h, nh, limit);
	free(h);
	free(v);
	return a;
}

/* ---- one tool ---- */

/* How far name is from the full name "srv.tool": the closer of the edit
 * distances to the full name and to the tool's own name, less a bonus for
 * the words they share. */
static double distance(const char *name, const char *full, const char *tool)
{
	double d = (double)RLM_MIN(tool__edit_distance(name, full), tool__edit_distance(name, tool));
	return d - 2 * tool_rank(name, tool, "");
}

struct near {
	char *name;
	double d;
};

/* RLM_ENOTFOUND for name, naming the 3 closest tools. */
static int not_found(struct tool_set *ts, const char *name, struct rlm_err *err)
{
	size_t n;
	struct tool__server **v = snapshot(ts, &n);
	struct near best[3] = {{NULL, 1e9}, {NULL, 1e9}, {NULL, 1e9}};
	char list[300] = "";
	size_t k = 0;
	ensure_all(ts, v, n);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->mu);
		for (size_t j = 0; up_locked(v[i]) && j < v[i]->n_tools; j++) {
			char *full = xasprintf("%s.%s", v[i]->name, v[i]->tools[j].name);
			double d = distance(name, full, v[i]->tools[j].name);
			for (int b = 0; b < 3 && full; b++)
				if (d < best[b].d) {
					struct near t = best[b];
					best[b] = (struct near){full, d};
					full = t.name;
					d = t.d;
				}
			free(full);
		}
		pthread_mutex_unlock(&v[i]->mu);
	}
	for (int b = 0; b < 3 && best[b].name; b++) {
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s'%s'", b ? ", " : "",
				      best[b].name);
		free(best[b].name);
		k = RLM_MIN(k, sizeof(list) - 1);
	}
	free(v);
	if (!*list)
		return rlm_err_set(err, RLM_ENOTFOUND, "no tool '%.100s' (no tools are available)",
				   name);
	return rlm_err_set(err, RLM_ENOTFOUND, "no tool '%.100s'; the closest are %s", name, list);
}

/* The server of name "SRV.TOOL", started, and the tool's name in it. A name
 * without a server is looked up among the host tools, then among all. */
static int resolve(struct tool_set *ts, const char *name, struct tool__server **out,
		   const char **tool, struct rlm_err *err)
{
	const char *dot = strchr(name, '.');
	struct tool__server *s = dot ? find_server(ts, name, (size_t)(dot - name)) : NULL;
	int rc;
	*out = NULL;
	*tool = dot ? dot + 1 : name;
	if (!dot && (s = find_server(ts, HOST, strlen(HOST)))) {
		bool has;
		pthread_mutex_lock(&s->mu);
		has = tool__server_find(s, name) != NULL;
		pthread_mutex_unlock(&s->mu);
		s = has ? s : NULL;
	}
	if (!s && !dot) {
		size_t n, hits = 0;
		struct tool__server **v = snapshot(ts, &n);
		ensure_all(ts, v, n);
		for (size_t i = 0; i < n; i++) {
			pthread_mutex_lock(&v[i]->mu);
			if (tool__server_find(v[i], name))
				s = v[i], hits++;
			pthread_mutex_unlock(&v[i]->mu);
		}
		free(v);
		if (hits > 1)
			return rlm_err_set(err, RLM_ENOTFOUND,
					   "tool name '%.100s' is ambiguous: give it as SERVER.%s",
					   name, name);
	}
	if (!s)
		return not_found(ts, name, err);
	if ((rc = tool__server_ensure(ts, s, err)))
		return rc;
	*out = s;
	return 0;
}

/* The tool of a resolved name, copied: schema, flags, host function. */
static int lookup(struct tool_set *ts, const char *name, struct tool__server **s,
		  struct tool__tool *copy, struct rlm_err *err)
{
	const char *tool;
	struct tool__tool *t;
	int rc;
	memset(copy, 0, sizeof(*copy));
	if ((rc = resolve(ts, name, s, &tool, err)))
		return rc;
	pthread_mutex_lock(&(*s)->mu);
	if ((t = tool__server_find(*s, tool))) {
		*copy = *t;
		copy->name = xstrdup(t->name);
		copy->title = t->title ? xstrdup(t->title) : NULL;
		copy->description = xstrdup(t->description);
		copy->input = cJSON_Duplicate(t->input, 1);
		copy->output = t->output ? cJSON_Duplicate(t->output, 1) : NULL;
		copy->annotations = t->annotations ? cJSON_Duplicate(t->annotations, 1) : NULL;
	}
	pthread_mutex_unlock(&(*s)->mu);
	return t ? 0 : not_found(ts, name, err);
}

static cJSON *dup_or_null(const cJSON *j)
{
	return j ? cJSON_Duplicate(j, 1) : cJSON_CreateNull();
}

cJSON *tool_set_info_json(struct tool_set *ts, const char *name, struct rlm_err *err)
{
	struct tool__server *s;
	struct tool__tool t;
	cJSON *o;
	char *full;
	if (lookup(ts, name ? name : "", &s, &t, err))
		return NULL;
	o = cJSON_CreateObject();
	full = xasprintf("%s.%s", s->name, t.name);
	json_add_str(o, "name", full);
	json_add_str(o, "server", s->name);
	json_add_str(o, "tool", t.name);
	json_add(o, "title", t.title ? cJSON_CreateString(t.title) : cJSON_CreateNull());
	json_add_str(o, "description", t.description);
	json_add(o, "input_schema", cJSON_Duplicate(t.input, 1));
	json_add(o, "output_schema", dup_or_null(t.output));
	json_add(o, "parameters", tool_schema_params(t.input));
	json_add_bool(o, "read_only", t.read_only);
	json_add(o, "annotations", dup_or_null(t.annotations));
	free(full);
	tool__tool_release(&t);
	return o;
}

int tool_set_resolve(struct tool_set *ts, const char *name, char **full, bool *read_only,
		     struct rlm_err *err)
{
	struct tool__server *s;
	struct tool__tool t;
	int rc;
	*full = NULL;
	if ((rc = lookup(ts, name ? name : "", &s, &t, err)))
		return rc;
	*full = xasprintf("%s.%s", s->name, t.name);
	*read_only = t.read_only;
	tool__tool_release(&t);
	return 0;
}

/* A host tool's call: fn's text as the result. */
static int call_host(const struct tool__tool *t, const char *full, const cJSON *args,
		     cJSON **result, struct rlm_err *err)
{
	char *in = json_print(args), *out = NULL;
	int rc = t->fn(t->arg, in, &out);
	cJSON *v;
	free(in);
	if (rc) {
		rc = rlm_err_set(err, RLM_EIO, "tool '%s' failed: %.400s", full,
				 out && *out ? out : "(no message)");
		free(out);
		return rc;
	}
	v = out ? json_parse(out, strlen(out)) : NULL;
	if (!v)
		v = cJSON_CreateString(out ? out : "");
	free(out);
	*result = tool__result_cut(v);
	return 0;
}

int tool_set_call(struct tool_set *ts, const char *name, const cJSON *args, int64_t deadline_ns,
		  cJSON **result, struct rlm_err *err)
{
	struct tool__server *s;
	struct tool__tool t;
	cJSON *empty = NULL;
	char msg[400], *full;
	int rc;
	*result = NULL;
	if ((rc = lookup(ts, name ? name : "", &s, &t, err)))
		return rc;
	full = xasprintf("%s.%s", s->name, t.name);
	if (!args)
		args = empty = cJSON_CreateObject();
	if (!cJSON_IsObject(args))
		rc = rlm_err_set(err, RLM_EINVAL,
				 "bad arguments for '%s': they must be an object, not %s", full,
				 cJSON_IsArray(args) ? "an array" : "a scalar");
	else if (tool_schema_check(t.input, args, msg, sizeof(msg)))
		rc = rlm_err_set(err, RLM_EINVAL, "bad arguments for '%s': %s", full, msg);
	else if (t.fn)
		rc = call_host(&t, full, args, result, err);
	else {
		if (!deadline_ns)
			deadline_ns =
			    time_now_ns() + __atomic_load_n(&ts->call_ns, __ATOMIC_RELAXED);
		rc = tool__server_call(ts, s, t.name, args, deadline_ns, result, err);
	}
	cJSON_Delete(empty);
	free(full);
	tool__tool_release(&t);
	return rc;
}

/* ---- identity (the memo key) ---- */

static cJSON *strings_json(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; v && (n ? i < n : v[i] != NULL); i++)
		json_add_str(a, NULL, v[i]);
	return a;
}

cJSON *tool_set_identity_json(struct tool_set *ts)
{
	cJSON *a = cJSON_CreateArray();
	size_t n;
	struct tool__server **v = snapshot(ts, &n);
	for (size_t i = 0; i < n; i++) {
		struct tool__server *s = v[i];
		cJSON *o = cJSON_CreateObject();
		json_add_str(o, "name", s->name);
		json_add_num(o, "kind", (double)s->kind);
		if (s->argv)
			json_add(o, "argv", strings_json(s->argv, 0));
		if (s->n_env)
			json_add(o, "env", strings_json(s->env, s->n_env));
		if (s->cwd)
			json_add_str(o, "cwd", s->cwd);
		if (s->url)
			json_add_str(o, "url", s->url);
		if (s->n_headers)
			json_add(o, "headers", strings_json(s->headers, s->n_headers));
		if (s->kind == TOOL__HOST) {
			cJSON *tools = cJSON_CreateArray();
			pthread_mutex_lock(&s->mu);
			for (size_t k = 0; k < s->n_tools; k++) {
				cJSON *t = cJSON_CreateObject();
				json_add_str(t, "name", s->tools[k].name);
				json_add_str(t, "description", s->tools[k].description);
				json_add(t, "input", cJSON_Duplicate(s->tools[k].input, 1));
				json_add_bool(t, "read_only", s->tools[k].read_only);
				json_add(tools, NULL, t);
			}
			pthread_mutex_unlock(&s->mu);
			json_add(o, "tools", tools);
		}
		json_add(a, NULL, o);
	}
	free(v);
	return a;
}
