/* SPDX-License-Identifier: MIT */
/* sim/sim_tools.c -- the root policy's host tool turns: search the tools
 * with the question's words, read the schema of the hit that fits, call it
 * with arguments taken from the question's literals, answer with the result.
 *
 * DESIGN
 * The turns keep no state, like the rest of the root policy: each code
 * block starts "# tools N: ...", and each prints what the next turn reads
 * on one line of its own, as JSON (json.dumps escapes newlines, so a tool's
 * description or result cannot start a line that fools the parser):
 *   1  hits = search_tools(WORDS, limit=5)       "tool hits: [...]"
 *   2  info = get_tool_info(NAME)                "tool info: {...}"
 *   3  r = call_tool(NAME, ARGS...)              "tool result: ..."
 *   4  FINAL(the result's text)
 * A line missing from the output (the helper raised: a ToolError, a
 * NameError in a REPL without tools) or that does not parse ends the tool
 * turns: sim__tools_reply returns NULL and the usual strategy starts.
 *
 * Only the question is read, never an expected answer. WORDS are its
 * content words without its literals (numbers, quoted strings, paths and
 * URLs are arguments, not what the tool does), and the first word of each
 * synonym group one of them is in ("say" adds "read" and "echo"). A hit
 * fits when a word of its tool name (the part after the server's dot, cut
 * at '-', '_', '.' and camelCase humps; get, set, tool and the like say
 * nothing) is a word of the question (2 points; a path in the question
 * says "file", "path", "dir") or in a synonym group of one (1 point); the
 * best of the hits by points, then by rank (a hit whose description says
 * it is deprecated last among equals), is the one read. The synonyms are a
 * small table (synonyms below), not a thesaurus.
 *
 * Arguments come from the question's literals, each used once: a
 * parameter whose name the question says ("from USD", "to EUR") takes the
 * literal or word after it; an enum takes a value the question names;
 * numbers go to number and integer parameters in the order of the
 * schema's required list; quoted strings, then paths (for a parameter about
 * a path or a file: paths first, then file names such as notes.txt) or
 * URLs, then the rest of the question's content words (for a tool the
 * question names itself, not one a synonym reached), to string
 * parameters; an array of strings takes every path or quoted string. An
 * optional parameter is filled only when the question names it. When a
 * required parameter stays empty, the schema says the tool is not
 * allowed, or the call would take nothing from the question and a synonym
 * alone reached the tool, the tools are dropped. */
#include "sim_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HITS_LIMIT 5  /* search_tools(..., limit=HITS_LIMIT) */
#define LITS_MAX   32 /* literals of a question kept */
#define WORDS_MAX  64 /* words of a question kept */
#define PARAMS_MAX 32 /* parameters of a schema considered */
#define NAME_WORDS 16 /* words of a tool name considered */
#define SYN_WORDS  10 /* words of a synonym group, at most */
#define NUM_MAX	   40 /* bytes of a number literal kept */

/* ---- synonyms ---- */

/* Groups of words a question and a tool name may use for one thing; the
 * first word is the one a search adds. A word may be in several groups.
 * Compared stemmed. Words a question about a text uses for the text
 * itself ("text", "message", "say" as in "say hello") are left out, so
 * "What does the memo say?" fits no echo tool. */
static const char *const synonyms[][SYN_WORDS] = {
    {"sum", "add", "plus", "total", "addition"},
    {"subtract", "minus", "difference"},
    {"multiply", "product"},
    {"divide", "quotient"},
    {"echo", "repeat"},
    {"read", "open", "show", "contents", "content", "say", "cat", "view"},
    {"list", "directory", "ls", "folder", "dir", "entries"},
    {"write", "save", "store"},
    {"search", "find", "grep", "lookup"},
    {"convert", "exchange", "conversion"},
    {"time", "date", "clock", "today"},
    {"weather", "forecast", "temperature"},
    {"env", "environment", "variable"},
    {"info", "metadata", "size", "stat", "modified"},
    {"image", "picture", "logo", "photo"},
    {"translate", "translation"},
};

/* Words of a tool name that say nothing of what it does. */
/* clang-format off */
static const char *const generic[] = {
	"get", "set", "do", "run", "tool", "tools", "data", "with", "as", "by", "for", "of",
	"to", "the", "a", "an", "and", "or", "new", "demo", "mcp", "simulate", "simulated",
	"trigger", "toggle", "multiple", "fetch", "make",
};
/* clang-format on */

/* The synonym words stemmed, built once. */
static char syn_norm[ARRAY_SIZE(synonyms)][SYN_WORDS][SIM__TERM_MAX];
static size_t syn_len[ARRAY_SIZE(synonyms)][SYN_WORDS];
static pthread_once_t syn_once = PTHREAD_ONCE_INIT;

static void syn_build(void)
{
	for (size_t g = 0; g < ARRAY_SIZE(synonyms); g++)
		for (size_t k = 0; k < SYN_WORDS && synonyms[g][k]; k++) {
			size_t n = strlen(synonyms[g][k]);
			memcpy(syn_norm[g][k], synonyms[g][k], n);
			syn_len[g][k] = sim__norm_term(syn_norm[g][k], n);
		}
}

/* The groups the stemmed word t[0..n) is in, as bits. */
static uint32_t groups_of(const char *t, size_t n)
{
	uint32_t m = 0;
	pthread_once(&syn_once, syn_build);
	for (size_t g = 0; g < ARRAY_SIZE(synonyms); g++)
		for (size_t k = 0; k < SYN_WORDS && synonyms[g][k]; k++)
			if (syn_len[g][k] == n && !memcmp(syn_norm[g][k], t, n))
				m |= 1u << g;
	return m;
}

/* Whether the stemmed word t[0..n) is one of words, stemmed alike. */
static bool among(const char *const *words, size_t nwords, const char *t, size_t n)
{
	for (size_t i = 0; i < nwords; i++) {
		char w[SIM__TERM_MAX];
		size_t k = strlen(words[i]);
		memcpy(w, words[i], k);
		k = sim__norm_term(w, k); /* "simulated" is "simulat", "file" "fil" */
		if (k == n && !memcmp(w, t, n))
			return true;
	}
	return false;
}

static bool is_generic(const char *t, size_t n)
{
	return among(generic, ARRAY_SIZE(generic), t, n);
}

/* ---- the question ---- */

enum lit_kind { LIT_NUMBER, LIT_QUOTED, LIT_PATH, LIT_URL };

/* A literal of the question: what arguments are made of. */
struct lit {
	enum lit_kind kind;
	size_t at, end;	   /* its span in the question (quotes included) */
	size_t vat, vn;	   /* the value: inside the quotes, the path, the URL */
	char num[NUM_MAX]; /* LIT_NUMBER: as Python and JSON write it (12, -0.5, 1000) */
	bool integral;	   /* LIT_NUMBER: no fraction */
	bool used;
};

/* A word of the question outside its literals. */
struct word {
	size_t at, n;	       /* its span in the question */
	char t[SIM__TERM_MAX]; /* lower-cased and stemmed */
	size_t tn;
	bool stop; /* a stopword (kept when a synonym group has it) */
	uint32_t groups;
	bool used; /* taken as a value, or said by the tool's name */
};

struct question {
	const char *q;
	size_t qn;
	struct lit lits[LITS_MAX];
	size_t nlits;
	struct word words[WORDS_MAX];
	size_t nwords;
	uint32_t groups; /* of every word */
	bool direct;	 /* a word of the tool's name is a word of the question */
	bool has_path;	 /* a path, bare or quoted */
};

/* Whether c is one of the bytes of set (never NUL). */
static bool in_set(const char *set, char c)
{
	return c && strchr(set, c);
}

static bool word_byte(unsigned char c)
{
	return text_is_alnum(c) || c == '_' || c >= 0x80;
}

/* Bytes of the quote mark at s[0..n) and its closing mark, or 0. */
static size_t quote_open(const char *s, size_t n, const char **close)
{
	static const char *const pairs[][2] = {
	    {"\"", "\""},
	    {"`", "`"},
	    {"'", "'"},
	    {"\xe2\x80\x9c", "\xe2\x80\x9d"},
	    {"\xe2\x80\x98", "\xe2\x80\x99"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		size_t k = strlen(pairs[i][0]);
		if (n >= k && !memcmp(s, pairs[i][0], k)) {
			*close = pairs[i][1];
			return k;
		}
	}
	return 0;
}

/* End of the token at q[i..n) (a path, a URL): the next blank, without the
 * punctuation that ends a sentence or a bracket. */
static size_t token_end(const char *q, size_t n, size_t i)
{
	size_t e = i;
	while (e < n && !text_is_space(q[e]))
		e++;
	while (e > i && in_set(".,;:!?)]}\"'`", q[e - 1]))
		e--;
	/* a closing curly quote */
	while (e >= i + 3 && ((unsigned char)q[e - 3] == 0xe2 && (unsigned char)q[e - 2] == 0x80 &&
			      ((unsigned char)q[e - 1] == 0x9d || (unsigned char)q[e - 1] == 0x99)))
		e -= 3;
	return e;
}

/* A number at q[i..n) whose sign or first digit is at i: its literal into
 * l and its end, or 0 when it is no number of its own (a date, a version, a
 * time, part of a word: 2023-04-18, 20.0.0, 10:42, 12th). */
static size_t number_at(const char *q, size_t n, size_t i, struct lit *l)
{
	size_t j = i, k = 0, lead, first;
	bool neg = false, frac = false;
	if (q[j] == '-' || q[j] == '+')
		neg = q[j++] == '-';
	if (j >= n || !text_is_digit(q[j]))
		return 0;
	lead = j;
	while (j < n && text_is_digit(q[j]))
		j++;
	/* thousands: 1,000 and 12,345,678 (groups of exactly three digits) */
	first = j - lead;
	while (first <= 3 && j + 3 < n && q[j] == ',' && text_is_digit(q[j + 1]) &&
	       text_is_digit(q[j + 2]) && text_is_digit(q[j + 3]) &&
	       (j + 4 >= n || !text_is_digit(q[j + 4])))
		j += 4;
	if (j + 1 < n && q[j] == '.' && text_is_digit(q[j + 1])) {
		frac = true;
		for (j++; j < n && text_is_digit(q[j]); j++)
			;
	}
	if (j < n && (word_byte((unsigned char)q[j]) ||
		      (j + 1 < n && in_set(".:-/", q[j]) && text_is_digit(q[j + 1]))))
		return 0;
	if (neg)
		l->num[k++] = '-';
	/* leading zeros dropped (Python refuses 007), commas too */
	while (lead + 1 < j && q[lead] == '0' && text_is_digit(q[lead + 1]))
		lead++;
	for (size_t m = lead; m < j && k + 1 < NUM_MAX; m++)
		if (q[m] != ',')
			l->num[k++] = q[m];
	l->num[k] = '\0';
	if (k + 1 >= NUM_MAX)
		return 0;
	l->kind = LIT_NUMBER;
	l->integral = !frac;
	return j;
}

static void add_lit(struct question *qs, const struct lit *l)
{
	if (qs->nlits < LITS_MAX)
		qs->lits[qs->nlits++] = *l;
}

/* The literals of the question, in order. */
static void scan_literals(struct question *qs)
{
	const char *q = qs->q, *close;
	size_t n = qs->qn, i = 0, k;
	while (i < n) {
		bool start = !i || !word_byte((unsigned char)q[i - 1]);
		struct lit l = {0};
		if (start && (k = quote_open(q + i, n - i, &close))) {
			/* the closing mark, not inside a word ("don't" is no end) */
			size_t cn = strlen(close), j = i + k;
			const char *e = NULL;
			for (; j + cn <= n && q[j] != '\n'; j++)
				if (!memcmp(q + j, close, cn) &&
				    (j + cn >= n || !text_is_alnum(q[j + cn]))) {
					e = q + j;
					break;
				}
			if (e && e > q + i + k) {
				l = (struct lit){.kind = LIT_QUOTED,
						 .at = i,
						 .end = j + cn,
						 .vat = i + k,
						 .vn = j - i - k};
				add_lit(qs, &l);
				i = j + cn;
				continue;
			}
		}
		if (start && ((n - i > 7 && !strncmp(q + i, "http://", 7)) ||
			      (n - i > 8 && !strncmp(q + i, "https://", 8)))) {
			size_t e = token_end(q, n, i);
			l = (struct lit){.kind = LIT_URL, .at = i, .end = e, .vat = i, .vn = e - i};
			add_lit(qs, &l);
			i = e;
			continue;
		}
		if (start && (q[i] == '/' || (q[i] == '~' && i + 1 < n && q[i + 1] == '/') ||
			      (q[i] == '.' && i + 1 < n && q[i + 1] == '/') ||
			      (q[i] == '.' && i + 2 < n && q[i + 1] == '.' && q[i + 2] == '/'))) {
			size_t e = token_end(q, n, i), s = i;
			while (s < e && (q[s] == '/' || q[s] == '.' || q[s] == '~'))
				s++;
			if (s < e && word_byte((unsigned char)q[s])) {
				l = (struct lit){
				    .kind = LIT_PATH, .at = i, .end = e, .vat = i, .vn = e - i};
				add_lit(qs, &l);
				i = e;
				continue;
			}
		}
		if (start && (i == 0 || !in_set("./-", q[i - 1])) && (k = number_at(q, n, i, &l))) {
			l.at = i, l.end = k, l.vat = i, l.vn = k - i;
			add_lit(qs, &l);
			i = k;
			continue;
		}
		/* past the rest of a word, so "item-5" gives no 5 */
		if (word_byte((unsigned char)q[i]))
			while (i < n && (word_byte((unsigned char)q[i]) || in_set("-.:/", q[i])))
				i++;
		else
			i++;
	}
}

static bool in_literal(const struct question *qs, size_t at)
{
	for (size_t i = 0; i < qs->nlits; i++)
		if (at >= qs->lits[i].at && at < qs->lits[i].end)
			return true;
	return false;
}

/* Whether the term of n bytes at q[at] is the tail of a contraction:
 * the "s" of "What's", the "t" of "don't", the "ll" of "we'll". */
static bool contraction(const char *q, size_t at, size_t n)
{
	static const char *const tails[] = {"s", "t", "d", "m", "ll", "re", "ve"};
	bool after =
	    (at >= 1 && q[at - 1] == '\'') || (at >= 3 && !memcmp(q + at - 3, "\xe2\x80\x99", 3));
	for (size_t i = 0; after && i < ARRAY_SIZE(tails); i++)
		if (strlen(tails[i]) == n && !strncasecmp(q + at, tails[i], n))
			return true;
	return false;
}

static void question_init(struct question *qs, const char *q, size_t qn)
{
	char t[SIM__TERM_MAX];
	size_t pos = 0, at, n;
	memset(qs, 0, sizeof(*qs));
	qs->q = q;
	qs->qn = qn;
	scan_literals(qs);
	for (size_t i = 0; i < qs->nlits; i++) {
		const char *v = q + qs->lits[i].vat;
		size_t vn = qs->lits[i].vn;
		qs->has_path =
		    qs->has_path || qs->lits[i].kind == LIT_PATH ||
		    (qs->lits[i].kind == LIT_QUOTED && vn > 1 &&
		     (v[0] == '/' || (v[0] == '~' && v[1] == '/') || (v[0] == '.' && v[1] == '/')));
	}
	while (qs->nwords < WORDS_MAX && (n = sim__next_term(q, qn, &pos, t, &at))) {
		struct word *w = &qs->words[qs->nwords];
		if (in_literal(qs, at) || contraction(q, at, n))
			continue;
		w->at = at;
		w->n = pos - at;
		w->stop = sim__is_stopword(t, n);
		memcpy(w->t, t, n);
		w->tn = sim__norm_term(w->t, n);
		w->groups = groups_of(w->t, w->tn);
		if (w->stop && !w->groups)
			continue;
		qs->groups |= w->groups;
		qs->nwords++;
	}
}

/* Whether the question holds the stemmed word t[0..n). */
static struct word *has_word(struct question *qs, const char *t, size_t n)
{
	for (size_t i = 0; i < qs->nwords; i++)
		if (qs->words[i].tn == n && !memcmp(qs->words[i].t, t, n))
			return &qs->words[i];
	return NULL;
}

/* ---- tool names ---- */

struct name_words {
	char t[NAME_WORDS][SIM__TERM_MAX];
	size_t tn[NAME_WORDS];
	size_t n;
};

/* The words of the tool part of name ("everything.get-sum": get, sum;
 * "fs.readTextFile": read, text, file), lower-cased and stemmed, the
 * generic ones dropped. */
static void split_name(const char *name, struct name_words *w)
{
	const char *dot = strchr(name, '.');
	const char *s = dot && dot[1] ? dot + 1 : name;
	size_t i = 0, n = strlen(s);
	w->n = 0;
	while (i < n && w->n < NAME_WORDS) {
		size_t a, k = 0;
		while (i < n && !text_is_alnum(s[i]))
			i++;
		a = i;
		while (i < n && text_is_alnum(s[i]) &&
		       !(i > a && text_is_alpha(s[i]) && s[i] >= 'A' && s[i] <= 'Z' &&
			 s[i - 1] >= 'a' && s[i - 1] <= 'z'))
			i++;
		if (i == a)
			continue;
		for (size_t j = a; j < i && k < SIM__TERM_MAX; j++)
			w->t[w->n][k++] = (char)text_to_lower(s[j]);
		k = sim__norm_term(w->t[w->n], k);
		if (!is_generic(w->t[w->n], k))
			w->tn[w->n++] = k;
	}
}

/* Whether the stemmed word t[0..n) of a tool name is about files. */
static bool is_file_word(const char *t, size_t n)
{
	static const char *const words[] = {"file", "path", "dir", "directory", "folder"};
	return among(words, ARRAY_SIZE(words), t, n);
}

/* How well the tool name fits the question: 2 for a word of the question
 * (a path in the question says "file"), 1 for a word of a synonym group
 * of one. *direct (may be NULL): some word is the question's own (a path
 * saying "file" is not). */
static int fit(struct question *qs, const char *name, bool *direct)
{
	struct name_words w;
	int score = 0;
	split_name(name, &w);
	if (direct)
		*direct = false;
	for (size_t i = 0; i < w.n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = w.tn[j] == w.tn[i] && !memcmp(w.t[j], w.t[i], w.tn[i]);
		if (dup)
			continue;
		if (has_word(qs, w.t[i], w.tn[i])) {
			score += 2;
			if (direct)
				*direct = true;
		} else if (qs->has_path && is_file_word(w.t[i], w.tn[i])) {
			score += 2;
		} else if (groups_of(w.t[i], w.tn[i]) & qs->groups) {
			score += 1;
		}
	}
	return score;
}

/* Mark the words of the question the tool's name says (they are what it
 * does, not what it is given). */
static void mark_name_words(struct question *qs, const char *name)
{
	struct name_words w;
	split_name(name, &w);
	for (size_t i = 0; i < qs->nwords; i++)
		for (size_t j = 0; j < w.n; j++)
			if ((w.tn[j] == qs->words[i].tn &&
			     !memcmp(w.t[j], qs->words[i].t, w.tn[j])) ||
			    (groups_of(w.t[j], w.tn[j]) & qs->words[i].groups))
				qs->words[i].used = true;
}

/* ---- reading the outputs ---- */

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t m = strlen(prefix);
	return n >= m && memcmp(s, prefix, m) == 0;
}

/* The JSON value printed on the first line of m that starts with marker,
 * or NULL (no such line, or it does not parse: cut by the output limit). */
static cJSON *printed(const struct llm_msg *m, const char *marker)
{
	const char *s = m ? m->text : NULL, *end = s ? s + m->len : NULL;
	size_t k = strlen(marker);
	while (s && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);
		if (starts(s, n, marker)) {
			const char *v = s + k;
			size_t vn = n - k;
			text_trim(&v, &vn);
			return vn ? json_parse(v, vn) : NULL;
		}
		s = nl ? nl + 1 : end;
	}
	return NULL;
}

/* The first line of m that starts with marker, as it is (NULL: none). */
static bool printed_line(const struct llm_msg *m, const char *marker)
{
	const char *s = m ? m->text : NULL, *end = s ? s + m->len : NULL;
	while (s && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		if (starts(s, (size_t)((nl ? nl : end) - s), marker))
			return true;
		s = nl ? nl + 1 : end;
	}
	return false;
}

bool sim__tools_offered(const struct llm_msg *m)
{
	const char *s = m ? m->text : NULL, *end = s ? s + m->len : NULL;
	while (s && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);
		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		if (starts(s, n, "Host tools:"))
			return true;
		s = nl ? nl + 1 : end;
	}
	return false;
}

int sim__tools_step(const char *s, size_t n)
{
	static const char mark[] = "# tools ";
	const char *p = s, *end = s ? s + n : NULL;
	while (p && (p = memmem(p, (size_t)(end - p), mark, sizeof(mark) - 1))) {
		p += sizeof(mark) - 1;
		if (end - p >= 2 && p[0] >= '1' && p[0] <= '4' && p[1] == ':')
			return p[0] - '0';
	}
	return 0;
}

/* The name for prose: on one line, no backquote (a name is the server's
 * to choose, and a reply's prose must not open a code fence), 100 bytes at
 * most. */
static void prose_name(struct buf *b, const char *name)
{
	size_t n = strlen(name), k;
	if (n > 100)
		n = text_utf8_floor(name, 100);
	for (size_t i = 0; i < n; i += k) {
		unsigned char c = (unsigned char)name[i];
		k = c < 0x80 ? 1 : text_utf8_seq_len(name + i, n - i);
		if (!k || c < 0x20 || c == 0x7f || c == '`')
			buf_putc(b, '?'), k = k ? k : 1;
		else
			buf_append(b, name + i, k);
	}
}

/* ---- turn 1: search ---- */

static void step_search(struct buf *b, struct question *qs)
{
	struct buf words;
	uint32_t added = 0;
	buf_init(&words, 0);
	for (size_t i = 0; i < qs->nwords; i++) {
		struct word *w = &qs->words[i];
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = qs->words[j].tn == w->tn && !memcmp(qs->words[j].t, w->t, w->tn);
		if (dup)
			continue;
		if (words.len)
			buf_putc(&words, ' ');
		buf_append(&words, qs->q + w->at, w->n);
	}
	/* the first word of each group the question's words are in */
	for (size_t g = 0; g < ARRAY_SIZE(synonyms); g++) {
		char t[SIM__TERM_MAX];
		size_t n = strlen(synonyms[g][0]);
		if (!(qs->groups & (1u << g)) || (added & (1u << g)))
			continue;
		memcpy(t, synonyms[g][0], n);
		n = sim__norm_term(t, n);
		added |= 1u << g;
		if (has_word(qs, t, n))
			continue;
		if (words.len)
			buf_putc(&words, ' ');
		buf_puts(&words, synonyms[g][0]);
	}
	if (!words.len) /* nothing but literals: search for them */
		buf_append(&words, qs->q, qs->qn);
	buf_puts(b, "The REPL has host tools: first I will search them for one that can answer "
		    "the question.\n\n```repl\n"
		    "# tools 1: search the host tools with the question's words\n"
		    "import json\n"
		    "hits = search_tools(");
	sim__py_str(b, words.p, words.len);
	buf_printf(b,
		   ", limit=%d)\n"
		   "print(len(hits), \"tools found\")\n"
		   "print(\"tool hits:\", json.dumps(hits))\n"
		   "```\n",
		   HITS_LIMIT);
	buf_release(&words);
}

/* ---- turn 2: the hit that fits, its schema ---- */

static char *step_info(struct question *qs, const struct llm_msg *last, const char **why)
{
	cJSON *hits = printed(last, "tool hits: "), *h;
	const char *best = NULL;
	int best_fit = 0;
	bool best_old = false;
	struct buf b;
	char *out;
	if (!cJSON_IsArray(hits)) {
		*why = "The tool search gave nothing I can read, so I will read the context: first "
		       "its type, its size and a short sample.";
		cJSON_Delete(hits);
		return NULL;
	}
	cJSON_ArrayForEach(h, hits)
	{
		const char *name = json_str(h, "name"), *desc = json_str(h, "description");
		bool old = desc && strcasestr(desc, "deprecated");
		int f;
		if (!name || !*name)
			continue;
		f = fit(qs, name, NULL);
		if (f > best_fit || (f == best_fit && f && best_old && !old))
			best = name, best_fit = f, best_old = old;
	}
	if (!best) {
		*why =
		    "No host tool fits the question, so I will read the context: first its type, "
		    "its size and a short sample.";
		cJSON_Delete(hits);
		return NULL;
	}
	buf_init(&b, 0);
	buf_puts(&b, "The tool ");
	prose_name(&b, best);
	buf_puts(&b, " fits the question: I will read its exact schema before I call it.\n\n"
		     "```repl\n# tools 2: read the schema of the tool that fits\n"
		     "import json\n"
		     "info = get_tool_info(");
	sim__py_str(&b, best, strlen(best));
	buf_puts(&b, ")\nprint(\"tool info:\", json.dumps(info))\n```\n");
	cJSON_Delete(hits);
	out = buf_detach(&b, NULL);
	return out;
}

/* ---- turn 3: the arguments, the call ---- */

enum ptype { P_STRING, P_NUMBER, P_INTEGER, P_BOOLEAN, P_ARRAY, P_OTHER };

struct param {
	const char *name;
	enum ptype type;
	enum ptype items; /* P_ARRAY: of what */
	const cJSON *enums;
	bool required;
	bool pathy;	  /* about a path or a file */
	bool urly;	  /* a URL */
	struct buf value; /* Python literal; empty: not filled */
};

static enum ptype type_of(const cJSON *schema)
{
	const cJSON *t = json_get(schema, "type"), *it;
	const char *s = NULL;
	if (cJSON_IsString(t))
		s = t->valuestring;
	else if (cJSON_IsArray(t))
		cJSON_ArrayForEach(it, t)
		{
			if (cJSON_IsString(it) && strcmp(it->valuestring, "null")) {
				s = it->valuestring;
				break;
			}
		}
	if (!s) {
		const cJSON *any = json_get(schema, "anyOf");
		if (!any)
			any = json_get(schema, "oneOf");
		if (cJSON_IsArray(any) && cJSON_GetArraySize(any) > 0)
			return type_of(cJSON_GetArrayItem(any, 0));
		return json_get(schema, "enum") ? P_STRING : P_OTHER;
	}
	return !strcmp(s, "string")    ? P_STRING
	       : !strcmp(s, "number")  ? P_NUMBER
	       : !strcmp(s, "integer") ? P_INTEGER
	       : !strcmp(s, "boolean") ? P_BOOLEAN
	       : !strcmp(s, "array")   ? P_ARRAY
				       : P_OTHER;
}

static bool name_has(const char *name, const char *const *parts)
{
	for (size_t i = 0; parts[i]; i++)
		if (strcasestr(name, parts[i]))
			return true;
	return false;
}

static void param_init(struct param *p, const char *name, const cJSON *schema, bool required)
{
	static const char *const pathy[] = {"path", "file", "dir", "folder", NULL};
	static const char *const urly[] = {"url", "uri", "link", "href", NULL};
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->type = type_of(schema);
	p->items = p->type == P_ARRAY ? type_of(json_get(schema, "items")) : P_OTHER;
	p->enums = cJSON_IsArray(json_get(schema, "enum")) ? json_get(schema, "enum") : NULL;
	p->required = required;
	p->pathy = name_has(name, pathy);
	p->urly = name_has(name, urly);
	buf_init(&p->value, 0);
}

/* The parameters of info: those of "input_schema", the required ones
 * first in the order of its "required" list; else those info's
 * "parameters" names. */
static size_t params_of(const cJSON *info, struct param *ps)
{
	const cJSON *schema = json_get(info, "input_schema"),
		    *props = json_get(schema, "properties");
	const cJSON *req = json_get(schema, "required"), *it, *r;
	size_t n = 0;
	if (cJSON_IsObject(props)) {
		if (cJSON_IsArray(req))
			cJSON_ArrayForEach(r, req)
			{
				if (!cJSON_IsString(r) || n == PARAMS_MAX)
					continue;
				it = cJSON_GetObjectItemCaseSensitive(props, r->valuestring);
				if (cJSON_IsObject(it))
					param_init(&ps[n++], it->string, it, true);
				else
					param_init(&ps[n++], r->valuestring, NULL, true);
			}
		cJSON_ArrayForEach(it, props)
		{
			bool req_too = false;
			if (n == PARAMS_MAX || !it->string)
				break;
			for (size_t i = 0; i < n && !req_too; i++)
				req_too = !strcmp(ps[i].name, it->string);
			if (!req_too)
				param_init(&ps[n++], it->string, it, false);
		}
		return n;
	}
	for (int opt = 0; opt < 2; opt++) {
		const cJSON *list =
		    json_get(json_get(info, "parameters"), opt ? "optional" : "required");
		cJSON_ArrayForEach(it, list)
		{
			const char *name = json_str(it, "name");
			if (name && n < PARAMS_MAX)
				param_init(&ps[n++], name, it, !opt);
		}
	}
	return n;
}

/* The next unused literal of kind (LIT_NUMBER: integral when asked), or
 * NULL. */
static struct lit *next_lit(struct question *qs, enum lit_kind kind, bool integral)
{
	for (size_t i = 0; i < qs->nlits; i++) {
		struct lit *l = &qs->lits[i];
		if (!l->used && l->kind == kind && (!integral || l->integral))
			return l;
	}
	return NULL;
}

static void put_lit(struct buf *b, const struct question *qs, const struct lit *l)
{
	if (l->kind == LIT_NUMBER)
		buf_puts(b, l->num);
	else
		sim__py_str(b, qs->q + l->vat, l->vn);
}

/* Whether the literal suits the parameter's type. */
static bool lit_suits(const struct param *p, const struct lit *l)
{
	if (p->type == P_NUMBER)
		return l->kind == LIT_NUMBER;
	if (p->type == P_INTEGER)
		return l->kind == LIT_NUMBER && l->integral;
	if (p->type != P_STRING)
		return false;
	if (p->pathy)
		return l->kind == LIT_PATH || l->kind == LIT_QUOTED;
	if (p->urly)
		return l->kind == LIT_URL || l->kind == LIT_QUOTED;
	return l->kind != LIT_NUMBER;
}

/* Mark the words and literals of the question that start at at as used. */
static void use_at(struct question *qs, size_t at)
{
	for (size_t k = 0; k < qs->nwords; k++)
		if (qs->words[k].at == at)
			qs->words[k].used = true;
	for (size_t k = 0; k < qs->nlits; k++)
		if (qs->lits[k].at <= at && at < qs->lits[k].end)
			qs->lits[k].used = true;
}

/* The enum value of p that the word q[at..at+n) is (case aside), or NULL. */
static const cJSON *enum_named(const struct param *p, const char *s, size_t n)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, p->enums)
	{
		if (cJSON_IsString(v) && strlen(v->valuestring) == n &&
		    !strncasecmp(v->valuestring, s, n))
			return v;
	}
	return NULL;
}

/* A parameter the question names, "from USD", "to EUR", "path /tmp/x":
 * the literal, or the word (past stopwords: "to the EUR"), right after its
 * name, a whole word of two letters or more. */
static bool fill_named(struct question *qs, struct param *p)
{
	char t[SIM__TERM_MAX];
	size_t n = strlen(p->name), pos, at, tn;
	if (n < 2 || p->type == P_ARRAY || p->type == P_OTHER || p->type == P_BOOLEAN)
		return false;
	for (size_t i = 0; i + n <= qs->qn; i++) {
		size_t e = i + n;
		if (strncasecmp(qs->q + i, p->name, n) ||
		    (i && word_byte((unsigned char)qs->q[i - 1])) ||
		    (e < qs->qn && word_byte((unsigned char)qs->q[e])) || in_literal(qs, i))
			continue;
		while (e < qs->qn && (qs->q[e] == ' ' || qs->q[e] == ':' || qs->q[e] == '='))
			e++;
		for (size_t k = 0; k < qs->nlits; k++) {
			struct lit *l = &qs->lits[k];
			if (l->at == e && !l->used && lit_suits(p, l)) {
				put_lit(&p->value, qs, l);
				l->used = true;
				return true;
			}
		}
		if (p->type != P_STRING || p->pathy || p->urly || in_literal(qs, e))
			continue;
		pos = e;
		for (int skip = 0; skip < 3 && (tn = sim__next_term(qs->q, qs->qn, &pos, t, &at));
		     skip++) {
			const cJSON *v = NULL;
			if (in_literal(qs, at))
				break;
			if (sim__is_stopword(t, tn))
				continue;
			if (p->enums && !(v = enum_named(p, qs->q + at, pos - at)))
				break;
			if (v)
				sim__py_str(&p->value, v->valuestring, strlen(v->valuestring));
			else
				sim__py_str(&p->value, qs->q + at, pos - at);
			use_at(qs, at);
			return true;
		}
	}
	return false;
}

/* A value of the enum the question names (the first one it names that is
 * not taken), case aside, as a whole word. */
static bool fill_enum(struct question *qs, struct param *p)
{
	const cJSON *v, *best = NULL;
	size_t best_at = SIZE_MAX;
	cJSON_ArrayForEach(v, p->enums)
	{
		char num[NUM_MAX];
		const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
		size_t n;
		if (cJSON_IsNumber(v)) {
			snprintf(num, sizeof(num), "%.17g", v->valuedouble);
			s = num;
		}
		if (!s || !(n = strlen(s)))
			continue;
		for (size_t i = 0; i + n <= qs->qn && i < best_at; i++) {
			bool taken = false;
			if (strncasecmp(qs->q + i, s, n) ||
			    (i && word_byte((unsigned char)qs->q[i - 1])) ||
			    (i + n < qs->qn && word_byte((unsigned char)qs->q[i + n])))
				continue;
			for (size_t k = 0; k < qs->nwords && !taken; k++)
				taken = qs->words[k].at == i && qs->words[k].used;
			for (size_t k = 0; k < qs->nlits && !taken; k++)
				taken =
				    qs->lits[k].at <= i && i < qs->lits[k].end && qs->lits[k].used;
			if (!taken) {
				best = v, best_at = i;
				break;
			}
		}
	}
	if (!best)
		return false;
	use_at(qs, best_at);
	if (cJSON_IsString(best))
		sim__py_str(&p->value, best->valuestring, strlen(best->valuestring));
	else
		buf_printf(&p->value, "%.17g", best->valuedouble);
	return true;
}

/* A file name the question holds, notes.txt (a word with an inner dot and
 * a short extension of letters), for a parameter about a path. */
static bool fill_file_word(struct question *qs, struct param *p)
{
	for (size_t i = 0; i < qs->nwords; i++) {
		struct word *w = &qs->words[i];
		const char *s = qs->q + w->at, *dot = w->used ? NULL : memrchr(s, '.', w->n);
		size_t ext = dot ? w->n - (size_t)(dot - s) - 1 : 0, k;
		if (!dot || dot == s || ext < 1 || ext > 5)
			continue;
		for (k = 1; k <= ext && text_is_alpha(dot[k]); k++)
			;
		if (k <= ext)
			continue;
		sim__py_str(&p->value, s, w->n);
		w->used = true;
		return true;
	}
	return false;
}

/* The question's content words no literal or other parameter took and the
 * tool's name does not say: "hello world" of "Echo hello world". */
static bool fill_rest(struct question *qs, struct param *ps, size_t np, struct param *p)
{
	struct buf rest;
	buf_init(&rest, 0);
	for (size_t i = 0; i < qs->nwords; i++) {
		struct word *w = &qs->words[i];
		bool pname = false;
		for (size_t k = 0; k < np && !pname; k++)
			pname = strlen(ps[k].name) == w->n &&
				!strncasecmp(ps[k].name, qs->q + w->at, w->n);
		if (w->used || w->stop || pname)
			continue;
		if (rest.len)
			buf_putc(&rest, ' ');
		buf_append(&rest, qs->q + w->at, w->n);
		w->used = true;
	}
	if (!rest.len) {
		buf_release(&rest);
		return false;
	}
	sim__py_str(&p->value, rest.p, rest.len);
	buf_release(&rest);
	return true;
}

/* Fill p from the question's literals (see the DESIGN note). */
static bool fill(struct question *qs, struct param *ps, size_t np, struct param *p)
{
	struct lit *l;
	if (p->enums)
		return fill_enum(qs, p);
	switch (p->type) {
	case P_NUMBER:
	case P_INTEGER:
		if (!(l = next_lit(qs, LIT_NUMBER, p->type == P_INTEGER)))
			return false;
		put_lit(&p->value, qs, l);
		l->used = true;
		return true;
	case P_STRING:
		if ((l = next_lit(qs,
				  p->pathy  ? LIT_PATH
				  : p->urly ? LIT_URL
					    : LIT_QUOTED,
				  false)) ||
		    (l = next_lit(qs, LIT_QUOTED, false)) ||
		    (!p->pathy && !p->urly &&
		     ((l = next_lit(qs, LIT_PATH, false)) || (l = next_lit(qs, LIT_URL, false))))) {
			put_lit(&p->value, qs, l);
			l->used = true;
			return true;
		}
		if (p->pathy)
			return fill_file_word(qs, p);
		/* the rest of the question only for a tool it names itself */
		return !p->urly && qs->direct && fill_rest(qs, ps, np, p);
	case P_ARRAY:
		buf_putc(&p->value, '[');
		for (size_t i = 0; i < qs->nlits; i++) {
			struct param one = *p;
			l = &qs->lits[i];
			one.type = p->items;
			if (l->used || !lit_suits(&one, l) ||
			    (p->items == P_STRING && l->kind == LIT_NUMBER))
				continue;
			if (p->value.len > 1)
				buf_puts(&p->value, ", ");
			put_lit(&p->value, qs, l);
			l->used = true;
		}
		buf_putc(&p->value, ']');
		if (p->value.len > 2)
			return true;
		buf_reset(&p->value);
		return false;
	default:
		return false;
	}
}

static bool py_identifier(const char *s)
{
	static const char *const keywords[] = {
	    "False", "None",	 "True",  "and",    "as",   "assert", "async",	"await",    "break",
	    "class", "continue", "def",	  "del",    "elif", "else",   "except", "finally",  "for",
	    "from",  "global",	 "if",	  "import", "in",   "is",     "lambda", "nonlocal", "not",
	    "or",    "pass",	 "raise", "return", "try",  "while",  "with",	"yield",    "name",
	};
	if (!*s || text_is_digit(*s))
		return false;
	for (const char *p = s; *p; p++)
		if (!text_is_alnum(*p) && *p != '_')
			return false;
	for (size_t i = 0; i < ARRAY_SIZE(keywords); i++)
		if (!strcmp(s, keywords[i]))
			return false; /* "name" is call_tool's own */
	return true;
}

static char *step_call(struct question *qs, const struct llm_msg *last, const char **why)
{
	cJSON *info = printed(last, "tool info: ");
	const cJSON *allowed = json_get(info, "allowed");
	const char *name = json_str(info, "name");
	struct param ps[PARAMS_MAX];
	size_t np = 0, i;
	bool kwargs = true, ok = true, aside = false;
	struct buf b;
	char *out = NULL;
	if (!cJSON_IsObject(info) || !name || !*name) {
		*why =
		    "The tool's schema gave nothing I can read, so I will read the context: first "
		    "its type, its size and a short sample.";
		goto out;
	}
	if (cJSON_IsFalse(allowed)) {
		*why =
		    "That tool may not be called here, so I will read the context: first its type, "
		    "its size and a short sample.";
		goto out;
	}
	fit(qs, name, &qs->direct);
	mark_name_words(qs, name);
	np = params_of(info, ps);
	/* named first (they say which literal is whose), then in order */
	for (i = 0; i < np; i++)
		fill_named(qs, &ps[i]);
	for (i = 0; i < np; i++)
		if (ps[i].required && !ps[i].value.len && !fill(qs, ps, np, &ps[i]))
			ok = false;
	if (!ok) {
		*why = "The question does not give every argument that tool needs, so I will read "
		       "the context: first its type, its size and a short sample.";
		goto out;
	}
	/* a call the question gives nothing to: only a tool it names itself
	 * ("Get the tiny image" and get-tiny-image, not "Which environment
	 * variables ...?" and get-env, reached by a synonym) */
	for (i = 0, ok = false; i < np; i++)
		ok = ok || ps[i].value.len;
	/* ... and one that leaves every literal of the question aside ("How
	 * many files are in /tmp/x?" is no call of a tool that takes no path) */
	for (i = 0; i < qs->nlits; i++)
		aside = aside || !qs->lits[i].used;
	if (!ok && (!qs->direct || aside)) {
		*why = "That tool would take nothing from the question, so I will read the "
		       "context: first its type, its size and a short sample.";
		goto out;
	}
	for (i = 0; i < np; i++)
		if (ps[i].value.len && !py_identifier(ps[i].name))
			kwargs = false;
	buf_init(&b, 0);
	buf_puts(&b, "The schema says what ");
	prose_name(&b, name);
	buf_puts(&b, " takes, and the question gives it: I will call it.\n\n"
		     "```repl\n# tools 3: call the tool with the question's values\nimport json\n"
		     "r = call_tool(");
	sim__py_str(&b, name, strlen(name));
	if (!kwargs)
		buf_puts(&b, ", {");
	for (i = 0, ok = false; i < np; i++) {
		if (!ps[i].value.len)
			continue;
		if (kwargs) {
			buf_printf(&b, ", %s=", ps[i].name);
		} else {
			if (ok)
				buf_puts(&b, ", ");
			sim__py_str(&b, ps[i].name, strlen(ps[i].name));
			buf_puts(&b, ": ");
		}
		buf_append(&b, ps[i].value.p, ps[i].value.len);
		ok = true;
	}
	if (!kwargs)
		buf_putc(&b, '}');
	buf_puts(&b, ")\nprint(\"tool result:\", json.dumps(r, default=str))\n```\n");
	out = buf_detach(&b, NULL);
out:
	for (i = 0; i < np; i++)
		buf_release(&ps[i].value);
	cJSON_Delete(info);
	return out;
}

/* ---- turn 4: the answer ---- */

/* The text of a printed result: a str as it is, another value as JSON. */
static char *result_text(const cJSON *r)
{
	const char *s;
	size_t n;
	char *t;
	if (cJSON_IsString(r)) {
		s = r->valuestring;
		n = strlen(s);
		text_trim(&s, &n);
		return xstrndup(s, n);
	}
	t = json_print(r);
	return t;
}

/* Whether FINAL(text) reads back as text: its parentheses balance (the
 * reply parser takes FINAL's argument to the matching ')'), it opens no
 * code fence and holds no FINAL of its own. */
static bool final_safe(const char *t)
{
	int depth = 0;
	for (const char *p = t; *p; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && --depth < 0)
			return false;
	}
	return depth == 0 && *t && !strstr(t, "```") && !strstr(t, "FINAL(") &&
	       !strstr(t, "FINAL_VAR(");
}

static char *step_answer(const struct llm_msg *last, const char **why)
{
	cJSON *r = printed(last, "tool result: ");
	char *t, *out;
	if (!r) {
		if (printed_line(last, "tool result: ")) {
			/* printed but cut by the output limit: the value is whole in r */
			return xstrdup("The tool answered; its result is longer than the output "
				       "shows, so I answer with the value itself.\n\n```repl\n"
				       "# tools 4: answer with the tool's result\n"
				       "import json\n"
				       "answer[\"content\"] = r if isinstance(r, str) else "
				       "json.dumps(r)\n"
				       "answer[\"ready\"] = True\n"
				       "print(\"final answer:\", len(answer[\"content\"]), "
				       "\"characters\")\n```\n");
		}
		*why = "The tool call failed, so I will read the context: first its type, its size "
		       "and a short sample.";
		return NULL;
	}
	t = result_text(r);
	cJSON_Delete(r);
	if (!t || !*t) {
		free(t);
		*why = "The tool gave an empty result, so I will read the context: first its type, "
		       "its size and a short sample.";
		return NULL;
	}
	if (final_safe(t))
		out = xasprintf("FINAL(%s)", t);
	else
		out = xstrdup(
		    "The tool answered; I answer with its result as it is.\n\n```repl\n"
		    "# tools 4: answer with the tool's result\n"
		    "import json\n"
		    "answer[\"content\"] = r if isinstance(r, str) else json.dumps(r)\n"
		    "answer[\"ready\"] = True\n"
		    "print(\"final answer:\", \" \".join(answer[\"content\"].split())[:300])\n"
		    "```\n");
	free(t);
	return out;
}

char *sim__tools_reply(const char *q, size_t qn, int step, const struct llm_msg *last,
		       const char **why)
{
	struct question qs;
	const char *dummy;
	struct buf b;
	if (!why)
		why = &dummy;
	*why = NULL;
	question_init(&qs, q, qn);
	switch (step) {
	case 0:
		if (!qn)
			return NULL;
		buf_init(&b, 0);
		step_search(&b, &qs);
		return buf_detach(&b, NULL);
	case 1:
		return step_info(&qs, last, why);
	case 2:
		return step_call(&qs, last, why);
	case 3:
		return step_answer(last, why);
	default: /* after the answer's code: the usual strategy */
		return NULL;
	}
}

char *sim__tools_result_seen(const struct llm_msg *msgs, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		cJSON *r;
		char *t;
		if (msgs[i].role != LLM_USER || !(r = printed(&msgs[i], "tool result: ")))
			continue;
		t = result_text(r);
		cJSON_Delete(r);
		if (t && *t)
			return t;
		free(t);
	}
	return NULL;
}
