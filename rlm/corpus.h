/* SPDX-License-Identifier: MIT */
/* rlm/corpus.h -- loading a context: one text file, a directory of
 * documents, a JSONL file of documents, or standard input.
 *
 * DESIGN
 * All documents live in one buffer, back to back, each followed by one '\n'
 * that belongs to no document, plus an offsets table. A single text file is
 * mapped (mmap), not copied, and is one document covering the whole buffer
 * (no separator, not NUL-terminated); a directory or JSONL is read into one
 * heap buffer, NUL-terminated after the last separator.
 * Every document is checked to be UTF-8 without NUL bytes, so any slice of
 * it can go into a JSON request and a Python str. 10M tokens (~40 MB) load
 * with at most one copy.
 */
#ifndef RLM_CORPUS_H
#define RLM_CORPUS_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/common.h"

enum corpus_kind { CORPUS_AUTO, CORPUS_TEXT, CORPUS_DIR, CORPUS_JSONL };

struct corpus_doc {
	size_t off;   /* offset of the text in corpus.buf */
	size_t len;   /* bytes of text */
	char *name;   /* file path relative to the directory, JSONL id/title,
		       * or NULL; owned */
};

struct corpus {
	enum corpus_kind kind;   /* what was loaded (never AUTO) */
	char *source;            /* the path given, "-" for stdin, NULL from
				  * corpus_from_text; owned */
	const char *buf;         /* all text; mapped or heap, see `mapped` */
	size_t len;              /* bytes in buf */
	bool mapped;             /* buf is an mmap of the whole file */
	struct corpus_doc *docs; /* n_docs entries, in order; owned */
	size_t n_docs;
	size_t skipped;          /* directory files skipped as binary or not UTF-8 */
};

struct corpus_opts {
	enum corpus_kind kind;   /* AUTO: "-" is stdin text, a directory is DIR,
				  * a *.jsonl / *.ndjson file is JSONL, else TEXT;
				  * JSONL with "-" decodes stdin as JSONL */
	size_t max_bytes;        /* 0: 4 GiB */
	bool quiet;              /* no warnings on stderr for skipped files */
};

/* Load the context at path. On error returns a negative code and a message
 * naming the file (and line, for JSONL) and the problem: missing or
 * unreadable path, invalid UTF-8 (with its byte offset), NUL bytes, a JSONL
 * line that is not JSON or has no text, an empty corpus. In a directory,
 * files that are binary or not UTF-8 are skipped with a warning (counted
 * in `skipped`); hidden files and directories (".name") are ignored; files
 * are taken in byte order of their relative paths, and empty files are
 * left out; symlinks to files are followed, symlinks to directories are
 * not. A fifo, socket or device path is an error (RLM_EINVAL), so is a
 * path bigger than max_bytes (RLM_ETOOBIG). On success *out is the
 * caller's to corpus_free. */
int corpus_load(const char *path, const struct corpus_opts *opts, struct corpus **out,
		struct rlm_err *err);
/* Build a corpus from memory (copied), one document. For tests and the API. */
struct corpus *corpus_from_text(const char *text, size_t len);
/* Decode JSONL held in memory (the file path of corpus_load uses this, and
 * the fuzz target): each non-blank line a JSON string or an object with a
 * string "text" (else "content", "body", "document", "contents") and an
 * optional name from "id", "docid", "title" or "name" (string or number).
 * name labels the source in messages ("'name' line 7: not valid JSON"; "-"
 * reads "standard input") and becomes corpus.source. On success *out is the
 * caller's to corpus_free; on error *out is NULL and err says what. */
int corpus_from_jsonl_buf(const char *name, const char *buf, size_t len, struct corpus **out,
			  struct rlm_err *err);
/* "auto", "text", "dir", "jsonl" to a kind and back. Parse returns 0 or
 * RLM_EINVAL. */
int corpus_kind_parse(const char *s, enum corpus_kind *out);
const char *corpus_kind_name(enum corpus_kind k);
/* Release c and everything it owns (unmaps a mapped file); NULL is a no-op. */
void corpus_free(struct corpus *c);

#endif
