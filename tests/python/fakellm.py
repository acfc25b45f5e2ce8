# SPDX-License-Identifier: MIT
# tests/python/fakellm.py -- a scripted OpenAI-compatible chat completions
# server on 127.0.0.1 (an ephemeral port) for crlm's tests: it plays the
# root model (and its children and sub-calls) with replies chosen by the
# conversation, and records every request as received.
#
# A conversation of an RLM node is one whose messages hold a user message
# starting "Question:" or "New question" (prompts/repl_first.txt,
# repl_session_next.txt): its newest such message picks the script (the
# first tag of `scripts` it contains, else the default), and the number of
# assistant messages after it picks the reply of that script (its last one
# once they run out). Any other request is a sub-call: `sub(prompt)`.
import http.server
import json
import threading
import time


def _text(content):
    if isinstance(content, list):
        return ''.join(p.get('text', '') for p in content if isinstance(p, dict))
    return content or ''


class FakeLLM:
    def __init__(self, scripts=None, default=None, sub=None, usage=(100, 20), delay=0.0):
        self.scripts = dict(scripts or {})
        self.default = default or ['```repl\nprint(1)\n```']
        self.sub = sub or (lambda prompt: 'SUB-ANSWER')
        self.usage = usage
        self.delay = delay
        self.requests = []   # (path, headers dict, body dict)
        self.lock = threading.Lock()
        srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        srv.daemon_threads = True
        srv.fake = self
        self.srv = srv
        self.port = srv.server_address[1]
        self.url = 'http://127.0.0.1:%d/v1' % self.port
        self.thread = threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.05},
                                       name='fakellm', daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        self.thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def reply(self, body):
        msgs = body.get('messages') or []
        q = None
        for i, m in enumerate(msgs):
            t = _text(m.get('content'))
            if m.get('role') == 'user' and (t.startswith('Question:') or
                                            t.startswith('New question')):
                q = i
        if q is None:
            last = _text(msgs[-1].get('content')) if msgs else ''
            return self.sub(last)
        qtext = _text(msgs[q].get('content'))
        n = sum(1 for m in msgs[q + 1:] if m.get('role') == 'assistant')
        replies = self.default
        for tag, rs in self.scripts.items():
            if tag in qtext:
                replies = rs
                break
        r = replies[min(n, len(replies) - 1)]
        return r(body) if callable(r) else r

    def root_requests(self):
        """Bodies of the requests of RLM conversations, in arrival order."""
        with self.lock:
            reqs = list(self.requests)
        out = []
        for _, _, b in reqs:
            if any(m.get('role') == 'user' and _text(m.get('content')).startswith(
                    ('Question:', 'New question')) for m in b.get('messages') or []):
                out.append(b)
        return out


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def do_GET(self):
        self._send(200, {'object': 'list', 'data': []})

    def do_POST(self):
        fake = self.server.fake
        n = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, {'error': {'message': 'bad json'}})
            return
        with fake.lock:
            fake.requests.append((self.path, dict(self.headers.items()), body))
        if fake.delay:
            time.sleep(fake.delay)
        try:
            content = fake.reply(body)
        except Exception as e:  # a broken script is a 500 the test sees
            self._send(500, {'error': {'message': 'script: %r' % e}})
            return
        pin, pout = fake.usage
        self._send(200, {
            'id': 'chatcmpl-fake', 'object': 'chat.completion', 'created': int(time.time()),
            'model': body.get('model') or 'fake',
            'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': content},
                         'finish_reason': 'stop'}],
            'usage': {'prompt_tokens': pin, 'completion_tokens': pout,
                      'total_tokens': pin + pout}})

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
