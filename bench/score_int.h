/* SPDX-License-Identifier: MIT */
/* bench/score_int.h -- what the scorers' files share (bench/score.c, the
 * table and most scorers; bench/score_oolong.c, OOLONG's): Python's notion
 * of whitespace and the gold's elements. */
#ifndef RLM_BENCH_SCORE_INT_H
#define RLM_BENCH_SCORE_INT_H

#include "score.h"
#include "../common/text.h"

#include <cjson/cJSON.h>

/* Length in bytes of the Python whitespace character (str.isspace) at
 * str[0..n), or 0. */
size_t bench_score_py_space_len(const char *str, size_t n);
/* Python's s.strip(): [*b, *e) of s[0..n) without the whitespace around. */
void bench_score_py_strip(const char *s, size_t n, size_t *b, size_t *e);

/* The elements of gold: the array's, or gold itself as a string or number;
 * prev NULL for the first. */
const cJSON *bench_score_gold_next(const cJSON *gold, const cJSON *prev);
/* 0 when gold is an array, a string or a number; else RLM_EINVAL with err
 * naming scorer. */
int bench_score_gold_shape(const char *scorer, const cJSON *gold, struct rlm_err *err);
/* RLM_EINVAL with err: the gold of scorer has no element. */
int bench_score_gold_empty(const char *scorer, struct rlm_err *err);
/* v is an integer a long long holds. */
bool bench_score_num_is_int(double v);
/* v as Python prints it, near enough: integers without a point, others
 * with the fewest digits that read back the same. */
void bench_score_num_text(double v, char *out, size_t n);

/* OOLONG's synth scorer (bench/score_oolong.c): pred against gold, under
 * the item's answer_type (NULL: from the gold's JSON type). */
int bench_score_oolong(const char *pred, const cJSON *gold, const char *answer_type, double *score,
		 struct rlm_err *err);

#endif
