/* SPDX-License-Identifier: MIT */
/* tool/rank.c -- the lexical ranking of tools against a query that
 * search_tools() answers with: no model call, the same answer every time.
 *
 * DESIGN: words, not substrings. The query, the tool's name and its
 * description are cut into words (on anything not a letter or digit, and
 * where a lower-case letter meets an upper-case one, so "readFile" and
 * "read_file" and "read-file" are the same two words), lower-cased, with
 * stop words dropped and plurals folded ("numbers" -> "number", "entries"
 * -> "entry"). Each distinct query word scores by where it is found, once
 * in the name (3) and once in the description (1): a description that
 * repeats a word is not better for it. A word that is a prefix of another
 * (the shorter of 4+ letters: "echo" and "echoes", "compress" and
 * "compression") counts half. A tool that matches every query word gets a
 * bonus, so "add two numbers" prefers the tool that has both "two" and
 * "number" to one that says "number" twice. And a tool whose own name
 * (after "SERVER.") the query covers is preferred to one whose name says
 * more, so "list directory" finds list_directory before
 * list_allowed_directories. Work is bounded: at most
 * RANK_WORDS words of each text are read. */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

#define RANK_WORDS 256 /* words read from a query, a name or a description */
#define WORD_MAX   48  /* bytes of a word (longer ones are cut) */

#define W_NAME	3.0
#define W_DESC	1.0
#define W_ALL	2.0 /* every query word matched */
#define W_COVER 2.0 /* times the share of the tool's own name matched */

struct words {
	char w[RANK_WORDS][WORD_MAX + 1];
	size_t n;
};

/* Common English words that say nothing about what a tool does. Sorted. */
static const char *const stop_words[] = {
    "a",     "about",  "all",	 "an",	  "and",  "any",  "are",  "as",	   "at",   "be",
    "by",    "can",    "could",	 "do",	  "does", "for",  "from", "give",  "how",  "i",
    "in",    "into",   "is",	 "it",	  "its",  "me",	  "my",	  "of",	   "on",   "or",
    "our",   "please", "should", "so",	  "some", "that", "the",  "their", "them", "then",
    "there", "these",  "this",	 "those", "to",	  "us",	  "via",  "want",  "was",  "we",
    "what",  "when",   "where",	 "which", "who",  "will", "with", "would", "you",  "your",
};

static bool is_stop(const char *w)
{
	size_t lo = 0, hi = ARRAY_SIZE(stop_words);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(w, stop_words[mid]);
		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

/* Fold a plural: "entries" -> "entry", "boxes" -> "box", "numbers" ->
 * "number"; "status", "class", "this" stay. */
static void fold_plural(char *w)
{
	size_t n = strlen(w);
	if (n > 4 && strcmp(w + n - 3, "ies") == 0) {
		strcpy(w + n - 3, "y");
		return;
	}
	if (n > 4 && (strcmp(w + n - 4, "sses") == 0 || strcmp(w + n - 4, "ches") == 0 ||
		      strcmp(w + n - 4, "shes") == 0 || strcmp(w + n - 3, "xes") == 0)) {
		w[n - 2] = '\0';
		return;
	}
	if (n > 3 && w[n - 1] == 's' && w[n - 2] != 's' && w[n - 2] != 'u' && w[n - 2] != 'i')
		w[n - 1] = '\0';
}

/* Is byte c part of a word? Letters, digits and every byte of a non-ASCII
 * UTF-8 character (so "größe" is one word). */
static bool word_byte(unsigned char c)
{
	return text_is_alnum(c) || c >= 0x80;
}

static bool has_word(const struct words *ws, const char *w)
{
	for (size_t i = 0; i < ws->n; i++)
		if (strcmp(ws->w[i], w) == 0)
			return true;
	return false;
}

/* Cut s into words (see DESIGN); distinct words only when uniq. */
static void split(const char *s, struct words *ws, bool uniq)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	ws->n = 0;
	while (*p && ws->n < RANK_WORDS) {
		char w[WORD_MAX + 1];
		size_t n = 0;
		while (*p && !word_byte(*p))
			p++;
		if (!*p)
			break;
		while (word_byte(*p)) {
			if (n < WORD_MAX)
				w[n++] = (char)text_to_lower(*p);
			/* a camelCase boundary ends the word */
			if (p[1] >= 'A' && p[1] <= 'Z' && *p >= 'a' && *p <= 'z') {
				p++;
				break;
			}
			p++;
		}
		w[n] = '\0';
		if (is_stop(w))
			continue;
		fold_plural(w);
		if (uniq && has_word(ws, w))
			continue;
		memcpy(ws->w[ws->n++], w, n + 1);
	}
}

/* Is a a prefix of b or b of a, the shorter of 4+ letters? */
static bool prefix_match(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), n = RLM_MIN(na, nb);
	return n >= 4 && na != nb && strncmp(a, b, n) == 0;
}

/* 1 when w is one of the words, 0.5 when it is a prefix of one or has
 * one as its prefix, else 0. */
static double match(const struct words *ws, const char *w)
{
	double best = 0;
	for (size_t i = 0; i < ws->n; i++) {
		if (strcmp(ws->w[i], w) == 0)
			return 1;
		if (prefix_match(ws->w[i], w))
			best = 0.5;
	}
	return best;
}

double tool_rank(const char *query, const char *name, const char *description)
{
	/* Three word lists of about 12 KiB each: on the heap, as this runs
	 * on callers' threads with whatever stack they have. */
	struct words *q = xmalloc(sizeof(*q)), *nw = xmalloc(sizeof(*nw)),
		     *dw = xmalloc(sizeof(*dw));
	double score = 0;
	size_t matched = 0;
	split(query, q, true);
	split(name, nw, true);
	split(description, dw, true);
	for (size_t i = 0; i < q->n; i++) {
		double m = W_NAME * match(nw, q->w[i]) + W_DESC * match(dw, q->w[i]);
		score += m;
		matched += m > 0;
	}
	if (q->n > 0 && matched == q->n)
		score += W_ALL;
	if (score > 0) {
		/* the tool's own name: what follows "SERVER." */
		const char *dot = name ? strchr(name, '.') : NULL;
		double covered = 0;
		split(dot ? dot + 1 : name, nw, true);
		for (size_t i = 0; i < nw->n; i++)
			covered += match(q, nw->w[i]);
		if (nw->n)
			score += W_COVER * covered / (double)nw->n;
	}
	free(q);
	free(nw);
	free(dw);
	return score;
}
