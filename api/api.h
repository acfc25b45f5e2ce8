/* SPDX-License-Identifier: MIT */
/* api/api.h -- librlm for other languages: JSON in, JSON out, plain C
 * callbacks. What the Python package crlm (python/, docs/python.md) calls
 * through ctypes; any FFI can, since nothing here needs a struct layout.
 *
 * Strings: UTF-8, NUL-terminated. Every string this API returns is
 * malloc'd: free it with rlm_api_free. A function that fails returns NULL
 * (or a negative code) and, when err is not NULL, sets *err to a fresh
 * message (rlm_api_free it) that names the problem: "config: 'timeout'
 * must be a number", "context: not valid JSON at byte 17".
 *
 * Threads: a client may be used by many threads at once (its solves share
 * its pool, store and tools); a session by one thread at a time. Callbacks
 * (events, host tools) run on the controller's threads (the solving
 * thread, pool threads, child RLMs' threads); the events of one solve come
 * one at a time; host tools of one solve may run concurrently (a batch of
 * tool calls). A callback must not call into the solve it belongs to.
 *
 * The simulator ("sim", sim/sim.h) is registered by rlm_api_new, so a
 * client can run with no network and no key.
 */
#ifndef RLM_API_H
#define RLM_API_H

#include <stddef.h>

/* The public API: exported by librlm.so (docs/api.md). */
#pragma GCC visibility push(default)

/* The library's version and commit: "0.22.0 (abc1234)". Static. */
const char *rlm_api_version(void);
/* Free a string (or anything) this API returned. NULL is a no-op. */
void rlm_api_free(void *p);

/* ---- a client: the models, their call pool, an optional store ---- */
struct rlm_api;

/* config: a JSON object, every member optional:
 *   "provider"      "openai", "anthropic" or "sim" (NULL: as rlm_models_init
 *                   infers it from the model and key: the simulator when
 *                   none is given)
 *   "model", "base_url", "api_key", "extra" (an object merged into every
 *                   request body: the reference's sampling_args)
 *   "sub_provider", "sub_model", "sub_base_url", "sub_api_key",
 *   "sub_extra"     the sub-model's, when it differs (rlm_models_cfg)
 *   "sim"           the simulator's spec ("seed=7,ttft=50ms"; sim/sim.h)
 *   "env"           true (default): missing keys and endpoints are read
 *                   from the environment as `rlm solve` reads them
 *                   (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
 *                   ANTHROPIC_BASE_URL, RLM_*)
 *   "concurrency", "timeout" (seconds per attempt), "max_retries",
 *   "max_inflight", "rpm", "tpm", "max_tokens" (output tokens per call),
 *   "temperature", "context_window" (the sub-model's, in tokens),
 *   "prices"        a price file (llm_prices_load)
 *   "cache"         the store: a path, true (RLM_CACHE, else the default
 *                   store of `rlm solve`), or false / absent: none. With
 *                   a store every call is cached, child answers memoised
 *                   and every solve recorded as a run.
 *   "mcp_config"    an MCP client config file (rlm_tools_load_config):
 *                   its servers are host tools of the root and children
 * Returns the client, or NULL with *err. */
struct rlm_api *rlm_api_new(const char *config_json, char **err);
/* Free the client: its sessions must be freed and its solves returned
 * first. NULL is a no-op. */
void rlm_api_close(struct rlm_api *a);

/* ---- host tools: functions of the calling program ---- */
struct rlm_api_reply;
/* A host tool's function: args_json the arguments (an object, checked
 * against the tool's schema); answer with rlm_api_reply or
 * rlm_api_reply_error on r before returning (neither: an error "the tool
 * gave no reply"). Runs on a controller thread. */
typedef void rlm_api_tool_fn(void *arg, const char *args_json, struct rlm_api_reply *r);
/* The tool's result: JSON text (a value: model code gets it as a Python
 * value); text that is not JSON is taken as a string. Copied. */
void rlm_api_reply(struct rlm_api_reply *r, const char *json);
/* The tool failed: model code gets a ToolError with message. Copied. */
void rlm_api_reply_error(struct rlm_api_reply *r, const char *message);

#define RLM_API_ROOT 1u     /* a tool of the root node's code */
#define RLM_API_CHILDREN 2u /* a tool of child RLMs' code */
/* Offer fn as the tool `name` ("NAME": server "host") to the model code of
 * the nodes `where` says (RLM_API_ROOT, RLM_API_CHILDREN or both), with
 * input_schema_json (NULL: an object of any members) and description.
 * Model code finds it through search_tools / get_tool_info and calls it
 * with call_tool (docs/tools.md); it counts as read-only (the caller
 * offered it). Once either set has a tool, the children's set is what was
 * added for RLM_API_CHILDREN: none at all means none for children.
 * Returns 0, or a negative code with *err (a bad or taken name, a bad
 * schema). Before the client's first solve. */
int rlm_api_tool_add(struct rlm_api *a, unsigned where, const char *name,
		     const char *input_schema_json, const char *description, rlm_api_tool_fn *fn,
		     void *arg, char **err);

/* ---- a solve ---- */

/* A job: the cancel flag of one solve, set from any thread. */
struct rlm_api_job;
struct rlm_api_job *rlm_api_job_new(void);
/* Stop the solve as soon as it can (RLM_STOP_CANCEL): async-signal-safe. */
void rlm_api_job_cancel(struct rlm_api_job *j);
void rlm_api_job_free(struct rlm_api_job *j);

/* An event of a solve as JSON: {"kind", "node", "depth", "iteration",
 * "elapsed_ms", "text", "data"} (rlm_event; "data" its data_json parsed,
 * or null). With "detail_events" in the options the kinds "turn",
 * "turn_end", "call", "child" and "child_end" come too. */
typedef void rlm_api_event_fn(void *arg, const char *event_json);

/* The context of a solve or session, ctx[0..len) as kind:
 *   "text"  one document, the text itself (a solve borrows it for the
 *           call, no copy; a session copies it)
 *   "docs"  a JSON array of strings: one document each
 *   "json"  any JSON value (corpus_from_json): an array of objects is one
 *           document per element, with their ids; the worker's `context`
 *           is the value itself
 *   "file"  a path: a file or a directory, loaded as `rlm solve` loads it
 */

/* Answer question over the context. question NULL: the question is the
 * end of the context itself (the reference's completion(prompt) without a
 * root_prompt: RLM_QUESTION_AT_END). opts_json: NULL or an object:
 *   "max_depth", "max_iterations", "max_errors", "max_nodes",
 *   "timeout" (seconds), "max_tokens", "max_cost" (USD), "max_calls",
 *   "max_sub_calls", "exec_timeout" (seconds), "output_limit" (chars),
 *   "max_answer" (bytes), "compaction" (bool, default true),
 *   "compaction_threshold", "system_prompt", "system_extra",
 *   "sub_system_extra", "setup_code", "sub_setup_code", "schema" (an
 *   object: a JSON Schema), "strategy" ("repl", "tree"), "python",
 *   "refresh" (bool), "trajectory" (bool: "turns" in the result),
 *   "detail_events" (bool), "export" (bool: with a store, the run as the
 *   reference's JSONL in "trajectory_jsonl"), "max_tool_calls",
 *   "tool_timeout" (seconds)
 * An unknown member is an error (a typo must not pass silently).
 * job (may be NULL) cancels it; ev (may be NULL) gets its events.
 * Returns JSON text, NULL only with *err for arguments that cannot be used
 * (bad JSON, unknown member, a context that does not load, a bad schema):
 *   {"ok": true|false,           false: the solve failed (error says why)
 *    "error": null | {"code": "RLM_E...", "message": "..."},
 *    "result": rlm_result_json's object (what `rlm solve --json` prints
 *              of the result: answer, found, stop, stop_detail, usage,
 *              calls, timings, children, run, ...),
 *    "usage_by_model": {"MODEL": {"calls", "input_tokens",
 *              "output_tokens", "cost"}}: every call of the solve, any
 *              depth, by the model that made it (cache hits included),
 *    "trajectory_jsonl": with "export" and a store: the run as the
 *              reference's JSONL (store_export_jsonl), else null} */
char *rlm_api_solve(struct rlm_api *a, const char *question, const char *ctx, size_t ctx_len,
		    const char *ctx_kind, const char *opts_json, struct rlm_api_job *job,
		    rlm_api_event_fn *ev, void *ev_arg, char **err);

/* ---- sessions (docs/sessions.md): one REPL across questions ---- */
struct rlm_api_session;

/* Open a session over a context (copied: the caller may free it at once)
 * with the options of its solves (opts_json as rlm_api_solve's). The
 * worker starts with the first question. NULL with *err on failure. */
struct rlm_api_session *rlm_api_session_new(struct rlm_api *a, const char *ctx, size_t ctx_len,
					    const char *ctx_kind, const char *opts_json,
					    char **err);
/* Add a context (copied) as context_N; returns N (>= 1), or a negative
 * code with *err. */
int rlm_api_session_add_context(struct rlm_api_session *s, const char *ctx, size_t ctx_len,
				const char *ctx_kind, char **err);
/* Ask question (NULL: at the end of the newest context) in s:
 * rlm_api_solve's contract for opts_json (NULL: the session's; the
 * limits, callbacks and schema may differ), job, ev and the return. */
char *rlm_api_session_solve(struct rlm_api_session *s, const char *question,
			    const char *opts_json, struct rlm_api_job *job, rlm_api_event_fn *ev,
			    void *ev_arg, char **err);
/* {"questions", "contexts", "pid", "restarts", "rss_bytes",
 *  "conversation_bytes", "compactions", "history": [...]}: a fresh string. */
char *rlm_api_session_info(struct rlm_api_session *s);
/* Forget the conversation and history, kill the worker. */
void rlm_api_session_reset(struct rlm_api_session *s);
/* Kill the worker, free s. NULL is a no-op. */
void rlm_api_session_free(struct rlm_api_session *s);

/* ---- runs in the store ---- */
/* The run id (rlm_result.run_id) as the reference's JSONL trajectory
 * (store_export_jsonl): NULL with *err without a store or such a run. */
char *rlm_api_run_jsonl(struct rlm_api *a, const char *run_id, char **err);

#pragma GCC visibility pop

#endif
