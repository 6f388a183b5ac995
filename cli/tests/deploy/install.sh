#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI, pinned), which checks Kubernetes manifests against the
# API's schemas offline (it ships them), into target/deploy/venv of the workspace (whatever
# CARGO_TARGET_DIR says: it is not cargo's), or into venv/ of MCPWIRE_DEPLOY_DIR when that is set
# (tests/deploy.rs reads the same variable), for tests/deploy.rs. Idempotent, and safe to start
# twice at once or to kill part-way (../install_lock.sh); fails loudly when it cannot (no python3
# with venv, no PyPI).
set -euo pipefail
VERSION=1.37.0
# shellcheck source=../net_retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/../net_retry.sh"
# shellcheck source=../install_lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/../install_lock.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
deploy="${MCPWIRE_DEPLOY_DIR:-${root}/target/deploy}"
command -v python3 >/dev/null 2>&1 || {
    echo "deploy/install.sh: error: python3 is missing (3.10 or later, with venv)" >&2
    exit 1
}

kubernetes_validate() {
    python3 -m venv "$1" || {
        echo "deploy/install.sh: error: python3 -m venv failed (apt-get install python3-venv)" >&2
        exit 1
    }
    net_retry "deploy: pip install kubernetes-validate" "$1/bin/pip" install "${PIP_NET[@]}" \
        --quiet --disable-pip-version-check "kubernetes-validate==${VERSION}"
    [ "$("$1/bin/kubernetes-validate" --version)" = "${VERSION}" ] || {
        echo "deploy/install.sh: error: pip finished but $1/bin/kubernetes-validate is not ${VERSION}" >&2
        exit 1
    }
}

install_lock deploy "${deploy}"
install_part deploy "${deploy}/venv" "kubernetes-validate==${VERSION}" kubernetes_validate
