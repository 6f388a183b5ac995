#!/usr/bin/env python3
"""Interop check: the official MCP Python SDK's client against an MCP server over stdio or Streamable HTTP.

Run with the venv that tests/interop/install.sh sets up (PyPI mcp==2.3.0):

    target/interop/venv/bin/python tests/interop/python_client.py -- target/release/mcpwire serve

    target/interop/venv/bin/python tests/interop/python_client.py \
        --expect-tools echo,trigger-long-running-operation --echo-prefix 'Echo: ' \
        --cancel-tool trigger-long-running-operation --cancel-args '{"duration":10,"steps":10}' \
        -- node target/interop/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio

    target/interop/venv/bin/python tests/interop/python_client.py --url http://127.0.0.1:PORT/mcp

It spawns the server command given after `--`, then, with the SDK's ClientSession:
initializes, lists tools (the names in --expect-tools must be there), makes --calls
concurrent echo calls whose messages mix non-ASCII with characters JSON must escape and
checks each answer's text is exactly --echo-prefix + message, starts the --cancel-tool
call and cancels it after --cancel-after-ms (the SDK then sends notifications/cancelled
itself), checks the cancellation went out on the wire with the request's id, that no
answer to the cancelled request came back, that the session still answers an echo, and
that the server exits soon after its stdin closes. Every message in both directions is
tapped between the SDK's session and its stdio transport, so wire facts are checked too.

With --url instead of a command, the same checks run over the SDK's Streamable HTTP
client (mcp.client.streamable_http.streamable_http_client) against a running server, and
the HTTP exchanges themselves are tapped below the SDK (request headers and bodies, status,
response headers and raw response bytes, SSE parsed here), since the SDK rewrites the id
of a response that arrives on a POST's SSE stream to the id of the request it POSTed.
HTTP checks: every POST of a request got 200 with Content-Type application/json or
text/event-stream whose body carries that request's response exactly once (the cancelled
request may get none) and no other response; every SSE event carrying data is of type
"message" (the SDK drops other types); every POST of a notification or response got 202
with no body; the GET stream got 200 text/event-stream or 405; DELETE at the end got 200,
204 or 405 within --max-shutdown-s. The "exits after stdin closes" check does not apply.

Exit status 0 when every check passed; 1 with one line per failed check otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.message import SessionMessage

# Pieces mixed into every echo message: non-ASCII (2-, 3- and 4-byte UTF-8, astral
# characters that JSON escapes as surrogate pairs), JSON's mandatory escapes (quote,
# backslash, control characters including NUL), and JavaScript's line terminators.
PIECES = [
    "héllo",
    "naïve café",
    "日本語テキスト",
    "Ω≈ç√∫",
    "✓ done",
    "😀🎉",
    "𝄞 clef",
    '"quoted"',
    "back\\slash",
    "new\nline",
    "tab\there",
    "cr\rlf",
    "nul\u0000byte",
    "bell\u0007",
    "esc\u001b[0m",
    "del\u007f",
    "ls\u2028ps\u2029",
    "</script>",
    "{\"json\": [1, 2]}",
    "'single'",
]


def echo_message(i: int) -> str:
    """A distinct message for call i; every message carries several hard pieces."""
    n = len(PIECES)
    return f"#{i}: " + " | ".join(PIECES[(i + k * 7) % n] for k in range(4)) + f" /{i}"


@dataclass
class WireTap:
    """Every JSON-RPC message that crossed the transport, with a monotonic timestamp."""

    sent: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    received: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    stream_errors: list[Exception] = field(default_factory=list)
    # Streamable HTTP only: the HTTP exchanges, tapped below the SDK.
    http: HttpTap | None = None


def as_wire(message: Any) -> dict[str, Any]:
    return message.model_dump(by_alias=True, mode="json", exclude_unset=True)


@dataclass
class HttpExchange:
    """One HTTP request the SDK sent and what came back, as far as the SDK read it."""

    t: float
    method: str
    request_headers: dict[str, str]
    request_body: Any  # the parsed JSON of a POST, None otherwise
    status: int | None = None
    http_version: str | None = None  # as httpx2 reports it: "HTTP/1.1", "HTTP/2"
    response_headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    closed: bool = False
    error: str | None = None

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "").partition(";")[0].strip().lower()

    def posted(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages this POST carried."""
        body = self.request_body
        if isinstance(body, list):
            return [m for m in body if isinstance(m, dict)]
        return [body] if isinstance(body, dict) else []


@dataclass
class SseEvent:
    event: str
    data: str
    id: str | None
    retry: str | None


def parse_sse(raw: bytes) -> tuple[list[SseEvent], int, bool]:
    """Events of a text/event-stream body (per the WHATWG rules), the number of comment
    lines, and whether the body ends inside an unterminated event."""
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    events: list[SseEvent] = []
    comments = 0
    event, data, eid, retry, pending = "", [], None, None, False
    lines = text.split("\n")
    trailing = lines.pop()  # the text after the last newline: an unterminated line
    for line in lines:
        if line == "":
            if pending:
                events.append(SseEvent(event or "message", "\n".join(data), eid, retry))
            event, data, retry, pending = "", [], None, False
            continue
        if line.startswith(":"):
            comments += 1
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        pending = True
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            eid = value
        elif name == "retry":
            retry = value
    return events, comments, pending or trailing != ""


@dataclass
class HttpTap:
    exchanges: list[HttpExchange] = field(default_factory=list)

    def server_messages(self, ex: HttpExchange) -> tuple[list[Any], list[str]]:
        """The JSON-RPC messages in one response body (as much as was read), and problems."""
        problems: list[str] = []
        messages: list[Any] = []
        if not ex.body:
            return messages, problems
        if ex.response_headers.get("content-encoding", "identity") != "identity":
            return messages, [f"body is {ex.response_headers['content-encoding']}-encoded; not parsed"]
        if ex.content_type == "application/json":
            try:
                parsed = json.loads(bytes(ex.body))
            except ValueError as exc:
                text = bytes(ex.body).decode(errors="replace")
                return messages, [f"application/json body is not JSON ({exc}): {short(text)}"]
            messages = parsed if isinstance(parsed, list) else [parsed]
        elif ex.content_type == "text/event-stream":
            events, _, _ = parse_sse(bytes(ex.body))
            for e in events:
                if not e.data.strip():
                    continue  # e.g. a priming event (id only, empty data)
                if e.event != "message":
                    problems.append(
                        f"SSE event of type {e.event!r} (the SDK ignores all but 'message'): {short(e.data)}"
                    )
                try:
                    messages.append(json.loads(e.data))
                except ValueError as exc:
                    problems.append(f"SSE data is not JSON ({exc}): {short(e.data)}")
        return messages, problems

    def answers_for(self, request_id: Any) -> list[dict[str, Any]]:
        """Every response with this id the server put on the wire, on any stream."""
        found = []
        for ex in self.exchanges:
            for m in self.server_messages(ex)[0]:
                if isinstance(m, dict) and "method" not in m and m.get("id") == request_id:
                    found.append(m)
        return found


class _TeeStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, ex: HttpExchange) -> None:
        self._inner = inner
        self._ex = ex

    async def __aiter__(self):  # type: ignore[override]
        try:
            async for chunk in self._inner:
                self._ex.body += chunk
                yield chunk
        except Exception as exc:
            self._ex.error = f"{type(exc).__name__}: {exc}"
            raise

    async def aclose(self) -> None:
        self._ex.closed = True
        await self._inner.aclose()


class TapTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that records every exchange and tees every response body."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, tap: HttpTap) -> None:
        self._inner = inner
        self._tap = tap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body: Any = None
        if request.method == "POST":
            try:
                body = json.loads(request.content)
            except ValueError:
                body = request.content.decode(errors="replace")
        ex = HttpExchange(
            t=time.monotonic(),
            method=request.method,
            request_headers={k.lower(): v for k, v in request.headers.items()},
            request_body=body,
        )
        self._tap.exchanges.append(ex)
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            ex.error = f"{type(exc).__name__}: {exc}"
            raise
        ex.status = response.status_code
        ex.http_version = response.extensions.get("http_version", b"").decode() or None
        ex.response_headers = {k.lower(): v for k, v in response.headers.items()}
        response.stream = _TeeStream(response.stream, ex)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_transport(http2: bool) -> httpx2.AsyncHTTPTransport:
    """httpx2's transport: HTTP/1.1, or with `http2` HTTP/2 alone, which over http:// is
    cleartext with prior knowledge (the connection opens with the HTTP/2 preface); it needs
    the `h2` package (tests/interop/install.sh pins it)."""
    if http2:
        return httpx2.AsyncHTTPTransport(http1=False, http2=True)
    return httpx2.AsyncHTTPTransport()


def check_http_version(http: HttpTap, http2: bool, label: str, checks: Checks) -> None:
    """With `http2`, every exchange that got an answer was carried by HTTP/2."""
    if not http2:
        return
    answered = [ex for ex in http.exchanges if ex.status is not None]
    versions = sorted({str(ex.http_version) for ex in answered})
    print(f"  {label}: {len(answered)} answered exchanges, HTTP versions {versions}", flush=True)
    other = sorted({str(ex.http_version) for ex in answered if ex.http_version != "HTTP/2"})
    checks.check(bool(answered) and not other, f"{label}: answers not over HTTP/2: {other} of {len(answered)}")


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
            print(f"FAIL: {what}", flush=True)
        return ok


def short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else ascii(value)
    return text if len(text) <= limit else text[:limit] + "..."


def result_text(result: types.CallToolResult) -> str | None:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return texts[0] if len(texts) == 1 else None


async def run(args: argparse.Namespace, checks: Checks) -> dict[str, Any]:
    timings: dict[str, Any] = {}
    tap = WireTap()
    t_start = time.monotonic()

    async with AsyncExitStack() as stack:
        if args.url:
            tap.http = HttpTap()
            # The SDK's default client (create_mcp_http_client) with the tap underneath;
            # trust_env off so a proxy from the environment cannot sit in between.
            http_client = httpx2.AsyncClient(
                transport=TapTransport(http_transport(args.http2), tap.http),
                timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                trust_env=False,
            )
            await stack.enter_async_context(http_client)
            transport: AbstractAsyncContextManager[Any] = streamable_http_client(args.url, http_client=http_client)
        else:
            transport = stdio_client(StdioServerParameters(command=args.server[0], args=args.server[1:]))
        read_stream, write_stream = await stack.enter_async_context(transport)
        # Relay tasks between the SDK's session and the transport, recording both ways.
        to_session_send, to_session_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        from_session_send, from_session_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def downstream() -> None:
            async with to_session_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        tap.stream_errors.append(item)
                    else:
                        tap.received.append((time.monotonic(), as_wire(item.message)))
                    await to_session_send.send(item)

        async def upstream() -> None:
            async with from_session_recv:
                async for item in from_session_recv:
                    tap.sent.append((time.monotonic(), as_wire(item.message)))
                    await write_stream.send(item)

        async with anyio.create_task_group() as relays:
            relays.start_soon(downstream)
            relays.start_soon(upstream)
            async with ClientSession(to_session_recv, from_session_send) as session:
                await exercise(session, args, checks, tap, timings, t_start)
            relays.cancel_scope.cancel()
        t_close = time.monotonic()
    if args.url:
        # Leaving streamable_http_client sent DELETE (when the server gave a session id) and
        # cancelled the transport's tasks (open POST streams and the GET stream).
        timings["close_s"] = round(time.monotonic() - t_close, 3)
        checks.check(
            timings["close_s"] <= args.max_shutdown_s,
            f"closing the session took {timings['close_s']} s (max {args.max_shutdown_s} s)",
        )
    else:
        # Leaving stdio_client closed the server's stdin and waited for it to exit
        # (SIGTERM after 2 s, SIGKILL 2 s later).
        timings["shutdown_s"] = round(time.monotonic() - t_close, 3)
        checks.check(
            timings["shutdown_s"] <= args.max_shutdown_s,
            f"server took {timings['shutdown_s']} s to exit after stdin closed (max {args.max_shutdown_s} s)",
        )
    checks.check(not tap.stream_errors, f"transport reported unparsable lines: {tap.stream_errors!r}")

    # Wire facts: every request id the SDK sent is an integer; the server answered each
    # exactly once (cancelled ones excepted, checked in exercise()).
    sent_requests = [m for _, m in tap.sent if "method" in m and "id" in m]
    checks.check(
        all(type(m["id"]) is int for m in sent_requests),
        "the SDK sent a non-integer request id",
    )
    answers: dict[Any, int] = {}
    for _, m in tap.received:
        if "method" not in m and "id" in m:
            answers[m["id"]] = answers.get(m["id"], 0) + 1
    dup = {k: v for k, v in answers.items() if v > 1}
    checks.check(not dup, f"server answered some ids more than once: {short(dup)}")
    unknown = set(answers) - {m["id"] for m in sent_requests}
    checks.check(not unknown, f"server answered ids never sent: {short(sorted(map(str, unknown)))}")
    timings["messages_sent"] = len(tap.sent)
    timings["messages_received"] = len(tap.received)
    timings["server_notifications"] = sorted(
        {m["method"] for _, m in tap.received if "method" in m and "id" not in m}
    )
    timings["server_requests"] = sorted({m["method"] for _, m in tap.received if "method" in m and "id" in m})
    if tap.http is not None:
        timings["http"] = http_checks(tap.http, tap, checks, timings)
        check_http_version(tap.http, args.http2, "http", checks)
    return timings


async def exercise(
    session: ClientSession,
    args: argparse.Namespace,
    checks: Checks,
    tap: WireTap,
    timings: dict[str, Any],
    t_start: float,
) -> None:
    # 1. initialize (the SDK offers 2025-11-25 and then sends notifications/initialized)
    init = await session.initialize()
    timings["initialize_s"] = round(time.monotonic() - t_start, 3)
    timings["protocol_version"] = init.protocol_version
    timings["server_info"] = f"{init.server_info.name} {init.server_info.version}"
    if args.expect_protocol:
        checks.check(
            init.protocol_version == args.expect_protocol,
            f"protocolVersion {init.protocol_version!r}, expected {args.expect_protocol!r}",
        )
    if args.expect_server_name:
        checks.check(
            init.server_info.name == args.expect_server_name,
            f"serverInfo.name {init.server_info.name!r}, expected {args.expect_server_name!r}",
        )
    checks.check(init.capabilities.tools is not None, "server did not advertise the tools capability")
    await session.send_ping()

    # 2. tools/list
    t = time.monotonic()
    listed = await session.list_tools()
    timings["list_tools_s"] = round(time.monotonic() - t, 3)
    tools = {tool.name: tool for tool in listed.tools}
    timings["tools"] = sorted(tools)
    for name in args.expect_tools:
        if checks.check(name in tools, f"tools/list lacks {name!r} (has {sorted(tools)})"):
            checks.check(
                tools[name].input_schema.get("type") == "object",
                f"tool {name!r} inputSchema is not an object schema: {short(tools[name].input_schema)}",
            )
    if "echo" in tools:
        schema = tools["echo"].input_schema
        checks.check(
            "message" in (schema.get("required") or [])
            and (schema.get("properties") or {}).get("message", {}).get("type") == "string",
            f"echo inputSchema does not require a string 'message': {short(schema)}",
        )

    # 3. concurrent echo calls
    mismatches: list[str] = []
    latencies: list[float] = []

    async def one_echo(i: int) -> None:
        message = echo_message(i)
        t0 = time.monotonic()
        try:
            result = await session.call_tool("echo", {"message": message})
        except Exception as exc:  # an MCPError or a validation error from the SDK
            mismatches.append(f"echo #{i}: raised {type(exc).__name__}: {exc}")
            return
        latencies.append(time.monotonic() - t0)
        text = result_text(result)
        expected = args.echo_prefix + message
        if result.is_error:
            mismatches.append(f"echo #{i}: isError result: {short(text)}")
        elif text != expected:
            mismatches.append(f"echo #{i}: sent {short(expected)} got {short(text)}")

    t = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(args.calls):
            tg.start_soon(one_echo, i)
    elapsed = time.monotonic() - t
    latencies.sort()
    timings["echo_calls"] = args.calls
    timings["echo_total_s"] = round(elapsed, 3)
    if latencies:
        timings["echo_p50_ms"] = round(1000 * latencies[len(latencies) // 2], 1)
        timings["echo_max_ms"] = round(1000 * latencies[-1], 1)
    for line in mismatches[:20]:
        print(f"  {line}", flush=True)
    checks.check(not mismatches, f"{len(mismatches)} of {args.calls} echo calls did not come back intact")
    peak = peak_in_flight(tap)
    timings["peak_in_flight"] = peak
    checks.check(
        args.calls < 2 or peak > 1,
        f"echo calls were not concurrent on the wire (peak in flight {peak})",
    )

    # 4. cancel an in-flight slow call
    if args.cancel_tool:
        await cancel_one(session, args, checks, tap, timings)

    # 5. progress: mcpwire's `sleep` reports progress for a progressToken (over Streamable HTTP
    # the response then comes as an event stream, the progress events first)
    if args.expect_server_name == "mcpwire":
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        slept = await session.call_tool("sleep", {"ms": 50}, progress_callback=on_progress)
        timings["progress_seen"] = seen
        checks.check(result_text(slept) == "slept 50", f"sleep with progress answered {short(result_text(slept))}")
        checks.check(seen == [(0, 50), (50, 50)], f"progress for sleep 50 ms: {seen}, expected [(0, 50), (50, 50)]")

    # 6. the session still works
    t = time.monotonic()
    after = await session.call_tool("echo", {"message": "after cancel ✓ \"ok\""})
    timings["followup_echo_ms"] = round(1000 * (time.monotonic() - t), 1)
    checks.check(
        result_text(after) == args.echo_prefix + "after cancel ✓ \"ok\"",
        f"follow-up echo answered {short(result_text(after))}",
    )
    checks.check(
        timings["followup_echo_ms"] <= 1000 * args.max_followup_s,
        f"follow-up echo took {timings['followup_echo_ms']} ms (max {args.max_followup_s} s)",
    )


async def cancel_one(
    session: ClientSession,
    args: argparse.Namespace,
    checks: Checks,
    tap: WireTap,
    timings: dict[str, Any],
) -> None:
    sent_before = len(tap.sent)
    outcome: dict[str, Any] = {}

    async def slow_call() -> None:
        try:
            outcome["result"] = await session.call_tool(args.cancel_tool, args.cancel_args)
        except BaseException as exc:  # noqa: BLE001 - the cancellation itself lands here
            outcome["exc"] = exc
            raise

    t0 = time.monotonic()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await anyio.sleep(args.cancel_after_ms / 1000)
            t_cancel = time.monotonic()
            scope.cancel()
    t_returned = time.monotonic()
    timings["cancel_returned_ms"] = round(1000 * (t_returned - t_cancel), 1)
    checks.check(
        "result" not in outcome,
        f"{args.cancel_tool} finished before it was cancelled at {args.cancel_after_ms} ms: "
        f"{short(outcome.get('result') and result_text(outcome['result']))}",
    )
    checks.check(
        timings["cancel_returned_ms"] <= 500,
        f"cancelled call took {timings['cancel_returned_ms']} ms to return",
    )

    # The SDK writes notifications/cancelled itself (shielded) when the caller cancels.
    new = [m for _, m in tap.sent[sent_before:]]
    call = next((m for m in new if m.get("method") == "tools/call"), None)
    if not checks.check(call is not None, f"no tools/call for {args.cancel_tool!r} was sent"):
        return
    cancelled = [m for m in new if m.get("method") == "notifications/cancelled"]
    timings["cancel_notification"] = cancelled[0] if cancelled else None
    checks.check(
        len(cancelled) == 1 and cancelled[0].get("params", {}).get("requestId") == call["id"],
        f"expected one notifications/cancelled for request id {call['id']!r}, sent {short(cancelled)}",
    )

    # Give a server that ignores the cancel, or answers it anyway, time to show it.
    await anyio.sleep(args.cancel_linger_s)
    if tap.http is not None:
        # From the raw bytes: when a POST's SSE stream ends without a response, the SDK
        # hands the session an error of its own making for that id, which is no answer.
        late = tap.http.answers_for(call["id"])
    else:
        late = [m for _, m in tap.received if "method" not in m and m.get("id") == call["id"]]
    checks.check(
        not late,
        f"server answered the cancelled request {call['id']} anyway: {short(late)}",
    )
    timings["cancel_elapsed_ms"] = round(1000 * (t_returned - t0), 1)


def http_checks(http: HttpTap, tap: WireTap, checks: Checks, timings: dict[str, Any]) -> dict[str, Any]:
    """Checks on the tapped HTTP exchanges; returns what the report shows of them."""
    report: dict[str, Any] = {}
    exchanges = http.exchanges
    cancelled_id = (timings.get("cancel_notification") or {}).get("params", {}).get("requestId")
    statuses: dict[str, int] = {}
    for ex in exchanges:
        key = f"{ex.method} {ex.status}"
        statuses[key] = statuses.get(key, 0) + 1
    report["exchanges"] = statuses

    posts = [ex for ex in exchanges if ex.method == "POST"]
    init = next((ex for ex in posts if any(m.get("method") == "initialize" for m in ex.posted())), None)
    session_id = None
    if checks.check(init is not None, "no POST of initialize was tapped"):
        assert init is not None
        session_id = init.response_headers.get("mcp-session-id")
        report["initialize"] = {
            "status": init.status,
            "content_type": init.response_headers.get("content-type"),
            "mcp_session_id": session_id,
        }
        if session_id is not None:
            checks.check(
                session_id != "" and all(0x21 <= ord(c) <= 0x7E for c in session_id),
                f"Mcp-Session-Id is not visible ASCII: {short(session_id)}",
            )
    later = [ex for ex in posts if ex is not init]
    if later:
        first = later[0]
        report["client_headers_after_initialize"] = {
            k: v for k, v in first.request_headers.items() if k not in ("host", "content-length")
        }
        report["client_protocol_version_headers"] = sorted(
            {ex.request_headers.get("mcp-protocol-version", "(none)") for ex in later}
        )

    content_types: dict[str, int] = {}
    sse = {"streams": 0, "events": 0, "events_with_id": 0, "empty_data_events": 0, "comments": 0, "unterminated": 0}
    event_types: set[str] = set()
    bad: list[str] = []
    on_post_streams: set[str] = set()
    for ex in posts:
        posted = ex.posted()
        methods = [m.get("method", "(response)") for m in posted]
        requests = [m for m in posted if "method" in m and "id" in m]
        if ex.error is not None and not any(m.get("id") == cancelled_id for m in requests):
            bad.append(f"POST of {methods}: {ex.error}")
        if not requests:
            # Notifications and responses only: 202 Accepted with no body.
            if ex.status != 202 or ex.body:
                bad.append(
                    f"POST of {methods} answered {ex.status} with {len(ex.body)} body bytes, expected 202 and none"
                )
            continue
        content_types[ex.content_type] = content_types.get(ex.content_type, 0) + 1
        if ex.status != 200 or ex.content_type not in ("application/json", "text/event-stream"):
            bad.append(
                f"POST of {methods} answered {ex.status} {ex.response_headers.get('content-type')!r}: "
                f"{short(bytes(ex.body[:200]).decode(errors='replace'))}"
            )
            continue
        if ex is not init and session_id is not None and ex.request_headers.get("mcp-session-id") != session_id:
            bad.append(f"POST of {methods} went out without the session id")  # an SDK fact, but say so
        if ex.content_type == "text/event-stream":
            events, comments, unterminated = parse_sse(bytes(ex.body))
            sse["streams"] += 1
            sse["events"] += len(events)
            sse["events_with_id"] += sum(1 for e in events if e.id)
            sse["empty_data_events"] += sum(1 for e in events if not e.data.strip())
            sse["comments"] += comments
            sse["unterminated"] += int(unterminated)
            event_types.update(e.event for e in events)
        messages, problems = http.server_messages(ex)
        bad.extend(f"POST of {methods}: {p}" for p in problems)
        answers = [m for m in messages if isinstance(m, dict) and "method" not in m]
        on_post_streams.update(m["method"] for m in messages if isinstance(m, dict) and "method" in m)
        ids = [m.get("id") for m in answers]
        for r in requests:
            n = ids.count(r["id"])
            if n > 1 or (n == 0 and r["id"] != cancelled_id):
                bad.append(f"POST of {r.get('method')} id {r['id']}: its response came {n} times on the POST's body")
        foreign = [i for i in ids if i not in {r["id"] for r in requests}]
        if foreign:
            bad.append(f"POST of {methods}: responses to other ids on its body: {short(foreign)}")
    report["request_response_content_types"] = content_types
    if sse["streams"]:
        report["sse"] = {**sse, "event_types": sorted(event_types)}
    report["server_messages_on_post_streams"] = sorted(on_post_streams)

    gets = [ex for ex in exchanges if ex.method == "GET"]
    report["get"] = [f"{ex.status} {ex.response_headers.get('content-type', '')}".strip() for ex in gets]
    for ex in gets:
        if not (ex.status == 405 or (ex.status == 200 and ex.content_type == "text/event-stream")):
            ct = ex.response_headers.get("content-type")
            bad.append(f"GET answered {ex.status} {ct!r}, expected 405 or an SSE stream")
    deletes = [ex for ex in exchanges if ex.method == "DELETE"]
    report["delete"] = [ex.status for ex in deletes]
    if session_id is not None:
        if len(deletes) != 1:
            bad.append(f"expected one DELETE at close, saw {len(deletes)}")
        for ex in deletes:
            if ex.status not in (200, 204, 405) or ex.error is not None:
                bad.append(f"DELETE answered {ex.status} ({ex.error or 'no error'}), expected 200, 204 or 405")
    others = [ex for ex in exchanges if ex.method not in ("POST", "GET", "DELETE")]
    if others:
        bad.append(f"unexpected HTTP methods: {sorted({ex.method for ex in others})}")

    for line in bad[:20]:
        print(f"  {line}", flush=True)
    checks.check(not bad, f"{len(bad)} HTTP exchange(s) broke the Streamable HTTP rules")
    return report


def peak_in_flight(tap: WireTap) -> int:
    """Most tools/call requests outstanding at once, from the tap's timestamps."""
    events: list[tuple[float, int]] = []
    call_ids = set()
    for ts, m in tap.sent:
        if m.get("method") == "tools/call":
            call_ids.add(m["id"])
            events.append((ts, 1))
    for ts, m in tap.received:
        if "method" not in m and m.get("id") in call_ids:
            events.append((ts, -1))
    events.sort()
    peak = cur = 0
    for _, delta in events:
        cur += delta
        peak = max(peak, cur)
    return peak


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--expect-tools",
        default="echo,sleep",
        type=lambda s: [t for t in s.split(",") if t],
        help="comma-separated tool names tools/list must include (default: echo,sleep)",
    )
    p.add_argument("--echo-prefix", default="", help="text the server puts before the message (default: none)")
    p.add_argument("--calls", type=int, default=200, help="concurrent echo calls (default: 200)")
    p.add_argument("--cancel-tool", default="sleep", help="slow tool to start and cancel; '' skips (default: sleep)")
    p.add_argument(
        "--cancel-args", default='{"ms": 10000}', type=json.loads, help='its arguments as JSON (default: {"ms": 10000})'
    )
    p.add_argument("--cancel-after-ms", type=float, default=200, help="cancel after this long (default: 200)")
    p.add_argument(
        "--cancel-linger-s", type=float, default=1.0, help="watch this long for an answer to the cancelled call"
    )
    p.add_argument("--expect-protocol", default="2025-11-25", help="protocolVersion the server must negotiate")
    p.add_argument("--expect-server-name", default="", help="serverInfo.name the server must report")
    p.add_argument("--max-followup-s", type=float, default=2.0, help="bound for the echo after the cancel")
    p.add_argument(
        "--max-shutdown-s",
        type=float,
        default=1.5,
        help="bound for the server's exit after stdin EOF (stdio), or for closing the session (HTTP)",
    )
    p.add_argument("--timeout-s", type=float, default=60.0, help="bound for the whole run")
    p.add_argument(
        "--url", default="", help="Streamable HTTP endpoint of a running server, e.g. http://127.0.0.1:PORT/mcp"
    )
    p.add_argument(
        "--http2", action="store_true", help="with --url: speak HTTP/2 alone (cleartext, prior knowledge)"
    )
    p.add_argument("server", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...] starting the server on stdio")
    args = p.parse_args(argv)
    if args.server and args.server[0] == "--":
        args.server = args.server[1:]
    if args.url and args.server:
        p.error("give either --url or a server command after --, not both")
    if not args.url and not args.server:
        p.error("give the server command after --, or --url")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    checks = Checks()
    t = time.monotonic()

    async def bounded() -> dict[str, Any] | None:
        with anyio.move_on_after(args.timeout_s) as scope:
            return await run(args, checks)
        if scope.cancelled_caught:
            checks.check(False, f"run did not finish within {args.timeout_s} s")
        return None

    try:
        report = anyio.run(bounded)
    except BaseException as exc:  # noqa: BLE001 - report anything, including exception groups
        checks.check(False, f"run raised {type(exc).__name__}: {exc!r}")
        report = None
    if report is not None:
        report["total_s"] = round(time.monotonic() - t, 3)
        print(json.dumps(report, ensure_ascii=False, indent=1), flush=True)
    if checks.failures:
        print(f"python_client: {len(checks.failures)} check(s) failed", flush=True)
        return 1
    print("python_client: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
