/* SPDX-License-Identifier: MIT */
/* corpus/corpus_int.h -- inside the corpus loaders: the corpus with what
 * corpus_free releases, and the growing buffer a directory, JSONL or
 * standard input is built in (corpus/corpus.c), for the directory loader
 * (corpus/corpus_dir.c). */
#ifndef RLM_CORPUS_INT_H
#define RLM_CORPUS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

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
/* Who the record j is (an object; anything else has only `fallback`):
 * its id (its "id", else "docid" field, a string or a number as text;
 * empty or absent: fallback in decimal) and its metadata line
 * (corpus_doc_info's shape, path as given): its "title" when a string, and
 * its other fields but skip (the field holding its text, or NULL), only
 * the scalar ones with scalars_only (strings of at most 200 bytes: the
 * record itself is the context then). Returns 0 with *id and *info (the
 * caller's), or RLM_EPARSE when the id is not UTF-8 (*bad_key names its
 * field; nothing allocated). (corpus/corpus_meta.c) */
struct cJSON;
int corpus__record_identity(const struct cJSON *j, const char *skip, bool scalars_only,
			    size_t fallback, const char *path, char **id, char **info,
			    const char **bad_key);
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
 * expected size. Returns 0, -errno, or RLM_ETOOBIG when there is more.
 * (corpus__in_read_all of plain reads) */
int corpus__tb_read_all(int fd, struct tbuf *b, size_t hint);
/* Hand the text over to ci (buf, len, fd). A memfd is cut to the text,
 * given the documents table when `table`, sealed and mapped read-only.
 * Returns 0 or -errno; b is released either way. */
int corpus__tb_finish(struct tbuf *b, struct corpus_int *ci, bool table);

/* ---- decoding (corpus/decode.c) ---- */

/* How a file's bytes become UTF-8 text: corpus__plan's verdict. */
struct corpus__enc {
	const char *from; /* iconv name to convert from; NULL: UTF-8 as it is
			   * (or repaired, when bad < SIZE_MAX) */
	size_t bom;       /* bytes of byte-order mark at the start, dropped */
	unsigned unit;    /* bytes of one code unit of `from` (1, 2, 4): what a
			   * bad one skips */
	size_t bad;       /* UTF-8 only: offset (after the mark) of the first
			   * invalid byte, or SIZE_MAX */
	size_t nul;       /* UTF-8 only: offset (after the mark) of the first
			   * NUL byte, or SIZE_MAX */
};

/* Is name (corpus_opts.encoding) UTF-8: NULL, "", "auto", "utf-8", "UTF8". */
bool corpus__enc_is_utf8(const char *name);
/* Say how s[0..n) is to be read: a byte-order mark names its encoding;
 * else bytes that are valid UTF-8 without NUL are UTF-8 whatever
 * `encoding` says; else `encoding` (corpus_opts.encoding) decides. Scans
 * s once (for bad and nul) unless a mark names UTF-16 or UTF-32. */
void corpus__plan(const char *s, size_t n, const char *encoding, struct corpus__enc *e);
/* Append s[0..n) (the bytes after the mark) converted as e says to b,
 * within b->max, NUL-terminated. An invalid sequence is replaced with
 * U+FFFD (its bytes added to *replaced) or, with strict, is RLM_EPARSE
 * with its offset in s in *bad. Returns 0, RLM_EPARSE, RLM_ETOOBIG,
 * RLM_EINVAL (an encoding iconv does not know) or -errno. */
int corpus__decode(const struct corpus__enc *e, const char *s, size_t n, bool strict,
		   struct tbuf *b, size_t *replaced, size_t *bad);
/* err for corpus__decode's code rc (not 0) on the file named what
 * (quoted, or "standard input"), its mark and first bad byte as e and bad
 * say, max its cap. Returns rc. */
int corpus__decode_err(int rc, const struct corpus__enc *e, const char *what, size_t bad,
		       size_t max, struct rlm_err *err);
/* Make b->p[start, b->len) UTF-8 text in place, as corpus__plan and
 * corpus__decode say (a copy only when something is converted). what names
 * it in err ("'notes.txt'", "standard input"); *from (when not NULL) is
 * set to the encoding read (NULL: UTF-8). Returns what corpus__decode
 * does, with err filled; b->len is start after an error. NUL bytes are left
 * for the caller to find. */
int corpus__tb_decode(struct tbuf *b, size_t start, const char *what, const char *encoding,
		      bool strict, size_t *replaced, const char **from, struct rlm_err *err);
/* Why the head of a directory's file, s[0..n), is no document: "binary"
 * (a NUL byte, unless a mark or `encoding` says UTF-16/32), "not text"
 * (invalid UTF-8 under strict, or more than a quarter of its bytes
 * without a named encoding), or NULL. */
const char *corpus__head_why(const char *s, size_t n, const char *encoding, bool strict);
/* The warning for n bytes of path, in encoding enc (NULL: UTF-8),
 * replaced with U+FFFD. */
void corpus__warn_replaced(const char *path, const char *enc, size_t n);
/* Does path end in ".gz" (any case)? */
bool corpus__gz_name(const char *path);

/* A file being read, plain or gzip data decompressed (zlib). */
struct corpus__in {
	int fd;        /* borrowed */
	void *gz;      /* a gzFile reading a dup of fd, or NULL: plain */
	char why[160]; /* after RLM_EPARSE: what is wrong with the gzip data */
};

/* Read fd (borrowed: it must outlive in) as it is, or decompressed with
 * gz. Returns 0 or -errno. */
int corpus__in_init(struct corpus__in *in, int fd, bool gz);
/* Up to n bytes into dst, as read(2): the count, 0 at the end, or a
 * negative code: -errno, or RLM_EPARSE (not gzip data, corrupt or cut
 * short: in->why says which). */
ssize_t corpus__in_read(struct corpus__in *in, char *dst, size_t n);
/* Append everything in yields (plain or decompressed) to b without
 * passing b->max; hint is the expected size. Returns 0, a negative code
 * as corpus__in_read's, or RLM_ETOOBIG when there is more. */
int corpus__in_read_all(struct corpus__in *in, struct tbuf *b, size_t hint);
void corpus__in_release(struct corpus__in *in);

/* corpus_load of the directory open as fd (borrowed), path for messages,
 * at most max bytes of text. Same contract as corpus_load.
 * (corpus/corpus_dir.c) */
int corpus_load_dir(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err);

/* 0 when st (of path) is a kind of file corpus_load reads as o->kind asks
 * (a regular file, or a directory for AUTO and DIR); else RLM_EINVAL
 * with err: a fifo, socket or device, a directory for a file kind, a file
 * for DIR. (corpus/corpus.c) */
int corpus__check_type(const struct stat *st, const char *path, const struct corpus_opts *o,
		       struct rlm_err *err);
/* corpus_load of what fd (borrowed, open for reading) is: a directory, or
 * a regular file whose kind path's name implies (unless o->kind says).
 * path names it in messages and is the corpus's source. */
int corpus__load_fd(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err);
/* o->max_bytes, or the default cap (4 GiB) when it is 0. */
size_t corpus__max_bytes(const struct corpus_opts *o);

/* ---- beneath a directory (corpus/corpus_at.c) ---- */

#define CORPUS__BENEATH_WALK 1u /* the fallback walk even where openat2 works
				 * (for the tests) */

/* Open rel beneath the directory dirfd with flags (O_PATH, or O_RDONLY
 * and the like; O_CLOEXEC is added), following no symbolic link on the
 * way or at the end and never leaving dirfd: openat2 with RESOLVE_BENEATH
 * | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or where the kernel has
 * no openat2 (ENOSYS), or with CORPUS__BENEATH_WALK in how, a walk that
 * opens one component at a time with O_NOFOLLOW. "" and "." are dirfd
 * itself; ".." may be used while it stays beneath dirfd. Returns the new
 * descriptor, or -errno: -ELOOP when a component is a symbolic link,
 * -EXDEV when rel is absolute or ".." leads out. */
int corpus__open_beneath(int dirfd, const char *rel, int flags, unsigned how);
/* Make every corpus__open_beneath in this process take the fallback walk
 * (on) or openat2 where the kernel has it (off, the default): for the
 * tests, which run whole loads and races both ways. Any thread. */
void corpus__beneath_force_walk(bool on);

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
