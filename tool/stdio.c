/* SPDX-License-Identifier: MIT */
/* tool/stdio.c -- the stdio transport of MCP: a server process in its own
 * process group, newline-delimited JSON-RPC 2.0 on its stdin and stdout,
 * its stderr kept in a ring of the last 4 KiB for the message when it
 * dies.
 *
 * DESIGN. One reader thread per process polls stdout, stderr and a wake-up
 * pipe. It splits stdout into lines (each at most TOOL_MAX_REPLY bytes),
 * hands each response to the caller waiting on its id (a list of waiters
 * under mu, one condvar for all), answers the server's own requests
 * ("ping", "roots/list"; anything else -32601) and notes
 * notifications/tools/list_changed. A line that is not a JSON-RPC message,
 * one over the cap, or the end of stdout makes the process dead: every
 * waiter wakes with the reason and no new request is sent. Writers take
 * wmu so that lines never interleave. The controller is multithreaded, so
 * the process is made with posix_spawn (glibc's runs nothing but
 * async-signal-safe code between its clone and the exec). */
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"

extern char **environ;

#define RING	  4096
#define ANSWER_NS (5 * (int64_t)1000000000) /* to write an answer to the server */

struct waiter {
	int64_t id;
	char *reply; /* the response's text, once done */
	bool done;
	struct waiter *next;
};

struct tool__stdio {
	char *name;
	pid_t pid;
	int in_fd, out_fd, err_fd; /* our ends: its stdin, stdout, stderr */
	int wake[2];		   /* a byte in wake[1] ends the reader */
	pthread_t reader;
	bool reader_up; /* reader was created */
	bool verbose;

	pthread_mutex_t wmu; /* one writer at a time on in_fd */
	pthread_mutex_t mu;  /* guards everything below */
	pthread_cond_t cv;   /* a response arrived, or it died */
	struct waiter *waiters;
	bool dead;
	char *why;	 /* why it is dead */
	bool stale;	 /* tools/list_changed seen */
	char ring[RING]; /* the last bytes of its stderr */
	size_t ring_pos, ring_len;
};

static pthread_once_t sigpipe_once = PTHREAD_ONCE_INIT;

/* A write to a server that died must fail with EPIPE, not kill us: SIGPIPE
 * ignored once, when nobody installed a handler (as repl/ does). */
static void sigpipe_ignore(void)
{
	struct sigaction old;
	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
	    !(old.sa_flags & SA_SIGINFO))
		signal(SIGPIPE, SIG_IGN);
}

/* ---- the environment a server gets ---- */

static bool contains_ci(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; i + w <= n; i++)
		if (strncasecmp(s + i, word, w) == 0)
			return true;
	return false;
}

/* Is "K=V" a variable the config overrides (K given in env)? */
static bool overridden(const char *kv, const char *const *env, size_t n_env)
{
	size_t k = strcspn(kv, "=");
	for (size_t i = 0; i < n_env; i++)
		if (strncmp(env[i], kv, k) == 0 && env[i][k] == '=')
			return true;
	return false;
}

/* Names of variables that look like credentials, in any case. */
static const char *const secret_words[] = {"API_KEY", "TOKEN",	    "SECRET",	 "PASSWORD",
					   "PASSWD",  "CREDENTIAL", "ACCESS_KEY", "KEY_ID",
					   "AUTH",    "COOKIE"};

/* Does the variable kv (its name: name bytes) look like a credential, or
 * is it a provider's base URL (which may carry user:password@)? */
static bool secret_var(const char *kv, size_t name)
{
	for (size_t i = 0; i < ARRAY_SIZE(secret_words); i++)
		if (contains_ci(kv, name, secret_words[i]))
			return true;
	return contains_ci(kv, name, "BASE_URL");
}

/* Ours minus the variables that look like credentials (secret_var: the
 * model providers' keys and endpoints live in our environment, and a tool
 * server has no business with them; a server that needs one gets it from
 * its config's "env", where ${NAME} brings it in by name), plus the
 * config's env. NULL-terminated; the strings are borrowed. */
static char **child_env(const char *const *env, size_t n_env)
{
	size_t n = 0, k = 0;
	char **v;
	while (environ && environ[n])
		n++;
	v = xcalloc(n + n_env + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const char *kv = environ[i];
		size_t name = strcspn(kv, "=");
		if (secret_var(kv, name) || overridden(kv, env, n_env))
			continue;
		v[k++] = (char *)(uintptr_t)kv;
	}
	for (size_t i = 0; i < n_env; i++)
		v[k++] = (char *)(uintptr_t)env[i];
	return v;
}

/* ---- spawning ---- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Is path a file we may execute? */
static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The program to run for sp->argv[0], as posix_spawnp would find it (a
 * name without a slash in our PATH; a relative path from the server's
 * cwd), looked up first so that a missing command is said as such even
 * where the exec's failure cannot be reported (valgrind runs posix_spawn
 * as fork and exec): *out malloc'd, or -ENOENT / -EACCES. */
static int find_program(const struct tool__spawn *sp, char **out)
{
	const char *cmd = sp->argv[0], *path = getenv("PATH"), *p;
	*out = NULL;
	if (strchr(cmd, '/')) {
		char *full =
		    cmd[0] != '/' && sp->cwd ? xasprintf("%s/%s", sp->cwd, cmd) : xstrdup(cmd);
		int rc = executable(full) ? 0 : access(full, F_OK) == 0 ? -EACCES : -ENOENT;
		free(full);
		*out = rc ? NULL : xstrdup(cmd); /* posix_spawn resolves it after the chdir */
		return rc;
	}
	for (p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		char *full = xasprintf("%.*s/%s", (int)n, n ? p : ".", cmd);
		if (executable(full)) {
			*out = full;
			return 0;
		}
		free(full);
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* posix_spawn of prog with fds 0, 1, 2 from the pipes, its own process
 * group, signals at their defaults and unblocked. 0 or an errno. */
static int spawn(const struct tool__spawn *sp, const char *prog, int in, int out, int errfd,
		 pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char **envp = child_env(sp->env, sp->n_env);
	int rc;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	if (sp->cwd)
		posix_spawn_file_actions_addchdir_np(&fa, sp->cwd);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					  POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(pid, prog, &fa, &at, (char *const *)(uintptr_t)sp->argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	return rc;
}

static void *reader_main(void *arg);

/* Pipes: p[0..1] its stdin, p[2..3] its stdout, p[4..5] its stderr, w the
 * wake-up pipe; all close-on-exec (dup2 clears it on the child's 0, 1, 2). */
static int make_pipes(int p[6], int w[2])
{
	for (int i = 0; i < 6; i++)
		p[i] = -1;
	w[0] = w[1] = -1;
	if (pipe2(p, O_CLOEXEC) || pipe2(p + 2, O_CLOEXEC) || pipe2(p + 4, O_CLOEXEC) ||
	    pipe2(w, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	return 0;
}

int tool__stdio_open(const struct tool__spawn *sp, struct tool__stdio **out, struct rlm_err *err)
{
	struct tool__stdio *c;
	struct stat st;
	char *prog = NULL;
	int p[6], rc;
	pthread_condattr_t ca;
	*out = NULL;
	pthread_once(&sigpipe_once, sigpipe_ignore);
	if (sp->cwd && (stat(sp->cwd, &st) || !S_ISDIR(st.st_mode)))
		return rlm_err_set(err, RLM_EIO,
				   "cannot start server '%s': its cwd '%s' is not a directory",
				   sp->name, sp->cwd);
	if ((rc = find_program(sp, &prog)))
		return rlm_err_set(err, RLM_EIO, "cannot start server '%s': '%s': %s", sp->name,
				   sp->argv[0],
				   rc == -ENOENT ? "command not found" : "permission denied");
	c = xcalloc(1, sizeof(*c));
	c->name = xstrdup(sp->name);
	c->verbose = sp->verbose;
	if ((rc = make_pipes(p, c->wake)) || (rc = -spawn(sp, prog, p[0], p[3], p[5], &c->pid))) {
		for (int i = 0; i < 6; i++)
			close_fd(&p[i]);
		close_fd(&c->wake[0]);
		close_fd(&c->wake[1]);
		free(c->name);
		free(c);
		free(prog);
		return rlm_err_set(err, RLM_EIO, "cannot start server '%s': '%s': %s", sp->name,
				   sp->argv[0],
				   rc == -ENOENT ? "command not found" : strerror(-rc));
	}
	free(prog);
	close_fd(&p[0]);
	close_fd(&p[3]);
	close_fd(&p[5]);
	c->in_fd = p[1];
	fcntl(c->in_fd, F_SETFL, fcntl(c->in_fd, F_GETFL) | O_NONBLOCK);
	c->out_fd = p[2];
	c->err_fd = p[4];
	pthread_mutex_init(&c->wmu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&c->reader, NULL, reader_main, c))) {
		tool__stdio_kill(c, "no reader thread");
		tool__stdio_close(c, false);
		return rlm_err_set(err, RLM_EIO, "cannot start server '%s': no thread: %s",
				   sp->name, strerror(rc));
	}
	c->reader_up = true;
	*out = c;
	return 0;
}

/* ---- stderr ring ---- */

static void ring_add(struct tool__stdio *c, const char *s, size_t n)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < n; i++) {
		c->ring[c->ring_pos] = s[i];
		c->ring_pos = (c->ring_pos + 1) % RING;
	}
	c->ring_len = RLM_MIN(RING, c->ring_len + n);
	pthread_mutex_unlock(&c->mu);
}

/* The last lines of its stderr, made one line ("a | b"), its last cap - 1
 * bytes at most, into out; "" when it wrote nothing. c->mu held. */
static void ring_tail(struct tool__stdio *c, char *out, size_t cap)
{
	char tmp[3 * RING + 1];
	size_t start = (c->ring_pos + RING - c->ring_len) % RING, k = 0, off = 0;
	for (size_t i = 0; i < c->ring_len; i++) {
		char ch = c->ring[(start + i) % RING];
		if (ch == '\n') {
			memcpy(tmp + k, " | ", 3);
			k += 3;
		} else if (ch != '\r') {
			tmp[k++] = (unsigned char)ch < 0x20 ? ' ' : ch;
		}
	}
	while (k && (tmp[k - 1] == ' ' || tmp[k - 1] == '|'))
		k--;
	if (k > cap - 1)
		off = k - (cap - 1);
	while (off < k && text_utf8_is_cont(tmp[off]))
		off++;
	memcpy(out, tmp + off, k - off);
	out[k - off] = '\0';
}

/* ---- dying ---- */

/* Mark dead (c->mu held): the first reason stays, with its stderr tail. */
static void mark_dead(struct tool__stdio *c, const char *why)
{
	char tail[300];
	if (c->dead)
		return;
	c->dead = true;
	ring_tail(c, tail, sizeof(tail));
	c->why = *tail ? xasprintf("%s; its stderr ended: %s", why, tail) : xstrdup(why);
	pthread_cond_broadcast(&c->cv);
}

void tool__stdio_kill(struct tool__stdio *c, const char *why)
{
	pthread_mutex_lock(&c->mu);
	mark_dead(c, why);
	pthread_mutex_unlock(&c->mu);
	if (c->pid > 0)
		kill(-c->pid, SIGKILL);
}

/* Has it exited (not reaped: the zombie keeps its process group id ours
 * until waitpid)? Fills *st with how. */
static bool exited(pid_t pid, siginfo_t *st)
{
	int rc;
	memset(st, 0, sizeof(*st));
	rc = waitid(P_PID, (id_t)pid, st, WEXITED | WNOHANG | WNOWAIT);
	return (rc == 0 && st->si_pid == pid) || (rc < 0 && errno == ECHILD);
}

/* Wait up to ns for it to exit. */
static bool exited_within(pid_t pid, int64_t ns, siginfo_t *st)
{
	int64_t end = time_now_ns() + ns;
	while (!exited(pid, st)) {
		if (time_now_ns() >= end)
			return false;
		time_sleep_ns(5000000);
	}
	return true;
}

/* stdout ended: say how the process went, after a short look at what it
 * still writes to stderr. */
static void on_eof(struct tool__stdio *c)
{
	char buf[4096], why[200];
	struct pollfd pf = {c->err_fd, POLLIN, 0};
	siginfo_t st;
	ssize_t n;
	int64_t end = time_now_ns() + 300000000;
	while (time_now_ns() < end && poll(&pf, 1, 50) > 0 &&
	       (n = read(c->err_fd, buf, sizeof(buf))) > 0)
		ring_add(c, buf, (size_t)n);
	if (!exited_within(c->pid, 500000000, &st))
		snprintf(why, sizeof(why), "server '%s' closed its output", c->name);
	else if (st.si_code == CLD_EXITED)
		snprintf(why, sizeof(why), "server '%s' exited with status %d", c->name,
			 st.si_status);
	else
		snprintf(why, sizeof(why), "server '%s' was killed by signal %d (%s)", c->name,
			 st.si_status, strsignal(st.si_status));
	pthread_mutex_lock(&c->mu);
	mark_dead(c, why);
	pthread_mutex_unlock(&c->mu);
}

/* ---- writing ---- */

/* Write p[0..n) to the non-blocking fd by deadline_ns: 0, -errno, or
 * -ETIMEDOUT (a server that does not read its stdin cannot hold a writer
 * past its deadline). */
static int write_until(int fd, const char *p, size_t n, int64_t deadline_ns)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && errno == EAGAIN) {
			struct pollfd pf = {fd, POLLOUT, 0};
			int64_t left = deadline_ns - time_now_ns();
			if (left <= 0)
				return -ETIMEDOUT;
			poll(&pf, 1, (int)RLM_MIN(left / 1000000 + 1, 1000));
		} else if (k < 0 && errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

/* Write one message and its newline, whole (lines never interleave), by
 * deadline_ns. A message cut by the deadline leaves the stream broken: the
 * caller kills the server. */
static int write_line(struct tool__stdio *c, const char *body, size_t len, int64_t deadline_ns)
{
	int rc = -EPIPE;
	pthread_mutex_lock(&c->wmu);
	if (c->in_fd >= 0 && (rc = write_until(c->in_fd, body, len, deadline_ns)) == 0)
		rc = write_until(c->in_fd, "\n", 1, deadline_ns);
	pthread_mutex_unlock(&c->wmu);
	return rc;
}

/* Answer a request of the server's with result (consumed) or error. */
static void answer(struct tool__stdio *c, const cJSON *id, cJSON *result, const char *method)
{
	cJSON *m = cJSON_CreateObject(), *e;
	char *s;
	json_add_str(m, "jsonrpc", "2.0");
	json_add(m, "id", cJSON_Duplicate(id, 1));
	if (result) {
		json_add(m, "result", result);
	} else {
		char msg[200];
		snprintf(msg, sizeof(msg), "method not found: %.100s", method);
		e = cJSON_CreateObject();
		json_add_num(e, "code", -32601);
		json_add_str(e, "message", msg);
		json_add(m, "error", e);
	}
	s = json_print(m);
	if (write_line(c, s, strlen(s), time_now_ns() + ANSWER_NS) == -ETIMEDOUT) {
		char why[200];
		snprintf(why, sizeof(why), "server '%s' does not read its input", c->name);
		tool__stdio_kill(c, why);
	}
	free(s);
	cJSON_Delete(m);
}

/* ---- reading ---- */

/* A request or notification of the server's. */
static void on_method(struct tool__stdio *c, const cJSON *j, const char *method)
{
	const cJSON *id = json_get(j, "id");
	if (id && (cJSON_IsNumber(id) || cJSON_IsString(id))) {
		if (strcmp(method, "ping") == 0)
			answer(c, id, cJSON_CreateObject(), method);
		else if (strcmp(method, "roots/list") == 0) {
			cJSON *r = cJSON_CreateObject();
			json_add(r, "roots", cJSON_CreateArray());
			answer(c, id, r, method);
		} else
			answer(c, id, NULL, method);
	} else if (strcmp(method, "notifications/tools/list_changed") == 0) {
		pthread_mutex_lock(&c->mu);
		c->stale = true;
		pthread_mutex_unlock(&c->mu);
	}
}

/* A response: to the waiter of its id (none: a request we gave up on). */
static void on_response(struct tool__stdio *c, const cJSON *id, const char *s, size_t n)
{
	if (!cJSON_IsNumber(id))
		return;
	pthread_mutex_lock(&c->mu);
	for (struct waiter *w = c->waiters; w; w = w->next)
		if (!w->done && (double)w->id == id->valuedouble) {
			w->reply = xstrndup(s, n);
			w->done = true;
			pthread_cond_broadcast(&c->cv);
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

/* One message m, whose text is s[0..n). false (with why) when it is not
 * a JSON-RPC 2.0 request, notification or response. */
static bool on_message(struct tool__stdio *c, const cJSON *m, const char *s, size_t n, char *why,
		       size_t cap)
{
	const char *method = json_str(m, "method"), *v = json_str(m, "jsonrpc");
	const cJSON *id = json_get(m, "id");
	if (!cJSON_IsObject(m) || !v || strcmp(v, "2.0") != 0)
		snprintf(why, cap, "server '%s' wrote a message that is not JSON-RPC 2.0: '%.60s'",
			 c->name, s);
	else if (method)
		return on_method(c, m, method), true;
	else if (id && (json_get(m, "result") || json_get(m, "error")))
		return on_response(c, id, s, n), true;
	else
		snprintf(why, cap,
			 "server '%s' wrote a JSON-RPC message that is neither a request nor a "
			 "response: '%.60s'",
			 c->name, s);
	return false;
}

/* One line of stdout: a message, or a batch of them (revision 2025-03-26
 * allowed batches; later ones do not, but an older server may send one).
 * false (with why) when it is garbage. */
static bool on_line(struct tool__stdio *c, const char *s, size_t n, char *why, size_t cap)
{
	cJSON *j = json_parse(s, n);
	const cJSON *m;
	size_t bad;
	bool ok = true;
	if (c->verbose)
		log_info("tool: %s -> %.*s%s", c->name, (int)RLM_MIN(n, 400), s,
			 n > 400 ? "..." : "");
	if (!j) {
		snprintf(why, cap, "server '%s' wrote a line that is not JSON: '%.60s'", c->name,
			 s);
		return false;
	}
	if (!text_utf8_valid(s, n, &bad)) { /* JSON is UTF-8 (RFC 8259): what model code gets is */
		snprintf(why, cap, "server '%s' wrote a message that is not UTF-8 (byte %zu)",
			 c->name, bad);
		cJSON_Delete(j);
		return false;
	}
	if (!cJSON_IsArray(j) || !cJSON_GetArraySize(j)) {
		ok = on_message(c, j, s, n, why, cap);
		cJSON_Delete(j);
		return ok;
	}
	cJSON_ArrayForEach(m, j)
	{
		char *t = json_print(m);
		ok = on_message(c, m, t, strlen(t), why, cap);
		free(t);
		if (!ok)
			break;
	}
	cJSON_Delete(j);
	return ok;
}

/* Bytes of stdout: whole lines handled, the rest kept in line. false
 * (with why) on garbage or a line over the cap. */
static bool feed(struct tool__stdio *c, struct buf *line, const char *p, size_t n, char *why,
		 size_t cap)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		if (buf_append(line, p, k)) {
			snprintf(why, cap, "server '%s' wrote a message over %u MiB", c->name,
				 TOOL_MAX_REPLY >> 20);
			return false;
		}
		p += k;
		n -= k;
		if (!nl)
			break;
		p++;
		n--;
		while (line->len && text_is_space(line->p[line->len - 1]))
			line->len--;
		if (line->len && !on_line(c, line->p, line->len, why, cap))
			return false;
		buf_reset(line);
		if (line->cap > (1u << 20)) /* a huge reply's memory goes back */
			buf_release(line), buf_init(line, TOOL_MAX_REPLY);
	}
	return true;
}

static void *reader_main(void *arg)
{
	struct tool__stdio *c = arg;
	struct buf line;
	char chunk[65536], why[300];
	struct pollfd pf[3] = {
	    {c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}, {c->wake[0], POLLIN, 0}};
	buf_init(&line, TOOL_MAX_REPLY);
	for (;;) {
		ssize_t n;
		if (poll(pf, 3, -1) < 0 && errno != EINTR)
			break;
		if (pf[2].revents)
			break;
		if (pf[1].revents) {
			n = read(c->err_fd, chunk, sizeof(chunk));
			if (n > 0 && c->verbose)
				log_info("tool: %s stderr: %.*s", c->name, (int)RLM_MIN(n, 400),
					 chunk);
			if (n > 0)
				ring_add(c, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR)
				pf[1].fd = -1;
		}
		if (pf[0].revents) {
			n = read(c->out_fd, chunk, sizeof(chunk));
			if (n == 0 || (n < 0 && errno != EINTR)) {
				on_eof(c);
				break;
			}
			if (n > 0 && !feed(c, &line, chunk, (size_t)n, why, sizeof(why))) {
				tool__stdio_kill(c, why);
				break;
			}
		}
	}
	buf_release(&line);
	return NULL;
}

/* ---- requests ---- */

static void unlink_waiter(struct tool__stdio *c, struct waiter *w)
{
	for (struct waiter **pp = &c->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
}

/* Wait (c->mu held) until w is done, c dies or the deadline passes. */
static int wait_reply(struct tool__stdio *c, struct waiter *w, int64_t deadline_ns)
{
	struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
	while (!w->done && !c->dead) {
		if (time_now_ns() >= deadline_ns)
			return RLM_ETIMEOUT;
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	return w->done ? 0 : RLM_EIO;
}

int tool__stdio_post(struct tool__stdio *c, const char *body, size_t len, int64_t id,
		     int64_t deadline_ns, char **reply, struct rlm_err *err)
{
	struct waiter w = {id, NULL, false, NULL};
	int rc;
	*reply = NULL;
	pthread_mutex_lock(&c->mu);
	if (c->dead) {
		rc = rlm_err_set(err, RLM_EIO, "%s", c->why);
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	if (id >= 0) { /* on our stack: unlinked below, before we return */
		w.next = c->waiters;
		// cppcheck-suppress autoVariables
		c->waiters = &w;
	}
	pthread_mutex_unlock(&c->mu);
	if (c->verbose)
		log_info("tool: %s <- %.*s%s", c->name, (int)RLM_MIN(len, 400), body,
			 len > 400 ? "..." : "");
	rc = write_line(c, body, len, deadline_ns ? deadline_ns : time_now_ns() + ANSWER_NS);
	pthread_mutex_lock(&c->mu);
	if (rc == -ETIMEDOUT) /* a line cut short: the stream is broken (not a timeout) */
		rc = rlm_err_set(err, RLM_EIO, "server '%s' did not read its input in time",
				 c->name);
	else if (rc)
		rc = c->dead ? rlm_err_set(err, RLM_EIO, "%s", c->why)
			     : rlm_err_set(err, RLM_EIO, "cannot write to server '%s': %s", c->name,
					   strerror(-rc));
	else if (id >= 0 && (rc = wait_reply(c, &w, deadline_ns)) == RLM_EIO)
		rlm_err_set(err, rc, "%s", c->why);
	else if (rc == RLM_ETIMEOUT)
		rlm_err_set(err, rc, "server '%s' did not answer in time", c->name);
	if (id >= 0)
		unlink_waiter(c, &w);
	pthread_mutex_unlock(&c->mu);
	if (!rc)
		*reply = w.reply;
	else
		free(w.reply);
	return rc;
}

bool tool__stdio_take_stale(struct tool__stdio *c)
{
	bool v;
	pthread_mutex_lock(&c->mu);
	v = c->stale;
	c->stale = false;
	pthread_mutex_unlock(&c->mu);
	return v;
}

/* ---- stopping ---- */

/* Ask it to go, then make it: stdin closed (the MCP way to end a stdio
 * server), 2 s, SIGTERM to its group, 1 s, SIGKILL. */
static void stop_gently(struct tool__stdio *c)
{
	siginfo_t st;
	pthread_mutex_lock(&c->wmu);
	close_fd(&c->in_fd);
	pthread_mutex_unlock(&c->wmu);
	if (exited_within(c->pid, 2000000000, &st))
		return;
	kill(-c->pid, SIGTERM);
	exited_within(c->pid, 1000000000, &st);
}

void tool__stdio_close(struct tool__stdio *c, bool gentle)
{
	int st;
	if (!c)
		return;
	if (gentle)
		stop_gently(c);
	/* Whatever is left of its group goes: the leader is not reaped yet,
	 * so the group id is still its own. */
	kill(-c->pid, SIGKILL);
	if (c->reader_up) { /* before the reaping: it may look at the zombie */
		(void)!write(c->wake[1], "x", 1);
		pthread_join(c->reader, NULL);
	}
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	close_fd(&c->in_fd);
	close_fd(&c->out_fd);
	close_fd(&c->err_fd);
	close_fd(&c->wake[0]);
	close_fd(&c->wake[1]);
	pthread_mutex_destroy(&c->wmu);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->why);
	free(c->name);
	free(c);
}
