/* SPDX-License-Identifier: MIT */
/* serve/serve_openai.c -- the OpenAI-compatible door of `rlm serve`:
 * POST /v1/chat/completions answered by a solve, and GET /v1/models.
 *
 * DESIGN
 * A chat request is a solve: the last user message is the question; the
 * context is the rlm_context extension (a text, a corpus id or a path) or
 * else the earlier messages, in order, or else, for a single user message,
 * that message (the question at its end). It is asked in a session
 * (serve/service.h) so that a conversation goes on in one REPL: the one
 * rlm_session names, else the one whose conversation the request's
 * earlier turns are (a digest of the messages up to each question and the
 * answer given, kept per session), else a new one. Known OpenAI
 * fields that mean nothing to a solve (temperature, user, ...) are taken
 * and ignored, those that would change the answer only with the value a
 * solve gives; any other field is an error, as everywhere in this API. A
 * stream is serve/serve_stream.c's. response_format json_schema (or
 * json_object) makes it a structured solve (docs/structured.md): the
 * content is the JSON text that validated, or the request fails with 422
 * (invalid_answer) when no answer did. */
#include "serve_int.h"
#include "../store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the request ---- */

/* The text of a message's content: a string, or an array of text parts.
 * NULL (with k->bad) when it is neither; *owned to free. */
static const char *content_text(struct check *k, const cJSON *m, size_t i, char **owned)
{
	const cJSON *c = json_get(m, "content"), *it;
	struct buf b = BUF_INIT;
	*owned = NULL;
	if (!c || cJSON_IsNull(c))
		return "";
	if (cJSON_IsString(c))
		return c->valuestring;
	if (!cJSON_IsArray(c)) {
		serve__check_fail(k, "messages[%zu].content: want a string or an array of text parts", i);
		return NULL;
	}
	cJSON_ArrayForEach(it, c)
	{
		const char *type = json_str(it, "type"), *t = json_str(it, "text");
		if (!type || strcmp(type, "text") != 0 || !t) {
			serve__check_fail(k, "messages[%zu].content: only text parts are understood", i);
			buf_release(&b);
			return NULL;
		}
		if (b.len)
			buf_putc(&b, '\n');
		buf_puts(&b, t);
	}
	*owned = buf_detach(&b, NULL);
	return *owned;
}

/* messages: the question and, when ctx, the earlier messages' text. */
static void check_messages(struct check *k, const cJSON *msgs, struct serve_chat *ch, bool ctx)
{
	const cJSON *m;
	size_t n, last = SIZE_MAX, i = 0;
	if (!cJSON_IsArray(msgs) || !(n = (size_t)cJSON_GetArraySize(msgs))) {
		serve__check_fail(k, "messages: want a non-empty array of messages");
		return;
	}
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role = json_str(m, "role");
		if (!cJSON_IsObject(m) || !role) {
			serve__check_fail(k, "messages[%zu]: want an object with a role", i);
			return;
		}
		if (strcmp(role, "user") == 0)
			last = i;
		i++;
	}
	if (last == SIZE_MAX) {
		serve__check_fail(k, "messages: want a user message (the question)");
		return;
	}
	i = 0;
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role = json_str(m, "role"), *t;
		char *own = NULL;
		bool text_role = strcmp(role, "user") == 0 || strcmp(role, "system") == 0 ||
				 strcmp(role, "developer") == 0 || strcmp(role, "assistant") == 0;
		if (i > last)
			break;
		if (i < last && (!ctx || !text_role)) {
			i++;
			continue;
		}
		if (!(t = content_text(k, m, i, &own)))
			return;
		if (i == last) {
			ch->qown = own ? own : xstrdup(t);
			ch->question = ch->qown;
			break;
		}
		if (*t) {
			if (ch->context.len)
				buf_puts(&ch->context, "\n\n");
			/* an earlier answer, for a conversation no session holds */
			if (strcmp(role, "assistant") == 0)
				buf_puts(&ch->context, "Assistant (an earlier answer): ");
			buf_puts(&ch->context, t);
		}
		free(own);
		i++;
	}
}

static void check_rlm_context(struct check *k, const cJSON *c, struct serve_chat *ch)
{
	static const char *const known[] = {"corpus_id", "path", "format", NULL};
	const char *w = "rlm_context.";
	if (cJSON_IsString(c)) {
		ch->text = c->valuestring;
		return;
	}
	if (!cJSON_IsObject(c)) {
		serve__check_fail(k, "rlm_context: want a string or an object with corpus_id or path");
		return;
	}
	serve__check_fields(k, c, known, w);
	ch->corpus_id = serve__check_str(k, c, "corpus_id", w);
	ch->path = serve__check_str(k, c, "path", w);
	ch->format = serve__check_str(k, c, "format", w);
	if (!k->bad && !!ch->corpus_id + !!ch->path != 1)
		serve__check_fail(k, "rlm_context: want exactly one of corpus_id and path");
	if (!k->bad && ch->format && !ch->path)
		serve__check_fail(k, "rlm_context.format: only with path");
}

/* JSON types a field may have (null is always taken). */
enum { J_NUM = 1, J_INT = 2, J_STR = 4, J_BOOL = 8, J_OBJ = 16, J_ARR = 32 };

/* Fields of OpenAI's chat completion request that mean nothing to a solve,
 * with their types: checked, then ignored. */
static const struct {
	const char *name;
	unsigned types;
} ignored[] = {
    {"temperature", J_NUM},
    {"top_p", J_NUM},
    {"max_tokens", J_INT},
    {"max_completion_tokens", J_INT},
    {"presence_penalty", J_NUM},
    {"frequency_penalty", J_NUM},
    {"logit_bias", J_OBJ},
    {"seed", J_INT},
    {"stop", J_STR | J_ARR},
    {"user", J_STR},
    {"safety_identifier", J_STR},
    {"prompt_cache_key", J_STR},
    {"prompt_cache_retention", J_STR},
    {"prompt_cache_options", J_OBJ},
    {"metadata", J_OBJ},
    {"store", J_BOOL},
    {"service_tier", J_STR},
    {"reasoning_effort", J_STR},
    {"verbosity", J_STR},
    {"parallel_tool_calls", J_BOOL},
    {"prediction", J_OBJ},
};

/* OpenAI's fields that would change what the answer is: taken only with
 * a value that asks for what a solve gives (check_unsupported). */
static const char *const guarded[] = {
    "n",
    "tools",
    "functions",
    "tool_choice",
    "function_call",
    "response_format",
    "logprobs",
    "top_logprobs",
    "modalities",
    "audio",
    "web_search_options",
    "moderation",
};

/* Ours: OpenAI's request, and the rlm_ extensions. */
static const char *const own[] = {"model",	  "messages",	 "stream",     "stream_options",
				  "rlm_context", "rlm_progress", "rlm_session"};

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

static bool of_type(const cJSON *j, unsigned types)
{
	return ((types & J_NUM) && cJSON_IsNumber(j)) ||
	       ((types & J_INT) && cJSON_IsNumber(j) && fabs(j->valuedouble) < 9.2e18 &&
		j->valuedouble == (double)(int64_t)j->valuedouble) ||
	       ((types & J_STR) && cJSON_IsString(j)) || ((types & J_BOOL) && cJSON_IsBool(j)) ||
	       ((types & J_OBJ) && cJSON_IsObject(j)) || ((types & J_ARR) && cJSON_IsArray(j));
}

/* body[key] when present and not null. */
static const cJSON *given(const cJSON *body, const char *key)
{
	const cJSON *j = json_get(body, key);
	return j && !cJSON_IsNull(j) ? j : NULL;
}

static bool is_str(const cJSON *j, const char *a, const char *b)
{
	return cJSON_IsString(j) &&
	       (strcmp(j->valuestring, a) == 0 || (b && strcmp(j->valuestring, b) == 0));
}

/* Every member of body is known, and of its type. */
static void check_known(struct check *k, const cJSON *body)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, body)
	{
		size_t i = 0;
		if (in_list(it->string, own, ARRAY_SIZE(own)) ||
		    in_list(it->string, guarded, ARRAY_SIZE(guarded)))
			continue;
		while (i < ARRAY_SIZE(ignored) && strcmp(ignored[i].name, it->string) != 0)
			i++;
		if (i == ARRAY_SIZE(ignored)) {
			serve__check_fail(k, "%.*s: unknown field", SRV_CUT(it->string, 100), it->string);
			return;
		}
		if (!cJSON_IsNull(it) && !of_type(it, ignored[i].types)) {
			serve__check_fail(k, "%s: want %s", it->string,
				   ignored[i].types == J_NUM	? "a number"
				   : ignored[i].types == J_INT	? "an integer"
				   : ignored[i].types == J_STR	? "a string"
				   : ignored[i].types == J_BOOL ? "true or false"
				   : ignored[i].types == J_OBJ	? "an object"
							       : "a string or an array of strings");
			return;
		}
	}
}

/* What a solve cannot give: several choices, tool calls,
 * log-probabilities, audio, web search, moderation. */
static void check_unsupported(struct check *k, const cJSON *body)
{
	const cJSON *j, *it;
	if ((j = given(body, "n")) && (!of_type(j, J_INT) || j->valuedouble != 1))
		serve__check_fail(k, "n: only 1 is served (a solve gives one answer)");
	if ((j = given(body, "tools")) && (!cJSON_IsArray(j) || cJSON_GetArraySize(j)))
		serve__check_fail(k, "tools: function calling is not served (an RLM answers in text)");
	if ((j = given(body, "functions")) && (!cJSON_IsArray(j) || cJSON_GetArraySize(j)))
		serve__check_fail(k, "functions: function calling is not served (an RLM answers in text)");
	if ((j = given(body, "tool_choice")) && !is_str(j, "none", "auto"))
		serve__check_fail(k, "tool_choice: only \"none\" or \"auto\" (there are no tools)");
	if ((j = given(body, "function_call")) && !is_str(j, "none", "auto"))
		serve__check_fail(k, "function_call: only \"none\" or \"auto\" (there are no functions)");
	if ((j = given(body, "logprobs")) && !cJSON_IsFalse(j))
		serve__check_fail(k,
			   "logprobs: not served (an RLM's answer has no token log-probabilities)");
	if ((j = given(body, "top_logprobs")) && (!of_type(j, J_INT) || j->valuedouble != 0))
		serve__check_fail(k, "top_logprobs: not served (an RLM's answer has no token "
			      "log-probabilities)");
	if ((j = given(body, "modalities"))) {
		if (!cJSON_IsArray(j))
			serve__check_fail(k, "modalities: want an array of strings");
		cJSON_ArrayForEach(it, j)
		{
			if (!is_str(it, "text", NULL))
				serve__check_fail(k, "modalities: only \"text\" is served");
		}
	}
	if (given(body, "audio"))
		serve__check_fail(k, "audio: not served (the answer is text)");
	if (given(body, "web_search_options"))
		serve__check_fail(k, "web_search_options: web search is not served (the context is what "
			      "the solve reads)");
	if (given(body, "moderation"))
		serve__check_fail(k, "moderation: not served");
}

/* response_format: text (the default), json_object (an answer that is a
 * JSON object) or json_schema ({"name", "schema", "strict",
 * "description"}: an answer valid under schema), into ch->schema. The
 * solve's worker checks the answer (docs/structured.md): the content is
 * JSON that validated, or the request fails. */
static void check_response_format(struct check *k, const cJSON *body, struct serve_chat *ch)
{
	static const char *const known[] = {"type", "json_schema", NULL};
	static const char *const known_js[] = {"name", "schema", "strict", "description", NULL};
	const char *w = "response_format.json_schema.";
	const cJSON *j = given(body, "response_format"), *js, *sc, *name;
	const char *type;
	if (!j)
		return;
	if (!cJSON_IsObject(j)) {
		serve__check_fail(k, "response_format: want an object with a type");
		return;
	}
	serve__check_fields(k, j, known, "response_format.");
	type = json_str(j, "type");
	if (k->bad)
		return;
	if (is_str(json_get(j, "type"), "text", NULL)) {
		if (json_get(j, "json_schema"))
			serve__check_fail(k, "response_format.json_schema: only with type "
					     "\"json_schema\"");
		return;
	}
	if (is_str(json_get(j, "type"), "json_object", NULL)) {
		if (json_get(j, "json_schema"))
			serve__check_fail(k, "response_format.json_schema: only with type "
					     "\"json_schema\"");
		else
			ch->schema = xstrdup("{\"type\":\"object\"}");
		return;
	}
	if (!type || strcmp(type, "json_schema") != 0) {
		serve__check_fail(k, "response_format.type: want \"text\", \"json_object\" or "
				     "\"json_schema\"");
		return;
	}
	js = json_get(j, "json_schema");
	if (!cJSON_IsObject(js)) {
		serve__check_fail(k, "response_format.json_schema: want an object with name and "
				     "schema");
		return;
	}
	serve__check_fields(k, js, known_js, w);
	name = json_get(js, "name");
	if (!k->bad && (!cJSON_IsString(name) || !*name->valuestring ||
			strlen(name->valuestring) > 64 ||
			strspn(name->valuestring, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						  "0123456789_-") != strlen(name->valuestring)))
		serve__check_fail(k, "%sname: want 1 to 64 letters, digits, '_' or '-'", w);
	if (!k->bad && json_get(js, "strict") && !cJSON_IsBool(json_get(js, "strict")) &&
	    !cJSON_IsNull(json_get(js, "strict")))
		serve__check_fail(k, "%sstrict: want true or false", w);
	if (!k->bad && json_get(js, "description") && !cJSON_IsString(json_get(js, "description")))
		serve__check_fail(k, "%sdescription: want a string", w);
	sc = json_get(js, "schema");
	if (!k->bad && sc && !cJSON_IsObject(sc) && !cJSON_IsBool(sc))
		serve__check_fail(k, "%sschema: want a JSON Schema (an object)", w);
	if (k->bad)
		return;
	/* no schema: any JSON value (strict or not, the schema is checked
	 * exactly as given) */
	ch->schema = sc ? cJSON_PrintUnformatted(sc) : xstrdup("{}");
}

static void check_stream_options(struct check *k, const cJSON *so, struct serve_chat *ch)
{
	static const char *const known[] = {"include_usage", "include_obfuscation", NULL};
	bool ignored_flag = false;
	if (!so || cJSON_IsNull(so))
		return;
	if (!cJSON_IsObject(so)) {
		serve__check_fail(k, "stream_options: want an object");
		return;
	}
	serve__check_fields(k, so, known, "stream_options.");
	serve__check_bool(k, so, "include_usage", "stream_options.", &ch->include_usage);
	/* chunks are not padded against length side channels: nothing to turn off */
	serve__check_bool(k, so, "include_obfuscation", "stream_options.", &ignored_flag);
}

/* ---- conversations ---- */

/* The digest of the conversation: the context given apart (ctx), then
 * the messages 0..upto, each its role and text. */
static void conv_digest(const cJSON *ctx, const cJSON *msgs, size_t upto, char out[33])
{
	struct store_kb kb;
	struct store_key key;
	struct check k = {false, ""};
	const cJSON *m;
	size_t i = 0;
	store_kb_init(&kb, "rlm-chat");
	if (cJSON_IsString(ctx)) {
		store_kb_str(&kb, "text", 4);
		store_kb_str(&kb, ctx->valuestring, strlen(ctx->valuestring));
	} else if (cJSON_IsObject(ctx)) {
		char *s = json_print(ctx);
		store_kb_str(&kb, "ref", 3);
		store_kb_str(&kb, s, strlen(s));
		free(s);
	} else {
		store_kb_str(&kb, NULL, 0);
	}
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role = json_str(m, "role"), *t;
		char *own_t = NULL;
		if (i++ > upto)
			break;
		t = content_text(&k, m, i - 1, &own_t);
		store_kb_str(&kb, role, strlen(role));
		store_kb_str(&kb, t ? t : "", t ? strlen(t) : 0);
		free(own_t);
	}
	store_kb_final(&kb, &key);
	store_key_hex(&key, out);
}

/* rlm_session, the digests that find a conversation's session, and the
 * one-message case (ch->question and the context checked already). */
static void chat_turns(struct check *k, const cJSON *body, const cJSON *ctx, struct serve_chat *ch)
{
	const cJSON *msgs = json_get(body, "messages"), *m, *before = NULL;
	size_t last = 0, i = 0;
	if (cJSON_IsFalse(json_get(body, "rlm_session")))
		ch->no_session = true;
	else
		ch->session = serve__check_str(k, body, "rlm_session", "");
	if (ch->session && (!*ch->session || strlen(ch->session) >= SVC_SESSION_ID))
		serve__check_fail(k, "rlm_session: want a session id (\"s-\" and 16 hex digits), "
				  "or false");
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role = json_str(m, "role");
		if (role && strcmp(role, "user") == 0)
			last = i;
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(m, msgs)
	{
		if (i + 1 == last)
			before = m;
		i++;
	}
	conv_digest(ctx, msgs, last, ch->conv);
	*ch->prev = '\0';
	/* The turn before the question is an answer: the conversation had
	 * that key when it was given (serve_session_turn_key). */
	if (last >= 2 && before && strcmp(json_str(before, "role"), "assistant") == 0) {
		char conv[33], *own_t = NULL;
		const char *t = content_text(k, before, last - 1, &own_t);
		conv_digest(ctx, msgs, last - 2, conv);
		if (t)
			serve_session_turn_key(conv, t, ch->prev);
		free(own_t);
	}
	/* One user message, nothing else: it holds the context and the
	 * question, at its end. */
	if (!ctx && !ch->context.len && !ch->session && ch->question && *ch->question) {
		buf_puts(&ch->context, ch->question);
		ch->question = RLM_QUESTION_AT_END;
		ch->whole = true;
	}
}

static void check_chat(struct check *k, const cJSON *body, struct serve_chat *ch)
{
	const cJSON *ctx = json_get(body, "rlm_context");
	check_known(k, body);
	check_unsupported(k, body);
	check_response_format(k, body, ch);
	ch->model = serve__check_str(k, body, "model", "");
	if (!ch->model)
		ch->model = "rlm";
	serve__check_bool(k, body, "stream", "", &ch->stream);
	check_stream_options(k, json_get(body, "stream_options"), ch);
	ch->progress = true;
	serve__check_bool(k, body, "rlm_progress", "", &ch->progress);
	if (ctx && !cJSON_IsNull(ctx))
		check_rlm_context(k, ctx, ch);
	else
		ctx = NULL;
	if (!k->bad)
		check_messages(k, json_get(body, "messages"), ch, ctx == NULL);
	if (!k->bad && (!ch->question || !*ch->question))
		serve__check_fail(k, "messages: the last user message is empty");
	if (!k->bad)
		chat_turns(k, body, ctx, ch);
	if (!k->bad && !ctx && ch->context.len)
		ch->text = ch->context.p;
}

int serve__chat_parse(const char *p, size_t len, struct serve_chat *ch, struct rlm_err *err)
{
	struct check k = {false, ""};
	int rc;
	memset(ch, 0, sizeof(*ch));
	buf_init(&ch->context, 0);
	if ((rc = serve__body_parse(p, len, &ch->body, err)))
		return rc;
	check_chat(&k, ch->body, ch);
	if (k.bad) {
		serve__chat_release(ch);
		return rlm_err_set(err, RLM_EINVAL, "%s", k.msg);
	}
	return 0;
}

void serve__chat_release(struct serve_chat *ch)
{
	cJSON_Delete(ch->body);
	ch->body = NULL;
	free(ch->qown);
	ch->qown = NULL;
	free(ch->schema);
	ch->schema = NULL;
	buf_release(&ch->context);
}

/* ---- answers ---- */

cJSON *serve__oai_usage_json(const cJSON *run)
{
	const cJSON *u = json_get(run, "usage");
	return llm_openai_usage_new(json_int(u, "input_tokens", 0),
				    json_int(u, "output_tokens", 0));
}

const char *serve__oai_finish_reason(const cJSON *run)
{
	const char *st = json_str(run, "status");
	return st && strcmp(st, "done") == 0 ? "stop" : "length";
}

void serve__oai_id(char id[SERVE__OAI_ID], const char *run_id)
{
	snprintf(id, SERVE__OAI_ID, "chatcmpl-%s", run_id);
}

cJSON *serve__oai_rlm_ext(const cJSON *run)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "run_id", json_str(run, "run_id"));
	json_add_str(o, "status", json_str(run, "status"));
	json_add(o, "stop", cJSON_Duplicate(json_get(run, "stop"), true));
	if (json_str(run, "stop_detail"))
		json_add_str(o, "stop_detail", json_str(run, "stop_detail"));
	json_add_bool(o, "complete", cJSON_IsTrue(json_get(run, "complete")));
	/* the answer was cut to max_answer bytes (then its length before) */
	json_add_bool(o, "answer_truncated", cJSON_IsTrue(json_get(run, "answer_truncated")));
	if (cJSON_IsTrue(json_get(run, "answer_truncated")))
		json_add_num(o, "answer_bytes", json_num(run, "answer_bytes", 0));
	json_add(o, "failures", json_get(run, "failures")
				    ? cJSON_Duplicate(json_get(run, "failures"), true)
				    : cJSON_CreateArray());
	json_add_num(o, "cost_usd", json_num(run, "cost_usd", 0));
	if (json_str(run, "session_id"))
		json_add_str(o, "session_id", json_str(run, "session_id"));
	/* answered from the memo: the run whose answer it is, and its date
	 * (usage is what this request spent: nothing) */
	if (cJSON_IsObject(json_get(run, "memo"))) {
		json_add_str(o, "memo_run", json_str(json_get(run, "memo"), "run"));
		json_add_str(o, "memo_date", json_str(json_get(run, "memo"), "date"));
	}
	json_add(o, "sources", json_get(run, "sources") ? cJSON_Duplicate(json_get(run, "sources"), true)
							: cJSON_CreateArray());
	return o;
}

const char *serve__oai_content(cJSON *run, char *why, size_t cap)
{
	const cJSON *a = json_get(run, "answer");
	char *text;
	if (!cJSON_IsTrue(json_get(run, "structured")))
		return json_str(run, "answer");
	if (!cJSON_IsTrue(json_get(run, "answer_json"))) {
		snprintf(why, cap,
			 "the answer never validated under the response_format schema (run %s): %s",
			 json_str(run, "run_id"),
			 json_str(run, "stop_detail") ? json_str(run, "stop_detail")
						      : "the solve ended without an answer");
		return NULL;
	}
	/* the compact JSON text that validated, as it was */
	text = json_str(run, "answer_text") ? xstrdup(json_str(run, "answer_text"))
					    : cJSON_PrintUnformatted(a);
	cJSON_ReplaceItemInObjectCaseSensitive(run, "answer", cJSON_CreateString(text));
	free(text);
	return json_str(run, "answer");
}

static enum MHD_Result chat_answer(struct req *rq, struct svc_run *r, const char *model)
{
	const char *sid = serve_run_session(r);
	cJSON *run = serve_run_json(r), *o;
	const char *answer;
	char id[SERVE__OAI_ID], why[1200];
	if (strcmp(json_str(run, "status"), "failed") == 0) {
		enum MHD_Result ret = serve__error(
		    rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "the solve failed (run %s): %s",
		    serve_run_id(r), json_str(run, "error") ? json_str(run, "error") : "");
		cJSON_Delete(run);
		return ret;
	}
	if (!(answer = serve__oai_content(run, why, sizeof(why)))) {
		/* never content that did not validate, presented as if it had */
		enum MHD_Result ret = serve__error_code(rq, 422 /* Unprocessable Content */,
							"invalid_answer", "answer_not_valid",
							"response_format", "%s", why);
		cJSON_Delete(run);
		return ret;
	}
	serve__oai_id(id, serve_run_id(r));
	o = llm_openai_reply_new("chat.completion", id, model, time_wall_ms() / 1000,
				 llm_openai_message_new(answer, answer ? strlen(answer) : 0),
				 serve__oai_finish_reason(run));
	json_add(o, "usage", serve__oai_usage_json(run));
	json_add(o, "rlm", serve__oai_rlm_ext(run));
	cJSON_Delete(run);
	/* the session the conversation goes on in: send it back as
	 * rlm_session to be sure of it (the earlier turns find it too) */
	if (*sid)
		json_add_str(o, "rlm_session", sid);
	return serve__json(rq, MHD_HTTP_OK, o);
}

/* Start the run of a chat request: in the session rlm_session names, else
 * in the one the conversation's earlier turns are, else in a new session
 * over the request's context (a plain solve when the service opens no
 * sessions). 0 with *r, or an answer sent (*ret). */
static int chat_run(struct req *rq, const struct serve_chat *ch, const struct svc_opts *so,
		    struct svc_run **r, enum MHD_Result *ret)
{
	struct service *svc = rq->sv->svc;
	struct rlm_err err = {0, ""};
	struct svc_corp *hold = NULL;
	char sid[SVC_SESSION_ID] = "";
	bool sessions = serve_sessions_available(svc) && !ch->no_session, opened = false;
	int rc;
	*r = NULL;
	if (ch->session)
		snprintf(sid, sizeof(sid), "%s", ch->session);
	else if (sessions && *ch->prev)
		serve_session_find(svc, ch->prev, sid); /* "" when none holds it */
	if (!*sid) {
		if ((rc = serve_can_start(svc, &err))) {
			*ret = serve__svc_error(rq, rc, err.msg);
			return -1;
		}
		if (serve__context(rq, ch->text, ch->path, ch->format, ch->corpus_id, &hold, ret))
			return -1;
		if (!sessions) {
			rc = serve_solve(svc, ch->question, hold, so, r, &err);
			serve_corpus_put(svc, hold);
			goto out;
		}
		rc = serve_session_open(svc, hold, so, "chat", sid, &err);
		serve_corpus_put(svc, hold);
		if (rc)
			goto out;
		opened = true;
	}
	rc = serve_session_solve(svc, sid, ch->question, so, ch->conv, r, &err);
	if (rc && opened) {
		/* a session no later request could find: not left to idle
		 * (nor to push out other clients' at --max-sessions) */
		struct rlm_err e = {0, ""};
		serve_session_close(svc, sid, &e);
	}
out:
	if (rc) {
		*ret = serve__svc_error(rq, rc, err.msg);
		return -1;
	}
	return 0;
}

/* ---- routes ---- */

enum MHD_Result serve__route_chat(struct req *rq)
{
	struct serve_chat ch;
	struct svc_opts so;
	struct svc_run *r = NULL;
	struct rlm_err err = {0, ""};
	enum MHD_Result ret;
	int rc;
	if ((rc = serve__chat_parse(rq->body.buf.p, rq->body.buf.len, &ch, &err)))
		return serve__body_error(rq, rc, &err);
	serve_opts_init(&so);
	so.schema_json = ch.schema;
	if (strcmp(ch.model, "rlm") != 0) {
		if (strcmp(ch.model, serve_model_name(rq->sv->svc)) != 0 &&
		    strcmp(ch.model, serve_sub_model_name(rq->sv->svc)) != 0) {
			ret = serve__error_code(
			    rq, MHD_HTTP_NOT_FOUND, "not_found", "model_not_found", "model",
			    "the model '%.*s' does not exist here (see GET /v1/models: "
			    "rlm, or a model this server was started with)",
			    SRV_CUT(ch.model, 100), ch.model);
			goto out;
		}
		so.model = ch.model;
	}
	if (chat_run(rq, &ch, &so, &r, &ret))
		goto out;
	snprintf(rq->session, sizeof(rq->session), "%s", serve_run_session(r)); /* X-RLM-Session */
	if (ch.stream) {
		ret = serve__chat_stream(rq, r, ch.model, ch.include_usage, ch.progress);
		r = NULL;
		goto out;
	}
	switch (serve__wait_run(rq, r)) {
	case SRV_ENDED:
		ret = chat_answer(rq, r, ch.model);
		break;
	case SRV_TIMEOUT:
		ret = serve__error(rq, MHD_HTTP_GATEWAY_TIMEOUT, "timeout",
				"the solve ran past the request timeout of %.0f s and was "
				"cancelled (run %s)",
				(double)rq->sv->request_timeout_ns / 1e9, serve_run_id(r));
		break;
	default:
		ret = MHD_NO; /* the client went away */
		break;
	}
out:
	serve_run_put(r);
	serve__chat_release(&ch);
	return ret;
}

static cJSON *model_json(const char *id, int64_t created)
{
	cJSON *m = cJSON_CreateObject();
	json_add_str(m, "id", id);
	json_add_str(m, "object", "model");
	json_add_num(m, "created", (double)created);
	json_add_str(m, "owned_by", "rlm");
	return m;
}

enum MHD_Result serve__route_models(struct req *rq)
{
	cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateArray();
	const char *root = serve_model_name(rq->sv->svc), *sub = serve_sub_model_name(rq->sv->svc);
	json_add_str(o, "object", "list");
	json_add(data, NULL, model_json("rlm", rq->sv->started_s));
	json_add(data, NULL, model_json(root, rq->sv->started_s));
	if (strcmp(sub, root) != 0)
		json_add(data, NULL, model_json(sub, rq->sv->started_s));
	json_add(o, "data", data);
	return serve__json(rq, MHD_HTTP_OK, o);
}
