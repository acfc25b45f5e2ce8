/* SPDX-License-Identifier: MIT */
/* rlm/tree.c -- the tree strategy: split the context at natural boundaries,
 * ask every part the question in parallel, combine the partial answers.
 *
 * DESIGN
 * Parts are spans of the corpus buffer; nothing is copied until a part's
 * prompt is rendered, and at most `window` prompts exist at once, so a
 * 10M-token context costs the corpus plus window x part size, not twice the
 * corpus. The solving thread keeps the window full: it renders a prompt and
 * submits it; pool threads mark calls done and wake it. Answers are kept in
 * part order so the result does not depend on which call finished first.
 *
 * Partial answers of NONE are dropped. If none remain the answer is NONE
 * without another call; if one remains it is the answer. Otherwise the
 * partials are combined with one call, or, when they do not fit one call,
 * in groups whose answers are combined in turn, level by level.
 *
 * Limits are the repl strategy's (rlm/solve.c's budget): every call is
 * reserved against the budgets before it is sent (a part's call is a
 * sub-call, a combining call a root call), and the time limit cancels the
 * calls in flight. A limit stops the solve where it is: parts not asked are
 * counted unread, and the answer is what the partials give: combined when
 * the budget still allows the calls, else the partials themselves, one per
 * line; rlm_result.stop says which limit.
 */
#include "rlm.h"
#include "prompt.h"
#include "solve_int.h"
#include "../common/text.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_PROMPT "You are a careful reader. You answer strictly from the text you are given."

/* ---- splitting ---- */

/* Largest cut <= max in s[0..len) at a blank line, else a newline, else a
 * UTF-8 boundary; never 0 when len > 0. */
static size_t cut_point(const char *s, size_t len, size_t max)
{
	size_t lo, i;
	if (len <= max)
		return len;
	/* Search back at most a quarter of the part for a good boundary. */
	lo = max - max / 4;
	for (i = max; i > lo; i--)
		if (s[i - 1] == '\n' && i >= 2 && s[i - 2] == '\n')
			return i;
	for (i = max; i > lo; i--)
		if (s[i - 1] == '\n')
			return i;
	i = text_utf8_floor(s, max);
	return i ? i : max;
}

size_t rlm_split(const struct corpus *ctx, size_t max, struct rlm_span **parts)
{
	struct rlm_span *v = NULL;
	size_t n = 0, cap = 0;
	struct rlm_span cur = {0, 0, 0};
	bool open = false;
	if (max < 64)
		max = 64;
	for (size_t d = 0; d < ctx->n_docs; d++) {
		const struct corpus_doc *doc = &ctx->docs[d];
		size_t off = doc->off, left = doc->len;
		/* Docs are separated by one '\n' in the buffer, so consecutive small
		 * documents form one contiguous span. */
		if (open && cur.off + cur.len + 1 == off && cur.len + 1 + left <= max) {
			cur.len += 1 + left;
			continue;
		}
		if (open) {
			if (n == cap)
				v = xrealloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
			v[n++] = cur;
			open = false;
		}
		while (left > max) {
			size_t k = cut_point(ctx->buf + off, left, max);
			if (n == cap)
				v = xrealloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
			v[n++] = (struct rlm_span){off, k, d};
			off += k;
			left -= k;
		}
		if (left) {
			cur = (struct rlm_span){off, left, d};
			open = true;
		}
	}
	if (open) {
		if (n == cap)
			v = xrealloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
		v[n++] = cur;
	}
	*parts = v;
	return n;
}

/* ---- answers ---- */

/* s trimmed of white space, in a fresh string. */
static char *trim_dup(const char *s)
{
	size_t len = strlen(s);
	text_trim(&s, &len);
	return xstrndup(s, len);
}

/* Does part p cover document d of ctx? */
static bool covers(const struct corpus *ctx, const struct rlm_span *p, size_t d)
{
	return ctx->docs[d].off + ctx->docs[d].len > p->off || !ctx->docs[d].len;
}

/* The document of part p whose id is s[0..n), or SIZE_MAX. */
static size_t named_doc(const struct corpus *ctx, const struct rlm_span *p, const char *s,
			size_t n)
{
	for (size_t d = p->doc; d < ctx->n_docs && ctx->docs[d].off < p->off + p->len; d++)
		if (covers(ctx, p, d) && ctx->docs[d].id && strlen(ctx->docs[d].id) == n &&
		    memcmp(ctx->docs[d].id, s, n) == 0)
			return d;
	return SIZE_MAX;
}

/* Is answer nothing but ids of part p's documents (its lines, and the
 * comma-separated pieces of each, trimmed)? With out, those documents
 * become out's sources. */
static bool each_named(const struct corpus *ctx, const struct rlm_span *p, const char *answer,
		       struct rlm_result *out)
{
	const char *s = answer;
	bool any = false;
	while (*s) {
		size_t n = strcspn(s, ",\n");
		const char *t = s;
		size_t k = n, d;
		text_trim(&t, &k);
		if (k) {
			if ((d = named_doc(ctx, p, t, k)) == SIZE_MAX)
				return false;
			if (out)
				rlm__sources_add_doc(out, ctx, d);
			any = true;
		}
		s += n + (s[n] != '\0');
	}
	return any;
}

/* The documents part p covers become sources of the answer (its partial
 * answer is used): doc only, each once, in order; when the answer is
 * nothing but ids of them (a which-document answer), only those. */
static void cite_part(struct rlm_result *out, const struct corpus *ctx, const struct rlm_span *p,
		      const char *answer)
{
	if (each_named(ctx, p, answer, NULL)) {
		each_named(ctx, p, answer, out);
		return;
	}
	for (size_t d = p->doc; d < ctx->n_docs && ctx->docs[d].off < p->off + p->len; d++)
		if (covers(ctx, p, d))
			rlm__sources_add_doc(out, ctx, d);
}

/* ---- running a batch of calls with a bounded window ---- */

struct job;

/* Renders the prompt of item i into out. */
typedef int render_fn(struct job *j, size_t i, struct buf *out, struct rlm_err *err);

struct slot {
	struct llm_call call;
	struct llm_msg msgs[2];
	struct buf prompt;
	size_t item;
	int64_t est;   /* tokens reserved in the budget */
	double est_cost;
	struct job *job;
	struct slot *next_free;
};

/* The limits of one tree solve. */
struct tree_limits {
	struct rlm_budget budget;
	atomic_bool stop;     /* every call's cancel: the caller's cancel or
			       * the time limit */
	enum rlm_stop why;    /* RLM_STOP_ANSWER until a limit is met */
	char msg[256];        /* its words */
};

struct job {
	const struct rlm_opts *opts;
	struct tree_limits *lim;
	enum budget_kind kind;    /* of its calls: BUDGET_SUB, BUDGET_ROOT */
	struct llm_model *model;
	const char *question;
	const char *phase;
	int level;
	render_fn *render;
	const void *ctx;          /* what render reads */
	char **answers;           /* per item: reply, or NULL when failed */
	char **errors;            /* per item: error text, or NULL */
	size_t n, done;
	struct slot *slots, *free_slots;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rlm_result *res;
	int64_t t0;
	int first_rc;             /* rc of the first call that failed */
};

static void account(struct rlm_result *res, const struct llm_call *c)
{
	res->calls++;
	res->attempts += c->attempts;
	if (c->rc)
		res->failed_calls++;
	res->usage.input_tokens += c->usage.input_tokens;
	res->usage.output_tokens += c->usage.output_tokens;
	res->usage.cached_tokens += c->usage.cached_tokens;
	res->usage.cache_write_tokens += c->usage.cache_write_tokens;
	res->cost += c->cost;
	if (c->cached) {
		res->cache_hits++;
		res->saved_usage.input_tokens += c->usage.input_tokens;
		res->saved_usage.output_tokens += c->usage.output_tokens;
		res->saved_usage.cached_tokens += c->usage.cached_tokens;
		res->saved_usage.cache_write_tokens += c->usage.cache_write_tokens;
		res->saved_cost += c->cost;
	}
}

static void on_done(struct llm_call *c, void *arg)
{
	struct slot *s = arg;
	struct job *j = s->job;
	rlm__record_call(j->opts, NULL, 0, -1, 0, 0, c, true);
	rlm__budget_settle(&j->lim->budget, s->est, s->est_cost,
		      c->usage.input_tokens + c->usage.output_tokens, c->cost);
	pthread_mutex_lock(&j->mu);
	if (c->rc == 0) {
		j->answers[s->item] = c->text;
		c->text = NULL;
	} else {
		j->errors[s->item] = xstrdup(c->error ? c->error : rlm_strerror(c->rc));
		if (!j->first_rc)
			j->first_rc = c->rc;
	}
	account(j->res, c);
	llm_call_release(c);
	buf_release(&s->prompt);
	s->next_free = j->free_slots;
	j->free_slots = s;
	j->done++;
	if (j->opts->progress) {
		struct rlm_progress p = {j->phase, j->done, j->n, j->level, time_now_ns() - j->t0};
		j->opts->progress(&p, j->opts->progress_arg);
	}
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* The first limit met stops the solve (under j->mu). */
static void limit_met(struct job *j, enum rlm_stop why, const char *msg)
{
	if (j->lim->why != RLM_STOP_ANSWER)
		return;
	j->lim->why = why;
	snprintf(j->lim->msg, sizeof(j->lim->msg), "%s", msg);
	if (why == RLM_STOP_TIMEOUT)
		atomic_store(&j->lim->stop, true); /* calls in flight end now */
}

static bool caller_cancelled(const struct rlm_opts *o)
{
	return o->cancel && atomic_load(o->cancel);
}

/* The time limit, once past, stops the solve (under j->mu). */
static void time_check(struct job *j)
{
	char d[32], msg[64];
	if (j->lim->why != RLM_STOP_ANSWER || !rlm__budget_expired(&j->lim->budget, time_now_ns()))
		return;
	snprintf(msg, sizeof(msg), "time limit of %s reached",
		 text_fmt_duration(d, sizeof(d), j->lim->budget.timeout_ns));
	limit_met(j, RLM_STOP_TIMEOUT, msg);
}

/* Wait (under j->mu) for a call to end, or until the time limit, or a
 * tick to look at the caller's cancel flag. */
static void job_wait(struct job *j)
{
	int64_t until = time_now_ns() + 50000000LL, dl = j->lim->budget.deadline_ns;
	struct timespec ts;
	if (dl && dl < until)
		until = dl;
	ts.tv_sec = (time_t)(until / 1000000000LL);
	ts.tv_nsec = (long)(until % 1000000000LL);
	pthread_cond_timedwait(&j->cv, &j->mu, &ts);
	if (caller_cancelled(j->opts))
		atomic_store(&j->lim->stop, true);
	time_check(j);
}

/* Perform items [0, n) of j with at most the window in flight. Returns 0,
 * or an error from rendering or the caller's cancel (calls already
 * submitted are waited for). A limit met is no error: the items not sent
 * get an error saying so, and j->lim says which. */
static int run_job(struct job *j, struct rlm_err *err)
{
	size_t window = j->opts->window ? j->opts->window : 256, next = 0;
	int rc = 0;
	pthread_condattr_t ca;
	j->answers = xcalloc(j->n, sizeof(char *));
	j->errors = xcalloc(j->n, sizeof(char *));
	window = RLM_MIN(window, j->n);
	j->slots = xcalloc(window, sizeof(*j->slots));
	for (size_t i = 0; i < window; i++) {
		j->slots[i].next_free = j->free_slots;
		j->free_slots = &j->slots[i];
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&j->mu);
	while (j->done < next || next < j->n) {
		struct slot *s;
		enum rlm_stop why;
		char msg[256];
		if (next < j->n && !rc && caller_cancelled(j->opts)) {
			atomic_store(&j->lim->stop, true);
			rc = rlm_err_set(err, RLM_ECANCEL, "cancelled");
		}
		if (next < j->n && !rc)
			time_check(j);
		if (next < j->n && !rc && j->lim->why != RLM_STOP_ANSWER) {
			/* a limit: the rest is not sent */
			for (; next < j->n; next++) {
				j->errors[next] = xasprintf("not sent: %s", j->lim->msg);
				j->done++;
			}
			continue;
		}
		if (next == j->n || !j->free_slots || rc) {
			if (rc && j->done == next)
				break;
			job_wait(j);
			continue;
		}
		s = j->free_slots;
		j->free_slots = s->next_free;
		pthread_mutex_unlock(&j->mu);

		s->job = j;
		s->item = next;
		buf_init(&s->prompt, 0);
		rc = j->render(j, next, &s->prompt, err);
		if (!rc) {
			s->est = llm_estimate_tokens(strlen(SYSTEM_PROMPT) + s->prompt.len);
			s->est_cost = llm_model_input_cost(j->model, s->est);
		}
		pthread_mutex_lock(&j->mu);
		if (!rc && !rlm__budget_reserve(&j->lim->budget, s->est, s->est_cost, j->kind, &why, msg,
					   sizeof(msg))) {
			limit_met(j, why, msg);
			rc = -1; /* not an error: put the slot back, then stop */
		}
		if (rc) {
			buf_release(&s->prompt);
			s->next_free = j->free_slots;
			j->free_slots = s;
			if (rc == -1)
				rc = 0;
			continue;
		}
		next++;
		pthread_mutex_unlock(&j->mu);
		s->msgs[0] = (struct llm_msg){LLM_SYSTEM, SYSTEM_PROMPT, strlen(SYSTEM_PROMPT)};
		s->msgs[1] = (struct llm_msg){LLM_USER, s->prompt.p, s->prompt.len};
		llm_call_init(&s->call, j->model, s->msgs, 2);
		s->call.params = j->opts->params;
		s->call.cancel = &j->lim->stop;
		s->call.front = rlm__record_front(j->opts);
		llm_pool_submit(j->opts->pool, &s->call, on_done, s);
		pthread_mutex_lock(&j->mu);
	}
	pthread_mutex_unlock(&j->mu);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->slots);
	j->slots = NULL;
	return rc;
}

static void job_release(struct job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->answers ? j->answers[i] : NULL);
		free(j->errors ? j->errors[i] : NULL);
	}
	free(j->answers);
	free(j->errors);
	j->answers = j->errors = NULL;
}

/* ---- leaves ---- */

struct leaf_ctx {
	const struct corpus *corpus;
	const struct rlm_span *parts;
};

/* Part p of ctx's documents with each document's piece headed by a line
 * "[doc: ID]", so that a which-document question can be answered and the
 * reader knows where one document ends. */
static void headed_text(const struct corpus *ctx, const struct rlm_span *p, struct buf *out)
{
	size_t end = p->off + p->len;
	for (size_t d = p->doc; d < ctx->n_docs && ctx->docs[d].off <= end; d++) {
		const struct corpus_doc *doc = &ctx->docs[d];
		size_t a = RLM_MAX(doc->off, p->off), b = RLM_MIN(doc->off + doc->len, end);
		if (b < a || (b == a && doc->len))
			continue;
		buf_printf(out, "%s[doc: %s]\n", out->len ? "\n" : "", doc->id ? doc->id : "?");
		buf_append(out, ctx->buf + a, b - a);
	}
}

/* A corpus of several documents: its parts are headed (headed_text). */
static bool has_names(const struct corpus *ctx)
{
	return ctx->kind != CORPUS_TEXT && ctx->n_docs > 1;
}

static int render_leaf(struct job *j, size_t i, struct buf *out, struct rlm_err *err)
{
	const struct leaf_ctx *lc = j->ctx;
	struct buf text = BUF_INIT;
	struct prompt_var vars[3] = {
		{"question", j->question, 0},
		{"text", lc->corpus->buf + lc->parts[i].off, lc->parts[i].len},
		{"doc_note", "", 0},
	};
	int rc;
	if (lc->parts[i].len == 0)
		vars[1].val = "";
	if (has_names(lc->corpus)) {
		headed_text(lc->corpus, &lc->parts[i], &text);
		vars[1] = (struct prompt_var){"text", text.p, text.len};
		vars[2].val = " Each document in the text starts with a line [doc: ID]: when the "
			      "question asks which document, file or record holds something, reply "
			      "with its ID.";
	}
	rc = rlm_prompt_render("tree_leaf.txt", vars, 3, out, err);
	buf_release(&text);
	return rc;
}

/* ---- combining ---- */

struct group_ctx {
	char **partials;     /* all partial answers of this level */
	size_t *start;       /* group g holds partials [start[g], start[g+1]) */
};

static int render_combine(struct job *j, size_t g, struct buf *out, struct rlm_err *err)
{
	const struct group_ctx *gc = j->ctx;
	struct buf list;
	int rc;
	struct prompt_var vars[2];
	buf_init(&list, 0);
	for (size_t k = gc->start[g]; k < gc->start[g + 1]; k++)
		buf_printf(&list, "[%zu] %s\n", k - gc->start[g] + 1, gc->partials[k]);
	vars[0] = (struct prompt_var){"question", j->question, 0};
	vars[1] = (struct prompt_var){"partials", list.p, list.len};
	rc = rlm_prompt_render("tree_combine.txt", vars, 2, out, err);
	buf_release(&list);
	return rc;
}

/* Group partials so that each group's text fits max bytes, with at least
 * two per group so that every level shrinks. A trailing single partial
 * joins the group before it, which may then pass max by up to max / 2:
 * still inside the window, as max is at most half of it. A partial longer
 * than max / 2 is first cut to that on a UTF-8 boundary, so that any two
 * of them fit one call. Returns the number of groups. */
static size_t group_partials(char **partials, size_t n, size_t max, size_t **start)
{
	size_t *s = xcalloc(n + 1, sizeof(*s)), g = 0, used = 0, in_group = 0;
	for (size_t k = 0; k < n; k++) {
		size_t len = strlen(partials[k]);
		if (len > max / 2) {
			len = text_utf8_floor(partials[k], max / 2);
			partials[k][len] = '\0';
		}
		len += 8;
		if (in_group >= 2 && used + len > max) {
			s[++g] = k;
			used = 0;
			in_group = 0;
		}
		used += len;
		in_group++;
	}
	if (in_group == 1 && g > 0)
		s[g] = n; /* extend the previous group over the last partial */
	else
		s[++g] = n;
	*start = s;
	return g;
}

static bool is_cancelled(const struct rlm_opts *o)
{
	return o->cancel && atomic_load(o->cancel);
}

int rlm__tree_solve(const struct rlm_opts *opts, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err)
{
	struct llm_model *sub = opts->sub_model ? opts->sub_model : opts->model;
	struct rlm_span *parts = NULL;
	struct leaf_ctx lc;
	struct job leaves = {0};
	struct tree_limits lim;
	char **partials = NULL;
	size_t n_partials = 0, leaf_chars = opts->leaf_chars;
	int64_t t0 = time_now_ns();
	int rc = 0;

	memset(out, 0, sizeof(*out));
	rlm__budget_init(&lim.budget, opts, t0);
	atomic_init(&lim.stop, false);
	lim.why = RLM_STOP_ANSWER;
	lim.msg[0] = '\0';
	if (!question || !*question)
		return rlm_err_set(err, RLM_EINVAL, "the question is empty");
	if (!leaf_chars) {
		long window = llm_model_context_window(sub);
		leaf_chars = (size_t)RLM_MIN((int64_t)window * 4 / 2, (int64_t)200000);
	}
	out->leaf_chars = leaf_chars;
	out->leaves = rlm_split(ctx, leaf_chars, &parts);
	if (out->leaves == 0) {
		rc = rlm_err_set(err, RLM_EINVAL, "the context is empty");
		goto out;
	}

	lc = (struct leaf_ctx){ctx, parts};
	leaves = (struct job){.opts = opts, .lim = &lim, .kind = BUDGET_SUB, .model = sub,
			      .question = question, .phase = "leaves", .render = render_leaf,
			      .ctx = &lc, .n = out->leaves, .res = out, .t0 = t0};
	if ((rc = run_job(&leaves, err)))
		goto out;
	if (is_cancelled(opts)) {
		rc = rlm_err_set(err, RLM_ECANCEL, "cancelled");
		goto out;
	}

	partials = xcalloc(out->leaves, sizeof(char *));
	for (size_t i = 0; i < out->leaves; i++) {
		if (leaves.errors[i]) {
			char *why = xasprintf("part %zu: %s", i + 1, leaves.errors[i]);
			out->failed_leaves++;
			rlm__failure_add(out, "part", 0, 0, why); /* the tree is one node */
			free(why);
			continue;
		}
		if (!text_is_none(leaves.answers[i], strlen(leaves.answers[i]))) {
			partials[n_partials++] = trim_dup(leaves.answers[i]);
			cite_part(out, ctx, &parts[i], partials[n_partials - 1]);
		}
	}
	if (out->failed_leaves == out->leaves && lim.why == RLM_STOP_ANSWER) {
		rc = rlm_err_set(err, leaves.first_rc ? leaves.first_rc : RLM_EPROVIDER,
				 "%s%s", out->leaves > 1 ? "every model call failed; the first: " : "",
				 leaves.errors[0]);
		goto out;
	}
	if (out->failed_leaves) {
		for (size_t i = 0; i < out->leaves; i++)
			if (leaves.errors[i]) {
				out->warning = xasprintf(
					"%zu of %zu parts of the context could not be read (the "
					"first, part %zu: %s); the answer may be incomplete",
					out->failed_leaves, out->leaves, i + 1, leaves.errors[i]);
				break;
			}
	}

	/* Combine level by level until one answer is left. */
	while (n_partials > 1) {
		struct group_ctx gc = {partials, NULL};
		struct job comb;
		size_t n_groups = group_partials(partials, n_partials, leaf_chars, &gc.start);
		char **next;
		size_t n_next = 0;
		if (lim.why != RLM_STOP_ANSWER)
			break; /* a limit: the partials are the answer */
		comb = (struct job){.opts = opts, .lim = &lim, .kind = BUDGET_ROOT,
				    .model = opts->model, .question = question, .phase = "combine",
				    .level = out->levels + 1, .render = render_combine, .ctx = &gc,
				    .n = n_groups, .res = out, .t0 = t0};
		rc = run_job(&comb, err);
		out->levels++;
		if (!rc && is_cancelled(opts))
			rc = rlm_err_set(err, RLM_ECANCEL, "cancelled");
		if (!rc && lim.why != RLM_STOP_ANSWER) {
			/* a limit met while combining: this level's partials
			 * stand (a group that did answer is not worth less than
			 * the partials it came from, but keeping one level
			 * whole keeps the answer simple) */
			job_release(&comb);
			free(gc.start);
			break;
		}
		next = xcalloc(n_groups, sizeof(char *));
		for (size_t g = 0; !rc && g < n_groups; g++) {
			if (comb.errors[g]) {
				rc = rlm_err_set(err, comb.first_rc ? comb.first_rc : RLM_EPROVIDER,
						 "cannot combine the partial answers: %s",
						 comb.errors[g]);
				break;
			}
			if (!text_is_none(comb.answers[g], strlen(comb.answers[g])))
				next[n_next++] = trim_dup(comb.answers[g]);
		}
		job_release(&comb);
		free(gc.start);
		for (size_t k = 0; k < n_partials; k++)
			free(partials[k]);
		free(partials);
		partials = next;
		n_partials = n_next;
		if (rc)
			goto out;
		if (n_groups == 1)
			break;
	}
	out->found = n_partials > 0;
	if (lim.why != RLM_STOP_ANSWER) {
		/* A limit: the best partial answer, from what was read. */
		struct buf b = BUF_INIT;
		for (size_t k = 0; k < n_partials; k++)
			buf_printf(&b, "%s%s", k ? "\n" : "", partials[k]);
		out->answer = n_partials ? buf_detach(&b, NULL) : NULL;
		buf_release(&b);
		out->stop = lim.why;
		out->stop_detail = xstrdup(lim.msg);
	} else {
		out->answer = xstrdup(n_partials ? partials[0] : "NONE");
	}
out:
	out->solve_ns = time_now_ns() - t0;
	job_release(&leaves);
	if (partials)
		for (size_t k = 0; k < n_partials; k++)
			free(partials[k]);
	free(partials);
	free(parts);
	return rc;
}
