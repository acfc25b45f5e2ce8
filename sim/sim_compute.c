/* SPDX-License-Identifier: MIT */
/* sim/sim_compute.c -- the simulated root model's one piece of arithmetic:
 * a question that asks for the first N terms of a sequence it can name
 * ("Print me the first 100 powers of two, each on a newline.", "List the
 * first 12 prime numbers", "the first twenty squares") is answered by code
 * that computes them in the REPL, not by reading the context, which holds
 * nothing to find.
 *
 * DESIGN
 * The sim never sees an expected answer: it reads the question's words
 * (a count in digits or words up to a million, then the sequence's name:
 * powers of K, multiples of K, squares, cubes, primes, Fibonacci, even,
 * odd, natural or triangular numbers) and writes the Python that makes
 * the terms, as a model would; the worker computes them. A question it
 * cannot read this way is not its business: the usual steps answer it. */
#include "sim_int.h"
#include "../common/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TERMS 100000

static const char *const small[] = {
    "zero",    "one",	  "two",     "three",	  "four",      "five",	  "six",
    "seven",   "eight",	  "nine",    "ten",	  "eleven",    "twelve",  "thirteen",
    "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
/* twenty on, by tens; "forty-two" is one of them and one of small */
static const char *const tens[] = {"twenty", "thirty", "forty",	 "fifty",
				   "sixty",  "seventy", "eighty", "ninety"};
static const struct {
	const char *word;
	long v;
} scales[] = {{"hundred", 100}, {"thousand", 1000}, {"million", 1000000}};

/* The next word of s[*i..n) (letters, digits, inner '-' and ','),
 * lower-cased into w; its length, 0 at the end. */
static size_t next_word(const char *s, size_t n, size_t *i, char *w, size_t cap)
{
	size_t k = 0;
	while (*i < n && !isalnum((unsigned char)s[*i]))
		(*i)++;
	while (*i < n && (isalnum((unsigned char)s[*i]) ||
			  ((s[*i] == '-' || s[*i] == ',') && *i + 1 < n &&
			   isalnum((unsigned char)s[*i + 1]) && k))) {
		if (k + 1 < cap && s[*i] != ',')
			w[k++] = (char)tolower((unsigned char)s[*i]);
		(*i)++;
	}
	w[k] = '\0';
	return k;
}

/* w as a number: digits, or a number word ("twelve", "forty-two",
 * "hundred", "thousand", "million"); -1 when it is none. */
static long word_num(const char *w)
{
	char *end;
	long v;
	if (isdigit((unsigned char)w[0])) {
		v = strtol(w, &end, 10);
		return *end || v < 0 ? -1 : v;
	}
	for (size_t i = 0; i < ARRAY_SIZE(small); i++)
		if (strcmp(w, small[i]) == 0)
			return (long)i;
	for (size_t i = 0; i < ARRAY_SIZE(tens); i++) {
		size_t len = strlen(tens[i]);
		if (strncmp(w, tens[i], len) != 0)
			continue;
		if (!w[len])
			return 20 + 10 * (long)i;
		if (w[len] == '-')
			for (size_t k = 1; k < 10; k++)
				if (strcmp(w + len + 1, small[k]) == 0)
					return 20 + 10 * (long)i + (long)k;
	}
	for (size_t i = 0; i < ARRAY_SIZE(scales); i++)
		if (strcmp(w, scales[i].word) == 0)
			return scales[i].v;
	return -1;
}

/* The sequences, by the words that name them: what follows the count.
 * An adjective ("prime", "even") names one only before "numbers",
 * "integers" or "terms": "the first two prime suspects" is no sequence. */
enum seq { SEQ_NONE, SEQ_POWERS, SEQ_MULTIPLES, SEQ_SQUARES, SEQ_CUBES, SEQ_PRIMES, SEQ_FIB,
	   SEQ_EVEN, SEQ_ODD, SEQ_NATURAL, SEQ_TRIANGULAR };

static enum seq seq_of(const char *w, const char *next)
{
	static const struct {
		const char *word;
		enum seq seq;
		bool adjective;
	} names[] = {
	    {"powers", SEQ_POWERS, false},	   {"multiples", SEQ_MULTIPLES, false},
	    {"squares", SEQ_SQUARES, false},	   {"square", SEQ_SQUARES, true},
	    {"cubes", SEQ_CUBES, false},	   {"cube", SEQ_CUBES, true},
	    {"primes", SEQ_PRIMES, false},	   {"prime", SEQ_PRIMES, true},
	    {"fibonacci", SEQ_FIB, true},	   {"even", SEQ_EVEN, true},
	    {"odd", SEQ_ODD, true},		   {"natural", SEQ_NATURAL, true},
	    {"positive", SEQ_NATURAL, true},	   {"triangular", SEQ_TRIANGULAR, true},
	    {"integers", SEQ_NATURAL, false},
	};
	bool noun = strcmp(next, "numbers") == 0 || strcmp(next, "integers") == 0 ||
		    strcmp(next, "terms") == 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(w, names[i].word) == 0)
			return !names[i].adjective || noun ? names[i].seq : SEQ_NONE;
	return SEQ_NONE;
}

bool sim__compute_code(struct buf *b, const char *q, size_t qn)
{
	char w[32], w2[32];
	size_t i = 0, at;
	long count = -1, base = 0, m;
	enum seq seq = SEQ_NONE;
	bool lines;
	/* "first", the count (a number word may be two: "one hundred"), the
	 * sequence's name */
	while (next_word(q, qn, &i, w, sizeof(w))) {
		if (strcmp(w, "first") != 0)
			continue;
		at = i;
		if (!next_word(q, qn, &at, w, sizeof(w)) || (count = word_num(w)) <= 0)
			continue;
		i = at;
		if (next_word(q, qn, &at, w2, sizeof(w2)) && (m = word_num(w2)) >= 100 &&
		    count < 100)
			count *= m, i = at;
		if (!next_word(q, qn, &i, w, sizeof(w)))
			return false;
		at = i;
		if (!next_word(q, qn, &at, w2, sizeof(w2)))
			w2[0] = '\0';
		seq = seq_of(w, w2);
		break;
	}
	if (count <= 0 || count > MAX_TERMS || seq == SEQ_NONE)
		return false;
	if (seq == SEQ_POWERS || seq == SEQ_MULTIPLES) {
		/* "of two", "of 3" */
		if (!next_word(q, qn, &i, w, sizeof(w)) || strcmp(w, "of") != 0 ||
		    !next_word(q, qn, &i, w, sizeof(w)) || (base = word_num(w)) < 1)
			return false;
	}
	lines = memmem(q, qn, "newline", 7) || memmem(q, qn, "new line", 8) ||
		memmem(q, qn, "one per line", 12) || memmem(q, qn, "each on a line", 14) ||
		memmem(q, qn, "own line", 8);
	buf_printf(b, "# compute the terms: the context has nothing to look up\nn = %ld\n", count);
	switch (seq) {
	case SEQ_POWERS: buf_printf(b, "terms = [%ld ** i for i in range(n)]\n", base); break;
	case SEQ_MULTIPLES:
		buf_printf(b, "terms = [%ld * i for i in range(1, n + 1)]\n", base);
		break;
	case SEQ_SQUARES: buf_puts(b, "terms = [i * i for i in range(1, n + 1)]\n"); break;
	case SEQ_CUBES: buf_puts(b, "terms = [i ** 3 for i in range(1, n + 1)]\n"); break;
	case SEQ_EVEN: buf_puts(b, "terms = [2 * i for i in range(1, n + 1)]\n"); break;
	case SEQ_ODD: buf_puts(b, "terms = [2 * i - 1 for i in range(1, n + 1)]\n"); break;
	case SEQ_NATURAL: buf_puts(b, "terms = list(range(1, n + 1))\n"); break;
	case SEQ_TRIANGULAR:
		buf_puts(b, "terms = [i * (i + 1) // 2 for i in range(1, n + 1)]\n");
		break;
	case SEQ_PRIMES:
		buf_puts(b, "terms = []\n"
			    "k = 2\n"
			    "while len(terms) < n:\n"
			    "    if all(k % p for p in terms if p * p <= k):\n"
			    "        terms.append(k)\n"
			    "    k += 1\n");
		break;
	case SEQ_FIB:
		buf_puts(b, "terms, a, c = [], 0, 1\n"
			    "for _ in range(n):\n"
			    "    terms.append(a)\n"
			    "    a, c = c, a + c\n");
		break;
	case SEQ_NONE: return false;
	}
	buf_printf(b,
		   "final = %s.join(str(t) for t in terms)\n"
		   "print(len(terms), \"terms, from\", terms[0], \"to\", terms[-1])\n"
		   "answer[\"content\"] = final\n"
		   "answer[\"ready\"] = True\n",
		   lines ? "\"\\n\"" : "\", \"");
	return true;
}
