/* SPDX-License-Identifier: MIT */
/* tool/server.c -- one MCP server's life as rlm sees it: started on demand
 * (spawned or connected, initialize, notifications/initialized, tools/list
 * with paging), its tools/call requests, and what breaks it: a request not
 * answered by its deadline, a process that dies, a message that is not
 * JSON-RPC. A broken server is killed and dropped; the next request starts
 * it again, TOOL__MAX_STARTS times in a set's life, and after that it stays
 * failed with the reason (see client_int.h's DESIGN). */
#include "client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"

/* The revisions a server may answer initialize with (ours first). */
static const char *const revisions[] = {TOOL__MCP_VERSION, "2025-06-18", "2025-03-26",
					"2024-11-05"};

struct tool__server *tool__server_new(const char *name, enum tool__kind kind)
{
	struct tool__server *s = xcalloc(1, sizeof(*s));
	s->name = xstrdup(name);
	s->kind = kind;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	return s;
}

void tool__tool_release(struct tool__tool *t)
{
	free(t->name);
	free(t->title);
	free(t->description);
	cJSON_Delete(t->input);
	cJSON_Delete(t->output);
	cJSON_Delete(t->annotations);
	memset(t, 0, sizeof(*t));
}

static void tools_free(struct tool__tool *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tool__tool_release(&v[i]);
	free(v);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && (n ? i < n : v[i] != NULL); i++)
		free(v[i]);
	free(v);
}

void tool__server_free(struct tool__server *s)
{
	if (!s)
		return;
	tool__server_stop(s);
	free(s->name);
	free(s->description);
	strv_free(s->argv, 0);
	strv_free(s->env, s->n_env);
	free(s->cwd);
	free(s->url);
	strv_free(s->headers, s->n_headers);
	free(s->error);
	free(s->info);
	tools_free(s->tools, s->n_tools);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

struct tool__tool *tool__server_find(struct tool__server *s, const char *name)
{
	for (size_t i = 0; i < s->n_tools; i++)
		if (strcmp(s->tools[i].name, name) == 0)
			return &s->tools[i];
	return NULL;
}

/* ---- connections ---- */

static void conn_close(struct tool__conn *c, bool gentle)
{
	if (c->stdio)
		tool__stdio_close(c->stdio, gentle);
	if (c->http)
		tool__http_close(c->http);
	free(c);
}

/* A reference to the server's connection (NULL: it is not up). */
static struct tool__conn *conn_get(struct tool__server *s)
{
	struct tool__conn *c;
	pthread_mutex_lock(&s->mu);
	if ((c = s->conn))
		c->refs++;
	pthread_mutex_unlock(&s->mu);
	return c;
}

static void conn_put(struct tool__server *s, struct tool__conn *c)
{
	bool last;
	pthread_mutex_lock(&s->mu);
	last = --c->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (last)
		conn_close(c, false);
}

/* c broke (why): kill it so that every request on it ends now, and drop it
 * from the server, which the next request starts again. */
static void conn_fail(struct tool__server *s, struct tool__conn *c, const char *why)
{
	bool drop;
	if (c->stdio)
		tool__stdio_kill(c->stdio, why);
	pthread_mutex_lock(&s->mu);
	if ((drop = s->conn == c)) {
		s->conn = NULL;
		free(s->error);
		s->error = xstrdup(why);
	}
	pthread_mutex_unlock(&s->mu);
	if (drop)
		conn_put(s, c);
}

/* ---- JSON-RPC ---- */

/* Seconds for a message: "5", "0.5". */
static void secs(char *out, size_t cap, int64_t ns)
{
	snprintf(out, cap, "%.3g", (double)ns / 1e9);
}

/* body sent, *reply its response (see tool__http_post). stdio.c logs
 * what it sends and reads itself (the server's own messages too); the
 * HTTP exchanges are logged here. */
static int post(struct tool__conn *c, const char *body, int64_t id, int64_t deadline_ns,
		char **reply, struct rlm_err *err)
{
	size_t n = strlen(body);
	int rc;
	if (c->stdio)
		return tool__stdio_post(c->stdio, body, n, id, deadline_ns, reply, err);
	if (c->verbose)
		log_info("tool: %s <- %.*s%s", c->name, (int)RLM_MIN(n, 400), body,
			 n > 400 ? "..." : "");
	rc = tool__http_post(c->http, body, n, id, deadline_ns, reply, err);
	if (c->verbose && !rc && *reply)
		log_info("tool: %s -> %.400s%s", c->name, *reply,
			 strlen(*reply) > 400 ? "..." : "");
	return rc;
}

/* The "result" of a response text, or why it is not one. *broken: the
 * failure is the transport's (garbage), not an error the server answered. */
static int parse_reply(struct tool__server *s, const char *method, const char *reply,
		       cJSON **result, bool *broken, struct rlm_err *err)
{
	cJSON *j = json_parse(reply, strlen(reply)), *r = json_get(j, "result"),
	      *e = json_get(j, "error");
	int rc = 0;
	if (cJSON_IsObject(e)) {
		const char *m = json_str(e, "message");
		rc = rlm_err_set(err, RLM_EIO,
				 "server '%s' refused %s: %.300s (JSON-RPC error %lld)", s->name,
				 method, m ? m : "(no message)", (long long)json_int(e, "code", 0));
	} else if (!cJSON_IsObject(r)) {
		*broken = true;
		rc = rlm_err_set(err, RLM_EIO, "server '%s' answered %s with garbage: '%.60s'",
				 s->name, method, reply);
	} else {
		*result = cJSON_DetachItemViaPointer(j, r);
	}
	cJSON_Delete(j);
	return rc;
}

/* One request: method with params (consumed), answered by deadline_ns.
 * *broken is set when the failure means the connection is unusable (a
 * timeout, a dead process, garbage); then err says why. */
static int rpc_id(struct tool__server *s, struct tool__conn *c, const char *method,
		  cJSON *params, int64_t deadline_ns, cJSON **result, bool *broken, int64_t *id_out,
		  struct rlm_err *err);

static int rpc(struct tool__server *s, struct tool__conn *c, const char *method, cJSON *params,
	       int64_t deadline_ns, cJSON **result, bool *broken, struct rlm_err *err)
{
	int64_t id;
	return rpc_id(s, c, method, params, deadline_ns, result, broken, &id, err);
}

/* rpc, saying the request's id. */
static int rpc_id(struct tool__server *s, struct tool__conn *c, const char *method,
		  cJSON *params, int64_t deadline_ns, cJSON **result, bool *broken, int64_t *id_out,
		  struct rlm_err *err)
{
	cJSON *m = cJSON_CreateObject();
	int64_t id = __atomic_fetch_add(&c->next_id, 1, __ATOMIC_RELAXED), t0 = time_now_ns();
	char *body, *reply = NULL, sec[32];
	int rc;
	*result = NULL;
	*broken = false;
	json_add_str(m, "jsonrpc", "2.0");
	json_add_num(m, "id", (double)id);
	json_add_str(m, "method", method);
	json_add(m, "params", params ? params : cJSON_CreateObject());
	body = json_print(m);
	cJSON_Delete(m);
	*id_out = id;
	rc = post(c, body, id, deadline_ns, &reply, err);
	free(body);
	if (rc == RLM_ETIMEOUT) {
		secs(sec, sizeof(sec), deadline_ns - t0);
		rlm_err_set(err, rc, "server '%s' did not answer %s within %s s", s->name, method,
			    sec);
	}
	if (rc)
		*broken = true;
	else
		rc = parse_reply(s, method, reply, result, broken, err);
	free(reply);
	return rc;
}

/* A notification: no answer. */
static int notify(struct tool__conn *c, const char *method, struct rlm_err *err)
{
	char *body = xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method), *reply = NULL;
	int rc = post(c, body, -1, 0, &reply, err);
	free(reply);
	free(body);
	return rc;
}

/* ---- starting ---- */

static int conn_open(struct tool_set *ts, struct tool__server *s, struct tool__conn **out,
		     struct rlm_err *err)
{
	struct tool__conn *c = xcalloc(1, sizeof(*c));
	struct tool__spawn sp = {s->name,
				 (const char *const *)s->argv,
				 (const char *const *)s->env,
				 s->n_env,
				 s->cwd,
				 __atomic_load_n(&ts->verbose, __ATOMIC_RELAXED)};
	int rc = s->kind == TOOL__STDIO ? tool__stdio_open(&sp, &c->stdio, err)
					: tool__http_open(s->url, (const char *const *)s->headers,
							  s->n_headers, &c->http, err);
	if (rc) {
		free(c);
		return rc;
	}
	c->refs = 1;
	c->next_id = 1;
	c->name = s->name;
	c->verbose = sp.verbose;
	*out = c;
	return 0;
}

/* serverInfo's title (or name) and version, and the first line of its
 * instructions: what servers_json says of a server the config does not
 * describe. */
static char *describe(const cJSON *r)
{
	const cJSON *si = json_get(r, "serverInfo");
	const char *title = json_str(si, "title"), *ver = json_str(si, "version"),
		   *ins = json_str(r, "instructions");
	struct buf b = BUF_INIT;
	if (!title)
		title = json_str(si, "name");
	if (title)
		buf_puts(&b, title);
	if (title && ver)
		buf_printf(&b, " %s", ver);
	/* the first line with words, a Markdown heading's marks left out */
	while (ins && (text_is_space(*ins) || *ins == '#'))
		ins++;
	if (ins && *ins) {
		size_t n = strcspn(ins, "\r\n");
		if (b.len)
			buf_puts(&b, ": ");
		buf_append(&b, ins, n);
	}
	return buf_detach(&b, NULL);
}

/* initialize, and the revision it answers checked. */
static int initialize(struct tool__server *s, struct tool__conn *c, int64_t deadline_ns,
		      char **info, bool *broken, struct rlm_err *err)
{
	cJSON *p = cJSON_CreateObject(), *ci = cJSON_CreateObject(), *r;
	const char *v;
	size_t i;
	int rc;
	json_add_str(p, "protocolVersion", TOOL__MCP_VERSION);
	json_add(p, "capabilities", cJSON_CreateObject());
	json_add_str(ci, "name", "rlm");
	json_add_str(ci, "version", RLM_VERSION);
	json_add(p, "clientInfo", ci);
	if ((rc = rpc(s, c, "initialize", p, deadline_ns, &r, broken, err)))
		return rc;
	v = json_str(r, "protocolVersion");
	for (i = 0; v && i < ARRAY_SIZE(revisions); i++)
		if (strcmp(v, revisions[i]) == 0)
			break;
	if (!v || i == ARRAY_SIZE(revisions))
		rc = rlm_err_set(err, RLM_EIO,
				 "server '%s' speaks MCP revision '%.40s', which rlm does not "
				 "(it speaks %s, 2025-06-18, 2025-03-26 and 2024-11-05)",
				 s->name, v ? v : "(none)", TOOL__MCP_VERSION);
	else if (c->http)
		tool__http_set_version(c->http, v);
	if (!rc)
		*info = describe(r);
	cJSON_Delete(r);
	return rc;
}

/* One entry of tools/list into t; false when it has no name. */
static bool tool_from_json(const cJSON *j, struct tool__tool *t)
{
	const char *name = json_str(j, "name"), *title = json_str(j, "title"),
		   *desc = json_str(j, "description");
	const cJSON *in = json_get(j, "inputSchema"), *out = json_get(j, "outputSchema"),
		    *an = json_get(j, "annotations");
	if (!name || !*name)
		return false;
	if (!title)
		title = json_str(an, "title");
	memset(t, 0, sizeof(*t));
	t->name = xstrdup(name);
	t->title = title ? xstrdup(title) : NULL;
	t->description = xstrdup(desc ? desc : "");
	t->input =
	    cJSON_IsObject(in) ? cJSON_Duplicate(in, 1) : cJSON_Parse("{\"type\":\"object\"}");
	t->output = cJSON_IsObject(out) ? cJSON_Duplicate(out, 1) : NULL;
	t->annotations = cJSON_IsObject(an) ? cJSON_Duplicate(an, 1) : NULL;
	t->read_only = cJSON_IsTrue(json_get(an, "readOnlyHint"));
	return true;
}

/* The tools of one page appended (a name seen before is skipped). */
static void add_page(struct tool__server *s, const cJSON *r, struct tool__tool **v, size_t *n,
		     size_t *cap)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, json_get(r, "tools"))
	{
		struct tool__tool t;
		bool seen = false;
		if (*n >= TOOL__MAX_TOOLS) {
			log_warn("tool: server '%s' lists more than %d tools; the rest are ignored",
				 s->name, TOOL__MAX_TOOLS);
			return;
		}
		if (!tool_from_json(it, &t))
			continue;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = strcmp((*v)[i].name, t.name) == 0;
		if (seen) {
			tool__tool_release(&t);
			continue;
		}
		if (*n == *cap)
			*v = xrealloc(*v, (*cap = *cap ? 2 * *cap : 16) * sizeof(**v));
		(*v)[(*n)++] = t;
	}
}

/* tools/list, page after page (nextCursor), at most TOOL__MAX_PAGES. */
static int list_tools(struct tool__server *s, struct tool__conn *c, int64_t deadline_ns,
		      struct tool__tool **out, size_t *n_out, bool *broken, struct rlm_err *err)
{
	struct tool__tool *v = NULL;
	size_t n = 0, cap = 0;
	char *cursor = NULL;
	int rc = 0;
	for (int page = 0; page < TOOL__MAX_PAGES && n < TOOL__MAX_TOOLS; page++) {
		cJSON *p = cJSON_CreateObject(), *r;
		const char *next;
		if (cursor)
			json_add_str(p, "cursor", cursor);
		if ((rc = rpc(s, c, "tools/list", p, deadline_ns, &r, broken, err)))
			break;
		add_page(s, r, &v, &n, &cap);
		next = json_str(r, "nextCursor");
		free(cursor);
		cursor = next && *next ? xstrdup(next) : NULL;
		cJSON_Delete(r);
		if (!cursor)
			break;
	}
	free(cursor);
	if (rc) {
		tools_free(v, n);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

/* Start s: connect, initialize, list its tools, all by the start timeout. */
static int start(struct tool_set *ts, struct tool__server *s, struct tool__conn **out, char **info,
		 struct tool__tool **tools, size_t *n, struct rlm_err *err)
{
	int64_t deadline = time_now_ns() + __atomic_load_n(&ts->start_ns, __ATOMIC_RELAXED);
	struct tool__conn *c;
	bool broken;
	int rc;
	if ((rc = conn_open(ts, s, &c, err)))
		return rc;
	if ((rc = initialize(s, c, deadline, info, &broken, err)) ||
	    (rc = notify(c, "notifications/initialized", err)) ||
	    (rc = list_tools(s, c, deadline, tools, n, &broken, err))) {
		if (c->stdio)
			tool__stdio_kill(c->stdio, err ? err->msg : "start failed");
		conn_close(c, false);
		free(*info);
		*info = NULL;
		return rc;
	}
	*out = c;
	return 0;
}

/* err says which server it is about (the HTTP transport names the URL,
 * not the server). */
static void name_it(const struct tool__server *s, struct rlm_err *err)
{
	char q[80];
	snprintf(q, sizeof(q), "'%s'", s->name);
	if (err && !strstr(err->msg, q))
		rlm_err_prefix(err, "server '%s'", s->name);
}

/* Start s (s->mu held on entry and exit; dropped meanwhile). */
static int start_locked(struct tool_set *ts, struct tool__server *s, struct rlm_err *err)
{
	struct tool__conn *c = NULL;
	struct tool__tool *tools = NULL;
	size_t n = 0;
	char *info = NULL;
	struct rlm_err e = {0, ""};
	int rc;
	s->starting = true;
	s->starts++;
	pthread_mutex_unlock(&s->mu);
	rc = start(ts, s, &c, &info, &tools, &n, &e);
	if (rc)
		name_it(s, &e);
	pthread_mutex_lock(&s->mu);
	s->starting = false;
	s->gen++;
	free(s->error);
	s->error = rc ? xstrdup(e.msg) : NULL;
	s->error_code = rc;
	if (!rc) {
		s->conn = c;
		free(s->info);
		s->info = info;
		tools_free(s->tools, s->n_tools);
		s->tools = tools;
		s->n_tools = n;
	}
	pthread_cond_broadcast(&s->cv);
	if (rc)
		rlm_err_set(err, rc, "%s", e.msg);
	return rc;
}

/* tools/list again, after the server said its tools changed. */
static int refresh(struct tool_set *ts, struct tool__server *s, struct rlm_err *err)
{
	struct tool__conn *c = conn_get(s);
	struct tool__tool *tools = NULL;
	size_t n = 0;
	bool broken = false;
	int rc;
	if (!c)
		return 0;
	rc = list_tools(s, c, time_now_ns() + __atomic_load_n(&ts->call_ns, __ATOMIC_RELAXED),
			&tools, &n, &broken, err);
	if (!rc) {
		pthread_mutex_lock(&s->mu);
		tools_free(s->tools, s->n_tools);
		s->tools = tools;
		s->n_tools = n;
		pthread_mutex_unlock(&s->mu);
	} else if (broken) {
		conn_fail(s, c, err->msg);
	}
	conn_put(s, c);
	return rc;
}

int tool__server_ensure(struct tool_set *ts, struct tool__server *s, struct rlm_err *err)
{
	struct tool__conn *c;
	int rc = 0, gen;
	if (s->kind == TOOL__HOST)
		return 0;
	pthread_mutex_lock(&s->mu);
	gen = s->gen;
	while (s->starting)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->conn)
		rc = 0;
	else if (s->gen != gen) /* a start we waited for failed: its reason */
		rc = rlm_err_set(err, s->error_code ? s->error_code : RLM_EIO, "%s",
				 s->error ? s->error : "start failed");
	else if (s->starts >= TOOL__MAX_STARTS)
		rc = rlm_err_set(err, RLM_EIO,
				 "server '%s' is not available: it failed %d times (last: %.300s)",
				 s->name, s->starts, s->error ? s->error : "?");
	else
		rc = start_locked(ts, s, err);
	pthread_mutex_unlock(&s->mu);
	if (!rc && (c = conn_get(s))) {
		bool stale = c->stdio && tool__stdio_take_stale(c->stdio);
		conn_put(s, c);
		if (stale)
			rc = refresh(ts, s, err);
	}
	return rc;
}

/* ---- calls ---- */

/* A call ran out of the caller's time: is it the TOOL__MAX_TIMEOUTS-th in
 * a row (the server hangs: kill it), or may the server be kept? */
static bool too_slow(struct tool__server *s)
{
	bool hung;
	pthread_mutex_lock(&s->mu);
	hung = ++s->timeouts >= TOOL__MAX_TIMEOUTS;
	if (hung)
		s->timeouts = 0;
	pthread_mutex_unlock(&s->mu);
	return hung;
}

static void too_slow_reset(struct tool__server *s)
{
	pthread_mutex_lock(&s->mu);
	s->timeouts = 0;
	pthread_mutex_unlock(&s->mu);
}

/* Tell the server we gave up on request id (notifications/cancelled), so
 * that a slow but sound server is not killed for the caller's deadline.
 * false when even that cannot be sent within a second (then it is
 * broken). */
static bool cancel(struct tool__conn *c, int64_t id)
{
	struct rlm_err err = {0, ""};
	char *body = xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			       "\"params\":{\"requestId\":%lld,\"reason\":\"the caller's time ran "
			       "out\"}}",
			       (long long)id),
	     *reply = NULL;
	int rc = post(c, body, -1, time_now_ns() + 1000000000, &reply, &err);
	free(reply);
	free(body);
	return rc == 0;
}

int tool__server_call(struct tool_set *ts, struct tool__server *s, const char *tool,
		      const cJSON *args, int64_t deadline_ns, cJSON **result, struct rlm_err *err)
{
	struct tool__conn *c;
	cJSON *p, *r = NULL;
	bool broken = false;
	char who[200];
	int64_t id;
	int rc;
	*result = NULL;
	if ((rc = tool__server_ensure(ts, s, err)))
		return rc;
	if (deadline_ns <= time_now_ns()) /* nothing sent: a healthy server is not killed for it */
		return rlm_err_set(err, RLM_ETIMEOUT, "no time was left to call '%s.%s'", s->name,
				   tool);
	if (!(c = conn_get(s)))
		return rlm_err_set(err, RLM_EIO, "server '%s' is not available: %s", s->name,
				   s->error ? s->error : "it stopped");
	p = cJSON_CreateObject();
	json_add_str(p, "name", tool);
	json_add(p, "arguments", args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject());
	rc = rpc_id(s, c, "tools/call", p, deadline_ns, &r, &broken, &id, err);
	if (rc == RLM_ETIMEOUT && !too_slow(s))
		broken = !cancel(c, id); /* the caller's time ran out: the server is kept */
	else if (!rc || !broken)
		too_slow_reset(s);
	if (rc && broken) {
		name_it(s, err);
		conn_fail(s, c, err->msg);
	}
	conn_put(s, c);
	if (rc)
		return rc;
	snprintf(who, sizeof(who), "%s.%s", s->name, tool);
	rc = tool__result_value(r, who, result, err);
	cJSON_Delete(r);
	return rc;
}

void tool__server_stop(struct tool__server *s)
{
	struct tool__conn *c;
	bool last;
	pthread_mutex_lock(&s->mu);
	c = s->conn;
	s->conn = NULL;
	last = c && --c->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (last)
		conn_close(c, true);
}

/* ---- results ---- */

/* Content items as text: text items as they are, others as their JSON,
 * joined with "\n". */
static char *content_text(const cJSON *content)
{
	struct buf b;
	const cJSON *it, *items = cJSON_IsArray(content) ? content : NULL;
	buf_init(&b, 0);
	cJSON_ArrayForEach(it, items)
	{
		const char *type = json_str(it, "type"), *text = json_str(it, "text");
		if (b.len)
			buf_putc(&b, '\n');
		if (type && strcmp(type, "text") == 0 && text) {
			buf_puts(&b, text);
		} else {
			char *j = json_print(it);
			buf_puts(&b, j);
			free(j);
		}
	}
	return buf_detach(&b, NULL);
}

int tool__result_value(const cJSON *result, const char *who, cJSON **out, struct rlm_err *err)
{
	const cJSON *sc = json_get(result, "structuredContent");
	char *text;
	int rc = 0;
	*out = NULL;
	if (cJSON_IsTrue(json_get(result, "isError"))) {
		text = content_text(json_get(result, "content"));
		rc = rlm_err_set(err, RLM_EIO, "tool '%s' failed: %.400s", who,
				 *text ? text : "(no message)");
		free(text);
		return rc;
	}
	if (sc && !cJSON_IsNull(sc)) {
		*out = tool__result_cut(cJSON_Duplicate(sc, 1));
		return 0;
	}
	text = content_text(json_get(result, "content"));
	*out = tool__result_cut(cJSON_CreateString(text));
	free(text);
	return 0;
}

/* s[0..len) cut to fit TOOL_MAX_RESULT with the note after it. */
static cJSON *cut_text(const char *s, size_t len)
{
	char note[160];
	size_t keep;
	cJSON *v;
	char *t;
	snprintf(note, sizeof(note), "\n[... cut: the result is %zu bytes; the first %u are shown]",
		 len, TOOL_MAX_RESULT - 200);
	keep = text_utf8_floor(s, TOOL_MAX_RESULT - 200);
	t = xmalloc(keep + strlen(note) + 1);
	memcpy(t, s, keep);
	strcpy(t + keep, note);
	v = cJSON_CreateString(t);
	free(t);
	return v;
}

cJSON *tool__result_cut(cJSON *v)
{
	char *j;
	cJSON *c;
	size_t n;
	if (cJSON_IsString(v)) {
		n = strlen(v->valuestring);
		if (n <= TOOL_MAX_RESULT)
			return v;
		c = cut_text(v->valuestring, n);
		cJSON_Delete(v);
		return c;
	}
	j = json_print(v);
	n = strlen(j);
	if (n <= TOOL_MAX_RESULT) {
		free(j);
		return v;
	}
	/* A structured value too big to hand over whole: its JSON text, cut. */
	c = cut_text(j, n);
	free(j);
	cJSON_Delete(v);
	return c;
}
