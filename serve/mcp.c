/* SPDX-License-Identifier: MIT */
/* serve/mcp.c -- the server behind `rlm mcp`: MCP over stdio (JSON-RPC
 * 2.0, one message per line, protocol revision 2025-11-25, and the earlier
 * ones negotiated) whose tools solve questions over contexts of any size
 * (serve/mcp_tools.c).
 *
 * DESIGN
 * The main thread reads stdin and answers what is quick itself:
 * initialize, ping, tools/list, every JSON-RPC error, and the
 * notifications (initialized, cancelled). Each tools/call runs on a thread
 * of its own (a solve can take minutes), so pings and cancellations are
 * answered while solves run; the threads write their progress and their
 * response under one mutex, a whole line at a time. The requests being
 * served are kept by id, each with its thread, which the main thread
 * joins once it has answered: notifications/cancelled marks one cancelled
 * (its response is never sent, as the protocol asks) and cancels its
 * solve. The protocol's stdout is a descriptor of its own: `rlm mcp`
 * points fd 1 at stderr once it has taken a copy, so a stray print cannot
 * corrupt the stream. EOF on stdin, or SIGTERM or SIGINT (read through
 * the command's signalfd; blocked in every thread), cancel the running
 * solves and wait for their threads. Batches (JSON arrays) are refused:
 * revision 2025-06-18 dropped them. What changed after 2024-11-05 and
 * applies to a server of tools only: structured tool output and titles
 * (2025-06-18), serverInfo.description and a tool's execution (task
 * support, 2025-11-25, where rlm's tools are plain requests: "forbidden");
 * bad tool arguments are tool errors (isError) in every revision, as
 * 2025-11-25 spells out (SEP-1303). */
#include "mcp_int.h"
#include "../common/common.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MCP_MAX_LINE ((size_t)64 << 20) /* one message, context included */

/* For "%.*s": at most max bytes of s, cut where a UTF-8 sequence ends (a
 * message is JSON: it must stay valid UTF-8). */
#define CUT(s, max) ((int)text_utf8_floor((s), strnlen((s), (max))))

/* The revisions whose initialize is answered in kind: those the official
 * TypeScript SDK supports (SUPPORTED_PROTOCOL_VERSIONS), newest first. */
static const char *const versions[] = {MCP_VERSION, "2025-06-18", "2025-03-26", "2024-11-05",
				       "2024-10-07"};

/* ---- sending ---- */

void mcp_send(struct mcp *m, cJSON *msg)
{
	char *s = json_print(msg);
	size_t n = strlen(s);
	int rc;
	cJSON_Delete(msg);
	if (m->verbose)
		rlm_log(LOG_INFO, "mcp: -> %.300s", s);
	s = xrealloc(s, n + 2);
	s[n++] = '\n';
	pthread_mutex_lock(&m->out_mu);
	if (!m->out_broken && (rc = file_write_all(m->out_fd, s, n)) < 0) {
		m->out_broken = true;
		log_warn("mcp: cannot write to stdout: %s", rlm_strerror(rc));
	}
	pthread_mutex_unlock(&m->out_mu);
	free(s);
}

static cJSON *message(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "jsonrpc", "2.0");
	json_add(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	return o;
}

/* Answer request id with result (consumed). */
static void reply(struct mcp *m, const cJSON *id, cJSON *result)
{
	cJSON *o = message(id);
	json_add(o, "result", result);
	mcp_send(m, o);
}

/* Answer request id (NULL: null) with a JSON-RPC error. */
static void reply_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
	RLM_PRINTF(4, 5);
static void reply_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
{
	cJSON *o = message(id), *e = cJSON_CreateObject();
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_add_num(e, "code", code);
	json_add_str(e, "message", msg);
	json_add(o, "error", e);
	mcp_send(m, o);
}

/* ---- calls ---- */

bool mcp_since(const char *version, const char *since)
{
	return strcmp(version, since) >= 0;
}

bool mcp_call_cancelled(struct mcp_call *c)
{
	bool v;
	pthread_mutex_lock(&c->m->mu);
	v = c->cancelled;
	pthread_mutex_unlock(&c->m->mu);
	return v;
}

bool mcp_call_set_run(struct mcp_call *c, struct svc_run *run)
{
	bool v;
	pthread_mutex_lock(&c->m->mu);
	c->run = run;
	v = c->cancelled;
	pthread_mutex_unlock(&c->m->mu);
	return v;
}

static void call_free(struct mcp_call *c)
{
	cJSON_Delete(c->id);
	cJSON_Delete(c->params);
	free(c->key);
	free(c->nul_arg);
	free(c);
}

/* The request being served under key, or NULL; under m->mu. */
static struct mcp_call *call_find(struct mcp *m, const char *key)
{
	struct mcp_call *c = m->calls;
	while (c && (c->done || strcmp(c->key, key) != 0))
		c = c->next;
	return c;
}

static void *call_main(void *arg)
{
	struct mcp_call *c = arg;
	cJSON *res = mcp_tool_call(c);
	bool cancelled, structured;
	pthread_mutex_lock(&c->m->mu);
	cancelled = c->cancelled;
	structured = mcp_since(c->m->version, MCP_STRUCTURED);
	c->done = true;
	pthread_mutex_unlock(&c->m->mu);
	if (!structured) /* the serialised copy in content stays */
		cJSON_DeleteItemFromObjectCaseSensitive(res, "structuredContent");
	if (cancelled) {
		log_debug("mcp: request %s was cancelled: no response", c->key);
		cJSON_Delete(res);
	} else {
		reply(c->m, c->id, res);
	}
	return NULL;
}

/* Join and free the calls whose threads have ended (all of them, waiting,
 * when wait is set). Reader thread only. */
static void reap(struct mcp *m, bool wait)
{
	struct mcp_call **pp = &m->calls, *c;
	pthread_mutex_lock(&m->mu);
	while ((c = *pp)) {
		if (wait || (c->done && pthread_tryjoin_np(c->thread, NULL) == 0)) {
			if (wait) {
				pthread_mutex_unlock(&m->mu);
				pthread_join(c->thread, NULL);
				pthread_mutex_lock(&m->mu);
			}
			*pp = c->next;
			call_free(c);
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&m->mu);
}

/* tools/call: check the envelope here (its faults are JSON-RPC errors),
 * then run the tool on a thread of its own. Takes msg's params. nul_arg:
 * an argument whose string holds \u0000 (the tool says so), or NULL. */
static void tools_call(struct mcp *m, cJSON *msg, const cJSON *id, const char *nul_arg)
{
	cJSON *params = json_get(msg, "params"), *name = json_get(params, "name");
	cJSON *args = json_get(params, "arguments");
	cJSON *token = json_get(json_get(params, "_meta"), "progressToken");
	struct mcp_call *c;
	const char *bad = NULL;
	char *key;
	int rc;

	if (!cJSON_IsObject(params))
		bad = "tools/call: params must be an object";
	else if (!cJSON_IsString(name))
		bad = "tools/call: missing the tool's name";
	else if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))
		bad = "tools/call: arguments must be an object";
	if (bad || !mcp_tool_known(name->valuestring)) {
		if (bad)
			reply_error(m, id, MCP_INVALID_PARAMS, "%s", bad);
		else
			reply_error(m, id, MCP_INVALID_PARAMS,
				    "unknown tool '%.*s' (known: solve, load_corpus, ask, open_session, "
				    "close_session)",
				    CUT(name->valuestring, 100), name->valuestring);
		return;
	}
	if (m->dry_run) {
		struct mcp_args a;
		cJSON *res = serve__mcp_args(name->valuestring, cJSON_IsObject(args) ? args : NULL,
					     nul_arg, &a);
		if (!res) {
			res = cJSON_CreateObject();
			json_add(res, "content", cJSON_CreateArray());
		}
		reply(m, id, res);
		return;
	}
	key = json_print(id);
	pthread_mutex_lock(&m->mu);
	if (call_find(m, key)) {
		pthread_mutex_unlock(&m->mu);
		reply_error(m, id, MCP_INVALID_REQUEST,
			    "request id %.*s is in use by a running request", CUT(key, 100), key);
		free(key);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->m = m;
	c->id = cJSON_Duplicate(id, 1);
	c->key = key;
	c->params = cJSON_DetachItemFromObject(msg, "params");
	c->tool = name->valuestring;
	c->args = cJSON_IsObject(args) ? args : NULL;
	c->token = cJSON_IsString(token) || cJSON_IsNumber(token) ? token : NULL;
	c->nul_arg = nul_arg ? xstrdup(nul_arg) : NULL;
	rc = pthread_create(&c->thread, NULL, call_main, c);
	if (rc) {
		pthread_mutex_unlock(&m->mu);
		reply_error(m, id, MCP_INTERNAL_ERROR, "cannot start a thread: %s", strerror(rc));
		call_free(c);
		return;
	}
	c->next = m->calls;
	m->calls = c;
	pthread_mutex_unlock(&m->mu);
}

/* notifications/cancelled: the request's response is dropped and its
 * solve cancelled. Unknown or finished requests are ignored. */
static void cancelled(struct mcp *m, const cJSON *params)
{
	const cJSON *rid = json_get(params, "requestId");
	const char *why = json_str(params, "reason");
	struct mcp_call *c;
	char *key;
	if (!cJSON_IsString(rid) && !cJSON_IsNumber(rid))
		return;
	key = json_print(rid);
	pthread_mutex_lock(&m->mu);
	if ((c = call_find(m, key))) { /* not done */
		c->cancelled = true;
		if (c->run)
			serve_run_cancel(c->run);
		log_info("mcp: request %s cancelled: %.200s", key, why ? why : "no reason given");
	}
	pthread_mutex_unlock(&m->mu);
	free(key);
}

/* ---- requests ---- */

static void initialize(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const char *want = json_str(params, "protocolVersion"), *version = MCP_VERSION;
	cJSON *r, *caps, *info;
	bool again;
	if (!want) {
		reply_error(m, id, MCP_INVALID_PARAMS,
			    "initialize: missing params.protocolVersion");
		return;
	}
	pthread_mutex_lock(&m->mu);
	again = m->initialized;
	m->initialized = true;
	pthread_mutex_unlock(&m->mu);
	if (again) {
		reply_error(m, id, MCP_INVALID_REQUEST, "initialize: already initialized");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
		if (strcmp(want, versions[i]) == 0)
			version = versions[i];
	pthread_mutex_lock(&m->mu);
	snprintf(m->version, sizeof(m->version), "%s", version);
	pthread_mutex_unlock(&m->mu);
	if (strcmp(version, want) != 0)
		log_info("mcp: the client asked for protocol revision '%.40s': offering %s", want,
			 version);
	r = cJSON_CreateObject();
	json_add_str(r, "protocolVersion", version);
	caps = cJSON_CreateObject();
	json_add(caps, "tools", cJSON_CreateObject());
	json_add(r, "capabilities", caps);
	info = cJSON_CreateObject();
	json_add_str(info, "name", "rlm");
	json_add_str(info, "title", "rlm: Recursive Language Model");
	json_add_str(info, "version", RLM_VERSION);
	if (mcp_since(version, MCP_TOOL_META))
		json_add_str(info, "description",
			     "Recursive Language Model: answers questions over contexts far "
			     "larger than a model's window (texts, files, directories, JSONL "
			     "corpora) by programming a sandboxed Python REPL that calls "
			     "sub-models");
	json_add(r, "serverInfo", info);
	json_add_str(r, "instructions",
		     "Use solve to answer a question over a context too large for your window: "
		     "a long text, a big file, a directory or a JSONL corpus on this machine. "
		     "Use load_corpus then ask for several questions over one corpus. "
		     "For a conversation, open_session over a context, ask with its "
		     "session_id question after question (the REPL keeps what was built "
		     "for the earlier ones), then close_session. "
		     "Solves can take minutes.");
	reply(m, id, r);
}

/* Does the message (an object) hold the key "id" twice at its top? */
static bool id_repeats(const cJSON *msg)
{
	const cJSON *c;
	int n = 0;
	cJSON_ArrayForEach(c, msg)
	{
		if (c->string && strcmp(c->string, "id") == 0 && ++n == 2)
			return true;
	}
	return false;
}

/* One message. */
static void handle(struct mcp *m, const char *s, size_t len)
{
	static const char args_at[] = "params.arguments.";
	cJSON *msg = json_parse(s, len), *id, *params;
	const char *method, *nul_arg = NULL;
	char nul[128], dupmsg[256];
	bool ready, has_nul, dup;
	if (m->verbose)
		rlm_log(LOG_INFO, "mcp: <- %.300s", s);
	if (!msg) {
		reply_error(m, NULL, MCP_PARSE_ERROR, "parse error: the message is not JSON");
		return;
	}
	if (!cJSON_IsObject(msg)) {
		reply_error(m, NULL, MCP_INVALID_REQUEST,
			    cJSON_IsArray(msg) ? "invalid request: batches are not supported "
						 "(protocol revision " MCP_VERSION ")"
					       : "invalid request: want a JSON-RPC 2.0 object");
		goto out;
	}
	/* A key twice anywhere: cJSON keeps both and reads the first, where
	 * a client or a proxy may have meant the last, so the message means
	 * two things and is refused. When the id repeats, the answer has
	 * none (JSON-RPC's null id: it could not be read). */
	dup = json_duplicate_msg(msg, dupmsg, sizeof(dupmsg));
	if (dup && id_repeats(msg)) {
		reply_error(m, NULL, MCP_INVALID_REQUEST,
			    "invalid request: duplicate key \"id\": a key may occur once in an "
			    "object");
		goto out;
	}
	id = json_get(msg, "id");
	params = json_get(msg, "params");
	method = json_str(msg, "method");
	if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id)) {
		reply_error(m, NULL, MCP_INVALID_REQUEST,
			    "invalid request: the id must be a string or a number");
		goto out;
	}
	if (!json_str(msg, "jsonrpc") || strcmp(json_str(msg, "jsonrpc"), "2.0") != 0) {
		reply_error(m, id, MCP_INVALID_REQUEST, "invalid request: jsonrpc must be \"2.0\"");
		goto out;
	}
	if (!method) {
		/* A response to a request of ours: there are none. */
		if (!json_get(msg, "method") && (json_get(msg, "result") || json_get(msg, "error")))
			goto out;
		reply_error(m, id, MCP_INVALID_REQUEST, "invalid request: missing the method");
		goto out;
	}
	if (dup) {
		if (id)
			reply_error(m, id, MCP_INVALID_REQUEST,
				    "invalid request: %s: a key may occur once in an object",
				    dupmsg);
		else /* a notification: never answered */
			log_info("mcp: notification dropped: %s", dupmsg);
		goto out;
	}
	if (params && !cJSON_IsObject(params)) {
		if (id)
			reply_error(m, id, cJSON_IsArray(params) ? MCP_INVALID_PARAMS
								 : MCP_INVALID_REQUEST,
				    "%.*s: params must be an object", CUT(method, 100), method);
		goto out;
	}
	/* cJSON cuts a string at \u0000: only a tool's argument may hold one
	 * (the tool says what is wrong with it), nothing of the protocol. */
	has_nul = json_nul_path(s, len, nul, sizeof(nul));
	if (has_nul && strcmp(method, "tools/call") == 0 &&
	    strncmp(nul, args_at, sizeof(args_at) - 1) == 0) {
		nul_arg = nul + sizeof(args_at) - 1;
	} else if (has_nul) {
		if (id)
			reply_error(m, id, MCP_INVALID_REQUEST,
				    "invalid request: %s holds a NUL character (\\u0000)", nul);
		else
			log_info("mcp: notification dropped: %s holds a NUL character", nul);
		goto out;
	}
	if (!id) { /* a notification: never answered */
		if (strcmp(method, "notifications/cancelled") == 0)
			cancelled(m, params);
		else if (strcmp(method, "notifications/initialized") != 0)
			log_debug("mcp: notification '%.100s' ignored", method);
		goto out;
	}
	pthread_mutex_lock(&m->mu);
	ready = m->initialized;
	pthread_mutex_unlock(&m->mu);
	if (strcmp(method, "initialize") == 0)
		initialize(m, id, params);
	else if (strcmp(method, "ping") == 0)
		reply(m, id, cJSON_CreateObject());
	else if (!ready)
		reply_error(m, id, MCP_INVALID_REQUEST,
			    "not initialized: the first request must be initialize");
	else if (strcmp(method, "tools/list") == 0)
		reply(m, id, mcp_tools_list(m->version));
	else if (strcmp(method, "tools/call") == 0)
		tools_call(m, msg, id, nul_arg);
	else
		reply_error(m, id, MCP_METHOD_NOT_FOUND, "unknown method '%.*s'", CUT(method, 100),
			    method);
out:
	cJSON_Delete(msg);
}

/* One line read (without its '\n'): a message unless empty. */
static void line_end(struct mcp *m, struct mcp_reader *rd)
{
	size_t len = rd->line.len;
	if (!rd->skipping) {
		while (len && (rd->line.p[len - 1] == '\r' || rd->line.p[len - 1] == ' ' ||
			       rd->line.p[len - 1] == '\t'))
			len--;
		if (len)
			handle(m, rd->line.p, len);
	}
	buf_reset(&rd->line);
	rd->skipping = false;
}

void serve__mcp_feed(struct mcp *m, struct mcp_reader *rd, const char *p, size_t n)
{
	const char *s, *e;
	for (s = p; s < p + n; s = e + 1) {
		e = memchr(s, '\n', (size_t)(p + n - s));
		if (!e)
			e = p + n;
		if (!rd->skipping && buf_append(&rd->line, s, (size_t)(e - s))) {
			reply_error(m, NULL, MCP_INVALID_REQUEST,
				    "invalid request: a message over %zu MiB", MCP_MAX_LINE >> 20);
			rd->skipping = true;
		}
		if (e == p + n)
			break;
		line_end(m, rd);
	}
}

void serve__mcp_end(struct mcp *m, struct mcp_reader *rd)
{
	line_end(m, rd);
}

/* Read messages from in_fd until EOF or a signal on sfd. */
static void serve(struct mcp *m, int in_fd, int sfd)
{
	struct mcp_reader rd = {BUF_INIT, false};
	char chunk[1 << 16];
	buf_init(&rd.line, MCP_MAX_LINE);
	for (;;) {
		struct pollfd p[2] = {{in_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
		ssize_t n;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("mcp: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents) {
			log_info("mcp: signal: stopping");
			break;
		}
		if (!p[0].revents)
			continue;
		n = read(in_fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			if (n < 0)
				log_error("mcp: cannot read stdin: %s", strerror(errno));
			serve__mcp_end(m, &rd);
			break;
		}
		serve__mcp_feed(m, &rd, chunk, (size_t)n);
		reap(m, false);
	}
	buf_release(&rd.line);
}

/* Cancel every request being served and wait for their threads. */
static void stop_calls(struct mcp *m)
{
	int n = 0;
	pthread_mutex_lock(&m->mu);
	for (struct mcp_call *c = m->calls; c; c = c->next) {
		if (c->done)
			continue;
		c->cancelled = true;
		if (c->run)
			serve_run_cancel(c->run);
		n++;
	}
	pthread_mutex_unlock(&m->mu);
	if (n)
		log_info("mcp: cancelling %d running request(s)", n);
	reap(m, true);
}

int serve_mcp(const struct serve_mcp_cfg *cfg, int in_fd, int out_fd, int sig_fd,
	      struct rlm_err *err)
{
	struct mcp m = {0};
	int rc;
	m.out_fd = out_fd;
	m.verbose = cfg->verbose;
	m.max_iterations = cfg->svc.base.max_iterations;
	if ((rc = serve_new(&cfg->svc, &m.svc, err)))
		return rc;
	pthread_mutex_init(&m.out_mu, NULL);
	pthread_mutex_init(&m.mu, NULL);
	log_info("mcp: serving %s over stdio (protocol revision %s)", serve_model_name(m.svc),
		 MCP_VERSION);
	serve(&m, in_fd, sig_fd);
	stop_calls(&m);
	serve_free(m.svc);
	pthread_mutex_destroy(&m.mu);
	pthread_mutex_destroy(&m.out_mu);
	return 0;
}
