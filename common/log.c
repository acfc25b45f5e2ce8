/* SPDX-License-Identifier: MIT */
/* common/log.c -- one-line, thread-safe messages on stderr. */
#include "common.h"

#include <stdio.h>

int rlm_log_level = LOG_WARN;

static void vlog(int level, const char *fmt, va_list ap)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[2048];
	int n;
	if (level > rlm_log_level)
		return;
	n = snprintf(line, sizeof(line), "rlm: %s: ", names[level]);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	/* One fputs under the stdio lock keeps lines whole across threads. */
	flockfile(stderr);
	fputs(line, stderr);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void rlm_log(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

int log_fail(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(LOG_ERROR, fmt, ap);
	va_end(ap);
	return status;
}
