/* SPDX-License-Identifier: MIT */
/* common/buf.c -- growable, NUL-terminated buffer with a hard size cap. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What p points at while nothing is allocated: "", never written. */
char buf_slopbuf[1];

void buf_init(struct buf *b, size_t max)
{
	b->p = buf_slopbuf;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

int buf_reserve(struct buf *b, size_t n)
{
	size_t max = b->max ? b->max : SIZE_MAX - 1;
	size_t need, cap;
	if (n > max || b->len > max - n)
		return RLM_ETOOBIG;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	/* nothing allocated yet (cap 0): p is buf_slopbuf, or NULL in a
	 * buffer that was only zeroed */
	b->p = b->cap ? xrealloc(b->p, cap) : xmalloc(cap);
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *s, size_t n)
{
	int rc = buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n, rc;
	char small[256];
	va_copy(aq, ap);
	n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	if (n < 0)
		return RLM_EINVAL;
	if ((size_t)n < sizeof(small))
		return buf_append(b, small, (size_t)n);
	rc = buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->p[0] = '\0';
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->p);
	b->p = buf_slopbuf;
	b->len = 0;
	b->cap = 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->cap ? b->p : xstrdup("");
	if (len)
		*len = b->len;
	b->p = buf_slopbuf;
	b->len = 0;
	b->cap = 0;
	return p;
}
