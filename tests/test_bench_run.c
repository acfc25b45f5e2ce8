/* SPDX-License-Identifier: MIT */
/* tests/test_bench_run.c -- `rlm bench run` end to end on the simulator:
 * results.jsonl's lines and scores, report.md, SVGs that parse as XML, a
 * rerun that skips what is done without a model call, failed solves run
 * again, bad datasets named by FILE:LINE; and the report's quantiles and
 * sizes, table-driven. */
#include "harness.h"
#include "proc.h"
#include "../bench/bench.h"
#include "../common/common.h"
#include "../common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

/* No real provider, sandbox setting or store from the environment. */
static const char *const clean_env[] = {
    "RLM_PROVIDER",	  "RLM_MODEL",	     "RLM_SUB_MODEL",
    "OPENAI_API_KEY",	  "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL", "RLM_SIM",	     "RLM_SANDBOX_DISABLE",
    "RLM_MAX_DEPTH",	  "RLM_MAX_NODES",   "RLM_CACHE",
    "RLM_NO_CACHE",	  "RLM_PRICES",	     NULL};

/* Run rlm with args (NULL-terminated). */
static struct proc_out rlm(const char *const *args)
{
	const char *argv[40];
	struct proc_out o;
	size_t n = 0;
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	CHECK_INT(proc_run(argv, NULL, clean_env, 120, &o), 0);
	return o;
}

static char *tmp(const char *name)
{
	return xasprintf("%s/%s", harness_tmpdir(), name);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	CHECK_INT(fclose(f), 0);
}

static char *slurp(const char *path)
{
	char *s;
	size_t len;
	struct rlm_err err = {0, ""};
	CHECK_MSG(file_read(path, 1 << 26, &s, &len, &err) == 0, "%s", err.msg);
	return s;
}

/* Generate S-NIAH 8k and 32k, one item each, into DIR/ds; its JSONL path. */
static char *gen_sniah(void)
{
	char *dir = tmp("ds");
	const char *args[] = {"bench", "gen", "sniah", "--sizes", "8k,32k",
			      "--n",   "1",   "--out", dir,	  NULL};
	struct proc_out o = rlm(args);
	CHECK_MSG(o.status == 0, "bench gen: %s", o.err);
	proc_out_release(&o);
	free(dir);
	return tmp("ds/sniah.jsonl");
}

/* The lines of results.jsonl, parsed; a line that is not JSON fails. */
static cJSON *results(const char *out, size_t *n)
{
	char *path = xasprintf("%s/results.jsonl", out), *s = slurp(path), *p = s, *nl;
	cJSON *arr = cJSON_CreateArray();
	*n = 0;
	for (; *p; p = nl + 1) {
		cJSON *j;
		nl = strchr(p, '\n');
		CHECK_MSG(nl, "results.jsonl does not end with a newline");
		j = json_parse(p, (size_t)(nl - p));
		CHECK_MSG(j, "not JSON: %.*s", (int)(nl - p), p);
		json_add(arr, NULL, j);
		(*n)++;
	}
	free(s);
	free(path);
	return arr;
}

/* Every line of arr was scored, in [0, 1], without an error. */
static void check_all_scored(const cJSON *arr)
{
	const cJSON *r;
	cJSON_ArrayForEach(r, arr)
	{
		double sc = json_num(r, "score", -1);
		CHECK_MSG(sc >= 0 && sc <= 1, "%s: score %g", json_str(r, "id"), sc);
		CHECK_MSG(!json_get(r, "error"), "%s (%s): %s", json_str(r, "id"),
			  json_str(r, "strategy"), json_str(r, "error"));
	}
}

static const cJSON *find(const cJSON *arr, const char *id, const char *strategy)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		if (strcmp(json_str(it, "id"), id) == 0 &&
		    strcmp(json_str(it, "strategy"), strategy) == 0)
			return it;
	}
	harness_fail(__FILE__, __LINE__, "no result for %s (%s)", id, strategy);
}

static void check_svg(const char *path)
{
	const char *argv[] = {"/usr/bin/python3", "-c",
			      "import sys, xml.dom.minidom as m\n"
			      "d = m.parse(sys.argv[1]).documentElement\n"
			      "assert d.tagName == 'svg', d.tagName\n"
			      "assert d.getAttribute('xmlns') == 'http://www.w3.org/2000/svg'\n",
			      path, NULL};
	struct proc_out o;
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 0, "%s is not valid SVG: %s", path, o.err);
	proc_out_release(&o);
}

/* The store's "calls", "results" and "runs" counts as one string. */
static char *store_counts(const char *db)
{
	const char *args[] = {"cache", "stats", "--json", "--cache", db, NULL};
	struct proc_out o = rlm(args);
	cJSON *j;
	char *s;
	CHECK_MSG(o.status == 0, "cache stats: %s", o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK(j);
	s = xasprintf("calls %lld results %lld runs %lld hits %lld",
		      (long long)json_int(j, "calls", -1), (long long)json_int(j, "results", -1),
		      (long long)json_int(j, "runs", -1), (long long)json_int(j, "call_hits", -1));
	cJSON_Delete(j);
	proc_out_release(&o);
	return s;
}

/* ---- the run ---- */

TEST(run_repl_direct_then_rerun_skips)
{
	char *ds = gen_sniah(), *out = tmp("out"), *db = tmp("store.db"), *md, *before, *after;
	char *svg1 = xasprintf("%s/score_vs_length.svg", out),
	     *svg2 = xasprintf("%s/cost_latency.svg", out);
	const char *args[] = {"bench",	    "run",	   ds,	    "--jobs", "2",
			      "--strategy", "repl,direct", "--out", out,      "--cache",
			      db,	    "--quiet",	   NULL};
	const char *again[] = {"bench",	      "run",   ds,  "--jobs",  "2", "--strategy",
			       "repl,direct", "--out", out, "--cache", db,  NULL};
	struct proc_out o = rlm(args);
	const cJSON *r;
	cJSON *arr;
	size_t n;
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.err, ""); /* --quiet */
	CHECK_CONTAINS(o.out, "score (mean over items");
	CHECK_CONTAINS(o.out, "sniah  8k");
	CHECK_CONTAINS(o.out, "sniah  32k");
	CHECK_CONTAINS(o.out, "latency (s)");
	proc_out_release(&o);

	arr = results(out, &n);
	CHECK_INT(n, 4);
	/* repl finds every needle; each line has every field */
	r = find(arr, "sniah-8k-0", "repl");
	CHECK_STR(json_str(r, "suite"), "sniah");
	CHECK_INT(json_int(r, "tokens", 0), 8000);
	CHECK_STR(json_str(r, "scorer"), "contains_all");
	CHECK_STR(json_str(r, "model"), "sim");
	CHECK_STR(json_str(r, "sub_model"), "sim");
	CHECK(json_num(r, "score", -1) == 1);
	CHECK_CONTAINS(json_str(r, "answer"),
		       cJSON_GetArrayItem(json_get(r, "gold"), 0)->valuestring);
	CHECK(json_int(json_get(json_get(r, "usage"), "root"), "input_tokens", 0) > 0);
	CHECK(json_int(json_get(json_get(r, "usage"), "sub"), "input_tokens", 0) > 0);
	CHECK(json_int(r, "iterations", 0) >= 2);
	CHECK(json_int(r, "sub_calls", 0) >= 1);
	CHECK_INT(json_int(r, "errors", -1), 0);
	CHECK_INT(json_int(r, "repl_errors", -1), 0);
	CHECK_INT(json_int(r, "depth", -1), 0);
	CHECK_INT(json_int(r, "nodes", -1), 0);
	CHECK(json_num(r, "wall_ms", -1) > 0);
	CHECK(json_num(r, "cost_usd", -1) == 0);
	CHECK(strlen(json_str(r, "run_id")) > 10);
	CHECK_STR(json_str(r, "stop"), "answer");
	CHECK(!json_get(r, "error"));
	r = find(arr, "sniah-32k-0", "repl");
	CHECK(json_num(r, "score", -1) == 1);
	CHECK_INT(json_int(r, "tokens", 0), 32000);
	/* direct: one call; 8k fits sim's 32,000-token window, 32k is cut */
	r = find(arr, "sniah-8k-0", "direct");
	CHECK(json_num(r, "score", -1) == 1);
	CHECK_INT(json_int(r, "calls", 0), 1);
	CHECK_INT(json_int(r, "sub_calls", -1), 0);
	CHECK_INT(json_int(r, "context_cut_tokens", -1), 0);
	CHECK(json_int(json_get(json_get(r, "usage"), "root"), "input_tokens", 0) > 8000);
	r = find(arr, "sniah-32k-0", "direct");
	CHECK(json_int(r, "context_cut_tokens", 0) > 4000);
	CHECK(json_int(json_get(json_get(r, "usage"), "root"), "input_tokens", 0) < 32000);
	cJSON_Delete(arr);

	md = slurp(xasprintf("%s/report.md", out));
	CHECK_CONTAINS(md, "# rlm bench run");
	CHECK_CONTAINS(md, "- command: `rlm bench run ");
	CHECK_CONTAINS(md, "--strategy repl,direct");
	CHECK_CONTAINS(md, " UTC\n");
	CHECK_CONTAINS(md, "`sim` (provider sim");
	CHECK_CONTAINS(md, "| suite | size | repl | direct |");
	CHECK_CONTAINS(md, "| sniah | 8k | 1.000 (1) | 1.000 (1) |");
	CHECK_CONTAINS(md, "| sniah | 32k | 1.000 (1) |");
	CHECK_CONTAINS(md, "| **all** | | **1.000 (2)** |");
	CHECK_CONTAINS(md, "| repl | 2 |");
	CHECK_CONTAINS(md, "![mean score against context length](score_vs_length.svg)");
	CHECK_CONTAINS(md, "direct: 1 of 2 contexts were longer");
	CHECK_CONTAINS(md, "- The model is the simulator (docs/simulator.md): it answers "
			   "extractively");
	CHECK_CONTAINS(md, "| sniah | 32k | direct | 1 |");
	CHECK_CONTAINS(slurp(xasprintf("%s/summary.json", out)), "\"size_label\":\t\"32k\"");
	check_svg(svg1);
	check_svg(svg2);
	CHECK_CONTAINS(slurp(svg1), "sniah / direct");
	CHECK_CONTAINS(slurp(svg2), "Latency per item");

	/* Again: everything is skipped, nothing is asked of a model or the store. */
	before = store_counts(db);
	o = rlm(again);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "4 of them already in");
	CHECK_CONTAINS(o.err, "skipped (resuming");
	CHECK_CONTAINS(o.err, "0 run (0 failed), 4 skipped; 0 model calls");
	CHECK_CONTAINS(o.out, "1.000 (1)");
	proc_out_release(&o);
	after = store_counts(db);
	CHECK_STR(after, before);
	arr = results(out, &n);
	CHECK_INT(n, 4);
	cJSON_Delete(arr);
	md = slurp(xasprintf("%s/report.md", out));
	CHECK_CONTAINS(md, "4 of them were read back from an earlier run");
	CHECK_CONTAINS(md, "| sniah | 32k | 1.000 (1) |");

	/* Other solve options are other results: --max-depth 3 runs all four
	 * again (the store answers their calls), then skips them. */
	{
		const char *deeper[] = {"bench", "run", ds, "--jobs", "2", "--strategy",
					"repl,direct", "--out", out, "--cache", db, "--max-depth",
					"3", NULL};
		char *digest = NULL;
		o = rlm(deeper);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.err, "4 results in ");
		CHECK_CONTAINS(o.err, " were made with other solve options");
		CHECK_CONTAINS(o.err, "4 run (0 failed), 0 skipped");
		proc_out_release(&o);
		arr = results(out, &n);
		CHECK_INT(n, 8);
		digest = xstrdup(json_str(cJSON_GetArrayItem(arr, 7), "options_digest"));
		CHECK_INT(strlen(digest), 16);
		CHECK(strcmp(digest, json_str(cJSON_GetArrayItem(arr, 0), "options_digest")) != 0);
		cJSON_Delete(arr);
		o = rlm(deeper);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.err, "4 of them already in");
		CHECK_CONTAINS(o.err, "0 run (0 failed), 4 skipped");
		proc_out_release(&o);
		free(digest);

		/* An item that changed (its gold) is another item: its two
		 * results run again, the other item's are kept. */
		{
			char *text = slurp(ds), *at = strstr(text, "\"answer\":[");
			FILE *f;
			CHECK(at);
			f = fopen(ds, "w");
			CHECK(f);
			fprintf(f, "%.*s\"answer\":[\"changed\",%s", (int)(at - text), text,
				at + strlen("\"answer\":["));
			CHECK(fclose(f) == 0);
		}
		o = rlm(deeper);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.err, "2 of them already in");
		CHECK_CONTAINS(o.err, "or for items that changed since");
		CHECK_CONTAINS(o.err, "2 run (0 failed), 2 skipped");
		proc_out_release(&o);
	}
}

/* Every suite, from 8k up to 1M tokens, generated and run on the
 * simulator with repl and direct, in one bench run: what the issue asks
 * CI to show (the simulator cannot classify or join facts, so only S-NIAH
 * scores; the run must complete and score every item). */
TEST(run_every_suite_up_to_1M)
{
	static const char *const suites[] = {"sniah", "oolong", "oolong-pairs", "browse"};
	char *dir = tmp("all"), *out = tmp("all-out"), *db = tmp("all.db");
	char *paths[4];
	const char *args[16] = {"bench", "run"};
	struct proc_out o;
	cJSON *arr;
	size_t n, k = 2;
	int64_t t0 = time_now_ns();
	for (size_t i = 0; i < 4; i++) {
		const char *g[] = {"bench", "gen", suites[i], "--sizes", "8k,128k,1M", "--n", "1",
				   "--out", dir, NULL};
		o = rlm(g);
		CHECK_MSG(o.status == 0, "bench gen %s: %s", suites[i], o.err);
		proc_out_release(&o);
		paths[i] = xasprintf("%s/%s.jsonl", dir, suites[i]);
		args[k++] = paths[i];
	}
	args[k++] = "--jobs";
	args[k++] = "2";
	args[k++] = "--strategy";
	args[k++] = "repl,direct";
	args[k++] = "--out";
	args[k++] = out;
	args[k++] = "--cache";
	args[k++] = db;
	args[k++] = "--quiet";
	args[k] = NULL;
	o = rlm(args);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	for (size_t i = 0; i < 4; i++)
		CHECK_CONTAINS(o.out, suites[i]);
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 4 * 3 * 2);
	check_all_scored(arr);
	CHECK(json_num(find(arr, "sniah-1M-0", "repl"), "score", -1) == 1);
	{
		char *md = xasprintf("%s/report.md", out), *text = slurp(md);
		CHECK_CONTAINS(text, "oolong-pairs");
		free(text);
		free(md);
	}
	fprintf(stderr, "  4 suites x 8k/128k/1M x repl,direct: %.1f s\n",
		(double)(time_now_ns() - t0) / 1e9);
	cJSON_Delete(arr);
	for (size_t i = 0; i < 4; i++)
		free(paths[i]);
	free(dir);
	free(out);
	free(db);
}

/* What a harness should record of each query (anchors-paper.md section 6):
 * REPL errors over the whole tree of nodes, the depth reached and the child
 * RLMs. The simulator writes every other step with a bug (code_errors) and
 * at 32k tokens in 2,000-character chunks, past 2 chunks, hands pieces to
 * children that hand theirs on again: depth 2. */
TEST(run_records_repl_errors_depth_and_nodes)
{
	char *ds = gen_sniah(), *out = tmp("out");
	const char *args[] = {"bench", "run", ds, "--out", out, "--no-cache", "--quiet", "--sim",
			      "code_errors=0.5,chunk=2000,rlm_chunks=2", "--max-depth", "3", NULL};
	struct proc_out o = rlm(args);
	const cJSON *r;
	cJSON *arr;
	size_t n;
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 2);
	r = find(arr, "sniah-32k-0", "repl");
	CHECK(json_num(r, "score", -1) == 1);
	CHECK_INT(json_int(r, "depth", -1), 2);
	CHECK_MSG(json_int(r, "nodes", 0) > 16, "nodes %lld", (long long)json_int(r, "nodes", 0));
	/* more than the root's own: the children's errors count too */
	CHECK_MSG(json_int(r, "repl_errors", 0) > json_int(r, "iterations", 0),
		  "repl_errors %lld", (long long)json_int(r, "repl_errors", 0));
	CHECK_INT(json_int(r, "errors", -1), 0); /* no model call failed */
	cJSON_Delete(arr);
}

TEST(run_resumes_a_killed_run)
{
	char *ds = gen_sniah(), *out = tmp("out"), *db = tmp("store.db"), *path, *s, *cut;
	const char *args[] = {"bench", "run",	  ds, "--strategy", "direct,tree", "--out",
			      out,     "--cache", db, "--jobs",	    "1",	   NULL};
	struct proc_out o = rlm(args);
	cJSON *arr;
	size_t n;
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	proc_out_release(&o);
	/* Keep the first two lines, and half of the third: a kill mid-write. */
	path = xasprintf("%s/results.jsonl", out);
	s = slurp(path);
	cut = strchr(strchr(s, '\n') + 1, '\n') + 1;
	cut[20] = '\0';
	write_text(path, s);
	o = rlm(args);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "2 of them already in");
	CHECK_CONTAINS(o.err, "2 run (0 failed), 2 skipped");
	CHECK_CONTAINS(o.out, "sniah  32k");
	proc_out_release(&o);
	/* The half line stands alone, and is not read as a result. */
	free(s);
	s = slurp(path);
	CHECK_INT(strlen(s) > 0 && s[strlen(s) - 1] == '\n', 1);
	CHECK_CONTAINS(s, "\n{\"id\":\"sniah-32k-0\",\n{");
	unlink(path);
	o = rlm(args);
	/* Run afresh: every call comes from the store. */
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "4 run (0 failed), 0 skipped");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 4);
	CHECK(json_num(find(arr, "sniah-32k-0", "tree"), "score", -1) == 1);
	CHECK(cJSON_IsTrue(json_get(find(arr, "sniah-32k-0", "tree"), "from_cache")));
	CHECK(cJSON_IsTrue(json_get(find(arr, "sniah-8k-0", "direct"), "from_cache")));
	cJSON_Delete(arr);
	CHECK_CONTAINS(slurp(xasprintf("%s/report.md", out)), "answered wholly from the store");
	/* A line of another model is not this run's result. */
	free(s);
	s = slurp(path);
	cut = strstr(s, "\"model\":\"sim\"");
	CHECK(cut);
	memcpy(cut, "\"model\":\"mis\"", 13);
	write_text(path, s);
	o = rlm(args);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "3 of them already in");
	CHECK_CONTAINS(o.err, "1 results in ");
	CHECK_CONTAINS(o.err, " are of another model");
	CHECK_CONTAINS(o.err, "1 run (0 failed), 3 skipped");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 5);
	CHECK_STR(json_str(cJSON_GetArrayItem(arr, 0), "sub_model"), "sim");
	cJSON_Delete(arr);
	free(s);
	free(path);
}

TEST(run_failed_solves_exit_1_and_run_again)
{
	char *ds = gen_sniah(), *out = tmp("out");
	const char *fail[] = {"bench",	       "run", ds,	    "--strategy", "direct",
			      "--out",	       out,   "--no-cache", "--sim",	  "500=1",
			      "--max-retries", "0",   "--limit",    "1",	  NULL};
	const char *ok[] = {"bench", "run",	   ds,	      "--strategy", "direct", "--out",
			    out,     "--no-cache", "--limit", "1",	    NULL};
	struct proc_out o = rlm(fail);
	const cJSON *r;
	cJSON *arr;
	size_t n;
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "rlm: error: sniah-8k-0 (direct): ");
	CHECK_CONTAINS(o.out, "0.000 (1, 1 failed)");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 1);
	r = find(arr, "sniah-8k-0", "direct");
	CHECK_STR(json_str(r, "stop"), "error");
	CHECK_CONTAINS(json_str(r, "error"), "500");
	CHECK_INT(json_int(r, "errors", 0), 1);
	CHECK(cJSON_IsNull(json_get(r, "answer")));
	cJSON_Delete(arr);
	CHECK_CONTAINS(slurp(xasprintf("%s/report.md", out)), "1 solves failed");
	/* A failure is not a result: the next run tries it again. */
	o = rlm(ok);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, "1 run (0 failed), 0 skipped");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 2);
	CHECK(json_num(cJSON_GetArrayItem(arr, 1), "score", -1) == 1);
	cJSON_Delete(arr);
}

TEST(run_inline_contexts_and_limit)
{
	char *ds = tmp("mine.jsonl"), *out = tmp("out");
	const char *args[] = {"bench", "run",	  ds,  "--strategy", "tree,repl", "--out",
			      out,     "--limit", "2", "--no-cache", "--quiet",	  NULL};
	struct proc_out o;
	cJSON *arr;
	size_t n;
	write_text(ds, "{\"id\":\"a\",\"question\":\"What is the code word for the vault?\","
		       "\"answer\":\"The code word for the vault is: saffron.\","
		       "\"context\":\"The weather was mild.\\nThe code word for the vault is: "
		       "saffron.\\nNothing else happened.\",\"scorer\":\"exact\"}\n"
		       "\n"
		       "{\"id\":\"b\",\"question\":\"What is the code word for the vault?\","
		       "\"answer\":[\"thistle\"],\"context\":\"The code word for the vault is: "
		       "thistle.\",\"scorer\":\"contains_all\",\"suite\":\"tiny\",\"tokens\":9}\n"
		       "{\"id\":\"c\",\"question\":\"q?\",\"answer\":[\"x\"],\"context\":\"x\","
		       "\"scorer\":\"exact\"}\n");
	o = rlm(args);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.err, "");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 4); /* --limit 2: a and b, each with two strategies */
	CHECK_STR(json_str(find(arr, "a", "tree"), "suite"), "mine");
	CHECK_INT(json_int(find(arr, "a", "tree"), "tokens", 0), 22); /* 85 bytes / 4, up */
	CHECK(json_num(find(arr, "a", "tree"), "score", -1) == 1);
	CHECK_STR(json_str(find(arr, "b", "repl"), "suite"), "tiny");
	CHECK_INT(json_int(find(arr, "b", "repl"), "tokens", 0), 9);
	CHECK(json_num(find(arr, "b", "repl"), "score", -1) == 1);
	CHECK_STR(json_str(find(arr, "b", "repl"), "run_id"), ""); /* --no-cache: no run */
	cJSON_Delete(arr);
}

/* The root and sub-calls on two models, each priced by --prices: every
 * cost is the tokens of each role at its own model's price, and the cost
 * quantiles of the report are real numbers. Over HTTP (rlm sim-serve),
 * where "sim" is a model name like any other and the file prices it. */
TEST(run_sub_model_and_prices)
{
	char *ds = gen_sniah(), *out = tmp("out"), *prices = tmp("prices.json"), *url, *s;
	const char *args[] = {"bench", "run", ds, "--provider", "openai", "--model", "sim",
			      "--sub-model", "sim-mini", "--base-url", NULL, "--prices", prices,
			      "--strategy", "repl,direct", "--out", out, "--no-cache", "--quiet",
			      NULL};
	struct proc_out o;
	const cJSON *g, *r;
	cJSON *arr, *sum;
	double repl_cost[2];
	size_t n;
	int port;
	pid_t srv = proc_sim_serve("", &port);
	url = xasprintf("http://127.0.0.1:%d/v1", port);
	args[10] = url;
	write_text(prices, "{\"sim\": {\"input\": 0.25, \"output\": 2.0},\n"
			   " \"sim-mini\": {\"input\": 1.0, \"output\": 4.0}}\n");
	o = rlm(args);
	proc_stop(srv);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 4);
	for (int i = 0; i < 4; i++) {
		const cJSON *u;
		double want;
		r = cJSON_GetArrayItem(arr, i);
		u = json_get(r, "usage");
		CHECK_STR(json_str(r, "model"), "sim");
		CHECK_STR(json_str(r, "sub_model"), "sim-mini");
		/* the root's tokens at sim's price, the sub-calls' at sim-mini's */
		want = (double)json_int(json_get(u, "root"), "input_tokens", 0) * 0.25e-6 +
		       (double)json_int(json_get(u, "root"), "output_tokens", 0) * 2e-6 +
		       (double)json_int(json_get(u, "sub"), "input_tokens", 0) * 1e-6 +
		       (double)json_int(json_get(u, "sub"), "output_tokens", 0) * 4e-6;
		CHECK_MSG(want > 0 && fabs(json_num(r, "cost_usd", 0) - want) < 1e-9,
			  "%s (%s): cost %.9f, want %.9f", json_str(r, "id"),
			  json_str(r, "strategy"), json_num(r, "cost_usd", 0), want);
	}
	r = find(arr, "sniah-32k-0", "repl");
	CHECK(json_int(json_get(json_get(r, "usage"), "sub"), "input_tokens", 0) > 30000);
	CHECK(json_num(r, "score", -1) == 1);
	repl_cost[0] = json_num(find(arr, "sniah-8k-0", "repl"), "cost_usd", 0);
	repl_cost[1] = json_num(r, "cost_usd", 0);
	cJSON_Delete(arr);
	/* p25..p95 of two items, linear between them */
	s = slurp(xasprintf("%s/summary.json", out));
	sum = json_parse(s, strlen(s));
	CHECK(sum);
	g = cJSON_GetArrayItem(json_get(sum, "strategies"), 0);
	CHECK_STR(json_str(g, "strategy"), "repl");
	{
		double lo = RLM_MIN(repl_cost[0], repl_cost[1]),
		       hi = RLM_MAX(repl_cost[0], repl_cost[1]);
		const cJSON *q = json_get(g, "cost_usd");
		CHECK(lo > 0 && hi > lo);
		CHECK(fabs(json_num(q, "p25", 0) - (lo + 0.25 * (hi - lo))) < 1e-12);
		CHECK(fabs(json_num(q, "p95", 0) - (lo + 0.95 * (hi - lo))) < 1e-12);
		CHECK(fabs(json_num(g, "cost_total_usd", 0) - (lo + hi)) < 1e-12);
	}
	CHECK_STR(json_str(sum, "sub_model"), "sim-mini");
	cJSON_Delete(sum);
	free(s);
	s = slurp(xasprintf("%s/report.md", out));
	CHECK(!strstr(s, "Every cost is 0"));
	CHECK_CONTAINS(s, "`sim` (provider openai");
	CHECK_CONTAINS(s, "`sim-mini` for sub-calls");
	free(s);
	free(url);
}

/* direct never sends a question without its context: a run whose
 * --max-tokens leaves under 1,000 tokens of sim's 32,000-token window is
 * refused before anything runs, and an item whose question fills what is
 * left fails with the reason. */
TEST(run_direct_refuses_no_room)
{
	char *ds = tmp("room.jsonl"), *out = tmp("out"), *q = xmalloc(6001);
	const char *full[] = {"bench", "run", ds, "--strategy", "repl,direct", "--max-tokens",
			      "31500", "--out", out, "--no-cache", NULL};
	const char *tight[] = {"bench", "run", ds, "--strategy", "direct", "--max-tokens", "30900",
			       "--out", out, "--no-cache", NULL};
	struct proc_out o;
	const cJSON *r;
	cJSON *arr;
	struct stat st;
	size_t n;
	memset(q, 'w', 6000);
	q[6000] = '\0';
	for (int i = 5; i < 6000; i += 6)
		q[i] = ' ';
	write_text(ds, xasprintf("{\"id\":\"short\",\"question\":\"What is the code word?\","
				 "\"answer\":[\"saffron\"],\"context\":\"The code word is: "
				 "saffron.\",\"scorer\":\"contains_all\"}\n"
				 "{\"id\":\"long\",\"question\":\"%s?\",\"answer\":[\"x\"],"
				 "\"context\":\"x\",\"scorer\":\"exact\"}\n",
				 q));
	o = rlm(full);
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "rlm: error: --strategy direct would send at most 463 tokens of "
			      "context: sim's window is 32000 tokens and 31500 are kept for the "
			      "reply (--max-tokens); lower --max-tokens to 30963 or less");
	CHECK(stat(xasprintf("%s/results.jsonl", out), &st) != 0); /* nothing ran */
	proc_out_release(&o);
	o = rlm(tight);
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "rlm: error: long (direct): direct: the question and the reply's "
			      "30900 tokens fill sim's window of 32000: no room for the context");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 2);
	r = find(arr, "short", "direct");
	CHECK(json_num(r, "score", -1) == 1);
	CHECK_INT(json_int(r, "context_cut_tokens", -1), 0);
	r = find(arr, "long", "direct");
	CHECK_STR(json_str(r, "stop"), "error");
	CHECK_INT(json_int(r, "calls", -1), 0); /* no call without the context */
	cJSON_Delete(arr);
	free(q);
}

/* On a terminal (script(1) gives it one) the progress bar is drawn on
 * stderr; elsewhere it is not (every other test). */
TEST(run_progress_bar_on_a_terminal)
{
	char *ds = gen_sniah(), *out = tmp("out"), *cmd;
	const char *argv[] = {"/usr/bin/script", "-qec", NULL, "/dev/null", NULL};
	struct proc_out o;
	if (access("/usr/bin/script", X_OK) != 0)
		SKIP("no /usr/bin/script");
	cmd = xasprintf("%s bench run %s --strategy direct --no-cache --out %s >/dev/null",
			harness_rlm_bin(), ds, out);
	argv[2] = cmd;
	CHECK_INT(proc_run(argv, NULL, clean_env, 60, &o), 0);
	CHECK_MSG(o.status == 0, "exit %d: %s %s", o.status, o.out, o.err);
	CHECK_CONTAINS(o.out, "\r\033[K[");
	CHECK_CONTAINS(o.out, "] 2/2 solves");
	CHECK_CONTAINS(o.out, "ETA ");
	proc_out_release(&o);
	free(cmd);
}

/* ---- importing the real benchmarks (scripts/bench_import.py) ---- */

/* scripts/bench_import.py: under the current directory (make runs the tests
 * from the top), else next to the rlm binary's folder (build/rlm). */
static char *import_tool(void)
{
	const char *bin = harness_rlm_bin(), *slash = strrchr(bin, '/');
	char *alt;
	if (access("scripts/bench_import.py", R_OK) == 0)
		return xstrdup("scripts/bench_import.py");
	alt = xasprintf("%.*s/../scripts/bench_import.py", (int)(slash ? slash - bin : 0), bin);
	CHECK_MSG(access(alt, R_OK) == 0, "no scripts/bench_import.py (run from the top)");
	return alt;
}

static struct proc_out import(const char *const *args)
{
	const char *argv[24];
	char *tool = import_tool();
	struct proc_out o;
	size_t n = 0;
	argv[n++] = "/usr/bin/python3";
	argv[n++] = tool;
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	free(tool);
	return o;
}

/* OOLONG rows in the shape of oolongbench/oolong-synth (anchors-paper.md
 * section 3): golds as Python list literals, answer types, several rows
 * per context window, and a row of another source dataset. */
static const char oolong_rows[] =
    "{\"id\": 101, \"context_len\": 1024, \"dataset\": \"trec_coarse\", "
    "\"context_window_text\": \"The following lines contain general-knowledge questions, one "
    "per line.\\nDate: Dec 12, 2022 || User: 63685 || Instance: How many years old is Benny "
    "Carter ?\\nDate: Mar 04, 2023 || User: 44120 || Instance: What is the capital of Peru "
    "?\\nDate: Mar 04, 2023 || User: 63685 || Instance: Who wrote Hamlet ?\\n\", "
    "\"context_window_text_with_labels\": \"(labelled)\", \"question\": \"In the above data, "
    "which of the labels is the most common? Give your final answer in the form 'Label: "
    "answer'.\", \"task_group\": \"counting\", \"task\": \"TASK_TYPE.MOST_FREQ\", \"answer\": "
    "\"['entity']\", \"answer_type\": \"ANSWER_TYPE.LABEL\", \"input_subset\": \"False\", "
    "\"num_labels\": 6, \"context_window_id\": 7}\n"
    "{\"id\": 102, \"context_len\": 1024, \"dataset\": \"trec_coarse\", "
    "\"context_window_text\": \"The following lines contain general-knowledge questions, one "
    "per line.\\nDate: Dec 12, 2022 || User: 63685 || Instance: How many years old is Benny "
    "Carter ?\\nDate: Mar 04, 2023 || User: 44120 || Instance: What is the capital of Peru "
    "?\\nDate: Mar 04, 2023 || User: 63685 || Instance: Who wrote Hamlet ?\\n\", "
    "\"question\": \"How many data points should be classified as label 'location'? Give your "
    "final answer in the form 'Answer: number'.\", \"task_group\": \"counting\", \"task\": "
    "\"TASK_TYPE.NUMERIC_ONE_CLASS\", \"answer\": \"[1]\", \"answer_type\": "
    "\"ANSWER_TYPE.NUMERIC\", \"context_window_id\": 7}\n"
    "\n"
    "{\"id\": 103, \"context_len\": 1024, \"dataset\": \"trec_coarse\", "
    "\"context_window_text\": \"Date: Jan 02, 2024 || User: 11111 || Instance: What does NASA "
    "stand for ?\\n\", \"question\": \"Which date is the most common? Give your final answer in "
    "the form 'Date: MM/DD/YYYY'.\", \"task_group\": \"timeline\", \"task\": "
    "\"TASK_TYPE.MOST_FREQ_DATE\", \"answer\": \"[datetime.date(2024, 1, 2)]\", "
    "\"answer_type\": \"ANSWER_TYPE.DATE\", \"context_window_id\": 8}\n"
    "{\"id\": 104, \"context_len\": 1024, \"dataset\": \"trec_coarse\", "
    "\"context_window_text\": \"Date: Jan 02, 2024 || User: 11111 || Instance: What does NASA "
    "stand for ?\\n\", \"question\": \"Which user is the most common? Give your final answer "
    "in the form 'User: X'.\", \"task_group\": \"user\", \"task\": "
    "\"TASK_TYPE.MOST_FREQ_USER\", \"answer\": \"[11111]\", \"answer_type\": "
    "\"ANSWER_TYPE.USER\", \"context_window_id\": 8}\n"
    "{\"id\": 105, \"context_len\": 1024, \"dataset\": \"spam\", \"context_window_text\": "
    "\"spam or ham\", \"question\": \"q?\", \"answer\": \"['spam']\", \"answer_type\": "
    "\"ANSWER_TYPE.LABEL\", \"context_window_id\": 9}\n";

TEST(run_imports_real_oolong_rows)
{
	char *rows = tmp("oolong-rows.jsonl"), *ds = tmp("oo"), *jl = tmp("oo/oolong.jsonl");
	char *out = tmp("oo-out"), *w7 = tmp("oo/contexts/w-7.txt"), *s;
	const char *imp[] = {"oolong", rows, "--out", ds, "--dataset", "trec_coarse", NULL};
	const char *run[] = {"bench", "run",	    jl,	   "--strategy", "direct,repl",
			     "--out", out,	    "--no-cache", "--quiet", NULL};
	struct proc_out o;
	const cJSON *r;
	cJSON *arr, *item;
	size_t n;
	struct stat st;
	write_text(rows, oolong_rows);
	o = import(imp);
	CHECK_MSG(o.status == 0, "import: %s", o.err);
	CHECK_CONTAINS(o.err, "4 items over 2 context windows");
	proc_out_release(&o);
	/* one file per window, the golds as OOLONG stores them */
	CHECK(stat(w7, &st) == 0 && st.st_size > 100);
	CHECK(stat(tmp("oo/contexts/w-9.txt"), &st) != 0); /* spam: filtered out */
	s = slurp(jl);
	item = json_parse(s, strcspn(s, "\n"));
	CHECK(item);
	CHECK_STR(json_str(item, "id"), "oolong-101");
	CHECK_STR(json_str(item, "suite"), "oolong-trec_coarse");
	CHECK_STR(json_str(item, "answer"), "['entity']");
	CHECK_STR(json_str(item, "answer_type"), "ANSWER_TYPE.LABEL");
	CHECK_STR(json_str(item, "context_path"), "contexts/w-7.txt");
	CHECK_STR(json_str(item, "scorer"), "oolong");
	CHECK_INT(json_int(item, "tokens", 0), 1024);
	CHECK_STR(json_str(item, "task"), "TASK_TYPE.MOST_FREQ");
	cJSON_Delete(item);
	free(s);

	/* bench run takes them as they are */
	o = rlm(run);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.out, "oolong-trec_coarse");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 8);
	check_all_scored(arr);
	cJSON_ArrayForEach(r, arr)
	{
		CHECK(json_str(r, "answer_type"));
	}
	/* The simulator counts no line as a location ("0"): off by one from the
	 * gold "[1]", a NUMERIC answer: 0.75, read from OOLONG's literal. */
	r = find(arr, "oolong-102", "direct");
	CHECK_STR(json_str(r, "answer"), "0");
	CHECK_STR(json_str(r, "gold"), "[1]");
	CHECK(fabs(json_num(r, "score", -1) - 0.75) < 1e-9);
	cJSON_Delete(arr);

	/* a row without its question is named, and nothing is written */
	write_text(rows, "{\"id\": 1, \"dataset\": \"trec_coarse\", \"context_window_text\": "
			 "\"x\", \"answer\": \"[1]\"}\n");
	o = import(imp);
	CHECK_INT(o.status, 1);
	s = xasprintf("bench_import.py: error: %s:1: no 'question' (a string)", rows);
	CHECK_CONTAINS(o.err, s);
	CHECK(!strstr(o.err, "Traceback"));
	proc_out_release(&o);
	free(s);
}

/* BrowseComp-Plus queries (decrypted) with their own documents, and a
 * corpus to draw the others from. */
TEST(run_imports_real_browsecomp_rows)
{
	char *q = tmp("queries.jsonl"), *corpus = tmp("corpus.jsonl"), *ds = tmp("bc"),
	     *ds2 = tmp("bc2"), *out = tmp("bc-out"), *s, *s2, *p1 = tmp("bc/docs/1.jsonl");
	const char *imp[] = {"browsecomp", q,	 "--corpus", corpus, "--docs", "8",
			     "--out",	   ds,	 "--seed",   "3",    NULL};
	const char *imp2[] = {"browsecomp", q,	"--corpus", corpus, "--docs", "8",
			      "--out",	    ds2, "--seed",   "3",    NULL};
	const char *run[] = {"bench", "run", NULL, "--strategy", "repl", "--out", out,
			     "--no-cache", "--quiet", NULL};
	struct buf b = BUF_INIT;
	struct proc_out o;
	cJSON *arr;
	size_t n, docs = 0;
	write_text(q, "{\"query_id\": \"1\", \"query\": \"Which festival did La Union hold in "
		      "1998?\", \"answer\": \"Kawayan Festival\", \"gold_docs\": [{\"docid\": "
		      "\"900\", \"text\": \"La Union held the Kawayan Festival in 1998.\", \"url\": "
		      "\"u\"}], \"evidence_docs\": [{\"docid\": \"900\", \"text\": \"La Union held "
		      "the Kawayan Festival in 1998.\"}, {\"docid\": 901, \"text\": \"La Union lies "
		      "on the coast.\"}], \"negative_docs\": [{\"docid\": \"902\", \"text\": "
		      "\"Another town held another festival.\"}]}\n"
		      "{\"query_id\": 2, \"query\": \"Who founded Zanifell?\", \"answer\": \"Lucan "
		      "Tovoquist\", \"gold_docs\": [{\"docid\": \"910\", \"text\": \"Lucan Tovoquist "
		      "founded Zanifell.\"}]}\n");
	for (int i = 0; i < 20; i++)
		buf_printf(&b, "{\"docid\": \"%d\", \"text\": \"Filler document %d.\", \"url\": "
			       "\"u\"}\n", i, i);
	write_text(corpus, b.p);
	buf_release(&b);
	o = import(imp);
	CHECK_MSG(o.status == 0, "import: %s", o.err);
	proc_out_release(&o);
	/* 8 documents: the query's 3, then 5 drawn, each once */
	s = slurp(p1);
	for (char *p = s; (p = strchr(p, '\n')); p++)
		docs++;
	CHECK_INT(docs, 8);
	CHECK_CONTAINS(s, "{\"docid\":\"900\",\"text\":\"La Union held the Kawayan Festival");
	CHECK_CONTAINS(s, "\"docid\":\"901\"");
	CHECK_CONTAINS(s, "\"docid\":\"902\"");
	CHECK_CONTAINS(s, "Filler document");
	free(s);
	s = slurp(xasprintf("%s/browsecomp.jsonl", ds));
	CHECK_CONTAINS(s, "\"id\":\"bcp-1\",\"suite\":\"browsecomp-plus\"");
	CHECK_CONTAINS(s, "\"answer\":[\"Kawayan Festival\"],\"context_path\":\"docs/1.jsonl\","
			  "\"format\":\"jsonl\",\"scorer\":\"exact\",\"documents\":8");
	CHECK_CONTAINS(s, "Reply with the exact answer alone.");
	CHECK_CONTAINS(s, "\"gold_docids\":[\"900\"]");
	/* seeded: the same options give the same bytes */
	o = import(imp2);
	CHECK_INT(o.status, 0);
	proc_out_release(&o);
	s2 = slurp(xasprintf("%s/browsecomp.jsonl", ds2));
	CHECK_STR(s2, s);
	CHECK_STR(slurp(xasprintf("%s/docs/1.jsonl", ds2)), slurp(p1));
	free(s);
	free(s2);
	run[2] = xasprintf("%s/browsecomp.jsonl", ds);
	o = rlm(run);
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	/* no tokens given: the sizes are estimated, to a power of two */
	CHECK_CONTAINS(o.out, "browsecomp-plus  ~32     0.000 (1)");
	CHECK_CONTAINS(o.out, "browsecomp-plus  ~64     0.000 (1)");
	proc_out_release(&o);
	arr = results(out, &n);
	CHECK_INT(n, 2);
	check_all_scored(arr);
	cJSON_Delete(arr);
}

/* ---- bad input ---- */

TEST(run_bad_dataset_lines_are_named)
{
	char *ds = tmp("bad.jsonl"), *out = tmp("out"), *ctx = tmp("here.txt"), *want;
	const char *args[] = {"bench", "run", ds, "--out", out, "--no-cache", NULL};
	struct proc_out o;
	struct stat st;
	write_text(ctx, "some text\n");
	write_text(ds,
		   "{\"id\":\"a\",\"question\":\"q?\",\"answer\":[\"x\"],\"context\":\"x\","
		   "\"scorer\":\"exact\"}\n"
		   "{\"id\":\"b\",\"question\":\"q?\"\n"
		   "{\"id\":\"c\",\"question\":\"q?\",\"answer\":[\"x\"],\"context\":\"x\","
		   "\"scorer\":\"rouge\"}\n"
		   "{\"id\":\"d\",\"question\":\"q?\",\"answer\":[\"x\"],"
		   "\"context_path\":\"nowhere.txt\",\"scorer\":\"exact\"}\n"
		   "{\"id\":\"a\",\"question\":\"q?\",\"answer\":[\"x\"],"
		   "\"context_path\":\"here.txt\",\"scorer\":\"exact\"}\n"
		   "[1, 2]\n"
		   "{\"id\":\"e\",\"answer\":[\"x\"],\"context\":\"x\",\"scorer\":\"exact\"}\n"
		   "{\"id\":\"f\",\"question\":\"q?\",\"answer\":[\"x\"],\"scorer\":\"exact\"}\n"
		   "{\"id\":\"g\",\"question\":\"q?\",\"answer\":{\"x\":1},\"context\":\"x\","
		   "\"scorer\":\"exact\"}\n"
		   "{\"id\":\"h\",\"question\":\"q?\",\"answer\":\"['x']\",\"context\":\"x\","
		   "\"scorer\":\"oolong\",\"answer_type\":\"ANSWER_TYPE.NUMERIC\"}\n"
		   "{\"id\":\"i\",\"question\":\"q?\",\"answer\":\"['x'\",\"context\":\"x\","
		   "\"scorer\":\"oolong\"}\n"
		   "{\"id\":\"j\",\"question\":\"q?\",\"answer\":[\"x\"],\"context\":\"x\","
		   "\"scorer\":\"oolong\",\"answer_type\":7}\n");
	o = rlm(args);
	CHECK_INT(o.status, 1);
	want = xasprintf("rlm: error: %s:2: not valid JSON\n", ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:3: item 'c': unknown scorer 'rouge' (known: contains_all, exact, "
			 "oolong, set_f1, mc)",
			 ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:4: item 'd': cannot read context '%s/nowhere.txt': No such file", ds,
			 harness_tmpdir());
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:5: duplicate id 'a' (also at %s:1)", ds, ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:6: not a JSON object", ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:7: item 'e': no \"question\"", ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:8: item 'f': want one of \"context\"", ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:9: item 'g': no \"answer\"", ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:10: item 'h': gold answer for scorer 'oolong' is 'x', which is no "
			 "integer (answer_type NUMERIC)",
			 ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:11: item 'i': gold answer for scorer 'oolong': bad Python literal at "
			 "byte 4: want ',' or ']'",
			 ds);
	CHECK_CONTAINS(o.err, want);
	want = xasprintf("%s:12: item 'j': \"answer_type\" is not a non-empty string", ds);
	CHECK_CONTAINS(o.err, want);
	CHECK_CONTAINS(o.err, "nothing was run");
	CHECK(stat(out, &st) != 0); /* nothing was written */
	proc_out_release(&o);
}

TEST(run_usage)
{
	static const struct {
		const char *args[6];
		int status;
		const char *err;
	} cases[] = {
	    {{"bench", "run", NULL}, 2, "no dataset"},
	    {{"bench", "run", "x.jsonl", "--strategy", "repl,rag", NULL},
	     2,
	     "unknown strategy 'rag' in --strategy (known: repl, tree, direct)"},
	    {{"bench", "run", "x.jsonl", "--strategy", ",", NULL}, 2, "--strategy is empty"},
	    {{"bench", "run", "x.jsonl", "--jobs", "0", NULL}, 2, "bad value '0' for --jobs"},
	    {{"bench", "run", "x.jsonl", "--limit", "-1", NULL}, 2, "bad value '-1' for --limit"},
	    {{"bench", "run", "x.jsonl", "--frobnicate", NULL}, 2, "unknown option '--frobnicate'"},
	    {{"bench", "run", "x.jsonl", "--out", NULL}, 2, "needs a value"},
	    {{"bench", "run", "x.jsonl", "--max-depth", "99", NULL}, 2, "max-depth"},
	    {{"bench", "run", "/nonexistent/x.jsonl", "--no-cache", NULL},
	     1,
	     "cannot open dataset '/nonexistent/x.jsonl'"},
	    {{"bench", "frob", NULL}, 2, "known: gen, run, perf"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct proc_out o = rlm(cases[i].args);
		CHECK_MSG(o.status == cases[i].status, "case %zu: exit %d: %s", i, o.status, o.err);
		CHECK_CONTAINS(o.err, cases[i].err);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"bench", "run", "--help", NULL};
		struct proc_out o = rlm(args);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "usage: rlm bench run DATASET.jsonl");
		CHECK_CONTAINS(o.out, "direct  the baseline");
		CHECK_CONTAINS(o.out, "results.jsonl");
		CHECK_CONTAINS(o.out, "Resuming:");
		CHECK_CONTAINS(o.out, "--sub-model");	   /* the model options */
		CHECK_CONTAINS(o.out, "--max-iterations"); /* the limits */
		CHECK_CONTAINS(o.out, "Exit status: 0 the run completed");
		proc_out_release(&o);
	}
}

/* ---- the report, in-process ---- */

TEST(report_quantiles_and_sizes)
{
	static const struct {
		double v[6];
		size_t n;
		double q, want;
	} qs[] = {
	    {{0}, 0, 0.5, 0},
	    {{7}, 1, 0.95, 7},
	    {{1, 2, 3, 4}, 4, 0.5, 2.5},
	    {{4, 3, 2, 1}, 4, 0.25, 1.75},
	    {{1, 2, 3, 4, 5}, 5, 0.95, 4.8},
	    {{10, 0, 5}, 3, 0.75, 7.5},
	    {{1, 2, 3, 4, 5}, 5, 1.0, 5},
	};
	static const struct {
		int64_t t;
		const char *want;
	} sizes[] = {
	    {8000, "8k"},   {32000, "32k"},    {128000, "128k"}, {1000000, "1M"}, {10000000, "10M"},
	    {1500, "1.5k"}, {2500000, "2.5M"}, {999, "999"},	 {8123, "8123"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(qs); i++) {
		double v[6];
		memcpy(v, qs[i].v, sizeof(v));
		CHECK_MSG(fabs(bench_quantile(v, qs[i].n, qs[i].q) - qs[i].want) < 1e-9,
			  "case %zu: %g", i, bench_quantile(v, qs[i].n, qs[i].q));
	}
	static const struct {
		int64_t t, bucket;
		const char *label;
	} buckets[] = {
	    {0, 1, "~1"},	      {1, 1, "~1"},		{3, 4, "~4"},
	    {90, 64, "~64"},	      {91, 128, "~128"},	{1000, 1024, "~1k"},
	    {8000, 8192, "~8k"},      {131072, 131072, "~128k"}, {185363, 131072, "~128k"},
	    {185364, 262144, "~256k"}, {1000000, 1048576, "~1M"}, {10000000, 8388608, "~8M"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		char buf[16];
		bench_fmt_tokens(sizes[i].t, buf, sizeof(buf));
		CHECK_STR(buf, sizes[i].want);
		bench_fmt_size(sizes[i].t, false, buf, sizeof(buf));
		CHECK_STR(buf, sizes[i].want);
	}
	/* estimated lengths: the nearest power of two on a log scale */
	for (size_t i = 0; i < ARRAY_SIZE(buckets); i++) {
		char buf[16];
		CHECK_MSG(bench_size_bucket(buckets[i].t) == buckets[i].bucket, "%lld: %lld",
			  (long long)buckets[i].t, (long long)bench_size_bucket(buckets[i].t));
		bench_fmt_size(buckets[i].bucket, true, buf, sizeof(buf));
		CHECK_STR(buf, buckets[i].label);
	}
}

#define S(x) ((char *)(uintptr_t)(x))

TEST(report_escapes_what_users_name)
{
	struct bench_res res[] = {
	    {S("1"), S("a<b&\"c'"), S("repl"), 8000, 1, 1500, 0.01, false, false, false, false, {0}},
	    {S("2"), S("a<b&\"c'"), S("repl"), 1000000, 0.5, 9000, 0.2, false, false, false, false, {0}},
	    {S("1"), S("a<b&\"c'"), S("direct"), 8000, 1, 300, 0.001, false, false, false, false, {0}},
	    {S("2"), S("a<b&\"c'"), S("direct"), 1000000, 0, 400, 0.002, true, true, false, false, {0}},
	    {S("3"), S("pipes|here"), S("direct"), 32000, 0.25, 350, 0, false, false, false, false, {0}},
	    /* no tokens given: 91 and 120 tokens estimated, both ~128 */
	    {S("4"), S("mine"), S("repl"), 91, 1, 100, 0.003, false, false, false, true, {0}},
	    {S("5"), S("mine"), S("repl"), 120, 0, 300, 0.001, false, false, false, true, {0}},
	};
	const char *strategies[] = {"repl", "direct"}, *datasets[] = {"x.jsonl"};
	struct bench_report r = {.res = res,
				 .n = 5,
				 .strategies = strategies,
				 .n_strategies = 2,
				 .command = "rlm bench run x.jsonl",
				 .date = "2026-01-02 03:04 UTC",
				 .models = "`sim`",
				 .model = "sim",
				 .sub_model = "sim-mini",
				 .datasets = datasets,
				 .n_datasets = 1,
				 .notes = "- a note\n"};
	struct rlm_err err = {0, ""};
	char *dir = tmp("rep"), *md, *p;
	const cJSON *g;
	cJSON *sum;
	CHECK_INT(mkdir(dir, 0755), 0);
	CHECK_INT(bench_report_write(&r, dir, &err), 0);
	md = slurp(xasprintf("%s/report.md", dir));
	CHECK_CONTAINS(md, "| a<b&\"c' | 8k | 1.000 (1) | 1.000 (1) |");
	CHECK_CONTAINS(md, "| a<b&\"c' | 1M | 0.500 (1) | 0.000 (1, 1 failed) |");
	CHECK_CONTAINS(md, "| pipes\\|here | 32k | - | 0.250 (1) |");
	CHECK_CONTAINS(md, "| repl | 2 | 3.38 s | 5.25 s | 7.12 s | 8.62 s |");
	CHECK_CONTAINS(md, "## Notes\n\n- a note\n");
	CHECK(!strstr(md, "A size marked ~"));
	/* per suite and size: p25..p95 of one item are that item's */
	CHECK_CONTAINS(md, "| suite | size | strategy | items | latency p25 |");
	CHECK_CONTAINS(md, "| a<b&\"c' | 1M | repl | 1 | 9.00 s | 9.00 s | 9.00 s | 9.00 s | "
			   "$0.2000 | $0.2000 | $0.2000 | $0.2000 | $0.2000 |");
	CHECK_CONTAINS(md, "| pipes\\|here | 32k | direct | 1 | 0.350 s |");
	CHECK_CONTAINS(md, "- rlm: " RLM_VERSION " (commit ");
	p = slurp(xasprintf("%s/summary.json", dir));
	sum = json_parse(p, strlen(p));
	CHECK(sum);
	CHECK_STR(json_str(sum, "model"), "sim");
	CHECK_STR(json_str(sum, "sub_model"), "sim-mini");
	CHECK_STR(json_str(sum, "commit"), rlm_git_commit);
	g = cJSON_GetArrayItem(json_get(sum, "strategies"), 0);
	CHECK_STR(json_str(g, "strategy"), "repl");
	CHECK_INT(json_int(g, "items", 0), 2);
	CHECK(fabs(json_num(g, "score_mean", 0) - 0.75) < 1e-9);
	CHECK(fabs(json_num(json_get(g, "latency_s"), "p50", 0) - 5.25) < 1e-9);
	CHECK_INT(cJSON_GetArraySize(json_get(sum, "groups")), 5);
	g = cJSON_GetArrayItem(json_get(sum, "groups"), 3); /* a<b 1M direct */
	CHECK_STR(json_str(g, "size_label"), "1M");
	CHECK_STR(json_str(g, "strategy"), "direct");
	CHECK_INT(json_int(g, "failed", -1), 1);
	CHECK(fabs(json_num(json_get(g, "cost_usd"), "p95", 0) - 0.002) < 1e-12);
	cJSON_Delete(sum);
	free(p);
	/* estimated lengths are grouped and labelled as such */
	r.n = ARRAY_SIZE(res);
	CHECK_INT(bench_report_write(&r, dir, &err), 0);
	md = slurp(xasprintf("%s/report.md", dir));
	CHECK_CONTAINS(md, "| mine | ~128 | 0.500 (2) | - |");
	CHECK_CONTAINS(md, "| mine | ~128 | repl | 2 | 0.150 s | 0.200 s | 0.250 s | 0.290 s |");
	CHECK_CONTAINS(md, "A size marked ~ groups items that gave no `tokens`");
	p = slurp(xasprintf("%s/summary.json", dir));
	CHECK_CONTAINS(p, "\"size\":\t128,\n\t\t\t\"size_label\":\t\"~128\",\n\t\t\t"
			  "\"size_estimated\":\ttrue");
	free(p);
	r.n = 5;
	p = xasprintf("%s/score_vs_length.svg", dir);
	check_svg(p);
	CHECK_CONTAINS(slurp(p), "a&lt;b&amp;&quot;c&#39; / repl");
	check_svg(xasprintf("%s/cost_latency.svg", dir));
	/* One size, one strategy, nothing: still plots that parse. */
	r.n = 1;
	r.n_strategies = 1;
	CHECK_INT(bench_report_write(&r, dir, &err), 0);
	check_svg(p);
	r.n = 0;
	CHECK_INT(bench_report_write(&r, dir, &err), 0);
	check_svg(p);
	check_svg(xasprintf("%s/cost_latency.svg", dir));
	/* A directory that is not there is an error naming the file. */
	CHECK(bench_report_write(&r, "/nonexistent/dir", &err) < 0);
	CHECK_CONTAINS(err.msg, "cannot write '/nonexistent/dir/report.md'");
}

/* Host tools: the discovery health of the items that had them, summed per
 * strategy, in report.md, the text summary and summary.json. */
TEST(report_sums_tool_discovery)
{
	struct bench_res res[] = {
	    {S("1"), S("tools"), S("repl"), 8000, 1, 1500, 0.01, false, false, false, false,
	     {true, 3, 1, 0, 0, 0}},
	    {S("2"), S("tools"), S("repl"), 8000, 0, 900, 0.01, false, false, false, false,
	     {true, 7, 4, 2, 1, 3}},
	    {S("3"), S("tools"), S("direct"), 8000, 1, 300, 0.001, false, false, false, false, {0}},
	};
	const char *strategies[] = {"repl", "direct"}, *datasets[] = {"x.jsonl"};
	struct bench_report r = {.res = res, .n = 3, .strategies = strategies, .n_strategies = 2,
				 .command = "rlm bench run x.jsonl", .date = "2026-01-02 03:04 UTC",
				 .models = "`sim`", .model = "sim", .sub_model = "sim",
				 .datasets = datasets, .n_datasets = 1};
	struct rlm_err err = {0, ""};
	char *dir = tmp("reptools"), *md, *p;
	cJSON *sum;
	const cJSON *t;
	FILE *f;
	CHECK_INT(mkdir(dir, 0755), 0);
	CHECK_INT(bench_report_write(&r, dir, &err), 0);
	md = slurp(xasprintf("%s/report.md", dir));
	CHECK_CONTAINS(md, "## Tool discovery");
	CHECK_CONTAINS(md, "| repl | 2 | 10 | 5 | 2 | 1 | 3 |");
	CHECK(!strstr(md, "| direct | 1 | 0 |"));
	p = slurp(xasprintf("%s/summary.json", dir));
	sum = json_parse(p, strlen(p));
	t = json_get(cJSON_GetArrayItem(json_get(sum, "strategies"), 0), "tools");
	CHECK_INT(json_int(t, "calls_without_info", -1), 2);
	CHECK(!json_get(cJSON_GetArrayItem(json_get(sum, "strategies"), 1), "tools"));
	f = tmpfile();
	bench_report_print(&r, f);
	rewind(f);
	{
		char text[8192];
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = 0;
		CHECK_CONTAINS(text, "without info");
	}
	fclose(f);
	cJSON_Delete(sum);
}

/* The which-doc suite on the simulator: each item's answer is a document's
 * id, scored exactly; the repl strategy searches for the quoted phrase or
 * the code, or reads every document under its name for a plain question,
 * and names the right one on every item, as a JSONL of records and as a
 * directory of files; the tree strategy, whose parts carry no names, on
 * none. */
TEST(run_which_doc_scores_ids)
{
	static const char *const fmts[] = {"jsonl", "dir"};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		char *dir = xasprintf("%s/which-%s", harness_tmpdir(), fmts[f]),
		     *out = xasprintf("%s/which-%s-out", harness_tmpdir(), fmts[f]),
		     *ds = xasprintf("%s/which-doc.jsonl", dir);
		const char *g[] = {"bench",    "gen", "which-doc", "--sizes", "8k,64k", "--n", "3",
				   "--format", fmts[f], "--seed",  "9",	     "--out",  dir,   NULL};
		const char *args[] = {"bench",	"run", ds,     "--strategy", "repl,tree",
				      "--out",	out,   "--no-cache", "--quiet",  NULL};
		struct proc_out o = rlm(g);
		cJSON *arr, *r;
		size_t n, repl = 0, asks = 0;
		CHECK_MSG(o.status == 0, "bench gen which-doc: %s", o.err);
		proc_out_release(&o);
		o = rlm(args);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		CHECK_CONTAINS(o.out, "which-doc");
		proc_out_release(&o);
		arr = results(out, &n);
		CHECK_INT(n, 2 * 3 * 2);
		check_all_scored(arr);
		cJSON_ArrayForEach(r, arr)
		{
			const char *strategy = json_str(r, "strategy");
			double score = json_num(r, "score", -1);
			CHECK_STR(json_str(r, "suite"), "which-doc");
			/* tree too: its parts head each document with its id */
			CHECK_MSG(score == 1, "%s %s: score %g", strategy, json_str(r, "id"), score);
			repl += !strcmp(strategy, "repl");
		}
		CHECK_INT(repl, 6);
		/* the items asked more than one way */
		{
			char *text = slurp(ds);
			asks += strstr(text, "\"ask\":\"quoted\"") != NULL;
			asks += strstr(text, "\"ask\":\"code\"") != NULL;
			asks += strstr(text, "\"ask\":\"plain\"") != NULL;
			CHECK(asks >= 2);
			free(text);
		}
		cJSON_Delete(arr);
		free(ds);
		free(out);
		free(dir);
	}
}
