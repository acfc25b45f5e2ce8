/* SPDX-License-Identifier: MIT */
/* bench/bench.h -- dataset generators, scorers, and the performance suite.
 *
 * Datasets are JSONL files of items
 *   {"id", "suite", "question", "answer": [gold, ...], "context_path",
 *    "scorer", "tokens", ...suite-specific fields}
 * with each item's context in its own file next to the JSONL, so that
 * `rlm solve --context PATH --question Q` (and later `rlm bench run`) can
 * consume them. Everything is seeded and reproducible: the same options give
 * byte-identical files. A token is counted as 4 bytes of text. */
#ifndef RLM_BENCH_H
#define RLM_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/common.h"

/* ---- S-NIAH (RULER-style single needle in a haystack) ---- */

enum sniah_haystack { SNIAH_NOISE, SNIAH_WORDS, SNIAH_ESSAY };
enum sniah_value { SNIAH_NUMBER, SNIAH_WORD, SNIAH_UUID };

struct sniah_opts {
	uint64_t tokens;                /* target size; bytes = 4 * tokens */
	uint64_t seed;
	enum sniah_haystack haystack;   /* default SNIAH_ESSAY */
	enum sniah_value value;         /* default SNIAH_NUMBER */
	double depth;                   /* needle position in [0,1]; < 0: drawn from the seed */
	int distractors;                /* other needles with other keys */
};

struct sniah_item {
	char key[64];        /* e.g. "harmonious-uniform" */
	char value[64];      /* e.g. "2338687" */
	char question[256];
	double depth;        /* where the needle went, in [0,1] */
	uint64_t bytes;      /* bytes written */
	uint64_t needle_off; /* byte offset of the needle sentence */
};

/* 8000 tokens, seed 1, essay haystack, number value, drawn depth, no
 * distractors. */
void sniah_opts_default(struct sniah_opts *o);
/* Write one haystack of o->tokens * 4 bytes (give or take one word; within
 * 0.5% from 1000 tokens up) to f, with the needle "One of the special magic
 * numbers for KEY is: VALUE." ("words", "uuids" for the other value types)
 * on a line of its own at the first line boundary at or past depth * bytes;
 * fill item. The key and the value occur on that line only. The same opts
 * give the same bytes. Returns 0, -EINVAL when the options are out of range
 * (distractors > 1000, or more than the word values for SNIAH_WORD; depth
 * > 1; needles that would take over half the bytes), or -errno from f. */
int sniah_generate(const struct sniah_opts *o, FILE *f, struct sniah_item *item);

/* ---- the REPL worker (bench/perf_repl.c) ---- */

/* Run `x = 1` n times in each of two workers (tiny context), taking
 * turns: [0] with every layer of the sandbox the machine has, [1] with none
 * (sandbox.disable = REPL_L_ALL, unsafe); the p50 and p99 of repl_exec's
 * wall time in microseconds. Returns 0 or a negative code with err. */
int perf_repl_roundtrip(size_t n, double p50_us[2], double p99_us[2], struct rlm_err *err);
/* Start a worker on a tiny context until it is ready, n times each (after
 * one not counted), taking turns: [0] sandboxed, [1] not, as above; the
 * medians in milliseconds. */
int perf_repl_start(size_t n, double ms[2], struct rlm_err *err);
/* Start a worker on ctx_bytes of ASCII text until it is ready (`context`
 * is a str), with the full sandbox; the median of 5 starts in
 * milliseconds. */
int perf_repl_ready(size_t ctx_bytes, double *ms, struct rlm_err *err);

#endif
