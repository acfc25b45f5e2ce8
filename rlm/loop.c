/* SPDX-License-Identifier: MIT */
/* rlm/loop.c -- the repl strategy: the RLM loop. The root model sees
 * metadata about the context and writes Python; a persistent REPL worker
 * runs it with the context in `context`; its sub-calls go to the pool.
 *
 * DESIGN
 * One node is one thread and one worker: the root node runs on the
 * caller's thread, each child RLM (rlm_query, rlm/node.c) on a thread of
 * its own or on its parent's. The conversation
 * is append-only -- [system, first user, (assistant, user)*] -- so the
 * prefix sent with each root call never changes and provider prompt
 * caches hit. A turn: check the limits, send the root call, parse the
 * reply (rlm/reply.h), run its ```repl blocks in order until one sets
 * answer["ready"], then honour a FINAL / FINAL_VAR written in the text,
 * and answer with the blocks' outputs (or a nudge when there was no
 * code). After max_iterations turns, one last call asks for FINAL(...).
 *
 * Sub-calls arrive while code runs, on this thread (repl_exec calls the
 * handler of rlm/calls.c), which also holds what root and sub-calls
 * share: the waits, the accounting, the stop reason.
 *
 * Limits share one struct rlm_budget (rlm/solve_int.h), the tree's, so
 * every node of the solve spends from it; it is checked before a call is
 * sent. A limit of the whole solve met by any node stops every node
 * (calls_adopt, before each turn, after each block, and when a root reply
 * arrives). A root call that may not be sent stops the node; a
 * sub-call that may not be sent gets an "Error: ..." string the code can
 * see, and the solve stops after the current exec. Time is enforced
 * everywhere: waits for calls wake at the deadline and cancel their calls
 * (each wait has its own flag, handed to its calls), and repl_exec gets
 * the deadline itself. The worker watches the caller's cancel flag
 * directly: a flag of ours could only be set between frames, while the
 * worker's own wait polls the flag it is given even while code runs.
 *
 * The first root call is sent before the worker starts, so the worker's
 * start-up overlaps the model's first answer.
 */
#include "solve_int.h"
#include "prompt.h"
#include "reply.h"
#include "../repl/repl.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_ITERATIONS   30
#define DEFAULT_ERRORS	     5
#define DEFAULT_OUTPUT_LIMIT 20000
#define SUB_CHARS_MAX	     500000
#define FIRST_LENGTHS	     10 /* document lengths shown in the metadata */

struct loop {
	const struct rlm_opts *o; /* the node's (a child's root model may differ) */
	struct rlm_result *out;
	struct calls c; /* its stop reason is the node's */
	struct rlm_tree *tree;
	struct rlm_budget *budget; /* &tree->budget */
	int depth, node;
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

	char *content; /* the latest answer["content"] the code set */
	int consecutive_errors;
	char *last_error; /* the last error line of the last error turn */
};

/* ---- small helpers ---- */

static void emit(struct loop *l, const char *kind, const char *text, size_t len)
{
	struct rlm_event e;
	if (!l->o->event)
		return;
	e = (struct rlm_event){.kind = kind,
			       .iteration = l->iteration,
			       .text = text ? text : "",
			       .len = text ? len : 0,
			       .elapsed_ns = now_ns() - l->t0,
			       .depth = l->depth,
			       .node = l->node};
	/* Nodes run on many threads; the callback sees one event at a time. */
	pthread_mutex_lock(&l->tree->cb_mu);
	l->o->event(&e, l->o->event_arg);
	pthread_mutex_unlock(&l->tree->cb_mu);
}

static void progress(struct loop *l, const char *phase, size_t done, size_t total)
{
	pthread_mutex_lock(&l->c.mu);
	l->c.level = l->iteration;
	calls_progress(&l->c, phase, done, total);
	pthread_mutex_unlock(&l->c.mu);
}

static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

static bool is_none(const char *s)
{
	size_t len;
	while (isspace((unsigned char)*s) || *s == '*' || *s == '"' || *s == '\'')
		s++;
	len = strlen(s);
	while (len && (isspace((unsigned char)s[len - 1]) || s[len - 1] == '.' ||
		       s[len - 1] == '*' || s[len - 1] == '"' || s[len - 1] == '\''))
		len--;
	return len == 4 && strncasecmp(s, "NONE", 4) == 0;
}

/* Was the reply cut off at the output token limit? "length" is the
 * OpenAI-compatible finish reason, "max_tokens" Anthropic's stop reason. */
static bool cut_off(const char *finish)
{
	return finish && (strcmp(finish, "length") == 0 || strcmp(finish, "max_tokens") == 0);
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

/* s[0..len) trimmed of blanks, in a fresh string. */
static char *trim_dup(const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	return xstrndup(s, len);
}

/* The code of a block as the worker gets it: CRLF made LF, and the
 * indentation common to all its non-blank lines removed (a fence indented
 * inside a list indents its code, which Python would refuse). */
static char *block_code(const char *s, size_t len, size_t *out_len)
{
	struct buf b;
	size_t common = SIZE_MAX, i = 0;
	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - s) : len, k = i;
		while (k < end && (s[k] == ' ' || s[k] == '\t'))
			k++;
		if (k < end && !(k + 1 == end && s[k] == '\r') && k - i < common)
			common = k - i;
		i = end + 1;
	}
	if (common == SIZE_MAX)
		common = 0;
	buf_init(&b, 0);
	buf_reserve(&b, len + 1);
	for (i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - s) : len, start = i, e = end;
		size_t skip = RLM_MIN(common, end - start);
		if (e > start && s[e - 1] == '\r')
			e--;
		if (start + skip <= e)
			buf_append(&b, s + start + skip, e - start - skip);
		if (nl)
			buf_putc(&b, '\n');
		i = end + 1;
	}
	return buf_detach(&b, out_len);
}

/* The last non-blank line of s (an exception's "Name: message"), at most
 * 200 bytes, in a fresh string. */
static char *last_line(const char *s, size_t len)
{
	size_t end = len, start;
	while (end && isspace((unsigned char)s[end - 1]))
		end--;
	start = end;
	while (start && s[start - 1] != '\n')
		start--;
	if (end - start > 200)
		end = start + utf8_floor(s + start, 200);
	return xstrndup(s + start, end - start);
}

/* ---- the conversation ---- */

/* Append a message; takes text (malloc'd). */
static void add_msg(struct loop *l, enum llm_role role, char *text, size_t len)
{
	if (l->n_msgs == l->cap_msgs) {
		l->cap_msgs = l->cap_msgs ? l->cap_msgs * 2 : 16;
		l->msgs = xrealloc(l->msgs, l->cap_msgs * sizeof(*l->msgs));
	}
	l->msgs[l->n_msgs++] = (struct llm_msg){role, text, len};
}

static int render(const char *name, const struct prompt_var *vars, size_t n, char **text,
		  size_t *len, struct rlm_err *err)
{
	struct buf b;
	int rc;
	buf_init(&b, 0);
	rc = prompt_render(name, vars, n, &b, err);
	if (rc) {
		buf_release(&b);
		return rc;
	}
	*text = buf_detach(&b, len);
	return 0;
}

/* "a str of 1,234,567 characters (about 308,642 tokens)", or for documents
 * their count, total, range and first lengths: never any of the text. */
static char *context_desc(const struct corpus *ctx, bool docs)
{
	char a[32], b[32], c[32];
	struct buf d;
	size_t total = 0, bytes = 0, lo = SIZE_MAX, hi = 0;
	if (!docs) {
		size_t off = ctx->n_docs ? ctx->docs[0].off : 0;
		size_t len = ctx->n_docs ? ctx->docs[0].len : ctx->len;
		return xasprintf("a str of %s characters (about %s tokens)",
				 fmt_count(a, sizeof(a), (int64_t)utf8_chars(ctx->buf + off, len)),
				 fmt_count(b, sizeof(b), llm_estimate_tokens(len)));
	}
	for (size_t i = 0; i < ctx->n_docs; i++) {
		size_t n = utf8_chars(ctx->buf + ctx->docs[i].off, ctx->docs[i].len);
		total += n;
		bytes += ctx->docs[i].len;
		lo = RLM_MIN(lo, n);
		hi = RLM_MAX(hi, n);
	}
	buf_init(&d, 0);
	buf_printf(&d, "a list of %s document%s (str), %s characters in all (about %s tokens)",
		   fmt_count(a, sizeof(a), (int64_t)ctx->n_docs), ctx->n_docs == 1 ? "" : "s",
		   fmt_count(b, sizeof(b), (int64_t)total),
		   fmt_count(c, sizeof(c), llm_estimate_tokens(bytes)));
	if (ctx->n_docs > 1) {
		size_t k = RLM_MIN(ctx->n_docs, (size_t)FIRST_LENGTHS);
		buf_printf(&d, "; documents are %s to %s characters long; ",
			   fmt_count(a, sizeof(a), (int64_t)lo),
			   fmt_count(b, sizeof(b), (int64_t)hi));
		if (k == ctx->n_docs)
			buf_puts(&d, "their lengths: ");
		else
			buf_printf(&d, "the first %zu lengths: ", k);
		for (size_t i = 0; i < k; i++)
			buf_printf(&d, "%s%s", i ? ", " : "",
				   fmt_count(a, sizeof(a),
					     (int64_t)utf8_chars(ctx->buf + ctx->docs[i].off,
								 ctx->docs[i].len)));
		if (k < ctx->n_docs)
			buf_puts(&d, ", ...");
	}
	return buf_detach(&d, NULL);
}

/* ---- root calls ---- */

static void on_root_done(struct llm_call *c, void *arg)
{
	struct loop *l = arg;
	pthread_mutex_lock(&l->c.mu);
	calls_account(&l->c, c, l->root_est, false);
	l->root_done = true;
	pthread_cond_signal(&l->c.cv);
	pthread_mutex_unlock(&l->c.mu);
}

/* Send the conversation to the root model. Returns 0 when sent, 1 when a
 * budget refused it (the stop is set). */
static int root_submit(struct loop *l)
{
	enum rlm_stop why;
	char msg[256];
	size_t bytes = 0;
	for (size_t i = 0; i < l->n_msgs; i++)
		bytes += l->msgs[i].len;
	l->root_est = llm_estimate_tokens(bytes);
	if (!budget_reserve(l->budget, l->root_est, llm_model_input_cost(l->o->model, l->root_est),
			    false, &why, msg, sizeof(msg))) {
		calls_stop(&l->c, why, "%s: the root call of turn %d was not sent", msg,
			   l->iteration);
		return 1;
	}
	progress(l, "root", 0, 1);
	llm_call_init(&l->root, l->o->model, l->msgs, l->n_msgs);
	l->root.params = l->o->params;
	atomic_store(&l->root_cancel, false);
	l->root.cancel = &l->root_cancel;
	l->root_done = false;
	llm_pool_submit(l->o->pool, &l->root, on_root_done, l);
	return 0;
}

/* Wait for the root call. Returns 0 with the reply in l->root, 1 when a
 * limit ended it (the stop is set), or the call's error code with err set. */
static int root_wait(struct loop *l, struct rlm_err *err)
{
	int64_t t0 = now_ns();
	pthread_mutex_lock(&l->c.mu);
	while (!l->root_done)
		calls_wait(&l->c, &l->root_cancel, l->budget->deadline_ns,
			   "while the root model was answering");
	pthread_mutex_unlock(&l->c.mu);
	l->out->root_ns += now_ns() - t0;
	/* A reply that came as the limit passed comes too late, and so does
	 * one that came after another node ended the solve. */
	if (l->c.stopping || calls_adopt(&l->c))
		return 1;
	if (l->root.rc == 0)
		return 0;
	return rlm_err_set(err, l->root.rc, "the root model failed: %s",
			   l->root.error ? l->root.error : rlm_strerror(l->root.rc));
}

/* ---- running code ---- */

enum turn_end { TURN_GO_ON, TURN_DONE };

/* Handle a repl_exec / repl_final_var outcome common to both: content,
 * restarts, limits. Returns a negative code for a dead worker. */
static int exec_outcome(struct loop *l, int rc, const struct repl_result *res, struct rlm_err *err)
{
	if (res->content && *res->content) {
		free(l->content);
		l->content = xstrdup(res->content);
	}
	if (res->restarted) {
		static const char m[] = "the REPL worker was restarted: its variables are gone and "
					"`context` was reloaded";
		emit(l, "notice", m, sizeof(m) - 1);
	}
	if (rc == RLM_ETIMEOUT) {
		calls_timeout(&l->c, "while code was running");
	} else if (rc == RLM_ECANCEL) {
		calls_stop(&l->c, RLM_STOP_CANCEL, "cancelled by the caller");
	} else if (rc < 0) {
		calls_stop(&l->c, RLM_STOP_ERROR, "the REPL worker failed: %s",
			   err->msg[0] ? err->msg : rlm_strerror(rc));
		return rc;
	}
	return 0;
}

static void add_section(struct buf *outs, const char *head, const struct repl_result *res)
{
	if (outs->len)
		buf_puts(outs, "\n\n");
	size_t len = res->len;
	/* Sections are one blank line apart: drop the output's own final
	 * newlines. */
	while (len && res->output[len - 1] == '\n')
		len--;
	buf_puts(outs, head);
	buf_putc(outs, '\n');
	if (len)
		buf_append(outs, res->output, len);
	else
		buf_puts(outs, "(no output)");
}

/* Run the blocks of reply rp (text t) in order, outputs into outs. Stops
 * at a block that sets the answer (*ready, answer in *answer) or at a
 * limit (l->c.stopping). Returns 0 or a negative code for a dead worker. */
static int run_blocks(struct loop *l, const char *t, const struct reply *rp, struct buf *outs,
		      bool *error_turn, bool *ready, char **answer, struct rlm_err *err)
{
	for (size_t i = 0; i < rp->n_blocks; i++) {
		struct repl_result res;
		size_t clen;
		char *code = block_code(t + rp->blocks[i].off, rp->blocks[i].len, &clen);
		char head[64];
		int rc;
		emit(l, "code", code, clen);
		progress(l, "exec", i, rp->n_blocks);
		memset(&res, 0, sizeof(res));
		rc = repl_exec(l->repl, code, clen, l->budget->deadline_ns, &res, err);
		free(code);
		l->out->execs++;
		l->out->exec_ns += res.ns;
		if (exec_outcome(l, rc, &res, err)) {
			repl_result_release(&res);
			return rc;
		}
		if (res.ready) {
			emit(l, "output", res.len ? res.output : "(no output)",
			     res.len ? res.len : 11);
			*ready = true;
			*answer = xstrdup(res.answer ? res.answer : "");
			repl_result_release(&res);
			return 0;
		}
		if (res.error || res.restarted) {
			*error_turn = true;
			free(l->last_error);
			l->last_error = res.len ? last_line(res.output, res.len) : NULL;
		}
		if (rp->n_blocks == 1)
			snprintf(head, sizeof(head), "REPL output:");
		else
			snprintf(head, sizeof(head), "REPL output (block %zu of %zu):", i + 1,
				 rp->n_blocks);
		add_section(outs, head, &res);
		emit(l, "output", res.len ? res.output : "(no output)", res.len ? res.len : 11);
		repl_result_release(&res);
		if (calls_adopt(&l->c))
			return 0;
	}
	return 0;
}

/* Resolve FINAL_VAR(name): *ready and *answer when it exists; else what
 * the worker said goes into outs. */
static int final_var(struct loop *l, const char *t, const struct reply *rp, struct buf *outs,
		     bool *ready, char **answer, struct rlm_err *err)
{
	struct repl_result res;
	char *name = xstrndup(t + rp->final_off, rp->final_len), *head;
	int rc;
	memset(&res, 0, sizeof(res));
	rc = repl_final_var(l->repl, name, l->budget->deadline_ns, &res, err);
	if (exec_outcome(l, rc, &res, err)) {
		repl_result_release(&res);
		free(name);
		return rc;
	}
	if (res.ready) {
		*ready = true;
		*answer = xstrdup(res.answer ? res.answer : "");
	} else if (!l->c.stopping) {
		head = xasprintf("FINAL_VAR(%s):", name);
		add_section(outs, head, &res);
		emit(l, "output", res.len ? res.output : "(no output)", res.len ? res.len : 11);
		free(head);
	}
	repl_result_release(&res);
	free(name);
	return 0;
}

/* The reply's text outside its fences, trimmed: the answer of a last call
 * that wrote no FINAL. NULL when there is none. */
static char *prose_of(const char *t, size_t len, const struct reply *rp)
{
	struct buf b;
	size_t pos = 0;
	char *s;
	buf_init(&b, 0);
	for (size_t i = 0; i <= rp->n_blocks; i++) {
		size_t end = i < rp->n_blocks ? rp->blocks[i].off : len;
		/* Drop the fence line before the block and the one after it. */
		size_t cut = end;
		if (i < rp->n_blocks) {
			while (cut > pos && t[cut - 1] == '\n')
				cut--;
			while (cut > pos && t[cut - 1] != '\n')
				cut--;
		}
		buf_append(&b, t + pos, cut - pos);
		if (i < rp->n_blocks) {
			const char *nl;
			pos = rp->blocks[i].off + rp->blocks[i].len;
			nl = memchr(t + pos, '\n', len - pos);
			pos = nl ? (size_t)(nl - t) + 1 : len;
		}
	}
	s = trim_dup(b.p ? b.p : "", b.len);
	buf_release(&b);
	if (!*s) {
		free(s);
		return NULL;
	}
	return s;
}

/* One turn on the reply in l->root (taken). Returns TURN_GO_ON with the
 * next user message appended, TURN_DONE with the stop set (and
 * out->answer), or a negative code. */
static int turn(struct loop *l, bool last, struct rlm_err *err)
{
	struct rlm_result *out = l->out;
	char *text = l->root.text, *answer = NULL, *msg = NULL;
	size_t len = l->root.len, msg_len = 0;
	struct reply rp;
	struct buf outs;
	bool error_turn = false, ready = false;
	bool cut = cut_off(l->root.finish_reason);
	char turn_s[16], max_s[16];
	int rc = 0;

	l->root.text = NULL;
	llm_call_release(&l->root);
	emit(l, "reply", text, len);
	reply_parse(text, len, l->o->python_fences, cut, &rp);
	buf_init(&outs, 0);

	/* The last call: a FINAL in the text first, its code only after. */
	if (last && rp.final == REPLY_FINAL) {
		answer = xstrndup(text + rp.final_off, rp.final_len);
		ready = true;
	}
	if (!ready)
		rc = run_blocks(l, text, &rp, &outs, &error_turn, &ready, &answer, err);
	if (!rc && !ready && !l->c.stopping && rp.final == REPLY_FINAL) {
		answer = xstrndup(text + rp.final_off, rp.final_len);
		ready = true;
	}
	if (!rc && !ready && !l->c.stopping && rp.final == REPLY_FINAL_VAR)
		rc = final_var(l, text, &rp, &outs, &ready, &answer, err);
	if (rc)
		goto out;

	if (last) {
		/* A limit hit by its code keeps its reason (the content, if any,
		 * is the answer); else the answer is what the call gave. The
		 * prose of a reply that wrote code instead ("Let me check
		 * once more:") does not beat an answer["content"] set before. */
		out->answer = answer;
		answer = NULL;
		if (!out->answer && !l->c.stopping && rp.final != REPLY_FINAL_VAR &&
		    !(rp.n_blocks && l->content))
			out->answer = prose_of(text, len, &rp);
		if (!l->c.stopping)
			calls_stop(
			    &l->c, RLM_STOP_ITERATIONS,
			    "%d turns passed without an answer (max_iterations); one last call "
			    "asked for it",
			    l->max_iterations);
		rc = TURN_DONE;
		goto out;
	}
	if (ready) {
		out->answer = answer;
		answer = NULL;
		/* A real answer wins over a limit its own exec ran into. */
		l->c.stopping = false;
		free(l->c.stop_detail);
		l->c.stop_detail = NULL;
		calls_stop(&l->c, RLM_STOP_ANSWER, "the answer is ready");
		rc = TURN_DONE;
		goto out;
	}
	if (l->c.stopping) {
		/* A limit hit by this turn's code: a FINAL(...) in its text,
		 * written before the code ran, is a better partial answer than
		 * none (an answer["content"] the code set beats it). */
		if (rp.final == REPLY_FINAL && !l->content)
			out->answer = xstrndup(text + rp.final_off, rp.final_len);
		rc = TURN_DONE;
		goto out;
	}
	if (error_turn) {
		out->error_turns++;
		if (++l->consecutive_errors >= l->max_errors) {
			calls_stop(&l->c, RLM_STOP_ERRORS,
				   "%d turns in a row ended in an error (max_errors)%s%s",
				   l->consecutive_errors, l->last_error ? "; the last: " : "",
				   l->last_error ? l->last_error : "");
			rc = TURN_DONE;
			goto out;
		}
	} else {
		l->consecutive_errors = 0;
	}

	/* Every block ran; the last may have lost its cut last line. */
	if (cut && outs.len && rp.n_blocks && !rp.blocks[rp.n_blocks - 1].closed)
		buf_puts(&outs,
			 "\n\n(Your reply was cut off at the output token limit: its "
			 "unfinished last block ran without its cut last line. Write shorter "
			 "replies.)");

	/* The next user message. */
	snprintf(turn_s, sizeof(turn_s), "%d", l->iteration + 1);
	snprintf(max_s, sizeof(max_s), "%d", l->max_iterations);
	if (l->iteration >= l->max_iterations) {
		struct prompt_var v[3] = {
		    {"outputs",
		     outs.len ? outs.p : "(your last reply had no ```repl block, so nothing ran)",
		     outs.len},
		    {"turn", turn_s, 0},
		    {"max_iterations", max_s, 0},
		};
		rc = render("repl_last.txt", v, 3, &msg, &msg_len, err);
	} else if (!outs.len) {
		struct prompt_var v[3] = {
		    {"why",
		     cut ? "Your reply was cut off at the output token limit before any ```repl "
			   "block was complete, so nothing ran; write shorter replies."
		     : blank(text, len) ? "Your reply was empty, so nothing ran."
		     : rp.other_fences	? "Your reply had no ```repl block (only ```repl blocks "
					  "run, not other fences), so nothing ran."
					: "Your reply had no ```repl block, so nothing ran.",
		     0},
		    {"turn", turn_s, 0},
		    {"max_iterations", max_s, 0},
		};
		rc = render("repl_nocode.txt", v, 3, &msg, &msg_len, err);
		if (!rc)
			emit(l, "notice", msg, msg_len);
	} else {
		struct prompt_var v[3] = {
		    {"outputs", outs.p, outs.len},
		    {"turn", turn_s, 0},
		    {"max_iterations", max_s, 0},
		};
		rc = render("repl_next.txt", v, 3, &msg, &msg_len, err);
	}
	if (rc) {
		calls_stop(&l->c, RLM_STOP_ERROR, "%s", err->msg);
		goto out;
	}
	if (blank(text, len)) {
		/* Providers refuse an empty assistant message (Anthropic: "text
		 * content blocks must be non-empty"); the history needs one. */
		free(text);
		len = strlen("(empty reply)");
		text = xstrndup("(empty reply)", len);
	}
	add_msg(l, LLM_ASSISTANT, text, len);
	text = NULL;
	add_msg(l, LLM_USER, msg, msg_len);
	msg = NULL;
	rc = TURN_GO_ON;
out:
	free(answer);
	free(msg);
	free(text);
	reply_release(&rp);
	buf_release(&outs);
	return rc;
}

/* ---- the solve ---- */

void loop_repl_context(const struct corpus *ctx, struct repl_context *out, size_t **off,
		       size_t **lens)
{
	*off = *lens = NULL;
	if (ctx->kind != CORPUS_TEXT) {
		size_t n = ctx->n_docs ? ctx->n_docs : 1;
		*off = xcalloc(n, sizeof(**off));
		*lens = xcalloc(n, sizeof(**lens));
		for (size_t i = 0; i < ctx->n_docs; i++) {
			(*off)[i] = ctx->docs[i].off;
			(*lens)[i] = ctx->docs[i].len;
		}
		/* The corpus's memfd has the worker's layout: no copy. */
		*out = (struct repl_context){.text = ctx->buf,
					     .len = ctx->len,
					     .docs = true,
					     .doc_off = *off,
					     .doc_len = *lens,
					     .n_docs = ctx->n_docs,
					     .has_fd = ctx->fd >= 0,
					     .fd = ctx->fd};
	} else {
		size_t o = ctx->n_docs ? ctx->docs[0].off : 0;
		size_t n = ctx->n_docs ? ctx->docs[0].len : ctx->len;
		*out = (struct repl_context){.text = ctx->buf ? ctx->buf + o : "",
					     .len = n,
					     .has_fd = ctx->fd >= 0 && o == 0 && n == ctx->len,
					     .fd = ctx->fd};
	}
}

static int start_worker(struct loop *l, const struct corpus *ctx, struct rlm_err *err)
{
	struct repl_cfg cfg;
	struct repl_stats st;
	size_t *off = NULL, *lens = NULL;
	int rc;
	memset(&cfg, 0, sizeof(cfg));
	cfg.python = l->o->python;
	cfg.output_limit = l->output_limit;
	cfg.exec_timeout_ns = l->o->exec_timeout_ns;
	cfg.on_call = calls_on_call;
	cfg.call_arg = &l->c;
	cfg.cancel = l->o->cancel;
	cfg.sandbox = l->o->sandbox;
	loop_repl_context(ctx, &cfg.ctx, &off, &lens);
	rc = repl_start(&cfg, &l->repl, err);
	free(off);
	free(lens);
	if (rc)
		return rc;
	/* The worker has its own copy (the memfd, which a restart reuses):
	 * nothing here reads the text again, so its pages need not stay in
	 * this process (40 MB of 10M tokens). */
	corpus_release_pages(ctx);
	repl_stats(l->repl, &st);
	l->out->worker_start_ns = st.start_ns;
	l->out->sandbox = xmalloc(sizeof(*l->out->sandbox));
	repl_sandbox_status(l->repl, l->out->sandbox);
	emit(l, "sandbox", l->out->sandbox->line, strlen(l->out->sandbox->line));
	return 0;
}

/* The system prompt's sentence about the sandbox. It is rendered before
 * the worker is up (the first root call overlaps its start), so it follows
 * the configuration: without unsafe, seccomp is certain (no worker starts
 * without it), and with it the sockets and processes it forbids. */
static const char *sandbox_sentence(const struct repl_sandbox_cfg *sb)
{
	if (!sb->unsafe)
		return "The REPL is sandboxed: no network or sockets (so no asyncio event loop; "
		       "llm_query_batched and threads run things in parallel), no subprocesses or "
		       "shell commands, and files can be written only in the current directory (a "
		       "scratch directory).";
	return "The REPL may not be sandboxed: do not use the network or start processes, and "
	       "write files only in the current directory (a scratch directory).";
}

/* The system prompt's note on rlm_query where it is not a child RLM: at
 * the last depth, or everywhere when recursion is off. */
static const char *rlm_query_note(const struct loop *l)
{
	if (l->depth + 1 < l->tree->max_depth)
		return "";
	if (l->depth == 0)
		return " Recursion is off in this session: here rlm_query and rlm_query_batched "
		       "are plain sub-calls, the same as llm_query and llm_query_batched.";
	return " You are yourself a child RLM at the last level of recursion: here rlm_query and "
	       "rlm_query_batched are plain sub-calls, the same as llm_query and "
	       "llm_query_batched.";
}

/* The first two messages: the system prompt and the question with the
 * context's metadata. */
static int first_messages(struct loop *l, const char *question, const struct corpus *ctx, bool docs,
			  struct rlm_err *err)
{
	char sub_s[32], limit_s[32], max_s[16], time_s[32], calls_s[32], blocks_s[400];
	char *desc = context_desc(ctx, docs), *text;
	int64_t t = l->o->exec_timeout_ns ? l->o->exec_timeout_ns : REPL_DEF_EXEC_TIMEOUT_NS;
	size_t len;
	int rc;
	fmt_count(sub_s, sizeof(sub_s), (int64_t)l->sub_chars);
	fmt_count(limit_s, sizeof(limit_s), (int64_t)l->output_limit);
	snprintf(max_s, sizeof(max_s), "%d", l->max_iterations);
	fmt_count(calls_s, sizeof(calls_s), REPL_DEF_CALLS_EXEC);
	if (t > 0)
		snprintf(blocks_s, sizeof(blocks_s),
			 "A block may make up to %s sub-calls and run for %s of its own time "
			 "(waiting on sub-calls does not count); past that it is interrupted "
			 "(KeyboardInterrupt), and if it does not stop, the REPL is restarted and "
			 "your variables are lost.",
			 calls_s, fmt_duration(time_s, sizeof(time_s), t));
	else
		snprintf(blocks_s, sizeof(blocks_s), "A block may make up to %s sub-calls.",
			 calls_s);
	{
		struct prompt_var v[6] = {{"sub_chars", sub_s, 0},
					  {"output_limit", limit_s, 0},
					  {"max_iterations", max_s, 0},
					  {"block_limits", blocks_s, 0},
					  {"sandbox", sandbox_sentence(&l->o->sandbox), 0},
					  {"rlm_query_note", rlm_query_note(l), 0}};
		rc = render("repl_system.txt", v, 6, &text, &len, err);
		if (!rc)
			add_msg(l, LLM_SYSTEM, text, len);
	}
	if (!rc) {
		struct prompt_var v[4] = {{"question", question, 0},
					  {"context_desc", desc, 0},
					  {"sub_chars", sub_s, 0},
					  {"max_iterations", max_s, 0}};
		rc = render("repl_first.txt", v, 4, &text, &len, err);
		if (!rc)
			add_msg(l, LLM_USER, text, len);
	}
	free(desc);
	return rc;
}

static void set_warning(struct loop *l)
{
	struct rlm_result *out = l->out;
	struct buf w;
	buf_init(&w, 0);
	if (l->c.sub_failed) {
		char a[32], b[32];
		buf_printf(&w,
			   "%s of %s sub-calls failed (the first: %s); the code saw \"Error: ...\" "
			   "for them",
			   fmt_count(a, sizeof(a), l->c.sub_failed),
			   fmt_count(b, sizeof(b), out->sub_calls),
			   l->c.sub_first_error ? l->c.sub_first_error : "?");
	}
	if (out->restarts)
		buf_printf(&w, "%sthe REPL worker was restarted %d time%s and lost its variables",
			   w.len ? "; " : "", out->restarts, out->restarts == 1 ? "" : "s");
	if (w.len)
		out->warning = buf_detach(&w, NULL);
	buf_release(&w);
}

int loop_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err)
{
	struct rlm_tree t;
	int rc;
	tree_init(&t, o, now_ns());
	rc = loop_node(&t, o, 0, 0, question, ctx, out, err);
	tree_release(&t);
	return rc;
}

int loop_node(struct rlm_tree *t, const struct rlm_opts *o, int depth, int node,
	      const char *question, const struct corpus *ctx, struct rlm_result *out,
	      struct rlm_err *caller_err)
{
	struct rlm_err local = {0, ""}, *err = &local;
	struct loop l;
	bool docs;
	int rc = 0;
	int64_t start = now_ns();

	memset(out, 0, sizeof(*out));
	out->depth = depth;
	out->node = node;
	if (!question || !*question) {
		out->stop = RLM_STOP_ERROR;
		out->stop_detail = xstrdup("the question is empty");
		return rlm_err_set(caller_err, RLM_EINVAL, "the question is empty");
	}
	if (!o->pool || !o->model) {
		out->stop = RLM_STOP_ERROR;
		out->stop_detail = xstrdup("no pool or no model to solve with");
		return rlm_err_set(caller_err, RLM_EINVAL, "no pool or no model to solve with");
	}
	memset(&l, 0, sizeof(l));
	l.o = o;
	l.out = out;
	l.tree = t;
	l.budget = &t->budget;
	l.depth = depth;
	l.node = node;
	l.t0 = t->t0;
	calls_init(&l.c, o, out, t, depth, node);
	l.max_iterations = o->max_iterations > 0 ? o->max_iterations : DEFAULT_ITERATIONS;
	l.max_errors = o->max_errors > 0 ? o->max_errors : DEFAULT_ERRORS;
	l.output_limit = o->output_limit ? o->output_limit : DEFAULT_OUTPUT_LIMIT;
	/* What a sub-call can read: half the sub-model's window, leaving the
	 * other half to instructions and the answer, at ~4 characters a
	 * token: window / 2 * 4 = 2 * window characters, at most 500,000. */
	l.sub_chars =
	    (size_t)RLM_MIN((int64_t)llm_model_context_window(l.c.sub) * 2, (int64_t)SUB_CHARS_MAX);
	atomic_init(&l.root_cancel, false);
	docs = ctx->kind != CORPUS_TEXT;

	if ((rc = first_messages(&l, question, ctx, docs, err)))
		goto out;

	for (;;) {
		bool last = l.iteration >= l.max_iterations;
		if (calls_cancelled(&l.c)) {
			calls_stop(&l.c, RLM_STOP_CANCEL, "cancelled by the caller");
			break;
		}
		if (calls_adopt(&l.c))
			break;
		if (budget_expired(l.budget, now_ns())) {
			char when[48];
			snprintf(when, sizeof(when), "before turn %d", l.iteration + 1);
			calls_timeout(&l.c, when);
			break;
		}
		l.iteration++;
		if (!last)
			out->iterations = l.iteration;
		if (root_submit(&l))
			break;
		if (!l.repl) {
			/* The worker starts while the first root call is out. */
			rc = start_worker(&l, ctx, err);
			if (rc) {
				atomic_store(&l.root_cancel, true);
				pthread_mutex_lock(&l.c.mu);
				while (!l.root_done)
					pthread_cond_wait(&l.c.cv, &l.c.mu);
				pthread_mutex_unlock(&l.c.mu);
				llm_call_release(&l.root);
				calls_stop(&l.c, RLM_STOP_ERROR,
					   "the REPL worker could not start: %s",
					   err->msg[0] ? err->msg : rlm_strerror(rc));
				goto out;
			}
		}
		rc = root_wait(&l, err);
		if (rc) {
			llm_call_release(&l.root);
			if (rc == 1) {
				rc = 0;
				break;
			}
			calls_stop(&l.c, RLM_STOP_ERROR, "%s",
				   err->msg[0] ? err->msg : rlm_strerror(rc));
			goto out;
		}
		rc = turn(&l, last, err);
		if (rc < 0)
			goto out;
		if (rc == TURN_DONE) {
			rc = 0;
			break;
		}
	}

out:
	if (!l.c.stopping)
		calls_stop(&l.c, RLM_STOP_ERROR, "%s", err->msg[0] ? err->msg : rlm_strerror(rc));
	out->stop = l.c.stop;
	out->stop_detail = l.c.stop_detail;
	l.c.stop_detail = NULL;
	if (out->stop != RLM_STOP_ANSWER && out->stop != RLM_STOP_ERROR && out->stop_detail)
		emit(&l, "notice", out->stop_detail, strlen(out->stop_detail));
	if (!out->answer && l.content && out->stop != RLM_STOP_ANSWER)
		out->answer = xstrdup(l.content);
	out->found = out->stop == RLM_STOP_ANSWER && out->answer && !is_none(out->answer) &&
		     out->answer[strspn(out->answer, " \t\r\n")] != '\0';
	if (l.repl) {
		struct repl_stats st;
		repl_stats(l.repl, &st);
		out->restarts = st.restarts;
		repl_free(l.repl);
	}
	set_warning(&l);
	if (rc == 0 && out->stop == RLM_STOP_ERROR)
		rc = rlm_err_set(err, RLM_EINVAL, "%s",
				 out->stop_detail ? out->stop_detail : "failed");
	for (size_t i = 0; i < l.n_msgs; i++)
		free((void *)(uintptr_t)l.msgs[i].text);
	free(l.msgs);
	free(l.content);
	free(l.last_error);
	calls_release(&l.c);
	out->solve_ns = now_ns() - start;
	if (rc && caller_err)
		*caller_err = local;
	return rc;
}
