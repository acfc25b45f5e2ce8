/* SPDX-License-Identifier: MIT */
/* serve/serve_http.c -- the HTTP side of `rlm serve`: every answer (JSON
 * bodies, errors and their statuses), routing, the bearer key, the
 * library's request callbacks, health and metrics.
 *
 * DESIGN
 * Every answer goes through srv_queue, which counts it for /metrics.
 * libmicrohttpd calls on_request once with the headers, once per piece of
 * the body and once at its end; the key, the route and the method are
 * checked on the first call, before any body is read, and a declared
 * length over --max-body is refused there too. A body is read into a
 * buffer capped at --max-body; a whole response is one buffer, so headers
 * and body leave in one write (accepted sockets get TCP_NODELAY:
 * cli_on_connection). The bearer token is compared in time that depends
 * on the key's length only. */
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

enum MHD_Result srv_queue(struct req *rq, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(rq->c, status, r);
	MHD_destroy_response(r);
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
	char *s = json_print(j);
	struct MHD_Response *r;
	cJSON_Delete(j);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (status == MHD_HTTP_TOO_MANY_REQUESTS)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "5");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	return srv_queue(rq, status, r);
}

enum MHD_Result srv_json(struct req *rq, unsigned status, cJSON *j)
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
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	json_add_str(e, "type", openai ? openai_type(status) : type);
	if (code || openai)
		json_add_str(e, "code", code ? code : type);
	if (param)
		json_add_str(e, "param", param);
	else if (openai)
		json_add(e, "param", cJSON_CreateNull());
	json_add_str(e, "message", msg);
	json_add(root, "error", e);
	return root;
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
	return srv_json(rq, status, error_json(openai_route(rq), status, type, code, param, msg));
}

enum MHD_Result srv_error(struct req *rq, unsigned status, const char *type, const char *fmt, ...)
{
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	ret = verror(rq, status, type, NULL, NULL, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result srv_error_code(struct req *rq, unsigned status, const char *type, const char *code,
			       const char *param, const char *fmt, ...)
{
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	ret = verror(rq, status, type, code, param, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result srv_svc_error(struct req *rq, int rc, const char *msg)
{
	switch (rc) {
	case SVC_EBUSY:
		return srv_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "busy", "%s", msg);
	case SVC_ECLOSING:
		return srv_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "%s", msg);
	case SVC_EFORBIDDEN:
		return srv_error(rq, MHD_HTTP_FORBIDDEN, "forbidden", "%s", msg);
	case RLM_ENOTFOUND:
		return srv_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "%s", msg);
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
		return srv_error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request", "%s", msg);
	default:
		return srv_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", msg);
	}
}

int serve__body_parse(const char *p, size_t len, cJSON **out, struct rlm_err *err)
{
	cJSON *j = len ? json_parse(p, len) : NULL;
	char where[128];
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
	*out = j;
	return 0;
}

enum MHD_Result srv_body_error(struct req *rq, int rc, const struct rlm_err *err)
{
	return srv_error(rq, MHD_HTTP_BAD_REQUEST,
			 rc == RLM_EPARSE ? "invalid_json" : "invalid_request", "%s", err->msg);
}

bool srv_client_gone(int fd)
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
	cJSON *st = svc_stats(rq->sv->svc), *o = cJSON_CreateObject();
	json_add_str(o, "status", atomic_load(&rq->sv->stopping) ? "stopping" : "ok");
	json_add_num(o, "solves_running", json_num(st, "solves_running", 0));
	cJSON_Delete(st);
	return srv_json(rq, MHD_HTTP_OK, o);
}

static void metric(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static enum MHD_Result route_metrics(struct req *rq)
{
	struct server *sv = rq->sv;
	cJSON *st = svc_stats(sv->svc), *it;
	struct buf b = BUF_INIT;
	struct MHD_Response *r;
	static const char *const statuses[] = {"done", "stopped", "failed", "cancelled"};
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
	metric(&b, "rlm_runs_kept", "gauge", "Finished runs held in memory (--keep-runs).");
	buf_printf(&b, "rlm_runs_kept %.0f\n", json_num(st, "runs_kept", 0));
	metric(&b, "rlm_http_requests_total", "counter", "HTTP responses sent, by status code.");
	for (size_t i = 100; i < ARRAY_SIZE(sv->codes); i++) {
		int64_t n = atomic_load(&sv->codes[i]);
		if (n)
			buf_printf(&b, "rlm_http_requests_total{code=\"%zu\"} %lld\n", i,
				   (long long)n);
	}
	cJSON_Delete(st);
	r = MHD_create_response_from_buffer(b.len, b.p, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		buf_release(&b);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	return srv_queue(rq, MHD_HTTP_OK, r);
}

/* ---- routing ---- */

enum route {
	R_NONE,
	R_HEALTH,
	R_METRICS,
	R_MODELS,
	R_SOLVE,
	R_CHAT,
	R_CORPORA,
	R_CORPUS,
	R_RUN,
	R_EVENTS,
};

/* The route of url; *id points into url at a run or corpus id. */
static enum route route_of(const char *url, const char **id)
{
	static const struct {
		const char *path;
		enum route rt;
	} fixed[] = {{"/healthz", R_HEALTH},	       {"/metrics", R_METRICS},
		     {"/v1/models", R_MODELS},	       {"/v1/solve", R_SOLVE},
		     {"/v1/chat/completions", R_CHAT}, {"/v1/corpora", R_CORPORA}};
	const char *p;
	size_t n;
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (strcmp(url, fixed[i].path) == 0)
			return fixed[i].rt;
	*id = NULL;
	if (strncmp(url, "/v1/corpora/", 12) == 0 && url[12] && !strchr(url + 12, '/')) {
		*id = url + 12;
		return R_CORPUS;
	}
	if (strncmp(url, "/v1/runs/", 9) != 0 || !url[9])
		return R_NONE;
	p = url + 9;
	n = strcspn(p, "/");
	*id = p;
	if (!p[n])
		return R_RUN;
	return strcmp(p + n, "/events") == 0 ? R_EVENTS : R_NONE;
}

static const char *allowed(enum route rt)
{
	switch (rt) {
	case R_SOLVE:
	case R_CHAT:
	case R_CORPORA:
		return "POST";
	case R_RUN:
	case R_CORPUS:
		return "GET, HEAD, DELETE";
	default:
		return "GET, HEAD";
	}
}

static bool method_ok(enum route rt, const char *m)
{
	bool get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
	switch (rt) {
	case R_SOLVE:
	case R_CHAT:
	case R_CORPORA:
		return strcmp(m, "POST") == 0;
	case R_RUN:
	case R_CORPUS:
		return get || strcmp(m, "DELETE") == 0;
	default:
		return get;
	}
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

static enum MHD_Result not_allowed(struct req *rq, enum route rt)
{
	char msg[320];
	snprintf(msg, sizeof(msg), "method %.16s is not allowed for %.200s (allowed: %s)",
		 rq->method, rq->url, allowed(rt));
	return respond(rq, MHD_HTTP_METHOD_NOT_ALLOWED,
		       error_json(openai_route(rq), MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method_not_allowed", NULL, NULL, msg),
		       allowed(rt));
}

static enum MHD_Result dispatch(struct req *rq)
{
	const char *id = NULL;
	enum route rt = route_of(rq->url, &id);
	if (rt == R_NONE)
		return srv_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no route %s %.200s",
				 rq->method, rq->url);
	if (!method_ok(rt, rq->method))
		return not_allowed(rq, rt);
	/* A solve or a stream may be quiet longer than the idle timeout. */
	if (rt == R_SOLVE || rt == R_CHAT || rt == R_EVENTS)
		MHD_set_connection_option(
		    rq->c, MHD_CONNECTION_OPTION_TIMEOUT,
		    (unsigned)RLM_MIN(rq->sv->request_timeout_ns / 1000000000LL + 60, 86400));
	if (rq->too_big)
		return srv_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
				 "the request body is larger than the limit of %zu bytes",
				 rq->sv->max_body);
	switch (rt) {
	case R_HEALTH:
		return route_health(rq);
	case R_METRICS:
		return route_metrics(rq);
	case R_MODELS:
		return route_models(rq);
	case R_SOLVE:
		return route_solve(rq);
	case R_CHAT:
		return route_chat(rq);
	case R_CORPORA:
		return route_corpora_post(rq);
	case R_CORPUS:
		return route_corpus(rq, id);
	case R_RUN:
		return route_run(rq, id);
	case R_EVENTS:
		return route_events(rq, id);
	case R_NONE:
		break;
	}
	return MHD_NO;
}

/* Called once with the headers, once per piece of the body, and once at
 * its end, when the answer is made. Auth and a declared body over the
 * limit are answered at once. */
enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct server *sv = cls;
	struct req *rq = *con_cls;
	(void)version;
	if (!rq) {
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		const char *id = NULL;
		enum route rt = route_of(url, &id);
		bool health = rt == R_HEALTH && method_ok(rt, method);
		const union MHD_ConnectionInfo *ci;
		rq = xcalloc(1, sizeof(*rq));
		rq->sv = sv;
		rq->c = c;
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		rq->url = xstrdup(url);
		rq->t0 = now_ns();
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		rq->fd = ci ? ci->connect_fd : -1;
		buf_init(&rq->body, sv->max_body);
		*con_cls = rq;
		atomic_fetch_add(&sv->active, 1);
		/* Everything is answered before a body is read but a request
		 * that may have one: only GET /healthz goes without the key. */
		if (!health && !authorized(sv, c))
			return srv_error(rq, MHD_HTTP_UNAUTHORIZED, "unauthorized",
					 "a valid `Authorization: Bearer KEY` header is needed");
		if (rt == R_NONE)
			return srv_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no route %s %.200s",
					 rq->method, rq->url);
		if (!method_ok(rt, method))
			return not_allowed(rq, rt);
		if (cl && strtoull(cl, NULL, 10) > sv->max_body)
			return srv_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
					 "the request body of %.24s bytes is larger than the limit "
					 "of %zu bytes",
					 cl, sv->max_body);
		return MHD_YES;
	}
	rq->c = c;
	if (*data_size) {
		if (!rq->too_big && buf_append(&rq->body, data, *data_size)) {
			rq->too_big = true;
			buf_release(&rq->body);
		}
		if (rq->too_big) {
			/* A body without a length that goes on and on: read up to
			 * four times the limit, then drop the connection. */
			rq->dropped += *data_size;
			if (rq->dropped > 4 * (uint64_t)sv->max_body + 65536)
				return MHD_NO;
		}
		*data_size = 0;
		return MHD_YES;
	}
	return dispatch(rq);
}

void srv_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode code)
{
	struct server *sv = cls;
	struct req *rq = *con_cls;
	(void)c;
	if (!rq)
		return;
	if (sv->verbose)
		fprintf(stderr, "rlm serve: %s %s %u %.1f ms%s\n", rq->method, rq->url, rq->status,
			(double)(now_ns() - rq->t0) / 1e6,
			code == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (cut short)");
	buf_release(&rq->body);
	free(rq->url);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub(&sv->active, 1);
}

