/* SPDX-License-Identifier: MIT */
/* corpus/corpus_at.c -- loading a path beneath a directory held open,
 * without following any symbolic link: what a server that reads only
 * under its roots uses (`rlm serve --root`, `rlm mcp`).
 *
 * DESIGN
 * Checking a path by name and then opening it by name is a race: between
 * the two, a user who can write under the directory swaps a file or a
 * directory for a symbolic link to anything the server may read
 * (renameat2 RENAME_EXCHANGE makes the swap atomic). Here nothing is
 * checked by name. The path is resolved once by the kernel relative to a
 * directory descriptor the caller opened beforehand (a root, at start):
 * openat2 with RESOLVE_BENEATH (neither an absolute path nor ".." leaves
 * the directory), RESOLVE_NO_SYMLINKS and RESOLVE_NO_MAGICLINKS. Where the
 * kernel has no openat2 (before Linux 5.6, or behind a seccomp filter that
 * answers ENOSYS), the path is walked one component at a time, each opened
 * with O_NOFOLLOW relative to the descriptor of the one before and checked
 * not to be a link; ".." pops back to a descriptor already held. The path
 * is first opened with O_PATH, so a fifo or a device is refused without
 * being opened, then again for reading, and the two must be the same
 * inode. Everything is read through that descriptor, and a directory's
 * files are opened beneath the directory's descriptor in the same way
 * (corpus/corpus_dir.c), so a swap at any moment yields the file that was
 * there, or an error, never a file outside.
 */
#include "corpus_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WALK_MAX   4096 /* components of one path, at most */
#define EAGAIN_MAX 16	/* openat2 retries when a rename raced a ".." */

/* The fallback: rel one component at a time beneath dirfd, no link
 * followed. stack holds the descriptors of the directories walked
 * through, so ".." returns to one of them and never above dirfd. */
static int open_walk(int dirfd, const char *rel, int flags)
{
	char *copy = xstrdup(rel), *save = NULL, *comp, *next;
	int *stack = NULL, cur = dirfd, fd = -1, rc = 0;
	size_t n = 0, cap = 0;
	struct stat st;
	if (rel[0] == '/') {
		rc = -EXDEV;
		goto out;
	}
	comp = strtok_r(copy, "/", &save);
	while (comp && strcmp(comp, ".") == 0)
		comp = strtok_r(NULL, "/", &save);
	for (; comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		while (next && strcmp(next, ".") == 0)
			next = strtok_r(NULL, "/", &save);
		if (strcmp(comp, "..") == 0) {
			if (!n) {
				rc = -EXDEV;
				goto out;
			}
			close(stack[--n]);
			cur = n ? stack[n - 1] : dirfd;
			continue;
		}
		if (!next)
			break; /* comp is the last component */
		if (n == WALK_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			rc = -errno;
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
			goto out;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			stack = xrealloc(stack, cap * sizeof(*stack));
		}
		stack[n++] = fd;
		cur = fd;
		fd = -1;
	}
	/* The last component (or the directory reached, after "." or ".."):
	 * O_NOFOLLOW makes a link ELOOP, except with O_PATH, which opens the
	 * link itself. */
	if (comp && (flags & O_DIRECTORY) && !(flags & O_PATH)) {
		/* With O_DIRECTORY a link is ENOTDIR, not ELOOP: look at what
		 * the name is first, then open that very folder through its
		 * own descriptor ("."), not by name again. */
		int pfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0 || fstat(pfd, &st) < 0) {
			rc = -errno;
			if (pfd >= 0)
				close(pfd);
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
			close(pfd);
			goto out;
		}
		fd = openat(pfd, ".", flags | O_CLOEXEC);
		close(pfd);
	} else {
		fd = openat(cur, comp ? comp : ".", flags | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((flags & O_PATH) && fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if ((flags & O_PATH) && S_ISLNK(st.st_mode)) {
		rc = -ELOOP;
		goto out;
	}
	rc = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	while (n)
		close(stack[--n]);
	free(stack);
	free(copy);
	return rc;
}

static atomic_bool force_walk;

void corpus__beneath_force_walk(bool on)
{
	atomic_store(&force_walk, on);
}

int corpus__open_beneath(int dirfd, const char *rel, int flags, unsigned how)
{
	struct open_how oh;
	long fd = -1;
	if (!(how & CORPUS__BENEATH_WALK) && !atomic_load(&force_walk)) {
		memset(&oh, 0, sizeof(oh));
		/* no O_NOFOLLOW: with O_PATH it would open a final link
		 * instead of failing; RESOLVE_NO_SYMLINKS covers the last
		 * component too */
		oh.flags = (uint64_t)(flags | O_CLOEXEC);
		oh.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		for (int i = 0; i < EAGAIN_MAX; i++) {
			fd = syscall(SYS_openat2, dirfd, *rel ? rel : ".", &oh, sizeof(oh));
			if (fd >= 0 || (errno != EINTR && errno != EAGAIN))
				break;
		}
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS)
			return -errno;
	}
	return open_walk(dirfd, rel, flags);
}

/* The message for a failed open of name. */
static int open_err(int rc, const char *name, struct rlm_err *err)
{
	if (rc == -ELOOP)
		return rlm_err_set(err, rc,
				   "cannot open '%s': the path crosses a symbolic link (not "
				   "followed here)",
				   name);
	if (rc == -EXDEV)
		return rlm_err_set(err, rc, "cannot open '%s': the path leads out of its directory",
				   name);
	return rlm_err_set(err, rc, "cannot open '%s': %s", name, strerror(-rc));
}

int corpus_load_at(int dirfd, const char *rel, const char *name, const struct corpus_opts *opts,
		   struct corpus **out, struct rlm_err *err)
{
	struct corpus_opts o = opts ? *opts : (struct corpus_opts){.kind = CORPUS_AUTO};
	struct stat st, st2;
	int pfd = -1, fd = -1, rc;
	*out = NULL;
	if (!rel)
		return rlm_err_set(err, RLM_EINVAL, "no context path given");
	if (!name)
		name = *rel ? rel : ".";
	if ((rc = corpus_encoding_check(o.encoding, err)))
		return rc;
	/* A link in a directory beneath could point anywhere. */
	o.no_symlinks = true;
	if ((pfd = corpus__open_beneath(dirfd, rel, O_PATH, 0)) < 0)
		return open_err(pfd, name, err);
	if (fstat(pfd, &st) < 0) {
		rc = rlm_err_set(err, -errno, "cannot stat '%s': %s", name, strerror(errno));
		goto out;
	}
	if ((rc = corpus__check_type(&st, name, &o, err)))
		goto out;
	fd = corpus__open_beneath(
	    dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0),
	    0);
	if (fd < 0) {
		rc = open_err(fd, name, err);
		goto out;
	}
	if (fstat(fd, &st2) < 0) {
		rc = rlm_err_set(err, -errno, "cannot stat '%s': %s", name, strerror(errno));
		goto out;
	}
	if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		rc = rlm_err_set(err, RLM_EINVAL,
				 "cannot open '%s': it was replaced while it was "
				 "opened",
				 name);
		goto out;
	}
	rc = corpus__load_fd(fd, name, &o, corpus__max_bytes(&o), out, err);
out:
	if (fd >= 0)
		close(fd);
	close(pfd);
	return rc;
}
