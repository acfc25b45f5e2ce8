/* SPDX-License-Identifier: MIT */
/* serve/serve.h -- what the command line starts of the serve module:
 * `rlm serve`'s HTTP server (serve/serve_http.c) and `rlm mcp`'s server
 * (serve/mcp.c). The service both share is serve/service.h. */
#ifndef RLM_SERVE_H
#define RLM_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service.h"

/* The MCP protocol revision `rlm mcp` speaks (older ones are negotiated). */
#define MCP_VERSION "2025-11-25"

/* ---- `rlm serve`: the HTTP server ----
 * The life of a server: serve_server_new (the service: models, store),
 * serve_server_listen, then on a signal serve_server_stopping (no new
 * connection or solve), waiting for serve_server_idle (no solve running),
 * serve_server_cancel for those that do not end in time, waiting for
 * serve_server_quiet (no request left to answer), serve_server_free. Call
 * them from one thread; the server's own threads inherit its signal
 * mask. */

struct serve_http_cfg {
	const char *api_key;	    /* bearer token every request must carry; NULL: none */
	size_t max_body;	    /* bytes of a request body */
	int64_t request_timeout_ns; /* a synchronous solve's */
	unsigned max_connections;   /* open at once; 0: SERVE_MAX_CONNECTIONS */
	unsigned max_per_address;   /* open at once from one address; 0:
				     * SERVE_MAX_PER_ADDRESS */
	unsigned head_timeout_s;    /* a request head must arrive within this
				     * of the accept (or of the end of the
				     * previous request); 0: SERVE_HEAD_TIMEOUT */
	unsigned body_timeout_s;    /* a request body must arrive within this
				     * of its head; 0: SERVE_BODY_TIMEOUT */
	bool verbose;		    /* log every request on stderr */
};

/* Defaults of the connection limits (common/httpd.h says what they do). */
#define SERVE_MAX_CONNECTIONS 1024u
#define SERVE_MAX_PER_ADDRESS 256u
#define SERVE_HEAD_TIMEOUT    10u
#define SERVE_BODY_TIMEOUT    60u

struct serve_server;

/* Make the service of svc and a server over it (not listening yet).
 * Returns 0, or a negative code with err (RLM_EINVAL: a bad
 * configuration); *out is the caller's (serve_server_free). */
int serve_server_new(const struct svc_cfg *svc, const struct serve_http_cfg *cfg,
		     struct serve_server **out, struct rlm_err *err);
/* Serve HTTP on listen_fd, a listening socket (net_listen), which is the
 * server's from now on (closed when it cannot start). Returns 0 or
 * RLM_EIO. */
int serve_server_listen(struct serve_server *s, int listen_fd);
/* Stop taking connections and solves: /healthz says "stopping", running
 * solves go on. */
void serve_server_stopping(struct serve_server *s);
/* True when no solve runs. */
bool serve_server_idle(const struct serve_server *s);
/* Cancel the running solves (their runs stay in the store, resumable);
 * returns how many. */
int serve_server_cancel(struct serve_server *s);
/* True when no request is being answered. */
bool serve_server_quiet(const struct serve_server *s);
/* Close the connections, stop the daemon, free the service. NULL: no-op. */
void serve_server_free(struct serve_server *s);

/* ---- `rlm mcp` ---- */

struct serve_mcp_cfg {
	struct svc_cfg svc; /* the service: models, store, roots, limits */
	bool verbose;	    /* log every message on stderr */
};

/* Serve MCP (JSON-RPC 2.0, one message a line) reading in_fd and writing
 * out_fd, until EOF on in_fd or until sig_fd (a signalfd, or -1) is
 * readable; then cancel the running solves and wait for their threads.
 * Logs go to stderr. The descriptors stay the caller's. Returns 0, or a
 * negative code with err when the service cannot start (RLM_EINVAL: a bad
 * configuration). Call it on one thread at a time. */
int serve_mcp(const struct serve_mcp_cfg *cfg, int in_fd, int out_fd, int sig_fd,
	      struct rlm_err *err);

#endif
