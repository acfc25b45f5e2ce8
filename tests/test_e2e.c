/* SPDX-License-Identifier: MIT */
/* tests/test_e2e.c -- the real rlm binary, end to end: generate haystacks,
 * solve them in-process and over HTTP against `rlm sim-serve`, and every
 * kind of bad input a user can give. */
#include "harness.h"
#include "fakesrv.h"
#include "loopenv.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
					    "RLM_MAX_DEPTH", "RLM_MAX_NODES", "RLM_MAX_CALLS",
					    "RLM_MAX_FRAME", NULL};
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
	CHECK_INT(file_read(jl, 1 << 20, &line, &len, &err), 0);
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
	/* always there, [] when the answer names none */
	CHECK(cJSON_IsArray(json_get(j, "sources")));
	/* recursion: the simulator writes no rlm_query, so no child */
	CHECK(cJSON_IsArray(json_get(j, "children")));
	CHECK_INT(cJSON_GetArraySize(json_get(j, "children")), 0);
	CHECK(json_num(j, "nodes", -1) == 0);
	CHECK(json_num(j, "depth", -1) == 0);
	CHECK(json_num(j, "max_depth", -1) == 2);
	CHECK(json_num(j, "sub_calls", -1) >= 1);
	CHECK(json_num(json_get(j, "calls"), "root", 0) + json_num(json_get(j, "calls"), "sub", 0) ==
	      json_num(json_get(j, "calls"), "total", -1));
	cJSON_Delete(j);
	proc_out_release(&o);
	free(ctx);
	free(q);
	free(ans);
}

/* Child RLMs through the real binary: a fake model's root asks two
 * children; each answers from its context. --json nests them, --verbose
 * marks their lines, and --max-depth 1 turns them into plain sub-calls. */
TEST(solve_json_nests_child_rlms)
{
	struct fakesrv *srv = fakesrv_start();
	char *ok = path_in_tmp("ok.txt"), url[64], *body;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	struct proc_out o;
	cJSON *j, *kids, *k, *t, *b;
	CHECK(srv);
	write_text(ok, "hello\n", 6);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(srv));
	/* every call but the first: a child's turn (or a plain sub-call) */
	body = fakesrv_chat_body(
	    "```repl\nanswer['content'] = 'child:' + context\nanswer['ready'] = True\n```", "stop",
	    100, 10);
	r.body = body;
	fakesrv_set_default(srv, &r);
	free(body);
	body = fakesrv_chat_body("```repl\nrs = rlm_query_batched(['L1:0', 'L1:1'])\n"
				 "answer['content'] = '|'.join(rs)\nanswer['ready'] = True\n```",
				 "stop", 100, 10);
	r.body = body;
	fakesrv_push(srv, &r);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "m", "--base-url", url,
				   "--max-nodes", "1", "--json", "--verbose", NULL};
		o = rlm(a, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "answer"), "child:L1:0|child:L1:1");
	CHECK(json_num(j, "nodes", -1) == 2);
	CHECK(json_num(j, "sub_calls", -1) == 2);
	CHECK(json_num(json_get(j, "calls"), "total", 0) == 3);
	CHECK(json_num(json_get(j, "calls"), "root", 0) == 1);
	CHECK(json_num(json_get(j, "calls"), "sub", 0) == 2);
	CHECK(json_num(json_get(json_get(j, "usage_by_role"), "sub"), "input_tokens", 0) == 200);
	kids = json_get(j, "children");
	CHECK_INT(cJSON_GetArraySize(kids), 2);
	for (int i = 0; i < 2; i++) {
		char q[16], want[32];
		k = cJSON_GetArrayItem(kids, i);
		snprintf(q, sizeof(q), "L1:%d", i);
		snprintf(want, sizeof(want), "child:L1:%d", i);
		CHECK(json_num(k, "depth", 0) == 1);
		CHECK(json_num(k, "node", 0) >= 1);
		CHECK_STR(json_str(k, "question"), q);
		CHECK_STR(json_str(k, "answer"), want);
		CHECK_STR(json_str(k, "stop"), "answer");
		CHECK(json_num(json_get(k, "usage"), "input_tokens", 0) == 100);
		CHECK(json_get(k, "cost_usd") != NULL);
		CHECK(json_num(k, "iterations", 0) == 1);
		CHECK(json_num(k, "sub_calls", -1) == 0);
		CHECK_INT(cJSON_GetArraySize(json_get(k, "children")), 0);
		/* its trajectory: the one turn, its code and what it printed */
		CHECK_INT(cJSON_GetArraySize(json_get(k, "turns")), 1);
		t = cJSON_GetArrayItem(json_get(k, "turns"), 0);
		CHECK(json_num(t, "iteration", 0) == 1);
		CHECK_CONTAINS(json_str(t, "reply"), "```repl\nanswer['content'] = 'child:'");
		b = cJSON_GetArrayItem(json_get(t, "blocks"), 0);
		CHECK_STR(json_str(b, "code"),
			  "answer['content'] = 'child:' + context\nanswer['ready'] = True\n");
		CHECK_STR(json_str(b, "output"), "(no output)");
	}
	/* the root's turn: its reply, its block, no notice */
	CHECK_INT(cJSON_GetArraySize(json_get(j, "turns")), 1);
	t = cJSON_GetArrayItem(json_get(j, "turns"), 0);
	CHECK_CONTAINS(json_str(t, "reply"), "rlm_query_batched(['L1:0', 'L1:1'])");
	CHECK_INT(cJSON_GetArraySize(json_get(t, "blocks")), 1);
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(json_get(t, "blocks"), 0), "code"),
		       "rs = rlm_query_batched(['L1:0', 'L1:1'])\n");
	CHECK_INT(cJSON_GetArraySize(json_get(t, "notices")), 0);
	CHECK_CONTAINS(o.err, "--- turn 1 code");
	CHECK_CONTAINS(o.err, "--- [d1 n1] turn 1 code");
	CHECK_CONTAINS(o.err, "rlm: [d1 n2] sandbox: ");
	cJSON_Delete(j);
	proc_out_release(&o);

	/* --max-depth 1: the two prompts are plain calls (the default reply) */
	body = fakesrv_chat_body("```repl\nrs = rlm_query_batched(['L1:0', 'L1:1'])\n"
				 "answer['content'] = str(len(rs))\nanswer['ready'] = True\n```",
				 "stop", 100, 10);
	r.body = body;
	fakesrv_push(srv, &r);
	free(body);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--model", "m", "--base-url", url,
				   "--max-depth", "1", "--json", "--no-trajectory", "--quiet", NULL};
		o = rlm(a, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "answer"), "2");
	CHECK(json_get(j, "turns") == NULL);
	CHECK(json_num(j, "nodes", -1) == 0);
	CHECK(json_num(j, "max_depth", -1) == 1);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "children")), 0);
	CHECK(json_num(json_get(j, "calls"), "sub", 0) == 2);
	cJSON_Delete(j);
	proc_out_release(&o);
	fakesrv_stop(srv);
	free(ok);
}

TEST(recursion_options_are_checked)
{
	char *ok = path_in_tmp("ok.txt");
	struct proc_out o;
	write_text(ok, "hello\n", 6);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--max-depth", "0", NULL};
		o = rlm(a, NULL);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '0' for --max-depth: want 1..16");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--max-nodes", "2000", NULL};
		o = rlm(a, NULL);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '2000' for --max-nodes: want 1..1024");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", NULL};
		const char *env[] = {"RLM_MAX_DEPTH=deep", NULL};
		o = rlm_env(a, NULL, env);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value 'deep' for RLM_MAX_DEPTH: want 1..16");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--json", "--quiet", NULL};
		const char *env[] = {"RLM_MAX_DEPTH=3", "RLM_MAX_NODES=4", NULL};
		o = rlm_env(a, NULL, env);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "\"max_depth\":\t3");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "--help", NULL};
		o = rlm(a, NULL);
	}
	CHECK_CONTAINS(o.out, "--max-depth N");
	CHECK_CONTAINS(o.out, "--max-nodes N");
	CHECK_CONTAINS(o.out, "--max-calls N");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--max-calls", "0", NULL};
		o = rlm(a, NULL);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '0' for --max-calls: want a count > 0");
	proc_out_release(&o);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", NULL};
		const char *env[] = {"RLM_MAX_CALLS=-3", NULL};
		o = rlm_env(a, NULL, env);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '-3' for RLM_MAX_CALLS: want a count > 0");
	proc_out_release(&o);
	free(ok);
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
		snprintf(text, sizeof(text),
			 "Report %d.\nThe observers logged wind, cloud cover and temperature at "
			 "the harbour station every three hours.\nThe weather was %s that day.\n",
			 i, i == 17 ? "stormy with hail in Lisbon" : "mild");
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
	CHECK_CONTAINS(o.err, "rlm: warning: skipped 1 file: 1 binary (--verbose lists them)");
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", dir, "-q", "Where was there hail?", "--verbose",
				      NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "rlm: warning: skipping 'blob.bin': contains NUL bytes");
	proc_out_release(&o);
	/* The tree strategy, a part per file: the file that answered is the
	 * source, in --json and on stderr. */
	{
		const char *args[] = {"solve", "-c", dir, "-q", "Where was there hail?", "--strategy",
				      "tree", "--leaf-chars", "256", "--json", "--quiet", NULL};
		cJSON *j;
		char *t;
		o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		j = json_parse(o.out, strlen(o.out));
		CHECK_MSG(j, "not JSON: %s", o.out);
		CHECK_CONTAINS(json_str(j, "answer"), "Lisbon");
		t = json_print(json_get(j, "sources"));
		CHECK_STR(t, "[{\"doc\":\"doc17.txt\"}]");
		free(t);
		cJSON_Delete(j);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"solve", "-c", dir, "-q", "Where was there hail?", "--strategy",
				      "tree", "--leaf-chars", "256", "--quiet", NULL};
		o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.out, "Lisbon");
		CHECK_CONTAINS(o.err, "rlm: sources: doc17.txt\n");
		CHECK(strstr(o.out, "doc17") == NULL);
		proc_out_release(&o);
	}

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

/* Text in other encodings solves: UTF-16 (a mark), a UTF-8 mark, one
 * invalid byte (a warning naming the file), latin-1 with --encoding, and
 * a file gzip(1) compressed; the needle is found in each. */
TEST(solve_any_encoding)
{
	static const char body[] = "Minutes of the weekly meeting.\n"
				   "Item 1: the budget was approved.\n"
				   "Item 2: the caf\xc3\xa9 opens at the harbour of Valpara\xc3\xadso.\n"
				   "Item 3: the launch moved to the ninth of May.\n"
				   "Item 4: nothing else was decided.\n";
	static const struct {
		const char *name, *flag, *value, *warn;
	} cases[] = {
		{"u16.txt", NULL, NULL, NULL},
		{"bom.txt", NULL, NULL, NULL},
		{"bad.txt", NULL, NULL, "1 invalid UTF-8 byte replaced with U+FFFD"},
		{"l1.txt", "--encoding", "latin-1", NULL},
	};
	char *dir = path_in_tmp("enc");
	mkdir(dir, 0755);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *p = xasprintf("%s/%s", dir, cases[i].name), data[1024];
		size_t n = 0;
		uint32_t cp;
		struct proc_out o;
		const char *args[] = {"solve", "-c", p, "-q", "When is the launch?",
				      cases[i].flag, cases[i].value, NULL};
		for (size_t k = 0; k < sizeof(body) - 1;) {
			size_t len = text_utf8_decode(body + k, sizeof(body) - 1 - k, &cp);
			if (i == 0) { /* UTF-16LE with its mark */
				if (n == 0) {
					data[n++] = '\xff';
					data[n++] = '\xfe';
				}
				data[n++] = (char)(cp & 0xff);
				data[n++] = (char)(cp >> 8);
			} else if (i == 3) { /* latin-1 */
				data[n++] = (char)cp;
			} else {
				if (n == 0 && i == 1) {
					memcpy(data, "\xef\xbb\xbf", 3);
					n = 3;
				}
				memcpy(data + n, body + k, len);
				n += len;
				if (i == 2 && cp == '1')
					data[n++] = '\xa0'; /* a latin-1 byte in UTF-8 */
			}
			k += len;
		}
		write_text(p, data, n);
		o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "%s: exit %d: %s", cases[i].name, o.status, o.err);
		CHECK_MSG(strstr(o.out, "ninth of May") != NULL, "%s: %s", cases[i].name, o.out);
		CHECK(!strstr(o.out, "\xef\xbb\xbf")); /* no mark in the answer */
		if (cases[i].warn) {
			char *want = xasprintf("rlm: warning: %s: %s", p, cases[i].warn);
			CHECK_CONTAINS(o.err, want);
			free(want);
		} else {
			CHECK(!strstr(o.err, "warning"));
		}
		proc_out_release(&o);
		free(p);
	}
	/* gzip(1) output, read decompressed */
	if (access("/bin/gzip", X_OK) == 0) {
		char *p = xasprintf("%s/minutes.txt", dir), *gz = xasprintf("%s.gz", p),
		     *cmd = xasprintf("/bin/gzip -f %s", p);
		const char *args[] = {"solve", "-c", gz, "-q", "When is the launch?", NULL};
		struct proc_out o;
		write_text(p, body, sizeof(body) - 1);
		CHECK_INT(system(cmd), 0);
		o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "gzip: exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.out, "ninth of May");
		proc_out_release(&o);
		free(cmd);
		free(gz);
		free(p);
	}
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
		const char *a[] = {"solve", "-c", bin, "-q", "q?", "--strict-utf8", NULL};
		bad(a, NULL, 1, "invalid UTF-8");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--encoding", "klingon", NULL};
		bad(a, NULL, 2, "--encoding: unknown encoding 'klingon'");
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
		const char *a[] = {"bench", "gen", "nope", "--out", empty, NULL};
		bad(a, NULL, 2, "unknown suite 'nope'");
	}
	free(bin);
	free(jl);
	free(empty);
	free(ok);
}

/* --question-file: read once the options are good; the last of it and -q
 * wins; a missing file or a bad option after it is a usage error. */
TEST(question_file)
{
	char *ok = path_in_tmp("qf-ctx.txt"), *q = path_in_tmp("qf-q.txt");
	struct proc_out o;
	write_text(ok, "The magic number is 4711.\n", 26);
	write_text(q, "What is the magic number?\n", 26);
	{
		const char *a[] = {"solve", "-c", ok, "--question-file", q, "--quiet", NULL};
		o = rlm(a, NULL);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.out, "4711");
		proc_out_release(&o);
	}
	{
		/* -q after it wins: sim finds no color in the context */
		const char *a[] = {"solve", "-c", ok, "--question-file", q, "-q",
				   "What is the color?", "--quiet", NULL};
		o = rlm(a, NULL);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_STR(o.out, "NONE\n");
		proc_out_release(&o);
	}
	{
		const char *a[] = {"solve", "-c", ok, "--question-file", "/nonexistent/q", NULL};
		bad(a, NULL, 2, "cannot open '/nonexistent/q'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "--question-file", q, "--bogus", NULL};
		bad(a, NULL, 2, "unknown option '--bogus'");
	}
	free(ok);
	free(q);
}

/* --system-prompt, --system-extra, --setup-code and their --sub- forms
 * read files and reach the nodes they name: the root's code calls what
 * its setup defined, a child's what the sub setup did, and each node's
 * system prompt is the file's text (the root's with its extra). Bad
 * files are refused before any model call, naming the flag. */
TEST(solve_prompt_and_setup_files)
{
	struct fakesrv *srv = fakesrv_start();
	char *ok = path_in_tmp("ps-ctx.txt"), *sp = path_in_tmp("ps-system.txt"),
	     *ex = path_in_tmp("ps-extra.txt"), *su = path_in_tmp("ps-setup.py"),
	     *sx = path_in_tmp("ps-subextra.txt"), *ss = path_in_tmp("ps-subsetup.py"),
	     *empty = path_in_tmp("ps-empty.txt"), *latin = path_in_tmp("ps-latin.txt"), url[64],
	     *sys;
	static const char custom[] = "Tu es un modèle de test. Écris du code ```repl.";
	const char *role;
	struct proc_out o;
	cJSON *j;
	CHECK(srv);
	write_text(ok, "hello\n", 6);
	write_text(sp, custom, strlen(custom));
	write_text(ex, "shout(s) is defined for you.\n", 29);
	write_text(su, "def shout(s):\n    return s.upper() + '!'\nMAGIC = 42\n", 52);
	write_text(sx, "whisper(s) is defined for you.\n", 31);
	write_text(ss, "def whisper(s):\n    return '(' + s.lower() + ')'\n", 48);
	write_text(empty, "\n  \n", 4);
	write_text(latin, "caf\xe9\n", 5);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(srv));
	/* the child's turn: what its own setup defined, not the root's */
	says_always(srv, "```repl\nanswer['content'] = whisper(context) + "
			 "str('shout' in globals())\nanswer['ready'] = True\n```");
	says_full(srv,
		  "```repl\nanswer['content'] = shout(context.strip()) + str(MAGIC) + "
		  "rlm_query('KID')\nanswer['ready'] = True\n```",
		  "stop", 100, 10, 0);
	{
		const char *a[] = {"solve",	     "-c",	   ok,	 "-q", "q?", "--model", "m",
				   "--base-url",     url,	   "--no-cache",	"--json",
				   "--system-prompt", sp,	   "--system-extra",	ex,
				   "--setup-code",   su,	   "--sub-system-extra", sx,
				   "--sub-setup-code", ss,	   NULL};
		o = rlm(a, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "answer"), "HELLO!42(kid)False");
	cJSON_Delete(j);
	proc_out_release(&o);
	CHECK_INT(fakesrv_count(srv), 2);
	sys = message(srv, 0, 0, &role);
	CHECK_STR(role, "system");
	CHECK_MSG(strncmp(sys, custom, strlen(custom)) == 0, "root system: %s", sys);
	CHECK_CONTAINS(sys, "shout(s) is defined for you.");
	CHECK(!strstr(sys, "whisper"));
	free(sys);
	sys = message(srv, 1, 0, &role);
	CHECK_STR(role, "system");
	CHECK_MSG(strncmp(sys, custom, strlen(custom)) == 0, "child system: %s", sys);
	CHECK_CONTAINS(sys, "whisper(s) is defined for you.");
	CHECK(!strstr(sys, "shout"));
	free(sys);
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--system-prompt", empty, NULL};
		bad(a, NULL, 2, "-empty.txt' is empty");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--sub-system-extra", latin, NULL};
		bad(a, NULL, 2, "is not valid UTF-8 (byte 3)");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--setup-code", "/nonexistent/s.py",
				   NULL};
		bad(a, NULL, 2, "--setup-code: cannot open '/nonexistent/s.py'");
	}
	{
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "-s", "tree", "--setup-code", su,
				   NULL};
		bad(a, NULL, 2, "need the repl strategy");
	}
	CHECK_INT(fakesrv_count(srv), 2);
	fakesrv_stop(srv);
	free(ok);
	free(sp);
	free(ex);
	free(su);
	free(sx);
	free(ss);
	free(empty);
	free(latin);
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
/* A share of bytes of the file at path that are part of multi-byte UTF-8
 * sequences. */
static double multibyte_share(const char *path)
{
	char *text;
	size_t len, n = 0;
	struct rlm_err err = {0, ""};
	CHECK_INT(file_read(path, (size_t)1 << 30, &text, &len, &err), 0);
	for (size_t i = 0; i < len; i++)
		n += (unsigned char)text[i] >= 0x80;
	CHECK(text_utf8_valid(text, len, NULL));
	free(text);
	return len ? (double)n / (double)len : 0;
}

static void solve_repl(const char *size, bool http, const char *gen_flag)
{
	char *ctx, *q, *ans, url[64];
	struct proc_out o;
	cJSON *j;
	int port = 0;
	pid_t srv = 0;
	gen(size, gen_flag, &ctx, &q, &ans);
	if (gen_flag && strcmp(gen_flag, "--utf8") == 0) {
		double share = multibyte_share(ctx);
		fprintf(stderr, "  %.1f%% of the bytes in multi-byte characters\n", 100 * share);
		CHECK_MSG(share > 0.02, "%.3f%% of the bytes multi-byte", 100 * share);
	}
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

/* The 1 GB case of issue 18 at 9 MB with the same shape: at the default
 * depth the simulator's root hands the text to child RLMs, each of which
 * asks all its chunks in one llm_query_batched larger than the frame cap
 * (RLM_MAX_FRAME=256k standing in for 64 MiB). The batches go as several
 * frames and the password is found, where every child used to fail on
 * ValueError and the root answered NONE. Log lines, not the generator's. */
TEST(solve_children_batches_over_the_frame_cap)
{
	static const char *const words[] = {"pump",	"valve", "station", "pressure",
					    "reported", "nominal", "check",   "logged",
					    "cycle",	"routine", "crew",    "shift"};
	char *path = path_in_tmp("frame-cap.txt");
	struct buf b = BUF_INIT;
	struct proc_out o;
	const cJSON *kids, *k;
	cJSON *j;
	uint64_t x = 7;
	for (int i = 0; b.len < 9000000; i++) {
		if (i == 61234) {
			buf_puts(&b, "The launch password is tangerine-42.\n");
			continue;
		}
		buf_printf(&b, "Log %d:", i);
		for (int w = 0; w < 12; w++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			buf_printf(&b, " %s", words[(x >> 33) % ARRAY_SIZE(words)]);
		}
		buf_puts(&b, ".\n");
	}
	write_text(path, b.p, b.len);
	{
		const char *args[] = {"solve", "-c", path, "-q", "What is the launch password?",
				      "--json", "--quiet", "--no-cache", NULL};
		const char *env[] = {"RLM_MAX_FRAME=256k", NULL};
		o = rlm_env(args, NULL, env);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), "tangerine-42");
	CHECK_STR(json_str(j, "stop"), "answer");
	kids = json_get(j, "children");
	CHECK_MSG(cJSON_GetArraySize(kids) >= 8, "%d children", cJSON_GetArraySize(kids));
	cJSON_ArrayForEach(k, kids)
		CHECK_STR(json_str(k, "stop"), "answer");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", path, "-q", "q?", NULL};
		const char *env[] = {"RLM_MAX_FRAME=12", NULL};
		o = rlm_env(args, NULL, env);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '12' for RLM_MAX_FRAME: want 4096..1G bytes");
	proc_out_release(&o);
	buf_release(&b);
	free(path);
}

TEST(solve_repl_1M_in_process) { solve_repl("1M", false, NULL); }
TEST(solve_repl_1M_over_http) { solve_repl("1M", true, NULL); }
TEST(solve_repl_10M_in_process) { solve_repl("10M", false, NULL); }
TEST(solve_repl_10M_over_http) { solve_repl("10M", true, NULL); }
/* 10M tokens of multi-byte UTF-8 (2- to 4-byte sequences): the str the
 * worker decodes, the chunks cut by characters, the needle found. */
TEST(solve_repl_10M_utf8_in_process) { solve_repl("10M", false, "--utf8"); }

/* sim's root goes recursive past rlm_chunks chunks (128 by default; 4 here,
 * so 800 KB in 64,000-character chunks, 13 of them, is enough): child RLMs
 * at depth 1 map their pieces with sub-calls; over a str, a directory and
 * JSONL, with distractor needles too. */
TEST(solve_sim_recursive_text_dir_jsonl)
{
	static const char *const fmts[][4] = {
	    {"--seed", "11", NULL, NULL},
	    {"--format", "dir", "--docs", "40"},
	    {"--format", "jsonl", "--docs", "40"},
	    {"--distractors", "5", NULL, NULL},
	};
	static const char *const env[] = {"RLM_SIM=rlm_chunks=4", NULL};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		char *dir = path_in_tmp("genr"), *jl, *line, *ctx, *ans, *q;
		const char *args[] = {"bench", "gen",	  "sniah",    "--sizes",  "200k",
				      "--out", dir,	  fmts[f][0], fmts[f][1], fmts[f][2],
				      fmts[f][3], NULL};
		struct rlm_err err = {0, ""};
		struct proc_out o = rlm(args, NULL);
		cJSON *j, *kids;
		bool seen = false;
		size_t len;
		CHECK_MSG(o.status == 0, "bench gen failed: %s", o.err);
		proc_out_release(&o);
		jl = xasprintf("%s/sniah.jsonl", dir);
		CHECK_INT(file_read(jl, 1 << 20, &line, &len, &err), 0);
		j = json_parse(line, strcspn(line, "\n"));
		CHECK(j);
		ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
		q = xstrdup(json_str(j, "question"));
		ans = xstrdup(cJSON_GetArrayItem(json_get(j, "answer"), 0)->valuestring);
		cJSON_Delete(j);
		for (int flat = 0; flat < 2; flat++) {
			/* flat: --max-depth 1, where rlm_query is a plain call */
			const char *a[] = {"solve", "-c", ctx, "-q", q, "--json", "--quiet",
					   flat ? "--max-depth" : NULL, "1", NULL};
			o = rlm_env(a, NULL, env);
			CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
			j = json_parse(o.out, strlen(o.out));
			CHECK_MSG(j, "not JSON: %s", o.out);
			CHECK_CONTAINS(json_str(j, "answer"), ans);
			CHECK_STR(json_str(j, "stop"), "answer");
			kids = json_get(j, "children");
			if (flat) {
				CHECK(json_num(j, "nodes", -1) == 0);
				CHECK_INT(cJSON_GetArraySize(kids), 0);
				CHECK(json_num(j, "sub_calls", 0) >= 13);
			} else {
				CHECK(json_num(j, "nodes", 0) >= 2);
				CHECK(cJSON_GetArraySize(kids) >= 2);
				for (int i = 0; i < cJSON_GetArraySize(kids); i++) {
					cJSON *k = cJSON_GetArrayItem(kids, i);
					CHECK(json_num(k, "depth", 0) == 1);
					CHECK_STR(json_str(k, "question"), q);
					CHECK_STR(json_str(k, "stop"), "answer");
					CHECK(json_num(k, "sub_calls", 0) >= 1);
					CHECK_INT(cJSON_GetArraySize(json_get(k, "children")), 0);
					seen |= strstr(json_str(k, "answer"), ans) != NULL;
				}
				CHECK_MSG(seen, "no child found %s", ans);
			}
			cJSON_Delete(j);
			proc_out_release(&o);
		}
		free(line);
		free(jl);
		free(ctx);
		free(q);
		free(ans);
		free(dir);
	}
}

/* Depth 2 at 10M tokens (40 MB in 2,000 documents). sim's root groups the
 * documents into some 670 chunks of up to 64,000 characters; past
 * rlm_chunks (8 here) it hands 16 runs of documents (about 42 chunks'
 * worth each, context[a:b], passed on without a copy) to child RLMs, and
 * each child, whose list groups into those 42 chunks again, still past 8,
 * hands 7 runs of its own to children: depth 2 needs more than
 * 16 * rlm_chunks chunks at the root, and --max-depth 3 (at the default 2,
 * depth 1 is the last level, where rlm_query is a plain call). values > 1:
 * RULER's multi-value NIAH, the key's values in as many documents, among
 * distractor needles: every node answers with every value it found, and
 * the parents put them together. */
static void solve_depth2(const char *format, int values)
{
	static const char *const env[] = {"RLM_SIM=rlm_chunks=8", NULL};
	char *dir = path_in_tmp(format), *jl = xasprintf("%s/sniah.jsonl", dir), *line, *ctx;
	char nv[16];
	const char *q, *key;
	struct rlm_err err = {0, ""};
	struct proc_out o;
	cJSON *item, *j, *gold, *kids, *g;
	size_t len, grandkids = 0, finders = 0;
	int64_t t0 = time_now_ns();
	snprintf(nv, sizeof(nv), "%d", values);
	{
		const char *args[] = {"bench",	  "gen", "sniah",    "--sizes",	 "10M",	 "--seed",
				      "11",	  "--format", format, "--docs", "2000", "--values",
				      nv,	  "--distractors", "5", "--out", dir,	   NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "bench gen failed: %s", o.err);
	proc_out_release(&o);
	CHECK_INT(file_read(jl, 1 << 20, &line, &len, &err), 0);
	item = json_parse(line, strcspn(line, "\n"));
	CHECK(item);
	ctx = xasprintf("%s/%s", dir, json_str(item, "context_path"));
	q = json_str(item, "question");
	key = json_str(item, "key");
	gold = json_get(item, "answer");
	CHECK_INT(cJSON_GetArraySize(gold), values);
	fprintf(stderr, "  generated in %.2f s\n", (double)(time_now_ns() - t0) / 1e9);
	t0 = time_now_ns();
	{
		const char *a[] = {"solve",	  "-c", ctx, "-q", q, "--max-depth", "3", "--json",
				   "--quiet", NULL};
		o = rlm_env(a, NULL, env);
	}
	fprintf(stderr, "  solved in %.2f s\n", (double)(time_now_ns() - t0) / 1e9);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "stop"), "answer");
	CHECK(json_num(j, "max_depth", -1) == 3);
	cJSON_ArrayForEach(g, gold)
		CHECK_CONTAINS(json_str(j, "answer"), g->valuestring);
	{
		/* every line of the answer is about the key: no distractor */
		char *a = xstrdup(json_str(j, "answer")), *save = NULL;
		int n = 0;
		for (char *l = strtok_r(a, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++)
			CHECK_MSG(strstr(l, key), "a line of the answer is not about %s: %s", key, l);
		CHECK_INT(n, values);
		free(a);
	}
	kids = json_get(j, "children");
	CHECK_INT(cJSON_GetArraySize(kids), 16);
	for (int i = 0; i < cJSON_GetArraySize(kids); i++) {
		cJSON *k = cJSON_GetArrayItem(kids, i), *gk = json_get(k, "children");
		bool found = false;
		CHECK(json_num(k, "depth", 0) == 1);
		CHECK_STR(json_str(k, "stop"), "answer");
		CHECK_MSG(cJSON_GetArraySize(gk) >= 2, "child %d has %d children", i,
			  cJSON_GetArraySize(gk));
		for (int m = 0; m < cJSON_GetArraySize(gk); m++) {
			cJSON *x = cJSON_GetArrayItem(gk, m);
			CHECK(json_num(x, "depth", 0) == 2);
			CHECK_STR(json_str(x, "question"), q);
			CHECK_STR(json_str(x, "stop"), "answer");
			CHECK(json_num(x, "sub_calls", 0) >= 1);
			CHECK_INT(cJSON_GetArraySize(json_get(x, "children")), 0);
			grandkids++;
		}
		cJSON_ArrayForEach(g, gold)
			found |= strstr(json_str(k, "answer"), g->valuestring) != NULL;
		finders += found;
	}
	CHECK_MSG(grandkids >= 16 * 7 - 8, "%zu grandchildren", grandkids);
	CHECK(json_num(j, "nodes", 0) == 16 + (double)grandkids);
	/* values in distinct documents: more than one child found some */
	CHECK(finders >= (values > 1 ? 2u : 1u));
	cJSON_Delete(j);
	cJSON_Delete(item);
	proc_out_release(&o);
	free(ctx);
	free(line);
	free(jl);
	free(dir);
}

TEST(solve_sim_depth2_10M_dir) { solve_depth2("dir", 1); }
TEST(solve_sim_depth2_10M_jsonl) { solve_depth2("jsonl", 1); }
TEST(solve_sim_depth2_10M_multi_value_dir) { solve_depth2("dir", 4); }
TEST(solve_sim_depth2_10M_multi_value_jsonl) { solve_depth2("jsonl", 4); }

/* --max-depth counts levels of RLMs: at the default 2 the root's children
 * are the last level, where rlm_query is a plain call, so they map their
 * pieces flat however many chunks they hold; at 3 they recurse. 4 MB, 63
 * chunks, rlm_chunks=2: 16 children of 4 chunks, each past 2. */
TEST(solve_sim_depth2_needs_max_depth_3)
{
	static const char *const env[] = {"RLM_SIM=rlm_chunks=2", NULL};
	char *ctx, *q, *ans;
	gen("1M", "--values=3", &ctx, &q, &ans);
	for (int deep = 0; deep < 2; deep++) {
		const char *a[] = {"solve",	 "-c",	  ctx, "-q", q, "--json", "--quiet",
				   deep ? "--max-depth" : NULL, "3", NULL};
		struct proc_out o = rlm_env(a, NULL, env);
		cJSON *j, *kids;
		size_t grandkids = 0;
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		j = json_parse(o.out, strlen(o.out));
		CHECK_MSG(j, "not JSON: %s", o.out);
		CHECK_STR(json_str(j, "stop"), "answer");
		CHECK_CONTAINS(json_str(j, "answer"), ans);
		CHECK(json_num(j, "max_depth", -1) == (deep ? 3 : 2));
		kids = json_get(j, "children");
		CHECK_INT(cJSON_GetArraySize(kids), 16);
		for (int i = 0; i < cJSON_GetArraySize(kids); i++) {
			cJSON *gk = json_get(cJSON_GetArrayItem(kids, i), "children"), *x;
			CHECK(json_num(cJSON_GetArrayItem(kids, i), "sub_calls", 0) >= 1);
			cJSON_ArrayForEach(x, gk)
			{
				CHECK(json_num(x, "depth", 0) == 2);
				grandkids++;
			}
		}
		if (deep)
			CHECK(grandkids >= 16 * 2);
		else
			CHECK_INT(grandkids, 0);
		/* the trajectory of every level: the simulator's real code and
		 * what the REPL printed of it */
		for (cJSON *n = j; n; n = cJSON_GetArrayItem(json_get(n, "children"), 0)) {
			cJSON *turns = json_get(n, "turns"), *b;
			int depth = (int)json_num(n, "depth", 0);
			CHECK_MSG(cJSON_GetArraySize(turns) >= 3, "%d turns at depth %d",
				  cJSON_GetArraySize(turns), depth);
			b = cJSON_GetArrayItem(json_get(cJSON_GetArrayItem(turns, 1), "blocks"), 0);
			CHECK_CONTAINS(json_str(b, "code"), "# step 2: ask every chunk of the context");
			CHECK_CONTAINS(json_str(b, "output"),
				       depth < (deep ? 2 : 1) ? "child RLMs" : "chunks,");
		}
		CHECK(json_num(j, "nodes", 0) == 16 + (double)grandkids);
		cJSON_Delete(j);
		proc_out_release(&o);
	}
	free(ctx);
	free(q);
	free(ans);
}

/* The node under n that met limit `stop` itself (the others that stopped
 * on it say in which child it was met), or NULL. */
static cJSON *met_limit(cJSON *n, const char *stop)
{
	cJSON *c, *f;
	cJSON_ArrayForEach(c, json_get(n, "children"))
	{
		const char *d = json_str(c, "stop_detail");
		if (strcmp(json_str(c, "stop"), stop) == 0 && d && !strstr(d, "(in child RLM"))
			return c;
		if ((f = met_limit(c, stop)))
			return f;
	}
	return NULL;
}

/* A price file makes the simulator cost money (it is free otherwise), and
 * --max-cost is spent deep in a depth-2 tree ($141 in all at $100 per
 * million tokens): the whole solve stops there, exit 3, with the reason
 * and where it was met, and no more spent than the budget. */
TEST(solve_sim_cost_budget_spent_deep)
{
	static const char *const env[] = {"RLM_SIM=rlm_chunks=2", NULL};
	char *ctx, *q, *ans, *prices = path_in_tmp("prices.json");
	struct proc_out o;
	cJSON *j, *deep;
	gen("1M", "--values=3", &ctx, &q, &ans);
	{
		static const char price[] = "{\"sim\": {\"input\": 100, \"output\": 100}}";
		write_text(prices, price, sizeof(price) - 1);
	}
	{
		const char *a[] = {"solve", "-c",     ctx,	  "-q",	      q,    "--max-depth", "3",
				   "--prices", prices, "--max-cost", "60", "--json", "--quiet", NULL};
		o = rlm_env(a, NULL, env);
	}
	CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_STR(json_str(j, "stop"), "max_cost");
	CHECK_CONTAINS(json_str(j, "stop_detail"), "cost budget exhausted ($");
	CHECK_CONTAINS(json_str(j, "stop_detail"), "(in child RLM");
	CHECK_MSG(json_num(j, "cost_usd", 0) > 30 && json_num(j, "cost_usd", 0) <= 60.5,
		  "cost $%.4f", json_num(j, "cost_usd", 0));
	deep = met_limit(j, "max_cost");
	CHECK_MSG(deep, "no child met the limit: %s", json_str(j, "stop_detail"));
	CHECK(json_num(deep, "depth", 0) >= 1);
	fprintf(stderr, "  $%.2f spent of $60; met in node %d at depth %d\n",
		json_num(j, "cost_usd", 0), (int)json_num(deep, "node", 0),
		(int)json_num(deep, "depth", 0));
	cJSON_Delete(j);
	proc_out_release(&o);
	free(prices);
	free(ctx);
	free(q);
	free(ans);
}

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
	for (int by_env = 0; by_env < 2; by_env++) {
		/* the probe, then step 2's calls: the third model call is refused */
		const char *args[] = {"solve", "-c", ctx, "-q", q, "--json", "--quiet",
				      by_env ? NULL : "--max-calls", "2", NULL};
		const char *env[] = {"RLM_MAX_CALLS=2", NULL};
		o = rlm_env(args, NULL, by_env ? env : NULL);
		CHECK_MSG(o.status == 3, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.err, "stopped (max_calls): call budget exhausted (2 of 2 model calls "
				      "made)");
		j = json_parse(o.out, strlen(o.out));
		CHECK_MSG(j, "not JSON: %s", o.out);
		CHECK_STR(json_str(j, "stop"), "max_calls");
		CHECK(json_num(json_get(j, "calls"), "total", -1) == 2);
		cJSON_Delete(j);
		proc_out_release(&o);
	}
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

/* A question for the first N terms of a sequence is computed by the
 * simulator's code in the REPL (sim/sim_compute.c), whatever the context;
 * one that only looks like it ("the first two prime suspects") is read
 * from the text as any other. */
TEST(solve_computes_a_sequence_the_question_asks_for)
{
	static const char text[] = "The report names the first two prime suspects: Ada Byron "
				   "and Grace Hopper.\nThe weather was fine.\n";
	static const struct {
		const char *q, *want;
	} cases[] = {
	    {"Print me the first 100 powers of two, each on a newline.",
	     "1\n2\n4\n8\n16\n"},
	    {"List the first twelve prime numbers.", "2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37\n"},
	    {"What are the first one hundred squares?", ", 9801, 10000\n"},
	    {"the first 5 multiples of 7, one per line", "7\n14\n21\n28\n35\n"},
	    {"Who are the first two prime suspects?", "Ada Byron and Grace Hopper"},
	};
	char *ctx = path_in_tmp("seq.txt");
	write_text(ctx, text, sizeof(text) - 1);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *args[] = {"solve", "-c", ctx, "-q", cases[i].q, "--quiet", NULL};
		struct proc_out o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "%s: exit %d: %s", cases[i].q, o.status, o.err);
		CHECK_CONTAINS(o.out, cases[i].want);
		if (i == 0) {
			/* 2**0 .. 2**99, one a line */
			CHECK_CONTAINS(o.out, "\n633825300114114700748351602688\n");
			CHECK_MSG(!strstr(o.out, "1267650600228229401496703205376"), "2**100: %s",
				  o.out);
			CHECK_MSG(strspn(o.out, "0123456789\n") == strlen(o.out), "not numbers: %s",
				  o.out);
		}
		proc_out_release(&o);
	}
	free(ctx);
}

/* Structured contexts through the real binary: a .json file is its value
 * in the REPL, a CSV table a list of dicts; the tree strategy and the
 * simulator read their JSON text and answer from it. */
TEST(structured_contexts_end_to_end)
{
	static const char json[] = "{\"facts\": [\"The door is green.\", \"The sky is blue.\"],"
				   " \"n\": 2}\n";
	static const char csv[] = "id,fact\r\nd1,\"The door is green.\"\r\nd2,\"The sky, at noon, "
				  "is blue.\"\r\n";
	char *j = path_in_tmp("data.json"), *c = path_in_tmp("data.csv");
	struct proc_out o;
	write_text(j, json, sizeof(json) - 1);
	write_text(c, csv, sizeof(csv) - 1);
	{
		const char *args[] = {"repl", "-c", j, "--quiet", NULL};
		o = rlm(args, "print(type(context).__name__)\n# %%\nprint(context['facts'][1])\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.out, "dict\nThe sky is blue.\n");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", c, "--quiet", NULL};
		o = rlm(args, "print(type(context).__name__, type(context[0]).__name__)\n# %%\n"
			      "print(context[1]['fact'])\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.out, "list dict\nThe sky, at noon, is blue.\n");
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", j, "-q", "What is the door?", "-s", "tree",
				      "--quiet", "--no-cache", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "green");
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", c, "-q", "What is the door?", "--quiet",
				      "--no-cache", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "green");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", c, "--quiet", "--format", "xml", NULL};
		o = rlm(args, "");
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "known: auto, text, dir, jsonl, json, csv");
	proc_out_release(&o);
	free(j);
	free(c);
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
	CHECK_CONTAINS(o.out, "27\nREPL variables: x: int\n28\n");
	CHECK_CONTAINS(o.out, "green");
	CHECK_CONTAINS(o.out, "ZeroDivisionError");
	proc_out_release(&o);
	free(ok);
}

/* rlm_query in `rlm repl` runs a child RLM over the context it is given
 * (the REPL is the node at depth 0); at --max-depth 1 it is a plain
 * sub-call, which answers too. */
TEST(repl_command_runs_child_rlms)
{
	static const char text[] = "The door is green.\nThe sky is blue.\n";
	char *ok = path_in_tmp("repl-child.txt");
	const char *depth[] = {"2", "1"};
	write_text(ok, text, sizeof(text) - 1);
	for (size_t i = 0; i < ARRAY_SIZE(depth); i++) {
		const char *args[] = {"repl", "-c", ok, "--quiet", "--max-depth", depth[i], NULL};
		struct proc_out o = rlm(args, "print(rlm_query('What is the sky?', context=context))\n");
		CHECK_MSG(o.status == 0, "--max-depth %s: exit %d: %s", depth[i], o.status, o.err);
		CHECK_STR(o.out, "The sky is blue.\n");
		proc_out_release(&o);
	}
	free(ok);
}

/* `rlm repl --setup-code FILE` runs the file before the first cell, its
 * output unseen, and again before the next cell after the worker died;
 * an exception in it exits 1 saying so; --system-extra (a root's) is
 * refused, naming what the children take. */
TEST(repl_command_runs_setup_code)
{
	static const char setup[] = "print('setting up')\nimport collections\n"
				    "def top(c, n):\n    return collections.Counter(c.split())"
				    ".most_common(n)\nRUNS = globals().get('RUNS', 0) + 1\n";
	char *ok = path_in_tmp("repl-setup.txt"), *code = path_in_tmp("setup.py");
	char *bad_code = path_in_tmp("setup-bad.py");
	struct proc_out o;
	write_text(ok, "b a b c b a\n", 12);
	write_text(code, setup, sizeof(setup) - 1);
	write_text(bad_code, "x = 1\nraise KeyError('no such thing')\n", 38);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--setup-code", code, NULL};
		o = rlm(args, "print(top(context, 2), RUNS)\n# %%\nimport os\nos._exit(3)\n"
			      "# %%\nprint(top(context, 1), RUNS)\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "[('b', 3), ('a', 2)] 1\n");
	CHECK_CONTAINS(o.out, "the worker died (exit status 3)");
	/* the new worker ran it once: RUNS starts again at 1 */
	CHECK_CONTAINS(o.out, "[('b', 3)] 1\n");
	CHECK_MSG(!strstr(o.out, "setting up"), "setup output shown: %s", o.out);
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--setup-code", bad_code, NULL};
		o = rlm(args, "print('ran')\n");
	}
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "setup code raised: KeyError: 'no such thing'");
	CHECK_MSG(!strstr(o.out, "ran"), "a cell ran: %s", o.out);
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--system-extra", code, NULL};
		o = rlm(args, "1\n");
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "--sub-system-extra");
	proc_out_release(&o);
	free(ok);
	free(code);
	free(bad_code);
}

/* `rlm repl --max-nodes N` (and RLM_MAX_NODES) reaches the children it
 * runs: with 1 they run one at a time and all answer; a bad value is a
 * usage error. (test_recursion checks the cap itself.) */
TEST(repl_command_takes_max_nodes)
{
	static const char text[] = "The door is green.\nThe sky is blue.\nThe car is red.\n";
	char *ok = path_in_tmp("repl-nodes.txt");
	struct proc_out o;
	write_text(ok, text, sizeof(text) - 1);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--max-nodes", "1", NULL};
		o = rlm(args, "print(rlm_query_batched(['What is the %s?' % w for w in "
			      "('door', 'sky', 'car')], contexts=[context] * 3))\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.out, "['The door is green.', 'The sky is blue.', 'The car is red.']\n");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--max-nodes", "0", NULL};
		o = rlm(args, "1\n");
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "max-nodes");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", NULL};
		const char *env[] = {"RLM_MAX_NODES=lots", NULL};
		o = rlm_env(args, "1\n", env);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value 'lots' for RLM_MAX_NODES: want 1..1024");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "--help", NULL};
		o = rlm(args, NULL);
	}
	CHECK_CONTAINS(o.out, "--max-nodes N");
	proc_out_release(&o);
	free(ok);
}

/* --sub-context-window N states the sub-model's window: a sub-call over
 * it is refused before it is sent, with both sizes; a bad value is a
 * usage error. */
TEST(sub_context_window_flag)
{
	char *ok = path_in_tmp("repl-window.txt");
	struct proc_out o;
	write_text(ok, "The door is green.\n", 19);
	{
		const char *args[] = {"repl", "-c", ok, "--quiet", "--sub-context-window", "1k", NULL};
		o = rlm(args, "print(llm_query('x' * 10000))\n# %%\nprint(llm_query('Question: "
			      "What is the door?\\nText:\\n' + context))\n");
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "Error: prompt not sent: it is about 2,500 tokens (10,000 characters, "
			      "estimated at ~4 characters a token), over the 1,000-token context "
			      "window of 'sim'");
	CHECK_CONTAINS(o.out, "green");
	proc_out_release(&o);
	{
		const char *args[] = {"repl", "-c", ok, "--sub-context-window", "12", NULL};
		o = rlm(args, "1\n");
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '12' for --sub-context-window: want 1000..100M tokens");
	proc_out_release(&o);
	free(ok);
}

/* Compaction from the command line: a 100-turn solve over a log with a
 * small window is compacted and answers (--json says how many times);
 * with --no-compaction it overflows the window; a bad threshold is a
 * usage error; every solving command has the flags. */
TEST(compaction_flags)
{
	char *ctx = path_in_tmp("compact-log.txt");
	struct buf b = BUF_INIT;
	struct proc_out o;
	cJSON *j;
	for (int i = 0; i < 700; i++) {
		if (i == 433)
			buf_puts(&b, "2024-03-19 ops: The rotation key for cluster Tamsin is ZQ-5521.\n");
		buf_printf(&b, "2024-03-%02d host-%d: request %d served in %d ms\n", 1 + i % 28,
			   i % 17, i * 7, 3 + i % 91);
	}
	write_text(ctx, b.p, b.len);
	buf_release(&b);
	for (int off = 0; off < 2; off++) {
		const char *args[] = {"solve", "-c", ctx, "-q",
				      "What is the rotation key for cluster Tamsin?", "--json",
				      "--quiet", "--no-cache", "--sim", "explore=100,window=8000",
				      "--sub-context-window", "8000", "--max-iterations", "120",
				      off ? "--no-compaction" : "--compaction-threshold",
				      off ? NULL : "0.8", NULL};
		o = rlm(args, NULL);
		j = json_parse(o.out, strlen(o.out));
		CHECK_MSG(j, "not JSON: %s %s", o.out, o.err);
		if (!off) {
			CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
			CHECK_CONTAINS(json_str(j, "answer"), "ZQ-5521");
			CHECK(json_num(json_get(j, "repl"), "iterations", 0) > 100);
			CHECK(json_num(json_get(j, "repl"), "compactions", 0) >= 2);
		} else {
			CHECK(o.status != 0);
			CHECK_STR(json_str(j, "stop"), "error");
			CHECK_CONTAINS(json_str(j, "stop_detail"),
				       "maximum context length is 8000 tokens");
			CHECK_INT(json_num(json_get(j, "repl"), "compactions", -1), 0);
		}
		cJSON_Delete(j);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"solve", "-c", ctx, "-q", "q?", "--compaction-threshold", "0",
				      NULL};
		o = rlm(args, NULL);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "bad value '0' for --compaction-threshold: want a fraction of the "
			      "context window in (0, 1]");
	proc_out_release(&o);
	{
		static const char *const cmds[][3] = {{"solve", "--help", NULL},
						      {"serve", "--help", NULL},
						      {"mcp", "--help", NULL},
						      {"bench", "run", "--help"}};
		for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
			const char *args[] = {cmds[i][0], cmds[i][1], cmds[i][2], NULL};
			o = rlm(args, NULL);
			CHECK_CONTAINS(o.out, "--compaction-threshold F");
			CHECK_CONTAINS(o.out, "--no-compaction");
			proc_out_release(&o);
		}
	}
	free(ctx);
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

/* `rlm doctor` in text says what `rlm doctor --json` says, on whatever this
 * machine has (root or not, any Landlock ABI, user namespaces or not):
 * every layer on, or off with its reason, the same checks with the same
 * marks, and a result line that matches the exit status. Seccomp is
 * mandatory, so the doctor passes on any machine the tests run on. */
TEST(doctor_text_matches_json)
{
	struct proc_out o, oj;
	const char *args[] = {"doctor", NULL}, *jargs[] = {"doctor", "--json", NULL};
	cJSON *j, *sb, *ly, *c;
	char want[400];
	int abi;
	oj = rlm(jargs, NULL);
	CHECK_MSG(oj.status == 0, "exit %d: %s%s", oj.status, oj.out, oj.err);
	j = json_parse(oj.out, strlen(oj.out));
	CHECK_MSG(j, "not JSON: %s", oj.out);
	sb = json_get(j, "sandbox");
	ly = json_get(sb, "layers");
	CHECK(cJSON_IsTrue(json_get(ly, "seccomp")));
	CHECK(cJSON_IsTrue(json_get(j, "ok")));
	o = rlm(args, NULL);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	snprintf(want, sizeof(want), "status    %s\n", json_str(sb, "line"));
	CHECK_CONTAINS(o.out, want);
	for (size_t i = 0; i < ARRAY_SIZE(layers); i++) {
		const cJSON *l = json_get(ly, layers[i]);
		CHECK_MSG(l, "no layer %s in %s", layers[i], oj.out);
		if (cJSON_IsTrue(l))
			snprintf(want, sizeof(want), "\n  %-10s on", layers[i]);
		else
			snprintf(want, sizeof(want), "\n  %-10s off   %s\n", layers[i],
				 cJSON_GetStringValue(l));
		CHECK_CONTAINS(o.out, want);
	}
	CHECK_CONTAINS(o.out, "python    /usr/bin/python3 (Python 3.");
	abi = (int)json_num(sb, "landlock_abi", -1);
	if (abi > 0)
		snprintf(want, sizeof(want), "\nlandlock  ABI %d%s\n", abi,
			 cJSON_IsTrue(json_get(ly, "landlock")) ? "" : " (not applied)");
	else
		snprintf(want, sizeof(want), "\nlandlock  none in this kernel\n");
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), "identity  uid %.0f, gid %.0f", json_num(sb, "uid", -1),
		 json_num(sb, "gid", -1));
	CHECK_CONTAINS(o.out, want);
	/* root runs the worker as nobody; anyone else as themselves */
	CHECK(json_num(sb, "uid", -1) == (geteuid() == 0 ? 65534 : (double)geteuid()));
	snprintf(want, sizeof(want), "\nfs        %s\n", json_str(sb, "fs"));
	CHECK_CONTAINS(o.out, want);
	CHECK(cJSON_GetArraySize(json_get(j, "checks")) == 16);
	cJSON_ArrayForEach(c, json_get(j, "checks"))
	{
		snprintf(want, sizeof(want), "  %-4s  %-40s  %s (", json_str(c, "mark"),
			 json_str(c, "what"), json_str(c, "result"));
		CHECK_CONTAINS(o.out, want);
		CHECK_MSG(strcmp(json_str(c, "mark"), "FAIL") != 0, "check %s failed: %s",
			  json_str(c, "name"), json_str(c, "detail"));
	}
	CHECK_CONTAINS(o.out, "OK    TCP connect to 127.0.0.1:9");
	CHECK_CONTAINS(o.out, "OK    os.fork()");
	CHECK_CONTAINS(o.out, "OK    write a file in the scratch directory");
	CHECK_CONTAINS(o.out, "OK    start a thread");
	if (cJSON_GetArraySize(json_get(j, "warnings")) == 0) {
		CHECK_CONTAINS(o.out, "\nresult: OK: seccomp is on");
		CHECK(strstr(o.out, "WARN") == NULL);
	} else {
		CHECK_CONTAINS(o.out, "\nresult: OK with warnings: ");
	}
	CHECK(strstr(o.err, "BREACH") == NULL);
	cJSON_Delete(j);
	proc_out_release(&o);
	proc_out_release(&oj);
	check_no_probe_left();
}

/* An interpreter that runs with no room to write files (RLIMIT_FSIZE 0,
 * set by a wrapper script): the scratch check fails, and the doctor says
 * so in every way it can. Landlock is off so that the wrapper may be run
 * from the test's directory on any kernel. */
TEST(doctor_failed_check_exits_1)
{
	char *py;
	struct proc_out o;
	cJSON *j, *c;
	bool seen = false;
	static const char wrapper[] = "#!/bin/sh\nulimit -f 0\nexec /usr/bin/python3 \"$@\"\n";
	/* the worker runs as nobody when we are root: let it in */
	CHECK_INT(chmod(harness_tmpdir(), 0755), 0);
	py = path_in_tmp("python-nofsize");
	write_text(py, wrapper, sizeof(wrapper) - 1);
	CHECK_INT(chmod(py, 0755), 0);
	{
		const char *args[] = {"doctor", "--python", py, "--sandbox-disable", "landlock",
				      NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 1, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\n  FAIL  write a file in the scratch directory     blocked (");
	CHECK_CONTAINS(o.out, "\nresult: NOT OK: write a file in the scratch directory: blocked (");
	CHECK_CONTAINS(o.out, "but model code needs it\n");
	CHECK_CONTAINS(o.err, "rlm: error: write a file in the scratch directory failed in the "
			      "sandbox (");
	CHECK(strstr(o.err, "BREACH") == NULL);
	proc_out_release(&o);
	{
		const char *args[] = {"doctor", "--json", "--python", py, "--sandbox-disable",
				      "landlock", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 1, "exit %d: %s%s", o.status, o.out, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK(cJSON_IsFalse(json_get(j, "ok")));
	CHECK_INT(json_num(j, "exit", -1), 1);
	CHECK_CONTAINS(json_str(j, "problem"), "write a file in the scratch directory");
	CHECK_STR(json_str(json_get(j, "python"), "path"), py);
	cJSON_ArrayForEach(c, json_get(j, "checks"))
	{
		if (strcmp(json_str(c, "name"), "scratch") != 0)
			continue;
		CHECK_STR(json_str(c, "mark"), "FAIL");
		CHECK_STR(json_str(c, "expected"), "allowed");
		seen = true;
	}
	CHECK(seen);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(py);
	check_no_probe_left();
}

/* Without Landlock or a mount namespace a write to /tmp gets through, and
 * no active layer promised to stop it: WARN, and the result says so while
 * the exit status stays 0. */
TEST(doctor_warns_but_passes)
{
	struct proc_out o;
	cJSON *j, *w;
	const char *args[] = {"doctor", "--sandbox-disable", "landlock,userns", NULL};
	const char *jargs[] = {"doctor", "--json", "--sandbox-disable", "landlock,userns", NULL};
	struct stat st;
	if (stat("/tmp", &st) || !(st.st_mode & S_IWOTH))
		SKIP("/tmp is not world-writable");
	o = rlm(args, NULL);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\n  WARN  write a file in /tmp (outside scratch)    allowed (");
	CHECK_CONTAINS(o.out, "\nresult: OK with warnings: seccomp is on and every promise "
			      "holds, but no active layer stops: ");
	CHECK_CONTAINS(o.out, "write a file in /tmp (outside scratch)");
	CHECK_CONTAINS(o.err, "rlm: warning: write a file in /tmp (outside scratch) is allowed");
	CHECK(strstr(o.out, "FAIL") == NULL);
	proc_out_release(&o);
	o = rlm(jargs, NULL);
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK(cJSON_IsTrue(json_get(j, "ok")));
	w = json_get(j, "warnings");
	CHECK(cJSON_IsArray(w));
	{
		/* tmp among them (with os.stat of host paths and the thread
		 * cap: no pivot, no user namespace). */
		bool tmp = false;
		cJSON *x;
		cJSON_ArrayForEach(x, w)
		{
			tmp |= strcmp(cJSON_GetStringValue(x), "tmp") == 0;
		}
		CHECK_MSG(tmp, "warnings: %s", o.out);
	}
	cJSON_Delete(j);
	proc_out_release(&o);
	check_no_probe_left();
}

/* As root, identity off (which takes --unsafe-no-sandbox) means the code
 * runs as root: WARN rows for what only the uid kept from it, and exit 1. */
TEST(doctor_as_root_without_identity)
{
	struct proc_out o;
	const char *args[] = {"doctor", "--sandbox-disable", "identity,landlock,userns",
			      "--unsafe-no-sandbox", NULL};
	if (geteuid() != 0)
		SKIP("needs root");
	o = rlm(args, NULL);
	CHECK_MSG(o.status == 1, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\n  identity   off   disabled by request\n");
	CHECK_CONTAINS(o.out, "\n  WARN  read /etc/shadow  ");
	CHECK_CONTAINS(o.out, "\n  WARN  list /root  ");
	CHECK_CONTAINS(o.out, "\n  WARN  read the controller's /proc/PID/environ   allowed (");
	CHECK_CONTAINS(o.out, "\n  OK    os.fork()  ");
	CHECK_CONTAINS(o.out, "\nresult: NOT OK: identity is off (disabled by request): the "
			      "model's code runs as root\n");
	CHECK_CONTAINS(o.err, "rlm: WARNING: --unsafe-no-sandbox");
	CHECK_CONTAINS(o.err, "rlm: warning: read /etc/shadow is allowed");
	CHECK_CONTAINS(o.err, "rlm: error: identity is off (disabled by request): the model's "
			      "code runs as root");
	CHECK(strstr(o.out, "FAIL") == NULL);
	proc_out_release(&o);
	check_no_probe_left();
}

/* What identity promises follows the files' modes: with a /root of 0755
 * and a world-readable /etc/shadow (bind-mounted over the real ones in a
 * mount namespace of its own), reading them is a WARN, not a breach.
 * Without pivot, which would hide both. */
TEST(doctor_identity_follows_file_modes)
{
	char *dir, *file, *script;
	struct proc_out o;
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0)
		SKIP("needs root and /usr/bin/unshare");
	dir = path_in_tmp("open-root");
	file = path_in_tmp("open-shadow");
	CHECK_INT(mkdir(dir, 0755), 0);
	CHECK_INT(chmod(dir, 0755), 0);
	write_text(file, "nobody:*:1:0:99999:7:::\n", 24);
	CHECK_INT(chmod(file, 0644), 0);
	script = xasprintf("mount --make-rprivate / && mount --bind '%s' /root && "
			   "mount --bind '%s' /etc/shadow && exec '%s' doctor "
			   "--sandbox-disable landlock,pivot",
			   dir, file, harness_rlm_bin());
	{
		const char *argv[] = {"/usr/bin/unshare", "-m", "/bin/sh", "-c", script, NULL};
		const char *env[] = {"RLM_SANDBOX_DISABLE", NULL};
		CHECK_INT(proc_run(argv, NULL, env, 120, &o), 0);
	}
	if (strstr(o.err, "unshare failed") || strstr(o.err, "mount: ")) {
		/* The reason quotes o.err: kept before it is released. */
		char why[256];
		snprintf(why, sizeof(why), "%.200s", o.err);
		proc_out_release(&o);
		free(script);
		free(dir);
		free(file);
		check_no_probe_left();
		SKIP("no mount namespace here: %s", why);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s%s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\n  WARN  read /etc/shadow                          allowed (read 24 "
			      "bytes)");
	CHECK_CONTAINS(o.out, "\n  WARN  list /root                                allowed (listed 0 "
			      "entries)");
	CHECK_CONTAINS(o.out, "\nresult: OK with warnings: ");
	CHECK(strstr(o.err, "BREACH") == NULL);
	CHECK(strstr(o.out, "FAIL") == NULL);
	proc_out_release(&o);
	free(script);
	free(dir);
	free(file);
	check_no_probe_left();
}

/* Layers turned off through the environment are reported off with why,
 * the rest still hold, and the doctor still passes: seccomp is on. A
 * fractional --mem-limit reaches the worker's rlimit exactly. */
TEST(doctor_json_with_layers_disabled)
{
	struct proc_out o;
	const char *args[] = {"doctor", "--json", "--mem-limit", "1.5G", NULL};
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
	CHECK(json_num(sb, "uid", -1) == (geteuid() == 0 ? 65534 : (double)geteuid()));
	CHECK(cJSON_IsFalse(json_get(sb, "unsafe")));
	CHECK_CONTAINS(json_str(sb, "line"), "rlimits=AS1536M,");
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
	CHECK(json_num(json_get(j, "rlimits"), "as", 0) == 1536.0 * 1024 * 1024);
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
	/* the limits reached the worker (the defaults are AS2G and 256M) */
	CHECK_CONTAINS(json_str(sb, "line"), "rlimits=AS1G,");
	CHECK_CONTAINS(json_str(sb, "line"), "(64M)");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"solve", "-c", p, "-q", "How is the door painted?",
				      "--json", "--quiet", "--sandbox-disable", "landlock", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	sb = json_get(j, "sandbox");
	CHECK(cJSON_IsTrue(json_get(json_get(sb, "layers"), "seccomp")));
	CHECK_STR(json_str(json_get(sb, "layers"), "landlock"), "disabled by request");
	CHECK(strstr(json_str(sb, "line"), "landlock=abi") == NULL);
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
	/* seccomp worked: no warning that it ran without */
	CHECK(strstr(o.err, "ran WITHOUT seccomp") == NULL);
	proc_out_release(&o);
	free(p);
}

/* Seccomp disabled with --unsafe-no-sandbox: the solve runs (on the
 * simulator), says so before and after, even with --quiet, and the JSON
 * says unsafe. */
TEST(solve_unsafe_without_seccomp)
{
	char *p = path_in_tmp("door.txt");
	struct proc_out o;
	cJSON *j, *sb;
	write_text(p, "The house is old.\nThe door is painted green.\n", 45);
	{
		const char *args[] = {"solve", "-c", p, "-q", "How is the door painted?",
				      "--json", "--quiet", "--unsafe-no-sandbox",
				      "--sandbox-disable", "seccomp", NULL};
		o = rlm(args, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "rlm: WARNING: --unsafe-no-sandbox:");
	CHECK_CONTAINS(o.err, "rlm: WARNING: the REPL worker ran WITHOUT seccomp "
			      "(--unsafe-no-sandbox): ");
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), "green");
	sb = json_get(j, "sandbox");
	CHECK_MSG(cJSON_IsTrue(json_get(sb, "unsafe")), "not unsafe: %s", o.out);
	CHECK_STR(json_str(json_get(sb, "layers"), "seccomp"), "disabled by request");
	CHECK(json_str(sb, "line") != NULL);
	CHECK_CONTAINS(o.err, json_str(sb, "line"));
	cJSON_Delete(j);
	proc_out_release(&o);
	free(p);
}

/* A sandbox the worker would refuse is bad usage, found before anything
 * starts: exit 2, the fix named, nothing on stdout (not even with --json),
 * and no request reaches the model's server. */
TEST(sandbox_config_refused_before_any_model_call)
{
	char *ok = path_in_tmp("ok.txt");
	struct fakesrv *srv = fakesrv_start();
	char url[160];
	/* want, then why: the layer and who disabled it */
	static const struct {
		const char *flag, *env, *want, *why;
	} cases[] = {
		{NULL, "RLM_SANDBOX_DISABLE=bogus",
		 "RLM_SANDBOX_DISABLE: unknown sandbox layer 'bogus'", "(known: all, ns, seccomp,"},
		{NULL, "RLM_SANDBOX_DISABLE=userns,seccomp", "seccomp is ", "by RLM_SANDBOX_DISABLE"},
		{"seccomp", NULL, "seccomp is ", "by request"},
		{"all", NULL, "seccomp is ", "by request"},
		{"identity", NULL, "identity is ", "by request"},
	};
	CHECK(srv);
	write_text(ok, "hello\n", 6);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(srv));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *env[] = {cases[i].env, NULL};
		const char *solve[] = {"solve", "-c", ok, "-q", "q?", "--json", "--model", "m",
				       "--base-url", url, "--api-key", "k", "--sandbox-disable",
				       cases[i].flag, NULL};
		const char *repl[] = {"repl", "-c", ok, "--sandbox-disable", cases[i].flag, NULL};
		const char *doctor[] = {"doctor", "--json", "--sandbox-disable", cases[i].flag,
					NULL};
		const char *const *cmds[] = {solve, repl, doctor};
		if (!cases[i].flag) {
			solve[12] = NULL;
			repl[3] = NULL;
			doctor[2] = NULL;
		}
		/* as root, identity is mandatory; otherwise there is none to drop */
		if (strcmp(cases[i].want, "identity is ") == 0 && geteuid())
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(cmds); k++) {
			struct proc_out o = rlm_env(cmds[k], "", env);
			CHECK_MSG(o.status == 2, "rlm %s with %s: exit %d, want 2; stderr: %s",
				  cmds[k][0], cases[i].flag ? cases[i].flag : cases[i].env,
				  o.status, o.err);
			CHECK_CONTAINS(o.err, "rlm: error: ");
			CHECK_CONTAINS(o.err, cases[i].want);
			CHECK_CONTAINS(o.err, cases[i].why);
			if (cases[i].flag || strstr(cases[i].env, "seccomp"))
				CHECK_CONTAINS(o.err, "--unsafe-no-sandbox");
			CHECK_STR(o.out, "");
			proc_out_release(&o);
		}
		CHECK_MSG(fakesrv_count(srv) == 0, "%zu request(s) reached the model with %s",
			  fakesrv_count(srv), cases[i].flag ? cases[i].flag : cases[i].env);
	}
	{
		/* the tree strategy starts no worker: the variable is not its
		 * business */
		const char *env[] = {"RLM_SANDBOX_DISABLE=seccomp", NULL};
		const char *a[] = {"solve", "-c", ok, "-q", "q?", "--strategy", "tree", "--quiet",
				   NULL};
		struct proc_out o = rlm_env(a, NULL, env);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		proc_out_release(&o);
	}
	fakesrv_stop(srv);
	free(ok);
}

/* Sizes: plain decimal with an optional fraction and unit; --help after
 * the option shows whether it was taken (0) or refused (2). */
TEST(sandbox_size_values)
{
	static const struct {
		const char *opt, *val;
		int status;
	} cases[] = {
		{"--mem-limit", "64M", 0},      {"--mem-limit", "64m", 0},
		{"--mem-limit", "1.5G", 0},     {"--mem-limit", "2GB", 0},
		{"--mem-limit", "2GiB", 0},     {"--mem-limit", "2gib", 0},
		{"--mem-limit", "0.0625G", 0},  {"--mem-limit", "67108864", 0},
		{"--mem-limit", "67108864B", 0}, {"--mem-limit", "65536K", 0},
		{"--mem-limit", "1T", 0},
		{"--mem-limit", "63M", 2},      {"--mem-limit", "16M", 2},
		{"--mem-limit", "67108863", 2}, {"--mem-limit", "0x10M", 2},
		{"--mem-limit", "0x4000000", 2}, {"--mem-limit", "1e3M", 2},
		{"--mem-limit", "1E9", 2},      {"--mem-limit", " 2G", 2},
		{"--mem-limit", "2G ", 2},      {"--mem-limit", "+2G", 2},
		{"--mem-limit", "-2G", 2},      {"--mem-limit", "inf", 2},
		{"--mem-limit", "infinity", 2}, {"--mem-limit", "nan", 2},
		{"--mem-limit", "", 2},         {"--mem-limit", "G", 2},
		{"--mem-limit", ".5G", 2},      {"--mem-limit", "1.G", 2},
		{"--mem-limit", "1..5G", 2},    {"--mem-limit", "1,5G", 2},
		{"--mem-limit", "2Gx", 2},      {"--mem-limit", "2GBB", 2},
		{"--mem-limit", "2iB", 2},      {"--mem-limit", "2P", 2},
		{"--mem-limit", "99999999999999999999999G", 2},
		{"--scratch-limit", "64K", 0},  {"--scratch-limit", "65536", 0},
		{"--scratch-limit", "65536b", 0}, {"--scratch-limit", "0.5M", 0},
		{"--scratch-limit", "65535", 2}, {"--scratch-limit", "1e5", 2},
		{"--scratch-limit", "-5M", 2},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *a[] = {"doctor", cases[i].opt, cases[i].val, "--help", NULL};
		struct proc_out o = rlm(a, NULL);
		CHECK_MSG(o.status == cases[i].status, "%s '%s': exit %d, want %d: %s",
			  cases[i].opt, cases[i].val, o.status, cases[i].status, o.err);
		if (cases[i].status == 2) {
			CHECK_CONTAINS(o.err, cases[i].opt);
			CHECK_CONTAINS(o.err, strcmp(cases[i].opt, "--mem-limit") == 0
						  ? "want a size of at least 64M"
						  : "want a size of at least 64K");
		}
		proc_out_release(&o);
	}
}

/* ---- which document: names and sources ---- */

/* The turns' outputs of a --json result, joined. */
static char *turn_outputs(const cJSON *j)
{
	const cJSON *t, *bl;
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "");
	cJSON_ArrayForEach(t, json_get(j, "turns"))
	{
		cJSON_ArrayForEach(bl, json_get(t, "blocks"))
		{
			const char *out = json_str(bl, "output");
			if (out)
				buf_puts(&b, out);
		}
	}
	return buf_detach(&b, NULL);
}

/* When the result has sources (the controller checks them), that they
 * name doc and nothing else. */
static void check_sources(const cJSON *j, const char *doc)
{
	const cJSON *src = json_get(j, "sources"), *s;
	CHECK(cJSON_IsArray(src));
	CHECK_INT(cJSON_GetArraySize(src), 1);
	cJSON_ArrayForEach(s, src)
	    CHECK_STR(cJSON_IsString(s) ? s->valuestring : json_str(s, "doc"), doc);
}

/* The question of issue 17 over the real /usr/include: the simulator's
 * root searches for the macro, reads only the lines that hold it, and
 * answers with a header that defines it, in seconds and a few thousand
 * tokens (reading all 8,000 headers took 30 million). */
TEST(solve_which_header_defines_a_macro)
{
	const char *args[] = {"solve", "-c", "/usr/include", "-q",
			      "Which header defines the macro EPOLLEXCLUSIVE?", "--json", "--quiet",
			      "--no-cache", NULL};
	struct proc_out o;
	struct rlm_err err = {0, ""};
	char *path, *text = NULL, *outs;
	size_t len;
	int64_t t0 = time_now_ns();
	double secs;
	cJSON *j;
	if (access("/usr/include/linux/eventpoll.h", R_OK) != 0)
		SKIP("no /usr/include/linux/eventpoll.h");
	o = rlm(args, NULL);
	secs = (double)(time_now_ns() - t0) / 1e9;
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK(j);
	fprintf(stderr, "  %s in %.2f s, %lld input tokens\n", json_str(j, "answer"), secs,
		(long long)json_int(json_get(j, "usage"), "input_tokens", -1));
	/* a header that defines it, named by its path under /usr/include */
	path = xasprintf("/usr/include/%s", json_str(j, "answer"));
	CHECK_MSG(file_read(path, 64 << 20, &text, &len, &err) == 0, "%s: %s", path, err.msg);
	CHECK_MSG(strstr(text, "define EPOLLEXCLUSIVE"), "%s does not define it", path);
	CHECK(secs < 30);
	CHECK(json_int(json_get(j, "usage"), "input_tokens", 0) < 50000);
	outs = turn_outputs(j);
	CHECK_CONTAINS(outs, "documents: ");
	CHECK_CONTAINS(outs, "search 'EPOLLEXCLUSIVE': ");
	check_sources(j, json_str(j, "answer"));
	free(outs);
	free(text);
	free(path);
	cJSON_Delete(j);
	proc_out_release(&o);
}

/* 10,000 records of two kinds (products and incidents, other fields than
 * the bench generator's, ids of their own): "which record mentions ..."
 * answers with the id of the one record that does, asked with a quoted
 * phrase (found by search) and with plain words (every record read). */
TEST(solve_which_record_in_10k_jsonl)
{
	static const char *const teams[] = {"storage", "network", "billing", "search", "mobile"};
	static const char *const colours[] = {"slate", "amber", "ivory", "teal", "crimson"};
	static const struct {
		const char *q, *want;
	} qs[] = {
	    {"Which record mentions \"coolant valve on rig nine\"?", "INC-07313"},
	    {"In which of the records did the coolant valve on rig nine freeze shut?",
	     "INC-07313"},
	    {"Which product record lists the colour saffron?", "SKU-4410"},
	};
	char *p = path_in_tmp("records.jsonl");
	FILE *f = fopen(p, "w");
	CHECK(f);
	for (int i = 0; i < 10000; i++) {
		if (i % 2) {
			char id[16];
			snprintf(id, sizeof(id), "INC-%05d", i);
			fprintf(f,
				"{\"id\":\"%s\",\"team\":\"%s\",\"severity\":%d,\"text\":\"Pager "
				"alert %d for the %s team: %s recovered after %d minutes.\"}\n",
				id, teams[i % 5], i % 4 + 1, i, teams[i % 5],
				i == 7313 ? "the coolant valve on rig nine froze shut and was thawed; "
					    "the pump"
					  : "the queue backed up; a worker",
				i % 97);
		} else {
			fprintf(f,
				"{\"id\":\"SKU-%04d\",\"price\":%d.%02d,\"text\":\"Product %d: a "
				"%s desk lamp, colour %s, ships in %d days.\"}\n",
				i == 4410 ? 4410 : 10000 + i, i % 300, i % 100, i, i % 3 ? "small" : "tall",
				i == 4410 ? "saffron" : colours[i % 5], i % 9 + 1);
		}
	}
	fclose(f);
	for (size_t i = 0; i < ARRAY_SIZE(qs); i++) {
		const char *args[] = {"solve", "-c", p, "-q", qs[i].q, "--json", "--quiet",
				      "--no-cache", NULL};
		struct proc_out o = rlm(args, NULL);
		cJSON *j;
		char *outs;
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		j = json_parse(o.out, strlen(o.out));
		CHECK(j);
		outs = turn_outputs(j);
		CHECK_MSG(!strcmp(json_str(j, "answer"), qs[i].want), "%s: got '%s'\n%s", qs[i].q,
			  json_str(j, "answer"), outs);
		CHECK_CONTAINS(outs, "documents: 10000 such as SKU-10000, INC-00001, SKU-10002");
		if (i == 0)
			CHECK_CONTAINS(outs, "search 'coolant valve on rig nine': 1 hits in 1");
		else
			CHECK(!strstr(outs, "search '"));
		check_sources(j, qs[i].want);
		free(outs);
		cJSON_Delete(j);
		proc_out_release(&o);
	}
	free(p);
}

/* A repeat of a solve is answered from the memo with the same sources: a
 * citation does not get lost on the way through the store. */
TEST(solve_sources_survive_the_memo)
{
	char *dir = path_in_tmp("memo-docs"), *db = path_in_tmp("memo.db"), *a, *b;
	char *outs[2] = {NULL, NULL};
	const char *args[] = {"solve", "--strategy", "tree", "-c", dir, "-q",
			      "Which file mentions zanzibar?", "--json", "--quiet",
			      "--cache", db, NULL};
	CHECK_INT(mkdir(dir, 0755), 0);
	a = xasprintf("%s/alpha.txt", dir);
	b = xasprintf("%s/beta.txt", dir);
	write_text(a, "nothing to see here\n", 20);
	write_text(b, "the word zanzibar is here\n", 26);
	for (int i = 0; i < 2; i++) {
		struct proc_out o = rlm(args, NULL);
		cJSON *j = json_parse(o.out, strlen(o.out));
		CHECK_MSG(o.status == 0 && j, "exit %d: %s", o.status, o.err);
		outs[i] = json_print(json_get(j, "sources"));
		CHECK_STR(outs[i], "[{\"doc\":\"beta.txt\"}]");
		cJSON_Delete(j);
		proc_out_release(&o);
	}
	CHECK_STR(outs[1], outs[0]);
	free(outs[0]);
	free(outs[1]);
	free(a);
	free(b);
	free(dir);
	free(db);
}

/* Issue 18's examples of text `rlm bench gen` does not write, end to end
 * through `rlm solve` on the simulator, both strategies: a needle sentence
 * near the end of a 1 MB paragraph with no newline, a question listing
 * three keys held in three places, and a question phrased unlike its
 * answer ("On what date was Node.js 20.0.0 released?" over "v20.0.0 was
 * released on April 18, 2023."). */
TEST(solve_text_of_other_shapes)
{
	static const char *const filler[] = {
	    "The launch of the new rover was delayed twice because of the weather in March.",
	    "Nobody on the night shift remembered which password had been rotated last!",
	    "Is the telemetry archive really kept for seven years, as the handbook claims?",
	    "Η εκτόξευση αναβλήθηκε λόγω καιρού, είπε ο διευθυντής της αποστολής.",
	    "Engineers argued for hours about fuel margins, then agreed on a compromise.",
	};
	static const struct {
		const char *file, *q, *want[3];
	} cases[] = {
	    {"para.txt", "What is the launch password for the Aurora mission?",
	     {"tangerine-4471", NULL, NULL}},
	    {"keys.txt", "List the codes of Ada, Grace and Linus.", {"K-1815", "G-1906", "L-1991"}},
	    {"rel.txt", "On what date was Node.js 20.0.0 released?", {"April 18, 2023", NULL, NULL}},
	};
	struct buf b;
	char *path;
	bool placed = false;
	buf_init(&b, 0);
	for (size_t i = 0; b.len < 1000000; i++) {
		if (!placed && b.len > 970000) /* 97% of the way */
			buf_puts(&b, "For the Aurora mission, the launch password is tangerine-4471, "
				     "and it changes at dawn. "),
			    placed = true;
		buf_puts(&b, filler[i % ARRAY_SIZE(filler)]);
		buf_putc(&b, ' ');
	}
	path = path_in_tmp("para.txt");
	write_text(path, b.p, b.len);
	free(path);
	buf_reset(&b);
	for (size_t i = 0; i < 20000; i++) {
		if (i == 3000)
			buf_puts(&b, "Ada's code is K-1815, issued in the spring.\n");
		if (i == 12000)
			buf_puts(&b, "Grace Hopper — code G-1906 — works on floor three.\n");
		if (i == 19000)
			buf_puts(&b, "Badge code for Linus: L-1991.\r\n");
		buf_puts(&b, filler[(i * 7) % ARRAY_SIZE(filler)]);
		buf_putc(&b, '\n');
	}
	path = path_in_tmp("keys.txt");
	write_text(path, b.p, b.len);
	free(path);
	buf_reset(&b);
	for (size_t i = 0; i < 5000; i++) {
		if (i == 2500)
			buf_puts(&b, "The project moves fast. v19.9.0 was released on April 10, 2023. "
				     "v20.0.0 was released on April 18, 2023. Then came the LTS line.\n");
		buf_puts(&b, filler[(i * 3) % ARRAY_SIZE(filler)]);
		buf_putc(&b, '\n');
	}
	path = path_in_tmp("rel.txt");
	write_text(path, b.p, b.len);
	free(path);
	buf_release(&b);
	for (size_t i = 0; i < 2 * ARRAY_SIZE(cases); i++) {
		size_t ci = i % ARRAY_SIZE(cases);
		char *ctx = path_in_tmp(cases[ci].file);
		const char *args[] = {"solve",	    "--context",	ctx,	    "--question",
				      cases[ci].q, "--strategy", i < ARRAY_SIZE(cases) ? "repl" : "tree",
				      "--no-cache", NULL};
		struct proc_out o = rlm(args, NULL);
		CHECK_MSG(o.status == 0, "case %zu: exit %d: %s", i, o.status, o.err);
		for (size_t k = 0; k < 3 && cases[ci].want[k]; k++)
			CHECK_MSG(strstr(o.out, cases[ci].want[k]), "case %zu: want '%s' in '%s'", i,
				  cases[ci].want[k], o.out);
		CHECK(!strstr(o.out, "April 10"));
		proc_out_release(&o);
		free(ctx);
	}
}

/* ---- the operator's terminal ---- */

/* Run rlm with args under a pseudo-terminal (its stdout and stderr; stdin
 * from the file input), the environment cleaned as rlm_env does, plus
 * extra. All it wrote to the terminal goes into *out (the caller frees
 * it), the terminal's own newline translation included. Returns the exit
 * status. */
static int rlm_pty(const char *const *args, const char *input, const char *const *extra,
		   struct buf *out)
{
	static const char *const clean[] = {"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL",
					    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
					    "ANTHROPIC_BASE_URL", "RLM_SIM", "RLM_SANDBOX_DISABLE",
					    "RLM_MAX_DEPTH", "RLM_MAX_NODES", "RLM_MAX_CALLS",
					    "RLM_MAX_FRAME", "RLM_CACHE", "RLM_PROGRESS", NULL};
	const char *argv[32];
	int64_t deadline = time_now_ns() + 120 * slow_factor() * 1000000000LL;
	int master = -1, status = 0;
	size_t n = 0;
	pid_t pid;
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = forkpty(&master, NULL, NULL, NULL);
	if (pid < 0)
		SKIP("no pseudo-terminal here: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(input ? input : "/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, 0) < 0)
			_exit(126);
		for (size_t i = 0; clean[i]; i++)
			unsetenv(clean[i]);
		for (size_t i = 0; extra && extra[i]; i++)
			putenv((char *)(uintptr_t)extra[i]);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	buf_init(out, 0);
	for (;;) {
		struct pollfd p = {master, POLLIN, 0};
		char chunk[4096];
		ssize_t got;
		int64_t left = (deadline - time_now_ns()) / 1000000;
		CHECK_MSG(left > 0, "rlm under a pty did not finish: %s", out->p);
		if (poll(&p, 1, (int)RLM_MIN(left, 1000)) <= 0)
			continue;
		got = read(master, chunk, sizeof(chunk));
		if (got <= 0)
			break; /* EIO: the last holder of the terminal closed it */
		buf_append(out, chunk, (size_t)got);
	}
	close(master);
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Nothing in s[0..n) that a terminal acts on: no ESC, BEL, DEL, C1 code
 * point, raw 0x9b or CR but the one of a line end. */
static void check_inert(const char *s, size_t n, const char *what)
{
	struct buf shown = BUF_INIT; /* s for the failure message: it must not act either */
	text_term_escape(&shown, s, n, 0);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		CHECK_MSG(c >= 0x20 || c == '\n' || c == '\t' || (c == '\r' && i + 1 < n &&
								  s[i + 1] == '\n'),
			  "%s: control 0x%02x reached the terminal at %zu: %s", what, c, i, shown.p);
		CHECK_MSG(c != 0x7f && c != 0x9b, "%s: byte 0x%02x reached the terminal at %zu", what,
			  c, i);
		CHECK_MSG(!(c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
			    (unsigned char)s[i + 1] <= 0x9f),
			  "%s: a C1 control reached the terminal at %zu", what, i);
	}
	buf_release(&shown);
}

/* Model code's output under `rlm repl` at a terminal: OSC 52 (the
 * clipboard), OSC 0 (the title), CSI 2J (clear), C1 CSI, a lone CR and
 * DEL are shown escaped; with --raw-output, or to a pipe, they go as
 * they are. */
TEST(repl_escapes_controls_at_a_terminal)
{
	static const char cells[] =
	    "print('clip\\x1b]52;c;cm0gLXJmIH4=\\x07 title\\x1b]0;pwned\\x1b\\\\ end')\n"
	    "# %%\n"
	    "print('\\x1b[2J\\x1b[Hcleared \\x9b2J c1 safe\\rEVIL \\x7f del \\u00e9t\\u00e9')\n"
	    "# %%\n"
	    "x\\x1b = 1\n";
	char *ctx = path_in_tmp("ctx.txt"), *in = path_in_tmp("cells.py");
	struct buf out;
	struct proc_out o;
	write_text(ctx, "hello\n", 6);
	write_text(in, cells, sizeof(cells) - 1);
	{
		const char *args[] = {"repl", "-c", ctx, "--quiet", NULL};
		CHECK_INT(rlm_pty(args, in, NULL, &out), 0);
	}
	check_inert(out.p, out.len, "rlm repl");
	CHECK_CONTAINS(out.p, "clip\\x1b]52;c;cm0gLXJmIH4=\\x07 title\\x1b]0;pwned\\x1b\\ end");
	CHECK_CONTAINS(out.p, "\\x1b[2J\\x1b[Hcleared \\u009b2J c1 safe\\rEVIL \\x7f del "
			      "\xc3\xa9t\xc3\xa9\r\n");
	CHECK_CONTAINS(out.p, "SyntaxError"); /* the traceback still shows */
	buf_release(&out);
	/* --raw-output: the bytes as they are */
	{
		const char *args[] = {"repl", "-c", ctx, "--quiet", "--raw-output", NULL};
		CHECK_INT(rlm_pty(args, in, NULL, &out), 0);
	}
	CHECK_CONTAINS(out.p, "clip\x1b]52;c;cm0gLXJmIH4=\x07 title");
	CHECK_CONTAINS(out.p, "\x1b[2J\x1b[Hcleared \xc2\x9b" "2J");
	buf_release(&out);
	/* a pipe: the bytes as they are */
	{
		const char *args[] = {"repl", "-c", ctx, "--quiet", NULL};
		o = rlm(args, cells);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "clip\x1b]52;c;cm0gLXJmIH4=\x07 title\x1b]0;pwned\x1b\\ end\n");
	CHECK_CONTAINS(o.out, "safe\rEVIL \x7f del");
	proc_out_release(&o);
	/* a log line that quotes a file name of the context: escaped too */
	{
		char *dir = path_in_tmp("docs"), *bad;
		CHECK(mkdir(dir, 0755) == 0);
		bad = xasprintf("%s/t\x1b]0;pwned\x07.bin", dir);
		write_text(bad, "\0\1\2binary", 9);
		free(bad);
		bad = xasprintf("%s/ok.txt", dir);
		write_text(bad, "hello\n", 6);
		free(bad);
		{
			const char *args[] = {"repl", "-c", dir, "-v", NULL};
			CHECK_INT(rlm_pty(args, in, NULL, &out), 0);
		}
		check_inert(out.p, out.len, "rlm repl -v");
		CHECK_CONTAINS(out.p, "skipping 't\\x1b]0;pwned\\x07.bin'");
		buf_release(&out);
		free(dir);
	}
	free(ctx);
	free(in);
}

/* `rlm solve` at a terminal: the answer (plain and --json) and the
 * --verbose trajectory of a model whose code prints OSC 52 and whose
 * answer clears the screen reach it escaped; a pipe gets the bytes. */
TEST(solve_escapes_controls_at_a_terminal)
{
	struct fakesrv *srv = fakesrv_start();
	char *ctx = path_in_tmp("ctx.txt"), url[64], *body;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	static const char *const env[] = {"RLM_PROGRESS=0", NULL};
	struct buf out;
	struct proc_out o;
	CHECK(srv);
	write_text(ctx, "hello\n", 6);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(srv));
	body = fakesrv_chat_body("Setting the \x1b]0;title\x07 now.\n```repl\n"
				 "print('out\\x1b]52;c;aGk=\\x07put')\n"
				 "answer['content'] = 'the \\x1b[2J\\x9b answer'\n"
				 "answer['ready'] = True\n```",
				 "stop", 100, 10);
	r.body = body;
	fakesrv_set_default(srv, &r);
	free(body);
	for (int json = 0; json < 2; json++) {
		const char *a[] = {"solve",	 "-c", ctx, "-q",      "q?",	      "--model",
				   "m",		 "--base-url",	url,	 "--no-cache", "--verbose",
				   json ? "--json" : NULL, NULL};
		CHECK_MSG(rlm_pty(a, NULL, env, &out) == 0, "exit != 0: %s", out.p);
		check_inert(out.p, out.len, json ? "rlm solve --json" : "rlm solve");
		CHECK_CONTAINS(out.p, "out\\x1b]52;c;aGk=\\x07put"); /* --verbose: the output */
		CHECK_CONTAINS(out.p, "Setting the \\x1b]0;title\\x07 now."); /* the reply */
		if (json) {
			cJSON *j;
			const char *open = strstr(out.p, "\r\n{");
			CHECK_CONTAINS(out.p, "\"answer\":\t\"the \\u001b[2J\\u009b answer\"");
			/* still JSON, with the same answer (the terminal made \n \r\n) */
			CHECK(open);
			j = json_parse(open + 2, strlen(open + 2));
			CHECK_MSG(j, "not JSON: %s", open + 2);
			CHECK_STR(json_str(j, "answer"), "the \x1b[2J\xc2\x9b answer");
			cJSON_Delete(j);
		} else {
			CHECK_CONTAINS(out.p, "the \\x1b[2J\\u009b answer\r\n");
		}
		buf_release(&out);
	}
	{
		const char *a[] = {"solve", "-c", ctx, "-q", "q?", "--model", "m", "--base-url", url,
				   "--no-cache", "--verbose", NULL};
		o = rlm(a, NULL);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.out, "the \x1b[2J\xc2\x9b answer\n");
	CHECK_CONTAINS(o.err, "out\x1b]52;c;aGk=\x07put");
	proc_out_release(&o);
	/* the run as `rlm runs show` and `runs list` tell it, its question
	 * one a client could have sent */
	{
		char *db = path_in_tmp("runs.db"), *id;
		cJSON *j;
		const char *a[] = {"solve", "-c", ctx, "-q", "q\x1b]0;T\x07?", "--model", "m",
				   "--base-url", url, "--cache", db, "--json", NULL};
		o = rlm(a, NULL);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		j = json_parse(o.out, strlen(o.out));
		CHECK(j && json_str(j, "run"));
		id = xstrdup(json_str(j, "run"));
		cJSON_Delete(j);
		proc_out_release(&o);
		for (int k = 0; k < 3; k++) {
			const char *show[] = {"runs", k == 2 ? "list" : "show", k == 2 ? "--cache" : id,
					      k == 2 ? db : "--cache", k == 2 ? NULL : db,
					      k == 1 ? "--json" : NULL, NULL};
			CHECK_MSG(rlm_pty(show, NULL, NULL, &out) == 0, "runs: %s", out.p);
			check_inert(out.p, out.len, k == 0 ? "runs show" : k == 1 ? "runs show --json"
											    : "runs list");
			if (k == 0)
				CHECK_CONTAINS(out.p, "out\\x1b]52;c;aGk=\\x07put");
			if (k == 1)
				CHECK_CONTAINS(out.p, "out\\\\x1b]52"); /* the code's own text */
			CHECK_CONTAINS(out.p, k == 1 ? "q\\u001b]0;T\\u0007?" : "q\\x1b]0;T\\x07?");
			buf_release(&out);
		}
		free(id);
		free(db);
	}
	fakesrv_stop(srv);
	free(ctx);
}
