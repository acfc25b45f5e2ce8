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

/* ---- the policy's terms (sim/sim_policy.c), for the tool steps ---- */

#define SIM__TERM_MAX 96 /* bytes of a term kept */

/* The next term of s[*pos..n) (a run of letters and digits, inner '-',
 * '_' and '.' kept), lower-cased into out[SIM__TERM_MAX]; its length, 0 at
 * the end. *start (may be NULL) gets where it begins; *pos ends past it. */
size_t sim__next_term(const char *s, size_t n, size_t *pos, char *out, size_t *start);
/* The term t[0..n) as matching compares it (a plural stripped, a word cut
 * to a stem: "released" and "release" meet); returns its new length. */
size_t sim__norm_term(char *t, size_t n);
/* Whether the lower-case term t[0..n) is a stopword of the policy (function
 * words and question boilerplate: "what", "say", "total", ...). */
bool sim__is_stopword(const char *t, size_t n);

/* ---- compaction (sim/sim_compact.c) ---- */

/* When msgs ask for the summary of an RLM conversation's older turns (a
 * system message that starts "Summarise the earlier turns of a REPL
 * session", prompts/repl_compact.txt; the turns in the last user message),
 * the summary, built from those turns alone: "Questions: ...",
 * "Variables: ...", "Findings: ...", "Next: ..." lines. Else NULL. Fresh
 * string. */
char *sim__compact_reply(const struct llm_msg *msgs, size_t n);

/* ---- the root policy's Python (sim/sim_root.c) ---- */

/* Append s[0..n) to b as a Python str literal on one line. */
void sim__py_str(struct buf *b, const char *s, size_t n);

/* A question asking for the first N terms of a sequence the sim can name
 * ("the first 100 powers of two", "the first 12 primes"): append to b the
 * REPL code that computes them and sets the answer (one per line when
 * the question says so, else comma-separated), and return true; false
 * (b untouched) for any other question. (sim/sim_compute.c) */
bool sim__compute_code(struct buf *b, const char *q, size_t qn);

/* ---- host tools (sim/sim_tools.c) ----
 * When the system message has a line starting "Host tools: ", the root
 * first tries the tools in turns of their own, marked "# tools N: ...":
 * 1 search_tools() with the question's words, 2 get_tool_info() of the
 * hit that fits, 3 call_tool() with arguments taken from the question's
 * literals, then FINAL(the result). */

/* Whether the system message m offers host tools. */
bool sim__tools_offered(const struct llm_msg *m);
/* The N of the "# tools N:" marker of the reply s[0..n) (1 to 3), or 0. */
int sim__tools_step(const char *s, size_t n);
/* The reply of the tool turn after step (0: none yet) of the question
 * q[0..qn), reading the output of the last step in last (the last user
 * message; NULL at step 0). NULL when the tools do not answer (no tool
 * fits, a schema the question cannot fill, an error): the usual strategy
 * goes on, and *why (may be NULL) gets the sentence that says so.
 * Fresh string. */
char *sim__tools_reply(const char *q, size_t qn, int step, const struct llm_msg *last,
		       const char **why);
/* The text of the last tool result the outputs msgs[0..n) show, for an
 * answer out of turns; NULL when none. Fresh string. */
char *sim__tools_result_seen(const struct llm_msg *msgs, size_t n);

/* ---- sessions (sim/sim_session.c) ---- */

/* How step 2 of the root policy finds the lines of the question's keys. */
enum sim__index {
	SIM__INDEX_NONE,  /* search(): no session */
	SIM__INDEX_BUILD, /* build `index` from the context, then look them up in it */
	SIM__INDEX_KEEP,  /* the same, unless the REPL has an `index` already */
	SIM__INDEX_REUSE, /* look them up in the `index` the REPL kept */
};

/* The index i into msgs[0..n) of the last "New question (question N of
 * this session): Q" user message into *seg, and Q into q[0..qn) (into that
 * message); or, in a session, of a later compaction summary that names the
 * questions of the turns it replaced ("Questions: ...; Q"), and the last.
 * False (nothing set) when there is neither: the first question. */
bool sim__session_segment(const struct llm_msg *msgs, size_t n, size_t *seg, const char **q,
			  size_t *qn);
/* How step 2 finds the lines (first: the first user message; seg: the
 * message of the current question, later: sim__session_segment found it):
 * the first question of a session builds the index unless the REPL has
 * one, and so does one that a summary names; a later one reuses it when
 * its message lists `index: dict` and no restart or NameError about it
 * came since, else builds it again; no session: search(). */
enum sim__index sim__session_index(const struct llm_msg *msgs, size_t n, size_t first, size_t seg,
				   bool later);
/* Append the Python that builds `index` from `texts` (guard: only when the
 * REPL has none), and the one that defines lookup(term, whole, ic,
 * max_results), search()'s hits from the index. */
void sim__index_build(struct buf *b, bool guard);
void sim__index_lookup(struct buf *b);
/* When the question q[0..qn) asks for an earlier question or answer of the
 * session ("What was the previous answer?"), append step 3's code that
 * answers it from `history` and return true. */
bool sim__history_step(struct buf *b, const char *q, size_t qn);

#endif
