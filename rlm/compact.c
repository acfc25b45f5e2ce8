/* SPDX-License-Identifier: MIT */
/* rlm/compact.c -- compaction of a node's conversation: before a root call
 * that nears the root model's context window, the older turns become one
 * summary written by the root model (prompts/repl_compact.txt).
 *
 * DESIGN
 * The conversation is [system, first user, (assistant, user)*]. The
 * system prompt and the first user message stay (the task and the
 * context's metadata), and so do the latest turns, as many as fit in
 * half the threshold (at least the last, at most KEEP_TURNS): what the
 * model needs to go on. The turns between become one pair, an assistant
 * message holding the summary ("[Summary of turns A to B ...]") and a
 * user message saying that the REPL's variables still hold everything,
 * so the roles still alternate as providers require. The summary pair
 * of an earlier compaction is the first of the middle turns the next
 * time, so a summary folds the previous one in, and its "turns A to B"
 * keeps the numbering: nothing here assumes the conversation began in
 * this solve (a session moves it in and out around the loop); the state
 * is the messages themselves.
 *
 * The summary call is a root call: it is reserved against the budget
 * (BUDGET_ROOT), accounted (root_calls, usage, cost) and recorded as a
 * "call" of role "compact". If it fails, the middle turns are dropped
 * instead, with a notice; the solve goes on. Events are not touched: the
 * run record and the trajectory keep every turn as it was.
 */
#include "loop_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_THRESHOLD 0.85
#define KEEP_TURNS	  4    /* latest turns kept at most */
#define SUMMARY_MAX	  8000 /* characters a summary may take */
#define SUMMARY_MIN	  600
#define SUMMARY_HEAD	  "[Summary of turn"
#define VARS_MAX	  1500 /* bytes of variable names named */

/* A summary message of an earlier compaction ("[Summary of turn 4, ..."
 * or "[Summary of turns 1 to 9, ..."): its turns *a..*b. */
static bool summary_range(const struct llm_msg *m, int *a, int *b)
{
	size_t n = strlen(SUMMARY_HEAD);
	const char *p;
	char *end;
	long x, y;
	if (m->role != LLM_ASSISTANT || m->len < n + 8 || memcmp(m->text, SUMMARY_HEAD, n) != 0)
		return false;
	p = m->text + n;
	if (*p == 's')
		p++;
	if (*p++ != ' ' || *p < '1' || *p > '9')
		return false;
	x = strtol(p, &end, 10);
	y = x;
	if (strncmp(end, " to ", 4) == 0) {
		if (end[4] < '1' || end[4] > '9')
			return false;
		y = strtol(end + 4, &end, 10);
	}
	if (*end != ',' || x > 100000000 || y < x || y > 100000000)
		return false;
	*a = (int)x;
	*b = (int)y;
	return true;
}

/* The conversation has the shape compaction needs: system, user, then
 * assistant and user in turn. */
static bool well_formed(const struct loop *l)
{
	if (l->n_msgs < 2 || l->msgs[0].role != LLM_SYSTEM || l->msgs[1].role != LLM_USER)
		return false;
	for (size_t i = 2; i < l->n_msgs; i++)
		if (l->msgs[i].role != (i % 2 == 0 ? LLM_ASSISTANT : LLM_USER))
			return false;
	return l->n_msgs % 2 == 0;
}

static size_t msgs_bytes(const struct llm_msg *m, size_t n)
{
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += m[i].len;
	return bytes;
}

/* Is name s[0..n) in names ("a, b")? */
static bool has_name(const struct buf *names, const char *s, size_t n)
{
	const char *p = names->p, *e = names->p + names->len;
	while (p && p < e) {
		const char *c = memchr(p, ',', (size_t)(e - p));
		size_t k = c ? (size_t)(c - p) : (size_t)(e - p);
		if (k == n && memcmp(p, s, n) == 0)
			return true;
		p = c ? c + 2 : NULL;
	}
	return false;
}

/* Add the names of the "REPL variables: x: int, y: list" lines of
 * s[0..len) to names ("a, b"), each once. */
static void names_from(const char *s, size_t len, struct buf *names)
{
	static const char head[] = "REPL variables: ";
	const char *p = s, *e = s + len;
	while ((p = memmem(p, (size_t)(e - p), head, sizeof(head) - 1))) {
		const char *q = p + sizeof(head) - 1, *eol = memchr(q, '\n', (size_t)(e - q));
		if (!eol)
			eol = e;
		while (q < eol && names->len < VARS_MAX) {
			const char *colon = memchr(q, ':', (size_t)(eol - q)), *comma;
			size_t n;
			if (!colon)
				break;
			n = (size_t)(colon - q);
			/* a name, not "(and 3 more" */
			if (n && n < 64 && !memchr(q, ' ', n) && !memchr(q, '(', n) &&
			    !has_name(names, q, n)) {
				if (names->len)
					buf_puts(names, ", ");
				buf_append(names, q, n);
			}
			comma = memchr(colon, ',', (size_t)(eol - colon));
			if (!comma)
				break;
			q = comma + 1;
			while (q < eol && *q == ' ')
				q++;
		}
		p = eol;
	}
}

/* The variables to name: the last exec's (l->vars), else those the
 * middle turns' outputs say they made. A fresh "x, idx, found" or "". */
static char *var_names(const struct loop *l, size_t from, size_t to)
{
	struct buf b = BUF_INIT;
	char *s;
	if (l->vars && *l->vars)
		return xstrndup(
		    l->vars, text_utf8_floor(l->vars, RLM_MIN(strlen(l->vars), (size_t)VARS_MAX)));
	for (size_t i = from; i < to; i++)
		if (l->msgs[i].role == LLM_USER)
			names_from(l->msgs[i].text, l->msgs[i].len, &b);
	s = xstrndup(b.len ? b.p : "", b.len);
	buf_release(&b);
	return s;
}

/* Append m[0..len) to b, cut to cap bytes (its head and tail, the middle
 * named). */
static void put_cut(struct buf *b, const char *s, size_t len, size_t cap)
{
	size_t head, tail;
	if (len <= cap) {
		buf_append(b, s, len);
		return;
	}
	head = text_utf8_floor(s, cap * 2 / 3);
	tail = cap - head;
	while (tail && (s[len - tail] & 0xC0) == 0x80)
		tail--;
	buf_append(b, s, head);
	buf_printf(b, "\n[... %zu bytes cut ...]\n", len - head - tail);
	buf_append(b, s + len - tail, tail);
}

/* The middle turns msgs[from..to) as the summary call's user message, at
 * most cap bytes: each message whole while they all fit, else the long
 * ones cut to an equal share of what the short ones leave. */
static char *transcript(const struct loop *l, size_t from, size_t to, int first, size_t cap,
			size_t *len)
{
	struct buf b;
	size_t n = to - from, total = msgs_bytes(l->msgs + from, n), share = cap;
	int turn = first;
	if (total > cap && n) {
		/* water-fill: messages under the share keep all of theirs */
		size_t left = cap, big = n, prev = 0;
		share = cap / n;
		while (share != prev) {
			prev = share;
			left = cap;
			big = 0;
			for (size_t i = from; i < to; i++) {
				if (l->msgs[i].len <= share)
					left -= RLM_MIN(left, l->msgs[i].len);
				else
					big++;
			}
			share = big ? left / big : cap;
		}
	}
	buf_init(&b, 0);
	for (size_t i = from; i < to; i++) {
		const struct llm_msg *m = &l->msgs[i];
		int a, z;
		if (m->role == LLM_ASSISTANT && summary_range(m, &a, &z)) {
			buf_printf(&b, "## Turns %d to %d (the summary of an earlier compaction)\n",
				   a, z);
			put_cut(&b, m->text, m->len, share);
			buf_puts(&b, "\n\n");
			turn = z + 1;
			i++; /* its user note says nothing of the turns */
			continue;
		}
		if (m->role == LLM_ASSISTANT)
			buf_printf(&b, "## Turn %d: the model's reply\n", turn);
		else
			buf_printf(&b, "## Turn %d: what the REPL answered\n", turn++);
		put_cut(&b, m->text, m->len, share);
		buf_puts(&b, "\n\n");
	}
	while (b.len && b.p[b.len - 1] == '\n')
		b.p[--b.len] = '\0';
	return buf_detach(&b, len);
}

static void on_compact_done(struct llm_call *c, void *arg)
{
	struct loop *l = arg;
	rlm__record_call_as(l->o, l->nodes, l->node, l->parent, l->depth, l->iteration, c,
			    "compact");
	pthread_mutex_lock(&l->c.mu);
	rlm__calls_account(&l->c, c, l->root_est, false);
	l->root_done = true;
	pthread_cond_signal(&l->c.cv);
	pthread_mutex_unlock(&l->c.mu);
}

/* One root-model call over msgs[0..n) into l->root. Returns 0 with the
 * call completed (its rc may be an error), or 1 when a limit stopped the
 * node (the stop is set; nothing is left in l->root). */
static int summary_call(struct loop *l, const struct llm_msg *msgs, size_t n)
{
	enum rlm_stop why;
	char msg[256];
	int64_t t0;
	l->root_est = llm_estimate_tokens(msgs_bytes(msgs, n));
	if (!rlm__budget_reserve(l->budget, l->root_est,
				 llm_model_input_cost(l->o->model, l->root_est), BUDGET_ROOT, &why,
				 msg, sizeof(msg))) {
		rlm__calls_stop(&l->c, why, "%s: the compaction call of turn %d was not sent", msg,
				l->iteration);
		return 1;
	}
	rlm__loop_progress(l, "compact", 0, 1);
	llm_call_init(&l->root, l->o->model, msgs, n);
	/* The node's parameters as they are: a cap on output tokens here
	 * would be spent on a reasoning model's thinking, and the summary
	 * is cut to its size anyway. */
	l->root.params = l->o->params;
	atomic_store(&l->root_cancel, false);
	l->root.cancel = &l->root_cancel;
	l->root_done = false;
	l->root.front = rlm__record_front(l->o);
	t0 = time_now_ns();
	llm_pool_submit(l->o->pool, &l->root, on_compact_done, l);
	pthread_mutex_lock(&l->c.mu);
	while (!l->root_done)
		rlm__calls_wait(&l->c, &l->root_cancel, l->budget->deadline_ns,
				"while the conversation was being compacted");
	pthread_mutex_unlock(&l->c.mu);
	l->out->root_ns += time_now_ns() - t0;
	if (l->c.stopping || rlm__calls_adopt(&l->c)) {
		llm_call_release(&l->root);
		return 1;
	}
	return 0;
}

/* Replace msgs[from..to) by the pair (summary, note); both taken. */
static void splice(struct loop *l, size_t from, size_t to, char *summary, size_t slen, char *note,
		   size_t nlen)
{
	size_t tail = l->n_msgs - to;
	for (size_t i = from; i < to; i++)
		free((void *)(uintptr_t)l->msgs[i].text);
	memmove(l->msgs + from + 2, l->msgs + to, tail * sizeof(*l->msgs));
	l->msgs[from] = (struct llm_msg){LLM_ASSISTANT, summary, slen};
	l->msgs[from + 1] = (struct llm_msg){LLM_USER, note, nlen};
	l->n_msgs = from + 2 + tail;
}

int rlm__loop_compact(struct loop *l, struct rlm_err *err)
{
	const struct rlm_opts *o = l->o;
	double threshold = o->compaction_threshold > 0 && o->compaction_threshold <= 1
			       ? o->compaction_threshold
			       : DEFAULT_THRESHOLD;
	long window = llm_model_context_window(o->model);
	size_t before = msgs_bytes(l->msgs, l->n_msgs), pairs, keep, from = 2, to, head, kept;
	int64_t est = llm_estimate_tokens(before), limit = (int64_t)(threshold * (double)window);
	int64_t target = limit / 2;
	int first = 1, last, a, z, rc;
	size_t sum_max, tlen, slen, nlen, after;
	char *vars = NULL, *tx = NULL, *sys = NULL, *summary = NULL, *note = NULL, *text;
	char turns[48], max_s[32], b0[32], b1[32], e0[32], w_s[32];
	bool failed = false;
	struct buf vb = BUF_INIT;

	if (o->no_compaction || est <= limit)
		return 0;
	if (!well_formed(l)) {
		static const char m[] =
		    "the conversation nears the context window but cannot be "
		    "compacted: its messages are not system, user, then assistant "
		    "and user in turn";
		if (!l->compact_refused)
			rlm__loop_emit(l, "notice", m, sizeof(m) - 1);
		l->compact_refused = true;
		return 0;
	}
	/* The latest turns: the last always, more while they fit. */
	pairs = (l->n_msgs - 2) / 2;
	head = l->msgs[0].len + l->msgs[1].len;
	sum_max =
	    RLM_MAX((size_t)SUMMARY_MIN, RLM_MIN((size_t)SUMMARY_MAX, (size_t)window * 4 / 10));
	keep = 1;
	kept = msgs_bytes(l->msgs + l->n_msgs - 2, 2);
	while (keep < KEEP_TURNS && keep + 1 < pairs) {
		size_t more = msgs_bytes(l->msgs + l->n_msgs - 2 * (keep + 1), 2);
		if (llm_estimate_tokens(head + kept + more + sum_max) > target)
			break;
		kept += more;
		keep++;
	}
	to = l->n_msgs - 2 * keep;
	/* Only an earlier summary to fold: fold one kept turn more. */
	while (keep > 1 && to == from + 2 && summary_range(&l->msgs[from], &a, &z)) {
		keep--;
		to += 2;
	}
	if (to <= from || (to == from + 2 && summary_range(&l->msgs[from], &a, &z)))
		return 0; /* nothing older to fold: the call goes as it is */
	if (summary_range(&l->msgs[from], &a, &z)) {
		first = a;
		last = z + (int)((to - from) / 2) - 1;
	} else {
		last = (int)((to - from) / 2);
	}
	if (first == last)
		snprintf(turns, sizeof(turns), " %d", first);
	else
		snprintf(turns, sizeof(turns), "s %d to %d", first, last);
	vars = var_names(l, from, to);
	if (*vars)
		buf_printf(&vb, " (they are: %s)", vars);

	/* The summary call: the instructions and the middle turns, within
	 * most of the window (the summary and the template take the rest). */
	text_fmt_count(max_s, sizeof(max_s), (int64_t)sum_max);
	{
		struct prompt_var v[3] = {{"turns", turns + (first == last ? 1 : 2), 0},
					  {"vars", vb.len ? vb.p : "", 0},
					  {"max_chars", max_s, 0}};
		size_t syslen, cap;
		rc = rlm__loop_render("repl_compact.txt", v, 3, &sys, &syslen, err);
		if (rc) {
			/* a broken override of the template: drop, as a failed call */
			failed = true;
			summary =
			    xasprintf("the compaction prompt could not be rendered: %s", err->msg);
			rlm_err_clear(err);
		} else {
			struct llm_msg m[2];
			size_t room = (size_t)window * 4 * 7 / 10;
			cap = room > syslen + sum_max ? room - syslen - sum_max : 1024;
			tx = transcript(l, from, to, first, cap, &tlen);
			m[0] = (struct llm_msg){LLM_SYSTEM, sys, syslen};
			m[1] = (struct llm_msg){LLM_USER, tx, tlen};
			if (summary_call(l, m, 2)) {
				free(vars), free(tx), free(sys), buf_release(&vb);
				return 1;
			}
			if (l->root.rc || !l->root.text ||
			    text_is_blank(l->root.text, l->root.len)) {
				failed = true;
				summary =
				    xstrdup(l->root.rc ? (l->root.error ? l->root.error
									: rlm_strerror(l->root.rc))
						       : "the summary was empty");
			} else {
				const char *s = l->root.text;
				size_t n = l->root.len;
				text_trim(&s, &n);
				n = text_utf8_floor(s, RLM_MIN(n, sum_max));
				summary =
				    xasprintf("%s%s, compacted to fit the context window]\n%.*s",
					      SUMMARY_HEAD, turns, (int)n, s);
			}
			llm_call_release(&l->root);
		}
	}
	if (failed) {
		char *why = summary;
		summary = xasprintf("%s%s, dropped to fit the context window: no summary could be "
				    "made]",
				    SUMMARY_HEAD, turns);
		text = xasprintf("the summary call failed (%s): turn%s of the conversation %s "
				 "dropped instead to keep it within the context window",
				 why, turns, first == last ? "was" : "were");
		rlm__loop_emit(l, "notice", text, strlen(text));
		free(text);
		free(why);
	}
	note = xasprintf(
	    "(Turn%s %s %s to keep the conversation within the context window. "
	    "The REPL was not reset: its variables%s%s%s still hold everything %s "
	    "computed; use them rather than computing again. The latest turns "
	    "follow; go on from where they end.)",
	    turns, first == last ? "was" : "were",
	    failed ? "dropped (no summary could be made)" : "replaced by the summary above",
	    *vars ? " (" : "", vars, *vars ? ")" : "", first == last ? "that turn" : "those turns");
	slen = strlen(summary);
	nlen = strlen(note);
	splice(l, from, to, summary, slen, note, nlen);
	after = msgs_bytes(l->msgs, l->n_msgs);
	l->out->compactions++;

	/* What was compacted, for the trajectory and the record. */
	{
		cJSON *d = cJSON_CreateObject(), *c = cJSON_CreateObject();
		char *ds;
		json_add_num(c, "from_turn", first);
		json_add_num(c, "to_turn", last);
		json_add_num(c, "messages", (double)(to - from));
		json_add_num(c, "bytes_before", (double)before);
		json_add_num(c, "bytes_after", (double)after);
		json_add_num(c, "window", (double)window);
		json_add_num(c, "threshold", threshold);
		json_add_bool(c, "summarised", !failed);
		json_add(d, "compaction", c);
		ds = json_print(d);
		cJSON_Delete(d);
		text = xasprintf(
		    "the conversation was compacted: turn%s %s (%s bytes, about %s "
		    "tokens, over %.0f%% of the %s-token window of '%s'; now %s bytes)",
		    turns,
		    failed ? (first == last ? "was dropped" : "were dropped") : "became a summary",
		    text_fmt_count(b0, sizeof(b0), (int64_t)before),
		    text_fmt_count(e0, sizeof(e0), est), threshold * 100,
		    text_fmt_count(w_s, sizeof(w_s), window), llm_model_name(o->model),
		    text_fmt_count(b1, sizeof(b1), (int64_t)after));
		rlm__loop_emit_data(l, "notice", text, strlen(text), ds);
		free(text);
		free(ds);
	}
	if (llm_estimate_tokens(after) > window) {
		text = xasprintf("even compacted, the conversation is about %s tokens, over the "
				 "%s-token window: the call goes as it is",
				 text_fmt_count(e0, sizeof(e0), llm_estimate_tokens(after)),
				 text_fmt_count(w_s, sizeof(w_s), window));
		rlm__loop_emit(l, "notice", text, strlen(text));
		free(text);
	}
	free(vars);
	free(tx);
	free(sys);
	buf_release(&vb);
	return 0;
}
