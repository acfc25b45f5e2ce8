/* SPDX-License-Identifier: MIT */
/* serve/service_int.h -- inside the service (serve/service.h): the service
 * itself, shared by service.c (solves and runs), service_corpus.c (the
 * corpora and the roots) and service_session.c (sessions). */
#ifndef RLM_SERVICE_INT_H
#define RLM_SERVICE_INT_H

#include <pthread.h>

#include "service.h"
#include "../common/json.h"
#include "../store/store.h"

#define SVC_N_LE 14 /* bounds of the solve-time histogram (then +Inf) */

struct svc_sess; /* a session (service_session.c) */

/* A corpus the service holds. Reference counted under the service's
 * mutex: each run that reads it and each request between loading it and
 * starting its solve (SVC_CORPUS_HOLD) holds one. A registered corpus
 * stays until deleted; another (an inline context, a context_path) stays
 * while held, then while the cache of unused ones has room (the least
 * recently used leave first). */
struct svc_corp {
	struct svc_corpus_info info; /* its refs and registered are below */
	struct corpus *c;	     /* owned */
	int refs;		     /* runs and requests that hold it */
	bool registered;	     /* kept until serve_corpus_delete */
	bool deleted;		     /* out of the registry: freed at the last put */
	uint64_t used;		     /* service tick of its last put: LRU */
	size_t mem;		     /* bytes it holds (text and document table) */
	struct svc_corp *next_dead;  /* in service.dead, to be freed */
};

/* A directory paths may name, opened once at start: every path under it
 * is resolved beneath fd, never by name (serve_corpus_load). */
struct svc_root {
	char *real;  /* its realpath at start, owned */
	char *given; /* as given, made absolute, "." and "//" dropped; owned
		      * (a path may spell a root either way) */
	int fd;	     /* O_PATH | O_DIRECTORY, owned */
};

/* Made by serve_new; the fields above mu are read-only afterwards. */
#define SVC_SCHEMAS_OK 32 /* answer schemas remembered as valid */

struct service {
	struct rlm_models ms;  /* the pool and models */
	struct store *store;   /* NULL with no_cache */
	struct rlm_opts base;  /* the command line's, with pool, models, store */
	struct svc_root *roots; /* n_roots of them (serve__roots_open) */
	size_t n_roots;
	int max_solves;
	int keep_runs;	     /* finished runs kept in memory */
	size_t keep_bytes;   /* bytes the runs in memory may hold */
	size_t corpus_cache; /* bytes of unused unregistered corpora kept */
	int64_t sess_idle_ns;	 /* sessions: idle timeout */
	int max_sessions;	 /* live at once */
	size_t max_sess_mem;	 /* workers' RSS summed */
	pthread_t janitor;	 /* ends idle sessions (service_session.c) */
	bool janitor_on;	 /* started */

	pthread_mutex_t mu;    /* guards everything below */
	pthread_cond_t cv;     /* a run thread ended; a run got its id */
	struct svc_run **runs; /* the registry, oldest first; one reference each */
	size_t n_runs, cap_runs;
	_Atomic int64_t runs_bytes; /* what the runs in the registry hold (their
				     * mem); added to without mu by their logs */
	struct svc_corp **corp; /* the registry of corpora */
	size_t n_corp, cap_corp;
	struct svc_corp *dead;	/* let go of, not freed yet (serve__corp_reap) */
	uint64_t tick;		    /* counts corpus puts, for LRU */
	int running;		    /* solves between start and end */
	int threads;		    /* run threads alive */
	bool closing;		    /* serve_shutdown or serve_free began: no new solves */
	struct rng rng;		    /* ids */
	int64_t ended[5];	    /* done, stopped, failed, cancelled, incomplete */
	int64_t hist[SVC_N_LE + 1]; /* lifetime, not cumulative; last: +Inf */
	double secs_sum;
	int64_t secs_count;
	/* answer schemas a worker found valid (rlm_schema_check), by digest:
	 * a ring, so a client that sends the same schema pays the check once */
	struct store_key schema_ok[SVC_SCHEMAS_OK];
	size_t n_schema_ok;
	struct svc_sess **sess;	 /* live sessions; one reference each */
	size_t n_sess, cap_sess;
	struct svc_gone *gone;	 /* sessions that ended lately, a ring */
	size_t n_gone;		 /* ever ended: gone[n_gone % SVC_GONE] next */
	int64_t sess_n[5];	 /* opened, closed, expired, evicted, questions */
	bool janitor_stop;	 /* serve_free: the janitor returns */
	pthread_cond_t jcv;	 /* wakes the janitor */
};

#define SVC_GONE 256 /* ended sessions remembered, to say why */

/* A session that ended: its id and why, for the 404 of a later request. */
struct svc_gone {
	char id[SVC_SESSION_ID];
	char why[160];
};

/* Grow *pp, an array of *cap elements of size bytes, to hold n + 1. */
void serve__grow(void *pp, size_t *cap, size_t n, size_t size);
/* Drop a hold on k (s->mu held): a deleted corpus is freed at its last,
 * an unregistered one joins the cache of unused ones (which is then cut
 * to its size). */
void serve__corp_put_locked(struct service *s, struct svc_corp *k);
/* Free the corpora the registry let go of (without s->mu: a corpus of
 * hundreds of MB is not unmapped while every request waits on the lock). */
void serve__corp_reap(struct service *s);
/* Is t[0..len) text the corpus module takes (UTF-8, no NUL)? 0, or
 * RLM_EINVAL with err naming what (e.g. "the question"). */
int serve__check_text(const char *what, const char *t, size_t len, struct rlm_err *err);
/* Open the roots (NULL-terminated, NULL for none) into s->roots: each a
 * directory, opened once. Returns 0, or RLM_EINVAL with err naming the
 * root and why. On error the roots opened stay for serve__roots_close. */
int serve__roots_open(struct service *s, const char *const *roots, struct rlm_err *err);
/* Close and free s->roots. */
void serve__roots_close(struct service *s);
/* A solve of question over k with options o (complete: callbacks are
 * set here), in session sess when not NULL (the run takes a reference on
 * it and gives it back through serve__sess_done): serve_solve's contract. */
int serve__run_start(struct service *s, const char *question, struct svc_corp *k,
		     const struct rlm_opts *o, struct svc_sess *sess, struct svc_run **run,
		     struct rlm_err *err);
/* q over o (s's models by name, limits lowered): 0 or RLM_EINVAL. */
int serve__opts_apply(struct service *s, const struct svc_opts *q, struct rlm_opts *o,
		      struct rlm_err *err);
/* The session of a run's thread (service_session.c): */
struct rlm_session *serve__sess_rs(struct svc_sess *x);
const char *serve__sess_id(const struct svc_sess *x);
/* r is the question x is answering (s->mu held; serve__run_start). */
void serve__sess_bind_locked(struct svc_sess *x, struct svc_run *r);
/* The run of x ended (its thread, before the run settles): x is idle
 * again, its state noted, its key moved on when answer (the run's, when
 * it answered; else NULL), the run's reference dropped. */
void serve__sess_done(struct service *s, struct svc_sess *x, const char *answer);
/* Start the janitor (serve_new) / end every session and stop it
 * (serve_free, once no run thread is left). */
int serve__sessions_init(struct service *s, const struct svc_cfg *cfg, struct rlm_err *err);
void serve__sessions_free(struct service *s);
/* Add "sessions" to o (s->mu held): serve_stats's. */
void serve__sessions_stats_locked(struct service *s, cJSON *o);

/* Free the corpora. */
void serve__corpora_free(struct service *s);
/* Add "corpora" to o (s->mu held): serve_stats's. */
void serve__corpora_stats_locked(struct service *s, cJSON *o);

#endif
