/* SPDX-License-Identifier: MIT */
/* tests/fuzz_csv.c -- libFuzzer target: a CSV or TSV table (the first byte
 * picks ',' or '\t'), or JSON text for corpus_from_json, of any bytes,
 * decodes or fails cleanly; what decodes is one valid JSON value whose
 * documents lie inside it, a table's each a JSON object. */
#include "../corpus/corpus_int.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct corpus *c = NULL;
	struct rlm_err err;
	const char *s = (const char *)data + 1;
	int mode, rc;
	if (size < 1)
		return 0;
	mode = data[0] % 3;
	size--;
	rc = mode == 2 ? corpus_from_json(s, size, &c, &err)
		       : corpus_from_csv_buf("fuzz.csv", s, size, mode ? '\t' : ',', &c, &err);
	if (rc) {
		if (c || err.code != rc || !err.msg[0])
			abort();
		return 0;
	}
	if (!c || !c->json || c->n_docs == 0 || !corpus__json_valid(c->buf, c->len))
		abort();
	if (mode != 2 && (c->kind != CORPUS_CSV || c->buf[0] != '[' || c->buf[c->len - 1] != ']'))
		abort();
	for (size_t i = 0; i < c->n_docs; i++) {
		const struct corpus_doc *d = &c->docs[i];
		if (d->off > c->len || d->len > c->len - d->off || !d->id ||
		    !text_utf8_valid(d->id, strlen(d->id), NULL))
			abort();
		if (!corpus__json_valid(c->buf + d->off, d->len))
			abort();
		if (mode != 2 && (c->buf[d->off] != '{' || c->buf[d->off + d->len - 1] != '}'))
			abort();
	}
	corpus_free(c);
	return 0;
}
