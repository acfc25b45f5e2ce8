/* SPDX-License-Identifier: MIT */
/* tests/fuzz_toolschema.c -- libFuzzer target: tool/'s pure pieces on
 * bytes from outside. The input is a schema, a NUL byte, then arguments
 * (both JSON texts; one that does not parse is passed as NULL). Checked:
 * tool_schema_check returns 0 or -1 and says why exactly when -1, within
 * the cap the first byte picks, NUL-terminated and valid UTF-8 when both
 * texts were; the same answer twice (it keeps no state); a schema holds
 * its own parameters' listing (tool_schema_params) whatever it is; and
 * tool_rank and tool_glob_match on the two texts as strings end, with a
 * score >= 0 and "*" matching anything. */
#include "../tool/tool.h"
#include "../common/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = {1, 2, 16, 512};
	char msg[512], again[512];
	size_t cap, slen, alen;
	const char *sep;
	char *s, *a;
	cJSON *schema, *args, *params;
	bool valid;
	int rc;
	if (size < 1)
		return 0;
	cap = caps[data[0] & 3];
	data++;
	size--;
	sep = memchr(data, '\0', size);
	slen = sep ? (size_t)(sep - (const char *)data) : size;
	alen = sep ? size - slen - 1 : 0;
	/* Exact-size copies, NUL-terminated, so reading past them is caught. */
	s = xstrndup((const char *)data, slen);
	a = xstrndup(sep ? sep + 1 : "", alen);
	valid = text_utf8_valid(s, slen, NULL) && text_utf8_valid(a, alen, NULL);
	schema = json_parse(s, slen);
	args = json_parse(a, alen);

	memset(msg, 'x', sizeof(msg));
	rc = tool_schema_check(schema, args, msg, cap);
	if (rc != 0 && rc != -1)
		abort();
	if (!memchr(msg, '\0', cap))
		abort();
	for (size_t i = cap; i < sizeof(msg); i++) /* nothing written past cap */
		if (msg[i] != 'x')
			abort();
	if (cap > 1 && (rc == 0) != (msg[0] == '\0'))
		abort();
	if (valid && !text_utf8_valid(msg, strlen(msg), NULL))
		abort();
	if (tool_schema_check(schema, args, again, cap) != rc || strcmp(msg, again) != 0)
		abort();

	params = tool_schema_params(schema);
	if (!cJSON_IsArray(json_get(params, "required")) ||
	    !cJSON_IsArray(json_get(params, "optional")))
		abort();
	cJSON_Delete(params);

	if (!(tool_rank(s, a, s) >= 0) || !(tool_rank(a, s, NULL) >= 0))
		abort();
	if (!tool_glob_match("*", s) || (tool_glob_match(s, a) && !strchr(s, '*') && strcmp(s, a)))
		abort();

	cJSON_Delete(schema);
	cJSON_Delete(args);
	free(s);
	free(a);
	return 0;
}
