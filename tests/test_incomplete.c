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

#include <curl/curl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* rlm with args, no provider from the environment, and extra entries. */
static struct proc_out rlm_env(const char *const *args, const char *const *extra)
{
	return proc_rlm(args, extra, 120);
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

/* A stand-in for the browser's DOM, enough for store/viewer.html's script
 * to render the run: it prints the header's text. */
static const char dom_js[] =
	"const fs = require('fs');\n"
	"const [page, out] = process.argv.slice(2);\n"
	"const h = fs.readFileSync(page, 'utf8');\n"
	"const runText = /<script[^>]*id=\"run\"[^>]*>([\\s\\S]*?)<\\/script>/.exec(h)[1];\n"
	"const code = [...h.matchAll(/<script>([\\s\\S]*?)<\\/script>/g)].map(m => m[1]).pop();\n"
	"global.Node = function () {};\n"
	"function mk(tag) { const e = Object.create(Node.prototype); Object.assign(e, {tag, children: [],\n"
	"  attrs: {}, className: '', textContent: '', appendChild(c) { this.children.push(c); return c; },\n"
	"  setAttribute(k, v) { this.attrs[k] = v; }, getAttribute(k) { return this.attrs[k]; },\n"
	"  addEventListener() {} }); Object.defineProperty(e, 'firstChild', { get() {\n"
	"  return this.children[0] || mk('x'); } }); return e; }\n"
	"const els = {}; ['head', 'tree', 'nodes', 'open-all', 'close-all'].forEach(i => els[i] = mk('div'));\n"
	"els.head.children.push(mk('h1'));\n"
	"els.run = { textContent: runText };\n"
	"global.document = { createElement: mk, getElementById: i => els[i] || null,\n"
	"  querySelectorAll: () => [], title: '' };\n"
	"eval(code);\n"
	"const text = e => [e.textContent || ''].concat((e.children || []).map(text)).join('|');\n"
	"fs.writeFileSync(out, text(els.head) + '\\n=nodes=\\n' + text(els.nodes));\n";

/* The run exported as the HTML page: its viewer shows complete "no" and
 * the failures (run under node with a stand-in DOM; skipped without node). */
static void viewer_shows_failures(const char *db, const char *id)
{
	char *page = xasprintf("%s/run.html", harness_tmpdir());
	char *js = xasprintf("%s/dom.js", harness_tmpdir());
	char *txt = xasprintf("%s/page.txt", harness_tmpdir()), *shown = NULL;
	const char *eargs[] = {"runs", "export", id, "--format", "html", "-o", page,
			       "--cache", db, NULL};
	const char *nargv[] = {"/usr/bin/node", js, page, txt, NULL};
	struct proc_out o = rlm_env(eargs, NULL);
	size_t len;
	FILE *f;
	CHECK_MSG(o.status == 0, "export: %s", o.err);
	proc_out_release(&o);
	if (access(nargv[0], X_OK) != 0) {
		fprintf(stderr, "  (no node: the viewer's rendering is not checked)\n");
		goto out;
	}
	f = fopen(js, "w");
	CHECK(f);
	fputs(dom_js, f);
	fclose(f);
	CHECK_INT(proc_run(nargv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 0, "node: %s", o.err);
	proc_out_release(&o);
	CHECK_INT(file_read(txt, 1 << 24, &shown, &len, NULL), 0);
	CHECK_CONTAINS(shown, "|status|incomplete|");
	CHECK_CONTAINS(shown, "|complete|no|");
	CHECK_CONTAINS(shown, "|failures|");
	CHECK_CONTAINS(shown, "|sub-call, node 1 (depth 1): http://127.0.0.1:");
	/* and every node: the root's and the children's (from child_end) */
	CHECK(strstr(shown, "=nodes=") && strstr(strstr(shown, "=nodes="), "|complete|no|"));
out:
	free(shown);
	free(page);
	free(js);
	free(txt);
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
	viewer_shows_failures(db, sargs[4]);
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
	CHECK_STR(json_str(cJSON_GetArrayItem(runs, 0), "stop"), "max_iterations");
	CHECK(cJSON_IsFalse(json_get(cJSON_GetArrayItem(runs, 0), "complete")));
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
	CHECK_CONTAINS(v.r.stop_detail, "1 child RLM and 2 REPL workers failed (the first: "
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

/* ---- serve and MCP: the same solve, over their protocols ---- */

/* The environment of a failing solve: the simulator as root with children
 * (rlm_chunks=2), the sub-model at a closed port. */
struct failing_env {
	char url[80];
	const char *env[4];
};

static void failing_env_init(struct failing_env *f)
{
	closed_sub(f->url, sizeof(f->url));
	f->env[0] = f->url;
	f->env[1] = "ANTHROPIC_API_KEY=x";
	f->env[2] = "RLM_SIM=rlm_chunks=2,chunk=30000";
	f->env[3] = NULL;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	buf_append(arg, p, size * n);
	return size * n;
}

/* method path [body] on 127.0.0.1:port; the body parsed (NULL when not
 * JSON), and the status in *status. */
static cJSON *http_json(int port, const char *method, const char *path, const char *body,
			long *status)
{
	CURL *e = curl_easy_init();
	struct buf b = BUF_INIT;
	char url[256];
	cJSON *j;
	CURLcode rc;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	buf_puts(&b, "");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 90L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	rc = curl_easy_perform(e);
	CHECK_MSG(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(e);
	j = json_parse(b.p, b.len);
	CHECK_MSG(j, "%s %s: not JSON: %.300s", method, path, b.p);
	buf_release(&b);
	return j;
}

/* What every surface shows of the failing solve: status and stop
 * incomplete, complete false, the failures listed. */
static void check_incomplete(const cJSON *j, const char *status_key)
{
	CHECK_STR(json_str(j, status_key), "incomplete");
	CHECK_STR(json_str(j, "stop"), "incomplete");
	CHECK(cJSON_IsFalse(json_get(j, "complete")));
	CHECK(cJSON_GetArraySize(json_get(j, "failures")) >= 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(j, "failures"), 0), "kind"), "sub-call");
	CHECK_CONTAINS(json_str(j, "stop_detail"), "the answer NONE may be wrong");
}

TEST(serve_shows_incomplete_in_solve_runs_and_chat)
{
	struct failing_env f;
	char *ctx = write_context(), *db = xasprintf("%s/serve.db", harness_tmpdir());
	char *errp = xasprintf("%s/serve.err", harness_tmpdir()), line[256], *body, *path;
	const char *argv[] = {harness_rlm_bin(), "serve", "--port", "0", "--cache", db,
			      "--root", harness_tmpdir(), "--model", "sim", "--sub-model",
			      "claude-haiku-4-5", "--max-retries", "0", NULL};
	cJSON *j, *run, *chat;
	long st = 0;
	pid_t pid;
	int port;
	failing_env_init(&f);
	pid = proc_start_line(argv, f.env, errp, 60, line, sizeof(line));
	CHECK_MSG(pid > 0, "rlm serve did not start (stderr in %s)", errp);
	port = atoi(strrchr(line, ':') + 1);
	body = xasprintf("{\"question\": \"What is the launch password?\", \"context_path\": "
			 "\"%s\"}", ctx);
	j = http_json(port, "POST", "/v1/solve", body, &st);
	CHECK_INT(st, 200);
	check_incomplete(j, "status");
	CHECK_STR(json_str(j, "answer"), "NONE");
	/* the stored run, as the runs endpoint reads it back */
	path = xasprintf("/v1/runs/%s", json_str(j, "run_id"));
	run = http_json(port, "GET", path, NULL, &st);
	CHECK_INT(st, 200);
	check_incomplete(run, "status");
	free(body);
	/* a chat completion: its rlm extension */
	body = xasprintf("{\"model\": \"rlm\", \"rlm_context\": {\"path\": \"%s\"}, "
			 "\"messages\": [{\"role\": \"user\", \"content\": \"What is the launch "
			 "password?\"}]}", ctx);
	chat = http_json(port, "POST", "/v1/chat/completions", body, &st);
	CHECK_MSG(st == 200, "status %ld: %s", st, json_print(chat));
	check_incomplete(json_get(chat, "rlm"), "status");
	CHECK(strcmp(json_str(cJSON_GetArrayItem(json_get(chat, "choices"), 0), "finish_reason"),
		     "stop") != 0);
	cJSON_Delete(chat);
	cJSON_Delete(run);
	cJSON_Delete(j);
	free(path);
	free(body);
	CHECK_INT(proc_stop(pid), 0);
	free(ctx);
	free(db);
	free(errp);
}

/* Write all of s to fd. */
static void write_all(int fd, const char *s)
{
	size_t n = strlen(s), off = 0;
	while (off < n) {
		ssize_t w = write(fd, s + off, n - off);
		CHECK(w > 0);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* `rlm mcp`: solve is a tool error (isError) when the answer is an
 * incomplete NONE, and its structured content says why. */
TEST(mcp_solve_incomplete_is_a_tool_error_with_failures)
{
	struct failing_env f;
	char *ctx = write_context(), *args, *line = NULL, *nl;
	const char *argv[] = {harness_rlm_bin(), "mcp", "--root", harness_tmpdir(), "--model",
			      "sim", "--sub-model", "claude-haiku-4-5", "--max-retries", "0",
			      "--no-cache", NULL};
	int in[2], out[2], st;
	struct buf rd = BUF_INIT;
	int64_t deadline = time_now_ns() + 60 * SEC;
	cJSON *r = NULL, *res, *sc;
	pid_t pid;
	failing_env_init(&f);
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		for (size_t i = 0; f.env[i]; i++)
			putenv((char *)(uintptr_t)f.env[i]);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	write_all(in[1], "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			 "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
			 "{\"name\":\"t\",\"version\":\"1\"}}}\n"
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
	args = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"solve\",\"arguments\":{\"question\":\"What is the launch "
			 "password?\",\"path\":\"%s\"}}}\n", ctx);
	write_all(in[1], args);
	/* read lines until the answer to id 1 */
	buf_puts(&rd, "");
	while (!r && time_now_ns() < deadline) {
		struct pollfd p = {out[0], POLLIN, 0};
		char chunk[65536];
		ssize_t n;
		if (poll(&p, 1, 200) <= 0)
			continue;
		if ((n = read(out[0], chunk, sizeof(chunk))) <= 0)
			break;
		buf_append(&rd, chunk, (size_t)n);
		while (!r && (nl = memchr(rd.p, '\n', rd.len))) {
			cJSON *m = json_parse(rd.p, (size_t)(nl - rd.p));
			size_t rest = rd.len - (size_t)(nl + 1 - rd.p);
			if (m && json_get(m, "id") && json_num(m, "id", -1) == 1)
				r = m;
			else
				cJSON_Delete(m);
			memmove(rd.p, nl + 1, rest);
			rd.len = rest;
			rd.p[rest] = 0;
		}
	}
	close(in[1]);
	CHECK_MSG(r, "no answer to the tools/call");
	res = json_get(r, "result");
	CHECK(cJSON_IsTrue(json_get(res, "isError")));
	line = xstrdup(json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text"));
	CHECK_CONTAINS(line, "NONE\n\n(incomplete: ");
	CHECK_CONTAINS(line, "sub-calls failed");
	sc = json_get(res, "structuredContent");
	CHECK_STR(json_str(sc, "stop"), "incomplete");
	CHECK(cJSON_IsFalse(json_get(sc, "complete")));
	CHECK(cJSON_GetArraySize(json_get(sc, "failures")) >= 2);
	cJSON_Delete(r);
	close(out[0]);
	if (waitpid(pid, &st, 0) != pid)
		CHECK(0);
	buf_release(&rd);
	free(line);
	free(args);
	free(ctx);
}

/* The same rule for serve (at start, and for a request's budget) and for
 * bench run: a budget over a model without a price is refused, before any
 * call. */
TEST(max_cost_without_a_price_in_serve_and_bench)
{
	char url[64], *errp = xasprintf("%s/serve2.err", harness_tmpdir()), line[256];
	char *ds = xasprintf("%s/ds.jsonl", harness_tmpdir()), *out = xasprintf("%s/bout", harness_tmpdir());
	const char *sargs[] = {"serve", "--port", "0", "--no-cache", "--model", "my-local-llama",
			       "--base-url", url, "--max-cost", "1", NULL};
	const char *bargs[] = {"bench", "run", ds, "--model", "my-local-llama", "--base-url", url,
			       "--max-cost", "1", "--no-cache", "--out", out, NULL};
	const char *argv[] = {harness_rlm_bin(), "serve", "--port", "0", "--no-cache", "--model",
			      "my-local-llama", "--base-url", url, NULL};
	struct proc_out o;
	long st = 0;
	cJSON *j;
	pid_t pid;
	FILE *f;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", proc_closed_port());
	o = rlm_env(sargs, NULL);
	CHECK_MSG(o.status == 2, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "--max-cost needs a price for model 'my-local-llama'");
	proc_out_release(&o);
	f = fopen(ds, "w");
	CHECK(f);
	fputs("{\"id\": \"a\", \"question\": \"Where did the Marisol sail from?\", "
	      "\"context\": \"Le ferry quitta \u00c5lesund.\", \"answer\": [\"\u00c5lesund\"], \"scorer\": \"exact\"}\n", f);
	fclose(f);
	o = rlm_env(bargs, NULL);
	CHECK_MSG(o.status == 2, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "--max-cost needs a price for model 'my-local-llama'");
	CHECK(!strstr(o.err, "connect"));
	proc_out_release(&o);
	/* no budget at start: a request's own is refused with 400 */
	pid = proc_start_line(argv, NULL, errp, 60, line, sizeof(line));
	CHECK_MSG(pid > 0, "rlm serve did not start (stderr in %s)", errp);
	j = http_json(atoi(strrchr(line, ':') + 1), "POST", "/v1/solve",
		      "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"max_cost\": 1}}",
		      &st);
	CHECK_INT(st, 400);
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"),
		       "the cost budget (options.max_cost) needs a price for model 'my-local-llama'");
	cJSON_Delete(j);
	CHECK_INT(proc_stop(pid), 0);
	free(errp);
	free(ds);
	free(out);
}

/* More failures than the list holds: all counted, the first 64 listed,
 * and the summary says both. */
TEST(failures_past_the_list_are_counted)
{
	struct env v;
	struct fake_reply bad = {400, NULL, "{\"error\":{\"message\":\"rejected\"}}", FAKE_NORMAL, 0};
	cJSON *j;
	env_init(&v, SUB_FAKE);
	fakesrv_set_default(v.sub_srv, &bad);
	says(&v, "```repl\nrs = llm_query_batched(['part %d of the ledger' % i for i in range(70)])\n"
		 "print(sum(r.startswith('Error') for r in rs))\n```");
	says(&v, "FINAL(NONE)");
	CHECK_INT(solve(&v, "Which ledger line is signed?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_INCOMPLETE);
	CHECK_INT(v.r.failed, 70);
	CHECK_INT(v.r.n_failures, RLM_FAILURES_MAX);
	CHECK_CONTAINS(v.r.stop_detail, "70 failed (the first 64: 64 sub-calls; the first: ");
	j = rlm_result_json(&v.r, &v.o);
	CHECK_INT((int)json_num(j, "failed", 0), 70);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "failures")), RLM_FAILURES_MAX);
	cJSON_Delete(j);
	env_free(&v);
}

/* A child that answered NONE over a failed sub-call is incomplete; its
 * parent's code sees its NONE as before, and the failure, a sub-call of
 * node 1 at depth 1, reaches the root's result (no "child" failure: it
 * answered). */
TEST(incomplete_child_gives_its_none_and_its_failures_rise)
{
	struct env v;
	struct fake_reply bad = {400, NULL, "{\"error\":{\"message\":\"context too long\"}}",
				 FAKE_NORMAL, 0};
	env_init(&v, SUB_FAKE);
	fakesrv_set_default(v.sub_srv, &bad);
	says(&v, "```repl\nr = rlm_query('Which harbour is named in the log?')\nprint('A:', r)\n```");
	says(&v, "```repl\nprint(llm_query('read this part'))\n```");
	says(&v, "FINAL(NONE)");
	says(&v, "FINAL(NONE)");
	CHECK_MSG(solve(&v, "Which harbour?") == 0, "%s", v.err.msg);
	CHECK_MSG_HAS(&v, 3, -1, "A: NONE");
	CHECK_INT(v.r.n_children, 1);
	CHECK_INT(v.r.children[0].stop, RLM_STOP_INCOMPLETE);
	CHECK_INT(v.r.stop, RLM_STOP_INCOMPLETE);
	CHECK_INT(v.r.failed, 1);
	CHECK_STR(v.r.failures[0].kind, "sub-call");
	CHECK_INT(v.r.failures[0].node, 1);
	CHECK_INT(v.r.failures[0].depth, 1);
	CHECK_CONTAINS(v.r.failures[0].reason, "context too long");
	CHECK_CONTAINS(v.r.warning, "1 more failure under child RLMs");
	env_free(&v);
}
