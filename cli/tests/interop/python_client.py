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
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import ClientSession

from mcp_client_common import (
    Checks,
    HttpTap,
    WireTap,
    add_server_arguments,
    check_echo_schema,
    check_http_version,
    check_sleep_progress,
    echo_problem,
    parse_server_arguments,
    parse_sse,
    result_text,
    run_main,
    sdk_transport,
    short,
    tapped,
    tapped_http_client,
)


async def run(args: argparse.Namespace, checks: Checks) -> dict[str, Any]:
    timings: dict[str, Any] = {}
    tap = WireTap()
    t_start = time.monotonic()

    async with AsyncExitStack() as stack:
        http_client = None
        if args.url:
            tap.http = HttpTap()
            http_client = await stack.enter_async_context(tapped_http_client(args.http2, tap.http))
        # Between the SDK's session and the transport, recording both ways.
        read_stream, write_stream = await stack.enter_async_context(
            tapped(sdk_transport(args, http_client), tap)
        )
        async with ClientSession(read_stream, write_stream) as session:
            await exercise(session, args, checks, tap, timings, t_start)
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
    check_echo_schema(tools, checks)

    # 3. concurrent echo calls
    mismatches: list[str] = []
    latencies: list[float] = []

    async def one_echo(i: int) -> None:
        problem = await echo_problem(session.call_tool, i, args.echo_prefix, latencies)
        if problem is not None:
            mismatches.append(problem)

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
        timings["progress_seen"] = await check_sleep_progress(session.call_tool, checks)

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
    add_server_arguments(p)
    return parse_server_arguments(p, argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return run_main("python_client", args.timeout_s, lambda checks: run(args, checks))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
