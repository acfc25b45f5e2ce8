/* SPDX-License-Identifier: MIT */
/* tests/fuzz_export.c -- libFuzzer target: a run record of any bytes (what
 * a store file handed on by someone else may hold) exports as JSONL (each
 * line one JSON object) and HTML or fails cleanly; HTML never carries a
 * raw "</script" of the run. Seeds: tests/corpus/fuzz_export/. */
#include "../common/json.h"
#include "../store/export.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *run = json_parse((const char *)data, size);
	struct rlm_err err = {0, ""};
	char *jl, *html;
	if (!run)
		return 0;
	jl = store_export_jsonl(run, &err);
	if (!jl && (!err.code || !err.msg[0]))
		abort();
	/* every line is one JSON object (sub-calls' and outputs' text is
	 * copied, split at error_at, into them) */
	for (const char *l = jl; l && *l;) {
		const char *nl = strchr(l, '\n');
		cJSON *o;
		if (!nl)
			abort();
		o = json_parse(l, (size_t)(nl - l));
		if (!cJSON_IsObject(o))
			abort();
		cJSON_Delete(o);
		l = nl + 1;
	}
	err = (struct rlm_err){0, ""};
	html = store_export_html(run, &err);
	if (!html && (!err.code || !err.msg[0]))
		abort();
	if (html) {
		/* the page's own scripts end with "</script>"; the run's JSON,
		 * between the markers, never does */
		const char *a = strstr(html, "id=\"run\">");
		const char *b = a ? strstr(a, "</script>") : NULL;
		const char *c = a ? strstr(a, "<!--") : NULL;
		if (a && b && c && c < b)
			abort();
	}
	free(jl);
	free(html);
	cJSON_Delete(run);
	return 0;
}
