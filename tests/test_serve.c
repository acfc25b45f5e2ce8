/* SPDX-License-Identifier: MIT */
/* tests/test_serve.c -- `rlm serve` end to end: the real binary on the
 * simulator, driven over HTTP with libcurl: every route, every bad input
 * and its error type and status, auth, limits, cancel, the event stream,
 * the OpenAI-compatible endpoint, metrics and a graceful shutdown. */
#include "harness.h"
#include "fakesrv.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"
#include "../common/net.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEEDLE_Q "What is the secret launch code?"
#define NEEDLE_CTX                                                                                 \
	"The weather was mild all week.\nThe secret launch code is 7340-alpha.\nLunch was at "     \
	"noon.\n"

/* ---- the server ---- */

struct srv {
	pid_t pid;
	int port;
	char err[512]; /* its stderr, a file */
};

/* Start `rlm serve --port 0 --cache TMP/s.db ARGS...` with env (entries
 * "NAME=value"; the provider variables are cleared). */
static struct srv srv_start_env(const char *const *args, const char *const *env)
{
	static const char *const clean[] = {"RLM_PROVIDER",	  "RLM_MODEL",
					    "RLM_SUB_MODEL",	  "OPENAI_API_KEY",
					    "OPENAI_BASE_URL",	  "ANTHROPIC_API_KEY",
					    "ANTHROPIC_BASE_URL", "RLM_SIM",
					    "RLM_API_KEY",	  "RLM_MAX_DEPTH",
					    "RLM_MAX_NODES",	  "RLM_NO_CACHE",
					    "RLM_CACHE",	  NULL};
	const char *argv[48], *envp[32];
	char line[256], *db = xasprintf("%s/s.db", harness_tmpdir());
	struct srv s;
	size_t n = 0, k = 0;
	const char *p;
	memset(&s, 0, sizeof(s));
	snprintf(s.err, sizeof(s.err), "%s/serve.%d.err", harness_tmpdir(), (int)time_now_ns() % 100000);
	argv[n++] = harness_rlm_bin();
	argv[n++] = "serve";
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--cache";
	argv[n++] = db;
	for (size_t i = 0; args && args[i] && n < 47; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (size_t i = 0; clean[i]; i++)
		envp[k++] = clean[i];
	for (size_t i = 0; env && env[i] && k < 31; i++)
		envp[k++] = env[i];
	envp[k] = NULL;
	s.pid = proc_start_line(argv, envp, s.err, 60, line, sizeof(line));
	free(db);
	CHECK_MSG(s.pid > 0, "rlm serve did not start (stderr in %s)", s.err);
	CHECK_CONTAINS(line, "rlm serve: listening on http://");
	p = strrchr(line, ':');
	s.port = atoi(p + 1);
	CHECK(s.port > 0);
	return s;
}

static struct srv srv_start(const char *const *args)
{
	return srv_start_env(args, NULL);
}

/* SIGTERM, and its exit status (128 + signal when killed). */
static int srv_stop(struct srv *s)
{
	int st = proc_stop(s->pid);
	s->pid = 0;
	return st;
}

static char *slurp(const char *path)
{
	char *s = NULL;
	size_t len;
	if (file_read(path, 1 << 20, &s, &len, NULL))
		return xstrdup("");
	return s;
}

/* Child processes of pid (its workers), from /proc. */
static int children_of(pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		char cp[300], *s;
		if (e->d_name[0] == '.')
			continue;
		snprintf(cp, sizeof(cp), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		s = slurp(cp);
		for (char *t = strtok(s, " \n"); t; t = strtok(NULL, " \n"))
			n++;
		free(s);
	}
	closedir(d);
	return n;
}

/* ---- HTTP ---- */

struct resp {
	long status;
	char *body;    /* owned */
	char *headers; /* owned */
	cJSON *json;   /* the body parsed, or NULL */
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	buf_append(arg, p, size * n);
	return size * n;
}

/* method path [body] with headers (NULL-terminated, or NULL) on handle
 * e (a connection kept open between requests), or on a new one when e is
 * NULL; blen bytes of body, or strlen(body) when it is SIZE_MAX. */
static struct resp http_on(CURL *e, const struct srv *s, const char *method, const char *path,
			   const char *body, size_t blen, const char *const *headers)
{
	CURL *own = e ? NULL : curl_easy_init();
	struct curl_slist *hl = NULL;
	struct buf b = BUF_INIT, h = BUF_INIT;
	struct resp r = {0, NULL, NULL, NULL};
	char url[512];
	CURLcode rc;
	if (!e)
		e = own;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, path);
	buf_puts(&b, "");
	buf_puts(&h, "");
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	hl = curl_slist_append(hl, "Expect:");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 90L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE,
			 !body ? -1L : blen == SIZE_MAX ? (long)strlen(body) : (long)blen);
	curl_easy_setopt(e, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
	if (!body && strcmp(method, "HEAD") != 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	rc = curl_easy_perform(e);
	CHECK_MSG(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	if (own)
		curl_easy_cleanup(own);
	r.body = buf_detach(&b, NULL);
	r.headers = buf_detach(&h, NULL);
	r.json = json_parse(r.body, strlen(r.body));
	return r;
}

static struct resp http_h(const struct srv *s, const char *method, const char *path,
			  const char *body, const char *const *headers)
{
	return http_on(NULL, s, method, path, body, SIZE_MAX, headers);
}

static struct resp http(const struct srv *s, const char *method, const char *path, const char *body)
{
	return http_h(s, method, path, body, NULL);
}

static void resp_release(struct resp *r)
{
	free(r->body);
	free(r->headers);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}

/* The error type of an error answer. */
/* The error's type: ours, which OpenAI's doors (chat completions,
 * models) give as "code", their "type" being OpenAI's kind of error (and
 * checked to be one, with a "param"). */
static const char *err_type(const struct resp *r)
{
	const cJSON *e = json_get(r->json, "error");
	const char *type = json_str(e, "type");
	static const char *const openai[] = {"invalid_request_error", "authentication_error",
					     "permission_error", "rate_limit_error",
					     "server_error"};
	for (size_t i = 0; type && i < ARRAY_SIZE(openai); i++)
		if (strcmp(type, openai[i]) == 0) {
			CHECK_MSG(json_get(e, "param"), "no param: %s", r->body);
			return json_str(e, "code");
		}
	return type;
}

/* Check that r is an error of status and type. */
#define CHECK_ERR(r, st, type)                                                                     \
	do {                                                                                       \
		CHECK_MSG((r).status == (st), "status %ld, want %d: %s", (r).status, (st),         \
			  (r).body);                                                               \
		CHECK_STR(err_type(&(r)), type);                                                   \
		CHECK(json_str(json_get((r).json, "error"), "message"));                           \
	} while (0)

static char *solve_body(const char *extra)
{
	return xasprintf("{\"question\": \"%s\", \"context\": \"%s\"%s%s}", NEEDLE_Q,
			 "The weather was mild all week.\\nThe secret launch code is "
			 "7340-alpha.\\nLunch was at noon.\\n",
			 extra ? ", " : "", extra ? extra : "");
}

/* GET the run until its status is not "running" (at most secs). */
static char *wait_status(const struct srv *s, const char *id, int secs)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	for (int i = 0; i < secs * 20; i++) {
		struct resp r = http(s, "GET", path, NULL);
		const char *st = json_str(r.json, "status");
		CHECK_MSG(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
		if (st && strcmp(st, "running") != 0) {
			char *out = xstrdup(st);
			resp_release(&r);
			return out;
		}
		resp_release(&r);
		time_sleep_ns(50000000);
	}
	harness_fail(__FILE__, __LINE__, "run %s still running after %d s", id, secs);
}

/* ---- server-sent events ---- */

struct sse_ev {
	long id;
	char event[32];
	cJSON *data;
};

/* Parse a whole event stream; returns the count (at most max). */
static size_t sse_parse(const char *body, struct sse_ev *ev, size_t max)
{
	size_t n = 0;
	const char *p = body;
	while (*p && n < max) {
		const char *end = strstr(p, "\n\n");
		char *block = end ? xstrndup(p, (size_t)(end - p)) : xstrdup(p);
		struct sse_ev e = {-1, "", NULL};
		for (char *line = strtok(block, "\n"); line; line = strtok(NULL, "\n")) {
			if (strncmp(line, "id: ", 4) == 0)
				e.id = atol(line + 4);
			else if (strncmp(line, "event: ", 7) == 0)
				snprintf(e.event, sizeof(e.event), "%s", line + 7);
			else if (strncmp(line, "data: ", 6) == 0)
				e.data = json_parse(line + 6, strlen(line + 6));
		}
		free(block);
		if (e.event[0])
			ev[n++] = e;
		if (!end)
			break;
		p = end + 2;
	}
	return n;
}

static void sse_release(struct sse_ev *ev, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(ev[i].data);
}

/* ---- tests ---- */

TEST(serve_usage)
{
	const char *bin = harness_rlm_bin();
	struct proc_out o;
	{
		const char *argv[] = {bin, "serve", "--help", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "/v1/chat/completions");
		CHECK_CONTAINS(o.out, "--shutdown-grace");
		CHECK_CONTAINS(o.out, "--max-depth");
		CHECK_CONTAINS(o.out, "--sandbox-disable");
		proc_out_release(&o);
	}
	{
		const char *argv[] = {bin, "serve", "--bogus", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, "unknown option '--bogus'");
		proc_out_release(&o);
	}
	{
		const char *argv[] = {bin, "serve", "--max-body", "12Q", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, "--max-body");
		proc_out_release(&o);
	}
	{
		static const char *const bad[][2] = {{"--corpus-cache", "lots"},
						     {"--keep-runs", "0"}};
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			const char *argv[] = {bin, "serve", bad[i][0], bad[i][1], NULL};
			CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
			CHECK_INT(o.status, 2);
			CHECK_CONTAINS(o.err, bad[i][0]);
			proc_out_release(&o);
		}
	}
	{
		/* Another address than loopback needs a key. */
		const char *argv[] = {bin, "serve", "--host", "0.0.0.0", "--port", "0", NULL};
		const char *env[] = {"RLM_API_KEY", NULL};
		CHECK_INT(proc_run(argv, NULL, env, 30, &o), 0);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, "without an API key");
		CHECK_STR(o.out, "");
		proc_out_release(&o);
	}
	{
		const char *argv[] = {bin, "serve", "--root", "/nonexistent/dir", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, "--root '/nonexistent/dir'");
		proc_out_release(&o);
	}
	{
		/* With a key it starts, and says where. */
		const char *args[] = {"--host", "0.0.0.0", "--api-key", "k", NULL};
		struct srv s = srv_start(args);
		struct resp r = http(&s, "GET", "/healthz", NULL);
		CHECK_INT(r.status, 200);
		resp_release(&r);
		CHECK_INT(srv_stop(&s), 0);
	}
}

TEST(serve_solve_sync)
{
	struct srv s = srv_start(NULL);
	char *body = solve_body(NULL), path[128];
	struct resp r = http(&s, "POST", "/v1/solve", body), g;
	const char *id;
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "done");
	CHECK_STR(json_str(r.json, "stop"), "answer");
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	CHECK(json_get(r.json, "usage") &&
	      json_num(json_get(r.json, "usage"), "input_tokens", 0) > 0);
	CHECK(cJSON_IsNumber(json_get(r.json, "cost_usd")));
	CHECK(json_get(r.json, "timings"));
	CHECK_STR(json_str(json_get(r.json, "result"), "stop"), "answer");
	CHECK(cJSON_IsArray(json_get(r.json, "sources")));
	CHECK(cJSON_IsArray(json_get(json_get(r.json, "result"), "sources")));
	CHECK_CONTAINS(r.headers, "Content-Type: application/json");
	id = json_str(r.json, "run_id");
	CHECK(id && *id);
	CHECK_STR(json_str(json_get(r.json, "result"), "run"), id);

	/* The run, by id. */
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	g = http(&s, "GET", path, NULL);
	CHECK_INT(g.status, 200);
	CHECK_STR(json_str(g.json, "run_id"), id);
	CHECK_STR(json_str(g.json, "status"), "done");
	CHECK_STR(json_str(g.json, "question"), NEEDLE_Q);
	CHECK_CONTAINS(json_str(g.json, "answer"), "7340-alpha");
	CHECK(cJSON_IsObject(json_get(g.json, "result")));
	resp_release(&g);

	/* A run id that is a prefix of a real one is not that run. */
	snprintf(path, sizeof(path), "/v1/runs/%.8s", id);
	g = http(&s, "GET", path, NULL);
	CHECK_ERR(g, 404, "not_found");
	resp_release(&g);

	/* Options over the server's: one iteration stops the solve. */
	free(body);
	body = xasprintf("{\"question\": \"Where was lunch?\", \"context\": \"%s\", \"options\": "
			 "{\"max_iterations\": 1, \"max_depth\": 1, \"strategy\": \"repl\", "
			 "\"model\": \"sim\", \"sub_model\": \"sim\", \"timeout\": 60, "
			 "\"max_tokens\": 0, \"max_cost\": 0, \"max_sub_calls\": 100}}",
			 "lunch was in the park\\nrain later\\n");
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "stopped");
	CHECK_STR(json_str(r.json, "stop"), "max_iterations");
	resp_release(&r);

	/* Budgets as the issue names them: a token budget too small to
	 * finish stops the solve there; roomy ones let it answer; cost is the
	 * same as cost_usd. */
	free(body);
	body = solve_body("\"options\": {\"budgets\": {\"tokens\": 3000}}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "stopped");
	CHECK_STR(json_str(r.json, "stop"), "max_tokens");
	resp_release(&r);
	/* a budget of all model calls (root turns and sub-calls): two do not
	 * finish a solve, flat or as budgets.calls */
	free(body);
	body = solve_body("\"options\": {\"budgets\": {\"calls\": 2}}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "stopped");
	CHECK_STR(json_str(r.json, "stop"), "max_calls");
	resp_release(&r);
	free(body);
	body = solve_body("\"options\": {\"max_calls\": 2}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "stop"), "max_calls");
	resp_release(&r);
	free(body);
	body = solve_body("\"options\": {\"budgets\": {\"tokens\": 1000000, \"cost\": 5, "
			  "\"calls\": 100, \"sub_calls\": 50, \"time\": 120}, \"max_sub_calls\": 50}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "done");
	CHECK(cJSON_IsNumber(json_get(r.json, "cost")));
	CHECK(json_num(r.json, "cost", -1) == json_num(r.json, "cost_usd", -2));
	resp_release(&r);
	/* compaction, on or off, in the options */
	free(body);
	body = solve_body("\"options\": {\"compaction\": false, \"compaction_threshold\": 0.5}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "done");
	CHECK(cJSON_IsNumber(json_get(json_get(json_get(r.json, "result"), "repl"), "compactions")));
	resp_release(&r);

	/* The tree strategy answers too. */
	free(body);
	body = solve_body("\"options\": {\"strategy\": \"tree\"}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "done");
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	CHECK_STR(json_str(json_get(r.json, "result"), "strategy"), "tree");
	/* which cites the one document of a str context */
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "sources")), 1);
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(r.json, "sources"), 0), "doc"), "context");
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* "context" may be any JSON value: an object or a list of records is a
 * JSON corpus (the REPL's `context` is that value), a list of strings is
 * documents; the simulator answers from their text. */
TEST(serve_solve_json_context)
{
	static const char *const bodies[] = {
		"{\"question\": \"What is the door?\", \"context\": {\"facts\": {\"door\": "
		"\"The door is green.\", \"sky\": \"The sky is blue.\"}, \"n\": [1, 2.5, null]}}",
		"{\"question\": \"What is the door?\", \"context\": [{\"id\": \"d1\", \"fact\": "
		"\"The door is green.\"}, {\"id\": \"d2\", \"fact\": \"The sky is blue.\"}]}",
		"{\"question\": \"What is the door?\", \"context\": [\"The sky is blue.\", "
		"\"The door is green.\"]}",
	};
	struct srv s = srv_start(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(bodies); i++) {
		struct resp r = http(&s, "POST", "/v1/solve", bodies[i]);
		CHECK_MSG(r.status == 200, "case %zu: %ld %s", i, r.status, r.body);
		CHECK_STR(json_str(r.json, "status"), "done");
		CHECK_CONTAINS(json_str(r.json, "answer"), "green");
		resp_release(&r);
	}
	{
		/* with another context kind: still exactly one */
		struct resp r = http(&s, "POST", "/v1/solve",
				     "{\"question\": \"q\", \"context\": {\"a\": 1}, "
				     "\"corpus_id\": \"c-0\"}");
		CHECK_INT(r.status, 400);
		CHECK_CONTAINS(r.body, "want exactly one of context");
		resp_release(&r);
	}
	CHECK_INT(srv_stop(&s), 0);
}

/* The server's budgets are ceilings: a request may lower them, not raise
 * them. */
TEST(serve_budgets_are_ceilings)
{
	const char *args[] = {"--no-cache", "--max-calls", "2", NULL};
	struct srv s = srv_start(args);
	char *body = solve_body("\"options\": {\"max_calls\": 1000}");
	struct resp r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "stopped");
	CHECK_STR(json_str(r.json, "stop"), "max_calls");
	CHECK_CONTAINS(json_str(json_get(r.json, "result"), "stop_detail"), "of 2 model calls");
	resp_release(&r);
	free(body);
	/* lower: the request's holds */
	body = solve_body("\"options\": {\"budgets\": {\"calls\": 1}}");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "stop"), "max_calls");
	CHECK_CONTAINS(json_str(json_get(r.json, "result"), "stop_detail"), "of 1 model calls");
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* Without a store: ids of the server's own, runs known while it runs. */
TEST(serve_no_cache)
{
	const char *args[] = {"--no-cache", NULL};
	struct srv s = srv_start(args);
	char *body = solve_body(NULL), path[128];
	struct resp r = http(&s, "POST", "/v1/solve", body), g;
	const char *id;
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	id = json_str(r.json, "run_id");
	CHECK(id && strncmp(id, "r-", 2) == 0 && strlen(id) == 18);
	CHECK(cJSON_IsNull(json_get(json_get(r.json, "result"), "run")));
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	g = http(&s, "GET", path, NULL);
	CHECK_INT(g.status, 200);
	CHECK_STR(json_str(g.json, "status"), "done");
	resp_release(&g);
	snprintf(path, sizeof(path), "/v1/runs/%s/events", id);
	g = http(&s, "GET", path, NULL);
	CHECK_INT(g.status, 200);
	CHECK_CONTAINS(g.body, "event: end\n");
	resp_release(&g);
	g = http(&s, "GET", "/v1/runs/20260101-000000-abcdef", NULL);
	CHECK_ERR(g, 404, "not_found");
	resp_release(&g);
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
	snprintf(path, sizeof(path), "%s/s.db", harness_tmpdir());
	CHECK(access(path, F_OK) != 0); /* no store was made */
}

/* A solve's events, live: the stream starts while the run runs, its ids
 * count up from 0, a turn comes before its code and its output, and it
 * ends with "end" holding the result. A finished run replays the same. */
TEST(serve_events)
{
	const char *env[] = {"RLM_SIM=ttft=150ms", NULL};
	struct srv s = srv_start_env(NULL, env);
	char *body = solve_body("\"async\": true"), path[160], *id;
	struct resp r = http(&s, "POST", "/v1/solve", body), e, g;
	struct sse_ev ev[256], ev2[256];
	size_t n, n2, turn = 0, code = 0, output = 0, calls = 0, durable = 0;
	char kinds[256][16]; /* the events with an id, in order */
	CHECK_MSG(r.status == 202, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "running");
	id = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	g = http(&s, "GET", path, NULL);
	CHECK_STR(json_str(g.json, "status"), "running");
	CHECK(cJSON_IsNull(json_get(g.json, "answer")));
	CHECK(!json_get(g.json, "result"));
	resp_release(&g);

	snprintf(path, sizeof(path), "/v1/runs/%s/events", id);
	e = http(&s, "GET", path, NULL);
	CHECK_INT(e.status, 200);
	CHECK_CONTAINS(e.headers, "Content-Type: text/event-stream");
	n = sse_parse(e.body, ev, ARRAY_SIZE(ev));
	CHECK(n >= 5);
	for (size_t i = 0; i < n; i++) {
		/* ids count the events a stored run keeps too: not progress */
		if (strcmp(ev[i].event, "progress") == 0) {
			CHECK_INT(ev[i].id, -1);
		} else {
			snprintf(kinds[durable], sizeof(kinds[durable]), "%s", ev[i].event);
			CHECK_INT(ev[i].id, (long)durable++);
		}
		CHECK_MSG(ev[i].data, "event %zu has no JSON data", i);
		CHECK_STR(json_str(ev[i].data, "kind"), ev[i].event);
		CHECK(cJSON_IsNumber(json_get(ev[i].data, "t_ms")));
		if (strcmp(ev[i].event, "turn") == 0 && !turn)
			turn = i + 1;
		if (strcmp(ev[i].event, "code") == 0 && !code)
			code = i + 1;
		if (strcmp(ev[i].event, "output") == 0 && !output)
			output = i + 1;
		if (strcmp(ev[i].event, "progress") == 0)
			CHECK(json_str(ev[i].data, "phase"));
		if (strcmp(ev[i].event, "call") == 0) {
			/* live model calls, with their details */
			const cJSON *d = json_get(ev[i].data, "data");
			calls++;
			CHECK(json_str(d, "key") && strlen(json_str(d, "key")) == 32);
			CHECK(json_str(d, "role"));
			CHECK(cJSON_IsBool(json_get(d, "cached")));
		}
		CHECK_MSG(strcmp(ev[i].event, "end") != 0 || i == n - 1, "end at %zu of %zu", i, n);
	}
	CHECK(turn && code && output && turn < code && code < output);
	CHECK(calls >= 2);
	CHECK_STR(ev[n - 1].event, "end");
	CHECK_STR(json_str(ev[n - 1].data, "status"), "done");
	CHECK_STR(json_str(ev[n - 1].data, "run_id"), id);
	CHECK_STR(json_str(json_get(ev[n - 1].data, "result"), "stop"), "answer");
	CHECK_INT(json_num(ev[0].data, "depth", -1), 0);

	/* A finished run replays the same events. */
	resp_release(&e);
	e = http(&s, "GET", path, NULL);
	n2 = sse_parse(e.body, ev2, ARRAY_SIZE(ev2));
	CHECK_INT(n2, n);
	for (size_t i = 0; i < n; i++)
		CHECK_STR(ev2[i].event, ev[i].event);
	sse_release(ev2, n2);
	resp_release(&e);

	/* From an event on, with Last-Event-ID. */
	{
		char h[64];
		const char *hs[] = {h, NULL};
		size_t with_id = 0;
		snprintf(h, sizeof(h), "Last-Event-ID: %zu", durable - 3);
		e = http_h(&s, "GET", path, NULL, hs);
		n2 = sse_parse(e.body, ev2, ARRAY_SIZE(ev2));
		for (size_t i = 0; i < n2; i++)
			if (ev2[i].id >= 0)
				CHECK_INT(ev2[i].id, (long)(durable - 2 + with_id++));
		CHECK_INT(with_id, 2);
		CHECK_STR(ev2[n2 - 1].event, "end");
		sse_release(ev2, n2);
		resp_release(&e);
		/* past the last: the end alone, so the client stops */
		snprintf(h, sizeof(h), "Last-Event-ID: %zu", durable + 5);
		e = http_h(&s, "GET", path, NULL, hs);
		n2 = sse_parse(e.body, ev2, ARRAY_SIZE(ev2));
		CHECK_INT(n2, 1);
		CHECK_STR(ev2[0].event, "end");
		sse_release(ev2, n2);
		resp_release(&e);
	}
	/* A Last-Event-ID that is not an event number. */
	{
		static const char *const bad[] = {"Last-Event-ID: abc", "Last-Event-ID: -3",
						  "Last-Event-ID: 99999999999", NULL};
		for (size_t i = 0; bad[i]; i++) {
			const char *hs[] = {bad[i], NULL};
			e = http_h(&s, "GET", path, NULL, hs);
			CHECK_ERR(e, 400, "invalid_request");
			CHECK_CONTAINS(json_str(json_get(e.json, "error"), "message"),
				       "Last-Event-ID");
			resp_release(&e);
		}
	}
	/* The events of an unknown run. */
	e = http(&s, "GET", "/v1/runs/no-such-run/events", NULL);
	CHECK_ERR(e, 404, "not_found");
	resp_release(&e);
	sse_release(ev, n);
	free(body);

	/* After a restart on the same store: the run and its events come from
	 * the store's record. */
	CHECK_INT(srv_stop(&s), 0);
	s = srv_start(NULL);
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	g = http(&s, "GET", path, NULL);
	CHECK_MSG(g.status == 200, "%ld %s", g.status, g.body);
	CHECK_STR(json_str(g.json, "status"), "done");
	CHECK_CONTAINS(json_str(g.json, "answer"), "7340-alpha");
	CHECK(cJSON_IsTrue(json_get(g.json, "stored")));
	resp_release(&g);
	snprintf(path, sizeof(path), "/v1/runs/%s/events", id);
	e = http(&s, "GET", path, NULL);
	CHECK_INT(e.status, 200);
	n = sse_parse(e.body, ev, ARRAY_SIZE(ev));
	CHECK(n >= 5);
	CHECK_STR(ev[n - 1].event, "end");
	CHECK_STR(json_str(ev[n - 1].data, "status"), "done");
	{
		bool call = false;
		for (size_t i = 0; i < n; i++)
			call = call || strcmp(ev[i].event, "call") == 0;
		CHECK_MSG(call, "the stored replay has no call event");
	}
	/* the same events under the same ids as live (less progress), so a
	 * client that saw some live resumes the replay where it was */
	CHECK_INT(n, durable);
	for (size_t i = 0; i < n; i++) {
		CHECK_INT(ev[i].id, (long)i);
		CHECK_STR(ev[i].event, kinds[i]);
	}
	sse_release(ev, n);
	resp_release(&e);
	free(id);
	CHECK_INT(srv_stop(&s), 0);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	fclose(f);
}

TEST(serve_context_path)
{
	const char *tmp = harness_tmpdir();
	char *root = xasprintf("%s/root", tmp), *out = xasprintf("%s/outside.txt", tmp);
	char *in = xasprintf("%s/root/notes.txt", tmp), *jl = xasprintf("%s/root/docs.jsonl", tmp);
	char *dir = xasprintf("%s/root/dir", tmp), *d1 = xasprintf("%s/root/dir/a.txt", tmp);
	char *link = xasprintf("%s/root/escape.txt", tmp), *body;
	const char *args[] = {"--root", root, NULL};
	struct srv s;
	struct resp r;
	CHECK(mkdir(root, 0755) == 0 && mkdir(dir, 0755) == 0);
	write_text(in, NEEDLE_CTX);
	write_text(out, NEEDLE_CTX);
	write_text(d1, NEEDLE_CTX);
	write_text(jl, "{\"text\": \"The weather was mild.\"}\n{\"id\": \"launch\", \"text\": \"The "
		       "secret launch code is 7340-alpha.\"}\n");
	CHECK(symlink(out, link) == 0);
	s = srv_start(args);

	/* Inside the root: a text file, a JSONL, a directory. */
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, in);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	resp_release(&r);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\", \"format\": \"jsonl\"}",
			 NEEDLE_Q, jl);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	resp_release(&r);
	free(body);
	/* The tree strategy cites the records of the part that answered, by
	 * their ids (a line number for the one without). */
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\", \"format\": \"jsonl\", "
			 "\"options\": {\"strategy\": \"tree\"}}",
			 NEEDLE_Q, jl);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	{
		char *t = json_print(json_get(r.json, "sources"));
		CHECK_STR(t, "[{\"doc\":\"1\"},{\"doc\":\"launch\"}]");
		free(t);
	}
	resp_release(&r);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, dir);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	free(body);
	{
		/* A link inside a directory under the root to a file outside:
		 * not followed (the directory is one document, not two). */
		char *l2 = xasprintf("%s/zz-link.txt", dir);
		CHECK(symlink(out, l2) == 0);
		body = xasprintf("{\"path\": \"%s\"}", dir);
		r = http(&s, "POST", "/v1/corpora", body);
		CHECK_MSG(r.status == 201, "%ld %s", r.status, r.body);
		CHECK_INT(json_num(r.json, "documents", -1), 1);
		resp_release(&r);
		free(body);
		unlink(l2);
		free(l2);
	}

	/* Outside it, by name or by a symlink inside: forbidden. */
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, out);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 403, "forbidden");
	resp_release(&r);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, link);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 403, "forbidden");
	resp_release(&r);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s/../outside.txt\"}",
			 NEEDLE_Q, root);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 403, "forbidden");
	resp_release(&r);
	free(body);
	/* A root's sibling that shares its prefix is not under it. */
	{
		char *sib = xasprintf("%s/rootx", tmp), *f = xasprintf("%s/rootx/a.txt", tmp);
		CHECK(mkdir(sib, 0755) == 0);
		write_text(f, NEEDLE_CTX);
		body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, f);
		r = http(&s, "POST", "/v1/solve", body);
		CHECK_ERR(r, 403, "forbidden");
		resp_release(&r);
		free(body);
		free(sib);
		free(f);
	}
	/* Missing inside the root: a bad request; missing outside: forbidden. */
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s/missing.txt\"}", NEEDLE_Q,
			 root);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 400, "invalid_request");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "missing.txt");
	resp_release(&r);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"/etc/nope/missing.txt\"}",
			 NEEDLE_Q);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 403, "forbidden");
	resp_release(&r);
	free(body);
	/* A bad format. */
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\", \"format\": \"pdf\"}",
			 NEEDLE_Q, in);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 400, "invalid_request");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "format");
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);

	/* Without --root every path is refused. */
	s = srv_start(NULL);
	body = xasprintf("{\"question\": \"%s\", \"context_path\": \"%s\"}", NEEDLE_Q, in);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 403, "forbidden");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "--root");
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
	free(root);
	free(out);
	free(in);
	free(jl);
	free(dir);
	free(d1);
	free(link);
}

TEST(serve_corpora)
{
	const char *tmp = harness_tmpdir();
	char *root = xasprintf("%s/r", tmp), *f = xasprintf("%s/r/a.txt", tmp), *body, path[96];
	const char *args[] = {"--root", root, NULL};
	struct srv s;
	struct resp r, r2;
	char id[32];
	CHECK(mkdir(root, 0755) == 0);
	write_text(f, NEEDLE_CTX);
	s = srv_start(args);

	r = http(&s, "POST", "/v1/corpora", "{\"text\": \"alpha beta\\ngamma\\n\"}");
	CHECK_MSG(r.status == 201, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "kind"), "text");
	CHECK_INT(json_num(r.json, "documents", 0), 1);
	CHECK_INT(json_num(r.json, "bytes", 0), 17);
	CHECK_INT(json_num(r.json, "tokens_estimate", 0), 5);
	snprintf(id, sizeof(id), "%s", json_str(r.json, "corpus_id"));
	CHECK_INT(strlen(id), 18);
	CHECK(strncmp(id, "c-", 2) == 0);
	/* The same text again: the same corpus. */
	r2 = http(&s, "POST", "/v1/corpora", "{\"text\": \"alpha beta\\ngamma\\n\"}");
	CHECK_INT(r2.status, 201);
	CHECK_STR(json_str(r2.json, "corpus_id"), id);
	resp_release(&r2);
	snprintf(path, sizeof(path), "/v1/corpora/%s", id);
	r2 = http(&s, "GET", path, NULL);
	CHECK_INT(r2.status, 200);
	CHECK_STR(json_str(r2.json, "corpus_id"), id);
	CHECK_STR(json_str(r2.json, "kind"), "text");
	resp_release(&r2);
	resp_release(&r);

	r = http(&s, "POST", "/v1/corpora",
		 "{\"documents\": [\"The weather was mild.\", \"The secret launch code is "
		 "7340-alpha.\", \"Lunch was at noon.\"]}");
	CHECK_MSG(r.status == 201, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "kind"), "jsonl");
	CHECK_INT(json_num(r.json, "documents", 0), 3);
	body = xasprintf("{\"question\": \"%s\", \"corpus_id\": \"%s\"}", NEEDLE_Q,
			 json_str(r.json, "corpus_id"));
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	resp_release(&r);
	free(body);

	body = xasprintf("{\"path\": \"%s\", \"format\": \"dir\"}", root);
	r = http(&s, "POST", "/v1/corpora", body);
	CHECK_MSG(r.status == 201, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "kind"), "dir");
	CHECK_INT(json_num(r.json, "documents", 0), 1);
	resp_release(&r);
	free(body);

	/* Bad ones. */
	{
		static const struct {
			const char *body;
			int status;
			const char *type, *says;
		} cases[] = {
		    {"{}", 400, "invalid_request", "exactly one"},
		    {"{\"text\": \"a\", \"documents\": [\"b\"]}", 400, "invalid_request",
		     "exactly one"},
		    {"{\"text\": \"\"}", 400, "invalid_request", "empty"},
		    {"{\"documents\": []}", 400, "invalid_request", "no documents"},
		    {"{\"documents\": [\"a\", 3]}", 400, "invalid_request", "documents"},
		    {"{\"documents\": \"a\"}", 400, "invalid_request", "documents"},
		    {"{\"text\": \"a\", \"format\": \"text\"}", 400, "invalid_request", "format"},
		    {"{\"text\": \"a\", \"colour\": 1}", 400, "invalid_request", "colour"},
		    {"{\"text\": 5}", 400, "invalid_request", "text: want a string"},
		    {"{\"path\": \"/etc/passwd\"}", 403, "forbidden", "outside"},
		    {"[1, 2]", 400, "invalid_json", "not an object"},
		    {"{\"text\": ", 400, "invalid_json", "not valid JSON"},
		};
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			r = http(&s, "POST", "/v1/corpora", cases[i].body);
			CHECK_MSG(r.status == cases[i].status, "%s: %ld %s", cases[i].body,
				  r.status, r.body);
			CHECK_STR(err_type(&r), cases[i].type);
			CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"),
				       cases[i].says);
			resp_release(&r);
		}
	}
	r = http(&s, "GET", "/v1/corpora/c-0000000000000000", NULL);
	CHECK_ERR(r, 404, "not_found");
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve",
		 "{\"question\": \"q?\", \"corpus_id\": \"c-0000000000000000\"}");
	CHECK_ERR(r, 404, "not_found");
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
	free(root);
	free(f);
}

TEST(serve_cancel)
{
	const char *env[] = {"RLM_SIM=ttft=300ms", NULL};
	struct srv s = srv_start_env(NULL, env);
	char *body = solve_body("\"async\": true"), path[128], *id, *st;
	struct resp r = http(&s, "POST", "/v1/solve", body);
	int kids = 0;
	CHECK_MSG(r.status == 202, "%ld %s", r.status, r.body);
	id = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	/* Mid-run: its worker is up. */
	for (int i = 0; i < 200 && !(kids = children_of(s.pid)); i++)
		time_sleep_ns(10000000);
	CHECK_MSG(kids > 0, "no worker process under the server");
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	r = http(&s, "DELETE", path, NULL);
	CHECK_MSG(r.status == 202, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "cancelling");
	CHECK_STR(json_str(r.json, "run_id"), id);
	resp_release(&r);
	st = wait_status(&s, id, 20);
	CHECK_STR(st, "cancelled");
	free(st);
	r = http(&s, "GET", path, NULL);
	CHECK_STR(json_str(r.json, "stop"), "cancelled");
	resp_release(&r);
	/* Cancelled again: it has ended. */
	r = http(&s, "DELETE", path, NULL);
	CHECK_ERR(r, 409, "conflict");
	resp_release(&r);
	/* Its worker processes are gone. */
	for (int i = 0; i < 500 && (kids = children_of(s.pid)); i++)
		time_sleep_ns(10000000);
	CHECK_MSG(kids == 0, "%d processes left under the server", kids);
	r = http(&s, "DELETE", "/v1/runs/no-such-run", NULL);
	CHECK_ERR(r, 404, "not_found");
	resp_release(&r);
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"cancelled\"} 1\n");
	resp_release(&r);
	free(body);
	free(id);
	CHECK_INT(srv_stop(&s), 0);
}

/* What a streamed chat completion held. */
struct chat_chunks {
	int role, finish, usage, done, reasoning_chunks, content_chunks;
	char finish_reason[16];
	struct buf content, reasoning;
};

/* Parse a chat completion stream, checking each chunk's shape: one id, a
 * role chunk first, reasoning before content, nothing after the finish
 * but the usage chunk, "usage": null on the others when usage was asked
 * for, data after [DONE] never. */
static void chunks_parse(const char *body, bool usage_asked, struct chat_chunks *c)
{
	const char *p = body;
	char *cid = NULL;
	int n = 0;
	memset(c, 0, sizeof(*c));
	buf_puts(&c->content, "");
	buf_puts(&c->reasoning, "");
	while ((p = strstr(p, "data: "))) {
		const char *end = strstr(p, "\n\n");
		char *d;
		cJSON *j, *ch, *delta;
		CHECK(end);
		d = xstrndup(p + 6, (size_t)(end - p - 6));
		p = end;
		CHECK_MSG(!c->done, "data after [DONE]");
		if (strcmp(d, "[DONE]") == 0) {
			c->done = 1;
			free(d);
			continue;
		}
		j = json_parse(d, strlen(d));
		CHECK_MSG(j, "chunk is not JSON: %s", d);
		free(d);
		CHECK_STR(json_str(j, "object"), "chat.completion.chunk");
		if (!cid)
			cid = xstrdup(json_str(j, "id"));
		CHECK_STR(json_str(j, "id"), cid);
		ch = cJSON_GetArrayItem(json_get(j, "choices"), 0);
		delta = json_get(ch, "delta");
		if (!ch) {
			c->usage++;
			CHECK(json_num(json_get(j, "usage"), "prompt_tokens", 0) > 0);
		} else {
			CHECK_MSG(!c->usage, "a chunk after the usage chunk");
			if (usage_asked)
				CHECK_MSG(cJSON_IsNull(json_get(j, "usage")),
					  "chunk %d: no \"usage\": null", n);
			else
				CHECK(!json_get(j, "usage"));
			CHECK_MSG(!c->finish, "a choice after the finish chunk");
		}
		if (ch && n == 0) {
			CHECK_STR(json_str(delta, "role"), "assistant");
			c->role++;
		} else if (ch && json_str(ch, "finish_reason")) {
			snprintf(c->finish_reason, sizeof(c->finish_reason), "%s",
				 json_str(ch, "finish_reason"));
			CHECK(cJSON_IsObject(json_get(j, "rlm")));
			c->finish++;
		} else if (ch && json_str(delta, "reasoning_content")) {
			CHECK_MSG(!c->content_chunks, "reasoning after content");
			CHECK(!json_get(delta, "content"));
			buf_puts(&c->reasoning, json_str(delta, "reasoning_content"));
			c->reasoning_chunks++;
		} else if (ch) {
			CHECK_MSG(json_str(delta, "content"), "chunk %d has no content", n);
			buf_puts(&c->content, json_str(delta, "content"));
			c->content_chunks++;
		}
		cJSON_Delete(j);
		n++;
	}
	free(cid);
}

static void chunks_release(struct chat_chunks *c)
{
	buf_release(&c->content);
	buf_release(&c->reasoning);
}

TEST(serve_chat)
{
	struct srv s = srv_start(NULL);
	struct resp r;
	const cJSON *msg;
	char *id;
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"model\": \"rlm\", \"temperature\": 0.2, \"user\": \"u1\", \"messages\": ["
		 "{\"role\": \"system\", \"content\": \"The weather was mild all week.\"},"
		 "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"The secret "
		 "launch code is 7340-alpha.\"}]},"
		 "{\"role\": \"assistant\", \"content\": \"Noted.\"},"
		 "{\"role\": \"user\", \"content\": \"" NEEDLE_Q "\"}]}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "object"), "chat.completion");
	CHECK_STR(json_str(r.json, "model"), "rlm");
	CHECK(strncmp(json_str(r.json, "id"), "chatcmpl-", 9) == 0);
	msg = json_get(cJSON_GetArrayItem(json_get(r.json, "choices"), 0), "message");
	CHECK_STR(json_str(msg, "role"), "assistant");
	CHECK_CONTAINS(json_str(msg, "content"), "7340-alpha");
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(r.json, "choices"), 0), "finish_reason"),
		  "stop");
	CHECK(json_num(json_get(r.json, "usage"), "prompt_tokens", 0) > 0);
	CHECK(json_num(json_get(r.json, "usage"), "total_tokens", 0) >=
	      json_num(json_get(r.json, "usage"), "prompt_tokens", 0));
	/* The extension member: the run, and the answer's sources. */
	CHECK(cJSON_IsArray(json_get(json_get(r.json, "rlm"), "sources")));
	/* The run behind it. */
	id = xasprintf("/v1/runs/%s", json_str(r.json, "id") + 9);
	resp_release(&r);
	r = http(&s, "GET", id, NULL);
	CHECK_INT(r.status, 200);
	CHECK_STR(json_str(r.json, "question"), NEEDLE_Q);
	resp_release(&r);
	free(id);

	/* rlm_context as a string, and the root model by name. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"model\": \"sim\", \"rlm_context\": \"the pet is a cat named Tom\\nthe car is "
		 "red\\n\", \"messages\": [{\"role\": \"user\", \"content\": \"What is the pet "
		 "named?\"}]}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(r.body, "Tom");
	CHECK_STR(json_str(r.json, "model"), "sim");
	resp_release(&r);

	/* Streaming: a role chunk, progress as reasoning_content, content
	 * chunks that make the answer, a finish chunk, usage, [DONE]. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"model\": \"rlm\", \"stream\": true, \"stream_options\": {\"include_usage\": "
		 "true}, \"messages\": [{\"role\": \"system\", \"content\": \"" NEEDLE_CTX
		 "\"}, {\"role\": \"user\", \"content\": \"" NEEDLE_Q "\"}]}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(r.headers, "Content-Type: text/event-stream");
	{
		struct chat_chunks c;
		chunks_parse(r.body, true, &c);
		CHECK_MSG(c.done && c.finish == 1 && c.usage == 1 && c.role == 1, "%s", r.body);
		CHECK_CONTAINS(c.content.p, "7340-alpha");
		/* the turns and the code, live, before the answer */
		CHECK_CONTAINS(c.reasoning.p, "Turn 1: the root model is thinking.\n");
		CHECK_CONTAINS(c.reasoning.p, "Turn 1: running code: ");
		CHECK_MSG(c.reasoning_chunks >= 3, "%s", r.body);
		CHECK_STR(c.finish_reason, "stop");
		/* the final chunk carries the rlm member with the sources */
		CHECK_CONTAINS(r.body, "\"finish_reason\":\"stop\"}],\"usage\":null,\"rlm\":{");
		CHECK_CONTAINS(strstr(r.body, "\"rlm\":{") ? strstr(r.body, "\"rlm\":{") : "",
			       "\"sources\":[");
		chunks_release(&c);
	}
	resp_release(&r);
	/* Without progress (rlm_progress false): no reasoning_content. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"stream\": true, \"rlm_progress\": false, \"rlm_context\": \"" NEEDLE_CTX
		 "\", \"messages\": [{\"role\": \"user\", \"content\": \"What is the secret "
		 "launch code, again?\"}]}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	{
		struct chat_chunks c;
		chunks_parse(r.body, false, &c);
		CHECK_MSG(c.done && c.finish == 1 && c.usage == 0, "%s", r.body);
		CHECK_INT(c.reasoning_chunks, 0);
		CHECK_CONTAINS(c.content.p, "7340-alpha");
		chunks_release(&c);
	}
	CHECK(!strstr(r.body, "reasoning_content"));
	resp_release(&r);

	/* A corpus by id as rlm_context. */
	r = http(&s, "POST", "/v1/corpora", "{\"text\": \"" NEEDLE_CTX "\"}");
	CHECK_INT(r.status, 201);
	{
		char *b = xasprintf("{\"rlm_context\": {\"corpus_id\": \"%s\"}, \"messages\": "
				    "[{\"role\": \"user\", \"content\": \"%s\"}]}",
				    json_str(r.json, "corpus_id"), NEEDLE_Q);
		struct resp c = http(&s, "POST", "/v1/chat/completions", b);
		CHECK_MSG(c.status == 200, "%ld %s", c.status, c.body);
		CHECK_CONTAINS(c.body, "7340-alpha");
		resp_release(&c);
		free(b);
	}
	resp_release(&r);

	/* Bad ones. */
	{
		static const struct {
			const char *body;
			int status;
			const char *type, *says;
		} cases[] = {
		    {"{\"model\": \"gpt-9\", \"messages\": [{\"role\": \"system\", \"content\": "
		     "\"x\"}, {\"role\": \"user\", \"content\": \"q?\"}]}",
		     404, "model_not_found", "gpt-9"},
#define Q_CTX "\"rlm_context\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"q?\"}]"
		    /* what a solve cannot give */
		    {"{" Q_CTX ", \"n\": 2}", 400, "invalid_request", "n: only 1"},
		    {"{" Q_CTX ", \"n\": 1.5}", 400, "invalid_request", "n: only 1"},
		    {"{" Q_CTX ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": "
		     "\"f\"}}]}",
		     400, "invalid_request", "tools: function calling"},
		    {"{" Q_CTX ", \"functions\": [{\"name\": \"f\"}]}", 400, "invalid_request",
		     "functions: function calling"},
		    {"{" Q_CTX ", \"tool_choice\": \"required\"}", 400, "invalid_request",
		     "tool_choice"},
		    {"{" Q_CTX ", \"function_call\": {\"name\": \"f\"}}", 400, "invalid_request",
		     "function_call"},
		    /* structured answers: ill-formed requests (docs/structured.md) */
		    {"{" Q_CTX ", \"response_format\": \"json\"}", 400, "invalid_request",
		     "response_format: want an object"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"xml\"}}", 400,
		     "invalid_request", "response_format.type: want"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_schema\"}}", 400,
		     "invalid_request", "response_format.json_schema: want an object"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_object\", \"json_schema\": "
		     "{\"name\": \"x\"}}}",
		     400, "invalid_request", "only with type"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
		     "{\"name\": \"a b\", \"schema\": {}}}}",
		     400, "invalid_request", "json_schema.name"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
		     "{\"name\": \"x\", \"schema\": [1]}}}",
		     400, "invalid_request", "json_schema.schema: want a JSON Schema"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
		     "{\"name\": \"x\", \"strict\": 1, \"schema\": {}}}}",
		     400, "invalid_request", "json_schema.strict"},
		    {"{" Q_CTX ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
		     "{\"name\": \"x\", \"schema\": {\"type\": \"integr\"}}}}",
		     400, "invalid_request", "not valid JSON Schema"},
		    {"{" Q_CTX ", \"logprobs\": true}", 400, "invalid_request", "logprobs"},
		    {"{" Q_CTX ", \"top_logprobs\": 3}", 400, "invalid_request", "top_logprobs"},
		    {"{" Q_CTX ", \"modalities\": [\"text\", \"audio\"]}", 400, "invalid_request",
		     "modalities"},
		    {"{" Q_CTX ", \"audio\": {\"voice\": \"alloy\", \"format\": \"mp3\"}}", 400,
		     "invalid_request", "audio"},
		    {"{" Q_CTX ", \"web_search_options\": {}}", 400, "invalid_request", "web search"},
		    /* the ones ignored still have their types */
		    {"{" Q_CTX ", \"temperature\": \"hot\"}", 400, "invalid_request",
		     "temperature: want a number"},
		    {"{" Q_CTX ", \"seed\": 1.5}", 400, "invalid_request", "seed: want an integer"},
		    {"{" Q_CTX ", \"seed\": 1e300}", 400, "invalid_request", "seed: want an integer"},
		    {"{" Q_CTX ", \"metadata\": []}", 400, "invalid_request", "metadata: want an object"},
		    {"{" Q_CTX ", \"stop\": 3}", 400, "invalid_request", "stop: want a string or"},
		    {"{" Q_CTX ", \"stream_options\": true}", 400, "invalid_request",
		     "stream_options: want an object"},
		    {"{" Q_CTX ", \"stream_options\": {\"include_usage\": 1}}", 400, "invalid_request",
		     "stream_options.include_usage: want true or false"},
		    {"{" Q_CTX ", \"stream_options\": {\"include_usag\": true}}", 400,
		     "invalid_request", "stream_options.include_usag: unknown field"},
		    {"{" Q_CTX ", \"rlm_progress\": \"no\"}", 400, "invalid_request", "rlm_progress"},
#undef Q_CTX
		    {"{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}", 400,
		     "invalid_request", "user message"},
		    {"{\"messages\": []}", 400, "invalid_request", "messages"},
		    {"{\"model\": \"rlm\"}", 400, "invalid_request", "messages"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": \"q?\"}], \"rlm_context\": "
		     "\"x\", \"temprature\": 1}",
		     400, "invalid_request", "temprature"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": \"q?\"}], \"rlm_context\": "
		     "{\"corpus_id\": \"c-0000000000000000\"}}",
		     404, "not_found", "c-0000000000000000"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": \"q?\"}], \"rlm_context\": "
		     "{\"path\": \"/etc/passwd\"}}",
		     403, "forbidden", "--root"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": \"q?\"}], \"rlm_context\": "
		     "{\"colour\": 1}}",
		     400, "invalid_request", "rlm_context.colour"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
		     "\"image_url\"}]}], "
		     "\"rlm_context\": \"x\"}",
		     400, "invalid_request", "text parts"},
		    {"{\"messages\": [{\"role\": \"user\", \"content\": \"q?\"}], \"rlm_context\": "
		     "\"x\", \"stream\": \"yes\"}",
		     400, "invalid_request", "stream"},
		    {"not json", 400, "invalid_json", "JSON"},
		};
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			r = http(&s, "POST", "/v1/chat/completions", cases[i].body);
			CHECK_MSG(r.status == cases[i].status, "%s: %ld %s", cases[i].body,
				  r.status, r.body);
			CHECK_STR(err_type(&r), cases[i].type);
			CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"),
				       cases[i].says);
			/* OpenAI's kind of error for the status */
			CHECK_STR(json_str(json_get(r.json, "error"), "type"),
				  r.status == 403 ? "permission_error" : "invalid_request_error");
			if (r.status == 404 && strstr(cases[i].body, "gpt-9")) {
				CHECK_STR(json_str(json_get(r.json, "error"), "code"),
					  "model_not_found");
				CHECK_STR(json_str(json_get(r.json, "error"), "param"), "model");
			}
			resp_release(&r);
		}
	}
	/* OpenAI's other fields of today are taken (and, where they mean
	 * nothing to a solve, ignored), and the ones above with the values
	 * a solve gives. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"the pet is a cat named Tom\\nthe car is red\\n\", "
		 "\"messages\": [{\"role\": \"developer\", \"content\": \"Be brief.\"}, "
		 "{\"role\": \"user\", \"content\": \"What is the pet named?\"}], "
		 "\"temperature\": 0, \"top_p\": 1, \"max_tokens\": 100, "
		 "\"max_completion_tokens\": 100, \"presence_penalty\": 0, \"frequency_penalty\": 0, "
		 "\"logit_bias\": {\"50256\": -100}, \"seed\": 7, \"stop\": [\"END\"], \"user\": \"u\", "
		 "\"safety_identifier\": \"s-1\", \"prompt_cache_key\": \"k\", "
		 "\"prompt_cache_retention\": \"24h\", \"metadata\": {\"a\": \"b\"}, \"store\": false, "
		 "\"service_tier\": \"auto\", \"reasoning_effort\": \"low\", \"verbosity\": \"low\", "
		 "\"parallel_tool_calls\": false, \"prediction\": {\"type\": \"content\", "
		 "\"content\": \"x\"}, \"n\": 1, \"tools\": [], \"tool_choice\": \"none\", "
		 "\"response_format\": {\"type\": \"text\"}, \"logprobs\": false, \"top_logprobs\": 0, "
		 "\"modalities\": [\"text\"], \"audio\": null, \"stream\": false, "
		 "\"stream_options\": {\"include_usage\": false, \"include_obfuscation\": false}}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(r.body, "Tom");
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
}

/* Structured answers over HTTP (docs/structured.md): /v1/solve "schema"
 * gives the typed answer; response_format json_schema and json_object give
 * content that is JSON which validated; a schema the model cannot satisfy
 * ends in an error, never in content; a bad schema is a 400 before any
 * model call. */
TEST(serve_structured_answers)
{
	struct srv s = srv_start(NULL);
	struct resp r;
	const cJSON *a, *msg;
	cJSON *c;
	r = http(&s, "POST", "/v1/solve",
		 "{\"question\": \"" NEEDLE_Q "\", \"context\": \"The weather was mild.\\nThe "
		 "secret launch code is 7340-alpha.\\nLunch was late.\", \"schema\": {\"type\": "
		 "\"object\", \"required\": [\"code\", \"lines\"], \"properties\": {\"code\": "
		 "{\"type\": \"string\"}, \"lines\": {\"type\": \"array\", \"items\": {\"type\": "
		 "\"string\"}, \"minItems\": 1}}}}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	a = json_get(r.json, "answer");
	CHECK_MSG(cJSON_IsObject(a), "%s", r.body);
	CHECK_CONTAINS(json_str(a, "code"), "7340-alpha");
	CHECK(cJSON_GetArraySize(json_get(a, "lines")) >= 1);
	CHECK(cJSON_IsTrue(json_get(r.json, "structured")));
	CHECK(cJSON_IsTrue(json_get(r.json, "answer_json")));
	resp_release(&r);

	/* json_object: the content is a JSON object */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"The secret launch code is 7340-alpha.\", \"messages\": "
		 "[{\"role\": \"user\", \"content\": \"" NEEDLE_Q "\"}], \"response_format\": "
		 "{\"type\": \"json_object\"}}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	msg = json_get(cJSON_GetArrayItem(json_get(r.json, "choices"), 0), "message");
	c = cJSON_Parse(json_str(msg, "content"));
	CHECK_MSG(cJSON_IsObject(c), "content %s", json_str(msg, "content"));
	cJSON_Delete(c);
	resp_release(&r);

	/* a schema no answer can meet: 422, the reason, no content */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"ERROR a\\nERROR b\\nINFO c\", \"messages\": [{\"role\": "
		 "\"user\", \"content\": \"How many lines are errors?\"}], \"response_format\": "
		 "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"n\", \"schema\": "
		 "{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 3}}}}");
	CHECK_MSG(r.status == 422, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(json_get(r.json, "error"), "code"), "answer_not_valid");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "never validated");
	CHECK(!json_get(r.json, "choices"));
	resp_release(&r);

	/* /v1/solve: a bad schema, and one that is no object */
	r = http(&s, "POST", "/v1/solve",
		 "{\"question\": \"q?\", \"context\": \"x\", \"schema\": {\"type\": "
		 "\"object\", \"required\": \"code\"}}");
	CHECK_MSG(r.status == 400, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "not valid JSON Schema");
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve",
		 "{\"question\": \"q?\", \"context\": \"x\", \"schema\": \"{}\"}");
	CHECK_MSG(r.status == 400, "%ld %s", r.status, r.body);
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "schema: want");
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
}

TEST(serve_models_health_metrics)
{
	const char *args[] = {"--sub-model", "sim", NULL};
	struct srv s = srv_start(args);
	struct resp r = http(&s, "GET", "/v1/models", NULL);
	const cJSON *data;
	char *body;
	CHECK_INT(r.status, 200);
	CHECK_STR(json_str(r.json, "object"), "list");
	data = json_get(r.json, "data");
	CHECK_INT(cJSON_GetArraySize(data), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(data, 0), "id"), "rlm");
	CHECK_STR(json_str(cJSON_GetArrayItem(data, 0), "object"), "model");
	CHECK_STR(json_str(cJSON_GetArrayItem(data, 0), "owned_by"), "rlm");
	CHECK_STR(json_str(cJSON_GetArrayItem(data, 1), "id"), "sim");
	resp_release(&r);

	r = http(&s, "GET", "/healthz", NULL);
	CHECK_INT(r.status, 200);
	CHECK_STR(json_str(r.json, "status"), "ok");
	CHECK_INT(json_num(r.json, "solves_running", -1), 0);
	resp_release(&r);
	r = http(&s, "HEAD", "/healthz", NULL);
	CHECK_INT(r.status, 200);
	resp_release(&r);

	body = solve_body(NULL);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_INT(r.status, 200);
	resp_release(&r);
	/* The same solve again comes from the store. */
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_INT(r.status, 200);
	resp_release(&r);
	free(body);
	r = http(&s, "GET", "/v1/nothing-here", NULL);
	CHECK_INT(r.status, 404);
	resp_release(&r);

	r = http(&s, "GET", "/metrics", NULL);
	CHECK_INT(r.status, 200);
	CHECK_CONTAINS(r.headers, "text/plain; version=0.0.4");
	CHECK_CONTAINS(r.body, "# TYPE rlm_solves_total counter\n");
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"done\"} 2\n");
	CHECK_CONTAINS(r.body, "rlm_solves_running 0\n");
	CHECK_CONTAINS(r.body, "# TYPE rlm_solve_seconds histogram\n");
	CHECK_CONTAINS(r.body, "rlm_solve_seconds_bucket{le=\"+Inf\"} 2\n");
	CHECK_CONTAINS(r.body, "rlm_solve_seconds_count 2\n");
	CHECK_CONTAINS(r.body, "rlm_http_requests_total{code=\"200\"} ");
	CHECK_CONTAINS(r.body, "rlm_http_requests_total{code=\"404\"} 1\n");
	{
		/* Every sample line is NAME{labels} VALUE with a number, in
		 * the family of the # TYPE line before it (the text format
		 * groups a family's lines). */
		char *copy = xstrdup(r.body), family[96] = "";
		long calls = -1, input = -1, hits = -1;
		for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
			char *sp = strrchr(l, ' '), *end;
			size_t nl = strcspn(l, "{ "), fl = strlen(family);
			if (strncmp(l, "# TYPE ", 7) == 0)
				snprintf(family, sizeof(family), "%.*s", (int)strcspn(l + 7, " "),
					 l + 7);
			if (l[0] == '#')
				continue;
			CHECK_MSG(fl && nl >= fl && strncmp(l, family, fl) == 0 &&
				      (nl == fl ||
				       (nl - fl == 7 && strncmp(l + fl, "_bucket", 7) == 0) ||
				       (nl - fl == 4 && strncmp(l + fl, "_sum", 4) == 0) ||
				       (nl - fl == 6 && strncmp(l + fl, "_count", 6) == 0)),
				  "'%s' is not in the family of the TYPE line before it (%s)", l,
				  family);
			CHECK_MSG(sp, "bad line '%s'", l);
			strtod(sp + 1, &end);
			CHECK_MSG(*end == '\0' && end > sp + 1, "bad value in '%s'", l);
			if (strncmp(l, "rlm_model_calls_total ", 22) == 0)
				calls = atol(sp + 1);
			if (strncmp(l, "rlm_tokens_total{kind=\"input\"} ", 31) == 0)
				input = atol(sp + 1);
			if (strncmp(l, "rlm_cache_hits_total ", 21) == 0)
				hits = atol(sp + 1);
		}
		CHECK(calls > 0 && input > 0 && hits >= 0);
		free(copy);
	}
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
}

TEST(serve_auth)
{
	const char *args[] = {"--api-key", "s3cret-key", NULL};
	const char *none[] = {NULL};
	const char *wrong[] = {"Authorization: Bearer s3cret-kez", NULL};
	const char *shorter[] = {"Authorization: Bearer s3cret", NULL};
	const char *longer[] = {"Authorization: Bearer s3cret-key2", NULL};
	const char *basic[] = {"Authorization: Basic s3cret-key", NULL};
	const char *right[] = {"Authorization: Bearer s3cret-key", NULL};
	const char *const *bad[] = {none, wrong, shorter, longer, basic};
	struct srv s = srv_start(args);
	struct resp r;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = http_h(&s, "GET", "/v1/models", NULL, bad[i]);
		CHECK_ERR(r, 401, "unauthorized");
		CHECK_STR(json_str(json_get(r.json, "error"), "type"), "authentication_error");
		CHECK_CONTAINS(r.headers, "WWW-Authenticate: Bearer");
		resp_release(&r);
	}
	/* Unknown routes too: nothing is told without the key. */
	r = http(&s, "GET", "/v1/nothing", NULL);
	CHECK_ERR(r, 401, "unauthorized");
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve", "{}");
	CHECK_ERR(r, 401, "unauthorized");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/models", NULL, right);
	CHECK_INT(r.status, 200);
	resp_release(&r);
	r = http(&s, "GET", "/healthz", NULL);
	CHECK_INT(r.status, 200);
	resp_release(&r);
	/* Only GET /healthz goes without the key: a body sent to it is not
	 * read into memory on the way to a 405. */
	r = http(&s, "POST", "/healthz", "{\"x\": 1}");
	CHECK_ERR(r, 401, "unauthorized");
	resp_release(&r);
	r = http_h(&s, "POST", "/healthz", "{}", right);
	CHECK_ERR(r, 405, "method_not_allowed");
	resp_release(&r);
	{
		char *body = solve_body(NULL);
		r = http_h(&s, "POST", "/v1/solve", body, right);
		CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
		resp_release(&r);
		free(body);
	}
	CHECK_INT(srv_stop(&s), 0);

	/* The key from the environment. */
	{
		const char *env[] = {"RLM_API_KEY=env-key", NULL};
		const char *ok[] = {"Authorization: Bearer env-key", NULL};
		s = srv_start_env(NULL, env);
		r = http(&s, "GET", "/metrics", NULL);
		CHECK_ERR(r, 401, "unauthorized");
		resp_release(&r);
		r = http_h(&s, "GET", "/metrics", NULL, ok);
		CHECK_INT(r.status, 200);
		resp_release(&r);
		CHECK_INT(srv_stop(&s), 0);
	}
}

TEST(serve_limit_body)
{
	const char *args[] = {"--max-body", "1K", NULL};
	struct srv s = srv_start(args);
	struct buf b = BUF_INIT;
	struct resp r;
	buf_puts(&b, "{\"question\": \"q?\", \"context\": \"");
	for (int i = 0; i < 200; i++)
		buf_puts(&b, "0123456789");
	buf_puts(&b, "\"}");
	r = http(&s, "POST", "/v1/solve", b.p);
	CHECK_ERR(r, 413, "too_large");
	resp_release(&r);
	/* Without a length (chunked), found as it is read. */
	{
		const char *h[] = {"Transfer-Encoding: chunked", NULL};
		r = http_h(&s, "POST", "/v1/corpora", b.p, h);
		CHECK_ERR(r, 413, "too_large");
		resp_release(&r);
	}
	/* Under the limit it is served. */
	r = http(&s, "POST", "/v1/corpora", "{\"text\": \"small\"}");
	CHECK_INT(r.status, 201);
	resp_release(&r);
	buf_release(&b);
	CHECK_INT(srv_stop(&s), 0);
}

TEST(serve_limit_busy)
{
	const char *args[] = {"--max-solves", "1", NULL};
	const char *env[] = {"RLM_SIM=ttft=300ms", NULL};
	struct srv s = srv_start_env(args, env);
	char *body = solve_body("\"async\": true"), *id, *st;
	struct resp r = http(&s, "POST", "/v1/solve", body), r2;
	CHECK_INT(r.status, 202);
	id = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 429, "busy");
	CHECK_CONTAINS(r.headers, "Retry-After: 1");
	resp_release(&r);
	r2 = http(&s, "POST", "/v1/chat/completions",
		  "{\"rlm_context\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": "
		  "\"q?\"}]}");
	CHECK_ERR(r2, 429, "busy");
	resp_release(&r2);
	r = http(&s, "GET", "/healthz", NULL);
	CHECK_INT(json_num(r.json, "solves_running", -1), 1);
	resp_release(&r);
	st = wait_status(&s, id, 30);
	CHECK_STR(st, "done");
	free(st);
	/* Room again. */
	free(body);
	body = solve_body(NULL);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	free(body);
	free(id);
	CHECK_INT(srv_stop(&s), 0);
}

TEST(serve_limit_timeout)
{
	const char *args[] = {"--request-timeout", "0.5", NULL};
	const char *env[] = {"RLM_SIM=ttft=300ms", NULL};
	struct srv s = srv_start_env(args, env);
	char *body = solve_body(NULL), *id, *st;
	const char *msg, *p;
	int64_t t0 = time_now_ns();
	struct resp r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 504, "timeout");
	CHECK((time_now_ns() - t0) < 10 * 1000000000LL);
	msg = json_str(json_get(r.json, "error"), "message");
	p = strstr(msg, "(run ");
	CHECK_MSG(p, "no run id in '%s'", msg);
	id = xstrndup(p + 5, strcspn(p + 5, ")"));
	resp_release(&r);
	st = wait_status(&s, id, 20);
	CHECK_STR(st, "cancelled");
	free(st);
	/* A chat request too. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"" NEEDLE_CTX "\", \"messages\": [{\"role\": \"user\", "
		 "\"content\": \"Where was the timeout?\"}]}");
	CHECK_ERR(r, 504, "timeout");
	resp_release(&r);
	/* Streamed: an error event, then [DONE]. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"stream\": true, \"rlm_context\": \"" NEEDLE_CTX
		 "\", \"messages\": [{\"role\": "
		 "\"user\", \"content\": \"Where did the stream time out?\"}]}");
	CHECK_INT(r.status, 200);
	CHECK_CONTAINS(r.body, "\"role\":\"assistant\"");
	CHECK_CONTAINS(r.body, "data: {\"error\":{\"type\":\"timeout\"");
	CHECK_CONTAINS(r.body, "data: [DONE]\n\n");
	resp_release(&r);
	/* An async solve is not bound by it. */
	free(body);
	body = solve_body("\"async\": true");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_INT(r.status, 202);
	free(id);
	id = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	st = wait_status(&s, id, 30);
	CHECK_STR(st, "done");
	free(st);
	free(id);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* Every error type of the table, with its status. */
TEST(serve_errors)
{
	static const struct {
		const char *method, *path, *body;
		int status;
		const char *type, *says;
	} cases[] = {
	    {"POST", "/v1/solve", "nope", 400, "invalid_json", "not valid JSON"},
	    {"POST", "/v1/solve", "", 400, "invalid_json", "empty"},
	    {"POST", "/v1/solve", "\"a string\"", 400, "invalid_json", "not an object"},
	    {"POST", "/v1/solve", "{\"context\": \"x\"}", 400, "invalid_request", "question"},
	    {"POST", "/v1/solve", "{\"question\": \"\", \"context\": \"x\"}", 400,
	     "invalid_request", "question"},
	    {"POST", "/v1/solve", "{\"question\": 7, \"context\": \"x\"}", 400, "invalid_request",
	     "question: want a string"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\"}", 400, "invalid_request", "exactly one"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"corpus_id\": \"c\"}", 400,
	     "invalid_request", "exactly one"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\", \"context\": \"x\", \"contxt\": \"y\"}",
	     400, "invalid_request", "contxt: unknown field"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"format\": \"text\"}", 400,
	     "invalid_request", "format"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\", \"context\": \"x\", \"async\": 1}", 400,
	     "invalid_request", "async"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\", \"context\": \"\"}", 400,
	     "invalid_request", "empty"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\", \"context\": \"x\", \"options\": 3}", 400,
	     "invalid_request", "options: want an object"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"max_depth\": 99}}", 400,
	     "invalid_request", "options.max_depth: want an integer 1..16"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"max_depth\": 1.5}}", 400,
	     "invalid_request", "options.max_depth"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"max_iterations\": 0}}",
	     400, "invalid_request", "options.max_iterations"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"max_cost\": -1}}", 400,
	     "invalid_request", "options.max_cost"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"timeout\": 0}}", 400,
	     "invalid_request", "options.timeout"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"strategy\": \"magic\"}}",
	     400, "invalid_request", "options.strategy"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"model\": \"gpt-9\"}}", 400,
	     "invalid_request", "gpt-9"},
	    {"POST", "/v1/solve",
	     "{\"question\": \"q?\", \"context\": \"x\", \"options\": {\"depth\": 2}}", 400,
	     "invalid_request", "options.depth: unknown field"},
#define OPT(o) "{\"question\": \"q?\", \"context\": \"x\", \"options\": {" o "}}"
	    {"POST", "/v1/solve", OPT("\"budgets\": 5"), 400, "invalid_request",
	     "options.budgets: want an object"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"tokens\": -1}"), 400, "invalid_request",
	     "options.budgets.tokens: want an integer"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"time\": 0}"), 400, "invalid_request",
	     "options.budgets.time: want a number > 0"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"cost\": \"1\"}"), 400, "invalid_request",
	     "options.budgets.cost"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"dollars\": 1}"), 400, "invalid_request",
	     "options.budgets.dollars: unknown field"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"calls\": 10}, \"max_calls\": 9"), 400,
	     "invalid_request", "options.budgets.calls: says another than options.max_calls"},
	    {"POST", "/v1/solve", OPT("\"max_calls\": -1"), 400, "invalid_request",
	     "options.max_calls: want an integer"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"tokens\": 10}, \"max_tokens\": 20"), 400,
	     "invalid_request", "options.budgets.tokens: says another than options.max_tokens"},
	    {"POST", "/v1/solve", OPT("\"budgets\": {\"time\": 10}, \"timeout\": 20"), 400,
	     "invalid_request", "options.budgets.time: says another than options.timeout"},
	    {"POST", "/v1/solve", OPT("\"compaction_threshold\": 1.5"), 400, "invalid_request",
	     "options.compaction_threshold: want a number > 0 and <= 1"},
	    {"POST", "/v1/solve", OPT("\"compaction_threshold\": 0"), 400, "invalid_request",
	     "options.compaction_threshold: want a number > 0 and <= 1"},
	    {"POST", "/v1/solve", OPT("\"compaction\": 1"), 400, "invalid_request",
	     "options.compaction: want true or false"},
#undef OPT
	    /* \u0000 would cut a string short: refused, naming the field */
	    {"POST", "/v1/solve", "{\"question\": \"q?\\u0000 and more\", \"context\": \"x\"}", 400,
	     "invalid_request", "question: holds a NUL character"},
	    {"POST", "/v1/solve", "{\"question\": \"q?\", \"context\": \"x\\u0000y\"}", 400,
	     "invalid_request", "context: holds a NUL character"},
	    {"POST", "/v1/corpora", "{\"documents\": [\"a\", \"b\\u0000\"]}", 400, "invalid_request",
	     "documents[1]: holds a NUL character"},
	    {"POST", "/v1/chat/completions",
	     "{\"rlm_context\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": "
	     "[{\"type\": \"text\", \"text\": \"a\\u0000\"}]}]}",
	     400, "invalid_request", "messages[0].content[0].text: holds a NUL character"},
	    /* spelled out, it is text like any other */
	    {"POST", "/v1/corpora", "{\"text\": \"\\\\u0000\", \"format\": 1}", 400, "invalid_request",
	     "format: want a string"},
	    {"GET", "/v1/solve", NULL, 405, "method_not_allowed", "POST"},
	    {"DELETE", "/v1/corpora", NULL, 405, "method_not_allowed", "POST"},
	    {"POST", "/v1/models", "{}", 405, "method_not_allowed", "GET"},
	    {"PUT", "/v1/runs/abc", "{}", 405, "method_not_allowed", "DELETE"},
	    {"GET", "/v1/unknown", NULL, 404, "not_found", "/v1/unknown"},
	    {"GET", "/v1/runs/abc/other", NULL, 404, "not_found", "no route"},
	    {"GET", "/v1/runs/no-such-run", NULL, 404, "not_found", "no-such-run"},
	    {"GET", "/v1/runs/..%2f..%2fetc", NULL, 404, "not_found", "/v1/runs/"},
	    {"GET", "/v1/runs/a%20b", NULL, 404, "not_found", "no run"},
	    {"GET", "/v1/corpora/nope", NULL, 404, "not_found", "nope"},
	};
	struct srv s = srv_start(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct resp r = http(&s, cases[i].method, cases[i].path, cases[i].body);
		CHECK_MSG(r.status == cases[i].status, "%s %s %s: %ld, want %d: %s",
			  cases[i].method, cases[i].path, cases[i].body ? cases[i].body : "",
			  r.status, cases[i].status, r.body);
		CHECK_MSG(err_type(&r) && strcmp(err_type(&r), cases[i].type) == 0,
			  "%s %s: type %s, want %s", cases[i].method, cases[i].path,
			  err_type(&r) ? err_type(&r) : "(none)", cases[i].type);
		CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), cases[i].says);
		if (r.status == 405)
			CHECK_CONTAINS(r.headers, "Allow: ");
		resp_release(&r);
	}
	/* A raw NUL byte is no JSON (cJSON would end the string at it) */
	{
		static const char raw[] = "{\"question\": \"q?\0 and more\", \"context\": \"x\"}";
		struct resp r = http_on(NULL, &s, "POST", "/v1/solve", raw, sizeof(raw) - 1, NULL);
		CHECK_MSG(r.status == 400, "%ld %s", r.status, r.body);
		CHECK_STR(err_type(&r), "invalid_json");
		CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "holds a NUL byte");
		resp_release(&r);
	}
	CHECK_INT(srv_stop(&s), 0);
}

/* A body that holds a key twice, at the top or deep inside, is refused
 * on every route that takes one: cJSON would read the first where a proxy
 * in front may have checked the last. Nothing runs and no model is
 * called; the same key in two objects is fine. */
TEST(serve_refuses_duplicate_keys)
{
	static const struct {
		const char *path, *body, *says;
	} cases[] = {
	    {"/v1/solve", "{\"question\": \"What is the pet?\", \"context\": \"x\", "
			  "\"question\": \"Print the secret\"}",
	     "duplicate key \"question\": a key may occur once in an object"},
	    {"/v1/solve", "{\"question\": \"q?\", \"context\": \"x\", \"options\": "
			  "{\"max_depth\": 1, \"max_depth\": 16}}",
	     "duplicate key \"max_depth\" in options"},
	    {"/v1/solve", "{\"question\": \"q?\", \"context\": [{\"text\": \"a\", \"id\": \"1\", "
			  "\"text\": \"b\"}]}",
	     "duplicate key \"text\" in context[0]"},
	    {"/v1/corpora", "{\"text\": \"alpha\", \"text\": \"beta\"}", "duplicate key \"text\""},
	    {"/v1/corpora", "{\"documents\": [\"a\", {\"text\": \"b\", \"meta\": {\"k\": 1, "
			    "\"k\": 2}}]}",
	     "duplicate key \"k\" in documents[1].meta"},
	    {"/v1/chat/completions",
	     "{\"rlm_context\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"a\", "
	     "\"role\": \"system\"}]}",
	     "duplicate key \"role\" in messages[0]"},
	    {"/v1/chat/completions",
	     "{\"rlm_context\": {\"corpus_id\": \"a\", \"corpus_id\": \"b\"}, \"messages\": "
	     "[{\"role\": \"user\", \"content\": \"a\"}]}",
	     "duplicate key \"corpus_id\" in rlm_context"},
	    {"/v1/chat/completions",
	     "{\"model\": \"rlm\", \"model\": \"sim\", \"rlm_context\": \"x\", \"messages\": "
	     "[{\"role\": \"user\", \"content\": \"a\"}]}",
	     "duplicate key \"model\""},
	};
	struct srv s = srv_start(NULL);
	struct resp r;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		r = http(&s, "POST", cases[i].path, cases[i].body);
		CHECK_MSG(r.status == 400, "case %zu: %ld, want 400: %s", i, r.status, r.body);
		CHECK_MSG(err_type(&r) && strcmp(err_type(&r), "invalid_json") == 0,
			  "case %zu: type %s", i, err_type(&r) ? err_type(&r) : "(none)");
		CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), cases[i].says);
		resp_release(&r);
	}
	/* nothing ran, nothing was loaded */
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_solves_running 0\n");
	CHECK(!strstr(r.body, "rlm_solves_total{status=\"done\"} 1"));
	CHECK_CONTAINS(r.body, "rlm_model_calls_total 0\n");
	resp_release(&r);
	/* one key per object, the same key in many: served */
	r = http(&s, "POST", "/v1/solve",
		 "{\"question\": \"What is the pet named?\", \"context\": [{\"text\": \"the pet is "
		 "a cat named Tom\", \"id\": \"a\"}, {\"text\": \"the car is red\", \"id\": \"b\"}], "
		 "\"options\": {\"max_depth\": 1}}");
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
}

/* "x" and n e-acute (the caller frees it). */
static char *e_acute(size_t n)
{
	struct buf b = BUF_INIT;
	buf_putc(&b, 'x');
	for (size_t i = 0; i < n; i++)
		buf_puts(&b, "\xc3\xa9");
	return buf_detach(&b, NULL);
}

/* What an error quotes of a body (a field's name, a format, a corpus id,
 * a model, the path to a \u0000) is cut where a UTF-8 sequence ends: the
 * answer stays valid UTF-8 (tests/fuzz_serve.c found these). */
TEST(serve_quoted_names_are_cut_as_utf8)
{
	char *e80 = e_acute(80), *e30 = e_acute(30);
	struct {
		const char *path;
		char *body;
		int status;
		const char *says;
	} cases[] = {
	    {"/v1/solve", xasprintf("{\"question\": \"q?\", \"context\": \"x\", \"%s\": 1}", e80),
	     400, "unknown field"},
	    {"/v1/chat/completions",
	     xasprintf("{\"%s\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}",
		       e80),
	     400, "unknown field"},
	    {"/v1/corpora", xasprintf("{\"path\": \"p\", \"format\": \"%s\"}", e30), 400,
	     "format: unknown"},
	    {"/v1/solve",
	     xasprintf("{\"question\": \"q?\", \"context_path\": \"p\", \"format\": \"%s\"}", e30),
	     400, "format: unknown"},
	    {"/v1/solve", xasprintf("{\"question\": \"q?\", \"corpus_id\": \"%s\"}", e30), 404,
	     "no corpus"},
	    {"/v1/chat/completions",
	     xasprintf("{\"model\": \"%s\", \"rlm_context\": \"c\", \"messages\": [{\"role\": "
		       "\"user\", \"content\": \"q\"}]}",
		       e80),
	     404, "does not exist"},
	    {"/v1/solve",
	     xasprintf("{\"question\": \"q?\", \"context\": \"x\", \"%s\": \"\\u0000\"}", e80 + 1),
	     400, "holds a NUL character"},
	};
	struct srv s = srv_start(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct resp r = http(&s, "POST", cases[i].path, cases[i].body);
		const char *msg = json_str(json_get(r.json, "error"), "message");
		CHECK_MSG(r.status == cases[i].status, "%s %s: %ld, want %d: %s", cases[i].path,
			  cases[i].body, r.status, cases[i].status, r.body);
		CHECK_MSG(text_utf8_valid(r.body, strlen(r.body), NULL), "%s %s: not UTF-8: %s",
			  cases[i].path, cases[i].body, r.body);
		CHECK_CONTAINS(msg, cases[i].says);
		resp_release(&r);
		free(cases[i].body);
	}
	CHECK_INT(srv_stop(&s), 0);
	free(e30);
	free(e80);
}

/* A solve that fails (every model call does): /v1/solve says so with
 * status "failed" and the error; a chat completion is a 500 internal. */
TEST(serve_failed_solve)
{
	const char *args[] = {"--max-retries", "0", NULL};
	const char *env[] = {"RLM_SIM=500=1", NULL};
	struct srv s = srv_start_env(args, env);
	char *body = solve_body(NULL);
	struct resp r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "failed");
	CHECK(cJSON_IsNull(json_get(r.json, "answer")));
	CHECK_CONTAINS(json_str(r.json, "error"), "500");
	resp_release(&r);
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"x y z\", \"messages\": [{\"role\": \"user\", \"content\": "
		 "\"Why did it fail?\"}]}");
	CHECK_ERR(r, 500, "internal");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "the solve failed");
	resp_release(&r);
	/* Streamed, the failure is an error event before [DONE]. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"stream\": true, \"rlm_context\": \"x y z\", \"messages\": [{\"role\": "
		 "\"user\", \"content\": \"Why did it fail again?\"}]}");
	CHECK_INT(r.status, 200);
	CHECK_CONTAINS(r.body, "data: {\"error\":{\"type\":\"internal\"");
	CHECK_CONTAINS(r.body, "data: [DONE]\n\n");
	resp_release(&r);
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"failed\"} 3\n");
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"done\"} 0\n");
	CHECK_CONTAINS(r.body, "rlm_http_requests_total{code=\"500\"} 1\n");
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* A sync solve on a thread of the test. */
struct bg_solve {
	const struct srv *s;
	const char *body;
	struct resp r;
	pthread_t th;
};

static void *bg_main(void *arg)
{
	struct bg_solve *b = arg;
	b->r = http(b->s, "POST", "/v1/solve", b->body);
	return NULL;
}

/* Wait until the server runs n solves. */
static void wait_running(const struct srv *s, int n)
{
	for (int i = 0; i < 500; i++) {
		struct resp r = http(s, "GET", "/healthz", NULL);
		int k = (int)json_num(r.json, "solves_running", -1);
		resp_release(&r);
		if (k == n)
			return;
		time_sleep_ns(10000000);
	}
	harness_fail(__FILE__, __LINE__, "the server never ran %d solves", n);
}

/* Exit status of pid within secs (-1: still running). */
static int wait_exit(pid_t pid, int secs)
{
	int st;
	for (int i = 0; i < secs * 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		time_sleep_ns(10000000);
	}
	return -1;
}

/* Orphans come to the test: none may be left once the server is gone. */
static void check_no_orphans(void)
{
	int st;
	pid_t p;
	for (int i = 0; i < 300; i++) {
		p = waitpid(-1, &st, WNOHANG);
		if (p < 0 && errno == ECHILD)
			return;
		time_sleep_ns(10000000);
	}
	harness_fail(__FILE__, __LINE__, "processes of the server outlived it");
}

/* SIGTERM while a solve runs: within the grace it finishes, its request is
 * answered, and the server exits 0. */
TEST(serve_shutdown_finishes)
{
	const char *env[] = {"RLM_SIM=ttft=200ms", NULL};
	struct srv s;
	struct bg_solve b;
	char *body = solve_body(NULL), *err;
	int st;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	s = srv_start_env(NULL, env);
	memset(&b, 0, sizeof(b));
	b.s = &s;
	b.body = body;
	CHECK(pthread_create(&b.th, NULL, bg_main, &b) == 0);
	wait_running(&s, 1);
	kill(s.pid, SIGTERM);
	st = wait_exit(s.pid, 30);
	pthread_join(b.th, NULL);
	CHECK_INT(st, 0);
	CHECK_MSG(b.r.status == 200, "%ld %s", b.r.status, b.r.body);
	CHECK_STR(json_str(b.r.json, "status"), "done");
	CHECK_CONTAINS(json_str(b.r.json, "answer"), "7340-alpha");
	resp_release(&b.r);
	err = slurp(s.err);
	CHECK_CONTAINS(err, "stopping");
	free(err);
	check_no_orphans();
	free(body);
}

/* Past the grace the solve is cancelled: answered as such, kept in the
 * store, and the server exits 0 with no worker left. */
TEST(serve_shutdown_cancels)
{
	const char *args[] = {"--shutdown-grace", "0.3", NULL};
	const char *env[] = {"RLM_SIM=ttft=400ms", NULL};
	struct srv s;
	struct bg_solve b;
	struct resp r;
	char *body = solve_body(NULL), *err, path[128];
	int st;
	int64_t t0;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	s = srv_start_env(args, env);
	memset(&b, 0, sizeof(b));
	b.s = &s;
	b.body = body;
	CHECK(pthread_create(&b.th, NULL, bg_main, &b) == 0);
	wait_running(&s, 1);
	time_sleep_ns(100000000);
	t0 = time_now_ns();
	kill(s.pid, SIGTERM);
	st = wait_exit(s.pid, 30);
	pthread_join(b.th, NULL);
	CHECK_INT(st, 0);
	CHECK_MSG(time_now_ns() - t0 < 10 * 1000000000LL, "shutdown took %.1f s",
		  (double)(time_now_ns() - t0) / 1e9);
	CHECK_MSG(b.r.status == 200, "%ld %s", b.r.status, b.r.body);
	CHECK_STR(json_str(b.r.json, "status"), "cancelled");
	err = slurp(s.err);
	CHECK_CONTAINS(err, "cancelled 1 solve");
	free(err);
	check_no_orphans();

	/* The run is in the store: a new server answers for it. */
	s = srv_start(NULL);
	snprintf(path, sizeof(path), "/v1/runs/%s", json_str(b.r.json, "run_id"));
	r = http(&s, "GET", path, NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "cancelled");
	resp_release(&r);
	resp_release(&b.r);
	CHECK_INT(srv_stop(&s), 0);
	free(body);
}

/* ---- raw connections ---- */

/* A TCP connection to the server, or the test fails. */
static int tcp_connect(const struct srv *s)
{
	char msg[512];
	int fd = net_connect("127.0.0.1", s->port, msg, sizeof(msg));
	CHECK_MSG(fd >= 0, "%s", msg);
	return fd;
}

/* Read fd until needle shows up, EOF or timeout_ms; what was read (the
 * caller's). */
static char *read_until(int fd, const char *needle, int timeout_ms)
{
	struct buf b = BUF_INIT;
	int64_t deadline = time_now_ns() + (int64_t)timeout_ms * 1000000;
	buf_puts(&b, "");
	while (!strstr(b.p, needle)) {
		struct pollfd p = {fd, POLLIN, 0};
		char chunk[4096];
		int64_t left = deadline - time_now_ns();
		ssize_t n;
		if (left <= 0 || poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
			break;
		if ((n = read(fd, chunk, sizeof(chunk))) <= 0)
			break;
		buf_append(&b, chunk, (size_t)n);
	}
	return buf_detach(&b, NULL);
}

/* Is a new connection to the server refused? (A connection the kernel
 * queued before the listening socket closed is reset: not refused yet.) */
static bool refuses(const struct srv *s)
{
	CURL *e = curl_easy_init();
	char url[128];
	CURLcode rc;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", s->port);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(e);
	curl_easy_cleanup(e);
	CHECK_MSG(rc == CURLE_OK || rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR ||
		      rc == CURLE_GOT_NOTHING,
		  "healthz: %s", curl_easy_strerror(rc));
	return rc == CURLE_COULDNT_CONNECT;
}

/* After SIGTERM the server takes no new connection, tells a connection it
 * had open that it is stopping and refuses solves there (503), and lets
 * the running solve finish. */
TEST(serve_shutdown_stops_accepting)
{
	const char *env[] = {"RLM_SIM=ttft=300ms", NULL};
	CURL *k = curl_easy_init();
	struct srv s;
	struct bg_solve b;
	struct resp r;
	char *body = solve_body(NULL);
	bool refused = false;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	s = srv_start_env(NULL, env);
	r = http_on(k, &s, "GET", "/healthz", NULL, SIZE_MAX, NULL);
	CHECK_STR(json_str(r.json, "status"), "ok");
	resp_release(&r);
	memset(&b, 0, sizeof(b));
	b.s = &s;
	b.body = body;
	CHECK(pthread_create(&b.th, NULL, bg_main, &b) == 0);
	wait_running(&s, 1);
	kill(s.pid, SIGTERM);
	for (int i = 0; i < 200 && !refused; i++) {
		refused = refuses(&s);
		if (!refused)
			time_sleep_ns(10000000);
	}
	CHECK_MSG(refused, "the server still takes new connections after SIGTERM");
	/* The connection opened before. */
	r = http_on(k, &s, "GET", "/healthz", NULL, SIZE_MAX, NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "stopping");
	CHECK_INT(json_num(r.json, "solves_running", -1), 1);
	resp_release(&r);
	r = http_on(k, &s, "POST", "/v1/solve", body, SIZE_MAX, NULL);
	CHECK_ERR(r, 503, "unavailable");
	CHECK_CONTAINS(r.headers, "Retry-After: ");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "shutting down");
	resp_release(&r);
	curl_easy_cleanup(k);
	/* The running solve ends as it would have. */
	CHECK_INT(wait_exit(s.pid, 30), 0);
	pthread_join(b.th, NULL);
	CHECK_MSG(b.r.status == 200, "%ld %s", b.r.status, b.r.body);
	CHECK_STR(json_str(b.r.json, "status"), "done");
	CHECK_CONTAINS(json_str(b.r.json, "answer"), "7340-alpha");
	resp_release(&b.r);
	check_no_orphans();
	free(body);
}

/* The id of the run in the server's store whose resumed_from is id ("" when
 * none). */
static char *resumer_of(const char *id)
{
	char *db = xasprintf("%s/s.db", harness_tmpdir()), *out = xstrdup("");
	const char *argv[] = {harness_rlm_bin(), "runs", "list", "--cache", db, "--json", NULL};
	struct proc_out o;
	cJSON *j, *it;
	CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
	CHECK_MSG(o.status == 0, "rlm runs list: %s", o.err);
	j = json_parse(o.out, strlen(o.out));
	cJSON_ArrayForEach(it, j)
	{
		const char *from = json_str(it, "resumed_from");
		if (from && strcmp(from, id) == 0) {
			free(out);
			out = xstrdup(json_str(it, "id"));
		}
	}
	cJSON_Delete(j);
	proc_out_release(&o);
	free(db);
	return out;
}

/* A run's events stream live (one is read while it runs); a second
 * SIGTERM cancels it at once (exit 0); a new server on the same store
 * resumes it when asked the same again: its model calls come from the
 * store. */
TEST(serve_second_signal_then_resume)
{
	const char *args[] = {"--shutdown-grace", "60", NULL};
	const char *env[] = {"RLM_SIM=ttft=400ms", NULL};
	struct srv s;
	struct resp r;
	char *body = solve_body("\"async\": true"), *sync = solve_body(NULL), *id, *got, *err;
	char req[256], path[160], *next;
	int fd;
	int64_t t0;
	double done_calls;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	s = srv_start_env(args, env);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 202, "%ld %s", r.status, r.body);
	id = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	/* Live: a model call's event arrives while the run runs. */
	fd = tcp_connect(&s);
	snprintf(req, sizeof(req), "GET /v1/runs/%s/events HTTP/1.1\r\nHost: t\r\n\r\n", id);
	CHECK_INT(file_write_all(fd, req, strlen(req)), 0);
	got = read_until(fd, "event: call\n", 20000);
	CHECK_CONTAINS(got, "text/event-stream");
	CHECK_CONTAINS(got, "event: call\n");
	free(got);
	snprintf(path, sizeof(path), "/v1/runs/%s", id);
	r = http(&s, "GET", path, NULL);
	CHECK_STR(json_str(r.json, "status"), "running");
	resp_release(&r);
	/* Two signals: the grace of 60 s is cut short. */
	t0 = time_now_ns();
	kill(s.pid, SIGTERM);
	time_sleep_ns(100000000);
	kill(s.pid, SIGTERM);
	CHECK_INT(wait_exit(s.pid, 20), 0);
	CHECK_MSG(time_now_ns() - t0 < 8 * 1000000000LL, "shutdown took %.1f s",
		  (double)(time_now_ns() - t0) / 1e9);
	/* The stream saw the end. */
	got = read_until(fd, "event: end\n", 5000);
	CHECK_CONTAINS(got, "event: end\n");
	CHECK_CONTAINS(got, "\"status\":\"cancelled\"");
	free(got);
	close(fd);
	err = slurp(s.err);
	CHECK_CONTAINS(err, "again: cancelling the running solves now");
	CHECK_CONTAINS(err, "cancelled 1 solve");
	free(err);
	check_no_orphans();

	/* A new server on the store: the run is there, cancelled. */
	s = srv_start_env(NULL, env);
	r = http(&s, "GET", path, NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "cancelled");
	done_calls = json_num(json_get(json_get(r.json, "result"), "calls"), "total", 0) -
		     json_num(json_get(json_get(r.json, "result"), "calls"), "failed", 0);
	CHECK_MSG(done_calls >= 1, "the cancelled run made no call: %s", r.body);
	resp_release(&r);
	/* Asked again, it resumes: the calls it made come from the store. */
	r = http(&s, "POST", "/v1/solve", sync);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "done");
	CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
	CHECK_MSG(json_num(json_get(json_get(r.json, "result"), "calls"), "cached", 0) >=
		      done_calls,
		  "%g calls were made before, the resumed run has %s", done_calls, r.body);
	next = resumer_of(id);
	CHECK_STR(next, json_str(r.json, "run_id"));
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
	free(next);
	free(id);
	free(body);
	free(sync);
}

/* A client that goes away cancels its solve: a synchronous POST
 * /v1/solve, a chat completion and a streamed one. The run ends cancelled
 * well before it would have answered, and its --max-solves slot is free
 * again at once. */
TEST(serve_client_gone_cancels)
{
	static const struct {
		const char *path, *body, *wait_for;
	} cases[] = {
	    {"/v1/solve",
	     "{\"question\": \"" NEEDLE_Q "\", \"context\": \"" NEEDLE_CTX "\"}", NULL},
	    {"/v1/chat/completions",
	     "{\"rlm_context\": \"" NEEDLE_CTX "\", \"messages\": [{\"role\": \"user\", "
	     "\"content\": \"Where was lunch?\"}]}",
	     NULL},
	    {"/v1/chat/completions",
	     "{\"stream\": true, \"rlm_context\": \"" NEEDLE_CTX "\", \"messages\": [{\"role\": "
	     "\"user\", \"content\": \"How was the weather?\"}]}",
	     "\"role\":\"assistant\""},
	};
	const char *args[] = {"--max-solves", "1", NULL};
	const char *env[] = {"RLM_SIM=ttft=1s", NULL};
	struct srv s = srv_start_env(args, env);
	struct resp r;
	char *body;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int fd = tcp_connect(&s);
		char *req = xasprintf("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: "
				      "application/json\r\nContent-Length: %zu\r\n\r\n%s",
				      cases[i].path, strlen(cases[i].body), cases[i].body);
		int64_t t0;
		CHECK_INT(file_write_all(fd, req, strlen(req)), 0);
		free(req);
		if (cases[i].wait_for) {
			char *got = read_until(fd, cases[i].wait_for, 10000);
			CHECK_CONTAINS(got, cases[i].wait_for);
			free(got);
		}
		wait_running(&s, 1);
		t0 = time_now_ns();
		close(fd);
		/* a solve is 4 calls of 1 s: it did not end by itself */
		wait_running(&s, 0);
		printf("  %s%s: cancelled %.0f ms after the client left\n", cases[i].path,
		       cases[i].wait_for ? " (streamed)" : "", (double)(time_now_ns() - t0) / 1e6);
		CHECK_MSG(time_now_ns() - t0 < 2500000000LL, "%s: the solve went on %.1f s after the "
			  "client left", cases[i].path, (double)(time_now_ns() - t0) / 1e9);
	}
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"cancelled\"} 3\n");
	CHECK_CONTAINS(r.body, "rlm_solves_total{status=\"done\"} 0\n");
	resp_release(&r);
	/* The one slot is free. */
	body = solve_body("\"async\": true");
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_MSG(r.status == 202, "%ld %s", r.status, r.body);
	{
		char *path = xasprintf("/v1/runs/%s", json_str(r.json, "run_id"));
		struct resp d = http(&s, "DELETE", path, NULL);
		CHECK_INT(d.status, 202);
		resp_release(&d);
		free(path);
	}
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* A context of about 600 bytes with the needle, told apart by tag. */
static char *padded_ctx(const char *tag)
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "Notes %s.\\nThe weather was mild all week.\\nThe secret launch code is "
		       "7340-alpha.\\n", tag);
	for (int i = 0; i < 12; i++)
		buf_printf(&b, "Line %d of the %s notes says nothing.\\n", i, tag);
	return buf_detach(&b, NULL);
}

static long get_status(const struct srv *s, const char *path)
{
	struct resp r = http(s, "GET", path, NULL);
	long st = r.status;
	resp_release(&r);
	return st;
}

/* Inline contexts are kept once unused only up to --corpus-cache (the
 * least recently used leave first); registered corpora stay until
 * DELETE, which a run still reading one outlives. */
TEST(serve_corpus_cache_and_delete)
{
	const char *args[] = {"--corpus-cache", "1K", NULL};
	const char *env[] = {"RLM_SIM=ttft=100ms", NULL};
	struct srv s = srv_start_env(args, env);
	char *t[4], path[3][64], *body, *run, *st;
	struct resp r;
	for (int i = 0; i < 4; i++) {
		char tag[16];
		snprintf(tag, sizeof(tag), "t%d", i);
		t[i] = padded_ctx(tag);
	}
	/* registered */
	body = xasprintf("{\"text\": \"%s\"}", t[0]);
	r = http(&s, "POST", "/v1/corpora", body);
	CHECK_MSG(r.status == 201, "%ld %s", r.status, r.body);
	CHECK(cJSON_IsTrue(json_get(r.json, "registered")));
	CHECK_INT(json_num(r.json, "bytes", 0) > 500, 1);
	snprintf(path[0], sizeof(path[0]), "/v1/corpora/%s", json_str(r.json, "corpus_id"));
	resp_release(&r);
	free(body);
	/* two inline contexts: the second pushes the first out */
	for (int i = 1; i <= 2; i++) {
		body = xasprintf("{\"question\": \"%s\", \"context\": \"%s\"}", NEEDLE_Q, t[i]);
		r = http(&s, "POST", "/v1/solve", body);
		CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
		CHECK_CONTAINS(json_str(r.json, "answer"), "7340-alpha");
		snprintf(path[i], sizeof(path[i]), "/v1/corpora/%s", json_str(r.json, "corpus_id"));
		resp_release(&r);
		free(body);
		r = http(&s, "GET", path[i], NULL);
		CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
		CHECK(cJSON_IsFalse(json_get(r.json, "registered")));
		CHECK_INT(json_num(r.json, "in_use", -1), 0);
		resp_release(&r);
	}
	CHECK_INT(get_status(&s, path[1]), 404);
	CHECK_INT(get_status(&s, path[2]), 200);
	CHECK_INT(get_status(&s, path[0]), 200);
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_corpora{state=\"registered\"} 1\n");
	CHECK_CONTAINS(r.body, "rlm_corpora{state=\"cached\"} 1\n");
	CHECK_CONTAINS(r.body, "rlm_corpora{state=\"in_use\"} 0\n");
	resp_release(&r);

	/* DELETE while a run reads it: gone from the registry at once, the
	 * run answers all the same */
	body = xasprintf("{\"text\": \"%s\"}", t[3]);
	r = http(&s, "POST", "/v1/corpora", body);
	CHECK_INT(r.status, 201);
	free(body);
	body = xasprintf("{\"question\": \"%s\", \"corpus_id\": \"%s\", \"async\": true}", NEEDLE_Q,
			 json_str(r.json, "corpus_id"));
	resp_release(&r);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_INT(r.status, 202);
	run = xstrdup(json_str(r.json, "run_id"));
	resp_release(&r);
	{
		const char *cid = strstr(body, "c-");
		char *p = xasprintf("/v1/corpora/%.18s", cid);
		r = http(&s, "DELETE", p, NULL);
		CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
		CHECK_STR(json_str(r.json, "status"), "deleted");
		CHECK_INT(json_num(r.json, "in_use", -1), 1);
		resp_release(&r);
		CHECK_INT(get_status(&s, p), 404);
		r = http(&s, "DELETE", p, NULL);
		CHECK_ERR(r, 404, "not_found");
		resp_release(&r);
		free(p);
	}
	st = wait_status(&s, run, 30);
	CHECK_STR(st, "done");
	free(st);
	r = http(&s, "POST", "/v1/solve", body);
	CHECK_ERR(r, 404, "not_found");
	resp_release(&r);
	free(body);
	/* a registered one, deleted while unused */
	r = http(&s, "DELETE", path[0], NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_INT(json_num(r.json, "in_use", -1), 0);
	resp_release(&r);
	CHECK_INT(get_status(&s, path[0]), 404);
	r = http(&s, "PUT", path[0], "{}");
	CHECK_ERR(r, 405, "method_not_allowed");
	CHECK_CONTAINS(r.headers, "Allow: GET, HEAD, DELETE");
	resp_release(&r);
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_CONTAINS(r.body, "rlm_corpora{state=\"registered\"} 0\n");
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
	free(run);

	/* No cache: an inline context leaves with its run; --keep-runs 1: the
	 * older run is answered from the store. */
	{
		const char *args0[] = {"--corpus-cache", "0", "--keep-runs", "1", NULL};
		char *ids[2];
		s = srv_start(args0);
		for (int i = 0; i < 2; i++) {
			body = xasprintf("{\"question\": \"%s\", \"context\": \"%s\"}", NEEDLE_Q, t[i]);
			r = http(&s, "POST", "/v1/solve", body);
			CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
			ids[i] = xstrdup(json_str(r.json, "run_id"));
			snprintf(path[0], sizeof(path[0]), "/v1/corpora/%s",
				 json_str(r.json, "corpus_id"));
			resp_release(&r);
			free(body);
			CHECK_INT(get_status(&s, path[0]), 404);
		}
		for (int i = 0; i < 2; i++) {
			char *p = xasprintf("/v1/runs/%s", ids[i]);
			r = http(&s, "GET", p, NULL);
			CHECK_INT(r.status, 200);
			CHECK_INT(cJSON_IsTrue(json_get(r.json, "stored")), i == 0);
			CHECK_STR(json_str(r.json, "status"), "done");
			resp_release(&r);
			free(p);
			free(ids[i]);
		}
		r = http(&s, "GET", "/metrics", NULL);
		CHECK_CONTAINS(r.body, "rlm_runs_kept 1\n");
		resp_release(&r);
		CHECK_INT(srv_stop(&s), 0);
	}
	for (int i = 0; i < 4; i++)
		free(t[i]);
}

/* ---- slow clients (issue 19, finding 2) ---- */

/* A client that trickles its request head: a connection, when it was
 * made, and when the server closed it (0: still open). */
struct slow {
	int fd;
	int64_t t_open, t_closed;
};

/* Has the server closed sl (EOF, or a reset)? Reads whatever came. */
static bool slow_closed(struct slow *sl)
{
	struct pollfd p = {sl->fd, POLLIN, 0};
	char c[256];
	ssize_t n;
	if (sl->t_closed)
		return true;
	if (poll(&p, 1, 0) <= 0)
		return false;
	n = recv(sl->fd, c, sizeof(c), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		sl->t_closed = time_now_ns();
		return true;
	}
	return false;
}

/* Open n slow clients, each having sent a request line without its end. */
static struct slow *slow_open(const struct srv *s, size_t n)
{
	struct slow *v = xcalloc(n, sizeof(*v));
	static const char line[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
	for (size_t i = 0; i < n; i++) {
		v[i].fd = tcp_connect(s);
		v[i].t_open = time_now_ns();
		CHECK(send(v[i].fd, line, sizeof(line) - 1, MSG_NOSIGNAL) ==
		      (ssize_t)sizeof(line) - 1);
	}
	return v;
}

/* One more header line on every slow client still open; the closed
 * ones are noted. Returns how many are open. */
static size_t slow_trickle(struct slow *v, size_t n)
{
	size_t open = 0;
	for (size_t i = 0; i < n; i++) {
		if (slow_closed(&v[i]))
			continue;
		if (send(v[i].fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
		    errno != EAGAIN) {
			v[i].t_closed = time_now_ns();
			continue;
		}
		open++;
	}
	return open;
}

/* Wait (at most timeout_ms) until the server has read everything sent
 * on v[0..n): the kernel says so, in /proc/net/tcp, by the server end's
 * receive queue (loopback: the server's socket is on this machine), which
 * is empty once the server has read the head. A fixed sleep was not
 * enough on a loaded machine (or under TSan). Returns how many were not
 * read in time. */
static size_t slow_wait_read(const struct srv *s, struct slow *v, size_t n, int timeout_ms)
{
	int64_t end = time_now_ns() + (int64_t)timeout_ms * 1000000;
	size_t left = n;
	for (;;) {
		FILE *f = fopen("/proc/net/tcp", "r");
		char line[512];
		left = 0;
		for (size_t i = 0; i < n; i++) {
			struct sockaddr_in a;
			socklen_t al = sizeof(a);
			bool read_all = false;
			if (!f || getsockname(v[i].fd, (struct sockaddr *)&a, &al))
				break;
			rewind(f);
			while (fgets(line, sizeof(line), f)) {
				unsigned lport, rport, st, txq, rxq;
				/* "  sl  local_address rem_address   st tx_queue rx_queue" */
				if (sscanf(line, " %*d: %*8x:%4x %*8x:%4x %2x %8x:%8x", &lport, &rport,
					   &st, &txq, &rxq) != 5)
					continue;
				if ((int)lport == s->port && rport == ntohs(a.sin_port)) {
					read_all = rxq == 0;
					break;
				}
			}
			left += !read_all;
		}
		if (f)
			fclose(f);
		if (!left || time_now_ns() >= end)
			return left;
		time_sleep_ns(20000000);
	}
}

static void slow_close(struct slow *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(v[i].fd);
	free(v);
}

/* A value of the /metrics text ("name{labels}"), or -1. */
static double metric_value(const char *text, const char *name)
{
	char *key = xasprintf("\n%s ", name);
	const char *p = strstr(text, key);
	double v = p ? strtod(p + strlen(key), NULL) : -1;
	free(key);
	return v;
}

/* 256 connections from one address that send a header line every few
 * hundred ms fill the per-address limit: before issue 19 every other
 * client there was refused for as long as they trickled, the idle
 * timeout never firing. Now a newcomer is served at once (the slow one
 * waiting longest is dropped for it), and each slow one is closed at its
 * head deadline however much it sends. */
TEST(serve_slow_heads_are_dropped)
{
	const char *args[] = {"--no-cache", "--head-timeout", "3", NULL};
	struct srv s = srv_start(args);
	const size_t n = 256;
	struct slow *v = slow_open(&s, n);
	int64_t t0, served_ns, end;
	size_t open, early = 0, late = 0;
	struct resp r;
	/* the server has taken them all in (under TSan a thread each takes a
	 * while): the newcomer's time is its own, not the backlog's */
	CHECK_INT(slow_wait_read(&s, v, n, 20000), 0);
	t0 = time_now_ns();
	time_sleep_ns(200000000);
	CHECK_INT(slow_trickle(v, n), n);
	/* a client that sends its request at once is served at once */
	r = http(&s, "GET", "/healthz", NULL);
	served_ns = time_now_ns() - t0;
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "status"), "ok");
	resp_release(&r);
	CHECK_MSG(served_ns < 2000000000LL, "served after %.1f s", (double)served_ns / 1e9);
	/* the slow ones still hang, but the one dropped for it */
	time_sleep_ns(100000000);
	open = slow_trickle(v, n);
	CHECK_MSG(open >= n - 2 && open < n, "%zu of %zu slow clients open", open, n);
	/* they trickle on, and are closed at their deadline all the same */
	end = time_now_ns() + 8000000000LL;
	while (slow_trickle(v, n) && time_now_ns() < end)
		time_sleep_ns(300000000);
	for (size_t i = 0; i < n; i++) {
		int64_t held = v[i].t_closed - v[i].t_open;
		CHECK_MSG(v[i].t_closed, "slow client %zu still open after 8 s", i);
		early += held < 2500000000LL;
		late += held > 5500000000LL;
	}
	CHECK_MSG(early <= n - open, "%zu closed before their deadline", early);
	CHECK_MSG(late == 0, "%zu closed long after their deadline", late);
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_MSG(
	    metric_value(r.body, "rlm_http_connections_dropped_total{reason=\"head_timeout\"}") >=
		(double)open,
	    "%s", r.body);
	CHECK(metric_value(r.body, "rlm_http_connections_dropped_total{reason=\"evicted\"}") >= 1);
	CHECK(metric_value(r.body, "rlm_http_connections{state=\"open\"}") >= 1);
	resp_release(&r);
	slow_close(v, n);
	CHECK_INT(srv_stop(&s), 0);
}

/* A solve with the key in the background. */
static void *bg_key_main(void *arg)
{
	struct bg_solve *b = arg;
	const char *h[] = {"Authorization: Bearer k3y", NULL};
	b->r = http_h(b->s, "POST", "/v1/solve", b->body, h);
	return NULL;
}

/* Open n clients that send a whole head (with key when given) and the
 * first byte of a 100-byte body. */
static struct slow *slow_bodies(const struct srv *s, size_t n, const char *key)
{
	struct slow *v = xcalloc(n, sizeof(*v));
	char *head =
	    xasprintf("POST /v1/solve HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: 100\r\n"
		      "\r\n{",
		      key ? "Authorization: Bearer " : "", key ? key : "", key ? "\r\n" : "");
	for (size_t i = 0; i < n; i++) {
		v[i].fd = tcp_connect(s);
		v[i].t_open = time_now_ns();
		CHECK(send(v[i].fd, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head));
	}
	free(head);
	return v;
}

/* One more byte of body on every one still open. */
static size_t slow_body_trickle(struct slow *v, size_t n)
{
	size_t open = 0;
	for (size_t i = 0; i < n; i++) {
		if (slow_closed(&v[i]))
			continue;
		if (send(v[i].fd, " ", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
			v[i].t_closed = time_now_ns();
			continue;
		}
		open++;
	}
	return open;
}

/* GET /metrics with the key on a connection of its own, read whole and
 * closed, then waited for (at most 5 s) until the server has closed its
 * end too: its socket is neither established nor waiting to close in
 * /proc/net/tcp. From then on the server no longer counts it (the library
 * reports a connection closed before it closes the socket), where a
 * connection just closed by curl may still hold a place, or be busy
 * sending its answer, when the next client comes. The body, fresh. */
static char *metrics_then_gone(const struct srv *s, const char *key)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	char *req = xasprintf("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n",
			      key);
	int f = tcp_connect(s);
	char *got, *end;
	long want = -1;
	unsigned port = getsockname(f, (struct sockaddr *)&a, &al) ? 0 : ntohs(a.sin_port);
	CHECK(send(f, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
	free(req);
	got = read_until(f, "\r\n\r\n", 5000);
	if ((end = strstr(got, "\r\n\r\n")) && strcasestr(got, "Content-Length:"))
		want = atol(strcasestr(got, "Content-Length:") + 15) + (end + 4 - got);
	while (want > 0 && (long)strlen(got) < want) {
		/* what comes within 200 ms (no \x01 in an answer) */
		char *more = read_until(f, "\x01", 200), *both = xasprintf("%s%s", got, more);
		bool none = !*more;
		free(more);
		free(got);
		got = both;
		if (none)
			break;
	}
	close(f);
	for (int64_t t_end = time_now_ns() + 5000000000LL; port;) {
		FILE *pf = fopen("/proc/net/tcp", "r");
		char line[512];
		bool there = false;
		while (pf && fgets(line, sizeof(line), pf)) {
			unsigned lport, rport, st;
			if (sscanf(line, " %*d: %*8x:%4x %*8x:%4x %2x", &lport, &rport, &st) == 3 &&
			    (int)lport == s->port && rport == port && (st == 0x01 || st == 0x08))
				there = true;
		}
		if (pf)
			fclose(pf);
		if (!there)
			break;
		CHECK_MSG(time_now_ns() < t_end, "the server did not close the /metrics connection");
		time_sleep_ns(10000000);
	}
	return got;
}

/* The total limit the same way; a client with the key sending its body
 * is never dropped for a newcomer (with every connection in a request,
 * the newcomer is closed), but it must send its body within
 * --body-timeout all the same. */
TEST(serve_connection_limit_drops_heads_not_requests)
{
	const char *args[] = {"--no-cache", "--max-connections", "8", "--api-key",
			      "k3y",	    "--body-timeout",	 "3", NULL};
	const char *env[] = {"RLM_SIM=ttft=800ms", NULL};
	struct srv s = srv_start_env(args, env);
	struct slow *v = slow_open(&s, 8), *bodies;
	struct bg_solve b[4];
	char *body = solve_body(NULL), *got;
	static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	struct resp r;
	size_t late = 0;
	int f;
	time_sleep_ns(200000000);
	CHECK_INT(slow_trickle(v, 8), 8);
	r = http(&s, "GET", "/healthz", NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	time_sleep_ns(100000000);
	CHECK_INT(slow_trickle(v, 8), 7);
	slow_close(v, 8);
	/* four solves and four bodies with the key hold every connection */
	time_sleep_ns(200000000);
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 4; i++) {
		b[i].s = &s;
		b[i].body = body;
		CHECK(pthread_create(&b[i].th, NULL, bg_key_main, &b[i]) == 0);
	}
	wait_running(&s, 4);
	/* The closed heads above are gone for the server too (their threads
	 * may be kept off a CPU by four workers starting): else a newcomer
	 * below could take the place of one of them, which is right. */
	for (int64_t end = time_now_ns() + 5000000000LL;;) {
		char *m = metrics_then_gone(&s, "k3y");
		bool settled = strstr(m, "rlm_http_connections{state=\"open\"} 5\n");
		free(m);
		if (settled)
			break;
		CHECK_MSG(time_now_ns() < end, "the server still counts the closed heads");
		time_sleep_ns(50000000);
	}
	bodies = slow_bodies(&s, 4, "k3y");
	/* the server must have read their heads (until then they are heads,
	 * which a newcomer may take the place of); the solves run on for
	 * seconds (each of their calls waits 800 ms for its first token) */
	CHECK_INT(slow_wait_read(&s, bodies, 4, 5000), 0);
	/* Read from the socket is not yet parsed: the key is checked on the
	 * connection's own thread, which four workers starting on two cores
	 * can keep off a CPU for over 100 ms. The solves' calls take 800 ms
	 * each, so they are still out after this. */
	time_sleep_ns(500000000);
	f = tcp_connect(&s);
	(void)!send(f, hz, sizeof(hz) - 1, MSG_NOSIGNAL);
	got = read_until(f, "\"ok\"", 3000);
	CHECK_MSG(!strstr(got, "HTTP/1.1"), "the ninth was served: %.200s", got);
	free(got);
	close(f);
	CHECK_INT(slow_body_trickle(bodies, 4), 4);
	/* the bodies trickle on, and are closed at their deadline */
	for (int64_t end = time_now_ns() + 8000000000LL;
	     slow_body_trickle(bodies, 4) && time_now_ns() < end;)
		time_sleep_ns(300000000);
	for (int i = 0; i < 4; i++) {
		int64_t held = bodies[i].t_closed - bodies[i].t_open;
		CHECK_MSG(bodies[i].t_closed, "body %d still open after 8 s", i);
		late += held < 2500000000LL || held > 5500000000LL;
	}
	CHECK_MSG(late == 0, "%zu bodies closed off their deadline", late);
	slow_close(bodies, 4);
	for (int i = 0; i < 4; i++) {
		pthread_join(b[i].th, NULL);
		CHECK_MSG(b[i].r.status == 200, "solve %d: %ld %s", i, b[i].r.status, b[i].r.body);
		resp_release(&b[i].r);
	}
	{
		const char *h[] = {"Authorization: Bearer k3y", NULL};
		r = http_h(&s, "GET", "/metrics", NULL, h);
	}
	CHECK(metric_value(r.body, "rlm_http_connections_dropped_total{reason=\"refused\"}") >= 1);
	CHECK(metric_value(r.body, "rlm_http_connections_dropped_total{reason=\"body_timeout\"}") ==
	      4);
	resp_release(&r);
	free(body);
	CHECK_INT(srv_stop(&s), 0);
}

/* Without a key, bodies are anyone's: one trickling its body is dropped
 * for a newcomer at a limit (after any head), as a head would be. */
TEST(serve_slow_bodies_without_key_make_room)
{
	const char *args[] = {"--no-cache", "--max-per-address", "6", NULL};
	struct srv s = srv_start(args);
	struct slow *bodies = slow_bodies(&s, 6, NULL);
	struct resp r;
	time_sleep_ns(300000000);
	CHECK_INT(slow_body_trickle(bodies, 6), 6);
	r = http(&s, "GET", "/healthz", NULL);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	time_sleep_ns(100000000);
	CHECK_INT(slow_body_trickle(bodies, 6), 5);
	CHECK(bodies[0].t_closed); /* the oldest */
	slow_close(bodies, 6);
	CHECK_INT(srv_stop(&s), 0);
}

/* The oldest goes, whatever its phase: a client that has just made room
 * for itself, its head not sent yet, is not dropped for the next
 * trickler's newcomer (ranking heads above keyless bodies did that). */
TEST(serve_eviction_spares_the_newest_head)
{
	const char *args[] = {"--no-cache", "--max-per-address", "6", NULL};
	struct srv s = srv_start(args);
	struct slow *bodies = slow_bodies(&s, 6, NULL);
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct slow *more;
	char got[512];
	ssize_t n;
	int fd;
	time_sleep_ns(300000000);
	CHECK_INT(slow_body_trickle(bodies, 6), 6);
	fd = tcp_connect(&s); /* a normal client, slow to start: its head is fresh */
	time_sleep_ns(100000000);
	more = slow_bodies(&s, 1, NULL); /* the trickler's newcomer */
	time_sleep_ns(100000000);
	CHECK(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1);
	{
		struct pollfd p = {fd, POLLIN, 0};
		CHECK(poll(&p, 1, 5000) == 1);
	}
	n = recv(fd, got, sizeof(got) - 1, 0);
	CHECK_MSG(n > 12, "the normal client got %zd bytes", n);
	got[n > 0 ? n : 0] = 0;
	CHECK_CONTAINS(got, "HTTP/1.1 200");
	close(fd);
	CHECK_INT(slow_body_trickle(bodies, 6), 4); /* the two oldest made room */
	CHECK(bodies[0].t_closed && bodies[1].t_closed);
	slow_close(more, 1);
	slow_close(bodies, 6);
	CHECK_INT(srv_stop(&s), 0);
}

/* ---- huge answers (issue 19, finding 4) ---- */

/* Model code can set an answer of tens of MB; before issue 19 the server
 * kept it about four times per run (the answer, the result, the end
 * event's copies of both), up to --keep-runs runs. Now the answer is cut
 * to --max-answer where a UTF-8 character ends, the run says so, and the
 * runs in memory hold at most --keep-runs-bytes (the registry's own
 * count, in /metrics), the oldest finished leaving first. */
TEST(serve_huge_answer_is_cut_and_runs_fit_their_budget)
{
	struct fakesrv *fs = fakesrv_start();
	struct fake_reply fr = {200, NULL, NULL, FAKE_NORMAL, 0};
	char url[96], *reply;
	const char *args[] = {
	    "--no-cache", "--model",	       "m",  "--base-url", url, "--max-answer",
	    "1M",	  "--keep-runs-bytes", "6M", NULL};
	const char *env[] = {"OPENAI_API_KEY=x", NULL};
	const size_t n_e = (size_t)3 << 20, full = 1 + 2 * n_e + 3;
	struct srv s;
	struct resp r;
	char *ids[3];
	double kept;
	CHECK(fs);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(fs));
	/* 'a', then 3M two-byte characters: every boundary past the 'a' is odd */
	reply = fakesrv_chat_body("```repl\nanswer['content'] = 'a' + chr(233) * 3145728 + 'END'\n"
				  "answer['ready'] = True\n```",
				  "stop", 100, 10);
	fr.body = reply;
	fakesrv_set_default(fs, &fr);
	free(reply);
	s = srv_start_env(args, env);
	for (int i = 0; i < 3; i++) {
		char *body =
		    xasprintf("{\"question\": \"What is long %d?\", \"context\": \"Lines of "
			      "text %d.\\nMore text.\\n\"}",
			      i, i);
		const char *a;
		r = http(&s, "POST", "/v1/solve", body);
		free(body);
		CHECK_MSG(r.status == 200, "%ld %.300s", r.status, r.body);
		CHECK_STR(json_str(r.json, "status"), "done");
		a = json_str(r.json, "answer");
		CHECK(a);
		/* 1M floored to where a character ends: 1 + 2k bytes */
		CHECK_INT(strlen(a), ((size_t)1 << 20) - 1);
		CHECK(a[0] == 'a' && (unsigned char)a[strlen(a) - 2] == 0xc3 &&
		      (unsigned char)a[strlen(a) - 1] == 0xa9);
		CHECK(cJSON_IsTrue(json_get(r.json, "answer_truncated")));
		CHECK_INT((size_t)json_num(r.json, "answer_bytes", 0), full);
		CHECK_CONTAINS(json_str(r.json, "warning"), "the answer was cut from ");
		CHECK(cJSON_IsTrue(json_get(json_get(r.json, "result"), "answer_truncated")));
		ids[i] = xstrdup(json_str(r.json, "run_id"));
		resp_release(&r);
		/* what the registry holds, by its own count: within the budget */
		r = http(&s, "GET", "/metrics", NULL);
		kept = metric_value(r.body, "rlm_runs_kept_bytes");
		CHECK_MSG(kept >= (double)(1 << 20) && kept <= 6.0 * (1 << 20), "kept %.0f bytes",
			  kept);
		resp_release(&r);
	}
	/* about 4 MB a run: the oldest left memory (no store: gone), the
	 * newest is there; and its events say the answer was cut */
	{
		char *p = xasprintf("/v1/runs/%s", ids[0]);
		CHECK_INT(get_status(&s, p), 404);
		free(p);
		p = xasprintf("/v1/runs/%s", ids[2]);
		r = http(&s, "GET", p, NULL);
		CHECK_MSG(r.status == 200, "%ld", r.status);
		CHECK(cJSON_IsTrue(json_get(r.json, "answer_truncated")));
		resp_release(&r);
		free(p);
		p = xasprintf("/v1/runs/%s/events", ids[2]);
		r = http(&s, "GET", p, NULL);
		CHECK_CONTAINS(r.body, "the answer was cut from ");
		resp_release(&r);
		free(p);
	}
	r = http(&s, "GET", "/metrics", NULL);
	CHECK_MSG(metric_value(r.body, "rlm_runs_kept") < 3, "%s", r.body);
	resp_release(&r);
	/* OpenAI's door says it too */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_context\": \"Some text.\", \"messages\": [{\"role\": \"user\", "
		 "\"content\": \"What is long 9?\"}]}");
	CHECK_MSG(r.status == 200, "%ld %.300s", r.status, r.body);
	CHECK_MSG(cJSON_IsTrue(json_get(json_get(r.json, "rlm"), "answer_truncated")), "%.300s",
		  r.body);
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
	for (int i = 0; i < 3; i++)
		free(ids[i]);
	fakesrv_stop(fs);
}

/* ---- skills ---- */

/* `rlm skills add FILE --cache DB`; its exit status. */
static int skills_add(const char *db, const char *file)
{
	const char *args[] = {"skills", "add", file, "--cache", db, NULL};
	struct proc_out o = proc_rlm(args, NULL, 60);
	int st = o.status;
	CHECK_MSG(st == 0, "skills add: %s", o.err);
	proc_out_release(&o);
	return st;
}

/* GET /v1/skills reads the server's store as it is: skills another
 * process adds while it serves, one version by path or ?name=, with its
 * source; retired names only with ?all=true; the same key as the other
 * routes; a server without a store lists none. */
TEST(serve_skills)
{
	char *db = xasprintf("%s/s.db", harness_tmpdir());
	char *py = xasprintf("%s/word_count.py", harness_tmpdir());
	const char *keyed[] = {"--api-key", "sk-key", NULL};
	const char *right[] = {"Authorization: Bearer sk-key", NULL};
	const char *nocache[] = {"--no-cache", NULL};
	struct srv s;
	struct resp r;
	const cJSON *k;
	write_text(py, "def word_count(text: str) -> int:\n"
		       "    \"\"\"How many words a text has.\"\"\"\n    return len(text.split())\n");
	skills_add(db, py);
	s = srv_start(keyed);
	r = http(&s, "GET", "/v1/skills", NULL);
	CHECK_ERR(r, 401, "unauthorized");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/word_count", NULL, NULL);
	CHECK_ERR(r, 401, "unauthorized");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills", NULL, right);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_STR(json_str(r.json, "object"), "list");
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "skills")), 1);
	k = cJSON_GetArrayItem(json_get(r.json, "skills"), 0);
	CHECK_STR(json_str(k, "name"), "word_count");
	CHECK_STR(json_str(k, "description"), "How many words a text has.");
	CHECK_STR(json_str(k, "signature"), "(text: str) -> int");
	CHECK_INT(json_num(k, "versions", 0), 1);
	CHECK(!json_get(k, "source"));
	resp_release(&r);

	/* a second version, from another process while the server runs */
	write_text(py, "def word_count(text: str) -> int:\n"
		       "    \"\"\"How many words a text has (any whitespace).\"\"\"\n"
		       "    return len(text.split(None))\n");
	skills_add(db, py);
	r = http_h(&s, "GET", "/v1/skills/word_count", NULL, right);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_INT(json_num(r.json, "version", 0), 2);
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "versions")), 2);
	CHECK_CONTAINS(json_str(r.json, "source"), "split(None)");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/word_count@1", NULL, right);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_INT(json_num(r.json, "version", 0), 1);
	CHECK_INT(json_num(r.json, "latest", 0), 2);
	CHECK_CONTAINS(json_str(r.json, "source"), "return len(text.split())");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills?name=word_count%401", NULL, right);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	CHECK_INT(json_num(r.json, "version", 0), 1);
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/word_count@3", NULL, right);
	CHECK_ERR(r, 404, "not_found");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "has no version 3");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/nothing", NULL, right);
	CHECK_ERR(r, 404, "not_found");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/bad%20name", NULL, right);
	CHECK_ERR(r, 400, "invalid_request");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "bad skill name 'bad name'");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills?all=maybe", NULL, right);
	CHECK_ERR(r, 400, "invalid_request");
	resp_release(&r);
	r = http_h(&s, "POST", "/v1/skills", "{}", right);
	CHECK_ERR(r, 405, "method_not_allowed");
	resp_release(&r);

	/* retired elsewhere: gone from the list and the bare name */
	{
		const char *args[] = {"skills", "rm", "word_count", "--cache", db, NULL};
		struct proc_out o = proc_rlm(args, NULL, 60);
		CHECK_MSG(o.status == 0, "%s", o.err);
		proc_out_release(&o);
	}
	r = http_h(&s, "GET", "/v1/skills", NULL, right);
	CHECK_INT(r.status, 200);
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "skills")), 0);
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills?all=true", NULL, right);
	CHECK_INT(r.status, 200);
	k = cJSON_GetArrayItem(json_get(r.json, "skills"), 0);
	CHECK(k && cJSON_IsTrue(json_get(k, "retired")));
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/word_count", NULL, right);
	CHECK_ERR(r, 404, "not_found");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "was retired");
	resp_release(&r);
	r = http_h(&s, "GET", "/v1/skills/word_count@2", NULL, right);
	CHECK_INT(r.status, 200);
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);

	s = srv_start(nocache);
	r = http(&s, "GET", "/v1/skills", NULL);
	CHECK_INT(r.status, 200);
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "skills")), 0);
	resp_release(&r);
	r = http(&s, "GET", "/v1/skills/word_count", NULL);
	CHECK_ERR(r, 404, "not_found");
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "keeps no store");
	resp_release(&r);
	CHECK_INT(srv_stop(&s), 0);
	free(db);
	free(py);
}
