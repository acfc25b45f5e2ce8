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
#include "report_int.h"
#include "../common/json.h"

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

const double bench_report_levels[4] = {0.25, 0.50, 0.75, 0.95};

static long strat_index(const struct bench_report *r, const char *name)
{
	for (size_t i = 0; i < r->n_strategies; i++)
		if (strcmp(r->strategies[i], name) == 0)
			return (long)i;
	return -1;
}

static size_t suite_index(struct rep_summary *s, const char *suite)
{
	for (size_t i = 0; i < s->n_suites; i++)
		if (strcmp(s->suites[i], suite) == 0)
			return i;
	s->suites = xrealloc(s->suites, (s->n_suites + 1) * sizeof(*s->suites));
	s->suites[s->n_suites] = suite;
	return s->n_suites++;
}

int64_t bench_size_bucket(int64_t tokens)
{
	int64_t b = 1;
	/* the nearest power of two on a log scale: past b's geometric middle
	 * with b * 2, b * sqrt 2 */
	while (b < ((int64_t)1 << 50) && (double)tokens > (double)b * M_SQRT2)
		b *= 2;
	return b;
}

void bench_fmt_size(int64_t tokens, bool approx, char *buf, size_t n)
{
	if (!approx)
		bench_fmt_tokens(tokens, buf, n);
	else if (tokens >= ((int64_t)1 << 20))
		snprintf(buf, n, "~%lldM", (long long)(tokens >> 20));
	else if (tokens >= 1024)
		snprintf(buf, n, "~%lldk", (long long)(tokens >> 10));
	else
		snprintf(buf, n, "~%lld", (long long)tokens);
}

/* The size x is summarised at. */
static int64_t res_size(const struct bench_res *x)
{
	return x->approx ? bench_size_bucket(x->tokens) : x->tokens;
}

/* The row of (suite, size), made when there is none; NULL with find_only. */
static struct rep_row *row_for(struct rep_summary *s, const char *suite, int64_t tokens,
			       bool approx, bool find_only)
{
	size_t si = suite_index(s, suite), at = s->n_rows;
	/* Rows stay ordered: suite by first appearance, then size, exact
	 * sizes before a bucket of the same. */
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct rep_row *w = &s->rows[i];
		size_t ri = suite_index(s, w->suite);
		if (ri == si && w->tokens == tokens && w->approx == approx)
			return &s->rows[i];
		if (ri > si || (ri == si && (w->tokens > tokens ||
					     (w->tokens == tokens && w->approx > approx)))) {
			at = i;
			break;
		}
	}
	if (find_only)
		return NULL;
	s->rows = xrealloc(s->rows, (s->n_rows + 1) * sizeof(*s->rows));
	memmove(&s->rows[at + 1], &s->rows[at], (s->n_rows - at) * sizeof(*s->rows));
	s->rows[at] = (struct rep_row){suite, tokens, approx,
				       xcalloc(s->r->n_strategies, sizeof(struct rep_cell))};
	s->n_rows++;
	return &s->rows[at];
}

/* c's latency and cost quantiles over the results of strategy k that
 * belong to row w (NULL: to any row); lat and cost hold r->n values. */
static void cell_quantiles(struct rep_summary *s, const struct rep_row *w, size_t k,
			   struct rep_cell *c, double *lat, double *cost)
{
	const struct bench_report *r = s->r;
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct bench_res *x = &r->res[i];
		if (strcmp(x->strategy, r->strategies[k]) != 0)
			continue;
		if (w && !(strcmp(x->suite, w->suite) == 0 && res_size(x) == w->tokens &&
			   x->approx == w->approx))
			continue;
		lat[n] = x->wall_ms / 1e3;
		cost[n++] = x->cost;
	}
	for (size_t j = 0; j < 4; j++) {
		c->lat[j] = bench_quantile(lat, n, bench_report_levels[j]);
		c->cost[j] = bench_quantile(cost, n, bench_report_levels[j]);
	}
}

static void summary_build(struct rep_summary *s, const struct bench_report *r)
{
	double *lat = xcalloc(r->n + 1, sizeof(double)), *cost = xcalloc(r->n + 1, sizeof(double));
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->st = xcalloc(r->n_strategies + 1, sizeof(*s->st));
	for (size_t i = 0; i < r->n; i++) {
		const struct bench_res *x = &r->res[i];
		long k = strat_index(r, x->strategy);
		int64_t size = res_size(x);
		struct rep_cell *c, *all;
		if (k < 0)
			continue;
		c = &row_for(s, x->suite, size, x->approx, false)->cells[k];
		all = &s->st[k].all;
		c->sum += x->score;
		c->n++;
		c->failed += x->failed;
		c->cost_total += x->cost;
		all->sum += x->score;
		all->n++;
		all->failed += x->failed;
		all->cost_total += x->cost;
		s->st[k].cut += x->cut;
		if (x->tools.used) {
			struct bench_tools *t = &s->st[k].tools;
			s->st[k].tool_items++;
			t->discovery += x->tools.discovery;
			t->calls += x->tools.calls;
			t->blind += x->tools.blind;
			t->schema_refused += x->tools.schema_refused;
			t->repeated += x->tools.repeated;
		}
		if (!s->min_tokens || size < s->min_tokens)
			s->min_tokens = size;
		s->max_tokens = RLM_MAX(s->max_tokens, size);
	}
	for (size_t k = 0; k < r->n_strategies; k++) {
		cell_quantiles(s, NULL, k, &s->st[k].all, lat, cost);
		for (size_t i = 0; i < s->n_rows; i++)
			if (s->rows[i].cells[k].n)
				cell_quantiles(s, &s->rows[i], k, &s->rows[i].cells[k], lat, cost);
	}
	free(lat);
	free(cost);
}

static void summary_release(struct rep_summary *s)
{
	for (size_t i = 0; i < s->n_rows; i++)
		free(s->rows[i].cells);
	free(s->rows);
	free(s->suites);
	free(s->st);
}

/* "0.750 (4)", or "-" for no items. */
static void fmt_cell(const struct rep_cell *c, char *buf, size_t n)
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

/* Were host tools configured for any item? */
static bool any_tools(const struct rep_summary *s)
{
	for (size_t k = 0; k < s->r->n_strategies; k++)
		if (s->st[k].tool_items)
			return true;
	return false;
}

/* The discovery health per strategy (docs/tools.md): one line each. */
static void print_tools(const struct rep_summary *s, FILE *f, bool md)
{
	if (!any_tools(s))
		return;
	if (md)
		fputs("\n## Tool discovery\n\nHost tools, summed over the items that had them: "
		      "discovery steps (listings, searches, infos), tool calls, calls made "
		      "without reading the tool's info first, calls refused by the schema "
		      "check, repeated listings and searches.\n\n"
		      "| strategy | items | discovery | calls | without info | schema refused | "
		      "repeated |\n|---|---:|---:|---:|---:|---:|---:|\n",
		      f);
	else
		fprintf(f, "\n%-9s %5s  %9s %7s %12s %14s %9s\n", "tools", "items", "discovery",
			"calls", "without info", "schema refused", "repeated");
	for (size_t k = 0; k < s->r->n_strategies; k++) {
		const struct bench_tools *t = &s->st[k].tools;
		if (!s->st[k].tool_items)
			continue;
		fprintf(f,
			md ? "| %s | %zu | %lld | %lld | %lld | %lld | %lld |\n"
			   : "%-9s %5zu  %9lld %7lld %12lld %14lld %9lld\n",
			s->r->strategies[k], s->st[k].tool_items, (long long)t->discovery,
			(long long)t->calls, (long long)t->blind, (long long)t->schema_refused,
			(long long)t->repeated);
	}
}

void bench_report_print(const struct bench_report *r, FILE *f)
{
	struct rep_summary s;
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
		bench_fmt_size(s.rows[i].tokens, s.rows[i].approx, size, sizeof(size));
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
		const struct rep_cell *t = &s.st[k].all;
		char c[5][24], l[4][24];
		for (size_t j = 0; j < 4; j++) {
			fmt_usd(t->cost[j], c[j], sizeof(c[j]));
			fmt_secs(t->lat[j], l[j], sizeof(l[j]));
		}
		fmt_usd(t->cost_total, c[4], sizeof(c[4]));
		fprintf(f, "%-9s %5zu  %7s %7s %7s %7s  %9s %9s %9s %9s  %9s\n", r->strategies[k],
			t->n, l[0], l[1], l[2], l[3], c[0], c[1], c[2], c[3], c[4]);
	}
	print_tools(&s, f, false);
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

/* " %s s | ... | $%s |": c's latency and cost quantiles and total cost. */
static void md_quantiles(FILE *f, const struct rep_cell *c)
{
	char usd[24], secs[24];
	for (size_t j = 0; j < 4; j++) {
		fmt_secs(c->lat[j], secs, sizeof(secs));
		fprintf(f, " %s s |", secs);
	}
	for (size_t j = 0; j < 4; j++) {
		fmt_usd(c->cost[j], usd, sizeof(usd));
		fprintf(f, " $%s |", usd);
	}
	fmt_usd(c->cost_total, usd, sizeof(usd));
	fprintf(f, " $%s |\n", usd);
}

static void write_md(FILE *f, const struct bench_report *r, const struct rep_summary *s)
{
	static const char qhead[] = " latency p25 | p50 | p75 | p95 | cost p25 | p50 | p75 | p95 |"
				    " total cost |\n";
	char cell[64], size[16];
	bool approx = false;
	fprintf(f,
		"# rlm bench run\n\n- date: %s\n- rlm: %s (commit %s)\n- command: `%s`\n"
		"- models: %s\n- datasets:",
		r->date, RLM_VERSION, rlm_git_commit, r->command, r->models);
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
		bench_fmt_size(s->rows[i].tokens, s->rows[i].approx, size, sizeof(size));
		approx |= s->rows[i].approx;
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
	if (approx)
		fputs("\n\nA size marked ~ groups items that gave no `tokens`: their length is "
		      "estimated (the context's bytes / 4) and rounded to the nearest power of two "
		      "(~8k is 8,192 tokens, ~1M 1,048,576).",
		      f);
	fprintf(f,
		"\n\n![mean score against context length](score_vs_length.svg)\n\n"
		"## Latency and cost per item\n\n"
		"Wall time of each item's solve (its context's loading included) and its cost,"
		" at the 25th, 50th, 75th and 95th percentiles.\n\n"
		"| strategy | items |%s|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		qhead);
	for (size_t k = 0; k < r->n_strategies; k++) {
		fprintf(f, "| %s | %zu |", r->strategies[k], s->st[k].all.n);
		md_quantiles(f, &s->st[k].all);
	}
	fputs("\n![latency and cost per item at p25, p50, p75 and p95](cost_latency.svg)\n", f);
	fprintf(f,
		"\n### Per suite and size\n\nThe same, for the items of each suite at each "
		"size (`summary.json` has every number of this report).\n\n"
		"| suite | size | strategy | items |%s|---|---:|---|---:|---:|---:|---:|---:|---:|"
		"---:|---:|---:|---:|\n",
		qhead);
	for (size_t i = 0; i < s->n_rows; i++) {
		bench_fmt_size(s->rows[i].tokens, s->rows[i].approx, size, sizeof(size));
		for (size_t k = 0; k < r->n_strategies; k++) {
			const struct rep_cell *c = &s->rows[i].cells[k];
			if (!c->n)
				continue;
			fputs("| ", f);
			md_text(f, s->rows[i].suite);
			fprintf(f, " | %s | %s | %zu |", size, r->strategies[k], c->n);
			md_quantiles(f, c);
		}
	}
	print_tools(s, f, true);
	if (r->notes && *r->notes)
		fprintf(f, "\n## Notes\n\n%s\n", r->notes);
}

/* ---- summary.json ---- */

static cJSON *quantiles_json(const double q[4])
{
	static const char *const names[4] = {"p25", "p50", "p75", "p95"};
	cJSON *o = cJSON_CreateObject();
	for (size_t j = 0; j < 4; j++)
		json_add_num(o, names[j], q[j]);
	return o;
}

/* The numbers of cell c: items, failed, mean score, latency, cost. */
static void cell_json(cJSON *o, const struct rep_cell *c)
{
	json_add_num(o, "items", (double)c->n);
	json_add_num(o, "failed", (double)c->failed);
	json_add_num(o, "score_mean", c->n ? c->sum / (double)c->n : 0);
	json_add(o, "latency_s", quantiles_json(c->lat));
	json_add(o, "cost_usd", quantiles_json(c->cost));
	json_add_num(o, "cost_total_usd", c->cost_total);
}

static void write_json(FILE *f, const struct bench_report *r, const struct rep_summary *s)
{
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	char size[16], *text;
	json_add_str(o, "rlm", RLM_VERSION);
	json_add_str(o, "commit", rlm_git_commit);
	json_add_str(o, "date", r->date);
	json_add_str(o, "command", r->command);
	json_add_str(o, "model", r->model);
	json_add_str(o, "sub_model", r->sub_model);
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_datasets; i++)
		json_add_str(arr, NULL, r->datasets[i]);
	json_add(o, "datasets", arr);
	arr = cJSON_CreateArray();
	for (size_t k = 0; k < r->n_strategies; k++) {
		x = cJSON_CreateObject();
		json_add_str(x, "strategy", r->strategies[k]);
		cell_json(x, &s->st[k].all);
		json_add_num(x, "cut", (double)s->st[k].cut);
		if (s->st[k].tool_items) {
			const struct bench_tools *t = &s->st[k].tools;
			cJSON *tj = cJSON_CreateObject();
			json_add_num(tj, "items", (double)s->st[k].tool_items);
			json_add_num(tj, "discovery", (double)t->discovery);
			json_add_num(tj, "calls", (double)t->calls);
			json_add_num(tj, "calls_without_info", (double)t->blind);
			json_add_num(tj, "schema_refused", (double)t->schema_refused);
			json_add_num(tj, "repeated_discovery", (double)t->repeated);
			json_add(x, "tools", tj);
		}
		json_add(arr, NULL, x);
	}
	json_add(o, "strategies", arr);
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < s->n_rows; i++) {
		bench_fmt_size(s->rows[i].tokens, s->rows[i].approx, size, sizeof(size));
		for (size_t k = 0; k < r->n_strategies; k++) {
			if (!s->rows[i].cells[k].n)
				continue;
			x = cJSON_CreateObject();
			json_add_str(x, "suite", s->rows[i].suite);
			json_add_num(x, "size", (double)s->rows[i].tokens);
			json_add_str(x, "size_label", size);
			json_add_bool(x, "size_estimated", s->rows[i].approx);
			json_add_str(x, "strategy", r->strategies[k]);
			cell_json(x, &s->rows[i].cells[k]);
			json_add(arr, NULL, x);
		}
	}
	json_add(o, "groups", arr);
	text = cJSON_Print(o);
	fprintf(f, "%s\n", text);
	free(text);
	cJSON_Delete(o);
}

/* ---- files ---- */

typedef void writer_fn(FILE *f, const struct bench_report *r, const struct rep_summary *s);

static int write_one(const char *dir, const char *name, writer_fn *fn, const struct bench_report *r,
		     const struct rep_summary *s, struct rlm_err *err)
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
	struct rep_summary s;
	int rc;
	summary_build(&s, r);
	if (!(rc = write_one(dir, "report.md", write_md, r, &s, err)) &&
	    !(rc = write_one(dir, "summary.json", write_json, r, &s, err)) &&
	    !(rc = write_one(dir, "score_vs_length.svg", bench_report_score_svg, r, &s, err)))
		rc = write_one(dir, "cost_latency.svg", bench_report_cost_svg, r, &s, err);
	summary_release(&s);
	return rc;
}
