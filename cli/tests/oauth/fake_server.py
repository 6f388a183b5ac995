"""A protected MCP server and its authorization server, on one loopback port, for the tool's
OAuth tests: prints its base URL, then serves until killed. Stateless (2026-07-28) MCP only:
`server/discover`, `tools/list` and `tools/call echo`. Tokens live EXPIRES_IN seconds and come with a refresh
token; every grant is appended to the file named by GRANT_LOG (one `grant_type` per line)."""

import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXPIRES_IN = int(os.environ.get("EXPIRES_IN", "3600"))
GRANT_LOG = os.environ["GRANT_LOG"]
lock = threading.Lock()
valid = set()
issued = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        return self.rfile.read(int(self.headers.get("content-length", "0")))

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        base = self.base()
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.answer(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        elif url.path == "/.well-known/oauth-authorization-server":
            self.answer(200, {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "code_challenge_methods_supported": ["S256"],
            })
        elif url.path == "/authorize":
            q = dict(urllib.parse.parse_qsl(url.query))
            to = q["redirect_uri"] + "?" + urllib.parse.urlencode({"code": "c", "state": q["state"]})
            self.answer(302, b"", [("location", to)])
        else:
            self.answer(404, {})

    def do_POST(self):
        body = self.body()
        if self.path == "/register":
            self.answer(201, {"client_id": "cli-client"})
        elif self.path == "/token":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            with lock:
                with open(GRANT_LOG, "a") as log:
                    log.write(form.get("grant_type", "") + "\n")
                issued[0] += 1
                token = f"at-{issued[0]}"
                valid.add(token)
            self.answer(200, {"access_token": token, "token_type": "Bearer",
                              "expires_in": EXPIRES_IN, "refresh_token": f"rt-{issued[0]}"})
        elif self.path == "/mcp":
            token = self.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in valid:
                meta = f'{self.base()}/.well-known/oauth-protected-resource/mcp'
                self.answer(401, {}, [("www-authenticate", f'Bearer resource_metadata="{meta}"')])
                return
            req = json.loads(body)
            if req.get("method") == "server/discover":
                result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                          "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
                          "resultType": "complete"}
            elif req.get("method") == "tools/list":
                result = {"tools": [{"name": "echo", "inputSchema": {
                    "type": "object", "properties": {"message": {"type": "string"}}}}],
                    "resultType": "complete"}
            elif req.get("method") == "tools/call":
                text = req["params"]["arguments"].get("message", "")
                result = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
            else:
                self.answer(404, {"jsonrpc": "2.0", "id": req.get("id"),
                                  "error": {"code": -32601, "message": "Method not found"}})
                return
            self.answer(200, {"jsonrpc": "2.0", "id": req.get("id"), "result": result})
        else:
            self.answer(404, {})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
