//! Arbitrary request bytes into the Streamable HTTP server over an in-memory connection; see
//! `src/http.rs` for the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::http::check_http(data);
});
