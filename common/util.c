/* SPDX-License-Identifier: MIT */
/* common/util.c -- time, random numbers, number parsing, URLs without their
 * credentials. */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int64_t time_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t time_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void time_sleep_ns(int64_t ns)
{
	struct timespec ts;
	if (ns <= 0)
		return;
	ts.tv_sec = ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t rng_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Lemire's nearly divisionless method would do; rejection is simpler. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
	do
		x = rng_next(r);
	while (x >= lim);
	return x % n;
}

double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

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
