# SPDX-License-Identifier: MIT
# tests/fake_mcp_http.py -- a small MCP server over streamable HTTP for
# tests/test_toolpure.c, with the shapes a real one may send and the
# failures a bad one may: answers as JSON bodies, JSON batches and event
# streams (a notification, a ping and another request of the server's, an
# event of another type, comments, an "id:"/"retry:" field, a message split
# over several data lines, CRLF and lone-CR line ends, before the
# response), a stream kept open after the response, a session id and its
# expiry (404), an HTTP error, garbage, a body over the client's cap, a hang,
# redirects to the same origin and to another host.
#
# Usage: fake_mcp_http.py -- listens on 127.0.0.1 on a port the kernel
# picks and prints it on the first line of stdout. GET /log answers every
# request it was sent (method, path, headers, body) as a JSON list, so the
# test can check what the client sent. Stops on SIGTERM (and after 120 s).
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "sess-4f2a"
LOG = []
LOG_LOCK = threading.Lock()
# Answers of the client to the server's requests, by id.
ANSWERS = {}
ANSWERED = threading.Condition()
EXPIRED = {"on": False}


def rpc_result(mid, result):
    return {"jsonrpc": "2.0", "id": mid, "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        with LOG_LOCK:
            LOG.append({"method": self.command, "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body})

    def send(self, status, ctype, data, headers=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, obj, headers=None):
        self.send(200, "application/json", json.dumps(obj).encode(), headers)

    def stream_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, raw):
        self.wfile.write(raw.encode() if isinstance(raw, str) else raw)
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/log":
            with LOG_LOCK:
                data = json.dumps(LOG).encode()
            self.send(200, "application/json", data)
        else:
            self.send(405, "text/plain", b"no GET stream here\n")

    def do_DELETE(self):
        self.record(None)
        self.send(200, None, b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            msg = json.loads(raw)
        except ValueError:
            self.record(raw.decode("utf-8", "replace"))
            self.send(400, "text/plain", b"bad json\n")
            return
        self.record(msg)
        if self.path.startswith("/other"):
            self.send(500, "text/plain", b"wrong path\n")
            return
        method = msg.get("method")
        mid = msg.get("id")
        if method is None:  # an answer to one of our requests
            with ANSWERED:
                ANSWERS[str(mid)] = msg
                ANSWERED.notify_all()
            self.send(202, None, b"")
            return
        if mid is None:  # a notification
            self.send(202, None, b"")
            return
        if method == "initialize":
            EXPIRED["on"] = False
            self.send_json(rpc_result(mid, {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-http", "version": "1.0"}}),
                {"Mcp-Session-Id": SESSION})
            return
        if self.headers.get("Mcp-Session-Id") != SESSION:
            self.send(400, "application/json", b'{"error": "no session"}')
            return
        if EXPIRED["on"]:
            self.send(404, "text/plain", b"session not found\n")
            return
        if method == "tools/list":
            self.tools_list(mid)
            return
        if method == "tools/call":
            self.tools_call(mid, msg.get("params", {}).get("name"))
            return
        self.send_json({"jsonrpc": "2.0", "id": mid,
                        "error": {"code": -32601, "message": "no " + method}})

    def tools_list(self, mid):
        # Everything a stream may hold before the response, then the
        # response once the client answered our ping (or after 5 s).
        self.stream_start()
        self.event(": a comment\n\n")
        self.event("event: message\ndata: " + json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/progress",
             "params": {"progressToken": 1, "progress": 1}}) + "\n\n")
        self.event("id: ev-1\r\nretry: 1000\r\ndata: " + json.dumps(
            {"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"}) + "\r\n\r\n")
        self.event("data: " + json.dumps(
            {"jsonrpc": "2.0", "id": 77, "method": "sampling/createMessage",
             "params": {}}) + "\r\r")
        self.event("data: " + json.dumps(
            {"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}) + "\n\n")
        self.event("event: endpoint\ndata: " + json.dumps(
            {"jsonrpc": "2.0", "id": mid, "result": {"tools": [], "wrong": True}}) + "\n\n")
        # a response to another id is not ours
        self.event("data: " + json.dumps(rpc_result(mid + 1000, {"tools": []})) + "\n\n")
        with ANSWERED:
            ANSWERED.wait_for(lambda: all(k in ANSWERS for k in ("srv-ping", "77", "r1")), 5)
            pinged = ANSWERS.get("srv-ping")
            other = ANSWERS.get("77")
            roots = ANSWERS.get("r1")
        resp = json.dumps(rpc_result(mid, {
            "tools": [{"name": "sum", "inputSchema": {"type": "object"}}],
            "pinged": pinged, "other": other, "roots": roots}), indent=1)
        # the response split over data lines (a newline inside JSON is a blank)
        self.event("".join("data: " + line + "\n" for line in resp.split("\n")) + "\n")

    def tools_call(self, mid, name):
        if name == "sum":
            self.send_json(rpc_result(mid, {"content": [{"type": "text", "text": "5"}]}))
        elif name == "batch":
            self.send_json([{"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "x"}},
                            rpc_result(mid, {"content": [{"type": "text", "text": "b"}]})])
        elif name == "keepopen":
            self.stream_start()
            self.event("data: " + json.dumps(rpc_result(mid, {"content": []})) + "\n\n")
            time.sleep(20)
        elif name == "noresp":
            self.stream_start()
            self.event("data: " + json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}) + "\n\n")
        elif name == "lastevent":  # no blank line after the last event
            self.stream_start()
            self.event("data: " + json.dumps(rpc_result(mid, {"content": []})))
        elif name == "huge":
            self.stream_start()
            chunk = "x" * (1 << 20)
            self.event('data: {"jsonrpc": "2.0", "id": %d, "result": {"t": "' % mid)
            try:
                for _ in range(20):
                    self.event("data: " + chunk + "\n")
                self.event('data: "}}\n\n')
            except OSError:
                pass
        elif name == "hang":
            time.sleep(20)
        elif name == "expire":
            EXPIRED["on"] = True
            self.send(404, "text/plain", b"session not found\n")
        elif name == "error500":
            self.send(500, "text/html", b"<html>\x1b[31mboom</html>")
        elif name == "garbage":
            self.send(200, "application/json", b"<html>not json</html>")
        elif name == "accepted":
            self.send(202, None, b"")
        elif name == "redirect-same" and self.path == "/mcp-moved":
            self.send_json(rpc_result(mid, {"content": [{"type": "text", "text": "moved"}]}))
        elif name == "redirect-same":
            self.send(307, None, b"", {"Location": "/mcp-moved"})
        elif name == "redirect-loop":
            self.send(308, None, b"", {"Location": self.path + "x"})
        elif name == "redirect-other":
            self.send(307, None, b"", {"Location": "http://127.0.0.2:9/mcp"})
        else:
            self.send_json({"jsonrpc": "2.0", "id": mid,
                            "error": {"code": -32602, "message": "unknown tool " + str(name)}})


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    t = threading.Timer(120, srv.shutdown)
    t.daemon = True
    t.start()
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
