/* SPDX-License-Identifier: MIT */
/* corpus/corpus_int.h -- inside the corpus loaders: the corpus with what
 * corpus_free releases, and the growing buffer a directory, JSONL or
 * standard input is built in (corpus/corpus.c), for the directory loader
 * (corpus/corpus_dir.c). */
#ifndef RLM_CORPUS_INT_H
#define RLM_CORPUS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "corpus.h"

/* The public struct plus what corpus_free needs to release. */
struct corpus_int {
	struct corpus c; /* first, so a struct corpus * converts back */
	char *heap;	 /* owned text buffer, or NULL */
	void *map;	 /* mmap base (of the file or of c.fd), or NULL */
	size_t map_len;	 /* bytes mapped */
	bool view_mapped; /* a view whose buf lies in a mapping of another */
};

/* The system's page size. */
size_t corpus_page_size(void);

/* A new empty corpus of kind, its source a copy of source (may be NULL),
 * no fd. The caller's to corpus_free. */
struct corpus_int *corpus_alloc(enum corpus_kind kind, const char *source);
/* Append the document s[off, off + len) of c->buf to c->docs, whose
 * allocated length is *cap; takes id (may be NULL: then its index, in
 * decimal) and info (may be NULL). */
void corpus_add_doc(struct corpus *c, size_t *cap, size_t off, size_t len, char *id, char *info);
/* Write the metadata lines of c's documents (corpus_doc_info, each ended
 * by '\n') into fd at byte at, then their table (corpus.fd_meta_table),
 * whose place goes to *table_at. Returns 0 or -errno.
 * (corpus/corpus_meta.c) */
int corpus__meta_write(int fd, uint64_t at, const struct corpus *c, uint64_t *table_at);

/* The text of a directory, JSONL or standard input while it is read: a
 * memfd mapped shared and writable, or the heap when there is no memfd.
 * p[len] is always a NUL (cap > len once anything was reserved). */
struct tbuf {
	int fd;	    /* the memfd, or -1: p is on the heap */
	char *p;    /* cap bytes */
	size_t len; /* bytes of text */
	size_t cap;
	size_t max;   /* cap on len; 0: none */
	size_t ready; /* bytes of the mapping populated (memfd), or SIZE_MAX:
		       * the kernel cannot */
};

/* An empty buffer of at most max bytes (0: none), in a memfd of mode 0, or
 * on the heap with heap or when memfd_create is refused. */
void corpus__tb_init(struct tbuf *b, size_t max, bool heap);
/* Free the buffer and close its memfd; b is empty again. */
void corpus__tb_release(struct tbuf *b);
/* Room for n more bytes and the NUL after them, whatever max says.
 * Returns 0 or -errno when the memfd cannot grow. */
int corpus__tb_grow(struct tbuf *b, size_t n);
/* corpus__tb_grow within max: RLM_ETOOBIG when len + n would pass it. */
int corpus__tb_reserve(struct tbuf *b, size_t n);
/* Append everything fd yields to b without passing b->max; hint is the
 * expected size. Returns 0, -errno, or RLM_ETOOBIG when there is more. */
int corpus__tb_read_all(int fd, struct tbuf *b, size_t hint);
/* Hand the text over to ci (buf, len, fd). A memfd is cut to the text,
 * given the documents table when `table`, sealed and mapped read-only.
 * Returns 0 or -errno; b is released either way. */
int corpus__tb_finish(struct tbuf *b, struct corpus_int *ci, bool table);

/* corpus_load of the directory open as fd (borrowed), path for messages,
 * at most max bytes of text. Same contract as corpus_load.
 * (corpus/corpus_dir.c) */
int corpus_load_dir(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err);

/* ---- structured contexts (corpus/corpus_json.c, corpus/corpus_csv.c) ---- */

#define CORPUS_META_STR 200 /* longer string fields stay out of metadata lines */

/* corpus_load of the .json file open as fd (size bytes, at most max):
 * mapped, checked, a document per element of an array of objects. */
int corpus__load_json(int fd, const char *path, size_t size, size_t max, struct corpus **out,
		      struct rlm_err *err);
/* corpus_load of the CSV (sep ',') or TSV ('\t') file open as fd. */
int corpus__load_csv(int fd, const char *path, size_t size, size_t max, char sep, bool heap,
		     struct corpus **out, struct rlm_err *err);
/* The separator a table's file name implies: '\t' for *.tsv, else ','. */
char corpus__csv_sep(const char *path);
/* Is s[0..n) one valid JSON value (UTF-8)? */
bool corpus__json_valid(const char *s, size_t n);
/* The JSONL s[0..len) whose first record (at byte i) is an object with no
 * text field, as JSON records: the array "[rec,\nrec...]" in a memfd,
 * a document per line; name is the source, w its label in messages; drop
 * as in the JSONL decoder (pages behind it released). */
int corpus__jsonl_records(const char *name, const char *w, const char *s, size_t len, size_t i,
			  int drop, bool heap, struct corpus **out, struct rlm_err *err);

#endif
