/* SPDX-License-Identifier: MIT */
/* api/api.c -- librlm for other languages (api/api.h): the client (its
 * models, pool, store and MCP servers), jobs, runs in the store.
 *
 * DESIGN: the API is JSON in, JSON out, so that an FFI (Python's ctypes)
 * needs no struct layout; everything else is rlm/rlm.h underneath. A
 * client owns what `rlm solve` sets up once (the pool and models, the
 * store, the tool sets); a solve (api_solve.c) borrows them, so that many
 * solves of one client, on many threads, share the pool's connections and
 * limits. Sessions: api_session.c; host tools: api_tools.c; the JSON
 * parsers: api_opts.c. */
#include "api_int.h"
#include "../common/json.h"
#include "../sim/sim.h"
#include "../store/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char version[80];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void version_set(void)
{
	snprintf(version, sizeof(version), "%s (%s)", RLM_VERSION, rlm_git_commit);
}

const char *rlm_api_version(void)
{
	pthread_once(&version_once, version_set);
	return version;
}

void rlm_api_free(void *p)
{
	free(p);
}

void rlm_api__err(char **err, const struct rlm_err *e)
{
	if (err)
		*err = xstrdup(e->msg[0] ? e->msg : rlm_strerror(e->code));
}

/* ---- the client ---- */

static int open_store(struct rlm_api *a, struct rlm_err *err)
{
	struct store_cfg sc = {a->cfg.cache_path, false, 0};
	int rc;
	if (!a->cfg.cache)
		return 0;
	if ((rc = store_open(&sc, &a->store, err)))
		rlm_err_prefix(err, "config: 'cache'");
	return rc;
}

struct rlm_api *rlm_api_new(const char *config_json, char **err)
{
	struct rlm_err e = {0, ""};
	struct rlm_api *a = xcalloc(1, sizeof(*a));
	if (err)
		*err = NULL;
	pthread_mutex_init(&a->mu, NULL);
	sim_provider_register();
	if (rlm_api__config_parse(config_json, &a->cfg, &e))
		goto fail;
	if (rlm_models_init(&a->ms, &a->cfg.mc, &e)) {
		rlm_err_prefix(&e, "config");
		goto fail;
	}
	if (open_store(a, &e))
		goto fail;
	if (a->cfg.mcp_config) {
		a->tools = rlm_tools_new();
		if (rlm_tools_load_config(a->tools, a->cfg.mcp_config, &e)) {
			rlm_err_prefix(&e, "config: 'mcp_config'");
			goto fail;
		}
	}
	return a;
fail:
	rlm_api__err(err, &e);
	rlm_api_close(a);
	return NULL;
}

void rlm_api_close(struct rlm_api *a)
{
	if (!a)
		return;
	rlm_tools_free(a->tools);
	rlm_tools_free(a->sub_tools);
	rlm_api__hosts_free(a);
	rlm_models_release(&a->ms);
	store_close(a->store);
	rlm_api__config_release(&a->cfg);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* ---- jobs ---- */

struct rlm_api_job *rlm_api_job_new(void)
{
	struct rlm_api_job *j = xcalloc(1, sizeof(*j));
	atomic_init(&j->cancel, false);
	return j;
}

void rlm_api_job_cancel(struct rlm_api_job *j)
{
	if (j)
		atomic_store(&j->cancel, true); /* lock-free: async-signal-safe */
}

void rlm_api_job_free(struct rlm_api_job *j)
{
	free(j);
}

/* ---- runs ---- */

char *rlm_api_run_jsonl(struct rlm_api *a, const char *run_id, char **err)
{
	struct rlm_err e = {0, ""};
	cJSON *run;
	char *out;
	if (err)
		*err = NULL;
	if (!a || !a->store) {
		rlm_err_set(&e, RLM_EINVAL, "no store: the client has no \"cache\"");
		rlm_api__err(err, &e);
		return NULL;
	}
	if (!run_id || !*run_id) {
		rlm_err_set(&e, RLM_EINVAL, "no run id");
		rlm_api__err(err, &e);
		return NULL;
	}
	if (!(run = store_run_load(a->store, run_id, &e))) {
		rlm_api__err(err, &e);
		return NULL;
	}
	out = store_export_jsonl(run, &e);
	cJSON_Delete(run);
	if (!out)
		rlm_api__err(err, &e);
	return out;
}
