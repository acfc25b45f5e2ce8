/* SPDX-License-Identifier: MIT */
/* tests/test_score.c -- the bench scorers: a table of (prediction, gold,
 * score) rows per scorer taken from the reference rules in
 * ../shared/research/anchors-paper.md section 2 (OOLONG's answer types and
 * its Python-literal golds too), the Python literal parser, the error
 * rows, and a random-bytes loop that checks every score stays in [0, 1]. */
#include "harness.h"
#include "../bench/score.h"
#include "../common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct row {
	const char *pred; /* NULL: no answer */
	const char *gold; /* JSON */
	double want;
};

static void run_rows(const char *scorer, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		cJSON *gold = json_parse(r->gold, strlen(r->gold));
		struct rlm_err err = {0, ""};
		double got = -1;
		int rc;
		CHECK_MSG(gold, "%s row %zu: bad gold JSON %s", scorer, i, r->gold);
		rc = bench_score(scorer, r->pred, gold, &got, &err);
		CHECK_MSG(rc == 0, "%s row %zu: rc %d (%s)", scorer, i, rc, err.msg);
		CHECK_MSG(fabs(got - r->want) < 1e-9,
			  "%s row %zu: \"%s\" vs %s: got %.6f, want %.6f", scorer, i,
			  r->pred ? r->pred : "(null)", r->gold, got, r->want);
		cJSON_Delete(gold);
	}
}

#define RUN_ROWS(scorer, rows) run_rows(scorer, rows, ARRAY_SIZE(rows))

TEST(score_contains_all)
{
	static const struct row rows[] = {
	    {"The special magic number is: 2338687.", "[\"2338687\"]", 1},
	    {"nothing here", "[\"2338687\"]", 0},
	    {"values: 111 and 333", "[\"111\", \"222\", \"333\"]", 2.0 / 3},
	    {"a b c d", "[\"a\", \"b\", \"c\", \"e\"]", 0.75},
	    {"FOO bar", "[\"foo\"]", 1},
	    {"foo", "[\"FOO\"]", 1},
	    {"uuid 6f1a-Bc9e", "[\"6F1A-bC9E\"]", 1},
	    {"1234", "[\"123\", \"1234\", \"12345\"]", 2.0 / 3},
	    {"", "[\"a\"]", 0},
	    {"anything", "[\"\"]", 1}, /* "" in s is always true */
	    {NULL, "[\"a\"]", 0},
	    {"x 42 y", "[42]", 1},	   /* a number gold is its text */
	    {"2338687", "\"2338687\"", 1}, /* a string alone: an array of one */
	    {"caf\xc3\xa9", "[\"CAF\xc3\xa9\"]", 1},
	    /* ASCII-only lowercasing: "\xc3\x89COLE" (ÉCOLE) does not match "école" */
	    {"\xc3\x89"
	     "COLE",
	     "[\"\xc3\xa9"
	     "cole\"]",
	     0},
	    {"the words are apple and pear", "[\"pear\", \"apple\"]", 1},
	};
	RUN_ROWS("contains_all", rows);
}

TEST(score_exact)
{
	static const struct row rows[] = {
	    {"Paris", "[\"paris\"]", 1},
	    {"  Paris.  ", "[\"Paris\"]", 1},
	    {"Answer: Paris", "[\"Paris\"]", 1},
	    {"**Answer:** Paris", "[\"Paris\"]", 1},
	    {"answer : Paris!", "[\"Paris\"]", 1},
	    {"New   York\n City", "[\"new york city\"]", 1},
	    {"NYC", "[\"New York City\", \"NYC\"]", 1}, /* aliases */
	    {"\"Paris\"", "\"Paris\"", 1},
	    {"42", "[42]", 1},
	    {"Paris, France", "[\"Paris\"]", 0},
	    {"The answer is Paris", "[\"Paris\"]", 0},
	    {"Final answer: Paris", "[\"Paris\"]", 0},
	    {"Answer: Answer: Paris", "[\"Paris\"]", 0}, /* stripped once */
	    {"", "[\"x\"]", 0},
	    {NULL, "[\"x\"]", 0},
	    {"\xc3\x89"
	     "COLE",
	     "[\"\xc3\xa9"
	     "cole\"]",
	     0}, /* ASCII-only lowercasing */
	};
	RUN_ROWS("exact", rows);
}

TEST(score_oolong_labels)
{
	static const struct row rows[] = {
	    {"Label: entity", "[\"entity\"]", 1},
	    {"Label: **entity**", "[\"entity\"]", 1},
	    {"Label: [entity]", "[\"entity\"]", 1},
	    {"Label:   entity  \n", "[\"entity\"]", 1},
	    /* stripped before the brackets go, not after */
	    {"Label: [ entity ]", "[\"entity\"]", 0},
	    {"Label: Entity", "[\"entity\"]", 0}, /* case-sensitive */
	    {"entity", "[\"entity\"]", 1},	  /* no ':', short: the whole */
	    {"entity\n", "[\"entity\"]", 0},	  /* ... unstripped */
	    {"Answer is entity", "[\"entity\"]", 0},
	    {"The answer is entity", "[\"entity\"]", 1}, /* 20 chars: the last word */
	    {"Label: description and abstract concept", "[\"description and abstract concept\"]",
	     1},
	    {"User: 63685", "[\"63685\"]", 1},
	    {"Answer: A is more common than B", "[\"more common than\"]", 1},
	    {"Answer: A is less common than B", "[\"more common than\"]", 0},
	    {"Answer: human being is the same frequency as location", "[\"same frequency as\"]", 1},
	    {"Answer: more common", "[\"A is more common than B\"]", 1},
	    {"Answer: more common than", "[\"more common than\"]", 1},
	    /* under 20 characters: no collapse, no exact match */
	    {"Answer: more common than", "[\"A is more common than B\"]", 0},
	    {"", "[\"entity\"]", 0},
	    {NULL, "[\"entity\"]", 0},
	    {"                        ", "[\"entity\"]", 0}, /* no word: the reference raises */
	};
	RUN_ROWS("oolong", rows);
}

TEST(score_oolong_numbers)
{
	static const struct row rows[] = {
	    {"Answer: 1542", "[1542]", 1},
	    {"Answer: 1543", "[1542]", 0.75},
	    {"Answer: 1540", "[1542]", 0.5625},
	    {"Answer: **1544**", "[1542]", 0.5625},
	    {"Answer: +1541", "[1542]", 0.75},
	    {"Answer: 1_542", "[1542]", 1},  /* int() takes '_' between digits */
	    {"Answer: 1,542", "[1542]", 0},  /* int() rejects ',' */
	    {"Answer: 1542.0", "[1542]", 0}, /* ... and a point */
	    {"Answer: five", "[5]", 0},
	    {"Answer: 5", "[\"7\"]", 0}, /* a digit string is text */
	    {"Answer: 7", "[\"7\"]", 1},
	    {"Answer: -2", "[-1]", 0.75},
	    {"I counted them all and got 42", "[42]", 1},
	    {"I counted them all: there are 42 of them", "[42]", 0},
	    {"42", "[42, \"ignored\"]", 1},
	    {"Answer: 3", "[3.0]", 1},
	    {"Answer: 99999999999999999999999", "[1]", 0}, /* beyond int64 */
	    {"Answer: 9223372036854775807", "[-9000000000000000000]", 0},
	    /* a user ID (a string) is text: off by one is wrong */
	    {"User: 63686", "[\"63685\"]", 0},
	    {"User: 063685", "[\"63685\"]", 0},
	    {"Answer: 063685", "[63685]", 1},
	};
	RUN_ROWS("oolong", rows);
}

TEST(score_oolong_dates)
{
	static const struct row rows[] = {
	    {"Date: 12/25/2023", "[\"2023-12-25\"]", 1},
	    {"Date: 2023-12-25", "[\"12/25/2023\"]", 1},
	    {"Date: December 25, 2023", "[\"2023-12-25\"]", 1},
	    {"Date: Dec. 25th, 2023", "[\"2023-12-25\"]", 1},
	    {"Date: Monday, 25 December 2023", "[\"2023-12-25\"]", 1},
	    {"Date: 25/12/2023", "[\"2023-12-25\"]", 1}, /* day first: month over 12 */
	    {"Date: 2023/12/25", "[\"12/25/2023\"]", 1},
	    {"Date: 20231225", "[\"2023-12-25\"]", 1},
	    {"Date: 12/25/23", "[\"2023-12-25\"]", 1},
	    {"Date: 1/5/2023", "[\"01/05/2023\"]", 1},
	    {"Date: 5/1/2023", "[\"01/05/2023\"]", 0}, /* month first */
	    {"Date: 12/24/2023", "[\"2023-12-25\"]", 0},
	    {"Date: 2023-12-25 00:00", "[\"2023-12-25\"]", 0}, /* after the last ':' */
	    {"Date: Dec 2023", "[\"2023-12-01\"]", 0},	       /* no day: no date */
	    {"Date: 02/30/2023", "[\"2023-03-02\"]", 0},
	    {"Date: sometime in december", "[\"2023-12-25\"]", 0},
	    {"12/25/2023", "[\"2023-12-25\"]", 1},
	    {"Date: 2024-02-29", "[\"02/29/2024\"]", 1},
	    /* not a valid date: the gold is a label, matched as text */
	    {"Date: 2023-02-30", "[\"2023-02-30\"]", 1},
	    {"Date: 2023-2-30", "[\"2023-02-30\"]", 0},
	};
	RUN_ROWS("oolong", rows);
}

/* A row under an item's answer_type (NULL: none). */
struct trow {
	const char *pred;
	const char *gold; /* JSON */
	const char *type;
	double want;
};

static void run_typed(const struct trow *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct trow *r = &rows[i];
		cJSON *gold = json_parse(r->gold, strlen(r->gold));
		struct rlm_err err = {0, ""};
		double got = -1;
		int rc;
		CHECK_MSG(gold, "row %zu: bad gold JSON %s", i, r->gold);
		rc = bench_score_typed("oolong", r->type, r->pred, gold, &got, &err);
		CHECK_MSG(rc == 0, "row %zu: rc %d (%s)", i, rc, err.msg);
		CHECK_MSG(fabs(got - r->want) < 1e-9,
			  "row %zu: \"%s\" vs %s (%s): got %.6f, want %.6f", i, r->pred, r->gold,
			  r->type ? r->type : "no type", got, r->want);
		cJSON_Delete(gold);
	}
}

/* OOLONG's answer types decide, not the gold's JSON type
 * (synth_process_response's answer_type branches). */
TEST(score_oolong_answer_types)
{
	static const struct trow rows[] = {
	    /* a user ID stored as a number is text: off by one is wrong */
	    {"User: 63686", "[63685]", "ANSWER_TYPE.USER", 0},
	    {"User: 63685", "[63685]", "ANSWER_TYPE.USER", 1},
	    {"User: 63686", "[63685]", NULL, 0.75}, /* no type: a number is numeric */
	    /* a count stored as a string is numeric: int(gold) */
	    {"Answer: 13", "[\"12\"]", "ANSWER_TYPE.NUMERIC", 0.75},
	    {"Answer: 12", "[\"12\"]", "ANSWER_TYPE.NUMERIC", 1},
	    {"Answer: 10", "[\" 1_2 \"]", "ANSWER_TYPE.NUMERIC", 0.5625},
	    {"Answer: 13", "[\"12\"]", NULL, 0},     /* no type: a digit string is text */
	    {"Answer: 11", "[12]", "numeric", 0.75}, /* any case, no prefix */
	    {"Answer: twelve", "[12]", "NUMERIC", 0},
	    {"Date: 12/25/2023", "[\"2023-12-25\"]", "ANSWER_TYPE.DATE", 1},
	    {"Date: Dec 25, 2023", "[\"12/25/2023\"]", "DATE", 1},
	    {"Date: 12/26/2023", "[\"2023-12-25\"]", "DATE", 0},
	    /* a label that looks like a date is matched as text */
	    {"Label: 2023-12-25", "[\"2023-12-25\"]", "ANSWER_TYPE.LABEL", 1},
	    {"Label: 12/25/2023", "[\"2023-12-25\"]", "ANSWER_TYPE.LABEL", 0},
	    {"Answer: A is more common than B", "[\"more common than\"]", "ANSWER_TYPE.COMPARISON",
	     1},
	    {"Answer: less common", "[\"more common than\"]", "COMPARISON", 0},
	    {"Answer: January 2023", "[\"January 2023\"]", "ANSWER_TYPE.MONTH_YEAR", 1},
	    {"Answer: Jan 2023", "[\"January 2023\"]", "ANSWER_TYPE.MONTH_YEAR", 0},
	    {"Label: 5", "[5]", "ANSWER_TYPE.LABEL", 1},
	};
	run_typed(rows, ARRAY_SIZE(rows));
}

/* Real OOLONG rows store the gold as a Python list literal in a string. */
TEST(score_oolong_python_golds)
{
	static const struct trow rows[] = {
	    {"Label: entity", "\"['entity']\"", "ANSWER_TYPE.LABEL", 1},
	    {"Label: location", "\"['entity']\"", "ANSWER_TYPE.LABEL", 0},
	    {"Label: entity", "\"[\\\"entity\\\"]\"", "ANSWER_TYPE.LABEL", 1},
	    {"Label: entity", "\"  [ 'entity' , ]  \"", NULL, 1},
	    {"Label: human being", "\"['human being', 'location']\"", NULL, 1},
	    {"Answer: 1543", "\"[1542]\"", "ANSWER_TYPE.NUMERIC", 0.75},
	    {"Answer: 1543", "\"[1542]\"", NULL, 0.75},
	    {"Answer: 1543", "\"['1542']\"", "ANSWER_TYPE.NUMERIC", 0.75},
	    {"User: 63685", "\"[63685]\"", "ANSWER_TYPE.USER", 1},
	    {"User: 63686", "\"[63685]\"", "ANSWER_TYPE.USER", 0},
	    {"Date: 03/04/2023", "\"[datetime.date(2023, 3, 4)]\"", "ANSWER_TYPE.DATE", 1},
	    {"Date: March 4, 2023", "\"[datetime.date(2023, 3, 4)]\"", "ANSWER_TYPE.DATE", 1},
	    {"Date: 2023-03-05", "\"[datetime.date(2023, 3, 4)]\"", "ANSWER_TYPE.DATE", 0},
	    {"Answer: more common", "\"['more common than']\"", "ANSWER_TYPE.COMPARISON", 1},
	    {"Answer: it's", "\"['it\\\\'s']\"", "ANSWER_TYPE.LABEL", 1},
	    {"Answer: caf\xc3\xa9", "\"['caf\\\\xe9']\"", "ANSWER_TYPE.LABEL", 1},
	    /* not a list: a label that holds a bracket later */
	    {"Label: a [b]", "\"a [b]\"", NULL, 0},
	};
	run_typed(rows, ARRAY_SIZE(rows));
}

/* bench_pylit_parse: what ast.literal_eval makes of each, as JSON. */
TEST(pylit_parse)
{
	static const struct {
		const char *lit;
		const char *json; /* NULL: an error whose message holds msg */
		const char *msg;
	} rows[] = {
	    {"['entity']", "[\"entity\"]", NULL},
	    {"[\"entity\"]", "[\"entity\"]", NULL},
	    {"[1542]", "[1542]", NULL},
	    {"[-3, +4, 1_000, - 5]", "[-3,4,1000,-5]", NULL},
	    {"[1.5, 2e3, .5, 1., 1E-2, 0, 00]", "[1.5,2000,0.5,1,0.01,0,0]", NULL},
	    {"['a' 'b'  \"c\"]", "[\"abc\"]", NULL},
	    {"['it\\'s', \"say \\\"hi\\\"\"]", "[\"it's\",\"say \\\"hi\\\"\"]", NULL},
	    {"['\\n\\t\\\\\\a\\b\\f\\v\\r']", "[\"\\n\\t\\\\\\u0007\\b\\f\\u000b\\r\"]", NULL},
	    {"['\\x41\\u00e9\\U0001F600\\101\\1010']",
	     "[\"A\xc3\xa9\xf0\x9f\x98\x80"
	     "AA0\"]",
	     NULL},
	    {"['\\d\\w']", "[\"\\\\d\\\\w\"]", NULL}, /* unknown escapes keep the backslash */
	    {"[r'\\d\\'', R\"x\"]", "[\"\\\\d\\\\'\",\"x\"]", NULL},
	    {"[u'x', U'y']", "[\"x\",\"y\"]", NULL},
	    {"['a\\\nb']", "[\"ab\"]", NULL}, /* backslash-newline */
	    {"['''tri'ple''', \"\"\"two\nlines\"\"\"]", "[\"tri'ple\",\"two\\nlines\"]", NULL},
	    {"[('a', 1), ['b'], ()]", "[[\"a\",1],[\"b\"],[]]", NULL},
	    {"(1)", "1", NULL},
	    {"(1,)", "[1]", NULL},
	    {" [ ] ", "[]", NULL},
	    {"[True, False, None]", "[true,false,null]", NULL},
	    {"[datetime.date(2023, 3, 4)]", "[\"2023-03-04\"]", NULL},
	    {"[datetime.date(2024,2,29)]", "[\"2024-02-29\"]", NULL},
	    {"[datetime.date( 2023 , 3 , 4 )]", "[\"2023-03-04\"]", NULL},
	    {"[datetime.date(2023, 03, 04)]", NULL, "leading zero"}, /* a SyntaxError */
	    {"['caf\xc3\xa9']", "[\"caf\xc3\xa9\"]", NULL},
	    /* errors */
	    {"", NULL, "ends where a value"},
	    {"[", NULL, "ends where a value"},
	    {"['a'", NULL, "want ',' or ']'"},
	    {"['a", NULL, "not closed"},
	    {"['a\n']", NULL, "line ends inside"},
	    {"[1,,2]", NULL, "want a list"},
	    {"[1 2]", NULL, "want ',' or ']'"},
	    {"(1 2)", NULL, "want ',' or ')'"},
	    {"{1: 2}", NULL, "want a list"},
	    {"[x]", NULL, "want a list"},
	    {"[b'x']", NULL, "bytes, f-strings"},
	    {"[f'x']", NULL, "bytes, f-strings"},
	    {"[rb'x']", NULL, "bytes, f-strings"},
	    {"[0x1f]", NULL, "hex, octal"},
	    {"[1j]", NULL, "complex"},
	    {"[01]", NULL, "leading zero"},
	    {"[--5]", NULL, "a second sign"}, /* ast.literal_eval: malformed */
	    {"[-+5]", NULL, "a second sign"},
	    {"[1e]", NULL, "exponent"},
	    {"[1e5e3]", NULL, "hex, octal"},
	    {"[1.2.3]", NULL, "hex, octal"},
	    {"[9007199254740993]", NULL, "beyond 2^53"},
	    {"[1e999]", NULL, "out of range"},
	    {"['\\N{EM DASH}']", NULL, "\\N{...}"},
	    {"['\\ud800']", NULL, "no Unicode scalar"},
	    {"['\\U00110000']", NULL, "no Unicode scalar"},
	    {"['\\x4']", NULL, "hex digits"},
	    {"['\\x00']", NULL, "NUL"},
	    {"['\\0']", NULL, "NUL"},
	    {"['a\\", NULL, "backslash"},
	    {"[datetime.date(2023, 2, 29)]", NULL, "no real date"},
	    {"[datetime.date(2023, 13, 1)]", NULL, "no real date"},
	    {"[datetime.date(2023, 1)]", NULL, "want ','"},
	    {"[datetime.datetime(2023, 1, 1)]", NULL, "want a list"},
	    {"[1] x", NULL, "text after the value"},
	    {"['a' # note\n]", NULL, "want ',' or ']'"},
	    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]"
	     "]]]"
	     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	     NULL, "nested too deep"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		struct rlm_err err = {0, ""};
		cJSON *v = NULL;
		int rc = bench_pylit_parse(rows[i].lit, strlen(rows[i].lit), &v, &err);
		if (!rows[i].json) {
			CHECK_MSG(rc == RLM_EINVAL, "row %zu (%s): rc %d", i, rows[i].lit, rc);
			CHECK(v == NULL);
			CHECK_CONTAINS(err.msg, rows[i].msg);
			CHECK_CONTAINS(err.msg, "Python literal");
		} else {
			char *got;
			CHECK_MSG(rc == 0, "row %zu (%s): %s", i, rows[i].lit, err.msg);
			got = json_print(v);
			CHECK_MSG(strcmp(got, rows[i].json) == 0, "row %zu (%s): %s, want %s", i,
				  rows[i].lit, got, rows[i].json);
			free(got);
			cJSON_Delete(v);
		}
	}
	/* a NUL byte inside the text is refused, not cut at */
	{
		cJSON *v = NULL;
		CHECK_INT(bench_pylit_parse("['a']\0x", 7, &v, NULL), RLM_EINVAL);
		CHECK(v == NULL);
	}
}

TEST(score_set_f1)
{
	static const struct row rows[] = {
	    {"(1, 2)\n(3, 4)", "[\"1,2\", \"3,4\"]", 1},
	    {"[]", "[]", 1},
	    {"", "[]", 1},
	    {"(1, 2)", "[]", 0},
	    {"[]", "[\"1,2\"]", 0},
	    {"(1, 2)\n(5, 6)", "[\"1,2\", \"3,4\"]", 0.5},
	    {"(1, 2)", "[\"1,2\", \"3,4\"]", 2.0 / 3},
	    {"(1, 2), (3, 4)", "[\"1,2\", \"3,4\", \"5,6\", \"7,8\"]", 2.0 / 3},
	    {"(5, 3)", "[\"3,5\"]", 1},
	    {"(3, 5)\n(5, 3)\n(3,5)", "[\"3,5\"]", 1},
	    {"(1, 2) (1, 2) (7, 8)", "[\"1,2\"]", 2.0 / 3},
	    {"1,2 and 3 ,4", "[\"1,2\", \"3,4\"]", 1},
	    {"(1,2)(3,4)", "[\"(4, 3)\", \" 2,1 \"]", 1},
	    {"(007, 10)", "[[7, 10]]", 1},
	    {"(10, 2)", "[[\"2\", \"10\"]]", 1},
	    {"(1, 2)", "[\"2,1\", \"1,2\"]", 1}, /* duplicate golds */
	    {"(99999999999999999999999, 1)", "[\"1,99999999999999999999999\"]", 1},
	    {"(99999999999999999999998, 1)", "[\"1,99999999999999999999999\"]", 0},
	    {"There are 1,542 pairs", "[\"1,542\"]", 1}, /* the regex's reading */
	    {"(1, 2, 3)", "[\"1,2\"]", 1},
	    {NULL, "[]", 0},
	    {"(1, 2)", "\"1,2\"", 1},
	};
	RUN_ROWS("set_f1", rows);
}

TEST(score_mc)
{
	static const struct row rows[] = {
	    {"(B)", "[1]", 1},
	    {"Answer: 2", "[2]", 1},
	    {"the answer is C", "[\"C\"]", 1},
	    {"the answer is C", "[2]", 1},
	    {"B", "[\"B\"]", 1},
	    {"B", "[0]", 0},
	    {"The correct answer is (D).", "[3]", 1},
	    {"**Answer:** A", "[0]", 1},
	    {"I'd go with option 3", "[3]", 1},
	    {"Between 0 and 3, the answer is 1", "[1]", 1},
	    {"answer: b", "[\"b\"]", 1},
	    {"answer: 0", "[\"A\"]", 1},
	    {"Choice: D", "[\"d\"]", 1},
	    {"it is a guess: (c)", "[2]", 1},
	    {"\\boxed{B}", "[1]", 1},
	    {"Answer: 12", "[1]", 0},
	    {"2.5", "[2]", 0},
	    {"", "[0]", 0},
	    {NULL, "[0]", 0},
	    {"B", "\"B\"", 1},
	    {"A good guess is B", "[1]", 0}, /* the article reads as A: a known limit */
	};
	RUN_ROWS("mc", rows);
}

struct bad {
	const char *scorer;
	const char *gold; /* JSON, or NULL for no gold */
	const char *msg;
};

TEST(score_errors)
{
	static const struct bad rows[] = {
	    {"nope", "[\"x\"]", "unknown scorer 'nope'"},
	    {"", "[\"x\"]", "unknown scorer ''"},
	    {"contains_all", NULL, "no gold answer"},
	    {"contains_all", "{\"a\": 1}", "not an array"},
	    {"contains_all", "true", "not an array"},
	    {"contains_all", "[]", "is empty"},
	    {"contains_all", "[true]", "other than strings"},
	    {"contains_all", "[[\"x\"]]", "other than strings"},
	    {"exact", "[]", "is empty"},
	    {"exact", "[null]", "other than strings"},
	    {"oolong", "[]", "is empty"},
	    {"oolong", "[2.5]", "no integer"},
	    {"oolong", "[true]", "not a string or number"},
	    {"oolong", "null", "not an array"},
	    {"set_f1", "[\"xyz\"]", "not a pair"},
	    {"set_f1", "[\"1,2 junk\"]", "not a pair"},
	    {"set_f1", "[\"1,2\", \"3,4\", \"5\"]", "element 2"},
	    {"set_f1", "[[1]]", "not a pair"},
	    {"set_f1", "[[1, 2, 3]]", "not a pair"},
	    {"set_f1", "[[-1, 2]]", "not a pair"},
	    {"set_f1", "[[\"a\", \"2\"]]", "not a pair"},
	    {"set_f1", "5", "is a number"},
	    {"mc", "[4]", "not a choice"},
	    {"mc", "[\"E\"]", "not a choice"},
	    {"mc", "[\"AB\"]", "not a choice"},
	    {"mc", "[1.5]", "not a choice"},
	    {"mc", "[null]", "not a choice"},
	    {"mc", "[]", "is empty"},
	    {"oolong", "\"[]\"", "is empty"},
	    {"oolong", "\"['a'\"", "bad Python literal"},
	    {"oolong", "\"[{1: 2}]\"", "bad Python literal at byte 1"},
	    {"oolong", "\"[['a']]\"", "not a string or number"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		cJSON *gold = rows[i].gold ? json_parse(rows[i].gold, strlen(rows[i].gold)) : NULL;
		CHECK_MSG(!rows[i].gold || gold, "row %zu: bad JSON", i);
		/* the gold is checked with and without a prediction */
		for (int with = 0; with < 2; with++) {
			struct rlm_err err = {0, ""};
			double got = 0.5;
			int rc = bench_score(rows[i].scorer, with ? "(1, 2) Answer: A" : NULL, gold,
					     &got, &err);
			CHECK_MSG(rc == RLM_EINVAL, "row %zu (%s %s): rc %d", i, rows[i].scorer,
				  rows[i].gold ? rows[i].gold : "null", rc);
			CHECK_INT(err.code, RLM_EINVAL);
			CHECK_CONTAINS(err.msg, rows[i].msg);
			CHECK(got == 0);
		}
		cJSON_Delete(gold);
	}
	double got = 1;
	CHECK_INT(bench_score(NULL, "x", NULL, &got, NULL), RLM_EINVAL); /* err is optional */
	CHECK(got == 0);
}

/* Golds that contradict their answer_type, and unknown types. */
TEST(score_oolong_type_errors)
{
	static const struct {
		const char *gold, *type, *msg;
	} rows[] = {
	    {"[\"entity\"]", "ANSWER_TYPE.NUMERIC", "'entity', which is no integer"},
	    {"\"['entity']\"", "NUMERIC", "which is no integer"},
	    {"[\"12.5\"]", "NUMERIC", "which is no integer"},
	    {"[2.5]", "ANSWER_TYPE.NUMERIC", "which is no integer"},
	    {"[\"tomorrow\"]", "ANSWER_TYPE.DATE", "which is no date"},
	    {"[5]", "DATE", "which is no date"},
	    {"[\"entity\"]", "ANSWER_TYPE.COLOUR", "unknown answer_type 'ANSWER_TYPE.COLOUR'"},
	    {"[\"entity\"]", "", "unknown answer_type ''"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		cJSON *gold = json_parse(rows[i].gold, strlen(rows[i].gold));
		for (int with = 0; with < 2; with++) {
			struct rlm_err err = {0, ""};
			double got = 0.5;
			int rc = bench_score_typed("oolong", rows[i].type,
						   with ? "Answer: 12" : NULL, gold, &got, &err);
			CHECK_MSG(rc == RLM_EINVAL, "row %zu: rc %d", i, rc);
			CHECK_CONTAINS(err.msg, rows[i].msg);
			CHECK(got == 0);
		}
		cJSON_Delete(gold);
	}
	/* the other scorers ignore an answer type */
	{
		cJSON *gold = json_parse("[\"x\"]", 5);
		double got = 0;
		CHECK_INT(bench_score_typed("exact", "COLOUR", "x", gold, &got, NULL), 0);
		CHECK(got == 1);
		cJSON_Delete(gold);
	}
}

TEST(score_known)
{
	static const char *const names[] = {"contains_all", "exact", "oolong", "set_f1", "mc"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		CHECK(bench_scorer_known(names[i]));
	CHECK(!bench_scorer_known("Exact"));
	CHECK(!bench_scorer_known("f1"));
	CHECK(!bench_scorer_known(""));
	CHECK(!bench_scorer_known(NULL));
}

/* A large prediction: 200,000 pairs, half of them right. */
TEST(score_set_f1_large)
{
	struct buf b;
	cJSON *gold = cJSON_CreateArray();
	double got = 0;
	buf_init(&b, 0);
	for (int i = 0; i < 100000; i++) {
		char g[32];
		snprintf(g, sizeof(g), "%d,%d", i, i + 1);
		json_add_str(gold, NULL, g);
		CHECK_INT(buf_printf(&b, "(%d, %d)\n(%d, %d)\n", i + 1, i, i, i + 2), 0);
	}
	CHECK_INT(bench_score("set_f1", b.p, gold, &got, NULL), 0);
	CHECK_MSG(fabs(got - 2.0 / 3) < 1e-9, "got %f", got);
	buf_release(&b);
	cJSON_Delete(gold);
}

/* Random predictions, from raw bytes and from pieces the parsers look for:
 * every score is in [0, 1] and nothing crashes (run under ASan as well). */
TEST(score_random_predictions)
{
	static const char *const golds[][4] = {
	    {"contains_all", "[\"2338687\", \"abc\"]", "[\"\"]", "\"x\""},
	    {"exact", "[\"Paris\", \"NYC\"]", "[\"\"]", "[42]"},
	    {"oolong", "[\"entity\"]", "[1542]", "[\"2023-12-25\"]"},
	    {"set_f1", "[\"1,2\", \"3,4\"]", "[]", "[[5, 6]]"},
	    {"mc", "[0]", "[\"C\"]", "[3]"},
	};
	static const char *const pieces[] = {
	    "Answer:",	   "Label: ",
	    "Date: ",	   "User: ",
	    " (",	   ")",
	    ", ",	   "1",
	    "2",	   "3",
	    "42",	   "1542",
	    "-",	   "/",
	    "*",	   "[",
	    "]",	   "A",
	    "b",	   "(C)",
	    "more common", "same frequency",
	    "Dec",	   "25th",
	    "2023",	   "12/25/2023",
	    "\n",	   " ",
	    "is",	   "option",
	    "\xc2\xa0",	   "\xe3\x80\x80",
	    "_",	   "00",
	};
	struct rng r;
	char pred[512];
	rng_seed(&r, 20260101);
	for (size_t s = 0; s < ARRAY_SIZE(golds); s++) {
		for (int g = 1; g < 4; g++) {
			cJSON *gold = json_parse(golds[s][g], strlen(golds[s][g]));
			CHECK(gold);
			for (int it = 0; it < 3000; it++) {
				size_t n = 0, want = rng_below(&r, 200);
				double got = -1;
				while (n < want) {
					if (rng_below(&r, 2)) {
						pred[n++] = (char)(1 + rng_below(&r, 255));
					} else {
						const char *p =
						    pieces[rng_below(&r, ARRAY_SIZE(pieces))];
						size_t k = strlen(p);
						if (n + k >= sizeof(pred))
							break;
						memcpy(pred + n, p, k);
						n += k;
					}
				}
				pred[n] = '\0';
				CHECK_INT(bench_score(golds[s][0], pred, gold, &got, NULL), 0);
				CHECK_MSG(got >= 0 && got <= 1, "%s: score %f", golds[s][0], got);
			}
			cJSON_Delete(gold);
		}
	}
}
