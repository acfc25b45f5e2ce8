/* SPDX-License-Identifier: MIT */
/* tests/loopenv.c -- what the tests of the RLM loop and of recursion
 * share: a root model on a fake server, a sub-model, a pool, and looks at
 * /proc for what a solve left running. */
#include "loopenv.h"
#include "proc.h"
#include "../common/json.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void on_event(const struct rlm_event *e, void *arg)
{
	struct env *v = arg;
	pthread_mutex_lock(&v->mu);
	if (e->depth)
		buf_printf(&v->events, "%s:%d@d%dn%d\n", e->kind, e->iteration, e->depth, e->node);
	else
		buf_printf(&v->events, "%s:%d\n", e->kind, e->iteration);
	pthread_mutex_unlock(&v->mu);
}

struct llm_model *model_at(const char *name, const char *url, const struct llm_price *price)
{
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	char base[160];
	snprintf(base, sizeof(base), "%s/v1", url);
	cfg.kind = LLM_OPENAI;
	cfg.name = name;
	cfg.base_urls = base;
	cfg.max_retries = 0;
	cfg.price = price;
	cfg.context_window = 100000;
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "llm_model_new: %s", err.msg);
	return m;
}

/* The root model on a fake server; the sub-model the simulator (sim_spec
 * for its configuration) or a second fake server. */
void env_init_full(struct env *v, enum sub_kind sk, const char *sim_spec,
			  const struct llm_price *price)
{
	struct llm_pool_cfg pc = {16};
	struct fake_reply def = {
		200, NULL,
		"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"FINAL(unscripted)\"},"
		"\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}",
		FAKE_NORMAL, 0};
	memset(v, 0, sizeof(*v));
	pthread_mutex_init(&v->mu, NULL);
	buf_init(&v->events, 0);
	v->root_srv = fakesrv_start();
	CHECK(v->root_srv);
	fakesrv_set_default(v->root_srv, &def);
	v->root = model_at("root-m", fakesrv_url(v->root_srv), price);
	if (sk == SUB_FAKE) {
		v->sub_srv = fakesrv_start();
		CHECK(v->sub_srv);
		v->sub = model_at("sub-m", fakesrv_url(v->sub_srv), price);
	} else {
		struct sim_cfg sc;
		struct llm_model_cfg cfg = {0};
		struct rlm_err err = {0, ""};
		sim_cfg_default(&sc);
		if (sim_spec)
			CHECK_INT(sim_cfg_parse(sim_spec, &sc, &err), 0);
		v->sim = sim_new(&sc);
		cfg.kind = LLM_INPROC;
		cfg.name = "sim";
		cfg.provider = &sim_provider;
		cfg.impl = v->sim;
		cfg.max_retries = 0;
		v->sub = llm_model_new(&cfg, &err);
		CHECK_MSG(v->sub, "%s", err.msg);
	}
	v->pool = llm_pool_new(&pc, &v->err);
	CHECK(v->pool);
	v->o.strategy = RLM_REPL;
	v->o.pool = v->pool;
	v->o.model = v->root;
	v->o.sub_model = v->sub;
	v->o.params = (struct llm_params)LLM_PARAMS_DEFAULT;
	v->o.event = on_event;
	v->o.event_arg = v;
	v->ctx = corpus_from_text("alpha beta gamma\n", 17);
}

void env_init(struct env *v, enum sub_kind sk)
{
	env_init_full(v, sk, NULL, NULL);
}

void env_free(struct env *v)
{
	rlm_result_release(&v->r);
	llm_pool_free(v->pool);
	llm_model_free(v->root);
	llm_model_free(v->sub);
	fakesrv_stop(v->root_srv);
	fakesrv_stop(v->sub_srv);
	sim_free(v->sim);
	corpus_free(v->ctx);
	buf_release(&v->events);
	pthread_mutex_destroy(&v->mu);
}

void says_full(struct fakesrv *s, const char *content, const char *finish, long in,
		      long out, int delay_ms)
{
	char *body = fakesrv_chat_body(content, finish, in, out);
	struct fake_reply r = {200, NULL, body, FAKE_NORMAL, delay_ms};
	fakesrv_push(s, &r);
	free(body);
}

void says_always(struct fakesrv *s, const char *content)
{
	char *body = fakesrv_chat_body(content, "stop", 10, 10);
	struct fake_reply r = {200, NULL, body, FAKE_NORMAL, 0};
	fakesrv_set_default(s, &r);
	free(body);
}

/* Script the root model's next reply. */
void says(struct env *v, const char *content)
{
	says_full(v->root_srv, content, "stop", 100, 20, 0);
}

int solve(struct env *v, const char *question)
{
	return rlm_solve(&v->o, question, v->ctx, &v->r, &v->err);
}

/* Request i to the fake server s as JSON (the caller deletes it). */
cJSON *request(struct fakesrv *s, size_t i)
{
	const struct fake_request *q = fakesrv_request(s, i);
	cJSON *j;
	CHECK_MSG(q, "no request %zu", i);
	j = json_parse(q->body, q->body_len);
	CHECK_MSG(j, "request %zu is not JSON", i);
	return j;
}

/* The content of message k of request i (k < 0: from the end), fresh. */
char *message(struct fakesrv *s, size_t i, int k, const char **role)
{
	cJSON *j = request(s, i), *msgs = json_get(j, "messages"), *m;
	int n = cJSON_GetArraySize(msgs);
	char *text;
	m = cJSON_GetArrayItem(msgs, k < 0 ? n + k : k);
	CHECK_MSG(m, "request %zu has no message %d", i, k);
	text = xstrdup(json_str(m, "content") ? json_str(m, "content") : "");
	if (role) {
		static char r[16];
		snprintf(r, sizeof(r), "%s", json_str(m, "role") ? json_str(m, "role") : "");
		*role = r;
	}
	cJSON_Delete(j);
	return text;
}

int n_messages(struct fakesrv *s, size_t i)
{
	cJSON *j = request(s, i);
	int n = cJSON_GetArraySize(json_get(j, "messages"));
	cJSON_Delete(j);
	return n;
}

void *cancel_later(void *arg)
{
	struct canceller *c = arg;
	time_sleep_ns(c->after_ns);
	atomic_store(&c->flag, true);
	return NULL;
}

/* ps of the worker processes of this process: its children (the spawner
 * thread clones them). */
int worker_processes(void)
{
	return (int)proc_children(getpid(), NULL, 0);
}

/* Threads of this process; with comm, only those of that name. */
int threads(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	CHECK(d);
	while ((e = readdir(d))) {
		char path[300], name[32] = "";
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		if (comm) {
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
			name[strcspn(name, "\n")] = '\0';
			if (strcmp(name, comm) != 0)
				continue;
		}
		n++;
	}
	closedir(d);
	return n;
}

void small_pool(struct env *v, int workers)
{
	struct llm_pool_cfg pc = {workers};
	llm_pool_free(v->pool);
	v->pool = llm_pool_new(&pc, &v->err);
	CHECK(v->pool);
	v->o.pool = v->pool;
}
