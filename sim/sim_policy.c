/* SPDX-License-Identifier: MIT */
/* sim/sim_policy.c -- the simulator's answering policy: question and
 * material from a prompt, the best matching sentence (or window), counts
 * for "how many" questions, every best sentence for "all" questions, one
 * per key for a list of keys, and the combination of partial answers.
 *
 * DESIGN
 * The policy works on terms: lower-cased runs of letters and digits (a
 * non-ASCII letter counts as one) with inner '-', '_' or '.' kept, so that
 * "harmonious-uniform" and "3.14" are single terms; a plural 's' is
 * stripped and a word of small letters cut to a stem (norm_term), the
 * same on both sides. A compound question term is also held in part (at
 * half weight) by a unit holding one of its parts, and a question term by
 * a compound of the text it is a part of. A question term weighs
 * log(1 + units / (1 + df)) over the material's units, so rare terms
 * weigh more and a term the material lacks weighs most. Units are
 * sentences (next_unit), so a needle at the end of a 50 KB paragraph is
 * found and answered alone, and pieces of a run-on sentence answer with
 * a window centred on their match (answer_unit).
 *
 * Which unit may answer is the question's keys' call (question_keys):
 * names (a capital not at a sentence's start), numbers, identifiers; a
 * question with none falls back on half its weight. Words such as "date"
 * or "released" only rank the units, so "On what date was Node.js 20.0.0
 * released?" finds "Node.js 20.0.0 — 2023-04-18". A list of items ("A, B
 * and C") makes each item a key of its own: each gets its best unit.
 *
 * One pass tokenizes the material: it counts document frequencies, counts
 * the lines with a unit holding every term (for "how many"), and keeps the
 * first unit of each distinct set of question terms met (as 64 bits: the
 * first 32 terms held whole, and held in part). Units with the same set
 * score the same, so the best unit is found among those sets once the
 * weights are known. Memory is the question's terms, the sets (at most
 * SETS_MAX) and one bit per unit; only a question of more than 32 terms,
 * or material with more than SETS_MAX distinct sets, needs a second pass
 * over the flagged units.
 *
 * A question that asks for "all" of something (RULER's multi-value NIAH:
 * "What are all the special magic numbers for KEY ...?") wants every
 * line that scores as well as the best one, not just the first: a second
 * pass over the flagged lines lists them, distinct, one per line. Lines
 * that match less well (a needle with another key, which holds "special
 * magic numbers" but not KEY) stay out, in the leaf and in the combiner,
 * which scores the lines of the partial answers, not the answers whole. */
#include "sim_int.h"
#include "../common/text.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TERM_MAX   SIM__TERM_MAX /* bytes of a term kept; longer ones cut alike everywhere */
#define QTERMS_MAX 1024 /* distinct question terms considered */
#define ANSWER_MAX 1000 /* bytes of an extracted answer */
#define LIST_MAX   4000 /* bytes of an answer that lists every match ("all") */

/* ---- terms ---- */

/* Byte classes: 1 an ASCII letter or digit, 2 a lead byte that may start a
 * non-ASCII letter, 0 anything else. Built once, with the stopwords. */
static unsigned char byte_class[256];
static unsigned char byte_lower[256];

/* Punctuation, symbols, spaces and emoji outside ASCII: not letters. */
static bool punct_cp(uint32_t cp)
{
	return cp < 0xc0 || cp == 0xd7 || cp == 0xf7 || (cp >= 0x2000 && cp <= 0x2bff) ||
	       (cp >= 0x2e00 && cp <= 0x2e7f) || (cp >= 0x3000 && cp <= 0x303f) ||
	       (cp >= 0xfe10 && cp <= 0xfe1f) || (cp >= 0xfe30 && cp <= 0xfe6f) ||
	       (cp >= 0xff00 && cp <= 0xff0f) || (cp >= 0xff1a && cp <= 0xff20) ||
	       (cp >= 0xff3b && cp <= 0xff40) || (cp >= 0xff5b && cp <= 0xff65) || cp >= 0xfff0 ||
	       (cp >= 0x1f000 && cp <= 0x1faff);
}

/* Bytes of the non-ASCII letter at s[0..n) (a well-formed code point that
 * is not punctuation), or 0. */
static size_t wide_char(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t k = text_utf8_decode((const char *)s, n, &cp);
	return k > 1 && !punct_cp(cp) ? k : 0;
}

/* Bytes of the word character at s[0..n), 0 if there is none. */
static inline size_t word_char(const unsigned char *s, size_t n)
{
	unsigned c = byte_class[s[0]];
	return c < 2 ? c : wide_char(s, n);
}

/* What a term is made of (next_term_at's *shape). */
#define SHAPE_JOIN  1u /* an inner '-', '_' or '.' */
#define SHAPE_DOT   2u /* an inner '.' */
#define SHAPE_DIGIT 4u
#define SHAPE_WIDE  8u /* a non-ASCII letter */

/* The next term of text[*pos..len), lower-cased into out (at most TERM_MAX
 * bytes, whole characters); returns its length, 0 at the end. *start (may
 * be NULL) gets the offset where it begins, *shape (may be NULL) what it
 * is made of (SHAPE_*). */
static size_t next_term_shape(const char *text, size_t len, size_t *pos, char *out, size_t *start,
			      unsigned *shape)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = *pos, n = 0, k = 0;
	unsigned sh = 0;
	bool full = false;
	for (; i < len; i++) {
		unsigned c = byte_class[s[i]];
		if (c == 1) {
			k = 1;
			break;
		}
		if (c == 2 && (k = wide_char(s + i, len - i)))
			break;
	}
	if (i >= len) {
		*pos = len;
		return 0;
	}
	if (start)
		*start = i;
	for (;;) {
		if (k == 1) {
			do {
				if (!full && n < TERM_MAX)
					out[n++] = (char)byte_lower[s[i]];
				else
					full = true;
				if ((unsigned)(s[i] - '0') < 10)
					sh |= SHAPE_DIGIT;
				i++;
			} while (i < len && byte_class[s[i]] == 1);
		} else {
			if (!full && n + k <= TERM_MAX)
				memcpy(out + n, s + i, k), n += k;
			else
				full = true;
			sh |= SHAPE_WIDE;
			i += k;
		}
		if (i >= len)
			break;
		if ((s[i] == '-' || s[i] == '_' || s[i] == '.') && i + 1 < len &&
		    (k = word_char(s + i + 1, len - i - 1))) {
			if (!full && n + 1 + k <= TERM_MAX)
				out[n++] = (char)s[i];
			else
				full = true;
			sh |= s[i] == '.' ? SHAPE_JOIN | SHAPE_DOT : SHAPE_JOIN;
			i++;
			continue;
		}
		if (!(k = word_char(s + i, len - i)))
			break;
	}
	*pos = i;
	if (shape)
		*shape = sh;
	return n;
}

static size_t next_term_at(const char *text, size_t len, size_t *pos, char *out, size_t *start)
{
	return next_term_shape(text, len, pos, out, start, NULL);
}

static size_t next_term(const char *text, size_t len, size_t *pos, char *out)
{
	return next_term_shape(text, len, pos, out, NULL, NULL);
}

/* Strip a plural ending: numbers -> number, studies -> study,
 * matches -> match; "class", "bus", "this" stay. */
static size_t strip_plural(char *t, size_t n)
{
	if (n < 4 || t[n - 1] != 's' || t[n - 2] < 'a' || t[n - 2] > 'z')
		return n;
	if (n > 4 && t[n - 2] == 'e' && t[n - 3] == 'i') {
		t[n - 3] = 'y';
		return n - 2;
	}
	if (t[n - 2] == 'e' &&
	    (t[n - 3] == 'x' || (t[n - 3] == 'h' && (t[n - 4] == 'c' || t[n - 4] == 's')) ||
	     (t[n - 3] == 's' && t[n - 4] == 's')))
		return n - 2;
	if (t[n - 2] == 's' || t[n - 2] == 'u' || t[n - 2] == 'i')
		return n;
	return n - 1;
}

/* A term as matching compares it: a plural stripped, and a word of small
 * letters cut to a stem, the same on both sides (released, releases,
 * release, releasing -> releas; dated, date -> dat), so inflections do
 * not sink a match; "v20.0.0" is "20.0.0". Terms with digits or inner
 * '-', '_', '.' are identifiers and kept whole. */
static size_t norm_shaped(char *t, size_t n, unsigned shape)
{
	if ((shape & SHAPE_DIGIT) && (shape & SHAPE_DOT) && n > 2 && t[0] == 'v' && t[1] >= '0' &&
	    t[1] <= '9') {
		size_t i;
		for (i = 2; i < n && t[i] != '.'; i++)
			;
		if (i < n) {
			memmove(t, t + 1, n - 1);
			return n - 1;
		}
	}
	if (shape & (SHAPE_DOT | SHAPE_DIGIT))
		return n; /* node.js, 20.0.0, item-5521 */
	n = strip_plural(t, n);
	if ((shape & (SHAPE_JOIN | SHAPE_WIDE)) || n < 4)
		return n;
	if (n >= 6 && !memcmp(t + n - 3, "ing", 3))
		n -= 3;
	else if (n >= 5 && !memcmp(t + n - 2, "ed", 2))
		n -= 2;
	if (n >= 4 && t[n - 1] == 'e')
		n--;
	return n;
}

static size_t norm_term(char *t, size_t n)
{
	unsigned shape = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c >= '0' && c <= '9')
			shape |= SHAPE_DIGIT;
		else if (c == '.' && i && i + 1 < n)
			shape |= SHAPE_JOIN | SHAPE_DOT;
		else if ((c == '-' || c == '_') && i && i + 1 < n)
			shape |= SHAPE_JOIN;
		else if (c >= 0x80 || c < 'a' || c > 'z')
			shape |= SHAPE_WIDE;
	}
	return norm_shaped(t, n, shape);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

/* An open-addressing set of terms; slots hold index + 1, 0 when empty. */
struct termset {
	char *chars; /* the terms back to back */
	size_t chars_len, chars_cap;
	uint32_t *off; /* term i is chars[off[i]..off[i]+len[i]) */
	uint8_t *len;
	uint64_t *hash;
	size_t n, cap;
	uint32_t *slot;
	size_t mask;	  /* slots - 1 */
	uint64_t lens[2]; /* bit n: some term is n bytes long (n < 128) */
};

static void termset_init(struct termset *t)
{
	memset(t, 0, sizeof(*t));
	t->mask = 15;
	t->slot = xcalloc(t->mask + 1, sizeof(*t->slot));
}

static void termset_release(struct termset *t)
{
	free(t->chars);
	free(t->off);
	free(t->len);
	free(t->hash);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* Index of the term s[0..n) with hash h, or -1. */
static long termset_find(const struct termset *t, const char *s, size_t n, uint64_t h)
{
	for (size_t i = h & t->mask; t->slot[i]; i = (i + 1) & t->mask) {
		uint32_t k = t->slot[i] - 1;
		if (t->hash[k] == h && t->len[k] == n && memcmp(t->chars + t->off[k], s, n) == 0)
			return k;
	}
	return -1;
}

static void termset_add(struct termset *t, const char *s, size_t n)
{
	uint64_t h = hash_bytes(s, n);
	size_t i;
	if (termset_find(t, s, n, h) >= 0)
		return;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->off = xrealloc(t->off, t->cap * sizeof(*t->off));
		t->len = xrealloc(t->len, t->cap * sizeof(*t->len));
		t->hash = xrealloc(t->hash, t->cap * sizeof(*t->hash));
	}
	if (t->chars_len + n > t->chars_cap) {
		t->chars_cap = (t->chars_len + n) * 2 + 64;
		t->chars = xrealloc(t->chars, t->chars_cap);
	}
	memcpy(t->chars + t->chars_len, s, n);
	t->off[t->n] = (uint32_t)t->chars_len;
	t->len[t->n] = (uint8_t)n;
	t->hash[t->n] = h;
	t->chars_len += n;
	t->lens[n / 64] |= 1ULL << (n % 64);
	t->n++;
	if (t->n * 2 > t->mask + 1) {
		free(t->slot);
		t->mask = t->mask * 2 + 1;
		t->slot = xcalloc(t->mask + 1, sizeof(*t->slot));
		for (size_t k = 0; k < t->n; k++) {
			for (i = t->hash[k] & t->mask; t->slot[i]; i = (i + 1) & t->mask)
				;
			t->slot[i] = (uint32_t)k + 1;
		}
		return;
	}
	for (i = h & t->mask; t->slot[i]; i = (i + 1) & t->mask)
		;
	t->slot[i] = (uint32_t)t->n;
}

/* English function words and the boilerplate of questions about a text. */
/* clang-format off */
static const char *const stopwords[] = {
	"a", "about", "above", "according", "after", "again", "against", "all", "also", "am",
	"an", "and", "any", "anything", "appear", "appeared", "appearing", "appears", "are",
	"as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
	"but", "by", "called", "can", "contain", "contained", "containing", "contains",
	"context", "contexts", "could", "did", "do", "document", "documents", "does", "doing",
	"done", "down", "during", "each", "either", "exactly", "few", "find", "following",
	"for", "from", "further", "get", "given", "give", "had", "has", "have", "having", "he",
	"her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
	"into", "is", "it", "its", "itself", "just", "let", "line", "lines", "many", "me",
	"mention", "mentioned", "mentioning", "mentions", "more", "most", "much", "my",
	"myself", "no", "nor", "not", "now", "occur", "occurs", "of", "off", "on", "once",
	"only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "paragraph",
	"paragraphs", "passage", "passages", "phrase", "phrases", "please", "provided",
	"question", "questions", "answer", "answers", "same", "say", "said", "says",
	"sentence", "sentences", "she", "should", "so", "some", "such", "tell", "text",
	"texts", "than", "that", "the", "their", "theirs", "them", "themselves", "then",
	"there", "these", "they", "this", "those", "through", "time", "times", "to", "too",
	"total", "under", "until", "up", "us", "very", "was", "we", "were", "what", "when",
	"where", "which", "while", "who", "whom", "whose", "why", "will", "with", "word",
	"words", "would", "you", "your", "yours", "yourself", "yourselves",
};
/* clang-format on */

static struct termset stopset;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
	for (unsigned c = 0; c < 256; c++) {
		byte_class[c] = text_is_alnum((int)c) ? 1 : c >= 0xc2 && c <= 0xf4 ? 2 : 0;
		byte_lower[c] = (unsigned char)text_to_lower((int)c);
	}
	termset_init(&stopset);
	for (size_t i = 0; i < ARRAY_SIZE(stopwords); i++)
		termset_add(&stopset, stopwords[i], strlen(stopwords[i]));
}

static bool is_stopword(const char *t, size_t n)
{
	return termset_find(&stopset, t, n, hash_bytes(t, n)) >= 0;
}

size_t sim__next_term(const char *s, size_t n, size_t *pos, char *out, size_t *start)
{
	pthread_once(&tables_once, tables_build);
	return next_term_at(s, n, pos, out, start);
}

size_t sim__norm_term(char *t, size_t n)
{
	return norm_term(t, n);
}

bool sim__is_stopword(const char *t, size_t n)
{
	pthread_once(&tables_once, tables_build);
	return is_stopword(t, n);
}

/* The content terms of a question. */
static bool doc_noun(const char *t, size_t n, bool *plural);

/* The content terms of a question; which: without the kinds of document
 * (doc_noun). */
static void question_terms(const char *q, size_t len, bool which, struct termset *out)
{
	char t[TERM_MAX];
	size_t pos = 0, n;
	termset_init(out);
	while (out->n < QTERMS_MAX && (n = next_term(q, len, &pos, t)))
		if (!is_stopword(t, n) && !(which && doc_noun(t, n, NULL)))
			termset_add(out, t, norm_term(t, n));
}

/* ---- text helpers ---- */

/* The next line of s[*pos..end): its start and length, without "\n" or
 * "\r\n"; false at the end. */
static bool next_line(const char *s, size_t end, size_t *pos, size_t *start, size_t *n)
{
	const char *nl;
	if (*pos >= end)
		return false;
	*start = *pos;
	nl = memchr(s + *pos, '\n', end - *pos);
	*n = (nl ? (size_t)(nl - s) : end) - *start;
	*pos = nl ? (size_t)(nl - s) + 1 : end;
	if (*n && s[*start + *n - 1] == '\r')
		(*n)--;
	return true;
}

/* Offset just past `marker` when the line s[0..n) starts with it after
 * blanks, else 0. */
static size_t after_marker(const char *s, size_t n, const char *marker)
{
	size_t i = 0, m = strlen(marker);
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return n - i >= m && memcmp(s + i, marker, m) == 0 ? i + m : 0;
}

static bool contains_ci(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i + m <= n; i++)
		if (strncasecmp(s + i, needle, m) == 0)
			return true;
	return false;
}

static char *answer_dup(const char *s, size_t n)
{
	text_trim(&s, &n);
	if (n > ANSWER_MAX)
		n = text_utf8_floor(s, ANSWER_MAX);
	return xstrndup(s, n);
}

static bool ascii_word_char(char c)
{
	return text_is_alnum(c) || c == '-' || c == '_';
}

bool sim_asks_all(const char *q, size_t n)
{
	if (!q || contains_ci(q, n, "how many"))
		return false;
	for (size_t i = 0; i + 3 <= n; i++)
		if (strncasecmp(q + i, "all", 3) == 0 && (i == 0 || !ascii_word_char(q[i - 1])) &&
		    (i + 3 == n || !ascii_word_char(q[i + 3])))
			return true;
	return false;
}

/* Add the line s[0..n), trimmed and cut like an answer, to the list b
 * unless it is there already or would take b past LIST_MAX. */
static void list_add(struct buf *b, const char *s, size_t n)
{
	const char *p = b->p, *end = b->p + b->len;
	text_trim(&s, &n);
	if (n > ANSWER_MAX)
		n = text_utf8_floor(s, ANSWER_MAX);
	if (!n || b->len + 1 + n > LIST_MAX)
		return;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = (size_t)((nl ? nl : end) - p);
		if (k == n && memcmp(p, s, n) == 0)
			return;
		p = nl ? nl + 1 : end;
	}
	if (b->len)
		buf_putc(b, '\n');
	buf_append(b, s, n);
}

/* ---- which document: the question, its keys, the [doc: ID] headers ---- */

/* The kinds of document a question may ask for, as terms (a plural
 * stripped): "Which header ...", "In which record ...". */
static const char *const doc_nouns[] = {
    "file",    "document", "doc",    "header", "record", "source", "page",   "report",
    "article", "entry",	   "module", "paper",  "email",	 "ticket", "row",    "chapter",
    "post",    "note",	   "memo",   "log",    "book",	 "story",  "review", "listing",
};

/* Words that end the search for a noun after "which"/"what": "What does
 * the report say" asks about a report's text, not for its name; "is" and
 * "are" do past the first word ("what is the document", "which are all
 * the files"; not "which team is the report about"). */
static const char *const which_stops[] = {
    "does", "do", "did", "can", "could", "would", "should", "will", "was", "were", "is", "are",
};

static bool word_in(const char *w, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
			return true;
	return false;
}

/* Whether the lower-cased term t[0..n) names a kind of document; *plural
 * whether it was a plural ("files", "entries"). */
static bool doc_noun(const char *t, size_t n, bool *plural)
{
	char w[TERM_MAX];
	size_t k;
	if (!n || n > sizeof(w))
		return false;
	memcpy(w, t, n);
	k = strip_plural(w, n);
	if (k == n && n == 4 && w[3] == 's') /* "docs", "logs": too short to strip */
		k = n - 1;
	if (!word_in(w, k, doc_nouns, ARRAY_SIZE(doc_nouns)))
		return false;
	if (plural)
		*plural = k != n;
	return true;
}

/* The next ASCII word of s[*pos..n), lower-cased into w (cut at cap). */
static size_t next_word(const char *s, size_t n, size_t *pos, char *w, size_t cap)
{
	size_t i = *pos, k = 0;
	while (i < n && !text_is_alnum(s[i]))
		i++;
	for (; i < n && (text_is_alnum(s[i]) || s[i] == '_'); i++)
		if (k < cap)
			w[k++] = (char)text_to_lower(s[i]);
	*pos = i;
	return k;
}

bool sim_asks_which_doc(const char *q, size_t n, bool *plural)
{
	char w[TERM_MAX];
	size_t pos = 0, k;
	bool pl = false, found = false, where = false, defined = false;
	if (plural)
		*plural = false;
	if (!q || contains_ci(q, n, "how many"))
		return false;
	while (!found && (k = next_word(q, n, &pos, w, sizeof(w)))) {
		if (k == 5 && memcmp(w, "where", 5) == 0)
			where = true;
		if ((k == 7 && (memcmp(w, "defined", 7) == 0 || memcmp(w, "declared", 7) == 0)) ||
		    (k == 8 && memcmp(w, "declared", 8) == 0) ||
		    (k == 11 && memcmp(w, "implemented", 11) == 0))
			defined = true;
		if (!((k == 5 && memcmp(w, "which", 5) == 0) ||
		      (k == 4 && memcmp(w, "what", 4) == 0)))
			continue;
		/* the noun within the next four words: "which header", "which
		 * C header", "which of the files", "what is the document" */
		for (size_t j = 0, at = pos, m; j < 4 && (m = next_word(q, n, &at, w, sizeof(w)));
		     j++) {
			if (doc_noun(w, m, &pl)) {
				found = true;
				break;
			}
			if (word_in(w, m, which_stops, ARRAY_SIZE(which_stops) - (j ? 0 : 2)))
				break;
		}
	}
	if (!found && where && defined)
		found = true;
	if (plural)
		*plural = found && (pl || sim_asks_all(q, n));
	return found;
}

/* Whether the token t[0..n) of a question is a key worth searching for:
 * at least 4 bytes, and an identifier's shape (an underscore, a digit
 * with a letter, two capitals and no small letter, or a small letter
 * then a capital: snake_case, item-5521, EPOLLEXCLUSIVE, camelCase). */
static bool key_token(const char *t, size_t n)
{
	size_t upper = 0, lower = 0, digit = 0, under = 0;
	bool camel = false;
	if (n < 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c >= 'A' && c <= 'Z') {
			upper++;
			camel = camel || (i && t[i - 1] >= 'a' && t[i - 1] <= 'z');
		} else if (c >= 'a' && c <= 'z') {
			lower++;
		} else if (c >= '0' && c <= '9') {
			digit++;
		} else if (c == '_') {
			under++;
		}
	}
	return under || (digit && (upper || lower)) || (upper >= 2 && !lower) || camel;
}

bool sim_next_key(const char *q, size_t n, size_t *pos, const char **key, size_t *len, bool *quoted)
{
	size_t i = *pos;
	while (q && i < n) {
		unsigned char c = (unsigned char)q[i];
		/* a phrase in double quotes, straight or curly */
		size_t open = c == '"'						  ? 1
			      : (n - i >= 3 && !memcmp(q + i, "\xe2\x80\x9c", 3)) ? 3
										  : 0;
		if (open) {
			const char *close = open == 1
						? memchr(q + i + 1, '"', n - i - 1)
						: memmem(q + i + 3, n - i - 3, "\xe2\x80\x9d", 3);
			if (close) {
				const char *k = q + i + open;
				size_t kn = (size_t)(close - k);
				i = (size_t)(close - q) + open;
				text_trim(&k, &kn);
				if (kn) {
					*key = k, *len = kn, *quoted = true, *pos = i;
					return true;
				}
				continue;
			}
			i += open;
			continue;
		}
		if (text_is_alnum(c) || c == '_') {
			size_t s = i;
			while (i < n &&
			       (text_is_alnum(q[i]) || q[i] == '_' || q[i] == '-' || q[i] == '.'))
				i++;
			while (i > s && (q[i - 1] == '-' || q[i - 1] == '.'))
				i--;
			if (key_token(q + s, i - s)) {
				*key = q + s, *len = i - s, *quoted = false, *pos = i;
				return true;
			}
			if (i == s)
				i++;
			continue;
		}
		i++;
	}
	*pos = n;
	return false;
}

/* The ID of a line "[doc: ID]" (trimmed), else false. */
static bool doc_header(const char *s, size_t n, const char **id, size_t *idn)
{
	size_t k = after_marker(s, n, "[doc: ");
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (!k || k >= n || s[n - 1] != ']')
		return false;
	*id = s + k;
	*idn = n - 1 - k;
	text_trim(id, idn);
	return *idn > 0;
}

/* ---- the prompt: question, material, partial answers ---- */

struct prompt {
	const char *q; /* the question */
	size_t qlen;
	size_t skip_off; /* the question's lines s[skip_off..skip_end) are */
	size_t skip_end; /* not material */
	size_t mat_off;	 /* material (or partial answers): s[mat_off..len) */
	bool combine;	 /* "Partial answers:" came before any material marker */
	bool which;	 /* the question asks which document: its kind of
			  * document ("header", "record") is no term */
};

static void split_prompt(const char *s, size_t len, struct prompt *p)
{
	size_t pos = 0, ls, n, k;
	size_t q_line = 0, q_at = SIZE_MAX, q_end = 0, qm_at = SIZE_MAX, qm_end = 0,
	       first = SIZE_MAX;
	size_t first_end = 0, mat = SIZE_MAX, pa = SIZE_MAX;
	while (next_line(s, len, &pos, &ls, &n)) {
		const char *l = s + ls;
		size_t tn = n;
		if (q_at == SIZE_MAX && (k = after_marker(l, n, "Question:")))
			q_line = ls, q_at = ls + k, q_end = pos;
		if (mat == SIZE_MAX &&
		    ((k = after_marker(l, n, "Text:")) || (k = after_marker(l, n, "Context:"))))
			mat = ls + k;
		if (pa == SIZE_MAX && (k = after_marker(l, n, "Partial answers:")))
			pa = ls + k;
		text_trim(&l, &tn);
		if (tn && first == SIZE_MAX)
			first = ls, first_end = pos;
		if (tn && l[tn - 1] == '?')
			qm_at = ls, qm_end = pos;
	}
	memset(p, 0, sizeof(*p));
	if (q_at != SIZE_MAX) {
		p->q = s + q_at;
		p->qlen = q_end - q_at;
		p->skip_off = q_line;
		p->skip_end = q_end;
		text_trim(&p->q, &p->qlen);
		/* "Question:" alone on its line: the question is the next line. */
		while (!p->qlen && next_line(s, len, &q_end, &ls, &n)) {
			p->q = s + ls;
			p->qlen = n;
			p->skip_end = q_end;
			text_trim(&p->q, &p->qlen);
		}
	} else if (qm_at != SIZE_MAX || first != SIZE_MAX) {
		p->skip_off = qm_at != SIZE_MAX ? qm_at : first;
		p->skip_end = qm_at != SIZE_MAX ? qm_end : first_end;
		p->q = s + p->skip_off;
		p->qlen = p->skip_end - p->skip_off;
		text_trim(&p->q, &p->qlen);
	} else {
		p->q = s;
	}
	if (pa != SIZE_MAX && (mat == SIZE_MAX || pa < mat)) {
		p->combine = true;
		p->mat_off = pa;
	} else {
		p->mat_off = mat != SIZE_MAX ? mat : 0;
	}
	/* The question's lines are material only when they came before it. */
	if (p->skip_end <= p->mat_off)
		p->skip_off = p->skip_end = 0;
}

/* Scoring state shared by the leaf and the combiner. Terms with ids below
 * 32 also travel as bits: a unit's set is the terms it holds whole (low 32
 * bits) and those it holds only in part (high 32 bits). */
#define ITEMS_MAX 16

struct scorer {
	struct termset q;
	struct termset parts; /* the parts of compound question terms: node, js of node.js */
	uint32_t *part_of;    /* per part: the question term it is a part of */
	uint32_t *part_idx;   /* per part: its place in that term, from 1 */
	uint32_t *nparts;     /* per term: its parts */
	uint32_t *stamp;      /* per term: the unit (line or partial) that last held it */
	uint32_t *pstamp;     /* per term: the unit that last held a part of it */
	uint32_t *df;	      /* per term: units holding it, whole or in part */
	double *w;
	uint32_t keys;		   /* the question's keys (names, numbers, identifiers) as bits */
	uint32_t numbered;	   /* the keys that hold a digit */
	uint32_t frame;		   /* "how many": what is counted and what it did
				    * ("errors", "log" of "How many errors did X
				    * log?"): see frame_terms */
	uint32_t frame_verb;	   /* of which the closing verb ("log") */
	uint32_t items[ITEMS_MAX]; /* "A, B and C": the terms of each item as bits */
	size_t nitems;		   /* >= 2: the question names several keys */
	size_t units;		   /* non-empty lines, or partial answers left */
	size_t whole;		   /* terms the last unit visited held whole */
	uint32_t cur;		   /* stamp of the current unit */
};

static bool has_digit_or_inner(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((t[i] >= '0' && t[i] <= '9') || t[i] == '-' || t[i] == '_' || t[i] == '.')
			return true;
	return false;
}

/* The parts of the compound term t[0..n) (split on '-', '_', '.') of at
 * least 2 bytes, each passed to fn. */
static void each_part(const char *t, size_t n, void (*fn)(void *, const char *, size_t), void *arg)
{
	size_t i = 0, s = 0;
	for (; i <= n; i++) {
		if (i < n && t[i] != '-' && t[i] != '_' && t[i] != '.')
			continue;
		if (i - s >= 2 && (s || i < n))
			fn(arg, t + s, i - s);
		s = i + 1;
	}
}

struct part_add {
	struct scorer *sc;
	uint32_t parent;
};

static void part_add(void *arg, const char *t, size_t n)
{
	struct part_add *a = arg;
	size_t before = a->sc->parts.n;
	char w[TERM_MAX];
	if (is_stopword(t, n))
		return;
	memcpy(w, t, n);
	n = norm_term(w, n);
	termset_add(&a->sc->parts, w, n);
	if (a->sc->parts.n > before) {
		a->sc->part_of = xrealloc(a->sc->part_of, a->sc->parts.n * sizeof(*a->sc->part_of));
		a->sc->part_of[before] = a->parent;
		a->sc->part_idx =
		    xrealloc(a->sc->part_idx, a->sc->parts.n * sizeof(*a->sc->part_idx));
		a->sc->part_idx[before] = ++a->sc->nparts[a->parent];
	}
}

/* Id of the question term of the raw term t[0..n) (normalised in place),
 * or -1. */
static long question_id(const struct scorer *sc, char *t, size_t *n)
{
	*n = norm_term(t, *n);
	return termset_find(&sc->q, t, *n, hash_bytes(t, *n));
}

/* A list of items being read from a question: "Ada, Grace and Linus". */
struct chain {
	uint32_t item[ITEMS_MAX]; /* the items closed so far, each its terms as bits */
	size_t n;
	uint32_t cur; /* the item being read */
	size_t curn;  /* its words */
	bool linked;  /* a comma, "and" or "or" came after the last item closed */
};

/* The list ends: it becomes the question's list if it is the longest. */
static void chain_finish(struct chain *c, struct scorer *sc)
{
	if (c->n >= 2 && c->n > sc->nitems) {
		memcpy(sc->items, c->item, c->n * sizeof(*c->item));
		sc->nitems = c->n;
	}
	c->n = 0;
}

/* The item being read ends: it joins the list when linked to it, else it
 * starts a new one. */
static void chain_close(struct chain *c, struct scorer *sc)
{
	if (c->curn && c->cur) {
		if (c->n && !c->linked)
			chain_finish(c, sc);
		if (c->n < ITEMS_MAX)
			c->item[c->n++] = c->cur;
	}
	c->cur = 0, c->curn = 0, c->linked = false;
}

/* The keys of the question (terms among the first 32): numbers and
 * identifiers (a digit or an inner '-', '_', '.'), names (a capital
 * letter not at the start of a sentence), the keys sim_next_key finds;
 * and a list of items joined by commas, "and", "or" ("the codes of Ada,
 * Bob and Cy Lee"), each item one to three content words. */
static void question_keys(struct scorer *sc, const char *q, size_t len)
{
	char t[TERM_MAX];
	size_t pos = 0, start, k, prev_end = 0, kp = 0, kn;
	struct chain ch = {0};
	bool quoted;
	const char *key;
	while ((k = next_term_at(q, len, &pos, t, &start))) {
		bool comma = false, brk = false, stop = is_stopword(t, k);
		bool capital = q[start] >= 'A' && q[start] <= 'Z';
		long id;
		for (size_t i = prev_end; i < start; i++) {
			if (q[i] == ',' || q[i] == '&' || q[i] == '/' || q[i] == ';')
				comma = true;
			else if (q[i] != ' ' && q[i] != '\t')
				brk = true;
		}
		/* a sentence starts at the question's start or after . ! ? : */
		if (capital) {
			size_t i = start;
			while (i > 0 && (q[i - 1] == ' ' || q[i - 1] == '\t' || q[i - 1] == '"' ||
					 q[i - 1] == '(' || q[i - 1] == '\''))
				i--;
			if (!i || q[i - 1] == '.' || q[i - 1] == '?' || q[i - 1] == '!' ||
			    q[i - 1] == ':' || q[i - 1] == '\n')
				capital = false;
		}
		prev_end = pos;
		if (stop) {
			if ((k == 3 && !memcmp(t, "and", 3)) || (k == 2 && !memcmp(t, "or", 2))) {
				chain_close(&ch, sc);
				ch.linked = ch.n > 0;
			} else {
				chain_close(&ch, sc);
				chain_finish(&ch, sc);
			}
			continue;
		}
		id = question_id(sc, t, &k);
		if (id >= 0 && id < 32 && (capital || has_digit_or_inner(t, k)))
			sc->keys |= 1u << id;
		for (size_t i = 0; id >= 0 && id < 32 && i < k; i++)
			if (t[i] >= '0' && t[i] <= '9')
				sc->numbered |= 1u << id;
		if (comma && !brk) {
			chain_close(&ch, sc);
			ch.linked = ch.n > 0;
		} else if (brk || ch.curn >= 3) {
			chain_close(&ch, sc);
			chain_finish(&ch, sc);
		}
		if (id >= 0 && id < 32)
			ch.cur |= 1u << id, ch.curn++;
		else
			ch.cur = 0, ch.curn = 4; /* an item we cannot hold as bits: no item */
	}
	chain_close(&ch, sc);
	chain_finish(&ch, sc);
	while (sim_next_key(q, len, &kp, &key, &kn, &quoted)) {
		size_t tp = 0, tn;
		while ((tn = next_term(key, kn, &tp, t))) {
			long id = question_id(sc, t, &tn);
			if (id >= 0 && id < 32)
				sc->keys |= 1u << id;
		}
	}
}

/* The frame of a "how many" question, as bits of sc->q: the words naming
 * what is counted (after "how many", up to the first stopword) and a
 * closing verb after did/do/does ("How many errors did svc_x log?"). A
 * reader counts table rows of parts without the word "part" in them, and
 * log lines of errors that do not say "log": the verb is asked of a line
 * only when some line holding every other term holds it; what is counted
 * too, and also when the material holds it nowhere, unless the material
 * is rows (a table's or JSON records': their header may be in another
 * part). "How many fires were reported?" over reports of floods is 0.
 * Keys never are frame. */
static void frame_terms(struct scorer *sc, const char *q, size_t len)
{
	char t[TERM_MAX];
	size_t pos = 0, k;
	int state = 0; /* 0 before "how", 1 after it, 2 the counted words, 3 after them */
	bool aux = false;
	long last = -1;
	while ((k = next_term(q, len, &pos, t))) {
		bool stop = is_stopword(t, k);
		long id = -1;
		if (!stop) {
			size_t m = norm_term(t, k);
			id = termset_find(&sc->q, t, m, hash_bytes(t, m));
		}
		if (state == 0) {
			state = k == 3 && memcmp(t, "how", 3) == 0;
			continue;
		}
		if (state == 1) {
			state = k == 4 && memcmp(t, "many", 4) == 0 ? 2 : 0;
			continue;
		}
		if (state == 2 && !stop) {
			if (id >= 0 && id < 32)
				sc->frame |= 1u << id;
			continue;
		}
		state = 3;
		if (stop && ((k == 3 && memcmp(t, "did", 3) == 0) || (k == 2 && memcmp(t, "do", 2) == 0) ||
			     (k == 4 && memcmp(t, "does", 4) == 0)))
			aux = true;
		last = stop ? -1 : id;
	}
	if (aux && last >= 0 && last < 32 && !(sc->frame & (1u << last)))
		sc->frame_verb = 1u << last;
	sc->frame |= sc->frame_verb;
	sc->frame &= ~sc->keys;
	sc->frame_verb &= ~sc->keys;
}

static void scorer_init(struct scorer *sc, const struct prompt *p)
{
	memset(sc, 0, sizeof(*sc));
	question_terms(p->q, p->qlen, p->which, &sc->q);
	termset_init(&sc->parts);
	sc->nparts = xcalloc(sc->q.n + 1, sizeof(*sc->nparts));
	for (size_t i = 0; i < sc->q.n; i++) {
		struct part_add a = {sc, (uint32_t)i};
		char t[TERM_MAX];
		size_t n = sc->q.len[i];
		memcpy(t, sc->q.chars + sc->q.off[i], n);
		each_part(t, n, part_add, &a);
	}
	question_keys(sc, p->q, p->qlen);
	if (sc->q.n <= 32 && contains_ci(p->q, p->qlen, "how many"))
		frame_terms(sc, p->q, p->qlen);
	sc->stamp = xcalloc(sc->q.n + 1, sizeof(*sc->stamp));
	sc->pstamp = xcalloc(sc->q.n + 1, sizeof(*sc->pstamp));
	sc->df = xcalloc(sc->q.n + 1, sizeof(*sc->df));
	sc->w = xcalloc(sc->q.n + 1, sizeof(*sc->w));
}

static void scorer_release(struct scorer *sc)
{
	termset_release(&sc->q);
	termset_release(&sc->parts);
	free(sc->part_of);
	free(sc->nparts);
	free(sc->part_idx);
	free(sc->stamp);
	free(sc->pstamp);
	free(sc->df);
	free(sc->w);
}

/* One unit's visit: what scorer_unit adds up. */
struct visit {
	struct scorer *sc;
	bool count_df;
	size_t distinct;
	size_t whole;
	double sum;
	uint64_t bits;
};

static void hold(struct visit *v, long id, bool whole)
{
	struct scorer *sc = v->sc;
	bool had_part = sc->pstamp[id] == sc->cur;
	if (sc->stamp[id] == sc->cur || (!whole && had_part))
		return;
	if (whole)
		sc->stamp[id] = sc->cur;
	else
		sc->pstamp[id] = sc->cur;
	if (whole)
		v->whole++;
	if (whole && had_part) {
		v->sum += 0.5 * sc->w[id]; /* a part, then the whole */
	} else {
		v->distinct++;
		v->sum += whole ? sc->w[id] : 0.5 * sc->w[id];
		if (v->count_df)
			sc->df[id]++;
	}
	if (id < 32)
		v->bits |= whole ? 1ULL << id : 1ULL << (32 + id);
}

/* The text holds a part of the compound question term `id`, the run-th
 * of its parts in a row, in order. A term with a digit (an ID, a version)
 * is held whole by a run of all its parts, two or more ("OPS 1234" holds
 * ops-1234), else not at all ("20" is no part of 20.0.0 worth a match);
 * a term of words is held in part ("Node" of node.js; "harmonious
 * uniform" is not harmonious-uniform). */
static void hold_one_part(struct visit *v, uint32_t id, size_t run)
{
	struct scorer *sc = v->sc;
	bool numbered = id < 32 && (sc->numbered & (1u << id));
	if (numbered && sc->nparts[id] >= 2 && run >= sc->nparts[id])
		hold(v, id, true);
	else if (!numbered)
		hold(v, id, false);
}

/* A part of a compound term of the text that is a question term. */
static void hold_part(void *arg, const char *t, size_t n)
{
	struct visit *v = arg;
	char w[TERM_MAX];
	long id;
	memcpy(w, t, n);
	n = norm_term(w, n);
	if ((v->sc->q.lens[n / 64] & (1ULL << (n % 64))) &&
	    (id = termset_find(&v->sc->q, w, n, hash_bytes(w, n))) >= 0)
		hold(v, id, false);
}

/* Visit the distinct question terms of s[0..n) as a new unit: count them
 * (first pass, count_df) or sum their weights. A term is held whole, or
 * in part at half its weight: the text holds a part of a compound
 * question term (node of node.js) or the question term is a part of a
 * compound term of the text. Returns the number of distinct terms held;
 * *weight gets the sum and *set (when not NULL) the terms among the
 * first 32 as bits (see struct scorer). */
static size_t scorer_unit(struct scorer *sc, const char *s, size_t n, bool count_df, double *weight,
			  uint64_t *set)
{
	char t[TERM_MAX];
	size_t pos = 0, k, run = 0;
	unsigned shape;
	long prev = -1; /* the question term the last term was a part of */
	struct visit v = {sc, count_df, 0, 0, 0, 0};
	sc->cur++;
	while ((k = next_term_shape(s, n, &pos, t, NULL, &shape))) {
		long id = -1;
		k = norm_shaped(t, k, shape);
		if (sc->q.lens[k / 64] & (1ULL << (k % 64)))
			id = termset_find(&sc->q, t, k, hash_bytes(t, k));
		if (id >= 0) {
			hold(&v, id, true);
			prev = -1;
			continue;
		}
		if (sc->parts.n && (sc->parts.lens[k / 64] & (1ULL << (k % 64))) &&
		    (id = termset_find(&sc->parts, t, k, hash_bytes(t, k))) >= 0) {
			uint32_t of = sc->part_of[id];
			/* a run of its parts in order: "OPS 1234" */
			if (prev == (long)of && sc->part_idx[id] == run + 1)
				run++;
			else
				run = sc->part_idx[id] == 1;
			prev = of;
			hold_one_part(&v, of, run);
		} else {
			prev = -1;
		}
		if (shape & SHAPE_JOIN)
			each_part(t, k, hold_part, &v);
	}
	v.bits &= ~(v.bits << 32); /* held whole: not in part */
	sc->whole = v.whole;
	if (weight)
		*weight = v.sum;
	if (set)
		*set = v.bits;
	return v.distinct;
}

/* The weight of a set of terms (see struct scorer). */
static double set_weight(const struct scorer *sc, uint64_t set)
{
	double w = 0;
	for (uint64_t b = set & 0xffffffffu; b; b &= b - 1)
		w += sc->w[__builtin_ctzll(b)];
	for (uint64_t b = set >> 32; b; b &= b - 1)
		w += 0.5 * sc->w[__builtin_ctzll(b)];
	return w;
}

/* Whether a unit holding set answers a question with keys: it holds every
 * key, whole or in part, and at least one whole; when some keys hold a
 * digit (a version, an ID, a year), those name the thing: the others may
 * be missing ("Node.js 20.0.0" is "v20.0.0" in a release note) and a part
 * is enough ("Node.js 20" is in "Node.js 20.0.0"). */
static bool holds_keys(const struct scorer *sc, uint64_t set)
{
	uint32_t whole = (uint32_t)set, any = whole | (uint32_t)(set >> 32);
	if (sc->numbered)
		return (any & sc->numbered) == sc->numbered;
	return !sc->keys || ((whole & sc->keys) && (any & sc->keys) == sc->keys);
}

/* Weights from the counts; returns their sum. */
static double scorer_weigh(struct scorer *sc)
{
	double total = 0;
	for (size_t i = 0; i < sc->q.n; i++) {
		sc->w[i] = log(1 + (double)sc->units / (1 + sc->df[i]));
		total += sc->w[i];
	}
	return total;
}

static char *count_reply(uint64_t n)
{
	return xasprintf("%llu", (unsigned long long)n);
}

/* The distinct sets of question terms that lines hold, each with its first
 * line: lines with the same set score the same, so the best line is among
 * these. Used when the question has at most 64 terms; gives up (full) past
 * SETS_MAX sets, and the lines are scored again instead. */
#define SETS_MAX 4096

struct sets {
	uint64_t *key; /* a set of terms as bits; 0: empty slot */
	size_t *at, *len;
	size_t mask, n;
	bool full;
};

static void sets_put(struct sets *st, uint64_t key, size_t at, size_t len)
{
	size_t i;
	for (i = hash_bytes((const char *)&key, sizeof(key)) & st->mask; st->key[i];
	     i = (i + 1) & st->mask)
		if (st->key[i] == key)
			return;
	st->key[i] = key;
	st->at[i] = at;
	st->len[i] = len;
	st->n++;
}

static void sets_grow(struct sets *st, size_t slots)
{
	struct sets old = *st;
	st->key = xcalloc(slots, sizeof(*st->key));
	st->at = xcalloc(slots, sizeof(*st->at));
	st->len = xcalloc(slots, sizeof(*st->len));
	st->mask = slots - 1;
	st->n = 0;
	for (size_t i = 0; old.key && i <= old.mask; i++)
		if (old.key[i])
			sets_put(st, old.key[i], old.at[i], old.len[i]);
	free(old.key);
	free(old.at);
	free(old.len);
}

static void sets_add(struct sets *st, uint64_t key, size_t at, size_t len)
{
	if (st->full)
		return;
	if ((st->n + 1) * 2 > st->mask + 1) {
		if (st->mask + 1 >= 2 * SETS_MAX) {
			st->full = true;
			return;
		}
		sets_grow(st, (st->mask + 1) * 2);
	}
	sets_put(st, key, at, len);
}

static void sets_release(struct sets *st)
{
	free(st->key);
	free(st->at);
	free(st->len);
}

/* Whether a score w of the unit at offset `at` beats the best so far: by
 * more than rounding, or equal and earlier. */
static bool better(double w, size_t at, double best, size_t best_at)
{
	if (w <= 0)
		return false;
	if (best <= 0 || w > best * (1 + 1e-12))
		return true;
	return w >= best * (1 - 1e-12) && at < best_at;
}

/* ---- units: the sentences of the lines ---- */

#define SENT_MAX 600 /* a longer sentence is cut into pieces ... */
#define PIECE	 400 /* ... of about this many bytes, at a space */
#define WINDOW	 500 /* a piece answers with a window this wide around its match */

/* Walks the material unit by unit: each line that is material cut into
 * sentences (ending in . ! or ? before a space or a tab, or at the end of
 * the line), a sentence over SENT_MAX into pieces of about PIECE bytes. */
struct unit_it {
	const char *s;
	size_t end;
	const struct prompt *p;
	size_t pos;	      /* the next line */
	size_t cur, line_end; /* the rest of the line to cut */
	const char *doc;      /* the ID of the last "[doc: ID]" line passed */
	size_t docn;
	size_t lines;	 /* material lines met so far: the unit's line number + 1 */
	size_t bang, qm; /* the next '!' and '?' of the line (line_end: none; SIZE_MAX: unknown) */
};

/* Offset of the first c in s[from..to), else to. */
static size_t find_byte(const char *s, size_t from, size_t to, char c)
{
	const char *p = from < to ? memchr(s + from, c, to - from) : NULL;
	return p ? (size_t)(p - s) : to;
}

static void unit_it_init(struct unit_it *u, const char *s, size_t end, const struct prompt *p,
			 size_t from)
{
	memset(u, 0, sizeof(*u));
	u->s = s, u->end = end, u->p = p, u->pos = from;
}

/* The next unit s[*at..*at+*n); false at the end. */
static bool next_unit(struct unit_it *u, size_t *at, size_t *n)
{
	const char *s = u->s;
	size_t i, e = 0, lim;
	while (u->cur >= u->line_end) {
		size_t ls, ln;
		const char *id;
		size_t idn;
		if (!next_line(s, u->end, &u->pos, &ls, &ln))
			return false;
		if (doc_header(s + ls, ln, &id, &idn)) {
			u->doc = id, u->docn = idn;
			continue;
		}
		if ((ls >= u->p->skip_off && ls < u->p->skip_end) || text_is_blank(s + ls, ln))
			continue;
		u->lines++;
		u->cur = ls, u->line_end = ls + ln;
		u->bang = u->qm = SIZE_MAX;
		while (s[u->cur] == ' ' || s[u->cur] == '\t')
			u->cur++;
	}
	i = u->cur;
	lim = u->line_end - i > SENT_MAX ? i + SENT_MAX : u->line_end;
	/* the first . ! or ? before a space or a tab, before lim; where the
	 * next ! and ? are is kept for the line's next sentences */
	for (size_t j = i, stop = lim < u->line_end ? lim : lim - 1, c; j < stop; j = c + 1) {
		if (u->bang == SIZE_MAX || u->bang < j)
			u->bang = find_byte(s, j, u->line_end, '!');
		if (u->qm == SIZE_MAX || u->qm < j)
			u->qm = find_byte(s, j, u->line_end, '?');
		c = find_byte(s, j, stop, '.');
		c = c < u->bang ? c : u->bang;
		c = c < u->qm ? c : u->qm;
		if (c >= stop)
			break;
		if (s[c + 1] == ' ' || s[c + 1] == '\t') {
			e = c + 1;
			break;
		}
	}
	if (!e && lim == u->line_end)
		e = lim;
	if (!e) { /* a long sentence: a piece, cut at a space */
		e = i + PIECE;
		while (e > i + PIECE / 2 && s[e] != ' ' && s[e] != '\t')
			e--;
		if (e <= i + PIECE / 2)
			e = i + text_utf8_floor(s + i, PIECE);
	}
	*at = i, *n = e - i;
	while (e < u->line_end && (s[e] == ' ' || s[e] == '\t'))
		e++;
	u->cur = e;
	return true;
}

/* Whether the unit s[at..at+n) is a piece of a long sentence rather than
 * a line or a sentence: it neither ends one nor ends its line. */
static bool is_piece(const char *s, size_t len, size_t at, size_t n)
{
	size_t e = at + n;
	if (n <= 1 || e >= len || s[e] == '\n' || s[e] == '\r')
		return false;
	return s[e - 1] != '.' && s[e - 1] != '!' && s[e - 1] != '?';
}

/* The answer the unit s[at..at+n) gives: itself (cut at ANSWER_MAX), or
 * for a piece of a long sentence a window of WINDOW bytes of its line
 * centred on the question terms it holds, cut at spaces: never the head
 * of a line whose match is elsewhere. */
static char *answer_unit(const char *s, size_t len, size_t at, size_t n, struct scorer *sc)
{
	char t[TERM_MAX];
	size_t pos = 0, k, st, lo = SIZE_MAX, hi = 0, heavy = 0, c, a, b, lb, le;
	double hw = -1;
	if (!is_piece(s, len, at, n))
		return answer_dup(s + at, n);
	while ((k = next_term_at(s + at, n, &pos, t, &st))) {
		long id;
		k = norm_term(t, k);
		id = termset_find(&sc->q, t, k, hash_bytes(t, k));
		if (id < 0 && sc->parts.n &&
		    (id = termset_find(&sc->parts, t, k, hash_bytes(t, k))) >= 0)
			id = sc->part_of[id];
		if (id < 0)
			continue;
		lo = lo < st ? lo : st;
		hi = pos;
		if (sc->w[id] > hw)
			hw = sc->w[id], heavy = st;
	}
	if (lo == SIZE_MAX)
		lo = 0, hi = n;
	c = hi - lo <= WINDOW ? at + (lo + hi) / 2 : at + heavy;
	/* the line around the unit */
	for (lb = at; lb > 0 && s[lb - 1] != '\n' && at - lb < WINDOW; lb--)
		;
	for (le = at + n; le < len && s[le] != '\n' && s[le] != '\r' && le - at - n < WINDOW; le++)
		;
	a = c - lb > WINDOW / 2 ? c - WINDOW / 2 : lb;
	b = a + WINDOW < le ? a + WINDOW : le;
	if (b - a < WINDOW && a > lb)
		a = b - lb > WINDOW ? b - WINDOW : lb;
	/* whole words and characters */
	for (k = 0; a > lb && a < b && k < 40 && s[a - 1] != ' '; k++)
		a++;
	while (a < b && (s[a] & 0xc0) == 0x80)
		a++;
	for (k = 0; b < le && b > a && k < 40 && s[b] != ' '; k++)
		b--;
	while (b > a && b < le && (s[b] & 0xc0) == 0x80)
		b--;
	return answer_dup(s + a, b - a);
}

/* For "all": every distinct flagged unit of the material that holds the
 * keys and scores at least best, one per line. */
static char *leaf_list(const char *s, size_t len, const struct prompt *p, struct scorer *sc,
		       const unsigned char *flag, double best)
{
	struct buf b;
	struct unit_it u;
	size_t at, n, unit = 0;
	double w;
	uint64_t set;
	buf_init(&b, 0);
	unit_it_init(&u, s, len, p, p->mat_off);
	while (next_unit(&u, &at, &n)) {
		if (flag[unit / 8] & (1u << (unit % 8))) {
			scorer_unit(sc, s + at, n, false, &w, &set);
			if (w >= best * (1 - 1e-12) && holds_keys(sc, set)) {
				char *a = answer_unit(s, len, at, n, sc);
				list_add(&b, a, strlen(a));
				free(a);
			}
		}
		unit++;
	}
	return buf_detach(&b, NULL);
}

/* The best unit so far. */
struct pick {
	double w;
	size_t at, n;
};

/* Offer the unit s[at..at+n) holding set with weight w: to the best unit
 * when it holds the keys, and to each item of a list it holds whole. */
static void offer(const struct scorer *sc, struct pick *best, struct pick *items, uint64_t set,
		  double w, size_t at, size_t n)
{
	if (holds_keys(sc, set) && better(w, at, best->w, best->at))
		*best = (struct pick){w, at, n};
	for (size_t j = 0; j < sc->nitems; j++)
		if (((uint32_t)set & sc->items[j]) && better(w, at, items[j].w, items[j].at))
			items[j] = (struct pick){w, at, n};
}

/* Sub-model: the best unit of the material (for "all", every unit as
 * good as it; for a list of keys, the best unit of each key it holds),
 * or a count of units. One pass tokenizes the units; a second one runs
 * only when the sets gave up, or to list the units for "all". */
/* Whether most non-blank lines of s[0..n) are rows of records: a table's
 * ("| ... |") or JSON objects, whose header may be elsewhere. */
static bool rows_of_records(const char *s, size_t n)
{
	size_t pos = 0, at, ln, rows = 0, lines = 0;
	while (next_line(s, n, &pos, &at, &ln)) {
		size_t i = 0;
		while (i < ln && (s[at + i] == ' ' || s[at + i] == '\t'))
			i++;
		if (i == ln)
			continue;
		lines++;
		rows += s[at + i] == '|' || s[at + i] == '{';
	}
	return lines && 2 * rows >= lines;
}

static char *answer_leaf(const char *s, size_t len, const struct prompt *p, bool how_many, bool all)
{
	struct scorer sc;
	struct sets st = {0};
	struct unit_it u;
	struct pick best = {0}, items[ITEMS_MAX];
	size_t at, n, unit = 0, counted = 0, ncand = 0, cand_cap = 0;
	uint64_t matching = 0, set;
	uint32_t need, present = 0, anywhere = 0;
	struct {
		size_t line;
		uint32_t frame;
	} *cand = NULL; /* "how many" with a frame: units holding every other term */
	unsigned char *flag;
	double total, wsum;
	char *out;
	memset(items, 0, sizeof(items));
	scorer_init(&sc, p);
	need = (sc.q.n >= 32 ? ~0u : (1u << sc.q.n) - 1) & ~sc.frame;
	flag = xcalloc((len - p->mat_off) / 8 + 2, 1);
	st.full = sc.q.n > 32;
	if (!st.full)
		sets_grow(&st, 64);
	unit_it_init(&u, s, len, p, p->mat_off);
	while (next_unit(&u, &at, &n)) {
		size_t d;
		sc.units++;
		d = scorer_unit(&sc, s + at, n, true, NULL, &set);
		/* lines are counted, not sentences; a term held in part does not count */
		if (!sc.frame && sc.whole == sc.q.n && counted != u.lines) {
			matching++, counted = u.lines;
		} else if (sc.frame) {
			uint32_t whole = (uint32_t)set;
			anywhere |= whole;
			if ((whole & need) == need) {
				present |= whole;
				if (ncand == cand_cap) {
					cand_cap = cand_cap ? 2 * cand_cap : 64;
					cand = xrealloc(cand, cand_cap * sizeof(*cand));
				}
				cand[ncand].line = u.lines;
				cand[ncand++].frame = whole & sc.frame;
			}
		}
		if (d) {
			flag[unit / 8] |= (unsigned char)(1u << (unit % 8));
			sets_add(&st, set, at, n);
		}
		unit++;
	}
	if (how_many) {
		/* the frame words some line of the rest holds are asked of
		 * every line (a table's header saying "part" is not one);
		 * what is counted, held nowhere, too, unless these are rows */
		uint32_t want = sc.frame & present;
		uint32_t absent = sc.frame & ~sc.frame_verb & ~anywhere;
		if (absent && !rows_of_records(s + p->mat_off, len - p->mat_off))
			want |= absent;
		for (size_t i = 0; i < ncand; i++)
			if ((cand[i].frame & want) == want && cand[i].line != counted)
				matching++, counted = cand[i].line;
		out = count_reply(matching);
		goto done;
	}
	total = scorer_weigh(&sc);
	for (size_t i = 0; !st.full && i <= st.mask; i++)
		if (st.key[i])
			offer(&sc, &best, items, st.key[i], set_weight(&sc, st.key[i]), st.at[i],
			      st.len[i]);
	unit_it_init(&u, s, len, p, p->mat_off);
	unit = 0;
	while (st.full && total > 0 && next_unit(&u, &at, &n)) {
		if (flag[unit / 8] & (1u << (unit % 8))) {
			scorer_unit(&sc, s + at, n, false, &wsum, &set);
			offer(&sc, &best, items, set, wsum, at, n);
		}
		unit++;
	}
	if (sc.nitems >= 2 && !how_many) {
		struct buf b;
		buf_init(&b, 0);
		for (size_t j = 0; j < sc.nitems; j++) {
			if (items[j].w <= 0)
				continue;
			out = answer_unit(s, len, items[j].at, items[j].n, &sc);
			list_add(&b, out, strlen(out));
			free(out);
		}
		out = b.len ? buf_detach(&b, NULL) : (buf_release(&b), xstrdup("NONE"));
		goto done;
	}
	if (total > 0 && best.w > 0 && (sc.keys || best.w >= 0.5 * total * (1 - 1e-12)))
		out = all ? leaf_list(s, len, p, &sc, flag, best.w)
			  : answer_unit(s, len, best.at, best.n, &sc);
	else
		out = xstrdup("NONE");
done:
	sets_release(&st);
	free(flag);
	free(cand);
	scorer_release(&sc);
	return out;
}

/* Sub-model, for a question that asks which document: the ID of the
 * "[doc: ID]" header above the best line (for a plural, the IDs above every
 * line as good as it, one per line), or the line itself when no header
 * names it. A line qualifies when it holds every key of the question
 * (sim_next_key: the identifier or quoted phrase it is about), else when
 * it scores half the question's weight as answer_leaf asks. */
#define KEYS_MAX 16

static char *answer_which_doc(const char *s, size_t len, const struct prompt *p, bool plural)
{
	struct scorer sc;
	struct buf list;
	struct unit_it u;
	long keys[KEYS_MAX];
	size_t ls, n, nkeys = 0, kp = 0, kn, best_at = 0, best_n = 0, best_idn = 0;
	const char *k, *best_id = NULL;
	double total, best = 0, w;
	bool quoted;
	char *out;
	scorer_init(&sc, p);
	while (nkeys < KEYS_MAX && sim_next_key(p->q, p->qlen, &kp, &k, &kn, &quoted)) {
		char t[TERM_MAX];
		size_t tp = 0, tn;
		while (nkeys < KEYS_MAX && (tn = next_term(k, kn, &tp, t))) {
			long tid;
			tn = norm_term(t, tn);
			tid = termset_find(&sc.q, t, tn, hash_bytes(t, tn));
			if (tid >= 0)
				keys[nkeys++] = tid;
		}
	}
	unit_it_init(&u, s, len, p, p->mat_off);
	while (next_unit(&u, &ls, &n)) {
		sc.units++;
		scorer_unit(&sc, s + ls, n, true, NULL, NULL);
	}
	total = scorer_weigh(&sc);
	buf_init(&list, 0);
	for (int pass = 0; pass < (plural ? 2 : 1) && total > 0; pass++) {
		unit_it_init(&u, s, len, p, p->mat_off);
		while (next_unit(&u, &ls, &n)) {
			size_t i;
			bool ok;
			scorer_unit(&sc, s + ls, n, false, &w, NULL);
			for (i = 0; i < nkeys && sc.stamp[keys[i]] == sc.cur; i++)
				;
			ok = nkeys ? i == nkeys : w >= 0.5 * total * (1 - 1e-12);
			if (ok && !pass && better(w, ls, best, best_at))
				best = w, best_at = ls, best_n = n, best_id = u.doc,
				best_idn = u.docn;
			if (ok && pass && u.doc && w >= best * (1 - 1e-12))
				list_add(&list, u.doc, u.docn);
		}
	}
	if (best <= 0) {
		scorer_release(&sc);
		buf_release(&list);
		return xstrdup("NONE");
	}
	if (list.len) {
		scorer_release(&sc);
		return buf_detach(&list, NULL);
	}
	buf_release(&list);
	out = best_id ? answer_dup(best_id, best_idn) : answer_unit(s, len, best_at, best_n, &sc);
	scorer_release(&sc);
	return out;
}

/* Offset past a "[n]" prefix (and one space) of the line s[0..n), else 0. */
static size_t partial_prefix(const char *s, size_t n)
{
	size_t i = 0, d;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i >= n || s[i] != '[')
		return 0;
	for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == d || i >= n || s[i] != ']')
		return 0;
	i++;
	return i < n && s[i] == ' ' ? i + 1 : i;
}

/* The next partial answer of s[*pos..len): a line "[n] text" starts one and
 * the lines after it continue it until the next "[n]" line. Trimmed. */
static bool next_partial(const char *s, size_t len, const struct prompt *p, size_t *pos,
			 const char **out, size_t *out_n)
{
	size_t ls, n, start = 0, end = 0, peek;
	bool open = false;
	for (;;) {
		peek = *pos;
		if (!next_line(s, len, &peek, &ls, &n))
			break;
		if (ls >= p->skip_off && ls < p->skip_end) {
			*pos = peek;
			if (open)
				break;
			continue;
		}
		if (!open) {
			*pos = peek;
			if (text_is_blank(s + ls, n))
				continue;
			open = true;
			start = ls + partial_prefix(s + ls, n);
			end = ls + n;
			continue;
		}
		if (partial_prefix(s + ls, n))
			break;
		*pos = peek;
		if (!text_is_blank(s + ls, n))
			end = ls + n;
	}
	if (!open)
		return false;
	*out = s + start;
	*out_n = end - start;
	text_trim(out, out_n);
	return true;
}

/* A partial answer that brings nothing: a NONE reply, or blank. */
static bool says_nothing(const char *s, size_t n)
{
	return text_is_blank(s, n) || text_is_none(s, n);
}

/* Combiner: the sum of the counts, or the partial answer that best matches
 * the question. */
/* Whether the partial answer a[0..n) states a value the question does not
 * hold: a term with a digit ("The code of the vault is 畑-4023-ÉTÉ."), what
 * a reader looks for when two answers match the question as well. */
static bool states_value(const struct scorer *sc, const char *a, size_t n)
{
	char t[TERM_MAX];
	size_t pos = 0, k;
	while ((k = next_term(a, n, &pos, t))) {
		bool digit = false;
		for (size_t i = 0; i < k && !digit; i++)
			digit = t[i] >= '0' && t[i] <= '9';
		if (digit) {
			size_t m = norm_term(t, k);
			if (termset_find(&sc->q, t, m, hash_bytes(t, m)) < 0)
				return true;
		}
	}
	return false;
}

static char *answer_combine(const char *s, size_t len, const struct prompt *p, bool how_many)
{
	struct scorer sc;
	const char *a, *best_a = NULL;
	size_t pos = p->mat_off, an, best_n = 0;
	uint64_t sum = 0;
	double best = -1, wsum;
	char *out;
	scorer_init(&sc, p);
	while (next_partial(s, len, p, &pos, &a, &an)) {
		if (says_nothing(a, an))
			continue;
		sc.units++;
		if (how_many) {
			uint64_t v = 0;
			size_t i = 0;
			while (i < an && (a[i] < '0' || a[i] > '9'))
				i++;
			for (; i < an && a[i] >= '0' && a[i] <= '9'; i++)
				v = v > UINT64_MAX / 20 ? v : v * 10 + (uint64_t)(a[i] - '0');
			sum = sum + v < sum ? UINT64_MAX : sum + v;
		} else {
			scorer_unit(&sc, a, an, true, NULL, NULL);
		}
	}
	if (!sc.units) {
		out = xstrdup("NONE");
		goto done;
	}
	if (how_many) {
		out = count_reply(sum);
		goto done;
	}
	scorer_weigh(&sc);
	pos = p->mat_off;
	while (next_partial(s, len, p, &pos, &a, &an)) {
		if (says_nothing(a, an))
			continue;
		scorer_unit(&sc, a, an, false, &wsum, NULL);
		/* of answers that match as well, one that states a value */
		if (states_value(&sc, a, an))
			wsum *= 1 + 1e-6;
		if (!best_a || better(wsum, (size_t)(a - s), best, (size_t)(best_a - s)))
			best = wsum, best_a = a, best_n = an;
	}
	out = answer_dup(best_a, best_n);
done:
	scorer_release(&sc);
	return out;
}

/* Combiner for "all": the distinct lines of the partial answers that
 * score best, one per line (every line when none holds a question term);
 * NONE when all are NONE. Pass 0 counts, 1 finds the best, 2 lists. */
static char *combine_list(const char *s, size_t len, const struct prompt *p)
{
	struct scorer sc;
	struct buf b;
	const char *a;
	size_t pos, an;
	double best = 0, w;
	scorer_init(&sc, p);
	buf_init(&b, 0);
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1 && !sc.units)
			break;
		if (pass == 1)
			scorer_weigh(&sc);
		pos = p->mat_off;
		while (next_partial(s, len, p, &pos, &a, &an)) {
			size_t at = 0, ls, n;
			while (next_line(a, an, &at, &ls, &n)) {
				if (says_nothing(a + ls, n))
					continue;
				if (pass == 0) {
					sc.units++;
					scorer_unit(&sc, a + ls, n, true, NULL, NULL);
					continue;
				}
				scorer_unit(&sc, a + ls, n, false, &w, NULL);
				if (pass == 1 && w > best)
					best = w;
				if (pass == 2 && w >= best * (1 - 1e-12))
					list_add(&b, a + ls, n);
			}
		}
	}
	scorer_release(&sc);
	if (!b.len) {
		buf_release(&b);
		return xstrdup("NONE");
	}
	return buf_detach(&b, NULL);
}

/* Combiner for a question that names several keys ("the codes of A, B
 * and C"): for each key, the line of the partial answers that holds it
 * and scores best, distinct, one per line in the question's order; NULL
 * when the question names fewer than two keys or no line holds one. */
static char *combine_items(const char *s, size_t len, const struct prompt *p)
{
	struct scorer sc;
	struct pick items[ITEMS_MAX];
	struct buf b;
	const char *a;
	size_t pos, an;
	double w;
	uint64_t set;
	scorer_init(&sc, p);
	memset(items, 0, sizeof(items));
	buf_init(&b, 0);
	for (int pass = 0; pass < 2 && sc.nitems >= 2; pass++) {
		if (pass == 1)
			scorer_weigh(&sc);
		pos = p->mat_off;
		while (next_partial(s, len, p, &pos, &a, &an)) {
			size_t at = 0, ls, n;
			while (next_line(a, an, &at, &ls, &n)) {
				if (says_nothing(a + ls, n))
					continue;
				if (!pass)
					sc.units++;
				scorer_unit(&sc, a + ls, n, !pass, &w, &set);
				for (size_t j = 0; pass && j < sc.nitems; j++)
					if (((uint32_t)set & sc.items[j]) &&
					    better(w, (size_t)(a + ls - s), items[j].w,
						   items[j].at))
						items[j] =
						    (struct pick){w, (size_t)(a + ls - s), n};
			}
		}
	}
	for (size_t j = 0; j < sc.nitems; j++)
		if (items[j].w > 0)
			list_add(&b, s + items[j].at, items[j].n);
	scorer_release(&sc);
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static char *policy(const char *s, size_t len)
{
	struct prompt p;
	bool how_many, all, plural;
	pthread_once(&tables_once, tables_build);
	split_prompt(s, len, &p);
	how_many = contains_ci(p.q, p.qlen, "how many");
	all = sim_asks_all(p.q, p.qlen);
	p.which = sim_asks_which_doc(p.q, p.qlen, &plural);
	if (p.combine) {
		char *out = how_many ? NULL : combine_items(s, len, &p);
		if (out)
			return out;
		return all ? combine_list(s, len, &p) : answer_combine(s, len, &p, how_many);
	}
	if (p.which)
		return answer_which_doc(s, len, &p, plural);
	return answer_leaf(s, len, &p, how_many, all);
}

char *sim_reply_text(const struct sim_cfg *cfg, const struct llm_msg *msgs, size_t n)
{
	const struct llm_msg *m = NULL;
	char *root = sim__compact_reply(msgs, n);
	if (root)
		return root;
	root = sim_root_reply(cfg, msgs, n);
	if (root)
		return root;
	for (size_t i = n; i-- > 0;) {
		if (msgs[i].role == LLM_USER) {
			m = &msgs[i];
			break;
		}
	}
	if (!m && n)
		m = &msgs[n - 1];
	if (!m || !m->text)
		return xstrdup("NONE");
	return policy(m->text, m->len);
}
