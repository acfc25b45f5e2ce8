/* SPDX-License-Identifier: MIT */
/* tests/fuzz_sim.c -- libFuzzer target: any bytes as a chat completions
 * request body get a 200 with a well-formed reply or a 400 with a JSON
 * error; any bytes as a user message get a reply that is valid UTF-8 when
 * the message is; any bytes as a simulator spec parse or fail cleanly. */
#include "../common/json.h"
#include "../llm/sim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reply(const struct sim_reply *r)
{
	cJSON *j;
	if (!r->body || r->len != strlen(r->body))
		abort();
	if (r->status == 400) {
		j = json_parse(r->body, r->len);
		if (!j || !json_str(json_get(j, "error"), "message"))
			abort();
		cJSON_Delete(j);
		return;
	}
	if (r->status != 200 || r->fault != SIM_OK)
		abort();
	if (r->stream) {
		static const char done[] = "data: [DONE]\n\n";
		if (r->len < sizeof(done) - 1 ||
		    strcmp(r->body + r->len - (sizeof(done) - 1), done))
			abort();
		return;
	}
	j = json_parse(r->body, r->len);
	if (!j)
		abort();
	cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sim *s;
	const char *text = (const char *)data;
	struct sim_reply r;
	struct llm_msg m = {LLM_USER, text, size};
	char *reply, *spec;
	if (!s) {
		struct sim_cfg cfg;
		sim_cfg_default(&cfg); /* no delays, no faults */
		s = sim_new(&cfg);
	}

	sim_handle(s, text, size, &r);
	check_reply(&r);
	sim_reply_release(&r);

	reply = sim_reply_text(&m, 1);
	if (!reply || strlen(reply) > 1000)
		abort();
	if (utf8_valid(text, size, NULL) && !utf8_valid(reply, strlen(reply), NULL))
		abort();
	free(reply);

	if (size < 4096) {
		struct sim_cfg cfg;
		struct rlm_err err = {0, ""};
		spec = xstrndup(text, size);
		sim_cfg_default(&cfg);
		if (sim_cfg_parse(spec, &cfg, &err) == 0 && cfg.p_429 + cfg.p_500 + cfg.p_reset +
								    cfg.p_malformed + cfg.p_slow +
								    cfg.p_truncate >
								1 + 1e-6)
			abort();
		free(spec);
	}
	return 0;
}
