/* SPDX-License-Identifier: MIT */
/* rlm/service_corpus.c -- the service's corpora: loaded once from a path
 * under a root, or made from text or documents, and kept by the digest of
 * their content (a context sent twice is held once and keeps its id). */
#include "service_int.h"
#include "../common/json.h"
#include "../store/store.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void svc__grow(void *pp, size_t *cap, size_t n, size_t size)
{
	void **p = pp;
	if (n < *cap)
		return;
	*cap = *cap ? *cap * 2 : 16;
	*p = xrealloc(*p, *cap * size);
}

/* Is path (a realpath) root or under it, on whole components? */
static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool in_roots(const struct service *s, const char *real)
{
	for (size_t i = 0; i < s->n_roots; i++)
		if (under(real, s->roots[i]))
			return true;
	return false;
}

/* The id of a corpus: a digest of its kind, text and document bounds. */
static void corpus_id(const struct corpus *c, char id[24])
{
	struct store_kb kb;
	struct store_key k;
	uint64_t v = 0;
	store_kb_init(&kb, "svc-corpus/1");
	store_kb_i64(&kb, (int64_t)c->kind);
	store_kb_str(&kb, c->buf ? c->buf : "", c->len);
	store_kb_i64(&kb, (int64_t)c->n_docs);
	for (size_t i = 0; c->kind != CORPUS_TEXT && i < c->n_docs; i++) {
		store_kb_i64(&kb, (int64_t)c->docs[i].off);
		store_kb_i64(&kb, (int64_t)c->docs[i].len);
	}
	store_kb_final(&kb, &k);
	for (int i = 0; i < 8; i++)
		v = v << 8 | k.b[i];
	snprintf(id, 24, "c-%016llx", (unsigned long long)v);
}

struct svc_corp *svc__corp_find(struct service *s, const char *id)
{
	for (size_t i = 0; i < s->n_corp; i++)
		if (strcmp(s->corp[i]->info.id, id) == 0)
			return s->corp[i];
	return NULL;
}

/* Keep c (consumed) unless the same content is kept already. */
static void corpus_keep(struct service *s, struct corpus *c, struct svc_corpus_info *info)
{
	struct svc_corp *k;
	char id[24];
	corpus_id(c, id);
	pthread_mutex_lock(&s->mu);
	if ((k = svc__corp_find(s, id))) {
		corpus_free(c);
	} else {
		k = xcalloc(1, sizeof(*k));
		k->c = c;
		memcpy(k->info.id, id, sizeof(id));
		k->info.kind = corpus_kind_name(c->kind);
		k->info.documents = c->n_docs;
		k->info.bytes = c->len;
		k->info.tokens_estimate = llm_estimate_tokens(c->len);
		svc__grow(&s->corp, &s->cap_corp, s->n_corp, sizeof(*s->corp));
		s->corp[s->n_corp++] = k;
	}
	*info = k->info;
	pthread_mutex_unlock(&s->mu);
}

int svc_corpus_load(struct service *s, const char *path, enum corpus_kind kind,
		    struct svc_corpus_info *info, struct rlm_err *err)
{
	struct corpus_opts co = {0};
	struct corpus *c = NULL;
	char real[PATH_MAX];
	int rc;
	if (!s->n_roots)
		return rlm_err_set(err, SVC_EFORBIDDEN,
				   "cannot read '%s': no directory is open to paths (start the "
				   "server with --root DIR)",
				   path);
	if (!realpath(path, real)) {
		int e = errno;
		char *dir = xstrdup(path), *slash = strrchr(dir, '/');
		bool inside;
		/* Say that it is missing only where the client may look. */
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		inside = slash && realpath(dir, real) && in_roots(s, real);
		free(dir);
		if (!inside)
			return rlm_err_set(err, SVC_EFORBIDDEN,
					   "'%s' is outside the server's roots", path);
		return rlm_err_set(err, -e, "cannot open '%s': %s", path, strerror(e));
	}
	if (!in_roots(s, real))
		return rlm_err_set(err, SVC_EFORBIDDEN, "'%s' is outside the server's roots", path);
	co.kind = kind;
	co.quiet = true;
	/* A link in a directory under a root could point anywhere. */
	co.no_symlinks = true;
	if ((rc = corpus_load(real, &co, &c, err)))
		return rc;
	corpus_keep(s, c, info);
	return 0;
}

int svc__check_text(const char *what, const char *t, size_t len, struct rlm_err *err)
{
	size_t bad = 0;
	if (memchr(t, '\0', len))
		return rlm_err_set(err, RLM_EINVAL, "%s holds a NUL character", what);
	if (!utf8_valid(t, len, &bad))
		return rlm_err_set(err, RLM_EINVAL, "%s is not valid UTF-8 (at byte %zu)", what,
				   bad);
	return 0;
}

int svc_corpus_text(struct service *s, const char *text, size_t len, const char *const *docs,
		    const size_t *lens, size_t n, struct svc_corpus_info *info, struct rlm_err *err)
{
	struct corpus *c = NULL;
	int rc;
	if (!docs) {
		if (!text || !len)
			return rlm_err_set(err, RLM_EINVAL, "the context is empty");
		if ((rc = svc__check_text("the context", text, len, err)))
			return rc;
		corpus_keep(s, corpus_from_text(text, len), info);
		return 0;
	}
	/* Documents: one JSON string per line, decoded as a JSONL file is. */
	{
		struct buf b = BUF_INIT;
		char what[48];
		if (!n)
			return rlm_err_set(err, RLM_EINVAL, "there are no documents");
		for (size_t i = 0; i < n; i++) {
			char *t, *line;
			cJSON *j;
			snprintf(what, sizeof(what), "document %zu", i);
			if (!lens[i]) {
				buf_release(&b);
				return rlm_err_set(err, RLM_EINVAL, "document %zu is empty", i);
			}
			if ((rc = svc__check_text(what, docs[i], lens[i], err))) {
				buf_release(&b);
				return rc;
			}
			t = xstrndup(docs[i], lens[i]);
			j = cJSON_CreateString(t);
			line = j ? json_print(j) : NULL;
			cJSON_Delete(j);
			free(t);
			if (!line) {
				buf_release(&b);
				return rlm_err_set(err, RLM_EINVAL, "cannot encode document %zu",
						   i);
			}
			buf_puts(&b, line);
			buf_putc(&b, '\n');
			free(line);
		}
		rc = corpus_from_jsonl_buf("documents", b.p, b.len, &c, err);
		buf_release(&b);
		if (rc)
			return rc;
	}
	corpus_keep(s, c, info);
	return 0;
}

int svc_corpus_get(struct service *s, const char *id, struct svc_corpus_info *info)
{
	struct svc_corp *k;
	pthread_mutex_lock(&s->mu);
	k = svc__corp_find(s, id);
	if (k)
		*info = k->info;
	pthread_mutex_unlock(&s->mu);
	return k ? 0 : RLM_ENOTFOUND;
}

void svc__corpora_free(struct service *s)
{
	for (size_t i = 0; i < s->n_corp; i++) {
		corpus_free(s->corp[i]->c);
		free(s->corp[i]);
	}
	free(s->corp);
	s->corp = NULL;
	s->n_corp = s->cap_corp = 0;
}
