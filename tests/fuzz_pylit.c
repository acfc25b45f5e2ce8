/* SPDX-License-Identifier: MIT */
/* tests/fuzz_pylit.c -- libFuzzer target: bench_pylit_parse, the reader of
 * Python-literal golds (OOLONG's "['entity']"), on any bytes. It returns 0
 * with a value whose strings are valid UTF-8 without NUL bytes, or
 * RLM_EINVAL with a message and no value; it never reads past len. */
#include "../bench/score.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every string in v is valid UTF-8. */
static bool strings_ok(const cJSON *v)
{
	if (cJSON_IsString(v))
		return text_utf8_valid(v->valuestring, strlen(v->valuestring), NULL);
	for (const cJSON *c = v->child; c; c = c->next)
		if (!strings_ok(c))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so that ASan sees a read past it */
	char *s = xmalloc(size ? size : 1);
	struct rlm_err err = {0, ""};
	cJSON *v = NULL;
	int rc;
	memcpy(s, data, size);
	rc = bench_pylit_parse(s, size, &v, &err);
	if (rc == 0) {
		char *text;
		if (!v || !strings_ok(v) || !(text = json_print(v)))
			abort();
		free(text);
	} else if (rc != RLM_EINVAL || v || err.code != rc || !err.msg[0]) {
		abort();
	}
	cJSON_Delete(v);
	free(s);
	return 0;
}
