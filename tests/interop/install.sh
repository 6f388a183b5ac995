#!/usr/bin/env bash
# Installs the real MCP implementations used by the interop tests, at pinned
# versions, into ignored folders under target/interop/ of the project root:
#   - npm  @modelcontextprotocol/server-everything  -> target/interop/node
#   - PyPI mcp (the official Python SDK)            -> target/interop/venv
# Idempotent: a package already installed at the pinned version is left alone.
# Fails loudly when node, npm or python3 is missing.
set -euo pipefail

SERVER_EVERYTHING_VERSION="2026.8.31"
PY_MCP_VERSION="2.3.0"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
INTEROP="${ROOT}/target/interop"
NODE_PREFIX="${INTEROP}/node"
VENV="${INTEROP}/venv"
SE_PKG="${NODE_PREFIX}/node_modules/@modelcontextprotocol/server-everything"

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
    npm install --prefix "${NODE_PREFIX}" --no-audit --no-fund --ignore-scripts \
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
    "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check \
        "mcp==${PY_MCP_VERSION}"
    "${VENV}/bin/python" -c 'import mcp.client.stdio, mcp.client.session' ||
        die "mcp==${PY_MCP_VERSION} installed but does not import"
fi

echo "interop: server-everything: node ${SE_PKG}/dist/index.js stdio"
echo "interop: python venv:       ${VENV}/bin/python"
