/* SPDX-License-Identifier: MIT */
/* tests/test_bench_perf.c -- `rlm bench perf` end to end, scaled down
 * (--quick): its JSON holds every row of DESIGN.md's performance table and
 * the server's, each with its target, value and verdict; a section that
 * fails marks its own rows and lets the others run. The shape is checked,
 * never the timings: the machine is shared, and --quick is no
 * measurement. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../rlm/rlm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* rows in the table: bench/perf_int.h's PERF_ROWS */
#define PERF_ROWS_WANT 25

/* No real provider or sandbox setting from the environment; extra adds
 * "NAME=value" entries. */
static struct proc_out rlm(const char *const *args, const char *extra)
{
	static const char *const clean[] = {"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL",
					    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
					    "RLM_SIM", "RLM_SANDBOX_DISABLE", "RLM_PERF_FAIL",
					    "RLM_CACHE", NULL};
	const char *argv[24], *env[16];
	struct proc_out o;
	size_t n = 0, k = 0;
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (size_t i = 0; clean[i]; i++)
		env[k++] = clean[i];
	if (extra)
		env[k++] = extra;
	env[k] = NULL;
	CHECK_INT(proc_run(argv, NULL, env, 300, &o), 0);
	return o;
}

static const cJSON *row(const cJSON *results, const char *name)
{
	const cJSON *r;
	cJSON_ArrayForEach(r, results)
	{
		if (strcmp(json_str(r, "name"), name) == 0)
			return r;
	}
	harness_fail(__FILE__, __LINE__, "no row '%s'", name);
}

/* A measured row: its target, a finite value, a unit, a verdict. */
static void check_measured(const cJSON *r)
{
	const char *name = json_str(r, "name");
	const cJSON *v = json_get(r, "value"), *ok = json_get(r, "ok");
	CHECK_MSG(!json_get(r, "failed"), "%s failed: %s", name, json_str(r, "error"));
	CHECK_MSG(json_str(r, "target") && *json_str(r, "target"), "%s: no target", name);
	CHECK_MSG(cJSON_IsNumber(v) && isfinite(v->valuedouble), "%s: no value", name);
	CHECK_MSG(json_str(r, "unit") && *json_str(r, "unit"), "%s: no unit", name);
	CHECK_MSG(cJSON_IsBool(ok), "%s: no ok", name);
	CHECK_MSG(json_str(r, "note") && *json_str(r, "note"), "%s: no note", name);
	CHECK_MSG(cJSON_IsNumber(json_get(r, "limit")) || cJSON_IsNull(json_get(r, "limit")),
		  "%s: no limit", name);
}

/* The commit baked in at build time: 12 hex digits, maybe "-dirty", or
 * "unknown" outside a git checkout. */
static void check_commit(const char *c)
{
	size_t n = c ? strspn(c, "0123456789abcdef") : 0;
	CHECK_MSG(c && ((n == 12 && (!c[12] || strcmp(c + 12, "-dirty") == 0)) ||
			strcmp(c, "unknown") == 0),
		  "commit '%s'", c ? c : "(none)");
}

/* DESIGN.md's performance table, row by row, and what answers it; then
 * the server's throughput (the list). */
TEST(perf_quick_json_has_every_row)
{
	static const char *const design[] = {
	    "fan-out efficiency",	   /* 1,000 sub-calls at concurrency 64 */
	    "controller CPU per call",	   /* controller CPU per sub-call */
	    "controller CPU per sub-call", /* ... over a whole solve */
	    "REPL exec round trip",	   /* p50 <= 200 us */
	    "zygote worker ready",	   /* new node's REPL ready */
	    "40 MB context ready",	   /* 10M tokens visible, one copy at most */
	    "10M-token dir load",	   /* ... loaded, one copy */
	    "10M-token JSONL load",
	    "warm-cache solve",		   /* 0 calls, <= 2% of cold */
	    "controller memory, 10M",	   /* <= 2 x context + 64 MB */
	    "serve throughput",		   /* the server row */
	    "search, 10M tokens",	   /* issue 17's search() */
	    "40 MB JSON ready",		   /* a structured context (issue 17) */
	    "batch: controller share",	   /* one batch of 256 over 10M tokens */
	    "batch at latency",
	};
	const char *args[] = {"bench", "perf", "--quick", "--json", NULL};
	struct proc_out o = rlm(args, NULL);
	const cJSON *results, *r, *opts;
	cJSON *j;
	size_t n = 0;
	/* 0 or 1: a target missed on a loaded machine is no failure here */
	CHECK_MSG(o.status == 0 || o.status == 1, "exit %d: %s", o.status, o.err);
	CHECK_MSG(!strstr(o.err, "sections failed"), "%s", o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %.300s", o.out);
	results = json_get(j, "results");
	CHECK(cJSON_IsArray(results));
	cJSON_ArrayForEach(r, results)
	{
		check_measured(r);
		n++;
	}
	CHECK_INT(n, PERF_ROWS_WANT);
	for (size_t i = 0; i < ARRAY_SIZE(design); i++)
		check_measured(row(results, design[i]));
	/* the rows that count copies say so, against one copy */
	for (size_t i = 5; i < 8; i++) {
		r = row(results, design[i]);
		CHECK_MSG(cJSON_IsNumber(json_get(r, "copies")), "%s: no copies", design[i]);
		CHECK(json_num(r, "copies_limit", 0) == 1.25);
		CHECK_CONTAINS(json_str(r, "target"), "1 copy");
	}
	/* a verdict agrees with its value and limit */
	r = row(results, "fan-out efficiency");
	CHECK(cJSON_IsTrue(json_get(r, "ok")) ==
	      (json_num(r, "value", 0) <= json_num(r, "limit", 0)));
	/* not a timing: the warm solve sends no call (its limit is -1 if it
	 * does), whatever the load */
	r = row(results, "warm-cache solve");
	CHECK_MSG(json_num(r, "limit", 0) == 2, "warm solve: %s", json_str(r, "note"));
	CHECK_CONTAINS(json_str(r, "note"), " 0 calls sent");
	r = row(results, "serve throughput");
	CHECK(cJSON_IsTrue(json_get(r, "at_least")));
	CHECK(cJSON_IsTrue(json_get(r, "ok")) ==
	      (json_num(r, "value", 0) >= json_num(r, "limit", 0)));
	/* what makes two runs comparable */
	CHECK_STR(json_str(j, "version"), RLM_VERSION);
	check_commit(json_str(j, "commit"));
	CHECK_MSG(strlen(json_str(j, "timestamp")) == 20 && json_str(j, "timestamp")[19] == 'Z',
		  "timestamp %s", json_str(j, "timestamp"));
	CHECK(json_int(j, "cpus", 0) >= 1);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "loadavg")), 3);
	CHECK(cJSON_IsNumber(cJSON_GetArrayItem(json_get(j, "loadavg"), 0)));
	opts = json_get(j, "options");
	CHECK(cJSON_IsTrue(json_get(opts, "quick")));
	CHECK_INT(json_int(opts, "calls", 0), 200);
	CHECK_INT(json_int(opts, "latency_ms", 0), 20);
	cJSON_Delete(j);
	proc_out_release(&o);
}

/* A section that fails marks its own rows with its error; the others run,
 * the table and the JSON are printed, and the exit status says so. */
TEST(perf_failed_section_keeps_the_others)
{
	const char *json[] = {"bench", "perf", "--quick", "--json", "--only", "fanout,subcall",
			      NULL};
	const char *text[] = {"bench", "perf", "--quick", "--only", "subcall,fanout", NULL};
	struct proc_out o = rlm(json, "RLM_PERF_FAIL=fanout");
	const cJSON *results, *r;
	cJSON *j;
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "rlm: error: fanout: a failure injected by RLM_PERF_FAIL");
	CHECK_CONTAINS(o.err, "1 of the sections failed");
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "not JSON: %.300s", o.out);
	results = json_get(j, "results");
	CHECK_INT(cJSON_GetArraySize(results), 3); /* --only: the others left out */
	r = row(results, "fan-out efficiency");
	CHECK(cJSON_IsTrue(json_get(r, "failed")));
	CHECK(cJSON_IsFalse(json_get(r, "ok")));
	CHECK(cJSON_IsNull(json_get(r, "value")));
	CHECK_STR(json_str(r, "target"), "<= 1.05");
	CHECK_CONTAINS(json_str(r, "error"), "section 'fanout' failed: fanout: a failure injected");
	CHECK(cJSON_IsTrue(json_get(row(results, "controller CPU per call"), "failed")));
	check_measured(row(results, "controller CPU per sub-call"));
	CHECK_STR(json_str(json_get(j, "options"), "only"), "fanout,subcall");
	cJSON_Delete(j);
	proc_out_release(&o);

	o = rlm(text, "RLM_PERF_FAIL=fanout");
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.out, "benchmark");
	CHECK_CONTAINS(o.out, "FAILED  (section 'fanout' failed");
	CHECK_CONTAINS(o.out, "controller CPU per sub-call");
	CHECK(!strstr(o.out, "REPL exec round trip"));
	proc_out_release(&o);
}

TEST(bench_perf_usage)
{
	static const struct {
		const char *args[6];
		const char *err;
	} cases[] = {
	    {{"bench", "perf", "--only", "fanout,nope", NULL}, "unknown section 'nope' in --only"},
	    {{"bench", "perf", "--only", "", NULL}, "unknown section '' in --only"},
	    {{"bench", "perf", "--calls", "0", NULL}, "bad value '0' for --calls"},
	    {{"bench", "perf", "--bogus", NULL}, "unknown option '--bogus'"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct proc_out o = rlm(cases[i].args, NULL);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, cases[i].err);
		proc_out_release(&o);
	}
	{
		const char *a[] = {"bench", "perf", "--help", NULL};
		struct proc_out o = rlm(a, NULL);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "--quick");
		CHECK_CONTAINS(o.out, "--only SECTIONS");
		proc_out_release(&o);
	}
}

TEST(version_has_the_commit)
{
	const char *a[] = {"--version", NULL};
	struct proc_out o = rlm(a, NULL);
	char *p;
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "rlm " RLM_VERSION " (commit ");
	p = strstr(o.out, "(commit ") + 8;
	p[strcspn(p, ")")] = '\0';
	check_commit(p);
	proc_out_release(&o);
}

/* A tree that is no git checkout (a tarball) builds with "unknown"; the
 * file is rewritten only when the commit changes. */
TEST(version_script_outside_git_says_unknown)
{
	const char *bin = harness_rlm_bin(), *slash = strrchr(bin, '/');
	char *script = access("scripts/version.sh", R_OK) == 0
			   ? realpath("scripts/version.sh", NULL)
			   : xasprintf("%.*s/../scripts/version.sh", (int)(slash - bin), bin);
	char *cmd = xasprintf("cd '%s' && sh '%s' out.c && cat out.c && touch -d @978307200 out.c "
			      "&& sh '%s' out.c && stat -c %%Y out.c",
			      harness_tmpdir(), script, script);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct proc_out o;
	CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "const char rlm_git_commit[] = \"unknown\";");
	CHECK_CONTAINS(o.out, "\n978307200\n"); /* not rewritten: same mtime */
	proc_out_release(&o);
	free(cmd);
	free(script);
}

/* bench/perf_int.h (whose bench_perf_usage is a test's name here) */
int64_t bench_perf_ideal_waves(const struct rlm_result *root, int conc);

/* A node of a tree for bench_perf_ideal_waves: r, with R root calls, `plain`
 * plain sub-calls and the n children already in kids; sub_calls counts
 * each child as one plus its own, as a solve does. */
static void node(struct rlm_result *r, int64_t R, int64_t plain, struct rlm_result *kids, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->root_calls = R;
	r->sub_calls = plain;
	r->children = kids;
	r->n_children = n;
	for (size_t i = 0; i < n; i++)
		r->sub_calls += 1 + kids[i].sub_calls;
}

/* The ideal schedule, by hand: a wave is one latency of at most conc
 * calls, first come first served; a node's next-to-last turn fans out. */
TEST(ideal_waves_by_hand)
{
	struct rlm_result root, kids[3], grand[2];
	/* flat: T1, T2, 1,000 leaves in 16 waves of 64, T3 */
	node(&root, 3, 1000, NULL, 0);
	CHECK_INT(bench_perf_ideal_waves(&root, 64), 19);
	/* two children of 10 leaves on 4 slots: T1 T2 | their T1 | their T2
	 * | 20 leaves in 5 waves | their T3 | T3 */
	node(&kids[0], 3, 10, NULL, 0);
	node(&kids[1], 3, 10, NULL, 0);
	node(&root, 3, 0, kids, 2);
	CHECK_INT(bench_perf_ideal_waves(&root, 4), 11);
	/* one root call a child, 2 slots: the children's calls and leaves
	 * queue behind each other: root T1 | k1 k2 | k3 l1 | l2 l3 | root T2 */
	for (int i = 0; i < 3; i++)
		node(&kids[i], 1, 1, NULL, 0);
	node(&root, 2, 0, kids, 3);
	CHECK_INT(bench_perf_ideal_waves(&root, 2), 5);
	/* depth 2, leaves beside a child at every level */
	node(&grand[0], 1, 2, NULL, 0);
	node(&grand[1], 1, 2, NULL, 0);
	node(&kids[0], 2, 3, grand, 2);
	node(&root, 2, 4, kids, 1);
	/* root T1 | 4 leaves + k0 T1 | k0 fans: g0 T1, g1 T1, 3 leaves |
	 * 4 g-leaves | k0 T2 | root T2 */
	CHECK_INT(bench_perf_ideal_waves(&root, 8), 6);
	/* more slots than calls change nothing; one slot is every call in
	 * turn: 2 + 4 + 2 + 3 + 2 + 4 = 17 */
	CHECK_INT(bench_perf_ideal_waves(&root, 1000), 6);
	CHECK_INT(bench_perf_ideal_waves(&root, 1), 17);
}
