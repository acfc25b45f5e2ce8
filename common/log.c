/* SPDX-License-Identifier: MIT */
/* common/log.c -- one-line, thread-safe messages on stderr. */
#include "common.h"

#include <stdio.h>

int rlm_log_level = LOG_WARN;

void rlm_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[2048];
	int n;
	va_list ap;
	if (level > rlm_log_level)
		return;
	n = snprintf(line, sizeof(line), "rlm: %s: ", names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	/* One fputs under the stdio lock keeps lines whole across threads. */
	flockfile(stderr);
	fputs(line, stderr);
	fputc('\n', stderr);
	funlockfile(stderr);
}
