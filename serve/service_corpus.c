/* SPDX-License-Identifier: MIT */
/* serve/service_corpus.c -- the service's roots and corpora: a corpus is
 * loaded once from a path under a root (resolved beneath the root's
 * descriptor, no link followed), or made from text or documents, and kept
 * by the digest of its content (a context sent twice is held once and
 * keeps its id); reference counted, registered ones kept until deleted,
 * the others in a cache of a fixed size once unused (the least recently
 * used leave first). */
#include "service_int.h"
#include "../common/json.h"
#include "../store/store.h"
#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHED_MAX 4096 /* unused unregistered corpora kept, at most */

void serve__grow(void *pp, size_t *cap, size_t n, size_t size)
{
	void **p = pp;
	if (n < *cap)
		return;
	*cap = *cap ? *cap * 2 : 16;
	*p = xrealloc(*p, *cap * size);
}

/* ---- the roots ---- */

/* path made absolute against the working directory, its "." components
 * and repeated slashes dropped, ".." kept (the kernel resolves those,
 * beneath a root). The caller's to free; NULL when the working directory
 * is unknown. */
static char *abs_clean(const char *path)
{
	struct buf b = BUF_INIT;
	char *cwd = NULL, *joined, *save = NULL, *comp;
	if (path[0] != '/') {
		if (!(cwd = getcwd(NULL, 0)))
			return NULL;
		joined = xasprintf("%s/%s", cwd, path);
		free(cwd);
	} else {
		joined = xstrdup(path);
	}
	for (comp = strtok_r(joined, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0)
			continue;
		buf_putc(&b, '/');
		buf_puts(&b, comp);
	}
	free(joined);
	if (!b.len)
		buf_putc(&b, '/');
	return buf_detach(&b, NULL);
}

/* Is path root or under it, on whole components? Both are absolute and
 * clean (abs_clean); no file is looked at. Returns the length of root's
 * part of path, or 0 when path is not under it. */
static size_t under(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (strcmp(root, "/") == 0)
		return 1;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/') ? n : 0;
}

int serve__roots_open(struct service *s, const char *const *roots, struct rlm_err *err)
{
	size_t cap = 0;
	for (size_t i = 0; roots && roots[i]; i++) {
		struct svc_root r = {NULL, NULL, -1};
		struct stat by_fd, by_name;
		char real[PATH_MAX];
		r.fd = open(roots[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (r.fd < 0)
			return rlm_err_set(err, RLM_EINVAL, "cannot use root '%s': %s", roots[i],
					   strerror(errno));
		/* Its name, for matching request paths: the directory opened. */
		if (!realpath(roots[i], real) || stat(real, &by_name) < 0 ||
		    fstat(r.fd, &by_fd) < 0) {
			int e = errno;
			close(r.fd);
			return rlm_err_set(err, RLM_EINVAL, "cannot use root '%s': %s", roots[i],
					   strerror(e));
		}
		if (by_name.st_dev != by_fd.st_dev || by_name.st_ino != by_fd.st_ino) {
			close(r.fd);
			return rlm_err_set(
			    err, RLM_EINVAL,
			    "cannot use root '%s': it was replaced while it was opened", roots[i]);
		}
		r.real = xstrdup(real);
		r.given = abs_clean(roots[i]);
		if (!r.given)
			r.given = xstrdup(real);
		serve__grow(&s->roots, &cap, s->n_roots, sizeof(*s->roots));
		s->roots[s->n_roots++] = r;
	}
	return 0;
}

void serve__roots_close(struct service *s)
{
	for (size_t i = 0; i < s->n_roots; i++) {
		close(s->roots[i].fd);
		free(s->roots[i].real);
		free(s->roots[i].given);
	}
	free(s->roots);
	s->roots = NULL;
	s->n_roots = 0;
}

/* The root abs (abs_clean'd) lies under, by its name at start or as
 * given, the longest match: its index, with *rel pointing into abs at
 * what lies beneath it ("" for the root itself); or -1. */
static long root_of(const struct service *s, const char *abs, const char **rel)
{
	long best = -1;
	size_t best_n = 0;
	for (size_t i = 0; i < s->n_roots; i++) {
		const char *names[2] = {s->roots[i].real, s->roots[i].given};
		for (int k = 0; k < 2; k++) {
			size_t n = under(abs, names[k]);
			if (n > best_n) {
				best = (long)i;
				best_n = n;
			}
		}
	}
	if (best >= 0) {
		const char *r = abs + best_n;
		while (*r == '/')
			r++;
		*rel = r;
	}
	return best;
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

/* The corpus of id in the registry (s->mu held), or NULL. */
static struct svc_corp *corp_find(struct service *s, const char *id)
{
	for (size_t i = 0; i < s->n_corp; i++)
		if (strcmp(s->corp[i]->info.id, id) == 0)
			return s->corp[i];
	return NULL;
}

static void corp_free(struct svc_corp *k)
{
	corpus_free(k->c);
	free(k);
}

/* k is to go (s->mu held): freed by serve__corp_reap, after the lock. */
static void corp_bury(struct service *s, struct svc_corp *k)
{
	k->next_dead = s->dead;
	s->dead = k;
}

void serve__corp_reap(struct service *s)
{
	struct svc_corp *k;
	pthread_mutex_lock(&s->mu);
	k = s->dead;
	s->dead = NULL;
	pthread_mutex_unlock(&s->mu);
	while (k) {
		struct svc_corp *next = k->next_dead;
		corp_free(k);
		k = next;
	}
}

/* Take k out of the registry (s->mu held). */
static void corp_unlink(struct service *s, struct svc_corp *k)
{
	for (size_t i = 0; i < s->n_corp; i++) {
		if (s->corp[i] == k) {
			memmove(s->corp + i, s->corp + i + 1,
				(s->n_corp - i - 1) * sizeof(*s->corp));
			s->n_corp--;
			return;
		}
	}
}

static bool cached(const struct svc_corp *k)
{
	return !k->registered && !k->refs;
}

/* Cut the cache of unused unregistered corpora to its size (and to
 * CACHED_MAX of them, which bounds the scans of the registry), the least
 * recently used first (s->mu held). */
static void trim_locked(struct service *s)
{
	for (;;) {
		struct svc_corp *lru = NULL;
		size_t bytes = 0, n = 0;
		for (size_t i = 0; i < s->n_corp; i++) {
			struct svc_corp *k = s->corp[i];
			if (!cached(k))
				continue;
			bytes += k->mem;
			n++;
			if (!lru || k->used < lru->used)
				lru = k;
		}
		if (!lru || (bytes <= s->corpus_cache && n <= CACHED_MAX))
			return;
		corp_unlink(s, lru);
		corp_bury(s, lru);
	}
}

void serve__corp_put_locked(struct service *s, struct svc_corp *k)
{
	if (--k->refs > 0)
		return;
	k->used = ++s->tick;
	if (k->deleted)
		corp_bury(s, k);
	else if (!k->registered)
		trim_locked(s);
}

/* info of k, with its state; hold: the caller takes one (s->mu held). */
static void corp_info(struct svc_corp *k, bool hold, struct svc_corpus_info *info)
{
	if (hold)
		k->refs++;
	*info = k->info;
	info->registered = k->registered;
	info->in_use = k->refs;
	info->hold = hold ? k : NULL;
}

/* Keep c (consumed) unless the same content is kept already; flags as
 * serve_corpus_load's. */
static void corpus_keep(struct service *s, struct corpus *c, unsigned flags,
			struct svc_corpus_info *info)
{
	struct svc_corp *k;
	char id[24];
	corpus_id(c, id);
	pthread_mutex_lock(&s->mu);
	if ((k = corp_find(s, id))) {
		corpus_free(c);
	} else {
		k = xcalloc(1, sizeof(*k));
		k->c = c;
		memcpy(k->info.id, id, sizeof(id));
		k->info.kind = corpus_kind_name(c->kind);
		k->info.documents = c->n_docs;
		k->info.bytes = c->len;
		k->info.tokens_estimate = llm_estimate_tokens(c->len);
		k->mem = c->len + c->n_docs * sizeof(*c->docs) + sizeof(*k);
		k->used = ++s->tick;
		serve__grow(&s->corp, &s->cap_corp, s->n_corp, sizeof(*s->corp));
		s->corp[s->n_corp++] = k;
	}
	if (flags & SVC_CORPUS_KEEP)
		k->registered = true;
	corp_info(k, flags & SVC_CORPUS_HOLD, info);
	/* neither kept nor held: it may go at once */
	if (!(flags & (SVC_CORPUS_KEEP | SVC_CORPUS_HOLD)))
		trim_locked(s);
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);
}

int serve_corpus_load(struct service *s, const char *path, enum corpus_kind kind, unsigned flags,
		      struct svc_corpus_info *info, struct rlm_err *err)
{
	struct corpus_opts co = {0};
	struct corpus *c = NULL;
	const char *rel = NULL;
	char *abs;
	long r;
	int rc;
	if (!s->n_roots)
		return rlm_err_set(err, SVC_EFORBIDDEN,
				   "cannot read '%s': no directory is open to paths (start the "
				   "server with --root DIR)",
				   path);
	if (!(abs = abs_clean(path)))
		return rlm_err_set(err, -errno, "cannot resolve '%s': %s", path, strerror(errno));
	/* Which root, by name alone; what lies beneath it is resolved by the
	 * kernel beneath the root's descriptor, and read through the
	 * descriptors so opened (corpus_load_at): never by name again, so a
	 * file swapped for a link meanwhile cannot lead out. */
	if ((r = root_of(s, abs, &rel)) < 0) {
		free(abs);
		return rlm_err_set(err, SVC_EFORBIDDEN, "'%s' is outside the server's roots", path);
	}
	co.kind = kind;
	co.quiet = true;
	rc = corpus_load_at(s->roots[r].fd, rel, abs, &co, &c, err);
	if (rc == -ELOOP)
		rc = rlm_err_set(err, SVC_EFORBIDDEN,
				 "path '%s' crosses a symlink; not followed under --root", path);
	else if (rc == -EXDEV)
		rc = rlm_err_set(err, SVC_EFORBIDDEN, "'%s' is outside the server's roots", path);
	free(abs);
	if (rc)
		return rc;
	corpus_keep(s, c, flags, info);
	return 0;
}

int serve__check_text(const char *what, const char *t, size_t len, struct rlm_err *err)
{
	size_t bad = 0;
	if (memchr(t, '\0', len))
		return rlm_err_set(err, RLM_EINVAL, "%s holds a NUL character", what);
	if (!text_utf8_valid(t, len, &bad))
		return rlm_err_set(err, RLM_EINVAL, "%s is not valid UTF-8 (at byte %zu)", what,
				   bad);
	return 0;
}

int serve_corpus_text(struct service *s, const char *text, size_t len, const char *const *docs,
		    const size_t *lens, size_t n, unsigned flags, struct svc_corpus_info *info,
		    struct rlm_err *err)
{
	struct corpus *c = NULL;
	int rc;
	if (!docs) {
		if (!text || !len)
			return rlm_err_set(err, RLM_EINVAL, "the context is empty");
		if ((rc = serve__check_text("the context", text, len, err)))
			return rc;
		corpus_keep(s, corpus_from_text(text, len), flags, info);
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
			if ((rc = serve__check_text(what, docs[i], lens[i], err))) {
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
	corpus_keep(s, c, flags, info);
	return 0;
}

int serve_corpus_json(struct service *s, const char *text, size_t len, unsigned flags,
		      struct svc_corpus_info *info, struct rlm_err *err)
{
	struct corpus *c = NULL;
	int rc = corpus_from_json(text, len, &c, err);
	if (rc)
		return rc;
	corpus_keep(s, c, flags, info);
	return 0;
}

int serve_corpus_value(struct service *s, const cJSON *v, unsigned flags,
		       struct svc_corpus_info *info, struct rlm_err *err)
{
	const cJSON *it;
	bool strs = cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0;
	char *text;
	int rc;
	if (cJSON_IsString(v))
		return serve_corpus_text(s, v->valuestring, strlen(v->valuestring), NULL, NULL, 0,
					 flags, info, err);
	const cJSON *arr = strs ? v : NULL;
	cJSON_ArrayForEach(it, arr) strs = strs && cJSON_IsString(it);
	if (strs) {
		size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
		const char **d = xcalloc(n, sizeof(*d));
		size_t *lens = xcalloc(n, sizeof(*lens));
		cJSON_ArrayForEach(it, v)
		{
			d[i] = it->valuestring;
			lens[i++] = strlen(it->valuestring);
		}
		rc = serve_corpus_text(s, NULL, 0, d, lens, n, flags, info, err);
		free(d);
		free(lens);
		return rc;
	}
	if (!(text = json_print(v)))
		return rlm_err_set(err, RLM_EINVAL, "cannot print the context as JSON");
	rc = serve_corpus_json(s, text, strlen(text), flags, info, err);
	free(text);
	return rc;
}

int serve_corpus_get(struct service *s, const char *id, unsigned flags, struct svc_corpus_info *info)
{
	struct svc_corp *k;
	pthread_mutex_lock(&s->mu);
	k = corp_find(s, id);
	if (k)
		corp_info(k, flags & SVC_CORPUS_HOLD, info);
	pthread_mutex_unlock(&s->mu);
	return k ? 0 : RLM_ENOTFOUND;
}

void serve_corpus_put(struct service *s, struct svc_corp *hold)
{
	if (!hold)
		return;
	pthread_mutex_lock(&s->mu);
	serve__corp_put_locked(s, hold);
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);
}

int serve_corpus_delete(struct service *s, const char *id, struct svc_corpus_info *info)
{
	struct svc_corp *k;
	pthread_mutex_lock(&s->mu);
	if ((k = corp_find(s, id))) {
		corp_info(k, false, info);
		corp_unlink(s, k);
		if (k->refs)
			k->deleted = true; /* its runs free it */
		else
			corp_bury(s, k);
	}
	pthread_mutex_unlock(&s->mu);
	serve__corp_reap(s);
	return k ? 0 : RLM_ENOTFOUND;
}

void serve__corpora_stats_locked(struct service *s, cJSON *o)
{
	cJSON *c = cJSON_CreateObject();
	size_t n[3] = {0, 0, 0}, bytes[3] = {0, 0, 0};
	for (size_t i = 0; i < s->n_corp; i++) {
		const struct svc_corp *k = s->corp[i];
		int st = k->registered ? 0 : k->refs ? 1 : 2;
		n[st]++;
		bytes[st] += k->mem;
	}
	json_add_num(c, "registered", (double)n[0]);
	json_add_num(c, "registered_bytes", (double)bytes[0]);
	json_add_num(c, "in_use", (double)n[1]);
	json_add_num(c, "in_use_bytes", (double)bytes[1]);
	json_add_num(c, "cached", (double)n[2]);
	json_add_num(c, "cached_bytes", (double)bytes[2]);
	json_add(o, "corpora", c);
}

void serve__corpora_free(struct service *s)
{
	serve__corp_reap(s);
	for (size_t i = 0; i < s->n_corp; i++)
		corp_free(s->corp[i]);
	free(s->corp);
	s->corp = NULL;
	s->n_corp = s->cap_corp = 0;
}
