/* SPDX-License-Identifier: MIT */
/* tests/loopenv.h -- what the tests of the RLM loop (test_loop.c) and of
 * recursion (test_recursion.c) share: the root model on a fake server on
 * loopback playing scripted replies (whose recorded requests show what the
 * model was sent), the sub-model (the simulator or a second fake server),
 * a pool, and looks at /proc for workers and threads left behind. */
#ifndef RLM_TEST_LOOPENV_H
#define RLM_TEST_LOOPENV_H

#include "harness.h"
#include "fakesrv.h"
#include "../common/json.h"
#include "../sim/sim.h"
#include "../rlm/rlm.h"

#include <pthread.h>
#include <stdatomic.h>

#define SEC 1000000000LL

struct env {
	struct fakesrv *root_srv;   /* the root model */
	struct fakesrv *sub_srv;    /* a fake sub-model, when asked for */
	struct sim *sim;            /* the simulator sub-model otherwise */
	struct llm_model *root, *sub;
	struct llm_pool *pool;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err;
	struct corpus *ctx;
	struct buf events;          /* "kind:iteration\n" per event (a child's:
				     * "kind:iteration@d<depth>n<node>\n") */
	pthread_mutex_t mu;
};

enum sub_kind { SUB_SIM, SUB_FAKE };

/* The events of a solve into v->events (arg: v); o.event by default. */
void on_event(const struct rlm_event *e, void *arg);
/* An OpenAI-compatible model `name` at the fake server url. */
struct llm_model *model_at(const char *name, const char *url, const struct llm_price *price);
/* The root model on a fake server; the sub-model the simulator (sim_spec
 * for its configuration) or a second fake server; a pool of 16; the
 * context "alpha beta gamma\n". */
void env_init_full(struct env *v, enum sub_kind sk, const char *sim_spec,
		   const struct llm_price *price);
void env_init(struct env *v, enum sub_kind sk);
void env_free(struct env *v);
/* Script the next reply of the fake server s (delay_ms before it). */
void says_full(struct fakesrv *s, const char *content, const char *finish, long in, long out,
	       int delay_ms);
/* The reply of the fake server s once its queue is empty. */
void says_always(struct fakesrv *s, const char *content);
/* Script the root model's next reply. */
void says(struct env *v, const char *content);
/* rlm_solve of question over v->ctx into v->r. */
int solve(struct env *v, const char *question);
/* Request i to the fake server s as JSON (the caller deletes it). */
cJSON *request(struct fakesrv *s, size_t i);
/* The content of message k of request i (k < 0: from the end), fresh;
 * *role (optional) its role, until the next call. */
char *message(struct fakesrv *s, size_t i, int k, const char **role);
int n_messages(struct fakesrv *s, size_t i);

/* Message k of the root model's request i contains needle. */
#define CHECK_MSG_HAS(v, i, k, needle)                                                             \
	do {                                                                                       \
		char *m_ = message((v)->root_srv, (i), (k), NULL);                                 \
		CHECK_CONTAINS(m_, needle);                                                        \
		free(m_);                                                                          \
	} while (0)

/* A flag that a thread sets after_ns from its start (cancel_later). */
struct canceller {
	atomic_bool flag;
	int64_t after_ns;
};
void *cancel_later(void *arg);

/* The worker processes of this process: its children (the spawner thread
 * clones them). */
int worker_processes(void);
/* Threads of this process; with comm, only those of that name. */
int threads(const char *comm);
/* Replace v's pool with one of `workers` workers. */
void small_pool(struct env *v, int workers);

#endif
