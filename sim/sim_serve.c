/* SPDX-License-Identifier: MIT */
/* sim/sim_serve.c -- the offline simulator served over HTTP as an
 * OpenAI-compatible chat completions server (libmicrohttpd, through
 * common/httpd.h), which `rlm sim-serve` runs.
 *
 * DESIGN
 * One thread per connection, so a handler may simply sleep the modelled
 * latency. Every reply comes from sim_handle(), the same function the
 * in-process provider calls, so both paths share one policy, one timing
 * model and one fault injector. A whole response is handed to the library
 * as one buffer on a TCP_NODELAY socket (httpd_start), so headers and body
 * leave in one write. Faults are played at the socket: a reset is a close
 * with SO_LINGER {1, 0}; a truncated body declares its full length and
 * stops half way. Sleeping handlers notice the stop flag within 10 ms, so
 * sim_server_stop does not wait out a modelled latency. */
#include "../common/common.h"
#include "../common/httpd.h"
#include "../common/json.h"
#include "sim.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BODY_MAX (64u << 20) /* largest request body accepted */
#define SLICE_NS 10000000    /* sleeping handlers check the stop flag this often */

struct sim_server {
	struct sim *sim;
	struct sim_cfg cfg; /* read-only once serving */
	atomic_bool stop;   /* set by sim_server_stop */
	struct httpd *daemon;
};

enum route { ROUTE_CHAT, ROUTE_MODELS, ROUTE_HEALTH };

static const struct httpd_route routes[] = {
    {"/v1/chat/completions", "POST", ROUTE_CHAT}, {"/chat/completions", "POST", ROUTE_CHAT},
    {"/v1/models", "GET, HEAD", ROUTE_MODELS},	  {"/models", "GET, HEAD", ROUTE_MODELS},
    {"/healthz", "GET, HEAD", ROUTE_HEALTH},
};

/* A response sent by callback: a stream paced by the decode rate, or a
 * body cut short. Owned by the library's response; freed by stream_free. */
struct stream {
	struct sim_server *sv;
	char *body;
	size_t len; /* send body[0..len) */
	size_t pos;
	bool truncate;	 /* end with an error at len instead of cleanly */
	bool at_event;	 /* pos is at the start of an event */
	int64_t next_ns; /* when the next event is due */
	int64_t gap_ns;	 /* between events */
};

/* Sleep until `until` (monotonic ns); false when the server is stopping. */
static bool nap(struct sim_server *sv, int64_t until)
{
	for (;;) {
		int64_t now = time_now_ns();
		if (atomic_load(&sv->stop))
			return false;
		if (now >= until)
			return true;
		time_sleep_ns(RLM_MIN(until - now, (int64_t)SLICE_NS));
	}
}

/* OpenAI's error body {"error": {"message", "type"}}, with hdrs. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
				  const char *const *hdrs, const char *type, const char *fmt, ...)
    RLM_PRINTF(5, 6);

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
				  const char *const *hdrs, const char *type, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return httpd_json(
	    c, status, httpd_error_json((const char *const[]){"message", msg, "type", type, NULL}),
	    hdrs);
}

static enum MHD_Result send_models(struct MHD_Connection *c)
{
	cJSON *root = cJSON_CreateObject(), *data = cJSON_CreateArray(), *m = cJSON_CreateObject();
	json_add_str(root, "object", "list");
	json_add_str(m, "id", "sim");
	json_add_str(m, "object", "model");
	json_add_num(m, "created", 0);
	json_add_str(m, "owned_by", "rlm");
	json_add(data, NULL, m);
	json_add(root, "data", data);
	return httpd_json(c, MHD_HTTP_OK, root, NULL);
}

static ssize_t stream_read(void *cls, uint64_t off, char *out, size_t max)
{
	struct stream *st = cls;
	const char *e;
	size_t end, n;
	(void)off;
	if (st->pos >= st->len)
		return st->truncate ? MHD_CONTENT_READER_END_WITH_ERROR
				    : MHD_CONTENT_READER_END_OF_STREAM;
	if (st->at_event && !nap(st->sv, st->next_ns))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	e = memmem(st->body + st->pos, st->len - st->pos, "\n\n", 2);
	end = e ? (size_t)(e - st->body) + 2 : st->len;
	n = RLM_MIN(end - st->pos, max);
	memcpy(out, st->body + st->pos, n);
	st->pos += n;
	st->at_event = st->pos == end;
	if (st->at_event)
		st->next_ns += st->gap_ns;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;
	free(st->body);
	free(st);
}

/* Send r by callback: events paced from t0 (stream), or half the body then
 * an error (truncate). Takes r's body. */
static enum MHD_Result send_callback(struct sim_server *sv, struct MHD_Connection *c,
				     struct sim_reply *r, int64_t t0)
{
	static const char *const sse_hdrs[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache", NULL};
	struct stream *st = xcalloc(1, sizeof(*st));
	int64_t first = r->delay_ns;
	size_t events = 0;
	st->sv = sv;
	st->body = r->body;
	st->len = r->len;
	st->at_event = true;
	r->body = NULL;
	if (r->stream) {
		/* The first event after ttft (and a slow fault's delay), the rest
		 * spread over the decode time. */
		first = (int64_t)(sv->cfg.ttft_ms * 1e6);
		if (r->fault == SIM_SLOW)
			first += (int64_t)(sv->cfg.slow_ms * 1e6);
		first = RLM_MIN(first, r->delay_ns);
		for (const char *p = st->body; (p = strstr(p, "\n\n")); p += 2)
			events++;
		st->gap_ns = events > 1 ? (r->delay_ns - first) / (int64_t)(events - 1) : 0;
	}
	st->next_ns = t0 + first;
	if (r->fault == SIM_TRUNCATE) {
		st->truncate = true;
		st->len = r->len / 2;
	}
	return httpd_queue(c, (unsigned)r->status,
			   httpd_callback_response(
			       r->stream ? MHD_SIZE_UNKNOWN : r->len, 64 * 1024, stream_read, st,
			       stream_free, r->stream ? "text/event-stream" : "application/json",
			       r->stream ? sse_hdrs : NULL));
}

/* Close the connection with a TCP reset instead of a reply. */
static enum MHD_Result reset_connection(struct MHD_Connection *c)
{
	int fd = httpd_conn_fd(c);
	if (fd >= 0) {
		struct linger lg = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	return MHD_NO;
}

static enum MHD_Result answer_chat(struct sim_server *sv, struct MHD_Connection *c,
				   struct httpd_body *body)
{
	struct sim_reply r;
	enum MHD_Result ret;
	/* The modelled latency runs from the request's arrival, as a
	 * provider's does: reading and answering it are inside it. */
	int64_t t0 = body->arrived;
	const char *hdrs[5];
	char after_s[32], after_ms[32];
	size_t n = 0;
	sim_handle(sv->sim, body->buf.p, body->buf.len, &r);
	httpd_body_release(body);
	if (r.status == 200 && (r.stream || r.fault == SIM_TRUNCATE)) {
		ret = send_callback(sv, c, &r, t0);
		sim_reply_release(&r);
		return ret;
	}
	if (!nap(sv, t0 + r.delay_ns) || r.fault == SIM_RESET) {
		sim_reply_release(&r);
		return reset_connection(c);
	}
	if (r.retry_after_s >= 0) {
		snprintf(after_s, sizeof(after_s), "%ld", r.retry_after_s);
		hdrs[n++] = MHD_HTTP_HEADER_RETRY_AFTER;
		hdrs[n++] = after_s;
	}
	if (r.retry_after_ms > 0) {
		snprintf(after_ms, sizeof(after_ms), "%ld", r.retry_after_ms);
		hdrs[n++] = "retry-after-ms";
		hdrs[n++] = after_ms;
	}
	hdrs[n] = NULL;
	ret = httpd_queue(c, (unsigned)r.status,
			  httpd_response(r.body, r.len, "application/json", hdrs));
	r.body = NULL;
	sim_reply_release(&r);
	return ret;
}

/* Called once with the headers, once per piece of the body, and once at its
 * end: every reply is queued at the end, which keeps the connection alive
 * (a reply queued before the body is read closes it). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct sim_server *sv = cls;
	struct httpd_body *body = *con_cls;
	const struct httpd_route *rt = httpd_route_find(routes, ARRAY_SIZE(routes), url, NULL);
	(void)version;
	if (!body) {
		const char *cl = httpd_declared_over(c, BODY_MAX);
		if (cl)
			return send_error(c, 413, NULL, "invalid_request_error",
					  "request body of %.24s bytes is larger than the limit of "
					  "%u bytes",
					  cl, BODY_MAX);
		body = xmalloc(sizeof(*body));
		httpd_body_init(body, BODY_MAX);
		if (rt && rt->id == ROUTE_CHAT)
			httpd_body_expect(body, c);
		*con_cls = body;
		return MHD_YES;
	}
	if (*data_size) {
		/* Only a chat request's body is kept; others are read and dropped. */
		if (rt && rt->id == ROUTE_CHAT)
			httpd_body_take(body, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (!rt)
		return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "not_found",
				  "no route for %.16s %.200s", method, url);
	if (!httpd_route_allows(rt, method))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  (const char *const[]){MHD_HTTP_HEADER_ALLOW, rt->methods, NULL},
				  "method_not_allowed",
				  "method %.16s not allowed for %.200s (use %s)", method, url,
				  rt->id == ROUTE_CHAT ? "POST" : "GET");
	if (rt->id == ROUTE_MODELS)
		return send_models(c);
	if (rt->id == ROUTE_HEALTH) {
		cJSON *j = cJSON_CreateObject();
		json_add_str(j, "status", "ok");
		return httpd_json(c, MHD_HTTP_OK, j, NULL);
	}
	if (body->too_big)
		return send_error(c, 413, NULL, "invalid_request_error",
				  "request body is larger than the limit of %u bytes", BODY_MAX);
	return answer_chat(sv, c, body);
}

struct sim_server *sim_server_start(const struct sim_cfg *cfg, int listen_fd, struct rlm_err *err)
{
	struct sim_server *sv = xcalloc(1, sizeof(*sv));
	struct httpd_cfg hc = {
	    .on_request = on_request,
	    .on_completed = httpd_body_completed,
	    .arg = sv,
	    .connection_limit = 4096,
	    .timeout_s = 600,
	};
	sv->cfg = *cfg;
	sv->sim = sim_new(&sv->cfg);
	atomic_init(&sv->stop, false);
	sv->daemon = httpd_start(&hc, listen_fd);
	if (!sv->daemon) {
		sim_free(sv->sim);
		free(sv);
		rlm_err_set(err, RLM_EIO, "cannot start the HTTP server");
		return NULL;
	}
	return sv;
}

void sim_server_stop(struct sim_server *sv)
{
	if (!sv)
		return;
	atomic_store(&sv->stop, true);
	httpd_stop(sv->daemon);
	sim_free(sv->sim);
	free(sv);
}
