/* SPDX-License-Identifier: MIT */
/* tool/client_int.h -- what the MCP client files of tool/ share: the stdio
 * transport (stdio.c), one server's lifecycle and calls (server.c), the
 * config parser (config.c) and the set behind tool.h (set.c).
 *
 * DESIGN. A set holds servers; a server is an MCP server over stdio or
 * streamable HTTP, or a group of host tools (C callbacks). An MCP server's
 * connection (struct tool__conn) is reference-counted: every request holds
 * a reference for its length, so a thread that finds the server broken
 * (a hang, a crash, garbage) can drop it from the server and kill the
 * process while others still wait on it; they wake with the reason, and the
 * last reference reaps the process and joins its reader thread. The next
 * request that needs the server starts it again, at most TOOL__MAX_STARTS
 * times in all. */
#ifndef RLM_TOOL_CLIENT_INT_H
#define RLM_TOOL_CLIENT_INT_H

#include <pthread.h>

#include "tool_int.h"

/* The MCP revision rlm speaks, as client and server: a copy of serve/'s
 * MCP_VERSION (serve/serve.h), which tool/ may not include (it is above). */
#define TOOL__MCP_VERSION "2025-11-25"
#define TOOL__MAX_STARTS  3	/* starts of one server in a set's life */
#define TOOL__MAX_TIMEOUTS 3	/* calls in a row out of time: a hung server */
#define TOOL__MAX_PAGES	  100	/* tools/list pages read */
#define TOOL__MAX_TOOLS	  10000 /* tools kept of one server */
#define TOOL__DESC_CAP	  300	/* bytes of a description in discovery results */

/* ---- the stdio transport (stdio.c) ---- */

/* One server process: stdin and stdout pipes carrying newline-delimited
 * JSON-RPC, stderr kept in a ring of its last 4 KiB, one reader thread. */
struct tool__stdio;

struct tool__spawn {
	const char *name;	 /* the server's name, for messages */
	const char *const *argv; /* argv[0] looked up in PATH; NULL-terminated */
	const char *const *env;	 /* "K=V" added to the filtered environment */
	size_t n_env;
	const char *cwd; /* NULL: ours */
	bool verbose;	 /* log what the server sends unasked */
};

/* Start the process (its own process group). Returns 0, or RLM_EIO naming
 * the command and the cause. */
int tool__stdio_open(const struct tool__spawn *sp, struct tool__stdio **out, struct rlm_err *err);
/* tool__http_post's contract over the pipe: a request (id >= 0) waits for
 * the response with that id until deadline_ns (*reply its JSON text,
 * malloc'd); a notification or response (id < 0) is only written.
 * RLM_ETIMEOUT, or RLM_EIO when the process is or becomes dead (the
 * reason, with its last stderr lines). Any thread, several at once. */
int tool__stdio_post(struct tool__stdio *c, const char *body, size_t len, int64_t id,
		     int64_t deadline_ns, char **reply, struct rlm_err *err);
/* Did the server say notifications/tools/list_changed since the last call? */
bool tool__stdio_take_stale(struct tool__stdio *c);
/* Mark it dead with why (the first reason is kept), kill its process group,
 * wake every waiter. Any thread; the process is reaped by _close. */
void tool__stdio_kill(struct tool__stdio *c, const char *why);
/* Stop and free: gentle closes stdin, waits 2 s, SIGTERM, 1 s, SIGKILL;
 * otherwise SIGKILL at once. Reaps, joins the reader. No post may run. */
void tool__stdio_close(struct tool__stdio *c, bool gentle);

/* ---- servers and their tools (server.c) ---- */

enum tool__kind { TOOL__STDIO, TOOL__HTTP, TOOL__HOST };

struct tool__tool {
	char *name;		   /* the tool's own name */
	char *title;		   /* NULL when none */
	char *description;	   /* never NULL */
	struct cJSON *input;	   /* input schema, an object */
	struct cJSON *output;	   /* output schema or NULL */
	struct cJSON *annotations; /* or NULL */
	bool read_only;		   /* annotations.readOnlyHint, or as registered */
	tool_host_fn *fn;	   /* host tools */
	void *arg;
};

/* A connection to a started MCP server; under its server's mu. */
struct tool__conn {
	int refs;		   /* the server's + one per request */
	struct tool__stdio *stdio; /* one of the two */
	struct tool__http *http;
	int64_t next_id;  /* atomic */
	const char *name; /* the server's, for the log */
	bool verbose;	  /* log HTTP messages */
};

struct tool__server {
	char *name;
	char *description; /* the config's, or NULL */
	enum tool__kind kind;
	char **argv; /* stdio: command and args, NULL-terminated */
	char **env;  /* stdio: "K=V" from the config */
	size_t n_env;
	char *cwd;
	char *url;	/* http */
	char **headers; /* http: "Name: value" */
	size_t n_headers;

	pthread_mutex_t mu;	 /* guards everything below */
	pthread_cond_t cv;	 /* a start ended */
	struct tool__conn *conn; /* NULL: not up */
	bool starting;
	int starts;	/* starts begun, at most TOOL__MAX_STARTS */
	int timeouts;	/* calls in a row that ran out of the caller's time
			 * (cancelled, the server kept); at TOOL__MAX_TIMEOUTS
			 * it is taken for hung and killed */
	int gen;	/* starts ended */
	char *error;	/* why the last start or request broke it */
	int error_code; /* and its code, from a start */
	char *info;	/* serverInfo and instructions, for servers_json */
	struct tool__tool *tools;
	size_t n_tools;
};

struct tool_set {
	pthread_mutex_t mu; /* guards the list */
	struct tool__server **servers;
	size_t n;
	int64_t start_ns, call_ns;
	bool verbose;
};

struct tool__server *tool__server_new(const char *name, enum tool__kind kind);
void tool__server_free(struct tool__server *s);
/* The server up with a fresh catalogue: started when it is not (waiting for
 * a start another thread began), its tools read again when it said they
 * changed. Host servers are always up. 0, or RLM_EIO / RLM_ETIMEOUT
 * naming it and why. */
int tool__server_ensure(struct tool_set *ts, struct tool__server *s, struct rlm_err *err);
/* tools/call of tool (its arguments already checked); *result as in
 * tool_set_call. A transport failure takes the server down (killed, to be
 * restarted on the next request). */
int tool__server_call(struct tool_set *ts, struct tool__server *s, const char *tool,
		      const struct cJSON *args, int64_t deadline_ns, struct cJSON **result,
		      struct rlm_err *err);
/* Stop the server's process, gently (for tool_set_free). */
void tool__server_stop(struct tool__server *s);
/* The tool named name among s->tools (s->mu held), or NULL. */
struct tool__tool *tool__server_find(struct tool__server *s, const char *name);
void tool__tool_release(struct tool__tool *t);
/* A tools/call result as the value model code gets (see tool_set_call);
 * isError gives RLM_EIO with its text. */
int tool__result_value(const struct cJSON *result, const char *who, struct cJSON **out,
		       struct rlm_err *err);
/* v cut to TOOL_MAX_RESULT bytes when longer, with a note; consumes v. */
struct cJSON *tool__result_cut(struct cJSON *v);

/* ---- config (config.c) ---- */

/* The servers of a config text, not added anywhere: *out (n of them) is
 * the caller's (tool__server_free each, then free). */
int tool__config_parse(const char *json, size_t len, const char *origin, struct tool__server ***out,
		       size_t *n, struct rlm_err *err);
/* Does name match [A-Za-z0-9_-]{1,64}? */
bool tool__server_name_ok(const char *name);

#endif
