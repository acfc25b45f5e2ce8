/* SPDX-License-Identifier: MIT */
/* tests/test_seccomp.c -- the worker's seccomp filters, for real:
 * /usr/bin/python3 started under the first filter stacks the late one and
 * runs function cells (they must work) and attack cells (they must get
 * the errno the policy names); foreign-arch syscalls kill it; the runtime
 * applies LATE_FILTER from its argv. */
#include "harness.h"
#include "../common/common.h"
#include "../common/embed.h"
#include "../repl/repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

static const struct repl_bpf *first_f, *late_f;

static void build(void)
{
	struct rlm_err err = {0, ""};
	int rc = repl__seccomp_build(&first_f, &late_f, &err);

	CHECK_MSG(rc == 0, "repl__seccomp_build: %d %s", rc, err.msg);
}

/* Read fd to EOF (at most 30 s) into a fresh string. */
static char *slurp(int fd)
{
	struct buf b = {0};
	char chunk[4096];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	buf_init(&b, 1 << 20);
	buf_append(&b, "", 0);
	for (;;) {
		CHECK_MSG(poll(&p, 1, 30000) == 1, "the child said nothing for 30 s");
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n <= 0)
			break;
		CHECK(buf_append(&b, chunk, (size_t)n) == 0);
	}
	return buf_detach(&b, NULL);
}

/* fd number of the child's fds 3, 4, 5 (or -1), placed by the child. */
struct kid {
	int fds[3];
	bool first; /* apply the first filter before execve */
};

/* Start python3 -I -S -B argv[...] with stdout and stderr on a pipe,
 * no_new_privs set and (k->first) the first filter applied with the
 * child's own pid. Returns the pid; *out_fd is the read end. */
static pid_t spawn(const struct kid *k, const char *const argv[], int *out_fd)
{
	static const char *const envp[] = {"LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", NULL};
	void *scratch = xmalloc((size_t)first_f->len * sizeof(struct sock_filter));
	int pp[2];
	pid_t pid;

	CHECK(pipe2(pp, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int rc;

		dup2(pp[1], 1);
		dup2(pp[1], 2);
		for (int i = 0; i < 3; i++)
			if (k->fds[i] >= 0)
				dup2(k->fds[i], 3 + i);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			_exit(98);
		if (k->first && (rc = repl__seccomp_apply(first_f, scratch, getpid())) != 0) {
			dprintf(2, "repl__seccomp_apply: errno %d\n", rc);
			_exit(99);
		}
		execve(PYTHON, (char *const *)(uintptr_t)argv, (char *const *)(uintptr_t)envp);
		_exit(127);
	}
	free(scratch);
	close(pp[1]);
	*out_fd = pp[0];
	return pid;
}

/* Run python3 -I -S -B -c script [args] under both filters; returns its
 * combined output, *status its wait status. */
static char *run_py(const char *script, const char *a1, const char *a2, int *status)
{
	const char *argv[] = {PYTHON, "-I", "-S", "-B", "-c", script, a1, a2, NULL};
	struct kid k = {{-1, -1, -1}, true};
	int fd;
	pid_t pid = spawn(&k, argv, &fd);
	char *out = slurp(fd);

	close(fd);
	CHECK(waitpid(pid, status, 0) == pid);
	return out;
}

/* The value of "name: value" lines in out, copied into dst. */
static bool line_value(const char *out, const char *name, char *dst, size_t cap)
{
	size_t n = strlen(name);

	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == ':' && p[n + 1] == ' ') {
			const char *v = p + n + 2, *e = strchr(v, '\n');
			size_t len = e ? (size_t)(e - v) : strlen(v);
			snprintf(dst, cap, "%.*s", (int)len, v);
			return true;
		}
	}
	return false;
}

/* ---- the filters themselves ---- */

TEST(build_once)
{
	const struct repl_bpf *f2, *l2;

	build();
	CHECK(first_f->len > 100 && first_f->len <= BPF_MAXINSNS);
	CHECK(late_f->len > 4 && late_f->len < 64);
	CHECK(repl__seccomp_build(&f2, &l2, NULL) == 0);
	CHECK(f2 == first_f && l2 == late_f);
}

TEST(late_hex_is_the_late_program)
{
	const unsigned char *b;
	const char *hex;
	size_t n;

	build();
	hex = repl__seccomp_late_hex();
	CHECK(hex != NULL);
	n = (size_t)late_f->len * sizeof(struct sock_filter);
	CHECK_INT(strlen(hex), 2 * n);
	b = late_f->insns;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		CHECK(sscanf(hex + 2 * i, "%2x", &v) == 1);
		CHECK_INT(v, b[i]);
		CHECK(hex[2 * i] == '0' || (hex[2 * i] >= 'a' && hex[2 * i] <= 'f') ||
		      (hex[2 * i] >= '1' && hex[2 * i] <= '9'));
	}
}

/* The placeholder pid appears as jump operands only, each behind a compare
 * of the argument's high half with 0; apply rejects a pid that is not. */
TEST(placeholder_is_patchable)
{
	const struct sock_filter *f;
	int n = 0;

	build();
	f = first_f->insns;
	for (unsigned i = 0; i < first_f->len; i++) {
		if (f[i].k != REPL_BPF_SELF)
			continue;
		n++;
		CHECK(f[i].code == (BPF_JMP | BPF_JEQ | BPF_K));
		/* ld [arg0 lo] right before, ld [arg0 hi] + jeq 0 before that */
		CHECK(i >= 3);
		CHECK(f[i - 1].code == (BPF_LD | BPF_W | BPF_ABS) && f[i - 1].k == 16);
		CHECK(f[i - 2].code == (BPF_JMP | BPF_JEQ | BPF_K) && f[i - 2].k == 0);
		CHECK(f[i - 3].code == (BPF_LD | BPF_W | BPF_ABS) && f[i - 3].k == 20);
	}
	CHECK(n >= 1);
	struct sock_filter one[1];
	CHECK_INT(repl__seccomp_apply(first_f, one, 0), EINVAL);
}

/* ---- CPython under both filters ---- */

static const char policy_py[] =
	"import os, sys, errno, ctypes, signal, threading\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"libc.syscall.restype = ctypes.c_long\n"
	"def late(h):\n"
	"    b = bytes.fromhex(h)\n"
	"    buf = ctypes.create_string_buffer(b, len(b))\n"
	"    class P(ctypes.Structure):\n"
	"        _fields_ = [('len', ctypes.c_ushort), ('f', ctypes.c_void_p)]\n"
	"    p = P(len(b) // 8, ctypes.addressof(buf))\n"
	"    if libc.prctl(22, 2, ctypes.byref(p), 0, 0):\n"
	"        raise OSError(ctypes.get_errno(), 'prctl')\n"
	"def T(name, fn):\n"
	"    try:\n"
	"        r = fn()\n"
	"        out = 'ok' if r is None else str(r)\n"
	"    except OSError as e:\n"
	"        out = '%s %s' % (type(e).__name__, errno.errorcode.get(e.errno, e.errno))\n"
	"    except BaseException as e:\n"
	"        out = '%s %s' % (type(e).__name__, e)\n"
	"    print('%s: %s' % (name, out), flush=True)\n"
	"def sc(nr, *a):\n"
	"    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])\n"
	"    return errno.errorcode[ctypes.get_errno()] if r == -1 else 'ok'\n"
	"def pr(*a):\n"
	"    r = libc.prctl(*[ctypes.c_long(x) for x in a])\n"
	"    return errno.errorcode[ctypes.get_errno()] if r == -1 else 'ok'\n"
	"T('late', lambda: late(sys.argv[1]))\n"
	"def status(key):\n"
	"    for l in open('/proc/self/status'):\n"
	"        if l.startswith(key + ':'):\n"
	"            return l.split()[1]\n"
	"T('filters', lambda: status('Seccomp_filters'))\n"
	"T('nnp', lambda: status('NoNewPrivs'))\n"
	"def modules():\n"
	"    import json, re, hashlib, decimal, datetime, collections, random, traceback\n"
	"    import zlib, struct, unicodedata, itertools, functools, math, statistics\n"
	"    assert json.loads(json.dumps({'a': [1, 'é']})) == {'a': [1, 'é']}\n"
	"    assert re.findall(r'\\d+', 'a1b22') == ['1', '22']\n"
	"    assert hashlib.sha256(b'x').hexdigest().startswith('2d711642')\n"
	"    assert str(decimal.Decimal('1.1') * 3) == '3.3'\n"
	"    assert zlib.decompress(zlib.compress(b'abc' * 99)) == b'abc' * 99\n"
	"    datetime.datetime.now(); random.random(); os.urandom(8)\n"
	"T('modules', modules)\n"
	"def threads():\n"
	"    from concurrent.futures import ThreadPoolExecutor\n"
	"    r = []\n"
	"    t = threading.Thread(target=r.append, args=(1,)); t.start(); t.join()\n"
	"    with ThreadPoolExecutor(4) as ex:\n"
	"        assert list(ex.map(lambda x: x * x, range(8))) == [x * x for x in range(8)]\n"
	"    assert r == [1]\n"
	"T('threads', threads)\n"
	"def files():\n"
	"    import shutil, tempfile\n"
	"    d = sys.argv[2]\n"
	"    p = os.path.join(d, 'f.txt')\n"
	"    with open(p, 'w') as f: f.write('hello')\n"
	"    with open(p) as f: assert f.read() == 'hello'\n"
	"    shutil.copy2(p, p + '.2'); os.rename(p + '.2', p + '.3')\n"
	"    os.mkdir(p + '.d'); os.rmdir(p + '.d')\n"
	"    assert sorted(os.listdir(d)) == ['f.txt', 'f.txt.3'], os.listdir(d)\n"
	"    os.unlink(p); os.unlink(p + '.3')\n"
	"    with tempfile.TemporaryDirectory(dir=d) as t: open(os.path.join(t, 'x'), 'w').close()\n"
	"T('files', files)\n"
	"def memfd():\n"
	"    import mmap\n"
	"    fd = os.memfd_create('x'); os.write(fd, b'abc' * 1000)\n"
	"    m = mmap.mmap(fd, 3000, mmap.MAP_SHARED, mmap.PROT_READ)\n"
	"    assert m[:3] == b'abc'; m.close(); os.close(fd)\n"
	"T('memfd', memfd)\n"
	"def sigself():\n"
	"    got = []\n"
	"    signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))\n"
	"    os.kill(os.getpid(), signal.SIGUSR1)\n"
	"    signal.raise_signal(signal.SIGUSR1)\n"
	"    assert got == [signal.SIGUSR1] * 2, got\n"
	"T('signal_self', sigself)\n"
	"T('kill_self', lambda: os.kill(os.getpid(), 0))\n"
	"T('pthread_kill', lambda: signal.pthread_kill(threading.get_ident(), 0))\n"
	"T('rlimit_self', lambda: __import__('resource').getrlimit(7) and None)\n"
	"T('isatty', lambda: os.isatty(1))\n"
	"def fionread():\n"
	"    import fcntl, termios, array\n"
	"    r, w = os.pipe(); os.write(w, b'abc')\n"
	"    a = array.array('i', [0]); fcntl.ioctl(r, termios.FIONREAD, a)\n"
	"    os.set_blocking(r, False)\n"
	"    return a[0]\n"
	"T('fionread', fionread)\n"
	"T('prctl_name', lambda: pr(15, ctypes.addressof(ctypes.create_string_buffer(b'w'))))\n"
	"def fork():\n"
	"    if os.fork() == 0: os._exit(0)\n"
	"T('fork', fork)\n"
	"T('subprocess', lambda: __import__('subprocess').run(['true']))\n"
	"T('system', lambda: os.system('true'))\n"
	"T('execv', lambda: os.execv('/bin/true', ['true']))\n"
	"import socket\n"
	"T('socket_inet', lambda: socket.socket())\n"
	"T('socket_unix', lambda: socket.socket(socket.AF_UNIX))\n"
	"T('socket_vsock', lambda: socket.socket(40, socket.SOCK_STREAM))\n"
	"T('socketpair', lambda: socket.socketpair())\n"
	"T('kill_parent', lambda: os.kill(os.getppid(), 0))\n"
	"T('kill_group', lambda: os.kill(0, 0))\n"
	"T('kill_all', lambda: os.kill(-1, 0))\n"
	"T('kill_self_high_bits', lambda: sc(62, (1 << 32) | os.getpid(), 0))\n"
	"T('tgkill_parent', lambda: sc(234, os.getppid(), os.getppid(), 0))\n"
	"T('tkill_parent', lambda: sc(200, os.getppid(), 0))\n"
	"T('ptrace', lambda: sc(101, 16, os.getppid(), 0, 0))\n"
	"T('process_vm_readv', lambda: sc(310, os.getppid(), 0, 0, 0, 0, 0))\n"
	"T('io_uring_setup', lambda: sc(425, 8, ctypes.addressof(ctypes.create_string_buffer(120))))\n"
	"T('clone3', lambda: sc(435, 0, 0))\n"
	"T('clone_process', lambda: sc(56, 17, 0, 0, 0, 0))\n"
	"T('pidfd_open', lambda: sc(434, os.getppid(), 0))\n"
	"T('unshare', lambda: sc(272, 0x10000000))\n"
	"T('mount', lambda: sc(165, 0, 0, 0, 0, 0))\n"
	"T('bpf', lambda: sc(321, 0, 0, 0))\n"
	"T('perf_event_open', lambda: sc(298, 0, 0, -1, -1, 0))\n"
	"T('userfaultfd', lambda: sc(323, 0))\n"
	"T('keyctl', lambda: sc(250, 0, 0))\n"
	"T('setuid', lambda: os.setuid(0))\n"
	"T('prlimit_parent', lambda: __import__('resource').prlimit(os.getppid(), 7))\n"
	"T('prctl_pdeathsig', lambda: pr(1, 0, 0, 0, 0))\n"
	"T('prctl_other', lambda: pr(29, 1, 0, 0, 0))\n"
	"T('ioctl_tiocsti', lambda: sc(16, 0, 0x5412, ctypes.addressof(ctypes.c_char(b'x'))))\n"
	"print('end: ok', flush=True)\n";

struct expect {
	const char *name, *want;
};

static const struct expect policy_want[] = {
	/* works */
	{"late", "ok"},
	{"filters", "2"},
	{"nnp", "1"},
	{"modules", "ok"},
	{"threads", "ok"},
	{"files", "ok"},
	{"memfd", "ok"},
	{"signal_self", "ok"},
	{"kill_self", "ok"},
	{"pthread_kill", "ok"},
	{"rlimit_self", "ok"},
	{"isatty", "False"},
	{"fionread", "3"},
	{"prctl_name", "ok"},
	/* denied, readably */
	{"fork", "PermissionError EPERM"},
	{"subprocess", "PermissionError EPERM"},
	{"execv", "PermissionError EPERM"},
	{"socket_inet", "PermissionError EPERM"},
	{"socket_unix", "PermissionError EPERM"},
	{"socket_vsock", "PermissionError EPERM"},
	{"socketpair", "PermissionError EPERM"},
	{"kill_parent", "PermissionError EPERM"},
	{"kill_group", "PermissionError EPERM"},
	{"kill_all", "PermissionError EPERM"},
	{"kill_self_high_bits", "EPERM"},
	{"tgkill_parent", "EPERM"},
	{"tkill_parent", "EPERM"},
	{"ptrace", "EPERM"},
	{"process_vm_readv", "EPERM"},
	{"io_uring_setup", "EPERM"},
	{"clone_process", "EPERM"},
	{"unshare", "EPERM"},
	{"mount", "EPERM"},
	{"bpf", "EPERM"},
	{"perf_event_open", "EPERM"},
	{"userfaultfd", "EPERM"},
	{"keyctl", "EPERM"},
	{"setuid", "PermissionError EPERM"},
	{"prlimit_parent", "PermissionError EPERM"},
	{"prctl_pdeathsig", "EPERM"},
	/* denied by the default: glibc falls back, or it is simply absent */
	{"clone3", "ENOSYS"},
	{"pidfd_open", "ENOSYS"},
	{"prctl_other", "ENOSYS"},
	{"ioctl_tiocsti", "ENOSYS"},
	{"end", "ok"},
};

TEST(python_under_both_filters)
{
	char got[256];
	int status;
	char *out;

	build();
	out = run_py(policy_py, repl__seccomp_late_hex(), harness_tmpdir(), &status);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, output:\n%s", status,
		  out);
	for (size_t i = 0; i < ARRAY_SIZE(policy_want); i++) {
		const struct expect *e = &policy_want[i];
		CHECK_MSG(line_value(out, e->name, got, sizeof(got)), "no line '%s' in:\n%s",
			  e->name, out);
		CHECK_MSG(strcmp(got, e->want) == 0, "%s: got '%s', want '%s'", e->name, got,
			  e->want);
	}
	/* os.system cannot start a shell: any answer but 0 */
	CHECK(line_value(out, "system", got, sizeof(got)));
	CHECK_MSG(strcmp(got, "0") != 0, "os.system('true') returned 0");
	free(out);
}

/* i386 system calls (int 0x80) and x32 numbers are a foreign architecture:
 * the process dies of SIGSYS, whatever the call. */
static const char int80_py[] =
	"import ctypes, mmap\n"
	"m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
	"m.write(bytes.fromhex('b814000000cd80c3'))  # mov eax, 20 (getpid); int 0x80; ret\n"
	"f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
	"print('pid', f(), flush=True)\n";

static const char x32_py[] =
	"import ctypes\n"
	"libc = ctypes.CDLL(None)\n"
	"print('pid', libc.syscall(0x40000000 | 39), flush=True)\n";

TEST(foreign_arch_kills)
{
	const char *scripts[] = {int80_py, x32_py};
	int status;

	build();
	for (size_t i = 0; i < ARRAY_SIZE(scripts); i++) {
		char *out = run_py(scripts[i], "-", "-", &status);
		CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
			  "script %zu: status %d, output: %s", i, status, out);
		CHECK(strstr(out, "pid") == NULL);
		free(out);
	}
}

/* ---- the runtime applies LATE_FILTER ---- */

static void send_frame(int fd, const char *json)
{
	size_t n = strlen(json);
	unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
				(unsigned char)(n >> 8), (unsigned char)n};

	CHECK(write(fd, hdr, 4) == 4);
	CHECK(write(fd, json, n) == (ssize_t)n);
}

static void read_full(int fd, void *p, size_t n)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	size_t got = 0;

	while (got < n) {
		CHECK_MSG(poll(&pf, 1, 30000) == 1, "no frame from the runtime for 30 s");
		ssize_t r = read(fd, (char *)p + got, n - got);
		CHECK_MSG(r > 0, "the runtime closed fd 4");
		got += (size_t)r;
	}
}

static char *recv_frame(int fd)
{
	unsigned char hdr[4];
	size_t n;
	char *s;

	read_full(fd, hdr, 4);
	n = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	CHECK(n < (1u << 20));
	s = xmalloc(n + 1);
	read_full(fd, s, n);
	s[n] = '\0';
	return s;
}

struct worker {
	pid_t pid;
	int to, from, log;
};

/* Start the embedded runtime on a 5-byte context with the given argv[6]
 * (NULL: leave it out, as an older controller would). */
static void start_runtime(struct worker *w, const char *late)
{
	const struct embedded_file *rt = embedded_find("runtime.py");
	const char *argv[] = {PYTHON, "-I", "-S", "-B", "-c", NULL, "5", "-1", "1000", "1048576",
			      "100", late, NULL};
	struct kid k = {{-1, -1, -1}, true};
	int in[2], out[2], mfd;

	CHECK(rt != NULL);
	argv[5] = rt->data;
	CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	mfd = memfd_create("ctx", MFD_CLOEXEC);
	CHECK(mfd >= 0 && write(mfd, "hello", 5) == 5);
	/* out of the way of 3..5 before the child dup2s them there */
	k.fds[0] = fcntl(in[0], F_DUPFD_CLOEXEC, 20);
	k.fds[1] = fcntl(out[1], F_DUPFD_CLOEXEC, 20);
	k.fds[2] = fcntl(mfd, F_DUPFD_CLOEXEC, 20);
	w->pid = spawn(&k, argv, &w->log);
	for (int i = 0; i < 3; i++)
		close(k.fds[i]);
	close(in[0]);
	close(out[1]);
	close(mfd);
	w->to = in[1];
	w->from = out[0];
}

static int stop_runtime(struct worker *w)
{
	int status;

	close(w->to);
	close(w->from);
	close(w->log);
	CHECK(waitpid(w->pid, &status, 0) == w->pid);
	return status;
}

TEST(runtime_stacks_late_filter)
{
	struct worker w;
	char *f;

	build();
	start_runtime(&w, repl__seccomp_late_hex());
	send_frame(w.to, "{\"type\":\"context\"}");
	f = recv_frame(w.from);
	CHECK_CONTAINS(f, "\"type\":\"ready\"");
	free(f);
	send_frame(w.to, "{\"type\":\"exec\",\"id\":1,\"code\":\"import os\\n"
			 "print('filters', open('/proc/self/status').read()"
			 ".split('Seccomp_filters:')[1].split()[0])\\n"
			 "try:\\n    os.execv('/bin/true', ['true'])\\n"
			 "except OSError as e:\\n    print('execv', e.errno)\\n"
			 "print(len(context))\"}");
	f = recv_frame(w.from);
	CHECK_CONTAINS(f, "\"type\":\"result\"");
	CHECK_CONTAINS(f, "\"output\":\"filters 2\\nexecv 1\\n5\\n\"");
	free(f);
	stop_runtime(&w);
}

TEST(runtime_without_late_filter)
{
	const char *lates[] = {"-", NULL};

	build();
	for (size_t i = 0; i < ARRAY_SIZE(lates); i++) {
		struct worker w;
		char *f;

		start_runtime(&w, lates[i]);
		send_frame(w.to, "{\"type\":\"context\"}");
		f = recv_frame(w.from);
		CHECK_CONTAINS(f, "\"type\":\"ready\"");
		free(f);
		send_frame(w.to, "{\"type\":\"exec\",\"id\":1,\"code\":\"print(open('/proc/self/"
				 "status').read().split('Seccomp_filters:')[1].split()[0])\"}");
		f = recv_frame(w.from);
		CHECK_CONTAINS(f, "\"output\":\"1\\n\"");
		free(f);
		stop_runtime(&w);
	}
}

TEST(runtime_bad_late_filter_is_fatal)
{
	/* not hex; not whole instructions; an instruction the kernel rejects
	 * (a load from outside struct seccomp_data) */
	const char *bad[] = {"zz", "0000", "2000000000100000060000000000ff7f"};

	build();
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct worker w;
		char *f;
		int st;

		start_runtime(&w, bad[i]);
		f = recv_frame(w.from);
		CHECK_CONTAINS(f, "\"type\":\"fatal\"");
		CHECK_CONTAINS(f, "late seccomp filter: ");
		CHECK_CONTAINS(f, "\"layer\":\"seccomp\"");
		if (i == 2)
			CHECK_CONTAINS(f, "errno 22 (Invalid argument)");
		free(f);
		st = stop_runtime(&w);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 70);
	}
}
