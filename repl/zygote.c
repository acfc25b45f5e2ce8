/* SPDX-License-Identifier: MIT */
/* repl/zygote.c -- the zygote: one python3 per process that has loaded the
 * REPL runtime and forks workers, so that a worker (a child RLM's, or one
 * restarted after a crash) is ready in milliseconds, not a Python
 * start-up.
 *
 * DESIGN
 * The zygote is started by the spawner thread like a worker, in the
 * workers' user namespace and identity, with CAP_SYS_ADMIN in that
 * namespace kept through execve (ambient) when the workers have
 * namespaces to make; no seccomp filter and no Landlock domain (both forbid
 * the mounts a worker makes), not dumpable, core dumps off. It runs no
 * model code: it reads requests from us on a SOCK_SEQPACKET socket (fd
 * 3), each a frame with the worker's plan and SCM_RIGHTS with the worker's
 * fds, and clones with CLONE_PARENT and the worker's namespaces. So the
 * worker is our child, exactly as one started cold: we reap it, signal
 * it, watch its pidfd and read its /proc status; its parent-death signal
 * is tied to the spawner thread through the zygote's parent. The worker
 * then applies its own sandbox before any of its code runs (the steps of
 * repl/spawn.c, done by repl/zygote.py), with the same fatal frames, so a
 * layer that fails is handled by worker.c as for a cold start. Each
 * worker gets a user namespace of its own, nested in the zygote's, so that
 * RLIMIT_NPROC counts its threads alone. With the pivot layer the zygote
 * builds the workers' root once, in a mount namespace of its own, and
 * pivots into it: a worker's mount namespace is a copy of that small tree
 * and needs no umount of the host's (docs/sandbox.md).
 *
 * One zygote per process, for one plan at a time (the interpreter, the
 * identity, the user namespace, seccomp on or off, pivot: what a zygote's
 * workers inherit). A REPL whose plan differs starts its workers cold,
 * unless no other REPL holds the zygote, which is then restarted with the
 * new plan. REPLs hold a reference from their first zygote start; the
 * last repl_free stops the zygote, so nothing outlives the solve. A
 * zygote that fails to start, or stops answering, is stopped and the
 * worker started cold; after ZMAX_FAILURES failures the process gives up
 * on zygotes (with a warning). Requests are serialised under one mutex: a
 * clone takes about a millisecond. RLM_ZYGOTE=0 (or repl_cfg.no_zygote)
 * starts every worker cold; so does a lone REPL (repl_cfg.lone) while no
 * zygote is up and no other REPL is open: a zygote's start and a fork
 * cost more than the one cold start they would save. */
#include "repl_int.h"
#include "../common/json.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule	   445
#define SYS_landlock_restrict_self 446
#endif

#define ZSTART_MS     10000 /* python3 up and the runtime loaded */
#define ZREPLY_MS     5000  /* one clone (about a millisecond) */
#define ZMAX_FAILURES 3
#define ZMSG_MAX      65536

/* One zygote process. */
struct zyg {
	pid_t pid;  /* 0: none */
	int sock;   /* our end of its fd 3 */
	int log_r;  /* its fds 1 and 2 */
	char *key;  /* the plan it serves */
};

static pthread_mutex_t zmu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct zyg cur;  /* the running one */
	bool starting;   /* a thread is starting one (without zmu) */
	int refs;        /* REPLs holding it */
	int failures;    /* failures in a row, for the process */
} z = {{0, -1, -1, NULL}, false, 0, 0};

/* With zmu held. */
static bool wanted(const struct repl *r)
{
	const char *v = getenv("RLM_ZYGOTE");
	if (r->cfg.no_zygote || (v && strcmp(v, "0") == 0))
		return false;
	/* A lone worker forks from a zygote that is up, or when other REPLs
	 * are open (their children, a server's solves) may want one too. */
	return !r->cfg.lone || z.cur.pid || z.starting || atomic_load(&repl__open) > 1;
}

/* What a zygote's workers inherit from it. */
static char *plan_key(const struct repl *r)
{
	const struct repl_sandbox *sb = &r->sb;
	return xasprintf("%s|%d|%d|%u:%u|%u:%u|%d|%d|%d|%d", r->python,
			 !!(sb->clone_flags & CLONE_NEWUSER),
			 sb->clone_flags != 0 && sb->clone_flags != CLONE_NEWUSER, sb->uid, sb->gid,
			 sb->ns_uid, sb->ns_gid, sb->setgroups_deny,
			 !!(sb->layers & (1u << REPL_L_IDENTITY)), sb->seccomp != NULL, sb->pivot);
}

static void zyg_stop(struct zyg *g)
{
	int status;
	if (g->sock >= 0)
		close(g->sock); /* EOF: it exits */
	g->sock = -1;
	if (g->pid > 0) {
		kill(g->pid, SIGKILL);
		while (waitpid(g->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	g->pid = 0;
	if (g->log_r >= 0)
		close(g->log_r);
	g->log_r = -1;
	free(g->key);
	g->key = NULL;
}

/* One message from zygote g within ms: a frame's JSON, or NULL with why. */
static cJSON *recv_msg(const struct zyg *g, int ms, char *why, size_t cap)
{
	char *msg = xmalloc(ZMSG_MAX);
	struct pollfd p = {g->sock, POLLIN, 0};
	int64_t end = time_now_ns() + (int64_t)ms * 1000000;
	ssize_t n;
	cJSON *j;
	for (;;) {
		int64_t left = (end - time_now_ns()) / 1000000;
		int k = poll(&p, 1, left > 0 ? (int)left : 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0) {
			snprintf(why, cap, "no answer in %d ms", ms);
			free(msg);
			return NULL;
		}
		break;
	}
	do
		n = recv(g->sock, msg, ZMSG_MAX, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		snprintf(why, cap, "%s", n == 0 ? "it exited" : strerror(errno));
		free(msg);
		return NULL;
	}
	if (n < 4 || ((uint32_t)(unsigned char)msg[0] << 24 | (uint32_t)(unsigned char)msg[1] << 16 |
		      (uint32_t)(unsigned char)msg[2] << 8 | (unsigned char)msg[3]) != (size_t)n - 4) {
		snprintf(why, cap, "a message that is not one frame (%zd bytes)", n);
		free(msg);
		return NULL;
	}
	j = json_parse(msg + 4, (size_t)n - 4);
	free(msg);
	if (!j || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		snprintf(why, cap, "a message that is not a JSON object");
		return NULL;
	}
	return j;
}

/* The zygote's last words on fds 1 and 2, for a failure report. */
static void log_tail(const struct zyg *g, char *dst, size_t cap)
{
	char tmp[2048];
	ssize_t n = g->log_r >= 0 ? read(g->log_r, tmp, sizeof(tmp) - 1) : -1;
	size_t k;
	char *c;
	dst[0] = 0;
	if (n <= 0)
		return;
	c = repl__clean(tmp, (size_t)n, &k);
	snprintf(dst, cap, ": %.*s", (int)RLM_MIN(k, 600), c);
	free(c);
}

static void plan_json(struct buf *b, const struct repl_sandbox *sb)
{
	static const struct {
		const char *name;
		long nr;
	} nr[] = {
	    {"clone", SYS_clone},
	    {"prctl", SYS_prctl},
	    {"fcntl", SYS_fcntl},
	    {"close_range", SYS_close_range},
	    {"capset", SYS_capset},
	    {"prlimit64", SYS_prlimit64},
	    {"openat", SYS_openat},
	    {"mount", SYS_mount},
	    {"mount_setattr", SYS_mount_setattr},
	    {"landlock_add_rule", SYS_landlock_add_rule},
	    {"landlock_restrict_self", SYS_landlock_restrict_self},
	    {"pivot_root", SYS_pivot_root},
	    {"umount2", SYS_umount2},
	    {"unshare", SYS_unshare},
	};
	buf_puts(b, "{\"nr\":{");
	for (size_t i = 0; i < ARRAY_SIZE(nr); i++)
		buf_printf(b, "%s\"%s\":%ld", i ? "," : "", nr[i].name, nr[i].nr);
	buf_printf(b, "},\"first\":\"%s\",\"late\":\"%s\",\"ppid\":%d",
		   sb->seccomp ? repl__seccomp_first_hex() : "-",
		   sb->seccomp ? repl__seccomp_late_hex() : "-", (int)getpid());
	/* Workers with a root of their own: the zygote builds the part that
	 * does not depend on the scratch path once, in a mount namespace of
	 * its own, and pivots into it; each worker's copy of that namespace
	 * is then small and needs no umount (which waits for an RCU grace
	 * period, ~2 ms). Paths below the root, without R. */
	if (sb->pivot) {
		const struct repl_root *rt = &sb->root;
		size_t rlen = strlen(sb->scratch);
		buf_printf(b, ",\"root\":{\"opts\":\"%s\",\"ops\":[", rt->opts);
		for (int i = 0; i < rt->n_fixed; i++) {
			const struct repl_root_op *o = &rt->ops[i];
			const char *src = o->src ? rt->arena + o->src : "";
			const char *dst = rt->arena + o->dst + rlen;
			buf_printf(b, "%s[%d,", i ? "," : "", o->op);
			json_put_str(b, src, strlen(src), 0);
			buf_putc(b, ',');
			json_put_str(b, dst, strlen(dst), 0);
			buf_printf(b, ",%s]", o->dev ? "true" : "false");
		}
		buf_puts(b, "]}");
	}
	buf_putc(b, '}');
}

/* Start a zygote for r's plan into g (key: owned by g from here). Runs
 * without zmu. Returns 0, or -1 with why (g is then empty). */
static int zyg_start(struct zyg *g, struct repl *r, char *key, char *why, size_t cap)
{
	struct repl_sandbox zsb;
	struct repl_spawn sp;
	struct buf plan = BUF_INIT;
	int sv[2] = {-1, -1}, lg[2] = {-1, -1}, layer, rc;
	const char *what = "";
	char *argv[9], tail[700];
	cJSON *hello;
	pid_t pid = 0;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(lg, O_CLOEXEC) < 0) {
		snprintf(why, cap, "socketpair/pipe: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (sv[i] >= 0)
				close(sv[i]);
			if (lg[i] >= 0)
				close(lg[i]);
		}
		free(key);
		return -1;
	}
	repl__sandbox_zygote(&r->sb, &zsb);
	plan_json(&plan, &r->sb);
	for (int i = 0; i < 6; i++)
		argv[i] = r->argv[i]; /* python3 -s -S -B -c <the bootstrap> */
	argv[6] = (char *)(uintptr_t) "zygote";
	argv[7] = plan.p;
	argv[8] = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.path = r->python;
	sp.argv = argv;
	sp.envp = r->envp;
	sp.fds[0] = r->devnull;
	sp.fds[1] = sp.fds[2] = lg[1];
	sp.fds[3] = sp.fds[4] = sv[1];
	sp.fds[5] = r->devnull;
	sp.fds[6] = repl__code_fd(NULL); /* its code and zygote.py's */
	sp.dir = "/";
	sp.max_fd = r->max_fd;
	sp.sandbox = &zsb;
	rc = repl__spawn(&sp, &pid, &layer, &what);
	buf_release(&plan);
	close(sv[1]);
	close(lg[1]);
	*g = (struct zyg){0, sv[0], lg[0], key};
	fcntl(g->log_r, F_SETFL, O_NONBLOCK);
	if (rc < 0) {
		snprintf(why, cap, "%s: %s", what, strerror(-rc));
		zyg_stop(g);
		return -1;
	}
	g->pid = pid;
	hello = recv_msg(g, ZSTART_MS, why, cap);
	if (!hello || !json_str(hello, "type") || strcmp(json_str(hello, "type"), "zygote") != 0) {
		if (hello)
			snprintf(why, cap, "%.300s",
				 json_str(hello, "error") ? json_str(hello, "error") : "no hello");
		cJSON_Delete(hello);
		log_tail(g, tail, sizeof(tail));
		snprintf(why + strlen(why), cap - strlen(why), "%s", tail);
		zyg_stop(g);
		return -1;
	}
	cJSON_Delete(hello);
	return 0;
}

static void request_json(struct buf *b, const struct repl *r, const struct repl_sandbox *sb)
{
	bool ns = sb->clone_flags & CLONE_NEWUSER;
	bool keep = !(sb->layers & (1u << REPL_L_IDENTITY)) && !ns && sb->uid == 0;
	buf_printf(b, "{\"type\":\"fork\",\"flags\":%d,\"pidns\":%s,\"args\":[",
		   sb->clone_flags & ~CLONE_NEWUSER, sb->clone_flags & CLONE_NEWPID ? "true" : "false");
	for (int i = 6; i <= 10; i++)
		buf_printf(b, "%s\"%s\"", i > 6 ? "," : "", r->argv[i]);
	buf_puts(b, "],\"scratch\":");
	json_put_str(b, sb->scratch, strlen(sb->scratch), 0);
	buf_puts(b, ",\"tmpdir\":");
	json_put_str(b, r->scratch, strlen(r->scratch), 0);
	buf_printf(b, ",\"tmpfs\":\"%s\",\"rl\":[", sb->tmpfs_opts);
	for (int i = 0; i < sb->n_rl; i++)
		buf_printf(b, "%s[%d,%lu,%lu]", i ? "," : "", sb->rl[i].res, sb->rl[i].cur,
			   sb->rl[i].max);
	/* nest: a user namespace of its own inside the zygote's, so that
	 * RLIMIT_NPROC (counted per uid and user namespace) caps this
	 * worker's threads, not the sum of all workers of the zygote. */
	buf_printf(b, "],\"ll\":%llu,\"seccomp\":%s,\"keepcaps\":%s,\"nest\":%s",
		   sb->landlock_fd >= 0 ? (unsigned long long)repl__sandbox_scratch_rights() : 0ULL,
		   sb->seccomp ? "true" : "false", keep ? "true" : "false",
		   ns ? "true" : "false");
	/* In the zygote's root (plan_json): the worker's own part, a tmpfs
	 * on the scratch's first directory with the way down to it. */
	if (sb->pivot)
		buf_puts(b, ",\"zroot\":true");
	if (sb->fault >= 0)
		buf_printf(b, ",\"fault\":[\"%s\",%d]", repl_layer_name((enum repl_layer)sb->fault),
			   sb->fault_errno);
	buf_puts(b, "}");
}

/* Send one request with the worker's fds; 0 or an errno value. */
static int send_request(const struct buf *b, const int *fds, int nfd)
{
	char hdr[4] = {(char)(b->len >> 24), (char)(b->len >> 16), (char)(b->len >> 8),
		       (char)b->len};
	struct iovec iov[2] = {{hdr, 4}, {b->p, b->len}};
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m;
	struct cmsghdr *c;
	ssize_t n;
	memset(&u, 0, sizeof(u));
	memset(&m, 0, sizeof(m));
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	m.msg_control = u.buf;
	m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfd);
	do
		n = sendmsg(z.cur.sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? errno : 0;
}

static void failed_locked(const char *step, const char *why)
{
	zyg_stop(&z.cur);
	if (++z.failures == ZMAX_FAILURES)
		log_warn("the REPL zygote failed %d times (last: %s: %s): workers start cold "
			 "from now on",
			 ZMAX_FAILURES, step, why);
	else
		log_debug("the REPL zygote failed (%s: %s): this worker starts cold", step, why);
}

int repl__zygote_spawn(struct repl *r, const struct repl_spawn *sp, pid_t *pid, int *layer,
		       const char **what)
{
	const struct repl_sandbox *sb = sp->sandbox;
	struct buf req = BUF_INIT;
	char why[1024], *key;
	int fds[5], nfd = 0, e, rc = REPL_NO_ZYGOTE;
	cJSON *ans;

	*layer = -1;
	*what = "zygote";
	if (!sb)
		return REPL_NO_ZYGOTE;
	key = plan_key(r);
	pthread_mutex_lock(&zmu);
	if (!wanted(r)) {
		free(key);
		goto out;
	}
	if (z.cur.pid && strcmp(z.cur.key, key) != 0) {
		if (z.refs - (r->zref ? 1 : 0) > 0) {
			free(key); /* in use by another plan: this REPL starts cold */
			goto out;
		}
		zyg_stop(&z.cur);
	}
	if (!z.cur.pid) {
		struct zyg g;
		/* Another thread is starting one, or zygotes failed here:
		 * cold, rather than wait. */
		if (z.starting || z.failures >= ZMAX_FAILURES) {
			free(key);
			goto out;
		}
		z.starting = true;
		pthread_mutex_unlock(&zmu);
		e = zyg_start(&g, r, key, why, sizeof(why));
		pthread_mutex_lock(&zmu);
		z.starting = false;
		if (e < 0) {
			failed_locked("start", why);
			goto out;
		}
		z.cur = g;
	} else {
		free(key);
	}
	if (!r->zref) {
		r->zref = true;
		z.refs++;
	}
	fds[nfd++] = sp->fds[1];
	fds[nfd++] = sp->fds[3];
	fds[nfd++] = sp->fds[4];
	fds[nfd++] = sp->fds[5];
	if (sb->landlock_fd >= 0)
		fds[nfd++] = sb->landlock_fd;
	request_json(&req, r, sb);
	e = send_request(&req, fds, nfd);
	if (e) {
		failed_locked("send", strerror(e));
		goto out;
	}
	ans = recv_msg(&z.cur, ZREPLY_MS, why, sizeof(why));
	if (!ans) {
		/* It may have forked a worker on these fds before it went
		 * quiet: they must not be used again (REPL_ZYGOTE_LOST). */
		failed_locked("fork", why);
		rc = REPL_ZYGOTE_LOST;
		goto out;
	}
	if (json_num(ans, "pid", 0) > 0) {
		*pid = (pid_t)json_num(ans, "pid", 0);
		z.failures = 0;
		rc = 0;
	} else {
		/* No worker was made. A clone the zygote could not make (no
		 * CAP_SYS_ADMIN in its namespace, a limit) is the zygote's
		 * failure, not a missing layer: the cold start decides that. */
		snprintf(why, sizeof(why), "%.300s",
			 json_str(ans, "error") ? json_str(ans, "error") : "no pid in its answer");
		failed_locked("fork", why);
	}
	cJSON_Delete(ans);
out:
	pthread_mutex_unlock(&zmu);
	buf_release(&req);
	return rc;
}

void repl__zygote_release(struct repl *r)
{
	if (!r->zref)
		return;
	pthread_mutex_lock(&zmu);
	r->zref = false;
	if (--z.refs == 0)
		zyg_stop(&z.cur);
	pthread_mutex_unlock(&zmu);
}
