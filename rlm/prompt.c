/* SPDX-License-Identifier: MIT */
/* rlm/prompt.c -- rendering of {{name}} prompt templates. */
#include "prompt.h"
#include "../common/embed.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TEMPLATE_MAX (1 << 20)

static char *prompt_dir;

int rlm_prompt_render_text(const char *tmpl, size_t tlen, const struct prompt_var *vars, size_t n,
		       struct buf *out, struct rlm_err *err)
{
	size_t i = 0;
	while (i < tlen) {
		const char *open = memmem(tmpl + i, tlen - i, "{{", 2), *close;
		size_t name_len, k;
		if (!open)
			break;
		if (buf_append(out, tmpl + i, (size_t)(open - (tmpl + i))))
			return rlm_err_set(err, RLM_ETOOBIG, "rendered prompt is too large");
		close = memmem(open + 2, tlen - (size_t)(open + 2 - tmpl), "}}", 2);
		if (!close)
			return rlm_err_set(err, RLM_EPARSE, "unterminated '{{' at byte %zu of template",
					   (size_t)(open - tmpl));
		name_len = (size_t)(close - (open + 2));
		for (k = 0; k < n; k++)
			if (strlen(vars[k].name) == name_len &&
			    memcmp(vars[k].name, open + 2, name_len) == 0)
				break;
		if (k == n)
			return rlm_err_set(err, RLM_EPARSE, "unknown placeholder '{{%.*s}}' in template",
					   (int)RLM_MIN(name_len, (size_t)64), open + 2);
		if (buf_append(out, vars[k].val, vars[k].len ? vars[k].len : strlen(vars[k].val)))
			return rlm_err_set(err, RLM_ETOOBIG, "rendered prompt is too large");
		i = (size_t)(close + 2 - tmpl);
	}
	if (i < tlen && buf_append(out, tmpl + i, tlen - i))
		return rlm_err_set(err, RLM_ETOOBIG, "rendered prompt is too large");
	/* Templates end with a newline for the editor's sake, not the model's. */
	while (out->len && (out->p[out->len - 1] == '\n'))
		out->p[--out->len] = '\0';
	return 0;
}

int rlm_prompt_render(const char *name, const struct prompt_var *vars, size_t n, struct buf *out,
		  struct rlm_err *err)
{
	const struct embedded_file *f = embed_find(name);
	if (!f)
		return rlm_err_set(err, RLM_ENOTFOUND, "no prompt template '%s'", name);
	if (prompt_dir) {
		char *path = xasprintf("%s/%s", prompt_dir, name), *text;
		size_t len;
		int rc = file_read(path, TEMPLATE_MAX, &text, &len, err);
		free(path);
		if (rc == 0) {
			rc = rlm_prompt_render_text(text, len, vars, n, out, err);
			if (rc)
				rlm_err_prefix(err, "%s/%s", prompt_dir, name);
			free(text);
			return rc;
		}
		if (rc != -ENOENT)
			return rc;
		rlm_err_clear(err);
	}
	return rlm_prompt_render_text(f->data, f->len, vars, n, out, err);
}

int rlm_prompt_set_dir(const char *dir, struct rlm_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return rlm_err_set(err, -errno, "cannot open prompt directory '%s': %s", dir,
				   strerror(errno));
	while (!rc && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".txt") == 0 && !embed_find(e->d_name))
			rc = rlm_err_set(err, RLM_EINVAL,
					 "'%s/%s' is not a known prompt template (known: "
					 "repl_system.txt, repl_first.txt, repl_next.txt, "
					 "repl_nocode.txt, repl_last.txt, repl_compact.txt, "
					 "tree_leaf.txt, tree_combine.txt)",
					 dir, e->d_name);
	}
	closedir(d);
	if (!rc) {
		free(prompt_dir);
		prompt_dir = xstrdup(dir);
	}
	return rc;
}

const char *rlm_prompt_dir_in_use(void)
{
	return prompt_dir;
}
