#!/usr/bin/env bash
# Installs Debian's headless-capable `chromium` when it is missing, for tests/load_html.rs (the
# HTML report rendered in a real browser). Idempotent; fails loudly when it cannot install (no
# apt-get, or not root).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || {
    echo "load_html/install.sh: error: chromium is missing and there is no apt-get to install it" >&2
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    echo "load_html/install.sh: error: chromium is missing; install it as root: apt-get install chromium" >&2
    exit 1
fi
echo "load_html: installing chromium (Debian package)"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; }
command -v chromium >/dev/null 2>&1 || {
    echo "load_html/install.sh: error: apt-get finished but chromium is not installed" >&2
    exit 1
}
