/* SPDX-License-Identifier: MIT */
/* repl/repl_int.h -- internals shared inside repl/: the spawner thread, the
 * sandbox hook between fork and execve, and frame encoding. */
#ifndef RLM_REPL_INT_H
#define RLM_REPL_INT_H

#include "repl.h"

#include <pthread.h>
#include <time.h>

#define REPL_MAX_PROMPTS 100000 /* prompts in one call frame */
#define REPL_MAX_VARS 100000    /* names in one result frame */
#define REPL_MARK_SLACK 128     /* the omission line, over the output limit */
#define REPL_NOBODY 65534       /* the uid and gid a root controller's worker gets */
#define REPL_SPARES 8           /* blocks of large frames kept for reuse (worker.c) */

/* ---- the sandbox plan (sandbox.c, seccomp.c) ----
 *
 * Everything the child needs is prepared in the parent: between fork and
 * execve the child of a multithreaded process may only make raw system
 * calls (no malloc, no locks, no stdio, no libseccomp). */

/* A compiled seccomp program: struct sock_filter insns[len]. */
struct repl_bpf {
	void *insns;              /* struct sock_filter *; owned by seccomp.c */
	unsigned short len;
};

/* The placeholder for the worker's own pid in the first filter (the rules
 * that let kill/tgkill/tkill target only itself): the child replaces every
 * BPF_K operand equal to it by its getpid() before applying the filter. */
#define REPL_BPF_SELF 0x7ff0be11u

/* Build the two filters once per process (thread-safe; later calls return
 * the same programs). first: applied by the child last, right before
 * execve: the allow-list of docs/sandbox.md, default ENOSYS, explicit
 * EPERM for the dangerous families, a foreign architecture kills the
 * process, execve still allowed. late: stacked by the runtime once Python
 * is up: execve and execveat get EPERM. Returns 0, or a negative code
 * with err saying why (libseccomp missing a syscall is not an error). */
int repl__seccomp_build(const struct repl_bpf **first, const struct repl_bpf **late,
			struct rlm_err *err);
/* The late filter as lowercase hex of its sock_filter bytes, for the
 * worker's argv (the runtime applies it with ctypes prctl). */
const char *repl__seccomp_late_hex(void);
/* In the child: copy of `first` patched with self for REPL_BPF_SELF into
 * scratch (at least first->len entries of struct sock_filter), then
 * prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER). no_new_privs must be set.
 * Async-signal-safe. Returns 0 or an errno value. */
int repl__seccomp_apply(const struct repl_bpf *first, void *scratch, pid_t self);

/* The worker's own root, planned in the parent: a tmpfs mounted over the
 * scratch directory (R) is filled by these steps, then the child
 * pivot_roots into it and detaches the host's tree. Paths are offsets
 * into arena (so that a copy of the plan stays whole): dst is below R as
 * the child sees it before the pivot ("<R>/usr"), src a host path (bind)
 * or a symlink's text. */
enum { REPL_ROOT_MKDIR, REPL_ROOT_SYMLINK, REPL_ROOT_RBIND, REPL_ROOT_FBIND, REPL_ROOT_FBIND_OPT };
/* REPL_ROOT_FBIND_OPT: a file bound where the kernel lets it be (sysfs);
 * a bind refused leaves the empty file. */
#define REPL_ROOT_OPS	48
#define REPL_ROOT_ARENA 8192
struct repl_root_op {
	unsigned char op;         /* REPL_ROOT_... */
	bool dev;                 /* a device node: nodev cleared on its bind */
	unsigned short src, dst;  /* offsets into arena */
};
struct repl_root {
	struct repl_root_op ops[REPL_ROOT_OPS];
	int n;
	int n_fixed;              /* ops[0..n_fixed) do not depend on the
				   * scratch path: the zygote's template */
	unsigned short proc;      /* "<R>/proc", for a fresh /proc */
	unsigned short used;      /* bytes of arena in use */
	char opts[96];            /* the root tmpfs's mount options */
	char arena[REPL_ROOT_ARENA];
};

/* One worker's sandbox, planned by repl__sandbox_plan in the parent. */
struct repl_sandbox {
	unsigned layers;          /* (1u << REPL_L_...) to apply */
	int clone_flags;          /* CLONE_NEW* for the spawner; 0: fork */
	unsigned uid, gid;        /* the identity to take, as seen from outside */
	unsigned ns_uid, ns_gid;  /* the same inside the user namespace */
	bool setgroups_deny;      /* write "deny" to setgroups (non-root) */
	const struct repl_bpf *seccomp; /* the first filter; NULL: none */
	void *bpf_scratch;        /* room for the patched copy */
	int landlock_fd;          /* a ruleset built in the parent; -1: none */
	const char *scratch;      /* the scratch directory (mntns: a tmpfs) */
	char tmpfs_opts[128];     /* "size=268435456,nr_inodes=32768,mode=0700,
				   * uid=1000,gid=1000" */
	struct { int res; unsigned long cur, max; } rl[8];
	int n_rl;
	bool pivot;               /* its own root (root, below): mntns only */
	struct repl_root root;
	bool keep_admin;          /* the zygote's: CAP_SYS_ADMIN in its user
				   * namespace kept through execve (ambient) */
	int fault;                /* tests (RLM_SANDBOX_FAULT=<layer>[:ERRNO]):
				   * the child fails at this layer; -1: none */
	int fault_errno;          /* ... with this errno (default EPERM) */
};

/* Plan the sandbox of r's next worker from r->cfg.sandbox, the machine's
 * probed layers and the layers found broken so far (process-wide, with
 * why). Fills r->sb and r->sb_status (the layers' on/why; what the kernel
 * reports is added once the worker is up). Returns 0, or a negative code
 * when seccomp is needed but cannot be had (err says why and names
 * --unsafe-no-sandbox). */
int repl__sandbox_plan(struct repl *r, struct rlm_err *err);
/* Is the kernel release rel ("6.1.0-18-amd64") at least major.minor? */
bool repl__kernel_at_least(const char *rel, int major, int minor);
/* In the spawner thread, right after clone with sb->clone_flags: write the
 * child's uid_map, setgroups and gid_map. Returns 0 or an errno value
 * (what names the step). */
int repl__sandbox_parent(const struct repl_sandbox *sb, pid_t pid, const char **what);
/* In the child, after the fd layout (0-5, and the Landlock ruleset as 6)
 * and before chdir and seccomp: mounts, identity, rlimits, no_new_privs,
 * Landlock (in that order). Async-signal-safe. Returns 0, or an errno
 * value with *layer (REPL_L_...) and *what naming the step; an injected
 * fault (RLM_SANDBOX_FAULT) returns sb->fault_errno. */
int repl__sandbox_child(const struct repl_sandbox *sb, int *layer, const char **what);
/* A worker failed to start at a layer ("layer":"userns" in its fatal
 * frame): remember it as broken for this process, with why, so that the
 * next plan leaves it out. Returns false when the layer may not be left
 * out (seccomp without unsafe). */
bool repl__sandbox_broken(struct repl *r, enum repl_layer l, const char *why);
/* After the worker said "ready": read Seccomp_filters and the uids from
 * /proc/PID/status into r->sb_status and build its line. Returns 0, or
 * RLM_EIO when seccomp should be on but the kernel shows fewer filters
 * than planned (the worker is then not used). */
int repl__sandbox_verify(struct repl *r, struct rlm_err *err);
/* The files and directories a scratch of limit bytes may hold (the
 * tmpfs's nr_inodes=, the plain directory's count): limit / 8 KiB, at
 * least 4096. */
unsigned long repl__scratch_inodes(size_t limit);
/* After an exec, for a scratch that is a plain directory: its size over
 * the limit? Fills what ("the scratch directory holds 300 MB, over its
 * limit of 256 MB"). */
bool repl__scratch_over(const struct repl *r, char *what, size_t cap);

/* One worker to start: everything prepared in the parent, so that the
 * child allocates nothing. */
struct repl_spawn {
	const char *path;         /* the interpreter */
	char *const *argv;
	char *const *envp;        /* the whole environment of the worker */
	int fds[7];               /* parent fds that become the child's 0..6 (6: the
				   * runtime's code, repl__code_fd) */
	const char *dir;          /* the child's working directory */
	int max_fd;               /* close() bound when close_range is missing */
	const struct repl_sandbox *sandbox; /* NULL: none (only with unsafe) */
};

/* Fork (clone with the sandbox's namespaces) and exec a worker from the
 * long-lived spawner thread (started on first use), because
 * PR_SET_PDEATHSIG fires when the forking *thread* exits. Blocks until the
 * child is set going (its maps written). Returns 0 with *pid, or -errno
 * with *what naming the step ("clone", "write uid_map"; static) and
 * *layer REPL_L_USERNS when namespaces were asked for, else -1 (no child
 * is left then). Thread-safe. The child reports its own failures on
 * fds[4] as a fatal frame {"error":"execve: errno N"} or
 * {"error":"sandbox: mount /proc: errno 1","layer":"mntns"}, then exits
 * 127 (execve) or 126 (sandbox). */
int repl__spawn(const struct repl_spawn *sp, pid_t *pid, int *layer, const char **what);

/* ---- the runtime's code (code.c) ---- */

/* The `-c` of a python3 started cold: it reads the runtime's code from its
 * fd 6 (repl__code_fd), closes it and runs it; static. */
const char *repl__code_boot(void);
/* The sealed memfd with the runtime's and the zygote's code (compiled at
 * build time where they match the interpreter, else their source), made
 * once per process; shared, never closed. Returns it, or a negative code
 * with err saying why. Thread-safe. */
int repl__code_fd(struct rlm_err *err);

/* The zygote's sandbox, from a worker's w: its user namespace and
 * identity only (keep_admin when the workers have namespaces to make), no
 * seccomp filter, no Landlock, core dumps off. */
void repl__sandbox_zygote(const struct repl_sandbox *w, struct repl_sandbox *z);
/* The Landlock rights a worker gets in its scratch directory. */
uint64_t repl__sandbox_scratch_rights(void);
/* The first filter as hex, placeholders unpatched (for the zygote). */
const char *repl__seccomp_first_hex(void);
/* clone with namespaces failed with e: the layer it says is missing, or
 * -1 for a shortage (spawn.c; what names why). */
int repl__clone_refused(int flags, int e, const char **what);

/* ---- the zygote (zygote.c) ----
 *
 * Start the worker of sp through the process's zygote, starting the
 * zygote first when there is none for r's plan. Returns as repl__spawn
 * does, or REPL_NO_ZYGOTE when the zygote cannot be used for this worker
 * (off, another plan in use, failed): the caller then spawns it cold. The
 * worker is the caller's child either way. Thread-safe. */
#define REPL_NO_ZYGOTE (-100000)
/* The zygote went quiet after it was sent the fds: it may have forked a
 * worker on them, so the caller starts one cold on new pipes. */
#define REPL_ZYGOTE_LOST (-100001)
int repl__zygote_spawn(struct repl *r, const struct repl_spawn *sp, pid_t *pid, int *layer,
		       const char **what);
/* r no longer needs the zygote (repl_free): the last one stops it. */
void repl__zygote_release(struct repl *r);
/* REPLs of the process between repl_start and repl_free (repl.c): a
 * lone one (repl_cfg.lone) starts a zygote only when others are open. */
extern atomic_int repl__open;

/* ---- one REPL: the context, the scratch directory, the current worker ---- */

struct repl {
	struct repl_cfg cfg;      /* defaults filled in; cfg.ctx cleared */
	char *python;
	char *schema;             /* cfg.schema's copy (each start sends it), or NULL */
	int memfd;                /* the sealed context, for every (re)start */
	const struct repl_context *ctx_pending; /* during repl_start: to be
				   * written into memfd (by fill_th for a large
				   * one, while the first worker starts) */
	pthread_t fill_th;        /* writing a large context into memfd... */
	bool filling;             /* ...until joined */
	int fill_rc;              /* its outcome: 0 or -errno */
	int devnull;              /* the worker's fd 0 */
	size_t text_len;
	long long n_docs;         /* -1: `context` is a str */
	bool json;                /* `context` is the text's JSON value */
	uint64_t text_at;         /* where the text lies in memfd */
	uint64_t table_at;        /* where the documents' table lies */
	uint64_t meta_table_at;   /* where the metadata lines' table lies (0:
				   * none) */
	size_t n_meta;            /* its entries */
	char *scratch;            /* the worker's cwd and TMPDIR */
	char *scratch_root;       /* $TMPDIR/rlm-repl-PID-XXXXXX above it: ours,
				   * 0711, so that the worker can neither rename
				   * its scratch nor list its neighbours' */
	char *argv[14];           /* prebuilt for every spawn; the strings... */
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
	bool pipe_big;            /* fd 4 made PIPE_BIG for a large frame */
	char *in;                 /* bytes read from fd 4 ... */
	size_t in_off, in_len, in_cap; /* ... [in_off, in_len) not taken yet */
	char *spare[REPL_SPARES]; /* blocks of large frames, for the next ones */
	int n_spare;
	struct buf out;           /* frames for fd 3 ... */
	size_t out_off;           /* ... of which written */
	char log[4096];           /* the last bytes of fds 1 and 2 */
	size_t log_len;

	struct repl_sandbox sb;   /* the plan of the current worker */
	struct repl_sandbox_status sb_status;
	unsigned sb_env_disable;  /* the layers RLM_SANDBOX_DISABLE turned off */
	void *sb_bpf;             /* sb.bpf_scratch: owned */

	/* Call frames being answered on threads of their own
	 * (cfg.parallel_calls): the exec's thread starts them and takes
	 * their replies; a handler thread only sets its job's reply and done,
	 * under jobs_mu, and writes to wake_fd. */
	pthread_mutex_t jobs_mu;
	struct repl__job *jobs;   /* every job not yet taken */
	int wake_fd;              /* an eventfd the pump polls; -1: none yet */
	size_t jobs_out;          /* jobs not yet taken */
	size_t jobs_prompts;      /* their prompts (repl_cfg.calls_ahead) */
	int64_t jobs_since;       /* when jobs_out last went from 0 to 1 */
	int64_t jobs_cpu;         /* the worker's CPU time then (-1: unknown) */

	/* The kernel's view of the current worker (clock.c). */
	pid_t probe_pid;          /* the worker these are for; 0: none */
	bool cpu_clock_ok;        /* cpu_clock is its process CPU clock */
	clockid_t cpu_clock;
	int stat_fd;              /* its /proc/PID/stat; -1: none */
	int64_t idle_cpu;         /* its CPU time when its last exec ended;
				   * -1: none since it started */
	bool frozen;              /* SIGSTOPped between execs (repl__thaw) */

	bool broken;              /* a restart failed: unusable */
	bool zref;                /* holds a reference on the zygote */
	int64_t next_id;
	struct repl_stats st;
};

/* r->ctx_pending written into the memfd and sealed: done here, or by the
 * thread repl_start began for a large context, which this joins (repl.c). */
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
/* Between execs the worker is stopped (SIGSTOP), so that nothing the code
 * left behind computes while the model thinks; repl__freeze after an
 * exec's result, repl__thaw (SIGCONT) before anything is written to it. */
void repl__freeze(struct repl *r);
void repl__thaw(struct repl *r);
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
/* cJSON_Delete of a frame repl__take_frame gave, whose block (a binary
 * frame's) is kept for the next large frame. */
void repl__frame_free(struct repl *r, struct cJSON *f);
/* Free the blocks kept (the end of an exec's frames, repl_free). */
void repl__spares_drop(struct repl *r);
/* The last output of the worker on fds 1 and 2, cleaned to UTF-8; a fresh
 * string ("" when none). */
char *repl__log_tail(const struct repl *r, size_t max);
/* "exit status 3", "killed by signal 11 (Segmentation fault)". */
void repl__describe_status(int status, char *dst, size_t cap);

/* ---- the kernel's view of the worker (clock.c) ---- */

/* The CPU time (user and system, every thread) the current worker has
 * used, in ns; -1 when it cannot be known. */
int64_t repl__worker_cpu(struct repl *r);
/* How many threads the current worker has (the runtime itself runs on
 * one); -1 when it cannot be known. */
int repl__worker_threads(struct repl *r);
/* Forget the worker the readings were for (its fd closed). */
void repl__probe_close(struct repl *r);

/* ---- frames from the worker (frame.c) ---- */

/* The "sources" member of a result frame f into out->sources (normalised:
 * start and end -1 when absent). A member of the wrong shape (not an array
 * of at most REPL_MAX_SOURCES ids or {"doc", "start", "end", "quote"}
 * objects, strings UTF-8, a quote of at most REPL_MAX_QUOTE characters) is
 * ignored whole, with a line in note saying why: not a violation. */
void repl__sources(const struct cJSON *f, struct repl_result *out, struct buf *note);

/* The big-endian 32-bit number at p (frame lengths). */
static inline uint32_t repl__be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* Write v at p as a big-endian 32-bit number. */
static inline void repl__put_be32(void *p, uint32_t v)
{
	unsigned char *u = p;
	u[0] = (unsigned char)(v >> 24);
	u[1] = (unsigned char)(v >> 16);
	u[2] = (unsigned char)(v >> 8);
	u[3] = (unsigned char)v;
}

/* ---- frames to the worker (frame.c) ---- */

/* Start a frame in b: a 4-byte length to be filled by repl__frame_end. */
size_t repl__frame_begin(struct buf *b);
/* Fill in the length of the frame begun at `start`; RLM_ETOOBIG past 4 GiB. */
int repl__frame_end(struct buf *b, size_t start);
/* Copy s[0..len) with invalid UTF-8 bytes replaced by '?' and NULs by
 * spaces; for text the worker wrote outside the protocol. */
char *repl__clean(const char *s, size_t len, size_t *out_len);
/* What one item of a call frame's "contexts" is (repl_frame_parse checked
 * only that there is one per prompt): a->kind and its fields; a->text and
 * the items point into item. Never fails: another shape is REPL_CTX_BAD.
 * A LIST's arrays are allocated: repl__ctx_arg_release frees them. */
void repl__ctx_arg(const struct cJSON *item, struct repl_ctx_arg *a);
void repl__ctx_arg_release(struct repl_ctx_arg *a);

#endif
