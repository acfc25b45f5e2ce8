/* SPDX-License-Identifier: MIT */
/* corpus/corpus_json.c -- structured contexts: a .json file (its value),
 * JSONL records without text, and a CSV/TSV table, each one JSON document
 * whose parsed value is the REPL's `context` (corpus.json).
 *
 * DESIGN
 * A .json file is mapped like a text file, not copied, and checked once by
 * a strict streaming scanner (no tree: a 40 MB file costs one pass and a
 * small stack, RFC 8259 as Python's json.loads reads it, nesting capped so
 * that json.loads never hits its recursion limit). When its value is an
 * array of objects the scanner notes where each element lies, and the
 * documents table points at them, so search and citations name records;
 * each element is then parsed alone (cJSON) for its id and metadata line.
 * Any other value is one document. CSV/TSV (RFC 4180) and JSONL records
 * are turned into one JSON array text, "[{...},\n{...}]", built straight
 * into a memfd (struct tbuf) like a JSONL corpus, its table pointing at
 * each record. A record's metadata line holds its id, its "title" and its
 * other scalar fields (strings of at most CORPUS_META_STR bytes): never the whole
 * record twice.
 */
#include "corpus_int.h"

#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_DEPTH 500	   /* json.loads recurses per level: stay well below 1000 */
#define DROP_STEP ((size_t)4 << 20)

/* ---- the scanner ---- */

struct span {
	size_t off, len;
};

struct scan {
	const char *s;
	size_t n, i;
	const char *why;     /* what is wrong at i */
	struct span *el;     /* top-level array elements, when `records` */
	size_t n_el, cap_el;
	bool want_el;        /* note the elements of a top-level array */
	bool all_objects;    /* every element noted is an object */
	char top;            /* first byte of the value: '{', '[', '"', ... */
};

static void ws(struct scan *k)
{
	while (k->i < k->n) {
		char c = k->s[k->i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		k->i++;
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int fail(struct scan *k, const char *why)
{
	k->why = why;
	return -1;
}

/* A string at k->i (its '"'). Bytes are UTF-8 already (checked before). */
static int string(struct scan *k)
{
	const char *s = k->s;
	k->i++;
	for (;;) {
		unsigned char c;
		if (k->i >= k->n)
			return fail(k, "unterminated string");
		c = (unsigned char)s[k->i];
		if (c == '"') {
			k->i++;
			return 0;
		}
		if (c == '\\') {
			char e;
			if (k->i + 1 >= k->n)
				return fail(k, "unterminated string");
			e = s[k->i + 1];
			if (e == 'u') {
				if (k->i + 6 > k->n || !is_hex(s[k->i + 2]) || !is_hex(s[k->i + 3]) ||
				    !is_hex(s[k->i + 4]) || !is_hex(s[k->i + 5]))
					return fail(k, "invalid \\u escape");
				k->i += 6;
				continue;
			}
			if (!strchr("\"\\/bfnrt", e) || !e)
				return fail(k, "invalid escape in a string");
			k->i += 2;
			continue;
		}
		if (c < 0x20)
			return fail(k, "control character in a string");
		k->i++;
	}
}

static int number(struct scan *k)
{
	const char *s = k->s;
	size_t n = k->n;
	if (s[k->i] == '-')
		k->i++;
	if (k->i >= n || !is_digit(s[k->i]))
		return fail(k, "invalid number");
	if (s[k->i] == '0')
		k->i++;
	else
		while (k->i < n && is_digit(s[k->i]))
			k->i++;
	if (k->i < n && s[k->i] == '.') {
		k->i++;
		if (k->i >= n || !is_digit(s[k->i]))
			return fail(k, "invalid number");
		while (k->i < n && is_digit(s[k->i]))
			k->i++;
	}
	if (k->i < n && (s[k->i] == 'e' || s[k->i] == 'E')) {
		k->i++;
		if (k->i < n && (s[k->i] == '+' || s[k->i] == '-'))
			k->i++;
		if (k->i >= n || !is_digit(s[k->i]))
			return fail(k, "invalid number");
		while (k->i < n && is_digit(s[k->i]))
			k->i++;
	}
	return 0;
}

static int literal(struct scan *k, const char *w)
{
	size_t l = strlen(w);
	if (k->n - k->i < l || memcmp(k->s + k->i, w, l) != 0)
		return fail(k, "unexpected character");
	k->i += l;
	return 0;
}

static void note_el(struct scan *k, size_t off)
{
	if (k->n_el == k->cap_el) {
		k->cap_el = k->cap_el ? 2 * k->cap_el : 64;
		k->el = xrealloc(k->el, k->cap_el * sizeof(*k->el));
	}
	k->el[k->n_el++] = (struct span){off, 0};
}

/* Check that s[0..n) is exactly one JSON value (whitespace around it).
 * Returns 0, or -1 with k->why and k->i where it went wrong. */
static int scan(struct scan *k)
{
	char st[MAX_DEPTH];
	int depth = 0;
	enum { VALUE, KEY, AFTER } state = VALUE;
	ws(k);
	if (k->i >= k->n)
		return fail(k, "no JSON value");
	k->top = k->s[k->i];
	k->all_objects = true;
	for (;;) {
		char c;
		ws(k);
		if (k->i >= k->n)
			return depth || state != AFTER ? fail(k, "unexpected end of the text") : 0;
		c = k->s[k->i];
		if (state == VALUE) {
			if (depth == 1 && k->want_el && st[0] == '[') {
				note_el(k, k->i);
				k->all_objects &= c == '{';
			}
			if (c == '{' || c == '[') {
				if (depth == MAX_DEPTH)
					return fail(k, "nested too deep (more than 500 levels)");
				st[depth++] = c;
				k->i++;
				ws(k);
				if (k->i < k->n && k->s[k->i] == (c == '{' ? '}' : ']')) {
					k->i++;
					depth--;
					state = AFTER;
				} else {
					state = c == '{' ? KEY : VALUE;
				}
				continue;
			}
			if (c == '"' ? string(k)
			    : c == '-' || is_digit(c) ? number(k)
			    : c == 't'		      ? literal(k, "true")
			    : c == 'f'		      ? literal(k, "false")
			    : c == 'n'		      ? literal(k, "null")
						      : fail(k, "unexpected character"))
				return -1;
			state = AFTER;
		} else if (state == KEY) {
			if (c != '"')
				return fail(k, "expected a string key");
			if (string(k))
				return -1;
			ws(k);
			if (k->i >= k->n || k->s[k->i] != ':')
				return fail(k, "expected ':'");
			k->i++;
			state = VALUE;
		} else {
			if (depth == 1 && k->want_el && st[0] == '[' && k->n_el &&
			    !k->el[k->n_el - 1].len)
				k->el[k->n_el - 1].len = k->i - k->el[k->n_el - 1].off;
			if (depth == 0)
				return fail(k, "more text after the JSON value");
			if (c == ',') {
				k->i++;
				state = st[depth - 1] == '{' ? KEY : VALUE;
			} else if (c == (st[depth - 1] == '{' ? '}' : ']')) {
				k->i++;
				depth--;
			} else {
				return fail(k, st[depth - 1] == '{' ? "expected ',' or '}'"
								    : "expected ',' or ']'");
			}
		}
	}
}

/* The element spans were noted at their start; an element's length is
 * set when the value after it ends, i.e. at the ',' or ']' (trailing
 * whitespace included): trim it. */
static void trim_spans(struct scan *k)
{
	for (size_t i = 0; i < k->n_el; i++) {
		struct span *e = &k->el[i];
		while (e->len && strchr(" \t\r\n", k->s[e->off + e->len - 1]))
			e->len--;
	}
}

static size_t line_of(const char *s, size_t at)
{
	size_t line = 1;
	for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + at - p))); p++)
		line++;
	return line;
}

/* Check s[0..n) is UTF-8 JSON: 0, or RLM_EPARSE with err naming `what`
 * (quoted already), the byte and the line. */
static int check_json(struct scan *k, const char *what, const char *s, size_t n,
		      struct rlm_err *err)
{
	size_t bad;
	k->s = s;
	k->n = n;
	k->i = 0;
	if (!text_utf8_valid(s, n, &bad))
		return rlm_err_set(err, RLM_EPARSE, "invalid UTF-8 in %s at byte %zu", what, bad);
	if (scan(k))
		return rlm_err_set(err, RLM_EPARSE, "%s is not valid JSON: %s at byte %zu (line %zu)",
				   what, k->why, k->i, line_of(s, k->i));
	trim_spans(k);
	return 0;
}

bool corpus__json_valid(const char *s, size_t n)
{
	struct scan k = {0};
	k.s = s;
	k.n = n;
	return text_utf8_valid(s, n, NULL) && scan(&k) == 0;
}

/* ---- identity of a record ---- */

/* The documents of a JSON value s[0..n) that k scanned, at offsets base +
 * (their place in s): one per element of an array of objects, else one
 * for the whole value, named single_id. */
static void json_docs(struct corpus *c, const struct scan *k, size_t base, const char *single_id,
		      const char *path)
{
	size_t cap = 0;
	char *id, *info;
	const char *bad_key;
	if (k->top == '[' && k->n_el && k->all_objects) {
		for (size_t i = 0; i < k->n_el; i++) {
			cJSON *j = json_parse(k->s + k->el[i].off, k->el[i].len);
			/* The text was checked to be UTF-8: the id is. (Were it
			 * not, id and info stay NULL: the index names it.) */
			(void)corpus__record_identity(j, NULL, true, i + 1, NULL, &id, &info,
						      &bad_key);
			cJSON_Delete(j);
			corpus_add_doc(c, &cap, base + k->el[i].off, k->el[i].len, id, info);
		}
		return;
	}
	id = xstrdup(single_id);
	{
		cJSON *o = cJSON_CreateObject();
		json_add_str(o, "id", id);
		json_add(o, "path", path ? cJSON_CreateString(path) : cJSON_CreateNull());
		json_add(o, "title", cJSON_CreateNull());
		json_add(o, "meta", cJSON_CreateObject());
		info = json_print(o);
		cJSON_Delete(o);
	}
	corpus_add_doc(c, &cap, base, k->n, id, info);
}

/* ---- a .json file, JSON text from memory ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

int corpus__load_json(int fd, const char *path, size_t size, size_t max, struct corpus **out,
		      struct rlm_err *err)
{
	struct scan k = {.want_el = true};
	struct corpus_int *ci;
	char what[600];
	size_t skip = 0;
	void *map;
	int rc;
	*out = NULL;
	if (size == 0)
		return rlm_err_set(err, RLM_EINVAL, "'%s' is empty", path);
	if (size > max)
		return rlm_err_set(err, RLM_ETOOBIG, "'%s' is larger than %zu bytes", path, max);
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return rlm_err_set(err, -errno, "cannot map '%s': %s", path, strerror(errno));
	if (size >= 3 && memcmp(map, "\xef\xbb\xbf", 3) == 0)
		skip = 3; /* a byte-order mark: not part of the value */
	snprintf(what, sizeof(what), "'%s'", path);
	madvise(map, size, MADV_SEQUENTIAL);
	rc = check_json(&k, what, (const char *)map + skip, size - skip, err);
	madvise(map, size, MADV_NORMAL);
	if (rc) {
		free(k.el);
		munmap(map, size);
		return rc;
	}
	ci = corpus_alloc(CORPUS_JSON, path);
	ci->map = map;
	ci->map_len = size;
	ci->c.buf = (const char *)map + skip;
	ci->c.len = size - skip;
	ci->c.mapped = true;
	ci->c.json = true;
	json_docs(&ci->c, &k, 0, base_name(path), path);
	free(k.el);
	*out = &ci->c;
	return 0;
}

int corpus_from_json(const char *text, size_t len, struct corpus **out, struct rlm_err *err)
{
	struct scan k = {.want_el = true};
	struct corpus_int *ci;
	struct tbuf b;
	int rc;
	*out = NULL;
	if ((rc = check_json(&k, "the context", text, len, err))) {
		free(k.el);
		return rc;
	}
	ci = corpus_alloc(CORPUS_JSON, NULL);
	ci->c.json = true;
	json_docs(&ci->c, &k, 0, "context", NULL);
	free(k.el);
	corpus__tb_init(&b, 0, false);
	if ((rc = corpus__tb_grow(&b, len)) == 0) {
		memcpy(b.p, text, len);
		b.len = len;
		b.p[len] = '\0';
		rc = corpus__tb_finish(&b, ci, true);
	}
	if (rc) {
		corpus__tb_release(&b);
		corpus_free(&ci->c);
		return rlm_err_set(err, rc, "cannot keep the context: %s", strerror(-rc));
	}
	*out = &ci->c;
	return 0;
}

/* ---- JSONL records ---- */

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* Append s[0..n) to b (within its cap). */
static int tb_put(struct tbuf *b, const char *s, size_t n)
{
	int rc = corpus__tb_reserve(b, n);
	if (rc)
		return rc;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int corpus__jsonl_records(const char *name, const char *w, const char *s, size_t len, size_t i,
			  int drop, bool heap, struct corpus **out, struct rlm_err *err)
{
	struct corpus_int *ci = corpus_alloc(CORPUS_JSONL, name);
	struct tbuf b;
	size_t cap = 0, line = 0, dropped = 0, lines_before = 0;
	int rc = 0;
	*out = NULL;
	/* the lines before i (blank, or a byte-order mark) */
	lines_before = i ? line_of(s, i) - 1 : 0;
	line = lines_before;
	ci->c.json = true;
	corpus__tb_init(&b, 0, heap);
	if ((rc = tb_put(&b, "[", 1)))
		goto grow;
	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : len - i, bad;
		line++;
		if (!blank(s + i, n)) {
			struct scan k = {0};
			cJSON *j;
			char *id, *info;
			const char *bad_key;
			while (n && strchr(" \t\r", s[i + n - 1]))
				n--;
			if (!text_utf8_valid(s + i, n, &bad)) {
				rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: invalid UTF-8 at byte %zu",
						 w, line, bad);
				goto fail;
			}
			k.s = s + i;
			k.n = n;
			if (scan(&k)) {
				rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: not valid JSON: %s", w,
						 line, k.why);
				goto fail;
			}
			if (k.top != '{') {
				rc = rlm_err_set(err, RLM_EPARSE,
						 "%s line %zu: not a JSON object (the file's first "
						 "record is one without text: every line must be one)",
						 w, line);
				goto fail;
			}
			if (ci->c.n_docs && (rc = tb_put(&b, ",\n", 2)))
				goto grow;
			j = json_parse(s + i, n);
			(void)corpus__record_identity(j, NULL, true, line, NULL, &id, &info,
						      &bad_key); /* UTF-8: checked above */
			cJSON_Delete(j);
			corpus_add_doc(&ci->c, &cap, b.len, n, id, info);
			if ((rc = tb_put(&b, s + i, n)))
				goto grow;
		}
		i += (nl ? (size_t)(nl - (s + i)) : len - i) + 1;
		if (drop && i - dropped >= DROP_STEP) {
			size_t to = RLM_MIN(i, len) & ~(corpus_page_size() - 1);
			if (to > dropped)
				madvise((void *)(uintptr_t)(s + dropped), to - dropped, drop);
			dropped = RLM_MAX(dropped, to);
		}
	}
	if (ci->c.n_docs == 0) {
		rc = rlm_err_set(err, RLM_EINVAL, "no documents in %s", w);
		goto fail;
	}
	if ((rc = tb_put(&b, "]", 1)))
		goto grow;
	if ((rc = corpus__tb_finish(&b, ci, true))) {
		rc = rlm_err_set(err, rc, "cannot keep the records of %s: %s", w, strerror(-rc));
		goto fail;
	}
	*out = &ci->c;
	return 0;
grow:
	rc = rlm_err_set(err, rc, "%s line %zu: cannot grow the corpus buffer: %s", w, line,
			 rc == RLM_ETOOBIG ? "too big" : strerror(-rc));
fail:
	corpus__tb_release(&b);
	corpus_free(&ci->c);
	return rc;
}
