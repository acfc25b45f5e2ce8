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
 * caches hit, until the conversation nears the root model's window: then
 * its older turns become one summary (rlm/compact.c). A turn: check the
 * limits, compact if need be, send the root call, and handle
 * the reply (rlm/loop_turn.c). After max_iterations turns, one last call
 * asks for FINAL(...).
 *
 * Sub-calls arrive while code runs, on this thread (repl_exec calls the
 * handler of rlm/calls.c), which also holds what root and sub-calls
 * share: the waits, the accounting, the stop reason.
 *
 * Limits share one struct rlm_budget (rlm/solve_int.h), the nodes', so
 * every node of the solve spends from it; it is checked before a call is
 * sent. A limit of the whole solve met by any node stops every node
 * (rlm__calls_adopt, before each turn, after each block, and when a root reply
 * arrives). A root call that may not be sent stops the node; a
 * sub-call that may not be sent gets an "Error: ..." string the code can
 * see, and the solve stops after the current exec. Time is enforced
 * everywhere: waits for calls wake at the deadline and cancel their calls
 * (each wait has its own flag, handed to its calls), and repl_exec gets
 * the deadline itself. The worker watches the caller's cancel flag
 * directly: a flag of ours could only be set between frames, while the
 * worker's own wait polls the flag it is given even while code runs. It
 * watches the nodes' stopping flag too (repl_cfg.stop): when any node
 * meets a limit of the whole solve, every node's running code is
 * interrupted (after a short grace of its own time, so that code which
 * has just been answered "Error: ..." can still keep a partial answer),
 * not left to compute until its exec time limit.
 *
 * The first root call is sent before the worker starts, so the worker's
 * start-up overlaps the model's first answer.
 */
#include "loop_int.h"
#include "../repl/repl.h"
#include "../common/json.h"
#include "../common/text.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITERATIONS   30
#define DEFAULT_ERRORS	     5
#define DEFAULT_OUTPUT_LIMIT 20000
#define SUB_CHARS_MAX	     500000
#define FIRST_LENGTHS	     10 /* document lengths shown in the metadata */
#define SHOWN_IDS	     5 /* document ids shown in the metadata */
#define SHOWN_ID_BYTES	     80 /* bytes of each */

/* ---- small helpers ---- */

/* The turn this iteration's events go to, made when it is the first. */
static struct rlm_turn *turn_now(struct loop *l)
{
	struct rlm_result *out = l->out;
	if (!out->n_turns || out->turns[out->n_turns - 1].iteration != l->iteration) {
		out->turns = xrealloc(out->turns, (out->n_turns + 1) * sizeof(*out->turns));
		memset(&out->turns[out->n_turns], 0, sizeof(*out->turns));
		out->turns[out->n_turns++].iteration = l->iteration;
	}
	return &out->turns[out->n_turns - 1];
}

/* Keep an event in the node's trajectory (rlm_opts.trajectory). */
static void keep_turn(struct loop *l, const char *kind, const char *text, size_t len)
{
	struct rlm_turn *t;
	struct rlm_block *b;
	char *s;
	if (strcmp(kind, "sandbox") == 0)
		return;
	t = turn_now(l);
	s = xstrndup(text ? text : "", text ? len : 0);
	if (strcmp(kind, "reply") == 0) {
		free(t->reply);
		t->reply = s;
		l->block_open = false;
	} else if (strcmp(kind, "notice") == 0) {
		t->notices = xrealloc(t->notices, (t->n_notices + 1) * sizeof(*t->notices));
		t->notices[t->n_notices++] = s;
		l->block_open = false;
	} else {
		/* "code" begins a block; "output" ends the block still open,
		 * or stands alone (FINAL_VAR's; after a block whose exec gave
		 * none, the worker having died) */
		b = t->n_blocks ? &t->blocks[t->n_blocks - 1] : NULL;
		if (strcmp(kind, "output") == 0 && b && l->block_open && !b->output) {
			b->output = s;
			l->block_open = false;
			return;
		}
		l->block_open = strcmp(kind, "code") == 0;
		t->blocks = xrealloc(t->blocks, (t->n_blocks + 1) * sizeof(*t->blocks));
		b = &t->blocks[t->n_blocks++];
		*b = (struct rlm_block){NULL, NULL};
		if (strcmp(kind, "code") == 0)
			b->code = s;
		else
			b->output = s;
	}
}

void rlm__loop_emit(struct loop *l, const char *kind, const char *text, size_t len)
{
	rlm__loop_emit_data(l, kind, text, len, NULL);
}

void rlm__loop_emit_data(struct loop *l, const char *kind, const char *text, size_t len,
		    const char *data_json)
{
	struct rlm_event e;
	rlm__record_event(l->o, l->node, l->parent, l->depth, l->iteration, kind, text, len, data_json);
	if (l->o->trajectory)
		keep_turn(l, kind, text, len);
	if (!l->o->event)
		return;
	e = (struct rlm_event){.kind = kind,
			       .iteration = l->iteration,
			       .text = text ? text : "",
			       .len = text ? len : 0,
			       .elapsed_ns = time_now_ns() - l->t0,
			       .depth = l->depth,
			       .node = l->node,
			       .data_json = data_json};
	/* Nodes run on many threads; the callback sees one event at a time. */
	pthread_mutex_lock(&l->nodes->cb_mu);
	l->o->event(&e, l->o->event_arg);
	pthread_mutex_unlock(&l->nodes->cb_mu);
}

/* "turn" (begin) and "turn_end" (rlm/rlm.h): with detail_events, to the
 * callback only; neither the store nor the trajectory keeps them. A
 * "turn_end" closes the open turn, once, however the turn ended. */
static void emit_turn(struct loop *l, bool begin)
{
	struct rlm_event e;
	char data[96];
	int64_t now = time_now_ns();
	if (begin) {
		l->turn_open = true;
		l->turn_t0 = now;
	} else if (l->turn_open) {
		l->turn_open = false;
	} else {
		return;
	}
	if (!l->o->event || !l->o->detail_events)
		return;
	if (begin)
		snprintf(data, sizeof(data), "{\"iteration\":%d}", l->iteration);
	else
		snprintf(data, sizeof(data), "{\"iteration\":%d,\"ms\":%lld}", l->iteration,
			 (long long)((now - l->turn_t0) / 1000000));
	e = (struct rlm_event){.kind = begin ? "turn" : "turn_end",
			       .iteration = l->iteration,
			       .text = "",
			       .len = 0,
			       .elapsed_ns = now - l->t0,
			       .depth = l->depth,
			       .node = l->node,
			       .data_json = data};
	pthread_mutex_lock(&l->nodes->cb_mu);
	l->o->event(&e, l->o->event_arg);
	pthread_mutex_unlock(&l->nodes->cb_mu);
}

void rlm__loop_progress(struct loop *l, const char *phase, size_t done, size_t total)
{
	pthread_mutex_lock(&l->c.mu);
	l->c.level = l->iteration;
	rlm__calls_progress(&l->c, phase, done, total);
	pthread_mutex_unlock(&l->c.mu);
}

/* ---- the conversation ---- */

void rlm__loop_add_msg(struct loop *l, enum llm_role role, char *text, size_t len)
{
	if (l->n_msgs == l->cap_msgs) {
		l->cap_msgs = l->cap_msgs ? l->cap_msgs * 2 : 16;
		l->msgs = xrealloc(l->msgs, l->cap_msgs * sizeof(*l->msgs));
	}
	l->msgs[l->n_msgs++] = (struct llm_msg){role, text, len};
}

int rlm__loop_render(const char *name, const struct prompt_var *vars, size_t n, char **text, size_t *len,
		struct rlm_err *err)
{
	struct buf b;
	int rc;
	buf_init(&b, 0);
	rc = rlm_prompt_render(name, vars, n, &b, err);
	if (rc) {
		buf_release(&b);
		return rc;
	}
	*text = buf_detach(&b, len);
	return 0;
}

/* Up to SHOWN_IDS ids of ctx's documents, each cut to SHOWN_ID_BYTES,
 * and what `documents` gives for them: which file or record each is. */
static void desc_names(const struct corpus *ctx, struct buf *d)
{
	size_t k = RLM_MIN(ctx->n_docs, (size_t)SHOWN_IDS);
	if (!k)
		return;
	if (ctx->kind == CORPUS_DIR)
		buf_puts(d, "; they are the files of a directory, such as ");
	else if (ctx->kind == CORPUS_JSONL)
		buf_puts(d, "; they are records with ids such as ");
	else
		buf_puts(d, "; ids such as ");
	for (size_t i = 0; i < k; i++) {
		const char *id = ctx->docs[i].id ? ctx->docs[i].id : "?";
		size_t n = text_utf8_floor(id, RLM_MIN(strlen(id), (size_t)SHOWN_ID_BYTES));
		buf_printf(d, "%s%.*s%s", i == 0 ? "" : i + 1 == k && k == ctx->n_docs ? " and " : ", ",
			   (int)n, id, n < strlen(id) ? "..." : "");
	}
	if (k < ctx->n_docs)
		buf_puts(d, ", ...");
	buf_puts(d, ctx->kind == CORPUS_DIR
			? ". documents[i] names context[i]: its \"id\" is the file's path"
			: ". documents[i] names context[i]: its \"id\", \"title\" and other fields "
			  "(\"meta\")");
}

/* A JSON context (corpus.json): the Python type of its value, and how
 * many records a list of them holds. */
static char *json_desc(const struct corpus *ctx)
{
	char a[32], b[32], c[32];
	const char *s = ctx->buf, *e = ctx->buf + ctx->len, *type;
	while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	type = s == e	    ? "value"
	       : *s == '{' ? "dict"
	       : *s == '[' ? "list"
	       : *s == '"' ? "str"
	       : *s == 't' || *s == 'f' ? "bool"
	       : *s == 'n'		 ? "None"
					 : "number";
	text_fmt_count(a, sizeof(a), (int64_t)text_utf8_count(ctx->buf, ctx->len));
	text_fmt_count(b, sizeof(b), llm_estimate_tokens(ctx->len));
	if (*type == 'l' && ctx->n_docs > 1)
		return xasprintf("a list of %s records (dict), parsed from %s characters of JSON "
				 "(about %s tokens)",
				 text_fmt_count(c, sizeof(c), (int64_t)ctx->n_docs), a, b);
	return xasprintf("a %s parsed from %s characters of JSON (about %s tokens)", type, a, b);
}

/* "a str of 1,234,567 characters (about 308,642 tokens)", or for documents
 * their count, total, range and first lengths: never any of the text. */
char *rlm__loop_context_desc(const struct corpus *ctx, bool docs)
{
	char a[32], b[32], c[32];
	struct buf d;
	size_t total = 0, bytes = 0, lo = SIZE_MAX, hi = 0;
	if (ctx->json) {
		char *j = json_desc(ctx);
		if (ctx->n_docs < 2)
			return j;
		buf_init(&d, 0);
		buf_puts(&d, j);
		free(j);
		desc_names(ctx, &d);
		return buf_detach(&d, NULL);
	}
	if (!docs) {
		size_t off = ctx->n_docs ? ctx->docs[0].off : 0;
		size_t len = ctx->n_docs ? ctx->docs[0].len : ctx->len;
		const char *id = ctx->n_docs ? ctx->docs[0].id : NULL;
		bool file = id && ctx->source && strcmp(ctx->source, "-") != 0;
		return xasprintf(
		    "a str of %s characters (about %s tokens)%s%.*s%s",
		    text_fmt_count(a, sizeof(a), (int64_t)text_utf8_count(ctx->buf + off, len)),
		    text_fmt_count(b, sizeof(b), llm_estimate_tokens(len)),
		    file ? ", the text of the file " : "",
		    file ? (int)text_utf8_floor(id, RLM_MIN(strlen(id), (size_t)SHOWN_ID_BYTES)) : 0,
		    file ? id : "", file ? " (documents[0][\"id\"])" : "");
	}
	for (size_t i = 0; i < ctx->n_docs; i++) {
		size_t n = text_utf8_count(ctx->buf + ctx->docs[i].off, ctx->docs[i].len);
		total += n;
		bytes += ctx->docs[i].len;
		lo = RLM_MIN(lo, n);
		hi = RLM_MAX(hi, n);
	}
	buf_init(&d, 0);
	buf_printf(&d, "a list of %s document%s (str), %s characters in all (about %s tokens)",
		   text_fmt_count(a, sizeof(a), (int64_t)ctx->n_docs), ctx->n_docs == 1 ? "" : "s",
		   text_fmt_count(b, sizeof(b), (int64_t)total),
		   text_fmt_count(c, sizeof(c), llm_estimate_tokens(bytes)));
	if (ctx->n_docs > 1) {
		size_t k = RLM_MIN(ctx->n_docs, (size_t)FIRST_LENGTHS);
		buf_printf(&d, "; documents are %s to %s characters long; ",
			   text_fmt_count(a, sizeof(a), (int64_t)lo),
			   text_fmt_count(b, sizeof(b), (int64_t)hi));
		if (k == ctx->n_docs)
			buf_puts(&d, "their lengths: ");
		else
			buf_printf(&d, "the first %zu lengths: ", k);
		for (size_t i = 0; i < k; i++)
			buf_printf(&d, "%s%s", i ? ", " : "",
				   text_fmt_count(a, sizeof(a),
						  (int64_t)text_utf8_count(ctx->buf + ctx->docs[i].off,
									   ctx->docs[i].len)));
		if (k < ctx->n_docs)
			buf_puts(&d, ", ...");
	}
	desc_names(ctx, &d);
	return buf_detach(&d, NULL);
}

/* ---- root calls ---- */

static void on_root_done(struct llm_call *c, void *arg)
{
	struct loop *l = arg;
	rlm__record_call(l->o, l->nodes, l->node, l->parent, l->depth, l->iteration, c, false);
	pthread_mutex_lock(&l->c.mu);
	rlm__calls_account(&l->c, c, l->root_est, false);
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
	if (!rlm__budget_reserve(l->budget, l->root_est, llm_model_input_cost(l->o->model, l->root_est),
			    BUDGET_ROOT, &why, msg, sizeof(msg))) {
		rlm__calls_stop(&l->c, why, "%s: the root call of turn %d was not sent", msg,
			   l->iteration);
		return 1;
	}
	rlm__loop_progress(l, "root", 0, 1);
	llm_call_init(&l->root, l->o->model, l->msgs, l->n_msgs);
	l->root.params = l->o->params;
	atomic_store(&l->root_cancel, false);
	l->root.cancel = &l->root_cancel;
	l->root_done = false;
	l->root.front = rlm__record_front(l->o);
	llm_pool_submit(l->o->pool, &l->root, on_root_done, l);
	return 0;
}

/* Wait for the root call. Returns 0 with the reply in l->root, 1 when a
 * limit ended it (the stop is set), or the call's error code with err set. */
static int root_wait(struct loop *l, struct rlm_err *err)
{
	int64_t t0 = time_now_ns();
	pthread_mutex_lock(&l->c.mu);
	while (!l->root_done)
		rlm__calls_wait(&l->c, &l->root_cancel, l->budget->deadline_ns,
			   "while the root model was answering");
	pthread_mutex_unlock(&l->c.mu);
	l->out->root_ns += time_now_ns() - t0;
	/* A reply that came as the limit passed comes too late, and so does
	 * one that came after another node ended the solve. */
	if (l->c.stopping || rlm__calls_adopt(&l->c))
		return 1;
	if (l->root.rc == 0)
		return 0;
	return rlm_err_set(err, l->root.rc, "the root model failed: %s",
			   l->root.error ? l->root.error : rlm_strerror(l->root.rc));
}

/* ---- the solve ---- */

void rlm__worker_ctx_init(struct rlm__worker_ctx *w, const struct corpus *ctx)
{
	struct repl_context *out = &w->ctx;
	w->off = w->lens = NULL;
	buf_init(&w->meta, 0);
	if (ctx->kind != CORPUS_TEXT) {
		size_t n = ctx->n_docs ? ctx->n_docs : 1;
		w->off = xcalloc(n, sizeof(*w->off));
		w->lens = xcalloc(n, sizeof(*w->lens));
		for (size_t i = 0; i < ctx->n_docs; i++) {
			w->off[i] = ctx->docs[i].off;
			w->lens[i] = ctx->docs[i].len;
		}
		/* The corpus's memfd has the worker's layout: no copy. */
		*out = (struct repl_context){.text = ctx->buf,
					     .len = ctx->len,
					     .docs = true,
					     .json = ctx->json,
					     .doc_off = w->off,
					     .doc_len = w->lens,
					     .n_docs = ctx->n_docs,
					     .has_fd = ctx->fd >= 0,
					     .fd = ctx->fd,
					     .text_at = ctx->fd_text,
					     .table_at = ctx->fd_table};
	} else {
		size_t o = ctx->n_docs ? ctx->docs[0].off : 0;
		size_t n = ctx->n_docs ? ctx->docs[0].len : ctx->len;
		*out = (struct repl_context){.text = ctx->buf ? ctx->buf + o : "",
					     .len = n,
					     .has_fd = ctx->fd >= 0,
					     .fd = ctx->fd,
					     .text_at = ctx->fd_text + o};
	}
	/* Who the documents are: in the memfd, or written into the worker's
	 * own (a str has one document, its first). */
	out->n_meta = ctx->kind != CORPUS_TEXT ? ctx->n_docs : RLM_MIN(ctx->n_docs, (size_t)1);
	if (ctx->fd >= 0 && ctx->fd_meta_table) {
		out->meta_table_at = ctx->fd_meta_table;
	} else if (ctx->fd >= 0) {
		out->n_meta = 0; /* a sealed memfd without them: indices */
	} else {
		for (size_t i = 0; i < out->n_meta; i++)
			if (corpus_doc_info(ctx, i, &w->meta) || buf_putc(&w->meta, '\n')) {
				out->n_meta = i;
				break;
			}
		out->meta = w->meta.p;
		out->meta_len = w->meta.len;
	}
}

void rlm__worker_ctx_release(struct rlm__worker_ctx *w)
{
	free(w->off);
	free(w->lens);
	buf_release(&w->meta);
}

/* The node's worker, started on a thread of its own from the node's
 * start, so that what comes before the first root call (the prompts, the
 * context's description: a count over all its text) overlaps the start
 * up: at a model that answers at once the worker is what the first turn
 * waits for. */
struct worker_boot {
	pthread_t th;
	struct repl_cfg cfg;
	const struct corpus *ctx;
	struct repl *repl;
	struct rlm_err err;
	int rc;
};

static void worker_cfg(struct loop *l, struct repl_cfg *cfg)
{
	/* no child RLMs below: no zygote for this worker alone */
	rlm__calls_worker_cfg(&l->c, l->depth + 1 >= l->nodes->max_depth, cfg);
	cfg->output_limit = l->output_limit;
	cfg->stop = &l->nodes->stopping;
	cfg->schema = l->o->schema_json; /* the worker checks answers under it */
}

/* repl_start with cfg's context made from ctx; *out NULL on failure. */
static int worker_open(struct repl_cfg *cfg, const struct corpus *ctx, struct repl **out,
		       struct rlm_err *err)
{
	struct rlm__worker_ctx wc;
	int rc;
	rlm__worker_ctx_init(&wc, ctx);
	cfg->ctx = wc.ctx;
	rc = repl_start(cfg, out, err);
	rlm__worker_ctx_release(&wc);
	return rc;
}

static void *boot_main(void *arg)
{
	struct worker_boot *b = arg;
	b->rc = worker_open(&b->cfg, b->ctx, &b->repl, &b->err);
	return NULL;
}

/* Start the worker on its thread (nothing when there is one, or when no
 * thread can be made: start_worker starts it then). */
static void worker_begin(struct loop *l, const struct corpus *ctx)
{
	struct worker_boot *b;
	if (l->repl || l->boot)
		return;
	b = xcalloc(1, sizeof(*b));
	worker_cfg(l, &b->cfg);
	b->ctx = ctx;
	if (thread_start(&b->th, NULL, boot_main, b, "rlm-boot") != 0) {
		free(b);
		return;
	}
	l->boot = b;
}

/* Wait for the thread of worker_begin: its worker in *out (NULL when it
 * failed, with err). Returns repl_start's code. */
static int worker_join(struct loop *l, struct repl **out, struct rlm_err *err)
{
	struct worker_boot *b = l->boot;
	int rc;
	pthread_join(b->th, NULL);
	*out = b->repl;
	rc = b->rc;
	if (rc && err)
		*err = b->err;
	free(b);
	l->boot = NULL;
	return rc;
}

static int start_worker(struct loop *l, const struct corpus *ctx, struct rlm_err *err)
{
	struct repl_cfg cfg;
	struct repl_stats st;
	int rc;
	if (l->boot) {
		rc = worker_join(l, &l->repl, err);
	} else {
		worker_cfg(l, &cfg);
		rc = worker_open(&cfg, ctx, &l->repl, err);
	}
	if (rc)
		return rc;
	l->c.repl = l->repl;
	/* The worker has its own copy (the memfd, which a restart reuses):
	 * nothing here reads the text again, so its pages need not stay in
	 * this process (40 MB of 10M tokens). */
	corpus_release_pages(ctx);
	repl_stats(l->repl, &st);
	l->out->worker_start_ns = st.start_ns;
	l->out->sandbox = xmalloc(sizeof(*l->out->sandbox));
	repl_sandbox_status(l->repl, l->out->sandbox);
	rlm__loop_emit(l, "sandbox", l->out->sandbox->line, strlen(l->out->sandbox->line));
	if (l->depth == 0 && l->o->session_ && (rc = rlm__loop_session_worker(l, err)))
		return rc;
	l->setup_at = -1; /* a new worker: nothing of the setup code in it */
	return rlm__loop_setup(l, err);
}

/* The last non-blank line of s[0..len) (an exception's "Name: message"),
 * at most 300 bytes, fresh. */
static char *setup_last_line(const char *s, size_t len)
{
	size_t end = len, start;
	while (end && (s[end - 1] == '\n' || s[end - 1] == ' ' || s[end - 1] == '\r' ||
		       s[end - 1] == '\t'))
		end--;
	start = end;
	while (start && s[start - 1] != '\n')
		start--;
	if (end - start > 300)
		end = start + text_utf8_floor(s + start, 300);
	return xstrndup(s + start, end - start);
}

int rlm__setup_run(struct repl *repl, const char *code, int64_t deadline_ns, int *setup_at,
		   struct rlm_err *err)
{
	struct repl_stats st;
	int rc = 0;
	if (!code || !repl)
		return 0;
	repl_stats(repl, &st);
	if (st.restarts == *setup_at)
		return 0;
	/* A restart in the exec (restarted set) may come before the code ran
	 * (a worker found dead at the start: the code ran on the new one) or
	 * after it (threads the code left, a full scratch directory: the new
	 * worker lacks what it defined); the result does not say which, so
	 * the code runs once more -- setup code defines, it may run twice --
	 * and a second restart is the failure. */
	for (int tries = 0; tries < 2; tries++) {
		struct repl_result res;
		memset(&res, 0, sizeof(res));
		rc = repl_exec(repl, code, strlen(code), deadline_ns, &res, err);
		if (rc < 0) {
			repl_result_release(&res);
			if (err && err->msg[0])
				rlm_err_prefix(err, "setup code");
			return rc;
		}
		if (res.error) {
			size_t at = res.error_at < res.len ? res.error_at : 0;
			char *last = setup_last_line(res.output + at, res.len - at);
			rc = rlm_err_set(err, RLM_EINVAL, "setup code raised: %s",
					 *last ? last : "an exception");
			free(last);
			repl_result_release(&res);
			return rc;
		}
		if (!res.restarted || tries) {
			bool restarted = res.restarted;
			repl_result_release(&res);
			if (restarted)
				return rlm_err_set(err, RLM_EINVAL,
						   "setup code failed: the REPL worker was "
						   "restarted while it ran");
			repl_stats(repl, &st);
			*setup_at = st.restarts;
			return 0;
		}
		repl_result_release(&res);
	}
	return rc;
}

int rlm__loop_setup(struct loop *l, struct rlm_err *err)
{
	return rlm__setup_run(l->repl, l->o->setup_code, l->budget->deadline_ns, &l->setup_at,
			      err);
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
/* The paragraphs on host tools and skills, when the solve has them (the
 * simulator finds tools by "Host tools:" at the start of a line): "" when
 * neither. Names only the functions and how many servers there are, never
 * the catalogue. */
static char *tools_sentence(const struct rlm_opts *o)
{
	struct buf b;
	size_t n = o->tools ? tool_set_n_servers(o->tools) : 0;
	int64_t skills = rlm__skills_count(o);
	buf_init(&b, 0);
	if (n)
		buf_printf(&b,
			   "\n\nHost tools: %zu tool server%s %s connected. Find a tool in three "
			   "steps, never guessing its name or parameters: `list_tool_servers()` (each "
			   "server's name, description and tool count), `search_tools(query, "
			   "server=None, limit=10)` (the best matches, {\"name\", \"description\"}), "
			   "then `get_tool_info(name)` (its exact parameters, which are required, "
			   "their types; whether you may call it). Then `call_tool(name, "
			   "**arguments)` returns its result; `call_tools_batched([(name, "
			   "arguments), ...])` makes many calls in parallel. A refused or failed call "
			   "raises `ToolError` saying why (in a batch, the failed entries are "
			   "ToolError objects). Only tools the operator allowed may be called (by "
			   "default, read-only ones).",
			   n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
	if (skills > 0 || (skills == 0 && o->allow_skill_writes)) {
		buf_printf(&b,
			   "\n\nSkills: %lld saved Python function%s, kept across runs. Find one "
			   "the same way: `list_skills()`, `search_skills(query)`, "
			   "`get_skill_info(name)` (signature, inputs, versions); `load_skill(name, "
			   "version=None)` returns the function to call.",
			   (long long)skills, skills == 1 ? "" : "s");
		if (o->allow_skill_writes)
			buf_puts(&b, " `save_skill(name, function, description, inputs=None, "
				     "outputs=None)` keeps a function you wrote as a new version.");
	}
	return buf_detach(&b, NULL);
}

static const char *rlm_query_note(const struct loop *l)
{
	if (l->depth + 1 < l->nodes->max_depth)
		return "";
	if (l->depth == 0)
		return " Recursion is off in this session: here rlm_query and rlm_query_batched "
		       "are plain sub-calls, the same as llm_query and llm_query_batched.";
	return " You are yourself a child RLM at the last level of recursion: here rlm_query and "
	       "rlm_query_batched are plain sub-calls, the same as llm_query and "
	       "llm_query_batched.";
}

/* The system prompt's paragraph on the answer schema (prompts/
 * repl_schema.txt), the schema shown whole up to SCHEMA_SHOWN bytes. */
#define SCHEMA_SHOWN 16000
int rlm__loop_schema_paragraph(struct loop *l, char **text, size_t *len, struct rlm_err *err)
{
	const char *s = l->o->schema_json;
	size_t n = strlen(s), cut = n;
	char *shown;
	int rc;
	if (n > SCHEMA_SHOWN)
		cut = text_utf8_floor(s, SCHEMA_SHOWN);
	shown = cut < n ? xasprintf("%.*s\n[... the schema is cut here: %zu of its %zu bytes "
				    "shown ...]",
				    (int)cut, s, cut, n)
			: xstrdup(s);
	{
		struct prompt_var v[1] = {{"schema", shown, 0}};
		rc = rlm__loop_render("repl_schema.txt", v, 1, text, len, err);
	}
	free(shown);
	return rc;
}

/* The first two messages: the system prompt and the question with the
 * context's metadata. */
static int first_messages(struct loop *l, const char *question, const struct corpus *ctx, bool docs,
			  struct rlm_err *err)
{
	char sub_s[32], limit_s[32], max_s[16], time_s[32], calls_s[32], blocks_s[400];
	char *desc = rlm__loop_context_desc(ctx, docs), *text;
	int64_t t = l->o->exec_timeout_ns ? l->o->exec_timeout_ns : REPL_DEF_EXEC_TIMEOUT_NS;
	size_t len;
	int rc;
	text_fmt_count(sub_s, sizeof(sub_s), (int64_t)l->sub_chars);
	text_fmt_count(limit_s, sizeof(limit_s), (int64_t)l->output_limit);
	snprintf(max_s, sizeof(max_s), "%d", l->max_iterations);
	text_fmt_count(calls_s, sizeof(calls_s), REPL_DEF_CALLS_EXEC);
	if (t > 0)
		snprintf(blocks_s, sizeof(blocks_s),
			 "A block may make up to %s sub-calls and run for %s of its own time "
			 "(waiting on sub-calls does not count); past that it is interrupted "
			 "(KeyboardInterrupt), and if it does not stop, the REPL is restarted and "
			 "your variables are lost.",
			 calls_s, text_fmt_duration(time_s, sizeof(time_s), t));
	else
		snprintf(blocks_s, sizeof(blocks_s), "A block may make up to %s sub-calls.",
			 calls_s);
	{
		char *tools = tools_sentence(l->o);
		struct prompt_var v[7] = {{"sub_chars", sub_s, 0},
					  {"output_limit", limit_s, 0},
					  {"max_iterations", max_s, 0},
					  {"block_limits", blocks_s, 0},
					  {"sandbox", sandbox_sentence(&l->o->sandbox), 0},
					  {"rlm_query_note", rlm_query_note(l), 0},
					  {"tools", tools, 0}};
		if (l->o->system_prompt) {
			/* the caller's, verbatim, and what the controller's
			 * own features need after it */
			text = xasprintf("%s\n\n%s%s", l->o->system_prompt,
					 sandbox_sentence(&l->o->sandbox), tools);
			len = strlen(text);
			rc = 0;
		} else {
			rc = rlm__loop_render("repl_system.txt", v, 7, &text, &len, err);
		}
		free(tools);
		if (!rc && l->o->schema_json) {
			/* a paragraph of its own, so that the system prompt
			 * without a schema (and the prompts' digest) stays */
			char *para;
			size_t plen;
			rc = rlm__loop_schema_paragraph(l, &para, &plen, err);
			if (!rc) {
				char *both = xasprintf("%s\n\n%s", text, para);
				free(text);
				free(para);
				text = both;
				len = strlen(both);
			} else {
				free(text);
			}
		}
		if (!rc && l->o->system_extra && *l->o->system_extra) {
			/* the caller's additions (at a child: sub_system_extra,
			 * rlm/node.c), last */
			char *both = xasprintf("%s\n\n%s", text, l->o->system_extra);
			free(text);
			text = both;
			len = strlen(both);
		}
		if (!rc)
			rlm__loop_add_msg(l, LLM_SYSTEM, text, len);
	}
	if (!rc) {
		struct prompt_var v[4] = {{"question", question, 0},
					  {"context_desc", desc, 0},
					  {"sub_chars", sub_s, 0},
					  {"max_iterations", max_s, 0}};
		rc = rlm__loop_render("repl_first.txt", v, 4, &text, &len, err);
		if (!rc)
			rlm__loop_add_msg(l, LLM_USER, text, len);
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
			   text_fmt_count(a, sizeof(a), l->c.sub_failed),
			   text_fmt_count(b, sizeof(b), out->sub_calls),
			   l->c.sub_first_error ? l->c.sub_first_error : "?");
	}
	if (out->restarts)
		buf_printf(&w, "%sthe REPL worker was restarted %d time%s and lost its variables",
			   w.len ? "; " : "", out->restarts, out->restarts == 1 ? "" : "s");
	if (out->failed > l->c.sub_failed + out->restarts) {
		/* failures deeper down, under children that still answered */
		char a[32];
		buf_printf(&w, "%s%s more failure%s under child RLMs", w.len ? "; " : "",
			   text_fmt_count(a, sizeof(a), out->failed - l->c.sub_failed - out->restarts),
			   out->failed - l->c.sub_failed - out->restarts == 1 ? "" : "s");
	}
	if (w.len)
		out->warning = buf_detach(&w, NULL);
	buf_release(&w);
}

int rlm__loop_solve(const struct rlm_opts *o, const char *question, const struct corpus *ctx,
	       struct rlm_result *out, struct rlm_err *err)
{
	struct rlm_nodes t;
	int rc;
	rlm__nodes_init(&t, o, time_now_ns());
	rc = rlm__loop_node(&t, o, 0, 0, -1, question, ctx, out, err);
	rlm__tools_result(&t, out);
	rlm__nodes_release(&t);
	return rc;
}

int rlm__loop_node(struct rlm_nodes *t, const struct rlm_opts *o, int depth, int node, int parent,
	      const char *question, const struct corpus *ctx, struct rlm_result *out,
	      struct rlm_err *caller_err)
{
	struct rlm_err local = {0, ""}, *err = &local;
	struct loop l;
	bool docs;
	int rc = 0;
	int64_t start = time_now_ns();

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
	l.nodes = t;
	l.budget = &t->budget;
	l.depth = depth;
	l.node = node;
	l.parent = parent;
	l.t0 = t->t0;
	l.setup_at = -1;
	rlm__calls_init(&l.c, o, out, t, depth, node);
	l.c.parent = parent;
	l.c.ctx = ctx;
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

	if (depth == 0 && o->session_) {
		bool first;
		if ((rc = rlm__loop_session_open(&l, question, &first, err)))
			goto out;
		worker_begin(&l, ctx);
		if (first && !(rc = first_messages(&l, question, ctx, docs, err)))
			rlm__loop_session_first(&l);
	} else {
		worker_begin(&l, ctx);
		rc = first_messages(&l, question, ctx, docs, err);
	}
	if (rc)
		goto out;
	if (l.n_msgs >= 2) {
		/* What the node's model is told first, for the record. */
		cJSON *d = cJSON_CreateObject();
		char *ds;
		json_add(d, "user", cJSON_CreateString(l.msgs[1].text));
		ds = cJSON_PrintUnformatted(d);
		cJSON_Delete(d);
		rlm__record_event(o, node, parent, depth, 0, "prompt", l.msgs[0].text, l.msgs[0].len, ds);
		free(ds);
	}

	if ((o->schema_json || o->setup_code) && !l.repl) {
		/* The worker checks the schema, and runs the setup code: a bad
		 * one (or no validator), or setup code that raises, fails here,
		 * before a root call is paid for (a session's worker was given
		 * the schema as the node took it). */
		rc = start_worker(&l, ctx, err);
		if (rc) {
			rlm__calls_stop(&l.c, RLM_STOP_ERROR, "%s",
					err->msg[0] ? err->msg : rlm_strerror(rc));
			goto out;
		}
	}
	for (;;) {
		bool last = l.iteration >= l.max_iterations;
		if (rlm__calls_cancelled(&l.c)) {
			rlm__calls_stop(&l.c, RLM_STOP_CANCEL, "cancelled by the caller");
			break;
		}
		if (rlm__calls_adopt(&l.c))
			break;
		if (rlm__budget_expired(l.budget, time_now_ns())) {
			char when[48];
			snprintf(when, sizeof(when), "before turn %d", l.iteration + 1);
			rlm__calls_timeout(&l.c, when);
			break;
		}
		l.iteration++;
		if (!last)
			out->iterations = l.iteration;
		emit_turn(&l, true);
		if (rlm__loop_compact(&l, err) || root_submit(&l))
			break;
		if (!l.repl) {
			/* The worker (begun at the node's start) is taken
			 * while the first root call is out. */
			rc = start_worker(&l, ctx, err);
			if (rc) {
				atomic_store(&l.root_cancel, true);
				pthread_mutex_lock(&l.c.mu);
				while (!l.root_done)
					pthread_cond_wait(&l.c.cv, &l.c.mu);
				pthread_mutex_unlock(&l.c.mu);
				llm_call_release(&l.root);
				rlm__calls_stop(&l.c, RLM_STOP_ERROR,
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
			rlm__calls_stop(&l.c, RLM_STOP_ERROR, "%s",
				   err->msg[0] ? err->msg : rlm_strerror(rc));
			goto out;
		}
		rc = rlm__loop_turn(&l, last, err);
		emit_turn(&l, false);
		if (rc < 0)
			goto out;
		if (rc == TURN_DONE) {
			rc = 0;
			break;
		}
	}

out:
	emit_turn(&l, false); /* a turn a limit or a failure ended */
	if (!l.c.stopping)
		rlm__calls_stop(&l.c, RLM_STOP_ERROR, "%s", err->msg[0] ? err->msg : rlm_strerror(rc));
	out->stop = l.c.stop;
	out->stop_detail = l.c.stop_detail;
	l.c.stop_detail = NULL;
	if (out->stop != RLM_STOP_ANSWER && out->stop != RLM_STOP_ERROR && out->stop_detail)
		rlm__loop_emit(&l, "notice", out->stop_detail, strlen(out->stop_detail));
	if (!out->answer && l.content && out->stop != RLM_STOP_ANSWER)
		out->answer = xstrdup(l.content);
	out->found = out->stop == RLM_STOP_ANSWER && out->answer &&
		     !text_is_none(out->answer, strlen(out->answer)) &&
		     !text_is_blank(out->answer, strlen(out->answer));
	if (o->schema_json) {
		/* Never an unchecked answer presented as the typed one. */
		out->answer_json = l.answer_valid && out->answer;
		out->found = out->found && out->answer_json;
		if (!out->answer_json && l.invalid) {
			/* the errors once: a max_errors stop names the first */
			size_t first = strcspn(l.invalid, "\n");
			bool named = out->stop_detail &&
				     memmem(out->stop_detail, strlen(out->stop_detail), l.invalid,
					    first);
			char *d = xasprintf("%s; the answer never validated under the schema%s%s",
					    out->stop_detail ? out->stop_detail : "no answer",
					    named && !l.invalid[first] ? "" : "; the last errors: ",
					    named && !l.invalid[first] ? "" : l.invalid);
			free(out->stop_detail);
			out->stop_detail = d;
		}
	}
	if (l.repl) {
		struct repl_stats st;
		repl_stats(l.repl, &st);
		out->restarts = st.restarts - l.restarts0;
	}
	if (l.boot) {
		/* the node ended before its first turn */
		struct repl *w = NULL;
		worker_join(&l, &w, NULL);
		repl_free(w);
	}
	if (depth == 0 && o->session_)
		rlm__loop_session_close(&l);
	repl_free(l.repl);
	set_warning(&l);
	{
		char note[160];
		if (rlm__answer_cap(out, l.o->max_answer, note, sizeof(note)))
			rlm__loop_emit(&l, "notice", note, strlen(note));
	}
	if (rc == 0 && out->stop == RLM_STOP_ERROR)
		rc = rlm_err_set(err, RLM_EINVAL, "%s",
				 out->stop_detail ? out->stop_detail : "failed");
	rlm__result_finish(out, rc);
	for (size_t i = 0; i < l.n_msgs; i++)
		free((void *)(uintptr_t)l.msgs[i].text);
	free(l.msgs);
	free(l.content);
	free(l.last_error);
	free(l.final_reply);
	free(l.vars);
	free(l.invalid);
	rlm__calls_release(&l.c);
	out->solve_ns = time_now_ns() - start;
	if (rc && caller_err)
		*caller_err = local;
	return rc;
}
