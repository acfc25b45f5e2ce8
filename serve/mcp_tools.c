/* SPDX-License-Identifier: MIT */
/* serve/mcp_tools.c -- the tools of `rlm mcp`: solve, load_corpus, ask,
 * open_session and close_session, their JSON Schemas, their arguments,
 * and progress while they run.
 *
 * DESIGN
 * A tool runs on its call's thread from start to end: it checks its
 * arguments (every problem is a tool error, isError true, so the model
 * that called it reads what was wrong), loads the context through the
 * service, starts the solve with serve_solve and waits for it, either with
 * serve_run_wait or, when the request has a progress token, by reading the
 * run's event log and sending notifications/progress as it goes. The
 * progress value counts root turns: turn i runs from i - 1 to i (the root
 * call, its reply, its code, its sub-calls as fractions), against a total
 * of max_iterations + 1 (the last call after the limit); a value that
 * would not increase is not sent, as the protocol asks. Sub-call progress
 * is sent at most every 100 ms, except a wave's first and last. */
#include "mcp_int.h"
#include "../common/common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tools/list result. Input schemas refuse unknown arguments, as the
 * calls do; output schemas describe structuredContent. */
static const char tools_json[] =
	"{\"tools\": ["
	"{\"name\": \"solve\", \"title\": \"Answer a question over a context of any size\","
	" \"description\": \"Answer a question over a context far larger than a model's window"
	" (a long text, a big file, a directory of files, a JSONL corpus) with a Recursive"
	" Language Model: the model programs a sandboxed Python REPL that holds the context and"
	" calls sub-models on parts of it. Give the question and exactly one of: context (the"
	" text itself), path (a file, directory or JSONL file on the server, under its roots)"
	" or corpus_id (from load_corpus). Returns the answer; a solve can take minutes.\","
	" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"question\": {\"type\": \"string\", \"description\": \"the question\"},"
	"  \"context\": {\"type\": [\"string\", \"array\", \"object\", \"number\", \"boolean\"],"
	" \"description\": \"the context itself: a string is text, a list of strings"
	" documents, any other JSON value (an object, a list of records) is the REPL's"
	" `context` as that value\"},"
	"  \"path\": {\"type\": \"string\", \"description\": \"a text file, a directory (each"
	" file a document) or a JSONL file ({\\\"text\\\": ...} per line) on the server, under"
	" one of its roots\"},"
	"  \"corpus_id\": {\"type\": \"string\", \"description\": \"a corpus from load_corpus\"},"
	"  \"max_depth\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 16,"
	" \"description\": \"levels of RLMs (the server's default: 2); 1: no child RLMs\"},"
	"  \"max_iterations\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10000,"
	" \"description\": \"root model turns (the server's default: 30)\"},"
	"  \"schema\": {\"$ref\": \"schema\"}},"
	" \"required\": [\"question\"], \"additionalProperties\": false},"
	" \"outputSchema\": {\"$ref\": \"answer\"},"
	" \"annotations\": {\"readOnlyHint\": true}},"
	"{\"name\": \"load_corpus\", \"title\": \"Load a corpus once, to ask it many questions\","
	" \"description\": \"Load a text file, a directory (each file a document) or a JSONL file"
	" ({\\\"text\\\": ...} per line) on the server, under one of its roots, once, and return"
	" its corpus_id for ask and solve: many questions over one corpus, loaded once.\","
	" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"path\": {\"type\": \"string\", \"description\": \"the file or directory\"},"
	"  \"format\": {\"type\": \"string\","
	" \"enum\": [\"auto\", \"text\", \"dir\", \"jsonl\", \"json\", \"csv\"],"
	" \"description\": \"how to read it (auto: a directory is dir, *.jsonl is jsonl,"
	" *.json json, *.csv and *.tsv csv, else text)\"}},"
	" \"required\": [\"path\"], \"additionalProperties\": false},"
	" \"outputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"corpus_id\": {\"type\": \"string\"},"
	"  \"kind\": {\"type\": \"string\", \"enum\": [\"text\", \"dir\", \"jsonl\", \"json\", \"csv\"]},"
	"  \"documents\": {\"type\": \"integer\"}, \"bytes\": {\"type\": \"integer\"},"
	"  \"tokens_estimate\": {\"type\": \"integer\"}},"
	" \"required\": [\"corpus_id\", \"kind\", \"documents\", \"bytes\", \"tokens_estimate\"]},"
	" \"annotations\": {\"readOnlyHint\": true, \"idempotentHint\": true}},"
	"{\"name\": \"ask\", \"title\": \"Ask a question in a session, or of a loaded corpus\","
	" \"description\": \"Answer a question as solve does, in a session from open_session"
	" (session_id: the REPL's variables and the earlier questions and answers stay, so a"
	" follow-up reuses what the model built for the questions before) or over a corpus"
	" from load_corpus (corpus_id: a fresh solve). Give exactly one of session_id and"
	" corpus_id. One question at a time per session.\","
	" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"session_id\": {\"type\": \"string\", \"description\": \"from open_session\"},"
	"  \"corpus_id\": {\"type\": \"string\", \"description\": \"from load_corpus\"},"
	"  \"question\": {\"type\": \"string\", \"description\": \"the question\"},"
	"  \"schema\": {\"$ref\": \"schema\"}},"
	" \"required\": [\"question\"], \"additionalProperties\": false},"
	" \"outputSchema\": {\"$ref\": \"answer\"},"
	" \"annotations\": {\"readOnlyHint\": true}},"
	"{\"name\": \"open_session\", \"title\": \"Open a session over a context\","
	" \"description\": \"Open a session over a context, for several questions in a row"
	" with ask: one sandboxed Python REPL holds the context for all of them, and what the"
	" model builds for one question (an index, a parsed table, candidates) is there for"
	" the next, with the earlier questions and answers. Give exactly one of context, path"
	" and corpus_id, as for solve. Close it with close_session when done; an idle one is"
	" ended by the server after a while.\","
	" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"context\": {\"type\": [\"string\", \"array\", \"object\", \"number\", \"boolean\"],"
	" \"description\": \"the context itself, as solve takes it\"},"
	"  \"path\": {\"type\": \"string\", \"description\": \"a file, directory or JSONL"
	" file on the server, under one of its roots\"},"
	"  \"corpus_id\": {\"type\": \"string\", \"description\": \"a corpus from load_corpus\"},"
	"  \"max_depth\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 16,"
	" \"description\": \"levels of RLMs for its questions\"},"
	"  \"max_iterations\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10000,"
	" \"description\": \"root model turns per question\"}},"
	" \"additionalProperties\": false},"
	" \"outputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"session_id\": {\"type\": \"string\"}, \"corpus_id\": {\"type\": \"string\"},"
	"  \"idle_timeout_s\": {\"type\": \"number\"}},"
	" \"required\": [\"session_id\", \"corpus_id\"]},"
	" \"annotations\": {\"readOnlyHint\": true}},"
	"{\"name\": \"close_session\", \"title\": \"Close a session\","
	" \"description\": \"End a session from open_session: its REPL worker and variables are"
	" freed (a question running in it is cancelled).\","
	" \"inputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"session_id\": {\"type\": \"string\", \"description\": \"from open_session\"}},"
	" \"required\": [\"session_id\"], \"additionalProperties\": false},"
	" \"outputSchema\": {\"type\": \"object\", \"properties\": {"
	"  \"session_id\": {\"type\": \"string\"}, \"questions\": {\"type\": \"integer\"}},"
	" \"required\": [\"session_id\"]},"
	" \"annotations\": {\"readOnlyHint\": true, \"idempotentHint\": false}}]}";

/* The schema argument of solve and ask (put in place of {"$ref":
 * "schema"} above). */
static const char schema_arg[] =
	"{\"type\": [\"object\", \"boolean\"], \"description\": \"a JSON Schema the answer"
	" must be valid under: the model is shown it and each answer it gives is checked; the"
	" answer is then that JSON value (structuredContent.answer, answer_json true), and a"
	" solve whose answer never validated is a tool error\"}";

/* What solve and ask return as structuredContent (put in place of
 * {"$ref": "answer"} above). */
static const char answer_schema[] =
	"{\"type\": \"object\", \"properties\": {"
	" \"run_id\": {\"type\": \"string\", \"description\": \"the run (rlm runs show ID)\"},"
	" \"answer\": {\"type\": [\"string\", \"null\", \"object\", \"array\", \"number\","
	" \"boolean\"], \"description\": \"a string; null when a limit stopped the solve before"
	" any answer; with the schema argument, the JSON value that validated under it\"},"
	" \"answer_json\": {\"type\": \"boolean\", \"description\": \"with the schema"
	" argument: true, the answer is the JSON value that validated\"},"
	" \"stop\": {\"type\": \"string\", \"description\": \"why it stopped: answer, or the"
	" limit (max_iterations, max_errors, timeout, ...): then the answer is partial; or"
	" incomplete: NONE or empty while parts of the work failed (a tool error)\"},"
	" \"complete\": {\"type\": \"boolean\", \"description\": \"true when the answer rests"
	" on everything the solve asked: it ended on its answer and nothing under it failed\"},"
	" \"failures\": {\"type\": \"array\", \"description\": \"what failed under the solve:"
	" a sub-call, a child RLM, a REPL worker restarted, a tree part\", \"items\": {\"type\":"
	" \"object\", \"properties\": {\"kind\": {\"type\": \"string\"}, \"node\": {\"type\":"
	" \"integer\"}, \"depth\": {\"type\": \"integer\"}, \"reason\": {\"type\":"
	" \"string\"}}}},"
	" \"sources\": {\"type\": \"array\", \"description\": \"the documents the answer"
	" rests on, each found in the context: {doc, start?, end?, quote?}\", \"items\":"
	" {\"type\": \"object\", \"properties\": {\"doc\": {\"type\": \"string\"},"
	" \"start\": {\"type\": \"integer\"}, \"end\": {\"type\": \"integer\"},"
	" \"quote\": {\"type\": \"string\"}}, \"required\": [\"doc\"]}},"
	" \"usage\": {\"type\": \"object\", \"description\": \"tokens of every model call\"},"
	" \"cost_usd\": {\"type\": \"number\"}},"
	" \"required\": [\"run_id\", \"answer\", \"sources\", \"stop\", \"complete\","
	" \"failures\", \"usage\", \"cost_usd\"]}";

static const char *const tool_names[] = {"solve", "load_corpus", "ask", "open_session",
					 "close_session"};

cJSON *mcp_tools_list(const char *version)
{
	cJSON *list = json_parse(tools_json, sizeof(tools_json) - 1), *t;
	bool structured = mcp_since(version, MCP_STRUCTURED);
	cJSON_ArrayForEach(t, json_get(list, "tools"))
	{
		if (mcp_since(version, MCP_TOOL_META)) {
			/* A solve is a plain request (progress, cancel), not a task. */
			cJSON *x = cJSON_CreateObject();
			json_add_str(x, "taskSupport", "forbidden");
			json_add(t, "execution", x);
		}
		if (!structured) {
			cJSON_DeleteItemFromObjectCaseSensitive(t, "outputSchema");
			cJSON_DeleteItemFromObjectCaseSensitive(t, "title");
		} else if (json_get(json_get(t, "outputSchema"), "$ref")) {
			cJSON *schema = json_parse(answer_schema, sizeof(answer_schema) - 1);
			cJSON_ReplaceItemInObjectCaseSensitive(t, "outputSchema", schema);
		}
		if (json_get(json_get(json_get(t, "inputSchema"), "properties"), "schema"))
			cJSON_ReplaceItemInObjectCaseSensitive(
			    json_get(json_get(t, "inputSchema"), "properties"), "schema",
			    json_parse(schema_arg, sizeof(schema_arg) - 1));
	}
	return list;
}

bool mcp_tool_known(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(tool_names); i++)
		if (strcmp(name, tool_names[i]) == 0)
			return true;
	return false;
}

/* ---- results ---- */

static cJSON *text_content(const char *text)
{
	cJSON *a = cJSON_CreateArray(), *t = cJSON_CreateObject();
	json_add_str(t, "type", "text");
	json_add_str(t, "text", text);
	json_add(a, NULL, t);
	return a;
}

/* A tool error: the text says what went wrong. */
static cJSON *tool_error(const char *fmt, ...) RLM_PRINTF(1, 2);
static cJSON *tool_error(const char *fmt, ...)
{
	cJSON *r = cJSON_CreateObject();
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg[text_utf8_floor(msg, strlen(msg))] = '\0'; /* cut by its size */
	json_add(r, "content", text_content(msg));
	json_add_bool(r, "isError", true);
	return r;
}

/* A result with structured content sc (consumed): text first, then, for
 * clients that read only text, sc serialised (as the protocol suggests). */
static cJSON *tool_result(const char *text, cJSON *sc)
{
	cJSON *r = cJSON_CreateObject(), *content = text_content(text), *t = cJSON_CreateObject();
	char *s = json_print(sc);
	json_add_str(t, "type", "text");
	json_add_str(t, "text", s);
	json_add(content, NULL, t);
	json_add(r, "content", content);
	json_add(r, "structuredContent", sc);
	free(s);
	return r;
}

/* ---- arguments ---- */

/* The first argument not in known (NULL-terminated), or NULL. */
static const char *unknown_arg(const cJSON *args, const char *const *known)
{
	const cJSON *a;
	cJSON_ArrayForEach(a, args)
	{
		size_t i = 0;
		while (known[i] && strcmp(known[i], a->string) != 0)
			i++;
		if (!known[i])
			return a->string;
	}
	return NULL;
}

/* args[key] as a string: 0 with *out (NULL when absent and optional), or
 * -1 with msg. */
static int arg_str(const cJSON *args, const char *key, bool required, const char **out, char *msg,
		   size_t n)
{
	const cJSON *v = json_get(args, key);
	*out = NULL;
	if (!v) {
		if (!required)
			return 0;
		snprintf(msg, n, "missing argument '%s'", key);
		return -1;
	}
	if (!cJSON_IsString(v)) {
		snprintf(msg, n, "argument '%s' must be a string", key);
		return -1;
	}
	if (!*v->valuestring) {
		snprintf(msg, n, "argument '%s' is empty", key);
		return -1;
	}
	*out = v->valuestring;
	return 0;
}

/* args[key] as an integer in min..max; absent: *out stays 0. */
static int arg_int(const cJSON *args, const char *key, int min, int max, int *out, char *msg,
		   size_t n)
{
	const cJSON *v = json_get(args, key);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < min || v->valuedouble > max) {
		snprintf(msg, n, "argument '%s' must be an integer %d..%d", key, min, max);
		return -1;
	}
	*out = (int)v->valuedouble;
	return 0;
}

/* ---- progress ---- */

struct progress {
	double last;        /* the last value sent; -1: none yet */
	double total;       /* max_iterations + 1 */
	int64_t sub_ns;     /* when a wave's progress was last sent */
	int count;          /* notifications sent (strategies without turns) */
};

static void progress_send(struct mcp_call *c, struct progress *p, double value, bool with_total,
			  const char *msg)
{
	cJSON *n, *params;
	if (value <= p->last)
		return;
	n = cJSON_CreateObject();
	params = cJSON_CreateObject();
	p->last = value;
	p->count++;
	json_add(params, "progressToken", cJSON_Duplicate(c->token, 1));
	json_add_num(params, "progress", value);
	if (with_total)
		json_add_num(params, "total", p->total);
	json_add_str(params, "message", msg);
	json_add_str(n, "jsonrpc", "2.0");
	json_add_str(n, "method", "notifications/progress");
	json_add(n, "params", params);
	mcp_send(c->m, n);
}

/* True when a wave's report (done of total) is to be skipped: one in the
 * middle of a wave, less than 100 ms after the last one sent. */
static bool throttled(struct progress *p, double done, double total)
{
	int64_t now = time_now_ns();
	if (done > 0 && done < total && now - p->sub_ns < 100000000)
		return true;
	p->sub_ns = now;
	return false;
}

/* One event of the run's log: a root turn or a progress report of the
 * root node becomes a notification. */
static void progress_event(struct mcp_call *c, struct progress *p, const cJSON *ev)
{
	const char *kind = json_str(ev, "kind"), *phase = json_str(ev, "phase");
	int it = (int)json_int(ev, "iteration", json_int(ev, "level", 0));
	double done = json_num(ev, "done", 0), total = json_num(ev, "total", 0);
	double base = it > 0 ? it - 1 : 0;
	char msg[160];
	if (!kind || json_int(ev, "depth", 0) != 0)
		return;
	if (strcmp(kind, "turn") == 0) {
		snprintf(msg, sizeof(msg), "turn %d: the root model replied", it);
		progress_send(c, p, base + 0.25, true, msg);
		return;
	}
	if (strcmp(kind, "progress") != 0 || !phase)
		return;
	if (strcmp(phase, "root") == 0) {
		snprintf(msg, sizeof(msg), "turn %d: the root model is thinking", it);
		progress_send(c, p, base, true, msg);
	} else if (strcmp(phase, "compact") == 0) {
		snprintf(msg, sizeof(msg), "turn %d: compacting the conversation", it);
		progress_send(c, p, base, true, msg);
	} else if (strcmp(phase, "exec") == 0) {
		snprintf(msg, sizeof(msg), "turn %d: running code", it);
		progress_send(c, p, base + 0.5, true, msg);
	} else if (strcmp(phase, "sub") == 0) {
		if (throttled(p, done, total))
			return;
		snprintf(msg, sizeof(msg), "turn %d: sub-calls %.0f/%.0f", it, done, total);
		progress_send(c, p, base + 0.5 + (total > 0 ? 0.45 * done / total : 0), true, msg);
	} else if (strcmp(phase, "child") == 0) {
		if (throttled(p, done, total))
			return;
		snprintf(msg, sizeof(msg), "turn %d: child RLMs %.0f/%.0f", it, done, total);
		progress_send(c, p, base + 0.5 + (total > 0 ? 0.45 * done / total : 0), true, msg);
	} else {
		/* the tree strategy: parts, then combine levels; no total */
		if (throttled(p, done, total))
			return;
		if (strcmp(phase, "leaves") == 0)
			snprintf(msg, sizeof(msg), "reading parts %.0f/%.0f", done, total);
		else
			snprintf(msg, sizeof(msg), "combining (level %d) %.0f/%.0f", it, done,
				 total);
		progress_send(c, p, p->count + 1, false, msg);
	}
}

/* Follow r's event log until its end, sending progress. */
static void follow(struct mcp_call *c, struct svc_run *r, int max_iterations)
{
	struct progress p = {-1, max_iterations + 1, 0, 0};
	size_t pos = 0;
	for (;;) {
		bool ended = false;
		cJSON *ev = serve_run_event(r, pos, time_now_ns() + 1000000000, &ended);
		const char *kind;
		if (!ev) {
			if (ended)
				break;
			continue;
		}
		pos++;
		kind = json_str(ev, "kind");
		if (kind && strcmp(kind, "end") == 0) {
			cJSON_Delete(ev);
			break;
		}
		if (!mcp_call_cancelled(c))
			progress_event(c, &p, ev);
		cJSON_Delete(ev);
	}
	serve_run_wait(r, 0);
}

/* ---- solves ---- */

/* The result of an ended run: its answer, or a tool error. */
static cJSON *solve_result(struct svc_run *r)
{
	cJSON *j = serve_run_json(r), *sc, *res, *usage, *src, *it, *failures;
	const char *status = json_str(j, "status"), *answer = json_str(j, "answer");
	const char *stop = json_str(j, "stop"), *detail = json_str(j, "stop_detail");
	char *text;
	if (!status || strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0) {
		const char *why = json_str(j, "error");
		if (!why)
			why = json_str(json_get(j, "result"), "error");
		res = tool_error("the solve %s (run %s): %s",
				 status && strcmp(status, "cancelled") == 0 ? "was cancelled"
									    : "failed",
				 serve_run_id(r), why ? why : stop ? stop : "no reason given");
		cJSON_Delete(j);
		return res;
	}
	if (cJSON_IsTrue(json_get(j, "structured")) && !cJSON_IsTrue(json_get(j, "answer_json"))) {
		/* never an answer that did not validate, given as the typed one */
		res = tool_error("the answer never validated under the schema (run %s): %s",
				 serve_run_id(r),
				 detail ? detail : "the solve ended without an answer");
		cJSON_Delete(j);
		return res;
	}
	sc = cJSON_CreateObject();
	json_add_str(sc, "run_id", serve_run_id(r));
	if (cJSON_IsTrue(json_get(j, "answer_json"))) {
		/* the typed answer, and its compact JSON text for the text */
		char *t = json_str(j, "answer_text") ? xstrdup(json_str(j, "answer_text"))
						     : cJSON_PrintUnformatted(json_get(j, "answer"));
		json_add(sc, "answer", cJSON_Duplicate(json_get(j, "answer"), 1));
		json_add_bool(sc, "answer_json", true);
		cJSON_ReplaceItemInObjectCaseSensitive(j, "answer", cJSON_CreateString(t));
		answer = json_str(j, "answer");
		free(t);
	} else {
		json_add(sc, "answer", answer ? cJSON_CreateString(answer) : cJSON_CreateNull());
	}
	src = json_get(j, "sources");
	json_add(sc, "sources", cJSON_IsArray(src) ? cJSON_Duplicate(src, 1) : cJSON_CreateArray());
	json_add_str(sc, "stop", stop ? stop : "answer");
	json_add_bool(sc, "complete", cJSON_IsTrue(json_get(j, "complete")));
	failures = json_get(j, "failures");
	json_add(sc, "failures",
		 cJSON_IsArray(failures) ? cJSON_Duplicate(failures, 1) : cJSON_CreateArray());
	usage = json_get(j, "usage");
	json_add(sc, "usage",
		 cJSON_IsObject(usage) ? cJSON_Duplicate(usage, 1) : cJSON_CreateObject());
	json_add_num(sc, "cost_usd", json_num(j, "cost_usd", 0));
	if (stop && strcmp(stop, "incomplete") == 0)
		text = xasprintf("%s\n\n(incomplete: %s)", answer ? answer : "no answer",
				 detail ? detail : "something under the solve failed");
	else if (answer && (!stop || strcmp(stop, "answer") == 0) &&
		 cJSON_GetArraySize(failures) > 0)
		text = xasprintf("%s\n\n(incomplete: %d failure%s under the solve, the first: %s; "
				 "the answer may miss what they would have found)",
				 answer, cJSON_GetArraySize(failures),
				 cJSON_GetArraySize(failures) == 1 ? "" : "s",
				 json_str(cJSON_GetArrayItem(failures, 0), "reason")
				     ? json_str(cJSON_GetArrayItem(failures, 0), "reason")
				     : "?");
	else if (answer && (!stop || strcmp(stop, "answer") == 0))
		text = xstrdup(answer);
	else if (answer)
		text = xasprintf("%s\n\n(stopped by %s: the answer is partial)", answer, stop);
	else
		text = xasprintf("no answer: stopped by %s", stop ? stop : "a limit");
	if (answer && cJSON_GetArraySize(src) > 0) {
		/* The answer's text, then the documents it rests on. */
		struct buf b = BUF_INIT;
		bool first = true;
		buf_printf(&b, "%s\n\nSources: ", text);
		cJSON_ArrayForEach(it, src)
		{
			const char *doc = json_str(it, "doc");
			buf_printf(&b, "%s%s", first ? "" : ", ", doc ? doc : "?");
			first = false;
		}
		free(text);
		text = buf_detach(&b, NULL);
	}
	res = tool_result(text, sc);
	/* NONE with failures under it is no answer the client should act on:
	 * "not found" cannot be told from "not read" */
	if (stop && strcmp(stop, "incomplete") == 0)
		json_add_bool(res, "isError", true);
	free(text);
	cJSON_Delete(j);
	return res;
}

/* ---- the arguments ---- */

/* solve's and ask's. */
static cJSON *solve_args(const cJSON *args, bool ask, struct mcp_args *a)
{
	static const char *const solve_known[] = {"question",  "context",   "path",
						  "corpus_id", "max_depth", "max_iterations",
						  "schema",    NULL};
	static const char *const ask_known[] = {"corpus_id", "session_id", "question", "schema", NULL};
	const char *bad;
	char msg[256];
	int given;
	if ((bad = unknown_arg(args, ask ? ask_known : solve_known)))
		return tool_error("unknown argument '%s' (known: %s)", bad,
				  ask ? "session_id, corpus_id, question, schema"
				      : "question, context, path, corpus_id, max_depth, "
					"max_iterations, schema");
	if (ask && (arg_str(args, "session_id", false, &a->session_id, msg, sizeof(msg)) ||
		    arg_str(args, "corpus_id", false, &a->corpus_id, msg, sizeof(msg))))
		return tool_error("%s", msg);
	if (ask && !!a->session_id + !!a->corpus_id != 1)
		return tool_error("%s", a->session_id ? "give one of 'session_id' and 'corpus_id'"
						      : "missing argument 'corpus_id' or 'session_id' "
							"(from load_corpus or open_session)");
	a->schema = json_get(args, "schema");
	if (cJSON_IsNull(a->schema))
		a->schema = NULL;
	if (a->schema && !cJSON_IsObject(a->schema) && !cJSON_IsBool(a->schema))
		return tool_error("argument 'schema' must be a JSON Schema (an object)");
	if (arg_str(args, "question", true, &a->question, msg, sizeof(msg)) ||
	    (!(a->value = ask ? NULL : json_get(args, "context")) &&
	     arg_str(args, "context", false, &a->context, msg, sizeof(msg))) ||
	    arg_str(args, "path", false, &a->path, msg, sizeof(msg)) ||
	    (!ask && arg_str(args, "corpus_id", false, &a->corpus_id, msg, sizeof(msg))) ||
	    arg_int(args, "max_depth", 1, 16, &a->o.max_depth, msg, sizeof(msg)) ||
	    arg_int(args, "max_iterations", 1, 10000, &a->o.max_iterations, msg, sizeof(msg)))
		return tool_error("%s", msg);
	if (cJSON_IsString(a->value) || cJSON_IsNull(a->value)) {
		a->context = cJSON_IsString(a->value) ? a->value->valuestring : NULL;
		a->value = NULL;
	}
	given = !!a->context + !!a->value + !!a->path + !!a->corpus_id + !!a->session_id;
	if (given != 1)
		return tool_error("%s: give exactly one of 'context', 'path' and 'corpus_id'",
				  given ? "too many contexts" : "missing argument");
	return NULL;
}

/* load_corpus's. */
static cJSON *load_corpus_args(const cJSON *args, struct mcp_args *a)
{
	static const char *const known[] = {"path", "format", NULL};
	const char *format, *bad;
	char msg[256];
	if ((bad = unknown_arg(args, known)))
		return tool_error("unknown argument '%s' (known: path, format)", bad);
	if (arg_str(args, "path", true, &a->path, msg, sizeof(msg)) ||
	    arg_str(args, "format", false, &format, msg, sizeof(msg)))
		return tool_error("%s", msg);
	if (format && corpus_kind_parse(format, &a->kind))
		return tool_error("unknown format '%s' (known: auto, text, dir, jsonl, json, csv)", format);
	return NULL;
}

/* open_session's (a context, max_depth, max_iterations) and
 * close_session's (session_id). */
static cJSON *session_args(const cJSON *args, bool close, struct mcp_args *a)
{
	static const char *const open_known[] = {"context",   "path",	       "corpus_id",
						 "max_depth", "max_iterations", NULL};
	static const char *const close_known[] = {"session_id", NULL};
	const char *bad;
	char msg[256];
	int given;
	if ((bad = unknown_arg(args, close ? close_known : open_known)))
		return tool_error("unknown argument '%s' (known: %s)", bad,
				  close ? "session_id"
					: "context, path, corpus_id, max_depth, max_iterations");
	if (close)
		return arg_str(args, "session_id", true, &a->session_id, msg, sizeof(msg))
			   ? tool_error("%s", msg)
			   : NULL;
	if ((!(a->value = json_get(args, "context")) &&
	     arg_str(args, "context", false, &a->context, msg, sizeof(msg))) ||
	    arg_str(args, "path", false, &a->path, msg, sizeof(msg)) ||
	    arg_str(args, "corpus_id", false, &a->corpus_id, msg, sizeof(msg)) ||
	    arg_int(args, "max_depth", 1, 16, &a->o.max_depth, msg, sizeof(msg)) ||
	    arg_int(args, "max_iterations", 1, 10000, &a->o.max_iterations, msg, sizeof(msg)))
		return tool_error("%s", msg);
	if (cJSON_IsString(a->value) || cJSON_IsNull(a->value)) {
		a->context = cJSON_IsString(a->value) ? a->value->valuestring : NULL;
		a->value = NULL;
	}
	given = !!a->context + !!a->value + !!a->path + !!a->corpus_id;
	if (given != 1)
		return tool_error("%s: give exactly one of 'context', 'path' and 'corpus_id'",
				  given ? "too many contexts" : "missing argument");
	return NULL;
}

cJSON *serve__mcp_args(const char *tool, const cJSON *args, const char *nul_arg,
		       struct mcp_args *a)
{
	memset(a, 0, sizeof(*a));
	a->kind = CORPUS_AUTO;
	serve_opts_init(&a->o);
	if (nul_arg)
		return tool_error("argument '%s' holds a NUL character (\\u0000): give text without "
				  "one",
				  nul_arg);
	if (strcmp(tool, "load_corpus") == 0)
		return load_corpus_args(args, a);
	if (strcmp(tool, "open_session") == 0 || strcmp(tool, "close_session") == 0)
		return session_args(args, strcmp(tool, "close_session") == 0, a);
	return solve_args(args, strcmp(tool, "ask") == 0, a);
}

/* ---- the tools ---- */

/* solve and ask: a question over a context, a path or a corpus. */
static cJSON *tool_solve(struct mcp_call *c, const struct mcp_args *a)
{
	const char *question = a->question, *context = a->context, *path = a->path,
		   *corpus_id = a->corpus_id;
	struct svc_corpus_info info;
	struct svc_opts o = a->o;
	struct svc_run *r = NULL;
	struct rlm_err err = {0, ""};
	char *schema = a->schema ? cJSON_PrintUnformatted(a->schema) : NULL;
	cJSON *res;
	int rc;

	/* The context, held until its solve has started (it holds it then). */
	if (a->value)
		rc = serve_corpus_value(c->m->svc, a->value, SVC_CORPUS_HOLD, &info, &err);
	else if (context)
		rc = serve_corpus_text(c->m->svc, context, strlen(context), NULL, NULL, 0,
				     SVC_CORPUS_HOLD, &info, &err);
	else if (path)
		rc = serve_corpus_load(c->m->svc, path, CORPUS_AUTO, SVC_CORPUS_HOLD, &info, &err);
	else if ((rc = serve_corpus_get(c->m->svc, corpus_id, SVC_CORPUS_HOLD, &info)))
		rlm_err_set(&err, rc, "no corpus '%s' (load_corpus gives ids)", corpus_id);
	if (rc) {
		free(schema);
		return tool_error("%s", err.msg);
	}
	o.schema_json = schema;
	if (mcp_call_cancelled(c))
		rc = rlm_err_set(&err, RLM_ECANCEL, "cancelled");
	else
		rc = serve_solve(c->m->svc, question, info.hold, &o, &r, &err);
	serve_corpus_put(c->m->svc, info.hold);
	free(schema); /* the run has its copy */
	if (rc)
		return tool_error("%s", err.msg);
	if (mcp_call_set_run(c, r))
		serve_run_cancel(r);
	log_debug("mcp: request %s: run %s", c->key, serve_run_id(r));
	if (c->token)
		follow(c, r, o.max_iterations ? o.max_iterations
					      : c->m->max_iterations ? c->m->max_iterations : 30);
	else
		serve_run_wait(r, 0);
	mcp_call_set_run(c, NULL);
	res = solve_result(r);
	serve_run_put(r);
	return res;
}

static cJSON *tool_load_corpus(struct mcp_call *c, const struct mcp_args *a)
{
	const char *path = a->path;
	struct svc_corpus_info info;
	struct rlm_err err = {0, ""};
	char msg[256];
	cJSON *sc;

	if (serve_corpus_load(c->m->svc, path, a->kind, SVC_CORPUS_KEEP, &info, &err))
		return tool_error("%s", err.msg);
	sc = cJSON_CreateObject();
	json_add_str(sc, "corpus_id", info.id);
	json_add_str(sc, "kind", info.kind);
	json_add_num(sc, "documents", (double)info.documents);
	json_add_num(sc, "bytes", (double)info.bytes);
	json_add_num(sc, "tokens_estimate", (double)info.tokens_estimate);
	snprintf(msg, sizeof(msg), "loaded '%.120s' as corpus %s", path, info.id);
	return tool_result(msg, sc);
}

/* ---- sessions ---- */

static cJSON *tool_open_session(struct mcp_call *c, const struct mcp_args *a)
{
	struct svc_corpus_info info;
	struct rlm_err err = {0, ""};
	char id[SVC_SESSION_ID], msg[256];
	cJSON *sc, *st;
	int rc;
	if (a->value)
		rc = serve_corpus_value(c->m->svc, a->value, SVC_CORPUS_HOLD, &info, &err);
	else if (a->context)
		rc = serve_corpus_text(c->m->svc, a->context, strlen(a->context), NULL, NULL, 0,
				       SVC_CORPUS_HOLD, &info, &err);
	else if (a->path)
		rc = serve_corpus_load(c->m->svc, a->path, CORPUS_AUTO, SVC_CORPUS_HOLD, &info,
				       &err);
	else if ((rc = serve_corpus_get(c->m->svc, a->corpus_id, SVC_CORPUS_HOLD, &info)))
		rlm_err_set(&err, rc, "no corpus '%s' (load_corpus gives ids)", a->corpus_id);
	if (rc)
		return tool_error("%s", err.msg);
	rc = serve_session_open(c->m->svc, info.hold, &a->o, "mcp", id, &err);
	serve_corpus_put(c->m->svc, info.hold);
	if (rc)
		return tool_error("%s", err.msg);
	st = serve_sessions_json(c->m->svc);
	sc = cJSON_CreateObject();
	json_add_str(sc, "session_id", id);
	json_add_str(sc, "corpus_id", info.id);
	json_add_num(sc, "idle_timeout_s", json_num(st, "idle_timeout_s", 0));
	cJSON_Delete(st);
	snprintf(msg, sizeof(msg),
		 "opened session %s over corpus %s (%zu documents, %zu bytes): ask with "
		 "session_id \"%s\"; close_session when done",
		 id, info.id, info.documents, info.bytes, id);
	return tool_result(msg, sc);
}

/* ask with session_id: the question in the session, as tool_solve waits. */
static cJSON *tool_ask_session(struct mcp_call *c, const struct mcp_args *a)
{
	struct svc_opts o = a->o;
	struct svc_run *r = NULL;
	struct rlm_err err = {0, ""};
	char *schema = a->schema ? cJSON_PrintUnformatted(a->schema) : NULL;
	cJSON *res;
	int rc;
	if (mcp_call_cancelled(c)) {
		free(schema);
		return tool_error("cancelled");
	}
	o.schema_json = schema;
	rc = serve_session_solve(c->m->svc, a->session_id, a->question, &o, NULL, &r, &err);
	free(schema); /* the run has its copy */
	if (rc)
		return tool_error("%s", err.msg);
	if (mcp_call_set_run(c, r))
		serve_run_cancel(r);
	log_debug("mcp: request %s: run %s in session %s", c->key, serve_run_id(r), a->session_id);
	if (c->token)
		follow(c, r, c->m->max_iterations ? c->m->max_iterations : 30);
	else
		serve_run_wait(r, 0);
	mcp_call_set_run(c, NULL);
	res = solve_result(r);
	serve_run_put(r);
	return res;
}

static cJSON *tool_close_session(struct mcp_call *c, const struct mcp_args *a)
{
	struct rlm_err err = {0, ""};
	char msg[160];
	cJSON *sc, *info = serve_session_json(c->m->svc, a->session_id, false, &err);
	if (!info || serve_session_close(c->m->svc, a->session_id, &err)) {
		cJSON_Delete(info);
		return tool_error("%s", err.msg);
	}
	sc = cJSON_CreateObject();
	json_add_str(sc, "session_id", a->session_id);
	json_add_num(sc, "questions", json_num(info, "questions", 0));
	cJSON_Delete(info);
	snprintf(msg, sizeof(msg), "closed session %s: its worker is freed", a->session_id);
	return tool_result(msg, sc);
}

cJSON *mcp_tool_call(struct mcp_call *c)
{
	struct mcp_args a;
	cJSON *res = serve__mcp_args(c->tool, c->args, c->nul_arg, &a);
	if (res)
		return res;
	if (strcmp(c->tool, "load_corpus") == 0)
		return tool_load_corpus(c, &a);
	if (strcmp(c->tool, "open_session") == 0)
		return tool_open_session(c, &a);
	if (strcmp(c->tool, "close_session") == 0)
		return tool_close_session(c, &a);
	if (a.session_id)
		return tool_ask_session(c, &a);
	return tool_solve(c, &a);
}
