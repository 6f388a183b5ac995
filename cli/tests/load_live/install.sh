#!/usr/bin/env bash
# Installs Prometheus from Debian's packages when it is missing, for tests/load_live.rs (a real
# Prometheus scraping `mcpwire load --metrics`). Idempotent; fails loudly when it cannot install
# (no apt-get, or not root). Without recommends: the node exporter and the rest are not needed.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../apt_install.sh" load_live prometheus --also /usr/bin/prometheus -- --no-install-recommends
