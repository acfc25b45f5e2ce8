/* SPDX-License-Identifier: MIT */
/* tests/gen_other.h -- a second test corpus generator, unlike `rlm bench
 * gen`: changelogs, markdown tables, key: value files, logs as JSONL,
 * prose with paragraphs of tens of kilobytes and no newline, accents, CJK
 * and emoji, natural-language questions and questions that name several
 * keys.
 *
 * DESIGN
 * `rlm bench gen` writes one shape of text (a sentence per line, needles
 * "The special magic number for X is N.") and the simulator grew up on it.
 * This generator exists so that tests can check the simulator, and the
 * controller under it, on text it was not shaped on. Everything is drawn
 * from a seed, so a failure repeats. The expected answers go to the test
 * only: the solve sees the context path and the question, nothing else.
 */
#ifndef RLM_TEST_GEN_OTHER_H
#define RLM_TEST_GEN_OTHER_H

#include <stddef.h>
#include <stdint.h>

enum gen_other_kind {
	GEN_OTHER_CHANGELOG, /* one text: "Node.js 20.0.0 — 2023-04-18" and notes */
	GEN_OTHER_LONG,	     /* one text: paragraphs of ~40 KB, no newline inside */
	GEN_OTHER_PROSE,     /* one text: a sentence a line, other phrasings */
	GEN_OTHER_TABLES,    /* a directory: markdown tables, key: value files */
	GEN_OTHER_LOGS,	     /* JSONL: {"id", "text"} log records */
};

#define GEN_OTHER_QS 6

/* A question about the corpus and what answers it. */
struct gen_other_q {
	const char *name; /* what the case is about, for messages */
	char *question;	  /* owned */
	char *answer;	  /* expected; several values one per line; owned */
};

struct gen_other {
	char *context;			     /* a file, a directory or a .jsonl; owned */
	size_t bytes;			     /* of text written */
	struct gen_other_q qs[GEN_OTHER_QS]; /* qs[i].question NULL past the last */
};

/* Write a corpus of kind under dir (made if missing), drawn from seed, and
 * fill g with its path and its questions. Aborts the test on an I/O
 * error. */
void gen_other_make(enum gen_other_kind kind, uint64_t seed, const char *dir, struct gen_other *g);
void gen_other_release(struct gen_other *g);

#endif
