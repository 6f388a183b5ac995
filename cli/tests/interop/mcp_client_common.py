"""What the interop clients share: python_client.py (the MCP Python SDK's ClientSession in the
legacy era) and python_modern_client.py (its Client in the 2026-07-28 era).

The echo messages both send; the tap that records every JSON-RPC message between the SDK and its
transport, and every HTTP exchange below its HTTP client; the checks both make on echo calls,
tool schemas and progress; the command line both take to name the server (--url, --http2, or a
command after --); and the run itself, bounded, with its report and exit status.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import StdioServerParameters, stdio_client
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
    """Every JSON-RPC message that crossed one client's transport, with a monotonic timestamp."""

    sent: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    received: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    stream_errors: list[Exception] = field(default_factory=list)
    # Streamable HTTP only: the HTTP exchanges, tapped below the SDK.
    http: HttpTap | None = None
    # Requests the client abandoned: they may go unanswered.
    cancelled: set[Any] = field(default_factory=set)

    def sent_messages(self, since: int = 0) -> list[dict[str, Any]]:
        """The messages sent, from the `since`-th on."""
        return [m for _, m in self.sent[since:]]

    def received_messages(self) -> list[dict[str, Any]]:
        return [m for _, m in self.received]


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
    url: str = ""

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
            url=str(request.url),
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


def describe(exc: BaseException) -> str:
    """An exception, with groups of one unwrapped."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


# ---- The transport, tapped ----


def tapped_http_client(http2: bool, tap: HttpTap) -> httpx2.AsyncClient:
    """The SDK's default HTTP client (create_mcp_http_client) with the tap underneath; trust_env
    off so that a proxy from the environment cannot sit in between."""
    return httpx2.AsyncClient(
        transport=TapTransport(http_transport(http2), tap),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        trust_env=False,
    )


def sdk_transport(args: argparse.Namespace, http_client: httpx2.AsyncClient | None) -> Any:
    """The SDK's transport to the server the command line names: Streamable HTTP to --url over
    `http_client`, or stdio to the command after --."""
    if args.url:
        return streamable_http_client(args.url, http_client=http_client)
    return stdio_client(StdioServerParameters(command=args.server[0], args=args.server[1:]))


@asynccontextmanager
async def tapped(inner: Any, tap: WireTap) -> AsyncIterator[tuple[Any, Any]]:
    """A transport (an async context manager of the two streams) that relays `inner`'s streams
    and records every message both ways in `tap`."""
    async with inner as (read_stream, write_stream):
        to_client_send, to_client_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        from_client_send, from_client_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def downstream() -> None:
            async with to_client_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        tap.stream_errors.append(item)
                    else:
                        tap.received.append((time.monotonic(), as_wire(item.message)))
                    await to_client_send.send(item)

        async def upstream() -> None:
            async with from_client_recv:
                async for item in from_client_recv:
                    tap.sent.append((time.monotonic(), as_wire(item.message)))
                    await write_stream.send(item)

        async with anyio.create_task_group() as relays:
            relays.start_soon(downstream)
            relays.start_soon(upstream)
            try:
                yield to_client_recv, from_client_send
            finally:
                relays.cancel_scope.cancel()


# ---- Checks both clients make ----


async def echo_problem(
    call_tool: Callable[..., Awaitable[Any]], i: int, prefix: str = "", latencies: list[float] | None = None
) -> str | None:
    """Calls echo with echo_message(i): what went wrong, or None when the answer's text is
    exactly `prefix` + the message. The call's latency goes to `latencies` when it answered."""
    message = echo_message(i)
    t0 = time.monotonic()
    try:
        result = await call_tool("echo", {"message": message})
    except Exception as exc:  # an MCPError, or a validation error from the SDK
        return f"echo #{i}: raised {type(exc).__name__}: {exc}"
    if latencies is not None:
        latencies.append(time.monotonic() - t0)
    if not isinstance(result, types.CallToolResult):
        return f"echo #{i}: answered {type(result).__name__}"
    text = result_text(result)
    expected = prefix + message
    if result.is_error:
        return f"echo #{i}: isError result: {short(text)}"
    if text != expected:
        return f"echo #{i}: sent {short(expected)} got {short(text)}"
    return None


def check_echo_schema(tools: dict[str, types.Tool], checks: Checks, label: str = "") -> None:
    """When the server has echo, its inputSchema requires a string `message`."""
    if "echo" in tools:
        schema = tools["echo"].input_schema
        checks.check(
            "message" in (schema.get("required") or [])
            and (schema.get("properties") or {}).get("message", {}).get("type") == "string",
            f"{label}echo inputSchema does not require a string 'message': {short(schema)}",
        )


async def check_sleep_progress(
    call_tool: Callable[..., Awaitable[Any]], checks: Checks, label: str = ""
) -> list[tuple[float, float | None]]:
    """mcpwire's `sleep` 50 ms with a progress callback: progress 0/50 and 50/50 must arrive
    before its result (over Streamable HTTP the result then comes as an event stream, the
    progress events first). Returns the progress seen."""
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    slept = await call_tool("sleep", {"ms": 50}, progress_callback=on_progress)
    checks.check(result_text(slept) == "slept 50", f"{label}sleep 50 answered {short(result_text(slept))}")
    checks.check(seen == [(0, 50), (50, 50)], f"{label}progress for sleep 50 ms: {seen}, expected [(0, 50), (50, 50)]")
    return seen


# ---- The command line and the run ----


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments that name the server, and the run's bound."""
    p.add_argument("--timeout-s", type=float, default=60.0, help="bound for the whole run")
    p.add_argument(
        "--url", default="", help="Streamable HTTP endpoint of a running server, e.g. http://127.0.0.1:PORT/mcp"
    )
    p.add_argument(
        "--http2", action="store_true", help="with --url: speak HTTP/2 alone (cleartext, prior knowledge)"
    )
    p.add_argument("server", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...] starting the server on stdio")


def parse_server_arguments(p: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parses `argv`; exactly one of --url and a command after -- must name the server."""
    args = p.parse_args(argv)
    if args.server and args.server[0] == "--":
        args.server = args.server[1:]
    if args.url and args.server:
        p.error("give either --url or a server command after --, not both")
    if not args.url and not args.server:
        p.error("give the server command after --, or --url")
    return args


def run_main(
    name: str, timeout_s: float, run: Callable[[Checks], Awaitable[dict[str, Any]]]
) -> int:
    """Runs `run` within `timeout_s`, prints its report as JSON and a last line saying how the
    checks went; the exit status is 0 when every check passed, 1 otherwise."""
    checks = Checks()
    t = time.monotonic()

    async def bounded() -> dict[str, Any] | None:
        with anyio.move_on_after(timeout_s) as scope:
            return await run(checks)
        if scope.cancelled_caught:
            checks.check(False, f"run did not finish within {timeout_s} s")
        return None

    try:
        report = anyio.run(bounded)
    except BaseException as exc:  # noqa: BLE001 - report anything, including exception groups
        checks.check(False, f"run raised {describe(exc)}")
        report = None
    if report is not None:
        report["total_s"] = round(time.monotonic() - t, 3)
        print(json.dumps(report, ensure_ascii=False, indent=1), flush=True)
    if checks.failures:
        print(f"{name}: {len(checks.failures)} check(s) failed", flush=True)
        return 1
    print(f"{name}: all checks passed", flush=True)
    return 0
