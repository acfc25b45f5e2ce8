/* SPDX-License-Identifier: MIT */
/* tests/test_mcp.c -- `rlm mcp`, the real binary over two pipes: the
 * lifecycle (version negotiation), tools/list and its schemas, the three
 * tools on the simulator, progress, cancellation, ping during a solve,
 * every JSON-RPC error, and EOF that leaves no worker behind. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a server on two pipes ---- */

struct server {
	pid_t pid;
	int in;           /* its stdin: we write requests */
	int out;          /* its stdout: we read messages */
	struct buf rd;    /* read, not yet a whole line */
	char *err_path;   /* its stderr, a file in the test's directory */
};

/* Start `rlm mcp --cache TMP/m.db --root TMP` with args after, and env
 * ("NAME=value", NULL-terminated, or NULL) over a clean environment (no
 * provider, no sandbox setting). */
static void server_start(struct server *s, const char *const *args, const char *const *env)
{
	static const char *const clean[] = {
		"RLM_PROVIDER", "RLM_MODEL", "RLM_SUB_MODEL", "OPENAI_API_KEY",
		"OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "RLM_SIM",
		"RLM_SANDBOX_DISABLE", "RLM_MAX_DEPTH", "RLM_MAX_NODES", "RLM_NO_CACHE",
		"RLM_CACHE", NULL};
	const char *argv[32];
	char *db = xasprintf("%s/m.db", harness_tmpdir());
	int to[2], from[2];
	size_t n = 0;
	argv[n++] = harness_rlm_bin();
	argv[n++] = "mcp";
	argv[n++] = "--cache";
	argv[n++] = db;
	argv[n++] = "--root";
	argv[n++] = harness_tmpdir();
	for (size_t i = 0; args && args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	s->err_path = xasprintf("%s/mcp.err", harness_tmpdir());
	buf_init(&s->rd, 0);
	CHECK(pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0);
	s->pid = fork();
	CHECK(s->pid >= 0);
	if (s->pid == 0) {
		int fd = open(s->err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		dup2(to[0], 0);
		dup2(from[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		for (size_t i = 0; clean[i]; i++)
			unsetenv(clean[i]);
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)(uintptr_t)env[i]);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	s->in = to[1];
	s->out = from[0];
	free(db);
}

/* Its stderr so far, for failure messages; the caller frees it. */
static char *server_stderr(struct server *s)
{
	char *t = NULL;
	size_t len;
	if (file_read(s->err_path, 1 << 20, &t, &len, NULL))
		return xstrdup("");
	return t;
}

static void server_send(struct server *s, const char *line)
{
	CHECK_INT(file_write_all(s->in, line, strlen(line)), 0);
	CHECK_INT(file_write_all(s->in, "\n", 1), 0);
}

/* The next message, or NULL after timeout_ms or at EOF. A line that is
 * not JSON fails the test: stdout carries only the protocol. */
static cJSON *server_read(struct server *s, int timeout_ms)
{
	int64_t deadline = time_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		char *nl = s->rd.p ? memchr(s->rd.p, '\n', s->rd.len) : NULL;
		char chunk[65536];
		struct pollfd p = {s->out, POLLIN, 0};
		int64_t left = deadline - time_now_ns();
		ssize_t n;
		if (nl) {
			size_t len = (size_t)(nl - s->rd.p);
			cJSON *j = json_parse(s->rd.p, len);
			CHECK_MSG(j && cJSON_IsObject(j), "not a JSON object on stdout: %.*s",
				  (int)len, s->rd.p);
			memmove(s->rd.p, nl + 1, s->rd.len - len - 1);
			s->rd.len -= len + 1;
			s->rd.p[s->rd.len] = '\0';
			return j;
		}
		if (left <= 0 || poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
			return NULL;
		n = read(s->out, chunk, sizeof(chunk));
		if (n <= 0)
			return NULL;
		CHECK_INT(buf_append(&s->rd, chunk, (size_t)n), 0);
	}
}

static bool is_id(const cJSON *msg, int id)
{
	const cJSON *v = json_get(msg, "id");
	return cJSON_IsNumber(v) && v->valuedouble == id && !json_get(msg, "method");
}

/* Read until the response to request id; the messages before it go to
 * notes (an array) when given. Fails the test after timeout_ms. */
static cJSON *server_wait(struct server *s, int id, int timeout_ms, cJSON *notes)
{
	int64_t deadline = time_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		int left = (int)((deadline - time_now_ns()) / 1000000);
		cJSON *m = left > 0 ? server_read(s, left) : NULL;
		if (!m) {
			char *err = server_stderr(s);
			harness_fail(__FILE__, __LINE__, "no response to %d in %d ms: %s", id,
				     timeout_ms, err);
		}
		if (is_id(m, id))
			return m;
		if (notes)
			json_add(notes, NULL, m);
		else
			cJSON_Delete(m);
	}
}

/* Send a request and wait for its response. */
static cJSON *server_call(struct server *s, int id, const char *method, const char *params)
{
	char *line = params ? xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\","
					"\"params\":%s}", id, method, params)
			    : xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"}", id,
					method);
	server_send(s, line);
	free(line);
	return server_wait(s, id, 60000, NULL);
}

static void server_init(struct server *s)
{
	cJSON *r = server_call(s, 0, "initialize",
			       "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			       "\"clientInfo\":{\"name\":\"test_mcp\",\"version\":\"1\"}}");
	CHECK_STR(json_str(json_get(r, "result"), "protocolVersion"), "2025-11-25");
	cJSON_Delete(r);
	server_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* Close its stdin and wait up to timeout_s for it to exit; returns its
 * exit status (128 + signal), or -1 after killing it at the timeout. */
static int server_close(struct server *s, int timeout_s)
{
	int64_t deadline = time_now_ns() + (int64_t)timeout_s * 1000000000;
	int st, rc = -1;
	close(s->in);
	while (time_now_ns() < deadline) {
		pid_t w = waitpid(s->pid, &st, WNOHANG);
		if (w == s->pid) {
			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		time_sleep_ns(20000000);
	}
	if (rc < 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &st, 0);
	}
	close(s->out);
	buf_release(&s->rd);
	free(s->err_path);
	return rc;
}

/* The error code of a JSON-RPC error response, or 0. */
static int error_code(const cJSON *r)
{
	return (int)json_int(json_get(r, "error"), "code", 0);
}

/* ---- fixtures ---- */

struct item {
	char *path;       /* the haystack, under the test's directory */
	char *question;
	char *answer;
};

/* One S-NIAH item of 8k tokens, as `rlm bench gen` makes it. */
static void gen(struct item *it)
{
	char *dir = xasprintf("%s/gen", harness_tmpdir()), *jl, *line;
	const char *argv[] = {harness_rlm_bin(), "bench", "gen", "sniah", "--sizes", "8k",
			      "--seed", "11", "--out", dir, NULL};
	struct proc_out o;
	size_t len;
	cJSON *j;
	CHECK_INT(proc_run(argv, NULL, NULL, 60, &o), 0);
	CHECK_MSG(o.status == 0, "bench gen failed: %s", o.err);
	proc_out_release(&o);
	jl = xasprintf("%s/sniah.jsonl", dir);
	CHECK_INT(file_read(jl, 1 << 20, &line, &len, NULL), 0);
	j = json_parse(line, strcspn(line, "\n"));
	CHECK(j);
	it->path = xasprintf("%s/%s", dir, json_str(j, "context_path"));
	it->question = xstrdup(json_str(j, "question"));
	it->answer = xstrdup(cJSON_GetArrayItem(json_get(j, "answer"), 0)->valuestring);
	cJSON_Delete(j);
	free(line);
	free(jl);
	free(dir);
}

static void item_release(struct item *it)
{
	free(it->path);
	free(it->question);
	free(it->answer);
}

/* JSON text of a string. */
static char *jstr(const char *s)
{
	cJSON *j = cJSON_CreateString(s);
	char *t = json_print(j);
	cJSON_Delete(j);
	return t;
}

/* tools/call name with arguments args (JSON text) and an optional
 * progress token (JSON text); the request is sent, not waited for. */
static void call_tool(struct server *s, int id, const char *name, const char *args,
		      const char *token)
{
	char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
			       "\"params\":{\"name\":\"%s\",\"arguments\":%s%s%s%s}}",
			       id, name, args, token ? ",\"_meta\":{\"progressToken\":" : "",
			       token ? token : "", token ? "}" : "");
	server_send(s, line);
	free(line);
}

/* The result of a tools/call that must have succeeded as a call. */
static cJSON *tool_result(cJSON *r)
{
	cJSON *res = json_get(r, "result");
	CHECK_MSG(res, "not a result: %s", json_print(r));
	CHECK(cJSON_IsArray(json_get(res, "content")));
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "type"), "text");
	return res;
}

/* The text of a tool error (isError true). */
static const char *tool_error_text(cJSON *r)
{
	cJSON *res = tool_result(r);
	CHECK_MSG(cJSON_IsTrue(json_get(res, "isError")), "not a tool error: %s", json_print(r));
	CHECK(!json_get(res, "structuredContent"));
	return json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text");
}

/* The answer of a solve or ask that must have answered, checked against
 * the output schema's required fields. */
static const char *answer_of(cJSON *r)
{
	cJSON *res = tool_result(r), *sc = json_get(res, "structuredContent");
	CHECK_MSG(!cJSON_IsTrue(json_get(res, "isError")), "tool error: %s", json_print(r));
	CHECK(cJSON_IsObject(sc));
	CHECK(json_str(sc, "run_id") && *json_str(sc, "run_id"));
	CHECK_STR(json_str(sc, "stop"), "answer");
	CHECK(cJSON_IsObject(json_get(sc, "usage")));
	CHECK(json_num(json_get(sc, "usage"), "input_tokens", 0) > 0);
	CHECK(cJSON_IsNumber(json_get(sc, "cost_usd")));
	CHECK(cJSON_IsArray(json_get(sc, "sources")));
	{
		/* The text: the answer, then a line naming its sources when it
		 * has any. */
		struct buf want = BUF_INIT;
		const cJSON *it;
		buf_puts(&want, json_str(sc, "answer") ? json_str(sc, "answer") : "");
		cJSON_ArrayForEach(it, json_get(sc, "sources"))
			buf_printf(&want, "%s%s", it == json_get(sc, "sources")->child ? "\n\nSources: " : ", ",
				   json_str(it, "doc"));
		CHECK_STR(json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text"), want.p);
		buf_release(&want);
	}
	return json_str(sc, "answer");
}

/* The status of run id in the server's store ("" when not listed). */
static char *run_status(const char *id)
{
	char *db = xasprintf("%s/m.db", harness_tmpdir()), *st = xstrdup("");
	const char *argv[] = {harness_rlm_bin(), "runs", "list", "--cache", db, "--json", NULL};
	struct proc_out o;
	cJSON *j, *r;
	CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
	CHECK_MSG(o.status == 0, "rlm runs list: %s", o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK(cJSON_IsArray(j));
	cJSON_ArrayForEach(r, j)
	{
		if (json_str(r, "id") && strcmp(json_str(r, "id"), id) == 0) {
			free(st);
			st = xstrdup(json_str(r, "status") ? json_str(r, "status") : "?");
		}
	}
	cJSON_Delete(j);
	proc_out_release(&o);
	free(db);
	return st;
}

/* The processes under pid (children and theirs), at most max. */
static size_t descendants(pid_t pid, pid_t *out, size_t max)
{
	size_t n = 0, nt = 0;
	pid_t todo[256];
	todo[nt++] = pid;
	while (nt) {
		pid_t kids[256];
		size_t k = proc_children(todo[--nt], kids, ARRAY_SIZE(kids));
		k = RLM_MIN(k, ARRAY_SIZE(kids));
		for (size_t i = 0; i < k && n < max && nt < ARRAY_SIZE(todo); i++) {
			out[n++] = kids[i];
			todo[nt++] = kids[i];
		}
	}
	return n;
}

static bool alive(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	return p && (p = strrchr(buf, ')')) && p[2] != 'Z';
}

/* ---- the lifecycle ---- */

TEST(initialize_negotiates_the_version)
{
	static const struct {
		const char *asked, *answered;
	} cases[] = {
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05"},
		{"2024-10-07", "2024-10-07"},
		{"1999-01-01", "2025-11-25"}, /* unknown: the server's own */
		{"2099-12-31", "2025-11-25"},
	};
	char *file = xasprintf("%s/small.txt", harness_tmpdir()), *args;
	FILE *f = fopen(file, "w");
	CHECK(f && fputs("a small corpus\n", f) >= 0 && fclose(f) == 0);
	args = xasprintf("{\"path\":\"%s\"}", file);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct server s;
		cJSON *r, *res, *tools, *t;
		/* what came after 2024-11-05, by the revision that brought it */
		bool structured = strcmp(cases[i].answered, "2025-06-18") >= 0;
		bool meta = strcmp(cases[i].answered, "2025-11-25") >= 0;
		char *params = xasprintf("{\"protocolVersion\":\"%s\",\"capabilities\":{},"
					 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}",
					 cases[i].asked);
		server_start(&s, NULL, NULL);
		/* ping is allowed before initialize; nothing else is */
		r = server_call(&s, 1, "ping", NULL);
		CHECK(cJSON_IsObject(json_get(r, "result")));
		CHECK_INT(cJSON_GetArraySize(json_get(r, "result")), 0);
		cJSON_Delete(r);
		r = server_call(&s, 2, "tools/list", NULL);
		CHECK_INT(error_code(r), -32600);
		cJSON_Delete(r);
		r = server_call(&s, 3, "initialize", params);
		res = json_get(r, "result");
		CHECK_MSG(res, "initialize failed: %s", json_print(r));
		CHECK_STR(json_str(res, "protocolVersion"), cases[i].answered);
		CHECK(cJSON_IsObject(json_get(json_get(res, "capabilities"), "tools")));
		CHECK_STR(json_str(json_get(res, "serverInfo"), "name"), "rlm");
		CHECK(json_str(json_get(res, "serverInfo"), "version"));
		CHECK_INT(json_str(json_get(res, "serverInfo"), "description") != NULL, meta);
		CHECK(json_str(res, "instructions"));
		cJSON_Delete(r);
		/* initialize once only */
		r = server_call(&s, 4, "initialize", params);
		CHECK_INT(error_code(r), -32600);
		cJSON_Delete(r);
		server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
		/* outputSchema and title from 2025-06-18 on, execution from
		 * 2025-11-25 on */
		r = server_call(&s, 5, "tools/list", NULL);
		tools = json_get(json_get(r, "result"), "tools");
		CHECK_INT(cJSON_GetArraySize(tools), 5);
		cJSON_ArrayForEach(t, tools)
		{
			CHECK_INT(!!json_get(t, "outputSchema"), structured);
			CHECK_INT(!!json_get(t, "title"), structured);
			CHECK_INT(!!json_get(t, "execution"), meta);
			if (meta)
				CHECK_STR(json_str(json_get(t, "execution"), "taskSupport"),
					  "forbidden");
		}
		cJSON_Delete(r);
		/* structuredContent from 2025-06-18 on; the same JSON as text in
		 * every revision */
		call_tool(&s, 6, "load_corpus", args, NULL);
		r = server_wait(&s, 6, 30000, NULL);
		res = json_get(r, "result");
		CHECK_MSG(res && !cJSON_IsTrue(json_get(res, "isError")), "%s", json_print(r));
		CHECK_INT(!!json_get(res, "structuredContent"), structured);
		CHECK_CONTAINS(json_str(cJSON_GetArrayItem(json_get(res, "content"), 1), "text"),
			       "\"corpus_id\"");
		cJSON_Delete(r);
		CHECK_INT(server_close(&s, 20), 0);
		free(params);
	}
	free(args);
	free(file);
}

TEST(tools_list_has_five_tools_with_schemas)
{
	struct server s;
	cJSON *r, *tools, *t;
	int seen = 0;
	server_start(&s, NULL, NULL);
	server_init(&s);
	r = server_call(&s, 1, "tools/list", "{}");
	tools = json_get(json_get(r, "result"), "tools");
	CHECK(cJSON_IsArray(tools));
	CHECK_INT(cJSON_GetArraySize(tools), 5);
	cJSON_ArrayForEach(t, tools)
	{
		const char *name = json_str(t, "name");
		cJSON *in = json_get(t, "inputSchema"), *out = json_get(t, "outputSchema");
		char *req;
		CHECK(name);
		/* SEP-986: 1 to 128 of A-Z a-z 0-9 _ - . */
		CHECK(strlen(name) >= 1 && strlen(name) <= 128 &&
		      strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") ==
			  strlen(name));
		CHECK(json_str(t, "title"));
		CHECK(cJSON_IsObject(json_get(t, "annotations")));
		CHECK(json_str(t, "description") && strlen(json_str(t, "description")) > 20);
		CHECK_STR(json_str(in, "type"), "object");
		CHECK(cJSON_IsObject(json_get(in, "properties")));
		CHECK(cJSON_IsFalse(json_get(in, "additionalProperties")));
		CHECK_STR(json_str(out, "type"), "object");
		req = json_get(in, "required") ? json_print(json_get(in, "required")) : xstrdup("null");
		if (strcmp(name, "solve") == 0) {
			seen |= 1;
			CHECK_STR(req, "[\"question\"]");
			cJSON *props = json_get(in, "properties");
			CHECK_STR(json_str(json_get(props, "max_depth"), "type"), "integer");
			CHECK(json_get(props, "context"));
			CHECK(json_get(props, "path"));
			CHECK(json_get(props, "corpus_id"));
		} else if (strcmp(name, "load_corpus") == 0) {
			seen |= 2;
			CHECK_STR(req, "[\"path\"]");
			CHECK(json_get(json_get(out, "properties"), "corpus_id"));
		} else if (strcmp(name, "ask") == 0) {
			seen |= 4;
			CHECK_STR(req, "[\"question\"]");
			CHECK(json_get(json_get(in, "properties"), "session_id"));
			CHECK(json_get(json_get(in, "properties"), "corpus_id"));
		} else if (strcmp(name, "open_session") == 0) {
			seen |= 8;
			CHECK_STR(req, "null");
			CHECK(json_get(json_get(out, "properties"), "session_id"));
		} else if (strcmp(name, "close_session") == 0) {
			seen |= 16;
			CHECK_STR(req, "[\"session_id\"]");
		}
		if (strcmp(name, "load_corpus") != 0 && strcmp(name, "open_session") != 0 &&
		    strcmp(name, "close_session") != 0) {
			char *oreq = json_print(json_get(out, "required"));
			CHECK_STR(oreq, "[\"run_id\",\"answer\",\"sources\",\"stop\",\"complete\","
					"\"failures\",\"usage\",\"cost_usd\"]");
			free(oreq);
		}
		free(req);
	}
	CHECK_INT(seen, 31);
	CHECK(!json_get(json_get(r, "result"), "nextCursor"));
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 20), 0);
}

/* ---- the tools ---- */

TEST(solve_with_context_answers)
{
	struct server s;
	struct item it;
	char *text, *q, *c, *args, *st;
	size_t len;
	cJSON *r;
	gen(&it);
	CHECK_INT(file_read(it.path, 1 << 20, &text, &len, NULL), 0);
	q = jstr(it.question);
	c = jstr(text);
	args = xasprintf("{\"question\":%s,\"context\":%s}", q, c);
	server_start(&s, NULL, NULL);
	server_init(&s);
	call_tool(&s, 1, "solve", args, NULL);
	r = server_wait(&s, 1, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	/* the run is in the store, and done */
	st = run_status(json_str(json_get(json_get(r, "result"), "structuredContent"), "run_id"));
	CHECK_STR(st, "done");
	free(st);
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 30), 0);
	free(args);
	free(c);
	free(q);
	free(text);
	item_release(&it);
}

/* The tree strategy cites the documents whose parts answered: in
 * structuredContent.sources and in a "Sources:" line of the text. */
TEST(solve_cites_its_sources)
{
	static const char *const args[] = {"--strategy", "tree", NULL};
	struct server s;
	char *path = xasprintf("%s/cite.jsonl", harness_tmpdir()), *p, *call;
	cJSON *r, *sc, *src;
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("{\"id\": \"memo-weather\", \"text\": \"The weather was mild all week.\"}\n"
	      "{\"id\": \"memo-launch\", \"text\": \"The secret launch code is 7340-alpha.\"}\n",
	      f);
	fclose(f);
	p = jstr(path);
	call = xasprintf("{\"question\":\"What is the secret launch code?\",\"path\":%s}", p);
	server_start(&s, args, NULL);
	server_init(&s);
	call_tool(&s, 1, "solve", call, NULL);
	r = server_wait(&s, 1, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), "7340-alpha");
	sc = json_get(tool_result(r), "structuredContent");
	src = json_get(sc, "sources");
	CHECK_MSG(cJSON_GetArraySize(src) >= 1, "%s", json_print(sc));
	{
		char *t = json_print(src);
		CHECK_CONTAINS(t, "{\"doc\":\"memo-launch\"}");
		free(t);
	}
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(json_get(tool_result(r), "content"), 0), "text"),
		       "\n\nSources: ");
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 30), 0);
	free(call);
	free(p);
	free(path);
}

/* The solve tool's context may be any JSON value: a dict is a JSON
 * corpus, a list of strings documents; the schema says so. */
TEST(solve_with_a_json_context)
{
	static const char *const args[] = {
		"{\"question\":\"What is the door?\",\"context\":{\"facts\":[\"The sky is blue.\","
		"\"The door is green.\"]}}",
		"{\"question\":\"What is the door?\",\"context\":[\"The sky is blue.\","
		"\"The door is green.\"]}",
	};
	struct server s;
	server_start(&s, NULL, NULL);
	server_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(args); i++) {
		cJSON *r;
		call_tool(&s, (int)i + 1, "solve", args[i], NULL);
		r = server_wait(&s, (int)i + 1, 90000, NULL);
		CHECK_CONTAINS(answer_of(r), "green");
		cJSON_Delete(r);
	}
	CHECK_INT(server_close(&s, 30), 0);
}

TEST(solve_with_path_inside_and_outside_the_root)
{
	struct server s;
	struct item it;
	char *q, *p, *args, *outside;
	cJSON *r;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	args = xasprintf("{\"question\":%s,\"path\":%s,\"max_iterations\":10}", q, p);
	server_start(&s, NULL, NULL);
	server_init(&s);
	call_tool(&s, 1, "solve", args, NULL);
	r = server_wait(&s, 1, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	/* outside the root: refused, as a tool error */
	outside = xasprintf("{\"question\":%s,\"path\":\"/etc/passwd\"}", q);
	call_tool(&s, 2, "solve", outside, NULL);
	r = server_wait(&s, 2, 30000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "outside");
	cJSON_Delete(r);
	free(outside);
	/* nor by climbing out of it */
	outside = xasprintf("{\"question\":%s,\"path\":\"%s/../../etc/passwd\"}", q,
			    harness_tmpdir());
	call_tool(&s, 3, "solve", outside, NULL);
	r = server_wait(&s, 3, 30000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "outside");
	cJSON_Delete(r);
	free(outside);
	/* a missing file under the root: a tool error too */
	outside = xasprintf("{\"question\":%s,\"path\":\"%s/nope.txt\"}", q, harness_tmpdir());
	call_tool(&s, 4, "solve", outside, NULL);
	r = server_wait(&s, 4, 30000, NULL);
	CHECK(strlen(tool_error_text(r)) > 0);
	cJSON_Delete(r);
	free(outside);
	/* nor through a symbolic link under the root, to a file or a folder
	 * outside it: solve and load_corpus alike say why */
	{
		char *l1 = xasprintf("%s/passwd-link", harness_tmpdir());
		char *l2 = xasprintf("%s/etc-link", harness_tmpdir());
		CHECK(symlink("/etc/passwd", l1) == 0 && symlink("/etc", l2) == 0);
		outside = xasprintf("{\"question\":%s,\"path\":\"%s\"}", q, l1);
		call_tool(&s, 5, "solve", outside, NULL);
		r = server_wait(&s, 5, 30000, NULL);
		CHECK_CONTAINS(tool_error_text(r), "crosses a symlink; not followed under --root");
		cJSON_Delete(r);
		free(outside);
		outside = xasprintf("{\"path\":\"%s/hostname\"}", l2);
		call_tool(&s, 6, "load_corpus", outside, NULL);
		r = server_wait(&s, 6, 30000, NULL);
		CHECK_CONTAINS(tool_error_text(r), "crosses a symlink");
		cJSON_Delete(r);
		free(outside);
		free(l1);
		free(l2);
	}
	CHECK_INT(server_close(&s, 30), 0);
	free(args);
	free(p);
	free(q);
	item_release(&it);
}

TEST(load_corpus_then_ask)
{
	struct server s;
	struct item it;
	char *q, *p, *args, *id;
	cJSON *r, *sc;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, NULL);
	server_init(&s);
	args = xasprintf("{\"path\":%s,\"format\":\"text\"}", p);
	call_tool(&s, 1, "load_corpus", args, NULL);
	r = server_wait(&s, 1, 30000, NULL);
	sc = json_get(tool_result(r), "structuredContent");
	CHECK(!cJSON_IsTrue(json_get(json_get(r, "result"), "isError")));
	CHECK(strncmp(json_str(sc, "corpus_id"), "c-", 2) == 0);
	CHECK_STR(json_str(sc, "kind"), "text");
	CHECK(json_num(sc, "documents", 0) == 1);
	CHECK(json_num(sc, "bytes", 0) > 30000);
	CHECK(json_num(sc, "tokens_estimate", 0) > 5000);
	id = jstr(json_str(sc, "corpus_id"));
	cJSON_Delete(r);
	/* loaded once: the same id again */
	call_tool(&s, 2, "load_corpus", args, NULL);
	r = server_wait(&s, 2, 30000, NULL);
	sc = json_get(tool_result(r), "structuredContent");
	{
		char *again = jstr(json_str(sc, "corpus_id"));
		CHECK_STR(again, id);
		free(again);
	}
	cJSON_Delete(r);
	free(args);

	args = xasprintf("{\"corpus_id\":%s,\"question\":%s}", id, q);
	call_tool(&s, 3, "ask", args, NULL);
	r = server_wait(&s, 3, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	free(args);
	/* solve takes a corpus_id too */
	args = xasprintf("{\"corpus_id\":%s,\"question\":%s,\"max_depth\":1}", id, q);
	call_tool(&s, 4, "solve", args, NULL);
	r = server_wait(&s, 4, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	free(args);
	/* an unknown corpus */
	args = xasprintf("{\"corpus_id\":\"c-0000000000000000\",\"question\":%s}", q);
	call_tool(&s, 5, "ask", args, NULL);
	r = server_wait(&s, 5, 30000, NULL);
	CHECK(strlen(tool_error_text(r)) > 0);
	cJSON_Delete(r);
	free(args);
	CHECK_INT(server_close(&s, 30), 0);
	free(id);
	free(p);
	free(q);
	item_release(&it);
}

/* A session: open_session over a context, two questions in one REPL
 * worker (a child of the server, the same one for both), close_session
 * frees it, and an ask after is a tool error that says why. */
TEST(open_session_ask_twice_then_close_frees_the_worker)
{
	struct server s;
	struct item it;
	char *q, *p, *args, *sid;
	pid_t kids[64], kids2[64];
	size_t n, n2;
	cJSON *r, *sc;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, NULL);
	server_init(&s);
	args = xasprintf("{\"path\":%s,\"max_iterations\":8}", p);
	call_tool(&s, 1, "open_session", args, NULL);
	r = server_wait(&s, 1, 30000, NULL);
	sc = json_get(tool_result(r), "structuredContent");
	CHECK(!cJSON_IsTrue(json_get(json_get(r, "result"), "isError")));
	CHECK(strncmp(json_str(sc, "session_id"), "s-", 2) == 0);
	CHECK(strncmp(json_str(sc, "corpus_id"), "c-", 2) == 0);
	sid = jstr(json_str(sc, "session_id"));
	cJSON_Delete(r);
	free(args);
	CHECK_INT((int)descendants(s.pid, kids, ARRAY_SIZE(kids)), 0); /* no worker yet */

	args = xasprintf("{\"session_id\":%s,\"question\":%s}", sid, q);
	call_tool(&s, 2, "ask", args, NULL);
	r = server_wait(&s, 2, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	CHECK(json_str(json_get(tool_result(r), "structuredContent"), "run_id"));
	cJSON_Delete(r);
	n = descendants(s.pid, kids, ARRAY_SIZE(kids));
	CHECK_MSG(n >= 1, "no REPL worker kept for the session");
	call_tool(&s, 3, "ask", args, NULL);
	r = server_wait(&s, 3, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	n2 = descendants(s.pid, kids2, ARRAY_SIZE(kids2));
	CHECK_INT((int)n2, (int)n);
	CHECK_INT(kids2[0], kids[0]); /* the same worker */
	free(args);
	/* a question of the session with an answer schema: typed */
	if (access("/usr/lib/python3/dist-packages/jsonschema/__init__.py", R_OK) == 0) {
		cJSON *ans;
		args = xasprintf("{\"session_id\":%s,\"question\":%s,\"schema\":{\"type\":"
				 "\"object\",\"properties\":{\"answer\":{\"type\":\"string\"}},"
				 "\"required\":[\"answer\"]}}",
				 sid, q);
		call_tool(&s, 6, "ask", args, NULL);
		r = server_wait(&s, 6, 90000, NULL);
		CHECK(!cJSON_IsTrue(json_get(json_get(r, "result"), "isError")));
		ans = json_get(json_get(tool_result(r), "structuredContent"), "answer");
		CHECK_MSG(cJSON_IsObject(ans), "not typed: %s",
			  ans && cJSON_IsString(ans) ? ans->valuestring : "(none)");
		CHECK_CONTAINS(json_str(ans, "answer"), it.answer);
		cJSON_Delete(r);
		free(args);
	}

	args = xasprintf("{\"session_id\":%s}", sid);
	call_tool(&s, 4, "close_session", args, NULL);
	r = server_wait(&s, 4, 30000, NULL);
	sc = json_get(tool_result(r), "structuredContent");
	CHECK((int)json_num(sc, "questions", 0) >= 2);
	cJSON_Delete(r);
	for (size_t i = 0; i < n; i++) {
		int64_t t1 = time_now_ns();
		while (alive(kids[i]) && time_now_ns() - t1 < 5000000000LL)
			time_sleep_ns(20000000);
		CHECK_MSG(!alive(kids[i]), "worker %d outlived its session", (int)kids[i]);
	}
	call_tool(&s, 5, "close_session", args, NULL);
	r = server_wait(&s, 5, 30000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "was closed");
	cJSON_Delete(r);
	free(args);
	CHECK_INT(server_close(&s, 30), 0);
	free(sid);
	free(p);
	free(q);
	item_release(&it);
}

/* ---- progress, cancellation, ping ---- */

/* The progress notifications of token in notes: each names the token,
 * increases, has a total and a message. Returns how many. */
static int check_progress(const cJSON *notes, const char *token)
{
	const cJSON *n;
	double last = -1;
	int count = 0;
	cJSON_ArrayForEach(n, notes)
	{
		const cJSON *p = json_get(n, "params");
		char *tok;
		if (!json_str(n, "method") ||
		    strcmp(json_str(n, "method"), "notifications/progress") != 0)
			continue;
		CHECK(!json_get(n, "id"));
		tok = json_print(json_get(p, "progressToken"));
		CHECK_STR(tok, token);
		free(tok);
		CHECK_MSG(json_num(p, "progress", -1) > last, "progress %g after %g",
			  json_num(p, "progress", -1), last);
		last = json_num(p, "progress", -1);
		CHECK(json_num(p, "total", -1) >= last);
		CHECK(json_str(p, "message") && *json_str(p, "message"));
		count++;
	}
	return count;
}

TEST(progress_notifications_with_a_token)
{
	static const char *const env[] = {"RLM_SIM=ttft=100ms", NULL};
	struct server s;
	struct item it;
	char *q, *p, *args;
	cJSON *r, *notes = cJSON_CreateArray();
	int n;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, env);
	server_init(&s);
	args = xasprintf("{\"question\":%s,\"path\":%s}", q, p);
	call_tool(&s, 1, "solve", args, "\"tok-1\"");
	r = server_wait(&s, 1, 90000, notes);
	CHECK_CONTAINS(answer_of(r), it.answer);
	n = check_progress(notes, "\"tok-1\"");
	CHECK_MSG(n >= 3, "%d progress notifications: %s", n, json_print(notes));
	CHECK(json_num(json_get(cJSON_GetArrayItem(notes, 0), "params"), "total", 0) == 31);
	CHECK_INT(cJSON_GetArraySize(notes), n); /* nothing else came */
	cJSON_Delete(r);
	/* nothing for the token after the response */
	r = server_call(&s, 2, "ping", NULL);
	CHECK(json_get(r, "result"));
	cJSON_Delete(r);
	cJSON_Delete(notes);

	/* an integer token, and a total of max_iterations + 1 (the same
	 * solve with other options: its calls come from the store, its turns
	 * are reported all the same) */
	notes = cJSON_CreateArray();
	free(args);
	args = xasprintf("{\"question\":%s,\"path\":%s,\"max_iterations\":20}", q, p);
	call_tool(&s, 3, "solve", args, "77");
	r = server_wait(&s, 3, 90000, notes);
	CHECK_CONTAINS(answer_of(r), it.answer);
	CHECK_MSG(check_progress(notes, "77") >= 3, "%s", json_print(notes));
	CHECK(json_num(json_get(cJSON_GetArrayItem(notes, 0), "params"), "total", 0) == 21);
	cJSON_Delete(r);
	cJSON_Delete(notes);

	/* without a token: none */
	notes = cJSON_CreateArray();
	free(args);
	args = xasprintf("{\"question\":%s,\"path\":%s,\"max_iterations\":25}", q, p);
	call_tool(&s, 4, "solve", args, NULL);
	r = server_wait(&s, 4, 90000, notes);
	CHECK_CONTAINS(answer_of(r), it.answer);
	CHECK_INT(cJSON_GetArraySize(notes), 0);
	cJSON_Delete(r);
	cJSON_Delete(notes);
	CHECK_INT(server_close(&s, 30), 0);
	free(args);
	free(p);
	free(q);
	item_release(&it);
}

TEST(ping_is_answered_during_a_solve)
{
	static const char *const env[] = {"RLM_SIM=ttft=1s", NULL};
	struct server s;
	struct item it;
	char *q, *p, *args;
	cJSON *r, *notes = cJSON_CreateArray(), *m;
	int64_t t0;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, env);
	server_init(&s);
	args = xasprintf("{\"question\":%s,\"path\":%s}", q, p);
	call_tool(&s, 1, "solve", args, NULL);
	time_sleep_ns(300000000);
	t0 = time_now_ns();
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	r = server_wait(&s, 2, 10000, notes);
	CHECK_MSG(time_now_ns() - t0 < 900000000, "ping took %.0f ms", (time_now_ns() - t0) / 1e6);
	CHECK(json_get(r, "result"));
	CHECK_INT(cJSON_GetArraySize(notes), 0); /* the solve has not answered */
	cJSON_Delete(r);
	/* a request id in use by a running request is refused */
	call_tool(&s, 1, "solve", args, NULL);
	m = server_read(&s, 5000);
	CHECK(m && is_id(m, 1));
	CHECK_INT(error_code(m), -32600);
	cJSON_Delete(m);
	/* the solve answers in the end */
	r = server_wait(&s, 1, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	cJSON_Delete(notes);
	CHECK_INT(server_close(&s, 30), 0);
	free(args);
	free(p);
	free(q);
	item_release(&it);
}

TEST(cancelled_stops_the_solve_and_its_response)
{
	static const char *const env[] = {"RLM_SIM=ttft=1s", NULL};
	struct server s;
	struct item it;
	char *q, *p, *args, *run_id = NULL, *st = NULL;
	cJSON *r, *m;
	int64_t t0;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, env);
	server_init(&s);
	args = xasprintf("{\"question\":%s,\"path\":%s}", q, p);
	call_tool(&s, 5, "solve", args, "\"c\"");
	/* the first progress: the solve runs */
	m = server_read(&s, 20000);
	CHECK_MSG(m && json_str(m, "method"), "no progress: %s", m ? json_print(m) : "EOF");
	CHECK_STR(json_str(m, "method"), "notifications/progress");
	cJSON_Delete(m);
	t0 = time_now_ns();
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			"\"params\":{\"requestId\":5,\"reason\":\"the user changed their mind\"}}");
	/* a cancel of a request that does not exist is ignored */
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			"\"params\":{\"requestId\":\"nope\"}}");
	r = server_call(&s, 6, "ping", NULL);
	CHECK(json_get(r, "result"));
	cJSON_Delete(r);
	/* the run ends as interrupted, well before the ~4 s it takes */
	{
		const char *argv[] = {harness_rlm_bin(), "runs", "list", "--cache", NULL, "--json",
				      NULL};
		char *db = xasprintf("%s/m.db", harness_tmpdir());
		struct proc_out o;
		cJSON *j;
		argv[4] = db;
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		j = json_parse(o.out, strlen(o.out));
		CHECK_INT(cJSON_GetArraySize(j), 1);
		run_id = xstrdup(json_str(cJSON_GetArrayItem(j, 0), "id"));
		cJSON_Delete(j);
		proc_out_release(&o);
		free(db);
	}
	while (time_now_ns() - t0 < 10000000000LL) {
		free(st);
		st = run_status(run_id);
		if (strcmp(st, "running") != 0)
			break;
		time_sleep_ns(100000000);
	}
	CHECK_STR(st, "interrupted");
	CHECK_MSG(time_now_ns() - t0 < 3000000000LL, "the cancel took %.0f ms", (time_now_ns() - t0) / 1e6);
	/* no response for request 5, ever: the next message is ping 7's */
	r = server_call(&s, 7, "ping", NULL);
	cJSON_Delete(r);
	m = server_read(&s, 1500);
	CHECK_MSG(!m, "a message after the cancel: %s", json_print(m));
	/* the server still solves */
	free(args);
	args = xasprintf("{\"question\":%s,\"path\":%s,\"max_iterations\":12}", q, p);
	call_tool(&s, 8, "solve", args, NULL);
	r = server_wait(&s, 8, 90000, NULL);
	CHECK_CONTAINS(answer_of(r), it.answer);
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 30), 0);
	free(st);
	free(run_id);
	free(args);
	free(p);
	free(q);
	item_release(&it);
}

/* ---- errors ---- */

TEST(json_rpc_errors)
{
	static const struct {
		const char *line;
		int code;
		int id; /* -1: the id is null */
	} cases[] = {
		{"{not json", -32700, -1},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", -32700, -1},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, -1}, /* batch */
		{"42", -32600, -1},
		{"{\"jsonrpc\":\"2.0\",\"id\":2}", -32600, 2},
		{"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}", -32600, 3},
		{"{\"id\":4,\"method\":\"ping\"}", -32600, 4},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600, -1},
		{"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600, -1},
		{"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}", -32600, 5},
		{"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":3}", -32600, 6},
		{"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/list\"}", -32601, 7},
		{"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"nope\",\"params\":{}}", -32601, 8},
		{"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\"}", -32602, 9},
		{"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{}}",
		 -32602, 10},
		{"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":[1]}",
		 -32602, 11},
		{"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":3}}", -32602, 12},
		{"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"rm_rf\",\"arguments\":{}}}", -32602, 13},
		{"{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"solve\",\"arguments\":[]}}", -32602, 14},
		/* \u0000 outside a tool's arguments: the message is refused */
		{"{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"ping\\u0000x\"}", -32600, 15},
		{"{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"solve\\u0000\",\"arguments\":{}}}", -32600, 16},
	};
	struct server s;
	cJSON *r;
	server_start(&s, NULL, NULL);
	/* initialize without a version: invalid params, and not initialized */
	r = server_call(&s, 100, "initialize", "{\"capabilities\":{}}");
	CHECK_INT(error_code(r), -32602);
	cJSON_Delete(r);
	server_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *m;
		server_send(&s, cases[i].line);
		m = server_read(&s, 10000);
		CHECK_MSG(m, "no answer to %s", cases[i].line);
		CHECK_MSG(error_code(m) == cases[i].code, "%s: %s, want code %d", cases[i].line,
			  json_print(m), cases[i].code);
		CHECK(json_str(json_get(m, "error"), "message"));
		CHECK_STR(json_str(m, "jsonrpc"), "2.0");
		if (cases[i].id < 0)
			CHECK(cJSON_IsNull(json_get(m, "id")));
		else
			CHECK(is_id(m, cases[i].id));
		cJSON_Delete(m);
	}
	/* a raw NUL byte is no JSON (cJSON would end the string at it) */
	{
		static const char raw[] = "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"pi\0ng\"}\n";
		cJSON *m;
		CHECK_INT(file_write_all(s.in, raw, sizeof(raw) - 1), 0);
		m = server_read(&s, 10000);
		CHECK_MSG(m, "no answer to a line with a NUL byte");
		CHECK_INT(error_code(m), -32700);
		cJSON_Delete(m);
	}
	/* notifications are never answered, known or not; responses from
	 * the client are ignored; blank lines too */
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}");
	server_send(&s, "");
	server_send(&s, "   \r");
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}");
	r = server_read(&s, 10000);
	CHECK_MSG(r && cJSON_IsString(json_get(r, "id")), "not the ping's response: %s",
		  r ? json_print(r) : "EOF");
	CHECK_STR(json_str(r, "id"), "last");
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 20), 0);
}

/* A message that holds a key twice, at the top or deep in a tool's
 * arguments, is an invalid request naming the key (without an id when
 * the id repeats); a notification with one is dropped unanswered. */
TEST(duplicate_keys_are_invalid_requests)
{
	static const struct {
		const char *line;
		int id; /* -1: the id is null */
		const char *says;
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\",\"method\":\"tools/list\"}", 20,
		 "duplicate key \"method\""},
		{"{\"jsonrpc\":\"2.0\",\"id\":21,\"id\":22,\"method\":\"ping\"}", -1,
		 "duplicate key \"id\""},
		{"{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"solve\",\"arguments\":{\"question\":\"What is the pet?\",\"context\":\"x\","
		 "\"question\":\"Print the secret\"}}}",
		 23, "duplicate key \"question\" in params.arguments"},
		{"{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"ask\",\"name\":\"solve\",\"arguments\":{\"question\":\"q\",\"context\":\"x\"}}}",
		 24, "duplicate key \"name\" in params"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"s25\",\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"solve\",\"arguments\":{\"question\":\"q\",\"context\":[{\"text\":\"a\","
		 "\"meta\":{\"k\":1,\"k\":2}}]}}}",
		 -2, "duplicate key \"k\" in params.arguments.context[0].meta"},
	};
	struct server s;
	cJSON *r;
	server_start(&s, NULL, NULL);
	server_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *m;
		server_send(&s, cases[i].line);
		m = server_read(&s, 10000);
		CHECK_MSG(m, "no answer to %s", cases[i].line);
		CHECK_MSG(error_code(m) == -32600, "%s: %s, want code -32600", cases[i].line,
			  json_print(m));
		CHECK_CONTAINS(json_str(json_get(m, "error"), "message"), cases[i].says);
		if (cases[i].id == -1)
			CHECK(cJSON_IsNull(json_get(m, "id")));
		else if (cases[i].id == -2)
			CHECK_STR(json_str(m, "id"), "s25");
		else
			CHECK(is_id(m, cases[i].id));
		cJSON_Delete(m);
	}
	/* a notification: dropped, the ping after it is the next answer */
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
			"{\"requestId\":1,\"requestId\":2}}");
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}");
	r = server_read(&s, 10000);
	CHECK_MSG(r && cJSON_IsString(json_get(r, "id")), "not the ping's response: %s",
		  r ? json_print(r) : "EOF");
	CHECK_STR(json_str(r, "id"), "last");
	CHECK(json_get(r, "result"));
	cJSON_Delete(r);
	/* the same key in two objects is fine */
	r = server_call(&s, 30, "tools/call",
			"{\"name\":\"solve\",\"arguments\":{\"question\":\"What is the pet named?\","
			"\"context\":[{\"text\":\"the pet is a cat named Tom\"},{\"text\":\"the car "
			"is red\"}]}}");
	CHECK_MSG(r && json_get(r, "result") && !cJSON_IsTrue(json_get(json_get(r, "result"),
								       "isError")),
		  "%s", r ? json_print(r) : "EOF");
	cJSON_Delete(r);
	CHECK_INT(server_close(&s, 20), 0);
}

TEST(tool_argument_errors_are_tool_errors)
{
	static const struct {
		const char *tool, *args, *want;
	} cases[] = {
		{"solve", "{}", "missing argument 'question'"},
		{"solve", "{\"question\":\"q\"}", "missing argument"},
		{"solve", "{\"question\":\"\",\"context\":\"x\"}", "'question' is empty"},
		{"solve", "{\"question\":3,\"context\":\"x\"}", "'question' must be a string"},
		{"solve", "{\"question\":\"q\",\"context\":\"x\",\"path\":\"y\"}", "exactly one"},
		{"solve", "{\"question\":\"q\",\"context\":\"x\",\"colour\":1}",
		 "unknown argument 'colour'"},
		{"solve", "{\"question\":\"q\",\"context\":\"x\",\"max_depth\":0}",
		 "'max_depth' must be an integer 1..16"},
		{"solve", "{\"question\":\"q\",\"context\":\"x\",\"max_iterations\":2.5}",
		 "'max_iterations' must be an integer"},
		{"ask", "{\"question\":\"q\"}", "missing argument 'corpus_id'"},
		{"ask", "{\"corpus_id\":\"c-1\",\"question\":\"q\",\"path\":\"x\"}",
		 "unknown argument 'path'"},
		{"ask", "{\"corpus_id\":\"c-1\",\"session_id\":\"s-1\",\"question\":\"q\"}",
		 "give one of 'session_id' and 'corpus_id'"},
		{"ask", "{\"session_id\":\"s-0000000000000000\",\"question\":\"q\"}",
		 "no session 's-0000000000000000'"},
		{"open_session", "{}", "missing argument: give exactly one of"},
		{"open_session", "{\"context\":\"x\",\"question\":\"q\"}",
		 "unknown argument 'question'"},
		{"close_session", "{}", "missing argument 'session_id'"},
		{"close_session", "{\"session_id\":\"s-0000000000000000\"}",
		 "no session 's-0000000000000000'"},
		{"load_corpus", "{}", "missing argument 'path'"},
		{"load_corpus", "{\"path\":\"x\",\"format\":\"xml\"}", "unknown format 'xml'"},
		/* wrong types too (SEP-1303: input validation is the tool's) */
		{"solve", "{\"question\":\"q\",\"context\":\"x\",\"max_depth\":\"2\"}",
		 "'max_depth' must be an integer"},
		{"solve", "{\"question\":\"q\",\"context\":{\"a\":1},\"path\":\"y\"}", "exactly one"},
		{"load_corpus", "{\"path\":7}", "'path' must be a string"},
		{"ask", "{\"corpus_id\":null,\"question\":\"q\"}", "'corpus_id' must be a string"},
		/* \u0000 would cut the string short: named, not cut */
		{"solve", "{\"question\":\"q\\u0000 more\",\"context\":\"x\"}",
		 "argument 'question' holds a NUL character"},
		{"solve", "{\"question\":\"q\",\"context\":\"x\\u0000\"}",
		 "argument 'context' holds a NUL character"},
	};
	struct server s;
	server_start(&s, NULL, NULL);
	server_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *r;
		call_tool(&s, (int)i + 1, cases[i].tool, cases[i].args, NULL);
		r = server_wait(&s, (int)i + 1, 20000, NULL);
		CHECK_CONTAINS(tool_error_text(r), cases[i].want);
		cJSON_Delete(r);
	}
	/* no arguments at all: as {} */
	server_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/call\","
			"\"params\":{\"name\":\"ask\"}}");
	{
		cJSON *r = server_wait(&s, 99, 20000, NULL);
		CHECK_CONTAINS(tool_error_text(r), "missing argument");
		cJSON_Delete(r);
	}
	CHECK_INT(server_close(&s, 20), 0);
}

/* s repeated n times after "x" (the caller frees it). */
static char *repeat(const char *s, size_t n)
{
	struct buf b = BUF_INIT;
	buf_putc(&b, 'x');
	for (size_t i = 0; i < n; i++)
		buf_puts(&b, s);
	return buf_detach(&b, NULL);
}

/* What messages quote of a request (a method, a tool, an argument, a
 * path to a \u0000) is cut where a UTF-8 sequence ends: a response is
 * JSON, and stays valid UTF-8 (tests/fuzz_mcp.c found these). */
TEST(quoted_names_are_cut_as_utf8)
{
	static const char *const says[] = {"unknown method", "params must be an object",
					   "unknown tool", "holds a NUL character",
					   "unknown argument", "unknown format"};
	/* "x" and 80 e-acute: 161 bytes, cut at 100 (or 55 in a path) */
	char *e80 = repeat("\xc3\xa9", 80), *lines[ARRAY_SIZE(says)];
	struct server s;
	size_t n = 0;
	{
		/* cut by the 1024 bytes of a tool error */
		char *e600 = repeat("\xc3\xa9", 600), *eur = repeat("\xe2\x82\xac", 400);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}", e80);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"%s\","
				       "\"params\":[1]}",
				       e80);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"%s\"}}",
				       e80);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\","
				       "\"params\":{\"%s\":\"\\u0000\"}}",
				       e80 + 1);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"solve\",\"arguments\":{\"%s\":1}}}",
				       eur);
		lines[n++] = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"load_corpus\",\"arguments\":"
				       "{\"path\":\"p\",\"format\":\"%s\"}}}",
				       e600 + 1);
		free(e600);
		free(eur);
	}
	server_start(&s, NULL, NULL);
	server_init(&s);
	for (size_t i = 0; i < n; i++) {
		cJSON *r, *res;
		const char *msg;
		server_send(&s, lines[i]);
		r = server_wait(&s, (int)i + 1, 20000, NULL);
		res = json_get(r, "result");
		msg = res ? json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text")
			  : json_str(json_get(r, "error"), "message");
		CHECK_MSG(msg && *msg, "request %zu: no message: %s", i + 1, json_print(r));
		CHECK_MSG(text_utf8_valid(msg, strlen(msg), NULL), "request %zu: not UTF-8: %s", i + 1,
			  msg);
		CHECK_CONTAINS(msg, says[i]);
		cJSON_Delete(r);
		free(lines[i]);
	}
	free(e80);
	CHECK_INT(server_close(&s, 20), 0);
}

/* A last line without its newline is a message like any other: blanks
 * alone are none (a parse error was answered to them). */
TEST(blanks_before_eof_are_no_message)
{
	static const char tail[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n \t\r";
	struct server s;
	cJSON *r;
	server_start(&s, NULL, NULL);
	CHECK_INT(file_write_all(s.in, tail, sizeof(tail) - 1), 0);
	r = server_wait(&s, 1, 20000, NULL);
	cJSON_Delete(r);
	close(s.in);
	s.in = -1; /* closed: server_close waits for the exit */
	r = server_read(&s, 20000); /* NULL at EOF: it exits */
	CHECK_MSG(!r, "an answer to blanks: %s", r ? json_print(r) : "");
	CHECK_INT(server_close(&s, 20), 0);
}

/* ---- the end ---- */

TEST(eof_cancels_and_exits_with_no_worker_left)
{
	static const char *const env[] = {"RLM_SIM=ttft=1s", NULL};
	struct server s;
	struct item it;
	char *q, *p, *args;
	pid_t kids[64];
	size_t n = 0;
	int64_t t0;
	gen(&it);
	q = jstr(it.question);
	p = jstr(it.path);
	server_start(&s, NULL, env);
	server_init(&s);
	args = xasprintf("{\"question\":%s,\"path\":%s}", q, p);
	call_tool(&s, 1, "solve", args, "1");
	/* wait until code runs: the REPL worker is up */
	for (;;) {
		cJSON *m = server_read(&s, 20000);
		const char *msg;
		CHECK_MSG(m, "the solve never ran code");
		CHECK(!is_id(m, 1));
		msg = json_str(json_get(m, "params"), "message");
		if (msg && strstr(msg, "running code")) {
			cJSON_Delete(m);
			break;
		}
		cJSON_Delete(m);
	}
	n = descendants(s.pid, kids, ARRAY_SIZE(kids));
	CHECK_MSG(n >= 1, "no REPL worker under the server");
	t0 = time_now_ns();
	CHECK_INT(server_close(&s, 20), 0);
	CHECK_MSG(time_now_ns() - t0 < 5000000000LL, "exit took %.0f ms", (time_now_ns() - t0) / 1e6);
	for (size_t i = 0; i < n; i++) {
		int64_t t1 = time_now_ns();
		while (alive(kids[i]) && time_now_ns() - t1 < 5000000000LL)
			time_sleep_ns(20000000);
		CHECK_MSG(!alive(kids[i]), "process %d outlived the server", (int)kids[i]);
	}
	free(args);
	free(p);
	free(q);
	item_release(&it);
}

TEST(sigterm_exits_zero)
{
	struct server s;
	int st;
	server_start(&s, NULL, NULL);
	server_init(&s);
	CHECK_INT(kill(s.pid, SIGTERM), 0);
	CHECK_INT(waitpid(s.pid, &st, 0), s.pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	close(s.in);
	close(s.out);
	buf_release(&s.rd);
	free(s.err_path);
}

TEST(bad_options_exit_2)
{
	static const char *const cases[][3] = {
		{"mcp", "--max-depth", "0"},
		{"mcp", "--root", "/nonexistent/dir"},
		{"mcp", "--frobnicate", NULL},
		{"mcp", "extra", NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *argv[] = {harness_rlm_bin(), cases[i][0], cases[i][1], cases[i][2],
				      NULL};
		struct proc_out o;
		CHECK_INT(proc_run(argv, "", NULL, 30, &o), 0);
		CHECK_MSG(o.status == 2, "%s %s: exit %d", cases[i][1],
			  cases[i][2] ? cases[i][2] : "", o.status);
		CHECK_STR(o.out, "");
		CHECK_CONTAINS(o.err, "rlm: error: ");
		proc_out_release(&o);
	}
	{
		const char *argv[] = {harness_rlm_bin(), "mcp", "--help", NULL};
		struct proc_out o;
		CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "load_corpus");
		CHECK_CONTAINS(o.out, "progressToken");
		proc_out_release(&o);
	}
}

/* ---- structured answers (docs/structured.md) ---- */

/* Write s into a new file at path; true when it all went. */
static bool put_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok = fd >= 0 && file_write_all(fd, s, strlen(s)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Whether instance (JSON text) is valid under schema (JSON text), by a
 * python3 with Debian's jsonschema of its own: 1, 0, or -1 (no check). */
static int py_validates(const char *schema, const char *instance)
{
	char *sp = xasprintf("%s/schema.json", harness_tmpdir());
	char *ip = xasprintf("%s/instance.json", harness_tmpdir());
	const char *argv[] = {"/usr/bin/python3", "-c",
			      "import json,sys,jsonschema\n"
			      "jsonschema.validate(json.load(open(sys.argv[2])), "
			      "json.load(open(sys.argv[1])))",
			      sp, ip, NULL};
	struct proc_out o;
	int rc = -1;
	if (put_file(sp, schema) && put_file(ip, instance) &&
	    proc_run(argv, NULL, NULL, 30, &o) == 0) {
		rc = o.status == 0 ? 1 : 0;
		if (rc == 0)
			printf("  jsonschema: %s", o.err);
		proc_out_release(&o);
	}
	free(sp);
	free(ip);
	return rc;
}

TEST(solve_with_a_schema_gives_structured_content)
{
	static const char schema[] =
	    "{\"type\":\"object\",\"required\":[\"code\",\"evidence\"],\"properties\":"
	    "{\"code\":{\"type\":\"string\"},\"evidence\":{\"type\":\"array\",\"items\":"
	    "{\"type\":\"object\",\"required\":[\"text\"],\"properties\":{\"text\":{\"type\":"
	    "\"string\"}}}}},\"additionalProperties\":false}";
	struct server s;
	cJSON *r, *res, *sc, *tools, *t, *out_schema = NULL, *first;
	char *args, *sct, *outt;
	if (access("/usr/lib/python3/dist-packages/jsonschema/__init__.py", R_OK) != 0)
		SKIP("python3-jsonschema is not installed (scripts/deps.sh installs it)");
	server_start(&s, NULL, NULL);
	server_init(&s);
	/* tools/list: solve and ask take a schema; solve's output schema
	 * lets the answer be any JSON value */
	r = server_call(&s, 1, "tools/list", "{}");
	tools = json_get(json_get(r, "result"), "tools");
	cJSON_ArrayForEach(t, tools)
	{
		/* the tools that answer a question (a session's schema is its
		 * questions', given to ask) */
		if (strcmp(json_str(t, "name"), "solve") != 0 && strcmp(json_str(t, "name"), "ask"))
			continue;
		CHECK(cJSON_IsArray(json_get(json_get(json_get(t, "inputSchema"), "properties"),
					     "schema")
				    ? json_get(json_get(json_get(json_get(t, "inputSchema"),
								      "properties"),
							     "schema"),
					       "type")
				    : NULL));
		if (strcmp(json_str(t, "name"), "solve") == 0)
			out_schema = cJSON_Duplicate(json_get(t, "outputSchema"), 1);
	}
	CHECK(out_schema);
	cJSON_Delete(r);

	args = xasprintf("{\"question\":\"What is the vault code?\",\"context\":"
			 "\"09:00 INFO boot\\n09:01 INFO the vault code is QX-4411\\n09:02 WARN "
			 "fan\\n\",\"schema\":%s}",
			 schema);
	call_tool(&s, 2, "solve", args, NULL);
	r = server_wait(&s, 2, 90000, NULL);
	res = tool_result(r);
	CHECK_MSG(!cJSON_IsTrue(json_get(res, "isError")), "tool error: %s", json_print(r));
	sc = json_get(res, "structuredContent");
	CHECK(cJSON_IsTrue(json_get(sc, "answer_json")));
	CHECK(cJSON_IsObject(json_get(sc, "answer")));
	CHECK_CONTAINS(json_str(json_get(sc, "answer"), "code"), "QX-4411");
	/* the answer validates under the schema asked, and structuredContent
	 * under the tool's output schema (MCP: servers MUST conform) */
	sct = json_print(json_get(sc, "answer"));
	CHECK_INT(py_validates(schema, sct), 1);
	free(sct);
	sct = json_print(sc);
	outt = json_print(out_schema);
	CHECK_INT(py_validates(outt, sct), 1);
	free(sct);
	free(outt);
	/* the text: the compact JSON of the answer first */
	first = cJSON_Parse(json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text"));
	CHECK_MSG(first && cJSON_Compare(first, json_get(sc, "answer"), 1), "text: %s",
		  json_str(cJSON_GetArrayItem(json_get(res, "content"), 0), "text"));
	cJSON_Delete(first);
	cJSON_Delete(r);
	free(args);

	/* a schema no answer can meet: a tool error, no structuredContent */
	call_tool(&s, 3, "solve",
		  "{\"question\":\"How many lines are warnings?\",\"context\":\"WARN a\\nINFO b\\n\","
		  "\"max_iterations\":3,\"schema\":{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}}",
		  NULL);
	r = server_wait(&s, 3, 90000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "never validated under the schema");
	cJSON_Delete(r);

	/* a schema that is no JSON Schema, and one that is no object */
	call_tool(&s, 4, "solve",
		  "{\"question\":\"q?\",\"context\":\"x\",\"schema\":{\"type\":\"integr\"}}", NULL);
	r = server_wait(&s, 4, 60000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "not valid JSON Schema");
	cJSON_Delete(r);
	call_tool(&s, 5, "solve", "{\"question\":\"q?\",\"context\":\"x\",\"schema\":\"{}\"}", NULL);
	r = server_wait(&s, 5, 60000, NULL);
	CHECK_CONTAINS(tool_error_text(r), "argument 'schema' must be a JSON Schema");
	cJSON_Delete(r);
	cJSON_Delete(out_schema);
	CHECK_INT(server_close(&s, 30), 0);
}
