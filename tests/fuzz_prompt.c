/* SPDX-License-Identifier: MIT */
/* tests/fuzz_prompt.c -- libFuzzer target: prompt templates of any bytes
 * render or fail cleanly; splitting any text at any part size covers it
 * exactly with valid UTF-8 parts when the text is valid UTF-8. */
#include "../rlm/prompt.h"
#include "../rlm/rlm.h"
#include "../common/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prompt_var vars[2] = {{"question", "Q", 0}, {"text", "T", 0}};
	struct buf out;
	struct rlm_err err;
	buf_init(&out, 1 << 20);
	rlm_prompt_render_text((const char *)data, size, vars, 2, &out, &err);
	buf_release(&out);

	if (size > 1 && text_utf8_valid((const char *)data + 1, size - 1, NULL)) {
		struct corpus *c = corpus_from_text((const char *)data + 1, size - 1);
		struct rlm_span *parts;
		size_t max = 64 + data[0] * 4, total = 0;
		size_t n = rlm_split(c, max, &parts);
		for (size_t i = 0; i < n; i++) {
			if (parts[i].off != total || parts[i].len > max ||
			    !text_utf8_valid(c->buf + parts[i].off, parts[i].len, NULL))
				abort();
			total += parts[i].len;
		}
		free(parts);
		corpus_free(c);
	}
	return 0;
}
