/* SPDX-License-Identifier: MIT */
/* sim/sim_compact.c -- the simulator asked to summarise the older turns
 * of an RLM conversation (the controller's compaction,
 * prompts/repl_compact.txt).
 *
 * DESIGN
 * The summary is built from the turns it is shown and nothing else, as an
 * honest model would: the questions asked in them ("Question: ..." lines),
 * the variables their outputs say the REPL holds ("REPL variables: ..."
 * lines, and the names the instructions list), the findings the policy's
 * own code printed (answer, final answer, search and count lines), and
 * what the last reply shown was about to do (its first line). The parts of
 * an earlier summary in the turns are carried over, so a summary of a
 * summary loses nothing it had. No "# step" marker is ever written: the
 * root policy reads its state from the latest turns, which stay.
 */
#include "sim_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPACT_HEAD  "Summarise the earlier turns of a REPL session"
#define PART_MAX      600 /* bytes of one part's items */
#define FINDINGS_KEPT 8	  /* the latest finding lines */
#define LINE_MAX      200 /* bytes of one item */

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t m = strlen(prefix);
	return n >= m && memcmp(s, prefix, m) == 0;
}

/* Append s[0..n) to b with each "# step" written "#step": the root
 * policy's markers stay in the turns, never in a summary (dropping the
 * space cannot make another). */
static void put_unmarked(struct buf *b, const char *s, size_t n)
{
	const char *e = s + n, *m;
	while ((m = memmem(s, (size_t)(e - s), "# step", 6))) {
		buf_append(b, s, (size_t)(m - s) + 1);
		s = m + 2;
	}
	buf_append(b, s, (size_t)(e - s));
}

/* Add item s[0..n) (trimmed, cut to LINE_MAX) to the "; "-separated list
 * b, unless it is there already or the list is full. */
static void add_item(struct buf *b, const char *s, size_t n)
{
	text_trim(&s, &n);
	n = text_utf8_floor(s, RLM_MIN(n, (size_t)LINE_MAX));
	if (!n || b->len + n > PART_MAX)
		return;
	for (const char *p = b->p, *e = b->p + b->len; p && p < e;) {
		const char *sep = memmem(p, (size_t)(e - p), "; ", 2);
		size_t k = sep ? (size_t)(sep - p) : (size_t)(e - p);
		if (k == n && memcmp(p, s, n) == 0)
			return;
		p = sep ? sep + 2 : NULL;
	}
	if (b->len)
		buf_puts(b, "; ");
	put_unmarked(b, s, n);
}

/* Add each sep-separated item of s[0..n) to b. */
static void add_items(struct buf *b, const char *s, size_t n, const char *sep)
{
	const char *e = s + n;
	while (s < e) {
		const char *c = memmem(s, (size_t)(e - s), sep, strlen(sep));
		add_item(b, s, (size_t)((c ? c : e) - s));
		s = c ? c + strlen(sep) : e;
	}
}

/* Is s[0..n) a line the root policy's code prints with a finding? */
static bool finding(const char *s, size_t n)
{
	return starts(s, n, "final answer: ") || starts(s, n, "answer: ") ||
	       starts(s, n, "search '") || starts(s, n, "found ") || starts(s, n, "documents: ") ||
	       starts(s, n, "named: ");
}

char *sim__compact_reply(const struct llm_msg *msgs, size_t n)
{
	const struct llm_msg *sys = NULL, *turns = NULL;
	struct buf qs = BUF_INIT, vars = BUF_INIT, out = BUF_INIT, next = BUF_INIT;
	const char *finds[FINDINGS_KEPT];
	size_t find_n[FINDINGS_KEPT], n_finds = 0;
	const char *s, *e, *p;
	bool reply = false, first_line = false;
	for (size_t i = 0; i < n; i++) {
		if (msgs[i].role == LLM_SYSTEM && !sys)
			sys = &msgs[i];
		if (msgs[i].role == LLM_USER)
			turns = &msgs[i];
	}
	if (!sys || !sys->text || !starts(sys->text, sys->len, COMPACT_HEAD) || !turns ||
	    !turns->text)
		return NULL;
	/* the names the instructions say the REPL holds */
	if ((p = memmem(sys->text, sys->len, "(they are: ", 11))) {
		const char *q = p + 11, *c = memchr(q, ')', (size_t)(sys->text + sys->len - q));
		if (c)
			add_items(&vars, q, (size_t)(c - q), ", ");
	}
	s = turns->text;
	e = s + turns->len;
	while (s < e) {
		const char *nl = memchr(s, '\n', (size_t)(e - s));
		size_t ln = (size_t)((nl ? nl : e) - s);
		if (starts(s, ln, "## Turn")) {
			reply = memmem(s, ln, "the model's reply", 17) != NULL;
			first_line = reply;
		} else if (first_line && ln) {
			/* the first line of a reply: what it set out to do */
			if (!starts(s, ln, "```") && !starts(s, ln, "#")) {
				buf_release(&next);
				buf_init(&next, 0);
				put_unmarked(&next, s,
					     text_utf8_floor(s, RLM_MIN(ln, (size_t)LINE_MAX)));
			}
			first_line = false;
		} else if (starts(s, ln, "Question: ")) {
			add_item(&qs, s + 10, ln - 10);
		} else if (starts(s, ln, "New question (question ") && memmem(s, ln, "): ", 3)) {
			/* a session's later question (repl_session_next.txt) */
			const char *q = (const char *)memmem(s, ln, "): ", 3) + 3;
			add_item(&qs, q, (size_t)(s + ln - q));
		} else if (starts(s, ln, "Questions: ")) {
			add_items(&qs, s + 11, ln - 11, "; ");
		} else if (starts(s, ln, "REPL variables: ")) {
			add_items(&vars, s + 16, ln - 16, ", ");
		} else if (starts(s, ln, "Variables: ")) {
			add_items(&vars, s + 11, ln - 11, "; ");
		} else if (starts(s, ln, "Findings: ") || (!reply && finding(s, ln))) {
			const char *v = starts(s, ln, "Findings: ") ? s + 10 : s;
			if (n_finds == FINDINGS_KEPT) {
				memmove(finds, finds + 1, (FINDINGS_KEPT - 1) * sizeof(*finds));
				memmove(find_n, find_n + 1, (FINDINGS_KEPT - 1) * sizeof(*find_n));
				n_finds--;
			}
			finds[n_finds] = v;
			find_n[n_finds++] = (size_t)(s + ln - v);
		}
		s = nl ? nl + 1 : e;
	}
	buf_printf(&out, "Questions: %s\n", qs.len ? qs.p : "none asked in these turns");
	buf_printf(&out, "Variables: %s\n", vars.len ? vars.p : "none named in these turns");
	{
		struct buf f = BUF_INIT;
		for (size_t i = 0; i < n_finds; i++)
			add_items(&f, finds[i], find_n[i], "; ");
		buf_printf(&out, "Findings: %s\n", f.len ? f.p : "nothing found yet");
		buf_release(&f);
	}
	buf_printf(&out, "Next: %s", next.len ? next.p : "go on from the latest turns");
	buf_release(&qs);
	buf_release(&vars);
	buf_release(&next);
	return buf_detach(&out, NULL);
}
