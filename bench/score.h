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
 *                    gold 1; a numeric gold (answer[0] a JSON number: a
 *                    count; a string of digits such as a user ID is text,
 *                    as OOLONG's USER answers are) 0.75^|gold - pred| (a
 *                    prediction that is no number: 0); a date gold
 *                    (YYYY-MM-DD, or MM/DD/YYYY) equal dates 1; else 0
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
/* Whether name is a known scorer. */
bool bench_scorer_known(const char *name);

#endif
