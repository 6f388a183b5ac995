# shellcheck shell=bash
# Sourced by the test installers (interop/, deploy/, apt_install.sh): what makes an install safe
# to start twice at once and to kill at any point. `cargo test` runs the tests of one binary in
# parallel, and several of them run the same installer on first use; each must wait for the
# other and then find the install complete, never half-made.
#
#     install_lock WHO PATH
#         Holds an exclusive lock on PATH.lock (beside the install folder PATH) until the
#         script exits; a second installer waits here for the first, saying so on stderr.
#
#     install_part WHO DIR STAMP COMMAND ARGS...
#         Under that lock: when DIR's completion mark holds STAMP (what is pinned, e.g.
#         "mcp==2.3.0"), leaves DIR alone; otherwise empties DIR, runs COMMAND ARGS... DIR (which
#         installs into DIR and checks the result) and writes the mark. The mark is written last,
#         by a rename, so a run killed part-way leaves none and the next run starts DIR afresh
#         instead of trusting what it finds there. A changed pin changes STAMP: the same.
#
# WHO names the caller in what it prints. flock(1) is util-linux's.

# The completion mark of an install folder: its content is the STAMP of what was installed.
INSTALL_MARK=".installed"

install_lock() {
    local who="$1" path="$2"
    command -v flock >/dev/null 2>&1 || {
        echo "${who}/install.sh: error: flock is missing (util-linux)" >&2
        exit 1
    }
    mkdir -p "$(dirname "${path}")"
    # The descriptor stays open (and the lock held) until the script exits, however it exits.
    exec {INSTALL_LOCK_FD}>"${path}.lock"
    if ! flock --nonblock "${INSTALL_LOCK_FD}"; then
        echo "${who}: another install into ${path} is running; waiting for it" >&2
        flock "${INSTALL_LOCK_FD}"
    fi
}

install_part() {
    local who="$1" dir="$2" stamp="$3"
    shift 3
    [ -n "${INSTALL_LOCK_FD:-}" ] || {
        echo "${who}/install.sh: error: install_part before install_lock" >&2
        exit 1
    }
    if [ "$(cat "${dir}/${INSTALL_MARK}" 2>/dev/null)" = "${stamp}" ]; then
        echo "${who}: ${stamp} already installed"
        return 0
    fi
    echo "${who}: installing ${stamp} into ${dir}"
    rm -rf "${dir}"
    mkdir -p "${dir}"
    "$@" "${dir}"
    printf '%s\n' "${stamp}" >"${dir}/${INSTALL_MARK}.new"
    mv "${dir}/${INSTALL_MARK}.new" "${dir}/${INSTALL_MARK}"
}
