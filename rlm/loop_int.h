/* SPDX-License-Identifier: MIT */
/* rlm/loop_int.h -- inside the repl strategy: the state of one node's
 * loop, shared by the loop (rlm/loop.c) and its turns (rlm/loop_turn.c).
 * Everything here runs on the node's thread. */
#ifndef RLM_LOOP_INT_H
#define RLM_LOOP_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "solve_int.h"
#include "prompt.h"

/* One node of the repl strategy: made and freed by rlm__loop_node. */
struct loop {
	const struct rlm_opts *o; /* the node's (a child's root model may differ) */
	struct rlm_result *out;
	struct calls c; /* its stop reason is the node's */
	struct rlm_nodes *nodes;
	struct rlm_budget *budget; /* &nodes->budget */
	int depth, node;
	int parent; /* the parent node's id; -1 for the root */
	struct repl *repl;
	int64_t t0;
	int iteration; /* 1-based; max_iterations + 1 for the last call */
	int max_iterations, max_errors;
	size_t output_limit, sub_chars;

	/* the conversation, append-only; texts owned */
	struct llm_msg *msgs;
	size_t n_msgs, cap_msgs;

	/* the root call out */
	struct llm_call root;
	atomic_bool root_cancel;
	int64_t root_est;
	bool root_done; /* guarded by c.mu */

	bool block_open; /* with o->trajectory: the last block kept awaits
			  * its output (a "code" event, no "output" yet) */
	char *content; /* the latest answer["content"] the code set */
	struct repl_source *sources; /* of the answer this turn's code made
				      * ready (taken from its repl_result),
				      * until the turn checks them */
	size_t n_sources;
	int consecutive_errors;
	char *last_error; /* the last error line of the last error turn */

	/* the root of a session's solve (rlm/loop_session.c) */
	bool keep_final;   /* keep the reply that ended the node ... */
	char *final_reply; /* ... here (owned), for the conversation */
	size_t final_len;
	int restarts0;     /* the worker's restarts when the node took it */
	char *vars; /* the REPL's variable names at the last exec, "x, idx"
		     * (for a compaction's summary), or NULL */
	bool compact_refused; /* a notice said the conversation's shape
			       * allows no compaction (said once) */
	/* structured answers (o->schema_json at the root): */
	bool answer_valid; /* out->answer is one the worker found valid */
	bool turn_invalid; /* this turn made an answer ready that was refused */
	char *invalid;     /* the validation errors of the last answer made
			    * ready and refused, or NULL */
	/* the caller's setup code (o->setup_code) */
	int setup_at;      /* the worker's restarts when it last ran; -1:
			    * not in this worker yet */
	/* detail events "turn" / "turn_end" */
	bool turn_open;    /* a "turn" was told and its "turn_end" not yet */
	int64_t turn_t0;   /* when it began */
	/* the worker started on a thread of its own from the node's start
	 * (rlm/loop.c, worker_begin), until start_worker takes it */
	struct worker_boot *boot;
};

/* Tell the caller's event callback (if any) an event of kind with
 * text[0..len) (NULL: ""), at this iteration, depth and node; one event at
 * a time across the solve's nodes. With o->trajectory, keep it in the
 * node's out->turns too. */
void rlm__loop_emit(struct loop *l, const char *kind, const char *text, size_t len);
/* The same with data_json (a JSON object, or NULL) for the store and the
 * callback. */
void rlm__loop_emit_data(struct loop *l, const char *kind, const char *text, size_t len,
		    const char *data_json);
/* Call the progress callback at this iteration's level (phase: done of
 * total). Takes c.mu. */
void rlm__loop_progress(struct loop *l, const char *phase, size_t done, size_t total);
/* Append a message to the conversation; takes text (malloc'd). */
void rlm__loop_add_msg(struct loop *l, enum llm_role role, char *text, size_t len);
/* Render the template `name` with vars into a fresh *text of *len bytes
 * (the caller's to free). Returns 0 or rlm_prompt_render's code with err. */
int rlm__loop_render(const char *name, const struct prompt_var *vars, size_t n, char **text, size_t *len,
		struct rlm_err *err);

/* "a str of 1,234,567 characters (about 308,642 tokens)", or for documents
 * (docs) their count, total, range and first lengths and a few ids: what
 * the model is told of a context, never its text. Fresh. (rlm/loop.c) */
char *rlm__loop_context_desc(const struct corpus *ctx, bool docs);
/* The paragraph on the answer schema o->schema_json (prompts/
 * repl_schema.txt, the schema cut when huge) into a fresh *text. Returns 0
 * or the render's code. (rlm/loop.c) */
int rlm__loop_schema_paragraph(struct loop *l, char **text, size_t *len, struct rlm_err *err);

/* Sessions (rlm/loop_session.c), for the root node of a session's solve
 * (o->session_):
 *   rlm__loop_session_open: before the first root call: *first when the
 *     session has no conversation yet (then first_messages makes it, and
 *     rlm__loop_session_first adds what a session's first question
 *     says); else the conversation and the worker are taken from the
 *     session, the history put in the worker, and the question appended
 *     (repl_session_next.txt). A worker that cannot be taken back is
 *     replaced (a notice). Returns 0 or a negative code with err.
 *   rlm__loop_session_worker: a worker was started for the node: the
 *     session's contexts and history go into it.
 *   rlm__loop_session_close: at the node's end: the final reply joins the
 *     conversation, and the conversation and the worker go back to the
 *     session (l->msgs and l->repl NULL after). */
int rlm__loop_session_open(struct loop *l, const char *question, bool *first, struct rlm_err *err);
void rlm__loop_session_first(struct loop *l);
int rlm__loop_session_worker(struct loop *l, struct rlm_err *err);
void rlm__loop_session_close(struct loop *l);
/* Before a root call: when the conversation's estimated tokens pass
 * o->compaction_threshold of the root model's window (and compaction is
 * on), fold its older turns into one summary by one root-model call
 * (rlm/compact.c; docs/loop.md, "Compaction"). Works on l->msgs alone.
 * Returns 0 (compacted or not: a failed summary drops the turns with a
 * notice), or 1 when a limit stopped the node (the stop is set). */
int rlm__loop_compact(struct loop *l, struct rlm_err *err);

/* Run o->setup_code in l->repl unless it ran there since the worker's
 * last (re)start: before the first root call, and before each block (a
 * worker restarted since has lost what it defined). Its output is not
 * shown. Returns 0 (no setup code, or it ran), RLM_EINVAL with err
 * "setup code raised: <the exception's last line>", or repl_exec's code.
 * (rlm/loop.c) */
int rlm__loop_setup(struct loop *l, struct rlm_err *err);

enum turn_end { TURN_GO_ON, TURN_DONE };

/* One turn on the reply in l->root (taken). Returns TURN_GO_ON with the
 * next user message appended, TURN_DONE with the stop set (and
 * out->answer), or a negative code. (rlm/loop_turn.c) */
int rlm__loop_turn(struct loop *l, bool last, struct rlm_err *err);

#endif
