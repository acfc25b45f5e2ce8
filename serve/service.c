/* SPDX-License-Identifier: MIT */
/* serve/service.c -- the shared layer of `rlm serve` and `rlm mcp`: one pool,
 * models and store, the corpora loaded, and the solves running on threads
 * of their own with their event logs.
 *
 * DESIGN
 * Two locks: the service's mutex guards its registries and counters, each
 * run's mutex its event log and end state; a thread that needs both takes
 * the service's first. A run is in the registry from the moment it is
 * made (so serve_free can cancel it), but serve_run_get finds it only once it
 * has an id (the store's, handed to on_run before anything is solved).
 * Run threads are detached; the service counts them, and serve_shutdown and
 * serve_free wait on that count, so nothing of the service is touched once
 * they return. A finished run stays in the registry, with its log, until
 * keep_runs finished runs are newer, or the runs in the registry hold
 * more than keep_bytes: then the oldest finished is dropped (a reference
 * held elsewhere keeps it alive; the store still knows it). What a run
 * holds (its mem: question, log, answer, result) is counted into
 * runs_bytes as it grows, so /metrics shows it and the budget holds
 * while runs are still running.
 * Corpora are deduplicated by a digest of their content, so a context
 * sent twice, inline or by path, is held once and keeps its id.
 */
#include "service_int.h"
#include "../common/json.h"
#include "../store/export.h"
#include "../store/store.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SVC_KEEP_RUNS	 1000	     /* finished runs kept in memory, by default */
#define SVC_EV_MAX	 200000	     /* events kept per run */
#define SVC_EV_BYTES_MAX (64u << 20) /* text kept per run's log */
#define SVC_DEF_SOLVES	 4

/* Upper bounds of the solve-time histogram, seconds (then +Inf). */
static const double hist_le[SVC_N_LE] = {0.1, 0.25, 0.5, 1,   2.5, 5,	 10,
					 30,  60,   120, 300, 600, 1800, 3600};
#define N_LE SVC_N_LE

enum run_status { ST_RUNNING, ST_DONE, ST_STOPPED, ST_FAILED, ST_CANCELLED, ST_INCOMPLETE };
static const char *const status_names[] = {"running", "done",	   "stopped",
					   "failed",  "cancelled", "incomplete"};

/* One solve. The fields above mu are set before its thread starts and only
 * read afterwards, but for id (written under both mutexes by on_run). */
struct svc_run {
	struct service *s;
	atomic_int refs;
	char id[40];	/* "" until on_run (or the start, without a store) */
	char *question; /* owned */
	size_t mem;	/* bytes it holds, in s->runs_bytes (under mu; fixed
			 * once over) */
	char corpus_id[24];
	struct svc_corp *corp;	  /* held until the run ends */
	const struct corpus *ctx; /* corp's */
	struct svc_sess *sess;	  /* the session it asks in (a reference,
				   * given back at its end), or NULL */
	char sess_id[SVC_SESSION_ID]; /* its id, or "" */
	struct rlm_opts o;	  /* the service's with the request's over them */
	atomic_bool cancel;
	int64_t t0; /* time_now_ns at start */

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;  /* an event; the end; the id */
	bool id_ready;
	enum run_status status;
	cJSON **ev; /* the log: owned objects */
	size_t n_ev, cap_ev;
	size_t ev_bytes, dropped; /* text kept; events left out past the caps */
	bool log_ended;		  /* the "end" event is in the log */
	cJSON *result;		  /* when ended: rlm_result_json (+ "error") */
	char *answer;		  /* when ended; owned, or NULL */
	char *schema;		  /* o.schema_json's copy, or NULL */
	bool answer_json;	  /* when ended: answer validated under it */
	char *error;		  /* when failed; owned */
	int64_t wall_ns;	  /* when ended */
	atomic_bool over;	  /* log_ended, for the registry (s->mu) */
	bool settled;		  /* the end is everywhere: status, log, the
				   * registry's eviction (serve_run_wait) */
};

/* ---- small pieces ---- */

static void cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* Wait on cv until signalled or deadline_ns (time_now_ns clock; 0: forever).
 * false when the deadline passed. */
static bool cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns)
{
	struct timespec ts;
	if (!deadline_ns) {
		pthread_cond_wait(cv, mu);
		return true;
	}
	if (time_now_ns() >= deadline_ns)
		return false;
	ts.tv_sec = (time_t)(deadline_ns / 1000000000);
	ts.tv_nsec = (long)(deadline_ns % 1000000000);
	return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT;
}

/* ---- the service ---- */

int serve_new(const struct svc_cfg *cfg, struct service **out, struct rlm_err *err)
{
	struct service *s;
	int rc;
	*out = NULL;
	if (cfg->max_solves < 0 || cfg->max_solves > 100000)
		return rlm_err_set(err, RLM_EINVAL, "max_solves %d is out of range 1..100000",
				   cfg->max_solves);
	s = xcalloc(1, sizeof(*s));
	if ((rc = serve__roots_open(s, cfg->roots, err)))
		goto fail;
	if ((rc = rlm_models_init(&s->ms, &cfg->mo, err)) ||
	    (rc = rlm_check_cost(s->ms.model, s->ms.sub, cfg->base.max_cost, "--max-cost", err)))
		goto fail;
	if (!cfg->no_cache) {
		struct store_cfg sc = {cfg->cache_path, false, 0};
		if ((rc = store_open(&sc, &s->store, err)))
			goto fail;
	}
	s->base = cfg->base;
	s->base.pool = s->ms.pool;
	s->base.model = s->ms.model;
	s->base.sub_model = s->ms.sub;
	s->base.params = s->ms.params;
	s->base.store = s->store;
	s->base.window = s->base.window ? s->base.window : (size_t)cfg->mo.concurrency * 2;
	s->base.cancel = NULL;
	s->base.event = NULL;
	s->base.progress = NULL;
	s->base.on_run = NULL;
	if (!s->base.run_note_json)
		s->base.run_note_json = "{\"via\":\"service\"}";
	s->base.resumed_from = NULL;
	s->base.record_ = NULL;
	s->max_solves = cfg->max_solves ? cfg->max_solves : SVC_DEF_SOLVES;
	s->keep_runs = cfg->keep_runs > 0 ? cfg->keep_runs : SVC_KEEP_RUNS;
	s->keep_bytes = cfg->keep_runs_bytes ? cfg->keep_runs_bytes : SVC_KEEP_RUNS_BYTES;
	s->corpus_cache = cfg->corpus_cache;
	pthread_mutex_init(&s->mu, NULL);
	cond_init_mono(&s->cv);
	rng_seed(&s->rng, (uint64_t)time_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)time_wall_ms());
	if ((rc = serve__sessions_init(s, cfg, err))) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		store_close(s->store);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	rlm_models_release(&s->ms);
	serve__roots_close(s);
	free(s);
	return rc;
}

static void run_free(struct svc_run *r)
{
	for (size_t i = 0; i < r->n_ev; i++)
		cJSON_Delete(r->ev[i]);
	free(r->ev);
	cJSON_Delete(r->result);
	free(r->answer);
	free(r->error);
	free(r->question);
	free(r->schema);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

void serve_run_put(struct svc_run *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1)
		run_free(r);
}

static void cancel_all_locked(struct service *s)
{
	for (size_t i = 0; i < s->n_runs; i++)
		atomic_store(&s->runs[i]->cancel, true);
}

void serve_close(struct service *s)
{
	pthread_mutex_lock(&s->mu);
	s->closing = true;
	pthread_mutex_unlock(&s->mu);
}

bool serve_idle(struct service *s)
{
	bool idle;
	pthread_mutex_lock(&s->mu);
	idle = s->threads == 0;
	pthread_mutex_unlock(&s->mu);
	return idle;
}

int serve_shutdown(struct service *s, int64_t grace_ns)
{
	int64_t deadline = time_now_ns() + (grace_ns > 0 ? grace_ns : 0);
	int cancelled = 0;
	pthread_mutex_lock(&s->mu);
	s->closing = true;
	while (s->threads > 0 && cond_wait_until(&s->cv, &s->mu, deadline))
		;
	if (s->threads > 0) {
		cancelled = s->threads;
		cancel_all_locked(s);
		while (s->threads > 0)
			pthread_cond_wait(&s->cv, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return cancelled;
}

void serve_free(struct service *s)
{
	if (!s)
		return;
	serve_shutdown(s, 0);
	serve__sessions_free(s);
	for (size_t i = 0; i < s->n_runs; i++)
		serve_run_put(s->runs[i]);
	free(s->runs);
	serve__corpora_free(s);
	serve__roots_close(s);
	store_close(s->store);
	rlm_models_release(&s->ms);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

const char *serve_model_name(const struct service *s)
{
	return llm_model_name(s->ms.model);
}

const char *serve_sub_model_name(const struct service *s)
{
	return llm_model_name(s->ms.sub);
}

/* Finished runs in the registry (s->mu held). */
static size_t finished_locked(struct service *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_runs; i++)
		n += atomic_load(&s->runs[i]->over);
	return n;
}

cJSON *serve_stats(struct service *s)
{
	cJSON *o = cJSON_CreateObject(), *t = cJSON_CreateObject(), *h = cJSON_CreateArray();
	struct llm_stats st;
	int64_t cum = 0;
	llm_pool_stats(s->ms.pool, &st);
	pthread_mutex_lock(&s->mu);
	json_add_num(o, "solves_running", s->running);
	for (int i = 0; i < 5; i++)
		json_add_num(t, status_names[i + 1], (double)s->ended[i]);
	json_add(o, "solves_total", t);
	/* The histogram over the service's life, cumulative as Prometheus
	 * wants it: [[le, count], ...], the last le null (+Inf). */
	for (size_t i = 0; i <= N_LE; i++) {
		cJSON *b = cJSON_CreateArray();
		cum += s->hist[i];
		json_add(b, NULL, i < N_LE ? cJSON_CreateNumber(hist_le[i]) : cJSON_CreateNull());
		json_add(b, NULL, cJSON_CreateNumber((double)cum));
		json_add(h, NULL, b);
	}
	json_add_num(o, "solve_seconds_sum", s->secs_sum);
	json_add_num(o, "solve_seconds_count", (double)s->secs_count);
	serve__corpora_stats_locked(s, o);
	json_add_num(o, "runs_kept", (double)finished_locked(s));
	json_add_num(o, "runs_kept_bytes", (double)atomic_load(&s->runs_bytes));
	serve__sessions_stats_locked(s, o);
	pthread_mutex_unlock(&s->mu);
	json_add_num(o, "model_calls", (double)st.calls);
	json_add_num(o, "cache_hits", (double)st.cached);
	json_add_num(o, "input_tokens", (double)st.usage.input_tokens);
	json_add_num(o, "output_tokens", (double)st.usage.output_tokens);
	json_add_num(o, "cost_usd", st.cost);
	json_add(o, "solve_seconds_buckets", h);
	return o;
}

/* ---- the event log ---- */

/* The memory j holds, about: its nodes and their strings. */
static size_t json_weight(const cJSON *j)
{
	size_t n = 0;
	for (; j; j = j->next) {
		n += sizeof(*j) + (j->string ? strlen(j->string) + 1 : 0) +
		     (j->valuestring ? strlen(j->valuestring) + 1 : 0);
		if (j->child)
			n += json_weight(j->child);
	}
	return n;
}

/* Count len more bytes held by r (r->mu held). */
static void mem_add_locked(struct svc_run *r, size_t len)
{
	r->mem += len;
	atomic_fetch_add(&r->s->runs_bytes, (int64_t)len);
}

static void evict_locked(struct service *s);

/* Append e (consumed) to r's log; len: the bytes it holds. A log stops
 * growing at SVC_EV_MAX events or SVC_EV_BYTES_MAX bytes (or the whole
 * budget of the registry, when smaller), but for its end. */
static void log_add(struct svc_run *r, cJSON *e, size_t len, bool last)
{
	struct service *s = r->s;
	size_t cap = RLM_MIN((size_t)SVC_EV_BYTES_MAX, s->keep_bytes);
	pthread_mutex_lock(&r->mu);
	if (!last && (r->n_ev >= SVC_EV_MAX || r->ev_bytes + len > cap)) {
		r->dropped++;
		cJSON_Delete(e);
	} else {
		serve__grow(&r->ev, &r->cap_ev, r->n_ev, sizeof(*r->ev));
		r->ev[r->n_ev++] = e;
		r->ev_bytes += len;
		mem_add_locked(r, len);
		r->log_ended = last;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	/* Over the budget while it runs: finished runs make room. */
	if (!last && atomic_load(&s->runs_bytes) > (int64_t)s->keep_bytes) {
		pthread_mutex_lock(&s->mu);
		if (s->n_runs > (size_t)s->running)
			evict_locked(s);
		pthread_mutex_unlock(&s->mu);
	}
}

static void on_event(const struct rlm_event *e, void *arg)
{
	struct svc_run *r = arg;
	cJSON *o;
	/* A run's stream is what its record replays (the same events under
	 * the same ids): "turn" and "turn_end" go to callbacks only. */
	if (strcmp(e->kind, "turn") == 0 || strcmp(e->kind, "turn_end") == 0)
		return;
	o = cJSON_CreateObject();
	/* The model's reply starts a turn. */
	json_add_str(o, "kind", strcmp(e->kind, "reply") == 0 ? "turn" : e->kind);
	json_add_num(o, "node", e->node);
	json_add_num(o, "depth", e->depth);
	json_add_num(o, "iteration", e->iteration);
	json_add_strn(o, "text", e->text ? e->text : "", e->text ? e->len : 0);
	json_add_num(o, "t_ms", (double)e->elapsed_ns / 1e6);
	if (e->data_json) {
		cJSON *d = json_parse(e->data_json, strlen(e->data_json));
		if (d)
			json_add(o, "data", d);
	}
	/* what the event holds, with its JSON's own weight */
	log_add(r, o, json_weight(o), false);
}

static void on_progress(const struct rlm_progress *p, void *arg)
{
	struct svc_run *r = arg;
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "kind", "progress");
	json_add_num(o, "node", 0);
	json_add_num(o, "depth", 0);
	json_add_num(o, "iteration", p->level);
	json_add_str(o, "phase", p->phase);
	json_add_num(o, "done", (double)p->done);
	json_add_num(o, "total", (double)p->total);
	json_add_num(o, "t_ms", (double)p->elapsed_ns / 1e6);
	log_add(r, o, json_weight(o), false);
}

/* The store recorded the run (or could not: ""). */
static void on_run(const char *run_id, void *arg)
{
	struct svc_run *r = arg;
	struct service *s = r->s;
	pthread_mutex_lock(&s->mu);
	pthread_mutex_lock(&r->mu);
	if (run_id && *run_id)
		snprintf(r->id, sizeof(r->id), "%s", run_id);
	else
		snprintf(r->id, sizeof(r->id), "r-%016llx", (unsigned long long)rng_next(&s->rng));
	r->id_ready = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_unlock(&s->mu);
}

/* ---- solves ---- */

void serve_opts_init(struct svc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->strategy = -1;
	o->compaction = -1;
}

static int pick_model(struct service *s, const char *name, const char *what, struct llm_model **out,
		      struct rlm_err *err)
{
	if (!name)
		return 0;
	if (strcmp(name, llm_model_name(s->ms.model)) == 0)
		*out = s->ms.model;
	else if (strcmp(name, llm_model_name(s->ms.sub)) == 0)
		*out = s->ms.sub;
	else if (s->ms.sub == s->ms.model)
		return rlm_err_set(err, RLM_EINVAL,
				   "%s '%s' is not this server's: it serves '%s' only", what, name,
				   llm_model_name(s->ms.model));
	else
		return rlm_err_set(err, RLM_EINVAL,
				   "%s '%s' is not this server's: it serves '%s' and '%s'", what,
				   name, llm_model_name(s->ms.model), llm_model_name(s->ms.sub));
	return 0;
}

/* The limit of server and request together (0: none): the smaller. */
static int64_t lower_limit(int64_t server, int64_t request)
{
	if (request <= 0)
		return server;
	return server > 0 && server < request ? server : request;
}

static int opts_apply(struct service *s, const struct svc_opts *q, struct rlm_opts *o,
		      struct rlm_err *err)
{
	int rc;
	if (!q)
		return 0;
	if ((rc = pick_model(s, q->model, "model", &o->model, err)) ||
	    (rc = pick_model(s, q->sub_model, "sub_model", &o->sub_model, err)))
		return rc;
	if (q->strategy == RLM_REPL || q->strategy == RLM_TREE)
		o->strategy = (enum rlm_strategy)q->strategy;
	else if (q->strategy != -1)
		return rlm_err_set(err, RLM_EINVAL, "unknown strategy %d", q->strategy);
	if (q->max_depth > 0)
		o->max_depth = q->max_depth;
	if (q->max_iterations > 0)
		o->max_iterations = q->max_iterations;
	if (q->compaction_threshold > 0 && q->compaction_threshold <= 1)
		o->compaction_threshold = q->compaction_threshold;
	if (q->compaction == 0 || q->compaction == 1)
		o->no_compaction = !q->compaction;
	/* A budget of the request can lower the server's, never raise it: the
	 * operator's limits are ceilings (none set: the request's holds). */
	o->max_tokens = lower_limit(o->max_tokens, q->max_tokens);
	o->max_calls = lower_limit(o->max_calls, q->max_calls);
	o->max_sub_calls = lower_limit(o->max_sub_calls, q->max_sub_calls);
	if (q->max_cost > 0 && !(o->max_cost > 0 && o->max_cost < q->max_cost))
		o->max_cost = q->max_cost;
	if (q->timeout_s > 0)
		o->timeout_ns = lower_limit(o->timeout_ns, (int64_t)(q->timeout_s * 1e9));
	o->schema_json = q->schema_json;
	/* a cost budget over a model without a price would never hold */
	return rlm_check_cost(o->model, o->sub_model, o->max_cost,
			      "the cost budget (options.max_cost)", err);
}

int serve__opts_apply(struct service *s, const struct svc_opts *q, struct rlm_opts *o,
		      struct rlm_err *err)
{
	return opts_apply(s, q, o, err);
}

static enum run_status status_of(int rc, const struct rlm_result *res, bool cancelled)
{
	if (rc == RLM_ECANCEL || (cancelled && (rc < 0 || res->stop == RLM_STOP_CANCEL)))
		return ST_CANCELLED;
	if (rc < 0)
		return ST_FAILED;
	if (res->stop == RLM_STOP_CANCEL)
		return ST_CANCELLED;
	if (res->stop == RLM_STOP_INCOMPLETE || (res->stop == RLM_STOP_ANSWER && !res->complete))
		return ST_INCOMPLETE; /* something under it failed */
	if (res->stop == RLM_STOP_ANSWER)
		return ST_DONE;
	return ST_STOPPED;
}

/* Count an ended solve into the statistics (s->mu held). */
static void count_end_locked(struct service *s, enum run_status st, double secs)
{
	size_t b = 0;
	s->ended[st - 1]++;
	while (b < N_LE && secs > hist_le[b])
		b++;
	s->hist[b]++;
	s->secs_sum += secs;
	s->secs_count++;
}

/* Drop the oldest finished runs past keep_runs, and past keep_bytes
 * held (s->mu held). */
static void evict_locked(struct service *s)
{
	size_t finished = finished_locked(s), k = 0;
	for (size_t i = 0; i < s->n_runs; i++) {
		struct svc_run *r = s->runs[i];
		if (atomic_load(&r->over) &&
		    (finished > (size_t)s->keep_runs ||
		     atomic_load(&s->runs_bytes) > (int64_t)s->keep_bytes)) {
			finished--;
			pthread_mutex_lock(&r->mu);
			atomic_fetch_sub(&s->runs_bytes, (int64_t)r->mem);
			pthread_mutex_unlock(&r->mu);
			serve_run_put(r);
			continue;
		}
		s->runs[k++] = r;
	}
	s->n_runs = k;
}

static void *run_main(void *arg)
{
	struct svc_run *r = arg;
	struct service *s = r->s;
	struct rlm_result res;
	struct rlm_err err = {0, ""};
	enum run_status st;
	int64_t wall;
	cJSON *result, *end;
	int rc = r->sess ? rlm_session_solve(serve__sess_rs(r->sess), &r->o, r->question, &res, &err)
			 : rlm_solve(&r->o, r->question, r->ctx, &res, &err);
	wall = RLM_MAX(time_now_ns() - r->t0, (int64_t)1);
	if (!r->id_ready)
		on_run("", r); /* no store, or it failed before the run began */
	st = status_of(rc, &res, atomic_load(&r->cancel));
	result = rlm_result_json(&res, &r->o);
	if (rc < 0)
		json_add_str(result, "error", err.msg);

	pthread_mutex_lock(&s->mu);
	s->running--;
	count_end_locked(s, st, (double)wall / 1e9);
	serve__corp_put_locked(s, r->corp);
	r->corp = NULL;
	r->ctx = NULL;
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);

	pthread_mutex_lock(&r->mu);
	r->status = st;
	r->result = result;
	r->answer = res.answer;
	r->answer_json = res.answer_json;
	res.answer = NULL;
	r->error = rc < 0 ? xstrdup(err.msg) : NULL;
	r->wall_ns = wall;
	mem_add_locked(r, (r->answer ? strlen(r->answer) : 0) + json_weight(result) +
			      (r->error ? strlen(r->error) : 0));
	pthread_mutex_unlock(&r->mu);
	rlm_result_release(&res);
	if (r->sess) {
		/* idle again before its end is told: a client that saw the
		 * end may ask the next question at once */
		serve__sess_done(s, r->sess, st == ST_DONE ? r->answer : NULL);
		r->sess = NULL;
	}

	end = serve_run_json(r);
	cJSON_DeleteItemFromObjectCaseSensitive(end, "question");
	json_add_str(end, "kind", "end");
	json_add_num(end, "t_ms", (double)wall / 1e6);
	pthread_mutex_lock(&r->mu);
	if (r->dropped)
		json_add_num(end, "events_dropped", (double)r->dropped);
	pthread_mutex_unlock(&r->mu);
	log_add(r, end, json_weight(end), true);
	atomic_store(&r->over, true);

	pthread_mutex_lock(&s->mu);
	evict_locked(s);
	pthread_mutex_unlock(&s->mu);
	/* Only now do waiters (a synchronous answer) go on: what they answer
	 * is what GET /v1/runs and /metrics say from then on. */
	pthread_mutex_lock(&r->mu);
	r->settled = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	serve_run_put(r);
	pthread_mutex_lock(&s->mu);
	s->threads--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* serve_can_start with s->mu held. */
static int can_start_locked(struct service *s, struct rlm_err *err)
{
	if (s->closing)
		return rlm_err_set(err, SVC_ECLOSING, "the server is shutting down");
	if (s->running >= s->max_solves)
		return rlm_err_set(err, SVC_EBUSY,
				   "%d solves are running (the most this server runs at once); try "
				   "again later",
				   s->running);
	return 0;
}

int serve_can_start(struct service *s, struct rlm_err *err)
{
	int rc;
	pthread_mutex_lock(&s->mu);
	rc = can_start_locked(s, err);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* The answer schema of o, checked by a worker unless the service found
 * it valid before (s->schema_ok). Returns 0 or RLM_EINVAL (or the worker's
 * code) with err. */
static int schema_check(struct service *s, const struct rlm_opts *o, struct rlm_err *err)
{
	struct store_key k;
	bool known = false;
	int rc;
	if (!o->schema_json)
		return 0;
	store_digest(o->schema_json, strlen(o->schema_json), &k);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < RLM_MIN(s->n_schema_ok, (size_t)SVC_SCHEMAS_OK) && !known; i++)
		known = memcmp(&s->schema_ok[i], &k, sizeof(k)) == 0;
	pthread_mutex_unlock(&s->mu);
	if (known)
		return 0;
	if ((rc = rlm_schema_check(o, err)))
		return rc;
	pthread_mutex_lock(&s->mu);
	s->schema_ok[s->n_schema_ok++ % SVC_SCHEMAS_OK] = k;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int serve_solve(struct service *s, const char *question, struct svc_corp *k, const struct svc_opts *q,
	      struct svc_run **run, struct rlm_err *err)
{
	struct rlm_opts o = s->base;
	int rc;
	*run = NULL;
	if ((rc = opts_apply(s, q, &o, err)))
		return rc;
	return serve__run_start(s, question, k, &o, NULL, run, err);
}

int serve__run_start(struct service *s, const char *question, struct svc_corp *k,
		     const struct rlm_opts *opts, struct svc_sess *sess, struct svc_run **run,
		     struct rlm_err *err)
{
	struct svc_run *r;
	struct rlm_opts o = *opts;
	pthread_attr_t attr;
	pthread_t th;
	int rc;
	*run = NULL;
	if (!k)
		return rlm_err_set(err, RLM_EINVAL, "no corpus to solve over");
	if (!question || !*question)
		return rlm_err_set(err, RLM_EINVAL, "the question is empty");
	if ((rc = serve__check_text("the question", question, strlen(question), err)))
		return rc;
	if ((rc = schema_check(s, &o, err)))
		return rc;
	r = xcalloc(1, sizeof(*r));
	if (o.schema_json) {
		r->schema = xstrdup(o.schema_json);
		o.schema_json = r->schema;
	}
	r->s = s;
	atomic_init(&r->refs, 3); /* the caller's, the thread's, the registry's */
	atomic_init(&r->cancel, false);
	atomic_init(&r->over, false);
	r->question = xstrdup(question);
	pthread_mutex_init(&r->mu, NULL);
	cond_init_mono(&r->cv);
	r->status = ST_RUNNING;
	o.cancel = &r->cancel;
	o.event = on_event;
	o.detail_events = true;
	o.event_arg = r;
	o.progress = on_progress;
	o.progress_arg = r;
	o.on_run = s->store ? on_run : NULL;
	o.on_run_arg = r;
	r->o = o;

	pthread_mutex_lock(&s->mu);
	if ((rc = can_start_locked(s, err))) {
		pthread_mutex_unlock(&s->mu);
		run_free(r);
		return rc;
	}
	if (!s->store) {
		snprintf(r->id, sizeof(r->id), "r-%016llx", (unsigned long long)rng_next(&s->rng));
		r->id_ready = true;
	}
	r->corp = k;
	r->ctx = k->c;
	r->sess = sess;
	if (sess)
		snprintf(r->sess_id, sizeof(r->sess_id), "%s", serve__sess_id(sess));
	memcpy(r->corpus_id, k->info.id, sizeof(r->corpus_id));
	r->t0 = time_now_ns();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, run_main, r);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_unlock(&s->mu);
		run_free(r);
		return rlm_err_set(err, -rc, "cannot start a solve thread: %s", strerror(rc));
	}
	/* Bound once its thread runs (which takes s->mu before it ends): a
	 * session never points at a run that did not start. */
	if (sess)
		serve__sess_bind_locked(sess, r);
	s->running++;
	s->threads++;
	k->refs++; /* the run's */
	serve__grow(&s->runs, &s->cap_runs, s->n_runs, sizeof(*s->runs));
	s->runs[s->n_runs++] = r;
	pthread_mutex_lock(&r->mu);
	mem_add_locked(r, sizeof(*r) + strlen(r->question) + (r->schema ? strlen(r->schema) : 0));
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_unlock(&s->mu);

	/* The store's run id comes from the solve's thread, first thing. */
	pthread_mutex_lock(&r->mu);
	while (!r->id_ready)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	*run = r;
	return 0;
}

struct svc_run *serve_run_get(struct service *s, const char *id)
{
	struct svc_run *r = NULL;
	if (!id || !*id)
		return NULL;
	pthread_mutex_lock(&s->mu);
	for (size_t i = s->n_runs; i-- > 0;) {
		if (strcmp(s->runs[i]->id, id) == 0) {
			r = s->runs[i];
			atomic_fetch_add(&r->refs, 1);
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

const char *serve_run_id(const struct svc_run *r)
{
	return r->id;
}

const char *serve_run_session(const struct svc_run *r)
{
	return r->sess_id;
}

bool serve_run_wait(struct svc_run *r, int64_t deadline_ns)
{
	bool ended;
	pthread_mutex_lock(&r->mu);
	while (!r->settled && cond_wait_until(&r->cv, &r->mu, deadline_ns))
		;
	ended = r->settled;
	pthread_mutex_unlock(&r->mu);
	return ended;
}

bool serve_run_cancel(struct svc_run *r)
{
	bool running;
	pthread_mutex_lock(&r->mu);
	running = r->status == ST_RUNNING;
	if (running)
		atomic_store(&r->cancel, true);
	pthread_mutex_unlock(&r->mu);
	return running;
}

static cJSON *dup_or(const cJSON *j, cJSON *fallback)
{
	if (!j)
		return fallback;
	cJSON_Delete(fallback);
	return cJSON_Duplicate(j, true);
}

cJSON *serve_run_json(struct svc_run *r)
{
	cJSON *o = cJSON_CreateObject(), *t;
	pthread_mutex_lock(&r->mu);
	json_add_str(o, "run_id", r->id);
	json_add_str(o, "status", status_names[r->status]);
	json_add_str(o, "question", r->question);
	json_add_str(o, "corpus_id", r->corpus_id);
	if (*r->sess_id)
		json_add_str(o, "session_id", r->sess_id);
	if (r->status == ST_RUNNING) {
		json_add(o, "answer", cJSON_CreateNull());
		if (r->schema) {
			json_add_bool(o, "structured", true);
			json_add_bool(o, "answer_json", false);
		}
		json_add_bool(o, "answer_truncated", false);
		json_add(o, "sources", cJSON_CreateArray());
		json_add(o, "stop", cJSON_CreateNull());
		json_add_bool(o, "complete", false);
		json_add(o, "failures", cJSON_CreateArray());
		json_add(o, "usage", cJSON_CreateNull());
		json_add_num(o, "cost", 0);
		json_add_num(o, "cost_usd", 0);
		t = cJSON_CreateObject();
		json_add_num(t, "elapsed_ms", (double)(time_now_ns() - r->t0) / 1e6);
		json_add(o, "timings", t);
	} else {
		const char *stop = json_str(r->result, "stop");
		cJSON *typed = r->answer_json && r->answer ? cJSON_Parse(r->answer) : NULL;
		json_add(o, "answer",
			 typed	     ? typed
			 : r->answer ? cJSON_CreateString(r->answer)
				     : cJSON_CreateNull());
		if (r->schema) {
			json_add_bool(o, "structured", true);
			json_add_bool(o, "answer_json", typed != NULL);
			/* the exact text that validated (a parsed value loses
			 * the digits of an integer past 2^53) */
			if (typed)
				json_add_str(o, "answer_text", r->answer);
		}
		/* cut to max_answer: what it was before (rlm_result_json) */
		json_add_bool(o, "answer_truncated",
			      cJSON_IsTrue(json_get(r->result, "answer_truncated")));
		if (cJSON_IsTrue(json_get(r->result, "answer_truncated")))
			json_add_num(o, "answer_bytes", json_num(r->result, "answer_bytes", 0));
		if (json_str(r->result, "warning"))
			json_add_str(o, "warning", json_str(r->result, "warning"));
		json_add(o, "sources", dup_or(json_get(r->result, "sources"), cJSON_CreateArray()));
		json_add(o, "stop",
			 stop	    ? cJSON_CreateString(stop)
			 : r->error ? cJSON_CreateString("error")
				    : cJSON_CreateString("answer"));
		json_add(o, "usage", dup_or(json_get(r->result, "usage"), cJSON_CreateNull()));
		json_add_num(o, "cost", json_num(r->result, "cost_usd", 0));
		json_add_num(o, "cost_usd", json_num(r->result, "cost_usd", 0));
		t = dup_or(json_get(r->result, "timings"), cJSON_CreateObject());
		json_add_num(t, "wall_ms", (double)r->wall_ns / 1e6);
		json_add(o, "timings", t);
		/* whether the answer rests on everything the solve asked, and
		 * what under it failed when not (rlm_result_json) */
		json_add_bool(o, "complete", cJSON_IsTrue(json_get(r->result, "complete")));
		json_add(o, "failures", dup_or(json_get(r->result, "failures"), cJSON_CreateArray()));
		if (json_str(r->result, "stop_detail"))
			json_add_str(o, "stop_detail", json_str(r->result, "stop_detail"));
		/* answered from the memo: the run whose answer it is (usage
		 * is then what this one spent: nothing) */
		if (cJSON_IsObject(json_get(r->result, "memo")))
			json_add(o, "memo", cJSON_Duplicate(json_get(r->result, "memo"), true));
		if (r->error)
			json_add_str(o, "error", r->error);
		json_add(o, "result", cJSON_Duplicate(r->result, true));
	}
	pthread_mutex_unlock(&r->mu);
	return o;
}

cJSON *serve_run_event(struct svc_run *r, size_t pos, int64_t deadline_ns, bool *ended)
{
	cJSON *e = NULL;
	bool over = false;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		if (pos < r->n_ev) {
			e = cJSON_Duplicate(r->ev[pos], true);
			break;
		}
		if (r->log_ended) {
			over = true;
			break;
		}
		if (!cond_wait_until(&r->cv, &r->mu, deadline_ns))
			break;
	}
	pthread_mutex_unlock(&r->mu);
	if (ended)
		*ended = over;
	return e;
}

/* ---- runs of the store ---- */

cJSON *serve_run_record(struct service *s, const char *id, struct rlm_err *err)
{
	cJSON *run, *view, *pub;
	const char *got;
	if (!s->store) {
		rlm_err_set(err, RLM_ENOTFOUND, "no run '%s' (the server keeps no store)", id);
		return NULL;
	}
	run = store_run_load(s->store, id, err);
	got = json_str(run, "id");
	if (run && (!got || strcmp(got, id) != 0)) {
		/* A prefix matched: ids are asked for whole. */
		cJSON_Delete(run);
		rlm_err_set(err, RLM_ENOTFOUND, "no run '%s'", id);
		return NULL;
	}
	if (!run) {
		if (err && err->code != RLM_ESTORE)
			err->code = RLM_ENOTFOUND;
		return NULL;
	}
	/* What a client sees of a run: no key or credential of its note or
	 * config (a run of an older rlm may hold one). */
	view = store_run_public(run);
	pub = cJSON_Duplicate(view, true);
	cJSON_Delete(view);
	cJSON_Delete(run);
	return pub;
}

cJSON *serve_skills(struct service *s, const char *ref, bool all, struct rlm_err *err)
{
	struct store_skill *v = NULL;
	size_t n = 0;
	cJSON *o, *arr;
	if (ref) {
		if (!s->store) {
			rlm_err_set(err, RLM_ENOTFOUND, "no skill '%.80s' (the server keeps no store)",
				    ref);
			return NULL;
		}
		return store_skill_show(s->store, ref, err);
	}
	if (s->store && store_skill_list(s->store, all, &v, &n, err))
		return NULL;
	o = cJSON_CreateObject();
	arr = cJSON_CreateArray();
	json_add_str(o, "object", "list");
	for (size_t i = 0; i < n; i++)
		json_add(arr, NULL, store_skill_json(&v[i], false));
	json_add(o, "skills", arr);
	store_skills_free(v, n);
	return o;
}
