/* SPDX-License-Identifier: MIT */
/* tests/test_seccomp.c -- the worker's seccomp filters, for real:
 * /usr/bin/python3 started under the first filter stacks the late one and
 * runs function cells (they must work) and attack cells (they must get
 * the errno the policy names); foreign-arch syscalls kill it; the runtime
 * applies LATE_FILTER from its argv and makes itself non-dumpable; it
 * starts from its code on fd 6 (repl/code.c), unmarshalled or compiled. Then,
 * through repl_start, the parts of sandbox.c around them: limits clamped
 * to the controller's, ambient capabilities, peers' /proc, the fault
 * switch, the mandatory-layer messages, a context over RLIMIT_AS, and the
 * scratch quota walk. */
#include "harness.h"
#include "../common/common.h"
#include "../common/embed.h"
#include "../repl/repl_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* fd number of the child's fds 3, 4, 5, 6 (or -1), placed by the child. */
struct kid {
	int fds[4];
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
		for (int i = 0; i < 4; i++)
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

/* Run python3 -I -S -B -c script [args] under the first filter (when
 * first) or none; returns its combined output, *status its wait status. */
static char *run_py_as(bool first, const char *script, const char *a1, const char *a2, int *status)
{
	const char *argv[] = {PYTHON, "-I", "-S", "-B", "-c", script, a1, a2, NULL};
	struct kid k = {{-1, -1, -1, -1}, first};
	int fd;
	pid_t pid = spawn(&k, argv, &fd);
	char *out = slurp(fd);

	close(fd);
	CHECK(waitpid(pid, status, 0) == pid);
	return out;
}

/* The same under the first filter (the script stacks the late one). */
static char *run_py(const char *script, const char *a1, const char *a2, int *status)
{
	return run_py_as(true, script, a1, a2, status);
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
	"    assert statistics.mean([1, 2, 3]) == 2 and math.isqrt(17) == 4\n"
	"    assert list(itertools.islice(itertools.count(), 3)) == [0, 1, 2]\n"
	"    assert collections.Counter('aab')['a'] == 2\n"
	"    import sqlite3\n"
	"    db = sqlite3.connect(':memory:'); db.execute('create table t (x)')\n"
	"    db.executemany('insert into t values (?)', [(1,), (2,)])\n"
	"    assert db.execute('select sum(x) from t').fetchone() == (3,); db.close()\n"
	"T('modules', modules)\n"
	"def callback():\n"
	"    # a libffi closure: its trampoline must not need memfd_create\n"
	"    return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)(6)\n"
	"T('ctypes_callback', callback)\n"
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
	"    with tempfile.TemporaryFile(dir=d) as t: t.write(b'x'); t.seek(0); assert t.read() == b'x'\n"
	"    db = __import__('sqlite3').connect(os.path.join(d, 'x.db'))\n"
	"    db.execute('create table t (x)'); db.commit(); db.close(); os.unlink(os.path.join(d, 'x.db'))\n"
	"T('files', files)\n"
	"def fcntl_ok():\n"
	"    import fcntl, struct\n"
	"    r, w = os.pipe()\n"
	"    for fd in (fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(r, fcntl.F_DUPFD_CLOEXEC, 10)):\n"
	"        assert fd >= 10; os.close(fd)\n"
	"    fcntl.fcntl(r, fcntl.F_SETFD, fcntl.fcntl(r, fcntl.F_GETFD) | fcntl.FD_CLOEXEC)\n"
	"    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
	"    os.set_blocking(w, False); os.set_inheritable(w, True)\n"
	"    assert fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 16) >= 1 << 16\n"
	"    assert fcntl.fcntl(w, fcntl.F_GETPIPE_SZ) >= 1 << 16\n"
	"    p = os.path.join(sys.argv[2], 'lock')\n"
	"    with open(p, 'w') as f:\n"
	"        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); fcntl.lockf(f, fcntl.LOCK_UN)\n"
	"        fcntl.lockf(f, fcntl.LOCK_EX); fcntl.lockf(f, fcntl.LOCK_UN)\n"
	"        lk = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)\n"
	"        fcntl.fcntl(f, fcntl.F_GETLK, lk)\n"
	"        fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0))\n"
	"        fcntl.fcntl(f, fcntl.F_OFD_GETLK, lk)\n"
	"        fcntl.flock(f, fcntl.LOCK_EX); fcntl.flock(f, fcntl.LOCK_UN)\n"
	"    os.unlink(p); os.close(r); os.close(w)\n"
	"T('fcntl_ok', fcntl_ok)\n"
	"def fc(cmd, arg, hi=0):\n"
	"    r, w = os.pipe()\n"
	"    try: return sc(72, r, cmd | hi, arg)\n"
	"    finally: os.close(r); os.close(w)\n"
	"def fl_async():\n"
	"    import fcntl\n"
	"    r, w = os.pipe()\n"
	"    try: fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)\n"
	"    finally: os.close(r); os.close(w)\n"
	"T('fcntl_setown', lambda: __import__('fcntl').fcntl(0, 8, os.getppid()))\n"
	"T('fcntl_setown_high_bits', lambda: fc(8, os.getppid(), 1 << 32))\n"
	"T('fcntl_setown_ex', lambda: fc(15, ctypes.addressof(ctypes.create_string_buffer(8))))\n"
	"T('fcntl_setsig', lambda: fc(10, 9))\n"
	"T('fcntl_notify', lambda: fc(1026, 0x80000001))\n"
	"T('fcntl_setlease', lambda: fc(1024, 1))\n"
	"T('fcntl_async', fl_async)\n"
	"T('fcntl_async_high_bits', lambda: fc(4, os.O_ASYNC, 1 << 32))\n"
	"T('fcntl_getown', lambda: fc(9, 0))\n"
	"def memfd():\n"
	"    fd = os.memfd_create('x'); os.close(fd)\n"
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
	"T('sysinfo', lambda: sc(99, ctypes.addressof(ctypes.create_string_buffer(256))))\n"
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
	"T('prctl_dumpable', lambda: pr(4, 1, 0, 0, 0))\n"
	"T('prctl_dumpable_high_bits', lambda: pr(4, 1 << 32, 0, 0, 0))\n"
	"T('prctl_nondumpable', lambda: pr(4, 0, 0, 0, 0))\n"
	"T('dumpable_now', lambda: libc.prctl(3, 0, 0, 0, 0))\n"
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
	{"ctypes_callback", "7"},
	{"fcntl_ok", "ok"},
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
	{"prctl_dumpable", "EPERM"},
	{"prctl_dumpable_high_bits", "EPERM"},
	{"prctl_nondumpable", "ok"},
	{"dumpable_now", "0"},
	/* memory outside RLIMIT_AS */
	{"memfd", "PermissionError EPERM"},
	/* signals to others by SIGIO: the owner, the signal, O_ASYNC */
	{"fcntl_setown", "PermissionError EPERM"},
	{"fcntl_setown_high_bits", "EPERM"},
	{"fcntl_setown_ex", "EPERM"},
	{"fcntl_setsig", "EPERM"},
	{"fcntl_notify", "EPERM"},
	{"fcntl_setlease", "EPERM"},
	{"fcntl_async", "PermissionError EPERM"},
	{"fcntl_async_high_bits", "EPERM"},
	/* denied by the default: glibc falls back, or it is simply absent */
	{"clone3", "ENOSYS"},
	{"pidfd_open", "ENOSYS"},
	{"sysinfo", "ENOSYS"}, /* host-wide facts (issue 19) */
	{"prctl_other", "ENOSYS"},
	{"ioctl_tiocsti", "ENOSYS"},
	{"fcntl_getown", "ENOSYS"},
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

/* SIGIO as a weapon: F_SETOWN names another process, F_SETSIG makes the
 * signal SIGKILL, O_ASYNC on a pipe sends it when the pipe gets data. It
 * killed a process of the same uid; under the filter every step fails
 * and the victim lives. Unfiltered, the same script kills it (so the
 * attack itself is sound). */
static const char sigio_py[] =
	"import os, sys, fcntl\n"
	"victim = int(sys.argv[1])\n"
	"r, w = os.pipe()\n"
	"def step(name, fn):\n"
	"    try:\n"
	"        fn(); print(name, 'ok', flush=True)\n"
	"    except OSError as e:\n"
	"        print(name, e.errno, flush=True)\n"
	"step('setown', lambda: fcntl.fcntl(r, fcntl.F_SETOWN, victim))\n"
	"step('setsig', lambda: fcntl.fcntl(r, fcntl.F_SETSIG, 9))\n"
	"step('async', lambda: fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC))\n"
	"os.write(w, b'x')\n";

static bool sigio_kills(bool filtered, char **out)
{
	pid_t victim = fork();
	char arg[16];
	int status;
	bool dead;

	CHECK(victim >= 0);
	if (victim == 0) {
		for (;;)
			pause();
	}
	snprintf(arg, sizeof(arg), "%d", (int)victim);
	*out = run_py_as(filtered, sigio_py, arg, "-", &status);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, *out);
	usleep(100 * 1000);
	dead = waitpid(victim, &status, WNOHANG) == victim;
	if (!dead) {
		kill(victim, SIGKILL);
		CHECK(waitpid(victim, &status, 0) == victim);
	}
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	return dead;
}

TEST(sigio_cannot_signal_others)
{
	char *out;

	build();
	CHECK_MSG(sigio_kills(false, &out), "the unfiltered attack did not kill: %s", out);
	free(out);
	CHECK_MSG(!sigio_kills(true, &out), "SIGIO killed another process: %s", out);
	CHECK_CONTAINS(out, "setown 1\nsetsig 1\nasync 1\n");
	free(out);
}

/* O_ASYNC alone on a terminal: the tty makes its foreground process group
 * the owner, and input then sends it SIGIO, whose default action kills.
 * A worker that can open the user's terminal (not root, no Landlock)
 * would kill the controller's job. The victim here is a session leader
 * whose controlling terminal is a fresh pty. */
static const char tty_py[] =
	"import os, sys, fcntl, time\n"
	"fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
	"try:\n"
	"    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)\n"
	"    print('async ok', flush=True)\n"
	"except OSError as e:\n"
	"    print('async', e.errno, flush=True)\n"
	"# the user types (fd 3: the pty's master, only the test's way to type)\n"
	"os.write(3, b'x\\n')\n"
	"time.sleep(0.2)\n";

static bool tty_async_kills(bool filtered, char **out)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), status;
	char slave[64];
	pid_t victim;
	bool dead;

	CHECK(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
	CHECK(ptsname_r(m, slave, sizeof(slave)) == 0);
	victim = fork();
	CHECK(victim >= 0);
	if (victim == 0) {
		/* a session leader opening a tty takes it as its terminal */
		if (setsid() < 0 || open(slave, O_RDWR) < 0)
			_exit(99);
		for (;;)
			pause();
	}
	usleep(100 * 1000);
	{
		const char *argv[] = {PYTHON, "-I", "-S", "-B", "-c", tty_py, slave, NULL};
		/* out of the way of 3 before the child dup2s it there */
		struct kid k = {{fcntl(m, F_DUPFD_CLOEXEC, 20), -1, -1, -1}, filtered};
		int fd;
		pid_t py = spawn(&k, argv, &fd);

		close(k.fds[0]);
		*out = slurp(fd);
		close(fd);
		CHECK(waitpid(py, &status, 0) == py);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status,
			  *out);
	}
	dead = waitpid(victim, &status, WNOHANG) == victim;
	if (!dead) {
		kill(victim, SIGKILL);
		CHECK(waitpid(victim, &status, 0) == victim);
	}
	close(m);
	return dead && WIFSIGNALED(status) && WTERMSIG(status) == SIGIO;
}

TEST(tty_async_cannot_signal_its_foreground)
{
	char *out;
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	if (m < 0)
		SKIP("no pseudo-terminals here: %s", strerror(errno));
	close(m);
	build();
	CHECK_MSG(tty_async_kills(false, &out), "the unfiltered attack did not kill: %s", out);
	free(out);
	CHECK_MSG(!tty_async_kills(true, &out), "SIGIO from a tty killed its session: %s", out);
	CHECK_STR(out, "async 1\n");
	free(out);
}

/* i386 system calls (int 0x80) and x32 numbers are a foreign architecture:
 * the process dies of SIGSYS, whatever the call. A kernel built without
 * IA32 emulation (some VMs': int 0x80 is a SIGSEGV with no filter at all)
 * has no such calls to make: that script is checked only where it runs
 * unfiltered. */
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
		char *out = run_py_as(false, scripts[i], "-", "-", &status);
		bool native = WIFEXITED(status) && strstr(out, "pid") != NULL;
		free(out);
		if (i == 0 && !native && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
			printf("  note: int 0x80 faults here with no filter (no IA32 "
			       "emulation in this kernel): not checked\n");
			continue;
		}
		CHECK_MSG(native, "script %zu does not run unfiltered: status %d", i, status);
		out = run_py(scripts[i], "-", "-", &status);
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
 * (NULL: leave it out, as an older controller would): its source as -c,
 * or (code >= 0) the bootstrap of repl/code.c with code on fd 6. */
static void start_runtime_code(struct worker *w, const char *late, int code)
{
	const struct embedded_file *rt = embed_find("runtime.py");
	const char *argv[] = {PYTHON, "-I", "-S", "-B", "-c", NULL, "5", "-1", "1000", "1048576",
			      "100", late, NULL};
	struct kid k = {{-1, -1, -1, -1}, true};
	int in[2], out[2], mfd;

	CHECK(rt != NULL);
	argv[5] = code >= 0 ? repl__code_boot() : rt->data;
	if (code >= 0)
		k.fds[3] = fcntl(code, F_DUPFD_CLOEXEC, 20);
	CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	mfd = memfd_create("ctx", MFD_CLOEXEC);
	CHECK(mfd >= 0 && write(mfd, "hello", 5) == 5);
	/* out of the way of 3..5 before the child dup2s them there */
	k.fds[0] = fcntl(in[0], F_DUPFD_CLOEXEC, 20);
	k.fds[1] = fcntl(out[1], F_DUPFD_CLOEXEC, 20);
	k.fds[2] = fcntl(mfd, F_DUPFD_CLOEXEC, 20);
	w->pid = spawn(&k, argv, &w->log);
	for (int i = 0; i < 4; i++)
		if (k.fds[i] >= 0)
			close(k.fds[i]);
	close(in[0]);
	close(out[1]);
	close(mfd);
	w->to = in[1];
	w->from = out[0];
}

static void start_runtime(struct worker *w, const char *late)
{
	start_runtime_code(w, late, -1);
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

/* The context frame, "ready", then the exec frame exec: its result frame
 * (fresh). */
static char *exec_after_ready(struct worker *w, const char *exec)
{
	char *f;
	send_frame(w->to, "{\"type\":\"context\"}");
	f = recv_frame(w->from);
	CHECK_CONTAINS(f, "\"type\":\"ready\"");
	free(f);
	send_frame(w->to, exec);
	return recv_frame(w->from);
}

TEST(runtime_stacks_late_filter)
{
	struct worker w;
	char *f;

	build();
	start_runtime(&w, repl__seccomp_late_hex());
	f = exec_after_ready(&w, "{\"type\":\"exec\",\"id\":1,\"code\":\"import os\\n"
				 "print('filters', open('/proc/self/status').read()"
				 ".split('Seccomp_filters:')[1].split()[0])\\n"
				 "try:\\n    os.execv('/bin/true', ['true'])\\n"
				 "except OSError as e:\\n    print('execv', e.errno)\\n"
				 "print(len(context))\"}");
	CHECK_CONTAINS(f, "\"type\":\"result\"");
	CHECK_CONTAINS(f, "\"output\":\"filters 2\\nexecv 1\\n5\\n\"");
	free(f);
	stop_runtime(&w);
}

/* A python3 started cold reads the runtime from fd 6 (repl/code.c): the
 * build compiled it for this interpreter, so it is unmarshalled; a code
 * for another interpreter (its magic changed) falls back to the source.
 * Either way fd 6 is closed before any model code runs, and the memfd is
 * sealed against a worker that kept it. */
TEST(runtime_code_from_fd6)
{
	struct rlm_err err = {0, ""};
	int fd = repl__code_fd(&err), other;
	unsigned char head[20];
	char *magic = NULL, want[9], *buf;
	struct stat st;

	CHECK_MSG(fd >= 0, "repl__code_fd: %s", err.msg);
	CHECK(repl__code_fd(NULL) == fd); /* once per process */
	CHECK(fstat(fd, &st) == 0 && st.st_size > 20);
	CHECK(pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head));
	CHECK(write(fd, "x", 1) < 0 && errno == EPERM);
	CHECK(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE);
	/* the build's python3 is this one: its code is there, for its magic */
	{
		FILE *p = popen(PYTHON " -c 'import importlib.util as u; print(u.MAGIC_NUMBER.hex())'",
				"r");
		char line[64] = "";
		CHECK(p != NULL && fgets(line, sizeof(line), p) != NULL);
		pclose(p);
		magic = xstrndup(line, 8);
	}
	snprintf(want, sizeof(want), "%02x%02x%02x%02x", head[0], head[1], head[2], head[3]);
	CHECK_STR(want, magic);
	CHECK((head[4] << 24 | head[5] << 16 | head[6] << 8 | head[7]) > 1000); /* the code */
	free(magic);
	/* the same memfd with another interpreter's magic: the source */
	buf = xmalloc((size_t)st.st_size);
	CHECK(pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
	buf[0] ^= 0x5a;
	other = memfd_create("other-magic", MFD_CLOEXEC);
	CHECK(other >= 0 && write(other, buf, (size_t)st.st_size) == st.st_size);
	free(buf);
	build();
	for (int i = 0; i < 2; i++) {
		struct worker w;
		char *f;

		start_runtime_code(&w, repl__seccomp_late_hex(), i == 0 ? fd : other);
		f = exec_after_ready(&w, "{\"type\":\"exec\",\"id\":1,\"code\":\"import os\\n"
					 "try:\\n    os.fstat(6)\\nexcept OSError as e:\\n"
					 "    print('fd 6 closed', e.errno)\\n"
					 "print(len(context))\"}");
		CHECK_CONTAINS(f, "\"output\":\"fd 6 closed 9\\n5\\n\"");
		free(f);
		stop_runtime(&w);
	}
	close(other);
}

TEST(runtime_without_late_filter)
{
	const char *lates[] = {"-", NULL};

	build();
	for (size_t i = 0; i < ARRAY_SIZE(lates); i++) {
		struct worker w;
		char *f;

		start_runtime(&w, lates[i]);
		f = exec_after_ready(&w, "{\"type\":\"exec\",\"id\":1,\"code\":\"print(open("
					 "'/proc/self/status').read().split('Seccomp_filters:')"
					 "[1].split()[0])\"}");
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

/* ---- through repl_start: the sandbox around the runtime ---- */

static void cfg_ctx(struct repl_cfg *cfg, const char *text, size_t len)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ctx.text = text;
	cfg->ctx.len = len;
	cfg->exec_timeout_ns = 20000 * (int64_t)1000000;
}

static struct repl *start_ok(const struct repl_cfg *cfg)
{
	struct repl *r = NULL;
	struct rlm_err err = {0, ""};
	int rc = repl_start(cfg, &r, &err);

	CHECK_MSG(rc == 0 && r, "repl_start: %d %s", rc, err.msg);
	return r;
}

/* Run code; its output (a fresh string). */
static char *exec_out(struct repl *r, const char *code)
{
	struct repl_result res;
	struct rlm_err err = {0, ""};
	char *out;
	int rc = repl_exec(r, code, strlen(code), 0, &res, &err);

	CHECK_MSG(rc == 0, "repl_exec: %d %s", rc, err.msg);
	out = xstrdup(res.output);
	repl_result_release(&res);
	return out;
}

/* Run fn in a child process (it changes its limits, its uid, its
 * environment) and check that it passed. */
static void in_child(void (*fn)(void))
{
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: status %d",
		  status);
}

/* A controller whose hard limits are below the plan (ulimit -Ht 100, -Hn
 * 48) clamps the plan to them: before, setrlimit failed with EPERM and
 * the whole rlimits layer (CORE 0, NOFILE, FSIZE) was left out. */
static void clamped(void)
{
	struct rlimit cpu = {100, 100}, files = {48, 48};
	struct repl_sandbox_status st;
	struct repl_cfg cfg;
	struct repl *r;
	char *out;

	CHECK(setrlimit(RLIMIT_CPU, &cpu) == 0 && setrlimit(RLIMIT_NOFILE, &files) == 0);
	unsetenv("RLM_SANDBOX_DISABLE");
	unsetenv("RLM_SANDBOX_FAULT");
	cfg_ctx(&cfg, "hello", 5);
	r = start_ok(&cfg);
	repl_sandbox_status(r, &st);
	CHECK_MSG(st.on[REPL_L_RLIMITS], "rlimits off: %s", st.why[REPL_L_RLIMITS]);
	CHECK_CONTAINS(st.line, ",NOFILE48,");
	CHECK_CONTAINS(st.line, ",CPU100");
	out = exec_out(r, "import resource as R\n"
			  "print(R.getrlimit(R.RLIMIT_CPU), R.getrlimit(R.RLIMIT_NOFILE), "
			  "R.getrlimit(R.RLIMIT_CORE), R.getrlimit(R.RLIMIT_FSIZE)[0] > 0)");
	CHECK_STR(out, "(100, 100) (48, 48) (0, 0) True\n");
	free(out);
	repl_free(r);
}

TEST(rlimits_clamped_to_the_controllers_hard_limits)
{
	in_child(clamped);
}

/* A non-root controller with ambient capabilities (capsh --addamb,
 * AmbientCapabilities=) must not hand them to python3 across execve.
 * Without a user namespace nothing else clears them: verify refused
 * every worker ("kept capabilities"). */
#define CAP_BIT 10 /* CAP_NET_BIND_SERVICE */

static void ambient(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{1u << CAP_BIT, 1u << CAP_BIT, 1u << CAP_BIT},
						 {0, 0, 0}};
	struct repl_stats rs;
	struct repl_cfg cfg;
	struct repl *r;
	char path[64], line[256], *out;
	unsigned long long amb = ~0ULL, eff = ~0ULL, prm = ~0ULL;
	FILE *f;

	CHECK(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0);
	CHECK(setgroups(0, NULL) == 0);
	CHECK(setresgid(4242, 4242, 4242) == 0 && setresuid(4242, 4242, 4242) == 0);
	CHECK(syscall(SYS_capset, &hdr, data) == 0);
	CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_BIT, 0, 0) == 0);
	setenv("TMPDIR", "/tmp", 1);
	setenv("RLM_SANDBOX_DISABLE", "userns", 1);
	unsetenv("RLM_SANDBOX_FAULT");
	cfg_ctx(&cfg, "hello", 5);
	r = start_ok(&cfg);
	repl_stats(r, &rs);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)rs.pid);
	CHECK((f = fopen(path, "re")) != NULL);
	while (fgets(line, sizeof(line), f)) {
		(void)(sscanf(line, "CapAmb: %llx", &amb) == 1 ||
		       sscanf(line, "CapEff: %llx", &eff) == 1 ||
		       sscanf(line, "CapPrm: %llx", &prm) == 1);
	}
	fclose(f);
	CHECK_MSG(amb == 0 && eff == 0 && prm == 0,
		  "the worker has CapAmb %llx CapEff %llx CapPrm %llx", amb, eff, prm);
	out = exec_out(r, "import os\nprint(os.geteuid())");
	CHECK_STR(out, "4242\n");
	free(out);
	repl_free(r);
}

TEST(ambient_capabilities_do_not_reach_the_worker)
{
	if (geteuid() != 0)
		SKIP("needs root to set up ambient capabilities");
	in_child(ambient);
}

/* Two workers of one uid (root controller, no pid namespace, no
 * Landlock: fs=uid-65534): each is non-dumpable after start-up, so one
 * cannot open the other's context through /proc/PID/fd/5 (or its
 * environ, mem). The controller still reads /proc/PID/status (verify ran:
 * two filters). */
static void peers(void)
{
	static const char secret[] = "the context of worker B: do not read";
	struct repl_sandbox_status st;
	struct repl_stats sb;
	struct repl_cfg cfg;
	struct repl *a, *b;
	char code[512], *out;

	setenv("RLM_SANDBOX_DISABLE", "userns,landlock", 1);
	unsetenv("RLM_SANDBOX_FAULT");
	cfg_ctx(&cfg, "worker A", 8);
	a = start_ok(&cfg);
	cfg_ctx(&cfg, secret, strlen(secret));
	b = start_ok(&cfg);
	repl_sandbox_status(b, &st);
	CHECK_STR(st.fs, "uid-65534");
	CHECK_INT(st.seccomp_filters, 2);
	repl_stats(b, &sb);
	snprintf(code, sizeof(code),
		 "import ctypes\n"
		 "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"
		 "for f in ('fd/5', 'environ', 'mem'):\n"
		 "    try:\n"
		 "        print(f, open('/proc/%d/' + f, 'rb').read(64))\n"
		 "    except OSError as e:\n"
		 "        print(f, 'errno', e.errno)\n",
		 (int)sb.pid);
	out = exec_out(a, code);
	CHECK(!strstr(out, "worker B"));
	CHECK_STR(out, "dumpable 0\nfd/5 errno 13\nenviron errno 13\nmem errno 13\n");
	free(out);
	repl_free(a);
	repl_free(b);
}

TEST(workers_cannot_read_each_other)
{
	if (geteuid() != 0)
		SKIP("the uid-65534 level needs a root controller");
	in_child(peers);
}

/* RLM_SANDBOX_FAULT=<layer>:<ERRNO> fails the child at that layer with
 * that errno; a bad name is an error, not silently no fault. */
static void faults(void)
{
	struct repl_sandbox_status st;
	struct repl_cfg cfg;
	struct rlm_err err = {0, ""};
	struct repl *r = NULL;
	int rc;

	unsetenv("RLM_SANDBOX_DISABLE");
	cfg_ctx(&cfg, "hello", 5);
	setenv("RLM_SANDBOX_FAULT", "mntns:EFOO", 1);
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "RLM_SANDBOX_FAULT: unknown errno 'EFOO'");
	setenv("RLM_SANDBOX_FAULT", "nosuchlayer", 1);
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "RLM_SANDBOX_FAULT: unknown sandbox layer 'nosuchlayer'");

	/* A refusal: the layer is left out, with the errno in its why. */
	setenv("RLM_SANDBOX_FAULT", "mntns:EACCES", 1);
	r = start_ok(&cfg);
	repl_sandbox_status(r, &st);
	CHECK(!st.on[REPL_L_MNTNS]);
	CHECK_CONTAINS(st.why[REPL_L_MNTNS], "errno 13");
	repl_free(r);

	/* A transient error reaches the controller as itself (whether it
	 * fails the start or is retried is worker.c's policy). */
	setenv("RLM_SANDBOX_FAULT", "netns:ENOMEM", 1);
	r = NULL;
	rc = repl_start(&cfg, &r, &err);
	if (rc == 0) {
		repl_sandbox_status(r, &st);
		CHECK_CONTAINS(st.why[REPL_L_NETNS], "errno 12");
		repl_free(r);
	} else {
		CHECK_CONTAINS(err.msg, "errno 12");
	}
	unsetenv("RLM_SANDBOX_FAULT");
}

TEST(fault_injection_takes_an_errno)
{
	in_child(faults);
}

/* A mandatory layer that is off: repl_sandbox_check and repl_start say
 * the same, and name what turned it off (the variable or the request),
 * with the fix for that. */
static void mandatory(void)
{
	static const struct {
		const char *env;
		unsigned disable;
		const char *want, *absent;
	} cases[] = {
	    {NULL, 1u << REPL_L_SECCOMP,
	     "seccomp is disabled (by request), and model code does not run without it: stop "
	     "disabling it, or pass --unsafe-no-sandbox to run it anyway (the other layers still "
	     "apply)",
	     "RLM_SANDBOX_DISABLE"},
	    {"seccomp,landlock", 0,
	     "seccomp is disabled (by RLM_SANDBOX_DISABLE), and model code does not run without "
	     "it: take it out of RLM_SANDBOX_DISABLE, or pass --unsafe-no-sandbox to run it anyway "
	     "(the layers RLM_SANDBOX_DISABLE leaves on still apply)",
	     "request"},
	    {NULL, 1u << REPL_L_IDENTITY,
	     "identity is disabled (by request), and model code does not run as root: stop "
	     "disabling it, or pass --unsafe-no-sandbox to run it anyway (the other layers still "
	     "apply)",
	     "RLM_SANDBOX_DISABLE"},
	};

	unsetenv("RLM_SANDBOX_FAULT");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rlm_err e1 = {0, ""}, e2 = {0, ""};
		struct repl_cfg cfg;
		struct repl *r = NULL;

		if ((cases[i].disable & (1u << REPL_L_IDENTITY)) && geteuid() != 0)
			continue;
		if (cases[i].env)
			setenv("RLM_SANDBOX_DISABLE", cases[i].env, 1);
		else
			unsetenv("RLM_SANDBOX_DISABLE");
		cfg_ctx(&cfg, "hello", 5);
		cfg.sandbox.disable = cases[i].disable;
		CHECK_INT(repl_sandbox_check(&cfg.sandbox, &e1), RLM_ESANDBOX);
		CHECK_INT(repl_start(&cfg, &r, &e2), RLM_ESANDBOX);
		CHECK_STR(e1.msg, cases[i].want);
		CHECK_STR(e2.msg, cases[i].want);
		CHECK(!strstr(e2.msg, cases[i].absent));
	}
	unsetenv("RLM_SANDBOX_DISABLE");
}

TEST(mandatory_layer_messages)
{
	in_child(mandatory);
}

/* A context larger than RLIMIT_AS allows: the start fails with the cause
 * and the fix, whether the mapping or the decoded str does not fit. */
static void too_big(void)
{
	/* the mapping does not fit; the mapping does, the str does not */
	static const size_t sizes[] = {60000000, 30000000};
	static const char *const want[] = {
	    "the context (57.2 MiB) does not fit the worker's memory limit (64 MiB, RLIMIT_AS): "
	    "raise --mem-limit",
	    "the context (28.6 MiB) does not fit the worker's memory limit (64 MiB, RLIMIT_AS): "
	    "raise --mem-limit",
	};
	char *text = xmalloc(sizes[0]);

	memset(text, 'a', sizes[0]);
	unsetenv("RLM_SANDBOX_DISABLE");
	unsetenv("RLM_SANDBOX_FAULT");
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct repl_cfg cfg;
		struct rlm_err err = {0, ""};
		struct repl *r = NULL;
		int rc;

		cfg_ctx(&cfg, text, sizes[i]);
		cfg.sandbox.mem_limit = 64 << 20;
		rc = repl_start(&cfg, &r, &err);
		CHECK_MSG(rc < 0, "a %zu-byte context started under AS 64 MiB", sizes[i]);
		CHECK_CONTAINS(err.msg, want[i]);
	}
	free(text);
}

TEST(context_over_the_memory_limit_says_so)
{
	in_child(too_big);
}

/* ---- the scratch quota walk ---- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* depth directories below dir, a 4 KiB file at the bottom. */
static void nest(const char *dir, int depth)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), f;

	CHECK(fd >= 0);
	for (int i = 0; i < depth; i++) {
		int next;

		CHECK(mkdirat(fd, "d", 0700) == 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CHECK(next >= 0);
		close(fd);
		fd = next;
	}
	f = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(f >= 0 && ftruncate(f, 0) == 0 && write(f, "x", 1) == 1);
	close(f);
	close(fd);
}

/* A tree deeper than the walk descends is over the limit (not ignored),
 * and walking it leaks no fd (it leaked one per exec). */
TEST(scratch_walk_deep_tree)
{
	struct repl r;
	char dir[PATH_MAX], what[200] = "";
	int before;

	memset(&r, 0, sizeof(r));
	r.cfg.sandbox.scratch_limit = 1 << 30;
	snprintf(dir, sizeof(dir), "%s/shallow", harness_tmpdir());
	CHECK(mkdir(dir, 0700) == 0);
	nest(dir, 60);
	r.scratch = dir;
	before = count_fds();
	CHECK_MSG(!repl__scratch_over(&r, what, sizeof(what)), "over: %s", what);
	CHECK_INT(count_fds(), before);

	snprintf(dir, sizeof(dir), "%s/deep", harness_tmpdir());
	CHECK(mkdir(dir, 0700) == 0);
	nest(dir, 70);
	r.scratch = dir;
	for (int i = 0; i < 3; i++) {
		what[0] = '\0';
		CHECK(repl__scratch_over(&r, what, sizeof(what)));
		CHECK_STR(what, "the scratch directory passed its limit of 64 nested directories");
	}
	CHECK_INT(count_fds(), before);
}

/* A non-root controller shares its uid with the worker, which can chmod
 * a directory of its scratch to 0 (or 0444: listable, not searchable)
 * and hide what is inside from the walk: 40 MB under a 16 MB quota went
 * unnoticed. Such a directory is over the limit; the scratch itself is
 * opened up again and measured. */
static char hide_dir[PATH_MAX];

static void hidden(void)
{
	static const mode_t modes[] = {0, 0444, 0311};
	struct repl r;
	char sub[PATH_MAX + 8], what[200];

	memset(&r, 0, sizeof(r));
	r.cfg.sandbox.scratch_limit = 1 << 30;
	r.scratch = hide_dir;
	CHECK(setresgid(4242, 4242, 4242) == 0 && setresuid(4242, 4242, 4242) == 0);
	snprintf(sub, sizeof(sub), "%s/d", hide_dir);
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		what[0] = '\0';
		CHECK(chmod(sub, 0700) == 0);
		CHECK_MSG(!repl__scratch_over(&r, what, sizeof(what)), "over: %s", what);
		CHECK(chmod(sub, modes[i]) == 0);
		CHECK_MSG(repl__scratch_over(&r, what, sizeof(what)), "mode %o was not over",
			  (unsigned)modes[i]);
		CHECK_STR(what, "the scratch directory could not be measured (the worker made a "
				"directory in it unreadable: Permission denied)");
	}
	CHECK(chmod(sub, 0700) == 0);

	/* The scratch itself: ours, opened up again and measured. */
	CHECK(chmod(hide_dir, 0) == 0);
	CHECK_MSG(!repl__scratch_over(&r, what, sizeof(what)), "over: %s", what);
	{
		struct stat st;
		CHECK(stat(hide_dir, &st) == 0);
		CHECK_INT(st.st_mode & 07777, 0700);
	}
	r.cfg.sandbox.scratch_limit = 1;
	CHECK(chmod(hide_dir, 0) == 0);
	CHECK(repl__scratch_over(&r, what, sizeof(what)));
	CHECK_CONTAINS(what, "passed its limit of 0 MB");
}

TEST(scratch_walk_unreadable_directory)
{
	char path[PATH_MAX + 8];

	if (geteuid() != 0)
		SKIP("needs root to become another uid");
	snprintf(hide_dir, sizeof(hide_dir), "%s/hide", harness_tmpdir());
	CHECK(chmod(harness_tmpdir(), 0755) == 0);
	CHECK(mkdir(hide_dir, 0700) == 0);
	nest(hide_dir, 1);
	snprintf(path, sizeof(path), "%s/d/f", hide_dir);
	CHECK(chown(hide_dir, 4242, 4242) == 0 && chown(path, 4242, 4242) == 0);
	snprintf(path, sizeof(path), "%s/d", hide_dir);
	CHECK(chown(path, 4242, 4242) == 0);
	in_child(hidden);
}
