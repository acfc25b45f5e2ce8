/* SPDX-License-Identifier: MIT */
/* bench/report.c -- the summary of `rlm bench run`: score tables, latency
 * and cost quantiles, report.md, and two SVG plots drawn by hand.
 *
 * DESIGN
 * The results are grouped once into rows (suite, context size), each with a
 * cell per strategy, and into per-strategy quantiles; the text tables, the
 * Markdown and the plots all read that one grouping, so they cannot
 * disagree. The SVGs are plain SVG 1.1 written with fprintf: no scripts, no
 * external fonts or styles, every user string escaped, so they open offline
 * in any browser and parse as XML. */
#include "bench_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_res_release(struct bench_res *r)
{
	free(r->id);
	free(r->suite);
	free(r->strategy);
	memset(r, 0, sizeof(*r));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_quantile(double *v, size_t n, double q)
{
	double pos, frac;
	size_t lo;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	q = q < 0 ? 0 : q > 1 ? 1 : q;
	pos = q * (double)(n - 1);
	lo = (size_t)pos;
	frac = pos - (double)lo;
	return lo + 1 < n ? v[lo] + frac * (v[lo + 1] - v[lo]) : v[lo];
}

void bench_fmt_tokens(int64_t t, char *buf, size_t n)
{
	if (t >= 1000000 && t % 1000000 == 0)
		snprintf(buf, n, "%lldM", (long long)(t / 1000000));
	else if (t >= 1000000 && t % 100000 == 0)
		snprintf(buf, n, "%.1fM", (double)t / 1e6);
	else if (t >= 1000 && t % 1000 == 0)
		snprintf(buf, n, "%lldk", (long long)(t / 1000));
	else if (t >= 1000 && t % 100 == 0)
		snprintf(buf, n, "%.1fk", (double)t / 1e3);
	else
		snprintf(buf, n, "%lld", (long long)t);
}

/* ---- grouping ---- */

static const double levels[4] = {0.25, 0.50, 0.75, 0.95};

struct cell {
	double sum;    /* of scores */
	size_t n;      /* items */
	size_t failed; /* of which failed */
};

struct row {
	const char *suite; /* borrowed from a result */
	int64_t tokens;
	struct cell *cells; /* one per strategy; owned */
};

struct strat_sum {
	struct cell all; /* every item of the strategy */
	double lat[4];	 /* latency quantiles, seconds */
	double cost[4];	 /* cost quantiles, USD */
	double cost_total;
	size_t cut; /* direct: contexts cut to the window */
};

struct summary {
	const struct bench_report *r;
	struct row *rows; /* by suite (first seen), then tokens ascending */
	size_t n_rows;
	const char **suites; /* distinct, in order of first appearance */
	size_t n_suites;
	struct strat_sum *st; /* per strategy */
	int64_t min_tokens, max_tokens;
};

static long strat_index(const struct bench_report *r, const char *name)
{
	for (size_t i = 0; i < r->n_strategies; i++)
		if (strcmp(r->strategies[i], name) == 0)
			return (long)i;
	return -1;
}

static size_t suite_index(struct summary *s, const char *suite)
{
	for (size_t i = 0; i < s->n_suites; i++)
		if (strcmp(s->suites[i], suite) == 0)
			return i;
	s->suites = xrealloc(s->suites, (s->n_suites + 1) * sizeof(*s->suites));
	s->suites[s->n_suites] = suite;
	return s->n_suites++;
}

static struct row *row_for(struct summary *s, const char *suite, int64_t tokens)
{
	size_t si = suite_index(s, suite), at = s->n_rows;
	/* Rows stay ordered: suite by first appearance, then size. */
	for (size_t i = 0; i < s->n_rows; i++) {
		size_t ri = suite_index(s, s->rows[i].suite);
		if (ri == si && s->rows[i].tokens == tokens)
			return &s->rows[i];
		if (ri > si || (ri == si && s->rows[i].tokens > tokens)) {
			at = i;
			break;
		}
	}
	s->rows = xrealloc(s->rows, (s->n_rows + 1) * sizeof(*s->rows));
	memmove(&s->rows[at + 1], &s->rows[at], (s->n_rows - at) * sizeof(*s->rows));
	s->rows[at] = (struct row){suite, tokens, xcalloc(s->r->n_strategies, sizeof(struct cell))};
	s->n_rows++;
	return &s->rows[at];
}

static void summary_build(struct summary *s, const struct bench_report *r)
{
	double *lat = xcalloc(r->n + 1, sizeof(double)), *cost = xcalloc(r->n + 1, sizeof(double));
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->st = xcalloc(r->n_strategies + 1, sizeof(*s->st));
	for (size_t i = 0; i < r->n; i++) {
		const struct bench_res *x = &r->res[i];
		long k = strat_index(r, x->strategy);
		struct cell *c;
		if (k < 0)
			continue;
		c = &row_for(s, x->suite, x->tokens)->cells[k];
		c->sum += x->score;
		c->n++;
		c->failed += x->failed;
		s->st[k].all.sum += x->score;
		s->st[k].all.n++;
		s->st[k].all.failed += x->failed;
		s->st[k].cut += x->cut;
		s->st[k].cost_total += x->cost;
		if (!s->min_tokens || x->tokens < s->min_tokens)
			s->min_tokens = x->tokens;
		s->max_tokens = RLM_MAX(s->max_tokens, x->tokens);
	}
	for (size_t k = 0; k < r->n_strategies; k++) {
		size_t n = 0;
		for (size_t i = 0; i < r->n; i++) {
			if (strcmp(r->res[i].strategy, r->strategies[k]) != 0)
				continue;
			lat[n] = r->res[i].wall_ms / 1e3;
			cost[n++] = r->res[i].cost;
		}
		for (size_t j = 0; j < 4; j++) {
			s->st[k].lat[j] = bench_quantile(lat, n, levels[j]);
			s->st[k].cost[j] = bench_quantile(cost, n, levels[j]);
		}
	}
	free(lat);
	free(cost);
}

static void summary_release(struct summary *s)
{
	for (size_t i = 0; i < s->n_rows; i++)
		free(s->rows[i].cells);
	free(s->rows);
	free(s->suites);
	free(s->st);
}

/* "0.750 (4)", or "-" for no items. */
static void fmt_cell(const struct cell *c, char *buf, size_t n)
{
	if (!c->n)
		snprintf(buf, n, "-");
	else if (c->failed)
		snprintf(buf, n, "%.3f (%zu, %zu failed)", c->sum / (double)c->n, c->n, c->failed);
	else
		snprintf(buf, n, "%.3f (%zu)", c->sum / (double)c->n, c->n);
}

static void fmt_usd(double v, char *buf, size_t n)
{
	if (v == 0)
		snprintf(buf, n, "0");
	else if (v < 0.001)
		snprintf(buf, n, "%.6f", v);
	else if (v < 1)
		snprintf(buf, n, "%.4f", v);
	else
		snprintf(buf, n, "%.2f", v);
}

/* Seconds with about three significant digits. */
static void fmt_secs(double v, char *buf, size_t n)
{
	snprintf(buf, n, v < 1 ? "%.3f" : v < 100 ? "%.2f" : "%.0f", v);
}

/* ---- text ---- */

void bench_report_print(const struct bench_report *r, FILE *f)
{
	struct summary s;
	char cell[64], size[16];
	int w = 5;
	summary_build(&s, r);
	for (size_t i = 0; i < s.n_suites; i++)
		w = RLM_MAX(w, (int)strlen(s.suites[i]));
	fprintf(f, "score (mean over items, items in parentheses)\n%-*s  %-6s", w, "suite", "size");
	for (size_t k = 0; k < r->n_strategies; k++)
		fprintf(f, "  %-16s", r->strategies[k]);
	fputc('\n', f);
	for (size_t i = 0; i < s.n_rows; i++) {
		bench_fmt_tokens(s.rows[i].tokens, size, sizeof(size));
		fprintf(f, "%-*s  %-6s", w, s.rows[i].suite, size);
		for (size_t k = 0; k < r->n_strategies; k++) {
			fmt_cell(&s.rows[i].cells[k], cell, sizeof(cell));
			fprintf(f, "  %-16s", cell);
		}
		fputc('\n', f);
	}
	fprintf(f, "%-*s  %-6s", w, "all", "");
	for (size_t k = 0; k < r->n_strategies; k++) {
		fmt_cell(&s.st[k].all, cell, sizeof(cell));
		fprintf(f, "  %-16s", cell);
	}
	fprintf(f, "\n\n%-9s %5s  %-31s  %s\n%-9s %5s  %7s %7s %7s %7s  %9s %9s %9s %9s  %9s\n",
		"per item", "", "latency (s)", "cost (USD)", "strategy", "items", "p25", "p50",
		"p75", "p95", "p25", "p50", "p75", "p95", "total");
	for (size_t k = 0; k < r->n_strategies; k++) {
		const struct strat_sum *t = &s.st[k];
		char c[5][24], l[4][24];
		for (size_t j = 0; j < 4; j++) {
			fmt_usd(t->cost[j], c[j], sizeof(c[j]));
			fmt_secs(t->lat[j], l[j], sizeof(l[j]));
		}
		fmt_usd(t->cost_total, c[4], sizeof(c[4]));
		fprintf(f, "%-9s %5zu  %7s %7s %7s %7s  %9s %9s %9s %9s  %9s\n", r->strategies[k],
			t->all.n, l[0], l[1], l[2], l[3], c[0], c[1], c[2], c[3], c[4]);
	}
	summary_release(&s);
}

/* ---- Markdown ---- */

/* A table cell: '|' and newlines would break the row. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void write_md(FILE *f, const struct bench_report *r, const struct summary *s)
{
	char cell[64], size[16];
	fprintf(f, "# rlm bench run\n\n- date: %s\n- command: `%s`\n- models: %s\n- datasets:",
		r->date, r->command, r->models);
	for (size_t i = 0; i < r->n_datasets; i++)
		fprintf(f, "%s`%s`", i ? ", " : " ", r->datasets[i]);
	fprintf(f, "\n\n## Score\n\nMean score per suite, context size (tokens) and strategy;"
		   " items in parentheses. Each item is scored in [0, 1] by its own scorer.\n\n"
		   "| suite | size |");
	for (size_t k = 0; k < r->n_strategies; k++)
		fprintf(f, " %s |", r->strategies[k]);
	fputs("\n|---|---:|", f);
	for (size_t k = 0; k < r->n_strategies; k++)
		fputs("---:|", f);
	fputc('\n', f);
	for (size_t i = 0; i < s->n_rows; i++) {
		bench_fmt_tokens(s->rows[i].tokens, size, sizeof(size));
		fputs("| ", f);
		md_text(f, s->rows[i].suite);
		fprintf(f, " | %s |", size);
		for (size_t k = 0; k < r->n_strategies; k++) {
			fmt_cell(&s->rows[i].cells[k], cell, sizeof(cell));
			fprintf(f, " %s |", cell);
		}
		fputc('\n', f);
	}
	fputs("| **all** | |", f);
	for (size_t k = 0; k < r->n_strategies; k++) {
		fmt_cell(&s->st[k].all, cell, sizeof(cell));
		fprintf(f, " **%s** |", cell);
	}
	fputs("\n\n![mean score against context length](score_vs_length.svg)\n\n"
	      "## Latency and cost per item\n\n"
	      "Wall time of each item's solve (its context's loading included) and its cost,"
	      " at the 25th, 50th, 75th and 95th percentiles.\n\n"
	      "| strategy | items | latency p25 | p50 | p75 | p95 | cost p25 | p50 | p75 | p95 |"
	      " total cost |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	      f);
	for (size_t k = 0; k < r->n_strategies; k++) {
		const struct strat_sum *t = &s->st[k];
		char c[5][24], l[4][24];
		for (size_t j = 0; j < 4; j++) {
			fmt_usd(t->cost[j], c[j], sizeof(c[j]));
			fmt_secs(t->lat[j], l[j], sizeof(l[j]));
		}
		fmt_usd(t->cost_total, c[4], sizeof(c[4]));
		fprintf(f,
			"| %s | %zu | %s s | %s s | %s s | %s s | $%s | $%s | $%s | $%s | $%s |\n",
			r->strategies[k], t->all.n, l[0], l[1], l[2], l[3], c[0], c[1], c[2], c[3],
			c[4]);
	}
	fputs("\n![latency and cost per item at p25, p50, p75 and p95](cost_latency.svg)\n", f);
	if (r->notes && *r->notes)
		fprintf(f, "\n## Notes\n\n%s\n", r->notes);
}

/* ---- SVG ---- */

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			/* XML 1.0 has no place for other control characters. */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

static const char *strat_color(const char *name, size_t k)
{
	static const char *const extra[] = {"#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
	if (strcmp(name, "repl") == 0)
		return "#1f77b4";
	if (strcmp(name, "tree") == 0)
		return "#2ca02c";
	if (strcmp(name, "direct") == 0)
		return "#d62728";
	return extra[k % ARRAY_SIZE(extra)];
}

static const char *const dashes[] = {"", "7,4", "2,3", "9,3,2,3"};

static void svg_marker(FILE *f, size_t shape, double x, double y, const char *color)
{
	switch (shape % 4) {
	case 0:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\"", x, y);
		break;
	case 1:
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\"", x - 4, y - 4);
		break;
	case 2:
		fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - 5, x - 5,
			y + 4, x + 5, y + 4);
		break;
	default:
		fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - 5,
			x + 5, y, x, y + 5, x - 5, y);
	}
	fprintf(f, " fill=\"%s\" stroke=\"white\" stroke-width=\"1\"/>\n", color);
}

static void svg_open(FILE *f, int w, int h, const char *title, const char *desc)
{
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" "
		"font-size=\"12\">\n<title>",
		w, h, w, h);
	svg_text(f, title);
	fputs("</title>\n<desc>", f);
	svg_text(f, desc);
	fprintf(f, "</desc>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The distinct sizes of the rows, ascending, into *out (the caller's to
 * free); returns how many. */
static size_t distinct_sizes(const struct summary *s, int64_t **out)
{
	int64_t *v = xcalloc(s->n_rows + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < s->n_rows; i++)
		v[i] = s->rows[i].tokens;
	qsort(v, s->n_rows, sizeof(*v), cmp_i64);
	for (size_t i = 0; i < s->n_rows; i++)
		if (!n || v[n - 1] != v[i])
			v[n++] = v[i];
	*out = v;
	return n;
}

#define SL_L 70.0 /* score_vs_length: the plot area */
#define SL_R 560.0
#define SL_T 50.0
#define SL_B 390.0

static void write_score_svg(FILE *f, const struct bench_report *r, const struct summary *s)
{
	size_t n_series = s->n_suites * r->n_strategies, n_sizes = 0;
	int h = (int)RLM_MAX(460.0, 80.0 + 20.0 * (double)n_series);
	double lo = log10((double)RLM_MAX(s->min_tokens, 1)),
	       hi = log10((double)RLM_MAX(s->max_tokens, 1));
	double pad, legend_y = SL_T + 10;
	double last_label = -100;
	int64_t *sizes;
	char size[16];
	if (hi - lo < 0.3) {
		lo -= 0.3;
		hi += 0.3;
	}
	pad = (hi - lo) * 0.08;
	lo -= pad;
	hi += pad;
	svg_open(f, 800, h, "Score vs context length",
		 "Mean score of each suite and strategy against the context length in tokens "
		 "(log scale); points of different strategies at one size are nudged apart "
		 "sideways by a few pixels.");
	fprintf(f,
		"<text x=\"%.0f\" y=\"28\" font-size=\"16\" font-weight=\"bold\">Score vs "
		"context length</text>\n",
		SL_L);
	/* y grid */
	for (int i = 0; i <= 4; i++) {
		double y = SL_B - (SL_B - SL_T) * i / 4.0;
		fprintf(f,
			"<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
			SL_L, y, SL_R, y, SL_L - 8, y + 4, i / 4.0);
	}
	/* x grid: every size measured, but labels that would touch (decades
	 * when there are many) */
	n_sizes = distinct_sizes(s, &sizes);
	for (size_t i = 0; i < n_sizes && n_sizes <= 10; i++) {
		double x =
		    SL_L + (SL_R - SL_L) * (log10((double)RLM_MAX(sizes[i], 1)) - lo) / (hi - lo);
		bench_fmt_tokens(sizes[i], size, sizeof(size));
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
			x, SL_T, x, SL_B);
		if (x - last_label < 36)
			continue;
		last_label = x;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x,
			SL_B + 18, size);
	}
	free(sizes);
	for (int d = (int)ceil(lo); n_sizes > 10 && d <= (int)floor(hi); d++) {
		double x = SL_L + (SL_R - SL_L) * (d - lo) / (hi - lo);
		bench_fmt_tokens((int64_t)pow(10, d), size, sizeof(size));
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
			x, SL_T, x, SL_B, x, SL_B + 18, size);
	}
	fprintf(f,
		"<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#444\"/>\n<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">context "
		"length (tokens, log scale)</text>\n<text x=\"18\" y=\"%.0f\" "
		"text-anchor=\"middle\" transform=\"rotate(-90 18 %.0f)\">mean score</text>\n",
		SL_L, SL_T, SL_R - SL_L, SL_B - SL_T, (SL_L + SL_R) / 2, SL_B + 42,
		(SL_T + SL_B) / 2, (SL_T + SL_B) / 2);
	for (size_t si = 0; si < s->n_suites; si++) {
		for (size_t k = 0; k < r->n_strategies; k++) {
			const char *color = strat_color(r->strategies[k], k);
			double nudge = ((double)k - (double)(r->n_strategies - 1) / 2) * 3;
			bool any = false;
			fprintf(f,
				"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s "
				"points=\"",
				color, *dashes[si % 4] ? " stroke-dasharray=\"" : "",
				dashes[si % 4], *dashes[si % 4] ? "\"" : "");
			for (size_t i = 0; i < s->n_rows; i++) {
				const struct cell *c = &s->rows[i].cells[k];
				if (strcmp(s->rows[i].suite, s->suites[si]) != 0 || !c->n)
					continue;
				fprintf(
				    f, "%s%.1f,%.1f", any ? " " : "",
				    SL_L + nudge +
					(SL_R - SL_L) *
					    (log10((double)RLM_MAX(s->rows[i].tokens, 1)) - lo) /
					    (hi - lo),
				    SL_B - (SL_B - SL_T) * c->sum / (double)c->n);
				any = true;
			}
			fputs("\"/>\n", f);
			for (size_t i = 0; i < s->n_rows; i++) {
				const struct cell *c = &s->rows[i].cells[k];
				if (strcmp(s->rows[i].suite, s->suites[si]) != 0 || !c->n)
					continue;
				svg_marker(
				    f, si,
				    SL_L + nudge +
					(SL_R - SL_L) *
					    (log10((double)RLM_MAX(s->rows[i].tokens, 1)) - lo) /
					    (hi - lo),
				    SL_B - (SL_B - SL_T) * c->sum / (double)c->n, color);
			}
			/* the legend entry */
			fprintf(f,
				"<line x1=\"580\" y1=\"%.0f\" x2=\"610\" y2=\"%.0f\" stroke=\"%s\" "
				"stroke-width=\"2\"%s%s%s/>\n",
				legend_y, legend_y, color,
				*dashes[si % 4] ? " stroke-dasharray=\"" : "", dashes[si % 4],
				*dashes[si % 4] ? "\"" : "");
			svg_marker(f, si, 595, legend_y, color);
			fprintf(f, "<text x=\"618\" y=\"%.0f\">", legend_y + 4);
			svg_text(f, s->suites[si]);
			fprintf(f, " / %s</text>\n", r->strategies[k]);
			legend_y += 20;
		}
	}
	fputs("</svg>\n", f);
}

/* A round upper bound for an axis from 0 to v > 0: 1, 2, 2.5 or 5 times a
 * power of ten. */
static double nice_max(double v)
{
	double e, m;
	e = pow(10, floor(log10(v)));
	m = v / e;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * e;
}

/* One panel of cost_latency.svg: a box per strategy from p25 to p75, a
 * bar at p50, a whisker up to p95. q[k] holds strategy k's 4 quantiles. */
static void write_panel(FILE *f, const struct bench_report *r, double x0, double x1,
			const double (*q)[4], const char *title, const char *unit)
{
	const double top = 60, bot = 340;
	double max = 0, axis, slot = (x1 - x0) / (double)RLM_MAX(r->n_strategies, 1);
	for (size_t k = 0; k < r->n_strategies; k++)
		max = RLM_MAX(max, q[k][3]);
	axis = max > 0 ? nice_max(max * 1.05) : 1;
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n", x0, top - 16,
		title);
	for (int i = 0; i <= 5; i++) {
		double y = bot - (bot - top) * i / 5.0;
		fprintf(f,
			"<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s%g</text>\n",
			x0, y, x1, y, x0 - 6, y + 4, unit, axis * i / 5.0);
	}
	fprintf(f,
		"<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#444\"/>\n",
		x0, top, x1 - x0, bot - top);
	if (max == 0)
		fprintf(f,
			"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#666\">all "
			"zero</text>\n",
			(x0 + x1) / 2, (top + bot) / 2);
	for (size_t k = 0; k < r->n_strategies; k++) {
		const char *color = strat_color(r->strategies[k], k);
		double cx = x0 + slot * ((double)k + 0.5), w = RLM_MIN(44.0, slot * 0.5);
		double y[4];
		for (size_t j = 0; j < 4; j++)
			y[j] = bot - (bot - top) * q[k][j] / axis;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"1.5\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			"y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\"/>\n"
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
			"fill-opacity=\"0.25\" stroke=\"%s\" stroke-width=\"1.5\"/>\n"
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"3\"/>\n",
			cx, y[2], cx, y[3], color, cx - w / 4, y[3], cx + w / 4, y[3], color,
			cx - w / 2, y[2], w, RLM_MAX(y[0] - y[2], 0.5), color, color, cx - w / 2,
			y[1], cx + w / 2, y[1], color);
		fprintf(f,
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#555\" "
			"font-size=\"11\">p50 %s%.3g%s</text>\n",
			cx, bot + 18, r->strategies[k], cx, bot + 33, unit, q[k][1],
			*unit ? "" : " s");
	}
}

static void write_cost_svg(FILE *f, const struct bench_report *r, const struct summary *s)
{
	double(*lat)[4] = xcalloc(r->n_strategies + 1, sizeof(*lat));
	double(*cost)[4] = xcalloc(r->n_strategies + 1, sizeof(*cost));
	for (size_t k = 0; k < r->n_strategies; k++)
		for (size_t j = 0; j < 4; j++) {
			lat[k][j] = s->st[k].lat[j];
			cost[k][j] = s->st[k].cost[j];
		}
	svg_open(f, 800, 420, "Latency and cost per item",
		 "Per strategy, the wall time (seconds) and cost (USD) of one item: a box from "
		 "the 25th to the 75th percentile, a bar at the median, a whisker up to the "
		 "95th percentile.");
	write_panel(f, r, 70, 380, (const double(*)[4])lat, "Latency per item (s)", "");
	write_panel(f, r, 480, 790, (const double(*)[4])cost, "Cost per item (USD)", "$");
	fputs("<text x=\"400\" y=\"405\" text-anchor=\"middle\" fill=\"#555\">box: p25 to p75;"
	      " bar: p50; whisker: up to p95</text>\n</svg>\n",
	      f);
	free(lat);
	free(cost);
}

/* ---- files ---- */

typedef void writer_fn(FILE *f, const struct bench_report *r, const struct summary *s);

static int write_one(const char *dir, const char *name, writer_fn *fn, const struct bench_report *r,
		     const struct summary *s, struct rlm_err *err)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	int rc = 0;
	if (!f) {
		rc = -errno;
		rlm_err_set(err, rc, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	fn(f, r, s);
	if (ferror(f) | fclose(f)) {
		rc = -EIO;
		rlm_err_set(err, rc, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
	}
out:
	free(path);
	return rc;
}

int bench_report_write(const struct bench_report *r, const char *dir, struct rlm_err *err)
{
	struct summary s;
	int rc;
	summary_build(&s, r);
	if (!(rc = write_one(dir, "report.md", write_md, r, &s, err)) &&
	    !(rc = write_one(dir, "score_vs_length.svg", write_score_svg, r, &s, err)))
		rc = write_one(dir, "cost_latency.svg", write_cost_svg, r, &s, err);
	summary_release(&s);
	return rc;
}
