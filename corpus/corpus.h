/* SPDX-License-Identifier: MIT */
/* corpus/corpus.h -- loading a context: one text file, a directory of
 * documents, a JSONL file of documents, or standard input.
 *
 * DESIGN
 * All documents live in one buffer, back to back, each followed by one '\n'
 * that belongs to no document, plus an offsets table. A single text file is
 * mapped (mmap), not copied, and is one document covering the whole buffer
 * (no separator). A directory, JSONL or standard input is built straight
 * into a memfd, which is then sealed and mapped read-only: the text, then
 * (for DIR and JSONL) the documents' (offset, length) table, which is the
 * layout of the REPL's context memfd (repl/repl.h), so the worker can map
 * this very memfd instead of a copy. Its pages belong to the memfd, not to
 * the heap: corpus_release_pages() takes them out of the controller's
 * resident set without losing them. Where memfd_create is refused, or with
 * corpus_opts.heap, the buffer is on the heap, NUL-terminated.
 * A .json file is mapped like a text file; a CSV table becomes a JSON
 * array in a memfd (corpus.json: see corpus/corpus_json.c).
 * Every document is UTF-8 without NUL bytes, so any slice of it can go
 * into a JSON request and a Python str: a byte-order mark is dropped,
 * UTF-16 and UTF-32 (with a mark) and legacy encodings (corpus_opts.
 * encoding) are converted, invalid UTF-8 is replaced with U+FFFD (one
 * warning), and a *.gz file is read decompressed (corpus/decode.c). A
 * valid UTF-8 text file stays mapped, without a copy. 10M tokens (~40 MB) load
 * with at most one copy of the text, and a JSONL file's pages are released
 * behind the decoder, so loading one holds little more than its text.
 */
#ifndef RLM_CORPUS_H
#define RLM_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/common.h"

/* The public API: exported by librlm.so (docs/api.md). */
#pragma GCC visibility push(default)

/* JSON: a .json file, its value; CSV: a .csv or .tsv table with a header
 * row, a list of dicts (corpus/corpus_json.c, corpus/corpus_csv.c). */
enum corpus_kind { CORPUS_AUTO, CORPUS_TEXT, CORPUS_DIR, CORPUS_JSONL, CORPUS_JSON, CORPUS_CSV };

/* A document: where its text lies, and who it is. */
struct corpus_doc {
	size_t off;   /* offset of the text in corpus.buf */
	size_t len;   /* bytes of text */
	char *id;     /* owned; set by every loader: a directory's file: its
		       * path relative to the directory ("linux/eventpoll.h");
		       * a JSONL record: its "id" (else "docid") field as text,
		       * else its line number ("17"); a single file: its base
		       * name; standard input: "stdin"; corpus_from_text*:
		       * "context"; a list of documents from code: its index
		       * ("0", "1", ...). NULL only in a corpus built by hand,
		       * where the index stands for it. */
	char *info;   /* owned, or NULL: the document's metadata line, when
		       * it has more than its id (a JSONL record's title and
		       * other fields): see corpus_doc_info */
};

struct corpus {
	enum corpus_kind kind;   /* what was loaded (never AUTO) */
	char *source;            /* the path given, "-" for stdin, NULL from
				  * corpus_from_text; owned */
	const char *buf;         /* all text; a mapping (of the file, or of fd)
				  * or the heap; NUL-terminated only on the
				  * heap */
	size_t len;              /* bytes in buf */
	bool mapped;             /* buf is an mmap of the whole text file */
	int fd;                  /* a sealed memfd holding buf's len bytes at
				  * fd_text and, for DIR and JSONL, n_docs
				  * little-endian uint64 pairs (off, len) at
				  * fd_table, each off counted from byte 0 of
				  * fd (fd_text + docs[i].off); -1 for a mapped
				  * file or a heap buffer. Owned: borrow it
				  * (dup to keep it) */
	uint64_t fd_text;        /* 0, and fd_table len, but in a view */
	uint64_t fd_table;
	uint64_t fd_meta_table;  /* where fd holds the documents' metadata
				  * lines (corpus_doc_info, each ended by '\n')
				  * as n_docs little-endian uint64 pairs
				  * (offset from byte 0 of fd, length), for the
				  * REPL's `documents`; 0 when it holds none */
	struct corpus_doc *docs; /* n_docs entries, in order; owned */
	size_t n_docs;
	bool json;               /* buf is ONE JSON document, whose parsed value
				  * is the REPL's `context` (JSON, CSV, and
				  * JSONL records without text); for an array
				  * of records docs points at each element's
				  * text inside it, else one document covers
				  * the value */
	size_t skipped;          /* directory files skipped (binary, not text,
				  * links, special files, bad gzip data) */
	size_t replaced;         /* bytes of invalid input replaced with U+FFFD */
};

struct corpus_opts {
	enum corpus_kind kind;   /* AUTO: "-" is stdin text, a directory is DIR,
				  * a *.jsonl / *.ndjson file is JSONL, *.json
				  * JSON, *.csv and *.tsv CSV (tab-separated
				  * for .tsv), else TEXT; JSONL, JSON or CSV
				  * with "-" decode stdin so */
	size_t max_bytes;        /* 0: 4 GiB */
	bool quiet;              /* no warnings on stderr for skipped files */
	bool heap;               /* build in the heap, not in a memfd */
	bool no_symlinks;        /* a directory's symbolic links are skipped,
				  * and each of its files is opened beneath
				  * the directory's descriptor with no link
				  * followed on the way (a file or folder
				  * swapped for one after the walk is skipped,
				  * not read): for a server that serves only
				  * what lies under its roots (corpus_load_at
				  * sets it) */
	const char *encoding;    /* NULL, "auto" or "utf-8": UTF-8; else an
				  * iconv name ("latin-1", "cp1252") that files
				  * which are not valid UTF-8 are read in. A
				  * byte-order mark always wins (UTF-8, UTF-16,
				  * UTF-32). Borrowed for the call */
	bool strict_utf8;        /* invalid input is an error (a directory's
				  * file: skipped as not text), not replaced
				  * with U+FFFD */
	bool verbose;            /* warnings name every skipped file and every
				  * file with replaced bytes, not a summary */
};

/* Load the context at path. On error returns a negative code and a message
 * naming the file (and line, for JSONL) and the problem: missing or
 * unreadable path, invalid UTF-8 with strict_utf8 (with its byte offset),
 * NUL bytes, a JSONL line that is not JSON or has no text, an empty corpus,
 * an unknown encoding, bad gzip data. Invalid UTF-8 in text is replaced
 * with U+FFFD (counted in `replaced`) with one warning naming the file and
 * the bytes replaced. A "x.gz" file is decompressed (at most max_bytes:
 * RLM_ETOOBIG past it) and then read as "x" would be. In a directory,
 * binary files (NUL bytes) and files that are mostly not UTF-8 are skipped
 * (counted in `skipped`, one warning line by reason; each named with
 * verbose); hidden files and directories (".name") are ignored; files
 * are taken in byte order of their relative paths, and empty files are
 * left out; symlinks to files are followed, symlinks to directories are
 * not. A fifo, socket or device path is an error (RLM_EINVAL), so is a
 * path bigger than max_bytes (RLM_ETOOBIG). On success *out is the
 * caller's to corpus_free. */
int corpus_load(const char *path, const struct corpus_opts *opts, struct corpus **out,
		struct rlm_err *err);
/* corpus_load of rel resolved beneath the directory dirfd (borrowed; an
 * O_PATH descriptor will do), for a server that may read only under its
 * roots: no component of rel, the last included, may be a symbolic link
 * (-ELOOP: "the path crosses a symbolic link"), and neither an absolute
 * rel nor ".." may leave dirfd (-EXDEV); "" or "." is dirfd itself. The
 * path is resolved once (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
 * or a walk with O_NOFOLLOW where the kernel lacks it) and read only
 * through the descriptors so opened, a directory's files too (its links
 * are skipped: no_symlinks is implied), so a file swapped for a link at
 * any moment is never read through the link. name (NULL: rel) names the
 * path in messages and is the corpus's source; its extension decides the
 * kind with CORPUS_AUTO. Standard input ("-") is not read. Otherwise as
 * corpus_load. (corpus/corpus_at.c) */
int corpus_load_at(int dirfd, const char *rel, const char *name, const struct corpus_opts *opts,
		   struct corpus **out, struct rlm_err *err);
/* Build a corpus from memory (copied, on the heap), one document. For
 * tests and the API. */
struct corpus *corpus_from_text(const char *text, size_t len);
/* The same without the copy: text must outlive the corpus. */
struct corpus *corpus_borrow_text(const char *text, size_t len);
/* The same copied into a sealed memfd (corpus.fd) and mapped read-only,
 * none of its pages resident: what a child RLM's context is made of, so
 * that the text it came from can be freed at once and its REPL worker
 * borrows the memfd rather than copying it again. Returns 0 with *out the
 * caller's to corpus_free, or -errno. */
int corpus_from_text_memfd(const char *text, size_t len, struct corpus **out);
/* Documents items[i][0..lens[i]) copied into a sealed memfd as corpus_load
 * lays them out (each followed by '\n', then the table), mapped read-only
 * and none of its pages resident: a child RLM's context given as a list.
 * kind: CORPUS_JSONL (it says only "documents"). Falls back to the heap
 * where memfd_create is refused. Returns 0 with *out the caller's to
 * corpus_free, or -errno. (corpus/corpus_view.c) */
int corpus_from_docs_memfd(const char *const *items, const size_t *lens, size_t n,
			   struct corpus **out);
/* A view of a part of parent, without a copy: the text parent->buf[off,
 * off + len) (borrowed: parent must outlive the view) and, for documents
 * (kind other than TEXT), n_docs entries of docs, whose offsets count from
 * parent->buf (the view's count from its own buf); for TEXT it is one
 * document. fd (>= 0) is a sealed memfd that holds the view's text at byte
 * text_at and its documents' table at table_at, as corpus.fd says: it is
 * duplicated (the view's fd_text and fd_table); meta_table_at is where fd
 * holds the metadata table entries of these documents (of the one
 * document of a TEXT view), 0 for none (fd_meta_table). The view's
 * documents keep their ids (a TEXT view's is its parent's first
 * document's). Where parent's buf is a
 * mapping, corpus_release_pages of the view drops the pages of its part.
 * Returns 0 with *out (corpus_free it before parent), or -errno (the
 * duplicate failed). (corpus/corpus_view.c) */
int corpus_view(const struct corpus *parent, enum corpus_kind kind, size_t off, size_t len,
		const struct corpus_doc *docs, size_t n_docs, int fd, uint64_t text_at,
		uint64_t table_at, uint64_t meta_table_at, struct corpus **out);
/* Decode JSONL held in memory (corpus_load decodes a file the same way;
 * the fuzz target uses this): each non-blank line a JSON string or an object with a
 * string "text" (else "content", "body", "document", "contents") and an
 * optional name from "id", "docid", "title" or "name" (string or number).
 * name labels the source in messages ("'name' line 7: not valid JSON"; "-"
 * reads "standard input") and becomes corpus.source. UTF-16 and UTF-32
 * with a byte-order mark are converted (invalid units replaced with
 * U+FFFD, silently). The text goes into a memfd as corpus_load's does. On success *out is the caller's to
 * corpus_free; on error *out is NULL and err says what. */
int corpus_from_jsonl_buf(const char *name, const char *buf, size_t len, struct corpus **out,
			  struct rlm_err *err);
/* Build a JSON corpus (corpus.json) from the JSON text text[0..len),
 * copied into a sealed memfd: checked to be one valid JSON value (UTF-8,
 * RFC 8259, at most 500 levels deep; err names the byte and line of a
 * fault). An array of objects gets one document per element (ids from
 * their "id" or "docid" field, else their 1-based index); any other value
 * is one document, "context". For the API and `rlm serve`. Returns 0 with
 * *out the caller's to corpus_free, or a negative code.
 * (corpus/corpus_json.c) */
int corpus_from_json(const char *text, size_t len, struct corpus **out, struct rlm_err *err);
/* Decode a CSV table (sep ',') or TSV (sep '\t') held in memory as
 * corpus_load decodes a .csv file: RFC 4180, a header row required, each
 * row a JSON object of strings in one JSON array (corpus.json). name labels
 * the source in messages. On success *out is the caller's to corpus_free.
 * (corpus/corpus_csv.c) */
int corpus_from_csv_buf(const char *name, const char *buf, size_t len, char sep,
			struct corpus **out, struct rlm_err *err);
/* The metadata line of document i, appended to out: compact JSON on one
 * line, {"id":"...","path":"..."|null,"title":"..."|null,"meta":{...}}:
 * path is the file a document came from (a directory's relative path, a
 * single file's path as given), title and meta a JSONL record's "title"
 * and its other fields but the text. What the REPL's `documents[i]` shows
 * (repl/repl.h). Returns 0, or RLM_ETOOBIG when out cannot grow.
 * (corpus/corpus_meta.c) */
int corpus_doc_info(const struct corpus *c, size_t i, struct buf *out);
/* The document whose id is id[0..len): its index, or -1. A decimal index
 * ("7") names document 7 when no document has that id. */
long corpus_doc_find(const struct corpus *c, const char *id, size_t len);
/* Take the pages of a mapped file or of a memfd out of this process's
 * resident set: the controller will not read the text for a while (once
 * the REPL's context memfd is filled, say). Nothing is lost: they stay in
 * the page cache or the memfd, and reading buf again faults them back in,
 * without I/O while memory lasts. Returns the bytes released; 0 for a heap
 * buffer, which is left alone. Any thread; readers of buf may run at the
 * same time. */
size_t corpus_release_pages(const struct corpus *c);
/* The same for the pages of c->buf[off, off + len) only (whole pages: the
 * ones at its ends too). Returns len (cut to the text), or 0 when nothing
 * was released. */
size_t corpus_release_range(const struct corpus *c, size_t off, size_t len);
/* 0 when corpus_opts.encoding name can be read (NULL, "auto", "utf-8" or a
 * name iconv knows); else RLM_EINVAL and err says which name is unknown.
 * (corpus/decode.c) */
int corpus_encoding_check(const char *name, struct rlm_err *err);
/* "auto", "text", "dir", "jsonl", "json", "csv" to a kind and back. Parse returns 0 or
 * RLM_EINVAL. */
int corpus_kind_parse(const char *s, enum corpus_kind *out);
const char *corpus_kind_name(enum corpus_kind k);
/* Release c and everything it owns (unmaps the mapping, closes fd); NULL
 * is a no-op. */
void corpus_free(struct corpus *c);

#pragma GCC visibility pop

#endif
