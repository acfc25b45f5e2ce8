/* SPDX-License-Identifier: MIT */
/* tool/http.c -- MCP's streamable HTTP transport, the client side: one POST
 * per JSON-RPC message, the answer as a JSON body or as a stream of
 * server-sent events, the session the server gives kept and ended.
 *
 * DESIGN: every call has its own curl easy handle, so calls on one server
 * run at once from any thread with nothing shared but the session id and
 * the protocol version (under a mutex). An event stream is parsed as it
 * arrives: the server's notifications are skipped, its requests answered
 * at once (a ping with {}, roots/list with no roots, anything else with
 * -32601: rlm offers the server nothing more) by a POST of their own,
 * since a server may wait for the answer before it sends ours, and the
 * transfer is stopped as soon as the response
 * with our id is in, whether or not the server closes the stream. What a
 * server sends is capped (TOOL_MAX_REPLY for a JSON body, for one event and
 * for a line of the stream; a gzip body is capped decoded), and the
 * transfer is bounded by the caller's deadline and by a low-speed limit (a
 * connection silent for TOOL__HTTP_STALL_S is dead even when the deadline
 * is later). Redirects are followed only when they keep the method (307,
 * 308) and the origin (scheme, host and port): the headers may carry
 * credentials meant for that server only. */
#include "tool_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/json.h"

#define TOOL__HTTP_STALL_S     300   /* seconds without a byte: the connection is dead */
#define TOOL__HTTP_CONNECT_MS  10000 /* at most, to connect */
#define TOOL__HTTP_REDIRECTS   3
#define TOOL__HTTP_ANSWER_NS   (5 * (int64_t)1000000000) /* answering a server's request */
#define TOOL__HTTP_DELETE_MS   2000
#define TOOL__HTTP_SESSION_MAX 1024 /* bytes of an Mcp-Session-Id */
#define TOOL__HTTP_ERR_BODY    200  /* bytes of a body quoted in an error */

struct tool__http {
	char *url;
	char **headers; /* n_headers "Name: value" */
	size_t n_headers;
	pthread_mutex_t mu; /* guards the three below */
	char *session;	    /* Mcp-Session-Id the server gave, or NULL */
	bool had_session;   /* one was given: a 404 now means it expired */
	char *version;	    /* MCP-Protocol-Version to send, or NULL */
};

/* One transfer, seen by the callbacks (the thread that runs it). */
struct xfer {
	struct tool__http *h;
	int64_t id;	     /* the request's id, or -1 */
	int64_t deadline_ns; /* for the answers to the server's requests */
	long status;	     /* of the last status line seen */
	bool sse;	     /* the body is text/event-stream */
	bool too_big;
	bool done;	  /* the response is in: the transfer was stopped */
	struct buf body;  /* a JSON body; or the stream's unparsed bytes */
	struct buf data;  /* the data of the event being read */
	char event[32];	  /* its type ("" is "message") */
	bool event_other; /* its type is not "message" */
	bool event_has_data;
	char *reply;	/* the response with our id (malloc'd) */
	char *session;	/* Mcp-Session-Id of this response */
	char *location; /* Location of this response */
	char ctype[128];
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- opening ---- */

/* Scheme, host and port of url (default port filled in): 0, or -1 when it
 * is not an http(s) URL with a host. */
static int url_origin(const char *url, char **scheme, char **host, char **port)
{
	CURLU *u = curl_url();
	int rc = -1;
	*scheme = *host = *port = NULL;
	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    (strcasecmp(*scheme, "http") == 0 || strcasecmp(*scheme, "https") == 0))
		rc = 0;
	curl_url_cleanup(u);
	if (rc) {
		curl_free(*scheme);
		curl_free(*host);
		curl_free(*port);
		*scheme = *host = *port = NULL;
	}
	return rc;
}

/* Do a and b have the same scheme, host and port? */
static bool same_origin(const char *a, const char *b)
{
	char *s1, *h1, *p1, *s2, *h2, *p2;
	bool same = false;
	if (url_origin(a, &s1, &h1, &p1))
		return false;
	if (url_origin(b, &s2, &h2, &p2) == 0) {
		same = strcasecmp(s1, s2) == 0 && strcasecmp(h1, h2) == 0 && strcmp(p1, p2) == 0;
		curl_free(s2);
		curl_free(h2);
		curl_free(p2);
	}
	curl_free(s1);
	curl_free(h1);
	curl_free(p1);
	return same;
}

int tool__http_open(const char *url, const char *const *headers, size_t n, struct tool__http **out,
		    struct rlm_err *err)
{
	struct tool__http *h;
	char *s, *host, *port;
	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return rlm_err_set(err, RLM_EIO, "cannot start libcurl: %s",
				   curl_easy_strerror(global_rc));
	if (!url || url_origin(url, &s, &host, &port))
		return rlm_err_set(err, RLM_EINVAL, "bad url '%s': not an http:// or https:// URL",
				   url ? url : "");
	curl_free(s);
	curl_free(host);
	curl_free(port);
	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(headers[i], ':');
		if (!c || c == headers[i] || strpbrk(headers[i], "\r\n"))
			return rlm_err_set(err, RLM_EINVAL,
					   "bad header '%.60s': not \"Name: value\" on one line",
					   headers[i]);
	}
	h = xcalloc(1, sizeof(*h));
	h->url = xstrdup(url);
	h->headers = xcalloc(n ? n : 1, sizeof(*h->headers));
	for (size_t i = 0; i < n; i++)
		h->headers[i] = xstrdup(headers[i]);
	h->n_headers = n;
	pthread_mutex_init(&h->mu, NULL);
	*out = h;
	return 0;
}

void tool__http_set_version(struct tool__http *h, const char *version)
{
	pthread_mutex_lock(&h->mu);
	free(h->version);
	h->version = version ? xstrdup(version) : NULL;
	pthread_mutex_unlock(&h->mu);
}

/* The headers of a message: ours, the caller's, the session's. */
static struct curl_slist *make_headers(struct tool__http *h, bool post)
{
	struct curl_slist *l = NULL;
	char *s;
	if (post) {
		l = curl_slist_append(l, "Accept: application/json, text/event-stream");
		l = curl_slist_append(l, "Content-Type: application/json");
		l = curl_slist_append(l, "Expect:");
	}
	for (size_t i = 0; i < h->n_headers; i++)
		l = curl_slist_append(l, h->headers[i]);
	pthread_mutex_lock(&h->mu);
	if (h->session) {
		s = xasprintf("Mcp-Session-Id: %s", h->session);
		l = curl_slist_append(l, s);
		free(s);
	}
	if (h->version) {
		s = xasprintf("MCP-Protocol-Version: %s", h->version);
		l = curl_slist_append(l, s);
		free(s);
	}
	pthread_mutex_unlock(&h->mu);
	return l;
}

/* ---- the messages of a reply ---- */

static int post(struct tool__http *h, const char *body, size_t len, int64_t id, int64_t deadline_ns,
		char **reply, struct rlm_err *err);

/* Is id the JSON-RPC id we sent? (a number, or its decimal as a string) */
static bool id_is(const cJSON *jid, int64_t id)
{
	char want[32];
	if (cJSON_IsNumber(jid))
		return jid->valuedouble == (double)id;
	if (!cJSON_IsString(jid))
		return false;
	snprintf(want, sizeof(want), "%lld", (long long)id);
	return strcmp(jid->valuestring, want) == 0;
}

/* Answer a request of the server's: {} to a ping, no roots to roots/list
 * (as the stdio transport does), -32601 to the rest. */
static void answer(struct xfer *x, const cJSON *msg)
{
	const char *method = json_str(msg, "method");
	cJSON *a = cJSON_CreateObject();
	struct rlm_err err = {0};
	int64_t until = time_now_ns() + TOOL__HTTP_ANSWER_NS;
	char *text;
	json_add_str(a, "jsonrpc", "2.0");
	json_add(a, "id", cJSON_Duplicate(json_get(msg, "id"), true));
	if (strcmp(method, "ping") == 0) {
		json_add(a, "result", cJSON_CreateObject());
	} else if (strcmp(method, "roots/list") == 0) {
		cJSON *r = cJSON_CreateObject();
		json_add(r, "roots", cJSON_CreateArray());
		json_add(a, "result", r);
	} else {
		cJSON *e = cJSON_CreateObject();
		char *m = xasprintf("method not found: rlm offers no '%.100s'", method);
		json_add_num(e, "code", -32601);
		json_add_str(e, "message", m);
		free(m);
		json_add(a, "error", e);
	}
	text = json_print(a);
	cJSON_Delete(a);
	if (x->deadline_ns && x->deadline_ns < until)
		until = x->deadline_ns;
	if (post(x->h, text, strlen(text), -1, until, NULL, &err))
		rlm_log(LOG_INFO, "tool: cannot answer the server's '%s' at '%s': %s", method,
			x->h->url, err.msg);
	free(text);
}

/* One JSON-RPC message of the reply (text[0..len), or item when it came
 * in a batch): our response is kept and ends the transfer; the server's
 * requests are answered; the rest is skipped. */
static void on_message(struct xfer *x, const cJSON *m, const char *text, size_t len)
{
	const cJSON *jid = json_get(m, "id");
	if (!cJSON_IsObject(m) || x->done)
		return;
	if (cJSON_IsString(json_get(m, "method"))) {
		/* a request (an id as JSON-RPC allows: a string or a number);
		 * the rest are notifications */
		if (cJSON_IsString(jid) || cJSON_IsNumber(jid))
			answer(x, m);
		return;
	}
	if (x->id >= 0 && id_is(jid, x->id) && (json_get(m, "result") || json_get(m, "error"))) {
		x->reply = text ? xstrndup(text, len) : json_print(m);
		x->done = true;
	}
}

/* A whole JSON text of the reply: a message or a batch of them. */
static void on_json(struct xfer *x, const char *text, size_t len)
{
	cJSON *j = json_parse(text, len), *m;
	if (cJSON_IsArray(j)) {
		cJSON_ArrayForEach(m, j)
		{
			on_message(x, m, NULL, 0);
		}
	} else {
		on_message(x, j, text, len);
	}
	cJSON_Delete(j);
}

/* ---- server-sent events ---- */

static void event_dispatch(struct xfer *x)
{
	if (x->event_has_data && !x->event_other)
		on_json(x, x->data.p, x->data.len);
	buf_reset(&x->data);
	x->event[0] = '\0';
	x->event_other = false;
	x->event_has_data = false;
}

/* One line of the stream (without its end). */
static int sse_line(struct xfer *x, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n), *v;
	size_t fn = colon ? (size_t)(colon - s) : n, vn;
	if (n == 0) {
		event_dispatch(x);
		return 0;
	}
	if (fn == 0)
		return 0; /* a comment */
	v = colon ? colon + 1 : s + n;
	vn = (size_t)(s + n - v);
	if (vn && *v == ' ') {
		v++;
		vn--;
	}
	if (fn == 4 && memcmp(s, "data", 4) == 0) {
		if ((x->event_has_data && buf_putc(&x->data, '\n')) ||
		    buf_append(&x->data, v, vn)) {
			x->too_big = true;
			return -1;
		}
		x->event_has_data = true;
	} else if (fn == 5 && memcmp(s, "event", 5) == 0) {
		snprintf(x->event, sizeof(x->event), "%.*s", (int)RLM_MIN(vn, (size_t)31), v);
		x->event_other = !(vn == 0 || (vn == 7 && memcmp(v, "message", 7) == 0));
	}
	/* "id" (for a resumption this client does not do) and "retry" (it
	 * does not reconnect) are read and left; other fields are ignored,
	 * as the SSE standard says. */
	return 0;
}

/* Parse the complete lines of the stream's pending bytes; at the end of
 * the stream (eof) the rest too. A line ends with LF, CRLF or a lone CR. */
static int sse_feed(struct xfer *x, bool eof)
{
	size_t off = 0;
	while (off < x->body.len && !x->done) {
		char *p = x->body.p + off, *end = x->body.p + x->body.len, *q = p;
		size_t skip;
		while (q < end && *q != '\n' && *q != '\r')
			q++;
		if (q == end && !eof)
			break; /* an unfinished line */
		if (q < end && *q == '\r' && q + 1 == end && !eof)
			break; /* CR, maybe LF next */
		skip = q == end ? 0 : (*q == '\r' && q + 1 < end && q[1] == '\n') ? 2 : 1;
		if (sse_line(x, p, (size_t)(q - p)))
			return -1;
		off += (size_t)(q - p) + skip;
	}
	memmove(x->body.p, x->body.p + off, x->body.len - off);
	x->body.len -= off;
	x->body.p[x->body.len] = '\0';
	return 0;
}

/* ---- curl callbacks ---- */

static size_t on_header(char *s, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb, vn;
	const char *v;
	if (n >= 5 && strncmp(s, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue, say) */
		const char *sp = memchr(s, ' ', n);
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		free(x->session);
		free(x->location);
		x->session = x->location = NULL;
		x->ctype[0] = '\0';
		return n;
	}
	v = memchr(s, ':', n);
	if (!v)
		return n;
	vn = n - (size_t)(v + 1 - s);
	v++;
	text_trim(&v, &vn);
#define IS(name) ((size_t)(v - s) > strlen(name) && strncasecmp(s, name ":", strlen(name) + 1) == 0)
	if (IS("Content-Type")) {
		snprintf(x->ctype, sizeof(x->ctype), "%.*s", (int)RLM_MIN(vn, (size_t)127), v);
	} else if (IS("Mcp-Session-Id")) {
		bool ok = vn > 0 && vn <= TOOL__HTTP_SESSION_MAX;
		for (size_t i = 0; ok && i < vn; i++) /* visible ASCII, as the spec says */
			ok = v[i] >= 0x21 && v[i] <= 0x7e;
		free(x->session);
		x->session = ok ? xstrndup(v, vn) : NULL;
	} else if (IS("Location")) {
		free(x->location);
		x->location = xstrndup(v, RLM_MIN(vn, (size_t)4096));
	}
#undef IS
	return n;
}

static size_t on_body(char *s, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	if (x->done)
		return 0;
	if (x->body.len == 0 && !x->sse)
		x->sse = strncasecmp(x->ctype, "text/event-stream", 17) == 0;
	if (buf_append(&x->body, s, n)) {
		x->too_big = true;
		return 0;
	}
	/* A stream is read as it comes, only once the status is known good
	 * (an error page is kept whole for the message), and only for a
	 * request: what answers a notification or one of our answers is not
	 * read, so a server cannot make us answer its answers without end. */
	if (x->sse && x->status == 200 && x->id >= 0 && sse_feed(x, false))
		return 0;
	return x->done ? 0 : n;
}

/* ---- a POST ---- */

/* A body for an error message: its start, controls shown as '?'. */
static void body_start(const struct buf *b, char *out, size_t cap)
{
	size_t n = text_utf8_floor(b->p, RLM_MIN(b->len, (size_t)TOOL__HTTP_ERR_BODY)), k = 0;
	for (size_t i = 0; i < n && k + 1 < cap; i++)
		out[k++] = (unsigned char)b->p[i] < 0x20 || b->p[i] == 0x7f ? ' ' : b->p[i];
	out[k] = '\0';
	if (k == 0)
		snprintf(out, cap, "(no body)");
}

/* Take the session the server gave in the initialize response. */
static void keep_session(struct tool__http *h, struct xfer *x)
{
	if (!x->session)
		return;
	pthread_mutex_lock(&h->mu);
	if (!h->session) {
		h->session = x->session;
		h->had_session = true;
		x->session = NULL;
	}
	pthread_mutex_unlock(&h->mu);
}

static void xfer_release(struct xfer *x)
{
	buf_release(&x->body);
	buf_release(&x->data);
	free(x->reply);
	free(x->session);
	free(x->location);
}

/* One POST to url; the next URL to try in *next when it redirects. */
static int post_once(struct tool__http *h, const char *url, const char *body, size_t len,
		     int64_t id, int64_t deadline_ns, char **reply, char **next,
		     struct rlm_err *err)
{
	struct xfer x = {.h = h, .id = id, .deadline_ns = deadline_ns};
	char errbuf[CURL_ERROR_SIZE] = "", start[TOOL__HTTP_ERR_BODY + 16];
	struct curl_slist *hdrs;
	int64_t t_start = time_now_ns(), left_ms = (deadline_ns - t_start) / 1000000;
	CURL *e;
	CURLcode crc;
	int rc = 0;
	bool had;
	*next = NULL;
	if (left_ms <= 0)
		return rlm_err_set(err, RLM_ETIMEOUT, "no time left to send to '%s'", url);
	buf_init(&x.body, TOOL_MAX_REPLY);
	buf_init(&x.data, TOOL_MAX_REPLY);
	e = curl_easy_init();
	if (!e)
		return rlm_err_set(err, RLM_EIO, "cannot start a transfer to '%s'", url);
	hdrs = make_headers(h, true);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)RLM_MIN(left_ms, (int64_t)TOOL__HTTP_CONNECT_MS));
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)TOOL__HTTP_STALL_S);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "rlm/" RLM_VERSION);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* The status is known before the body: on_body reads a stream only
	 * under a 200. */
	crc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x.status);
	if (crc == CURLE_OK && x.sse && x.status == 200 && id >= 0 && !x.done) {
		/* the end of the stream ends a last event that had no blank
		 * line after it */
		if (!sse_feed(&x, true))
			event_dispatch(&x);
	}
	if (x.too_big) {
		rc = rlm_err_set(err, RLM_EIO, "reply from '%s' larger than %u bytes", url,
				 (unsigned)TOOL_MAX_REPLY);
		goto out;
	}
	if (crc != CURLE_OK && !(x.done && crc == CURLE_WRITE_ERROR)) {
		if (crc == CURLE_OPERATION_TIMEDOUT &&
		    time_now_ns() - t_start >= (int64_t)TOOL__HTTP_STALL_S * 1000000000 &&
		    deadline_ns - time_now_ns() > 1000000000)
			rc = rlm_err_set(err, RLM_ETIMEOUT, "'%s' sent nothing for %d s", url,
					 TOOL__HTTP_STALL_S);
		else if (crc == CURLE_OPERATION_TIMEDOUT)
			rc = rlm_err_set(err, RLM_ETIMEOUT, "no answer from '%s' in time (%lld ms)",
					 url, (long long)left_ms);
		else
			rc = rlm_err_set(err, RLM_EIO, "cannot reach '%s': %s", url,
					 errbuf[0] ? errbuf : curl_easy_strerror(crc));
		goto out;
	}
	if ((x.status == 307 || x.status == 308) && x.location) {
		char *to = NULL;
		curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &to);
		if (to && same_origin(url, to)) {
			*next = xstrdup(to);
			goto out;
		}
		rc = rlm_err_set(err, RLM_EIO,
				 "'%s' redirects to '%.200s': not followed (another "
				 "host)",
				 url, to ? to : x.location);
		goto out;
	}
	pthread_mutex_lock(&h->mu);
	had = h->had_session;
	if (x.status == 404 && had) {
		/* the server forgot us: a new initialize needs no session */
		free(h->session);
		h->session = NULL;
	}
	pthread_mutex_unlock(&h->mu);
	if (x.status == 404 && had) {
		rc = rlm_err_set(err, RLM_EIO, "session expired: '%s' answered HTTP 404", url);
		goto out;
	}
	if (x.status != 200 && x.status != 202) {
		body_start(&x.body, start, sizeof(start));
		rc = rlm_err_set(err, RLM_EIO, "HTTP %ld from '%s': %s", x.status, url, start);
		goto out;
	}
	keep_session(h, &x);
	if (id < 0)
		goto out;
	if (x.status == 202) {
		rc = rlm_err_set(err, RLM_EIO, "'%s' accepted request %lld without answering it",
				 url, (long long)id);
		goto out;
	}
	if (!x.sse) {
		cJSON *j = json_parse(x.body.p, x.body.len);
		if (!j) {
			body_start(&x.body, start, sizeof(start));
			rc = rlm_err_set(err, RLM_EIO, "malformed reply from '%s': not JSON: %s",
					 url, start);
			goto out;
		}
		cJSON_Delete(j);
		on_json(&x, x.body.p, x.body.len);
	}
	if (!x.reply) {
		rc = rlm_err_set(err, RLM_EIO,
				 x.sse ? "the stream from '%s' ended without the response to "
					 "request %lld"
				       : "the reply from '%s' holds no response to request %lld",
				 url, (long long)id);
		goto out;
	}
	*reply = x.reply;
	x.reply = NULL;
out:
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(e);
	xfer_release(&x);
	return rc;
}

static int post(struct tool__http *h, const char *body, size_t len, int64_t id, int64_t deadline_ns,
		char **reply, struct rlm_err *err)
{
	char *url = xstrdup(h->url), *next = NULL;
	int rc = 0;
	for (int i = 0;; i++) {
		rc = post_once(h, url, body, len, id, deadline_ns, reply, &next, err);
		if (rc || !next)
			break;
		free(url);
		url = next;
		next = NULL;
		if (i == TOOL__HTTP_REDIRECTS) {
			rc = rlm_err_set(err, RLM_EIO, "'%s' redirects more than %d times", h->url,
					 TOOL__HTTP_REDIRECTS);
			break;
		}
	}
	free(url);
	return rc;
}

int tool__http_post(struct tool__http *h, const char *body, size_t len, int64_t id,
		    int64_t deadline_ns, char **reply, struct rlm_err *err)
{
	char *dummy = NULL;
	if (reply)
		*reply = NULL;
	if (deadline_ns <= 0)
		deadline_ns = time_now_ns() + TOOL_DEF_CALL_TIMEOUT_NS;
	return post(h, body, len, id, deadline_ns, reply ? reply : &dummy, err);
}

void tool__http_close(struct tool__http *h)
{
	if (!h)
		return;
	if (h->session) {
		CURL *e = curl_easy_init();
		struct curl_slist *hdrs = make_headers(h, false);
		if (e) {
			curl_easy_setopt(e, CURLOPT_URL, h->url);
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
			curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
			curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
			curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)TOOL__HTTP_DELETE_MS);
			curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
			curl_easy_setopt(e, CURLOPT_USERAGENT, "rlm/" RLM_VERSION);
			curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
			curl_easy_perform(e); /* errors ignored: we are leaving anyway */
			curl_easy_cleanup(e);
		}
		curl_slist_free_all(hdrs);
	}
	for (size_t i = 0; i < h->n_headers; i++)
		free(h->headers[i]);
	free(h->headers);
	free(h->url);
	free(h->session);
	free(h->version);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
