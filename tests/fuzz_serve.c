/* SPDX-License-Identifier: MIT */
/* tests/fuzz_serve.c -- libFuzzer target: any bytes as the body of `rlm
 * serve`'s POST /v1/solve, POST /v1/corpora and POST /v1/chat/completions
 * go through the checks those routes run first (serve__*_parse); a body
 * taken makes a consistent request, a refused one an error of the right
 * kind with a message (valid UTF-8 when the body was). A body that holds a
 * key twice (at any depth) is never taken: "invalid_json". */
#include "../serve/serve_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A string the request took from the body: valid UTF-8, no NUL (cJSON
 * would have cut it). */
static void check_text(const char *s)
{
	if (s && !text_utf8_valid(s, strlen(s), NULL))
		abort();
}

/* A refusal: rc is the kind the body asks for, with a message. is_object:
 * the body is a JSON object that the parse takes (no key twice, unless a
 * \u0000 is refused first). */
static void check_refused(int rc, const struct rlm_err *err, bool is_object, bool utf8)
{
	if (rc != RLM_EPARSE && rc != RLM_EINVAL)
		abort();
	if ((rc == RLM_EPARSE) == is_object || err->code != rc || !err->msg[0])
		abort();
	if (utf8 && !text_utf8_valid(err->msg, strlen(err->msg), NULL))
		abort();
}

static void one_solve(const char *p, size_t len, bool is_object, bool utf8)
{
	struct serve_solve s;
	struct rlm_err err = {0, ""};
	const struct svc_opts *o = &s.so;
	int rc = serve__solve_parse(p, len, &s, &err);
	if (rc) {
		check_refused(rc, &err, is_object, utf8);
		if (s.body)
			abort();
		return;
	}
	if (!cJSON_IsObject(s.body) || !s.question || !*s.question)
		abort();
	/* a context given as any other JSON value (a list, an object) is
	 * s.value: one of the four */
	if (!!s.text + !!s.value + !!s.path + !!s.corpus_id != 1 || (s.format && !s.path))
		abort();
	if (s.value && (cJSON_IsString(s.value) || cJSON_IsNull(s.value)))
		abort();
	check_text(s.question);
	check_text(s.text);
	check_text(s.path);
	check_text(s.corpus_id);
	check_text(s.format);
	check_text(o->model);
	check_text(o->sub_model);
	if (o->strategy != -1 && o->strategy != RLM_REPL && o->strategy != RLM_TREE)
		abort();
	if (o->max_depth < 0 || o->max_depth > 16 || o->max_iterations < 0 ||
	    o->max_iterations > 10000 || o->max_tokens < 0 || o->max_calls < 0 ||
	    o->max_sub_calls < 0)
		abort();
	if (!isfinite(o->max_cost) || o->max_cost < 0 || !isfinite(o->timeout_s) ||
	    o->timeout_s < 0)
		abort();
	serve__solve_release(&s);
}

static void one_corpora(const char *p, size_t len, bool is_object, bool utf8)
{
	struct serve_corpora c;
	struct rlm_err err = {0, ""};
	const cJSON *it;
	int rc = serve__corpora_parse(p, len, &c, &err);
	if (rc) {
		check_refused(rc, &err, is_object, utf8);
		if (c.body)
			abort();
		return;
	}
	if (!cJSON_IsObject(c.body) || !!c.path + !!c.text + !!c.docs != 1)
		abort();
	if (c.kind != CORPUS_AUTO &&
	    (!c.path || (c.kind != CORPUS_TEXT && c.kind != CORPUS_DIR && c.kind != CORPUS_JSONL &&
			 c.kind != CORPUS_JSON && c.kind != CORPUS_CSV)))
		abort();
	if (c.docs && !cJSON_IsArray(c.docs))
		abort();
	cJSON_ArrayForEach(it, c.docs)
	{
		if (!cJSON_IsString(it))
			abort();
	}
	check_text(c.path);
	check_text(c.text);
	serve__corpora_release(&c);
}

static void one_chat(const char *p, size_t len, bool is_object, bool utf8)
{
	struct serve_chat ch;
	struct rlm_err err = {0, ""};
	int rc = serve__chat_parse(p, len, &ch, &err);
	if (rc) {
		check_refused(rc, &err, is_object, utf8);
		if (ch.body || ch.qown || ch.context.cap)
			abort();
		return;
	}
	/* one user message alone: it is the context, the question a fixed text */
	if (!cJSON_IsObject(ch.body) || !ch.question || !*ch.question ||
	    (ch.question != ch.qown && !ch.whole) ||
	    (ch.whole && (ch.session || strcmp(ch.text ? ch.text : "", ch.qown) != 0)))
		abort();
	/* a context, but for a request in a session (rlm_session) */
	if (!!ch.text + !!ch.path + !!ch.corpus_id > 1 ||
	    (!ch.session && !!ch.text + !!ch.path + !!ch.corpus_id != 1) ||
	    (ch.format && !ch.path) || !ch.model)
		abort();
	if (strlen(ch.conv) != 32 || (*ch.prev && strlen(ch.prev) != 32))
		abort();
	/* The earlier messages are the context only when rlm_context is not. */
	if (ch.context.len && ch.text != ch.context.p)
		abort();
	if (ch.text && ch.text == ch.context.p &&
	    (!ch.context.len || strlen(ch.text) != ch.context.len))
		abort();
	check_text(ch.path);
	check_text(ch.corpus_id);
	check_text(ch.format);
	check_text(ch.model);
	serve__chat_release(&ch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy (NULL when empty, as an empty request's body),
	 * so that reading past len is caught. */
	char *body = size ? malloc(size) : NULL;
	cJSON *j;
	bool is_object, utf8 = text_utf8_valid((const char *)data, size, NULL);
	if (size)
		memcpy(body, data, size);
	j = size ? json_parse(body, size) : NULL;
	/* An object with a key twice is "invalid_json", unless a \u0000 in
	 * it is refused first ("invalid_request"). */
	is_object = cJSON_IsObject(j) &&
		    (!json_find_duplicate(j, NULL, 0) || json_nul_path(body, size, NULL, 0));
	cJSON_Delete(j);
	one_solve(body, size, is_object, utf8);
	one_corpora(body, size, is_object, utf8);
	one_chat(body, size, is_object, utf8);
	free(body);
	return 0;
}
