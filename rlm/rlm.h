/* SPDX-License-Identifier: MIT */
/* rlm/rlm.h -- the controller's C API: solve a question over a context.
 *
 * A solve runs on the caller's thread and uses a call pool and models the
 * caller made (llm/llm.h), so many solves can share one pool, its
 * connections and its limits. The context is a loaded corpus
 * (rlm/corpus.h), borrowed for the duration of the call.
 *
 * Strategies:
 *   tree  the controller decomposes: the context is cut at natural
 *         boundaries (documents, paragraphs, lines) into parts that fit one
 *         sub-model call; every part is asked the question in parallel; the
 *         partial answers are combined with one more call, level by level
 *         when they are themselves too large for one.
 */
#ifndef RLM_RLM_H
#define RLM_RLM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../llm/llm.h"
#include "corpus.h"

enum rlm_strategy { RLM_TREE };

struct rlm_progress {
	const char *phase;     /* "leaves", "combine" */
	size_t done, total;    /* calls of this phase */
	int level;             /* combine level, 1 = first */
	int64_t elapsed_ns;
};

typedef void rlm_progress_fn(const struct rlm_progress *p, void *arg);

struct rlm_opts {
	enum rlm_strategy strategy;
	struct llm_pool *pool;       /* borrowed */
	struct llm_model *model;     /* the root model (combines); borrowed */
	struct llm_model *sub_model; /* leaf calls; NULL: model */
	struct llm_params params;    /* sampling parameters of every call */
	size_t leaf_chars;           /* max context bytes per leaf call; 0: from
				      * the sub-model's window (half of it, at most
				      * 200,000 bytes) */
	size_t window;               /* calls in flight per solve; 0: 256 */
	const atomic_bool *cancel;   /* optional */
	rlm_progress_fn *progress;   /* optional; called from pool threads and
				      * the solving thread, never concurrently */
	void *progress_arg;
};

struct rlm_result {
	char *answer;          /* owned; NULL when the solve failed */
	bool found;            /* false when every part answered NONE */
	struct llm_usage usage;
	double cost;           /* USD */
	int64_t calls;         /* model calls made */
	int64_t failed_calls;  /* of which failed after retries */
	int64_t attempts;      /* HTTP attempts, retries included */
	size_t leaves;         /* parts the context was cut into */
	size_t failed_leaves;  /* parts whose call failed (their text went unread) */
	int levels;            /* combine levels (0: the answer came from one call) */
	size_t leaf_chars;     /* the part size used */
	int64_t solve_ns;      /* wall time of the solve */
	char *warning;         /* owned, or NULL: e.g. some parts failed */
};

/* Answer question over ctx. Returns 0 with out->answer set, or a negative
 * code with err filled (out still holds usage and counts of what was
 * spent). Release out with rlm_result_release either way. */
int rlm_solve(const struct rlm_opts *opts, const char *question, const struct corpus *ctx,
	      struct rlm_result *out, struct rlm_err *err);
void rlm_result_release(struct rlm_result *r);

/* Cut ctx into parts of at most max bytes at natural boundaries. Small
 * consecutive documents share a part; a large one is cut at a blank line,
 * else a line end, else a UTF-8 character boundary. Fills *parts (owned
 * array of {off, len} into ctx->buf) and returns their count. */
struct rlm_span {
	size_t off, len;
	size_t doc;            /* index of the first document in the part */
};
size_t rlm_split(const struct corpus *ctx, size_t max, struct rlm_span **parts);

#endif
