/* SPDX-License-Identifier: MIT */
/* tests/fuzz_reply.c -- libFuzzer target: any bytes, as a root model's
 * reply, parse into blocks and a FINAL that lie inside the text, in
 * order, without overlapping, the same with python fences on or off for
 * ```repl blocks. */
#include "../rlm/reply.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *text, size_t len, bool python, bool cut, struct reply *r)
{
	size_t end = 0;
	rlm_reply_parse(text, len, python, cut, r);
	for (size_t i = 0; i < r->n_blocks; i++) {
		const struct reply_block *b = &r->blocks[i];
		/* In the text, in order, disjoint, a fence line before each. */
		if (b->off > len || b->len > len - b->off || b->off < end || b->off < 4)
			abort();
		/* Only the last block may be unterminated. */
		if (!b->closed && i + 1 != r->n_blocks)
			abort();
		/* A block starts a line. */
		if (text[b->off - 1] != '\n')
			abort();
		end = b->off + b->len;
	}
	if (r->final == REPLY_NO_FINAL) {
		if (r->final_off || r->final_len)
			abort();
	} else {
		if (r->final_off > len || r->final_len > len - r->final_off)
			abort();
		if (r->final == REPLY_FINAL_VAR && r->final_len == 0)
			abort();
		/* FINAL's text comes after its "FINAL(" and never from inside a
		 * block that runs. */
		if (r->final_off < 6)
			abort();
		for (size_t i = 0; i < r->n_blocks; i++)
			if (r->final_off >= r->blocks[i].off &&
			    r->final_off < r->blocks[i].off + r->blocks[i].len)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that reading past len is caught. */
	char *text = malloc(size ? size : 1);
	struct reply a, b, c;
	if (size)
		memcpy(text, data, size);
	check(text, size, false, true, &a);
	check(text, size, true, true, &b);
	check(text, size, false, false, &c);
	/* Not cut, an unterminated block keeps its last line: never fewer
	 * blocks. */
	if (c.n_blocks < a.n_blocks || c.n_blocks > a.n_blocks + 1)
		abort();
	rlm_reply_release(&c);
	/* Python fences on only turn skipped fences into blocks (or into
	 * nothing, when unterminated and empty): fences keep their extent. */
	if (b.n_blocks < a.n_blocks || b.n_blocks + b.other_fences > a.n_blocks + a.other_fences)
		abort();
	rlm_reply_release(&a);
	rlm_reply_release(&b);
	free(text);
	return 0;
}
