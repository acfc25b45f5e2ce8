/* SPDX-License-Identifier: MIT */
/* tests/test_sandbox.c -- the sandbox attack suite: hostile cells run in the
 * real worker at eight levels of the sandbox (five fallbacks as root, one
 * without seccomp, two as a non-root controller), and the ordinary code
 * that must keep working at every one of them.
 *
 * DESIGN
 * A level is a set of layers turned off (repl_cfg.sandbox.disable). Each
 * attack is one Python cell that prints a verdict line, "BLOCKED <why>" or
 * "ESCAPED <what>"; attacks on the controller's resources are also checked
 * from here (a listener that must see no connection, a file that must not
 * appear, a SIGTERM that must not arrive, a tracer that must not attach).
 * What an attack must do is keyed to the layers the worker's
 * repl_sandbox_status says are on, not to the level's name: reading
 * /etc/shadow must be blocked iff Landlock is on or the worker is not root;
 * when it is not, the escape is recorded as ALLOWED (expected at this
 * level). A HOLE is an escape that the active layers should have stopped.
 * After every attack the worker must answer `print(1+1)` (on a restarted
 * worker, when the attack was contained by a restart).
 *
 * Besides the worker against the controller, the rows cover: a second
 * worker of the same controller (its /proc files, its scratch, signals);
 * the kernel's own signal routes (fcntl F_SETOWN/F_SETSIG on a pipe, at a
 * `sleep` of the worker's uid and at the controller); memory outside
 * RLIMIT_AS (memfds); the controller's cleanup of a scratch the worker
 * renamed and replaced by a symlink; the scratch quota of a plain
 * directory, measured from here while the cell writes (the bytes that
 * reached the disk) and for a tree deeper than a walk would go; the DNS
 * row, which must fail because of the sandbox (socket refused, or no
 * route), not merely offline; nothing left on disk after repl_free.
 *
 * A level's attacks all run, whatever fails, and every verdict is appended
 * to a file; the last test prints the attack x level matrix to stderr.
 * Cells that would really harm the machine without seccomp (the fork
 * loop) are reduced to one harmless instance at -seccomp. The
 * controller's environment holds RLM_TEST_SECRET from its start (the binary
 * re-executes itself to put it there, so that /proc/PID/environ shows it),
 * and no output of any cell may contain it. */
#include "harness.h"
#include "../common/common.h"
#include "../repl/repl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#define MS   1000000LL
#define L(x) (1u << (x))

static const char secret[] = "sk-rlmtest-5b2f9c1e7d3a44f0";

/* ---- levels and verdicts ---- */

struct level {
	const char *name;
	unsigned disable;
	bool nonroot; /* run by a controller that dropped root (see run_nonroot) */
	bool cold;    /* workers started cold, not forked by the zygote */
};

/* -seccomp runs without the mandatory layer (unsafe): the namespaces and
 * Landlock carry the network, signal and file rows alone, and the cells
 * that would really fork or exec are bounded there. The nonroot levels
 * run in a child that gave up root, so that the worker has the
 * controller's own uid. Every level's workers are forked by the zygote
 * but the -cold ones', started from python3 itself. */
static const struct level levels[] = {
    {"full", 0, false, false},
    {"-landlock", L(REPL_L_LANDLOCK), false, false},
    {"-userns", L(REPL_L_USERNS), false, false},
    {"-userns-ll", L(REPL_L_USERNS) | L(REPL_L_LANDLOCK), false, false},
    {"sc+rl", L(REPL_L_IDENTITY) | L(REPL_L_LANDLOCK) | L(REPL_L_USERNS), false, false},
    {"-seccomp", L(REPL_L_SECCOMP), false, false},
    {"nonroot", 0, true, false},
    {"nr-sc+rl", L(REPL_L_LANDLOCK) | L(REPL_L_USERNS), true, false},
    {"full-cold", 0, false, true},
    {"nr-cold", 0, true, true},
};
#define N_LEVELS (sizeof(levels) / sizeof(levels[0]))

/* The unprivileged uid of the nonroot levels (when the suite runs as root). */
#define NONROOT_UID 65533

enum verdict { V_BLOCKED, V_CONTAINED, V_ALLOWED, V_SKIPPED, V_HOLE, V_BROKEN, V_OK };
static const char *const vname[] = {"BLOCKED", "CONTAINED", "ALLOWED", "skipped",
				    "HOLE",    "BROKEN",    "works"};

/* Flags of an attack cell. */
#define A_RESTART_OK  1u /* a restart (the worker killed) contains it */
#define A_RESTART_ESC 2u /* a restart means it got through (exec replaced the REPL) */
#define A_KEEP	      4u /* the worker's variables must survive it */

/* One level's run. */
struct run {
	int level;
	struct repl *r;		       /* the attacks; exec time 10 s */
	struct repl_sandbox_status st; /* of the worker at the start */
	pid_t self;		       /* the controller: this process */
	unsigned ctl_uid;	       /* its euid */
	bool dumpable;		       /* this process, after repl_start */
	int fails;
	FILE *matrix;
	int tcp, tcp_port; /* listeners that must hear nothing */
	int udp, udp_port;
	char evil_tmp[64], evil_shm[64];
};

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

static bool verbose(void)
{
	const char *v = getenv("SANDBOX_VERBOSE");
	return v && *v == '1';
}

/* The harness runs each test in a child: its parent (harness) names the run. */
static void matrix_path(char *dst, size_t cap, pid_t harness)
{
	snprintf(dst, cap, "/tmp/rlm-sandbox-matrix-%d.tsv", (int)harness);
}

/* In the harness process, at its exit (the test children _exit). */
static void remove_matrix(void)
{
	char path[128];
	matrix_path(path, sizeof(path), getpid());
	unlink(path);
}

/* Put the secret into the initial environment: setenv alone would not show
 * in /proc/PID/environ. Not under valgrind (the re-exec would leave it). */
__attribute__((constructor)) static void reexec_with_secret(int argc, char **argv, char **envp)
{
	const char *pre = getenv("LD_PRELOAD");
	(void)argc;
	(void)envp;
	if (getenv("RLM_TEST_SECRET") || (pre && strstr(pre, "vgpreload"))) {
		atexit(remove_matrix);
		return;
	}
	setenv("RLM_TEST_SECRET", secret, 1);
	execv("/proc/self/exe", argv);
	atexit(remove_matrix);
}

/* One line of text for the matrix: no tabs or newlines, at most 110 bytes. */
static void one_line(char *dst, size_t cap, const char *s)
{
	size_t n = 0;
	for (; s && *s && n + 1 < cap && n < 110; s++)
		dst[n++] = (*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s;
	dst[n] = '\0';
}

static void record(struct run *t, const char *attack, enum verdict v, const char *detail)
{
	char d[128];
	one_line(d, sizeof(d), detail);
	fprintf(t->matrix, "%s\t%d\t%s\t%s\n", attack, t->level, vname[v], d);
	fflush(t->matrix);
	if (v == V_HOLE || v == V_BROKEN) {
		t->fails++;
		fprintf(stderr, "  [%s] %s: %s: %s\n", levels[t->level].name, attack, vname[v], d);
	} else if (verbose()) {
		fprintf(stderr, "  [%s] %s: %s: %s\n", levels[t->level].name, attack, vname[v], d);
	}
}

/* ---- the worker ---- */

static const char ctx_text[] = "the context: nothing secret here\n";

static void cfg_level(struct repl_cfg *cfg, int level)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ctx.text = ctx_text;
	cfg->ctx.len = strlen(ctx_text);
	cfg->exec_timeout_ns = 10000 * MS;
	cfg->max_frame = 1 << 20;
	cfg->sandbox.disable = levels[level].disable;
	/* As root, identity off runs model code as root: only with unsafe;
	 * seccomp off only with unsafe, whoever we are. */
	cfg->sandbox.unsafe = (geteuid() == 0 && (levels[level].disable & L(REPL_L_IDENTITY))) ||
			      (levels[level].disable & L(REPL_L_SECCOMP));
	cfg->sandbox.scratch_limit = 64 << 20;
	cfg->no_zygote = levels[level].cold;
}

static struct repl *start(const struct repl_cfg *cfg)
{
	struct repl *r = NULL;
	struct rlm_err err = {0, ""};
	int rc = repl_start(cfg, &r, &err);
	CHECK_MSG(rc == 0, "repl_start: %d %s", rc, err.msg);
	CHECK(r != NULL);
	return r;
}

/* Run a cell; rc must be 0. Any output holding the secret is a hole. */
static void exec_cell(struct run *t, struct repl *r, const char *code, struct repl_result *res)
{
	struct rlm_err err = {0, ""};
	int rc = repl_exec(r, code, strlen(code), time_now_ns() + 60000 * MS, res, &err);
	CHECK_MSG(rc == 0, "repl_exec: %d %s (code: %.200s)", rc, err.msg, code);
	CHECK(res->output != NULL);
	if (t && strstr(res->output, secret))
		record(t, "secret in the output", V_HOLE, code);
}

static char *status_of(pid_t pid)
{
	char path[64];
	FILE *f;
	char *s;
	size_t n;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return xstrdup("");
	s = xmalloc(8192);
	n = fread(s, 1, 8191, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* The value of "Key:" in a /proc status text, up to the line's end. */
static void status_field(const char *st, const char *key, char *dst, size_t cap)
{
	char k[64];
	const char *p;
	size_t n = 0;
	snprintf(k, sizeof(k), "\n%s:", key);
	dst[0] = '\0';
	if (!(p = strstr(st, k)))
		return;
	p += strlen(k);
	while (*p == ' ' || *p == '\t')
		p++;
	while (*p && *p != '\n' && n + 1 < cap)
		dst[n++] = *p++;
	dst[n] = '\0';
}

static pid_t worker_pid(const struct repl *r)
{
	struct repl_stats s;
	repl_stats(r, &s);
	return s.pid;
}

/* The first line of out that starts with word, or NULL. */
static const char *line_with(const char *out, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, word, n) == 0)
			return p;
	return NULL;
}

/* Is the controller untouched: no SIGTERM arrived, no tracer attached? */
static bool controller_ok(char *why, size_t cap)
{
	char *st = status_of(getpid()), tracer[32];
	status_field(st, "TracerPid", tracer, sizeof(tracer));
	free(st);
	if (got_term) {
		snprintf(why, cap, "the controller received SIGTERM");
		got_term = 0;
		return false;
	}
	if (strcmp(tracer, "0") != 0) {
		snprintf(why, cap, "the controller is traced by pid %s", tracer);
		return false;
	}
	return true;
}

/* After an attack: the worker answers, and keeps its variables unless the
 * attack restarted it (then they are set again). */
static void followup(struct run *t, struct repl *r, const char *attack, bool restarted)
{
	struct repl_result res;
	const char *code = restarted ? "print(1+1); survivor = 42" : "print(1+1, survivor)";
	const char *want = restarted ? "2\n" : "2 42\n";
	char why[160];
	if (!controller_ok(why, sizeof(why)))
		record(t, attack, V_HOLE, why);
	exec_cell(t, r, code, &res);
	if (res.restarted || strcmp(res.output, want) != 0) {
		snprintf(why, sizeof(why), "follow-up after '%s': restarted %d, output '%.100s'",
			 attack, res.restarted, res.output);
		record(t, "follow-up", V_BROKEN, why);
	}
	repl_result_release(&res);
}

static const char prelude[] =
    "import os, errno, socket, ctypes, signal, struct, time\n"
    "_libc = ctypes.CDLL(None, use_errno=True)\n"
    "_libc.syscall.restype = ctypes.c_long\n"
    "_libc.ptrace.restype = ctypes.c_long\n"
    "_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, "
    "ctypes.c_void_p]\n"
    "_libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4\n"
    "_libc.unshare.argtypes = [ctypes.c_int]\n"
    "def _bl(e, more=''):\n"
    "    n = getattr(e, 'errno', None)\n"
    "    print('BLOCKED', type(e).__name__, errno.errorcode.get(n, n) if n else '', more)\n"
    "def _ce(r, what):\n"
    "    if r != -1:\n"
    "        return False\n"
    "    n = ctypes.get_errno()\n"
    "    print('BLOCKED', errno.errorcode.get(n, n), what)\n"
    "    return True\n";

/* Judge an attack cell. must_block: the active layers should stop it. */
static enum verdict judge(const struct repl_result *res, bool must_block, unsigned flags,
			  char *detail, size_t cap)
{
	const char *b = line_with(res->output, "BLOCKED");
	const char *e = line_with(res->output, "ESCAPED");
	if (e) {
		one_line(detail, cap, e);
		return must_block ? V_HOLE : V_ALLOWED;
	}
	if (res->restarted && (flags & A_RESTART_ESC)) {
		snprintf(detail, cap, "the worker was replaced: %.90s", res->output);
		return must_block ? V_HOLE : V_ALLOWED;
	}
	if (b && !res->restarted) {
		one_line(detail, cap, b);
		return V_BLOCKED;
	}
	if (b && !(flags & A_KEEP)) {
		one_line(detail, cap, b);
		return V_BLOCKED;
	}
	if (res->restarted && (flags & A_RESTART_OK)) {
		one_line(detail, cap, res->output);
		return V_CONTAINED;
	}
	snprintf(detail, cap, "no verdict (restarted %d): %.90s", res->restarted, res->output);
	return V_BROKEN;
}

typedef void post_fn(struct run *t, enum verdict *v, char *detail, size_t cap);

/* Run one hostile cell, judge it, let post look at the controller's side,
 * record, and check the worker still works. */
static void attack(struct run *t, const char *name, bool must_block, unsigned flags, post_fn *post,
		   const char *code)
{
	struct repl_result res;
	char detail[160], why[160];
	char *full = xasprintf("%s%s", prelude, code);
	enum verdict v;
	exec_cell(t, t->r, full, &res);
	free(full);
	v = judge(&res, must_block, flags, detail, sizeof(detail));
	if (post)
		post(t, &v, detail, sizeof(detail));
	if (!controller_ok(why, sizeof(why))) {
		v = V_HOLE;
		snprintf(detail, sizeof(detail), "%s", why);
	}
	record(t, name, v, detail);
	followup(t, t->r, name, res.restarted);
	repl_result_release(&res);
}

/* ---- checks from the controller's side ---- */

static int listener(int type, int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	if (type == SOCK_STREAM)
		CHECK(listen(fd, 8) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void post_tcp(struct run *t, enum verdict *v, char *detail, size_t cap)
{
	int c = accept4(t->tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c >= 0) {
		close(c);
		*v = V_HOLE;
		snprintf(detail, cap, "the test's listener on 127.0.0.1 accepted a connection");
	}
}

static void post_udp(struct run *t, enum verdict *v, char *detail, size_t cap)
{
	char b[16];
	if (recv(t->udp, b, sizeof(b), MSG_DONTWAIT) >= 0) {
		*v = V_HOLE;
		snprintf(detail, cap, "the test's UDP socket on 127.0.0.1 received a datagram");
	}
}

static void post_file(const char *path, enum verdict *v, char *detail, size_t cap)
{
	if (access(path, F_OK) == 0) {
		if (*v == V_BLOCKED || *v == V_BROKEN) {
			*v = V_HOLE;
			snprintf(detail, cap, "%s exists although the cell says blocked", path);
		}
		unlink(path);
	}
}

static void post_tmp(struct run *t, enum verdict *v, char *detail, size_t cap)
{
	post_file(t->evil_tmp, v, detail, cap);
}

static void post_shm(struct run *t, enum verdict *v, char *detail, size_t cap)
{
	post_file(t->evil_shm, v, detail, cap);
}

/* ---- the attacks ---- */

static bool world(const char *path, mode_t bits)
{
	struct stat s;
	return stat(path, &s) == 0 && (s.st_mode & bits) == bits;
}

/* The kernel's ptrace-mode checks (/proc/PID/mem, environ, fd/, ptrace,
 * process_vm_*) stop the worker at the controller: the worker is neither
 * root nor of the controller's uid, or it is of that uid and the
 * controller is not dumpable. */
static bool ptrace_walled(const struct run *t)
{
	return t->st.uid != 0 && (t->st.uid != t->ctl_uid || !t->dumpable);
}

/* kill(2)'s permission check stops the worker at a process of uid `to`. */
static bool signal_walled(const struct run *t, unsigned to)
{
	return t->st.uid != 0 && t->st.uid != to;
}

/* Landlock scopes signals to its domain from ABI 6 (and ptrace from 1). */
static bool ll_signals(const struct run *t)
{
	return t->st.on[REPL_L_LANDLOCK] && t->st.landlock_abi >= 6;
}

static void files_and_secrets(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	bool ll = st->on[REPL_L_LANDLOCK], mnt = st->on[REPL_L_MNTNS];
	bool unpriv = st->uid != 0;
	bool pidns = st->on[REPL_L_PIDNS] && mnt;
	/* The controller's /proc/PID/environ is 0400 and owned by root when we
	 * are root or not dumpable: an unprivileged worker cannot read it. */
	bool environ_closed = ll || pidns || ptrace_walled(t);
	char *code;

	attack(t, "read /etc/shadow", ll || (unpriv && !world("/etc/shadow", S_IROTH)), 0, NULL,
	       "try:\n"
	       "    open('/etc/shadow').read(1)\n"
	       "    print('ESCAPED read /etc/shadow')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "list /root", ll || (unpriv && !world("/root", S_IROTH | S_IXOTH)), 0, NULL,
	       "try:\n"
	       "    print('ESCAPED', len(os.listdir('/root')), 'entries in /root')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "read /proc/<ppid>/environ", environ_closed, 0, NULL,
	       "p = os.getppid()\n"
	       "try:\n"
	       "    d = open(f'/proc/{p}/environ', 'rb').read()\n"
	       "    print('ESCAPED read', len(d), 'bytes of pid', p, '(secret',\n"
	       "          'seen)' if b'RLM_TEST_SECRET' in d else 'not seen)')\n"
	       "except OSError as e:\n"
	       "    _bl(e, f'ppid {p}')\n");
	code = xasprintf("try:\n"
			 "    d = open('/proc/%d/environ', 'rb').read()\n"
			 "    print('ESCAPED read', len(d), 'bytes (secret',\n"
			 "          'seen)' if b'RLM_TEST_SECRET' in d else 'not seen)')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 (int)t->self);
	attack(t, "read /proc/<controller>/environ", environ_closed, 0, NULL, code);
	free(code);
	code = xasprintf("try:\n"
			 "    d = open('/proc/%d/cmdline', 'rb').read()\n"
			 "    print('ESCAPED read', len(d), 'bytes')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 (int)t->self);
	/* cmdline is world-readable: only Landlock or a pid namespace hide it. */
	attack(t, "read /proc/<controller>/cmdline", ll || pidns, 0, NULL, code);
	free(code);
	code = xasprintf("try:\n"
			 "    open('/proc/%d/mem', 'rb').close()\n"
			 "    print('ESCAPED opened the controller memory')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 (int)t->self);
	attack(t, "open /proc/<controller>/mem", ll || pidns || ptrace_walled(t), 0, NULL, code);
	free(code);
	/* Opened for writing and closed unwritten: proof enough. */
	attack(t, "open core_pattern for writing", ll || mnt || unpriv, 0, NULL,
	       "try:\n"
	       "    os.close(os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY))\n"
	       "    print('ESCAPED /proc/sys/kernel/core_pattern is writable')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "secret in its own environment", true, 0, NULL,
	       "e = dict(os.environ)\n"
	       "try:\n"
	       "    pe = open('/proc/self/environ', 'rb').read()\n"
	       "except OSError:\n"
	       "    pe = b''\n"
	       "if 'RLM_TEST_SECRET' in e or b'RLM_TEST_SECRET' in pe:\n"
	       "    print('ESCAPED the secret is in the worker environment')\n"
	       "else:\n"
	       "    print('BLOCKED scrubbed:', ','.join(sorted(e)))\n");
	code = xasprintf("try:\n"
			 "    with open('%s', 'w') as f:\n"
			 "        f.write('x')\n"
			 "    print('ESCAPED wrote %s')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 t->evil_tmp, t->evil_tmp);
	attack(t, "write /tmp (outside scratch)", ll || mnt || (unpriv && !world("/tmp", S_IWOTH)),
	       0, post_tmp, code);
	free(code);
	code = xasprintf("try:\n"
			 "    with open('%s', 'w') as f:\n"
			 "        f.write('x')\n"
			 "    print('ESCAPED wrote %s')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 t->evil_shm, t->evil_shm);
	attack(t, "write /dev/shm", ll || mnt || (unpriv && !world("/dev/shm", S_IWOTH)), 0,
	       post_shm, code);
	free(code);
}

/* ---- the scratch seen from here ---- */

/* Bytes in blocks under the directory dfd (closed here), not following
 * symlinks; depth-bounded only by the fd limit. */
static unsigned long long du_fd(int dfd, int depth)
{
	unsigned long long sum = 0;
	struct dirent *e;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat s;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		sum += (unsigned long long)s.st_blocks * 512;
		if (S_ISDIR(s.st_mode) && depth < 400) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				sum += du_fd(fd, depth + 1);
		}
	}
	closedir(d);
	return sum;
}

static unsigned long long du(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? 0 : du_fd(fd, 0);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DNR)
		chmod(p, 0700);
	remove(p);
	return 0;
}

/* rm -rf that follows no symlink (the tree may be the worker's). */
static void rm_rf(const char *path)
{
	chmod(path, 0700);
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	rmdir(path);
}

/* The worker's scratch directory (its cwd, the same path outside in every
 * mode), into dst; "" when the worker does not say. */
static void scratch_of(struct run *t, struct repl *r, char *dst, size_t cap)
{
	struct repl_result res;
	exec_cell(t, r, "import os\nprint(os.getcwd(), end='')\n", &res);
	snprintf(dst, cap, "%s", res.restarted || res.error ? "" : res.output);
	repl_result_release(&res);
}

/* The directory a scratch lies in when it is one of ours (the 0711 outer
 * directory rlm-repl-PID-XXXXXX), else "". */
static void scratch_outer(const char *scratch, char *dst, size_t cap)
{
	const char *slash = strrchr(scratch, '/'), *prev;
	dst[0] = '\0';
	if (!slash || slash == scratch)
		return;
	for (prev = slash - 1; prev > scratch && *prev != '/'; prev--)
		;
	if (strncmp(prev + 1, "rlm-repl-", 9) == 0)
		snprintf(dst, cap, "%.*s", (int)(slash - scratch), scratch);
}

/* Samples the size of a scratch directory every 2 ms, from here: what
 * reached the disk whatever the worker says (and whether it lives). */
struct monitor {
	pthread_t th;
	const char *dir;
	atomic_bool stop;
	unsigned long long max;
};

static void *monitor_main(void *arg)
{
	struct monitor *m = arg;
	while (!atomic_load(&m->stop)) {
		unsigned long long n = du(m->dir);
		if (n > m->max)
			m->max = n;
		time_sleep_ns(2 * MS);
	}
	return NULL;
}

/* 400 MB into the scratch, in 16 MiB files (each under RLIMIT_FSIZE): the
 * tmpfs fills (ENOSPC), or, in a plain directory, the controller's quota
 * check restarts the worker. A check only after the exec lets the whole
 * 400 MB reach the disk first: what the monitor saw must stay under 4 x
 * the limit (the check must run during the exec). When it is stopped,
 * the cell removes its files, as the model's own cleanup would; when it
 * is not, they stay for the quota check. */
static void fill_disk(struct run *t)
{
	struct repl_result res;
	struct monitor m;
	char detail[160], dir[512];
	enum verdict v;
	unsigned long long lim = 64ull << 20;
	bool plain = !t->st.scratch_tmpfs;
	char *code = xasprintf("%s"
			       "n = 0\n"
			       "try:\n"
			       "    for i in range(25):\n"
			       "        with open(f'fill{i}', 'wb') as f:\n"
			       "            for j in range(16):\n"
			       "                f.write(b'\\0' * (1 << 20))\n"
			       "        n += 16\n"
			       "    print('ESCAPED wrote', n, 'MiB')\n"
			       "except OSError as e:\n"
			       "    _bl(e, f'after {n} MiB')\n"
			       "    for i in range(25):\n"
			       "        try:\n"
			       "            os.remove(f'fill{i}')\n"
			       "        except OSError:\n"
			       "            pass\n",
			       prelude);
	scratch_of(t, t->r, dir, sizeof(dir));
	memset(&m, 0, sizeof(m));
	m.dir = dir;
	atomic_init(&m.stop, false);
	if (plain && dir[0])
		CHECK(pthread_create(&m.th, NULL, monitor_main, &m) == 0);
	exec_cell(t, t->r, code, &res);
	free(code);
	if (plain && dir[0]) {
		atomic_store(&m.stop, true);
		pthread_join(m.th, NULL);
	}
	if (res.restarted && strstr(res.output, "REPL was restarted")) {
		v = V_CONTAINED;
		one_line(detail, sizeof(detail), res.output);
	} else {
		/* An exec that wrote 400 MB without a restart is a hole. */
		v = judge(&res, true, 0, detail, sizeof(detail));
	}
	if (plain && !dir[0]) {
		v = V_BROKEN;
		snprintf(detail, sizeof(detail), "the worker did not say where its scratch is");
	} else if (plain && m.max >= 4 * lim && v != V_BROKEN) {
		v = V_HOLE;
		snprintf(detail, sizeof(detail),
			 "%.1f MB reached the disk against a limit of %llu MB before the worker "
			 "was stopped (restarted %d)",
			 (double)m.max / 1048576.0, lim >> 20, res.restarted);
	} else if (plain) {
		char d2[320];
		snprintf(d2, sizeof(d2), "at most %.1f MB on disk; %s", (double)m.max / 1048576.0,
			 detail);
		one_line(detail, sizeof(detail), d2);
	}
	record(t, "fill the disk (400 MB, 64 MB limit)", v, detail);
	followup(t, t->r, "fill the disk", res.restarted);
	repl_result_release(&res);
	/* The scratch is usable again. */
	exec_cell(t, t->r,
		  "import os\nwith open('after_fill', 'w') as f:\n    f.write('ok')\n"
		  "print(open('after_fill').read()); os.remove('after_fill')",
		  &res);
	if (strcmp(res.output, "ok\n") != 0)
		record(t, "scratch after the fill", V_BROKEN, res.output);
	repl_result_release(&res);
}

static void processes(struct run *t)
{
	bool sc = t->st.on[REPL_L_SECCOMP];
	/* Without seccomp nothing stops fork: one child, which exits at once,
	 * is proof enough and harms nothing. */
	if (!sc)
		attack(t, "fork bomb (os.fork loop)", sc, 0, NULL,
		       "try:\n"
		       "    pid = os.fork()\n"
		       "    if pid == 0:\n"
		       "        os._exit(0)\n"
		       "    os.waitpid(pid, 0)\n"
		       "    print('ESCAPED forked once (a single fork without seccomp)')\n"
		       "except OSError as e:\n"
		       "    _bl(e, 'on the first fork')\n");
	else
		attack(t, "fork bomb (os.fork loop)", sc, 0, NULL,
		       "n = 0\n"
		       "try:\n"
		       "    for i in range(50):\n"
		       "        pid = os.fork()\n"
		       "        if pid == 0:\n"
		       "            os._exit(0)\n"
		       "        os.waitpid(pid, 0)\n"
		       "        n += 1\n"
		       "    print('ESCAPED forked', n)\n"
		       "except OSError as e:\n"
		       "    if n:\n"
		       "        print('ESCAPED forked', n, 'then', e)\n"
		       "    else:\n"
		       "        _bl(e, 'on the first fork')\n");
	attack(t, "subprocess.run", sc, 0, NULL,
	       "import subprocess\n"
	       "try:\n"
	       "    r = subprocess.run(['/bin/echo', 'hi'], capture_output=True)\n"
	       "    print('ESCAPED subprocess ran, rc', r.returncode)\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "os.system", sc, 0, NULL,
	       "try:\n"
	       "    rc = os.system('echo x > sysmark')\n"
	       "    if rc == 0 or os.path.exists('sysmark'):\n"
	       "        print('ESCAPED os.system ran, rc', rc)\n"
	       "    else:\n"
	       "        print('BLOCKED os.system returned', rc)\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "os.posix_spawn", sc, 0, NULL,
	       "try:\n"
	       "    pid = os.posix_spawn('/bin/true', ['true'], {})\n"
	       "    os.waitpid(pid, 0)\n"
	       "    print('ESCAPED spawned', pid)\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "os.execv (replace the REPL)", sc, A_RESTART_ESC | A_KEEP, NULL,
	       "try:\n"
	       "    os.execv('/bin/sh', ['sh', '-c', 'exit 0'])\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "unshare(CLONE_NEWUSER)", sc, 0, NULL,
	       "if not _ce(_libc.unshare(0x10000000), 'unshare'):\n"
	       "    print('ESCAPED unshare(CLONE_NEWUSER) worked')\n");
	attack(t, "setuid(0)", sc || t->st.uid != 0, 0, NULL,
	       "try:\n"
	       "    os.setuid(0)\n"
	       "    print('ESCAPED setuid(0) worked')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "mount tmpfs", sc || t->st.uid != 0, 0, NULL,
	       "_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]\n"
	       "if not _ce(_libc.mount(b'none', b'.', b'tmpfs', 0, None), 'mount'):\n"
	       "    _libc.umount2(b'.', 2)\n"
	       "    print('ESCAPED mounted a tmpfs')\n");
}

static void sockets(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	bool sc = st->on[REPL_L_SECCOMP], net = st->on[REPL_L_NETNS];
	bool ll_tcp = st->on[REPL_L_LANDLOCK] && st->landlock_abi >= 4;
	char *code;
	code = xasprintf("try:\n"
			 "    s = socket.socket()\n"
			 "    s.settimeout(2)\n"
			 "    s.connect(('127.0.0.1', %d))\n"
			 "    print('ESCAPED connected to the test listener')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 t->tcp_port);
	attack(t, "TCP connect 127.0.0.1", sc || net || ll_tcp, 0, post_tcp, code);
	free(code);
	code = xasprintf("try:\n"
			 "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
			 "    s.sendto(b'x', ('127.0.0.1', %d))\n"
			 "    print('ESCAPED sent a datagram')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 t->udp_port);
	attack(t, "UDP sendto 127.0.0.1", sc || net, 0, post_udp, code);
	free(code);
	attack(t, "AF_UNIX socket", sc, 0, NULL,
	       "try:\n"
	       "    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
	       "    print('ESCAPED AF_UNIX socket')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "AF_UNIX socketpair", sc, 0, NULL,
	       "try:\n"
	       "    a, b = socket.socketpair()\n"
	       "    print('ESCAPED socketpair')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "AF_VSOCK socket", sc, 0, NULL,
	       "try:\n"
	       "    socket.socket(40, socket.SOCK_STREAM).close()\n"
	       "    print('ESCAPED AF_VSOCK socket')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	attack(t, "AF_NETLINK socket", sc, 0, NULL,
	       "try:\n"
	       "    socket.socket(16, socket.SOCK_RAW, 0).close()\n"
	       "    print('ESCAPED AF_NETLINK socket')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	/* getaddrinfo fails offline with or without a sandbox: the row looks
	 * at the cause. A UDP socket must be refused (seccomp: EPERM), or its
	 * query must not leave (an empty netns: ENETUNREACH); the query goes
	 * to the test's UDP socket, playing the resolver, which must hear
	 * nothing. getaddrinfo's own error is reported alongside. */
	code = xasprintf(
	    "q = bytes.fromhex('123401000001000000000000076578616d706c6503636f6d0000010001')\n"
	    "cause = None\n"
	    "try:\n"
	    "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	    "except OSError as e:\n"
	    "    cause = ('socket()', e.errno)\n"
	    "else:\n"
	    "    try:\n"
	    "        s.sendto(q, ('127.0.0.1', %d))\n"
	    "        print('ESCAPED a DNS query left the worker (to the test resolver)')\n"
	    "    except OSError as e:\n"
	    "        cause = ('sendto', e.errno)\n"
	    "    s.close()\n"
	    "try:\n"
	    "    r = socket.getaddrinfo('example.com', 80)\n"
	    "    print('ESCAPED resolved', r[0][4])\n"
	    "    gai = 'resolved'\n"
	    "except OSError as e:\n"
	    "    gai = f'{type(e).__name__} {e.errno} {e.strerror}'\n"
	    "ok = (errno.EPERM, errno.EACCES, errno.ENETUNREACH, errno.ENETDOWN)\n"
	    "if cause and cause[1] in ok:\n"
	    "    print('BLOCKED', cause[0], errno.errorcode[cause[1]], '; getaddrinfo:', gai)\n"
	    "else:\n"
	    "    print('UNPROVEN the cause is not the sandbox:', cause, gai)\n",
	    t->udp_port);
	attack(t, "DNS: socket refused, no query leaves", sc || net, 0, post_udp, code);
	free(code);
	attack(t, "io_uring_setup", sc, 0, NULL,
	       "p = ctypes.create_string_buffer(120)\n"
	       "fd = _libc.syscall(ctypes.c_long(425), ctypes.c_long(1), p)\n"
	       "if not _ce(fd, 'io_uring_setup'):\n"
	       "    os.close(fd)\n"
	       "    print('ESCAPED io_uring fd', fd)\n");
}

static void controller(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	bool sc = st->on[REPL_L_SECCOMP], ll = st->on[REPL_L_LANDLOCK];
	bool pidns = st->on[REPL_L_PIDNS];
	bool ptr = sc || pidns || ll || ptrace_walled(t);
	bool sig = sc || pidns || ll_signals(t) || signal_walled(t, t->ctl_uid);
	char *code;
	/* An attached tracer is detached again, so that a hole does not
	 * leave this process stopped. */
	code = xasprintf("r = _libc.ptrace(16, %d, None, None)\n"
			 "if not _ce(r, 'ptrace(ATTACH)'):\n"
			 "    os.waitpid(%d, 0x40000000)\n"
			 "    _libc.ptrace(17, %d, None, None)\n"
			 "    print('ESCAPED attached to the controller')\n",
			 (int)t->self, (int)t->self, (int)t->self);
	attack(t, "ptrace(ATTACH) the controller", ptr, 0, NULL, code);
	free(code);
	code = xasprintf("class V(ctypes.Structure):\n"
			 "    _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]\n"
			 "buf = ctypes.create_string_buffer(64)\n"
			 "lo = V(ctypes.addressof(buf), 64)\n"
			 "ro = V(0x400000, 64)\n"
			 "_libc.process_vm_readv.restype = ctypes.c_ssize_t\n"
			 "r = _libc.process_vm_readv(%d, ctypes.byref(lo), 1,\n"
			 "                           ctypes.byref(ro), 1, 0)\n"
			 "if r == -1 and ctypes.get_errno() == errno.EFAULT:\n"
			 "    print('ESCAPED process_vm_readv reached the controller (EFAULT)')\n"
			 "elif not _ce(r, 'process_vm_readv'):\n"
			 "    print('ESCAPED process_vm_readv read', r)\n",
			 (int)t->self);
	attack(t, "process_vm_readv the controller", ptr, 0, NULL, code);
	free(code);
	code = xasprintf("try:\n"
			 "    os.kill(%d, 0)\n"
			 "    print('ESCAPED kill(controller, 0)')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 (int)t->self);
	attack(t, "kill(controller, 0)", sig, 0, NULL, code);
	free(code);
	code = xasprintf("try:\n"
			 "    os.kill(%d, signal.SIGTERM)\n"
			 "    print('ESCAPED SIGTERM sent to the controller')\n"
			 "except OSError as e:\n"
			 "    _bl(e)\n",
			 (int)t->self);
	attack(t, "kill(controller, SIGTERM)", sig, 0, NULL, code);
	free(code);
	code = xasprintf("si = ctypes.create_string_buffer(struct.pack('<iii', 15, 0, -1), 128)\n"
			 "C = ctypes.c_long\n"
			 "r1 = _libc.syscall(C(129), C(%d), C(15), si)\n"
			 "e1 = ctypes.get_errno()\n"
			 "r2 = _libc.syscall(C(200), C(%d), C(15))\n"
			 "e2 = ctypes.get_errno()\n"
			 "if r1 == 0 or r2 == 0:\n"
			 "    print('ESCAPED rt_sigqueueinfo', r1, 'tkill', r2)\n"
			 "else:\n"
			 "    print('BLOCKED rt_sigqueueinfo', errno.errorcode.get(e1),\n"
			 "          'tkill', errno.errorcode.get(e2))\n",
			 (int)t->self, (int)t->self);
	attack(t, "rt_sigqueueinfo/tkill(controller)", sig, 0, NULL, code);
	free(code);
	attack(t, "kill(-1, 0)", sc || pidns || ll_signals(t), 0, NULL,
	       "try:\n"
	       "    os.kill(-1, 0)\n"
	       "    print('ESCAPED kill(-1, 0) found processes to signal')\n"
	       "except OSError as e:\n"
	       "    _bl(e)\n");
	/* getppid() is 0 in a pid namespace: kill(0) would be its own group. */
	attack(t, "kill(getppid(), SIGTERM)", sig, 0, NULL,
	       "p = os.getppid()\n"
	       "if p == 0:\n"
	       "    print('BLOCKED no parent in sight (getppid() is 0)')\n"
	       "else:\n"
	       "    try:\n"
	       "        os.kill(p, signal.SIGTERM)\n"
	       "        print('ESCAPED SIGTERM sent to', p)\n"
	       "    except OSError as e:\n"
	       "        _bl(e)\n");
}

/* Tricks to loosen the filters: none may let a socket through. A stacked
 * filter that allows everything is legal and changes nothing; strict mode,
 * if it went in, kills the worker at its next system call. */
static void filter_tricks(struct run *t)
{
	bool sc = t->st.on[REPL_L_SECCOMP];
	attack(t, "prctl: drop seccomp/no_new_privs, allow-all", sc, 0, NULL,
	       "r1 = _libc.prctl(22, 0, 0, 0, 0)\n"
	       "r2 = _libc.prctl(38, 0, 0, 0, 0)\n"
	       "ins = ctypes.create_string_buffer(struct.pack('<HBBI', 6, 0, 0, 0x7fff0000))\n"
	       "class P(ctypes.Structure):\n"
	       "    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]\n"
	       "p = P(1, ctypes.addressof(ins))\n"
	       "r3 = _libc.prctl(22, 2, ctypes.addressof(p), 0, 0)\n"
	       "try:\n"
	       "    socket.socket().close()\n"
	       "    print('ESCAPED a socket after prctl', r1, r2, r3)\n"
	       "except OSError as e:\n"
	       "    _bl(e, f'(prctl gave {r1} {r2} {r3})')\n");
	attack(t, "seccomp(SET_MODE_STRICT)", sc, A_RESTART_OK, NULL,
	       "r = _libc.syscall(ctypes.c_long(317), ctypes.c_long(0), ctypes.c_long(0), None)\n"
	       "try:\n"
	       "    socket.socket().close()\n"
	       "    print('ESCAPED a socket after seccomp(STRICT)', r)\n"
	       "except OSError as e:\n"
	       "    _bl(e, f'(seccomp gave {r})')\n");
	/* Kernel attack surface, called so as to do nothing when reached
	 * (bad pointers, bad fds): reached is any answer but EPERM or ENOSYS. */
	attack(t, "kernel surface: bpf, perf, uffd, keyctl, +25", sc, 0, NULL,
	       "C = ctypes.c_long\n"
	       "calls = {'bpf': (321, 0, 0, 0), 'perf_event_open': (298, 0, 0, -1, -1, 0),\n"
	       "    'userfaultfd': (323, 0), 'keyctl': (250, 0, -3, 0),\n"
	       "    'request_key': (249, 0, 0, 0, 0), 'add_key': (248, 0, 0, 0, 0, 0),\n"
	       "    'open_by_handle_at': (304, -1, 0, 0),\n"
	       "    'name_to_handle_at': (303, -1, 0, 0, 0, 0),\n"
	       "    'setns': (308, -1, 0), 'pivot_root': (155, 0, 0), 'chroot': (161, 0),\n"
	       "    'fsopen': (430, 0, 0), 'open_tree': (428, -1, 0, 0),\n"
	       "    'mount_setattr': (442, -1, 0, 0, 0, 0),\n"
	       "    'iopl': (172, 4), 'ioperm': (173, 0, 0, 0), 'init_module': (175, 0, 0, 0),\n"
	       "    'process_madvise': (440, -1, 0, 0, 0, 0), 'pidfd_open': (434, 1, 0),\n"
	       "    'pidfd_getfd': (438, -1, 0, 0), 'kcmp': (312, 1, 1, 0, 0, 0),\n"
	       "    'personality': (135, 0x0040000), 'acct': (163, 0), 'swapoff': (168, 0),\n"
	       "    'quotactl': (179, 0, 0, 0, 0), 'lookup_dcookie': (212, 0, 0, 0),\n"
	       "    'fanotify_init': (300, 0, 0), 'memfd_secret': (447, 0), 'vhangup': (153,)}\n"
	       "reached = []\n"
	       "for name, a in calls.items():\n"
	       "    r = _libc.syscall(*[C(x) for x in a])\n"
	       "    n = ctypes.get_errno()\n"
	       "    fds = ('userfaultfd', 'fanotify_init', 'memfd_secret', 'pidfd_open')\n"
	       "    if r >= 0 and name in fds:\n"
	       "        os.close(r)\n"
	       "    if r >= 0 or n not in (errno.EPERM, errno.ENOSYS):\n"
	       "        reached.append(f'{name}={r}/{errno.errorcode.get(n, n)}')\n"
	       "if reached:\n"
	       "    print('ESCAPED reached', ' '.join(reached))\n"
	       "else:\n"
	       "    print('BLOCKED all', len(calls), 'with EPERM or ENOSYS')\n");
	/* The context memfd is reused for every restart: sealed, it must not
	 * take a write, whatever the route. */
	attack(t, "tamper with the context memfd (fd 5)", true, 0, NULL,
	       "import mmap, fcntl\n"
	       "got = []\n"
	       "def tryit(name, f):\n"
	       "    try:\n"
	       "        f()\n"
	       "        got.append(name)\n"
	       "    except (OSError, ValueError, TypeError):\n"
	       "        pass\n"
	       "tryit('write', lambda: os.write(5, b'X'))\n"
	       "tryit('pwrite', lambda: os.pwrite(5, b'X', 0))\n"
	       "tryit('ftruncate', lambda: os.ftruncate(5, 0))\n"
	       "tryit('mmap shared write',\n"
	       "      lambda: mmap.mmap(5, 0, mmap.MAP_SHARED, mmap.PROT_WRITE))\n"
	       "def reopen():\n"
	       "    fd = os.open('/proc/self/fd/5', os.O_RDWR)\n"
	       "    try:\n"
	       "        os.pwrite(fd, b'X', 0)\n"
	       "    finally:\n"
	       "        os.close(fd)\n"
	       "tryit('reopen rw + pwrite', reopen)\n"
	       "tryit('unseal', lambda: fcntl.fcntl(5, 1033, 0))\n"
	       "if got:\n"
	       "    print('ESCAPED the memfd took', ', '.join(got))\n"
	       "else:\n"
	       "    print('BLOCKED no write reached the sealed context')\n");
	/* i386 getpid through int 0x80 from an executable page: a foreign
	 * architecture, which the filter must kill (or refuse). */
	attack(t, "i386 int 0x80", sc, A_RESTART_OK, NULL,
	       "import mmap\n"
	       "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
	       "m.write(b'\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3')\n"
	       "a = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
	       "f = ctypes.CFUNCTYPE(ctypes.c_int)(a)\n"
	       "r = f()\n"
	       "if r < 0:\n"
	       "    print('BLOCKED int 0x80 getpid gave', r)\n"
	       "else:\n"
	       "    print('ESCAPED int 0x80 getpid gave', r)\n");
}

/* The worker as seen from here: its identity, capabilities and filters. */
static void worker_status(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	char *s = status_of(worker_pid(t->r));
	char uid[64], cap[64], sc[16], nf[16], nnp[16], d[160];
	bool unpriv_want = st->on[REPL_L_IDENTITY] || st->on[REPL_L_USERNS] || getuid() != 0;
	status_field(s, "Uid", uid, sizeof(uid));
	status_field(s, "CapEff", cap, sizeof(cap));
	status_field(s, "Seccomp", sc, sizeof(sc));
	status_field(s, "Seccomp_filters", nf, sizeof(nf));
	status_field(s, "NoNewPrivs", nnp, sizeof(nnp));
	free(s);
	snprintf(d, sizeof(d), "Uid %s", uid);
	if (strncmp(uid, "0\t", 2) == 0 || strncmp(uid, "0 ", 2) == 0 || !uid[0])
		record(t, "worker uid != 0", unpriv_want ? V_HOLE : V_ALLOWED, d);
	else
		record(t, "worker uid != 0", V_BLOCKED, d);
	snprintf(d, sizeof(d), "CapEff %s", cap);
	if (strspn(cap, "0") != strlen(cap) || !cap[0])
		record(t, "worker has no capabilities", unpriv_want ? V_HOLE : V_ALLOWED, d);
	else
		record(t, "worker has no capabilities", V_BLOCKED, d);
	snprintf(d, sizeof(d), "Seccomp %s, Seccomp_filters %s, NoNewPrivs %s (status says %d)", sc,
		 nf, nnp, st->seccomp_filters);
	if (!st->on[REPL_L_SECCOMP])
		record(t, "seccomp filters >= 2, no_new_privs", V_ALLOWED, d);
	else if (strcmp(sc, "2") != 0 || atoi(nf) < 2 || strcmp(nnp, "1") != 0 ||
		 st->seccomp_filters < 2)
		record(t, "seccomp filters >= 2, no_new_privs", V_HOLE, d);
	else
		record(t, "seccomp filters >= 2, no_new_privs", V_BLOCKED, d);
	snprintf(d, sizeof(d), "PR_GET_DUMPABLE %d", t->dumpable);
	record(t, "controller not dumpable", t->dumpable ? V_BROKEN : V_BLOCKED, d);
}

static void resources(struct run *t)
{
	struct repl_result res;
	char d[160];
	/* Memory: without RLIMIT_AS the bomb would really take 4 GB. */
	if (t->st.on[REPL_L_RLIMITS])
		attack(t, "memory bomb 'a' * 4 GiB", true, A_KEEP, NULL,
		       "try:\n"
		       "    x = 'a' * (4 << 30)\n"
		       "    print('ESCAPED allocated', len(x))\n"
		       "    del x\n"
		       "except MemoryError as e:\n"
		       "    print('BLOCKED MemoryError')\n");
	else
		record(t, "memory bomb 'a' * 4 GiB", V_SKIPPED, "rlimits are off");
	if (t->st.on[REPL_L_RLIMITS])
		attack(t, "1000 x open()", true, A_KEEP, NULL,
		       "fs = []\n"
		       "try:\n"
		       "    for i in range(1000):\n"
		       "        fs.append(open('/dev/null'))\n"
		       "    print('ESCAPED opened 1000 files')\n"
		       "except OSError as e:\n"
		       "    _bl(e, f'after {len(fs)}')\n"
		       "for f in fs:\n"
		       "    f.close()\n"
		       "del fs\n");
	/* Output flood: cut to the limit. */
	exec_cell(t, t->r, "import sys\nsys.stdout.write('x' * (50 << 20))\n", &res);
	snprintf(d, sizeof(d), "50 MiB printed: %zu bytes shown, output_chars %zu", res.len,
		 res.output_chars);
	record(t, "output flood (print 50 MB)",
	       res.len <= 20000 + 400 && res.output_chars >= (50u << 20) && !res.restarted
		   ? V_CONTAINED
		   : V_BROKEN,
	       d);
	followup(t, t->r, "output flood", res.restarted);
	repl_result_release(&res);
}

/* The worker breaks the protocol: killed and restarted, the controller fine. */
static void frames(struct run *t)
{
	static const struct {
		const char *name, *code, *want;
	} cases[] = {
	    {"forged frame (length 0xffffffff)",
	     "import os, time\nos.write(4, b'\\xff\\xff\\xff\\xff')\ntime.sleep(5)\n",
	     "broke the protocol"},
	    {"oversized frame (2 MiB, cap 1 MiB)",
	     "import os, time\n"
	     "b = b'{\"type\":\"result\",\"x\":\"' + b'y' * (2 << 20) + b'\"}'\n"
	     "os.write(4, len(b).to_bytes(4, 'big') + b)\ntime.sleep(5)\n",
	     "broke the protocol"},
	    {"garbage frame",
	     "import os, time\nos.write(4, b'\\x00\\x00\\x00\\x03abc')\n"
	     "time.sleep(5)\n",
	     "broke the protocol"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct repl_result res;
		int64_t t0 = time_now_ns();
		char d[160];
		bool ok;
		exec_cell(t, t->r, cases[i].code, &res);
		ok =
		    res.restarted && strstr(res.output, cases[i].want) && time_now_ns() - t0 < 4000 * MS;
		snprintf(d, sizeof(d), "%lld ms: %.100s", (long long)((time_now_ns() - t0) / MS),
			 res.output);
		record(t, cases[i].name, ok ? V_CONTAINED : V_BROKEN, d);
		followup(t, t->r, cases[i].name, res.restarted);
		repl_result_release(&res);
	}
}

/* The handler for llm_query: echo, slowly for "slow". */
static void echo_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	(void)arg;
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->prompts[i], "slow") == 0)
			time_sleep_ns(300 * MS);
		texts[i] = xasprintf("echo:%s", c->prompts[i]);
		errors[i] = false;
	}
}

static void kill_self_mid_call(struct run *t)
{
	struct repl_result res;
	char d[160];
	bool ok;
	exec_cell(t, t->r,
		  "import os, threading, time\n"
		  "def _q():\n"
		  "    try:\n"
		  "        llm_query('slow')\n"
		  "    except BaseException:\n"
		  "        pass\n"
		  "threading.Thread(target=_q, daemon=True).start()\n"
		  "time.sleep(0.1)\n"
		  "os.kill(os.getpid(), 9)\n"
		  "time.sleep(0.5)\n"
		  "os._exit(9)\n",
		  &res);
	ok = res.restarted && res.error && strstr(res.output, "REPL was restarted") &&
	     strstr(res.output, "variables are gone");
	one_line(d, sizeof(d), res.output);
	record(t, "worker kills itself mid-call", ok ? V_CONTAINED : V_BROKEN, d);
	followup(t, t->r, "kill itself", res.restarted);
	repl_result_release(&res);
}

/* Timeouts on a worker with a 0.5 s limit: a Python loop is interrupted
 * (state kept); loops that ignore SIGINT or sit in C are killed. */
static void timeouts(struct run *t)
{
	static const struct {
		const char *name, *code;
		bool kill;
	} cases[] = {
	    {"infinite Python loop (0.5 s limit)", "while True:\n    pass\n", false},
	    {"loop ignoring SIGINT",
	     "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
	     "while True:\n    pass\n",
	     true},
	    {"C-level loop sum(range(10**14))", "sum(range(10**14))\n", true},
	};
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	cfg_level(&cfg, t->level);
	cfg.exec_timeout_ns = 500 * MS;
	cfg.grace_ns = 200 * MS;
	r = start(&cfg);
	exec_cell(t, r, "survivor = 42", &res);
	repl_result_release(&res);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t t0 = time_now_ns(), ms;
		char d[160];
		bool ok;
		exec_cell(t, r, cases[i].code, &res);
		ms = (time_now_ns() - t0) / MS;
		if (cases[i].kill)
			ok = res.restarted && res.interrupted &&
			     strstr(res.output, "REPL was restarted") &&
			     strstr(res.output, "time limit of 0.5 s");
		else
			ok = res.interrupted && !res.restarted &&
			     strstr(res.output, "KeyboardInterrupt");
		ok = ok && ms < 2000;
		snprintf(d, sizeof(d), "%lld ms: %.110s", (long long)ms, res.output);
		record(t, cases[i].name, ok ? V_CONTAINED : V_BROKEN, d);
		followup(t, r, cases[i].name, res.restarted);
		repl_result_release(&res);
	}
	repl_free(r);
}

/* Symlinks out of the scratch, a directory with mode 0, and enough data to
 * pass the quota of a plain directory: when the (root) controller empties
 * the scratch after the restart, and removes it at the end, it must not
 * follow them. */
static void scratch_symlinks(struct run *t)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	char victim[64], keep[96], d[160];
	char *code;
	FILE *f;
	bool intact;
	snprintf(victim, sizeof(victim), "/tmp/rlm-victim-%d", (int)t->self);
	snprintf(keep, sizeof(keep), "%s/keep", victim);
	mkdir(victim, 0755);
	CHECK((f = fopen(keep, "w")) != NULL);
	fputs("keep me\n", f);
	fclose(f);
	chmod(keep, 0644);
	cfg_level(&cfg, t->level);
	r = start(&cfg);
	code = xasprintf("import os\n"
			 "os.symlink('%s', 'dirlink')\n"
			 "os.symlink('%s', 'filelink')\n"
			 "os.mkdir('sub')\n"
			 "os.symlink('/', 'sub/root')\n"
			 "os.symlink('%s', 'sub/victim')\n"
			 "os.chmod('sub', 0)\n"
			 "try:\n"
			 "    for i in range(5):\n"
			 "        with open(f'big{i}', 'wb') as f:\n"
			 "            f.write(b'\\0' * (16 << 20))\n"
			 "except OSError:\n"
			 "    pass\n"
			 "print('planted')\n",
			 victim, keep, victim);
	exec_cell(t, r, code, &res);
	free(code);
	snprintf(d, sizeof(d), "restarted %d: %.120s", res.restarted, res.output);
	repl_result_release(&res);
	exec_cell(t, r, "print(1+1)", &res);
	repl_result_release(&res);
	repl_free(r);
	intact = access(keep, F_OK) == 0;
	record(t, "scratch symlinks vs the controller's cleanup", intact ? V_BLOCKED : V_HOLE,
	       intact ? d : "the controller followed a symlink: the file outside scratch is gone");
	unlink(keep);
	rmdir(victim);
}

/* Run a cell where the attack may leave the repl unusable (a restart that
 * fails): rc, and why in err; res always safe to read and release. */
static int exec_soft(struct run *t, struct repl *r, const char *code, struct repl_result *res,
		     char *why, size_t cap)
{
	struct rlm_err err = {0, ""};
	int rc;
	memset(res, 0, sizeof(*res));
	rc = repl_exec(r, code, strlen(code), time_now_ns() + 60000 * MS, res, &err);
	if (!res->output) {
		res->output = xstrdup("");
		res->len = 0;
	}
	if (rc < 0)
		snprintf(why, cap, "repl_exec: %d %s", rc, err.msg);
	else if (t && strstr(res->output, secret))
		record(t, "secret in the output", V_HOLE, code);
	return rc;
}

struct freer {
	struct repl *r;
	atomic_bool done;
};

static void *free_main(void *arg)
{
	struct freer *f = arg;
	repl_free(f->r);
	atomic_store(&f->done, true);
	return NULL;
}

/* repl_free, given at most ns: false when it has not returned by then
 * (it goes on in a thread of its own; its state is leaked). */
static bool free_within(struct repl *r, int64_t ns)
{
	struct freer *f = xmalloc(sizeof(*f));
	pthread_t th;
	int64_t end = time_now_ns() + ns;
	f->r = r;
	atomic_init(&f->done, false);
	CHECK(pthread_create(&th, NULL, free_main, f) == 0);
	while (!atomic_load(&f->done) && time_now_ns() < end)
		time_sleep_ns(5 * MS);
	if (!atomic_load(&f->done)) {
		pthread_detach(th);
		return false;
	}
	pthread_join(th, NULL);
	free(f);
	return true;
}

/* ---- a second worker, a sleeper ---- */

static const char w2_ctx_secret[] = "sk-rlmtest-w2ctx-8d41c0a95e27";
static const char w2_file_secret[] = "sk-rlmtest-w2file-3f6b7e0d12ac";

/* One attack from the first worker on the second: a secret of the second
 * in the output is a hole (allowed where nothing should stop it) whatever
 * the cell says; afterwards the second must live on, unrestarted, its
 * file intact. */
static void attack_w2(struct run *t, const char *name, bool must, const char *code, struct repl *r2,
		      pid_t pid2)
{
	struct repl_result res, r1;
	struct repl_stats s2;
	char d[160];
	const char *which;
	char *full = xasprintf("%s%s", prelude, code);
	enum verdict v;
	exec_cell(t, t->r, full, &r1);
	free(full);
	which = strstr(r1.output, w2_ctx_secret)    ? "its context"
		: strstr(r1.output, w2_file_secret) ? "its scratch file"
						    : NULL;
	if (which) {
		snprintf(d, sizeof(d), "the first worker printed the second's secret (%s)", which);
		v = must ? V_HOLE : V_ALLOWED;
	} else {
		v = judge(&r1, must, 0, d, sizeof(d));
	}
	exec_cell(NULL, r2, "print(open('w2secret.txt').read()[:7])", &res);
	repl_stats(r2, &s2);
	if (res.restarted || s2.pid != pid2 || strcmp(res.output, "W2FILE:\n") != 0) {
		snprintf(d, sizeof(d), "the second worker was hit: restarted %d, pid %d->%d: %.60s",
			 res.restarted, (int)pid2, (int)s2.pid, res.output);
		v = must ? V_HOLE : V_ALLOWED;
	}
	repl_result_release(&res);
	record(t, name, v, d);
	followup(t, t->r, name, r1.restarted);
	repl_result_release(&r1);
}

/* Two workers of one controller at once, at the same level: the first
 * (t->r) must not read the second's context or scratch, nor signal it. */
static void two_workers(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	bool ll = st->on[REPL_L_LANDLOCK], mnt = st->on[REPL_L_MNTNS];
	bool pidns = st->on[REPL_L_PIDNS], sc = st->on[REPL_L_SECCOMP];
	struct repl_cfg cfg;
	struct repl *r2;
	struct repl_result res;
	char ctx2[128], *code;
	pid_t pid2;
	snprintf(ctx2, sizeof(ctx2), "the second context: %s\n", w2_ctx_secret);
	cfg_level(&cfg, t->level);
	cfg.ctx.text = ctx2;
	cfg.ctx.len = strlen(ctx2);
	r2 = start(&cfg);
	pid2 = worker_pid(r2);
	code = xasprintf("with open('w2secret.txt', 'w') as f:\n"
			 "    f.write('W2FILE:%s')\n"
			 "print('ok')\n",
			 w2_file_secret);
	exec_cell(NULL, r2, code, &res);
	free(code);
	CHECK_MSG(strcmp(res.output, "ok\n") == 0, "second worker: %s", res.output);
	repl_result_release(&res);

	/* (a) Its /proc files: the context memfd, the environment (which
	 * names its scratch), its memory. The second makes itself not
	 * dumpable, so that they are root's; a root worker without Landlock
	 * or a pid namespace passes every ptrace check (unsafe level). */
	code = xasprintf("p = %d\n"
			 "got, miss = [], []\n"
			 "def rd(name):\n"
			 "    try:\n"
			 "        with open(f'/proc/{p}/{name}', 'rb') as f:\n"
			 "            d = f.read(4096)\n"
			 "        got.append(f'{name}: {len(d)} bytes {d[:90]!r}')\n"
			 "    except OSError as e:\n"
			 "        miss.append(f'{name} {errno.errorcode.get(e.errno, e.errno)}')\n"
			 "rd('fd/5')\n"
			 "rd('environ')\n"
			 "try:\n"
			 "    open(f'/proc/{p}/mem', 'rb').close()\n"
			 "    got.append('mem opened')\n"
			 "except OSError as e:\n"
			 "    miss.append(f'mem {errno.errorcode.get(e.errno, e.errno)}')\n"
			 "if got:\n"
			 "    print('ESCAPED', '; '.join(got))\n"
			 "else:\n"
			 "    print('BLOCKED', ', '.join(miss))\n",
			 (int)pid2);
	attack_w2(t, "2nd worker: /proc/<pid2>/fd/5, environ, mem", ll || pidns || st->uid != 0,
		  code, r2, pid2);
	free(code);

	/* (b) Its scratch: list the directory above ours, glob the usual
	 * names, read whatever is found (and through /proc/<pid2>/cwd). */
	code = xasprintf(
	    "import glob\n"
	    "me = os.path.realpath(os.getcwd())\n"
	    "parent = os.path.dirname(me)\n"
	    "base = os.path.dirname(parent)\n"
	    "cands, notes = set(), []\n"
	    "try:\n"
	    "    cands.update(os.path.join(parent, n) for n in os.listdir(parent))\n"
	    "    notes.append(f'listed {parent}')\n"
	    "except OSError as e:\n"
	    "    notes.append(f'list {parent}: {errno.errorcode.get(e.errno, e.errno)}')\n"
	    "for pat in ('/tmp/rlm-repl-*', '/tmp/rlm-repl-*/*', parent + '/*',\n"
	    "            base + '/rlm-repl-*', base + '/rlm-repl-*/*'):\n"
	    "    cands.update(glob.glob(pat))\n"
	    "cands.add('/proc/%d/cwd')\n"
	    "nread, hit = 0, None\n"
	    "for c in sorted(cands):\n"
	    "    try:\n"
	    "        if os.path.realpath(c) == me:\n"
	    "            continue\n"
	    "        names = os.listdir(c)\n"
	    "    except OSError:\n"
	    "        continue\n"
	    "    for n in names:\n"
	    "        try:\n"
	    "            with open(os.path.join(c, n), 'rb') as f:\n"
	    "                data = f.read(200)\n"
	    "        except OSError:\n"
	    "            continue\n"
	    "        nread += 1\n"
	    "        if data.startswith(b'W2FILE:'):\n"
	    "            hit = (os.path.join(c, n), data)\n"
	    "if hit:\n"
	    "    print('ESCAPED read', hit[0], hit[1][:60])\n"
	    "else:\n"
	    "    print('BLOCKED', len(cands), 'candidates,', nread, 'other files read;',\n"
	    "          '; '.join(notes))\n",
	    (int)pid2);
	/* Another worker's tmpfs is in its own mount namespace; Landlock
	 * allows only our scratch; as nobody, the controller's 0711
	 * directory above each scratch and its random name are the wall.
	 * A worker of the controller's own uid owns those directories:
	 * without Landlock or a mount namespace nothing separates two
	 * workers of one user (nor a root worker from anything). */
	attack_w2(t, "2nd worker: find and read its scratch",
		  ll || mnt || signal_walled(t, t->ctl_uid), code, r2, pid2);
	free(code);

	/* (c) Signal it: seccomp allows signals to itself only; a pid
	 * namespace hides it; Landlock scopes signals. */
	code = xasprintf(
	    "p = %d\n"
	    "done, miss = [], []\n"
	    "for sig in (0, signal.SIGKILL):\n"
	    "    try:\n"
	    "        os.kill(p, sig)\n"
	    "        done.append(f'kill({sig})')\n"
	    "    except OSError as e:\n"
	    "        miss.append(f'kill({sig}) {errno.errorcode.get(e.errno, e.errno)}')\n"
	    "r = _libc.syscall(ctypes.c_long(234), ctypes.c_long(p), ctypes.c_long(p),\n"
	    "                  ctypes.c_long(9))\n"
	    "if r == 0:\n"
	    "    done.append('tgkill(9)')\n"
	    "else:\n"
	    "    miss.append('tgkill ' + str(errno.errorcode.get(ctypes.get_errno())))\n"
	    "if done:\n"
	    "    print('ESCAPED', ', '.join(done))\n"
	    "else:\n"
	    "    print('BLOCKED', ', '.join(miss))\n",
	    (int)pid2);
	attack_w2(t, "2nd worker: signal it (kill, tgkill)", sc || pidns || ll_signals(t), code, r2,
		  pid2);
	free(code);
	repl_free(r2);
}

/* A `sleep 30` of the given uid (when we are root), in its own process
 * group, killed with us. */
static pid_t sleeper(unsigned uid)
{
	static char a0[] = "sleep", a1[] = "30";
	char *const argv[] = {a0, a1, NULL};
	char exe[64], path[64];
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		setpgid(0, 0);
		if (geteuid() == 0 && uid != 0 &&
		    (syscall(SYS_setgroups, 0, NULL) < 0 ||
		     syscall(SYS_setresgid, uid, uid, uid) < 0 ||
		     syscall(SYS_setresuid, uid, uid, uid) < 0))
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		execv("/bin/sleep", argv);
		_exit(127);
	}
	/* Wait until it is sleep, under its uid: a sleeper that never was
	 * must not pass for one that an attack killed. */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p);
	exe[0] = '\0';
	for (int i = 0; i < 500 && !strstr(exe, "sleep"); i++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		if (!strstr(exe, "sleep"))
			time_sleep_ns(2 * MS);
	}
	CHECK_MSG(strstr(exe, "sleep") != NULL, "the sleeper %d did not start: exe '%s'", (int)p,
		  exe);
	return p;
}

/* F_SETOWN + F_SETSIG + O_ASYNC on a pipe, then a write: the kernel sends
 * the signal to the owner, past any filter on kill(2). The cell arms what
 * it can and says BLOCKED; whether the signal arrived is checked here. */
static char *sigio_cell(int target, int sig)
{
	return xasprintf(
	    "import fcntl\n"
	    "F_SETSIG, F_SETOWN_EX = 10, 15\n"
	    "steps = []\n"
	    "def st(name, f):\n"
	    "    try:\n"
	    "        f()\n"
	    "        steps.append(name)\n"
	    "        return True\n"
	    "    except OSError as e:\n"
	    "        steps.append(f'{name}:{errno.errorcode.get(e.errno, e.errno)}')\n"
	    "        return False\n"
	    "def arm(owner):\n"
	    "    r, w = os.pipe()\n"
	    "    if not st(f'F_SETOWN({owner})',\n"
	    "              lambda: fcntl.fcntl(r, fcntl.F_SETOWN, owner)):\n"
	    "        kind, who = (1, owner) if owner > 0 else (2, -owner)\n"
	    "        st('F_SETOWN_EX', lambda: fcntl.fcntl(r, F_SETOWN_EX,\n"
	    "                                             struct.pack('ii', kind, who)))\n"
	    "    st('F_SETSIG', lambda: fcntl.fcntl(r, F_SETSIG, %d))\n"
	    "    st('O_ASYNC', lambda: fcntl.fcntl(r, fcntl.F_SETFL,\n"
	    "                                      fcntl.fcntl(r, fcntl.F_GETFL) | 0o20000))\n"
	    "    os.write(w, b'x')\n"
	    "    return r, w\n"
	    "t = %d\n"
	    "if t == -1:\n"
	    "    t = os.getppid()\n"
	    "keep = [arm(t)]\n"
	    "try:\n"
	    "    keep.append(arm(-os.getpgid(t)) if t > 0 else arm(0))\n"
	    "except OSError as e:\n"
	    "    steps.append(f'getpgid:{errno.errorcode.get(e.errno, e.errno)}')\n"
	    "time.sleep(0.2)\n"
	    "for r, w in keep:\n"
	    "    os.close(r); os.close(w)\n"
	    "print('BLOCKED unless the target got it:', ' '.join(steps))\n",
	    sig, target);
}

static pid_t g_sleeper;
static bool g_sleeper_must; /* its death is a hole (else: allowed) */

static void post_sleeper(struct run *t, enum verdict *v, char *detail, size_t cap)
{
	int status;
	(void)t;
	if (waitpid(g_sleeper, &status, WNOHANG) == g_sleeper) {
		char d[160];
		snprintf(d, sizeof(d), "the sleeper (pid %d) died of signal %d: %.80s",
			 (int)g_sleeper, WIFSIGNALED(status) ? WTERMSIG(status) : 0, detail);
		snprintf(detail, cap, "%s", d);
		*v = g_sleeper_must ? V_HOLE : V_ALLOWED;
		g_sleeper = 0;
	}
}

static void fcntl_sigio(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	bool base = st->on[REPL_L_SECCOMP] || st->on[REPL_L_PIDNS] || ll_signals(t);
	/* Of the worker's uid: the kernel's own check (sigio_perm) passes. */
	unsigned uid = st->uid ? st->uid : 65534;
	char *code;
	g_sleeper = sleeper(geteuid() == 0 ? uid : geteuid());
	g_sleeper_must = base || signal_walled(t, uid);
	code = sigio_cell((int)g_sleeper, SIGKILL);
	attack(t, "fcntl F_SETOWN+F_SETSIG(KILL) on a sleeper", g_sleeper_must, 0, post_sleeper,
	       code);
	free(code);
	if (g_sleeper > 0) {
		kill(g_sleeper, SIGKILL);
		waitpid(g_sleeper, NULL, 0);
	}
	/* The controller (getppid() outside a pid namespace) with SIGTERM,
	 * which it catches: a hole is seen, and the test goes on. */
	code = sigio_cell(-1, SIGTERM);
	attack(t, "fcntl F_SETOWN(getppid())+F_SETSIG(TERM)", base || signal_walled(t, t->ctl_uid),
	       0, NULL, code);
	free(code);
}

/* Memory outside the address space: memfds grown with fallocate are not
 * counted by RLIMIT_AS. 3 GiB against AS 2G, freed at once. */
static void memfd_bomb(struct run *t)
{
	long long avail = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lld kB", &avail) == 1)
			break;
	if (f)
		fclose(f);
	if (avail < 8ll << 20) {
		record(t, "memfd_create + fallocate 3 x 1 GiB (AS 2G)", V_SKIPPED,
		       "less than 8 GiB of memory available");
		return;
	}
	/* RLIMIT_FSIZE caps each memfd too: 1 GiB, or as much as it allows
	 * in as many memfds (48 of 64 MiB), to 3 GiB. */
	attack(t, "memfd_create + fallocate 3 x 1 GiB (AS 2G)", t->st.on[REPL_L_SECCOMP], 0, NULL,
	       "import resource\n"
	       "fs = resource.getrlimit(resource.RLIMIT_FSIZE)[0]\n"
	       "chunk = 1 << 30 if fs == resource.RLIM_INFINITY else min(1 << 30, fs)\n"
	       "fds, n = [], 0\n"
	       "try:\n"
	       "    while n < 3 << 30:\n"
	       "        fds.append(os.memfd_create(f'm{len(fds)}'))\n"
	       "        os.posix_fallocate(fds[-1], 0, chunk)\n"
	       "        n += chunk\n"
	       "    print('ESCAPED held', n >> 20, 'MiB in', len(fds), 'memfds past RLIMIT_AS')\n"
	       "except OSError as e:\n"
	       "    if fds:\n"
	       "        print('ESCAPED memfd_create worked;', n >> 20, 'MiB held, then', e)\n"
	       "    else:\n"
	       "        _bl(e, 'memfd_create')\n"
	       "finally:\n"
	       "    for fd in fds:\n"
	       "        os.close(fd)\n");
}

/* The worker renames its scratch away and puts a symlink to a victim in
 * its place; then the quota path (past the limit: the controller empties
 * "the scratch") and repl_free run. The victim directory holds more than
 * the limit, so that a quota walk through the symlink finds it over. The
 * file must survive wherever the worker could not remove it itself. */
static void scratch_rename(struct run *t)
{
	const struct repl_sandbox_status *st = &t->st;
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	char victim[64], keep[96], scratch[512], moved[600], d[200];
	char *code, *buf;
	FILE *f;
	bool intact, must, rc_bad = false;
	struct stat sb;
	snprintf(victim, sizeof(victim), "/tmp/rlm-victim2-%d", (int)t->self);
	snprintf(keep, sizeof(keep), "%s/keep", victim);
	rm_rf(victim);
	CHECK(mkdir(victim, 0700) == 0);
	CHECK((f = fopen(keep, "w")) != NULL);
	buf = xmalloc(1 << 20);
	memset(buf, 'v', 1 << 20);
	for (int i = 0; i < 12; i++)
		CHECK(fwrite(buf, 1, 1 << 20, f) == 1 << 20);
	free(buf);
	CHECK(fclose(f) == 0);
	cfg_level(&cfg, t->level);
	cfg.sandbox.scratch_limit = 8 << 20;
	r = start(&cfg);
	scratch_of(t, r, scratch, sizeof(scratch));
	code = xasprintf("%s"
			 "cwd = os.getcwd()\n"
			 "try:\n"
			 "    os.rename(cwd, cwd + '.moved')\n"
			 "except OSError as e:\n"
			 "    _bl(e, 'rename of the scratch')\n"
			 "else:\n"
			 "    try:\n"
			 "        os.symlink('%s', cwd)\n"
			 "        how = 'symlinked'\n"
			 "    except OSError as e:\n"
			 "        how = f'not symlinked: {e}'\n"
			 "    for i in range(2):\n"
			 "        with open(f'big{i}', 'wb') as f:\n"
			 "            f.write(b'\\0' * (5 << 20))\n"
			 "    print('RENAMED the scratch,', how)\n",
			 prelude, victim);
	/* The quota path may leave the repl unable to restart (its scratch
	 * gone): that ends the attack, not the level. */
	if (exec_soft(t, r, code, &res, d, sizeof(d)) == 0)
		one_line(d, sizeof(d), res.output);
	else
		rc_bad = true;
	free(code);
	repl_result_release(&res);
	/* Past the limit again, in whatever the worker's cwd is now. */
	if (!rc_bad) {
		char why[200];
		exec_soft(t, r,
			  "import os\n"
			  "try:\n"
			  "    for i in range(2):\n"
			  "        with open(f'more{i}', 'wb') as f:\n"
			  "            f.write(b'\\0' * (5 << 20))\n"
			  "except OSError as e:\n"
			  "    print(e)\n",
			  &res, why, sizeof(why));
		repl_result_release(&res);
	}
	repl_free(r);
	intact = stat(keep, &sb) == 0 && sb.st_size == 12 << 20;
	/* Could the worker have removed the file itself? */
	must = st->on[REPL_L_LANDLOCK] || st->on[REPL_L_MNTNS] ||
	       (st->uid != 0 && st->uid != t->ctl_uid);
	if (intact)
		record(t, "rename the scratch, symlink it to a victim", V_BLOCKED, d);
	else {
		char d2[320];
		snprintf(d2, sizeof(d2),
			 "the victim's file is gone or cut (the controller followed "
			 "the symlink): %s",
			 d);
		record(t, "rename the scratch, symlink it to a victim", must ? V_HOLE : V_ALLOWED,
		       d2);
	}
	/* What the rename left behind (the controller knows only the old
	 * path): ours to remove. */
	if ((strstr(d, "RENAMED") || rc_bad) && scratch[0]) {
		snprintf(moved, sizeof(moved), "%s.moved", scratch);
		if (lstat(moved, &sb) == 0)
			rm_rf(moved);
	}
	rm_rf(victim);
}

/* Files deeper than the quota walk looked (64 levels), in a plain
 * directory: they must count (a restart) and go (nothing on disk after
 * repl_free). In a tmpfs the write fails with ENOSPC. */
static void deep_tree(struct run *t)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	char scratch[512], outer[512], d[640];
	bool tmpfs = t->st.scratch_tmpfs;
	unsigned long long left;
	enum verdict v;
	int rc;
	cfg_level(&cfg, t->level);
	r = start(&cfg);
	scratch_of(t, r, scratch, sizeof(scratch));
	scratch_outer(scratch, outer, sizeof(outer));
	rc = exec_soft(
	    t, r,
	    "import os, errno\n"
	    "d = '/'.join(['d'] * 100)\n"
	    "os.makedirs(d)\n"
	    "n = 0\n"
	    "try:\n"
	    "    for i in range(5):\n"
	    "        with open(f'{d}/f{i}', 'wb') as f:\n"
	    "            for j in range(16):\n"
	    "                f.write(b'\\0' * (1 << 20))\n"
	    "        n += 16\n"
	    "    print('wrote', n, 'MiB at depth 100')\n"
	    "except OSError as e:\n"
	    "    print('BLOCKED', errno.errorcode.get(e.errno, e.errno), 'after', n, 'MiB')\n",
	    &res, d, sizeof(d));
	if (rc < 0)
		v = V_BROKEN; /* d says why */
	else if (tmpfs)
		v = line_with(res.output, "BLOCKED") ? V_BLOCKED : V_HOLE;
	else if (res.restarted && strstr(res.output, "REPL was restarted"))
		v = V_CONTAINED;
	else
		v = V_HOLE;
	if (rc == 0)
		snprintf(d, sizeof(d), "restarted %d: %.150s", res.restarted, res.output);
	if (v == V_HOLE && !tmpfs)
		snprintf(d, sizeof(d), "80 MB at depth 100 were not counted (no restart): %.100s",
			 res.output);
	record(t, "deep tree (depth 100) past the quota", v, d);
	repl_result_release(&res);
	/* A removal that retries each level of a deep tree takes forever. */
	if (!free_within(r, 5000 * MS)) {
		record(t, "deep tree: nothing left after repl_free", V_HOLE,
		       "repl_free did not return within 5 s (the removal of the deep tree)");
		if (outer[0])
			rm_rf(outer);
		else if (scratch[0])
			rm_rf(scratch);
		return;
	}
	left = (scratch[0] ? du(scratch) : 0) + (outer[0] ? du(outer) : 0);
	if (scratch[0] && (access(scratch, F_OK) == 0 || (outer[0] && access(outer, F_OK) == 0))) {
		snprintf(d, sizeof(d), "after repl_free %s is still there, %.1f MB in it",
			 access(scratch, F_OK) == 0 ? "the scratch" : "its outer directory",
			 (double)left / 1048576.0);
		record(t, "deep tree: nothing left after repl_free", V_HOLE, d);
		if (outer[0])
			rm_rf(outer);
		else
			rm_rf(scratch);
	} else {
		record(t, "deep tree: nothing left after repl_free",
		       scratch[0] ? V_BLOCKED : V_BROKEN,
		       scratch[0] ? "the scratch and its directory are gone" : "no scratch path");
	}
}

/* After a level: no scratch directory of this controller is left. */
static void leftovers(struct run *t)
{
	const char *base = getenv("TMPDIR");
	char pat[512], d[200];
	glob_t g;
	if (!base || !*base)
		base = "/tmp";
	snprintf(pat, sizeof(pat), "%s/rlm-repl-%d-*", base, (int)t->self);
	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc) {
		snprintf(d, sizeof(d), "%zu left, e.g. %s", (size_t)g.gl_pathc, g.gl_pathv[0]);
		record(t, "no scratch directory left behind", V_HOLE, d);
		for (size_t i = 0; i < g.gl_pathc; i++)
			rm_rf(g.gl_pathv[i]);
	} else {
		record(t, "no scratch directory left behind", V_BLOCKED, pat);
	}
	globfree(&g);
}

/* ---- one level ---- */

static void coverage(struct run *t);

/* The matrix file of this run: the harness (our parent) names it. */
static FILE *open_matrix(void)
{
	char path[128];
	FILE *f;
	matrix_path(path, sizeof(path), getppid());
	CHECK((f = fopen(path, "a")) != NULL);
	return f;
}

static void run_level(int level, FILE *matrix)
{
	struct repl_cfg cfg;
	struct repl_result res;
	struct run t;
	bool sc_off = levels[level].disable & L(REPL_L_SECCOMP);
	int64_t t0 = time_now_ns();

	memset(&t, 0, sizeof(t));
	t.level = level;
	t.self = getpid();
	t.ctl_uid = geteuid();
	t.matrix = matrix;
	unsetenv("RLM_SANDBOX_DISABLE");
	signal(SIGTERM, on_term);
	t.tcp = listener(SOCK_STREAM, &t.tcp_port);
	t.udp = listener(SOCK_DGRAM, &t.udp_port);
	snprintf(t.evil_tmp, sizeof(t.evil_tmp), "/tmp/rlm-evil-%d", (int)t.self);
	snprintf(t.evil_shm, sizeof(t.evil_shm), "/dev/shm/rlm-evil-%d", (int)t.self);
	unlink(t.evil_tmp);
	unlink(t.evil_shm);

	cfg_level(&cfg, level);
	cfg.on_call = echo_call;
	t.r = start(&cfg);
	t.dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1;
	{
		const char *zv = getenv("RLM_ZYGOTE");
		struct repl_stats rs;
		repl_stats(t.r, &rs);
		CHECK_MSG(rs.zygote == (!levels[level].cold && !(zv && strcmp(zv, "0") == 0)),
			  "level %s: the worker was %s", levels[level].name,
			  rs.zygote ? "forked by the zygote" : "started cold");
	}
	repl_sandbox_status(t.r, &t.st);
	fprintf(stderr, "  [%s] sandbox: %s\n", levels[level].name, t.st.line);
	/* The level is what was asked for: the disabled layers are off, and
	 * seccomp (but at -seccomp, with unsafe) and rlimits are always on. */
	for (int l = 0; l < REPL_L_COUNT; l++)
		if ((levels[level].disable & L(l)) && t.st.on[l])
			record(&t, "status matches the level", V_BROKEN, repl_layer_name(l));
	if (sc_off)
		CHECK_MSG(!t.st.on[REPL_L_SECCOMP] && t.st.unsafe && strstr(t.st.line, "UNSAFE"),
			  "seccomp disabled, yet: %s", t.st.line);
	else
		CHECK_MSG(t.st.on[REPL_L_SECCOMP], "seccomp is off: %s", t.st.why[REPL_L_SECCOMP]);
	CHECK(t.st.unsafe == cfg.sandbox.unsafe);
	CHECK_MSG(t.st.on[REPL_L_RLIMITS], "rlimits are off: %s", t.st.why[REPL_L_RLIMITS]);
	if ((levels[level].disable & L(REPL_L_USERNS)) && t.st.on[REPL_L_MNTNS])
		record(&t, "status matches the level", V_BROKEN, "mntns on without userns");
	if (levels[level].nonroot && (t.ctl_uid == 0 || t.st.uid != t.ctl_uid))
		record(&t, "status matches the level", V_BROKEN,
		       "nonroot: the worker's uid is not ours");

	exec_cell(&t, t.r, "survivor = 42", &res);
	repl_result_release(&res);

	worker_status(&t);
	files_and_secrets(&t);
	processes(&t);
	sockets(&t);
	controller(&t);
	fcntl_sigio(&t);
	two_workers(&t);
	filter_tricks(&t);
	resources(&t);
	memfd_bomb(&t);
	fill_disk(&t);
	frames(&t);
	kill_self_mid_call(&t);
	/* The status does not degrade over the restarts. */
	{
		struct repl_sandbox_status now;
		repl_sandbox_status(t.r, &now);
		for (int l = 0; l < REPL_L_COUNT; l++)
			if (now.on[l] != t.st.on[l])
				record(&t, "status after restarts", V_BROKEN, repl_layer_name(l));
	}
	{
		/* ... and the workers after the restarts came the same way */
		const char *zv = getenv("RLM_ZYGOTE");
		struct repl_stats rs;
		repl_stats(t.r, &rs);
		CHECK(rs.restarts > 0);
		CHECK(rs.zygote == (!levels[level].cold && !(zv && strcmp(zv, "0") == 0)));
	}
	repl_free(t.r);
	scratch_symlinks(&t);
	scratch_rename(&t);
	deep_tree(&t);
	coverage(&t);
	timeouts(&t);
	leftovers(&t);

	close(t.tcp);
	close(t.udp);
	fclose(t.matrix);
	fprintf(stderr, "  [%s] %.1f s\n", levels[level].name, (double)(time_now_ns() - t0) / 1e9);
	CHECK_MSG(t.fails == 0, "%d holes or failures at level %s (above)", t.fails,
		  levels[level].name);
}

TEST(attacks_full)
{
	run_level(0, open_matrix());
}

TEST(attacks_no_landlock)
{
	run_level(1, open_matrix());
}

TEST(attacks_no_userns)
{
	run_level(2, open_matrix());
}

TEST(attacks_no_userns_no_landlock)
{
	run_level(3, open_matrix());
}

TEST(attacks_seccomp_rlimits_only)
{
	run_level(4, open_matrix());
}

TEST(attacks_no_seccomp_unsafe)
{
	run_level(5, open_matrix());
}

/* A controller that is not root: its worker has its own uid, and only
 * the controller's being non-dumpable, seccomp and what layers remain
 * stand between them. As root, the level runs in a child that drops to
 * NONROOT_UID (no groups), with HOME and TMPDIR in a 0711 directory of
 * its own; it starts dumpable, as any user's process. */
static void run_nonroot(int level)
{
	char base[64];
	FILE *matrix;
	pid_t c;
	int status;
	if (geteuid() != 0) {
		run_level(level, open_matrix());
		return;
	}
	snprintf(base, sizeof(base), "/tmp/rlm-nonroot-%d", (int)getpid());
	rm_rf(base);
	CHECK(mkdir(base, 0711) == 0);
	CHECK(chown(base, NONROOT_UID, NONROOT_UID) == 0);
	CHECK(chmod(base, 0711) == 0);
	matrix = open_matrix();
	/* The child's SIGTERM rows must not end us (same process group). */
	signal(SIGTERM, SIG_IGN);
	fflush(stderr);
	c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		if (setgroups(0, NULL) < 0 ||
		    setresgid(NONROOT_UID, NONROOT_UID, NONROOT_UID) < 0 ||
		    setresuid(NONROOT_UID, NONROOT_UID, NONROOT_UID) < 0) {
			fprintf(stderr, "  cannot drop to uid %d: %s\n", NONROOT_UID,
				strerror(errno));
			_exit(1);
		}
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		setenv("HOME", base, 1);
		setenv("TMPDIR", base, 1);
		run_level(level, matrix);
		_exit(0);
	}
	fclose(matrix);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	rm_rf(base);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the nonroot level failed (status %#x, above)", status);
}

TEST(attacks_nonroot)
{
	run_nonroot(6);
}

TEST(attacks_nonroot_seccomp_rlimits)
{
	run_nonroot(7);
}

TEST(attacks_full_cold)
{
	run_level(8, open_matrix());
}

TEST(attacks_nonroot_cold)
{
	run_nonroot(9);
}

/* ---- ordinary code under the full sandbox ---- */

/* One part of the coverage set: on failure, the first says why (in fail)
 * and the rest still run. */
static void covered(struct run *t, struct repl *r, const char *name, const char *code,
		    const char *want, char *fail, size_t cap)
{
	struct repl_result res;
	exec_cell(t, r, code, &res);
	if (res.error || res.restarted || strcmp(res.output, want) != 0) {
		fprintf(stderr, "  [%s] coverage %s: output \"%.1500s\", want \"%s\"\n",
			levels[t->level].name, name, res.output, want);
		if (!fail[0])
			snprintf(fail, cap, "%s: %.100s", name, res.output);
	}
	repl_result_release(&res);
}

/* Ordinary code must work at every level: the standard library the model
 * uses, threads, scratch files, llm_query and batched calls. */
static void coverage(struct run *t)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	bool tz = access("/usr/share/zoneinfo/Europe/Paris", R_OK) == 0;
	char *code, fail[160] = "";
	cfg_level(&cfg, t->level);
	cfg.on_call = echo_call;
	r = start(&cfg);
	covered(t, r, "json re math statistics collections itertools",
		"import json, re, math, statistics, collections, itertools, string, copy, enum\n"
		"d = json.loads(json.dumps({'a': [1, 2.5, None, '\\u00e9']}))\n"
		"assert d['a'][3] == '\\u00e9'\n"
		"assert re.findall(r'\\d+', 'a1b22c333') == ['1', '22', '333']\n"
		"assert re.sub(r'(?i)HELLO', 'x', 'hello Hello') == 'x x'\n"
		"assert math.isclose(math.sqrt(2) ** 2, 2) and math.comb(10, 3) == 120\n"
		"assert statistics.median([3, 1, 2]) == 2\n"
		"assert abs(statistics.stdev([1, 2, 3, 4]) - 1.2909944) < 1e-6\n"
		"assert collections.Counter('abracadabra').most_common(1) == [('a', 5)]\n"
		"dq = collections.deque(range(5), maxlen=3); assert list(dq) == [2, 3, 4]\n"
		"assert list(itertools.islice(itertools.permutations('abc'), 2)) == "
		"[('a', 'b', 'c'), ('a', 'c', 'b')]\n"
		"assert copy.deepcopy({'x': [1]}) == {'x': [1]}\n"
		"print('ok1')\n",
		"ok1\n", fail, sizeof(fail));
	code = xasprintf(
	    "import datetime, decimal, fractions, time\n"
	    "now = datetime.datetime.now(datetime.timezone.utc)\n"
	    "local = datetime.datetime.now().astimezone()\n"
	    "assert local.tzinfo is not None and datetime.date.today().year >= 2024\n"
	    "if %d:\n"
	    "    import zoneinfo\n"
	    "    paris = zoneinfo.ZoneInfo('Europe/Paris')\n"
	    "    p = datetime.datetime(2024, 7, 1, 12, tzinfo=paris)\n"
	    "    assert p.utcoffset() == datetime.timedelta(hours=2)\n"
	    "    assert datetime.datetime.now(zoneinfo.ZoneInfo('Asia/Tokyo')).utcoffset() == "
	    "datetime.timedelta(hours=9)\n"
	    "decimal.getcontext().prec = 50\n"
	    "assert str(decimal.Decimal(1) / decimal.Decimal(7))[:12] == '0.1428571428'\n"
	    "F = fractions.Fraction\n"
	    "assert F(1, 3) + F(1, 6) == F(1, 2)\n"
	    "t0 = time.monotonic(); time.sleep(0.05); assert time.monotonic() - t0 >= 0.04\n"
	    "assert time.time() > 1.7e9 and time.perf_counter() > 0\n"
	    "assert time.process_time() >= 0\n"
	    "print('ok2')\n",
	    tz);
	covered(t, r, "datetime zoneinfo decimal fractions time", code, "ok2\n", fail,
		sizeof(fail));
	free(code);
	covered(t, r, "hashlib random textwrap difflib heapq bisect functools ...",
		"import hashlib, random, textwrap, difflib, heapq, bisect, functools\n"
		"import base64, zlib\n"
		"import uuid, secrets, unicodedata, csv, io, struct, array, pickle, gzip, os\n"
		"assert hashlib.sha256(b'abc').hexdigest().startswith('ba7816bf')\n"
		"assert hashlib.md5(b'').hexdigest() == 'd41d8cd98f00b204e9800998ecf8427e'\n"
		"random.seed(1); random.random(); random.SystemRandom().random()\n"
		"assert len(os.urandom(8)) == 8 and len(secrets.token_hex(4)) == 8\n"
		"assert uuid.uuid4().version == 4\n"
		"assert textwrap.wrap('a b c d', 3) == ['a b', 'c d']\n"
		"assert difflib.SequenceMatcher(None, 'abcd', 'abed').ratio() == 0.75\n"
		"assert list(difflib.unified_diff(['a'], ['b'], lineterm=''))[-1] == '+b'\n"
		"h = [5, 1, 3]; heapq.heapify(h); assert heapq.heappop(h) == 1\n"
		"assert heapq.nlargest(2, [4, 9, 1]) == [9, 4]\n"
		"assert bisect.bisect([1, 2, 4], 3) == 2\n"
		"@functools.lru_cache(None)\n"
		"def fib(n):\n"
		"    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
		"assert fib(80) == 23416728348467685\n"
		"assert functools.reduce(lambda a, b: a * b, range(1, 6)) == 120\n"
		"assert zlib.decompress(zlib.compress(b'x' * 1000)) == b'x' * 1000\n"
		"assert gzip.decompress(gzip.compress(b'yz')) == b'yz'\n"
		"assert base64.b64decode(base64.b64encode(b'hi')) == b'hi'\n"
		"assert list(csv.reader(io.StringIO('a,b\\n1,2\\n')))[1] == ['1', '2']\n"
		"assert unicodedata.name('\\u00e9') == 'LATIN SMALL LETTER E WITH ACUTE'\n"
		"assert struct.unpack('<I', struct.pack('<I', 7)) == (7,)\n"
		"assert pickle.loads(pickle.dumps(array.array('i', [1, 2]))).tolist() == [1, 2]\n"
		"assert os.cpu_count() >= 1\n"
		"print('ok3')\n",
		"ok3\n", fail, sizeof(fail));
	covered(t, r, "threads, a lock, a pool, llm_query and llm_query_batched from threads",
		"import threading, concurrent.futures\n"
		"lock = threading.Lock(); total = [0]\n"
		"def work(k):\n"
		"    for i in range(1000):\n"
		"        with lock:\n"
		"            total[0] += k\n"
		"ts = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]\n"
		"for th in ts: th.start()\n"
		"for th in ts: th.join()\n"
		"assert total[0] == 10000, total\n"
		"with concurrent.futures.ThreadPoolExecutor(4) as ex:\n"
		"    got = list(ex.map(lambda i: llm_query(f'q{i}'), range(8)))\n"
		"assert got == [f'echo:q{i}' for i in range(8)], got\n"
		"res = [None] * 4\n"
		"def ask(i):\n"
		"    res[i] = llm_query_batched([f'b{i}a', f'b{i}b'])\n"
		"ts = [threading.Thread(target=ask, args=(i,)) for i in range(4)]\n"
		"for th in ts: th.start()\n"
		"for th in ts: th.join()\n"
		"assert res == [[f'echo:b{i}a', f'echo:b{i}b'] for i in range(4)], res\n"
		"ev = threading.Event(); threading.Timer(0.01, ev.set).start()\n"
		"assert ev.wait(2)\n"
		"print('ok4', llm_query('main'))\n",
		"ok4 echo:main\n", fail, sizeof(fail));
	covered(t, r, "scratch file I/O",
		"import os, tempfile, shutil, pathlib\n"
		"with open('notes.txt', 'w') as f:\n"
		"    f.write('hello\\n')\n"
		"assert open('notes.txt').read() == 'hello\\n'\n"
		"assert 'notes.txt' in os.listdir('.')\n"
		"os.rename('notes.txt', 'n2.txt'); os.remove('n2.txt')\n"
		"os.makedirs('d/e', exist_ok=True); pathlib.Path('d/e/f.txt').write_text('x')\n"
		"assert pathlib.Path('d/e/f.txt').stat().st_size == 1\n"
		"shutil.copy('d/e/f.txt', 'g.txt'); os.truncate('g.txt', 0); os.remove('g.txt')\n"
		"shutil.rmtree('d')\n"
		"with tempfile.TemporaryDirectory() as td:\n"
		"    p = os.path.join(td, 'a.bin')\n"
		"    with open(p, 'wb') as f:\n"
		"        f.write(b'\\0' * 100000)\n"
		"    assert os.path.getsize(p) == 100000\n"
		"with tempfile.NamedTemporaryFile() as nf:\n"
		"    nf.write(b'x'); nf.flush(); os.fsync(nf.fileno())\n"
		"assert os.path.realpath(tempfile.gettempdir()) == os.path.realpath(os.getcwd())\n"
		"assert os.listdir('.') == [], os.listdir('.')\n"
		"print('ok5')\n",
		"ok5\n", fail, sizeof(fail));
	covered(t, r, "context and state", "print(len(context), context.split()[1])\n",
		"33 context:\n", fail, sizeof(fail));
	/* Not in the required set: asyncio's loop makes a socketpair, which
	 * the sandbox denies. Reported, not failed. */
	exec_cell(t, r,
		  "import asyncio\n"
		  "try:\n"
		  "    print('asyncio', asyncio.run(asyncio.sleep(0, 'works')))\n"
		  "except OSError as e:\n"
		  "    print('asyncio fails:', type(e).__name__, e)\n",
		  &res);
	if (verbose() || t->level == 0)
		fprintf(stderr, "  [%s] note: %.*s\n", levels[t->level].name,
			(int)strcspn(res.output, "\n"), res.output);
	repl_result_release(&res);
	repl_free(r);
	record(t, "ordinary code (coverage set)", fail[0] ? V_BROKEN : V_OK,
	       fail[0] ? fail
		       : "json re math statistics collections itertools datetime decimal hashlib "
			 "threads files llm_query batched");
}

/* ---- the switches ---- */

TEST(seccomp_is_mandatory_without_unsafe)
{
	struct repl_cfg cfg;
	struct repl *r = NULL;
	struct repl_sandbox_status st;
	struct rlm_err err = {0, ""};
	unsetenv("RLM_SANDBOX_DISABLE");
	cfg_level(&cfg, 0);
	cfg.sandbox.disable = L(REPL_L_SECCOMP);
	CHECK(repl_start(&cfg, &r, &err) < 0);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "unsafe");
	cfg.sandbox.disable = REPL_L_ALL;
	cfg.sandbox.unsafe = true;
	r = start(&cfg);
	repl_sandbox_status(r, &st);
	CHECK(!st.on[REPL_L_SECCOMP] && st.unsafe);
	repl_free(r);
}

/* As root, identity off would run model code as root with every
 * capability: like seccomp, only with unsafe, and the line says so. */
TEST(identity_is_mandatory_as_root)
{
	struct repl_cfg cfg;
	struct repl *r = NULL;
	struct repl_sandbox_status st;
	struct rlm_err err = {0, ""};
	if (geteuid() != 0)
		return; /* not root: the worker has the controller's uid anyway */
	unsetenv("RLM_SANDBOX_DISABLE");
	cfg_level(&cfg, 0);
	cfg.sandbox.disable = L(REPL_L_IDENTITY);
	cfg.sandbox.unsafe = false;
	CHECK(repl_start(&cfg, &r, &err) == RLM_ESANDBOX);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "identity");
	CHECK_CONTAINS(err.msg, "disabled");
	CHECK_CONTAINS(err.msg, "--unsafe-no-sandbox");
	cfg.sandbox.unsafe = true;
	r = start(&cfg);
	repl_sandbox_status(r, &st);
	CHECK(st.on[REPL_L_SECCOMP] && !st.on[REPL_L_IDENTITY] && st.unsafe);
	CHECK_CONTAINS(st.line, "uid=0(UNSAFE)");
	repl_free(r);
}

TEST(disable_from_the_environment)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_sandbox_status st;
	cfg_level(&cfg, 0);
	setenv("RLM_SANDBOX_DISABLE", "landlock, netns", 1);
	r = start(&cfg);
	repl_sandbox_status(r, &st);
	unsetenv("RLM_SANDBOX_DISABLE");
	CHECK(st.on[REPL_L_SECCOMP]);
	CHECK(!st.on[REPL_L_LANDLOCK] && !st.on[REPL_L_NETNS]);
	CHECK_CONTAINS(st.why[REPL_L_LANDLOCK], "disabled");
	CHECK(strstr(st.line, "landlock=") != NULL);
	repl_free(r);
}

TEST(sandbox_parse_table)
{
	static const struct {
		const char *in;
		int rc;
		unsigned bits;
	} cases[] = {
	    {"", 0, 0},
	    {"userns,landlock", 0, L(REPL_L_USERNS) | L(REPL_L_LANDLOCK)},
	    {" seccomp , ,rlimits ", 0, L(REPL_L_SECCOMP) | L(REPL_L_RLIMITS)},
	    {"all", 0, REPL_L_ALL},
	    {"ns", 0,
	     L(REPL_L_USERNS) | L(REPL_L_MNTNS) | L(REPL_L_NETNS) | L(REPL_L_PIDNS) |
		 L(REPL_L_IPCNS) | L(REPL_L_UTSNS)},
	    {"identity,pidns", 0, L(REPL_L_IDENTITY) | L(REPL_L_PIDNS)},
	    {"bogus", RLM_EINVAL, 0},
	    {"landlock,nope", RLM_EINVAL, 0},
	};
	for (int l = 0; l < REPL_L_COUNT; l++) {
		unsigned bits = 0;
		struct rlm_err err = {0, ""};
		CHECK_INT(repl_sandbox_parse(repl_layer_name((enum repl_layer)l), &bits, &err), 0);
		CHECK_INT(bits, L(l));
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned bits = 0;
		struct rlm_err err = {0, ""};
		int rc = repl_sandbox_parse(cases[i].in, &bits, &err);
		CHECK_MSG(rc == cases[i].rc, "'%s': rc %d", cases[i].in, rc);
		if (rc == 0)
			CHECK_MSG(bits == cases[i].bits, "'%s': bits %#x, want %#x", cases[i].in,
				  bits, cases[i].bits);
		else
			CHECK_CONTAINS(err.msg, strchr(cases[i].in, ',') ? "nope" : "bogus");
	}
}

/* The controller dies: its sandboxed worker must go with it. Nobody is
 * left to remove the worker's (empty) scratch directory: the test does. */
struct dying {
	pid_t pid;
	char scratch[256];
};

TEST(worker_dies_with_its_controller)
{
	struct dying w;
	char state[32];
	int p[2];
	pid_t c;
	CHECK(pipe(p) == 0);
	c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		struct repl_cfg cfg;
		struct repl_result res;
		struct repl *r;
		close(p[0]);
		cfg_level(&cfg, 0);
		r = start(&cfg);
		memset(&w, 0, sizeof(w));
		w.pid = worker_pid(r);
		exec_cell(NULL, r, "import os; print(os.environ['TMPDIR'], end='')", &res);
		snprintf(w.scratch, sizeof(w.scratch), "%s", res.output);
		if (write(p[1], &w, sizeof(w)) != (ssize_t)sizeof(w))
			_exit(2);
		pause();
		_exit(0);
	}
	close(p[1]);
	CHECK_INT(read(p[0], &w, sizeof(w)), sizeof(w));
	close(p[0]);
	CHECK(w.pid > 0 && kill(w.pid, 0) == 0);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	for (int i = 0; i < 300; i++) {
		char *st = status_of(w.pid);
		status_field(st, "State", state, sizeof(state));
		free(st);
		if (!state[0] || state[0] == 'Z')
			break;
		time_sleep_ns(10 * MS);
	}
	/* The scratch, and the directory of ours above it (rlm-repl-PID-*). */
	if (strncmp(w.scratch, "/tmp/rlm-repl-", 14) == 0) {
		char outer[256];
		scratch_outer(w.scratch, outer, sizeof(outer));
		rmdir(w.scratch);
		if (outer[0])
			rmdir(outer);
	}
	CHECK_MSG(!state[0] || state[0] == 'Z', "the worker %d lives on: %s", (int)w.pid, state);
}

/* ---- issue 19: what the attack found ----
 *
 * Each of these failed on the code before the fix: no nr_inodes= on the
 * scratch tmpfs, sysinfo(2) allowed, fd 0 the host's /dev/null, no thread
 * cap, the whole host tree visible read-only. */

/* Run code in a fresh REPL of cfg; the output (caller frees), with
 * *restarted from the result. */
static char *run_alone(const struct repl_cfg *cfg, const char *code, bool *restarted)
{
	struct repl *r = start(cfg);
	struct repl_result res;
	char *out;
	exec_cell(NULL, r, code, &res);
	out = xstrdup(res.output);
	if (restarted)
		*restarted = res.restarted;
	repl_result_release(&res);
	repl_free(r);
	return out;
}

static const char files_cell[] =
	"import os\n"
	"n, err = 0, None\n"
	"try:\n"
	"    for i in range(4200):\n"
	"        open('f%d' % i, 'w').close()\n"
	"        n += 1\n"
	"except OSError as e:\n"
	"    err = e.errno\n"
	"print('FILES', n, err)\n";

/* Finding 3: empty files cost kernel memory that no size= counts. A 16 MiB
 * scratch holds at most 4096 files and directories: the tmpfs says ENOSPC
 * (from the zygote and cold), the plain directory's quota check restarts
 * the worker. */
TEST(i19_scratch_inode_cap)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	char *out;
	bool restarted;
	int n, e;
	unsetenv("RLM_SANDBOX_DISABLE");
	for (int cold = 0; cold < 2; cold++) {
		cfg_level(&cfg, 0);
		cfg.sandbox.scratch_limit = 16 << 20;
		cfg.no_zygote = cold;
		r = start(&cfg);
		repl_sandbox_status(r, &st);
		repl_free(r);
		if (!st.scratch_tmpfs)
			SKIP("no tmpfs scratch here (no mount namespace)");
		CHECK_INT(st.scratch_inodes, 4096);
		CHECK_CONTAINS(st.line, "inodes=4096");
		out = run_alone(&cfg, files_cell, NULL);
		CHECK_MSG(sscanf(out, "FILES %d %d", &n, &e) == 2, "cold %d: %s", cold, out);
		CHECK_MSG(e == ENOSPC && n > 4000 && n < 4096, "cold %d: %s", cold, out);
		free(out);
	}
	/* No mount namespace: the quota check counts the files. */
	cfg_level(&cfg, 0);
	cfg.sandbox.scratch_limit = 16 << 20;
	cfg.sandbox.disable = L(REPL_L_MNTNS);
	cfg.exec_timeout_ns = 60000 * MS; /* a disk, and the walks: slow under load */
	out = run_alone(&cfg, files_cell, &restarted);
	CHECK_MSG(restarted, "%s", out);
	CHECK_CONTAINS(out, "limit of 4096 files");
	free(out);
}

/* Finding 9: sysinfo(2) told the worker the host's process count, load,
 * RAM and uptime. Now ENOSYS, from the zygote, cold and without
 * namespaces (the filter is the same everywhere). */
TEST(i19_sysinfo_denied)
{
	static const int lv[] = {0, 8, 2};
	static const char cell[] =
		"import ctypes\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"buf = ctypes.create_string_buffer(256)\n"
		"r = libc.sysinfo(buf)\n"
		"print('SYSINFO', r, ctypes.get_errno(), int.from_bytes(buf.raw[:8], 'little'))\n";
	unsetenv("RLM_SANDBOX_DISABLE");
	for (size_t i = 0; i < ARRAY_SIZE(lv); i++) {
		struct repl_cfg cfg;
		char *out;
		cfg_level(&cfg, lv[i]);
		out = run_alone(&cfg, cell, NULL);
		CHECK_MSG(strstr(out, "SYSINFO -1 38 0") != NULL, "[%s] %s", levels[lv[i]].name,
			  out);
		free(out);
	}
}

/* Finding 8: fd 0 was the host's /dev/null, opened before the worker's
 * read-only mounts: futimens(0) changed the host inode's mtime. Now fds 0,
 * 1 and 2 are pipes, and the host's /dev/null keeps its times. */
TEST(i19_std_fds_private)
{
	static const int lv[] = {0, 8, 2, 5};
	static const char cell[] =
		"import os, stat\n"
		"kinds = [stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (0, 1, 2)]\n"
		"try:\n"
		"    os.utime(0)\n"
		"    u = 'ok'\n"
		"except OSError as e:\n"
		"    u = e.errno\n"
		"try:\n"
		"    os.fchmod(0, 0o600)\n"
		"except OSError as e:\n"
		"    pass\n"
		"print('FDS', kinds, u, repr(os.read(0, 10)))\n";
	struct stat before, after;
	unsetenv("RLM_SANDBOX_DISABLE");
	for (size_t i = 0; i < ARRAY_SIZE(lv); i++) {
		struct repl_cfg cfg;
		char *out;
		cfg_level(&cfg, lv[i]);
		CHECK(stat("/dev/null", &before) == 0);
		time_sleep_ns(20 * MS);
		out = run_alone(&cfg, cell, NULL);
		CHECK(stat("/dev/null", &after) == 0);
		CHECK_MSG(strstr(out, "FDS [True, True, True]") && strstr(out, "b''"), "[%s] %s",
			  levels[lv[i]].name, out);
		CHECK_MSG(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
			      before.st_mtim.tv_nsec == after.st_mtim.tv_nsec &&
			      before.st_mode == after.st_mode,
			  "[%s] the host's /dev/null changed: %s", levels[lv[i]].name, out);
		free(out);
	}
}

/* Finding 6 (the cap): a bomb of 3,000 threads with 64 KiB stacks ran
 * whole. Now the 256th start fails with RuntimeError, in workers from the
 * zygote and cold, the worker lives on, and two workers of one zygote
 * each get their own 256 (the count is per user namespace). Without a
 * user namespace there is no cap, and the status says so. */
static const char bomb_cell[] =
	"import threading\n"
	"threading.stack_size(65536)\n"
	"ev = threading.Event()\n"
	"ts, err = [], None\n"
	"try:\n"
	"    for i in range(3000):\n"
	"        t = threading.Thread(target=ev.wait)\n"
	"        t.start()\n"
	"        ts.append(t)\n"
	"except RuntimeError as e:\n"
	"    err = str(e)\n"
	"if HOLD:\n"
	"    print('THREADS', len(ts), err, flush=True)\n"
	"    import time; time.sleep(HOLD)\n"
	"ev.set()\n"
	"for t in ts:\n"
	"    t.join()\n"
	"print('THREADS', len(ts), err)\n";

static void check_bomb(const char *out, const char *where)
{
	int n = -1;
	const char *p = strstr(out, "THREADS ");
	CHECK_MSG(p && sscanf(p, "THREADS %d", &n) == 1, "[%s] %s", where, out);
	CHECK_MSG(n >= 200 && n < 256 && strstr(p, "can't start new thread"), "[%s] %s", where,
		  out);
}

struct bomb_arg {
	struct repl *r;
	struct repl_result *res;
	int rc;
};

static void *bomb_main(void *arg)
{
	struct bomb_arg *b = arg;
	struct rlm_err err = {0, ""};
	b->rc = repl_exec(b->r, bomb_cell, strlen(bomb_cell), time_now_ns() + 60000 * MS, b->res,
			  &err);
	return NULL;
}

TEST(i19_thread_cap)
{
	static const int lv[] = {0, 8};
	struct repl_sandbox_status st;
	struct repl_result res;
	unsetenv("RLM_SANDBOX_DISABLE");
	for (size_t i = 0; i < ARRAY_SIZE(lv); i++) {
		struct repl_cfg cfg;
		struct repl *r;
		cfg_level(&cfg, lv[i]);
		r = start(&cfg);
		repl_sandbox_status(r, &st);
		CHECK_INT(st.max_threads, 256);
		CHECK_CONTAINS(st.line, "threads=256");
		exec_cell(NULL, r, "HOLD = 0", &res);
		repl_result_release(&res);
		exec_cell(NULL, r, bomb_cell, &res);
		check_bomb(res.output, levels[lv[i]].name);
		CHECK(!res.restarted);
		repl_result_release(&res);
		exec_cell(NULL, r, "import threading; print('after', threading.active_count())", &res);
		CHECK_MSG(strstr(res.output, "after 1") && !res.restarted, "%s", res.output);
		repl_result_release(&res);
		repl_free(r);
	}
	/* Two workers of one zygote at once: each its own cap. */
	{
		struct repl_cfg cfg;
		struct repl *a, *b;
		struct rlm_err err = {0, ""};
		struct repl_result rb;
		cfg_level(&cfg, 0);
		a = start(&cfg);
		b = start(&cfg);
		exec_cell(NULL, a, "HOLD = 3", &res);
		repl_result_release(&res);
		exec_cell(NULL, b, "HOLD = 0", &res);
		repl_result_release(&res);
		/* a holds its threads (3 s) while b starts its own. */
		struct bomb_arg ba = {a, &res, -1};
		pthread_t th;
		CHECK(pthread_create(&th, NULL, bomb_main, &ba) == 0);
		time_sleep_ns(1500 * MS);
		exec_cell(NULL, b, bomb_cell, &rb);
		pthread_join(th, NULL);
		CHECK_INT(ba.rc, 0);
		(void)err;
		check_bomb(res.output, "a");
		check_bomb(rb.output, "b");
		repl_result_release(&res);
		repl_result_release(&rb);
		repl_free(a);
		repl_free(b);
	}
	/* No user namespace: no cap, said so. */
	{
		struct repl_cfg cfg;
		struct repl *r;
		cfg_level(&cfg, 2);
		r = start(&cfg);
		repl_sandbox_status(r, &st);
		CHECK_INT(st.max_threads, 0);
		CHECK_CONTAINS(st.line, "threads=uncapped");
		repl_free(r);
	}
}

/* Finding 7: Landlock has no right for stat, so os.stat() told size,
 * mtime and existence of any host path. With the pivot layer the worker's
 * root holds only /usr (and the merged-/usr links), two /etc files, four
 * device nodes, /proc and the way down to its scratch directory: the rest
 * does not exist for it. Python and Debian's packages still work. Without
 * a mount namespace the layer is off and says why. */
static const char paths_cell[] =
	"import os, json, re, time, decimal, hashlib\n"
	"miss = []\n"
	"for p in ('/etc/shadow', '/root', '/work', '/etc/passwd', '/home', '/var',\n"
	"          '/old_root', '/sys/class', '/sys/fs', '/sys/kernel/mm/transparent_hugepage/defrag',\n"
	"          '/run', '/etc/hostname', '/bin/../../farm'):\n"
	"    try:\n"
	"        os.stat(p)\n"
	"        print('VISIBLE', p)\n"
	"    except FileNotFoundError:\n"
	"        miss.append(p)\n"
	"    except OSError as e:\n"
	"        print('VISIBLE', p, e)\n"
	"print('MISSING', len(miss))\n"
	"for f in ('enabled', 'hpage_pmd_size'):\n"
	"    try:\n"
	"        print('THP', f, open('/sys/kernel/mm/transparent_hugepage/' + f).read().strip())\n"
	"    except OSError as e:\n"
	"        print('THP', f, type(e).__name__)\n"
	"for d in ('/', '/dev'):\n"
	"    try:\n"
	"        print('LS', d, ' '.join(sorted(os.listdir(d))))\n"
	"    except PermissionError:\n"
	"        print('LS', d, 'denied')\n"
	"import sqlite3\n"
	"c = sqlite3.connect(':memory:')\n"
	"print('SQLITE', c.execute('select 6*7').fetchone()[0])\n"
	"try:\n"
	"    import jsonschema\n"
	"    print('JSONSCHEMA', jsonschema.Draft7Validator({'type': 'string'}).is_valid('x'))\n"
	"except ImportError:\n"
	"    print('JSONSCHEMA absent')\n"
	"print('TZ', time.strftime('%Z'), 'URANDOM', len(open('/dev/urandom', 'rb').read(8)))\n"
	"with open('/dev/null', 'w') as f:\n"
	"    f.write('x')\n"
	"open('here.txt', 'w').write('ok')\n"
	"print('CWD', os.getcwd() == os.environ['TMPDIR'], open('here.txt').read())\n";

/* The lines paths_cell prints for the host's two THP files ("THP enabled
 * always [madvise] never"), "" for one the host does not have. */
static void thp_lines(char out[2][160])
{
	static const char *const f[] = {"enabled", "hpage_pmd_size"};
	for (int i = 0; i < 2; i++) {
		char path[96], line[128] = "";
		FILE *fp;
		snprintf(path, sizeof(path), "/sys/kernel/mm/transparent_hugepage/%s", f[i]);
		out[i][0] = '\0';
		if (!(fp = fopen(path, "r")))
			continue;
		if (fgets(line, sizeof(line), fp)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out[i], 160, "THP %s %s", f[i], line);
		}
		fclose(fp);
	}
}

TEST(i19_host_paths_hidden)
{
	static const int lv[] = {0, 8, 1, 6, 9};
	struct stat js;
	bool jsonschema = stat("/usr/lib/python3/dist-packages/jsonschema", &js) == 0;
	char thp[2][160] = {"", ""};
	thp_lines(thp);
	unsetenv("RLM_SANDBOX_DISABLE");
	for (size_t i = 0; i < ARRAY_SIZE(lv); i++) {
		struct repl_cfg cfg;
		struct repl_sandbox_status st;
		struct repl *r;
		struct repl_result res;
		const char *name = levels[lv[i]].name;
		if (levels[lv[i]].nonroot && geteuid() == 0)
			continue; /* the nonroot levels run in run_nonroot */
		cfg_level(&cfg, lv[i]);
		r = start(&cfg);
		repl_sandbox_status(r, &st);
		CHECK_MSG(st.on[REPL_L_PIVOT], "[%s] pivot off: %s", name, st.why[REPL_L_PIVOT]);
		CHECK_CONTAINS(st.line, "pivot=on");
		exec_cell(NULL, r, paths_cell, &res);
		CHECK_MSG(!strstr(res.output, "VISIBLE") && strstr(res.output, "MISSING 13"),
			  "[%s] %s", name, res.output);
		/* Of /sys, only the two files glibc's malloc reads for huge
		 * pages, as the host has them. */
		for (size_t k = 0; k < ARRAY_SIZE(thp); k++)
			if (thp[k][0])
				CHECK_MSG(strstr(res.output, thp[k]), "[%s] want '%s' in %s", name,
					  thp[k], res.output);
		/* Landlock does not let it list / or /dev at all. */
		if (st.on[REPL_L_LANDLOCK]) {
			CHECK_MSG(strstr(res.output, "LS / denied") && strstr(res.output, "LS /dev denied"),
				  "[%s] %s", name, res.output);
		} else {
			CHECK_MSG(strstr(res.output,
					 "LS / bin dev etc lib lib32 lib64 proc sbin sys tmp usr") ||
				      strstr(res.output, "LS / bin dev etc lib lib64 proc sbin sys tmp usr"),
				  "[%s] %s", name, res.output);
			CHECK_MSG(strstr(res.output, "LS /dev null random urandom zero"), "[%s] %s",
				  name, res.output);
		}
		CHECK_MSG(strstr(res.output, "SQLITE 42") && strstr(res.output, "URANDOM 8") &&
			      strstr(res.output, "CWD True ok"),
			  "[%s] %s", name, res.output);
		if (jsonschema)
			CHECK_MSG(strstr(res.output, "JSONSCHEMA True"), "[%s] %s", name, res.output);
		repl_result_release(&res);
		repl_free(r);
	}
	/* No mount namespace: no pivot, and why. */
	{
		struct repl_cfg cfg;
		struct repl_sandbox_status st;
		struct repl *r;
		cfg_level(&cfg, 2);
		r = start(&cfg);
		repl_sandbox_status(r, &st);
		CHECK(!st.on[REPL_L_PIVOT]);
		CHECK_CONTAINS(st.why[REPL_L_PIVOT], "needs mntns");
		CHECK_CONTAINS(st.line, "pivot=off");
		repl_free(r);
	}
}

/* A machine where pivot_root is refused (EINVAL: the root is the
 * initramfs; EPERM: policy): the worker starts with the read-only host
 * tree instead, every other layer on, the status says why, and `rlm
 * doctor` shows the layer off and its os.stat check as a WARN. A shortage
 * (ENOMEM) keeps the layer and fails that start. */
TEST(i19_pivot_fallback)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r = NULL;
	struct repl_result res;
	struct rlm_err err = {0, ""};
	char cmd[600], out[16384];
	size_t n;
	FILE *p;
	unsetenv("RLM_SANDBOX_DISABLE");
	for (int cold = 0; cold < 2; cold++) {
		pid_t c = fork();
		int status;
		CHECK(c >= 0);
		if (c == 0) { /* the broken layer is remembered per process */
			setenv("RLM_SANDBOX_FAULT", "pivot:ENOMEM", 1);
			cfg_level(&cfg, 0);
			cfg.no_zygote = cold;
			if (repl_start(&cfg, &r, &err) != RLM_ESANDBOX || !strstr(err.msg, "pivot"))
				_exit(10);
			setenv("RLM_SANDBOX_FAULT", "pivot:EINVAL", 1);
			r = start(&cfg);
			repl_sandbox_status(r, &st);
			if (st.on[REPL_L_PIVOT] || !st.on[REPL_L_MNTNS] || !st.on[REPL_L_LANDLOCK] ||
			    !strstr(st.line, "pivot=off"))
				_exit(11);
			exec_cell(NULL, r, "import os\nprint('SHADOW', os.stat('/etc/shadow').st_size > 0)",
				  &res);
			if (!strstr(res.output, "SHADOW True"))
				_exit(12);
			repl_result_release(&res);
			repl_free(r);
			_exit(0);
		}
		CHECK(waitpid(c, &status, 0) == c);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cold %d: status %d", cold,
			  status);
	}
	snprintf(cmd, sizeof(cmd), "RLM_SANDBOX_FAULT=pivot:EPERM '%s' doctor 2>&1",
		 harness_rlm_bin());
	p = popen(cmd, "r");
	CHECK(p != NULL);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	CHECK_MSG(strstr(out, "  pivot      off") && strstr(out, "WARN  os.stat host paths") &&
		      strstr(out, "result: OK with warnings"),
		  "%s", out);
}

/* ---- the matrix ---- */

/* Last: print attack x level from the file the level tests appended to. */
TEST(zz_matrix)
{
	char path[128], line[512];
	char names[128][64];
	char cell[128][N_LEVELS][12];
	size_t n = 0;
	FILE *f;
	matrix_path(path, sizeof(path), getppid());
	if (!(f = fopen(path, "r"))) {
		fprintf(stderr, "  no matrix: run the attack tests first\n");
		return;
	}
	memset(cell, 0, sizeof(cell));
	while (fgets(line, sizeof(line), f)) {
		char *a = strtok(line, "\t"), *lv = strtok(NULL, "\t"), *v = strtok(NULL, "\t");
		size_t i;
		int l;
		if (!a || !lv || !v || (l = atoi(lv)) < 0 || l >= (int)N_LEVELS)
			continue;
		for (i = 0; i < n && strcmp(names[i], a) != 0; i++)
			;
		if (i == n) {
			if (n == 128)
				continue;
			snprintf(names[n++], sizeof(names[0]), "%s", a);
		}
		/* A worse verdict for the same cell wins (HOLE over BLOCKED). */
		if (!cell[i][l][0] || strcmp(v, "HOLE") == 0 || strcmp(v, "BROKEN") == 0)
			snprintf(cell[i][l], sizeof(cell[i][l]), "%s", v);
	}
	fclose(f);
	unlink(path);
	fprintf(stderr, "\n%-46s", "attack \\ level");
	for (size_t l = 0; l < N_LEVELS; l++)
		fprintf(stderr, " %-10s", levels[l].name);
	fputc('\n', stderr);
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "%-46.46s", names[i]);
		for (size_t l = 0; l < N_LEVELS; l++)
			fprintf(stderr, " %-10s", cell[i][l][0] ? cell[i][l] : "-");
		fputc('\n', stderr);
	}
	fputc('\n', stderr);
	/* Workers forked by the zygote and workers started cold: one matrix
	 * (full against full-cold, nonroot against nr-cold). */
	for (size_t i = 0; i < n; i++) {
		CHECK_MSG(strcmp(cell[i][0], cell[i][8]) == 0, "%s: %s from the zygote, %s cold",
			  names[i], cell[i][0], cell[i][8]);
		CHECK_MSG(strcmp(cell[i][6], cell[i][9]) == 0,
			  "%s: %s from the zygote, %s cold (nonroot)", names[i], cell[i][6],
			  cell[i][9]);
	}
}
