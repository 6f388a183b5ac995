#!/usr/bin/env bash
# Installs a program from Debian's package of the same name when it is missing, for a test that
# needs it (load_html/install.sh, scale/install.sh):
#
#     apt_install.sh WHO PROGRAM [--also PATH] [-- APT-GET INSTALL OPTIONS...]
#
# WHO names the caller in what it prints. The program counts as installed when `command -v`
# finds it, or when PATH (given with --also) is executable. Idempotent, and safe to start twice at
# once: installs wait for each other on target/apt.lock of the workspace (install_lock.sh), as
# apt-get would fail on dpkg's lock. Fails loudly when it cannot install (no apt-get, or not
# root).
set -euo pipefail
# shellcheck source=net_retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/net_retry.sh"
# shellcheck source=install_lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/install_lock.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
who="$1"
program="$2"
shift 2
also=""
if [ "${1:-}" = --also ]; then
    also="$2"
    shift 2
fi
[ "${1:-}" = -- ] && shift
options=("$@")

installed() {
    command -v "${program}" >/dev/null 2>&1 || { [ -n "${also}" ] && [ -x "${also}" ]; }
}

if installed; then
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || {
    echo "${who}/install.sh: error: ${program} is missing and there is no apt-get to install it" >&2
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    echo "${who}/install.sh: error: ${program} is missing; install it as root: apt-get install ${program}" >&2
    exit 1
fi
install_lock "${who}" "${root}/target/apt"
# Another install may have finished while this one waited.
if installed; then
    exit 0
fi
echo "${who}: installing ${program} (Debian package)"
export DEBIAN_FRONTEND=noninteractive
apt() {
    net_retry "${who}: apt-get install ${program}" apt-get "${APT_NET[@]}" install -y -q \
        ${options[@]+"${options[@]}"} "${program}" >/dev/null
}
apt || { net_retry "${who}: apt-get update" apt-get "${APT_NET[@]}" update -q >/dev/null && apt; }
installed || {
    echo "${who}/install.sh: error: apt-get finished but ${program} is not installed" >&2
    exit 1
}
