/* SPDX-License-Identifier: MIT */
/* tests/fuzz_sim.c -- libFuzzer target: any bytes as a chat completions
 * request body get a 200 with a well-formed reply or a 400 with a JSON
 * error; any bytes as a user message get a reply that is valid UTF-8 when
 * the message is; any bytes as the question or a REPL output of a root
 * conversation get a well-formed root reply (after an exploring turn too);
 * any bytes as the turns of a compaction request, or as its instructions,
 * get a bounded four-line summary; any bytes as a simulator spec parse or
 * fail cleanly. */
#include "../common/json.h"
#include "../sim/sim.h"
#include "../common/text.h"

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

/* A root reply is FINAL(...) on one line (of several lines: a tool's
 * result) or a sentence and one ```repl block of a step (or of a tool
 * turn), and valid UTF-8 when the conversation is. */
static void check_root_reply(const char *r, bool valid, bool tools)
{
	size_t n = r ? strlen(r) : 0;
	if (!r)
		abort();
	if (strncmp(r, "FINAL(", 6) == 0) {
		if (r[n - 1] != ')' || (!tools && strchr(r, '\n')))
			abort();
	} else if ((!strstr(r, "\n\n```repl\n# step ") &&
		    !(tools && strstr(r, "\n\n```repl\n# tools "))) ||
		   n < 5 || strcmp(r + n - 5, "\n```\n")) {
		abort();
	}
	if (valid && !text_utf8_valid(r, n, NULL))
		abort();
}

/* The root policy: the bytes as the question of the first user message,
 * and as the output of a turn after each step. */
static void check_root(const char *text, size_t size)
{
	static const char sys[] = "Write ```repl blocks; llm_query_batched(prompts) asks many.";
	static const char first[] = "Question: How many cats?\n\nThe context is a str of 9 "
				    "characters. Sub-calls can read about 1,000 characters each.";
	static const char tools_sys[] = "Write ```repl blocks; llm_query_batched(prompts).\n"
					"Host tools: 1 tool server is connected.";
	static const char tools_first[] = "Question: What is the sum of 12 and \"a b\" in "
					  "/tmp/x.txt?\n\nThe context is a str.";
	static const char *const tool_steps[] = {"ok\n\n```repl\n# tools 1: x\n```\n",
						 "ok\n\n```repl\n# tools 2: x\n```\n",
						 "ok\n\n```repl\n# tools 3: x\n```\n",
						 "ok\n\n```repl\n# tools 4: x\n```\n"};
	static const char *const steps[] = {"ok\n\n```repl\n# step 1: x\n```\n",
					    "ok\n\n```repl\n# step 2: x\n```\n",
					    "ok\n\n```repl\n# step 3: x\n```\n", "no code"};
	struct llm_msg c[4] = {
	    {LLM_SYSTEM, sys, sizeof(sys) - 1},
	    {LLM_USER, text, size},
	};
	struct sim_cfg cfg;
	bool valid = text_utf8_valid(text, size, NULL);
	char *r;
	sim_cfg_default(&cfg);
	cfg.code_errors = 0.5;
	cfg.seed = size;
	r = sim_reply_text(&cfg, c, 2);
	check_root_reply(r, valid, false);
	free(r);
	c[1] = (struct llm_msg){LLM_USER, first, sizeof(first) - 1};
	c[3] = (struct llm_msg){LLM_USER, text, size};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		c[2] = (struct llm_msg){LLM_ASSISTANT, steps[i], strlen(steps[i])};
		r = sim_root_reply(&cfg, c, 4);
		check_root_reply(r, valid, false);
		free(r);
	}
	/* with host tools: the bytes as the question, and as the output of
	 * each tool turn (hits, a schema, a result) */
	c[0] = (struct llm_msg){LLM_SYSTEM, tools_sys, sizeof(tools_sys) - 1};
	c[1] = (struct llm_msg){LLM_USER, text, size};
	r = sim_root_reply(&cfg, c, 2);
	check_root_reply(r, valid, true);
	free(r);
	c[1] = (struct llm_msg){LLM_USER, tools_first, sizeof(tools_first) - 1};
	for (size_t i = 0; i < sizeof(tool_steps) / sizeof(tool_steps[0]); i++) {
		c[2] = (struct llm_msg){LLM_ASSISTANT, tool_steps[i], strlen(tool_steps[i])};
		r = sim_root_reply(&cfg, c, 4);
		check_root_reply(r, valid, true);
		free(r);
	}
}

/* The compaction prompt: the bytes as the turns, then as the end of the
 * instructions (the variables' names). */
static void check_compact(const char *text, size_t size)
{
	static const char head[] = "Summarise the earlier turns of a REPL session. ";
	bool valid = text_utf8_valid(text, size, NULL);
	char *sys = xmalloc(sizeof(head) + size), *r;
	struct llm_msg c[2] = {{LLM_SYSTEM, head, sizeof(head) - 1}, {LLM_USER, text, size}};
	for (int pass = 0; pass < 2; pass++) {
		size_t n;
		r = sim_reply_text(NULL, c, 2);
		n = r ? strlen(r) : 0;
		if (!r || strncmp(r, "Questions: ", 11) != 0 || !strstr(r, "\nVariables: ") ||
		    !strstr(r, "\nFindings: ") || !strstr(r, "\nNext: ") || n > 4000 ||
		    strstr(r, "# step"))
			abort();
		if (valid && !text_utf8_valid(r, n, NULL))
			abort();
		free(r);
		memcpy(sys, head, sizeof(head) - 1);
		memcpy(sys + sizeof(head) - 1, text, size);
		c[0] = (struct llm_msg){LLM_SYSTEM, sys, sizeof(head) - 1 + size};
		c[1] = (struct llm_msg){LLM_USER, "## Turn 1: the model's reply\nok", 31};
	}
	free(sys);
}

/* explore=2: the bytes as the output of the first exploring turn. */
static void check_explore(const char *text, size_t size)
{
	static const char sys[] = "Write ```repl blocks; llm_query_batched(prompts) asks many.";
	static const char first[] = "Question: Where is the cat?\n\nThe context is a str.";
	static const char turn[] = "ok\n\n```repl\n# explore 1 of 2: a piece\n```\n";
	struct llm_msg c[4] = {{LLM_SYSTEM, sys, sizeof(sys) - 1},
			       {LLM_USER, first, sizeof(first) - 1},
			       {LLM_ASSISTANT, turn, sizeof(turn) - 1},
			       {LLM_USER, text, size}};
	struct sim_cfg cfg;
	char *r;
	sim_cfg_default(&cfg);
	cfg.explore = 2;
	r = sim_root_reply(&cfg, c, 4);
	if (!r || (!strstr(r, "\n\n```repl\n# explore 2 of 2: ") &&
		   !strstr(r, "\n\n```repl\n# step ") && strncmp(r, "FINAL(", 6) != 0))
		abort();
	free(r);
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

	reply = sim_reply_text(NULL, &m, 1);
	if (!reply || strlen(reply) > 1000)
		abort();
	if (text_utf8_valid(text, size, NULL) && !text_utf8_valid(reply, strlen(reply), NULL))
		abort();
	free(reply);

	check_root(text, size);
	check_compact(text, size);
	check_explore(text, size);

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
