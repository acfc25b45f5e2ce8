/* SPDX-License-Identifier: MIT */
/* sim/sim_int.h -- what the simulator's files share and nobody else uses. */
#ifndef RLM_SIM_INT_H
#define RLM_SIM_INT_H

#include "sim.h"

#define SIM__KEYS_MAX 4 /* keys of a question searched for */

/* A literal of the question that step 2 searches for. */
struct sim__key {
	const char *s; /* into the question */
	size_t n;
	enum sim__key_kind {
		SIM__KEY_QUOTED, /* a quoted phrase: literal, ignoring case */
		SIM__KEY_IDENT,	 /* sim_next_key's identifier: literal, case kept */
		SIM__KEY_NUMBER, /* 20.0.0, 2023-04-18, 10:42, 884213: whole, not in 120.0.0 */
		SIM__KEY_NAME,	 /* Node.js, Zürich, 東京タワー: literal, ignoring case */
	} kind;
};

/* The keys of the question q[0..n) into k[0..SIM__KEYS_MAX), in the order
 * they come: its quoted phrases when it has some (the asker said what to
 * look for), else its identifiers (sim_next_key), numbers of two groups
 * or more or of 5 digits, names with an inner dot, and names with
 * non-ASCII letters (a capital or a script without case; not the first
 * word), none inside another. *every: there are several and they are the
 * items of one list ("the codes of ZX-4471, QP-0932 and MM-1180"), so the
 * lines of each are read; else step 2 reads those of the rarest. Returns
 * how many; the keys point into q. */
size_t sim__question_keys(const char *q, size_t n, struct sim__key *k, bool *every);

#endif
