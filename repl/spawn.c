/* SPDX-License-Identifier: MIT */
/* repl/spawn.c -- the spawner thread: forks every worker, sets up the
 * child with async-signal-safe calls only, and exec's the interpreter.
 *
 * DESIGN
 * PR_SET_PDEATHSIG fires when the thread that forked the child exits, not
 * the process, so workers are forked by one thread that lives as long as
 * the process: a node thread that ends does not take its worker with it,
 * and a controller that dies does. Requests are handed over one at a time
 * under a mutex. The child runs in a copy of a multithreaded process, so
 * until execve it only makes raw system calls on data the parent prepared
 * (argv, the environment, the fds, the sandbox plan).
 *
 * With a sandbox the child is made by a raw clone(2) with the plan's
 * namespace flags. Its order: default signal dispositions, setsid, the
 * parent-death signal (and, outside a pid namespace, a check that the
 * parent is still there), then with a user namespace a handshake: it
 * makes itself dumpable again (the controller is not, and /proc/PID/
 * uid_map would be root's), says so on one pipe, the spawner writes
 * setgroups, gid_map and uid_map and answers on the other pipe (EOF: the
 * parent gave up or died, the child exits), and the child is not dumpable
 * again: its memory is a copy of the controller's. Then the fd layout, the
 * sandbox layers (repl__sandbox_child: mounts, identity, rlimits,
 * no_new_privs, Landlock), chdir to the scratch directory, seccomp last,
 * and execve. A failed step is a fatal frame on fd 4 naming it (and its
 * layer), then exit 126 (sandbox) or 127. */
#include "repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_once_t spawner_once = PTHREAD_ONCE_INIT;
static int spawner_err; /* pthread_create's result */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the slot */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static const struct repl_spawn *slot_req; /* the request, NULL when none */
static pid_t slot_pid;
static int slot_err;
static int slot_layer;
static const char *slot_what;
static bool slot_done;

/* ---- the child, between clone and execve ----
 *
 * Raw system calls only (syscall(2) is not intercepted by the sanitizers,
 * whose interceptors may take locks another thread held at clone time). */

struct k_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static void child_put(char *msg, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap)
		msg[(*n)++] = *s++;
}

/* Write {"type":"fatal","error":"WHAT: errno N"} (with "layer":"L" when a
 * sandbox layer failed) to fd, without malloc or stdio. */
static void child_report(int fd, const char *what, int e, int layer)
{
	char msg[320], num[16];
	size_t n = 4, k = 0, cap = sizeof(msg) - 8;
	long w;
	child_put(msg, &n, 4 + 25, "{\"type\":\"fatal\",\"error\":\"");
	if (layer >= 0)
		child_put(msg, &n, cap, "sandbox: ");
	child_put(msg, &n, 150, what);
	child_put(msg, &n, cap, ": errno ");
	do
		num[k++] = (char)('0' + e % 10);
	while ((e /= 10) > 0 && k < sizeof(num));
	while (k > 0 && n < cap)
		msg[n++] = num[--k];
	child_put(msg, &n, cap, "\"");
	if (layer >= 0) {
		child_put(msg, &n, cap, ",\"layer\":\"");
		child_put(msg, &n, cap, repl_layer_name((enum repl_layer)layer));
		child_put(msg, &n, cap, "\"");
	}
	child_put(msg, &n, sizeof(msg), "}");
	msg[0] = 0;
	msg[1] = 0;
	msg[2] = (char)((n - 4) >> 8);
	msg[3] = (char)((n - 4) & 0xff);
	do
		w = syscall(SYS_write, fd, msg, n);
	while (w < 0 && errno == EINTR);
}

__attribute__((noreturn)) static void child_exit(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}

__attribute__((noreturn)) static void child_fail(int fd, const char *what, int e, int layer,
						 int status)
{
	child_report(fd, what, e, layer);
	child_exit(status);
}

/* The handshake of a user namespace: the parent writes our maps, which
 * needs us dumpable (the controller is not, and we inherited that). Only
 * for the handshake: our memory is a copy of the controller's (its
 * environment, API keys included), and a dumpable process's /proc/PID/
 * environ and mem are open to every process of its uid. */
static void child_handshake(const int c2p[2], const int p2c[2])
{
	char b = 'r';
	long n;
	syscall(SYS_close, c2p[0]);
	syscall(SYS_close, p2c[1]);
	if (syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_write, c2p[1], &b, 1) != 1)
		child_exit(126);
	/* EOF: the parent gave up on us, or died. */
	do
		n = syscall(SYS_read, p2c[0], &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		child_exit(126);
}

/* fd 0: the read end of a pipe whose write end is closed, so that reads
 * see EOF at once as from /dev/null, but on an inode of nobody else's.
 * The host's /dev/null, opened by the controller before the worker's
 * mounts, stays on the host's writable mount: futimens(0) or fchmod(0)
 * would change the host's inode. A pipe has no name and no mount; fds 1
 * and 2 are a pipe (the log) already. After the mounts, as the issue
 * asks, though a pipe needs none of them. */
static int child_stdin(void)
{
	int p[2], e = 0;
	if (syscall(SYS_pipe2, p, O_CLOEXEC) < 0)
		return errno;
	if (syscall(SYS_dup2, p[0], 0) < 0)
		e = errno;
	syscall(SYS_close, p[0]);
	syscall(SYS_close, p[1]);
	return e;
}

__attribute__((noreturn)) static void child_run(const struct repl_spawn *sp, pid_t parent,
						const int c2p[2], const int p2c[2])
{
	const struct repl_sandbox *sb = sp->sandbox;
	struct repl_sandbox sbc;
	struct k_sigaction sa = {SIG_DFL, 0, NULL, 0};
	unsigned long none = 0;
	int src[8], tmp[8], nfd = 7, report = sp->fds[4], e, layer;
	const char *what;

	/* Signal dispositions back to the default (SIG_IGN survives exec);
	 * the mask stays full (the spawner's) until just before execve. */
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP)
			syscall(SYS_rt_sigaction, s, &sa, NULL, sizeof(none));
	if (syscall(SYS_setsid) < 0)
		child_fail(report, "setsid", errno, -1, 127);
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(report, "prctl(PR_SET_PDEATHSIG)", errno, -1, 127);
	/* In a pid namespace our parent is out of sight (getppid() is 0):
	 * the handshake's EOF tells then that it died. */
	if (!(sb && (sb->clone_flags & CLONE_NEWPID)) && syscall(SYS_getppid) != parent)
		child_exit(127); /* the controller died before we could watch it */
	if (c2p[0] >= 0)
		child_handshake(c2p, p2c);

	/* fds 0..6 (and 7, the Landlock ruleset, until it is used). Moving
	 * everything above them first means no source is overwritten by
	 * another's dup2, and dup2 onto a different number always clears
	 * FD_CLOEXEC (dup2(fd, fd) would keep it). */
	for (int i = 0; i < 7; i++)
		src[i] = sp->fds[i];
	if (sb && sb->landlock_fd >= 0)
		src[nfd++] = sb->landlock_fd;
	for (int i = 0; i < nfd; i++) {
		tmp[i] = (int)syscall(SYS_fcntl, src[i], F_DUPFD, nfd);
		if (tmp[i] < 0)
			child_fail(report, "fcntl(F_DUPFD)", errno, -1, 127);
	}
	for (int i = 0; i < nfd; i++)
		if (syscall(SYS_dup2, tmp[i], i) < 0)
			child_fail(report, "dup2", errno, -1, 127);
	report = 4;
	if (syscall(SYS_close_range, (unsigned)nfd, ~0U, 0U) < 0) {
		for (int fd = nfd; fd < sp->max_fd; fd++)
			syscall(SYS_close, fd);
	}

	if (sb) {
		memcpy(&sbc, sb, sizeof(sbc));
		if (sbc.landlock_fd >= 0)
			sbc.landlock_fd = 7;
		e = repl__sandbox_child(&sbc, &layer, &what);
		if (e)
			child_fail(report, what, e, layer, 126);
	}
	if ((e = child_stdin()) != 0)
		child_fail(report, "stdin pipe", e, -1, 127);
	if (syscall(SYS_chdir, sp->dir) < 0)
		child_fail(report, "chdir", errno, -1, 127);
	/* Last: from here on only what the filter allows. */
	if (sb && sb->seccomp) {
		e = sb->fault == REPL_L_SECCOMP ? sb->fault_errno
						: repl__seccomp_apply(sb->seccomp, sb->bpf_scratch,
								      (pid_t)syscall(SYS_getpid));
		if (e)
			child_fail(report, "seccomp", e, REPL_L_SECCOMP, 126);
	}

	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	syscall(SYS_execve, sp->path, sp->argv, sp->envp);
	child_fail(report, "execve", errno, -1, 127);
}

/* ---- the spawner thread ---- */

static void close2(int p[2])
{
	for (int i = 0; i < 2; i++) {
		if (p[i] >= 0)
			close(p[i]);
		p[i] = -1;
	}
}

/* clone with namespaces failed with e: refused by policy or by a kernel
 * without them, or a passing shortage? Returns the layer that is broken
 * here (userns for a refusal), or -1 for a shortage, which is no reason to
 * start this or any later worker with fewer layers: EAGAIN, ENOMEM, and
 * ENOSPC, a count of namespaces per user shared with the workers running
 * now -- unless that limit is 0, a namespace type turned off by sysctl. */
int repl__clone_refused(int flags, int e, const char **what)
{
	static const struct {
		int flag, layer;
		const char *sysctl, *what;
	} ns[] = {
#define NS(f, l, name) {f, l, "/proc/sys/user/" name, "clone: " name " is 0"}
	    NS(CLONE_NEWUSER, REPL_L_USERNS, "max_user_namespaces"),
	    NS(CLONE_NEWNS, REPL_L_MNTNS, "max_mnt_namespaces"),
	    NS(CLONE_NEWPID, REPL_L_PIDNS, "max_pid_namespaces"),
	    NS(CLONE_NEWNET, REPL_L_NETNS, "max_net_namespaces"),
	    NS(CLONE_NEWIPC, REPL_L_IPCNS, "max_ipc_namespaces"),
	    NS(CLONE_NEWUTS, REPL_L_UTSNS, "max_uts_namespaces"),
#undef NS
	};
	if (e == EPERM || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EUSERS)
		return REPL_L_USERNS; /* EUSERS: kernels before 4.9, over a limit of 0 */
	if (e != ENOSPC)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
		char v[32];
		ssize_t n;
		int fd;
		if (!(flags & ns[i].flag))
			continue;
		fd = open(ns[i].sysctl, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, v, sizeof(v) - 1);
		close(fd);
		if (n > 0 && v[0] == '0' && (n == 1 || v[1] == '\n')) {
			*what = ns[i].what;
			return ns[i].layer;
		}
	}
	return -1;
}

/* The parent's side of the handshake with the child pid: wait for it to
 * be ready, write its maps, let it go. Returns 0 or an errno value, with
 * what naming the step. */
static int handshake(const struct repl_sandbox *sb, pid_t pid, int from, int to, const char **what)
{
	ssize_t n;
	char b;
	int e;
	*what = "the user-namespace handshake: the child exited";
	do
		n = read(from, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return EIO; /* it died before it was ready */
	e = repl__sandbox_parent(sb, pid, what);
	if (e)
		return e;
	*what = "the user-namespace handshake: the child exited";
	do
		n = write(to, "g", 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : EIO;
}

/* Start one child. Returns its pid, or -errno with *layer and *what. */
static pid_t spawn_one(const struct repl_spawn *sp, int *layer, const char **what)
{
	const struct repl_sandbox *sb = sp->sandbox;
	int c2p[2] = {-1, -1}, p2c[2] = {-1, -1}, e, status;
	bool userns = sb && (sb->clone_flags & CLONE_NEWUSER);
	pid_t parent = getpid(), pid;

	*layer = -1;
	*what = "fork";
	if (userns && (pipe2(c2p, O_CLOEXEC) < 0 || pipe2(p2c, O_CLOEXEC) < 0)) {
		e = errno;
		close2(c2p);
		close2(p2c);
		*what = "pipe";
		return -e;
	}
	if (sb) {
		*what = "clone";
		/* Raw clone, like fork, but with namespaces and without the
		 * atfork handlers: the child only makes raw system calls. */
		pid = (pid_t)syscall(SYS_clone, (unsigned long)(sb->clone_flags | SIGCHLD), 0UL,
				     NULL, NULL, 0UL);
	} else {
		pid = fork();
	}
	if (pid == 0)
		child_run(sp, parent, c2p, p2c);
	e = errno;
	if (pid < 0) {
		close2(c2p);
		close2(p2c);
		if (sb && sb->clone_flags)
			*layer = repl__clone_refused(sb->clone_flags, e, what);
		return -e;
	}
	if (!userns)
		return pid;

	close(c2p[1]);
	c2p[1] = -1;
	close(p2c[0]);
	p2c[0] = -1;
	e = handshake(sb, pid, c2p[0], p2c[1], what);
	close2(c2p);
	close2(p2c);
	if (e) {
		/* Only the kernel refusing the maps is the layer's fault: a
		 * child that died or a shortage of memory fails this start
		 * and leaves the layer in. */
		if (e == EPERM || e == EACCES)
			*layer = REPL_L_USERNS;
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return -e;
	}
	return pid;
}

static void *spawner_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		const struct repl_spawn *sp;
		const char *what;
		int layer;
		pid_t pid;
		while (!slot_req)
			pthread_cond_wait(&cv, &mu);
		sp = slot_req;
		pthread_mutex_unlock(&mu);

		pid = spawn_one(sp, &layer, &what);

		pthread_mutex_lock(&mu);
		slot_pid = pid > 0 ? pid : 0;
		slot_err = pid < 0 ? -pid : 0;
		slot_layer = layer;
		slot_what = what;
		slot_req = NULL;
		slot_done = true;
		pthread_cond_broadcast(&cv);
	}
	return NULL;
}

static void spawner_start(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	/* The spawner takes no signals: they are for the application's
	 * threads. Its children start with this full mask and clear it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* not the name of the thread that happens to start it first */
	spawner_err = thread_start(&t, &attr, spawner_main, NULL, "rlm-spawner");
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int repl__spawn(const struct repl_spawn *sp, pid_t *pid, int *layer, const char **what)
{
	int rc;
	*layer = -1;
	*what = "pthread_create";
	pthread_once(&spawner_once, spawner_start);
	if (spawner_err)
		return -spawner_err;
	pthread_mutex_lock(&one_at_a_time);
	pthread_mutex_lock(&mu);
	slot_req = sp;
	slot_done = false;
	pthread_cond_broadcast(&cv);
	while (!slot_done)
		pthread_cond_wait(&cv, &mu);
	*pid = slot_pid;
	rc = -slot_err;
	*layer = slot_layer;
	*what = slot_what;
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&one_at_a_time);
	return rc;
}
