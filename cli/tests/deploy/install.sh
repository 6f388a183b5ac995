#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI, pinned), which checks Kubernetes manifests against the
# API's schemas offline (it ships them), into target/deploy/venv of the workspace (whatever
# CARGO_TARGET_DIR says: it is not cargo's) for tests/deploy.rs. Idempotent; fails loudly when
# it cannot (no python3 with venv, no PyPI).
set -euo pipefail
VERSION=1.37.0
# shellcheck source=../net_retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/../net_retry.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
venv="${root}/target/deploy/venv"
if [ -x "${venv}/bin/kubernetes-validate" ] &&
    [ "$("${venv}/bin/kubernetes-validate" --version)" = "${VERSION}" ]; then
    exit 0
fi
command -v python3 >/dev/null 2>&1 || {
    echo "deploy/install.sh: error: python3 is missing (3.10 or later, with venv)" >&2
    exit 1
}
rm -rf "${venv}"
python3 -m venv "${venv}" || {
    echo "deploy/install.sh: error: python3 -m venv failed (apt-get install python3-venv)" >&2
    exit 1
}
net_retry "deploy: pip install kubernetes-validate" "${venv}/bin/pip" install "${PIP_NET[@]}" --quiet --disable-pip-version-check "kubernetes-validate==${VERSION}"
echo "deploy: kubernetes-validate ${VERSION} in ${venv}"
