/* SPDX-License-Identifier: MIT */
/* tool/tool_int.h -- what the files of tool/ share: the edit distance of
 * suggestions, and the streamable HTTP transport (tool/http.c) the server
 * code (tool/server.c) drives. */
#ifndef RLM_TOOL_INT_H
#define RLM_TOOL_INT_H

#include "tool.h"

/* Levenshtein distance of a and b, ASCII case folded, each cut to 128
 * bytes: the closest names a refusal suggests (tool/schema.c). */
size_t tool__edit_distance(const char *a, const char *b);

/* One MCP server over streamable HTTP (revision 2025-03-26 and later):
 * every client message is a POST of one JSON-RPC message to url, with
 * "Accept: application/json, text/event-stream" and "Content-Type:
 * application/json", the headers given, "Mcp-Session-Id" once the server
 * has given one (in the initialize response) and "MCP-Protocol-Version"
 * once set. */
struct tool__http;

/* headers: n "Name: value" strings (copied). Connects nothing yet. */
int tool__http_open(const char *url, const char *const *headers, size_t n, struct tool__http **out,
		    struct rlm_err *err);
/* The negotiated revision, sent from now on as MCP-Protocol-Version. */
void tool__http_set_version(struct tool__http *h, const char *version);
/* POST body (one JSON-RPC message). A request (id >= 0): wait until
 * deadline_ns for the response with that id, sent as the JSON body or as
 * an event of a text/event-stream body (other events before it, the
 * server's notifications and requests, are skipped; a request of the
 * server is answered with a JSON-RPC error -32601, or {} for "ping"), and
 * set *reply to its JSON text (malloc'd). A notification or response (id
 * < 0): 202 or 200 is success and *reply is NULL. Errors: RLM_ETIMEOUT,
 * RLM_EIO (connection, an HTTP status other than 200/202 -- naming it and
 * the start of the body -- a body over TOOL_MAX_REPLY, a stream that ends
 * without the response; a 404 once a session was given says the session
 * expired). Any thread; several at once on one h. */
int tool__http_post(struct tool__http *h, const char *body, size_t len, int64_t id,
		    int64_t deadline_ns, char **reply, struct rlm_err *err);
/* DELETE the session when the server gave one (errors ignored), free. */
void tool__http_close(struct tool__http *h);

#endif
