/* SPDX-License-Identifier: MIT */
/* rlm/calls.c -- the calls of one RLM node: waiting on the pool with the
 * solve's deadline and the caller's cancel, accounting, the stop reason,
 * and the worker's sub-calls (llm_query, llm_query_batched, and rlm_query*
 * at the last depth; above it rlm/node.c runs child RLMs).
 *
 * DESIGN
 * The node's thread submits calls and waits on c->cv; pool threads store
 * a result, account it and signal, under c->mu, and touch nothing else.
 * A wait wakes at least every POLL_NS to notice the caller's cancel flag,
 * which nobody signals, and at the deadline; either sets the flag its
 * calls were given, so they end (within about a second), and is waited
 * out: a call is never abandoned while the pool may still write to it.
 *
 * Sub-calls of one call frame are all submitted at once, at most `window`
 * in flight, each checked against the budget first; a refused one gets an
 * "Error: ..." string in its slot and the node stops after the exec. A
 * prompt over the sub-model's known context window is never sent (it
 * would be a 400, paid for in time and retries): its slot says so. The
 * worker's call frames are answered on threads of their own
 * (repl_cfg.parallel_calls), so that calls from threads of the code are
 * out together: each frame waits on c->cv for its own slots; frames that
 * start child RLMs take kids_mu, one at a time.
 *
 * The stop reason is the node's; a limit of the whole solve (a budget,
 * the deadline, the cancel) is also told to the nodes, where every other
 * node finds it (rlm__calls_adopt) before its next call and stops too.
 */
#include "solve_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_WINDOW 256
#define POLL_NS	       50000000LL

/* Twice the pool's slots (at least 32): a slot that frees finds a prompt
 * waiting, and the pieces of a 10M-token batch are not all held in this
 * process at once (repl/worker.c reuses the blocks of those answered). */
static size_t calls_ahead(const struct rlm_opts *o)
{
	return 2 * (size_t)RLM_MAX(llm_pool_workers(o->pool), 16);
}

void rlm__calls_worker_cfg(struct calls *c, bool lone, struct repl_cfg *cfg)
{
	const struct rlm_opts *o = c->o;
	memset(cfg, 0, sizeof(*cfg));
	cfg->python = o->python;
	cfg->output_limit = o->output_limit;
	cfg->exec_timeout_ns = o->exec_timeout_ns;
	cfg->max_frame = o->max_frame;
	cfg->on_call = rlm__calls_on_call;
	cfg->call_arg = c;
	cfg->parallel_calls = true;
	cfg->calls_ahead = calls_ahead(o);
	cfg->cancel = o->cancel;
	cfg->sandbox = o->sandbox;
	cfg->lone = lone;
}

void rlm__calls_init(struct calls *c, const struct rlm_opts *o, struct rlm_result *out,
		struct rlm_nodes *nodes, int depth, int node)
{
	pthread_condattr_t ca;
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->out = out;
	c->nodes = nodes;
	c->budget = &nodes->budget;
	c->sub = o->sub_model ? o->sub_model : o->model;
	c->window = o->window ? o->window : DEFAULT_WINDOW;
	c->t0 = nodes->t0;
	c->depth = depth;
	c->node = node;
	c->parent = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->kids_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
}

void rlm__calls_release(struct calls *c)
{
	free(c->stop_detail);
	free(c->sub_first_error);
	c->stop_detail = c->sub_first_error = NULL;
	rlm__tools_node_release(c);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->kids_mu);
	pthread_cond_destroy(&c->cv);
}

bool rlm__calls_cancelled(const struct calls *c)
{
	return c->o->cancel && atomic_load(c->o->cancel);
}

void rlm__calls_stop(struct calls *c, enum rlm_stop why, const char *fmt, ...)
{
	struct buf b;
	va_list ap;
	if (c->stopping)
		return;
	buf_init(&b, 0);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	c->stopping = true;
	c->stop = why;
	c->stop_detail = buf_detach(&b, NULL);
	if (rlm__nodes_limit(why))
		rlm__nodes_stop(c->nodes, why, c->stop_detail, c->depth, c->node);
}

bool rlm__calls_adopt(struct calls *c)
{
	struct rlm_nodes *t = c->nodes;
	enum rlm_stop why;
	char *detail;
	if (c->stopping || !atomic_load(&t->stopping))
		return c->stopping;
	pthread_mutex_lock(&t->stop_mu);
	why = t->stop;
	detail = xstrdup(t->stop_detail ? t->stop_detail : rlm_stop_name(why));
	pthread_mutex_unlock(&t->stop_mu);
	rlm__calls_stop(c, why, "%s", detail);
	free(detail);
	return true;
}

void rlm__calls_timeout(struct calls *c, const char *during)
{
	char d[32];
	rlm__calls_stop(c, RLM_STOP_TIMEOUT, "the solve's time limit of %s passed %s",
		   text_fmt_duration(d, sizeof(d), c->budget->timeout_ns), during);
}

void rlm__calls_progress(struct calls *c, const char *phase, size_t done, size_t total)
{
	struct rlm_progress p;
	if (!c->o->progress)
		return;
	p = (struct rlm_progress){phase, done, total, c->level, time_now_ns() - c->t0};
	pthread_mutex_lock(&c->nodes->cb_mu);
	c->o->progress(&p, c->o->progress_arg);
	pthread_mutex_unlock(&c->nodes->cb_mu);
}

static void usage_add(struct llm_usage *a, const struct llm_usage *b)
{
	a->input_tokens += b->input_tokens;
	a->output_tokens += b->output_tokens;
	a->cached_tokens += b->cached_tokens;
	a->cache_write_tokens += b->cache_write_tokens;
}

void rlm__calls_account(struct calls *c, const struct llm_call *call, int64_t est, bool sub)
{
	struct rlm_result *r = c->out;
	int64_t used = call->usage.input_tokens + call->usage.output_tokens;
	if (!used && call->rc == 0)
		used = est + llm_estimate_tokens(call->len);
	rlm__budget_settle(c->budget, est, llm_model_input_cost(call->model, est), used, call->cost);
	r->calls++;
	r->attempts += call->attempts;
	if (call->rc)
		r->failed_calls++;
	usage_add(&r->usage, &call->usage);
	r->cost += call->cost;
	usage_add(sub ? &r->sub_usage : &r->root_usage, &call->usage);
	if (call->cached) {
		r->cache_hits++;
		usage_add(&r->saved_usage, &call->usage);
		r->saved_cost += call->cost;
	}
	if (sub) {
		r->sub_cost += call->cost;
	} else {
		r->root_cost += call->cost;
		r->root_calls++;
	}
}

void rlm__calls_add_child(struct calls *c, const struct rlm_result *child)
{
	struct rlm_result *r = c->out;
	r->calls += child->calls;
	r->attempts += child->attempts;
	r->failed_calls += child->failed_calls;
	usage_add(&r->usage, &child->usage);
	usage_add(&r->sub_usage, &child->usage);
	r->cost += child->cost;
	r->sub_cost += child->cost;
	r->sub_calls += child->sub_calls;
	r->nodes += 1 + child->nodes;
	r->cache_hits += child->cache_hits;
	r->memo_hits += child->memo_hits;
	usage_add(&r->saved_usage, &child->saved_usage);
	r->saved_cost += child->saved_cost;
	/* Its subtree's failures are this node's: the listed ones copied,
	 * the rest counted. */
	for (size_t i = 0; i < child->n_failures; i++)
		rlm__failure_add(r, child->failures[i].kind, child->failures[i].node,
				 child->failures[i].depth, child->failures[i].reason);
	r->failed += child->failed - (int64_t)child->n_failures;
}

bool rlm__calls_check(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during)
{
	int64_t now = time_now_ns();
	if (!atomic_load(flag)) {
		if (rlm__calls_cancelled(c)) {
			atomic_store(flag, true);
			rlm__calls_stop(c, RLM_STOP_CANCEL, "cancelled by the caller");
		} else if (deadline && now >= deadline) {
			atomic_store(flag, true);
			if (rlm__budget_expired(c->budget, now))
				rlm__calls_timeout(c, during);
		}
	}
	return atomic_load(flag);
}

void rlm__calls_wait(struct calls *c, atomic_bool *flag, int64_t deadline, const char *during)
{
	int64_t now, until;
	struct timespec ts;
	rlm__calls_check(c, flag, deadline, during);
	now = time_now_ns();
	until = now + POLL_NS;
	if (!atomic_load(flag) && deadline && deadline > now && deadline < until)
		until = deadline;
	ts.tv_sec = (time_t)(until / 1000000000LL);
	ts.tv_nsec = (long)(until % 1000000000LL);
	pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

void rlm__failure_add(struct rlm_result *r, const char *kind, int node, int depth,
		      const char *why)
{
	struct rlm_failure *f;
	size_t len = strlen(why), cut;
	r->failed++;
	if (r->n_failures >= RLM_FAILURES_MAX)
		return;
	r->failures = xrealloc(r->failures, (r->n_failures + 1) * sizeof(*r->failures));
	f = &r->failures[r->n_failures++];
	f->kind = kind;
	f->node = node;
	f->depth = depth;
	if (len <= RLM_FAILURE_REASON_MAX) {
		f->reason = xstrdup(why);
	} else {
		cut = text_utf8_floor(why, RLM_FAILURE_REASON_MAX - 3);
		f->reason = xasprintf("%.*s...", (int)cut, why);
	}
}

void rlm__calls_failed(struct calls *c, const char *why)
{
	c->sub_failed++;
	if (!c->sub_first_error)
		c->sub_first_error = xstrdup(why);
	rlm__failure_add(c->out, "sub-call", c->node, c->depth, why);
}

/* ---- sub-calls ---- */

/* One sub-call of a frame in flight. */
struct sub_slot {
	struct llm_call call;
	struct llm_msg msg;
	char *joined; /* owned: the prompt and a context= given at the last depth */
	char *own[2]; /* the frame's prompt and context strings, taken
		       * (repl_call.bufs): freed as soon as the call is done */
	int64_t est; /* tokens reserved */
	size_t item;
	struct sub_frame *frame;
	struct sub_slot *next_free;
};

/* One call frame of the worker (llm_query, llm_query_batched, ...). */
struct sub_frame {
	struct calls *c;
	const struct repl_call *call;
	char **texts;
	bool *errors;
	size_t finished; /* slots with their text set */
	struct sub_slot *free_slots;
	atomic_bool cancel; /* handed to the calls: set at the deadline */
};

static void on_sub_done(struct llm_call *call, void *arg)
{
	struct sub_slot *s = arg;
	struct sub_frame *f = s->frame;
	struct calls *c = f->c;
	rlm__record_call(c->o, c->nodes, c->node, c->parent, c->depth, c->level, call, true);
	pthread_mutex_lock(&c->mu);
	if (call->rc == 0) {
		f->texts[s->item] = call->text;
		call->text = NULL;
	} else {
		const char *why = call->error ? call->error : rlm_strerror(call->rc);
		f->texts[s->item] = xasprintf("Error: %s", why);
		f->errors[s->item] = true;
		if (call->rc != RLM_ECANCEL)
			rlm__calls_failed(c, why);
	}
	rlm__calls_account(c, call, s->est, true);
	llm_call_release(call);
	free(s->joined);
	s->joined = NULL;
	/* A large batch's prompts go as their calls end, not all at its end. */
	free(s->own[0]);
	free(s->own[1]);
	s->own[0] = s->own[1] = NULL;
	s->next_free = f->free_slots;
	f->free_slots = s;
	f->finished++;
	rlm__calls_progress(c, "sub", f->finished, f->call->n);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* The model a call names: the sub-model or the solve's root model by name,
 * none is dflt; else NULL. */
static struct llm_model *route(const struct calls *c, const char *name, struct llm_model *dflt)
{
	struct llm_model *root = c->nodes->o->model;
	if (!name || !*name)
		return dflt;
	if (strcmp(name, llm_model_name(c->sub)) == 0)
		return c->sub;
	if (strcmp(name, llm_model_name(root)) == 0)
		return root;
	return NULL;
}

static void unknown_model(const struct calls *c, const struct repl_call *call, char **texts,
			  bool *errors)
{
	const char *root = llm_model_name(c->nodes->o->model), *sub = llm_model_name(c->sub);
	for (size_t i = 0; i < call->n; i++) {
		texts[i] =
		    strcmp(root, sub) == 0
			? xasprintf("Error: unknown model '%s' (available: %s)", call->model, root)
			: xasprintf("Error: unknown model '%s' (available: %s, %s)", call->model,
				    sub, root);
		errors[i] = true;
	}
}

/* Is a prompt of len bytes (est tokens) over the known context window of
 * model? Then why, with both sizes and what to do (the caller's to free);
 * else NULL. A model whose window nobody stated
 * (llm_model_context_window_known) is sent anything. */
static char *over_window(const struct llm_model *model, const char *p, size_t len, int64_t est)
{
	long w = llm_model_context_window(model);
	char t[32], ch[32], wt[32], fit[32];
	if (!llm_model_context_window_known(model) || est <= w)
		return NULL;
	text_fmt_count(t, sizeof(t), est);
	text_fmt_count(ch, sizeof(ch), (int64_t)text_utf8_count(p, len));
	text_fmt_count(wt, sizeof(wt), w);
	text_fmt_count(fit, sizeof(fit), (int64_t)w * 2);
	return xasprintf("prompt not sent: it is about %s tokens (%s characters, estimated at ~4 "
			 "characters a token), over the %s-token context window of '%s'; cut it "
			 "into pieces of at most about %s characters and ask about each",
			 t, ch, wt, llm_model_name(model), fit);
}

/* mu held: a frame is answered; sub_ns counts the time some frame was
 * out (frames from several threads of the code overlap). */
static void frame_done(struct calls *c)
{
	if (--c->frames_out == 0)
		c->out->sub_ns += time_now_ns() - c->frames_since;
}

/* llm_query / llm_query_batched, and rlm_query / rlm_query_batched at the
 * last depth: one sub-model call per prompt. Above the last depth an
 * rlm_query frame goes to child RLMs (rlm/node.c), whose root model is the
 * one named, by default the solve's root model. */
void rlm__calls_on_call(void *arg, const struct repl_call *call, char **texts, bool *errors)
{
	struct calls *c = arg;
	struct sub_frame f;
	struct sub_slot *slots;
	bool children = call->rlm && c->depth + 1 < c->nodes->max_depth;
	struct llm_model *model = route(c, call->model, children ? c->nodes->o->model : c->sub);
	size_t n = call->n, next = 0, window;
	int64_t t0 = time_now_ns(), deadline = c->budget->deadline_ns;

	if (call->tool) {
		rlm__tools_on_call(c, call, texts, errors);
		return;
	}
	if (!model) {
		unknown_model(c, call, texts, errors);
		return;
	}
	if (n == 0)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->frames_out++ == 0)
		c->frames_since = t0;
	pthread_mutex_unlock(&c->mu);
	if (children) {
		pthread_mutex_lock(&c->kids_mu);
		rlm__node_children(c, call, model, texts, errors);
		pthread_mutex_unlock(&c->kids_mu);
		pthread_mutex_lock(&c->mu);
		frame_done(c);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	if (call->deadline_ns && (!deadline || call->deadline_ns < deadline))
		deadline = call->deadline_ns;
	memset(&f, 0, sizeof(f));
	f.c = c;
	f.call = call;
	f.texts = texts;
	f.errors = errors;
	atomic_init(&f.cancel, false);
	window = RLM_MIN(c->window, n);
	slots = xcalloc(window, sizeof(*slots));
	for (size_t i = 0; i < window; i++) {
		slots[i].next_free = f.free_slots;
		f.free_slots = &slots[i];
	}

	pthread_mutex_lock(&c->mu);
	rlm__calls_progress(c, "sub", 0, n); /* the batch shows from its start */
	while (f.finished < n) {
		struct sub_slot *s;
		enum rlm_stop why;
		char msg[256], *joined, *why_not;
		size_t joined_len = 0;
		int64_t est;
		if (next < n && rlm__calls_check(c, &f.cancel, deadline, "during a sub-call")) {
			/* The deadline or a cancel: the rest is not sent. */
			const char *e = rlm__calls_cancelled(c) ? "Error: cancelled"
					: rlm__budget_expired(c->budget, time_now_ns())
					    ? "Error: time budget exhausted (the solve's time "
					      "limit passed)"
					    : "Error: the call's time limit passed";
			for (; next < n; next++) {
				texts[next] = xstrdup(e);
				errors[next] = true;
				f.finished++;
			}
			continue;
		}
		if (next < n && rlm__calls_adopt(c)) {
			/* A budget ran out earlier: the solve ends after this
			 * exec, so the rest would be wasted. */
			for (; next < n; next++) {
				texts[next] = xasprintf("Error: not sent: the solve is stopping (%s)",
							c->stop_detail);
				errors[next] = true;
				f.finished++;
			}
			continue;
		}
		if (next == n || !f.free_slots) {
			rlm__calls_wait(c, &f.cancel, deadline, "during a sub-call");
			continue;
		}
		joined = NULL;
		if (call->contexts && call->contexts[next].kind != REPL_CTX_NONE) {
			/* rlm_query(prompt, context=...) at the last depth: one
			 * plain call reads both, the request first. Made with
			 * mu let go: the context may be large, and only this
			 * thread moves next. */
			pthread_mutex_unlock(&c->mu);
			joined = rlm__node_ctx_prompt(c, &call->contexts[next], call->prompts[next],
						 call->lens[next], &joined_len, msg, sizeof(msg));
			pthread_mutex_lock(&c->mu);
			if (!joined) {
				texts[next] = xasprintf("Error: %s", msg);
				errors[next] = true;
				c->out->sub_calls++; /* asked for, and failed */
				rlm__calls_failed(c, msg);
				next++;
				f.finished++;
				continue;
			}
		}
		est = llm_estimate_tokens(joined ? joined_len : call->lens[next]);
		if ((why_not = over_window(model, joined ? joined : call->prompts[next],
					   joined ? joined_len : call->lens[next], est))) {
			/* A 400 for sure: refused here, no tokens paid. */
			texts[next] = xasprintf("Error: %s", why_not);
			errors[next] = true;
			c->out->sub_calls++; /* asked for, and failed */
			rlm__calls_failed(c, why_not);
			free(why_not);
			free(joined);
			next++;
			f.finished++;
			continue;
		}
		if (!rlm__budget_reserve(c->budget, est, llm_model_input_cost(model, est), BUDGET_SUB,
				    &why, msg, sizeof(msg))) {
			texts[next] = xasprintf("Error: %s", msg);
			errors[next] = true;
			rlm__calls_stop(c, why, "%s: a sub-call was refused", msg);
			free(joined);
			next++;
			f.finished++;
			continue;
		}
		s = f.free_slots;
		f.free_slots = s->next_free;
		s->frame = &f;
		s->item = next++;
		s->est = est;
		s->joined = joined;
		if (call->bufs) {
			s->own[0] = call->bufs[s->item];
			s->own[1] = call->bufs[n + s->item];
			call->bufs[s->item] = call->bufs[n + s->item] = NULL;
		}
		c->out->sub_calls++;
		pthread_mutex_unlock(&c->mu);
		if (s->joined) {
			s->msg = (struct llm_msg){LLM_USER, s->joined, joined_len};
		} else {
			s->msg = (struct llm_msg){LLM_USER, call->prompts[s->item],
						  call->lens[s->item]};
		}
		llm_call_init(&s->call, model, &s->msg, 1);
		s->call.params = c->o->params;
		s->call.cancel = &f.cancel;
		s->call.front = rlm__record_front(c->o);
		llm_pool_submit(c->o->pool, &s->call, on_sub_done, s);
		pthread_mutex_lock(&c->mu);
	}
	frame_done(c);
	pthread_mutex_unlock(&c->mu);
	free(slots);
}
