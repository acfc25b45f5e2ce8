/* SPDX-License-Identifier: MIT */
/* common/json.c -- cJSON helpers where an add always consumes its item. */
#include "json.h"
#include "common.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int json_add(cJSON *obj, const char *key, cJSON *item)
{
	cJSON_bool ok;
	if (!item)
		return RLM_EINVAL;
	if (!obj) {
		cJSON_Delete(item);
		return RLM_EINVAL;
	}
	ok = key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item);
	if (!ok) {
		cJSON_Delete(item);
		return RLM_EINVAL;
	}
	return 0;
}

int json_add_str(cJSON *obj, const char *key, const char *s)
{
	return json_add(obj, key, cJSON_CreateString(s ? s : ""));
}

int json_add_strn(cJSON *obj, const char *key, const char *s, size_t len)
{
	char *tmp = xstrndup(s, len);
	int rc = json_add_str(obj, key, tmp);
	free(tmp);
	return rc;
}

int json_add_num(cJSON *obj, const char *key, double v)
{
	return json_add(obj, key, cJSON_CreateNumber(v));
}

int json_add_bool(cJSON *obj, const char *key, bool v)
{
	return json_add(obj, key, cJSON_CreateBool(v));
}

cJSON *json_get(const cJSON *obj, const char *key)
{
	if (!obj || !cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const char *json_str(const cJSON *obj, const char *key)
{
	cJSON *it = json_get(obj, key);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

double json_num(const cJSON *obj, const char *key, double fallback)
{
	cJSON *it = json_get(obj, key);
	return cJSON_IsNumber(it) ? it->valuedouble : fallback;
}

int64_t json_int(const cJSON *obj, const char *key, int64_t fallback)
{
	cJSON *it = json_get(obj, key);
	if (!cJSON_IsNumber(it) || it->valuedouble < -9e15 || it->valuedouble > 9e15)
		return fallback;
	return (int64_t)it->valuedouble;
}

cJSON *json_parse(const char *s, size_t len)
{
	const char *end = NULL;
	cJSON *j;
	if (!s || len == 0)
		return NULL;
	j = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	if (!j)
		return NULL;
	while (end && end < s + len && (isspace((unsigned char)*end) || *end == '\0'))
		end++;
	if (end && end < s + len) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

char *json_print(const cJSON *item)
{
	char *s = cJSON_PrintUnformatted(item);
	if (!s) {
		/* cJSON only fails on allocation; treat like xmalloc. */
		abort();
	}
	return s;
}
