/* SPDX-License-Identifier: MIT */
/* common/httpd.h -- what our HTTP servers (`rlm serve`, `rlm sim-serve`)
 * share on libmicrohttpd: the daemon on a listening socket, replies that
 * leave in one write, JSON replies and error bodies, request bodies read
 * under a cap, and a table of routes.
 *
 * DESIGN
 * The daemon runs a thread per connection (a handler may block on a solve
 * or sleep a modelled latency), polled with poll() so that descriptors
 * past FD_SETSIZE work. Each accepted socket gets TCP_NODELAY, and each
 * reply made here hands headers and body to the library as one buffer, so
 * they leave in one write: two writes without TCP_NODELAY stall each call
 * ~40 ms (Nagle against delayed ACK, see common/net.h). A server keeps its
 * own request callbacks (libmicrohttpd calls one with the headers, once
 * per piece of the body and once at its end) and its own error shape: the
 * pieces here build what it asks for, in its order.
 *
 * Threads: httpd_start, httpd_quiesce and httpd_stop on the thread that
 * owns the daemon; httpd_stats on any; the rest on a connection's thread,
 * inside a callback. */
#ifndef RLM_HTTPD_H
#define RLM_HTTPD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "json.h"

/* ---- the daemon ----
 * Connections are counted here, not by the library: at most
 * connection_limit open at once and per_ip_limit from one address. A
 * connection is "in its head" from its accept (or, kept alive, from the
 * end of its previous request) until its request head has arrived (the
 * access handler's first call), then "in its body" until the whole
 * request is in (the call that makes the answer). A client that trickles
 * a header line, or a byte of its body, every few seconds keeps the
 * library's idle timeout from ever firing. So:
 * - a head must arrive within head_timeout_s of its start, and a body
 *   within body_timeout_s of its head, whatever bytes come meanwhile; a
 *   watchdog thread shuts down the connections past them;
 * - when a new connection finds a limit (total or its address's) reached,
 *   one connection is dropped so the newcomer is served (of the
 *   newcomer's address, for the address's limit): of those in their
 *   head, or sending a body without having shown a good key
 *   (httpd_conn_trust), the one accepted first; when none is either, the
 *   newcomer is closed. */

struct httpd_cfg {
	MHD_AccessHandlerCallback on_request;	   /* called with arg */
	MHD_RequestCompletedCallback on_completed; /* called with arg; NULL: none */
	void *arg;				   /* of both callbacks */
	unsigned connection_limit;		   /* connections open at once; 0: 1024 */
	unsigned per_ip_limit;			   /* from one address; 0: no limit */
	unsigned timeout_s;			   /* an idle connection is closed after this */
	unsigned head_timeout_s;		   /* a request head must arrive within
						    * this; 0: no deadline */
	unsigned body_timeout_s;		   /* a body, within this of its head;
						    * 0: no deadline */
	bool quiesce;				   /* httpd_quiesce may be called */
};

/* What the daemon did with connections (httpd_stats). */
struct httpd_stats {
	unsigned open;		/* connections open and counted now */
	unsigned in_head;	/* of them, waiting for a request head */
	unsigned in_body;	/* of them, reading a request body */
	uint64_t head_timeouts; /* dropped: their head came too slowly */
	uint64_t body_timeouts; /* dropped: their body came too slowly */
	uint64_t evicted;	/* dropped in their head or body for a newcomer */
	uint64_t refused;	/* newcomers closed: a limit, nothing to drop */
};

struct httpd;

/* Serve HTTP on listen_fd, a listening socket (net_listen). listen_fd is
 * the daemon's from now on: closed by httpd_quiesce or httpd_stop, or here
 * when the daemon cannot start (NULL). The threads it makes inherit the
 * caller's signal mask. */
struct httpd *httpd_start(const struct httpd_cfg *cfg, int listen_fd);
/* Stop accepting connections (cfg.quiesce needed): the listening socket is
 * closed; the connections open are served on. */
void httpd_quiesce(struct httpd *h);
/* Close every connection, wait for their threads and free h (NULL: no-op).
 * A handler that blocks holds this up: tell it to stop first. */
void httpd_stop(struct httpd *h);
/* Its counters now; any thread. */
void httpd_stats(struct httpd *h, struct httpd_stats *st);
/* c showed a good key: its body is not dropped for a newcomer (until its
 * request completes). In the access handler. */
void httpd_conn_trust(struct MHD_Connection *c);

/* The socket of connection c (the library's), or -1. */
int httpd_conn_fd(struct MHD_Connection *c);

/* ---- replies ----
 * hdrs: extra headers as pairs of a name and a value, up to a NULL name
 * (NULL: none). A response is NULL when the library fails; httpd_queue
 * takes that too. */

/* A response of body[0..len) (malloc'd; consumed, freed here on failure
 * too), sent as one buffer, with Content-Type type and hdrs. */
struct MHD_Response *httpd_response(char *body, size_t len, const char *type,
				    const char *const *hdrs);
/* j (consumed) as compact JSON, Content-Type application/json, and hdrs. */
struct MHD_Response *httpd_json_response(cJSON *j, const char *const *hdrs);
/* A response whose body read(cls, ...) writes as the library asks,
 * block bytes at most at once; size: its length, or MHD_SIZE_UNKNOWN
 * (chunked). done(cls) frees cls when the response is destroyed, or here
 * on failure. Content-Type type, and hdrs. */
struct MHD_Response *httpd_callback_response(uint64_t size, size_t block,
					     MHD_ContentReaderCallback read, void *cls,
					     MHD_ContentReaderFreeCallback done, const char *type,
					     const char *const *hdrs);
/* Queue r (destroyed here; NULL: nothing is sent) on c with status.
 * Returns what the access handler returns: MHD_NO closes the connection. */
enum MHD_Result httpd_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);
/* httpd_queue of httpd_json_response(j, hdrs). */
enum MHD_Result httpd_json(struct MHD_Connection *c, unsigned status, cJSON *j,
			   const char *const *hdrs);
/* An error body in the caller's shape: {"error": {name: value, ...}}, from
 * members, pairs of a name and a value (NULL: null) up to a NULL name, in
 * that order. The caller's. */
cJSON *httpd_error_json(const char *const *members);

/* ---- request bodies ---- */

/* A request body read under a cap; owned by its connection's thread. */
struct httpd_body {
	struct buf buf;	  /* what was read ("" before any byte) */
	bool too_big;	  /* it passed the cap: buf was dropped */
	uint64_t dropped; /* bytes read and dropped since */
	int64_t arrived;  /* when its headers came (time_now_ns) */
};

void httpd_body_init(struct httpd_body *b, size_t max);
/* Room for the body c declares (Content-Length, up to HTTPD_EXPECT_MAX
 * and b's cap) at once, instead of growing by doubling as it comes: a
 * body of 160 KB is then copied once, not five times into fresh memory;
 * the thread's kept buffer when it is large enough. */
#define HTTPD_EXPECT_MAX ((size_t)8 << 20)
void httpd_body_expect(struct httpd_body *b, struct MHD_Connection *c);
/* Take data[0..n), the next piece of the body: kept while the whole stays
 * within the cap; past it, buf is dropped and the rest only counted. */
void httpd_body_take(struct httpd_body *b, const char *data, size_t n);
/* Release b's buffer: kept by the calling thread for the next body
 * httpd_body_expect sizes (at most one of up to 2 MiB a thread). */
void httpd_body_release(struct httpd_body *b);
/* An MHD_RequestCompletedCallback for servers whose per-request state
 * (*con_cls) is a heap httpd_body, or NULL: releases and frees it. */
void httpd_body_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			  enum MHD_RequestTerminationCode code);
/* The Content-Length header of c as sent (for a message) when it declares
 * more than max bytes, else NULL. Borrowed until the request completes. */
const char *httpd_declared_over(struct MHD_Connection *c, size_t max);

/* ---- routes ---- */

struct httpd_route {
	const char *path;    /* segments, each a name or "*": one or more
			      * characters but '/' ("/v1/runs/x/events") */
	const char *methods; /* those allowed, as an Allow header lists
			      * them: "POST", "GET, HEAD", ... */
	int id;		     /* the caller's name for it */
};

/* The first route of t[0..n) whose path url matches, or NULL; with arg,
 * *arg is where url's first "*" segment begins (it runs to the end of url:
 * "x/events"), or NULL when the path has none. */
const struct httpd_route *httpd_route_find(const struct httpd_route *t, size_t n, const char *url,
					   const char **arg);
/* True when r allows method. */
bool httpd_route_allows(const struct httpd_route *r, const char *method);

#endif
