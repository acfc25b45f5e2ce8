# SPDX-License-Identifier: MIT
# repl/zygote.py -- the zygote: a python3 that has loaded the REPL runtime
# once and forks every worker from there, so that a worker is ready in a
# few milliseconds instead of a Python start-up. Run inside the runtime's
# namespace (repl/runtime.py, started as "... zygote <plan>", which reads
# this file's code from fd 6 as its own: repl/code.c);
# _zygote returns only in a worker, with the worker's arguments.
#
# DESIGN
# The controller's side and the reasons are in repl/zygote.c and
# docs/repl.md. The zygote runs no model code. It is started by the
# spawner like a worker, in the workers' user namespace and identity when
# they have one, keeping CAP_SYS_ADMIN there (ambient) to make each
# worker's namespaces; it has no seccomp filter and no Landlock domain of
# its own (both would forbid the mounts), and is not dumpable.
#
# A request is one SOCK_SEQPACKET message on fd 3: a frame (4-byte
# big-endian length, JSON) with the worker's plan, and SCM_RIGHTS with its
# fds: the log pipe, fd 3 and fd 4 of the worker, the context memfd, and
# the Landlock ruleset when it has one. The zygote clones with
# CLONE_PARENT, so the worker is the controller's child (it waits for it,
# signals it, reads its status) and the zygote keeps none, and with the
# worker's namespaces (mount, pid, network, IPC, UTS: its own, as a
# worker started cold gets). It answers {"pid":P} (P as the controller
# sees it: the zygote shares its pid namespace), or {"error":...,
# "errno":E} when clone failed.
#
# The worker then does what repl/spawn.c and repl/sandbox.c do between
# clone and execve, in the same order and with the same fatal frames on
# its fd 4 (a step that fails names its layer; exit 126 for the sandbox,
# 127 otherwise): its own session, the parent-death signal, a user
# namespace of its own (nested: RLIMIT_NPROC then counts its threads
# alone), the fd layout, its mounts (with the pivot layer, a copy of the
# root the zygote built once and pivoted into (_z_template) with a tmpfs
# of its own down to its scratch; else the tree read-only; a fresh /proc,
# the scratch tmpfs), fd 0 an empty pipe, no capabilities, its rlimits,
# no_new_privs, Landlock with its scratch directory, chdir, and the first
# seccomp filter (its own pid patched in).
# The runtime's start then stacks the late filter as in any worker.
# System calls go through libc's syscall(), with the numbers the
# controller passes in the plan.

import _ctypes
import _socket

_CLONE_PARENT = 0x8000
_CLONE_NEWUSER = 0x10000000
_SIGCHLD = 17
_SELF = 0x7ff0be11  # REPL_BPF_SELF: the pid placeholder of the first filter


class _Z:
    nr = None        # system call numbers, from the plan
    sys = None       # libc syscall()
    before = None    # PyOS_BeforeFork and friends
    parent = None
    child = None
    first = None     # the first seccomp filter (bytes), None: none
    late = '-'       # the late filter, hex
    ppid = 0         # the controller
    uid = gid = 0    # ours, in the zygote's user namespace
    errno = None


class _ZFail(Exception):
    def __init__(self, what, e, layer=None):
        Exception.__init__(self, what)
        self.what, self.e, self.layer = what, e, layer


def _z_setup(plan):
    class _long(_ctypes._SimpleCData):
        _type_ = 'l'

    class _syscall(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = _long
        _argtypes_ = (_long,) * 7

    class _pyapi(_ctypes.CFuncPtr):  # void f(void), called with the GIL held
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_PYTHONAPI
        _restype_ = None
        _argtypes_ = ()

    libc = _ctypes.dlopen(None)
    _Z.sys = _syscall(_ctypes.dlsym(libc, 'syscall'))
    _Z.before = _pyapi(_ctypes.dlsym(libc, 'PyOS_BeforeFork'))
    _Z.parent = _pyapi(_ctypes.dlsym(libc, 'PyOS_AfterFork_Parent'))
    _Z.child = _pyapi(_ctypes.dlsym(libc, 'PyOS_AfterFork_Child'))
    _Z.errno = _ctypes.get_errno
    _Z.nr = plan['nr']
    _Z.first = bytes.fromhex(plan['first']) if plan['first'] != '-' else None
    _Z.late = plan['late']
    _Z.ppid = plan['ppid']
    _Z.uid = posix.geteuid()  # in the zygote's namespace: what each
    _Z.gid = posix.getegid()  # worker's own namespace maps to itself


class _ubyte(_ctypes._SimpleCData):
    _type_ = 'B'


class _Mem:
    """Bytes at a fixed address for a system call, kept alive with it."""

    def __init__(self, data):
        class _a(_ctypes.Array):
            _type_ = _ubyte
            _length_ = max(len(data), 1)
        self.buf = bytearray(data) or bytearray(1)
        self.arr = _a.from_buffer(self.buf)
        self.addr = _ctypes.addressof(self.arr)


def _cstr(s):
    return _Mem(s.encode('utf-8', 'surrogateescape') + b'\0')


def _u64s(*vals):
    return b''.join((v & (2 ** 64 - 1)).to_bytes(8, 'little') for v in vals)


def _sc(name, *args, what=None, layer=None):
    """syscall(name, args...): the result, or _ZFail naming the step."""
    keep = []
    argv = [0] * 6
    for i, a in enumerate(args):
        if isinstance(a, _Mem):
            keep.append(a)
            a = a.addr
        elif a is None:
            a = 0
        argv[i] = a if a < 2 ** 63 else a - 2 ** 64
    r = _Z.sys(_Z.nr[name], *argv)
    if r == -1:
        raise _ZFail(what or name, _Z.errno(), layer)
    return r


# ---- the zygote's loop ----

def _z_recv(sock):
    """One request: (plan, fds), or None at EOF."""
    cmsg_space = 64  # CMSG_SPACE(6 fds * 4)
    data, anc, _flags, _addr = sock.recvmsg(1 << 16, cmsg_space)
    fds = []
    for level, kind, payload in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - len(payload) % 4, 4)]
    if not data:
        return None, fds
    n = int.from_bytes(data[:4], 'big')
    return _decode(data[4:4 + n]), fds


def _zygote(plan_json):
    """Serve requests on fd 3 until EOF; return only in a forked worker,
    with its arguments."""
    plan = _decode(plan_json.encode('utf-8'))
    _z_setup(plan)
    # Not dumpable: the zygote is a copy of nothing secret, but its
    # workers inherit the flag until the runtime sets it again; and
    # before its first mount (the root template), as every process of ours
    # is by then (test_repl child_is_not_dumpable_after_the_handshake).
    _harden('-')
    if plan.get('root'):
        _z_template(plan['root'])
    sys.argv = ['']
    for fd in (4, 5):
        try:
            posix.close(fd)
        except OSError:
            pass
    posix.dup2(3, 4)  # _send writes to fd 4: the socket too
    sock = _socket.socket(fileno=3)
    _send({'type': 'zygote', 'pid': posix.getpid(), 'python': sys.version.split()[0]})
    while True:
        try:
            req, fds = _z_recv(sock)
        except InterruptedError:
            continue
        if req is None:
            posix._exit(0)  # the controller is gone: so are we
        pid, err = 0, None
        try:
            if type(req) is not dict or len(fds) not in (4, 5):
                raise ValueError('a request with %d fds' % len(fds))
            if req.get('zroot'):
                _z_top(req)
            pid = _z_fork(req.get('flags', 0) | (_CLONE_NEWUSER if req.get('nest') else 0))
        except _ZFail as e:
            err = {'error': '%s: errno %d' % (e.what, e.e), 'errno': e.e}
        except Exception as e:
            err = {'error': repr(e)[:300], 'errno': 0}
        if pid == 0 and err is None:
            sock.detach()  # fd 3 is about to be the worker's pipe
            return _z_worker(req, fds)
        for fd in fds:
            posix.close(fd)
        _send(err or {'pid': pid})
        if not _xs:
            # The tool and skill helpers (the runtime's _X_SRC), compiled
            # once here rather than in each worker that calls one; after
            # the first answer, so that no worker waits for it.
            try:
                _x_load()
            except Exception:
                pass


def _z_fork(flags):
    """clone(CLONE_PARENT | flags): 0 in the child, its pid in the zygote."""
    _Z.before()
    try:
        pid = _sc('clone', flags | _CLONE_PARENT | _SIGCHLD, 0, 0, 0, 0, what='clone')
    except BaseException:
        _Z.parent()
        raise
    if pid == 0:
        _Z.child()
    else:
        _Z.parent()
    return pid


# ---- in the worker, before any of its code ----

def _z_fatal(fd, what, e, layer):
    msg = {'type': 'fatal', 'error': ('sandbox: ' if layer else '') + '%s: errno %d' % (what, e)}
    if layer:
        msg['layer'] = layer
    body = _encode(msg).encode()
    data = len(body).to_bytes(4, 'big') + body
    try:
        posix.write(fd, data)
    finally:
        posix._exit(126 if layer else 127)


def _z_worker(req, fds):
    report = fds[2]
    try:
        nfd = _z_prepare(req, fds)
        report = 4
        _z_sandbox(req, nfd)
    except _ZFail as e:
        _z_fatal(report, e.what, e.e, e.layer)
    except BaseException as e:
        _z_fatal(report, 'zygote: ' + repr(e)[:200], 0, None)
    args = list(req['args'])
    args.append(_Z.late)
    return args


def _z_prepare(req, fds):
    """Session, parent death, fd layout: 0 stays /dev/null (until
    _z_sandbox makes it a pipe), 1 and 2 the log pipe, 3 and 4 the frames, 5 the context, 6 the Landlock ruleset."""
    posix.setsid()
    _sc('prctl', 1, 9, what='prctl(PR_SET_PDEATHSIG)')  # SIGKILL
    if not req.get('pidns') and posix.getppid() != _Z.ppid:
        posix._exit(127)  # the controller died before we could watch it
    src = [fds[0], fds[0], fds[1], fds[2], fds[3]] + fds[4:5]
    tmp = [_sc('fcntl', fd, 1030, 16, what='fcntl(F_DUPFD_CLOEXEC)') for fd in src]
    for i, fd in enumerate(tmp):
        posix.dup2(fd, i + 1)
    return len(tmp) + 1


def _z_sandbox(req, nfd):
    # Only fds 0 .. nfd - 1 from here: failures are reported on fd 4.
    try:
        _sc('close_range', nfd, 2 ** 32 - 1, 0)
    except _ZFail:
        posix.closerange(nfd, 65536)
    env = req['tmpdir'].encode()
    posix.putenv(b'TMPDIR', env)
    posix.environ[b'TMPDIR'] = env
    fault = req.get('fault')
    if fault and fault[0] != 'seccomp':
        raise _ZFail('injected fault', fault[1], fault[0])
    if req.get('nest'):
        _z_maps()
    if req['flags'] & 0x20000:  # CLONE_NEWNS
        _z_mounts(req)
    # No capabilities (the zygote's CAP_SYS_ADMIN was for the mounts).
    try:
        _sc('prctl', 47, 4, what='prctl(PR_CAP_AMBIENT_CLEAR_ALL)', layer='identity')
    except _ZFail as e:
        if e.e != 22:  # EINVAL: a kernel before 4.3
            raise
    if not req.get('keepcaps'):
        _sc('capset', _Mem(_u64s(0x20080522)[:4] + b'\0' * 4), _Mem(b'\0' * 24),
            what='capset', layer='identity')
    for res, cur, mx in req.get('rl', ()):
        _sc('prlimit64', 0, res, _Mem(_u64s(cur, mx)), 0, what='setrlimit', layer='rlimits')
    _sc('prctl', 38, 1, 0, 0, 0, what='prctl(PR_SET_NO_NEW_PRIVS)')
    if req.get('ll'):
        d = _sc('openat', -100, _cstr(req['scratch']), 0o10000000 | 0o200000 | 0o2000000,
                0, what='open the scratch directory', layer='landlock')
        pb = _Mem(_u64s(req['ll']) + d.to_bytes(4, 'little'))
        try:
            _sc('landlock_add_rule', 6, 1, pb, 0, what='landlock_add_rule scratch',
                layer='landlock')
        finally:
            posix.close(d)
        _sc('landlock_restrict_self', 6, 0, what='landlock_restrict_self', layer='landlock')
        posix.close(6)
    # fd 0: an empty pipe (EOF), not the host's /dev/null, whose inode
    # futimens(0) or fchmod(0) would change (spawn.c, child_stdin).
    try:
        r, w = posix.pipe()
        posix.dup2(r, 0)
        posix.close(r)
        posix.close(w)
    except OSError as e:
        raise _ZFail('stdin pipe', e.errno) from None
    try:
        posix.chdir(req['scratch'])
    except OSError as e:
        raise _ZFail('chdir', e.errno) from None
    if fault and fault[0] == 'seccomp':
        raise _ZFail('seccomp', fault[1], 'seccomp')
    if _Z.first is not None and req.get('seccomp'):
        _z_seccomp(posix.getpid())


def _z_maps():
    """Our own user namespace (nested in the zygote's): map our uid and
    gid to themselves, as unshare -r does, so that RLIMIT_NPROC counts
    this worker's threads alone. Writing our own maps needs us dumpable
    (a non-dumpable process's /proc files are the host root's); we are a
    copy of the zygote, which holds no secret, and not dumpable again
    right after."""
    _sc('prctl', 4, 1, 0, 0, 0, what='prctl(PR_SET_DUMPABLE)', layer='userns')
    for name, text in (('setgroups', b'deny'),
                       ('gid_map', b'%d %d 1\n' % (_Z.gid, _Z.gid)),
                       ('uid_map', b'%d %d 1\n' % (_Z.uid, _Z.uid))):
        try:
            fd = posix.open('/proc/self/' + name, posix.O_WRONLY | posix.O_CLOEXEC)
            try:
                posix.write(fd, text)
            finally:
                posix.close(fd)
        except OSError as e:
            raise _ZFail('write ' + name, e.errno, 'userns') from None
    _sc('prctl', 4, 0, 0, 0, 0, what='prctl(PR_SET_DUMPABLE)', layer='userns')


def _z_proc(req, flags):
    """/proc: a fresh one with a pid namespace, else covered (empty)."""
    if req.get('pidns'):
        _sc('mount', _cstr('proc'), _cstr('/proc'), _cstr('proc'), flags, None,
            what='mount /proc', layer='pidns')
    else:
        _sc('mount', _cstr('none'), _cstr('/proc'), _cstr('tmpfs'), flags,
            _cstr('size=4k,mode=0555'), what='cover /proc', layer='mntns')


def _z_mounts(req):
    ro = _Mem(_u64s(0x1 | 0x2 | 0x4, 0, 0, 0))  # MOUNT_ATTR_RDONLY|NOSUID|NODEV
    nodev = _Mem(_u64s(0, 0x4, 0, 0))
    flags = 0x2 | 0x4 | 0x8  # MS_NOSUID|MS_NODEV|MS_NOEXEC
    _sc('mount', _cstr('none'), _cstr('/'), None, 0x4000 | 0x40000, None,
        what='mount / private', layer='mntns')  # MS_REC|MS_PRIVATE
    if req.get('zroot'):
        return _z_inroot(req, ro, nodev, flags)
    _z_proc(req, flags)
    _sc('mount_setattr', -100, _cstr('/'), 0x8000, ro, 32,
        what='mount_setattr / read-only', layer='mntns')
    try:
        _sc('mount_setattr', -100, _cstr('/dev'), 0, nodev, 32)
    except _ZFail:
        pass
    _sc('mount', _cstr('rlm-scratch'), _cstr(req['scratch']), _cstr('tmpfs'), flags,
        _cstr(req['tmpfs']), what='mount the scratch tmpfs', layer='mntns')


def _z_root_ops(R, ops):
    """The plan's steps below R (0 mkdir, 1 symlink, 2 bind a directory,
    3 bind a file, 4 bind a file where the kernel lets it be), as
    repl/sandbox.c's child_root_ops."""
    for op, src, dst, _dev in ops:
        dst = R + dst
        try:
            if op == 0:
                try:
                    posix.mkdir(dst, 0o755)
                except FileExistsError:
                    pass
            elif op == 1:
                posix.symlink(src, dst)
            elif op in (3, 4):
                posix.close(posix.open(dst, posix.O_WRONLY | posix.O_CREAT | posix.O_CLOEXEC,
                                       0o444))
        except OSError as e:
            raise _ZFail('new root: ' + ('mkdir', 'symlink', '', 'a file to bind on')[min(op, 3)],
                         e.errno, 'pivot') from None
        if op == 4:
            try:
                _sc('mount', _cstr(src), _cstr(dst), None, 0x1000, None)  # MS_BIND
            except _ZFail:
                pass  # refused: the empty file stays
        elif op in (2, 3):
            _sc('mount', _cstr(src), _cstr(dst), None, 0x1000 | (0x4000 if op == 2 else 0),
                None, what='new root: bind', layer='pivot')  # MS_BIND, MS_REC


def _z_template(root):
    """The workers' root, once, in the zygote: a mount namespace of its
    own, a tmpfs (over /tmp, a mount point every host has) filled by the
    plan's steps, the host's /proc bound in (a fresh /proc may only be
    mounted where a whole one is visible), pivot_root, and the host's
    tree detached. Each worker's copy of this namespace is the small
    tree alone: no umount per worker. It stays writable for the zygote,
    which makes the first directory of each worker's scratch path."""
    flags = 0x2 | 0x4 | 0x8  # MS_NOSUID|MS_NODEV|MS_NOEXEC
    _sc('unshare', 0x20000, what='unshare(CLONE_NEWNS)')
    _sc('mount', _cstr('none'), _cstr('/'), None, 0x4000 | 0x40000, None,
        what='mount / private')
    R = '/tmp'
    _sc('mount', _cstr('rlm-root'), _cstr(R), _cstr('tmpfs'), flags, _cstr(root['opts']),
        what='mount the new root')
    _z_root_ops(R, root['ops'])
    _sc('mount', _cstr('/proc'), _cstr(R + '/proc'), None, 0x1000 | 0x4000, None,
        what='bind /proc')
    posix.chdir(R)
    dot = _cstr('.')
    _sc('pivot_root', dot, dot, what='pivot_root')
    _sc('umount2', dot, 2, what='detach the host\'s root')  # MNT_DETACH
    posix.chdir('/')


def _z_top(req):
    """In the zygote, before the fork: the first directory of the
    worker's scratch path, on which the worker mounts its own tmpfs."""
    top = '/' + req['scratch'].split('/')[1]
    try:
        posix.mkdir(top, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        raise _ZFail('mkdir ' + top, e.errno) from None


def _z_inroot(req, ro, nodev, flags):
    """A worker in the zygote's root (_z_template): a tmpfs of its own on
    the scratch's first directory with the way down to the scratch, a
    fresh /proc over the host's (or an empty tmpfs without a pid
    namespace), everything read-only but the device nodes' nodev, and
    the scratch tmpfs."""
    S = req['scratch']
    parts = S.split('/')[1:]
    path = '/' + parts[0]
    _sc('mount', _cstr('rlm-top'), _cstr(path), _cstr('tmpfs'), flags,
        _cstr('size=64k,nr_inodes=64,mode=0755,uid=%d,gid=%d' % (_Z.uid, _Z.gid)),
        what='mount the scratch\'s first directory', layer='pivot')
    try:
        for p in parts[1:]:
            path += '/' + p
            posix.mkdir(path, 0o755)
    except OSError as e:
        raise _ZFail('new root: mkdir', e.errno, 'pivot') from None
    _z_proc(req, flags)
    _sc('mount_setattr', -100, _cstr('/'), 0x8000, ro, 32,
        what='mount_setattr / read-only', layer='pivot')
    for dev in ('/dev/null', '/dev/zero', '/dev/random', '/dev/urandom'):
        try:
            _sc('mount_setattr', -100, _cstr(dev), 0, nodev, 32)
        except _ZFail:
            pass
    _sc('mount', _cstr('rlm-scratch'), _cstr(S), _cstr('tmpfs'), flags,
        _cstr(req['tmpfs']), what='mount the scratch tmpfs', layer='mntns')


def _z_seccomp(self_pid):
    """The first filter, with every jump operand REPL_BPF_SELF replaced by
    our pid (as in repl__seccomp_apply), set with prctl."""
    code = bytearray(_Z.first)
    self_k = _SELF.to_bytes(4, 'little')
    for i in range(0, len(code), 8):
        if code[i + 4:i + 8] == self_k:
            code[i + 4:i + 8] = self_pid.to_bytes(4, 'little')
    insns = _Mem(bytes(code))
    prog = _Mem((len(code) // 8).to_bytes(2, 'little') + b'\0' * 6 + _u64s(insns.addr))
    _sc('prctl', 22, 2, prog, 0, 0, what='seccomp', layer='seccomp')
    return insns  # alive until the kernel has copied it
