/* SPDX-License-Identifier: MIT */
/* serve/mcp_int.h -- what serve/mcp.c (the stdio transport, JSON-RPC and the
 * session) and serve/mcp_tools.c (the tools: their schemas, arguments and
 * calls) share inside `rlm mcp`. */
#ifndef RLM_MCP_INT_H
#define RLM_MCP_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "serve.h"
#include "service.h"
#include "../common/json.h"
#include "../common/text.h"

/* JSON-RPC 2.0 error codes. */
#define MCP_PARSE_ERROR      (-32700)
#define MCP_INVALID_REQUEST  (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS   (-32602)
#define MCP_INTERNAL_ERROR   (-32603)

/* The server: one per serve_mcp call. */
struct mcp {
	struct service *svc;        /* shared by every call's thread */
	int out_fd;                 /* the protocol's stdout (fd 1 itself is
				     * pointed at stderr, so nothing else
				     * writes there) */
	pthread_mutex_t out_mu;     /* one message written at a time */
	bool out_broken;            /* under out_mu: the client is gone */
	int max_iterations;         /* the server's, for progress totals */
	bool verbose;               /* log every message on stderr */
	bool dry_run;               /* tools/call checks its arguments and runs
				     * nothing: it answers their tool error, or
				     * an empty result (tests/fuzz_mcp.c) */

	pthread_mutex_t mu;         /* guards what follows */
	struct mcp_call *calls;     /* tools/call requests and their threads,
				     * until the reader joins them */
	bool initialized;           /* initialize was answered */
	char version[16];           /* the protocol revision agreed on, a date
				     * (they sort as strings); "" before */
};

/* Revisions that changed what this server sends. */
#define MCP_STRUCTURED "2025-06-18" /* outputSchema, structuredContent, titles */
#define MCP_TOOL_META  "2025-11-25" /* serverInfo.description, tools' execution */

/* One tools/call request, served on a thread of its own. Made, joined
 * and freed by the reader thread; the fields marked "mu" are read and
 * written under mcp.mu by both threads. */
struct mcp_call {
	struct mcp *m;
	struct mcp_call *next;      /* mu: in mcp.calls */
	pthread_t thread;           /* serves it */
	cJSON *id;                  /* the request's id; owned */
	char *key;                  /* id as compact JSON: what a cancel
				     * names; owned */
	cJSON *params;              /* the request's params; owned */
	const char *tool;           /* params.name, borrowed from params */
	const cJSON *args;          /* params.arguments or NULL, borrowed */
	const cJSON *token;         /* params._meta.progressToken or NULL */
	char *nul_arg;              /* the argument (path under arguments) whose
				     * string holds \u0000, or NULL; owned */
	struct svc_run *run;        /* mu: its solve once started (a reference) */
	bool cancelled;             /* mu: notifications/cancelled or EOF: no
				     * response is sent */
	bool done;                  /* mu: answered (or dropped): its id is
				     * free again, its thread about to end */
};

/* True when version, a revision agreed on (mcp.version: read under mcp.mu,
 * or on the reader thread, which alone writes it), is since or later. */
bool mcp_since(const char *version, const char *since);
/* Send one message (a line of compact JSON) on the protocol's stdout;
 * consumes msg. Any thread. */
void mcp_send(struct mcp *m, cJSON *msg);
/* True when c was cancelled (any thread). */
bool mcp_call_cancelled(struct mcp_call *c);
/* Record c's solve, so a cancel reaches it (run NULL: it ended, and the
 * caller drops its reference after). Returns true when c was cancelled
 * already: the caller cancels the run itself. */
bool mcp_call_set_run(struct mcp_call *c, struct svc_run *run);

/* ---- reading messages (mcp.c) ---- */

/* The reader's state between reads of stdin. */
struct mcp_reader {
	struct buf line;            /* the message read so far; its cap is a
				     * message's */
	bool skipping;              /* the rest of a message over the cap is
				     * being dropped */
};
/* Take n bytes read from stdin: each whole line is a message, handled
 * (answered, or its tools/call started) before this returns; a line's
 * trailing '\r', spaces and tabs are cut and an empty line is skipped; a
 * message over the cap is answered with an error and dropped. Reader
 * thread only. */
void serve__mcp_feed(struct mcp *m, struct mcp_reader *rd, const char *p, size_t n);
/* EOF: the last line, if it had no '\n', is a message too. */
void serve__mcp_end(struct mcp *m, struct mcp_reader *rd);

/* ---- the tools (mcp_tools.c) ---- */

/* A tools/call's arguments, checked. */
struct mcp_args {
	const char *question;       /* solve, ask; borrowed from the call */
	const cJSON *value;         /* solve's context as another JSON value (a
				     * list of strings, a dict, ...): borrowed */
	const char *context, *path, *corpus_id; /* solve, open_session:
				     * exactly one; ask: corpus_id or
				     * session_id; load_corpus: path */
	const char *session_id;     /* ask, close_session */
	enum corpus_kind kind;      /* load_corpus's format */
	struct svc_opts o;          /* solve's max_depth and max_iterations */
	const cJSON *schema;        /* solve's and ask's answer schema (a JSON
				     * Schema object), borrowed; NULL: none */
};
/* Check the arguments (an object, or NULL: none) of tool (a known one)
 * into *a; nul_arg: the argument whose string holds \u0000, or NULL.
 * Returns NULL, or the tool error that says what is wrong (the
 * caller's). Runs nothing; any thread. */
cJSON *serve__mcp_args(const char *tool, const cJSON *args, const char *nul_arg,
		       struct mcp_args *a);

/* The tools/list result for revision version: {"tools": [...]}, the
 * caller's; without titles and output schemas before MCP_STRUCTURED,
 * without execution before MCP_TOOL_META. */
cJSON *mcp_tools_list(const char *version);
/* True when name is one of the tools. */
bool mcp_tool_known(const char *name);
/* Run c's tool to its end on the calling thread (a call's thread),
 * sending notifications/progress when c has a token. Returns the
 * tools/call result (the caller's): a tool error has isError true. */
cJSON *mcp_tool_call(struct mcp_call *c);

#endif
