/* SPDX-License-Identifier: MIT */
/* tests/test_common.c -- buffers, errors, text helpers (UTF-8, character
 * classes, trimming, numbers for people, NONE), number parsing, URLs, random
 * numbers, JSON helpers. */
#include "harness.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
	CHECK(b.p == NULL && b.len == 0);
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
	CHECK(parse_count("8k", &v) == 0 && v == 8000);
	CHECK(parse_count("1M", &v) == 0 && v == 1000000);
	CHECK(parse_count("1.5M", &v) == 0 && v == 1500000);
	CHECK(parse_count("10M", &v) == 0 && v == 10000000);
	CHECK(parse_count("42", &v) == 0 && v == 42);
	CHECK(parse_count("", &v) == RLM_EINVAL);
	CHECK(parse_count("1X", &v) == RLM_EINVAL);
	CHECK(parse_count("-3", &v) == RLM_EINVAL);
	CHECK(parse_count("k", &v) == RLM_EINVAL);
	CHECK(parse_int("12", 0, 100, &l) == 0 && l == 12);
	CHECK(parse_int("101", 0, 100, &l) == RLM_EINVAL);
	CHECK(parse_int("1e3", 0, 10000, &l) == RLM_EINVAL);
	CHECK(parse_double("0.5", 0, 1, &d) == 0 && d == 0.5);
	CHECK(parse_double("nan", 0, 1, &d) == RLM_EINVAL);
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
		char *got = url_without_userinfo(cases[i].in);
		CHECK_MSG(strcmp(got, cases[i].want) == 0, "case %zu: '%s', want '%s'", i, got,
			  cases[i].want);
		free(got);
	}
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
