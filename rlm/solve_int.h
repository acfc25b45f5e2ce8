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

/* The strategies; rlm_solve (rlm/solve.c) zeroes out and dispatches. Same
 * contract as rlm_solve. */
int tree_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err);
int loop_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err);
/* The corpus as a worker's context: one str for a text, a list[str] for
 * documents (any kind but CORPUS_TEXT). *off and *lens (owned; NULL for a
 * text) back the offsets table and must outlive the repl_start call. */
void loop_repl_context(const struct corpus *ctx, struct repl_context *out, size_t **off,
		       size_t **lens);

/* Limits of one solve, shared by every call of it from any thread: each
 * call is checked and its share reserved before it is sent
 * (budget_reserve), and settled with what it really used when it
 * completes (budget_settle). Counters are atomics, so child nodes running
 * on other threads can share one budget; the limits are set once by
 * budget_init and only read afterwards. */
struct rlm_budget {
	int64_t max_tokens;	   /* input + output tokens; 0: none */
	int64_t max_cost_nusd;	   /* USD in units of 1e-9; 0: none */
	int64_t max_sub_calls;	   /* 0: none */
	int64_t deadline_ns;	   /* now_ns() clock; 0: none */
	int64_t timeout_ns;	   /* the limit it came from, for messages */
	_Atomic int64_t tokens;	   /* used, plus the estimates of calls out */
	_Atomic int64_t cost_nusd; /* spent, plus the input costs of calls out */
	_Atomic int64_t sub_calls; /* sub-calls sent */
};

void budget_init(struct rlm_budget *b, const struct rlm_opts *o, int64_t t0);
/* May a call with est_tokens of input, costing about est_cost USD at the
 * full input price, be sent (sub: it is a sub-call)? true: both estimates
 * (and its sub-call) are reserved, so calls in flight together cannot
 * overshoot the budget by more than their output. false: *why is the stop
 * reason (RLM_STOP_TOKENS, _COST, _CALLS) and msg[0..n) says which budget
 * and by how much, e.g. "token budget exhausted (9,800 of 10,000 tokens
 * used; this call needs about 600)". */
bool budget_reserve(struct rlm_budget *b, int64_t est_tokens, double est_cost, bool sub,
		    enum rlm_stop *why, char *msg, size_t n);
/* A reserved call completed: replace its estimates by what it used (0 for
 * a call that failed before the provider billed it) and what it cost. */
void budget_settle(struct rlm_budget *b, int64_t est_tokens, double est_cost, int64_t used_tokens,
		   double cost);
/* Has the deadline passed? */
bool budget_expired(const struct rlm_budget *b, int64_t now);

/* n with thousands separators: "1,234,567". Returns buf. */
char *fmt_count(char *buf, size_t n, int64_t v);
/* A duration in words: "30 s", "1.5 s", "250 ms". Returns buf. */
char *fmt_duration(char *buf, size_t n, int64_t ns);

/* The calls of one node of the repl strategy: its root calls and the
 * sub-calls its code makes. Owned by the node's thread; pool threads
 * (done callbacks) touch only what mu guards: out's counters, usage and
 * cost, the node's done flags and slots, sub_failed, and progress. */
struct calls {
	const struct rlm_opts *o;  /* pool, models, params, cancel, progress */
	struct rlm_result *out;	   /* counted into; guarded by mu */
	struct rlm_budget *budget; /* borrowed, shared */
	struct llm_model *sub;	   /* the default sub-model */
	size_t window;		   /* sub-calls in flight; o->window or 256 */
	int64_t t0;		   /* the solve's start */
	int level;		   /* progress level: the iteration */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	/* why the node stops, once decided (the first reason wins); the
	 * node's thread only */
	bool stopping;
	enum rlm_stop stop;
	char *stop_detail;     /* owned */
	int64_t sub_failed;    /* sub-calls that failed in the pool */
	char *sub_first_error; /* owned */
};

void calls_init(struct calls *c, const struct rlm_opts *o, struct rlm_result *out,
		struct rlm_budget *b, int64_t t0);
void calls_release(struct calls *c);
bool calls_cancelled(const struct calls *c);
/* Decide the stop (ignored when one is decided already). */
void calls_stop(struct calls *c, enum rlm_stop why, const char *fmt, ...) RLM_PRINTF(3, 4);
/* The time limit passed `during` ("during a sub-call"). */
void calls_timeout(struct calls *c, const char *during);
/* mu held: call the progress callback (never concurrently). */
void calls_progress(struct calls *c, const char *phase, size_t done, size_t total);
/* mu held: count a completed call (sub: a sub-call) with the token
 * estimate it reserved, and settle the budget. */
void calls_account(struct calls *c, const struct llm_call *call, int64_t est, bool sub);
/* mu held: at the caller's cancel or at deadline (0: none), set *flag (the
 * cancel flag of the calls being waited for) and decide the stop, saying
 * `during` which step time ran out. Returns *flag. */
bool calls_check(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during);
/* mu held: calls_check, then wait on cv for a signal, at most until the
 * deadline or a short poll interval. Loop on your own condition. */
void calls_wait(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during);
/* The worker's call handler (repl_call_fn; arg: the struct calls). */
void calls_on_call(void *arg, const struct repl_call *call, char **texts, bool *errors);

#endif
