/* SPDX-License-Identifier: MIT */
/* rlm/record.c -- a solve and its store: the call cache in front of the
 * pool, the memo of child RLMs, and the run with its events.
 *
 * DESIGN
 * The store answers before the network: the front's lookup runs on the
 * pool thread that would send the call, and a call that succeeded is kept
 * (rlm_store_call_put commits) before its caller sees it, so a run killed at
 * any point and run again makes no call twice. A hit is a call like any
 * other for budgets and usage (a resumed run must stop where the first one
 * would have), and is also counted as saved. A call asked while the same
 * call is out waits for it (struct record_flight) and is a hit too.
 *
 * A child RLM is memoised under its question, its context's digest and
 * everything of the solve that shapes its answer (the models, the
 * sampling, the limits, the depth it runs at): a child asked again is not
 * started at all. Only answers (stop ANSWER) are kept: a child cut short
 * by a limit is not an answer to reuse.
 *
 * The record never fails the solve: a store that errs is logged (once per
 * kind of trouble) and the solve goes on uncached.
 *
 * The store takes plain structs of its own (store/ includes nothing of
 * llm/): the converters below are where a call and its usage cross. */
#include "solve_int.h"
#include "prompt.h"
#include "../common/embed.h"
#include "../common/json.h"
#include "../common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct rlm_record *rec_of(const struct rlm_opts *o)
{
	return o && o->record_ && o->record_->store && !atomic_load(&o->record_->broken)
		   ? o->record_
		   : NULL;
}

/* The store failed: said once, and the solve goes on without it (a locked
 * or broken store would cost a busy timeout on every write). */
static void store_trouble(const struct rlm_record *rec, const char *what,
			  const struct rlm_err *err)
{
	struct rlm_record *r = (struct rlm_record *)(uintptr_t)rec;
	if (!atomic_exchange(&r->broken, true))
		log_warn("the store failed (%s): %s; the solve goes on without it", what,
			 err->msg);
}

/* ---- calls and usage in the store's terms ---- */

static struct store_usage usage_to_store(const struct llm_usage *u)
{
	return (struct store_usage){.input_tokens = u->input_tokens,
				    .output_tokens = u->output_tokens,
				    .cached_tokens = u->cached_tokens,
				    .cache_write_tokens = u->cache_write_tokens};
}

static struct llm_usage usage_of_store(const struct store_usage *u)
{
	return (struct llm_usage){.input_tokens = u->input_tokens,
				  .output_tokens = u->output_tokens,
				  .cached_tokens = u->cached_tokens,
				  .cache_write_tokens = u->cache_write_tokens};
}

#define KEY_MSGS_ON_STACK 16

void rlm_store_call_key(const struct llm_call *c, struct store_key *out)
{
	const struct llm_params *p = &c->params;
	struct store_msg stack[KEY_MSGS_ON_STACK];
	struct store_msg *m = c->n_msgs <= KEY_MSGS_ON_STACK
				      ? stack
				      : xmalloc(c->n_msgs * sizeof(*m));
	struct store_call_req q = {.model_id = c->model ? llm_model_cache_id(c->model) : NULL,
				   .msgs = m,
				   .n_msgs = c->n_msgs,
				   .max_tokens = p->max_tokens,
				   .temperature = p->temperature,
				   .top_p = p->top_p,
				   .stop = p->stop,
				   .n_stop = p->n_stop,
				   .extra_json = p->extra_json};
	for (size_t i = 0; i < c->n_msgs; i++)
		m[i] = (struct store_msg){.role = (int)c->msgs[i].role,
					  .text = c->msgs[i].text,
					  .len = c->msgs[i].len};
	store_call_key(&q, out);
	if (m != stack)
		free(m);
}

int rlm_store_call_get(struct store *s, const struct store_key *k, struct llm_call *c,
		       struct rlm_err *err)
{
	struct store_reply r;
	int rc = store_call_get(s, k, &r, err);
	if (rc != 1)
		return rc;
	free(c->text);
	free(c->finish_reason);
	c->text = r.text; /* handed over: r is not released */
	c->len = r.len;
	c->finish_reason = r.finish;
	c->usage = usage_of_store(&r.usage);
	c->cost = r.cost;
	c->rc = 0;
	return 1;
}

int rlm_store_call_put(struct store *s, const struct store_key *k, const struct llm_call *c,
		       struct rlm_err *err)
{
	struct store_reply r;
	if (c->rc != 0 || !c->text)
		return rlm_err_set(err, RLM_EINVAL, "only a successful call can be cached");
	r = (struct store_reply){.text = c->text,
				 .len = c->len,
				 .finish = c->finish_reason,
				 .usage = usage_to_store(&c->usage),
				 .cost = c->cost};
	return store_call_put(s, k, c->model ? llm_model_name(c->model) : NULL, &r, err);
}

/* ---- the front of the pool ---- */

/* A call sent by this solve and not done yet: the same call asked meanwhile
 * (children whose first prompts are alike, a batch with repeats) waits for
 * it instead of going out twice, and takes its outcome: its answer from
 * the store, or its failure. So a solve makes each distinct call once, as
 * a resumed one does (each is in the store by then), and every copy of a
 * call gets the same answer. A copy waits on a pool worker, as long as the
 * call it waits for takes: the worker it would have spent sending the same
 * request. */
struct record_flight {
	struct store_key k;
	const struct llm_call *call; /* the one sent */
	struct record_flight *next;  /* in rec->flights while up */
	int refs;                    /* the sender and the copies waiting */
	bool done;                   /* landed: the outcome below is set */
	int rc;                      /* its rc, 0: its answer is in the store */
	char *error;                 /* its error when rc != 0 */
};

#define FLIGHT_POLL_NS 50000000LL /* a waiter looks at its cancel flag */

static struct record_flight *flight_find(struct rlm_record *rec, const struct store_key *k)
{
	struct record_flight *f = rec->flights;
	while (f && memcmp(f->k.b, k->b, sizeof(k->b)) != 0)
		f = f->next;
	return f;
}

static bool call_cancelled(const struct llm_call *c)
{
	return c->cancel && atomic_load(c->cancel);
}

/* Drop a reference to f (under fl_mu); the last frees it. */
static void flight_put(struct record_flight *f)
{
	if (--f->refs == 0) {
		free(f->error);
		free(f);
	}
}

/* f lands with c's outcome (under fl_mu): out of the list, its waiters
 * woken, the sender's reference dropped. */
static void flight_land(struct rlm_record *rec, struct record_flight *f, int rc,
			const char *error)
{
	struct record_flight **p;
	for (p = &rec->flights; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	f->done = true;
	f->rc = rc;
	f->error = rc ? xstrdup(error ? error : "the call failed") : NULL;
	pthread_cond_broadcast(&rec->fl_cv);
	flight_put(f);
}

/* Copy c waits (under fl_mu) for f to land, or for its own cancel. Returns
 * 1 with c failed as f did, 0 when f's answer is in the store, -1 when c
 * must go out itself (cancelled: the pool ends it so; or f was cancelled,
 * which is not c's fate). */
static int flight_wait(struct rlm_record *rec, struct record_flight *f, struct llm_call *c)
{
	int r;
	f->refs++;
	while (!f->done && !call_cancelled(c)) {
		int64_t until = time_now_ns() + FLIGHT_POLL_NS;
		struct timespec ts = {(time_t)(until / 1000000000LL), (long)(until % 1000000000LL)};
		pthread_cond_timedwait(&rec->fl_cv, &rec->fl_mu, &ts);
	}
	if (!f->done || f->rc == RLM_ECANCEL) {
		r = -1;
	} else if (f->rc) {
		c->rc = f->rc;
		c->error = xstrdup(f->error);
		r = 1;
	} else {
		r = 0;
	}
	flight_put(f);
	return r;
}

static bool front_lookup(void *arg, struct llm_call *c)
{
	struct rlm_record *rec = arg;
	struct store_key k;
	struct rlm_err err = {0, ""};
	struct record_flight *f;
	int rc;
	if (rec->refresh || atomic_load(&rec->broken))
		return false;
	rlm_store_call_key(c, &k);
	pthread_mutex_lock(&rec->fl_mu);
	while ((f = flight_find(rec, &k))) {
		/* the same call is out: its outcome is ours */
		rc = flight_wait(rec, f, c);
		if (rc == 1) {
			pthread_mutex_unlock(&rec->fl_mu);
			return true; /* failed as it did */
		}
		if (rc == 0 || call_cancelled(c))
			break;
	}
	if (call_cancelled(c)) {
		pthread_mutex_unlock(&rec->fl_mu);
		return false; /* the pool ends it as cancelled */
	}
	/* Up before the store is asked: a copy asked from now on waits for
	 * this one, and one that landed before is in the store. */
	f = xcalloc(1, sizeof(*f));
	f->k = k;
	f->call = c;
	f->refs = 1;
	f->next = rec->flights;
	rec->flights = f;
	pthread_mutex_unlock(&rec->fl_mu);
	rc = rlm_store_call_get(rec->store, &k, c, &err);
	if (rc < 0)
		store_trouble(rec, "a cache lookup", &err);
	if (rc == 1) {
		pthread_mutex_lock(&rec->fl_mu);
		flight_land(rec, f, 0, NULL);
		pthread_mutex_unlock(&rec->fl_mu);
		return true;
	}
	return false; /* this one goes out; front_release lands it */
}

static void front_save(void *arg, const struct llm_call *c)
{
	const struct rlm_record *rec = arg;
	struct store_key k;
	struct rlm_err err = {0, ""};
	if (atomic_load(&rec->broken))
		return;
	rlm_store_call_key(c, &k);
	if (rlm_store_call_put(rec->store, &k, c, &err) < 0)
		store_trouble(rec, "keeping a call", &err);
}

/* c went out (saved first when it succeeded): its copies take its answer
 * from the store, or its failure. */
static void front_release(void *arg, const struct llm_call *c)
{
	struct rlm_record *rec = arg;
	struct record_flight *f;
	pthread_mutex_lock(&rec->fl_mu);
	for (f = rec->flights; f && f->call != c; f = f->next)
		;
	if (f)
		flight_land(rec, f, c->rc, c->error);
	pthread_mutex_unlock(&rec->fl_mu);
}

const struct llm_front *rlm__record_front(const struct rlm_opts *o)
{
	const struct rlm_record *rec = rec_of(o);
	return rec ? &rec->front : NULL;
}

/* ---- the run ---- */

static const char *model_id(const struct llm_model *m)
{
	return m ? llm_model_cache_id(m) : "";
}

/* The prompt templates in effect (a --prompts directory's overrides, or
 * the built-in ones), as a digest. */
static void prompts_digest(char hex[33])
{
	static const char *const names[] = {"repl_system.txt", "repl_first.txt", "repl_next.txt",
					    "repl_nocode.txt", "repl_last.txt",	 "tree_leaf.txt",
					    "tree_combine.txt"};
	const char *dir = rlm_prompt_dir_in_use();
	struct store_kb kb;
	struct store_key k;
	store_kb_init(&kb, "prompts/1");
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct embedded_file *f = embed_find(names[i]);
		struct rlm_err err = {0, ""};
		char *path = dir ? xasprintf("%s/%s", dir, names[i]) : NULL, *text = NULL;
		size_t len = 0;
		if (path && file_read(path, 1 << 20, &text, &len, &err) == 0)
			store_kb_str(&kb, text, len);
		else
			store_kb_str(&kb, f ? f->data : "", f ? f->len : 0);
		free(text);
		free(path);
	}
	/* repl_compact.txt came later: only an override of it counts, so
	 * that the digest of the built-in templates (in every memo and cache
	 * key) stays what it was. */
	if (dir) {
		struct rlm_err err = {0, ""};
		char *path = xasprintf("%s/repl_compact.txt", dir), *text = NULL;
		size_t len = 0;
		if (file_read(path, 1 << 20, &text, &len, &err) == 0) {
			store_kb_str(&kb, "repl_compact.txt", 16);
			store_kb_str(&kb, text, len);
		}
		free(text);
		free(path);
	}
	store_kb_final(&kb, &k);
	store_key_hex(&k, hex);
}

/* What of o shapes the answer, as JSON: the run's config (and the memo's
 * key). */
/* key: the digest of text, when text is set. */
static void add_digest(cJSON *j, const char *key, const char *text)
{
	struct store_key k;
	char hex[33];
	if (!text)
		return;
	store_digest(text, strlen(text), &k);
	store_key_hex(&k, hex);
	json_add_str(j, key, hex);
}

char *rlm_config_json(const struct rlm_opts *o)
{
	cJSON *j = cJSON_CreateObject(), *p = cJSON_CreateObject(), *stop = cJSON_CreateArray();
	const struct llm_model *sub = o->sub_model ? o->sub_model : o->model;
	char *s, prompts[33];
	json_add_str(j, "strategy", o->strategy == RLM_REPL ? "repl" : "tree");
	json_add_str(j, "provider", o->model ? llm_model_provider(o->model) : "");
	json_add_str(j, "model", o->model ? llm_model_name(o->model) : "");
	json_add_str(j, "model_id", model_id(o->model));
	json_add_str(j, "sub_model", sub ? llm_model_name(sub) : "");
	json_add_str(j, "sub_model_id", model_id(sub));
	prompts_digest(prompts);
	json_add_str(j, "prompts", prompts);
	json_add_str(j, "python", o->python ? o->python : "/usr/bin/python3");
	json_add_bool(j, "unsafe", o->sandbox.unsafe);
	json_add_num(p, "max_tokens", o->params.max_tokens);
	json_add_num(p, "temperature", o->params.temperature);
	json_add_num(p, "top_p", o->params.top_p);
	for (size_t i = 0; i < o->params.n_stop; i++)
		json_add(stop, NULL, cJSON_CreateString(o->params.stop[i]));
	json_add(p, "stop", stop);
	if (o->params.extra_json)
		json_add_str(p, "extra_json", o->params.extra_json);
	json_add(j, "params", p);
	json_add_num(j, "max_iterations", o->max_iterations > 0 ? o->max_iterations : 30);
	json_add_num(j, "max_depth", o->max_depth ? o->max_depth : RLM_DEF_MAX_DEPTH);
	json_add_num(j, "max_errors", o->max_errors);
	json_add_num(j, "output_limit", (double)o->output_limit);
	json_add_num(j, "leaf_chars", (double)o->leaf_chars);
	json_add_num(j, "exec_timeout_ms", (double)(o->exec_timeout_ns / 1000000));
	json_add_bool(j, "python_fences", o->python_fences);
	json_add_num(j, "timeout_ms", (double)(o->timeout_ns / 1000000));
	json_add_num(j, "max_tokens", (double)o->max_tokens);
	json_add_num(j, "max_cost", o->max_cost);
	json_add_num(j, "max_sub_calls", (double)o->max_sub_calls);
	/* Only when set: the config is in every memo key, and keys made
	 * before this limit existed stay good. */
	if (o->max_calls > 0)
		json_add_num(j, "max_calls", (double)o->max_calls);
	/* Compaction likewise, only when not the default (on, 0.85). */
	if (o->no_compaction)
		json_add_bool(j, "compaction", false);
	else if (o->compaction_threshold > 0 && o->compaction_threshold != 0.85)
		json_add_num(j, "compaction_threshold", o->compaction_threshold);
	/* Tools answer from the world: a memo made with other tools, or
	 * another policy, is not this run's answer. */
	if (o->tools) {
		cJSON *t = cJSON_CreateObject(), *names = tool_set_server_names_json(o->tools);
		cJSON *id = tool_set_identity_json(o->tools);
		char *text = json_print(id), hex[33];
		struct store_key k;
		/* how each server is reached (its env and headers among it:
		 * hashed, never kept) and the host tools */
		store_digest(text, strlen(text), &k);
		store_key_hex(&k, hex);
		free(text);
		cJSON_Delete(id);
		json_add(t, "servers", names);
		json_add_str(t, "digest", hex);
		if (o->max_tool_calls > 0)
			json_add_num(t, "max_calls", (double)o->max_tool_calls);
		if (o->tool_timeout_ns > 0)
			json_add_num(t, "timeout_ms", (double)(o->tool_timeout_ns / 1000000));
		if (o->tool_policy) {
			cJSON *a = cJSON_CreateArray(), *d = cJSON_CreateArray();
			for (size_t i = 0; i < o->tool_policy->n_allow; i++)
				json_add_str(a, NULL, o->tool_policy->allow[i]);
			for (size_t i = 0; i < o->tool_policy->n_deny; i++)
				json_add_str(d, NULL, o->tool_policy->deny[i]);
			json_add(t, "allow", a);
			json_add(t, "deny", d);
		}
		json_add(j, "tools", t);
	}
	if (o->allow_skill_writes)
		json_add_bool(j, "skill_writes", true);
	/* Only when set, as max_calls: the schema as its JSON value (the
	 * answer's shape), and the paragraph that shows it to the model. */
	if (o->schema_json) {
		const struct embedded_file *f = embed_find("repl_schema.txt");
		cJSON *sc = cJSON_Parse(o->schema_json);
		struct store_key sk;
		char hex[33];
		json_add(j, "schema", sc ? sc : cJSON_CreateString(o->schema_json));
		store_digest(f ? f->data : "", f ? f->len : 0, &sk);
		store_key_hex(&sk, hex);
		json_add_str(j, "schema_prompt", hex);
	}
	/* The caller's additions to repl nodes: each only when set (keys made
	 * without them stay good), as a digest (they may be long). */
	add_digest(j, "system_prompt", o->system_prompt);
	add_digest(j, "system_extra", o->system_extra);
	add_digest(j, "setup_code", o->setup_code);
	add_digest(j, "sub_system_extra", o->sub_system_extra);
	add_digest(j, "sub_setup_code", o->sub_setup_code);
	if (o->sub_tools) {
		/* the children's tools, as "tools" says the root's */
		cJSON *id = tool_set_identity_json(o->sub_tools);
		char *text = json_print(id);
		add_digest(j, "sub_tools", text);
		free(text);
		cJSON_Delete(id);
	}
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

/* The digest of the context: its text and, for documents, their bounds. */
static void context_digest(const struct corpus *ctx, char hex[33])
{
	struct store_kb kb;
	struct store_key k;
	store_kb_init(&kb, "context/1");
	store_kb_i64(&kb, ctx->kind == CORPUS_TEXT ? 0 : 1);
	store_kb_str(&kb, ctx->buf ? ctx->buf : "", ctx->len);
	store_kb_i64(&kb, (int64_t)ctx->n_docs);
	for (size_t i = 0; ctx->kind != CORPUS_TEXT && i < ctx->n_docs; i++) {
		store_kb_i64(&kb, (int64_t)ctx->docs[i].off);
		store_kb_i64(&kb, (int64_t)ctx->docs[i].len);
	}
	store_kb_final(&kb, &k);
	store_key_hex(&k, hex);
}

void rlm__record_begin(struct rlm_record *rec, const struct rlm_opts *o, const char *question,
		  const struct corpus *ctx)
{
	struct store_run run;
	struct rlm_err err = {0, ""};
	char digest[33], prev[40];
	char *config = rlm_config_json(o);
	memset(&run, 0, sizeof(run));
	rec->run[0] = 0;
	context_digest(ctx, digest);
	memcpy(rec->digest, digest, sizeof(rec->digest));
	run.question = question ? question : "";
	run.context_digest = digest;
	run.context_bytes = (int64_t)ctx->len;
	run.context_source = ctx->source;
	run.config_json = config;
	run.note_json = o->run_note_json;
	run.resumed_from = o->resumed_from;
	if (!run.resumed_from &&
	    store_run_unfinished(rec->store, run.question, digest, config, prev, &err) == 1)
		run.resumed_from = prev;
	if (store_run_begin(rec->store, &run, &err) < 0)
		store_trouble(rec, "recording the run", &err);
	else
		memcpy(rec->run, run.id, sizeof(rec->run));
	free(config);
}

/* A run's status (store/store.h): "failed" (rc < 0); "interrupted" (the
 * caller's cancel or the time limit: a run `rlm solve --resume` takes up);
 * "stopped: <limit>" (another limit, e.g. "stopped: max_iterations");
 * "incomplete" (an answer, NONE or real, with failures under it); "done"
 * (a whole answer). Never "done" for a run a limit stopped. */
static const char *run_status(const struct rlm_result *r, int rc, char *buf, size_t n)
{
	if (rc < 0 || r->stop == RLM_STOP_ERROR)
		return "failed";
	if (r->stop == RLM_STOP_CANCEL || r->stop == RLM_STOP_TIMEOUT)
		return "interrupted";
	if (r->stop == RLM_STOP_INCOMPLETE || (r->stop == RLM_STOP_ANSWER && !r->complete))
		return "incomplete";
	if (r->stop == RLM_STOP_ANSWER)
		return "done";
	snprintf(buf, n, "stopped: %s", rlm_stop_name(r->stop));
	return buf;
}

void rlm__record_end(struct rlm_record *rec, const struct rlm_opts *o, const struct rlm_result *r,
		int rc, const char *error)
{
	struct store_run run;
	struct rlm_err err = {0, ""};
	struct rlm_opts no_turns = *o;
	char status[48];
	cJSON *j;
	char *res;
	/* Every call of the solve is done: no flight is up. */
	pthread_mutex_destroy(&rec->fl_mu);
	pthread_cond_destroy(&rec->fl_cv);
	if (!rec->run[0])
		return;
	/* The turns are the run's events already. */
	no_turns.trajectory = false;
	j = rlm_result_json(r, &no_turns);
	if (error)
		json_add_str(j, "error", error);
	res = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	rlm__record_event(o, 0, -1, 0, r->iterations, "end", NULL, 0, res);
	memset(&run, 0, sizeof(run));
	memcpy(run.id, rec->run, sizeof(run.id));
	run.status = run_status(r, rc, status, sizeof(status));
	run.answer = r->answer;
	run.result_json = res;
	if (store_run_end(rec->store, &run, &err) < 0)
		store_trouble(rec, "ending the run", &err);
	free(res);
}

void rlm__record_event(const struct rlm_opts *o, int node, int parent, int depth, int iteration,
		  const char *kind, const char *text, size_t len, const char *data_json)
{
	const struct rlm_record *rec = rec_of(o);
	struct store_event e;
	struct rlm_err err = {0, ""};
	if (!rec || !rec->run[0])
		return;
	e = (struct store_event){.t_ns = time_now_ns() - rec->t0,
				 .node = node,
				 .parent = parent,
				 .depth = depth,
				 .iteration = iteration,
				 .kind = kind,
				 .text = text,
				 .len = text ? len : 0,
				 .data_json = data_json};
	if (store_event_add(rec->store, rec->run, &e, &err) < 0)
		store_trouble(rec, "recording an event", &err);
}

void rlm__record_detail(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
		   int depth, int iteration, const char *kind, const char *text, size_t len,
		   const char *data_json)
{
	struct rlm_event e;
	rlm__record_event(o, node, parent, depth, iteration, kind, text, len, data_json);
	if (!o->event || !o->detail_events || !nodes)
		return;
	e = (struct rlm_event){.kind = kind,
			       .iteration = iteration,
			       .text = text ? text : "",
			       .len = text ? len : 0,
			       .elapsed_ns = time_now_ns() - nodes->t0,
			       .depth = depth,
			       .node = node,
			       .data_json = data_json};
	pthread_mutex_lock(&nodes->cb_mu);
	o->event(&e, o->event_arg);
	pthread_mutex_unlock(&nodes->cb_mu);
}

/* A sub-call's prompt and reply are kept cut to these many characters,
 * head and tail with a line saying how many were left out (the true
 * sizes are kept too): a 10M-token solve makes ~600 sub-calls of ~64 KB,
 * which would be ~40 MB of events; cut, at most ~12 MB and mostly much
 * less. */
#define SUB_PROMPT_KEEP 4000
#define SUB_REPLY_KEEP	16000

static void add_cut(cJSON *o, const char *key, const char *s, size_t len, size_t keep)
{
	size_t n;
	char *t = repl_truncate(s ? s : "", s ? len : 0, keep, &n);
	json_add_strn(o, key, t, n);
	free(t);
}

void rlm__record_call(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
		 int depth, int iteration, const struct llm_call *call, bool sub)
{
	rlm__record_call_as(o, nodes, node, parent, depth, iteration, call, sub ? "sub" : "root");
}

void rlm__record_call_as(const struct rlm_opts *o, struct rlm_nodes *nodes, int node, int parent,
			 int depth, int iteration, const struct llm_call *call, const char *role)
{
	const struct rlm_record *rec = rec_of(o);
	bool sub = strcmp(role, "sub") == 0, compact = strcmp(role, "compact") == 0;
	struct store_key k;
	char hex[33], *data;
	size_t chars = 0;
	bool to_store = rec && rec->run[0];
	cJSON *d, *u;
	if (!to_store && !(o->event && o->detail_events && nodes))
		return;
	rlm_store_call_key(call, &k);
	store_key_hex(&k, hex);
	for (size_t i = 0; i < call->n_msgs; i++) /* characters, not bytes */
		chars += text_utf8_count(call->msgs[i].text, call->msgs[i].len);
	d = cJSON_CreateObject();
	u = cJSON_CreateObject();
	json_add_str(d, "key", hex);
	json_add_str(d, "role", role);
	json_add_bool(d, "cached", call->cached);
	json_add_bool(d, "ok", call->rc == 0);
	json_add_num(u, "input_tokens", (double)call->usage.input_tokens);
	json_add_num(u, "output_tokens", (double)call->usage.output_tokens);
	json_add(d, "usage", u);
	json_add_num(d, "cost", call->cost);
	json_add_num(d, "ms", (double)call->latency_ns / 1e6);
	json_add_num(d, "prompt_chars", (double)chars);
	/* A sub-call's prompt (its last message: what was asked) and reply,
	 * for the exports; a root call's are the node's prompt and reply
	 * events already. */
	if (sub && call->n_msgs > 0) {
		const struct llm_msg *m = &call->msgs[call->n_msgs - 1];
		if (call->model)
			json_add_str(d, "model", llm_model_name(call->model));
		add_cut(d, "prompt", m->text, m->len, SUB_PROMPT_KEEP);
		if (call->rc == 0) {
			add_cut(d, "response", call->text, call->len, SUB_REPLY_KEEP);
			json_add_num(d, "response_chars", (double)call->len);
		} else {
			json_add_str(d, "error",
				     call->error ? call->error : rlm_strerror(call->rc));
		}
	} else if (compact) {
		/* the summary: the turns it stands for are events already */
		if (call->rc == 0)
			add_cut(d, "response", call->text, call->len, SUB_REPLY_KEEP);
		else
			json_add_str(d, "error",
				     call->error ? call->error : rlm_strerror(call->rc));
	}
	data = json_print(d);
	cJSON_Delete(d);
	rlm__record_detail(o, nodes, node, parent, depth, iteration, "call", NULL, 0, data);
	free(data);
}

/* ---- the memo of child RLMs ---- */

/* The key's fields before the context: the config, the levels left below
 * the node, the question. */
static void memo_key_begin(struct store_kb *kb, const struct rlm_opts *o, int depth,
			   const char *question)
{
	char *config = rlm_config_json(o);
	int max_depth = o->max_depth ? o->max_depth : RLM_DEF_MAX_DEPTH;
	store_kb_init(kb, "result/1");
	store_kb_str(kb, config, strlen(config));
	store_kb_i64(kb, max_depth - depth); /* the levels left below it */
	store_kb_str(kb, question, strlen(question));
	free(config);
}

bool rlm__record_memo_key(const struct rlm_opts *o, int depth, const char *question, const char *text,
		     size_t len, struct store_key *k)
{
	struct store_kb kb;
	if (!rec_of(o))
		return false;
	memo_key_begin(&kb, o, depth, question);
	store_kb_str(&kb, text, len);
	store_kb_final(&kb, k);
	return true;
}

bool rlm__record_memo_key_ctx(const struct rlm_opts *o, int depth, const char *question,
			 const struct corpus *ctx, struct store_key *k)
{
	struct store_kb kb;
	if (ctx->kind == CORPUS_TEXT) {
		/* a str: the key of its text, as it always was */
		size_t off = ctx->n_docs ? ctx->docs[0].off : 0;
		return rlm__record_memo_key(o, depth, question, ctx->buf + off,
				       ctx->n_docs ? ctx->docs[0].len : ctx->len, k);
	}
	if (!rec_of(o))
		return false;
	memo_key_begin(&kb, o, depth, question);
	store_kb_str(&kb, ctx->buf, ctx->len);
	store_kb_i64(&kb, -1); /* documents: their bounds follow */
	store_kb_i64(&kb, (int64_t)ctx->n_docs);
	for (size_t i = 0; i < ctx->n_docs; i++) {
		store_kb_i64(&kb, (int64_t)ctx->docs[i].off);
		store_kb_i64(&kb, (int64_t)ctx->docs[i].len);
	}
	store_kb_final(&kb, k);
	return true;
}

/* What a memo hit spent still fits b (then charged), or, for the whole
 * solve (b NULL), o's limits: a solve that used exactly its limit fits. */
/* *v += add unless that passes max (0: no limit); atomically. */
static bool take_within(_Atomic int64_t *v, int64_t add, int64_t max)
{
	int64_t cur = atomic_load(v);
	do {
		if (max && cur + add > max)
			return false;
	} while (!atomic_compare_exchange_weak(v, &cur, cur + add));
	return true;
}

static bool memo_fits(const struct rlm_opts *o, struct rlm_budget *b,
		      const struct store_result *sr)
{
	int64_t t = sr->usage.input_tokens + sr->usage.output_tokens;
	if (!b)
		return !((o->max_tokens > 0 && t > o->max_tokens) ||
			 (o->max_cost > 0 && sr->cost > o->max_cost) ||
			 (o->max_sub_calls > 0 && sr->sub_calls > o->max_sub_calls) ||
			 (o->max_calls > 0 && sr->calls > o->max_calls));
	{
		/* Each taken within its limit at once (another node may be
		 * taking too), or none. */
		_Atomic int64_t *v[4] = {&b->tokens, &b->cost_nusd, &b->sub_calls, &b->calls};
		int64_t add[4] = {t, sr->cost > 0 ? (int64_t)llround(sr->cost * 1e9) : 0,
				  sr->sub_calls, sr->calls},
			max[4] = {b->max_tokens, b->max_cost_nusd, b->max_sub_calls, b->max_calls};
		for (int i = 0; i < 4; i++)
			if (!take_within(v[i], add[i], max[i])) {
				while (i-- > 0)
					atomic_fetch_sub(v[i], add[i]);
				return false;
			}
	}
	return true;
}

bool rlm__record_memo_get(const struct rlm_opts *o, struct rlm_budget *b, const struct store_key *k,
		     struct rlm_result *out)
{
	const struct rlm_record *rec = rec_of(o);
	struct store_result sr;
	struct rlm_err err = {0, ""};
	int rc;
	if (!rec || rec->refresh)
		return false;
	memset(&sr, 0, sizeof(sr));
	rc = store_result_get(rec->store, k, &sr, &err);
	if (rc < 0)
		store_trouble(rec, "a memo lookup", &err);
	if (rc != 1 || !memo_fits(o, b, &sr)) {
		store_result_release(&sr);
		return false;
	}
	out->answer = sr.answer;
	sr.answer = NULL;
	out->found = sr.found;
	out->stop = RLM_STOP_ANSWER;
	/* Kept only when whole: under a schema (the root's alone), one that
	 * validated. */
	out->answer_json = o->schema_json != NULL;
	out->complete = true; /* only whole answers are kept */
	out->memo = true;
	out->memo_hits = 1;
	out->usage = usage_of_store(&sr.usage);
	out->cost = sr.cost;
	out->calls = sr.calls;
	out->sub_calls = sr.sub_calls;
	out->nodes = sr.nodes;
	out->saved_usage = out->usage;
	out->saved_cost = sr.cost;
	if (sr.sources)
		rlm__sources_parse(sr.sources, &out->sources, &out->n_sources);
	store_result_release(&sr);
	return true;
}

void rlm__record_memo_origin(const struct rlm_opts *o, const char *question,
			     struct rlm_result *out)
{
	const struct rlm_record *rec = rec_of(o);
	struct rlm_err err = {0, ""};
	char *config, *note, id[40] = "";
	int64_t created = 0;
	cJSON *res;
	/* Nothing was spent: what the answer took is what it saved. */
	out->saved_usage = out->usage;
	out->saved_cost = out->cost;
	memset(&out->usage, 0, sizeof(out->usage));
	out->cost = 0;
	out->calls = 0;
	out->sub_calls = 0;
	if (!rec)
		return;
	config = rlm_config_json(o);
	if (store_run_origin(rec->store, question, rec->digest, config, rec->run, id, &created,
			     &err) == 1 &&
	    (res = store_run_result(rec->store, id, &err))) {
		memcpy(out->memo_run, id, sizeof(out->memo_run));
		out->memo_created_ms = created;
		out->memo_json = json_print(res);
		cJSON_Delete(res);
	}
	free(config);
	note = out->memo_run[0]
		       ? xasprintf("answered from the memo with the answer of run %s: nothing "
				   "ran",
				   out->memo_run)
		       : xstrdup("answered from the memo: the run that made the answer is no "
				 "longer in the store; nothing ran");
	rlm__record_event(o, 0, -1, 0, 0, "notice", note, strlen(note), NULL);
	free(note);
}

void rlm__record_memo_put(const struct rlm_opts *o, const struct store_key *k,
		     const struct rlm_result *r)
{
	const struct rlm_record *rec = rec_of(o);
	struct store_result sr;
	struct rlm_err err = {0, ""};
	/* Only whole answers: one made with failed calls or parts, or with
	 * a warning, is not to be served again. */
	if (!rec || r->stop != RLM_STOP_ANSWER || !r->answer || r->memo || r->failed_calls > 0 ||
	    r->failed_leaves > 0 || r->warning || !r->complete || r->failed > 0)
		return;
	sr = (struct store_result){.answer = r->answer,
				   .stop = (char *)(uintptr_t)rlm_stop_name(r->stop),
				   .usage = usage_to_store(&r->usage),
				   .cost = r->cost,
				   .calls = r->calls,
				   .sub_calls = r->sub_calls,
				   .nodes = r->nodes,
				   .found = r->found};
	if (r->n_sources) {
		cJSON *j = rlm_sources_json(r->sources, r->n_sources);
		sr.sources = json_print(j);
		cJSON_Delete(j);
	}
	if (store_result_put(rec->store, k, &sr, &err) < 0)
		store_trouble(rec, "keeping a child's answer", &err);
	free(sr.sources);
}

/* ---- rlm_solve's side ---- */

void rlm__record_init(struct rlm_record *rec, const struct rlm_opts *o)
{
	memset(rec, 0, sizeof(*rec));
	rec->store = o->store;
	rec->refresh = o->refresh;
	rec->front = (struct llm_front){front_lookup, front_save, rec, front_release};
	rec->t0 = time_now_ns();
	atomic_init(&rec->broken, false);
	pthread_mutex_init(&rec->fl_mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&rec->fl_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
}
