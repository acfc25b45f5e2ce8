/* SPDX-License-Identifier: MIT */
/* tests/proc.c -- running programs from tests. */
#include "proc.h"
#include "harness.h"
#include "../common/common.h"
#include "../common/net.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The child's environment, built in the parent (after fork a child of a
 * threaded test may not malloc): ours with env's "NAME=value" entries set
 * and its bare "NAME" entries removed. Free with free_env. */
static char **make_env(const char *const *env)
{
	size_t n = 0, k = 0, extra = 0;
	char **out;
	while (environ[n])
		n++;
	while (env && env[extra])
		extra++;
	out = xcalloc(n + extra + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		bool drop = false;
		for (size_t j = 0; j < extra && !drop; j++)
			drop = strncmp(env[j], environ[i], len) == 0 &&
			       (env[j][len] == '=' || env[j][len] == '\0');
		if (!drop)
			out[k++] = xstrdup(environ[i]);
	}
	for (size_t j = 0; j < extra; j++)
		if (strchr(env[j], '='))
			out[k++] = xstrdup(env[j]);
	return out;
}

static void free_env(char **e)
{
	for (size_t i = 0; e[i]; i++)
		free(e[i]);
	free(e);
}

int proc_run(const char *const *argv, const char *input, const char *const *env,
	     int timeout_s, struct proc_out *o)
{
	int in[2], out[2], err[2], st = 0;
	struct buf bo, be;
	size_t in_off = 0, in_len = input ? strlen(input) : 0;
	int64_t deadline = time_now_ns() + (int64_t)timeout_s * 1000000000;
	pid_t pid;
	char **envp;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	envp = make_env(env);
	pid = fork();
	if (pid < 0) {
		free_env(envp);
		return -errno;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execve(argv[0], (char *const *)(uintptr_t)argv, envp);
		_exit(127);
	}
	free_env(envp);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (!input) {
		close(in[1]);
		in[1] = -1;
	}
	buf_init(&bo, 0);
	buf_init(&be, 0);
	buf_puts(&bo, "");
	buf_puts(&be, "");
	for (;;) {
		struct pollfd p[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
		char chunk[65536];
		int64_t left = deadline - time_now_ns();
		int n;
		if (out[0] < 0 && err[0] < 0)
			break;
		if (left <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		n = poll(p, 3, (int)(left / 1000000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		for (int k = 0; k < 2; k++) {
			int *fd = k ? &err[0] : &out[0];
			if (*fd >= 0 && (p[k].revents & (POLLIN | POLLHUP | POLLERR))) {
				ssize_t r = read(*fd, chunk, sizeof(chunk));
				if (r > 0) {
					buf_append(k ? &be : &bo, chunk, (size_t)r);
				} else {
					close(*fd);
					*fd = -1;
				}
			}
		}
		if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(in[1], input + in_off, RLM_MIN(in_len - in_off, (size_t)65536));
			if (w > 0)
				in_off += (size_t)w;
			if (w <= 0 || in_off == in_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
	}
	if (in[1] >= 0)
		close(in[1]);
	if (out[0] >= 0)
		close(out[0]);
	if (err[0] >= 0)
		close(err[0]);
	waitpid(pid, &st, 0);
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	o->out = buf_detach(&bo, NULL);
	o->err = buf_detach(&be, NULL);
	return 0;
}

void proc_out_release(struct proc_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

pid_t proc_start(const char *const *argv, const char *const *env)
{
	char **envp = make_env(env);
	bool quiet = !getenv("TEST_VERBOSE");
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		if (quiet)
			dup2(fd, 2);
		execve(argv[0], (char *const *)(uintptr_t)argv, envp);
		_exit(127);
	}
	free_env(envp);
	return pid;
}

pid_t proc_start_line(const char *const *argv, const char *const *env, const char *err_path,
		      int timeout_s, char *line, size_t n)
{
	char **envp = make_env(env);
	bool quiet = !getenv("TEST_VERBOSE");
	int out[2], efd = -1, st;
	size_t len = 0;
	int64_t deadline = time_now_ns() + (int64_t)timeout_s * 1000000000;
	pid_t pid;
	if (pipe2(out, O_CLOEXEC)) {
		free_env(envp);
		return -1;
	}
	if (err_path)
		efd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(out[1], 1);
		if (efd >= 0)
			dup2(efd, 2);
		else if (quiet)
			dup2(fd, 2);
		execve(argv[0], (char *const *)(uintptr_t)argv, envp);
		_exit(127);
	}
	free_env(envp);
	close(out[1]);
	if (efd >= 0)
		close(efd);
	if (pid < 0) {
		close(out[0]);
		return -1;
	}
	line[0] = '\0';
	while (len + 1 < n) {
		struct pollfd p = {out[0], POLLIN, 0};
		int64_t left = deadline - time_now_ns();
		char c;
		ssize_t r;
		if (left <= 0)
			break;
		if (poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
			continue;
		r = read(out[0], &c, 1);
		if (r <= 0)
			break;
		if (c == '\n') {
			line[len] = '\0';
			close(out[0]);
			return pid;
		}
		line[len++] = c;
		line[len] = '\0';
	}
	close(out[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

int proc_stop(pid_t pid)
{
	int st = 0;
	if (pid <= 0)
		return -1; /* never kill(-1, ...) */
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		time_sleep_ns(10000000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 128 + SIGKILL;
}

pid_t proc_sim_serve(const char *spec, int *port)
{
	char ready[512];
	pid_t pid;
	const char *argv[] = {harness_rlm_bin(), "sim-serve", "--port", "0", "--quiet",
			      "--ready-file", ready, "--sim", spec ? spec : "", NULL};
	snprintf(ready, sizeof(ready), "%s/port.%d", harness_tmpdir(), (int)getpid());
	unlink(ready);
	pid = proc_start(argv, NULL);
	if (pid <= 0)
		harness_fail(__FILE__, __LINE__, "cannot fork rlm sim-serve");
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(ready, "r");
		if (f) {
			int ok = fscanf(f, "%d", port) == 1;
			fclose(f);
			if (ok && *port > 0)
				return pid;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			harness_fail(__FILE__, __LINE__, "rlm sim-serve exited at start");
		time_sleep_ns(10000000);
	}
	proc_stop(pid);
	harness_fail(__FILE__, __LINE__, "rlm sim-serve did not start");
}

int proc_closed_port(void)
{
	char msg[512];
	int port = 0, fd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
	if (fd < 0)
		harness_fail(__FILE__, __LINE__, "cannot find a free port: %s", msg);
	close(fd);
	return port;
}

size_t proc_children(pid_t parent, pid_t *pids, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;
	CHECK(d);
	while ((e = readdir(d))) {
		char path[300], buf[512], *p;
		FILE *f;
		long ppid;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* "pid (comm) state ppid ...": comm may hold anything */
		if (!p || !(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %ld", &ppid) != 1 ||
		    ppid != (long)parent)
			continue;
		if (n < cap)
			pids[n] = (pid_t)atol(e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

struct proc_out proc_rlm(const char *const *args, const char *const *extra, int timeout_s)
{
	static const char *const clean[] = {
	    "RLM_PROVIDER",	 "RLM_MODEL",	"RLM_SUB_MODEL", "OPENAI_API_KEY",
	    "OPENAI_BASE_URL",	 "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "RLM_SIM",
	    "RLM_SANDBOX_DISABLE", "RLM_MAX_DEPTH", "RLM_MAX_NODES", "RLM_MAX_CALLS",
	    "RLM_PRICES",	 "RLM_CACHE",	"RLM_NO_CACHE",	 NULL};
	const char *argv[48], *env[48];
	struct proc_out o;
	size_t n = 0, k = 0;
	argv[n++] = harness_rlm_bin();
	for (size_t i = 0; args[i]; i++) {
		CHECK_MSG(n < ARRAY_SIZE(argv) - 1, "proc_rlm: too many arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	for (size_t i = 0; clean[i]; i++)
		env[k++] = clean[i];
	for (size_t i = 0; extra && extra[i]; i++) {
		CHECK_MSG(k < ARRAY_SIZE(env) - 1, "proc_rlm: too many environment entries");
		env[k++] = extra[i];
	}
	env[k] = NULL;
	CHECK_INT(proc_run(argv, NULL, env, timeout_s, &o), 0);
	return o;
}
