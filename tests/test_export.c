/* SPDX-License-Identifier: MIT */
/* tests/test_export.c -- exporting runs: the reference library's JSONL
 * trajectory (fields, types, growing histories, children nested under the
 * code block that started them), the HTML viewer (escaping of hostile
 * text), malformed runs, and the page opened in headless Chromium. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/embed.h"
#include "../common/json.h"
#include "../store/export.h"

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The answer: markup that would end the page's script element, and
 * U+2028, which some line splitters take for a line end. */
#define ANSWER	     "Paris </script><script>alert(1)</script> and\xe2\x80\xa8more"
#define QUESTION     "Which city hosts the archive?"
#define CREATED_MS   1795457700000.0 /* 2026-11-23T18:15:00Z */
#define REPLY1	     "Let me look.\n```repl\nprint(context[:100])\n```"
#define CODE1	     "print(context[:100])"
#define OUT1	     "the first 100 characters\n"
#define NOTICE1	     "the REPL worker was restarted: its variables are gone"
#define REPLY2	     "```repl\nr = rlm_query('Find the city')\n```\n```repl\nanswer['content'] = r\n```"
#define CODE2A	     "r = rlm_query('Find the city')"
#define CODE2B	     "answer['content'] = r\nanswer['ready'] = True"
#define CHILD_Q	     "Find the city"
#define GRAND_Q	     "Which archive?"
#define GRAND_ANSWER "the city archive"
#define SECRET	     "sk-SECRET-0123"

struct who {
	int node, parent, depth;
};
static const struct who ROOT = {0, -1, 0}, N1 = {1, 0, 1}, N2 = {2, 1, 2};

static void add_ev(cJSON *evs, int t_ms, struct who w, int it, const char *kind, const char *text,
		   cJSON *data)
{
	cJSON *e = cJSON_CreateObject();
	json_add_num(e, "seq", cJSON_GetArraySize(evs) + 1);
	json_add_num(e, "t_ns", (double)t_ms * 1e6);
	json_add_num(e, "node", w.node);
	json_add_num(e, "parent", w.parent);
	json_add_num(e, "depth", w.depth);
	json_add_num(e, "iteration", it);
	json_add_str(e, "kind", kind);
	json_add(e, "text", text ? cJSON_CreateString(text) : cJSON_CreateNull());
	json_add(e, "data", data ? data : cJSON_CreateNull());
	json_add(evs, NULL, e);
}

static cJSON *usage(int in, int out)
{
	cJSON *u = cJSON_CreateObject();
	json_add_num(u, "input_tokens", in);
	json_add_num(u, "output_tokens", out);
	return u;
}

static cJSON *call(const char *role, bool cached, int in, int out, double cost, int ms)
{
	cJSON *d = cJSON_CreateObject();
	json_add_str(d, "key", "0123456789abcdef0123456789abcdef");
	json_add_str(d, "role", role);
	json_add_bool(d, "cached", cached);
	json_add(d, "usage", usage(in, out));
	json_add_num(d, "cost", cost);
	json_add_num(d, "ms", ms);
	json_add_num(d, "prompt_chars", in * 4);
	return d;
}

/* A plain sub-call's data as rlm/record.c keeps it: its prompt and reply
 * (NULL: it failed). */
static cJSON *sub_call(const char *prompt, const char *response, int in, int out, int ms)
{
	cJSON *d = call("sub", false, in, out, 0.0001, ms);
	json_add_str(d, "model", "sim-sub");
	json_add_str(d, "prompt", prompt);
	if (response) {
		json_add_str(d, "response", response);
		json_add_num(d, "response_chars", (double)strlen(response));
	} else {
		cJSON_ReplaceItemInObject(d, "ok", cJSON_CreateFalse());
		json_add_str(d, "error", "the provider answered 500");
	}
	return d;
}

static cJSON *prompt_data(const char *user)
{
	cJSON *d = cJSON_CreateObject();
	json_add_str(d, "user", user);
	return d;
}

static cJSON *child_end(int calls, double cost)
{
	cJSON *d = cJSON_CreateObject();
	json_add_str(d, "stop", "answer");
	json_add(d, "usage", usage(300 * calls, 40 * calls));
	json_add_num(d, "cost", cost);
	json_add_num(d, "calls", calls);
	return d;
}

/* A done run: the root takes two turns; its first block of turn 2 starts
 * child 1, whose one block starts grandchild 2. */
static cJSON *make_run(void)
{
	cJSON *r = cJSON_CreateObject(), *cfg = cJSON_CreateObject(), *res = cJSON_CreateObject();
	cJSON *evs = cJSON_CreateArray(), *t = cJSON_CreateObject(), *calls = cJSON_CreateObject();
	json_add_str(r, "id", "20261123-181500-3fa9c1");
	json_add_num(r, "created_ms", CREATED_MS);
	json_add_num(r, "ended_ms", CREATED_MS + 40);
	json_add_str(r, "status", "done");
	json_add_str(r, "question", QUESTION);
	json_add_str(r, "context_digest", "00112233445566778899aabbccddeeff");
	json_add_num(r, "context_bytes", 4000000);
	json_add_str(r, "context_source", "haystack.txt");
	json_add_str(cfg, "strategy", "repl");
	json_add_str(cfg, "provider", "sim");
	json_add_str(cfg, "model", "sim-root");
	json_add_str(cfg, "sub_model", "sim-sub");
	json_add_num(cfg, "max_iterations", 30);
	json_add_num(cfg, "max_depth", 3);
	json_add_str(cfg, "api_key", SECRET);
	json_add(r, "config", cfg);
	json_add_str(r, "answer", ANSWER);
	json_add_str(res, "answer", ANSWER);
	json_add_str(res, "stop", "answer");
	json_add(res, "usage", usage(2000, 300));
	json_add_num(res, "cost_usd", 0.0123);
	json_add_num(calls, "total", 7);
	json_add(res, "calls", calls);
	json_add_num(t, "solve_ms", 40);
	json_add(res, "timings", t);
	json_add(r, "result", res);
	json_add(r, "resumed_from", cJSON_CreateString("20261122-101010-aaaaaa"));

	add_ev(evs, 0, ROOT, 0, "prompt", "SYSTEM 0", prompt_data("USER 0: " QUESTION));
	add_ev(evs, 1, ROOT, 1, "sandbox", "seccomp=on landlock=abi7 userns=on", NULL);
	add_ev(evs, 2, ROOT, 1, "call", NULL, call("root", false, 100, 20, 0.001, 900));
	add_ev(evs, 3, ROOT, 1, "reply", REPLY1, NULL);
	add_ev(evs, 4, ROOT, 1, "code", CODE1, NULL);
	add_ev(evs, 5, ROOT, 1, "call", NULL, call("sub", true, 50, 5, 0, 0));
	add_ev(evs, 6, ROOT, 1, "output", OUT1, NULL);
	add_ev(evs, 7, ROOT, 1, "notice", NOTICE1, NULL);
	add_ev(evs, 8, ROOT, 2, "call", NULL, call("root", false, 150, 40, 0.002, 1100));
	add_ev(evs, 9, ROOT, 2, "reply", REPLY2, NULL);
	add_ev(evs, 10, ROOT, 2, "code", CODE2A, NULL);
	add_ev(evs, 10, ROOT, 2, "call", NULL, sub_call("Q-before", "A-before", 40, 4, 250));
	add_ev(evs, 11, N1, 0, "child", CHILD_Q, NULL);
	add_ev(evs, 12, N1, 0, "prompt", "SYSTEM 1", prompt_data("USER 1: " CHILD_Q));
	add_ev(evs, 13, N1, 1, "call", NULL, call("root", false, 80, 30, 0.0007, 500));
	add_ev(evs, 14, N1, 1, "reply", "```repl\ns = rlm_query('Which archive?')\n```", NULL);
	add_ev(evs, 15, N1, 1, "code", "s = rlm_query('Which archive?')", NULL);
	add_ev(evs, 16, N2, 0, "child", GRAND_Q, NULL);
	add_ev(evs, 17, N2, 0, "prompt", "SYSTEM 2", prompt_data("USER 2: " GRAND_Q));
	add_ev(evs, 18, N2, 1, "call", NULL, call("root", true, 60, 10, 0, 3));
	add_ev(evs, 19, N2, 1, "reply", "```repl\nanswer['content'] = 'the city archive'\n```",
	       NULL);
	add_ev(evs, 20, N2, 1, "code", "answer['content'] = 'the city archive'", NULL);
	add_ev(evs, 21, N2, 1, "output", "(no output)", NULL);
	add_ev(evs, 22, N2, 0, "child_end", GRAND_ANSWER, child_end(1, 0.0002));
	add_ev(evs, 23, N1, 1, "output", "(no output)", NULL);
	add_ev(evs, 24, N1, 0, "child_end", "Paris", child_end(3, 0.0009));
	add_ev(evs, 24, ROOT, 2, "call", NULL, sub_call("Q-after", NULL, 0, 0, 5));
	add_ev(evs, 25, ROOT, 2, "output", "(no output)", NULL);
	add_ev(evs, 26, ROOT, 2, "code", CODE2B, NULL);
	add_ev(evs, 27, ROOT, 2, "output", "(no output)", NULL);
	add_ev(evs, 30, ROOT, 0, "end", NULL, cJSON_Duplicate(res, true));
	json_add(r, "events", evs);
	return r;
}

/* The lines of text, each parsed; *n their count. */
static cJSON **parse_lines(const char *text, size_t *n)
{
	cJSON **lines = NULL;
	size_t cap = 0;
	*n = 0;
	CHECK(text && *text);
	CHECK_MSG(text[strlen(text) - 1] == '\n', "the JSONL does not end in a newline");
	while (*text) {
		const char *nl = strchr(text, '\n');
		cJSON *j = json_parse(text, (size_t)(nl - text));
		CHECK_MSG(j, "line %zu is not JSON: %.200s", *n + 1, text);
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			lines = xrealloc(lines, cap * sizeof(*lines));
		}
		lines[(*n)++] = j;
		text = nl + 1;
	}
	return lines;
}

static void free_lines(cJSON **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(lines[i]);
	free(lines);
}

static const cJSON *item(const cJSON *a, int i)
{
	const cJSON *it = cJSON_GetArrayItem(a, i);
	CHECK_MSG(it, "no item %d", i);
	return it;
}

static void check_msg(const cJSON *m, const char *role, const char *content)
{
	CHECK_STR(json_str(m, "role"), role);
	if (content)
		CHECK_STR(json_str(m, "content"), content);
}

/* Every field of an iteration entry, with its type. */
static void check_iteration_shape(const cJSON *it)
{
	const cJSON *b;
	CHECK_STR(json_str(it, "type"), "iteration");
	CHECK(cJSON_IsNumber(json_get(it, "iteration")));
	CHECK(cJSON_IsString(json_get(it, "timestamp")));
	CHECK(cJSON_IsArray(json_get(it, "prompt")));
	CHECK(cJSON_IsString(json_get(it, "response")));
	CHECK(cJSON_IsArray(json_get(it, "code_blocks")));
	CHECK(cJSON_IsNull(json_get(it, "final_answer")) ||
	      cJSON_IsString(json_get(it, "final_answer")));
	CHECK(cJSON_IsNumber(json_get(it, "iteration_time")));
	cJSON_ArrayForEach(b, json_get(it, "code_blocks"))
	{
		const cJSON *r = json_get(b, "result"), *c;
		CHECK(cJSON_IsString(json_get(b, "code")));
		CHECK(cJSON_IsObject(r));
		CHECK(cJSON_IsString(json_get(r, "stdout")));
		CHECK(cJSON_IsString(json_get(r, "stderr")));
		CHECK(cJSON_IsObject(json_get(r, "locals")));
		CHECK(cJSON_IsNumber(json_get(r, "execution_time")));
		CHECK(cJSON_IsArray(json_get(r, "rlm_calls")));
		CHECK(json_get(r, "final_answer"));
		/* each call as the reference's RLMChatCompletion, with the
		 * visualizer's token counts */
		cJSON_ArrayForEach(c, json_get(r, "rlm_calls"))
		{
			CHECK(cJSON_IsString(json_get(c, "root_model")));
			CHECK(cJSON_IsString(json_get(c, "prompt")));
			CHECK(cJSON_IsString(json_get(c, "response")));
			/* null when the run does not have them (a child cut short) */
			CHECK(cJSON_IsNumber(json_get(c, "prompt_tokens")) ||
			      cJSON_IsNull(json_get(c, "prompt_tokens")));
			CHECK(cJSON_IsNumber(json_get(c, "completion_tokens")) ||
			      cJSON_IsNull(json_get(c, "completion_tokens")));
			CHECK(cJSON_IsNumber(json_get(c, "execution_time")));
			CHECK(cJSON_IsObject(json_get(json_get(c, "usage_summary"),
						      "model_usage_summaries")));
		}
	}
	for (const cJSON *m = json_get(it, "prompt")->child; m; m = m->next) {
		CHECK(cJSON_IsString(json_get(m, "role")));
		CHECK(cJSON_IsString(json_get(m, "content")));
	}
}

static void check_close(double got, double want)
{
	CHECK_MSG(got > want - 1e-9 && got < want + 1e-9, "got %.9f, want %.9f", got, want);
}

TEST(jsonl_metadata_line)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_run(), **lines, *m, *kw;
	char *text = store_export_jsonl(run, &err);
	size_t n;
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK_INT(n, 3);
	m = lines[0];
	CHECK_STR(json_str(m, "type"), "metadata");
	CHECK_STR(json_str(m, "timestamp"), "2026-11-23T18:15:00.000000+00:00");
	CHECK_STR(json_str(m, "root_model"), "sim-root");
	CHECK_INT(json_int(m, "max_depth", -1), 3);
	CHECK_INT(json_int(m, "max_iterations", -1), 30);
	CHECK_STR(json_str(m, "backend"), "sim");
	kw = json_get(m, "backend_kwargs");
	CHECK(cJSON_IsObject(kw));
	CHECK_STR(json_str(kw, "model_name"), "sim-root");
	CHECK_STR(json_str(kw, "sub_model"), "sim-sub");
	CHECK(!json_get(kw, "api_key"));
	CHECK(!strstr(text, SECRET));
	CHECK(cJSON_IsString(json_get(m, "environment_type")));
	CHECK(cJSON_IsObject(json_get(m, "environment_kwargs")));
	CHECK_INT(cJSON_GetArraySize(json_get(m, "environment_kwargs")), 0);
	CHECK(cJSON_IsNull(json_get(m, "other_backends")));
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

TEST(jsonl_metadata_nulls_without_config)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_run(), **lines;
	char *text;
	size_t n;
	cJSON_DeleteItemFromObject(run, "config");
	text = store_export_jsonl(run, &err);
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK(cJSON_IsNull(json_get(lines[0], "root_model")));
	CHECK(cJSON_IsNull(json_get(lines[0], "max_depth")));
	CHECK(cJSON_IsNull(json_get(lines[0], "max_iterations")));
	CHECK(cJSON_IsNull(json_get(lines[0], "backend")));
	CHECK(cJSON_IsObject(json_get(lines[0], "backend_kwargs")));
	/* The usage summaries still need a model name: the reference's. */
	CHECK(strstr(text, "\"unknown\""));
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

TEST(jsonl_iterations_and_histories)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_run(), **lines;
	const cJSON *it1, *it2, *p, *b;
	char *text = store_export_jsonl(run, &err);
	size_t n;
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK_INT(n, 3);
	it1 = lines[1];
	it2 = lines[2];
	check_iteration_shape(it1);
	check_iteration_shape(it2);
	CHECK_INT(json_int(it1, "iteration", 0), 1);
	CHECK_INT(json_int(it2, "iteration", 0), 2);
	/* The time the turn's last event was recorded. */
	CHECK_STR(json_str(it1, "timestamp"), "2026-11-23T18:15:00.007000+00:00");
	check_close(json_num(it1, "iteration_time", -1), 0.007); /* from the prompt at 0 */
	check_close(json_num(it2, "iteration_time", -1), 0.020); /* 7 -> 27 ms */

	/* Turn 1 saw the system prompt and the first user message. */
	p = json_get(it1, "prompt");
	CHECK_INT(cJSON_GetArraySize(p), 2);
	check_msg(item(p, 0), "system", "SYSTEM 0");
	check_msg(item(p, 1), "user", "USER 0: " QUESTION);
	CHECK_STR(json_str(it1, "response"), REPLY1);
	CHECK_INT(cJSON_GetArraySize(json_get(it1, "code_blocks")), 1);
	b = item(json_get(it1, "code_blocks"), 0);
	CHECK_STR(json_str(b, "code"), CODE1);
	CHECK_STR(json_str(json_get(b, "result"), "stdout"), OUT1);
	check_close(json_num(json_get(b, "result"), "execution_time", -1), 0.002);
	CHECK_INT(cJSON_GetArraySize(json_get(json_get(b, "result"), "rlm_calls")), 0);
	CHECK(cJSON_IsNull(json_get(json_get(b, "result"), "final_answer")));
	CHECK(cJSON_IsNull(json_get(it1, "final_answer")));

	/* Turn 2 saw two more: the reply, and the outputs and notice of turn 1. */
	p = json_get(it2, "prompt");
	CHECK_INT(cJSON_GetArraySize(p), 4);
	check_msg(item(p, 0), "system", "SYSTEM 0");
	check_msg(item(p, 1), "user", "USER 0: " QUESTION);
	check_msg(item(p, 2), "assistant", REPLY1);
	check_msg(item(p, 3), "user", "REPL output:\nthe first 100 characters\n\n" NOTICE1);
	CHECK_STR(json_str(it2, "response"), REPLY2);
	CHECK_STR(json_str(it2, "final_answer"), ANSWER);
	CHECK_INT(cJSON_GetArraySize(json_get(it2, "code_blocks")), 2);
	/* The answer was set by code: the last block has it. */
	b = item(json_get(it2, "code_blocks"), 1);
	CHECK_STR(json_str(b, "code"), CODE2B);
	CHECK_STR(json_str(json_get(b, "result"), "final_answer"), ANSWER);
	CHECK(cJSON_IsNull(
	    json_get(json_get(item(json_get(it2, "code_blocks"), 0), "result"), "final_answer")));
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

TEST(jsonl_children_nest_under_their_block)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_run(), **lines;
	const cJSON *blocks, *calls, *c, *us, *m, *traj, *cit, *g;
	char *text = store_export_jsonl(run, &err);
	size_t n;
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	blocks = json_get(lines[2], "code_blocks");
	/* Child 1 ran under the first block of turn 2, and nowhere else. */
	CHECK_INT(cJSON_GetArraySize(json_get(json_get(item(blocks, 1), "result"), "rlm_calls")),
		  0);
	calls = json_get(json_get(item(blocks, 0), "result"), "rlm_calls");
	/* in the order they were made: a sub-call, the child, a sub-call */
	CHECK_INT(cJSON_GetArraySize(calls), 3);
	CHECK_STR(json_str(item(calls, 0), "prompt"), "Q-before");
	CHECK_STR(json_str(item(calls, 2), "prompt"), "Q-after");
	c = item(calls, 1);
	CHECK_STR(json_str(c, "root_model"), "sim-root");
	CHECK_STR(json_str(c, "prompt"), CHILD_Q);
	CHECK_STR(json_str(c, "response"), "Paris");
	CHECK_INT(json_int(c, "prompt_tokens", -1), 900);
	CHECK_INT(json_int(c, "completion_tokens", -1), 120);
	check_close(json_num(c, "execution_time", -1), 0.013); /* 11 -> 24 ms */
	us = json_get(c, "usage_summary");
	m = json_get(json_get(us, "model_usage_summaries"), "sim-root");
	CHECK_INT(json_int(m, "total_calls", -1), 3);
	CHECK_INT(json_int(m, "total_input_tokens", -1), 900);
	CHECK_INT(json_int(m, "total_output_tokens", -1), 120);
	check_close(json_num(us, "total_cost", -1), 0.0009);

	/* Its trajectory: the run's metadata and its own turn. */
	traj = json_get(c, "metadata");
	CHECK_STR(json_str(json_get(traj, "run_metadata"), "root_model"), "sim-root");
	CHECK(!json_get(json_get(traj, "run_metadata"), "type"));
	CHECK_INT(cJSON_GetArraySize(json_get(traj, "iterations")), 1);
	cit = item(json_get(traj, "iterations"), 0);
	check_iteration_shape(cit);
	CHECK_INT(cJSON_GetArraySize(json_get(cit, "prompt")), 2);
	check_msg(item(json_get(cit, "prompt"), 0), "system", "SYSTEM 1");
	check_msg(item(json_get(cit, "prompt"), 1), "user", "USER 1: " CHILD_Q);
	CHECK_STR(json_str(cit, "final_answer"), "Paris");

	/* The grandchild, under the child's block. */
	calls = json_get(json_get(item(json_get(cit, "code_blocks"), 0), "result"), "rlm_calls");
	CHECK_INT(cJSON_GetArraySize(calls), 1);
	g = item(calls, 0);
	CHECK_STR(json_str(g, "prompt"), GRAND_Q);
	CHECK_STR(json_str(g, "response"), GRAND_ANSWER);
	cit = item(json_get(json_get(g, "metadata"), "iterations"), 0);
	check_iteration_shape(cit);
	check_msg(item(json_get(cit, "prompt"), 0), "system", "SYSTEM 2");
	CHECK_STR(json_str(cit, "final_answer"), GRAND_ANSWER);
	CHECK_INT(cJSON_GetArraySize(json_get(
		      json_get(item(json_get(cit, "code_blocks"), 0), "result"), "rlm_calls")),
		  0);
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

/* A flat run (max depth 1): one block makes three sub-calls (one of them
 * failed), another raises. rlm_calls lists the sub-calls as the
 * reference does, in order; a call recorded without its prompt (an
 * older run) is left out; the error's text goes to stderr. */
TEST(jsonl_flat_run_lists_its_sub_calls)
{
	static const char out2[] = "before\nTraceback (most recent call last):\n  File \"<repl>\", "
				   "line 1, in <module>\nZeroDivisionError: division by zero\n";
	struct rlm_err err = {0, ""};
	cJSON *run = cJSON_CreateObject(), *evs = cJSON_CreateArray(), *cfg = cJSON_CreateObject();
	cJSON **lines, *od = cJSON_CreateObject();
	const cJSON *calls, *c, *m, *r;
	char *text;
	size_t n;
	json_add_str(run, "id", "20261123-181500-flat01");
	json_add_num(run, "created_ms", CREATED_MS);
	json_add_str(run, "status", "done");
	json_add_str(run, "question", QUESTION);
	json_add_str(cfg, "model", "sim-root");
	json_add_str(cfg, "sub_model", "sim-sub");
	json_add_num(cfg, "max_depth", 1);
	json_add(run, "config", cfg);
	json_add_str(run, "answer", "42");
	add_ev(evs, 0, ROOT, 0, "prompt", "SYSTEM 0", prompt_data("USER 0"));
	add_ev(evs, 1, ROOT, 1, "reply", "```repl\nr = llm_query_batched(qs)\n```", NULL);
	add_ev(evs, 2, ROOT, 1, "code", "r = llm_query_batched(qs)", NULL);
	add_ev(evs, 3, ROOT, 1, "call", NULL, sub_call("Q1 日本", "A1", 100, 10, 1500));
	add_ev(evs, 4, ROOT, 1, "call", NULL, sub_call("Q2", NULL, 0, 0, 20));
	add_ev(evs, 5, ROOT, 1, "call", NULL, call("sub", true, 7, 1, 0, 0)); /* no prompt */
	add_ev(evs, 6, ROOT, 1, "call", NULL, sub_call("Q3", "A3", 30, 3, 2));
	add_ev(evs, 7, ROOT, 1, "output", "['A1', 'Error: ...', 'x', 'A3']\n", NULL);
	add_ev(evs, 8, ROOT, 2, "reply", "```repl\nprint('before')\n1/0\n```", NULL);
	add_ev(evs, 9, ROOT, 2, "code", "print('before')\n1/0", NULL);
	json_add_num(od, "error_at", 7);
	add_ev(evs, 10, ROOT, 2, "output", out2, od);
	add_ev(evs, 11, ROOT, 3, "reply", "FINAL(42)", NULL);
	json_add(run, "events", evs);
	text = store_export_jsonl(run, &err);
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK_INT(n, 4);
	for (size_t i = 1; i < n; i++)
		check_iteration_shape(lines[i]);
	r = json_get(item(json_get(lines[1], "code_blocks"), 0), "result");
	calls = json_get(r, "rlm_calls");
	CHECK_INT(cJSON_GetArraySize(calls), 3);
	c = item(calls, 0);
	CHECK_STR(json_str(c, "root_model"), "sim-sub");
	CHECK_STR(json_str(c, "prompt"), "Q1 日本");
	CHECK_STR(json_str(c, "response"), "A1");
	CHECK_INT(json_int(c, "prompt_tokens", -1), 100);
	CHECK_INT(json_int(c, "completion_tokens", -1), 10);
	check_close(json_num(c, "execution_time", -1), 1.5);
	m = json_get(json_get(json_get(c, "usage_summary"), "model_usage_summaries"), "sim-sub");
	CHECK_INT(json_int(m, "total_calls", -1), 1);
	CHECK_INT(json_int(m, "total_input_tokens", -1), 100);
	CHECK_INT(json_int(m, "total_output_tokens", -1), 10);
	check_close(json_num(json_get(c, "usage_summary"), "total_cost", -1), 0.0001);
	CHECK(!json_get(c, "metadata")); /* a plain call has no trajectory */
	c = item(calls, 1);
	CHECK_STR(json_str(c, "prompt"), "Q2");
	CHECK_STR(json_str(c, "response"), "Error: the provider answered 500");
	CHECK_STR(json_str(item(calls, 2), "prompt"), "Q3");
	CHECK_STR(json_str(r, "stderr"), "");
	/* the block that raised: what it printed, then its error */
	r = json_get(item(json_get(lines[2], "code_blocks"), 0), "result");
	CHECK_STR(json_str(r, "stdout"), "before\n");
	CHECK_STR(json_str(r, "stderr"), out2 + 7);
	CHECK_INT(cJSON_GetArraySize(json_get(r, "rlm_calls")), 0);
	/* the history the root saw keeps the whole output */
	CHECK_CONTAINS(json_str(item(json_get(lines[3], "prompt"), 5), "content"),
		       "REPL output:\nbefore\nTraceback (most recent call last):\n");
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

TEST(jsonl_escapes_line_separators)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_run(), **lines;
	char *text = store_export_jsonl(run, &err);
	size_t n;
	CHECK_MSG(text, "%s", err.msg);
	/* U+2028 goes out as \u2028, never raw, and parses back. */
	CHECK(!strstr(text, "\xe2\x80\xa8"));
	CHECK(strstr(text, "\\u2028"));
	lines = parse_lines(text, &n);
	CHECK_STR(json_str(lines[2], "final_answer"), ANSWER);
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

/* A run killed in flight: a turn whose root call never answered, a child
 * that never ended, kinds this exporter does not know, no config. */
#define TOOL_OK                                                                                    \
	"{\"op\":\"call\",\"arguments\":{\"a\":2,\"b\":3},\"ok\":true,"                        \
	"\"result\":\"<b>The sum is 5</b>\",\"ms\":12}"
#define TOOL_BAD                                                                                   \
	"{\"op\":\"call\",\"arguments\":{\"path\":\"/x\"},\"ok\":false,\"kind\":\"policy\","       \
	"\"error\":\"refused: not read-only\",\"ms\":0}"

static cJSON *make_partial_run(void)
{
	cJSON *r = cJSON_CreateObject(), *evs = cJSON_CreateArray();
	json_add_str(r, "id", "20261123-181500-killed");
	json_add_num(r, "created_ms", CREATED_MS);
	json_add_str(r, "status", "interrupted");
	json_add_str(r, "question", QUESTION);
	json_add(r, "answer", cJSON_CreateNull());
	json_add(r, "result", cJSON_CreateNull());
	add_ev(evs, 0, ROOT, 0, "prompt", "SYSTEM 0", prompt_data("USER 0"));
	add_ev(evs, 1, ROOT, 1, "reply", REPLY2, NULL);
	add_ev(evs, 2, ROOT, 1, "code", CODE2A, NULL);
	add_ev(evs, 3, N1, 0, "child", CHILD_Q, NULL);
	/* host tool requests of the open block (docs/tools.md) */
	add_ev(evs, 3, ROOT, 1, "tool", "everything.get-sum",
	       json_parse(TOOL_OK, strlen(TOOL_OK)));
	add_ev(evs, 3, ROOT, 1, "tool", "fs.write_file", json_parse(TOOL_BAD, strlen(TOOL_BAD)));
	add_ev(evs, 4, N1, 1, "telemetry", "a kind from the future", NULL);
	add_ev(evs, 5, N1, 1, "reply", "thinking <b>hard</b>", NULL);
	add_ev(evs, 6, ROOT, 2, "call", NULL, call("root", false, 10, 0, 0, 0));
	json_add(r, "events", evs);
	return r;
}

TEST(jsonl_partial_run)
{
	struct rlm_err err = {0, ""};
	cJSON *run = make_partial_run(), **lines;
	const cJSON *c, *b;
	char *text = store_export_jsonl(run, &err);
	size_t n;
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK_INT(n, 2); /* turn 2 has no reply */
	check_iteration_shape(lines[1]);
	CHECK(cJSON_IsNull(json_get(lines[1], "final_answer")));
	b = item(json_get(lines[1], "code_blocks"), 0);
	/* The block never finished: no output, no time. */
	CHECK_STR(json_str(json_get(b, "result"), "stdout"), "");
	c = item(json_get(json_get(b, "result"), "rlm_calls"), 0);
	CHECK_STR(json_str(c, "prompt"), CHILD_Q);
	CHECK_STR(json_str(c, "response"), "");
	CHECK_STR(json_str(c, "root_model"), "unknown");
	CHECK(cJSON_IsNull(json_get(c, "prompt_tokens")));
	CHECK_INT(
	    cJSON_GetArraySize(json_get(json_get(c, "usage_summary"), "model_usage_summaries")), 0);
	CHECK_INT(cJSON_GetArraySize(json_get(json_get(c, "metadata"), "iterations")), 1);
	/* the block's host tool requests, as recorded */
	c = json_get(json_get(b, "result"), "tool_calls");
	CHECK_INT(cJSON_GetArraySize(c), 2);
	CHECK_STR(json_str(item(c, 0), "result"), "<b>The sum is 5</b>");
	CHECK_STR(json_str(item(c, 1), "kind"), "policy");
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

TEST(jsonl_run_without_events)
{
	struct rlm_err err = {0, ""};
	cJSON *run = cJSON_CreateObject(), **lines;
	char *text;
	size_t n;
	json_add(run, "events", cJSON_CreateArray());
	text = store_export_jsonl(run, &err);
	CHECK_MSG(text, "%s", err.msg);
	lines = parse_lines(text, &n);
	CHECK_INT(n, 1);
	CHECK_STR(json_str(lines[0], "type"), "metadata");
	CHECK(cJSON_IsNull(json_get(lines[0], "timestamp"))); /* no created_ms */
	free_lines(lines, n);
	free(text);
	cJSON_Delete(run);
}

/* ---- HTML ---- */

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The run's JSON as the page holds it, parsed. */
static cJSON *page_run(const char *html)
{
	static const char open[] = "<script type=\"application/json\" id=\"run\">";
	const char *a = strstr(html, open), *z;
	CHECK_MSG(a, "no run script element in the page");
	a += strlen(open);
	z = strstr(a, "</script>");
	CHECK(z);
	return json_parse(a, (size_t)(z - a));
}

TEST(html_escapes_hostile_text)
{
	struct rlm_err err = {0, ""};
	const struct embedded_file *tpl = embed_find("viewer.html");
	cJSON *run = make_run(), *back;
	char *html = store_export_html(run, &err);
	CHECK_MSG(html, "%s", err.msg);
	CHECK(tpl);
	CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
	CHECK(!strstr(html, "</script><script>alert"));
	CHECK(!strstr(html, "<script>alert"));
	CHECK_CONTAINS(html,
		       "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e");
	CHECK(!strstr(html, "\xe2\x80\xa8"));
	CHECK_CONTAINS(html, "\\u2028");
	/* Only the template's own script elements end. */
	CHECK_INT(count(html, "</script"), count(tpl->data, "</script"));
	CHECK_INT(count(html, "<!--"), count(tpl->data, "<!--"));
	CHECK(!strstr(html, "@RUN_JSON@"));
	CHECK(!strstr(html, SECRET)); /* a credential in the config stays out */
	CHECK_CONTAINS(html, "\"sub_model\":\"sim-sub\"");
	/* No network: nothing is fetched from anywhere. */
	CHECK(!strstr(tpl->data, "http://") && !strstr(tpl->data, "https://"));
	CHECK(!strstr(tpl->data, "innerHTML"));
	back = page_run(html);
	CHECK_MSG(back, "the page's run JSON does not parse");
	CHECK_STR(json_str(back, "answer"), ANSWER);
	CHECK_INT(cJSON_GetArraySize(json_get(back, "events")),
		  cJSON_GetArraySize(json_get(run, "events")));
	cJSON_Delete(back);
	free(html);
	cJSON_Delete(run);
}

/* A note written by an older version (or by hand) with an API key in
 * any spelling, a secret-named variable and a base URL with a password:
 * store_run_public() shows none of them and keeps the rest, and the run
 * itself is not changed. */
TEST(public_run_has_no_credentials)
{
	static const char note[] =
	    "{\"argv\":[\"-c\",\"/x\",\"--api-key\",\"" SECRET "\",\"--api\",\"" SECRET
	    "\",\"--a=" SECRET "\",\"--api-key=" SECRET "\",\"--base-url\","
	    "\"http://me:" SECRET "@h:1/v1\",\"--apis\",\"--json\"],"
	    "\"env\":{\"OPENAI_API_KEY\":\"" SECRET "\",\"OPENAI_BASE_URL\":"
	    "\"http://a:" SECRET "@h1/v1, http://h2/v1\",\"RLM_SIM\":\"seed=3\"},"
	    "\"cwd\":\"/w\"}";
	cJSON *run = make_run(), *view;
	char *text, *html;
	struct rlm_err err = {0, ""};
	json_add(run, "note", json_parse(note, strlen(note)));
	view = store_run_public(run);
	text = cJSON_PrintUnformatted(view);
	CHECK_MSG(!strstr(text, "SECRET"), "%s", text);
	CHECK_CONTAINS(text, "\"argv\":[\"-c\",\"/x\",\"--base-url\",\"http://h:1/v1\","
			     "\"--apis\",\"--json\"]");
	CHECK_CONTAINS(text, "\"env\":{\"OPENAI_BASE_URL\":\"http://h1/v1, http://h2/v1\","
			     "\"RLM_SIM\":\"seed=3\"}");
	CHECK_CONTAINS(text, "\"cwd\":\"/w\"");
	CHECK_CONTAINS(text, "\"question\":");
	CHECK_INT(cJSON_GetArraySize(json_get(view, "events")),
		  cJSON_GetArraySize(json_get(run, "events")));
	free(text);
	cJSON_Delete(view);
	CHECK_STR(json_str(json_get(run, "config"), "api_key"), SECRET); /* untouched */
	html = store_export_html(run, &err);
	CHECK_MSG(html, "%s", err.msg);
	CHECK(!strstr(html, "SECRET"));
	free(html);
	cJSON_Delete(run);
}

/* ---- malformed runs ---- */

static const struct {
	const char *name;
	const char *json; /* NULL: a NULL run */
	const char *msg;
} bad_runs[] = {
    {"null", NULL, "not a JSON object"},
    {"array", "[]", "not a JSON object"},
    {"no events", "{\"id\":\"r1\"}", "malformed run 'r1': no 'events' array"},
    {"events not array", "{\"events\":{}}", "no 'events' array"},
    {"bad created", "{\"created_ms\":\"yesterday\",\"events\":[]}", "bad 'created_ms'"},
    {"event not object", "{\"id\":\"r1\",\"events\":[1]}",
     "malformed run 'r1': event 0: not an object"},
    {"no kind", "{\"events\":[{\"node\":0,\"t_ns\":0}]}", "'kind' is missing"},
    {"kind not string", "{\"events\":[{\"kind\":7,\"node\":0,\"t_ns\":0}]}", "'kind' is missing"},
    {"no node", "{\"events\":[{\"kind\":\"reply\",\"t_ns\":0}]}", "'node' is missing"},
    {"negative node", "{\"events\":[{\"kind\":\"reply\",\"node\":-1,\"t_ns\":0}]}", "'node'"},
    {"fractional node", "{\"events\":[{\"kind\":\"reply\",\"node\":1.5,\"t_ns\":0}]}", "'node'"},
    {"huge node", "{\"events\":[{\"kind\":\"reply\",\"node\":1e12,\"t_ns\":0}]}", "'node'"},
    {"node as string", "{\"events\":[{\"kind\":\"reply\",\"node\":\"0\",\"t_ns\":0}]}", "'node'"},
    {"no time", "{\"events\":[{\"kind\":\"reply\",\"node\":0}]}", "'t_ns' is missing"},
    {"bad iteration",
     "{\"events\":[{\"kind\":\"reply\",\"node\":0,\"t_ns\":0,\"iteration\":\"1\"}]}",
     "'iteration'"},
    {"text not string", "{\"events\":[{\"kind\":\"reply\",\"node\":0,\"t_ns\":0,\"text\":5}]}",
     "'text' is not a string"},
    {"data not object", "{\"events\":[{\"kind\":\"call\",\"node\":0,\"t_ns\":0,\"data\":\"x\"}]}",
     "'data' is not an object"},
    {"unknown parent", "{\"events\":[{\"kind\":\"child\",\"node\":3,\"parent\":7,\"t_ns\":0}]}",
     "event 0: node 3 starts under unknown node 7"},
    {"no parent", "{\"events\":[{\"kind\":\"child\",\"node\":3,\"t_ns\":0}]}",
     "node 3 starts under unknown node -1"},
    {"own parent", "{\"events\":[{\"kind\":\"child\",\"node\":2,\"parent\":2,\"t_ns\":0}]}",
     "unknown node 2"},
    {"bad second event",
     "{\"events\":[{\"kind\":\"prompt\",\"node\":0,\"t_ns\":0},{\"kind\":\"reply\",\"node\":0}]}",
     "event 1: 't_ns'"},
};

/* A chain of nodes deeper than any solve makes (each the child of the
 * one before): refused, not recursed into until the stack runs out. */
TEST(malformed_deep_chain)
{
	struct rlm_err err = {0, ""};
	cJSON *run = cJSON_CreateObject(), *evs = cJSON_CreateArray();
	char *text;
	for (int i = 1; i <= 1000; i++) {
		struct who w = {i, i - 1, i};
		add_ev(evs, i, w, 0, "child", "deeper", NULL);
	}
	json_add(run, "events", evs);
	text = store_export_jsonl(run, &err);
	CHECK(!text);
	CHECK_INT(err.code, RLM_EPARSE);
	CHECK_CONTAINS(err.msg, "event 64: node 65 is nested more than 64 deep");
	CHECK(!store_export_html(run, &err));
	cJSON_Delete(run);
}

TEST(malformed_runs_are_errors)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_runs); i++) {
		struct rlm_err e1 = {0, ""}, e2 = {0, ""};
		cJSON *run = bad_runs[i].json
				 ? json_parse(bad_runs[i].json, strlen(bad_runs[i].json))
				 : NULL;
		char *a, *b;
		CHECK_MSG(!bad_runs[i].json || run, "%s: test JSON does not parse",
			  bad_runs[i].name);
		a = store_export_jsonl(run, &e1);
		b = store_export_html(run, &e2);
		CHECK_MSG(!a && !b, "%s: exported", bad_runs[i].name);
		CHECK_MSG(e1.code == RLM_EPARSE && e2.code == RLM_EPARSE, "%s: codes %d %d",
			  bad_runs[i].name, e1.code, e2.code);
		CHECK_MSG(strstr(e1.msg, bad_runs[i].msg), "%s: \"%s\" lacks \"%s\"",
			  bad_runs[i].name, e1.msg, bad_runs[i].msg);
		CHECK_STR(e1.msg, e2.msg);
		cJSON_Delete(run);
	}
}

/* ---- the page in a browser ---- */

/* CHROMIUM overrides where it is; scripts/deps.sh installs the package. */
static const char *chromium_bin(void)
{
	const char *b = getenv("CHROMIUM");
	b = b && *b ? b : "/usr/bin/chromium";
	CHECK_MSG(access(b, X_OK) == 0,
		  "chromium is not installed at %s: run `make deps` (scripts/deps.sh installs it) "
		  "or set CHROMIUM to its path",
		  b);
	return b;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

#define CHROMIUM_TIMEOUT 60

/* Open html in headless Chromium with a fresh profile and return the DOM
 * after its scripts ran (o->out) and Chromium's log (o->err). */
static void browse(const char *html, struct proc_out *o)
{
	char dir[] = "/tmp/rlm-export.XXXXXX", page[64], profile[64], url[96], udd[96];
	const char *bin = chromium_bin();
	const char *argv[] = {bin,
			      "--headless",
			      "--no-sandbox",
			      "--disable-gpu",
			      "--enable-logging=stderr",
			      "--v=0",
			      udd,
			      "--dump-dom",
			      url,
			      NULL};
	FILE *f;
	int64_t t0;
	double secs;
	bool written;
	int rc = -1;
	CHECK(mkdtemp(dir));
	snprintf(page, sizeof(page), "%s/run.html", dir);
	snprintf(profile, sizeof(profile), "%s/profile", dir);
	snprintf(url, sizeof(url), "file://%s", page);
	snprintf(udd, sizeof(udd), "--user-data-dir=%s", profile);
	f = fopen(page, "w");
	written = f && fputs(html, f) >= 0;
	written = f && fclose(f) == 0 && written;
	t0 = time_now_ns();
	if (written)
		rc = proc_run(argv, NULL, NULL, CHROMIUM_TIMEOUT, o);
	secs = (double)(time_now_ns() - t0) / 1e9;
	/* The page and the profile go whatever happened. */
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	CHECK_MSG(written, "cannot write '%s'", page);
	CHECK_INT(rc, 0);
	printf("  (chromium: %.2f s, exit %d)\n", secs, o->status);
	CHECK_MSG(!(o->status == 128 + SIGKILL && secs >= CHROMIUM_TIMEOUT - 1),
		  "chromium timed out after %d s and was killed", CHROMIUM_TIMEOUT);
	CHECK_MSG(o->status == 0, "chromium exited with %d: %.2000s", o->status, o->err);
}

/* Lines of Chromium's log where the page's console said something, or an
 * exception went uncaught; NULL when there are none. */
static char *console_lines(const char *log)
{
	struct buf b;
	buf_init(&b, 0);
	for (const char *p = log; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, len);
		if (strstr(line, ":CONSOLE") || strstr(line, "Uncaught"))
			buf_printf(&b, "%s\n", line);
		free(line);
		p += len + (nl ? 1 : 0);
	}
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static void check_page_clean(const struct proc_out *o)
{
	char *bad = console_lines(o->err);
	CHECK_MSG(!bad, "the page logged to the console:\n%s", bad);
	CHECK_MSG(strstr(o->out, "<div id=\"errors\" hidden=\"\"></div>"),
		  "the page reported errors: %.1000s",
		  strstr(o->out, "id=\"errors\"") ? strstr(o->out, "id=\"errors\"") : o->out);
}

TEST(html_renders_in_chromium)
{
	struct rlm_err err = {0, ""};
	struct proc_out o;
	cJSON *run = make_run();
	char *html = store_export_html(run, &err);
	CHECK_MSG(html, "%s", err.msg);
	browse(html, &o);
	check_page_clean(&o);
	/* One element per node, the tree nested: 0 > 1 > 2. */
	CHECK_INT(count(o.out, "data-node=\"0\""), 1);
	CHECK_INT(count(o.out, "data-node=\"1\""), 1);
	CHECK_INT(count(o.out, "data-node=\"2\""), 1);
	CHECK(strstr(o.out, "data-node=\"0\"") < strstr(o.out, "data-node=\"1\""));
	CHECK(strstr(o.out, "data-node=\"1\"") < strstr(o.out, "data-node=\"2\""));
	CHECK_CONTAINS(o.out, QUESTION);
	CHECK_CONTAINS(o.out, CHILD_Q);
	CHECK_CONTAINS(o.out, "<pre class=\"code\">" CODE1 "</pre>");
	CHECK_CONTAINS(o.out, "seccomp=on landlock=abi7 userns=on");
	CHECK_CONTAINS(o.out, "20261122-101010-aaaaaa"); /* resumed_from */
	CHECK_CONTAINS(o.out, "$0.0123");
	/* The answer is text: escaped in the DOM, never an element. */
	CHECK_CONTAINS(o.out, "Paris &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; and");
	CHECK(!strstr(o.out, "<script>alert"));
	CHECK_CONTAINS(o.out, "cached"); /* the cached sub-call */
	/* the sub-calls' prompts and replies, folded under their block */
	CHECK_CONTAINS(o.out, "<summary>sub-call 1: prompt (160 chars)</summary><pre>Q-before</pre>");
	CHECK_CONTAINS(o.out, "<summary>sub-call 1: reply</summary><pre>A-before</pre>");
	CHECK_CONTAINS(o.out, "<summary>sub-call 2: error</summary><pre>the provider answered 500</pre>");
	CHECK(!strstr(o.out, SECRET));
	proc_out_release(&o);
	free(html);
	cJSON_Delete(run);
}

TEST(html_partial_run_in_chromium)
{
	struct rlm_err err = {0, ""};
	struct proc_out o;
	cJSON *run = make_partial_run();
	char *html = store_export_html(run, &err);
	CHECK_MSG(html, "%s", err.msg);
	browse(html, &o);
	check_page_clean(&o);
	CHECK_INT(count(o.out, "data-node=\"1\""), 1);
	CHECK_CONTAINS(o.out, "no end recorded");
	CHECK_CONTAINS(o.out, "<h3>turn 2<"); /* its root call, never answered */
	CHECK_CONTAINS(o.out, "a kind from the future");
	CHECK_CONTAINS(o.out, "thinking &lt;b&gt;hard&lt;/b&gt;");
	/* the block's tool requests: a table, their text escaped */
	CHECK_CONTAINS(o.out, "<div class=\"label\">tools</div>");
	CHECK_CONTAINS(o.out, "<td>everything.get-sum</td>");
	CHECK_CONTAINS(o.out, "&lt;b&gt;The sum is 5&lt;/b&gt;");
	CHECK_CONTAINS(o.out, "policy: refused: not read-only");
	CHECK(!strstr(o.out, "<b>The sum"));
	proc_out_release(&o);
	free(html);
	cJSON_Delete(run);
}

/* The checks above would catch a broken page: errors thrown while
 * building it land in #errors, uncaught ones in Chromium's log. */
TEST(html_errors_are_caught_in_chromium)
{
	struct rlm_err err = {0, ""};
	struct proc_out o;
	cJSON *run = cJSON_CreateObject();
	char *html, *broken, *at, *log;
	json_add(run, "events", cJSON_CreateArray());
	html = store_export_html(run, &err);
	CHECK_MSG(html, "%s", err.msg);
	/* A run the C side would refuse, and a script that throws. */
	at = strstr(html, "{\"events\":[]}");
	CHECK(at);
	*at = '\0';
	broken = xasprintf("%s{\"events\":[{\"kind\":\"reply\"}]}%s", html,
			   at + strlen("{\"events\":[]}"));
	at = strstr(broken, "</body>");
	CHECK(at);
	*at = '\0';
	free(html);
	html = xasprintf("%s<script>null.boom();</script></body>\n</html>\n", broken);
	browse(html, &o);
	CHECK_CONTAINS(o.out, "cannot show the run: event 0 has no node number");
	CHECK_CONTAINS(o.out, "error: Uncaught TypeError");
	log = console_lines(o.err);
	CHECK_MSG(log, "no console line in: %.2000s", o.err);
	CHECK_CONTAINS(log, "Uncaught TypeError");
	free(log);
	proc_out_release(&o);
	free(broken);
	free(html);
	cJSON_Delete(run);
}
