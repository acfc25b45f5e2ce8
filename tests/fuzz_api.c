/* SPDX-License-Identifier: MIT */
/* tests/fuzz_api.c -- libFuzzer target: any bytes as the config JSON of
 * rlm_api_new and as the options JSON of rlm_api_solve, through their
 * parsers only (rlm_api__config_parse, rlm_api__opts_parse: no model, no
 * solve). Each is taken, within the ranges the contract gives, or refused
 * with RLM_EINVAL and a message that starts with "config: " or
 * "options: ", leaving nothing allocated. */
#include "../api/api_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_opts(const struct rlm_api__opts *o)
{
	const struct rlm_opts *r = &o->ro;
	if (r->max_depth < 0 || r->max_depth > 16 || r->max_iterations < 0 ||
	    r->max_iterations > 10000 || r->max_nodes < 0 || r->max_nodes > 1024 ||
	    r->timeout_ns < 0 || r->exec_timeout_ns < 0 || r->max_cost < 0 ||
	    r->compaction_threshold < 0 || r->compaction_threshold > 1 ||
	    (r->output_limit && r->output_limit < 100) || (r->max_answer && r->max_answer < 1024))
		abort();
	if ((r->schema_json != NULL) != (o->schema != NULL))
		abort();
	if (r->strategy != RLM_REPL && r->strategy != RLM_TREE)
		abort();
}

static void check_config(const struct rlm_api__config *c)
{
	const struct rlm_models_cfg *m = &c->mc;
	if (m->concurrency < 1 || m->concurrency > 4096 || !(m->timeout_s > 0) ||
	    m->max_retries < 0 || m->max_retries > 100 || m->rpm < 0 || m->tpm < 0 ||
	    m->temperature > 2 || (c->cache_path && !c->cache) || !m->quiet)
		abort();
	if ((c->extra != NULL) != (m->extra_json != NULL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct rlm_api__config c;
	struct rlm_api__opts o;
	struct rlm_err err = {0, ""};
	int rc;
	memcpy(s, data, size);
	s[size] = '\0';

	rc = rlm_api__config_parse(s, &c, &err);
	if (rc) {
		if (rc != RLM_EINVAL || err.code != rc || strncmp(err.msg, "config: ", 8) != 0 ||
		    c.json || c.extra)
			abort();
	} else {
		check_config(&c);
		rlm_api__config_release(&c);
	}

	err = (struct rlm_err){0, ""};
	rc = rlm_api__opts_parse(s, &o, &err);
	if (rc) {
		if (rc != RLM_EINVAL || err.code != rc || strncmp(err.msg, "options: ", 9) != 0 ||
		    o.json || o.schema)
			abort();
	} else {
		check_opts(&o);
		rlm_api__opts_release(&o);
	}
	free(s);
	return 0;
}
