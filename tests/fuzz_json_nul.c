/* SPDX-License-Identifier: MIT */
/* tests/fuzz_json_nul.c -- libFuzzer target: json_nul_path on any bytes
 * reads nothing outside them and always terminates its path; on JSON that
 * json_parse accepts it finds a \u0000 exactly when json_has_nul_escape,
 * the blind scan (in valid JSON a backslash only occurs in a string), does,
 * and names a place for it whenever the text is a container; and
 * json_parse takes no text with a NUL byte before its trailing ones; the
 * path is valid UTF-8 when the text is. */
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so a read past them is caught */
	char *s = malloc(size ? size : 1), path[96], tiny[1];
	cJSON *j;
	bool found;
	memcpy(s, data, size);
	memset(path, 'x', sizeof(path));
	found = json_nul_path(s, size, path, sizeof(path));
	if (!memchr(path, '\0', sizeof(path)))
		abort();
	if (json_nul_path(s, size, tiny, sizeof(tiny)) != found || tiny[0] != '\0')
		abort();
	/* it goes into JSON answers: cut where a UTF-8 sequence ends */
	if (text_utf8_valid(s, size, NULL) && !text_utf8_valid(path, strlen(path), NULL))
		abort();
	j = json_parse(s, size);
	if (j) {
		/* no NUL byte before the trailing ones: cJSON would cut a
		 * string at it */
		size_t n = size;
		while (n && !s[n - 1])
			n--;
		if (memchr(s, '\0', n))
			abort();
		if (found != json_has_nul_escape(s, size))
			abort();
		if (found && (cJSON_IsObject(j) || cJSON_IsArray(j)) && cJSON_GetArraySize(j) &&
		    !path[0])
			abort();
		cJSON_Delete(j);
	}
	free(s);
	return 0;
}
