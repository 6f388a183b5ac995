"""A legacy-only (2025-11-25) stdio MCP server with state of its own, for the isolated bridge
tests. Tools: count (adds one to this process's counter and answers `count N pid P`); exit
(the process exits with status 4 at once). server/discover and any other request: -32601."""
import json
import os
import sys

count = 0


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, id_ = msg.get("method"), msg.get("id")
    if method is None or id_ is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "counter", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [
            {"name": n, "inputSchema": {"type": "object"}} for n in ("count", "exit")]}})
    elif method == "tools/call" and msg["params"]["name"] == "count":
        count += 1
        text = "count %d pid %d" % (count, os.getpid())
        send({"jsonrpc": "2.0", "id": id_,
              "result": {"content": [{"type": "text", "text": text}], "isError": False}})
    elif method == "tools/call" and msg["params"]["name"] == "exit":
        sys.exit(4)
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": id_, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "no method " + str(method)}})
