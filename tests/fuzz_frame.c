/* SPDX-License-Identifier: MIT */
/* tests/fuzz_frame.c -- libFuzzer target: any bytes as a frame body from
 * the worker (JSON, or a binary call frame when the first byte is 0x00:
 * its header, lengths and prompt bytes) fail cleanly or give a frame whose
 * fields all check out (a
 * call's contexts each read as one known shape: a str, a list of str, a
 * reference, null, or bad with a reason); the same bytes cut for the model
 * and escaped as a JSON string stay valid. */
#include "../repl/repl_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const types[] = {"ready", "call", "result", "fatal"};

/* One item of a call's contexts, read as the repl reads it. */
static void check_context(const cJSON *item)
{
	struct repl_ctx_arg a;
	repl__ctx_arg(item, &a);
	switch (a.kind) {
	case REPL_CTX_NONE:
		if (!cJSON_IsNull(item))
			abort();
		break;
	case REPL_CTX_TEXT:
		if (!cJSON_IsString(item) || strlen(a.text) != a.len ||
		    !text_utf8_valid(a.text, a.len, NULL))
			abort();
		break;
	case REPL_CTX_LIST:
		if (!cJSON_IsArray(item) || (int)a.n_items != cJSON_GetArraySize(item))
			abort();
		for (size_t i = 0; i < a.n_items; i++)
			if (strlen(a.items[i]) != a.item_lens[i] ||
			    !text_utf8_valid(a.items[i], a.item_lens[i], NULL))
				abort();
		break;
	case REPL_CTX_SLICE:
	case REPL_CTX_RUN:
		if (!cJSON_IsObject(item) || a.a > (1ULL << 53) || a.b > (1ULL << 53))
			abort();
		break;
	case REPL_CTX_BAD:
		if (!a.bad || !*a.bad)
			abort();
		break;
	default:
		abort();
	}
	repl__ctx_arg_release(&a);
}

static void check_frame(const cJSON *f)
{
	const char *type = json_str(f, "type");
	const cJSON *it;
	bool known = false;
	if (!type)
		abort();
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		known |= strcmp(type, types[i]) == 0;
	if (!known)
		abort();
	/* Every string anywhere in an accepted frame is UTF-8. */
	cJSON_ArrayForEach(it, f)
	{
		const cJSON *el;
		if (cJSON_IsString(it) &&
		    !text_utf8_valid(it->valuestring, strlen(it->valuestring), NULL))
			abort();
		if (cJSON_IsArray(it))
			cJSON_ArrayForEach(el, it)
			{
				if (cJSON_IsString(el) &&
				    !text_utf8_valid(el->valuestring, strlen(el->valuestring),
						     NULL))
					abort();
			}
	}
	/* The optional words of structured answers: strings when there. */
	if ((it = json_get(f, "schema_error")) && strcmp(type, "ready") == 0 &&
	    !cJSON_IsString(it))
		abort();
	if ((it = json_get(f, "invalid")) && strcmp(type, "result") == 0 && !cJSON_IsString(it))
		abort();
	if (strcmp(type, "call") == 0) {
		int n = cJSON_GetArraySize(json_get(f, "prompts"));
		const cJSON *cs = json_get(f, "contexts");
		if (n < 1 || n > REPL_MAX_PROMPTS)
			abort();
		if (cs && cJSON_GetArraySize(cs) != n)
			abort();
		cJSON_ArrayForEach(it, cs)
			check_context(it);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that reading past len is caught. */
	char *body = malloc(size ? size : 1);
	struct rlm_err err = {0, ""};
	struct buf b = BUF_INIT;
	cJSON *f, *s;
	size_t n, limit = size ? data[0] : 0;
	char *cut;
	if (size)
		memcpy(body, data, size);
	f = repl_frame_parse(body, size, 4096, &err);
	if (f)
		check_frame(f);
	else if (!err.msg[0] || (err.code != RLM_EPARSE && err.code != RLM_ETOOBIG))
		abort();
	cJSON_Delete(f);

	/* Cutting: never more than limit characters plus the marker line. */
	cut = repl_truncate(body, size, limit, &n);
	if (strlen(cut) > n || text_utf8_count(cut, n) > limit + REPL_MARK_SLACK)
		abort();
	free(cut);

	/* Escaping: always one valid JSON string of valid UTF-8. */
	json_put_str(&b, body, size, 0);
	s = json_parse(b.p, b.len);
	if (!s || !cJSON_IsString(s) ||
	    !text_utf8_valid(s->valuestring, strlen(s->valuestring), NULL))
		abort();
	cJSON_Delete(s);
	buf_release(&b);
	free(body);
	return 0;
}
