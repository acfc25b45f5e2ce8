/* SPDX-License-Identifier: MIT */
/* store/export.c -- a recorded run as the reference library's JSONL
 * trajectory (RLMLogger's format, which its visualizer reads) and as a
 * self-contained HTML page.
 *
 * DESIGN
 * The store keeps deltas (one event per step, of every node), the
 * reference format whole histories (each iteration repeats the messages
 * the root model saw). One pass over the events checks their shape and
 * builds a table of nodes, each with the indices of its own events and
 * the code block of its parent that started it; turns, message
 * histories and timings are derived from those lists while writing. Texts
 * borrowed from the run go into the output tree as cJSON string
 * references, so the repeated histories cost the output and not a copy.
 * The user message after a turn is not an event: it is rebuilt from the
 * turn's outputs (under the loop's "REPL output" headers) and notices,
 * without the template's "Turn N/M" line (docs/store.md).
 *
 * The HTML page gets the run itself, not this table: its script groups
 * the raw events on its own (showing kinds it does not know as they are),
 * and all it ever does with run text is set textContent. The JSON is
 * escaped so that nothing in it can end the <script> element it sits in.
 */
#include "export.h"
#include "../common/embed.h"
#include "../common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_NODE    (1 << 20)	      /* node numbers above it are malformed */
#define MAX_LEVEL   64		      /* nesting deeper than this is malformed */
#define OUT_MAX	    ((size_t)1 << 30) /* the largest export */
#define NO_EV	    SIZE_MAX
#define ENV_TYPE    "rlm-c-sandboxed-repl"
#define VIEWER	    "viewer.html"
#define VIEWER_MARK "@RUN_JSON@"

/* One event, its fields checked. Strings are borrowed from the run. */
struct ev {
	const char *kind;
	const char *text;  /* NULL when null or absent */
	const cJSON *data; /* an object, or NULL */
	int64_t t_ns;
	int node;
	int iteration; /* 0: none */
};

struct node {
	int id, parent, depth;
	int level;   /* nodes above it: the writers recurse that deep */
	size_t *evs; /* its events (indices into xrun.ev), in order */
	size_t n_evs, cap_evs;
	size_t *kids; /* its children (indices into xrun.nodes), in start order */
	size_t n_kids, cap_kids;
	size_t anchor;	  /* the parent's "code" event that started it, or NO_EV */
	size_t last_code; /* its latest "code" event so far */
	size_t start;	  /* its "child" event, or NO_EV */
	size_t end;	  /* its "child_end" event, or NO_EV */
	size_t prompt;	  /* its "prompt" event, or NO_EV */
	int64_t calls;	  /* its own "call" events */
};

struct xrun {
	const cJSON *run;
	const char *id; /* for messages */
	struct ev *ev;
	size_t n_ev;
	struct node *nodes;
	size_t n_nodes, cap_nodes;
	int *slot; /* node number -> index into nodes, -1: none */
	size_t n_slot;
	const cJSON *meta; /* the metadata line's fields (no type, no timestamp) */
	const char *model; /* the root model's name, for usage summaries */
	bool has_created;
	int64_t created_ms;
	struct rlm_err *err;
};

/* ---- reading and checking the run ---- */

static int bad_event(struct xrun *x, size_t i, const char *what)
{
	return rlm_err_set(x->err, RLM_EPARSE, "malformed run '%.64s': event %zu: %s", x->id, i,
			   what);
}

/* o[key] as an integer in [lo, hi]: 0 with *out (dflt when absent or
 * null), -1 when it is something else. */
static int get_int(const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t dflt,
		   int64_t *out)
{
	const cJSON *it = json_get(o, key);
	double v;
	if (!it || cJSON_IsNull(it)) {
		*out = dflt;
		return 0;
	}
	if (!cJSON_IsNumber(it))
		return -1;
	v = it->valuedouble;
	if (!(v >= (double)lo && v <= (double)hi) || v != (double)(int64_t)v)
		return -1;
	*out = (int64_t)v;
	return 0;
}

static void push_idx(size_t **a, size_t *n, size_t *cap, size_t v)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*a = xrealloc(*a, *cap * sizeof(**a));
	}
	(*a)[(*n)++] = v;
}

static struct node *node_at(struct xrun *x, int id)
{
	if (id < 0 || (size_t)id >= x->n_slot || x->slot[id] < 0)
		return NULL;
	return &x->nodes[x->slot[id]];
}

static struct node *node_add(struct xrun *x, int id, int parent, int depth, size_t anchor)
{
	struct node *n;
	if ((size_t)id >= x->n_slot) {
		size_t want = RLM_MAX((size_t)id + 1, x->n_slot * 2);
		x->slot = xrealloc(x->slot, want * sizeof(*x->slot));
		for (size_t i = x->n_slot; i < want; i++)
			x->slot[i] = -1;
		x->n_slot = want;
	}
	if (x->n_nodes == x->cap_nodes) {
		x->cap_nodes = x->cap_nodes ? x->cap_nodes * 2 : 8;
		x->nodes = xrealloc(x->nodes, x->cap_nodes * sizeof(*x->nodes));
	}
	n = &x->nodes[x->n_nodes];
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->parent = parent;
	n->depth = depth;
	n->anchor = anchor;
	n->last_code = n->start = n->end = n->prompt = NO_EV;
	x->slot[id] = (int)x->n_nodes++;
	return n;
}

/* Check event i (object j) and file it under its node. */
static int read_event(struct xrun *x, size_t i, const cJSON *j)
{
	struct ev *e = &x->ev[i];
	const cJSON *text = json_get(j, "text"), *data = json_get(j, "data");
	int64_t node, parent, depth, iteration;
	struct node *n;
	if (!cJSON_IsObject(j))
		return bad_event(x, i, "not an object");
	if (!(e->kind = json_str(j, "kind")))
		return bad_event(x, i, "'kind' is missing or not a string");
	if (!json_get(j, "node") || get_int(j, "node", 0, MAX_NODE, 0, &node))
		return bad_event(x, i, "'node' is missing or not a node number");
	if (!json_get(j, "t_ns") || get_int(j, "t_ns", 0, INT64_C(1) << 62, 0, &e->t_ns))
		return bad_event(x, i, "'t_ns' is missing or not a time");
	if (get_int(j, "parent", -1, MAX_NODE, -1, &parent) ||
	    get_int(j, "depth", 0, MAX_NODE, 0, &depth) ||
	    get_int(j, "iteration", 0, INT32_MAX, 0, &iteration))
		return bad_event(x, i, "'parent', 'depth' or 'iteration' is not an integer");
	if (text && !cJSON_IsNull(text) && !cJSON_IsString(text))
		return bad_event(x, i, "'text' is not a string");
	if (data && !cJSON_IsNull(data) && !cJSON_IsObject(data))
		return bad_event(x, i, "'data' is not an object");
	e->text = cJSON_IsString(text) ? text->valuestring : NULL;
	e->data = cJSON_IsObject(data) ? data : NULL;
	e->node = (int)node;
	e->iteration = (int)iteration;

	if (!(n = node_at(x, e->node))) {
		struct node *p = node_at(x, (int)parent);
		char what[96];
		if (!p || parent == node) {
			snprintf(what, sizeof(what), "node %d starts under unknown node %d",
				 e->node, (int)parent);
			return bad_event(x, i, what);
		}
		if (p->level >= MAX_LEVEL) {
			snprintf(what, sizeof(what), "node %d is nested more than %d deep", e->node,
				 MAX_LEVEL);
			return bad_event(x, i, what);
		}
		{
			size_t pi = (size_t)(p - x->nodes), anchor = p->last_code;
			int level = p->level + 1;
			n = node_add(x, e->node, (int)parent, (int)depth, anchor);
			n->level = level;
			p = &x->nodes[pi]; /* node_add may move the table */
			push_idx(&p->kids, &p->n_kids, &p->cap_kids, (size_t)(n - x->nodes));
		}
	}
	push_idx(&n->evs, &n->n_evs, &n->cap_evs, i);
	if (strcmp(e->kind, "code") == 0)
		n->last_code = i;
	else if (strcmp(e->kind, "call") == 0)
		n->calls++;
	else if (strcmp(e->kind, "child") == 0 && n->start == NO_EV && n->id != 0)
		n->start = i;
	else if (strcmp(e->kind, "child_end") == 0 && n->id != 0)
		n->end = i;
	else if (strcmp(e->kind, "prompt") == 0 && n->prompt == NO_EV)
		n->prompt = i;
	return 0;
}

static void xrun_release(struct xrun *x)
{
	for (size_t i = 0; i < x->n_nodes; i++) {
		free(x->nodes[i].evs);
		free(x->nodes[i].kids);
	}
	free(x->nodes);
	free(x->slot);
	free(x->ev);
	cJSON_Delete((cJSON *)(uintptr_t)x->meta);
	memset(x, 0, sizeof(*x));
}

static cJSON *metadata(const struct xrun *x);

static int xrun_load(struct xrun *x, const cJSON *run, struct rlm_err *err)
{
	const cJSON *events, *j;
	size_t i = 0;
	int64_t created;
	int rc;
	memset(x, 0, sizeof(*x));
	x->err = err;
	x->run = run;
	if (!cJSON_IsObject(run))
		return rlm_err_set(err, RLM_EPARSE, "malformed run: not a JSON object");
	x->id = json_str(run, "id") ? json_str(run, "id") : "?";
	events = json_get(run, "events");
	if (!cJSON_IsArray(events))
		return rlm_err_set(err, RLM_EPARSE, "malformed run '%.64s': no 'events' array",
				   x->id);
	if (get_int(run, "created_ms", 0, INT64_C(1) << 52, 0, &created))
		return rlm_err_set(err, RLM_EPARSE, "malformed run '%.64s': bad 'created_ms'",
				   x->id);
	x->has_created = json_get(run, "created_ms") && !cJSON_IsNull(json_get(run, "created_ms"));
	x->created_ms = created;
	x->n_ev = (size_t)cJSON_GetArraySize(events);
	x->ev = xcalloc(x->n_ev ? x->n_ev : 1, sizeof(*x->ev));
	node_add(x, 0, -1, 0, NO_EV);
	cJSON_ArrayForEach(j, events)
	{
		if ((rc = read_event(x, i++, j))) {
			xrun_release(x);
			return rc;
		}
	}
	x->meta = metadata(x);
	x->model = json_str(x->meta, "root_model");
	return 0;
}

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

/* A key of the configuration that may hold a credential. */
static bool secret_key(const char *k)
{
	size_t n = strlen(k);
	return strcasestr(k, "key") || strcasestr(k, "secret") || strcasestr(k, "password") ||
	       strcasestr(k, "auth") || strcasestr(k, "credential") ||
	       (n >= 5 && strcasecmp(k + n - 5, "token") == 0);
}

/* A word of a command line that gives --api-key, spelt out or as
 * getopt_long takes it abbreviated (--a, --ap, ..., each with =VALUE or
 * its value in the next word). *inline_value: the value is in the word. */
static bool api_key_word(const char *t, bool *inline_value)
{
	size_t n;
	if (strncmp(t, "--", 2) != 0)
		return false;
	t += 2;
	n = strcspn(t, "=");
	*inline_value = t[n] == '=';
	return n > 0 && n <= 7 && strncmp("api-key", t, n) == 0;
}

/* A string with the user:password@ of its URLs left out. */
static cJSON *public_string(const char *t)
{
	char *p = url_without_userinfo(t);
	cJSON *j = cJSON_CreateString(p);
	free(p);
	return j;
}

/* How a run was run, without what may be a credential: an --api-key (any
 * spelling) and its value in the command line, variables named like
 * secrets, and the user:password@ of URLs. rlm solve keeps none of them;
 * a note written otherwise or by an older version may. */
static cJSON *note_public(const cJSON *note)
{
	cJSON *out = cJSON_CreateObject();
	for (const cJSON *it = note->child; it; it = it->next) {
		if (!it->string)
			continue;
		if (strcmp(it->string, "argv") == 0 && cJSON_IsArray(it)) {
			cJSON *a = cJSON_CreateArray();
			for (const cJSON *v = it->child; v; v = v->next) {
				bool inl;
				if (!cJSON_IsString(v)) {
					json_add(a, NULL, cJSON_Duplicate(v, 1));
				} else if (api_key_word(v->valuestring, &inl)) {
					if (!inl && v->next)
						v = v->next;
				} else {
					json_add(a, NULL, public_string(v->valuestring));
				}
			}
			json_add(out, it->string, a);
		} else if (strcmp(it->string, "env") == 0 && cJSON_IsObject(it)) {
			cJSON *e = cJSON_CreateObject();
			for (const cJSON *v = it->child; v; v = v->next)
				if (v->string && !secret_key(v->string))
					json_add(e, v->string,
						 cJSON_IsString(v) ? public_string(v->valuestring)
								   : cJSON_Duplicate(v, 1));
			json_add(out, it->string, e);
		} else {
			json_add(out, it->string, cJSON_Duplicate(it, 1));
		}
	}
	return out;
}

/* The config without its credentials (none should be there: this is
 * for a store written by a version that kept one). */
static cJSON *config_public(const cJSON *cfg)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *it;
	for (it = cJSON_IsObject(cfg) ? cfg->child : NULL; it; it = it->next)
		if (it->string && !secret_key(it->string))
			json_add(o, it->string, cJSON_Duplicate(it, true));
	return o;
}

/* The metadata line's fields, from the run's config: what is there, null
 * where it is not. */
static cJSON *metadata(const struct xrun *x)
{
	const cJSON *cfg = json_get(x->run, "config"), *it;
	const char *model =
	    json_str(cfg, "root_model") ? json_str(cfg, "root_model") : json_str(cfg, "model");
	const char *backend =
	    json_str(cfg, "backend") ? json_str(cfg, "backend") : json_str(cfg, "provider");
	cJSON *o = cJSON_CreateObject(), *kw = config_public(cfg);
	json_add(o, "root_model", model ? cJSON_CreateString(model) : cJSON_CreateNull());
	it = json_get(cfg, "max_depth");
	json_add(o, "max_depth",
		 cJSON_IsNumber(it) ? cJSON_CreateNumber(it->valuedouble) : cJSON_CreateNull());
	it = json_get(cfg, "max_iterations");
	json_add(o, "max_iterations",
		 cJSON_IsNumber(it) ? cJSON_CreateNumber(it->valuedouble) : cJSON_CreateNull());
	json_add(o, "backend", backend ? cJSON_CreateString(backend) : cJSON_CreateNull());
	/* backend_kwargs: the config as it is, credentials left out. */
	if (model && !json_get(kw, "model_name"))
		json_add_str(kw, "model_name", model);
	json_add(o, "backend_kwargs", kw);
	json_add_str(o, "environment_type", ENV_TYPE);
	json_add(o, "environment_kwargs", cJSON_CreateObject());
	it = json_get(cfg, "other_backends");
	json_add(o, "other_backends",
		 cJSON_IsArray(it) ? cJSON_Duplicate(it, true) : cJSON_CreateNull());
	return o;
}

/* ---- one node's trajectory ---- */

/* The answer the node ended with, when it ended with one (an answer, or
 * the last call after max_iterations); NULL otherwise. */
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
			return status && strcmp(status, "done") == 0 ? answer : NULL;
		}
	} else {
		if (n->end == NO_EV)
			return NULL;
		answer = x->ev[n->end].text;
		stop = json_str(x->ev[n->end].data, "stop");
		if (!stop)
			return answer;
	}
	return strcmp(stop, "answer") == 0 || strcmp(stop, "max_iterations") == 0 ? answer : NULL;
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

/* A child RLM as the reference's RLMChatCompletion, its trajectory in
 * "metadata". */
static cJSON *child_completion(const struct xrun *x, const struct node *c, char **owned,
			       size_t *n_owned)
{
	const struct ev *start = &x->ev[c->start != NO_EV ? c->start : c->evs[0]];
	const struct ev *end = c->end != NO_EV ? &x->ev[c->end] : NULL;
	const cJSON *data = end ? end->data : NULL, *usage = json_get(data, "usage");
	const char *model = x->model ? x->model : "unknown";
	cJSON *o = cJSON_CreateObject(), *us = cJSON_CreateObject(), *mus = cJSON_CreateObject();
	cJSON *traj = cJSON_CreateObject();
	json_add(o, "root_model", ref(model));
	json_add(o, "prompt", ref(c->start != NO_EV ? start->text : NULL));
	json_add(o, "response", ref(end ? end->text : NULL));
	if (cJSON_IsObject(usage)) {
		cJSON *m = cJSON_CreateObject();
		json_add_num(m, "total_calls",
			     json_num(data, "calls", (double)subtree_calls(x, c)));
		json_add_num(m, "total_input_tokens", json_num(usage, "input_tokens", 0));
		json_add_num(m, "total_output_tokens", json_num(usage, "output_tokens", 0));
		json_add(mus, model, m);
	}
	json_add(us, "model_usage_summaries", mus);
	if (cJSON_IsNumber(json_get(data, "cost")))
		json_add_num(us, "total_cost", json_num(data, "cost", 0));
	json_add(o, "usage_summary", us);
	json_add(o, "execution_time", secs(end ? end->t_ns - start->t_ns : 0));
	json_add(traj, "run_metadata", cJSON_Duplicate(x->meta, true));
	json_add(traj, "iterations", node_iterations(x, c, NULL, owned, n_owned));
	json_add(o, "metadata", traj);
	return o;
}

/* One turn's iteration entry: events evs[first..last] of node n. */
static cJSON *iteration(const struct xrun *x, const struct node *n, size_t first, size_t last,
			const struct history *h, int64_t t_prev, const char *answer, char **owned,
			size_t *n_owned)
{
	const struct ev *reply = NULL, *e0 = &x->ev[n->evs[first]];
	cJSON *o = cJSON_CreateObject(), *blocks = cJSON_CreateArray(), *res = NULL;
	int64_t t_end = x->ev[n->evs[last]].t_ns, t_code = 0;
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
			for (size_t k = 0; k < n->n_kids; k++)
				if (x->nodes[n->kids[k]].anchor == i)
					json_add(calls, NULL,
						 child_completion(x, &x->nodes[n->kids[k]], owned,
								  n_owned));
			json_add(res, "rlm_calls", calls);
			json_add(res, "final_answer", cJSON_CreateNull());
			json_add(b, "result", res);
			json_add(blocks, NULL, b);
		} else if (strcmp(e->kind, "output") == 0 && res) {
			cJSON_ReplaceItemInObjectCaseSensitive(res, "stdout", ref(e->text));
			cJSON_ReplaceItemInObjectCaseSensitive(res, "execution_time",
							       secs(e->t_ns - t_code));
			res = NULL;
		}
	}
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

static int put_escaped(struct buf *b, const char *s, bool html);

/* Print o as one line (and free it). */
static void put_line(struct out *w, cJSON *o)
{
	char *s = json_print(o);
	cJSON_Delete(o);
	if (!w->rc)
		w->rc = put_escaped(&w->b, s, false);
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

/* ---- output ---- */

/* Append s to b with U+2028 and U+2029 (which some line splitters take
 * for line ends) and, for HTML, '<', '>' and '&' as JSON \u escapes. s is
 * JSON text: those characters only occur inside its strings. */
static int put_escaped(struct buf *b, const char *s, bool html)
{
	const char *run = s;
	int rc = 0;
	for (; *s && !rc; s++) {
		const char *esc = NULL;
		size_t skip = 1;
		unsigned char c = (unsigned char)*s;
		if (c == 0xE2 && (unsigned char)s[1] == 0x80 &&
		    ((unsigned char)s[2] == 0xA8 || (unsigned char)s[2] == 0xA9)) {
			esc = (unsigned char)s[2] == 0xA8 ? "\\u2028" : "\\u2029";
			skip = 3;
		} else if (html && c == '<') {
			esc = "\\u003c";
		} else if (html && c == '>') {
			esc = "\\u003e";
		} else if (html && c == '&') {
			esc = "\\u0026";
		}
		if (!esc)
			continue;
		if (!(rc = buf_append(b, run, (size_t)(s - run))))
			rc = buf_puts(b, esc);
		s += skip - 1;
		run = s + 1;
	}
	if (!rc)
		rc = buf_puts(b, run);
	return rc;
}

static char *too_big(struct xrun *x, struct buf *b, const char *what)
{
	buf_release(b);
	rlm_err_set(x->err, RLM_ETOOBIG, "cannot export run '%.64s' as %s: over %zu MiB", x->id,
		    what, OUT_MAX >> 20);
	return NULL;
}

char *store_export_jsonl(const struct cJSON *run, struct rlm_err *err)
{
	struct xrun x;
	struct out w;
	cJSON *meta;
	char **owned, *text;
	size_t n_owned = 0, cap = 0;
	if (xrun_load(&x, run, err))
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
	text = w.rc ? too_big(&x, &w.b, "JSONL") : buf_detach(&w.b, NULL);
	xrun_release(&x);
	return text;
}

char *store_export_html(const struct cJSON *run, struct rlm_err *err)
{
	const struct embedded_file *f = embedded_find(VIEWER);
	const char *mark;
	struct xrun x;
	struct buf out;
	char *json;
	int rc;
	if (xrun_load(&x, run, err))
		return NULL;
	if (!f || !(mark = strstr(f->data, VIEWER_MARK))) {
		xrun_release(&x);
		rlm_err_set(err, RLM_ENOTFOUND, "the viewer template '%s' is not in this binary",
			    VIEWER);
		return NULL;
	}
	{
		cJSON *view = store_run_public(run);
		json = json_print(view);
		cJSON_Delete(view);
	}
	buf_init(&out, OUT_MAX);
	rc = buf_append(&out, f->data, (size_t)(mark - f->data));
	if (!rc)
		rc = put_escaped(&out, json, true);
	if (!rc)
		rc = buf_puts(&out, mark + strlen(VIEWER_MARK));
	free(json);
	if (rc) {
		char *s = too_big(&x, &out, "HTML");
		xrun_release(&x);
		return s;
	}
	xrun_release(&x);
	return buf_detach(&out, NULL);
}

cJSON *store_run_public(const cJSON *run)
{
	cJSON *view = cJSON_CreateObject();
	for (cJSON *it = run->child; it; it = it->next) {
		if (!it->string)
			continue;
		if (strcmp(it->string, "config") == 0 && cJSON_IsObject(it))
			json_add(view, it->string, config_public(it));
		else if (strcmp(it->string, "note") == 0 && cJSON_IsObject(it))
			json_add(view, it->string, note_public(it));
		else
			cJSON_AddItemReferenceToObject(view, it->string, it);
	}
	return view;
}
