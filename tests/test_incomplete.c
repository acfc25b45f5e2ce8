/* SPDX-License-Identifier: MIT */
/* tests/test_incomplete.c -- failure is visible and never a clean answer
 * (issue 18, points 1 and 5): a solve whose sub-calls or child RLMs failed
 * says so (complete, failures; NONE becomes stop "incomplete" and exit 3),
 * the store lists runs stopped by a limit as stopped, and --max-cost with a
 * model that has no price is a usage error. The real rlm binary with the
 * simulator as root and a sub-model on a port where nothing listens, and
 * the library with a scripted root on a fake server. */
#include "harness.h"
#include "loopenv.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rlm with args, no provider from the environment, and extra entries. */
static struct proc_out rlm_env(const char *const *args, const char *const *extra)
{
	const char *argv[40], *env[24];
	struct proc_out o;
	size_t n = 0, k = 0;
	static const char *const clean[] = {"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL",
					    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
					    "ANTHROPIC_BASE_URL", "RLM_SIM", "RLM_SANDBOX_DISABLE",
					    "RLM_MAX_DEPTH", "RLM_MAX_NODES", "RLM_MAX_CALLS",
					    "RLM_PRICES", "RLM_CACHE", "RLM_NO_CACHE", NULL};
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (size_t i = 0; clean[i]; i++)
		env[k++] = clean[i];
	for (size_t i = 0; extra && extra[i] && k < 23; i++)
		env[k++] = extra[i];
	env[k] = NULL;
	CHECK_INT(proc_run(argv, NULL, env, 120, &o), 0);
	return o;
}

/* A context unlike `rlm bench gen`'s: paragraphs of ~6 KB on one line
 * each (no newline inside), shipping-log prose with accented names, and
 * no password anywhere. About 120 KB. */
static char *write_context(void)
{
	char *path = xasprintf("%s/harbour-log.txt", harness_tmpdir());
	FILE *f = fopen(path, "w");
	CHECK(f);
	for (int p = 0; p < 20; p++) {
		for (int s = 0; s < 60; s++)
			fprintf(f, "Le ferry «Marisol-%d» quitta Ålesund à %02d h, cargaison %d caisses. ",
				p, s % 24, p * 100 + s);
		fputc('\n', f);
	}
	fclose(f);
	return path;
}

/* A sub-model no call can reach: claude-haiku-4-5 at a port where
 * nothing listens (connections refused at once), no retry. */
static void closed_sub(char *env_url, size_t n)
{
	snprintf(env_url, n, "ANTHROPIC_BASE_URL=http://127.0.0.1:%d", proc_closed_port());
}

/* Before issue 18 this solve said NONE with stop "answer" and exit 0,
 * as if the context had been read and held nothing. */
TEST(sub_calls_failing_under_children_make_none_incomplete_exit_3)
{
	char *ctx = write_context(), *db = xasprintf("%s/runs.db", harness_tmpdir());
	char url[80];
	const char *env[] = {url, "ANTHROPIC_API_KEY=x", "RLM_SIM=rlm_chunks=2,chunk=30000", NULL};
	const char *args[] = {"solve",		 "-c",	 ctx,	  "-q",	   "What is the launch password?",
			      "--model",	 "sim",	 "--sub-model", "claude-haiku-4-5",
			      "--max-retries", "0",	 "--cache", db,	    "--json",
			      "--quiet",	 NULL};
	struct proc_out o, l, s;
	cJSON *j, *f, *it;
	const char *largs[] = {"runs", "list", "--cache", db, NULL};
	const char *sargs[] = {"runs", "show", "--cache", db, NULL, NULL};
	closed_sub(url, sizeof(url));
	o = rlm_env(args, env);
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "rlm: incomplete: ");
	CHECK_CONTAINS(o.err, "sub-calls failed (the first: ");
	CHECK_CONTAINS(o.err, "; the answer NONE may be wrong");
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %.200s", o.out);
	CHECK_STR(json_str(j, "answer"), "NONE");
	CHECK_STR(json_str(j, "stop"), "incomplete");
	CHECK(cJSON_IsFalse(json_get(j, "complete")));
	CHECK(!cJSON_IsTrue(json_get(j, "found")));
	f = json_get(j, "failures");
	CHECK(cJSON_IsArray(f) && cJSON_GetArraySize(f) >= 2);
	CHECK(json_num(j, "failed", 0) >= cJSON_GetArraySize(f));
	CHECK(json_num(j, "nodes", 0) >= 2);
	/* every failure a sub-call of a child, at depth 1, refused at the port */
	cJSON_ArrayForEach(it, f)
	{
		CHECK_STR(json_str(it, "kind"), "sub-call");
		CHECK_INT((int)json_num(it, "depth", -1), 1);
		CHECK((int)json_num(it, "node", 0) >= 1);
		CHECK_CONTAINS(json_str(it, "reason"), "127.0.0.1");
	}
	/* the children that answered NONE over failed reads say so too */
	it = cJSON_GetArrayItem(json_get(j, "children"), 0);
	CHECK_STR(json_str(it, "stop"), "incomplete");
	CHECK(cJSON_IsFalse(json_get(it, "complete")));
	sargs[4] = json_str(j, "run");
	CHECK(sargs[4] && *sargs[4]);
	/* the store: listed as incomplete, and show names what failed */
	l = rlm_env(largs, NULL);
	CHECK_INT(l.status, 0);
	CHECK_CONTAINS(l.out, sargs[4]);
	CHECK_CONTAINS(l.out, " incomplete ");
	CHECK(!strstr(l.out, " done "));
	s = rlm_env(sargs, NULL);
	CHECK_INT(s.status, 0);
	CHECK_CONTAINS(s.out, "(incomplete, ");
	CHECK_CONTAINS(s.out, "stop      incomplete;");
	CHECK_CONTAINS(s.out, "complete  no: ");
	CHECK_CONTAINS(s.out, "  failed  sub-call, node ");
	proc_out_release(&l);
	proc_out_release(&s);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(ctx);
	free(db);
}

/* A limit is never "done": max_iterations stops the simulator, which needs
 * more turns, and the run is listed as stopped by it. */
TEST(run_stopped_by_max_iterations_is_listed_as_stopped)
{
	char *ctx = write_context(), *db = xasprintf("%s/stopped.db", harness_tmpdir());
	const char *args[] = {"solve", "-c", ctx, "-q", "Which ferry carried 1905 crates?",
			      "--max-iterations", "1", "--cache", db, "--json", "--quiet", NULL};
	const char *largs[] = {"runs", "list", "--cache", db, NULL};
	const char *jargs[] = {"runs", "list", "--cache", db, "--json", NULL};
	struct proc_out o = rlm_env(args, NULL), l, lj;
	cJSON *j = json_parse(o.out, strlen(o.out)), *runs;
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	CHECK(j);
	CHECK_STR(json_str(j, "stop"), "max_iterations");
	CHECK(cJSON_IsFalse(json_get(j, "complete")));
	CHECK_INT(cJSON_GetArraySize(json_get(j, "failures")), 0);
	l = rlm_env(largs, NULL);
	CHECK_CONTAINS(l.out, " stopped: max_iterations ");
	CHECK(!strstr(l.out, " done "));
	lj = rlm_env(jargs, NULL);
	runs = json_parse(lj.out, strlen(lj.out));
	CHECK_STR(json_str(cJSON_GetArrayItem(runs, 0), "status"), "stopped: max_iterations");
	cJSON_Delete(runs);
	cJSON_Delete(j);
	proc_out_release(&o);
	proc_out_release(&l);
	proc_out_release(&lj);
	free(ctx);
	free(db);
}

/* The whole answer is still done and complete: nothing failed. */
TEST(whole_answer_is_done_and_complete)
{
	char *ctx = write_context(), *db = xasprintf("%s/done.db", harness_tmpdir());
	const char *args[] = {"solve", "-c", ctx, "-q", "Which ferry carried 1905 crates?",
			      "--cache", db, "--json", "--quiet", NULL};
	const char *largs[] = {"runs", "list", "--cache", db, NULL};
	struct proc_out o = rlm_env(args, NULL), l;
	cJSON *j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK(j);
	CHECK_STR(json_str(j, "stop"), "answer");
	CHECK(cJSON_IsTrue(json_get(j, "complete")));
	CHECK_INT((int)json_num(j, "failed", -1), 0);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "failures")), 0);
	CHECK(!strstr(o.err, "incomplete"));
	l = rlm_env(largs, NULL);
	CHECK_CONTAINS(l.out, " done ");
	cJSON_Delete(j);
	proc_out_release(&o);
	proc_out_release(&l);
	free(ctx);
	free(db);
}

/* --max-cost over a model no price table names would never hold: a usage
 * error before any call (the endpoint is a closed port: a call would have
 * failed with exit 1), naming the model and the --prices format. A price of
 * 0 given in a file is a price. */
TEST(max_cost_without_a_price_is_a_usage_error)
{
	char *ctx = write_context(), *prices = xasprintf("%s/prices.json", harness_tmpdir());
	char url[64];
	const char *args[] = {"solve", "-c", ctx, "-q", "q?", "--model", "my-local-llama",
			      "--base-url", url, "--max-cost", "1", "--max-retries", "0",
			      "--no-cache", "--quiet", NULL, NULL, NULL};
	struct proc_out o;
	FILE *f;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", proc_closed_port());
	o = rlm_env(args, NULL);
	CHECK_MSG(o.status == 2, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "--max-cost needs a price for model 'my-local-llama'");
	CHECK_CONTAINS(o.err, "--prices FILE");
	CHECK_CONTAINS(o.err, "{\"my-local-llama\": {\"input\": 0.45, \"output\": 1.8}}");
	CHECK(!strstr(o.err, "connect"));
	proc_out_release(&o);
	/* a price of 0, given: the budget is accepted and the call is tried */
	f = fopen(prices, "w");
	CHECK(f);
	fputs("{\"my-local-llama\": {\"input\": 0, \"output\": 0}}", f);
	fclose(f);
	args[15] = "--prices";
	args[16] = prices;
	o = rlm_env(args, NULL);
	CHECK_MSG(o.status == 1, "exit %d: %s", o.status, o.err);
	CHECK(!strstr(o.err, "--max-cost needs a price"));
	proc_out_release(&o);
	/* without --max-cost an unpriced model is fine (it costs "0") */
	args[9] = "--max-iterations";
	args[15] = NULL;
	o = rlm_env(args, NULL);
	CHECK_MSG(o.status == 1, "exit %d: %s", o.status, o.err);
	CHECK(!strstr(o.err, "--max-cost needs a price"));
	proc_out_release(&o);
	free(ctx);
	free(prices);
}

/* The simulator has a price of its own (0, the built-in table's), so a
 * budget with it is accepted, as the README's offline examples do. */
TEST(max_cost_with_the_simulator_is_accepted)
{
	char *ctx = write_context();
	const char *args[] = {"solve", "-c", ctx, "-q", "Which ferry carried 1905 crates?",
			      "--max-cost", "0.5", "--no-cache", "--quiet", NULL};
	struct proc_out o = rlm_env(args, NULL);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	proc_out_release(&o);
	free(ctx);
}

/* The library: a child that stops on its own limit (max_errors) is a
 * "child" failure, its killed workers "worker" failures of its node, and a
 * root that then answers NONE ends incomplete. */
TEST(child_stopped_on_max_errors_then_none_is_incomplete)
{
	struct env v;
	cJSON *j;
	const cJSON *f;
	env_init(&v, SUB_FAKE);
	v.o.max_errors = 2;
	says(&v, "```repl\nr = rlm_query('Where did the Marisol sail from?')\nprint('A:', r)\n```");
	/* the child's two turns, each killing its worker */
	says(&v, "```repl\nimport os\nos._exit(3)\n```");
	says(&v, "```repl\nimport os\nos._exit(3)\n```");
	says(&v, "FINAL(NONE)");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "NONE");
	CHECK_INT(v.r.stop, RLM_STOP_INCOMPLETE);
	CHECK(!v.r.complete);
	CHECK(!v.r.found);
	CHECK_INT(v.r.failed, 3);
	CHECK_INT(v.r.n_failures, 3);
	CHECK_STR(v.r.failures[0].kind, "child");
	CHECK_INT(v.r.failures[0].node, 1);
	CHECK_INT(v.r.failures[0].depth, 1);
	CHECK_CONTAINS(v.r.failures[0].reason, "max_errors: 2 turns in a row ended in an error");
	CHECK_STR(v.r.failures[1].kind, "worker");
	CHECK_INT(v.r.failures[1].node, 1);
	CHECK_STR(v.r.failures[2].kind, "worker");
	CHECK_CONTAINS(v.r.stop_detail, "1 child RLM and 2 REPL worker restarts failed (the first: "
					"max_errors: ");
	CHECK_CONTAINS(v.r.stop_detail, "the answer NONE may be wrong");
	CHECK_STR(rlm_stop_name(v.r.stop), "incomplete");
	/* the child itself stopped on its limit: not complete either */
	CHECK_INT(v.r.n_children, 1);
	CHECK(!v.r.children[0].complete);
	CHECK_INT(v.r.children[0].failed, 2);
	j = rlm_result_json(&v.r, &v.o);
	CHECK_STR(json_str(j, "stop"), "incomplete");
	CHECK(cJSON_IsFalse(json_get(j, "complete")));
	f = cJSON_GetArrayItem(json_get(j, "failures"), 0);
	CHECK_STR(json_str(f, "kind"), "child");
	CHECK_INT((int)json_num(f, "node", 0), 1);
	CHECK_INT((int)json_num(f, "depth", 0), 1);
	CHECK_CONTAINS(json_str(f, "reason"), "max_errors");
	cJSON_Delete(j);
	env_free(&v);
}

/* A real answer with failures under it stays an answer, but not a
 * complete one; a reason longer than the cap is cut. */
TEST(real_answer_with_failed_sub_call_is_not_complete)
{
	struct env v;
	struct buf msg = BUF_INIT;
	struct fake_reply bad;
	char *body;
	env_init(&v, SUB_FAKE);
	for (int i = 0; i < 100; i++)
		buf_puts(&msg, "the prompt was rejected by a policy of many words; ");
	body = xasprintf("{\"error\":{\"message\":\"%s\"}}", msg.p);
	bad = (struct fake_reply){400, NULL, body, FAKE_NORMAL, 0};
	fakesrv_set_default(v.sub_srv, &bad);
	says(&v, "```repl\nr = llm_query('hi')\nprint('got:', r[:40])\n```");
	says(&v, "FINAL(Ålesund)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "Ålesund");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK(v.r.found);
	CHECK(!v.r.complete);
	CHECK_INT(v.r.failed, 1);
	CHECK_STR(v.r.failures[0].kind, "sub-call");
	CHECK_INT(v.r.failures[0].node, 0);
	CHECK(strlen(v.r.failures[0].reason) <= RLM_FAILURE_REASON_MAX);
	CHECK_CONTAINS(v.r.failures[0].reason, "...");
	env_free(&v);
	buf_release(&msg);
	free(body);
}

/* Nothing failed: complete, and the failures list is empty. */
TEST(whole_library_answer_is_complete)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nprint(llm_query('hi'))\n```");
	says(&v, "FINAL(NONE)");
	says_full(v.sub_srv, "NONE", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER); /* NONE, and everything was read */
	CHECK(v.r.complete);
	CHECK_INT(v.r.failed, 0);
	CHECK(!v.r.failures);
	env_free(&v);
}
