# Sourced by the test installers (interop/, deploy/, apt_install.sh): a command that reaches a
# registry (npm, PyPI, Debian's mirrors) runs under a deadline and is tried again when it fails or
# stalls, so a download that hangs costs minutes, not the whole CI run.
#
#     net_retry WHAT COMMAND ARGS...
#
# Each attempt gets NET_ATTEMPT_SECONDS (default 300) and is then stopped (TERM, KILL 10 s later);
# NET_ATTEMPTS (default 3) attempts, 5 s then 15 s apart. What failed, and how, is printed to
# standard error; the last failure's status is returned. The options each tool takes for its own
# timeouts and retries are in NPM_NET, PIP_NET and APT_NET, for the callers to pass.

NPM_NET=(--fetch-timeout=60000 --fetch-retries=3 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=20000)
PIP_NET=(--timeout 60 --retries 3)
APT_NET=(-o Acquire::Retries=3 -o Acquire::http::Timeout=60 -o Acquire::https::Timeout=60)

net_retry() {
    local what="$1"
    shift
    local attempts="${NET_ATTEMPTS:-3}" seconds="${NET_ATTEMPT_SECONDS:-300}" attempt=1 status pause
    while :; do
        status=0
        timeout --kill-after=10 "${seconds}" "$@" || status=$?
        [ "${status}" -eq 0 ] && return 0
        if [ "${status}" -eq 124 ] || [ "${status}" -eq 137 ]; then
            echo "${what}: attempt ${attempt} of ${attempts} stalled past ${seconds} s and was stopped" >&2
        else
            echo "${what}: attempt ${attempt} of ${attempts} failed (exit ${status})" >&2
        fi
        [ "${attempt}" -ge "${attempts}" ] && return "${status}"
        pause=$((attempt == 1 ? 5 : 15))
        sleep "${pause}"
        attempt=$((attempt + 1))
    done
}
