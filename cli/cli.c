/* SPDX-License-Identifier: MIT */
/* cli/cli.c -- small helpers shared by the commands. */
#include "cli.h"
#include "cliopt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

/* Parse arg as row t says: 0 with *out, or RLM_EINVAL when it does not
 * parse or lies outside [t->min, t->max]. */
static int num_parse(const struct cli_num *t, const char *arg, long *l, double *d, uint64_t *u)
{
	switch (t->kind) {
	case CLI_LONG:
	case CLI_INT:
		return text_parse_int(arg, (long)t->min, (long)t->max, l);
	case CLI_DOUBLE:
	case CLI_SECS:
		return text_parse_double(arg, t->min, t->max, d);
	case CLI_COUNT:
		if (text_parse_count(arg, u) || *u < (uint64_t)t->min || *u > (uint64_t)t->max)
			return RLM_EINVAL;
		return 0;
	case CLI_SIZE:
		if (text_parse_size(arg, u) || *u < (uint64_t)t->min || *u > (uint64_t)t->max)
			return RLM_EINVAL;
		return 0;
	}
	return RLM_EINVAL;
}

int cli_num_take(const struct cli_num *t, size_t n, void *args, int opt, const char *arg)
{
	const struct cli_num *row = NULL;
	char *field;
	uint64_t u = 0;
	double d = 0;
	long l = 0;
	for (size_t i = 0; i < n && !row; i++)
		if (t[i].opt == opt)
			row = &t[i];
	if (!row)
		return 0;
	if (num_parse(row, arg, &l, &d, &u)) {
		if (row->want)
			return log_fail(2, "bad value '%s' for --%s: %s", arg, row->name,
					row->want);
		return log_fail(2, "bad value '%s' for --%s: want %ld..%ld", arg, row->name,
				(long)row->min, (long)row->max);
	}
	field = (char *)args + row->off;
	switch (row->kind) {
	case CLI_LONG:
		*(long *)(void *)field = l;
		break;
	case CLI_INT:
		*(int *)(void *)field = (int)l;
		break;
	case CLI_DOUBLE:
		*(double *)(void *)field = d;
		break;
	case CLI_SECS:
		*(int64_t *)(void *)field = (int64_t)(d * 1e9);
		break;
	case CLI_COUNT:
	case CLI_SIZE:
		*(size_t *)(void *)field = (size_t)u;
		break;
	}
	return 1;
}

/* ---- text from outside on the operator's terminal ---- */

bool cli_raw_output;

bool cli_term_escapes(FILE *f)
{
	return !cli_raw_output && isatty(fileno(f));
}

void cli_term_write(FILE *f, const char *s, size_t n, int flags)
{
	struct buf b = BUF_INIT;
	if (!cli_term_escapes(f) || text_term_safe(s, n)) {
		fwrite(s, 1, n, f);
		return;
	}
	text_term_escape(&b, s, n, flags); /* uncapped: cannot fail */
	fwrite(b.p, 1, b.len, f);
	buf_release(&b);
}

void cli_term_printf(FILE *f, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	if (!cli_term_escapes(f)) {
		vfprintf(f, fmt, ap);
		va_end(ap);
		return;
	}
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	cli_term_write(f, b.p, b.len, 0);
	buf_release(&b);
}
