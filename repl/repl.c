/* SPDX-License-Identifier: MIT */
/* repl/repl.c -- the REPL API: start a worker on a context, run code in it
 * with time limits and sub-calls, restart it when it misbehaves.
 *
 * DESIGN
 * An exec is a small state machine around repl__pump: send the exec frame,
 * then take frames until the result. Call frames are answered on this
 * thread through cfg.on_call (with cfg.parallel_calls each on a thread of
 * its own, at most MAX_JOBS at once, the replies written here as they
 * end) while the exec's clock counts only the CPU the worker uses (own_time:
 * a call out must not hide another thread's computing). After the result
 * the worker must be down to its one thread (threads_check). Past the
 * time limit, the deadline or a cancel, the worker gets SIGINT (to its
 * main thread, where Python runs signal handlers) and a grace period; then
 * SIGKILL. A stop of the whole run (cfg.stop) does the same once the code
 * has had stop_grace_ns of its own time after it: enough to keep what the
 * call that saw the stop answered, too little to keep computing. Whatever
 * ends a worker (a kill, a crash, a fatal frame, a protocol violation, a
 * frame that arrived while no code ran) is followed by a restart on the
 * same memfd, and the output starts with a notice the model can act on.
 * SIGPIPE is ignored process-wide (once, and only when
 * it is at its default), so writing to a dead worker gives EPIPE. */
#include "repl_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NS		 1000000000LL
#define DEF_OUTPUT_LIMIT 20000
#define DEF_TIMEOUT_NS	 REPL_DEF_EXEC_TIMEOUT_NS
#define DEF_GRACE_NS	 NS
#define DEF_MAX_FRAME	 ((size_t)64 << 20)
#define DEF_CALLS_EXEC	 REPL_DEF_CALLS_EXEC
#define DEF_CALLS_TOTAL	 100000
#define CANCEL_POLL_NS	 10000000LL
#define DEF_STOP_GRACE_NS (250 * 1000000LL)
#define DEF_SCRATCH	 ((size_t)256 << 20)
#define SCRATCH_POLL_NS	 (25 * 1000000LL)
#define TRIM_AFTER	 ((size_t)1 << 20) /* bytes of a call frame's strings */
#define TRIM_EVERY_NS	 (100 * 1000000LL) /* at most one malloc_trim per */
#define MAX_JOBS	 64 /* call frames answered at once (parallel_calls) */
#define THREADS_WAIT_NS	 (100 * 1000000LL) /* for the code's threads to leave */
#define IDLE_CPU_NS	 (100 * 1000000LL) /* CPU a worker may use between execs */

enum cause { C_NONE, C_LIMIT, C_DEADLINE, C_CANCEL, C_STOP };

#define KEPT " Its variables are kept."

struct run;
static void unsay_kept(struct run *x);

/* One exec or final_var in flight. */
struct run {
	int64_t id;
	int64_t begin;	    /* repl_exec was called */
	int64_t t0;	    /* the exec frame was sent: the limit's clock */
	int64_t deadline;   /* absolute, 0: none */
	int64_t limit;	    /* worker time, 0: none */
	int64_t call_ns;    /* wall time while calls were out (finished
			     * pauses of the clock) */
	int64_t pause_own;  /* of call_ns, what counts as the worker's own
			     * time: the CPU it used meanwhile (own_time) */
	int64_t stop_seen;  /* worker time when cfg.stop was first seen set;
			     * -1: not yet */
	enum cause cause;   /* why SIGINT was sent, C_NONE: not sent */
	int64_t kill_own;   /* SIGKILL when the worker's own time is there */
	int64_t scratch_at; /* next look at a plain scratch's size; 0: none */
	struct repl_result *out;
	struct buf note; /* before the output: restarts */
	char *body;	 /* the worker's output */
	size_t body_len;
	size_t body_err; /* where in body its error begins; SIZE_MAX: none */
	struct buf after; /* after the output: the interrupt */
	size_t kept_at;	  /* where in after " Its variables are kept." is;
			   * SIZE_MAX: not said */
	int parked;	  /* idle pool threads the result says it left */
};

enum { AGAIN = 1 };

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* Once per process: SIGPIPE ignored (when at its default), and the
 * controller not dumpable, so that a worker of the same uid can neither
 * ptrace it nor read its /proc files (the API keys are in its memory and
 * environment). */
static void process_setup(void)
{
	struct sigaction old;
	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
	    !(old.sa_flags & SA_SIGINFO))
		signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int ms_until(int64_t t, int64_t now)
{
	int64_t ms;
	if (t == 0)
		return -1;
	if (t <= now)
		return 0;
	ms = (t - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

static void fmt_secs(char *dst, size_t cap, int64_t ns)
{
	snprintf(dst, cap, "%.3g s", (double)ns / 1e9);
}

/* ---- the scratch directory ----
 *
 * $TMPDIR/rlm-repl-PID-XXXXXX is ours (mode 0711: others may pass, not
 * list); the worker's scratch inside it has a random name, mode 0700, and
 * is handed to the worker's uid by the plan. The worker cannot rename its
 * scratch (that needs write access to the outer directory) and so cannot
 * put a symlink in its place for our removals to follow, and a second
 * worker of the same uid cannot find the first's. */

#define RM_DEPTH 32 /* directories open at once while removing a tree */

struct rm {
	int top;	    /* the tree's root: deeper directories move here */
	unsigned long next; /* for their names */
	bool moved;	    /* a directory was moved up: another pass */
	bool left;	    /* something at the top could not be removed */
};

static bool is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* The directory dfd/name, never through a symlink; a directory the worker
 * made unreadable (as the same uid) is opened up first. */
static int open_dir_at(int dfd, const char *name)
{
	const int fl = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dfd, name, fl);
	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0)
		fd = openat(dfd, name, fl);
	return fd;
}

/* Move dfd/name, a directory too deep to descend into now, up into the
 * tree's root under a fresh name: a later pass removes it from there. */
static void hoist(struct rm *rm, int dfd, const char *name)
{
	bool opened = false;
	char to[40];
	for (int i = 0; i < 1000; i++) {
		snprintf(to, sizeof(to), ".rlm-rm-%lu", rm->next++);
		if (renameat2(dfd, name, rm->top, to, RENAME_NOREPLACE) == 0) {
			rm->moved = true;
			return;
		}
		/* Moving a directory writes to it (its "..") and to dfd. */
		if (errno == EACCES && !opened) {
			opened = true;
			fchmod(dfd, 0700);
			fchmodat(dfd, name, 0700, 0);
			continue;
		}
		if (errno != EEXIST)
			return;
	}
}

/* unlinkat, again after opening up a directory inside the tree that the
 * worker (as our own uid) made read-only. */
static int unlink_in(int dfd, const char *name, int flags)
{
	int rc = unlinkat(dfd, name, flags);
	if (rc < 0 && errno == EACCES && fchmod(dfd, 0700) == 0)
		rc = unlinkat(dfd, name, flags);
	return rc;
}

static void rm_contents(struct rm *rm, int fd, int depth);

/* Remove dfd/name, with what is in it when it is a directory. Returns
 * whether it is gone. */
static bool rm_entry(struct rm *rm, int dfd, const char *name, int depth)
{
	int fd;
	if (unlink_in(dfd, name, 0) == 0 || errno == ENOENT)
		return true;
	if (errno != EISDIR && errno != EPERM)
		return false;
	if (unlink_in(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		return true;
	if (errno != ENOTEMPTY && errno != EEXIST)
		return false;
	if (depth >= RM_DEPTH) {
		hoist(rm, dfd, name);
		return false;
	}
	fd = open_dir_at(dfd, name);
	if (fd < 0)
		return false;
	rm_contents(rm, fd, depth + 1);
	return unlink_in(dfd, name, AT_REMOVEDIR) == 0;
}

/* Remove what the directory fd (closed here) holds, at depth below the
 * tree's root. */
static void rm_contents(struct rm *rm, int fd, int depth)
{
	struct dirent *e;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (!is_dot(e->d_name) && !rm_entry(rm, dirfd(d), e->d_name, depth) && depth == 1)
			rm->left = true;
	}
	closedir(d);
}

/* Remove everything in the directory top, however deep: at most RM_DEPTH
 * directories are open at once (no stack or fd limit is reached), and
 * what lies deeper is moved up and removed by another pass. A pass that
 * moved nothing and left nothing ends it; a few more are allowed for
 * entries that would not go (one made while we looked). */
static void rm_below(int top)
{
	struct rm rm = {top, 0, false, false};
	for (int idle = 0; idle < 3;) {
		int fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return;
		rm.moved = rm.left = false;
		rm_contents(&rm, fd, 1);
		if (!rm.moved && !rm.left)
			return;
		if (!rm.moved)
			idle++;
	}
}

/* Remove dfd/name and everything below it; a symlink is removed, not
 * followed. */
static void rm_tree_at(int dfd, const char *name)
{
	int fd;
	if (unlinkat(dfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
		return;
	fd = open_dir_at(dfd, name);
	if (fd < 0)
		return;
	rm_below(fd);
	close(fd);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Remove what the worker left in the scratch directory, keep the
 * directory. */
static void empty_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	rm_below(fd);
	close(fd);
}

/* Outer scratch directories are named rlm-repl-PID-XXXXXX after the
 * controller that made them. A controller killed by SIGKILL cannot remove
 * its own; the next one to start in the same base removes those whose
 * controller is gone (no such process) and which belong to its own euid:
 * never one another user could have made. Once per process and base. */
static void sweep_stale(const char *base)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char swept[256];
	DIR *d;
	struct dirent *e;
	int fd;
	pthread_mutex_lock(&mu);
	if (strcmp(swept, base) == 0) {
		pthread_mutex_unlock(&mu);
		return;
	}
	snprintf(swept, sizeof(swept), "%s", base);
	pthread_mutex_unlock(&mu);
	fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		char *end;
		long pid;
		if (strncmp(e->d_name, "rlm-repl-", 9) != 0)
			continue;
		errno = 0;
		pid = strtol(e->d_name + 9, &end, 10);
		if (errno || end == e->d_name + 9 || *end != '-' || pid <= 0 || pid > INT_MAX)
			continue;
		if (pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		rm_tree_at(dirfd(d), e->d_name);
	}
	closedir(d);
}

/* "w" and 16 random hex digits: a name a neighbour cannot guess. */
static int random_name(char *dst, size_t cap)
{
	unsigned char b[8];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t k = getrandom(b + got, sizeof(b) - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -errno;
		got += (size_t)k;
	}
	snprintf(dst, cap, "w%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
		 b[6], b[7]);
	return 0;
}

static int make_scratch(struct repl *r, struct rlm_err *err)
{
	const char *base = getenv("TMPDIR");
	char name[24];
	int e;
	if (!base || !*base)
		base = "/tmp";
	sweep_stale(base);
	r->scratch_root = xasprintf("%s/rlm-repl-%ld-XXXXXX", base, (long)getpid());
	if (!mkdtemp(r->scratch_root)) {
		e = errno;
		free(r->scratch_root);
		r->scratch_root = NULL;
		return rlm_err_set(err, -e, "cannot create a scratch directory in '%s': %s", base,
				   strerror(e));
	}
	/* mkdtemp made it 0700: the worker (maybe another uid) must pass. */
	if (chmod(r->scratch_root, 0711) < 0) {
		e = errno;
		return rlm_err_set(err, -e,
				   "cannot open the scratch directory '%s' to the worker: %s",
				   r->scratch_root, strerror(e));
	}
	e = random_name(name, sizeof(name));
	if (e < 0)
		return rlm_err_set(err, e, "cannot name a scratch directory: getrandom: %s",
				   strerror(-e));
	r->scratch = xasprintf("%s/%s", r->scratch_root, name);
	if (mkdir(r->scratch, 0700) < 0) {
		e = errno;
		return rlm_err_set(err, -e, "cannot create the scratch directory '%s': %s",
				   r->scratch, strerror(e));
	}
	return 0;
}

/* ---- the context memfd ---- */

/* A memfd of the caller's with the layout already in it: a duplicate,
 * once it is known to be sealed and to hold the text and the table where
 * the caller says they are. */
static int borrow_memfd(struct repl *r, const struct repl_context *c, struct rlm_err *err)
{
	const int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	uint64_t table = c->docs ? 16 * (uint64_t)c->n_docs : 0, table_at, end;
	struct stat st;
	int seals = fcntl(c->fd, F_GET_SEALS);
	if (seals < 0 || (seals & need) != need)
		return rlm_err_set(err, RLM_EINVAL,
				   "the context fd %d is not a memfd sealed against writes and "
				   "resizing",
				   c->fd);
	if (c->text_at > INT64_MAX || c->len > INT64_MAX - c->text_at ||
	    c->n_docs > INT64_MAX / 32 || c->table_at > INT64_MAX - table)
		return rlm_err_set(err, RLM_EINVAL, "the context's place in fd %d is out of range",
				   c->fd);
	table_at = c->table_at ? c->table_at : c->text_at + c->len;
	end = RLM_MAX(c->text_at + c->len, table_at + table);
	if (fstat(c->fd, &st) < 0 || (uint64_t)st.st_size < end)
		return rlm_err_set(err, RLM_EINVAL,
				   "the context fd %d holds %lld bytes, fewer than the %llu its text "
				   "and documents table need",
				   c->fd, (long long)st.st_size, (unsigned long long)end);
	if (c->meta_table_at &&
	    (c->n_meta > INT64_MAX / 32 || c->meta_table_at > INT64_MAX - 16 * (uint64_t)c->n_meta ||
	     (uint64_t)st.st_size < c->meta_table_at + 16 * (uint64_t)c->n_meta))
		return rlm_err_set(err, RLM_EINVAL,
				   "the context fd %d does not hold the documents' metadata table "
				   "where it is said to be",
				   c->fd);
	r->text_at = c->text_at;
	r->table_at = table_at;
	r->meta_table_at = c->meta_table_at;
	r->n_meta = c->meta_table_at ? c->n_meta : 0;
	r->memfd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
	if (r->memfd < 0)
		return rlm_err_set(err, -errno, "cannot duplicate the context fd: %s",
				   strerror(errno));
	return 0;
}

/* Check the context and create the memfd; it is filled while the first
 * worker starts up (repl__fill_context: a large one on a thread of its
 * own from the start, fill_begin). */
static int open_memfd(struct repl *r, const struct repl_context *c, struct rlm_err *err)
{
	if (c->len && !c->text)
		return rlm_err_set(err, RLM_EINVAL, "the context has a length but no text");
	if (c->docs && c->n_docs && (!c->doc_off || !c->doc_len))
		return rlm_err_set(err, RLM_EINVAL, "the context has documents but no offsets");
	for (size_t i = 0; c->docs && i < c->n_docs; i++)
		if (c->doc_off[i] > c->len || c->doc_len[i] > c->len - c->doc_off[i])
			return rlm_err_set(err, RLM_EINVAL,
					   "document %zu lies outside the context text", i);
	r->text_len = c->len;
	r->n_docs = c->docs ? (long long)c->n_docs : -1;
	r->json = c->json;
	r->text_at = 0;
	r->table_at = c->len;
	r->meta_table_at = 0;
	r->n_meta = 0;
	if (c->has_fd)
		return borrow_memfd(r, c, err);
	r->memfd = memfd_create("rlm-context", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0)
		return rlm_err_set(err, -errno, "cannot create the context memfd: %s",
				   strerror(errno));
	/* A memfd is 0777: a peer of the worker's uid that can see its /proc
	 * (no pidns, no Landlock) could reopen /proc/PID/fd/5 before the
	 * runtime makes the worker non-dumpable. Reopening checks the mode;
	 * the worker's inherited fd and its mmap do not. */
	if (fchmod(r->memfd, 0) < 0)
		return rlm_err_set(err, -errno, "cannot close the context memfd's mode: %s",
				   strerror(errno));
	r->ctx_pending = c;
	return 0;
}

/* The metadata lines after the text and the table, then their table:
 * n_meta (offset, length) pairs, one per line of c->meta (a line missing
 * at the end is empty). Returns 0 or -errno. */
static int fill_meta(struct repl *r, const struct repl_context *c)
{
	uint64_t at = (uint64_t)c->len + (c->docs ? 16 * (uint64_t)c->n_docs : 0);
	unsigned char table[16 * 256];
	size_t pos = 0;
	int rc = c->meta_len ? file_write_all(r->memfd, c->meta, c->meta_len) : 0;
	for (size_t i = 0; rc == 0 && i < c->n_meta;) {
		size_t k = 0;
		for (; k < 256 && i < c->n_meta; k++, i++) {
			const char *nl = pos < c->meta_len
					     ? memchr(c->meta + pos, '\n', c->meta_len - pos)
					     : NULL;
			size_t n = nl ? (size_t)(nl - (c->meta + pos)) : c->meta_len - pos;
			uint64_t v[2] = {at + pos, n};
			for (int j = 0; j < 16; j++)
				table[16 * k + j] = (unsigned char)(v[j / 8] >> (8 * (j % 8)));
			pos = nl ? pos + n + 1 : c->meta_len;
		}
		rc = file_write_all(r->memfd, table, 16 * k);
	}
	if (rc == 0) {
		r->meta_table_at = at + c->meta_len;
		r->n_meta = c->n_meta;
	}
	return rc;
}

/* Write the context into the memfd and seal it: 0 or -errno. */
static int fill_now(struct repl *r, const struct repl_context *c)
{
	unsigned char table[16 * 256];
	int rc = c->len ? file_write_all(r->memfd, c->text, c->len) : 0;
	for (size_t i = 0; rc == 0 && c->docs && i < c->n_docs;) {
		size_t k = 0;
		for (; k < 256 && i < c->n_docs; k++, i++) {
			uint64_t v[2] = {c->doc_off[i], c->doc_len[i]};
			for (int j = 0; j < 16; j++)
				table[16 * k + j] = (unsigned char)(v[j / 8] >> (8 * (j % 8)));
		}
		rc = file_write_all(r->memfd, table, 16 * k);
	}
	if (rc == 0 && c->n_meta)
		rc = fill_meta(r, c);
	if (rc == 0 &&
	    fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		rc = -errno;
	return rc;
}

static void *fill_main(void *arg)
{
	struct repl *r = arg;
	r->fill_rc = fill_now(r, r->ctx_pending);
	return NULL;
}

/* A context this large is written by a thread of its own while the first
 * worker starts (a zygote forks one in milliseconds, and the zygote
 * itself may be starting up): 40 MB take ~20 ms to copy into the memfd's
 * fresh pages. */
#define FILL_THREAD_MIN ((size_t)4 << 20)

static void fill_begin(struct repl *r)
{
	if (r->ctx_pending && r->ctx_pending->len >= FILL_THREAD_MIN &&
	    thread_start(&r->fill_th, NULL, fill_main, r, "rlm-fill") == 0)
		r->filling = true;
}

/* Wait for the fill thread, if any: its outcome, 0 or -errno. */
static int fill_join(struct repl *r)
{
	if (!r->filling)
		return 0;
	pthread_join(r->fill_th, NULL);
	r->filling = false;
	return r->fill_rc;
}

int repl__fill_context(struct repl *r, struct rlm_err *err)
{
	int rc;
	if (r->filling)
		rc = fill_join(r);
	else
		rc = fill_now(r, r->ctx_pending);
	r->ctx_pending = NULL;
	if (rc < 0)
		return rlm_err_set(err, RLM_EIO, "cannot fill the context memfd: %s",
				   strerror(-rc));
	return 0;
}

/* ---- start and free ---- */

static void fill_defaults(struct repl_cfg *c)
{
	if (!c->output_limit)
		c->output_limit = DEF_OUTPUT_LIMIT;
	if (!c->exec_timeout_ns)
		c->exec_timeout_ns = DEF_TIMEOUT_NS;
	if (!c->grace_ns)
		c->grace_ns = DEF_GRACE_NS;
	if (!c->stop_grace_ns)
		c->stop_grace_ns = DEF_STOP_GRACE_NS;
	if (!c->max_frame)
		c->max_frame = DEF_MAX_FRAME;
	if (c->max_frame > UINT32_MAX)
		c->max_frame = UINT32_MAX;
	if (!c->max_calls_exec)
		c->max_calls_exec = DEF_CALLS_EXEC;
	if (!c->max_calls_total)
		c->max_calls_total = DEF_CALLS_TOTAL;
	if (!c->sandbox.scratch_limit)
		c->sandbox.scratch_limit = DEF_SCRATCH;
}

static void build_args(struct repl *r)
{
	struct rlimit rl;
	int n = 0;
	r->own[n++] = xasprintf("%zu", r->text_len);
	r->own[n++] = xasprintf("%lld", r->n_docs);
	r->own[n++] = xasprintf("%zu", r->cfg.output_limit);
	r->own[n++] = xasprintf("%zu", r->cfg.max_frame);
	r->own[n++] = xasprintf("%zu", r->cfg.max_calls_exec);
	r->own[n++] = xasprintf("TMPDIR=%s", r->scratch);
	/* Not -I: its -E would ignore PYTHONHASHSEED. -s -S -B and the
	 * environment below (nothing else of ours) do the rest of what -I
	 * did, and runtime.py drops the cwd from sys.path (what -P does,
	 * for any python3). A fixed hash seed makes str hashes, so the
	 * order of a printed set, the same in every worker, cold or forked
	 * by the zygote: a resumed solve sends the same prompts and hits
	 * the call cache. */
	r->argv[0] = r->python;
	r->argv[1] = (char *)(uintptr_t) "-s";
	r->argv[2] = (char *)(uintptr_t) "-S";
	r->argv[3] = (char *)(uintptr_t) "-B";
	r->argv[4] = (char *)(uintptr_t) "-c";
	r->argv[5] = (char *)(uintptr_t)repl__code_boot(); /* the runtime from fd 6 */
	r->argv[6] = r->own[0];
	r->argv[7] = r->own[1];
	r->argv[8] = r->own[2];
	r->argv[9] = r->own[3];
	r->argv[10] = r->own[4];
	r->argv[11] = (char *)(uintptr_t) "-"; /* LATE_FILTER: set per spawn */
	r->argv[12] = NULL;
	r->envp[0] = (char *)(uintptr_t) "LANG=C.UTF-8";
	r->envp[1] = (char *)(uintptr_t) "PYTHONHASHSEED=0";
	r->envp[2] = (char *)(uintptr_t) "MALLOC_ARENA_MAX=2";
	r->envp[3] = (char *)(uintptr_t) "HOME=/nonexistent";
	/* malloc asks for transparent huge pages (where they are "madvise"):
	 * a 40 MB context decoded into a str, or the prompts cut from it,
	 * fault in 2 MiB at a time instead of 4 KiB, half the decode's time
	 * here. Blocks under 4 MiB (a prompt of 160 KB) come from the heap,
	 * grown 16 MiB at a time, rather than an mmap each: 256 such prompts
	 * cut from a context took 10,000 page faults and ~150 ms on a VM
	 * whose faults cost 11 us, and take ~500 and ~12 ms so. A glibc
	 * without the tunables ignores them. */
	r->envp[4] = (char *)(uintptr_t) "GLIBC_TUNABLES=glibc.malloc.hugetlb=1:"
					 "glibc.malloc.mmap_threshold=4194304:"
					 "glibc.malloc.top_pad=16777216";
	r->envp[5] = r->own[5];
	r->envp[6] = NULL;
	r->max_fd = 65536;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)r->max_fd)
		r->max_fd = (int)rl.rlim_cur;
}

int repl_start(const struct repl_cfg *cfg, struct repl **out, struct rlm_err *err)
{
	const char *env = getenv("RLM_SANDBOX_DISABLE");
	struct repl *r;
	int rc;
	*out = NULL;
	pthread_once(&process_once, process_setup);
	r = xcalloc(1, sizeof(*r));
	atomic_fetch_add(&repl__open, 1);
	r->cfg = *cfg;
	memset(&r->cfg.ctx, 0, sizeof(r->cfg.ctx));
	fill_defaults(&r->cfg);
	r->memfd = r->devnull = r->to_w = r->from_w = r->log_r = r->pidfd = -1;
	r->wake_fd = -1;
	r->stat_fd = -1;
	r->idle_cpu = -1;
	pthread_mutex_init(&r->jobs_mu, NULL);
	r->sb.landlock_fd = -1;
	if (env && repl_sandbox_parse(env, &r->sb_env_disable, err) < 0) {
		rlm_err_prefix(err, "RLM_SANDBOX_DISABLE");
		rc = RLM_EINVAL;
		goto fail;
	}
	r->cfg.sandbox.disable |= r->sb_env_disable;
	r->python = xstrdup(cfg->python ? cfg->python : "/usr/bin/python3");
	r->cfg.python = r->python;
	r->schema = cfg->schema ? xstrdup(cfg->schema) : NULL;
	r->cfg.schema = r->schema;
	if (access(r->python, X_OK) < 0) {
		rc = rlm_err_set(err, errno == ENOENT ? RLM_ENOTFOUND : -errno,
				 "cannot run python '%s': %s", r->python, strerror(errno));
		goto fail;
	}
	rc = repl__code_fd(err);
	if (rc < 0)
		goto fail;
	rc = open_memfd(r, &cfg->ctx, err);
	if (rc < 0)
		goto fail;
	rc = make_scratch(r, err);
	if (rc < 0)
		goto fail;
	r->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (r->devnull < 0) {
		rc = rlm_err_set(err, RLM_EIO, "cannot open /dev/null: %s", strerror(errno));
		goto fail;
	}
	build_args(r);
	fill_begin(r);
	rc = repl__sandbox_plan(r, err);
	if (rc < 0)
		goto fail;
	rc = repl__worker_start(r, err);
	fill_join(r); /* a start that failed before the fill */
	r->ctx_pending = NULL; /* borrowed from cfg: gone after this call */
	if (rc < 0)
		goto fail;
	*out = r;
	return 0;
fail:
	fill_join(r);
	repl_free(r);
	return rc;
}

atomic_int repl__open;

void repl_free(struct repl *r)
{
	if (!r)
		return;
	atomic_fetch_sub(&repl__open, 1);
	repl__worker_stop(r);
	repl__probe_close(r);
	repl__zygote_release(r);
	if (r->memfd >= 0)
		close(r->memfd);
	if (r->devnull >= 0)
		close(r->devnull);
	if (r->sb.landlock_fd >= 0)
		close(r->sb.landlock_fd);
	free(r->sb_bpf);
	if (r->scratch_root)
		rm_tree_at(AT_FDCWD, r->scratch_root);
	free(r->scratch);
	free(r->scratch_root);
	for (size_t i = 0; i < ARRAY_SIZE(r->own); i++)
		free(r->own[i]);
	free(r->in);
	repl__spares_drop(r);
	buf_release(&r->out);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	pthread_mutex_destroy(&r->jobs_mu);
	free(r->python);
	free(r->schema);
	free(r);
}

void repl_layout(const struct repl *r, struct repl_layout *out)
{
	*out = (struct repl_layout){r->memfd,	     r->text_at, r->text_len,	 r->table_at,
				    r->n_docs, r->meta_table_at, r->n_meta};
}

void repl_stats(const struct repl *r, struct repl_stats *out)
{
	*out = r->st;
	out->pid = r->pid;
}

void repl_result_release(struct repl_result *res)
{
	if (!res)
		return;
	free(res->output);
	free(res->answer);
	free(res->content);
	for (size_t i = 0; i < res->n_sources; i++) {
		free(res->sources[i].doc);
		free(res->sources[i].quote);
	}
	free(res->sources);
	for (size_t i = 0; i < res->n_vars; i++)
		free(res->vars[i]);
	free(res->vars);
	free(res->made);
	free(res->invalid);
	memset(res, 0, sizeof(*res));
}

/* ---- restarts ---- */

/* Why the run interrupted the code (not its own time limit), in words. */
static const char *cause_words(enum cause c)
{
	return c == C_DEADLINE ? "the deadline of the run passed"
	       : c == C_STOP   ? "the run was stopped (a limit of the whole run was reached)"
			       : "the run was cancelled";
}

static int cause_rc(const struct run *x, struct rlm_err *err)
{
	if (x->cause == C_DEADLINE)
		return rlm_err_set(err, RLM_ETIMEOUT,
				   "the deadline passed while the REPL ran code");
	if (x->cause == C_CANCEL)
		return rlm_err_set(err, RLM_ECANCEL, "cancelled while the REPL ran code");
	if (x->cause == C_STOP)
		return rlm_err_set(err, RLM_ECANCEL, "the run stopped while the REPL ran code");
	return 0;
}

/* Start a new worker after the old one was stopped; a failure is said in
 * note and makes the repl unusable. */
static int respawn(struct repl *r, struct run *x, struct buf *note, struct rlm_err *err)
{
	struct rlm_err why = {0, ""};
	int rc;
	x->out->restarted = true;
	r->st.restarts++;
	rc = repl__worker_start(r, &why);
	if (rc < 0) {
		r->broken = true;
		buf_printf(note, "[the REPL could not be restarted: %s]\n", why.msg);
		rlm_err_set(err, rc, "cannot restart the REPL: %s", why.msg);
		return rc;
	}
	return 0;
}

/* Stop the worker (if it still runs), say why in the output, start a new
 * one. with_log: show what it last wrote on fds 1 and 2. */
static int restart(struct repl *r, struct run *x, const char *reason, bool with_log,
		   struct rlm_err *err)
{
	char *tail = NULL;
	repl__worker_stop(r);
	if (with_log)
		tail = repl__log_tail(r, 2000);
	buf_printf(&x->note,
		   "[the REPL was restarted: %s. All variables are gone; `context` and the helper "
		   "functions were reloaded.]\n",
		   reason);
	if (tail && *tail)
		buf_printf(&x->note, "The worker's last output on stdout/stderr:\n%s%s", tail,
			   tail[strlen(tail) - 1] == '\n' ? "" : "\n");
	free(tail);
	return respawn(r, x, &x->note, err);
}

/* A worker's scratch directory (a plain directory) grew past its limit
 * (what says how): a new worker on an empty directory, said after the
 * output. */
static int scratch_restart(struct repl *r, struct run *x, const char *what, struct rlm_err *err)
{
	repl__worker_stop(r);
	empty_dir(r->scratch);
	unsay_kept(x);
	buf_printf(&x->after,
		   "[the REPL was restarted: %s. All variables and scratch files are gone; "
		   "`context` and the helper functions were reloaded.]\n",
		   what);
	return respawn(r, x, &x->after, err);
}

/* After an exec. */
static int scratch_check(struct repl *r, struct run *x, struct rlm_err *err)
{
	char what[200];
	if (r->pid <= 0 || r->broken || !repl__scratch_over(r, what, sizeof(what)))
		return 0;
	return scratch_restart(r, x, what, err);
}

/* After an exec's result: the code's threads must have ended with it (the
 * runtime waits for them, or stops them when the time is up), or they
 * would compute while the model thinks. The kernel's count is the check,
 * not the runtime's word (model code can patch the runtime): a thread
 * still there THREADS_WAIT_NS after the result (a thread that ended may
 * take a moment to leave) costs the worker a restart, said after the
 * output. rc is what the exec returns so far. */
static int threads_check(struct repl *r, struct run *x, int rc, struct rlm_err *err)
{
	int64_t until = time_now_ns() + THREADS_WAIT_NS;
	int n, k;
	if (r->pid <= 0 || r->broken || x->out->restarted)
		return rc;
	while ((n = repl__worker_threads(r)) > 1 + x->parked && time_now_ns() < until)
		time_sleep_ns(1000000);
	if (n <= 1 + x->parked)
		return rc; /* -1: not to be known; the runtime's wait stands */
	n -= x->parked;
	repl__worker_stop(r);
	unsay_kept(x);
	buf_printf(&x->after,
		   "[the REPL was restarted: %d thread%s the code started %s still running after "
		   "the exec ended and could not be stopped. All variables are gone; `context` and "
		   "the helper functions were reloaded. Join the threads you start, and shut down "
		   "pools (`with ThreadPoolExecutor() as ex:`), before the code ends.]\n",
		   n - 1, n == 2 ? "" : "s", n == 2 ? "was" : "were");
	k = respawn(r, x, &x->after, err);
	return k < 0 ? k : rc;
}

/* During an exec, every SCRATCH_POLL_NS, or ten times as long as a look
 * takes when that is longer (a walk of up to WALK_MAX entries): without
 * it, one exec could fill the disk before the check after it. Returns
 * AGAIN while the scratch is within its limit. */
static int scratch_poll(struct repl *r, struct run *x, int64_t now, struct rlm_err *err)
{
	char what[200];
	bool over = repl__scratch_over(r, what, sizeof(what));
	int64_t cost = time_now_ns() - now;
	int rc;
	x->scratch_at = now + (10 * cost > SCRATCH_POLL_NS ? 10 * cost : SCRATCH_POLL_NS);
	if (!over)
		return AGAIN;
	x->scratch_at = 0;
	x->out->error = true;
	rc = scratch_restart(r, x, what, err);
	return rc < 0 ? rc : cause_rc(x, err);
}

static int violation(struct repl *r, struct run *x, const char *why, struct rlm_err *err)
{
	char reason[600];
	int rc;
	snprintf(reason, sizeof(reason), "the worker broke the protocol (%.500s)", why);
	x->out->error = true;
	rc = restart(r, x, reason, false, err);
	return rc < 0 ? rc : cause_rc(x, err);
}

static int died(struct repl *r, struct run *x, struct rlm_err *err)
{
	char how[200], reason[300];
	int rc;
	repl__worker_reap(r, how, sizeof(how));
	snprintf(reason, sizeof(reason), "the worker died (%s)", how);
	x->out->error = true;
	rc = restart(r, x, reason, true, err);
	return rc < 0 ? rc : cause_rc(x, err);
}

static int killed(struct repl *r, struct run *x, struct rlm_err *err)
{
	char lim[32], grace[32], reason[300];
	int rc;
	fmt_secs(lim, sizeof(lim), x->limit);
	fmt_secs(grace, sizeof(grace), r->cfg.grace_ns);
	if (x->cause == C_LIMIT)
		snprintf(reason, sizeof(reason),
			 "the code ran past its time limit of %s and did not stop within %s of an "
			 "interrupt",
			 lim, grace);
	else
		snprintf(reason, sizeof(reason),
			 "%s and the code did not stop within %s of an interrupt",
			 cause_words(x->cause), grace);
	x->out->error = x->out->interrupted = true;
	rc = restart(r, x, reason, false, err);
	return rc < 0 ? rc : cause_rc(x, err);
}

static int fatal(struct repl *r, struct run *x, const char *msg, struct rlm_err *err)
{
	char reason[1200];
	int rc;
	snprintf(reason, sizeof(reason), "its runtime failed: %.1000s", msg);
	x->out->error = true;
	rc = restart(r, x, reason, true, err);
	return rc < 0 ? rc : cause_rc(x, err);
}

/* Between execs the worker only waits for a frame. CPU used meanwhile is
 * code left running after its exec that the thread check cannot see (the
 * main thread, in a runtime the code patched): the worker is restarted
 * rather than trusted to stop. */
static int idle_check(struct repl *r, struct run *x, struct rlm_err *err)
{
	int64_t now = r->idle_cpu >= 0 ? repl__worker_cpu(r) : -1;
	char reason[200], used[32];
	if (now < 0 || now - r->idle_cpu <= IDLE_CPU_NS)
		return 0;
	fmt_secs(used, sizeof(used), now - r->idle_cpu);
	snprintf(reason, sizeof(reason),
		 "it used %s of CPU between execs, running code after its exec had ended", used);
	return restart(r, x, reason, false, err);
}

/* After an exec or final_var: what the worker's CPU time is, for
 * idle_check. */
static void idle_mark(struct repl *r)
{
	r->idle_cpu = r->pid > 0 && !r->broken ? repl__worker_cpu(r) : -1;
	/* And stopped until the next frame: a thread the checks could not
	 * see (a parked pool thread given work by code that ran after its
	 * exec, in a gc callback, say) computes no more while the model
	 * thinks. */
	if (r->pid > 0 && !r->broken)
		repl__freeze(r);
}

/* Before an exec: anything the worker sent since the last one, or its
 * death, means it is not in a state to run code. */
static int check_idle(struct repl *r, struct run *x, struct rlm_err *err)
{
	struct rlm_err why = {0, ""};
	cJSON *f = NULL;
	int k;
	repl__pump(r, 0);
	if (r->exited)
		repl__pump(r, 0);
	if (r->in_len > r->in_off || r->in_oom) {
		char reason[600];
		k = repl__take_frame(r, &f, &why);
		if (k > 0 && strcmp(json_str(f, "type"), "call") == 0)
			snprintf(reason, sizeof(reason),
				 "a call arrived after its exec had ended (from a thread?)");
		else if (k > 0)
			snprintf(reason, sizeof(reason),
				 "it sent a '%s' frame while no code was running",
				 json_str(f, "type"));
		else
			snprintf(reason, sizeof(reason),
				 "it wrote to the controller while no code was "
				 "running: %s",
				 k < 0 ? why.msg : "an incomplete frame");
		cJSON_Delete(f);
		k = violation(r, x, reason, err);
		x->out->error = false; /* the code has not run yet */
		return k;
	}
	if (r->eof || r->wdead) {
		char how[200], reason[300];
		repl__worker_reap(r, how, sizeof(how));
		snprintf(reason, sizeof(reason), "the worker died between execs (%s)", how);
		return restart(r, x, reason, true, err);
	}
	return idle_check(r, x, err);
}

/* ---- calls ---- */

/* malloc_trim walks and locks every arena while the pool's threads
 * allocate: after a large frame, but not more often than TRIM_EVERY_NS. */
static bool trim_due(void)
{
	static _Atomic int64_t last;
	int64_t now = time_now_ns(), was = atomic_load(&last);
	return now - was >= TRIM_EVERY_NS && atomic_compare_exchange_strong(&last, &was, now);
}

/* Replies whose texts come to this many bytes go as a binary frame. */
#define REPLY_BINARY_MIN ((size_t)64 << 10)

/* The reply frame to call id: texts[0..n) and whether each is an error.
 * JSON for a short reply; past REPLY_BINARY_MIN of text, a binary reply
 * (repl.h, BINARY REPLY FRAMES): the texts' bytes as they are, after a
 * small JSON header with their lengths, so that neither side escapes them. */
static void reply_frame(struct buf *reply, int64_t id, char *const *texts, const bool *errors,
			size_t n)
{
	size_t start = repl__frame_begin(reply), head = 0, total = 0, *lens;
	bool binary;
	lens = xcalloc(n ? n : 1, sizeof(*lens));
	for (size_t i = 0; i < n; i++)
		total += lens[i] = strlen(texts[i]);
	binary = total >= REPLY_BINARY_MIN;
	if (binary) {
		buf_append(reply, "\0\0\0\0\0", 5); /* 0x00, then the header's length */
		head = reply->len;
	}
	buf_printf(reply, "{\"type\":\"reply\",\"id\":%lld,\"%s\":[", (long long)id,
		   binary ? "text_lens" : "texts");
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_putc(reply, ',');
		if (binary)
			buf_printf(reply, "%zu", lens[i]);
		else
			json_put_str(reply, texts[i], lens[i], 0);
	}
	buf_puts(reply, "],\"errors\":[");
	for (size_t i = 0; i < n; i++)
		buf_puts(reply,
			 i ? (errors[i] ? ",true" : ",false") : (errors[i] ? "true" : "false"));
	buf_puts(reply, "]}");
	if (binary) {
		size_t h = reply->len - head;
		repl__put_be32(reply->p + head - 4, (uint32_t)h);
		for (size_t i = 0; i < n; i++)
			buf_append(reply, texts[i], lens[i]);
	}
	repl__frame_end(reply, start);
	free(lens);
}

/* The frame's strings change hands (repl_call.bufs): the handler may
 * keep some, and frees them when it is done, so that a large context is
 * not held twice while its child runs. */
static void answer_into(struct repl *r, cJSON *f, int64_t deadline, bool interrupted,
			struct buf *reply)
{
	cJSON *ps = json_get(f, "prompts"), *cs = json_get(f, "contexts"), *p;
	size_t n = (size_t)cJSON_GetArraySize(ps), i = 0, total = 0;
	const char **prompts = xcalloc(n, sizeof(*prompts));
	size_t *lens = xcalloc(n, sizeof(*lens));
	struct repl_ctx_arg *contexts = NULL;
	char **texts = xcalloc(n, sizeof(*texts));
	char **bufs = xcalloc(2 * n, sizeof(*bufs));
	bool *errors = xcalloc(n, sizeof(*errors));
	struct repl_call c;
	cJSON_ArrayForEach(p, ps)
	{
		prompts[i] = p->valuestring;
		/* a binary frame's prompt lies in the frame's bytes, which the
		 * tree frees: nothing for the handler to take; its length was
		 * read from the frame (repl_frame_parse) */
		if (p->type & cJSON_IsReference)
			lens[i] = (size_t)p->valuedouble;
		else
			lens[i] = strlen(p->valuestring);
		total += lens[i];
		if (!(p->type & cJSON_IsReference)) {
			bufs[i] = p->valuestring;
			p->valuestring = NULL;
		}
		i++;
	}
	memset(&c, 0, sizeof(c));
	if (cs) {
		/* repl_frame_parse checked there are n items. */
		contexts = xcalloc(n, sizeof(*contexts));
		i = 0;
		cJSON_ArrayForEach(p, cs)
		{
			repl__ctx_arg(p, &contexts[i]);
			if (contexts[i].kind == REPL_CTX_TEXT) {
				bufs[n + i] = p->valuestring;
				total += contexts[i].len;
				p->valuestring = NULL;
			}
			for (size_t k = 0; k < contexts[i].n_items; k++)
				total += contexts[i].item_lens[k];
			i++;
		}
		c.contexts = contexts;
	}
	c.rlm = strcmp(json_str(f, "kind"), "rlm") == 0;
	c.tool = strcmp(json_str(f, "kind"), "tool") == 0;
	c.batched = cJSON_IsTrue(json_get(f, "batched"));
	c.model = json_str(f, "model");
	c.prompts = prompts;
	c.lens = lens;
	c.bufs = bufs;
	c.n = n;
	c.deadline_ns = deadline;
	if (interrupted || !r->cfg.on_call) {
		const char *why = interrupted
				      ? "Error: the code was interrupted; this call was not made"
				      : "Error: sub-calls are not available in this REPL";
		for (i = 0; i < n; i++) {
			texts[i] = xstrdup(why);
			errors[i] = true;
		}
	} else {
		r->cfg.on_call(r->cfg.call_arg, &c, texts, errors);
	}
	for (i = 0; i < n; i++)
		if (!texts[i]) {
			texts[i] = xstrdup("Error: no answer");
			errors[i] = true;
		}
	reply_frame(reply, json_int(f, "id", 0), texts, errors, n);
	for (i = 0; i < n; i++)
		free(texts[i]);
	for (i = 0; i < 2 * n; i++)
		free(bufs[i]);
	free(bufs);
	/* A large frame's strings came from this thread's malloc arena:
	 * hand the pages back rather than keep them for the next one. */
	if (total >= TRIM_AFTER && trim_due())
		malloc_trim(0);
	free(prompts);
	free(lens);
	for (i = 0; contexts && i < n; i++)
		repl__ctx_arg_release(&contexts[i]);
	free(contexts);
	free(texts);
	free(errors);
}

/* One call frame answered on a thread of its own (cfg.parallel_calls).
 * The thread owns f and reply until it sets done under r->jobs_mu; the
 * exec's thread then takes the reply and joins it. */
struct repl__job {
	struct repl *r;
	cJSON *f;
	size_t n;                 /* its prompts */
	int64_t deadline;
	bool interrupted;
	struct buf reply;
	bool done;
	bool threaded;
	pthread_t th;
	struct repl__job *next;
};

static void *job_main(void *arg)
{
	struct repl__job *j = arg;
	uint64_t one = 1;
	answer_into(j->r, j->f, j->deadline, j->interrupted, &j->reply);
	pthread_mutex_lock(&j->r->jobs_mu);
	j->done = true;
	pthread_mutex_unlock(&j->r->jobs_mu);
	if (write(j->r->wake_fd, &one, sizeof(one)) < 0)
		(void)0; /* the counter is full: the pump is awake anyway */
	return NULL;
}

/* What a pause of the exec clock (calls out) of wall time dt counts of
 * the worker's own time, the worker's CPU time being cpu0 and cpu1 at its
 * ends: the CPU its threads used meanwhile, at most dt (so that the clock
 * never runs faster than a wall clock). All of dt when the CPU time is not
 * known: a clock we cannot check does not stop. */
static int64_t pause_counts(int64_t dt, int64_t cpu0, int64_t cpu1)
{
	int64_t d = cpu1 - cpu0;
	if (cpu0 < 0 || cpu1 < 0)
		return dt;
	return d < 0 ? 0 : d > dt ? dt : d;
}

/* A pause of the clock ends: every call answered on a thread of its own
 * is in (n of them were just taken). */
static void jobs_settle(struct repl *r, struct run *x, size_t n)
{
	r->jobs_out -= n;
	if (n && r->jobs_out == 0) {
		int64_t dt = time_now_ns() - r->jobs_since;
		x->call_ns += dt;
		x->pause_own += pause_counts(dt, r->jobs_cpu, repl__worker_cpu(r));
		x->out->call_ns += dt;
	}
}

/* Take the jobs that are done (all of them, waiting, when all): their
 * replies go to the worker when send. */
static void jobs_collect(struct repl *r, struct run *x, bool all, bool send)
{
	struct repl__job *done = NULL, **pp, *j;
	size_t n = 0;
	if (!r->jobs_out)
		return;
	pthread_mutex_lock(&r->jobs_mu);
	for (pp = &r->jobs; (j = *pp);) {
		if (j->done || all) {
			*pp = j->next;
			j->next = done;
			done = j;
		} else {
			pp = &j->next;
		}
	}
	pthread_mutex_unlock(&r->jobs_mu);
	/* Oldest first: the list is newest first, and done reverses it. */
	while ((j = done)) {
		done = j->next;
		if (j->threaded)
			pthread_join(j->th, NULL);
		if (send && j->reply.len)
			buf_append(&r->out, j->reply.p, j->reply.len);
		buf_release(&j->reply);
		repl__frame_free(r, j->f);
		r->jobs_prompts -= j->n;
		free(j);
		n++;
	}
	jobs_settle(r, x, n);
	if (send && n)
		repl__flush(r);
}

/* Answer call frame f: on this thread, or with cfg.parallel_calls on a
 * thread of its own (the frame is then the job's: *fp becomes NULL). */
static void answer_call(struct repl *r, struct run *x, cJSON **fp)
{
	cJSON *f = *fp;
	size_t n = (size_t)cJSON_GetArraySize(json_get(f, "prompts"));
	struct repl__job *j;
	x->out->calls += n;
	r->st.calls += (int64_t)n;
	if (r->cfg.parallel_calls && r->wake_fd < 0)
		r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!r->cfg.parallel_calls || r->wake_fd < 0) {
		int64_t t = time_now_ns(), cpu = repl__worker_cpu(r), dt;
		answer_into(r, f, x->deadline, x->cause != C_NONE, &r->out);
		repl__flush(r);
		dt = time_now_ns() - t;
		x->call_ns += dt;
		x->pause_own += pause_counts(dt, cpu, repl__worker_cpu(r));
		x->out->call_ns += dt;
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->r = r;
	j->f = f;
	j->n = n;
	r->jobs_prompts += n;
	*fp = NULL;
	j->deadline = x->deadline;
	j->interrupted = x->cause != C_NONE;
	buf_init(&j->reply, 0);
	if (r->jobs_out++ == 0) {
		r->jobs_since = time_now_ns();
		r->jobs_cpu = repl__worker_cpu(r);
	}
	pthread_mutex_lock(&r->jobs_mu);
	j->next = r->jobs;
	r->jobs = j;
	pthread_mutex_unlock(&r->jobs_mu);
	if (thread_start(&j->th, NULL, job_main, j, "rlm-call") == 0) {
		j->threaded = true;
		return;
	}
	/* Out of threads: answered here, taken with the others. */
	answer_into(r, f, j->deadline, j->interrupted, &j->reply);
	j->done = true;
	jobs_collect(r, x, false, true);
}

/* ---- results ---- */

static char *dup_str_or_null(const cJSON *f, const char *key)
{
	const char *s = json_str(f, key);
	return s ? xstrdup(s) : NULL;
}

/* The worker's "made": valid UTF-8 only, cut to REPL_MADE_MAX characters
 * (the worker is hostile). */
#define REPL_MADE_MAX 500
#define REPL_PARKED_MAX 256
static void take_made(struct repl_result *out, const cJSON *f)
{
	const char *s = json_str(f, "made");
	size_t len;
	if (!s || !*s)
		return;
	len = strlen(s);
	if (!text_utf8_valid(s, len, NULL))
		return;
	if (text_utf8_count(s, len) > REPL_MADE_MAX)
		len = text_utf8_offset(s, len, REPL_MADE_MAX);
	out->made = xstrndup(s, len);
}

static void take_result(struct repl *r, struct run *x, const cJSON *f)
{
	struct repl_result *out = x->out;
	const char *o = json_str(f, "output");
	size_t len = strlen(o), i = 0;
	const cJSON *vars = json_get(f, "vars"), *v;
	const cJSON *at = json_get(f, "error_at");
	int64_t parked;
	if (text_utf8_count(o, len) > r->cfg.output_limit + REPL_MARK_SLACK) {
		/* A worker that did not cut: where its error is, is lost. */
		x->body = repl_truncate(o, len, r->cfg.output_limit, &x->body_len);
	} else {
		x->body = xstrndup(o, len), x->body_len = len;
		if (at)
			x->body_err = text_utf8_offset(o, len, (size_t)at->valuedouble);
	}
	out->output_chars = (size_t)json_int(f, "output_chars", 0);
	out->error |= cJSON_IsTrue(json_get(f, "error"));
	out->interrupted = cJSON_IsTrue(json_get(f, "interrupted"));
	out->ready = cJSON_IsTrue(json_get(f, "ready"));
	out->answer = out->ready ? dup_str_or_null(f, "answer") : NULL;
	if (out->ready && !out->answer)
		out->answer = xstrdup("");
	out->content = out->ready ? NULL : dup_str_or_null(f, "content");
	out->invalid = out->ready ? NULL : dup_str_or_null(f, "invalid");
	take_made(out, f);
	/* Idle threads of a pool the code left open (runtime.py, _parked):
	 * they may stay. The runtime's word, bounded; a lying one is caught
	 * by the check of the CPU used between execs. */
	parked = json_int(f, "parked", 0);
	x->parked = parked > 0 && parked <= REPL_PARKED_MAX ? (int)parked : 0;
	if (out->ready)
		repl__sources(f, out, &x->after);
	out->n_vars = (size_t)cJSON_GetArraySize(vars);
	out->vars = xcalloc(out->n_vars + 1, sizeof(*out->vars));
	cJSON_ArrayForEach(v, vars)
	{
		out->vars[i++] = xstrdup(v->valuestring);
	}
	if (out->interrupted && x->cause != C_NONE) {
		char lim[32];
		fmt_secs(lim, sizeof(lim), x->limit);
		if (x->cause == C_LIMIT)
			buf_printf(&x->after,
				   "[the code was interrupted: it ran past its time limit of %s.",
				   lim);
		else
			buf_printf(&x->after, "[the code was interrupted: %s.",
				   cause_words(x->cause));
		x->kept_at = x->after.len;
		buf_puts(&x->after, KEPT "]\n");
	}
}

/* The worker is restarted after its result: the interrupt's line no
 * longer says the variables are kept. */
static void unsay_kept(struct run *x)
{
	size_t n = sizeof(KEPT) - 1;
	if (x->kept_at == SIZE_MAX || x->kept_at + n > x->after.len)
		return;
	memmove(x->after.p + x->kept_at, x->after.p + x->kept_at + n,
		x->after.len - x->kept_at - n);
	x->after.len -= n;
	x->after.p[x->after.len] = '\0';
	x->kept_at = SIZE_MAX;
}

static int on_frame(struct repl *r, struct run *x, cJSON **fp, struct rlm_err *err)
{
	cJSON *f = *fp;
	const char *type = json_str(f, "type");
	char why[300];
	if (strcmp(type, "result") == 0) {
		int64_t id = json_int(f, "id", -1);
		if (id != x->id) {
			snprintf(why, sizeof(why), "a result for %lld while %lld was running",
				 (long long)id, (long long)x->id);
			return violation(r, x, why, err);
		}
		take_result(r, x, f);
		return cause_rc(x, err);
	}
	if (strcmp(type, "call") == 0) {
		int64_t e = json_int(f, "exec", -1);
		size_t n = (size_t)cJSON_GetArraySize(json_get(f, "prompts"));
		if (e != x->id) {
			snprintf(why, sizeof(why), "a call for exec %lld during exec %lld",
				 (long long)e, (long long)x->id);
			return violation(r, x, why, err);
		}
		if (x->out->calls + n > r->cfg.max_calls_exec) {
			snprintf(why, sizeof(why), "more than %zu sub-calls (prompts) in one exec",
				 r->cfg.max_calls_exec);
			return violation(r, x, why, err);
		}
		if ((size_t)r->st.calls + n > r->cfg.max_calls_total) {
			snprintf(why, sizeof(why), "more than %zu sub-calls (prompts) in this REPL",
				 r->cfg.max_calls_total);
			return violation(r, x, why, err);
		}
		answer_call(r, x, fp);
		return AGAIN;
	}
	if (strcmp(type, "fatal") == 0)
		return fatal(r, x, json_str(f, "error"), err);
	return violation(r, x, "a second 'ready' frame", err);
}

/* ---- the loop ---- */

static bool stopped(const struct repl *r)
{
	return r->cfg.stop && atomic_load(r->cfg.stop);
}

/* The worker's own time in this exec at now: the wall time since the exec
 * frame was sent, less the time calls were out, plus the CPU time its
 * threads used while calls were out (at most that time). A call out stops
 * the clock only as far as the worker does nothing meanwhile: one thread
 * waiting on a reply does not hide another's computing (issue 19). */
static int64_t own_time(struct repl *r, const struct run *x, int64_t now)
{
	int64_t own = now - x->t0 - x->call_ns + x->pause_own;
	if (r->jobs_out) {
		int64_t dt = now - r->jobs_since;
		own += pause_counts(dt, r->jobs_cpu, repl__worker_cpu(r)) - dt;
	}
	return own;
}

/* Why the code must be interrupted now, if it must (own: own_time). A
 * stop counts from when it is first seen here, in the worker's own time:
 * the code that gets a call's answer after the stop still has its grace
 * to keep it. */
static enum cause due(const struct repl *r, struct run *x, int64_t now, int64_t own)
{
	if (x->limit > 0 && own >= x->limit)
		return C_LIMIT;
	if (x->deadline > 0 && now >= x->deadline)
		return C_DEADLINE;
	if (r->cfg.cancel && atomic_load(r->cfg.cancel))
		return C_CANCEL;
	if (stopped(r)) {
		if (x->stop_seen < 0)
			x->stop_seen = own;
		if (own >= x->stop_seen + r->cfg.stop_grace_ns)
			return C_STOP;
	}
	return C_NONE;
}

/* When to look again. The worker's own time runs at most as fast as the
 * wall clock, so a limit on it is not reached before now plus what is
 * left of it; while calls are out it may run slower, so it is looked at
 * again no more often than every CANCEL_POLL_NS. */
static int64_t next_event(const struct repl *r, const struct run *x, int64_t now, int64_t own)
{
	int64_t t = 0, least = r->jobs_out ? CANCEL_POLL_NS : 0;
#define EARLIER(v)                                                                                 \
	do {                                                                                       \
		int64_t v_ = (v);                                                                  \
		if (t == 0 || v_ < t)                                                              \
			t = v_;                                                                    \
	} while (0)
	if (x->scratch_at)
		EARLIER(x->scratch_at);
	if (x->cause != C_NONE) {
		EARLIER(now + RLM_MAX(x->kill_own - own, least));
		return t;
	}
	if (x->limit > 0)
		EARLIER(now + RLM_MAX(x->limit - own, least));
	if (x->deadline > 0)
		EARLIER(x->deadline);
	if (r->cfg.cancel || r->cfg.stop)
		EARLIER(now + CANCEL_POLL_NS);
#undef EARLIER
	return t;
}

/* MAX_JOBS call frames out: wait for one to end (the worker is hostile:
 * one thread a frame must not be unbounded), not for more frames. */
static void wait_job(struct repl *r, struct run *x, int ms)
{
	struct pollfd p = {r->wake_fd, POLLIN, 0};
	uint64_t v;
	if (poll(&p, 1, ms < 0 || ms > 1000 ? 1000 : ms) > 0 && read(r->wake_fd, &v, sizeof(v)) < 0)
		(void)0; /* EAGAIN: taken already */
	jobs_collect(r, x, false, true);
}

/* The clocks, between frames: SIGINT when the code is due to be
 * interrupted, SIGKILL and a restart when it has not stopped within the
 * grace, the scratch's size. Returns AGAIN with *wake (when to look
 * again), or what ends the exec. */
static int tick(struct repl *r, struct run *x, int64_t *wake, struct rlm_err *err)
{
	int64_t now = time_now_ns(), own = own_time(r, x, now);
	if (x->cause == C_NONE) {
		x->cause = due(r, x, now, own);
		if (x->cause != C_NONE) {
			/* To the main thread: Python runs handlers there, and a
			 * sleep elsewhere would not wake. */
			syscall(SYS_tgkill, r->pid, r->pid, SIGINT);
			x->kill_own = own + r->cfg.grace_ns;
		}
	} else if (own >= x->kill_own) {
		/* The grace is the worker's own time too: code that waits,
		 * idle, on a call's answer is not killed for it. */
		return killed(r, x, err);
	}
	if (x->scratch_at && now >= x->scratch_at) {
		int rc = scratch_poll(r, x, now, err);
		if (rc != AGAIN)
			return rc;
	}
	*wake = next_event(r, x, now, own);
	return AGAIN;
}

static int wait_frames(struct repl *r, struct run *x, struct rlm_err *err)
{
	for (;;) {
		struct rlm_err why = {0, ""};
		cJSON *f = NULL;
		int64_t wake = 0;
		int k, rc;
		if (r->jobs_out >= MAX_JOBS ||
		    (r->cfg.calls_ahead && r->jobs_prompts >= r->cfg.calls_ahead)) {
			/* No frame is taken, but the clocks run on; the
			 * worker waits to send the rest of a batch. */
			rc = tick(r, x, &wake, err);
			if (rc != AGAIN)
				return rc;
			wait_job(r, x, ms_until(wake, time_now_ns()));
			continue;
		}
		k = repl__take_frame(r, &f, &why);
		if (k < 0)
			return violation(r, x, why.msg, err);
		if (k > 0) {
			rc = on_frame(r, x, &f, err);
			repl__frame_free(r, f);
			if (rc != AGAIN)
				return rc;
			continue;
		}
		if (r->eof || r->wdead)
			return died(r, x, err);
		/* A job's end or a frame wakes the pump. */
		jobs_collect(r, x, false, true);
		rc = tick(r, x, &wake, err);
		if (rc != AGAIN)
			return rc;
		repl__pump(r, ms_until(wake, time_now_ns()));
	}
}

/* Frames until the result; every call answered on a thread of its own
 * has ended when it returns (a reply that comes after the exec ended, or
 * after the worker was restarted, is dropped). */
static int wait_result(struct repl *r, struct run *x, struct rlm_err *err)
{
	int rc = wait_frames(r, x, err);
	jobs_collect(r, x, true, false);
	repl__spares_drop(r);
	return rc;
}

/* Set up x for one run; NULL-safe on the result. */
static void run_init(struct repl *r, struct run *x, struct repl_result *out, int64_t deadline)
{
	memset(out, 0, sizeof(*out));
	memset(x, 0, sizeof(*x));
	x->begin = x->t0 = time_now_ns();
	x->deadline = deadline;
	x->stop_seen = -1;
	x->limit = r->cfg.exec_timeout_ns > 0 ? r->cfg.exec_timeout_ns : 0;
	if (!r->sb_status.scratch_tmpfs)
		x->scratch_at = x->begin + SCRATCH_POLL_NS;
	x->out = out;
	x->body_err = SIZE_MAX;
	buf_init(&x->note, 0);
	buf_init(&x->after, 0);
	x->kept_at = SIZE_MAX;
}

static void run_finish(struct run *x)
{
	struct buf b = BUF_INIT;
	buf_append(&b, x->note.p, x->note.len);
	if (x->body)
		buf_append(&b, x->body, x->body_len);
	if (x->after.len)
		buf_append(&b, x->after.p, x->after.len);
	x->out->output = buf_detach(&b, &x->out->len);
	x->out->error_at = x->out->error && x->body && x->body_err != SIZE_MAX
				   ? x->note.len + x->body_err
				   : x->out->len;
	x->out->ns = time_now_ns() - x->begin;
	free(x->body);
	buf_release(&x->note);
	buf_release(&x->after);
}

/* Before repl_exec and repl_final_var send their frame: refuse when the
 * deadline passed or the run was cancelled or stopped, make sure the
 * worker is in a state to run code, and take an id. */
static int run(struct repl *r, struct run *x, struct rlm_err *err)
{
	int rc;
	if (r->broken || r->pid <= 0)
		return rlm_err_set(err, RLM_EIO,
				   "the REPL is unusable: its worker could not be "
				   "restarted");
	if (x->deadline > 0 && time_now_ns() >= x->deadline) {
		buf_puts(&x->note, "[the code was not run: the deadline of the run had passed]\n");
		x->out->error = true;
		return rlm_err_set(err, RLM_ETIMEOUT,
				   "the deadline passed before the REPL ran code");
	}
	if (r->cfg.cancel && atomic_load(r->cfg.cancel)) {
		buf_puts(&x->note, "[the code was not run: the run was cancelled]\n");
		x->out->error = true;
		return rlm_err_set(err, RLM_ECANCEL, "cancelled before the REPL ran code");
	}
	if (stopped(r)) {
		buf_puts(&x->note, "[the code was not run: the run was stopped]\n");
		x->out->error = true;
		return rlm_err_set(err, RLM_ECANCEL, "the run stopped before the REPL ran code");
	}
	rc = check_idle(r, x, err);
	if (rc < 0)
		return rc;
	r->log_len = 0;
	x->id = ++r->next_id;
	return 0;
}

int repl_exec(struct repl *r, const char *code, size_t len, int64_t deadline_ns,
	      struct repl_result *out, struct rlm_err *err)
{
	struct run x;
	size_t start;
	int rc;
	run_init(r, &x, out, deadline_ns);
	rc = run(r, &x, err);
	if (rc == 0) {
		start = repl__frame_begin(&r->out);
		buf_printf(&r->out, "{\"type\":\"exec\",\"id\":%lld,\"code\":", (long long)x.id);
		json_put_str(&r->out, code, len, 0);
		buf_putc(&r->out, '}');
		if (repl__frame_end(&r->out, start) < 0) {
			r->out.len = start;
			rc = rlm_err_set(err, RLM_ETOOBIG, "the code is too large for a frame");
		} else {
			repl__flush(r);
			x.t0 = time_now_ns();
			rc = wait_result(r, &x, err);
			r->st.execs++;
			if (rc == 0 || rc == RLM_ETIMEOUT || rc == RLM_ECANCEL)
				rc = threads_check(r, &x, rc, err);
			if (rc == 0)
				rc = scratch_check(r, &x, err);
			idle_mark(r);
		}
	}
	run_finish(&x);
	return rc;
}

/* The frame begun at start, written: send it and wait for its result (a
 * set, final or final_var frame), as an exec's end is waited for. A frame
 * over the cap is not sent: RLM_ETOOBIG naming what (e.g. "the answer"). */
static int send_wait(struct repl *r, struct run *x, size_t start, const char *what,
		     struct rlm_err *err)
{
	int rc;
	if (repl__frame_end(&r->out, start) < 0) {
		r->out.len = start;
		return rlm_err_set(err, RLM_ETOOBIG, "%s is too large for a frame", what);
	}
	repl__flush(r);
	x->t0 = time_now_ns();
	rc = wait_result(r, x, err);
	if (rc == 0 || rc == RLM_ETIMEOUT || rc == RLM_ECANCEL)
		rc = threads_check(r, x, rc, err);
	idle_mark(r);
	return rc;
}

int repl_set(struct repl *r, const char *name, const char *value_json, bool reset_answer,
	     int64_t deadline_ns, struct repl_result *out, struct rlm_err *err)
{
	struct run x;
	size_t start;
	int rc;
	run_init(r, &x, out, deadline_ns);
	rc = run(r, &x, err);
	if (rc == 0) {
		start = repl__frame_begin(&r->out);
		buf_printf(&r->out, "{\"type\":\"set\",\"id\":%lld,\"reset_answer\":%s,\"name\":",
			   (long long)x.id, reset_answer ? "true" : "false");
		json_put_str(&r->out, name, strlen(name), 0);
		buf_puts(&r->out, ",\"value\":");
		buf_puts(&r->out, value_json ? value_json : "null");
		buf_putc(&r->out, '}');
		rc = send_wait(r, &x, start, "the value", err);
	}
	run_finish(&x);
	return rc;
}

void repl_rebind(struct repl *r, repl_call_fn *on_call, void *call_arg, const atomic_bool *cancel,
		 const atomic_bool *stop)
{
	r->cfg.on_call = on_call;
	r->cfg.call_arg = call_arg;
	r->cfg.cancel = cancel;
	r->cfg.stop = stop;
}

/* repl_final_var and repl_final: send {"type":TYPE,"id":N,KEY:s} and wait
 * for its result. */
static int final_frame(struct repl *r, const char *type, const char *key, const char *s,
		       size_t len, int64_t deadline_ns, struct repl_result *out,
		       struct rlm_err *err)
{
	struct run x;
	size_t start;
	int rc;
	run_init(r, &x, out, deadline_ns);
	rc = run(r, &x, err);
	if (rc == 0) {
		start = repl__frame_begin(&r->out);
		buf_printf(&r->out, "{\"type\":\"%s\",\"id\":%lld,\"%s\":", type,
			   (long long)x.id, key);
		json_put_str(&r->out, s, len, 0);
		buf_putc(&r->out, '}');
		rc = send_wait(r, &x, start, "the answer", err);
	}
	run_finish(&x);
	return rc;
}

int repl_final_var(struct repl *r, const char *name, int64_t deadline_ns, struct repl_result *out,
		   struct rlm_err *err)
{
	return final_frame(r, "final_var", "name", name, strlen(name), deadline_ns, out, err);
}

int repl_final(struct repl *r, const char *text, size_t len, int64_t deadline_ns,
	       struct repl_result *out, struct rlm_err *err)
{
	return final_frame(r, "final", "text", text, len, deadline_ns, out, err);
}

int repl_set_schema(struct repl *r, const char *schema, struct rlm_err *err)
{
	struct repl_result res;
	struct run x;
	size_t start;
	int rc;
	if ((!schema && !r->schema) || (schema && r->schema && strcmp(schema, r->schema) == 0))
		return 0;
	memset(&res, 0, sizeof(res));
	run_init(r, &x, &res, 0);
	rc = run(r, &x, err);
	if (rc == 0) {
		start = repl__frame_begin(&r->out);
		buf_printf(&r->out, "{\"type\":\"schema\",\"id\":%lld,\"schema\":", (long long)x.id);
		if (schema)
			json_put_str(&r->out, schema, strlen(schema), 0);
		else
			buf_puts(&r->out, "null");
		buf_putc(&r->out, '}');
		if (repl__frame_end(&r->out, start) < 0) {
			r->out.len = start;
			rc = rlm_err_set(err, RLM_EINVAL, "the answer schema is too large for a frame");
		} else {
			repl__flush(r);
			x.t0 = time_now_ns();
			rc = wait_result(r, &x, err);
			idle_mark(r);
		}
	}
	run_finish(&x);
	if (rc == 0 && res.restarted) {
		/* the worker died on it: the new one started with the old schema */
		rc = rlm_err_set(err, RLM_EIO, "the worker was restarted while it took the schema");
	} else if (rc == 0 && res.error) {
		rc = rlm_err_set(err, RLM_EINVAL, "%.*s", (int)strcspn(res.output, "\n"), res.output);
	} else if (rc == 0) {
		free(r->schema);
		r->schema = schema ? xstrdup(schema) : NULL;
		r->cfg.schema = r->schema;
	}
	repl_result_release(&res);
	return rc;
}
