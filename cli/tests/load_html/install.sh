#!/usr/bin/env bash
# Installs Debian's headless-capable `chromium` when it is missing, for tests/load_html.rs (the
# HTML report rendered in a real browser). Idempotent; fails loudly when it cannot install (no
# apt-get, or not root).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../apt_install.sh" load_html chromium -- --no-install-recommends
