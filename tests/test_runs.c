/* SPDX-License-Identifier: MIT */
/* tests/test_runs.c -- the store from the command line, end to end: the
 * call cache and the memo (hit, miss, refresh, off), runs recorded and
 * shown and exported, a run killed with SIGKILL and resumed without a call
 * made twice, a corrupt or locked store, the HTML viewer in headless
 * Chromium, and rlm skills from add to rm. The real rlm binary, the
 * simulator in process or served over loopback, and real SQLite files. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* rlm with args and extra environment entries (NULL-terminated); the
 * store is on (RLM_NO_CACHE unset), no real provider leaks in. */
static struct proc_out rlm_env(const char *const *args, const char *const *extra)
{
	return proc_rlm(args, extra, 120);
}

static struct proc_out rlm(const char *const *args)
{
	return rlm_env(args, NULL);
}

static cJSON *parse_out(const struct proc_out *o)
{
	cJSON *j = json_parse(o->out, strlen(o->out));
	CHECK_MSG(j, "not JSON (exit %d): %.300s / %.300s", o->status, o->out, o->err);
	return j;
}

struct item {
	char *dir, *ctx, *q, *answer;
};

/* One S-NIAH haystack of size (seed 3), one text or (format "dir",
 * "jsonl") 200 documents. */
static void item_gen_format(struct item *it, const char *size, const char *format)
{
	char *jl, *line;
	size_t len;
	cJSON *j;
	struct rlm_err err = {0, ""};
	struct proc_out o;
	it->dir = xasprintf("%s/gen-%s-%s", harness_tmpdir(), size, format);
	{
		bool docs = strcmp(format, "text") != 0;
		const char *args[] = {"bench", "gen", "sniah", "--sizes", size, "--seed", "3",
				      "--out", it->dir, "--format", format,
				      docs ? "--docs" : NULL, "200", NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "bench gen: %s", o.err);
	proc_out_release(&o);
	jl = xasprintf("%s/sniah.jsonl", it->dir);
	CHECK_INT(file_read(jl, 1 << 20, &line, &len, &err), 0);
	j = json_parse(line, strcspn(line, "\n"));
	CHECK(j);
	it->ctx = xasprintf("%s/%s", it->dir, json_str(j, "context_path"));
	it->q = xstrdup(json_str(j, "question"));
	it->answer = xstrdup(cJSON_GetArrayItem(json_get(j, "answer"), 0)->valuestring);
	cJSON_Delete(j);
	free(line);
	free(jl);
}

static void item_gen(struct item *it, const char *size)
{
	item_gen_format(it, size, "text");
}

static void item_free(struct item *it)
{
	free(it->dir);
	free(it->ctx);
	free(it->q);
	free(it->answer);
}

/* rlm solve over it with the store at db and more args, which must exit
 * with want; the JSON. */
static cJSON *solve_exit(const struct item *it, const char *db, const char *const *more,
			 const char *const *env, int want) /* want < 0: 0 or 3 */
{
	const char *args[40] = {"solve", "-c", it->ctx, "-q", it->q, "--json", "--quiet",
				"--cache", db};
	size_t n = 9;
	struct proc_out o;
	cJSON *j;
	for (size_t i = 0; more && more[i] && n < 39; i++)
		args[n++] = more[i];
	args[n] = NULL;
	o = rlm_env(args, env);
	CHECK_MSG(o.status == want || (want < 0 && (o.status == 0 || o.status == 3)), "exit %d: %s",
		  o.status, o.err);
	j = parse_out(&o);
	json_add_num(j, "exit_status", o.status);
	proc_out_release(&o);
	return j;
}

/* The same, which must succeed. */
static cJSON *solve(const struct item *it, const char *db, const char *const *more,
		    const char *const *env)
{
	return solve_exit(it, db, more, env, 0);
}

static double calls_of(const cJSON *j, const char *what)
{
	return json_num(json_get(j, "calls"), what, -1);
}

/* Rows of a table in the store (read-only, beside a writer). */
static int64_t rows(const char *db, const char *table)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	char sql[64];
	int64_t n = -1;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
		sqlite3_busy_timeout(h, 2000);
		if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return n;
}

/* A miss, then the memo (nothing runs), then --refresh (everything is
 * asked again), then --no-cache (nothing recorded). */
TEST(cache_hit_miss_refresh_and_off)
{
	struct item it;
	char *db = xasprintf("%s/c.db", harness_tmpdir());
	cJSON *a, *b, *c, *d;
	static const char *const refresh[] = {"--refresh", NULL};
	static const char *const off[] = {"--no-cache", NULL};
	double n;
	int64_t runs;
	item_gen(&it, "100k");
	a = solve(&it, db, NULL, NULL);
	CHECK_CONTAINS(json_str(a, "answer"), it.answer);
	n = calls_of(a, "total");
	CHECK(n >= 4);
	CHECK(calls_of(a, "attempts") >= n - calls_of(a, "cached"));
	CHECK(json_str(a, "run") != NULL);
	CHECK_INT(rows(db, "calls") > 0, 1);

	b = solve(&it, db, NULL, NULL);
	CHECK_STR(json_str(b, "answer"), json_str(a, "answer"));
	/* the memo: nothing sent, nothing spent; what the first spent is
	 * saved, and its calls are the original's (memo.calls) */
	CHECK(calls_of(b, "attempts") == 0);
	CHECK(calls_of(b, "total") == 0);
	CHECK(json_num(json_get(json_get(b, "memo"), "calls"), "total", -1) == n);
	CHECK(json_num(json_get(b, "usage"), "input_tokens", -1) == 0);
	CHECK(json_num(json_get(b, "cache"), "memo_hits", 0) == 1);
	CHECK(json_num(json_get(json_get(b, "cache"), "saved"), "input_tokens", 0) ==
	      json_num(json_get(a, "usage"), "input_tokens", -1));
	CHECK(cJSON_IsTrue(json_get(b, "found")) == cJSON_IsTrue(json_get(a, "found")));
	CHECK(strcmp(json_str(b, "run"), json_str(a, "run")) != 0);

	c = solve(&it, db, refresh, NULL);
	CHECK_STR(json_str(c, "answer"), json_str(a, "answer"));
	CHECK(calls_of(c, "total") == n);
	CHECK(calls_of(c, "cached") == 0);
	CHECK(json_num(json_get(c, "cache"), "memo_hits", -1) == 0);

	runs = rows(db, "runs");
	CHECK_INT(runs, 3);
	d = solve(&it, db, off, NULL);
	CHECK(calls_of(d, "total") == n);
	CHECK(json_get(d, "run") == NULL || cJSON_IsNull(json_get(d, "run")));
	CHECK_INT(rows(db, "runs"), runs);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
	item_free(&it);
	free(db);
}

/* ---- memo hits say so; progress; Ctrl-C ---- */

static cJSON *runs_list(const char *db);

/* A whole solve answered from the memo says so: one line on stderr (no
 * --verbose) naming the run the answer came from and its date; --json
 * has that run's id, its usage as saved (never as spent: this run spent
 * nothing and made no call), its calls by role and its children; with
 * --verbose its turns are replayed; runs show links the two runs. Over a
 * generated haystack with child RLMs, and over a real header file. */
TEST(memo_hit_names_the_run_its_answer_came_from)
{
	struct item it;
	char *db = xasprintf("%s/m.db", harness_tmpdir());
	static const char *const env[] = {"RLM_SIM=rlm_chunks=4", NULL};
	cJSON *a, *b, *ma, *mb;
	struct proc_out o;
	const char *ida, *idb;
	char *took;
	item_gen(&it, "200k");
	a = solve(&it, db, NULL, env);
	ida = json_str(a, "run");
	CHECK(ida && json_num(a, "nodes", 0) >= 2);
	CHECK(cJSON_GetArraySize(json_get(a, "children")) >= 2);
	/* the plain command: the answer, and one line on stderr */
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--cache", db, NULL};
		char *want = xasprintf("rlm: answered from run %s of ", ida);
		o = rlm_env(args, env);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, it.answer);
		CHECK_CONTAINS(o.err, want);
		CHECK_CONTAINS(o.err, "; --refresh to run again\n");
		CHECK(!strstr(o.err, "replaying"));
		free(want);
		proc_out_release(&o);
	}
	/* --json: the original run, its usage as saved, nothing spent */
	b = solve(&it, db, NULL, env);
	idb = json_str(b, "run");
	mb = json_get(b, "memo");
	CHECK_MSG(cJSON_IsObject(mb), "no memo object: %.300s", json_print(b));
	CHECK_STR(json_str(mb, "run"), ida);
	CHECK(json_str(mb, "date") && strlen(json_str(mb, "date")) == 20);
	CHECK(json_num(json_get(b, "usage"), "input_tokens", -1) == 0);
	CHECK(json_num(b, "cost_usd", -1) == 0);
	CHECK(calls_of(b, "total") == 0 && calls_of(b, "root") == 0 && calls_of(b, "sub") == 0);
	CHECK(json_num(json_get(json_get(b, "cache"), "saved"), "input_tokens", -1) ==
	      json_num(json_get(a, "usage"), "input_tokens", -2));
	CHECK(json_num(json_get(mb, "usage"), "output_tokens", -1) ==
	      json_num(json_get(a, "usage"), "output_tokens", -2));
	ma = json_get(a, "calls");
	CHECK(json_num(json_get(mb, "calls"), "root", -1) == json_num(ma, "root", -2));
	CHECK(json_num(json_get(mb, "calls"), "sub", -1) == json_num(ma, "sub", -2));
	{
		const cJSON *rb = json_get(json_get(mb, "usage_by_role"), "root");
		const cJSON *ra = json_get(json_get(a, "usage_by_role"), "root");
		CHECK(json_num(rb, "input_tokens", -1) == json_num(ra, "input_tokens", -2));
	}
	CHECK_INT(cJSON_GetArraySize(json_get(b, "children")),
		  cJSON_GetArraySize(json_get(a, "children")));
	CHECK(json_num(b, "nodes", -1) == json_num(a, "nodes", -2));
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(b, "children"), 0), "answer"),
		  json_str(cJSON_GetArrayItem(json_get(a, "children"), 0), "answer"));
	/* --verbose: the original's turns, marked replayed */
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--cache", db, "-v", NULL};
		o = rlm_env(args, env);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.err, "rlm: replaying run ");
		CHECK_CONTAINS(o.err, " output (");
		CHECK_CONTAINS(o.err, ", replayed)\n");
		CHECK_CONTAINS(o.err, "[d1 n1] turn 1 model");
		proc_out_release(&o);
	}
	/* runs show: the memo run names the original, which names it */
	{
		const char *args[] = {"runs", "show", idb, "--cache", db, NULL};
		char *want = xasprintf("answer of run %s", ida);
		o = rlm(args);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, want);
		/* it made no call, and says what the answer took when made */
		CHECK_CONTAINS(o.out, "; 0 model calls (0 from the cache), $0.0000, ");
		took = xasprintf("the answer took %.0f model calls, ", calls_of(a, "total"));
		CHECK_CONTAINS(o.out, took);
		free(took);
		free(want);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"runs", "show", ida, "--cache", db, NULL};
		o = rlm(args);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "reused by ");
		CHECK_CONTAINS(o.out, idb);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"runs", "show", ida, "--json", "--cache", db, NULL};
		cJSON *s, *m;
		bool seen = false;
		o = rlm(args);
		s = parse_out(&o);
		cJSON_ArrayForEach(m, json_get(s, "memo_runs"))
			seen |= cJSON_IsString(m) && strcmp(m->valuestring, idb) == 0;
		CHECK(seen);
		cJSON_Delete(s);
		proc_out_release(&o);
	}
	/* the HTML viewer: the memo run names the original, which names it */
	{
		const char *ids[2] = {idb, ida};
		const char *wants[2] = {"the answer of run ", "answered from its memo"};
		char *html = xasprintf("%s/memo.html", harness_tmpdir());
		char *url = xasprintf("file://%s", html);
		char *dir = xasprintf("--user-data-dir=%s/chromium-m", harness_tmpdir());
		struct stat st;
		if (stat("/usr/bin/chromium", &st) != 0)
			SKIP("headless Chromium is needed for this part: run `make deps`");
		for (int k = 0; k < 2; k++) {
			const char *args[] = {"runs", "export", ids[k], "--format", "html", "-o", html,
					      "--cache", db, NULL};
			const char *argv[] = {"/usr/bin/chromium", "--headless", "--no-sandbox",
					      "--disable-gpu", "--enable-logging=stderr", "--v=0",
					      dir, "--dump-dom", url, NULL};
			o = rlm(args);
			CHECK_MSG(o.status == 0, "export html: %s", o.err);
			proc_out_release(&o);
			CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
			CHECK_MSG(o.status == 0, "chromium exit %d: %.500s", o.status, o.err);
			CHECK_CONTAINS(o.out, wants[k]);
			CHECK_CONTAINS(o.out, ids[1 - k]);
			CHECK_MSG(!strstr(o.err, "Uncaught"), "a script error: %.500s", o.err);
			proc_out_release(&o);
		}
		free(html);
		free(url);
		free(dir);
	}
	/* --refresh runs it again: no memo */
	{
		static const char *const refresh[] = {"--refresh", NULL};
		cJSON *c = solve(&it, db, refresh, env);
		CHECK(json_get(c, "memo") == NULL);
		CHECK(calls_of(c, "total") > 0);
		cJSON_Delete(c);
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	item_free(&it);
	free(db);
}

/* The same over a real file (a system header, long lines and all): the
 * second solve names the first. */
TEST(memo_hit_over_a_real_file_says_so)
{
	const char *path = "/usr/include/stdio.h";
	char *db = xasprintf("%s/mr.db", harness_tmpdir());
	const char *q = "Which function opens a stream on a file descriptor?";
	struct proc_out o;
	cJSON *a;
	char *want;
	if (access(path, R_OK) != 0)
		SKIP("no %s", path);
	{
		const char *args[] = {"solve", "-c", path, "-q", q, "--json", "--quiet", "--cache", db,
				      NULL};
		o = rlm(args);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		a = parse_out(&o);
		proc_out_release(&o);
	}
	CHECK_STR(json_str(a, "stop"), "answer");
	want = xasprintf("rlm: answered from run %s of ", json_str(a, "run"));
	{
		const char *args[] = {"solve", "-c", path, "-q", q, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.err, want);
	CHECK_CONTAINS(o.out, json_str(a, "answer"));
	proc_out_release(&o);
	free(want);
	cJSON_Delete(a);
	free(db);
}

/* `make demo` (scripts/demo.sh) run twice on one store shows a real
 * trace both times: the second is answered from the memo, says so, and
 * shows the first run's REPL output, replayed. */
TEST(demo_twice_shows_a_trace_both_times)
{
	char *dir = xasprintf("%s/demo", harness_tmpdir());
	char *db = xasprintf("RLM_CACHE=%s/demo.db", harness_tmpdir());
	const char *argv[] = {"/bin/sh", "scripts/demo.sh", harness_rlm_bin(), dir, NULL};
	const char *env[] = {"RLM_NO_CACHE", "RLM_PROVIDER", "RLM_MODEL", "RLM_SIM", db, NULL};
	struct proc_out o;
	if (access("scripts/demo.sh", R_OK) != 0)
		SKIP("not run from the source tree");
	for (int i = 0; i < 2; i++) {
		CHECK_INT(proc_run(argv, NULL, env, 120, &o), 0);
		CHECK_MSG(o.status == 0, "run %d: exit %d: %s", i + 1, o.status, o.err);
		CHECK_CONTAINS(o.out, "== found the needle");
		CHECK_CONTAINS(o.out, "--- turn 1 output (");
		CHECK_CONTAINS(o.out, "type: str length: ");
		if (i == 1) {
			CHECK_CONTAINS(o.out, "== answered from run ");
			CHECK_CONTAINS(o.out, ", replayed)");
		}
		proc_out_release(&o);
	}
	free(dir);
	free(db);
}

/* The progress line's redraws in captured stderr: how many there are
 * (each "\r\033[K" followed by text), and the largest elapsed time they
 * show, in seconds. */
static int redraws(const char *err, double *max_s)
{
	int n = 0;
	*max_s = 0;
	for (const char *p = err; (p = strstr(p, "\r\033[K")); p += 4) {
		const char *end = p + 4;
		while (*end && *end != '\r' && *end != '\n')
			end++;
		if (end == p + 4)
			continue;
		n++;
		/* "...  12.3 s" */
		if (end - p > 6 && end[-1] == 's' && end[-2] == ' ') {
			const char *num = end - 2;
			while (num > p + 4 && (num[-1] == '.' || (num[-1] >= '0' && num[-1] <= '9')))
				num--;
			*max_s = RLM_MAX(*max_s, strtod(num, NULL));
		}
	}
	return n;
}

/* The progress line (forced off a tty) is redrawn at least 4 times a
 * second of the solve, with the time, even while a slow model keeps
 * anything from completing; it counts sub-calls as sub-calls and child
 * RLMs as child RLMs. */
TEST(progress_line_redraws_and_names_what_it_counts)
{
	struct item it;
	struct proc_out o;
	double max_s;
	int n;
	item_gen(&it, "200k");
	{
		/* flat: sub-calls, no child */
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--no-cache", "--progress",
				      "--sim", "ttft=400ms", "--max-depth", "1", NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	n = redraws(o.err, &max_s);
	CHECK_MSG(max_s >= 1.5, "the solve took %.1f s: too short to count", max_s);
	CHECK_MSG(n >= (int)(4 * max_s), "%d redraws in %.1f s", n, max_s);
	CHECK_CONTAINS(o.err, "the root model is thinking  ");
	CHECK_CONTAINS(o.err, ": sub-calls ");
	CHECK(!strstr(o.err, "child RLMs"));
	proc_out_release(&o);
	{
		/* recursive: the root's batch is of child RLMs */
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--no-cache", "--progress",
				      "--sim", "ttft=100ms,rlm_chunks=4", NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_CONTAINS(o.err, ": child RLMs ");
	n = redraws(o.err, &max_s);
	CHECK_MSG(n >= (int)(4 * max_s), "%d redraws in %.1f s", n, max_s);
	proc_out_release(&o);
	{
		/* RLM_PROGRESS=0 and --quiet: no line */
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--no-cache", NULL};
		static const char *const env[] = {"RLM_PROGRESS=0", NULL};
		o = rlm_env(args, env);
		CHECK_INT(o.status, 0);
		CHECK(!strstr(o.err, "\r\033[K"));
		proc_out_release(&o);
	}
	item_free(&it);
}

/* Start rlm with args in the background, stderr to err_path, stdout to
 * /dev/null, with a clean environment as rlm_env's. */
static pid_t start_to_file(const char *const *args, const char *err_path)
{
	const char *argv[40];
	size_t n = 0;
	pid_t p;
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	p = fork();
	if (p == 0) {
		static const char *const clean[] = {"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL",
						    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RLM_SIM",
						    "RLM_NO_CACHE", "RLM_CACHE", "RLM_MAX_DEPTH",
						    "RLM_PROGRESS", NULL};
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int nul = open("/dev/null", O_RDWR);
		for (size_t i = 0; clean[i]; i++)
			unsetenv(clean[i]);
		if (fd < 0 || nul < 0)
			_exit(127);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	return p;
}

/* Ctrl-C (SIGINT) during a solve with a store: the run id and the exact
 * command that resumes it on stderr, exit 130, the run "interrupted";
 * that command resumes it (its calls from the store), and runs show
 * links the two: "resumed by" and "resumes". */
TEST(sigint_names_the_run_and_how_to_resume_it)
{
	struct item it;
	char *db = xasprintf("%s/i.db", harness_tmpdir());
	char *errp = xasprintf("%s/sigint.err", harness_tmpdir());
	char *err = NULL, *cmd, *id = NULL;
	size_t len;
	struct rlm_err e = {0, ""};
	struct proc_out o;
	int status;
	int64_t t0;
	pid_t p;
	cJSON *list, *r;
	item_gen(&it, "100k");
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--cache", db, "--sim",
				      "ttft=300ms", "--max-depth", "1", NULL};
		p = start_to_file(args, errp);
	}
	CHECK(p > 0);
	t0 = time_now_ns();
	while (rows(db, "calls") < 2 && time_now_ns() - t0 < 30000000000LL)
		time_sleep_ns(10000000);
	CHECK(kill(p, SIGINT) == 0);
	while (waitpid(p, &status, 0) < 0 && errno == EINTR)
		;
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
	CHECK_INT(file_read(errp, 1 << 20, &err, &len, &e), 0);
	list = runs_list(db);
	r = cJSON_GetArrayItem(list, 0);
	CHECK_STR(json_str(r, "status"), "interrupted");
	id = xstrdup(json_str(r, "id"));
	cmd = xasprintf("rlm: interrupted: run %s is kept", id);
	CHECK_CONTAINS(err, cmd);
	free(cmd);
	cmd = xasprintf("\n  rlm solve --resume %s --cache %s\n", id, db);
	CHECK_CONTAINS(err, cmd);
	free(cmd);
	cJSON_Delete(list);
	/* the command it gave */
	{
		const char *args[] = {"solve", "--resume", id, "--cache", db, "--json", NULL};
		cJSON *j;
		char *hits;
		o = rlm(args);
		CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
		j = parse_out(&o);
		CHECK_CONTAINS(json_str(j, "answer"), it.answer);
		CHECK(calls_of(j, "cached") >= 1);
		/* the resumed run says what the store answered */
		hits = xasprintf("rlm: answered in part from the store: %.0f of %.0f model calls "
				 "from its cache",
				 calls_of(j, "cached"), calls_of(j, "total"));
		CHECK_CONTAINS(o.err, hits);
		free(hits);
		proc_out_release(&o);
		{
			const char *show[] = {"runs", "show", id, "--cache", db, NULL};
			char *want = xasprintf("resumed by %s\n", json_str(j, "run"));
			o = rlm(show);
			CHECK_CONTAINS(o.out, want);
			free(want);
			proc_out_release(&o);
		}
		{
			const char *show[] = {"runs", "show", json_str(j, "run"), "--cache", db, NULL};
			char *want = xasprintf("resumes   %s\n", id);
			o = rlm(show);
			CHECK_CONTAINS(o.out, want);
			free(want);
			proc_out_release(&o);
		}
		cJSON_Delete(j);
	}
	free(id);
	free(err);
	free(errp);
	free(db);
	item_free(&it);
}

/* Run SQL on the store (the test's own connection). */
static void sql(const char *db, const char *q)
{
	sqlite3 *h = NULL;
	char *msg = NULL;
	CHECK_INT(sqlite3_open(db, &h), SQLITE_OK);
	sqlite3_busy_timeout(h, 2000);
	CHECK_MSG(sqlite3_exec(h, q, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", q,
		  msg ? msg : "?");
	sqlite3_free(msg);
	sqlite3_close(h);
}

/* A memo answer whose run is gone from the store (deleted by hand here;
 * prune deletes old runs) still says it came from the memo, and names no
 * run: memo.run null, no false "calls" for the run shown. */
TEST(memo_hit_whose_run_is_gone_says_so)
{
	struct item it;
	char *db = xasprintf("%s/mg.db", harness_tmpdir()), *q;
	cJSON *a, *b;
	struct proc_out o;
	item_gen(&it, "8k");
	a = solve(&it, db, NULL, NULL);
	q = xasprintf("DELETE FROM runs WHERE id = '%s'", json_str(a, "run"));
	sql(db, q);
	free(q);
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.err, "rlm: answered from the memo (the run that made the answer is no "
			      "longer in the store); --refresh to run again\n");
	proc_out_release(&o);
	b = solve(&it, db, NULL, NULL);
	CHECK(cJSON_IsObject(json_get(b, "memo")));
	CHECK(cJSON_IsNull(json_get(json_get(b, "memo"), "run")));
	CHECK(calls_of(b, "total") == 0);
	CHECK(json_num(json_get(json_get(b, "cache"), "saved"), "input_tokens", -1) ==
	      json_num(json_get(a, "usage"), "input_tokens", -2));
	{
		const char *args[] = {"runs", "show", json_str(b, "run"), "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "no longer in the store");
	CHECK_CONTAINS(o.out, "; 0 model calls (0 from the cache), $0.0000, ");
	CHECK(!strstr(o.out, "the answer took"));
	proc_out_release(&o);
	cJSON_Delete(a);
	cJSON_Delete(b);
	item_free(&it);
	free(db);
}

/* Child RLMs are memoised: with the root's own answer forgotten (the
 * last result kept), the root runs again, and its children come from the
 * memo: none of them runs, no sub-call is made. */
TEST(child_rlms_are_memoised)
{
	struct item it;
	char *db = xasprintf("%s/m.db", harness_tmpdir());
	static const char *const env[] = {"RLM_SIM=rlm_chunks=4", NULL};
	cJSON *a, *b;
	item_gen(&it, "200k");
	a = solve(&it, db, NULL, env);
	CHECK(json_num(a, "nodes", 0) >= 2);
	CHECK(json_num(json_get(a, "cache"), "memo_hits", -1) == 0);
	sql(db, "DELETE FROM results WHERE rowid = (SELECT max(rowid) FROM results)");
	b = solve(&it, db, NULL, env);
	CHECK_STR(json_str(b, "answer"), json_str(a, "answer"));
	CHECK(json_num(json_get(b, "cache"), "memo_hits", 0) == json_num(a, "nodes", -1));
	CHECK(json_num(json_get(b, "calls"), "cached", 0) >= 1); /* the root's calls */
	CHECK(json_num(json_get(b, "calls"), "attempts", -1) == 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
	item_free(&it);
	free(db);
}

/* Children whose contexts are views of a part of their parent's (slices
 * of a str, runs of documents: 8 MB in 40,000-character chunks, 16
 * children and some 7 grandchildren each, all handed references) are
 * memoised under their content: the root forgotten, its children come
 * from the memo; the root and its children forgotten, the children run and
 * their children (views of views) come from the memo. */
TEST(child_rlms_over_views_are_memoised)
{
	static const char *const formats[] = {"text", "dir", "jsonl"};
	static const char *const env[] = {"RLM_SIM=chunk=40000,rlm_chunks=2", NULL};
	static const char *const deep[] = {"--max-depth", "3", NULL};
	for (size_t f = 0; f < ARRAY_SIZE(formats); f++) {
		struct item it;
		char *db = xasprintf("%s/v-%s.db", harness_tmpdir(), formats[f]);
		cJSON *a, *b, *c;
		double kids, nodes;
		item_gen_format(&it, "2M", formats[f]);
		a = solve(&it, db, deep, env);
		CHECK_CONTAINS(json_str(a, "answer"), it.answer);
		kids = cJSON_GetArraySize(json_get(a, "children"));
		nodes = json_num(a, "nodes", 0);
		CHECK_MSG(kids >= 8 && nodes >= 4 * kids, "%s: %g children, %g nodes", formats[f],
			  kids, nodes);
		CHECK(json_num(json_get(a, "cache"), "memo_hits", -1) == 0);
		sql(db, "DELETE FROM results WHERE json_extract(usage_json, '$.nodes') = "
			"(SELECT max(json_extract(usage_json, '$.nodes')) FROM results)");
		b = solve(&it, db, deep, env);
		CHECK_STR(json_str(b, "answer"), json_str(a, "answer"));
		CHECK_MSG(json_num(json_get(b, "cache"), "memo_hits", 0) == kids, "%s: %g hits",
			  formats[f], json_num(json_get(b, "cache"), "memo_hits", 0));
		CHECK(json_num(b, "nodes", 0) == nodes);
		sql(db, "DELETE FROM results WHERE json_extract(usage_json, '$.nodes') > 0");
		c = solve(&it, db, deep, env);
		CHECK_STR(json_str(c, "answer"), json_str(a, "answer"));
		CHECK_MSG(json_num(json_get(c, "cache"), "memo_hits", 0) == nodes - kids,
			  "%s: %g hits, %g grandchildren", formats[f],
			  json_num(json_get(c, "cache"), "memo_hits", 0), nodes - kids);
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(c);
		item_free(&it);
		free(db);
	}
}

/* A run stopped by a budget is not made to go further by the memo: run
 * again with the same budget, it stops where it stopped. */
TEST(memo_keeps_to_the_budget)
{
	struct item it;
	char *db = xasprintf("%s/b.db", harness_tmpdir());
	static const char *const env[] = {"RLM_SIM=rlm_chunks=4", NULL};
	cJSON *a, *b, *c;
	item_gen(&it, "200k");
	/* whole: every child answers (its memo kept) */
	a = solve(&it, db, NULL, env);
	CHECK(json_num(a, "sub_calls", 0) > 6);
	{
		/* a budget the whole run overshoots: on the same store, the
		 * memo of the children must not carry it past the limit */
		char lim[16];
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--json", "--quiet",
				      "--cache", db, "--max-sub-calls", lim, NULL};
		struct proc_out o;
		snprintf(lim, sizeof(lim), "%d", (int)json_num(a, "sub_calls", 0) / 2);
		o = rlm_env(args, env);
		CHECK_INT(o.status, 3);
		b = parse_out(&o);
		proc_out_release(&o);
		CHECK_STR(json_str(b, "stop"), "max_sub_calls");
		CHECK(json_num(b, "sub_calls", 0) <= atoi(lim));
		o = rlm_env(args, env);
		CHECK_INT(o.status, 3);
		c = parse_out(&o);
		proc_out_release(&o);
		CHECK_STR(json_str(c, "stop"), "max_sub_calls");
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	item_free(&it);
	free(db);
}

/* A solve that used exactly its --max-sub-calls is answered from the
 * memo when run again (the whole-solve memo checked sub_calls + 1). */
TEST(memo_answers_a_solve_at_its_sub_call_limit)
{
	struct item it;
	char *db = xasprintf("%s/x.db", harness_tmpdir());
	char lim[16];
	const char *more[] = {"--max-sub-calls", lim, NULL};
	cJSON *a, *b, *c;
	item_gen(&it, "100k");
	a = solve(&it, db, NULL, NULL);
	CHECK(json_num(a, "sub_calls", 0) >= 2);
	snprintf(lim, sizeof(lim), "%d", (int)json_num(a, "sub_calls", 0));
	b = solve(&it, db, more, NULL); /* another config: made again, from the call cache */
	CHECK_STR(json_str(b, "stop"), "answer");
	CHECK(json_num(b, "sub_calls", -1) == json_num(a, "sub_calls", 0));
	CHECK(json_num(json_get(b, "cache"), "memo_hits", -1) == 0);
	c = solve(&it, db, more, NULL);
	CHECK_STR(json_str(c, "answer"), json_str(b, "answer"));
	CHECK(json_num(json_get(c, "cache"), "memo_hits", -1) == 1);
	CHECK(calls_of(c, "attempts") == 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	item_free(&it);
	free(db);
}

/* An answer made with failed calls is not kept: a tree solve whose parts
 * failed (a sim that fails every request) answers from what it had; run
 * again without faults, it is made again, not served from the memo. */
TEST(degraded_answers_are_not_memoised)
{
	struct item it;
	char *db = xasprintf("%s/d.db", harness_tmpdir());
	static const char *const faulty[] = {"RLM_SIM=500=1,faults=12", NULL};
	static const char *const more[] = {"-s", "tree", "--max-retries", "0", NULL};
	cJSON *a, *b;
	item_gen(&it, "200k");
	/* 12 of 13 parts unread (issue 18): which part is read is a race;
	 * when it is not the needle's, the answer is NONE: stop incomplete,
	 * exit 3; when it is, a real answer, exit 0; complete is false
	 * either way */
	a = solve_exit(&it, db, more, faulty, -1);
	CHECK(calls_of(a, "failed") > 0);
	if (strstr(json_str(a, "answer") ? json_str(a, "answer") : "", it.answer)) {
		CHECK_STR(json_str(a, "stop"), "answer");
		CHECK(json_num(a, "exit_status", 0) == 0);
	} else {
		CHECK_STR(json_str(a, "stop"), "incomplete");
		CHECK(json_num(a, "exit_status", 3) == 3);
	}
	CHECK(cJSON_IsFalse(json_get(a, "complete")));
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(a, "failures"), 0), "kind"), "part");
	b = solve(&it, db, more, NULL);
	CHECK(json_num(json_get(b, "cache"), "memo_hits", -1) == 0);
	CHECK(calls_of(b, "failed") == 0);
	CHECK_CONTAINS(json_str(b, "answer"), it.answer);
	cJSON_Delete(a);
	cJSON_Delete(b);
	item_free(&it);
	free(db);
}

/* rlm solve --resume id on db: its JSON (it must succeed). */
static cJSON *resume_run(const char *db, const char *id)
{
	const char *args[] = {"solve", "--resume", id, "--json", "--cache", db, NULL};
	struct proc_out o = rlm(args);
	cJSON *r;
	CHECK_MSG(o.status == 0, "resume: exit %d: %s", o.status, o.err);
	r = parse_out(&o);
	proc_out_release(&o);
	return r;
}

/* Whether the store's files (the database and its WAL) hold s anywhere. */
static bool store_has(const char *db, const char *s)
{
	bool found = false;
	for (int i = 0; i < 2 && !found; i++) {
		char *path = xasprintf("%s%s", db, i ? "-wal" : ""), *data = NULL;
		size_t len = 0;
		struct rlm_err err = {0, ""};
		if (file_read(path, 1 << 28, &data, &len, &err) == 0)
			found = memmem(data, len, s, strlen(s)) != NULL;
		free(data);
		free(path);
	}
	return found;
}

/* runs show ID --json and both exports: none holds secret. */
static void check_run_public(const char *db, const char *id, const char *secret)
{
	static const char *const views[][5] = {{"show", "--json", NULL},
					       {"export", "--format", "html", NULL},
					       {"export", "--format", "jsonl", NULL}};
	for (size_t i = 0; i < ARRAY_SIZE(views); i++) {
		const char *args[12] = {"runs"};
		size_t n = 1;
		struct proc_out o;
		args[n++] = views[i][0];
		args[n++] = id;
		for (size_t k = 1; views[i][k]; k++)
			args[n++] = views[i][k];
		args[n++] = "--cache";
		args[n++] = db;
		args[n] = NULL;
		o = rlm(args);
		CHECK_MSG(o.status == 0, "runs %s: %s", views[i][0], o.err);
		CHECK_MSG(!strstr(o.out, secret), "runs %s shows '%s'", views[i][0], secret);
		proc_out_release(&o);
	}
}

/* The API key given on the command line, in any spelling getopt_long
 * takes (abbreviated, with = or not), is not kept with the run, nor shown
 * or exported; neither is --refresh, even abbreviated (a resumed run
 * would refresh again); and base URLs, from a flag or OPENAI_BASE_URL,
 * are kept without their user:password@. */
TEST(run_note_keeps_no_secret)
{
	static const char *const spellings[][3] = {
	    {"--api-key", "sk-rlmtest-SECRET-1", "--refresh"},
	    {"--api-key=sk-rlmtest-SECRET-2", "--ref", NULL},
	    {"--api", "sk-rlmtest-SECRET-3", "--refr"},
	    {"--api-k=sk-rlmtest-SECRET-4", "--refresh", NULL},
	    {"--ap", "sk-rlmtest-SECRET-5", "--re"},
	};
	struct item it;
	char *db = xasprintf("%s/n.db", harness_tmpdir()), url[128], bare[64];
	struct proc_out o;
	cJSON *a, *r, *show;
	int port = 0;
	pid_t srv;
	item_gen(&it, "8k");
	for (size_t i = 0; i < ARRAY_SIZE(spellings); i++) {
		const char *more[6] = {"--provider", "sim"};
		for (size_t k = 0; k < 3 && spellings[i][k]; k++)
			more[2 + k] = spellings[i][k];
		if (strcmp(spellings[i][0], "--ap") == 0) {
			/* --re is ambiguous (--refresh, --resume): refused */
			const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--quiet", "--cache",
					      db, "--ap", "x", "--re", NULL};
			o = rlm(args);
			CHECK_INT(o.status, 2);
			proc_out_release(&o);
			more[4] = NULL;
		}
		a = solve(&it, db, more, NULL);
		check_run_public(db, json_str(a, "run"), "SECRET");
		{
			const char *args[] = {"runs", "show", json_str(a, "run"), "--json", "--cache", db,
					      NULL};
			o = rlm(args);
		}
		CHECK_MSG(!strstr(o.out, "--re"), "%s", o.out);
		CHECK_CONTAINS(o.out, "\"argv\"");
		proc_out_release(&o);
		/* resumed, it does not refresh: the memo answers, nothing is sent */
		r = resume_run(db, json_str(a, "run"));
		CHECK(calls_of(r, "attempts") == 0);
		CHECK(json_num(json_get(r, "cache"), "memo_hits", 0) == 1);
		cJSON_Delete(r);
		cJSON_Delete(a);
	}
	CHECK(!store_has(db, "SECRET"));
	/* a question that holds a URL is kept as it was asked: resumed, it is
	 * the same solve (the memo answers) */
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", "Is http://me:pw@example.org/ in it?",
				      "--json", "--quiet", "--cache", db, NULL};
		o = rlm(args);
		CHECK_MSG(o.status == 0, "%s", o.err);
		a = parse_out(&o);
		proc_out_release(&o);
	}
	r = resume_run(db, json_str(a, "run"));
	CHECK(json_num(json_get(r, "cache"), "memo_hits", 0) == 1);
	cJSON_Delete(r);
	cJSON_Delete(a);

	/* credentials in base URLs: a flag, then the variable */
	srv = proc_sim_serve("", &port);
	snprintf(url, sizeof(url), "http://user:sk-rlmtest-PASSWORD@127.0.0.1:%d/v1", port);
	snprintf(bare, sizeof(bare), "http://127.0.0.1:%d/v1", port);
	{
		const char *more[] = {"--base-url", url, "--model", "sim", NULL};
		char *env_url = xasprintf("OPENAI_BASE_URL=%s", url);
		const char *env[] = {env_url, "RLM_MODEL=sim", NULL};
		a = solve(&it, db, more, NULL);
		r = solve(&it, db, NULL, env);
		check_run_public(db, json_str(a, "run"), "PASSWORD");
		check_run_public(db, json_str(r, "run"), "PASSWORD");
		{
			const char *args[] = {"runs", "show", json_str(r, "run"), "--json", "--cache", db,
					      NULL};
			o = rlm(args);
			show = parse_out(&o);
			proc_out_release(&o);
		}
		CHECK_STR(json_str(json_get(json_get(show, "note"), "env"), "OPENAI_BASE_URL"), bare);
		cJSON_Delete(show);
		free(env_url);
	}
	CHECK(!store_has(db, "PASSWORD"));
	CHECK_INT(proc_stop(srv), 0);
	cJSON_Delete(a);
	cJSON_Delete(r);
	item_free(&it);
	free(db);
}

/* --resume from another directory, the store named by a relative path
 * when the run was made: the run's paths were kept absolute, and its
 * calls come from the store it was found in. */
TEST(resume_from_another_directory)
{
	struct item it;
	char *dir = xasprintf("%s/d1", harness_tmpdir());
	char *db = xasprintf("%s/sub/x.db", dir), *cmd, *id;
	const char *sh[] = {"/bin/sh", "-c", NULL, NULL};
	struct proc_out o;
	cJSON *a, *r;
	item_gen(&it, "100k");
	CHECK(mkdir(dir, 0755) == 0);
	cmd = xasprintf("cd '%s' && mkdir sub && '%s' solve -c '%s' -q '%s' --cache sub/x.db "
			"--json --quiet",
			dir, harness_rlm_bin(), it.ctx, it.q);
	sh[2] = cmd;
	CHECK_INT(proc_run(sh, NULL, (const char *const[]){"RLM_NO_CACHE", NULL}, 120, &o), 0);
	CHECK_MSG(o.status == 0, "%s", o.err);
	a = parse_out(&o);
	proc_out_release(&o);
	id = xstrdup(json_str(a, "run"));
	/* forget the answer, keep the calls: the resume replays them */
	sql(db, "DELETE FROM results");
	{
		const char *args[] = {"solve", "--resume", id, "--cache", db, "--json", NULL};
		o = rlm_env(args, (const char *const[]){"RLM_NO_CACHE=1", NULL});
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	r = parse_out(&o);
	proc_out_release(&o);
	CHECK_STR(json_str(r, "answer"), json_str(a, "answer"));
	CHECK(calls_of(r, "attempts") == 0);
	CHECK(calls_of(r, "cached") == calls_of(a, "total"));
	cJSON_Delete(a);
	cJSON_Delete(r);
	free(id);
	free(cmd);
	item_free(&it);
	free(db);
	free(dir);
}

/* A run whose endpoint came from OPENAI_BASE_URL, resumed from a shell
 * without it (its calls and answer forgotten, so that the resume must ask
 * the network): it reaches the same server, not the provider's default. */
TEST(resume_reaches_the_same_endpoint)
{
	struct item it;
	char *db = xasprintf("%s/ep.db", harness_tmpdir()), *env_url;
	int port = 0;
	pid_t srv = proc_sim_serve("", &port);
	cJSON *a, *r;
	item_gen(&it, "8k");
	env_url = xasprintf("OPENAI_BASE_URL=http://127.0.0.1:%d/v1", port);
	{
		const char *env[] = {env_url, "RLM_MODEL=qwen-on-sim", NULL};
		a = solve(&it, db, NULL, env);
	}
	CHECK(calls_of(a, "attempts") > 0);
	sql(db, "DELETE FROM results; DELETE FROM calls");
	r = resume_run(db, json_str(a, "run")); /* no OPENAI_BASE_URL, no RLM_MODEL */
	CHECK_STR(json_str(r, "answer"), json_str(a, "answer"));
	CHECK(calls_of(r, "attempts") == calls_of(a, "attempts"));
	CHECK_STR(json_str(r, "provider"), "openai");
	CHECK_INT(proc_stop(srv), 0);
	cJSON_Delete(a);
	cJSON_Delete(r);
	free(env_url);
	item_free(&it);
	free(db);
}

/* ---- kill -9 and resume ---- */

static cJSON *runs_list(const char *db)
{
	const char *args[] = {"runs", "list", "--json", "-n", "0", "--cache", db, NULL};
	struct proc_out o = rlm(args);
	cJSON *j;
	CHECK_MSG(o.status == 0, "runs list: %s", o.err);
	j = parse_out(&o);
	proc_out_release(&o);
	return j;
}

/* The newest run of db, which must be interrupted, resumed with --resume:
 * its JSON; *id its id (the caller frees it). */
static cJSON *resume_newest(const char *db, char **id)
{
	cJSON *list = runs_list(db);
	*id = xstrdup(json_str(cJSON_GetArrayItem(list, 0), "id"));
	CHECK_STR(json_str(cJSON_GetArrayItem(list, 0), "status"), "interrupted");
	cJSON_Delete(list);
	return resume_run(db, *id);
}

/* SIGKILL p (a solve in the background) and reap it: it died of it. */
static void kill9(pid_t p)
{
	int status;
	CHECK(kill(p, SIGKILL) == 0);
	while (waitpid(p, &status, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* A flat solve over HTTP, 150 ms a call: killed with SIGKILL once some of
 * its calls are in the store, then resumed with --resume. Every call the
 * killed run got an answer for comes from the store; the resumed run
 * makes only the rest; together they make as many calls as a run that
 * was never killed, and answer the same. Run again without --resume, a
 * killed run is found and resumed by itself. */
TEST(killed_run_resumes_without_repeating_calls)
{
	struct item it;
	char *db = xasprintf("%s/k.db", harness_tmpdir());
	char *db2 = xasprintf("%s/u.db", harness_tmpdir());
	char url[64], *id;
	int port = 0, status;
	pid_t srv, p;
	cJSON *u, *list, *r, *auto_run;
	int64_t killed_rows;
	double u_net, r_net;
	item_gen(&it, "100k");
	srv = proc_sim_serve("ttft=150ms", &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	{
		const char *const more[] = {"--base-url", url, "--model", "sim", "--max-depth", "1",
					    NULL};
		/* the uninterrupted run, in a store of its own */
		u = solve(&it, db2, more, NULL);
		CHECK_CONTAINS(json_str(u, "answer"), it.answer);
		u_net = calls_of(u, "total") - calls_of(u, "cached");
		CHECK(u_net >= 5);
		{
			const char *argv[] = {harness_rlm_bin(), "solve", "-c", it.ctx, "-q", it.q,
					      "--quiet", "--cache", db, "--base-url", url, "--model",
					      "sim", "--max-depth", "1", NULL};
			static const char *const env[] = {"RLM_NO_CACHE", "RLM_PROVIDER", "RLM_MODEL",
							  "RLM_SIM", NULL};
			int64_t t0 = time_now_ns();
			p = proc_start(argv, env);
			CHECK(p > 0);
			/* once the first root call and some sub-calls are in */
			while (rows(db, "calls") < 3 && time_now_ns() - t0 < 20000000000LL)
				time_sleep_ns(5000000);
			kill9(p);
		}
		killed_rows = rows(db, "calls");
		CHECK_MSG(killed_rows >= 3 && killed_rows < (int64_t)u_net, "%lld calls kept of %.0f",
			  (long long)killed_rows, u_net);
		CHECK_INT(rows(db, "runs"), 1);
		r = resume_newest(db, &id);
		CHECK_STR(json_str(r, "answer"), json_str(u, "answer"));
		r_net = calls_of(r, "total") - calls_of(r, "cached");
		CHECK_MSG((double)killed_rows + r_net == u_net,
			  "%lld calls before the kill + %.0f after != %.0f uninterrupted",
			  (long long)killed_rows, r_net, u_net);
		CHECK(calls_of(r, "cached") >= (double)killed_rows);
		/* the resumed run names the one it resumed */
		{
			const char *args[] = {"runs", "show", json_str(r, "run"), "--json", "--cache", db,
					      NULL};
			struct proc_out o = rlm(args);
			cJSON *s = parse_out(&o);
			CHECK_STR(json_str(s, "resumed_from"), id);
			CHECK_STR(json_str(s, "status"), "done");
			cJSON_Delete(s);
			proc_out_release(&o);
		}
		/* killed again, and just run again: resumed by itself */
		{
			const char *argv[] = {harness_rlm_bin(), "solve", "-c", it.ctx, "-q", it.q,
					      "--quiet", "--cache", db2, "--base-url", url, "--model",
					      "sim", "--max-depth", "1", "--refresh", NULL};
			static const char *const env[] = {"RLM_NO_CACHE", NULL};
			int64_t before = rows(db2, "runs"), t0 = time_now_ns();
			p = proc_start(argv, env);
			while (rows(db2, "runs") == before && time_now_ns() - t0 < 20000000000LL)
				time_sleep_ns(5000000);
			time_sleep_ns(200000000);
			kill(p, SIGKILL);
			while (waitpid(p, &status, 0) < 0 && errno == EINTR)
				;
		}
		list = runs_list(db2);
		auto_run = cJSON_GetArrayItem(list, 0);
		CHECK_STR(json_str(auto_run, "status"), "interrupted");
		{
			static const char *const refresh[] = {"--base-url", NULL, "--model", "sim",
							      "--max-depth", "1", "--refresh", NULL};
			const char *m[8];
			cJSON *again, *s;
			struct proc_out o;
			memcpy(m, refresh, sizeof(m));
			m[1] = url;
			again = solve(&it, db2, m, NULL);
			{
				const char *args[] = {"runs", "show", json_str(again, "run"), "--json",
						      "--cache", db2, NULL};
				o = rlm(args);
			}
			s = parse_out(&o);
			CHECK_STR(json_str(s, "resumed_from"), json_str(auto_run, "id"));
			cJSON_Delete(s);
			proc_out_release(&o);
			cJSON_Delete(again);
		}
		cJSON_Delete(list);
		free(id);
		cJSON_Delete(r);
	}
	cJSON_Delete(u);
	CHECK_INT(proc_stop(srv), 0);
	item_free(&it);
	free(db);
	free(db2);
}

/* Rows of the store's events of a kind. */
static int64_t events_of(const char *db, const char *kind)
{
	char *t = xasprintf("events WHERE kind = '%s'", kind);
	int64_t n = rows(db, t);
	free(t);
	return n;
}

/* A recursive solve over HTTP (--max-depth 2, the simulator recursing past
 * 4 chunks), killed with SIGKILL while its children run, then resumed:
 * the calls the killed run kept plus the resumed run's HTTP attempts are
 * an uninterrupted run's attempts, and the answer is the same. */
TEST(killed_recursive_run_resumes_without_repeating_calls)
{
	struct item it;
	char *db = xasprintf("%s/kr.db", harness_tmpdir());
	char *db2 = xasprintf("%s/ur.db", harness_tmpdir());
	char url[64], *id;
	int port = 0;
	pid_t srv, p;
	cJSON *u, *r;
	int64_t kept;
	double u_net;
	item_gen(&it, "200k");
	srv = proc_sim_serve("ttft=100ms,rlm_chunks=4", &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	{
		const char *const more[] = {"--base-url", url, "--model", "sim", "--max-depth", "2",
					    NULL};
		u = solve(&it, db2, more, NULL);
	}
	CHECK_CONTAINS(json_str(u, "answer"), it.answer);
	CHECK(json_num(u, "nodes", 0) >= 2);
	/* its calls: each distinct one sent once (a copy asked while it was
	 * out waited for its answer: a hit) */
	u_net = calls_of(u, "attempts");
	CHECK(u_net >= 10 && u_net + calls_of(u, "cached") == calls_of(u, "total"));
	CHECK(u_net == (double)rows(db2, "calls"));
	{
		const char *argv[] = {harness_rlm_bin(), "solve", "-c", it.ctx, "-q", it.q, "--quiet",
				      "--cache", db, "--base-url", url, "--model", "sim",
				      "--max-depth", "2", NULL};
		static const char *const env[] = {"RLM_NO_CACHE", "RLM_PROVIDER", "RLM_MODEL",
						  "RLM_SIM", "RLM_MAX_DEPTH", NULL};
		int64_t t0 = time_now_ns();
		p = proc_start(argv, env);
		CHECK(p > 0);
		/* killed once a child has begun and a third of the calls are in */
		while ((events_of(db, "child") < 1 || rows(db, "calls") < (int64_t)u_net / 3) &&
		       time_now_ns() - t0 < 30000000000LL)
			time_sleep_ns(2000000);
		kill9(p);
	}
	kept = rows(db, "calls");
	CHECK_MSG(kept >= 1 && kept < (int64_t)u_net, "%lld calls kept of %.0f", (long long)kept,
		  u_net);
	CHECK(events_of(db, "child") >= 1);
	r = resume_newest(db, &id);
	CHECK_STR(json_str(r, "answer"), json_str(u, "answer"));
	CHECK_MSG((double)kept + calls_of(r, "attempts") == u_net,
		  "%lld calls before the kill + %.0f after != %.0f uninterrupted", (long long)kept,
		  calls_of(r, "attempts"), u_net);
	CHECK(json_num(r, "nodes", 0) == json_num(u, "nodes", -1));
	cJSON_Delete(r);
	cJSON_Delete(u);
	free(id);
	CHECK_INT(proc_stop(srv), 0);
	item_free(&it);
	free(db);
	free(db2);
}

/* A repeated recursive solve answered by the call cache alone (every
 * memo, whole-solve and children's, forgotten): every call, root, sub and
 * children's, is a hit, and not one HTTP attempt is made. */
TEST(warm_run_from_the_call_cache_sends_nothing)
{
	struct item it;
	char *db = xasprintf("%s/w.db", harness_tmpdir());
	char url[64];
	int port = 0;
	pid_t srv;
	cJSON *a, *b;
	item_gen(&it, "200k");
	srv = proc_sim_serve("rlm_chunks=4", &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	{
		const char *const more[] = {"--base-url", url, "--model", "sim", NULL};
		a = solve(&it, db, more, NULL);
		CHECK(json_num(a, "nodes", 0) >= 2);
		CHECK(calls_of(a, "attempts") > 0);
		CHECK(calls_of(a, "attempts") + calls_of(a, "cached") == calls_of(a, "total"));
		sql(db, "DELETE FROM results");
		b = solve(&it, db, more, NULL);
	}
	CHECK_STR(json_str(b, "answer"), json_str(a, "answer"));
	CHECK(json_num(json_get(b, "cache"), "memo_hits", -1) == 0);
	CHECK(calls_of(b, "attempts") == 0);
	CHECK(calls_of(b, "total") == calls_of(a, "total"));
	CHECK(calls_of(b, "cached") == calls_of(b, "total"));
	CHECK(json_num(b, "nodes", 0) == json_num(a, "nodes", -1));
	cJSON_Delete(a);
	cJSON_Delete(b);
	CHECK_INT(proc_stop(srv), 0);
	item_free(&it);
	free(db);
}

/* rlm cache stats, prune and clear, and runs list's calls column, from
 * the command line. */
TEST(cache_prune_and_clear_from_the_command_line)
{
	struct item it;
	char *db = xasprintf("%s/cp.db", harness_tmpdir());
	struct proc_out o;
	cJSON *a, *st;
	char want[128];
	int64_t calls;
	item_gen(&it, "8k");
	a = solve(&it, db, NULL, NULL);
	calls = rows(db, "calls");
	CHECK(calls > 0 && rows(db, "results") == 1 && rows(db, "runs") == 1);
	{
		const char *args[] = {"runs", "list", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	snprintf(want, sizeof(want), "%s   done        ", json_str(a, "run"));
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), " %6.0f  %.40s", calls_of(a, "total"), it.q);
	CHECK_CONTAINS(o.out, want);
	proc_out_release(&o);
	{
		const char *args[] = {"cache", "prune", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "--older-than");
	proc_out_release(&o);
	/* nothing a day old yet */
	{
		const char *args[] = {"cache", "prune", "--older-than", "1", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	snprintf(want, sizeof(want), "removed 0 rows from %s\n", db);
	CHECK_STR(o.out, want);
	CHECK_STR(o.err, "");
	proc_out_release(&o);
	CHECK(rows(db, "calls") == calls);
	/* made two days ago */
	sql(db, "UPDATE calls SET created = created - 172800000, last_hit = 0;"
		"UPDATE results SET created = created - 172800000, last_hit = 0;"
		"UPDATE runs SET ended = ended - 172800000");
	{
		const char *args[] = {"cache", "prune", "--older-than", "1", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	snprintf(want, sizeof(want), "removed %lld rows from %s\n", (long long)calls + 2, db);
	CHECK_STR(o.out, want);
	proc_out_release(&o);
	CHECK(rows(db, "calls") == 0 && rows(db, "results") == 0 && rows(db, "runs") == 0 &&
	      rows(db, "events") == 0);
	cJSON_Delete(a);
	/* again, then clear */
	a = solve(&it, db, NULL, NULL);
	CHECK(rows(db, "calls") == calls && rows(db, "runs") == 1);
	{
		const char *args[] = {"cache", "clear", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	snprintf(want, sizeof(want), "cleared %s\n", db);
	CHECK_STR(o.out, want);
	proc_out_release(&o);
	{
		const char *args[] = {"cache", "stats", "--json", "--cache", db, NULL};
		o = rlm(args);
	}
	st = parse_out(&o);
	proc_out_release(&o);
	CHECK(json_num(st, "calls", -1) == 0 && json_num(st, "results", -1) == 0 &&
	      json_num(st, "runs", -1) == 0 && json_num(st, "events", -1) == 0);
	cJSON_Delete(st);
	cJSON_Delete(a);
	item_free(&it);
	free(db);
}

/* A flat run (max depth 1) exported as JSONL: every sub-call it made is
 * in the rlm_calls of its code block, with its prompt (cut to 4,000
 * characters, head and tail) and reply, tokens and time. */
TEST(export_lists_a_flat_runs_sub_calls)
{
	struct item it;
	char *db = xasprintf("%s/f.db", harness_tmpdir());
	static const char *const more[] = {"--max-depth", "1", NULL};
	cJSON *a;
	struct proc_out o;
	int listed = 0, cut = 0;
	item_gen(&it, "200k");
	a = solve(&it, db, more, NULL);
	CHECK(json_num(a, "sub_calls", 0) >= 2);
	{
		const char *args[] = {"runs", "export", json_str(a, "run"), "--format", "jsonl",
				      "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	for (char *save = NULL, *l = strtok_r(o.out, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		cJSON *line = json_parse(l, strlen(l));
		const cJSON *b, *c;
		CHECK(line);
		cJSON_ArrayForEach(b, json_get(line, "code_blocks"))
		{
			cJSON_ArrayForEach(c, json_get(json_get(b, "result"), "rlm_calls"))
			{
				const char *p = json_str(c, "prompt");
				CHECK(p && json_str(c, "response") && *json_str(c, "response"));
				CHECK(json_num(c, "prompt_tokens", 0) > 0);
				CHECK(json_num(c, "completion_tokens", 0) > 0);
				CHECK(cJSON_IsNumber(json_get(c, "execution_time")));
				CHECK_MSG(strlen(p) < 4000 * 3 + 100, "a prompt of %zu bytes", strlen(p));
				cut += strstr(p, "characters omitted ...]") != NULL;
				listed++;
			}
		}
		cJSON_Delete(line);
	}
	CHECK_MSG(listed == (int)json_num(a, "sub_calls", -1), "%d sub-calls listed of %.0f", listed,
		  json_num(a, "sub_calls", -1));
	CHECK(cut > 0); /* the simulator's sub-calls carry chunks of 200k */
	proc_out_release(&o);
	cJSON_Delete(a);
	item_free(&it);
	free(db);
}

/* ---- broken stores ---- */

TEST(corrupt_store_is_a_clear_error)
{
	struct item it;
	char *db = xasprintf("%s/bad.db", harness_tmpdir());
	FILE *f = fopen(db, "w");
	struct proc_out o;
	CHECK(f);
	for (int i = 0; i < 8192; i++)
		fputc((i * 7919) & 0xff, f);
	fclose(f);
	item_gen(&it, "8k");
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--quiet", "--cache", db,
				      NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, db);
	CHECK_CONTAINS(o.err, "--no-cache");
	CHECK(strstr(o.err, "corrupt") || strstr(o.err, "not a database"));
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "list", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, db);
	proc_out_release(&o);
	item_free(&it);
	free(db);
}

TEST(locked_store_is_a_clear_error)
{
	struct item it;
	char *db = xasprintf("%s/locked.db", harness_tmpdir());
	char *code = xasprintf("import sqlite3, sys, time\n"
			       "c = sqlite3.connect(%s, isolation_level=None)\n"
			       "c.execute('PRAGMA journal_mode=DELETE')\n"
			       "c.execute('CREATE TABLE IF NOT EXISTS t(x)')\n"
			       "c.execute('BEGIN EXCLUSIVE')\n"
			       "c.execute('INSERT INTO t VALUES (1)')\n"
			       "print('locked', flush=True)\n"
			       "time.sleep(30)\n",
			       "sys.argv[1]");
	const char *py[] = {"/usr/bin/python3", "-c", code, db, NULL};
	struct proc_out o;
	pid_t p;
	item_gen(&it, "8k");
	p = proc_start(py, NULL);
	CHECK(p > 0);
	/* until the lock is held: the file exists with its journal */
	for (int i = 0; i < 500; i++) {
		char *j = xasprintf("%s-journal", db);
		struct stat st;
		bool there = stat(j, &st) == 0;
		free(j);
		if (there)
			break;
		time_sleep_ns(10000000);
	}
	{
		const char *args[] = {"solve", "-c", it.ctx, "-q", it.q, "--quiet", "--cache", db,
				      NULL};
		int64_t t0 = time_now_ns();
		o = rlm(args);
		CHECK((time_now_ns() - t0) / 1000000 < 30000);
	}
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, db);
	CHECK_CONTAINS(o.err, "locked");
	proc_out_release(&o);
	item_free(&it);
	free(code);
	free(db);
}

/* ---- show and export ---- */

/* A recursive run: runs show draws its tree, export jsonl is the
 * reference trajectory, export html renders in headless Chromium with
 * every node and no console error. */
TEST(show_and_export_a_recursive_run)
{
	struct item it;
	char *db = xasprintf("%s/e.db", harness_tmpdir());
	char *html = xasprintf("%s/run.html", harness_tmpdir());
	char *prof = xasprintf("%s/chromium", harness_tmpdir());
	char *url = xasprintf("file://%s", html);
	static const char *const env[] = {"RLM_SIM=rlm_chunks=4", NULL};
	cJSON *a, *line;
	const char *id;
	struct proc_out o;
	int nodes;
	item_gen(&it, "200k");
	a = solve(&it, db, NULL, env);
	id = json_str(a, "run");
	nodes = (int)json_num(a, "nodes", 0);
	CHECK(nodes >= 2);
	{
		const char *args[] = {"runs", "show", id, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "child node 1 (depth 1)");
	CHECK_CONTAINS(o.out, "node 0 (root)");
	CHECK_CONTAINS(o.out, it.answer);
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "export", id, "--format", "jsonl", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	{
		char *save = NULL, *l = strtok_r(o.out, "\n", &save);
		int n = 0;
		for (; l; l = strtok_r(NULL, "\n", &save), n++) {
			line = json_parse(l, strlen(l));
			CHECK_MSG(line, "line %d is not JSON", n + 1);
			CHECK_STR(json_str(line, "type"), n == 0 ? "metadata" : "iteration");
			if (n > 0) {
				CHECK(cJSON_IsArray(json_get(line, "prompt")));
				CHECK(cJSON_IsArray(json_get(line, "code_blocks")));
				CHECK(json_get(line, "response") != NULL);
			}
			cJSON_Delete(line);
		}
		CHECK(n >= 3);
	}
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "export", id, "--format", "html", "-o", html, "--cache",
				      db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "export html: %s", o.err);
	proc_out_release(&o);
	{
		char *dir = xasprintf("--user-data-dir=%s", prof);
		const char *argv[] = {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
				      "--enable-logging=stderr", "--v=0", dir, "--dump-dom", url,
				      NULL};
		struct stat st;
		CHECK_MSG(stat(argv[0], &st) == 0,
			  "headless Chromium is needed for this test: run `make deps`");
		CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
		CHECK_MSG(o.status == 0, "chromium exit %d: %.500s", o.status, o.err);
		for (int k = 0; k <= nodes && k < 4; k++) {
			char want[32];
			snprintf(want, sizeof(want), "data-node=\"%d\"", k);
			CHECK_CONTAINS(o.out, want);
		}
		CHECK_CONTAINS(o.out, it.answer);
		CHECK_MSG(!strstr(o.err, "Uncaught"), "a script error: %.500s", o.err);
		/* Chromium logs every console message of the page as a
		 * CONSOLE line, whatever its level; the viewer logs none. */
		CHECK_MSG(!strstr(o.err, ":CONSOLE"), "a console message: %.500s",
			  strstr(o.err, ":CONSOLE"));
		proc_out_release(&o);
		free(dir);
	}
	cJSON_Delete(a);
	item_free(&it);
	free(db);
	free(html);
	free(prof);
	free(url);
}

/* An answer's sources in the run record: runs show lists them, runs show
 * --json has them in the result, and the HTML viewer shows them under the
 * answer. The tree strategy over a directory cites the file that answered. */
TEST(run_record_keeps_the_sources)
{
	char *dir = xasprintf("%s/cited", harness_tmpdir()), *db = xasprintf("%s/s.db", harness_tmpdir());
	char *html = xasprintf("%s/cited.html", harness_tmpdir());
	char *prof = xasprintf("%s/chromium-s", harness_tmpdir());
	char *url = xasprintf("file://%s", html);
	struct proc_out o;
	cJSON *j, *run;
	char *id, *t;
	CHECK(mkdir(dir, 0755) == 0);
	for (int i = 0; i < 12; i++) {
		char *p = xasprintf("%s/station-%02d.log", dir, i);
		char *text = xasprintf("Station %d log.\nWind, cloud cover and temperature were logged "
				       "every three hours at the harbour.\nThe weather was %s.\n",
				       i, i == 7 ? "stormy with hail in Lisbon" : "mild");
		FILE *f = fopen(p, "w");
		CHECK(f != NULL);
		fputs(text, f);
		fclose(f);
		free(text);
		free(p);
	}
	{
		const char *args[] = {"solve", "-c", dir, "-q", "Where was there hail?", "--strategy",
				      "tree", "--leaf-chars", "256", "--json", "--quiet", "--cache", db,
				      NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	j = parse_out(&o);
	id = xstrdup(json_str(j, "run") ? json_str(j, "run") : "");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "show", id, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "\nsources   station-07.log\n");
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "show", id, "--json", "--cache", db, NULL};
		o = rlm(args);
	}
	run = parse_out(&o);
	t = json_print(json_get(json_get(run, "result"), "sources"));
	CHECK_STR(t, "[{\"doc\":\"station-07.log\"}]");
	free(t);
	cJSON_Delete(run);
	proc_out_release(&o);
	{
		const char *args[] = {"runs", "export", id, "--format", "html", "-o", html, "--cache",
				      db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "export html: %s", o.err);
	proc_out_release(&o);
	{
		char *pd = xasprintf("--user-data-dir=%s", prof);
		const char *argv[] = {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
				      pd, "--dump-dom", url, NULL};
		struct stat st;
		CHECK_MSG(stat(argv[0], &st) == 0,
			  "headless Chromium is needed for this test: run `make deps`");
		CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
		CHECK_MSG(o.status == 0, "chromium exit %d: %.500s", o.status, o.err);
		CHECK_CONTAINS(o.out, "<dt>sources</dt><dd><ul class=\"sources\"><li><code>station-07.log</code>");
		proc_out_release(&o);
		free(pd);
	}
	free(id);
	free(dir);
	free(db);
	free(html);
	free(prof);
	free(url);
}

/* ---- skills ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK_MSG(f, "fopen %s: %s", path, strerror(errno));
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* rlm skills from end to end on real store files: add a file, show it,
 * add a changed one (version 2), show version 1, export, import into a
 * fresh store (the same versions and digests), rm (retired: hidden, the
 * bare name refused, a version still shown), add again (revived). */
TEST(skills_add_show_version_export_import_rm)
{
	char *db = xasprintf("%s/sk.db", harness_tmpdir()), *db2 = xasprintf("%s/sk2.db", harness_tmpdir());
	char *py = xasprintf("%s/celsius.py", harness_tmpdir());
	char *ex = xasprintf("%s/skills.jsonl", harness_tmpdir());
	char want[256];
	struct proc_out o;
	cJSON *j, *k;
	write_text(py, "def to_celsius(f: float, digits: int = 1) -> float:\n"
		       "    \"\"\"Convert a Fahrenheit temperature to Celsius.\n\n"
		       "    Rounded to digits places.\n    \"\"\"\n"
		       "    return round((f - 32) * 5 / 9, digits)\n");
	{
		const char *args[] = {"skills", "add", py, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	snprintf(want, sizeof(want),
		 "added to_celsius@1 from '%s': to_celsius(f: float, digits: int = 1) -> float", py);
	CHECK_CONTAINS(o.out, want);
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "to_celsius", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "skill     to_celsius@1\n");
	CHECK_CONTAINS(o.out, "about     Convert a Fahrenheit temperature to Celsius.\n");
	CHECK_CONTAINS(o.out, "inputs    f: number (required), digits: integer = 1\n");
	CHECK_CONTAINS(o.out, "outputs   number\n");
	CHECK_CONTAINS(o.out, "source:\ndef to_celsius(");
	proc_out_release(&o);

	/* the same file again: nothing new; a changed one: version 2 */
	{
		const char *args[] = {"skills", "add", py, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "to_celsius@1 unchanged");
	proc_out_release(&o);
	write_text(py, "def to_celsius(f: float, digits: int = 2) -> float:\n"
		       "    \"\"\"Convert a Fahrenheit temperature to Celsius.\"\"\"\n"
		       "    return round((f - 32) / 1.8, digits)\n");
	{
		const char *args[] = {"skills", "add", py, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added to_celsius@2");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "to_celsius@1", "--json", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	j = parse_out(&o);
	CHECK_INT(json_num(j, "version", 0), 1);
	CHECK_INT(json_num(j, "latest", 0), 2);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "versions")), 2);
	CHECK_CONTAINS(json_str(j, "source"), "* 5 / 9, digits");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "list", "--json", "--cache", db, NULL};
		o = rlm(args);
	}
	j = parse_out(&o);
	CHECK_INT(cJSON_GetArraySize(j), 1);
	k = cJSON_GetArrayItem(j, 0);
	CHECK_STR(json_str(k, "name"), "to_celsius");
	CHECK_INT(json_num(k, "version", 0), 2);
	CHECK_INT(json_num(k, "versions", 0), 2);
	CHECK(!json_get(k, "source"));
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "list", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "\nto_celsius@2 ");
	CHECK_CONTAINS(o.out, " 2  Convert a Fahrenheit temperature to Celsius.\n");
	proc_out_release(&o);

	/* export, import into a fresh store: the same versions */
	{
		const char *args[] = {"skills", "export", ex, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.err, "exported 2 versions of 1 skill");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "import", ex, "--cache", db2, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added to_celsius@1 (line 1)\nadded to_celsius@2 (line 2)\n");
	CHECK_CONTAINS(o.out, "2 added, 0 unchanged");
	proc_out_release(&o);
	{
		const char *a1[] = {"skills", "export", "--cache", db, NULL};
		const char *a2[] = {"skills", "export", "--cache", db2, NULL};
		struct proc_out o2;
		cJSON *l1, *l2;
		o = rlm(a1);
		o2 = rlm(a2);
		CHECK(o.status == 0 && o2.status == 0);
		/* line by line the same, but for when each was made */
		for (char *p1 = o.out, *p2 = o2.out; *p1 || *p2;) {
			char *e1 = strchr(p1, '\n'), *e2 = strchr(p2, '\n');
			CHECK(e1 && e2);
			l1 = json_parse(p1, (size_t)(e1 - p1));
			l2 = json_parse(p2, (size_t)(e2 - p2));
			CHECK(l1 && l2);
			CHECK_STR(json_str(l1, "digest"), json_str(l2, "digest"));
			CHECK_INT(json_num(l1, "version", 0), json_num(l2, "version", -1));
			CHECK_INT(json_num(l1, "created_ms", 0), json_num(l2, "created_ms", -1));
			cJSON_Delete(l1);
			cJSON_Delete(l2);
			p1 = e1 + 1;
			p2 = e2 + 1;
		}
		proc_out_release(&o2);
		proc_out_release(&o);
	}
	{
		const char *args[] = {"skills", "import", ex, "--cache", db2, NULL};
		o = rlm(args);
	}
	CHECK_CONTAINS(o.out, "0 added, 2 unchanged");
	proc_out_release(&o);

	/* rm: retired */
	{
		const char *args[] = {"skills", "rm", "to_celsius", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "retired to_celsius");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "list", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_CONTAINS(o.out, "no skills in the store");
	CHECK_CONTAINS(o.out, "1 retired one");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "list", "--all", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_CONTAINS(o.out, "(retired) Convert");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "to_celsius", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "skill 'to_celsius' was retired");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "to_celsius@2", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "to_celsius@2 (the name is retired)");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "add", py, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_CONTAINS(o.out, "to_celsius@2 unchanged");
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "to_celsius", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0); /* revived */
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "nothing", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "no skill 'nothing'");
	proc_out_release(&o);
	free(db);
	free(db2);
	free(py);
	free(ex);
}
