/* SPDX-License-Identifier: MIT */
/* rlm/node.c -- recursion: the state the nodes of one solve share (struct
 * rlm_nodes), and the child RLMs that answer rlm_query: their questions,
 * their threads and slots, and their results.
 *
 * DESIGN
 * A node's code asks for child RLMs with one call frame: rlm_query, or
 * rlm_query_batched with many prompts. The node's thread first reserves
 * every child as one sub-call (the budget may refuse some), gives each
 * accepted one its slot in out->children, in prompt order, and puts them
 * in a queue. Runners drain it: threads of their own, each holding one of
 * the solve's max_nodes slots for as long as the queue has children for
 * it, and the node's own thread. A child node holds a slot (its runner's,
 * or one lent it) and, while it waits on its children, lends it to the
 * ones it runs itself, one after another; the root holds none, and runs
 * a child itself only on a slot it takes, else waits for one to be given
 * back. So the nodes running at once (a node waiting on its children is
 * not running) are at most max_nodes, exactly (1: one at a time); every
 * slot's holder makes progress (no pool worker ever waits on a node: it
 * only makes HTTP calls), whatever the depth and the fan-out; and the
 * nodes alive are at most max_nodes a level. The node's thread then joins its runners:
 * when the frame is answered, nothing it started runs any more, and every
 * worker of its subtree has been freed. A child's node id is taken when it
 * starts, once.
 *
 * A child is a whole node (rlm__loop_node in rlm/loop.c): its own loop, root
 * calls and REPL worker, on the solve's pool, sub-model, params and
 * sandbox, under the solve's one budget, deadline and cancel flag. A limit
 * of the whole solve met by any node is told to the nodes (rlm__calls_stop) and
 * every node stops on it at its next step (rlm__calls_adopt), so the solve ends
 * with that reason and the best partial answers.
 */
#include "solve_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A child whose context is its prompt is asked the prompt itself when it
 * has at most QUESTION_MAX characters; else its first QUESTION_HEAD and a
 * note that the whole request is in `context`. */
#define QUESTION_MAX  2000
#define QUESTION_HEAD 1000
#define MAX_DEPTH     16   /* levels of RLMs, as the CLI allows */
#define MAX_CHILDREN  1000 /* child RLMs one call frame may start */

/* ---- the nodes of a solve ---- */

void rlm__nodes_init(struct rlm_nodes *t, const struct rlm_opts *o, int64_t t0)
{
	memset(t, 0, sizeof(*t));
	t->o = o;
	rlm__budget_init(&t->budget, o, t0);
	t->max_depth = o->max_depth > 0 ? o->max_depth : RLM_DEF_MAX_DEPTH;
	/* Children run inline on their parent's thread when no slot is free:
	 * some 8 KB of stack a level, so keep the chain short whatever a
	 * library caller asks. */
	if (t->max_depth > MAX_DEPTH)
		t->max_depth = MAX_DEPTH;
	t->max_nodes = o->max_nodes > 0 ? o->max_nodes : RLM_DEF_MAX_NODES;
	t->t0 = t0;
	atomic_init(&t->running, 0);
	atomic_init(&t->last_id, 0);
	atomic_init(&t->stopping, false);
	pthread_mutex_init(&t->cb_mu, NULL);
	pthread_mutex_init(&t->stop_mu, NULL);
	pthread_mutex_init(&t->slot_mu, NULL);
	pthread_cond_init(&t->slot_cv, NULL);
	pthread_mutex_init(&t->tool_mu, NULL);
	atomic_init(&t->tool_calls_sent, 0);
}

void rlm__nodes_release(struct rlm_nodes *t)
{
	free(t->stop_detail);
	t->stop_detail = NULL;
	pthread_mutex_destroy(&t->cb_mu);
	pthread_mutex_destroy(&t->stop_mu);
	pthread_mutex_destroy(&t->slot_mu);
	pthread_cond_destroy(&t->slot_cv);
	pthread_mutex_destroy(&t->tool_mu);
	cJSON_Delete(t->tool_calls);
	t->tool_calls = NULL;
}

bool rlm__nodes_limit(enum rlm_stop why)
{
	return why == RLM_STOP_TIMEOUT || why == RLM_STOP_TOKENS || why == RLM_STOP_COST ||
	       why == RLM_STOP_CALLS || why == RLM_STOP_MAX_CALLS || why == RLM_STOP_CANCEL;
}

void rlm__nodes_stop(struct rlm_nodes *t, enum rlm_stop why, const char *detail, int depth, int node)
{
	pthread_mutex_lock(&t->stop_mu);
	if (!atomic_load(&t->stopping)) {
		t->stop = why;
		/* Where it happened, for the nodes that adopt it. */
		t->stop_detail =
		    depth ? xasprintf("%s (in child RLM %d, at depth %d)", detail, node, depth)
			  : xstrdup(detail);
		atomic_store(&t->stopping, true);
	}
	pthread_mutex_unlock(&t->stop_mu);
}

/* ---- questions ---- */

char *rlm__node_question(const char *prompt, size_t len)
{
	size_t chars = text_utf8_count(prompt, len), head;
	char n[32];
	if (chars <= QUESTION_MAX)
		return xstrndup(prompt, len);
	head = text_utf8_offset(prompt, len, QUESTION_HEAD);
	return xasprintf(
	    "%.*s ...\n\n[This is the start of a request of %s characters, too long to "
	    "repeat here: the whole request is the variable `context`. Read it there.]",
	    (int)head, prompt, text_fmt_count(n, sizeof(n), (int64_t)chars));
}

/* ---- children ---- */

/* One child RLM of a call frame. */
struct child {
	struct batch *b;
	size_t item;	   /* its prompt in the frame */
	struct rlm_opts o; /* the solve's, with the child's root model */
	const struct repl_ctx_arg *arg; /* its context= entry; NULL: none */
	const char *text;  /* its context when that is a str of the frame's:
			    * the prompt or the context= given */
	size_t len;
	char *own;	   /* the frame's string behind text, taken from the
			    * frame (repl_call.bufs), freed once the child's
			    * memfd holds the text; NULL: not taken */
	char *question;		/* owned until handed to out */
	struct rlm_result *out; /* its slot in the parent's children */
	struct rlm_err err;
	int rc, id;
};

/* The children of one frame: a queue that the parent's thread and the
 * runner threads it started drain in order. */
struct batch {
	struct calls *c; /* the parent */
	struct child *kids;
	size_t n;	 /* children accepted */
	size_t next;	 /* the next one to run; guarded by c->mu */
	size_t finished; /* guarded by c->mu */
	size_t starting; /* runners started that have not taken a child yet;
			  * guarded by c->mu */
	pthread_t *runners; /* the parent's thread only */
	size_t n_runners;
	/* the first refusal of the budget: the node's stop, decided once the
	 * children it did accept have run (deciding it at once would stop
	 * them before their first call) */
	bool refused;
	enum rlm_stop why;
	char msg[256];
};

static void child_run(struct child *ch)
{
	struct calls *p = ch->b->c;
	struct corpus *ctx;
	struct store_key k;
	bool memo;
	char *data;
	int rc;
	int64_t t0 = time_now_ns();
	/* Its context: a copy of a str or list of the frame's in a memfd of
	 * its own, which its worker borrows (the one copy a worker needs
	 * anyway), or a view of a part of this node's (no copy at all). The
	 * frame's string is freed now, not when the last sibling ends. */
	rc = rlm__node_ctx_make(p, ch->arg, ch->text, ch->len, &ctx);
	free(ch->own);
	ch->own = NULL;
	ch->text = NULL;
	if (rc < 0) {
		ch->rc = rlm_err_set(&ch->err, rc, "cannot make its context: %s", strerror(-rc));
		ch->out->depth = p->depth + 1;
		ch->out->node = ch->id;
		ch->out->stop = RLM_STOP_ERROR;
		ch->out->stop_detail = xstrdup(ch->err.msg);
		ch->out->question = ch->question;
		ch->question = NULL;
		return;
	}
	{
		/* which model the child's root calls use */
		cJSON *d = cJSON_CreateObject();
		char *ds;
		json_add_str(d, "model", llm_model_name(ch->o.model));
		ds = json_print(d);
		cJSON_Delete(d);
		rlm__record_detail(&ch->o, p->nodes, ch->id, p->node, p->depth + 1, 0, "child",
				   ch->question, strlen(ch->question), ds);
		free(ds);
	}
	/* The key reads the whole context: its pages go again after. */
	memo = rlm__record_memo_key_ctx(&ch->o, p->depth + 1, ch->question, ctx, &k);
	corpus_release_pages(ctx);
	if (memo && rlm__record_memo_get(&ch->o, &p->nodes->budget, &k, ch->out)) {
		/* Asked and answered before: no node runs. */
		ch->rc = 0;
		rlm__answer_cap(ch->out, ch->o.max_answer, NULL, 0); /* kept before a cap */
		ch->out->depth = p->depth + 1;
		ch->out->node = ch->id;
	} else {
		ch->rc = rlm__loop_node(p->nodes, &ch->o, p->depth + 1, ch->id, p->node, ch->question,
				   ctx, ch->out, &ch->err);
		if (ch->rc == 0 && memo)
			rlm__record_memo_put(&ch->o, &k, ch->out);
	}
	data = xasprintf("{\"stop\":\"%s\",\"complete\":%s,\"memo\":%s,\"calls\":%lld,"
			 "\"cost\":%.9g,\"usage\":{\"input_tokens\":%lld,\"output_tokens\":%lld}}",
			 rlm_stop_name(ch->out->stop), ch->out->complete ? "true" : "false",
			 ch->out->memo ? "true" : "false",
			 (long long)ch->out->calls, ch->out->cost,
			 (long long)ch->out->usage.input_tokens,
			 (long long)ch->out->usage.output_tokens);
	if (ch->out->n_sources) {
		/* The child's sources, in its own context's terms (the viewer's). */
		cJSON *sj = rlm_sources_json(ch->out->sources, ch->out->n_sources);
		char *ss = json_print(sj), *d2;
		d2 = xasprintf("%.*s,\"sources\":%s}", (int)strlen(data) - 1, data, ss);
		free(data);
		data = d2;
		free(ss);
		cJSON_Delete(sj);
	}
	if (ch->out->stop_detail) {
		/* why it stopped, for the viewer and the event callback */
		cJSON *dj = cJSON_CreateString(ch->out->stop_detail);
		char *ds = json_print(dj), *d2;
		d2 = xasprintf("%.*s,\"stop_detail\":%s}", (int)strlen(data) - 1, data, ds);
		free(data);
		data = d2;
		free(ds);
		cJSON_Delete(dj);
	}
	{
		/* its model, its wall time, and why it gave no answer (null:
		 * it answered, as child_text counts an answer) */
		cJSON *mj = cJSON_CreateString(llm_model_name(ch->o.model)), *ej;
		char *ms = json_print(mj), *es, *d2, *why = NULL;
		const struct rlm_result *r = ch->out;
		if (ch->rc < 0)
			why = xstrdup(ch->err.msg[0] ? ch->err.msg : rlm_strerror(ch->rc));
		else if (!(r->answer && (r->stop == RLM_STOP_ANSWER || r->stop == RLM_STOP_ITERATIONS ||
					 r->stop == RLM_STOP_INCOMPLETE)))
			why = xasprintf("%s: %s", rlm_stop_name(r->stop),
					r->stop_detail ? r->stop_detail : "no detail");
		ej = why ? cJSON_CreateString(why) : cJSON_CreateNull();
		es = json_print(ej);
		d2 = xasprintf("%.*s,\"model\":%s,\"ms\":%lld,\"error\":%s}", (int)strlen(data) - 1,
			       data, ms, (long long)((time_now_ns() - t0) / 1000000), es);
		free(data);
		data = d2;
		free(ms);
		free(es);
		free(why);
		cJSON_Delete(mj);
		cJSON_Delete(ej);
	}
	rlm__record_detail(&ch->o, p->nodes, ch->id, p->node, p->depth + 1, 0, "child_end",
		      ch->out->answer, ch->out->answer ? strlen(ch->out->answer) : 0, data);
	free(data);
	ch->out->question = ch->question;
	ch->question = NULL;
	corpus_free(ctx);
}

/* The next child of the queue, with its node id, or NULL when every one
 * has been taken or is kept for a runner on its way (first: a runner
 * taking its first, whose own is kept until now). */
static struct child *take(struct batch *b, bool first)
{
	struct child *ch = NULL;
	pthread_mutex_lock(&b->c->mu);
	if (first)
		b->starting--;
	if (b->next + b->starting < b->n)
		ch = &b->kids[b->next++];
	pthread_mutex_unlock(&b->c->mu);
	/* Ids count in the order nodes start, so taken here, once. */
	if (ch)
		ch->id = atomic_fetch_add(&b->c->nodes->last_id, 1) + 1;
	return ch;
}

/* Run ch on this thread and count it for the parent's progress. */
static void run_child(struct child *ch)
{
	struct batch *b = ch->b;
	child_run(ch);
	pthread_mutex_lock(&b->c->mu);
	b->finished++;
	/* Child RLMs, not sub-calls: the line names what it counts. */
	rlm__calls_progress(b->c, "child", b->finished, b->n);
	pthread_mutex_unlock(&b->c->mu);
}

/* ---- slots: child nodes running at once (rlm_opts.max_nodes) ---- */

static bool take_slot(struct rlm_nodes *t)
{
	int n = atomic_load(&t->running);
	while (n < t->max_nodes)
		if (atomic_compare_exchange_weak(&t->running, &n, n + 1))
			return true;
	return false;
}

static void put_slot(struct rlm_nodes *t)
{
	atomic_fetch_sub(&t->running, 1);
	pthread_mutex_lock(&t->slot_mu);
	pthread_cond_broadcast(&t->slot_cv);
	pthread_mutex_unlock(&t->slot_mu);
}

/* Wait until a slot may have been given back (at most 50 ms). */
static void slot_wait(struct rlm_nodes *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->slot_mu);
	if (atomic_load(&t->running) >= t->max_nodes)
		pthread_cond_timedwait(&t->slot_cv, &t->slot_mu, &ts);
	pthread_mutex_unlock(&t->slot_mu);
}

/* A runner: a thread that holds one of the solve's node slots and runs
 * children of the queue one after another until none is left. */
static void *runner_main(void *arg)
{
	struct batch *b = arg;
	struct child *ch;
	bool first = true;
	while ((ch = take(b, first))) {
		first = false;
		run_child(ch);
	}
	/* The slot is free once its last node has ended, worker freed; the
	 * thread itself is joined by the parent. */
	put_slot(b->c->nodes);
	return NULL;
}

/* Start runners while the solve has free slots and the queue has children
 * no runner is on its way to take. */
static void add_runners(struct batch *b)
{
	struct rlm_nodes *t = b->c->nodes;
	for (;;) {
		bool more;
		pthread_mutex_lock(&b->c->mu);
		more = b->next + b->starting < b->n;
		if (more)
			b->starting++;
		pthread_mutex_unlock(&b->c->mu);
		if (!more)
			return;
		if (take_slot(t)) {
			/* named for top -H and the tests that check nothing is
			 * left running */
			if (thread_start(&b->runners[b->n_runners], NULL, runner_main, b,
					 "rlm-node") == 0) {
				b->n_runners++;
				continue;
			}
			/* Out of threads: this thread does it instead. */
			atomic_fetch_sub(&t->running, 1);
		}
		pthread_mutex_lock(&b->c->mu);
		b->starting--;
		pthread_mutex_unlock(&b->c->mu);
		return;
	}
}

static bool queued(struct batch *b)
{
	bool more;
	pthread_mutex_lock(&b->c->mu);
	more = b->next + b->starting < b->n;
	pthread_mutex_unlock(&b->c->mu);
	return more;
}

/* Run the batch: runners where there are slots, and this thread runs the
 * next child of the queue itself when it may: a child node (depth > 0)
 * holds a slot and lends it to the children it runs itself while it
 * waits on them (one at a time: it is not running meanwhile); the root
 * holds none and runs one only on a slot it takes, else waits for one to
 * be given back anywhere among the nodes. A runner whose child ends takes
 * the next one. So the nodes running at once (not waiting on children)
 * are at most max_nodes, exactly, and every slot's holder makes progress:
 * no deadlock. */
static void run_batch(struct batch *b)
{
	struct rlm_nodes *t = b->c->nodes;
	bool held = b->c->depth > 0;
	struct child *ch;
	b->runners = xcalloc(b->n, sizeof(*b->runners));
	/* The progress line shows the batch from its start: 0 of n. */
	pthread_mutex_lock(&b->c->mu);
	rlm__calls_progress(b->c, "child", 0, b->n);
	pthread_mutex_unlock(&b->c->mu);
	for (;;) {
		add_runners(b);
		if (!queued(b))
			break;
		if (!held && !take_slot(t)) {
			slot_wait(t);
			continue;
		}
		ch = take(b, false);
		if (ch)
			run_child(ch);
		if (!held)
			put_slot(t);
		if (!ch)
			break;
	}
	for (size_t i = 0; i < b->n_runners; i++)
		pthread_join(b->runners[i], NULL);
	free(b->runners);
	b->runners = NULL;
}

/* What the parent's code gets: the child's answer, or "Error: ..." (then
 * *error) when it failed or stopped on a limit before it answered. After
 * max_iterations the last call's answer counts: the child was asked for
 * its final answer and gave one. */
static char *child_text(const struct child *ch, bool *error)
{
	const struct rlm_result *r = ch->out;
	const char *stop = rlm_stop_name(r->stop);
	const char *detail = r->stop_detail ? r->stop_detail : "no detail";
	if (ch->rc < 0) {
		*error = true;
		return xasprintf("Error: child RLM failed: %s",
				 ch->err.msg[0] ? ch->err.msg : rlm_strerror(ch->rc));
	}
	/* An incomplete child (NONE over failures under it) answered: the
	 * parent's code sees its NONE as before; the failures reach the
	 * result through the subtree's. */
	if (r->answer && (r->stop == RLM_STOP_ANSWER || r->stop == RLM_STOP_ITERATIONS ||
			  r->stop == RLM_STOP_INCOMPLETE))
		return xstrdup(r->answer);
	*error = true;
	if (r->answer)
		return xasprintf(
		    "Error: child RLM stopped before it finished (%s: %s); its partial "
		    "answer: %s",
		    stop, detail, r->answer);
	return xasprintf("Error: child RLM stopped without an answer (%s: %s)", stop, detail);
}

/* mu held: a child that failed, or stopped on a limit of its own before
 * its answer, is a failure of the node ("child", under the child's id): its
 * part of the work may be missing. One that answered (NONE with failures
 * under it included: those are counted as its subtree's) is not. */
static void child_failure(struct calls *c, const struct child *ch, const char *text)
{
	const struct rlm_result *r = ch->out;
	char *why;
	if (ch->rc >= 0 && (r->stop == RLM_STOP_ANSWER || r->stop == RLM_STOP_INCOMPLETE))
		return;
	if (ch->rc < 0)
		why = xstrdup(text && !strncmp(text, "Error: ", 7) ? text + 7 : "failed");
	else
		why = xasprintf("%s: %s", rlm_stop_name(r->stop),
				r->stop_detail ? r->stop_detail : "no detail");
	c->sub_failed++;
	if (!c->sub_first_error)
		c->sub_first_error = xstrdup(why);
	rlm__failure_add(c->out, "child", r->node, r->depth, why);
	free(why);
}

/* May prompt i start a child? Else its text says why, and a limit met is
 * the node's stop. */
static bool may_start(struct calls *c, struct batch *b, size_t i, char **texts, bool *errors)
{
	enum rlm_stop why;
	char msg[256];
	const char *e = NULL;
	if (rlm__calls_cancelled(c)) {
		rlm__calls_stop(c, RLM_STOP_CANCEL, "cancelled by the caller");
		e = "Error: cancelled";
	} else if (rlm__budget_expired(c->budget, time_now_ns())) {
		rlm__calls_timeout(c, "before a child RLM started");
		e = "Error: time budget exhausted (the solve's time limit passed)";
	} else if (rlm__calls_adopt(c)) {
		texts[i] = xasprintf("Error: not sent: the solve is stopping (%s)", c->stop_detail);
		errors[i] = true;
		return false;
	} else if (!rlm__budget_reserve(c->budget, 0, 0, BUDGET_CHILD, &why, msg, sizeof(msg))) {
		/* A child is one sub-call; its own calls reserve their tokens
		 * and cost as they go. */
		texts[i] = xasprintf("Error: %s", msg);
		errors[i] = true;
		if (!b->refused) {
			b->refused = true;
			b->why = why;
			snprintf(b->msg, sizeof(b->msg), "%s", msg);
		}
		return false;
	}
	if (e) {
		texts[i] = xstrdup(e);
		errors[i] = true;
		return false;
	}
	return true;
}

static void child_prepare(struct child *ch, struct calls *c, const struct repl_call *call,
			  struct llm_model *root)
{
	size_t i = ch->item, slot;
	ch->o = *c->nodes->o;
	ch->o.model = root;
	ch->o.sub_model = c->sub;
	ch->o.schema_json = NULL; /* the root's answer is structured, not a child's */
	/* The caller's additions for child RLMs (rlm_opts.sub_*): a child's
	 * node reads them where the root reads its own. */
	ch->o.system_extra = c->nodes->o->sub_system_extra;
	ch->o.setup_code = c->nodes->o->sub_setup_code;
	if (c->nodes->o->sub_tools)
		ch->o.tools = c->nodes->o->sub_tools;
	/* One progress line: the root's. */
	ch->o.progress = NULL;
	ch->o.progress_arg = NULL;
	if (call->contexts && call->contexts[i].kind != REPL_CTX_NONE) {
		/* context= given: the prompt is the question. */
		ch->question = xstrndup(call->prompts[i], call->lens[i]);
		ch->arg = &call->contexts[i];
		ch->text = call->contexts[i].text; /* a str's; else NULL */
		ch->len = call->contexts[i].len;
		slot = call->n + i;
	} else {
		ch->question = rlm__node_question(call->prompts[i], call->lens[i]);
		ch->text = call->prompts[i];
		ch->len = call->lens[i];
		slot = i;
	}
	/* The string is the child's from here: freed as soon as it runs. */
	if (ch->text && call->bufs && call->bufs[slot] == ch->text) {
		ch->own = call->bufs[slot];
		call->bufs[slot] = NULL;
	}
}

void rlm__node_children(struct calls *c, const struct repl_call *call, struct llm_model *root,
		   char **texts, bool *errors)
{
	struct batch b;
	size_t base;
	bool ok;

	if (call->n > MAX_CHILDREN) {
		for (size_t i = 0; i < call->n; i++) {
			texts[i] = xasprintf("Error: too many child RLMs in one call (%zu; at "
					     "most %d): use llm_query_batched for plain calls, "
					     "or fewer, larger pieces",
					     call->n, MAX_CHILDREN);
			errors[i] = true;
		}
		return;
	}
	memset(&b, 0, sizeof(b));
	b.c = c;
	b.why = RLM_STOP_CALLS;
	b.kids = xcalloc(call->n, sizeof(*b.kids));
	/* Which prompts start a child: all of them are reserved before any
	 * starts, so a budget that allows k children starts the first k. A
	 * context= the worker got wrong starts none and reserves nothing. */
	for (size_t i = 0; i < call->n; i++) {
		char msg[300];
		if (call->contexts && rlm__node_ctx_check(c, &call->contexts[i], msg, sizeof(msg))) {
			texts[i] = xasprintf("Error: %s", msg);
			errors[i] = true;
			pthread_mutex_lock(&c->mu);
			c->out->sub_calls++; /* asked for, and failed */
			rlm__calls_failed(c, msg);
			pthread_mutex_unlock(&c->mu);
			continue;
		}
		pthread_mutex_lock(&c->mu);
		ok = may_start(c, &b, i, texts, errors);
		pthread_mutex_unlock(&c->mu);
		if (!ok)
			continue;
		b.kids[b.n].b = &b;
		b.kids[b.n].item = i;
		b.n++;
	}
	if (!b.n) {
		free(b.kids);
		pthread_mutex_lock(&c->mu);
		if (b.refused)
			rlm__calls_stop(c, b.why, "%s: a child RLM was refused", b.msg);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	/* Their slots, in prompt order, before any runs: children of earlier
	 * frames have all ended, so nothing points into the array. */
	pthread_mutex_lock(&c->mu);
	base = c->out->n_children;
	c->out->children = xrealloc(c->out->children, (base + b.n) * sizeof(*c->out->children));
	memset(c->out->children + base, 0, b.n * sizeof(*c->out->children));
	c->out->n_children += b.n;
	c->out->sub_calls += (int64_t)b.n;
	pthread_mutex_unlock(&c->mu);
	for (size_t k = 0; k < b.n; k++) {
		b.kids[k].out = &c->out->children[base + k];
		child_prepare(&b.kids[k], c, call, root);
	}

	run_batch(&b);

	for (size_t k = 0; k < b.n; k++) {
		struct child *ch = &b.kids[k];
		size_t i = ch->item;
		texts[i] = child_text(ch, &errors[i]);
		pthread_mutex_lock(&c->mu);
		child_failure(c, ch, texts[i]);
		rlm__calls_add_child(c, ch->out);
		pthread_mutex_unlock(&c->mu);
		free(ch->question);
		free(ch->own);
	}
	pthread_mutex_lock(&c->mu);
	if (b.refused)
		rlm__calls_stop(c, b.why, "%s: a child RLM was refused", b.msg);
	/* A limit of the whole solve met below stops this node too. */
	rlm__calls_adopt(c);
	pthread_mutex_unlock(&c->mu);
	free(b.kids);
}
