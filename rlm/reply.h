/* SPDX-License-Identifier: MIT */
/* rlm/reply.h -- reading a root model's reply: the code blocks to run and
 * a FINAL(...) / FINAL_VAR(...) written in the text.
 *
 * DESIGN
 * A code block is a fence line starting with ``` (up to three spaces of
 * indentation) whose info string is `repl` (or `python` / `py` when
 * python fences are on), then lines up to a closing fence line of at
 * least as many backticks, or the end of the reply (an unterminated
 * block still runs; when the reply was cut off at the token limit, its
 * last line is dropped if the reply ended mid-line, since it is cut).
 * Fences of other languages are skipped whole, so a ``` inside them does
 * not open a block.
 *
 * FINAL(answer) and FINAL_VAR(name) count only outside every fence
 * (inside a fence they are code, which may call them). FINAL_VAR is
 * looked for first. The call must start a line (after blanks), as in the
 * paper-era reference; the first such line wins. FINAL's argument runs to
 * the matching close parenthesis, balanced, across lines, else to the last
 * ')' of the reply; one level of quotes around it is removed. FINAL_VAR's
 * argument is a name, quoted or not.
 */
#ifndef RLM_REPLY_H
#define RLM_REPLY_H

#include <stdbool.h>
#include <stddef.h>

struct reply_block {
	size_t off, len;   /* the code, in the reply text (no fence lines) */
	bool closed;       /* false: the reply ended inside the block */
};

enum reply_final { REPLY_NO_FINAL, REPLY_FINAL, REPLY_FINAL_VAR };

struct reply {
	struct reply_block *blocks; /* in order; owned */
	size_t n_blocks;
	size_t other_fences;        /* fenced blocks of other languages (not run) */
	enum reply_final final;
	size_t final_off, final_len; /* FINAL's answer or FINAL_VAR's name in the text */
};

/* Parse text[0..len). python: also run ```python / ```py blocks. cut: the
 * reply was cut off at the output token limit. Never fails; release with
 * rlm_reply_release. */
void rlm_reply_parse(const char *text, size_t len, bool python, bool cut, struct reply *out);
void rlm_reply_release(struct reply *r);

#endif
