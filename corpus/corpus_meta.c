/* SPDX-License-Identifier: MIT */
/* corpus/corpus_meta.c -- who each document is: its metadata line, its
 * lookup by id, and the lines as the REPL's `documents` reads them.
 *
 * DESIGN
 * A document's identity is its id (corpus_doc.id) and, for a JSONL record,
 * a metadata line built when it was decoded (corpus_doc.info); the line of
 * any other document is made from its id when asked for. A memfd the
 * loaders build holds every line after the text and the documents' table,
 * with a table of its own, so a REPL worker reads a document's identity
 * when the model asks for it and a child's view of a run of documents
 * points at the run's entries: nothing is copied, nothing is held twice
 * in Python.
 */
#include "corpus_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define META_FLUSH ((size_t)1 << 20) /* lines written in pieces of this */

/* Where a document of c came from, as its metadata's "path": a
 * directory's relative path, a single file's path as given. */
static const char *doc_path(const struct corpus *c, const struct corpus_doc *d)
{
	if (c->kind == CORPUS_DIR)
		return d->id;
	if (c->kind == CORPUS_TEXT && c->source && strcmp(c->source, "-") != 0)
		return c->source;
	return NULL;
}

int corpus_doc_info(const struct corpus *c, size_t i, struct buf *out)
{
	const struct corpus_doc *d = &c->docs[i];
	const char *path;
	char idx[24], *s;
	cJSON *o;
	int rc;
	if (d->info)
		return buf_puts(out, d->info) ? RLM_ETOOBIG : 0;
	snprintf(idx, sizeof(idx), "%zu", i);
	path = doc_path(c, d);
	o = cJSON_CreateObject();
	json_add_str(o, "id", d->id ? d->id : idx);
	json_add(o, "path", path ? cJSON_CreateString(path) : cJSON_CreateNull());
	json_add(o, "title", cJSON_CreateNull());
	json_add(o, "meta", cJSON_CreateObject());
	s = json_print(o);
	cJSON_Delete(o);
	rc = buf_puts(out, s) ? RLM_ETOOBIG : 0;
	free(s);
	return rc;
}

/* A string or number field as an id: its text, or NULL. */
static char *id_text(const cJSON *it)
{
	double v;
	if (cJSON_IsString(it))
		return xstrdup(it->valuestring);
	if (!cJSON_IsNumber(it))
		return NULL;
	v = it->valuedouble;
	if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
		return xasprintf("%.0f", v);
	return xasprintf("%.17g", v);
}

int corpus__record_identity(const cJSON *j, const char *skip, bool scalars_only, size_t fallback,
			    const char *path, char **id, char **info, const char **bad_key)
{
	static const char *const keys[] = {"id", "docid"};
	const char *id_key = NULL;
	const cJSON *it, *title = cJSON_IsObject(j) ? json_get(j, "title") : NULL;
	const cJSON *fields = cJSON_IsObject(j) ? j : NULL;
	cJSON *o, *meta;
	*id = *info = NULL;
	for (size_t k = 0; cJSON_IsObject(j) && k < ARRAY_SIZE(keys) && !*id; k++)
		if ((*id = id_text(json_get(j, keys[k]))))
			id_key = keys[k];
	if (*id && !text_utf8_valid(*id, strlen(*id), NULL)) {
		free(*id);
		*id = NULL;
		*bad_key = id_key;
		return RLM_EPARSE;
	}
	if (*id && !**id) { /* an empty id names nothing */
		free(*id);
		*id = NULL;
		id_key = NULL;
	}
	if (!*id)
		*id = xasprintf("%zu", fallback);
	o = cJSON_CreateObject();
	json_add_str(o, "id", *id);
	json_add(o, "path", path ? cJSON_CreateString(path) : cJSON_CreateNull());
	json_add(o, "title", cJSON_IsString(title) ? cJSON_CreateString(title->valuestring)
						   : cJSON_CreateNull());
	meta = cJSON_CreateObject();
	cJSON_ArrayForEach(it, fields)
	{
		if (!it->string || (cJSON_IsString(title) && it == title) ||
		    (skip && strcmp(it->string, skip) == 0) ||
		    (id_key && strcmp(it->string, id_key) == 0) ||
		    (scalars_only && (cJSON_IsArray(it) || cJSON_IsObject(it) ||
				      (cJSON_IsString(it) && strlen(it->valuestring) > CORPUS_META_STR))))
			continue;
		json_add(meta, it->string, cJSON_Duplicate(it, 1));
	}
	json_add(o, "meta", meta);
	*info = json_print(o);
	cJSON_Delete(o);
	return 0;
}

long corpus_doc_find(const struct corpus *c, const char *id, size_t len)
{
	size_t k = 0;
	if (!c || !id)
		return -1;
	for (size_t i = 0; i < c->n_docs; i++) {
		const char *d = c->docs[i].id;
		if (d && strlen(d) == len && memcmp(d, id, len) == 0)
			return (long)i;
	}
	/* A decimal index, without sign or leading zeros. */
	if (!len || len > 18 || (id[0] == '0' && len > 1))
		return -1;
	for (size_t j = 0; j < len; j++) {
		if (id[j] < '0' || id[j] > '9')
			return -1;
		k = k * 10 + (size_t)(id[j] - '0');
	}
	return k < c->n_docs ? (long)k : -1;
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t at)
{
	const char *s = p;
	while (n) {
		ssize_t w = pwrite(fd, s, n, (off_t)at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	return 0;
}

static void put_le64(unsigned char *t, uint64_t v)
{
	for (int j = 0; j < 8; j++)
		t[j] = (unsigned char)(v >> (8 * j));
}

int corpus__meta_write(int fd, uint64_t at, const struct corpus *c, uint64_t *table_at)
{
	unsigned char *table = xmalloc(16 * (c->n_docs ? c->n_docs : 1));
	struct buf b;
	uint64_t flushed = at;
	int rc = 0;
	buf_init(&b, 0);
	for (size_t i = 0; i < c->n_docs && !rc; i++) {
		size_t from = b.len;
		if (corpus_doc_info(c, i, &b) || buf_putc(&b, '\n')) {
			rc = -ENOMEM;
			break;
		}
		put_le64(table + 16 * i, flushed + from);
		put_le64(table + 16 * i + 8, b.len - from - 1);
		if (b.len >= META_FLUSH) {
			rc = pwrite_all(fd, b.p, b.len, flushed);
			flushed += b.len;
			buf_reset(&b);
		}
	}
	if (!rc && b.len) {
		rc = pwrite_all(fd, b.p, b.len, flushed);
		flushed += b.len;
	}
	if (!rc)
		rc = pwrite_all(fd, table, 16 * c->n_docs, flushed);
	*table_at = flushed;
	buf_release(&b);
	free(table);
	return rc;
}
