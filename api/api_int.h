/* SPDX-License-Identifier: MIT */
/* api/api_int.h -- the internals of api/: the client, the parsed config and
 * options, the context loader, the solve shared by rlm_api_solve and
 * sessions. Names: rlm_api__. Tests and the fuzz target may include it. */
#ifndef RLM_API_INT_H
#define RLM_API_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "api.h"
#include "../rlm/rlm.h"
#include "../store/store.h"

struct cJSON;

/* The client's configuration (rlm_api_new's config JSON). Its strings point
 * into json (owned) or the environment. */
struct rlm_api__config {
	struct rlm_models_cfg mc;
	struct cJSON *json;	 /* owned: the parsed config */
	char *extra, *sub_extra; /* owned: "extra", "sub_extra" as JSON text */
	bool env;		 /* read the environment (default true) */
	bool cache;		 /* a store */
	const char *cache_path;	 /* its path; NULL: store_default_path */
	const char *mcp_config;	 /* NULL: none */
};

/* Parse config_json (NULL or "": {}) into c (its release: _config_release).
 * Returns 0, or RLM_EINVAL with err "config: ..." naming the member. The
 * environment is read here when c->env (the config's members win). */
int rlm_api__config_parse(const char *config_json, struct rlm_api__config *c, struct rlm_err *err);
void rlm_api__config_release(struct rlm_api__config *c);

/* The options of a solve (rlm_api_solve's opts_json): the rlm_opts fields
 * they set and what the API itself does with them. Strings point into
 * json (owned). */
struct rlm_api__opts {
	struct rlm_opts ro; /* only the option fields are set */
	struct cJSON *json; /* owned */
	char *schema;	    /* owned: "schema" as JSON text, or NULL */
	bool detail_events; /* the caller asked for them */
	bool export_jsonl;  /* "export" */
};

/* Parse opts_json (NULL or "": {}) into o. Returns 0, or RLM_EINVAL with
 * err "options: ..." naming the member and what it expects. */
int rlm_api__opts_parse(const char *opts_json, struct rlm_api__opts *o, struct rlm_err *err);
void rlm_api__opts_release(struct rlm_api__opts *o);

/* The client. */
struct rlm_api {
	struct rlm_api__config cfg;
	struct rlm_models ms;
	struct store *store;	     /* owned, or NULL */
	struct tool_set *tools;	     /* owned: the root's (MCP servers, host tools); NULL: none */
	struct tool_set *sub_tools;  /* owned: the children's, once a host tool is added */
	struct rlm_api__host *hosts; /* owned: the host tools' adapters (api_tools.c) */
	pthread_mutex_t mu;	     /* hosts, solved */
	bool solved;		     /* a solve has begun: no more tools */
};

struct rlm_api_job {
	atomic_bool cancel;
};

/* Load ctx[0..len) of kind into *out (the caller corpus_frees it).
 * borrow: "text" is borrowed (the caller keeps ctx alive) rather than
 * copied. Returns 0, or a negative code with err "context: ...". */
int rlm_api__context(const char *ctx, size_t len, const char *kind, bool borrow,
		     struct corpus **out, struct rlm_err *err);

/* Fill ro for a solve of a with the options o (the client's pool, models,
 * store and tools) and mark the client as having solved. */
void rlm_api__opts_apply(struct rlm_api *a, const struct rlm_api__opts *o, struct rlm_opts *ro);

/* What a solve's events go through: the caller's callback (with the kinds
 * it asked for) and the count of usage by model. */
struct rlm_api__events {
	struct rlm_api *a;
	rlm_api_event_fn *fn; /* the caller's, or NULL */
	void *arg;
	bool detail;		  /* forward the detail kinds */
	struct cJSON *by_model;	  /* owned: usage_by_model */
	struct cJSON *node_model; /* owned: {"NODE": model} from "child" events */
	bool saw_call;
};
void rlm_api__events_init(struct rlm_api__events *e, struct rlm_api *a, rlm_api_event_fn *fn,
			  void *arg, bool detail);
void rlm_api__events_release(struct rlm_api__events *e);
void rlm_api__event(const struct rlm_event *ev, void *arg); /* an rlm_event_fn */

/* The result JSON of a solve that returned rc with res (rlm_api_solve's
 * contract): a fresh string. */
char *rlm_api__result(struct rlm_api *a, const struct rlm_api__opts *o, const struct rlm_opts *ro,
		      int rc, const struct rlm_result *res, const struct rlm_err *err,
		      struct rlm_api__events *e);

/* Set *err (when not NULL) to a copy of e's message. */
void rlm_api__err(char **err, const struct rlm_err *e);

/* Free the host tools' adapters (api_tools.c). */
void rlm_api__hosts_free(struct rlm_api *a);

#endif
