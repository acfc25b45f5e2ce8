# SPDX-License-Identifier: MIT
# python/crlm/_lib.py -- loads librlm.so.0 through ctypes and declares the
# C API of api/api.h (the package's whole contract with the C side).
#
# Where the library comes from, in order: the path in the environment
# variable RLM_LIB (an explicit choice wins, so a test run checks the build
# it names and not a stale copy), the librlm.so.0 next to these files (put
# there by `make python`), then the system's (ctypes.util.find_library).
#
# Every string the API returns is declared c_void_p, read with
# ctypes.string_at and freed with rlm_api_free: a c_char_p restype would
# copy it and lose the pointer to free. CDLL releases the GIL for the
# length of every call, so C works while Python threads run.
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_uint = ctypes.c_uint

# rlm_api_tool_fn(void *arg, const char *args_json, struct rlm_api_reply *r)
TOOL_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
# rlm_api_event_fn(void *arg, const char *event_json)
EVENT_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)

ROOT = 1      # RLM_API_ROOT
CHILDREN = 2  # RLM_API_CHILDREN


def _candidates():
    env = os.environ.get('RLM_LIB')
    if env:
        yield env, 'RLM_LIB'
    yield os.path.join(_HERE, 'librlm.so.0'), 'the package'
    found = ctypes.util.find_library('rlm')
    if found:
        yield found, 'the system'


def _load():
    tried = []
    for path, where in _candidates():
        if where == 'the package' and not os.path.exists(path):
            tried.append('%s (%s): not there' % (path, where))
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append('%s (%s): %s' % (path, where, e))
    raise ImportError(
        'crlm: cannot load librlm.so.0 (%s); build it and copy it into the package '
        'with `make python` in the rlm source tree, install it with `make install`, '
        'or set RLM_LIB to its path' % ('; '.join(tried) or 'nowhere to look'))


lib = _load()


def _decl(name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise ImportError('crlm: %s has no %s: it is older than this package; '
                  'rebuild it with `make python`' % (lib._name, name)) from None
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_P = ctypes.POINTER(c_void_p)  # char **err

rlm_api_version = _decl('rlm_api_version', c_char_p)
rlm_api_free = _decl('rlm_api_free', None, c_void_p)
rlm_api_new = _decl('rlm_api_new', c_void_p, c_char_p, _P)
rlm_api_close = _decl('rlm_api_close', None, c_void_p)
rlm_api_reply = _decl('rlm_api_reply', None, c_void_p, c_char_p)
rlm_api_reply_error = _decl('rlm_api_reply_error', None, c_void_p, c_char_p)
rlm_api_tool_add = _decl('rlm_api_tool_add', c_int, c_void_p, c_uint, c_char_p, c_char_p,
             c_char_p, TOOL_FN, c_void_p, _P)
rlm_api_job_new = _decl('rlm_api_job_new', c_void_p)
rlm_api_job_cancel = _decl('rlm_api_job_cancel', None, c_void_p)
rlm_api_job_free = _decl('rlm_api_job_free', None, c_void_p)
rlm_api_solve = _decl('rlm_api_solve', c_void_p, c_void_p, c_char_p, c_char_p, c_size_t,
              c_char_p, c_char_p, c_void_p, EVENT_FN, c_void_p, _P)
rlm_api_session_new = _decl('rlm_api_session_new', c_void_p, c_void_p, c_char_p, c_size_t,
                c_char_p, c_char_p, _P)
rlm_api_session_add_context = _decl('rlm_api_session_add_context', c_int, c_void_p, c_char_p,
                    c_size_t, c_char_p, _P)
rlm_api_session_solve = _decl('rlm_api_session_solve', c_void_p, c_void_p, c_char_p, c_char_p,
                  c_void_p, EVENT_FN, c_void_p, _P)
rlm_api_session_info = _decl('rlm_api_session_info', c_void_p, c_void_p)
rlm_api_session_reset = _decl('rlm_api_session_reset', None, c_void_p)
rlm_api_session_free = _decl('rlm_api_session_free', None, c_void_p)
rlm_api_run_jsonl = _decl('rlm_api_run_jsonl', c_void_p, c_void_p, c_char_p, _P)


def take(p):
    """The text of a string the API returned (a c_void_p value), freed;
    None for NULL."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode('utf-8', 'replace')
    finally:
        rlm_api_free(p)


def new_err():
    """A char * for an err argument: pass ctypes.byref(it)."""
    return c_void_p()


def err_text(err, default):
    """The message in err (freed), or default when none was set."""
    return take(err.value) or default


def version():
    """The library's version and commit: "0.22.0 (abc1234)"."""
    v = rlm_api_version()
    return v.decode('utf-8', 'replace') if v else 'unknown'
