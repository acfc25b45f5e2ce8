/* SPDX-License-Identifier: MIT */
/* rlm/prompt.h -- prompt templates (the .txt files of prompts/,
 * embedded at build time)
 * and their rendering. A template is plain text with {{name}} placeholders;
 * "{{" followed by anything that is not a known name is an error, so a typo
 * in a template fails loudly instead of reaching a model. */
#ifndef RLM_PROMPT_H
#define RLM_PROMPT_H

#include <stddef.h>

#include "../common/common.h"

struct prompt_var {
	const char *name;
	const char *val; /* may be large; not NUL-terminated if len given */
	size_t len;
};

/* Render template text tmpl[0..tlen) with vars into out (appended).
 * Returns 0, RLM_EPARSE for an unknown or unterminated placeholder, or
 * RLM_ETOOBIG when out's cap is hit. */
int rlm_prompt_render_text(const char *tmpl, size_t tlen, const struct prompt_var *vars, size_t n,
		       struct buf *out, struct rlm_err *err);
/* Render the template `name` ("tree_leaf.txt"): from the override
 * directory when one is set and holds that file, else the embedded one. */
int rlm_prompt_render(const char *name, const struct prompt_var *vars, size_t n, struct buf *out,
		  struct rlm_err *err);

/* Take templates from dir (--prompts) before the embedded ones. Every
 * *.txt file in dir must be named like an embedded template, so a typo
 * fails here instead of being ignored. Call once at start, before any
 * render. Returns 0 or a negative code with err naming the problem. */
int rlm_prompt_set_dir(const char *dir, struct rlm_err *err);
/* The directory set by rlm_prompt_set_dir, or NULL (the built-in templates). */
const char *rlm_prompt_dir_in_use(void);

#endif
