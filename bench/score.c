/* SPDX-License-Identifier: MIT */
/* bench/score.c -- the scorers of `rlm bench`: RULER's string_match_all,
 * normalized exact match, OOLONG's synth scorer, OOLONG-Pairs set F1 and
 * multiple choice.
 *
 * DESIGN
 * Each scorer checks the gold's shape first and only then looks at the
 * prediction, so a malformed dataset is an error even on a run with no
 * answers. The scorers copy their reference implementations' rules, quirks
 * included, where a reference exists:
 *
 * contains_all is RULER's string_match_all: the share of golds r with
 * r.lower() in pred.lower(). Lowercasing is ASCII only (bytes >= 0x80 pass
 * through unchanged, so UTF-8 stays valid); an empty gold string is always
 * found, an empty gold array is an error (RULER divides by zero).
 *
 * oolong is OOLONG's synth scorer: bench/score_oolong.c.
 *
 * set_f1 follows the community scorers of OOLONG-Pairs: every match of
 * \(?\s*(\d+)\s*,\s*(\d+)\s*\)? scanned left to right without overlap, as
 * re.findall does (so "1,542" in prose is the pair (1, 542)), ASCII digits
 * and whitespace, numbers of any length compared by value. A gold string
 * must be exactly one such match; a gold array two non-negative integers.
 *
 * exact and mc have no single reference. exact lowercases (ASCII), strips
 * surrounding ASCII whitespace and punctuation and then a leading
 * "answer:" (space before the ':' allowed), strips again, collapses inner
 * whitespace runs to one space, on both sides. mc takes, in this order: the
 * first choice right after a word "answer", "choice" or "option" (then
 * optional ':', '=', '-', '*', spaces and one "is"); else the first choice
 * token anywhere: "(X)" or "[X]" with X in A-D, a-d or 0-3, an uppercase
 * A-D standing alone, or a digit 0-3 standing alone (not part of a number
 * such as 12 or 2.5). A lowercase bare letter counts only after a marker
 * and before punctuation or the end (so the article in "is a guess" does
 * not). A sentence opening with the article "A" and no marker reads as
 * choice A: a known limit.
 */
#include "score_int.h"

#include "../common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A scorer; answer_type is the item's, which only oolong reads. */
typedef int score_fn(const char *pred, const cJSON *gold, const char *answer_type, double *score,
		     struct rlm_err *err);

/* ---- characters (ASCII classes; bytes >= 0x80 count as word characters) ---- */

static bool is_word(int c)
{
	return text_is_alnum(c) || c == '_' || (unsigned char)c >= 0x80;
}

static bool is_punct(int c)
{
	return c > ' ' && c < 0x7f && !text_is_alnum(c);
}

static char *lower_dup(const char *s)
{
	char *d = xstrdup(s);
	for (char *p = d; *p; p++)
		*p = (char)text_to_lower((unsigned char)*p);
	return d;
}

size_t bench_score_py_space_len(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return (text_is_space(s[0]) || (s[0] >= 0x1c && s[0] <= 0x1f)) ? 1 : 0;
	if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;
	if (n < 3)
		return 0;
	if (s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80)
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x80 &&
	    (s[2] <= 0x8a || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf) && s[2] >= 0x80)
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
		return 3;
	if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;
	return 0;
}

void bench_score_py_strip(const char *s, size_t n, size_t *b, size_t *e)
{
	size_t i = 0, k, start = n, end = n;
	bool seen = false;
	while (i < n) {
		if ((k = bench_score_py_space_len(s + i, n - i))) {
			i += k;
			continue;
		}
		if (!seen)
			start = i;
		seen = true;
		i++;
		end = i;
	}
	*b = seen ? start : 0;
	*e = seen ? end : 0;
}

/* ---- gold elements ---- */

const cJSON *bench_score_gold_next(const cJSON *gold, const cJSON *prev)
{
	if (cJSON_IsArray(gold))
		return prev ? prev->next : gold->child;
	return prev ? NULL : gold;
}

int bench_score_gold_shape(const char *scorer, const cJSON *gold, struct rlm_err *err)
{
	if (!gold)
		return rlm_err_set(err, RLM_EINVAL, "no gold answer for scorer '%s'", scorer);
	if (!cJSON_IsArray(gold) && !cJSON_IsString(gold) && !cJSON_IsNumber(gold))
		return rlm_err_set(err, RLM_EINVAL,
				   "gold answer for scorer '%s' is not an array, string or number",
				   scorer);
	return 0;
}

bool bench_score_num_is_int(double v)
{
	return isfinite(v) && v == trunc(v) && fabs(v) < 9.2e18;
}

void bench_score_num_text(double v, char *out, size_t n)
{
	if (bench_score_num_is_int(v)) {
		snprintf(out, n, "%lld", (long long)v);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(out, n, "%.*g", p, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/* The text of element e (a string, or a number formatted into tmp). */
static int gold_text(const char *scorer, const cJSON *e, char *tmp, size_t n, const char **out,
		     struct rlm_err *err)
{
	if (cJSON_IsString(e)) {
		*out = e->valuestring;
		return 0;
	}
	if (cJSON_IsNumber(e)) {
		bench_score_num_text(e->valuedouble, tmp, n);
		*out = tmp;
		return 0;
	}
	return rlm_err_set(err, RLM_EINVAL,
			   "gold answer for scorer '%s' holds something other than strings",
			   scorer);
}

int bench_score_gold_empty(const char *scorer, struct rlm_err *err)
{
	return rlm_err_set(err, RLM_EINVAL, "gold answer for scorer '%s' is empty", scorer);
}

/* ---- contains_all: RULER string_match_all ---- */

static int score_contains_all(const char *pred, const cJSON *gold, const char *type RLM_UNUSED,
			      double *score, struct rlm_err *err)
{
	char tmp[64], *lp = pred ? lower_dup(pred) : NULL;
	const char *t = NULL;
	size_t n = 0, hit = 0;
	int rc = bench_score_gold_shape("contains_all", gold, err);
	for (const cJSON *e = bench_score_gold_next(gold, NULL); !rc && e; e = bench_score_gold_next(gold, e)) {
		if ((rc = gold_text("contains_all", e, tmp, sizeof(tmp), &t, err)))
			break;
		n++;
		if (lp) {
			char *lt = lower_dup(t);
			hit += strstr(lp, lt) != NULL;
			free(lt);
		}
	}
	if (!rc && n == 0)
		rc = bench_score_gold_empty("contains_all", err);
	if (!rc)
		*score = (double)hit / (double)n;
	free(lp);
	return rc;
}

/* ---- exact: normalized exact match against any alias ---- */

static void trim_space_punct(const char *s, size_t *b, size_t *e)
{
	while (*b < *e && (text_is_space(s[*b]) || is_punct(s[*b])))
		(*b)++;
	while (*e > *b && (text_is_space(s[*e - 1]) || is_punct(s[*e - 1])))
		(*e)--;
}

/* The normalized form of s; the caller frees it. */
static char *exact_norm(const char *s)
{
	size_t b = 0, e = strlen(s), o = 0;
	char *out = xmalloc(e + 1);
	bool space = false;
	trim_space_punct(s, &b, &e);
	if (e - b >= 6 && strncasecmp(s + b, "answer", 6) == 0) {
		size_t j = b + 6;
		while (j < e && text_is_space(s[j]))
			j++;
		if (j < e && s[j] == ':') {
			b = j + 1;
			trim_space_punct(s, &b, &e);
		}
	}
	for (size_t i = b; i < e; i++) {
		if (text_is_space(s[i])) {
			space = true;
			continue;
		}
		if (space)
			out[o++] = ' ';
		space = false;
		out[o++] = (char)text_to_lower((unsigned char)s[i]);
	}
	out[o] = '\0';
	return out;
}

static int score_exact(const char *pred, const cJSON *gold, const char *type RLM_UNUSED,
		       double *score, struct rlm_err *err)
{
	char tmp[64], *np = pred ? exact_norm(pred) : NULL;
	const char *t = NULL;
	size_t n = 0;
	int rc = bench_score_gold_shape("exact", gold, err);
	for (const cJSON *e = bench_score_gold_next(gold, NULL); !rc && e; e = bench_score_gold_next(gold, e)) {
		if ((rc = gold_text("exact", e, tmp, sizeof(tmp), &t, err)))
			break;
		n++;
		if (np && *score == 0) {
			char *nt = exact_norm(t);
			*score = strcmp(np, nt) == 0;
			free(nt);
		}
	}
	if (!rc && n == 0)
		rc = bench_score_gold_empty("exact", err);
	free(np);
	return rc;
}

/* ---- set_f1: OOLONG-Pairs ---- */

struct num {
	const char *p; /* decimal digits without leading zeros ("0" for zero) */
	size_t n;
};

struct pair {
	struct num a, b; /* a <= b */
};

struct pairs {
	struct pair *v;
	size_t n, cap;
};

static size_t skip_ascii_space(const char *s, size_t i)
{
	while (text_is_space(s[i]))
		i++;
	return i;
}

/* \d+ at s + *i; false when there is no digit. */
static bool read_num(const char *s, size_t *i, struct num *out)
{
	size_t st = *i;
	while (text_is_digit(s[*i]))
		(*i)++;
	if (*i == st)
		return false;
	while (st + 1 < *i && s[st] == '0')
		st++;
	out->p = s + st;
	out->n = *i - st;
	return true;
}

static int num_cmp(const struct num *x, const struct num *y)
{
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return memcmp(x->p, y->p, x->n);
}

static int pair_cmp(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;
	int c = num_cmp(&p->a, &q->a);
	return c ? c : num_cmp(&p->b, &q->b);
}

/* \(?\s*(\d+)\s*,\s*(\d+)\s*\)? matched at s + i: the end of the match, or
 * 0 when it does not match there. The result is normalized to (min, max). */
static size_t pair_at(const char *s, size_t i, struct pair *out)
{
	struct num a, b;
	if (s[i] == '(')
		i++;
	i = skip_ascii_space(s, i);
	if (!read_num(s, &i, &a))
		return 0;
	i = skip_ascii_space(s, i);
	if (s[i] != ',')
		return 0;
	i = skip_ascii_space(s, i + 1);
	if (!read_num(s, &i, &b))
		return 0;
	i = skip_ascii_space(s, i);
	if (s[i] == ')')
		i++;
	out->a = num_cmp(&a, &b) <= 0 ? a : b;
	out->b = num_cmp(&a, &b) <= 0 ? b : a;
	return i;
}

static void pairs_push(struct pairs *ps, const struct pair *p)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 16;
		ps->v = xrealloc(ps->v, ps->cap * sizeof(*ps->v));
	}
	ps->v[ps->n++] = *p;
}

/* re.findall over s, then sorted with duplicates dropped. */
static void pairs_find(const char *s, struct pairs *ps)
{
	struct pair p;
	size_t i = 0, end, o = 0;
	while (s[i]) {
		if ((end = pair_at(s, i, &p))) {
			pairs_push(ps, &p);
			i = end;
		} else {
			i++;
		}
	}
	if (ps->n)
		qsort(ps->v, ps->n, sizeof(*ps->v), pair_cmp);
	for (size_t k = 0; k < ps->n; k++)
		if (o == 0 || pair_cmp(&ps->v[o - 1], &ps->v[k]) != 0)
			ps->v[o++] = ps->v[k];
	ps->n = o;
}

/* One gold element as "a,b\n" appended to text: a string that is one
 * match of the pattern, or an array of two non-negative integers (JSON
 * numbers or digit strings). */
static int gold_pair(const cJSON *e, size_t idx, struct buf *text, struct rlm_err *err)
{
	struct pair p;
	if (cJSON_IsString(e)) {
		const char *s = e->valuestring;
		size_t b = skip_ascii_space(s, 0), end = pair_at(s, b, &p);
		if (end && s[skip_ascii_space(s, end)] == '\0')
			return buf_printf(text, "%.*s,%.*s\n", (int)p.a.n, p.a.p, (int)p.b.n,
					  p.b.p);
	} else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2) {
		char part[2][32];
		int k = 0;
		for (const cJSON *x = e->child; x; x = x->next, k++) {
			const char *d = x->valuestring;
			if (cJSON_IsNumber(x) && bench_score_num_is_int(x->valuedouble) &&
			    x->valuedouble >= 0) {
				snprintf(part[k], sizeof(part[k]), "%lld",
					 (long long)x->valuedouble);
				continue;
			}
			if (!cJSON_IsString(x) || !d[0] || strlen(d) >= sizeof(part[k]) ||
			    strspn(d, "0123456789") != strlen(d))
				break;
			snprintf(part[k], sizeof(part[k]), "%s", d);
		}
		if (k == 2)
			return buf_printf(text, "%s,%s\n", part[0], part[1]);
	}
	return rlm_err_set(err, RLM_EINVAL,
			   "gold answer for scorer 'set_f1' has an element %zu that is not a "
			   "pair \"a,b\" or [a, b]",
			   idx);
}

static int score_set_f1(const char *pred, const cJSON *gold, const char *type RLM_UNUSED,
			double *score, struct rlm_err *err)
{
	struct pairs gp = {NULL, 0, 0}, pp = {NULL, 0, 0};
	struct buf text;
	size_t idx = 0, tp = 0, i = 0, j = 0;
	int rc = bench_score_gold_shape("set_f1", gold, err);
	if (!rc && cJSON_IsNumber(gold))
		rc = rlm_err_set(err, RLM_EINVAL, "gold answer for scorer 'set_f1' is a number");
	if (rc)
		return rc;
	buf_init(&text, 0);
	for (const cJSON *e = bench_score_gold_next(gold, NULL); e; e = bench_score_gold_next(gold, e), idx++)
		if ((rc = gold_pair(e, idx, &text, err)))
			goto out;
	if (!pred)
		goto out;
	pairs_find(text.p, &gp);
	pairs_find(pred, &pp);
	if (gp.n == 0 || pp.n == 0) {
		*score = gp.n == pp.n;
		goto out;
	}
	while (i < gp.n && j < pp.n) {
		int c = pair_cmp(&gp.v[i], &pp.v[j]);
		tp += c == 0;
		i += c <= 0;
		j += c >= 0;
	}
	*score = 2.0 * (double)tp / (double)(gp.n + pp.n);
out:
	free(gp.v);
	free(pp.v);
	buf_release(&text);
	return rc;
}

/* ---- mc: multiple choice, A-D taken as 0-3 ---- */

static int choice_of(int c)
{
	if (c >= 'A' && c <= 'D')
		return c - 'A';
	if (c >= 'a' && c <= 'd')
		return c - 'a';
	if (c >= '0' && c <= '3')
		return c - '0';
	return -1;
}

/* The choice token at s[i], or -1. after_marker lets a bare lowercase
 * letter count when punctuation or the end follows it. */
static int mc_at(const char *s, size_t i, bool after_marker)
{
	int c = (unsigned char)s[i], next = c ? (unsigned char)s[i + 1] : 0;
	if (c == '(' || c == '[') {
		int x = next ? choice_of(next) : -1;
		if (x >= 0 && (s[i + 2] == ')' || s[i + 2] == ']'))
			return x;
		return -1;
	}
	if (i > 0 && is_word(s[i - 1]))
		return -1;
	if (c >= 'A' && c <= 'D')
		return is_word(next) ? -1 : c - 'A';
	if (c >= 'a' && c <= 'd' && after_marker)
		return next == 0 || strchr(".,;:!?)]\r\n", next) ? c - 'a' : -1;
	if (c >= '0' && c <= '3') {
		if (is_word(next) || ((next == '.' || next == ',') && text_is_digit(s[i + 2])))
			return -1;
		if (i >= 2 && (s[i - 1] == '.' || s[i - 1] == ',') && text_is_digit(s[i - 2]))
			return -1;
		return c - '0';
	}
	return -1;
}

/* The choice right after the marker word that starts at s + i, or -1. */
static int mc_after_marker(const char *s, size_t i)
{
	static const char *const markers[] = {"answer", "choice", "option"};
	for (size_t m = 0; m < ARRAY_SIZE(markers); m++) {
		size_t n = strlen(markers[m]), j = i + n;
		bool is_done = false;
		if (strncasecmp(s + i, markers[m], n) != 0 || is_word(s[j]))
			continue;
		for (;;) {
			while (s[j] && strchr(" \t\r\n*:=-", s[j]))
				j++;
			if (is_done || strncasecmp(s + j, "is", 2) != 0 || is_word(s[j + 2]))
				break;
			j += 2;
			is_done = true;
		}
		return mc_at(s, j, true);
	}
	return -1;
}

static int mc_choice(const char *s)
{
	int c;
	for (size_t i = 0; s[i]; i++)
		if ((i == 0 || !is_word(s[i - 1])) && (c = mc_after_marker(s, i)) >= 0)
			return c;
	for (size_t i = 0; s[i]; i++)
		if ((c = mc_at(s, i, false)) >= 0)
			return c;
	return -1;
}

static int score_mc(const char *pred, const cJSON *gold, const char *type RLM_UNUSED, double *score,
		    struct rlm_err *err)
{
	const cJSON *e;
	int want = -1, rc = bench_score_gold_shape("mc", gold, err);
	if (rc)
		return rc;
	if (!(e = bench_score_gold_next(gold, NULL)))
		return bench_score_gold_empty("mc", err);
	if (cJSON_IsNumber(e) && bench_score_num_is_int(e->valuedouble) && e->valuedouble >= 0 &&
	    e->valuedouble <= 3) {
		want = (int)e->valuedouble;
	} else if (cJSON_IsString(e)) {
		const char *s = e->valuestring + skip_ascii_space(e->valuestring, 0);
		if (s[0] && s[skip_ascii_space(s, 1)] == '\0')
			want = choice_of((unsigned char)s[0]);
	}
	if (want < 0)
		return rlm_err_set(err, RLM_EINVAL,
				   "gold answer for scorer 'mc' is not a choice 0-3 or A-D");
	if (pred)
		*score = mc_choice(pred) == want;
	return 0;
}

/* ---- the table ---- */

static const struct {
	const char *name;
	score_fn *fn;
} scorers[] = {
    {"contains_all", score_contains_all},
    {"exact", score_exact},
    {"oolong", bench_score_oolong},
    {"set_f1", score_set_f1},
    {"mc", score_mc},
};

bool bench_scorer_known(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(scorers); i++)
		if (strcmp(name, scorers[i].name) == 0)
			return true;
	return false;
}

int bench_score(const char *scorer, const char *prediction, const struct cJSON *gold, double *score,
		struct rlm_err *err)
{
	return bench_score_typed(scorer, NULL, prediction, gold, score, err);
}

int bench_score_typed(const char *scorer, const char *answer_type, const char *prediction,
		      const struct cJSON *gold, double *score, struct rlm_err *err)
{
	*score = 0;
	for (size_t i = 0; scorer && i < ARRAY_SIZE(scorers); i++) {
		if (strcmp(scorer, scorers[i].name) == 0) {
			int rc = scorers[i].fn(prediction, gold, answer_type, score, err);
			if (rc)
				*score = 0;
			return rc;
		}
	}
	return rlm_err_set(err, RLM_EINVAL, "unknown scorer '%s'", scorer ? scorer : "(none)");
}
