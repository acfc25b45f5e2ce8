/* SPDX-License-Identifier: MIT */
/* cli/cli_doctor.c -- `rlm doctor`: which sandbox layers the REPL worker
 * gets on this machine, and live proof that they hold.
 *
 * DESIGN
 * The doctor starts a real worker (a one-line context) with the sandbox
 * configuration the user gives, exactly as a solve would, prints what
 * repl_sandbox_status reports, then runs one Python cell in it that tries
 * what model code must not do (network, processes, secrets, writes outside
 * the scratch directory, signals to the controller) and what it must be
 * able to do (scratch files, threads). Each attempt is judged against what
 * the active layers promise: blocked when some active layer should block
 * it (a breach otherwise, exit 1), allowed with a warning when no active
 * layer covers it. A file the probe managed to create in /tmp is removed.
 */
#include "cli.h"
#include "cliopt.h"
#include "../common/json.h"
#include "../repl/repl.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"usage: rlm doctor [--json] [--python PATH] [--sandbox-disable LIST]\n"
	"                  [--unsafe-no-sandbox] [--mem-limit SIZE]\n"
	"                  [--scratch-limit SIZE]\n"
	"\n"
	"Start a REPL worker as `rlm solve` would, with the same sandbox options,\n"
	"show which sandbox layers it got on this machine and why any is missing,\n"
	"and run live checks in it.\n"
	"\n"
	"What it prints:\n"
	"  python    the interpreter's path and version, as the worker reports it\n"
	"  status    the one-line summary of the sandbox (also in `rlm solve --json`\n"
	"            and, with --verbose, on stderr when a solve's worker is up)\n"
	"  layers    each layer, on or off, and for an off layer why (unsupported by\n"
	"            the kernel, disabled by a flag or RLM_SANDBOX_DISABLE, failed):\n"
	"              seccomp   system call filter: no sockets, no processes, no exec,\n"
	"                        no ptrace; mandatory unless --unsafe-no-sandbox\n"
	"              identity  the worker runs as an unprivileged uid (65534)\n"
	"              landlock  file access only to what Python needs and the scratch\n"
	"                        directory; no TCP; no signals out (by ABI)\n"
	"              userns    a user namespace, the base of the namespaces below\n"
	"              mntns     a read-only tree, a fresh /proc, a tmpfs scratch\n"
	"              netns     no network interface at all\n"
	"              pidns     its own process numbers: no other process visible\n"
	"              ipcns, utsns  its own System V IPC and host name\n"
	"              rlimits   address space, open files, file size, CPU, no core;\n"
	"                        with userns also threads (RLIMIT_NPROC, 256)\n"
	"              pivot     a root of its own: only /usr, two /etc files, four\n"
	"                        device nodes, /proc and the scratch exist for it\n"
	"  landlock  the Landlock ABI of the kernel (0: none)\n"
	"  identity  the worker's uid and gid, as seen from outside\n"
	"  fs        how its file access is confined: landlock, ro-mount, uid-65534\n"
	"            (plain permissions) or unconfined\n"
	"  zygote    whether workers are forked by the zygote (a pre-loaded python3,\n"
	"            docs/repl.md), and how long a second worker took to be ready\n"
	"            (RLM_ZYGOTE=0: every worker starts cold)\n"
	"  scratch   the worker's working directory and TMPDIR: a tmpfs of a fixed size,\n"
	"            or a directory whose size is checked after each exec\n"
	"            and the most files and directories it may hold (inodes)\n"
	"  threads   the cap on the worker's threads, or that there is none\n"
	"  root      what of the host's tree the worker can see\n"
	"  rlimits   the limits as the worker sees them\n"
	"  checks    Python run in the worker: TCP and UDP to 127.0.0.1, os.fork,\n"
	"            subprocess, reading /etc/shadow and /root, reading the\n"
	"            controller's /proc/PID/environ, signalling the controller,\n"
	"            writing in /tmp (removed again), writing in the scratch directory,\n"
	"            a thread; and os.stat of host paths (/etc/shadow, /root, /home,\n"
	"            /var, /etc/passwd: hidden by pivot), sysinfo(2) (denied by\n"
	"            seccomp), the scratch's inode cap, 1000 threads (capped by\n"
	"            rlimits), fds 0-2 (pipes, never a host file). Each shows what\n"
	"            happened and a mark:\n"
	"              OK    as promised: blocked by an active layer, or allowed when\n"
	"                    it must work (scratch files, threads)\n"
	"              WARN  allowed, and no active layer promises to stop it (for\n"
	"                    /etc/shadow and /root, the worker's uid promises only\n"
	"                    what the file's mode keeps from it)\n"
	"              FAIL  an active layer should have blocked it, or something that\n"
	"                    must work was refused\n"
	"\n"
	"  --json                  print one JSON object with all of the above\n"
	"  --python PATH           the worker's interpreter (/usr/bin/python3)\n"
	"  -h, --help              this help\n"
	"\n"
	"%s"
	"\n"
	"The last line is \"result: OK\", \"result: OK with warnings: ...\" (WARN rows:\n"
	"each is also named on stderr, and in the JSON's \"warnings\") or\n"
	"\"result: NOT OK: ...\".\n"
	"\n"
	"Exit status: 0 seccomp is on and every check is as the layers promise (WARN\n"
	"rows included: no layer promised to stop those); 1 the sandbox cannot start,\n"
	"seccomp is off, the worker runs as root, or a check failed; 2 bad usage,\n"
	"including a bad RLM_SANDBOX_DISABLE and seccomp (or, as root, identity)\n"
	"disabled without --unsafe-no-sandbox.\n"
	"\n"
	"Examples:\n"
	"  rlm doctor\n"
	"  RLM_SANDBOX_DISABLE=userns,landlock rlm doctor --json\n";

enum { OPT_JSON = 1200, OPT_PYTHON };

/* The probe cell. _CTRL (the controller's pid) and _TMP (a path in /tmp)
 * are defined before it. Prints one line: "RLM-DOCTOR {json}". */
static const char probe_py[] =
	"def _rlm_doctor():\n"
	"    import json, os, resource, socket, subprocess, sys, threading\n"
	"    out = {'checks': {}}\n"
	"    def run(name, fn):\n"
	"        try:\n"
	"            out['checks'][name] = ['allowed', fn() or '']\n"
	"        except OSError as e:\n"
	"            out['checks'][name] = ['blocked', type(e).__name__, e.strerror or str(e)]\n"
	"        except Exception as e:\n"
	"            out['checks'][name] = ['failed', type(e).__name__, str(e)[:200]]\n"
	"    def tcp():\n"
	"        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
	"        s.settimeout(3)\n"
	"        try:\n"
	"            s.connect(('127.0.0.1', 9))\n"
	"            return 'connected'\n"
	"        except ConnectionRefusedError:\n"
	"            return ('the socket opened and the connection was refused: '\n"
	"                    'the network is there')\n"
	"        except TimeoutError:\n"
	"            return 'the socket opened; the connection timed out'\n"
	"        finally:\n"
	"            s.close()\n"
	"    def udp():\n"
	"        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	"        try:\n"
	"            s.sendto(b'x', ('127.0.0.1', 9))\n"
	"            return 'a datagram was sent'\n"
	"        finally:\n"
	"            s.close()\n"
	"    def fork():\n"
	"        pid = os.fork()\n"
	"        if pid == 0:\n"
	"            os._exit(0)\n"
	"        os.waitpid(pid, 0)\n"
	"        return 'a child process ran'\n"
	"    def sub():\n"
	"        r = subprocess.run(['/bin/true'], timeout=10)\n"
	"        return f'/bin/true ran (exit {r.returncode})'\n"
	"    def shadow():\n"
	"        with open('/etc/shadow', 'rb') as f:\n"
	"            return f'read {len(f.read(4096))} bytes'\n"
	"    def root():\n"
	"        return f\"listed {len(os.listdir('/root'))} entries\"\n"
	"    def own():\n"
	"        if _CTRL == os.getpid():\n"
	"            raise ProcessLookupError(3, 'not visible: the pid is the worker\\'s '\n"
	"                                     'own here')\n"
	"    def environ():\n"
	"        own()\n"
	"        with open(f'/proc/{_CTRL}/environ', 'rb') as f:\n"
	"            return f'read {len(f.read(65536))} bytes'\n"
	"    def sig():\n"
	"        own()\n"
	"        os.kill(_CTRL, 0)\n"
	"        return 'the controller can be signalled'\n"
	"    def tmp():\n"
	"        with open(_TMP, 'w') as f:\n"
	"            f.write('rlm doctor probe\\n')\n"
	"        return 'created'\n"
	"    def cwd():\n"
	"        name = 'rlm-doctor-probe.txt'\n"
	"        with open(name, 'w') as f:\n"
	"            f.write('ok')\n"
	"        with open(name) as f:\n"
	"            back = f.read()\n"
	"        os.remove(name)\n"
	"        if back != 'ok':\n"
	"            raise RuntimeError('read back something else')\n"
	"        return 'written, read back and removed'\n"
	"    def thread():\n"
	"        box = []\n"
	"        t = threading.Thread(target=lambda: box.append(1))\n"
	"        t.start()\n"
	"        t.join(10)\n"
	"        if not box:\n"
	"            raise RuntimeError('the thread did not run')\n"
	"        return 'ran and joined'\n"
	"    def hidden():\n"
	"        seen = []\n"
	"        for p in ('/etc/shadow', '/root', '/home', '/var', '/etc/passwd'):\n"
	"            try:\n"
	"                os.stat(p)\n"
	"                seen.append(p)\n"
	"            except FileNotFoundError:\n"
	"                pass\n"
	"            except OSError:\n"
	"                seen.append(p)\n"
	"        if seen:\n"
	"            return 'os.stat sees ' + ' '.join(seen)\n"
	"        raise FileNotFoundError(2, 'no such path: /etc/shadow, /root, /home, /var, '\n"
	"                                   '/etc/passwd')\n"
	"    def sysinfo():\n"
	"        import ctypes\n"
	"        libc = ctypes.CDLL(None, use_errno=True)\n"
	"        if libc.sysinfo(ctypes.create_string_buffer(256)) != 0:\n"
	"            e = ctypes.get_errno()\n"
	"            raise OSError(e, os.strerror(e))\n"
	"        return 'the host\\'s load, RAM, uptime and process count'\n"
	"    def threads():\n"
	"        ev, ts = threading.Event(), []\n"
	"        old = threading.stack_size(65536)\n"
	"        try:\n"
	"            for i in range(1000):\n"
	"                t = threading.Thread(target=ev.wait)\n"
	"                t.start()\n"
	"                ts.append(t)\n"
	"        except RuntimeError:\n"
	"            pass\n"
	"        finally:\n"
	"            threading.stack_size(old)\n"
	"            ev.set()\n"
	"            for t in ts:\n"
	"                t.join()\n"
	"        if len(ts) < 1000:\n"
	"            raise OSError(11, f'capped: thread {len(ts) + 2} could not start')\n"
	"        return '1000 threads started'\n"
	"    def stdfds():\n"
	"        import stat\n"
	"        host = [fd for fd in (0, 1, 2) if not stat.S_ISFIFO(os.fstat(fd).st_mode)]\n"
	"        if host:\n"
	"            return f'fds {host} are files of the host (futimens would reach them)'\n"
	"        raise OSError(0, 'fds 0, 1 and 2 are pipes: no inode of the host')\n"
	"    def inodes():\n"
	"        v = os.statvfs('.')\n"
	"        if _INODES and v.f_files <= _INODES:\n"
	"            raise OSError(28, f'at most {v.f_files} files and directories (tmpfs)')\n"
	"        return f'{v.f_files} inodes on its file system'\n"
	"    for name, fn in (('tcp', tcp), ('udp', udp), ('fork', fork), ('subprocess', sub),\n"
	"                     ('shadow', shadow), ('root', root), ('hidden', hidden),\n"
	"                     ('environ', environ), ('signal', sig), ('sysinfo', sysinfo),\n"
	"                     ('tmp', tmp), ('scratch', cwd), ('inodes', inodes),\n"
	"                     ('thread', thread), ('threads', threads), ('stdfds', stdfds)):\n"
	"        run(name, fn)\n"
	"    lim = {}\n"
	"    for k, r in (('as', resource.RLIMIT_AS), ('nofile', resource.RLIMIT_NOFILE),\n"
	"                 ('fsize', resource.RLIMIT_FSIZE), ('cpu', resource.RLIMIT_CPU),\n"
	"                 ('core', resource.RLIMIT_CORE)):\n"
	"        v = resource.getrlimit(r)[0]\n"
	"        lim[k] = None if v == resource.RLIM_INFINITY or v < 0 else v\n"
	"    st = os.statvfs('.')\n"
	"    out.update(uid=os.getuid(), gid=os.getgid(), cwd=os.getcwd(), rlimits=lim,\n"
	"               scratch_bytes=st.f_blocks * st.f_frsize, python=sys.version.split()[0])\n"
	"    print('RLM-DOCTOR ' + json.dumps(out))\n"
	"_rlm_doctor()\n"
	"del _rlm_doctor\n";

enum expect { EXPECT_BLOCKED, EXPECT_ALLOWED, EXPECT_EITHER };

struct check {
	const char *name;   /* key in the probe's output */
	const char *what;   /* for people */
	enum expect expect; /* filled from the active layers */
	char by[64];        /* the active layers that promise to block it */
	char result[16];    /* "blocked", "allowed", "failed", "missing" */
	char detail[240];
	const char *mark;   /* "OK", "WARN", "FAIL" */
};

static struct check checks[] = {
	{"tcp", "TCP connect to 127.0.0.1:9", 0, "", "", "", NULL},
	{"udp", "UDP datagram to 127.0.0.1:9", 0, "", "", "", NULL},
	{"fork", "os.fork()", 0, "", "", "", NULL},
	{"subprocess", "subprocess.run(['/bin/true'])", 0, "", "", "", NULL},
	{"shadow", "read /etc/shadow", 0, "", "", "", NULL},
	{"root", "list /root", 0, "", "", "", NULL},
	{"hidden", "os.stat host paths (/etc/shadow, /root)", 0, "", "", "", NULL},
	{"environ", "read the controller's /proc/PID/environ", 0, "", "", "", NULL},
	{"signal", "signal the controller (kill PID, 0)", 0, "", "", "", NULL},
	{"sysinfo", "sysinfo(2): the host's load, RAM, uptime", 0, "", "", "", NULL},
	{"tmp", "write a file in /tmp (outside scratch)", 0, "", "", "", NULL},
	{"scratch", "write a file in the scratch directory", 0, "", "", "", NULL},
	{"inodes", "files in the scratch: a cap (inodes)", 0, "", "", "", NULL},
	{"thread", "start a thread", 0, "", "", "", NULL},
	{"threads", "start 1000 threads (a thread cap)", 0, "", "", "", NULL},
	{"stdfds", "fds 0-2 private (no host inode)", 0, "", "", "", NULL},
};

static void add_by(struct check *c, bool on, const char *layer)
{
	size_t n = strlen(c->by);
	if (on)
		snprintf(c->by + n, sizeof(c->by) - n, "%s%s", n ? ", " : "", layer);
}

/* Whether the worker's identity alone keeps it from reading path: it is
 * not root, and the file's mode (stat here, in the controller) does not
 * let its uid, gid or others read it. A /root of 0755 or a world-readable
 * /etc/shadow is readable by any uid: identity promises nothing there. A
 * worker with our own (unprivileged) uid can read what we can. */
static bool identity_denies(const struct repl_sandbox_status *st, const char *path)
{
	struct stat s;
	if (st->uid == 0 || stat(path, &s))
		return false;
	if (st->uid == getuid())
		return access(path, R_OK) != 0;
	if (s.st_uid == st->uid)
		return !(s.st_mode & S_IRUSR);
	if (s.st_gid == st->gid)
		return !(s.st_mode & S_IRGRP);
	return !(s.st_mode & S_IROTH);
}

/* What the active layers promise for each check: blocked (c->by lists the
 * layers that promise it), allowed (it must work), or either (nothing
 * stops it on this configuration). */
static void expectations(const struct repl_sandbox_status *st)
{
	const bool *on = st->on;
	bool notroot = st->uid != 0, ll = on[REPL_L_LANDLOCK];
	for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
		struct check *c = &checks[i];
		const char *n = c->name;
		c->by[0] = '\0';
		if (strcmp(n, "tcp") == 0 || strcmp(n, "udp") == 0) {
			add_by(c, on[REPL_L_SECCOMP], "seccomp");
			add_by(c, on[REPL_L_NETNS], "netns");
			add_by(c, ll && st->landlock_abi >= 4 && n[0] == 't', "landlock");
		} else if (strcmp(n, "fork") == 0 || strcmp(n, "subprocess") == 0) {
			add_by(c, on[REPL_L_SECCOMP], "seccomp");
		} else if (strcmp(n, "shadow") == 0 || strcmp(n, "root") == 0) {
			add_by(c, ll, "landlock");
			add_by(c, on[REPL_L_PIVOT], "pivot");
			add_by(c, identity_denies(st, n[0] == 's' ? "/etc/shadow" : "/root"),
			       "identity");
		} else if (strcmp(n, "environ") == 0) {
			add_by(c, ll, "landlock");
			add_by(c, on[REPL_L_PIDNS], "pidns");
			add_by(c, notroot, "identity");
		} else if (strcmp(n, "signal") == 0) {
			add_by(c, on[REPL_L_SECCOMP], "seccomp");
			add_by(c, on[REPL_L_PIDNS], "pidns");
			add_by(c, ll && st->landlock_abi >= 6, "landlock");
			add_by(c, st->uid != getuid(), "identity");
		} else if (strcmp(n, "tmp") == 0) {
			add_by(c, ll, "landlock");
			add_by(c, on[REPL_L_MNTNS], "mntns");
		} else if (strcmp(n, "hidden") == 0) {
			add_by(c, on[REPL_L_PIVOT], "pivot");
		} else if (strcmp(n, "sysinfo") == 0) {
			add_by(c, on[REPL_L_SECCOMP], "seccomp");
		} else if (strcmp(n, "inodes") == 0) {
			add_by(c, st->scratch_tmpfs, "mntns");
			add_by(c, !st->scratch_tmpfs, "the quota check");
		} else if (strcmp(n, "threads") == 0) {
			add_by(c, st->max_threads > 0, "rlimits");
		} else if (strcmp(n, "stdfds") == 0) {
			add_by(c, true, "the spawn");
		}
		if (strcmp(n, "scratch") == 0 || strcmp(n, "thread") == 0)
			c->expect = EXPECT_ALLOWED;
		else
			c->expect = c->by[0] ? EXPECT_BLOCKED : EXPECT_EITHER;
	}
}

/* "256 MiB", "2 GiB", "512 KiB", "100 bytes" */
static char *human(char *buf, size_t n, double v)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(long long)v)
		snprintf(buf, n, "%lld %s", (long long)v, unit[u]);
	else
		snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

/* The probe's output line, parsed; NULL when it is not there. */
static cJSON *probe_parse(const struct repl_result *res)
{
	const char *p = res->output, *m = NULL, *end;
	while ((p = strstr(p, "RLM-DOCTOR {"))) {
		m = p;
		p++;
	}
	if (!m)
		return NULL;
	m += strlen("RLM-DOCTOR ");
	end = strchr(m, '\n');
	return json_parse(m, end ? (size_t)(end - m) : strlen(m));
}

/* Judge each check from the probe's output j; tmp_host says whether the
 * /tmp file appeared on the host. Returns the number of FAILs. */
static int judge(const cJSON *j, bool tmp_host, unsigned long inode_cap)
{
	const cJSON *cs = json_get(j, "checks");
	int fails = 0;
	for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
		struct check *c = &checks[i];
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(cs, c->name);
		const char *r = cJSON_IsArray(a) ? cJSON_GetStringValue(cJSON_GetArrayItem(a, 0))
						 : NULL;
		const char *d1 = r ? cJSON_GetStringValue(cJSON_GetArrayItem(a, 1)) : NULL;
		const char *d2 = r ? cJSON_GetStringValue(cJSON_GetArrayItem(a, 2)) : NULL;
		bool allowed;
		snprintf(c->result, sizeof(c->result), "%s", r ? r : "missing");
		if (!r)
			snprintf(c->detail, sizeof(c->detail), "the probe did not report it");
		else if (strcmp(r, "allowed") == 0)
			snprintf(c->detail, sizeof(c->detail), "%s", d1 ? d1 : "");
		else
			snprintf(c->detail, sizeof(c->detail), "%s%s%s", d1 ? d1 : "?",
				 d2 && *d2 ? ": " : "", d2 ? d2 : "");
		if (r && strcmp(c->name, "tmp") == 0 && strcmp(r, "allowed") == 0 && tmp_host)
			snprintf(c->detail, sizeof(c->detail),
				 "created in the host's /tmp, then removed");
		if (r && strcmp(c->name, "tmp") == 0 && strcmp(r, "allowed") == 0 && !tmp_host) {
			snprintf(c->result, sizeof(c->result), "blocked");
			snprintf(c->detail, sizeof(c->detail),
				 "written to the worker's own /tmp, not the host's");
		}
		/* A plain directory: the cap is the controller's count after
		 * each exec, which the worker cannot see. */
		if (r && strcmp(c->name, "inodes") == 0 && strcmp(c->by, "the quota check") == 0) {
			snprintf(c->result, sizeof(c->result), "blocked");
			snprintf(c->detail, sizeof(c->detail),
				 "a directory: %lu files and directories or more restart the "
				 "worker (counted during and after each exec)",
				 inode_cap);
		}
		allowed = strcmp(c->result, "allowed") == 0;
		if (c->expect == EXPECT_ALLOWED)
			c->mark = allowed ? "OK" : "FAIL";
		else if (c->expect == EXPECT_BLOCKED)
			c->mark = allowed ? "FAIL" : "OK";
		else
			c->mark = allowed ? "WARN" : "OK";
		fails += strcmp(c->mark, "FAIL") == 0;
	}
	return fails;
}

struct doctor {
	bool json;
	const char *python;
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_stats rs;
	struct repl_sandbox_status st;
	struct repl_stats rs2;   /* a second worker, started while the first
				  * is up (forked by the zygote when it is on) */
	bool second;             /* rs2 is filled in */
	cJSON *probe;            /* the probe's output */
	char tmp[64];            /* the /tmp path the probe tries */
	char problem[512];       /* the first problem, for the summary */
	char warnings[512];      /* the WARN checks, for the summary */
	int fails, warns;
};

static void problem(struct doctor *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct doctor *d, const char *fmt, ...)
{
	va_list ap;
	if (d->problem[0])
		return;
	va_start(ap, fmt);
	vsnprintf(d->problem, sizeof(d->problem), fmt, ap);
	va_end(ap);
}

/* Run the probe cell, then remove the /tmp file wherever it landed.
 * Returns 0, or a negative code when the worker cannot run it. */
static int run_probe(struct doctor *d, struct rlm_err *err)
{
	struct repl_result res;
	struct stat sb;
	char *code;
	bool tmp_host;
	int rc;
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(d->tmp, sizeof(d->tmp), "/tmp/rlm-doctor-probe-%d-%d",
				 (int)getpid(), i);
		else
			snprintf(d->tmp, sizeof(d->tmp), "/tmp/rlm-doctor-probe-%d", (int)getpid());
		if (lstat(d->tmp, &sb) && errno == ENOENT)
			break;
	}
	code = xasprintf("_CTRL = %d\n_TMP = '%s'\n_INODES = %lu\n%s", (int)getpid(), d->tmp,
			 d->st.scratch_tmpfs ? d->st.scratch_inodes : 0UL, probe_py);
	memset(&res, 0, sizeof(res));
	rc = repl_exec(d->r, code, strlen(code), time_now_ns() + 60 * (int64_t)1000000000, &res, err);
	free(code);
	tmp_host = lstat(d->tmp, &sb) == 0;
	if (rc == 0 && !res.restarted)
		d->probe = probe_parse(&res);
	if (!rc && !d->probe)
		rc = rlm_err_set(err, RLM_EIO, "the probe cell did not report (%s): %.300s",
				 res.restarted ? "the worker was restarted" : "no RLM-DOCTOR line",
				 res.output);
	repl_result_release(&res);
	/* The worker made the file as its own uid: it removes it; we try too. */
	{
		static const char rm[] = "import os\ntry:\n    os.unlink(_TMP)\nexcept OSError:\n"
					 "    pass\n";
		struct rlm_err e2 = {0, ""};
		memset(&res, 0, sizeof(res));
		if (repl_exec(d->r, rm, sizeof(rm) - 1, time_now_ns() + 10 * (int64_t)1000000000, &res,
			      &e2) == 0)
			repl_result_release(&res);
	}
	if (tmp_host && unlink(d->tmp) && errno != ENOENT)
		fprintf(stderr, "rlm: warning: cannot remove the probe's '%s': %s\n", d->tmp,
			strerror(errno));
	if (d->probe)
		d->fails = judge(d->probe, tmp_host, d->st.scratch_inodes);
	return rc;
}

static const char *python_path(const struct doctor *d)
{
	return d->python ? d->python : "/usr/bin/python3";
}

static size_t scratch_limit(const struct doctor *d)
{
	return d->cfg.sandbox.scratch_limit ? d->cfg.sandbox.scratch_limit : (size_t)256 << 20;
}

static void print_rlimit(const cJSON *lim, const char *key, const char *label, bool bytes,
			 bool *first)
{
	const cJSON *v = json_get(lim, key);
	char b[32];
	printf("%s%s ", *first ? "" : ", ", label);
	*first = false;
	if (!cJSON_IsNumber(v))
		printf("unlimited");
	else if (bytes && v->valuedouble > 0)
		printf("%s", human(b, sizeof(b), v->valuedouble));
	else
		printf("%.0f%s", v->valuedouble, strcmp(key, "cpu") == 0 ? " s" : "");
}

static void print_text(const struct doctor *d, int status)
{
	const cJSON *lim = json_get(d->probe, "rlimits");
	char b[32];
	bool first = true;
	printf("rlm doctor: the sandbox of the REPL worker on this machine\n\n");
	printf("%-10s%s (Python %s)\n", "python", python_path(d), d->rs.python);
	printf("%-10s%s\n\n", "status", d->st.line);
	printf("layers\n");
	for (int i = 0; i < REPL_L_COUNT; i++) {
		const char *name = repl_layer_name((enum repl_layer)i);
		if (d->st.on[i])
			printf("  %-10s on", name);
		else
			printf("  %-10s off   %s", name, d->st.why[i][0] ? d->st.why[i] : "");
		if (d->st.on[i] && i == REPL_L_SECCOMP)
			printf("    %d filter%s stacked", d->st.seccomp_filters,
			       d->st.seccomp_filters == 1 ? "" : "s");
		if (d->st.on[i] && i == REPL_L_LANDLOCK)
			printf("    ABI %d", d->st.landlock_abi);
		putchar('\n');
	}
	if (!d->st.landlock_abi)
		printf("\n%-10snone in this kernel\n", "landlock");
	else
		printf("\n%-10sABI %d%s\n", "landlock", d->st.landlock_abi,
		       d->st.on[REPL_L_LANDLOCK] ? "" : " (not applied)");
	printf("%-10suid %u, gid %u (as seen from outside)", "identity", d->st.uid, d->st.gid);
	if (d->probe)
		printf("; inside: uid %.0f, gid %.0f", json_num(d->probe, "uid", -1),
		       json_num(d->probe, "gid", -1));
	putchar('\n');
	printf("%-10s%s\n", "fs", d->st.fs);
	if (d->second && d->rs2.zygote)
		printf("%-10son: a second worker was forked and sandboxed in %.1f ms (the first, "
		       "with the zygote's own start: %.1f ms)\n",
		       "zygote", (double)d->rs2.start_ns / 1e6, (double)d->rs.start_ns / 1e6);
	else if (d->second)
		printf("%-10soff: workers start cold, in %.1f ms (RLM_ZYGOTE=0, or it failed: "
		       "RLM_LOG=debug says why)\n",
		       "zygote", (double)d->rs2.start_ns / 1e6);
	if (d->st.scratch_tmpfs)
		printf("%-10sa tmpfs of %s", "scratch",
		       human(b, sizeof(b),
			     d->probe ? json_num(d->probe, "scratch_bytes", 0)
				      : (double)scratch_limit(d)));
	else
		printf("%-10sa directory, at most %s (checked after each exec)", "scratch",
		       human(b, sizeof(b), (double)scratch_limit(d)));
	if (d->probe && json_str(d->probe, "cwd"))
		printf(", %s inside", json_str(d->probe, "cwd"));
	printf("; at most %lu files and directories\n", d->st.scratch_inodes);
	if (d->st.max_threads > 0)
		printf("%-10sat most %d per worker (RLIMIT_NPROC in its user namespace)\n",
		       "threads", d->st.max_threads);
	else
		printf("%-10snot capped (no user namespace to count them in, or a kernel before "
		       "5.14, where RLIMIT_NPROC counts every process of the uid)\n",
		       "threads");
	printf("%-10s%s\n", "root",
	       d->st.on[REPL_L_PIVOT]
		   ? "its own (pivot_root): /usr, /etc/ld.so.cache, /etc/localtime, /dev/{null,"
		     "zero,random,urandom}, /proc, the scratch; no other host path exists"
		   : "the host's tree (read-only where mntns is on): os.stat sees every path");
	if (lim) {
		printf("%-10s", "rlimits");
		print_rlimit(lim, "as", "AS", true, &first);
		print_rlimit(lim, "nofile", "NOFILE", false, &first);
		print_rlimit(lim, "fsize", "FSIZE", true, &first);
		print_rlimit(lim, "cpu", "CPU", false, &first);
		print_rlimit(lim, "core", "CORE", false, &first);
		putchar('\n');
	}
	if (d->probe) {
		printf("\nchecks (Python run in the worker)\n");
		for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
			const struct check *c = &checks[i];
			bool ok_blocked = c->expect == EXPECT_BLOCKED && strcmp(c->mark, "OK") == 0;
			printf("  %-4s  %-40s  %s (%s)%s%s%s\n", c->mark, c->what, c->result,
			       c->detail, ok_blocked ? "; promised by " : "", ok_blocked ? c->by : "",
			       strcmp(c->mark, "WARN") == 0 ? ": no active layer stops it" : "");
		}
	}
	if (status)
		printf("\nresult: NOT OK: %s\n", d->problem);
	else if (d->warns)
		printf("\nresult: OK with warnings: seccomp is on and every promise holds, but no "
		       "active layer stops: %s\n", d->warnings);
	else
		printf("\nresult: OK: seccomp is on and every check is as the layers promise\n");
}

/* The WARN checks, as a list for the summary, and their number. */
static void collect_warnings(struct doctor *d)
{
	size_t n;
	d->warnings[0] = '\0';
	d->warns = 0;
	for (size_t i = 0; d->probe && i < ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];
		if (strcmp(c->mark, "WARN") != 0)
			continue;
		n = strlen(d->warnings);
		snprintf(d->warnings + n, sizeof(d->warnings) - n, "%s%s", n ? "; " : "", c->what);
		d->warns++;
	}
}

/* Loud lines on stderr for every failed check, and a line for every check
 * no active layer stops, in both output modes. */
static void report_checks(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];
		if (c->mark && strcmp(c->mark, "WARN") == 0)
			fprintf(stderr,
				"rlm: warning: %s is allowed (%s): no active sandbox layer stops "
				"it\n",
				c->what, c->detail);
		if (!c->mark || strcmp(c->mark, "FAIL") != 0)
			continue;
		if (c->expect == EXPECT_BLOCKED)
			fprintf(stderr,
				"rlm: SANDBOX BREACH: %s got through (%s) although active layers "
				"promise to block it: %s\n",
				c->what, c->detail, c->by);
		else
			fprintf(stderr,
				"rlm: error: %s failed in the sandbox (%s): model code needs it\n",
				c->what, c->detail);
	}
}

static void print_json(const struct doctor *d, int status)
{
	cJSON *o = cJSON_CreateObject(), *py = cJSON_CreateObject(), *sc = cJSON_CreateObject();
	cJSON *cs = cJSON_CreateArray();
	char *s;
	json_add_bool(o, "ok", status == 0);
	json_add_num(o, "exit", status);
	if (status)
		json_add_str(o, "problem", d->problem);
	if (d->probe) {
		cJSON *w = cJSON_CreateArray();
		for (size_t i = 0; i < ARRAY_SIZE(checks); i++)
			if (strcmp(checks[i].mark, "WARN") == 0)
				json_add(w, NULL, cJSON_CreateString(checks[i].name));
		json_add(o, "warnings", w);
	}
	json_add_str(py, "path", python_path(d));
	json_add_str(py, "version", d->rs.python);
	json_add(o, "python", py);
	json_add(o, "sandbox", repl_sandbox_status_json(&d->st));
	if (d->second) {
		cJSON *z = cJSON_CreateObject();
		json_add_bool(z, "on", d->rs2.zygote);
		json_add_num(z, "worker_ms", (double)d->rs2.start_ns / 1e6);
		json_add_num(z, "first_worker_ms", (double)d->rs.start_ns / 1e6);
		json_add(o, "zygote", z);
	}
	json_add_bool(sc, "tmpfs", d->st.scratch_tmpfs);
	json_add_num(sc, "limit", (double)scratch_limit(d));
	json_add_num(sc, "inodes", (double)d->st.scratch_inodes);
	if (d->probe) {
		json_add_num(sc, "bytes", json_num(d->probe, "scratch_bytes", 0));
		if (json_str(d->probe, "cwd"))
			json_add_str(sc, "dir", json_str(d->probe, "cwd"));
	}
	json_add(o, "scratch", sc);
	if (d->probe) {
		cJSON *w = cJSON_CreateObject();
		json_add_num(w, "uid", json_num(d->probe, "uid", -1));
		json_add_num(w, "gid", json_num(d->probe, "gid", -1));
		json_add(o, "inside", w);
		json_add(o, "rlimits", cJSON_Duplicate(json_get(d->probe, "rlimits"), true));
		for (size_t i = 0; i < ARRAY_SIZE(checks); i++) {
			const struct check *c = &checks[i];
			cJSON *x = cJSON_CreateObject();
			json_add_str(x, "name", c->name);
			json_add_str(x, "what", c->what);
			json_add_str(x, "result", c->result);
			json_add_str(x, "detail", c->detail);
			json_add_str(x, "expected", c->expect == EXPECT_BLOCKED	  ? "blocked"
						    : c->expect == EXPECT_ALLOWED ? "allowed"
										  : "either");
			if (c->by[0])
				json_add_str(x, "promised_by", c->by);
			json_add_str(x, "mark", c->mark);
			json_add(cs, NULL, x);
		}
		json_add(o, "checks", cs);
	} else {
		cJSON_Delete(cs);
	}
	s = cJSON_Print(o);
	puts(s);
	free(s);
	cJSON_Delete(o);
}

static const char start_hint[] =
	"the REPL sandbox cannot start on this machine: turn the failing layer off with "
	"--sandbox-disable LAYER (or RLM_SANDBOX_DISABLE=LAYER), or, only if seccomp itself is "
	"missing and you accept running model code unconfined, pass --unsafe-no-sandbox";

/* Start the worker; on failure print why (JSON or text). Returns 0 or 1. */
static int start(struct doctor *d)
{
	static const char ctx[] = "rlm doctor\n";
	struct rlm_err err = {0, ""};
	char buf[512];
	const char *hint;
	d->cfg.python = d->python;
	d->cfg.ctx = (struct repl_context){.text = ctx, .len = sizeof(ctx) - 1};
	d->cfg.exec_timeout_ns = 30 * (int64_t)1000000000;
	if (repl_start(&d->cfg, &d->r, &err) == 0)
		return 0;
	/* A refusal of the sandbox's own names its fix; a python that is
	 * not one, or is missing, is no matter of the sandbox; other failures
	 * (a layer the kernel breaks) get the general hint. */
	if (err.code == RLM_ESANDBOX) {
		hint = NULL;
	} else if (d->python) {
		snprintf(buf, sizeof(buf),
			 "'%s' did not start a REPL worker: check that it is a Python 3 "
			 "interpreter ('%s --version'); without --python the worker runs "
			 "/usr/bin/python3",
			 d->python, d->python);
		hint = buf;
	} else if (err.code == RLM_ENOTFOUND) {
		hint = "install Python 3 as /usr/bin/python3, or pass --python PATH";
	} else {
		hint = start_hint;
	}
	if (d->json) {
		cJSON *o = cJSON_CreateObject();
		char *s;
		json_add_bool(o, "ok", false);
		json_add_num(o, "exit", 1);
		json_add_str(o, "error", err.msg);
		if (hint)
			json_add_str(o, "hint", hint);
		s = cJSON_Print(o);
		puts(s);
		free(s);
		cJSON_Delete(o);
	}
	fprintf(stderr, "rlm: error: %s\n", err.msg);
	if (hint)
		fprintf(stderr, "rlm: %s\n", hint);
	return 1;
}

int cli_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"python", required_argument, NULL, OPT_PYTHON},
		{"help", no_argument, NULL, 'h'},
		SANDBOX_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct doctor d;
	struct rlm_err err = {0, ""};
	int opt, status;

	memset(&d, 0, sizeof(d));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int taken = cli_sandbox_opts_take(&d.cfg.sandbox, opt, optarg);
		if (taken == 2)
			return 2;
		if (taken)
			continue;
		switch (opt) {
		case OPT_JSON: d.json = true; break;
		case OPT_PYTHON:
			if (access(optarg, X_OK))
				return log_fail(2, "--python '%s' is not an executable file",
						optarg);
			d.python = optarg;
			break;
		case 'h': printf(usage, cli_sandbox_opts_help); return 0;
		case ':': return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return log_fail(2, "unknown option '%s' (see rlm doctor --help)",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm doctor --help)",
				argv[optind]);
	if (repl_sandbox_check(&d.cfg.sandbox, &err))
		return log_fail(2, "%s", err.msg);

	if (start(&d))
		return 1;
	repl_stats(d.r, &d.rs);
	repl_sandbox_status(d.r, &d.st);
	expectations(&d.st);
	if (run_probe(&d, &err))
		problem(&d, "the checks could not run: %s", err.msg);
	{
		/* A child node's start: the zygote, while the first holds it. */
		struct repl *r2 = NULL;
		struct rlm_err err2 = {0, ""};
		if (repl_start(&d.cfg, &r2, &err2) == 0) {
			repl_stats(r2, &d.rs2);
			d.second = true;
		}
		repl_free(r2);
	}
	if (!d.st.on[REPL_L_SECCOMP])
		problem(&d, "seccomp is off (%s): the model's code is not filtered",
			d.st.why[REPL_L_SECCOMP][0] ? d.st.why[REPL_L_SECCOMP] : "unsafe");
	if (d.st.uid == 0 && !d.st.on[REPL_L_IDENTITY])
		problem(&d, "identity is off (%s): the model's code runs as root",
			d.st.why[REPL_L_IDENTITY]);
	for (size_t i = 0; d.probe && i < ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];
		bool should_block = c->expect == EXPECT_BLOCKED;
		if (strcmp(c->mark, "FAIL") == 0)
			problem(&d, "%s: %s (%s)%s%s", c->what, c->result, c->detail,
				should_block ? ", although these layers should block it: "
					     : ", but model code needs it",
				should_block ? c->by : "");
	}
	status = d.problem[0] ? 1 : 0;
	collect_warnings(&d);
	if (d.json)
		print_json(&d, status);
	else
		print_text(&d, status);
	if (d.probe)
		report_checks();
	if (status)
		fprintf(stderr, "rlm: error: %s\n", d.problem);
	cJSON_Delete(d.probe);
	repl_free(d.r);
	return status;
}
