/* SPDX-License-Identifier: MIT */
/* corpus/corpus_dir.c -- loading a directory of documents: the walk, and each
 * file read into the corpus buffer.
 *
 * DESIGN
 * A directory is walked first (names only), the relative paths are sorted,
 * and then each file is read straight into the buffer; a file that turns
 * out to be binary is cut off again, so the buffer never holds anything
 * but accepted documents and their '\n' separators. Folders are opened
 * relative to their parent's descriptor with O_NOFOLLOW; with no_symlinks
 * (a server's roots) each file is opened beneath the directory's
 * descriptor with no link followed anywhere on its path
 * (corpus__open_beneath), so a swap after the walk is skipped, not read.
 */
#include "corpus_int.h"
#include "../common/text.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256

/* Why files are skipped, for the summary line. */
enum skip { SKIP_BINARY, SKIP_NOT_TEXT, SKIP_GZIP, SKIP_LINK, SKIP_SPECIAL, SKIP_N };

static const char *const skip_names[SKIP_N] = {"binary", "not text", "bad gzip data",
					       "symbolic links", "not regular files"};

struct walk {
	const char *root; /* the path given, for messages */
	const struct corpus_opts *o;
	bool no_symlinks; /* symbolic links are skipped, not followed */
	char **paths; /* relative paths of candidate files; owned */
	size_t n, cap;
	size_t skips[SKIP_N];      /* files skipped, by reason */
	size_t n_fixed, fixed_sum; /* files with bytes replaced, and bytes */
	char *fixed_first;         /* the first of those files; owned */
	const char *fixed_from;    /* its encoding (NULL: UTF-8); static or
				    * corpus_opts.encoding */
};

static void walk_push(struct walk *w, char *rel)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->paths = xrealloc(w->paths, w->cap * sizeof(*w->paths));
	}
	w->paths[w->n++] = rel;
}

/* Count a skipped file; named at once with verbose, else summed up by
 * summarise. */
static void warn_skip(struct walk *w, enum skip k, const char *rel, const char *why)
{
	w->skips[k]++;
	if (!w->o->quiet && w->o->verbose)
		log_warn("skipping '%s': %s", rel, why);
}

/* Count a file with n bytes replaced with U+FFFD. */
static void note_fixed(struct walk *w, const char *rel, const char *from, size_t n)
{
	if (!w->fixed_first) {
		w->fixed_first = xstrdup(rel);
		w->fixed_from = from;
	}
	w->n_fixed++;
	w->fixed_sum += n;
	if (!w->o->quiet && w->o->verbose)
		corpus__warn_replaced(rel, from, n);
}

/* One line for the skipped files, by reason, and one for the files with
 * bytes replaced (unless verbose named each). */
static void summarise(const struct walk *w)
{
	char line[400], num[32];
	size_t total = 0, at;
	if (w->o->quiet)
		return;
	for (int k = 0; k < SKIP_N; k++)
		total += w->skips[k];
	if (total && !w->o->verbose) {
		at = (size_t)snprintf(line, sizeof(line), "skipped %s file%s:",
				      text_fmt_count(num, sizeof(num), (int64_t)total),
				      total == 1 ? "" : "s");
		for (int k = 0; k < SKIP_N; k++)
			if (w->skips[k] && at < sizeof(line))
				at += (size_t)snprintf(line + at, sizeof(line) - at, "%s %s %s",
						       at && line[at - 1] == ':' ? "" : ",",
						       text_fmt_count(num, sizeof(num),
								      (int64_t)w->skips[k]),
						       skip_names[k]);
		log_warn("%s (--verbose lists them)", line);
	}
	if (w->n_fixed == 1 && !w->o->verbose) {
		corpus__warn_replaced(w->fixed_first, w->fixed_from, w->fixed_sum);
	} else if (w->n_fixed > 1 && !w->o->verbose) {
		char files[32];
		log_warn("%s invalid bytes replaced with U+FFFD in %s files such as %s "
			 "(--verbose lists them)",
			 text_fmt_count(num, sizeof(num), (int64_t)w->fixed_sum),
			 text_fmt_count(files, sizeof(files), (int64_t)w->n_fixed),
			 w->fixed_first);
	}
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
			warn_skip(w, SKIP_LINK, rel, "symbolic link (not followed here)");
			free(rel);
			continue;
		}
		if (type == DT_LNK) {
			if (fstatat(dirfd(d), e->d_name, &st, 0) < 0)
				warn_skip(w, SKIP_LINK, rel, "dangling symbolic link");
			else if (S_ISREG(st.st_mode))
				type = DT_REG;
			else if (S_ISDIR(st.st_mode))
				warn_skip(w, SKIP_LINK, rel,
					  "symbolic link to a directory (not followed)");
			else
				warn_skip(w, SKIP_SPECIAL, rel, "not a regular file");
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
			if (sub < 0 && (errno == ELOOP || errno == ENOTDIR)) {
				/* no folder any more: swapped since readdir (a link
				 * is ELOOP or, with O_DIRECTORY, ENOTDIR) */
				bool link =
				    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode);
				warn_skip(w, link ? SKIP_LINK : SKIP_SPECIAL, rel,
					  link ? "symbolic link to a directory (not followed)"
					       : "not a directory any more");
				free(rel);
				continue;
			}
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
			warn_skip(w, SKIP_SPECIAL, rel, "not a regular file");
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

/* Read into dst until it is full or the file ends. */
static ssize_t read_head(struct corpus__in *in, char *dst, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = corpus__in_read(in, dst + got, n - got);
		if (k < 0)
			return k;
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
 * again unless the file is text, which alone counts against the cap. A
 * *.gz file is read decompressed; text not in UTF-8 is decoded in place
 * (corpus__tb_decode). */
static int dir_file(struct corpus *c, size_t *cap, struct tbuf *b, struct walk *w, int rootfd,
		    const char *rel, struct rlm_err *err)
{
	const struct corpus_opts *o = w->o;
	struct corpus__in in = {.fd = -1};
	struct stat st;
	size_t start = b->len, len, ok_len, replaced = 0, max = b->max ? b->max : SIZE_MAX / 4;
	enum skip kind = SKIP_BINARY;
	const char *why, *from = NULL;
	ssize_t n;
	int fd, rc = 0;
	/* With no_symlinks, a folder on the way swapped for a link since the
	 * walk must not lead out either: no link anywhere in rel. */
	fd = w->no_symlinks ? corpus__open_beneath(rootfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)
			    : openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 && !w->no_symlinks)
		fd = -errno;
	if (fd == -ELOOP || fd == -EXDEV) {
		warn_skip(w, SKIP_LINK, rel, "symbolic link (not followed here)");
		return 0;
	}
	if (fd < 0)
		return rlm_err_set(err, fd, "cannot open '%s/%s': %s", w->root, rel, strerror(-fd));
	if (fstat(fd, &st) < 0) {
		rc = rlm_err_set(err, -errno, "cannot stat '%s/%s': %s", w->root, rel,
				 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		warn_skip(w, SKIP_SPECIAL, rel, "not a regular file");
		goto out;
	}
	if ((rc = corpus__in_init(&in, fd, corpus__gz_name(rel))))
		goto read_error;
	if ((rc = corpus__tb_grow(b, HEAD)))
		goto read_error;
	if ((n = read_head(&in, b->p + start, HEAD)) < 0) {
		rc = (int)n;
		goto read_error;
	}
	if (n == 0)
		goto out; /* empty files are no documents */
	b->len += (size_t)n;
	b->p[b->len] = '\0';
	/* A longer file may cut a sequence at the end of the head. */
	ok_len = (size_t)n < HEAD ? (size_t)n : text_utf8_floor(b->p + start, (size_t)n);
	if ((why = corpus__head_why(b->p + start, ok_len, o->encoding, o->strict_utf8))) {
		kind = strcmp(why, "binary") == 0 ? SKIP_BINARY : SKIP_NOT_TEXT;
		why = kind == SKIP_BINARY ? "contains NUL bytes" : "not UTF-8 text";
		goto cut; /* the bytes past ok_len are checked with the rest */
	}
	/* The rest, then the separator, must fit under the cap. */
	if (b->len > max)
		rc = RLM_ETOOBIG;
	else if ((size_t)n == HEAD)
		rc = corpus__in_read_all(&in, b, (size_t)st.st_size - RLM_MIN((size_t)st.st_size, HEAD));
	if (rc == 0)
		rc = corpus__tb_decode(b, start, "", o->encoding, o->strict_utf8, &replaced, &from,
				       NULL);
	if (rc == 0)
		rc = corpus__tb_reserve(b, 1);
	if (rc == RLM_ETOOBIG) {
		b->len = start;
		b->p[start] = '\0';
		rc = rlm_err_set(err, rc, "'%s' is larger than %zu bytes", w->root, b->max);
		goto out;
	}
	if (rc == RLM_EPARSE && !in.why[0]) {
		/* strict: invalid UTF-8 (or a named encoding) past the head */
		rc = 0;
		kind = SKIP_NOT_TEXT;
		why = "not UTF-8 text";
		goto cut;
	}
	if (rc)
		goto read_error;
	len = b->len - start;
	if (len == 0)
		goto cut_empty; /* a mark alone */
	if (memchr(b->p + start, 0, len)) {
		why = "contains NUL bytes";
		goto cut;
	}
	b->p[b->len++] = '\n'; /* reserved above */
	b->p[b->len] = '\0';
	corpus_add_doc(c, cap, start, len, xstrdup(rel), NULL);
	c->replaced += replaced;
	if (replaced)
		note_fixed(w, rel, from, replaced);
	goto out;
cut:
	b->len = start;
	b->p[start] = '\0';
	warn_skip(w, kind, rel, why);
	goto out;
cut_empty:
	b->len = start;
	b->p[start] = '\0';
	goto out;
read_error:
	b->len = start;
	if (b->p)
		b->p[start] = '\0';
	if (rc == RLM_EPARSE) {
		/* bad gzip data: skipped like a binary file */
		rc = 0;
		warn_skip(w, SKIP_GZIP, rel, in.why);
		goto out;
	}
	rc = rlm_err_set(err, rc, "cannot read '%s/%s': %s", w->root, rel, strerror(-rc));
out:
	corpus__in_release(&in);
	close(fd);
	return rc;
}

int corpus_load_dir(int fd, const char *path, const struct corpus_opts *o, size_t max,
		    struct corpus **out, struct rlm_err *err)
{
	struct walk w = {.root = path, .o = o, .no_symlinks = o->no_symlinks};
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
	for (int k = 0; k < SKIP_N; k++)
		ci->c.skipped += w.skips[k];
	summarise(&w);
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
	free(w.fixed_first);
	corpus__tb_release(&b);
	if (ci)
		corpus_free(&ci->c);
	return rc;
}
