/* SPDX-License-Identifier: MIT */
/* tests/test_serve_sessions.c -- sessions of `rlm serve`: the real binary
 * with its root model scripted on a fake OpenAI server (its recorded
 * requests show what the model was told), real sandboxed workers looked
 * at in /proc, driven over HTTP with libcurl: /v1/sessions and its routes,
 * the limits (idle timeout, --max-sessions, --max-session-memory), their
 * /metrics, and conversations of /v1/chat/completions. */
#include "harness.h"
#include "fakesrv.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the server and its model ---- */

struct srv {
	pid_t pid;
	int port;
	struct fakesrv *fs; /* the root (and sub) model */
	char err[512];	    /* its stderr, a file */
};

/* `rlm serve --port 0 --no-cache --model m --base-url FAKE ARGS...` */
static void srv_start(struct srv *s, const char *const *args)
{
	const char *argv[40], *envp[] = {"OPENAI_API_KEY=x", "RLM_PROVIDER", "RLM_MODEL",
					 "RLM_SUB_MODEL", "OPENAI_BASE_URL", NULL};
	char url[128], line[256];
	const char *p;
	size_t n = 0;
	static int serial;
	memset(s, 0, sizeof(*s));
	s->fs = fakesrv_start();
	CHECK(s->fs);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s->fs));
	snprintf(s->err, sizeof(s->err), "%s/serve-sessions.%d.err", harness_tmpdir(), serial++);
	argv[n++] = harness_rlm_bin();
	argv[n++] = "serve";
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--no-cache";
	argv[n++] = "--model";
	argv[n++] = "m";
	argv[n++] = "--base-url";
	argv[n++] = url;
	for (size_t i = 0; args && args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	s->pid = proc_start_line(argv, envp, s->err, 60, line, sizeof(line));
	CHECK_MSG(s->pid > 0, "rlm serve did not start (stderr in %s)", s->err);
	CHECK_CONTAINS(line, "rlm serve: listening on http://");
	p = strrchr(line, ':');
	s->port = atoi(p + 1);
	CHECK(s->port > 0);
}

static void srv_stop(struct srv *s)
{
	CHECK_INT(proc_stop(s->pid), 0);
	fakesrv_stop(s->fs);
	s->fs = NULL;
}

/* The root model's next reply is content (after delay_ms). */
static void says(struct srv *s, const char *content, int delay_ms)
{
	char *body = fakesrv_chat_body(content, "stop", 100, 20);
	struct fake_reply r = {200, NULL, body, FAKE_NORMAL, delay_ms};
	fakesrv_push(s->fs, &r);
	free(body);
}

/* The last message of the model request i (its text, in the request body). */
static const char *request_body(struct srv *s, size_t i)
{
	const struct fake_request *r = fakesrv_request(s->fs, i);
	return r ? r->body : "";
}

/* ---- HTTP ---- */

struct resp {
	long status;
	char *body, *headers; /* owned */
	cJSON *json;	      /* the body parsed, or NULL */
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	buf_append(arg, p, size * n);
	return size * n;
}

static struct resp http(const struct srv *s, const char *method, const char *path, const char *body)
{
	CURL *e = curl_easy_init();
	struct curl_slist *hl = curl_slist_append(NULL, "Expect:");
	struct buf b = BUF_INIT, h = BUF_INIT;
	struct resp r = {0, NULL, NULL, NULL};
	char url[512];
	CURLcode rc;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, path);
	buf_puts(&b, "");
	buf_puts(&h, "");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 90L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	rc = curl_easy_perform(e);
	CHECK_MSG(rc == CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(e);
	r.body = buf_detach(&b, NULL);
	r.headers = buf_detach(&h, NULL);
	r.json = json_parse(r.body, strlen(r.body));
	return r;
}

static void resp_release(struct resp *r)
{
	free(r->body);
	free(r->headers);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}

#define CHECK_STATUS(r, st) CHECK_MSG((r).status == (st), "status %ld, want %d: %s", (r).status, (st), (r).body)

static bool pid_alive(pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return pid > 0 && stat(path, &st) == 0;
}

/* Wait up to ms for pid to be gone (a worker is killed and reaped). */
static bool gone_within(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 20 && pid_alive(pid); i++)
		usleep(20000);
	return !pid_alive(pid);
}

/* Wait up to ms for pid to be dead: gone, or a zombie not reaped yet
 * (one killed from outside is reaped when its session next uses it). */
static bool dead_within(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 20; i++) {
		char path[64], *st = NULL, *p;
		size_t len;
		bool zombie;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (file_read(path, 4096, &st, &len, NULL))
			return true;
		p = strrchr(st, ')');
		zombie = p && p[1] == ' ' && p[2] == 'Z';
		free(st);
		if (zombie)
			return true;
		usleep(20000);
	}
	return false;
}

/* Open a session over the JSON body; its id (owned). */
static char *open_session(struct srv *s, const char *body)
{
	struct resp r = http(s, "POST", "/v1/sessions", body);
	char *id;
	CHECK_STATUS(r, 201);
	CHECK(json_str(r.json, "id") && strncmp(json_str(r.json, "id"), "s-", 2) == 0);
	id = xstrdup(json_str(r.json, "id"));
	resp_release(&r);
	return id;
}

/* Ask q (a JSON string) in session id, synchronously: its answer (owned). */
static char *ask(struct srv *s, const char *id, const char *q)
{
	char *path = xasprintf("/v1/sessions/%s/solve", id), *body = xasprintf("{\"question\": %s}", q);
	struct resp r = http(s, "POST", path, body);
	char *a;
	CHECK_STATUS(r, 200);
	CHECK_STR(json_str(r.json, "session_id"), id);
	a = xstrdup(json_str(r.json, "answer") ? json_str(r.json, "answer") : "(null)");
	resp_release(&r);
	free(path);
	free(body);
	return a;
}

static cJSON *get_session(struct srv *s, const char *id, long *status)
{
	char *path = xasprintf("/v1/sessions/%s", id);
	struct resp r = http(s, "GET", path, NULL);
	cJSON *j = r.json;
	*status = r.status;
	r.json = NULL;
	resp_release(&r);
	free(path);
	return j;
}

/* The value of a /metrics sample line starting with name (-1: none). */
static double metric(struct srv *s, const char *name)
{
	struct resp r = http(s, "GET", "/metrics", NULL);
	double v = -1;
	for (const char *p = r.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t n = strlen(name);
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			v = atof(p + n + 1);
			break;
		}
	}
	resp_release(&r);
	return v;
}

#define INDEX_IT                                                                                   \
	"I will index it.\n```repl\nidx = {w: i for i, w in enumerate(context.split())}\n"         \
	"answer['content'] = str(len(idx))\nanswer['ready'] = True\n```"
#define USE_IT                                                                                     \
	"```repl\nanswer['content'] = '%d %d %s' % (idx['gamma'], len(history), "                \
	"history[0]['answer'])\nanswer['ready'] = True\n```"

/* ---- /v1/sessions ---- */

TEST(a_session_keeps_its_repl_across_questions_and_delete_frees_its_worker)
{
	struct srv s;
	struct resp r;
	cJSON *j;
	long st;
	pid_t pid;
	char *id, *a, *path;
	srv_start(&s, NULL);
	id = open_session(&s, "{\"context\": \"alpha beta gamma\", \"options\": {\"max_iterations\": 5}}");
	j = get_session(&s, id, &st);
	CHECK_INT(st, 200);
	CHECK_INT((int)json_num(j, "questions", -1), 0);
	CHECK_INT((int)json_num(j, "pid", -1), 0); /* the worker starts with the first question */
	CHECK_STR(json_str(j, "status"), "idle");
	cJSON_Delete(j);

	says(&s, INDEX_IT, 0);
	a = ask(&s, id, "\"How many words?\"");
	CHECK_STR(a, "3");
	free(a);
	j = get_session(&s, id, &st);
	pid = (pid_t)json_num(j, "pid", 0);
	CHECK_MSG(pid > 0 && pid_alive(pid), "%d", (int)pid);
	CHECK_CONTAINS(json_str(j, "variables"), "idx: dict");
	CHECK(json_num(j, "rss_bytes", 0) > 1 << 20);
	CHECK(json_num(j, "conversation_bytes", 0) > 0);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "history")), 1);
	cJSON_Delete(j);

	/* The second question, async, followed live: the variables of the
	 * first are there (idx), and the history. */
	says(&s, USE_IT, 0);
	path = xasprintf("/v1/sessions/%s/solve", id);
	r = http(&s, "POST", path, "{\"question\": \"Where is gamma?\", \"async\": true}");
	CHECK_STATUS(r, 202);
	CHECK_STR(json_str(r.json, "session_id"), id);
	{
		char *ev = xasprintf("/v1/runs/%s/events", json_str(r.json, "run_id"));
		struct resp e = http(&s, "GET", ev, NULL);
		CHECK_STATUS(e, 200);
		CHECK_CONTAINS(e.body, "event: turn");
		CHECK_CONTAINS(e.body, "event: end");
		CHECK_CONTAINS(e.body, "\"answer\":\"2 1 3\"");
		resp_release(&e);
		free(ev);
	}
	resp_release(&r);
	/* the model was told of the session: its second request goes on
	 * from the first conversation */
	CHECK_CONTAINS(request_body(&s, 1), "I will index it.");
	CHECK_CONTAINS(request_body(&s, 1), "Where is gamma?");
	j = get_session(&s, id, &st);
	CHECK_INT((int)json_num(j, "pid", 0), pid); /* the same worker */
	CHECK_INT((int)json_num(j, "questions", 0), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(j, "history"), 1), "answer"), "2 1 3");
	cJSON_Delete(j);

	/* Another context: context_1, with its documents. */
	{
		char *cp = xasprintf("/v1/sessions/%s/contexts", id);
		r = http(&s, "POST", cp, "{\"context\": [\"doc one\", \"doc two \\u00e9\"]}");
		CHECK_STATUS(r, 201);
		CHECK_STR(json_str(r.json, "name"), "context_1");
		resp_release(&r);
		free(cp);
	}
	says(&s, "```repl\nanswer['content'] = context_1[1] + '|' + str(idx['alpha'])\n"
		 "answer['ready'] = True\n```",
	     0);
	a = ask(&s, id, "\"What is the second document?\"");
	CHECK_STR(a, "doc two \xc3\xa9|0");
	free(a);

	/* One question at a time: another while one runs is refused. */
	says(&s, "```repl\nanswer['content'] = 'slow'\nanswer['ready'] = True\n```", 1500);
	r = http(&s, "POST", path, "{\"question\": \"Slow?\", \"async\": true}");
	CHECK_STATUS(r, 202);
	{
		char *rp = xasprintf("/v1/runs/%s", json_str(r.json, "run_id"));
		struct resp b = http(&s, "POST", path, "{\"question\": \"Now?\"}");
		CHECK_STATUS(b, 409);
		CHECK_CONTAINS(json_str(json_get(b.json, "error"), "message"),
			       "is answering a question");
		resp_release(&b);
		/* wait for the slow one: the session is free again */
		for (int i = 0; i < 200; i++) {
			b = http(&s, "GET", rp, NULL);
			if (strcmp(json_str(b.json, "status"), "running") != 0)
				break;
			resp_release(&b);
			usleep(50000);
		}
		CHECK_STR(json_str(b.json, "answer"), "slow");
		resp_release(&b);
		free(rp);
	}
	resp_release(&r);

	/* A question may not change the session's model. */
	r = http(&s, "POST", path, "{\"question\": \"q\", \"options\": {\"strategy\": \"tree\"}}");
	CHECK_STATUS(r, 400);
	CHECK_CONTAINS(r.body, "chosen when it is opened");
	resp_release(&r);

	/* The list, then DELETE: the worker goes, the session is gone. */
	r = http(&s, "GET", "/v1/sessions", NULL);
	CHECK_STATUS(r, 200);
	CHECK_INT(cJSON_GetArraySize(json_get(r.json, "sessions")), 1);
	resp_release(&r);
	CHECK(metric(&s, "rlm_sessions") == 1);
	CHECK(metric(&s, "rlm_session_memory_bytes") > 1 << 20);
	{
		char *dp = xasprintf("/v1/sessions/%s", id);
		r = http(&s, "DELETE", dp, NULL);
		CHECK_STATUS(r, 200);
		resp_release(&r);
		CHECK_MSG(gone_within(pid, 5000), "worker %d still alive", (int)pid);
		r = http(&s, "GET", dp, NULL);
		CHECK_STATUS(r, 404);
		CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "was closed");
		resp_release(&r);
		r = http(&s, "POST", path, "{\"question\": \"Still there?\"}");
		CHECK_STATUS(r, 404);
		resp_release(&r);
		free(dp);
	}
	CHECK(metric(&s, "rlm_sessions") == 0);
	CHECK(metric(&s, "rlm_sessions_opened_total") == 1);
	CHECK(metric(&s, "rlm_sessions_ended_total{reason=\"closed\"}") == 1);
	CHECK(metric(&s, "rlm_session_questions_total") == 4);
	CHECK(metric(&s, "rlm_session_memory_bytes") == 0);
	/* bad bodies */
	r = http(&s, "POST", "/v1/sessions", "{\"context\": \"x\", \"question\": \"q\"}");
	CHECK_STATUS(r, 400);
	CHECK_CONTAINS(r.body, "question: unknown field");
	resp_release(&r);
	r = http(&s, "POST", "/v1/sessions", "{}");
	CHECK_STATUS(r, 400);
	CHECK_CONTAINS(r.body, "exactly one of context");
	resp_release(&r);
	r = http(&s, "GET", "/v1/sessions/s-0000000000000000", NULL);
	CHECK_STATUS(r, 404);
	CHECK_CONTAINS(r.body, "no session 's-0000000000000000'");
	resp_release(&r);
	free(path);
	free(id);
	srv_stop(&s);
}

TEST(sessions_past_their_caps_and_idle_timeout_end_and_free_their_workers)
{
	const char *args[] = {"--max-sessions", "1", "--session-idle-timeout", "3", NULL};
	struct srv s;
	struct resp r;
	cJSON *j;
	long st;
	pid_t pa, pb;
	char *a, *b, *ans, *path;
	srv_start(&s, args);
	a = open_session(&s, "{\"context\": \"alpha beta gamma\"}");
	says(&s, INDEX_IT, 0);
	ans = ask(&s, a, "\"How many?\"");
	CHECK_STR(ans, "3");
	free(ans);
	j = get_session(&s, a, &st);
	pa = (pid_t)json_num(j, "pid", 0);
	CHECK(pid_alive(pa));
	cJSON_Delete(j);
	/* busy at the cap: a new session is refused */
	says(&s, "```repl\nanswer['content'] = 'slow'\nanswer['ready'] = True\n```", 1200);
	path = xasprintf("/v1/sessions/%s/solve", a);
	r = http(&s, "POST", path, "{\"question\": \"Slow?\", \"async\": true}");
	CHECK_STATUS(r, 202);
	resp_release(&r);
	r = http(&s, "POST", "/v1/sessions", "{\"context\": \"other\"}");
	CHECK_STATUS(r, 429);
	CHECK_CONTAINS(json_str(json_get(r.json, "error"), "message"), "--max-sessions 1");
	resp_release(&r);
	for (int i = 0; i < 200; i++) { /* the slow question ends */
		j = get_session(&s, a, &st);
		if (st != 200 || strcmp(json_str(j, "status"), "busy") != 0)
			break;
		cJSON_Delete(j);
		j = NULL;
		usleep(50000);
	}
	CHECK_STR(json_str(j, "status"), "idle");
	cJSON_Delete(j);
	/* idle at the cap: the least recently used makes room */
	b = open_session(&s, "{\"context\": \"other words here\"}");
	CHECK_MSG(gone_within(pa, 5000), "worker %d of the evicted session alive", (int)pa);
	j = get_session(&s, a, &st);
	CHECK_INT(st, 404);
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"), "least recently used");
	cJSON_Delete(j);
	says(&s, INDEX_IT, 0);
	ans = ask(&s, b, "\"How many?\"");
	CHECK_STR(ans, "3");
	free(ans);
	j = get_session(&s, b, &st);
	pb = (pid_t)json_num(j, "pid", 0);
	CHECK(pid_alive(pb));
	cJSON_Delete(j);
	/* idle past the timeout: ended, its worker freed, a later request told */
	CHECK_MSG(gone_within(pb, 9000), "worker %d of the idle session alive", (int)pb);
	j = get_session(&s, b, &st);
	CHECK_INT(st, 404);
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"), "expired");
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"), "--session-idle-timeout");
	cJSON_Delete(j);
	CHECK(metric(&s, "rlm_sessions_ended_total{reason=\"expired\"}") == 1);
	CHECK(metric(&s, "rlm_sessions_ended_total{reason=\"evicted\"}") == 1);
	CHECK(metric(&s, "rlm_sessions") == 0);
	free(path);
	free(a);
	free(b);
	srv_stop(&s);
}

TEST(sessions_past_the_memory_cap_are_ended)
{
	const char *args[] = {"--max-session-memory", "1M", NULL};
	struct srv s;
	cJSON *j;
	long st;
	pid_t pid;
	char *a, *ans;
	srv_start(&s, args);
	a = open_session(&s, "{\"context\": \"alpha beta gamma\"}");
	says(&s, INDEX_IT, 0);
	ans = ask(&s, a, "\"How many?\"");
	CHECK_STR(ans, "3");
	free(ans);
	j = get_session(&s, a, &st);
	pid = st == 200 ? (pid_t)json_num(j, "pid", 0) : 0;
	cJSON_Delete(j);
	/* a worker holds more than 1M: the janitor ends it within a second */
	if (pid)
		CHECK_MSG(gone_within(pid, 5000), "worker %d alive past the cap", (int)pid);
	for (int i = 0; i < 100; i++) {
		j = get_session(&s, a, &st);
		if (st == 404)
			break;
		cJSON_Delete(j);
		j = NULL;
		usleep(50000);
	}
	CHECK_INT(st, 404);
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"), "--max-session-memory");
	cJSON_Delete(j);
	free(a);
	srv_stop(&s);
}

/* A worker that died between questions is restarted on the next (its
 * variables gone, the model told, GET counts it); a session closed while
 * it answers has its question cancelled, and its worker goes at its end. */
TEST(a_dead_worker_is_restarted_and_a_busy_session_can_be_closed)
{
	struct srv s;
	struct resp r;
	cJSON *j;
	long st;
	pid_t pid, pid2;
	char *id, *ans, *path, *dp, *rp;
	srv_start(&s, NULL);
	id = open_session(&s, "{\"context\": \"alpha beta gamma\"}");
	says(&s, INDEX_IT, 0);
	ans = ask(&s, id, "\"How many?\"");
	free(ans);
	j = get_session(&s, id, &st);
	pid = (pid_t)json_num(j, "pid", 0);
	cJSON_Delete(j);
	CHECK(pid_alive(pid));
	CHECK_INT(kill(pid, SIGKILL), 0);
	CHECK(dead_within(pid, 5000));
	says(&s, "```repl\nanswer['content'] = str('idx' in globals()) + ' ' + str(len(history))\n"
		 "answer['ready'] = True\n```",
	     0);
	ans = ask(&s, id, "\"Still indexed?\"");
	CHECK_STR(ans, "False 1"); /* the variables are gone, the history is kept */
	free(ans);
	CHECK_CONTAINS(request_body(&s, 1), "restarted");
	j = get_session(&s, id, &st);
	pid2 = (pid_t)json_num(j, "pid", 0);
	CHECK_INT((int)json_num(j, "restarts", 0), 1);
	CHECK(pid2 != pid && pid_alive(pid2));
	cJSON_Delete(j);

	/* Reset: the worker goes, the conversation and history are forgotten,
	 * the contexts stay. */
	{
		char *rsp = xasprintf("/v1/sessions/%s/reset", id);
		r = http(&s, "POST", rsp, "");
		CHECK_STATUS(r, 200);
		CHECK_INT((int)json_num(r.json, "questions", -1), 0);
		CHECK_INT((int)json_num(r.json, "pid", -1), 0);
		CHECK_INT(cJSON_GetArraySize(json_get(r.json, "history")), 0);
		CHECK_INT(cJSON_GetArraySize(json_get(r.json, "corpus_ids")), 1);
		resp_release(&r);
		free(rsp);
		CHECK_MSG(gone_within(pid2, 5000), "worker %d alive after a reset", (int)pid2);
	}
	says(&s, "```repl\nanswer['content'] = context + ' ' + str(len(history))\n"
		 "answer['ready'] = True\n```",
	     0);
	ans = ask(&s, id, "\"Afresh?\"");
	CHECK_STR(ans, "alpha beta gamma 0");
	free(ans);
	CHECK_CONTAINS(request_body(&s, 2), "first question of a session");
	j = get_session(&s, id, &st);
	pid2 = (pid_t)json_num(j, "pid", 0);
	CHECK(pid_alive(pid2));
	cJSON_Delete(j);

	/* Closed while it answers (the model is slow): cancelled, freed. */
	says(&s, "```repl\nanswer['content'] = 'late'\nanswer['ready'] = True\n```", 4000);
	path = xasprintf("/v1/sessions/%s/solve", id);
	r = http(&s, "POST", path, "{\"question\": \"Slow?\", \"async\": true}");
	CHECK_STATUS(r, 202);
	rp = xasprintf("/v1/runs/%s", json_str(r.json, "run_id"));
	resp_release(&r);
	usleep(300000);
	dp = xasprintf("/v1/sessions/%s", id);
	r = http(&s, "DELETE", dp, NULL);
	CHECK_STATUS(r, 200);
	resp_release(&r);
	CHECK_MSG(gone_within(pid2, 8000), "worker %d alive after its session closed", (int)pid2);
	r = http(&s, "GET", rp, NULL);
	CHECK_STATUS(r, 200);
	CHECK_STR(json_str(r.json, "status"), "cancelled");
	resp_release(&r);
	free(rp);
	free(dp);
	free(path);
	free(id);
	srv_stop(&s);
}

/* A server stopped with live sessions ends them: no worker is left. */
TEST(shutdown_ends_the_sessions)
{
	struct srv s;
	cJSON *j;
	long st;
	pid_t pid;
	char *a, *ans;
	srv_start(&s, NULL);
	a = open_session(&s, "{\"context\": \"alpha beta gamma\"}");
	says(&s, INDEX_IT, 0);
	ans = ask(&s, a, "\"How many?\"");
	free(ans);
	j = get_session(&s, a, &st);
	pid = (pid_t)json_num(j, "pid", 0);
	cJSON_Delete(j);
	CHECK(pid_alive(pid));
	srv_stop(&s);
	CHECK_MSG(gone_within(pid, 5000), "worker %d outlived its server", (int)pid);
	free(a);
}

/* ---- /v1/chat/completions ---- */

static const char *content_of(const struct resp *r)
{
	const char *c = json_str(
	    json_get(cJSON_GetArrayItem(json_get(r->json, "choices"), 0), "message"), "content");
	return c ? c : "";
}

TEST(chat_one_message_and_a_conversation_continue_one_session)
{
	struct srv s;
	struct resp r;
	char *id, *body, *q1;
	const char *m1 = "alpha beta gamma\\n\\nHow many words are there above?";
	srv_start(&s, NULL);
	/* One user message: the context, its question at its end. */
	says(&s, "```repl\nprint(context[-40:])\n```", 0);
	says(&s, INDEX_IT, 0);
	body = xasprintf("{\"model\": \"rlm\", \"messages\": [{\"role\": \"user\", \"content\": "
			 "\"%s\"}]}",
			 m1);
	r = http(&s, "POST", "/v1/chat/completions", body);
	free(body);
	CHECK_STATUS(r, 200);
	CHECK_STR(content_of(&r), "9"); /* the words of the whole message */
	id = xstrdup(json_str(r.json, "rlm_session"));
	CHECK(strncmp(id, "s-", 2) == 0);
	CHECK_CONTAINS(r.headers, "X-RLM-Session: ");
	CHECK_CONTAINS(r.headers, id);
	CHECK_STR(json_str(json_get(r.json, "rlm"), "session_id"), id);
	resp_release(&r);
	/* the root prompt says where the question is; the REPL holds the message */
	CHECK_CONTAINS(request_body(&s, 0), "The question is in the context, at its end");
	CHECK_CONTAINS(request_body(&s, 1), "How many words are there above?");

	/* The follow-up, with the whole history (the answer as given): the
	 * same session, the same REPL (idx). */
	says(&s, USE_IT, 0);
	q1 = xasprintf("{\"role\": \"user\", \"content\": \"%s\"}, {\"role\": \"assistant\", "
		       "\"content\": \"9\"}",
		       m1);
	body = xasprintf("{\"messages\": [%s, {\"role\": \"user\", \"content\": \"Where is "
			 "gamma?\"}]}",
			 q1);
	r = http(&s, "POST", "/v1/chat/completions", body);
	free(body);
	CHECK_STATUS(r, 200);
	CHECK_STR(content_of(&r), "2 1 9");
	CHECK_STR(json_str(r.json, "rlm_session"), id);
	resp_release(&r);

	/* The third turn by rlm_session alone. */
	says(&s, "```repl\nanswer['content'] = str(len(history)) + ' ' + str(idx['beta'])\n"
		 "answer['ready'] = True\n```",
	     0);
	body = xasprintf("{\"rlm_session\": \"%s\", \"messages\": [{\"role\": \"user\", "
			 "\"content\": \"And beta?\"}]}",
			 id);
	r = http(&s, "POST", "/v1/chat/completions", body);
	free(body);
	CHECK_STATUS(r, 200);
	CHECK_STR(content_of(&r), "2 1");
	CHECK_STR(json_str(r.json, "rlm_session"), id);
	resp_release(&r);

	/* Streamed, in the session: the header, and the session in the
	 * chunk with the finish_reason. */
	says(&s, "```repl\nanswer['content'] = 'streamed ' + str(len(history))\n"
		 "answer['ready'] = True\n```",
	     0);
	body = xasprintf("{\"stream\": true, \"rlm_session\": \"%s\", \"messages\": "
			 "[{\"role\": \"user\", \"content\": \"Once more?\"}]}",
			 id);
	r = http(&s, "POST", "/v1/chat/completions", body);
	free(body);
	CHECK_STATUS(r, 200);
	CHECK_CONTAINS(r.headers, "text/event-stream");
	CHECK_CONTAINS(r.headers, "X-RLM-Session: ");
	CHECK_CONTAINS(r.headers, id);
	CHECK_CONTAINS(r.body, "streamed 3");
	CHECK_CONTAINS(r.body, "\"session_id\":\"");
	CHECK_CONTAINS(r.body, "data: [DONE]");
	resp_release(&r);

	/* A history whose answer this server did not give: a new session,
	 * whose context holds the earlier turns, the answer too. */
	says(&s, "```repl\nanswer['content'] = 'new ' + str('Assistant (an earlier answer): 4' in "
		 "context)\nanswer['ready'] = True\n```",
	     0);
	body = xasprintf("{\"messages\": [{\"role\": \"user\", \"content\": \"%s\"}, {\"role\": "
			 "\"assistant\", \"content\": \"4\"}, {\"role\": \"user\", \"content\": "
			 "\"Sure?\"}]}",
			 m1);
	r = http(&s, "POST", "/v1/chat/completions", body);
	free(body);
	CHECK_STATUS(r, 200);
	CHECK_STR(content_of(&r), "new True");
	CHECK(json_str(r.json, "rlm_session") && strcmp(json_str(r.json, "rlm_session"), id) != 0);
	resp_release(&r);

	/* rlm_session false: a plain solve, no session opened. */
	says(&s, "```repl\nanswer['content'] = 'plain'\nanswer['ready'] = True\n```", 0);
	r = http(&s, "GET", "/v1/sessions", NULL);
	{
		int before = cJSON_GetArraySize(json_get(r.json, "sessions"));
		resp_release(&r);
		r = http(&s, "POST", "/v1/chat/completions",
			 "{\"rlm_session\": false, \"messages\": [{\"role\": \"user\", "
			 "\"content\": \"alpha beta\\n\\nHow many?\"}]}");
		CHECK_STATUS(r, 200);
		CHECK_STR(content_of(&r), "plain");
		CHECK(!json_get(r.json, "rlm_session"));
		CHECK(!strstr(r.headers, "X-RLM-Session"));
		resp_release(&r);
		r = http(&s, "GET", "/v1/sessions", NULL);
		CHECK_INT(cJSON_GetArraySize(json_get(r.json, "sessions")), before);
		resp_release(&r);
	}

	/* A request refused after its new session was opened (a schema the
	 * worker finds invalid) leaves no session behind: none that a later
	 * request could find, idling or pushing others out at the cap. */
	if (access("/usr/lib/python3/dist-packages/jsonschema/__init__.py", R_OK) == 0) {
		int before;
		r = http(&s, "GET", "/v1/sessions", NULL);
		before = cJSON_GetArraySize(json_get(r.json, "sessions"));
		resp_release(&r);
		r = http(&s, "POST", "/v1/chat/completions",
			 "{\"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
			 "{\"name\": \"x\", \"schema\": {\"type\": 12}}}, \"messages\": "
			 "[{\"role\": \"user\", \"content\": \"alpha\\n\\nHow many?\"}]}");
		CHECK_STATUS(r, 400);
		resp_release(&r);
		r = http(&s, "GET", "/v1/sessions", NULL);
		CHECK_INT(cJSON_GetArraySize(json_get(r.json, "sessions")), before);
		resp_release(&r);
	}

	/* An unknown or ended session is a 404. */
	r = http(&s, "POST", "/v1/chat/completions",
		 "{\"rlm_session\": \"s-0000000000000000\", \"messages\": [{\"role\": \"user\", "
		 "\"content\": \"q\"}]}");
	CHECK_STATUS(r, 404);
	resp_release(&r);
	free(q1);
	free(id);
	srv_stop(&s);
}

/* A session over a real corpus of about 1.6M tokens (the kernel's
 * headers, 6 MB in hundreds of files): the first question builds an index
 * of it, the second uses it: no rebuild (the scripted model does not
 * rebuild; the index is there, its keys the documents' ids). */
TEST(a_session_over_a_large_real_corpus_reuses_its_index)
{
	const char *args[] = {"--root", "/usr/include", NULL};
	struct srv s;
	struct resp r;
	cJSON *j;
	long st;
	char *id, *a1, *a2;
	struct stat sb;
	if (stat("/usr/include/linux/input.h", &sb))
		SKIP("no /usr/include/linux");
	srv_start(&s, args);
	r = http(&s, "POST", "/v1/sessions",
		 "{\"context_path\": \"/usr/include/linux\", \"format\": \"dir\"}");
	CHECK_STATUS(r, 201);
	id = xstrdup(json_str(r.json, "id"));
	resp_release(&r);
	says(&s, "```repl\nidx = {}\nfor d, t in zip(documents, context):\n"
		 "    for w in set(t.split()):\n        idx.setdefault(w, []).append(d['id'])\n"
		 "answer['content'] = '%d %d' % (len(context), len(idx))\nanswer['ready'] = True\n```",
	     0);
	a1 = ask(&s, id, "\"Index the headers: how many documents and distinct words?\"");
	CHECK_MSG(atoi(a1) > 500, "%s", a1);
	CHECK(strchr(a1, ' ') && atoi(strchr(a1, ' ') + 1) > 10000);
	says(&s, "```repl\nhits = idx.get('EVIOCGVERSION', [])\n"
		 "answer['content'] = '%d %s' % (len(idx), ','.join(sorted(h for h in hits)))\n"
		 "answer['ready'] = True\n```",
	     0);
	a2 = ask(&s, id, "\"Which headers define EVIOCGVERSION?\"");
	/* the same index (its size), and the header that defines it */
	CHECK_MSG(strncmp(a2, strchr(a1, ' ') + 1, strlen(strchr(a1, ' ') + 1)) == 0, "%s vs %s",
		  a2, a1);
	CHECK_CONTAINS(a2, "input.h");
	j = get_session(&s, id, &st);
	CHECK_INT(st, 200);
	CHECK_CONTAINS(json_str(j, "variables"), "idx: dict");
	CHECK(json_num(j, "rss_bytes", 0) > 20 << 20); /* the corpus and the index */
	cJSON_Delete(j);
	free(a1);
	free(a2);
	free(id);
	srv_stop(&s);
}
