/* SPDX-License-Identifier: MIT */
/* corpus/corpus_csv.c -- a CSV or TSV table with a header row as a JSON
 * corpus: the text "[{"column": "value", ...},\n{...}]", one object per
 * row, all values strings, the documents table pointing at each object.
 *
 * DESIGN
 * RFC 4180 as spreadsheets write it: fields separated by ',' (TSV: a tab),
 * records by "\r\n" or "\n", a field in double quotes may hold separators,
 * newlines and "" for a quote; a lone '"' inside an unquoted field is kept
 * as it is, a blank line is skipped. The first record names the columns:
 * one that is missing (an empty or repeated name, or a row of numbers
 * only) is an error, as is a row whose field count differs, each naming
 * the file and the line. Rows are written straight into the corpus buffer
 * (a memfd, struct tbuf) as they are read; a row's id is its "id" column
 * (else "docid"), else its 1-based row number, its title the "title"
 * column, its metadata the other short columns.
 */
#include "corpus_int.h"

#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

/* The fields of one record: their bytes back to back in v, and where each
 * starts and ends. */
struct row {
	struct buf v;
	size_t *off, *len;
	size_t n, cap;
};

static void row_add(struct row *r, size_t off, size_t len)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 16;
		r->off = xrealloc(r->off, r->cap * sizeof(*r->off));
		r->len = xrealloc(r->len, r->cap * sizeof(*r->len));
	}
	r->off[r->n] = off;
	r->len[r->n++] = len;
}

static bool at_eol(const char *s, size_t n, size_t i)
{
	return s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] == '\n'));
}

static size_t count_nl(const char *s, size_t n)
{
	size_t k = 0;
	for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + n - p))); p++)
		k++;
	return k;
}

/* Read the record at *i into r, skipping blank lines; *line counts lines
 * (*start gets the record's first). Returns 1, 0 at the end of the text,
 * or -1 with *why. */
static int next_record(const char *s, size_t n, size_t *i, size_t *line, size_t *start, char sep,
		       struct row *r, const char **why)
{
	r->n = 0;
	buf_reset(&r->v);
	while (*i < n && at_eol(s, n, *i)) {
		*i += s[*i] == '\r' ? 2 : 1;
		(*line)++;
	}
	if (*i >= n)
		return 0;
	*start = *line;
	for (;;) {
		size_t from = r->v.len;
		if (*i < n && s[*i] == '"') {
			(*i)++;
			for (;;) {
				const char *q = memchr(s + *i, '"', n - *i);
				size_t m;
				if (!q) {
					*why = "a quoted field has no closing quote";
					return -1;
				}
				m = (size_t)(q - (s + *i));
				*line += count_nl(s + *i, m);
				if (buf_append(&r->v, s + *i, m))
					goto big;
				*i += m + 1;
				if (*i < n && s[*i] == '"') {
					if (buf_putc(&r->v, '"'))
						goto big;
					(*i)++;
					continue;
				}
				break;
			}
			if (*i < n && s[*i] != sep && !at_eol(s, n, *i)) {
				*why = "a quoted field goes on after its closing quote";
				return -1;
			}
		} else {
			size_t j = *i;
			while (j < n && s[j] != sep && !at_eol(s, n, j))
				j++;
			if (buf_append(&r->v, s + *i, j - *i))
				goto big;
			*i = j;
		}
		row_add(r, from, r->v.len - from);
		if (*i >= n)
			return 1;
		if (s[*i] == sep) {
			(*i)++;
			continue;
		}
		*i += s[*i] == '\r' ? 2 : 1;
		(*line)++;
		return 1;
	}
big:
	*why = "a record is too long";
	return -1;
}

/* s[0..n) as a JSON string, appended to o. */
static int esc(struct buf *o, const char *s, size_t n)
{
	size_t from = 0;
	int rc = buf_putc(o, '"');
	for (size_t i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
			      : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
		char u[8];
		if (!e && c >= 0x20)
			continue;
		if (!e) {
			snprintf(u, sizeof(u), "\\u%04x", c);
			e = u;
		}
		rc = buf_append(o, s + from, i - from) || buf_puts(o, e);
		from = i + 1;
	}
	if (!rc)
		rc = buf_append(o, s + from, n - from) || buf_putc(o, '"');
	return rc ? RLM_ETOOBIG : 0;
}

static bool all_numbers(const struct row *r)
{
	for (size_t c = 0; c < r->n; c++) {
		const char *f = r->v.p + r->off[c];
		size_t l = r->len[c], k = 0;
		if (l && (f[0] == '-' || f[0] == '+'))
			k++;
		if (k == l)
			return false;
		for (; k < l; k++)
			if ((f[k] < '0' || f[k] > '9') && f[k] != '.')
				return false;
	}
	return true;
}

/* The column named `name` (exactly, else in any case), or -1. */
static long column(const struct row *h, const char *name)
{
	size_t l = strlen(name);
	for (int pass = 0; pass < 2; pass++)
		for (size_t c = 0; c < h->n; c++)
			if (h->len[c] == l &&
			    (pass ? strncasecmp : strncmp)(h->v.p + h->off[c], name, l) == 0)
				return (long)c;
	return -1;
}

/* The header: every column named, once; its names as JSON strings in
 * names (each followed by ':'), their places in noff. */
static int header(const struct row *h, const char *w, size_t line, struct buf *names,
		  size_t *noff, struct rlm_err *err)
{
	for (size_t c = 0; c < h->n; c++) {
		const char *f = h->v.p + h->off[c];
		if (!h->len[c])
			return rlm_err_set(err, RLM_EPARSE,
					   "%s line %zu: column %zu has no name (the first row "
					   "must be a header naming every column)",
					   w, line, c + 1);
		for (size_t d = 0; d < c; d++)
			if (h->len[d] == h->len[c] && memcmp(h->v.p + h->off[d], f, h->len[c]) == 0)
				return rlm_err_set(err, RLM_EPARSE,
						   "%s line %zu: column %zu repeats the name '%.*s' "
						   "of column %zu",
						   w, line, c + 1, (int)RLM_MIN(h->len[c], 80), f,
						   d + 1);
		noff[c] = names->len;
		if (esc(names, f, h->len[c]) || buf_putc(names, ':'))
			return rlm_err_set(err, RLM_ETOOBIG, "%s: the header is too long", w);
	}
	noff[h->n] = names->len;
	if (all_numbers(h))
		return rlm_err_set(err, RLM_EPARSE,
				   "%s line %zu: the first row holds only numbers: a header row "
				   "naming the columns is required",
				   w, line);
	return 0;
}

/* The id and metadata line of row r (data row number k). */
static void row_identity(const struct row *h, const struct row *r, long id_col, long title_col,
			 size_t k, char **id, char **info)
{
	cJSON *o = cJSON_CreateObject(), *meta = cJSON_CreateObject();
	if (id_col >= 0 && r->len[id_col])
		*id = xstrndup(r->v.p + r->off[id_col], r->len[id_col]);
	else
		*id = xasprintf("%zu", k);
	json_add_str(o, "id", *id);
	json_add(o, "path", cJSON_CreateNull());
	if (title_col >= 0)
		json_add_strn(o, "title", r->v.p + r->off[title_col], r->len[title_col]);
	else
		json_add(o, "title", cJSON_CreateNull());
	for (size_t c = 0; c < r->n; c++) {
		char *key;
		if ((long)c == id_col || (long)c == title_col || r->len[c] > CORPUS_META_STR)
			continue;
		key = xstrndup(h->v.p + h->off[c], h->len[c]);
		json_add_strn(meta, key, r->v.p + r->off[c], r->len[c]);
		free(key);
	}
	json_add(o, "meta", meta);
	*info = json_print(o);
	cJSON_Delete(o);
}

static int decode(const char *name, const char *s, size_t len, char sep, size_t max, bool heap,
		  struct corpus **out, struct rlm_err *err)
{
	struct corpus_int *ci = NULL;
	struct row h = {0}, r = {0};
	struct buf names, obj;
	struct tbuf b;
	char what[600];
	const char *why = NULL, *nul;
	size_t i = 0, line = 1, start = 1, cap = 0, *noff = NULL, bad;
	long id_col, title_col;
	int rc, got;
	*out = NULL;
	snprintf(what, sizeof(what), "'%s'", name ? name : "-");
	buf_init(&h.v, 0);
	buf_init(&r.v, 0);
	buf_init(&names, 0);
	buf_init(&obj, 0);
	corpus__tb_init(&b, max, heap);
	if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		i = 3; /* a byte-order mark */
	nul = memchr(s, 0, len);
	if (!text_utf8_valid(s, nul ? (size_t)(nul - s) : len, &bad)) {
		rc = rlm_err_set(err, RLM_EPARSE, "invalid UTF-8 in %s at byte %zu (line %zu)",
				 what, bad, 1 + count_nl(s, bad));
		goto out;
	}
	if (nul) {
		rc = rlm_err_set(err, RLM_EPARSE, "%s contains NUL bytes (a binary file?)", what);
		goto out;
	}
	got = next_record(s, len, &i, &line, &start, sep, &h, &why);
	if (got <= 0) {
		rc = got < 0 ? rlm_err_set(err, RLM_EPARSE, "%s line %zu: %s", what, line, why)
			     : rlm_err_set(err, RLM_EINVAL,
					   "%s is empty: a header row naming the columns is required",
					   what);
		goto out;
	}
	noff = xmalloc((h.n + 1) * sizeof(*noff));
	if ((rc = header(&h, what, start, &names, noff, err)))
		goto out;
	id_col = column(&h, "id");
	if (id_col < 0)
		id_col = column(&h, "docid");
	title_col = column(&h, "title");
	ci = corpus_alloc(CORPUS_CSV, name);
	ci->c.json = true;
	if ((rc = corpus__tb_reserve(&b, 1)))
		goto grow;
	b.p[b.len++] = '[';
	while ((got = next_record(s, len, &i, &line, &start, sep, &r, &why)) > 0) {
		char *id, *info;
		if (r.n != h.n) {
			rc = rlm_err_set(err, RLM_EPARSE,
					 "%s line %zu: %zu field%s, but the header has %zu", what,
					 start, r.n, r.n == 1 ? "" : "s", h.n);
			goto out;
		}
		buf_reset(&obj);
		if (ci->c.n_docs)
			buf_puts(&obj, ",\n");
		buf_putc(&obj, '{');
		for (size_t c = 0; c < r.n; c++) {
			if (c)
				buf_putc(&obj, ',');
			buf_append(&obj, names.p + noff[c], noff[c + 1] - noff[c]);
			if (esc(&obj, r.v.p + r.off[c], r.len[c])) {
				rc = RLM_ETOOBIG;
				goto grow;
			}
		}
		if (buf_putc(&obj, '}')) {
			rc = RLM_ETOOBIG;
			goto grow;
		}
		if ((rc = corpus__tb_reserve(&b, obj.len)))
			goto grow;
		memcpy(b.p + b.len, obj.p, obj.len);
		b.len += obj.len;
		b.p[b.len] = '\0';
		row_identity(&h, &r, id_col, title_col, ci->c.n_docs + 1, &id, &info);
		{
			size_t skip = ci->c.n_docs ? 2 : 0;
			corpus_add_doc(&ci->c, &cap, b.len - obj.len + skip, obj.len - skip, id, info);
		}
	}
	if (got < 0) {
		rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: %s", what, line, why);
		goto out;
	}
	if (!ci->c.n_docs) {
		rc = rlm_err_set(err, RLM_EINVAL, "%s has a header but no rows", what);
		goto out;
	}
	if ((rc = corpus__tb_reserve(&b, 1)))
		goto grow;
	b.p[b.len++] = ']';
	b.p[b.len] = '\0';
	if ((rc = corpus__tb_finish(&b, ci, true))) {
		rc = rlm_err_set(err, rc, "cannot keep the rows of %s: %s", what, strerror(-rc));
		goto out;
	}
	*out = &ci->c;
	ci = NULL;
	goto out;
grow:
	rc = rc == RLM_ETOOBIG && max
		 ? rlm_err_set(err, rc, "%s is larger than %zu bytes as JSON", what, max)
		 : rlm_err_set(err, rc, "%s line %zu: cannot grow the corpus buffer: %s", what,
			       start, rc == RLM_ETOOBIG ? "too big" : strerror(-rc));
out:
	corpus__tb_release(&b);
	if (ci)
		corpus_free(&ci->c);
	free(noff);
	buf_release(&names);
	buf_release(&obj);
	buf_release(&h.v);
	buf_release(&r.v);
	free(h.off);
	free(h.len);
	free(r.off);
	free(r.len);
	return rc;
}

int corpus_from_csv_buf(const char *name, const char *buf, size_t len, char sep,
			struct corpus **out, struct rlm_err *err)
{
	return decode(name, buf, len, sep, 0, false, out, err);
}

int corpus__load_csv(int fd, const char *path, size_t size, size_t max, char sep, bool heap,
		     struct corpus **out, struct rlm_err *err)
{
	void *map;
	int rc;
	*out = NULL;
	if (size == 0)
		return rlm_err_set(err, RLM_EINVAL,
				   "'%s' is empty: a header row naming the columns is required",
				   path);
	if (size > max)
		return rlm_err_set(err, RLM_ETOOBIG, "'%s' is larger than %zu bytes", path, max);
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return rlm_err_set(err, -errno, "cannot map '%s': %s", path, strerror(errno));
	madvise(map, size, MADV_SEQUENTIAL);
	rc = decode(path, map, size, sep, max, heap, out, err);
	munmap(map, size);
	return rc;
}

char corpus__csv_sep(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	return n > 4 && strcasecmp(path + n - 4, ".tsv") == 0 ? '\t' : ',';
}
