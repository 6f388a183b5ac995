//! Bytes fed to `JsonRpcCodec` whole and in chunks (sizes chosen by the first byte); every frame's
//! accessors and invariants checked, and both feeds compared. See `src/feed.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::feed::check_stream(data);
});
