/* SPDX-License-Identifier: MIT */
/* tests/fuzz_jsonl.c -- libFuzzer target: JSONL of any bytes decodes or
 * fails cleanly; what decodes keeps the corpus invariants (documents in
 * bounds, each followed by '\n', UTF-8 without NUL bytes; records without
 * text: one valid JSON array, each record valid JSON). */
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
	size_t end = 0;
	int rc = corpus_from_jsonl_buf("fuzz.jsonl", (const char *)data, size, &c, &err);
	if (rc) {
		if (c || err.code != rc || !err.msg[0])
			abort();
		return 0;
	}
	if (!c || c->n_docs == 0 || c->kind != CORPUS_JSONL)
		abort();
	if (c->json) {
		/* records without text: one JSON array of them */
		if (!corpus__json_valid(c->buf, c->len) || c->buf[0] != '[')
			abort();
		for (size_t i = 0; i < c->n_docs; i++)
			if (c->docs[i].off > c->len || c->docs[i].len > c->len - c->docs[i].off ||
			    !corpus__json_valid(c->buf + c->docs[i].off, c->docs[i].len))
				abort();
		corpus_free(c);
		return 0;
	}
	if (c->len > size)
		abort();
	for (size_t i = 0; i < c->n_docs; i++) {
		const struct corpus_doc *d = &c->docs[i];
		if (d->off != end || d->off + d->len >= c->len || c->buf[d->off + d->len] != '\n')
			abort();
		if (memchr(c->buf + d->off, 0, d->len) ||
		    !text_utf8_valid(c->buf + d->off, d->len, NULL))
			abort();
		if (d->id && !text_utf8_valid(d->id, strlen(d->id), NULL))
			abort();
		end = d->off + d->len + 1;
	}
	if (end != c->len)
		abort();
	corpus_free(c);
	return 0;
}
