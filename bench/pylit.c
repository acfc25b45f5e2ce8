/* SPDX-License-Identifier: MIT */
/* bench/pylit.c -- Python literals as datasets store their gold answers
 * (OOLONG's "['entity']", "[1542]", "[datetime.date(2023, 3, 4)]"), read
 * the way ast.literal_eval reads them, into cJSON.
 *
 * DESIGN
 * A recursive descent over the subset of Python's grammar that such golds
 * use: lists and tuples (nested, a trailing comma allowed, "(x)" is x and
 * "(x,)" a tuple, both become arrays), strings, integers, floats, True,
 * False, None, a unary sign on a number, and datetime.date(Y, M, D), which
 * literal_eval refuses but OOLONG reads with strptime. Strings follow the
 * tokenizer: '...' "..." and their triple-quoted forms, prefixes u, r and
 * their capitals (b and f are refused), adjacent literals joined, and every
 * escape of a str literal but \N{...}: \\ \' \" \a \b \f \n \r \t \v,
 * backslash-newline, octal \o to \ooo, \xhh, \uXXXX and \UXXXXXXXX; an
 * unknown escape keeps its backslash, as Python does. Code points that
 * UTF-8 cannot hold (surrogates) and NUL (a C string ends there) are
 * refused rather than altered, and so is text that is not UTF-8. Integers must fit a double exactly
 * (|v| <= 2^53), so a gold is never silently rounded. Nesting stops at 64 levels. Anything else
 * (dicts, sets, names, comments, complex numbers, leading zeros) is an error naming the byte
 * offset, never a guess.
 */
#include "score.h"

#include "../common/json.h"
#include "../common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PYLIT_MAX_DEPTH 64

struct lit {
	const char *s;
	size_t n, i;
	struct rlm_err *err;
};

static int fail(struct lit *p, const char *what)
{
	return rlm_err_set(p->err, RLM_EINVAL, "bad Python literal at byte %zu: %s", p->i, what);
}

static bool at_end(const struct lit *p)
{
	return p->i >= p->n;
}

static int peek(const struct lit *p, size_t k)
{
	return p->i + k < p->n ? (unsigned char)p->s[p->i + k] : -1;
}

static void skip_space(struct lit *p)
{
	while (!at_end(p) && text_is_space(p->s[p->i]))
		p->i++;
}

static bool is_name(int c)
{
	return text_is_alnum(c) || c == '_' || c >= 0x80;
}

static int hex_val(int c)
{
	if (text_is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Append code point cp to b as UTF-8. */
static int put_cp(struct lit *p, struct buf *b, uint32_t cp)
{
	if (cp == 0)
		return fail(p, "a NUL character in a string is not supported");
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return fail(p, "a string escape names no Unicode scalar value");
	if (cp < 0x80) {
		buf_putc(b, (char)cp);
	} else if (cp < 0x800) {
		buf_putc(b, (char)(0xc0 | cp >> 6));
		buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		buf_putc(b, (char)(0xe0 | cp >> 12));
		buf_putc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
		buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	} else {
		buf_putc(b, (char)(0xf0 | cp >> 18));
		buf_putc(b, (char)(0x80 | (cp >> 12 & 0x3f)));
		buf_putc(b, (char)(0x80 | (cp >> 6 & 0x3f)));
		buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	}
	return 0;
}

/* The escape after a backslash at p->i (which is past the backslash). */
static int escape(struct lit *p, struct buf *b)
{
	static const char simple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
	int c = peek(p, 0), digits = 0, v;
	uint32_t cp = 0;
	const char *q;
	if (c < 0)
		return fail(p, "a string ends in a backslash");
	if (c == '\n') {
		p->i++;
		return 0;
	}
	for (q = simple; *q; q += 2)
		if (c == q[0]) {
			p->i++;
			buf_putc(b, q[1]);
			return 0;
		}
	if (c >= '0' && c <= '7') {
		while (digits < 3 && (v = peek(p, 0)) >= '0' && v <= '7') {
			cp = cp * 8 + (uint32_t)(v - '0');
			p->i++;
			digits++;
		}
		return put_cp(p, b, cp);
	}
	if (c == 'x' || c == 'u' || c == 'U') {
		int want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
		p->i++;
		for (; digits < want; digits++) {
			if ((v = hex_val(peek(p, 0))) < 0)
				return fail(p,
					    "a \\x, \\u or \\U escape without all its hex digits");
			cp = cp * 16 + (uint32_t)v;
			p->i++;
		}
		return put_cp(p, b, cp);
	}
	if (c == 'N')
		return fail(p, "\\N{...} escapes are not supported");
	buf_putc(b, '\\'); /* unknown: kept, as Python does */
	return 0;
}

/* A string's prefix: u or r, in either case, one of them at most. */
static bool prefix_char(int c)
{
	return c == 'u' || c == 'U' || c == 'r' || c == 'R';
}

/* One string literal at p->i (its prefix included) appended to b. */
static int string_part(struct lit *p, struct buf *b)
{
	bool raw = false;
	int q;
	size_t nq;
	if (prefix_char(peek(p, 0))) {
		raw = peek(p, 0) == 'r' || peek(p, 0) == 'R';
		p->i++;
	}
	q = peek(p, 0);
	nq = peek(p, 1) == q && peek(p, 2) == q ? 3 : 1;
	p->i += nq;
	for (;;) {
		int c = peek(p, 0);
		if (c < 0)
			return fail(p, "a string is not closed");
		if (c == q && (nq == 1 || (peek(p, 1) == q && peek(p, 2) == q))) {
			p->i += nq;
			return 0;
		}
		if (c == '\n' && nq == 1)
			return fail(p, "a line ends inside a string");
		p->i++;
		if (c != '\\') {
			buf_putc(b, (char)c);
		} else if (raw) {
			/* r'\'' is a backslash and a quote: the quote does not close */
			buf_putc(b, '\\');
			if (!at_end(p))
				buf_putc(b, p->s[p->i++]);
		} else {
			int rc = escape(p, b);
			if (rc)
				return rc;
		}
	}
}

static bool string_start(const struct lit *p)
{
	size_t k = prefix_char(peek(p, 0)) ? 1 : 0;
	return peek(p, k) == '\'' || peek(p, k) == '"';
}

/* Adjacent string literals, joined. */
static int string_lit(struct lit *p, cJSON **out)
{
	struct buf b = BUF_INIT;
	int rc = 0;
	do {
		if ((rc = string_part(p, &b)))
			break;
		skip_space(p);
	} while (string_start(p));
	if (!rc)
		*out = cJSON_CreateString(b.p);
	buf_release(&b);
	return rc;
}

/* An integer or a float, with its sign; sign is -1, 1, or 0 for none. */
static int number(struct lit *p, int sign, cJSON **out)
{
	char tmp[64];
	size_t st = p->i, o = 0, digits = 0;
	bool is_float = false, expo = false, nonzero = false;
	double v;
	while (!at_end(p)) {
		int c = peek(p, 0);
		if (o >= sizeof(tmp) - 3)
			return fail(p, "a number of over 60 characters");
		if (text_is_digit(c)) {
			nonzero |= c != '0' && !is_float;
			digits += !is_float;
			tmp[o++] = (char)c;
		} else if (c == '_' && p->i > st && text_is_digit(p->s[p->i - 1]) &&
			   text_is_digit(peek(p, 1))) {
			/* between digits only: left out */
		} else if (c == '.' && !is_float) {
			is_float = true;
			tmp[o++] = '.';
		} else if ((c == 'e' || c == 'E') && !expo && o && strcmp(tmp, ".") != 0) {
			is_float = expo = true;
			tmp[o++] = 'e';
			if (peek(p, 1) == '+' || peek(p, 1) == '-')
				tmp[o++] = p->s[++p->i];
			if (!text_is_digit(peek(p, 1)))
				return fail(p, "an exponent without digits");
		} else {
			break;
		}
		tmp[o] = '\0';
		p->i++;
	}
	tmp[o] = '\0';
	if (is_name(peek(p, 0)) || peek(p, 0) == '.')
		return fail(p, "hex, octal, binary and complex numbers are not supported");
	if (!is_float && digits > 1 && tmp[0] == '0' && nonzero)
		return fail(p, "an integer with a leading zero");
	while (!is_float && tmp[0] == '0' && tmp[1])
		memmove(tmp, tmp + 1, o--);
	if (!is_float && (o > 16 || strtoull(tmp, NULL, 10) > (1ULL << 53)))
		return fail(p, "an integer beyond 2^53 (a double would round it)");
	v = strtod(tmp, NULL);
	if (!isfinite(v))
		return fail(p, "a float out of range");
	*out = cJSON_CreateNumber(sign < 0 ? -v : v);
	return 0;
}

static bool word_at(const struct lit *p, const char *w)
{
	size_t n = strlen(w);
	return p->n - p->i >= n && memcmp(p->s + p->i, w, n) == 0 && !is_name(peek(p, n));
}

static int value(struct lit *p, int depth, cJSON **out);

/* datetime.date(Y, M, D) at p->i, as the string "YYYY-MM-DD". */
static int date_call(struct lit *p, cJSON **out)
{
	static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	long v[3];
	char s[48];
	p->i += strlen("datetime.date");
	skip_space(p);
	if (peek(p, 0) != '(')
		return fail(p, "want '(' after datetime.date");
	p->i++;
	for (int k = 0; k < 3; k++) {
		size_t st;
		skip_space(p);
		st = p->i;
		v[k] = 0;
		while (text_is_digit(peek(p, 0)) && p->i - st < 5)
			v[k] = v[k] * 10 + (p->s[p->i++] - '0');
		if (p->i == st || text_is_digit(peek(p, 0)))
			return fail(p, "want a year, a month and a day in datetime.date");
		if (p->i - st > 1 && p->s[st] == '0') /* Python: a SyntaxError */
			return fail(p, "an integer with a leading zero in datetime.date");
		skip_space(p);
		if (peek(p, 0) != (k < 2 ? ',' : ')'))
			return fail(p,
				    k < 2 ? "want ',' in datetime.date" : "want ')' after the day");
		p->i++;
	}
	if (v[0] < 1 || v[0] > 9999 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > days[v[1] - 1] ||
	    (v[1] == 2 && v[2] == 29 && !((v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0)))
		return fail(p, "datetime.date holds no real date");
	snprintf(s, sizeof(s), "%04ld-%02ld-%02ld", v[0], v[1], v[2]);
	*out = cJSON_CreateString(s);
	return 0;
}

/* A list "[...]" or a parenthesized value or tuple "(...)". */
static int sequence(struct lit *p, int depth, cJSON **out)
{
	int close = p->s[p->i] == '[' ? ']' : ')';
	bool paren = close == ')', comma = false;
	cJSON *arr = cJSON_CreateArray(), *first = NULL;
	size_t n = 0;
	int rc = 0;
	p->i++;
	for (;;) {
		cJSON *v = NULL;
		skip_space(p);
		if (peek(p, 0) == close)
			break;
		if ((rc = value(p, depth + 1, &v)))
			goto out;
		if (n++ == 0 && paren)
			first = cJSON_Duplicate(v, true);
		json_add(arr, NULL, v);
		skip_space(p);
		comma = peek(p, 0) == ',';
		if (comma) {
			p->i++;
		} else if (peek(p, 0) != close) {
			rc = fail(p, close == ']' ? "want ',' or ']'" : "want ',' or ')'");
			goto out;
		}
	}
	p->i++;
	if (paren && n == 1 && !comma) { /* (x) is x */
		cJSON_Delete(arr);
		arr = first;
		first = NULL;
	}
	*out = arr;
	arr = NULL;
out:
	cJSON_Delete(arr);
	cJSON_Delete(first);
	return rc;
}

static int value(struct lit *p, int depth, cJSON **out)
{
	int c, sign = 0;
	if (depth > PYLIT_MAX_DEPTH)
		return fail(p, "nested too deep");
	skip_space(p);
	c = peek(p, 0);
	if (c == '[' || c == '(')
		return sequence(p, depth, out);
	if (string_start(p))
		return string_lit(p, out);
	if (text_is_alpha(c)) {
		size_t k = 1;
		while (k < 3 && is_name(peek(p, k)))
			k++;
		if (peek(p, k) == '\'' || peek(p, k) == '"')
			return fail(
			    p, "bytes, f-strings and other prefixed strings are not supported");
	}
	if (word_at(p, "True") || word_at(p, "False") || word_at(p, "None")) {
		*out = c == 'T'	  ? cJSON_CreateTrue()
		       : c == 'F' ? cJSON_CreateFalse()
				  : cJSON_CreateNull();
		p->i += c == 'F' ? 5 : 4;
		return 0;
	}
	if (p->n - p->i >= 13 && memcmp(p->s + p->i, "datetime.date", 13) == 0 &&
	    !is_name(peek(p, 13)))
		return date_call(p, out);
	if (c == '-' || c == '+') { /* one sign, as ast.literal_eval takes */
		sign = c == '-' ? -1 : 1;
		p->i++;
		skip_space(p);
		c = peek(p, 0);
		if (c == '-' || c == '+')
			return fail(p, "a second sign (ast.literal_eval takes one)");
	}
	if (text_is_digit(c) || (c == '.' && text_is_digit(peek(p, 1))))
		return number(p, sign, out);
	if (c < 0)
		return fail(p, "the text ends where a value should be");
	return fail(p, "want a list, tuple, string, number, True, False, None or datetime.date");
}

int bench_pylit_parse(const char *s, size_t len, struct cJSON **out, struct rlm_err *err)
{
	struct lit p = {s, len, 0, err};
	cJSON *v = NULL;
	int rc;
	*out = NULL;
	size_t bad;
	if (memchr(s, '\0', len))
		return rlm_err_set(err, RLM_EINVAL, "bad Python literal: it holds a NUL byte");
	if (!text_utf8_valid(s, len, &bad))
		return rlm_err_set(err, RLM_EINVAL, "bad Python literal at byte %zu: not UTF-8",
				   bad);
	if ((rc = value(&p, 0, &v)))
		return rc;
	skip_space(&p);
	if (!at_end(&p)) {
		cJSON_Delete(v);
		return fail(&p, "text after the value");
	}
	*out = v;
	return 0;
}
