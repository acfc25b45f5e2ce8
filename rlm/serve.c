/* SPDX-License-Identifier: MIT */
/* rlm/serve.c -- `rlm serve`: the solve API over HTTP (libmicrohttpd): the
 * command line, the daemon, routing, auth, health, metrics and shutdown.
 *
 * DESIGN
 * One thread per connection, so a synchronous solve simply waits on its
 * run and a stream blocks in its reader until the run has more to say;
 * solves themselves run on the service's threads (rlm/service.h), never
 * on a connection's. Every answer goes through srv_queue, which counts it
 * for /metrics; bodies are read into a buffer capped at --max-body (a
 * declared length over it is refused before the body is read). Accepted
 * sockets get TCP_NODELAY and a whole response is one buffer, so headers
 * and body leave in one write. The bearer token is compared in constant
 * time. SIGINT and SIGTERM are taken by sigwait() in the main thread: the
 * listening socket is closed, running solves get --shutdown-grace to end
 * before they are cancelled, waiting requests are answered, and the
 * process exits 0. */
#include "cli.h"
#include "serve_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_PORT 8080

static const char usage[] =
    "usage: rlm serve [--host ADDR] [--port N] [--api-key KEY] [--root DIR]... [options]\n"
    "\n"
    "Serve rlm over HTTP: a solve API with live events, and an OpenAI-compatible\n"
    "chat completions endpoint whose answers come from recursive solves. Every\n"
    "solve uses the models given here (one call pool for all) and the store (the\n"
    "cache and the record of runs). It prints `rlm serve: listening on URL` on\n"
    "stdout when ready and logs to stderr. See docs/serve.md for the protocol.\n"
    "\n"
    "Routes:\n"
    "  POST   /v1/solve             {\"question\", \"context\" | \"context_path\" |\n"
    "                               \"corpus_id\", \"format\", \"async\", \"options\"}\n"
    "  GET    /v1/runs/ID           a run's state and, once ended, its result\n"
    "  GET    /v1/runs/ID/events    its events as server-sent events, replayed then live\n"
    "  DELETE /v1/runs/ID           cancel it\n"
    "  POST   /v1/corpora           load a context once: {\"path\"} | {\"text\"} |\n"
    "                               {\"documents\": [...]}; GET /v1/corpora/ID\n"
    "  POST   /v1/chat/completions  OpenAI-compatible (\"stream\" too); the context is\n"
    "                               \"rlm_context\" or the earlier messages\n"
    "  GET    /v1/models, /healthz (no auth), /metrics (Prometheus)\n"
    "\n"
    "Server options:\n"
    "      --host ADDR         address to listen on (127.0.0.1); another than a\n"
    "                          loopback address needs --api-key\n"
    "      --port N            port; 0 lets the kernel pick one (8080)\n"
    "      --api-key KEY       clients must send `Authorization: Bearer KEY` (env\n"
    "                          RLM_API_KEY); /healthz needs none\n"
    "      --model-api-key KEY the model provider's key (else OPENAI_API_KEY or\n"
    "                          ANTHROPIC_API_KEY): --api-key is the server's here\n"
    "      --max-solves N      solves running at once; more are refused with 429 (4)\n"
    "      --max-body SIZE     largest request body, e.g. 64M (64M)\n"
    "      --request-timeout SECS  a synchronous solve that runs longer is\n"
    "                          cancelled and answered 504 (600)\n"
    "      --root DIR          a directory context_path and corpora may name (any\n"
    "                          number; none: paths are refused)\n"
    "      --shutdown-grace SECS  on SIGTERM or SIGINT, how long running solves\n"
    "                          may go on before they are cancelled (30)\n"
    "      --cache PATH        the store (env RLM_CACHE; default\n"
    "                          $XDG_CACHE_HOME/rlm/rlm.db or ~/.cache/rlm/rlm.db)\n"
    "      --no-cache          no store: nothing cached or recorded; runs are known\n"
    "                          only while the server runs\n"
    "      --refresh           look nothing up in the store, but keep what is made\n"
    "  -s, --strategy NAME     repl (default) or tree, as rlm solve; a request's\n"
    "                          options.strategy wins\n"
    "  -v, --verbose           log every request on stderr\n"
    "      --quiet             no notices on stderr\n"
    "  -h, --help              this help\n"
    "\n"
    "The limits below are every solve's defaults; a request's \"options\" override\n"
    "max_depth, max_iterations, max_tokens (--max-total-tokens), max_cost,\n"
    "max_sub_calls and timeout (--time-limit).\n"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "Exit status: 0 after a clean shutdown, 1 a failure to start, 2 bad usage\n"
    "(including another address than loopback without --api-key).\n"
    "\n"
    "Examples:\n"
    "  rlm serve --port 8080 --root ~/docs\n"
    "  RLM_API_KEY=s3cret rlm serve --host 0.0.0.0 --model gpt-5 --sub-model gpt-5-mini\n"
    "  curl -s localhost:8080/v1/solve -d '{\"question\": \"Who won?\", \"context\": \"...\"}'\n";

enum {
	OPT_HOST = OPT_MODEL_LAST + 1,
	OPT_PORT,
	OPT_MODEL_API_KEY,
	OPT_MAX_SOLVES,
	OPT_MAX_BODY,
	OPT_REQUEST_TIMEOUT,
	OPT_ROOT,
	OPT_GRACE,
	OPT_CACHE,
	OPT_NO_CACHE,
	OPT_QUIET,
};

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

enum MHD_Result srv_json(struct req *rq, unsigned status, cJSON *j)
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
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	return srv_queue(rq, status, r);
}

enum MHD_Result srv_error(struct req *rq, unsigned status, const char *type, const char *fmt, ...)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_add_str(e, "type", type);
	json_add_str(e, "message", msg);
	json_add(root, "error", e);
	if (status >= 500)
		log_warn("serve: %s %s: %s", rq->method, rq->url, msg);
	return srv_json(rq, status, root);
}

enum MHD_Result srv_svc_error(struct req *rq, int rc, const char *msg)
{
	switch (rc) {
	case SVC_EBUSY:
		return srv_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "busy", "%s", msg);
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

cJSON *srv_body_json(struct req *rq, enum MHD_Result *ret)
{
	cJSON *j = rq->body.len ? json_parse(rq->body.p, rq->body.len) : NULL;
	if (!j) {
		*ret = srv_error(rq, MHD_HTTP_BAD_REQUEST, "invalid_json",
				 rq->body.len ? "the body is not valid JSON"
					      : "the body is empty: "
						"want a JSON object");
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		*ret = srv_error(rq, MHD_HTTP_BAD_REQUEST, "invalid_json",
				 "the body is JSON but not an object");
		return NULL;
	}
	return j;
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

#define IDLE_TIMEOUT_S	   30u  /* a connection's, but a solve's or a stream's */
#define PER_IP_CONNECTIONS 256u /* open at once from one address */

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
	{
		cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
		char *s, msg[320];
		struct MHD_Response *r;
		snprintf(msg, sizeof(msg), "method %.16s is not allowed for %.200s (allowed: %s)",
			 rq->method, rq->url, allowed(rt));
		json_add_str(e, "type", "method_not_allowed");
		json_add_str(e, "message", msg);
		json_add(root, "error", e);
		s = json_print(root);
		cJSON_Delete(root);
		r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(s);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allowed(rt));
		return srv_queue(rq, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	}
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
		MHD_set_connection_option(rq->c, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)RLM_MIN(rq->sv->request_timeout_ns / 1000000000LL + 60,
							    86400));
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
		return route_corpus_get(rq, id);
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
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
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
		rq = xcalloc(1, sizeof(*rq));
		rq->sv = sv;
		rq->c = c;
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		rq->url = xstrdup(url);
		rq->t0 = now_ns();
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
			(double)(now_ns() - rq->t0) / 1e6,
			code == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (cut short)");
	buf_release(&rq->body);
	free(rq->url);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub(&sv->active, 1);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;
	int one = 1;
	(void)cls;
	(void)socket_context;
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- the command ---- */

static bool loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

struct serve_args {
	struct svc_cfg cfg;
	const char *host;
	long port;
	const char *api_key;
	size_t max_body;
	double request_timeout, grace;
	const char **roots; /* owned array */
	size_t n_roots;
	bool verbose;
};

/* Parse the command line into a; 0, 1 (--help printed), or 2. */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	static const struct option longopts[] = {
	    {"host", required_argument, NULL, OPT_HOST},
	    {"port", required_argument, NULL, OPT_PORT},
	    {"model-api-key", required_argument, NULL, OPT_MODEL_API_KEY},
	    {"max-solves", required_argument, NULL, OPT_MAX_SOLVES},
	    {"max-body", required_argument, NULL, OPT_MAX_BODY},
	    {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
	    {"root", required_argument, NULL, OPT_ROOT},
	    {"shutdown-grace", required_argument, NULL, OPT_GRACE},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
	    {"quiet", no_argument, NULL, OPT_QUIET},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    MODEL_LONGOPTS,
	    SANDBOX_LONGOPTS,
	    SOLVE_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	uint64_t size;
	long num;
	int opt;
	model_opts_init(&a->cfg.mo);
	if (solve_opts_env(&a->cfg.base))
		return 2;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:vh", longopts, NULL)) != -1) {
		int taken = 0;
		/* --api-key is the server's here; the provider's is --model-api-key. */
		if (opt == OPT_API_KEY) {
			a->api_key = optarg;
			continue;
		}
		taken = model_opts_take(&a->cfg.mo, opt, optarg);
		if (!taken)
			taken = sandbox_opts_take(&a->cfg.base.sandbox, opt, optarg);
		if (!taken)
			taken = solve_opts_take(&a->cfg.base, opt, optarg);
		if (taken == 2)
			return 2;
		if (taken)
			continue;
		switch (opt) {
		case OPT_HOST:
			if (!*optarg)
				return cli_fail(2, "bad value '' for --host: want an address");
			a->host = optarg;
			break;
		case OPT_PORT:
			if (parse_int(optarg, 0, 65535, &a->port))
				return cli_fail(2, "bad value '%s' for --port: want 0..65535",
						optarg);
			break;
		case OPT_MODEL_API_KEY:
			a->cfg.mo.api_key = optarg;
			break;
		case OPT_MAX_SOLVES:
			if (parse_int(optarg, 1, 100000, &num))
				return cli_fail(
				    2, "bad value '%s' for --max-solves: want 1..100000", optarg);
			a->cfg.max_solves = (int)num;
			break;
		case OPT_MAX_BODY:
			if (parse_size(optarg, &size) || size < 1024 || size > ((uint64_t)1 << 40))
				return cli_fail(2,
						"bad value '%s' for --max-body: want a size of at "
						"least 1K, such as 64M",
						optarg);
			a->max_body = (size_t)size;
			break;
		case OPT_REQUEST_TIMEOUT:
			if (parse_double(optarg, 0.001, 1e7, &a->request_timeout))
				return cli_fail(2,
						"bad value '%s' for --request-timeout: want "
						"seconds > 0",
						optarg);
			break;
		case OPT_GRACE:
			if (parse_double(optarg, 0, 1e7, &a->grace))
				return cli_fail(2,
						"bad value '%s' for --shutdown-grace: want seconds "
						">= 0",
						optarg);
			break;
		case OPT_ROOT:
			if (access(optarg, R_OK | X_OK))
				return cli_fail(2, "cannot use --root '%s': %s", optarg,
						strerror(errno));
			a->roots = xrealloc(a->roots, (a->n_roots + 2) * sizeof(*a->roots));
			a->roots[a->n_roots++] = optarg;
			a->roots[a->n_roots] = NULL;
			break;
		case OPT_CACHE:
			a->cfg.cache_path = optarg;
			break;
		case OPT_NO_CACHE:
			a->cfg.no_cache = true;
			break;
		case OPT_QUIET:
			a->cfg.mo.quiet = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			printf(usage, solve_opts_help, model_opts_help, sandbox_opts_help);
			return 1;
		case ':':
			return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_fail(2, "unknown option '%s' (see rlm serve --help)",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm serve --help)", argv[optind]);
	if (!a->api_key && getenv("RLM_API_KEY") && *getenv("RLM_API_KEY"))
		a->api_key = getenv("RLM_API_KEY");
	if (a->api_key && !*a->api_key)
		return cli_fail(2, "the API key is empty");
	if (!a->api_key && !loopback(a->host))
		return cli_fail(2,
				"refusing to listen on '%s' without an API key: pass --api-key "
				"KEY (or set RLM_API_KEY), or listen on 127.0.0.1",
				a->host);
	if (!a->cfg.no_cache && !a->cfg.cache_path && no_cache_env &&
	    strcmp(no_cache_env, "1") == 0)
		a->cfg.no_cache = true;
	a->cfg.roots = a->roots;
	return 0;
}

/* Serve until SIGINT or SIGTERM, then shut down gracefully. */
static int serve(struct server *sv, const struct serve_args *a, int fd, int port)
{
	struct MHD_Daemon *d;
	sigset_t block, old;
	int sig = 0, cancelled;
	bool v6 = strchr(a->host, ':') != NULL;
	/* The library closes a connection idle this long: short, so that
	 * slow clients cannot hold the connections; a solve or a stream
	 * raises its own (dispatch) to outlast the request timeout. */
	unsigned idle_s = IDLE_TIMEOUT_S;
	/* Connection and solve threads inherit the mask: only sigwait() sees
	 * the signals. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				 MHD_USE_POLL | MHD_USE_ITC,
			     0, NULL, NULL, on_request, sv, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
			     PER_IP_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv, MHD_OPTION_END);
	if (!d) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		return cli_fail(1, "cannot start the HTTP server on %s:%d", a->host, port);
	}
	printf("rlm serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", a->host, v6 ? "]" : "",
	       port);
	fflush(stdout);
	while (sigwait(&block, &sig) != 0)
		;
	fprintf(stderr, "rlm serve: %s: stopping (running solves have %.0f s to end)\n",
		strsignal(sig), a->grace);
	atomic_store(&sv->stopping, true);
	fd = MHD_quiesce_daemon(d);
	if (fd >= 0)
		close(fd);
	cancelled = svc_shutdown(sv->svc, (int64_t)(a->grace * 1e9));
	if (cancelled)
		fprintf(stderr, "rlm serve: cancelled %d solve%s (their runs stay in the store)\n",
			cancelled, cancelled == 1 ? "" : "s");
	/* Answer what is pending: waiting requests and streams see their
	 * runs end. */
	for (int i = 0; i < 1000 && atomic_load(&sv->active) > 0; i++)
		sleep_ns(10000000);
	MHD_stop_daemon(d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a;
	struct server *sv;
	struct rlm_err err = {0, ""};
	char msg[512];
	int rc, fd, port = 0, status;
	memset(&a, 0, sizeof(a));
	a.host = "127.0.0.1";
	a.port = DEFAULT_PORT;
	a.max_body = 64u << 20;
	a.request_timeout = 600;
	a.grace = 30;
	a.cfg.base.run_note_json = "{\"via\":\"rlm serve\"}";
	if ((rc = parse_args(argc, argv, &a))) {
		free(a.roots);
		return rc == 1 ? 0 : rc;
	}
	/* A sandbox the worker would refuse is a usage error, found now. */
	if (a.cfg.base.strategy == RLM_REPL && repl_sandbox_check(&a.cfg.base.sandbox, &err)) {
		free(a.roots);
		return cli_fail(2, "%s", err.msg);
	}
	sv = xcalloc(1, sizeof(*sv));
	sv->api_key = a.api_key;
	sv->max_body = a.max_body;
	sv->request_timeout_ns = (int64_t)(a.request_timeout * 1e9);
	sv->started_s = wall_ms() / 1000;
	sv->verbose = a.verbose;
	if ((rc = svc_new(&a.cfg, &sv->svc, &err))) {
		status = cli_fail(rc == RLM_EINVAL ? 2 : 1, "%s", err.msg);
		goto out;
	}
	fd = cli_listen(a.host, a.port, &port, msg, sizeof(msg));
	if (fd < 0) {
		status = cli_fail(1, "%s", msg);
		goto out;
	}
	status = serve(sv, &a, fd, port);
out:
	svc_free(sv->svc);
	free(sv);
	free(a.roots);
	return status;
}
