/* SPDX-License-Identifier: MIT */
/* bench/gen_pairs.c -- OOLONG-Pairs questions: every pair of users that
 * meets a predicate over their hidden labels, in the shapes of the RLM
 * paper's 20 tasks (../shared/research/anchors-paper.md, section 2.3).
 *
 * DESIGN
 * The predicates are drawn, not fixed: a symmetric one ("both users have
 * at least one instance with A or B", half of the time with "all instances
 * that are L for both users must be after/before DATE", L one of A and B)
 * or an asymmetric one (one user meets C1, the other C2; each a
 * conjunction of one to three "at least / exactly one / two instances with
 * L"). An unordered pair qualifies when either orientation of (C1, C2)
 * holds. Everything is decided from the window's per-user label counts and
 * first and last days, so the gold costs O(users^2) whatever the size.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define DRAWS 32 /* predicates tried for a gold neither empty nor every pair */

static const char *const month_name[12] = {
    "January", "February", "March",	"April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December",
};

static const char suffix[] =
    " Each of the questions can be labelled as one of the labels (the data does not provide "
    "the labels, you need to figure out the label from the semantics of the question): "
    "description and abstract concept, entity, human being, numeric value, location, "
    "abbreviation. In your answer, list all pairs in the format (user_id_1, user_id_2), "
    "separated by newlines. If no pair qualifies, answer [].";

static const char prefix[] = "In the above data, list all pairs of user IDs (no duplicate pairs, "
			     "list lower ID first)";

const char *bench_pairs_kind_name(enum pairs_kind k)
{
	return k == PAIRS_SYMMETRIC ? "symmetric" : k == PAIRS_ASYMMETRIC ? "asymmetric" : "?";
}

static const char *article(int label)
{
	return label == OOLONG_ENTY || label == OOLONG_ABBR ? "an" : "a";
}

/* ---- symmetric ---- */

struct sym {
	int a, b;	/* the labels, a != b */
	int date_label; /* a or b; -1: no date condition */
	bool after;	/* all of them after the day, else before */
	int day;
};

static bool sym_holds(const struct oolong_window *w, int u, const struct sym *s)
{
	int l = s->date_label;
	if (w->user_label[u][s->a] + w->user_label[u][s->b] == 0)
		return false;
	if (l < 0 || w->user_label[u][l] == 0)
		return true;
	return s->after ? w->first_day[u][l] > s->day : w->last_day[u][l] < s->day;
}

static void sym_draw(struct rng *r, struct sym *s)
{
	s->a = (int)rng_below(r, OOLONG_LABELS);
	do
		s->b = (int)rng_below(r, OOLONG_LABELS);
	while (s->b == s->a);
	s->date_label = -1;
	if (rng_below(r, 2)) {
		s->date_label = rng_below(r, 2) ? s->a : s->b;
		s->after = rng_below(r, 2);
		s->day = (int)(OOLONG_DAYS / 4 + rng_below(r, OOLONG_DAYS / 2));
	}
}

static void sym_text(const struct sym *s, char *dst, size_t cap)
{
	size_t n = (size_t)snprintf(
	    dst, cap, "%s where both users have at least one instance with %s %s or %s", prefix,
	    article(s->a), bench_oolong_label_name(s->a), bench_oolong_label_name(s->b));
	if (s->date_label >= 0) {
		int y, m, d;
		bench_oolong_day_date(s->day, &y, &m, &d);
		n += (size_t)snprintf(dst + n, cap - n,
				      ", and all instances that are %s %s for both users must be "
				      "%s %s %d, %d",
				      article(s->date_label), bench_oolong_label_name(s->date_label),
				      s->after ? "after" : "before", month_name[m - 1], d, y);
	}
	snprintf(dst + n, cap - n, ".%s", suffix);
}

/* ---- asymmetric ---- */

struct atom {
	int label;
	bool exactly; /* exactly n, else at least n */
	int n;	      /* 1 or 2 */
};

struct conj {
	struct atom a[3];
	int n;
};

static bool conj_holds(const struct oolong_window *w, int u, const struct conj *c)
{
	for (int i = 0; i < c->n; i++) {
		size_t k = w->user_label[u][c->a[i].label];
		if (c->a[i].exactly ? k != (size_t)c->a[i].n : k < (size_t)c->a[i].n)
			return false;
	}
	return true;
}

static void conj_draw(struct rng *r, struct conj *c)
{
	uint64_t x = rng_below(r, 20);
	c->n = x < 8 ? 1 : x < 17 ? 2 : 3;
	for (int i = 0; i < c->n; i++) {
		bool dup;
		do {
			c->a[i].label = (int)rng_below(r, OOLONG_LABELS);
			dup = false;
			for (int j = 0; j < i; j++)
				dup |= c->a[j].label == c->a[i].label;
		} while (dup);
		c->a[i].exactly = rng_below(r, 20) < 7;
		c->a[i].n = rng_below(r, 10) < 7 ? 1 : 2;
	}
}

static size_t conj_text(const struct conj *c, char *dst, size_t cap)
{
	size_t n = 0;
	for (int i = 0; i < c->n; i++) {
		const struct atom *a = &c->a[i];
		const char *sep = i == 0	  ? ""
				  : c->n == 2	  ? " and "
				  : i == c->n - 1 ? ", and "
						  : ", ";
		n += (size_t)snprintf(
		    dst + n, cap - n, "%s%s %s %s with %s", sep,
		    a->exactly ? "exactly" : "at least", a->n == 1 ? "one" : "two",
		    a->n == 1 ? "instance" : "instances", bench_oolong_label_name(a->label));
	}
	return n;
}

/* ---- the gold ---- */

static int cmp_pair(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

struct pred {
	enum pairs_kind kind;
	struct sym s;
	struct conj c1, c2;
};

/* The gold of p over the users with an instance in w. */
static void gold(const struct oolong_window *w, const struct pred *p, struct pairs_question *q)
{
	int n = w->n_users;
	bool *s1 = xcalloc((size_t)n, sizeof(bool)), *s2 = xcalloc((size_t)n, sizeof(bool));
	size_t cap = 0;
	free(q->pairs);
	q->pairs = NULL;
	q->n_pairs = q->users = q->qualifying = 0;
	for (int u = 0; u < n; u++) {
		if (!w->user_lines[u])
			continue;
		q->users++;
		if (p->kind == PAIRS_SYMMETRIC) {
			s1[u] = s2[u] = sym_holds(w, u, &p->s);
		} else {
			s1[u] = conj_holds(w, u, &p->c1);
			s2[u] = conj_holds(w, u, &p->c2);
		}
		q->qualifying += s1[u] || s2[u];
	}
	for (int u = 0; u < n; u++) {
		for (int v = u + 1; v < n; v++) {
			uint32_t a = w->user_id[u], b = w->user_id[v];
			if (!((s1[u] && s2[v]) || (s1[v] && s2[u])))
				continue;
			if (q->n_pairs == cap) {
				cap = cap ? 2 * cap : 256;
				q->pairs = xrealloc(q->pairs, cap * sizeof(*q->pairs));
			}
			q->pairs[q->n_pairs][0] = RLM_MIN(a, b);
			q->pairs[q->n_pairs][1] = RLM_MAX(a, b);
			q->n_pairs++;
		}
	}
	if (q->n_pairs)
		qsort(q->pairs, q->n_pairs, sizeof(*q->pairs), cmp_pair);
	free(s1);
	free(s2);
}

int bench_pairs_ask(const struct oolong_window *w, enum pairs_kind k, struct rng *r,
	      struct pairs_question *q)
{
	struct pred p, keep;
	bool kept = false;
	memset(q, 0, sizeof(*q));
	q->kind = p.kind = k;
	for (int i = 0; i < DRAWS; i++) {
		size_t all;
		if (k == PAIRS_SYMMETRIC) {
			sym_draw(r, &p.s);
		} else {
			conj_draw(r, &p.c1);
			conj_draw(r, &p.c2);
		}
		gold(w, &p, q);
		all = q->users * (q->users - 1) / 2;
		if (q->n_pairs && q->n_pairs < all)
			break; /* neither none nor every pair: the best kind */
		if (q->n_pairs && !kept) {
			keep = p;
			kept = true;
		}
		if (i == DRAWS - 1 && kept) {
			p = keep;
			gold(w, &p, q);
		}
	}
	if (k == PAIRS_SYMMETRIC) {
		sym_text(&p.s, q->question, sizeof(q->question));
	} else {
		size_t n = (size_t)snprintf(q->question, sizeof(q->question),
					    "%s such that one user has ", prefix);
		n += conj_text(&p.c1, q->question + n, sizeof(q->question) - n);
		n += (size_t)snprintf(q->question + n, sizeof(q->question) - n,
				      ", and the other user has ");
		n += conj_text(&p.c2, q->question + n, sizeof(q->question) - n);
		snprintf(q->question + n, sizeof(q->question) - n, ".%s", suffix);
	}
	return 0;
}

void bench_pairs_question_release(struct pairs_question *q)
{
	free(q->pairs);
	q->pairs = NULL;
	q->n_pairs = 0;
}
