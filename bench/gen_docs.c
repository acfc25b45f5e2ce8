/* SPDX-License-Identifier: MIT */
/* bench/gen_docs.c -- an S-NIAH haystack written as documents: a directory
 * of files or a JSONL file (bench_sniah_write), for the corpus loaders' scale.
 *
 * DESIGN
 * bench_sniah_generate writes into a FILE made with fopencookie, whose writer
 * cuts the stream into documents as it passes: whole lines go to the open
 * document, and the first line end at or past that document's share of
 * the bytes closes it, its '\n' held back and dropped. So 40 MB become
 * 5,000 files or 10,000 JSONL lines in one pass, with no copy of the
 * haystack in memory, and the documents joined and ended by '\n' are the
 * haystack byte for byte. The generator is told the number of documents,
 * so that the values of a multi-value key go in distinct ones.
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bench_make_dirs(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0777) < 0 && errno != EEXIST) {
				rc = -errno;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	if (!rc) {
		struct stat st;
		if (stat(path, &st) < 0)
			rc = -errno;
		else if (!S_ISDIR(st.st_mode))
			rc = -ENOTDIR;
	}
	free(p);
	return rc;
}

/* ---- documents: a haystack cut into files or JSONL lines ---- */

/* The stream bench_sniah_generate writes into when the haystack becomes
 * documents: whole lines go to the open document; a line end at or past
 * that document's share of the bytes closes it, dropping its '\n'. */
struct docw {
	enum sniah_format fmt;
	const char *path; /* the directory, or the JSONL file */
	FILE *jl;	  /* the JSONL file */
	FILE *f;	  /* the open document's file (SNIAH_DIR) */
	uint64_t total;	  /* bytes the haystack is to have */
	size_t want;	  /* documents at most */
	size_t n;	  /* documents begun */
	uint64_t at;	  /* haystack bytes seen */
	uint64_t *starts; /* haystack offset of each document; n entries */
	size_t cap;
	int width; /* digits of the numbers in names */
	bool open; /* a document is open */
	bool nl;   /* a line ended at `at`: its '\n' is held back */
	int err;   /* the first error, -errno */
};

static void dw_fail(struct docw *w)
{
	if (!w->err)
		w->err = errno ? -errno : -EIO;
}

/* Write s[0..n) into the open document: raw in a file, as the inside of a
 * JSON string in JSONL (UTF-8 passes as it is). */
static void dw_put(struct docw *w, const char *s, size_t n)
{
	size_t i = 0;
	if (w->err)
		return;
	if (w->fmt == SNIAH_DIR) {
		if (n && fwrite(s, 1, n, w->f) != n)
			dw_fail(w);
		return;
	}
	while (i < n) {
		size_t j = i;
		char e[8];
		while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\')
			j++;
		if (j > i && fwrite(s + i, 1, j - i, w->jl) != j - i) {
			dw_fail(w);
			return;
		}
		if (j == n)
			return;
		if (s[j] == '"' || s[j] == '\\')
			snprintf(e, sizeof(e), "\\%c", s[j]);
		else if (s[j] == '\n')
			snprintf(e, sizeof(e), "\\n");
		else if (s[j] == '\t')
			snprintf(e, sizeof(e), "\\t");
		else
			snprintf(e, sizeof(e), "\\u%04x", (unsigned)(unsigned char)s[j]);
		if (fputs(e, w->jl) == EOF) {
			dw_fail(w);
			return;
		}
		i = j + 1;
	}
}

static void dw_open(struct docw *w)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->starts = xrealloc(w->starts, w->cap * sizeof(*w->starts));
	}
	w->starts[w->n] = w->at;
	if (w->fmt == SNIAH_DIR) {
		char *p = xasprintf("%s/doc-%0*zu.txt", w->path, w->width, w->n);
		if (!(w->f = fopen(p, "wb")))
			dw_fail(w);
		free(p);
	} else if (fprintf(w->jl, "{\"id\":\"doc-%0*zu\",\"text\":\"", w->width, w->n) < 0) {
		dw_fail(w);
	}
	w->n++;
	w->open = true;
}

static void dw_close(struct docw *w)
{
	if (!w->open)
		return;
	if (w->fmt == SNIAH_DIR) {
		if (w->f && fclose(w->f) != 0)
			dw_fail(w);
		w->f = NULL;
	} else if (fputs("\"}\n", w->jl) == EOF) {
		dw_fail(w);
	}
	w->open = false;
}

static ssize_t dw_write(void *cookie, const char *buf, size_t size)
{
	struct docw *w = cookie;
	size_t i = 0;
	while (i < size && !w->err) {
		const char *nl;
		size_t k;
		if (w->nl) {
			w->nl = false;
			/* document n - 1 ends at the first line end past its share */
			if (w->n < w->want && w->at >= w->total * w->n / w->want)
				dw_close(w);
			else
				dw_put(w, "\n", 1);
		}
		if (!w->open)
			dw_open(w);
		nl = memchr(buf + i, '\n', size - i);
		k = nl ? (size_t)(nl - (buf + i)) : size - i;
		dw_put(w, buf + i, k);
		w->at += k;
		i += k;
		if (nl) {
			w->nl = true;
			w->at++;
			i++;
		}
	}
	if (w->err) {
		errno = -w->err;
		return -1;
	}
	return (ssize_t)size;
}

static int dw_close_fn(void *cookie)
{
	struct docw *w = cookie;
	dw_close(w); /* a held-back '\n' ends the last document */
	return w->err ? -1 : 0;
}

/* Remove the doc-*.txt files of an earlier run from dir. */
int bench_gen_clear_docs(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 8 && strncmp(e->d_name, "doc-", 4) == 0 &&
		    strcmp(e->d_name + n - 4, ".txt") == 0 &&
		    unlinkat(dirfd(d), e->d_name, 0) < 0) {
			rc = -errno;
			break;
		}
	}
	closedir(d);
	return rc;
}

/* The document of n, starting at starts[], that holds offset off. */
static size_t doc_of(const uint64_t *starts, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int bench_sniah_write(const struct sniah_opts *o, enum sniah_format fmt, size_t docs, const char *path,
		struct sniah_item *item, size_t *n_docs, size_t *needle_doc)
{
	cookie_io_functions_t io = {NULL, dw_write, NULL, dw_close_fn};
	struct docw w;
	FILE *f;
	int rc;
	*n_docs = *needle_doc = 0;
	if (fmt == SNIAH_TEXT) {
		if (!(f = fopen(path, "wb")))
			return -errno;
		rc = bench_sniah_generate(o, f, item);
		if (fclose(f) != 0 && !rc)
			rc = errno ? -errno : -EIO;
		*n_docs = 1;
		return rc;
	}
	if (docs == 0 || docs > SNIAH_MAX_DOCS || (o->values > 1 && docs < (size_t)o->values))
		return -EINVAL;
	memset(&w, 0, sizeof(w));
	w.fmt = fmt;
	w.path = path;
	w.total = o->tokens * 4;
	w.want = docs;
	w.width = 5;
	for (size_t k = docs - 1; k >= 100000; k /= 10)
		w.width++;
	if (fmt == SNIAH_DIR) {
		if ((rc = bench_make_dirs(path)) || (rc = bench_gen_clear_docs(path)))
			return rc;
	} else if (!(w.jl = fopen(path, "wb"))) {
		return -errno;
	}
	if (!(f = fopencookie(&w, "w", io))) {
		rc = -errno;
		goto out;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	rc = bench_sniah_generate_parts(o, docs, f, item);
	if (fclose(f) != 0 && !rc)
		rc = w.err ? w.err : -EIO;
	if (!rc)
		rc = w.err;
	*n_docs = w.n;
	for (int i = 0; !rc && i < item->n_values; i++) {
		item->value_docs[i] = doc_of(w.starts, w.n, item->value_offs[i]);
		if (i && item->value_docs[i] == item->value_docs[i - 1])
			rc = -EINVAL; /* documents of a few lines: values share one */
	}
	if (!rc)
		*needle_doc = item->value_docs[0];
out:
	if (w.jl && fclose(w.jl) != 0 && !rc)
		rc = errno ? -errno : -EIO;
	free(w.starts);
	return rc;
}
