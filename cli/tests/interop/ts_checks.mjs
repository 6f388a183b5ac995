// What the TypeScript SDK interop scripts (ts_client.mjs, ts_oauth_client.mjs) share: the failed
// checks, each printed as a line when it fails, and values shortened for those lines.

export const failures = [];

/** Records `what` as a failure (and prints it) unless `ok`; returns `ok`. */
export function check(ok, what) {
    if (!ok) {
        failures.push(what);
        console.log(`FAIL: ${what}`);
    }
    return ok;
}

/** `value` as JSON, cut to `limit` characters. */
export function short(value, limit = 200) {
    const text = JSON.stringify(value) ?? String(value);
    return text.length <= limit ? text : `${text.slice(0, limit)}...`;
}
