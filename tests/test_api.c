/* SPDX-License-Identifier: MIT */
/* tests/test_api.c -- librlm's JSON API (api/api.h): clients, contexts of
 * every kind, options and their errors, events, usage by model, host tools,
 * cancel, sessions, runs, and nothing left behind after many solves. On
 * the in-process simulator, scripted models on fake servers
 * (tests/fakesrv.h) and real sandboxed workers. */
#include "loopenv.h"
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
	char *out =
	    rlm_api_solve(a, q, ctx, ctx ? strlen(ctx) : 0, kind, opts, NULL, NULL, NULL, &err);
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

/* ---- scripted models: a fake root (and sub-model) on loopback ---- */

struct fake {
	struct fakesrv *root, *sub;
	char *config;
};

static void fake_says(struct fakesrv *s, const char *content, long in, long out)
{
	char *body = fakesrv_chat_body(content, "stop", in, out);
	struct fake_reply r = {200, NULL, body, FAKE_NORMAL, 0};
	fakesrv_push(s, &r);
	free(body);
}

/* A root model "root-m" on a fake server; with_sub: a sub-model "sub-m" on
 * another, whose every reply is "hi" (7 tokens in, 3 out); else the
 * simulator is not involved and sub-calls go to the root's server. */
static void fake_init(struct fake *f, bool with_sub, const char *more)
{
	char *body;
	struct fake_reply def;
	memset(f, 0, sizeof(*f));
	f->root = fakesrv_start();
	CHECK(f->root);
	if (with_sub) {
		f->sub = fakesrv_start();
		CHECK(f->sub);
		body = fakesrv_chat_body("hi", "stop", 7, 3);
		def = (struct fake_reply){200, NULL, body, FAKE_NORMAL, 0};
		fakesrv_set_default(f->sub, &def);
		free(body);
		f->config = xasprintf(
		    "{\"provider\": \"openai\", \"model\": \"root-m\", "
		    "\"base_url\": \"%s/v1\", \"api_key\": \"k\", \"env\": false, "
		    "\"max_retries\": 0, \"sub_provider\": \"openai\", "
		    "\"sub_model\": \"sub-m\", \"sub_base_url\": \"%s/v1\", "
		    "\"sub_api_key\": \"k2\"%s%s}",
		    fakesrv_url(f->root), fakesrv_url(f->sub), more ? ", " : "", more ? more : "");
	} else {
		f->config =
		    xasprintf("{\"provider\": \"openai\", \"model\": \"root-m\", "
			      "\"base_url\": \"%s/v1\", \"api_key\": \"k\", \"env\": false, "
			      "\"max_retries\": 0%s%s}",
			      fakesrv_url(f->root), more ? ", " : "", more ? more : "");
	}
}

static void fake_free(struct fake *f)
{
	fakesrv_stop(f->root);
	fakesrv_stop(f->sub);
	free(f->config);
}

/* The last message of the root's request i (what the model was shown). */
static char *shown(struct fake *f, size_t i)
{
	return message(f->root, i, -1, NULL);
}

/* ---- contexts ---- */

TEST(docs_context_is_one_document_each)
{
	static const char ctx[] = "[\"first: about cats\", \"second: the code is 77\", \"third\"]";
	struct fake f;
	struct rlm_api *a;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	fake_says(f.root,
		  "```repl\nanswer['content'] = type(context).__name__ + ':' + "
		  "str(len(context)) + ':' + context[1]\nanswer['ready'] = True\n```",
		  100, 20);
	j = solve_json(a, "What is the code?", ctx, strlen(ctx), "docs", NULL);
	CHECK_STR(answer_of(j), "list:3:second: the code is 77");
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(json_dict_context_is_a_python_dict)
{
	static const char ctx[] = "{\"name\": \"Ada\", \"langs\": [\"c\", \"py\"], \"born\": 1815}";
	struct fake f;
	struct rlm_api *a;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	fake_says(f.root,
		  "```repl\nanswer['content'] = '%s:%s:%d:%d' % (type(context).__name__, "
		  "context['name'], len(context['langs']), context['born'] + 1)\n"
		  "answer['ready'] = True\n```",
		  100, 20);
	j = solve_json(a, "Who?", ctx, strlen(ctx), "json", NULL);
	CHECK_STR(answer_of(j), "dict:Ada:2:1816");
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(json_list_of_objects_context_is_a_list_of_dicts)
{
	static const char ctx[] =
	    "[{\"id\": \"r1\", \"text\": \"red\", \"n\": 1}, {\"id\": \"r2\", \"text\": \"blue\", "
	    "\"n\": 2}, {\"id\": \"r3\", \"text\": \"green\", \"n\": 3}]";
	struct fake f;
	struct rlm_api *a;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	fake_says(f.root,
		  "```repl\nanswer['content'] = '%s %s %d %s' % (type(context).__name__, "
		  "type(context[0]).__name__, sum(d['n'] for d in context), context[2]['id'])\n"
		  "answer['ready'] = True\n```",
		  100, 20);
	j = solve_json(a, "Sum?", ctx, strlen(ctx), "json", NULL);
	CHECK_STR(answer_of(j), "list dict 6 r3");
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(file_context_is_loaded_as_rlm_solve_loads_it)
{
	/* a real file of another shape than our generator's */
	static const char path[] = "/usr/include/errno.h";
	struct fake f;
	struct rlm_api *a;
	cJSON *j;
	if (access(path, R_OK))
		SKIP("no %s", path);
	fake_init(&f, false, NULL);
	a = client(f.config);
	fake_says(f.root,
		  "```repl\nanswer['content'] = str('errno' in context) + ' ' + "
		  "type(context).__name__\nanswer['ready'] = True\n```",
		  100, 20);
	j = solve_json(a, "Does it mention errno?", path, strlen(path), "file", NULL);
	CHECK_STR(answer_of(j), "True str");
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(question_null_is_at_the_end_of_the_context)
{
	static const char ctx[] = "Some notes.\n\nWhat colour is the sky in the notes?";
	struct fake f;
	struct rlm_api *a;
	cJSON *j;
	char *m;
	fake_init(&f, false, NULL);
	a = client(f.config);
	fake_says(f.root, "```repl\nFINAL('blue')\n```", 100, 20);
	j = solve_json(a, NULL, ctx, strlen(ctx), NULL, NULL);
	CHECK_STR(answer_of(j), "blue");
	m = message(f.root, 0, 1, NULL);
	CHECK_CONTAINS(m, "Read the end of `context` first");
	free(m);
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- errors ---- */

TEST(config_errors_name_the_member)
{
	static const struct {
		const char *config, *want;
	} cases[] = {
	    {"{\"model\": ", "config: not valid JSON at byte 8"},
	    {"{\"model\": \"x\"} 7", "config: not valid JSON at byte 15"},
	    {"[1, 2]", "config: must be a JSON object"},
	    {"{\"modle\": \"x\"}", "config: unknown member 'modle'"},
	    {"{\"sub_modle\": \"x\"}",
	     "config: unknown member 'sub_modle' (did you mean 'sub_model'?)"},
	    {"{\"timeout\": \"fast\"}", "config: 'timeout' must be seconds > 0"},
	    {"{\"concurrency\": 1.5}", "config: 'concurrency' must be an integer in 1..4096"},
	    {"{\"env\": 1}", "config: 'env' must be true or false"},
	    {"{\"extra\": [1]}", "config: 'extra' must be a JSON object"},
	    {"{\"cache\": 3}", "config: 'cache' must be a path or true or false"},
	    {"{\"model\": \"a\", \"model\": \"b\"}", "config: duplicate key \"model\""},
	    {"{\"provider\": \"nosuch\", \"env\": false}", "config"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *err = NULL;
		struct rlm_api *a = rlm_api_new(cases[i].config, &err);
		CHECK_MSG(!a, "config %s was taken", cases[i].config);
		CHECK_MSG(err && strstr(err, cases[i].want), "config %s: got '%s', want '%s'",
			  cases[i].config, err ? err : "(null)", cases[i].want);
		rlm_api_free(err);
	}
}

TEST(option_errors_name_the_member_and_what_it_wants)
{
	static const struct {
		const char *opts, *want;
	} cases[] = {
	    {"{\"max_depth\": 0}", "options: 'max_depth' must be an integer in 1..16"},
	    {"{\"timeout\": -1}", "options: 'timeout' must be seconds > 0"},
	    {"{\"compaction\": \"yes\"}", "options: 'compaction' must be true or false"},
	    {"{\"compaction_threshold\": 1.5}",
	     "options: 'compaction_threshold' must be a fraction"},
	    {"{\"strategy\": \"dfs\"}", "options: 'strategy' must be \"repl\" or \"tree\""},
	    {"{\"system_prompt\": 7}", "options: 'system_prompt' must be a string"},
	    {"{\"schema\": \"object\"}", "options: 'schema' must be a JSON object"},
	    {"{\"python\": \"/usr/bin/no-such-python\"}",
	     "options: 'python' '/usr/bin/no-such-python' is not an executable file"},
	    {"{\"exprot\": true}", "options: unknown member 'exprot'"},
	    {"not json", "options: not valid JSON at byte 0"},
	};
	struct rlm_api *a = client(SIM);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *e = solve_err(a, "q", "text", "text", cases[i].opts);
		CHECK_MSG(strstr(e, cases[i].want), "options %s: got '%s', want '%s'",
			  cases[i].opts, e, cases[i].want);
		rlm_api_free(e);
	}
	rlm_api_close(a);
}

TEST(every_option_of_the_contract_is_accepted)
{
	/* Their effect is rlm_solve's (tested there): here, that each is a
	 * member the parser takes. */
	static const char opts[] =
	    "{\"max_depth\": 2, \"max_iterations\": 5, \"max_errors\": 3, \"max_nodes\": 2, "
	    "\"timeout\": 60, \"max_tokens\": 1000000, \"max_cost\": 5, \"max_calls\": 100, "
	    "\"max_sub_calls\": 50, \"exec_timeout\": 30, \"output_limit\": 5000, "
	    "\"max_answer\": 65536, \"compaction\": true, \"compaction_threshold\": 0.8, "
	    "\"system_prompt\": null, \"system_extra\": \"Be brief.\", \"sub_system_extra\": "
	    "\"x\", "
	    "\"setup_code\": \"y = 1\", \"sub_setup_code\": \"z = 2\", \"schema\": null, "
	    "\"strategy\": \"repl\", \"python\": \"/usr/bin/python3\", \"refresh\": false, "
	    "\"trajectory\": true, \"detail_events\": false, \"export\": false, "
	    "\"max_tool_calls\": 10, \"tool_timeout\": 5}";
	struct rlm_api__opts o;
	struct rlm_err e = {0, ""};
	CHECK_MSG(rlm_api__opts_parse(opts, &o, &e) == 0, "%s", e.msg);
	CHECK_INT(o.ro.max_iterations, 5);
	CHECK_INT(o.ro.timeout_ns, 60 * 1000000000LL);
	CHECK(o.ro.trajectory);
	CHECK_STR(o.ro.system_extra, "Be brief.");
	CHECK_STR(o.ro.setup_code, "y = 1");
	CHECK(o.ro.system_prompt == NULL);
	rlm_api__opts_release(&o);
}

TEST(context_errors_say_what_is_wrong)
{
	struct rlm_api *a = client(SIM);
	char *missing = xasprintf("%s/missing.txt", harness_tmpdir());
	char *e = solve_err(a, "q", missing, "file", NULL);
	CHECK_CONTAINS(e, "context: ");
	CHECK_CONTAINS(e, "missing.txt");
	rlm_api_free(e);
	e = solve_err(a, "q", "{\"a\": ", "json", NULL);
	CHECK_CONTAINS(e, "context: ");
	CHECK_CONTAINS(e, "byte");
	rlm_api_free(e);
	e = solve_err(a, "q", "[\"a\", 2]", "docs", NULL);
	CHECK_STR(e, "context: \"docs\" item 1 is not a string");
	rlm_api_free(e);
	e = solve_err(a, "q", "{}", "docs", NULL);
	CHECK_STR(e, "context: \"docs\" must be a JSON array of strings");
	rlm_api_free(e);
	e = solve_err(a, "q", "x", "pdf", NULL);
	CHECK_STR(e, "context: unknown kind 'pdf' (known: text, docs, json, file)");
	rlm_api_free(e);
	e = solve_err(a, "q", "bad \xff byte", "text", NULL);
	CHECK_STR(e, "context: not valid UTF-8 at byte 4");
	rlm_api_free(e);
	{
		char *out = rlm_api_solve(a, "q", "ab\0cd", 5, "text", NULL, NULL, NULL, NULL, &e);
		CHECK(!out);
		CHECK_STR(e, "context: a NUL byte at byte 2");
		rlm_api_free(e);
	}
	e = solve_err(a, "", "x", "text", NULL);
	CHECK_CONTAINS(e, "question: empty");
	rlm_api_free(e);
	free(missing);
	rlm_api_close(a);
}

TEST(a_bad_schema_is_refused_before_any_call)
{
	struct fake f;
	struct rlm_api *a;
	char *e;
	if (access("/usr/lib/python3/dist-packages/jsonschema", F_OK))
		SKIP("python3-jsonschema is not installed");
	fake_init(&f, false, NULL);
	a = client(f.config);
	e = solve_err(a, "q", "text", "text", "{\"schema\": {\"type\": \"no-such-type\"}}");
	CHECK_CONTAINS(e, "options: 'schema'");
	CHECK_INT(fakesrv_count(f.root), 0);
	rlm_api_free(e);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- events and usage ---- */

struct evlog {
	pthread_mutex_t mu;
	cJSON *list; /* every event, parsed */
	int bad;     /* events that were not JSON objects */
};

static void on_ev(void *arg, const char *json)
{
	struct evlog *l = arg;
	cJSON *j = json_parse(json, strlen(json));
	pthread_mutex_lock(&l->mu);
	if (cJSON_IsObject(j))
		cJSON_AddItemToArray(l->list, j);
	else {
		l->bad++;
		cJSON_Delete(j);
	}
	pthread_mutex_unlock(&l->mu);
}

static bool has_kind(const cJSON *list, const char *kind)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, list)
	{
		if (!strcmp(json_str(e, "kind"), kind))
			return true;
	}
	return false;
}

TEST(events_are_json_and_come_in_order)
{
	static const char ctx[] = "alpha\nThe answer to the riddle is 'kettle'.\nomega\n";
	struct evlog l = {PTHREAD_MUTEX_INITIALIZER, cJSON_CreateArray(), 0};
	struct rlm_api *a = client(SIM);
	char *err = NULL, *out;
	const cJSON *e;
	double last_ms = -1;
	int last_it = 0, n = 0;
	out = rlm_api_solve(a, "What is the answer to the riddle?", ctx, strlen(ctx), "text", NULL,
			    NULL, on_ev, &l, &err);
	CHECK_MSG(out, "%s", err);
	CHECK_INT(l.bad, 0);
	CHECK(cJSON_GetArraySize(l.list) >= 3);
	cJSON_ArrayForEach(e, l.list)
	{
		const char *keys[] = {"kind",	    "node", "depth", "iteration",
				      "elapsed_ms", "text", "data"};
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			CHECK_MSG(json_get(e, keys[i]), "event %d has no '%s'", n, keys[i]);
		CHECK_MSG(json_num(e, "elapsed_ms", -1) >= last_ms, "event %d goes back in time",
			  n);
		CHECK_MSG(json_int(e, "iteration", -1) >= last_it, "event %d: iteration goes back",
			  n);
		last_ms = json_num(e, "elapsed_ms", -1);
		last_it = (int)json_int(e, "iteration", -1);
		n++;
	}
	/* a reply comes before its code, the code before its output */
	CHECK_STR(json_str(cJSON_GetArrayItem(l.list, 0), "kind"), "sandbox");
	CHECK(has_kind(l.list, "reply") && has_kind(l.list, "code") && has_kind(l.list, "output"));
	/* not asked for: no detail events, though the API counts calls */
	CHECK(!has_kind(l.list, "call"));
	rlm_api_free(out);

	cJSON_Delete(l.list);
	l.list = cJSON_CreateArray();
	out = rlm_api_solve(a, "What is the answer to the riddle?", ctx, strlen(ctx), "text",
			    "{\"detail_events\": true}", NULL, on_ev, &l, &err);
	CHECK_MSG(out, "%s", err);
	CHECK(has_kind(l.list, "call"));
	cJSON_ArrayForEach(e, l.list)
	{
		if (!strcmp(json_str(e, "kind"), "call"))
			CHECK(cJSON_IsObject(json_get(e, "data")));
	}
	rlm_api_free(out);
	cJSON_Delete(l.list);
	rlm_api_close(a);
}

TEST(usage_by_model_counts_root_and_sub_models_apart)
{
	struct fake f;
	struct rlm_api *a;
	const cJSON *u, *r, *s;
	cJSON *j;
	char *more, *p;
	fake_init(&f, false, NULL);
	/* one server, two model names: every reply that is not scripted (the
	 * sub-calls') is "hi", 7 tokens in, 3 out */
	p = fakesrv_chat_body("hi", "stop", 7, 3);
	fakesrv_set_default(f.root, &(struct fake_reply){200, NULL, p, FAKE_NORMAL, 0});
	free(p);
	more = xasprintf("{\"provider\": \"openai\", \"model\": \"root-m\", \"sub_model\": "
			 "\"sub-m\", \"base_url\": \"%s/v1\", \"api_key\": \"k\", \"env\": false, "
			 "\"max_retries\": 0}",
			 fakesrv_url(f.root));
	a = client(more);
	fake_says(f.root,
		  "```repl\nx = llm_query_batched(['one', 'two'])\nprint(x)\n"
		  "FINAL(llm_query('three'))\n```",
		  100, 20);
	j = solve_json(a, "q?", "ctx", 3, "text", NULL);
	CHECK_MSG(answer_of(j) && !strcmp(answer_of(j), "hi"), "%s", json_print(j));
	u = json_get(j, "usage_by_model");
	r = json_get(u, "root-m");
	s = json_get(u, "sub-m");
	CHECK_MSG(r && s, "usage_by_model: %s", json_print(u));
	CHECK_INT(json_int(r, "calls", -1), 1);
	CHECK_INT(json_int(r, "input_tokens", -1), 100);
	CHECK_INT(json_int(r, "output_tokens", -1), 20);
	CHECK_INT(json_int(s, "calls", -1), 3);
	CHECK_INT(json_int(s, "input_tokens", -1), 21);
	CHECK_INT(json_int(s, "output_tokens", -1), 9);
	CHECK_INT(cJSON_GetArraySize(u), 2);
	/* the total agrees with the result's own count */
	CHECK_INT(json_int(json_get(json_get(j, "result"), "calls"), "total", -1), 4);
	cJSON_Delete(j);
	free(more);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(a_failed_solve_says_why_with_a_code)
{
	struct fake f;
	struct rlm_api *a;
	cJSON *j, *e;
	fake_init(&f, false, NULL);
	fakesrv_set_default(f.root, &(struct fake_reply){500, NULL, "{}", FAKE_NORMAL, 0});
	a = client(f.config);
	j = solve_json(a, "q?", "ctx", 3, "text", NULL);
	CHECK(cJSON_IsFalse(json_get(j, "ok")));
	e = json_get(j, "error");
	CHECK_MSG(json_str(e, "code") && !strncmp(json_str(e, "code"), "RLM_E", 5), "%s",
		  json_print(e));
	CHECK_STR(json_str(e, "code"), "RLM_EPROVIDER");
	CHECK_CONTAINS(json_str(e, "message"), "the root model failed");
	CHECK_STR(json_str(json_get(j, "result"), "stop"), "error");
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- host tools ---- */

static void tool_add(void *arg, const char *args_json, struct rlm_api_reply *r)
{
	cJSON *j = json_parse(args_json, strlen(args_json));
	char out[64];
	atomic_int *calls = arg;
	atomic_fetch_add(calls, 1);
	snprintf(out, sizeof(out), "{\"sum\": %lld}",
		 (long long)(json_int(j, "a", 0) + json_int(j, "b", 0)));
	cJSON_Delete(j);
	rlm_api_reply(r, out);
}

static void tool_text(void *arg, const char *args_json, struct rlm_api_reply *r)
{
	(void)arg;
	(void)args_json;
	rlm_api_reply(r, "plain words, not JSON");
}

static void tool_fail(void *arg, const char *args_json, struct rlm_api_reply *r)
{
	(void)arg;
	(void)args_json;
	rlm_api_reply_error(r, "the ledger is locked");
}

static void tool_silent(void *arg, const char *args_json, struct rlm_api_reply *r)
{
	(void)arg;
	(void)args_json;
	(void)r;
}

static const char add_schema[] = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
				 "\"integer\"}, \"b\": {\"type\": \"integer\"}}, \"required\": "
				 "[\"a\", \"b\"]}";

TEST(host_tools_are_called_by_model_code)
{
	struct fake f;
	struct rlm_api *a;
	atomic_int calls = 0;
	char *err = NULL, *m;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	CHECK_MSG(rlm_api_tool_add(a, RLM_API_ROOT | RLM_API_CHILDREN, "add", add_schema,
				   "Add two integers", tool_add, &calls, &err) == 0,
		  "%s", err);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "words", NULL, "Some words", tool_text, NULL,
			       &err) == 0);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "ledger", NULL, "Read the ledger", tool_fail, NULL,
			       &err) == 0);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "mute", NULL, "Says nothing", tool_silent, NULL,
			       &err) == 0);
	/* a taken name, a bad schema, where */
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "add", NULL, "again", tool_add, &calls, &err) < 0);
	CHECK_STR(err, "tool 'add': the name is taken");
	rlm_api_free(err);
	CHECK(rlm_api_tool_add(a, RLM_API_CHILDREN, "host.add", NULL, "again", tool_add, &calls,
			       &err) < 0);
	CHECK_STR(err, "tool 'host.add': the name is taken");
	rlm_api_free(err);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "bad name!", NULL, "x", tool_add, &calls, &err) <
	      0);
	CHECK_CONTAINS(err, "bad name!");
	rlm_api_free(err);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "b", "[1]", "x", tool_add, &calls, &err) < 0);
	CHECK_STR(err, "tool 'b': the input schema is not a JSON object");
	rlm_api_free(err);
	CHECK(rlm_api_tool_add(a, 4, "c", NULL, "x", tool_add, &calls, &err) < 0);
	CHECK_CONTAINS(err, "where must be");
	rlm_api_free(err);

	fake_says(f.root,
		  "```repl\n"
		  "print('FOUND', search_tools('add integers')[0]['name'])\n"
		  "info = get_tool_info('host.add')\n"
		  "print('R', call_tool('host.add', a=2, b=40)['sum'])\n"
		  "print('W', repr(call_tool('host.words')))\n"
		  "for t in ('host.ledger', 'host.mute'):\n"
		  "    try:\n"
		  "        call_tool(t)\n"
		  "    except ToolError as e:\n"
		  "        print('E', t, e)\n"
		  "```",
		  100, 20);
	fake_says(f.root, "```repl\nFINAL('done')\n```", 100, 20);
	j = solve_json(a, "What is 2 + 40?", "ctx", 3, "text", NULL);
	CHECK_STR(answer_of(j), "done");
	m = shown(&f, 1);
	CHECK_CONTAINS(m, "FOUND host.add");
	CHECK_CONTAINS(m, "R 42");
	CHECK_CONTAINS(m, "W 'plain words, not JSON'");
	CHECK_CONTAINS(m, "E host.ledger");
	CHECK_CONTAINS(m, "the ledger is locked");
	CHECK_CONTAINS(m, "the tool gave no reply");
	CHECK_INT(atomic_load(&calls), 1);
	free(m);
	cJSON_Delete(j);
	/* after the first solve: no more tools */
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "late", NULL, "x", tool_add, &calls, &err) < 0);
	CHECK_CONTAINS(err, "before the client's first solve");
	rlm_api_free(err);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(the_root_gets_only_the_tools_added_for_it)
{
	struct fake f;
	struct rlm_api *a;
	atomic_int calls = 0;
	char *err = NULL;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	CHECK(rlm_api_tool_add(a, RLM_API_ROOT, "add", add_schema, "Add", tool_add, &calls, &err) ==
	      0);
	CHECK(rlm_api_tool_add(a, RLM_API_CHILDREN, "words", NULL, "Words", tool_text, NULL,
			       &err) == 0);
	CHECK(a->sub_tools && a->tools && a->sub_tools != a->tools);
	fake_says(f.root,
		  "```repl\nnames = []\nfor t in ('host.add', 'host.words'):\n"
		  "    try:\n        call_tool(t, a=1, b=2) if t == 'host.add' else call_tool(t)\n"
		  "        names.append(t)\n    except ToolError:\n        pass\n"
		  "FINAL(','.join(names) or 'none')\n```",
		  100, 20);
	j = solve_json(a, "q?", "ctx", 3, "text", NULL);
	CHECK_STR(answer_of(j), "host.add");
	CHECK_INT(atomic_load(&calls), 1);
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- cancel ---- */

struct later {
	struct rlm_api_job *job;
	int64_t after_ns;
};

static void *cancel_job_later(void *arg)
{
	struct later *l = arg;
	struct timespec ts = {(time_t)(l->after_ns / 1000000000), (long)(l->after_ns % 1000000000)};
	nanosleep(&ts, NULL);
	rlm_api_job_cancel(l->job);
	return NULL;
}

TEST(cancel_from_another_thread_stops_the_solve)
{
	struct fake f;
	struct rlm_api *a;
	struct later l;
	pthread_t th;
	char *err = NULL, *out;
	int64_t t0;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	l.job = rlm_api_job_new();
	l.after_ns = 500000000LL;
	fake_says(f.root, "```repl\nanswer['content'] = 'so far'\nimport time\ntime.sleep(30)\n```",
		  100, 20);
	t0 = time_now_ns();
	pthread_create(&th, NULL, cancel_job_later, &l);
	out = rlm_api_solve(a, "q?", "ctx", 3, "text", NULL, l.job, NULL, NULL, &err);
	pthread_join(th, NULL);
	CHECK_MSG(out, "%s", err);
	j = json_parse(out, strlen(out));
	CHECK_STR(json_str(json_get(j, "result"), "stop"), "cancelled");
	CHECK_STR(answer_of(j), "so far");
	CHECK_MSG(time_now_ns() - t0 < 5 * SEC * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	cJSON_Delete(j);
	rlm_api_free(out);
	rlm_api_job_free(l.job);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- sessions ---- */

TEST(a_session_keeps_its_variables_across_three_questions)
{
	struct fake f;
	struct rlm_api *a;
	struct rlm_api_session *s;
	char *err = NULL, *out, *info;
	cJSON *j;
	const char *answers[] = {"set", "42", "84"};
	fake_init(&f, false, NULL);
	a = client(f.config);
	s = rlm_api_session_new(a, "the context", 11, "text", "{\"max_iterations\": 3}", &err);
	CHECK_MSG(s, "%s", err);
	fake_says(f.root, "```repl\nx = 41\nFINAL('set')\n```", 100, 20);
	fake_says(f.root, "```repl\nx += 1\nFINAL(str(x))\n```", 100, 20);
	fake_says(f.root, "```repl\nFINAL(str(x * 2) if context_1 == 'more' else 'no')\n```", 100,
		  20);
	for (int i = 0; i < 3; i++) {
		if (i == 2)
			CHECK_INT(rlm_api_session_add_context(s, "more", 4, "text", &err), 1);
		out = rlm_api_session_solve(s, "next?", NULL, NULL, NULL, NULL, &err);
		CHECK_MSG(out, "%s", err);
		j = json_parse(out, strlen(out));
		CHECK_STR(answer_of(j), answers[i]);
		cJSON_Delete(j);
		rlm_api_free(out);
	}
	info = rlm_api_session_info(s);
	j = json_parse(info, strlen(info));
	CHECK_INT(json_int(j, "questions", -1), 3);
	CHECK_INT(json_int(j, "contexts", -1), 2);
	CHECK(json_int(j, "pid", 0) > 0);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "history")), 3);
	cJSON_Delete(j);
	rlm_api_free(info);
	/* options of a solve: checked as rlm_api_solve's */
	CHECK(!rlm_api_session_solve(s, "q", "{\"nope\": 1}", NULL, NULL, NULL, &err));
	CHECK_STR(err, "options: unknown member 'nope'");
	rlm_api_free(err);
	rlm_api_session_reset(s);
	info = rlm_api_session_info(s);
	CHECK_CONTAINS(info, "\"questions\":0");
	rlm_api_free(info);
	rlm_api_session_free(s);
	rlm_api_close(a);
	fake_free(&f);
}

/* ---- runs ---- */

TEST(run_jsonl_exports_a_run_of_the_store)
{
	char *cfg = xasprintf("{\"provider\": \"sim\", \"env\": false, \"cache\": \"%s/s.db\"}",
			      harness_tmpdir());
	struct rlm_api *a = client(cfg), *bare = client(SIM);
	char *err = NULL, *jl;
	const char *run, *tj;
	cJSON *j, *line;
	j = solve_json(a, "What is the code?", "The code is 5151.", 17, "text",
		       "{\"export\": true}");
	run = json_str(json_get(j, "result"), "run");
	CHECK_MSG(run && *run, "no run id: %s", json_print(json_get(j, "result")));
	jl = rlm_api_run_jsonl(a, run, &err);
	CHECK_MSG(jl, "%s", err);
	line = json_parse(jl, strcspn(jl, "\n"));
	CHECK(cJSON_IsObject(line));
	cJSON_Delete(line);
	tj = json_str(j, "trajectory_jsonl");
	CHECK_STR(tj, jl);
	rlm_api_free(jl);
	CHECK(!rlm_api_run_jsonl(a, "20000101-000000-000000", &err));
	CHECK(err && *err);
	rlm_api_free(err);
	CHECK(!rlm_api_run_jsonl(bare, run, &err));
	CHECK_STR(err, "no store: the client has no \"cache\"");
	rlm_api_free(err);
	cJSON_Delete(j);
	rlm_api_close(bare);
	rlm_api_close(a);
	free(cfg);
}

/* ---- nothing left behind ---- */

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;
	CHECK(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

TEST(a_hundred_solves_leave_no_fds_threads_or_processes)
{
	static const char ctx[] = "Line one.\nThe code word is 'larch'.\nLine three.\n";
	static const char docs[] =
	    "[\"Line one.\", \"The code word is 'larch'.\", \"Line three.\"]";
	int fds, tasks, kids;
	struct rlm_api *a = client(SIM);
	cJSON *j = solve_json(a, "What is the code word?", ctx, strlen(ctx), "text", NULL);
	cJSON_Delete(j);
	rlm_api_close(a);
	/* after one client has come and gone: what the process keeps for
	 * good (the worker spawner) is there */
	fds = count_dir("/proc/self/fd");
	tasks = count_dir("/proc/self/task");
	kids = (int)proc_children(getpid(), NULL, 0);
	/* 100 solves: four clients of 25, each context kind in turn but
	 * "file", and a session's question now and then */
	for (int c = 0; c < 4; c++) {
		a = client(SIM);
		for (int i = 0; i < 25; i++) {
			static const char *const kinds[] = {"text", "docs", "json"};
			const char *kind = kinds[i % 3];
			const char *text = i % 3 ? docs : ctx;
			char *err = NULL, *out;
			if (i % 10 == 9) {
				struct rlm_api_session *s =
				    rlm_api_session_new(a, ctx, strlen(ctx), "text", NULL, &err);
				CHECK_MSG(s, "%s", err);
				out = rlm_api_session_solve(s, "What is the code word?", NULL, NULL,
							    NULL, NULL, &err);
				rlm_api_session_free(s);
			} else {
				out = rlm_api_solve(
				    a, i % 2 ? "What is the code word?" : NULL, text, strlen(text),
				    kind, "{\"max_iterations\": 6}", NULL, NULL, NULL, &err);
			}
			CHECK_MSG(out, "solve %d: %s", c * 25 + i, err);
			CHECK_CONTAINS(out, "\"ok\":true");
			rlm_api_free(out);
		}
		rlm_api_close(a);
	}
	CHECK_INT(count_dir("/proc/self/fd"), fds);
	CHECK_INT(count_dir("/proc/self/task"), tasks);
	CHECK_INT((int)proc_children(getpid(), NULL, 0), kids);
}

/* ---- the installed library ---- */

TEST(make_install_then_pkg_config_builds_a_program)
{
	struct proc_out o;
	const char *argv[] = {"/bin/sh", "tests/install_test.sh", NULL, NULL};
	char *build;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	SKIP("the installed library is the plain build's");
#endif
	if (access("tests/install_test.sh", R_OK) || access("Makefile", R_OK))
		SKIP("not run from the top of the tree");
	if (access("/usr/bin/pkg-config", X_OK) && access("/usr/bin/pkgconf", X_OK))
		SKIP("no pkg-config");
	build = xstrdup(harness_rlm_bin());
	*strrchr(build, '/') = '\0';
	argv[2] = build;
	CHECK_INT(proc_run(argv, NULL, NULL, 300, &o), 0);
	CHECK_MSG(o.status == 0 && strstr(o.out, "install test: ok"), "status %d: %s%s", o.status,
		  o.out, o.err);
	CHECK_CONTAINS(o.out, "rlm.h: ");
	proc_out_release(&o);
	free(build);
}

/* ---- the environment, the store, many threads ---- */

TEST(env_true_reads_the_environment_as_rlm_solve_does)
{
	struct fake f;
	struct rlm_api *a;
	char *url, *cache;
	cJSON *j;
	fake_init(&f, false, NULL);
	url = xasprintf("%s/v1", fakesrv_url(f.root));
	cache = xasprintf("%s/env.db", harness_tmpdir());
	setenv("RLM_MODEL", "root-m", 1);
	setenv("OPENAI_BASE_URL", url, 1);
	setenv("OPENAI_API_KEY", "from-env", 1);
	setenv("RLM_CACHE", cache, 1);
	a = client("{\"cache\": true}");
	fake_says(f.root, "```repl\nFINAL('from the fake')\n```", 100, 20);
	j = solve_json(a, "q?", "ctx", 3, "text", NULL);
	CHECK_STR(answer_of(j), "from the fake");
	CHECK(json_get(json_get(j, "usage_by_model"), "root-m"));
	CHECK(fakesrv_count(f.root) == 1);
	CHECK_STR(fake_header(fakesrv_request(f.root, 0), "Authorization"), "Bearer from-env");
	CHECK_MSG(access(cache, F_OK) == 0, "no store at RLM_CACHE %s", cache);
	cJSON_Delete(j);
	rlm_api_close(a);
	/* env false: none of it */
	a = client("{\"env\": false}");
	j = solve_json(a, "What is the code?", "The code is 11.", 15, "text", NULL);
	CHECK(json_get(json_get(j, "usage_by_model"), "sim"));
	CHECK(fakesrv_count(f.root) == 1);
	cJSON_Delete(j);
	rlm_api_close(a);
	free(url);
	free(cache);
	fake_free(&f);
}

TEST(env_numbers_out_of_range_are_the_defaults)
{
	static const char *const bad_timeouts[] = {"inf", "nan", "1e999", "-3", "0", "86401",
						   "5x"};
	struct rlm_models_cfg c;
	for (size_t i = 0; i < ARRAY_SIZE(bad_timeouts); i++) {
		setenv("RLM_TIMEOUT", bad_timeouts[i], 1);
		setenv("RLM_CONCURRENCY", i % 2 ? "1e9" : "0", 1);
		rlm_models_cfg_init(&c);
		rlm_models_cfg_env(&c);
		CHECK_MSG(c.timeout_s == 300, "RLM_TIMEOUT=%s: %g", bad_timeouts[i], c.timeout_s);
		CHECK_INT(c.concurrency, 64);
	}
	setenv("RLM_TIMEOUT", "2.5", 1);
	setenv("RLM_CONCURRENCY", "7", 1);
	rlm_models_cfg_init(&c);
	rlm_models_cfg_env(&c);
	CHECK(c.timeout_s == 2.5);
	CHECK_INT(c.concurrency, 7);
	unsetenv("RLM_TIMEOUT");
	unsetenv("RLM_CONCURRENCY");
}

struct racer {
	struct rlm_api *a;
	int ok;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	static const char ctx[] = "Alpha.\nThe tide table says high water at 06:40.\nOmega.\n";
	for (int i = 0; i < 3; i++) {
		char *err = NULL;
		char *out = rlm_api_solve(r->a, "When is high water?", ctx, strlen(ctx), "text",
					  NULL, NULL, NULL, NULL, &err);
		if (out && strstr(out, "\"ok\":true") && strstr(out, "06:40"))
			r->ok++;
		rlm_api_free(out);
		rlm_api_free(err);
	}
	return NULL;
}

TEST(one_client_solves_on_many_threads_at_once)
{
	struct rlm_api *a = client(SIM);
	struct racer r[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){a, 0};
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(r[i].ok, 3);
	}
	rlm_api_close(a);
}

TEST(the_shared_library_exports_the_public_api_only)
{
	struct proc_out o;
	const char *argv[] = {"/usr/bin/python3", "scripts/check_layout.py", "exports", NULL, NULL};
	char *build, *so;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	SKIP("a sanitizer's build exports its runtime's symbols: the plain build is checked");
#endif
	build = xstrdup(harness_rlm_bin());
	*strrchr(build, '/') = '\0';
	so = xasprintf("%s/librlm.so.0", build);
	if (access(so, R_OK) || access("scripts/check_layout.py", R_OK))
		SKIP("no %s, or not run from the top of the tree", so);
	argv[3] = so;
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 0, "status %d: %s%s", o.status, o.out, o.err);
	proc_out_release(&o);
	free(so);
	free(build);
}

TEST(a_session_takes_contexts_of_every_kind_and_copies_them)
{
	struct fake f;
	struct rlm_api *a;
	struct rlm_api_session *s;
	char *err = NULL, *out, *json = xstrdup("{\"k\": \"v1\", \"n\": [1, 2, 3]}");
	char *docs = xstrdup("[\"d-zero\", \"d-one\"]");
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	s = rlm_api_session_new(a, json, strlen(json), "json", NULL, &err);
	CHECK_MSG(s, "%s", err);
	CHECK_INT(rlm_api_session_add_context(s, docs, strlen(docs), "docs", &err), 1);
	CHECK_INT(rlm_api_session_add_context(s, "/usr/include/errno.h", 20, "file", &err), 2);
	CHECK(rlm_api_session_add_context(s, "[1", 2, "json", &err) < 0);
	CHECK_CONTAINS(err, "context: ");
	rlm_api_free(err);
	/* copied: the caller's buffers may go at once */
	memset(json, 'x', strlen(json));
	memset(docs, 'x', strlen(docs));
	free(json);
	free(docs);
	fake_says(f.root,
		  "```repl\nFINAL('%s %d %s %s' % (context['k'], sum(context['n']), "
		  "context_1[1], 'errno' in context_2))\n```",
		  100, 20);
	out = rlm_api_session_solve(s, "q?", NULL, NULL, NULL, NULL, &err);
	CHECK_MSG(out, "%s", err);
	j = json_parse(out, strlen(out));
	CHECK_STR(answer_of(j), "v1 6 d-one True");
	cJSON_Delete(j);
	rlm_api_free(out);
	rlm_api_session_free(s);
	/* a session needs the repl strategy */
	CHECK(!rlm_api_session_new(a, "x", 1, "text", "{\"strategy\": \"tree\"}", &err));
	CHECK_STR(err, "options: a session needs the \"repl\" strategy");
	rlm_api_free(err);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(usage_by_model_counts_child_rlms_calls_too)
{
	struct fake f;
	struct rlm_api *a;
	const cJSON *r;
	cJSON *j;
	fake_init(&f, false, NULL);
	a = client(f.config);
	/* the root, its child (a node of its own, the same model), the root */
	fake_says(f.root, "```repl\nc = rlm_query('the child question')\nprint(c)\n```", 100, 20);
	fake_says(f.root, "```repl\nFINAL('from the child')\n```", 40, 4);
	fake_says(f.root, "```repl\nFINAL(c)\n```", 200, 30);
	j = solve_json(a, "q?", "ctx", 3, "text", "{\"max_depth\": 2}");
	CHECK_STR(answer_of(j), "from the child");
	r = json_get(json_get(j, "usage_by_model"), "root-m");
	CHECK_MSG(r, "%s", json_print(json_get(j, "usage_by_model")));
	CHECK_INT(json_int(r, "calls", -1), 3);
	CHECK_INT(json_int(r, "input_tokens", -1), 340);
	CHECK_INT(json_int(r, "output_tokens", -1), 54);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "usage_by_model")), 1);
	cJSON_Delete(j);
	rlm_api_close(a);
	fake_free(&f);
}

TEST(a_cost_budget_needs_prices_for_the_models)
{
	struct fake f;
	struct rlm_api *a;
	struct rlm_api_session *s;
	char *err = NULL;
	fake_init(&f, false, NULL);
	a = client(f.config);
	CHECK(!rlm_api_solve(a, "q", "x", 1, "text", "{\"max_cost\": 1}", NULL, NULL, NULL, &err));
	CHECK_CONTAINS(err, "root-m");
	CHECK_CONTAINS(err, "'max_cost'");
	rlm_api_free(err);
	s = rlm_api_session_new(a, "x", 1, "text", NULL, &err);
	CHECK_MSG(s, "%s", err);
	CHECK(!rlm_api_session_solve(s, "q", "{\"max_cost\": 1}", NULL, NULL, NULL, &err));
	CHECK_CONTAINS(err, "root-m");
	rlm_api_free(err);
	CHECK_INT(fakesrv_count(f.root), 0);
	rlm_api_session_free(s);
	rlm_api_close(a);
	fake_free(&f);
}
