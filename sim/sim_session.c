/* SPDX-License-Identifier: MIT */
/* sim/sim_session.c -- the root policy in a session: the question a
 * conversation is on now, the index of the context it builds once and
 * reuses, and the questions `history` answers.
 *
 * DESIGN
 * In a session one REPL and one root conversation live across questions:
 * each later question comes as a user message "New question (question N
 * of this session): Q\n\n..." that lists the REPL's variables ("its
 * variables are still there (index: dict, found: list)", or "(none yet)"
 * after a restart). The policy stays stateless: the last such message
 * starts the current segment, whose turns alone count. Step 2 of a
 * session's question looks the question's keys up in `index` (each word
 * of the context, lower case, to the lines that hold it) instead of
 * search(): the first question builds it, a later one reuses it when the
 * REPL still has it (its message lists `index: dict` and the segment shows
 * no restart and no NameError about it), else builds it again. */
#include "sim_int.h"
#include "../common/text.h"

#include <string.h>
#include <strings.h>

static const char newq_mark[] = "New question (question ";
static const char first_mark[] = "This is the first question of a session";

static bool has(const char *s, size_t n, const char *needle)
{
	return s && memmem(s, n, needle, strlen(needle)) != NULL;
}

/* The question of a "New question (question N of this session): Q\n\n..."
 * message, into q[0..qn) (into m); false when m is not one. */
static bool newq_question(const struct llm_msg *m, const char **q, size_t *qn)
{
	const char *s = m->text, *end = s + m->len, *p, *stop;
	if (m->role != LLM_USER || !s || m->len < sizeof(newq_mark) ||
	    memcmp(s, newq_mark, sizeof(newq_mark) - 1) != 0)
		return false;
	p = memmem(s, m->len, "): ", 3);
	if (!p)
		return false;
	p += 3;
	stop = memmem(p, (size_t)(end - p), "\n\n", 2);
	*q = p;
	*qn = (size_t)((stop ? stop : end) - p);
	text_trim(q, qn);
	return true;
}

/* The latest question a compaction summary m names: the last item of its
 * "Questions: " line ("; " between items), into q[0..qn); false when m is
 * no summary or names none. */
static bool summary_question(const struct llm_msg *m, const char **q, size_t *qn)
{
	static const char head[] = "[Summary of turn", mark[] = "\nQuestions: ";
	const char *s = m->text, *end = s + m->len, *p, *nl, *semi;
	if (m->role != LLM_ASSISTANT || !s || m->len < sizeof(head) ||
	    memcmp(s, head, sizeof(head) - 1) != 0 ||
	    !(p = memmem(s, m->len, mark, sizeof(mark) - 1)))
		return false;
	p += sizeof(mark) - 1;
	nl = memchr(p, '\n', (size_t)(end - p));
	end = nl ? nl : end;
	while ((semi = memmem(p, (size_t)(end - p), "; ", 2)))
		p = semi + 2;
	*q = p;
	*qn = (size_t)(end - p);
	text_trim(q, qn);
	return *qn && !(*qn >= 10 && memcmp(*q, "none asked", 10) == 0);
}

bool sim__session_segment(const struct llm_msg *msgs, size_t n, size_t *seg, const char **q,
			  size_t *qn)
{
	const struct llm_msg *first = NULL;
	bool session;
	for (size_t i = 0; i < n && !first; i++)
		if (msgs[i].role == LLM_USER)
			first = &msgs[i];
	session = first && has(first->text, first->len, first_mark);
	for (size_t i = n; i-- > 0;)
		if (newq_question(&msgs[i], q, qn) ||
		    (session && summary_question(&msgs[i], q, qn))) {
			*seg = i;
			return true;
		}
	return false;
}

/* Whether the REPL variables the new question message m lists (the
 * parentheses after "its variables are still there") include `index`. */
static bool lists_index(const struct llm_msg *m)
{
	static const char mark[] = "variables are still there (";
	const char *p = memmem(m->text, m->len, mark, sizeof(mark) - 1), *end;
	if (!p)
		return false;
	p += sizeof(mark) - 1;
	end = memmem(p, (size_t)(m->text + m->len - p), "), and `history`", 16);
	if (!end)
		end = memchr(p, ')', (size_t)(m->text + m->len - p));
	if (!end)
		return false;
	for (const char *s = p; s < end;) {
		/* "name: type" entries joined by ", " */
		const char *c = memchr(s, ',', (size_t)(end - s));
		size_t k = (size_t)((c ? c : end) - s);
		while (k && *s == ' ')
			s++, k--;
		if (k >= 11 && memcmp(s, "index: dict", 11) == 0)
			return true;
		s = c ? c + 1 : end;
	}
	return false;
}

enum sim__index sim__session_index(const struct llm_msg *msgs, size_t n, size_t first, size_t seg,
				   bool later)
{
	if (!later)
		return has(msgs[first].text, msgs[first].len, first_mark) ? SIM__INDEX_KEEP
									  : SIM__INDEX_NONE;
	if (msgs[seg].role == LLM_ASSISTANT)
		return SIM__INDEX_KEEP; /* a summary: whether the REPL has it is unsaid */
	if (!lists_index(&msgs[seg]))
		return SIM__INDEX_BUILD;
	/* gone since: a restart, or the code found no index */
	for (size_t i = seg + 1; i < n; i++)
		if (msgs[i].role == LLM_USER &&
		    (has(msgs[i].text, msgs[i].len, "REPL was restarted") ||
		     has(msgs[i].text, msgs[i].len, "variables are gone") ||
		     has(msgs[i].text, msgs[i].len, "name 'index' is not defined")))
			return SIM__INDEX_BUILD;
	return SIM__INDEX_REUSE;
}

/* The index, built in one pass: each word (\w+, lower case) of each line
 * of `texts` to the lines that hold it, as (document, line number, offset
 * of the line's start), one tuple per line shared by its words. guard:
 * only when the REPL has none (a step run again keeps the one it built,
 * and so does a question whose message a compaction summarised). */
void sim__index_build(struct buf *b, bool guard)
{
	const char *ind = guard ? "    " : "";
	if (guard)
		buf_puts(b, "if not isinstance(globals().get(\"index\"), dict):\n");
	buf_printf(b,
		   "%s# an index for this session's questions: each word (lower case) to the\n"
		   "%s# lines that hold it, as (document, line, where the line starts)\n"
		   "%sindex = {}\n"
		   "%sfor i, t in enumerate([texts] if isinstance(texts, str) else texts):\n"
		   "%s    at = 0\n"
		   "%s    for ln, line in enumerate(t.split(\"\\n\"), 1):\n"
		   "%s        if line:\n"
		   "%s            place = (i, ln, at)\n"
		   "%s            for w in set(re.findall(r\"\\w+\", line.lower())):\n"
		   "%s                index.setdefault(w, []).append(place)\n"
		   "%s        at += len(line) + 1\n",
		   ind, ind, ind, ind, ind, ind, ind, ind, ind, ind, ind);
	buf_puts(b, "print(\"index:\", len(index), \"entries\")\n");
}

/* lookup(term, whole, ic): what search() returns, from the index: the
 * lines of the rarest word of term (with the words that hold it: 東京タワー
 * is inside 東京タワーは, parseHeader inside parseheaders), checked for term
 * itself (whole: not inside a longer number or word; ic: ignoring case),
 * a long line cut to a window of 500 characters around the match, at most
 * max_results. */
void sim__index_lookup(struct buf *b)
{
	buf_puts(
	    b,
	    "def lookup(term, whole, ic, max_results):\n"
	    "    # the lines of the rarest word of term, then term itself on them\n"
	    "    places = None\n"
	    "    for w in re.findall(r\"\\w+\", term.lower()):\n"
	    "        got = set(index.get(w, ()))\n"
	    "        for k in index:\n"
	    "            if w in k and k != w:\n"
	    "                got.update(index[k])\n"
	    "        if places is None or len(got) < len(places):\n"
	    "            places = got\n"
	    "    rx = re.compile(r\"(?<![\\w.])\" + re.escape(term) + r\"(?![\\w]|\\.\\w)\" if "
	    "whole\n"
	    "                    else re.escape(term), re.I if ic else 0)\n"
	    "    out = []\n"
	    "    for i, ln, at in sorted(places or ()):\n"
	    "        t = texts if isinstance(texts, str) else texts[i]\n"
	    "        end = t.find(\"\\n\", at)\n"
	    "        line = t[at:end if end >= 0 else len(t)]\n"
	    "        for m in rx.finditer(line):\n"
	    "            a = max(0, min(m.start() - 166, len(line) - 500))\n"
	    "            cut = line if len(line) <= 500 else (\n"
	    "                (\"...\" if a else \"\") + line[a:a + 500] +\n"
	    "                (\"...\" if a + 500 < len(line) else \"\"))\n"
	    "            out.append({\"doc\": documents[i][\"id\"], \"index\": i, \"line\": ln,\n"
	    "                        \"start\": at + m.start(), \"end\": at + m.end(), \"text\": "
	    "cut})\n"
	    "            if len(out) >= max_results:\n"
	    "                return out\n"
	    "    return out\n");
}

/* Whether the question q[0..qn) asks about the session's earlier questions
 * or answers; *answer: about an answer (else a question). */
static bool asks_history(const char *q, size_t qn, bool *answer)
{
	/* words of the conversation, not of a document ("the first question
	 * of the survey" is not one) */
	static const char *const questions[] = {"previous question", "did i ask",
						"question i asked", "questions i asked",
						"my first question", "my last question",
						"my earlier question"};
	static const char *const answers[] = {"previous answer", "your answer",
					      "your last answer", "your first answer",
					      "you answered", "did you answer"};
	for (size_t i = 0; i < ARRAY_SIZE(answers); i++)
		for (size_t k = 0; k + strlen(answers[i]) <= qn; k++)
			if (strncasecmp(q + k, answers[i], strlen(answers[i])) == 0)
				return *answer = true;
	for (size_t i = 0; i < ARRAY_SIZE(questions); i++)
		for (size_t k = 0; k + strlen(questions[i]) <= qn; k++)
			if (strncasecmp(q + k, questions[i], strlen(questions[i])) == 0)
				return !(*answer = false);
	return false;
}

bool sim__history_step(struct buf *b, const char *q, size_t qn)
{
	bool answer, first;
	if (!asks_history(q, qn, &answer))
		return false;
	first = has(q, qn, "first") || has(q, qn, "First");
	buf_printf(b,
		   "# step 3: answer from history\n"
		   "# the session's earlier questions and answers, oldest first\n"
		   "earlier = history[%s] if history else None\n"
		   "final = str(earlier[\"%s\"]) if earlier else \"NONE\"\n"
		   "answer[\"content\"] = final\n"
		   "answer[\"ready\"] = True\n"
		   "print(\"final answer:\", \" \".join(final.split()))\n",
		   first ? "0" : "-1", answer ? "answer" : "question");
	return true;
}
