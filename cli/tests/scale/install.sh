#!/usr/bin/env bash
# Installs HAProxy from Debian's packages when it is missing, for tests/scale (the load-balancer
# test). Idempotent; fails loudly when it cannot install (no apt-get, or not root).
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || {
    echo "scale/install.sh: error: haproxy is missing and there is no apt-get to install it" >&2
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    echo "scale/install.sh: error: haproxy is missing; install it as root: apt-get install haproxy" >&2
    exit 1
fi
echo "scale: installing haproxy (Debian package)"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >/dev/null; }
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || {
    echo "scale/install.sh: error: apt-get finished but haproxy is not installed" >&2
    exit 1
}
