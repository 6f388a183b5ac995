#!/usr/bin/env python3
"""Interop check: the official MCP Python SDK's high-level Client in the stateless era
(protocol revision 2026-07-28) against an MCP server over stdio or Streamable HTTP.

Run with the venv that tests/interop/install.sh sets up (PyPI mcp==2.3.0):

    target/interop/venv/bin/python tests/interop/python_modern_client.py \
        --modes 2026-07-28,auto -- target/debug/mcpwire serve

    target/interop/venv/bin/python tests/interop/python_modern_client.py \
        --modes 2026-07-28,auto --with-legacy --url http://127.0.0.1:PORT/mcp

For each mode in --modes, one after the other, it connects `mcp.Client` with that mode:
`2026-07-28` pins the version (the SDK sends no server/discover and no initialize; every
request carries the `_meta` envelope), `auto` probes with server/discover and must end up
modern (the SDK silently falls back to initialize when the discover result is missing or
does not validate, so this is checked). Then it lists tools (echo and sleep must be there),
makes --calls concurrent echo calls with messages that mix non-ASCII with characters JSON
must escape and checks each answer's text exactly, and with --expect-header-tool calls the
server's tool that mirrors a string argument into an `Mcp-Param-*` header (found by its
`x-mcp-header` annotation) with a non-ASCII value, which the SDK must send Base64-encoded.
Then `sleep` 50 ms with a progress callback (progress 0/50 and 50/50 must arrive before the
result), and `sleep` 10 s abandoned after 200 ms: over stdio the SDK sends
notifications/cancelled, over HTTP it closes the request's stream (the 2026-07-28 way to
cancel); no answer may come for it, and an echo right after must be answered at once.

Every JSON-RPC message is tapped between the SDK and its transport: no initialize,
notifications/initialized or ping may go out, every result must say resultType "complete",
every request must be answered exactly once. Over HTTP the exchanges are tapped below the
SDK too: each POST of a request must get 200 with application/json or text/event-stream
carrying its response exactly once, the request must have carried MCP-Protocol-Version
2026-07-28 and a Mcp-Method equal to its method, and no response may carry an
Mcp-Session-Id (the stateless era has no sessions).

With --with-legacy (HTTP only) a legacy-era Client (initialize handshake, session) is
connected first and kept open: its echo calls run concurrently with each modern client's,
and once more after them, so both eras are served by the same server at the same time.

Exit status 0 when every check passed; 1 with one line per failed check otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from mcp_client_common import (
    Checks,
    HttpTap,
    WireTap,
    add_server_arguments,
    as_wire,
    check_echo_schema,
    check_http_version,
    check_sleep_progress,
    describe,
    echo_problem,
    parse_server_arguments,
    result_text,
    run_main,
    sdk_transport,
    short,
    tapped,
    tapped_http_client,
)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
CLIENT_INFO = types.Implementation(name="mcpwire-interop-modern", version="1.0.0")
# A value the SDK has to Base64-encode for a header: non-ASCII, and spaces at both ends.
HEADER_VALUE = " région ✓ 東京 "


def transport_for(args: argparse.Namespace, tap: WireTap, stack: AsyncExitStack) -> Any:
    http_client = None
    if args.url:
        tap.http = HttpTap()
        http_client = tapped_http_client(args.http2, tap.http)
        stack.push_async_callback(http_client.aclose)
    return tapped(sdk_transport(args, http_client), tap)


async def echo_calls(client: Client, first: int, count: int, label: str, problems: list[str]) -> None:
    """`count` concurrent echo calls; a line in `problems` for each that did not come back intact."""

    async def one(i: int) -> None:
        problem = await echo_problem(client.call_tool, i)
        if problem is not None:
            problems.append(f"{label} {problem}")

    async with anyio.create_task_group() as tg:
        for i in range(first, first + count):
            tg.start_soon(one, i)


def header_tool(tools: dict[str, types.Tool]) -> tuple[str, str, str, dict[str, Any]] | None:
    """The first tool with a string property annotated `x-mcp-header`: its name, that
    property, the header's suffix, and values for its other required properties."""
    for name, tool in tools.items():
        schema = tool.input_schema or {}
        props = schema.get("properties") or {}
        for prop, spec in props.items():
            if isinstance(spec, dict) and spec.get("type") == "string" and spec.get("x-mcp-header"):
                others: dict[str, Any] = {}
                for req in schema.get("required") or []:
                    if req == prop:
                        continue
                    kind = (props.get(req) or {}).get("type")
                    others[req] = 0 if kind in ("integer", "number") else False if kind == "boolean" else "x"
                return name, prop, str(spec["x-mcp-header"]), others
    return None


async def cancel_one(client: Client, label: str, checks: Checks, tap: WireTap, report: dict[str, Any]) -> None:
    """Starts `sleep 10000`, abandons it after 200 ms, and checks the server stops it: over
    stdio the SDK sends notifications/cancelled and no answer may follow; over HTTP the SDK
    closes the request's response stream, which is the cancellation. Either way the server
    must go on answering at once."""
    sent_before = len(tap.sent)
    outcome: dict[str, Any] = {}

    async def slow_call() -> None:
        outcome["result"] = await client.call_tool("sleep", {"ms": 10_000})

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await anyio.sleep(0.2)
            t_cancel = time.monotonic()
            scope.cancel()
    report["cancel_returned_ms"] = round(1000 * (time.monotonic() - t_cancel), 1)
    checks.check("result" not in outcome, f"{label}: sleep 10000 finished before it was cancelled at 200 ms")
    call = next((m for m in tap.sent_messages(sent_before) if m.get("method") == "tools/call"), None)
    if not checks.check(call is not None, f"{label}: no tools/call for the cancelled sleep was sent"):
        return
    tap.cancelled.add(call["id"])
    if tap.http is None:
        cancelled = [m for m in tap.sent_messages(sent_before) if m.get("method") == "notifications/cancelled"]
        report["cancel_notification"] = cancelled[0] if cancelled else None
    # Give a server that ignores the cancellation time to show it.
    await anyio.sleep(1.0)
    late = [m for m in tap.received_messages() if "method" not in m and m.get("id") == call["id"]]
    checks.check(not late, f"{label}: the server answered the cancelled sleep anyway: {short(late)}")
    t = time.monotonic()
    after = await client.call_tool("echo", {"message": "after cancel ✓"})
    report["followup_echo_ms"] = round(1000 * (time.monotonic() - t), 1)
    checks.check(result_text(after) == "after cancel ✓", f"{label}: echo after the cancel answered {short(result_text(after))}")
    checks.check(report["followup_echo_ms"] <= 2000, f"{label}: echo after the cancel took {report['followup_echo_ms']} ms")


def wire_checks(tap: WireTap, label: str, checks: Checks) -> dict[str, Any]:
    """Checks on the tapped JSON-RPC messages of one client; returns what the report shows."""
    sent, received = tap.sent_messages(), tap.received_messages()
    sent_methods = [m.get("method") for m in sent if "method" in m]
    for forbidden in ("initialize", "notifications/initialized", "ping"):
        checks.check(forbidden not in sent_methods, f"{label}: the client sent {forbidden} in the modern era")
    checks.check(not tap.stream_errors, f"{label}: transport reported unparsable input: {tap.stream_errors!r}")
    requests = {m["id"]: m.get("method") for m in sent if "method" in m and "id" in m}
    answers: dict[Any, int] = {}
    bad: list[str] = []
    for m in received:
        if "method" in m:
            if "id" in m:
                bad.append(f"server sent a request in the modern era: {short(m)}")
            continue
        answers[m.get("id")] = answers.get(m.get("id"), 0) + 1
        if "error" in m:
            bad.append(f"{requests.get(m.get('id'))} id {m.get('id')} answered with an error: {short(m['error'])}")
        elif not isinstance(m.get("result"), dict) or m["result"].get("resultType") != "complete":
            bad.append(f"{requests.get(m.get('id'))} id {m.get('id')}: result without resultType 'complete': {short(m)}")
    for rid, method in requests.items():
        if answers.get(rid, 0) != (0 if rid in tap.cancelled else 1):
            bad.append(f"{method} id {rid} was answered {answers.get(rid, 0)} times")
    unknown = set(answers) - set(requests)
    if unknown:
        bad.append(f"answers to ids never sent: {short(sorted(map(str, unknown)))}")
    for line in bad[:20]:
        print(f"  {label}: {line}", flush=True)
    checks.check(not bad, f"{label}: {len(bad)} problem(s) in the JSON-RPC exchange")
    return {"sent_methods": sorted(set(sent_methods)), "messages_sent": len(tap.sent), "received": len(tap.received)}


def http_checks(http: HttpTap, cancelled: set[Any], label: str, checks: Checks) -> dict[str, Any]:
    """Checks on the tapped HTTP exchanges of one modern client."""
    bad: list[str] = []
    statuses: dict[str, int] = {}
    for ex in http.exchanges:
        statuses[f"{ex.method} {ex.status}"] = statuses.get(f"{ex.method} {ex.status}", 0) + 1
        if "mcp-session-id" in ex.response_headers:
            bad.append(f"{ex.method} answered with Mcp-Session-Id {short(ex.response_headers['mcp-session-id'])}")
        if ex.method != "POST":
            continue
        posted = ex.posted()
        requests = [m for m in posted if "method" in m and "id" in m]
        if not requests:
            continue
        method = requests[0].get("method")
        abandoned = requests[0]["id"] in cancelled
        if ex.request_headers.get("mcp-protocol-version") != MODERN:
            bad.append(f"POST of {method} went out with MCP-Protocol-Version "
                       f"{ex.request_headers.get('mcp-protocol-version')!r}")
        if ex.request_headers.get("mcp-method") != method:
            bad.append(f"POST of {method} went out with Mcp-Method {ex.request_headers.get('mcp-method')!r}")
        if abandoned and ex.status is None:
            continue  # abandoned before the response head arrived
        if ex.status != 200 or ex.content_type not in ("application/json", "text/event-stream"):
            bad.append(
                f"POST of {method} answered {ex.status} {ex.response_headers.get('content-type')!r}: "
                f"{short(bytes(ex.body[:300]).decode(errors='replace'))}"
            )
            continue
        if ex.error is not None and not abandoned:
            bad.append(f"POST of {method}: {ex.error}")
        messages, problems = http.server_messages(ex)
        bad.extend(f"POST of {method}: {p}" for p in problems)
        ids = [m.get("id") for m in messages if isinstance(m, dict) and "method" not in m]
        if ids != ([] if abandoned else [requests[0]["id"]]):
            bad.append(f"POST of {method} id {requests[0]['id']}: the body carried responses for ids {short(ids)}")
        independent = [m["method"] for m in messages if isinstance(m, dict) and "method" in m and "id" in m]
        if independent:
            bad.append(f"POST of {method}: the server sent requests on the response stream: {independent}")
    for line in bad[:20]:
        print(f"  {label}: {line}", flush=True)
    checks.check(not bad, f"{label}: {len(bad)} HTTP exchange(s) broke the 2026-07-28 Streamable HTTP rules")
    return {"exchanges": statuses}


async def modern_run(
    args: argparse.Namespace, mode: str, checks: Checks, legacy: Client | None, legacy_first: int
) -> dict[str, Any]:
    label = f"mode={mode}"
    report: dict[str, Any] = {}
    tap = WireTap()
    t0 = time.monotonic()
    try:
        await modern_steps(args, mode, label, checks, legacy, legacy_first, tap, report)
    except Exception as exc:  # noqa: BLE001 - one failed step fails the mode, the run goes on
        checks.check(False, f"{label}: raised {describe(exc)}")
    report["total_s"] = round(time.monotonic() - t0, 3)
    if report.get("protocol_version", MODERN) != MODERN:
        # Already a failure; the legacy exchange would only bury it under era mismatches.
        print(f"  {label}: the connection is not modern; the wire checks are left out", flush=True)
        return report
    report["wire"] = wire_checks(tap, label, checks)
    if tap.http is not None:
        report["http"] = http_checks(tap.http, tap.cancelled, label, checks)
        check_http_version(tap.http, args.http2, label, checks)
    return report


async def modern_steps(
    args: argparse.Namespace,
    mode: str,
    label: str,
    checks: Checks,
    legacy: Client | None,
    legacy_first: int,
    tap: WireTap,
    report: dict[str, Any],
) -> None:
    t0 = time.monotonic()
    async with AsyncExitStack() as stack:
        transport = transport_for(args, tap, stack)
        client = await stack.enter_async_context(Client(transport, mode=mode, client_info=CLIENT_INFO))
        report["connect_s"] = round(time.monotonic() - t0, 3)
        report["protocol_version"] = client.protocol_version
        checks.check(client.protocol_version == MODERN, f"{label}: negotiated {client.protocol_version!r}, expected {MODERN!r}")
        if mode == "auto":
            discover = client.session.discover_result
            if checks.check(discover is not None, f"{label}: the client fell back to the legacy handshake"):
                assert discover is not None
                report["supported_versions"] = discover.supported_versions
                checks.check(
                    MODERN in discover.supported_versions,
                    f"{label}: server/discover lists {discover.supported_versions}, not {MODERN}",
                )
                checks.check(discover.capabilities.tools is not None, f"{label}: server/discover declares no tools capability")
            first = tap.sent[0][1].get("method") if tap.sent else None
            checks.check(first == "server/discover", f"{label}: first message sent was {first!r}, expected server/discover")
            info = client.server_info
            report["server_info"] = info and f"{info.name} {info.version}"
            if args.expect_server_name:
                checks.check(
                    info is not None and info.name == args.expect_server_name,
                    f"{label}: server identifies as {report['server_info']!r}, expected {args.expect_server_name!r}",
                )

        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        report["tools"] = sorted(tools)
        for name in args.expect_tools:
            checks.check(name in tools, f"{label}: tools/list lacks {name!r} (has {sorted(tools)})")
        check_echo_schema(tools, checks, f"{label}: ")

        problems: list[str] = []
        t = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(echo_calls, client, 0, args.calls, label, problems)
            if legacy is not None:
                tg.start_soon(echo_calls, legacy, legacy_first, args.calls, "legacy", problems)
        report["echo_s"] = round(time.monotonic() - t, 3)
        for line in problems[:20]:
            print(f"  {line}", flush=True)
        checks.check(not problems, f"{label}: {len(problems)} echo call(s) did not come back intact")

        if args.expect_header_tool:
            found = header_tool(tools)
            if checks.check(found is not None, f"{label}: no tool has a string property with x-mcp-header"):
                assert found is not None
                name, prop, suffix, others = found
                report["header_tool"] = {"tool": name, "property": prop, "header": f"Mcp-Param-{suffix}"}
                before = len(tap.http.exchanges) if tap.http else 0
                try:
                    result = await client.call_tool(name, {**others, prop: HEADER_VALUE})
                    ok = isinstance(result, types.CallToolResult) and not result.is_error
                    checks.check(ok, f"{label}: {name} with {prop}={HEADER_VALUE!r} answered {short(as_wire(result))}")
                except Exception as exc:  # noqa: BLE001 - report what the server did
                    checks.check(False, f"{label}: {name} with {prop}={HEADER_VALUE!r} raised {describe(exc)}")
                if tap.http is not None:
                    sent = [ex.request_headers.get(f"mcp-param-{suffix.lower()}") for ex in tap.http.exchanges[before:]]
                    report["header_tool"]["sent"] = sent
                    checks.check(
                        any(v and v.startswith("=?base64?") for v in sent),
                        f"{label}: the call to {name} carried no Base64 Mcp-Param-{suffix} header: {sent}",
                    )

        # Progress: serve's `sleep` reports progress for a progressToken, before its result.
        report["progress_seen"] = await check_sleep_progress(client.call_tool, checks, f"{label}: ")

        await cancel_one(client, label, checks, tap, report)


async def run(args: argparse.Namespace, checks: Checks) -> dict[str, Any]:
    report: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        legacy: Client | None = None
        legacy_tap = WireTap()
        if args.with_legacy:
            legacy = await stack.enter_async_context(
                Client(transport_for(args, legacy_tap, stack), mode="legacy", client_info=CLIENT_INFO)
            )
            checks.check(legacy.protocol_version == LEGACY, f"legacy: negotiated {legacy.protocol_version!r}, expected {LEGACY!r}")
        for k, mode in enumerate(args.modes):
            report[f"mode={mode}"] = await modern_run(args, mode, checks, legacy, 1000 * (k + 1))
        if legacy is not None:
            # The legacy session outlived the modern clients and still works.
            problems: list[str] = []
            await echo_calls(legacy, 10_000, 5, "legacy after", problems)
            for line in problems:
                print(f"  {line}", flush=True)
            checks.check(not problems, f"legacy: {len(problems)} echo call(s) after the modern clients failed")
    if args.with_legacy and legacy_tap.http is not None:
        init = next(
            (ex for ex in legacy_tap.http.exchanges if any(m.get("method") == "initialize" for m in ex.posted())),
            None,
        )
        session_id = init.response_headers.get("mcp-session-id") if init else None
        posts = [ex for ex in legacy_tap.http.exchanges if ex.method == "POST" and ex is not init]
        report["legacy"] = {
            "protocol_version": LEGACY,
            "mcp_session_id": session_id,
            "posts": len(posts),
            "statuses": sorted({f"{ex.status}" for ex in posts}),
        }
        checks.check(init is not None and init.status == 200, "legacy: initialize was not answered 200")
        checks.check(
            all(ex.status in (200, 202) for ex in posts),
            f"legacy: POSTs answered {report['legacy']['statuses']}",
        )
    return report


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--modes",
        default=f"{MODERN},auto",
        type=lambda s: [m for m in s.split(",") if m],
        help=f"comma-separated Client modes to run, one after the other (default: {MODERN},auto)",
    )
    p.add_argument(
        "--expect-tools",
        default="echo,sleep",
        type=lambda s: [t for t in s.split(",") if t],
        help="comma-separated tool names tools/list must include (default: echo,sleep)",
    )
    p.add_argument("--calls", type=int, default=50, help="concurrent echo calls per client (default: 50)")
    p.add_argument("--expect-server-name", default="", help="serverInfo name server/discover must report (auto mode)")
    p.add_argument(
        "--expect-header-tool",
        action="store_true",
        help="require a tool with an x-mcp-header string property and call it with a non-ASCII value",
    )
    p.add_argument("--with-legacy", action="store_true", help="keep a legacy-era client busy alongside (HTTP only)")
    add_server_arguments(p)
    args = parse_server_arguments(p, argv)
    if args.with_legacy and not args.url:
        p.error("--with-legacy needs --url")
    for mode in args.modes:
        if mode not in (MODERN, "auto"):
            p.error(f"--modes takes {MODERN} and auto, not {mode!r}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return run_main("python_modern_client", args.timeout_s, lambda checks: run(args, checks))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
