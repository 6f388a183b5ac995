#!/usr/bin/env python3
"""Interop check: the official MCP Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`,
PyPI mcp==2.3.0) against an MCP server that is an OAuth 2.1 resource server, in both eras.

Run with the venv that tests/interop/install.sh sets up, with SSL_CERT_FILE naming the CA that
signed the server's certificate (httpx2 builds its TLS context from it; verification stays on):

    SSL_CERT_FILE=ca.pem target/interop/venv/bin/python tests/interop/python_oauth_client.py \
        --url https://127.0.0.1:PORT/mcp --issuer http://127.0.0.1:AS_PORT

For each mode in --modes (default `legacy,2026-07-28`), one after the other and each from empty
token storage, it connects `mcp.Client` with that mode over the SDK's Streamable HTTP transport,
its httpx2 client authenticated by an OAuthClientProvider. The SDK does the whole flow itself:
the server's 401 and its `resource_metadata`, Protected Resource Metadata, the authorization
server's metadata, dynamic client registration, PKCE, the authorization request, the token
exchange naming the resource. The one step left to the host is the user agent: the provider
hands the authorization URL to the redirect handler here, which plays a browser that keeps
cookies, follows the authorization server's redirects on its own origin (login and consent are
approved by the server for a fixed account), stops at the redirect URI without fetching it, and
gives the SDK's callback handler the code, state and iss it carried.

Then it lists tools (echo must be there) and calls echo with a hard-to-encode message, whose
answer must come back exactly. Every HTTP exchange is tapped below the SDK, and checked: the
first MCP request got 401 with a Bearer challenge naming the metadata; the metadata, the
registration and the authorization server's endpoints were reached; the authorization request
carried S256 PKCE, the state and the resource; the token request was an authorization_code grant
with the code verifier and the resource; every MCP request after it carried the bearer token and
got no 401; in the legacy era initialize went out, in the modern era none did.

Exit status 0 when every check passed; 1 with one line per failed check otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcp_client_common import Checks, HttpTap, TapTransport, describe, result_text, run_main, short

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
# Never listened on: the user agent stops at this URI and reads the code from it.
REDIRECT_URI = "http://127.0.0.1:1/callback"
ECHO = 'OAuth ✓ "région" 東京 😀 back\\slash'
CLIENT_INFO = types.Implementation(name="mcpwire-interop-oauth", version="1.0.0")


class MemoryStorage:
    """The SDK's TokenStorage, in memory: each mode starts unregistered and without tokens."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class UserAgent:
    """What a browser does between the authorization URL and the redirect URI: GET each URL
    with the cookies it was given, follow redirects on the authorization server's origin only,
    and stop at the redirect URI."""

    def __init__(self, label: str, checks: Checks) -> None:
        self.label = label
        self.checks = checks
        self.authorization_url: str | None = None
        self.callback: dict[str, str] = {}
        self.hops: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        origin = urlsplit(authorization_url)[:2]
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30.0) as browser:
            for _ in range(20):
                response = await browser.get(url)
                self.hops.append(f"{response.status_code} {urlsplit(url).path}")
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or location is None:
                    body = short(response.text, 300)
                    raise RuntimeError(f"the authorization server answered {response.status_code}: {body}")
                url = urljoin(url, location)
                if url.startswith(REDIRECT_URI + "?"):
                    query = parse_qs(urlsplit(url).query)
                    self.callback = {k: v[0] for k, v in query.items()}
                    return
                if urlsplit(url)[:2] != origin:
                    raise RuntimeError(f"redirected off the authorization server's origin: {url}")
        raise RuntimeError(f"no redirect to {REDIRECT_URI} after 20 hops: {self.hops}")

    async def callback_handler(self) -> AuthorizationCodeResult:
        cb = self.callback
        if "error" in cb:
            raise RuntimeError(f"the authorization server refused: {short(cb)}")
        return AuthorizationCodeResult(code=cb.get("code", ""), state=cb.get("state"), iss=cb.get("iss"))


def form(ex: Any) -> dict[str, str]:
    """A form-encoded request body, as a dict."""
    body = ex.request_body if isinstance(ex.request_body, str) else ""
    return {k: v[0] for k, v in parse_qs(body).items()}


def flow_checks(
    args: argparse.Namespace, mode: str, http: HttpTap, agent: UserAgent, label: str, checks: Checks
) -> dict[str, Any]:
    """What the tapped exchanges must show of the OAuth flow and of the MCP requests after it."""
    exchanges = http.exchanges
    mcp = [ex for ex in exchanges if ex.url.split("?")[0] == args.url]
    on_issuer = [ex for ex in exchanges if ex.url.startswith(args.issuer + "/")]
    report: dict[str, Any] = {
        "exchanges": [f"{ex.method} {urlsplit(ex.url).path} {ex.status}" for ex in exchanges],
        "user_agent": agent.hops,
    }
    if not checks.check(bool(mcp), f"{label}: no request reached {args.url}"):
        return report
    first = mcp[0]
    challenge = first.response_headers.get("www-authenticate", "")
    checks.check(first.status == 401, f"{label}: the first MCP request got {first.status}, expected 401")
    checks.check(
        challenge.startswith("Bearer ") and "resource_metadata=" in challenge,
        f"{label}: the 401 carried no Bearer challenge with resource_metadata: {short(challenge)}",
    )
    prm = [ex for ex in exchanges if "/.well-known/oauth-protected-resource" in ex.url]
    checks.check(
        any(ex.status == 200 for ex in prm), f"{label}: the protected resource metadata was not fetched"
    )
    asm = [ex for ex in on_issuer if "/.well-known/" in ex.url and ex.status == 200]
    checks.check(bool(asm), f"{label}: the authorization server's metadata was not fetched")
    registrations = [ex for ex in on_issuer if ex.method == "POST" and isinstance(ex.request_body, dict)]
    checks.check(
        len(registrations) == 1 and registrations[0].status == 201,
        f"{label}: expected one dynamic client registration answered 201, got "
        f"{[ex.status for ex in registrations]}",
    )
    auth = parse_qs(urlsplit(agent.authorization_url or "").query)
    auth = {k: v[0] for k, v in auth.items()}
    checks.check(
        auth.get("code_challenge_method") == "S256" and len(auth.get("code_challenge", "")) == 43,
        f"{label}: the authorization request carried no S256 code challenge: {short(auth)}",
    )
    checks.check(auth.get("resource") == args.url, f"{label}: authorization request resource {auth.get('resource')!r}")
    checks.check(bool(auth.get("state")), f"{label}: the authorization request carried no state")
    checks.check(
        agent.callback.get("iss") == args.issuer,
        f"{label}: the authorization response's iss is {agent.callback.get('iss')!r}, expected {args.issuer!r}",
    )
    tokens = [ex for ex in on_issuer if ex.method == "POST" and form(ex).get("grant_type")]
    grants = [form(ex) for ex in tokens]
    report["token_requests"] = [f"{g.get('grant_type')} {ex.status}" for g, ex in zip(grants, tokens)]
    if checks.check(
        len(tokens) == 1 and tokens[0].status == 200,
        f"{label}: expected one token request answered 200, got {report['token_requests']}",
    ):
        grant = grants[0]
        checks.check(grant.get("grant_type") == "authorization_code", f"{label}: token request {short(grant)}")
        checks.check(grant.get("resource") == args.url, f"{label}: token request resource {grant.get('resource')!r}")
        checks.check(
            grant.get("code") == agent.callback.get("code") and len(grant.get("code_verifier", "")) >= 43,
            f"{label}: the token request did not redeem the code with its verifier",
        )
        checks.check(grant.get("redirect_uri") == REDIRECT_URI, f"{label}: token request {short(grant)}")
    after = mcp[1:]
    unauthorized = [ex for ex in after if ex.status == 401]
    checks.check(not unauthorized, f"{label}: {len(unauthorized)} MCP request(s) got 401 after the token")
    bare = [ex for ex in after if not ex.request_headers.get("authorization", "").startswith("Bearer ")]
    checks.check(not bare, f"{label}: {len(bare)} MCP request(s) after the token went out without it")
    methods = [m.get("method") for ex in mcp for m in ex.posted() if "method" in m]
    report["mcp_methods"] = methods
    if mode == "legacy":
        checks.check("initialize" in methods, f"{label}: no initialize went out: {methods}")
    else:
        checks.check("initialize" not in methods, f"{label}: initialize went out in the modern era")
        versions = {ex.request_headers.get("mcp-protocol-version") for ex in after if ex.method == "POST"}
        checks.check(versions == {MODERN}, f"{label}: MCP-Protocol-Version headers {sorted(map(str, versions))}")
    return report


async def run_mode(args: argparse.Namespace, mode: str, checks: Checks) -> dict[str, Any]:
    label = f"mode={mode}"
    report: dict[str, Any] = {}
    http = HttpTap()
    agent = UserAgent(label, checks)
    provider = OAuthClientProvider(
        server_url=args.url,
        client_metadata=OAuthClientMetadata(
            client_name="mcpwire-interop-python-oauth",
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="none",
        ),
        storage=MemoryStorage(),
        redirect_handler=agent.redirect_handler,
        callback_handler=agent.callback_handler,
    )
    # trust_env (the default) so that SSL_CERT_FILE names the trusted CA; verification stays on.
    http_client = httpx2.AsyncClient(
        auth=provider,
        transport=TapTransport(httpx2.AsyncHTTPTransport(), http),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
    )
    try:
        async with http_client:
            transport = streamable_http_client(args.url, http_client=http_client)
            async with Client(transport, mode=mode, client_info=CLIENT_INFO) as client:
                expected = LEGACY if mode == "legacy" else MODERN
                report["protocol_version"] = client.protocol_version
                checks.check(
                    client.protocol_version == expected,
                    f"{label}: negotiated {client.protocol_version!r}, expected {expected!r}",
                )
                tools = (await client.list_tools()).tools
                report["tools"] = sorted(t.name for t in tools)
                checks.check("echo" in report["tools"], f"{label}: tools/list lacks echo: {report['tools']}")
                result = await client.call_tool("echo", {"message": ECHO})
                checks.check(
                    not result.is_error and result_text(result) == ECHO,
                    f"{label}: echo answered {short(result_text(result))}, expected {short(ECHO)}",
                )
    except Exception as exc:  # noqa: BLE001 - one failed mode fails the run, the next still runs
        checks.check(False, f"{label}: raised {describe(exc)}")
    report.update(flow_checks(args, mode, http, agent, label, checks))
    return report


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the MCP endpoint, https://127.0.0.1:PORT/mcp")
    p.add_argument("--issuer", required=True, help="the authorization server's issuer")
    p.add_argument("--modes", default=f"legacy,{MODERN}", help="Client modes, one run each")
    p.add_argument("--timeout-s", type=float, default=60.0, help="bound for the whole run")
    args = p.parse_args(argv)

    async def run(checks: Checks) -> dict[str, Any]:
        return {f"mode={m}": await run_mode(args, m, checks) for m in args.modes.split(",") if m}

    return run_main("python_oauth_client", args.timeout_s, run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
