/* SPDX-License-Identifier: MIT */
/* bench/report_svg.c -- the two plots of `rlm bench run`'s report, drawn
 * by hand: score against context length, and latency and cost per item.
 *
 * DESIGN
 * Plain SVG 1.1 written with fprintf: no scripts, no external fonts or
 * styles, every user string escaped, so they open offline in any browser
 * and parse as XML. They read the summary the tables read
 * (bench/report_int.h). */
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static size_t distinct_sizes(const struct rep_summary *s, int64_t **out)
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

void bench_report_score_svg(FILE *f, const struct bench_report *r, const struct rep_summary *s)
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
				const struct rep_cell *c = &s->rows[i].cells[k];
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
				const struct rep_cell *c = &s->rows[i].cells[k];
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

void bench_report_cost_svg(FILE *f, const struct bench_report *r, const struct rep_summary *s)
{
	double(*lat)[4] = xcalloc(r->n_strategies + 1, sizeof(*lat));
	double(*cost)[4] = xcalloc(r->n_strategies + 1, sizeof(*cost));
	for (size_t k = 0; k < r->n_strategies; k++)
		for (size_t j = 0; j < 4; j++) {
			lat[k][j] = s->st[k].all.lat[j];
			cost[k][j] = s->st[k].all.cost[j];
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
