/* SPDX-License-Identifier: MIT */
/* tests/fuzz_skill.c -- libFuzzer target: a line of `rlm skills import`
 * (any bytes) is taken or refused cleanly; what is taken has a digest of
 * 32 hex digits, its JSON form reads back to the same digest, and a
 * "NAME@V" reference of the same bytes parses or fails without reading
 * past them. */
#include "../store/store.h"
#include "../common/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_skill k, back;
	struct rlm_err err = {0, ""};
	char d[65], d2[65], name[STORE_SKILL_NAME_MAX + 1], *ref;
	cJSON *j = json_parse((const char *)data, size), *o;
	int version;
	ref = xstrndup((const char *)data, size);
	if (store_skill_ref(ref, name, sizeof(name), &version, &err) == 0 &&
	    (!*name || version < 0 || strlen(name) > STORE_SKILL_NAME_MAX))
		abort();
	free(ref);
	if (!j)
		return 0;
	if (store_skill_from_json(j, &k, &err) == 0) {
		if (store_skill_digest(&k, d, &err) == 0) {
			if (strlen(d) != 32 || strspn(d, "0123456789abcdef") != 32)
				abort();
			o = store_skill_json(&k, true);
			if (store_skill_from_json(o, &back, &err) != 0 ||
			    store_skill_digest(&back, d2, &err) != 0 || strcmp(d, d2) != 0)
				abort();
			store_skill_release(&back);
			cJSON_Delete(o);
		} else if (!err.msg[0]) {
			abort(); /* a refusal says why */
		}
		store_skill_release(&k);
	} else if (!err.msg[0]) {
		abort();
	}
	cJSON_Delete(j);
	return 0;
}
