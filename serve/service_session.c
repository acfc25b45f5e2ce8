/* SPDX-License-Identifier: MIT */
/* serve/service_session.c -- sessions of the service: REPL workers that
 * live across questions (rlm_session_*), their registry, limits and the
 * janitor that ends idle ones.
 *
 * DESIGN
 * A session is reference counted under the service's mutex: the registry
 * holds one while it is live, a run asking in it holds one until its end
 * (serve__sess_done), a request between finding it and starting its run
 * holds none (it takes the run's under the lock). busy says a question is
 * being answered: the run's thread then owns the rlm_session, so nothing
 * else touches it (the info and history a request sees are those noted at
 * the end of the last question, the resident memory read from /proc by
 * pid). An idle session's rlm_session is touched only under the mutex
 * (its info, a context added), so the janitor, a request and a new
 * question never meet in it. Ending a session takes it out of the
 * registry at once; the worker is killed when the last reference goes,
 * outside the mutex (killing and reaping a worker takes milliseconds).
 * The janitor wakes every second, ends the sessions idle past the idle
 * timeout, then, while the workers' resident memory passes the cap, the
 * least recently used idle ones. */
#include "service_int.h"
#include "../common/json.h"
#include "../store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct svc_sess {
	char id[SVC_SESSION_ID];
	const char *origin;	/* static: "api", "chat", "mcp" */
	struct rlm_session *rs; /* owned; the run thread's while busy */
	struct rlm_opts o;	/* its questions' options */
	struct svc_corp **corp; /* held: [0] context, then context_1, ... */
	size_t n_corp, cap_corp;
	int refs;		      /* under s->mu */
	bool busy;		      /* a question runs (its thread owns rs), or
				       * a context is being added (adding) */
	bool adding;		      /* serve_session_add_context owns rs */
	bool live;		      /* in the registry */
	bool cancel_pending;	      /* ended while busy before its run was
				       * bound: the run is cancelled as it is */
	struct svc_run *run;	      /* the running question (borrowed while busy:
				       * its thread holds it until serve__sess_done) */
	char *key;		      /* owned: the conversation's digest, or NULL */
	char *conv;		      /* owned: the running question's conversation
				       * (serve_session_solve), or NULL */
	int64_t created_ms;	      /* unix ms */
	int64_t used_ns;	      /* time_now_ns of its last use: idle time, LRU */
	struct rlm_session_info info; /* as of the end of its last question */
	cJSON *history;		      /* owned: rlm_session_history_json then */
	char *vars;		      /* owned: rlm_session_vars then, or NULL */
};

enum { N_OPENED, N_CLOSED, N_EXPIRED, N_EVICTED, N_QUESTIONS };

struct rlm_session *serve__sess_rs(struct svc_sess *x)
{
	return x->rs;
}

const char *serve__sess_id(const struct svc_sess *x)
{
	return x->id;
}

/* ---- references and ending ---- */

/* Kill its worker and free it (no lock held: the corpora are put back
 * under it). */
static void sess_destroy(struct service *s, struct svc_sess *x)
{
	rlm_session_free(x->rs); /* kills the worker; the corpora were borrowed */
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < x->n_corp; i++)
		serve__corp_put_locked(s, x->corp[i]);
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);
	free(x->corp);
	free(x->key);
	free(x->conv);
	free(x->vars);
	cJSON_Delete(x->history);
	free(x);
}

/* Drop a reference (s->mu held): true when it was the last, and the caller
 * must sess_destroy x once it lets go of the lock. */
static bool sess_unref_locked(struct svc_sess *x)
{
	return --x->refs == 0;
}

/* A list of sessions to destroy once the lock is let go. */
struct doomed {
	struct svc_sess **v;
	size_t n, cap;
};

static void doomed_add(struct doomed *d, struct svc_sess *x)
{
	serve__grow(&d->v, &d->cap, d->n, sizeof(*d->v));
	d->v[d->n++] = x;
}

static void doomed_destroy(struct service *s, struct doomed *d)
{
	for (size_t i = 0; i < d->n; i++)
		sess_destroy(s, d->v[i]);
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}

/* End x (s->mu held): out of the registry, remembered with why (a format
 * with the id first), its question cancelled; its registry reference goes
 * to d when it was the last. */
static void end_locked(struct service *s, struct svc_sess *x, int counter, const char *why,
		       struct doomed *d)
{
	struct svc_gone *g = &s->gone[s->n_gone++ % SVC_GONE];
	size_t k = 0;
	for (size_t i = 0; i < s->n_sess; i++)
		if (s->sess[i] != x)
			s->sess[k++] = s->sess[i];
	s->n_sess = k;
	x->live = false;
	s->sess_n[counter]++;
	snprintf(g->id, sizeof(g->id), "%s", x->id);
	snprintf(g->why, sizeof(g->why), "%s", why);
	if (x->busy && x->run)
		serve_run_cancel(x->run);
	else if (x->busy)
		x->cancel_pending = true; /* its run is about to start */
	if (sess_unref_locked(x))
		doomed_add(d, x);
}

/* The live session id (s->mu held), or NULL with err saying why not. */
static struct svc_sess *find_locked(struct service *s, const char *id, struct rlm_err *err)
{
	for (size_t i = 0; i < s->n_sess; i++)
		if (strcmp(s->sess[i]->id, id) == 0)
			return s->sess[i];
	for (size_t i = 0; i < SVC_GONE && i < s->n_gone; i++) {
		const struct svc_gone *g = &s->gone[(s->n_gone - 1 - i) % SVC_GONE];
		if (strcmp(g->id, id) == 0) {
			rlm_err_set(err, RLM_ENOTFOUND, "session '%s' %s", id, g->why);
			return NULL;
		}
	}
	rlm_err_set(err, RLM_ENOTFOUND, "no session '%.64s'", id);
	return NULL;
}

/* The resident memory of the live sessions (s->mu held); idle ones are
 * read again first (busy ones: as of their last question's end). */
static int64_t memory_locked(struct service *s)
{
	int64_t sum = 0;
	for (size_t i = 0; i < s->n_sess; i++) {
		struct svc_sess *x = s->sess[i];
		if (!x->busy)
			rlm_session_info(x->rs, &x->info);
		sum += x->info.rss_bytes;
	}
	return sum;
}

/* The least recently used idle session but spare (s->mu held), or NULL. */
static struct svc_sess *lru_idle_locked(struct service *s, const struct svc_sess *spare)
{
	struct svc_sess *best = NULL;
	for (size_t i = 0; i < s->n_sess; i++) {
		struct svc_sess *x = s->sess[i];
		if (!x->busy && x != spare && (!best || x->used_ns < best->used_ns))
			best = x;
	}
	return best;
}

/* Past the memory cap, end the least recently used idle sessions but
 * spare (s->mu held). */
static void trim_memory_locked(struct service *s, const struct svc_sess *spare, struct doomed *d)
{
	char why[160];
	int64_t mem = memory_locked(s);
	while (mem > (int64_t)s->max_sess_mem) {
		struct svc_sess *x = lru_idle_locked(s, spare);
		if (!x)
			break;
		snprintf(why, sizeof(why),
			 "was ended: the sessions' workers held %lld MB, past "
			 "--max-session-memory (%zu MB); the least recently used went first",
			 (long long)(mem >> 20), s->max_sess_mem >> 20);
		mem -= x->info.rss_bytes;
		end_locked(s, x, N_EVICTED, why, d);
	}
}

/* ---- the janitor ---- */

static void *janitor_main(void *arg)
{
	struct service *s = arg;
	struct doomed d = {NULL, 0, 0};
	pthread_mutex_lock(&s->mu);
	while (!s->janitor_stop) {
		struct timespec ts;
		int64_t now = time_now_ns(),
			slice = RLM_MIN(1000000000LL, RLM_MAX(s->sess_idle_ns / 4, 50000000LL));
		int64_t until = now + slice;
		char why[160];
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		pthread_cond_timedwait(&s->jcv, &s->mu, &ts);
		if (s->janitor_stop)
			break;
		now = time_now_ns();
		for (size_t i = 0; i < s->n_sess;) {
			struct svc_sess *x = s->sess[i];
			if (!x->busy && now - x->used_ns >= s->sess_idle_ns) {
				snprintf(why, sizeof(why),
					 "expired: unused for %.0f s (--session-idle-timeout); its "
					 "worker and variables are gone, open a new one",
					 (double)s->sess_idle_ns / 1e9);
				end_locked(s, x, N_EXPIRED, why, &d);
				continue; /* s->sess[i] is the next one now */
			}
			i++;
		}
		trim_memory_locked(s, NULL, &d);
		if (d.n) {
			pthread_mutex_unlock(&s->mu);
			doomed_destroy(s, &d);
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int serve__sessions_init(struct service *s, const struct svc_cfg *cfg, struct rlm_err *err)
{
	pthread_condattr_t a;
	int rc;
	s->sess_idle_ns =
	    (int64_t)((cfg->session_idle_s > 0 ? cfg->session_idle_s : SVC_SESSION_IDLE_S) * 1e9);
	s->max_sessions = cfg->max_sessions > 0 ? cfg->max_sessions : SVC_MAX_SESSIONS;
	s->max_sess_mem = cfg->max_session_memory ? cfg->max_session_memory : SVC_SESSION_MEMORY;
	s->gone = xcalloc(SVC_GONE, sizeof(*s->gone));
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&s->jcv, &a);
	pthread_condattr_destroy(&a);
	if ((rc = pthread_create(&s->janitor, NULL, janitor_main, s))) {
		pthread_cond_destroy(&s->jcv);
		free(s->gone);
		s->gone = NULL;
		return rlm_err_set(err, -rc, "cannot start the session janitor: %s", strerror(rc));
	}
	s->janitor_on = true;
	return 0;
}

void serve__sessions_free(struct service *s)
{
	struct doomed d = {NULL, 0, 0};
	if (!s->janitor_on)
		return;
	pthread_mutex_lock(&s->mu);
	s->janitor_stop = true;
	pthread_cond_broadcast(&s->jcv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->janitor, NULL);
	s->janitor_on = false;
	pthread_mutex_lock(&s->mu);
	while (s->n_sess)
		end_locked(s, s->sess[0], N_CLOSED, "was ended: the server stopped", &d);
	pthread_mutex_unlock(&s->mu);
	doomed_destroy(s, &d);
	free(s->sess);
	s->sess = NULL;
	free(s->gone);
	s->gone = NULL;
	pthread_cond_destroy(&s->jcv);
}

void serve__sessions_stats_locked(struct service *s, cJSON *o)
{
	cJSON *j = cJSON_CreateObject();
	int64_t mem = 0;
	for (size_t i = 0; i < s->n_sess; i++)
		mem += s->sess[i]->info.rss_bytes;
	json_add_num(j, "live", (double)s->n_sess);
	json_add_num(j, "opened", (double)s->sess_n[N_OPENED]);
	json_add_num(j, "closed", (double)s->sess_n[N_CLOSED]);
	json_add_num(j, "expired", (double)s->sess_n[N_EXPIRED]);
	json_add_num(j, "evicted", (double)s->sess_n[N_EVICTED]);
	json_add_num(j, "questions", (double)s->sess_n[N_QUESTIONS]);
	json_add_num(j, "memory_bytes", (double)mem);
	json_add(o, "sessions", j);
}

/* ---- the API ---- */

int serve_session_open(struct service *s, struct svc_corp *k, const struct svc_opts *q,
		       const char *origin, char id[SVC_SESSION_ID], struct rlm_err *err)
{
	struct rlm_opts o = s->base;
	struct svc_sess *x;
	struct doomed d = {NULL, 0, 0};
	int rc;
	*id = '\0';
	if (!k)
		return rlm_err_set(err, RLM_EINVAL, "no corpus to open a session over");
	if ((rc = serve__opts_apply(s, q, &o, err)))
		return rc;
	if (o.strategy != RLM_REPL)
		return rlm_err_set(err, RLM_EINVAL,
				   "a session needs the repl strategy (the tree strategy keeps no "
				   "REPL between questions)");
	x = xcalloc(1, sizeof(*x));
	x->origin = origin ? origin : "api";
	x->o = o;
	x->o.schema_json = NULL; /* the request's: each question gives its own */
	if ((rc = rlm_session_new(&x->o, k->c, &x->rs, err))) {
		free(x);
		return rc;
	}
	pthread_mutex_lock(&s->mu);
	if (s->closing) {
		pthread_mutex_unlock(&s->mu);
		rlm_session_free(x->rs);
		free(x);
		return rlm_err_set(err, SVC_ECLOSING, "the server is shutting down");
	}
	if ((int)s->n_sess >= s->max_sessions) {
		struct svc_sess *old = lru_idle_locked(s, NULL);
		char why[160];
		if (!old) {
			pthread_mutex_unlock(&s->mu);
			rlm_session_free(x->rs);
			free(x);
			return rlm_err_set(err, SVC_EBUSY,
					   "%d sessions are live and every one is answering a "
					   "question (--max-sessions %d); close one (DELETE "
					   "/v1/sessions/ID) or try again later",
					   s->max_sessions, s->max_sessions);
		}
		snprintf(why, sizeof(why),
			 "was ended: the least recently used idle session, to make room for a "
			 "new one (--max-sessions %d)",
			 s->max_sessions);
		end_locked(s, old, N_EVICTED, why, &d);
	}
	snprintf(x->id, sizeof(x->id), "s-%016llx", (unsigned long long)rng_next(&s->rng));
	x->refs = 1;
	x->live = true;
	x->created_ms = time_wall_ms();
	x->used_ns = time_now_ns();
	rlm_session_info(x->rs, &x->info);
	x->history = cJSON_CreateArray();
	k->refs++; /* the session's */
	serve__grow(&x->corp, &x->cap_corp, x->n_corp, sizeof(*x->corp));
	x->corp[x->n_corp++] = k;
	serve__grow(&s->sess, &s->cap_sess, s->n_sess, sizeof(*s->sess));
	s->sess[s->n_sess++] = x;
	s->sess_n[N_OPENED]++;
	memcpy(id, x->id, SVC_SESSION_ID);
	pthread_mutex_unlock(&s->mu);
	doomed_destroy(s, &d);
	return 0;
}

static int busy_err(const struct svc_sess *x, struct rlm_err *err)
{
	const char *run = x->run ? serve_run_id(x->run) : "";
	if (x->adding)
		return rlm_err_set(err, SVC_ESESSBUSY,
				   "session '%s' is taking a new context: try again in a moment",
				   x->id);
	return rlm_err_set(err, SVC_ESESSBUSY,
			   "session '%s' is answering a question (run %s): one question at a "
			   "time; wait for its end (GET /v1/runs/%s) or cancel it",
			   x->id, run, run);
}

void serve__sess_bind_locked(struct svc_sess *x, struct svc_run *r)
{
	x->run = r;
	if (x->cancel_pending) /* ended while its run was starting */
		serve_run_cancel(r);
}

int serve_session_add_context(struct service *s, const char *id, struct svc_corp *k, int *n,
			      struct rlm_err *err)
{
	struct svc_sess *x;
	struct doomed d = {NULL, 0, 0};
	int rc;
	pthread_mutex_lock(&s->mu);
	if (!(x = find_locked(s, id, err))) {
		pthread_mutex_unlock(&s->mu);
		return RLM_ENOTFOUND;
	}
	if (x->busy) {
		rc = busy_err(x, err);
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	/* Busy while the context goes to its worker (a large one takes a
	 * while): no question, janitor or request touches it meanwhile, and
	 * the lock is not held. */
	x->busy = x->adding = true;
	x->run = NULL;
	x->refs++;
	k->refs++; /* the session's, from now on */
	pthread_mutex_unlock(&s->mu);
	rc = rlm_session_add_context(x->rs, k->c, n, err);
	pthread_mutex_lock(&s->mu);
	if (!rc) {
		serve__grow(&x->corp, &x->cap_corp, x->n_corp, sizeof(*x->corp));
		x->corp[x->n_corp++] = k;
		rlm_session_info(x->rs, &x->info);
	} else {
		serve__corp_put_locked(s, k);
	}
	x->busy = x->adding = false;
	x->used_ns = time_now_ns();
	if (sess_unref_locked(x))
		doomed_add(&d, x);
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);
	doomed_destroy(s, &d);
	return rc;
}

int serve_session_solve(struct service *s, const char *id, const char *question,
			const struct svc_opts *q, const char *conv, struct svc_run **run,
			struct rlm_err *err)
{
	struct svc_sess *x;
	struct rlm_opts o;
	struct svc_opts lim;
	struct doomed d = {NULL, 0, 0};
	int rc;
	*run = NULL;
	pthread_mutex_lock(&s->mu);
	if (!(x = find_locked(s, id, err))) {
		pthread_mutex_unlock(&s->mu);
		return RLM_ENOTFOUND;
	}
	if (x->busy) {
		rc = busy_err(x, err);
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	o = x->o;
	/* The model and strategy are the session's: a question may name them
	 * only as they are. */
	if (q) {
		lim = *q;
		if ((rc = serve__opts_apply(s, q, &o, err))) {
			pthread_mutex_unlock(&s->mu);
			return rc;
		}
		if (o.model != x->o.model || o.sub_model != x->o.sub_model ||
		    o.strategy != x->o.strategy) {
			pthread_mutex_unlock(&s->mu);
			return rlm_err_set(err, RLM_EINVAL,
					   "a session's model and strategy are chosen when it is "
					   "opened: options.model, sub_model and strategy may "
					   "only repeat them");
		}
		(void)lim;
	}
	x->busy = true;
	free(x->conv);
	x->conv = conv ? xstrdup(conv) : NULL;
	x->refs += 2; /* the run's (given back by serve__sess_done), and ours */
	x->run = NULL;
	pthread_mutex_unlock(&s->mu);
	rc = serve__run_start(s, question, x->corp[0], &o, x, run, err);
	pthread_mutex_lock(&s->mu);
	if (rc) {
		x->busy = false;
		x->run = NULL;
		x->refs--; /* the run's: it never was */
	} else {
		x->used_ns = time_now_ns();
		s->sess_n[N_QUESTIONS]++;
	}
	if (sess_unref_locked(x))
		doomed_add(&d, x);
	pthread_mutex_unlock(&s->mu);
	doomed_destroy(s, &d);
	return rc;
}

void serve__sess_done(struct service *s, struct svc_sess *x, const char *answer)
{
	struct rlm_session_info in;
	struct rlm_err err = {0, ""};
	struct doomed d = {NULL, 0, 0};
	/* Still the run thread's own: what a request will see of it. */
	cJSON *h = rlm_session_history_json(x->rs);
	char *vars = rlm_session_vars(x->rs, &err);
	rlm_session_info(x->rs, &in);
	pthread_mutex_lock(&s->mu);
	cJSON_Delete(x->history);
	x->history = h;
	free(x->vars);
	x->vars = vars;
	x->info = in;
	x->busy = false;
	x->run = NULL;
	x->used_ns = time_now_ns();
	if (x->conv && answer) {
		char key[33];
		serve_session_turn_key(x->conv, answer, key);
		free(x->key);
		x->key = xstrdup(key);
	}
	free(x->conv);
	x->conv = NULL;
	if (x->live)
		trim_memory_locked(s, x, &d);
	if (sess_unref_locked(x))
		doomed_add(&d, x);
	pthread_mutex_unlock(&s->mu);
	doomed_destroy(s, &d);
}

int serve_session_reset(struct service *s, const char *id, struct rlm_err *err)
{
	struct svc_sess *x;
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	if (!(x = find_locked(s, id, err))) {
		rc = RLM_ENOTFOUND;
	} else if (x->busy) {
		rc = busy_err(x, err);
	} else {
		/* kills an idle worker: quick, under the lock as its info */
		rlm_session_reset(x->rs);
		rlm_session_info(x->rs, &x->info);
		cJSON_Delete(x->history);
		x->history = cJSON_CreateArray();
		free(x->vars);
		x->vars = NULL;
		free(x->key); /* the conversation is gone: no chat finds it */
		x->key = NULL;
		x->used_ns = time_now_ns();
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int serve_session_close(struct service *s, const char *id, struct rlm_err *err)
{
	struct svc_sess *x;
	struct doomed d = {NULL, 0, 0};
	pthread_mutex_lock(&s->mu);
	if (!(x = find_locked(s, id, err))) {
		pthread_mutex_unlock(&s->mu);
		return RLM_ENOTFOUND;
	}
	end_locked(s, x, N_CLOSED, "was closed (DELETE /v1/sessions/ID, or close_session)", &d);
	pthread_mutex_unlock(&s->mu);
	doomed_destroy(s, &d);
	return 0;
}

/* x as JSON (s->mu held). */
static cJSON *sess_json_locked(struct service *s, struct svc_sess *x, bool with_history)
{
	cJSON *o = cJSON_CreateObject();
	int64_t now = time_now_ns(), idle = x->busy ? 0 : now - x->used_ns;
	if (!x->busy)
		rlm_session_info(x->rs, &x->info);
	json_add_str(o, "id", x->id);
	json_add_str(o, "object", "session");
	json_add_str(o, "origin", x->origin);
	json_add_str(o, "status", x->busy ? "busy" : "idle");
	if (x->busy && x->run)
		json_add_str(o, "run_id", serve_run_id(x->run));
	json_add_num(o, "questions", x->info.questions);
	json_add_num(o, "contexts", x->info.contexts);
	json_add_num(o, "pid", x->info.pid);
	json_add_num(o, "rss_bytes", (double)x->info.rss_bytes);
	json_add_num(o, "restarts", x->info.restarts);
	json_add_num(o, "conversation_bytes", (double)x->info.conversation_bytes);
	json_add_num(o, "compactions", x->info.compactions);
	json_add_num(o, "created", (double)(x->created_ms / 1000));
	json_add_num(o, "idle_ms", (double)idle / 1e6);
	json_add_num(o, "expires_in_ms",
		     x->busy ? (double)s->sess_idle_ns / 1e6
			     : (double)RLM_MAX(s->sess_idle_ns - idle, (int64_t)0) / 1e6);
	{
		cJSON *ids = cJSON_CreateArray();
		for (size_t i = 0; i < x->n_corp; i++)
			json_add(ids, NULL, cJSON_CreateString(x->corp[i]->info.id));
		json_add(o, "corpus_ids", ids);
	}
	if (x->vars)
		json_add_str(o, "variables", x->vars);
	else
		json_add(o, "variables", cJSON_CreateNull());
	if (with_history)
		json_add(o, "history",
			 x->history ? cJSON_Duplicate(x->history, true) : cJSON_CreateArray());
	return o;
}

cJSON *serve_session_json(struct service *s, const char *id, bool with_history, struct rlm_err *err)
{
	struct svc_sess *x;
	cJSON *o = NULL;
	pthread_mutex_lock(&s->mu);
	if ((x = find_locked(s, id, err)))
		o = sess_json_locked(s, x, with_history);
	pthread_mutex_unlock(&s->mu);
	return o;
}

cJSON *serve_sessions_json(struct service *s)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_sess; i++)
		json_add(a, NULL, sess_json_locked(s, s->sess[i], false));
	json_add_str(o, "object", "list");
	json_add(o, "sessions", a);
	json_add_num(o, "max_sessions", s->max_sessions);
	json_add_num(o, "idle_timeout_s", (double)s->sess_idle_ns / 1e9);
	json_add_num(o, "max_session_memory", (double)s->max_sess_mem);
	pthread_mutex_unlock(&s->mu);
	return o;
}

int serve_session_find(struct service *s, const char *key, char id[SVC_SESSION_ID])
{
	int rc = RLM_ENOTFOUND;
	*id = '\0';
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_sess; i++)
		if (s->sess[i]->key && strcmp(s->sess[i]->key, key) == 0) {
			memcpy(id, s->sess[i]->id, SVC_SESSION_ID);
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void serve_session_set_key(struct service *s, const char *id, const char *key)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_sess; i++)
		if (strcmp(s->sess[i]->id, id) == 0) {
			free(s->sess[i]->key);
			s->sess[i]->key = key ? xstrdup(key) : NULL;
		}
	pthread_mutex_unlock(&s->mu);
}

void serve_session_turn_key(const char *conv, const char *answer, char out[33])
{
	struct store_kb kb;
	struct store_key k;
	store_kb_init(&kb, "rlm-chat-turn");
	store_kb_str(&kb, conv, strlen(conv));
	store_kb_str(&kb, answer, strlen(answer));
	store_kb_final(&kb, &k);
	store_key_hex(&k, out);
}

bool serve_sessions_available(const struct service *s)
{
	return s->base.strategy == RLM_REPL;
}
