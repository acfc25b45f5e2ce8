/* SPDX-License-Identifier: MIT */
/* api/api_opts.c -- the JSON of librlm's API into the C configuration: a
 * client's config (rlm_models_cfg, the store, MCP servers) and a solve's
 * options (rlm_opts). Every member is checked: an unknown one is an error
 * naming it, a wrong type one naming it and what it wants, so that a typo
 * in a program never passes silently. A member that is null counts as
 * absent (Python's None). */
#include "api_int.h"
#include "../common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- checking one member ---- */

static int want(struct rlm_err *err, const char *where, const char *key, const char *what)
{
	return rlm_err_set(err, RLM_EINVAL, "%s: '%s' must be %s", where, key, what);
}

/* A JSON text into a checked object: NULL or blank is {}. */
static int parse_object(const char *text, const char *where, cJSON **out, struct rlm_err *err)
{
	char dup[200];
	size_t n = text ? strlen(text) : 0;
	cJSON *j;
	*out = NULL;
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\t' ||
		     text[n - 1] == '\r'))
		n--;
	if (!n) {
		*out = cJSON_CreateObject();
		return 0;
	}
	j = json_parse(text, n);
	if (!j) {
		/* where: cJSON's end of what it read (not its global error
		 * pointer, which other threads' parses overwrite) */
		const char *at = NULL;
		cJSON *t = cJSON_ParseWithLengthOpts(text, n, &at, 0);
		bool value = t != NULL;
		cJSON_Delete(t);
		while (value && at && at < text + n && text_is_space(*at))
			at++; /* a value, then trailing garbage: the garbage */
		if (at && at >= text && at <= text + n)
			return rlm_err_set(err, RLM_EINVAL, "%s: not valid JSON at byte %zu", where,
					   (size_t)(at - text));
		return rlm_err_set(err, RLM_EINVAL, "%s: not valid JSON", where);
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "%s: must be a JSON object", where);
	}
	if (json_duplicate_msg(j, dup, sizeof(dup))) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "%s: %s", where, dup);
	}
	if (json_has_nul_escape(text, strlen(text))) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "%s: a string holds \\u0000", where);
	}
	*out = j;
	return 0;
}

static int get_str(const cJSON *it, const char *where, const char **out, struct rlm_err *err)
{
	if (!cJSON_IsString(it))
		return want(err, where, it->string, "a string");
	*out = it->valuestring;
	return 0;
}

static int get_bool(const cJSON *it, const char *where, bool *out, struct rlm_err *err)
{
	if (!cJSON_IsBool(it))
		return want(err, where, it->string, "true or false");
	*out = cJSON_IsTrue(it);
	return 0;
}

/* An integer in [lo, hi]. */
static int get_int(const cJSON *it, const char *where, int64_t lo, int64_t hi, int64_t *out,
		   struct rlm_err *err)
{
	char what[96];
	double d = it->valuedouble;
	snprintf(what, sizeof(what), "an integer in %lld..%lld", (long long)lo, (long long)hi);
	if (!cJSON_IsNumber(it) || !isfinite(d) || d != floor(d) || d < (double)lo ||
	    d > (double)hi)
		return want(err, where, it->string, what);
	*out = (int64_t)d;
	return 0;
}

/* A number in (lo, hi] when open, else [lo, hi]; what says it. */
static int get_num(const cJSON *it, const char *where, double lo, bool open, double hi,
		   const char *what, double *out, struct rlm_err *err)
{
	double d = it->valuedouble;
	if (!cJSON_IsNumber(it) || !isfinite(d) || d < lo || (open && d <= lo) || d > hi)
		return want(err, where, it->string, what);
	*out = d;
	return 0;
}

/* An object member, printed: *out malloc'd. */
static int get_obj(const cJSON *it, const char *where, char **out, struct rlm_err *err)
{
	if (!cJSON_IsObject(it))
		return want(err, where, it->string, "a JSON object");
	free(*out);
	*out = json_print(it);
	return 0;
}

/* The known name that shares the longest start with key (at least four
 * characters), to suggest; or NULL. */
static const char *suggest(const char *key, const char *const *known)
{
	const char *best = NULL;
	size_t best_n = 3;
	for (size_t i = 0; known[i]; i++) {
		size_t n = 0;
		while (key[n] && key[n] == known[i][n])
			n++;
		if (n > best_n) {
			best = known[i];
			best_n = n;
		}
	}
	return best;
}

static int unknown(struct rlm_err *err, const char *where, const char *key,
		   const char *const *known)
{
	const char *s = suggest(key, known);
	if (s)
		return rlm_err_set(err, RLM_EINVAL, "%s: unknown member '%s' (did you mean '%s'?)",
				   where, key, s);
	return rlm_err_set(err, RLM_EINVAL, "%s: unknown member '%s'", where, key);
}

/* ---- the client's config ---- */

static const char *const config_keys[] = {
    "provider",	   "model",	   "base_url",	     "api_key",	     "extra", "sub_provider",
    "sub_model",   "sub_base_url", "sub_api_key",    "sub_extra",    "sim",   "env",
    "concurrency", "timeout",	   "max_retries",    "max_inflight", "rpm",   "tpm",
    "max_tokens",  "temperature",  "context_window", "prices",	     "cache", "mcp_config",
    NULL};

static int config_member(struct rlm_api__config *c, const cJSON *it, struct rlm_err *err)
{
	static const char W[] = "config";
	struct rlm_models_cfg *m = &c->mc;
	const char *k = it->string;
	int64_t n = 0;
	int rc;
	if (!strcmp(k, "provider"))
		return get_str(it, W, &m->provider, err);
	if (!strcmp(k, "model"))
		return get_str(it, W, &m->model, err);
	if (!strcmp(k, "base_url"))
		return get_str(it, W, &m->base_url, err);
	if (!strcmp(k, "api_key"))
		return get_str(it, W, &m->api_key, err);
	if (!strcmp(k, "extra"))
		return get_obj(it, W, &c->extra, err);
	if (!strcmp(k, "sub_provider"))
		return get_str(it, W, &m->sub_provider, err);
	if (!strcmp(k, "sub_model"))
		return get_str(it, W, &m->sub_model, err);
	if (!strcmp(k, "sub_base_url"))
		return get_str(it, W, &m->sub_base_url, err);
	if (!strcmp(k, "sub_api_key"))
		return get_str(it, W, &m->sub_api_key, err);
	if (!strcmp(k, "sub_extra"))
		return get_obj(it, W, &c->sub_extra, err);
	if (!strcmp(k, "sim"))
		return get_str(it, W, &m->provider_spec, err);
	if (!strcmp(k, "env"))
		return 0; /* read first, by rlm_api__config_parse */
	if (!strcmp(k, "concurrency")) {
		if (!(rc = get_int(it, W, 1, 4096, &n, err)))
			m->concurrency = (long)n;
		return rc;
	}
	if (!strcmp(k, "timeout"))
		return get_num(it, W, 0, true, 86400, "seconds > 0 (at most 86400)", &m->timeout_s,
			       err);
	if (!strcmp(k, "max_retries")) {
		if (!(rc = get_int(it, W, 0, 100, &n, err)))
			m->max_retries = (long)n;
		return rc;
	}
	if (!strcmp(k, "max_inflight")) {
		if (!(rc = get_int(it, W, 0, 100000, &n, err)))
			m->max_inflight = (long)n;
		return rc;
	}
	if (!strcmp(k, "rpm"))
		return get_num(it, W, 0, false, 1e9, "a number >= 0", &m->rpm, err);
	if (!strcmp(k, "tpm"))
		return get_num(it, W, 0, false, 1e12, "a number >= 0", &m->tpm, err);
	if (!strcmp(k, "max_tokens")) {
		if (!(rc = get_int(it, W, 1, 10000000, &n, err)))
			m->max_tokens = (long)n;
		return rc;
	}
	if (!strcmp(k, "temperature"))
		return get_num(it, W, 0, false, 2, "a number in 0..2", &m->temperature, err);
	if (!strcmp(k, "context_window")) {
		if (!(rc = get_int(it, W, 1000, 100000000, &n, err)))
			m->sub_context_window = (long)n;
		return rc;
	}
	if (!strcmp(k, "prices"))
		return get_str(it, W, &m->prices, err);
	if (!strcmp(k, "cache")) {
		if (cJSON_IsBool(it)) {
			c->cache = cJSON_IsTrue(it);
			c->cache_path = NULL;
			return 0;
		}
		if (cJSON_IsString(it) && it->valuestring[0]) {
			c->cache = true;
			c->cache_path = it->valuestring;
			return 0;
		}
		return want(err, W, k, "a path or true or false");
	}
	if (!strcmp(k, "mcp_config"))
		return get_str(it, W, &c->mcp_config, err);
	return unknown(err, W, k, config_keys);
}

int rlm_api__config_parse(const char *config_json, struct rlm_api__config *c, struct rlm_err *err)
{
	const cJSON *it, *env;
	int rc;
	memset(c, 0, sizeof(*c));
	rlm_models_cfg_init(&c->mc);
	c->mc.quiet = true; /* a library prints nothing on stderr */
	c->env = true;
	if ((rc = parse_object(config_json, "config", &c->json, err)))
		return rc;
	env = json_get(c->json, "env");
	if (env && !cJSON_IsNull(env)) {
		if ((rc = get_bool(env, "config", &c->env, err)))
			goto fail;
	}
	if (c->env)
		rlm_models_cfg_env(&c->mc);
	cJSON_ArrayForEach(it, c->json)
	{
		if (cJSON_IsNull(it))
			continue;
		if ((rc = config_member(c, it, err)))
			goto fail;
	}
	c->mc.extra_json = c->extra;
	c->mc.sub_extra_json = c->sub_extra;
	return 0;
fail:
	rlm_api__config_release(c);
	return rc;
}

void rlm_api__config_release(struct rlm_api__config *c)
{
	cJSON_Delete(c->json);
	free(c->extra);
	free(c->sub_extra);
	memset(c, 0, sizeof(*c));
}

/* ---- a solve's options ---- */

static const char *const opts_keys[] = {"max_depth",
					"max_iterations",
					"max_errors",
					"max_nodes",
					"timeout",
					"max_tokens",
					"max_cost",
					"max_calls",
					"max_sub_calls",
					"exec_timeout",
					"output_limit",
					"max_answer",
					"compaction",
					"compaction_threshold",
					"system_prompt",
					"system_extra",
					"sub_system_extra",
					"setup_code",
					"sub_setup_code",
					"schema",
					"strategy",
					"python",
					"refresh",
					"trajectory",
					"detail_events",
					"export",
					"max_tool_calls",
					"tool_timeout",
					NULL};

static int opt_int(const cJSON *it, int64_t lo, int64_t hi, int64_t *out, struct rlm_err *err)
{
	return get_int(it, "options", lo, hi, out, err);
}

static int opt_secs(const cJSON *it, int64_t *ns, struct rlm_err *err)
{
	double d = 0;
	int rc = get_num(it, "options", 0, true, 1e7, "seconds > 0", &d, err);
	if (!rc)
		*ns = (int64_t)(d * 1e9);
	return rc;
}

static int opts_member(struct rlm_api__opts *o, const cJSON *it, struct rlm_err *err)
{
	static const char W[] = "options";
	struct rlm_opts *ro = &o->ro;
	const char *k = it->string, *s = NULL;
	int64_t n = 0;
	bool b = true;
	int rc;
#define INT_OPT(name, lo, hi, field)                                                               \
	if (!strcmp(k, name)) {                                                                    \
		if (!(rc = opt_int(it, lo, hi, &n, err)))                                          \
			field = n;                                                                 \
		return rc;                                                                         \
	}
	INT_OPT("max_depth", 1, 16, ro->max_depth)
	INT_OPT("max_iterations", 1, 10000, ro->max_iterations)
	INT_OPT("max_errors", 1, 10000, ro->max_errors)
	INT_OPT("max_nodes", 1, 1024, ro->max_nodes)
	INT_OPT("max_tokens", 1, INT64_MAX / 2, ro->max_tokens)
	INT_OPT("max_calls", 1, INT64_MAX / 2, ro->max_calls)
	INT_OPT("max_sub_calls", 1, INT64_MAX / 2, ro->max_sub_calls)
	INT_OPT("output_limit", 100, 1 << 26, ro->output_limit)
	INT_OPT("max_answer", 1024, (int64_t)1 << 30, ro->max_answer)
	INT_OPT("max_tool_calls", 1, INT64_MAX / 2, ro->max_tool_calls)
#undef INT_OPT
	if (!strcmp(k, "timeout"))
		return opt_secs(it, &ro->timeout_ns, err);
	if (!strcmp(k, "exec_timeout"))
		return opt_secs(it, &ro->exec_timeout_ns, err);
	if (!strcmp(k, "tool_timeout"))
		return opt_secs(it, &ro->tool_timeout_ns, err);
	if (!strcmp(k, "max_cost"))
		return get_num(it, W, 0, true, 1e9, "USD > 0", &ro->max_cost, err);
	if (!strcmp(k, "compaction")) {
		if (!(rc = get_bool(it, W, &b, err)))
			ro->no_compaction = !b;
		return rc;
	}
	if (!strcmp(k, "compaction_threshold"))
		return get_num(it, W, 0, true, 1,
			       "a fraction of the context window in (0, 1], such as 0.85",
			       &ro->compaction_threshold, err);
	if (!strcmp(k, "system_prompt"))
		return get_str(it, W, &ro->system_prompt, err);
	if (!strcmp(k, "system_extra"))
		return get_str(it, W, &ro->system_extra, err);
	if (!strcmp(k, "sub_system_extra"))
		return get_str(it, W, &ro->sub_system_extra, err);
	if (!strcmp(k, "setup_code"))
		return get_str(it, W, &ro->setup_code, err);
	if (!strcmp(k, "sub_setup_code"))
		return get_str(it, W, &ro->sub_setup_code, err);
	if (!strcmp(k, "schema")) {
		if ((rc = get_obj(it, W, &o->schema, err)))
			return rc;
		ro->schema_json = o->schema;
		return 0;
	}
	if (!strcmp(k, "strategy")) {
		if (!cJSON_IsString(it) ||
		    (strcmp(it->valuestring, "repl") && strcmp(it->valuestring, "tree")))
			return want(err, W, k, "\"repl\" or \"tree\"");
		ro->strategy = strcmp(it->valuestring, "tree") ? RLM_REPL : RLM_TREE;
		return 0;
	}
	if (!strcmp(k, "python")) {
		if ((rc = get_str(it, W, &s, err)))
			return rc;
		if (access(s, X_OK))
			return rlm_err_set(err, RLM_EINVAL,
					   "options: 'python' '%s' is not an executable file", s);
		ro->python = s;
		return 0;
	}
	if (!strcmp(k, "refresh"))
		return get_bool(it, W, &ro->refresh, err);
	if (!strcmp(k, "trajectory"))
		return get_bool(it, W, &ro->trajectory, err);
	if (!strcmp(k, "detail_events"))
		return get_bool(it, W, &o->detail_events, err);
	if (!strcmp(k, "export"))
		return get_bool(it, W, &o->export_jsonl, err);
	return unknown(err, W, k, opts_keys);
}

int rlm_api__opts_parse(const char *opts_json, struct rlm_api__opts *o, struct rlm_err *err)
{
	const cJSON *it;
	int rc;
	memset(o, 0, sizeof(*o));
	if ((rc = parse_object(opts_json, "options", &o->json, err)))
		return rc;
	cJSON_ArrayForEach(it, o->json)
	{
		if (cJSON_IsNull(it))
			continue;
		if ((rc = opts_member(o, it, err))) {
			rlm_api__opts_release(o);
			return rc;
		}
	}
	return 0;
}

void rlm_api__opts_release(struct rlm_api__opts *o)
{
	cJSON_Delete(o->json);
	free(o->schema);
	memset(o, 0, sizeof(*o));
}
