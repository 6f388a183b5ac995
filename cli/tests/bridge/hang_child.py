"""A legacy-only (2025-11-25) stdio MCP server for the bridge's liveness tests: alive, but on
request it stops reading or stops writing. One thread, event-driven (select with timers): while
a slow call runs it still reads and answers everything else, `ping` included.

Tools: echo {message}; slow {seconds} (answered after that long, pings answered meanwhile);
stall {seconds} (stops reading stdin for that long, then goes on: its answer comes after);
deaf (stops reading stdin for good); mute (goes on reading but never writes again).
On start it writes "hang-child: started" to stderr, so a test can count its starts."""
import json
import os
import select
import sys
import time

sys.stderr.write("hang-child: started %d\n" % os.getpid())
sys.stderr.flush()

TOOLS = ["echo", "slow", "stall", "deaf", "mute"]
mute = [False]
timers = []  # (when, id, text)


def send(msg):
    if mute[0]:
        return
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(id_, text):
    send({"jsonrpc": "2.0", "id": id_,
          "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def handle(msg):
    method = msg.get("method")
    id_ = msg.get("id")
    params = msg.get("params") or {}
    if method is None or id_ is None:
        return
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "hang-child", "version": "1"}}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": id_, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [
            {"name": t, "inputSchema": {"type": "object"}} for t in TOOLS]}})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            result(id_, args.get("message", ""))
        elif name == "slow":
            timers.append((time.monotonic() + float(args["seconds"]), id_, "slow done"))
        elif name == "stall":
            time.sleep(float(args["seconds"]))
            result(id_, "stall done")
        elif name == "deaf":
            while True:
                time.sleep(3600)
        elif name == "mute":
            mute[0] = True
        else:
            send({"jsonrpc": "2.0", "id": id_,
                  "error": {"code": -32602, "message": "Unknown tool: %s" % name}})
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "Method not found: %s" % method}})


buf = b""
fd = sys.stdin.fileno()
while True:
    now = time.monotonic()
    for t in [t for t in timers if t[0] <= now]:
        timers.remove(t)
        result(t[1], t[2])
    wait = min([t[0] for t in timers], default=now + 1.0) - now
    ready, _, _ = select.select([fd], [], [], max(wait, 0.0))
    if not ready:
        continue
    chunk = os.read(fd, 65536)
    if not chunk:
        break
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        try:
            handle(json.loads(line))
        except ValueError:
            continue
