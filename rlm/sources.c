/* SPDX-License-Identifier: MIT */
/* rlm/sources.c -- an answer's sources: what the worker says the answer
 * rests on, checked against the node's context (a citation rlm reports is
 * never invented), and as JSON. */
#include "solve_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_SHOWN 60 /* characters of a dropped quote the notice shows */

void rlm__sources_free(struct rlm_source *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].doc);
		free(s[i].quote);
	}
	free(s);
}

/* A document's id as a fresh string (its index when it has none). */
static char *doc_id(const struct corpus *ctx, size_t i)
{
	if (ctx->docs[i].id)
		return xstrdup(ctx->docs[i].id);
	return xasprintf("%zu", i);
}

/* Check one source against ctx; fills *s (canonical id, range, quote)
 * and returns NULL, or returns why it is dropped (appended to why). */
static bool check_one(const struct corpus *ctx, const struct repl_source *in, struct rlm_source *s,
		      struct buf *why)
{
	long i = corpus_doc_find(ctx, in->doc, strlen(in->doc));
	const char *d;
	size_t dlen, qlen = in->quote ? strlen(in->quote) : 0;
	int64_t start = in->start, end = in->end;
	if (i < 0) {
		buf_printf(why, "'%.200s': no such document", in->doc);
		return false;
	}
	d = ctx->buf + ctx->docs[i].off;
	dlen = ctx->docs[i].len;
	if (qlen) {
		/* At the range given, else anywhere in the document: then the
		 * range is where it is (the first time). */
		bool at = start >= 0 && (uint64_t)start <= dlen && qlen <= dlen - (size_t)start &&
			  (end < 0 || (uint64_t)end == (uint64_t)start + qlen) &&
			  memcmp(d + start, in->quote, qlen) == 0;
		if (!at) {
			const char *p = memmem(d, dlen, in->quote, qlen);
			size_t show = text_utf8_offset(in->quote, qlen, QUOTE_SHOWN);
			if (!p) {
				buf_printf(why, "'%.200s': the quote \"%.*s%s\" is not in it", in->doc,
					   (int)show, in->quote, show < qlen ? "..." : "");
				return false;
			}
			if (start >= 0 || end >= 0) {
				start = p - d;
				end = start + (int64_t)qlen;
			}
		} else {
			end = start + (int64_t)qlen;
		}
	} else if ((start >= 0 && (uint64_t)start > dlen) || (end >= 0 && (uint64_t)end > dlen) ||
		   (start >= 0 && end >= 0 && start > end)) {
		buf_printf(why, "'%.200s': the range [%lld, %lld) is not in its %zu bytes", in->doc,
			   (long long)start, (long long)end, dlen);
		return false;
	}
	s->doc = doc_id(ctx, (size_t)i);
	s->start = start;
	s->end = end;
	s->quote = qlen ? xstrdup(in->quote) : NULL;
	return true;
}

size_t rlm__sources_check(const struct corpus *ctx, const struct repl_source *in, size_t n,
			  struct rlm_source **out, size_t *n_out, struct buf *why)
{
	size_t dropped = 0;
	*out = n ? xcalloc(n, sizeof(**out)) : NULL;
	*n_out = 0;
	for (size_t i = 0; i < n; i++) {
		struct buf one = BUF_INIT;
		if (check_one(ctx, &in[i], &(*out)[*n_out], &one)) {
			(*n_out)++;
		} else {
			buf_printf(why, "%s%.*s", dropped ? "; " : "", (int)one.len, one.p);
			dropped++;
		}
		buf_release(&one);
	}
	if (!*n_out) {
		free(*out);
		*out = NULL;
	}
	return dropped;
}

void rlm__sources_add_doc(struct rlm_result *r, const struct corpus *ctx, size_t doc)
{
	char *id = doc_id(ctx, doc);
	for (size_t i = 0; i < r->n_sources; i++) {
		if (strcmp(r->sources[i].doc, id) == 0 && r->sources[i].start < 0 &&
		    !r->sources[i].quote) {
			free(id);
			return;
		}
	}
	r->sources = xrealloc(r->sources, (r->n_sources + 1) * sizeof(*r->sources));
	r->sources[r->n_sources++] = (struct rlm_source){id, -1, -1, NULL};
}

cJSON *rlm_sources_json(const struct rlm_source *s, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		json_add(o, "doc", cJSON_CreateString(s[i].doc));
		if (s[i].start >= 0)
			json_add_num(o, "start", (double)s[i].start);
		if (s[i].end >= 0)
			json_add_num(o, "end", (double)s[i].end);
		if (s[i].quote)
			json_add(o, "quote", cJSON_CreateString(s[i].quote));
		json_add(a, NULL, o);
	}
	return a;
}

void rlm__sources_parse(const char *json, struct rlm_source **out, size_t *n_out)
{
	cJSON *a = json_parse(json, strlen(json)), *it;
	size_t n = 0;
	*out = NULL;
	*n_out = 0;
	if (!cJSON_IsArray(a)) {
		cJSON_Delete(a);
		return;
	}
	*out = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(**out));
	cJSON_ArrayForEach(it, a)
	{
		const char *doc = json_str(it, "doc"), *quote = json_str(it, "quote");
		if (!doc)
			continue;
		(*out)[n++] = (struct rlm_source){xstrdup(doc), json_int(it, "start", -1),
						  json_int(it, "end", -1),
						  quote ? xstrdup(quote) : NULL};
	}
	cJSON_Delete(a);
	*n_out = n;
	if (!n) {
		free(*out);
		*out = NULL;
	}
}
