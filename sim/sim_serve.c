/* SPDX-License-Identifier: MIT */
/* sim/sim_serve.c -- `rlm sim-serve`: the offline simulator served over HTTP
 * as an OpenAI-compatible chat completions server (libmicrohttpd).
 *
 * DESIGN
 * One thread per connection, so a handler may simply sleep the modelled
 * latency. Every reply comes from sim_handle(), the same function the
 * in-process provider calls, so both paths share one policy, one timing
 * model and one fault injector. Accepted sockets get TCP_NODELAY and a
 * whole response is handed to the library as one buffer, so headers and
 * body leave in one write: two writes without TCP_NODELAY stall each call
 * ~40 ms (Nagle against delayed ACK, see DESIGN.md). Faults are played at
 * the socket: a reset is a close with SO_LINGER {1, 0}; a truncated body
 * declares its full length and stops half way. SIGINT and SIGTERM are
 * taken by sigwait() in the main thread; sleeping handlers notice the stop
 * flag within 10 ms. */
#include "../cli/cli.h"
#include "../common/common.h"
#include "../common/json.h"
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX     (64u << 20) /* largest request body accepted */
#define SLICE_NS     10000000	 /* sleeping handlers check the stop flag this often */
#define DEFAULT_PORT 8089

static const char usage[] =
    "usage: rlm sim-serve [--host ADDR] [--port N] [--sim SPEC] [--ready-file PATH] [--quiet]\n"
    "\n"
    "Serve the offline simulator model over HTTP as an OpenAI-compatible chat\n"
    "completions server, so the HTTP path, other RLM implementations and benchmarks\n"
    "can run against it with no network. Stop it with SIGINT or SIGTERM.\n"
    "\n"
    "Routes: POST /v1/chat/completions (also /chat/completions; \"stream\": true gives\n"
    "server-sent events), GET /v1/models, GET /healthz.\n"
    "\n"
    "Options:\n"
    "  --host ADDR        address to listen on (127.0.0.1)\n"
    "  --port N           port to listen on; 0 picks a free one (8089)\n"
    "  --sim SPEC         timing and faults as KEY=VALUE,... (env RLM_SIM; keys below)\n"
    "  --ready-file PATH  write the bound port number to PATH once listening\n"
    "  --quiet            do not print the \"listening on\" line\n"
    "  -h, --help         show this help\n"
    "\n"
    "SPEC keys (durations take an ms or s suffix, ms by default):\n"
    "  ttft=D             time to first token (0)\n"
    "  tps=N              output tokens per second after the first; 0: instant (0)\n"
    "  429=P, 500=P       rate of 429 (with Retry-After) and 500 replies, in [0,1]\n"
    "  reset=P            rate of connections reset without a reply\n"
    "  malformed=P        rate of 200 replies whose JSON is cut off\n"
    "  slow=P             rate of replies slow_ms later than modelled\n"
    "  truncate=P         rate of bodies that stop half way (the connection closes)\n"
    "                     the fault rates add up to at most 1\n"
    "  faults=N           inject at most N faults in the server's life (-1: no cap)\n"
    "  retry_after=D      Retry-After of a 429, seconds by default, sent rounded up (1)\n"
    "  retry_after_ms=D   also send retry-after-ms: D when > 0 (0)\n"
    "  slow_ms=D          extra delay of a slow reply (2000)\n"
    "  seed=N             seed of the fault generator (1)\n"
    "\n"
    "Example: rlm sim-serve --port 8089 --sim ttft=100ms,tps=50,429=0.05,seed=7\n";

struct server {
	struct sim *sim;
	struct sim_cfg cfg; /* read-only once serving */
	atomic_bool stop;   /* set by the main thread on a signal */
};

enum route { ROUTE_NONE, ROUTE_CHAT, ROUTE_MODELS, ROUTE_HEALTH };

/* One POST being received; owned by its connection's thread. */
struct upload {
	struct buf body;
	bool too_big;
};

/* A response sent by callback: a stream paced by the decode rate, or a
 * body cut short. Owned by the library's response; freed by stream_free. */
struct stream {
	struct server *sv;
	char *body;
	size_t len; /* send body[0..len) */
	size_t pos;
	bool truncate;	 /* end with an error at len instead of cleanly */
	bool at_event;	 /* pos is at the start of an event */
	int64_t next_ns; /* when the next event is due */
	int64_t gap_ns;	 /* between events */
};

/* Sleep until `until` (monotonic ns); false when the server is stopping. */
static bool nap(struct server *sv, int64_t until)
{
	for (;;) {
		int64_t now = now_ns();
		if (atomic_load(&sv->stop))
			return false;
		if (now >= until)
			return true;
		sleep_ns(RLM_MIN(until - now, (int64_t)SLICE_NS));
	}
}

static enum route route_of(const char *url)
{
	if (strcmp(url, "/v1/chat/completions") == 0 || strcmp(url, "/chat/completions") == 0)
		return ROUTE_CHAT;
	if (strcmp(url, "/v1/models") == 0 || strcmp(url, "/models") == 0)
		return ROUTE_MODELS;
	if (strcmp(url, "/healthz") == 0)
		return ROUTE_HEALTH;
	return ROUTE_NONE;
}

/* Queue body (malloc'd, consumed) as one buffer. */
static enum MHD_Result send_body(struct MHD_Connection *c, unsigned status, char *body, size_t len,
				 const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, cJSON *j)
{
	char *s = json_print(j);
	cJSON_Delete(j);
	return send_body(c, status, s, strlen(s), "application/json");
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *type,
				  const char *fmt, ...) RLM_PRINTF(4, 5);

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *type,
				  const char *fmt, ...)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_add_str(e, "message", msg);
	json_add_str(e, "type", type);
	json_add(root, "error", e);
	return send_json(c, status, root);
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
	return send_json(c, MHD_HTTP_OK, root);
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
static enum MHD_Result send_callback(struct server *sv, struct MHD_Connection *c,
				     struct sim_reply *r, int64_t t0)
{
	struct stream *st = xcalloc(1, sizeof(*st));
	struct MHD_Response *resp;
	enum MHD_Result ret;
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
	resp = MHD_create_response_from_callback(r->stream ? MHD_SIZE_UNKNOWN : r->len, 64 * 1024,
						 stream_read, st, stream_free);
	if (!resp) {
		stream_free(st);
		return MHD_NO;
	}
	if (r->stream) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	} else {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	}
	ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Close the connection with a TCP reset instead of a reply. */
static enum MHD_Result reset_connection(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci) {
		struct linger lg = {1, 0};
		setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	return MHD_NO;
}

static enum MHD_Result answer_chat(struct server *sv, struct MHD_Connection *c, struct upload *up)
{
	struct sim_reply r;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int64_t t0 = now_ns();
	char num[32];
	sim_handle(sv->sim, up->body.p ? up->body.p : "", up->body.len, &r);
	buf_release(&up->body);
	if (r.status == 200 && (r.stream || r.fault == SIM_TRUNCATE)) {
		ret = send_callback(sv, c, &r, t0);
		sim_reply_release(&r);
		return ret;
	}
	if (!nap(sv, t0 + r.delay_ns) || r.fault == SIM_RESET) {
		sim_reply_release(&r);
		return reset_connection(c);
	}
	resp = MHD_create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		sim_reply_release(&r);
		return MHD_NO;
	}
	r.body = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (r.retry_after_s >= 0) {
		snprintf(num, sizeof(num), "%ld", r.retry_after_s);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, num);
	}
	if (r.retry_after_ms > 0) {
		snprintf(num, sizeof(num), "%ld", r.retry_after_ms);
		MHD_add_response_header(resp, "retry-after-ms", num);
	}
	ret = MHD_queue_response(c, (unsigned)r.status, resp);
	MHD_destroy_response(resp);
	sim_reply_release(&r);
	return ret;
}

static enum MHD_Result send_not_allowed(struct MHD_Connection *c, const char *method,
					const char *url, enum route rt)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char *s, msg[300];
	snprintf(msg, sizeof(msg), "method %.16s not allowed for %.200s (use %s)", method, url,
		 rt == ROUTE_CHAT ? "POST" : "GET");
	json_add_str(e, "message", msg);
	json_add_str(e, "type", "method_not_allowed");
	json_add(root, "error", e);
	s = json_print(root);
	cJSON_Delete(root);
	r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rt == ROUTE_CHAT ? "POST" : "GET, HEAD");
	ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	return ret;
}

/* Called once with the headers, once per piece of the body, and once at its
 * end: every reply is queued at the end, which keeps the connection alive
 * (a reply queued before the body is read closes it). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct server *sv = cls;
	struct upload *up = *con_cls;
	enum route rt = route_of(url);
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	(void)version;
	if (!up) {
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > BODY_MAX)
			return send_error(c, 413, "invalid_request_error",
					  "request body of %.24s bytes is larger than the limit of "
					  "%u bytes",
					  cl, BODY_MAX);
		up = xcalloc(1, sizeof(*up));
		buf_init(&up->body, BODY_MAX);
		*con_cls = up;
		return MHD_YES;
	}
	if (*data_size) {
		/* Only a chat request's body is kept; others are read and dropped. */
		if (rt == ROUTE_CHAT && !up->too_big && buf_append(&up->body, data, *data_size)) {
			up->too_big = true;
			buf_release(&up->body);
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (rt == ROUTE_NONE)
		return send_error(c, MHD_HTTP_NOT_FOUND, "not_found", "no route for %.16s %.200s",
				  method, url);
	if (rt == ROUTE_CHAT ? strcmp(method, "POST") != 0 : !get)
		return send_not_allowed(c, method, url, rt);
	if (rt == ROUTE_MODELS)
		return send_models(c);
	if (rt == ROUTE_HEALTH) {
		cJSON *j = cJSON_CreateObject();
		json_add_str(j, "status", "ok");
		return send_json(c, MHD_HTTP_OK, j);
	}
	if (up->too_big)
		return send_error(c, 413, "invalid_request_error",
				  "request body is larger than the limit of %u bytes", BODY_MAX);
	return answer_chat(sv, c, up);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct upload *up = *con_cls;
	(void)cls;
	(void)c;
	(void)code;
	if (up) {
		buf_release(&up->body);
		free(up);
		*con_cls = NULL;
	}
}

void cli_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
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

int cli_listen(const char *host, long port, int *bound, char *msg, size_t msglen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int fd = -1, rc, e = 0, one = 1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%ld", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc) {
		snprintf(msg, msglen, "cannot resolve host '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot listen on %s:%ld: %s", host, port, strerror(e));
		return -1;
	}
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		*bound = (int)port;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			*bound =
			    ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
	}
	return fd;
}

/* Write the port to path atomically (a reader never sees half a number). */
static int write_ready(const char *path, int port)
{
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid()), line[16];
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;
	snprintf(line, sizeof(line), "%d\n", port);
	if (fd < 0 || write_all(fd, line, strlen(line)) || close(fd) || rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

int cmd_sim_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"host", required_argument, NULL, 'H'},
	    {"port", required_argument, NULL, 'p'},
	    {"sim", required_argument, NULL, 's'},
	    {"ready-file", required_argument, NULL, 'r'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct server sv;
	struct rlm_err err = {0, ""};
	struct MHD_Daemon *d;
	const char *host = "127.0.0.1", *spec = getenv("RLM_SIM"), *ready = NULL;
	long port = DEFAULT_PORT;
	bool quiet = false;
	int opt, fd, bound = 0, sig = 0, status = 0;
	sigset_t block, old;
	char msg[512];

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			if (!*optarg)
				return cli_fail(2, "bad value '' for --host: want an address");
			host = optarg;
			break;
		case 'p':
			if (parse_int(optarg, 0, 65535, &port))
				return cli_fail(2, "bad value '%s' for --port: want 0..65535",
						optarg);
			break;
		case 's':
			spec = optarg;
			break;
		case 'r':
			ready = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_fail(2, "unknown option '%s' (see rlm sim-serve --help)",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm sim-serve --help)",
				argv[optind]);
	memset(&sv, 0, sizeof(sv));
	sim_cfg_default(&sv.cfg);
	if (spec && sim_cfg_parse(spec, &sv.cfg, &err))
		return cli_fail(2, "%s", err.msg);

	fd = cli_listen(host, port, &bound, msg, sizeof(msg));
	if (fd < 0)
		return cli_fail(1, "%s", msg);
	sv.sim = sim_new(&sv.cfg);
	atomic_init(&sv.stop, false);

	/* Connection threads inherit the mask: only sigwait() sees the signals. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL,
	    NULL, on_request, &sv, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 4096u,
	    MHD_OPTION_CONNECTION_TIMEOUT, 600u, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &sv,
	    MHD_OPTION_NOTIFY_CONNECTION, cli_on_connection, &sv, MHD_OPTION_END);
	if (!d) {
		close(fd);
		status = cli_fail(1, "cannot start the HTTP server on %s:%d", host, bound);
		goto out;
	}
	if (ready && (status = write_ready(ready, bound))) {
		status =
		    cli_fail(1, "cannot write the ready file '%s': %s", ready, strerror(-status));
		goto stop;
	}
	if (!quiet) {
		bool v6 = strchr(host, ':') != NULL;
		fprintf(stderr, "rlm sim-serve: listening on http://%s%s%s:%d/v1\n", v6 ? "[" : "",
			host, v6 ? "]" : "", bound);
	}
	while (sigwait(&block, &sig) != 0)
		;
stop:
	atomic_store(&sv.stop, true);
	MHD_stop_daemon(d);
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sim_free(sv.sim);
	return status;
}
