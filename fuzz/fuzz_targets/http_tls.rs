//! Arbitrary bytes into the Streamable HTTP server behind TLS, on the raw port or inside a TLS
//! session; see `src/http_tls.rs` for the input's layout and the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::http_tls::check_http_tls(data);
});
