//! Bytes fed to `SseDecoder` whole and in chunks (sizes chosen by the first byte); the events
//! checked against a reference event stream parser and each frame's accessors and invariants
//! checked. See `src/sse.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::sse::check_sse(data);
});
