/* SPDX-License-Identifier: MIT */
/* bench/score_oolong.c -- the "oolong" scorer: OOLONG's synth scorer,
 * abertsch72/oolong eval_helpers.py synth_attempt_answer_parse +
 * synth_process_response, with its answer types and Python-literal golds.
 *
 * DESIGN
 * The prediction is parsed rule for rule as the reference does: no ':' in
 * the whole output: the
 * output itself, unstripped, when it is under 20 characters (code points),
 * else its last whitespace-separated word; else the text after the last
 * ':' stripped of whitespace and then of every '*', '[' and ']' (not
 * stripped again, so "[ entity ]" gives " entity "); when that is 20 or
 * more characters and holds "more common", "less common" or "same
 * frequency" it becomes that phrase. Matching is case-sensitive, as there.
 * Whitespace is Python's str.isspace set: ASCII \t\n\v\f\r \x1c-\x1f and
 * space, and the UTF-8 forms of U+0085, U+00A0, U+1680, U+2000-200A,
 * U+2028/9, U+202F, U+205F, U+3000.
 *
 * The gold is the item's "answer" as a JSON array (its first element
 * counts), or OOLONG's own Python list literal in a string, "['entity']",
 * "[1542]" or "[datetime.date(2023, 3, 4)]", parsed as ast.literal_eval
 * would (bench_pylit_parse; the reference's strptime for dates). How it is
 * scored follows the item's answer_type, as the reference's does:
 * NUMERIC partial credit (the gold must be an integer, a JSON number or a
 * string int() takes), DATE equal dates (the gold must be a date), LABEL,
 * USER, COMPARISON and MONTH_YEAR text only, so that a user ID stored as
 * the number 63685 off by one is wrong, not 0.75 right. Without an
 * answer_type the gold's JSON type decides: a number (an integer within
 * int64) is numeric, a string YYYY-MM-DD or M/D/YYYY that is a real date
 * a date, any other string a label (a string of digits too). Numbers in
 * the prediction are read as Python's int(): ASCII digits, surrounding
 * whitespace, one sign, single '_' between digits ("1_542" is 1542);
 * "1,542", "1542.0" and "1e3" are not numbers (score 0,
 * as int() raises there), nor is anything beyond int64 (score 0 here; a
 * big integer there, which scores 0.75^huge = 0 unless the gold is as big).
 * Dates in the prediction are read like a subset of dateutil.parser.parse:
 * Y-M-D and M/D/Y with '-', '/', '.' or spaces, M/D/Y read day-first when
 * the month would be over 12, YYYYMMDD, month names and abbreviations
 * ("Dec 25, 2023", "25th of December 2023"), weekday names ignored,
 * two-digit years 00-75 as 20xx and 76-99 as 19xx (dateutil's pivot in
 * 2026; there it moves with the clock). A date without a day or a year is
 * no date (dateutil fills it in from today, so scores would depend on the
 * run date); times are never seen, the ':' split cuts them off.
 */
#include "score_int.h"

#include "../common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct ymd {
	int y, m, d;
};

static bool date_valid(const struct ymd *t)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (t->y % 4 == 0 && t->y % 100 != 0) || t->y % 400 == 0;
	if (t->y < 1 || t->y > 9999 || t->m < 1 || t->m > 12 || t->d < 1)
		return false;
	return t->d <= days[t->m - 1] + (t->m == 2 && leap);
}

/* Read 1..max digits at s + *i into *v; false if there are none or more. */
static bool read_digits(const char *s, size_t *i, int min, int max, int *v)
{
	int n = 0;
	*v = 0;
	while (text_is_digit(s[*i]) && n <= max) {
		*v = *v * 10 + (s[*i] - '0');
		(*i)++;
		n++;
	}
	return n >= min && n <= max;
}

/* A date gold: exactly YYYY-MM-DD or M/D/YYYY (one or two digit M and D). */
static bool gold_date(const char *s, struct ymd *t)
{
	size_t i = 0;
	if (read_digits(s, &i, 4, 4, &t->y) && s[i] == '-') {
		i++;
		if (!read_digits(s, &i, 1, 2, &t->m) || s[i++] != '-' ||
		    !read_digits(s, &i, 1, 2, &t->d))
			return false;
	} else {
		i = 0;
		if (!read_digits(s, &i, 1, 2, &t->m) || s[i++] != '/' ||
		    !read_digits(s, &i, 1, 2, &t->d) || s[i++] != '/' ||
		    !read_digits(s, &i, 4, 4, &t->y))
			return false;
	}
	return s[i] == '\0' && date_valid(t);
}

static const char *const month_names[] = {"january",   "february", "march",    "april",
					  "may",       "june",	   "july",     "august",
					  "september", "october",  "november", "december"};
static const char *const skip_words[] = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue",
    "wed",    "thu",	 "fri",	      "sat",	  "sun",    "at",	"on",	  "and", "of"};

/* 1-12 for a month name or its 3-letter (or "sept") abbreviation; -1 for a
 * word dateutil skips; 0 for anything else. */
static int date_word(const char *w, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(month_names); i++) {
		size_t full = strlen(month_names[i]);
		if ((n == full || n == 3 || (i == 8 && n == 4)) && n <= full &&
		    strncasecmp(w, month_names[i], n) == 0)
			return (int)i + 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(skip_words); i++)
		if (strlen(skip_words[i]) == n && strncasecmp(w, skip_words[i], n) == 0)
			return -1;
	return 0;
}

static int year_of(int v, int ndig)
{
	if (ndig > 2)
		return v;
	return v <= 75 ? 2000 + v : 1900 + v;
}

/* A date in a prediction, as the subset of dateutil.parser.parse that the
 * DESIGN note lists. */
static bool pred_date(const char *s, struct ymd *t)
{
	int num[3], ndig[3], nn = 0, month = 0;
	size_t i = 0, n = strlen(s), k;
	while (i < n) {
		if ((k = bench_score_py_space_len(s + i, n - i))) {
			i += k;
		} else if (strchr(",-/.;'", s[i])) {
			i++;
		} else if (text_is_digit(s[i])) {
			size_t st = i, nd;
			int v = 0;
			while (i < n && text_is_digit(s[i]) && i - st < 9)
				v = v * 10 + (s[i++] - '0');
			if ((i < n && text_is_digit(s[i])) || nn == 3)
				return false;
			nd = i - st;
			if (i + 1 < n &&
			    (!strncasecmp(s + i, "st", 2) || !strncasecmp(s + i, "nd", 2) ||
			     !strncasecmp(s + i, "rd", 2) || !strncasecmp(s + i, "th", 2)))
				i += 2;
			if (i < n && text_is_alpha(s[i]))
				return false;
			num[nn] = v;
			ndig[nn++] = (int)nd;
		} else if (text_is_alpha(s[i])) {
			size_t st = i;
			while (i < n && text_is_alpha(s[i]))
				i++;
			int w = date_word(s + st, i - st);
			if (w == 0 || (w > 0 && month))
				return false;
			if (w > 0)
				month = w;
		} else {
			return false;
		}
	}
	if (!month && nn == 1 && ndig[0] == 8) {
		t->y = num[0] / 10000, t->m = num[0] / 100 % 100, t->d = num[0] % 100;
	} else if (month && nn == 2) {
		bool first_year = ndig[0] > 2 || num[0] > 31;
		int yi = first_year ? 0 : 1;
		t->m = month;
		t->y = year_of(num[yi], ndig[yi]);
		t->d = num[1 - yi];
	} else if (!month && nn == 3) {
		bool ymd = ndig[0] > 2 || num[0] > 31;
		int a = ymd ? num[1] : num[0], b = ymd ? num[2] : num[1];
		int yi = ymd ? 0 : 2;
		bool swap = !ymd && a > 12 && b <= 12;
		t->y = year_of(num[yi], ndig[yi]);
		t->m = swap ? b : a;
		t->d = swap ? a : b;
	} else {
		return false;
	}
	return date_valid(t);
}

/* Python's int(s) for base 10 within int64: 1 a number, 0 not a number,
 * -1 a number beyond int64. */
static int py_int(const char *s, int64_t *out)
{
	size_t n = strlen(s), b, e;
	bool neg = false, digit = false;
	uint64_t v = 0, lim;
	int big = 0;
	bench_score_py_strip(s, n, &b, &e);
	if (b < e && (s[b] == '+' || s[b] == '-'))
		neg = s[b++] == '-';
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (size_t i = b; i < e; i++) {
		if (s[i] == '_' && digit && i + 1 < e && text_is_digit(s[i + 1])) {
			continue;
		}
		if (!text_is_digit(s[i]))
			return 0;
		digit = true;
		if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
			big = 1;
		else
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!digit)
		return 0;
	if (big)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 1;
}

enum { OOL_AUTO = -1, OOL_LABEL, OOL_NUMERIC, OOL_DATE };

struct oolong_gold {
	int type;	  /* OOL_* */
	const char *text; /* str(gold) */
	int64_t num;	  /* OOL_NUMERIC */
	struct ymd date;  /* OOL_DATE */
	char buf[32];	  /* text of a number gold */
	cJSON *parsed;	  /* a Python literal gold, parsed; owned */
};

/* OOLONG's ANSWER_TYPE names and how each is scored. */
static const struct {
	const char *name;
	int type;
} answer_types[] = {
    {"LABEL", OOL_LABEL},      {"USER", OOL_LABEL},	 {"COMPARISON", OOL_LABEL},
    {"MONTH_YEAR", OOL_LABEL}, {"NUMERIC", OOL_NUMERIC}, {"DATE", OOL_DATE},
};

/* The scoring type of answer_type "ANSWER_TYPE.NUMERIC" or "NUMERIC" (any
 * case); NULL: OOL_AUTO. */
static int answer_type_of(const char *t, int *type, struct rlm_err *err)
{
	const char *name = t;
	*type = OOL_AUTO;
	if (!t)
		return 0;
	if (strncasecmp(t, "ANSWER_TYPE.", 12) == 0)
		name += 12;
	for (size_t i = 0; i < ARRAY_SIZE(answer_types); i++)
		if (strcasecmp(name, answer_types[i].name) == 0) {
			*type = answer_types[i].type;
			return 0;
		}
	return rlm_err_set(err, RLM_EINVAL,
			   "unknown answer_type '%.60s' for scorer 'oolong' (known: LABEL, USER, "
			   "COMPARISON, MONTH_YEAR, NUMERIC, DATE, with or without ANSWER_TYPE.)",
			   t);
}

/* OOLONG stores its golds as Python list literals ("['entity']"): a gold
 * string that opens with '[' is one, and its first element is the gold. */
static int gold_literal(const cJSON *gold, struct oolong_gold *g, const cJSON **e,
			struct rlm_err *err)
{
	const char *s = gold->valuestring;
	int rc = bench_pylit_parse(s, strlen(s), &g->parsed, err);
	if (rc) {
		rlm_err_prefix(err, "gold answer for scorer 'oolong'");
		return rc;
	}
	if (!cJSON_IsArray(g->parsed))
		return rlm_err_set(err, RLM_EINVAL,
				   "gold answer for scorer 'oolong' is not a Python list");
	if (!(*e = g->parsed->child))
		return bench_score_gold_empty("oolong", err);
	return 0;
}

/* The gold (its first element) as the answer type says, or from its JSON
 * type: a number is numeric, a date string a date, any other string a
 * label. */
static int oolong_gold(const cJSON *gold, const char *answer_type, struct oolong_gold *g,
		       struct rlm_err *err)
{
	const cJSON *e;
	int type, rc = bench_score_gold_shape("oolong", gold, err);
	memset(g, 0, sizeof(*g));
	if (rc || (rc = answer_type_of(answer_type, &type, err)))
		return rc;
	if (cJSON_IsString(gold) &&
	    gold->valuestring[strspn(gold->valuestring, " \t\r\n")] == '[') {
		if ((rc = gold_literal(gold, g, &e, err)))
			return rc;
	} else if (!(e = bench_score_gold_next(gold, NULL))) {
		return bench_score_gold_empty("oolong", err);
	}
	if (cJSON_IsNumber(e)) {
		if (type == OOL_DATE || !bench_score_num_is_int(e->valuedouble))
			return rlm_err_set(
			    err, RLM_EINVAL,
			    "gold answer for scorer 'oolong' is the number %g, which "
			    "is no %s",
			    e->valuedouble, type == OOL_DATE ? "date" : "integer");
		g->type = type == OOL_AUTO ? OOL_NUMERIC : type;
		g->num = (int64_t)e->valuedouble;
		bench_score_num_text(e->valuedouble, g->buf, sizeof(g->buf));
		g->text = g->buf;
		return 0;
	}
	if (!cJSON_IsString(e))
		return rlm_err_set(err, RLM_EINVAL,
				   "gold answer for scorer 'oolong' is not a string or number");
	g->text = e->valuestring;
	g->type = type == OOL_AUTO ? OOL_LABEL : type;
	if (type == OOL_NUMERIC && py_int(g->text, &g->num) != 1)
		return rlm_err_set(
		    err, RLM_EINVAL,
		    "gold answer for scorer 'oolong' is '%.60s', which is no integer "
		    "(answer_type NUMERIC)",
		    g->text);
	if (type == OOL_AUTO || type == OOL_DATE) {
		if (gold_date(g->text, &g->date))
			g->type = OOL_DATE;
		else if (type == OOL_DATE)
			return rlm_err_set(
			    err, RLM_EINVAL,
			    "gold answer for scorer 'oolong' is '%.60s', which is no "
			    "date (answer_type DATE: want YYYY-MM-DD, M/D/YYYY or "
			    "datetime.date(Y, M, D))",
			    g->text);
	}
	return 0;
}

/* synth_attempt_answer_parse: the candidate answer in a fresh string, or
 * NULL for a long answer without a word (where the reference raises). */
static char *oolong_candidate(const char *a)
{
	static const char *const phrases[] = {"more common", "less common", "same frequency"};
	size_t n = strlen(a), b, e, k, o = 0;
	const char *colon = strrchr(a, ':');
	char *c;
	if (!colon) {
		size_t i = 0, ws = 0, we = 0;
		if (text_utf8_count(a, n) < 20)
			return xstrdup(a);
		while (i < n) {
			if ((k = bench_score_py_space_len(a + i, n - i))) {
				i += k;
				continue;
			}
			ws = i;
			while (i < n && !bench_score_py_space_len(a + i, n - i))
				i++;
			we = i;
		}
		return we > ws ? xstrndup(a + ws, we - ws) : NULL;
	}
	colon++;
	bench_score_py_strip(colon, strlen(colon), &b, &e);
	c = xmalloc(e - b + 1);
	for (size_t i = b; i < e; i++)
		if (colon[i] != '*' && colon[i] != '[' && colon[i] != ']')
			c[o++] = colon[i];
	c[o] = '\0';
	if (text_utf8_count(c, o) < 20)
		return c;
	for (size_t i = 0; i < ARRAY_SIZE(phrases); i++) {
		if (strstr(c, phrases[i])) {
			free(c);
			return xstrdup(phrases[i]);
		}
	}
	return c;
}

static double oolong_match(const char *cand, const struct oolong_gold *g)
{
	struct ymd d;
	int64_t v;
	if (strcmp(cand, g->text) == 0)
		return 1;
	if (!strcmp(cand, "more common") || !strcmp(cand, "less common") ||
	    !strcmp(cand, "same frequency"))
		return strstr(g->text, cand) ? 1 : 0;
	if (g->type == OOL_NUMERIC) {
		if (py_int(cand, &v) != 1)
			return 0;
		uint64_t diff =
		    g->num >= v ? (uint64_t)g->num - (uint64_t)v : (uint64_t)v - (uint64_t)g->num;
		return pow(0.75, (double)diff);
	}
	if (g->type == OOL_DATE)
		return pred_date(cand, &d) && d.y == g->date.y && d.m == g->date.m &&
		       d.d == g->date.d;
	return 0;
}

int bench_score_oolong(const char *pred, const cJSON *gold, const char *answer_type, double *score,
		 struct rlm_err *err)
{
	struct oolong_gold g;
	char *cand;
	int rc = oolong_gold(gold, answer_type, &g, err);
	if (!rc && pred && (cand = oolong_candidate(pred))) {
		*score = oolong_match(cand, &g);
		free(cand);
	}
	cJSON_Delete(g.parsed);
	return rc;
}
