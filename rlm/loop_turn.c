/* SPDX-License-Identifier: MIT */
/* rlm/loop_turn.c -- one turn of the RLM loop: the root model's reply,
 * its code run in the REPL worker, and the next user message.
 *
 * DESIGN
 * A turn parses the reply (rlm/reply.h), runs its ```repl blocks in order
 * until one sets answer["ready"], then honours a FINAL / FINAL_VAR written
 * in the text, and answers with the blocks' outputs (or a nudge when there
 * was no code). The last call, after max_iterations turns, takes a FINAL
 * in its text first and runs its code only after.
 *
 * With an answer schema (docs/structured.md) every answer made ready goes
 * through the worker, which checks it: a FINAL(text) too (repl_final). A
 * refused one is an error of its turn: the model is shown why and goes on.
 */
#include "loop_int.h"
#include "reply.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

/* Was the reply cut off at the output token limit? "length" is the
 * OpenAI-compatible finish reason, "max_tokens" Anthropic's stop reason. */
static bool cut_off(const char *finish)
{
	return finish && (strcmp(finish, "length") == 0 || strcmp(finish, "max_tokens") == 0);
}

/* s[0..len) trimmed of blanks, in a fresh string. */
static char *trim_dup(const char *s, size_t len)
{
	text_trim(&s, &len);
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
	while (end && text_is_space(s[end - 1]))
		end--;
	start = end;
	while (start && s[start - 1] != '\n')
		start--;
	if (end - start > 200)
		end = start + text_utf8_floor(s + start, 200);
	return xstrndup(s + start, end - start);
}

/* ---- running code ---- */

/* Handle a repl_exec / repl_final_var outcome common to both: content,
 * restarts, limits. Returns a negative code for a dead worker. */
static int exec_outcome(struct loop *l, int rc, const struct repl_result *res, struct rlm_err *err)
{
	if (res->content && *res->content) {
		free(l->content);
		l->content = xstrdup(res->content);
	}
	if (res->vars) {
		/* the names a compaction's summary tells the model are kept */
		struct buf v = BUF_INIT;
		for (size_t i = 0; res->vars[i]; i++)
			buf_printf(&v, "%s%s", i ? ", " : "", res->vars[i]);
		free(l->vars);
		l->vars = buf_detach(&v, NULL);
	}
	if (res->restarted) {
		static const char m[] = "the REPL worker was restarted: its variables are gone and "
					"`context` was reloaded";
		static const char ms[] = "the REPL worker was restarted: its variables are gone, "
					 "`context` was reloaded and the setup code runs again";
		if (l->o->setup_code)
			rlm__loop_emit(l, "notice", ms, sizeof(ms) - 1);
		else
			rlm__loop_emit(l, "notice", m, sizeof(m) - 1);
		/* what it held is lost: a failure under the solve */
		pthread_mutex_lock(&l->c.mu);
		rlm__failure_add(l->out, "worker", l->node, l->depth,
				 res->interrupted ? "the REPL worker did not stop at the time "
						    "limit and was restarted; its variables are lost"
						  : "the REPL worker was killed and restarted; its "
						    "variables are lost");
		pthread_mutex_unlock(&l->c.mu);
	}
	if (rc == RLM_ETIMEOUT) {
		rlm__calls_timeout(&l->c, "while code was running");
	} else if (rc == RLM_ECANCEL) {
		/* The caller's cancel, or a limit another node met (the
		 * tree's stop, which the worker watches too). */
		if (rlm__calls_cancelled(&l->c) || !rlm__calls_adopt(&l->c))
			rlm__calls_stop(&l->c, RLM_STOP_CANCEL, "cancelled by the caller");
	} else if (rc < 0) {
		rlm__calls_stop(&l->c, RLM_STOP_ERROR, "the REPL worker failed: %s",
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
	else if (!res->made)
		buf_puts(outs, "(no output)");
	/* As the reference does: the variables the block made, last. */
	if (res->made)
		buf_printf(outs, "%sREPL variables: %s", len ? "\n" : "", res->made);
}

/* The "output" event of an exec: what the model is shown (with the
 * variables it made, as add_section shows them), and where in it the
 * error begins when the code raised (the JSONL export's stderr). */
static void emit_output(struct loop *l, const struct repl_result *res)
{
	char data[48];
	bool at = res->error && res->error_at < res->len;
	struct buf b = BUF_INIT;
	size_t len = res->len;
	if (at)
		snprintf(data, sizeof(data), "{\"error_at\":%zu}", res->error_at);
	if (!res->made) {
		rlm__loop_emit_data(l, "output", res->len ? res->output : "(no output)",
				    res->len ? res->len : 11, at ? data : NULL);
		return;
	}
	while (len && res->output[len - 1] == '\n')
		len--;
	buf_append(&b, res->output, len);
	buf_printf(&b, "%sREPL variables: %s\n", len ? "\n" : "", res->made);
	rlm__loop_emit_data(l, "output", b.p, b.len, at ? data : NULL);
	buf_release(&b);
}

/* res refused an answer under the schema: keep why, for the stop's
 * detail, and make it the turn's error line. */
static void note_invalid(struct loop *l, const struct repl_result *res)
{
	const char *nl;
	if (!res->invalid)
		return;
	l->turn_invalid = true;
	free(l->invalid);
	l->invalid = xstrdup(res->invalid);
	nl = strchr(res->invalid, '\n');
	free(l->last_error);
	l->last_error = xasprintf("the answer is not valid under the schema: %.*s",
				  (int)(nl ? (size_t)(nl - res->invalid) : strlen(res->invalid)),
				  res->invalid);
}

/* Keep the sources of the answer res made ready, for check_sources. */
static void take_sources(struct loop *l, struct repl_result *res)
{
	for (size_t i = 0; i < l->n_sources; i++)
		free(l->sources[i].doc), free(l->sources[i].quote);
	free(l->sources);
	l->sources = res->sources;
	l->n_sources = res->n_sources;
	res->sources = NULL;
	res->n_sources = 0;
}

/* The answer is out->answer: its sources, those found in the node's
 * context; the others are named in a notice and counted. */
static void check_sources(struct loop *l)
{
	struct rlm_result *out = l->out;
	struct buf why = BUF_INIT;
	size_t dropped;
	rlm__sources_free(out->sources, out->n_sources);
	out->sources = NULL;
	out->n_sources = 0;
	if (!l->n_sources)
		return;
	dropped = rlm__sources_check(l->c.ctx, l->sources, l->n_sources, &out->sources,
				     &out->n_sources, &why);
	out->sources_dropped += dropped;
	if (dropped) {
		char *m = xasprintf("%zu of the answer's %zu sources %s dropped: not found in the "
				    "context (%.*s)",
				    dropped, l->n_sources, dropped == 1 ? "was" : "were",
				    (int)why.len, why.p);
		rlm__loop_emit(l, "notice", m, strlen(m));
		free(m);
	}
	buf_release(&why);
	take_sources(l, &(struct repl_result){0});
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
		/* A worker restarted since the setup code last ran has lost
		 * what it defined: run it again before the model's code. */
		if ((rc = rlm__loop_setup(l, err)) < 0) {
			free(code);
			rlm__calls_stop(&l->c, RLM_STOP_ERROR, "%s",
					err->msg[0] ? err->msg : rlm_strerror(rc));
			return rc;
		}
		rlm__loop_emit(l, "code", code, clen);
		rlm__loop_progress(l, "exec", i, rp->n_blocks);
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
			emit_output(l, &res);
			*ready = true;
			*answer = xstrdup(res.answer ? res.answer : "");
			take_sources(l, &res);
			repl_result_release(&res);
			return 0;
		}
		if (res.error || res.restarted) {
			*error_turn = true;
			free(l->last_error);
			l->last_error = res.len ? last_line(res.output, res.len) : NULL;
		}
		note_invalid(l, &res);
		if (rp->n_blocks == 1)
			snprintf(head, sizeof(head), "REPL output:");
		else
			snprintf(head, sizeof(head), "REPL output (block %zu of %zu):", i + 1,
				 rp->n_blocks);
		add_section(outs, head, &res);
		emit_output(l, &res);
		repl_result_release(&res);
		if (rlm__calls_adopt(&l->c))
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
		take_sources(l, &res);
	} else if (!l->c.stopping) {
		head = xasprintf("FINAL_VAR(%s):", name);
		add_section(outs, head, &res);
		emit_output(l, &res);
		free(head);
	}
	note_invalid(l, &res);
	repl_result_release(&res);
	free(name);
	return 0;
}

/* FINAL(text) of the reply: without a schema, the answer as it is; with
 * one, checked by the worker (repl_final): *ready and *answer (compact
 * JSON) when valid, else why goes into outs (and *error_turn). */
static int final_text(struct loop *l, const char *t, const struct reply *rp, struct buf *outs,
		      bool *error_turn, bool *ready, char **answer, struct rlm_err *err)
{
	struct repl_result res;
	int rc;
	if (!l->o->schema_json) {
		*answer = xstrndup(t + rp->final_off, rp->final_len);
		*ready = true;
		return 0;
	}
	memset(&res, 0, sizeof(res));
	rc = repl_final(l->repl, t + rp->final_off, rp->final_len, l->budget->deadline_ns, &res,
			err);
	if (rc == RLM_ETOOBIG) {
		res.error = true;
		res.invalid = xstrdup("the FINAL(...) answer is too large to check");
		res.output = xstrdup(res.invalid);
		res.len = strlen(res.output);
		rc = 0;
	}
	if (exec_outcome(l, rc, &res, err)) {
		repl_result_release(&res);
		return rc;
	}
	if (res.ready) {
		*ready = true;
		*answer = xstrdup(res.answer ? res.answer : "");
	} else if (!l->c.stopping) {
		add_section(outs, "FINAL(...):", &res);
		emit_output(l, &res);
		*error_turn = true;
	}
	note_invalid(l, &res);
	repl_result_release(&res);
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
	s = trim_dup(b.p, b.len);
	buf_release(&b);
	if (!*s) {
		free(s);
		return NULL;
	}
	return s;
}

int rlm__loop_turn(struct loop *l, bool last, struct rlm_err *err)
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
	l->turn_invalid = false;
	llm_call_release(&l->root);
	rlm__loop_emit(l, "reply", text, len);
	rlm_reply_parse(text, len, l->o->python_fences, cut, &rp);
	buf_init(&outs, 0);

	/* The last call: a FINAL in the text first, its code only after. */
	if (last && rp.final == REPLY_FINAL)
		rc = final_text(l, text, &rp, &outs, &error_turn, &ready, &answer, err);
	if (!rc && !ready)
		rc = run_blocks(l, text, &rp, &outs, &error_turn, &ready, &answer, err);
	if (!rc && !ready && !l->c.stopping && rp.final == REPLY_FINAL && !last)
		rc = final_text(l, text, &rp, &outs, &error_turn, &ready, &answer, err);
	if (!rc && !ready && !l->c.stopping && rp.final == REPLY_FINAL_VAR)
		rc = final_var(l, text, &rp, &outs, &ready, &answer, err);
	if (rc)
		goto out;
	/* a refused answer (FINAL_VAR's too) is an error turn: max_errors
	 * bounds a model that keeps giving invalid ones */
	error_turn = error_turn || l->turn_invalid;

	if (last) {
		/* A limit hit by its code keeps its reason (the content, if any,
		 * is the answer); else the answer is what the call gave. The
		 * prose of a reply that wrote code instead ("Let me check
		 * once more:") does not beat an answer["content"] set before. */
		out->answer = answer;
		answer = NULL;
		l->answer_valid = ready && out->answer && l->o->schema_json;
		if (ready && out->answer)
			check_sources(l);
		if (!out->answer && !l->c.stopping && rp.final != REPLY_FINAL_VAR &&
		    !((rp.n_blocks || l->o->schema_json) && l->content))
			out->answer = prose_of(text, len, &rp);
		if (!l->c.stopping)
			rlm__calls_stop(
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
		l->answer_valid = l->o->schema_json != NULL;
		check_sources(l);
		/* A real answer wins over a limit its own exec ran into. */
		l->c.stopping = false;
		free(l->c.stop_detail);
		l->c.stop_detail = NULL;
		rlm__calls_stop(&l->c, RLM_STOP_ANSWER, "the answer is ready");
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
			rlm__calls_stop(&l->c, RLM_STOP_ERRORS,
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
		rc = rlm__loop_render("repl_last.txt", v, 3, &msg, &msg_len, err);
	} else if (!outs.len) {
		struct prompt_var v[3] = {
		    {"why",
		     cut ? "Your reply was cut off at the output token limit before any ```repl "
			   "block was complete, so nothing ran; write shorter replies."
		     : text_is_blank(text, len) ? "Your reply was empty, so nothing ran."
		     : rp.other_fences	? "Your reply had no ```repl block (only ```repl blocks "
					  "run, not other fences), so nothing ran."
					: "Your reply had no ```repl block, so nothing ran.",
		     0},
		    {"turn", turn_s, 0},
		    {"max_iterations", max_s, 0},
		};
		rc = rlm__loop_render("repl_nocode.txt", v, 3, &msg, &msg_len, err);
		if (!rc)
			rlm__loop_emit(l, "notice", msg, msg_len);
	} else {
		struct prompt_var v[3] = {
		    {"outputs", outs.p, outs.len},
		    {"turn", turn_s, 0},
		    {"max_iterations", max_s, 0},
		};
		rc = rlm__loop_render("repl_next.txt", v, 3, &msg, &msg_len, err);
	}
	if (rc) {
		rlm__calls_stop(&l->c, RLM_STOP_ERROR, "%s", err->msg);
		goto out;
	}
	if (text_is_blank(text, len)) {
		/* Providers refuse an empty assistant message (Anthropic: "text
		 * content blocks must be non-empty"); the history needs one. */
		free(text);
		len = strlen("(empty reply)");
		text = xstrndup("(empty reply)", len);
	}
	rlm__loop_add_msg(l, LLM_ASSISTANT, text, len);
	text = NULL;
	rlm__loop_add_msg(l, LLM_USER, msg, msg_len);
	msg = NULL;
	rc = TURN_GO_ON;
out:
	if (rc == TURN_DONE && l->keep_final && text) {
		/* the session's conversation goes on after this reply */
		l->final_reply = text;
		l->final_len = len;
		text = NULL;
	}
	take_sources(l, &(struct repl_result){0});
	free(answer);
	free(msg);
	free(text);
	rlm_reply_release(&rp);
	buf_release(&outs);
	return rc;
}
