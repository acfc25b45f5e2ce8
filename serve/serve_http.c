/* SPDX-License-Identifier: MIT */
/* serve/serve_http.c -- the HTTP side of `rlm serve`: every answer (JSON
 * bodies, errors and their statuses), routing, the bearer key, the
 * library's request callbacks, health and metrics.
 *
 * DESIGN
 * Every answer goes through serve__queue, which counts it for /metrics.
 * libmicrohttpd calls on_request once with the headers, once per piece of
 * the body and once at its end; the key, the route and the method are
 * checked on the first call, before any body is read, and a declared
 * length over --max-body is refused there too. A body is read into a
 * buffer capped at --max-body; a whole response is one buffer, so headers
 * and body leave in one write (common/httpd.h). The bearer token is
 * compared in time that depends on the key's length only. */
#include "serve_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- responses ---- */

enum MHD_Result serve__queue(struct req *rq, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret = httpd_queue(rq->c, status, r);
	if (ret == MHD_YES) {
		rq->status = status;
		if (status < ARRAY_SIZE(rq->sv->codes))
			atomic_fetch_add(&rq->sv->codes[status], 1);
	}
	return ret;
}

/* j (consumed) as the body, with the headers status calls for; allow: the
 * Allow header of a 405. */
static enum MHD_Result respond(struct req *rq, unsigned status, cJSON *j, const char *allow)
{
	const char *hdrs[7];
	size_t n = 0;
	if (*rq->session) {
		hdrs[n++] = "X-RLM-Session";
		hdrs[n++] = rq->session;
	}
	if (status == MHD_HTTP_TOO_MANY_REQUESTS) {
		hdrs[n++] = MHD_HTTP_HEADER_RETRY_AFTER;
		hdrs[n++] = "1";
	}
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE) {
		hdrs[n++] = MHD_HTTP_HEADER_RETRY_AFTER;
		hdrs[n++] = "5";
	}
	if (status == MHD_HTTP_UNAUTHORIZED) {
		hdrs[n++] = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
		hdrs[n++] = "Bearer";
	}
	if (allow) {
		hdrs[n++] = MHD_HTTP_HEADER_ALLOW;
		hdrs[n++] = allow;
	}
	hdrs[n] = NULL;
	return serve__queue(rq, status, httpd_json_response(j, hdrs));
}

enum MHD_Result serve__json(struct req *rq, unsigned status, cJSON *j)
{
	return respond(rq, status, j, NULL);
}

/* The doors that speak OpenAI's dialect. */
static bool openai_route(const struct req *rq)
{
	return rq->url && (strncmp(rq->url, "/v1/chat/", 9) == 0 ||
			   strcmp(rq->url, "/v1/models") == 0 ||
			   strncmp(rq->url, "/v1/models/", 11) == 0);
}

/* OpenAI's error type for an HTTP status. */
static const char *openai_type(unsigned status)
{
	switch (status) {
	case MHD_HTTP_UNAUTHORIZED:
		return "authentication_error";
	case MHD_HTTP_FORBIDDEN:
		return "permission_error";
	case MHD_HTTP_TOO_MANY_REQUESTS:
		return "rate_limit_error";
	default:
		return status >= 500 ? "server_error" : "invalid_request_error";
	}
}

/* {"error": {"type", "message"}}, with "code" and "param" when given; on
 * OpenAI's doors, OpenAI's shape: "type" its kind of error, "code" ours
 * (or the one given), "param" always (null when none). */
static cJSON *error_json(bool openai, unsigned status, const char *type, const char *code,
			 const char *param, const char *msg)
{
	const char *members[9];
	size_t n = 0;
	members[n++] = "type";
	members[n++] = openai ? openai_type(status) : type;
	if (code || openai) {
		members[n++] = "code";
		members[n++] = code ? code : type;
	}
	if (param || openai) {
		members[n++] = "param";
		members[n++] = param; /* null on OpenAI's doors when none */
	}
	members[n++] = "message";
	members[n++] = msg;
	members[n] = NULL;
	return httpd_error_json(members);
}

static enum MHD_Result verror(struct req *rq, unsigned status, const char *type, const char *code,
			      const char *param, const char *fmt, va_list ap) RLM_PRINTF(6, 0);

static enum MHD_Result verror(struct req *rq, unsigned status, const char *type, const char *code,
			      const char *param, const char *fmt, va_list ap)
{
	char msg[768];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (status >= 500 && status != MHD_HTTP_SERVICE_UNAVAILABLE)
		log_warn("serve: %s %s: %s", rq->method, rq->url, msg);
	return serve__json(rq, status, error_json(openai_route(rq), status, type, code, param, msg));
}

enum MHD_Result serve__error(struct req *rq, unsigned status, const char *type, const char *fmt, ...)
{
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	ret = verror(rq, status, type, NULL, NULL, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result serve__error_code(struct req *rq, unsigned status, const char *type, const char *code,
			       const char *param, const char *fmt, ...)
{
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	ret = verror(rq, status, type, code, param, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result serve__svc_error(struct req *rq, int rc, const char *msg)
{
	switch (rc) {
	case SVC_EBUSY:
		return serve__error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "busy", "%s", msg);
	case SVC_ECLOSING:
		return serve__error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "%s", msg);
	case SVC_ESESSBUSY:
		return serve__error(rq, MHD_HTTP_CONFLICT, "conflict", "%s", msg);
	case SVC_EFORBIDDEN:
		return serve__error(rq, MHD_HTTP_FORBIDDEN, "forbidden", "%s", msg);
	case RLM_ENOTFOUND:
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "%s", msg);
	case RLM_EINVAL:
	case RLM_ETOOBIG:
	case RLM_EPARSE:
	case RLM_ESANDBOX:
	case -ENOENT:
	case -ENOTDIR:
	case -EACCES:
	case -EISDIR:
	case -ELOOP:
	case -ENAMETOOLONG:
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request", "%s", msg);
	default:
		return serve__error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
	}
}

int serve__body_parse(const char *p, size_t len, cJSON **out, struct rlm_err *err)
{
	cJSON *j = len ? json_parse(p, len) : NULL;
	char where[256];
	*out = NULL;
	if (!j)
		return rlm_err_set(err, RLM_EPARSE, "%s",
				   !len ? "the body is empty: want a JSON object"
				   : memchr(p, '\0', len)
				       ? "the body is not valid JSON: it holds a NUL byte"
				       : "the body is not valid JSON");
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EPARSE, "the body is JSON but not an object");
	}
	/* cJSON would cut such a string at the NUL without a word. */
	if (json_nul_path(p, len, where, sizeof(where))) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL,
				   "%s: holds a NUL character (\\u0000), which this API does not "
				   "take",
				   where);
	}
	/* cJSON keeps both and reads the first; a proxy in front may have
	 * checked the last: such a body means two things, so none. */
	if (json_duplicate_msg(j, where, sizeof(where))) {
		rlm_err_set(err, RLM_EPARSE, "%s: a key may occur once in an object", where);
		cJSON_Delete(j);
		return RLM_EPARSE;
	}
	*out = j;
	return 0;
}

enum MHD_Result serve__body_error(struct req *rq, int rc, const struct rlm_err *err)
{
	return serve__error(rq, MHD_HTTP_BAD_REQUEST,
			 rc == RLM_EPARSE ? "invalid_json" : "invalid_request", "%s", err->msg);
}

bool serve__client_gone(int fd)
{
	struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
	char c;
	ssize_t n;
	if (fd < 0 || poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
		return true;
	/* Readable: the next request of a keep-alive client, or the end. */
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* ---- health and metrics ---- */

static enum MHD_Result route_health(struct req *rq)
{
	cJSON *st = serve_stats(rq->sv->svc), *o = cJSON_CreateObject();
	json_add_str(o, "status", atomic_load(&rq->sv->stopping) ? "stopping" : "ok");
	json_add_num(o, "solves_running", json_num(st, "solves_running", 0));
	cJSON_Delete(st);
	return serve__json(rq, MHD_HTTP_OK, o);
}

static void metric(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static enum MHD_Result route_metrics(struct req *rq)
{
	struct server *sv = rq->sv;
	cJSON *st = serve_stats(sv->svc), *it;
	struct buf b = BUF_INIT;
	char *text;
	size_t len;
	static const char *const statuses[] = {"done", "stopped", "failed", "cancelled", "incomplete"};
	static const char *const states[] = {"registered", "in_use", "cached"};
	metric(&b, "rlm_solves_total", "counter", "Solves ended, by status.");
	for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
		buf_printf(&b, "rlm_solves_total{status=\"%s\"} %.0f\n", statuses[i],
			   json_num(json_get(st, "solves_total"), statuses[i], 0));
	metric(&b, "rlm_solves_running", "gauge", "Solves running now.");
	buf_printf(&b, "rlm_solves_running %.0f\n", json_num(st, "solves_running", 0));
	metric(&b, "rlm_model_calls_total", "counter", "Model calls completed (cache hits too).");
	buf_printf(&b, "rlm_model_calls_total %.0f\n", json_num(st, "model_calls", 0));
	metric(&b, "rlm_cache_hits_total", "counter", "Model calls answered from the store.");
	buf_printf(&b, "rlm_cache_hits_total %.0f\n", json_num(st, "cache_hits", 0));
	metric(&b, "rlm_tokens_total", "counter", "Tokens of model calls.");
	buf_printf(&b, "rlm_tokens_total{kind=\"input\"} %.0f\n", json_num(st, "input_tokens", 0));
	buf_printf(&b, "rlm_tokens_total{kind=\"output\"} %.0f\n",
		   json_num(st, "output_tokens", 0));
	metric(&b, "rlm_cost_usd_total", "counter", "Cost of model calls, USD.");
	buf_printf(&b, "rlm_cost_usd_total %.9g\n", json_num(st, "cost_usd", 0));
	metric(&b, "rlm_solve_seconds", "histogram", "Wall time of ended solves.");
	cJSON_ArrayForEach(it, json_get(st, "solve_seconds_buckets"))
	{
		const cJSON *le = cJSON_GetArrayItem(it, 0), *n = cJSON_GetArrayItem(it, 1);
		if (cJSON_IsNumber(le))
			buf_printf(&b, "rlm_solve_seconds_bucket{le=\"%g\"} %.0f\n",
				   le->valuedouble, n ? n->valuedouble : 0);
		else
			buf_printf(&b, "rlm_solve_seconds_bucket{le=\"+Inf\"} %.0f\n",
				   n ? n->valuedouble : 0);
	}
	buf_printf(&b, "rlm_solve_seconds_sum %.6f\n", json_num(st, "solve_seconds_sum", 0));
	buf_printf(&b, "rlm_solve_seconds_count %.0f\n", json_num(st, "solve_seconds_count", 0));
	/* each family's samples right after its HELP and TYPE */
	metric(&b, "rlm_corpora", "gauge",
	       "Corpora held: registered (until deleted), in use by a solve, cached (unused).");
	for (size_t i = 0; i < ARRAY_SIZE(states); i++)
		buf_printf(&b, "rlm_corpora{state=\"%s\"} %.0f\n", states[i],
			   json_num(json_get(st, "corpora"), states[i], 0));
	metric(&b, "rlm_corpora_bytes", "gauge", "Memory of the corpora held, by state.");
	for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
		char key[32];
		snprintf(key, sizeof(key), "%s_bytes", states[i]);
		buf_printf(&b, "rlm_corpora_bytes{state=\"%s\"} %.0f\n", states[i],
			   json_num(json_get(st, "corpora"), key, 0));
	}
	{
		const cJSON *ss = json_get(st, "sessions");
		static const char *const ends[] = {"closed", "expired", "evicted"};
		metric(&b, "rlm_sessions", "gauge", "Sessions live now (--max-sessions).");
		buf_printf(&b, "rlm_sessions %.0f\n", json_num(ss, "live", 0));
		metric(&b, "rlm_sessions_opened_total", "counter", "Sessions opened.");
		buf_printf(&b, "rlm_sessions_opened_total %.0f\n", json_num(ss, "opened", 0));
		metric(&b, "rlm_sessions_ended_total", "counter",
		       "Sessions ended, by reason: closed (by a client, or at shutdown), expired "
		       "(--session-idle-timeout), evicted (--max-sessions, --max-session-memory).");
		for (size_t i = 0; i < ARRAY_SIZE(ends); i++)
			buf_printf(&b, "rlm_sessions_ended_total{reason=\"%s\"} %.0f\n", ends[i],
				   json_num(ss, ends[i], 0));
		metric(&b, "rlm_session_questions_total", "counter", "Questions asked in sessions.");
		buf_printf(&b, "rlm_session_questions_total %.0f\n", json_num(ss, "questions", 0));
		metric(&b, "rlm_session_memory_bytes", "gauge",
		       "Resident memory of the sessions' workers (--max-session-memory).");
		buf_printf(&b, "rlm_session_memory_bytes %.0f\n", json_num(ss, "memory_bytes", 0));
	}
	metric(&b, "rlm_runs_kept", "gauge", "Finished runs held in memory (--keep-runs).");
	buf_printf(&b, "rlm_runs_kept %.0f\n", json_num(st, "runs_kept", 0));
	metric(&b, "rlm_runs_kept_bytes", "gauge",
	       "Memory held by the runs in memory, running ones too (--keep-runs-bytes).");
	buf_printf(&b, "rlm_runs_kept_bytes %.0f\n", json_num(st, "runs_kept_bytes", 0));
	if (atomic_load(&sv->d)) {
		struct httpd_stats hs;
		httpd_stats(atomic_load(&sv->d), &hs);
		metric(&b, "rlm_http_connections", "gauge",
		       "Connections open: all, in_head (no request head yet), in_body (its body "
		       "not all in yet).");
		buf_printf(&b, "rlm_http_connections{state=\"open\"} %u\n", hs.open);
		buf_printf(&b, "rlm_http_connections{state=\"in_head\"} %u\n", hs.in_head);
		buf_printf(&b, "rlm_http_connections{state=\"in_body\"} %u\n", hs.in_body);
		metric(&b, "rlm_http_connections_dropped_total", "counter",
		       "Connections dropped: head_timeout, body_timeout (too slow), evicted (in "
		       "their head, or body without a key, for a newcomer at a limit), refused "
		       "(a newcomer at a limit).");
		buf_printf(&b, "rlm_http_connections_dropped_total{reason=\"head_timeout\"} %llu\n",
			   (unsigned long long)hs.head_timeouts);
		buf_printf(&b, "rlm_http_connections_dropped_total{reason=\"body_timeout\"} %llu\n",
			   (unsigned long long)hs.body_timeouts);
		buf_printf(&b, "rlm_http_connections_dropped_total{reason=\"evicted\"} %llu\n",
			   (unsigned long long)hs.evicted);
		buf_printf(&b, "rlm_http_connections_dropped_total{reason=\"refused\"} %llu\n",
			   (unsigned long long)hs.refused);
	}
	metric(&b, "rlm_http_requests_total", "counter", "HTTP responses sent, by status code.");
	for (size_t i = 100; i < ARRAY_SIZE(sv->codes); i++) {
		int64_t n = atomic_load(&sv->codes[i]);
		if (n)
			buf_printf(&b, "rlm_http_requests_total{code=\"%zu\"} %lld\n", i,
				   (long long)n);
	}
	cJSON_Delete(st);
	text = buf_detach(&b, &len);
	return serve__queue(
	    rq, MHD_HTTP_OK,
	    httpd_response(text, len, "text/plain; version=0.0.4; charset=utf-8", NULL));
}

/* ---- routing ---- */

enum route {
	R_HEALTH,
	R_METRICS,
	R_MODELS,
	R_SOLVE,
	R_CHAT,
	R_CORPORA,
	R_CORPUS,
	R_RUN,
	R_EVENTS,
	R_SKILLS,
	R_SKILL,
	R_SESSIONS,
	R_SESSION,
};

/* The routes; "*" is a run or corpus id or a skill, handed to the route. */
static const struct httpd_route routes[] = {
    {"/healthz", "GET, HEAD", R_HEALTH},
    {"/metrics", "GET, HEAD", R_METRICS},
    {"/v1/models", "GET, HEAD", R_MODELS},
    {"/v1/solve", "POST", R_SOLVE},
    {"/v1/chat/completions", "POST", R_CHAT},
    {"/v1/corpora", "POST", R_CORPORA},
    {"/v1/corpora/*", "GET, HEAD, DELETE", R_CORPUS},
    {"/v1/runs/*", "GET, HEAD, DELETE", R_RUN},
    {"/v1/runs/*/events", "GET, HEAD", R_EVENTS},
    {"/v1/skills", "GET, HEAD", R_SKILLS},
    {"/v1/skills/*", "GET, HEAD", R_SKILL},
    {"/v1/sessions", "GET, HEAD, POST", R_SESSIONS},
    {"/v1/sessions/*", "GET, HEAD, DELETE", R_SESSION},
    {"/v1/sessions/*/contexts", "POST", R_SESSION},
    {"/v1/sessions/*/solve", "POST", R_SESSION},
    {"/v1/sessions/*/reset", "POST", R_SESSION},
};

/* The route of url, or NULL; *id points into url at a run or corpus id. */
static const struct httpd_route *route_of(const char *url, const char **id)
{
	return httpd_route_find(routes, ARRAY_SIZE(routes), url, id);
}

/* Compare the bearer token with the key in time that depends on the key's
 * length only. */
static bool authorized(const struct server *sv, struct MHD_Connection *c)
{
	const char *h =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *tok;
	size_t klen, tlen;
	volatile unsigned char diff = 0;
	if (!sv->api_key)
		return true;
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	tok = h + 7;
	while (*tok == ' ')
		tok++;
	klen = strlen(sv->api_key);
	tlen = strlen(tok);
	diff = (unsigned char)(klen != tlen);
	for (size_t i = 0; i < klen; i++)
		diff |= (unsigned char)(sv->api_key[i] ^ (i < tlen ? tok[i] : 0));
	return diff == 0;
}

static enum MHD_Result not_allowed(struct req *rq, const struct httpd_route *rt)
{
	char msg[320];
	snprintf(msg, sizeof(msg), "method %.16s is not allowed for %.200s (allowed: %s)",
		 rq->method, rq->url, rt->methods);
	return respond(rq, MHD_HTTP_METHOD_NOT_ALLOWED,
		       error_json(openai_route(rq), MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method_not_allowed", NULL, NULL, msg),
		       rt->methods);
}

static enum MHD_Result dispatch(struct req *rq)
{
	const char *id = NULL;
	const struct httpd_route *rt = route_of(rq->url, &id);
	if (!rt)
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no route %s %.200s",
				 rq->method, rq->url);
	if (!httpd_route_allows(rt, rq->method))
		return not_allowed(rq, rt);
	/* A solve or a stream may be quiet longer than the idle timeout. */
	if (rt->id == R_SOLVE || rt->id == R_CHAT || rt->id == R_EVENTS || rt->id == R_SESSION)
		MHD_set_connection_option(
		    rq->c, MHD_CONNECTION_OPTION_TIMEOUT,
		    (unsigned)RLM_MIN(rq->sv->request_timeout_ns / 1000000000LL + 60, 86400));
	if (rq->body.too_big)
		return serve__error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
				 "the request body is larger than the limit of %zu bytes",
				 rq->sv->max_body);
	switch ((enum route)rt->id) {
	case R_HEALTH:
		return route_health(rq);
	case R_METRICS:
		return route_metrics(rq);
	case R_MODELS:
		return serve__route_models(rq);
	case R_SOLVE:
		return serve__route_solve(rq);
	case R_CHAT:
		return serve__route_chat(rq);
	case R_CORPORA:
		return serve__route_corpora_post(rq);
	case R_CORPUS:
		return serve__route_corpus(rq, id);
	case R_RUN:
		return serve__route_run(rq, id);
	case R_EVENTS:
		return serve__route_events(rq, id);
	case R_SKILLS:
		return serve__route_skills(rq, NULL);
	case R_SKILL:
		return serve__route_skills(rq, id);
	case R_SESSIONS:
		return serve__route_sessions(rq);
	case R_SESSION:
		return serve__route_session(rq, id);
	}
	return MHD_NO;
}

/* Called once with the headers, once per piece of the body, and once at
 * its end, when the answer is made. Auth and a declared body over the
 * limit are answered at once. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct server *sv = cls;
	struct req *rq = *con_cls;
	(void)version;
	if (!rq) {
		const char *cl = httpd_declared_over(c, sv->max_body);
		const char *id = NULL;
		const struct httpd_route *rt = route_of(url, &id);
		bool health = rt && rt->id == R_HEALTH && httpd_route_allows(rt, method);
		rq = xcalloc(1, sizeof(*rq));
		rq->sv = sv;
		rq->c = c;
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		rq->url = xstrdup(url);
		rq->t0 = time_now_ns();
		rq->fd = httpd_conn_fd(c);
		httpd_body_init(&rq->body, sv->max_body);
		*con_cls = rq;
		atomic_fetch_add(&sv->active, 1);
		/* Everything is answered before a body is read but a request
		 * that may have one: only GET /healthz goes without the key. */
		if (!health && !authorized(sv, c))
			return serve__error(rq, MHD_HTTP_UNAUTHORIZED, "unauthorized",
					 "a valid `Authorization: Bearer KEY` header is needed");
		/* a client with the key is not dropped for a newcomer while
		 * it sends its body (common/httpd.h) */
		if (sv->api_key && !health)
			httpd_conn_trust(c);
		if (!rt)
			return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no route %s %.200s",
					 rq->method, rq->url);
		if (!httpd_route_allows(rt, method))
			return not_allowed(rq, rt);
		if (cl)
			return serve__error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
					 "the request body of %.24s bytes is larger than the limit "
					 "of %zu bytes",
					 cl, sv->max_body);
		return MHD_YES;
	}
	rq->c = c;
	if (*data_size) {
		httpd_body_take(&rq->body, data, *data_size);
		/* A body without a length that goes on and on: read up to four
		 * times the limit, then drop the connection. */
		if (rq->body.dropped > 4 * (uint64_t)sv->max_body + 65536)
			return MHD_NO;
		*data_size = 0;
		return MHD_YES;
	}
	return dispatch(rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct server *sv = cls;
	struct req *rq = *con_cls;
	(void)c;
	if (!rq)
		return;
	if (sv->verbose)
		fprintf(stderr, "rlm serve: %s %s %u %.1f ms%s\n", rq->method, rq->url, rq->status,
			(double)(time_now_ns() - rq->t0) / 1e6,
			code == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (cut short)");
	httpd_body_release(&rq->body);
	free(rq->url);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub(&sv->active, 1);
}

static struct httpd *http_start(struct server *sv, int listen_fd)
{
	/* The library closes a connection idle this long: short, so that
	 * slow clients cannot hold the connections; a solve or a stream
	 * raises its own (dispatch) to outlast the request timeout. A
	 * client that trickles its head byte by byte is not idle: the head
	 * deadline and the eviction at the limits deal with it
	 * (common/httpd.h). */
	struct httpd_cfg hc = {
	    .on_request = on_request,
	    .on_completed = on_completed,
	    .arg = sv,
	    .connection_limit = sv->max_connections,
	    .per_ip_limit = sv->max_per_address,
	    .timeout_s = IDLE_TIMEOUT_S,
	    .head_timeout_s = sv->head_timeout_s,
	    .body_timeout_s = sv->body_timeout_s,
	    .quiesce = true,
	};
	return httpd_start(&hc, listen_fd);
}

/* ---- the server as serve/serve.h shows it ---- */

struct serve_server {
	struct server sv;
	struct httpd *d; /* NULL until serve_server_listen */
};

int serve_server_new(const struct svc_cfg *svc, const struct serve_http_cfg *cfg,
		     struct serve_server **out, struct rlm_err *err)
{
	struct serve_server *s = xcalloc(1, sizeof(*s));
	int rc;
	s->sv.api_key = cfg->api_key;
	s->sv.max_body = cfg->max_body;
	s->sv.request_timeout_ns = cfg->request_timeout_ns;
	s->sv.max_connections = cfg->max_connections ? cfg->max_connections : SERVE_MAX_CONNECTIONS;
	s->sv.max_per_address = cfg->max_per_address ? cfg->max_per_address : SERVE_MAX_PER_ADDRESS;
	s->sv.head_timeout_s = cfg->head_timeout_s ? cfg->head_timeout_s : SERVE_HEAD_TIMEOUT;
	s->sv.body_timeout_s = cfg->body_timeout_s ? cfg->body_timeout_s : SERVE_BODY_TIMEOUT;
	s->sv.started_s = time_wall_ms() / 1000;
	s->sv.verbose = cfg->verbose;
	if ((rc = serve_new(svc, &s->sv.svc, err))) {
		free(s);
		*out = NULL;
		return rc;
	}
	*out = s;
	return 0;
}

int serve_server_listen(struct serve_server *s, int listen_fd)
{
	s->d = http_start(&s->sv, listen_fd);
	atomic_store(&s->sv.d, s->d);
	return s->d ? 0 : RLM_EIO;
}

void serve_server_stopping(struct serve_server *s)
{
	atomic_store(&s->sv.stopping, true);
	if (s->d)
		httpd_quiesce(s->d);
	serve_close(s->sv.svc);
}

bool serve_server_idle(const struct serve_server *s)
{
	return serve_idle(s->sv.svc);
}

int serve_server_cancel(struct serve_server *s)
{
	return serve_shutdown(s->sv.svc, 0);
}

bool serve_server_quiet(const struct serve_server *s)
{
	return atomic_load(&s->sv.active) == 0;
}

void serve_server_free(struct serve_server *s)
{
	if (!s)
		return;
	if (s->d)
		httpd_stop(s->d);
	serve_free(s->sv.svc);
	free(s);
}
