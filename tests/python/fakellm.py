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
# once they run out), or the "Turn N/M" line of the last message when it
# has one (a compacted conversation has fewer assistant messages). Any
# other request is a sub-call: `sub(prompt)`. A script or sub that raises
# Fail(status, message) gets that error reply. Requests to .../messages get
# Anthropic-shaped replies, others OpenAI's.
import http.server
import json
import re
import threading
import time


def _text(content):
    if isinstance(content, list):
        return ''.join(p.get('text', '') for p in content if isinstance(p, dict))
    return content or ''


class Fail(Exception):
    """Raised by a script or sub: the request gets this HTTP status and an
    OpenAI-style error with this message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class FakeLLM:
    def __init__(self, scripts=None, default=None, sub=None, usage=(100, 20), delay=0.0):
        self.scripts = dict(scripts or {})
        self.default = default or ['```repl\nprint(1)\n```']
        self.sub = sub or (lambda prompt: 'SUB-ANSWER')
        self.usage = usage
        self.delay = delay
        self.requests = []   # (path, headers dict, body dict)
        self.lock = threading.Lock()
        self.inflight = 0        # requests being answered now
        self.max_inflight = 0    # the most at once
        self.sub_delay = 0.0     # extra wait of a child RLM's first request
        self.child_tag = None    # its tag in the child's question
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
        # after a compaction the turn is in the prompt only ("Turn 3/6: go on")
        t = re.search(r'^Turn ([0-9]+)/', _text(msgs[-1].get('content')), re.M)
        if t and msgs[-1].get('role') == 'user':
            n = int(t.group(1)) - 1
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
        child = fake.child_tag is not None and any(
            fake.child_tag in _text(m.get('content')) for m in body.get('messages') or []
            if m.get('role') == 'user' and _text(m.get('content')).startswith('Question:'))
        with fake.lock:
            if child:
                fake.inflight += 1
                fake.max_inflight = max(fake.max_inflight, fake.inflight)
        try:
            if fake.delay:
                time.sleep(fake.delay)
            if child:
                time.sleep(fake.sub_delay)
            content = fake.reply(body)
        except Fail as e:
            self._send(e.status, {'error': {'message': str(e), 'type': 'invalid_request_error'}})
            return
        except Exception as e:  # a broken script is a 500 the test sees
            self._send(500, {'error': {'message': 'script: %r' % e}})
            return
        finally:
            with fake.lock:
                if child:
                    fake.inflight -= 1
        pin, pout = fake.usage
        if self.path.endswith('/messages'):  # the Anthropic wire
            self._send(200, {
                'id': 'msg_fake', 'type': 'message', 'role': 'assistant',
                'model': body.get('model') or 'fake',
                'content': [{'type': 'text', 'text': content}], 'stop_reason': 'end_turn',
                'usage': {'input_tokens': pin, 'output_tokens': pout}})
            return
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
