/* SPDX-License-Identifier: MIT */
/* rlm/node_ctx.c -- the contexts of child RLMs: what a call frame's
 * context= entries give a child (a copy, or a view of a part of its
 * parent's context), and the prompt they make at the last depth.
 *
 * DESIGN
 * A worker hands a child a part of its own context as a reference: a
 * slice of its text as bytes, a run of its documents as a range (repl.h,
 * "contexts"). The worker is hostile, so a reference is checked against
 * the node's context before anything is read: out of range, a slice that
 * cuts a UTF-8 character, a range given backwards, a reference of the
 * wrong kind, all end as an "Error: ..." for that prompt. A good one
 * becomes a view (corpus_view): the child's text points into the node's,
 * and its worker maps the same memfd as the node's worker (repl_layout),
 * at the part's place. The node's text and its worker's memfd hold the
 * same bytes in the same order: for a str, the text of its one document
 * is the memfd's text; for documents, the corpus's buf is. A view of a
 * view composes: its place is counted from its parent's.
 */
#include "solve_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The node's str context: where its text starts in ctx->buf, its length. */
static void node_text(const struct corpus *ctx, size_t *off, size_t *len)
{
	*off = ctx->n_docs ? ctx->docs[0].off : 0;
	*len = ctx->n_docs ? ctx->docs[0].len : ctx->len;
}

static bool mid_char(const char *s, size_t len, uint64_t at)
{
	return at < len && text_utf8_is_cont(s[at]);
}

int rlm__node_ctx_check(const struct calls *c, const struct repl_ctx_arg *a, char *msg, size_t cap)
{
	const struct corpus *ctx = c->ctx;
	bool docs = ctx && ctx->kind != CORPUS_TEXT;
	size_t off, len;
	switch (a->kind) {
	case REPL_CTX_NONE:
	case REPL_CTX_TEXT:
	case REPL_CTX_LIST:
		return 0;
	case REPL_CTX_BAD:
		snprintf(msg, cap, "%s", a->bad);
		return RLM_EINVAL;
	case REPL_CTX_SLICE:
		if (!ctx || docs) {
			snprintf(msg, cap,
				 "a reference to a slice of the context's text, but the context is "
				 "a list of documents");
			return RLM_EINVAL;
		}
		node_text(ctx, &off, &len);
		if (a->a > len || a->b > len - a->a) {
			snprintf(msg, cap,
				 "the context reference [%llu, %llu + %llu) lies outside the "
				 "context (%zu bytes)",
				 (unsigned long long)a->a, (unsigned long long)a->a,
				 (unsigned long long)a->b, len);
			return RLM_EINVAL;
		}
		if (mid_char(ctx->buf + off, len, a->a) ||
		    mid_char(ctx->buf + off, len, a->a + a->b)) {
			snprintf(msg, cap,
				 "the context reference [%llu, %llu + %llu) starts or ends inside "
				 "a UTF-8 character",
				 (unsigned long long)a->a, (unsigned long long)a->a,
				 (unsigned long long)a->b);
			return RLM_EINVAL;
		}
		return 0;
	case REPL_CTX_RUN:
		if (!ctx || !docs) {
			snprintf(msg, cap,
				 "a reference to a run of documents, but the context is a str");
			return RLM_EINVAL;
		}
		if (a->a > a->b || a->b > ctx->n_docs) {
			snprintf(msg, cap,
				 "the document range [%llu, %llu) is not a range within the "
				 "context's %zu documents",
				 (unsigned long long)a->a, (unsigned long long)a->b, ctx->n_docs);
			return RLM_EINVAL;
		}
		return 0;
	}
	snprintf(msg, cap, "a context of unknown kind");
	return RLM_EINVAL;
}

/* The view of documents [first, end) of c's context. */
static int view_run(const struct calls *c, const struct repl_layout *ly, size_t first, size_t end,
		    struct corpus **out)
{
	const struct corpus *ctx = c->ctx;
	size_t lo = end > first ? SIZE_MAX : 0, hi = 0;
	for (size_t i = first; i < end; i++) {
		lo = RLM_MIN(lo, ctx->docs[i].off);
		hi = RLM_MAX(hi, ctx->docs[i].off + ctx->docs[i].len);
	}
	return corpus_view(ctx, ctx->kind, lo, hi - lo, ctx->docs + first, end - first, ly->fd,
			   ly->text_at + lo, ly->table_at + 16 * (uint64_t)first,
			   ly->meta_table_at && end <= ly->n_meta
				   ? ly->meta_table_at + 16 * (uint64_t)first
				   : 0,
			   out);
}

int rlm__node_ctx_make(const struct calls *c, const struct repl_ctx_arg *a, const char *text,
		  size_t len, struct corpus **out)
{
	struct repl_layout ly;
	size_t off, n;
	*out = NULL;
	if (a && a->kind == REPL_CTX_LIST)
		return corpus_from_docs_memfd(a->items, a->item_lens, a->n_items, out);
	if (a && (a->kind == REPL_CTX_SLICE || a->kind == REPL_CTX_RUN)) {
		repl_layout(c->repl, &ly);
		if (a->kind == REPL_CTX_RUN)
			return view_run(c, &ly, (size_t)a->a, (size_t)a->b, out);
		node_text(c->ctx, &off, &n);
		return corpus_view(c->ctx, CORPUS_TEXT, off + (size_t)a->a, (size_t)a->b, NULL, 0,
				   ly.fd, ly.text_at + a->a, ly.text_at + a->a + a->b,
				   ly.n_meta ? ly.meta_table_at : 0, out);
	}
	if (a && a->kind == REPL_CTX_TEXT) {
		text = a->text;
		len = a->len;
	}
	/* A copy in a memfd of its own, which its worker borrows (the one
	 * copy a worker needs anyway), so that the frame's string can be
	 * freed at once; the string itself where there is no memfd. */
	if (corpus_from_text_memfd(text, len, out) == 0)
		return 0;
	*out = corpus_borrow_text(text, len);
	return 0;
}

char *rlm__node_ctx_prompt(const struct calls *c, const struct repl_ctx_arg *a, const char *p,
		      size_t n, size_t *len, char *msg, size_t cap)
{
	const struct corpus *ctx = c->ctx;
	struct buf b;
	size_t off, tlen;
	if (rlm__node_ctx_check(c, a, msg, cap))
		return NULL;
	buf_init(&b, 0);
	buf_append(&b, p, n);
	buf_puts(&b, "\n\n");
	switch (a->kind) {
	case REPL_CTX_TEXT:
		buf_append(&b, a->text, a->len);
		break;
	case REPL_CTX_LIST:
		for (size_t i = 0; i < a->n_items; i++) {
			if (i)
				buf_puts(&b, "\n\n");
			buf_append(&b, a->items[i], a->item_lens[i]);
		}
		break;
	case REPL_CTX_SLICE:
		node_text(ctx, &off, &tlen);
		buf_append(&b, ctx->buf + off + a->a, (size_t)a->b);
		corpus_release_range(ctx, off + (size_t)a->a, (size_t)a->b);
		break;
	case REPL_CTX_RUN:
		for (size_t i = (size_t)a->a; i < (size_t)a->b; i++) {
			if (i > a->a)
				buf_puts(&b, "\n\n");
			buf_append(&b, ctx->buf + ctx->docs[i].off, ctx->docs[i].len);
			corpus_release_range(ctx, ctx->docs[i].off, ctx->docs[i].len);
		}
		break;
	default:
		break;
	}
	return buf_detach(&b, len);
}
