/* SPDX-License-Identifier: MIT */
/* sim/sim_root.c -- the simulator's root policy: the Python a sensible
 * model writes, turn by turn, as the root of the RLM loop.
 *
 * DESIGN
 * The policy keeps no state: it reads it from the conversation. Each code
 * block it writes starts with a marker comment "# step N: ...", so the
 * step of the last assistant message says where the solve is, and the
 * last user message (the REPL's output, or a notice of the controller)
 * says what happened to it:
 *   "You are out of turns"              FINAL(best answer seen), or NONE
 *   "REPL was restarted" / "variables   step 2 (its variables are gone;
 *    are gone"                          step 1 has none worth redoing)
 *   a Python error: a line starting     the same step again, written
 *    "Traceback (most recent call       correctly (step 2 when step 3
 *    last):" or "NameError: ..."        lost found/answers)
 *   anything else                       the next step (3 stays 3)
 * The notices are looked for only in lines the policy's own code did not
 * print (its lines start with "sample:", "answer:", "final answer:", and
 * print context text through repr() or flattened to one line), so a
 * context full of logs with tracebacks in them cannot fool it.
 *
 * The three steps: 1 prints type, size and a sample of `context` (str or
 * list), and how many `documents` there are with a few of their ids; 2
 * filters before it reads: when the question has keys (sim__question_keys:
 * its quoted phrases, else its identifiers, sim_next_key's EPOLLEXCLUSIVE
 * or zebra-7731, and the literals a real model would grep for that
 * sim_next_key does not take: 20.0.0 and 2023-04-18, searched whole so
 * that 120.0.0 does not count, Node.js, Zürich) it runs search() for each
 * and prints how many hits; the lines of the rarest key found 1 to
 * HITS_MAX times are read (narrowed to those that hold every key, when
 * some do: "Node.js 20.0.0" is one line of three 20.0.0 lines), or those
 * of every key when the question lists them ("QX-1, QX-2 and QX-3": the
 * lines of each in chunks of their own, asked the question about that key
 * alone, key_qs, and answered as an "all" question), each once (a long line: each window
 * search() cut around a hit), under a "[doc: ID]" line where its
 * document starts, so 8,000 headers cost one sub-call; when they answer
 * nothing (the key was not where the answer is), or there are none (or
 * too many), it reads the whole context: it
 * cuts it into chunks (documents grouped up to the chunk size, a larger
 * one cut). Either way it asks every chunk the question in the shape of
 * tree_leaf.txt with llm_query_batched, keeps the answers that are not
 * NONE, empty or "Error:" with the chunk each came from (chunk_docs: the
 * documents each chunk read), and prints them one per line. A question
 * that asks which document (sim_asks_which_doc) has every document's text
 * headed by "[doc: ID]" in the chunks too, and the sub-call is asked for
 * the ID of the document that holds the answer (the sub-model policy
 * names the header above its best line). 3 finishes: a sum
 * in Python for "how many", the answer itself when all agree, else one
 * llm_query in the shape of tree_combine.txt ("[i] answer" lines, which is
 * how the sub-model policy tells partial answers apart). A question that
 * asks for all of something (sim_asks_all: RULER's multi-value NIAH) may
 * have its answers spread over many chunks, or many child RLMs, each with
 * some of them: step 3 then takes the distinct lines of every answer, in
 * Python, and when there are several has one llm_query list those that
 * answer the question (the sub-model drops lines about something else),
 * falling back on all of them; a child RLM answers the same way, so its
 * parent gets every value it found. For a question that asks which
 * document, the answer is the ID the chunks named (every one, joined by
 * ", ", for a plural; for several and one asked, the combiner picks among
 * them, else the first). Every step 3 sets answer["sources"]: the ids of
 * the documents read by the sub-calls whose answers the final answer used
 * (narrowed to those whose text holds a line of the answer, when some
 * does; for a which-document question, the ids it names), at most 100.
 *
 * Sessions (sim/sim_session.c): one conversation holds several questions;
 * the last "New question (question N of this session)" message starts the
 * current one, whose turns alone count, and step 2 finds the lines of the
 * keys in an `index` of the context's words, built by the first question
 * and reused by the next ones (lookup(), search()'s hits), not search().
 * With an answer schema in the system prompt (rlm's "Structured answer:"
 * paragraph and its ```json fence), step 3 sets answer["content"] to a
 * value built from the schema and its findings (put_structured), never
 * from what the answer should be.
 *
 * Bugs: with probability code_errors a step is written with a bug that
 * raises whatever the context (a NameError from a typo, a TypeError from
 * adding an int to a str, an IndexError from an off-by-one), drawn from
 * rng_splitmix64 over the seed, a hash of the question and the turn, so a run
 * repeats exactly and a retry draws again. */
#include "sim_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK_DEFAULT 100000 /* when the prompt states no size */
#define SHOWN_ANSWERS 10     /* answers step 2 prints */
#define QUESTION_LINE_MAX 500 /* characters of a question read from the context */
#define SHOWN_CHARS   300    /* characters of each */
#define SAMPLE_CHARS  300    /* characters of the sample step 1 prints */
#define HITS_MAX      2000   /* more hits of the key than this: read everything */

enum bug { BUG_NONE, BUG_NAME, BUG_TYPE, BUG_INDEX };

/* The prompts of the sub-calls, as Python string literal pieces. */
static const char leaf_intro[] = "You are answering a question about one part of a larger text. "
				 "Use only the text given here.\\n\\nQuestion: ";
static const char leaf_rules[] =
    "\\n\\nReply with the answer alone, as briefly as the question allows, quoting the text "
    "where you can. If this part does not contain the answer, reply with exactly NONE. For a "
    "question that asks how many, reply with the count for this part only, as a number. For "
    "a question that asks for all of something, reply with every one this part holds, one "
    "per line.";
static const char leaf_doc_rule[] =
    "\\n\\nThe question asks which document: the text of each document comes after a line "
    "[doc: ID] that names it. Reply with the ID of the document that holds the answer (for "
    "several, every ID, one per line), not with its text.";
static const char leaf_text[] = "\\n\\nText:\\n";
static const char combine_intro[] =
    "Several readers each answered the question below from a different part of a larger text. "
    "Combine their partial answers into one final answer. A partial answer of NONE means that "
    "part held nothing relevant. For a question that asks how many, add the counts up. For a "
    "question that asks for all of something, list every distinct one that the partial "
    "answers give, one per line. Reply with the final answer alone.\\n\\nQuestion: ";

/* ---- reading the conversation ---- */

static bool has(const char *s, size_t n, const char *needle)
{
	return s && memmem(s, n, needle, strlen(needle)) != NULL;
}

static bool has_ci(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; s && i + m <= n; i++)
		if (strncasecmp(s + i, needle, m) == 0)
			return true;
	return false;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t m = strlen(prefix);
	return n >= m && memcmp(s, prefix, m) == 0;
}

/* Lines the policy's own code printed: context text shows up only there. */
static bool own_line(const char *s, size_t n)
{
	return starts(s, n, "sample: ") || starts(s, n, "answer: ") ||
	       starts(s, n, "final answer: ") || starts(s, n, "documents: ") ||
	       starts(s, n, "named: ") || starts(s, n, "sources: ") ||
	       starts(s, n, "tool hits: ") || starts(s, n, "tool info: ") ||
	       starts(s, n, "tool result: ") || starts(s, n, "piece: ");
}

static bool ends(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Whether the line s[0..n) reports a Python error: the traceback header,
 * or an exception line ("NameError: ...", or "SyntaxError: ..." that comes
 * without a traceback when the code does not compile). */
static bool error_line(const char *s, size_t n)
{
	size_t i = 0;
	if (starts(s, n, "Traceback (most recent call last)"))
		return true;
	if (!n || s[0] < 'A' || s[0] > 'Z')
		return false;
	while (i < n && (s[i] == '_' || s[i] == '.' || text_is_alnum(s[i])))
		i++;
	return (i == n || s[i] == ':') &&
	       (ends(s, i, "Error") || ends(s, i, "Exception") || ends(s, i, "Interrupt"));
}

/* Whether a line of m that the policy's code did not print holds needle
 * (NULL: reports a Python error). */
static bool notice(const struct llm_msg *m, const char *needle)
{
	const char *s = m ? m->text : NULL, *end = s ? s + m->len : NULL;
	while (s && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);
		if (!own_line(s, n) && (needle ? has(s, n, needle) : error_line(s, n)))
			return true;
		s = nl ? nl + 1 : end;
	}
	return false;
}

/* The step N of the first "# step N:" marker in s, or 0. */
static int step_of(const char *s, size_t n)
{
	static const char mark[] = "# step ";
	const char *p = s, *end = s ? s + n : NULL;
	while (p && (p = memmem(p, (size_t)(end - p), mark, sizeof(mark) - 1))) {
		p += sizeof(mark) - 1;
		if (end - p >= 2 && p[0] >= '1' && p[0] <= '3' && p[1] == ':')
			return p[0] - '0';
	}
	return 0;
}

/* The K of an "# explore K of N:" marker in s (an exploring turn,
 * sim_cfg.explore), or 0. */
static long explore_of(const char *s, size_t n)
{
	static const char mark[] = "# explore ";
	const char *p = s ? memmem(s, n, mark, sizeof(mark) - 1) : NULL;
	long k = 0;
	if (!p)
		return 0;
	for (p += sizeof(mark) - 1; p < s + n && *p >= '0' && *p <= '9' && k < 100000000; p++)
		k = k * 10 + (*p - '0');
	return k;
}

/* An exploring turn: print piece k of the context (300 characters of the
 * str; of a list, the head of one document), as a careful model reads
 * around before it searches. One printed line (repr), which own_line
 * knows. */
static void explore_step(struct buf *b, long k, long n)
{
	buf_printf(b,
		   "# explore %ld of %ld: a piece of the context\n"
		   "_p = context if isinstance(context, str) else "
		   "(context[(%ld - 1) %% len(context)] if len(context) else '')\n"
		   "_p = _p if isinstance(_p, str) else str(_p)\n"
		   "_o = ((%ld - 1) * 300) %% max(len(_p), 1) if isinstance(context, str) else 0\n"
		   "print('piece: ' + repr(_p[_o:_o + 300]))\n",
		   k, n, k, k);
}

/* The question of the first user message: its "Question:" line, up to the
 * paragraph "The context is ..." when the question runs over lines; else
 * the last line ending in '?'; else the first line. Points into m. */
static void question_of(const struct llm_msg *m, const char **q, size_t *qn)
{
	const char *s = m && m->text ? m->text : "", *end = s + (m && m->text ? m->len : 0);
	const char *p = s, *qm = NULL, *first = NULL;
	size_t qm_n = 0, first_n = 0;
	*q = s;
	*qn = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *l = p;
		size_t n = (size_t)((nl ? nl : end) - p);
		while (n && (*l == ' ' || *l == '\t'))
			l++, n--;
		if (starts(l, n, "Question:")) {
			const char *stop = memmem(l, (size_t)(end - l), "\n\nThe context is ", 17);
			*q = l + 9;
			*qn = stop ? (size_t)(stop - *q) : n - 9;
			text_trim(q, qn);
			if (*qn)
				return;
		}
		text_trim(&l, &n);
		if (n && !first)
			first = l, first_n = n;
		if (n && l[n - 1] == '?')
			qm = l, qm_n = n;
		p = nl ? nl + 1 : end;
	}
	if (qm)
		*q = qm, *qn = qm_n;
	else if (first)
		*q = first, *qn = first_n;
}

/* The number after "read about " in m: "200,000", "200000", "50k", "1.5M". */
static long stated_chunk(const struct llm_msg *m)
{
	static const char mark[] = "read about ";
	const char *p = m && m->text ? memmem(m->text, m->len, mark, sizeof(mark) - 1) : NULL;
	const char *end = p ? m->text + m->len : NULL;
	double v = 0, scale = 0;
	if (!p)
		return 0;
	for (p += sizeof(mark) - 1; p < end; p++) {
		if (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p - '0');
			if (scale)
				scale *= 10;
		} else if (*p == '.' && !scale) {
			scale = 1;
		} else if (!((*p == ',' || *p == '_') && p + 1 < end && p[1] >= '0' &&
			     p[1] <= '9')) {
			break;
		}
	}
	if (scale)
		v /= scale;
	if (p < end && (*p == 'k' || *p == 'K'))
		v *= 1e3;
	else if (p < end && *p == 'M')
		v *= 1e6;
	return v >= 1 && v <= 1e12 ? (long)v : 0;
}

/* ---- writing Python ---- */

/* s[0..n) as a Python str literal: quotes, backslashes and control
 * characters escaped, so it stays on one line; other characters as they
 * are (a stray byte that is not UTF-8 becomes \xNN). */
static void py_str(struct buf *b, const char *s, size_t n)
{
	buf_putc(b, '"');
	for (size_t i = 0, k; i < n; i += k) {
		unsigned char c = (unsigned char)s[i];
		k = 1;
		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c == '\n')
			buf_puts(b, "\\n");
		else if (c == '\r')
			buf_puts(b, "\\r");
		else if (c == '\t')
			buf_puts(b, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_printf(b, "\\x%02x", c);
		else if (c < 0x80)
			buf_putc(b, (char)c);
		else if ((k = text_utf8_seq_len(s + i, n - i)))
			buf_append(b, s + i, k);
		else
			buf_printf(b, "\\x%02x", c), k = 1;
	}
	buf_putc(b, '"');
}

void sim__py_str(struct buf *b, const char *s, size_t n)
{
	py_str(b, s, n);
}

static void step1(struct buf *b, enum bug bug, bool at_end)
{
	buf_puts(b, "# step 1: look at the context\n");
	if (bug == BUG_NAME)
		buf_puts(b, "print(\"type:\", type(contxt).__name__, \"length:\", len(contxt))\n");
	else if (bug == BUG_TYPE)
		buf_puts(b, "print(\"type: \" + type(context).__name__ + \", length: \" + "
			    "len(context))\n");
	else
		buf_puts(b,
			 "print(\"type:\", type(context).__name__, \"length:\", len(context))\n");
	buf_printf(b,
		   "if isinstance(context, str):\n"
		   "    print(\"lines:\", context.count(\"\\n\") + 1)\n"
		   "    print(\"sample:\", repr(context[:%d]))\n"
		   "elif isinstance(context, list):\n"
		   "    print(\"characters:\", sum(len(d) for d in context))\n"
		   "    print(\"first lengths:\", [len(d) for d in context[:10]])\n"
		   "    for d in context[:3]:\n"
		   "        print(\"sample:\", repr(d[:%d] if isinstance(d, str) else d)[:%d])\n"
		   "else:\n"
		   "    print(\"keys:\", list(context)[:10] if isinstance(context, dict) else None)\n"
		   "    print(\"sample:\", repr(context)[:%d])\n"
		   "print(\"documents:\", len(documents), \"such as\", "
		   "\", \".join(d[\"id\"] for d in documents[:3]))\n",
		   SAMPLE_CHARS, SAMPLE_CHARS / 2, SAMPLE_CHARS / 2, SAMPLE_CHARS);
	if (bug == BUG_INDEX)
		buf_printf(b, "print(\"sample: last:\", repr(context[len(context)][:%d]))\n",
			   SAMPLE_CHARS / 2);
	if (at_end)
		/* the question is the context's last line: read it */
		buf_printf(b,
			   "_t = context if isinstance(context, str) else str(context[-1]) if "
			   "isinstance(context, list) and context else str(context)\n"
			   "print(\"question line:\", \" \".join(_t.strip().split(\"\\n\")[-1]."
			   "split())[:%d])\n",
			   QUESTION_LINE_MAX);
}

/* A question that is at the end of the context (as the reference asks
 * when the user's message is the context and the question alike): the
 * line step 1 printed, "question line: ...", in a user message of msgs
 * after from; *q and *qn point into it. False when none was printed. */
static bool question_line(const struct llm_msg *msgs, size_t n, size_t from, const char **q,
			  size_t *qn)
{
	static const char mark[] = "\nquestion line: ";
	for (size_t i = from + 1; i < n; i++) {
		const char *t = msgs[i].text, *p, *e;
		if (msgs[i].role != LLM_USER || !t)
			continue;
		/* the output starts the message, after "REPL output:" */
		p = memmem(t, msgs[i].len, mark, sizeof(mark) - 1);
		if (!p)
			continue;
		p += sizeof(mark) - 1;
		e = memchr(p, '\n', (size_t)(t + msgs[i].len - p));
		*q = p;
		*qn = (size_t)((e ? e : t + msgs[i].len) - p);
		text_trim(q, qn);
		return *qn > 0;
	}
	return false;
}

/* What the question asks, as the steps need it. */
struct ask {
	const char *q; /* the question */
	size_t qn;
	bool how_many;	 /* "how many": counts, added up */
	bool all;	 /* sim_asks_all: every value */
	bool by_doc;	 /* sim_asks_which_doc: the answer names documents */
	bool plural;	 /* ... several of them */
	struct sim__key keys[SIM__KEYS_MAX]; /* what step 2 searches for first */
	size_t nkeys;
	bool every;	 /* the question lists its keys: read the lines of each */
	enum sim__index index; /* search(), or the session's `index` (sim_session.c) */
	bool later;	       /* a later question of a session */
	const char *schema; /* the answer schema the system prompt shows, or NULL */
	size_t schema_n;
};

/* text, each of its lines after ind. */
static void put_indented(struct buf *b, const char *ind, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) + 1 : strlen(text);
		buf_puts(b, ind);
		buf_append(b, text, n);
		text += n;
	}
}

/* Step 2's chunks when it reads the whole context (texts: the context, its
 * records as JSON text when they are not str): documents grouped up to
 * the chunk size, a larger one cut; chunk_docs[k] the documents of chunk
 * k. label(i) heads document i's text when the question asks which
 * document. */
static const char full_read[] =
    "if isinstance(texts, str):\n"
    "    chunks = [label(0) + texts[i:i + size] for i in range(0, len(texts), size)]\n"
    "    chunk_docs = [[0] for c in chunks]\n"
    "else:\n"
    "    chunks, chunk_docs, cur, cur_docs = [], [], \"\", []\n"
    "    for j, doc in enumerate(texts):\n"
    "        if len(doc) > size:\n"
    "            if cur:\n"
    "                chunks.append(cur)\n"
    "                chunk_docs.append(cur_docs)\n"
    "                cur, cur_docs = \"\", []\n"
    "            for i in range(0, len(doc), size):\n"
    "                chunks.append(label(j) + doc[i:i + size])\n"
    "                chunk_docs.append([j])\n"
    "        elif cur and len(cur) + 2 + len(doc) > size:\n"
    "            chunks.append(cur)\n"
    "            chunk_docs.append(cur_docs)\n"
    "            cur, cur_docs = label(j) + doc, [j]\n"
    "        else:\n"
    "            cur = cur + \"\\n\\n\" + label(j) + doc if cur else label(j) + doc\n"
    "            cur_docs.append(j)\n"
    "    if cur:\n"
    "        chunks.append(cur)\n"
    "        chunk_docs.append(cur_docs)\n";

/* Step 2's chunks from the lines search() found: each line once, under a
 * "[doc: ID]" line where its document starts (again at the top of each
 * chunk); else the whole context. */
static const char hits_read[] =
    "if picked:\n"
    "    # read only the lines that hold it, each under its document's name\n"
    "    chunks, chunk_docs, cur, cur_docs, seen = [], [], \"\", [], set()\n"
    "    for h in picked:\n"
    "        # a line once; a long line's windows (text cut around a hit) each\n"
    "        if (h[\"index\"], h[\"line\"], h[\"text\"]) in seen:\n"
    "            continue\n"
    "        seen.add((h[\"index\"], h[\"line\"], h[\"text\"]))\n"
    "        name = \"[doc: \" + h[\"doc\"] + \"]\\n\"\n"
    "        same = cur_docs and cur_docs[-1] == h[\"index\"]\n"
    "        piece = h[\"text\"] if same else name + h[\"text\"]\n"
    "        if cur and len(cur) + 1 + len(piece) > size:\n"
    "            chunks.append(cur)\n"
    "            chunk_docs.append(cur_docs)\n"
    "            cur, cur_docs, piece = \"\", [], name + h[\"text\"]\n"
    "        cur = cur + \"\\n\" + piece if cur else piece\n"
    "        if not cur_docs or cur_docs[-1] != h[\"index\"]:\n"
    "            cur_docs.append(h[\"index\"])\n"
    "    if cur:\n"
    "        chunks.append(cur)\n"
    "        chunk_docs.append(cur_docs)\n"
    "else:\n"
    "    if hits:\n"
    "        print(\"too many hits: reading the whole context\")\n";

/* hits_read for a question that lists its keys: the lines of each key in
 * chunks of their own, each asked the question about that key alone
 * (chunk_q, from key_qs), the way a model asks one question per item. */
static const char hits_read_each[] =
    "if picked:\n"
    "    # one question per key, about the lines that hold it\n"
    "    chunks, chunk_docs, chunk_q = [], [], []\n"
    "    for kq, hs in zip(key_qs, results):\n"
    "        cur, cur_docs, seen = \"\", [], set()\n"
    "        for h in sorted(hs, key=lambda h: (h[\"index\"], h[\"start\"])):\n"
    "            if (h[\"index\"], h[\"line\"], h[\"text\"]) in seen:\n"
    "                continue\n"
    "            seen.add((h[\"index\"], h[\"line\"], h[\"text\"]))\n"
    "            name = \"[doc: \" + h[\"doc\"] + \"]\\n\"\n"
    "            same = cur_docs and cur_docs[-1] == h[\"index\"]\n"
    "            piece = h[\"text\"] if same else name + h[\"text\"]\n"
    "            if cur and len(cur) + 1 + len(piece) > size:\n"
    "                chunks.append(cur)\n"
    "                chunk_docs.append(cur_docs)\n"
    "                chunk_q.append(kq)\n"
    "                cur, cur_docs, piece = \"\", [], name + h[\"text\"]\n"
    "            cur = cur + \"\\n\" + piece if cur else piece\n"
    "            if not cur_docs or cur_docs[-1] != h[\"index\"]:\n"
    "                cur_docs.append(h[\"index\"])\n"
    "        if cur:\n"
    "            chunks.append(cur)\n"
    "            chunk_docs.append(cur_docs)\n"
    "            chunk_q.append(kq)\n"
    "    print(len(chunks), \"chunks, one question per key\")\n"
    "else:\n"
    "    if hits:\n"
    "        print(\"too many hits: reading the whole context\")\n";

/* Step 2's search for the keys of the question: each of them (numbers
 * whole, so 20.0.0 is not found in 120.0.0); hits the lines of the rarest
 * key found (at most HITS_MAX times), or of every key when the question
 * lists them; picked those hits, or none when there are too many. */
static void put_search(struct buf *b, const struct ask *a)
{
	buf_puts(b, "import re\nterms = [");
	for (size_t i = 0; i < a->nkeys; i++) {
		const struct sim__key *k = &a->keys[i];
		buf_puts(b, i ? ",\n         (" : "(");
		py_str(b, k->s, k->n);
		buf_puts(b, ", ");
		if (k->kind == SIM__KEY_NUMBER) {
			/* whole: not inside a longer number or word */
			buf_puts(b, "rb\"(?<![\\w.])\" + re.escape(");
			py_str(b, k->s, k->n);
			buf_puts(b, ".encode()) + rb\"(?![\\w]|\\.\\w)\", True");
		} else {
			py_str(b, k->s, k->n);
			buf_puts(b, ", False");
		}
		buf_printf(b, ", %s)",
			   k->kind == SIM__KEY_QUOTED || k->kind == SIM__KEY_NAME ? "True" : "False");
	}
	buf_printf(b,
		   "]\n"
		   "results = []\n"
		   "for term, pattern, rx, ic in terms:\n"
		   "    hits = %s%d%s\n"
		   "    print(\"%s\", repr(term) + \":\", len(hits), \"hits in\", "
		   "len(set(h[\"index\"] for h in hits)), \"documents\")\n"
		   "    results.append(hits)\n",
		   a->index ? "lookup(term, rx, ic, " : "search(pattern, max_results=", HITS_MAX + 1,
		   a->index ? ")" : ", regex=rx, ignore_case=ic)", a->index ? "index" : "search");
	if (a->every)
		buf_puts(b, "# the question lists them: the lines of each\n"
			    "hits = sorted((h for hs in results for h in hs),\n"
			    "              key=lambda h: (h[\"index\"], h[\"start\"]))\n");
	else
		buf_printf(b,
			   "# the rarest that is there narrows the most\n"
			   "few = [hs for hs in results if 0 < len(hs) <= %d]\n"
			   "hits = min(few, key=len) if few else max(results, key=len)\n",
			   HITS_MAX);
	buf_printf(b, "picked = hits if len(hits) <= %d else []\n", HITS_MAX);
	if (a->nkeys > 1 && !a->every)
		buf_puts(
		    b,
		    "# narrowed again: the lines that also hold the other terms, if some do\n"
		    "both = [h for h in picked\n"
		    "        if all(t.lower() in h[\"text\"].lower() for t, p, rx, ic in terms)]\n"
		    "if both and len(both) < len(picked):\n"
		    "    print(len(both), \"of them hold every term\")\n"
		    "    picked = both\n");
}

/* key_qs: for a question that lists its keys, the question about each
 * alone, the list replaced with that key ("List the quantities of parts
 * QX-1, QX-2 and QX-3." -> "List the quantities of parts QX-1."). */
static void put_key_qs(struct buf *b, const struct ask *a)
{
	const struct sim__key *first = &a->keys[0], *last = &a->keys[a->nkeys - 1];
	size_t pre = (size_t)(first->s - a->q), post = (size_t)(last->s + last->n - a->q);
	buf_puts(b, "key_qs = [");
	for (size_t i = 0; i < a->nkeys; i++) {
		struct buf one;
		buf_init(&one, 0);
		buf_append(&one, a->q, pre);
		buf_append(&one, a->keys[i].s, a->keys[i].n);
		buf_append(&one, a->q + post, a->qn - post);
		if (i)
			buf_puts(b, ",\n          ");
		py_str(b, one.p, one.len);
		buf_release(&one);
	}
	buf_puts(b, "]\n");
}

/* Step 2. A question with a key (sim_next_key) searches for it first: up
 * to HITS_MAX hits, the chunks are the lines that hold it, each under the
 * name of its document; none (or more): the whole context, as below.
 * rlm_chunks > 0: recursion is available, and past that many
 * chunks the context goes to child RLMs in 8 to 16 pieces with the question
 * alone as their prompt: for a str, slices of whole chunks (a child cuts
 * the same chunks again); for a list, runs of whole documents,
 * context[a:b], each about an equal share of the text (a document goes to
 * the share its middle falls in; one longer than a share goes alone). Both
 * are parts of `context`, which the runtime passes on without a copy. Each
 * child maps its piece (recursing again when it may and the piece still
 * has too many chunks) and answers like a root, the value or NONE (for "how
 * many", its count; for "all", every value it found, one per line).
 * asked[k] lists the documents the k-th sub-call read, for step 3's
 * sources. */
/* Step 2's asking of the chunks (Python at no indent): llm_query_batched
 * over them, or child RLMs past rlm_chunks (> 0) chunks when no key's
 * lines were picked; found / found_at the answers kept and their sub-calls. */
static void put_ask(struct buf *b, long rlm_chunks, bool each, enum bug bug)
{
	const char *indent = rlm_chunks > 0 ? "    " : "";
	if (rlm_chunks > 0) {
		/* ceil(n / k) in Python: -(-n // k) */
		buf_printf(
		    b,
		    "if not picked and len(chunks) > %ld:\n"
		    "    # too many chunks for one batch: child RLMs take a piece each\n"
		    "    per = -(-len(chunks) // min(16, max(8, -(-len(chunks) // %ld))))\n"
		    "    if isinstance(texts, str):\n"
		    "        pieces = [texts[i:i + per * size] for i in range(0, "
		    "len(texts), per * size)]\n"
		    "        asked = [[0] for p in pieces]\n"
		    "    else:\n"
		    "        # runs of whole documents, an equal share of the text each\n"
		    "        share = sum(len(d) for d in texts) / -(-len(chunks) // per)\n"
		    "        cuts, seen, last = [0], 0, 0\n"
		    "        for i, d in enumerate(texts):\n"
		    "            at = int((seen + len(d) / 2) // share)\n"
		    "            if i and (at != last or len(d) > share or len(texts[i - 1]) "
		    "> share):\n"
		    "                cuts.append(i)\n"
		    "            last, seen = at, seen + len(d)\n"
		    "        runs = list(zip(cuts, cuts[1:] + [len(texts)]))\n"
		    "        pieces = [texts[a:b] for a, b in runs]\n"
		    "        asked = [list(range(a, b)) for a, b in runs]\n"
		    "    print(len(chunks), \"chunks: asking\", len(pieces), \"child RLMs\")\n"
		    "    answers = %s([q] * len(pieces), contexts=pieces)\n"
		    "else:\n",
		    rlm_chunks, rlm_chunks,
		    bug == BUG_NAME ? "rlm_query_batch" : "rlm_query_batched");
	}
	buf_printf(b, "%sasked = chunk_docs\n%sprompts = %s\n%s", indent, indent,
		   each ? "[head_of(cq) + c for cq, c in zip(chunk_q, chunks)]"
			: "[head + c for c in chunks]",
		   indent);
	if (bug == BUG_NAME)
		buf_puts(b, "answers = llm_query_batch(prompts)\n");
	else
		buf_puts(b, "answers = llm_query_batched(prompts) if prompts else []\n");
	buf_puts(b, "found, found_at = [], []\n"
		    "for k, a in enumerate(answers):\n"
		    "    a = a.strip()\n"
		    "    if a and a.rstrip(\".\").upper() != \"NONE\" and not "
		    "a.startswith(\"Error:\"):\n"
		    "        found.append(a)\n"
		    "        found_at.append(k)\n");
}

static void step2(struct buf *b, const struct ask *a, long size, long rlm_chunks, enum bug bug)
{
	struct buf ask;
	buf_puts(b, "# step 2: ask every chunk of the context\nq = ");
	py_str(b, a->q, a->qn);
	buf_printf(b,
		   "\nsize = %ld\n"
		   "by_doc = %s\n"
		   "def label(i):\n"
		   "    # a line naming document i above its text, when the question asks which "
		   "one\n"
		   "    return \"[doc: \" + documents[i][\"id\"] + \"]\\n\" if by_doc else \"\"\n"
		   "# the text of each document (a record that is not str, as JSON)\n"
		   "if isinstance(context, str) or (isinstance(context, list) and\n"
		   "                                all(type(d) is str for d in context)):\n"
		   "    texts = context\n"
		   "elif isinstance(context, list):\n"
		   "    import json\n"
		   "    texts = [d if isinstance(d, str) else json.dumps(d, ensure_ascii=False)\n"
		   "             for d in context]\n"
		   "else:\n"
		   "    import json\n"
		   "    texts = json.dumps(context, ensure_ascii=False, indent=1)\n",
		   size, a->by_doc ? "True" : "False");
	if (a->index) {
		/* a session: the lines of the keys from the index, built once */
		buf_puts(b, "import re\n");
		if (a->index == SIM__INDEX_BUILD || a->index == SIM__INDEX_KEEP)
			sim__index_build(b, a->index == SIM__INDEX_KEEP);
		if (a->nkeys)
			sim__index_lookup(b);
	}
	if (a->nkeys) {
		put_search(b, a);
		if (a->every) {
			put_key_qs(b, a);
			buf_puts(b, hits_read_each);
			put_indented(b, "    ", full_read);
			buf_puts(b, "    chunk_q = [q] * len(chunks)\n");
		} else {
			buf_puts(b, hits_read);
			put_indented(b, "    ", full_read);
		}
	} else {
		buf_puts(b, "picked = []\n");
		buf_puts(b, full_read);
	}
	if (a->every)
		buf_printf(b,
			   "def head_of(q):\n"
			   "    return (\"%s\" + \" \".join(q.split()) +\n"
			   "            \"%s%s%s\")\n"
			   "head = head_of(q)\n",
			   leaf_intro, leaf_rules, a->by_doc ? leaf_doc_rule : "", leaf_text);
	else
		buf_printf(b,
			   "head = (\"%s\" + \" \".join(q.split()) +\n"
			   "        \"%s%s%s\")\n",
			   leaf_intro, leaf_rules, a->by_doc ? leaf_doc_rule : "", leaf_text);
	if (bug == BUG_TYPE)
		buf_puts(b, "print(\"asking \" + len(chunks) + \" chunks\")\n");
	buf_init(&ask, 0);
	put_ask(&ask, rlm_chunks, a->every, bug);
	if (a->nkeys) {
		/* the lines that hold a key answered nothing: read everything */
		buf_puts(b, "while True:\n");
		put_indented(b, "    ", ask.p);
		buf_puts(b,
			 "    print(len(chunks), \"chunks,\", len(answers), \"answers,\", "
			 "len(found), \"found\")\n"
			 "    if found or not picked:\n"
			 "        break\n"
			 "    print(\"nothing found in the lines that hold it: reading the whole "
			 "context\")\n"
			 "    picked = []\n");
		put_indented(b, "    ", full_read);
		if (a->every)
			buf_puts(b, "    chunk_q = [q] * len(chunks)\n");
	} else {
		buf_puts(b, ask.p);
	}
	buf_release(&ask);
	if (!a->nkeys)
		buf_puts(b, "print(len(chunks), \"chunks,\", len(answers), \"answers,\", "
			    "len(found), \"found\")\n");
	buf_printf(b,
		   "for a in found[:%d]:\n"
		   "    print(\"answer:\", \" \".join(a.split())[:%d])\n",
		   SHOWN_ANSWERS, SHOWN_CHARS);
	if (bug == BUG_INDEX)
		buf_puts(b, "print(\"last answer:\", answers[len(answers)])\n");
}

/* Step 3's sources: the documents of the sub-calls whose answers the final
 * answer used (for "how many", those that counted some; for a question
 * that asks which document, the names the final answer gives, read by
 * that sub-call), narrowed, but for a count, to those whose text holds a
 * line of the answer when some does; at most 100. */
static void put_sources(struct buf *b, const struct ask *a)
{
	buf_printf(b,
		   "# the documents whose chunks gave the answer used: its sources\n"
		   "def held(a, i):\n"
		   "    t = texts if isinstance(texts, str) else texts[i]\n"
		   "    return isinstance(t, str) and any(l.strip() and l.strip() in t for l in "
		   "a.split(\"\\n\"))\n"
		   "final_lines = [l.strip() for l in final.replace(\", \", \"\\n\").split(\"\\n\") "
		   "if l.strip()]\n"
		   "sources = []\n"
		   "for a, k in zip(found, found_at):\n"
		   "    lines = [l.strip() for l in a.split(\"\\n\") if l.strip()]\n"
		   "    if final == \"NONE\" or not (%s):\n"
		   "        continue\n"
		   "    ids = [documents[i][\"id\"] for i in asked[k]]\n"
		   "    if by_doc:\n"
		   "        got = [d for d in ids if d in lines and d in final_lines]\n"
		   "    elif %s:\n"
		   "        # a count is of every document the sub-call read\n"
		   "        got = ids\n"
		   "    else:\n"
		   "        got = [d for i, d in zip(asked[k], ids) if held(a, i)] or ids\n"
		   "    for d in got:\n"
		   "        if d not in sources and len(sources) < 100:\n"
		   "            sources.append(d)\n"
		   "answer[\"sources\"] = sources\n"
		   "print(\"sources:\", \", \".join(sources[:10]))\n",
		   a->how_many ? "re.search(r\"[1-9]\", a)"
			       : "final in a or any(l in final for l in lines)",
		   a->how_many ? "True" : "False");
}

static void put_structured(struct buf *b, const struct ask *a);

static void step3(struct buf *b, const struct ask *a, enum bug bug)
{
	buf_printf(b, "# step 3: %s and finish\n",
		   a->how_many ? "add up the counts"
		   : a->by_doc ? "name the document"
		   : a->all    ? "gather every answer"
			       : "combine the answers");
	if (bug == BUG_NAME)
		buf_puts(b, "print(len(fuond), \"answers to combine\")\n");
	else if (bug == BUG_TYPE)
		buf_puts(b, "print(\"answers to combine: \" + len(found))\n");
	else if (bug == BUG_INDEX)
		buf_puts(b, "print(\"last answer:\", found[len(found)])\n");
	if (a->how_many) {
		buf_puts(b, "import re\n"
			    "counts = []\n"
			    "for a in found:\n"
			    "    m = re.search(r\"\\d+\", a)\n"
			    "    if m:\n"
			    "        counts.append(int(m.group()))\n"
			    "final = str(sum(counts)) if found else \"NONE\"\n"
			    "print(len(counts), \"counts\")\n");
	} else if (a->by_doc) {
		/* the names the chunks gave; several for one: the sub-model
		 * picks, else the first */
		buf_puts(b, "q = ");
		py_str(b, a->q, a->qn);
		buf_printf(b,
			   "\nnames = []\n"
			   "for a in found:\n"
			   "    for v in a.split(\"\\n\"):\n"
			   "        v = v.strip()\n"
			   "        if v and v.rstrip(\".\").upper() != \"NONE\" and v not in names:\n"
			   "            names.append(v)\n"
			   "print(\"named:\", len(names), \"documents:\", \", \".join(names[:10]))\n"
			   "if not names:\n"
			   "    final = \"NONE\"\n"
			   "elif %s or len(names) == 1:\n"
			   "    final = \", \".join(names)\n"
			   "else:\n"
			   "    partials = \"\\n\".join(f\"[{i + 1}] {v}\" for i, v in "
			   "enumerate(names))\n"
			   "    final = llm_query(\"%s\" + \" \".join(q.split()) +\n"
			   "                      \"\\n\\nPartial answers:\\n\" + partials).strip()\n"
			   "    if final not in names:\n"
			   "        final = names[0]\n",
			   a->plural ? "True" : "False", combine_intro);
	} else if (a->all) {
		/* every distinct line of every answer; several: the sub-model
		 * keeps those that answer the question */
		buf_puts(b, "q = ");
		py_str(b, a->q, a->qn);
		buf_printf(
		    b,
		    "\nvals = []\n"
		    "for a in found:\n"
		    "    for v in a.split(\"\\n\"):\n"
		    "        v = v.strip()\n"
		    "        if v and v.rstrip(\".\").upper() != \"NONE\" and v not in vals:\n"
		    "            vals.append(v)\n"
		    "print(len(vals), \"distinct answers\")\n"
		    "if not vals:\n"
		    "    final = \"NONE\"\n"
		    "elif len(vals) == 1:\n"
		    "    final = vals[0]\n"
		    "else:\n"
		    "    partials = \"\\n\".join(f\"[{i + 1}] {v}\" for i, v in "
		    "enumerate(vals))\n"
		    "    final = llm_query(\"%s\" + \" \".join(q.split()) +\n"
		    "                      \"\\n\\nPartial answers:\\n\" + partials).strip()\n"
		    "    if (not final or final.startswith(\"Error:\") or\n"
		    "            final.rstrip(\".\").upper() == \"NONE\"):\n"
		    "        final = \"\\n\".join(vals)\n",
		    combine_intro);
	} else {
		buf_puts(b, "q = ");
		py_str(b, a->q, a->qn);
		buf_printf(
		    b,
		    "\nif not found:\n"
		    "    final = \"NONE\"\n"
		    "elif len(set(found)) == 1:\n"
		    "    final = found[0]\n"
		    "else:\n"
		    "    partials = \"\\n\".join(f\"[{i + 1}] {a}\" for i, a in "
		    "enumerate(found))\n"
		    "    final = llm_query(\"%s\" + \" \".join(q.split()) +\n"
		    "                      \"\\n\\nPartial answers:\\n\" + partials).strip()\n"
		    "    if not final or final.startswith(\"Error:\"):\n"
		    "        final = found[0]\n",
		    combine_intro);
	}
	put_sources(b, a);
	if (a->schema) {
		put_structured(b, a);
		return;
	}
	buf_puts(b, "answer[\"content\"] = final\n"
		    "answer[\"ready\"] = True\n"
		    "print(\"final answer:\", \" \".join(final.split()))\n");
}

/* The answer schema the system prompt shows (rlm's prompts/
 * repl_schema.txt: "Structured answer:", then a ```json fence): *s, *n. */
static void schema_of(const struct llm_msg *system, const char **s, size_t *n)
{
	static const char head[] = "\nStructured answer:", fence[] = "```json\n";
	const char *t = system ? system->text : NULL, *end, *p, *q;
	*s = NULL;
	*n = 0;
	if (!t)
		return;
	end = t + system->len;
	p = memmem(t, system->len, head, sizeof(head) - 1);
	if (!p)
		return;
	p = memmem(p, (size_t)(end - p), fence, sizeof(fence) - 1);
	if (!p)
		return;
	p += sizeof(fence) - 1;
	q = memmem(p, (size_t)(end - p), "\n```", 4);
	if (!q)
		return;
	*s = p;
	*n = (size_t)(q - p);
}

/* A structured answer (the system prompt showed a JSON Schema): the value
 * a sensible model builds from the schema and what it found, in Python:
 * a string is the answer (or, under an array, a finding; a member named
 * like a document, its id), an array the findings, an integer or number
 * the count (the answer's for "how many", else the findings'), kept in
 * the bounds the schema states, a boolean whether there is an answer; an
 * enum the member the answer names, else its first. It never sees what
 * the answer should be: only the schema and its own findings. */
static void put_structured(struct buf *b, const struct ask *a)
{
	buf_puts(b, "import json, re\nschema_text = ");
	py_str(b, a->schema, a->schema_n);
	buf_printf(
	    b,
	    "\ntry:\n"
	    "    schema = json.loads(schema_text)\n"
	    "except ValueError:\n"
	    "    schema = {}\n"
	    "findings = []\n"
	    "for a, k in zip(found, found_at):\n"
	    "    ids = [documents[i][\"id\"] for i in asked[k]]\n"
	    "    for v in a.split(\"\\n\"):\n"
	    "        v = v.strip()\n"
	    "        if v and v.rstrip(\".\").upper() != \"NONE\" and v not in [f[0] for f in "
	    "findings]:\n"
	    "            findings.append((v, ids[0] if ids else \"\"))\n"
	    "m = re.search(r\"-?\\d+\", final)\n"
	    "count = int(m.group()) if %s and m else len(findings)\n"
	    "DOC_NAMES = (\"doc\", \"document\", \"source\", \"id\", \"file\", \"path\")\n"
	    "def kind(s):\n"
	    "    t = s.get(\"type\")\n"
	    "    if isinstance(t, list):\n"
	    "        t = next((x for x in t if x != \"null\"), \"null\")\n"
	    "    if t is None:\n"
	    "        t = \"object\" if \"properties\" in s else \"array\" if \"items\" in s else "
	    "\"string\"\n"
	    "    return t\n"
	    "def bounded(s, v):\n"
	    "    if \"maximum\" in s:\n"
	    "        v = min(v, s[\"maximum\"])\n"
	    "    if \"minimum\" in s:\n"
	    "        v = max(v, s[\"minimum\"])\n"
	    "    return v\n"
	    "def build(s, text, doc, name=\"\", top=True):\n"
	    "    if not isinstance(s, dict):\n"
	    "        return text\n"
	    "    if \"const\" in s:\n"
	    "        return s[\"const\"]\n"
	    "    if s.get(\"enum\"):\n"
	    "        for e in s[\"enum\"]:\n"
	    "            if isinstance(e, str) and e.lower() in text.lower():\n"
	    "                return e\n"
	    "        return s[\"enum\"][0]\n"
	    "    for k in (\"anyOf\", \"oneOf\"):\n"
	    "        if s.get(k):\n"
	    "            return build(s[k][0], text, doc, name, top)\n"
	    "    if s.get(\"allOf\"):\n"
	    "        merged = {}\n"
	    "        for x in s[\"allOf\"]:\n"
	    "            merged.update(x)\n"
	    "        return build(merged, text, doc, name, top)\n"
	    "    t = kind(s)\n"
	    "    if t == \"object\":\n"
	    "        props = s.get(\"properties\", {})\n"
	    "        req = list(s.get(\"required\", []))\n"
	    "        return {k: build(props.get(k, {}), text, doc, k, top) for k in req + [k for k in "
	    "props if k not in req]}\n"
	    "    if t == \"array\":\n"
	    "        vals = findings if top else [(text, doc)]\n"
	    "        if top and not vals and final != \"NONE\":\n"
	    "            vals = [(final, \"\")]\n"
	    "        out = [build(s.get(\"items\", {}), v, d, name, False) for v, d in vals]\n"
	    "        return out[:s[\"maxItems\"]] if \"maxItems\" in s else out\n"
	    "    if t == \"integer\":\n"
	    "        return int(bounded(s, count if top else len(text)))\n"
	    "    if t == \"number\":\n"
	    "        return float(bounded(s, count if top else len(text)))\n"
	    "    if t == \"boolean\":\n"
	    "        return final != \"NONE\"\n"
	    "    if t == \"null\":\n"
	    "        return None\n"
	    "    v = doc if name.lower() in DOC_NAMES and doc else text\n"
	    "    return v[:s[\"maxLength\"]] if \"maxLength\" in s else v\n"
	    "answer[\"content\"] = build(schema, final, \"\")\n"
	    "answer[\"ready\"] = True\n"
	    "print(\"final answer:\", \" \".join(final.split()))\n",
	    a->how_many ? "True" : "False");
}

/* ---- the answer when out of turns ---- */

/* The first integer of s[0..n), or -1. */
static long long first_int(const char *s, size_t n)
{
	long long v = -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9') {
			if (v >= 0)
				break;
			continue;
		}
		v = (v < 0 ? 0 : v) * 10 + (s[i] - '0');
		if (v > 1000000000000000LL)
			break;
	}
	return v;
}

/* Whether s[0..n) has a line that is l[0..ln). */
static bool has_line(const char *s, size_t n, const char *l, size_t ln)
{
	const char *end = s ? s + n : NULL;
	while (s && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t k = (size_t)((nl ? nl : end) - s);
		if (k == ln && memcmp(s, l, ln) == 0)
			return true;
		s = nl ? nl + 1 : end;
	}
	return false;
}

/* The best answer the outputs show: the last "final answer:" line printed;
 * else from the latest output with "answer:" lines, the first (for "how
 * many", their sum; for "all", the distinct ones, one per line). NULL
 * when none. */
static char *best_seen(const struct llm_msg *msgs, size_t n, size_t first_user, bool how_many,
		       bool all)
{
	for (int pass = 0; pass < 2; pass++) {
		const char *prefix = pass ? "answer: " : "final answer: ";
		for (size_t i = n; i-- > first_user + 1;) {
			const char *s = msgs[i].text, *end = s ? s + msgs[i].len : NULL;
			const char *got = NULL;
			size_t got_n = 0, lines = 0;
			long long sum = 0;
			struct buf list;
			if (msgs[i].role != LLM_USER)
				continue;
			buf_init(&list, 0);
			while (s && s < end) {
				const char *nl = memchr(s, '\n', (size_t)(end - s));
				size_t ln = (size_t)((nl ? nl : end) - s), k = strlen(prefix);
				if (starts(s, ln, prefix)) {
					const char *v = s + k;
					size_t vn = ln - k;
					long long num = first_int(v, vn);
					if (!got || !pass)
						got = v, got_n = vn;
					sum += num > 0 ? num : 0;
					lines++;
					text_trim(&v, &vn);
					if (pass && all && vn &&
					    !has_line(list.p, list.len, v, vn)) {
						if (list.len)
							buf_putc(&list, '\n');
						buf_append(&list, v, vn);
					}
				}
				s = nl ? nl + 1 : end;
			}
			if (!got) {
				buf_release(&list);
				continue;
			}
			if (pass && all)
				return buf_detach(&list, NULL);
			buf_release(&list);
			if (pass && how_many)
				return xasprintf("%lld", sum);
			text_trim(&got, &got_n);
			return xstrndup(got, got_n);
		}
	}
	return NULL;
}

/* FINAL(best) on one line (runs of blanks become one space); FINAL(NONE)
 * when best is NULL or empty. */
static char *final_line(const char *best)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "FINAL(");
	if (best && *best) {
		for (const char *p = best; *p; p++)
			if (!text_is_space(*p) || (b.len && b.p[b.len - 1] != ' '))
				buf_putc(&b, text_is_space(*p) ? ' ' : *p);
		while (b.p[b.len - 1] == ' ')
			b.p[--b.len] = '\0';
	}
	if (b.len == 6)
		buf_puts(&b, "NONE");
	buf_putc(&b, ')');
	return buf_detach(&b, NULL);
}

static char *final_reply(const struct llm_msg *msgs, size_t n, size_t first_user, bool how_many,
			 bool all)
{
	char *best = best_seen(msgs, n, first_user, how_many, all), *out = final_line(best);
	free(best);
	return out;
}

/* ---- the policy ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

/* Whether the step of this turn gets a bug, and which. */
static enum bug draw_bug(const struct sim_cfg *cfg, const char *q, size_t qn, size_t turn)
{
	uint64_t st = cfg->seed, u;
	st = rng_splitmix64(&st) ^ fnv1a(q, qn);
	st = rng_splitmix64(&st) ^ (uint64_t)turn;
	u = rng_splitmix64(&st);
	if ((double)(u >> 11) * 0x1p-53 >= cfg->code_errors)
		return BUG_NONE;
	return (enum bug)(BUG_NAME + rng_splitmix64(&st) % 3);
}

/* Whether rlm_query starts a child RLM: the system message offers it and
 * does not say it is a plain sub-call here (recursion off, or this node at
 * the last level). */
static bool can_recurse(const struct llm_msg *system)
{
	return system && has(system->text, system->len, "rlm_query_batched") &&
	       !has(system->text, system->len, "Recursion is off") &&
	       !has(system->text, system->len, "last level of recursion");
}

/* Whether m reports that a name step 2 defines is gone (step 3 needs it). */
static bool lost_step2(const struct llm_msg *m)
{
	static const char *const names[] = {"found", "found_at", "answers", "asked", "by_doc",
					    "texts"};
	char needle[48];
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(needle, sizeof(needle), "name '%s' is not defined", names[i]);
		if (notice(m, needle))
			return true;
	}
	return false;
}

static bool is_root(const struct llm_msg *msgs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (msgs[i].role == LLM_SYSTEM && has(msgs[i].text, msgs[i].len, "```repl") &&
		    has(msgs[i].text, msgs[i].len, "llm_query_batched"))
			return true;
	return false;
}

char *sim_root_reply(const struct sim_cfg *cfg, const struct llm_msg *msgs, size_t n)
{
	struct sim_cfg defaults;
	const struct llm_msg *first = NULL, *last = NULL, *system = NULL, *seg;
	size_t first_i = 0, seg_i = 0, turn = 1;
	int prev = 0, step, tools = 0;
	bool at_end;
	long explored = 0;
	const char *why, *tools_why = NULL;
	struct ask a = {0};
	long size;
	struct buf b;
	if (!is_root(msgs, n))
		return NULL;
	if (!cfg) {
		sim_cfg_default(&defaults);
		cfg = &defaults;
	}
	/* in a session, the turns of the current question (its segment) */
	a.later = sim__session_segment(msgs, n, &seg_i, &a.q, &a.qn);
	for (size_t i = 0; i < n; i++) {
		if (msgs[i].role == LLM_SYSTEM && !system)
			system = &msgs[i];
		if (msgs[i].role == LLM_USER && !first)
			first = &msgs[i], first_i = i;
		if (msgs[i].role == LLM_USER)
			last = &msgs[i];
		if (msgs[i].role == LLM_ASSISTANT && (!a.later || i > seg_i)) {
			turn++;
			prev = step_of(msgs[i].text, msgs[i].len);
			tools = sim__tools_step(msgs[i].text, msgs[i].len);
			explored = explore_of(msgs[i].text, msgs[i].len);
		}
	}
	if (!a.later) {
		seg_i = first_i;
		question_of(first, &a.q, &a.qn);
	}
	seg = first ? &msgs[seg_i] : NULL;
	a.index = first ? sim__session_index(msgs, n, first_i, seg_i, a.later) : SIM__INDEX_NONE;
	at_end = has(a.q, a.qn, "The question is in the context, at its end");
	if (at_end)
		question_line(msgs, n, seg_i, &a.q, &a.qn);
	a.how_many = has_ci(a.q, a.qn, "how many");
	a.all = sim_asks_all(a.q, a.qn);
	a.by_doc = sim_asks_which_doc(a.q, a.qn, &a.plural);
	a.nkeys = sim__question_keys(a.q, a.qn, a.keys, &a.every);
	/* a later question of a session shows its own schema, or says the
	 * first question's (in the system prompt) does not hold */
	if (a.later)
		schema_of(seg, &a.schema, &a.schema_n);
	if (!a.schema && !(a.later && has(seg->text, seg->len, "answer is plain text")))
		schema_of(system, &a.schema, &a.schema_n);
	/* "the codes of A, B and C": every one of them */
	a.all = a.all || (a.every && !a.how_many && !a.by_doc);
	if (last && last != seg && notice(last, "You are out of turns")) {
		char *seen = sim__tools_result_seen(msgs + seg_i + 1, n - seg_i - 1);
		if (seen) {
			/* the tools answered: that is the answer */
			char *r = final_line(seen);
			free(seen);
			return r;
		}
		return final_reply(msgs, n, seg_i, a.how_many, a.all);
	}
	if (a.later && !a.nkeys) {
		/* "What was the previous answer?": `history` has it */
		buf_init(&b, 0);
		buf_puts(&b, "The question is about an earlier question of this session, which "
			     "`history` holds.\n\n```repl\n");
		if (sim__history_step(&b, a.q, a.qn)) {
			buf_puts(&b, "```\n");
			return buf_detach(&b, NULL);
		}
		buf_release(&b);
	}
	/* host tools first: their turns come before the usual ones */
	if (sim__tools_offered(system) && (turn == 1 || tools)) {
		char *r = sim__tools_reply(a.q, a.qn, tools, turn == 1 ? NULL : last, &tools_why);
		if (r)
			return r;
	}

	/* "the first 100 powers of two": computed in the REPL, in one turn,
	 * once the question is known (a question at the context's end is
	 * after step 1), before any chunk is asked; again after an error or
	 * a restart (a compute turn has no step: prev is 0 after it) */
	if (!a.later && !a.schema && prev <= 1) {
		buf_init(&b, 0);
		buf_puts(&b, "The question asks for terms of a sequence, which I can compute in the "
			     "REPL: there is nothing to look up in the context.\n\n```repl\n");
		if (sim__compute_code(&b, a.q, a.qn)) {
			buf_puts(&b, "```\n");
			return buf_detach(&b, NULL);
		}
		buf_release(&b);
	}

	/* explore=N: N turns reading pieces between step 1 and step 2 */
	if (cfg->explore > 0 && last != seg && !notice(last, "REPL was restarted") &&
	    !notice(last, "variables are gone") &&
	    ((prev == 1 && !notice(last, NULL)) || explored > 0)) {
		if (explored < cfg->explore) {
			buf_init(&b, 0);
			buf_puts(&b, "I will read one more piece of the context before I search it."
				     "\n\n```repl\n");
			explore_step(&b, explored + 1, cfg->explore);
			buf_puts(&b, "```\n");
			return buf_detach(&b, NULL);
		}
		prev = 1; /* read enough: on to step 2 */
	}
	if (last != seg &&
	    (notice(last, "REPL was restarted") || notice(last, "variables are gone"))) {
		step = 2;
		why = "The REPL was restarted and my variables are gone, so I will ask the chunks "
		      "again.";
	} else if (prev && last != seg && notice(last, NULL)) {
		step = prev;
		if (prev == 3 && lost_step2(last))
			step = 2;
		why = step == prev ? "That raised an error; here is the same step again, fixed."
				   : "The answers of the chunks are gone, so I will ask again.";
	} else if (prev >= 3) {
		step = 3;
		why = "The session did not end, so I will set the answer again.";
	} else {
		step = prev + 1;
		if (step == 1 && a.later && a.index == SIM__INDEX_REUSE)
			step = 2; /* the context was looked at, and indexed */
		why = step == 1	  ? "First I will look at the context: its type, its size and a "
				    "short sample."
		      : step == 3 ? (a.how_many ? "I will add up the counts and finish."
				     : a.by_doc ? "I will name the document the chunks pointed to "
						  "and finish."
				     : a.all	? "I will gather every answer the chunks found and "
						  "finish."
						: "I will combine what the chunks found and finish.")
		      : a.nkeys	  ? (a.how_many ? "Now I will search for the term the question is "
						  "about and have the lines that hold it counted "
						  "with llm_query_batched."
						: "Now I will search for the term the question is "
						  "about and ask about the lines that hold it with "
						  "llm_query_batched.")
		      : a.how_many ? "Now I will cut the context into chunks and have each one "
				     "counted with llm_query_batched."
				   : "Now I will cut the context into chunks and ask each one the "
				     "question with llm_query_batched.";
		if (step == 2 && (a.index == SIM__INDEX_BUILD || a.index == SIM__INDEX_KEEP))
			why = a.nkeys ? "Now I will index the words of the context, which the later "
					"questions of this session can reuse, look the terms of the "
					"question up in it and ask about the lines that hold them "
					"with llm_query_batched."
				      : "Now I will index the words of the context for the later "
					"questions of this session, then cut the context into chunks "
					"and ask each one the question with llm_query_batched.";
		else if (step == 2 && a.index == SIM__INDEX_REUSE && a.nkeys)
			why = "The REPL still has the index I built, so I will look the terms of "
			      "the question up in it and ask about the lines that hold them with "
			      "llm_query_batched.";
		if (step == 1 && tools_why)
			why = tools_why; /* the tools did not answer: say why */
	}

	size = cfg->chunk_chars > 0 ? cfg->chunk_chars : stated_chunk(first);
	if (size <= 0)
		size = stated_chunk(system);
	if (size <= 0)
		size = CHUNK_DEFAULT;
	buf_init(&b, 0);
	buf_printf(&b, "%s\n\n```repl\n", why);
	switch (step) {
	case 1:
		step1(&b, draw_bug(cfg, a.q, a.qn, turn), at_end);
		break;
	case 2:
		step2(&b, &a, size, can_recurse(system) ? cfg->rlm_chunks : 0,
		      draw_bug(cfg, a.q, a.qn, turn));
		break;
	default:
		step3(&b, &a, draw_bug(cfg, a.q, a.qn, turn));
		break;
	}
	buf_puts(&b, "```\n");
	return buf_detach(&b, NULL);
}
