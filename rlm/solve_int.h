/* SPDX-License-Identifier: MIT */
/* rlm/solve_int.h -- inside rlm_solve: the strategies, the budget a
 * solve shares between all its calls (and, with recursion, all its
 * nodes), and the calls of one node (rlm/calls.c).
 */
#ifndef RLM_SOLVE_INT_H
#define RLM_SOLVE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rlm.h"
#include "../repl/repl.h"
#include "../store/store.h"
#include "../common/text.h"

/* The strategies; rlm_solve (rlm/solve.c) zeroes out and dispatches. Same
 * contract as rlm_solve. */
int rlm__tree_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err);
int rlm__loop_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err);
/* The sources an answer gave (in[0..n), as the worker sent them) checked
 * against the node's context ctx (rlm/rlm.h's struct rlm_source): those
 * found into *out (owned; NULL when none) and *n_out; for each one dropped,
 * why ("'x.txt': no such document"), "; " between, appended to why.
 * Returns how many were dropped. (rlm/sources.c) */
size_t rlm__sources_check(const struct corpus *ctx, const struct repl_source *in, size_t n,
			  struct rlm_source **out, size_t *n_out, struct buf *why);
/* Add document doc of ctx to r's sources, doc only, unless it is there. */
void rlm__sources_add_doc(struct rlm_result *r, const struct corpus *ctx, size_t doc);
void rlm__sources_free(struct rlm_source *s, size_t n);
/* Sources back from rlm_sources_json's text (the memo keeps them so):
 * *out (owned; NULL when none) and *n_out; entries without a "doc" are
 * left out. */
void rlm__sources_parse(const char *json, struct rlm_source **out, size_t *n_out);

/* The corpus as a worker's context (w->ctx): one str for a text, a
 * list[str] for documents (any kind but CORPUS_TEXT), and who the
 * documents are (a str's is its first). What backs it (the offsets
 * table, the metadata lines when the corpus has no memfd holding them)
 * is w's until rlm__worker_ctx_release, after repl_start. */
struct rlm__worker_ctx {
	struct repl_context ctx;
	size_t *off, *lens;
	struct buf meta;
};
void rlm__worker_ctx_init(struct rlm__worker_ctx *w, const struct corpus *ctx);
void rlm__worker_ctx_release(struct rlm__worker_ctx *w);

struct rlm_budget; /* below */
struct rlm_nodes;   /* below */

/* ---- the store (rlm/record.c) ----
 *
 * With rlm_opts.store, rlm_solve records the solve as a run and hands
 * every node an rlm_record through opts.record_: the front of the call pool
 * (the call cache), the child memo and the run's events. Without a store
 * record_ is NULL and every record_* function does nothing. */
struct rlm_record {
	struct store *store;
	bool refresh;
	struct llm_front front; /* arg: this record */
	char run[40];		/* the run's id; "" when it could not be begun */
	char digest[33];	/* the context's (rlm__record_begin) */
	atomic_bool broken;	/* the store failed once: no more store work */
	int64_t t0;		/* the solve's start (time_now_ns clock) */
	/* calls sent and not done yet, by key, so that the same call asked
	 * again meanwhile waits for its outcome instead of going out twice */
	pthread_mutex_t fl_mu;
	pthread_cond_t fl_cv;		/* a flight landed */
	struct record_flight *flights;	/* under fl_mu */
};

/* Set rec up for o (o->store set). */
void rlm__record_init(struct rlm_record *rec, const struct rlm_opts *o);
/* Begin the run of question over ctx (rlm_solve, before the strategy).
 * A failure to record is not the solve's: it is logged, run stays "". */
void rlm__record_begin(struct rlm_record *rec, const struct rlm_opts *o, const char *question,
		  const struct corpus *ctx);
/* End it with the result (and the strategy's rc), and release rec (no
 * call of the solve may be out). */
void rlm__record_end(struct rlm_record *rec, const struct rlm_opts *o, const struct rlm_result *r,
		int rc, const char *error);
/* The front for a call of o's solve, or NULL. */
const struct llm_front *rlm__record_front(const struct rlm_opts *o);
/* One event of node (parent: its parent's id, -1 for the root). */
void rlm__record_event(const struct rlm_opts *o, int node, int parent, int depth, int iteration,
		  const char *kind, const char *text, size_t len, const char *data_json);
/* A model call of node completed: its "call" event (nodes: the solve's, for
 * the event callback; NULL: the store only). */
void rlm__record_call(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
		 int depth, int iteration, const struct llm_call *call, bool sub);
/* The same with the call's role named: "root", "sub", or "compact" (a
 * root-model call that summarised a node's older turns, rlm/compact.c;
 * its reply is kept, cut, as a sub-call's is). */
void rlm__record_call_as(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
			 int depth, int iteration, const struct llm_call *call, const char *role);
/* A "call", "child" or "child_end" event: to the store, and to the event
 * callback when o asks for detail_events (under nodes->cb_mu). */
void rlm__record_detail(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
		   int depth, int iteration, const char *kind, const char *text, size_t len,
		   const char *data_json);
/* The memo of a child RLM (or, at depth 0, of the whole solve) is kept
 * under a key of its question, its context and the configuration:
 * rlm__record_memo_key makes it for a context that is text[0..len) (a str, or
 * the whole solve's digest), rlm__record_memo_key_ctx for a child's corpus (a
 * str: the same key as its text's; documents: their text and bounds).
 * Both read the whole context, and return false (no key) when the solve
 * has no store (or its store failed). */
bool rlm__record_memo_key(const struct rlm_opts *o, int depth, const char *question, const char *text,
		     size_t len, struct store_key *k);
bool rlm__record_memo_key_ctx(const struct rlm_opts *o, int depth, const char *question,
			 const struct corpus *ctx, struct store_key *k);
/* The answer kept under k, with its usage and counts, into out (stop
 * ANSWER, memo set) and true, when what it spent still fits budget b
 * (charged then; NULL: the limits of o): a memo never lets a run go
 * further than the run it stands for. */
bool rlm__record_memo_get(const struct rlm_opts *o, struct rlm_budget *b, const struct store_key *k,
		     struct rlm_result *out);
/* Keep a node's answer under k: only a whole one (stop ANSWER, no failed
 * call, no warning, no failed part). */
/* The whole solve was answered from the memo (out filled by
 * rlm__record_memo_get): what it took is moved to saved (it spent
 * nothing), the run that made the answer is found (out->memo_run,
 * memo_created_ms, memo_json) and named in a notice of this run. */
void rlm__record_memo_origin(const struct rlm_opts *o, const char *question,
			     struct rlm_result *out);
void rlm__record_memo_put(const struct rlm_opts *o, const struct store_key *k,
		     const struct rlm_result *r);

/* Limits of one solve, shared by every call of it from any thread: each
 * call is checked and its share reserved before it is sent
 * (rlm__budget_reserve), and settled with what it really used when it
 * completes (rlm__budget_settle). Counters are atomics, so child nodes running
 * on other threads can share one budget; the limits are set once by
 * rlm__budget_init and only read afterwards. */
struct rlm_budget {
	int64_t max_tokens;	   /* input + output tokens; 0: none */
	int64_t max_cost_nusd;	   /* USD in units of 1e-9; 0: none */
	int64_t max_sub_calls;	   /* 0: none */
	int64_t max_calls;	   /* model calls; 0: none */
	int64_t deadline_ns;	   /* time_now_ns() clock; 0: none */
	int64_t timeout_ns;	   /* the limit it came from, for messages */
	_Atomic int64_t tokens;	   /* used, plus the estimates of calls out */
	_Atomic int64_t cost_nusd; /* spent, plus the input costs of calls out */
	_Atomic int64_t sub_calls; /* sub-calls sent */
	_Atomic int64_t calls;	   /* model calls sent */
};

/* What a reservation is for. */
enum budget_kind {
	BUDGET_ROOT,  /* a root-model call: one model call */
	BUDGET_SUB,   /* a plain sub-call: a model call and a sub-call */
	BUDGET_CHILD, /* a child RLM: a sub-call (its own calls reserve theirs) */
};

void rlm__budget_init(struct rlm_budget *b, const struct rlm_opts *o, int64_t t0);
/* May a call of this kind with est_tokens of input, costing about
 * est_cost USD at the full input price, be sent? true: both estimates,
 * its sub-call and its model call (as kind says) are reserved, so calls
 * in flight together cannot overshoot the budget by more than their
 * output. false: *why is the stop reason (RLM_STOP_TOKENS, _COST, _CALLS,
 * _MAX_CALLS) and msg[0..n) says which budget and by how much, e.g.
 * "token budget exhausted (9,800 of 10,000 tokens used; this call needs
 * about 600 more)"; nothing is reserved. */
bool rlm__budget_reserve(struct rlm_budget *b, int64_t est_tokens, double est_cost,
		    enum budget_kind kind, enum rlm_stop *why, char *msg, size_t n);
/* A reserved call completed: replace its estimates by what it used (0 for
 * a call that failed before the provider billed it) and what it cost. */
void rlm__budget_settle(struct rlm_budget *b, int64_t est_tokens, double est_cost, int64_t used_tokens,
		   double cost);
/* Has the deadline passed? */
bool rlm__budget_expired(const struct rlm_budget *b, int64_t now);

/* The state every node of one repl solve shares, from any thread: made by
 * rlm__loop_solve for the root, and given to each child node as a pointer. The
 * fields above the mutexes are set by rlm__nodes_init and only read afterwards. */
struct rlm_nodes {
	const struct rlm_opts *o; /* the caller's: pool, models, params,
				   * cancel, callbacks, limits */
	struct rlm_budget budget; /* tokens, cost, sub-calls, calls, deadline */
	int max_depth;		  /* o->max_depth, or 2 */
	int max_nodes;		  /* o->max_nodes, or 8 */
	int64_t t0;		  /* the solve's start */
	atomic_int running;	  /* slots held (rlm_opts.max_nodes): by a
				   * runner thread, or by the root's thread
				   * while it runs a child itself */
	pthread_mutex_t slot_mu;  /* with slot_cv: a slot was given back */
	pthread_cond_t slot_cv;
	atomic_int last_id;	  /* the last node id handed out */
	pthread_mutex_t cb_mu;	  /* one event or progress callback at a time */
	/* The first limit of the whole solve a node ran into (a budget, the
	 * deadline, the caller's cancel): every node stops on it. */
	atomic_bool stopping;
	pthread_mutex_t stop_mu;
	enum rlm_stop stop; /* guarded by stop_mu */
	char *stop_detail;  /* owned, guarded by stop_mu */
	/* host tools and skills (rlm/tools.c) */
	_Atomic int64_t tool_calls_sent;   /* against o->max_tool_calls */
	pthread_mutex_t tool_mu;
	struct rlm_tool_stats tool_stats;  /* guarded by tool_mu */
	struct cJSON *tool_calls;	   /* the first calls; guarded by tool_mu */
};

void rlm__nodes_init(struct rlm_nodes *t, const struct rlm_opts *o, int64_t t0);
void rlm__nodes_release(struct rlm_nodes *t);
/* Is why a limit of the whole solve (tokens, cost, sub-calls, calls,
 * time, cancel), which ends every node, not just the one that met it? */
bool rlm__nodes_limit(enum rlm_stop why);
/* Node `node` at `depth` met the limit why (detail: its words): every node
 * stops on it. The first limit told wins. Any thread. */
void rlm__nodes_stop(struct rlm_nodes *t, enum rlm_stop why, const char *detail, int depth, int node);


/* The calls of one node of the repl strategy: its root calls and the
 * sub-calls its code makes. Owned by the node's thread; pool threads
 * (done callbacks) and its child nodes' threads (when they end) touch
 * only what mu guards: out's counters, usage and cost, the node's done
 * flags and slots, sub_failed, and progress. */
struct calls {
	const struct rlm_opts *o;  /* the node's: pool, its root model, params,
				    * cancel, progress (the root's only) */
	struct rlm_result *out;	   /* counted into; guarded by mu */
	struct rlm_nodes *nodes;	   /* borrowed, shared by the solve's nodes */
	struct rlm_budget *budget; /* &nodes->budget */
	struct llm_model *sub;	   /* the default sub-model */
	int depth, node;	   /* where the node is among the nodes */
	int parent;		   /* the parent node's id; -1 for the root */
	size_t window;		   /* sub-calls in flight; o->window or 256 */
	int64_t t0;		   /* the solve's start */
	int level;		   /* progress level: the iteration */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC; broadcast: the worker's call
			    * frames are answered on threads of their own,
			    * several may wait at once */
	pthread_mutex_t kids_mu; /* frames that start child RLMs run one at a
				  * time (they append to out->children) */
	int frames_out;		/* call frames being answered; guarded by mu */
	int64_t frames_since;	/* when frames_out went from 0 to 1: out->sub_ns
				 * is the time some frame was out, not a sum */
	/* why the node stops, once decided (the first reason wins): the
	 * node's thread, or a thread answering a call frame with mu held */
	bool stopping;
	enum rlm_stop stop;
	char *stop_detail;     /* owned */
	int64_t sub_failed;    /* sub-calls that failed in the pool */
	char *sub_first_error; /* owned */
	/* The node's context and its worker (set once it has started): what
	 * a reference of the worker's (REPL_CTX_SLICE, _RUN) is checked
	 * against and read from, and the memfd a child's view of it maps.
	 * Borrowed; the node's thread. */
	const struct corpus *ctx;
	struct repl *repl;
	/* host tools: what this node's code discovered (rlm/tools.c), for the
	 * discovery health; guarded by mu */
	char **tool_infos;	 /* tools whose info it read */
	size_t n_tool_infos;
	char **tool_queries;	 /* its searches ("server\nquery") */
	size_t n_tool_queries;
	int tool_listings;	 /* list_tool_servers() calls */
};

/* o: the node's options (o->sub_model set); nodes: the solve's. */
void rlm__calls_init(struct calls *c, const struct rlm_opts *o, struct rlm_result *out,
		struct rlm_nodes *nodes, int depth, int node);
void rlm__calls_release(struct calls *c);
bool rlm__calls_cancelled(const struct calls *c);
/* Decide the stop (ignored when one is decided already). A limit of the
 * whole solve (rlm__nodes_limit) is told to the nodes too, so that every node
 * stops on it. */
void rlm__calls_stop(struct calls *c, enum rlm_stop why, const char *fmt, ...) RLM_PRINTF(3, 4);
/* Has another node met a limit of the whole solve? Then this node stops on
 * it too (its stop is decided, with the same reason and words). Returns
 * c->stopping. The node's thread only. */
bool rlm__calls_adopt(struct calls *c);
/* The time limit passed `during` ("during a sub-call"). */
void rlm__calls_timeout(struct calls *c, const char *during);
/* mu held: call the progress callback (never concurrently). */
void rlm__calls_progress(struct calls *c, const char *phase, size_t done, size_t total);
/* mu held: count a completed call (sub: a sub-call) with the token
 * estimate it reserved, and settle the budget. */
void rlm__calls_account(struct calls *c, const struct llm_call *call, int64_t est, bool sub);
/* mu held: at the caller's cancel or at deadline (0: none), set *flag (the
 * cancel flag of the calls being waited for) and decide the stop, saying
 * `during` which step time ran out. Returns *flag. */
bool rlm__calls_check(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during);
/* mu held: rlm__calls_check, then wait on cv for a signal, at most until the
 * deadline or a short poll interval. Loop on your own condition. */
void rlm__calls_wait(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during);
/* mu held: add what a finished child node spent to c->out (its totals
 * count as this node's sub-calls). */
void rlm__calls_add_child(struct calls *c, const struct rlm_result *child);
/* The worker's call handler (repl_call_fn; arg: the struct calls). */
void rlm__calls_on_call(void *arg, const struct repl_call *call, char **texts, bool *errors);
/* The repl_cfg of a worker whose calls c answers, under c->o: its
 * interpreter, limits, sandbox and cancel flag; calls_ahead (the prompts
 * of call frames answered at once before the next frame waits) twice the
 * pool's slots. lone: no child RLMs below it, so no zygote for it alone
 * (repl_cfg.lone). The caller adds what is its own (stop, schema). */
void rlm__calls_worker_cfg(struct calls *c, bool lone, struct repl_cfg *cfg);

/* Run code (the caller's setup code; NULL: nothing) in repl unless it ran
 * there since the worker's last (re)start: *setup_at holds the worker's
 * restarts when it last ran (-1: never) and is updated. Its output is not
 * shown. Returns 0, RLM_EINVAL with err "setup code raised: <the
 * exception's last line>" (or the worker restarted twice while it ran),
 * or repl_exec's code. (rlm/loop.c) */
int rlm__setup_run(struct repl *repl, const char *code, int64_t deadline_ns, int *setup_at,
		   struct rlm_err *err);

/* ---- sessions (rlm/session.c, rlm/loop_session.c) ----
 *
 * What a session keeps between its solves: the root node's worker and
 * conversation, which the root node of each of its solves takes at its
 * start and gives back at its end (rlm_opts.session_), the history and
 * the contexts added. */
struct rlm__sess {
	struct repl *repl;         /* NULL: none yet, or it failed */
	struct repl_sandbox_status sandbox; /* of its first start */
	bool have_sandbox;
	struct llm_msg *msgs;      /* the root conversation; texts owned */
	size_t n_msgs, cap_msgs;
	int questions;             /* asked, the one running included */
	int put_restarts;          /* the worker's restarts when history and
				    * contexts were last put in it; -1: never */
	int setup_at;              /* the worker's restarts when the setup
				    * code last ran in it; -1: never */
	char *setup_code;          /* the code that ran then (a question
				    * with other code runs its own) */
	struct cJSON *history;     /* [{"question", "answer", "stop", "run"}] */
	const struct corpus **extra; /* context_1, ...: borrowed */
	size_t n_extra;
	size_t n_told;             /* of which the conversation was told */
	int restarts;              /* deaths of the worker over the session */
	bool schema_told;          /* the first question's system prompt shows
				    * an answer schema */
	int compactions;
};
/* Put into r what the session's worker must hold: the contexts added
 * (when r never had them: a new or restarted worker) and the history,
 * the answer emptied (a new question). Returns 0 or repl_set's code. */
int rlm__sess_put(struct rlm__sess *s, struct repl *r, int64_t deadline_ns, struct rlm_err *err);
/* The variables of r as "x: int, idx: dict" (SHOW_VARS), fresh; "" when
 * none; NULL with err when the worker failed. */
char *rlm__sess_vars(struct repl *r, int64_t deadline_ns, struct rlm_err *err);

/* ---- child nodes (rlm/node.c) ---- */

/* Run one node of the repl strategy on the calling thread (parent: the
 * id of the node whose code asked for it, -1 for the root): its loop, its
 * worker, over ctx (borrowed until it returns). out is zeroed first and
 * filled as rlm_solve's; its children are joined and its worker freed
 * before it returns. Same return as rlm_solve. (rlm/loop.c) */
int rlm__loop_node(struct rlm_nodes *t, const struct rlm_opts *o, int depth, int node, int parent,
	      const char *question, const struct corpus *ctx, struct rlm_result *out,
	      struct rlm_err *err);
/* Answer the prompts of an rlm_query frame of node c with child RLMs at
 * c->depth + 1 (the caller checked the depth allows it), whose root model
 * is root. Same contract as a repl_call_fn: texts[i] and errors[i] for
 * every prompt, in order. Each child runs on one of the solve's slots
 * (nodes->max_nodes), on a thread of its own or on this one (a child node
 * lends its own slot to the children it runs itself; the root takes one).
 * All have ended when it returns. Their results go to c->out->children, in
 * prompt order. */
void rlm__node_children(struct calls *c, const struct repl_call *call, struct llm_model *root,
		   char **texts, bool *errors);
/* mu held: count a sub-call (or child) that failed, with why (its text
 * after "Error: "), for the node's warning, and list it as a "sub-call"
 * failure of the node (rlm__failure_add). */
void rlm__calls_failed(struct calls *c, const char *why);
/* Count a failure in r (rlm/rlm.h's struct rlm_failure: kind static, why
 * copied and cut), listing it while r lists fewer than RLM_FAILURES_MAX.
 * Under the lock that guards r, when other threads count into it. */
void rlm__failure_add(struct rlm_result *r, const char *kind, int node, int depth,
		      const char *why);
/* A node's result once its strategy returned rc: a NONE, empty or blank
 * answer with failures under it becomes stop RLM_STOP_INCOMPLETE (its
 * detail the summary below), and complete is set (rlm/rlm.h). Every
 * node's, the root's last. (rlm/solve.c) */
void rlm__result_finish(struct rlm_result *r, int rc);
/* Cut r->answer to max bytes (0: RLM_DEF_MAX_ANSWER) where a UTF-8
 * sequence ends, setting answer_truncated and answer_bytes and adding
 * what it did to r->warning (and to note[0..cap), when given). Returns
 * true when it cut now. (rlm/solve.c) */
bool rlm__answer_cap(struct rlm_result *r, size_t max, char *note, size_t cap);

/* ---- the contexts of children (rlm/node_ctx.c) ----
 *
 * A call frame's context= entries (struct repl_ctx_arg) as child RLMs'
 * contexts, or as the text a plain sub-call at the last depth reads. A
 * reference (SLICE, RUN) must lie within the node's context c->ctx: a
 * slice of its text (a str) on UTF-8 character boundaries, a run of its
 * documents (a list) within their number. */

/* Check entry a against c's context. Returns 0, or RLM_EINVAL with msg
 * saying what is wrong (for "Error: <msg>"). */
int rlm__node_ctx_check(const struct calls *c, const struct repl_ctx_arg *a, char *msg, size_t cap);
/* The context of a child for a checked entry a (NULL or NONE: the prompt,
 * text[0..len), as for TEXT): a copy of a str or a list in a memfd of its
 * own, or a view of c's context on the memfd of c's worker. Returns 0 with
 * *out (corpus_free it; it may borrow text and c->ctx until then), or
 * -errno. */
int rlm__node_ctx_make(const struct calls *c, const struct repl_ctx_arg *a, const char *text,
		  size_t len, struct corpus **out);
/* The prompt of a plain sub-call at the last depth for prompt p[0..n) with
 * context entry a: "<prompt>\n\n<context>", documents joined by a blank
 * line. Returns a fresh string (*len bytes), or NULL with msg when a is bad
 * (rlm__node_ctx_check). The pages of c's context it read are released. */
char *rlm__node_ctx_prompt(const struct calls *c, const struct repl_ctx_arg *a, const char *p,
		      size_t n, size_t *len, char *msg, size_t cap);

/* The question a child is asked when its context is the prompt: the
 * prompt, or when it is long its start and a note that the whole of it is
 * in `context`. Returns a fresh string. */
char *rlm__node_question(const char *prompt, size_t len);

/* ---- host tools and skills (rlm/tools.c, rlm/skills.c) ---- */

/* A "tool" call frame of c's worker: each request answered (texts[i], a
 * JSON text {"ok": true, "value": V} or {"ok": false, "error", "kind"};
 * errors[i] when not ok); a batch in parallel. */
void rlm__tools_on_call(struct calls *c, const struct repl_call *call, char **texts, bool *errors);
void rlm__tools_node_release(struct calls *c);
/* The solve's counts and calls into the root's result. */
void rlm__tools_result(struct rlm_nodes *t, struct rlm_result *out);
/* Replies (malloc'd JSON texts): ok consumes value (NULL: null). */
char *rlm__tool_ok(struct cJSON *value);
char *rlm__tool_err(const char *kind, const char *msg);
/* Add by to a counter of c's solve (c->nodes->tool_stats). */
void rlm__tool_count(struct calls *c, int64_t *field, int64_t by);
#define STAT(c, field) ((c)->nodes->tool_stats.field)
/* Record one request of c at iteration: a "tool" event (the store, detail
 * events) and, for op "call", an entry of the solve's calls. */
void rlm__tool_record(struct calls *c, int iteration, const char *op, const char *name,
		      const struct cJSON *args, const struct cJSON *value, const char *kind,
		      const char *error, int64_t ns);
/* A skill request (op "skills", "skill_search", "skill_info",
 * "skill_load", "skill_save"): its reply. */
char *rlm__skills_op(struct calls *c, const char *op, const struct cJSON *r, int iteration);
/* How many skills the store holds for the system prompt (-1: no store). */
int64_t rlm__skills_count(const struct rlm_opts *o);

#endif
