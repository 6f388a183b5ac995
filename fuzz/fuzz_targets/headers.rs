//! A Streamable HTTP POST's headers and body through the 2026-07-28 header validation; see
//! `src/headers.rs` for the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::checks::skip_known_bugs_from_env();
    mcpwire_fuzz::headers::check_headers(data);
});
