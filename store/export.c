/* SPDX-License-Identifier: MIT */
/* store/export.c -- reading and checking a recorded run for the exporters,
 * the run without its credentials, and the run as a self-contained HTML
 * page (the JSONL trajectory is in store/trajectory.c).
 *
 * DESIGN
 * One pass over the events checks their shape and builds a table of
 * nodes, each with the indices of its own events and the code block of
 * its parent that started it; the trajectory writer derives turns,
 * message histories and timings from those lists.
 *
 * The HTML page gets the run itself, not this table: its script groups
 * the raw events on its own (showing kinds it does not know as they are),
 * and all it ever does with run text is set textContent. The JSON is
 * escaped so that nothing in it can end the <script> element it sits in.
 */
#include "export_int.h"
#include "../common/embed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_NODE    (1 << 20) /* node numbers above it are malformed */
#define MAX_LEVEL   64	      /* nesting deeper than this is malformed */
#define ENV_TYPE    "rlm-c-sandboxed-repl"
#define VIEWER	    "viewer.html"
#define VIEWER_MARK "@RUN_JSON@"

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

void store__xrun_release(struct xrun *x)
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

int store__xrun_load(struct xrun *x, const cJSON *run, struct rlm_err *err)
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
			store__xrun_release(x);
			return rc;
		}
	}
	x->meta = metadata(x);
	x->model = json_str(x->meta, "root_model");
	x->sub_model = json_str(json_get(run, "config"), "sub_model");
	if (!x->sub_model || !*x->sub_model)
		x->sub_model = x->model;
	return 0;
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
	cJSON *o = cJSON_CreateObject(), *kw = store_config_public(cfg);
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
/* ---- the run as it may be shown ----
 * rlm solve keeps no key in the first place (cli/cli_solve.c builds the
 * note from the parsed options); this is for what an older version, or
 * another writer of the store, may have kept, and for what is printed
 * (rlm runs show --json, the HTML page, the JSONL metadata line). */

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
	char *p = text_url_without_userinfo(t);
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

cJSON *store_config_public(const cJSON *cfg)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *it;
	for (it = cJSON_IsObject(cfg) ? cfg->child : NULL; it; it = it->next)
		if (it->string && !secret_key(it->string))
			json_add(o, it->string, cJSON_Duplicate(it, true));
	return o;
}

cJSON *store_run_public(const cJSON *run)
{
	cJSON *view = cJSON_CreateObject();
	for (cJSON *it = run->child; it; it = it->next) {
		if (!it->string)
			continue;
		if (strcmp(it->string, "config") == 0 && cJSON_IsObject(it))
			json_add(view, it->string, store_config_public(it));
		else if (strcmp(it->string, "note") == 0 && cJSON_IsObject(it))
			json_add(view, it->string, note_public(it));
		else
			cJSON_AddItemReferenceToObject(view, it->string, it);
	}
	return view;
}

/* ---- output ---- */

/* Append s to b with U+2028 and U+2029 (which some line splitters take
 * for line ends) and, for HTML, '<', '>' and '&' as JSON \u escapes. s is
 * JSON text: those characters only occur inside its strings. */
int store__put_escaped(struct buf *b, const char *s, bool html)
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

char *store__too_big(struct xrun *x, struct buf *b, const char *what)
{
	buf_release(b);
	rlm_err_set(x->err, RLM_ETOOBIG, "cannot export run '%.64s' as %s: over %zu MiB", x->id,
		    what, OUT_MAX >> 20);
	return NULL;
}
char *store_export_html(const struct cJSON *run, struct rlm_err *err)
{
	const struct embedded_file *f = embed_find(VIEWER);
	const char *mark;
	struct xrun x;
	struct buf out;
	char *json;
	int rc;
	if (store__xrun_load(&x, run, err))
		return NULL;
	if (!f || !(mark = strstr(f->data, VIEWER_MARK))) {
		store__xrun_release(&x);
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
		rc = store__put_escaped(&out, json, true);
	if (!rc)
		rc = buf_puts(&out, mark + strlen(VIEWER_MARK));
	free(json);
	if (rc) {
		char *s = store__too_big(&x, &out, "HTML");
		store__xrun_release(&x);
		return s;
	}
	store__xrun_release(&x);
	return buf_detach(&out, NULL);
}

