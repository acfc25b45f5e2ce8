/* SPDX-License-Identifier: MIT */
/* repl/code.c -- how a python3 started cold gets the runtime's code: a
 * sealed memfd on its fd 6, read by a bootstrap of a few lines given as
 * `-c`, instead of the runtime's 116 KB of source as `-c` itself.
 *
 * DESIGN
 * Compiling the runtime cost every cold start (the zygote's, a worker's
 * without one) ~28 ms of its ~60; unmarshalling the same code costs
 * 0.5 ms. The build compiles runtime.py and zygote.py with the python3
 * the workers run (scripts/pycode.py, embedded as pycode.bin, with the
 * interpreter's bytecode magic); the memfd holds, for each file, its
 * marshalled code when that was compiled from the very source embedded
 * here, and its source. The bootstrap unmarshals a code when its own
 * interpreter's magic (importlib's MAGIC_NUMBER, what a .pyc is checked
 * against) is the one recorded, and compiles the source otherwise
 * (another --python, a build without python3): never a wrong code, at
 * worst the old cost. An argument of execve is also capped at 128 KiB
 * (MAX_ARG_STRLEN), which the runtime's source was nearing.
 *
 * The memfd is made once per process, sealed against every change, and
 * read with pread (the cold starts share its offset); the bootstrap
 * closes fd 6 before any of the runtime's code runs, so no worker keeps
 * it, and a worker forked by the zygote never has it.
 *
 * Layout (the bootstrap's; 4-byte big-endian numbers): the magic, the
 * lengths of the runtime's code and source and of the zygote's code and
 * source (a code of length 0: none), then the four in that order. */
#include "repl_int.h"
#include "../common/embed.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* fd 6 of a cold python3: read, closed, the runtime's code run. code(i,
 * name) is the runtime's (0) or the zygote's (1) code; the runtime keeps
 * it as _rlm_code for the zygote's. */
static const char boot[] =
    "def _rlm_boot():\n"
    " import marshal,posix,_frozen_importlib_external as e\n"
    " b=posix.pread(6,posix.fstat(6).st_size,0);posix.close(6)\n"
    " n=[int.from_bytes(b[k:k+4],'big') for k in range(4,20,4)]\n"
    " def code(i,name):\n"
    "  o=20+sum(n[:2*i])\n"
    "  if n[2*i] and b[:4]==e.MAGIC_NUMBER:return marshal.loads(b[o:o+n[2*i]])\n"
    "  o+=n[2*i];return compile(b[o:o+n[2*i+1]],name,'exec',dont_inherit=True)\n"
    " return code\n"
    "_rlm_code=_rlm_boot();del _rlm_boot\n"
    "exec(_rlm_code(0,'<string>'))\n";

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int code_fd = -1, code_errno;

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 0x811c9dc5u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x01000193u;
	return h;
}

/* The memfd's contents, written to fd: the codes of pycode.bin that were
 * compiled from these sources (src[0] the runtime, src[1] the zygote). */
static int fill(int fd, const struct embedded_file *const src[2])
{
	const struct embedded_file *pc = embed_find("pycode.bin");
	const char *p = pc ? pc->data : NULL;
	const char *code[2] = {NULL, NULL};
	uint32_t code_len[2] = {0, 0};
	unsigned char head[20] = {0};
	int e;
	/* pycode.bin: magic, then (source length, its hash, code length)
	 * twice, then the codes */
	if (p && pc->len >= 28) {
		size_t at = 28;
		memcpy(head, p, 4);
		for (int i = 0; i < 2; i++) {
			const char *f = p + 4 + 12 * i;
			uint32_t n = repl__be32(f + 8);
			if (n > pc->len - at)
				break;
			if (repl__be32(f) == src[i]->len && repl__be32(f + 4) == fnv1a(src[i]->data, src[i]->len)) {
				code[i] = p + at;
				code_len[i] = n;
			}
			at += n;
		}
	}
	for (int i = 0; i < 2; i++) {
		repl__put_be32(head + 4 + 8 * i, code_len[i]);
		repl__put_be32(head + 8 + 8 * i, (uint32_t)src[i]->len);
	}
	if ((e = file_write_all(fd, head, sizeof(head))))
		return e;
	for (int i = 0; i < 2; i++)
		if ((e = file_write_all(fd, code[i] ? (const void *)code[i] : "", code_len[i])) ||
		    (e = file_write_all(fd, src[i]->data, src[i]->len)))
			return e;
	return 0;
}

static void make(void)
{
	const struct embedded_file *src[2] = {embed_find("runtime.py"), embed_find("zygote.py")};
	int fd, e;
	if (!src[0] || !src[1]) {
		code_errno = ENOENT;
		return;
	}
	fd = memfd_create("rlm-runtime", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		code_errno = errno;
		return;
	}
	if ((e = fill(fd, src)) ||
	    (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 &&
	     (e = -errno))) {
		close(fd);
		code_errno = -e;
		return;
	}
	code_fd = fd;
}

const char *repl__code_boot(void)
{
	return boot;
}

int repl__code_fd(struct rlm_err *err)
{
	pthread_once(&once, make);
	if (code_fd >= 0)
		return code_fd;
	if (code_errno == ENOENT)
		return rlm_err_set(err, RLM_ENOTFOUND,
				   "the REPL runtime is not embedded in this binary");
	return rlm_err_set(err, RLM_EIO, "cannot make the memfd of the REPL runtime: %s",
			   strerror(code_errno));
}
