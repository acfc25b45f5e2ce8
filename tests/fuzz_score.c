/* SPDX-License-Identifier: MIT */
/* tests/fuzz_score.c -- libFuzzer target: the bench scorers on any gold and
 * any prediction. Input: one byte choosing the scorer and the answer type
 * (none, one of OOLONG's, or an unknown one), the gold JSON up to the first
 * NUL byte (a string opening with '[' is a Python literal to the oolong
 * scorer), then the prediction. A gold that parses scores in [0, 1] or
 * fails with RLM_EINVAL and a message; no prediction scores 0 and fails
 * exactly when a prediction fails. */
#include "../bench/score.h"
#include "../common/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"contains_all", "exact", "oolong", "set_f1", "mc"};
	static const char *const types[] = {
	    NULL,   "ANSWER_TYPE.NUMERIC", "DATE",	 "ANSWER_TYPE.LABEL",
	    "USER", "COMPARISON",	   "MONTH_YEAR", "ANSWER_TYPE.COLOUR"};
	const char *scorer, *type, *g, *nul;
	struct rlm_err err = {0, ""}, err0 = {0, ""};
	double score = -1, score0 = -1;
	size_t glen;
	char *pred;
	cJSON *gold;
	int rc, rc0;
	if (size < 1)
		return 0;
	scorer = names[data[0] % ARRAY_SIZE(names)];
	type = types[data[0] / ARRAY_SIZE(names) % ARRAY_SIZE(types)];
	g = (const char *)data + 1;
	nul = memchr(g, 0, size - 1);
	glen = nul ? (size_t)(nul - g) : size - 1;
	if (!(gold = json_parse(g, glen)))
		return 0;
	pred = nul ? xstrndup(nul + 1, size - 1 - glen - 1) : xstrdup("");
	rc = bench_score_typed(scorer, type, pred, gold, &score, &err);
	rc0 = bench_score_typed(scorer, type, NULL, gold, &score0, &err0);
	if (rc) {
		if (rc != RLM_EINVAL || err.code != rc || !err.msg[0] || score != 0)
			abort();
	} else if (!(score >= 0 && score <= 1)) {
		abort();
	}
	if (rc0 != rc || score0 != 0)
		abort();
	free(pred);
	cJSON_Delete(gold);
	return 0;
}
