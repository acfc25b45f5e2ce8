/* SPDX-License-Identifier: MIT */
/* common/text.c -- UTF-8 sequences and code points, trimming, numbers,
 * sizes and durations for people, what a NONE reply is, parsing numbers
 * and sizes, text made safe for a terminal, URLs without their
 * credentials (contracts in text.h). */
#include "text.h"
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- UTF-8 ---- */

/* The well-formed non-ASCII sequence at s[0..n): its length with the code
 * point in *cp, or 0. The one decoder the functions below share. */
static inline size_t decode_wide(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned c = s[0];
	uint32_t v;
	size_t k;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, v = c & 0x07;
	else
		return 0; /* ASCII, a continuation byte, C0, C1, F5..FF */
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if (!text_utf8_is_cont(s[i]))
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	/* 2-byte overlongs are the lead bytes C0 and C1, refused above. */
	if ((k == 3 && v < 0x800) || (k == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return k;
}

size_t text_utf8_decode(const char *str, size_t n, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	return decode_wide(s, n, cp);
}

size_t text_utf8_seq_len(const char *s, size_t n)
{
	uint32_t cp;
	return text_utf8_decode(s, n, &cp);
}

bool text_utf8_valid(const char *str, size_t len, size_t *bad)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, k;
	uint32_t cp;
	while (i < len) {
		/* Fast path over ASCII, eight bytes at a time. */
		if (s[i] < 0x80) {
			i++;
			while (i + 8 <= len) {
				uint64_t w;
				memcpy(&w, s + i, 8);
				if (w & 0x8080808080808080ULL)
					break;
				i += 8;
			}
			continue;
		}
		if (!(k = decode_wide(s + i, len - i, &cp))) {
			if (bad)
				*bad = i;
			return false;
		}
		i += k;
	}
	return true;
}

size_t text_utf8_floor(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = len, back = 0;
	unsigned c;
	size_t need;
	/* Step back over continuation bytes to the lead byte, at most 3. */
	while (i > 0 && back < 4 && text_utf8_is_cont(s[i - 1])) {
		i--;
		back++;
	}
	if (i == 0)
		return len == back ? 0 : len;
	c = s[i - 1];
	if (c < 0x80)
		return len; /* trailing continuation bytes are stray; keep */
	need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	if (back >= need)
		return len;
	return i - 1;
}

size_t text_utf8_count(const char *s, size_t len)
{
	size_t i = 0, cont = 0;
	/* eight bytes at a time: a continuation byte (10xxxxxx) has its top
	 * bit set and the next one clear; the flags summed by a multiply */
	for (; i + 8 <= len; i += 8) {
		uint64_t w, x;
		memcpy(&w, s + i, 8);
		x = (w & ~(w << 1) & 0x8080808080808080ULL) >> 7;
		cont += (size_t)((x * 0x0101010101010101ULL) >> 56);
	}
	for (; i < len; i++)
		cont += text_utf8_is_cont(s[i]);
	return len - cont;
}

size_t text_utf8_offset(const char *s, size_t len, size_t n)
{
	for (size_t i = 0; i < len; i++) {
		if (text_utf8_is_cont(s[i]))
			continue;
		if (n == 0)
			return i;
		n--;
	}
	return len;
}

/* ---- white space ---- */

bool text_is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!text_is_space(s[i]))
			return false;
	return true;
}

void text_trim(const char **s, size_t *n)
{
	while (*n && text_is_space(**s))
		(*s)++, (*n)--;
	while (*n && text_is_space((*s)[*n - 1]))
		(*n)--;
}

/* ---- numbers for people ---- */

char *text_fmt_count(char *buf, size_t n, int64_t v)
{
	char digits[32], *p = buf, *end = buf + n - 1;
	int len;
	if (v < 0 && p < end) {
		*p++ = '-';
		v = v == INT64_MIN ? INT64_MAX : -v;
	}
	len = snprintf(digits, sizeof(digits), "%lld", (long long)v);
	for (int i = 0; i < len && p < end; i++) {
		if (i && (len - i) % 3 == 0)
			*p++ = ',';
		if (p < end)
			*p++ = digits[i];
	}
	*p = '\0';
	return buf;
}

char *text_fmt_size(char *buf, size_t n, uint64_t v)
{
	static const char units[] = "GMK";
	for (int u = 0; v && u < 3; u++) {
		uint64_t unit = (uint64_t)1 << (10 * (3 - u));
		if (v % unit == 0) {
			snprintf(buf, n, "%llu%c", (unsigned long long)(v / unit), units[u]);
			return buf;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

/* ---- NONE ---- */

/* What may stand around the word: quotes and Markdown emphasis. */
static bool none_wrap(char c)
{
	return c == '\'' || c == '"' || c == '`' || c == '*' || text_is_space(c);
}

bool text_is_none(const char *s, size_t n)
{
	bool period = false;
	while (n && none_wrap(*s))
		s++, n--;
	while (n) {
		char c = s[n - 1];
		if (none_wrap(c))
			n--;
		else if (c == '.' && !period)
			period = true, n--;
		else
			break;
	}
	return n == 4 && text_to_lower(s[0]) == 'n' && text_to_lower(s[1]) == 'o' &&
	       text_to_lower(s[2]) == 'n' && text_to_lower(s[3]) == 'e';
}

char *text_fmt_duration(char *buf, size_t n, int64_t ns)
{
	if (ns < 1000000000LL)
		snprintf(buf, n, "%lld ms", (long long)(ns / 1000000));
	else if (ns % 1000000000LL == 0)
		snprintf(buf, n, "%lld s", (long long)(ns / 1000000000LL));
	else
		snprintf(buf, n, "%.1f s", (double)ns / 1e9);
	return buf;
}

int text_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *p = s, *u;
	uint64_t whole = 0, mul = 1;
	long double frac = 0, scale = 1, v;
	/* Plain decimal only: strtod would take "0x10", "1e3", " 2", "inf". */
	if (!s || !text_is_digit(*p))
		return RLM_EINVAL;
	for (; text_is_digit(*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return RLM_EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		if (!text_is_digit(*++p))
			return RLM_EINVAL;
		for (; text_is_digit(*p); p++) {
			scale /= 10;
			frac += (*p - '0') * scale;
		}
	}
	if (*p && (u = strchr(units, text_to_upper(*p)))) {
		mul = (uint64_t)1 << (10 * (u - units + 1));
		p++;
		if (strcasecmp(p, "b") == 0 || strcasecmp(p, "ib") == 0)
			p += strlen(p);
	} else if (strcasecmp(p, "b") == 0) {
		p++;
	}
	if (*p)
		return RLM_EINVAL;
	v = ((long double)whole + frac) * (long double)mul;
	if (v > 9e18L)
		return RLM_EINVAL;
	*out = (uint64_t)llroundl(v);
	return 0;
}

/* ---- parsing numbers; URLs without their credentials ---- */

int text_parse_count(const char *s, uint64_t *out)
{
	char *end;
	double v, mul = 1;
	if (!s || !*s)
		return RLM_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return RLM_EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mul = 1e3; end++; break;
	case 'm': case 'M': mul = 1e6; end++; break;
	case 'g': case 'G': mul = 1e9; end++; break;
	default: return RLM_EINVAL;
	}
	if (*end)
		return RLM_EINVAL;
	v *= mul;
	if (v > 1e18)
		return RLM_EINVAL;
	*out = (uint64_t)llround(v);
	return 0;
}

int text_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;
	if (!s || !*s)
		return RLM_EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return RLM_EINVAL;
	*out = v;
	return 0;
}

int text_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;
	if (!s || !*s)
		return RLM_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return RLM_EINVAL;
	*out = v;
	return 0;
}

/* ---- text for a terminal ---- */

/* How many bytes at the start of s[0..n) a terminal shows as they are
 * (text_term_escape's list); the byte after them needs an escape. */
static size_t term_plain_run(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		uint32_t cp;
		size_t k;
		if (c >= 0x20 && c < 0x7f) {
			i++;
			continue;
		}
		if (c == '\n' || c == '\t' || (c == '\r' && i + 1 < n && s[i + 1] == '\n')) {
			i++;
			continue;
		}
		if (c < 0x80 || !(k = decode_wide(s + i, n - i, &cp)) || cp < 0xa0)
			break;
		i += k;
	}
	return i;
}

bool text_term_safe(const char *s, size_t n)
{
	return term_plain_run((const unsigned char *)s, n) == n;
}

int text_term_escape(struct buf *b, const char *str, size_t n, int flags)
{
	const unsigned char *s = (const unsigned char *)str;
	bool json = flags & TEXT_TERM_JSON;
	size_t i = 0;
	int rc;
	while (i < n) {
		size_t run = term_plain_run(s + i, n - i), k;
		uint32_t cp;
		if (run && (rc = buf_append(b, s + i, run)))
			return rc;
		i += run;
		if (i == n)
			break;
		/* s[i] starts a control or an ill-formed sequence. */
		if (s[i] >= 0x80 && (k = decode_wide(s + i, n - i, &cp)) != 0) {
			rc = buf_printf(b, "\\u%04x", (unsigned)cp); /* C1 */
			i += k;
		} else if (s[i] == '\r' && !json) {
			rc = buf_puts(b, "\\r");
			i++;
		} else {
			rc = buf_printf(b, json && s[i] < 0x80 ? "\\u%04x" : "\\x%02x", s[i]);
			i++;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- URLs ---- */

static char *url_strip_userinfo(const char *s);

/* Does a query parameter named name[0..n) look like it holds a secret? */
static bool secret_param(const char *name, size_t n)
{
	static const char *const words[] = {"key",  "token", "secret", "password", "passwd",
					    "auth", "sig",   "credential"};
	for (size_t w = 0; w < ARRAY_SIZE(words); w++) {
		size_t k = strlen(words[w]);
		for (size_t i = 0; i + k <= n; i++)
			if (strncasecmp(name + i, words[w], k) == 0)
				return true;
	}
	return false;
}

/* The query parameters of the URLs in s whose names look secret, with
 * their values replaced by REDACTED; s is freed. */
static char *redact_queries(char *s)
{
	struct buf b = BUF_INIT;
	const char *p = s;
	bool query = false;
	while (*p) {
		size_t name, val;
		if (!query) {
			/* the next '?' that ends the path of a URL: the text
			 * since the last separator holds "://" */
			const char *q = p + strcspn(p, "?"), *seg = q;
			while (seg > s && !strchr(", \t", seg[-1]))
				seg--;
			buf_append(&b, p, (size_t)(q - p));
			if (!*q)
				break;
			buf_append(&b, "?", 1);
			p = q + 1;
			query = memmem(seg, (size_t)(q - seg), "://", 3) != NULL;
			continue;
		}
		/* one parameter: name[=value], up to '&', or the end of the
		 * query (a fragment, the next URL of a list) */
		name = strcspn(p, "=&#, \t");
		buf_append(&b, p, name);
		p += name;
		if (*p == '=') {
			val = strcspn(p + 1, "&#, \t");
			if (secret_param(p - name, name))
				buf_puts(&b, "=REDACTED");
			else
				buf_append(&b, p, val + 1);
			p += val + 1;
		}
		if (*p == '&') {
			buf_append(&b, "&", 1);
			p++;
		} else {
			query = false;
		}
	}
	free(s);
	return buf_detach(&b, NULL);
}

char *text_url_without_userinfo(const char *s)
{
	return redact_queries(url_strip_userinfo(s));
}

static char *url_strip_userinfo(const char *s)
{
	char *out = xmalloc(strlen(s) + 1), *o = out;
	while (*s) {
		const char *sep = strstr(s, "://"), *end, *at = NULL;
		if (!sep) {
			strcpy(o, s);
			return out;
		}
		sep += 3;
		memcpy(o, s, (size_t)(sep - s));
		o += sep - s;
		/* The authority ends at the path, query, fragment or the next
		 * URL of a list; its last '@' ends the userinfo. */
		end = sep + strcspn(sep, "/?#, \t");
		for (const char *p = sep; p < end; p++)
			if (*p == '@')
				at = p;
		s = at ? at + 1 : sep;
	}
	*o = 0;
	return out;
}
