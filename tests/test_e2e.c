/* SPDX-License-Identifier: MIT */
/* tests/test_e2e.c -- the real rlm binary, end to end: generate haystacks,
 * solve them in-process and over HTTP against `rlm sim-serve`, and every
 * kind of bad input a user can give. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Run rlm with args and the extra environment entries extra ("NAME=value",
 * NULL-terminated, or NULL); returns the captured result. */
static struct proc_out rlm_env(const char *const *args, const char *input,
			       const char *const *extra)
{
	const char *argv[32], *env[24];
	struct proc_out o;
	size_t n = 0, k = 0;
	/* No real provider may leak in from the environment, nor a sandbox
	 * setting. */
	static const char *const clean[] = {"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL",
					    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
					    "ANTHROPIC_BASE_URL", "RLM_SIM", "RLM_SANDBOX_DISABLE",
					    NULL};
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (size_t i = 0; clean[i]; i++)
		env[k++] = clean[i];
	for (size_t i = 0; extra && extra[i] && k < 23; i++)
		env[k++] = extra[i];
	env[k] = NULL;
	CHECK_INT(proc_run(argv, input, env, 120, &o), 0);
	return o;
}

static struct proc_out rlm(const char *const *args, const char *input)
{
	return rlm_env(args, input, NULL);
}

static char *path_in_tmp(const char *name)
{
	return xasprintf("%s/%s", harness_tmpdir(), name);
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	CHECK(fwrite(text, 1, len, f) == len);
	fclose(f);
}

/* Generate one S-NIAH item; returns its JSONL line fields. */
static void gen(const char *size, const char *extra_flag, char **ctx, char **q, char **answer)
{
	char *dir = path_in_tmp("gen"), *jl, *line;
	size_t len;
	cJSON *j;
	const char *args[] = {"bench", "gen", "sniah", "--sizes", size, "--seed", "11",
			      "--out", dir, extra_flag, NULL};
	struct proc_out o = rlm(args, NULL);
	struct rlm_err err = {0, ""};
	CHECK_MSG(o.status == 0, "bench gen failed: %s", o.err);
	proc_out_release(&o);
	jl = xasprintf("%s/sniah.jsonl", dir);
	CHECK_INT(read_file(jl, 1 << 20, &line, &len, &err), 0);
	j = json_parse(line, strcspn(line, "\n"));
	CHECK(j);
	*ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
	*q = xstrdup(json_str(j, "question"));
	*answer = xstrdup(cJSON_GetArrayItem(json_get(j, "answer"), 0)->valuestring);
	cJSON_Delete(j);
	free(line);
	free(jl);
	free(dir);
}

TEST(solve_haystack_in_process)
{
	char *ctx, *q, *ans;
	struct proc_out o;
	gen("200k", NULL, &ctx, &q, &ans);
	{
		const char *args[] = {"solve", "--context", ctx, "--question", q, NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, ans);
	CHECK_CONTAINS(o.err, "offline simulator");
	proc_out_release(&o);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_json_output)
{
	char *ctx, *q, *ans;
	struct proc_out o;
	cJSON *j;
	gen("100k", "--distractors=3", &ctx, &q, &ans);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--json", "--quiet", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.err, ""); /* --quiet: not even the simulator notice */
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), ans);
	CHECK_STR(json_str(j, "provider"), "sim");
	CHECK(cJSON_IsTrue(json_get(j, "found")));
	CHECK(json_num(json_get(j, "usage"), "input_tokens", 0) > 100000 / 1.0);
	CHECK(json_num(json_get(j, "calls"), "total", 0) >= 2);
	CHECK(json_num(json_get(j, "context"), "bytes", 0) > 390000);
	CHECK(json_get(json_get(j, "timings"), "total_ms") != NULL);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_over_http_with_sim_serve)
{
	char *ctx, *q, *ans, url[64];
	struct proc_out o;
	int port = 0;
	pid_t srv;
	gen("300k", "--haystack=words", &ctx, &q, &ans);
	srv = proc_sim_serve("ttft=5ms", &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--provider", "openai",
				      "--model", "sim", "--base-url", url, "--json", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, ans);
	CHECK_CONTAINS(o.out, "\"provider\":\t\"openai\"");
	proc_out_release(&o);
	CHECK_INT(proc_stop(srv), 0);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_over_http_under_faults)
{
	char *ctx, *q, *ans, url[64];
	struct proc_out o;
	int port = 0;
	pid_t srv;
	gen("200k", NULL, &ctx, &q, &ans);
	srv = proc_sim_serve("429=0.1,500=0.1,reset=0.05,truncate=0.05,malformed=0.05,"
			     "retry_after=0,retry_after_ms=20,seed=9",
			     &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--model", "sim",
				      "--base-url", url, "--leaf-chars", "20000", "--json", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, ans);
	CHECK_CONTAINS(o.out, "\"failed\":\t0");
	proc_out_release(&o);
	proc_stop(srv);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_directory_and_jsonl_and_stdin)
{
	char *dir = path_in_tmp("docs"), *p;
	struct proc_out o;
	mkdir(dir, 0755);
	for (int i = 0; i < 30; i++) {
		char text[256];
		p = xasprintf("%s/doc%02d.txt", dir, i);
		snprintf(text, sizeof(text), "Report %d.\nThe weather was %s that day.\n", i,
			 i == 17 ? "stormy with hail in Lisbon" : "mild");
		write_text(p, text, strlen(text));
		free(p);
	}
	p = xasprintf("%s/blob.bin", dir);
	write_text(p, "\x00\x01\x02\xff", 4);
	free(p);
	{
		const char *args[] = {"solve", "-c", dir, "-q", "Where was there hail?", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "Lisbon");
	CHECK_CONTAINS(o.err, "skipping");
	CHECK_CONTAINS(o.err, "blob.bin");
	proc_out_release(&o);

	p = path_in_tmp("docs.jsonl");
	{
		const char *jl = "{\"id\": \"a\", \"text\": \"The meeting moved the launch to May 3.\"}\n"
				 "{\"id\": \"b\", \"text\": \"Lunch was sandwiches.\"}\n";
		write_text(p, jl, strlen(jl));
	}
	{
		const char *args[] = {"solve", "-c", p, "-q", "When is the launch?", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "May 3");
	proc_out_release(&o);
	free(p);

	{
		const char *args[] = {"solve", "-c", "-", "-q", "How is the door painted?", NULL};
		o = rlm(args, "The house is old.\nThe door is painted green.\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "green");
	proc_out_release(&o);
	free(dir);
}

/* A bad input: exit status and a message naming the problem. */
static void bad(const char *const *args, const char *input, int want_status, const char *want_err)
{
	struct proc_out o = rlm(args, input);
	CHECK_MSG(o.status == want_status, "rlm %s %s ...: exit %d, want %d; stderr: %s", args[0],
		  args[1] ? args[1] : "", o.status, want_status, o.err);
	CHECK_CONTAINS(o.err, want_err);
	CHECK_STR(o.out, "");
	proc_out_release(&o);
}

TEST(bad_inputs)
{
	char *bin = path_in_tmp("bad.txt"), *jl = path_in_tmp("bad.jsonl"),
	     *empty = path_in_tmp("empty.d"), *ok = path_in_tmp("ok.txt");
	write_text(bin, "caf\xe9 au lait\n", 13);
	{
		const char *t = "{\"text\": \"fine\"}\n{\"text\": \"fine\"}\nnot json at all\n";
		write_text(jl, t, strlen(t));
	}
	write_text(ok, "hello\n", 6);
	mkdir(empty, 0755);
	{
		const char *a[] = {"solve", "-c", "/nonexistent/x.txt", "-q", "q?", NULL};
		bad(a, NULL, 1, "cannot open '/nonexistent/x.txt'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "", NULL};
		bad(a, NULL, 2, "the question is empty");
	}
	{
		const char *a[] = {"solve", "-c", ok, NULL};
		bad(a, NULL, 2, "the question is empty");
	}
	{
		const char *a[] = {"solve", "-q", "q?", NULL};
		bad(a, NULL, 2, "no context");
	}
	{
		const char *a[] = {"solve", "-c", bin, "-q", "q?", NULL};
		bad(a, NULL, 1, "invalid UTF-8");
	}
	{
		const char *a[] = {"solve", "-c", jl, "-q", "q?", NULL};
		bad(a, NULL, 1, "line 3");
	}
	{
		const char *a[] = {"solve", "-c", empty, "-q", "q?", NULL};
		bad(a, NULL, 1, "no text documents");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--provider", "gemini", NULL};
		bad(a, NULL, 2, "unknown provider 'gemini'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--frobnicate", NULL};
		bad(a, NULL, 2, "unknown option '--frobnicate'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--strategy", "magic", NULL};
		bad(a, NULL, 2, "unknown strategy 'magic'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--concurrency", "zero", NULL};
		bad(a, NULL, 2, "--concurrency");
	}
	{
		char url[64], want[96];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", proc_closed_port());
		snprintf(want, sizeof(want), "cannot connect to %s", url);
		{
			const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "m",
					   "--base-url", url, NULL};
			bad(a, NULL, 1, want);
		}
	}
	{
		/* an endpoint without a model is not silently the simulator */
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--base-url",
				   "http://127.0.0.1:8000/v1", NULL};
		bad(a, NULL, 2, "no model given for provider 'openai'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "claude-sonnet-4-5", NULL};
		bad(a, NULL, 1, "ANTHROPIC_API_KEY");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--provider", "openai", NULL};
		bad(a, NULL, 2, "no model given");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "gpt-5", NULL};
		bad(a, NULL, 1, "OPENAI_API_KEY");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--sim", "warp=9", NULL};
		bad(a, NULL, 2, "unknown simulator option 'warp'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--max-iterations", "0", NULL};
		bad(a, NULL, 2, "--max-iterations");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--python", "/nonexistent/py", NULL};
		bad(a, NULL, 2, "--python '/nonexistent/py'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--prompts", "/nonexistent", NULL};
		bad(a, NULL, 2, "cannot open prompt directory");
	}
	{
		const char *a[] = {"repl", NULL};
		bad(a, NULL, 2, "no context");
	}
	{
		const char *a[] = {"frobnicate", NULL};
		bad(a, NULL, 2, "unknown command 'frobnicate'");
	}
	{
		const char *a[] = {"bench", "gen", "oolong", "--out", empty, NULL};
		bad(a, NULL, 2, "unknown suite 'oolong'");
	}
	free(bin);
	free(jl);
	free(empty);
	free(ok);
}

TEST(help_and_version)
{
	static const char *const cmds[][4] = {
		{"--help", NULL},
		{"solve", "--help", NULL},
		{"sim-serve", "--help", NULL},
		{"repl", "--help", NULL},
		{"doctor", "--help", NULL},
		{"bench", "--help", NULL},
		{"bench", "gen", "--help", NULL},
		{"bench", "perf", "--help", NULL},
	};
	struct proc_out o;
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
		o = rlm((const char *const *)cmds[i], NULL);
		CHECK_MSG(o.status == 0, "%s %s: exit %d", cmds[i][0], cmds[i][1] ? cmds[i][1] : "",
			  o.status);
		CHECK_CONTAINS(o.out, "usage: rlm");
		proc_out_release(&o);
	}
	{
		const char *a[] = {"--version", NULL};
		o = rlm(a, NULL);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "rlm " RLM_VERSION);
	proc_out_release(&o);
}

TEST(json_on_failure)
{
	char *ok = path_in_tmp("ok.txt"), url[64];
	struct proc_out o;
	cJSON *j;
	write_text(ok, "hello\n", 6);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", proc_closed_port());
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "m", "--base-url", url,
				   "--json", NULL};
		o = rlm(a, NULL);
	}
	CHECK_INT(o.status, 1);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "error"), "cannot connect");
	CHECK(cJSON_IsNull(json_get(j, "answer")));
	CHECK(json_num(json_get(j, "calls"), "total", 0) == 1);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(ok);
}

/* The repl strategy (the default) over haystacks of 1M and 10M tokens:
 * the simulator writes the code, the REPL runs it, sub-calls fan out. */
static void solve_repl(const char *size, bool http)
{
	char *ctx, *q, *ans, url[64];
	struct proc_out o;
	cJSON *j;
	int port = 0;
	pid_t srv = 0;
	gen(size, NULL, &ctx, &q, &ans);
	if (http) {
		srv = proc_sim_serve("ttft=1ms", &port);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	}
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--json", "--quiet",
				      http ? "--base-url" : NULL, url, "--model", "sim", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), ans);
	CHECK_STR(json_str(j, "strategy"), "repl");
	CHECK_STR(json_str(j, "stop"), "answer");
	CHECK_STR(json_str(j, "provider"), http ? "openai" : "sim");
	CHECK(json_num(json_get(j, "repl"), "iterations", 0) >= 3);
	CHECK(json_num(json_get(j, "calls"), "sub", 0) >= 10);
	CHECK(json_num(json_get(json_get(j, "usage_by_role"), "sub"), "input_tokens", 0) >
	      json_num(json_get(j, "context"), "tokens_estimate", 0) * 0.9);
	cJSON_Delete(j);
	proc_out_release(&o);
	if (http)
		CHECK_INT(proc_stop(srv), 0);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_repl_1M_in_process) { solve_repl("1M", false); }
TEST(solve_repl_1M_over_http) { solve_repl("1M", true); }
TEST(solve_repl_10M_in_process) { solve_repl("10M", false); }
TEST(solve_repl_10M_over_http) { solve_repl("10M", true); }

TEST(solve_repl_limits_exit_3)
{
	char *ctx, *q, *ans;
	struct proc_out o;
	cJSON *j;
	gen("100k", NULL, &ctx, &q, &ans);
	{
		/* one turn (the probe), then the last call: a partial answer */
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--max-iterations", "1",
				      "--json", "--quiet", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "stopped (max_iterations)");
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "stop"), "max_iterations");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--max-sub-calls", "2",
				      "--quiet", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "stopped (");
	proc_out_release(&o);
	{
		/* every step written with a bug: the error limit ends it */
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--sim", "code_errors=1",
				      "--max-errors", "2", "--json", "--quiet", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "\"stop\":\t\"max_errors\"");
	proc_out_release(&o);
	free(ctx);
	free(q);
	free(ans);
}

TEST(solve_repl_self_corrects_and_verbose)
{
	char *ctx, *q, *ans;
	struct proc_out o;
	gen("100k", NULL, &ctx, &q, &ans);
	{
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--sim", "code_errors=0.3,seed=3", "--max-errors", "10",
				      "--verbose", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, ans);
	CHECK_CONTAINS(o.err, "--- turn 1 code");
	CHECK_CONTAINS(o.err, "--- turn 1 output");
	CHECK_CONTAINS(o.err, "llm_query_batched");
	proc_out_release(&o);
	free(ctx);
	free(q);
	free(ans);
}

TEST(repl_command_runs_piped_cells)
{
	char *ok = path_in_tmp("repl.txt");
	struct proc_out o;
	write_text(ok, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\nThe door is green.\n", 32);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", NULL};
		o = rlm(args, "x = len(context)\nprint(x)\n# %%\nx + 1\n# %%\n"
			      "print(llm_query('Question: What is the door?\\nText:\\n' + "
			      "context))\n# %%\n1/0\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "27\n28\n");
	CHECK_CONTAINS(o.out, "green");
	CHECK_CONTAINS(o.out, "ZeroDivisionError");
	proc_out_release(&o);
	free(ok);
}

/* ---- the sandbox ---- */

static const char *const layers[] = {"seccomp", "identity", "landlock", "userns", "mntns",
				     "netns",   "pidns",    "ipcns",    "utsns",  "rlimits"};

/* No probe file of `rlm doctor` is left in /tmp. */
static void check_no_probe_left(void)
{
	char *out = NULL;
	struct proc_out o;
	const char *argv[] = {"/bin/sh", "-c", "ls /tmp | grep '^rlm-doctor-probe' || true", NULL};
	CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
	out = o.out;
	CHECK_MSG(!out || !*out, "rlm doctor left files in /tmp: %s", out);
	proc_out_release(&o);
}

/* This machine (root, seccomp, Landlock ABI 7, user namespaces) has every
 * layer: the doctor says each is on, and every check holds. */
TEST(doctor_every_layer_on)
{
	struct proc_out o;
	const char *args[] = {"doctor", NULL};
	o = rlm(args, NULL);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	for (size_t i = 0; i < ARRAY_SIZE(layers); i++) {
		char want[32];
		snprintf(want, sizeof(want), "\n  %-10s on", layers[i]);
		CHECK_CONTAINS(o.out, want);
	}
	CHECK_CONTAINS(o.out, "python    /usr/bin/python3 (Python 3.");
	CHECK_CONTAINS(o.out, "landlock  ABI 7\n");
	CHECK_CONTAINS(o.out, "identity  uid 65534");
	CHECK_CONTAINS(o.out, "OK    TCP connect to 127.0.0.1:9");
	CHECK_CONTAINS(o.out, "OK    os.fork()");
	CHECK_CONTAINS(o.out, "OK    write a file in the scratch directory");
	CHECK_CONTAINS(o.out, "result: OK");
	CHECK(strstr(o.out, "FAIL") == NULL);
	CHECK(strstr(o.out, "WARN") == NULL);
	CHECK(strstr(o.err, "BREACH") == NULL);
	proc_out_release(&o);
	check_no_probe_left();
}

/* Layers turned off through the environment are reported off with why,
 * the rest still hold, and the doctor still passes: seccomp is on. */
TEST(doctor_json_with_layers_disabled)
{
	struct proc_out o;
	const char *args[] = {"doctor", "--json", NULL};
	const char *env[] = {"RLM_SANDBOX_DISABLE=userns,landlock", NULL};
	cJSON *j, *sb, *ly, *cs, *c;
	o = rlm_env(args, NULL, env);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK(cJSON_IsTrue(json_get(j, "ok")));
	CHECK_INT(json_num(j, "exit", -1), 0);
	CHECK_CONTAINS(json_str(json_get(j, "python"), "version"), "3.");
	sb = json_get(j, "sandbox");
	ly = json_get(sb, "layers");
	CHECK(cJSON_IsTrue(json_get(ly, "seccomp")));
	CHECK(cJSON_IsTrue(json_get(ly, "identity")));
	CHECK(cJSON_IsTrue(json_get(ly, "rlimits")));
	CHECK_MSG(json_str(ly, "userns") && *json_str(ly, "userns"), "userns: %s", o.out);
	CHECK_MSG(json_str(ly, "landlock") && *json_str(ly, "landlock"), "landlock: %s", o.out);
	CHECK_CONTAINS(json_str(ly, "userns"), "RLM_SANDBOX_DISABLE");
	CHECK_CONTAINS(json_str(ly, "landlock"), "RLM_SANDBOX_DISABLE");
	/* the namespaces stand on the user namespace */
	CHECK(json_str(ly, "netns") != NULL);
	CHECK(json_str(sb, "line") != NULL);
	CHECK(json_num(sb, "uid", -1) == 65534);
	CHECK(cJSON_IsFalse(json_get(sb, "unsafe")));
	cs = json_get(j, "checks");
	CHECK(cJSON_GetArraySize(cs) >= 10);
	cJSON_ArrayForEach(c, cs)
	{
		CHECK_MSG(strcmp(json_str(c, "mark"), "FAIL") != 0, "check %s failed: %s",
			  json_str(c, "name"), json_str(c, "detail"));
		const char *name = json_str(c, "name");
		if (strcmp(name, "tcp") == 0 || strcmp(name, "fork") == 0)
			CHECK_STR(json_str(c, "result"), "blocked");
		if (strcmp(name, "scratch") == 0)
			CHECK_STR(json_str(c, "result"), "allowed");
	}
	CHECK(json_get(json_get(j, "rlimits"), "nofile") != NULL);
	cJSON_Delete(j);
	proc_out_release(&o);
	check_no_probe_left();
}

TEST(sandbox_bad_flags)
{
	char *ok = path_in_tmp("ok.txt");
	write_text(ok, "hello\n", 6);
	{
		const char *a[] = {"doctor", "--sandbox-disable", "bogus", NULL};
		bad(a, NULL, 2, "bogus");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--sandbox-disable",
				   "userns,bogus", NULL};
		bad(a, NULL, 2, "bogus");
	}
	{
		const char *a[] = {"repl", "-c", ok, "--sandbox-disable", "bogus", NULL};
		bad(a, NULL, 2, "bogus");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--mem-limit", "lots", NULL};
		bad(a, NULL, 2, "--mem-limit");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--scratch-limit", "-5M", NULL};
		bad(a, NULL, 2, "--scratch-limit");
	}
	{
		const char *a[] = {"doctor", "extra", NULL};
		bad(a, NULL, 2, "unexpected argument 'extra'");
	}
	free(ok);
}

/* `rlm solve --json` carries the worker's sandbox; --verbose shows its line. */
TEST(solve_json_reports_the_sandbox)
{
	char *p = path_in_tmp("door.txt");
	struct proc_out o;
	cJSON *j, *sb;
	write_text(p, "The house is old.\nThe door is painted green.\n", 45);
	{
		const char *args[] = {"solve", "-c", p, "-q", "How is the door painted?",
				      "--json", "--quiet", "--mem-limit", "1G",
				      "--scratch-limit", "64M", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), "green");
	sb = json_get(j, "sandbox");
	CHECK_MSG(cJSON_IsObject(sb), "no sandbox object: %s", o.out);
	CHECK(cJSON_IsTrue(json_get(json_get(sb, "layers"), "seccomp")));
	CHECK_CONTAINS(json_str(sb, "line"), "seccomp=on");
	CHECK(json_num(sb, "landlock_abi", 0) >= 1);
	CHECK(cJSON_IsFalse(json_get(sb, "unsafe")));
	CHECK(json_str(sb, "fs") != NULL);
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", p, "-q", "How is the door painted?",
				      "--verbose", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "rlm: sandbox: seccomp=on");
	proc_out_release(&o);
	{
		/* the unsafe flag is loud even when seccomp works */
		const char *args[] = {"solve", "-c", p, "-q", "How is the door painted?",
				      "--unsafe-no-sandbox", "--quiet", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "WARNING: --unsafe-no-sandbox");
	CHECK_CONTAINS(o.out, "green");
	proc_out_release(&o);
	free(p);
}
