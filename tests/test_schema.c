/* SPDX-License-Identifier: MIT */
/* tests/test_schema.c -- structured answers (rlm_opts.schema_json,
 * docs/structured.md) with real parts: real sandboxed Python workers that
 * check answers with Debian's python3-jsonschema, a fake server on
 * loopback playing the root model with scripted replies (what it was sent
 * shows what the model was told), and the simulator as the root model
 * building its answer from the schema it was shown. Every typed answer is
 * checked again here by a separate python3 with jsonschema, not by the
 * code under test. */
#include "loopenv.h"
#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIST "/usr/lib/python3/dist-packages/jsonschema/__init__.py"

static void need_jsonschema(void)
{
	if (access(DIST, R_OK) != 0)
		SKIP("python3-jsonschema is not installed (scripts/deps.sh installs it)");
}

/* Whether answer validates under schema, by a python3 of its own (not the
 * worker): 1 valid, 0 not, -1 the check could not run. */
static int validates(const char *schema, const char *answer)
{
	char sp[] = "/tmp/rlm-schema-XXXXXX", ap[] = "/tmp/rlm-answer-XXXXXX", cmd[256];
	int fs = mkstemp(sp), fa = mkstemp(ap), rc;
	if (fs < 0 || fa < 0)
		return -1;
	if (write(fs, schema, strlen(schema)) < 0 || write(fa, answer, strlen(answer)) < 0)
		rc = -1;
	close(fs);
	close(fa);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import json,sys,jsonschema; "
		 "jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' "
		 "%s %s 2>/dev/null",
		 sp, ap);
	rc = system(cmd);
	unlink(sp);
	unlink(ap);
	return rc == 0 ? 1 : rc > 0 ? 0 : -1;
}

static const char person[] = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
			     "\"age\":{\"type\":\"integer\",\"minimum\":0}},"
			     "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";

/* ---- scripted root model ---- */

TEST(valid_dict_answer_is_typed_compact_json)
{
	struct env v;
	cJSON *a;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = person;
	says(&v, "```repl\nanswer['content'] = {'name': 'Ada', 'age': 36}\n"
		 "answer['ready'] = True\n```");
	CHECK_INT(solve(&v, "Who is it?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK(v.r.found);
	CHECK(v.r.answer_json);
	CHECK_STR(v.r.answer, "{\"name\":\"Ada\",\"age\":36}");
	CHECK_INT(validates(person, v.r.answer), 1);
	/* The system prompt showed the schema and said what to do. */
	CHECK_MSG_HAS(&v, 0, 0, "Structured answer");
	CHECK_MSG_HAS(&v, 0, 0, "\"additionalProperties\":false");
	/* rlm_result_json: the answer as a JSON value, flagged */
	a = rlm_result_json(&v.r, &v.o);
	CHECK(cJSON_IsObject(json_get(a, "answer")));
	CHECK_INT((int)json_get(json_get(a, "answer"), "age")->valuedouble, 36);
	CHECK(cJSON_IsTrue(json_get(a, "answer_json")));
	cJSON_Delete(a);
	env_free(&v);
}

TEST(invalid_answer_is_refused_with_errors_then_fixed)
{
	struct env v;
	char *m;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = person;
	/* JSON text with a wrong type and an extra member */
	says(&v, "```repl\nanswer['content'] = '{\"name\": \"Ada\", \"age\": \"36\", \"x\": 1}'\n"
		 "answer['ready'] = True\nprint('set')\n```");
	says(&v, "```repl\nanswer['content'] = {'name': 'Ada', 'age': 36}\n"
		 "answer['ready'] = True\n```");
	CHECK_INT(solve(&v, "Who is it?"), 0);
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_CONTAINS(m, "the answer was not taken");
	CHECK_CONTAINS(m, "at $.age: '36' is not of type 'integer'");
	CHECK_CONTAINS(m, "Additional properties are not allowed");
	free(m);
	CHECK(v.r.answer_json);
	CHECK(v.r.found);
	CHECK_STR(v.r.answer, "{\"name\":\"Ada\",\"age\":36}");
	CHECK_INT(v.r.error_turns, 1);
	env_free(&v);
}

TEST(final_text_and_final_var_are_checked)
{
	struct env v;
	char *m;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2}";
	/* FINAL in the text, not JSON of the shape: refused */
	says(&v, "The answer:\nFINAL([1])");
	/* FINAL_VAR of a list that is not all integers: refused */
	says(&v, "```repl\nxs = [1, 'two', 3]\n```\nFINAL_VAR(xs)");
	/* FINAL in the text, valid */
	says(&v, "FINAL([1, 2, 3])");
	CHECK_INT(solve(&v, "Which numbers?"), 0);
	CHECK_INT(fakesrv_count(v.root_srv), 3);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_CONTAINS(m, "[1] is too short");
	free(m);
	m = message(v.root_srv, 2, -1, NULL);
	CHECK_CONTAINS(m, "at $[1]: 'two' is not of type 'integer'");
	free(m);
	CHECK(v.r.answer_json);
	CHECK_STR(v.r.answer, "[1,2,3]");
	env_free(&v);
}

TEST(a_string_schema_takes_plain_text)
{
	struct env v;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = "{\"type\":\"string\",\"enum\":[\"yes\",\"no\"]}";
	says(&v, "```repl\nFINAL('yes')\n```");
	CHECK_INT(solve(&v, "Is it?"), 0);
	CHECK(v.r.answer_json);
	CHECK_STR(v.r.answer, "\"yes\"");
	env_free(&v);
}

TEST(unsatisfied_schema_ends_at_the_limit_never_valid)
{
	struct env v;
	cJSON *a;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = "{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}";
	v.o.max_iterations = 2;
	v.o.max_errors = 10;
	says(&v, "```repl\nanswer['content'] = 4\nanswer['ready'] = True\n```");
	says(&v, "```repl\nanswer['content'] = 5\nanswer['ready'] = True\n```");
	says(&v, "FINAL(3)");
	CHECK_INT(solve(&v, "How many?"), 0);
	CHECK_INT(fakesrv_count(v.root_srv), 3);
	CHECK(!v.r.found);
	CHECK(!v.r.answer_json);
	CHECK(v.r.stop != RLM_STOP_ANSWER);
	CHECK_CONTAINS(v.r.stop_detail, "the answer never validated under the schema");
	CHECK_CONTAINS(v.r.stop_detail, "3 is less than the minimum of 5");
	/* the JSON result: never typed, never flagged */
	a = rlm_result_json(&v.r, &v.o);
	CHECK(!json_get(a, "answer_json"));
	CHECK(!cJSON_IsTrue(json_get(a, "found")));
	cJSON_Delete(a);
	env_free(&v);
}

TEST(max_errors_ends_a_solve_whose_answers_never_validate)
{
	struct env v;
	need_jsonschema();
	env_init(&v, SUB_SIM);
	v.o.schema_json = person;
	v.o.max_errors = 2;
	says(&v, "```repl\nFINAL({'name': 'Ada'})\n```");
	says(&v, "```repl\nFINAL({'name': 'Ada', 'age': -1})\n```");
	CHECK_INT(solve(&v, "Who?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ERRORS);
	CHECK(!v.r.found);
	CHECK(!v.r.answer_json);
	CHECK_CONTAINS(v.r.stop_detail, "not valid under the schema");
	CHECK_CONTAINS(v.r.stop_detail, "-1 is less than the minimum of 0");
	/* the last candidate is kept, as JSON text, but not as the answer */
	CHECK_STR(v.r.answer, "{\"name\":\"Ada\",\"age\":-1}");
	env_free(&v);
}

TEST(invalid_schema_is_refused_before_any_model_call)
{
	static const struct {
		const char *schema, *why;
	} cases[] = {
	    {"{\"type\":\"integr\"}", "not valid JSON Schema"},
	    {"{\"type\":\"object\",\"properties\":{\"a\":{\"minimum\":\"five\"}}}",
	     "not valid JSON Schema"},
	    {"{\"type\":", "not JSON"},
	    {"[1,2]", "not a JSON object"},
	};
	need_jsonschema();
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct env v;
		env_init(&v, SUB_SIM);
		v.o.schema_json = cases[i].schema;
		says(&v, "FINAL(1)");
		CHECK_INT(solve(&v, "Anything?"), RLM_EINVAL);
		CHECK_CONTAINS(v.err.msg, cases[i].why);
		CHECK_INT(v.r.stop, RLM_STOP_ERROR);
		CHECK_INT(fakesrv_count(v.root_srv), 0);
		env_free(&v);
	}
}

TEST(tree_strategy_with_a_schema_is_refused)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.strategy = RLM_TREE;
	v.o.schema_json = person;
	CHECK_INT(solve(&v, "Who?"), RLM_EINVAL);
	CHECK_CONTAINS(v.err.msg, "repl strategy");
	env_free(&v);
}

TEST(schema_is_in_the_config_only_when_set)
{
	struct rlm_opts o = {0};
	char *a, *b;
	o.strategy = RLM_REPL;
	a = rlm_config_json(&o);
	CHECK(!strstr(a, "schema"));
	o.schema_json = person;
	b = rlm_config_json(&o);
	CHECK_CONTAINS(b, "\"schema\":{\"type\":\"object\"");
	CHECK_CONTAINS(b, "\"schema_prompt\"");
	free(a);
	free(b);
}

/* ---- the simulator as the root model ---- */

/* v with the simulator as its root model too, over ctx_text. */
static void sim_root(struct env *v, const char *ctx_text)
{
	env_init(v, SUB_SIM);
	v->o.model = v->sub;
	corpus_free(v->ctx);
	v->ctx = corpus_from_text(ctx_text, strlen(ctx_text));
}

static const char log_ctx[] =
    "2024-03-01 10:00:01 INFO boot complete on host alder\n"
    "2024-03-01 10:00:05 WARN disk /var nearly full\n"
    "2024-03-01 10:02:17 INFO the vault code is ZEBRA-7731\n"
    "2024-03-01 10:03:00 ERROR socket reset by peer\n";

TEST(sim_answers_a_nested_schema)
{
	struct env v;
	static const char schema[] =
	    "{\"type\":\"object\",\"required\":[\"answer\",\"findings\",\"count\"],"
	    "\"properties\":{\"answer\":{\"type\":\"string\",\"minLength\":1},"
	    "\"count\":{\"type\":\"integer\",\"minimum\":0},"
	    "\"findings\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	    "\"required\":[\"text\"],\"properties\":{\"text\":{\"type\":\"string\"},"
	    "\"doc\":{\"type\":\"string\"}}}},"
	    "\"confident\":{\"type\":\"boolean\"}},\"additionalProperties\":false}";
	cJSON *a;
	need_jsonschema();
	sim_root(&v, log_ctx);
	v.o.schema_json = schema;
	CHECK_INT(solve(&v, "What is the vault code?"), 0);
	CHECK_MSG(v.r.answer_json, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK(v.r.found);
	CHECK_INT(validates(schema, v.r.answer), 1);
	a = cJSON_Parse(v.r.answer);
	CHECK(a);
	CHECK_CONTAINS(json_str(a, "answer"), "ZEBRA-7731");
	CHECK(cJSON_GetArraySize(json_get(a, "findings")) >= 1);
	cJSON_Delete(a);
	env_free(&v);
}

TEST(sim_cannot_satisfy_an_impossible_schema)
{
	struct env v;
	static const char schema[] = "{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}";
	need_jsonschema();
	sim_root(&v, log_ctx);
	v.o.schema_json = schema;
	v.o.max_iterations = 5;
	CHECK_INT(solve(&v, "How many lines are errors?"), 0);
	CHECK(!v.r.found);
	CHECK(!v.r.answer_json);
	CHECK(v.r.stop == RLM_STOP_ERRORS || v.r.stop == RLM_STOP_ITERATIONS);
	CHECK_CONTAINS(v.r.stop_detail, "never validated");
	CHECK(!v.r.answer || validates(schema, v.r.answer) == 0);
	env_free(&v);
}

TEST(sim_without_schema_is_unchanged)
{
	struct env v;
	sim_root(&v, log_ctx);
	CHECK_INT(solve(&v, "What is the vault code?"), 0);
	CHECK(!v.r.answer_json);
	CHECK_CONTAINS(v.r.answer, "ZEBRA-7731");
	env_free(&v);
}

/* ---- the worker alone (repl/repl.h, STRUCTURED ANSWERS) ---- */

static struct repl *start(const char *schema, struct rlm_err *err)
{
	struct repl_cfg c;
	struct repl *r = NULL;
	memset(&c, 0, sizeof(c));
	c.ctx.text = "some context\n";
	c.ctx.len = strlen(c.ctx.text);
	c.schema = schema;
	if (repl_start(&c, &r, err))
		return NULL;
	return r;
}

/* Run code in r; the answer (compact JSON) or NULL, *invalid why not. */
static char *run_code(struct repl *r, const char *code, char **invalid)
{
	struct repl_result res;
	struct rlm_err err = {0, ""};
	char *a;
	memset(&res, 0, sizeof(res));
	CHECK_MSG(repl_exec(r, code, strlen(code), 0, &res, &err) == 0, "%s", err.msg);
	a = res.ready ? xstrdup(res.answer) : NULL;
	*invalid = res.invalid ? xstrdup(res.invalid) : NULL;
	if (res.invalid)
		CHECK_CONTAINS(res.output, "the answer was not taken");
	repl_result_release(&res);
	return a;
}

TEST(worker_takes_json_values_and_refuses_what_json_cannot_hold)
{
	static const struct {
		const char *code, *answer, *invalid;
	} cases[] = {
	    {"answer['content'] = (1, 2)\nanswer['ready'] = True", "[1,2]", NULL},
	    {"FINAL({'k': [True, None, 1.5]})", "{\"k\":[true,null,1.5]}", NULL},
	    {"FINAL('  {\"k\": []}  ')", "{\"k\":[]}", NULL},
	    {"FINAL({'k': float('nan')})", NULL, "not a JSON value"},
	    {"FINAL({'k': object()})", NULL, "not a JSON value"},
	    {"FINAL({'k': 'x'})", NULL, "at $.k: 'x' is not of type 'array'"},
	    {"FINAL('not json at all')", NULL, "is not valid under any of the given schemas"},
	    {"FINAL({})", NULL, "'k' is a required property"},
	    /* "format" is asserted where jsonschema checks it */
	    {"FINAL({'k': [], 'when': '2024-02-30'})", NULL, "is not a 'date'"},
	    {"FINAL({'k': [], 'when': '2024-02-29'})", "{\"k\":[],\"when\":\"2024-02-29\"}", NULL},
	};
	struct rlm_err err = {0, ""};
	struct repl *r;
	need_jsonschema();
	r = start("{\"anyOf\":[{\"type\":\"array\"},{\"type\":\"object\",\"required\":[\"k\"],"
		  "\"properties\":{\"k\":{\"type\":\"array\"},\"when\":{\"type\":\"string\","
		  "\"format\":\"date\"}}}]}",
		  &err);
	CHECK_MSG(r, "%s", err.msg);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *why, *a = run_code(r, cases[i].code, &why);
		if (cases[i].answer) {
			CHECK_MSG(a && strcmp(a, cases[i].answer) == 0, "case %zu: %s (%s)", i,
				  a ? a : "(none)", why ? why : "");
		} else {
			CHECK_MSG(!a, "case %zu taken: %s", i, a);
			CHECK_MSG(why && strstr(why, cases[i].invalid), "case %zu: %s", i,
				  why ? why : "(no reason)");
		}
		free(a);
		free(why);
	}
	repl_free(r);
}

TEST(worker_checks_final_frames_and_keeps_the_schema_over_a_restart)
{
	struct rlm_err err = {0, ""};
	struct repl_result res;
	struct repl *r;
	char *why, *a;
	need_jsonschema();
	r = start("{\"type\":\"integer\",\"minimum\":10}", &err);
	CHECK_MSG(r, "%s", err.msg);
	memset(&res, 0, sizeof(res));
	CHECK_INT(repl_final(r, "12", 2, 0, &res, &err), 0);
	CHECK(res.ready);
	CHECK_STR(res.answer, "12");
	repl_result_release(&res);
	CHECK_INT(repl_final(r, " 3 ", 3, 0, &res, &err), 0);
	CHECK(!res.ready);
	CHECK_CONTAINS(res.invalid, "3 is less than the minimum of 10");
	repl_result_release(&res);
	/* the worker dies; the one started after it checks as well */
	a = run_code(r, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", &why);
	free(a);
	free(why);
	a = run_code(r, "FINAL(4)", &why);
	CHECK(!a);
	CHECK_CONTAINS(why, "4 is less than the minimum of 10");
	free(a);
	free(why);
	a = run_code(r, "FINAL(40)", &why);
	CHECK_STR(a, "40");
	free(a);
	free(why);
	repl_free(r);
}

TEST(worker_refuses_a_bad_schema_at_start)
{
	struct rlm_err err = {0, ""};
	need_jsonschema();
	CHECK(!start("{\"type\":\"object\",\"required\":\"name\"}", &err));
	CHECK_INT(err.code, RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "not valid JSON Schema");
	CHECK_CONTAINS(err.msg, "$.required");
}

/* ---- rlm solve --schema (the real binary, the simulator) ---- */

/* path in the test's directory holding text; a fresh string. */
static char *tmp_file(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", harness_tmpdir(), name);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0);
	fclose(f);
	return path;
}

TEST(cli_solve_schema)
{
	static const char schema[] =
	    "{\n  \"type\": \"object\",\n  \"required\": [\"code\", \"lines\"],\n"
	    "  \"properties\": {\"code\": {\"type\": \"string\"},\n"
	    "    \"lines\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}\n}\n";
	char *ctx, *sp, *bad, *imp, *miss;
	struct proc_out o;
	cJSON *j;
	need_jsonschema();
	ctx = tmp_file("log.txt", log_ctx);
	sp = tmp_file("schema.json", schema);
	bad = tmp_file("bad.json", "{\"type\": \"object\",\n \"properties\": [1,\n");
	imp = tmp_file("imp.json", "{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 3}");
	miss = xasprintf("%s/no-such-schema.json", harness_tmpdir());
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "What is the vault code?",
				      "--schema", sp, "--quiet", NULL};
		o = proc_rlm(args, NULL, 120);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_INT(validates(schema, o.out), 1);
	j = cJSON_Parse(o.out);
	CHECK_CONTAINS(json_str(j, "code"), "ZEBRA-7731");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "What is the vault code?",
				      "--schema", sp, "--quiet", "--json", NULL};
		o = proc_rlm(args, NULL, 120);
	}
	j = cJSON_Parse(o.out);
	CHECK(cJSON_IsObject(json_get(j, "answer")));
	CHECK(cJSON_IsTrue(json_get(j, "answer_json")));
	cJSON_Delete(j);
	proc_out_release(&o);
	/* not JSON: the file named, the line said, no model called (exit 2) */
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "x?", "--schema", bad, NULL};
		o = proc_rlm(args, NULL, 60);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad.json' is not JSON (line");
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "x?", "--schema", miss, NULL};
		o = proc_rlm(args, NULL, 60);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "no-such-schema.json");
	proc_out_release(&o);
	/* never satisfied: exit 3, nothing on stdout, why on stderr */
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "How many lines are errors?",
				      "--schema", imp, NULL};
		o = proc_rlm(args, NULL, 120);
	}
	CHECK_INT(o.status, 3);
	CHECK_STR(o.out, "");
	CHECK_CONTAINS(o.err, "never validated under the schema");
	proc_out_release(&o);
	free(ctx);
	free(sp);
	free(bad);
	free(imp);
	free(miss);
}

TEST(worker_schema_can_change_between_solves)
{
	struct rlm_err err = {0, ""};
	struct repl *r;
	char *why, *a;
	need_jsonschema();
	r = start(NULL, &err);
	CHECK_MSG(r, "%s", err.msg);
	a = run_code(r, "x = 7\nFINAL('seven')", &why);
	CHECK_STR(a, "seven");
	free(a);
	free(why);
	/* now an integer is asked for; the variables stay */
	CHECK_INT(repl_set_schema(r, "{\"type\":\"integer\"}", &err), 0);
	a = run_code(r, "FINAL('seven')", &why);
	CHECK(!a);
	CHECK_CONTAINS(why, "is not of type 'integer'");
	free(why);
	a = run_code(r, "FINAL(x)", &why);
	CHECK_STR(a, "7");
	free(a);
	free(why);
	/* a bad one is refused and the old one stays */
	CHECK_INT(repl_set_schema(r, "{\"type\":\"integr\"}", &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "not valid JSON Schema");
	a = run_code(r, "FINAL('x')", &why);
	CHECK(!a);
	free(why);
	/* cleared: any text again */
	CHECK_INT(repl_set_schema(r, NULL, &err), 0);
	a = run_code(r, "FINAL('seven')", &why);
	CHECK_STR(a, "seven");
	CHECK(!why);
	free(a);
	repl_free(r);
}
