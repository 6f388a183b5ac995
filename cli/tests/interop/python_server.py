#!/usr/bin/env python3
"""Interop server: the official MCP Python SDK's MCPServer (PyPI mcp==2.3.0) with an `echo` tool,
for `mcpwire load` to drive over stdio or Streamable HTTP.

Run with the venv that tests/interop/install.sh sets up:

    target/interop/venv/bin/python tests/interop/python_server.py            # stdio
    target/interop/venv/bin/python tests/interop/python_server.py --http     # HTTP, a free port

`echo` returns its `message` argument exactly. The argument is annotated `x-mcp-header: Message`,
so over Streamable HTTP every modern call must mirror it into an `Mcp-Param-Message` header
(base64 for text that is not plain ASCII), which the SDK checks against the body.

With --require-version V, a call made at any other protocol version (a legacy session's
included) answers isError, so a client that claims V and speaks something else fails its calls.

Over HTTP it answers each request with a JSON body, or with --sse as the SDK does by default
(an event stream once the handler runs past a short window or sends a notification). It binds
127.0.0.1 on a free port and prints `python-server: serving MCP on URL`
on stderr once it listens. Every request the SDK dispatches is logged on stderr as
`python-server: request METHOD VERSION`.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Annotated

import anyio
from pydantic import Field

from mcp.server.mcpserver import Context, MCPServer

ANNOUNCE = "python-server: serving MCP on "


def build(require_version: str | None) -> MCPServer:
    server = MCPServer("python-interop-server", version="1")

    @server.tool(description="Returns its message exactly.")
    def echo(
        message: Annotated[str, Field(description="The text to return.", json_schema_extra={"x-mcp-header": "Message"})],
        ctx: Context,
    ) -> str:
        version = ctx.protocol_version
        sys.stderr.write(f"python-server: request tools/call {version}\n")
        sys.stderr.flush()
        if require_version is not None and version != require_version:
            raise ValueError(f"called at protocol version {version!r}, not {require_version!r}")
        return message

    return server


async def serve_http(server: MCPServer, sse: bool) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(json_response=not sse)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"{ANNOUNCE}http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP on a free port")
    parser.add_argument("--sse", action="store_true", help="over HTTP, answer with event streams, not JSON")
    parser.add_argument("--require-version", help="fail calls made at any other protocol version")
    args = parser.parse_args()
    server = build(args.require_version)
    if args.http:
        anyio.run(serve_http, server, args.sse)
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
