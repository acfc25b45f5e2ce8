/* SPDX-License-Identifier: MIT */
/* bench/bench_int.h -- what the generator's files share inside bench/
 * (gen.c, gen_docs.c, gen_cli.c), and `rlm bench run`'s (run*.c, report.c). */
#ifndef RLM_BENCH_INT_H
#define RLM_BENCH_INT_H

#include "bench.h"

/* o->distractors, at most. */
#define SNIAH_MAX_DISTRACTORS 1000
/* The word values (SNIAH_WORD): o->values and o->distractors together, at
 * most. */
#define SNIAH_WORD_VALUES 105

/* sniah_generate, for a haystack that sniah_write cuts into `parts`
 * documents of about equal size: with o->values K > 1, the K values go in
 * K distinct parts drawn from the seed, each in the middle half of its
 * part (so in K distinct documents, unless the documents are only a few
 * lines long); parts 0: at K distinct RULER depths, as sniah_generate.
 * -EINVAL as sniah_generate, or when parts is below K. */
int sniah_generate_parts(const struct sniah_opts *o, size_t parts, FILE *f,
			 struct sniah_item *item);
/* "number", "word" or "uuid": v as --value and an item's value_type
 * spell it. */
const char *sniah_value_name(enum sniah_value v);

/* ---- `rlm bench run` (bench/run.c, cli/cli_bench_run.c, bench/report.c) ---- */

/* One (item, strategy) solved: what the summary needs of a line of
 * DIR/results.jsonl. Strings owned (bench_res_release). */
struct bench_res {
	char *id;
	char *suite;
	char *strategy;    /* "repl", "tree" or "direct" */
	int64_t tokens;    /* the item's context length */
	double score;      /* in [0, 1]; 0 when failed */
	double wall_ms;    /* the solve, the context's loading included */
	double cost;       /* USD */
	bool failed;       /* the solve failed (error): scored 0 */
	bool cut;          /* direct: the context was cut to the model's window */
	bool cached;       /* every answer came from the store: wall_ms is the cache's */
	bool approx;       /* tokens is the context's bytes / 4 (the item gave
			    * none): the summary groups it by bench_size_bucket */
};

void bench_res_release(struct bench_res *r);

/* What the summary is about; every pointer borrowed for the call. */
struct bench_report {
	const struct bench_res *res;     /* the results, one per (item, strategy) */
	size_t n;
	const char *const *strategies;   /* in the order given to --strategy */
	size_t n_strategies;
	const char *command;             /* the command line, as typed (no API key) */
	const char *date;                /* e.g. "2026-11-23 18:15 UTC" */
	const char *models;              /* a Markdown line naming the models */
	const char *model, *sub_model;   /* their names (summary.json) */
	const char *const *datasets;
	size_t n_datasets;
	const char *notes;               /* Markdown paragraphs for the end, or NULL */
};

/* The q-quantile (0..1) of v[0..n), linearly interpolated between the
 * closest ranks (numpy's default); sorts v. 0 when n is 0. */
double bench_quantile(double *v, size_t n, double q);
/* "8k", "128k", "1M", "10M", "1.5k", "500": tokens as sizes are written. */
void bench_fmt_tokens(int64_t tokens, char *buf, size_t n);
/* The power of two nearest tokens on a log scale (1 for 0): the size at
 * which an item of estimated length is summarised. */
int64_t bench_size_bucket(int64_t tokens);
/* A row's size: bench_fmt_tokens, or for a bucket (approx) "~" and the
 * power of two in binary units: "~128", "~8k", "~1M". */
void bench_fmt_size(int64_t tokens, bool approx, char *buf, size_t n);
/* The summary as plain-text tables: the mean score per suite x size x
 * strategy, then latency and cost per item at p25/p50/p75/p95 per
 * strategy. */
void bench_report_print(const struct bench_report *r, FILE *f);
/* Write dir/report.md (the command, date, rlm's version and commit,
 * models, datasets, the tables: score per suite x size x strategy, latency
 * and cost per item at p25/p50/p75/p95 per strategy and per suite x size
 * x strategy; the plots, the notes), dir/summary.json (the same numbers),
 * dir/score_vs_length.svg (the mean score against the context length, log
 * x, one line per suite x strategy) and dir/cost_latency.svg (latency and
 * cost per item at p25/p50/p75/p95 per strategy). Returns 0 or -errno with
 * err naming the file. */
int bench_report_write(const struct bench_report *r, const char *dir, struct rlm_err *err);

/* ---- the other suites (gen_oolong.c, gen_pairs.c, gen_browse.c,
 * gen_suites.c) ---- */

/* A paragraph of the essay haystack (300-700 bytes of ASCII, no newline, no
 * digits, no hyphens) into dst (LINE_MAX_BYTES of gen.c: 1,024). */
size_t gen_essay_line(struct rng *r, char *dst);
/* Day 0..OOLONG_DAYS-1 (0: 2022-01-01) as a calendar date, m and d from 1. */
void oolong_day_date(int day, int *y, int *m, int *d);

enum gen_suite { GEN_SNIAH, GEN_OOLONG, GEN_PAIRS, GEN_BROWSE };

/* One item of `rlm bench gen` for gen_suite_item. */
struct gen_req {
	enum gen_suite suite;
	const char *dir;	  /* --out */
	const char *id;		  /* "oolong-8k-0": the item's id and file name */
	const char *size_name;	  /* "8k", as --sizes gave it */
	uint64_t tokens;
	uint64_t seed;		  /* the item's own */
	int users;		  /* oolong, oolong-pairs: --users, 0 by size */
	unsigned tasks;		  /* oolong: a bit per enum oolong_task; pairs:
				   * per enum pairs_kind; drawn among them */
	size_t docs;		  /* browse: --docs, 0 by size */
	enum sniah_format format; /* browse: SNIAH_DIR or SNIAH_JSONL */
};

/* Parse --task for suite into a mask of what to draw from: oolong takes a
 * task name (oolong_task_name), a family ("counting", "user",
 * "timeline") or "any"; oolong-pairs "symmetric", "asymmetric" or "any".
 * Returns 0 or RLM_EINVAL. */
int gen_task_parse(enum gen_suite suite, const char *s, unsigned *mask);
/* Write the context of r and its JSONL line to jl (at jl_path, for
 * messages), with a line about it on stderr. Returns an exit status: 0, 1
 * (I/O), or 2 (the size cannot hold the item), with the message printed. */
int gen_suite_item(const struct gen_req *r, FILE *jl, const char *jl_path);

/* Remove the doc-*.txt files an earlier run left in dir (bench/gen_docs.c).
 * Returns 0 or -errno. */
int gen_clear_docs(const char *dir);

#endif
