/* SPDX-License-Identifier: MIT */
/* tool/tool.h -- host tools for model code: MCP servers rlm starts and
 * talks to as a client (stdio or streamable HTTP), tools an embedding
 * program registers (C callbacks), and what model code finds them with:
 * the list of servers, a lexical search over names and descriptions, one
 * tool's exact schema, calls whose arguments are checked against that
 * schema first, and the policy of which tools may be called at all.
 *
 * A tool is named "SERVER.TOOL" (the server's name in the config, a dot,
 * the tool's own name as the server lists it). Tools an embedder registers
 * belong to the server "host" unless their name gives one.
 *
 * Servers start lazily: on the first discovery or call that needs them
 * (tool_set_servers_json starts every server; the others start the ones
 * they name, or all when they name none). A started server stays up until
 * tool_set_free. A server that fails to start, dies, stops reading or
 * answers garbage makes that request fail with an error that says so (and
 * is started again on the next request that needs it, at most 3 times in
 * all); it never takes the caller down. A call past its deadline fails
 * with RLM_ETIMEOUT and is cancelled (notifications/cancelled), the server
 * kept; 3 such in a row and the server is taken for hung and killed.
 *
 * Threads: every function may be called from any thread, several at once
 * (calls to one stdio server are multiplexed by JSON-RPC id over its pipe).
 */
#ifndef RLM_TOOL_H
#define RLM_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/common.h"

struct cJSON;
struct tool_set;

/* Defaults. */
#define TOOL_DEF_START_TIMEOUT_NS (30 * (int64_t)1000000000) /* spawn + initialize + tools/list */
#define TOOL_DEF_CALL_TIMEOUT_NS  (60 * (int64_t)1000000000) /* one tools/call */
#define TOOL_MAX_REPLY		  (16u << 20) /* bytes of one message from a server */
#define TOOL_MAX_RESULT		  (1u << 20)  /* bytes of a result handed to model code:
					       * a longer one is cut, and says so */

/* A tool an embedding program offers (tool_set_register). args_json is the
 * arguments object, already checked against the tool's input schema. On
 * success set *out to a malloc'd JSON text (any JSON value: an object is the
 * structured result, a string is text) and return 0; on failure set *out to
 * a malloc'd message (plain text, not JSON) and return -1. Called from any
 * thread, several at once. */
typedef int tool_host_fn(void *arg, const char *args_json, char **out);

struct tool_set *tool_set_new(void);
/* Stop every server (stdio: close its stdin, wait up to 2 s, SIGTERM, 1 s,
 * SIGKILL; reap it. HTTP: DELETE the session when it had one) and free. NULL
 * is a no-op. */
void tool_set_free(struct tool_set *ts);

/* Add the servers of an MCP client config, the format other MCP clients
 * read (${NAME} and ${NAME:-default} in command, args, cwd, url and the
 * values of env and headers are replaced by the environment's NAME when
 * read; "disabled": true leaves a server out):
 *   {"mcpServers": {"NAME": {"command": "...", "args": ["..."],
 *                            "env": {"K": "V"}, "cwd": "...",
 *                            "description": "..."},
 *                   "NAME2": {"url": "http://...", "headers": {"K": "V"},
 *                             "description": "..."}}}
 * ("type": "stdio" | "http" | "streamable-http" is accepted and checked
 * against the members; "sse" is refused by name). NAME must match
 * [A-Za-z0-9_-]{1,64}. Nothing is started. Returns 0, or RLM_EINVAL /
 * RLM_EPARSE / RLM_EIO with err naming the file, the server and the member
 * that is wrong. A name given twice (in one file or across files) is an
 * error. */
int tool_set_load_config(struct tool_set *ts, const char *path, struct rlm_err *err);
/* The same from a JSON text; origin names it in errors ("--mcp-config"). */
int tool_set_add_config(struct tool_set *ts, const char *json, size_t len, const char *origin,
			struct rlm_err *err);

/* Offer a C function as a tool. name is "TOOL" (server "host") or
 * "SERVER.TOOL"; input_schema_json a JSON Schema object (NULL: no
 * arguments); read_only says it changes nothing (the default policy calls
 * only read-only tools). Returns 0, or RLM_EINVAL (bad name, a name taken,
 * a schema that is not an object). */
int tool_set_register(struct tool_set *ts, const char *name, const char *description,
		      const char *input_schema_json, bool read_only, tool_host_fn *fn, void *arg,
		      struct rlm_err *err);

/* Timeouts (0: the defaults above). */
void tool_set_timeouts(struct tool_set *ts, int64_t start_ns, int64_t call_ns);
/* Log each message sent and received (rlm_log LOG_INFO, cut). */
void tool_set_verbose(struct tool_set *ts, bool on);

/* Servers configured or registered (none started). */
size_t tool_set_n_servers(const struct tool_set *ts);
/* Their names, in order, as a JSON array (none started); the caller owns
 * it. */
struct cJSON *tool_set_server_names_json(const struct tool_set *ts);
/* What makes the set these tools, as a JSON array, one object per server
 * in order: its name and how it is reached (command, args, env, cwd; url,
 * headers), and for the host server its tools (name, description, input
 * schema, read-only). For a key (the memo's): it holds env and header
 * values, so hash it, never keep or show it. None started. The caller owns
 * it. */
struct cJSON *tool_set_identity_json(struct tool_set *ts);

/* ---- discovery: what model code's helpers return (JSON values) ---- */

/* [{"name", "description", "tools": N, "error": null | "why it is not
 * available"}], in config order, host tools last. Starts every server. The
 * description is the config's "description", else the server's
 * serverInfo title (or name) and version, and the first line of its
 * instructions, cut to 300 bytes. The caller owns the result. */
struct cJSON *tool_set_servers_json(struct tool_set *ts);

/* Ranked matches of query among the tools (of server, or all when NULL):
 * [{"name": "SERVER.TOOL", "description": (cut to 300 bytes), "score": S}],
 * best first, at most limit (<= 0: 10; at most 100), only those with a
 * score > 0. A lexical ranking in the controller (tool_rank). A server that
 * cannot start is skipped (servers_json says why). Returns NULL with err
 * set for an unknown server name. */
struct cJSON *tool_set_search_json(struct tool_set *ts, const char *query, const char *server,
				   int limit, struct rlm_err *err);

/* One tool's exact description:
 *   {"name": "SERVER.TOOL", "server", "tool", "title", "description",
 *    "input_schema": {...}, "output_schema": {...} | null,
 *    "parameters": {"required": [{"name", "type", "description"}...],
 *                   "optional": [{"name", "type", "description",
 *                                 "default"?}...]},
 *    "read_only": B, "annotations": {...} | null}
 * Returns NULL with err set (RLM_ENOTFOUND: no such tool, naming the
 * closest names; or why its server is not available). */
struct cJSON *tool_set_info_json(struct tool_set *ts, const char *name, struct rlm_err *err);

/* The tool name stands for (a bare "TOOL" is looked up among the host
 * tools, then every server: tool_set_call's rules) as its full
 * "SERVER.TOOL" into *full (malloc'd), and whether it is read-only (readOnlyHint, or as registered): what
 * the policy must judge, whatever spelling the caller used. Returns 0, or
 * RLM_ENOTFOUND (err set). */
int tool_set_resolve(struct tool_set *ts, const char *name, char **full, bool *read_only,
		     struct rlm_err *err);

/* Call a tool: args (an object, or NULL for {}) is checked against the
 * tool's input schema first (tool_schema_check): a bad or missing
 * parameter fails with RLM_EINVAL and a message naming it and what the
 * schema expects, and the server sees nothing. Then tools/call (or the host
 * function), answered by deadline_ns (time_now_ns clock; 0: the call
 * timeout from now). On success *result is the result as a JSON value:
 * structuredContent when the server gave it, else the text of its content
 * (text items joined with "\n"; other items as their JSON), cut to
 * TOOL_MAX_RESULT. A result with isError true fails with RLM_EIO and its
 * text as the message. Other failures: RLM_ENOTFOUND (no such tool),
 * RLM_ETIMEOUT, RLM_EIO (the server died, answered garbage, a JSON-RPC
 * error: its message). The caller owns *result. The policy is not checked
 * here (tool_policy_allows). */
int tool_set_call(struct tool_set *ts, const char *name, const struct cJSON *args,
		  int64_t deadline_ns, struct cJSON **result, struct rlm_err *err);

/* ---- pure pieces (also for tests and fuzz targets) ---- */

/* Check args against a JSON Schema, the subset tools use: type (one or a
 * list; "integer" a whole number), properties, required,
 * additionalProperties (false or a schema), enum, const, items, minItems,
 * maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
 * minLength, maxLength, anyOf/oneOf (as "any of"), nullable; $ref, format
 * and pattern are not checked. Returns 0 when it holds; else -1 with msg
 * (at most cap bytes, NUL-terminated) naming the first problem and what the
 * schema expects, e.g. "unknown parameter 'x' (the parameters are: a
 * (number, required), b (number, required)); did you mean 'a'?" or
 * "parameter 'b' is required (number: Second number)" or "parameter
 * 'a' must be a number, not a string". */
int tool_schema_check(const struct cJSON *schema, const struct cJSON *args, char *msg, size_t cap);

/* schema's parameters as {"required": [...], "optional": [...]} (as in
 * tool_set_info_json). The caller owns the result. */
struct cJSON *tool_schema_params(const struct cJSON *schema);

/* How well a tool matches a query, lexically: the query's words (split on
 * anything not a letter or digit, so "-" and "_" split too; lower-cased;
 * common English stop words dropped; a plural "s" folded) against the
 * words of the tool's name (weighted 3) and of its description (weighted
 * 1), a word that is a prefix of another (4+ letters) counting half, and a
 * bonus when every query word is matched, and one for the share of the
 * tool's own name (after "SERVER.") the query covers. camelCase splits
 * too ("readFile"). 0: no word matches. */
double tool_rank(const char *query, const char *name, const char *description);

/* ---- policy ---- */

/* Which tools model code may call: --allow-tools and --deny-tools, each a
 * comma-separated list of patterns "SERVER.TOOL", "SERVER.*", "*" (a "*"
 * matches any run of characters, nothing else is special). A tool is
 * callable when a deny pattern does not match it and either an allow
 * pattern does or it is read-only. */
struct tool_policy {
	char **allow;   /* owned, n_allow patterns */
	size_t n_allow;
	char **deny;
	size_t n_deny;
};
/* Parse the two lists (either may be NULL). Returns 0 or RLM_EINVAL naming
 * a bad pattern (empty, blanks inside, a character outside
 * [A-Za-z0-9_.*-]). */
int tool_policy_parse(struct tool_policy *p, const char *allow, const char *deny,
		      struct rlm_err *err);
void tool_policy_release(struct tool_policy *p);
/* Whether name may be called; when not, why (at most cap bytes): "denied
 * by --deny-tools 'fs.*'" or "not read-only (its annotations do not say
 * readOnlyHint); allow it with --allow-tools fs.write_file". */
bool tool_policy_allows(const struct tool_policy *p, const char *name, bool read_only, char *why,
			size_t cap);
/* Does the glob pattern match name ("*" any run of characters). */
bool tool_glob_match(const char *pattern, const char *name);

#endif
