/* SPDX-License-Identifier: MIT */
/* repl/worker.c -- one worker process: start it, move bytes to and from it
 * without ever blocking on it, take its frames, stop it.
 *
 * DESIGN
 * Our ends of the pipes are nonblocking and everything goes through one
 * poll loop (repl__pump): frames for fd 3 are queued in r->out and written
 * as the pipe takes them, while fd 4 and the log pipe keep being read, so
 * neither side can wait on the other forever. Input is capped: the length
 * of a frame is checked as soon as its 4-byte header is in, before any
 * memory is set aside for it; a frame of a megabyte or more is parsed
 * while no other such frame is, in the whole process (it is held twice
 * meanwhile). Death is seen as EOF on fd 4 or, where the
 * kernel has pidfds, as the process exiting (a grandchild that kept fd 4
 * open cannot hide it). */
#include "repl_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_TIMEOUT_NS (30 * 1000000000LL)
#define READ_CHUNK	 65536
#define WDEAD_NS	 (500 * 1000000LL)
#define BIG_FRAME	 ((uint32_t)1 << 20) /* parsed one at a time */
#define PIPE_BIG	 (1 << 20)           /* fd 4 while a large frame comes */
#define PIPE_USUAL	 65536

/* Large frames being parsed at once in the process: a gate of BIG_AT_ONCE
 * (the cores of a small machine), so that neither do all of a solve's
 * children hold their batches twice at once, nor does one server solve's
 * big frame make every other's wait. */
#define BIG_AT_ONCE 2
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t big_cv = PTHREAD_COND_INITIALIZER;
static int big_in;

static void big_enter(void)
{
	pthread_mutex_lock(&big_mu);
	while (big_in >= BIG_AT_ONCE)
		pthread_cond_wait(&big_cv, &big_mu);
	big_in++;
	pthread_mutex_unlock(&big_mu);
}

static void big_leave(void)
{
	pthread_mutex_lock(&big_mu);
	big_in--;
	pthread_cond_signal(&big_cv);
	pthread_mutex_unlock(&big_mu);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int ms_until(int64_t t, int64_t now)
{
	int64_t ms;
	if (t <= now)
		return 0;
	ms = (t - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

/* ---- the log pipe (fds 1 and 2) ---- */

static void keep_log(struct repl *r, const char *p, size_t n)
{
	size_t cap = sizeof(r->log);
	if (n >= cap) {
		memcpy(r->log, p + n - cap, cap);
		r->log_len = cap;
		return;
	}
	if (r->log_len + n > cap) {
		size_t drop = r->log_len + n - cap;
		memmove(r->log, r->log + drop, r->log_len - drop);
		r->log_len -= drop;
	}
	memcpy(r->log + r->log_len, p, n);
	r->log_len += n;
}

static void drain_log(struct repl *r)
{
	char tmp[READ_CHUNK];
	/* Bounded, so that a flood on fd 1 cannot starve the frames. */
	for (int i = 0; i < 16 && r->log_r >= 0; i++) {
		ssize_t k = read(r->log_r, tmp, sizeof(tmp));
		if (k > 0) {
			keep_log(r, tmp, (size_t)k);
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0 || errno != EAGAIN)
			close_fd(&r->log_r);
		return;
	}
}

char *repl__log_tail(const struct repl *r, size_t max)
{
	size_t n = RLM_MIN(r->log_len, max), off = r->log_len - n;
	/* Start on a character boundary. */
	while (n > 0 && text_utf8_is_cont(r->log[off])) {
		off++;
		n--;
	}
	return repl__clean(r->log + off, n, NULL);
}

/* ---- fd 4 ---- */

/* fd 4 holds PIPE_BIG bytes while a large frame comes (a batch's prompts,
 * in pieces of ~1 MiB), PIPE_USUAL otherwise: the worker writes a piece
 * in one go instead of sixteen turns of 64 KiB, each waiting for us to
 * read. It goes back when the frames are taken, since an unprivileged
 * user's pipes share a soft limit (fs.pipe-user-pages-soft) beyond which
 * every new pipe of theirs gets two pages; where the kernel refuses the
 * size, the pipe stays as it is. */
static void pipe_size(struct repl *r, bool big)
{
	if (r->pipe_big != big && fcntl(r->from_w, F_SETPIPE_SZ, big ? PIPE_BIG : PIPE_USUAL) >= 0)
		r->pipe_big = big;
}

/* ---- frame blocks ----
 *
 * A large frame (a piece of a batch's prompts, ~1 MiB) is read into a
 * block of its own, which a binary call frame's tree then owns until its
 * calls are answered (take_binary). The blocks come back here
 * (repl__frame_free) and the next large frame is read into one: pages
 * already faulted in, where a fresh block costs a page fault per 4 KiB
 * (a 40 MB batch read into fresh blocks took ~10,000 of them, ~110 ms on
 * a VM whose faults cost 11 us). With repl_cfg.calls_ahead only a few
 * pieces are out at once, so a few blocks go round (at most REPL_SPARES,
 * of up to 8 MiB each). They are freed when the exec's frames end
 * (repl__spares_drop). */

static void spare_put(struct repl *r, char *block)
{
	/* a piece of a batch is ~1 MiB; a frame far larger is not kept */
	if (r->n_spare < REPL_SPARES && malloc_usable_size(block) <= ((size_t)8 << 20))
		r->spare[r->n_spare++] = block;
	else
		free(block);
}

/* A spare block of at least cap bytes (*got: its size), or NULL. */
static char *spare_take(struct repl *r, size_t cap, size_t *got)
{
	for (int i = 0; i < r->n_spare; i++) {
		size_t n = malloc_usable_size(r->spare[i]);
		if (n >= cap) {
			char *p = r->spare[i];
			r->spare[i] = r->spare[--r->n_spare];
			*got = n;
			return p;
		}
	}
	return NULL;
}

void repl__frame_free(struct repl *r, cJSON *f)
{
	cJSON *own = f ? cJSON_DetachItemFromObjectCaseSensitive(f, "frame_bytes") : NULL;
	if (own) {
		spare_put(r, own->valuestring);
		own->valuestring = NULL;
		cJSON_Delete(own);
	}
	cJSON_Delete(f);
}

void repl__spares_drop(struct repl *r)
{
	while (r->n_spare)
		free(r->spare[--r->n_spare]);
}

/* Read what fd 4 holds into r->in. Returns true when it stopped with
 * bytes left in the pipe because whole frames wait to be taken first. */
static bool read_in(struct repl *r)
{
	size_t max = r->cfg.max_frame;
	for (;;) {
		size_t have, room, want = READ_CHUNK, left = SIZE_MAX;
		ssize_t k;
		if (r->in_off > 0 &&
		    (r->in_off == r->in_len || r->in_cap - r->in_len < READ_CHUNK)) {
			memmove(r->in, r->in + r->in_off, r->in_len - r->in_off);
			r->in_len -= r->in_off;
			r->in_off = 0;
		}
		have = r->in_len - r->in_off;
		if (have >= 4) {
			uint32_t n = repl__be32(r->in + r->in_off);
			if (n > max)
				return false; /* a violation: repl__take_frame says so */
			if ((size_t)n + 4 > have) {
				want = RLM_MAX(want, (size_t)n + 4 - have);
				if ((size_t)n + 4 > READ_CHUNK)
					left = (size_t)n + 4 - have;
			} else if (have > max + 4 || (size_t)n + 4 > READ_CHUNK)
				return true; /* whole frames waiting: take them first
					      * (a large one alone, so that
					      * take_binary keeps it where it is) */
		}
		if (want > READ_CHUNK)
			pipe_size(r, true);
		if (left != SIZE_MAX && r->in_off) {
			/* a large frame starts the buffer, which it then fills
			 * alone: the bytes read of it so far (one read's at
			 * most) move down once */
			memmove(r->in, r->in + r->in_off, have);
			r->in_len = have;
			r->in_off = 0;
		}
		if (r->in_cap - r->in_len < want) {
			size_t cap = r->in_len + want, got = 0;
			char *p = want > READ_CHUNK ? spare_take(r, cap - r->in_off, &got) : NULL;
			if (p) {
				if (have)
					memcpy(p, r->in + r->in_off, have);
				free(r->in);
				r->in_off = 0;
				r->in_len = have;
				cap = got;
			} else if (!(p = realloc(r->in, cap))) {
				r->in_oom = true;
				return false;
			}
			r->in = p;
			r->in_cap = cap;
		}
		/* a large frame is read alone, not with the next one's first
		 * bytes (a spare block may be larger than it): take_binary then
		 * keeps the buffer as it is instead of copying the frame out */
		room = RLM_MIN(r->in_cap - r->in_len, left);
		k = read(r->from_w, r->in + r->in_len, room);
		if (k > 0) {
			r->in_len += (size_t)k;
			if ((size_t)k < room)
				return false; /* the pipe is empty */
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return false;
		r->eof = true;
		return false;
	}
}

/* A binary call frame of n bytes at r->in_off: its prompts are read where
 * they lie, so the tree takes its bytes -- the input buffer itself when it
 * holds this frame alone (as it does a large one: read_in sizes it to the
 * frame), else a copy -- and frees them with itself: a string member
 * "frame_bytes" owns them (its text is no text: nothing reads it). */
static int take_binary(struct repl *r, uint32_t n, cJSON **f, struct rlm_err *why)
{
	size_t whole = 4 + (size_t)n;
	char *block;
	cJSON *own;
	if (r->in_off == 0 && r->in_len == whole) {
		block = r->in;
		r->in = NULL;
		r->in_cap = r->in_len = 0;
	} else {
		size_t got;
		if (!(block = spare_take(r, whole, &got)))
			block = xmalloc(whole);
		memcpy(block, r->in + r->in_off, whole);
		if (whole > READ_CHUNK)
			r->st.frames_copied++;
		r->in_off += whole;
		if (r->in_off == r->in_len)
			r->in_off = r->in_len = 0;
	}
	*f = repl_frame_parse(block + 4, n, r->cfg.max_frame, why);
	if (!*f) {
		free(block);
		return why->code;
	}
	own = cJSON_CreateString("");
	free(own->valuestring); /* cJSON allocates with malloc: no hooks are set */
	own->valuestring = block;
	cJSON_AddItemToObject(*f, "frame_bytes", own);
	return 1;
}

int repl__take_frame(struct repl *r, cJSON **f, struct rlm_err *why)
{
	size_t have = r->in_len - r->in_off;
	uint32_t n;
	*f = NULL;
	if (r->in_oom)
		return rlm_err_set(why, RLM_ETOOBIG, "no memory for the frame it sent");
	if (have < 4) {
		if (have == 0)
			pipe_size(r, false); /* every frame taken */
		return 0;
	}
	n = repl__be32(r->in + r->in_off);
	if (n > r->cfg.max_frame)
		return rlm_err_set(why, RLM_ETOOBIG, "a frame of %u bytes (the cap is %zu)", n,
				   r->cfg.max_frame);
	if (have - 4 < n)
		return 0;
	/* A binary call frame's prompts stay where they lie: not held twice. */
	if (n && r->in[r->in_off + 4] == '\0')
		return take_binary(r, n, f, why);
	/* A large JSON frame is held twice while it is parsed (its bytes and
	 * the strings made of them): a few at a time in the process, so that
	 * the children of a 10M-token solve, which send their batches
	 * together, do not all hold theirs twice at once. The parse is all
	 * CPU. */
	if (n >= BIG_FRAME)
		big_enter();
	*f = repl_frame_parse(r->in + r->in_off + 4, n, r->cfg.max_frame, why);
	if (n >= BIG_FRAME)
		big_leave();
	r->in_off += 4 + (size_t)n;
	if (r->in_off == r->in_len) {
		r->in_off = r->in_len = 0;
		if (r->in_cap > (1u << 20)) { /* after a large frame */
			spare_put(r, r->in);
			r->in = NULL;
			r->in_cap = 0;
		}
	}
	return *f ? 1 : why->code;
}

/* ---- fd 3 ---- */

void repl__freeze(struct repl *r)
{
	if (r->pid > 0 && !r->frozen && kill(r->pid, SIGSTOP) == 0)
		r->frozen = true;
}

void repl__thaw(struct repl *r)
{
	if (r->frozen && r->pid > 0)
		kill(r->pid, SIGCONT);
	r->frozen = false;
}

void repl__flush(struct repl *r)
{
	repl__thaw(r);
	while (r->out_off < r->out.len && !r->wdead) {
		ssize_t k = write(r->to_w, r->out.p + r->out_off, r->out.len - r->out_off);
		if (k > 0) {
			r->out_off += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		r->wdead = true; /* EPIPE: it no longer reads */
	}
	r->out_off = 0;
	if (r->out.cap > (1u << 20))
		buf_release(&r->out);
	else
		buf_reset(&r->out);
}

void repl__pump(struct repl *r, int ms)
{
	struct pollfd p[5];
	int n = 0, in = -1, log = -1, out = -1, pid = -1, wake = -1;
	if (r->exited) {
		/* Gone: what it wrote is in the pipes; no EOF may ever come if
		 * a grandchild holds fd 4. */
		size_t before = r->in_len - r->in_off;
		bool more = read_in(r);
		drain_log(r);
		if (!more && r->in_len - r->in_off == before)
			r->eof = true;
		return;
	}
	if (!r->eof) {
		p[n] = (struct pollfd){r->from_w, POLLIN, 0};
		in = n++;
	}
	if (r->log_r >= 0) {
		p[n] = (struct pollfd){r->log_r, POLLIN, 0};
		log = n++;
	}
	if (r->out_off < r->out.len && !r->wdead) {
		p[n] = (struct pollfd){r->to_w, POLLOUT, 0};
		out = n++;
	}
	if (r->pidfd >= 0) {
		p[n] = (struct pollfd){r->pidfd, POLLIN, 0};
		pid = n++;
	}
	if (r->jobs_out && r->wake_fd >= 0) {
		p[n] = (struct pollfd){r->wake_fd, POLLIN, 0};
		wake = n++;
	}
	if (poll(p, (nfds_t)n, ms) <= 0)
		return;
	if (wake >= 0 && p[wake].revents) {
		uint64_t v;
		if (read(r->wake_fd, &v, sizeof(v)) < 0)
			(void)0; /* EAGAIN: another read took it */
	}
	if (log >= 0 && p[log].revents)
		drain_log(r);
	if (out >= 0 && p[out].revents)
		repl__flush(r);
	if (in >= 0 && p[in].revents)
		read_in(r);
	if (pid >= 0 && p[pid].revents)
		r->exited = true;
}

/* ---- start and stop ---- */

void repl__describe_status(int status, char *dst, size_t cap)
{
	if (status < 0)
		snprintf(dst, cap, "status unknown");
	else if (WIFEXITED(status))
		snprintf(dst, cap, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(dst, cap, "killed by signal %d, SIG%s: %s", WTERMSIG(status),
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?",
			 sigdescr_np(WTERMSIG(status)) ? sigdescr_np(WTERMSIG(status)) : "?");
	else
		snprintf(dst, cap, "wait status %#x", (unsigned)status);
}

int repl__worker_stop(struct repl *r)
{
	int status = -1;
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL); /* its session: whatever it forked */
		kill(r->pid, SIGKILL);  /* stopped (frozen) or not */
		while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
			;
		r->pid = 0;
		drain_log(r); /* what a crash printed */
	}
	close_fd(&r->to_w);
	close_fd(&r->from_w);
	close_fd(&r->log_r);
	close_fd(&r->pidfd);
	r->frozen = false;
	repl__probe_close(r);
	r->in_off = r->in_len = 0;
	r->in_oom = false;
	r->out_off = 0;
	buf_reset(&r->out);
	return status;
}

void repl__worker_reap(struct repl *r, char *dst, size_t cap)
{
	int status;
	bool gone = r->exited;
	/* It usually is exiting already: let it, so that its own status is
	 * what we report. A worker that only closed fd 4 gets SIGKILL. */
	if (!gone && r->pidfd >= 0) {
		struct pollfd p = {r->pidfd, POLLIN, 0};
		gone = poll(&p, 1, 200) == 1;
	} else if (!gone) {
		for (int i = 0; i < 40 && !gone; i++) {
			gone = waitpid(r->pid, &status, WNOHANG) == r->pid;
			if (gone) {
				r->pid = 0;
				drain_log(r);
				repl__worker_stop(r);
				repl__describe_status(status, dst, cap);
				return;
			}
			time_sleep_ns(5000000);
		}
	}
	status = repl__worker_stop(r);
	if (gone)
		repl__describe_status(status, dst, cap);
	else
		snprintf(dst, cap, "it closed its channel to the controller and was killed");
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* "execve: errno 2" from the child, in words. */
static void explain_fatal(const struct repl *r, const char *msg, struct rlm_err *err)
{
	int e = 0;
	if (sscanf(msg, "execve: errno %d", &e) == 1 && e > 0)
		rlm_err_set(err, e == ENOENT ? RLM_ENOTFOUND : RLM_EIO, "cannot run '%s': %s",
			    r->python, strerror(e));
	else
		rlm_err_set(err, RLM_EIO, "the worker failed to start: %.400s", msg);
}

/* "sandbox: mount /proc: errno 1" and its "layer" from the child. */
static int fatal_layer(const cJSON *f)
{
	const char *l = json_str(f, "layer");
	for (int i = 0; l && i < REPL_L_COUNT; i++)
		if (strcmp(l, repl_layer_name((enum repl_layer)i)) == 0)
			return i;
	return -1;
}

/* An errno that says the machine lacks a layer, or forbids it: the layer
 * is broken for the rest of the process. Anything else (ENOMEM, ENOSPC,
 * EAGAIN, EMFILE, ...) is a shortage that passes; leaving the layer out
 * for good because of it would weaken every later worker. */
static bool layer_errno(int e)
{
	return e == EPERM || e == EACCES || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP ||
	       e == ENODEV;
}

/* What to do about a failure e of a layer that is kept, for a message. */
static void shortage_fix(char *dst, size_t cap, int e, int layer)
{
	const char *fix = NULL;
	switch (e) {
	case ENOSPC:
		fix = "too many namespaces, mounts or files at once: try again when fewer "
		      "workers run; if it persists (a low /proc/sys/user/max_*_namespaces, or "
		      "namespaces nested too deep), turn the namespaces off with "
		      "RLM_SANDBOX_DISABLE=ns";
		break;
	case EAGAIN:
		fix = "too many processes at once: try again when fewer run";
		break;
	case ENOMEM:
		fix = "the machine is short of memory: try again when it has some to spare";
		break;
	case EMFILE:
	case ENFILE:
		fix = "too many open files: try again when fewer are open";
		break;
	}
	if (fix)
		snprintf(dst, cap, "%s", fix);
	else
		snprintf(dst, cap,
			 "try again, and if it persists turn the layer off with "
			 "RLM_SANDBOX_DISABLE=%s (--sandbox-disable %s)",
			 repl_layer_name((enum repl_layer)layer),
			 repl_layer_name((enum repl_layer)layer));
}

/* A sandbox layer failed in the child (msg: "sandbox: STEP: errno N").
 * With an errno of a missing layer, returns the layer, to be left out;
 * else -1 and err saying why: this start fails, the layer stays. */
static int layer_failed(int layer, const char *msg, struct rlm_err *err)
{
	const char *at = strstr(msg, ": errno "), *step = msg;
	int e = at ? atoi(at + 8) : 0;
	char fix[256];
	if (layer < 0 || layer_errno(e))
		return layer;
	if (!at)
		return -1; /* not a system call's failure: explain_fatal said what */
	if (strncmp(step, "sandbox: ", 9) == 0)
		step += 9;
	shortage_fix(fix, sizeof(fix), e, layer);
	rlm_err_set(err, RLM_ESANDBOX,
		    "cannot start the worker: the %s layer of the sandbox failed at '%.*s' with "
		    "errno %d (%s), which does not say the layer is missing, so it is kept: %s",
		    repl_layer_name((enum repl_layer)layer),
		    at ? (int)RLM_MIN(at - step, 120) : 120, step, e, strerror(e), fix);
	return -1;
}

static int wait_ready(struct repl *r, int64_t t0, int *layer, char *lwhy, size_t cap,
		      struct rlm_err *err)
{
	int64_t deadline = t0 + START_TIMEOUT_NS, wdead_at = 0;
	for (;;) {
		struct rlm_err why = {0, ""};
		cJSON *f = NULL;
		int k = repl__take_frame(r, &f, &why);
		int64_t now;
		if (k < 0)
			return rlm_err_set(err, RLM_EIO,
					   "the worker broke the protocol while starting: %s",
					   why.msg);
		if (k > 0) {
			const char *type = json_str(f, "type");
			int rc = 0;
			if (strcmp(type, "ready") == 0) {
				snprintf(r->st.python, sizeof(r->st.python), "%s",
					 json_str(f, "python"));
				/* The worker checked the answer schema: a bad
				 * one is the caller's mistake (no retry). */
				if (json_get(f, "schema_error"))
					rc = rlm_err_set(err, RLM_EINVAL, "%s",
							 json_str(f, "schema_error"));
			} else if (strcmp(type, "fatal") == 0) {
				explain_fatal(r, json_str(f, "error"), err);
				*layer = layer_failed(fatal_layer(f), json_str(f, "error"), err);
				rc = err ? err->code : RLM_EIO;
				snprintf(lwhy, cap, "%s", json_str(f, "error"));
			} else {
				rc = rlm_err_set(err, RLM_EIO,
						 "the worker sent a '%s' frame before 'ready'",
						 type);
			}
			cJSON_Delete(f);
			return rc;
		}
		/* A worker that stopped reading is usually exiting: what it
		 * wrote first (a fatal frame) comes before its death. */
		if (r->wdead && !r->eof && !wdead_at)
			wdead_at = time_now_ns() + WDEAD_NS;
		if (r->eof || (r->wdead && time_now_ns() >= wdead_at)) {
			char how[128], *tail;
			repl__worker_reap(r, how, sizeof(how));
			tail = repl__log_tail(r, 1000);
			rlm_err_set(err, RLM_EIO, "the worker exited while starting (%s)%s%s", how,
				    *tail ? ": " : "", tail);
			free(tail);
			return RLM_EIO;
		}
		now = time_now_ns();
		if (now >= deadline)
			return rlm_err_set(err, RLM_ETIMEOUT,
					   "the worker was not ready after %lld s",
					   (long long)(START_TIMEOUT_NS / 1000000000LL));
		repl__pump(r, ms_until(wdead_at && wdead_at < deadline ? wdead_at : deadline, now));
	}
}

/* Both ends of a pipe closed. */
static void close_pair(int p[2])
{
	close_fd(&p[0]);
	close_fd(&p[1]);
}

/* The three pipes of a worker; 0 or -errno (none left open). */
static int open_pipes(int in[2], int out[2], int log[2])
{
	int e;
	if (pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 && pipe2(log, O_CLOEXEC) == 0)
		return 0;
	e = -errno;
	close_pair(in);
	close_pair(out);
	close_pair(log);
	return e;
}

/* One attempt: spawn, fill the context, wait for "ready". On failure at a
 * sandbox layer, *layer names it and why says what happened. */
static int start_once(struct repl *r, int *layer, char *why, size_t cap, struct rlm_err *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, log[2] = {-1, -1}, rc;
	struct repl_spawn sp;
	const char *what = "";
	int64_t t0;
	size_t start;
	pid_t pid = 0;
	bool zygote;
	*layer = -1;
	for (int pass = 0; pass < 2; pass++) {
		if ((rc = open_pipes(in, out, log)) < 0)
			return rlm_err_set(err, RLM_EIO, "cannot start the worker: pipe: %s",
					   strerror(-rc));
		memset(&sp, 0, sizeof(sp));
		sp.path = r->python;
		sp.argv = r->argv;
		sp.envp = r->envp;
		sp.fds[0] = r->devnull;
		sp.fds[1] = log[1];
		sp.fds[2] = log[1];
		sp.fds[3] = in[0];
		sp.fds[4] = out[1];
		sp.fds[5] = r->memfd;
		sp.fds[6] = repl__code_fd(NULL); /* made by repl_start */
		sp.dir = r->scratch;
		sp.max_fd = r->max_fd;
		sp.sandbox = &r->sb;
		r->argv[11] = (char *)(uintptr_t)(r->sb.seccomp ? repl__seccomp_late_hex() : "-");
		t0 = time_now_ns();
		rc = pass == 0 ? repl__zygote_spawn(r, &sp, &pid, layer, &what) : REPL_NO_ZYGOTE;
		if (rc != REPL_ZYGOTE_LOST)
			break;
		/* A worker the zygote may have forked on these pipes reads EOF
		 * and exits; this one starts cold on new ones. */
		close_pair(in);
		close_pair(out);
		close_pair(log);
	}
	zygote = rc != REPL_NO_ZYGOTE;
	if (!zygote) {
		t0 = time_now_ns();
		rc = repl__spawn(&sp, &pid, layer, &what);
	}
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&log[1]);
	if (rc < 0) {
		close_fd(&in[1]);
		close_fd(&out[0]);
		close_fd(&log[0]);
		snprintf(why, cap, "%s: %s", what, strerror(-rc));
		if (strcmp(what, "clone") == 0 && r->sb.clone_flags)
			snprintf(why, cap, "clone(CLONE_NEWUSER): %s", strerror(-rc));
		if (*layer < 0 && strcmp(what, "clone") == 0 && r->sb.clone_flags) {
			char fix[256];
			shortage_fix(fix, sizeof(fix), -rc, REPL_L_USERNS);
			return rlm_err_set(err, RLM_ESANDBOX,
					   "cannot start the worker: %s, which does not say the "
					   "namespaces are missing, so they are kept: %s",
					   why, fix);
		}
		return rlm_err_set(err, RLM_EIO, "cannot start the worker: %s", why);
	}
	r->pid = pid;
	r->to_w = in[1];
	r->from_w = out[0];
	r->log_r = log[0];
	set_nonblock(r->to_w);
	set_nonblock(r->from_w);
	r->pipe_big = false;
	set_nonblock(r->log_r);
#ifdef SYS_pidfd_open
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	r->pidfd = -1;
#endif
	r->eof = r->exited = r->wdead = r->in_oom = false;
	r->in_off = r->in_len = 0;
	r->log_len = 0;
	if (r->ctx_pending) {
		rc = repl__fill_context(r, err);
		if (rc < 0) {
			repl__worker_stop(r);
			return rc;
		}
	}
	start = repl__frame_begin(&r->out);
	buf_printf(&r->out,
		   "{\"type\":\"context\",\"text_at\":%llu,\"table_at\":%llu,"
		   "\"meta_table_at\":%llu,\"n_meta\":%zu%s",
		   (unsigned long long)r->text_at, (unsigned long long)r->table_at,
		   (unsigned long long)r->meta_table_at, r->n_meta,
		   r->json ? ",\"form\":\"json\"" : "");
	if (r->schema) {
		buf_puts(&r->out, ",\"schema\":");
		json_put_str(&r->out, r->schema, strlen(r->schema), 0);
	}
	buf_putc(&r->out, '}');
	if (repl__frame_end(&r->out, start) < 0) {
		r->out.len = start;
		repl__worker_stop(r);
		return rlm_err_set(err, RLM_EINVAL, "the answer schema is too large for a frame");
	}
	repl__flush(r);
	rc = wait_ready(r, t0, layer, why, cap, err);
	if (rc == 0)
		rc = repl__sandbox_verify(r, err);
	if (rc < 0) {
		repl__worker_stop(r);
		return rc;
	}
	r->st.pid = pid;
	r->st.start_ns = time_now_ns() - t0;
	r->st.zygote = zygote;
	return 0;
}

int repl__worker_start(struct repl *r, struct rlm_err *err)
{
	/* Each retry leaves one more layer out: bounded by their number. */
	for (int attempt = 0;; attempt++) {
		char why[120];
		int layer, rc = start_once(r, &layer, why, sizeof(why), err);
		if (rc == 0 || layer < 0 || attempt >= REPL_L_COUNT)
			return rc;
		if (!repl__sandbox_broken(r, (enum repl_layer)layer, why))
			return rlm_err_set(err, RLM_ESANDBOX,
					   "the %s layer of the sandbox failed (%s), and model "
					   "code does not run without it: pass --unsafe-no-sandbox "
					   "to run it anyway",
					   repl_layer_name((enum repl_layer)layer), why);
		rc = repl__sandbox_plan(r, err);
		if (rc < 0)
			return rc;
	}
}
