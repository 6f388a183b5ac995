//! Arbitrary params through the typed layer's decoders; see `src/typed.rs` for the properties
//! checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcpwire_fuzz::typed::check_typed(data);
});
