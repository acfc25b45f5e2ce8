# SPDX-License-Identifier: MIT
# python/crlm/core/rlm.py -- RLM, the reference library's class over
# librlm's JSON API (api/api.h): the constructor maps the reference's
# arguments onto a client config and solve options, completion() runs one
# solve (or one question of a session with persistent=True).
#
# DESIGN
# Threads: completion() runs the C call on a thread of its own and waits on
# the calling thread, so a KeyboardInterrupt reaches Python while C works
# (CDLL drops the GIL for the call); the interrupt cancels the job, waits
# for the solve to end and raises CancellationError with the partial
# answer. Events and host tools come on the controller's threads: ctypes
# takes the GIL for each callback. An exception in a callback is printed to
# stderr and never crosses into C. The ctypes function objects handed to C
# live as long as the RLM (the client holds their pointers).
#
# Closing: the client must outlive every solve on it. close() on an
# ordinary thread cancels and waits for the solves, then frees; close()
# from a callback (a thread that a solve of ours is waiting on) cannot
# wait, so it only cancels and marks the RLM closed, and the last solve
# to return frees it (_release, on its crlm-solve thread). _active counts
# the solves in C, under _calls_lock with _closed: whoever sees it reach 0
# with _closed set frees. At interpreter exit an atexit hook closes every
# live RLM the same way and waits a while for the solves, so no daemon
# solve thread is left in C while the interpreter finalizes.
import ast
import asyncio
import atexit
import ctypes
import inspect
import json
import keyword
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import weakref

from .. import _lib
from ..exceptions import (BudgetExceededError, CallLimitExceededError, CancellationError,
                          ErrorThresholdExceededError, RLMArgumentError, RLMError,
                          TimeoutExceededError, TokenLimitExceededError)
from ..types import RLMChatCompletion, UsageSummary

# Backends on the OpenAI wire with a fixed endpoint: (base_url, key variable).
_GATEWAYS = {
    'openrouter': ('https://openrouter.ai/api/v1', 'OPENROUTER_API_KEY'),
    'vercel': ('https://ai-gateway.vercel.sh/v1', 'AI_GATEWAY_API_KEY'),
}
_BACKENDS = ('openai', 'vllm', 'openrouter', 'vercel', 'anthropic', 'sim')
_BACKEND_KWARGS = ('model_name', 'api_key', 'base_url', 'reasoning_effort')

# Names model code already has (repl/runtime.py's scaffold) or that the
# session gives it: a tool or value of that name would shadow them.
_RESERVED = frozenset((
    'context', 'llm_query', 'llm_query_batched', 'rlm_query', 'rlm_query_batched',
    'SHOW_VARS', 'answer', 'FINAL', 'FINAL_VAR', 'documents', 'search',
    'list_tool_servers', 'search_tools', 'get_tool_info', 'call_tool',
    'call_tools_batched', 'ToolError', 'list_skills', 'search_skills', 'get_skill_info',
    'load_skill', 'save_skill', 'history'))
_RESERVED_RE = re.compile(r'^(context|history)_[0-9]+$')

# max_errors=None: no limit, as the reference has none by default.
# The C side's largest max_errors (consecutive error turns): no fewer than
# any max_iterations it takes.
_NO_LIMIT = 10000

# Set on a controller thread while it runs a callback of ours: .on, and
# .rlm the RLM whose solve runs it.
_in_callback = threading.local()

# Every RLM not yet closed (_exit cancels their solves).
_live = weakref.WeakSet()
_EXIT_WAIT = 10.0   # seconds _exit waits for the solves it cancelled

_TOOL_SCHEMA = json.dumps({'type': 'object',
                           'properties': {'args': {'type': 'array'},
                                          'kwargs': {'type': 'object'}}})


def _backend_config(backend, kw, sub):
    """The client config members of one backend: {"provider", "model",
    "base_url", "api_key"} (sub: the sub_ forms)."""
    what = 'other_backends' if sub else 'backend'
    if backend not in _BACKENDS:
        raise ValueError(
            "%s %r is not supported: rlm speaks the OpenAI and Anthropic wires; for "
            "another provider (portkey, azure_openai, gemini, litellm, bedrock, ...) use its "
            "OpenAI-compatible endpoint: %s='openai' with backend_kwargs "
            "{'base_url': ..., 'api_key': ..., 'model_name': ...}; the supported backends "
            "are %s" % (what, backend, what, ', '.join(_BACKENDS)))
    if kw is not None and not isinstance(kw, dict):
        raise TypeError('%s_kwargs must be a dict, not %s' % (
            'other_backend' if sub else 'backend', type(kw).__name__))
    kw = dict(kw or {})
    bad = sorted(k for k in kw if k not in _BACKEND_KWARGS)
    if bad:
        raise ValueError('%s_kwargs: unknown %s %s (known: %s)' % (
            what.rstrip('s') if sub else what, 'keys' if len(bad) > 1 else 'key',
            ', '.join(repr(b) for b in bad), ', '.join(_BACKEND_KWARGS)))
    out = {}
    model, key, url = kw.get('model_name'), kw.get('api_key'), kw.get('base_url')
    if backend in ('openai', 'vllm'):
        out['provider'] = 'openai'
        if backend == 'vllm' and not url:
            raise ValueError("vllm: base_url is required in %s_kwargs (the server's "
                             "OpenAI-compatible endpoint, e.g. 'http://localhost:8000/v1')"
                             % ('other_backend' if sub else 'backend'))
        if backend == 'vllm':
            # never the OpenAI key to a server of one's own
            key = key or os.environ.get('VLLM_API_KEY') or 'EMPTY'
    elif backend in _GATEWAYS:
        out['provider'] = 'openai'
        url = url or _GATEWAYS[backend][0]
        key = key or os.environ.get(_GATEWAYS[backend][1])
        if not key:
            raise ValueError('%s: no API key: pass api_key in %s_kwargs or set %s' % (
                backend, 'other_backend' if sub else 'backend', _GATEWAYS[backend][1]))
    else:
        out['provider'] = backend
    if model is not None:
        out['model'] = model
    if url is not None:
        out['base_url'] = url
    if key is not None:
        out['api_key'] = key
    if kw.get('reasoning_effort') is not None and backend != 'anthropic':
        # the Messages API has no such member (it would refuse the
        # request): dropped, as in _sampling_extra
        out['extra'] = {'reasoning_effort': kw['reasoning_effort']}
    if sub:
        out = {'sub_' + k: v for k, v in out.items()}
    return out


def _sampling_extra(backend, args):
    """sampling_args as request members of backend: reasoning_effort is
    an OpenAI member that the Anthropic Messages API does not have, so it
    is dropped for "anthropic" (docs/python.md)."""
    args = dict(args)
    if backend == 'anthropic':
        args.pop('reasoning_effort', None)
    return args


def _check_num(name, v, lo, hi, integer, open_lo=False):
    """A limit in [lo, hi] ((lo, hi] with open_lo), or None."""
    if v is None:
        return
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type:
        raise TypeError('%s must be %s or None, not %s' % (
            name, 'an int' if integer else 'a number', type(v).__name__))
    if not ((v > lo if open_lo else v >= lo) and v <= hi):
        raise ValueError('%s must be %s %s and at most %s, not %r' % (
            name, '>' if open_lo else '>=', lo, hi, v))


def _check_name(name, what):
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError('%s: %r is not a Python identifier' % (what, name))
    if name in _RESERVED or _RESERVED_RE.match(name):
        raise ValueError('%s: %r is reserved: model code already has that name (the REPL\'s '
                         'own helpers and variables)' % (what, name))


def _tool_spec(name, spec, what):
    """(callable or None, value, description) of one custom_tools entry."""
    _check_name(name, what)
    desc = None
    if isinstance(spec, dict) and 'tool' in spec and set(spec) <= {'tool', 'description'}:
        desc = spec.get('description')
        spec = spec['tool']
    if callable(spec):
        if not desc:
            doc = inspect.getdoc(spec)
            desc = doc.strip().splitlines()[0] if doc and doc.strip() else None
        return spec, None, desc
    try:
        text = json.dumps(spec)
    except (TypeError, ValueError) as e:
        raise TypeError('%s: the value of %r is a %s that JSON cannot encode (%s): give a '
                        'callable or a JSON value' % (what, name, type(spec).__name__, e)) from None
    return None, text, desc


def _non_finite(v, depth=0):
    """How JSON would spell the first non-finite float in v ("NaN",
    "Infinity", "-Infinity"), or None."""
    if isinstance(v, float) and v != v:
        return 'NaN'
    if isinstance(v, float) and v in (float('inf'), float('-inf')):
        return 'Infinity' if v > 0 else '-Infinity'
    if depth < 100:
        items = v.values() if isinstance(v, dict) else \
            v if isinstance(v, (list, tuple)) else ()
        for x in items:
            w = _non_finite(x, depth + 1)
            if w:
                return w
    return None


async def _awaited(aw):
    return await aw


def _signature(fn):
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return '(*args, **kwargs)'


def _tools_code(tools):
    """Setup code binding tools (name -> (fn, value_json, desc)) in a worker."""
    lines = []
    for name, (fn, value, _) in tools.items():
        if fn is not None:
            lines.append('def %s(*args, **kwargs):\n'
                         '    return call_tool(%r, {"args": list(args), "kwargs": kwargs})\n'
                         % (name, 'host.' + name))
        else:
            lines.append('%s = __import__("json").loads(%r)\n' % (name, value))
    return ''.join(lines)


def _tools_prompt(tools):
    """The system prompt paragraph that lists tools to the model."""
    fns = [(n, t) for n, t in tools.items() if t[0] is not None]
    vals = [(n, t) for n, t in tools.items() if t[0] is None]
    parts = []
    if fns:
        parts.append('Custom functions are defined in the REPL; call them as plain Python '
                     'functions (they run in the program that started you, outside the '
                     'sandbox, and return a Python value):')
        for n, (fn, _, desc) in fns:
            parts.append('- `%s%s`%s' % (n, _signature(fn), ': ' + desc if desc else ''))
    if vals:
        parts.append('Custom variables are defined in the REPL:')
        for n, (_, value, desc) in vals:
            t = type(json.loads(value)).__name__
            parts.append('- `%s` (%s)%s' % (n, t, ': ' + desc if desc else ''))
    return '\n'.join(parts)


def _context(prompt):
    """(bytes, kind) of a context: the text itself, or JSON made once."""
    if isinstance(prompt, str):
        return prompt.encode('utf-8'), b'text'
    if isinstance(prompt, (bytes, bytearray, memoryview)):
        return bytes(prompt), b'text'
    if isinstance(prompt, os.PathLike):
        return os.fsencode(prompt), b'file'
    kind = b'json'
    if isinstance(prompt, (list, tuple)) and prompt and all(isinstance(x, str) for x in prompt):
        kind = b'docs'
    try:
        text = json.dumps(prompt, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError('prompt: a %s cannot be a context: %s (give a str, a list of str, '
                        'or a JSON value: dict, list, number, ...)' % (type(prompt).__name__, e)) \
            from None
    return text.encode('utf-8'), kind


def _text_list(v, what):
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return '\n\n'.join(v)
    raise TypeError('%s must be a str or a list of str, not %s' % (what, type(v).__name__))


class _Call:
    """One running completion: its job, its event callback, its outcome."""

    def __init__(self, rlm):
        self.rlm = rlm
        self.job = _lib.rlm_api_job_new()
        self.turn_t = {}     # (node, iteration) -> start time
        self.child_t = {}    # child node -> (start time, model)
        self.out = None      # the returned JSON text
        self.err = None      # the error text when NULL came back
        self.exc = None      # an exception raised on the worker thread
        self.done = threading.Event()
        self.ev = _lib.EVENT_FN(self._event) if rlm._wants_events else \
            ctypes.cast(None, _lib.EVENT_FN)

    def free(self):
        if self.job:
            _lib.rlm_api_job_free(self.job)
            self.job = None

    def _event(self, _arg, text):
        _in_callback.on, _in_callback.rlm = True, self.rlm
        try:
            self.rlm._on_event(self, json.loads(text.decode('utf-8', 'replace')))
        except BaseException:
            # Never into C: a callback's failure is the caller's to read.
            traceback.print_exc(file=sys.stderr)
        finally:
            _in_callback.on, _in_callback.rlm = False, None


def _in_callback_of(rlm):
    """Whether this thread runs a callback of one of rlm's solves."""
    return getattr(_in_callback, 'on', False) and getattr(_in_callback, 'rlm', None) is rlm


def _exit():
    """At interpreter exit: cancel the solves of every live RLM and wait
    for them (a while), freeing each RLM once its solves are gone."""
    rlms = list(_live)
    for r in rlms:
        try:
            r._close(wait=False)
        except Exception:
            pass
    deadline = time.monotonic() + _EXIT_WAIT
    for r in rlms:
        with r._calls_lock:
            running = list(r._calls)
        for c in running:
            c.done.wait(max(0.0, deadline - time.monotonic()))


atexit.register(_exit)


class RLM:
    """A Recursive Language Model over librlm: the reference library's
    RLM, with its arguments (docs/python.md has the table). Extensions:
    cache (a store path, True for the default store, False), max_calls
    (model calls at any depth), sim (the simulator's spec), schema (a JSON
    Schema: the answer is then a JSON value, in .answer_json), prices (a
    price file, for max_budget with models the built-in table lacks)."""

    def __init__(self, backend='openai', backend_kwargs=None, environment='local',
                 environment_kwargs=None, depth=0, max_depth=1, max_iterations=30,
                 max_budget=None, max_timeout=None, max_tokens=None, max_errors=None,
                 custom_system_prompt=None, tool_prompts=None, tool_code=None,
                 other_backends=None, other_backend_kwargs=None, logger=None, verbose=False,
                 persistent=False, custom_tools=None, custom_sub_tools=None, compaction=False,
                 compaction_threshold_pct=0.85, max_concurrent_subcalls=4,
                 on_subcall_start=None, on_subcall_complete=None, on_iteration_start=None,
                 on_iteration_complete=None, sampling_args=None, sub_sampling_args=None,
                 *, cache=False, max_calls=None, sim=None, schema=None, prices=None):
        self._client = None
        self._session = None
        self._tmpdir = None
        self._lock = threading.Lock()      # the session: one question at a time
        self._calls = set()                # running _Calls (cancel())
        self._calls_lock = threading.Lock()  # _calls, _active, _closed
        self._active = 0                   # solves in C now
        self._release_lock = threading.Lock()
        self._fns = []                     # ctypes callbacks C holds
        self._closed = False

        config = {'env': True}
        config.update(_backend_config(backend, backend_kwargs, False))
        self.backend = backend
        self.backend_kwargs = dict(backend_kwargs or {})
        if environment != 'local':
            raise ValueError(
                'environment %r is not supported: model code always runs in rlm\'s own '
                'sandbox, a local python3 confined by namespaces, seccomp and Landlock (no '
                'Docker, no cloud sandbox): pass environment="local"' % (environment,))
        env_kw = dict(environment_kwargs or {})
        bad = sorted(k for k in env_kw if k != 'setup_code')
        if bad:
            raise ValueError('environment_kwargs: unknown %s %s: only setup_code is '
                             'supported (the sandbox takes no other settings)' % (
                                 'keys' if len(bad) > 1 else 'key',
                                 ', '.join(repr(b) for b in bad)))
        if depth != 0:
            raise ValueError('depth must be 0: an RLM made in Python is a root (the C side '
                             'makes the child RLMs itself)')
        _check_num('max_iterations', max_iterations, 1, 10000, True)
        _check_num('max_depth', max_depth, 1, 16, True)
        _check_num('max_budget', max_budget, 0, 1e9, False, open_lo=True)
        _check_num('max_timeout', max_timeout, 0, 1e7, False, open_lo=True)
        _check_num('max_tokens', max_tokens, 1, 2 ** 62, True)
        _check_num('max_errors', max_errors, 1, 10000, True)
        _check_num('max_calls', max_calls, 1, 2 ** 62, True)
        _check_num('max_concurrent_subcalls', max_concurrent_subcalls, 1, 1024, True)
        _check_num('compaction_threshold_pct', compaction_threshold_pct, 0, 1, False,
                   open_lo=True)
        if (other_backends is None) != (other_backend_kwargs is None):
            raise ValueError('other_backends and other_backend_kwargs go together')
        if other_backends is not None:
            if not isinstance(other_backends, (list, tuple)) or \
                    not isinstance(other_backend_kwargs, (list, tuple)):
                raise TypeError('other_backends and other_backend_kwargs must be lists '
                                '(["openai"], [{"model_name": ...}])')
            if len(other_backends) != 1 or len(other_backend_kwargs) != 1:
                raise ValueError('other_backends: exactly one other backend is supported '
                                 '(the sub-model of depth-1 calls), got %d'
                                 % len(other_backends))
            config.update(_backend_config(other_backends[0], other_backend_kwargs[0], True))
        sub_backend = other_backends[0] if other_backends else backend
        if sampling_args:
            config['extra'] = dict(config.get('extra') or {},
                                   **_sampling_extra(backend, sampling_args))
        if sub_sampling_args:
            config['sub_extra'] = dict(config.get('sub_extra') or {},
                                       **_sampling_extra(sub_backend, sub_sampling_args))
        if sim is not None:
            config['sim'] = sim
        if prices is not None:
            config['prices'] = os.fspath(prices)
        # The logger's trajectory comes from a store: without one of the
        # caller's, a private one (made last, below), never read from
        # ("refresh"), removed by close().
        private_store = logger is not None and not cache
        if cache:
            config['cache'] = os.fspath(cache) if cache is not True else True

        opts = {'max_depth': max_depth, 'max_iterations': max_iterations,
                'max_errors': _NO_LIMIT if max_errors is None else int(max_errors),
                'max_nodes': int(max_concurrent_subcalls),
                'compaction': bool(compaction)}
        if compaction:
            opts['compaction_threshold'] = float(compaction_threshold_pct)
        if max_budget is not None:
            opts['max_cost'] = float(max_budget)
        if max_timeout is not None:
            opts['timeout'] = float(max_timeout)
        if max_tokens is not None:
            opts['max_tokens'] = int(max_tokens)
        if max_calls is not None:
            opts['max_calls'] = int(max_calls)
        if custom_system_prompt is not None:
            opts['system_prompt'] = custom_system_prompt
        if schema is not None:
            if not isinstance(schema, dict):
                raise TypeError('schema must be a dict (a JSON Schema), not %s'
                                % type(schema).__name__)
            opts['schema'] = schema
        if logger is not None:
            opts['export'] = True
            if private_store:
                opts['refresh'] = True
        self._wants_events = bool(verbose or on_subcall_start or on_subcall_complete or
                                  on_iteration_start or on_iteration_complete)
        if self._wants_events:
            opts['detail_events'] = True

        tools = {n: _tool_spec(n, s, 'custom_tools') for n, s in (custom_tools or {}).items()}
        if custom_sub_tools is None:
            sub_tools = tools
        else:
            sub_tools = {n: _tool_spec(n, s, 'custom_sub_tools')
                         for n, s in custom_sub_tools.items()}
        setup = env_kw.get('setup_code')
        if setup is not None and not isinstance(setup, str):
            raise TypeError('environment_kwargs setup_code must be a str')
        if tool_code is not None and not isinstance(tool_code, str):
            raise TypeError('tool_code must be a str')
        for what, code in (('environment_kwargs setup_code', setup), ('tool_code', tool_code)):
            try:
                if code:
                    ast.parse(code)
            except SyntaxError as e:
                raise ValueError('%s contains invalid Python syntax: %s' % (what, e)) from None
        base = ''.join(c + '\n' for c in (setup, tool_code) if c)
        root_code = base + _tools_code(tools)
        sub_code = base + _tools_code(sub_tools)
        if root_code:
            opts['setup_code'] = root_code
        if sub_code:
            opts['sub_setup_code'] = sub_code
        extra = _text_list(tool_prompts, 'tool_prompts')
        root_extra = '\n\n'.join(x for x in (extra, _tools_prompt(tools)) if x)
        sub_extra = '\n\n'.join(x for x in (extra, _tools_prompt(sub_tools)) if x)
        if root_extra:
            opts['system_extra'] = root_extra
        if sub_extra:
            opts['sub_system_extra'] = sub_extra

        self.max_budget, self.max_timeout, self.max_tokens = max_budget, max_timeout, max_tokens
        self.max_errors, self.max_calls = max_errors, max_calls
        self.max_depth, self.max_iterations = max_depth, max_iterations
        self.logger, self.verbose, self.persistent = logger, verbose, persistent
        self.on_subcall_start, self.on_subcall_complete = on_subcall_start, on_subcall_complete
        self.on_iteration_start = on_iteration_start
        self.on_iteration_complete = on_iteration_complete
        self._config, self._opts = config, opts
        self._opts_json = json.dumps(opts).encode()

        if private_store:
            self._tmpdir = tempfile.mkdtemp(prefix='crlm-')
            config['cache'] = os.path.join(self._tmpdir, 'runs.db')
        err = _lib.new_err()
        self._client = _lib.rlm_api_new(json.dumps(config).encode(), ctypes.byref(err))
        if not self._client:
            self._cleanup_tmp()
            raise ValueError(_lib.err_text(err, 'cannot make the client'))
        _live.add(self)
        try:
            for name in sorted(set(tools) | set(sub_tools)):
                root, sub = tools.get(name), sub_tools.get(name)
                fns = [t for t in (root, sub) if t and t[0] is not None]
                if not fns:
                    continue
                if len(fns) == 2 and fns[0][0] is not fns[1][0]:
                    raise ValueError('custom_tools and custom_sub_tools give %r two different '
                                     'functions: one host tool has one function; give them '
                                     'different names' % name)
                where = (_lib.ROOT if root and root[0] is not None else 0) | \
                    (_lib.CHILDREN if sub and sub[0] is not None else 0)
                fn, _, desc = fns[0]
                self._add_tool(name, fn, where, desc or '%s%s' % (name, _signature(fn)))
        except BaseException:
            self.close()
            raise

    # ---- host tools ----

    def _add_tool(self, name, fn, where, desc):
        me = weakref.ref(self)  # the client holds cb; cb must not hold the RLM

        def call(_arg, args_json, reply):
            _in_callback.on, _in_callback.rlm = True, me()
            try:
                a = json.loads(args_json.decode('utf-8', 'replace')) if args_json else {}
                res = fn(*(a.get('args') or []), **(a.get('kwargs') or {}))
                if inspect.isawaitable(res):
                    # an async def: run it here, on this controller thread
                    res = asyncio.run(_awaited(res))
                try:
                    text = json.dumps(res, default=str, allow_nan=False)
                except ValueError as e:
                    # NaN and the infinities have no JSON (nor has a
                    # circular value): say so, never send a text that no
                    # JSON parser takes
                    msg = 'tool result is not JSON: %s' % (_non_finite(res) or e)
                    _lib.rlm_api_reply_error(reply, msg.encode('utf-8', 'replace'))
                    return
                _lib.rlm_api_reply(reply, text.encode('utf-8', 'surrogatepass'))
            except BaseException as e:
                msg = '%s: %s' % (type(e).__name__, e)
                _lib.rlm_api_reply_error(reply, msg.encode('utf-8', 'replace'))
            finally:
                _in_callback.on, _in_callback.rlm = False, None
        cb = _lib.TOOL_FN(call)
        self._fns.append(cb)
        err = _lib.new_err()
        rc = _lib.rlm_api_tool_add(self._client, where, name.encode(), _TOOL_SCHEMA.encode(),
                                   desc.encode('utf-8', 'replace'), cb, None, ctypes.byref(err))
        if rc < 0:
            raise ValueError('custom_tools: %s' % _lib.err_text(err, 'cannot add %r' % name))

    # ---- events ----

    def _on_event(self, call, e):
        kind, depth = e.get('kind'), e.get('depth') or 0
        data = e.get('data') if isinstance(e.get('data'), dict) else {}
        it = e.get('iteration') or 0
        now = time.monotonic()
        if self.verbose:
            self._print_event(e, kind, depth, data, self.max_iterations)
        if kind in ('turn', 'turn_end') and it > self.max_iterations:
            # the one last call after max_iterations turns (iteration
            # max_iterations + 1 on the C side) is no iteration: the
            # reference numbers its iterations 1 to max_iterations
            return
        if kind == 'turn':
            call.turn_t[(e.get('node'), it)] = now
            if self.on_iteration_start:
                self.on_iteration_start(depth, it)
        elif kind == 'turn_end':
            t0 = call.turn_t.pop((e.get('node'), it), None)
            dur = data['ms'] / 1000.0 if isinstance(data.get('ms'), (int, float)) else \
                (now - t0 if t0 is not None else 0.0)
            if self.on_iteration_complete:
                self.on_iteration_complete(depth, it, dur)
        elif kind == 'child':
            model = data.get('model')
            call.child_t[data.get('child', e.get('node'))] = now
            if self.on_subcall_start:
                prompt = e.get('text') or ''
                self.on_subcall_start(depth, model, prompt if len(prompt) <= 200 else
                                      prompt[:197] + '...')
        elif kind == 'child_end':
            t0 = call.child_t.pop(data.get('child', e.get('node')), None)
            dur = data['ms'] / 1000.0 if isinstance(data.get('ms'), (int, float)) else \
                (now - t0 if t0 is not None else 0.0)
            if self.on_subcall_complete:
                error = data.get('error')
                self.on_subcall_complete(depth, data.get('model'), dur, error or None)

    @staticmethod
    def _print_event(e, kind, depth, data, max_iterations):
        """One event as plain lines on stderr (verbose=True)."""
        pad = '  ' * depth
        text = (e.get('text') or '').rstrip()

        def block(t, n=8):
            lines = t.splitlines() or ['']
            more = len(lines) - n
            lines = [x if len(x) <= 160 else x[:157] + '...' for x in lines[:n]]
            if more > 0:
                lines.append('... (%d more lines)' % more)
            return ''.join('\n%s    | %s' % (pad, x) for x in lines)
        if kind == 'turn':
            it = e.get('iteration') or 0
            line = '--- %s%s ---' % ('iteration %s' % it if it <= max_iterations else
                                     'last call (max_iterations)',
                                     ' (depth %d)' % depth if depth else '')
        elif kind == 'turn_end':
            return
        elif kind == 'call':
            u = data.get('usage') or {}
            line = '%s call%s: %s in, %s out tokens, %.2fs%s' % (
                data.get('role') or 'model', ' to ' + data['model'] if data.get('model') else '',
                u.get('input_tokens', '?'), u.get('output_tokens', '?'),
                (data.get('ms') or 0) / 1000.0, ' (cached)' if data.get('cached') else
                ('' if data.get('ok', True) else ' (failed)'))
        elif kind == 'reply':
            # its code comes as "code" events: the prose only
            line = 'response:' + block(text.split('```')[0].strip(), 4)
        elif kind in ('code', 'output'):
            line = kind + ':' + block(text)
        elif kind == 'child':
            line = 'sub-RLM started%s' % (': ' + text.splitlines()[0][:120] if text else '')
        elif kind == 'child_end':
            line = 'sub-RLM done%s' % (' (%s)' % data['error'] if data.get('error') else '')
        else:
            first = text.splitlines()[0] if text else ''
            line = '%s%s' % (kind, ': ' + (first if len(first) <= 160 else first[:157] + '...')
                             if first else '')
        sys.stderr.write('[crlm %6.1fs] %s%s\n' % ((e.get('elapsed_ms') or 0) / 1000.0, pad,
                                                   line))
        sys.stderr.flush()

    # ---- a solve ----

    def _start(self, prompt, root_prompt):
        ctx, kind = _context(prompt)
        if root_prompt is not None and not isinstance(root_prompt, str):
            raise TypeError('root_prompt must be a str or None, not %s'
                            % type(root_prompt).__name__)
        question = root_prompt.encode('utf-8') if root_prompt is not None else None
        call = _Call(self)
        # one step with close(): a call is either refused here or in the
        # set close() cancels, and the client stays while _active > 0
        with self._calls_lock:
            if self._closed:
                call.free()
                raise RLMError('this RLM is closed')
            self._calls.add(call)
            self._active += 1

        def run():
            try:
                err = _lib.new_err()
                if self.persistent:
                    with self._lock:
                        call.out = self._session_solve(ctx, kind, question, call, err)
                else:
                    call.out = _lib.take(_lib.rlm_api_solve(
                        self._client, question, ctx, len(ctx), kind, self._opts_json,
                        call.job, call.ev, None, ctypes.byref(err)))
                if call.out is None:
                    call.err = _lib.err_text(err, 'the solve failed')
            except BaseException as ex:
                call.exc = ex
            finally:
                self._solve_ended()
                call.done.set()
        # ctx (bytes) stays referenced by run's closure for the call: the
        # C side borrows it.
        t = threading.Thread(target=run, name='crlm-solve', daemon=True)
        try:
            t.start()
        except BaseException:
            with self._calls_lock:
                self._calls.discard(call)
            call.free()
            self._solve_ended()
            raise
        return call, t

    def _solve_ended(self):
        """One solve is out of C: the last one of a closed RLM frees it
        (close() from a callback left that to it)."""
        with self._calls_lock:
            self._active -= 1
            last = self._closed and self._active == 0
        if last:
            self._release()

    def _session_solve(self, ctx, kind, question, call, err):
        if self._session is None:
            self._session = _lib.rlm_api_session_new(self._client, ctx, len(ctx), kind,
                                                     self._opts_json, ctypes.byref(err))
            if not self._session:
                return None
        else:
            n = _lib.rlm_api_session_add_context(self._session, ctx, len(ctx), kind,
                                                 ctypes.byref(err))
            if n < 0:
                return None
        return _lib.take(_lib.rlm_api_session_solve(self._session, question, None, call.job,
                                                    call.ev, None, ctypes.byref(err)))

    def _finish(self, call, prompt, t0):
        with self._calls_lock:
            self._calls.discard(call)
        call.free()
        if call.exc is not None:
            raise call.exc
        if call.out is None:
            # the C side refused the arguments (a context that does not
            # load, an option it cannot use)
            raise RLMArgumentError(call.err)
        return self._result(json.loads(call.out), prompt, time.perf_counter() - t0)

    def _result(self, r, prompt, elapsed):
        res = r.get('result') or {}
        err = r.get('error') or {}
        stop = res.get('stop')
        answer = res.get('answer')
        answer_json = None
        if res.get('answer_json'):
            answer_json = answer
            answer = json.dumps(answer, ensure_ascii=False)
        elif answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        usage = res.get('usage') or {}
        detail = res.get('stop_detail')
        # the trajectory of every solve, a limit's too (it has one when
        # the C side recorded a run)
        meta = None
        if self.logger is not None:
            meta = self.logger._record(r.get('trajectory_jsonl'))
        if stop == 'cancelled':
            raise CancellationError(answer, detail and 'cancelled: ' + detail)
        if stop == 'max_cost':
            e = BudgetExceededError(float(res.get('cost_usd') or 0), self.max_budget or 0.0,
                                    detail and 'budget exceeded: ' + detail)
            e.partial_answer = answer  # ours: the reference's has none
            raise e
        if stop == 'timeout':
            raise TimeoutExceededError(elapsed, self.max_timeout or 0.0, answer,
                                       detail and 'timeout exceeded: ' + detail)
        if stop == 'max_tokens':
            used = int(usage.get('input_tokens', 0)) + int(usage.get('output_tokens', 0))
            raise TokenLimitExceededError(used, self.max_tokens or 0, answer,
                                          detail and 'token limit exceeded: ' + detail)
        if stop == 'max_errors':
            repl = res.get('repl') or {}
            last = detail.split('; the last: ', 1)[-1] if detail else None
            raise ErrorThresholdExceededError(int(repl.get('error_turns', 0)),
                                              self.max_errors or 0, last, answer,
                                              detail and 'error threshold exceeded: ' + detail)
        if stop in ('max_calls', 'max_sub_calls'):
            calls = (res.get('calls') or {}).get('total', 0)
            raise CallLimitExceededError(int(calls), self.max_calls or 0, answer,
                                         detail and 'call limit exceeded: ' + detail)
        if not r.get('ok') or stop == 'error':
            raise RLMError(err.get('message') or detail or 'the solve failed',
                           err.get('code'), res)
        if stop == 'incomplete' and (answer is None or not answer.strip()):
            # no answer, and failures under the root (sub-calls, child
            # RLMs): "nothing found" cannot be told from "nothing read".
            # A NONE answer returns, with .stop "incomplete".
            raise RLMError('the solve is incomplete: ' + (detail or 'no answer, and calls '
                                                           'under it failed'),
                           'incomplete', res)
        model = res.get('model') or self._config.get('model')
        if self.verbose:
            sys.stderr.write('[crlm] final answer (%s, %.1fs): %s\n' % (
                stop, elapsed, answer if answer is None or len(answer) <= 500 else
                answer[:497] + '...'))
            sys.stderr.flush()
        return RLMChatCompletion(model, prompt, answer if answer is not None else '',
                                 UsageSummary._from_api(r.get('usage_by_model')), elapsed,
                                 meta, answer_json, stop, res)

    def completion(self, prompt, root_prompt=None):
        """Answer over prompt (the REPL's context: a str, a list of str, a
        dict, a list of dicts, any JSON value, or a pathlib.Path of a file
        or directory). root_prompt is the question the root model sees;
        None: the question is at the end of the prompt. Returns an
        RLMChatCompletion; a limit raises its exception, a failure
        RLMError. Ctrl-C cancels the solve and raises CancellationError."""
        t0 = time.perf_counter()
        call, t = self._start(prompt, root_prompt)
        interrupted = False
        while True:
            try:
                while not call.done.wait(0.05):
                    pass
                break
            except KeyboardInterrupt:
                # Stop the solve and wait for it: its threads and worker
                # must be gone before this returns.
                interrupted = True
                _lib.rlm_api_job_cancel(call.job)
        t.join()
        if interrupted and call.exc is None and call.out is not None:
            try:
                return self._finish(call, prompt, t0)
            except CancellationError:
                raise
            except RLMError as e:
                raise CancellationError(getattr(e, 'partial_answer', None),
                                        'cancelled by KeyboardInterrupt') from e
        return self._finish(call, prompt, t0)

    async def acompletion(self, prompt, root_prompt=None):
        """completion() for asyncio: the solve runs on a thread of its own;
        cancelling the task cancels the solve (it waits for the solve to
        end, then raises CancelledError)."""
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        fut = loop.create_future()
        call, t = self._start(prompt, root_prompt)

        def waiter():
            call.done.wait()
            try:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(None))
            except RuntimeError:
                pass  # the loop is closed: nobody awaits
        w = threading.Thread(target=waiter, name='crlm-await', daemon=True)
        try:
            w.start()
        except BaseException:
            _lib.rlm_api_job_cancel(call.job)
            t.join()
            with self._calls_lock:
                self._calls.discard(call)
            call.free()
            raise
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            _lib.rlm_api_job_cancel(call.job)
            # the solve must be over before the job is freed: a second
            # cancel of the task while it winds down waits on too
            while not fut.done():
                try:
                    await asyncio.shield(fut)
                except asyncio.CancelledError:
                    pass
            t.join()
            w.join()
            with self._calls_lock:
                self._calls.discard(call)
            call.free()
            raise
        t.join()
        w.join()
        return self._finish(call, prompt, t0)

    def cancel(self):
        """Cancel every completion of this RLM that is running (from any
        thread): each raises CancellationError with its partial answer."""
        with self._calls_lock:
            for c in self._calls:
                if c.job:
                    _lib.rlm_api_job_cancel(c.job)

    # ---- sessions ----

    def _not_in_callback(self, what):
        if _in_callback_of(self):
            # the session's lock is held by the solve this callback is
            # part of: waiting for it would never end
            raise RuntimeError('%s() cannot be called from a callback or custom tool of this '
                               'RLM (the solve that runs it holds the session); call it '
                               'after completion() returns, or close() to stop the solve'
                               % what)

    def session_info(self):
        """Ours: the persistent session's state (questions, contexts, the
        worker's pid and memory), or None before the first completion."""
        self._not_in_callback('session_info')
        with self._lock:
            if not self._session:
                return None
            return json.loads(_lib.take(_lib.rlm_api_session_info(self._session)))

    def reset(self):
        """Ours: forget the persistent session (its REPL and contexts); the
        next completion starts a new one."""
        self._not_in_callback('reset')
        with self._lock:
            if self._session:
                _lib.rlm_api_session_free(self._session)
                self._session = None

    # ---- life ----

    def _cleanup_tmp(self):
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def close(self):
        """Cancel what runs, end the session's worker and free the client.
        Idempotent. From a callback or a custom tool (a thread a solve
        waits on) it cancels and returns: the last solve to end frees."""
        self._close(wait=not getattr(_in_callback, 'on', False))

    def _close(self, wait):
        with self._calls_lock:
            # under the lock: _start adds no call after this, and _finish
            # frees no job while it is cancelled here
            self._closed = True
            running = list(self._calls)
            idle = self._active == 0
            for c in running:
                if c.job:
                    _lib.rlm_api_job_cancel(c.job)
        if wait:
            # The client must outlive its solves: wait for them.
            for c in running:
                c.done.wait()
            self._release()
        elif idle:
            self._release()
        # else: _solve_ended of the last solve frees

    def _release(self):
        """Free the session, the client and the private store: once, when
        no solve is in C."""
        with self._release_lock:
            with self._lock:
                if self._session:
                    _lib.rlm_api_session_free(self._session)
                    self._session = None
            if self._client:
                _lib.rlm_api_close(self._client)
                self._client = None
            self._cleanup_tmp()
            _live.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
