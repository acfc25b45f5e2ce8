/* SPDX-License-Identifier: MIT */
/* tests/fakesrv.c -- the fake HTTP/1.1 server of tests/fakesrv.h: an accept
 * thread, a thread per connection, recorded requests, scripted replies. */
#include "fakesrv.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/net.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD (64u << 10)  /* request line and headers */
#define MAX_BODY (256u << 20) /* request body */

/* A reply owned by the server. */
struct reply {
	int status;
	char *headers; /* NULL or lines ending "\r\n" */
	char *body;
	size_t body_len;
	enum fake_action action;
	int delay_ms;
	struct reply *next; /* in the FIFO */
};

struct conn {
	struct fakesrv *s;
	int fd; /* -1 once closed; guarded by s->mu */
	int serial;
	pthread_t th;
};

struct fakesrv {
	int lfd;
	int port;
	char url[64];
	pthread_t accept_th;

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;  /* broadcast on stop; cuts delays short */
	bool stopping;
	struct reply *head, *tail;  /* scripted replies */
	struct reply def;	    /* the default reply */
	struct fake_request **reqs; /* recorded requests; pointers stay valid */
	size_t n_reqs, cap_reqs;
	struct conn **conns; /* every connection accepted */
	size_t n_conns, cap_conns;
};

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reply_set(struct reply *d, const struct fake_reply *r)
{
	d->status = r->status;
	d->headers = r->headers ? xstrdup(r->headers) : NULL;
	d->body = xstrdup(r->body ? r->body : "");
	d->body_len = strlen(d->body);
	d->action = r->action;
	d->delay_ms = r->delay_ms;
	d->next = NULL;
}

static void rlm_reply_release(struct reply *d)
{
	free(d->headers);
	free(d->body);
	d->headers = d->body = NULL;
}

static void request_free(struct fake_request *r)
{
	free(r->method);
	free(r->path);
	free(r->body);
	for (size_t i = 0; i < r->n_headers; i++)
		free(r->headers[i]);
	free(r->headers);
	free(r);
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Payload Too Large";
	case 422:
		return "Unprocessable Entity";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 529:
		return "Overloaded";
	default:
		return "Status";
	}
}

/* ---- sockets ---- */

/* Close c's socket under the lock, so that stop never shuts down a
 * descriptor number that has been reused. */
static void conn_close(struct conn *c, bool reset)
{
	struct fakesrv *s = c->s;
	pthread_mutex_lock(&s->mu);
	if (c->fd >= 0) {
		if (reset) {
			struct linger lg = {1, 0};
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		} else {
			shutdown(c->fd, SHUT_WR);
		}
		close(c->fd);
		c->fd = -1;
	}
	pthread_mutex_unlock(&s->mu);
}

/* Wait ms, or less when the server stops; true when it is stopping. */
static bool nap(struct fakesrv *s, int ms)
{
	struct timespec until;
	bool stopping;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stopping && ms > 0)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
			break;
	stopping = s->stopping;
	pthread_mutex_unlock(&s->mu);
	return stopping;
}

/* ---- one connection ---- */

/* Bytes read from a connection and not yet consumed. */
struct inbuf {
	char *p;
	size_t len, cap;
};

/* Read more into in; false on EOF or error. */
static bool fill(int fd, struct inbuf *in)
{
	ssize_t n;
	if (in->cap - in->len < 16384) {
		in->cap = in->cap ? in->cap * 2 : 65536;
		in->p = xrealloc(in->p, in->cap);
	}
	do
		n = recv(fd, in->p + in->len, in->cap - in->len - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	in->len += (size_t)n;
	in->p[in->len] = '\0';
	return true;
}

/* Refuse a request and end the connection. What the client still sends is
 * read and dropped for up to a second: closing with unread data would send
 * an RST that can destroy the reply before the client reads it. */
static void refuse(int fd, int status)
{
	char msg[160];
	struct timeval tv = {1, 0};
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status,
			 reason(status));
	file_write_all(fd, msg, (size_t)n);
	shutdown(fd, SHUT_WR);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(fd, msg, sizeof(msg), 0) > 0)
		;
}

/* True when the header lines (each ending "\r\n") include name. */
static bool has_header(const char *lines, const char *name)
{
	size_t nl = strlen(name);
	while (lines && *lines) {
		if (strncasecmp(lines, name, nl) == 0 && lines[nl] == ':')
			return true;
		lines = strstr(lines, "\r\n");
		if (lines)
			lines += 2;
	}
	return false;
}

/* Send r as one write: status line, headers, body (half of it to truncate). */
static void send_reply(int fd, const struct reply *r, bool closing)
{
	struct buf out;
	size_t body = r->action == FAKE_TRUNCATE ? r->body_len / 2 : r->body_len;
	buf_init(&out, 0);
	buf_printf(&out, "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
	if (!has_header(r->headers, "Content-Type"))
		buf_puts(&out, "Content-Type: application/json\r\n");
	buf_printf(&out, "Content-Length: %zu\r\n", r->body_len);
	if (r->headers)
		buf_puts(&out, r->headers);
	if (closing && r->action == FAKE_NORMAL)
		buf_puts(&out, "Connection: close\r\n");
	buf_puts(&out, "\r\n");
	buf_append(&out, r->body, body);
	file_write_all(fd, out.p, out.len);
	buf_release(&out);
}

/* Parse the head in[0..head) (ending "\r\n\r\n") into a request. Returns
 * 0, or the HTTP status to refuse it with. */
static int parse_head(char *p, size_t head, struct fake_request *rq, size_t *clen, bool *close,
		      bool *expect)
{
	char *end = p + head - 4, *line = p, *eol, *sp1, *sp2;
	bool http10;
	*clen = 0;
	*close = *expect = false;
	*end = '\0';
	eol = strstr(line, "\r\n");
	if (eol)
		*eol = '\0';
	sp1 = strchr(line, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return 400;
	rq->method = xstrndup(line, (size_t)(sp1 - line));
	rq->path = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	http10 = strcmp(sp2 + 1, "HTTP/1.0") == 0;
	*close = http10;
	for (line = eol ? eol + 2 : end; line < end; line = eol ? eol + 2 : end) {
		eol = strstr(line, "\r\n");
		if (eol)
			*eol = '\0';
		rq->headers = xrealloc(rq->headers, (rq->n_headers + 1) * sizeof(char *));
		rq->headers[rq->n_headers++] = xstrdup(line);
	}
	{
		const char *te = fake_header(rq, "Transfer-Encoding");
		const char *cl = fake_header(rq, "Content-Length");
		const char *cn = fake_header(rq, "Connection");
		const char *ex = fake_header(rq, "Expect");
		if (te && strcasecmp(te, "identity") != 0)
			return 411;
		if (cl) {
			char *e;
			unsigned long long n;
			errno = 0;
			n = strtoull(cl, &e, 10);
			if (errno || e == cl || *e || cl[0] == '-')
				return 400;
			if (n > MAX_BODY)
				return 413;
			*clen = (size_t)n;
		}
		if (cn && strcasecmp(cn, "close") == 0)
			*close = true;
		if (cn && http10 && strcasecmp(cn, "keep-alive") == 0)
			*close = false;
		*expect = ex && strcasecmp(ex, "100-continue") == 0;
	}
	return 0;
}

/* Record rq and take the reply for it, both under one lock so that
 * request i gets reply i. */
static void record(struct fakesrv *s, struct fake_request *rq, struct reply *out)
{
	pthread_mutex_lock(&s->mu);
	if (s->n_reqs == s->cap_reqs) {
		s->cap_reqs = s->cap_reqs ? s->cap_reqs * 2 : 64;
		s->reqs = xrealloc(s->reqs, s->cap_reqs * sizeof(*s->reqs));
	}
	s->reqs[s->n_reqs++] = rq;
	if (s->head) {
		struct reply *r = s->head;
		s->head = r->next;
		if (!s->head)
			s->tail = NULL;
		*out = *r;
		free(r);
	} else {
		struct fake_reply fr = {s->def.status, s->def.headers, s->def.body, s->def.action,
					s->def.delay_ms};
		reply_set(out, &fr);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Serve one request; false when the connection is to end. */
static bool serve_one(struct conn *c, struct inbuf *in)
{
	struct fakesrv *s = c->s;
	struct fake_request *rq;
	struct reply r;
	char *hend;
	size_t head, clen;
	bool close, expect;
	int status;
	while (!in->p || !(hend = memmem(in->p, in->len, "\r\n\r\n", 4))) {
		if (in->len > MAX_HEAD) {
			refuse(c->fd, 431);
			return false;
		}
		if (!fill(c->fd, in))
			return false;
	}
	head = (size_t)(hend - in->p) + 4;
	rq = xcalloc(1, sizeof(*rq));
	rq->conn = c->serial;
	status = parse_head(in->p, head, rq, &clen, &close, &expect);
	if (status) {
		request_free(rq);
		refuse(c->fd, status);
		return false;
	}
	if (expect && in->len - head < clen)
		file_write_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	while (in->len - head < clen)
		if (!fill(c->fd, in)) {
			request_free(rq);
			return false;
		}
	rq->body = xstrndup(in->p + head, clen);
	rq->body_len = clen;
	rq->t_ms = mono_ms();
	/* Keep what follows (a pipelined request) for the next round. */
	memmove(in->p, in->p + head + clen, in->len - head - clen);
	in->len -= head + clen;
	in->p[in->len] = '\0';

	record(s, rq, &r);
	if (r.delay_ms > 0 && nap(s, r.delay_ms)) {
		rlm_reply_release(&r);
		return false;
	}
	switch (r.action) {
	case FAKE_NORMAL:
		send_reply(c->fd, &r, close);
		break;
	case FAKE_CLOSE:
		close = true;
		break;
	case FAKE_RESET:
		conn_close(c, true);
		close = true;
		break;
	case FAKE_TRUNCATE:
		send_reply(c->fd, &r, true);
		close = true;
		break;
	case FAKE_HANG:
		/* Until the client goes away or stop shuts the socket down. */
		while (fill(c->fd, in))
			in->len = 0;
		close = true;
		break;
	}
	rlm_reply_release(&r);
	return !close;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct inbuf in = {NULL, 0, 0};
	while (serve_one(c, &in))
		;
	free(in.p);
	conn_close(c, false);
	return NULL;
}

/* ---- the server ---- */

static void *accept_main(void *arg)
{
	struct fakesrv *s = arg;
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		bool stopping;
		if (fd < 0) {
			pthread_mutex_lock(&s->mu);
			stopping = s->stopping;
			pthread_mutex_unlock(&s->mu);
			if (stopping ||
			    (errno != EINTR && errno != ECONNABORTED && errno != EMFILE &&
			     errno != ENFILE && errno != ENOBUFS && errno != ENOMEM))
				break;
			if (errno != EINTR && errno != ECONNABORTED)
				time_sleep_ns(10 * 1000000);
			continue;
		}
		net_nodelay(fd);
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			close(fd);
			break;
		}
		c = xcalloc(1, sizeof(*c));
		c->s = s;
		c->fd = fd;
		c->serial = (int)s->n_conns;
		if (s->n_conns == s->cap_conns) {
			s->cap_conns = s->cap_conns ? s->cap_conns * 2 : 16;
			s->conns = xrealloc(s->conns, s->cap_conns * sizeof(*s->conns));
		}
		s->conns[s->n_conns++] = c;
		if (pthread_create(&c->th, NULL, conn_main, c) != 0) {
			fprintf(stderr, "fakesrv: cannot create a connection thread\n");
			abort();
		}
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

struct fakesrv *fakesrv_start(void)
{
	struct fakesrv *s = xcalloc(1, sizeof(*s));
	char msg[512];
	static const struct fake_reply ok = {200, NULL, "{\"ok\":true}", FAKE_NORMAL, 0};
	s->lfd = net_listen("127.0.0.1", 0, &s->port, msg, sizeof(msg));
	if (s->lfd < 0) {
		fprintf(stderr, "fakesrv: %s\n", msg);
		free(s);
		return NULL;
	}
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	reply_set(&s->def, &ok);
	if (pthread_create(&s->accept_th, NULL, accept_main, s) != 0) {
		fprintf(stderr, "fakesrv: cannot create the accept thread\n");
		abort();
	}
	return s;
}

const char *fakesrv_url(struct fakesrv *s)
{
	return s->url;
}

int fakesrv_port(struct fakesrv *s)
{
	return s->port;
}

void fakesrv_push(struct fakesrv *s, const struct fake_reply *r)
{
	struct reply *q = xmalloc(sizeof(*q));
	reply_set(q, r);
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = q;
	else
		s->head = q;
	s->tail = q;
	pthread_mutex_unlock(&s->mu);
}

void fakesrv_set_default(struct fakesrv *s, const struct fake_reply *r)
{
	struct reply d, old;
	reply_set(&d, r);
	pthread_mutex_lock(&s->mu);
	old = s->def;
	s->def = d;
	pthread_mutex_unlock(&s->mu);
	rlm_reply_release(&old);
}

size_t fakesrv_count(struct fakesrv *s)
{
	size_t n;
	pthread_mutex_lock(&s->mu);
	n = s->n_reqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

const struct fake_request *fakesrv_request(struct fakesrv *s, size_t i)
{
	const struct fake_request *r;
	pthread_mutex_lock(&s->mu);
	r = i < s->n_reqs ? s->reqs[i] : NULL;
	pthread_mutex_unlock(&s->mu);
	return r;
}

const char *fake_header(const struct fake_request *r, const char *name)
{
	size_t nl = strlen(name);
	if (!r || !nl)
		return NULL;
	for (size_t i = 0; i < r->n_headers; i++) {
		const char *h = r->headers[i];
		if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
			h += nl + 1;
			while (*h == ' ' || *h == '\t')
				h++;
			return h;
		}
	}
	return NULL;
}

size_t fakesrv_connections(struct fakesrv *s)
{
	size_t n;
	pthread_mutex_lock(&s->mu);
	n = s->n_conns;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void fakesrv_stop(struct fakesrv *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	/* Wakes accept() on Linux. */
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->accept_th, NULL);
	close(s->lfd);
	/* No connection is added now; wake those blocked in recv or send. */
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_conns; i++)
		if (s->conns[i]->fd >= 0)
			shutdown(s->conns[i]->fd, SHUT_RDWR);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < s->n_conns; i++) {
		pthread_join(s->conns[i]->th, NULL);
		free(s->conns[i]);
	}
	free(s->conns);
	for (size_t i = 0; i < s->n_reqs; i++)
		request_free(s->reqs[i]);
	free(s->reqs);
	while (s->head) {
		struct reply *r = s->head;
		s->head = r->next;
		rlm_reply_release(r);
		free(r);
	}
	rlm_reply_release(&s->def);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

char *fakesrv_chat_body(const char *content, const char *finish, long in_tokens,
			long out_tokens)
{
	cJSON *o = cJSON_CreateObject(), *choices = cJSON_CreateArray(), *ch = cJSON_CreateObject();
	cJSON *msg = cJSON_CreateObject(), *usage = cJSON_CreateObject();
	char *s;
	json_add_str(msg, "role", "assistant");
	json_add_str(msg, "content", content);
	json_add(ch, "message", msg);
	json_add_str(ch, "finish_reason", finish);
	json_add(choices, NULL, ch);
	json_add(o, "choices", choices);
	json_add_num(usage, "prompt_tokens", (double)in_tokens);
	json_add_num(usage, "completion_tokens", (double)out_tokens);
	json_add(o, "usage", usage);
	s = json_print(o);
	cJSON_Delete(o);
	return s;
}
