//! Arbitrary sequences of operations on the in-flight tables (`Outbound`, `Inbound`), checked
//! step by step against a simple model. See `src/mux_model.rs` for the operations and their byte
//! encoding.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::mux_model::check_mux(data);
});
