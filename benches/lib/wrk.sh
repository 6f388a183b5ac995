# Shared by the benchmark scripts that drive wrk (source it): the Lua script of a `tools/call`
# POST.

# wrk_script FILE BODY_PARAMS HEADER...: a wrk script POSTing tools/call with BODY_PARAMS; a fresh
# id per request unless BODY_PARAMS is "static:..." (then one fixed body with id 7).
wrk_script() {
    local file=$1 params=$2 h
    shift 2
    {
        echo 'wrk.method = "POST"'
        echo 'wrk.headers["Content-Type"] = "application/json"'
        echo 'wrk.headers["Accept"] = "application/json, text/event-stream"'
        for h in "$@"; do echo "wrk.headers[\"${h%%:*}\"] = \"${h#*: }\""; done
        if [[ $params == static:* ]]; then
            echo "wrk.body = '{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{${params#static:}}}'"
        else
            cat <<EOF
local id = 0
function request()
  id = id + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{$params}}')
end
EOF
        fi
    } >"$file"
}
