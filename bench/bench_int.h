/* SPDX-License-Identifier: MIT */
/* bench/bench_int.h -- what the generator's files share inside bench/
 * (gen.c, gen_docs.c, gen_cli.c). */
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

#endif
