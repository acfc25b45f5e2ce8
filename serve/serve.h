/* SPDX-License-Identifier: MIT */
/* serve/serve.h -- what the command line starts of the serve module:
 * `rlm mcp`'s server (serve/mcp.c). The service both servers share is
 * serve/service.h. */
#ifndef RLM_SERVE_H
#define RLM_SERVE_H

#include <stdbool.h>

#include "service.h"

/* The MCP protocol revision `rlm mcp` speaks (older ones are negotiated). */
#define MCP_VERSION "2025-11-25"

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
