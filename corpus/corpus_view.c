/* SPDX-License-Identifier: MIT */
/* corpus/corpus_view.c -- the contexts of child RLMs: views of a part of a
 * parent's context, and lists of documents copied into a memfd.
 *
 * DESIGN
 * A child whose context is a part of its parent's (a slice of its text, a
 * run of its documents) gets a view: its buf points into the parent's, its
 * documents are the parent's with offsets moved, and its fd is a duplicate
 * of the memfd the parent's REPL worker maps, with the place of the part in
 * it. Nothing is copied: the child's worker maps the same pages, and so
 * does every grandchild of a part of that part. A view does not own the
 * mapping its buf lies in; it only knows whether there is one, so that
 * corpus_release_pages can drop the pages it read (hashing a child's
 * context for the memo reads all of it).
 */
#include "corpus_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int corpus_from_docs_memfd(const char *const *items, const size_t *lens, size_t n,
			   struct corpus **out)
{
	struct corpus_int *ci = corpus_alloc(CORPUS_JSONL, NULL);
	struct tbuf b;
	size_t cap = 0;
	int rc;
	*out = NULL;
	if (!n) {
		/* Nothing to map: the worker makes its own (empty) memfd. */
		ci->c.buf = "";
		*out = &ci->c;
		return 0;
	}
	corpus__tb_init(&b, 0, false);
	for (size_t i = 0; i < n; i++) {
		if ((rc = corpus__tb_reserve(&b, lens[i] + 1)))
			goto fail;
		memcpy(b.p + b.len, items[i], lens[i]);
		b.len += lens[i];
		b.p[b.len++] = '\n';
		b.p[b.len] = '\0';
		corpus_add_doc(&ci->c, &cap, b.len - lens[i] - 1, lens[i], NULL, NULL);
	}
	if ((rc = corpus__tb_finish(&b, ci, true)))
		goto fail;
	/* Written through a mapping now gone: none of its pages are ours. */
	corpus_release_pages(&ci->c);
	*out = &ci->c;
	return 0;
fail:
	corpus__tb_release(&b);
	corpus_free(&ci->c);
	return rc == RLM_ETOOBIG ? -ENOMEM : rc;
}

int corpus_view(const struct corpus *parent, enum corpus_kind kind, size_t off, size_t len,
		const struct corpus_doc *docs, size_t n_docs, int fd, uint64_t text_at,
		uint64_t table_at, uint64_t meta_table_at, struct corpus **out)
{
	const struct corpus_int *pi = (const struct corpus_int *)parent;
	struct corpus_int *ci;
	size_t cap = 0;
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	*out = NULL;
	if (dup < 0)
		return -errno;
	ci = corpus_alloc(kind, NULL);
	ci->c.buf = len ? parent->buf + off : "";
	ci->c.len = len;
	ci->c.fd = dup;
	ci->c.fd_text = text_at;
	ci->c.fd_table = table_at;
	ci->c.fd_meta_table = meta_table_at;
	ci->view_mapped = pi->map || pi->view_mapped;
	if (kind == CORPUS_TEXT) {
		/* A part of a str: of the one document the str is. */
		const struct corpus_doc *d = parent->n_docs ? &parent->docs[0] : NULL;
		corpus_add_doc(&ci->c, &cap, 0, len, d && d->id ? xstrdup(d->id) : NULL,
			       d && d->info ? xstrdup(d->info) : NULL);
	} else if (n_docs) {
		ci->c.docs = xcalloc(n_docs, sizeof(*ci->c.docs));
		ci->c.n_docs = n_docs;
		for (size_t i = 0; i < n_docs; i++)
			ci->c.docs[i] = (struct corpus_doc){
			    docs[i].off - off, docs[i].len, docs[i].id ? xstrdup(docs[i].id) : NULL,
			    docs[i].info ? xstrdup(docs[i].info) : NULL};
	}
	*out = &ci->c;
	return 0;
}
