/* SPDX-License-Identifier: MIT */
/* bench/report_int.h -- what the summary of `rlm bench run` shares between
 * its files: the results grouped once (bench/report.c), which the text,
 * the Markdown, summary.json and the plots (bench/report_svg.c) all read,
 * so that they cannot disagree. */
#ifndef RLM_BENCH_REPORT_INT_H
#define RLM_BENCH_REPORT_INT_H

#include "bench.h"

/* The quantiles reported: p25, p50, p75, p95. */
extern const double bench_report_levels[4];

/* Items of one strategy in one group. */
struct rep_cell {
	double sum;	   /* of scores */
	size_t n;	   /* items */
	size_t failed;	   /* of which failed */
	double lat[4];	   /* latency per item at bench_report_levels, seconds */
	double cost[4];	   /* cost per item at bench_report_levels, USD */
	double cost_total; /* USD */
};

/* A suite at a context size. */
struct rep_row {
	const char *suite;	/* borrowed from a result */
	int64_t tokens;		/* the size: as the items gave it, or a bucket */
	bool approx;		/* a bucket of estimated lengths (bench_size_bucket) */
	struct rep_cell *cells; /* one per strategy; owned */
};

/* Every item of one strategy. */
struct rep_strat {
	struct rep_cell all;
	size_t cut; /* direct: contexts cut to the window */
	size_t tool_items;    /* items whose solve had host tools */
	struct bench_tools tools; /* their counts, summed */
};

struct rep_summary {
	const struct bench_report *r;
	struct rep_row *rows; /* by suite (first seen), then size ascending */
	size_t n_rows;
	const char **suites; /* distinct, in order of first appearance */
	size_t n_suites;
	struct rep_strat *st;		/* per strategy */
	int64_t min_tokens, max_tokens; /* over the rows' sizes */
};

/* (bench/report_svg.c) score_vs_length.svg: the mean score against the
 * context size (log x), one line per suite x strategy; cost_latency.svg:
 * latency and cost per item at bench_report_levels per strategy. */
void bench_report_score_svg(FILE *f, const struct bench_report *r, const struct rep_summary *s);
void bench_report_cost_svg(FILE *f, const struct bench_report *r, const struct rep_summary *s);

#endif
