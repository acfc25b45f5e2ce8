/* SPDX-License-Identifier: MIT */
/* rlm/models.c -- the pool and models of a solve from a plain
 * configuration: which provider each model is, its endpoints, key, limits
 * and prices, and the instance of an in-process provider (the simulator),
 * reached through the llm provider registry by name. */
#include "rlm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The in-process provider used when no model is configured: the offline
 * simulator, registered by sim_provider_register. */
#define DEFAULT_PROVIDER "sim"

void rlm_models_cfg_init(struct rlm_models_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->concurrency = 64;
	c->timeout_s = 300;
	c->max_retries = 6;
	c->temperature = -1;
}

/* The provider called name: a wire format, or an in-process provider that
 * has registered (*p). */
static int find_provider(const char *name, enum llm_kind *kind, const struct llm_provider **p,
			 struct rlm_err *err)
{
	char *known;
	int rc;
	*p = NULL;
	if (llm_kind_parse(name, kind) == 0)
		return 0;
	if ((*p = llm_provider_find(name))) {
		*kind = LLM_INPROC;
		return 0;
	}
	known = llm_provider_names();
	rc = rlm_err_set(err, RLM_EINVAL, "unknown provider '%s' (known: %s)", name, known);
	free(known);
	return rc;
}

/* The provider a model's name implies when none is given. */
static enum llm_kind kind_of(const char *model, const struct llm_provider **p)
{
	if ((*p = llm_provider_find(model)))
		return LLM_INPROC;
	return strncmp(model, "claude", 6) == 0 ? LLM_ANTHROPIC : LLM_OPENAI;
}

/* Build the model name of provider kind/prov. sub: the sub-model, which
 * takes c->sub_base_url, sub_api_key and sub_extra_json before the
 * root's, and of another provider than the root's, not the root's
 * base_url and api_key (they are the root provider's). */
static int make_model(const struct rlm_models_cfg *c, struct rlm_models *ms, enum llm_kind kind,
		      const struct llm_provider *prov, const char *name, long window, bool sub,
		      struct llm_model **out, struct rlm_err *err)
{
	struct llm_model_cfg cfg = {0};
	bool own = !sub || kind == ms->kind; /* c->base_url and api_key apply */
	const char *url = sub && c->sub_base_url ? c->sub_base_url : own ? c->base_url : NULL;
	const char *key = sub && c->sub_api_key ? c->sub_api_key : own ? c->api_key : NULL;
	cfg.kind = kind;
	cfg.name = name;
	cfg.timeout_ms = (long)(c->timeout_s * 1000);
	cfg.max_retries = (int)c->max_retries;
	cfg.max_inflight = (int)c->max_inflight;
	cfg.rpm = c->rpm;
	cfg.tpm = c->tpm;
	cfg.extra_json = sub && c->sub_extra_json ? c->sub_extra_json : c->extra_json;
	cfg.context_window = window;
	if (kind == LLM_INPROC) {
		/* One instance, opened for the root model, serves both. */
		if (!ms->impl || prov != ms->inproc)
			return rlm_err_set(err, RLM_EINVAL,
					   "the sub-model '%s' needs the root model to be '%s' too",
					   name, prov->name);
		cfg.provider = prov;
		cfg.impl = ms->impl;
	} else if (kind == LLM_OPENAI) {
		cfg.base_urls = url ? url : c->openai_base_url;
		cfg.api_key = key ? key : c->openai_api_key;
	} else if (kind == LLM_ANTHROPIC) {
		cfg.base_urls = url ? url : c->anthropic_base_url;
		cfg.api_key = key ? key : c->anthropic_api_key;
	}
	*out = llm_model_new(&cfg, err);
	return *out ? 0 : (err && err->code ? err->code : RLM_EINVAL);
}

int rlm_models_init(struct rlm_models *ms, const struct rlm_models_cfg *c, struct rlm_err *err)
{
	struct llm_pool_cfg pc = {0};
	const struct llm_provider *prov = NULL;
	const char *model = c->model;
	bool same;
	int rc;
	memset(ms, 0, sizeof(*ms));
	if (c->provider) {
		if ((rc = find_provider(c->provider, &ms->kind, &prov, err)))
			return rc;
	} else if (!model && (c->base_url || c->api_key)) {
		/* An endpoint or a key says a real server is meant. */
		ms->kind = LLM_OPENAI;
	} else if (!model) {
		if (!c->quiet)
			fprintf(
			    stderr,
			    "rlm: note: no model configured, using the built-in offline simulator "
			    "'sim'; pass --provider and --model (or set RLM_MODEL and "
			    "OPENAI_API_KEY / ANTHROPIC_API_KEY) for a real model\n");
		if ((rc = find_provider(DEFAULT_PROVIDER, &ms->kind, &prov, err)))
			return rc;
	} else if (c->base_url) {
		/* "sim" with a base URL: a server of the simulator (rlm
		 * sim-serve), spoken to over HTTP. */
		ms->kind = strncmp(model, "claude", 6) == 0 ? LLM_ANTHROPIC : LLM_OPENAI;
	} else {
		ms->kind = kind_of(model, &prov);
	}
	if (prov) {
		if ((rc = prov->open(c->provider_spec, &ms->impl, err)))
			return rc;
		ms->inproc = prov;
		if (!model)
			model = prov->name;
	} else if (!model) {
		return rlm_err_set(
		    err, RLM_EINVAL,
		    "no model given for provider '%s': pass --model or set RLM_MODEL",
		    llm_kind_name(ms->kind));
	}
	ms->provider = prov ? prov->name : llm_kind_name(ms->kind);
	if (c->prices && (rc = llm_prices_load(c->prices, err)))
		goto fail;
	/* One model serves both unless the sub-model differs by name or by
	 * its own provider, endpoints, key or extra body. */
	same = (!c->sub_model || strcmp(c->sub_model, model) == 0) && !c->sub_provider &&
	       !c->sub_base_url && !c->sub_api_key && !c->sub_extra_json;
	if ((rc = make_model(c, ms, ms->kind, prov, model, same ? c->sub_context_window : 0, false,
			     &ms->model, err)))
		goto fail;
	if (!same) {
		const char *sname = c->sub_model ? c->sub_model : model;
		const struct llm_provider *sp = prov;
		enum llm_kind sk;
		if (c->sub_provider) {
			if ((rc = find_provider(c->sub_provider, &sk, &sp, err)))
				goto fail;
		} else if (c->sub_base_url && (!c->provider || ms->kind == LLM_INPROC)) {
			/* an endpoint of its own: a server, as for the root
			 * ("sim" with a base URL is a server of the simulator) */
			sp = NULL;
			sk = strncmp(sname, "claude", 6) == 0 ? LLM_ANTHROPIC : LLM_OPENAI;
		} else if (c->provider) {
			sk = ms->kind;
		} else {
			/* Without a provider each model's name picks its
			 * provider, so a claude root can use a gpt sub-model. */
			sk = kind_of(sname, &sp);
		}
		if ((rc = make_model(c, ms, sk, sp, sname, c->sub_context_window, true, &ms->sub,
				     err)))
			goto fail;
	} else {
		ms->sub = ms->model;
	}
	ms->params = (struct llm_params)LLM_PARAMS_DEFAULT;
	ms->params.max_tokens = (int)c->max_tokens;
	ms->params.temperature = c->temperature;
	pc.workers = (int)c->concurrency;
	ms->pool = llm_pool_new(&pc, err);
	if (!ms->pool) {
		rc = err && err->code ? err->code : RLM_EINVAL;
		goto fail;
	}
	return 0;
fail:
	rlm_models_release(ms);
	return rc;
}

void rlm_models_release(struct rlm_models *ms)
{
	llm_pool_free(ms->pool);
	if (ms->sub != ms->model)
		llm_model_free(ms->sub);
	llm_model_free(ms->model);
	if (ms->inproc && ms->inproc->close)
		ms->inproc->close(ms->impl);
	memset(ms, 0, sizeof(*ms));
}

int rlm_check_cost(const struct llm_model *model, const struct llm_model *sub, double max_cost,
		   const char *what, struct rlm_err *err)
{
	const struct llm_model *m[2] = {model, sub};
	if (!(max_cost > 0))
		return 0;
	for (size_t i = 0; i < 2; i++) {
		const char *name;
		if (!m[i] || llm_model_price_known(m[i]))
			continue;
		name = llm_model_name(m[i]);
		return rlm_err_set(
		    err, RLM_EINVAL,
		    "%s needs a price for model '%s' and none is known: give one with "
		    "--prices FILE (env RLM_PRICES), a JSON object of USD per million tokens "
		    "such as {\"%s\": {\"input\": 0.45, \"output\": 1.8}} (0 is a price)",
		    what, name, name);
	}
	return 0;
}
