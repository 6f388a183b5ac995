"""A stdio MCP server for the bridge tests that serves ONE era per connection, picked by its
opening request, as the official SDKs' stdio servers do: a request in the 2026-07-28 envelope
(`_meta` naming `io.modelcontextprotocol/protocolVersion`) other than `initialize` makes the
connection modern; anything else (`initialize`) makes it legacy (2025-11-25). After that, a
request of the other era is refused: `initialize` on a modern connection with -32022 naming the
versions served, an enveloped request on a legacy one with -32600, a modern connection's request
without the envelope with -32602.

Every message it reads is written to stderr as `era-child: got METHOD ENVELOPED`, where
ENVELOPED is `modern` or `plain` (a response: `got response`), and the era once picked as
`era-child: era ERA`.

    python3 -u era_child.py [--legacy-only | --silent-discover]

--legacy-only: a legacy-only server (server/discover is -32601, as any unknown method).
--silent-discover: server/discover is never answered (then as --legacy-only).

Modern connection: `server/discover` (tools, resources with subscribe and listChanged, prompts,
logging; serverInfo `era-child` in `_meta`; instructions `one era per connection`); tools
`echo {message}`, `envelope` (answers the request's `_meta` as JSON text, the progress token
left out), `progress {steps}` (progress 1..steps under the request's token, then `done`), `ask
{question}` (an `input_required` result asking `elicitation/create` of `question`, key `q`,
state `asked:QUESTION`; the retry with `inputResponses.q` answers `answered: CONTENT`, the
content's JSON, or `ACTION` when not accepted), `touch {uri}` (notifications/resources/updated of `uri` on each listen stream
that watches it), `change_tools` (notifications/tools/list_changed on each stream that takes
it), `streams` (the open listen streams as `ID:URI,URI` joined by spaces, sorted); resource
`era://note` (text `a note`); prompt `greet {name}`; `subscriptions/listen` acknowledged with
what it asks (`notifications/subscriptions/acknowledged`, subscription id = the request's id)
and held open until `notifications/cancelled` names it. Results carry `resultType` and, for
lists, `ttlMs`/`cacheScope`. Legacy connection: `initialize`, `tools/list` and `echo` only."""
import json
import sys

PV = "io.modelcontextprotocol/protocolVersion"
SUB = "io.modelcontextprotocol/subscriptionId"
INFO = "io.modelcontextprotocol/serverInfo"
MODE = sys.argv[1] if len(sys.argv) > 1 else ""

out = sys.stdout
era = [None]
streams = {}  # listen request id (JSON text) -> {"id": id, "tools": bool, "uris": [..]}


def send(msg):
    out.write(json.dumps(msg) + "\n")
    out.flush()


def log(line):
    sys.stderr.write("era-child: " + line + "\n")
    sys.stderr.flush()


def error(id_, code, message, data=None):
    e = {"code": code, "message": message}
    if data is not None:
        e["data"] = data
    send({"jsonrpc": "2.0", "id": id_, "error": e})


def answer(id_, result):
    send({"jsonrpc": "2.0", "id": id_, "result": result})


def text(t):
    return {"content": [{"type": "text", "text": t}], "isError": False}


def modern_result(r, cacheable=False):
    r = dict(r)
    r["resultType"] = "complete"
    r["_meta"] = {INFO: {"name": "era-child", "version": "1"}}
    if cacheable:
        r["ttlMs"] = 1000
        r["cacheScope"] = "public"
    return r


TOOLS = [{"name": n, "inputSchema": {"type": "object"}}
         for n in ["echo", "envelope", "progress", "ask", "touch", "change_tools", "streams"]]


def notify_streams(method, params, takes):
    for s in streams.values():
        if takes(s):
            p = dict(params)
            p["_meta"] = {SUB: s["id"]}
            send({"jsonrpc": "2.0", "method": method, "params": p})


def modern_call(id_, params, meta):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        return answer(id_, modern_result(text(args.get("message", ""))))
    if name == "envelope":
        shown = {k: v for k, v in meta.items() if k != "progressToken"}
        return answer(id_, modern_result(text(json.dumps(shown, sort_keys=True))))
    if name == "progress":
        steps = int(args.get("steps", 1))
        for i in range(1, steps + 1):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": meta.get("progressToken"), "progress": i,
                             "total": steps}})
        return answer(id_, modern_result(text("done")))
    if name == "ask":
        responses = params.get("inputResponses") or {}
        if "q" in responses:
            if params.get("requestState") != "asked:" + args.get("question", ""):
                return error(id_, -32602, "bad requestState")
            r = responses["q"]
            if r.get("action") == "accept":
                content = json.dumps(r.get("content"), sort_keys=True)
                return answer(id_, modern_result(text("answered: " + content)))
            return answer(id_, modern_result(text(r.get("action", "?"))))
        question = args.get("question", "")
        return answer(id_, {
            "resultType": "input_required",
            "inputRequests": {"q": {"method": "elicitation/create", "params": {
                "message": question, "requestedSchema": {
                    "type": "object", "properties": {"confirmed": {"type": "boolean"}}}}}},
            "requestState": "asked:" + question})
    if name == "touch":
        uri = args.get("uri")
        notify_streams("notifications/resources/updated", {"uri": uri},
                       lambda s: uri in s["uris"])
        return answer(id_, modern_result(text("touched")))
    if name == "change_tools":
        notify_streams("notifications/tools/list_changed", {}, lambda s: s["tools"])
        return answer(id_, modern_result(text("changed")))
    if name == "streams":
        shown = sorted("%s:%s" % (json.dumps(s["id"]), ",".join(sorted(s["uris"])))
                       for s in streams.values())
        return answer(id_, modern_result(text(" ".join(shown))))
    return error(id_, -32602, "no tool " + str(name))


def modern(msg, method, params, meta):
    id_ = msg.get("id")
    if method == "notifications/cancelled":
        streams.pop(json.dumps(params.get("requestId")), None)
        return
    if "id" not in msg:
        return
    if method == "initialize":
        return error(id_, -32022, "this connection serves 2026-07-28 only",
                     {"supported": ["2026-07-28"], "requested": params.get("protocolVersion")})
    if PV not in meta:
        return error(id_, -32602, "the 2026-07-28 envelope is missing")
    if method == "server/discover":
        return answer(id_, modern_result({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": True},
                             "resources": {"subscribe": True, "listChanged": True},
                             "prompts": {}, "logging": {}},
            "instructions": "one era per connection"}, cacheable=True))
    if method == "tools/list":
        return answer(id_, modern_result({"tools": TOOLS}, cacheable=True))
    if method == "tools/call":
        return modern_call(id_, params, meta)
    if method == "resources/list":
        return answer(id_, modern_result({"resources": [{"uri": "era://note", "name": "note"}]},
                                         cacheable=True))
    if method == "resources/read":
        if params.get("uri") != "era://note":
            return error(id_, -32602, "no such resource")
        return answer(id_, modern_result({"contents": [
            {"uri": "era://note", "mimeType": "text/plain", "text": "a note"}]}, cacheable=True))
    if method == "prompts/get":
        who = (params.get("arguments") or {}).get("name", "")
        return answer(id_, modern_result({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Hello, %s!" % who}}]}))
    if method == "subscriptions/listen":
        wanted = params.get("notifications") or {}
        s = {"id": id_, "tools": bool(wanted.get("toolsListChanged")),
             "uris": list(wanted.get("resourceSubscriptions") or [])}
        streams[json.dumps(id_)] = s
        honoured = {k: v for k, v in wanted.items() if v}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": {SUB: id_}, "notifications": honoured}})
        return
    return error(id_, -32601, "method not found: " + method)


def legacy(msg, method, params, meta):
    id_ = msg.get("id")
    if "id" not in msg:
        return
    if PV in meta and method != "initialize":
        return error(id_, -32600, "this connection serves the legacy era")
    if method == "initialize":
        return answer(id_, {"protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "era-child-legacy", "version": "1"}})
    if method == "tools/list":
        return answer(id_, {"tools": TOOLS[:1]})
    if method == "tools/call" and params.get("name") == "echo":
        return answer(id_, text((params.get("arguments") or {}).get("message", "")))
    return error(id_, -32601, "method not found: " + method)


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method = msg.get("method")
    if method is None:
        log("got response")
        continue
    params = msg.get("params") or {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    log("got %s %s" % (method, "modern" if PV in meta else "plain"))
    if era[0] is None and "id" in msg:
        if MODE and method == "server/discover":
            if MODE == "--legacy-only":
                error(msg["id"], -32601, "method not found: server/discover")
            continue
        era[0] = "modern" if (PV in meta and method != "initialize") else "legacy"
        log("era " + era[0])
    if era[0] == "modern":
        modern(msg, method, params, meta)
    elif era[0] == "legacy":
        if MODE and method == "server/discover":
            if MODE == "--legacy-only":
                error(msg["id"], -32601, "method not found: server/discover")
            continue
        legacy(msg, method, params, meta)
