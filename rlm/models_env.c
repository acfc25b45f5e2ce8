/* SPDX-License-Identifier: MIT */
/* rlm/models_env.c -- the environment variables of the model configuration
 * (rlm_models_cfg_env), one reading for `rlm` and librlm's clients. */
#include "rlm.h"
#include "../common/text.h"

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
	if ((v = env("RLM_CONCURRENCY"))) {
		long l;
		c->concurrency = text_parse_int(v, 1, 4096, &l) ? 64 : l;
	}
	if ((v = env("RLM_TIMEOUT"))) {
		double d; /* "inf", "nan", 1e999: out of range too */
		c->timeout_s = text_parse_double(v, 0.001, 86400, &d) ? 300 : d;
	}
}
