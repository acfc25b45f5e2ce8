/* SPDX-License-Identifier: MIT */
/* repl/repl_int.h -- internals shared inside repl/: the spawner thread, the
 * sandbox hook between fork and execve, and frame encoding. */
#ifndef RLM_REPL_INT_H
#define RLM_REPL_INT_H

#include "repl.h"

#define REPL_MAX_PROMPTS 100000 /* prompts in one call frame */
#define REPL_MAX_VARS 100000    /* names in one result frame */
#define REPL_MARK_SLACK 128     /* the omission line, over the output limit */

/* THE SANDBOX SLOT. The sandbox issue adds its layers here: child() runs in
 * the forked child after setsid, the parent-death signal, the fd layout
 * (0-5, everything else closed) and chdir to the scratch directory, and
 * right before execve. It may only make async-signal-safe calls (raw
 * syscalls: no malloc, no locks, no stdio, no libseccomp -- compile BPF in
 * the parent and pass it through arg). Returns 0, or an errno value: the
 * child then reports "sandbox: errno N" in a fatal frame and exits 126. */
struct repl_sandbox {
	int (*child)(const void *arg);
	const void *arg;          /* prepared in the parent, read-only here */
};

/* One worker to start: everything prepared in the parent, so that the
 * child allocates nothing. */
struct repl_spawn {
	const char *path;         /* the interpreter */
	char *const *argv;
	char *const *envp;        /* the whole environment of the worker */
	int fds[6];               /* parent fds that become the child's 0..5 */
	const char *dir;          /* the child's working directory */
	int max_fd;               /* close() bound when close_range is missing */
	const struct repl_sandbox *sandbox; /* NULL: none yet */
};

/* Fork and exec a worker from the long-lived spawner thread (started on
 * first use), because PR_SET_PDEATHSIG fires when the forking *thread*
 * exits. Blocks until the fork is done. Returns 0 with *pid, or -errno.
 * Thread-safe; execve errors are reported by the child on fds[4] as a
 * fatal frame {"error":"execve: errno N"}, then it exits 127. */
int repl__spawn(const struct repl_spawn *sp, pid_t *pid);

/* ---- one REPL: the context, the scratch directory, the current worker ---- */

struct repl {
	struct repl_cfg cfg;      /* defaults filled in; cfg.ctx cleared */
	char *python;
	int memfd;                /* the sealed context, for every (re)start */
	const struct repl_context *ctx_pending; /* during repl_start: to be
				   * written into memfd once the first worker
				   * is forked */
	int devnull;              /* the worker's fd 0 */
	size_t text_len;
	long long n_docs;         /* -1: `context` is a str */
	char *scratch;            /* the worker's cwd and TMPDIR */
	char *argv[12];           /* prebuilt for every spawn; the strings... */
	char *envp[8];
	char *own[10];            /* ...that we allocated */
	int max_fd;

	/* The current worker; pid 0 when there is none. */
	pid_t pid;
	int pidfd;                /* readable when it exited; -1: no pidfd */
	int to_w;                 /* our end of its fd 3 (nonblocking) */
	int from_w;               /* our end of its fd 4 (nonblocking) */
	int log_r;                /* our end of its fds 1 and 2; -1 at EOF */
	bool eof;                 /* fd 4 reached EOF, or the process is gone */
	bool exited;              /* the pidfd said it exited */
	bool wdead;               /* writing to fd 3 failed */
	bool in_oom;              /* no memory for an incoming frame */
	char *in;                 /* bytes read from fd 4 ... */
	size_t in_off, in_len, in_cap; /* ... [in_off, in_len) not taken yet */
	struct buf out;           /* frames for fd 3 ... */
	size_t out_off;           /* ... of which written */
	char log[4096];           /* the last bytes of fds 1 and 2 */
	size_t log_len;

	bool broken;              /* a restart failed: unusable */
	int64_t next_id;
	struct repl_stats st;
};

/* Write r->ctx_pending into the memfd and seal it (repl.c). */
int repl__fill_context(struct repl *r, struct rlm_err *err);

/* ---- the worker process (worker.c) ---- */

/* Start a worker, fill the memfd if it is still empty (Python starts up
 * meanwhile), send the "context" frame and wait for "ready" (at most 30 s).
 * Returns 0 or a negative code with err saying why; no worker is left on
 * failure. */
int repl__worker_start(struct repl *r, struct rlm_err *err);
/* SIGKILL the worker and its process group, reap it, close our fds.
 * Returns its wait status, or -1 when there was none. */
int repl__worker_stop(struct repl *r);
/* After fd 4's EOF: give the worker a moment to finish exiting, then stop
 * it; describe how it ended in dst ("exit status 3"). */
void repl__worker_reap(struct repl *r, char *dst, size_t cap);
/* Wait up to ms for the worker; read what fd 4 and the log pipe have and
 * write what r->out holds. Sets eof, exited, wdead as it finds them. */
void repl__pump(struct repl *r, int ms);
/* Write what r->out holds, as far as the pipe takes it. */
void repl__flush(struct repl *r);
/* Take the next whole frame from the input. Returns 1 with *f (the
 * caller frees it), 0 when none is complete yet, or a negative code with
 * why saying how the worker broke the protocol. */
int repl__take_frame(struct repl *r, struct cJSON **f, struct rlm_err *why);
/* The last output of the worker on fds 1 and 2, cleaned to UTF-8; a fresh
 * string ("" when none). */
char *repl__log_tail(const struct repl *r, size_t max);
/* "exit status 3", "killed by signal 11 (Segmentation fault)". */
void repl__describe_status(int status, char *dst, size_t cap);

/* ---- frames to the worker (frame.c) ---- */

/* Start a frame in b: a 4-byte length to be filled by repl__frame_end. */
size_t repl__frame_begin(struct buf *b);
/* Fill in the length of the frame begun at `start`; RLM_ETOOBIG past 4 GiB. */
int repl__frame_end(struct buf *b, size_t start);
/* Append s[0..len) as a JSON string: quoted and escaped; invalid UTF-8
 * bytes become U+FFFD, NULs are kept (\u0000). */
void repl__json_str(struct buf *b, const char *s, size_t len);
/* Code points in s[0..len) (a byte that is not a continuation byte starts
 * one). */
size_t repl__chars(const char *s, size_t len);
/* Copy s[0..len) with invalid UTF-8 bytes replaced by '?' and NULs by
 * spaces; for text the worker wrote outside the protocol. */
char *repl__clean(const char *s, size_t len, size_t *out_len);

#endif
