/* SPDX-License-Identifier: MIT */
/* llm/price.c -- built-in prices and context windows of common models, and
 * user overrides of the prices from a JSON file.
 *
 * Prices are USD per million tokens as published by the providers (late
 * 2025); they change, which is why a user can override any of them with
 * --prices FILE. Lookup takes the exact name, then the longest table entry
 * that is a prefix of the name, so dated snapshots ("gpt-5-mini-2025-08-07",
 * "claude-sonnet-4-5-20250929") find their family. */
#include "llm_int.h"
#include "../common/json.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct model_info {
	const char *name;
	double input, output, cached, cache_write; /* cache_write < 0: as input */
	long window; /* tokens */
};

static const struct model_info table[] = {
	/* OpenAI */
	{"gpt-5", 1.25, 10.0, 0.125, -1, 400000},
	{"gpt-5-mini", 0.25, 2.0, 0.025, -1, 400000},
	{"gpt-5-nano", 0.05, 0.40, 0.005, -1, 400000},
	{"gpt-5.1", 1.25, 10.0, 0.125, -1, 400000},
	{"gpt-4.1", 2.0, 8.0, 0.50, -1, 1047576},
	{"gpt-4.1-mini", 0.40, 1.60, 0.10, -1, 1047576},
	{"gpt-4.1-nano", 0.10, 0.40, 0.025, -1, 1047576},
	{"gpt-4o", 2.50, 10.0, 1.25, -1, 128000},
	{"gpt-4o-mini", 0.15, 0.60, 0.075, -1, 128000},
	{"o3", 2.0, 8.0, 0.50, -1, 200000},
	{"o4-mini", 1.10, 4.40, 0.275, -1, 200000},
	/* Anthropic: cache reads at 0.1x input, 5-minute cache writes at 1.25x */
	{"claude-opus-4-5", 5.0, 25.0, 0.50, 6.25, 200000},
	{"claude-opus-4-1", 15.0, 75.0, 1.50, 18.75, 200000},
	{"claude-opus-4", 15.0, 75.0, 1.50, 18.75, 200000},
	{"claude-sonnet-4-5", 3.0, 15.0, 0.30, 3.75, 200000},
	{"claude-sonnet-4", 3.0, 15.0, 0.30, 3.75, 200000},
	{"claude-haiku-4-5", 1.0, 5.0, 0.10, 1.25, 200000},
	{"claude-3-5-haiku", 0.80, 4.0, 0.08, 1.0, 200000},
	/* Open models at typical hosted rates */
	{"qwen3-coder-480b-a35b", 0.45, 1.80, 0.45, -1, 262144},
	{"Qwen/Qwen3-Coder-480B-A35B-Instruct", 0.45, 1.80, 0.45, -1, 262144},
	/* The simulator costs nothing. */
	{"sim", 0, 0, 0, 0, 32000},
};

/* Overrides from llm_prices_load: process-wide (a later load replaces
 * them for every model made after it), under prices_mu, as librlm's clients
 * may load a file while another client's calls look prices up. */
static pthread_rwlock_t prices_mu = PTHREAD_RWLOCK_INITIALIZER;
static struct model_info *overrides;
static size_t n_overrides;

static const struct model_info *exact(const struct model_info *t, size_t n, const char *model)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, model) == 0)
			return &t[i];
	return NULL;
}

/* The longest entry that is a prefix of model ending at a separator; on a
 * tie the earlier table (the overrides) wins. */
static const struct model_info *prefix(const struct model_info *t, size_t n, const char *model,
				       const struct model_info *best)
{
	size_t best_len = best ? strlen(best->name) : 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(t[i].name);
		if (l > best_len && strncmp(t[i].name, model, l) == 0 &&
		    (model[l] == '-' || model[l] == '@' || model[l] == ':')) {
			best = &t[i];
			best_len = l;
		}
	}
	return best;
}

static const struct model_info *find(const char *model)
{
	const struct model_info *mi;
	if ((mi = exact(overrides, n_overrides, model)) ||
	    (mi = exact(table, ARRAY_SIZE(table), model)))
		return mi;
	return prefix(table, ARRAY_SIZE(table), model, prefix(overrides, n_overrides, model, NULL));
}

static const struct model_info *lookup(const char *model)
{
	const struct model_info *mi;
	if (!model)
		return NULL;
	/* "provider/model" names (OpenRouter) match on the model part too. */
	if ((mi = find(model)))
		return mi;
	if (strchr(model, '/'))
		return lookup(strrchr(model, '/') + 1);
	return NULL;
}

static struct llm_price price_of(const struct model_info *mi)
{
	struct llm_price p = {0, 0, 0, 0, false};
	if (mi && mi->input >= 0) {
		p.input = mi->input;
		p.output = mi->output;
		p.cached = mi->cached;
		p.cache_write = mi->cache_write >= 0 ? mi->cache_write : mi->input;
		p.known = true;
	}
	return p;
}

struct llm_price llm_price_lookup(const char *model)
{
	struct llm_price p;
	pthread_rwlock_rdlock(&prices_mu);
	p = price_of(lookup(model));
	pthread_rwlock_unlock(&prices_mu);
	return p;
}

struct llm_price llm_price_override(const char *model)
{
	struct llm_price p;
	if (!model)
		return price_of(NULL);
	pthread_rwlock_rdlock(&prices_mu);
	p = price_of(prefix(overrides, n_overrides, model, exact(overrides, n_overrides, model)));
	pthread_rwlock_unlock(&prices_mu);
	return p;
}

long llm_context_window_lookup(const char *model)
{
	const struct model_info *mi;
	long w;
	pthread_rwlock_rdlock(&prices_mu);
	mi = lookup(model);
	w = mi ? mi->window : 0;
	pthread_rwlock_unlock(&prices_mu);
	return w;
}

static void table_free(struct model_info *t, size_t n)
{
	for (size_t i = 0; i < n && t; i++)
		free((void *)(uintptr_t)t[i].name);
	free(t);
}

double llm_cost(const struct llm_price *p, const struct llm_usage *u)
{
	int64_t uncached = u->input_tokens - u->cached_tokens - u->cache_write_tokens;
	if (!p->known)
		return 0;
	if (uncached < 0)
		uncached = 0;
	return ((double)uncached * p->input + (double)u->cached_tokens * p->cached +
		(double)u->cache_write_tokens * p->cache_write + (double)u->output_tokens * p->output) /
	       1e6;
}

static int price_field(const cJSON *o, const char *key, double fallback, double *out,
		       const char *path, const char *model, struct rlm_err *err)
{
	cJSON *it = json_get(o, key);
	if (!it) {
		*out = fallback;
		return 0;
	}
	if (!cJSON_IsNumber(it) || it->valuedouble < 0)
		return rlm_err_set(err, RLM_EINVAL,
				   "'%s': price '%s' of model '%s' is not a non-negative number", path,
				   key, model);
	*out = it->valuedouble;
	return 0;
}

int llm_prices_load(const char *path, struct rlm_err *err)
{
	char *text = NULL;
	size_t len;
	cJSON *root = NULL, *it;
	struct model_info *fresh = NULL;
	int rc;
	size_t n = 0;
	if ((rc = file_read(path, 1 << 20, &text, &len, err)))
		return rc;
	root = json_parse(text, len);
	if (!cJSON_IsObject(root)) {
		rc = rlm_err_set(err, RLM_EPARSE,
				 "'%s' is not a JSON object of model prices "
				 "({\"model\": {\"input\": 1.25, \"output\": 10}})",
				 path);
		goto out;
	}
	fresh = xcalloc((size_t)cJSON_GetArraySize(root) + 1, sizeof(*fresh));
	cJSON_ArrayForEach(it, root)
	{
		struct model_info *mi = &fresh[n];
		if (!cJSON_IsObject(it)) {
			rc = rlm_err_set(err, RLM_EINVAL, "'%s': entry '%s' is not an object", path,
					 it->string);
			goto out;
		}
		mi->name = xstrdup(it->string);
		if ((rc = price_field(it, "input", -1, &mi->input, path, it->string, err)) ||
		    (rc = price_field(it, "output", -1, &mi->output, path, it->string, err)))
			goto out;
		if (mi->input < 0 || mi->output < 0) {
			rc = rlm_err_set(err, RLM_EINVAL,
					 "'%s': model '%s' needs both \"input\" and \"output\" prices",
					 path, it->string);
			goto out;
		}
		if ((rc = price_field(it, "cached", mi->input, &mi->cached, path, it->string, err)) ||
		    (rc = price_field(it, "cache_write", -1, &mi->cache_write, path, it->string,
				      err)))
			goto out;
		mi->window = (long)json_int(it, "context_window", 0);
		if (!mi->window) {
			const struct model_info *base = prefix(table, ARRAY_SIZE(table), mi->name,
							       exact(table, ARRAY_SIZE(table), mi->name));
			mi->window = base ? base->window : 0;
		}
		n++;
	}
	/* the new table replaces the old whole; a bad file leaves the old */
	pthread_rwlock_wrlock(&prices_mu);
	{
		struct model_info *old = overrides;
		size_t n_old = n_overrides;
		overrides = fresh;
		n_overrides = n;
		fresh = old;
		n = n_old;
	}
	pthread_rwlock_unlock(&prices_mu);
out:
	table_free(fresh, rc ? n + 1 : n);
	cJSON_Delete(root);
	free(text);
	return rc;
}
