# SPDX-License-Identifier: MIT
# tests/python/test_crlm.py -- the Python package crlm on the real librlm
# (RLM_LIB) and real sandboxed workers: the reference's constructor
# arguments, contexts, host tools, sessions, callbacks, limits, cancel,
# asyncio, the logger, leaks, and the reference's quickstart. The model is
# a scripted OpenAI-compatible server (fakellm.py) or the simulator.
# Run by tests/python/run.py BUILD (which `make test` calls).
import _thread
import asyncio
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'python'))
sys.path.insert(0, HERE)

import crlm  # noqa: E402
from crlm import RLM  # noqa: E402
from fakellm import Fail, FakeLLM  # noqa: E402


def repl(code):
    return '```repl\n' + code + '\n```'


def then_final(code, var='r'):
    """A root script: run code, then answer with the variable var."""
    return [repl(code), repl('FINAL_VAR(%r)' % var)]


def mk(fake, model='gpt-4o-mini', **kw):
    kw.setdefault('max_iterations', 6)
    return RLM(backend='openai',
               backend_kwargs={'model_name': model, 'base_url': fake.url, 'api_key': 'sk-test'},
               **kw)


def tmpdir(test):
    """A fresh directory, removed when test ends."""
    d = tempfile.mkdtemp(prefix='crlm-test-')
    test.addCleanup(shutil.rmtree, d, True)
    return d


def read(path, encoding='utf-8'):
    with open(path, encoding=encoding) as f:
        return f.read()


def children():
    """Live processes whose parent is this one."""
    me, out = str(os.getpid()), []
    for st in glob.glob('/proc/[0-9]*/stat'):
        try:
            with open(st) as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rfind(')') + 2:].split()
        if fields[1] == me and fields[0] != 'Z':
            out.append(st)
    return out


def ours():
    """Threads of this process but the fake server's."""
    return sum(1 for t in threading.enumerate()
               if t.name != 'fakellm' and 'process_request_thread' not in t.name)


def tasks():
    return len(os.listdir('/proc/self/task'))


def bounded(test, fn, timeout=30):
    """fn() on a thread of its own: {'v': its value} or {'e': its
    exception}; a test failure when it has not returned in timeout s."""
    box = {}

    def go():
        try:
            box['v'] = fn()
        except BaseException as e:
            box['e'] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    test.assertFalse(t.is_alive(), 'still running after %ss: deadlocked' % timeout)
    return box


class TestImports(unittest.TestCase):
    def test_reference_imports(self):
        from crlm.core.types import ModelUsageSummary, RLMChatCompletion, UsageSummary
        from crlm.logger import RLMLogger
        from crlm.utils.exceptions import (BudgetExceededError, CancellationError,
                                           ErrorThresholdExceededError, TimeoutExceededError,
                                           TokenLimitExceededError)
        self.assertIs(RLMLogger, crlm.RLMLogger)
        self.assertIs(BudgetExceededError, crlm.BudgetExceededError)
        for e in (BudgetExceededError, CancellationError, ErrorThresholdExceededError,
                  TimeoutExceededError, TokenLimitExceededError):
            self.assertTrue(issubclass(e, crlm.RLMError))
        u = UsageSummary({'m': ModelUsageSummary(2, 10, 5, 0.5)})
        self.assertEqual(UsageSummary.from_dict(u.to_dict()), u)
        c = RLMChatCompletion('m', 'p', 'r', u, 1.5)
        self.assertEqual(c.to_dict()['usage_summary']['model_usage_summaries']['m']
                         ['total_input_tokens'], 10)
        # printed as the reference's dataclass prints: every field, named
        self.assertEqual(str(c), repr(c))
        self.assertEqual(repr(c), "RLMChatCompletion(root_model='m', prompt='p', response='r', "
                         "usage_summary=UsageSummary(model_usage_summaries={'m': "
                         "ModelUsageSummary(total_calls=2, total_input_tokens=10, "
                         "total_output_tokens=5, total_cost=0.5)}), execution_time=1.5, "
                         "metadata=None)")
        self.assertEqual(RLMChatCompletion.from_dict(c.to_dict()), c)
        self.assertRegex(crlm.__version__, r'^\d+\.\d+\.\d+$')
        # the package and the library are one release
        self.assertEqual(crlm.lib_version().split()[0], crlm.__version__)

    def test_exception_arguments(self):
        e = crlm.BudgetExceededError(1.5, 1.0)
        self.assertEqual((e.spent, e.budget), (1.5, 1.0))
        e = crlm.TimeoutExceededError(3.0, 2.0, 'part', 'msg')
        self.assertEqual((e.elapsed, e.timeout, e.partial_answer, str(e)),
                         (3.0, 2.0, 'part', 'msg'))
        e = crlm.TokenLimitExceededError(10, 5, 'p')
        self.assertEqual((e.tokens_used, e.token_limit), (10, 5))
        e = crlm.ErrorThresholdExceededError(3, 3, 'ValueError', 'p')
        self.assertEqual((e.error_count, e.last_error), (3, 'ValueError'))
        self.assertEqual(crlm.CancellationError('p').partial_answer, 'p')


class TestRefused(unittest.TestCase):
    """Arguments with no meaning here are errors that say what to do."""

    def check(self, exc, pattern, **kw):
        with self.assertRaises(exc) as cm:
            RLM(**kw)
        self.assertRegex(str(cm.exception), pattern)

    def test_environments(self):
        for env in ('docker', 'modal', 'prime', 'daytona', 'e2b', 'ipython', 'whatever'):
            self.check(ValueError, r"environment '%s' is not supported.*sandbox.*"
                       r"environment=\"local\"" % env, backend='sim', environment=env)

    def test_environment_kwargs(self):
        self.check(ValueError, r"unknown key 'image'.*setup_code", backend='sim',
                   environment_kwargs={'image': 'python:3.12'})

    def test_backends(self):
        for b in ('portkey', 'azure_openai', 'gemini', 'litellm', 'bedrock'):
            self.check(ValueError, r"backend '%s' is not supported.*backend='openai'.*base_url"
                       % b, backend=b)
        self.check(ValueError, r'vllm: base_url is required', backend='vllm',
                   backend_kwargs={'model_name': 'x'})
        self.check(ValueError, r"unknown key 'temperatur'", backend='openai',
                   backend_kwargs={'model_name': 'x', 'temperatur': 1})

    def test_gateway_without_key(self):
        old = os.environ.pop('OPENROUTER_API_KEY', None)
        try:
            self.check(ValueError, r'openrouter: no API key.*OPENROUTER_API_KEY',
                       backend='openrouter', backend_kwargs={'model_name': 'x'})
        finally:
            if old is not None:
                os.environ['OPENROUTER_API_KEY'] = old
        os.environ.pop('AI_GATEWAY_API_KEY', None)
        self.check(ValueError, r'vercel: no API key.*AI_GATEWAY_API_KEY', backend='vercel')

    def test_depth_and_others(self):
        self.check(ValueError, r'depth must be 0', backend='sim', depth=1)
        self.check(ValueError, r'max_depth must be >= 1 and at most 16, not 0', backend='sim',
                   max_depth=0)
        self.check(ValueError, r'max_budget must be > 0', backend='sim', max_budget=0)
        self.check(ValueError, r'max_timeout must be > 0', backend='sim', max_timeout=-1)
        self.check(ValueError, r'max_errors must be >= 1', backend='sim', max_errors=0)
        self.check(ValueError, r'compaction_threshold_pct must be > 0 and at most 1',
                   backend='sim', compaction_threshold_pct=1.5)
        self.check(TypeError, r'max_iterations must be an int or None, not str', backend='sim',
                   max_iterations='30')
        self.check(TypeError, r'backend_kwargs must be a dict, not str', backend='openai',
                   backend_kwargs='gpt-5')
        self.check(TypeError, r'other_backends and other_backend_kwargs must be lists',
                   backend='sim', other_backends='openai', other_backend_kwargs={})
        self.check(ValueError, r'exactly one other backend', backend='sim',
                   other_backends=['sim', 'sim'], other_backend_kwargs=[{}, {}])
        self.check(ValueError, r'go together', backend='sim', other_backends=['sim'])

    def test_bad_code(self):
        self.check(ValueError, r'tool_code contains invalid Python syntax', backend='sim',
                   tool_code='def f(:')
        self.check(ValueError, r'setup_code contains invalid Python syntax', backend='sim',
                   environment_kwargs={'setup_code': 'x = = 1'})

    def test_tool_names(self):
        for name in ('llm_query', 'FINAL', 'context', 'answer', 'call_tool', 'SHOW_VARS',
                     'history', 'context_2', 'search'):
            self.check(ValueError, r"custom_tools: '%s' is reserved" % name, backend='sim',
                       custom_tools={name: len})
        self.check(ValueError, r"'not a name' is not a Python identifier", backend='sim',
                   custom_tools={'not a name': 1})
        self.check(ValueError, r"custom_sub_tools: 'rlm_query' is reserved", backend='sim',
                   custom_sub_tools={'rlm_query': 1})
        self.check(TypeError, r"'v' is a set that JSON cannot encode", backend='sim',
                   custom_tools={'v': {1, 2}})

    def test_bad_context(self):
        with RLM(backend='sim') as r:
            with self.assertRaisesRegex(TypeError, r'a set cannot be a context'):
                r.completion({1, 2})
            with self.assertRaisesRegex(TypeError, r'a dict cannot be a context'):
                r.completion({'a': object()})
            with self.assertRaisesRegex(TypeError, r'root_prompt must be a str or None'):
                r.completion('x', root_prompt=['q'])
            # refused by the C side: also a ValueError
            with self.assertRaisesRegex(crlm.RLMArgumentError, r'/no/such/file') as cm:
                import pathlib
                r.completion(pathlib.Path('/no/such/file'), root_prompt='q')
            self.assertIsInstance(cm.exception, ValueError)


class TestSolve(unittest.TestCase):
    def test_contexts(self):
        code = "r = type(context).__name__ + ':' + json.dumps(context, sort_keys=True)"
        fake = FakeLLM(default=then_final('import json\n' + code))
        cases = [('hello', 'str:"hello"'),
                 (['a', 'b'], 'list:["a", "b"]'),
                 ({'k': [1, 2], 'n': None}, 'dict:{"k": [1, 2], "n": null}'),
                 ([{'id': 'x', 'v': 1}, {'id': 'y', 'v': 2}],
                  'list:[{"id": "x", "v": 1}, {"id": "y", "v": 2}]'),
                 (42, 'int:42')]
        with fake, mk(fake) as r:
            for ctx, want in cases:
                with self.subTest(ctx=ctx):
                    c = r.completion(ctx, root_prompt='what is it?')
                    self.assertEqual(c.response, want)
                    self.assertEqual(c.prompt, ctx)
                    self.assertEqual(c.root_model, 'gpt-4o-mini')
                    u = c.usage_summary.model_usage_summaries['gpt-4o-mini']
                    self.assertEqual(u.total_calls, 2)
                    self.assertEqual(u.total_input_tokens, 200)
                    self.assertGreater(c.execution_time, 0)
                    self.assertIsNone(c.metadata)
            # the question went to the root model as asked
            first = fake.root_requests()[0]['messages']
            self.assertTrue(any('what is it?' in str(m.get('content')) for m in first))
            # the key, the model and the endpoint of backend_kwargs
            path, headers, body = fake.requests[0]
            self.assertEqual(body['model'], 'gpt-4o-mini')
            self.assertEqual(headers.get('Authorization'), 'Bearer sk-test')
            self.assertTrue(path.endswith('/chat/completions'))

    def test_path_context(self):
        import pathlib
        d = tmpdir(self)
        for name, text in (('a.txt', 'alpha'), ('b.txt', 'beta')):
            with open(os.path.join(d, name), 'w') as f:
                f.write(text)
        fake = FakeLLM(default=then_final("r = '+'.join(sorted(context))"))
        with fake, mk(fake) as r:
            self.assertEqual(r.completion(pathlib.Path(d), root_prompt='q').response,
                             'alpha+beta')

    def test_setup_code_raises(self):
        fake = FakeLLM(default=then_final("r = 'x'"))
        with fake, mk(fake, environment_kwargs={'setup_code': 'raise ValueError("no index")'}) \
                as r:
            with self.assertRaisesRegex(crlm.RLMError, r'setup code raised: ValueError: no index'):
                r.completion('x', root_prompt='q')
        self.assertEqual(fake.requests, [])

    def test_large_text_context(self):
        text = read('/usr/include/stdio.h', 'latin-1') * 20
        fake = FakeLLM(default=then_final('r = str(len(context))'))
        with fake, mk(fake) as r:
            self.assertEqual(r.completion(text, root_prompt='len?').response, str(len(text)))

    def test_env_endpoint_and_sampling(self):
        fake = FakeLLM(default=then_final("r = 'ok'"))
        old = {k: os.environ.get(k) for k in ('OPENAI_BASE_URL', 'OPENAI_API_KEY')}
        os.environ['OPENAI_BASE_URL'] = fake.url
        os.environ['OPENAI_API_KEY'] = 'sk-from-env'
        try:
            with fake, RLM(backend='openai', backend_kwargs={'model_name': 'm1',
                                                             'reasoning_effort': 'low'},
                           sampling_args={'top_p': 0.5, 'seed': 3}) as r:
                self.assertEqual(r.completion('x', root_prompt='q').response, 'ok')
                _, headers, body = fake.requests[0]
                self.assertEqual(headers.get('Authorization'), 'Bearer sk-from-env')
                self.assertEqual((body.get('top_p'), body.get('seed'),
                                  body.get('reasoning_effort')), (0.5, 3, 'low'))
            # vllm: never the OpenAI key to one's own server
            fake2 = FakeLLM(default=then_final("r = 'ok'"))
            with fake2, RLM(backend='vllm', backend_kwargs={'model_name': 'm',
                                                           'base_url': fake2.url}) as r:
                r.completion('x', root_prompt='q')
                self.assertEqual(fake2.requests[0][1].get('Authorization'), 'Bearer EMPTY')
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_gateways(self):
        for backend, var in (('openrouter', 'OPENROUTER_API_KEY'),
                             ('vercel', 'AI_GATEWAY_API_KEY'), ('vllm', 'VLLM_API_KEY')):
            with self.subTest(backend=backend):
                fake = FakeLLM(default=then_final("r = 'ok'"))
                if var:
                    os.environ[var] = 'key-' + backend
                try:
                    with fake, RLM(backend=backend, backend_kwargs={
                            'model_name': 'm', 'base_url': fake.url}) as r:
                        self.assertEqual(r.completion('x', root_prompt='q').response, 'ok')
                        _, headers, _ = fake.requests[0]
                        self.assertEqual(headers.get('Authorization'), 'Bearer key-' + backend)
                finally:
                    if var:
                        os.environ.pop(var, None)

    def test_anthropic(self):
        fake = FakeLLM(default=then_final("r = 'from claude'"))
        with fake, RLM(backend='anthropic', backend_kwargs={
                'model_name': 'claude-sonnet-4-5', 'api_key': 'ak', 'base_url': fake.url}) as r:
            c = r.completion('x', root_prompt='q')
        self.assertEqual(c.response, 'from claude')
        path, headers, body = fake.requests[0]
        self.assertTrue(path.endswith('/messages'), path)
        self.assertEqual(headers.get('x-api-key') or headers.get('X-Api-Key'), 'ak')
        self.assertEqual(body['model'], 'claude-sonnet-4-5')

    def test_sim_spec(self):
        with RLM(backend='sim', sim='ttft=150ms') as r:
            c = r.completion('The code is 12.', root_prompt='code?')
        calls = sum(m.total_calls for m in c.usage_summary.model_usage_summaries.values())
        self.assertGreaterEqual(c.execution_time, 0.15 * calls)

    def test_gil_released(self):
        n, stop = [0], threading.Event()

        def count():
            while not stop.is_set():
                n[0] += 1
        t = threading.Thread(target=count)
        with RLM(backend='sim', sim='ttft=100ms') as r:
            t.start()
            try:
                before = n[0]
                r.completion('The code is 3.', root_prompt='code?')
                during = n[0] - before
            finally:
                stop.set()
                t.join()
        # ~0.3 s of C work: a thread that held the GIL would leave it at 0
        self.assertGreater(during, 10000)

    def test_sim_backend(self):
        with RLM(backend='sim', backend_kwargs={'model_name': 'sim-1'}) as r:
            c = r.completion('The secret code is 4471.', root_prompt='What is the secret code?')
            self.assertIn('4471', c.response)
            self.assertTrue(c.usage_summary.model_usage_summaries)

    def test_system_prompt_and_tool_prompts(self):
        fake = FakeLLM(default=then_final("r = 'ok'"))
        with fake, mk(fake, tool_prompts=['EXTRA-ONE', 'EXTRA-TWO']) as r:
            r.completion('x', root_prompt='q')
            sysmsg = fake.root_requests()[0]['messages'][0]
            self.assertEqual(sysmsg['role'], 'system')
            self.assertIn('Recursive Language Model', sysmsg['content'])
            self.assertIn('EXTRA-ONE\n\nEXTRA-TWO', sysmsg['content'])
        fake = FakeLLM(default=then_final("r = 'ok'"))
        with fake, mk(fake, custom_system_prompt='YOU ARE A TEST MODEL.') as r:
            r.completion('x', root_prompt='q')
            sysmsg = fake.root_requests()[0]['messages'][0]
            self.assertIn('YOU ARE A TEST MODEL.', sysmsg['content'])
            self.assertNotIn('You are a Recursive Language Model', sysmsg['content'])

    def test_setup_code_and_tool_code(self):
        fake = FakeLLM(default=then_final("r = '%s-%s' % (SETUP, TOOLED)"))
        with fake, mk(fake, environment_kwargs={'setup_code': 'SETUP = 7'},
                      tool_code='TOOLED = SETUP * 2') as r:
            self.assertEqual(r.completion('x', root_prompt='q').response, '7-14')

    def test_max_iterations_returns_last_answer(self):
        fake = FakeLLM(default=[repl("answer['content'] = 'best so far'")])
        with fake, mk(fake, max_iterations=3) as r:
            c = r.completion('x', root_prompt='q')
            self.assertEqual(c.response, 'best so far')
            self.assertEqual(c.stop, 'max_iterations')
            # three turns, then the one last call
            self.assertEqual(len(fake.root_requests()), 4)

    def test_max_depth_and_children(self):
        fake = FakeLLM(scripts={'CHILD-TASK': then_final("r = 'child says hi'"),
                                'ROOT': then_final("r = rlm_query('CHILD-TASK now')")},
                       sub=lambda p: 'PLAIN-SUB')
        with fake, mk(fake, max_depth=2, max_concurrent_subcalls=1) as r:
            self.assertEqual(r.completion('x', root_prompt='ROOT q').response, 'child says hi')
        # max_depth=1: rlm_query is one plain sub-call
        fake = FakeLLM(scripts={'ROOT': then_final("r = rlm_query('CHILD-TASK now')")},
                       sub=lambda p: 'PLAIN-SUB')
        with fake, mk(fake, max_depth=1) as r:
            self.assertEqual(r.completion('x', root_prompt='ROOT q').response, 'PLAIN-SUB')

    def check_concurrency(self, n):
        fake = FakeLLM(scripts={'CHILD-TASK': then_final("r = 'c'"),
                                'ROOT': then_final("r = '+'.join(rlm_query_batched("
                                                   "['CHILD-TASK a', 'CHILD-TASK b', "
                                                   "'CHILD-TASK c']))")})
        fake.child_tag, fake.sub_delay = 'CHILD-TASK', 0.3
        with fake, mk(fake, max_depth=2, max_concurrent_subcalls=n) as r:
            self.assertEqual(r.completion('x', root_prompt='ROOT q').response, 'c+c+c')
        return fake.max_inflight

    def test_max_concurrent_subcalls(self):
        self.assertEqual(self.check_concurrency(1), 1)
        self.assertGreaterEqual(self.check_concurrency(3), 2)

    def test_compaction(self):
        for on in (False, True):
            with self.subTest(compaction=on):
                # gpt-4o-mini's window is 128,000 tokens: 2% of it is
                # passed by the third turn of ~3,000 bytes each
                pad = '# ' + 'padding ' * 400 + '\n'
                fake = FakeLLM(default=[repl(pad + 'x = 1'), repl(pad + 'x += 1'),
                                        repl(pad + 'x += 1'), repl(pad + 'x += 0'),
                                        repl('FINAL_VAR("x")')])
                with fake, mk(fake, compaction=on, compaction_threshold_pct=0.02) as r:
                    c = r.completion('x', root_prompt='q')
                self.assertEqual(c.response, '3')
                n = c.result['repl']['compactions']
                self.assertTrue(n >= 1 if on else n == 0, n)

    def test_other_backends(self):
        fake = FakeLLM(default=then_final("r = llm_query('hello sub')"),
                       sub=lambda p: 'from-sub')
        with fake, mk(fake, other_backends=['openai'],
                      other_backend_kwargs=[{'model_name': 'sub-model', 'base_url': fake.url,
                                             'api_key': 'sk-sub'}],
                      sub_sampling_args={'top_p': 0.25}) as r:
            c = r.completion('x', root_prompt='q')
            self.assertEqual(c.response, 'from-sub')
            subs = [(h, b) for _, h, b in fake.requests if b.get('model') == 'sub-model']
            self.assertEqual(len(subs), 1)
            self.assertEqual(subs[0][0].get('Authorization'), 'Bearer sk-sub')
            self.assertEqual(subs[0][1].get('top_p'), 0.25)
            self.assertEqual(set(c.usage_summary.model_usage_summaries),
                             {'gpt-4o-mini', 'sub-model'})

    def test_compaction_and_schema(self):
        fake = FakeLLM(default=then_final("r = {'n': 3}"))
        with fake, mk(fake, compaction=True, compaction_threshold_pct=0.5,
                      schema={'type': 'object', 'properties': {'n': {'type': 'integer'}},
                              'required': ['n']}) as r:
            c = r.completion('x', root_prompt='q')
            self.assertEqual(json.loads(c.response), {'n': 3})
            self.assertEqual(c.answer_json, {'n': 3})

    def test_cache(self):
        d = tmpdir(self)
        fake = FakeLLM(default=then_final("r = 'cached'"))
        with fake:
            for i in range(2):
                with mk(fake, cache=os.path.join(d, 'store.db')) as r:
                    self.assertEqual(r.completion('x', root_prompt='q').response, 'cached')
            # the second solve came from the store
            self.assertEqual(len(fake.requests), 2)


    def test_anthropic_no_reasoning_effort(self):
        # the Messages API has no reasoning_effort: never sent there
        fake = FakeLLM(default=then_final("r = 'ok'"))
        with fake, RLM(backend='anthropic', backend_kwargs={
                'model_name': 'claude-sonnet-4-5', 'api_key': 'ak', 'base_url': fake.url,
                'reasoning_effort': 'high'},
                sampling_args={'reasoning_effort': 'low', 'temperature': 0.5},
                other_backends=['anthropic'], other_backend_kwargs=[{
                    'model_name': 'claude-haiku-4-5', 'api_key': 'ak', 'base_url': fake.url}],
                sub_sampling_args={'reasoning_effort': 'low', 'top_k': 5}) as r:
            self.assertEqual(r.completion('x', root_prompt='q').response, 'ok')
        _, _, body = fake.requests[0]
        self.assertNotIn('reasoning_effort', body)
        self.assertEqual(body.get('temperature'), 0.5)

    def test_incomplete(self):
        def sub(prompt):
            raise Fail(400, 'bad sub request')
        ask = repl("r = llm_query('hello')\nprint(r)")
        fake = FakeLLM(scripts={'BLANK': [ask, repl("FINAL('')")],
                                'NONE': [ask, repl("FINAL('NONE')")]}, sub=sub)
        with fake, mk(fake) as r:
            # a blank answer over failures is no answer: an error
            with self.assertRaises(crlm.RLMError) as cm:
                r.completion('x', root_prompt='BLANK q')
            self.assertNotIsInstance(cm.exception, crlm.CancellationError)
            self.assertEqual(cm.exception.code, 'incomplete')
            self.assertRegex(str(cm.exception),
                             r'^the solve is incomplete: 1 sub-call failed .*bad sub request')
            self.assertEqual(cm.exception.result['stop'], 'incomplete')
            # NONE is an answer: it returns, and .stop tells
            c = r.completion('x', root_prompt='NONE q')
            self.assertEqual((c.response, c.stop), ('NONE', 'incomplete'))


class TestTools(unittest.TestCase):
    def test_callable_and_value(self):
        seen = []

        def fetch_stock_price(symbol, currency='USD'):
            """Price of a stock symbol."""
            seen.append((symbol, currency, threading.get_ident()))
            return {'symbol': symbol, 'price': 123.5, 'currency': currency}

        def broken():
            raise ValueError('no such market')
        code = ("p = fetch_stock_price('AAPL', currency='EUR')\n"
                "try:\n    broken()\n    e = 'none'\nexcept Exception as x:\n    e = str(x)\n"
                "r = '%s %s %s | %s | %s' % (p['symbol'], p['price'], p['currency'], e, "
                "RATES['eur'])")
        fake = FakeLLM(default=then_final(code))
        with fake, mk(fake, custom_tools={
                'fetch_stock_price': fetch_stock_price,
                'broken': {'tool': broken, 'description': 'always fails'},
                'RATES': {'tool': {'eur': 0.9}, 'description': 'exchange rates'}}) as r:
            c = r.completion('x', root_prompt='q')
        self.assertEqual(seen[0][:2], ('AAPL', 'EUR'))
        self.assertNotEqual(seen[0][2], threading.get_ident())
        self.assertRegex(c.response, r'^AAPL 123.5 EUR \| .*ValueError: no such market.* \| 0.9$')
        sysmsg = fake.root_requests()[0]['messages'][0]['content']
        self.assertIn("fetch_stock_price(symbol, currency='USD')`: Price of a stock symbol.",
                      sysmsg)
        self.assertIn('broken()`: always fails', sysmsg)
        self.assertIn('`RATES` (dict): exchange rates', sysmsg)

    def test_async_tool_and_kwargs_only(self):
        async def slow_double(x):
            """Twice x, later."""
            await asyncio.sleep(0.01)
            return 2 * x
        fake = FakeLLM(default=then_final("r = str(slow_double(x=21))"))
        with fake, mk(fake, custom_tools={'slow_double': slow_double}) as r:
            self.assertEqual(r.completion('x', root_prompt='q').response, '42')

    def test_discovery(self):
        def lookup(key):
            """Look a key up in the host's table."""
            return key.upper()
        code = ("hits = search_tools('look a key up')\n"
                "r = '%s|%s' % (hits[0]['name'] if hits else 'none', "
                "call_tool('host.lookup', {'args': ['k'], 'kwargs': {}}))")
        fake = FakeLLM(default=then_final(code))
        with fake, mk(fake, custom_tools={'lookup': lookup}) as r:
            self.assertEqual(r.completion('x', root_prompt='q').response, 'host.lookup|K')

    def test_root_and_sub_functions_differ(self):
        with self.assertRaisesRegex(ValueError, r"'f' two different functions"):
            RLM(backend='sim', custom_tools={'f': len}, custom_sub_tools={'f': str})
        # a value for the root, a function for the children
        with RLM(backend='sim', custom_tools={'f': 1}, custom_sub_tools={'f': str}):
            pass

    def check_sub(self, sub_tools, want):
        child = then_final("try:\n    r = str(lookup(2))\nexcept NameError:\n    r = 'none'")
        fake = FakeLLM(scripts={'CHILD-TASK': child,
                                'ROOT': then_final("r = lookup(1) + '/' + "
                                                   "rlm_query('CHILD-TASK now')")})
        with fake, mk(fake, max_depth=2, custom_tools={'lookup': lambda n: 'v%d' % n},
                      custom_sub_tools=sub_tools) as r:
            self.assertEqual(r.completion('x', root_prompt='ROOT q').response, want)

    def test_sub_tools_default_is_same(self):
        self.check_sub(None, 'v1/v2')

    def test_sub_tools_none(self):
        self.check_sub({}, 'v1/none')


    def test_result_not_json(self):
        def nan():
            return {'x': float('nan')}

        def inf():
            return [1, float('-inf')]
        code = ("out = []\nfor f in (nan, inf):\n    try:\n        out.append(repr(f()))\n"
                "    except Exception as e:\n        out.append(str(e))\nr = ' | '.join(out)")
        fake = FakeLLM(default=then_final(code))
        with fake, mk(fake, custom_tools={'nan': nan, 'inf': inf}) as r:
            c = r.completion('x', root_prompt='q')
        self.assertRegex(c.response, r'^[^|]*tool result is not JSON: NaN[^|]*\| '
                         r'[^|]*tool result is not JSON: -Infinity')


class TestSession(unittest.TestCase):
    def test_persistent_three_calls(self):
        fake = FakeLLM(scripts={
            'Q1': then_final("x = 1\nr = str(x)"),
            'Q2': then_final("x += 1\nr = '%d %s' % (x, context_1)"),
            'Q3': then_final("x += 1\nr = '%d %s %s %s %d' % (x, context, context_1, context_2,"
                             " len(history))")})
        with fake, mk(fake, persistent=True) as r:
            self.assertEqual(r.completion('c0', root_prompt='Q1').response, '1')
            self.assertEqual(r.completion('c1', root_prompt='Q2').response, '2 c1')
            self.assertEqual(r.completion('c2', root_prompt='Q3').response, '3 c0 c1 c2 2')
            info = r.session_info()
            self.assertEqual(info['questions'], 3)

    def test_not_persistent_forgets(self):
        fake = FakeLLM(scripts={'Q1': then_final("x = 1\nr = 'set'"),
                                'Q2': then_final("r = str('x' in dir())")})
        with fake, mk(fake) as r:
            r.completion('c0', root_prompt='Q1')
            self.assertEqual(r.completion('c1', root_prompt='Q2').response, 'False')


class TestCallbacks(unittest.TestCase):
    def test_order_and_thread(self):
        log, active, bad = [], [0], []
        lock = threading.Lock()
        main = threading.get_ident()

        def cb(name):
            def f(*a):
                with lock:
                    active[0] += 1
                    if active[0] > 1:
                        bad.append('concurrent')
                if threading.get_ident() == main:
                    bad.append('on the main thread')
                log.append((name,) + a)
                time.sleep(0.01)
                with lock:
                    active[0] -= 1
            return f
        fake = FakeLLM(scripts={'CHILD-TASK': then_final("r = 'c'"),
                                'ROOT': then_final("r = rlm_query('CHILD-TASK now')")})
        with fake, mk(fake, max_depth=2, on_iteration_start=cb('it_start'),
                      on_iteration_complete=cb('it_done'), on_subcall_start=cb('sub_start'),
                      on_subcall_complete=cb('sub_done')) \
                as r:
            self.assertEqual(r.completion('x', root_prompt='ROOT q').response, 'c')
        self.assertEqual(bad, [])
        root = [e for e in log if e[0].startswith('it') and e[1] == 0]
        self.assertEqual([(e[0], e[2]) for e in root],
                         [('it_start', 1), ('it_done', 1), ('it_start', 2), ('it_done', 2)])
        self.assertTrue(all(e[3] >= 0 for e in root if e[0] == 'it_done'))
        subs = [e for e in log if e[0].startswith('sub')]
        self.assertEqual([e[0] for e in subs], ['sub_start', 'sub_done'])
        self.assertEqual(subs[0][2], 'gpt-4o-mini')
        self.assertIn('CHILD-TASK', subs[0][3])
        self.assertIsNone(subs[1][4])
        # the child's own iterations come between the subcall's start and end
        i0, i1 = log.index(subs[0]), log.index(subs[1])
        self.assertTrue(any(e[0] == 'it_start' and e[1] == 1 for e in log[i0:i1]))

    def test_callback_exception_is_printed(self):
        code = ('import sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n'
                'from crlm import RLM; from fakellm import FakeLLM\n'
                'f = FakeLLM(default=["```repl\\nr = 1\\n```",'
                ' "```repl\\nFINAL_VAR(\'r\')\\n```"])\n'
                'def boom(*a): raise RuntimeError("callback broke")\n'
                'r = RLM(backend_kwargs={"model_name": "m", "base_url": f.url, "api_key": "k"},'
                ' on_iteration_start=boom)\n'
                'print("RESULT", r.completion("x", root_prompt="q").response)\n'
                'r.close(); f.close()\n') % (os.path.join(HERE, '..', '..', 'python'), HERE)
        p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                           timeout=60)
        self.assertIn('RESULT 1', p.stdout, p.stderr)
        self.assertIn('RuntimeError: callback broke', p.stderr)

    def test_verbose(self):
        code = ('import sys; sys.path.insert(0, %r)\nfrom crlm import RLM\n'
                'r = RLM(backend="sim", verbose=True)\n'
                'print("RESULT", r.completion("The code is 99.", root_prompt="code?").response)\n'
                'r.close()\n') % os.path.join(HERE, '..', '..', 'python')
        p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                           timeout=60)
        self.assertIn('RESULT', p.stdout, p.stderr)
        self.assertRegex(p.stderr, r'\[crlm +[0-9.]+s\] --- iteration 1 ---')
        self.assertRegex(p.stderr, r'\[crlm +[0-9.]+s\] root call: \d+ in, \d+ out tokens')
        self.assertRegex(p.stderr, r'\[crlm\] final answer \(answer, [0-9.]+s\): .*99')


    def test_iterations_never_past_max(self):
        # the last call after max_iterations turns is no iteration
        log = []
        fake = FakeLLM(default=[repl("answer['content'] = 'so far'")])
        with fake, mk(fake, max_iterations=2,
                      on_iteration_start=lambda d, i: log.append(('start', d, i)),
                      on_iteration_complete=lambda d, i, t: log.append(('done', d, i))) as r:
            c = r.completion('x', root_prompt='q')
        self.assertEqual(c.stop, 'max_iterations')
        self.assertEqual(len(fake.root_requests()), 3)
        self.assertEqual(log, [('start', 0, 1), ('done', 0, 1), ('start', 0, 2),
                               ('done', 0, 2)])


class TestClose(unittest.TestCase):
    """close() from a thread a solve waits on: cancel, and the last solve
    to end frees."""

    def test_close_from_callback(self):
        fake = FakeLLM(default=SLOW)
        seen = []
        holder = []

        def on_start(depth, it):
            seen.append(it)
            if it == 2:
                holder[0].close()
                seen.append('closed')
        with fake, mk(fake, max_iterations=200, on_iteration_start=on_start) as r:
            holder.append(r)
            box = bounded(self, lambda: r.completion('x', root_prompt='q'))
            if 'e' in box:
                self.assertIsInstance(box['e'], crlm.CancellationError)
            self.assertIn('closed', seen)
            self.assertLessEqual(max(x for x in seen if isinstance(x, int)), 3)
            # freed by the solve's own thread once it ended
            self.assertIsNone(r._client)
            with self.assertRaisesRegex(crlm.RLMError, r'closed'):
                r.completion('x', root_prompt='q')

    def test_close_from_tool_persistent(self):
        holder = []

        def stop():
            holder[0].close()
            return 'stopped'
        fake = FakeLLM(scripts={'Q1': then_final("r = 'first'"),
                                'Q2': [repl("s = stop()\nprint(s)")] + SLOW})
        with fake, mk(fake, max_iterations=200, persistent=True,
                      custom_tools={'stop': stop}) as r:
            holder.append(r)
            self.assertEqual(r.completion('c0', root_prompt='Q1').response, 'first')
            box = bounded(self, lambda: r.completion('c1', root_prompt='Q2'))
            if 'e' in box:
                self.assertIsInstance(box['e'], crlm.CancellationError)
            self.assertIsNone(r._client)
            self.assertIsNone(r._session)
            with self.assertRaisesRegex(crlm.RLMError, r'closed'):
                r.completion('c2', root_prompt='Q1')

    def test_session_calls_from_callback_refused(self):
        holder, out = [], []

        def peek():
            for f in (holder[0].session_info, holder[0].reset):
                try:
                    f()
                    out.append('ran')
                except RuntimeError as e:
                    out.append(str(e))
            return 'peeked'
        fake = FakeLLM(default=then_final("r = peek()"))
        with fake, mk(fake, persistent=True, custom_tools={'peek': peek}) as r:
            holder.append(r)
            box = bounded(self, lambda: r.completion('x', root_prompt='q'))
            self.assertEqual(box['v'].response, 'peeked')
            self.assertEqual(len(out), 2)
            self.assertRegex(out[0], r'^session_info\(\) cannot be called from a callback')
            self.assertRegex(out[1], r'^reset\(\) cannot be called from a callback')
            self.assertEqual(r.session_info()['questions'], 1)


class TestLimits(unittest.TestCase):
    def test_budget(self):
        # gpt-4o-mini costs $0.15 per million input tokens: $0.15 a call
        fake = FakeLLM(default=[repl("answer['content'] = 'partial'")], usage=(1000000, 10))
        with fake, mk(fake, max_iterations=20, max_budget=0.2) as r:
            with self.assertRaises(crlm.BudgetExceededError) as cm:
                r.completion('x', root_prompt='q')
        self.assertEqual(cm.exception.budget, 0.2)
        self.assertGreaterEqual(cm.exception.spent, 0.2)
        self.assertLess(len(fake.requests), 20)

    def test_budget_price_file(self):
        d = tmpdir(self)
        prices = os.path.join(d, 'prices.json')
        with open(prices, 'w') as f:
            json.dump({'house-model': {'input': 100, 'output': 0}}, f)
        # 1,000 input tokens at $100 per million: $0.10 a call
        fake = FakeLLM(default=[repl("answer['content'] = 'partial'")], usage=(1000, 10))
        with fake, mk(fake, model='house-model', prices=prices, max_iterations=20,
                      max_budget=0.25) as r:
            with self.assertRaises(crlm.BudgetExceededError) as cm:
                r.completion('x', root_prompt='q')
        # the price file's price, for every call made; it stops before a
        # call that could pass the budget
        self.assertAlmostEqual(cm.exception.spent, 0.1 * len(fake.requests), places=6)
        self.assertIn(len(fake.requests), (2, 3))
        self.assertIn('0.25', str(cm.exception))

    def test_timeout(self):
        fake = FakeLLM(default=[repl("import time\ntime.sleep(0.3)\nanswer['content'] = 'part'")])
        with fake, mk(fake, max_iterations=100, max_timeout=1.5) as r:
            t0 = time.monotonic()
            with self.assertRaises(crlm.TimeoutExceededError) as cm:
                r.completion('x', root_prompt='q')
            self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(cm.exception.timeout, 1.5)
        self.assertGreaterEqual(cm.exception.elapsed, 1.4)
        self.assertEqual(cm.exception.partial_answer, 'part')

    def test_tokens(self):
        fake = FakeLLM(default=[repl("answer['content'] = 'p'")], usage=(1000, 10))
        with fake, mk(fake, max_iterations=20, max_tokens=2500) as r:
            with self.assertRaises(crlm.TokenLimitExceededError) as cm:
                r.completion('x', root_prompt='q')
        self.assertEqual(cm.exception.token_limit, 2500)
        # 1010 tokens a call: it stops once the next call cannot fit
        self.assertGreaterEqual(cm.exception.tokens_used, 2020)
        self.assertEqual(cm.exception.partial_answer, 'p')

    def test_errors(self):
        fake = FakeLLM(default=[repl("raise ValueError('boom')")])
        with fake, mk(fake, max_iterations=20, max_errors=2) as r:
            with self.assertRaises(crlm.ErrorThresholdExceededError) as cm:
                r.completion('x', root_prompt='q')
        self.assertEqual(cm.exception.threshold, 2)
        self.assertEqual(cm.exception.error_count, 2)
        self.assertEqual(cm.exception.last_error, 'ValueError: boom')
        self.assertEqual(len(fake.root_requests()), 2)

    def test_no_error_limit_by_default(self):
        fake = FakeLLM(default=[repl("raise ValueError('boom')")] * 8 +
                       [repl("FINAL('survived')")])
        with fake, mk(fake, max_iterations=12) as r:
            self.assertEqual(r.completion('x', root_prompt='q').response, 'survived')

    def test_max_calls(self):
        fake = FakeLLM(default=[repl('print(1)')])
        with fake, mk(fake, max_iterations=20, max_calls=3) as r:
            with self.assertRaises(crlm.CallLimitExceededError):
                r.completion('x', root_prompt='q')
        self.assertLessEqual(len(fake.requests), 4)

    def test_failure(self):
        # nothing listens on port 1
        with RLM(backend='openai', backend_kwargs={'model_name': 'm', 'api_key': 'k',
                                                   'base_url': 'http://127.0.0.1:1/v1'}) as r:
            with self.assertRaises(crlm.RLMError) as cm:
                r.completion('x', root_prompt='q')
        self.assertNotIsInstance(cm.exception, crlm.CancellationError)
        self.assertTrue(cm.exception.message)


SLOW = [repl("import time\ntime.sleep(0.2)\nanswer['content'] = 'so far'")]


class TestCancel(unittest.TestCase):
    def test_cancel_from_thread(self):
        fake = FakeLLM(default=SLOW)
        with fake, mk(fake, max_iterations=200) as r:
            threading.Timer(0.8, r.cancel).start()
            t0 = time.monotonic()
            with self.assertRaises(crlm.CancellationError) as cm:
                r.completion('x', root_prompt='q')
            self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(cm.exception.partial_answer, 'so far')

    def test_keyboard_interrupt(self):
        fake = FakeLLM(default=SLOW)
        with fake, mk(fake, max_iterations=200) as r:
            before = ours()
            threading.Timer(0.8, _thread.interrupt_main).start()
            with self.assertRaises(crlm.CancellationError) as cm:
                r.completion('x', root_prompt='q')
            self.assertEqual(cm.exception.partial_answer, 'so far')
            time.sleep(0.1)
            self.assertLessEqual(ours(), before)

    def test_sigint_subprocess(self):
        fake = FakeLLM(default=SLOW)
        code = ('import sys; sys.path.insert(0, %r)\nfrom crlm import RLM, CancellationError\n'
                'r = RLM(backend_kwargs={"model_name": "m", "base_url": %r, "api_key": "k"},'
                ' max_iterations=500)\n'
                'print("READY", flush=True)\n'
                'try:\n    r.completion("x", root_prompt="q")\n'
                'except CancellationError as e:\n    print("CANCELLED", e.partial_answer)\n'
                'r.close()\n') % (os.path.join(HERE, '..', '..', 'python'), fake.url)
        with fake:
            p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.stdout.readline().strip(), 'READY')
            time.sleep(1.0)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn('CANCELLED so far', out)

    def test_acompletion(self):
        fake = FakeLLM(scripts={'FAST': then_final("r = 'async ok'")}, default=SLOW)
        with fake, mk(fake, max_iterations=200) as r:
            c = asyncio.run(r.acompletion('x', root_prompt='FAST q'))
            self.assertEqual(c.response, 'async ok')

            async def two():
                a = r.acompletion('x', root_prompt='FAST 1')
                b = r.acompletion('x', root_prompt='FAST 2')
                return await asyncio.gather(a, b)
            self.assertEqual([c.response for c in asyncio.run(two())], ['async ok'] * 2)

            async def cancelled():
                task = asyncio.ensure_future(r.acompletion('x', root_prompt='slow'))
                await asyncio.sleep(0.8)
                task.cancel()
                t0 = time.monotonic()
                try:
                    await task
                except asyncio.CancelledError:
                    return time.monotonic() - t0
                return None
            before = ours()
            took = asyncio.run(cancelled())
            self.assertIsNotNone(took)
            self.assertLess(took, 5)
            self.assertLessEqual(ours(), before)


    def test_acompletion_cancelled_twice(self):
        fake = FakeLLM(scripts={'FAST': then_final("r = 'async ok'")}, default=SLOW)
        with fake, mk(fake, max_iterations=200) as r:
            async def twice():
                task = asyncio.ensure_future(r.acompletion('x', root_prompt='slow'))
                await asyncio.sleep(0.8)
                task.cancel()
                await asyncio.sleep(0.01)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    return 'cancelled'
            self.assertEqual(asyncio.run(twice()), 'cancelled')
            # the solve was over, and its call gone, when the task ended
            self.assertEqual(len(r._calls), 0)
            self.assertEqual(r.completion('x', root_prompt='FAST q').response, 'async ok')

    def test_thread_start_fails(self):
        real = threading.Thread.start

        def start(th, name):
            if th.name == name:
                raise RuntimeError("can't start new thread")
            return real(th)
        fake = FakeLLM(default=then_final("r = 'ok'"))
        with fake, mk(fake) as r:
            for name in ('crlm-solve', 'crlm-await'):
                with self.subTest(thread=name):
                    with unittest.mock.patch.object(
                            threading.Thread, 'start', lambda th: start(th, name)):
                        with self.assertRaisesRegex(RuntimeError, "can't start new thread"):
                            if name == 'crlm-solve':
                                r.completion('x', root_prompt='q')
                            else:
                                asyncio.run(r.acompletion('x', root_prompt='q'))
                    self.assertEqual(len(r._calls), 0)
                    self.assertEqual(r._active, 0)
            self.assertEqual(r.completion('x', root_prompt='q').response, 'ok')

    def test_exit_with_solve_running(self):
        # a daemon thread's solve at interpreter exit: cancelled and waited
        # for by the atexit hook, no hang and no crash
        fake = FakeLLM(default=SLOW)
        code = ('import atexit, sys, threading, time; sys.path.insert(0, %r)\n'
                # registered first, so run after crlm's hook
                'atexit.register(lambda: print("AT EXIT solves over: %%s" %%'
                ' all(c.done.is_set() for c in list(r._calls)), flush=True))\n'
                'from crlm import RLM\n'
                'r = RLM(backend_kwargs={"model_name": "m", "base_url": %r, "api_key": "k"},'
                ' max_iterations=500)\n'
                'def go():\n    try:\n        r.completion("x", root_prompt="q")\n'
                '    except Exception as e:\n        print("ENDED " + type(e).__name__, flush=True)\n'
                'threading.Thread(target=go, daemon=True).start()\n'
                'time.sleep(1.0)\nprint("EXITING", flush=True)\n') % (
                    os.path.join(HERE, '..', '..', 'python'), fake.url)
        with fake:
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                               timeout=60)
            took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('EXITING', p.stdout)
        self.assertIn('AT EXIT solves over: True', p.stdout)
        self.assertNotIn('Fatal Python error', p.stderr)
        self.assertLess(took, 20)


class TestLogger(unittest.TestCase):
    def test_jsonl_file(self):
        d = tmpdir(self)
        logger = crlm.RLMLogger(log_dir=d, file_name='trial')
        fake = FakeLLM(default=[repl('x = 6 * 7\nprint(x)'), repl("FINAL(str(x))")])
        with fake, mk(fake, logger=logger) as r:
            c = r.completion('ctx', root_prompt='q')
            c2 = r.completion('ctx', root_prompt='q again')
        self.assertEqual(c.response, '42')
        self.assertEqual(c2.response, '42')
        files = os.listdir(d)
        self.assertEqual(len(files), 1)
        self.assertRegex(files[0], r'^trial_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_[0-9a-f]{8}\.jsonl$')
        lines = [json.loads(x) for x in read(os.path.join(d, files[0])).splitlines()]
        self.assertEqual(lines[0]['type'], 'metadata')
        self.assertIn('root_model', lines[0])
        its = [x for x in lines[1:] if x['type'] == 'iteration']
        self.assertEqual(len(its), len(lines) - 1)
        self.assertEqual(len(its), 4)  # two turns of each completion
        self.assertEqual([x['iteration'] for x in its[:2]], [1, 2])
        for it in its:
            for k in ('prompt', 'response', 'code_blocks', 'timestamp', 'final_answer',
                      'iteration_time'):
                self.assertIn(k, it)
        self.assertIn('x = 6 * 7', its[0]['code_blocks'][0]['code'])
        res = its[0]['code_blocks'][0]['result']
        self.assertTrue(res['stdout'].startswith('42\n'))
        for k in ('stderr', 'locals', 'execution_time', 'rlm_calls'):
            self.assertIn(k, res)
        self.assertEqual(its[1]['final_answer'], '42')
        self.assertEqual(lines[0]['root_model'], 'gpt-4o-mini')
        self.assertEqual(lines[0]['backend'], 'openai')
        self.assertEqual(c.metadata['run_metadata']['type'], 'metadata')
        self.assertEqual(len(c.metadata['iterations']), 2)
        self.assertEqual(c.to_dict()['metadata'], c.metadata)
        # two solves, two fresh runs: the private store is never read from
        self.assertEqual(len(fake.root_requests()), 4)

    def test_in_memory(self):
        logger = crlm.RLMLogger()
        fake = FakeLLM(default=then_final("r = 'm'"))
        with fake, mk(fake, logger=logger) as r:
            c = r.completion('ctx', root_prompt='q')
        self.assertIsNone(logger.log_file_path)
        self.assertEqual(len(c.metadata['iterations']), 2)
        self.assertIs(logger.get_trajectory(), c.metadata)


    def test_limit_is_recorded(self):
        d = tmpdir(self)
        logger = crlm.RLMLogger(log_dir=d)
        fake = FakeLLM(default=[repl("raise ValueError('boom')")])
        with fake, mk(fake, max_iterations=20, max_errors=2, logger=logger) as r:
            with self.assertRaises(crlm.ErrorThresholdExceededError):
                r.completion('x', root_prompt='q')
        traj = logger.get_trajectory()
        self.assertIsNotNone(traj)
        self.assertEqual(traj['run_metadata']['type'], 'metadata')
        self.assertEqual(len(traj['iterations']), 2)
        lines = [json.loads(x) for x in read(logger.log_file_path).splitlines()]
        self.assertEqual([x['type'] for x in lines], ['metadata', 'iteration', 'iteration'])

    def test_metadata_once_across_threads(self):
        d = tmpdir(self)
        logger = crlm.RLMLogger(log_dir=d)
        jsonl = '\n'.join([json.dumps({'type': 'metadata', 'root_model': 'm'})] +
                          [json.dumps({'type': 'iteration', 'iteration': i, 'pad': 'x' * 500})
                           for i in range(300)])
        n = 8
        barrier = threading.Barrier(n)

        def go():
            barrier.wait()
            logger._record(jsonl)
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            ts = [threading.Thread(target=go) for _ in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        finally:
            sys.setswitchinterval(old)
        types = [json.loads(x)['type'] for x in read(logger.log_file_path).splitlines()]
        self.assertEqual(types.count('metadata'), 1)
        self.assertEqual(types[0], 'metadata')
        self.assertEqual(types.count('iteration'), 300 * n)


class TestLeaks(unittest.TestCase):
    def test_hundred_completions(self):
        threads0, kids0 = threading.active_count(), len(children())
        with RLM(backend='sim', max_iterations=5) as r:
            for i in range(10):  # the pool and the zygote are up after these
                r.completion('The number is 5.', root_prompt='What is the number?')
            tasks1, kids1 = tasks(), len(children())
            for i in range(100):
                c = r.completion('The number is %d.' % i, root_prompt='What is the number?')
                self.assertIn(str(i), c.response)
            self.assertEqual(threading.active_count(), threads0)
            self.assertLessEqual(tasks(), tasks1 + 2)
            self.assertLessEqual(len(children()), kids1)
        deadline = time.monotonic() + 5
        while len(children()) > kids0 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(children()), kids0)
        self.assertEqual(threading.active_count(), threads0)


class TestQuickstart(unittest.TestCase):
    def test_reference_quickstart(self):
        rlm_bin = os.environ.get('RLM_BIN')
        if not rlm_bin or not os.access(rlm_bin, os.X_OK):
            self.skipTest('RLM_BIN is not set to the rlm binary')
        d = tmpdir(self)
        ready = os.path.join(d, 'port')
        srv = subprocess.Popen([rlm_bin, 'sim-serve', '--port', '0', '--ready-file', ready,
                                '--quiet'])
        try:
            deadline = time.monotonic() + 10
            while not (os.path.exists(ready) and read(ready).strip()):
                self.assertLess(time.monotonic(), deadline, 'sim-serve did not start')
                time.sleep(0.05)
            port = int(read(ready).strip())
            env = dict(os.environ, OPENAI_BASE_URL='http://127.0.0.1:%d/v1' % port,
                       OPENAI_API_KEY='sk-sim',
                       PYTHONPATH=os.path.join(HERE, '..', '..', 'python'))
            p = subprocess.run([sys.executable, os.path.join(HERE, 'quickstart.py')], env=env,
                               capture_output=True, text=True, timeout=120)
        finally:
            srv.terminate()
            srv.wait(10)
        self.assertEqual(p.returncode, 0, p.stderr)
        # the simulator computes the powers in the REPL: 2**0 .. 2**99
        self.assertEqual(p.stdout.split(), [str(2 ** i) for i in range(100)], p.stderr)
        self.assertIn('[crlm] final answer', p.stderr)  # verbose=True
        self.assertIn('--- iteration 1 ---', p.stderr)


class TestRunner(unittest.TestCase):
    """tests/python/run.py's sanitizer check: a clang -fsanitize shared
    library NEEDs no runtime, it leaves the runtime's symbols undefined;
    gcc's ASan build NEEDs libasan, which run.py preloads."""

    def test_sanitizer_symbols(self):
        cc = shutil.which('cc') or shutil.which('gcc')
        if not cc or not shutil.which('readelf'):
            self.skipTest('no cc or readelf')
        import run
        d = tmpdir(self)
        libs = {}
        for name, body in (('san', 'extern void __asan_report_load8(unsigned long);\n'
                                    'void f(unsigned long p) { __asan_report_load8(p); }\n'),
                           ('plain', 'int f(int x) { return x + 1; }\n')):
            src = os.path.join(d, name + '.c')
            with open(src, 'w') as f:
                f.write(body)
            libs[name] = os.path.join(d, 'lib%s.so' % name)
            subprocess.run([cc, '-shared', '-fPIC', '-o', libs[name], src], check=True)
        self.assertRegex(run.sanitizer(libs['san']) or '', r'__asan_report_load8')
        self.assertIsNone(run.sanitizer(libs['plain']))
        # neither NEEDs gcc's libasan: no run under ASan, the first skips
        self.assertIsNone(run.asan_runtime(libs['san']))
        self.assertIsNone(run.asan_runtime(libs['plain']))
        if os.environ.get('CRLM_TEST_ASAN'):
            # an ASan build: these tests run in a python3 with its runtime
            self.assertRegex(run.sanitizer(os.environ['RLM_LIB']), r'libasan')
            self.assertEqual(run.asan_runtime(os.environ['RLM_LIB']),
                             os.environ['CRLM_TEST_ASAN'])
            self.assertIn(os.environ['CRLM_TEST_ASAN'], os.environ.get('LD_PRELOAD', ''))
        else:
            self.assertIsNone(run.sanitizer(os.environ['RLM_LIB']))


if __name__ == '__main__':
    unittest.main()
