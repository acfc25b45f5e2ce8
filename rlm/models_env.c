/* SPDX-License-Identifier: MIT */
/* rlm/models_env.c -- the environment variables of the model configuration
 * (rlm_models_cfg_env), one reading for `rlm` and librlm's clients. */
#include "rlm.h"

#include <stdlib.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Set *field to the variable name when it is set and not empty. */
static void take(const char **field, const char *name)
{
	const char *v = env(name);
	if (v)
		*field = v;
}

void rlm_models_cfg_env(struct rlm_models_cfg *c)
{
	const char *v;
	take(&c->provider, "RLM_PROVIDER");
	take(&c->model, "RLM_MODEL");
	take(&c->sub_model, "RLM_SUB_MODEL");
	take(&c->prices, "RLM_PRICES");
	take(&c->provider_spec, "RLM_SIM");
	take(&c->openai_base_url, "OPENAI_BASE_URL");
	take(&c->openai_api_key, "OPENAI_API_KEY");
	take(&c->anthropic_base_url, "ANTHROPIC_BASE_URL");
	take(&c->anthropic_api_key, "ANTHROPIC_API_KEY");
	/* Out of range: the default, as the command line always did. */
	if ((v = env("RLM_CONCURRENCY")))
		c->concurrency = atol(v) > 0 && atol(v) <= 4096 ? atol(v) : 64;
	if ((v = env("RLM_TIMEOUT")))
		c->timeout_s = atof(v) > 0 ? atof(v) : 300;
}
