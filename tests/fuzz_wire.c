/* SPDX-License-Identifier: MIT */
/* tests/fuzz_wire.c -- libFuzzer target: any bytes given to both wire
 * formats' reply parser and error-message extractor, and to the
 * Retry-After parser, fail cleanly or succeed with a consistent result. */
#include "../llm/llm_int.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_wire(const struct llm_wire *w, const char *body, size_t len)
{
	static const struct llm_msg msg = {LLM_USER, "hi", 2};
	struct llm_call c;
	struct rlm_err err = {0, ""};
	char *m;
	int rc;
	memset(&c, 0, sizeof(c));
	c.msgs = &msg;
	c.n_msgs = 1;
	rc = w->parse(&c, body, len, &err);
	if (rc == 0 && (!c.text || strlen(c.text) != c.len))
		abort();
	if (rc != 0 && (c.text || (rc != RLM_EPARSE && rc != RLM_EPROVIDER) || !err.msg[0]))
		abort();
	free(c.text);
	free(c.finish_reason);
	m = w->error_message(body, len);
	/* A message is never empty, and valid UTF-8 when the body was. */
	if (m &&
	    (!*m || (!text_utf8_valid(m, strlen(m), NULL) && text_utf8_valid(body, len, NULL))))
		abort();
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that reading past len is caught. */
	char *body = malloc(size ? size : 1);
	char *z = malloc(size + 1);
	int64_t ms;
	body[0] = '\0';
	if (size)
		memcpy(body, data, size);
	one_wire(&llm_wire_openai, body, size);
	one_wire(&llm_wire_anthropic, body, size);
	if (size)
		memcpy(z, data, size);
	z[size] = '\0';
	ms = llm__http_parse_retry_after(z, 1445412480000LL);
	if (ms < -1 || ms > 3600000)
		abort();
	free(z);
	free(body);
	return 0;
}
