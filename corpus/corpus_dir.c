/* SPDX-License-Identifier: MIT */
/* corpus/corpus_dir.c -- loading a directory of documents: the walk, and each
 * file read into the corpus buffer.
 *
 * DESIGN
 * A directory is walked first (names only), the relative paths are sorted,
 * and then each file is read straight into the buffer; a file that turns
 * out to be binary is cut off again, so the buffer never holds anything
 * but accepted documents and their '\n' separators.
 */
#include "corpus_int.h"
#include "../common/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256

struct walk {
	const char *root; /* the path given, for messages */
	bool quiet;
	bool no_symlinks; /* symbolic links are skipped, not followed */
	char **paths; /* relative paths of candidate files; owned */
	size_t n, cap;
};

static void walk_push(struct walk *w, char *rel)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->paths = xrealloc(w->paths, w->cap * sizeof(*w->paths));
	}
	w->paths[w->n++] = rel;
}

static void warn_skip(const struct walk *w, const char *rel, const char *why)
{
	if (!w->quiet)
		log_warn("skipping '%s': %s", rel, why);
}

/* Collect the regular files under dfd (which this call takes over), whose
 * path relative to the root is prefix (NULL at the root). */
static int walk_dir(struct walk *w, int dfd, const char *prefix, int depth, struct rlm_err *err)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int rc = 0;
	if (!d) {
		rc = -errno;
		close(dfd);
		return rlm_err_set(err, rc, "cannot read directory '%s/%s': %s", w->root,
				   prefix ? prefix : "", strerror(-rc));
	}
	for (;;) {
		struct stat st;
		char *rel;
		int type;
		errno = 0;
		if (!(e = readdir(d))) {
			if (errno)
				rc = rlm_err_set(err, -errno, "cannot read directory '%s%s%s': %s",
						 w->root, prefix ? "/" : "", prefix ? prefix : "",
						 strerror(errno));
			break;
		}
		if (e->d_name[0] == '.')
			continue;
		rel = prefix ? xasprintf("%s/%s", prefix, e->d_name) : xstrdup(e->d_name);
		type = e->d_type;
		if (type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				rc = rlm_err_set(err, -errno, "cannot stat '%s/%s': %s", w->root,
						 rel, strerror(errno));
				free(rel);
				break;
			}
			type = S_ISDIR(st.st_mode)   ? DT_DIR
			       : S_ISREG(st.st_mode) ? DT_REG
			       : S_ISLNK(st.st_mode) ? DT_LNK
						     : DT_UNKNOWN;
		}
		if (type == DT_LNK && w->no_symlinks) {
			warn_skip(w, rel, "symbolic link (not followed here)");
			free(rel);
			continue;
		}
		if (type == DT_LNK) {
			if (fstatat(dirfd(d), e->d_name, &st, 0) < 0)
				warn_skip(w, rel, "dangling symbolic link");
			else if (S_ISREG(st.st_mode))
				type = DT_REG;
			else if (S_ISDIR(st.st_mode))
				warn_skip(w, rel, "symbolic link to a directory (not followed)");
			else
				warn_skip(w, rel, "not a regular file");
			if (type != DT_REG) {
				free(rel);
				continue;
			}
		}
		if (type == DT_REG) {
			walk_push(w, rel);
		} else if (type == DT_DIR) {
			int sub;
			if (depth >= MAX_DEPTH) {
				rc = rlm_err_set(
				    err, RLM_EINVAL,
				    "cannot walk '%s/%s': directories nested too deeply", w->root,
				    rel);
				free(rel);
				break;
			}
			sub = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = rlm_err_set(err, -errno, "cannot open '%s/%s': %s", w->root,
						 rel, strerror(errno));
				free(rel);
				break;
			}
			rc = walk_dir(w, sub, rel, depth + 1, err);
			free(rel);
			if (rc)
				break;
		} else {
			warn_skip(w, rel, "not a regular file");
			free(rel);
		}
	}
	closedir(d);
	return rc;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Why s[0..len) is no text, or NULL: the first of a NUL byte and a bad
 * UTF-8 sequence. */
static const char *not_text(const char *s, size_t len)
{
	const char *nul = memchr(s, 0, len);
	if (!text_utf8_valid(s, nul ? (size_t)(nul - s) : len, NULL))
		return "not UTF-8 text";
	return nul ? "contains NUL bytes" : NULL;
}

/* Read into dst until it is full or the file ends. */
static ssize_t read_head(int fd, char *dst, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, dst + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

#define HEAD ((size_t)16384)

/* Read one listed file into b as a document, or skip it. The first 16 KiB
 * are looked at before the rest is read, so a big binary file is skipped
 * after one read; they go into b past its cap if need be, and are cut off
 * again unless the file is text, which alone counts against the cap. */
static int dir_file(struct corpus *c, size_t *cap, struct tbuf *b, struct walk *w, int rootfd,
		    const char *rel, struct rlm_err *err)
{
	struct stat st;
	size_t start = b->len, len, ok_len, max = b->max ? b->max : SIZE_MAX / 4;
	const char *why;
	ssize_t n;
	int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (w->no_symlinks ? O_NOFOLLOW : 0)), rc = 0;
	if (fd < 0)
		return rlm_err_set(err, -errno, "cannot open '%s/%s': %s", w->root, rel,
				   strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = rlm_err_set(err, -errno, "cannot stat '%s/%s': %s", w->root, rel,
				 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		warn_skip(w, rel, "not a regular file");
		goto out;
	}
	if ((rc = corpus__tb_grow(b, HEAD)))
		goto read_error;
	if ((n = read_head(fd, b->p + start, HEAD)) < 0) {
		rc = (int)n;
		goto read_error;
	}
	if (n == 0)
		goto out; /* empty files are no documents */
	b->len += (size_t)n;
	b->p[b->len] = '\0';
	/* A longer file may cut a sequence at the end of the head. */
	ok_len = (size_t)n < HEAD ? (size_t)n : text_utf8_floor(b->p + start, (size_t)n);
	if ((why = not_text(b->p + start, ok_len)))
		goto cut; /* the bytes past ok_len are checked with the rest */
	/* The rest, then the separator, must fit under the cap. */
	if (b->len > max)
		rc = RLM_ETOOBIG;
	else if ((size_t)n == HEAD)
		rc = corpus__tb_read_all(fd, b, (size_t)st.st_size - RLM_MIN((size_t)st.st_size, HEAD));
	if (rc == 0)
		rc = corpus__tb_reserve(b, 1);
	if (rc == RLM_ETOOBIG) {
		b->len = start;
		b->p[start] = '\0';
		rc = rlm_err_set(err, rc, "'%s' is larger than %zu bytes", w->root, b->max);
		goto out;
	}
	if (rc)
		goto read_error;
	len = b->len - start;
	if ((why = not_text(b->p + start + ok_len, len - ok_len)))
		goto cut;
	b->p[b->len++] = '\n'; /* reserved above */
	b->p[b->len] = '\0';
	corpus_add_doc(c, cap, start, len, xstrdup(rel), NULL);
	goto out;
cut:
	b->len = start;
	b->p[start] = '\0';
	warn_skip(w, rel, why);
	c->skipped++;
	goto out;
read_error:
	b->len = start;
	if (b->p)
		b->p[start] = '\0';
	rc = rlm_err_set(err, rc, "cannot read '%s/%s': %s", w->root, rel, strerror(-rc));
out:
	close(fd);
	return rc;
}

int corpus_load_dir(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err)
{
	struct walk w = {path, o->quiet, o->no_symlinks, NULL, 0, 0};
	struct corpus_int *ci = corpus_alloc(CORPUS_DIR, path);
	struct tbuf b;
	size_t cap = 0;
	int sub = dup(fd), rc;
	corpus__tb_init(&b, max, o->heap);
	if (sub < 0) {
		rc = rlm_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	if ((rc = walk_dir(&w, sub, NULL, 0, err)))
		goto out;
	if (w.n)
		qsort(w.paths, w.n, sizeof(*w.paths), cmp_path);
	for (size_t i = 0; i < w.n; i++)
		if ((rc = dir_file(&ci->c, &cap, &b, &w, fd, w.paths[i], err)))
			goto out;
	if (ci->c.n_docs == 0) {
		rc = rlm_err_set(err, RLM_EINVAL, "no text documents in '%s' (%zu skipped)", path,
				 ci->c.skipped);
		goto out;
	}
	if ((rc = corpus__tb_finish(&b, ci, true))) {
		rc = rlm_err_set(err, rc, "cannot keep the documents of '%s': %s", path,
				 strerror(-rc));
		goto out;
	}
	*out = &ci->c;
	ci = NULL;
out:
	for (size_t i = 0; i < w.n; i++)
		free(w.paths[i]);
	free(w.paths);
	corpus__tb_release(&b);
	if (ci)
		corpus_free(&ci->c);
	return rc;
}
