"""A legacy-only (2025-11-25) stdio MCP server for the bridge tests, with tools that misbehave
on purpose. One thread, event-driven: it never blocks on an answer it waits for.

Tools: echo {message}; garbage (writes a line that is not JSON, then answers); sample {text}
(asks the client for a sampling/createMessage and answers with what came back, or the
error); hold (answered only once `release` is called); release; roots_error (the error the
bridge gave the roots/list this server sent right after notifications/initialized, when no
client request was in flight); exit (the process exits with status 3 at once); ask {question,
rounds} (asks the client an elicitation/create of `question`, `rounds` times (1 by default),
then answers with what came back; each answer is also written to stderr); touch {uri}
(notifications/resources/updated of `uri` when it is subscribed to); change_tools
(notifications/tools/list_changed); subscribed (the resources subscribed to, sorted, joined by
spaces); log {message} (a notifications/message of `message` at once, then the answer).
resources/subscribe and resources/unsubscribe keep that list."""
import json
import sys

out = sys.stdout


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


def result(id_, text, is_error=False):
    send({"jsonrpc": "2.0", "id": id_,
          "result": {"content": [{"type": "text", "text": text}], "isError": is_error}})


TOOLS = ["echo", "garbage", "sample", "hold", "release", "roots_error", "exit", "ask", "touch",
         "change_tools", "subscribed", "log"]
subscribed = set()
asking = {}  # the tools/call id -> [question, rounds left, answers so far]
held = []
waiting = {}  # our request id -> (kind, the tools/call id)
roots_error = ["(none yet)"]
next_id = [0]


def ask(method, params, kind, call_id):
    next_id[0] += 1
    rid = "child-%d" % next_id[0]
    waiting[rid] = (kind, call_id)
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def ask_question(question, call_id):
    ask("elicitation/create", {"message": question, "requestedSchema": {
        "type": "object", "properties": {"answer": {"type": "string"}}}}, "ask", call_id)


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method = msg.get("method")
    if method is None:
        kind, call_id = waiting.pop(msg.get("id"), (None, None))
        if kind == "roots":
            roots_error[0] = json.dumps(msg.get("error", msg.get("result")))
        elif kind == "ask":
            sys.stderr.write("legacy-child: elicitation answered %s\n"
                             % json.dumps(msg.get("result", msg.get("error"))))
            sys.stderr.flush()
            state = asking.pop(call_id)
            if "error" in msg:
                result(call_id, "refused: " + msg["error"]["message"], True)
                continue
            r = msg["result"]
            state[2].append((r.get("content") or {}).get("answer", r.get("action")))
            state[1] -= 1
            if state[1] > 0:
                asking[call_id] = state
                ask_question(state[0] + " again", call_id)
            else:
                result(call_id, "answers: " + ", ".join(map(str, state[2])))
        elif kind == "sample":
            if "error" in msg:
                result(call_id, "refused: " + msg["error"]["message"], True)
            else:
                result(call_id, "sampled: " + msg["result"]["content"]["text"])
        continue
    id_ = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}, "logging": {},
                             "resources": {"subscribe": True}},
            "serverInfo": {"name": "legacy-child", "version": "1"}}})
    elif method == "notifications/initialized":
        ask("roots/list", {}, "roots", None)
    elif id_ is None:
        continue
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [
            {"name": t, "inputSchema": {"type": "object"}} for t in TOOLS]}})
    elif method in ("resources/subscribe", "resources/unsubscribe"):
        uri = params.get("uri", "")
        if method == "resources/subscribe":
            subscribed.add(uri)
        else:
            subscribed.discard(uri)
        send({"jsonrpc": "2.0", "id": id_, "result": {}})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            result(id_, args.get("message", ""))
        elif name == "garbage":
            out.write("this is not json\n")
            out.flush()
            result(id_, "after garbage")
        elif name == "sample":
            ask("sampling/createMessage", {"messages": [{"role": "user", "content": {
                "type": "text", "text": args.get("text", "")}}], "maxTokens": 10}, "sample", id_)
        elif name == "hold":
            held.append(id_)
        elif name == "release":
            for h in held:
                result(h, "released")
            held.clear()
            result(id_, "released all")
        elif name == "roots_error":
            result(id_, roots_error[0])
        elif name == "ask":
            asking[id_] = [args.get("question", ""), int(args.get("rounds", 1)), []]
            ask_question(args.get("question", ""), id_)
        elif name == "touch":
            if args.get("uri") in subscribed:
                send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": args["uri"]}})
            result(id_, "touched")
        elif name == "change_tools":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            result(id_, "changed")
        elif name == "log":
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {
                "level": "info", "logger": "legacy-child", "data": args.get("message", "")}})
            result(id_, "logged")
        elif name == "subscribed":
            result(id_, " ".join(sorted(subscribed)))
        elif name == "exit":
            sys.stderr.write("legacy-child: exiting on request\n")
            sys.stderr.flush()
            sys.exit(3)
        else:
            send({"jsonrpc": "2.0", "id": id_,
                  "error": {"code": -32602, "message": "Unknown tool: %s" % name}})
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "Method not found: %s" % method}})
