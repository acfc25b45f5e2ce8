/* SPDX-License-Identifier: MIT */
/* repl/seccomp.c -- the worker's two seccomp filters: compiled once with
 * libseccomp in the controller, applied in the child with raw prctl.
 *
 * DESIGN
 * The worker runs model-written Python, so it is hostile. Its system calls
 * are confined by an allow-list (docs/sandbox.md §6.3, which ran CPython
 * 3.11 through 46 attack and function cells under the same policy):
 *
 * - Two filters. The child of a multithreaded controller may not call
 *   libseccomp (it mallocs) between fork and execve, so both programs are
 *   compiled here, in the parent, and exported as raw sock_filter arrays.
 *   The *first* is applied by the child right before execve, so it must
 *   still allow execve: python3 itself has to start under it. The *late*
 *   filter (execve, execveat -> EPERM, all else allowed) is stacked by the
 *   runtime with ctypes prctl once Python is up, before any model code
 *   runs: from then on nothing can replace the interpreter. The kernel
 *   runs every stacked filter and takes the strictest answer.
 * - Default ERRNO(ENOSYS), not EPERM. A syscall libseccomp cannot name or
 *   we did not list falls to the default; glibc falls back to an older
 *   call only on ENOSYS (faccessat2 -> faccessat, clone3 -> clone, ...).
 *   The known-dangerous families get an explicit ERRNO(EPERM) instead, so
 *   the model sees a readable PermissionError rather than "Function not
 *   implemented".
 * - clone3 gets ENOSYS (here: the default; libseccomp refuses a rule
 *   whose action is the default one). glibc >= 2.34 tries clone3 first
 *   in pthread_create and treats EPERM as fatal; its flags live in a
 *   struct a filter cannot read. So clone3 must fail "softly" and clone,
 *   whose flags are a register, is allowed only with CLONE_THREAD set:
 *   threads yes, processes (fork, vfork, posix_spawn) no.
 * - Argument compares. libseccomp compares 64-bit arguments as two 32-bit
 *   halves. An ALLOW rule with EQ fails closed (set high bits: denied),
 *   so kill/tkill/tgkill/prlimit64/prctl use EQ with the exact NE
 *   complement for EPERM. Where the kernel itself looks at 32 bits only
 *   (the ioctl command, clone's flags) the compare is MASKED_EQ on the
 *   low half, so garbage in the high half changes nothing.
 *   libseccomp silently lets an unconditional rule replace conditional
 *   ones (and drops conditional rules after an unconditional one), and it
 *   rejects two compares on one argument, so "ioctl but not these five"
 *   cannot be written: other ioctl commands, fcntl commands and prctl
 *   options fall to the default ENOSYS (a few get EPERM by EQ; bypassing
 *   that with high bits only lands on ENOSYS, still denied).
 * - Signals only to itself. kill, tkill and tgkill name their target:
 *   the worker's pid is not known when the filter is compiled, so the
 *   rules compare against the placeholder REPL_BPF_SELF and
 *   repl__seccomp_apply rewrites every such operand with the child's
 *   getpid() (1 in a pid namespace) before prctl. The placeholder sits
 *   in the low half; the high half is compared with 0, which holds for
 *   every real pid. The other ways to have a signal sent are denied:
 *   rt_sigqueueinfo, pidfd_send_signal, and the fcntl commands that set
 *   a SIGIO owner or signal (F_SETOWN, F_SETOWN_EX, F_SETSIG, F_NOTIFY,
 *   F_SETLEASE) or turn O_ASYNC on (a tty picks its own owner).
 * - Foreign architectures kill the process. On x86_64 a process can make
 *   i386 system calls with int 0x80, whose numbers mean other calls; the
 *   filters are for the native architecture only and any other audit arch
 *   is SECCOMP_RET_KILL_PROCESS (libseccomp's default kills the thread).
 * - io_uring is denied: its operations (IORING_OP_SOCKET, OPENAT, ...)
 *   run in kernel context, past seccomp. Sockets are denied for every
 *   family: the worker talks over inherited pipes only (AF_VSOCK reaches
 *   the host of a VM even from an empty network namespace). The cost:
 *   asyncio's event loop, which makes a socketpair for its wake-up pipe,
 *   fails with PermissionError.
 */
#include "repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/* clang-format off */
/* Allowed with any arguments, in the first filter. */
static const char *const allow_names[] = {
	/* files, within what Landlock and the mounts leave visible */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"preadv2", "pwritev2", "lseek", "close", "close_range", "fstat", "stat", "lstat",
	"newfstatat", "statx", "fstatfs", "statfs", "open", "openat", "openat2", "creat",
	"getdents", "getdents64", "getcwd", "chdir", "fchdir", "readlink", "readlinkat",
	"access", "faccessat", "faccessat2", "mkdir", "mkdirat", "unlink", "unlinkat",
	"rename", "renameat", "renameat2", "rmdir", "link", "linkat", "symlink", "symlinkat",
	"ftruncate", "truncate", "fsync", "fdatasync", "fallocate", "fadvise64", "sendfile",
	"copy_file_range", "dup", "dup2", "dup3", "pipe", "pipe2", "flock", "utime",
	"utimes", "utimensat", "futimesat", "chmod", "fchmod", "fchmodat", "fchmodat2", "umask",
	"getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	/* waiting */
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "timerfd_create",
	"timerfd_settime", "timerfd_gettime", "signalfd", "signalfd4",
	/* memory */
	"mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "mincore", "membarrier",
	"msync",
	/* threads */
	"futex", "futex_waitv", "set_robust_list", "rseq", "set_tid_address", "arch_prctl",
	"sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "getcpu",
	/* signals (delivery to others is ruled on below) */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigsuspend", "sigaltstack", "restart_syscall", "pause", "alarm", "getitimer",
	"setitimer", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete",
	/* who and when */
	"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
	"getresuid", "getresgid", "getpgrp", "getpgid", "getsid", "clock_gettime",
	"clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "times",
	"getrusage", "getrandom", "uname", "getrlimit", "getpriority",
	/* not sysinfo(2): host-wide facts (process count, load, RAM,
	 * uptime); Python does not need it to start, and glibc's qsort and
	 * sysconf(_SC_PHYS_PAGES) get ENOSYS from the default */
	/* the end */
	"exit", "exit_group", "wait4", "waitid",
	/* start-up: the child exec's python3 under this filter; the late one
	 * closes both. seccomp(2) can only add filters. */
	"execve", "execveat", "seccomp",
};

/* ERRNO(EPERM): the model gets a PermissionError it can read. */
static const char *const eperm_names[] = {
	/* processes */
	"fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
	"kcmp", "pidfd_getfd", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
	/* network: every family, the worker needs no socket */
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
	"recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "getsockopt", "setsockopt",
	"getpeername", "getsockname", "shutdown",
	/* io_uring runs its operations past seccomp */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* namespaces and mounts */
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
	"fsmount", "fspick", "open_tree", "move_mount", "mount_setattr", "name_to_handle_at",
	"open_by_handle_at",
	/* kernel attack surface */
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"personality", "iopl", "ioperm", "syslog", "mknod", "mknodat", "fanotify_init",
	"quotactl", "acct",
	/* memory that RLIMIT_AS does not count: a memfd grown with fallocate
	 * or write holds its pages in no address space (3 GiB were held under
	 * an AS limit of 2 GiB). SysV shm and POSIX message queues are not
	 * listed (ENOSYS); shm_open is a file in /dev/shm: see docs/sandbox.md */
	"memfd_create", "memfd_secret",
	/* identity */
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
	"setfsuid", "setfsgid",
	/* the machine */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "sethostname", "setdomainname",
};

/* ioctl commands allowed (isatty, bytes available, close-on-exec,
 * non-blocking); compared on the low 32 bits, as the kernel reads them. */
static const uint32_t ioctl_ok[] = { TCGETS, FIONREAD, FIOCLEX, FIONCLEX, FIONBIO };

/* fcntl commands allowed, compared on the low 32 bits (the kernel's cmd is
 * an unsigned int): duplicating, the fd and file flags (F_SETFL below),
 * record locks, pipe sizes (at most pipe-max-size, 1 MiB, each: with
 * RLIMIT_NOFILE some 30 MiB of kernel memory in all) and seals (which
 * only take rights away). The rest falls to the default ENOSYS: F_GETOWN,
 * F_GETSIG, F_GETLEASE, F_CANCELLK, the write hints. There is no fcntl64
 * on x86_64 (rule() skips the name where the arch lacks it); where it
 * exists it is not listed, so it gets ENOSYS too. */
static const uint32_t fcntl_ok[] = {
	F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_GETLK, F_SETLK, F_SETLKW,
	F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETPIPE_SZ, F_SETPIPE_SZ, F_ADD_SEALS,
	F_GET_SEALS,
};

/* fcntl commands that get EPERM: the ones that make the kernel send a
 * signal to a process the caller names. F_SETOWN with F_SETSIG and
 * O_ASYNC on a pipe sent SIGKILL to another process of the same uid (the
 * controller, by getppid(), when it is not root); F_NOTIFY (dnotify) and
 * F_SETLEASE signal the owner too. */
static const uint32_t fcntl_eperm[] = {
	F_SETOWN, F_SETOWN_EX, F_SETSIG, F_NOTIFY, F_SETLEASE,
};

/* prctl options allowed: stacking the late filter, and harmless reads.
 * PR_SET_DUMPABLE is allowed with 0 only (below): the runtime makes the
 * worker non-dumpable after execve, which made it dumpable again. */
static const uint32_t prctl_ok[] = {
	PR_SET_SECCOMP, PR_GET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS,
	PR_GET_NAME, PR_SET_NAME, PR_GET_DUMPABLE, PR_GET_PDEATHSIG, PR_CAPBSET_READ,
	PR_GET_KEEPCAPS,
};

/* prctl options that get EPERM (the rest: ENOSYS): leaving the parent-death
 * signal, becoming a subreaper, capabilities, the mm layout. */
static const uint32_t prctl_eperm[] = {
	PR_SET_PDEATHSIG, PR_SET_PTRACER, PR_SET_CHILD_SUBREAPER, PR_SET_MM,
	PR_SET_SECUREBITS, PR_SET_KEEPCAPS, PR_CAPBSET_DROP, PR_CAP_AMBIENT,
};

/* clang-format on */

struct built {
	int rc;	       /* 0 or the negative code of the build */
	char msg[256]; /* why it failed */
	struct repl_bpf first, late;
	char *late_hex;
	char *first_hex;
};

static struct built g;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Add one rule for `name`. A name this libseccomp does not know, or a
 * pseudo syscall that does not exist on the native arch, is skipped. */
static int rule(scmp_filter_ctx ctx, uint32_t act, const char *name, unsigned n,
		const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);
	int rc;

	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;
	rc = seccomp_rule_add_array(ctx, act, nr, n, cmp);
	if (rc < 0)
		snprintf(g.msg, sizeof(g.msg), "cannot add the seccomp rule for '%s': %s", name,
			 strerror(-rc));
	return rc;
}

static int rule_self(scmp_filter_ctx ctx, const char *name)
{
	struct scmp_arg_cmp eq = SCMP_A0(SCMP_CMP_EQ, REPL_BPF_SELF);
	struct scmp_arg_cmp ne = SCMP_A0(SCMP_CMP_NE, REPL_BPF_SELF);
	int rc = rule(ctx, SCMP_ACT_ALLOW, name, 1, &eq);

	return rc < 0 ? rc : rule(ctx, SCMP_ACT_ERRNO(EPERM), name, 1, &ne);
}

static int first_rules(scmp_filter_ctx ctx)
{
	struct scmp_arg_cmp c;
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < ARRAY_SIZE(allow_names); i++)
		rc = rule(ctx, SCMP_ACT_ALLOW, allow_names[i], 0, NULL);
	for (i = 0; rc == 0 && i < ARRAY_SIZE(eperm_names); i++)
		rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), eperm_names[i], 0, NULL);
	for (i = 0; rc == 0 && i < ARRAY_SIZE(ioctl_ok); i++) {
		c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctl_ok[i]);
		rc = rule(ctx, SCMP_ACT_ALLOW, "ioctl", 1, &c);
	}
	for (i = 0; rc == 0 && i < ARRAY_SIZE(prctl_ok); i++) {
		c = SCMP_A0(SCMP_CMP_EQ, prctl_ok[i]);
		rc = rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c);
	}
	for (i = 0; rc == 0 && i < ARRAY_SIZE(prctl_eperm); i++) {
		c = SCMP_A0(SCMP_CMP_EQ, prctl_eperm[i]);
		rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "prctl", 1, &c);
	}
	for (i = 0; rc == 0 && i < ARRAY_SIZE(fcntl_ok); i++) {
		c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, fcntl_ok[i]);
		rc = rule(ctx, SCMP_ACT_ALLOW, "fcntl", 1, &c);
	}
	for (i = 0; rc == 0 && i < ARRAY_SIZE(fcntl_eperm); i++) {
		c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, fcntl_eperm[i]);
		rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "fcntl", 1, &c);
	}
	if (rc)
		return rc;
	/* F_SETFL without O_ASYNC. Without an owner O_ASYNC signals nobody
	 * (F_SETOWN is denied, and a pipe's owner stays 0), but a terminal
	 * sets its own owner when O_ASYNC is turned on: the foreground
	 * process group of the tty (__tty_fasync), which SIGIO would kill
	 * when input arrives. A worker that can open a tty (not root, no
	 * Landlock: the user's /dev/pts/N) must not get that far. Nothing in
	 * the standard library sets O_ASYNC. The kernel reads the flags as
	 * an unsigned int: the bit is in the low half. */
	{
		struct scmp_arg_cmp fl[2] = {
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETFL),
		    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0),
		};
		if ((rc = rule(ctx, SCMP_ACT_ALLOW, "fcntl", 2, fl)))
			return rc;
		fl[1] = SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, O_ASYNC);
		if ((rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "fcntl", 2, fl)))
			return rc;
	}
	/* Non-dumpable yes, dumpable no: EQ 0 and its exact complement. */
	{
		struct scmp_arg_cmp d[2] = {
		    SCMP_A0(SCMP_CMP_EQ, PR_SET_DUMPABLE),
		    SCMP_A1(SCMP_CMP_EQ, 0),
		};
		if ((rc = rule(ctx, SCMP_ACT_ALLOW, "prctl", 2, d)))
			return rc;
		d[1] = SCMP_A1(SCMP_CMP_NE, 0);
		if ((rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "prctl", 2, d)))
			return rc;
	}
	/* Threads yes, processes no. */
	c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	if ((rc = rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &c)))
		return rc;
	c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
	if ((rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &c)))
		return rc;
	/* Limits of itself only (glibc's getrlimit/setrlimit use pid 0). */
	c = SCMP_A0(SCMP_CMP_EQ, 0);
	if ((rc = rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, &c)))
		return rc;
	c = SCMP_A0(SCMP_CMP_NE, 0);
	if ((rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, &c)))
		return rc;
	/* Signals to itself only: kill(pid), tkill(tid), tgkill(tgid, tid);
	 * the main thread's tid is the pid. clone3 and pidfd_open are left
	 * to the default ENOSYS. */
	if ((rc = rule_self(ctx, "kill")) || (rc = rule_self(ctx, "tkill")))
		return rc;
	return rule_self(ctx, "tgkill");
}

static int late_rules(scmp_filter_ctx ctx)
{
	int rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), "execve", 0, NULL);

	return rc < 0 ? rc : rule(ctx, SCMP_ACT_ERRNO(EPERM), "execveat", 0, NULL);
}

/* Export ctx's program into out (insns malloc'ed). */
static int export(scmp_filter_ctx ctx, struct repl_bpf *out)
{
	struct stat st;
	size_t n;
	ssize_t got;
	void *p = NULL;
	int fd, rc;

	fd = memfd_create("rlm-bpf", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(g.msg, sizeof(g.msg), "memfd_create: %s", strerror(errno));
		return rc;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		snprintf(g.msg, sizeof(g.msg), "seccomp_export_bpf: %s", strerror(-rc));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(g.msg, sizeof(g.msg), "fstat of the exported filter: %s", strerror(errno));
		goto out;
	}
	n = (size_t)st.st_size;
	if (n == 0 || n % sizeof(struct sock_filter) ||
	    n / sizeof(struct sock_filter) > BPF_MAXINSNS) {
		rc = -EINVAL;
		snprintf(g.msg, sizeof(g.msg), "the exported filter has %zu bytes", n);
		goto out;
	}
	p = xmalloc(n);
	got = pread(fd, p, n, 0);
	if (got != (ssize_t)n) {
		rc = got < 0 ? -errno : -EIO;
		snprintf(g.msg, sizeof(g.msg), "cannot read the exported filter back: %s",
			 got < 0 ? strerror(errno) : "short read");
		goto out;
	}
	out->insns = p;
	out->len = (unsigned short)(n / sizeof(struct sock_filter));
	p = NULL;
	rc = 0;
out:
	free(p);
	close(fd);
	return rc;
}

/* Build one program: default action def, native arch only. */
static int compile(uint32_t def, int (*rules)(scmp_filter_ctx), struct repl_bpf *out)
{
	scmp_filter_ctx ctx = seccomp_init(def);
	int rc;

	if (!ctx) {
		snprintf(g.msg, sizeof(g.msg), "seccomp_init failed");
		return -ENOMEM;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc < 0) {
		snprintf(g.msg, sizeof(g.msg), "seccomp_attr_set: %s", strerror(-rc));
		goto out;
	}
	/* A binary search over the syscall numbers: fewer instructions run on
	 * every call than with the linear default. Optional. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if ((rc = rules(ctx)) == 0)
		rc = export(ctx, out);
out:
	seccomp_release(ctx);
	return rc;
}

/* Every REPL_BPF_SELF must be an operand repl__seccomp_apply may patch. */
static int check_self(const struct repl_bpf *b)
{
	const struct sock_filter *f = b->insns;
	int n = 0;

	for (unsigned i = 0; i < b->len; i++) {
		if (f[i].k != REPL_BPF_SELF)
			continue;
		if (BPF_CLASS(f[i].code) != BPF_JMP || BPF_SRC(f[i].code) != BPF_K) {
			snprintf(g.msg, sizeof(g.msg),
				 "the placeholder pid is not a jump operand at insn %u", i);
			return -EINVAL;
		}
		n++;
	}
	if (n == 0) {
		snprintf(g.msg, sizeof(g.msg), "the placeholder pid is missing from the filter");
		return -EINVAL;
	}
	return 0;
}

/* A program's struct sock_filter bytes as lowercase hex, for a runtime's
 * argv. */
static char *to_hex(const struct repl_bpf *p)
{
	static const char hexd[] = "0123456789abcdef";
	const unsigned char *b = p->insns;
	size_t n = (size_t)p->len * sizeof(struct sock_filter);
	char *h = xmalloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		h[2 * i] = hexd[b[i] >> 4];
		h[2 * i + 1] = hexd[b[i] & 15];
	}
	h[2 * n] = '\0';
	return h;
}

static void build_once(void)
{

	g.rc = compile(SCMP_ACT_ERRNO(ENOSYS), first_rules, &g.first);
	if (g.rc == 0)
		g.rc = check_self(&g.first);
	if (g.rc == 0)
		g.rc = compile(SCMP_ACT_ALLOW, late_rules, &g.late);
	if (g.rc)
		return;
	g.late_hex = to_hex(&g.late);
	g.first_hex = to_hex(&g.first);
}

int repl__seccomp_build(const struct repl_bpf **first, const struct repl_bpf **late,
			struct rlm_err *err)
{
	pthread_once(&g_once, build_once);
	if (g.rc)
		return rlm_err_set(err, RLM_ESANDBOX, "seccomp: %s", g.msg);
	if (first)
		*first = &g.first;
	if (late)
		*late = &g.late;
	return 0;
}

const char *repl__seccomp_late_hex(void)
{
	return g.late_hex;
}

const char *repl__seccomp_first_hex(void)
{
	return g.first_hex;
}

int repl__seccomp_apply(const struct repl_bpf *first, void *scratch, pid_t self)
{
	const struct sock_filter *src = first->insns;
	struct sock_filter *dst = scratch;
	struct sock_fprog prog;

	if (self <= 0 || !src || first->len == 0)
		return EINVAL;
	for (unsigned i = 0; i < first->len; i++) {
		dst[i].code = src[i].code;
		dst[i].jt = src[i].jt;
		dst[i].jf = src[i].jf;
		dst[i].k = src[i].k;
		if (src[i].k == REPL_BPF_SELF && BPF_CLASS(src[i].code) == BPF_JMP)
			dst[i].k = (uint32_t)self;
	}
	prog.len = first->len;
	prog.filter = dst;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
		return errno;
	return 0;
}
