/* SPDX-License-Identifier: MIT */
/* api/api_session.c -- sessions through librlm's API (docs/sessions.md):
 * one REPL worker and conversation across questions, over rlm_session_*.
 * A session owns copies of its contexts and the options it was opened
 * with (what its rlm_opts point to). */
#include "api_int.h"
#include "../common/json.h"

#include <stdlib.h>
#include <string.h>

struct rlm_api_session {
	struct rlm_api *a;	/* borrowed: outlives the session */
	struct rlm_api__opts o; /* the session's options (ro points into it) */
	struct rlm_opts ro;
	struct rlm_session *s;
	struct corpus **ctxs; /* owned: [0] the first, then context_1, ... */
	size_t n_ctxs;
};

static void push_ctx(struct rlm_api_session *s, struct corpus *c)
{
	s->ctxs = xrealloc(s->ctxs, (s->n_ctxs + 1) * sizeof(*s->ctxs));
	s->ctxs[s->n_ctxs++] = c;
}

struct rlm_api_session *rlm_api_session_new(struct rlm_api *a, const char *ctx, size_t ctx_len,
					    const char *ctx_kind, const char *opts_json, char **err)
{
	struct rlm_err e = {0, ""};
	struct rlm_api_session *s;
	struct corpus *c = NULL;
	if (err)
		*err = NULL;
	if (!a) {
		rlm_err_set(&e, RLM_EINVAL, "no client");
		rlm_api__err(err, &e);
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->a = a;
	if (rlm_api__opts_parse(opts_json, &s->o, &e))
		goto fail;
	if (s->o.ro.strategy != RLM_REPL) {
		rlm_err_set(&e, RLM_EINVAL, "options: a session needs the \"repl\" strategy");
		goto fail;
	}
	if (rlm_api__context(ctx, ctx_len, ctx_kind, false, &c, &e))
		goto fail;
	push_ctx(s, c);
	rlm_api__opts_apply(a, &s->o, &s->ro);
	if (s->o.ro.schema_json && rlm_schema_check(&s->ro, &e)) {
		rlm_err_prefix(&e, "options: 'schema'");
		goto fail;
	}
	if (rlm_session_new(&s->ro, c, &s->s, &e))
		goto fail;
	return s;
fail:
	rlm_api__err(err, &e);
	rlm_api_session_free(s);
	return NULL;
}

int rlm_api_session_add_context(struct rlm_api_session *s, const char *ctx, size_t ctx_len,
				const char *ctx_kind, char **err)
{
	struct rlm_err e = {0, ""};
	struct corpus *c = NULL;
	int n = 0, rc;
	if (err)
		*err = NULL;
	if (!s) {
		rc = rlm_err_set(&e, RLM_EINVAL, "no session");
		rlm_api__err(err, &e);
		return rc;
	}
	if ((rc = rlm_api__context(ctx, ctx_len, ctx_kind, false, &c, &e)) ||
	    (rc = rlm_session_add_context(s->s, c, &n, &e))) {
		corpus_free(c);
		rlm_api__err(err, &e);
		return rc;
	}
	push_ctx(s, c);
	return n;
}

char *rlm_api_session_solve(struct rlm_api_session *s, const char *question, const char *opts_json,
			    struct rlm_api_job *job, rlm_api_event_fn *ev, void *ev_arg, char **err)
{
	struct rlm_err e = {0, ""};
	struct rlm_api__opts own, *o;
	struct rlm_api__events evs;
	struct rlm_result res = {0};
	struct rlm_opts ro;
	char *out, *at_end = NULL;
	int rc;
	if (err)
		*err = NULL;
	if (!s) {
		rlm_err_set(&e, RLM_EINVAL, "no session");
		rlm_api__err(err, &e);
		return NULL;
	}
	o = &s->o;
	memset(&own, 0, sizeof(own));
	if (opts_json) {
		if (rlm_api__opts_parse(opts_json, &own, &e)) {
			rlm_api__err(err, &e);
			return NULL;
		}
		o = &own;
	}
	if (question && (!*question || !text_utf8_valid(question, strlen(question), NULL))) {
		rlm_err_set(&e, RLM_EINVAL, "question: empty or not valid UTF-8");
		rlm_api__opts_release(&own);
		rlm_api__err(err, &e);
		return NULL;
	}
	if (!question && s->n_ctxs > 1)
		/* at the end of the newest context: context_N */
		question = at_end = xasprintf(
		    "The question is in `context_%zu`, at its end: that context is the user's "
		    "message, whose last part says what to answer. Read the end of "
		    "`context_%zu` first to find the question, then answer it from the "
		    "contexts.",
		    s->n_ctxs - 1, s->n_ctxs - 1);
	rlm_api__opts_apply(s->a, o, &ro);
	if (ro.max_cost > 0 &&
	    rlm_check_cost(ro.model, ro.sub_model, ro.max_cost, "'max_cost'", &e)) {
		rlm_api__opts_release(&own);
		free(at_end);
		rlm_api__err(err, &e);
		return NULL;
	}
	rlm_api__events_init(&evs, s->a, ev, ev_arg, o->detail_events);
	ro.event = rlm_api__event;
	ro.event_arg = &evs;
	ro.detail_events = true;
	ro.cancel = job ? &job->cancel : NULL;
	rc = rlm_session_solve(s->s, &ro, question ? question : RLM_QUESTION_AT_END, &res, &e);
	out = rlm_api__result(s->a, o, &ro, rc, &res, &e, &evs);
	rlm_api__events_release(&evs);
	rlm_result_release(&res);
	rlm_api__opts_release(&own);
	free(at_end);
	return out;
}

char *rlm_api_session_info(struct rlm_api_session *s)
{
	struct rlm_session_info in;
	cJSON *j;
	char *out;
	if (!s)
		return NULL;
	j = cJSON_CreateObject();
	rlm_session_info(s->s, &in);
	json_add_num(j, "questions", in.questions);
	json_add_num(j, "contexts", in.contexts);
	json_add_num(j, "pid", in.pid);
	json_add_num(j, "restarts", in.restarts);
	json_add_num(j, "rss_bytes", (double)in.rss_bytes);
	json_add_num(j, "conversation_bytes", (double)in.conversation_bytes);
	json_add_num(j, "compactions", in.compactions);
	json_add(j, "history", rlm_session_history_json(s->s));
	out = json_print(j);
	cJSON_Delete(j);
	return out;
}

void rlm_api_session_reset(struct rlm_api_session *s)
{
	if (s)
		rlm_session_reset(s->s);
}

void rlm_api_session_free(struct rlm_api_session *s)
{
	if (!s)
		return;
	rlm_session_free(s->s);
	for (size_t i = 0; i < s->n_ctxs; i++)
		corpus_free(s->ctxs[i]);
	free(s->ctxs);
	rlm_api__opts_release(&s->o);
	free(s);
}
