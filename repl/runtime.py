# SPDX-License-Identifier: MIT
# repl/runtime.py -- the Python side of the REPL worker, run as
#   python3 -s -S -B -c <bootstrap> TEXT_LEN N_DOCS OUTPUT_LIMIT MAX_FRAME
#           MAX_CALLS_EXEC LATE_FILTER
# by repl/repl.c, the bootstrap reading this file's code from fd 6
# (repl/code.c), or forked by the zygote, repl/zygote.py, which runs this
# file with the arguments "zygote <plan>" and returns in each worker with
# the worker's arguments). Standard library only. repl/repl.h has the contract: the
# fd layout, the context memfd and the frames. It imports what it needs,
# makes itself non-dumpable (no /proc/PID/fd or mem for its peers), stacks
# the late seccomp filter (no execve from here on), waits for the
# "context" frame on fd 3, maps the context's regions of the memfd on fd 5
# (where they are, the frame says), says
# "ready" on fd 4, then runs "exec" frames from fd 3 in one persistent
# namespace until fd 3 reaches EOF, which ends the process at once.
#
# DESIGN
# Output is captured by a stream that keeps only the head and the tail the
# output limit needs, so a print flood costs time, never memory. SIGINT
# raises KeyboardInterrupt only while model code runs and no frame is being
# read or written: inside protocol I/O it is deferred until the I/O is done,
# so a frame is never cut in half. Threads of model code may call at once:
# one lock serialises sending, each call frame has its id, and one waiting
# thread at a time reads replies and hands each to the thread it answers
# (_await), so several calls are out together. A batch over the frame cap
# goes as several frames. The code's threads end with its exec: they are
# waited for, and stopped with SystemExit once its time is up
# (_settle_threads). Anything the runtime did not expect ends it with a
# "fatal" frame.
#
# Start-up time matters (a worker is started per node and after every
# restart), so only built-in modules are imported up front: _ast instead of
# ast, _json instead of json, _thread instead of threading, posix instead of
# os. traceback and linecache are imported on the first error. The tool and
# skill helpers' code (_X_SRC) is compiled on first use, not at start.
import sys
# Started without -I (it would ignore PYTHONHASHSEED) and without -P (not
# in every python3): drop the '' that -c puts first in sys.path, so the
# scratch directory, the cwd, never shadows a module.
if sys.path[:1] == ['']:
    del sys.path[0]
# Debian's python3-* packages (python3-jsonschema, python3-numpy, ...)
# import as they would for the system's python3, after the standard
# library; -S still keeps site out (no .pth file runs, no user or
# /usr/local packages). Every sandbox layer lets the worker read /usr.
if '/usr/lib/python3/dist-packages' not in sys.path:
    sys.path.append('/usr/lib/python3/dist-packages')
import _ast
import _bisect
import _collections
import _operator
import _signal
import _thread
import array
import builtins
import io
import mmap
import posix
import time as _time
try:
    import _json
except ImportError:  # a Python built without it
    _json = None

_FD_IN, _FD_OUT, _FD_CTX = 3, 4, 5
_MAX_VARS = 1000     # names in a result frame
_max_frame = 1 << 26  # bytes of a frame to the controller (argv)
_PIECE = 1 << 20      # bytes of a piece of a large batch (_frames)
_max_calls = 10000   # prompts per exec (argv)
_SCAFFOLD_NAMES = ('context', 'llm_query', 'llm_query_batched', 'rlm_query',
                   'rlm_query_batched', 'SHOW_VARS', 'answer', 'FINAL', 'FINAL_VAR',
                   'documents', 'search', 'list_tool_servers', 'search_tools',
                   'get_tool_info', 'call_tool', 'call_tools_batched', 'ToolError',
                   'list_skills', 'search_skills', 'get_skill_info', 'load_skill',
                   'save_skill')


class _State:
    user = False       # model code is running (SIGINT may raise)
    io = 0             # the main thread is inside a frame exchange
    pending = False    # a SIGINT arrived during the exchange
    sigint = False     # a SIGINT arrived during this exec
    joining = False    # waiting for the code's threads at the end of an exec
    err_at = None      # where in this exec's output its error text begins
    exec_id = None     # the exec in flight, None between execs
    call_id = 0
    calls = 0          # prompts sent during this exec
    ready_set = False  # answer["ready"] was set truthy during this exec
    codes = ()         # code objects compiled by this exec (tracebacks)
    lines = ()         # its source lines


_st = _State()
_io_lock = _thread.RLock()
_get_ident = _thread.get_ident
_main_tid = _get_ident()
_ModuleType = type(sys)
_CodeType = type((lambda: None).__code__)


def _fatal(msg):
    try:
        _send({'type': 'fatal', 'error': msg})
    finally:
        posix._exit(70)


# ---- frames ----

_rbuf = bytearray()


def _no_default(o):
    raise TypeError('cannot send a %s' % type(o).__name__)


def _no_constant(name):
    raise ValueError('%s in a frame' % name)


class _ScanCtx:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constant)


if _json is not None:
    _c_encode = _json.make_encoder(None, _no_default, _json.encode_basestring, None, ':', ',',
                                   False, False, False)
    _c_scan = _json.make_scanner(_ScanCtx())

    def _encode(obj):
        return ''.join(_c_encode(obj, 0))

    def _decode(data):
        s = data.decode('utf-8')
        try:
            obj, end = _c_scan(s, 0)
        except StopIteration:
            raise ValueError('a frame that is not JSON') from None
        if end != len(s) and s[end:].strip():
            raise ValueError('a frame with trailing garbage')
        return obj
else:
    import json as _jsonmod
    _encode = _jsonmod.JSONEncoder(ensure_ascii=False, separators=(',', ':')).encode
    _decode = _jsonmod.loads


def _readn(n):
    while len(_rbuf) < n:
        chunk = posix.read(_FD_IN, max(65536, n - len(_rbuf)))
        if not chunk:
            posix._exit(0)  # the controller is gone: so are we
        _rbuf.extend(chunk)
    data = bytes(_rbuf[:n])
    del _rbuf[:n]
    return data


def _read_frame():
    n = int.from_bytes(_readn(4), 'big')
    body = _readn(n)
    msg = _binary_reply(body) if body[:1] == b'\0' else _decode(body)
    if type(msg) is not dict:
        raise ValueError('a frame that is not a JSON object')
    return msg


def _binary_reply(body):
    """A binary reply frame (repl.h, BINARY REPLY FRAMES) as the JSON reply
    it stands for: 0x00, the header's length (4 bytes, big-endian), the
    header with "text_lens" where "texts" would be, then the texts' UTF-8
    back to back, each decoded from where it lies (bad bytes as U+FFFD, as
    the controller's JSON would have them)."""
    h = int.from_bytes(body[1:5], 'big')
    msg = _decode(body[5:5 + h])
    lens = msg.pop('text_lens', None) if type(msg) is dict else None
    if type(lens) is not list or not all(type(k) is int and k >= 0 for k in lens):
        raise ValueError('a binary frame without its text lengths')
    at = 5 + h
    if len(body) < at or sum(lens) != len(body) - at:
        raise ValueError('a binary frame whose lengths do not add up')
    texts = []
    with memoryview(body) as mv:
        for k in lens:
            texts.append(str(mv[at:at + k], 'utf-8', 'replace'))
            at += k
    msg['texts'] = texts
    return msg


class _TooBig(Exception):
    pass


def _send(obj):
    # Lone surrogates cannot be UTF-8: they become '?'.
    _send_body(_encode(obj).encode('utf-8', 'replace'))


def _send_body(body, *more):
    # body and more (bytes, back to back) as one frame; more (a binary
    # call frame's prompts) goes with writev, from where it lies: no copy
    n = len(body) + sum(len(b) for b in more)
    if n > _max_frame:
        raise _TooBig(n)
    bufs = [memoryview(n.to_bytes(4, 'big') + body)] + [memoryview(b) for b in more if b]
    i = 0
    try:
        while i < len(bufs):
            k = posix.writev(_FD_OUT, bufs[i:i + 512])
            while k:
                if k >= len(bufs[i]):
                    k -= len(bufs[i])
                    i += 1
                else:
                    bufs[i] = bufs[i][k:]
                    k = 0
    except BrokenPipeError:
        posix._exit(0)


def _clean(s):
    # A NUL would cut the string short in the controller's JSON parser.
    return s.replace('\0', '\ufffd') if '\0' in s else s


# ---- output capture ----

class _Capture(io.TextIOBase):
    """stdout and stderr of model code: the first `head` and the last `tail`
    characters, and the true length."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit
        self.head_max = limit // 2
        self.tail_max = limit - self.head_max
        self.reset()

    def reset(self):
        self.total = 0
        self.head = []
        self.hlen = 0
        self.tail = _collections.deque()
        self.tlen = 0

    @property
    def encoding(self):
        return 'utf-8'

    @property
    def errors(self):
        return 'strict'

    @property
    def buffer(self):
        return _ByteSink(self)

    def isatty(self):
        return False

    def writable(self):
        return True

    def write(self, s):
        if type(s) is not str:
            if not isinstance(s, str):
                raise TypeError('write() argument must be str, not %s' % type(s).__name__)
            s = str.__str__(s)
        n = len(s)
        self.total += n
        room = self.head_max - self.hlen
        if room > 0:
            if n <= room:
                self.head.append(s)
                self.hlen += n
                return n
            self.head.append(s[:room])
            self.hlen = self.head_max
            s = s[room:]
        m = len(s)
        tail_max = self.tail_max
        if m >= tail_max:
            self.tail.clear()
            if tail_max:
                self.tail.append(s[-tail_max:])
            self.tlen = tail_max
        else:
            tail = self.tail
            tail.append(s)
            self.tlen += m
            while self.tlen - len(tail[0]) >= tail_max:
                self.tlen -= len(tail.popleft())
        return n

    def take(self, at=None):
        """The output cut to the limit (head, a line saying how much was
        left out, tail), the true length, and where in the cut output the
        character `at` of the whole output is (the line when it was left
        out; None for None); then empty."""
        total = self.total
        head = ''.join(self.head)
        tail = ''.join(self.tail)
        if total > self.hlen + len(tail) or total > self.limit:
            tail = tail[len(tail) - self.tail_max:] if self.tail_max else ''
            omitted = total - len(head) - len(tail)
            out = '%s%s[... %s of %s characters omitted ...]\n%s' % (
                head, '' if head.endswith('\n') else '\n', format(omitted, ','),
                format(total, ','), tail)
            if at is not None and at >= len(head):
                at = len(out) - (total - at) if total - at <= len(tail) else len(head)
        else:
            out = head + tail
        self.reset()
        return out, total, at

    def error_starts(self):
        """What is written from here on is the exec's error (the first
        call counts)."""
        if _st.err_at is None:
            _st.err_at = self.total


class _ByteSink:
    def __init__(self, cap):
        self.cap = cap

    def write(self, b):
        self.cap.write(bytes(b).decode('utf-8', 'replace'))
        return len(b)

    def flush(self):
        pass


# ---- tracebacks without the runtime's frames ----

def _code_tree(co, acc):
    acc.add(co)
    for c in co.co_consts:
        if type(c) is _CodeType and c not in acc:
            _code_tree(c, acc)
    return acc


_RT_CODES = _code_tree(sys._getframe(0).f_code, set())


def _source_line(co, filename, lineno):
    if filename == '<repl>':
        if co in _st.codes and 0 < lineno <= len(_st.lines):
            return _st.lines[lineno - 1].strip()
        src = _fn_src.get(co)  # a function of an earlier exec
        lines = src.splitlines() if src is not None else ()
        return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ''
    if filename.startswith('<skill '):
        lines = _skill_lines.get(filename, ())
        return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ''
    import linecache
    return linecache.getline(filename, lineno).strip()


def _format_exc(e, seen):
    seen.add(id(e))
    out = []
    cause, ctx = e.__cause__, e.__context__
    if cause is not None and id(cause) not in seen:
        out += _format_exc(cause, seen)
        out.append('\nThe above exception was the direct cause of the following exception:\n\n')
    elif ctx is not None and not e.__suppress_context__ and id(ctx) not in seen:
        out += _format_exc(ctx, seen)
        out.append('\nDuring handling of the above exception, another exception occurred:\n\n')
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    i = 0
    while i < len(frames) and frames[i][0].co_filename != '<repl>':
        i += 1
    # The runtime's own frames go, also those between the code's and a
    # skill's (load_skill, the wrapper that checks a skill's inputs).
    frames = [f for f in frames[i:] if f[0] not in _RT_CODES]
    if frames:
        out.append('Traceback (most recent call last):\n')
        for co, lineno in frames:
            out.append('  File "%s", line %d, in %s\n' % (co.co_filename, lineno, co.co_name))
            line = _source_line(co, co.co_filename, lineno)
            if line:
                out.append('    %s\n' % line)
    out += _exc_only(e)
    return out


def _exc_only(e):
    import traceback
    return traceback.format_exception_only(type(e), e)


def _traceback_text(e):
    try:
        return ''.join(_format_exc(e, set()))
    except Exception:
        return '%s: %s\n' % (type(e).__name__, e)


# ---- SIGINT ----

def _on_sigint(signum, frame):
    st = _st
    if st.exec_id is not None:
        # Also when no model code runs: at the end of an exec it ends the
        # wait for the code's threads (_settle_threads stops them).
        st.sigint = True
    if not st.user or st.joining:
        return
    if st.io:
        st.pending = True
        return
    raise KeyboardInterrupt


# ---- calls to the controller ----

def _check_model(model, fn):
    if model is not None and type(model) is not str:
        raise TypeError('%s(): model must be a str or None, not %s' % (fn, type(model).__name__))


def _utf8_len(s):
    return len(s) if s.isascii() else len(s.encode('utf-8', 'replace'))


def _fmt_size(n):
    for unit, k in (('GB', 10 ** 9), ('MB', 10 ** 6), ('kB', 10 ** 3)):
        if n >= k:
            return '%.1f %s' % (n / k, unit) if n < 10 * k else '%d %s' % (n // k, unit)
    return '%d bytes' % n


def _fmt_cap(n):
    for unit, k in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= k and n % k == 0:
            return '%d %s' % (n // k, unit)
    return '%s bytes' % format(n, ',')


def _frames(kind, batched, prompts, model, contexts, fn):
    """The call's prompts (and contexts) packed in order into as few frame
    bodies as fit under _max_frame: a list of (first, end), the prompts'
    sizes in bytes, and the prompts and contexts encoded. The prompts of
    llm and rlm calls go as UTF-8 bytes (a binary call frame, repl.h: no
    JSON escaping on either side), a tool call's requests as JSON text. An
    ASCII prompt is its own UTF-8, so its size is its length and it is
    encoded (None here) only as its piece is sent (_piece): a batch of 40
    MB is never held twice, and the memory of one piece serves the next.
    A single prompt that cannot fit in a frame of its own raises
    ValueError, naming it and its size."""
    raw = kind != 'tool'
    if raw:
        # lone surrogates cannot be UTF-8: '?', as _send does
        enc_p = [None if p.isascii() else p.encode('utf-8', 'replace') for p in prompts]
        lens = [len(p) if e is None else len(e) for p, e in zip(prompts, enc_p)]
    else:
        enc_p = [_encode(p) for p in prompts]
        lens = None
    enc_c = None if contexts is None else [_encode(c) for c in contexts]
    base = 5 + _utf8_len(_encode({'type': 'call', 'id': 1 << 62, 'exec': _st.exec_id,
                                  'kind': kind, 'batched': batched, 'model': model,
                                  'prompt_lens': [], 'contexts': []}))
    sizes = []
    for i, e in enumerate(enc_p):
        # raw: its bytes, the NUL after them and its length in the header
        n = (lens[i] + 1 + len(str(lens[i])) if raw else _utf8_len(e)) + 1 + \
            (0 if enc_c is None else _utf8_len(enc_c[i]) + 1)
        if base + n > _max_frame:
            if kind == 'tool':
                raise ValueError('%s: the request%s is %s, over the %s one call can carry: '
                                 'pass less data in its arguments'
                                 % (fn, ' for item %d' % i if batched else '',
                                    _fmt_size(n - 1), _fmt_cap(_max_frame)))
            what = 'prompt' + (' %d' % i if batched else '')
            if enc_c is not None and contexts[i] is not None:
                what += ' with its context'
            raise ValueError('%s: %s is %s, over the %s one call can carry: cut it into '
                             'smaller pieces (e.g. chunks of %s characters) and ask about '
                             'each' % (fn, what, _fmt_size(n - 1), _fmt_cap(_max_frame),
                                       format(max(_max_frame // 4, 1), ',')))
        sizes.append(n)
    # A large batch goes in pieces of about _PIECE bytes, each a call frame
    # of its own (one prompt over it: alone), so that the controller starts
    # the first calls while the rest is still on its way.
    cap = min(_max_frame, _PIECE) if raw else _max_frame
    out, first, used = [], 0, base
    for i, n in enumerate(sizes):
        if used + n > cap and i > first:
            out.append((first, i))
            first, used = i, base
        used += n
    out.append((first, len(sizes)))
    return out, lens, enc_p, enc_c


def _piece(prompts, enc_p, first, end):
    """The byte strings of a binary call frame's prompts [first, end), each
    followed by the NUL that ends it (repl.h, BINARY CALL FRAMES)."""
    out = []
    for i in range(first, end):
        e = enc_p[i]
        out.append(prompts[i].encode('ascii') if e is None else e)
        out.append(b'\0')
    return out


def _call(kind, batched, prompts, model, contexts=None, fn=None):
    """Send the prompts as one call, or as several frames when together
    they are over the frame cap (answered as one batch, in order), and
    wait for the replies. Other threads' calls are in flight meanwhile:
    only sending holds _io_lock; replies are read by whichever waiting
    thread holds the read turn and handed to the thread they answer
    (_await). fn names the helper in errors (default: KIND_query)."""
    me = _get_ident()
    # While a thread is in here, _settle_threads raises nothing in it: an
    # exception between the bytes of a frame would put the worker out of
    # step with the controller.
    _in_call[me] = True
    try:
        return _call_in(kind, batched, prompts, model, contexts, me == _main_tid,
                        fn or '%s_query%s' % (kind, '_batched' if batched else ''))
    finally:
        del _in_call[me]


def _call_in(kind, batched, prompts, model, contexts, main, fn):
    st = _st
    if st.exec_id is None:
        raise RuntimeError('%s: no code is running (a thread that outlives its '
                           'exec cannot make calls)'
                           % (fn if kind == 'tool' else kind + '_query'))
    parts, lens, enc_p, enc_c = _frames(kind, batched, prompts, model, contexts, fn)
    ids = []
    with _io_lock:
        if st.exec_id is None:
            raise RuntimeError('%s: no code is running (a thread that outlives its '
                               'exec cannot make calls)'
                               % (fn if kind == 'tool' else kind + '_query'))
        if st.calls + len(prompts) > _max_calls:
            raise ValueError('%s: %s more %s would pass the limit of %s per '
                             'block (%s sent so far); %s, or go on in the next block'
                             % (fn, format(len(prompts), ','),
                                'calls' if kind == 'tool' else 'sub-calls',
                                format(_max_calls, ','), format(st.calls, ','),
                                'do fewer' if kind == 'tool' else 'do fewer, larger chunks'))
        st.calls += len(prompts)
        if main:
            st.io += 1
        try:
            raw = kind != 'tool'
            for first, end in parts:
                st.call_id += 1
                cid = st.call_id
                body = ['{"type":"call","id":%d,"exec":%s,"kind":%s,"batched":%s,"model":%s,'
                        % (cid, _encode(st.exec_id), _encode(kind),
                           'true' if batched else 'false', _encode(model))]
                if raw:
                    body += ['"prompt_lens":[', ','.join([str(n) for n in lens[first:end]]),
                             ']']
                else:
                    body += ['"prompts":[', ','.join(enc_p[first:end]), ']']
                if enc_c is not None:
                    body += [',"contexts":[', ','.join(enc_c[first:end]), ']']
                body.append('}')
                head = ''.join(body).encode('utf-8', 'replace')
                with _mx:
                    _waiting[cid] = None
                if raw:
                    _send_body(b'\0' + len(head).to_bytes(4, 'big') + head,
                               *_piece(prompts, enc_p, first, end))
                else:
                    _send_body(head)
                ids.append((cid, end - first))
        finally:
            if main:
                st.io -= 1
    del enc_p, enc_c
    texts = []
    if main:
        st.io += 1
    try:
        for cid, n in ids:
            msg = _await(cid)
            got = msg.get('texts')
            if type(got) is not list or len(got) != n or \
                    not all(type(t) is str for t in got):
                _fatal('a malformed reply to call %d' % cid)
            texts.extend(got)
    finally:
        if main:
            st.io -= 1
    if main and st.pending:
        st.pending = False
        raise KeyboardInterrupt
    return texts


# Replies: the calls sent and not yet answered, each with the lock its
# thread waits on (None until it waits), and the replies read for them.
# One waiting thread at a time reads (_reader); it hands each reply to its
# thread and, once its own has come, wakes another to read on.
_mx = _thread.allocate_lock()
_in_call = {}   # the threads inside _call (keys: their idents)
_waiting = {}
_replies = {}
_reader = None


def _wake_one(but=None):
    # Under _mx: let some waiting thread (not but) take the read turn.
    for lk in _waiting.values():
        if lk is not None and lk is not but and lk.locked():
            lk.release()
            return


def _await(cid):
    global _reader
    me = _thread.allocate_lock()
    me.acquire()
    with _mx:
        _waiting[cid] = me
    while True:
        with _mx:
            if cid in _replies:
                del _waiting[cid]
                return _replies.pop(cid)
            read = _reader is None
            if read:
                _reader = cid
        if not read:
            me.acquire()
            continue
        _pump_reply(cid)


def _pump_reply(own):
    """Read one frame as the reader (the caller set _reader) and hand it to
    the call it answers."""
    global _reader
    try:
        msg = _read_frame()
    except (ValueError, OSError) as e:
        _fatal('cannot read the reply to a call: %s' % e)
    rid = msg.get('id')
    with _mx:
        _reader = None
        if msg.get('type') != 'reply' or type(rid) is not int or rid not in _waiting \
                or rid in _replies:
            _fatal('expected the reply to a call in flight, got %.200r' % (msg,))
        _replies[rid] = msg
        lk = _waiting[rid]
        if rid == own:
            # Our own: another waiting thread reads on.
            _wake_one(lk)
        elif lk is not None and lk.locked():
            lk.release()
        else:
            _wake_one()


def _drain_calls():
    """At the end of an exec: wait until every call of the exec's threads
    has its reply (a result must not overtake a call still out)."""
    global _reader
    while True:
        with _mx:
            if not any(k not in _replies for k in _waiting):
                return
            read = _reader is None
            if read:
                _reader = 0
        if read:
            _pump_reply(0)
        else:
            _time.sleep(0.001)


def _prompt_list(prompts, fn):
    if isinstance(prompts, str) or not isinstance(prompts, (list, tuple)):
        raise TypeError('%s() takes a list of str prompts, not %s' % (fn, type(prompts).__name__))
    out = []
    for i, p in enumerate(prompts):
        if type(p) is not str:
            if not isinstance(p, str):
                raise TypeError('%s(): prompts[%d] must be a str, not %s' % (fn, i, type(p).__name__))
            p = str.__str__(p)
        out.append(_clean(p))
    return out


def _one_prompt(prompt, fn):
    if type(prompt) is not str:
        if not isinstance(prompt, str):
            hint = ' (use %s_batched for several prompts)' % fn \
                if isinstance(prompt, (list, tuple)) else ''
            raise TypeError('%s() takes the prompt as a str, not %s%s'
                            % (fn, type(prompt).__name__, hint))
        prompt = str.__str__(prompt)
    return _clean(prompt)


# ---- contexts, and references to the worker's own ----
#
# A child's context that is a part of this worker's `context` as loaded is
# sent as where it lies, not as a copy (repl/repl.h, "contexts"): a str
# slice as its bytes in the text, a run of the very documents as their
# range. The loaded context is kept here, since model code may rebind
# `context` (and a list may be changed in place: a tuple of its str
# objects is kept).

_REF_MIN = 65536  # characters of a str piece worth a reference
_BLOCK = 4096     # characters per entry of the byte index
_refs_ok = True   # the context decoded losslessly and has no NUL
_ctx_text = None  # the str context as loaded, or None
_ctx_docs = None  # the list context as loaded, as a tuple, or None
_ctx_where = None  # id(document) -> its first index; built on first use
_byte_index = None  # byte offset of every _BLOCK-th character; on first use
_next_char = 0    # where the last str piece found ended (characters)
_next_doc = 0     # where the last run found ended


def _find_piece(t, p):
    """Where p is in t (characters), or None: right after the last piece
    found, else at one of the first few places its head is."""
    if p is t:
        return 0
    o = _next_char
    if t.startswith(p, o):
        return o
    head = p[:256]
    at = t.find(head)
    for _ in range(4):
        if at < 0:
            return None
        if t.startswith(p, at):
            return at
        at = t.find(head, at + 1)
    return None


def _byte_at(t, o):
    """The byte offset in t's UTF-8 of character o."""
    global _byte_index
    if t.isascii():
        return o
    idx = _byte_index
    if idx is None:
        idx, b = [0], 0
        for k in range(0, len(t), _BLOCK):
            b += len(t[k:k + _BLOCK].encode('utf-8'))
            idx.append(b)
        _byte_index = idx
    k = o // _BLOCK
    return idx[k] + len(t[k * _BLOCK:o].encode('utf-8'))


def _text_arg(p):
    global _next_char
    t = _ctx_text
    if t is not None and len(p) >= _REF_MIN:
        o = _find_piece(t, p)
        if o is not None:
            _next_char = o + len(p)
            b = _byte_at(t, o)
            return {'ref': [b, _byte_at(t, o + len(p)) - b]}
    return _clean(p)


def _find_run(items):
    """Where the documents items (the same str objects, in order) start in
    the loaded context, or None."""
    global _ctx_where, _next_doc
    docs, n = _ctx_docs, len(items)
    if docs is None or not n or n > len(docs):
        return None
    i = _next_doc
    if i + n <= len(docs) and all(map(_operator.is_, docs[i:i + n], items)):
        _next_doc = i + n
        return i
    if _ctx_where is None:
        where = {}
        for k, d in enumerate(docs):
            where.setdefault(id(d), k)
        _ctx_where = where
    i = _ctx_where.get(id(items[0]))
    if i is not None and i + n <= len(docs) and all(map(_operator.is_, docs[i:i + n], items)):
        _next_doc = i + n
        return i
    return None


def _list_arg(docs, fn, what):
    items = []
    for i, d in enumerate(docs):
        if type(d) is not str:
            if not isinstance(d, str):
                raise TypeError('%s(): %s[%d] must be a str, not %s'
                                % (fn, what, i, type(d).__name__))
            d = str.__str__(d)
        items.append(d)
    i = _find_run(items)
    if i is not None:
        return {'docs': [i, i + len(items)]}
    return [_clean(d) for d in items]


def _one_context(context, fn, what):
    if context is None:
        return None
    if type(context) is str:
        return _text_arg(context)
    if isinstance(context, str):
        return _clean(str.__str__(context))
    if isinstance(context, (list, tuple)):
        return _list_arg(context, fn, what)
    raise TypeError('%s(): %s must be a str, a list of str or None, not %s'
                    % (fn, what, type(context).__name__))


def _context_list(contexts, n, fn):
    # None for all, or one str-or-None per prompt. None when no context
    # is given at all, so the frame carries none.
    if contexts is None:
        return None
    if isinstance(contexts, str) or not isinstance(contexts, (list, tuple)):
        raise TypeError('%s() takes contexts as a list (one str, list of str or None per '
                        'prompt), not %s'
                        % (fn, type(contexts).__name__))
    if len(contexts) != n:
        raise ValueError('%s(): %d contexts for %d prompts; give one per prompt (None where '
                         'the prompt is its own context)' % (fn, len(contexts), n))
    out = [_one_context(c, fn, 'contexts[%d]' % i) for i, c in enumerate(contexts)]
    return out if any(c is not None for c in out) else None


def llm_query(prompt, model=None):
    """llm_query(prompt, model=None) -> str: ask a sub-model and return its
    answer (a str starting "Error:" when the call failed)."""
    prompt = _one_prompt(prompt, 'llm_query')
    _check_model(model, 'llm_query')
    return _call('llm', False, [prompt], model)[0]


def llm_query_batched(prompts, model=None):
    """llm_query_batched(prompts, model=None) -> list[str]: ask about every
    prompt in parallel; answers in order (failed ones start "Error:")."""
    ps = _prompt_list(prompts, 'llm_query_batched')
    _check_model(model, 'llm_query_batched')
    if not ps:
        return []
    return _call('llm', True, ps, model)


def rlm_query(prompt, model=None, context=None):
    """rlm_query(prompt, model=None, context=None) -> str: hand a sub-problem
    to a child RLM with a REPL of its own, whose `context` is the prompt, or
    context when given (the prompt is then its question): a str, or a list
    of str (documents); a slice of `context`, or a slice of its list of
    documents, is passed on without a copy. Returns its answer (a str
    starting "Error:" when it failed). At the last depth of recursion, a
    plain sub-call like llm_query."""
    prompt = _one_prompt(prompt, 'rlm_query')
    _check_model(model, 'rlm_query')
    context = _one_context(context, 'rlm_query', 'context')
    return _call('rlm', False, [prompt], model, None if context is None else [context])[0]


def rlm_query_batched(prompts, model=None, contexts=None):
    """rlm_query_batched(prompts, model=None, contexts=None) -> list[str]: a
    child RLM per prompt, in parallel; answers in order (failed ones start
    "Error:"). contexts: one str, list of str or None per prompt."""
    ps = _prompt_list(prompts, 'rlm_query_batched')
    _check_model(model, 'rlm_query_batched')
    cs = _context_list(contexts, len(ps), 'rlm_query_batched')
    if not ps:
        return []
    return _call('rlm', True, ps, model, cs)


# ---- host tools and skills ----
#
# The tool and skill helpers are requests to the controller, sent as calls
# of kind "tool" (repl/repl.h, TOOL CALLS): the same ids, threads, caps and
# frame splitting as llm_query's prompts, each request a JSON object as
# text, each answer {"ok": true, "value": V} or {"ok": false, "error": ...,
# "kind": ...}. A skill is Python source the controller keeps in its
# store: load_skill runs it in a namespace of its own that holds these
# helpers (so skills load skills) but not `context`, and returns its entry
# function wrapped to check the declared inputs. save_skill checks all it
# can here, before anything is sent; the source of a function it is given
# comes from the exec that defined it (_keep_source).

class ToolError(RuntimeError):
    """A tool or skill request failed. str(e) is the controller's message;
    e.kind says why: "schema" (the arguments do not fit the tool's schema:
    the message names the parameter and what is expected), "policy" (the
    tool may not be called), "budget" (the tool-call budget is spent),
    "notfound", "server" (the tool's server failed or the tool reported an
    error), "timeout", "skill" (a skill save or load was refused),
    "request" (a malformed request), "unavailable" (this REPL has no
    tools)."""

    def __init__(self, message, kind='server'):
        RuntimeError.__init__(self, message)
        self.kind = kind

    def __reduce__(self):
        return ToolError, (str(self), self.kind)


# The helpers' code is compiled on first use (_x): compiling it would cost
# every cold worker's start ~10 ms, and most workers never call a tool.
# The zygote compiles it once it has answered its first request, so the
# workers it forks from then on find it compiled.
_skill_lines = {}  # '<skill NAME@V>' -> its source lines, for tracebacks
_xs = {}           # helper name -> its implementation, once compiled
_x_lock = _thread.allocate_lock()
_X_NAMES = ('list_tool_servers', 'search_tools', 'get_tool_info', 'call_tool',
            'call_tools_batched', 'list_skills', 'search_skills', 'get_skill_info',
            'load_skill', 'save_skill')


def _x_load():
    with _x_lock:
        if _xs:
            return
        code = compile(_X_SRC, '<string>', 'exec')
        _RT_CODES.update(_code_tree(code, set()))
        g = globals()
        exec(code, g)
        for n in _X_NAMES:
            _xs[n] = g['_x_' + n]


def _x(name):
    f = _xs.get(name)
    if f is None:
        _x_load()
        f = _xs[name]
    return f


def list_tool_servers():
    """list_tool_servers() -> list of {"name", "description", "tools",
    "error"}: the tool servers connected, how many tools each has, and why
    one is not available (error, else None). Step 1 of 3: then
    search_tools, then get_tool_info before call_tool."""
    return _x('list_tool_servers')()


def search_tools(query, server=None, limit=10):
    """search_tools(query, server=None, limit=10) -> list of {"name",
    "description", "score"}: the tools whose names and descriptions best
    match the words of query (of one server, or all), best first. name is
    "server.tool", what get_tool_info and call_tool take."""
    return _x('search_tools')(query, server, limit)


def get_tool_info(name):
    """get_tool_info(name) -> dict: one tool's exact description: its input
    schema ("input_schema", and "parameters": the required and optional
    ones with their types), its output schema if any, whether it is
    read-only, and whether it may be called here ("allowed", and "why"
    not). Read it before call_tool: never guess parameter names."""
    return _x('get_tool_info')(name)


def call_tool(name, /, *args, **arguments):
    """call_tool(name, **arguments) -> the tool's result: its structured
    content as a Python value, else its text. call_tool(name, {"a-b": 1})
    for argument names that are not Python names. The controller checks
    the arguments against the tool's schema first. Raises ToolError (its
    .kind: "schema" for bad or missing arguments, with the parameter and
    what the schema expects; "policy" when the tool may not be called;
    "server", "timeout", "budget", "notfound")."""
    return _x('call_tool')(name, *args, **arguments)


def call_tools_batched(calls):
    """call_tools_batched([(name, arguments), ...]) -> list: the tools
    called in parallel, results in order; arguments a dict (or None). A
    call that failed is a ToolError in its place (not raised): check with
    isinstance(r, ToolError)."""
    return _x('call_tools_batched')(calls)


def list_skills():
    """list_skills() -> list of {"name", "version", "versions",
    "description", "signature"}: the skills in the store (the latest
    version of each)."""
    return _x('list_skills')()


def search_skills(query, limit=10):
    """search_skills(query, limit=10) -> list of {"name", "description",
    "score", "version"}: the skills that best match the words of query,
    best first."""
    return _x('search_skills')(query, limit)


def get_skill_info(name):
    """get_skill_info(name) -> dict: a skill's description, signature,
    declared inputs and outputs, entry function and versions; name is
    "name" (the latest) or "name@V"."""
    return _x('get_skill_info')(name)


def load_skill(name, version=None):
    """load_skill(name, version=None) -> a callable: the skill (its latest
    version, or that one; "name@V" works too), run here in a namespace of
    its own with these helpers (not `context`: pass it what it needs).
    Calling it checks the declared inputs and raises TypeError naming a
    missing, unknown or ill-typed one. Skills may load other skills."""
    return _x('load_skill')(name, version)


def save_skill(name, function_or_source, description, inputs=None, outputs=None):
    """save_skill(name, function_or_source, description, inputs=None,
    outputs=None) -> "name@V": keep a function as a skill, a new immutable
    version of name (the same source again keeps its version).
    function_or_source is a function defined with def in a block of this
    REPL, or its source as a str (one top-level function, or the one
    called name or its last part: "text.count-words" -> count_words; plus
    what it needs: imports, helper functions). inputs is
    {parameter: type}, a type being "int", "str", "float", "bool", "list",
    "dict", "any" (or int, str, ..., or {"type": ..., "description": ...});
    it must name exactly the function's parameters (those without a default
    are required); None takes them from the annotations. A skill runs in a
    namespace of its own: the builtins, llm_query, rlm_query, the tool and
    skill helpers; not `context` or the REPL's variables. Raises ValueError
    or TypeError saying what to fix, ToolError (kind "skill") when the
    controller refuses (saving needs --allow-skill-writes)."""
    return _x('save_skill')(name, function_or_source, description, inputs, outputs)


_X_SRC = r'''
def _json_text(t):
    """The JSON value in the str t; ValueError when t is not JSON."""
    t = t.strip()
    if _json is None:
        return _jsonmod.loads(t)
    try:
        obj, end = _c_scan(t, 0)
    except StopIteration:
        raise ValueError('not JSON') from None
    if end != len(t):
        raise ValueError('trailing garbage')
    return obj


def _tool_reply(t):
    """(True, value) for a reply text that says ok, else (False, a
    ToolError)."""
    try:
        r = _json_text(t)
    except (ValueError, RecursionError):
        r = None
    if type(r) is not dict or type(r.get('ok')) is not bool:
        return False, ToolError(t, 'unavailable')
    if r['ok']:
        return True, r.get('value')
    msg, kind = r.get('error'), r.get('kind')
    return False, ToolError(msg if type(msg) is str else t,
                            kind if type(kind) is str else 'server')


def _request(fn, req):
    try:
        t = _encode(req)
    except (TypeError, ValueError, RecursionError) as e:
        raise TypeError('%s(): the arguments must be JSON values (str, int, float, bool, None, '
                        'and lists and dicts of them with str keys): %s' % (fn, e)) from None
    if '\\u0000' in t:
        import re
        if re.search(r'(?<!\\)(?:\\\\)*\\u0000', t):
            # The controller's JSON parser would cut the str there.
            raise ValueError('%s(): a str in the arguments holds a NUL character ("\\0"), '
                             'which cannot be sent' % fn)
    return t


def _tool(fn, req):
    ok, v = _tool_reply(_call('tool', False, [_request(fn, req)], None, fn=fn)[0])
    if not ok:
        raise v
    return v


def _str_arg(v, fn, what):
    if type(v) is not str:
        if not isinstance(v, str):
            raise TypeError('%s(): %s must be a str, not %s' % (fn, what, type(v).__name__))
        v = str.__str__(v)
    return v


def _limit_arg(v, fn):
    if type(v) is bool or not isinstance(v, int):
        raise TypeError('%s(): limit must be an int, not %s' % (fn, type(v).__name__))
    v = int(v)
    if not 1 <= v <= 100:
        raise ValueError('%s(): limit must be from 1 to 100, not %d' % (fn, v))
    return v


def _x_list_tool_servers():
    return _tool('list_tool_servers', {'op': 'servers'})


def _x_search_tools(query, server=None, limit=10):
    fn = 'search_tools'
    query = _str_arg(query, fn, 'query')
    if server is not None:
        server = _str_arg(server, fn, 'server')
    return _tool(fn, {'op': 'search', 'query': query, 'server': server,
                      'limit': _limit_arg(limit, fn)})


def _x_get_tool_info(name):
    fn = 'get_tool_info'
    return _tool(fn, {'op': 'info', 'name': _str_arg(name, fn, 'name')})


def _tool_args(fn, args, kwargs):
    if len(args) > 1:
        raise TypeError('%s() takes the arguments as keywords, or as one dict after the '
                        'name, not %d positional values' % (fn, len(args)))
    if not args:
        return kwargs
    a = args[0]
    if a is None:
        a = {}
    if not isinstance(a, dict):
        raise TypeError('%s() takes the arguments as keywords, or as one dict after the '
                        'name, not a %s' % (fn, type(a).__name__))
    both = [k for k in kwargs if k in a]
    if both:
        raise TypeError('%s(): %s given both in the dict and as a keyword'
                        % (fn, ', '.join(repr(k) for k in both)))
    out = dict(a)
    out.update(kwargs)
    return out


def _x_call_tool(name, /, *args, **arguments):
    fn = 'call_tool'
    name = _str_arg(name, fn, 'name')
    return _tool(fn, {'op': 'call', 'name': name,
                      'arguments': _tool_args(fn, args, arguments)})


def _x_call_tools_batched(calls):
    fn = 'call_tools_batched'
    if isinstance(calls, (str, dict)) or not isinstance(calls, (list, tuple)):
        raise TypeError('%s() takes a list of (name, arguments) pairs, not %s'
                        % (fn, type(calls).__name__))
    reqs = []
    for i, c in enumerate(calls):
        if not isinstance(c, (list, tuple)) or len(c) != 2:
            raise TypeError('%s(): calls[%d] must be a (name, arguments) pair, not %r'
                            % (fn, i, c if len(repr(c)) < 80 else type(c).__name__))
        name = _str_arg(c[0], fn, 'calls[%d][0] (the name)' % i)
        a = c[1]
        if a is None:
            a = {}
        if not isinstance(a, dict):
            raise TypeError('%s(): calls[%d][1] (the arguments) must be a dict, not %s'
                            % (fn, i, type(a).__name__))
        reqs.append(_request(fn, {'op': 'call', 'name': name, 'arguments': a}))
    if not reqs:
        return []
    return [v for _, v in map(_tool_reply, _call('tool', True, reqs, None, fn=fn))]


def _x_list_skills():
    return _tool('list_skills', {'op': 'skills'})


def _x_search_skills(query, limit=10):
    fn = 'search_skills'
    return _tool(fn, {'op': 'skill_search', 'query': _str_arg(query, fn, 'query'),
                      'limit': _limit_arg(limit, fn)})


def _x_get_skill_info(name):
    fn = 'get_skill_info'
    return _tool(fn, {'op': 'skill_info', 'name': _str_arg(name, fn, 'name')})


# The skill types: JSON Schema's names, with Python's as aliases.
_TYPES = {'integer': 'integer', 'int': 'integer', 'number': 'number', 'float': 'number',
          'string': 'string', 'str': 'string', 'boolean': 'boolean', 'bool': 'boolean',
          'array': 'array', 'list': 'array', 'object': 'object', 'dict': 'object',
          'null': 'null', 'none': 'null', 'any': 'any'}
_PY_TYPES = {int: 'integer', float: 'number', str: 'string', bool: 'boolean', list: 'array',
             tuple: 'array', dict: 'object', type(None): 'null', object: 'any'}
_TYPE_WORDS = ('integer (int), number (float), string (str), boolean (bool), array (list), '
               'object (dict), null (None), any')


def _type_ok(v, t):
    if t == 'any':
        return True
    if t == 'integer':
        return isinstance(v, int) and not isinstance(v, bool)
    if t == 'number':
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == 'string':
        return isinstance(v, str)
    if t == 'boolean':
        return isinstance(v, bool)
    if t == 'array':
        return isinstance(v, (list, tuple))
    if t == 'object':
        return isinstance(v, dict)
    if t == 'null':
        return v is None
    return True  # a type this runtime does not know: not checked


def _spec_types(spec):
    """The type names of a declared input (a str, a list, or a dict with
    "type"), as stored: unknown ones are kept (not checked)."""
    t = spec.get('type', 'any') if isinstance(spec, dict) else spec
    ts = t if isinstance(t, list) else [t]
    return [_TYPES.get(x.lower(), x) if type(x) is str else 'any' for x in ts]


class _Skill:
    """A skill load_skill returned: calling it checks its declared inputs
    (required ones given, no unknown ones, their types), then runs its
    entry function. .skill is "name@V"; .inputs and .outputs what was
    declared; .source its source."""

    def __init__(self, label, fn, inputs, outputs, source, digest):
        self.skill, self.fn, self.source, self.digest = label, fn, source, digest
        if isinstance(inputs, dict) and inputs.get('type') == 'object' and \
                isinstance(inputs.get('properties'), dict):
            # a JSON Schema (as the store keeps inputs): one spec per parameter
            req = inputs.get('required') if isinstance(inputs.get('required'), list) else []
            inputs = {k: dict(v, required=k in req) if isinstance(v, dict) else v
                      for k, v in inputs['properties'].items()}
        self.inputs = inputs if isinstance(inputs, dict) else {}
        self.outputs = outputs
        self.__name__ = getattr(fn, '__name__', label)
        self.__doc__ = getattr(fn, '__doc__', None)
        self.__wrapped__ = fn
        co = getattr(fn, '__code__', None)
        if type(co) is _CodeType:
            n = co.co_argcount
            self._pos = co.co_varnames[:n]
            names = co.co_varnames[:n + co.co_kwonlyargcount]
            d = getattr(fn, '__defaults__', None) or ()
            kd = getattr(fn, '__kwdefaults__', None) or {}
            self._req = [p for i, p in enumerate(names)
                         if (i < n and i < n - len(d)) or (i >= n and p not in kd)]
            self._names = names
        else:
            self._names = self._pos = tuple(self.inputs)
            self._req = [k for k, s in self.inputs.items()
                         if isinstance(s, dict) and s.get('required')]

    def _what(self, p):
        return '%s%s' % ('/'.join(_spec_types(self.inputs.get(p, 'any'))),
                         ', required' if p in self._req else '')

    def __call__(self, *args, **kwargs):
        label = self.skill
        if len(args) > len(self._pos):
            raise TypeError('skill %s takes %d positional inputs but %d were given'
                            % (label, len(self._pos), len(args)))
        got = dict(zip(self._pos, args))
        for k, v in kwargs.items():
            if k not in self._names:
                raise TypeError('skill %s: unknown input %r (the inputs are: %s)'
                                % (label, k, ', '.join('%s (%s)' % (p, self._what(p))
                                                       for p in self._names) or 'none'))
            if k in got:
                raise TypeError('skill %s: input %r given twice' % (label, k))
            got[k] = v
        for p in self._req:
            if p not in got:
                raise TypeError('skill %s: missing required input %r (%s)'
                                % (label, p, '/'.join(_spec_types(self.inputs.get(p, 'any')))))
        for k, v in got.items():
            ts = _spec_types(self.inputs.get(k, 'any'))
            if not any(_type_ok(v, t) for t in ts):
                raise TypeError('skill %s: input %r must be %s, not %s'
                                % (label, k, ' or '.join(ts), type(v).__name__))
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return '<skill %s: %s(%s)>' % (self.skill, self.__name__, ', '.join(
            '%s: %s' % (p, self._what(p)) for p in self._names))


_Skill.__name__ = _Skill.__qualname__ = 'skill'  # "f: skill" in SHOW_VARS


_skills = {}       # (name, version) -> its _Skill, loaded in this worker
_loading = {}      # thread ident -> the skills it is loading, outermost first
_SKILL_HELPERS = ('llm_query', 'llm_query_batched', 'rlm_query', 'rlm_query_batched',
                  'list_tool_servers', 'search_tools', 'get_tool_info', 'call_tool',
                  'call_tools_batched', 'ToolError', 'list_skills', 'search_skills',
                  'get_skill_info', 'load_skill', 'save_skill')


def _name_version(name, version, fn):
    name = _str_arg(name, fn, 'name')
    if version is None and '@' in name:
        name, _, v = name.rpartition('@')
        if not v.isdigit() or not v.isascii():
            raise ValueError('%s(): %r: the version after "@" must be a number' % (fn, v))
        version = int(v)
    if version is not None:
        if type(version) is bool or not isinstance(version, int):
            raise TypeError('%s(): version must be an int or None, not %s'
                            % (fn, type(version).__name__))
        if version < 1:
            raise ValueError('%s(): versions start at 1, not %d' % (fn, version))
        version = int(version)
    return name, version


def _x_load_skill(name, version=None):
    fn = 'load_skill'
    name, version = _name_version(name, version, fn)
    if version is not None:
        hit = _skills.get((name, version))
        if hit is not None:
            return hit
    v = _tool(fn, {'op': 'skill_load', 'name': name, 'version': version})
    if type(v) is not dict or type(v.get('name')) is not str or \
            type(v.get('version')) is not int or type(v.get('source')) is not str or \
            type(v.get('entry')) is not str:
        raise ToolError('load_skill(%r): the controller sent a skill without its name, '
                        'version, source or entry' % name, 'request')
    key = (v['name'], v['version'])
    hit = _skills.get(key)
    if hit is not None and hit.digest == v.get('digest'):
        return hit
    label = '%s@%d' % key
    me = _get_ident()
    stack = _loading.get(me, ())
    if label in stack:
        raise ToolError('load_skill(%r): skill %s loads itself while it is being loaded '
                        '(%s): load it inside the function that needs it'
                        % (name, label, ' -> '.join(stack + [label])), 'skill')
    filename = '<skill %s>' % label
    src = v['source']
    _skill_lines[filename] = src.splitlines()
    try:
        code = compile(src, filename, 'exec')
    except (SyntaxError, ValueError) as e:
        raise ToolError('load_skill(%r): skill %s does not compile here: %s'
                        % (name, label, e), 'skill') from None
    g = globals()
    ns = {'__builtins__': builtins, '__name__': 'skill ' + label}
    for k in _SKILL_HELPERS:
        ns[k] = g[k]
    stack = _loading.setdefault(me, [])
    stack.append(label)
    try:
        exec(code, ns)
    finally:
        stack.pop()
        if not stack:
            _loading.pop(me, None)
    entry = ns.get(v['entry'])
    if not callable(entry):
        raise ToolError('load_skill(%r): skill %s defines no function %r'
                        % (name, label, v['entry']), 'skill')
    s = _Skill(label, entry, v.get('inputs'), v.get('outputs'), src, v.get('digest'))
    _skills[key] = s
    return s


_NAME_CHARS = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-')


def _skill_name(name, fn):
    name = _str_arg(name, fn, 'name')
    if not 0 < len(name) <= 64 or not (name[0] == '_' or name[0].isalpha()) or \
            not _NAME_CHARS.issuperset(name):
        raise ValueError("%s(): %r is not a skill name: a letter or '_', then at most 63 "
                         "letters, digits, '_', '.' or '-'" % (fn, name))
    return name


def _dedent(lines):
    ind = None
    for ln in lines:
        if ln.strip():
            k = len(ln) - len(ln.lstrip(' \t'))
            ind = k if ind is None else min(ind, k)
    return [ln[ind or 0:] for ln in lines]


def _def_of(tree, name, line):
    """The def of name whose first line (its first decorator's) is line, in
    tree, at any depth; or None."""
    stack = [tree]
    while stack:
        n = stack.pop()
        if type(n) in (_ast.FunctionDef, _ast.AsyncFunctionDef) and n.name == name and \
                min([n.lineno] + [d.lineno for d in n.decorator_list]) == line:
            return n
        for f in n._fields:
            x = getattr(n, f, None)
            if type(x) is list:
                stack.extend(y for y in x if isinstance(y, _ast.AST))
            elif isinstance(x, _ast.AST):
                stack.append(x)
    return None


def _function_source(f, fn):
    """The source of the function f, from the exec that defined it."""
    if isinstance(f, _Skill):
        return f.source, f.fn.__name__
    co = getattr(f, '__code__', None)
    if type(co) is not _CodeType or hasattr(f, '__self__'):
        raise TypeError('%s() takes a function (defined with def) or its source as a str, '
                        'not %s' % (fn, type(f).__name__))
    if co.co_name == '<lambda>':
        raise TypeError('%s(): a lambda has no name to call it by: define the function with '
                        'def' % fn)
    if co.co_freevars:
        raise ValueError('%s(): %s() uses %s of the function it was defined in: define it at '
                         'the top level of a block' % (fn, co.co_name, ', '.join(co.co_freevars)))
    whole = _fn_src.get(co)
    node = None
    if whole is not None:
        node = _def_of(compile(whole, '<repl>', 'exec', _ast.PyCF_ONLY_AST), co.co_name,
                       co.co_firstlineno)
    if node is None:
        raise ValueError('%s(): the source of %s() is not known (it was not defined with def '
                         'in a block of this REPL): pass the source as a str' % (fn, co.co_name))
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    if all(type(d) is _ast.Name and d.id == 'staticmethod' for d in node.decorator_list):
        first = node.lineno  # a class's plain function: a plain one here
    lines = _dedent(whole.splitlines()[first - 1:node.end_lineno])
    return '\n'.join(lines) + '\n', co.co_name


def _free_names(tree):
    """Names the code in tree reads but never binds (a rough scope-free
    count: enough to find what a skill leans on from the REPL)."""
    loads, bound = set(), set()
    stack = [tree]
    A = _ast
    while stack:
        n = stack.pop()
        t = type(n)
        if t is A.Name:
            (loads if type(n.ctx) is A.Load else bound).add(n.id)
        elif t in (A.FunctionDef, A.AsyncFunctionDef, A.ClassDef):
            bound.add(n.name)
        elif t is A.arg:
            bound.add(n.arg)
        elif t is A.alias:
            bound.add((n.asname or n.name).split('.')[0])
        elif t in (A.Global, A.Nonlocal):
            bound.update(n.names)
        elif getattr(n, 'name', None).__class__ is str and t is not A.alias:
            bound.add(n.name)  # except ... as name, match ... as name
        elif t is A.MatchMapping and n.rest:
            bound.add(n.rest)
        for f in n._fields:
            x = getattr(n, f, None)
            if type(x) is list:
                stack.extend(y for y in x if isinstance(y, A.AST))
            elif isinstance(x, A.AST):
                stack.append(x)
    return loads - bound


def _skill_type(t, where, fn):
    if type(t) is str and t.lower() in _TYPES:
        return _TYPES[t.lower()]
    if isinstance(t, type) and t in _PY_TYPES:
        return _PY_TYPES[t]
    if t is None:
        return 'null'
    if isinstance(t, (list, tuple)) and t:
        return [_skill_type(x, where, fn) for x in t]
    raise ValueError('%s(): %s: %r is not a type (the types are: %s, or a list of them)'
                     % (fn, where, t, _TYPE_WORDS))


def _skill_spec(spec, where, fn):
    """A declared input or output as {"type": T, ...}: a type ("int",
    int, "integer", a list of them), or a dict with "type" and maybe
    "description" and other JSON Schema members."""
    if isinstance(spec, dict):
        out = {}
        for k, v in spec.items():
            if type(k) is not str:
                raise TypeError('%s(): %s: the keys must be str, not %s'
                                % (fn, where, type(k).__name__))
            out[k] = v
        out['type'] = _skill_type(spec.get('type', 'any'), where, fn)
        d = out.get('description')
        if d is not None and type(d) is not str:
            raise TypeError('%s(): %s: "description" must be a str, not %s'
                            % (fn, where, type(d).__name__))
        return out
    return {'type': _skill_type(spec, where, fn)}


_ANNOTATION_TYPES = {'int': 'integer', 'float': 'number', 'str': 'string', 'bool': 'boolean',
                     'list': 'array', 'tuple': 'array', 'dict': 'object', 'None': 'null',
                     'List': 'array', 'Dict': 'object', 'Tuple': 'array'}


def _annotation_type(a):
    if a is None:
        return 'any'
    if type(a) is _ast.Subscript:
        a = a.value
    if type(a) is _ast.Attribute:
        return _ANNOTATION_TYPES.get(a.attr, 'any')
    if type(a) is _ast.Name:
        return _ANNOTATION_TYPES.get(a.id, 'any')
    if type(a) is _ast.Constant:
        if a.value is None:
            return 'null'
        if type(a.value) is str:
            return _TYPES.get(a.value.lower(), _ANNOTATION_TYPES.get(a.value, 'any'))
    return 'any'


def _x_save_skill(name, function_or_source, description, inputs=None, outputs=None):
    fn = 'save_skill'
    name = _skill_name(name, fn)
    description = _str_arg(description, fn, 'description').strip()
    if not description:
        raise ValueError('%s(): the description is empty: say what the skill does, in the '
                         'words search_skills will find it by' % fn)
    want = None
    if isinstance(function_or_source, str):
        src = str.__str__(function_or_source)
    else:
        src, want = _function_source(function_or_source, fn)
    try:
        tree = compile(src, '<skill %s>' % name, 'exec', _ast.PyCF_ONLY_AST)
        compile(src, '<skill %s>' % name, 'exec')
    except SyntaxError as e:
        raise ValueError('%s(): the source does not compile: %s (line %s)'
                         % (fn, e.msg, e.lineno)) from None
    except (ValueError, OverflowError, RecursionError, MemoryError) as e:
        raise ValueError('%s(): the source does not compile: %s' % (fn, e)) from None
    defs = [n for n in tree.body if type(n) in (_ast.FunctionDef, _ast.AsyncFunctionDef)]
    node = None
    if want is not None:
        node = next((n for n in defs if n.name == want), None)
    elif len(defs) == 1:
        node = defs[0]
    else:
        # The one named like the skill, or like its last part ("text.count-words":
        # count_words).
        short = name.rpartition('.')[2].replace('-', '_')
        node = next((n for n in defs if n.name == name), None) or \
            next((n for n in defs if n.name == short), None)
    if node is None:
        raise ValueError('%s(): the source defines %s: it must define one top-level function, '
                         'or one called %r (the skill\'s entry)'
                         % (fn, ', '.join(n.name + '()' for n in defs) or 'no function',
                            name.rpartition('.')[2].replace('-', '_')))
    if type(node) is _ast.AsyncFunctionDef:
        raise ValueError('%s(): %s() is async: a skill is a plain def' % (fn, node.name))
    a = node.args
    if a.vararg is not None or a.kwarg is not None:
        raise ValueError('%s(): %s() takes *%s or **%s: a skill takes named inputs only'
                         % (fn, node.name, a.vararg.arg if a.vararg else 'args',
                            a.kwarg.arg if a.kwarg else 'kwargs'))
    pos = list(a.posonlyargs) + list(a.args)
    params = pos + list(a.kwonlyargs)
    defaults = {}
    for p, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
        defaults[p.arg] = d
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        if d is not None:
            defaults[p.arg] = d
    names = [p.arg for p in params]
    sig = '%s(%s)' % (node.name, ', '.join(names))
    free = _free_names(tree) - set(dir(builtins)) - set(_SKILL_HELPERS) - {'__name__'}
    if free:
        where = []
        for k in sorted(free):
            v = _ns.get(k, _free_names)
            where.append(k if v is _free_names else '%s (%s in the REPL)' % (
                k, 'a module' if isinstance(v, _ModuleType) else 'a ' + type(v).__name__))
        raise ValueError('%s(): %s uses %s, which the skill does not define: a skill runs in a '
                         'namespace of its own (the builtins and the helpers); import modules '
                         'inside it, and pass the source as a str with the functions and '
                         'values it needs' % (fn, sig, ', '.join(where)))
    decl = {}
    if inputs is None:
        for p in params:
            decl[p.arg] = {'type': _annotation_type(p.annotation)}
    else:
        if not isinstance(inputs, dict):
            raise TypeError('%s(): inputs must be a dict {parameter: type} or None, not %s'
                            % (fn, type(inputs).__name__))
        for k in inputs:
            if k not in names:
                raise ValueError('%s(): inputs names %r, which is not a parameter of %s'
                                 % (fn, k, sig))
        for k in names:
            if k not in inputs:
                raise ValueError('%s(): parameter %r of %s is not in inputs: declare each '
                                 'parameter (or pass inputs=None to take them from the '
                                 'annotations)' % (fn, k, sig))
        for k in names:
            decl[k] = _skill_spec(inputs[k], 'inputs[%r]' % k, fn)
    for k in names:
        decl[k]['required'] = k not in defaults
        d = defaults.get(k)
        if type(d) is _ast.Constant and 'default' not in decl[k]:
            try:
                _encode(d.value)  # a JSON value (not bytes, ..., inf)
                decl[k]['default'] = d.value
            except (TypeError, ValueError):
                pass
    if outputs is not None:
        outputs = _skill_spec(outputs, 'outputs', fn)
    elif node.returns is not None:
        outputs = {'type': _annotation_type(node.returns)}
    import ast
    signature = '%s(%s)%s' % (node.name, ast.unparse(a),
                              ' -> ' + ast.unparse(node.returns) if node.returns else '')
    v = _tool(fn, {'op': 'skill_save', 'name': name, 'source': src, 'entry': node.name,
                   'description': description, 'inputs': decl, 'outputs': outputs,
                   'signature': signature})
    if type(v) is not dict or type(v.get('version')) is not int:
        raise ToolError('%s(%r): the controller did not say which version it saved' % (fn, name),
                        'request')
    return '%s@%d' % (v.get('name') if type(v.get('name')) is str else name, v['version'])
'''


# The source of what each exec defined, for save_skill: the code object of
# each function (class, method) it compiled -> the exec's source. The
# oldest execs' are let go past _SRC_KEEP characters in all.
_fn_src = {}
_src_kept = _collections.deque()
_src_chars = 0
_SRC_KEEP = 1 << 24


def _keep_source(code, mod):
    global _src_chars
    fns = [c for c in _code_tree(mod, set()) if c is not mod and c.co_name[:1] != '<']
    if not fns:
        return
    for c in fns:
        _fn_src[c] = code
    _src_kept.append((code, fns))
    _src_chars += len(code)
    while _src_chars > _SRC_KEEP and len(_src_kept) > 1:
        old, cs = _src_kept.popleft()
        _src_chars -= len(old)
        for c in cs:
            if _fn_src.get(c) is old:
                del _fn_src[c]


# ---- the answer ----

class _Answer(dict):
    """answer["content"] is the answer; setting answer["ready"] truthy makes
    it final."""

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        if key == 'ready' and value:
            _st.ready_set = True


_answer = _Answer(content='', ready=False)


def FINAL(x, sources=None):
    """FINAL(x, sources=None): x (as a str) is the final answer; sources,
    when given, become answer["sources"] (the documents it rests on). With
    an answer schema, x is kept as it is (a dict, a list, JSON text)."""
    _answer['content'] = x if _schema is not None else str(x)
    if sources is not None:
        _answer['sources'] = sources
    _answer['ready'] = True


def _resolve(name):
    if type(name) is str:
        key = name.strip()
        if key.isidentifier():
            if key in _ns:
                return _ns[key]
            # A name that is not there: an error to fix, never the name
            # itself as a confident answer.
            raise NameError('FINAL_VAR(%r): there is no variable named %r; FINAL_VAR takes '
                            'the name of a variable as a str, e.g. FINAL_VAR("result"); to '
                            'answer with a value, call FINAL(value)' % (name, key))
    return name


def FINAL_VAR(name, sources=None):
    """FINAL_VAR(name, sources=None): the variable called name (a str) is the
    final answer; a name that is no variable raises NameError and the
    session goes on. A value that cannot be a name (a number, a list, a
    str with spaces) is taken as the answer itself. sources as for FINAL."""
    value = _resolve(name)
    _answer['content'] = value
    if sources is not None:
        _answer['sources'] = sources
    _answer['ready'] = True


# answer["sources"]: what the result frame carries (repl/repl.h).
_MAX_SOURCES = 100
_MAX_QUOTE = 2000
_MAX_DOC_ID = 1000


def _source_doc(d):
    # A document id (str) or an index (int >= 0, sent as its decimal str).
    if type(d) is str:
        d = _clean(d)
        return d if 0 < len(d) <= _MAX_DOC_ID else None
    if type(d) is int and d >= 0:
        return str(d)
    return None


def _source_entry(e):
    """One entry of answer["sources"] as sent, and None; or None and the
    words saying why it is dropped."""
    if type(e) is str or type(e) is int:
        d = _source_doc(e)
        return (d, None) if d is not None else (None, 'an empty, negative or over-long id')
    if type(e) is not dict:
        return None, 'a %s' % type(e).__name__
    if 'doc' not in e:
        return None, 'a dict without "doc"'
    d = _source_doc(e['doc'])
    if d is None:
        return None, 'a "doc" that is not an id (str) or an index (int >= 0)'
    out = {'doc': d}
    for k in ('start', 'end'):
        v = e.get(k)
        if v is None:
            continue
        if type(v) is not int or v < 0:
            return None, 'a "%s" value that is not an int >= 0' % k
        out[k] = v
    q = e.get('quote')
    if q is not None:
        if type(q) is not str:
            return None, 'a "quote" that is not a str'
        out['quote'] = _clean(q[:_MAX_QUOTE])
    return out, None


def _sources_out():
    """answer["sources"] normalised: (the list to send or None, a line
    saying what was dropped or None). Runs model objects: call it as user
    code."""
    v = _answer.get('sources')
    if v is None:
        return None, None
    if type(v) is str or type(v) is dict:
        v = [v]
    if type(v) is not list and type(v) is not tuple:
        return None, ('note: answer["sources"] was ignored: a list of document ids or of '
                      '{"doc", "start", "end", "quote"} dicts is expected, not a %s\n'
                      % type(v).__name__)
    out, why = [], []
    for i, e in enumerate(v):
        if len(out) >= _MAX_SOURCES:
            why.append('the %d past the first %d' % (len(v) - i, _MAX_SOURCES))
            break
        r, w = _source_entry(e)
        if r is None:
            why.append('entry %d (%s)' % (i, w))
        else:
            out.append(r)
    note = None
    if why:
        note = 'note: answer["sources"]: dropped %s\n' % ', '.join(why)
    return (out or None), note


def _user_vars():
    out = []
    for k, v in list(_ns.items()):
        if type(k) is str and k[:1] != '_' and k not in _SCAFFOLD_SET and \
                not isinstance(v, _ModuleType):
            out.append(k)
    return out


class _Text(str):
    """A str that shows as itself: the last expression of a block echoes
    it as text, not as a quoted repr."""
    __slots__ = ()

    def __repr__(self):
        return str.__str__(self)


def SHOW_VARS():
    """SHOW_VARS() -> str: the variables defined so far, with their types
    (as the reference's SHOW_VARS returns them: print it, or make it the
    last line of a block)."""
    names = _user_vars()
    if not names:
        return _Text('No variables defined yet.')
    return _Text('Variables:\n' + '\n'.join('  %s: %s' % (k, type(_ns.get(k)).__name__)
                                              for k in names))


# ---- the code's threads at the end of an exec ----
#
# Threads the code started must not outlive its exec (they would compute
# while the model thinks, bounded only by RLIMIT_CPU). At its end the
# runtime waits for them, the exec's clock running on in the controller;
# when its time runs out first (SIGINT), SystemExit is raised in each of
# them (never inside a call: see _call) until they end, for at most
# _STOP_WAIT seconds each, and the output says which were stopped. A thread
# that does not stop (one blocked in C, or one that catches SystemExit) is
# named as such: the controller, which counts the worker's threads in the
# kernel, restarts the worker. A thread here is one with a Python frame
# (sys._current_frames()): threading's and _thread's alike.

_STOP_WAIT = 0.3
_current_frames = sys._current_frames
_set_async_exc = False  # PyThreadState_SetAsyncExc; None: not to be had
_starting = set()  # a token per thread started whose code has not begun


def _counted(start):
    """A wrapper of _thread's start function `start` that counts the thread
    from before it starts until its code begins (a thread just started has
    no frame yet, and _current_frames cannot see it). Its own first step
    takes the count back: no finally that an exception raised in it by
    _stop_threads could skip (what is left after a stop is cleared
    there)."""
    def start_counted(function, *args, **kwargs):
        token = object()

        def run(*a, **k):
            _starting.discard(token)
            return function(*a, **k)

        try:
            run.__qualname__ = function.__qualname__  # "thread started by ..."
        except Exception:
            pass
        _starting.add(token)
        try:
            return start(run, *args, **kwargs)
        except BaseException:
            _starting.discard(token)
            raise
    return start_counted


# Before threading is imported: it keeps the function it finds.
_thread.start_new_thread = _thread.start_new = _counted(_thread.start_new_thread)
if hasattr(_thread, 'start_joinable_thread'):  # Python 3.13
    _thread.start_joinable_thread = _counted(_thread.start_joinable_thread)


def _code_threads():
    """The threads of the code that have a frame, and how many threads of
    the code there are (those started whose code has not begun too). A
    parked pool thread is not one of them (_parked)."""
    tids = [t for t, f in _current_frames().items() if t != _main_tid and not _parked(f)]
    return tids, len(tids) + len(_starting)


# A ThreadPoolExecutor the code left open (no `with`, no shutdown) keeps
# its threads, each blocked in C on its empty work queue: they use no CPU
# and can do nothing until the next exec gives them work, so they may
# outlive the exec (stopping them would cost a restart, as they cannot be
# interrupted there). _parked knows one by its only frame: the pool's
# _worker at its get, with nothing queued. Their count goes in the result
# ("parked") for the controller's count of the worker's threads; a runtime
# the code patched could lie about it, which the controller's check of
# the CPU used between execs still catches.
_get_line = None  # (the code of futures' _worker, the lines of its get)


def _parked(f):
    global _get_line
    try:
        mod = sys.modules.get('concurrent.futures.thread')
        if mod is None:
            return False
        code = mod._worker.__code__
        if _get_line is None or _get_line[0] is not code:
            import linecache
            lines = set()
            for _, _, n in code.co_lines():
                if n and '.get(block=True)' in linecache.getline(code.co_filename, n):
                    lines.add(n)
            _get_line = (code, lines)
        return (f.f_code is code and f.f_lineno in _get_line[1] and
                f.f_locals.get('work_queue').empty())
    except Exception:
        return False


def _parked_count():
    return sum(1 for t, f in _current_frames().items() if t != _main_tid and _parked(f))


def _async_exc():
    global _set_async_exc
    if _set_async_exc is False:
        _set_async_exc = None
        try:
            import _ctypes

            class _int(_ctypes._SimpleCData):
                _type_ = 'i'

            class _ulong(_ctypes._SimpleCData):
                _type_ = 'L'

            class _obj(_ctypes._SimpleCData):
                _type_ = 'O'

            class _fn(_ctypes.CFuncPtr):  # int (unsigned long, PyObject *), GIL held
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_PYTHONAPI
                _restype_ = _int
                _argtypes_ = (_ulong, _obj)

            _set_async_exc = _fn(_ctypes.dlsym(_ctypes.dlopen(None),
                                               'PyThreadState_SetAsyncExc'))
        except Exception:
            pass
    return _set_async_exc


def _thread_names(tids):
    """'name' (in f, line N of the code) for each thread, at most 5."""
    th = sys.modules.get('threading')
    active = getattr(th, '_active', None) if th is not None else None
    frames = _current_frames()
    out = []
    for t in tids[:5]:
        try:
            obj = active.get(t) if type(active) is dict else None
            name = repr(obj.name) if obj is not None else 'a _thread thread'
            top = f = frames.get(t)
            while f is not None and f.f_code.co_filename != '<repl>':
                f = f.f_back
            if f is not None:
                where = f.f_code.co_name
                name += ' (in %s, line %d)' % ('the code' if where == '<module>'
                                               else where + '()', f.f_lineno)
            elif top is not None:
                name += ' (in %s(), %s)' % (top.f_code.co_name, '/'.join(
                    top.f_code.co_filename.split('/')[-2:]))
        except Exception:
            name = 'a thread'
        out.append(name)
    if len(tids) > 5:
        out.append('%d more' % (len(tids) - 5))
    return ', '.join(out)


def _plural(n, one, many):
    return '%d %s' % (n, one if n == 1 else many)


def _settle_threads():
    """Wait for the code's threads, or stop them once the exec's time is
    up; what the output must say of them, or None."""
    st = _st
    tids, n = _code_threads()
    if not n:
        return None
    st.joining = True
    try:
        delay = 0.0005
        while n and not st.sigint:
            _time.sleep(delay)
            delay = min(delay * 2, 0.01)
            tids, n = _code_threads()
        if not n:
            return None
        names = _thread_names(tids)
        left, n_left = _stop_threads()
    finally:
        st.joining = False
    text = ('[%s the code started %s still running when its time ran out: %s. '
            % (_plural(n, 'thread', 'threads'), 'was' if n == 1 else 'were', names))
    text += 'SystemExit was raised in %s' % ('it' if n == 1 else 'each')
    if not n_left:
        return text + (' and %s; the variables are kept. Join the threads you start, and '
                       'shut down pools (`with ThreadPoolExecutor() as ex:`), before the '
                       'code ends.]\n' % ('it stopped' if n == 1 else 'they stopped'))
    if n_left >= n:
        return text + (', and %s not stop.]\n' % ('it did' if n == 1 else 'they did'))
    return text + (', and %d of them did not stop: %s.]\n'
                   % (n_left, _thread_names(left)))


def _stop_threads():
    """Raise SystemExit in each thread of the code (again while it runs
    on; never in one inside a call) until they end: a thread gets
    _STOP_WAIT seconds from its first. Returns the threads still running
    and how many there are."""
    raise_in = _async_exc()
    first = {}
    began = _time.monotonic()
    while True:
        now = _time.monotonic()
        tids, n = _code_threads()
        if not n or raise_in is None or now - began >= _STOP_WAIT and \
                all(t in first and now - first[t] >= _STOP_WAIT for t in tids):
            break
        for t in tids:
            if t not in _in_call:
                first.setdefault(t, now)
                try:
                    raise_in(t, SystemExit)
                except Exception:
                    pass
        _time.sleep(0.005)
    # A thread that began long ago, but whose first step (taking its token
    # back) the exception cut short.
    _starting.clear()
    return tids, len(tids)


def _clear_hooks():
    # Code of the exec's that would run after it, in the main thread while
    # it reads frames: the handler of an alarm or interval timer, a trace
    # or profile function.
    for which in (_signal.ITIMER_REAL, _signal.ITIMER_VIRTUAL, _signal.ITIMER_PROF):
        try:
            _signal.setitimer(which, 0)
        except Exception:
            pass
    sys.settrace(None)
    sys.setprofile(None)


# ---- the namespace ----

_mod = _ModuleType('__main__')
_ns = _mod.__dict__
_ns['__builtins__'] = builtins


def _restore_scaffold():
    a = _ns.get('answer')
    if a is not _answer:
        if isinstance(a, dict):
            try:
                content, ready = dict.get(a, 'content', ''), dict.get(a, 'ready', False)
            except Exception:
                content, ready = '', False
            try:
                sources = dict.get(a, 'sources')
            except Exception:
                sources = None
            dict.clear(_answer)
            dict.__setitem__(_answer, 'content', content)
            if sources is not None:
                dict.__setitem__(_answer, 'sources', sources)
            _answer['ready'] = ready
        _ns['answer'] = _answer
    for name, obj in _scaffold:
        if _ns.get(name) is not obj:
            _ns[name] = obj


# ---- running code ----

def _compile(code):
    tree = compile(code, '<repl>', 'exec', _ast.PyCF_ONLY_AST)
    expr = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        expr = compile(_ast.Expression(tree.body.pop().value), '<repl>', 'eval')
    mod = compile(tree, '<repl>', 'exec')
    return mod, expr


def _run_user(fn, arg):
    st = _st
    try:
        st.user = True
        fn(arg)
        st.user = False
        return None
    except BaseException as e:
        st.user = False
        return e


def _exec_code(compiled):
    mod, expr = compiled
    exec(mod, _ns)
    if expr is not None:
        v = eval(expr, _ns)
        if v is not None:
            _cap.write(repr(v))
            _cap.write('\n')


# ---- structured answers (docs/structured.md) ----
#
# With a schema (the context frame's "schema"), an answer is taken only
# when it is a JSON value valid under it: the worker checks it with
# Debian's python3-jsonschema, from dist-packages (on sys.path: see the
# top of this file). The answer then goes as compact JSON text;
# one that does not validate is not taken: ready is cleared, the output
# tells the model why, and the result frame's "invalid" says it again for
# the controller. Model code runs in this process and could patch the
# check: it would only fool itself (the schema is the caller's wish, not a
# sandbox boundary).

_schema = None        # the schema (parsed), or None: any answer
_schema_check = None  # a jsonschema validator of it
_DIST = '/usr/lib/python3/dist-packages'
_MAX_SCHEMA_ERRORS = 5
_invalid = None       # why this exec's answer was not taken, or None


def _load_schema(text):
    """Parse and check the schema; returns None, or why it cannot be used."""
    global _schema, _schema_check
    import json
    try:
        schema = json.loads(text)
    except ValueError as e:
        return 'the schema is not JSON: %s' % e
    if type(schema) not in (dict, bool):
        return 'the schema is not a JSON object'
    added = _DIST not in sys.path
    if added:
        sys.path.append(_DIST)
    try:
        from jsonschema import validators, exceptions
    except ImportError as e:
        return ('cannot load the JSON Schema validator (the Debian package python3-jsonschema, '
                'in %s): %s' % (_DIST, e))
    finally:
        if added and _DIST in sys.path:
            sys.path.remove(_DIST)
    try:
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
    except exceptions.SchemaError as e:
        return 'the schema is not valid JSON Schema: %s (at %s)' % (
            _cut(e.message, 300), _where(e.path) if e.path else 'its root')
    except Exception as e:
        return 'the schema cannot be used: %s' % _cut(str(e), 300)
    # "format" asserted where jsonschema has a checker for it (date, email,
    # ipv4, uuid, ...), as a caller who wrote it expects
    _schema, _schema_check = schema, cls(schema,
                                         format_checker=getattr(cls, 'FORMAT_CHECKER', None))
    return None


def _cut(s, n):
    return s if len(s) <= n else s[:n] + '...'


def _where(path):
    # A path in the answer, as $.a.b[0]
    out = '$'
    for p in path:
        out += '[%d]' % p if type(p) is int else ('.%s' % p if str(p).isidentifier()
                                                   else '[%r]' % p)
    return out


def _as_json(c):
    """The answer's JSON value and its compact text: a str is JSON text,
    else (not JSON) the str itself; any other value must be one JSON can
    hold. Raises ValueError saying why not."""
    import json
    if type(c) is str:
        try:
            v = json.loads(c)
        except ValueError:
            v = c
    else:
        v = c
    try:
        t = json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(',', ':'))
    except (TypeError, ValueError, RecursionError) as e:
        raise ValueError('answer["content"] is not a JSON value (%s): set it to a dict, a '
                         'list, a str, a number, True/False/None, or JSON text' % e) from None
    return json.loads(t), t


def _validated(c):
    """c's compact JSON text when it is valid under the schema, else None
    with the module's _invalid saying why (a few errors, path and message)."""
    global _invalid
    try:
        v, t = _as_json(c)
    except ValueError as e:
        _invalid = str(e)
        return None
    try:
        errs = list(_schema_check.iter_errors(v))
        if errs:
            # Under an anyOf or oneOf: the alternative's own error that
            # says most (jsonschema's best_match), not "is not valid
            # under any of the given schemas".
            from jsonschema.exceptions import best_match
            errs = [best_match([e]) if e.context else e for e in errs]
            errs.sort(key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    except Exception as e:  # a $ref that cannot be resolved, ...
        _invalid = 'the schema could not be checked: %s' % _cut(str(e), 300)
        return None
    if not errs:
        return t
    lines = ['at %s: %s' % (_where(e.absolute_path), _cut(e.message, 300))
             for e in errs[:_MAX_SCHEMA_ERRORS]]
    if len(errs) > _MAX_SCHEMA_ERRORS:
        lines.append('(and %d more)' % (len(errs) - _MAX_SCHEMA_ERRORS))
    _invalid = '\n'.join(lines)
    return None


def _candidate(c):
    # A partial answer under a schema: its JSON text when it has one.
    try:
        return _as_json(c)[1]
    except ValueError:
        return str(c)


def _answer_out(_):
    ready = bool(_answer.get('ready')) or _st.ready_set
    c = _answer.get('content')
    if ready and _schema is not None:
        t = _validated(c)
        if t is not None:
            return _clean(t), None
        dict.__setitem__(_answer, 'ready', False)
        return None, _clean(_candidate(c))
    if ready:
        return _clean(str(c)), None
    if c is None or (type(c) is str and c == ''):
        return None, None
    return None, _clean(_candidate(c) if _schema is not None else str(c))


def _finish(eid, err, made=None):
    """Send the result of exec eid."""
    global _invalid
    st = _st
    out = [None, None, None, None]

    def answer(_):
        out[0], out[1] = _answer_out(None)

    def sources(_):
        out[2], out[3] = _sources_out()

    # Our SIGINT handler first: the wait for the threads ends with it.
    if _signal.getsignal(_signal.SIGINT) is not _on_sigint:
        _signal.signal(_signal.SIGINT, _on_sigint)
    threads = _settle_threads()
    _clear_hooks()
    _restore_scaffold()
    _invalid = None
    e = _run_user(answer, None)
    if e is not None:
        err = True
        dict.__setitem__(_answer, 'content', '')
        dict.__setitem__(_answer, 'ready', False)
        _cap.error_starts()
        _cap.write('error: the answer could not be made a str (answer["content"] was '
                   'emptied): ')
        _cap.write(_traceback_text(e))
    if out[0] is not None:
        e = _run_user(sources, None)
        if e is not None:
            out[2] = None
            try:
                why = ''.join(_exc_only(e))
            except Exception:
                why = 'it raised\n'
            out[3] = 'note: answer["sources"] was ignored: %s' % why
    if _invalid is not None:
        err = True
        _cap.error_starts()
        _cap.write('[the answer was not taken: it is not valid under the answer schema:\n%s\n'
                   'Fix answer["content"] (a dict or list, or JSON text) and set '
                   'answer["ready"] = True again.]\n' % _invalid)
    if out[3] is not None:
        _cap.write(out[3])
    if threads is not None:
        _cap.write(threads)
    if out[0] is not None:
        # Reported once: the next question in a session starts unanswered
        # (and without the last one's sources).
        dict.__setitem__(_answer, 'ready', False)
        dict.pop(_answer, 'sources', None)
    sys.stdout = sys.stderr = _cap
    text, total, err_at = _cap.take(st.err_at if err else None)
    names = _user_vars()
    if len(names) > _MAX_VARS:
        names = names[:_MAX_VARS]
    text = _clean(text)
    with _io_lock:
        st.exec_id = None
        _drain_calls()
        try:
            _send(_result(eid, text, total, err, err_at, out[0] is not None, out[0], out[1],
                          names, out[2], made))
        except _TooBig as e:
            # The answer is what can be that large.
            dict.__setitem__(_answer, 'content', '')
            dict.__setitem__(_answer, 'ready', False)
            if err_at is None:
                err_at = len(text)
            text += ('error: the answer is too large to send (%s bytes in all, the limit is '
                     '%s); answer["content"] was emptied\n'
                     % (format(e.args[0], ','), format(_max_frame, ',')))
            _send(_result(eid, text, total, True, err_at, False, None, None, names[:100]))


def _result(eid, text, total, err, err_at, ready, answer, content, names, sources=None,
            made=None):
    r = {'type': 'result', 'id': eid, 'output': text, 'output_chars': total, 'error': err,
         'interrupted': _st.sigint, 'ready': ready, 'answer': answer, 'content': content,
         'vars': names}
    if made:
        r['made'] = made
    if _invalid is not None and not ready:
        r['invalid'] = _clean(_invalid)
    parked = _parked_count()
    if parked:
        r['parked'] = parked
    if ready and sources:
        r['sources'] = sources
    if err and err_at is not None:
        r['error_at'] = err_at
    return r


def _begin(eid):
    global _cap
    st = _st
    if _cap.closed:  # the code closed sys.stdout
        _cap = _Capture(_cap.limit)
    st.exec_id = eid
    st.ready_set = st.pending = st.sigint = False
    st.err_at = None
    st.calls = 0
    st.codes, st.lines = (), ()
    sys.stdout = sys.stderr = _cap


_MADE_NAMES = 20    # names listed in a result's "made"
_MADE_CHARS = 400   # characters of it


def _made(before):
    """The variables the exec made (new or rebound top-level names, not
    modules, the helpers or _names), as "name: type, ...", short; or None."""
    out = []
    for k, v in list(_ns.items()):
        if type(k) is str and k[:1] != '_' and k not in _SCAFFOLD_SET and \
                not isinstance(v, _ModuleType) and before.get(k) is not v:
            out.append('%s: %s' % (k, type(v).__name__))
    if not out:
        return None
    more = len(out) - _MADE_NAMES
    text = ', '.join(out[:_MADE_NAMES])
    if len(text) > _MADE_CHARS:
        cut = text.rfind(', ', 0, _MADE_CHARS)
        more += text.count(', ', cut) if cut > 0 else 0
        text = text[:cut] if cut > 0 else text[:_MADE_CHARS]
    if more > 0:
        text += ' (and %d more: SHOW_VARS() lists all)' % more
    return _clean(text)


def _do_exec(eid, code):
    _begin(eid)
    err = False
    before = dict(_ns)
    try:
        try:
            compiled = _compile(code)
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as e:
            err = True
            _cap.error_starts()
            _cap.write(''.join(_exc_only(e)))
        else:
            try:
                _keep_source(code, compiled[0])
            except Exception:  # a tree of code too deep to walk: not kept
                pass
            e = _run_user(_exec_code, compiled)
            if e is not None:
                err = True
                _st.codes = _code_tree(compiled[0], set())
                if compiled[1] is not None:
                    _code_tree(compiled[1], _st.codes)
                _st.lines = code.splitlines()
                _cap.error_starts()
                _cap.write(_traceback_text(e))
    except KeyboardInterrupt:
        # A SIGINT on the edge of the model's code, in the runtime's frames.
        err = _st.sigint = True
        _cap.error_starts()
        _cap.write('KeyboardInterrupt\n')
    made = None
    try:
        made = _made(before)
    except Exception:
        pass
    del before
    _finish(eid, err, made)


def _final_var_strict(name):
    # From the controller, which found FINAL_VAR(name) in the model's reply:
    # always a name, maybe quoted.
    key = name.strip()
    if len(key) >= 2 and key[0] == key[-1] and key[0] in '\'"':
        key = key[1:-1].strip()
    if not key.isidentifier() or key not in _ns:
        raise NameError('FINAL_VAR: there is no variable named %r; assign it first '
                        '(or call FINAL(value))' % key)
    FINAL_VAR(key)


def _do_schema(eid, text):
    # From the controller: the answer schema from now on (None: none).
    global _schema, _schema_check, _invalid
    _begin(eid)
    _invalid = why = None
    if text is None:
        _schema = _schema_check = None
    else:
        why = _load_schema(text)
    out = '' if why is None else _clean(why) + '\n'
    with _io_lock:
        _st.exec_id = None
        _send(_result(eid, out, len(out), why is not None, 0 if why is not None else None,
                      False, None, None, _user_vars()[:_MAX_VARS]))


def _do_final(eid, text):
    # From the controller, which found FINAL(text) in the model's reply:
    # taken as code's FINAL(text) would be (checked under a schema).
    _begin(eid)
    FINAL(text)
    _finish(eid, False)


def _do_final_var(eid, name):
    _begin(eid)
    err = False
    try:
        e = _run_user(_final_var_strict, name)
        if e is not None:
            err = True
            _cap.error_starts()
            _cap.write(''.join(_exc_only(e)))
    except KeyboardInterrupt:
        err = _st.sigint = True
        _cap.error_starts()
        _cap.write('KeyboardInterrupt\n')
    _finish(eid, err)


def _do_set(eid, name, value, reset):
    """A session's binding: name = value (a JSON value), as a result."""
    _begin(eid)
    err = False
    if not name.isidentifier() or name[:1] == '_' or name in _SCAFFOLD_SET:
        err = True
        _cap.error_starts()
        _cap.write('ValueError: %.100r cannot be set\n' % (name,))
    else:
        _ns[name] = value
    if reset:
        dict.clear(_answer)
        dict.__setitem__(_answer, 'content', '')
        dict.__setitem__(_answer, 'ready', False)
    _finish(eid, err)


# ---- documents and search ----
#
# Who each document of the context is, and where a pattern occurs in it,
# read from the memfd when asked: the metadata lines (repl/repl.h) stay in
# the mapping, two small arrays say where each document and each line is,
# and search() runs the regular expression over the bytes of the mapping,
# so a 40 MB context is neither decoded again nor copied per call.

class _DocState:
    def __init__(self):
        self.spans = array.array('Q')  # (start, length) of each document in the text
        self.chars = array.array('Q')  # its length in characters
        self.starts = None             # the starts alone, for bisect
        self.meta = array.array('Q')   # (offset, length) of each metadata line
        self.n_meta = 0
        self.meta_map = None           # (mmap, offset of its byte 0 in the memfd)
        self.text_at = self.text_len = 0
        self.text_map = None           # (mmap, where the text starts in it)
        self.ids = None                # id -> index, built on first use

    def load_meta(self, table_at, n):
        if n <= 0 or table_at <= 0:
            return
        self.meta = _table(table_at, n)
        self.n_meta = n

    def line(self, i):
        """The metadata of document i as a dict, or None."""
        if i >= self.n_meta:
            return None
        off, n = self.meta[2 * i], self.meta[2 * i + 1]
        if self.meta_map is None:
            lo = min(self.meta[0::2])
            hi = max(o + k for o, k in zip(self.meta[0::2], self.meta[1::2]))
            mm, at = _region(lo, max(hi - lo, 1))
            self.meta_map = (mm, lo - at)
        mm, base = self.meta_map
        try:
            d = _decode(mm[off - base:off - base + n])
        except (ValueError, UnicodeDecodeError):
            return None
        return d if type(d) is dict else None

    def char_count(self, i):
        """Document i's length in characters: counted at load, or (a JSON
        context's records) from its bytes now."""
        if i < len(self.chars):
            return self.chars[i]
        if 2 * i + 1 >= len(self.spans):
            return None
        mm, base = self.text()
        a = base + self.spans[2 * i]
        return len(str(mm[a:a + self.spans[2 * i + 1]], 'utf-8', 'replace'))

    def text(self):
        """The text's mapping and where the text starts in it."""
        if self.text_map is None:
            if self.text_len == 0:
                self.text_map = (b'', 0)
            else:
                self.text_map = _region(self.text_at, self.text_len)
        return self.text_map


_docs = _DocState()


class _Documents:
    """documents[i] -> {"id", "path", "title", "chars", "meta"}: who
    context[i] is (for a str context, documents[0] names it). id is what
    to cite; path the file it came from; title and meta a record's title
    and other fields. len(documents), iteration, slices, and
    documents.index(id) -> i."""
    __slots__ = ()

    def __len__(self):
        return max(_docs.n_meta, len(_docs.spans) // 2)

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(n))]
        i = _operator.index(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError('documents index out of range (there are %d documents)' % n)
        d = _docs.line(i) or {}
        return {'id': str(d.get('id', i)), 'path': d.get('path'), 'title': d.get('title'),
                'chars': _docs.char_count(i),
                'meta': d.get('meta') if type(d.get('meta')) is dict else {}}

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def index(self, doc_id):
        """The index of the document whose id is doc_id (a decimal index
        names itself when no id matches); ValueError when there is none."""
        if _docs.ids is None:
            ids = {}
            for i in range(len(self)):
                d = _docs.line(i)
                ids.setdefault(str(d.get('id', i)) if d else str(i), i)
            _docs.ids = ids
        k = str(doc_id)
        if k in _docs.ids:
            return _docs.ids[k]
        if k.isdigit() and (k == '0' or k[0] != '0') and int(k) < len(self):
            return int(k)
        raise ValueError('no document with id %r' % (doc_id,))

    def __repr__(self):
        n = len(self)
        shown = ', '.join(self[i]['id'] for i in range(min(n, 3)))
        return '<documents: %d, ids such as %s%s>' % (n, shown, ', ...' if n > 3 else '')


documents = _Documents()

_SEARCH_LINE = 500  # characters of a hit's line shown


def _count_nl(mm, a, b):
    n = 0
    while a < b:
        e = min(b, a + (1 << 20))
        n += mm[a:e].count(b'\n')
        a = e
    return n


def _hit_line(mm, lo, hi, s, e):
    """The line around bytes [s, e) in mm[lo:hi], decoded; a long one is
    cut to a window around the match."""
    ls = max(mm.rfind(b'\n', lo, s) + 1, lo)
    le = mm.find(b'\n', s, hi)
    if le < 0:
        le = hi
    if le - ls > 4 * _SEARCH_LINE:
        ls = max(ls, s - 2 * _SEARCH_LINE)
        le = min(le, max(e, s) + 2 * _SEARCH_LINE)
    t = str(mm[ls:le], 'utf-8', 'replace').strip('\r')
    if len(t) > _SEARCH_LINE:
        k = len(str(mm[ls:s], 'utf-8', 'replace'))
        a = max(0, min(k - _SEARCH_LINE // 3, len(t) - _SEARCH_LINE))
        t = ('...' if a else '') + t[a:a + _SEARCH_LINE] + ('...' if a + _SEARCH_LINE < len(t) else '')
    return t


def search(pattern, max_results=100, regex=True, ignore_case=False):
    """search(pattern, max_results=100, regex=True, ignore_case=False) ->
    list of {"doc", "index", "line", "start", "end", "text"}: where pattern
    (a Python regular expression, matched against the UTF-8 bytes, ^ and $
    at line ends; regex=False: a literal string) occurs in the whole
    context as loaded, in document order, at most max_results of them. doc
    is the document's id (documents[index]), line its 1-based line, start
    and end byte offsets in that document, text the line holding the match
    (long ones cut around it). Runs at the speed of `re` over bytes: filter
    with it first, then read only what matched."""
    import re
    if isinstance(pattern, str):
        pat = pattern.encode('utf-8', 'surrogateescape')
    elif isinstance(pattern, (bytes, bytearray)):
        pat = bytes(pattern)
    else:
        raise TypeError('search() takes the pattern as a str, not %s' % type(pattern).__name__)
    if not regex:
        pat = re.escape(pat)
    max_results = _operator.index(max_results)
    try:
        rx = re.compile(pat, re.M | (re.I if ignore_case else 0))
    except re.error as e:
        raise ValueError('search(): not a valid regular expression: %s' % e) from None
    out = []
    if max_results <= 0 or _docs.text_len == 0:
        return out
    mm, base = _docs.text()
    if _docs.starts is None:
        _docs.starts = _docs.spans[0::2]
    starts, spans = _docs.starts, _docs.spans
    cur, line, at, doc = -1, 1, 0, None
    for m in rx.finditer(mm, base, base + _docs.text_len):
        pos = m.start() - base
        i = _bisect.bisect_right(starts, pos) - 1
        if i < 0:
            continue
        ds, dl = spans[2 * i], spans[2 * i + 1]
        if pos >= ds + dl:
            continue  # on the separator after a document
        if i != cur:
            cur, line, at = i, 1, ds
            d = _docs.line(i)
            doc = str(d.get('id', i)) if d else str(i)
        line += _count_nl(mm, base + at, base + pos)
        at = pos
        end = min(m.end() - base, ds + dl)
        out.append({'doc': doc, 'index': i, 'line': line,
                    'start': pos - ds, 'end': end - ds,
                    'text': _hit_line(mm, base + ds, base + ds + dl, m.start(), base + end)})
        if len(out) >= max_results:
            break
    return out


# ---- start ----

def _load_context(text_len, n_docs, text_at, table_at, form=None):
    size = text_len + (16 * n_docs if n_docs > 0 else 0)
    try:
        if form == 'json':
            return _map_json(text_len, n_docs, text_at, table_at)
        return _map_context(text_len, n_docs, text_at, table_at)
    except MemoryError:
        pass
    except OSError as e:
        if e.errno != 12:  # ENOMEM: the mapping itself did not fit
            raise
    # Out here the mapping and the half-built str are gone: there is room
    # to say why, and the limit is what the model's operator can change.
    _fatal(_no_room(size))


def _no_room(size):
    def mib(n):
        return '%d GiB' % (n >> 30) if n and n % (1 << 30) == 0 else (
            '%d MiB' % (n >> 20) if n % (1 << 20) == 0 else '%.1f MiB' % (n / (1 << 20)))
    what = 'the context (%.1f MiB)' % (size / (1 << 20))
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except Exception:
        return what + (" does not fit the worker's memory limit (RLIMIT_AS): raise "
                       '--mem-limit')
    if limit == resource.RLIM_INFINITY:
        return what + (" does not fit in the worker's memory, which has no limit "
                       '(RLIMIT_AS): the machine is out of memory')
    return what + (" does not fit the worker's memory limit (%s, RLIMIT_AS): raise "
                   '--mem-limit' % mib(limit))


def _region(at, n, whole=False):
    """Bytes [at, at + n) of the context memfd (n > 0): the mapping of the
    pages that hold them, and where in it they start. whole: all of them
    are about to be read (the text decoded at start): mapped at once
    (MAP_POPULATE) rather than a fault every 64 KiB, ~640 of them for
    40 MB."""
    base = at - at % mmap.ALLOCATIONGRANULARITY
    flags = mmap.MAP_SHARED | (getattr(mmap, 'MAP_POPULATE', 0) if whole else 0)
    return mmap.mmap(_FD_CTX, at + n - base, flags, mmap.PROT_READ,
                     offset=base), at - base


def _table(at, n):
    """The n (offset, length) pairs of little-endian uint64 at byte at of
    the context memfd, as an array of 2n ints (n > 0)."""
    mm, off = _region(at, 16 * n)
    try:
        with memoryview(mm) as mv, mv[off:off + 16 * n] as raw:
            if sys.byteorder == 'little':
                return array.array('Q', raw.cast('Q'))
            return array.array('Q', (int.from_bytes(raw[i:i + 8], 'little')
                                     for i in range(0, len(raw), 8)))
    finally:
        mm.close()


def _text_of(b):
    """b (a memoryview of the mapping, released here) decoded; invalid
    UTF-8 as U+FFFD, and then no references. Released even when the decode
    fails (a MemoryError): a traceback keeps this frame, and a view left
    would keep the mapping from closing."""
    global _refs_ok
    try:
        try:
            return str(b, 'utf-8')
        except UnicodeDecodeError:
            _refs_ok = False  # the error (and the copy of b it holds) goes here
        return str(b, 'utf-8', 'replace')
    finally:
        b.release()


def _map_json(text_len, n_docs, text_at, table_at):
    """`context` from the memfd's text, one JSON document (a .json file, a
    CSV table, JSONL records): its parsed value, and the text's length in
    characters. The text is decoded once into a str (json.loads would
    decode bytes into one anyway; a bytes copy first would cost a second
    copy), parsed, and dropped: the worker keeps the value only. Children
    get copies of what the model passes them (no references)."""
    global _refs_ok
    import json
    _refs_ok = False
    _docs.text_at, _docs.text_len = text_at, text_len
    if n_docs > 0:
        # The records' places, for documents and search (their lengths in
        # characters are counted when asked for).
        t = _table(table_at, n_docs)
        for i in range(0, 2 * n_docs, 2):
            o, k = t[i] - text_at, t[i + 1]
            if t[i] < text_at or o > text_len or k > text_len - o:
                raise ValueError('document %d is outside the text' % (i // 2))
            t[i] = o
        _docs.spans = t
    else:
        _docs.spans.extend((0, text_len))
    mm, at = _region(text_at, text_len, True)
    try:
        with memoryview(mm) as mv:
            text = _text_of(mv[at:at + text_len])
    finally:
        mm.close()
    chars = len(text)
    try:
        value = json.loads(text)
    except ValueError as e:
        _fatal('the context is not valid JSON: %s' % (e,))
    del text
    return value, chars


def _map_context(text_len, n_docs, text_at, table_at):
    """`context` from the memfd: its text at text_at, and for documents
    their table at table_at (offsets from byte 0 of the memfd, into the
    text); only those regions are mapped. Returns it and its length in
    characters."""
    global _refs_ok
    _docs.text_at, _docs.text_len = text_at, text_len
    if n_docs < 0:
        _docs.spans.extend((0, text_len))
        if text_len == 0:
            _docs.chars.append(0)
            return '', 0
        mm, at = _region(text_at, text_len, True)
        try:
            with memoryview(mm) as mv:
                ctx = _text_of(mv[at:at + text_len])
        finally:
            mm.close()
        if '\0' in ctx:
            _refs_ok = False
        _docs.chars.append(len(ctx))
        return ctx, len(ctx)
    table = _table(table_at, n_docs) if n_docs > 0 else ()
    ctx = []
    chars = 0
    mm, at = _region(text_at, text_len, True) if text_len else (None, 0)
    try:
        with memoryview(mm if mm is not None else b'') as mv:
            for i in range(0, 2 * n_docs, 2):
                off, n = table[i] - text_at, table[i + 1]
                if table[i] < text_at or off > text_len or n > text_len - off:
                    raise ValueError('document %d is outside the text' % (i // 2))
                d = _text_of(mv[at + off:at + off + n])
                if '\0' in d:
                    _refs_ok = False
                chars += len(d)
                ctx.append(d)
                _docs.spans.extend((off, n))
                _docs.chars.append(len(d))
    finally:
        if mm is not None:
            mm.close()
    return ctx, chars


# ---- non-dumpable, and the late seccomp filter ----

def _harden(hexprog):
    """Make the worker non-dumpable, then stack the seccomp program hexprog
    (struct sock_filter bytes, from repl/seccomp.c; '-': none) on the
    filter the worker was started under: from here on execve fails.

    execve made the worker dumpable again, and a dumpable process's
    /proc/PID/fd and mem are open to every process of its uid: another
    worker of that uid (a root controller's are all nobody) could read our
    context through /proc/PID/fd/5 wherever neither a pid namespace nor
    Landlock hides /proc. Non-dumpable, only a holder of CAP_SYS_PTRACE
    gets in; /proc/PID/status, which the controller reads, stays
    readable. Both run before the context frame and
    any model code, and a failure of either is fatal (the first filter
    allows PR_SET_DUMPABLE 0 for this: failing, something is wrong). Only
    without seccomp (hexprog '-', unsafe) is a failure to become
    non-dumpable ignored: such a worker can ptrace its peers anyway, and a
    Python without _ctypes still runs there. Uses _ctypes directly:
    `import ctypes` costs 3 ms, this 0.5 ms."""
    step = 'dumpable'
    try:
        import _ctypes

        class _int(_ctypes._SimpleCData):
            _type_ = 'i'

        class _ulong(_ctypes._SimpleCData):  # pointer-sized on Linux
            _type_ = 'L'

        class _ushort(_ctypes._SimpleCData):
            _type_ = 'H'

        class _ubyte(_ctypes._SimpleCData):
            _type_ = 'B'

        class _fprog(_ctypes.Structure):  # struct sock_fprog
            _fields_ = [('len', _ushort), ('filter', _ulong)]

        class _prctl(_ctypes.CFuncPtr):  # int prctl(int, unsigned long, ...)
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = _int
            _argtypes_ = (_int, _ulong, _ulong, _ulong, _ulong)

        prctl = _prctl(_ctypes.dlsym(_ctypes.dlopen(None), 'prctl'))
        # PR_SET_DUMPABLE, SUID_DUMP_DISABLE
        if prctl(4, 0, 0, 0, 0) != 0:
            e = _ctypes.get_errno()
            raise OSError(e, 'errno %d (%s)' % (e, posix.strerror(e)))
        if hexprog == '-':
            return
        step = 'late'
        code = bytearray.fromhex(hexprog)
        if not code or len(code) % 8 or len(code) // 8 > 4096:
            raise ValueError('a program of %d bytes' % len(code))

        class _insns(_ctypes.Array):
            _type_ = _ubyte
            _length_ = len(code)

        insns = _insns.from_buffer(code)
        prog = _fprog(len(code) // 8, _ctypes.addressof(insns))
        # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        if prctl(22, 2, _ctypes.addressof(prog), 0, 0) != 0:
            e = _ctypes.get_errno()
            raise OSError(e, 'errno %d (%s)' % (e, posix.strerror(e)))
    except BaseException as e:
        msg = e.strerror if isinstance(e, OSError) and e.strerror else repr(e)
        if step == 'dumpable':
            if hexprog == '-':
                return
            # No layer: no layer is missing, it is the filter or a bug.
            frame = {'type': 'fatal', 'error': 'cannot make the worker non-dumpable: ' + msg}
        else:
            frame = {'type': 'fatal', 'error': 'late seccomp filter: ' + msg,
                     'layer': 'seccomp'}
        try:
            _send(frame)
        finally:
            posix._exit(70)


def _main(args):
    global _cap, _scaffold, _SCAFFOLD_SET, _max_frame, _max_calls, _ctx_text, _ctx_docs
    text_len, n_docs, limit, _max_frame, _max_calls = (int(a) for a in args[0:5])
    late = args[5] if len(args) > 5 else '-'
    sys.argv = ['']
    _harden(late)
    _cap = _Capture(max(limit, 0))
    # The controller fills the memfd while we start up; it says when.
    msg = _read_frame()
    if msg.get('type') != 'context':
        _fatal('expected the context frame, got %.200r' % (msg,))
    context, chars = _load_context(text_len, n_docs, int(msg.get('text_at', 0)),
                                   int(msg.get('table_at', text_len)), msg.get('form'))
    _docs.load_meta(int(msg.get('meta_table_at', 0)), int(msg.get('n_meta', 0)))
    schema_error = None
    if type(msg.get('schema')) is str:
        schema_error = _load_schema(msg['schema'])
    if _refs_ok:
        if type(context) is str:
            _ctx_text = context
        else:
            _ctx_docs = tuple(context)
    _ns.update(context=context, llm_query=llm_query, llm_query_batched=llm_query_batched,
               rlm_query=rlm_query, rlm_query_batched=rlm_query_batched,
               SHOW_VARS=SHOW_VARS, answer=_answer, FINAL=FINAL, FINAL_VAR=FINAL_VAR,
               documents=documents, search=search, list_tool_servers=list_tool_servers,
               search_tools=search_tools, get_tool_info=get_tool_info, call_tool=call_tool,
               call_tools_batched=call_tools_batched, ToolError=ToolError,
               list_skills=list_skills, search_skills=search_skills,
               get_skill_info=get_skill_info, load_skill=load_skill, save_skill=save_skill)
    _scaffold = tuple((k, _ns[k]) for k in _SCAFFOLD_NAMES if k != 'answer')
    _SCAFFOLD_SET = frozenset(_SCAFFOLD_NAMES)
    sys.modules['__main__'] = _mod
    _signal.signal(_signal.SIGINT, _on_sigint)
    sys.stdout = sys.stderr = _cap
    ready = {'type': 'ready', 'pid': posix.getpid(), 'python': sys.version.split()[0],
             'context_chars': chars, 'documents': max(n_docs, 0)}
    if schema_error is not None:
        ready['schema_error'] = _clean(schema_error)
    _send(ready)
    while True:
        msg = _read_frame()
        t = msg.get('type')
        if t == 'exec' and type(msg.get('id')) is int and type(msg.get('code')) is str:
            _do_exec(msg['id'], msg['code'])
        elif t == 'final_var' and type(msg.get('id')) is int and type(msg.get('name')) is str:
            _do_final_var(msg['id'], msg['name'])
        elif t == 'set' and type(msg.get('id')) is int and type(msg.get('name')) is str:
            _do_set(msg['id'], msg['name'], msg.get('value'), msg.get('reset_answer') is True)
        elif t == 'final' and type(msg.get('id')) is int and type(msg.get('text')) is str:
            _do_final(msg['id'], msg['text'])
        elif t == 'schema' and type(msg.get('id')) is int and \
                (msg.get('schema') is None or type(msg.get('schema')) is str):
            _do_schema(msg['id'], msg.get('schema'))
        else:
            _fatal('an unexpected frame from the controller: %.200r' % (msg,))


# _rlm_code: the bootstrap's (repl/code.c), which read our code and the
# zygote's from fd 6; absent when this file is run as source.
# Dropped once used: it holds both files' code and source.
_code_of = globals().pop('_rlm_code', None)
try:
    if sys.argv[1:2] == ['zygote']:
        # The zygote (repl/zygote.py, from the bootstrap): it returns in
        # each worker it forks, with that worker's arguments.
        _zygote_code, _code_of = _code_of(1, '<zygote>'), None
        _main(exec(_zygote_code) or _zygote(sys.argv[2]))
    else:
        _code_of = None
        _main(sys.argv[1:])
except SystemExit:
    raise
except BaseException as _e:
    import traceback
    _fatal('the runtime failed: ' + ''.join(traceback.format_exception(_e))[-4000:])
