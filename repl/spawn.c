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
 * (argv, the environment, the fds, the error frame). */
#include "repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t spawner_once = PTHREAD_ONCE_INIT;
static int spawner_err; /* pthread_create's result */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the slot */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static const struct repl_spawn *slot_req; /* the request, NULL when none */
static pid_t slot_pid;
static int slot_err;
static bool slot_done;

/* ---- the child, between fork and execve ---- */

/* Write {"type":"fatal","error":"WHAT: errno N"} to fd, without malloc or
 * stdio. */
static void child_report(int fd, const char *what, int e)
{
	static const char pre[] = "{\"type\":\"fatal\",\"error\":\"";
	char msg[160], num[16];
	size_t n = 4, k = 0;
	memcpy(msg + n, pre, sizeof(pre) - 1);
	n += sizeof(pre) - 1;
	while (*what && n < 100)
		msg[n++] = *what++;
	memcpy(msg + n, ": errno ", 8);
	n += 8;
	do
		num[k++] = (char)('0' + e % 10);
	while ((e /= 10) > 0 && k < sizeof(num));
	while (k > 0)
		msg[n++] = num[--k];
	msg[n++] = '"';
	msg[n++] = '}';
	msg[0] = 0;
	msg[1] = 0;
	msg[2] = (char)((n - 4) >> 8);
	msg[3] = (char)((n - 4) & 0xff);
	while (write(fd, msg, n) < 0 && errno == EINTR)
		;
}

__attribute__((noreturn)) static void child_fail(int fd, const char *what, int e, int status)
{
	child_report(fd, what, e);
	_exit(status);
}

__attribute__((noreturn)) static void child_run(const struct repl_spawn *sp, pid_t parent)
{
	struct sigaction sa;
	sigset_t none;
	int tmp[6], report = sp->fds[4], e;

	/* Signal dispositions back to the default (SIG_IGN survives exec);
	 * the mask stays full (the spawner's) until just before execve. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	if (setsid() < 0)
		child_fail(report, "setsid", errno, 127);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(report, "prctl(PR_SET_PDEATHSIG)", errno, 127);
	if (getppid() != parent)
		_exit(127); /* the controller died before we could watch it */

	/* fds 0..5. Moving everything above 5 first means no source is
	 * overwritten by another's dup2, and dup2 onto a different number
	 * always clears FD_CLOEXEC (dup2(fd, fd) would keep it). */
	for (int i = 0; i < 6; i++) {
		tmp[i] = fcntl(sp->fds[i], F_DUPFD, 6);
		if (tmp[i] < 0)
			child_fail(report, "fcntl(F_DUPFD)", errno, 127);
	}
	for (int i = 0; i < 6; i++)
		if (dup2(tmp[i], i) < 0)
			child_fail(report, "dup2", errno, 127);
	report = 4;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 6U, ~0U, 0U) < 0)
#endif
	{
		for (int fd = 6; fd < sp->max_fd; fd++)
			close(fd);
	}
	if (chdir(sp->dir) < 0)
		child_fail(report, "chdir", errno, 127);

	/* THE SANDBOX SLOT: identity, rlimits, no_new_privs, Landlock and
	 * seccomp go here (see struct repl_sandbox). */
	if (sp->sandbox && sp->sandbox->child) {
		e = sp->sandbox->child(sp->sandbox->arg);
		if (e)
			child_fail(report, "sandbox", e, 126);
	}

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(sp->path, sp->argv, sp->envp);
	child_fail(report, "execve", errno, 127);
}

/* ---- the spawner thread ---- */

static void *spawner_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		const struct repl_spawn *sp;
		pid_t parent, pid;
		while (!slot_req)
			pthread_cond_wait(&cv, &mu);
		sp = slot_req;
		pthread_mutex_unlock(&mu);

		parent = getpid();
		pid = fork();
		if (pid == 0)
			child_run(sp, parent);

		pthread_mutex_lock(&mu);
		slot_pid = pid;
		slot_err = pid < 0 ? errno : 0;
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
	spawner_err = pthread_create(&t, &attr, spawner_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int repl__spawn(const struct repl_spawn *sp, pid_t *pid)
{
	int rc;
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
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&one_at_a_time);
	return rc;
}
