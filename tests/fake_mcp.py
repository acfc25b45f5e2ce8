#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tests/fake_mcp.py -- a small MCP server over stdio for tests/test_tool.c:
# what the official servers never do on purpose. Python stdlib only.
#
#   fake_mcp.py MODE [ARG]
#
# Every mode serves the same tools, listed over 3 pages (cursors "p2",
# "p3"); MODE says what the tool "boom" does:
#   normal      boom answers isError
#   crash       boom writes to stderr and exits with status 3
#   hang        boom never answers (everything else still does)
#   garbage     boom makes the server write a line that is not JSON
#   huge        boom answers with a line over 16 MiB
#   slow SECS   initialize is answered after SECS seconds
#   badversion  initialize answers protocolVersion "1999-01-01"
# The tool "ping" sends the client a ping, a roots/list and an unknown
# request in the middle of the call, and answers "pong ok" when the client
# answered them as MCP says. FAKE_MCP_LOG=FILE appends each message
# received to FILE, one per line, for the exact requests a client sent.
# Calls run on their own threads, so a slow call does not hold the others.
import json
import os
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
LOG = os.environ.get("FAKE_MCP_LOG")
out_lock = threading.Lock()
pending = {}          # id of a request of ours -> [event, response]
next_id = [1000]
late = [False]        # the tool "late" is listed (after "changed")


def send(msg):
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(line):
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


def obj(props, required, **extra):
    s = {"type": "object", "properties": props, "required": required}
    s.update(extra)
    return s


NUM = {"type": "number"}
TOOLS = [
    {"name": "echo", "description": "Echo the text back unchanged",
     "inputSchema": obj({"text": {"type": "string", "description": "What to echo"}}, ["text"]),
     "annotations": {"readOnlyHint": True}},
    {"name": "add", "title": "Adder", "description": "Add two numbers and return their sum",
     "inputSchema": obj({"a": NUM, "b": NUM}, ["a", "b"], additionalProperties=False),
     "outputSchema": obj({"sum": NUM}, ["sum"])},
    {"name": "env", "description": "The value of an environment variable of the server",
     "inputSchema": obj({"name": {"type": "string"}}, ["name"]),
     "annotations": {"readOnlyHint": True}},
    {"name": "sleep", "description": "Wait ms milliseconds, then answer with the tag",
     "inputSchema": obj({"ms": NUM, "tag": {"type": "string"}}, ["ms"]),
     "annotations": {"readOnlyHint": True}},
    {"name": "boom", "description": "Misbehave as the server's mode says",
     "inputSchema": {"type": "object"}},
    {"name": "ping", "description": "Ask the client things in the middle of a call",
     "inputSchema": {"type": "object"}},
    {"name": "big", "description": "A text result of 2 MiB", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Text and an image item",
     "inputSchema": {"type": "object"}},
    {"name": "changed", "description": "Add the tool late and say the list changed",
     "inputSchema": {"type": "object"}},
]
LATE = {"name": "late", "description": "A tool that came later", "inputSchema": {"type": "object"}}


def text(t, **extra):
    r = {"content": [{"type": "text", "text": t}]}
    r.update(extra)
    return r


def ask(method):
    """A request of ours to the client; its response (or None in 5 s)."""
    next_id[0] += 1
    rid = next_id[0]
    ev = threading.Event()
    pending[rid] = [ev, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method})
    ev.wait(5)
    return pending.pop(rid)[1]


def tool_ping():
    p = ask("ping")
    r = ask("roots/list")
    u = ask("sampling/createMessage")
    ok = (p is not None and p.get("result") == {} and
          r is not None and r.get("result") == {"roots": []} and
          u is not None and u.get("error", {}).get("code") == -32601)
    return text("pong ok" if ok else "pong bad: %r %r %r" % (p, r, u))


def call(name, args):
    if name == "echo":
        return text(args["text"])
    if name == "add":
        s = args["a"] + args["b"]
        return text("The sum is %s." % s, structuredContent={"sum": s})
    if name == "env":
        return text(os.environ.get(args["name"], "(unset)"))
    if name == "sleep":
        time.sleep(args["ms"] / 1000.0)
        return text(args.get("tag", "slept"))
    if name == "ping":
        return tool_ping()
    if name == "big":
        return text("y" * (2 << 20))
    if name == "image":
        return {"content": [{"type": "text", "text": "a picture:"},
                            {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}
    if name == "changed":
        late[0] = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("changed")
    if name == "boom":
        return boom()
    return None


def boom():
    if MODE == "crash":
        sys.stderr.write("starting boom\nfatal: boom happened\n")
        sys.stderr.flush()
        os._exit(3)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "garbage":
        with out_lock:
            sys.stdout.write("this is not json at all\n")
            sys.stdout.flush()
        time.sleep(3600)
    if MODE == "huge":
        with out_lock:
            sys.stdout.write('{"jsonrpc":"2.0","id":0,"result":{"x":"')
            for _ in range(17):
                sys.stdout.write("z" * (1 << 20))
            sys.stdout.write('"}}\n')
            sys.stdout.flush()
        time.sleep(3600)
    return text("it failed on purpose", isError=True)


def tools_list(params):
    tools = TOOLS + ([LATE] if late[0] else [])
    pages = [tools[0:3], tools[3:6], tools[6:]]
    cur = (params or {}).get("cursor")
    i = {None: 0, "p2": 1, "p3": 2}[cur]
    r = {"tools": pages[i]}
    if i < 2:
        r["nextCursor"] = "p%d" % (i + 2)
    return r


def handle_call(mid, params):
    r = call(params.get("name"), params.get("arguments") or {})
    if r is None:
        send({"jsonrpc": "2.0", "id": mid,
              "error": {"code": -32602, "message": "unknown tool " + str(params.get("name"))}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "result": r})


def handle(msg):
    method, mid = msg.get("method"), msg.get("id")
    if method is None:  # a response to one of our requests
        if mid in pending:
            pending[mid][1] = msg
            pending[mid][0].set()
        return
    if mid is None:
        return
    if method == "initialize":
        if MODE == "slow":
            time.sleep(float(ARG or "3"))
        ver = "1999-01-01" if MODE == "badversion" else msg["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": ver, "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "fake", "title": "Fake MCP", "version": "1.2.3"},
            "instructions": "Tools for tests.\nSecond line."}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": tools_list(msg.get("params"))})
    elif method == "tools/call":
        threading.Thread(target=handle_call, args=(mid, msg.get("params") or {}),
                         daemon=True).start()
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        log(line)
        handle(json.loads(line))


main()
