/* SPDX-License-Identifier: MIT */
/* tests/test_common.c -- buffers, errors, UTF-8, number parsing, URLs, random
 * numbers, JSON helpers. */
#include "harness.h"
#include "../common/common.h"
#include "../common/json.h"

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

TEST(utf8_validation)
{
	static const struct {
		const char *s;
		bool ok;
		size_t bad;
	} cases[] = {
		{"plain ascii", true, 0},
		{"caf\xc3\xa9", true, 0},
		{"\xe2\x82\xac euro", true, 0},
		{"\xf0\x9f\x98\x80 emoji", true, 0},
		{"ab\xc3", false, 2},              /* truncated */
		{"ab\xc0\xaf", false, 2},          /* overlong */
		{"\xed\xa0\x80", false, 0},        /* surrogate */
		{"x\xf4\x90\x80\x80", false, 1},   /* above U+10FFFF */
		{"abcdefghij\xff", false, 10},     /* after the fast path */
		{"\x80", false, 0},                /* stray continuation */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t bad = 999;
		bool ok = utf8_valid(cases[i].s, strlen(cases[i].s), &bad);
		CHECK_MSG(ok == cases[i].ok, "case %zu", i);
		if (!ok)
			CHECK_MSG(bad == cases[i].bad, "case %zu: bad at %zu", i, bad);
	}
}

TEST(utf8_floor_cuts_on_boundaries)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac"; /* a é € : 1 + 2 + 3 bytes */
	CHECK_INT(utf8_floor(s, 6), 6);
	CHECK_INT(utf8_floor(s, 5), 3);
	CHECK_INT(utf8_floor(s, 4), 3);
	CHECK_INT(utf8_floor(s, 3), 3);
	CHECK_INT(utf8_floor(s, 2), 1);
	CHECK_INT(utf8_floor(s, 1), 1);
	CHECK_INT(utf8_floor(s, 0), 0);
}

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
