#!/usr/bin/env python3
"""A stdio MCP server built with the official Python SDK's MCPServer (FastMCP; PyPI mcp==2.3.0),
for the bridge interop tests (`bridge.rs`): it runs as the child of `mcpwire bridge`.

    target/interop/venv/bin/python tests/interop/bridge_python_server.py

Tools: `echo {message}` (returns the message); `ask_sample {prompt}` (asks the client's LLM
through the SDK's `Sample` resolver and answers `sampled: TEXT` with the text that came back);
`ask_elicit {question}` (asks the user through the SDK's `Elicit` resolver for a form with one
string, `name`, and answers `elicited: NAME`, or `elicitation ACTION` when not accepted);
`count {steps, ms}` (reports progress 1..steps of steps, `ms` milliseconds apart, then answers
`counted STEPS`).
A resource `bridge://note` (text `a note from the python child`) and a prompt `greet {name}`
(one user message `Hello, NAME!`).

The SDK's stdio server picks its era from the opening message of the connection: a request in
the 2026-07-28 envelope (`mcpwire bridge` opens with `server/discover`) makes it a 2026-07-28
server for the whole connection, refusing `initialize` (-32022); `initialize` first would make it
a 2025-11-25 one, refusing requests with the envelope (-32600). The resolvers follow the protocol revision of each call: at 2025-11-25 and earlier the SDK sends
`sampling/createMessage` or `elicitation/create` to the client in the middle of the call; at
2026-07-28 it answers the call with `resultType: "input_required"` and finishes it when the
client sends the call again with its answers.
"""

from __future__ import annotations

import sys
from typing import Annotated

import anyio
import mcp_types as types
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample


class NameForm(BaseModel):
    name: str


def sample_for(prompt: str) -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=16)


def elicit_for(question: str) -> Elicit[NameForm]:
    return Elicit(question, NameForm)


def build() -> MCPServer:
    server = MCPServer("bridge-python-child", version="1")

    @server.tool(description="Returns its message exactly.")
    def echo(message: str) -> str:
        return message

    @server.tool(description="Asks the client's LLM about the prompt; answers with its text.")
    def ask_sample(prompt: str, sampled: Annotated[types.CreateMessageResult, Resolve(sample_for)]) -> str:
        content = sampled.content
        text = content.text if isinstance(content, types.TextContent) else repr(content)
        return f"sampled: {text}"

    @server.tool(description="Asks the user for a name; answers with it.")
    def ask_elicit(question: str, form: Annotated[NameForm, Resolve(elicit_for)]) -> str:
        return f"elicited: {form.name}"

    @server.tool(description="Reports progress 1..steps of steps, ms apart, then answers.")
    async def count(steps: int, ctx: Context, ms: int = 0) -> str:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps)
            await anyio.sleep(ms / 1000)
        return f"counted {steps}"

    @server.resource("bridge://note", mime_type="text/plain")
    def note() -> str:
        return "a note from the python child"

    @server.prompt(description="Greets someone.")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    return server


def main() -> int:
    build().run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
