/* SPDX-License-Identifier: MIT */
/* bench/bench_int.h -- what the generator's files share inside bench/. */
#ifndef RLM_BENCH_INT_H
#define RLM_BENCH_INT_H

#include "bench.h"

/* sniah_generate, for a haystack that sniah_write cuts into `parts`
 * documents of about equal size: with o->values K > 1, the K values go in
 * K distinct parts drawn from the seed, each in the middle half of its
 * part (so in K distinct documents, unless the documents are only a few
 * lines long); parts 0: at K distinct RULER depths, as sniah_generate.
 * -EINVAL as sniah_generate, or when parts is below K. */
int sniah_generate_parts(const struct sniah_opts *o, size_t parts, FILE *f,
			 struct sniah_item *item);

#endif
