/* SPDX-License-Identifier: MIT */
/* bench/score.h -- the scorers of `rlm bench`: how an answer is scored
 * against an item's gold answer, one function per scorer name, as the
 * paper's benchmarks score (../shared/research/anchors-paper.md, section 2).
 *
 * A dataset item (a JSONL line, written by `rlm bench gen` or brought by
 * the user) names its scorer in "scorer" and its gold in "answer", a JSON
 * array (a string alone is taken as an array of one):
 *   "contains_all"   S-NIAH (RULER string_match_all): the fraction of gold
 *                    strings whose lowercase occurs in the lowercased
 *                    prediction; in [0, 1]
 *   "exact"          normalized exact match (lowercase, surrounding space
 *                    and punctuation and a leading "answer:" stripped,
 *                    inner space collapsed) against any gold string
 *                    (aliases): 1 or 0
 *   "oolong"         OOLONG's synth scorer: the prediction parsed as
 *                    synth_attempt_answer_parse does (text after the last
 *                    ':' stripped of '*', '[' and ']'; the last word when
 *                    there is no ':' and it is 20 characters or longer;
 *                    after a ':', a text of 20 characters or more that
 *                    holds "more common", "less common" or "same
 *                    frequency" becomes that phrase);
 *                    exact string match 1; a comparison phrase within the
 *                    gold 1; then by the item's "answer_type", OOLONG's
 *                    ANSWER_TYPE (NUMERIC, DATE, LABEL, USER, COMPARISON,
 *                    MONTH_YEAR, with or without "ANSWER_TYPE."): NUMERIC
 *                    0.75^|gold - pred| (a prediction that is no number:
 *                    0), DATE equal dates 1, the others text only; without
 *                    one, from the gold: a JSON number is numeric (a
 *                    string of digits such as a user ID is text, as
 *                    OOLONG's USER answers are), a date string (YYYY-MM-DD
 *                    or MM/DD/YYYY) a date; else 0. The gold may be
 *                    OOLONG's own Python list literal in a string,
 *                    "['entity']", "[1542]", "[datetime.date(2023, 3, 4)]"
 *                    (bench_pylit_parse); its first element counts
 *   "set_f1"         OOLONG-Pairs: pairs "(a, b)" parsed from the
 *                    prediction with the pattern \(?\s*(\d+)\s*,\s*(\d+)\s*\)?,
 *                    each normalized to (min, max), duplicates dropped; the
 *                    gold is the array of "a,b" strings (or [a, b] arrays);
 *                    F1 of the two sets; both empty: 1; one empty: 0
 *   "mc"             multiple choice: the first choice index (0-3) or
 *                    letter (A-D, taken as 0-3) the prediction states
 *                    ("Answer: 2", "(B)", "the answer is C"); 1 when it is
 *                    the gold (a number 0-3 or a letter), else 0
 * Unknown scorer names are an error (RLM_EINVAL), never a silent 0.
 */
#ifndef RLM_BENCH_SCORE_H
#define RLM_BENCH_SCORE_H

#include "../common/common.h"

struct cJSON;

/* The score of prediction (NULL: no answer, which scores 0) against gold
 * (the item's "answer") under scorer, in [0, 1], into *score. Returns 0,
 * or RLM_EINVAL (unknown scorer, gold of the wrong shape) with err. */
int bench_score(const char *scorer, const char *prediction, const struct cJSON *gold, double *score,
		struct rlm_err *err);
/* bench_score for an item with an answer_type (NULL: none), which the
 * oolong scorer follows and the others ignore; an unknown one is
 * RLM_EINVAL for oolong. */
int bench_score_typed(const char *scorer, const char *answer_type, const char *prediction,
		      const struct cJSON *gold, double *score, struct rlm_err *err);
/* Whether name is a known scorer. */
bool bench_scorer_known(const char *name);

/* (bench/pylit.c) Parse s[0..len), a Python literal as ast.literal_eval
 * reads it, in the subset datasets store golds in: lists and tuples (both
 * become arrays), strings (quotes, triple quotes, u and r prefixes, every
 * escape but \N{...}), integers within +-2^53, floats, True, False, None,
 * and datetime.date(Y, M, D) (the string "YYYY-MM-DD"). *out gets the
 * value, the caller's to cJSON_Delete. Returns 0, or RLM_EINVAL with err
 * naming the byte where it went wrong (*out NULL). */
int bench_pylit_parse(const char *s, size_t len, struct cJSON **out, struct rlm_err *err);

#endif
