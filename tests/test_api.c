/* SPDX-License-Identifier: MIT */
/* tests/test_api.c -- librlm's JSON API (api/api.h): clients, contexts of
 * every kind, options and their errors, events, usage by model, host tools,
 * cancel, sessions, runs, and nothing left behind after many solves. On
 * the in-process simulator, scripted models on fake servers
 * (tests/fakesrv.h) and real sandboxed workers. */
#include "harness.h"
#include "fakesrv.h"
#include "proc.h"
#include "../api/api.h"
#include "../api/api_int.h"
#include "../common/json.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char SIM[] = "{\"provider\": \"sim\", \"env\": false}";

/* A client of config, which must open. */
static struct rlm_api *client(const char *config)
{
	char *err = NULL;
	struct rlm_api *a = rlm_api_new(config, &err);
	CHECK_MSG(a, "rlm_api_new: %s", err ? err : "(no message)");
	return a;
}

/* rlm_api_solve that must return JSON: parsed (the caller deletes it). */
static cJSON *solve_json(struct rlm_api *a, const char *q, const char *ctx, size_t len,
			 const char *kind, const char *opts)
{
	char *err = NULL, *out;
	cJSON *j;
	out = rlm_api_solve(a, q, ctx, len, kind, opts, NULL, NULL, NULL, &err);
	CHECK_MSG(out, "rlm_api_solve: %s", err ? err : "(no message)");
	j = json_parse(out, strlen(out));
	CHECK_MSG(j, "not JSON: %s", out);
	rlm_api_free(out);
	return j;
}

/* The error of a call that must fail: its message, fresh. */
static char *solve_err(struct rlm_api *a, const char *q, const char *ctx, const char *kind,
		       const char *opts)
{
	char *err = NULL;
	char *out = rlm_api_solve(a, q, ctx, ctx ? strlen(ctx) : 0, kind, opts, NULL, NULL, NULL,
				  &err);
	CHECK_MSG(!out, "solve should have failed: %s", out ? out : "");
	CHECK(err);
	return err;
}

static const char *answer_of(const cJSON *j)
{
	return json_str(json_get(j, "result"), "answer");
}

TEST(version_names_the_library_and_its_commit)
{
	const char *v = rlm_api_version();
	CHECK_CONTAINS(v, RLM_VERSION);
	CHECK_CONTAINS(v, "(");
	CHECK(v == rlm_api_version()); /* static */
	rlm_api_free(NULL);
}

TEST(text_context_on_the_simulator)
{
	static const char ctx[] = "Minutes of the meeting.\nThe secret code is 4417.\n"
				  "Nothing else was decided.\n";
	struct rlm_api *a = client(SIM);
	cJSON *j = solve_json(a, "What is the secret code?", ctx, strlen(ctx), "text", NULL);
	CHECK(cJSON_IsTrue(json_get(j, "ok")));
	CHECK(cJSON_IsNull(json_get(j, "error")));
	CHECK_CONTAINS(answer_of(j), "4417");
	CHECK_STR(json_str(json_get(j, "result"), "stop"), "answer");
	CHECK(json_get(json_get(j, "usage_by_model"), "sim"));
	CHECK(cJSON_IsNull(json_get(j, "trajectory_jsonl")));
	cJSON_Delete(j);
	rlm_api_close(a);
}

TEST(unknown_option_member_is_an_error_naming_it)
{
	struct rlm_api *a = client(SIM);
	char *e = solve_err(a, "q", "text", "text", "{\"max_iteration\": 5}");
	CHECK_STR(e, "options: unknown member 'max_iteration' (did you mean 'max_iterations'?)");
	rlm_api_free(e);
	e = solve_err(a, "q", "text", "text", "{\"max_iterations\": \"5\"}");
	CHECK_STR(e, "options: 'max_iterations' must be an integer in 1..10000");
	rlm_api_free(e);
	rlm_api_close(a);
}
