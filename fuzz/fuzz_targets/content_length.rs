//! Bytes fed to `JsonRpcCodec` in Content-Length framing and in `Framing::Detect`, whole and in
//! chunks (sizes chosen by the first byte); the frames checked against a reference splitter and
//! each frame's accessors and invariants checked. See `src/content_length.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::content_length::check_content_length(data);
});
