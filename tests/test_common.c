/* SPDX-License-Identifier: MIT */
/* tests/test_common.c -- buffers, errors, text helpers (UTF-8, character
 * classes, trimming, numbers for people, NONE, text for a terminal),
 * number parsing, URLs, random
 * numbers, JSON helpers, TCP plumbing (net_), the HTTP server pieces
 * (httpd_). */
#include "harness.h"
#include "../common/common.h"
#include "../common/httpd.h"
#include "../common/json.h"
#include "../common/net.h"
#include "../common/text.h"

#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

TEST(buf_grows_and_caps)
{
	struct buf b;
	char *s;
	size_t len;
	buf_init(&b, 10);
	CHECK_INT(buf_puts(&b, "hello"), 0);
	CHECK_INT(buf_printf(&b, "%d", 1234), 0);
	CHECK_STR(b.p, "hello1234");
	CHECK_INT(buf_puts(&b, "xy"), RLM_ETOOBIG);
	CHECK_STR(b.p, "hello1234"); /* unchanged on failure */
	CHECK_INT(buf_putc(&b, '!'), 0);
	CHECK_INT(b.len, 10);
	s = buf_detach(&b, &len);
	CHECK_STR(s, "hello1234!");
	CHECK_INT(len, 10);
	CHECK(b.p && !b.p[0] && b.len == 0 && b.cap == 0); /* "" again, nothing held */
	free(s);
	s = buf_detach(&b, NULL);
	CHECK_STR(s, "");
	free(s);
}

TEST(buf_printf_long)
{
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; i < 100; i++)
		CHECK_INT(buf_printf(&b, "%0300d", i), 0);
	CHECK_INT(b.len, 30000);
	buf_release(&b);
}

TEST(err_set_and_prefix)
{
	struct rlm_err e = {0, ""};
	CHECK_INT(rlm_err_set(&e, RLM_EINVAL, "bad '%s'", "x"), RLM_EINVAL);
	CHECK_STR(e.msg, "bad 'x'");
	rlm_err_prefix(&e, "loading %d", 3);
	CHECK_STR(e.msg, "loading 3: bad 'x'");
	CHECK_INT(rlm_err_set(NULL, RLM_EIO, "ignored"), RLM_EIO);
	CHECK_STR(rlm_strerror(RLM_ETOOBIG), "too large");
	CHECK_STR(rlm_strerror(-2), "No such file or directory");
}

/* ---- text.h ---- */

/* A byte string with its length, NULs allowed: S("a\0b"). */
#define S(lit) lit, sizeof(lit) - 1

TEST(text_utf8_seq_len_table)
{
	static const struct {
		const char *s;
		size_t n;
		size_t len;  /* want; 0 for ill-formed */
		uint32_t cp; /* want when len > 0 */
	} cases[] = {
		{S(""), 0, 0},
		{S("A"), 1, 'A'},
		{S("\0"), 1, 0},
		{S("\x7f"), 1, 0x7f},
		{S("\xc2\x80"), 2, 0x80},		/* the smallest 2-byte */
		{S("\xc3\xa9"), 2, 0xe9},
		{S("\xdf\xbf"), 2, 0x7ff},
		{S("\xe0\xa0\x80"), 3, 0x800},		/* the smallest 3-byte */
		{S("\xe2\x82\xac"), 3, 0x20ac},
		{S("\xed\x9f\xbf"), 3, 0xd7ff},		/* just below the surrogates */
		{S("\xee\x80\x80"), 3, 0xe000},		/* just above them */
		{S("\xef\xbf\xbf"), 3, 0xffff},
		{S("\xf0\x90\x80\x80"), 4, 0x10000},	/* the smallest 4-byte */
		{S("\xf0\x9f\x98\x80"), 4, 0x1f600},
		{S("\xf4\x8f\xbf\xbf"), 4, 0x10ffff},	/* the largest */
		{S("\xc3\xa9xyz"), 2, 0xe9},		/* only the first counts */
		/* ill-formed */
		{S("\x80"), 0, 0},			/* stray continuation */
		{S("\xbf\xbf"), 0, 0},
		{S("\xc0\xaf"), 0, 0},			/* overlong '/' */
		{S("\xc1\xbf"), 0, 0},			/* overlong U+007F */
		{S("\xe0\x80\xaf"), 0, 0},		/* overlong, 3 bytes */
		{S("\xe0\x9f\xbf"), 0, 0},		/* overlong U+07FF */
		{S("\xf0\x80\x80\xaf"), 0, 0},		/* overlong, 4 bytes */
		{S("\xf0\x8f\xbf\xbf"), 0, 0},		/* overlong U+FFFF */
		{S("\xed\xa0\x80"), 0, 0},		/* surrogate U+D800 */
		{S("\xed\xbf\xbf"), 0, 0},		/* surrogate U+DFFF */
		{S("\xf4\x90\x80\x80"), 0, 0},		/* U+110000 */
		{S("\xf5\x80\x80\x80"), 0, 0},		/* lead byte past F4 */
		{S("\xf7\xbf\xbf\xbf"), 0, 0},
		{S("\xf8\x88\x80\x80\x80"), 0, 0},	/* old 5-byte form */
		{S("\xfc\x84\x80\x80\x80\x80"), 0, 0},	/* old 6-byte form */
		{S("\xfe"), 0, 0},
		{S("\xff"), 0, 0},
		{S("\xc3"), 0, 0},			/* truncated */
		{S("\xe2\x82"), 0, 0},
		{S("\xf0\x9f\x98"), 0, 0},
		{"\xe2\x82\xac", 2, 0, 0},		/* cut by n */
		{"\xf0\x9f\x98\x80", 3, 0, 0},
		{"\xc3\xa9", 1, 0, 0},
		{S("\xc3\x28"), 0, 0},			/* bad continuation */
		{S("\xe2\x28\xa1"), 0, 0},
		{S("\xe2\x82\x28"), 0, 0},
		{S("\xf0\x9f\x28\x80"), 0, 0},
		{S("\xf0\x9f\x98\x28"), 0, 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint32_t cp = 0xdeadbeef;
		bool ok;
		size_t got = text_utf8_seq_len(cases[i].s, cases[i].n);
		CHECK_MSG(got == cases[i].len, "case %zu: length %zu, want %zu", i, got,
			  cases[i].len);
		got = text_utf8_decode(cases[i].s, cases[i].n, &cp);
		CHECK_MSG(got == cases[i].len, "case %zu: decode length %zu", i, got);
		if (cases[i].len)
			CHECK_MSG(cp == cases[i].cp, "case %zu: U+%04X, want U+%04X", i,
				  (unsigned)cp, (unsigned)cases[i].cp);
		else
			CHECK_MSG(cp == 0xdeadbeef, "case %zu: cp written on failure", i);
		/* valid when the first sequence is and what follows it is */
		ok = cases[i].n == 0 ||
		     (cases[i].len && text_utf8_valid(cases[i].s + cases[i].len,
						      cases[i].n - cases[i].len, NULL));
		CHECK_MSG(text_utf8_valid(cases[i].s, cases[i].n, NULL) == ok,
			  "case %zu: text_utf8_valid disagrees", i);
	}
}

TEST(text_utf8_valid_table)
{
	static const struct {
		const char *s;
		size_t n;
		bool ok;
		size_t bad;
	} cases[] = {
		{S(""), true, 0},
		{S("plain ascii"), true, 0},
		{S("a\0b"), true, 0},			/* NUL is valid UTF-8 */
		{S("caf\xc3\xa9"), true, 0},
		{S("\xe2\x82\xac euro"), true, 0},
		{S("\xf0\x9f\x98\x80 emoji"), true, 0},
		{S("\xf4\x8f\xbf\xbf"), true, 0},
		{S("0123456789abcdef\xc3\xa9" "0123456789abcdef"), true, 0},
		{S("ab\xc3"), false, 2},		/* truncated */
		{S("ab\xe2\x82"), false, 2},
		{S("ab\xf0\x9f\x98"), false, 2},
		{S("ab\xc0\xaf"), false, 2},		/* overlong */
		{S("\xe0\x80\xaf"), false, 0},
		{S("xy\xf0\x80\x80\xaf"), false, 2},
		{S("\xed\xa0\x80"), false, 0},		/* surrogate */
		{S("ok \xed\xb0\x80"), false, 3},
		{S("x\xf4\x90\x80\x80"), false, 1},	/* above U+10FFFF */
		{S("x\xf5\x80\x80\x80"), false, 1},
		{S("abcdefghij\xff"), false, 10},	/* after the fast path */
		{S("abcdefgh\x80"), false, 8},		/* at the end of a word */
		{S("\x80"), false, 0},			/* stray continuation */
		{S("\xc3\xa9\x80"), false, 2},
		{S("\xc3\xa9\xe2\x28\xa1"), false, 2},	/* bad continuation */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t bad = 999;
		bool ok = text_utf8_valid(cases[i].s, cases[i].n, &bad);
		CHECK_MSG(ok == cases[i].ok, "case %zu", i);
		if (!ok)
			CHECK_MSG(bad == cases[i].bad, "case %zu: bad at %zu", i, bad);
		else
			CHECK_MSG(bad == 999, "case %zu: bad written on success", i);
		CHECK(text_utf8_valid(cases[i].s, cases[i].n, NULL) == cases[i].ok);
	}
}

TEST(text_utf8_floor_table)
{
	static const struct {
		const char *s;
		size_t len, want;
	} cases[] = {
		{"a\xc3\xa9\xe2\x82\xac", 6, 6}, /* a é € : 1 + 2 + 3 bytes */
		{"a\xc3\xa9\xe2\x82\xac", 5, 3},
		{"a\xc3\xa9\xe2\x82\xac", 4, 3},
		{"a\xc3\xa9\xe2\x82\xac", 3, 3},
		{"a\xc3\xa9\xe2\x82\xac", 2, 1},
		{"a\xc3\xa9\xe2\x82\xac", 1, 1},
		{"a\xc3\xa9\xe2\x82\xac", 0, 0},
		{"x\xf0\x9f\x98\x80", 5, 5},	 /* 4-byte */
		{"x\xf0\x9f\x98\x80", 4, 1},
		{"x\xf0\x9f\x98\x80", 3, 1},
		{"x\xf0\x9f\x98\x80", 2, 1},
		{"\xf0\x9f\x98\x80", 3, 0},
		{"abc", 3, 3},
		{"a\x80", 2, 2},		 /* a stray byte after ASCII is kept */
		{"\xe2\x82\xac\x80", 4, 4},	 /* and after a whole sequence */
		{"\x80\x80", 2, 0},		 /* continuation bytes alone */
		{"ab\xff", 3, 2},		 /* a lead byte with nothing after it */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t got = text_utf8_floor(cases[i].s, cases[i].len);
		CHECK_MSG(got == cases[i].want, "case %zu: %zu, want %zu", i, got, cases[i].want);
	}
}

TEST(text_utf8_count_and_offset)
{
	/* a é € 😀 z: 1 + 2 + 3 + 4 + 1 bytes */
	static const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
	static const size_t at[] = {0, 1, 3, 6, 10, 11, 11, 11};
	static const struct {
		const char *s;
		size_t n, chars;
	} counts[] = {
		{S(""), 0},
		{S("abc"), 3},
		{S("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"), 5},
		{S("a\0b"), 3},
		{S("\x80"), 0},	       /* a continuation byte alone counts for nothing */
		{S("\xc3"), 1},	       /* a lead byte alone for one */
		{S("\xff\xfe"), 2},
		{S("\xed\xa0\x80"), 1}, /* a surrogate's bytes for one */
	};
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++)
		CHECK_MSG(text_utf8_count(counts[i].s, counts[i].n) == counts[i].chars,
			  "case %zu: %zu", i, text_utf8_count(counts[i].s, counts[i].n));
	for (size_t n = 0; n < ARRAY_SIZE(at); n++)
		CHECK_MSG(text_utf8_offset(s, sizeof(s) - 1, n) == at[n], "char %zu at %zu", n,
			  text_utf8_offset(s, sizeof(s) - 1, n));
	CHECK_INT(text_utf8_offset("\x80\x80" "ab", 4, 0), 2); /* a character starts at 'a' */
	CHECK_INT(text_utf8_offset("", 0, 0), 0);
	CHECK(text_utf8_is_cont(0x80) && text_utf8_is_cont(0xbf) && text_utf8_is_cont((char)0x9f));
	CHECK(!text_utf8_is_cont('a') && !text_utf8_is_cont(0x7f) && !text_utf8_is_cont(0xc0) &&
	      !text_utf8_is_cont((char)0xe2) && !text_utf8_is_cont(0));
}

/* The word-at-a-time paths (text_utf8_count, json_put_str's runs of
 * plain ASCII) against a byte at a time, on bytes of every kind at every
 * alignment and length. */
TEST(word_at_a_time_matches_byte_at_a_time)
{
	static const unsigned char pick[] = {'a', 'Z', ' ', '~', '"', '\\', '\n', 0x01, 0x1f, 0x7f,
					     0x00, 0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0,
					     0xff, '!', '#', '[', ']'};
	struct rng g;
	char s[80];
	rng_seed(&g, 23);
	for (int round = 0; round < 4000; round++) {
		size_t n = (size_t)rng_below(&g, sizeof(s)), plain = rng_below(&g, 2), naive = 0;
		struct buf b = BUF_INIT;
		cJSON *j;
		for (size_t i = 0; i < n; i++)
			s[i] = (char)(plain && rng_below(&g, 8) ? 'a' + rng_below(&g, 26)
								 : pick[rng_below(&g, sizeof(pick))]);
		for (size_t i = 0; i < n; i++)
			naive += !text_utf8_is_cont(s[i]);
		CHECK_INT(text_utf8_count(s, n), naive);
		/* escaped and parsed back: the text, bad UTF-8 and NUL as U+FFFD */
		json_put_str(&b, s, n, JSON_STR_NUL_FFFD);
		j = json_parse(b.p, b.len);
		CHECK_MSG(cJSON_IsString(j), "round %d: not a JSON string: %s", round, b.p);
		if (cJSON_IsString(j)) {
			struct buf want = BUF_INIT;
			for (size_t i = 0; i < n;) {
				size_t k = s[i] ? text_utf8_seq_len(s + i, n - i) : 0;
				if (k) {
					buf_append(&want, s + i, k);
					i += k;
				} else {
					buf_append(&want, "\xef\xbf\xbd", 3);
					i++;
				}
			}
			CHECK_MSG(strcmp(j->valuestring, want.p) == 0, "round %d", round);
			buf_release(&want);
		}
		cJSON_Delete(j);
		buf_release(&b);
	}
}

TEST(text_classes_match_the_c_locale)
{
	/* every byte, as an unsigned char and as a (signed) char, and EOF:
	 * ASCII as <ctype.h> has it in the C locale, nothing above */
	for (int v = -1; v < 256; v++) {
		int c = v, sc = (char)v;
		bool ascii = v >= 0 && v < 0x80;
		CHECK_MSG(text_is_space(c) == (ascii && isspace(c)), "space %d", v);
		CHECK_MSG(text_is_digit(c) == (ascii && isdigit(c)), "digit %d", v);
		CHECK_MSG(text_is_alpha(c) == (ascii && isalpha(c)), "alpha %d", v);
		CHECK_MSG(text_is_alnum(c) == (ascii && isalnum(c)), "alnum %d", v);
		CHECK_MSG(text_to_lower(c) == (ascii ? tolower(c) : c), "lower %d", v);
		CHECK_MSG(text_to_upper(c) == (ascii ? toupper(c) : c), "upper %d", v);
		if (v >= 0x80) {
			CHECK_MSG(!text_is_space(sc) && !text_is_digit(sc) && !text_is_alpha(sc) &&
				      !text_is_alnum(sc),
				  "char %d is in a class", v);
			CHECK_MSG(text_to_lower(sc) == sc && text_to_upper(sc) == sc, "case %d", v);
		}
	}
}

TEST(text_trim_and_blank)
{
	static const struct {
		const char *s;
		size_t n;
		size_t off, len; /* want: what is left */
	} cases[] = {
		{S(""), 0, 0},
		{S(" \t\r\n\v\f"), 6, 0},
		{S("a"), 0, 1},
		{S("  a b  "), 2, 3},
		{S("\n\nline\r\n"), 2, 4},
		{S("\xc2\xa0x\xc2\xa0"), 0, 5}, /* U+00A0 is no ASCII space */
		{S("\0 x \0"), 0, 5},	       /* nor is NUL */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *s = cases[i].s;
		size_t n = cases[i].n;
		text_trim(&s, &n);
		CHECK_MSG(s == cases[i].s + cases[i].off && n == cases[i].len,
			  "case %zu: [%zu, +%zu)", i, (size_t)(s - cases[i].s), n);
		CHECK_MSG(text_is_blank(cases[i].s, cases[i].n) == (cases[i].len == 0),
			  "case %zu: blank", i);
	}
	CHECK(text_is_blank(NULL, 0));
	CHECK(text_is_blank("x", 0));
	CHECK(!text_is_blank("  x", 3));
}

TEST(text_fmt_count_table)
{
	static const struct {
		int64_t v;
		const char *want;
	} cases[] = {
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{1000, "1,000"},
		{12345, "12,345"},
		{123456, "123,456"},
		{1234567, "1,234,567"},
		{-1, "-1"},
		{-1234, "-1,234"},
		{-999999, "-999,999"},
		{INT64_MAX, "9,223,372,036,854,775,807"},
	};
	char buf[32], small[6];
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		CHECK(text_fmt_count(buf, sizeof(buf), cases[i].v) == buf);
		CHECK_STR(buf, cases[i].want);
	}
	/* cut to the buffer, never past it */
	CHECK_STR(text_fmt_count(small, sizeof(small), 1234567), "1,234");
	CHECK_STR(text_fmt_count(small, 1, 1234567), "");
	CHECK_STR(text_fmt_count(buf, sizeof(buf), INT64_MIN), "-9,223,372,036,854,775,807");
}

TEST(text_fmt_size_table)
{
	static const struct {
		uint64_t v;
		const char *want;
	} cases[] = {
		{0, "0"},
		{1, "1"},
		{1000, "1000"},
		{1023, "1023"},
		{1024, "1K"},
		{1536, "1536"},
		{64 << 10, "64K"},
		{(uint64_t)2 << 20, "2M"},
		{(uint64_t)512 << 20, "512M"},
		{((uint64_t)1 << 20) + 1024, "1025K"},
		{(uint64_t)1 << 30, "1G"},
		{(uint64_t)2 << 30, "2G"},
		{((uint64_t)1 << 30) + ((uint64_t)1 << 20), "1025M"},
		{(uint64_t)3 << 40, "3072G"},
		{UINT64_MAX, "18446744073709551615"},
	};
	char buf[32], small[3];
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		CHECK(text_fmt_size(buf, sizeof(buf), cases[i].v) == buf);
		CHECK_STR(buf, cases[i].want);
	}
	CHECK_STR(text_fmt_size(small, sizeof(small), (uint64_t)512 << 20), "51");
}

TEST(text_is_none_table)
{
	static const struct {
		const char *s;
		bool none;
	} cases[] = {
		{"NONE", true},
		{"none", true},
		{"None", true},
		{"nOnE", true},
		{"'NONE'", true},
		{"\"None\"", true},
		{"`none`", true},
		{"NONE.", true},
		{" none. ", true},
		{"\tNONE\r\n", true},
		{"'NONE'.", true},
		{"'NONE.'", true},
		{"\"NONE.\"\n", true},
		{"**NONE**", true},
		{"*none.*", true},
		{"", false},
		{"   ", false},
		{".", false},
		{"''", false},
		{"NONE of them", false},
		{"none found", false},
		{"no", false},
		{"non", false},
		{"nothing", false},
		{"NONE..", false},
		{"NONE...", false},
		{"NONE!", false},
		{"NONE?", false},
		{".NONE", false},
		{"NONEX", false},
		{"N0NE", false},
		{"NONE NONE", false},
		{"(NONE)", false},
		{"NONE\xc2\xa0", false}, /* U+00A0 is not white space here */
		{"\xc3\xb1one", false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK_MSG(text_is_none(cases[i].s, strlen(cases[i].s)) == cases[i].none,
			  "'%s' should %sbe NONE", cases[i].s, cases[i].none ? "" : "not ");
	/* the length counts, not the NUL */
	CHECK(text_is_none("NONE of them", 4));
	CHECK(!text_is_none("NONE", 3));
	CHECK(text_is_none("none\0x", 4));
	CHECK(!text_is_none("none\0x", 6));
}

#undef S

TEST(parse_numbers)
{
	uint64_t v;
	long l;
	double d;
	CHECK(text_parse_count("8k", &v) == 0 && v == 8000);
	CHECK(text_parse_count("1M", &v) == 0 && v == 1000000);
	CHECK(text_parse_count("1.5M", &v) == 0 && v == 1500000);
	CHECK(text_parse_count("10M", &v) == 0 && v == 10000000);
	CHECK(text_parse_count("42", &v) == 0 && v == 42);
	CHECK(text_parse_count("", &v) == RLM_EINVAL);
	CHECK(text_parse_count("1X", &v) == RLM_EINVAL);
	CHECK(text_parse_count("-3", &v) == RLM_EINVAL);
	CHECK(text_parse_count("k", &v) == RLM_EINVAL);
	CHECK(text_parse_int("12", 0, 100, &l) == 0 && l == 12);
	CHECK(text_parse_int("101", 0, 100, &l) == RLM_EINVAL);
	CHECK(text_parse_int("1e3", 0, 10000, &l) == RLM_EINVAL);
	CHECK(text_parse_double("0.5", 0, 1, &d) == 0 && d == 0.5);
	CHECK(text_parse_double("nan", 0, 1, &d) == RLM_EINVAL);
}

TEST(url_without_userinfo_table)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
	    {"http://user:pass@host/v1", "http://host/v1"},
	    {"https://sk-abc@host:443", "https://host:443"},
	    {"http://a:b@c@host/x@y?q=u@v#f@g", "http://host/x@y?q=u@v#f@g"},
	    {"http://u:p@h1/v1, https://h2/v1,http://x:y@h3", "http://h1/v1, https://h2/v1,http://h3"},
	    {"http://u:p@h?x", "http://h?x"},
	    {"http://@h/", "http://h/"},
	    {"no url here@all", "no url here@all"},
	    {"", ""},
	    {"://@", "://"},
	    /* query values that look secret */
	    {"https://gw/v1?api_key=sk-1&api-version=2024-10", "https://gw/v1?api_key=REDACTED&api-version=2024-10"},
	    {"https://gw/v1?x=1&Token=abc#frag", "https://gw/v1?x=1&Token=REDACTED#frag"},
	    {"http://a/v1?sig=s1,http://u:p@b/v1?key=k2&k", "http://a/v1?sig=REDACTED,http://b/v1?key=REDACTED&k"},
	    {"http://a/?key", "http://a/?key"},
	    {"no url?key=x", "no url?key=x"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = text_url_without_userinfo(cases[i].in);
		CHECK_MSG(strcmp(got, cases[i].want) == 0, "case %zu: '%s', want '%s'", i, got,
			  cases[i].want);
		free(got);
	}
}

/* What reaches a terminal: controls escaped, text and newlines kept. */
TEST(text_term_escape_table)
{
	static const struct {
		const char *in;
		size_t len; /* 0: strlen */
		int flags;
		const char *want;
	} cases[] = {
	    {"plain text\n\tindented\n", 0, 0, "plain text\n\tindented\n"},
	    {"", 0, 0, ""},
	    /* OSC 52: write the clipboard; OSC 0: the title; BEL and ST ends */
	    {"\x1b]52;c;cm0gLXJmIH4=\x07" "after", 0, 0, "\\x1b]52;c;cm0gLXJmIH4=\\x07after"},
	    {"\x1b]0;pwned\x1b\\", 0, 0, "\\x1b]0;pwned\\x1b\\"},
	    {"\x1b[2J\x1b[H", 0, 0, "\\x1b[2J\\x1b[H"},
	    /* a lone CR overwrites the line; CRLF ends one */
	    {"safe\rEVIL\r\n", 0, 0, "safe\\rEVIL\r\n"},
	    {"a\r", 0, 0, "a\\r"},
	    {"bs\b\x7f\x01", 0, 0, "bs\\x08\\x7f\\x01"},
	    {"nul\0x", 5, 0, "nul\\x00x"},
	    /* C1 in UTF-8: U+009B is CSI, U+0085 NEL; U+00A0 and up are text */
	    {"\xc2\x9b" "2J \xc2\x85 \xc2\x80\xc2\x9f", 0, 0, "\\u009b2J \\u0085 \\u0080\\u009f"},
	    {"\xc2\xa0 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0, 0,
	     "\xc2\xa0 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	    /* ill-formed UTF-8: each byte; a raw 0x9b is CSI to 8-bit terminals */
	    {"\x9b" "2J", 0, 0, "\\x9b2J"},
	    {"\xff\xfe ok", 0, 0, "\\xff\\xfe ok"},
	    {"\xc0\xaf", 0, 0, "\\xc0\\xaf"},             /* overlong '/' */
	    {"\xed\xa0\x80", 0, 0, "\\xed\\xa0\\x80"},     /* a surrogate */
	    {"cut \xe2\x82", 0, 0, "cut \\xe2\\x82"},      /* a sequence cut short */
	    {"\xc2", 0, 0, "\\xc2"},
	    /* backslashes stay */
	    {"C:\\x1b", 0, 0, "C:\\x1b"},
	    /* JSON text: controls as JSON escapes */
	    {"{\"a\":\"\x7f\xc2\x9b\"}\n", 0, TEXT_TERM_JSON, "{\"a\":\"\\u007f\\u009b\"}\n"},
	    {"\x1b\r", 0, TEXT_TERM_JSON, "\\u001b\\u000d"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct buf b = BUF_INIT;
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
		CHECK_INT(text_term_escape(&b, cases[i].in, len, cases[i].flags), 0);
		CHECK_MSG(strcmp(b.p, cases[i].want) == 0, "case %zu: '%s', want '%s'", i, b.p,
			  cases[i].want);
		CHECK_MSG(text_term_safe(cases[i].in, len) == (strcmp(b.p, cases[i].in) == 0 &&
								b.len == len),
			  "case %zu: text_term_safe", i);
		/* nothing a terminal acts on is left */
		for (size_t k = 0; k < b.len; k++) {
			unsigned char c = (unsigned char)b.p[k];
			CHECK_MSG(c >= 0x20 || c == '\n' || c == '\t' || (c == '\r' && b.p[k + 1] == '\n'),
				  "case %zu: byte 0x%02x at %zu", i, c, k);
			CHECK_MSG(c != 0x7f, "case %zu: DEL at %zu", i, k);
		}
		CHECK(text_utf8_valid(b.p, b.len, NULL));
		buf_release(&b);
	}
}

/* Every byte value, alone and after a lead byte: the result is always
 * valid UTF-8 without a control, and the cap is honoured. */
TEST(text_term_escape_all_bytes)
{
	struct buf b;
	char in[2];
	for (int c = 0; c < 256; c++) {
		for (int lead = 0; lead < 2; lead++) {
			size_t n = 0;
			if (lead)
				in[n++] = '\xc2';
			in[n++] = (char)c;
			buf_init(&b, 0);
			CHECK_INT(text_term_escape(&b, in, n, 0), 0);
			CHECK_MSG(text_utf8_valid(b.p, b.len, NULL), "byte 0x%02x", c);
			for (size_t k = 0; k < b.len; k++)
				CHECK_MSG((unsigned char)b.p[k] >= 0x20 || b.p[k] == '\n' || b.p[k] == '\t',
					  "byte 0x%02x (lead %d): 0x%02x left", c, lead,
					  (unsigned char)b.p[k]);
			CHECK_MSG(!memchr(b.p, 0x7f, b.len), "byte 0x%02x", c);
			buf_release(&b);
		}
	}
	buf_init(&b, 6);
	CHECK_INT(text_term_escape(&b, "ab\x1b\x1b", 4, 0), RLM_ETOOBIG);
	CHECK(b.len <= 6);
	buf_release(&b);
}

TEST(rng_is_seeded)
{
	struct rng a, b;
	rng_seed(&a, 7);
	rng_seed(&b, 7);
	for (int i = 0; i < 100; i++)
		CHECK(rng_next(&a) == rng_next(&b));
	for (int i = 0; i < 1000; i++) {
		double u = rng_unit(&a);
		CHECK(u >= 0 && u < 1);
		CHECK(rng_below(&a, 10) < 10);
	}
}

TEST(json_add_consumes)
{
	cJSON *o = cJSON_CreateObject();
	char *s;
	CHECK_INT(json_add_str(o, "a", "x\"y"), 0);
	CHECK_INT(json_add_num(o, "b", 3), 0);
	CHECK_INT(json_add_strn(o, "c", "abcdef", 3), 0);
	CHECK_INT(json_add(o, "d", NULL), RLM_EINVAL);
	CHECK_INT(json_add(NULL, "e", cJSON_CreateNumber(1)), RLM_EINVAL); /* freed, no leak */
	s = json_print(o);
	CHECK_STR(s, "{\"a\":\"x\\\"y\",\"b\":3,\"c\":\"abc\"}");
	free(s);
	CHECK_STR(json_str(o, "a"), "x\"y");
	CHECK(json_str(o, "b") == NULL);
	CHECK_INT(json_int(o, "b", -1), 3);
	CHECK_INT(json_int(o, "zz", -1), -1);
	cJSON_Delete(o);
}

TEST(json_parse_exact_length)
{
	cJSON *j = json_parse("{\"a\":1}  \n", 10);
	CHECK(j != NULL);
	cJSON_Delete(j);
	CHECK(json_parse("{\"a\":1} x", 9) == NULL);
	CHECK(json_parse("{\"a\":1", 6) == NULL);
	CHECK(json_parse("", 0) == NULL);
	/* a NUL byte before the end is no JSON; trailing ones end the text */
	CHECK(json_parse("{\"a\":\"b\0c\"}", 11) == NULL);
	CHECK(json_parse("{\"a\":1}\0 ", 9) == NULL);
	j = json_parse("{\"a\":\"bc\"}\0\0", 12);
	CHECK(j != NULL);
	CHECK_STR(json_str(j, "a"), "bc");
	cJSON_Delete(j);
}

TEST(json_nul_path_names_the_string)
{
	static const struct {
		const char *json;
		bool found;
		const char *path;
	} cases[] = {
	    {"{\"question\": \"a\\u0000b\", \"context\": \"x\"}", true, "question"},
	    {"{\"question\": \"ab\", \"context\": \"x\\u0000\"}", true, "context"},
	    {"{\"q\": \"a\\\\u0000 spelled out\"}", false, ""},
	    {"{\"q\": \"a\\\\\\u0000\"}", true, "q"},
	    {"{\"q\": \"\\u00000\"}", true, "q"},
	    {"{\"q\": \"\\u0001\", \"r\": \"\\u1000\"}", false, ""},
	    {"{\"documents\": [\"a\", \"b\", \"c\\u0000\"]}", true, "documents[2]"},
	    {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"user\", "
	     "\"content\": [{\"type\": \"text\", \"text\": \"\\u0000\"}]}]}",
	     true, "messages[1].content[0].text"},
	    {"{\"options\": {\"budgets\": {}, \"model\": \"m\\u0000\"}}", true, "options.model"},
	    {"{\"a\": {\"b\": 1}, \"c\": [1, {\"d\": [[], \"\\u0000\"]}]}", true, "c[1].d[1]"},
	    {"{\"ke\\u0000y\": 1}", true, "ke\\u0000y (a key)"},
	    {"\"\\u0000\"", true, ""},
	    {"[\"x\", \"\\u0000\"]", true, "[1]"},
	    {"{\"a\": \"}\\\"]\", \"b\": \"\\u0000\"}", true, "b"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char path[128];
		bool got;
		cJSON *j = json_parse(cases[i].json, strlen(cases[i].json));
		CHECK_MSG(j, "case %zu is not JSON: %s", i, cases[i].json);
		cJSON_Delete(j);
		got = json_nul_path(cases[i].json, strlen(cases[i].json), path, sizeof(path));
		CHECK_MSG(got == cases[i].found, "%s: %d", cases[i].json, got);
		CHECK_STR(path, cases[i].path);
	}
	{
		/* Deeper than the path holds, and a path cut to its buffer. */
		struct buf b = BUF_INIT;
		char small[8], path[256];
		const char *cut = "{\"abcdefghijkl\": \"\\u0000\"}";
		for (int i = 0; i < 40; i++)
			buf_puts(&b, "[");
		buf_puts(&b, "\"\\u0000\"");
		for (int i = 0; i < 40; i++)
			buf_puts(&b, "]");
		CHECK(json_nul_path(b.p, b.len, path, sizeof(path)));
		CHECK_CONTAINS(path, "[0][0]...");
		CHECK(json_nul_path(cut, strlen(cut), small, sizeof(small)));
		CHECK_STR(small, "abcdefg");
		buf_release(&b);
	}
}

/* ---- net ---- */

static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
	return v != 0;
}

/* Duplicate keys at any depth, the key and the object that holds it. */
TEST(json_find_duplicate_table)
{
	static const struct {
		const char *json;
		const char *key; /* NULL: none */
		const char *where;
	} cases[] = {
	    {"{\"question\":\"a\",\"question\":\"b\"}", "question", ""},
	    {"{\"question\":\"a\",\"context\":\"x\"}", NULL, ""},
	    {"{}", NULL, ""},
	    {"[1,2,{\"a\":1}]", NULL, ""},
	    {"\"s\"", NULL, ""},
	    {"{\"Question\":1,\"question\":2}", NULL, ""}, /* bytes: case counts */
	    {"{\"a\":1,\"b\":2,\"c\":3,\"b\":4,\"a\":5}", "b", ""},
	    {"{\"\":1,\"\":2}", "", ""},
	    {"{\"k\\u00e9\":1,\"k\xc3\xa9\":2}", "k\xc3\xa9", ""}, /* same key, two spellings */
	    {"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
	     "{\"role\":\"user\",\"content\":\"a\",\"content\":\"b\"}]}",
	     "content", "messages[1]"},
	    {"{\"rlm_context\":{\"documents\":[{\"text\":\"x\",\"id\":1,\"id\":2}]}}", "id",
	     "rlm_context.documents[0]"},
	    {"[[{\"x\":{\"y\":1,\"y\":1}}]]", "y", "[0][0].x"},
	    /* the same key in two objects is no duplicate */
	    {"{\"a\":{\"k\":1},\"b\":{\"k\":1},\"k\":{\"k\":{\"k\":1}}}", NULL, ""},
	    /* outer first */
	    {"{\"o\":{\"i\":1,\"i\":2},\"t\":1,\"t\":2}", "t", ""},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *j = json_parse(cases[i].json, strlen(cases[i].json));
		char where[64] = "junk";
		const cJSON *d;
		CHECK_MSG(j, "case %zu does not parse", i);
		d = json_find_duplicate(j, where, sizeof(where));
		if (!cases[i].key) {
			CHECK_MSG(!d, "case %zu: found '%s'", i, d->string);
		} else {
			CHECK_MSG(d && d->string && strcmp(d->string, cases[i].key) == 0,
				  "case %zu: found '%s', want '%s'", i, d ? d->string : "(none)",
				  cases[i].key);
			CHECK_MSG(strcmp(where, cases[i].where) == 0, "case %zu: where '%s', want '%s'",
				  i, where, cases[i].where);
		}
		if (strcmp(cases[i].json, "{\"a\":1,\"b\":2,\"c\":3,\"b\":4,\"a\":5}") == 0)
			CHECK(d && d->valueint == 4); /* the second occurrence itself */
		cJSON_Delete(j);
	}
	CHECK(!json_find_duplicate(NULL, NULL, 0));
	/* said for people: the key and where; a long key cut whole */
	{
		static const struct {
			const char *json, *want;
		} msgs[] = {
		    {"{\"question\":1,\"question\":2}", "duplicate key \"question\""},
		    {"{\"messages\":[{\"role\":1,\"role\":2}]}",
		     "duplicate key \"role\" in messages[0]"},
		    {NULL, NULL}, /* {"x":{"(50 e-acute)x":1,"(the same)":2}} */
		    {"{\"a\":1}", ""},
		};
		struct buf lk = BUF_INIT, body = BUF_INIT;
		for (int k = 0; k < 50; k++)
			buf_puts(&lk, "\xc3\xa9");
		buf_printf(&body, "{\"x\":{\"%sx\":1,\"%sx\":2}}", lk.p, lk.p);
		for (size_t i = 0; i < ARRAY_SIZE(msgs); i++) {
			const char *text = msgs[i].json ? msgs[i].json : body.p;
			cJSON *j = json_parse(text, strlen(text));
			char msg[256];
			bool dup;
			CHECK(j);
			dup = json_duplicate_msg(j, msg, sizeof(msg));
			CHECK_INT(dup, msgs[i].want == NULL || msgs[i].want[0]);
			if (msgs[i].want && msgs[i].want[0])
				CHECK_STR(msg, msgs[i].want);
			if (!msgs[i].want) { /* 50 e-acute: cut to 100 bytes, whole */
				CHECK(text_utf8_valid(msg, strlen(msg), NULL));
				CHECK_CONTAINS(msg, "...\" in x");
				CHECK(strlen(msg) < 140);
			}
			cJSON_Delete(j);
		}
		buf_release(&lk);
		buf_release(&body);
	}
}

/* Objects of every size around the pairwise limit, the repeat anywhere;
 * 100k keys and a deep path stay fast and cut to the buffer. */
TEST(json_find_duplicate_large)
{
	struct buf b = BUF_INIT;
	char where[32];
	for (int n = 2; n <= 40; n++) {
		for (int dup = 0; dup < n; dup++) {
			cJSON *j;
			const cJSON *d;
			buf_reset(&b);
			buf_putc(&b, '{');
			for (int k = 0; k < n; k++)
				buf_printf(&b, "%s\"k%d\":%d", k ? "," : "", k == dup && dup ? 0 : k, k);
			buf_putc(&b, '}');
			j = json_parse(b.p, b.len);
			CHECK(j);
			d = json_find_duplicate(j, where, sizeof(where));
			if (dup == 0)
				CHECK_MSG(!d, "n %d: found '%s'", n, d->string);
			else
				CHECK_MSG(d && strcmp(d->string, "k0") == 0 && d->valueint == dup,
					  "n %d dup %d: found '%s'", n, dup, d ? d->string : "(none)");
			cJSON_Delete(j);
		}
	}
	for (int where_dup = 0; where_dup < 3; where_dup++) {
		/* 100,000 keys: none repeated, the last two equal, the first and last */
		int64_t t0;
		cJSON *j;
		const cJSON *d;
		const int n = 100000;
		buf_reset(&b);
		buf_puts(&b, "{\"body\":{");
		for (int k = 0; k < n; k++) {
			int key = k;
			if (where_dup == 1 && k == n - 1)
				key = n - 2;
			if (where_dup == 2 && k == n - 1)
				key = 0;
			buf_printf(&b, "%s\"key-%08d\":%d", k ? "," : "", key, k);
		}
		buf_puts(&b, "}}");
		j = json_parse(b.p, b.len);
		CHECK(j);
		t0 = time_now_ns();
		d = json_find_duplicate(j, where, sizeof(where));
		CHECK_MSG(time_now_ns() - t0 < 2000000000LL * slow_factor(),
			  "100k keys took %lld ms", (long long)((time_now_ns() - t0) / 1000000));
		if (where_dup == 0) {
			CHECK(!d);
		} else {
			CHECK(d && d->valueint == n - 1);
			CHECK_STR(d->string, where_dup == 1 ? "key-00099998" : "key-00000000");
			CHECK_STR(where, "body");
		}
		cJSON_Delete(j);
	}
	/* 450 levels of [{"a-...": ... }] (cJSON takes 1000): the path is cut */
	buf_reset(&b);
	for (int k = 0; k < 450; k++)
		buf_puts(&b, "[{\"a-rather-long-key-to-fill-the-path-buffer-quickly\":");
	buf_puts(&b, "{\"z\":1,\"z\":2}");
	for (int k = 0; k < 450; k++)
		buf_puts(&b, "}]");
	{
		cJSON *j = json_parse(b.p, b.len);
		const cJSON *d;
		CHECK(j);
		d = json_find_duplicate(j, where, sizeof(where));
		CHECK(d && strcmp(d->string, "z") == 0);
		CHECK(strlen(where) < sizeof(where));
		CHECK(strncmp(where, "[0].a-rather-long", 17) == 0);
		cJSON_Delete(j);
	}
	buf_release(&b);
}

TEST(net_listen_connect_nodelay)
{
	char msg[512] = "", got[8] = "";
	int port = 0, lfd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg)), c, a;
	CHECK_MSG(lfd >= 0, "%s", msg);
	CHECK(port > 0 && port < 65536);
	CHECK_INT(net_port(lfd), port);
	CHECK_INT(nodelay_of(lfd), 1);
	c = net_connect("127.0.0.1", port, msg, sizeof(msg));
	CHECK_MSG(c >= 0, "%s", msg);
	CHECK_INT(nodelay_of(c), 1);
	a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a >= 0);
	CHECK_INT(nodelay_of(a), 1); /* inherited from the listener */
	CHECK_INT(file_write_all(c, "ping", 4), 0);
	CHECK_INT(read(a, got, sizeof(got)), 4);
	CHECK_STR(got, "ping");
	close(a);
	close(c);
	close(lfd);
}

TEST(net_errors_name_the_address)
{
	char msg[512] = "", want[128];
	int port = 0, port2 = 0, lfd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
	CHECK_MSG(lfd >= 0, "%s", msg);
	CHECK_INT(net_listen("127.0.0.1", port, &port2, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%d: ", port);
	CHECK_CONTAINS(msg, want);
	close(lfd); /* nothing listens there now */
	CHECK_INT(net_connect("127.0.0.1", port, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%d: Connection refused", port);
	CHECK_STR(msg, want);
	CHECK(net_nodelay(-1) < 0);
}

struct drain {
	int fd;
	struct buf got;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char chunk[4096];
	ssize_t n;
	while ((n = read(d->fd, chunk, sizeof(chunk))) > 0)
		buf_append(&d->got, chunk, (size_t)n);
	return NULL;
}

/* file_write_all is the one-write send: a buffer far larger than the socket's
 * buffer goes out whole in one call. */
TEST(write_all_sends_whole_over_a_socketpair)
{
	size_t len = 4u << 20;
	char *data = xmalloc(len);
	int sv[2];
	struct drain d;
	pthread_t th;
	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + i % 26);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	d.fd = sv[1];
	buf_init(&d.got, 0);
	CHECK(pthread_create(&th, NULL, drain_main, &d) == 0);
	CHECK_INT(file_write_all(sv[0], data, len), 0);
	close(sv[0]);
	pthread_join(th, NULL);
	CHECK_INT(d.got.len, len);
	CHECK(memcmp(d.got.p, data, len) == 0);
	close(sv[1]);
	buf_release(&d.got);
	free(data);
}

/* ---- httpd ---- */

TEST(httpd_routes_table)
{
	static const struct httpd_route t[] = {
	    {"/healthz", "GET, HEAD", 1},
	    {"/v1/runs/*", "GET, HEAD, DELETE", 2},
	    {"/v1/runs/*/events", "GET, HEAD", 3},
	};
	static const struct {
		const char *url;
		int id; /* 0: none */
		const char *arg;
	} cases[] = {
	    {"/healthz", 1, NULL},
	    {"/healthz/", 0, NULL},
	    {"/healthzz", 0, NULL},
	    {"/health", 0, NULL},
	    {"/v1/runs/r-1", 2, "r-1"},
	    {"/v1/runs/r-1/events", 3, "r-1/events"},
	    {"/v1/runs/", 0, NULL},
	    {"/v1/runs//events", 0, NULL},
	    {"/v1/runs/r-1/", 0, NULL},
	    {"/v1/runs/r-1/eventsx", 0, NULL},
	    {"/v1/runs/a/b/events", 0, NULL},
	    {"", 0, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *arg = "unset";
		const struct httpd_route *r =
		    httpd_route_find(t, ARRAY_SIZE(t), cases[i].url, &arg);
		CHECK_MSG((r ? r->id : 0) == cases[i].id, "'%s': route %d, want %d", cases[i].url,
			  r ? r->id : 0, cases[i].id);
		CHECK_MSG(cases[i].arg ? arg && strcmp(arg, cases[i].arg) == 0 : !arg,
			  "'%s': arg '%s'", cases[i].url, arg ? arg : "(null)");
	}
	CHECK(httpd_route_allows(&t[1], "GET"));
	CHECK(httpd_route_allows(&t[1], "HEAD"));
	CHECK(httpd_route_allows(&t[1], "DELETE"));
	CHECK(!httpd_route_allows(&t[1], "POST"));
	CHECK(!httpd_route_allows(&t[1], "GE"));
	CHECK(!httpd_route_allows(&t[1], "DELETES"));
	CHECK(!httpd_route_allows(&t[1], ""));
}

TEST(httpd_error_json_keeps_the_order)
{
	cJSON *j = httpd_error_json((const char *const[]){"type", "bad", "code", "x_y", "param",
							  NULL, "message", "m", NULL});
	char *s = json_print(j);
	CHECK_STR(
	    s, "{\"error\":{\"type\":\"bad\",\"code\":\"x_y\",\"param\":null,\"message\":\"m\"}}");
	free(s);
	cJSON_Delete(j);
}

TEST(httpd_body_caps)
{
	struct httpd_body b;
	httpd_body_init(&b, 8);
	httpd_body_take(&b, "1234", 4);
	httpd_body_take(&b, "5678", 4);
	CHECK_STR(b.buf.p, "12345678");
	CHECK(!b.too_big);
	httpd_body_take(&b, "9", 1);
	CHECK(b.too_big && b.buf.len == 0 && !b.buf.p[0]);
	httpd_body_take(&b, "0123", 4);
	CHECK_INT(b.dropped, 5);
	httpd_body_release(&b);
}

enum { T_HELLO, T_ITEM, T_ECHO };

static const struct httpd_route test_routes[] = {
    {"/hello", "GET, HEAD", T_HELLO},
    {"/items/*", "GET, DELETE", T_ITEM},
    {"/echo", "POST", T_ECHO},
};

#define TEST_BODY_MAX 16

static enum MHD_Result test_request(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *data,
				    size_t *data_size, void **con_cls)
{
	struct httpd_body *body = *con_cls;
	const char *arg = NULL, *cl;
	const struct httpd_route *rt =
	    httpd_route_find(test_routes, ARRAY_SIZE(test_routes), url, &arg);
	(void)cls;
	(void)version;
	if (!body) {
		if ((cl = httpd_declared_over(c, TEST_BODY_MAX)))
			return httpd_json(
			    c, 413, httpd_error_json((const char *const[]){"declared", cl, NULL}),
			    NULL);
		body = xmalloc(sizeof(*body));
		httpd_body_init(body, TEST_BODY_MAX);
		*con_cls = body;
		return MHD_YES;
	}
	if (*data_size) {
		httpd_body_take(body, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (!rt)
		return httpd_json(c, 404,
				  httpd_error_json((const char *const[]){
				      "message", "no route", "type", "not_found", NULL}),
				  NULL);
	if (!httpd_route_allows(rt, method))
		return httpd_json(c, 405,
				  httpd_error_json((const char *const[]){"message", "no", NULL}),
				  (const char *const[]){MHD_HTTP_HEADER_ALLOW, rt->methods, NULL});
	switch (rt->id) {
	case T_HELLO:
		return httpd_queue(
		    c, 200,
		    httpd_response(xstrdup("hi"), 2, "text/plain",
				   (const char *const[]){"X-One", "1", "X-Two", "2", NULL}));
	case T_ITEM: {
		cJSON *j = cJSON_CreateObject();
		json_add_str(j, "id", arg);
		json_add_str(j, "method", method);
		json_add_bool(j, "nodelay", nodelay_of(httpd_conn_fd(c)));
		return httpd_json(c, 200, j, NULL);
	}
	default:
		if (body->too_big)
			return httpd_queue(
			    c, 413, httpd_response(xstrdup("too big"), 7, "text/plain", NULL));
		return httpd_queue(
		    c, 200,
		    httpd_response(xstrndup(body->buf.p, body->buf.len),
				   body->buf.len, "application/octet-stream", NULL));
	}
}

/* Send req on a new connection to port and read the whole answer (the
 * request asks to close). The caller frees it. */
static char *exchange(int port, const char *req)
{
	char msg[512];
	int fd = net_connect("127.0.0.1", port, msg, sizeof(msg));
	struct buf b;
	int64_t deadline = time_now_ns() + 10000000000LL;
	CHECK_MSG(fd >= 0, "%s", msg);
	CHECK_INT(file_write_all(fd, req, strlen(req)), 0);
	buf_init(&b, 0);
	buf_puts(&b, "");
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		char chunk[4096];
		ssize_t n;
		CHECK_MSG(time_now_ns() < deadline, "no answer to '%.40s'", req);
		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((n = read(fd, chunk, sizeof(chunk))) <= 0)
			break;
		buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	return buf_detach(&b, NULL);
}

TEST(httpd_serves_on_a_listening_socket)
{
	struct httpd_cfg cfg = {
	    .on_request = test_request,
	    .on_completed = httpd_body_completed,
	    .connection_limit = 16,
	    .timeout_s = 10,
	    .quiesce = true,
	};
	char msg[512];
	int port = 0, fd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
	struct httpd *d;
	char *r;
	CHECK_MSG(fd >= 0, "%s", msg);
	d = httpd_start(&cfg, fd);
	CHECK(d);

	r = exchange(port, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nContent-Type: text/plain\r\n");
	CHECK_CONTAINS(r, "\r\nX-One: 1\r\n");
	CHECK_CONTAINS(r, "\r\nX-Two: 2\r\n");
	CHECK_CONTAINS(r, "\r\nContent-Length: 2\r\n");
	CHECK(strlen(r) > 6 && strcmp(r + strlen(r) - 6, "\r\n\r\nhi") == 0);
	free(r);

	r = exchange(port, "DELETE /items/a-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nContent-Type: application/json\r\n");
	CHECK_CONTAINS(r, "\r\n\r\n{\"id\":\"a-1\",\"method\":\"DELETE\",\"nodelay\":true}");
	free(r);

	r = exchange(port, "POST /items/a-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 0\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 405 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nAllow: GET, DELETE\r\n");
	CHECK_CONTAINS(r, "\r\n\r\n{\"error\":{\"message\":\"no\"}}");
	free(r);

	r = exchange(port, "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 404 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "{\"error\":{\"message\":\"no route\",\"type\":\"not_found\"}}");
	free(r);

	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 5\r\n\r\nhello");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK(strcmp(r + strlen(r) - 9, "\r\n\r\nhello") == 0);
	free(r);

	/* declared over the cap: answered before the body is read */
	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 17\r\n\r\n01234567890123456");
	CHECK_MSG(strncmp(r, "HTTP/1.1 413 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "{\"error\":{\"declared\":\"17\"}}");
	free(r);

	/* chunked, with no length: read until the cap, then refused */
	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Transfer-Encoding: chunked\r\n\r\n"
			   "a\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 413 ", 13) == 0, "%.200s", r);
	CHECK(strcmp(r + strlen(r) - 11, "\r\n\r\ntoo big") == 0);
	free(r);

	/* The listening socket is closed once the library's thread, woken,
	 * lets go of it. */
	httpd_quiesce(d);
	for (int i = 0;; i++) {
		int c = net_connect("127.0.0.1", port, msg, sizeof(msg));
		if (c < 0)
			break;
		close(c);
		CHECK_MSG(i < 200, "the socket still accepts after httpd_quiesce");
		time_sleep_ns(10000000);
	}
	httpd_stop(d);
	httpd_stop(NULL);
}

/* Is fd closed by the other end, within ms? */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char c[64];
	if (poll(&p, 1, ms) <= 0)
		return false;
	return recv(fd, c, sizeof(c), MSG_DONTWAIT) <= 0;
}

/* The connection limit drops the connection waiting longest for its head
 * to serve a newcomer, and the watchdog closes heads past their deadline
 * however much they send. */
TEST(httpd_limits_drop_slow_heads)
{
	struct httpd_cfg cfg = {
	    .on_request = test_request,
	    .on_completed = httpd_body_completed,
	    .connection_limit = 4,
	    .timeout_s = 30,
	    .head_timeout_s = 1,
	};
	char msg[512], *r;
	int port = 0, fd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg)), slow[4];
	struct httpd_stats st;
	struct httpd *d;
	int64_t t0;
	CHECK_MSG(fd >= 0, "%s", msg);
	d = httpd_start(&cfg, fd);
	CHECK(d);
	for (int i = 0; i < 4; i++) {
		slow[i] = net_connect("127.0.0.1", port, msg, sizeof(msg));
		CHECK_MSG(slow[i] >= 0, "%s", msg);
		CHECK_INT(file_write_all(slow[i], "GET /hello HTTP/1.1\r\n", 21), 0);
		time_sleep_ns(20000000);
	}
	t0 = time_now_ns();
	r = exchange(port, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	free(r);
	/* the oldest made room; the others wait on, trickling */
	CHECK(closed_within(slow[0], 200));
	for (int i = 1; i < 4; i++) {
		CHECK_MSG(!closed_within(slow[i], 0), "slow %d closed early", i);
		CHECK_INT(file_write_all(slow[i], "X-A: b\r\n", 8), 0);
	}
	for (int i = 1; i < 4; i++)
		CHECK_MSG(closed_within(slow[i], 2500), "slow %d still open", i);
	CHECK_MSG(time_now_ns() - t0 > 700000000LL, "closed before the deadline");
	httpd_stats(d, &st);
	CHECK_INT(st.evicted, 1);
	CHECK_INT(st.head_timeouts, 3);
	CHECK_INT(st.refused, 0);
	for (int i = 0; i < 4; i++)
		close(slow[i]);
	httpd_stop(d);
}
