/* SPDX-License-Identifier: MIT */
/* sim/sim_keys.c -- the literals of a question that the root policy
 * searches for before it reads: quoted phrases, identifiers, numbers,
 * dotted and non-ASCII names, and whether the question lists them. */
#include "sim_int.h"
#include "../common/text.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether the UTF-8 sequence at s[0..n) is punctuation or a space that ends
 * a token: general punctuation (U+2000..U+206F: dashes, curly quotes,
 * ellipsis), CJK punctuation (U+3000..U+303F) and fullwidth ASCII
 * punctuation (U+FF01..U+FF0F, U+FF1A..U+FF20, U+FF3B..U+FF40), U+00A0..U+00BF
 * (no-break space, guillemets, inverted marks). Its length in *len. */
static bool utf8_punct(const char *s, size_t n, size_t *len)
{
	uint32_t cp = 0;
	*len = text_utf8_decode(s, n, &cp);
	if (!*len) {
		*len = 1;
		return true;
	}
	return (cp >= 0xa0 && cp <= 0xbf) || (cp >= 0x2000 && cp <= 0x206f) ||
	       (cp >= 0x3000 && cp <= 0x303f) || (cp >= 0xff01 && cp <= 0xff0f) ||
	       (cp >= 0xff1a && cp <= 0xff20) || (cp >= 0xff3b && cp <= 0xff40);
}

/* Whether the token t[0..n) starts like a name: a capital (ASCII, Latin-1,
 * Latin Extended-A, Greek, Cyrillic) or a letter of a script without case
 * (CJK, kana, hangul: U+2E80 and up). "Zürich", "Ærø", "東京"; not
 * "código" or "heißt", words of a question asked in another language. */
static bool name_start(const char *t, size_t n)
{
	uint32_t cp = (unsigned char)t[0];
	if (cp >= 0x80 && !text_utf8_decode(t, n, &cp))
		return false;
	return (cp >= 'A' && cp <= 'Z') || (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) ||
	       (cp >= 0x100 && cp < 0x180 && !(cp & 1)) || (cp >= 0x391 && cp <= 0x3a9) ||
	       (cp >= 0x400 && cp <= 0x42f) || cp >= 0x2e80;
}

/* The kind of the token t[0..n) when it is a literal worth searching for
 * that sim_next_key does not find, else -1: a number of two groups or more
 * (20.0.0, 2023-04-18, 10:42) or of 5 digits; a name with an inner dot
 * between letters (Node.js, example.com); a name (name_start) of 4 bytes or
 * more with non-ASCII letters (Zürich, Ærø, 東京タワー). */
static int extra_kind(const char *t, size_t n)
{
	size_t digits = 0, letters = 0, high = 0, groups = 0;
	bool inner_dot = false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c >= 0x80)
			high++;
		else if (text_is_digit(c))
			digits++, groups += !i || !text_is_digit(t[i - 1]);
		else if (text_is_alpha(c))
			letters++;
		else if (c == '.' && i && i + 1 < n && text_is_alpha(t[i - 1]) &&
			 text_is_alpha(t[i + 1]))
			inner_dot = true;
	}
	if (!letters && !high && digits && (groups >= 2 || digits >= 5) && n >= 3)
		return SIM__KEY_NUMBER;
	if (n >= 4 && high && name_start(t, n))
		return SIM__KEY_NAME;
	if (n >= 4 && inner_dot && !high)
		return SIM__KEY_NAME;
	return -1;
}

/* Whether the word t[0..n) is in a script with case (it starts below the
 * CJK range), so that at the start of a question its capital is no sign of
 * a name ("Cuál", "Кто"). */
static bool case_word(const char *t, size_t n)
{
	uint32_t cp = (unsigned char)t[0];
	if (cp >= 0x80 && !text_utf8_decode(t, n, &cp))
		return false;
	return cp < 0x2e80;
}

/* The next token of q[*pos..n) that extra_kind takes: runs of letters,
 * digits, non-ASCII letters and inner '_', '-', '.', ':', '/', with a
 * possessive "'s" and trailing punctuation dropped; the first word of the
 * question only when it is in a script without case, or has a dot or is a
 * number (Node.js, 20.0.0). */
static bool next_extra(const char *q, size_t n, size_t *pos, struct sim__key *k)
{
	size_t i = *pos, len;
	bool first = i == 0; /* the first word: a capital says nothing */
	while (i < n) {
		size_t s, e;
		while (i < n) {
			unsigned char c = (unsigned char)q[i];
			if (text_is_alnum(c) || c == '_')
				break;
			if (c >= 0x80 && !utf8_punct(q + i, n - i, &len))
				break;
			i += c >= 0x80 ? len : 1;
		}
		for (s = i; i < n;) {
			unsigned char c = (unsigned char)q[i];
			if (text_is_alnum(c) || c == '_' || c == '-' || c == '.' || c == ':' ||
			    c == '/')
				i++;
			else if (c >= 0x80 && !utf8_punct(q + i, n - i, &len))
				i += len;
			else
				break;
		}
		e = i;
		if (e - s >= 2 && q[e - 2] == '\'' && q[e - 1] == 's')
			e -= 2;
		while (e > s && strchr("-.:/_", q[e - 1]))
			e--;
		if (e > s && extra_kind(q + s, e - s) >= 0 &&
		    !(first && case_word(q + s, e - s) && !memchr(q + s, '.', e - s))) {
			k->s = q + s, k->n = e - s,
			k->kind = (enum sim__key_kind)extra_kind(q + s, e - s);
			*pos = i;
			return true;
		}
		first = false;
	}
	*pos = n;
	return false;
}

static int key_cmp(const void *a, const void *b)
{
	const struct sim__key *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* Whether q[0..n) is what separates the items of a list: a comma, "and",
 * "or", "&" or "/", with blanks ("Node.js 20.0.0" is one thing, not two). */
static bool list_gap(const char *q, size_t n)
{
	bool sep = false;
	for (size_t i = 0; i < n;) {
		if (q[i] == ' ')
			i++;
		else if (q[i] == ',' || q[i] == '&' || q[i] == '/')
			i++, sep = true;
		else if (n - i >= 3 && !strncasecmp(q + i, "and", 3) &&
			 (n - i == 3 || q[i + 3] == ' '))
			i += 3, sep = true;
		else if (n - i >= 2 && !strncasecmp(q + i, "or", 2) &&
			 (n - i == 2 || q[i + 2] == ' '))
			i += 2, sep = true;
		else
			return false;
	}
	return sep;
}

size_t sim__question_keys(const char *q, size_t n, struct sim__key *k, bool *every)
{
	struct sim__key all[2 * SIM__KEYS_MAX];
	size_t na = 0, nk = 0, pos = 0, len;
	const char *s;
	bool quoted, any_quoted = false;
	while (na < ARRAY_SIZE(all) && sim_next_key(q, n, &pos, &s, &len, &quoted)) {
		all[na++] = (struct sim__key){s, len, quoted ? SIM__KEY_QUOTED : SIM__KEY_IDENT};
		any_quoted = any_quoted || quoted;
	}
	for (pos = 0; !any_quoted && na < ARRAY_SIZE(all) && next_extra(q, n, &pos, &all[na]);)
		na++;
	qsort(all, na, sizeof(all[0]), key_cmp);
	for (size_t i = 0; i < na && nk < SIM__KEYS_MAX; i++) {
		bool inside = false;
		if (any_quoted && all[i].kind != SIM__KEY_QUOTED)
			continue;
		for (size_t j = 0; j < na && !inside; j++)
			inside = j != i && all[j].s <= all[i].s &&
				 all[j].s + all[j].n >= all[i].s + all[i].n &&
				 (all[j].n > all[i].n || j < i);
		if (!inside)
			k[nk++] = all[i];
	}
	*every = nk >= 2;
	for (size_t i = 1; i < nk && *every; i++)
		*every =
		    list_gap(k[i - 1].s + k[i - 1].n, (size_t)(k[i].s - (k[i - 1].s + k[i - 1].n)));
	return nk;
}
