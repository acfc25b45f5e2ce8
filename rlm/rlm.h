/* SPDX-License-Identifier: MIT */
/* rlm/rlm.h -- the controller's C API: solve a question over a context.
 *
 * A solve runs on the caller's thread and uses a call pool and models the
 * caller made (llm/llm.h), so many solves can share one pool, its
 * connections and its limits. The context is a loaded corpus
 * (corpus/corpus.h), borrowed for the duration of the call.
 *
 * Strategies:
 *   repl  (default) the RLM loop: the root model sees metadata about the
 *         context, never its text, and writes Python that a persistent
 *         REPL worker (repl/repl.h) runs with `context` in a variable;
 *         the code calls sub-models (llm_query, llm_query_batched, fanned
 *         out on the pool) and child RLMs (rlm_query, rlm_query_batched:
 *         each a node with its own loop and worker, on a thread of its
 *         own while the solve has a slot), and ends by setting
 *         answer["ready"] = True. See docs/loop.md.
 *   tree  the controller decomposes: the context is cut at natural
 *         boundaries (documents, paragraphs, lines) into parts that fit one
 *         sub-model call; every part is asked the question in parallel; the
 *         partial answers are combined with one more call, level by level
 *         when they are themselves too large for one.
 */
#ifndef RLM_RLM_H
#define RLM_RLM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../llm/llm.h"
#include "../repl/repl.h"
#include "../corpus/corpus.h"
#include "../tool/tool.h"

/* The public API: exported by librlm.so (docs/api.md). */
#pragma GCC visibility push(default)

enum rlm_strategy { RLM_REPL, RLM_TREE };

struct rlm_progress {
	const char *phase;     /* tree: "leaves", "combine"; repl: "root" (a root
				* call is out), "exec" (code runs: done blocks of
				* the turn's total), "sub" (plain sub-calls of one
				* llm_query_batched: done/total), "child" (child
				* RLMs of one rlm_query_batched: done/total),
				* "compact" (the summary call of a compaction) */
	size_t done, total;    /* calls of this phase */
	int level;             /* tree: combine level, 1 = first; repl: iteration */
	int64_t elapsed_ns;
};

typedef void rlm_progress_fn(const struct rlm_progress *p, void *arg);

/* One step of the repl loop, for --verbose and the run record. Strings are
 * borrowed for the duration of the callback. With recursion, events come
 * from every node's thread, one at a time (the solve serialises them). */
struct rlm_event {
	const char *kind;      /* "sandbox" (text: the worker's sandbox status
				* line, once, when the worker is up),
				* "reply" (text: the root model's reply),
				* "code" (text: a block about to run),
				* "output" (text: what the model is shown of it),
				* "notice" (text: a message from the controller to
				* the model: a nudge, a restart, a limit) */
	int iteration;         /* 1-based */
	const char *text;
	size_t len;
	int64_t elapsed_ns;    /* since the solve started */
	int depth;             /* of the node: 0 the root */
	int node;              /* 0 the root; children numbered from 1 in the
				* order they start, across the whole solve */
	const char *data_json; /* with rlm_opts.detail_events, for "turn" (a
				* root turn begins, before its call: {"iteration"}),
				* "turn_end" (it ended, its blocks run:
				* {"iteration", "ms"}; the two go to the callback
				* only, neither recorded nor kept in the
				* trajectory), "call" (a
				* model call completed: key, role, cached, ok,
				* usage, cost, ms, prompt_chars; a sub-call's
				* model, prompt and response or error, cut as
				* docs/store.md says), "child" (node starts:
				* text its question; model) and "child_end"
				* (text its answer; stop, memo, calls, cost,
				* usage, model, ms, and error: null when it
				* answered, else why it did not); for
				* "output" of code that raised, always:
				* error_at, the byte of text where its error
				* begins. A JSON object; NULL otherwise */
};

typedef void rlm_event_fn(const struct rlm_event *e, void *arg);

/* Why a repl solve stopped. */
enum rlm_stop {
	RLM_STOP_ANSWER,        /* answer["ready"] or FINAL: a real answer */
	RLM_STOP_ITERATIONS,    /* max_iterations, then one last call */
	RLM_STOP_ERRORS,        /* max_errors consecutive error turns */
	RLM_STOP_TIMEOUT,       /* the solve's wall-clock limit */
	RLM_STOP_TOKENS,        /* token budget */
	RLM_STOP_COST,          /* cost budget */
	RLM_STOP_CALLS,         /* sub-call budget */
	RLM_STOP_MAX_CALLS,     /* model-call budget (every call, any depth) */
	RLM_STOP_CANCEL,        /* the caller cancelled */
	RLM_STOP_ERROR,         /* a failure: the root model, the worker */
	RLM_STOP_INCOMPLETE,    /* the answer is NONE or blank and something
				 * under the node failed (rlm_result.failures):
				 * "not found" cannot be told from "not read" */
};
const char *rlm_stop_name(enum rlm_stop s); /* "answer", "max_iterations", ... */

/* Defaults of rlm_opts.max_depth and max_nodes (also for what states them). */
#define RLM_DEF_MAX_DEPTH 2
#define RLM_DEF_MAX_NODES 8
/* Default of rlm_opts.max_answer: bytes of an answer a node keeps. */
#define RLM_DEF_MAX_ANSWER ((size_t)4 << 20)

struct cJSON;
struct rlm_record; /* rlm/record.c */
struct store;      /* store/store.h */
struct store_key;  /* store/store.h */

struct rlm_opts {
	enum rlm_strategy strategy;
	struct llm_pool *pool;       /* borrowed */
	struct llm_model *model;     /* the root model (combines); borrowed */
	struct llm_model *sub_model; /* leaf calls; NULL: model */
	struct llm_params params;    /* sampling parameters of every call */
	size_t leaf_chars;           /* max context bytes per leaf call; 0: from
				      * the sub-model's window (half of it, at most
				      * 200,000 bytes) */
	size_t window;               /* calls in flight per solve; 0: 256 */
	const atomic_bool *cancel;   /* optional */

	/* repl strategy */
	int max_iterations;          /* root turns; 0: 30 */
	int max_depth;               /* recursion: a node at depth d (the root
				      * is 0) answers rlm_query with a child RLM
				      * at depth d + 1 when d + 1 < max_depth,
				      * else with one plain sub-model call (as
				      * llm_query); 0: 2; 1: no child ever */
	int max_nodes;               /* child RLMs running at once, in the whole
				      * solve, exactly (1: one at a time), on
				      * threads of their own or their parent's;
				      * past it a child waits for a slot. A
				      * child waiting on children of its own is
				      * not running: it lends its slot to them,
				      * one at a time (so nothing ever waits on
				      * a slot held by a waiting node); 0: 8 */
	int max_errors;              /* consecutive error turns; 0: 5 */
	int64_t timeout_ns;          /* wall clock of the whole solve; 0: none */
	int64_t max_tokens;          /* input + output tokens of all calls; 0: none */
	double max_cost;             /* USD of all calls; 0: none */
	int64_t max_sub_calls;       /* sub-calls (prompts) of the solve, at any
				      * depth (a child RLM is one); 0: none */
	int64_t max_calls;           /* model calls of the solve, at any depth:
				      * every node's root calls and every plain
				      * sub-call (a child RLM is none itself; its
				      * calls count); 0: none */
	size_t output_limit;         /* chars of REPL output shown; 0: 20000 */
	size_t max_answer;           /* bytes of an answer a node keeps (the
				      * root's and each child RLM's, which its
				      * parent's code gets): a longer one is
				      * cut where a UTF-8 sequence ends, and the
				      * result says so (answer_truncated, its
				      * warning, a "notice" event); 0:
				      * RLM_DEF_MAX_ANSWER; SIZE_MAX: no cap */
	int64_t exec_timeout_ns;     /* per exec (worker time); 0: 60 s */
	size_t max_frame;            /* bytes of a frame between a node and its
				      * worker (repl_cfg.max_frame): a batch of
				      * sub-calls over it goes as several frames;
				      * 0: 64 MiB */
	const char *python;          /* NULL: /usr/bin/python3 */
	bool python_fences;          /* also run ```python blocks */
	struct repl_sandbox_cfg sandbox; /* the worker's confinement; zero: every
				      * layer the machine has (repl/repl.h). The
				      * system prompt's sandbox sentence follows
				      * sandbox.unsafe */
	rlm_event_fn *event;         /* optional: each turn's reply, code, output,
				      * of every node, one at a time */
	void *event_arg;
	bool detail_events;          /* event also gets "call", "child",
				      * "child_end", "turn" and "turn_end"
				      * (rlm_event.data_json) */
	bool trajectory;             /* keep every node's turns in its
				      * rlm_result.turns (rlm_result_json prints
				      * them): costs memory, about the size of
				      * the conversations */

	rlm_progress_fn *progress;   /* optional: the root node's; called from
				      * pool threads, the solving thread and
				      * child nodes' threads, never concurrently */
	void *progress_arg;

	/* the store (store/store.h): optional */
	struct store *store;         /* every model call is asked of its cache
				      * first and kept once answered; child
				      * RLMs' answers are memoised; the solve
				      * is recorded as a run with its events */
	bool refresh;                /* with store: ask nothing of the cache
				      * (what is made replaces what was kept) */
	const char *run_note_json;   /* with store: a JSON object kept in the
				      * run's config as "cli" (how it was run:
				      * `rlm solve --resume` reads it back) */
	void (*on_run)(const char *run_id, void *arg); /* optional, with store:
				      * called once the run is recorded, before
				      * anything is solved, with its id ("" when
				      * it could not be recorded) */
	void *on_run_arg;
	const char *resumed_from;    /* with store: the run this one resumes;
				      * NULL: the newest unfinished run of the
				      * same question, context and config, if
				      * any */
	/* host tools and skills (docs/tools.md): optional */
	struct tool_set *tools;      /* borrowed: MCP servers and registered
				      * tools model code may discover and call
				      * (list_tool_servers, search_tools,
				      * get_tool_info, call_tool); children get
				      * the same; NULL: none */
	const struct tool_policy *tool_policy; /* which tools may be called;
				      * NULL: read-only ones only */
	int64_t max_tool_calls;      /* tool calls of the solve, any depth; 0:
				      * none */
	int64_t tool_timeout_ns;     /* one tool call; 0: the tool set's (60 s) */
	struct store *skills;        /* where skills are kept; NULL: store */
	bool allow_skill_writes;     /* save_skill may add versions (off: a
				      * prompt injected through the context
				      * cannot plant code for later runs) */
	/* structured answers (docs/structured.md): optional */
	const char *schema_json;     /* a JSON Schema (an object, as JSON text):
				      * the answer must be a JSON value valid
				      * under it. The worker checks the answer
				      * (answer["content"]: a dict or list, or
				      * JSON text; a FINAL's text) with Debian's
				      * python3-jsonschema when it is made
				      * ready; an invalid one is not taken: the
				      * model is shown the validation errors and
				      * goes on, bounded by the usual limits.
				      * The result's answer is then compact JSON
				      * text (rlm_result.answer_json). NULL: any
				      * text. Part of rlm_config_json */
	/* compaction (docs/loop.md): on by default */
	double compaction_threshold; /* a node's conversation is compacted before
				      * a root call whose estimated tokens pass
				      * this fraction of the root model's window:
				      * the older turns become one summary (one
				      * root-model call), the system prompt, the
				      * first question and the latest turns
				      * stay; the REPL's variables keep
				      * everything. 0: 0.85; else in (0, 1] */
	bool no_compaction;          /* never compact */
	/* the caller's own additions to repl nodes (what the Python package's
	 * custom_system_prompt, custom_tools and custom_sub_tools become;
	 * docs/python.md). Each is part of rlm_config_json (as a digest) only
	 * when set, so existing cache and memo keys are unchanged */
	const char *system_prompt;   /* every repl node's system prompt text in
				      * place of the built-in one (the rendered
				      * prompts/repl_system.txt), used verbatim;
				      * what the controller adds after it for its
				      * own features (the sandbox sentence, host
				      * tools and skills, a schema) still
				      * follows, each after a blank line (a
				      * session's note is in its first user
				      * message either way). NULL: the built-in */
	const char *system_extra;    /* appended to the root node's system prompt
				      * after a blank line (the reference's
				      * tool_prompts: what setup_code defines,
				      * say); NULL: nothing */
	const char *setup_code;      /* Python the root node's worker runs once it
				      * is up, before the first root call (and
				      * again in a worker started after one died;
				      * in a session, once per worker): its
				      * definitions are there for model code. Its
				      * output is not shown; an exception fails
				      * the solve before any model call
				      * (RLM_EINVAL, err: "setup code raised:
				      * ..." with the exception's last line). In
				      * a worker restarted mid-solve it runs
				      * before the next block (raising then
				      * fails the node the same way) */
	const char *sub_system_extra; /* the same for every child RLM */
	const char *sub_setup_code;
	struct tool_set *sub_tools;  /* borrowed: the host tools of child RLMs
				      * (an empty set: none); NULL: tools */
	const struct rlm_record *record_; /* private: set by rlm_solve */
	struct rlm__sess *session_;  /* private: set by rlm_session_solve */
};

/* How model code used host tools and skills in a solve (all nodes): the
 * discovery health the three steps are measured by. */
struct rlm_tool_stats {
	int64_t listings;        /* list_tool_servers() */
	int64_t searches;        /* search_tools() */
	int64_t infos;           /* get_tool_info() */
	int64_t calls;           /* tool calls asked for (each of a batch) */
	int64_t calls_ok;        /* of which answered */
	int64_t blind;           /* calls of a tool whose info the calling node
				  * had not read first (get_tool_info) */
	int64_t schema_refused;  /* calls refused by the schema check */
	int64_t policy_refused;  /* calls of a tool the policy does not allow */
	int64_t budget_refused;  /* calls past --max-tool-calls */
	int64_t repeated;        /* listings of a node after its first, and
				  * searches repeating one of its own */
	int64_t skill_discovery; /* list_skills, search_skills, get_skill_info */
	int64_t skills_loaded, skills_saved;
	int64_t tool_ns;         /* time tool calls were out (summed) */
};

/* A code block of a turn and what the model was shown of its run. */
struct rlm_block {
	char *code;            /* owned; NULL: output not from a block (FINAL_VAR) */
	char *output;          /* owned, cut to output_limit; NULL: it did not run */
};

/* One turn of a node (with rlm_opts.trajectory): the root model's reply,
 * the blocks that ran, in order, and the controller's notices. */
struct rlm_turn {
	int iteration;         /* 1-based (max_iterations + 1: the last call) */
	char *reply;           /* owned; NULL: the turn stopped before its call */
	struct rlm_block *blocks; /* owned */
	size_t n_blocks;
	char **notices;        /* owned: nudges, restarts, the limit that stopped it */
	size_t n_notices;
};

/* A source of an answer: a place in the context the answer rests on. The
 * repl strategy takes them from answer["sources"] (repl/repl.h) and keeps
 * only those it finds in the node's context: the document exists (by id,
 * or by index), a quote is in it (at start..end when given, else anywhere:
 * a range given with a quote found elsewhere is corrected to where it is),
 * a range without a quote lies within it. The tree strategy cites the
 * documents of the parts whose partial answers were used (doc only). */
struct rlm_source {
	char *doc;             /* the document's id (corpus_doc.id); owned */
	int64_t start, end;    /* byte offsets in the document; -1: absent */
	char *quote;           /* owned, or NULL */
};

/* Something under a node that failed, so that its answer may rest on less
 * than the whole context (rlm_result.failures). */
struct rlm_failure {
	const char *kind;      /* static: "sub-call" (a plain sub-call failed
				* after retries, or was refused), "child" (a
				* child RLM failed, or stopped on its own limit),
				* "worker" (the node's REPL worker was killed and
				* restarted, losing its variables), "part" (tree:
				* a part whose call failed) */
	int node;              /* the node it happened in: for "child", the
				* child's own id; else the node whose call or
				* worker failed (0 the root) */
	int depth;             /* that node's depth */
	char *reason;          /* owned: why, cut to RLM_FAILURE_REASON_MAX
				* bytes ("..." ends a cut one) */
};
#define RLM_FAILURE_REASON_MAX 300 /* bytes of a failure's reason */
#define RLM_FAILURES_MAX 64        /* failures a result lists (all are counted) */

/* The outcome of a solve: rlm_solve fills one for the whole solve, and
 * with recursion (repl strategy) one more per child RLM, nested in
 * children. A node's result counts what its whole subtree did: its own
 * calls and its children's, so the root's is the solve's.
 *
 * Who fills what: both strategies fill the answer, usage and cost, calls,
 * store and solve_ns groups; the tree strategy also the tree group; the
 * repl strategy the repl usage and calls fields, the other timings, and
 * the repl and recursion groups. A field a strategy does not fill stays
 * zero (NULL, false, ""). rlm_solve zeroes the result first, and fills
 * it even when it fails (what was spent is still counted).
 *
 * Ownership: every pointer is owned by the result and freed, children
 * included, by rlm_result_release; nothing in it is shared with the solve
 * once rlm_solve has returned. The fields are in groups only to read
 * well: no code depends on their order. */
struct rlm_result {
	/* ---- the answer (every strategy) ---- */
	char *answer;          /* owned; NULL when the solve failed, or a limit
				* stopped it without one */
	bool found;            /* the answer is a real one: false when every
				* part answered NONE (tree), or when a limit
				* stopped the solve or the answer is NONE or
				* blank (repl) */
	enum rlm_stop stop;    /* why it stopped: RLM_STOP_ANSWER, or the limit
				* (answer may then be partial); repl:
				* RLM_STOP_ERROR for a failure */
	char *stop_detail;     /* owned, or NULL: the limit's words */
	char *warning;         /* owned, or NULL: what went wrong without
				* failing the solve, e.g. some parts failed */
	bool complete;         /* the answer rests on everything the solve
				* asked: it stopped on its answer (stop
				* RLM_STOP_ANSWER) and nothing under it failed
				* (failed == 0). false for a real answer with
				* failures too: it may miss what went unread */
	struct rlm_failure *failures; /* owned: the first RLM_FAILURES_MAX
				* failures of the subtree (a child's own, then
				* its subtree's, in the order they happened);
				* NULL: none */
	size_t n_failures;
	int64_t failed;        /* failures of the subtree, all of them
				* (n_failures <= failed) */
	struct rlm_source *sources; /* owned: n_sources, checked (above); NULL:
				* none. A child's are in its own context's
				* terms and stay in its result */
	size_t n_sources;
	size_t sources_dropped; /* sources the answer gave that were not found
				* (a notice in the trajectory names them) */
	bool answer_truncated; /* answer was cut to rlm_opts.max_answer bytes */
	size_t answer_bytes;   /* with answer_truncated: its length before */

	/* ---- usage and cost (every strategy; the subtree's) ---- */
	struct llm_usage usage; /* tokens of every call */
	double cost;           /* USD of every call */
	struct llm_usage root_usage; /* repl: the node's own root-model calls */
	double root_cost;
	struct llm_usage sub_usage; /* repl: the rest (its plain sub-calls and
				* its children's totals) */
	double sub_cost;

	/* ---- calls (every strategy; the subtree's but root_calls) ---- */
	int64_t calls;         /* model calls, whether sent or answered by the
				* call cache (cache_hits of them), and those
				* of answers taken from the memo (memo_hits):
				* what the solve cost, not what it sent
				* (attempts) */
	int64_t failed_calls;  /* of which failed after retries */
	int64_t attempts;      /* HTTP attempts, retries included */
	int64_t root_calls;    /* repl: this node's own root-model calls (the
				* last call after max_iterations included) */
	int64_t sub_calls;     /* repl: sub-calls (prompts) sent from code: a
				* child RLM is one, plus its own */

	/* ---- the store (every strategy, with rlm_opts.store; the
	 * subtree's): calls answered from its cache (counted in calls,
	 * usage and cost as well), child RLMs answered from its memo, and
	 * what they did not spend again ---- */
	int64_t cache_hits;
	int64_t memo_hits;
	struct llm_usage saved_usage;
	double saved_cost;
	bool memo;             /* this node's answer came from the memo */
	char memo_run[40];     /* the root answered from the memo: the run
				* whose answer it is ("" when that run is no
				* longer in the store). Its usage and cost are
				* then saved_usage and saved_cost, and usage,
				* cost and calls are what this solve spent:
				* nothing */
	int64_t memo_created_ms; /* when memo_run started (unix ms); 0 unknown */
	char *memo_json;       /* owned, or NULL: memo_run's result as it
				* was recorded (JSON text): rlm_result_json
				* shows its calls by role, usage and children */
	char run_id[40];       /* the root's run in the store; "" when none
				* was recorded (and in children) */

	/* ---- timings (wall time of the node itself, children's not added) ---- */
	int64_t solve_ns;      /* the solve (every strategy) */
	int64_t root_ns;       /* repl: waiting on root calls */
	int64_t exec_ns;       /* repl: in execs, sub-calls included */
	int64_t sub_ns;        /* repl: of which waiting on sub-calls */
	int64_t worker_start_ns; /* repl: the first worker, fork to ready */

	/* ---- tree strategy only ---- */
	size_t leaves;         /* parts the context was cut into */
	size_t failed_leaves;  /* parts whose call failed (their text went
				* unread) */
	int levels;            /* combine levels (0: the answer came from one
				* call) */
	size_t leaf_chars;     /* the part size used */

	/* ---- repl strategy only: the node's loop ---- */
	int iterations;        /* root turns made */
	int error_turns;       /* turns whose code raised */
	int execs;             /* code blocks run */
	int restarts;          /* worker restarts */
	struct repl_sandbox_status *sandbox; /* owned, or NULL (no worker
				* started): the layers of the node's first
				* worker */
	struct rlm_turn *turns; /* owned, with rlm_opts.trajectory: this
				* node's turns, in order (its children's are
				* in theirs); NULL otherwise */
	size_t n_turns;

	/* ---- repl strategy only: recursion (where the node is in the
	 * tree of child RLMs, and its children) ---- */
	int depth;             /* 0: the solve's root */
	int node;              /* its id: 0 the root, children from 1 in the
				* order they started (rlm_event.node) */
	char *question;        /* owned; a child's question (NULL at the root) */
	struct rlm_result *children; /* owned: n_children child nodes, in the
				* order their calls were made */
	size_t n_children;
	int64_t nodes;         /* child nodes under this one, any depth */

	/* ---- host tools and skills (the root: the whole solve's) ---- */
	struct rlm_tool_stats tools;
	bool answer_json;      /* see below the struct */
	int compactions;       /* see below the struct */
	char *tool_calls_json; /* owned, or NULL: the solve's tool calls, a
				* JSON array of {"node", "depth", "iteration",
				* "name", "arguments", "ok", "error", "kind",
				* "result", "ms"} (arguments and result cut),
				* the first RLM_TOOL_CALLS_KEPT */
};
#define RLM_TOOL_CALLS_KEPT 200
/* (struct rlm_result, continued in the groups above' spirit)
 *   answer_json: rlm_opts.schema_json was given and answer is compact JSON
 *     text that validated under it (the surfaces return it typed). With a
 *     schema and no valid answer, answer holds the last candidate (or
 *     NULL), answer_json is false, found is false and stop_detail says
 *     why (the validation errors of the last try).
 *   compactions: repl: times this node's conversation was compacted. */

/* r's failures for a person, by kind, with the first one's reason: e.g.
 * "16 child RLMs failed (the first: max_errors: ValueError: ...)" or
 * "2 sub-calls and 1 child RLM failed (...)". Returns a fresh string (the
 * caller frees it), or NULL when nothing failed (r->failed == 0). */
char *rlm_failures_summary(const struct rlm_result *r);

/* What of o shapes an answer, as compact JSON: the strategy, the models
 * (their cache ids: a simulator's settings too), the prompt templates'
 * digest, sampling, and every limit (iterations, depth, errors, output,
 * leaf size, time, tokens, cost, calls, sub-calls). The config a run is recorded
 * with and its memo keyed by; the caller frees it. */
char *rlm_config_json(const struct rlm_opts *o);

/* The call cache of a store (store/store.h) in the model layer's terms:
 * the store takes plain structs of its own, and these convert (what the
 * cache in front of the pool uses; bench and the tests too).
 *   rlm_store_call_key: c's key (its model's llm_model_cache_id, its
 *     messages and its parameters), the same bytes stores always had.
 *   rlm_store_call_get: answer c from s: on a hit c's result (text, len,
 *     finish_reason, usage, cost; rc 0) is filled, its old strings freed,
 *     and 1 returned; 0 on a miss (c untouched); a negative code when the
 *     lookup failed (err says why).
 *   rlm_store_call_put: keep c, a successful call (rc 0, with text), under
 *     k with its model's name; RLM_EINVAL for any other.
 * Any thread, as the store's functions. */
void rlm_store_call_key(const struct llm_call *c, struct store_key *out);
int rlm_store_call_get(struct store *s, const struct store_key *k, struct llm_call *c,
		       struct rlm_err *err);
int rlm_store_call_put(struct store *s, const struct store_key *k, const struct llm_call *c,
		       struct rlm_err *err);

/* The question of a solve whose context holds the question too, at its
 * end (the reference library's completion(prompt) without a root prompt,
 * a chat request of one user message): the model is told to read it
 * there. */
#define RLM_QUESTION_AT_END                                                                        \
	"The question is in the context, at its end: the context is the user's message, whose "  \
	"last part says what to answer. Read the end of `context` first to find the question, "  \
	"then answer it from the rest of the context."

/* Answer question over ctx. Returns 0 with out->answer set, or a negative
 * code with err filled (out still holds usage and counts of what was
 * spent). Release out with rlm_result_release either way.
 * repl strategy: a limit (iterations, errors, time, budgets, cancel) is
 * not an error: it returns 0 with out->stop saying which, out->stop_detail
 * its words, and out->answer the best partial answer (answer["content"]
 * if the code set one; after max_iterations, what the last call gave), or
 * NULL when there is none. Failures (the root model failed after retries, the worker cannot
 * start) return a negative code with stop = RLM_STOP_ERROR. So does a
 * sandbox the worker would refuse (repl_sandbox_check), before any model
 * call: RLM_EINVAL for an unknown layer in RLM_SANDBOX_DISABLE,
 * RLM_ESANDBOX for seccomp (or, as root, identity) disabled without
 * sandbox.unsafe. */
int rlm_solve(const struct rlm_opts *opts, const char *question, const struct corpus *ctx,
	      struct rlm_result *out, struct rlm_err *err);
void rlm_result_release(struct rlm_result *r);
/* r as a JSON object (what `rlm solve --json` prints, less what only the
 * command knows: provider, context, load time): answer, stop, usage,
 * calls, cache, timings, sandbox, children (nested), run; with
 * o->trajectory, "turns" on every node: [{iteration, reply, blocks:
 * [{code, output}], notices: [...]}]. A solve answered from the memo has
 * "memo": {"run", "date" (ISO 8601, UTC), "created_ms", "calls",
 * "usage", "usage_by_role", "cost_usd", "repl"} (the original run's, as
 * recorded; "run" null when it is no longer in the store), "children"
 * and "nodes" as the original had them, and usage, cost and calls of its
 * own (none: what it saved is cache.saved). */
struct cJSON *rlm_result_json(const struct rlm_result *r, const struct rlm_opts *o);

/* sources[0..n) as a JSON array of {"doc"[, "start", "end", "quote"]}
 * (start, end and quote only when present), what every surface shows (the
 * --json result, serve, MCP). The caller owns it (cJSON_Delete). */
struct cJSON *rlm_sources_json(const struct rlm_source *sources, size_t n);

/* ---- an interactive REPL (`rlm repl`) ----
 *
 * The REPL worker a node of a repl solve programs, bound to a context,
 * with the code run by the caller instead of a root model: llm_query and
 * llm_query_batched call the sub-model on the pool, and rlm_query and
 * rlm_query_batched run child RLMs, as in a solve (the REPL is the node
 * at depth 0). Nothing is recorded: no run, no cache, no memo. */
struct rlm_repl;

/* Start the worker with ctx as `context`. o is copied: pool, model,
 * sub_model and params serve the sub-calls; python, output_limit,
 * exec_timeout_ns, sandbox and cancel configure the worker; setup_code
 * runs in it now (its output unseen; an exception fails the open,
 * RLM_EINVAL "setup code raised: ...") and again at the next
 * rlm_repl_exec after a restart; max_depth,
 * max_nodes and the rest configure the child RLMs as in a solve, and its
 * budgets and time limit hold for every call made over the REPL's life
 * (from now on); strategy and the store fields are ignored. What o points
 * to, and ctx, are borrowed until rlm_repl_close. Returns 0 with *out, or
 * a negative code with err filled and *out NULL: RLM_EINVAL without a
 * pool or a model, else repl_start's (RLM_ENOTFOUND without Python,
 * RLM_ESANDBOX, ...). Any thread; then only one at a time may use *out. */
int rlm_repl_open(const struct rlm_opts *o, const struct corpus *ctx, struct rlm_repl **out,
		  struct rlm_err *err);
/* Run code[0..len) in the worker, answering its sub-calls as they come:
 * repl_exec's contract (repl/repl.h) for deadline_ns, out (release it
 * with repl_result_release) and the return; the setup code, when it runs
 * again first and fails, returns its error with out empty and code not
 * run. */
int rlm_repl_exec(struct rlm_repl *r, const char *code, size_t len, int64_t deadline_ns,
		  struct repl_result *out, struct rlm_err *err);
/* The sandbox of the current worker. */
void rlm_repl_sandbox_status(const struct rlm_repl *r, struct repl_sandbox_status *out);
/* Kill the worker, free r. NULL is a no-op. */
void rlm_repl_close(struct rlm_repl *r);

/* ---- sessions (docs/sessions.md) ----
 *
 * A session keeps a root node's REPL worker and its conversation across
 * questions, so that what the model built for one question (an index, a
 * parsed table) is there for the next. Each rlm_session_solve is a solve
 * of its own (recorded as a run with the store, its budgets and time limit
 * fresh), whose root node continues the session's conversation: the new
 * question comes as a user message naming the variables the REPL holds,
 * and `history` in the REPL is a list of {"question", "answer", "stop"}
 * of the questions before. Child RLMs are per solve. The memo is neither
 * read nor written by a session's solves (an answer depends on the
 * session's state); the call cache is used as usual. Contexts: `context`
 * is the session's first; rlm_session_add_context adds context_1,
 * context_2, ... (with documents_1, ... naming their documents). A
 * worker that died is restarted on the next question, with a notice to
 * the model: its variables are gone, the contexts and history are put
 * back. One thread at a time per session. */
struct rlm_session;

/* Open a session over ctx with the options of its solves (copied; what
 * they point to, and ctx, are borrowed until rlm_session_free; strategy
 * must be RLM_REPL). The worker starts with the first question. Returns
 * 0 with *out, or RLM_EINVAL (no pool or model, the tree strategy) or the
 * sandbox check's code with err filled. */
int rlm_session_new(const struct rlm_opts *o, const struct corpus *ctx, struct rlm_session **out,
		    struct rlm_err *err);
/* Add ctx (borrowed until rlm_session_free) as the next context_N: *n (when
 * not NULL) gets N. In the worker from now on (the next question when it
 * has not started). Returns 0, or a negative code with err (the worker
 * failed; a context over the frame limit: RLM_EINVAL). */
int rlm_session_add_context(struct rlm_session *s, const struct corpus *ctx, int *n,
			    struct rlm_err *err);
/* Ask question in s: rlm_solve's contract for out, err and the return.
 * o: NULL for the session's options, else this solve's (its pool, models,
 * sandbox, python and store must be the session's; callbacks, limits,
 * cancel, schema may differ; setup code runs once per worker, and again
 * when a question brings other code). */
int rlm_session_solve(struct rlm_session *s, const struct rlm_opts *o, const char *question,
		      struct rlm_result *out, struct rlm_err *err);
/* Forget the conversation and the history and kill the worker (the next
 * question starts afresh; added contexts stay). */
void rlm_session_reset(struct rlm_session *s);

struct rlm_session_info {
	int questions;         /* asked so far (since the last reset) */
	int contexts;          /* 1 + the contexts added */
	pid_t pid;             /* the worker's, 0 when none is running */
	int restarts;          /* worker restarts (deaths) over the session */
	int64_t rss_bytes;     /* the worker's resident memory (/proc), 0: none */
	int64_t created_ms, last_ms; /* unix ms: opened, last question ended */
	size_t conversation_bytes; /* the root conversation's text */
	int compactions;       /* of the root conversation, over the session */
};
void rlm_session_info(const struct rlm_session *s, struct rlm_session_info *out);
/* The history as a JSON array of {"question", "answer", "stop", "run"}
 * (the caller cJSON_Deletes it). */
struct cJSON *rlm_session_history_json(const struct rlm_session *s);
/* The REPL's variables (names and types, as the worker reports them), a
 * fresh string "x: int, idx: dict" or "" (none, or no worker yet); NULL
 * with err when the worker failed. */
char *rlm_session_vars(struct rlm_session *s, struct rlm_err *err);
/* Kill the worker and free s. NULL is a no-op. */
void rlm_session_free(struct rlm_session *s);

/* Check o->schema_json (rlm_opts) as a solve would before its first model
 * call: JSON, an object, the repl strategy, and valid JSON Schema as the
 * worker's python3-jsonschema judges it (a worker started with o's python
 * and sandbox on an empty context, then stopped: a few hundred ms). For a
 * caller that must refuse a bad schema before it answers (rlm serve).
 * Returns 0 (no schema: at once), RLM_EINVAL with err saying why, or the
 * code of a worker that could not start. Any thread. */
int rlm_schema_check(const struct rlm_opts *o, struct rlm_err *err);

/* Cut ctx into parts of at most max bytes at natural boundaries. Small
 * consecutive documents share a part; a large one is cut at a blank line,
 * else a line end, else a UTF-8 character boundary. Fills *parts (owned
 * array of {off, len} into ctx->buf) and returns their count. */
struct rlm_span {
	size_t off, len;
	size_t doc;            /* index of the first document in the part */
};
size_t rlm_split(const struct corpus *ctx, size_t max, struct rlm_span **parts);

/* ---- the pool and models of a solve ----
 * What a program that solves sets up first: a call pool, the root model
 * and the sub-model, from a plain configuration (what `rlm solve`'s model
 * options give; rlm_models_init reads no environment: the command line
 * and librlm's clients (api/api.h) read RLM_*, OPENAI_* and ANTHROPIC_*
 * into the configuration with rlm_models_cfg_env). An in-process
 * provider, such as the offline simulator "sim", is found by name among
 * those registered with llm_provider_register (sim_provider_register). */

struct rlm_models_cfg {
	const char *provider;   /* "openai", "anthropic", or an in-process
				 * provider registered under that name ("sim");
				 * NULL: inferred (see rlm_models_init) */
	const char *model;      /* the root model's name */
	const char *sub_model;  /* the sub-calls'; NULL: the root model */
	const char *base_url;   /* endpoints of every model, comma-separated;
				 * NULL: the provider's own, below */
	const char *api_key;    /* of every model; NULL: the provider's own */
	const char *openai_base_url;    /* openai models' without base_url */
	const char *openai_api_key;     /* openai models' without api_key */
	const char *anthropic_base_url; /* the same for anthropic models */
	const char *anthropic_api_key;
	const char *extra_json; /* JSON object merged into every request body
				 * (the sub-model's too, unless sub_extra_json) */
	/* the sub-model's own provider, endpoints, key and extra body when it
	 * differs from the root's (the reference's other_backends); each NULL:
	 * as the root's (sub_provider NULL: with sub_base_url and no provider,
	 * or an in-process root, inferred from the sub-model's name as a
	 * server: claude-* anthropic, else openai; else the root's provider
	 * when given, else inferred from the name as for the root. base_url
	 * and api_key apply to a sub-model of the root's provider only; one of
	 * another provider without sub_base_url, sub_api_key takes that
	 * provider's own, openai_* or anthropic_*). Any set makes the sub-model
	 * a model of its own even under the root's name. An in-process
	 * sub-model still needs an in-process root of the same provider */
	const char *sub_provider;
	const char *sub_base_url;
	const char *sub_api_key;
	const char *sub_extra_json;
	const char *prices;     /* price overrides file (llm_prices_load), or NULL */
	long sub_context_window; /* tokens of the sub-model's context window
				 * (the root's too when they are one model),
				 * for a model the built-in table and the price
				 * file do not know; 0: theirs */
	const char *provider_spec; /* what the in-process provider is opened
				    * with (the simulator's "ttft=100ms,seed=7");
				    * NULL: its defaults */
	long concurrency;       /* pool workers */
	double timeout_s;       /* per attempt */
	long max_retries;
	long max_inflight;      /* per endpoint; 0: unlimited */
	double rpm, tpm;        /* per endpoint; 0: unlimited */
	long max_tokens;        /* output tokens per call; 0: the provider's default */
	double temperature;     /* < 0: not sent */
	bool quiet;             /* no notice on stderr about the simulator */
};

struct rlm_models {
	struct llm_pool *pool;
	struct llm_model *model;   /* root */
	struct llm_model *sub;     /* sub-calls; may equal model */
	struct llm_params params;  /* max_tokens and temperature of the config */
	enum llm_kind kind;        /* the root model's */
	const char *provider;      /* the root model's provider, as users name it:
				    * "openai", "anthropic", "sim"; static */
	const struct llm_provider *inproc; /* the in-process provider, or NULL */
	void *impl;                /* its instance, which the models call; owned */
};

/* The defaults: 64 workers, 300 s per attempt, 6 retries, no temperature;
 * the rest zero or NULL. */
void rlm_models_cfg_init(struct rlm_models_cfg *c);
/* The environment into c, as `rlm solve` reads it (rlm/models_env.c):
 * RLM_PROVIDER, RLM_MODEL, RLM_SUB_MODEL, RLM_PRICES, RLM_SIM (the
 * provider spec), RLM_CONCURRENCY, RLM_TIMEOUT, and each provider's key and
 * endpoints (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY,
 * ANTHROPIC_BASE_URL). Empty variables are unset; a variable that is unset
 * leaves its field as it was. The strings are the environment's (valid
 * until it changes). After rlm_models_cfg_init, before what the caller's
 * own configuration sets. */
void rlm_models_cfg_env(struct rlm_models_cfg *c);
/* Build the pool and models of c into ms. The provider is c->provider;
 * without it, each model's name decides (claude-* is anthropic, the name
 * of a registered in-process provider is that provider, any other is
 * openai; "sim" with a base_url is openai too: a server of the simulator,
 * `rlm sim-serve`); a base_url or api_key without a model means openai
 * (and then a model is required); with none of these the simulator "sim"
 * is used, with a notice on stderr unless c->quiet. A model's key and
 * endpoints are c->api_key and c->base_url, else its provider's own
 * (openai_*, anthropic_*). An in-process sub-model needs the root model to
 * be of the same provider (they share its instance). Loads c->prices.
 * Returns 0, or a negative code (RLM_EINVAL for a bad configuration,
 * RLM_EAUTH for a missing key) with err filled and ms zeroed. Any thread,
 * but prices are loaded for the whole process. */
int rlm_models_init(struct rlm_models *ms, const struct rlm_models_cfg *c, struct rlm_err *err);
/* A cost budget (max_cost USD, > 0) needs a price for model and sub (either
 * may be NULL): the check of every command and request that takes one
 * (what names the budget in the message: "--max-cost"):
 * one no price table names would count as costing 0 and the budget would
 * never hold. Returns 0 (also for max_cost <= 0), or RLM_EINVAL with err
 * naming the model and the --prices file's format. Before any call. */
int rlm_check_cost(const struct llm_model *model, const struct llm_model *sub, double max_cost,
		   const char *what, struct rlm_err *err);
/* Free the pool (after its calls), the models and the provider's instance;
 * ms is zeroed. A zeroed ms is a no-op. */
void rlm_models_release(struct rlm_models *ms);

/* ---- host tools (docs/tools.md) ----
 *
 * The tool set of rlm_opts.tools: MCP servers from a config file
 * (tool/tool.h's format, the one other MCP clients read) and functions of
 * the embedding program, which model code finds and calls through the
 * same three steps (list_tool_servers, search_tools, get_tool_info,
 * call_tool). Servers start on first use and stop at rlm_tools_free.
 * Any thread. */
struct tool_set *rlm_tools_new(void);
/* Add the servers of an MCP client config file ({"mcpServers": {...}}).
 * Returns 0 or a negative code with err naming the file, server and
 * member. */
int rlm_tools_load_config(struct tool_set *ts, const char *path, struct rlm_err *err);
/* Offer fn as the tool name ("TOOL", in server "host", or "SERVER.TOOL")
 * with input_schema_json (a JSON Schema object, NULL: no arguments) and
 * description. Arguments are checked against the schema before fn sees
 * them (tool_host_fn in tool/tool.h: JSON in, JSON out). read_only: it
 * changes nothing, so the default policy lets model code call it.
 * Returns 0 or RLM_EINVAL (a bad or taken name, a bad schema). */
int rlm_tool_register(struct tool_set *ts, const char *name, const char *input_schema_json,
		      const char *description, bool read_only, tool_host_fn *fn, void *arg,
		      struct rlm_err *err);
void rlm_tools_free(struct tool_set *ts);

#pragma GCC visibility pop

#endif
