/* SPDX-License-Identifier: MIT */
/* tests/fuzz_jsonl.c -- libFuzzer target: JSONL of any bytes (UTF-16 and
 * UTF-32 with a mark included) decodes or fails cleanly; what decodes keeps
 * the corpus invariants (documents in bounds, each followed by '\n', UTF-8
 * without NUL bytes; records without text: one valid JSON array, each
 * record valid JSON). The same bytes as text in every encoding the loaders
 * convert come out as valid UTF-8, replacing exactly the bytes that were
 * invalid. */
#include "../corpus/corpus_int.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode s[0..n) as text the way the loaders do: the plan, then UTF-8
 * repaired, or converted from what a mark or the encoding says. */
static void decode_text(const char *s, size_t n, const char *encoding)
{
	struct corpus__enc e;
	struct tbuf b;
	size_t replaced = 0, bad = SIZE_MAX;
	int rc;
	corpus__plan(s, n, encoding, &e);
	if (e.bom > n || (!e.from && e.bad != SIZE_MAX && e.bad >= n - e.bom))
		abort();
	corpus__tb_init(&b, 4 * n + 16, true);
	rc = corpus__decode(&e, s + e.bom, n - e.bom, false, &b, &replaced, &bad);
	if (rc)
		abort(); /* nothing but the cap can stop a lenient decode */
	if (b.len && !text_utf8_valid(b.p, b.len, NULL))
		abort();
	if (!e.from) {
		/* UTF-8: the bytes replaced are those that were invalid, and
		 * the output is the input where nothing was */
		if ((replaced == 0) != (e.bad == SIZE_MAX) || replaced > n - e.bom)
			abort();
		if (!replaced && (b.len != n - e.bom || (b.len && memcmp(b.p, s + e.bom, b.len) != 0)))
			abort();
	}
	/* strict stops at the first invalid byte, and only when there is one */
	corpus__tb_release(&b);
	corpus__tb_init(&b, 4 * n + 16, true);
	replaced = 0;
	rc = corpus__decode(&e, s + e.bom, n - e.bom, true, &b, &replaced, &bad);
	if (!e.from && (rc == RLM_EPARSE) != (e.bad != SIZE_MAX))
		abort();
	if (!e.from && rc == RLM_EPARSE && bad != e.bad)
		abort();
	if (rc && rc != RLM_EPARSE)
		abort();
	corpus__tb_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct corpus *c = NULL;
	struct rlm_err err;
	size_t end = 0;
	int rc;
	decode_text((const char *)data, size, NULL);
	decode_text((const char *)data, size, "UTF-16LE");
	decode_text((const char *)data, size, "cp1252");
	rc = corpus_from_jsonl_buf("fuzz.jsonl", (const char *)data, size, &c, &err);
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
	if (c->len > 3 * size + 3)
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
