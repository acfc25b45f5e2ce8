/* SPDX-License-Identifier: MIT */
/* store/trajectory.c -- a recorded run as the reference library's JSONL
 * trajectory (RLMLogger's format, which its visualizer reads).
 *
 * DESIGN
 * The store keeps deltas (one event per step, of every node), the
 * reference format whole histories (each iteration repeats the messages
 * the root model saw). Turns, message histories and timings are derived
 * from the table of nodes store__xrun_load builds, while writing. Texts
 * borrowed from the run go into the output tree as cJSON string
 * references, so the repeated histories cost the output and not a copy.
 * The user message after a turn is not an event: it is rebuilt from the
 * turn's outputs (under the loop's "REPL output" headers) and notices,
 * without the template's "Turn N/M" line (docs/store.md). A code block's
 * rlm_calls are its plain sub-calls (their "call" events) and the child
 * RLMs it started, in the order they were made.
 */
#include "export_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small builders ---- */

static cJSON *ref(const char *s)
{
	return cJSON_CreateStringReference(s ? s : "");
}

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateStringReference(s) : cJSON_CreateNull();
}

static cJSON *secs(int64_t ns)
{
	return cJSON_CreateNumber((double)ns / 1e9);
}

/* "2026-11-23T18:15:00.123456+00:00" (Python's isoformat() of an aware
 * UTC time), t_ns after the run began; null when the run has no start. */
static cJSON *iso_time(const struct xrun *x, int64_t t_ns)
{
	int64_t us = x->created_ms * 1000 + t_ns / 1000;
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	char b[64];
	if (!x->has_created || !gmtime_r(&s, &tm))
		return cJSON_CreateNull();
	snprintf(b, sizeof(b), "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(us % 1000000));
	return cJSON_CreateString(b);
}
/* ---- one node's trajectory ---- */

/* The answer the node ended with, when it ended with one (an answer, an
 * incomplete one, or the last call after max_iterations); NULL otherwise. */
static const char *final_answer(const struct xrun *x, const struct node *n)
{
	const char *stop, *answer;
	if (n->id == 0) {
		const cJSON *res = json_get(x->run, "result");
		answer = json_str(x->run, "answer");
		stop = json_str(res, "stop");
		for (size_t p = n->n_evs; !stop && p-- > 0;)
			if (strcmp(x->ev[n->evs[p]].kind, "end") == 0)
				stop = json_str(x->ev[n->evs[p]].data, "stop");
		if (!stop) {
			const char *status = json_str(x->run, "status");
			return status && (strcmp(status, "done") == 0 ||
					  strcmp(status, "incomplete") == 0)
				   ? answer
				   : NULL;
		}
	} else {
		if (n->end == NO_EV)
			return NULL;
		answer = x->ev[n->end].text;
		stop = json_str(x->ev[n->end].data, "stop");
		if (!stop)
			return answer;
	}
	/* incomplete: the model did answer, over failed parts of its work */
	return strcmp(stop, "answer") == 0 || strcmp(stop, "max_iterations") == 0 ||
		       strcmp(stop, "incomplete") == 0
		   ? answer
		   : NULL;
}

static int64_t subtree_calls(const struct xrun *x, const struct node *n)
{
	int64_t c = n->calls;
	for (size_t k = 0; k < n->n_kids; k++)
		c += subtree_calls(x, &x->nodes[n->kids[k]]);
	return c;
}

static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

/* The messages the root model saw, as parallel arrays (content either
 * borrowed or owned). */
struct history {
	const char **role;
	const char **content;
	size_t n, cap;
};

static void hist_add(struct history *h, const char *role, const char *content)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->role = xrealloc(h->role, h->cap * sizeof(*h->role));
		h->content = xrealloc(h->content, h->cap * sizeof(*h->content));
	}
	h->role[h->n] = role;
	h->content[h->n++] = content;
}

static cJSON *hist_json(const struct history *h)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < h->n; i++) {
		cJSON *m = cJSON_CreateObject();
		json_add(m, "role", ref(h->role[i]));
		json_add(m, "content", ref(h->content[i]));
		json_add(a, NULL, m);
	}
	return a;
}

/* The user message after a turn (events evs[first..last] of the node):
 * its outputs under the loop's headers, and its notices. */
static char *next_user(const struct xrun *x, const struct node *n, size_t first, size_t last,
		       int blocks)
{
	struct buf b;
	int k = 0;
	bool open = false;
	buf_init(&b, 0);
	for (size_t p = first; p <= last; p++) {
		const struct ev *e = &x->ev[n->evs[p]];
		const char *t = e->text ? e->text : "";
		size_t len = strlen(t);
		if (strcmp(e->kind, "code") == 0) {
			k++;
			open = true;
			continue;
		}
		if (strcmp(e->kind, "output") != 0 && strcmp(e->kind, "notice") != 0)
			continue;
		if (b.len)
			buf_puts(&b, "\n\n");
		if (e->kind[0] == 'n') {
			buf_puts(&b, t);
			continue;
		}
		if (open && blocks > 1)
			buf_printf(&b, "REPL output (block %d of %d):\n", k, blocks);
		else
			buf_puts(&b, "REPL output:\n");
		open = false;
		while (len && t[len - 1] == '\n')
			len--;
		if (len)
			buf_append(&b, t, len);
		else
			buf_puts(&b, "(no output)");
	}
	return buf_detach(&b, NULL);
}

/* Where the root's lines go: a capped buffer and the first error. */
struct out {
	struct buf b;
	int rc;
};

static cJSON *node_iterations(const struct xrun *x, const struct node *n, struct out *lines,
			      char **owned, size_t *n_owned);

/* The visualizer's prompt_tokens and completion_tokens, from a usage
 * object (null when the run has none). */
static void add_tokens(cJSON *o, const cJSON *usage)
{
	const cJSON *in = json_get(usage, "input_tokens"), *out = json_get(usage, "output_tokens");
	json_add(o, "prompt_tokens",
		 cJSON_IsNumber(in) ? cJSON_CreateNumber(in->valuedouble) : cJSON_CreateNull());
	json_add(o, "completion_tokens",
		 cJSON_IsNumber(out) ? cJSON_CreateNumber(out->valuedouble) : cJSON_CreateNull());
}

/* The reference's usage_summary: {"model_usage_summaries": {model:
 * {"total_calls", "total_input_tokens", "total_output_tokens"}},
 * "total_cost"}, from a usage object (none: an empty summary) and the
 * cost in data (none: left out). */
static cJSON *usage_summary(const char *model, const cJSON *usage, double calls,
			    const cJSON *data)
{
	cJSON *us = cJSON_CreateObject(), *mus = cJSON_CreateObject();
	if (cJSON_IsObject(usage)) {
		cJSON *m = cJSON_CreateObject();
		json_add_num(m, "total_calls", calls);
		json_add_num(m, "total_input_tokens", json_num(usage, "input_tokens", 0));
		json_add_num(m, "total_output_tokens", json_num(usage, "output_tokens", 0));
		json_add(mus, model, m);
	}
	json_add(us, "model_usage_summaries", mus);
	if (cJSON_IsNumber(json_get(data, "cost")))
		json_add_num(us, "total_cost", json_num(data, "cost", 0));
	return us;
}

/* A plain sub-call (llm_query: a "call" event of role "sub" that kept its
 * prompt) as the reference's RLMChatCompletion: the prompt and reply as
 * the event kept them (cut, docs/store.md), a failed call's reply being
 * "Error: ..." as llm_query returned it. NULL for other calls. */
static cJSON *sub_completion(const struct xrun *x, const struct ev *e)
{
	const cJSON *d = e->data, *usage = json_get(d, "usage");
	const char *role = json_str(d, "role"), *prompt = json_str(d, "prompt");
	const char *model = json_str(d, "model"), *resp = json_str(d, "response");
	cJSON *o;
	if (!role || strcmp(role, "sub") != 0 || !prompt)
		return NULL;
	if (!model)
		model = x->sub_model ? x->sub_model : "unknown";
	o = cJSON_CreateObject();
	json_add(o, "root_model", ref(model));
	json_add(o, "prompt", ref(prompt));
	if (resp) {
		json_add(o, "response", ref(resp));
	} else {
		char *t = xasprintf("Error: %s", json_str(d, "error") ? json_str(d, "error") : "");
		json_add_str(o, "response", t);
		free(t);
	}
	add_tokens(o, usage);
	json_add(o, "usage_summary", usage_summary(model, usage, 1, d));
	json_add(o, "execution_time",
		 cJSON_IsNumber(json_get(d, "ms")) ? cJSON_CreateNumber(json_num(d, "ms", 0) / 1e3)
						   : cJSON_CreateNull());
	return o;
}

/* A child RLM as the reference's RLMChatCompletion, its trajectory in
 * "metadata". */
static cJSON *child_completion(const struct xrun *x, const struct node *c, char **owned,
			       size_t *n_owned)
{
	const struct ev *start = &x->ev[c->start != NO_EV ? c->start : c->evs[0]];
	const struct ev *end = c->end != NO_EV ? &x->ev[c->end] : NULL;
	const cJSON *data = end ? end->data : NULL, *usage = json_get(data, "usage");
	const char *model = x->model ? x->model : "unknown";
	cJSON *o = cJSON_CreateObject(), *traj = cJSON_CreateObject();
	json_add(o, "root_model", ref(model));
	json_add(o, "prompt", ref(c->start != NO_EV ? start->text : NULL));
	json_add(o, "response", ref(end ? end->text : NULL));
	add_tokens(o, usage);
	json_add(o, "usage_summary",
		 usage_summary(model, usage, json_num(data, "calls", (double)subtree_calls(x, c)),
			       data));
	json_add(o, "execution_time", secs(end ? end->t_ns - start->t_ns : 0));
	json_add(traj, "run_metadata", cJSON_Duplicate(x->meta, true));
	json_add(traj, "iterations", node_iterations(x, c, NULL, owned, n_owned));
	json_add(o, "metadata", traj);
	return o;
}

/* The rlm_calls of the code block being written: the block's "code" event
 * (anchor), its array, and a cursor over the node's children. */
struct block_calls {
	size_t anchor;
	cJSON *calls;
	size_t k;
};

static size_t kid_start(const struct node *c)
{
	return c->start != NO_EV ? c->start : c->evs[0];
}

/* Into the block's rlm_calls, in the order they were made with its plain
 * sub-calls: its children that started before event `before`. Children
 * are in start order, and a block's start after its code event. */
static void add_kids(const struct xrun *x, const struct node *n, struct block_calls *b,
		     size_t before, char **owned, size_t *n_owned)
{
	while (b->calls && b->k < n->n_kids) {
		const struct node *c = &x->nodes[n->kids[b->k]];
		size_t start = kid_start(c);
		if (c->anchor == b->anchor && start < before)
			json_add(b->calls, NULL, child_completion(x, c, owned, n_owned));
		else if (c->anchor == b->anchor || start > b->anchor)
			break; /* later, or another block's */
		b->k++;
	}
}

/* A block's output: what the model was shown is stdout, but for the
 * error's text at its end (data.error_at, a byte offset: code that
 * raised), which is stderr. */
static void set_output(cJSON *res, const struct ev *e)
{
	const char *t = e->text ? e->text : "";
	int64_t at = json_int(e->data, "error_at", -1);
	if (at < 0 || (uint64_t)at >= strlen(t)) {
		cJSON_ReplaceItemInObjectCaseSensitive(res, "stdout", ref(e->text));
		return;
	}
	at = (int64_t)text_utf8_floor(t, (size_t)at); /* never inside a character */
	{
		char *head = xstrndup(t, (size_t)at);
		cJSON_ReplaceItemInObjectCaseSensitive(res, "stdout", cJSON_CreateString(head));
		free(head);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(res, "stderr", ref(t + at));
}

/* One turn's iteration entry: events evs[first..last] of node n. */
static cJSON *iteration(const struct xrun *x, const struct node *n, size_t first, size_t last,
			const struct history *h, int64_t t_prev, const char *answer, char **owned,
			size_t *n_owned)
{
	const struct ev *reply = NULL, *e0 = &x->ev[n->evs[first]];
	cJSON *o = cJSON_CreateObject(), *blocks = cJSON_CreateArray(), *res = NULL;
	int64_t t_end = x->ev[n->evs[last]].t_ns, t_code = 0;
	struct block_calls blk = {NO_EV, NULL, 0};
	cJSON *tools = NULL; /* the open block's host tool requests */
	for (size_t p = first; p <= last; p++) {
		size_t i = n->evs[p];
		const struct ev *e = &x->ev[i];
		if (strcmp(e->kind, "reply") == 0 && !reply) {
			reply = e;
		} else if (strcmp(e->kind, "code") == 0) {
			cJSON *b = cJSON_CreateObject(), *calls = cJSON_CreateArray();
			res = cJSON_CreateObject();
			t_code = e->t_ns;
			json_add(b, "code", ref(e->text));
			json_add(res, "stdout", ref(""));
			json_add(res, "stderr", ref(""));
			json_add(res, "locals", cJSON_CreateObject());
			json_add(res, "execution_time", secs(0));
			add_kids(x, n, &blk, SIZE_MAX, owned, n_owned); /* the last block's */
			blk = (struct block_calls){i, calls, blk.k};
			json_add(res, "rlm_calls", calls);
			tools = cJSON_CreateArray();
			json_add(res, "tool_calls", tools);
			json_add(res, "final_answer", cJSON_CreateNull());
			json_add(b, "result", res);
			json_add(blocks, NULL, b);
		} else if (strcmp(e->kind, "call") == 0 && blk.calls) {
			cJSON *sc = sub_completion(x, e);
			if (sc) {
				add_kids(x, n, &blk, i, owned, n_owned);
				json_add(blk.calls, NULL, sc);
			}
		} else if (strcmp(e->kind, "tool") == 0 && tools) {
			/* rlm's own: a host tool or skill request of the block
			 * (docs/tools.md), as the run recorded it */
			cJSON *t = e->data ? cJSON_Duplicate(e->data, true) : cJSON_CreateObject();
			json_add(tools, NULL, t);
		} else if (strcmp(e->kind, "output") == 0 && res) {
			set_output(res, e);
			cJSON_ReplaceItemInObjectCaseSensitive(res, "execution_time",
							       secs(e->t_ns - t_code));
			res = NULL;
		}
	}
	add_kids(x, n, &blk, SIZE_MAX, owned, n_owned);
	/* An answer set by code (not FINAL in the text) is its last block's. */
	if (answer && cJSON_GetArraySize(blocks) > 0 && reply &&
	    !strstr(reply->text ? reply->text : "", "FINAL")) {
		cJSON *last_res =
		    json_get(cJSON_GetArrayItem(blocks, cJSON_GetArraySize(blocks) - 1), "result");
		cJSON_ReplaceItemInObjectCaseSensitive(last_res, "final_answer", ref(answer));
	}
	json_add_str(o, "type", "iteration");
	json_add_num(o, "iteration", e0->iteration);
	json_add(o, "timestamp", iso_time(x, t_end));
	json_add(o, "prompt", hist_json(h));
	json_add(o, "response", ref(reply ? reply->text : NULL));
	json_add(o, "code_blocks", blocks);
	json_add(o, "final_answer", str_or_null(answer));
	json_add(o, "iteration_time", secs(t_end - t_prev));
	return o;
}

/* Print o as one line (and free it). */
static void put_line(struct out *w, cJSON *o)
{
	char *s = json_print(o);
	cJSON_Delete(o);
	if (!w->rc)
		w->rc = store__put_escaped(&w->b, s, false);
	if (!w->rc)
		w->rc = buf_putc(&w->b, '\n');
	free(s);
}

/* The node's iteration entries: printed as lines into `lines` when it is
 * not NULL (the root), else returned as an array. Rebuilt user messages
 * go into owned[] (freed by the caller once everything is printed). */
static cJSON *node_iterations(const struct xrun *x, const struct node *n, struct out *lines,
			      char **owned, size_t *n_owned)
{
	struct history h = {0};
	cJSON *arr = lines ? NULL : cJSON_CreateArray();
	const char *answer = final_answer(x, n);
	int64_t t_prev;
	int last_it = 0;
	size_t p = 0;
	/* The last turn with a reply gets the final answer. */
	for (size_t q = 0; q < n->n_evs; q++)
		if (strcmp(x->ev[n->evs[q]].kind, "reply") == 0)
			last_it = x->ev[n->evs[q]].iteration;
	if (n->prompt != NO_EV) {
		const struct ev *pe = &x->ev[n->prompt];
		hist_add(&h, "system", pe->text ? pe->text : "");
		hist_add(&h, "user", json_str(pe->data, "user") ? json_str(pe->data, "user") : "");
		t_prev = pe->t_ns;
	} else {
		const char *q = n->id == 0	    ? json_str(x->run, "question")
				: n->start != NO_EV ? x->ev[n->start].text
						    : NULL;
		if (q)
			hist_add(&h, "user", q);
		t_prev = n->n_evs ? x->ev[n->evs[0]].t_ns : 0;
	}
	while (p < n->n_evs && !(lines && lines->rc)) {
		size_t first, last;
		const struct ev *reply = NULL;
		int it = x->ev[n->evs[p]].iteration, blocks = 0;
		if (it <= 0) {
			p++;
			continue;
		}
		first = last = p;
		for (; p < n->n_evs; p++) {
			const struct ev *e = &x->ev[n->evs[p]];
			if (e->iteration <= 0)
				continue;
			if (e->iteration != it)
				break;
			last = p;
			if (strcmp(e->kind, "reply") == 0 && !reply)
				reply = e;
			blocks += strcmp(e->kind, "code") == 0;
		}
		if (!reply)
			continue; /* a turn whose root call never answered */
		{
			cJSON *o = iteration(x, n, first, last, &h, t_prev,
					     it == last_it ? answer : NULL, owned, n_owned);
			char *next;
			if (lines)
				put_line(lines, o);
			else
				json_add(arr, NULL, o);
			next = next_user(x, n, first, last, blocks);
			owned[(*n_owned)++] = next;
			hist_add(&h, "assistant",
				 blank(reply->text) ? "(empty reply)" : reply->text);
			hist_add(&h, "user", next);
		}
		t_prev = x->ev[n->evs[last]].t_ns;
	}
	free(h.role);
	free(h.content);
	return arr;
}

char *store_export_jsonl(const struct cJSON *run, struct rlm_err *err)
{
	struct xrun x;
	struct out w;
	cJSON *meta;
	char **owned, *text;
	size_t n_owned = 0, cap = 0;
	if (store__xrun_load(&x, run, err))
		return NULL;
	/* One rebuilt user message per turn with a reply, at most. */
	for (size_t i = 0; i < x.n_ev; i++)
		cap += strcmp(x.ev[i].kind, "reply") == 0;
	owned = xcalloc(cap + 1, sizeof(*owned));
	buf_init(&w.b, OUT_MAX);
	w.rc = 0;
	meta = cJSON_CreateObject();
	json_add_str(meta, "type", "metadata");
	json_add(meta, "timestamp", iso_time(&x, 0));
	for (const cJSON *it = x.meta->child; it; it = it->next)
		json_add(meta, it->string, cJSON_Duplicate(it, true));
	put_line(&w, meta);
	node_iterations(&x, &x.nodes[0], &w, owned, &n_owned);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	free(owned);
	text = w.rc ? store__too_big(&x, &w.b, "JSONL") : buf_detach(&w.b, NULL);
	store__xrun_release(&x);
	return text;
}
