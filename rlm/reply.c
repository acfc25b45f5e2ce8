/* SPDX-License-Identifier: MIT */
/* rlm/reply.c -- reading a root model's reply: ```repl blocks, other
 * fences, and FINAL(...) / FINAL_VAR(...) outside them.
 *
 * DESIGN
 * One walk over the lines: a line outside fences either opens a fence
 * (then the walk runs to its closing line and records a block or counts
 * another language's fence) or is checked for a FINAL_VAR( or FINAL( at
 * its start; the first of each is kept and read once the walk is done.
 * Lines end at '\n'; a '\r' before it belongs to the line end (CRLF
 * replies). The text may hold NUL bytes; nothing relies on a terminator.
 *
 * Choices the header leaves open:
 * - ~~~ is not a fence (only backticks are, as the prompts ask for them).
 * - An untagged ``` fence is a fence of another language: skipped, not run.
 * - The info string's first word is compared without regard to case.
 * - An unterminated block left with no code once its cut last line is
 *   dropped is no block at all.
 * - FINAL( with no ')' anywhere after it takes the rest of its line.
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/common.h"
#include "../common/text.h"

struct line {
	size_t start, end; /* [start, end): the line without its line end */
	size_t next;	   /* start of the next line (len at the last one) */
	bool eol;	   /* ended by '\n' (false: the text ended mid-line) */
};

static void line_at(const char *t, size_t len, size_t pos, struct line *l)
{
	const char *nl = memchr(t + pos, '\n', len - pos);
	l->start = pos;
	if (nl) {
		l->end = (size_t)(nl - t);
		l->next = l->end + 1;
		l->eol = true;
		if (l->end > pos && t[l->end - 1] == '\r')
			l->end--;
	} else {
		l->end = len;
		l->next = len;
		l->eol = false;
		if (l->end > pos && t[l->end - 1] == '\r')
			l->end--;
	}
}

/* Skip up to three spaces of indentation; returns the offset after them,
 * or SIZE_MAX when the line is indented more (not a fence). */
static size_t fence_indent(const char *t, const struct line *l)
{
	size_t i = l->start;
	while (i < l->end && t[i] == ' ' && i - l->start < 4)
		i++;
	return i - l->start > 3 ? SIZE_MAX : i;
}

enum fence_kind { FENCE_NONE, FENCE_RUN, FENCE_OTHER };

/* Is l an opening fence? Sets *ticks to its backtick count. */
static enum fence_kind opening_fence(const char *t, const struct line *l, bool python,
				     size_t *ticks)
{
	size_t i = fence_indent(t, l), n = 0, w, wlen;
	if (i == SIZE_MAX)
		return FENCE_NONE;
	while (i + n < l->end && t[i + n] == '`')
		n++;
	if (n < 3)
		return FENCE_NONE;
	i += n;
	/* A backtick info string is inline code, not a fence (CommonMark). */
	if (memchr(t + i, '`', l->end - i))
		return FENCE_NONE;
	*ticks = n;
	while (i < l->end && (t[i] == ' ' || t[i] == '\t'))
		i++;
	w = i;
	while (i < l->end && !text_is_space(t[i]) && t[i] != '{')
		i++;
	wlen = i - w;
	if (wlen == 4 && strncasecmp(t + w, "repl", 4) == 0)
		return FENCE_RUN;
	if (python && ((wlen == 6 && strncasecmp(t + w, "python", 6) == 0) ||
		       (wlen == 2 && strncasecmp(t + w, "py", 2) == 0) ||
		       (wlen == 7 && strncasecmp(t + w, "python3", 7) == 0)))
		return FENCE_RUN;
	return FENCE_OTHER;
}

/* Does l close a fence of `ticks` backticks? */
static bool closing_fence(const char *t, const struct line *l, size_t ticks)
{
	size_t i = fence_indent(t, l), n = 0;
	if (i == SIZE_MAX)
		return false;
	while (i + n < l->end && t[i + n] == '`')
		n++;
	if (n < ticks)
		return false;
	for (i += n; i < l->end; i++)
		if (t[i] != ' ' && t[i] != '\t')
			return false;
	return true;
}

static void add_block(struct reply *r, size_t *cap, size_t off, size_t len, bool closed)
{
	if (r->n_blocks == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		r->blocks = xrealloc(r->blocks, *cap * sizeof(*r->blocks));
	}
	r->blocks[r->n_blocks++] = (struct reply_block){off, len, closed};
}

/* Trim blanks, then one level of quotes ("x", 'x', `x`, """x""", '''x'''). */
static void strip(const char *t, size_t *off, size_t *len)
{
	size_t a = *off, b = *off + *len;
	while (a < b && text_is_space(t[a]))
		a++;
	while (b > a && text_is_space(t[b - 1]))
		b--;
	if (b - a >= 6 && (memcmp(t + a, "\"\"\"", 3) == 0 || memcmp(t + a, "'''", 3) == 0) &&
	    memcmp(t + a, t + b - 3, 3) == 0) {
		a += 3;
		b -= 3;
	} else if (b - a >= 2 && (t[a] == '"' || t[a] == '\'' || t[a] == '`') && t[b - 1] == t[a]) {
		a++;
		b--;
	}
	*off = a;
	*len = b - a;
}

/* If line l (outside fences) starts with name followed by '(', return the
 * offset after the '(' else SIZE_MAX. */
static size_t call_at(const char *t, const struct line *l, const char *name)
{
	size_t i = l->start, n = strlen(name);
	while (i < l->end && (t[i] == ' ' || t[i] == '\t'))
		i++;
	if (l->end - i < n + 1 || memcmp(t + i, name, n) != 0 || t[i + n] != '(')
		return SIZE_MAX;
	return i + n + 1;
}

/* The argument of FINAL( starting at a: to the matching ')', else to the
 * last ')' of the text, else to the end of the line. */
static size_t final_arg_end(const char *t, size_t len, size_t a, size_t line_end)
{
	int depth = 1;
	const char *last;
	for (size_t i = a; i < len; i++) {
		if (t[i] == '(')
			depth++;
		else if (t[i] == ')' && --depth == 0)
			return i;
	}
	last = NULL;
	for (size_t i = len; i > a; i--)
		if (t[i - 1] == ')') {
			last = t + i - 1;
			break;
		}
	return last ? (size_t)(last - t) : line_end;
}

/* The first FINAL_VAR and the first FINAL line outside fences. */
struct finals {
	size_t var_line, fin_line; /* SIZE_MAX: none yet */
};

static void note_finals(const char *t, const struct line *l, struct finals *f)
{
	if (f->var_line == SIZE_MAX && call_at(t, l, "FINAL_VAR") != SIZE_MAX)
		f->var_line = l->start;
	if (f->fin_line == SIZE_MAX && call_at(t, l, "FINAL") != SIZE_MAX)
		f->fin_line = l->start;
}

void rlm_reply_parse(const char *text, size_t len, bool python, bool cut, struct reply *out)
{
	struct finals f = {SIZE_MAX, SIZE_MAX};
	size_t pos = 0, cap = 0;
	memset(out, 0, sizeof(*out));
	if (!text)
		return;
	while (pos < len) {
		struct line l;
		size_t ticks = 0, body;
		enum fence_kind k;
		line_at(text, len, pos, &l);
		k = opening_fence(text, &l, python, &ticks);
		if (k == FENCE_NONE) {
			note_finals(text, &l, &f);
			pos = l.next;
			continue;
		}
		/* Inside a fence: find its closing line. */
		body = pos = l.next;
		for (;;) {
			struct line c;
			if (pos >= len) {
				/* Unterminated: drop a last line cut mid-way. */
				size_t end = len;
				if (k == FENCE_RUN) {
					if (cut && end > body && text[end - 1] != '\n') {
						while (end > body && text[end - 1] != '\n')
							end--;
					}
					if (end > body)
						add_block(out, &cap, body, end - body, false);
				} else {
					out->other_fences++;
				}
				break;
			}
			line_at(text, len, pos, &c);
			if (closing_fence(text, &c, ticks)) {
				if (k == FENCE_RUN)
					add_block(out, &cap, body, c.start - body, true);
				else
					out->other_fences++;
				pos = c.next;
				break;
			}
			pos = c.next;
		}
	}

	if (f.var_line != SIZE_MAX) {
		struct line l;
		size_t a, b;
		line_at(text, len, f.var_line, &l);
		a = call_at(text, &l, "FINAL_VAR");
		b = a;
		while (b < l.end && text[b] != ')')
			b++;
		out->final_off = a;
		out->final_len = b - a;
		strip(text, &out->final_off, &out->final_len);
		if (out->final_len)
			out->final = REPLY_FINAL_VAR;
	}
	if (out->final == REPLY_NO_FINAL && f.fin_line != SIZE_MAX) {
		struct line l;
		size_t a, b;
		line_at(text, len, f.fin_line, &l);
		a = call_at(text, &l, "FINAL");
		b = final_arg_end(text, len, a, l.end);
		out->final = REPLY_FINAL;
		out->final_off = a;
		out->final_len = b - a;
		strip(text, &out->final_off, &out->final_len);
	}
	if (out->final == REPLY_NO_FINAL)
		out->final_off = out->final_len = 0;
}

void rlm_reply_release(struct reply *r)
{
	free(r->blocks);
	r->blocks = NULL;
	r->n_blocks = 0;
}
