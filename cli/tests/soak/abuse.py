#!/usr/bin/env python3
"""The three cheap attacks on an MCP Streamable HTTP server, plus malformed bodies, run together
until a deadline: used by tests/soak/run.sh beside legitimate load.

    abuse.py HOST PORT PATH SECONDS

- idle: keeps IDLE TCP connections open that send nothing (reopened when the server closes them);
- slowloris: keeps SLOW connections that send a request line, then a header line every 2 s;
- sessions: opens sessions with `initialize` and never uses them, SESSIONS_PER_S a second;
- malformed: POSTs broken bodies (bad JSON, wrong types, huge declared lengths) MALFORMED_PER_S a
  second.

Prints one JSON line of counts at the end. Uses only the standard library.
"""
import json
import selectors
import socket
import sys
import time

IDLE = 1100
SLOW = 1100
SESSIONS_PER_S = 50
MALFORMED_PER_S = 50

INIT = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "soak-abuse", "version": "1"}},
})
BAD_BODIES = [
    b"{",
    b'{"jsonrpc":"2.0","id":1,"method":7}',
    b'{"jsonrpc":"2.0","id":{},"method":"ping"}',
    b"[" * 5000,
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":' + b"1" * 10000 + b"}}}",
    b"\xff\xfe\x00garbage",
]


def post(host, port, path, body, extra=b""):
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
            b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


def main():
    host, port, path, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    deadline = time.monotonic() + seconds
    sel = selectors.DefaultSelector()
    counts = {"idle_opened": 0, "slow_opened": 0, "slow_lines": 0, "closed_by_server": 0,
              "sessions": 0, "malformed": 0, "connect_failures": 0}
    idle, slow = set(), {}

    def connect():
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect_ex((host, port))
        except OSError:
            counts["connect_failures"] += 1
            s.close()
            return None
        return s

    def quick(request):
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.sendall(request)
                while s.recv(65536):
                    pass
        except OSError:
            counts["connect_failures"] += 1

    next_session = next_bad = time.monotonic()
    bad_i = 0
    while time.monotonic() < deadline:
        now = time.monotonic()
        while len(idle) < IDLE:
            s = connect()
            if s is None:
                break
            idle.add(s)
            sel.register(s, selectors.EVENT_READ, "idle")
            counts["idle_opened"] += 1
        while len(slow) < SLOW:
            s = connect()
            if s is None:
                break
            slow[s] = 0.0
            sel.register(s, selectors.EVENT_READ, "slow")
            counts["slow_opened"] += 1
        for s, due in list(slow.items()):
            if now >= due:
                line = b"POST " + path.encode() + b" HTTP/1.1\r\n" if due == 0.0 else b"X-Slow: a\r\n"
                try:
                    s.send(line)
                    counts["slow_lines"] += 1
                    slow[s] = now + 2.0
                except OSError:
                    sel.unregister(s)
                    s.close()
                    del slow[s]
                    counts["closed_by_server"] += 1
        # A readable attacking socket: the server answered or closed it; reopen later.
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                s.close()
                idle.discard(s)
                slow.pop(s, None)
                counts["closed_by_server"] += 1
        while next_session <= now:
            quick(post(host, port, path, INIT.encode()))
            counts["sessions"] += 1
            next_session += 1.0 / SESSIONS_PER_S
        while next_bad <= now:
            body = BAD_BODIES[bad_i % len(BAD_BODIES)]
            bad_i += 1
            if bad_i % 7 == 0:
                # A huge declared length, then nothing.
                quick(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 999999999\r\nConnection: close\r\n\r\n{")
            else:
                quick(post(host, port, path, body))
            counts["malformed"] += 1
            next_bad += 1.0 / MALFORMED_PER_S
    for s in list(idle) + list(slow):
        s.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
