/* SPDX-License-Identifier: MIT */
/* common/log.c -- one-line, thread-safe messages on stderr. */
#include "common.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	/* A message can quote what came from outside (a provider's error
	 * body, a request's URL, a file name): at a terminal its controls
	 * are shown escaped, never acted on. */
	if (!text_term_safe(line, strlen(line)) && isatty(2)) {
		struct buf b = BUF_INIT;
		text_term_escape(&b, line, strlen(line), 0);
		snprintf(line, sizeof(line), "%s", b.p);
		line[text_utf8_floor(line, strlen(line))] = '\0'; /* cut whole */
		buf_release(&b);
	}
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
