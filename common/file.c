/* SPDX-License-Identifier: MIT */
/* common/file.c -- whole-file reads and complete writes. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read(const char *path, size_t max, char **out, size_t *len, struct rlm_err *err)
{
	struct buf b;
	char chunk[65536];
	int fd, rc = 0;
	ssize_t n;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rlm_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	buf_init(&b, max);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = rlm_err_set(err, -errno, "cannot read '%s': %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n)) {
			rc = rlm_err_set(err, RLM_ETOOBIG, "'%s' is larger than %zu bytes", path, max);
			goto out;
		}
	}
	*out = buf_detach(&b, len);
out:
	close(fd);
	if (rc)
		buf_release(&b);
	return rc;
}

int file_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
