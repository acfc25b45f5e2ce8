/* SPDX-License-Identifier: MIT */
/* tests/test_clients.c -- real clients from the npm registry against the
 * real servers: the official `openai` JavaScript SDK against `rlm serve`'s
 * OpenAI-compatible endpoint, and the official MCP TypeScript SDK's stdio
 * client against `rlm mcp`, both on a generated S-NIAH haystack answered
 * by the offline simulator.
 *
 * The clients are tests/js/openai_client.mjs and tests/js/mcp_client.mjs
 * (each checks what it gets and ends with a one-line JSON summary); they
 * need Node.js 18+ and tests/js/node_modules, which `make deps` installs.
 * Without them these tests fail, saying so: they never pass silently. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define API_KEY "rlm-test-key-0123"

/* What a client test needs: node, the scripts' folder, one haystack. */
struct setup {
	char node[PATH_MAX]; /* node found on PATH */
	char js[PATH_MAX];   /* tests/js, absolute */
	char *dir;	     /* the generated items' folder */
	char *ctx;	     /* the item's context file */
	char *question, *answer;
};

/* No real provider may leak in from the environment: the servers must use
 * the offline simulator. Each test runs in a forked child, so this does
 * not reach the others. */
static void clean_env(void)
{
	static const char *const vars[] = {"RLM_PROVIDER",
					   "RLM_MODEL",
					   "RLM_SUB_MODEL",
					   "OPENAI_API_KEY",
					   "OPENAI_BASE_URL",
					   "ANTHROPIC_API_KEY",
					   "ANTHROPIC_BASE_URL",
					   "RLM_SIM",
					   "RLM_SANDBOX_DISABLE",
					   "RLM_MAX_DEPTH",
					   "RLM_MAX_NODES",
					   "RLM_API_KEY",
					   NULL};
	for (size_t i = 0; vars[i]; i++)
		unsetenv(vars[i]);
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The first executable `node` on PATH into out; false when there is none. */
static bool find_node(char *out, size_t size)
{
	const char *path = getenv("PATH"), *p = path ? path : "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");
		snprintf(out, size, "%.*s/node", (int)n, n ? p : ".");
		if (is_file(out) && access(out, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/* tests/js: RLM_JS_DIR, else under the current directory (make runs the
 * tests from the repo root), else beside the binary's build folder
 * (build/rlm -> tests/js). */
static bool find_js(char *out)
{
	const char *env = getenv("RLM_JS_DIR"), *bin = harness_rlm_bin();
	const char *slash = strrchr(bin, '/');
	char *alt;
	bool ok;
	if (env && *env)
		return realpath(env, out) != NULL;
	if (realpath("tests/js", out) && is_file("tests/js/package.json"))
		return true;
	alt = xasprintf("%.*s/../tests/js", (int)(slash - bin), bin);
	ok = realpath(alt, out) != NULL;
	free(alt);
	return ok;
}

/* node and tests/js/node_modules, or fail saying to run `make deps`. */
static void need_clients(struct setup *s)
{
	char *mods[2];
	CHECK_MSG(find_node(s->node, sizeof(s->node)),
		  "node is not on PATH: run `make deps` (it installs Node.js and the npm clients)");
	{
		const char *argv[] = {s->node, "-p", "process.versions.node.split('.')[0]", NULL};
		struct proc_out o;
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_MSG(o.status == 0 && atoi(o.out) >= 18,
			  "%s is not Node.js 18 or later (exit %d: %s%s): run `make deps`", s->node,
			  o.status, o.out, o.err);
		proc_out_release(&o);
	}
	CHECK_MSG(find_js(s->js),
		  "cannot find tests/js (run from the repo root or set RLM_JS_DIR)");
	mods[0] = xasprintf("%s/node_modules/openai/package.json", s->js);
	mods[1] = xasprintf("%s/node_modules/@modelcontextprotocol/sdk/package.json", s->js);
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(is_file(mods[i]), "%s is missing: run `make deps` (npm ci in tests/js)",
			  mods[i]);
		free(mods[i]);
	}
}

/* Generate one 8k S-NIAH item into s (as test_e2e.c does). */
static void gen(struct setup *s)
{
	char *jl, *line;
	size_t len;
	cJSON *j;
	struct proc_out o;
	struct rlm_err err = {0, ""};
	s->dir = xasprintf("%s/gen", harness_tmpdir());
	{
		const char *argv[] = {harness_rlm_bin(), "bench", "gen",   "sniah", "--sizes", "8k",
				      "--seed",		 "11",	  "--out", s->dir,  NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	}
	CHECK_MSG(o.status == 0, "bench gen failed: %s", o.err);
	proc_out_release(&o);
	jl = xasprintf("%s/sniah.jsonl", s->dir);
	CHECK_INT(file_read(jl, 1 << 20, &line, &len, &err), 0);
	j = json_parse(line, strcspn(line, "\n"));
	CHECK(j);
	s->ctx = xasprintf("%s/%s", s->dir, json_str(j, "context_path"));
	s->question = xstrdup(json_str(j, "question"));
	s->answer = xstrdup(cJSON_GetArrayItem(json_get(j, "answer"), 0)->valuestring);
	cJSON_Delete(j);
	free(line);
	free(jl);
}

static void setup_release(struct setup *s)
{
	free(s->dir);
	free(s->ctx);
	free(s->question);
	free(s->answer);
}

/* `rlm serve` in the background: its stdout on a pipe (for the listening
 * line), its stderr in a log file (shown when something fails). */
struct server {
	pid_t pid;
	int out;       /* read end of its stdout; kept open until stopped */
	char url[256]; /* http://127.0.0.1:PORT */
	char *log;     /* its stderr's file */
};

static char *slurp(const char *path)
{
	char *s = NULL;
	size_t len;
	struct rlm_err err = {0, ""};
	if (file_read(path, 1 << 20, &s, &len, &err) != 0)
		return xstrdup("");
	return s;
}

static void serve_start(struct server *sv, const char *const *args)
{
	static const char prefix[] = "rlm serve: listening on ";
	const char *argv[24];
	char line[256];
	size_t n = 0, got = 0;
	int fds[2], logfd;
	int64_t deadline = time_now_ns() + 30 * (int64_t)1000000000;
	argv[n++] = harness_rlm_bin();
	argv[n++] = "serve";
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	sv->log = xasprintf("%s/serve.log", harness_tmpdir());
	logfd = open(sv->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(logfd >= 0);
	CHECK(pipe2(fds, O_CLOEXEC) == 0);
	sv->pid = fork();
	CHECK(sv->pid >= 0);
	if (sv->pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(logfd, 2);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(fds[1]);
	close(logfd);
	sv->out = fds[0];
	/* Read up to the first newline: the listening line. */
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		struct pollfd p = {sv->out, POLLIN, 0};
		int64_t left = deadline - time_now_ns();
		ssize_t r;
		CHECK_MSG(left > 0, "rlm serve printed no listening line in 30 s: %s",
			  slurp(sv->log));
		if (poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
			continue;
		r = read(sv->out, line + got, sizeof(line) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		CHECK_MSG(r > 0, "rlm serve exited at start: %s", slurp(sv->log));
		got += (size_t)r;
		line[got] = '\0';
	}
	line[got] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	CHECK_MSG(strncmp(line, prefix, sizeof(prefix) - 1) == 0,
		  "rlm serve's first line is not \"%s...\": \"%s\"", prefix, line);
	snprintf(sv->url, sizeof(sv->url), "%s", line + sizeof(prefix) - 1);
	CHECK_MSG(strncmp(sv->url, "http://127.0.0.1:", 17) == 0 && atoi(sv->url + 17) > 0,
		  "bad listening URL \"%s\"", sv->url);
}

/* SIGTERM; returns its exit status (docs/serve.md: 0). */
static int serve_stop(struct server *sv)
{
	int st = proc_stop(sv->pid);
	close(sv->out);
	free(sv->log);
	return st;
}

/* What became of a server that should still run: its stderr, and how it
 * ended if it has. Returned string is the caller's. */
static char *server_state(const struct server *sv)
{
	char *log = slurp(sv->log), *s;
	int st;
	if (waitpid(sv->pid, &st, WNOHANG) == sv->pid)
		s = xasprintf("--- rlm serve has ended (%s %d); its stderr:\n%s",
			      WIFSIGNALED(st) ? "signal" : "exit",
			      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), log);
	else
		s = xasprintf("--- rlm serve's stderr:\n%s", log);
	free(log);
	return s;
}

/* Run `node tests/js/SCRIPT args...`; fails the test, with the client's
 * stderr and stdout (and the server's state, sv non-NULL), unless it exits
 * 0 and its summary line says "ok": true. *summary (when not NULL) gets the
 * summary line, parsed (the caller's). */
static void run_client_summary(const struct setup *s, const char *script,
			       const char *const *args, const struct server *sv, cJSON **summary)
{
	const char *argv[32];
	char *path = xasprintf("%s/%s", s->js, script);
	size_t n = 0;
	struct proc_out o;
	int64_t t0 = time_now_ns();
	argv[n++] = s->node;
	argv[n++] = path;
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	CHECK_INT(proc_run(argv, NULL, NULL, 100, &o), 0);
	CHECK_MSG(o.status == 0, "%s exited %d\n--- its stderr:\n%s--- its stdout:\n%s%s", script,
		  o.status, o.err, o.out, sv ? server_state(sv) : "");
	CHECK_CONTAINS(o.out, "\"ok\":true");
	/* The summary, for the test log. */
	printf("  %s (%.1f s): %s", script, (double)(time_now_ns() - t0) / 1e9, o.out);
	if (summary)
		*summary = cJSON_Parse(o.out);
	proc_out_release(&o);
	free(path);
}

static void run_client(const struct setup *s, const char *script, const char *const *args,
		       const struct server *sv)
{
	run_client_summary(s, script, args, sv, NULL);
}

TEST(openai_sdk_against_serve)
{
	struct setup s = {0};
	struct server sv;
	char *db;
	clean_env();
	need_clients(&s);
	gen(&s);
	db = xasprintf("%s/serve.db", harness_tmpdir());
	{
		const char *args[] = {"--port", "0",	  "--cache", db,  "--api-key",
				      API_KEY,	"--root", s.dir,     NULL};
		serve_start(&sv, args);
	}
	{
		const char *args[] = {
		    "--base-url", sv.url,     "--api-key", API_KEY,  "--context-file", s.ctx,
		    "--question", s.question, "--expect",  s.answer, "--context-path", s.ctx,
		    NULL};
		run_client(&s, "openai_client.mjs", args, &sv);
	}
	CHECK_INT(serve_stop(&sv), 0);
	free(db);
	setup_release(&s);
}

TEST(mcp_sdk_against_mcp)
{
	struct setup s = {0};
	char *db;
	clean_env();
	need_clients(&s);
	gen(&s);
	db = xasprintf("%s/mcp.db", harness_tmpdir());
	{
		const char *args[] = {
		    "--rlm",	harness_rlm_bin(), "--cache", db,	    "--root",
		    s.dir,	"--context-file",  s.ctx,     "--question", s.question,
		    "--expect", s.answer,	   NULL};
		run_client(&s, "mcp_client.mjs", args, NULL);
	}
	free(db);
	setup_release(&s);
}

/* Structured answers (docs/structured.md) through the openai SDK: its zod
 * helper and parse(), a nested json_schema, streamed, json_object, a
 * schema no answer can meet (422, never content), a bad one (400), and
 * /v1/solve "schema". The content it got is checked here again by another
 * validator (Debian's python3-jsonschema, run apart from the server). */
TEST(openai_sdk_structured_answers)
{
	static const char schema[] =
	    "{\"type\": \"object\", \"required\": [\"answer\", \"evidence\", \"count\"],"
	    " \"additionalProperties\": false, \"properties\": {"
	    " \"answer\": {\"type\": \"string\", \"minLength\": 1},"
	    " \"evidence\": {\"type\": \"array\", \"minItems\": 1, \"items\": {\"type\":"
	    " \"object\", \"required\": [\"text\", \"doc\"], \"additionalProperties\": false,"
	    " \"properties\": {\"text\": {\"type\": \"string\"}, \"doc\": {\"type\": "
	    "\"string\"}}}},"
	    " \"count\": {\"type\": \"integer\", \"minimum\": 0}}}";
	struct setup s = {0};
	struct server sv;
	cJSON *sum = NULL;
	char *schema_path, *content_path;
	clean_env();
	need_clients(&s);
	if (access("/usr/lib/python3/dist-packages/jsonschema/__init__.py", R_OK) != 0)
		CHECK_MSG(false, "python3-jsonschema is not installed: run `make deps`");
	gen(&s);
	schema_path = xasprintf("%s/schema.json", harness_tmpdir());
	content_path = xasprintf("%s/content.json", harness_tmpdir());
	{
		int fd = open(schema_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(fd >= 0 && file_write_all(fd, schema, strlen(schema)) == 0);
		close(fd);
	}
	{
		const char *args[] = {"--port", "0", "--no-cache", "--api-key", API_KEY, NULL};
		serve_start(&sv, args);
	}
	{
		const char *args[] = {"--base-url",    sv.url,	    "--api-key",   API_KEY,
				      "--context-file", s.ctx,	    "--question",  s.question,
				      "--expect",	s.answer,   "--schema-file", schema_path,
				      NULL};
		run_client_summary(&s, "openai_schema_client.mjs", args, &sv, &sum);
	}
	CHECK_INT(serve_stop(&sv), 0);
	CHECK(sum && json_str(sum, "content") && json_str(sum, "stream_content"));
	for (int i = 0; i < 2; i++) {
		const char *t = json_str(sum, i ? "stream_content" : "content");
		const char *argv[] = {"/usr/bin/python3", "-c",
				      "import json,sys,jsonschema\n"
				      "jsonschema.validate(json.load(open(sys.argv[2])), "
				      "json.load(open(sys.argv[1])))",
				      schema_path, content_path, NULL};
		struct proc_out o;
		int fd = open(content_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(fd >= 0 && file_write_all(fd, t, strlen(t)) == 0);
		close(fd);
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_MSG(o.status == 0, "the content does not validate: %s\n%s", t, o.err);
		proc_out_release(&o);
		CHECK_CONTAINS(t, s.answer);
	}
	cJSON_Delete(sum);
	free(schema_path);
	free(content_path);
	setup_release(&s);
}
