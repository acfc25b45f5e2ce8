/* SPDX-License-Identifier: MIT */
/* tests/fakesrv.h -- a fake HTTP/1.1 server on 127.0.0.1 for tests: it
 * records every request exactly as received and answers with scripted
 * replies, faults included (close, reset, truncated body, hang, delay).
 *
 * DESIGN
 * One thread accepts; each connection gets its own thread, which serves
 * requests one after another on it (keep-alive) until the client closes,
 * sends "Connection: close", or a fault reply ends it. Request bodies are
 * read by Content-Length; a chunked request gets 411 and the connection
 * closes. Each reply goes out in one write(), headers and body together,
 * on a TCP_NODELAY socket. Replies come from a FIFO of scripted replies,
 * then from the default reply (200 {"ok":true} unless set).
 *
 * Threads: every function may be called from any thread, except that
 * fakesrv_stop must be the last call and must not race with the others.
 * fakesrv_stop shuts every socket down, so no reply, delay or hang blocks
 * it, joins all threads and frees everything. */
#ifndef RLM_FAKESRV_H
#define RLM_FAKESRV_H

#include <stddef.h>

enum fake_action {
	FAKE_NORMAL,   /* reply, keep the connection */
	FAKE_CLOSE,    /* close without any reply */
	FAKE_RESET,    /* SO_LINGER 0 then close: the client sees an RST */
	FAKE_TRUNCATE, /* headers with the full Content-Length, half the body, close */
	FAKE_HANG,     /* never reply: wait for the client to go away or for stop */
};

struct fake_reply {
	int status;	     /* e.g. 200, 429 */
	const char *headers; /* extra header lines, each ending "\r\n", or NULL; copied */
	const char *body;    /* NUL-terminated, or NULL for none; copied */
	enum fake_action action;
	int delay_ms; /* wait before acting (stop cuts it short) */
};

/* One request as received. Immutable once recorded. */
struct fake_request {
	char *method, *path; /* "POST", "/v1/chat/completions" */
	char *body;	     /* NUL-terminated ("" when none) */
	size_t body_len;
	char **headers; /* "Name: value", as received, without CRLF */
	size_t n_headers;
	int conn;	/* serial of its connection: 0 for the first accepted */
	long long t_ms; /* when it had fully arrived: CLOCK_MONOTONIC in ms,
			 * comparable with time_now_ns() / 1000000 */
};

struct fakesrv;

/* Listen on 127.0.0.1 on an ephemeral port. NULL (with a message on
 * stderr) when the socket cannot be set up. */
struct fakesrv *fakesrv_start(void);
/* "http://127.0.0.1:PORT"; valid until stop. */
const char *fakesrv_url(struct fakesrv *s);
int fakesrv_port(struct fakesrv *s);

/* Queue a reply for the next request that finds the queue non-empty. */
void fakesrv_push(struct fakesrv *s, const struct fake_reply *r);
/* Replace the reply used once the queue is empty. */
void fakesrv_set_default(struct fakesrv *s, const struct fake_reply *r);

/* Requests received so far (recorded before the reply is sent). */
size_t fakesrv_count(struct fakesrv *s);
/* Request i in arrival order, or NULL when i >= count; valid until stop. */
const struct fake_request *fakesrv_request(struct fakesrv *s, size_t i);
/* The value of header name (case-insensitive) in r, leading blanks
 * skipped, or NULL when absent. Borrowed from r. */
const char *fake_header(const struct fake_request *r, const char *name);
/* Connections accepted so far. */
size_t fakesrv_connections(struct fakesrv *s);

/* Stop: close every connection, join every thread, free everything.
 * NULL is a no-op. */
void fakesrv_stop(struct fakesrv *s);

/* An OpenAI chat completions body (malloc'd) whose reply is content, with
 * that finish_reason ("stop", "length") and usage. */
char *fakesrv_chat_body(const char *content, const char *finish, long in_tokens,
			long out_tokens);

#endif
