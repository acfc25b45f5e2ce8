/* SPDX-License-Identifier: MIT */
/* serve/service.h -- what `rlm serve` and `rlm mcp` share: one pool, models
 * and store, a registry of loaded corpora, and a registry of solves that
 * run on threads of their own, can be watched (their events, replayed
 * then live), waited for and cancelled.
 *
 * DESIGN
 * A service is made once at start from a model configuration and solve
 * options (the command line's) and lives until the server stops. Each solve is a
 * struct svc_run: rlm_solve on a detached thread with the service's
 * rlm_opts (the request's options over them), its own cancel flag, and an
 * event log (every rlm_event and progress, in order, as JSON objects) that
 * watchers read from any position and wait on, so an SSE stream of a
 * finished run replays it and a live one follows it. Runs are reference
 * counted: the registry holds one until the service is freed (a finished
 * run stays answerable; past the newest 1,000 finished runs, or past
 * keep_runs_bytes held by the runs in memory, the oldest finished ones
 * leave memory, and the store answers for them: serve_run_record), each
 * caller that looks one up holds one. A run's answer is capped by
 * rlm_opts.max_answer and its event log by SVC_EV_BYTES_MAX (service.c),
 * so a run holds a bounded amount whatever its model code does. At most
 * max_solves run at once; serve_solve refuses more (SVC_EBUSY) rather than
 * queueing, so the door can answer 429; once the service is closing it
 * refuses every solve (SVC_ECLOSING: 503).
 *
 * Corpora are loaded once (corpus_load, or from text or documents given
 * in the request), deduplicated by a digest of their content, and
 * reference counted: a run holds its corpus until it ends, a request the
 * one it loaded until its solve has started. A registered corpus
 * (SVC_CORPUS_KEEP: POST /v1/corpora, load_corpus) stays until
 * serve_corpus_delete; any other, once no one holds it, stays in a cache of
 * corpus_cache bytes, the least recently used leaving first, so inline
 * contexts sent again are not loaded twice and memory stays bounded. A
 * path must lie under one of the service's roots, or it is refused
 * (SVC_EFORBIDDEN). Each root is opened once at start (O_PATH); a path is
 * matched to a root by name only (made absolute, on whole components,
 * against the root's real path or its name as given), and what lies
 * beneath is resolved by the kernel beneath the root's descriptor with no
 * symbolic link followed and no ".." out of it (corpus_load_at), then
 * read only through the descriptors so opened: nothing is checked by name
 * and opened by name again, so swapping a file or folder for a link at
 * any moment cannot make the service read outside its roots.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef RLM_SERVICE_H
#define RLM_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../corpus/corpus.h"
#include "../rlm/rlm.h"

struct cJSON;
struct store;

#define SVC_EBUSY      (-2001) /* max_solves are running */
#define SVC_EFORBIDDEN (-2002) /* a path outside the roots */
#define SVC_ECLOSING   (-2003) /* the service is shutting down */
#define SVC_ESESSBUSY  (-2004) /* the session is answering a question */

struct svc_cfg {
	struct rlm_models_cfg mo;    /* the pool and models (rlm_models_init) */
	struct rlm_opts base;        /* solve options from the command line
				      * (strategy, max_depth, limits, sandbox,
				      * python, ...); pool, models, store and
				      * callbacks are the service's */
	const char *cache_path;      /* the store; NULL: the default */
	bool no_cache;               /* no store at all */
	const char *const *roots;    /* directories context paths may name;
				      * NULL-terminated; NULL or empty: none.
				      * Each is opened at serve_new: what is
				      * served is the directory it named then */
	int max_solves;              /* running at once; 0: 4 */
	int keep_runs;               /* finished runs kept in memory (the
				      * store answers for older ones); 0: 1000 */
	size_t keep_runs_bytes;      /* bytes the runs in memory may hold
				      * (their event logs, answers, results),
				      * running ones included: past it the
				      * oldest finished runs leave first; 0:
				      * SVC_KEEP_RUNS_BYTES */
	size_t corpus_cache;         /* bytes of unused unregistered corpora
				      * kept (SVC_CORPUS_CACHE is a sane
				      * default); 0: none */
	double session_idle_s;       /* a session unused this long is ended;
				      * 0: SVC_SESSION_IDLE_S */
	int max_sessions;            /* live at once; 0: SVC_MAX_SESSIONS */
	size_t max_session_memory;   /* the sessions' workers' resident memory,
				      * summed; 0: SVC_SESSION_MEMORY */
};

#define SVC_CORPUS_CACHE    ((size_t)256 << 20)
#define SVC_KEEP_RUNS_BYTES ((size_t)256 << 20)
#define SVC_SESSION_IDLE_S  900.0
#define SVC_MAX_SESSIONS    32
#define SVC_SESSION_MEMORY  ((size_t)4 << 30)

struct service;
struct svc_run;
struct svc_corp;

/* Set up the pool, the models and the store. Returns 0 or a negative code
 * with err (RLM_EINVAL for a bad configuration). */
int serve_new(const struct svc_cfg *cfg, struct service **out, struct rlm_err *err);
/* Refuse new solves from now on (SVC_ECLOSING); the running ones go on. */
void serve_close(struct service *s);
/* True when no solve runs (every solve's thread has ended). */
bool serve_idle(struct service *s);
/* Refuse new solves (SVC_ECLOSING), let the running ones finish for up to
 * grace_ns, then cancel the rest and wait until they have ended (their
 * runs stay in the store, resumable). Returns how many were cancelled.
 * Waiting callers (serve_run_wait, serve_run_event) see the ends. */
int serve_shutdown(struct service *s, int64_t grace_ns);
/* Cancel every running solve, wait for them, free everything. */
void serve_free(struct service *s);
/* The root and sub-model names (for /v1/models and option checks). */
const char *serve_model_name(const struct service *s);
const char *serve_sub_model_name(const struct service *s);
/* Counters for /metrics and /healthz, a JSON object:
 * {"solves_running", "solves_total": {"done", "stopped", "failed",
 *  "cancelled"}, "model_calls", "cache_hits", "input_tokens",
 *  "output_tokens", "cost_usd", "solve_seconds_buckets": [[le, count],
 *  ...] (cumulative over the service's life, the last le null for +Inf),
 *  "solve_seconds_sum", "solve_seconds_count", "corpora": {"registered",
 *  "in_use", "cached", and each with "_bytes"}, "runs_kept": finished runs
 *  held in memory, "runs_kept_bytes": what every run in memory holds,
 *  running ones too (keep_runs_bytes bounds it), "sessions": {"live",
 *  "opened", "closed", "expired", "evicted", "questions", "memory_bytes"}} */
struct cJSON *serve_stats(struct service *s);

/* ---- corpora ---- */

struct svc_corpus_info {
	char id[24];                 /* "c-" and 16 hex digits */
	const char *kind;            /* "text", "dir", "jsonl" */
	size_t documents, bytes;
	int64_t tokens_estimate;
	bool registered;             /* kept until deleted; else cached */
	int in_use;                  /* runs and requests holding it */
	struct svc_corp *hold;       /* with SVC_CORPUS_HOLD: the caller's
				      * hold, for serve_solve and serve_corpus_put;
				      * else NULL */
};

/* How a corpus is taken (flags of the three calls below). */
#define SVC_CORPUS_KEEP 1u /* register it: kept until serve_corpus_delete */
#define SVC_CORPUS_HOLD 2u /* the caller holds it (info.hold: neither
			    * evicted nor freed) until serve_corpus_put */

/* Load path (under a root; kind as corpus_opts.kind) once. Returns 0 with
 * info; SVC_EFORBIDDEN when path lies under no root, when ".." leads out
 * of its root, or when it crosses a symbolic link ("path '...' crosses a
 * symlink; not followed under --root"); or what corpus_load_at returns
 * (-ENOENT for a path missing under a root), with err. */
int serve_corpus_load(struct service *s, const char *path, enum corpus_kind kind, unsigned flags,
		    struct svc_corpus_info *info, struct rlm_err *err);
/* A corpus of one text, or of documents (docs != NULL: n of them). */
int serve_corpus_text(struct service *s, const char *text, size_t len, const char *const *docs,
		    const size_t *lens, size_t n, unsigned flags, struct svc_corpus_info *info,
		    struct rlm_err *err);
/* A corpus of the JSON text text[0..len) (corpus_from_json: its value is
 * the REPL's `context`; an array of objects is a document per element).
 * Returns 0 with info, or RLM_EPARSE (not JSON) / RLM_EINVAL with err. */
int serve_corpus_json(struct service *s, const char *text, size_t len, unsigned flags,
		      struct svc_corpus_info *info, struct rlm_err *err);
/* A context given as a JSON value v (a request's "context"): a string is
 * a text, a non-empty array of strings documents, anything else a JSON
 * corpus of its value (serve_corpus_json). Same returns. */
struct cJSON;
int serve_corpus_value(struct service *s, const struct cJSON *v, unsigned flags,
		       struct svc_corpus_info *info, struct rlm_err *err);
/* Look one up (flags: SVC_CORPUS_HOLD or 0): 0 with info, RLM_ENOTFOUND. */
int serve_corpus_get(struct service *s, const char *id, unsigned flags,
		   struct svc_corpus_info *info);
/* Drop a hold taken with SVC_CORPUS_HOLD (NULL: none). */
void serve_corpus_put(struct service *s, struct svc_corp *hold);
/* Take corpus id out of the registry: 0 with info (its in_use: the runs
 * still reading it, which keep it until they end), or RLM_ENOTFOUND. */
int serve_corpus_delete(struct service *s, const char *id, struct svc_corpus_info *info);

/* ---- solves ---- */

/* A request's options over the service's; zero/NULL fields keep the
 * service's. */
struct svc_opts {
	const char *model;           /* must be the root or the sub-model's name */
	const char *sub_model;
	int strategy;                /* -1: the service's; RLM_REPL, RLM_TREE */
	int max_depth, max_iterations;
	int64_t max_tokens, max_calls, max_sub_calls;
	double max_cost;
	double timeout_s;            /* the solve's wall clock */
	double compaction_threshold; /* 0: the service's; else in (0, 1] */
	int compaction;              /* -1: the service's; 0: off; 1: on */
	const char *schema_json;     /* a JSON Schema the answer must be valid
				      * under (rlm_opts.schema_json; copied by
				      * serve_solve, which checks it first), or
				      * NULL: a text answer */
};
void serve_opts_init(struct svc_opts *o); /* all "keep the service's" */

/* Would a solve be refused now (max_solves running, or shutting down)?
 * Returns 0, or SVC_EBUSY or SVC_ECLOSING with err saying why: a door
 * checks before it loads a context the solve would not use. serve_solve
 * checks again. */
int serve_can_start(struct service *s, struct rlm_err *err);
/* Start a solve of question over corpus (a hold from svc_corpus_*; the run
 * takes a hold of its own, the caller still drops its one) on a thread of
 * its own. Returns 0 with *run (a reference the caller drops with
 * serve_run_put), SVC_EBUSY, SVC_ECLOSING, RLM_EINVAL (a model that is not
 * the service's; a schema that is not valid JSON Schema: serve_solve has a
 * worker check it first, once per schema the service has seen), with
 * err. */
int serve_solve(struct service *s, const char *question, struct svc_corp *corpus,
	      const struct svc_opts *o, struct svc_run **run, struct rlm_err *err);
/* A run by id (this service's), with a reference; NULL when unknown. */
struct svc_run *serve_run_get(struct service *s, const char *id);
void serve_run_put(struct svc_run *r);
/* Its id: the store's run id when there is a store (serve_solve waits for
 * rlm_opts.on_run before it returns), else "r-" and 16 hex digits. Valid
 * while the reference is held. */
const char *serve_run_id(const struct svc_run *r);
/* Wait until it ended or deadline_ns (time_now_ns clock; 0: forever) passed.
 * Returns true when it ended: its status, its end event and the
 * registry (runs kept, evicted) all say so by then. */
bool serve_run_wait(struct svc_run *r, int64_t deadline_ns);
/* Cancel it (its whole tree stops). false when it had ended already. */
bool serve_run_cancel(struct svc_run *r);
/* Its state as JSON: {"run_id", "status": "running|done|stopped|failed|
 * cancelled", "question", "answer", "answer_truncated" (the answer was
 * cut to max_answer bytes; then "answer_bytes": its length before),
 * "stop", "usage", "cost" (USD; also as "cost_usd"), "timings", "result"}
 * (result: rlm_result_json, when ended). A solve with a schema also has
 * "structured": true and "answer_json": whether its answer validated (then
 * "answer" is that JSON value, not a string, and "answer_text" the compact
 * JSON text that validated, digit for digit). */
struct cJSON *serve_run_json(struct svc_run *r);
/* The event at position pos (0-based) of its log, as a new JSON object
 * {"kind", "node", "depth", "iteration", "text", "t_ms", ...} ("progress"
 * events carry phase, done, total; the last is {"kind": "end", "result":
 * ...}); waits until it exists or deadline_ns passed. NULL when there is
 * none yet at the deadline, or the log ended before pos (*ended set). */
struct cJSON *serve_run_event(struct svc_run *r, size_t pos, int64_t deadline_ns, bool *ended);
/* A run as the store recorded it (store_run_load: with "events"), asked
 * by its whole id: for runs this service did not start or no longer
 * holds. NULL with err (RLM_ENOTFOUND, or RLM_ESTORE) otherwise. The
 * caller owns the result. */
struct cJSON *serve_run_record(struct service *s, const char *id, struct rlm_err *err);

/* ---- sessions ----
 * A session (rlm/rlm.h: rlm_session_*) keeps one REPL worker and its
 * conversation across questions. Each question is a run like any other
 * (serve_run_*: its events, wait, cancel), of the session's options with
 * the question's limits over them. One question at a time: another while
 * one runs is refused (SVC_ESESSBUSY), never queued. A session unused for
 * session_idle_s is ended (its worker killed); past max_sessions, opening
 * one ends the least recently used idle one (SVC_EBUSY when every one is
 * busy); past max_session_memory (the workers' resident memory, summed),
 * the least recently used idle ones are ended. A session that ended is
 * remembered for a while, so that asking for it says why (expired,
 * closed, evicted) rather than that it never was. */

#define SVC_SESSION_ID 24 /* "s-" and 16 hex digits, and a NUL */

/* Open a session over corpus k (a hold: the session takes one of its own)
 * with the request's options q (NULL: the service's); origin names who
 * opened it ("api", "chat", "mcp"). Returns 0 with id, SVC_EBUSY (every
 * live session busy at max_sessions), SVC_ECLOSING, RLM_EINVAL (a model
 * not the service's; the tree strategy) with err. */
int serve_session_open(struct service *s, struct svc_corp *k, const struct svc_opts *q,
		       const char *origin, char id[SVC_SESSION_ID], struct rlm_err *err);
/* Add corpus k (a hold, as above) to session id as context_N (*n). 0,
 * RLM_ENOTFOUND (err says when it ended and why), SVC_ESESSBUSY, or the
 * worker's error. */
int serve_session_add_context(struct service *s, const char *id, struct svc_corp *k, int *n,
			      struct rlm_err *err);
/* Ask question in session id: serve_solve's contract (*run a reference),
 * plus RLM_ENOTFOUND and SVC_ESESSBUSY. q's model and strategy must be
 * the session's (NULL fields: they are); its limits apply to this
 * question. conv (NULL: none): the digest of the conversation up to the
 * question (the chat door's); when the question is answered, the
 * session's key becomes serve_session_turn_key(conv, answer). */
int serve_session_solve(struct service *s, const char *id, const char *question,
			const struct svc_opts *q, const char *conv, struct svc_run **run,
			struct rlm_err *err);
/* Forget session id's conversation and history and kill its worker (the
 * next question starts afresh; its contexts stay): rlm_session_reset. 0,
 * RLM_ENOTFOUND or SVC_ESESSBUSY with err. */
int serve_session_reset(struct service *s, const char *id, struct rlm_err *err);
/* End session id now (a question running in it is cancelled; its worker
 * goes when that run ends). 0 or RLM_ENOTFOUND with err. */
int serve_session_close(struct service *s, const char *id, struct rlm_err *err);
/* {"id", "origin", "status": "idle|busy", "run_id" (busy), "questions",
 * "contexts", "pid", "rss_bytes", "restarts", "conversation_bytes",
 * "compactions", "created" (unix s), "idle_ms", "expires_in_ms",
 * "corpus_ids" (context, context_1, ...), "variables", "history"
 * (with_history)} of session id; NULL with err
 * (RLM_ENOTFOUND: why) when it is not live. The caller owns it. */
struct cJSON *serve_session_json(struct service *s, const char *id, bool with_history,
				 struct rlm_err *err);
/* {"object": "list", "sessions": [serve_session_json without history]} */
struct cJSON *serve_sessions_json(struct service *s);
/* The session of run r ("" when none). Valid while the reference is held. */
const char *serve_run_session(const struct svc_run *r);
/* Conversations (the chat door): key is a digest of a conversation so far;
 * find the live session whose conversation it is (0 with id, or
 * RLM_ENOTFOUND), or make key session id's. */
int serve_session_find(struct service *s, const char *key, char id[SVC_SESSION_ID]);
void serve_session_set_key(struct service *s, const char *id, const char *key);
/* The key of a conversation conv (a digest) followed by answer: 32 hex
 * digits. */
void serve_session_turn_key(const char *conv, const char *answer, char out[33]);
/* Can the service open sessions (its strategy is repl)? */
bool serve_sessions_available(const struct service *s);

/* The skills of the service's store (GET /v1/skills). ref NULL: the list
 * {"object":"list","skills":[...]} of each name's latest version without
 * its source (store_skill_json), retired names only with all; a service
 * without a store lists none. ref "NAME" or "NAME@V": that version as
 * store_skill_show gives it, source and versions included. NULL with err:
 * RLM_ENOTFOUND (no such skill, a retired bare name, or no store),
 * RLM_EINVAL (a bad name), RLM_ESTORE. The caller owns the result. Any
 * thread. */
struct cJSON *serve_skills(struct service *s, const char *ref, bool all, struct rlm_err *err);

#endif
