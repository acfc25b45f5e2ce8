/* SPDX-License-Identifier: MIT */
/* repl/sandbox.c -- the worker's sandbox: probe the layers the machine has,
 * plan them for a worker, apply them in the child, check them afterwards.
 *
 * DESIGN
 * Everything that needs memory or words happens in the parent: the probe
 * (once per process), the plan (per repl, again after a layer broke), the
 * Landlock ruleset (an fd the child inherits), the seccomp programs
 * (seccomp.c), the limits and the tmpfs options. The child between clone
 * and execve (repl__sandbox_child) only makes raw system calls on that
 * plan. A layer the machine claims to have may still fail in the child
 * (a masked /proc, userns forbidden by policy): the child then names the
 * layer in its fatal frame, the layer is remembered as broken for the
 * rest of the process and the worker is started again without it.
 * Namespaces all hang on the user namespace: without one, none is made,
 * even as root (one way to build them keeps the plan simple). After
 * "ready", /proc/PID/status says what the kernel actually applied. The
 * full picture and the reasons: docs/sandbox.md. */
#include "repl_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- kernel constants newer than the headers (linux-libc-dev 6.1) ---- */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule	    445
#define SYS_landlock_restrict_self  446
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

#define LL_CREATE_VERSION  (1U << 0)
#define LL_RULE_PATH	   1
#define LL_FS_EXECUTE	   (1ULL << 0)
#define LL_FS_WRITE_FILE   (1ULL << 1)
#define LL_FS_READ_FILE	   (1ULL << 2)
#define LL_FS_READ_DIR	   (1ULL << 3)
#define LL_FS_REMOVE_DIR   (1ULL << 4)
#define LL_FS_REMOVE_FILE  (1ULL << 5)
#define LL_FS_MAKE_CHAR	   (1ULL << 6)
#define LL_FS_MAKE_DIR	   (1ULL << 7)
#define LL_FS_MAKE_REG	   (1ULL << 8)
#define LL_FS_MAKE_SOCK	   (1ULL << 9)
#define LL_FS_MAKE_FIFO	   (1ULL << 10)
#define LL_FS_MAKE_BLOCK   (1ULL << 11)
#define LL_FS_MAKE_SYM	   (1ULL << 12)
#define LL_FS_REFER	   (1ULL << 13) /* ABI 2 */
#define LL_FS_TRUNCATE	   (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV	   (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP	   (1ULL << 0)	/* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT  (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL	   (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define M_RDONLY 0x1
#define M_NOSUID 0x2
#define M_NODEV	 0x4

struct m_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

#define GiB	    ((size_t)1 << 30)
#define MiB	    ((size_t)1 << 20)
#define DEF_SCRATCH (256 * MiB)
#define DEF_FILES   64
#define DEF_CPU_S   3600
#define DEF_THREADS 256
#define NS_UID	    1000 /* the worker's ids inside its user namespace */

#define WALK_MAX   100000 /* entries repl__scratch_over looks at, at most */
#define INODE_BYTES (8 * 1024) /* scratch bytes per inode (file, directory) */
#define INODES_MIN  4096
#define WALK_DEPTH 64	  /* directory levels it descends */

/* The first directory above `path` that others cannot search (mode
 * without o+x), into `out`; false when every one can be. A worker under
 * another uid cannot chdir into a scratch directory below it. */
static bool closed_ancestor(const char *path, char *out, size_t cap)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		struct stat st;
		*slash = 0;
		const char *d = *dir ? dir : "/";
		if (stat(d, &st) == 0 && !(st.st_mode & S_IXOTH)) {
			size_t n = strlen(d) < cap ? strlen(d) : cap - 1;
			memcpy(out, d, n);
			out[n] = 0;
			return true;
		}
	}
	return false;
}

/* The number of files and directories a scratch of `limit` bytes may
 * hold: one per 8 KiB, at least 4096. An empty file costs no block but a
 * kernel inode and dentry (about 1.2 KiB of slab), which no size= and no
 * rlimit counts: without a cap a worker could pin gigabytes of host
 * memory in empty files. The tmpfs gets it as nr_inodes=, the plain
 * directory's quota check counts entries against it. */
unsigned long repl__scratch_inodes(size_t limit)
{
	unsigned long n = (unsigned long)(limit / INODE_BYTES);
	return n < INODES_MIN ? INODES_MIN : n;
}

/* ---- the probe: once per process ---- */

static struct {
	bool seccomp;
	int seccomp_errno;
	int landlock_abi;
	int landlock_errno;
	uid_t euid;
	gid_t egid;
	uint64_t ll_fs;	     /* handled rights by ABI */
	uint64_t ll_scratch; /* what the scratch directory gets */
	bool nproc_per_ns;   /* RLIMIT_NPROC counts per user namespace (5.14) */
} probe;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Layers that failed in a child, process-wide, with why. */
static pthread_mutex_t broken_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned broken_bits;
static char broken_why[REPL_L_COUNT][120];

/* Is the kernel release rel (uname -r: "6.1.0-18-amd64") at least
 * major.minor? An unreadable one is not. */
bool repl__kernel_at_least(const char *rel, int major, int minor)
{
	char *end;
	long ma, mi;
	errno = 0;
	ma = strtol(rel, &end, 10);
	if (end == rel || *end != '.' || errno)
		return false;
	rel = end + 1;
	mi = strtol(rel, &end, 10);
	if (end == rel || errno)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

static void probe_run(void)
{
	long k;
	errno = 0;
	k = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0);
	probe.seccomp = k < 0 && errno == EFAULT;
	probe.seccomp_errno = errno;
	k = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
	probe.landlock_abi = k > 0 ? (int)k : 0;
	probe.landlock_errno = k > 0 ? 0 : errno;
	{
		struct utsname u;
		probe.nproc_per_ns = uname(&u) == 0 && repl__kernel_at_least(u.release, 5, 14);
	}
	probe.euid = geteuid();
	probe.egid = getegid();

	probe.ll_fs = (LL_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0-12 */
	if (probe.landlock_abi >= 2)
		probe.ll_fs |= LL_FS_REFER;
	if (probe.landlock_abi >= 3)
		probe.ll_fs |= LL_FS_TRUNCATE;
	if (probe.landlock_abi >= 5)
		probe.ll_fs |= LL_FS_IOCTL_DEV;
	probe.ll_scratch = (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_READ_DIR | LL_FS_REMOVE_DIR |
			    LL_FS_REMOVE_FILE | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SYM |
			    LL_FS_MAKE_FIFO | LL_FS_REFER | LL_FS_TRUNCATE) &
			   probe.ll_fs;
}

/* ---- names ---- */

static const char *const layer_names[REPL_L_COUNT] = {
    "seccomp", "identity", "landlock", "userns", "mntns",
    "netns",   "pidns",	   "ipcns",    "utsns",	 "rlimits", "pivot",
};

#define NS_BITS                                                                                    \
	(1u << REPL_L_USERNS | 1u << REPL_L_MNTNS | 1u << REPL_L_NETNS | 1u << REPL_L_PIDNS |      \
	 1u << REPL_L_IPCNS | 1u << REPL_L_UTSNS)

const char *repl_layer_name(enum repl_layer l)
{
	return (unsigned)l < REPL_L_COUNT ? layer_names[l] : "?";
}

int repl_sandbox_parse(const char *list, unsigned *bits, struct rlm_err *err)
{
	const char *p = list ? list : "";
	*bits = 0;
	while (*p) {
		size_t n = strcspn(p, ", \t\n");
		int i;
		if (n == 0) {
			p++;
			continue;
		}
		if (n == 3 && strncmp(p, "all", 3) == 0) {
			*bits |= REPL_L_ALL;
		} else if (n == 2 && strncmp(p, "ns", 2) == 0) {
			*bits |= NS_BITS;
		} else {
			for (i = 0; i < REPL_L_COUNT; i++)
				if (strlen(layer_names[i]) == n &&
				    strncmp(p, layer_names[i], n) == 0)
					break;
			if (i == REPL_L_COUNT)
				return rlm_err_set(err, RLM_EINVAL,
						   "unknown sandbox layer '%.*s' (known: all, ns, "
						   "seccomp, identity, landlock, userns, mntns, "
						   "netns, pidns, ipcns, utsns, rlimits, pivot)",
						   (int)RLM_MIN(n, 40), p);
			*bits |= 1u << i;
		}
		p += n;
	}
	return 0;
}

/* The error for a mandatory layer (seccomp; identity as root) that is off
 * without unsafe, in one wording for repl_sandbox_check and the plan. by:
 * what disabled it ("RLM_SANDBOX_DISABLE", "request"), or NULL when it is
 * off for another reason, which why gives (the kernel lacks it, it broke).
 * The fix follows from that: the variable, the option, or `rlm doctor`. */
static int mandatory_off(struct rlm_err *err, int l, const char *by, const char *why)
{
	bool env = by && strcmp(by, "RLM_SANDBOX_DISABLE") == 0;
	const char *fix = env  ? "take it out of RLM_SANDBOX_DISABLE"
			  : by ? "stop disabling it"
			       : "see `rlm doctor`";
	char cause[160];
	if (by)
		snprintf(cause, sizeof(cause), "is disabled (by %s)", by);
	else
		snprintf(cause, sizeof(cause), "is off (%s)", why);
	return rlm_err_set(err, RLM_ESANDBOX,
			   "%s %s, and model code does not run %s: %s, or pass "
			   "--unsafe-no-sandbox to run it anyway (%s still apply)",
			   layer_names[l], cause, l == REPL_L_SECCOMP ? "without it" : "as root",
			   fix,
			   env ? "the layers RLM_SANDBOX_DISABLE leaves on" : "the other layers");
}

int repl_sandbox_check(const struct repl_sandbox_cfg *c, struct rlm_err *err)
{
	const char *env = getenv("RLM_SANDBOX_DISABLE");
	unsigned from_env = 0, off;
	if (env && repl_sandbox_parse(env, &from_env, err) < 0) {
		rlm_err_prefix(err, "RLM_SANDBOX_DISABLE");
		return RLM_EINVAL;
	}
	off = c->disable | from_env;
	if (c->unsafe)
		return 0;
	for (int l = REPL_L_SECCOMP; l <= REPL_L_IDENTITY; l++) {
		if (!(off & (1u << l)) || (l == REPL_L_IDENTITY && geteuid() != 0))
			continue;
		return mandatory_off(
		    err, l, from_env & (1u << l) ? "RLM_SANDBOX_DISABLE" : "request", NULL);
	}
	return 0;
}

void repl_sandbox_status(const struct repl *r, struct repl_sandbox_status *out)
{
	*out = r->sb_status;
}

struct cJSON *repl_sandbox_status_json(const struct repl_sandbox_status *st)
{
	cJSON *o = cJSON_CreateObject(), *layers = cJSON_CreateObject();
	json_add_str(o, "line", st->line);
	for (int i = 0; i < REPL_L_COUNT; i++) {
		const char *name = repl_layer_name((enum repl_layer)i);
		if (st->on[i])
			json_add_bool(layers, name, true);
		else
			json_add_str(layers, name, st->why[i][0] ? st->why[i] : "off");
	}
	json_add(o, "layers", layers);
	json_add_num(o, "landlock_abi", st->landlock_abi);
	json_add_num(o, "seccomp_filters", st->seccomp_filters);
	json_add_num(o, "uid", st->uid);
	json_add_num(o, "gid", st->gid);
	json_add_str(o, "fs", st->fs);
	json_add_bool(o, "scratch_tmpfs", st->scratch_tmpfs);
	json_add_num(o, "scratch_inodes", (double)st->scratch_inodes);
	json_add_num(o, "max_threads", st->max_threads);
	json_add_bool(o, "unsafe", st->unsafe);
	return o;
}

/* ---- the plan ---- */

static void off(struct repl_sandbox_status *st, int l, const char *fmt, ...) RLM_PRINTF(3, 4);
static void off(struct repl_sandbox_status *st, int l, const char *fmt, ...)
{
	va_list ap;
	st->on[l] = false;
	va_start(ap, fmt);
	vsnprintf(st->why[l], sizeof(st->why[l]), fmt, ap);
	va_end(ap);
}

/* What turned layer l off on request: the variable or the caller's
 * configuration; NULL when nothing did. */
static const char *disabled_by(const struct repl *r, int l)
{
	if (!(r->cfg.sandbox.disable & (1u << l)))
		return NULL;
	return r->sb_env_disable & (1u << l) ? "RLM_SANDBOX_DISABLE" : "request";
}

/* Plan a limit, at most the controller's own hard limit: the child can
 * only lower it (raising needs CAP_SYS_RESOURCE, which the identity step
 * has just dropped), and one setrlimit failing with EPERM would cost the
 * whole layer, CORE 0 and NOFILE with it. So a controller started under
 * `ulimit -Ht 100` gives its workers CPU 100 (soft and hard) rather than
 * no limits at all. */
static void add_rl(struct repl_sandbox *sb, int res, unsigned long cur, unsigned long max)
{
	struct rlimit have;
	if (getrlimit(res, &have) == 0 && have.rlim_max != RLIM_INFINITY) {
		if (max > have.rlim_max)
			max = have.rlim_max;
		if (cur > max)
			cur = max;
	}
	if (sb->n_rl < (int)ARRAY_SIZE(sb->rl)) {
		sb->rl[sb->n_rl].res = res;
		sb->rl[sb->n_rl].cur = cur;
		sb->rl[sb->n_rl].max = max;
		sb->n_rl++;
	}
}

/* The two files of /sys a worker reads: glibc's malloc, asked for huge
 * pages (GLIBC_TUNABLES hugetlb=1), reads the kernel's THP mode and the
 * huge page's size when it starts, and without them a worker started cold
 * gets 4 KiB pages (a forked one inherits what the zygote read). */
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"
static const char *const thp_files[] = {THP_DIR "/enabled", THP_DIR "/hpage_pmd_size"};

/* Allow `rights` beneath path; a missing optional path is skipped. */
static int ll_rule(int rs, const char *path, uint64_t rights, bool optional)
{
	struct ll_path_beneath pb;
	int fd = open(path, O_PATH | O_CLOEXEC), e;
	if (fd < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	pb.allowed_access = rights & probe.ll_fs;
	pb.parent_fd = fd;
	e = syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH, &pb, 0) < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* The Landlock ruleset of every worker of r: what Python needs to read and
 * run. The scratch directory is added by the child, after its mounts (a
 * tmpfs over it is another inode). Returns the fd, or -1 with why. */
static int ll_build(const struct repl *r, char *why, size_t cap)
{
	const uint64_t rx = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	struct ll_ruleset_attr attr;
	char real[PATH_MAX];
	int rs, e = 0;
	const char *step = "";
	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = probe.ll_fs;
	if (probe.landlock_abi >= 4)
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	if (probe.landlock_abi >= 6)
		attr.scoped = LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL;
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (rs < 0) {
		snprintf(why, cap, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	fcntl(rs, F_SETFD, FD_CLOEXEC);
#define RULE(p, rights, opt)                                                                       \
	do {                                                                                       \
		if (!e) {                                                                          \
			step = (p);                                                                \
			e = ll_rule(rs, (p), (rights), (opt));                                     \
		}                                                                                  \
	} while (0)
	RULE("/usr", rx, false);
	RULE("/etc/ld.so.cache", LL_FS_READ_FILE, true);
	RULE("/etc/localtime", LL_FS_READ_FILE, true);
	RULE("/dev/null", LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE, true);
	RULE("/dev/urandom", LL_FS_READ_FILE, true);
	for (size_t i = 0; i < ARRAY_SIZE(thp_files); i++)
		RULE(thp_files[i], LL_FS_READ_FILE, true);
	/* An interpreter outside /usr (--python): its prefix, the directory
	 * above its bin/. */
	if (!e && realpath(r->python, real) && strncmp(real, "/usr/", 5) != 0) {
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(real, '/');
			if (slash && slash != real)
				*slash = 0;
		}
		RULE(real, rx, false);
	}
#undef RULE
	if (e) {
		snprintf(why, cap, "landlock_add_rule '%.60s': %s", step, strerror(-e));
		close(rs);
		return -1;
	}
	return rs;
}

/* ---- the worker's own root ---- */

/* a + b into rt's arena: its offset, or 0 (the arena's first byte, never
 * a path) when it is full. */
static unsigned short root_str(struct repl_root *rt, const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned short at = rt->used ? rt->used : 1;
	if (at + na + nb + 1 > sizeof(rt->arena))
		return 0;
	memcpy(rt->arena + at, a, na);
	memcpy(rt->arena + at + na, b, nb + 1);
	rt->used = (unsigned short)(at + na + nb + 1);
	return at;
}

/* One step; false when the plan is full. dst is below R. */
static bool root_op(struct repl_root *rt, const char *R, int op, const char *src, const char *dst,
		    bool dev)
{
	struct repl_root_op *o;
	if (rt->n == REPL_ROOT_OPS)
		return false;
	o = &rt->ops[rt->n];
	o->op = (unsigned char)op;
	o->dev = dev;
	o->src = src ? root_str(rt, src, "") : 0;
	o->dst = root_str(rt, R, dst);
	if ((src && !o->src) || !o->dst)
		return false;
	rt->n++;
	return true;
}

/* mkdir -p of the absolute path below R, each level its own step. */
static bool root_mkdirs(struct repl_root *rt, const char *R, const char *path)
{
	char p[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(p))
		return false;
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		memcpy(p, path, i);
		p[i] = '\0';
		if (!root_op(rt, R, REPL_ROOT_MKDIR, NULL, p, false))
			return false;
	}
	return true;
}

/* What the worker's root holds: the top-level links of a merged /usr
 * (or binds of /bin, /lib, ... where they are directories), /usr, the
 * interpreter's prefix when it is elsewhere, the two /etc files Python
 * reads (the loader's cache, the time zone; Landlock grants the same),
 * the two THP files of /sys malloc reads (thp_files), four device nodes,
 * an empty /proc, and the directories down to the scratch directory.
 * Nothing else of the host exists for the worker.
 * false with why when the plan does not fit. */
static bool root_plan(const struct repl *r, struct repl_sandbox *sb, char *why, size_t cap)
{
	static const char *const tops[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
	static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"};
	static const char *const etcs[] = {"/etc/ld.so.cache", "/etc/localtime"};
	struct repl_root *rt = &sb->root;
	const char *R = sb->scratch;
	char real[PATH_MAX], link[PATH_MAX];
	struct stat st;
	bool ok = true;
	ssize_t n;

	memset(rt, 0, sizeof(*rt));
	for (size_t i = 0; ok && i < ARRAY_SIZE(tops); i++) {
		if (lstat(tops[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(tops[i], link, sizeof(link) - 1)) > 0) {
			link[n] = '\0';
			ok = root_op(rt, R, REPL_ROOT_SYMLINK, link, tops[i], false);
		} else if (S_ISDIR(st.st_mode)) {
			ok = root_op(rt, R, REPL_ROOT_MKDIR, NULL, tops[i], false) &&
			     root_op(rt, R, REPL_ROOT_RBIND, tops[i], tops[i], false);
		}
	}
	ok = ok && root_op(rt, R, REPL_ROOT_MKDIR, NULL, "/usr", false) &&
	     root_op(rt, R, REPL_ROOT_RBIND, "/usr", "/usr", false);
	/* An interpreter outside /usr (--python): its prefix, as Landlock. */
	if (ok && realpath(r->python, real) && strncmp(real, "/usr/", 5) != 0) {
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(real, '/');
			if (slash && slash != real)
				*slash = '\0';
		}
		ok = root_mkdirs(rt, R, real) && root_op(rt, R, REPL_ROOT_RBIND, real, real, false);
	}
	ok = ok && root_op(rt, R, REPL_ROOT_MKDIR, NULL, "/etc", false);
	for (size_t i = 0; ok && i < ARRAY_SIZE(etcs); i++) {
		if (lstat(etcs[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(etcs[i], link, sizeof(link) - 1)) > 0) {
			link[n] = '\0';
			ok = root_op(rt, R, REPL_ROOT_SYMLINK, link, etcs[i], false);
		} else if (S_ISREG(st.st_mode)) {
			ok = root_op(rt, R, REPL_ROOT_FBIND, etcs[i], etcs[i], false);
		}
	}
	for (size_t i = 0, dir = 0; ok && i < ARRAY_SIZE(thp_files); i++)
		if (stat(thp_files[i], &st) == 0 && S_ISREG(st.st_mode))
			ok = (dir++ || root_mkdirs(rt, R, THP_DIR)) &&
			     root_op(rt, R, REPL_ROOT_FBIND_OPT, thp_files[i], thp_files[i],
				     false);
	ok = ok && root_op(rt, R, REPL_ROOT_MKDIR, NULL, "/dev", false);
	for (size_t i = 0; ok && i < ARRAY_SIZE(devs); i++)
		if (stat(devs[i], &st) == 0 && S_ISCHR(st.st_mode))
			ok = root_op(rt, R, REPL_ROOT_FBIND, devs[i], devs[i], true);
	ok = ok && root_op(rt, R, REPL_ROOT_MKDIR, NULL, "/proc", false);
	rt->n_fixed = rt->n;
	/* The scratch's first directory must be one of its own (a zygote's
	 * worker mounts a tmpfs there), not one the root holds already: a
	 * TMPDIR under /usr, /dev, /etc, or the first directory of an
	 * interpreter outside /usr (--python /tmp/py/bin/python3 with the
	 * scratch in /tmp). */
	for (int i = 0; ok && i < rt->n; i++) {
		const char *top = rt->arena + rt->ops[i].dst + strlen(R);
		size_t k = strcspn(R + 1, "/") + 1;
		if (strchr(top + 1, '/') == NULL && strlen(top) == k && strncmp(top, R, k) == 0) {
			snprintf(why, cap, "the scratch is under %.20s, which its root holds",
				 top);
			return false;
		}
	}
	ok = ok && root_mkdirs(rt, R, R);
	if (ok)
		ok = (rt->proc = root_str(rt, R, "/proc")) != 0;
	if (!ok) {
		snprintf(why, cap, "the new root's plan does not fit (scratch path of %zu bytes)",
			 strlen(R));
		return false;
	}
	snprintf(rt->opts, sizeof(rt->opts), "size=256k,nr_inodes=256,mode=0755,uid=%u,gid=%u",
		 sb->ns_uid, sb->ns_gid);
	return true;
}

/* The status line and fs, from r->sb_status and the plan. */
static void build_line(struct repl *r)
{
	struct repl_sandbox_status *st = &r->sb_status;
	const struct repl_sandbox_cfg *c = &r->cfg.sandbox;
	struct buf b = BUF_INIT;
	char s1[32], s2[32];
	bool ll = st->on[REPL_L_LANDLOCK], mnt = st->on[REPL_L_MNTNS];
	if (ll && mnt)
		snprintf(st->fs, sizeof(st->fs), "landlock+ro-mount");
	else if (ll)
		snprintf(st->fs, sizeof(st->fs), "landlock");
	else if (mnt)
		snprintf(st->fs, sizeof(st->fs), "ro-mount");
	else if (st->uid != 0 && probe.euid == 0)
		snprintf(st->fs, sizeof(st->fs), "uid-%u", st->uid);
	else
		snprintf(st->fs, sizeof(st->fs), "unconfined");

	if (st->on[REPL_L_SECCOMP])
		buf_printf(&b, "seccomp=on(%d)", st->seccomp_filters);
	else
		buf_printf(&b, "seccomp=off%s", st->unsafe ? "(UNSAFE)" : "");
	if (ll)
		buf_printf(&b, " landlock=abi%d", st->landlock_abi);
	else
		buf_puts(&b, " landlock=off");
	for (int l = REPL_L_USERNS; l <= REPL_L_UTSNS; l++)
		buf_printf(&b, " %s=%s", layer_names[l], st->on[l] ? "on" : "off");
	buf_printf(&b, " uid=%u%s fs=%s", st->uid,
		   st->uid == 0 && !st->on[REPL_L_IDENTITY] ? "(UNSAFE)" : "", st->fs);
	text_fmt_size(s1, sizeof(s1), c->scratch_limit);
	buf_printf(&b, " scratch=%s(%s)", st->scratch_tmpfs ? "tmpfs" : "dir", s1);
	if (st->on[REPL_L_RLIMITS]) {
		text_fmt_size(s1, sizeof(s1), r->sb.rl[0].cur);
		text_fmt_size(s2, sizeof(s2), r->sb.rl[2].cur);
		buf_printf(&b, " rlimits=AS%s,NOFILE%lu,FSIZE%s,CPU%lu", s1, r->sb.rl[1].cur, s2,
			   r->sb.rl[3].cur);
	} else {
		buf_puts(&b, " rlimits=off");
	}
	buf_printf(&b, " inodes=%lu", st->scratch_inodes);
	if (st->max_threads > 0)
		buf_printf(&b, " threads=%d", st->max_threads);
	else
		buf_puts(&b, " threads=uncapped");
	buf_printf(&b, " pivot=%s", st->on[REPL_L_PIVOT] ? "on" : "off");
	snprintf(st->line, sizeof(st->line), "%s", b.p);
	buf_release(&b);
}

/* RLM_SANDBOX_FAULT=<layer>[:ERRNO] (tests only): the layer the child
 * fails at, and the errno it fails with (EPERM without one), so that a
 * test can tell a refused layer from a busy machine (ENOMEM, EAGAIN). */
static const struct {
	const char *name;
	int e;
} fault_errnos[] = {
    {"EPERM", EPERM},	{"EACCES", EACCES}, {"EINVAL", EINVAL}, {"ENOMEM", ENOMEM},
    {"ENOSPC", ENOSPC}, {"EAGAIN", EAGAIN}, {"EUSERS", EUSERS}, {"EBUSY", EBUSY},
    {"ENOENT", ENOENT}, {"EIO", EIO},
};

static int parse_fault(const char *v, int *layer, int *e, struct rlm_err *err)
{
	size_t n = strcspn(v, ":");
	const char *en = v[n] == ':' ? v + n + 1 : NULL;
	*layer = -1;
	*e = EPERM;
	for (int l = 0; l < REPL_L_COUNT; l++)
		if (strlen(layer_names[l]) == n && strncmp(v, layer_names[l], n) == 0)
			*layer = l;
	if (*layer < 0)
		return rlm_err_set(err, RLM_EINVAL,
				   "RLM_SANDBOX_FAULT: unknown sandbox layer '%.*s' (a test "
				   "switch: <layer> or <layer>:<ERRNO>, such as mntns:ENOMEM)",
				   (int)RLM_MIN(n, 40), v);
	if (!en)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(fault_errnos); i++)
		if (strcmp(en, fault_errnos[i].name) == 0) {
			*e = fault_errnos[i].e;
			return 0;
		}
	return rlm_err_set(
	    err, RLM_EINVAL,
	    "RLM_SANDBOX_FAULT: unknown errno '%.40s' (known: EPERM, EACCES, EINVAL, "
	    "ENOMEM, ENOSPC, EAGAIN, EUSERS, EBUSY, ENOENT, EIO)",
	    en);
}

int repl__sandbox_plan(struct repl *r, struct rlm_err *err)
{
	struct repl_sandbox *sb = &r->sb;
	struct repl_sandbox_status *st = &r->sb_status;
	struct repl_sandbox_cfg *c = &r->cfg.sandbox;
	const struct repl_bpf *first = NULL, *late = NULL;
	unsigned broken;
	bool root;
	const char *fault = getenv("RLM_SANDBOX_FAULT");
	char why[200];

	pthread_once(&probe_once, probe_run);
	root = probe.euid == 0;
	if (sb->landlock_fd >= 0)
		close(sb->landlock_fd);
	memset(sb, 0, sizeof(*sb));
	memset(st, 0, sizeof(*st));
	sb->landlock_fd = -1;
	sb->fault = -1;
	sb->fault_errno = EPERM;
	sb->scratch = r->scratch;
	if (!c->scratch_limit)
		c->scratch_limit = DEF_SCRATCH;

	for (int l = 0; l < REPL_L_COUNT; l++)
		st->on[l] = true;
	pthread_mutex_lock(&broken_mu);
	broken = broken_bits;
	for (int l = 0; l < REPL_L_COUNT; l++)
		if (broken & (1u << l))
			off(st, l, "%s", broken_why[l]);
	pthread_mutex_unlock(&broken_mu);
	for (int l = 0; l < REPL_L_COUNT; l++) {
		if (!(c->disable & (1u << l)))
			continue;
		off(st, l, "disabled by %s", disabled_by(r, l));
	}

	/* seccomp: the kernel, then the programs. */
	if (st->on[REPL_L_SECCOMP] && !probe.seccomp)
		off(st, REPL_L_SECCOMP, "the kernel has no seccomp filters (prctl: %s)",
		    strerror(probe.seccomp_errno));
	if (st->on[REPL_L_SECCOMP]) {
		struct rlm_err e2 = {0, ""};
		if (repl__seccomp_build(&first, &late, &e2) < 0)
			off(st, REPL_L_SECCOMP, "%s", e2.msg);
		else
			sb->seccomp = first;
	}
	if (!st->on[REPL_L_SECCOMP]) {
		if (!c->unsafe)
			return mandatory_off(err, REPL_L_SECCOMP, disabled_by(r, REPL_L_SECCOMP),
					     st->why[REPL_L_SECCOMP]);
		st->unsafe = true;
		sb->seccomp = NULL;
	}
	sb->bpf_scratch = NULL;
	if (sb->seccomp) {
		/* Room for the child's patched copy: 8 bytes per insn. */
		r->sb_bpf = xrealloc(r->sb_bpf, (size_t)sb->seccomp->len * 8 + 8);
		sb->bpf_scratch = r->sb_bpf;
	}

	/* Landlock. */
	st->landlock_abi = probe.landlock_abi;
	if (st->on[REPL_L_LANDLOCK] && !probe.landlock_abi)
		off(st, REPL_L_LANDLOCK, "the kernel has no Landlock (%s)",
		    strerror(probe.landlock_errno));
	if (st->on[REPL_L_LANDLOCK]) {
		sb->landlock_fd = ll_build(r, why, sizeof(why));
		if (sb->landlock_fd < 0)
			off(st, REPL_L_LANDLOCK, "%s", why);
	}

	/* Namespaces: all of them hang on the user namespace. */
	for (int l = REPL_L_MNTNS; l <= REPL_L_UTSNS; l++)
		if (st->on[l] && !st->on[REPL_L_USERNS])
			off(st, l, "needs userns");
	if (st->on[REPL_L_USERNS]) {
		sb->clone_flags = CLONE_NEWUSER;
		if (st->on[REPL_L_MNTNS])
			sb->clone_flags |= CLONE_NEWNS;
		if (st->on[REPL_L_NETNS])
			sb->clone_flags |= CLONE_NEWNET;
		if (st->on[REPL_L_PIDNS])
			sb->clone_flags |= CLONE_NEWPID;
		if (st->on[REPL_L_IPCNS])
			sb->clone_flags |= CLONE_NEWIPC;
		if (st->on[REPL_L_UTSNS])
			sb->clone_flags |= CLONE_NEWUTS;
	}
	/* A fresh /proc needs a mount namespace to put it in. */
	if (st->on[REPL_L_PIDNS] && !st->on[REPL_L_MNTNS]) {
		off(st, REPL_L_PIDNS, "needs mntns (for its own /proc)");
		sb->clone_flags &= ~CLONE_NEWPID;
	}
	if (st->on[REPL_L_PIVOT] && !st->on[REPL_L_MNTNS])
		off(st, REPL_L_PIVOT, "needs mntns");

	/* Identity: as root, nobody; else the controller's own uid, with no
	 * capabilities either way. As root it cannot be missing, only
	 * disabled, and without it model code would run as root with every
	 * capability (the controller's /proc/PID/mem is then open to it):
	 * mandatory, like seccomp. */
	if (root && !st->on[REPL_L_IDENTITY]) {
		if (!c->unsafe)
			return mandatory_off(err, REPL_L_IDENTITY, disabled_by(r, REPL_L_IDENTITY),
					     st->why[REPL_L_IDENTITY]);
		st->unsafe = true;
	}
	sb->uid = probe.euid;
	sb->gid = probe.egid;
	if (st->on[REPL_L_IDENTITY] && root) {
		sb->uid = REPL_NOBODY;
		sb->gid = REPL_NOBODY;
	}
	if (st->on[REPL_L_USERNS]) {
		sb->ns_uid = NS_UID;
		sb->ns_gid = NS_UID;
		sb->setgroups_deny = !root;
	} else {
		sb->ns_uid = sb->uid;
		sb->ns_gid = sb->gid;
	}
	st->uid = sb->uid;
	st->gid = sb->gid;
	if (sb->uid != probe.euid || sb->gid != probe.egid) {
		if (chown(r->scratch, sb->uid, sb->gid) < 0)
			return rlm_err_set(err, RLM_ESANDBOX,
					   "cannot hand the scratch directory '%s' to uid %u: %s",
					   r->scratch, sb->uid, strerror(errno));
		if (closed_ancestor(r->scratch, why, sizeof(why)))
			return rlm_err_set(err, RLM_ESANDBOX,
					   "the worker (uid %u) cannot reach its scratch directory: "
					   "'%s' is not searchable by others; set TMPDIR to a "
					   "directory everyone can enter, such as /tmp",
					   sb->uid, why);
	}

	/* Its own root: needs the ids inside the namespace (the tmpfs's
	 * owner), so after identity. */
	if (st->on[REPL_L_PIVOT]) {
		sb->pivot = root_plan(r, sb, why, sizeof(why));
		if (!sb->pivot)
			off(st, REPL_L_PIVOT, "%s", why);
	}

	/* The scratch: a sized tmpfs in the mount namespace, else the plain
	 * directory, checked after each exec. */
	st->scratch_tmpfs = st->on[REPL_L_MNTNS];
	snprintf(sb->tmpfs_opts, sizeof(sb->tmpfs_opts),
		 "size=%zu,nr_inodes=%lu,mode=0700,uid=%u,gid=%u", c->scratch_limit,
		 repl__scratch_inodes(c->scratch_limit), sb->ns_uid, sb->ns_gid);
	st->scratch_inodes = repl__scratch_inodes(c->scratch_limit);

	/* rlimits (this order: build_line reads them by index). */
	if (st->on[REPL_L_RLIMITS]) {
		size_t as = c->mem_limit;
		unsigned long cpu = c->cpu_limit_s > 0 ? (unsigned long)c->cpu_limit_s : DEF_CPU_S;
		unsigned long files = c->max_files > 0 ? (unsigned long)c->max_files : DEF_FILES;
		if (!as) {
			as = 2 * GiB;
			if (r->text_len > as / 16)
				as = r->text_len > SIZE_MAX / 16 ? SIZE_MAX : 16 * r->text_len;
		}
		add_rl(sb, RLIMIT_AS, as, as);
		add_rl(sb, RLIMIT_NOFILE, files, files);
		add_rl(sb, RLIMIT_FSIZE, c->scratch_limit, c->scratch_limit);
		add_rl(sb, RLIMIT_CPU, cpu, cpu + 5);
		add_rl(sb, RLIMIT_CORE, 0, 0);
		add_rl(sb, RLIMIT_MSGQUEUE, 0, 0);
		/* Threads: since 5.14 RLIMIT_NPROC counts the tasks of one uid
		 * in one user namespace, and every worker has its own (the
		 * zygote's workers a nested one each), so this caps the
		 * worker's threads alone. The kernel waives it only for a
		 * task with CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial
		 * namespace, or of the host's root: never a worker but an
		 * unsafe one that stays root. Without a user namespace it
		 * would count every process of nobody, or of the
		 * controller's user, and so before 5.14 even with one (every
		 * worker of a root controller would share 256): no cap there. */
		if (st->on[REPL_L_USERNS] && probe.nproc_per_ns && c->max_threads >= 0) {
			unsigned long n =
			    c->max_threads > 0 ? (unsigned long)c->max_threads : DEF_THREADS;
			add_rl(sb, RLIMIT_NPROC, n, n);
			st->max_threads = (int)sb->rl[sb->n_rl - 1].cur;
		}
	}

	for (int l = 0; l < REPL_L_COUNT; l++)
		if (st->on[l])
			sb->layers |= 1u << l;
	/* Tests: make the child fail at a layer, as a broken or a busy
	 * machine would (a layer that is not planned is not failed). */
	if (fault && *fault) {
		int l, e;
		if (parse_fault(fault, &l, &e, err) < 0)
			return RLM_EINVAL;
		if (sb->layers & (1u << l)) {
			sb->fault = l;
			sb->fault_errno = e;
		}
	}
	st->seccomp_filters = 0;
	build_line(r);
	return 0;
}

bool repl__sandbox_broken(struct repl *r, enum repl_layer l, const char *why)
{
	if ((unsigned)l >= REPL_L_COUNT)
		return false;
	if (l == REPL_L_SECCOMP && !r->cfg.sandbox.unsafe)
		return false;
	pthread_mutex_lock(&broken_mu);
	if (!(broken_bits & (1u << l))) {
		broken_bits |= 1u << l;
		snprintf(broken_why[l], sizeof(broken_why[l]), "%s", why);
	}
	pthread_mutex_unlock(&broken_mu);
	return true;
}

/* ---- in the spawner thread ---- */

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, e = 0;
	size_t n = strlen(text);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, text, n) != (ssize_t)n)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

int repl__sandbox_parent(const struct repl_sandbox *sb, pid_t pid, const char **what)
{
	char map[64];
	int e;
	if (!(sb->clone_flags & CLONE_NEWUSER))
		return 0;
	if (sb->setgroups_deny) {
		*what = "write setgroups";
		e = write_proc(pid, "setgroups", "deny");
		if (e)
			return e;
	}
	*what = "write gid_map";
	snprintf(map, sizeof(map), "%u %u 1\n", sb->ns_gid, sb->gid);
	e = write_proc(pid, "gid_map", map);
	if (e)
		return e;
	*what = "write uid_map";
	snprintf(map, sizeof(map), "%u %u 1\n", sb->ns_uid, sb->uid);
	return write_proc(pid, "uid_map", map);
}

/* ---- the zygote ---- */

void repl__sandbox_zygote(const struct repl_sandbox *w, struct repl_sandbox *z)
{
	*z = *w;
	/* Its user namespace and identity are the workers'; the rest is
	 * each worker's own, made by the worker. */
	z->clone_flags = w->clone_flags & CLONE_NEWUSER;
	z->keep_admin = (w->clone_flags & CLONE_NEWUSER) && (w->clone_flags & ~CLONE_NEWUSER);
	z->layers &= (1u << REPL_L_IDENTITY) | (1u << REPL_L_USERNS);
	z->pivot = false;
	z->seccomp = NULL;
	z->landlock_fd = -1;
	z->n_rl = 0;
	add_rl(z, RLIMIT_CORE, 0, 0);
	z->fault = -1;
}

uint64_t repl__sandbox_scratch_rights(void)
{
	pthread_once(&probe_once, probe_run);
	return probe.ll_scratch;
}

/* ---- in the child: raw system calls only ---- */

static int sc(long rc)
{
	return rc < 0 ? errno : 0;
}

#define STEP(l, name, call)                                                                        \
	do {                                                                                       \
		*layer = (l);                                                                      \
		*what = (name);                                                                    \
		if ((e = sc(call)) != 0)                                                           \
			return e;                                                                  \
	} while (0)

#ifndef SYS_pivot_root
#define SYS_pivot_root 155
#endif

/* The steps of sb->root, below the root tmpfs at sb->scratch. */
static int child_root_ops(const struct repl_sandbox *sb, int *layer, const char **what)
{
	const struct repl_root *rt = &sb->root;
	int e;
	for (int i = 0; i < rt->n; i++) {
		const struct repl_root_op *o = &rt->ops[i];
		const char *src = rt->arena + o->src, *dst = rt->arena + o->dst;
		int fd;
		switch (o->op) {
		case REPL_ROOT_MKDIR:
			*layer = REPL_L_PIVOT;
			*what = "new root: mkdir";
			if (syscall(SYS_mkdirat, AT_FDCWD, dst, 0755) < 0 && errno != EEXIST)
				return errno;
			break;
		case REPL_ROOT_SYMLINK:
			STEP(REPL_L_PIVOT, "new root: symlink",
			     syscall(SYS_symlinkat, src, AT_FDCWD, dst));
			break;
		case REPL_ROOT_RBIND:
			STEP(REPL_L_PIVOT, "new root: bind a directory",
			     syscall(SYS_mount, src, dst, NULL, MS_BIND | MS_REC, NULL));
			break;
		case REPL_ROOT_FBIND:
		case REPL_ROOT_FBIND_OPT:
			*layer = REPL_L_PIVOT;
			*what = "new root: a file to bind on";
			fd = (int)syscall(SYS_openat, AT_FDCWD, dst, O_WRONLY | O_CREAT | O_CLOEXEC,
					  0444);
			if (fd < 0)
				return errno;
			syscall(SYS_close, fd);
			if (o->op == REPL_ROOT_FBIND_OPT)
				(void)syscall(SYS_mount, src, dst, NULL, MS_BIND, NULL);
			else
				STEP(REPL_L_PIVOT, "new root: bind a file",
				     syscall(SYS_mount, src, dst, NULL, MS_BIND, NULL));
			break;
		}
	}
	return 0;
}

/* The worker's own root: a tmpfs over the scratch directory, filled by
 * the plan (binds of /usr, ...), a fresh /proc in it, then pivot_root
 * and the host's tree detached (pivot_root(".", ".") stacks the old root
 * on the new one; the umount takes it away whole), everything read-only
 * but the device nodes' nodev, and the scratch tmpfs last. */
static int child_pivot(const struct repl_sandbox *sb, int *layer, const char **what)
{
	struct m_attr ro = {M_RDONLY | M_NOSUID | M_NODEV, 0, 0, 0};
	struct m_attr dev = {0, M_NODEV, 0, 0};
	const struct repl_root *rt = &sb->root;
	size_t rlen = 0;
	int e;
	while (sb->scratch[rlen])
		rlen++;
	STEP(REPL_L_PIVOT, "mount the new root",
	     syscall(SYS_mount, "rlm-root", sb->scratch, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		     rt->opts));
	/* What we create there must belong to an id the namespace maps: a
	 * root controller's child is still the host's root (unmapped, so
	 * EOVERFLOW) until the identity step; setresuid resets these. */
	syscall(SYS_setfsgid, sb->ns_gid);
	syscall(SYS_setfsuid, sb->ns_uid);
	if ((e = child_root_ops(sb, layer, what)) != 0)
		return e;
	if (sb->clone_flags & CLONE_NEWPID)
		STEP(REPL_L_PIDNS, "mount /proc",
		     syscall(SYS_mount, "proc", rt->arena + rt->proc, "proc",
			     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
	STEP(REPL_L_PIVOT, "chdir to the new root", syscall(SYS_chdir, sb->scratch));
	STEP(REPL_L_PIVOT, "pivot_root", syscall(SYS_pivot_root, ".", "."));
	STEP(REPL_L_PIVOT, "detach the host's root", syscall(SYS_umount2, ".", MNT_DETACH));
	STEP(REPL_L_PIVOT, "chdir /", syscall(SYS_chdir, "/"));
	STEP(REPL_L_PIVOT, "mount_setattr / read-only",
	     syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)));
	for (int i = 0; i < rt->n; i++)
		if (rt->ops[i].dev)
			(void)syscall(SYS_mount_setattr, AT_FDCWD, rt->arena + rt->ops[i].dst + rlen,
				      0, &dev, sizeof(dev));
	STEP(REPL_L_MNTNS, "mount the scratch tmpfs",
	     syscall(SYS_mount, "rlm-scratch", sb->scratch, "tmpfs",
		     MS_NOSUID | MS_NODEV | MS_NOEXEC, sb->tmpfs_opts));
	return 0;
}

static int child_mounts(const struct repl_sandbox *sb, int *layer, const char **what)
{
	struct m_attr ro = {M_RDONLY | M_NOSUID | M_NODEV, 0, 0, 0};
	struct m_attr dev = {0, M_NODEV, 0, 0};
	int e;
	STEP(REPL_L_MNTNS, "mount / private",
	     syscall(SYS_mount, "none", "/", NULL, MS_REC | MS_PRIVATE, NULL));
	if (sb->pivot)
		return child_pivot(sb, layer, what);
	if (sb->clone_flags & CLONE_NEWPID)
		STEP(REPL_L_PIDNS, "mount /proc",
		     syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL));
	else
		/* The host's /proc (other processes, the controller's
		 * environ) is covered by an empty directory. */
		STEP(REPL_L_MNTNS, "cover /proc",
		     syscall(SYS_mount, "none", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     "size=4k,mode=0555"));
	STEP(REPL_L_MNTNS, "mount_setattr / read-only",
	     syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)));
	/* Device nodes stay usable in /dev itself (/dev/null; Landlock and
	 * the uid say which); not in /dev/shm, /dev/pts or anywhere else. */
	(void)syscall(SYS_mount_setattr, AT_FDCWD, "/dev", 0, &dev, sizeof(dev));
	/* After the read-only pass: a new mount is writable. */
	STEP(REPL_L_MNTNS, "mount the scratch tmpfs",
	     syscall(SYS_mount, "rlm-scratch", sb->scratch, "tmpfs",
		     MS_NOSUID | MS_NODEV | MS_NOEXEC, sb->tmpfs_opts));
	return 0;
}

static int child_identity(const struct repl_sandbox *sb, int *layer, const char **what)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	bool userns = sb->clone_flags & CLONE_NEWUSER;
	bool id = sb->layers & (1u << REPL_L_IDENTITY);
	int e;
	/* Ambient capabilities survive execve into a file without any: a
	 * non-root controller started with some (systemd's
	 * AmbientCapabilities=, capsh --addamb) would hand them to python3,
	 * and verify would then refuse every worker. Cleared whatever else
	 * happens; EINVAL is a kernel before 4.3, which has none. */
	*layer = REPL_L_IDENTITY;
	*what = "prctl(PR_CAP_AMBIENT_CLEAR_ALL)";
	if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return errno;
	if (userns || (id && (long)sb->uid != syscall(SYS_geteuid))) {
		if (!sb->setgroups_deny && id)
			STEP(REPL_L_IDENTITY, "setgroups", syscall(SYS_setgroups, 0, NULL));
		/* In a user namespace a failure here is the namespace's:
		 * without it, plain setresuid takes over. */
		STEP(userns ? REPL_L_USERNS : REPL_L_IDENTITY, "setresgid",
		     syscall(SYS_setresgid, sb->ns_gid, sb->ns_gid, sb->ns_gid));
		STEP(userns ? REPL_L_USERNS : REPL_L_IDENTITY, "setresuid",
		     syscall(SYS_setresuid, sb->ns_uid, sb->ns_uid, sb->ns_uid));
	}
	/* No capabilities: in a user namespace they survive the uid change
	 * until execve, and a non-root controller may hold permitted ones.
	 * Kept only by a worker meant to stay root (identity disabled as
	 * root, unsafe), which runs with everything root has anyway. */
	if (!id && !userns && sb->uid == 0)
		return 0;
	for (int i = 0; i < 2; i++)
		data[i] = (struct __user_cap_data_struct){0, 0, 0};
	if (sb->keep_admin) {
		/* The zygote: CAP_SYS_ADMIN in its user namespace, through
		 * execve (ambient), to give each worker its namespaces. */
		data[0].effective = data[0].permitted = data[0].inheritable =
		    1u << CAP_SYS_ADMIN;
		STEP(REPL_L_USERNS, "capset", syscall(SYS_capset, &hdr, data));
		STEP(REPL_L_USERNS, "prctl(PR_CAP_AMBIENT_RAISE)",
		     syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
		return 0;
	}
	STEP(REPL_L_IDENTITY, "capset", syscall(SYS_capset, &hdr, data));
	return 0;
}

static int child_landlock(const struct repl_sandbox *sb, int *layer, const char **what)
{
	struct ll_path_beneath pb;
	int e, fd;
	*layer = REPL_L_LANDLOCK;
	*what = "open the scratch directory";
	fd = (int)syscall(SYS_openat, AT_FDCWD, sb->scratch, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	pb.allowed_access = probe.ll_scratch;
	pb.parent_fd = fd;
	e = sc(syscall(SYS_landlock_add_rule, sb->landlock_fd, LL_RULE_PATH, &pb, 0));
	syscall(SYS_close, fd);
	if (e) {
		*what = "landlock_add_rule scratch";
		return e;
	}
	STEP(REPL_L_LANDLOCK, "landlock_restrict_self",
	     syscall(SYS_landlock_restrict_self, sb->landlock_fd, 0));
	syscall(SYS_close, sb->landlock_fd);
	return 0;
}

int repl__sandbox_child(const struct repl_sandbox *sb, int *layer, const char **what)
{
	int e;
	*layer = -1;
	*what = "";
	if (sb->fault >= 0 && sb->fault != REPL_L_SECCOMP) {
		*layer = sb->fault; /* RLM_SANDBOX_FAULT: a test */
		*what = "injected fault";
		return sb->fault_errno;
	}
	if (sb->clone_flags & CLONE_NEWNS) {
		e = child_mounts(sb, layer, what);
		if (e)
			return e;
	}
	e = child_identity(sb, layer, what);
	if (e)
		return e;
	for (int i = 0; i < sb->n_rl; i++) {
		struct rlimit rl = {sb->rl[i].cur, sb->rl[i].max};
		STEP(REPL_L_RLIMITS, "setrlimit",
		     syscall(SYS_prlimit64, 0, sb->rl[i].res, &rl, NULL));
	}
	*layer = -1;
	*what = "prctl(PR_SET_NO_NEW_PRIVS)";
	if ((e = sc(syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))) != 0)
		return e;
	if (sb->landlock_fd >= 0) {
		e = child_landlock(sb, layer, what);
		if (e)
			return e;
	}
	*layer = -1;
	*what = "";
	return 0;
}

#undef STEP

/* ---- after "ready" ---- */

int repl__sandbox_verify(struct repl *r, struct rlm_err *err)
{
	struct repl_sandbox_status *st = &r->sb_status;
	char path[64], line[256];
	unsigned long long cap_eff = ~0ULL;
	int nnp = -1, filters = -1;
	unsigned uid = ~0u, gid = ~0u;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)r->pid);
	f = fopen(path, "re");
	if (!f)
		return rlm_err_set(err, RLM_EIO, "cannot check the worker's sandbox: %s: %s", path,
				   strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u", &uid) == 1 || sscanf(line, "Gid: %u", &gid) == 1 ||
		    sscanf(line, "CapEff: %llx", &cap_eff) == 1 ||
		    sscanf(line, "NoNewPrivs: %d", &nnp) == 1 ||
		    sscanf(line, "Seccomp_filters: %d", &filters) == 1)
			continue;
	}
	fclose(f);
	st->uid = uid;
	st->gid = gid;
	st->seccomp_filters = filters < 0 ? 0 : filters;
	build_line(r);
	if (st->on[REPL_L_SECCOMP] && filters < 2)
		return rlm_err_set(err, RLM_EIO,
				   "the worker runs with %d seccomp filter%s, not 2: its sandbox "
				   "is not what was planned",
				   filters, filters == 1 ? "" : "s");
	if (nnp != 1)
		return rlm_err_set(err, RLM_EIO, "the worker runs without no_new_privs");
	if (st->on[REPL_L_IDENTITY] && cap_eff != 0)
		return rlm_err_set(err, RLM_EIO, "the worker kept capabilities (CapEff %llx)",
				   cap_eff);
	if (st->on[REPL_L_IDENTITY] && uid != r->sb.uid)
		return rlm_err_set(err, RLM_EIO, "the worker runs as uid %u, not %u", uid,
				   r->sb.uid);
	return 0;
}

/* ---- the scratch quota of a plain directory ---- */

struct walk {
	unsigned long long bytes;
	size_t n;   /* entries seen */
	size_t max; /* entries allowed (the inode cap) */
	bool deep;  /* a directory below WALK_DEPTH: over the limit */
	int denied; /* errno of an entry we may not look at: over too */
};

/* A failure the worker caused: with its uid (a controller that is not
 * root) it can chmod a directory to 0 or 0444 and hide what is inside.
 * ENOENT is an entry removed meanwhile, ELOOP or ENOTDIR one replaced by
 * a symlink or a file: nothing to count below it. */
static void walk_failed(struct walk *w, int e)
{
	if ((e == EACCES || e == EPERM) && !w->denied)
		w->denied = e;
}

/* Sum the blocks below dfd (which it closes). Recursive, one fd per
 * level: a tree deeper than WALK_DEPTH is not walked but counted as over
 * the limit, so that what is down there is neither missed nor costs an
 * fd per level; so is a directory we are denied. */
static void walk(int dfd, int depth, struct walk *w)
{
	DIR *d;
	struct dirent *e;
	if (depth > WALK_DEPTH) {
		w->deep = true;
		close(dfd);
		return;
	}
	d = fdopendir(dfd);
	if (!d) {
		walk_failed(w, errno);
		close(dfd);
		return;
	}
	while ((e = readdir(d)) != NULL && w->n < w->max && !w->deep && !w->denied) {
		struct stat s;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) {
			walk_failed(w, errno);
			continue;
		}
		w->n++;
		w->bytes += (unsigned long long)s.st_blocks * 512;
		if (S_ISDIR(s.st_mode)) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				walk(fd, depth + 1, w);
			else
				walk_failed(w, errno);
		}
	}
	closedir(d);
}

bool repl__scratch_over(const struct repl *r, char *what, size_t cap)
{
	unsigned long long lim = r->cfg.sandbox.scratch_limit;
	struct walk w = {0, 0, 0, false, 0};
	int fd;
	if (r->sb_status.scratch_tmpfs || !r->scratch || !lim)
		return false;
	w.max = RLM_MIN(repl__scratch_inodes(lim), (unsigned long)WALK_MAX);
	fd = open(r->scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* A worker of our own uid (we are not root) may have made the whole
	 * scratch unreadable: it is a 0700 directory of ours, so open it up
	 * again, or emptying it and the next worker's chdir would fail too.
	 * The name is in our directory; a worker that could swap it for a
	 * symlink (no Landlock) can chmod our files itself anyway. */
	if (fd < 0 && errno == EACCES && chmod(r->scratch, 0700) == 0)
		fd = open(r->scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		walk_failed(&w, errno);
	else
		walk(fd, 0, &w);
	if (w.denied) {
		snprintf(what, cap,
			 "the scratch directory could not be measured (the worker made a "
			 "directory in it unreadable: %s)",
			 strerror(w.denied));
		return true;
	}
	if (w.deep) {
		snprintf(what, cap,
			 "the scratch directory passed its limit of %d nested directories",
			 WALK_DEPTH);
		return true;
	}
	if (w.n >= w.max) {
		snprintf(what, cap,
			 "the scratch directory passed its limit of %zu files and directories",
			 w.max);
		return true;
	}
	if (w.bytes <= lim)
		return false;
	snprintf(what, cap, "the scratch directory passed its limit of %llu MB (it held %.1f MB)",
		 lim >> 20, (double)w.bytes / (double)MiB);
	return true;
}
