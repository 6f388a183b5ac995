#!/usr/bin/env bash
# Installs HAProxy from Debian's packages when it is missing, for tests/scale (the load-balancer
# test). Idempotent; fails loudly when it cannot install (no apt-get, or not root).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/../apt_install.sh" scale haproxy --also /usr/sbin/haproxy
