/* SPDX-License-Identifier: MIT */
/* corpus/corpus.c -- loading a context: a mapped text file, JSONL documents or
 * standard input, and the buffer they are built in (directories:
 * corpus/corpus_dir.c).
 *
 * DESIGN
 * A single text file is mapped read-only and checked in place (one pass of
 * memchr for NUL and one of text_utf8_valid), so 40 MB costs page faults and
 * two scans, no copy. Everything else is built in one growing buffer (struct
 * tbuf): a memfd mapped shared and writable, grown with ftruncate and
 * mremap, then unmapped, sealed like the REPL's context memfd, and mapped
 * again read-only. Its pages are the memfd's: after the build the
 * controller holds none of them until it reads the text, and
 * corpus_release_pages() can drop them again. JSONL is mapped and decoded
 * line by line with cJSON, and the pages of the input behind the decoder
 * are dropped as it goes (MADV_DONTNEED for a file, MADV_REMOVE for
 * standard input read into a memfd), so a 40 MB JSONL peaks near 40 MB,
 * not 80. Every error message, here and in corpus/corpus_dir.c, names the
 * file (and line); codes are -errno for system calls, RLM_ETOOBIG for the
 * size cap, RLM_EPARSE for bad content and RLM_EINVAL for an empty corpus
 * or a path of the wrong kind.
 */
#include "corpus_int.h"

#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX ((size_t)4 << 30)
#define TB_MIN	    ((size_t)64 << 10) /* first size of a growing buffer */
#define DROP_STEP   ((size_t)4 << 20)  /* JSONL input released in steps of this */
#define READY_STEP  ((size_t)1 << 20)  /* memfd pages populated in steps of this */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

struct corpus_int *corpus_alloc(enum corpus_kind kind, const char *source)
{
	struct corpus_int *ci = xcalloc(1, sizeof(*ci));
	ci->c.kind = kind;
	ci->c.source = source ? xstrdup(source) : NULL;
	ci->c.fd = -1;
	return ci;
}

#if defined(__SANITIZE_THREAD__)
#define CORPUS_NO_MREMAP 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CORPUS_NO_MREMAP 1
#endif
#endif
#ifndef CORPUS_NO_MREMAP
#define CORPUS_NO_MREMAP 0
#endif

/* Corpora load on several threads at once (rlm bench run): the cached
 * value is atomic, and each thread that finds none stores the same one. */
size_t corpus_page_size(void)
{
	static atomic_size_t ps;
	size_t v = atomic_load_explicit(&ps, memory_order_relaxed);
	if (!v) {
		long p = sysconf(_SC_PAGESIZE);
		v = p > 0 ? (size_t)p : 4096;
		atomic_store_explicit(&ps, v, memory_order_relaxed);
	}
	return v;
}

/* ---- the buffer being built ---- */

void corpus__tb_init(struct tbuf *b, size_t max, bool heap)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
	b->fd = heap ? -1 : memfd_create("rlm-corpus", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Mode 0, as the REPL's own context memfd: the worker may be handed
	 * this one, and a peer of its uid must not reopen it through /proc. */
	if (b->fd >= 0 && fchmod(b->fd, 0) < 0) {
		close(b->fd);
		b->fd = -1;
	}
}

void corpus__tb_release(struct tbuf *b)
{
	if (b->fd >= 0) {
		if (b->p)
			munmap(b->p, b->cap);
		close(b->fd);
	} else {
		free(b->p);
	}
	memset(b, 0, sizeof(*b));
	b->fd = -1;
}

/* Populate the memfd's pages up to the step past len + n (at most 8 steps
 * ahead), before the writes: a fault per page of shared memory costs about
 * half again as much as the heap's, one madvise per step about the same.
 * Best effort. */
static void tb_ready(struct tbuf *b, size_t n)
{
	size_t want;
	if (b->fd < 0 || b->ready == SIZE_MAX || b->len + n <= b->ready)
		return;
	/* not far ahead: a reservation may be much more than what comes */
	want = b->len + RLM_MIN(n, 8 * READY_STEP) + READY_STEP;
	want = RLM_MIN(want & ~(READY_STEP - 1), b->cap);
	if (want <= b->ready)
		return;
	if (madvise(b->p + b->ready, want - b->ready, MADV_POPULATE_WRITE) < 0)
		b->ready = SIZE_MAX; /* an older kernel: fault page by page */
	else
		b->ready = want;
}

int corpus__tb_grow(struct tbuf *b, size_t n)
{
	size_t need = b->len + n + 1, cap;
	void *p;
	if (need <= b->cap) {
		tb_ready(b, n + 1);
		return 0;
	}
	cap = RLM_MAX(need, RLM_MAX(b->cap * 2, TB_MIN));
	if (b->fd < 0) {
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
		return 0;
	}
	cap = (cap + corpus_page_size() - 1) & ~(corpus_page_size() - 1);
	if (ftruncate(b->fd, (off_t)cap) < 0)
		return -errno;
#if CORPUS_NO_MREMAP
	/* TSan does not intercept mremap: the range it moves keeps its shadow,
	 * and a mapping another thread makes there later reads as a race with
	 * this one. The memfd keeps the text; map it afresh. */
	if (b->p) {
		munmap(b->p, b->cap);
		b->p = NULL;
		b->cap = 0;
	}
	p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
#else
	p = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE)
		 : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
#endif
	if (p == MAP_FAILED)
		return -errno;
	/* Not into a child forked meanwhile (a worker starting on another
	 * thread): a writable mapping there, until its execve, would make
	 * sealing the memfd fail with EBUSY. */
	(void)madvise(p, cap, MADV_DONTFORK);
	b->p = p;
	b->cap = cap;
	tb_ready(b, n + 1);
	return 0;
}

int corpus__tb_reserve(struct tbuf *b, size_t n)
{
	size_t max = b->max ? b->max : SIZE_MAX / 4;
	if (n > max || b->len > max - n)
		return RLM_ETOOBIG;
	return corpus__tb_grow(b, n);
}

/* Write the documents' (offset, length) pairs at the end of the memfd, as
 * little-endian uint64s. */
static int tb_write_table(struct tbuf *b, const struct corpus *c)
{
	unsigned char t[16 * 256];
	off_t at = (off_t)b->len;
	for (size_t i = 0; i < c->n_docs;) {
		size_t k = 0, done = 0;
		for (; k < 256 && i < c->n_docs; k++, i++) {
			uint64_t v[2] = {c->docs[i].off, c->docs[i].len};
			for (int j = 0; j < 16; j++)
				t[16 * k + j] = (unsigned char)(v[j / 8] >> (8 * (j % 8)));
		}
		while (done < 16 * k) {
			ssize_t w = pwrite(b->fd, t + done, 16 * k - done, at);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += (size_t)w;
			at += w;
		}
	}
	return 0;
}

int corpus__tb_finish(struct tbuf *b, struct corpus_int *ci, bool table)
{
	void *p;
	int rc = 0;
	if (b->fd < 0) {
		ci->heap = b->p ? b->p : xstrdup("");
		ci->c.buf = ci->heap;
		ci->c.len = b->len;
		b->p = NULL;
		corpus__tb_release(b);
		return 0;
	}
	munmap(b->p, b->cap); /* the text stays in the memfd */
	b->p = NULL;
	if (ftruncate(b->fd, (off_t)b->len) < 0 || (table && (rc = tb_write_table(b, &ci->c))) ||
	    (rc = corpus__meta_write(b->fd,
				     b->len + (table ? 16 * (uint64_t)ci->c.n_docs : 0), &ci->c,
				     &ci->c.fd_meta_table)) ||
	    fcntl(b->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		0) {
		rc = rc ? rc : -errno;
		corpus__tb_release(b);
		return rc;
	}
	p = mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		corpus__tb_release(b);
		return rc;
	}
	ci->map = p;
	ci->map_len = b->len;
	ci->c.buf = p;
	ci->c.len = b->len;
	ci->c.fd = b->fd;
	ci->c.fd_table = b->len;
	b->fd = -1;
	corpus__tb_release(b);
	return 0;
}

/* Release the pages of s[from, to) (page-aligned from) behind a reader:
 * madvise `advice`. Returns the new `from`. */
static size_t drop_behind(const char *s, size_t from, size_t to, int advice)
{
	to &= ~(corpus_page_size() - 1);
	if (to > from)
		madvise((void *)(uintptr_t)(s + from), to - from, advice);
	return RLM_MAX(from, to);
}

void corpus_free(struct corpus *c)
{
	struct corpus_int *ci = (struct corpus_int *)c;
	if (!c)
		return;
	for (size_t i = 0; i < c->n_docs; i++) {
		free(c->docs[i].id);
		free(c->docs[i].info);
	}
	free(c->docs);
	free(c->source);
	free(ci->heap);
	if (ci->map)
		munmap(ci->map, ci->map_len);
	if (c->fd >= 0)
		close(c->fd);
	free(ci);
}

size_t corpus_release_pages(const struct corpus *c)
{
	return c ? corpus_release_range(c, 0, c->len) : 0;
}

size_t corpus_release_range(const struct corpus *c, size_t off, size_t len)
{
	const struct corpus_int *ci = (const struct corpus_int *)c;
	uintptr_t from, to, ps = corpus_page_size();
	if (!c || (!ci->map && !ci->view_mapped) || off >= c->len || !len)
		return 0;
	len = RLM_MIN(len, c->len - off);
	/* A read-only mapping of a file or a memfd: the pages come back from
	 * the page cache or the memfd when read again. The pages at the ends
	 * are dropped too: they are the mapping's, whoever else reads them. */
	from = (uintptr_t)(c->buf + off) & ~(ps - 1);
	to = ((uintptr_t)(c->buf + off + len) + ps - 1) & ~(ps - 1);
	if (madvise((void *)from, to - from, MADV_DONTNEED) < 0)
		return 0;
	return len;
}

/* How messages name a source: 'path', or "standard input" for "-". */
static const char *label(const char *path, char *tmp, size_t n)
{
	if (strcmp(path, "-") == 0)
		return "standard input";
	snprintf(tmp, n, "'%s'", path);
	return tmp;
}

void corpus_add_doc(struct corpus *c, size_t *cap, size_t off, size_t len, char *id, char *info)
{
	if (c->n_docs == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		c->docs = xrealloc(c->docs, *cap * sizeof(*c->docs));
	}
	if (!id)
		id = xasprintf("%zu", c->n_docs);
	c->docs[c->n_docs++] = (struct corpus_doc){off, len, id, info};
}

/* 0 when s[0..len) is UTF-8 without NUL bytes; otherwise the message says
 * which came first. `what` is already quoted (see label). */
static int check_text(const char *what, const char *s, size_t len, struct rlm_err *err)
{
	const char *nul = memchr(s, 0, len);
	size_t lim = nul ? (size_t)(nul - s) : len, bad;
	if (!text_utf8_valid(s, lim, &bad))
		return rlm_err_set(err, RLM_EPARSE, "invalid UTF-8 in %s at byte %zu", what, bad);
	if (nul)
		return rlm_err_set(err, RLM_EPARSE, "%s contains NUL bytes (a binary file?)", what);
	return 0;
}

struct corpus *corpus_from_text(const char *text, size_t len)
{
	struct corpus_int *ci = corpus_alloc(CORPUS_TEXT, NULL);
	size_t cap = 0;
	ci->heap = xmalloc(len + 1);
	if (len)
		memcpy(ci->heap, text, len);
	ci->heap[len] = '\0';
	ci->c.buf = ci->heap;
	ci->c.len = len;
	corpus_add_doc(&ci->c, &cap, 0, len, xstrdup("context"), NULL);
	return &ci->c;
}

int corpus_from_text_memfd(const char *text, size_t len, struct corpus **out)
{
	struct corpus_int *ci;
	size_t cap = 0;
	void *p;
	int fd = memfd_create("rlm-context", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc;
	*out = NULL;
	if (fd < 0)
		return -errno;
	ci = corpus_alloc(CORPUS_TEXT, NULL);
	corpus_add_doc(&ci->c, &cap, 0, len, xstrdup("context"), NULL);
	/* mode 0: see corpus__tb_init */
	rc = fchmod(fd, 0) < 0 ? -errno : file_write_all(fd, text, len);
	if (rc == 0)
		rc = corpus__meta_write(fd, len, &ci->c, &ci->c.fd_meta_table);
	if (rc == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		rc = -errno;
	p = rc == 0 && len ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : NULL;
	if (rc == 0 && p == MAP_FAILED)
		rc = -errno;
	if (rc < 0) {
		close(fd);
		corpus_free(&ci->c);
		return rc;
	}
	ci->map = p;
	ci->map_len = len;
	ci->c.buf = len ? p : "";
	ci->c.len = len;
	ci->c.fd = fd;
	ci->c.fd_table = len;
	*out = &ci->c;
	return 0;
}

struct corpus *corpus_borrow_text(const char *text, size_t len)
{
	struct corpus_int *ci = corpus_alloc(CORPUS_TEXT, NULL);
	size_t cap = 0;
	ci->c.buf = len ? text : "";
	ci->c.len = len;
	corpus_add_doc(&ci->c, &cap, 0, len, xstrdup("context"), NULL);
	return &ci->c;
}

/* ---- mapping a whole regular file ---- */

/* A file's name without its directories: its document id. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* Map fd (a regular file of st->st_size bytes, not empty). */
static int map_fd(int fd, const struct stat *st, const char *path, size_t max, void **map,
		  size_t *len, struct rlm_err *err)
{
	void *p;
	if (st->st_size == 0)
		return rlm_err_set(err, RLM_EINVAL, "'%s' is empty", path);
	if ((uint64_t)st->st_size > (uint64_t)max)
		return rlm_err_set(err, RLM_ETOOBIG, "'%s' is larger than %zu bytes", path, max);
	p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return rlm_err_set(err, -errno, "cannot map '%s': %s", path, strerror(errno));
	*map = p;
	*len = (size_t)st->st_size;
	return 0;
}

/* Keep the decoded text of a file (or of standard input) held in b as the
 * corpus of one document; b is released either way. */
static int keep_text(struct tbuf *b, const char *path, const char *what, const char *from,
		     size_t replaced, const struct corpus_opts *o, struct corpus **out,
		     struct rlm_err *err)
{
	struct corpus_int *ci;
	size_t cap = 0;
	int rc = b->len ? check_text(what, b->p, b->len, err)
			: rlm_err_set(err, RLM_EINVAL, "%s is empty", what);
	if (rc) {
		corpus__tb_release(b);
		return rc;
	}
	ci = corpus_alloc(CORPUS_TEXT, path);
	ci->c.replaced = replaced;
	corpus_add_doc(&ci->c, &cap, 0, b->len,
		       xstrdup(strcmp(path, "-") == 0 ? "stdin" : base_name(path)), NULL);
	if ((rc = corpus__tb_finish(b, ci, false))) {
		corpus_free(&ci->c);
		return rlm_err_set(err, rc, "cannot keep %s: %s", what, strerror(-rc));
	}
	if (replaced && !o->quiet)
		corpus__warn_replaced(strcmp(path, "-") == 0 ? "standard input" : path, from,
				      replaced);
	*out = &ci->c;
	return 0;
}

/* A mapped file that is not UTF-8 as it stands: decoded into a buffer of
 * its own, and unmapped. */
static int convert_text(void *map, size_t len, const struct corpus__enc *e, const char *path,
			const char *what, const struct corpus_opts *o, size_t max,
			struct corpus **out, struct rlm_err *err)
{
	struct tbuf b;
	size_t replaced = 0, bad = 0;
	int rc;
	corpus__tb_init(&b, max, o->heap);
	rc = corpus__decode(e, (const char *)map + e->bom, len - e->bom, o->strict_utf8, &b,
			    &replaced, &bad);
	munmap(map, len);
	if (rc == 0)
		return keep_text(&b, path, what, e->from, replaced, o, out, err);
	corpus__tb_release(&b);
	return corpus__decode_err(rc, e, what, bad, max, err);
}

static int load_text(int fd, const struct stat *st, const char *path, const struct corpus_opts *o,
		     size_t max, struct corpus **out, struct rlm_err *err)
{
	struct corpus_int *ci;
	struct corpus__enc e;
	char tmp[600];
	const char *what = label(path, tmp, sizeof(tmp));
	void *map;
	size_t len, cap = 0;
	int rc = map_fd(fd, st, path, max, &map, &len, err);
	if (rc)
		return rc;
	madvise(map, len, MADV_SEQUENTIAL);
	corpus__plan(map, len, o->encoding, &e);
	madvise(map, len, MADV_NORMAL);
	if (e.from || (e.bad != SIZE_MAX && !o->strict_utf8))
		return convert_text(map, len, &e, path, what, o, max, out, err);
	/* UTF-8 as it stands: mapped, a mark skipped by offset */
	if (e.bad != SIZE_MAX && e.bad < e.nul)
		rc = rlm_err_set(err, RLM_EPARSE, "invalid UTF-8 in %s at byte %zu", what,
				 e.bom + e.bad);
	else if (e.nul != SIZE_MAX)
		rc = rlm_err_set(err, RLM_EPARSE, "%s contains NUL bytes (a binary file?)", what);
	else if (len == e.bom)
		rc = rlm_err_set(err, RLM_EINVAL, "%s is empty", what);
	if (rc) {
		munmap(map, len);
		return rc;
	}
	ci = corpus_alloc(CORPUS_TEXT, path);
	ci->map = map;
	ci->map_len = len;
	ci->c.buf = (const char *)map + e.bom;
	ci->c.len = len - e.bom;
	ci->c.mapped = true;
	corpus_add_doc(&ci->c, &cap, 0, len - e.bom, xstrdup(base_name(path)), NULL);
	*out = &ci->c;
	return 0;
}

/* ---- JSONL ---- */

static const char *const text_keys[] = {"text", "content", "body", "document", "contents"};

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* Decode one non-blank line into b and the docs table. */
static int jsonl_line(struct corpus *c, size_t *cap, struct tbuf *b, const char *s, size_t n,
		      const char *what, size_t line, struct rlm_err *err)
{
	cJSON *j = NULL;
	const char *text = NULL, *text_key = NULL, *bad_key = NULL, *id_field = NULL;
	char *id = NULL, *info = NULL;
	size_t tlen, bad;
	int rc;
	if (memchr(s, 0, n))
		return rlm_err_set(err, RLM_EPARSE, "%s line %zu: contains NUL bytes", what, line);
	if (!(j = json_parse(s, n)))
		return rlm_err_set(err, RLM_EPARSE, "%s line %zu: not valid JSON", what, line);
	if (json_has_nul_escape(s, n)) {
		rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: contains a NUL character (\\u0000)",
				 what, line);
		goto out;
	}
	if (cJSON_IsString(j)) {
		text = j->valuestring;
	} else if (cJSON_IsObject(j)) {
		for (size_t k = 0; k < ARRAY_SIZE(text_keys) && !text; k++) {
			const cJSON *it = json_get(j, text_keys[k]);
			if (cJSON_IsString(it)) {
				text = it->valuestring;
				text_key = text_keys[k];
			} else if (it && !bad_key)
				bad_key = text_keys[k];
		}
		if (!text && bad_key) {
			rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: field '%s' is not a string",
					 what, line, bad_key);
			goto out;
		}
		if (!text) {
			rc = rlm_err_set(
			    err, RLM_EPARSE,
			    "%s line %zu: no text field (expected one of text, content, "
			    "body, document, contents)",
			    what, line);
			goto out;
		}
		if (corpus__record_identity(j, text_key, false, line, NULL, &id, &info, &id_field)) {
			rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: invalid UTF-8 in field '%s'",
					 what, line, id_field);
			goto out;
		}
	} else {
		rc = rlm_err_set(err, RLM_EPARSE, "%s line %zu: not a JSON object or string", what,
				 line);
		goto out;
	}
	tlen = strlen(text);
	if (!text_utf8_valid(text, tlen, &bad)) {
		rc = rlm_err_set(err, RLM_EPARSE,
				 "%s line %zu: invalid UTF-8 in the text at byte %zu", what, line,
				 bad);
		goto out;
	}
	/* Decoded text is never longer than its line, so the whole corpus fits
	 * in the input's size; the buffer is uncapped. */
	if ((rc = corpus__tb_reserve(b, tlen + 1))) {
		rc = rlm_err_set(err, rc, "%s line %zu: cannot grow the corpus buffer: %s", what,
				 line, strerror(-rc));
		goto out;
	}
	memcpy(b->p + b->len, text, tlen);
	b->len += tlen;
	b->p[b->len++] = '\n';
	b->p[b->len] = '\0';
	corpus_add_doc(c, cap, b->len - tlen - 1, tlen, id ? id : xasprintf("%zu", line), info);
	id = info = NULL;
	rc = 0;
out:
	free(id);
	free(info);
	cJSON_Delete(j);
	return rc;
}

/* Is the first record of the JSONL s[0..len) (from byte i) an object
 * with none of text_keys? Then the file is records: a list of dicts
 * (corpus/corpus_json.c). */
static bool records_only(const char *s, size_t len, size_t i)
{
	bool yes = false;
	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : len - i;
		cJSON *j;
		if (is_blank(s + i, n)) {
			i += n + 1;
			continue;
		}
		j = json_parse(s + i, n);
		yes = cJSON_IsObject(j);
		for (size_t k = 0; yes && k < ARRAY_SIZE(text_keys); k++)
			yes = !json_get(j, text_keys[k]);
		cJSON_Delete(j);
		break;
	}
	return yes;
}

/* Decode the JSONL in s[0..len) into a new corpus. With `drop` (an
 * madvise advice, or 0 for none) the pages of s behind the decoder are
 * released in steps: s is then page-aligned and a mapping the caller no
 * longer needs behind the decoder. */
static int jsonl_decode(const char *name, const char *s, size_t len, int drop, bool heap,
			struct corpus **out, struct rlm_err *err)
{
	struct corpus_int *ci;
	struct tbuf b;
	char what[600];
	const char *w;
	size_t cap = 0, line = 0, i = 0, dropped = 0;
	int rc = 0;
	*out = NULL;
	if (!name)
		name = "-";
	w = label(name, what, sizeof(what));
	ci = corpus_alloc(CORPUS_JSONL, name);
	corpus__tb_init(&b, 0, heap);
	if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
		i = 3; /* a byte-order mark */
	if (records_only(s, len, i)) {
		corpus__tb_release(&b);
		corpus_free(&ci->c);
		return corpus__jsonl_records(name, w, s, len, i, drop, heap, out, err);
	}
	while (i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : len - i;
		line++;
		if (!is_blank(s + i, n) &&
		    (rc = jsonl_line(&ci->c, &cap, &b, s + i, n, w, line, err)))
			goto fail;
		i += n + 1;
		if (drop && i - dropped >= DROP_STEP)
			dropped = drop_behind(s, dropped, RLM_MIN(i, len), drop);
	}
	if (ci->c.n_docs == 0) {
		rc = rlm_err_set(err, RLM_EINVAL, "no documents in %s", w);
		goto fail;
	}
	if ((rc = corpus__tb_finish(&b, ci, true))) {
		rc = rlm_err_set(err, rc, "cannot keep the documents of %s: %s", w, strerror(-rc));
		goto fail;
	}
	*out = &ci->c;
	return 0;
fail:
	corpus__tb_release(&b);
	corpus_free(&ci->c);
	return rc;
}

/* How JSONL in s[0..len) is read: UTF-8 as it stands (e->from NULL:
 * jsonl_decode skips a UTF-8 mark and refuses invalid UTF-8, JSON being
 * UTF-8 by definition), or converted from UTF-16 or UTF-32 (a mark says
 * so) or from corpus_opts.encoding (only then is s scanned first). */
static void jsonl_plan(const char *s, size_t len, const struct corpus_opts *o,
		       struct corpus__enc *e)
{
	if (corpus__enc_is_utf8(o->encoding))
		len = RLM_MIN(len, 4);
	corpus__plan(s, len, o->encoding, e);
}

/* Decode JSONL s[0..len) converted as e says; name as jsonl_decode's. */
static int jsonl_converted(const char *name, const char *s, size_t len,
			   const struct corpus__enc *e, const struct corpus_opts *o, size_t max,
			   struct corpus **out, struct rlm_err *err)
{
	struct tbuf b;
	char tmp[600];
	const char *what = label(name, tmp, sizeof(tmp));
	size_t replaced = 0, bad = 0;
	int rc;
	corpus__tb_init(&b, max, o->heap);
	rc = corpus__decode(e, s + e->bom, len - e->bom, o->strict_utf8, &b, &replaced, &bad);
	if (rc)
		rc = corpus__decode_err(rc, e, what, bad, max, err);
	else
		rc = jsonl_decode(name, b.p, b.len, b.fd >= 0 ? MADV_REMOVE : 0, o->heap, out, err);
	corpus__tb_release(&b);
	if (rc == 0) {
		(*out)->replaced = replaced;
		if (replaced && !o->quiet)
			corpus__warn_replaced(strcmp(name, "-") == 0 ? "standard input" : name,
					      e->from, replaced);
	}
	return rc;
}

int corpus_from_jsonl_buf(const char *name, const char *s, size_t len, struct corpus **out,
			  struct rlm_err *err)
{
	static const struct corpus_opts o = {.kind = CORPUS_JSONL, .quiet = true};
	struct corpus__enc e;
	jsonl_plan(s, len, &o, &e);
	if (e.from)
		return jsonl_converted(name ? name : "-", s, len, &e, &o, DEFAULT_MAX, out, err);
	return jsonl_decode(name, s, len, 0, false, out, err);
}

static int load_jsonl(int fd, const struct stat *st, const char *path, const struct corpus_opts *o,
		      size_t max, struct corpus **out, struct rlm_err *err)
{
	struct corpus__enc e;
	void *map;
	size_t len;
	int rc = map_fd(fd, st, path, max, &map, &len, err);
	if (rc)
		return rc;
	madvise(map, len, MADV_SEQUENTIAL);
	jsonl_plan(map, len, o, &e);
	if (e.from)
		rc = jsonl_converted(path, map, len, &e, o, max, out, err);
	else
		rc = jsonl_decode(path, map, len, MADV_DONTNEED, o->heap, out, err);
	munmap(map, len);
	return rc;
}

/* ---- reading whole files and pipes ---- */

int corpus__tb_read_all(int fd, struct tbuf *b, size_t hint)
{
	struct corpus__in in;
	int rc = corpus__in_init(&in, fd, false); /* plain reads: cannot fail */
	if (rc == 0)
		rc = corpus__in_read_all(&in, b, hint);
	corpus__in_release(&in);
	return rc;
}

/* ---- standard input and gzip files ---- */

static bool has_ext(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);
	return n > e && strcasecmp(path + n - e, ext) == 0;
}

/* The corpus of the bytes held in b (standard input, or a file
 * decompressed): JSONL documents with jsonl, else one text. path is the
 * source ("-" for standard input); b is released either way. */
static int load_held(struct tbuf *b, const char *path, enum corpus_kind kind, char sep,
		     const struct corpus_opts *o, struct corpus **out, struct rlm_err *err)
{
	struct corpus__enc e;
	char tmp[600];
	const char *what = label(path, tmp, sizeof(tmp));
	const char *from = NULL;
	size_t replaced = 0;
	int rc;
	if (b->len == 0) {
		corpus__tb_release(b);
		return rlm_err_set(err, RLM_EINVAL, "%s is empty", what);
	}
	if (kind == CORPUS_JSON || kind == CORPUS_CSV) {
		rc = kind == CORPUS_JSON ? corpus_from_json(b->p, b->len, out, err)
					 : corpus_from_csv_buf(path, b->p, b->len, sep, out, err);
		corpus__tb_release(b);
		if (rc == 0) {
			free((*out)->source);
			(*out)->source = xstrdup(path);
		}
		return rc;
	}
	if (kind == CORPUS_JSONL) {
		jsonl_plan(b->p, b->len, o, &e);
		if (e.from) {
			rc = jsonl_converted(path, b->p, b->len, &e, o, b->max, out, err);
		} else {
			/* The input is read once, so it is held; but what the
			 * decoder has passed is given back to the system (a
			 * hole punched in the memfd). */
			rc = jsonl_decode(path, b->p, b->len, b->fd >= 0 ? MADV_REMOVE : 0,
					  o->heap, out, err);
		}
		corpus__tb_release(b);
		return rc;
	}
	if ((rc = corpus__tb_decode(b, 0, what, o->encoding, o->strict_utf8, &replaced, &from,
				    err))) {
		corpus__tb_release(b);
		return rc;
	}
	return keep_text(b, path, what, from, replaced, o, out, err);
}

static int load_stdin(const struct corpus_opts *o, size_t max, struct corpus **out,
		      struct rlm_err *err)
{
	struct tbuf b;
	int rc;
	corpus__tb_init(&b, max, o->heap);
	rc = corpus__tb_read_all(0, &b, 0);
	if (rc == RLM_ETOOBIG) {
		rc = rlm_err_set(err, rc, "standard input is larger than %zu bytes", max);
		goto fail;
	}
	if (rc) {
		rc = rlm_err_set(err, rc, "cannot read standard input: %s", strerror(-rc));
		goto fail;
	}
	return load_held(&b, "-", o->kind, ',', o, out, err);
fail:
	corpus__tb_release(&b);
	return rc;
}

static bool jsonl_name(const char *path);

/* A *.gz file, decompressed (at most max bytes) and read as the file
 * without ".gz" would be. */
static int load_gz(int fd, const char *path, const struct corpus_opts *o, size_t max,
		   struct corpus **out, struct rlm_err *err)
{
	struct corpus__in in;
	struct tbuf b;
	char *inner = xstrndup(path, strlen(path) - 3);
	enum corpus_kind kind = o->kind != CORPUS_AUTO ? o->kind
				: jsonl_name(inner)     ? CORPUS_JSONL
				: has_ext(inner, ".json") ? CORPUS_JSON
				: has_ext(inner, ".csv") || has_ext(inner, ".tsv") ? CORPUS_CSV
							  : CORPUS_TEXT;
	char sep = corpus__csv_sep(inner);
	int rc;
	free(inner);
	if ((rc = corpus__in_init(&in, fd, true)))
		return rlm_err_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
	corpus__tb_init(&b, max, o->heap);
	rc = corpus__in_read_all(&in, &b, 0);
	if (rc == RLM_ETOOBIG)
		rc = rlm_err_set(err, rc, "'%s' is larger than %zu bytes once decompressed", path,
				 max);
	else if (rc == RLM_EPARSE)
		rc = rlm_err_set(err, rc, "cannot read '%s': %s", path, in.why);
	else if (rc)
		rc = rlm_err_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
	corpus__in_release(&in);
	if (rc) {
		corpus__tb_release(&b);
		return rc;
	}
	return load_held(&b, path, kind, sep, o, out, err);
}

/* ---- entry point ---- */

static const char *file_type(mode_t m)
{
	return S_ISFIFO(m)   ? "fifo"
	       : S_ISSOCK(m) ? "socket"
	       : S_ISCHR(m)  ? "character device"
	       : S_ISBLK(m)  ? "block device"
			     : "special file";
}

static bool jsonl_name(const char *path)
{
	size_t n = strlen(path);
	return (n > 6 && strcasecmp(path + n - 6, ".jsonl") == 0) ||
	       (n > 7 && strcasecmp(path + n - 7, ".ndjson") == 0);
}

int corpus__check_type(const struct stat *st, const char *path, const struct corpus_opts *o,
		       struct rlm_err *err)
{
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return rlm_err_set(err, RLM_EINVAL, "'%s' is a %s, not a regular file or directory",
				   path, file_type(st->st_mode));
	if (S_ISDIR(st->st_mode) && o->kind != CORPUS_AUTO && o->kind != CORPUS_DIR)
		return rlm_err_set(err, RLM_EINVAL, "'%s' is a directory, not a %s file", path,
				   o->kind == CORPUS_TEXT ? "text" : o->kind == CORPUS_JSONL ? "JSONL"
							       : o->kind == CORPUS_JSON	 ? "JSON"
											 : "CSV");
	if (!S_ISDIR(st->st_mode) && o->kind == CORPUS_DIR)
		return rlm_err_set(err, RLM_EINVAL, "'%s' is not a directory", path);
	return 0;
}

int corpus__load_fd(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return rlm_err_set(err, -errno, "cannot stat '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return corpus_load_dir(fd, path, o, max, out, err);
	if (!S_ISREG(st.st_mode)) /* replaced between the check and the open */
		return rlm_err_set(err, RLM_EINVAL, "'%s' is a %s, not a regular file or directory",
				   path, file_type(st.st_mode));
	if (corpus__gz_name(path))
		return load_gz(fd, path, o, max, out, err);
	if (o->kind == CORPUS_JSON || (o->kind == CORPUS_AUTO && has_ext(path, ".json")))
		return corpus__load_json(fd, path, (size_t)st.st_size, max, out, err);
	if (o->kind == CORPUS_CSV ||
	    (o->kind == CORPUS_AUTO && (has_ext(path, ".csv") || has_ext(path, ".tsv"))))
		return corpus__load_csv(fd, path, (size_t)st.st_size, max, corpus__csv_sep(path),
					o->heap, out, err);
	if (o->kind == CORPUS_JSONL || (o->kind == CORPUS_AUTO && jsonl_name(path)))
		return load_jsonl(fd, &st, path, o, max, out, err);
	return load_text(fd, &st, path, o, max, out, err);
}

size_t corpus__max_bytes(const struct corpus_opts *o)
{
	return o->max_bytes ? o->max_bytes : DEFAULT_MAX;
}

int corpus_load(const char *path, const struct corpus_opts *opts, struct corpus **out,
		struct rlm_err *err)
{
	static const struct corpus_opts defaults = {.kind = CORPUS_AUTO};
	const struct corpus_opts *o = opts ? opts : &defaults;
	size_t max = corpus__max_bytes(o);
	struct stat st;
	int fd, rc;
	*out = NULL;
	if (!path || !*path)
		return rlm_err_set(err, RLM_EINVAL, "no context path given");
	if ((rc = corpus_encoding_check(o->encoding, err)))
		return rc;
	if (strcmp(path, "-") == 0 && o->kind != CORPUS_DIR)
		return load_stdin(o, max, out, err);
	/* stat before open: opening a socket fails with a confusing errno and
	 * opening a fifo could block. */
	if (stat(path, &st) < 0)
		return rlm_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	if ((rc = corpus__check_type(&st, path, o, err)))
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return rlm_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	rc = corpus__load_fd(fd, path, o, max, out, err);
	close(fd);
	return rc;
}

static const char *const kind_names[] = {"auto", "text", "dir", "jsonl", "json", "csv"};

int corpus_kind_parse(const char *s, enum corpus_kind *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++) {
		if (strcmp(s, kind_names[i]) == 0) {
			*out = (enum corpus_kind)i;
			return 0;
		}
	}
	return RLM_EINVAL;
}

const char *corpus_kind_name(enum corpus_kind k)
{
	return (size_t)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "auto";
}
