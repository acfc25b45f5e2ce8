/* SPDX-License-Identifier: MIT */
/* rlm/loop_session.c -- the root node of a session's solve: it takes the
 * session's worker and conversation at its start and gives them back at
 * its end (rlm/session.c keeps them between solves).
 *
 * DESIGN
 * The conversation carries on: after the first question's, each question
 * comes as one more user message (prompts/repl_session_next.txt) naming
 * the variables the worker holds (SHOW_VARS, run before the message is
 * written) and the contexts added since the model was last told, so the
 * model reuses what it built; the prefix sent with each root call still
 * never changes, and compaction (rlm/loop.c) keeps a long session under
 * the window. The reply that ended a question stays in the conversation;
 * a question that ended without one (a limit) gets a short assistant
 * message saying so, since roles must alternate.
 */
#include "loop_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char first_note[] =
    "\n\nThis is the first question of a session: the REPL and its variables stay for the "
    "questions that follow, so what you build now (an index, parsed records) can be reused.";

/* " More contexts: `context_1` is ...; `context_2` is ...." for the
 * contexts the conversation was not told of, or "" (fresh either way). */
static char *more_contexts(struct rlm__sess *s)
{
	struct buf b = BUF_INIT;
	if (s->n_told >= s->n_extra)
		return xstrdup("");
	buf_puts(&b, " More contexts:");
	for (size_t i = s->n_told; i < s->n_extra; i++) {
		const struct corpus *c = s->extra[i];
		char *d = rlm__loop_context_desc(c, c->kind != CORPUS_TEXT);
		buf_printf(&b, "%s `context_%zu` is %s (its documents are named by documents_%zu, a "
			       "list of dicts)",
			   i == s->n_told ? "" : ";", i + 1, d, i + 1);
		free(d);
	}
	buf_putc(&b, '.');
	s->n_told = s->n_extra;
	return buf_detach(&b, NULL);
}

/* Both NULL, or the same text. */
static bool streq_null(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Take the session's worker into l: its calls are now this solve's. */
static int take_worker(struct loop *l, struct rlm__sess *s, struct rlm_err *err)
{
	struct repl_stats st;
	l->repl = s->repl;
	s->repl = NULL;
	repl_rebind(l->repl, rlm__calls_on_call, &l->c, l->o->cancel, &l->nodes->stopping);
	l->c.repl = l->repl;
	repl_stats(l->repl, &st);
	l->restarts0 = st.restarts;
	/* The setup code ran in this worker: not again, unless this
	 * question brings other code. */
	l->setup_at = streq_null(s->setup_code, l->o->setup_code) ? s->setup_at : -1;
	/* This question's answer schema, or none (the last one's goes). */
	if (repl_set_schema(l->repl, l->o->schema_json, err))
		return err->code ? err->code : RLM_EINVAL;
	if (s->have_sandbox) {
		l->out->sandbox = xmalloc(sizeof(*l->out->sandbox));
		*l->out->sandbox = s->sandbox;
		rlm__loop_emit(l, "sandbox", s->sandbox.line, strlen(s->sandbox.line));
	}
	return rlm__sess_put(s, l->repl, l->budget->deadline_ns, err);
}

int rlm__loop_session_open(struct loop *l, const char *question, bool *first, struct rlm_err *err)
{
	struct rlm__sess *s = l->o->session_;
	char num[16], max_s[16], *vars = NULL, *more, *text;
	size_t len;
	int rc = 0;
	l->keep_final = true;
	*first = s->n_msgs == 0;
	if (*first)
		return 0;
	/* The conversation is this node's now. */
	l->msgs = s->msgs;
	l->n_msgs = s->n_msgs;
	l->cap_msgs = s->cap_msgs;
	s->msgs = NULL;
	s->n_msgs = s->cap_msgs = 0;
	if (l->msgs[l->n_msgs - 1].role != LLM_ASSISTANT) {
		static const char m[] = "(no reply: that question ended on a limit before an answer)";
		rlm__loop_add_msg(l, LLM_ASSISTANT, xstrdup(m), sizeof(m) - 1);
	}
	if (s->repl) {
		rc = take_worker(l, s, err);
		if (!rc && !(vars = rlm__sess_vars(l->repl, l->budget->deadline_ns, err)))
			rc = RLM_EINVAL;
		if (rc) {
			/* It died between questions, or cannot take its state
			 * back: a new one starts with the first root call (and
			 * gets the contexts and the history), and the model is
			 * told. */
			char *m = xasprintf("the REPL worker had stopped (%s) and is started again: "
					    "the variables of earlier questions are gone; `history` "
					    "and the contexts are back",
					    err->msg[0] ? err->msg : rlm_strerror(rc));
			rlm__loop_emit(l, "notice", m, strlen(m));
			free(m);
			repl_free(l->repl);
			l->repl = NULL;
			l->c.repl = NULL;
			l->restarts0 = 0; /* the next worker counts from 0 */
			free(l->out->sandbox);
			l->out->sandbox = NULL;
			s->restarts++;
			free(vars);
			vars = xstrdup("none: the REPL worker had stopped and was started again, so "
				       "the variables of earlier questions are gone");
			*err = (struct rlm_err){0, ""};
			rc = 0;
		}
	}
	snprintf(num, sizeof(num), "%d", s->questions);
	snprintf(max_s, sizeof(max_s), "%d", l->max_iterations);
	more = more_contexts(s);
	{
		struct prompt_var v[5] = {{"number", num, 0},
					  {"question", question, 0},
					  {"vars", vars && *vars ? vars : "none yet", 0},
					  {"contexts", more, 0},
					  {"max_iterations", max_s, 0}};
		rc = rlm__loop_render("repl_session_next.txt", v, 5, &text, &len, err);
	}
	if (!rc && (l->o->schema_json || s->schema_told)) {
		/* The schema, or that the first question's does not hold. */
		char *para = NULL, *both;
		size_t plen;
		if (l->o->schema_json)
			rc = rlm__loop_schema_paragraph(l, &para, &plen, err);
		if (!rc) {
			both = xasprintf("%s\n\n%s", text,
					 para ? para
					      : "This question's answer is plain text: the answer "
						"schema shown at the start does not apply to it.");
			free(text);
			text = both;
			len = strlen(both);
		} else {
			free(text);
		}
		free(para);
	}
	if (!rc)
		rlm__loop_add_msg(l, LLM_USER, text, len);
	free(more);
	free(vars);
	return rc;
}

void rlm__loop_session_first(struct loop *l)
{
	struct rlm__sess *s = l->o->session_;
	struct llm_msg *m = &l->msgs[1];
	char *more = more_contexts(s);
	s->schema_told = l->o->schema_json != NULL;
	char *t = xasprintf("%.*s%s%s", (int)m->len, m->text, *more ? "\n\n" : "",
			    *more ? more + 1 : "");
	char *u = xasprintf("%s%s", t, first_note);
	free(t);
	free(more);
	free((void *)(uintptr_t)m->text);
	m->text = u;
	m->len = strlen(u);
}

int rlm__loop_session_worker(struct loop *l, struct rlm_err *err)
{
	struct rlm__sess *s = l->o->session_;
	if (!s->have_sandbox && l->out->sandbox) {
		s->sandbox = *l->out->sandbox;
		s->have_sandbox = true;
	}
	s->put_restarts = -1;
	return rlm__sess_put(s, l->repl, l->budget->deadline_ns, err);
}

void rlm__loop_session_close(struct loop *l)
{
	struct rlm__sess *s = l->o->session_;
	if (l->final_reply) {
		if (text_is_blank(l->final_reply, l->final_len)) {
			free(l->final_reply);
			l->final_len = strlen("(empty reply)");
			l->final_reply = xstrdup("(empty reply)");
		}
		rlm__loop_add_msg(l, LLM_ASSISTANT, l->final_reply, l->final_len);
		l->final_reply = NULL;
	}
	if (l->repl) {
		struct repl_stats st;
		repl_stats(l->repl, &st);
		s->restarts += st.restarts - l->restarts0;
		s->setup_at = l->setup_at;
		if (!streq_null(s->setup_code, l->o->setup_code)) {
			free(s->setup_code);
			s->setup_code = l->o->setup_code ? xstrdup(l->o->setup_code) : NULL;
		}
		/* Nothing of this solve may be called once it has returned. */
		repl_rebind(l->repl, NULL, NULL, NULL, NULL);
		s->repl = l->repl;
		l->repl = NULL;
	}
	/* A conversation without its first two messages is none. */
	if (l->n_msgs >= 2) {
		s->msgs = l->msgs;
		s->n_msgs = l->n_msgs;
		s->cap_msgs = l->cap_msgs;
		l->msgs = NULL;
		l->n_msgs = l->cap_msgs = 0;
	}
}
